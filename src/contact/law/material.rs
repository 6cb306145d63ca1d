//! What a law's material is to the set-up (never to the contact loop): each law's
//! `<law>/material.rs` holds its material's scene form (the `MaterialSpec` variant), its
//! validation ([`LawMaterial::from_spec`]), its constants for the time step and, for a
//! frictional law, its pair mixing (its arm of `law/mix.rs`'s `MixKind`). `crate::material` dispatches to
//! them through one `match` per closed enum.
//!
//! Dependencies go one way: `crate::material` imports the laws; the laws never import
//! `crate::material` (they validate with the scene's parse context, `scene::ctx::Ctx`).

use super::{FrictLawKind, FrictPhys};
use crate::error::Result;
use crate::scene::ctx::Ctx;

/// A law's material (the payload of one `Material` variant), as the set-up asks it.
pub trait LawMaterial: Sized + 'static {
    /// Its scene form (the payload of one `MaterialSpec` variant).
    type Spec;

    /// The name `spec` gives the material (the scene checks it: not empty, not twice).
    fn spec_name(spec: &Self::Spec) -> &str;

    /// The material of `spec`, found at path `p` (`materials[k]`), validated; errors placed
    /// at the field as written. `first`: the scene's first earlier material of this law,
    /// whose scene-wide constants (the law's, like LAMMPS' one `pair_style` line) this one
    /// must share.
    fn from_spec(ctx: &Ctx, p: &str, spec: &Self::Spec, first: Option<&Self>) -> Result<Self>;

    fn name(&self) -> &str;

    /// Density ρ [kg/m³].
    fn density(&self) -> f64;

    /// Young's modulus E; `None` for a law whose stiffness is not a modulus.
    fn young(&self) -> Option<f64>;

    /// The p-wave critical step r sqrt(ρ/E) of a sphere of radius `r` (thesis eq. 2.85)
    /// unless the law says otherwise.
    fn pwave_step(&self, r: f64) -> f64 {
        r * (self.density() / self.young().unwrap_or(f64::INFINITY)).sqrt()
    }

    /// The Rayleigh time of a sphere of radius `r`, for a law that warns when the step
    /// exceeds a fraction of it (Hertz); `None` otherwise.
    fn rayleigh_time(&self, _r: f64) -> Option<f64> {
        None
    }

    /// The frictional law (family and scene-wide constants) of this material; `None`: not a
    /// frictional material (CPM).
    fn frict_law(&self) -> Option<FrictLawKind> {
        None
    }

    /// Take the friction angle `phi` (a cell stage's start); nothing for a law without one.
    fn set_friction(&mut self, _phi: f64) {}

    /// The law's part of a material pair's constants (its [`PairConsts`]; a law without
    /// pair mixing, CPM: `std::convert::Infallible`). `law/mix.rs` wraps it into the closed
    /// enum `MixKind`.
    type Mix;

    /// The pair constants of materials `a` (particle 1) and `b` (particle 2): tan φ of the
    /// pair and the law's part that depends on the two materials alone; `None`: not a
    /// frictional law.
    fn mix(_a: &Self, _b: &Self) -> Option<(f64, Self::Mix)> {
        None
    }
}

/// A frictional law's constants of one material pair: what a new contact's [`FrictPhys`] is
/// made of.
pub trait PairConsts: Copy {
    /// The pair parameters for radii `r1`, `r2`, reduced mass `m_eff` and the pair's tan φ.
    fn phys(&self, tan_phi: f64, r1: f64, r2: f64, m_eff: f64) -> FrictPhys;

    /// The pair parameters of a sphere of radius `r` and mass `m` with a wall: the wall as a
    /// mirror sphere (digest A3.1) unless the law says otherwise.
    #[inline]
    fn wall_phys(&self, tan_phi: f64, r: f64, m: f64) -> FrictPhys {
        self.phys(tan_phi, r, r, m)
    }

    /// The law's constants as the GPU kernels read them (`mix_phys` of `gpu/kernels/dem.h`),
    /// into `row` (the pair's row after tan φ); an absent dashpot as −1.
    fn gpu_row(&self, row: &mut [f64]);
}

/// tan φ of a pair, the smaller friction of materials a and b, each (φ, μ as given): tan of
/// the smaller angle when both gave an angle (the bits before coefficients were accepted),
/// else the smaller coefficient (μ = tan φ is increasing: the same pair either way, and a
/// coefficient given is used as written, not as tan(atan μ)).
pub fn mix_mu(a: (f64, Option<f64>), b: (f64, Option<f64>)) -> f64 {
    match (a.1, b.1) {
        (None, None) => a.0.min(b.0).tan(),
        (ma, mb) => ma
            .unwrap_or_else(|| a.0.tan())
            .min(mb.unwrap_or_else(|| b.0.tan())),
    }
}

/// The smaller restitution of two (a perfectly elastic partner does not make an inelastic
/// one elastic); `None` when neither has one.
pub fn min_restitution(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// The names of a frictional material's friction fields: the angle (Yade's), the coefficient
/// (LIGGGHTS', LAMMPS').
pub const ANGLE_NAMES: [&str; 2] = ["friction_angle", "frictionAngle"];
pub const FRICTION_NAMES: [&str; 2] = ["friction", "coefficientFriction"];

/// The friction of material `p`, given as exactly one of an angle φ ∈ [0, π/2) [rad] and a
/// coefficient μ = tan φ ≥ 0, each under any of its names (`angle_names`, `coef_names`;
/// errors placed at the name written): (φ, μ as given or `None`), φ = atan μ for a coefficient.
pub fn friction(
    ctx: &Ctx,
    p: &str,
    (angle, coef): (Option<f64>, Option<f64>),
    angle_names: &[&str],
    coef_names: &[&str],
) -> Result<(f64, Option<f64>)> {
    match (angle, coef) {
        (Some(_), Some(_)) => Err(ctx.err(
            &ctx.written(p, coef_names),
            format!(
                "give either `{}` (radians) or `{}` (the coefficient μ = tan φ), not both",
                angle_names[0], coef_names[0]
            ),
        )),
        (None, None) => Err(ctx.err(
            p,
            format!(
                "missing the friction: `{}` (radians) or `{}` (the coefficient μ = tan φ)",
                angle_names[0], coef_names[0]
            ),
        )),
        (Some(a), None) => {
            if !(0.0..std::f64::consts::FRAC_PI_2).contains(&a) {
                return Err(ctx.err(
                    &ctx.written(p, angle_names),
                    format!("must be in [0, π/2) radians (not degrees), got {a}"),
                ));
            }
            Ok((a, None))
        }
        (None, Some(mu)) => {
            if !(mu >= 0.0 && mu.is_finite()) {
                return Err(ctx.err(
                    &ctx.written(p, coef_names),
                    format!("the friction coefficient must be ≥ 0 and finite, got {mu}"),
                ));
            }
            Ok((mu.atan(), Some(mu)))
        }
    }
}

/// A frictional material's restitution, if given, in (0, 1] (under either of its names).
pub fn restitution(ctx: &Ctx, p: &str, restitution: Option<f64>) -> Result<()> {
    if let Some(e) = restitution {
        if !(e > 0.0 && e <= 1.0) {
            return Err(ctx.err(
                &ctx.written(p, &["restitution", "coefficientRestitution"]),
                format!("must be in (0, 1], got {e}"),
            ));
        }
    }
    Ok(())
}
