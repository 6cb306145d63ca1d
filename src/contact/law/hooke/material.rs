//! LAMMPS' `gran/hooke/history` material (`Hooke`): its scene form, validation and pair
//! mixing (laws-and-flows digest §3). Kn, Kt, γ_N, γ_T and the Coulomb choice are scene-wide
//! in LAMMPS (one `pair_style` line): all `Hooke` materials of a scene must agree on them; μ
//! and ρ may differ.

use super::Hooke;
use crate::contact::law::material::{friction, LawMaterial, PairConsts, ANGLE_NAMES};
use crate::contact::law::{FrictLawKind, FrictPhys};
use crate::error::Result;
use crate::scene::ctx::Ctx;
use serde::{Deserialize, Serialize};

/// Whether the Coulomb limit takes the total normal force (LAMMPS) or its elastic part (Yade).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoulombSpec {
    #[default]
    Total,
    Elastic,
}

/// The scene form of a `Hooke` material.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookeSpec {
    pub name: String,
    /// Normal stiffness Kn [N/m].
    pub kn: f64,
    /// Tangential stiffness Kt [N/m] (default 2/7 Kn, LAMMPS `NULL`).
    #[serde(default)]
    pub kt: Option<f64>,
    /// Normal damping γ_N [1/s] (LAMMPS `gamma_n`, also written `gamman`).
    #[serde(alias = "gamman")]
    pub gamma_n: f64,
    /// Tangential damping γ_T [1/s] (default γ_N / 2, LAMMPS `NULL`; 0 = LAMMPS dampflag 0).
    #[serde(default, alias = "gammat")]
    pub gamma_t: Option<f64>,
    /// Friction coefficient μ (LAMMPS `xmu`; also `friction`, LIGGGHTS
    /// `coefficientFriction`); exclusive with `friction_angle`.
    #[serde(default, alias = "friction", alias = "coefficientFriction")]
    pub xmu: Option<f64>,
    /// Friction angle φ [rad] (μ = tan φ; Yade `frictionAngle`), instead of `xmu`.
    #[serde(default, alias = "frictionAngle")]
    pub friction_angle: Option<f64>,
    /// Density [kg/m³].
    pub density: f64,
    /// `Total` (default, LAMMPS) or `Elastic` (Yade's Cundall–Strack).
    #[serde(default)]
    pub coulomb: CoulombSpec,
}

/// A LAMMPS-style linear material (`pair_style gran/hooke/history Kn Kt gamma_n gamma_t xmu
/// dampflag`; all SI). Kn, Kt, γ_N, γ_T and the Coulomb choice are scene-wide in LAMMPS: all
/// `Hooke` materials of a scene must agree on them (scene validation); μ and ρ may differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookeMat {
    pub name: String,
    /// Normal stiffness Kn [N/m] (a constant, not from E and the radii).
    pub kn: f64,
    /// Tangential stiffness Kt [N/m].
    pub kt: f64,
    /// Normal damping γ_N [1/s] (force m* γ_N v_N).
    pub gamma_n: f64,
    /// Tangential damping γ_T [1/s].
    pub gamma_t: f64,
    /// Friction coefficient μ (LAMMPS `xmu`).
    pub xmu: f64,
    /// Density ρ [kg/m³].
    pub density: f64,
    /// Coulomb limit on the total normal force (LAMMPS) or the elastic part (Yade).
    pub coulomb_total: bool,
}

impl LawMaterial for HookeMat {
    type Mix = HookeMix;
    type Spec = HookeSpec;

    fn spec_name(spec: &HookeSpec) -> &str {
        &spec.name
    }

    fn from_spec(ctx: &Ctx, p: &str, h: &HookeSpec, first: Option<&Self>) -> Result<Self> {
        ctx.positive(&format!("{p}.kn"), h.kn)?;
        let kt = h.kt.unwrap_or(2.0 / 7.0 * h.kn);
        ctx.positive(&format!("{p}.kt"), kt)?;
        ctx.non_negative(&ctx.written(p, &["gamma_n", "gamman"]), h.gamma_n)?;
        let gamma_t = h.gamma_t.unwrap_or(0.5 * h.gamma_n);
        ctx.non_negative(&ctx.written(p, &["gamma_t", "gammat"]), gamma_t)?;
        let xmu_names = ["xmu", "friction", "coefficientFriction"];
        let (phi, mu) = friction(ctx, p, (h.friction_angle, h.xmu), &ANGLE_NAMES, &xmu_names)?;
        ctx.positive(&format!("{p}.density"), h.density)?;
        let m = HookeMat {
            name: h.name.clone(),
            kn: h.kn,
            kt,
            gamma_n: h.gamma_n,
            gamma_t,
            xmu: mu.unwrap_or_else(|| phi.tan()),
            density: h.density,
            coulomb_total: h.coulomb == CoulombSpec::Total,
        };
        // LAMMPS' pair_style line is one for all types
        if let Some(o) = first {
            if (o.kn, o.kt, o.gamma_n, o.gamma_t, o.coulomb_total)
                != (m.kn, m.kt, m.gamma_n, m.gamma_t, m.coulomb_total)
            {
                return Err(ctx.err(
                    p,
                    format!(
                        "Hooke materials of one scene must share kn, kt, gamma_n, gamma_t and \
                         coulomb (LAMMPS' pair_style line; `{}` differs from `{}`): only xmu \
                         and density may differ",
                        m.name, o.name
                    ),
                ));
            }
        }
        Ok(m)
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn density(&self) -> f64 {
        self.density
    }

    /// `None`: the stiffness is a constant kn, not a modulus.
    fn young(&self) -> Option<f64> {
        None
    }

    /// With E = kn / r (Yade's kn = E r of equal spheres, digest A3.1), i.e.
    /// sqrt(ρ r³ / kn) ∝ sqrt(m / kn).
    fn pwave_step(&self, r: f64) -> f64 {
        r * (self.density * r / self.kn).sqrt()
    }

    fn frict_law(&self) -> Option<FrictLawKind> {
        Some(FrictLawKind::Hooke(Hooke::new(
            self.gamma_n,
            self.gamma_t,
            self.coulomb_total,
        )))
    }

    fn set_friction(&mut self, phi: f64) {
        self.xmu = phi.tan();
    }

    /// One pair_style line: kn, kt are the same for all Hooke materials (validation).
    fn mix(a: &Self, b: &Self) -> Option<(f64, Self::Mix)> {
        Some((a.xmu.min(b.xmu), HookeMix { kn: a.kn, kt: a.kt }))
    }
}

/// The LAMMPS hooke/history constants of a material pair: the constant stiffnesses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HookeMix {
    kn: f64,
    kt: f64,
}

impl PairConsts for HookeMix {
    /// `contact/law/hooke.rs`: c_n carries m*, the law multiplies it by γ.
    #[inline]
    fn phys(&self, tan_phi: f64, _r1: f64, _r2: f64, m_eff: f64) -> FrictPhys {
        FrictPhys {
            kn: self.kn,
            ks: self.kt,
            tan_phi,
            cn: m_eff,
        }
    }

    /// kn, kt.
    fn gpu_row(&self, row: &mut [f64]) {
        row[..2].copy_from_slice(&[self.kn, self.kt]);
    }
}
