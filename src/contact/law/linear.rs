//! Cundall–Strack linear elastic–frictional law (Yade `Law2_ScGeom_FrictPhys_CundallStrack`,
//! thesis §2.4 eq. 2.45–2.49, digest A6) with an optional viscous normal dashpot tuned to a
//! restitution coefficient (digest A6, last bullet).

pub mod material;

use super::super::geom::rotate_shear;
use super::FrictPhys;
use super::{slip_work, ContactStep, FrictLaw};
use crate::V3;

/// Damping ratio ζ of a linear spring–dashpot giving restitution `e` (digest A6):
/// ζ = −ln e / sqrt(π² + ln² e).
pub fn damping_ratio(e: f64) -> f64 {
    let l = e.ln();
    -l / (std::f64::consts::PI * std::f64::consts::PI + l * l).sqrt()
}

/// The Cundall–Strack law as a [`FrictLaw`] (`Frict` materials).
pub struct CundallStrack;

/// One step (thesis §2.4): returns the force on particle 1 and the new shear force.
///
/// * `n`: unit normal 1→2, `u_n` < 0 in compression, `v12`: relative velocity at the contact
///   point (2 relative to 1), `twist`: n·(ω1 + ω2).
/// * Normal: F_N = K_N u_N n (+ c_n (n·v12) n) — on particle 1, pointing away from 2 in
///   compression.
/// * Shear: the stored shear force is carried with the contact frame, then incremented by
///   K_T Δt v12⊥ (demhpc sign, digest A13 row 4: friction on 1 follows 2's sliding) and returned
///   radially to |F_T| ≤ |F_N^el| tan φ (Coulomb, eq. 2.48).
impl FrictLaw for CundallStrack {
    #[inline(always)]
    fn step(
        &self,
        p: &FrictPhys,
        fs: V3,
        n_old: V3,
        n: V3,
        u_n: f64,
        v12: V3,
        twist: f64,
        dt: f64,
        _r_eff: f64,
    ) -> (V3, V3) {
        let vn = n.dot(&v12);
        let vt = v12 - n * vn;
        // thesis eq. 2.46: the old shear force carried with the contact frame, plus K_T Δt v⊥
        let fs = rotate_shear(fs, n_old, n, twist, dt) + vt * (p.ks * dt);
        // thesis eq. 2.45 (normal) and 2.48 (Coulomb: |F_T| ≤ |F_N| tan φ, radial return)
        let fn_el = p.kn * u_n;
        let max_fs = fn_el.abs() * p.tan_phi;
        let fs2 = fs.norm_squared();
        let slip = max_fs / fs2.sqrt();
        let fs = fs * if fs2 > max_fs * max_fs { slip } else { 1.0 };
        (n * (fn_el + p.cn * vn) + fs, fs)
    }

    /// The energy terms of `Law2_ScGeom_FrictPhys_CundallStrack` (Yade's `plastDissip`, but
    /// the spring's whole release, [`slip_work`]) and the dashpot's c_n v_N² Δt. The elastic
    /// energy is the trait's linear-spring form (history = shear force).
    #[inline(always)]
    fn step_energy(&self, c: &ContactStep, dt: f64) -> Option<(f64, f64)> {
        let p = &c.p;
        let vn = c.n.dot(&c.v12);
        let old = rotate_shear(c.fs, c.n_old, c.n, c.twist, dt);
        let trial = old + (c.v12 - c.n * vn) * (p.ks * dt);
        let slip = slip_work(old, trial, c.fs_new, p.ks);
        Some((slip, p.cn * vn * vn * dt))
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::store::FrictState;
    use super::*;

    fn cundall_strack(st: &mut FrictState, n: V3, u_n: f64, v12: V3, twist: f64, dt: f64) -> V3 {
        CundallStrack.apply(st, n, u_n, v12, twist, dt, 1.0)
    }

    fn state(tan_phi: f64) -> FrictState {
        FrictState::new(
            FrictPhys {
                kn: 1e4,
                ks: 2e3,
                tan_phi,
                cn: 0.0,
            },
            V3::x(),
        )
    }

    #[test]
    fn approaching_spheres_are_pushed_apart() {
        // Convention test 1 (digest A0): compression pushes 1 along −n.
        let mut st = state(0.5);
        let f = cundall_strack(&mut st, V3::x(), -1e-4, V3::zeros(), 0.0, 1e-6);
        assert!((f - V3::new(-1.0, 0.0, 0.0)).norm() < 1e-12);
    }

    #[test]
    fn friction_on_1_follows_sliding_of_2_and_is_capped() {
        // Convention test 2: 2 slides along +y past 1; friction on 1 points +y; after enough
        // sliding it saturates at |F_N| tan φ = 1 N · 0.5.
        let mut st = state(0.5);
        let mut f = V3::zeros();
        for _ in 0..1000 {
            f = cundall_strack(&mut st, V3::x(), -1e-4, V3::new(0.0, 1.0, 0.0), 0.0, 1e-6);
        }
        assert!(f.y > 0.0);
        assert!((f.y - 0.5).abs() < 1e-12);
        // Elastic stage: after 1 step the shear force is K_T Δt v.
        let mut st = state(0.5);
        let f = cundall_strack(&mut st, V3::x(), -1e-4, V3::new(0.0, 1.0, 0.0), 0.0, 1e-6);
        assert!((f.y - 2e3 * 1e-6).abs() < 1e-15);
    }

    #[test]
    fn slip_dissipates_energy() {
        // Convention test 3: work done on the pair by friction during steady sliding is negative
        // (power of the friction on 2, −F_T, against v12).
        let mut st = state(0.3);
        let v12 = V3::new(0.0, 0.5, 0.2);
        let mut work = 0.0;
        for _ in 0..2000 {
            let f = cundall_strack(&mut st, V3::x(), -1e-4, v12, 0.0, 1e-6);
            let ft = f - V3::x() * f.x;
            work += -ft.dot(&v12) * 1e-6;
        }
        assert!(work < 0.0);
    }
}
