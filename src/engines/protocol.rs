//! Protocols: a scene run as a sequence of stages (issue 35; Yade's engine list switched by
//! `PyRunner` checks and `O.run`, LAMMPS' `run` commands between `fix`/`unfix`):
//!
//! ```ron
//! stages: [
//!     Stage(name: "fill", gravity: (0.0, 0.0, -9.81), damping: 0.4,
//!           until: Until(ke_below: 1e-6, max_steps: 200000)),
//!     Stage(name: "tilt", gravity: (4.9, 0.0, -8.5), damping: 0.0,
//!           walls: [WallMotion(wall: 2, velocity: (0.0, 0.0, 0.1))],
//!           until: Until(steps: 50000)),
//! ],
//! ```
//!
//! A stage changes, when it starts, what it names (gravity, Cundall damping, the friction
//! angle of every material and contact, a wall's velocity or a cylinder's spin); what it does
//! not name stays as it was. It ends when its end conditions hold (`any`, or `all: true`):
//! steps or time since it began, the total kinetic energy below a value, Yade's unbalanced
//! force below a value; `max_steps` caps it, loudly when its conditions were not met. The run
//! ends after the last stage, or at the scene's run length, whichever comes first.
//!
//! Hooks: the stage's start actions at `pre_force` and its end test at `end_of_step` need the
//! whole simulation (`sim/hooks.rs`: `protocol_start`, `protocol_test`); this file holds the
//! stages, their validation and the state machine. The conditions are functions of the step,
//! the time, and exact global sums (kinetic energy, unbalanced force): the same stage ends at
//! the same step on any layout. The checkpoint holds the stage, its start step and time, and
//! what it has begun ([`ProtocolState`]); a restart continues inside the stage with the same
//! bits, may append stages or change those not yet begun and the current stage's `until`, and
//! is refused when a stage that has begun changed.

use super::Hooks;
use crate::contact::wall::{Shape, Wall};
use crate::error::{Error, Result};
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// One stage as a scene gives it (`stages: [Stage(...)]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Stage")]
pub struct StageSpec {
    /// The stage's name, for the log.
    pub name: String,
    /// Gravitational acceleration [m/s²] from the stage's start (default: unchanged).
    #[serde(default)]
    pub gravity: Option<[f64; 3]>,
    /// Cundall damping λ_d ∈ [0, 1) from the stage's start (default: unchanged).
    #[serde(default)]
    pub damping: Option<f64>,
    /// Friction angle [rad] every frictional material and contact takes at the stage's start
    /// (as a cell stage's `friction_angle`; default: unchanged).
    #[serde(default)]
    pub friction_angle: Option<f64>,
    /// Time step Δt [s] from the stage's start (Yade `O.dt`, LAMMPS `timestep`; default:
    /// unchanged). The leapfrog's half-step velocities carry over as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dt: Option<f64>,
    /// Wall motions set at the stage's start (default none).
    #[serde(default)]
    pub walls: Vec<WallMotionSpec>,
    /// How the stage ends.
    pub until: UntilSpec,
    /// A snapshot of the state at the stage's end (default false; the run's last step has
    /// its own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snapshot: bool,
    /// A checkpoint at the stage's end (default false): a later protocol can restart from
    /// it (`--restart`), as LAMMPS users `write_restart` between `run`s.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
}

/// A wall's motion from a stage's start: `WallMotion(wall: 1, velocity: (0, 0, 0.1))`, a
/// cylinder's `omega` (a drum starting to turn).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "WallMotion")]
pub struct WallMotionSpec {
    /// The wall's index in the scene's `walls` (from 0).
    pub wall: usize,
    /// The velocity of its reference point [m/s] (default: unchanged).
    #[serde(default)]
    pub velocity: Option<[f64; 3]>,
    /// A cylinder's angular velocity about its axis [rad/s] (default: unchanged).
    #[serde(default)]
    pub omega: Option<f64>,
}

/// How a stage ends (`Until(...)`): the conditions given, any of them (default) or all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Until")]
pub struct UntilSpec {
    /// Steps since the stage began.
    #[serde(default)]
    pub steps: Option<u64>,
    /// Simulated time since the stage began [s].
    #[serde(default)]
    pub time: Option<f64>,
    /// Total kinetic energy (translational + rotational, all particles) below this [J].
    #[serde(default)]
    pub ke_below: Option<f64>,
    /// Yade's unbalanced force (the series' `unbalanced`) below this.
    #[serde(default, alias = "unbalancedForce")]
    pub unbalanced_below: Option<f64>,
    /// The particles present (all ranks) fewer than this: outlets drained them (a silo's
    /// discharge; LAMMPS `variable n equal count(all)` in a `fix halt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub particles_below: Option<u64>,
    /// The particles present at least this many: inlets filled them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub particles_at_least: Option<u64>,
    /// All the conditions must hold (default false: any of them).
    #[serde(default)]
    pub all: bool,
    /// The stage ends after this many steps whatever its conditions, with a warning (default:
    /// no cap).
    #[serde(default)]
    pub max_steps: Option<u64>,
}

/// A wall's motion, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct WallMotion {
    pub wall: usize,
    pub velocity: Option<V3>,
    pub omega: Option<f64>,
}

/// A stage, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: String,
    pub gravity: Option<V3>,
    pub damping: Option<f64>,
    pub friction_angle: Option<f64>,
    pub dt: Option<f64>,
    pub walls: Vec<WallMotion>,
    pub until: UntilSpec,
    /// A snapshot and a checkpoint at its end ([`StageSpec::snapshot`], `checkpoint`).
    pub snapshot: bool,
    pub checkpoint: bool,
    /// Its spec, as the checkpoint records it (`ron`), and without `until`.
    spec: String,
    actions: String,
}

/// What the stages begun so far set: each entry the last stage's value that named it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub gravity: Option<V3>,
    pub damping: Option<f64>,
    pub friction_angle: Option<f64>,
    pub dt: Option<f64>,
    /// Per wall named: (velocity, omega).
    pub walls: Vec<(usize, Option<V3>, Option<f64>)>,
}

impl Settings {
    /// What stage `st` sets at its start.
    pub fn of(st: &Stage) -> Settings {
        let mut s = Settings::default();
        s.apply(st);
        s
    }

    /// `st`'s changes on top of these.
    fn apply(&mut self, st: &Stage) {
        self.gravity = st.gravity.or(self.gravity);
        self.damping = st.damping.or(self.damping);
        self.friction_angle = st.friction_angle.or(self.friction_angle);
        self.dt = st.dt.or(self.dt);
        for m in &st.walls {
            match self.walls.iter_mut().find(|w| w.0 == m.wall) {
                Some(w) => {
                    w.1 = m.velocity.or(w.1);
                    w.2 = m.omega.or(w.2);
                }
                None => self.walls.push((m.wall, m.velocity, m.omega)),
            }
        }
    }

    /// Set the walls' motions.
    pub fn move_walls(&self, walls: &mut [Wall]) {
        for &(k, v, w) in &self.walls {
            let wall = &mut walls[k];
            if let Some(v) = v {
                wall.vel = v;
            }
            if let (Some(w), Shape::Cylinder(c)) = (w, &mut wall.shape) {
                c.omega = w;
            }
        }
    }
}

/// Why a stage ended (for the log).
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// Its conditions held (which, as text).
    Met(String),
    /// Its `max_steps`, without its conditions (where they stood, as text).
    Capped(String),
}

/// The protocol's checkpoint state (`EngineState::protocol`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProtocolState {
    /// The current stage (= the number of stages when all have ended).
    pub stage: usize,
    /// Its start actions were done (it has begun).
    pub started: bool,
    /// The step and time it began at.
    pub start_step: u64,
    pub start_time: f64,
    /// The specs (RON) of the stages before the current one, and the current one's start
    /// actions (without `until`) once begun: a restart refuses a scene that changed them.
    pub past: Vec<String>,
    pub current: Option<String>,
    /// The last measured kinetic energy and unbalanced force of the current stage.
    pub ke: Option<f64>,
    pub unbalanced: Option<f64>,
}

/// The protocol engine: its stages and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Protocol {
    pub stages: Vec<Stage>,
    pub st: ProtocolState,
    /// The stage that ended at the last step asks for (a snapshot, a checkpoint) now (not
    /// checkpointed: the run loop acts on it at that step).
    pub outputs: (bool, bool),
}

impl Protocol {
    /// The protocol of `specs` (the scene's `stages`), checked against the scene's walls and
    /// servo walls (`servo(k)`: wall `k` is servo-controlled). `None` for no `stages` field.
    pub fn from_spec(
        ctx: &Ctx,
        specs: &Option<Vec<StageSpec>>,
        walls: &[Wall],
        servo: &dyn Fn(usize) -> bool,
    ) -> Result<Option<Protocol>> {
        let Some(specs) = specs else {
            return Ok(None);
        };
        if specs.is_empty() {
            return Err(ctx.err("stages", "empty: give at least one stage, or no `stages`"));
        }
        let mut stages = Vec::with_capacity(specs.len());
        for (k, s) in specs.iter().enumerate() {
            stages.push(Stage::from_spec(ctx, k, s, walls, servo)?);
        }
        Ok(Some(Protocol {
            stages,
            st: ProtocolState::default(),
            outputs: (false, false),
        }))
    }

    /// The stage running or about to start, if any.
    pub fn current(&self) -> Option<&Stage> {
        self.stages.get(self.st.stage)
    }

    /// The stage whose step was the last one taken (the series' `stage` column).
    pub fn column(&self) -> usize {
        match self.st.started {
            true => self.st.stage,
            false => self.st.stage.saturating_sub(1),
        }
    }

    /// What the stages begun so far set.
    pub fn settings(&self) -> Settings {
        let begun = self.st.stage + self.st.started as usize;
        let mut s = Settings::default();
        for st in &self.stages[..begun.min(self.stages.len())] {
            s.apply(st);
        }
        s
    }

    /// The current stage starts at `step` (time `time`), if it has not: returns it.
    pub fn start(&mut self, step: u64, time: f64) -> Option<&Stage> {
        if self.st.started || self.st.stage >= self.stages.len() {
            return None;
        }
        let st = &self.stages[self.st.stage];
        self.st.started = true;
        self.st.start_step = step;
        self.st.start_time = time;
        self.st.current = Some(st.actions.clone());
        (self.st.ke, self.st.unbalanced) = (None, None);
        Some(st)
    }

    /// Whether the step after `step` (time `time`, step `dt`) may end the protocol: its last
    /// stage is current and may end then (a `ke_below` stage may end at any step), so that
    /// the run records that step's forces for the series' last row.
    pub fn may_finish_after(&self, step: u64, time: f64, dt: f64) -> bool {
        let Some(st) = self.current() else {
            return false;
        };
        if self.st.stage + 1 < self.stages.len() {
            return false;
        }
        let (n, elapsed) = match self.st.started {
            true => (step - self.st.start_step, time - self.st.start_time),
            false => (0, 0.0),
        };
        let u = &st.until;
        // (time: with a step's slack, whatever its rounding)
        u.ke_below.is_some()
            || u.unbalanced_below.is_some()
            || u.particles_below.is_some()
            || u.particles_at_least.is_some()
            || u.steps.is_some_and(|k| n + 1 >= k)
            || u.max_steps.is_some_and(|k| n + 1 >= k)
            || u.time.is_some_and(|t| elapsed + 2.0 * dt >= t)
    }

    /// The current stage (begun or about to begin) needs the kinetic energy, the unbalanced
    /// force, the particle count at the step's end.
    pub fn wants(&self) -> (bool, bool, bool) {
        match self.current() {
            Some(s) => (
                s.until.ke_below.is_some(),
                s.until.unbalanced_below.is_some(),
                s.until.particles_below.is_some() || s.until.particles_at_least.is_some(),
            ),
            None => (false, false, false),
        }
    }

    /// After step `step` (time `time`, `ke`, `unb` and the particle count `n_p` measured when
    /// [`Self::wants`] them):
    /// whether the current stage ended now, and why. The next stage then starts at the next
    /// step's `pre_force`.
    pub fn test(
        &mut self,
        step: u64,
        time: f64,
        ke: Option<f64>,
        unb: Option<f64>,
        n_p: Option<u64>,
    ) -> Option<Ended> {
        self.outputs = (false, false);
        let st = self.current().filter(|_| self.st.started)?;
        let u = &st.until;
        let n = step - self.st.start_step;
        let elapsed = time - self.st.start_time;
        // each condition the stage has (and whose measurement came): no allocation on the
        // steps that do not end the stage, the texts only when it ends
        let held = [
            u.steps.map(|k| Held::Steps(n, k)),
            u.time.map(|t| Held::Time(elapsed, t)),
            u.ke_below.zip(ke).map(|(max, k)| Held::Ke(k, max)),
            u.unbalanced_below
                .zip(unb)
                .map(|(max, x)| Held::Unbalanced(x, max)),
            u.particles_below
                .zip(n_p)
                .map(|(max, n)| Held::Fewer(n, max)),
            u.particles_at_least
                .zip(n_p)
                .map(|(min, n)| Held::AtLeast(n, min)),
        ];
        let mut conds = held.iter().flatten();
        let met = match u.all {
            true => conds.all(|h| h.met()),
            false => conds.any(|h| h.met()),
        };
        let text = |only_met: bool| {
            let v: Vec<String> = held
                .iter()
                .flatten()
                .filter(|h| h.met() || !only_met)
                .map(|h| h.describe())
                .collect();
            v.join(", ")
        };
        let ended = match (met, u.max_steps) {
            (true, _) => Ended::Met(text(!u.all)),
            (false, Some(cap)) if n >= cap => Ended::Capped(text(false)),
            _ => {
                (self.st.ke, self.st.unbalanced) = (ke, unb);
                return None;
            }
        };
        let spec = st.spec.clone();
        self.outputs = (st.snapshot, st.checkpoint);
        self.st.past.push(spec);
        self.st.current = None;
        self.st.stage += 1;
        self.st.started = false;
        (self.st.ke, self.st.unbalanced) = (None, None);
        Some(ended)
    }
}

/// One end condition after a step, with its numbers: (measured, goal).
#[derive(Clone, Copy, Debug)]
enum Held {
    Steps(u64, u64),
    Time(f64, f64),
    Ke(f64, f64),
    Unbalanced(f64, f64),
    Fewer(u64, u64),
    AtLeast(u64, u64),
}

impl Held {
    fn met(self) -> bool {
        match self {
            Held::Steps(n, k) => n >= k,
            Held::Time(t, goal) => t >= goal,
            Held::Ke(k, max) => k < max,
            Held::Unbalanced(x, max) => x < max,
            Held::Fewer(n, max) => n < max,
            Held::AtLeast(n, min) => n >= min,
        }
    }

    /// Where it stands, for the log.
    fn describe(self) -> String {
        match self {
            Held::Steps(n, k) => format!("{n} steps (goal {k})"),
            Held::Time(t, goal) => format!("{t:.6e} s (goal {goal:.6e} s)"),
            Held::Ke(k, max) => format!("kinetic energy {k:.6e} J (goal: below {max:.6e} J)"),
            Held::Unbalanced(x, max) => format!("unbalanced force {x:.6e} (goal: below {max:.6e})"),
            Held::Fewer(n, max) => format!("{n} particles (goal: fewer than {max})"),
            Held::AtLeast(n, min) => format!("{n} particles (goal: at least {min})"),
        }
    }
}

impl Stage {
    /// What the stage sets at its start, for the log.
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        if let Some(g) = self.gravity {
            v.push(format!("gravity ({:e}, {:e}, {:e}) m/s²", g.x, g.y, g.z));
        }
        if let Some(d) = self.damping {
            v.push(format!("damping {d}"));
        }
        if let Some(phi) = self.friction_angle {
            v.push(format!("friction angle {phi} rad"));
        }
        if let Some(dt) = self.dt {
            v.push(format!("time step {dt:e} s"));
        }
        for m in &self.walls {
            if let Some(u) = m.velocity {
                v.push(format!(
                    "wall {} velocity ({:e}, {:e}, {:e}) m/s",
                    m.wall, u.x, u.y, u.z
                ));
            }
            if let Some(w) = m.omega {
                v.push(format!("wall {} omega {w:e} rad/s", m.wall));
            }
        }
        match v.is_empty() {
            true => "no changes".into(),
            false => v.join(", "),
        }
    }

    /// How the stage ends, for the log.
    pub fn describe_until(&self) -> String {
        let u = &self.until;
        let mut v = Vec::new();
        if let Some(n) = u.steps {
            v.push(format!("{n} steps"));
        }
        if let Some(t) = u.time {
            v.push(format!("{t:e} s"));
        }
        if let Some(x) = u.ke_below {
            v.push(format!("kinetic energy below {x:e} J"));
        }
        if let Some(x) = u.unbalanced_below {
            v.push(format!("unbalanced force below {x:e}"));
        }
        if let Some(n) = u.particles_below {
            v.push(format!("fewer than {n} particles"));
        }
        if let Some(n) = u.particles_at_least {
            v.push(format!("at least {n} particles"));
        }
        let mut s = v.join(if u.all { " and " } else { " or " });
        if let Some(c) = u.max_steps {
            s += &format!(" (at most {c} steps)");
        }
        s
    }

    fn from_spec(
        ctx: &Ctx,
        k: usize,
        s: &StageSpec,
        walls: &[Wall],
        servo: &dyn Fn(usize) -> bool,
    ) -> Result<Stage> {
        let at = |f: &str| format!("stages[{k}].{f}");
        if s.name.is_empty() {
            return Err(ctx.err(&at("name"), "empty"));
        }
        let gravity = s
            .gravity
            .map(|g| ctx.finite3(&at("gravity"), g))
            .transpose()?;
        if let Some(d) = s.damping {
            if !(0.0..1.0).contains(&d) {
                return Err(ctx.err(&at("damping"), format!("must be in [0, 1), got {d}")));
            }
        }
        if let Some(phi) = s.friction_angle {
            if !(0.0..std::f64::consts::FRAC_PI_2).contains(&phi) {
                return Err(ctx.err(
                    &at("friction_angle"),
                    format!("must be in [0, π/2) rad, got {phi}"),
                ));
            }
        }
        if let Some(dt) = s.dt {
            ctx.positive(&at("dt"), dt)?;
        }
        let mut motions = Vec::new();
        for (m, w) in s.walls.iter().enumerate() {
            let wp = at(&format!("walls[{m}]"));
            let Some(wall) = walls.get(w.wall) else {
                return Err(ctx.err(
                    &format!("{wp}.wall"),
                    format!("no wall {} (the scene has {})", w.wall, walls.len()),
                ));
            };
            if w.velocity.is_none() && w.omega.is_none() {
                return Err(ctx.err(&wp, "changes nothing: give `velocity` or `omega`"));
            }
            if w.velocity.is_some() && servo(w.wall) {
                return Err(ctx.err(
                    &format!("{wp}.velocity"),
                    "the wall is servo-controlled (`servo_walls` moves it)",
                ));
            }
            let velocity = w
                .velocity
                .map(|v| ctx.finite3(&format!("{wp}.velocity"), v))
                .transpose()?;
            if let Some(om) = w.omega {
                if !matches!(wall.shape, Shape::Cylinder(_)) {
                    return Err(ctx.err(&format!("{wp}.omega"), "only for a Cylinder wall"));
                }
                if !om.is_finite() {
                    return Err(ctx.err(&format!("{wp}.omega"), "must be finite"));
                }
            }
            motions.push(WallMotion {
                wall: w.wall,
                velocity,
                omega: w.omega,
            });
        }
        let u = &s.until;
        let until = at("until");
        if u.steps.is_none()
            && u.time.is_none()
            && u.ke_below.is_none()
            && u.unbalanced_below.is_none()
            && u.particles_below.is_none()
            && u.particles_at_least.is_none()
        {
            return Err(ctx.err(
                &until,
                "no end condition: give `steps`, `time`, `ke_below`, `unbalanced_below`, \
                 `particles_below` or `particles_at_least` (`max_steps` is a cap, not a goal)",
            ));
        }
        if u.particles_below == Some(0) {
            return Err(ctx.err(
                &format!("{until}.particles_below"),
                "0 can never hold: fewer than 0 particles",
            ));
        }
        if u.steps == Some(0) {
            return Err(ctx.err(&format!("{until}.steps"), "must be ≥ 1"));
        }
        if u.max_steps == Some(0) {
            return Err(ctx.err(&format!("{until}.max_steps"), "must be ≥ 1"));
        }
        if let Some(t) = u.time {
            ctx.positive(&format!("{until}.time"), t)?;
        }
        if let Some(x) = u.ke_below {
            ctx.positive(&format!("{until}.ke_below"), x)?;
        }
        if let Some(x) = u.unbalanced_below {
            ctx.positive(&format!("{until}.unbalanced_below"), x)?;
        }
        let spec = ron::to_string(s).unwrap_or_default();
        // (what happens at its end may change after it began)
        let actions = ron::to_string(&StageSpec {
            until: UntilSpec::default(),
            snapshot: false,
            checkpoint: false,
            ..s.clone()
        })
        .unwrap_or_default();
        Ok(Stage {
            name: s.name.clone(),
            gravity,
            damping: s.damping,
            friction_angle: s.friction_angle,
            dt: s.dt,
            walls: motions,
            until: u.clone(),
            snapshot: s.snapshot,
            checkpoint: s.checkpoint,
            spec,
            actions,
        })
    }
}

impl Hooks for Protocol {
    /// The current stage reads the particles' total forces (unbalanced force).
    fn records_forces(&self) -> bool {
        self.wants().1
    }

    fn finished(&self) -> bool {
        self.st.stage >= self.stages.len()
    }

    fn save(&self, s: &mut super::EngineState) {
        s.protocol = Some(self.st.clone());
    }

    /// The checkpoint's place in the protocol, refused when a stage that had begun changed.
    fn load(&mut self, s: &super::EngineState) -> Result<()> {
        let Some(p) = &s.protocol else {
            // a checkpoint of a run without stages: the protocol starts at the restart
            return Ok(());
        };
        let refuse = |why: String| {
            Err(Error::Input(format!(
                "the checkpoint is at step {} of stage {} of its protocol; {why}: a restart may \
                 append stages or change those not yet begun (and the current one's `until`), \
                 not the past",
                p.start_step,
                p.stage + 1
            )))
        };
        if self.stages.len() < p.past.len() + p.current.is_some() as usize {
            return refuse(format!(
                "the scene has {} stages, fewer than had begun ({})",
                self.stages.len(),
                p.past.len() + p.current.is_some() as usize
            ));
        }
        for (k, (old, new)) in p.past.iter().zip(&self.stages).enumerate() {
            if *old != new.spec {
                return refuse(format!(
                    "stage {} (`{}`), which has ended, changed",
                    k + 1,
                    new.name
                ));
            }
        }
        if let Some(old) = &p.current {
            let new = &self.stages[p.stage];
            if *old != new.actions {
                return refuse(format!(
                    "the current stage {} (`{}`) changed what it sets at its start",
                    p.stage + 1,
                    new.name
                ));
            }
        }
        self.st = p.clone();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(name: &str, until: UntilSpec) -> Stage {
        Stage {
            name: name.into(),
            gravity: None,
            damping: None,
            friction_angle: None,
            dt: None,
            walls: vec![],
            until,
            snapshot: false,
            checkpoint: false,
            spec: name.into(),
            actions: String::new(),
        }
    }

    #[test]
    fn stages_end_by_any_or_all_of_their_conditions_and_their_cap() {
        let any = UntilSpec {
            steps: Some(10),
            ke_below: Some(1.0),
            ..Default::default()
        };
        let all = UntilSpec {
            all: true,
            ..any.clone()
        };
        let capped = UntilSpec {
            ke_below: Some(1.0),
            max_steps: Some(5),
            ..Default::default()
        };
        let mut p = Protocol {
            stages: vec![stage("a", any), stage("b", all), stage("c", capped)],
            st: ProtocolState::default(),
            outputs: (false, false),
        };
        assert!(p.start(0, 0.0).is_some());
        assert_eq!(p.wants(), (true, false, false));
        assert_eq!(p.test(3, 0.3, Some(2.0), None, None), None);
        assert!(matches!(
            p.test(4, 0.4, Some(0.5), None, None),
            Some(Ended::Met(_))
        ));
        assert_eq!((p.st.stage, p.column()), (1, 0));
        assert!(p.start(4, 0.4).is_some());
        assert_eq!(p.test(5, 0.5, Some(0.5), None, None), None); // KE, not yet 10 steps
        assert!(matches!(
            p.test(14, 1.4, Some(0.5), None, None),
            Some(Ended::Met(_))
        ));
        p.start(14, 1.4);
        assert_eq!(p.test(18, 1.8, Some(2.0), None, None), None);
        assert!(matches!(
            p.test(19, 1.9, Some(2.0), None, None),
            Some(Ended::Capped(_))
        ));
        assert!(p.finished());
        assert_eq!(p.column(), 2);
        assert_eq!(p.st.past, vec!["a", "b", "c"]);
    }

    #[test]
    fn later_stages_override_what_they_name_only() {
        let mut a = stage("a", UntilSpec::default());
        a.gravity = Some(V3::z());
        a.damping = Some(0.3);
        let mut b = stage("b", UntilSpec::default());
        b.gravity = Some(V3::x());
        let mut p = Protocol {
            stages: vec![a, b],
            st: ProtocolState {
                stage: 1,
                started: true,
                ..Default::default()
            },
            outputs: (false, false),
        };
        let s = p.settings();
        assert_eq!((s.gravity, s.damping), (Some(V3::x()), Some(0.3)));
        p.st.started = false;
        assert_eq!(p.settings().gravity, Some(V3::z()));
    }
}
