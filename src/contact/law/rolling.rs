//! Rolling and twisting resistance, constant directional torque (LIGGGHTS `rolling_friction
//! cdt`; Zhou et al. 1999 model A; laws-and-flows digest §2), added to any frictional law.
//!
//! With the relative angular velocity ω_rel = ω1 − ω2 split about the contact normal n into a
//! rolling part ω_r = ω_rel − (n·ω_rel) n and a twisting part ω_t = n·ω_rel, the moments on
//! particle 1 are M_r = −μ_r R_eff |F_N| ω_r/|ω_r| and M_t = −μ_t R_eff |F_N| sign(ω_t) n
//! (particle 2 gets the opposite), R_eff = r1 r2/(r1 + r2) (a wall: the sphere's radius).
//! A solid sphere rolling on a plane decelerates at (5/7) μ_r g; spinning about the normal, at
//! (5/2) μ_t g / r. The moment keeps its full size until the relative rotation reverses, so
//! near rest it flips sign from step to step (the model's known chatter, amplitude
//! μ_r R |F_N| Δt / I): a body held by it creeps at about that rate instead of resting
//! exactly; the elastic–plastic spring model (EPSD, a per-contact moment history) is the one
//! for statics and is not built yet.

use super::select3;
use crate::V3;

/// The scene's rolling and twisting resistance coefficients (both 0: off).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rolling {
    /// Rolling friction coefficient μ_r (LIGGGHTS `coefficientRollingFriction`).
    pub mu_r: f64,
    /// Twisting friction coefficient μ_t.
    pub mu_t: f64,
}

impl Rolling {
    /// No resistance.
    pub fn is_off(&self) -> bool {
        self.mu_r == 0.0 && self.mu_t == 0.0
    }

    /// The moment on particle 1 (−it on particle 2) of a contact with normal `n` (1→2), force
    /// `f` on particle 1, angular velocities `w1`, `w2` and effective radius `r_eff`.
    #[inline(always)]
    pub fn moment(&self, n: V3, f: V3, w1: V3, w2: V3, r_eff: f64) -> V3 {
        let fn_abs = n.dot(&f).abs();
        let w = w1 - w2;
        let wt = n.dot(&w);
        let wr = w - n * wt;
        let wr2 = wr.norm_squared();
        let m_r = wr * (-self.mu_r * r_eff * fn_abs / wr2.sqrt());
        let m_r = select3(wr2 > 0.0, m_r, V3::zeros());
        let s = if wt > 0.0 {
            1.0
        } else if wt < 0.0 {
            -1.0
        } else {
            0.0
        };
        m_r - n * (self.mu_t * r_eff * fn_abs * s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_oppose_relative_rotation_with_full_size() {
        let r = Rolling {
            mu_r: 0.1,
            mu_t: 0.05,
        };
        let n = V3::z();
        let f = V3::new(0.3, 0.0, -2.0); // |F_N| = 2
                                         // 1 rolls about y relative to 2 and twists about +z
        let m = r.moment(n, f, V3::new(0.0, 5.0, 1.0), V3::zeros(), 0.5);
        assert!((m - V3::new(0.0, -0.1 * 0.5 * 2.0, -0.05 * 0.5 * 2.0)).norm() < 1e-15);
        // no relative rotation, no moment; 2 turning instead of 1 reverses it
        assert_eq!(r.moment(n, f, V3::zeros(), V3::zeros(), 0.5), V3::zeros());
        let m2 = r.moment(n, f, V3::zeros(), V3::new(0.0, 5.0, 1.0), 0.5);
        assert!((m2 + m).norm() < 1e-15);
        assert!(Rolling::default().is_off() && !r.is_off());
    }
}
