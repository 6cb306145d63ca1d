//! Particle sources and sinks acting at the `pre_exchange` hook of a rebuild: outlets delete,
//! inlets create (ARCHITECTURE.md "Flow engines"). Adding a flow engine: a file with its spec,
//! state, `from_spec` and `act`, one arm of [`FlowEngine`] and its loop in [`from_specs`].

use super::inlet::Inlet;
use super::outlet::Outlet;
use crate::contact::Wall;
use crate::domain::comm::Comm;
use crate::domain::decomp::Decomp;
use crate::domain::exact::ExactSum;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::material::Material;
use crate::particles::Particles;
use crate::scene::ctx::Ctx;
use crate::scene::schema::SceneFile;
use crate::scene::source::Summary;

/// Most outlets a scene may list (each adds two reductions per action and two columns).
pub const MAX_OUTLETS: usize = 64;

/// Validate the outlets and inlets into fresh flow engines (outlets first: they act first).
/// The inlets' largest radius joins `summary.rmax` (halo, ghosts, candidate reach).
pub fn from_specs(
    ctx: &Ctx,
    sf: &SceneFile,
    materials: &[Material],
    summary: &mut Summary,
    domain: &Domain,
    dt: f64,
) -> Result<Vec<FlowEngine>> {
    if sf.inlets.len() > MAX_OUTLETS {
        return Err(ctx.err(
            "inlets",
            format!("at most {MAX_OUTLETS} inlets, got {}", sf.inlets.len()),
        ));
    }
    if sf.outlets.len() > MAX_OUTLETS {
        return Err(ctx.err(
            "outlets",
            format!("at most {MAX_OUTLETS} outlets, got {}", sf.outlets.len()),
        ));
    }
    let mut out = Vec::new();
    for k in 0..sf.outlets.len() {
        out.push(FlowEngine::Outlet(Outlet::from_spec(ctx, &sf.outlets, k)?));
    }
    let mut inlets = Vec::new();
    for k in 0..sf.inlets.len() {
        let i = Inlet::from_spec(ctx, &sf.inlets, k, materials, summary.n, domain, dt)?;
        inlets.push(i);
    }
    // every inlet's spheres count for the halo and the overlap check's reach
    summary.rmax = inlets
        .iter()
        .map(|i| 0.5 * i.psd.max())
        .fold(summary.rmax, f64::max);
    for mut i in inlets {
        i.reach = 2.0 * summary.rmax;
        out.push(FlowEngine::Inlet(i));
    }
    Ok(out)
}

/// A particle source or sink acting at the `pre_exchange` hook (closed enum; a handful per
/// scene, so the outlet's exact sum inline costs nothing).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum FlowEngine {
    Outlet(Outlet),
    Inlet(Inlet),
}

impl FlowEngine {
    fn due(&self, step: u64, time: f64) -> bool {
        match self {
            FlowEngine::Outlet(o) => o.due(step),
            FlowEngine::Inlet(i) => i.due(step, time),
        }
    }

    /// Prefix of its `series.csv` columns.
    fn column(&self) -> String {
        match self {
            FlowEngine::Outlet(o) => format!("outlet_{}", o.name),
            FlowEngine::Inlet(i) => format!("inlet_{}", i.name),
        }
    }

    /// Particles and mass removed (outlets) or inserted (inlets) so far.
    fn totals(&self) -> (u64, f64) {
        match self {
            FlowEngine::Outlet(o) => (o.count, o.mass.value()),
            FlowEngine::Inlet(i) => (i.seq, i.mass),
        }
    }
}

/// The flow engines of a scene, in scene order (outlets first).
#[derive(Clone, Debug)]
pub struct Flow {
    pub engines: Vec<FlowEngine>,
    /// The last step at which they acted (a step's rebuild may run twice: `prepare`, then
    /// the step itself; they act once).
    last_step: Option<u64>,
}

/// The part of [`Flow`] stored in checkpoints (RON, inside the engine state).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FlowState {
    last_step: Option<u64>,
    /// Per outlet, in scene order: name, count removed, the exact mass sum's limbs.
    outlets: Vec<(String, u64, Vec<i64>)>,
    /// Per inlet, in scene order: name, sequence number (spheres inserted), mass inserted,
    /// placement attempts.
    #[serde(default)]
    inlets: Vec<(String, u64, f64, u64)>,
}

/// Per inlet (scene order) its name and the spheres it issued, and the particles all outlets
/// removed ([`FlowState::counters`]).
pub type FlowCounters = (Vec<(String, u64)>, u64);

impl FlowState {
    /// Per inlet (scene order): its name and the spheres it issued (sequence numbers
    /// 0..issued), and the particles all outlets removed: the bookkeeping a checkpoint's
    /// particles must agree with (`io::checkpoint::GidBook`).
    pub fn counters(&self) -> FlowCounters {
        let inlets = self.inlets.iter().map(|i| (i.0.clone(), i.1)).collect();
        let removed = self.outlets.iter().fold(0u64, |s, o| s.saturating_add(o.1));
        (inlets, removed)
    }
}

impl Flow {
    /// `None` without engines: the step then pays nothing for them.
    pub fn new(engines: Vec<FlowEngine>) -> Option<Self> {
        (!engines.is_empty()).then_some(Flow {
            engines,
            last_step: None,
        })
    }

    /// Some engine acts at `step` (the same on every rank: a function of the step).
    pub fn due(&self, step: u64, time: f64) -> bool {
        self.last_step != Some(step) && self.engines.iter().any(|e| e.due(step, time))
    }

    /// The `pre_exchange` hook (collective): the engines due at `step` act on the owned
    /// particles (ghosts dropped). Returns the gids deleted on all ranks, sorted.
    pub fn pre_exchange(
        &mut self,
        (step, time): (u64, f64),
        ps: &mut Particles,
        dec: &Decomp,
        comm: &Comm,
        walls: &[Wall],
    ) -> Vec<u64> {
        let mut gone = Vec::new();
        for e in &mut self.engines {
            if !e.due(step, time) {
                continue;
            }
            match e {
                FlowEngine::Outlet(o) => o.act(ps, comm, &mut gone),
                FlowEngine::Inlet(i) => {
                    i.act(time, ps, dec, comm, walls);
                }
            }
        }
        self.last_step = Some(step);
        let mut all = comm.all_gather_varlen_u64s(&gone);
        all.sort_unstable();
        all
    }

    /// Cumulative (count, mass) per engine (removed by outlets, inserted by inlets), in the
    /// order of [`Self::columns`].
    pub fn totals(&self) -> Vec<(u64, f64)> {
        self.engines.iter().map(|e| e.totals()).collect()
    }

    /// The engines' column prefixes (`outlet_<name>`, `inlet_<name>`), outlets first.
    pub fn columns(&self) -> Vec<String> {
        self.engines.iter().map(|e| e.column()).collect()
    }

    fn outlets(&self) -> impl Iterator<Item = &Outlet> {
        self.engines.iter().filter_map(|e| match e {
            FlowEngine::Outlet(o) => Some(o),
            _ => None,
        })
    }

    fn inlets(&self) -> impl Iterator<Item = &Inlet> {
        self.engines.iter().filter_map(|e| match e {
            FlowEngine::Inlet(i) => Some(i),
            _ => None,
        })
    }

    pub fn state(&self) -> FlowState {
        FlowState {
            last_step: self.last_step,
            outlets: self
                .outlets()
                .map(|o| (o.name.clone(), o.count, o.mass.to_limbs()))
                .collect(),
            inlets: self
                .inlets()
                .map(|i| (i.name.clone(), i.seq, i.mass, i.tries))
                .collect(),
        }
    }

    /// Restore the counters of a checkpoint (the engines themselves come from the scene,
    /// which the restart compared with the checkpoint's).
    pub fn set_state(&mut self, s: &FlowState) -> Result<()> {
        let n = self.outlets().count();
        let m = self.inlets().count();
        if s.outlets.len() != n || s.inlets.len() != m {
            return Err(Error::Input(format!(
                "the checkpoint has {} outlets and {} inlets, the scene {n} and {m}",
                s.outlets.len(),
                s.inlets.len()
            )));
        }
        self.last_step = s.last_step;
        let mut it = s.outlets.iter();
        let mut jt = s.inlets.iter();
        for e in &mut self.engines {
            match e {
                FlowEngine::Outlet(o) => {
                    let (name, count, limbs) = it.next().expect("lengths checked");
                    if *name != o.name {
                        return Err(Error::Input(format!(
                            "the checkpoint's outlet `{name}` is `{}` in the scene",
                            o.name
                        )));
                    }
                    o.count = *count;
                    o.mass = ExactSum::from_limbs(limbs).ok_or_else(|| {
                        Error::Input(format!("checkpoint: outlet `{name}`: bad mass sum"))
                    })?;
                }
                FlowEngine::Inlet(i) => {
                    let (name, seq, mass, tries) = jt.next().expect("lengths checked");
                    if *name != i.name {
                        return Err(Error::Input(format!(
                            "the checkpoint's inlet `{name}` is `{}` in the scene",
                            i.name
                        )));
                    }
                    (i.seq, i.mass, i.tries) = (*seq, *mass, *tries);
                }
            }
        }
        Ok(())
    }
}

/// Hooks: a rebuild at the steps an engine acts (its `pre_exchange` is `sim`'s:
/// `Simulation::pre_exchange`, which also switches off the deleted particles' contacts).
impl super::Hooks for Flow {
    fn wants_rebuild(&self, step: u64, time: f64) -> bool {
        self.due(step, time)
    }
}
