//! Materials and the pair-parameter mixing that turns two materials into contact parameters
//! (Yade's Ip2 functors, digest A3; thesis §2.2.1 eq. 2.13–2.20). A closed set: one `match`.

pub use crate::contact::law::cpm::CpmMat;
use serde::{Deserialize, Serialize};

/// A material, as given in the scene (all SI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Material {
    /// Yade's `FrictMat`: linear elastic–frictional (Cundall–Strack) contacts.
    Frict(FrictMat),
    /// Šmilauer's Concrete Particle Model (Yade `CpmMat`, thesis §3.2): cohesive links with
    /// damage, compressive hardening and shear plasticity (`contact/law/cpm.rs`).
    Cpm(CpmNamed),
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
        }
    }
    pub fn density(&self) -> f64 {
        match self {
            Material::Frict(m) => m.density,
            Material::Cpm(m) => m.params.density,
        }
    }
    pub fn young(&self) -> f64 {
        match self {
            Material::Frict(m) => m.young,
            Material::Cpm(m) => m.params.young,
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

/// Contact parameters of one pair (Yade `FrictPhys`), fixed when the contact is created.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrictPhys {
    /// Normal stiffness K_N [N/m].
    pub kn: f64,
    /// Shear stiffness K_T [N/m].
    pub ks: f64,
    /// tan φ of the contact.
    pub tan_phi: f64,
    /// Viscous normal damping coefficient c_n [N s/m] (0 = none).
    pub cn: f64,
}

/// Series of two springs `a·b/(a+b)`, 0 when both are 0.
fn series(a: f64, b: f64) -> f64 {
    if a + b == 0.0 {
        0.0
    } else {
        a * b / (a + b)
    }
}

/// Damping ratio ζ of a linear spring–dashpot giving restitution `e` (digest A6):
/// ζ = −ln e / sqrt(π² + ln² e).
pub fn damping_ratio(e: f64) -> f64 {
    let l = e.ln();
    -l / (std::f64::consts::PI * std::f64::consts::PI + l * l).sqrt()
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
    match (a, b) {
        (Material::Frict(a), Material::Frict(b)) => {
            let k1 = 2.0 * a.young * r1;
            let k2 = 2.0 * b.young * r2;
            let kn = series(k1, k2);
            let ks = series(k1 * a.poisson, k2 * b.poisson);
            let tan_phi = a.friction_angle.min(b.friction_angle).tan();
            let e = match (a.restitution, b.restitution) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (Some(x), None) | (None, Some(x)) => Some(x),
                (None, None) => None,
            };
            let cn = match e {
                Some(e) if e < 1.0 => 2.0 * damping_ratio(e) * (m_eff * kn).sqrt(),
                _ => 0.0,
            };
            FrictPhys {
                kn,
                ks,
                tan_phi,
                cn,
            }
        }
        // CPM pairs go through `CpmPhys::new` (contact/law/cpm.rs); a scene never mixes CPM
        // with frictional materials or walls (scene validation), so this is a plain elastic
        // placeholder (K_N = E r of the mirror-sphere rule) used by nothing physical.
        (a, b) => {
            let kn = series(2.0 * a.young() * r1, 2.0 * b.young() * r2);
            FrictPhys {
                kn,
                ks: 0.0,
                tan_phi: 0.0,
                cn: 0.0,
            }
        }
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
    fn damping_ratio_limits() {
        assert!(damping_ratio(1.0).abs() < 1e-15);
        // e = exp(-π ζ / sqrt(1-ζ²)) inverted
        let z = damping_ratio(0.5);
        let e = (-std::f64::consts::PI * z / (1.0 - z * z).sqrt()).exp();
        assert!((e - 0.5).abs() < 1e-12);
    }
}
