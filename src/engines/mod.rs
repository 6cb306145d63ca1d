//! Engines: controllers, sources and sinks, and forces that act at fixed hook points of the
//! step (ARCHITECTURE.md "Engines").
//!
//! The step (`sim/mod.rs`) is a fixed choreography; engines plug in at named hook points (the
//! names of LAMMPS' `Verlet` integrator and its `fix` masks), each engine called in the order
//! the scene builds them:
//!
//! - `pre_exchange`: at a neighbour rebuild, after the ghosts are dropped, the positions
//!   wrapped and the cuts balanced, before migration, ghost exchange and the broad phase.
//!   The only point where particles are created or deleted ([`flow::Flow`]: outlets, then
//!   inlets). An engine that [`Hooks::wants_rebuild`] at a step forces a rebuild then, so its
//!   changes reach the ghosts and pair lists the same step.
//! - `pre_force`: before the contact loop (prescribed velocities, wall motion, external
//!   forces into [`External`]).
//! - `post_force`: after the contact loop, before the integrator (measurements of the step's
//!   forces: servo walls, the cell's stress).
//! - `end_of_step`: after the integrator and the Verlet trigger (measurements of the new
//!   state, stop tests).
//!
//! An engine is a file with its state, its hooks (an impl of [`Hooks`]: every method has a
//! default that does nothing) and its checkpoint state (a field of [`EngineState`]), and one
//! arm of [`Engine`] (the `engines!` list below). Hooks see the simulation through
//! [`StepView`]; the engines whose hooks need more of it (the flow engines' migration of
//! contacts, the cell's stress measurement, the energy book's tally) have that part of their
//! hook in `sim/` (`Simulation::pre_exchange` in `sim/rebuild.rs`; `cell_servo`, `servo_measure`,
//! `tally_contacts`, `cell_stage_test`, `protocol_start`, `protocol_test` in `sim/hooks.rs`).

pub mod cell;
pub mod energy;
pub mod flow;
pub mod force;
pub mod inlet;
pub mod outlet;
pub mod protocol;
pub mod region;
pub mod servo_wall;
pub mod strainer;

pub use flow::{Flow, FlowCounters, FlowEngine, FlowState};

use crate::contact::Wall;
use crate::domain::comm::Comm;
use crate::error::Result;
use crate::particles::Particles;
use crate::V3;

/// Forces and torques engines add to the owned particles in a step (`pre_force`), which the
/// integrator adds to the contact forces before gravity. Sized and zeroed each step only when
/// some engine asks for it ([`Hooks::adds_forces`]); otherwise empty and free.
#[derive(Clone, Debug, Default)]
pub struct External {
    pub force: Vec<V3>,
    pub torque: Vec<V3>,
}

impl External {
    /// The forces and torques for the integrator, `None` when no engine adds any.
    pub fn forces(&self) -> Option<(&[V3], &[V3])> {
        (!self.force.is_empty()).then_some((&self.force[..], &self.torque[..]))
    }

    /// Zeros for `n` owned particles.
    pub fn reset(&mut self, n: usize) {
        for v in [&mut self.force, &mut self.torque] {
            v.clear();
            v.resize(n, V3::zeros());
        }
    }
}

/// What a hook sees of the simulation: the step's clock, the owned particles (then ghosts),
/// the walls, the communicator and the external forces of this step.
pub struct StepView<'a> {
    /// The step about to be taken (`pre_force`) or just taken (`end_of_step`), and its time.
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    pub ps: &'a mut Particles,
    pub walls: &'a mut [Wall],
    pub comm: &'a Comm,
    pub external: &'a mut External,
}

/// An engine's hooks and bookkeeping; every method defaults to doing nothing.
pub trait Hooks {
    /// This engine acts at `step` (time `time`) in a neighbour rebuild's `pre_exchange`: the
    /// step rebuilds then. A function of the step, the same on every rank.
    fn wants_rebuild(&self, _step: u64, _time: f64) -> bool {
        false
    }
    /// Before the contact loop.
    fn pre_force(&mut self, _v: &mut StepView) -> Result<()> {
        Ok(())
    }
    /// After the integrator and the Verlet trigger (the step counted).
    fn end_of_step(&mut self, _v: &mut StepView) -> Result<()> {
        Ok(())
    }
    /// It reads each pair's force and each particle's total force after every step.
    fn records_forces(&self) -> bool {
        false
    }
    /// It adds forces or torques to particles ([`External`]).
    fn adds_forces(&self) -> bool {
        false
    }
    /// Its protocol ended (the run stops).
    fn finished(&self) -> bool {
        false
    }
    /// Its part of the checkpoint's engine state.
    fn save(&self, _s: &mut EngineState) {}
    /// Its state from a checkpoint's (engines absent there keep their scene state).
    fn load(&mut self, _s: &EngineState) -> Result<()> {
        Ok(())
    }
}

/// Typed access to one kind of engine ([`Engines::get`]).
pub trait Kind: Sized {
    fn of(e: &Engine) -> Option<&Self>;
    fn of_mut(e: &mut Engine) -> Option<&mut Self>;
}

/// The closed set of engines: one arm each (`Variant(Type)`).
macro_rules! engines {
    ($($v:ident($t:ty)),* $(,)?) => {
        /// One engine of a simulation (closed enum; a handful per scene).
        #[derive(Clone, Debug)]
        #[allow(clippy::large_enum_variant)]
        pub enum Engine {
            $($v($t)),*
        }

        impl Engine {
            /// Its place in the list of the closed set: the order the hooks run.
            fn rank(&self) -> usize {
                let mut k = 0usize;
                $(
                    if matches!(self, Engine::$v(_)) {
                        return k;
                    }
                    k += 1;
                )*
                k
            }
            /// The engine's kind, for messages (`ServoWalls`).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Engine::$v(_) => stringify!($v)),*
                }
            }
            fn hooks(&self) -> &dyn Hooks {
                match self {
                    $(Engine::$v(e) => e),*
                }
            }
            fn hooks_mut(&mut self) -> &mut dyn Hooks {
                match self {
                    $(Engine::$v(e) => e),*
                }
            }
        }

        $(
            impl Kind for $t {
                fn of(e: &Engine) -> Option<&Self> {
                    match e {
                        Engine::$v(x) => Some(x),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn of_mut(e: &mut Engine) -> Option<&mut Self> {
                    match e {
                        Engine::$v(x) => Some(x),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
            impl From<$t> for Engine {
                fn from(x: $t) -> Engine {
                    Engine::$v(x)
                }
            }
        )*
    };
}

engines! {
    Flow(flow::Flow),
    Strainer(strainer::UniaxialStrainer),
    ServoWalls(servo_wall::ServoWalls),
    Cell(cell::CellEngine),
    Energy(energy::EnergyBook),
    Force(force::ForceEngine),
    Protocol(protocol::Protocol),
}

/// The engines of a simulation, in the order their hooks run.
#[derive(Clone, Debug, Default)]
pub struct Engines {
    list: Vec<Engine>,
}

impl Engines {
    /// Add an engine: after the others of its kind and of the kinds listed before it in the
    /// closed set, so the hooks run in that order whatever the order of the calls.
    pub fn push(&mut self, e: impl Into<Engine>) {
        let e = e.into();
        let at = self
            .list
            .iter()
            .take_while(|x| x.rank() <= e.rank())
            .count();
        self.list.insert(at, e);
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The first engine of kind `T`.
    pub fn get<T: Kind>(&self) -> Option<&T> {
        self.list.iter().find_map(T::of)
    }

    pub fn get_mut<T: Kind>(&mut self) -> Option<&mut T> {
        self.list.iter_mut().find_map(T::of_mut)
    }

    pub fn has<T: Kind>(&self) -> bool {
        self.get::<T>().is_some()
    }

    /// Put `x` in place of the engine of its kind, or add it.
    pub fn set<T: Kind + Into<Engine>>(&mut self, x: T) {
        match self.list.iter().position(|e| T::of(e).is_some()) {
            Some(k) => self.list[k] = x.into(),
            None => self.push(x),
        }
    }

    /// Remove the engine of kind `T`.
    pub fn remove<T: Kind>(&mut self) {
        self.list.retain(|e| T::of(e).is_none());
    }

    pub fn wants_rebuild(&self, step: u64, time: f64) -> bool {
        self.list
            .iter()
            .any(|e| e.hooks().wants_rebuild(step, time))
    }

    pub fn pre_force(&mut self, v: &mut StepView) -> Result<()> {
        if self.adds_forces() {
            v.external.reset(v.ps.n_owned);
        }
        self.list
            .iter_mut()
            .try_for_each(|e| e.hooks_mut().pre_force(v))
    }

    pub fn end_of_step(&mut self, v: &mut StepView) -> Result<()> {
        self.list
            .iter_mut()
            .try_for_each(|e| e.hooks_mut().end_of_step(v))
    }

    pub fn records_forces(&self) -> bool {
        self.list.iter().any(|e| e.hooks().records_forces())
    }

    pub fn adds_forces(&self) -> bool {
        self.list.iter().any(|e| e.hooks().adds_forces())
    }

    pub fn finished(&self) -> bool {
        self.list.iter().any(|e| e.hooks().finished())
    }

    pub fn save(&self, s: &mut EngineState) {
        self.list.iter().for_each(|e| e.hooks().save(s))
    }

    pub fn load(&mut self, s: &EngineState) -> Result<()> {
        self.list.iter_mut().try_for_each(|e| e.hooks_mut().load(s))
    }
}

/// The engines' state stored in checkpoints (RON text): one field per engine that has state
/// (absent in files written before it existed: serde defaults), plus the CPM links and the
/// meshes' reference time, which `sim` keeps.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EngineState {
    pub links_created: bool,
    pub n_links0: u64,
    pub strainer: Option<strainer::UniaxialStrainer>,
    /// Time of the last neighbour rebuild, from which the Verlet bound of the meshes' motion
    /// counts (scenes with meshes; absent in older files and scenes without: serde default).
    #[serde(default)]
    pub mesh_ref_time: Option<f64>,
    /// Inlet/outlet counters (scenes with flow engines; absent otherwise: serde default).
    #[serde(default)]
    pub flow: Option<FlowState>,
    /// The deforming cell: H, gradients, servo (scenes with a `cell`; serde default).
    #[serde(default)]
    pub cell: Option<cell::CellState>,
    /// The servo walls' last measurement (scenes with `servo_walls`; serde default).
    #[serde(default)]
    pub servo: Option<servo_wall::ServoWalls>,
    /// The energy budget's cumulative terms summed over all ranks, as exact-sum limbs
    /// (`EnergyBook::sums`).
    #[serde(default)]
    pub energy: Option<Vec<Vec<i64>>>,
    /// The protocol's place: its stage, when it began, what has begun (scenes with `stages`;
    /// serde default; not written without: the engine text of other scenes stays as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<protocol::ProtocolState>,
}

impl EngineState {
    /// The state of a checkpoint's engine text (empty: none).
    pub fn parse(text: &str) -> std::result::Result<Option<EngineState>, String> {
        match text.is_empty() {
            true => Ok(None),
            false => ron::from_str(text).map(Some).map_err(|e| e.to_string()),
        }
    }

    /// The inlets' and outlets' counters in a checkpoint's engine text (`FlowState::counters`):
    /// `None` for a text without flow engines (empty, or a scene without them); `Err` when the
    /// text does not parse.
    pub fn flow_counters(text: &str) -> std::result::Result<Option<FlowCounters>, String> {
        Ok(Self::parse(text)?
            .and_then(|e| e.flow)
            .map(|f| f.counters()))
    }
}
