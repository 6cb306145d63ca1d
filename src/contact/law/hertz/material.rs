//! The Hertz–Mindlin law's material (`Hertz`; LIGGGHTS `youngsModulus`, `poissonsRatio`, …):
//! its scene form, validation and pair mixing (laws-and-flows digest §1).

use super::{alpha_for_restitution, HertzMindlin};
use crate::contact::law::material::{
    friction, min_restitution, mix_mu, restitution, LawMaterial, PairConsts, ANGLE_NAMES,
    FRICTION_NAMES,
};
use crate::contact::law::{FrictLawKind, FrictPhys};
use crate::error::Result;
use crate::scene::ctx::Ctx;
use serde::{Deserialize, Serialize};

/// The scene form of a `Hertz` material.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HertzSpec {
    pub name: String,
    /// Young's modulus E [Pa] (LIGGGHTS `youngsModulus`).
    #[serde(alias = "youngsModulus")]
    pub young: f64,
    /// Poisson's ratio ν (the elastic constant, in [0, 0.5); LIGGGHTS `poissonsRatio`).
    #[serde(alias = "poissonsRatio")]
    pub poisson: f64,
    /// Friction angle [rad] (μ = tan φ; Yade `frictionAngle`); exclusive with `friction`.
    #[serde(default, alias = "frictionAngle")]
    pub friction_angle: Option<f64>,
    /// Friction coefficient μ (LIGGGHTS `coefficientFriction`), instead of `friction_angle`.
    #[serde(default, alias = "coefficientFriction")]
    pub friction: Option<f64>,
    /// Density [kg/m³].
    pub density: f64,
    /// Normal restitution coefficient (default: none = elastic; LIGGGHTS
    /// `coefficientRestitution`).
    #[serde(default, alias = "coefficientRestitution")]
    pub restitution: Option<f64>,
    /// Surface energy γ [J/m²] of the DMT adhesion (default 0: none; Woo's `gamma`).
    #[serde(default)]
    pub surface_energy: f64,
}

/// A Hertz–Mindlin material (all SI; laws-and-flows digest §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HertzMat {
    pub name: String,
    /// Young's modulus E [Pa].
    pub young: f64,
    /// Poisson's ratio ν of the material (the elastic constant, unlike `Frict`'s kt/kn).
    pub poisson: f64,
    /// Interparticle friction angle φ [rad] (μ = tan φ; LIGGGHTS `coefficientFriction`).
    pub friction_angle: f64,
    /// The friction coefficient μ as the scene gave it (`friction`), else `None` (μ = tan φ).
    #[serde(default)]
    pub friction: Option<f64>,
    /// Density ρ [kg/m³].
    pub density: f64,
    /// Normal coefficient of restitution e ∈ (0, 1]; `None` = elastic (no damping).
    pub restitution: Option<f64>,
    /// Surface energy γ [J/m²] of the DMT adhesion (0: none; `contact/law/hertz.rs`); the same
    /// for every `Hertz` material of a scene.
    pub surface_energy: f64,
}

impl LawMaterial for HertzMat {
    type Mix = HertzMix;
    type Spec = HertzSpec;

    fn spec_name(spec: &HertzSpec) -> &str {
        &spec.name
    }

    fn from_spec(ctx: &Ctx, p: &str, h: &HertzSpec, first: Option<&Self>) -> Result<Self> {
        ctx.positive(&ctx.written(p, &["young", "youngsModulus"]), h.young)?;
        ctx.positive(&format!("{p}.density"), h.density)?;
        if !(0.0..0.5).contains(&h.poisson) {
            return Err(ctx.err(
                &ctx.written(p, &["poisson", "poissonsRatio"]),
                format!("Poisson's ratio must be in [0, 0.5), got {}", h.poisson),
            ));
        }
        let fr = (h.friction_angle, h.friction);
        let (friction_angle, friction) = friction(ctx, p, fr, &ANGLE_NAMES, &FRICTION_NAMES)?;
        restitution(ctx, p, h.restitution)?;
        ctx.non_negative(&format!("{p}.surface_energy"), h.surface_energy)?;
        // DMT adhesion is a law constant (Woo's functor parameter): one per scene
        if let Some(o) = first {
            if o.surface_energy != h.surface_energy {
                return Err(ctx.err(
                    &format!("{p}.surface_energy"),
                    format!(
                        "Hertz materials of one scene must share surface_energy \
                         (`{}` has {}, `{}` {})",
                        h.name, h.surface_energy, o.name, o.surface_energy
                    ),
                ));
            }
        }
        Ok(HertzMat {
            name: h.name.clone(),
            young: h.young,
            poisson: h.poisson,
            friction_angle,
            friction,
            density: h.density,
            restitution: h.restitution,
            surface_energy: h.surface_energy,
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

    /// T_R = π r √(ρ/G) / (0.1631 ν + 0.8766), G = E / (2 (1 + ν)) (laws-and-flows digest §1;
    /// LIGGGHTS warns when the step exceeds 0.2 T_R).
    fn rayleigh_time(&self, r: f64) -> Option<f64> {
        let g = self.young / (2.0 * (1.0 + self.poisson));
        Some(
            std::f64::consts::PI * r * (self.density / g).sqrt() / (0.1631 * self.poisson + 0.8766),
        )
    }

    fn frict_law(&self) -> Option<FrictLawKind> {
        Some(FrictLawKind::HertzMindlin(HertzMindlin {
            surface_energy: self.surface_energy,
        }))
    }

    fn set_friction(&mut self, phi: f64) {
        (self.friction_angle, self.friction) = (phi, None);
    }

    fn mix(a: &Self, b: &Self) -> Option<(f64, Self::Mix)> {
        let (e_star, g_star) = hertz_moduli(a, b);
        let tan_phi = mix_mu(
            (a.friction_angle, a.friction),
            (b.friction_angle, b.friction),
        );
        Some((
            tan_phi,
            HertzMix {
                e_star,
                g_star,
                alpha: min_restitution(a.restitution, b.restitution)
                    .filter(|&e| e < 1.0)
                    .map(alpha_for_restitution),
            },
        ))
    }
}

/// Effective moduli of two Hertz materials (laws-and-flows digest §1; Johnson §4.2, §7.2):
/// 1/E* = (1 − ν1²)/E1 + (1 − ν2²)/E2, 1/G* = 2(2 − ν1)(1 + ν1)/E1 + 2(2 − ν2)(1 + ν2)/E2.
fn hertz_moduli(a: &HertzMat, b: &HertzMat) -> (f64, f64) {
    let inv_e = |m: &HertzMat| (1.0 - m.poisson * m.poisson) / m.young;
    let inv_g = |m: &HertzMat| 2.0 * (2.0 - m.poisson) * (1.0 + m.poisson) / m.young;
    (1.0 / (inv_e(a) + inv_e(b)), 1.0 / (inv_g(a) + inv_g(b)))
}

/// The Hertz–Mindlin constants of a material pair: the effective moduli E*, G* and the α of
/// `contact/law/hertz.rs` (c_n = α sqrt(m_eff kn); `None` = elastic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HertzMix {
    e_star: f64,
    g_star: f64,
    alpha: Option<f64>,
}

impl PairConsts for HertzMix {
    /// `contact/law/hertz.rs` module docs: 1/R* = 1/r1 + 1/r2, kn = (4/3) E* √R*,
    /// ks = 8 G* √R*, c_n = α √(kn m*).
    #[inline]
    fn phys(&self, tan_phi: f64, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
        let sr = (1.0 / (1.0 / r1 + 1.0 / r2)).sqrt();
        let kn = 4.0 / 3.0 * self.e_star * sr;
        FrictPhys {
            kn,
            ks: 8.0 * self.g_star * sr,
            tan_phi,
            cn: self.alpha.map_or(0.0, |a| a * (kn * m_eff).sqrt()),
        }
    }

    /// The wall as a sphere of infinite radius and mass (1/R* = 1/r; laws-and-flows digest §1).
    #[inline]
    fn wall_phys(&self, tan_phi: f64, r: f64, m: f64) -> FrictPhys {
        self.phys(tan_phi, r, f64::INFINITY, m)
    }

    /// E*, G*, α.
    fn gpu_row(&self, row: &mut [f64]) {
        row[..3].copy_from_slice(&[self.e_star, self.g_star, self.alpha.unwrap_or(-1.0)]);
    }
}
