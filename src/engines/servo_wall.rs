//! Stress-controlled walls of a box (issue 23; Yade's `TriaxialStressController`, the box
//! version of the periodic cell's servo): the plane walls of the stress-controlled axes move
//! along their normals so that the stress they measure reaches a goal — isotropic
//! compression to p₀, or a triaxial test whose lateral walls hold σ₃ while the axial pair
//! moves at a strain rate (the axes outside the stress mask).
//!
//! Two hooks: `post_force` measures, on each wall, the normal force of this step's contacts
//! F · n and their stiffness to a move made within one step, K = Σ (dF_N/dδ + c_N/Δt) (exact
//! sums over the ranks; `FrictLaw::normal_response`: the tangent spring and the dashpot — a
//! wall moved by d over a step also approaches its spheres at d/Δt). With the secant spring
//! alone (K = Σ k_N, before issue 32) a viscous contact's force answered a move many times
//! more than K said (and a Hertz spring 1.5 times): the walls overshot every step, and a
//! loose, sparse box froze with the walls' forces and velocities flipping sign every step
//! while its edges stayed put; `pre_force`
//! of the next step turns them into the wall's velocity, so the contact loop books the
//! boundary's work with the velocity the wall then moves at (energy budget). Yade's update
//! (`TriaxialStressController::controlExternalStress`): the displacement that would bring the
//! force to its goal on the wall's contact stiffness, Δ = (F · n − σ_g A)/K, capped at
//! `max_vel` Δt (a wall without contacts moves at `max_vel`), of which the fraction
//! 1 − `wall_damping` is applied. (Yade also adds 0.8 of the previous step's move, an inertia
//! that overshoots; left out.) The stress of an axis is the mean of its two walls' F · n over
//! the cross-section A = the product of the other two edges (wall to wall; a periodic axis:
//! the period). Every input is an exact global sum or the walls' positions (the same on every
//! rank), so the walls move by the same bits on any layout; the measurements go through
//! checkpoints.

use crate::contact::Wall;
use crate::domain::Domain;
use crate::error::Result;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// The servo's scene form (`servo_walls: ServoWalls(...)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ServoWalls")]
pub struct ServoWallsSpec {
    /// Goal stress per axis [Pa], tension positive (Yade `goal1..3`; compression < 0).
    pub goal: [f64; 3],
    /// Yade `stressMask`: bit a set = axis a is stress-controlled (default 7, all three); the
    /// walls of the other axes are strain-controlled (`strain_rate`).
    #[serde(default = "all_axes", alias = "stressMask")]
    pub stress_mask: u8,
    /// Strain rate ε̇ [1/s] of the axes outside the mask (Yade `TriaxialCompressionEngine`'s
    /// `strainRate`; < 0 compresses): their walls move symmetrically at ∓½ ε̇ L, L the
    /// current edge (default 0: at rest).
    #[serde(default, alias = "strainRate")]
    pub strain_rate: [f64; 3],
    /// The largest wall speed [m/s] (Yade `max_vel`, default 1).
    #[serde(default = "one", alias = "maxVel")]
    pub max_vel: f64,
    /// Fraction of the computed displacement not applied (Yade `wallDamping`, default 0.25).
    #[serde(default = "quarter", alias = "wallDamping")]
    pub wall_damping: f64,
}

fn all_axes() -> u8 {
    7
}
fn one() -> f64 {
    1.0
}
fn quarter() -> f64 {
    0.25
}

/// The controller: its parameters, the box's walls and the last measurement (checkpointed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServoWalls {
    pub spec: ServoWallsSpec,
    /// For each axis, the indices of its walls (normal +e_a: the lower one; −e_a: the upper),
    /// or none (a periodic axis).
    pub walls: [Option<(usize, usize)>; 3],
    /// The domain's period along each axis (used for an axis without walls).
    pub period: [f64; 3],
    /// Per box wall ([`Self::slot`]: x lower, x upper, y lower, …): F · n of the last step's
    /// contacts [N] (< 0 in compression) and their stiffness to a move within one step,
    /// Σ (dF_N/dδ + c_N/Δt) [N/m]; `measured` once they hold a step's values.
    pub force_n: [f64; 6],
    pub stiffness: [f64; 6],
    pub measured: bool,
    /// The stress of each axis at the last measurement [Pa] (NaN for an axis without walls).
    pub stress: [f64; 3],
}

impl ServoWalls {
    pub fn new(spec: ServoWallsSpec, walls: [Option<(usize, usize)>; 3], period: [f64; 3]) -> Self {
        ServoWalls {
            spec,
            walls,
            period,
            force_n: [0.0; 6],
            stiffness: [0.0; 6],
            measured: false,
            stress: [f64::NAN; 3],
        }
    }

    /// The stress-controlled walls, validated: for each axis a pair of walls with normals +e_a
    /// and −e_a (the box), or a periodic axis; its walls at rest in the scene (the servo sets
    /// their velocity). A restart may change it (a triaxial test after an isotropic
    /// compression: another mask, a strain rate). Refused `with_cell` (a deforming cell).
    pub fn from_spec(
        ctx: &Ctx,
        sv: &ServoWallsSpec,
        walls: &[Wall],
        domain: &Domain,
        with_cell: bool,
    ) -> Result<ServoWalls> {
        if with_cell {
            let why = "not with a deforming cell (its stages servo the stress)";
            return Err(ctx.err("servo_walls", why));
        }
        ctx.finite3("servo_walls.goal", sv.goal)?;
        ctx.finite3("servo_walls.strain_rate", sv.strain_rate)?;
        if sv.stress_mask > 7 {
            return Err(ctx.err(
                "servo_walls.stress_mask",
                "must be in 0..=7 (bit a: axis a)",
            ));
        }
        ctx.positive("servo_walls.max_vel", sv.max_vel)?;
        if !(0.0..1.0).contains(&sv.wall_damping) {
            return Err(ctx.err("servo_walls.wall_damping", "must be in [0, 1)"));
        }
        let mut pairs = [None; 3];
        for (a, pair) in pairs.iter_mut().enumerate() {
            *pair = box_pair(ctx, sv, walls, domain, a)?;
        }
        let period = std::array::from_fn(|a| domain.hi[a] - domain.lo[a]);
        Ok(ServoWalls::new(sv.clone(), pairs, period))
    }

    /// The box's edge along each axis: from wall to wall, or the period.
    pub fn edges(&self, walls: &[Wall]) -> V3 {
        V3::from_fn(|a, _| match self.walls[a] {
            Some((lo, hi)) => walls[hi].point[a] - walls[lo].point[a],
            None => self.period[a],
        })
    }

    /// The measurement slot of scene wall `w`: 2a for the lower wall of axis a, 2a + 1 for the
    /// upper one; `None` for a wall not of the box.
    pub fn slot(&self, w: usize) -> Option<usize> {
        (0..3).find_map(|a| match self.walls[a] {
            Some((lo, _)) if lo == w => Some(2 * a),
            Some((_, hi)) if hi == w => Some(2 * a + 1),
            _ => None,
        })
    }

    /// The cross-section normal to axis `a`.
    fn area(&self, walls: &[Wall], a: usize) -> f64 {
        let e = self.edges(walls);
        e[(a + 1) % 3] * e[(a + 2) % 3]
    }

    /// Is axis `a` stress-controlled?
    fn controls(&self, a: usize) -> bool {
        self.spec.stress_mask & (1 << a) != 0 && self.walls[a].is_some()
    }

    /// `post_force`: this step's F · n and Σ k_N per box wall (by [`Self::slot`], summed over
    /// all ranks by the caller), and the stress of each axis.
    pub fn measure(&mut self, walls: &[Wall], force_n: [f64; 6], stiffness: [f64; 6]) {
        (self.force_n, self.stiffness, self.measured) = (force_n, stiffness, true);
        for a in 0..3 {
            let mean = 0.5 * (force_n[2 * a] + force_n[2 * a + 1]);
            self.stress[a] = match self.walls[a] {
                Some(_) => mean / self.area(walls, a),
                None => f64::NAN,
            };
        }
    }

    /// The `pre_force` hook: the velocity of each box wall over the coming step of length `dt`: the
    /// strain-controlled axes' from the strain rate, the stress-controlled axes' from the last
    /// measurement (none yet: they stay at rest).
    pub fn move_walls(&self, walls: &mut [Wall], dt: f64) {
        let edges = self.edges(walls);
        for a in (0..3).filter(|&a| !self.controls(a)) {
            if let Some((lo, hi)) = self.walls[a] {
                let v = 0.5 * self.spec.strain_rate[a] * edges[a];
                walls[lo].vel = walls[lo].direction() * -v;
                walls[hi].vel = walls[hi].direction() * -v;
            }
        }
        if !self.measured {
            return;
        }
        let cap = self.spec.max_vel * dt;
        for a in (0..3).filter(|&a| self.controls(a)) {
            let goal = self.spec.goal[a] * self.area(walls, a);
            let (lo, hi) = self.walls[a].expect("controlled axes have walls");
            for (w, s) in [(lo, 2 * a), (hi, 2 * a + 1)] {
                let excess = self.force_n[s] - goal; // > 0: pushed too little, move in
                let k = self.stiffness[s];
                let d = if k > 0.0 {
                    (excess / k).clamp(-cap, cap)
                } else {
                    cap * excess.signum()
                };
                walls[w].vel = walls[w].direction() * ((1.0 - self.spec.wall_damping) * d / dt);
            }
        }
    }
}

/// The walls (lower, upper) of axis `a`: the only wall of normal +e_a and the only one of
/// normal −e_a, both at rest; `None` on a periodic axis without them, which the servo must
/// then leave alone (no stress goal, no strain rate).
fn box_pair(
    ctx: &Ctx,
    sv: &ServoWallsSpec,
    walls: &[Wall],
    domain: &Domain,
    a: usize,
) -> Result<Option<(usize, usize)>> {
    let along = |w: &Wall, sign: f64| {
        w.plane_normal()
            .is_some_and(|n| (n[a] * sign - 1.0).abs() < 1e-12)
    };
    let find = |sign: f64| {
        let mut it = walls.iter().enumerate().filter(|(_, w)| along(w, sign));
        match (it.next(), it.next()) {
            (Some((k, _)), None) => Some(k),
            _ => None,
        }
    };
    let axis = ["x", "y", "z"][a];
    let (lo, hi) = match (find(1.0), find(-1.0)) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ if domain.periodic[a] => {
            if sv.stress_mask & (1 << a) != 0 || sv.strain_rate[a] != 0.0 {
                return Err(ctx.err(
                    "servo_walls",
                    format!("axis {axis} is periodic: it has no walls to control"),
                ));
            }
            return Ok(None);
        }
        _ => {
            return Err(ctx.err(
                "servo_walls",
                format!(
                    "axis {axis} needs one wall of normal +{axis} and one of normal \
                     −{axis} (the box), or a periodic domain"
                ),
            ))
        }
    };
    for w in [lo, hi] {
        if walls[w].vel != V3::zeros() {
            return Err(ctx.err(
                &format!("walls[{w}].velocity"),
                "the servo sets the velocity of the box's walls",
            ));
        }
    }
    Ok(Some((lo, hi)))
}

/// Hooks: the walls' velocities before the contacts (their measurement of the step's forces
/// is `sim`'s `post_force`: `Simulation::servo_measure`).
impl super::Hooks for ServoWalls {
    fn pre_force(&mut self, v: &mut super::StepView) -> crate::error::Result<()> {
        self.move_walls(v.walls, v.dt);
        Ok(())
    }
    fn records_forces(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(p: [f64; 3], n: [f64; 3]) -> Wall {
        Wall::plane(V3::from(p), V3::from(n), V3::zeros(), 0)
    }

    /// A 2 × 3 × 4 box; the z walls pushed with 60 N (σ_zz = −10 Pa on 6 m²), goal −20 Pa on
    /// contacts of 100 N/m: each z wall moves in by (1 − 0.25) · 60/100 m over the step, the
    /// x walls (no contacts) at 0.75 max_vel, the y axis (not in the mask) stretches at
    /// ε̇ = 0.25/s: its walls apart at ½ ε̇ L = 0.375 m/s each.
    #[test]
    fn servo_moves_each_wall_by_the_damped_force_error_over_its_stiffness() {
        let mut walls = vec![
            wall([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
            wall([2.0, 0.0, 0.0], [-1.0, 0.0, 0.0]),
            wall([0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
            wall([0.0, 3.0, 0.0], [0.0, -1.0, 0.0]),
            wall([0.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
            wall([0.0, 0.0, 4.0], [0.0, 0.0, -1.0]),
        ];
        let spec = ServoWallsSpec {
            goal: [-20.0; 3],
            stress_mask: 0b101,
            strain_rate: [0.0, 0.25, 0.0],
            max_vel: 2.0,
            wall_damping: 0.25,
        };
        let pairs = [Some((0, 1)), Some((2, 3)), Some((4, 5))];
        let mut s = ServoWalls::new(spec, pairs, [0.0; 3]);
        assert_eq!(s.edges(&walls), V3::new(2.0, 3.0, 4.0));
        assert_eq!((s.slot(4), s.slot(3), s.slot(6)), (Some(4), Some(3), None));
        let f = [0.0, 0.0, 0.0, 0.0, -60.0, -60.0];
        s.measure(&walls, f, [0.0, 0.0, 0.0, 0.0, 100.0, 100.0]);
        assert_eq!(s.stress, [0.0, 0.0, -10.0]);
        let dt = 0.5;
        s.move_walls(&mut walls, dt);
        // z: excess = −60 + 20·6 = 60 N → 0.6 m, capped at max_vel dt = 1 m: 0.75 · 0.6 / dt
        assert!((walls[4].vel.z - 0.9).abs() < 1e-15 && (walls[5].vel.z + 0.9).abs() < 1e-15);
        // x: no contacts, goal −20 · 12: moves in at 0.75 max_vel
        assert_eq!(walls[0].vel.x, 1.5);
        assert_eq!(walls[1].vel.x, -1.5);
        assert_eq!(walls[2].vel.y, -0.375);
        assert_eq!(walls[3].vel.y, 0.375);
    }
}
