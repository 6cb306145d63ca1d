//! Uniaxial strain control of a specimen (Yade's `UniaxialStrainer`, thesis §6.1.2.1 and
//! digest §11): two support groups — the particles within a layer of either end of the
//! specimen (along `axis`), or those of two tags, or two gid lists (Yade's `negIds`, `posIds`)
//! — get a prescribed axial velocity ±ε̇ L₀/2 (their axial DOF is blocked, the transversal
//! ones are free); the axial stress is the mean of the axial forces on the two groups over the
//! cross-section. The run stops when |σ| falls below `stop_fraction` of its peak. L₀ is Yade's
//! `originalLength` (default: the spheres' extent along the axis; Yade takes the distance of
//! the first `posIds` and `negIds` centres), A Yade's `crossSectionArea` (resolved by the
//! scene: `scene::strainer_spec`).
//!
//! Everything is a function of the step number and of global exact sums, so the controller
//! is bit-identical on any rank and thread count; its state goes through checkpoints as RON
//! (`Simulation::engine_state`).

use crate::domain::comm::Comm;
use crate::domain::exact::ExactSum;
use crate::error::{Error, Result};
use crate::particles::Particles;
use crate::scene::schema::{StrainerSpec, SupportSpec};
use crate::scene::source::Summary;
use crate::V3;
use serde::{Deserialize, Serialize};

/// Controller state (serialised into checkpoints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UniaxialStrainer {
    /// Axis 0, 1, 2 = x, y, z.
    pub axis: usize,
    /// Prescribed axial strain rate [1/s], > 0 tension, < 0 compression.
    pub strain_rate: f64,
    /// The end velocity grows linearly over this many steps (avoids a shock wave).
    pub ramp_steps: u64,
    /// Stop when |σ| < stop_fraction · |σ_peak| after the peak.
    pub stop_fraction: f64,
    /// Initial specimen length L₀ [m] (extent of the spheres along the axis).
    pub length0: f64,
    /// Cross-section A [m²].
    pub area: f64,
    /// Centre of the specimen's bounding box (the end groups move symmetrically about it).
    pub center: [f64; 3],
    /// Mean lateral distance of the particles from the axis at the start [m].
    pub lateral0: f64,
    /// Current elongation L − L₀ [m].
    pub displacement: f64,
    /// Axial stress of the last step [Pa] (> 0 tension).
    pub stress: f64,
    /// Largest |σ| so far and the strain where it occurred.
    pub peak: f64,
    pub peak_strain: f64,
    /// The stop criterion was met.
    pub done: bool,
}

impl UniaxialStrainer {
    /// Set up at the start of a fresh run (collective): L₀ (`original_length` or the spheres'
    /// extent), A (resolved by the scene) and the centre from the scene's summary of all
    /// spheres (identical on every rank); the support groups (default: the spheres within 2
    /// mean radii of either end) — each rank blocks the axial DOF of its own. A group is
    /// *lower* or *upper* by the side of the centre its spheres lie on (as the prescribed
    /// velocity is chosen every step): a tag or gid group with spheres on the wrong side, or
    /// an empty group, is refused. The mean lateral distance is an exact global sum, so every
    /// rank count gets the same bits.
    pub fn new(
        spec: &StrainerSpec,
        all: &Summary,
        ps: &mut Particles,
        comm: &Comm,
    ) -> Result<Self> {
        let axis = spec.axis;
        let (lo, hi) = (all.ext_lo, all.ext_hi);
        let mean_r = all.rsum / all.n.max(1) as f64;
        let center = (lo + hi) * 0.5;
        let n = ps.n_owned;
        let bit = 1u8 << axis;
        let supports = spec
            .supports
            .clone()
            .unwrap_or(SupportSpec::Layer(2.0 * mean_r));
        // (lower, upper) membership of owned particle i
        let side = |ps: &Particles, i: usize| -> (bool, bool) {
            let x = ps.pos[i][axis];
            match &supports {
                SupportSpec::Layer(t) => (
                    x - ps.radius[i] < lo[axis] + t,
                    x + ps.radius[i] > hi[axis] - t,
                ),
                SupportSpec::Tags { lower, upper } => (ps.tag[i] == *lower, ps.tag[i] == *upper),
                SupportSpec::Gids { lower, upper } => (
                    lower.binary_search(&ps.gid[i]).is_ok(),
                    upper.binary_search(&ps.gid[i]).is_ok(),
                ),
            }
        };
        // counts: lower, upper, lower above the centre, upper below it
        let mut c = [0u64; 4];
        for i in 0..n {
            let (l, u) = side(ps, i);
            let above = ps.pos[i][axis] > center[axis];
            c[0] += l as u64;
            c[1] += u as u64;
            c[2] += (l && above) as u64;
            c[3] += (u && !above) as u64;
            if l || u {
                ps.blocked[i] |= bit;
                ps.vel[i][axis] = 0.0;
            }
        }
        let c = c.map(|x| comm.sum_u64(x));
        if !matches!(supports, SupportSpec::Layer(_)) {
            if c[0] == 0 || c[1] == 0 {
                return Err(Error::Input(format!(
                    "strainer.supports: the lower support has {} spheres, the upper {}: both \
                     need some",
                    c[0], c[1]
                )));
            }
            if c[2] + c[3] > 0 {
                return Err(Error::Input(format!(
                    "strainer.supports: {} spheres of the lower support lie above the \
                     specimen's centre along the axis and {} of the upper below it",
                    c[2], c[3]
                )));
            }
        }
        let area = spec.area.unwrap_or_else(|| {
            let (a1, a2) = ((axis + 1) % 3, (axis + 2) % 3);
            (hi[a1] - lo[a1]) * (hi[a2] - lo[a2])
        });
        let mut s = UniaxialStrainer {
            axis,
            strain_rate: spec.strain_rate,
            ramp_steps: spec.ramp_steps,
            stop_fraction: spec.stop_fraction,
            length0: spec.original_length.unwrap_or(hi[axis] - lo[axis]),
            area,
            center: [center.x, center.y, center.z],
            lateral0: 1.0,
            displacement: 0.0,
            stress: 0.0,
            peak: 0.0,
            peak_strain: 0.0,
            done: false,
        };
        let mut sum = [ExactSum::new()];
        for i in 0..n {
            sum[0].add(s.lateral_distance(&ps.pos[i]));
        }
        comm.sum_exact(&mut sum);
        s.lateral0 = sum[0].value() / all.n.max(1) as f64;
        Ok(s)
    }

    fn lateral_distance(&self, x: &V3) -> f64 {
        let (a1, a2) = ((self.axis + 1) % 3, (self.axis + 2) % 3);
        let (d1, d2) = (x[a1] - self.center[a1], x[a2] - self.center[a2]);
        (d1 * d1 + d2 * d2).sqrt()
    }

    /// Axial strain (L − L₀)/L₀.
    pub fn strain(&self) -> f64 {
        self.displacement / self.length0
    }

    /// Velocity of the upper end during step `step` (the lower end moves opposite).
    pub fn end_velocity(&self, step: u64) -> f64 {
        let ramp = if self.ramp_steps == 0 {
            1.0
        } else {
            ((step + 1) as f64 / self.ramp_steps as f64).min(1.0)
        };
        0.5 * self.strain_rate * self.length0 * ramp
    }

    /// Before the step's contact loop: prescribe the axial velocity of every end particle
    /// (owned and ghost copies alike) and advance the elongation.
    pub fn pre_step(&mut self, step: u64, dt: f64, ps: &mut Particles) {
        let v = self.end_velocity(step);
        let (a, bit) = (self.axis, 1u8 << self.axis);
        for i in 0..ps.len() {
            if ps.blocked[i] & bit != 0 {
                ps.vel[i][a] = if ps.pos[i][a] > self.center[a] { v } else { -v };
            }
        }
        self.displacement += 2.0 * v * dt;
    }

    /// After the step (forces of this step known on owned particles): axial stress, peak,
    /// stop criterion. Collective.
    pub fn post_step(&mut self, ps: &Particles, comm: &Comm) {
        let (a, bit) = (self.axis, 1u8 << self.axis);
        let mut f = [ExactSum::new(), ExactSum::new()];
        for i in 0..ps.n_owned {
            if ps.blocked[i] & bit != 0 {
                let top = ps.pos[i][a] > self.center[a];
                f[top as usize].add(ps.force[i][a]);
            }
        }
        comm.sum_exact(&mut f);
        // The specimen pulls the upper group down and the lower group up in tension:
        // σ = (F_lower − F_upper)/(2A), > 0 in tension.
        self.stress = (f[0].value() - f[1].value()) / (2.0 * self.area);
        let s = self.stress * self.strain_rate.signum();
        if s > self.peak {
            self.peak = s;
            self.peak_strain = self.strain();
        }
        if self.peak > 0.0 && s < self.stop_fraction * self.peak {
            self.done = true;
        }
    }

    /// Mean lateral strain (R̄ − R̄₀)/R̄₀ of all particles (collective).
    pub fn lateral_strain(&self, ps: &Particles, comm: &Comm) -> f64 {
        let mut sum = [ExactSum::new()];
        for i in 0..ps.n_owned {
            sum[0].add(self.lateral_distance(&ps.pos[i]));
        }
        comm.sum_exact(&mut sum);
        let n = comm.sum_u64(ps.n_owned as u64);
        sum[0].value() / n as f64 / self.lateral0 - 1.0
    }
}

/// Hooks: the supports' prescribed velocities before the contacts, the stress after the step.
impl super::Hooks for UniaxialStrainer {
    fn pre_force(&mut self, v: &mut super::StepView) -> crate::error::Result<()> {
        self.pre_step(v.step, v.dt, v.ps);
        Ok(())
    }
    fn end_of_step(&mut self, v: &mut super::StepView) -> crate::error::Result<()> {
        self.post_step(v.ps, v.comm);
        Ok(())
    }
    fn records_forces(&self) -> bool {
        true
    }
    fn finished(&self) -> bool {
        self.done
    }
}
