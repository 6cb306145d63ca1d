//! Materials and the pair-parameter mixing that turns two materials into contact parameters
//! (Yade's Ip2 functors, digest A3; thesis §2.2.1 eq. 2.13–2.20). A closed set: one `match`.

pub use crate::contact::law::cpm::CpmMat;
pub use crate::contact::law::linear::damping_ratio;
pub use crate::contact::law::rolling::Rolling;
pub use crate::contact::law::FrictLawKind;
pub use crate::contact::law::FrictPhys;
use crate::contact::law::{hertz, hooke};
use serde::{Deserialize, Serialize};

/// A material, as given in the scene (all SI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Material {
    /// Yade's `FrictMat`: linear elastic–frictional (Cundall–Strack) contacts.
    Frict(FrictMat),
    /// Šmilauer's Concrete Particle Model (Yade `CpmMat`, thesis §3.2): cohesive links with
    /// damage, compressive hardening and shear plasticity (`contact/law/cpm.rs`).
    Cpm(CpmNamed),
    /// Hertz–Mindlin elastic–frictional contacts with restitution damping
    /// (`contact/law/hertz.rs`; LIGGGHTS `hertz` + `tangential history`, Woo `HertzPhys`).
    Hertz(HertzMat),
    /// LAMMPS `pair gran/hooke/history`: constant kn, kt, γ_N, γ_T (`contact/law/hooke.rs`).
    Hooke(HookeMat),
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

/// A named CPM material (the parameters, with their defaults, are [`CpmMat`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpmNamed {
    pub name: String,
    pub params: CpmMat,
}

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

impl Material {
    pub fn name(&self) -> &str {
        match self {
            Material::Frict(m) => &m.name,
            Material::Cpm(m) => &m.name,
            Material::Hertz(m) => &m.name,
            Material::Hooke(m) => &m.name,
        }
    }
    pub fn density(&self) -> f64 {
        match self {
            Material::Frict(m) => m.density,
            Material::Cpm(m) => m.params.density,
            Material::Hertz(m) => m.density,
            Material::Hooke(m) => m.density,
        }
    }
    /// Young's modulus E; `None` for `Hooke`, whose stiffness is a constant kn, not a modulus.
    fn young(&self) -> Option<f64> {
        match self {
            Material::Frict(m) => Some(m.young),
            Material::Cpm(m) => Some(m.params.young),
            Material::Hertz(m) => Some(m.young),
            Material::Hooke(_) => None,
        }
    }
    /// The p-wave critical step r sqrt(ρ/E) of a sphere of radius `r` (thesis eq. 2.85); for
    /// a `Hooke` material with E = kn / r (Yade's kn = E r of equal spheres, digest A3.1),
    /// i.e. sqrt(ρ r³ / kn) ∝ sqrt(m / kn).
    pub fn pwave_step(&self, r: f64) -> f64 {
        match self {
            Material::Hooke(m) => r * (m.density * r / m.kn).sqrt(),
            // every other material has a modulus
            m => r * (m.density() / m.young().unwrap_or(f64::INFINITY)).sqrt(),
        }
    }
    /// The frictional law family of this material (CPM: none).
    pub fn frict_law(&self) -> Option<FrictLawKind> {
        match self {
            Material::Frict(_) => Some(FrictLawKind::CundallStrack),
            Material::Hertz(m) => Some(FrictLawKind::HertzMindlin(hertz::HertzMindlin {
                surface_energy: m.surface_energy,
            })),
            Material::Hooke(m) => Some(FrictLawKind::Hooke(hooke::Hooke::new(
                m.gamma_n,
                m.gamma_t,
                m.coulomb_total,
            ))),
            Material::Cpm(_) => None,
        }
    }
    /// The CPM parameters, if this is a CPM material.
    pub fn cpm(&self) -> Option<&CpmMat> {
        match self {
            Material::Cpm(m) => Some(&m.params),
            _ => None,
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

/// Mix two materials into pair parameters.
///
/// `r1`, `r2` are the radii (for a wall, pass the sphere's radius for both: the wall acts as a
/// mirror sphere, digest A3.1), `m_eff` the reduced mass m1 m2/(m1+m2) (the sphere's mass for a
/// wall). Yade `Ip2_FrictMat_FrictMat_FrictPhys` (digest A3.1–A3.2, thesis eq. 2.13–2.20):
/// K_N = 2 E1 r1 E2 r2/(E1 r1 + E2 r2), K_T = 2 E1 r1 ν1 E2 r2 ν2/(E1 r1 ν1 + E2 r2 ν2),
/// φ = min(φ1, φ2). Restitution: the smaller of the two (a perfectly elastic partner does not
/// make an inelastic one elastic).
pub fn mix(a: &Material, b: &Material, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
    PairMix::of(a, b).phys(r1, r2, m_eff)
}

/// The part of [`mix`] that depends on the two materials alone (tan φ, the damping ratio: a
/// tangent, a logarithm and a square root), computed once per material pair ([`MixTable`]):
/// a new contact then costs a few flops and one square root (chute: ~270 new contacts per
/// step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairMix {
    /// tan φ (μ) of the pair: the smaller of the two.
    tan_phi: f64,
    kind: MixKind,
}

/// tan φ of a pair, the smaller friction of materials a and b, each (φ, μ as given): tan of
/// the smaller angle when both gave an angle (the bits before coefficients were accepted),
/// else the smaller coefficient (μ = tan φ is increasing: the same pair either way, and a
/// coefficient given is used as written, not as tan(atan μ)).
fn mix_mu(a: (f64, Option<f64>), b: (f64, Option<f64>)) -> f64 {
    match (a.1, b.1) {
        (None, None) => a.0.min(b.0).tan(),
        (ma, mb) => ma
            .unwrap_or_else(|| a.0.tan())
            .min(mb.unwrap_or_else(|| b.0.tan())),
    }
}

/// The law-specific part of a [`PairMix`] (one arm per frictional law).
#[derive(Clone, Copy, Debug, PartialEq)]
enum MixKind {
    /// Cundall–Strack (`Frict`): 2 E of each material (K = 2 E r per sphere, digest A3.1),
    /// ν = kt/kn of each (0 for non-frictional materials: no shear spring), and 2 ζ of the
    /// pair's restitution (c_n = 2 ζ sqrt(m_eff K_N); `None` = no damping).
    Linear {
        two_e: [f64; 2],
        poisson: [f64; 2],
        two_zeta: Option<f64>,
    },
    /// Hertz–Mindlin: the effective moduli E*, G* and α of `contact/law/hertz.rs`
    /// (c_n = α sqrt(m_eff kn); `None` = elastic).
    Hertz {
        e_star: f64,
        g_star: f64,
        alpha: Option<f64>,
    },
    /// LAMMPS hooke/history: the constant stiffnesses.
    Hooke { kn: f64, kt: f64 },
}

impl PairMix {
    /// Material a (particle 1) with material b (particle 2).
    pub fn of(a: &Material, b: &Material) -> PairMix {
        match (a, b) {
            (Material::Frict(a), Material::Frict(b)) => PairMix {
                tan_phi: mix_mu(
                    (a.friction_angle, a.friction),
                    (b.friction_angle, b.friction),
                ),
                kind: MixKind::Linear {
                    two_e: [2.0 * a.young, 2.0 * b.young],
                    poisson: [a.poisson, b.poisson],
                    two_zeta: min_restitution(a.restitution, b.restitution)
                        .filter(|&e| e < 1.0)
                        .map(|e| 2.0 * damping_ratio(e)),
                },
            },
            (Material::Hertz(a), Material::Hertz(b)) => {
                let (e_star, g_star) = hertz_moduli(a, b);
                PairMix {
                    tan_phi: mix_mu(
                        (a.friction_angle, a.friction),
                        (b.friction_angle, b.friction),
                    ),
                    kind: MixKind::Hertz {
                        e_star,
                        g_star,
                        alpha: min_restitution(a.restitution, b.restitution)
                            .filter(|&e| e < 1.0)
                            .map(hertz::alpha_for_restitution),
                    },
                }
            }
            // one pair_style line: kn, kt are the same for all Hooke materials (validation)
            (Material::Hooke(a), Material::Hooke(b)) => PairMix {
                tan_phi: a.xmu.min(b.xmu),
                kind: MixKind::Hooke { kn: a.kn, kt: a.kt },
            },
            // CPM pairs go through `CpmPhys::new` (contact/law/cpm.rs); a scene never mixes
            // CPM with frictional materials or walls, nor two frictional laws (scene
            // validation), so this is a plain elastic placeholder (K_N = E r of the
            // mirror-sphere rule) used by nothing physical.
            (a, b) => PairMix {
                tan_phi: 0.0,
                kind: MixKind::Linear {
                    two_e: [a, b].map(|m| 2.0 * m.young().unwrap_or(0.0)),
                    poisson: [0.0; 2],
                    two_zeta: None,
                },
            },
        }
    }

    /// The pair parameters of a sphere of radius `r` and mass `m` with a wall: a linear law
    /// takes the wall as a mirror sphere (digest A3.1), Hertz as a sphere of infinite radius
    /// and mass (1/R* = 1/r; laws-and-flows digest §1), Hooke as LAMMPS' wall/gran (m* = m).
    #[inline]
    pub fn wall_phys(&self, r: f64, m: f64) -> FrictPhys {
        match self.kind {
            MixKind::Hertz { .. } => self.phys(r, f64::INFINITY, m),
            _ => self.phys(r, r, m),
        }
    }

    /// This pair's mixing as the GPU kernels read it (`mix_phys` of `gpu/kernels/dem.h`):
    /// [tan φ, then the law's constants: 2E₁, 2E₂, ν₁, ν₂, 2ζ (linear); E*, G*, α (Hertz);
    /// kn, kt (Hooke)], an absent dashpot as −1.
    pub fn gpu_row(&self) -> [f64; 8] {
        let mut r = [0.0; 8];
        r[0] = self.tan_phi;
        match self.kind {
            MixKind::Linear {
                two_e,
                poisson,
                two_zeta,
            } => {
                r[1..6].copy_from_slice(&[
                    two_e[0],
                    two_e[1],
                    poisson[0],
                    poisson[1],
                    two_zeta.unwrap_or(-1.0),
                ]);
            }
            MixKind::Hertz {
                e_star,
                g_star,
                alpha,
            } => r[1..4].copy_from_slice(&[e_star, g_star, alpha.unwrap_or(-1.0)]),
            MixKind::Hooke { kn, kt } => r[1..3].copy_from_slice(&[kn, kt]),
        }
        r
    }

    /// The pair parameters for radii `r1`, `r2` and reduced mass `m_eff` (see [`mix`]).
    #[inline]
    pub fn phys(&self, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
        let tan_phi = self.tan_phi;
        match self.kind {
            MixKind::Linear {
                two_e,
                poisson,
                two_zeta,
            } => {
                let (k1, k2) = (two_e[0] * r1, two_e[1] * r2);
                let kn = series(k1, k2);
                FrictPhys {
                    kn,
                    ks: series(k1 * poisson[0], k2 * poisson[1]),
                    tan_phi,
                    cn: two_zeta.map_or(0.0, |z2| z2 * (m_eff * kn).sqrt()),
                }
            }
            // contact/law/hertz.rs module docs: 1/R* = 1/r1 + 1/r2, kn = (4/3) E* √R*,
            // ks = 8 G* √R*, c_n = α √(kn m*)
            MixKind::Hertz {
                e_star,
                g_star,
                alpha,
            } => {
                let sr = (1.0 / (1.0 / r1 + 1.0 / r2)).sqrt();
                let kn = 4.0 / 3.0 * e_star * sr;
                FrictPhys {
                    kn,
                    ks: 8.0 * g_star * sr,
                    tan_phi,
                    cn: alpha.map_or(0.0, |a| a * (kn * m_eff).sqrt()),
                }
            }
            // contact/law/hooke.rs: c_n carries m*, the law multiplies it by γ
            MixKind::Hooke { kn, kt } => FrictPhys {
                kn,
                ks: kt,
                tan_phi,
                cn: m_eff,
            },
        }
    }
}

/// The smaller restitution of two (a perfectly elastic partner does not make an inelastic
/// one elastic); `None` when neither has one.
fn min_restitution(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// Effective moduli of two Hertz materials (laws-and-flows digest §1; Johnson §4.2, §7.2):
/// 1/E* = (1 − ν1²)/E1 + (1 − ν2²)/E2, 1/G* = 2(2 − ν1)(1 + ν1)/E1 + 2(2 − ν2)(1 + ν2)/E2.
fn hertz_moduli(a: &HertzMat, b: &HertzMat) -> (f64, f64) {
    let inv_e = |m: &HertzMat| (1.0 - m.poisson * m.poisson) / m.young;
    let inv_g = |m: &HertzMat| 2.0 * (2.0 - m.poisson) * (1.0 + m.poisson) / m.young;
    (1.0 / (inv_e(a) + inv_e(b)), 1.0 / (inv_g(a) + inv_g(b)))
}

/// [`PairMix`] of every ordered pair of a scene's materials.
#[derive(Clone, Debug, Default)]
pub struct MixTable {
    n: usize,
    pairs: Vec<PairMix>,
    law: FrictLawKind,
    rolling: Rolling,
}

impl MixTable {
    pub fn new(mats: &[Material]) -> MixTable {
        MixTable {
            n: mats.len(),
            pairs: mats
                .iter()
                .flat_map(|a| mats.iter().map(|b| PairMix::of(a, b)))
                .collect(),
            law: mats
                .iter()
                .find_map(Material::frict_law)
                .unwrap_or_default(),
            rolling: Rolling::default(),
        }
    }

    /// With the scene's rolling and twisting resistance (`contact/law/rolling.rs`).
    pub fn with_rolling(mut self, rolling: Rolling) -> MixTable {
        self.rolling = rolling;
        self
    }

    /// The scene's rolling and twisting resistance.
    #[inline]
    pub fn rolling(&self) -> Rolling {
        self.rolling
    }

    /// The scene's frictional law (scene validation: one family per scene).
    #[inline]
    pub fn law(&self) -> FrictLawKind {
        self.law
    }

    /// Materials `a` (particle 1) and `b` (particle 2), as indices into the scene's list.
    #[inline]
    pub fn get(&self, a: u16, b: u16) -> &PairMix {
        &self.pairs[a as usize * self.n + b as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(e: f64, nu: f64, phi: f64) -> Material {
        Material::Frict(FrictMat {
            name: "m".into(),
            young: e,
            poisson: nu,
            friction_angle: phi,
            friction: None,
            density: 1000.0,
            restitution: None,
        })
    }

    #[test]
    fn equal_spheres_give_kn_equal_e_r() {
        // Two equal spheres: K_N = E r exactly (digest A3.1), K_T = ν K_N.
        let m = mat(1e7, 0.25, 0.3);
        let p = mix(&m, &m, 1e-3, 1e-3, 1.0);
        assert!((p.kn - 1e4).abs() < 1e-9);
        assert!((p.ks - 2.5e3).abs() < 1e-9);
        assert!((p.tan_phi - 0.3f64.tan()).abs() < 1e-15);
        assert_eq!(p.cn, 0.0);
    }

    #[test]
    fn friction_is_min_and_stiffness_in_series() {
        let a = mat(1e7, 0.2, 0.5);
        let b = mat(3e7, 0.2, 0.1);
        let p = mix(&a, &b, 1.0, 2.0, 1.0);
        // 1/kn = 1/(2·1e7·1) + 1/(2·3e7·2)
        let expect = 1.0 / (1.0 / 2e7 + 1.0 / 1.2e8);
        assert!((p.kn - expect).abs() / expect < 1e-14);
        assert!((p.tan_phi - 0.1f64.tan()).abs() < 1e-15);
    }

    #[test]
    fn the_table_gives_the_bits_of_a_fresh_mix() {
        let mut a = mat(1e7, 0.2, 0.5);
        let mut b = mat(3e7, 0.3, 0.1);
        if let (Material::Frict(a), Material::Frict(b)) = (&mut a, &mut b) {
            (a.restitution, b.restitution) = (Some(0.9), Some(0.7));
        }
        let c = mat(2e7, 0.25, 0.4);
        let mats = [a, b, c];
        let t = MixTable::new(&mats);
        for (ia, ma) in mats.iter().enumerate() {
            for (ib, mb) in mats.iter().enumerate() {
                let p = t.get(ia as u16, ib as u16).phys(0.7, 1.3, 2.5);
                // the formulas of `mix` written out (digest A3.1–A3.2, A6)
                let (Material::Frict(x), Material::Frict(y)) = (ma, mb) else {
                    unreachable!()
                };
                let (k1, k2) = (2.0 * x.young * 0.7, 2.0 * y.young * 1.3);
                let kn = k1 * k2 / (k1 + k2);
                assert_eq!(p.kn, kn);
                assert_eq!(
                    p.ks,
                    (k1 * x.poisson) * (k2 * y.poisson) / (k1 * x.poisson + k2 * y.poisson)
                );
                assert_eq!(p.tan_phi, x.friction_angle.min(y.friction_angle).tan());
                let e = [x.restitution, y.restitution]
                    .into_iter()
                    .flatten()
                    .reduce(f64::min);
                let cn = e.map_or(0.0, |e| 2.0 * damping_ratio(e) * (2.5 * kn).sqrt());
                assert_eq!(p.cn, cn, "materials {ia} {ib}");
                assert!(ia == 2 || ib == 2 || p.cn > 0.0);
            }
        }
    }

    #[test]
    fn hertz_pair_constants_follow_the_effective_moduli() {
        let h = |young: f64, poisson: f64| {
            Material::Hertz(HertzMat {
                name: "h".into(),
                young,
                poisson,
                friction_angle: 0.3,
                friction: None,
                density: 2000.0,
                restitution: Some(0.5),
                surface_energy: 0.0,
            })
        };
        let (a, b) = (h(7e10, 0.33), h(1e30, 0.25));
        let r = 0.1;
        // two equal spheres: E* = E / (2 (1 − ν²)), G* = E / (4 (2 − ν)(1 + ν)), R* = r/2
        let p = mix(&a, &a, r, r, 1.0);
        let (e_star, g_star) = (
            7e10 / (2.0 * (1.0 - 0.33 * 0.33)),
            7e10 / (4.0 * 1.67 * 1.33),
        );
        assert!(rel(p.kn, 4.0 / 3.0 * e_star * (0.5 * r).sqrt()) < 1e-14);
        assert!(rel(p.ks, 8.0 * g_star * (0.5 * r).sqrt()) < 1e-14);
        assert!((p.tan_phi - 0.3f64.tan()).abs() < 1e-16);
        // c_n = α √(kn m*) with the calibrated α of e = 0.5
        let alpha = crate::contact::law::hertz::alpha_for_restitution(0.5);
        assert!(rel(p.cn, alpha * p.kn.sqrt()) < 1e-14);
        // a rigid wall: a sphere of infinite radius, E* = E / (1 − ν²) of the sphere alone
        let w = PairMix::of(&b, &a).wall_phys(r, 1.0);
        assert!(rel(w.kn, 4.0 / 3.0 * 7e10 / (1.0 - 0.33 * 0.33) * r.sqrt()) < 1e-12);
    }

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    #[test]
    fn damping_ratio_limits() {
        assert!(damping_ratio(1.0).abs() < 1e-15);
        // e = exp(-π ζ / sqrt(1-ζ²)) inverted
        let z = damping_ratio(0.5);
        let e = (-std::f64::consts::PI * z / (1.0 - z * z).sqrt()).exp();
        assert!((e - 0.5).abs() < 1e-12);
    }
}
