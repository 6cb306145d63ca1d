//! Materials and the pair-parameter mixing that turns two materials into contact parameters
//! (Yade's Ip2 functors, digest A3; thesis §2.2.1 eq. 2.13–2.20). A closed set: each law's
//! material, its validation and its mixing live in its file (`contact/law/<law>/material.rs`,
//! a [`LawMaterial`]); here one `match` dispatches to them (`each_material!`). This module
//! imports the laws, never the reverse.

pub use crate::contact::law::cpm::material::CpmNamed;
pub use crate::contact::law::cpm::CpmMat;
pub use crate::contact::law::hertz::material::HertzMat;
pub use crate::contact::law::hooke::material::HookeMat;
pub use crate::contact::law::linear::damping_ratio;
pub use crate::contact::law::linear::material::FrictMat;
use crate::contact::law::linear::material::LinearMix;
pub use crate::contact::law::material::LawMaterial;
use crate::contact::law::mix::MixKind;
pub use crate::contact::law::rolling::Rolling;
pub use crate::contact::law::FrictLawKind;
pub use crate::contact::law::FrictPhys;
use serde::{Deserialize, Serialize};
use std::any::Any;

/// A material, as given in the scene (all SI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Material {
    /// Yade's `FrictMat`: linear elastic–frictional (Cundall–Strack) contacts
    /// (`contact/law/linear.rs`).
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

/// `$e` with `$m` bound to the [`LawMaterial`] of `$x`'s variant: the one `match` over
/// [`Material`] (a new law adds its arm here).
macro_rules! each_material {
    ($x:expr, $m:ident => $e:expr) => {
        match $x {
            Material::Frict($m) => $e,
            Material::Cpm($m) => $e,
            Material::Hertz($m) => $e,
            Material::Hooke($m) => $e,
        }
    };
}

impl crate::scene::ctx::Named for Material {
    fn name(&self) -> &str {
        Material::name(self)
    }
}

impl Material {
    pub fn name(&self) -> &str {
        each_material!(self, m => m.name())
    }
    pub fn density(&self) -> f64 {
        each_material!(self, m => m.density())
    }
    /// Young's modulus E; `None` for `Hooke`, whose stiffness is a constant kn, not a modulus.
    fn young(&self) -> Option<f64> {
        each_material!(self, m => m.young())
    }
    /// The p-wave critical step of a sphere of radius `r` ([`LawMaterial::pwave_step`]).
    pub fn pwave_step(&self, r: f64) -> f64 {
        each_material!(self, m => m.pwave_step(r))
    }
    /// The Rayleigh time of a sphere of radius `r`, where the law warns by it (Hertz).
    pub fn rayleigh_time(&self, r: f64) -> Option<f64> {
        each_material!(self, m => m.rayleigh_time(r))
    }
    /// The frictional law family of this material (CPM: none).
    pub fn frict_law(&self) -> Option<FrictLawKind> {
        each_material!(self, m => m.frict_law())
    }
    /// Take the friction angle `phi`, if frictional (a cell stage's start).
    pub fn set_friction(&mut self, phi: f64) {
        each_material!(self, m => m.set_friction(phi))
    }
    /// This material's law material if it is an `M` (for instance the scene's earlier
    /// materials of one law).
    pub fn as_law<M: LawMaterial>(&self) -> Option<&M> {
        each_material!(self, m => (m as &dyn Any).downcast_ref())
    }
    /// The CPM parameters, if this is a CPM material.
    pub fn cpm(&self) -> Option<&CpmMat> {
        match self {
            Material::Cpm(m) => Some(&m.params),
            _ => None,
        }
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
    /// The law's constants of the pair (its `<law>/material.rs`).
    kind: MixKind,
}

impl PairMix {
    /// Material a (particle 1) with material b (particle 2): the law's mixing
    /// ([`LawMaterial::mix`]) when both are of one frictional law.
    pub fn of(a: &Material, b: &Material) -> PairMix {
        let same = each_material!(a, a => b
            .as_law()
            .and_then(|b| LawMaterial::mix(a, b))
            .map(|(t, k)| (t, MixKind::from(k))));
        match same {
            Some((tan_phi, kind)) => PairMix { tan_phi, kind },
            // CPM pairs go through `CpmPhys::new` (contact/law/cpm.rs); a scene never mixes
            // CPM with frictional materials or walls, nor two frictional laws (scene
            // validation), so this is a plain elastic placeholder (K_N = E r of the
            // mirror-sphere rule) used by nothing physical.
            None => PairMix {
                tan_phi: 0.0,
                kind: MixKind::Linear(LinearMix::elastic([a, b].map(|m| m.young().unwrap_or(0.0)))),
            },
        }
    }

    /// The pair parameters of a sphere of radius `r` and mass `m` with a wall: a linear law
    /// takes the wall as a mirror sphere (digest A3.1), Hertz as a sphere of infinite radius
    /// and mass (1/R* = 1/r; laws-and-flows digest §1), Hooke as LAMMPS' wall/gran (m* = m).
    #[inline]
    pub fn wall_phys(&self, r: f64, m: f64) -> FrictPhys {
        self.kind.wall_phys(self.tan_phi, r, m)
    }

    /// This pair's mixing as the GPU kernels read it (`mix_phys` of `gpu/kernels/dem.h`):
    /// [tan φ, then the law's constants: 2E₁, 2E₂, ν₁, ν₂, 2ζ (linear); E*, G*, α (Hertz);
    /// kn, kt (Hooke)], an absent dashpot as −1.
    pub fn gpu_row(&self) -> [f64; 8] {
        let mut r = [0.0; 8];
        r[0] = self.tan_phi;
        self.kind.gpu_row(&mut r[1..]);
        r
    }

    /// The pair parameters for radii `r1`, `r2` and reduced mass `m_eff` (see [`mix`]).
    #[inline]
    pub fn phys(&self, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
        self.kind.phys(self.tan_phi, r1, r2, m_eff)
    }
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

    #[test]
    fn every_law_takes_a_stage_friction_and_only_its_own_mixing() {
        let hertz = Material::Hertz(HertzMat {
            name: "h".into(),
            young: 7e10,
            poisson: 0.3,
            friction_angle: 0.3,
            friction: Some(0.2),
            density: 2000.0,
            restitution: None,
            surface_energy: 0.0,
        });
        let hooke = Material::Hooke(HookeMat {
            name: "k".into(),
            kn: 1e4,
            kt: 2e3,
            gamma_n: 0.0,
            gamma_t: 0.0,
            xmu: 0.5,
            density: 1.0,
            coulomb_total: true,
        });
        let mut mats = [mat(1e7, 0.2, 0.5), hertz, hooke];
        for m in &mut mats {
            m.set_friction(0.25);
            assert_eq!(
                mix(m, m, 1.0, 1.0, 1.0).tan_phi,
                0.25f64.tan(),
                "{}",
                m.name()
            );
        }
        assert!(mats[2].as_law::<HookeMat>().is_some());
        assert!(mats[2].as_law::<FrictMat>().is_none());
        // materials of two laws (refused by the scene): the elastic placeholder, Hooke has no E
        let p = mix(&mats[0], &mats[2], 1.0, 1.0, 1.0);
        assert_eq!((p.kn, p.ks, p.tan_phi, p.cn), (0.0, 0.0, 0.0, 0.0));
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
