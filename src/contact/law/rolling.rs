//! Rolling and twisting resistance, added to any frictional law (laws-and-flows digest §2). Two
//! models ([`RollModel`]):
//!
//! - **Constant directional torque** (LIGGGHTS `rolling_friction cdt`; Zhou et al. 1999 model
//!   A). With the relative angular velocity ω_rel = ω1 − ω2 split about the contact normal n
//!   into a rolling part ω_r = ω_rel − (n·ω_rel) n and a twisting part ω_t = n·ω_rel, the
//!   moments on particle 1 are M_r = −μ_r R_eff |F_N| ω_r/|ω_r| and
//!   M_t = −μ_t R_eff |F_N| sign(ω_t) n (particle 2 gets the opposite), R_eff = r1 r2/(r1 + r2)
//!   (a wall: the sphere's radius). A solid sphere rolling on a plane decelerates at
//!   (5/7) μ_r g; spinning about the normal, at (5/2) μ_t g / r. The moment keeps its full size
//!   until the relative rotation reverses, so near rest it flips sign from step to step (the
//!   model's known chatter, amplitude μ_r R |F_N| Δt / I): a body held by it creeps at about
//!   that rate instead of resting exactly.
//! - **Elastic–plastic spring** (EPSD: Ai, Chen, Rotter & Ooi 2011, Powder Technol. 206,
//!   "model C"; LIGGGHTS `rolling_friction epsd2` and `epsd`; Woo `relRollStiff`,
//!   `rollTanPhi`). A moment history M (on particle 1) grows by the relative rotation,
//!   ΔM_r = −k_r ω_r Δt, and is capped at |M_r| ≤ μ_r R_eff |F_N| (full mobilisation: then it
//!   is the constant torque of cdt). `Epsd2` (LIGGGHTS epsd2): k_r = k_T R_eff² (k_T the law's
//!   current tangential stiffness), no dashpot. `Epsd` (LIGGGHTS epsd, Ai's model C): k_r =
//!   2.25 k_N μ_r² R_eff² (k_N the law's current secant normal stiffness F_N/δ) and a rolling
//!   dashpot −C_r ω_r while the spring is below its cap (none in full mobilisation, as
//!   LIGGGHTS), C_r = η_r 2 √(I_r k_r) with the pair's rotational inertia about the contact
//!   I_r = [1/(I₁ + m₁ r₁²) + 1/(I₂ + m₂ r₂²)]⁻¹ (a wall: I + m r²; Ai et al. eq. 16; for
//!   solid spheres LIGGGHTS' 1.4 m* r²) and η_r the damping ratio (LIGGGHTS
//!   `coefficientRollingViscousDamping`). Twisting: the same spring about n (stiffness k_r, cap
//!   μ_t R_eff |F_N|; LIGGGHTS epsd2 has none, Woo applies one rule to both). The history is
//!   carried with the contact frame like the shear force (the rolling part by
//!   [`rotate_shear`], the twisting part as a component along n), lives in its own pair array
//!   (`PairList::roll`) and travels with migrations and checkpoints. A body on an incline below
//!   the rolling-friction angle rests exactly (no chatter).

use super::select3;
use crate::contact::geom::rotate_shear;
use crate::V3;

/// Which rolling-resistance model (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RollModel {
    /// Constant directional torque (LIGGGHTS `cdt`): no history.
    #[default]
    ConstantTorque,
    /// Elastic–plastic spring, k_r = k_T R_eff², no dashpot (LIGGGHTS `epsd2`): a moment
    /// history per contact.
    Epsd2,
    /// Elastic–plastic spring–dashpot, k_r = 2.25 k_N μ_r² R_eff², damping ratio η_r (LIGGGHTS
    /// `epsd`, Ai et al. model C): a moment history per contact.
    Epsd,
}

/// The scene's rolling and twisting resistance: model and coefficients (both 0: off).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rolling {
    /// Rolling friction coefficient μ_r (LIGGGHTS `coefficientRollingFriction`).
    pub mu_r: f64,
    /// Twisting friction coefficient μ_t.
    pub mu_t: f64,
    pub model: RollModel,
    /// Rolling damping ratio η_r of [`RollModel::Epsd`] (LIGGGHTS
    /// `coefficientRollingViscousDamping`; unused by the other models).
    pub eta_r: f64,
}

impl Rolling {
    /// No resistance.
    pub fn is_off(&self) -> bool {
        self.mu_r == 0.0 && self.mu_t == 0.0
    }

    /// The contacts carry a moment history (`PairList::roll`): an EPSD model is on.
    pub fn has_history(&self) -> bool {
        !self.is_off() && matches!(self.model, RollModel::Epsd2 | RollModel::Epsd)
    }

    /// The EPSD spring stiffness k_r and dashpot coefficient C_r (module docs) of a contact of
    /// effective radius `r_eff`, the law's tangential and secant normal stiffnesses `k_t`,
    /// `k_n`, and rotational inertia `i_r` about the contact.
    #[inline(always)]
    pub fn spring(&self, r_eff: f64, k_t: f64, k_n: f64, i_r: f64) -> (f64, f64) {
        let r2 = r_eff * r_eff;
        match self.model {
            RollModel::Epsd => {
                let k_r = 2.25 * k_n * self.mu_r * self.mu_r * r2;
                (k_r, self.eta_r * 2.0 * (i_r * k_r).sqrt())
            }
            _ => (k_t * r2, 0.0),
        }
    }

    /// EPSD (module docs): the moment on particle 1 (−it on particle 2) and the new history
    /// (the spring's moment), from the history `m` and normal `n_old` of the previous step,
    /// the normal `n` (1→2), the force `f` on particle 1, the angular velocities, R_eff, the
    /// spring stiffness `k_r` and dashpot coefficient `c_r` ([`Self::spring`]) and Δt. Selects
    /// only (the batch kernel vectorises it).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn epsd(
        &self,
        m: V3,
        n_old: V3,
        n: V3,
        f: V3,
        (w1, w2): (V3, V3),
        r_eff: f64,
        (k_r, c_r): (f64, f64),
        dt: f64,
    ) -> (V3, V3) {
        let t = Trial::of(m, n_old, n, f, (w1, w2), k_r, dt);
        let (m_r, m_t, over) = self.caps(&t, r_eff);
        let spring = m_r + n * m_t;
        let wr = t.wr;
        // the rolling dashpot, below the cap only (LIGGGHTS epsd; zero for epsd2)
        let damp = select3(over, V3::zeros(), wr * -c_r);
        (spring + damp, spring)
    }

    /// The moment on particle 1 (−it on particle 2) of a contact with normal `n` (1→2), force
    /// `f` on particle 1, angular velocities `w1`, `w2` and effective radius `r_eff`.
    #[inline(always)]
    pub fn moment(&self, n: V3, f: V3, w1: V3, w2: V3, r_eff: f64) -> V3 {
        let (fn_abs, wr, wt) = split(n, f, w1, w2);
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

impl Rolling {
    /// Energy tracking, constant torque: the work the moment ([`Self::moment`]) takes from
    /// the relative rotation in one step, −M · (ω1 − ω2) Δt ≥ 0 (M on 1, −M on 2).
    #[inline(always)]
    pub fn moment_dissipation(&self, n: V3, f: V3, (w1, w2): (V3, V3), r_eff: f64, dt: f64) -> f64 {
        -self.moment(n, f, w1, w2, r_eff).dot(&(w1 - w2)) * dt
    }

    /// Energy tracking, EPSD: (plastic work, dashpot work) of one step of [`Self::epsd`] with
    /// the same inputs — the springs' release to the caps, rolling and twisting (as the shear
    /// spring's, `law::slip_work`), and C_r |ω_r|² Δt below the cap.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn epsd_energy(
        &self,
        m: V3,
        n_old: V3,
        n: V3,
        f: V3,
        (w1, w2): (V3, V3),
        r_eff: f64,
        (k_r, c_r): (f64, f64),
        dt: f64,
    ) -> (f64, f64) {
        let t = Trial::of(m, n_old, n, f, (w1, w2), k_r, dt);
        let (new_r, new_t, over) = self.caps(&t, r_eff);
        let plastic = crate::contact::law::slip_work(t.old_r, t.m_r, new_r, k_r)
            + crate::contact::law::slip_work(n * t.m_t0, n * t.m_t, n * new_t, k_r);
        let damp = if over {
            0.0
        } else {
            c_r * t.wr.norm_squared() * dt
        };
        (plastic, damp)
    }

    /// Energy tracking: the elastic energy ½ |M|²/k_r of an EPSD moment history `m` (spring
    /// stiffness `k_r`, [`Self::spring`]); 0 without a spring.
    #[inline(always)]
    pub fn spring_energy(&self, m: V3, k_r: f64) -> f64 {
        match k_r > 0.0 {
            true => 0.5 * m.norm_squared() / k_r,
            false => 0.0,
        }
    }
}

/// One EPSD step before the caps: the old moment carried with the contact frame — its
/// rolling part as a shear vector (tilt and mean spin of the normal, `old_r`), its twisting
/// part as its component along n (`m_t0`) — and grown by the relative rotation (`m_r`, `m_t`);
/// |F_N| and the rolling part ω_r of the relative rotation.
struct Trial {
    old_r: V3,
    m_t0: f64,
    m_r: V3,
    m_t: f64,
    fn_abs: f64,
    wr: V3,
}

impl Trial {
    #[inline(always)]
    fn of(m: V3, n_old: V3, n: V3, f: V3, (w1, w2): (V3, V3), k_r: f64, dt: f64) -> Trial {
        let (fn_abs, wr, wt) = split(n, f, w1, w2);
        let m_t0 = n_old.dot(&m);
        let m_r0 = m - n_old * m_t0;
        let old_r = rotate_shear(m_r0, n_old, n, n.dot(&(w1 + w2)), dt);
        Trial {
            old_r,
            m_t0,
            m_r: old_r - wr * (k_r * dt),
            m_t: m_t0 - wt * (k_r * dt),
            fn_abs,
            wr,
        }
    }
}

impl Rolling {
    /// The caps of a trial: |M_r| ≤ μ_r R_eff |F_N|, |M_t| ≤ μ_t R_eff |F_N| (radial return);
    /// (M_r, M_t, whether the rolling cap acted).
    #[inline(always)]
    fn caps(&self, t: &Trial, r_eff: f64) -> (V3, f64, bool) {
        let (cap_r, cap_t) = (self.mu_r * r_eff * t.fn_abs, self.mu_t * r_eff * t.fn_abs);
        let mr2 = t.m_r.norm_squared();
        let over = mr2 > cap_r * cap_r;
        let m_r = t.m_r * if over { cap_r / mr2.sqrt() } else { 1.0 };
        (m_r, t.m_t.max(-cap_t).min(cap_t), over)
    }
}

/// |F_N| of the force `f` on particle 1, and the relative rotation ω1 − ω2 split about the
/// normal `n`: its rolling part ω_r (⟂ n) and its twisting part ω_t = n·(ω1 − ω2).
#[inline(always)]
fn split(n: V3, f: V3, w1: V3, w2: V3) -> (f64, V3, f64) {
    let w = w1 - w2;
    let wt = n.dot(&w);
    (n.dot(&f).abs(), w - n * wt, wt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_oppose_relative_rotation_with_full_size() {
        let r = Rolling {
            mu_r: 0.1,
            mu_t: 0.05,
            model: RollModel::ConstantTorque,
            eta_r: 0.0,
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

    /// EPSD under a relative rotation about a fixed tangent: the moment grows as −k_r θ up to
    /// the cap μ_r R |F_N|, holds there, and unloads elastically (slope k_r) when the rotation
    /// reverses, down to the opposite cap: the elastic–plastic loop of Ai et al. (2011)
    /// model C without its dashpot.
    #[test]
    fn epsd_is_an_elastic_plastic_spring() {
        let r = Rolling {
            mu_r: 0.1,
            mu_t: 0.05,
            model: RollModel::Epsd2,
            eta_r: 0.0,
        };
        assert!(r.has_history() && !Rolling::default().has_history());
        let (n, f) = (V3::z(), V3::new(0.3, 0.0, -2.0)); // |F_N| = 2
        let (r_eff, k_t, dt, w) = (0.5, 1.0, 1e-3, 2.0);
        let k_r = k_t * r_eff * r_eff; // 0.25 N m / rad; the cap 0.1 · 0.5 · 2 = 0.1 N m
        let cap = 0.1 * r_eff * 2.0;
        let step = |m: V3, wy: f64| {
            r.epsd(
                m,
                n,
                n,
                f,
                (V3::new(0.0, wy, 0.0), V3::zeros()),
                r_eff,
                r.spring(r_eff, k_t, 0.0, 0.0),
                dt,
            )
            .1
        };
        let mut m = V3::zeros();
        // loading: 0.1 / (0.25 · 2e-3) = 200 steps to the cap
        for k in 1..=150 {
            m = step(m, w);
            assert!(
                (m.y + k_r * w * dt * k as f64).abs() < 1e-12,
                "step {k}: {m}"
            );
            assert_eq!((m.x, m.z), (0.0, 0.0));
        }
        for _ in 0..100 {
            m = step(m, w);
        }
        assert!((m.y + cap).abs() < 1e-15, "capped: {m}");
        // unloading: elastic from the cap, through zero at 200 steps, to +cap at 400
        for k in 1..=200 {
            m = step(m, -w);
            assert!(
                (m.y - (-cap + k_r * w * dt * k as f64)).abs() < 1e-12,
                "unload {k}: {m}"
            );
        }
        assert!(m.y.abs() < 1e-12);
        for _ in 0..250 {
            m = step(m, -w);
        }
        assert!((m.y - cap).abs() < 1e-15, "the opposite cap: {m}");
        // twisting: its own spring (stiffness k_r) and cap μ_t R |F_N| along n
        let mut m = V3::zeros();
        let spin = |m: V3| {
            r.epsd(
                m,
                n,
                n,
                f,
                (V3::new(0.0, 0.0, w), V3::zeros()),
                r_eff,
                r.spring(r_eff, k_t, 0.0, 0.0),
                dt,
            )
            .1
        };
        m = spin(m);
        assert!((m - V3::new(0.0, 0.0, -k_r * w * dt)).norm() < 1e-15);
        for _ in 0..200 {
            m = spin(m);
        }
        assert!((m.z + 0.05 * r_eff * 2.0).abs() < 1e-15, "twist cap: {m}");
    }

    /// The EPSD history turns with the contact: a rigid rotation of the pair (normal turning
    /// at Ω, both spheres spinning at Ω) keeps the rolling moment's length and its tangency and
    /// the twisting moment along the normal, and adds nothing (no relative rotation).
    #[test]
    fn epsd_history_follows_a_rigid_rotation_of_the_pair() {
        let r = Rolling {
            mu_r: 1.0,
            mu_t: 1.0,
            model: RollModel::Epsd2,
            eta_r: 0.0,
        };
        let (dt, omega) = (1e-3, 2.0);
        let spin = V3::new(0.0, 0.0, omega);
        let f = |n: V3| -n * 100.0; // caps far away
        let mut n_old = V3::x();
        let mut m = V3::new(0.0, 0.3, 0.0) + n_old * 0.2; // rolling 0.3 along y, twist 0.2
        for k in 1..=500 {
            let a = omega * dt * k as f64;
            let n = V3::new(a.cos(), a.sin(), 0.0);
            m = r
                .epsd(m, n_old, n, f(n), (spin, spin), 0.5, (250.0, 0.0), dt)
                .1;
            n_old = n;
        }
        let a = omega * dt * 500.0;
        let n = V3::new(a.cos(), a.sin(), 0.0);
        let m_t = n.dot(&m);
        let m_r = m - n * m_t;
        assert!((m_t - 0.2).abs() < 1e-12, "twist {m_t}");
        assert!((m_r.norm() - 0.3).abs() < 1e-12, "|M_r| {}", m_r.norm());
        // turned with the pair: the tangent (−sin a, cos a, 0) within the first-order error
        let t = V3::new(-a.sin(), a.cos(), 0.0);
        assert!(
            (m_r - t * 0.3).norm() < 1e-3 * 0.3,
            "M_r {m_r} vs {}",
            t * 0.3
        );
    }

    /// LIGGGHTS `epsd` (Ai et al. model C): k_r = 2.25 k_N μ_r² R², dashpot η_r 2 √(I_r k_r)
    /// on the rolling part below the cap, none at the cap; the history is the spring alone.
    #[test]
    fn epsd_with_dashpot_damps_below_the_cap_only() {
        let r = Rolling {
            mu_r: 0.1,
            mu_t: 0.0,
            model: RollModel::Epsd,
            eta_r: 0.3,
        };
        let (r_eff, k_n, i_r) = (0.5, 1e3, 0.02);
        let (k_r, c_r) = r.spring(r_eff, 77.0, k_n, i_r);
        assert!((k_r - 2.25 * k_n * 0.01 * 0.25).abs() < 1e-12);
        assert!((c_r - 0.3 * 2.0 * (i_r * k_r).sqrt()).abs() < 1e-12);
        let (n, f) = (V3::z(), V3::new(0.0, 0.0, -2.0)); // cap 0.1 N m
        let w = (V3::new(0.0, 2.0, 0.0), V3::zeros());
        let (m, spring) = r.epsd(V3::zeros(), n, n, f, w, r_eff, (k_r, c_r), 1e-3);
        assert!((spring.y + k_r * 2.0 * 1e-3).abs() < 1e-15);
        assert!(
            (m - spring - V3::new(0.0, -c_r * 2.0, 0.0)).norm() < 1e-15,
            "{m}"
        );
        // at the cap: the spring's moment only
        let (m, spring) = r.epsd(V3::new(0.0, -0.1, 0.0), n, n, f, w, r_eff, (k_r, c_r), 1e-3);
        assert_eq!(m, spring);
        assert!((spring.y + 0.1).abs() < 1e-15);
    }
}
