//! LAMMPS' `pair gran/hooke/history` (and `fix wall/gran hooke/history`) as a demhpc law
//! (laws-and-flows digest §3; LAMMPS doc `pair_gran`): constant stiffnesses, viscous damping
//! proportional to the reduced mass, Coulomb on the total normal force by default.
//!
//! With m* = m1 m2/(m1 + m2) (a wall: the sphere's mass), δ = −u_N:
//! F_N = kn δ + m* γ_N v_N (on 1, along −n in compression; not cut at zero, as LAMMPS without
//! `limit_damping`), F_T = kt ξ + m* γ_T v_T with the shear displacement ξ (incremented by
//! v_T Δt, then projected onto the current tangent plane without rescaling, as LAMMPS does);
//! |F_T| ≤ μ |F_N| with the total F_N (LAMMPS) or the elastic kn δ (Yade's Cundall–Strack,
//! the option `coulomb: Elastic`), and on slip ξ is reset so that kt ξ + m* γ_T v_T equals
//! the limited force (LAMMPS' rescaling).
//!
//! Pair constants in [`FrictPhys`]: `kn`, `ks` = kt, `tan_phi` = μ, `cn` = m*. The scene-wide
//! γ_N, γ_T [1/s] and the Coulomb choice are the law's ([`Hooke`]), like LAMMPS' single
//! `pair_style` line.

pub mod material;

use super::FrictPhys;
use super::{select3, slip_work, ContactStep, FrictLaw};
use crate::V3;

/// The scene-wide constants of the law (LAMMPS `pair_style gran/hooke/history Kn Kt gamma_n
/// gamma_t xmu dampflag`: Kn, Kt and xmu are the pair constants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hooke {
    /// γ_N [1/s].
    pub gamma_n: f64,
    /// γ_T [1/s] (LAMMPS dampflag 0 = 0).
    pub gamma_t: f64,
    /// Coulomb limit on the total normal force (LAMMPS); false: on the elastic part.
    pub coulomb_total: bool,
}

impl Hooke {
    pub fn new(gamma_n: f64, gamma_t: f64, coulomb_total: bool) -> Hooke {
        Hooke {
            gamma_n,
            gamma_t,
            coulomb_total,
        }
    }
}

impl FrictLaw for Hooke {
    #[inline(always)]
    fn step(
        &self,
        p: &FrictPhys,
        xi: V3,
        _n_old: V3,
        n: V3,
        u_n: f64,
        v12: V3,
        _twist: f64,
        dt: f64,
        _r_eff: f64,
    ) -> (V3, V3) {
        let m_eff = p.cn;
        let vn = n.dot(&v12);
        let vt = v12 - n * vn;
        // LAMMPS: shear += v_T Δt, then the normal component removed (no rescale)
        let xi = xi + vt * dt;
        let xi = xi - n * n.dot(&xi);
        let fn_el = p.kn * u_n;
        let f_n = fn_el + m_eff * self.gamma_n * vn;
        let damp_t = vt * (m_eff * self.gamma_t);
        let ft = xi * p.ks + damp_t;
        let max_ft = p.tan_phi * if self.coulomb_total { f_n } else { fn_el }.abs();
        let ft2 = ft.norm_squared();
        let slip = ft2 > max_ft * max_ft;
        let ratio = max_ft / ft2.sqrt();
        let ft = ft * if slip { ratio } else { 1.0 };
        // LAMMPS: shear = ratio (shear + m γ_T v_T / kt) − m γ_T v_T / kt
        let d = damp_t / p.ks;
        let xi_slip = (xi + d) * ratio - d;
        let xi = select3(slip, xi_slip, xi);
        (n * f_n + ft, xi)
    }

    /// kn + m* γ_N/Δt: the normal dashpot is m* γ_N (`cn` holds m*).
    #[inline(always)]
    fn normal_response(&self, p: &FrictPhys, _u_n: f64, dt: f64) -> f64 {
        p.kn + p.cn * self.gamma_n / dt
    }

    /// ½ kn δ² + ½ kt |ξ|² (the history is the shear displacement ξ).
    #[inline(always)]
    fn elastic_energy(&self, p: &FrictPhys, u_n: f64, xi: V3, _r_eff: f64) -> f64 {
        let u_n = u_n.min(0.0);
        0.5 * p.kn * u_n * u_n + 0.5 * p.ks * xi.norm_squared()
    }

    /// Slip: the spring's release to Coulomb's limit ([`slip_work`]; it can be negative here: LAMMPS' reset of ξ, which makes the spring and the dashpot together
    /// equal the limit, may lengthen the spring when the dashpot exceeds the limit).
    /// Viscous: both dashpots at full size (LAMMPS keeps the tangential one whole and resets
    /// the spring), m* γ_N v_N² Δt + m* γ_T |v_T|² Δt.
    #[inline(always)]
    fn step_energy(&self, c: &ContactStep, dt: f64) -> Option<(f64, f64)> {
        let (p, n) = (&c.p, c.n);
        let vn = n.dot(&c.v12);
        let vt = c.v12 - n * vn;
        let trial = c.fs + vt * dt;
        let trial = trial - n * n.dot(&trial);
        let old = c.fs - n * n.dot(&c.fs);
        let slip = slip_work(old * p.ks, trial * p.ks, c.fs_new * p.ks, p.ks);
        let visc = p.cn * (self.gamma_n * vn * vn + self.gamma_t * vt.norm_squared()) * dt;
        Some((slip, visc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phys(m_eff: f64) -> FrictPhys {
        FrictPhys {
            kn: 1e4,
            ks: 2.5e3,
            tan_phi: 0.5,
            cn: m_eff,
        }
    }

    #[test]
    fn normal_force_is_linear_with_reduced_mass_damping() {
        let h = Hooke::new(50.0, 0.0, true);
        // δ = 1e-4, approaching at 0.2 m/s: F on 1 = −(kn δ + m γ_N 0.2)
        let (f, _) = h.step(
            &phys(2e-3),
            V3::zeros(),
            V3::x(),
            V3::x(),
            -1e-4,
            V3::new(-0.2, 0.0, 0.0),
            0.0,
            1e-6,
            1.0,
        );
        assert!((f.x + (1.0 + 2e-3 * 50.0 * 0.2)).abs() < 1e-14, "{f}");
    }

    #[test]
    fn coulomb_on_total_or_elastic_normal_force() {
        let v = V3::new(-0.2, 1.0, 0.0); // approaching and sliding along y
        for total in [true, false] {
            let h = Hooke::new(50.0, 10.0, total);
            let mut xi = V3::zeros();
            let mut f = V3::zeros();
            for _ in 0..10_000 {
                (f, xi) = h.step(&phys(2e-3), xi, V3::x(), V3::x(), -1e-4, v, 0.0, 1e-6, 1.0);
            }
            let fn_el = 1.0;
            let fn_tot = 1.0 + 2e-3 * 50.0 * 0.2;
            let want = 0.5 * if total { fn_tot } else { fn_el };
            assert!((f.y - want).abs() < 1e-12, "total {total}: {f}");
            // the reset history reproduces the limited force
            let again = xi * 2.5e3 + V3::new(0.0, 2e-3 * 10.0, 0.0);
            assert!((again.y - want).abs() < 1e-12);
        }
    }
}
