//! The Cundall–Strack law's material (`Frict`, Yade's `FrictMat`): its scene form, validation
//! and pair mixing (Yade `Ip2_FrictMat_FrictMat_FrictPhys`, digest A3.1–A3.2, thesis
//! eq. 2.13–2.20).

use super::damping_ratio;
use crate::contact::law::material::{
    friction, min_restitution, mix_mu, restitution, LawMaterial, PairConsts, ANGLE_NAMES,
    FRICTION_NAMES,
};
use crate::contact::law::{FrictLawKind, FrictPhys};
use crate::error::Result;
use crate::scene::ctx::Ctx;
use serde::{Deserialize, Serialize};

fn default_poisson() -> f64 {
    0.25
}

/// The scene form of a `Frict` material.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrictSpec {
    pub name: String,
    /// Young's modulus [Pa] (also LIGGGHTS' `youngsModulus`).
    #[serde(alias = "youngsModulus")]
    pub young: f64,
    /// kt/kn ratio, Yade's `FrictMat.poisson` (default 0.25). Not an alias of LIGGGHTS'
    /// `poissonsRatio`, which is the elastic constant (`Hertz`'s `poisson`).
    #[serde(default = "default_poisson")]
    pub poisson: f64,
    /// Friction angle [rad] (Yade `frictionAngle`); exclusive with `friction`.
    #[serde(default, alias = "frictionAngle")]
    pub friction_angle: Option<f64>,
    /// Friction coefficient μ = tan φ (LIGGGHTS `coefficientFriction`), instead of
    /// `friction_angle`.
    #[serde(default, alias = "coefficientFriction")]
    pub friction: Option<f64>,
    /// Density [kg/m³].
    pub density: f64,
    /// Normal coefficient of restitution (default: none = no viscous damping; LIGGGHTS
    /// `coefficientRestitution`).
    #[serde(default, alias = "coefficientRestitution")]
    pub restitution: Option<f64>,
}

/// Yade's `FrictMat`: linear elastic–frictional (Cundall–Strack) contacts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrictMat {
    pub name: String,
    /// Young's modulus E [Pa] of the particle material (a model parameter, not the packing's).
    pub young: f64,
    /// Yade's `poisson`: the shear-to-normal stiffness ratio kt/kn [-] (digest A3.2).
    pub poisson: f64,
    /// Interparticle friction angle φ [rad].
    pub friction_angle: f64,
    /// The friction coefficient μ as the scene gave it (`friction`), else `None` (μ = tan φ).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Density ρ [kg/m³].
    pub density: f64,
    /// Normal coefficient of restitution e ∈ (0, 1]; `None` = no viscous normal damping.
    pub restitution: Option<f64>,
}

impl LawMaterial for FrictMat {
    type Mix = LinearMix;
    type Spec = FrictSpec;

    fn spec_name(spec: &FrictSpec) -> &str {
        &spec.name
    }

    fn from_spec(ctx: &Ctx, p: &str, f: &FrictSpec, _first: Option<&Self>) -> Result<Self> {
        ctx.positive(&ctx.written(p, &["young", "youngsModulus"]), f.young)?;
        ctx.non_negative(&format!("{p}.poisson"), f.poisson)?;
        ctx.positive(&format!("{p}.density"), f.density)?;
        let fr = (f.friction_angle, f.friction);
        let (friction_angle, friction) = friction(ctx, p, fr, &ANGLE_NAMES, &FRICTION_NAMES)?;
        restitution(ctx, p, f.restitution)?;
        Ok(FrictMat {
            name: f.name.clone(),
            young: f.young,
            poisson: f.poisson,
            friction_angle,
            friction,
            density: f.density,
            restitution: f.restitution,
        })
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn density(&self) -> f64 {
        self.density
    }

    fn young(&self) -> Option<f64> {
        Some(self.young)
    }

    fn frict_law(&self) -> Option<FrictLawKind> {
        Some(FrictLawKind::CundallStrack)
    }

    fn set_friction(&mut self, phi: f64) {
        (self.friction_angle, self.friction) = (phi, None);
    }

    fn mix(a: &Self, b: &Self) -> Option<(f64, Self::Mix)> {
        let tan_phi = mix_mu(
            (a.friction_angle, a.friction),
            (b.friction_angle, b.friction),
        );
        Some((
            tan_phi,
            LinearMix {
                two_e: [2.0 * a.young, 2.0 * b.young],
                poisson: [a.poisson, b.poisson],
                two_zeta: min_restitution(a.restitution, b.restitution)
                    .filter(|&e| e < 1.0)
                    .map(|e| 2.0 * damping_ratio(e)),
            },
        ))
    }
}

/// The Cundall–Strack constants of a material pair: 2 E of each material (K = 2 E r per
/// sphere, digest A3.1), ν = kt/kn of each (0 for non-frictional materials: no shear spring),
/// and 2 ζ of the pair's restitution (c_n = 2 ζ sqrt(m_eff K_N); `None` = no damping).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearMix {
    two_e: [f64; 2],
    poisson: [f64; 2],
    two_zeta: Option<f64>,
}

impl LinearMix {
    /// Elastic springs without shear or damping from moduli `young`: the placeholder of a pair
    /// no frictional law mixes (CPM, or materials of two laws, which scene validation
    /// refuses), K_N = E r of the mirror-sphere rule, used by nothing physical.
    pub fn elastic(young: [f64; 2]) -> LinearMix {
        LinearMix {
            two_e: young.map(|e| 2.0 * e),
            poisson: [0.0; 2],
            two_zeta: None,
        }
    }
}

/// Series of two springs `a·b/(a+b)`, 0 when both are 0.
fn series(a: f64, b: f64) -> f64 {
    if a + b == 0.0 {
        0.0
    } else {
        a * b / (a + b)
    }
}

impl PairConsts for LinearMix {
    /// K_N = 2 E1 r1 E2 r2/(E1 r1 + E2 r2), K_T = 2 E1 r1 ν1 E2 r2 ν2/(E1 r1 ν1 + E2 r2 ν2)
    /// (digest A3.1–A3.2), c_n = 2 ζ sqrt(m_eff K_N).
    #[inline]
    fn phys(&self, tan_phi: f64, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
        let (k1, k2) = (self.two_e[0] * r1, self.two_e[1] * r2);
        let kn = series(k1, k2);
        FrictPhys {
            kn,
            ks: series(k1 * self.poisson[0], k2 * self.poisson[1]),
            tan_phi,
            cn: self.two_zeta.map_or(0.0, |z2| z2 * (m_eff * kn).sqrt()),
        }
    }

    /// 2E₁, 2E₂, ν₁, ν₂, 2ζ.
    fn gpu_row(&self, row: &mut [f64]) {
        row[..5].copy_from_slice(&[
            self.two_e[0],
            self.two_e[1],
            self.poisson[0],
            self.poisson[1],
            self.two_zeta.unwrap_or(-1.0),
        ]);
    }
}
