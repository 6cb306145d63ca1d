//! Concrete Particle Model (CPM) of Šmilauer's thesis (2010), chapter 3.2, as pure functions:
//! (pair parameters, contact history, strains, Δt) → (stresses, forces, new history, energies).
//! Nothing here depends on `Simulation`; the contact loop supplies the kinematics.
//!
//! Implemented (thesis section / equation, and `shared/design/thesis-digest.md` section):
//!
//! * §3.2.1 cohesive vs non-cohesive contacts (digest §4.3.1): a non-cohesive contact is a
//!   cohesive one with ω ≡ 1; removal request when ε_N > 0 and (non-cohesive or ω > threshold).
//! * §3.2.2 contact parameters (digest §4.1, §4.3.10): [`CpmMat`] → [`CpmPhys`], arithmetic
//!   averages, k_T = α k_N, ε_f = relDuctility·ε₀, A = π min(r₁,r₂)² (eq. 2.24),
//!   K_N = k_N A/d₀ (eq. 2.92).
//! * §3.2.3 normal stress with exponential-softening damage, eq. 3.1–3.4 (digest §4.3.2,
//!   with the erratum ω = 1 − (ε₀/κ)exp(…) of digest §12).
//! * §3.2.3.1 compressive plasticity with hardening (digest §4.3.3, summary §3.2.6).
//! * §3.2.3.2 visco-damage, eq. 3.5–3.15, Newton solver for β (digest §4.3.4).
//! * §3.2.3.3 isotropic confinement, eq. 3.16–3.17 (digest §4.3.5).
//! * §3.2.4 shear plasticity, eq. 3.18–3.22, linear surface in tension and logarithmic surface in
//!   compression eq. 3.23 (digest §4.3.6); §3.2.4.2 visco-plasticity eq. 3.24–3.29 (§4.3.7).
//! * §3.2.5 stresses → forces, eq. 3.30 (digest §4.3.8); order of operations of §3.2.6
//!   (digest §4.3.9).
//! * §3.3.1.1 Love–Weber stress of a packing, eq. 3.32–3.37 (digest §4.5), one contact at a time.
//!
//! Shear formulation: the **incremental** (ScGeom) one of thesis §2.3.2.1 (digest §3.3), which
//! is what `contact/geom.rs` provides. The history is the total elastic shear *strain* vector
//! ε_T = u_T/d₀ (eq. 2.44) stored in global coordinates, ⟂ n. Before calling [`cpm_step`] the
//! caller carries `CpmState::eps_t` into the current contact plane
//! (`geom::rotate_shear(st.eps_t, n_old, n, twist, dt)`, eq. 2.30–2.31) and passes the increment
//! Δε_T = Δt v₁₂⊥/d₀ ([`shear_strain_increment`], eq. 2.32–2.34 with the demhpc `+` sign, digest
//! §12). Since the plastic strain ε_Tp is not stored (thesis §3.2.4: "ε_Tp is not stored"), the
//! radial return rescales ε_T itself (eq. 3.22), which is the incremental equivalent of moving
//! the mapped contact points of the total formulation.
//!
//! Signs (CONVENTIONS.md, digest §0.2): n points 1→2, ε_N < 0 in compression, σ_N > 0 in
//! tension, ε_T is the displacement of 2 relative to 1 divided by d₀, and the force returned is
//! the force on particle 1: F = A(σ_N n + σ_T) (eq. 3.30); particle 2 gets −F.

pub mod material;

use crate::error::{Error, Result};
use crate::V3;
use nalgebra::Matrix3;
use serde::{Deserialize, Serialize};

/// Damage evolution law in tension (Yade `CpmMat.damLaw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DamLaw {
    /// Linear softening branch, Yade `damLaw = 0`: ω = (1 − ε₀/κ)/(1 − ε₀/ε_f), σ reaches 0 at
    /// κ = ε_f (Yade ConcretePM.cpp `CpmPhys::funcG` case 0; clamped at ω = 1 beyond ε_f,
    /// where Yade's formula would exceed 1 and turn the stress negative).
    Linear,
    /// Exponential softening, Yade `damLaw = 1` (default), thesis eq. 3.2 with the erratum of
    /// digest §12: ω = 1 − (ε₀/κ) exp(−(κ − ε₀)/ε_f).
    Exponential,
}

/// Shear yield surface in compression (Yade `Law2_ScGeom_CpmPhys_Cpm.yieldSurfType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum YieldSurface {
    /// Linear Mohr–Coulomb everywhere, r = c_T0(1 − ω) − σ_N tan φ (thesis eq. 3.19). This is
    /// what Yade's public build computes whatever `yieldSurfType` says (ConcretePM.cpp, the
    /// branch without `CPM_MATERIAL_MODEL`): the default.
    MohrCoulomb,
    /// Logarithmic surface in compression (thesis eq. 3.23, Yade `yieldSurfType = 2` of the
    /// full model), with speed Y₀ = `yield_log_speed`. Opt-in.
    Log,
}

/// Concrete material (Yade `CpmMat` + the law-level parameters of `Law2_ScGeom_CpmPhys_Cpm`).
/// All SI. **Defaults are those of Yade's public law** (ConcretePM.hpp/.cpp; ElastMat/FrictMat
/// for young, poisson, frictionAngle): linear Mohr–Coulomb shear surface, no compressive
/// hardening (`eps_soft` ≥ 0), no rate dependence, exponential damage. The thesis' extras
/// (logarithmic surface eq. 3.23, compressive hardening §3.2.3.1, visco-damage §3.2.3.2,
/// visco-plasticity §3.2.4.2) are opt-in under their own fields. The scene-facing form, with
/// Yade's names as aliases, is [`CpmParams`]; see docs/translating.md.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpmMat {
    /// Contact normal modulus k_N [Pa] (Yade `young`; a model parameter, not the packing's E,
    /// thesis §2.2.1.1, §3.3.2). Yade default 1e9 (ElastMat).
    pub young: f64,
    /// α = k_T/k_N [-] (Yade `poisson`). Yade default 0.25 (ElastMat).
    pub poisson: f64,
    /// tan φ, internal friction [-] (Yade `tan(frictionAngle)`, default tan 0.5 (FrictMat)).
    pub tan_phi: f64,
    /// Undamaged cohesion c_T0 [Pa] (Yade `sigmaT`; no default).
    pub cohesion: f64,
    /// ε₀, limit elastic strain / crack onset [-] (Yade `epsCrackOnset`; no default).
    pub eps_cracking: f64,
    /// ε_f/ε₀ [-] (Yade `relDuctility`; no default).
    pub rel_ductility: f64,
    /// Damage law in tension (Yade `damLaw`, default exponential).
    pub dam_law: DamLaw,
    /// ε_s, strain where compressive hardening starts [-] (Yade `epsSoft`); ≥ 0 switches the
    /// hardening off. Default 1 (off), as Yade's Law2; the thesis value is −3e-3 (eq. 3.43).
    pub eps_soft: f64,
    /// K̃_s, relative tangent modulus of the hardening branch [-] (Yade `relKnSoft`). Default
    /// 0.3 (Yade; thesis eq. 3.43).
    pub rel_kn_soft: f64,
    /// Shear yield surface (default Mohr–Coulomb, as Yade's public law).
    pub yield_surface: YieldSurface,
    /// Y₀, speed of the logarithmic yield surface [-] (Yade `yieldLogSpeed`, default 0.1, used
    /// only with [`YieldSurface::Log`]).
    pub yield_log_speed: f64,
    /// τ_d, characteristic time of visco-damage [s] (Yade `dmgTau`); active only when τ_d > 0
    /// and M_d > 0. Default −1 (off, Yade); calibrated value 1000 s (thesis §3.3.5).
    pub dmg_tau: f64,
    /// M_d, visco-damage exponent [-] (Yade `dmgRateExp`). Default 0.
    pub dmg_rate_exp: f64,
    /// τ_pl, characteristic time of visco-plasticity [s] (Yade `plTau`); active only when
    /// τ_pl > 0 and M_pl > 0. Default −1 (off).
    pub pl_tau: f64,
    /// M_pl, visco-plasticity exponent [-] (Yade `plRateExp`). Default 0.
    pub pl_rate_exp: f64,
    /// σ₀, isotropic confinement applied at contact level [Pa], ≤ 0 (Yade `isoPrestress`,
    /// thesis §3.2.3.3). Default 0.
    pub iso_prestress: f64,
    /// Damage above which a cohesive link in tension is removed (Yade `omegaThreshold`; ≥ 1 =
    /// never, since ω < 1 for any finite strain). Default 1.
    pub omega_threshold: f64,
    /// Never damage (elastic calibration runs, thesis §3.3.2.1). Default false.
    pub never_damage: bool,
    /// Particle density ρ [kg/m³]. Default 4800 (Yade CpmMat; thesis §3.2.2: compensates
    /// ≈ 50 % porosity).
    pub density: f64,
}

impl CpmMat {
    /// Yade's public-law defaults (ConcretePM.hpp: CpmMat, Law2_ScGeom_CpmPhys_Cpm; ElastMat
    /// young 1e9, poisson 0.25; FrictMat frictionAngle 0.5 rad; density 4800) with the three
    /// parameters Yade leaves NaN (sigmaT, epsCrackOnset, relDuctility) given.
    pub fn yade(cohesion: f64, eps_cracking: f64, rel_ductility: f64) -> Self {
        CpmMat {
            young: 1e9,
            poisson: 0.25,
            tan_phi: 0.5f64.tan(),
            cohesion,
            eps_cracking,
            rel_ductility,
            dam_law: DamLaw::Exponential,
            eps_soft: 1.0,
            rel_kn_soft: 0.3,
            yield_surface: YieldSurface::MohrCoulomb,
            yield_log_speed: 0.1,
            dmg_tau: -1.0,
            dmg_rate_exp: 0.0,
            pl_tau: -1.0,
            pl_rate_exp: 0.0,
            iso_prestress: 0.0,
            omega_threshold: 1.0,
            never_damage: false,
            density: 4800.0,
        }
    }

    /// The full model of the thesis with its recommended values (§3.3, eq. 3.43, fig. 3.1)
    /// completed by Yade's `examples/concrete/uniax.py` (digest §10.3) where the thesis leaves
    /// the value to calibration (k_N = 24e9, α = 0.2, c_T0 = 3.5e6, tan φ = 0.8): log surface
    /// Y₀ = 0.1, hardening ε_s = −3e-3, K̃_s = 0.3; rate effects off. (The pre-issue-20
    /// defaults of demhpc.)
    pub fn thesis() -> Self {
        CpmMat {
            young: 24e9,
            poisson: 0.2,
            tan_phi: 0.8,
            eps_soft: -3e-3,
            yield_surface: YieldSurface::Log,
            ..CpmMat::yade(3.5e6, 1e-4, 30.0)
        }
    }

    /// ε_f = relDuctility · ε₀ (thesis §3.2.2).
    pub fn eps_fracture(&self) -> f64 {
        self.rel_ductility * self.eps_cracking
    }

    /// Set ε_f directly (stored as relDuctility = ε_f/ε₀).
    pub fn with_eps_fracture(mut self, eps_f: f64) -> Self {
        self.rel_ductility = eps_f / self.eps_cracking;
        self
    }

    /// Check the parameter ranges the law relies on.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Input(format!("CPM material: {m}")));
        let fin = [
            self.young,
            self.poisson,
            self.tan_phi,
            self.cohesion,
            self.eps_cracking,
            self.rel_ductility,
            self.eps_soft,
            self.rel_kn_soft,
            self.yield_log_speed,
            self.dmg_tau,
            self.dmg_rate_exp,
            self.pl_tau,
            self.pl_rate_exp,
            self.iso_prestress,
            self.omega_threshold,
            self.density,
        ];
        if fin.iter().any(|x| !x.is_finite()) {
            return bad("all parameters must be finite");
        }
        if self.young <= 0.0 || self.density <= 0.0 {
            return bad("young and density must be > 0");
        }
        if self.poisson < 0.0 || self.tan_phi < 0.0 || self.cohesion < 0.0 {
            return bad("poisson (kT/kN), friction and cohesion must be >= 0");
        }
        if !self.never_damage && (self.eps_cracking <= 0.0 || self.rel_ductility <= 1.0) {
            // thesis §3.2.3: ε_f must be larger than ε₀
            return bad("eps_cracking must be > 0 and rel_ductility > 1");
        }
        if self.eps_soft < 0.0 && !(self.rel_kn_soft > 0.0 && self.rel_kn_soft <= 1.0) {
            return bad("rel_kn_soft must be in (0, 1] when eps_soft < 0");
        }
        if self.yield_surface == YieldSurface::Log && self.yield_log_speed <= 0.0 {
            // thesis eq. 3.23: ln(1 − σ_N/(c_T0 Y₀)) needs Y₀ > 0
            return bad("yield_log_speed must be > 0 with yield_surface: Log");
        }
        if self.iso_prestress > 0.0 {
            // thesis §3.2.3.3: σ₀ is supposed negative
            return bad("iso_prestress must be <= 0 (compression)");
        }
        if self.dmg_rate_exp < 0.0 || self.pl_rate_exp < 0.0 {
            return bad("rate exponents must be >= 0");
        }
        Ok(())
    }
}

/// The scene form of a CPM material (`Cpm(name: …, params: (…))`): every field optional, with
/// Yade's attribute names accepted as aliases (docs/translating.md). [`CpmParams::resolve`]
/// applies Yade's defaults ([`CpmMat::yade`]) and turns it into a [`CpmMat`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpmParams {
    pub young: Option<f64>,
    pub poisson: Option<f64>,
    /// Friction angle φ [rad] (Yade `frictionAngle`); exclusive with `tan_phi`.
    #[serde(alias = "frictionAngle")]
    pub friction_angle: Option<f64>,
    /// tan φ [-], the alternative to `friction_angle` (also written `friction`, the
    /// coefficient's name in the frictional materials).
    #[serde(alias = "friction")]
    pub tan_phi: Option<f64>,
    #[serde(alias = "sigmaT")]
    pub cohesion: Option<f64>,
    #[serde(alias = "epsCrackOnset")]
    pub eps_cracking: Option<f64>,
    #[serde(alias = "relDuctility")]
    pub rel_ductility: Option<f64>,
    #[serde(alias = "damLaw")]
    pub dam_law: Option<DamLaw>,
    #[serde(alias = "epsSoft")]
    pub eps_soft: Option<f64>,
    #[serde(alias = "relKnSoft")]
    pub rel_kn_soft: Option<f64>,
    pub yield_surface: Option<YieldSurface>,
    #[serde(alias = "yieldLogSpeed")]
    pub yield_log_speed: Option<f64>,
    #[serde(alias = "dmgTau")]
    pub dmg_tau: Option<f64>,
    #[serde(alias = "dmgRateExp")]
    pub dmg_rate_exp: Option<f64>,
    #[serde(alias = "plTau")]
    pub pl_tau: Option<f64>,
    #[serde(alias = "plRateExp")]
    pub pl_rate_exp: Option<f64>,
    #[serde(alias = "isoPrestress")]
    pub iso_prestress: Option<f64>,
    #[serde(alias = "omegaThreshold")]
    pub omega_threshold: Option<f64>,
    #[serde(alias = "neverDamage")]
    pub never_damage: Option<bool>,
    pub density: Option<f64>,
    /// Yade `equivStrainShearContrib` (ξ₁): only 0 (Yade's default) is supported.
    #[serde(alias = "equivStrainShearContrib")]
    pub equiv_strain_shear_contrib: Option<f64>,
}

impl CpmParams {
    /// The names a field may be written with in a scene (demhpc name first, then Yade's).
    pub fn names(field: &str) -> Vec<String> {
        let yade = match field {
            "friction_angle" => "frictionAngle",
            "cohesion" => "sigmaT",
            "eps_cracking" => "epsCrackOnset",
            "rel_ductility" => "relDuctility",
            "equiv_strain_shear_contrib" => "equivStrainShearContrib",
            "dam_law" => "damLaw",
            "eps_soft" => "epsSoft",
            "rel_kn_soft" => "relKnSoft",
            "yield_log_speed" => "yieldLogSpeed",
            "dmg_tau" => "dmgTau",
            "dmg_rate_exp" => "dmgRateExp",
            "pl_tau" => "plTau",
            "pl_rate_exp" => "plRateExp",
            "iso_prestress" => "isoPrestress",
            "omega_threshold" => "omegaThreshold",
            "never_damage" => "neverDamage",
            _ => "",
        };
        if field == "tan_phi" {
            // either coefficient name, else the angle it clashes with
            return ["tan_phi", "friction", "friction_angle", "frictionAngle"]
                .map(String::from)
                .to_vec();
        }
        let mut v = vec![field.to_string()];
        if !yade.is_empty() {
            v.push(yade.to_string());
        }
        v
    }

    /// Apply the defaults and check the ranges. An error names the offending field (its
    /// demhpc name; the caller also looks for its Yade alias) and the problem.
    pub fn resolve(&self) -> std::result::Result<CpmMat, (&'static str, String)> {
        let need = |v: Option<f64>, f: &'static str, yade: &str| {
            v.ok_or((f, format!("required (Yade `{yade}` has no default either)")))
        };
        let cohesion = need(self.cohesion, "cohesion", "sigmaT")?;
        let eps0 = need(self.eps_cracking, "eps_cracking", "epsCrackOnset")?;
        let duct = need(self.rel_ductility, "rel_ductility", "relDuctility")?;
        let d = CpmMat::yade(cohesion, eps0, duct);
        let tan_phi = match (self.friction_angle, self.tan_phi) {
            (Some(_), Some(_)) => {
                return Err((
                    "tan_phi",
                    "give either friction_angle (radians) or tan_phi, not both".into(),
                ))
            }
            (Some(a), None) => {
                if !(0.0..std::f64::consts::FRAC_PI_2).contains(&a) {
                    return Err((
                        "friction_angle",
                        format!("{a} rad: must be in [0, π/2) (radians, not degrees)"),
                    ));
                }
                a.tan() // Yade Ip2_CpmMat_CpmMat_CpmPhys: tanFrictionAngle = tan(frictionAngle)
            }
            (None, Some(t)) => t,
            (None, None) => d.tan_phi,
        };
        if let Some(x) = self.equiv_strain_shear_contrib {
            if x != 0.0 {
                return Err((
                    "equiv_strain_shear_contrib",
                    "only 0 (Yade's default) is supported".into(),
                ));
            }
        }
        let m = CpmMat {
            young: self.young.unwrap_or(d.young),
            poisson: self.poisson.unwrap_or(d.poisson),
            tan_phi,
            cohesion,
            eps_cracking: eps0,
            rel_ductility: duct,
            dam_law: self.dam_law.unwrap_or(d.dam_law),
            eps_soft: self.eps_soft.unwrap_or(d.eps_soft),
            rel_kn_soft: self.rel_kn_soft.unwrap_or(d.rel_kn_soft),
            yield_surface: self.yield_surface.unwrap_or(d.yield_surface),
            yield_log_speed: self.yield_log_speed.unwrap_or(d.yield_log_speed),
            dmg_tau: self.dmg_tau.unwrap_or(d.dmg_tau),
            dmg_rate_exp: self.dmg_rate_exp.unwrap_or(d.dmg_rate_exp),
            pl_tau: self.pl_tau.unwrap_or(d.pl_tau),
            pl_rate_exp: self.pl_rate_exp.unwrap_or(d.pl_rate_exp),
            iso_prestress: self.iso_prestress.unwrap_or(d.iso_prestress),
            omega_threshold: self.omega_threshold.unwrap_or(d.omega_threshold),
            never_damage: self.never_damage.unwrap_or(d.never_damage),
            density: self.density.unwrap_or(d.density),
        };
        m.validate().map_err(|e| ("", e.to_string()))?;
        Ok(m)
    }
}

/// Parameters of one CPM pair (Yade `CpmPhys`), fixed when the contact is created.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpmPhys {
    /// Normal contact modulus k_N [Pa] (stress/strain).
    pub kn: f64,
    /// Shear contact modulus k_T = α k_N [Pa].
    pub kt: f64,
    /// Cross-section A = π min(r₁, r₂)² [m²] (thesis eq. 2.24).
    pub area: f64,
    /// Normal spring stiffness K_N = k_N A/d₀ [N/m] (eq. 2.92), for the time step.
    pub stiff_n: f64,
    /// Shear spring stiffness K_T = k_T A/d₀ [N/m].
    pub stiff_t: f64,
    pub tan_phi: f64,
    /// c_T0 [Pa].
    pub cohesion: f64,
    /// ε₀.
    pub eps0: f64,
    /// ε_f.
    pub eps_f: f64,
    /// ε_s (≥ 0: no compressive hardening).
    pub eps_soft: f64,
    /// K̃_s.
    pub rel_kn_soft: f64,
    /// Y₀ (≤ 0: linear Mohr–Coulomb surface in compression too).
    pub y0: f64,
    /// Linear softening (Yade `damLaw = 0`) instead of the exponential one.
    pub linear_damage: bool,
    /// τ_d, M_d.
    pub dmg_tau: f64,
    pub dmg_rate_exp: f64,
    /// τ_pl, M_pl.
    pub pl_tau: f64,
    pub pl_rate_exp: f64,
    /// σ₀ [Pa].
    pub sigma0: f64,
    pub omega_threshold: f64,
    pub never_damage: bool,
}

impl CpmPhys {
    /// Mix two materials for a pair of radii `r1`, `r2` whose equilibrium distance is `d0`
    /// (the centre distance when the link is created, eq. 2.21). Thesis §3.2.2 / Yade
    /// `Ip2_CpmMat_CpmMat_CpmPhys`: arithmetic averages of every parameter (exact copies when
    /// both materials are equal, since ½(a+a) = a in IEEE arithmetic); k_T = ᾱ k̄_N;
    /// ε_f = ε̄₀ · mean(relDuctility) (as Yade/Woo); neverDamage = either. The thesis makes
    /// Y₀, K̃_s law-level and ε_s material-level (digest §4.3.10 footnote); here all three are
    /// material fields, averaged like the rest, which is the same when one law is used. Yade
    /// averages the friction *angles* and takes the tangent; demhpc averages tan φ (identical
    /// for one material, which is the case of every Yade CPM example).
    pub fn new(m1: &CpmMat, m2: &CpmMat, r1: f64, r2: f64, d0: f64) -> Self {
        let avg = |a: f64, b: f64| 0.5 * (a + b);
        let kn = avg(m1.young, m2.young);
        let kt = avg(m1.poisson, m2.poisson) * kn;
        let rmin = r1.min(r2);
        let area = std::f64::consts::PI * rmin * rmin; // thesis eq. 2.24
        let eps0 = avg(m1.eps_cracking, m2.eps_cracking);
        CpmPhys {
            kn,
            kt,
            area,
            stiff_n: kn * area / d0, // thesis eq. 2.92, digest §4.1
            stiff_t: kt * area / d0,
            tan_phi: avg(m1.tan_phi, m2.tan_phi),
            cohesion: avg(m1.cohesion, m2.cohesion),
            eps0,
            eps_f: eps0 * avg(m1.rel_ductility, m2.rel_ductility),
            eps_soft: avg(m1.eps_soft, m2.eps_soft),
            rel_kn_soft: avg(m1.rel_kn_soft, m2.rel_kn_soft),
            // Yade's yield surface is a law-level choice: the log one only if both ask for it
            y0: match (m1.yield_surface, m2.yield_surface) {
                (YieldSurface::Log, YieldSurface::Log) => {
                    avg(m1.yield_log_speed, m2.yield_log_speed)
                }
                _ => 0.0,
            },
            // Yade copies damLaw from one material; symmetric here: linear only if both are
            linear_damage: m1.dam_law == DamLaw::Linear && m2.dam_law == DamLaw::Linear,
            dmg_tau: avg(m1.dmg_tau, m2.dmg_tau),
            dmg_rate_exp: avg(m1.dmg_rate_exp, m2.dmg_rate_exp),
            pl_tau: avg(m1.pl_tau, m2.pl_tau),
            pl_rate_exp: avg(m1.pl_rate_exp, m2.pl_rate_exp),
            sigma0: avg(m1.iso_prestress, m2.iso_prestress),
            omega_threshold: avg(m1.omega_threshold, m2.omega_threshold),
            never_damage: m1.never_damage || m2.never_damage,
        }
    }

    fn visco_damage(&self) -> bool {
        self.dmg_tau > 0.0 && self.dmg_rate_exp > 0.0
    }
    fn visco_plastic(&self) -> bool {
        self.pl_tau > 0.0 && self.pl_rate_exp > 0.0
    }

    /// The pair runs Yade's public law (the defaults): no compressive hardening, the linear
    /// Mohr–Coulomb surface, no rate dependence, no confinement. Such pairs go through the
    /// batched loop (`contact/cpm_batch.rs`: [`public_stress`] on lanes), the others through
    /// [`cpm_step`].
    pub fn is_public_law(&self) -> bool {
        self.eps_soft >= 0.0
            && self.y0 <= 0.0
            && !self.visco_damage()
            && !self.visco_plastic()
            && self.sigma0 == 0.0
    }

    /// The constants of the public law that do not depend on the radii or d₀ (bit for bit
    /// those of [`CpmPhys::new`]).
    pub fn public_const(&self) -> CpmConst {
        CpmConst {
            kn: self.kn,
            kt: self.kt,
            tan_phi: self.tan_phi,
            cohesion: self.cohesion,
            eps0: self.eps0,
            eps_f: self.eps_f,
            omega_threshold: self.omega_threshold,
            linear_damage: self.linear_damage,
            never_damage: self.never_damage,
        }
    }
}

/// The constants of Yade's public CPM law for one pair of materials ([`CpmPhys::public_const`]),
/// the lanes' parameters of the batched loop; the cross-section comes from the radii.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpmConst {
    pub kn: f64,
    pub kt: f64,
    pub tan_phi: f64,
    pub cohesion: f64,
    pub eps0: f64,
    pub eps_f: f64,
    pub omega_threshold: f64,
    pub linear_damage: bool,
    pub never_damage: bool,
}

/// κ after a step at elastic strain ε_el: the largest positive elastic strain so far (thesis
/// eq. 3.3; see [`cpm_step`] on ε_el vs ⟨ε_N⟩).
#[inline(always)]
pub fn kappa_update(kappa: f64, eps_el: f64) -> f64 {
    kappa.max(eps_el.max(0.0))
}

/// ω of a contact whose κ grew from `kappa_old` to `kappa` (thesis eq. 3.2–3.4): `omega_old`
/// unless κ grew past ε₀ on a cohesive, damageable contact. ω is a function of κ alone
/// ([`damage`], [`damage_linear`]), so the value of [`cpm_step`], which re-evaluates it every
/// step, is the stored one whenever κ did not grow; the batched loop evaluates the exponential
/// only for the contacts that are being damaged now.
#[inline(always)]
pub fn damage_update(
    c: &CpmConst,
    cohesive: bool,
    kappa_old: f64,
    kappa: f64,
    omega_old: f64,
) -> f64 {
    if !cohesive || c.never_damage || kappa <= kappa_old || kappa < c.eps0 {
        omega_old
    } else if c.linear_damage {
        damage_linear(kappa, c.eps0, c.eps_f)
    } else {
        damage(kappa, c.eps0, c.eps_f)
    }
}

/// Normal stress with damage in tension only, σ_N = (1 − H(ε_el) ω) k_N ε_el (thesis eq. 3.1,
/// §3.2.6 summary form with the plastic strain), as a select.
#[inline(always)]
pub fn normal_stress(eps_el: f64, omega: f64, kn: f64) -> f64 {
    let damaged = (1.0 - omega) * kn * eps_el;
    let intact = kn * eps_el;
    if eps_el >= 0.0 {
        damaged
    } else {
        intact
    }
}

/// Radius of the linear Mohr–Coulomb shear surface r = c_T0 (1 − ω) − σ_N tan φ, clamped at 0
/// (thesis eq. 3.19; the branch of [`yield_radius`] without the log surface).
#[inline(always)]
pub fn mohr_coulomb_radius(sigma_n: f64, omega: f64, cohesion: f64, tan_phi: f64) -> f64 {
    (cohesion * (1.0 - omega) - sigma_n * tan_phi).max(0.0)
}

/// The stresses of Yade's public law once ω is known: σ_N ([`normal_stress`]), the trial shear
/// stress k_T ε_T and its radial return onto the Mohr–Coulomb surface (thesis eq. 3.18–3.22,
/// digest erratum: ε_T scaled like σ_T). Returns (σ_N, σ_T, ε_T after the return). Selects
/// only: the batched loop (`contact/cpm_batch.rs`) runs it lane by lane; [`cpm_step`] gives
/// the same bits for a public-law pair.
#[inline(always)]
pub fn public_stress(c: &CpmConst, eps_el: f64, omega: f64, eps_t: V3) -> (f64, V3, V3) {
    let sigma_n = normal_stress(eps_el, omega, c.kn);
    let trial = eps_t * c.kt;
    let r = mohr_coulomb_radius(sigma_n, omega, c.cohesion, c.tan_phi);
    let t2 = trial.norm_squared();
    let scale = r / t2.sqrt(); // eq. 3.21 (unused, possibly NaN, where no slip)
    let slip = t2 > r * r;
    (
        sigma_n,
        super::select3(slip, trial * scale, trial),
        super::select3(slip, eps_t * scale, eps_t),
    )
}

/// History of one CPM contact (Yade `CpmPhys` state variables + the shear strain of the
/// geometry), checkpointed with the contact (digest §11: κ, ω, ε_N^pl, ε_d, ε_T, d₀, cohesive).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpmState {
    /// Equilibrium distance d₀ [m] (eq. 2.21).
    pub d0: f64,
    /// κ, maximum equivalent (elastic tensile) strain reached (eq. 3.3).
    pub kappa: f64,
    /// ω, damage ∈ [0, 1) (1 for non-cohesive contacts).
    pub omega: f64,
    /// ε_N^pl, normal plastic strain from compressive hardening (≤ 0).
    pub eps_n_pl: f64,
    /// ε_d, damage strain of the visco-damage law (eq. 3.5).
    pub eps_d: f64,
    /// ε_T, elastic shear strain vector (global coordinates, ⟂ n), the shear history.
    pub eps_t: V3,
    /// ε_N of the last step (geometric, before the confinement shift).
    pub eps_n: f64,
    /// σ_N of the last step [Pa] (after overstress and confinement post-shift).
    pub sigma_n: f64,
    /// σ_T of the last step [Pa].
    pub sigma_t: V3,
    /// Created as a cohesive link (initial step) rather than a frictional contact.
    pub cohesive: bool,
    /// The law asked for removal in the last step (see [`CpmOut::remove`]).
    pub is_broken: bool,
}

impl CpmState {
    /// A virgin contact: ω = 0 if cohesive, ω = 1 otherwise (thesis §3.2.1).
    pub fn new(d0: f64, cohesive: bool) -> Self {
        CpmState {
            d0,
            omega: if cohesive { 0.0 } else { 1.0 },
            cohesive,
            ..Default::default()
        }
    }
}

/// Result of one step of one contact.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpmOut {
    /// Normal stress σ_N [Pa], > 0 in tension.
    pub sigma_n: f64,
    /// Shear stress σ_T [Pa] (⟂ n).
    pub sigma_t: V3,
    /// Normal force A σ_N [N] (scalar along n, on particle 1).
    pub f_n: f64,
    /// Shear force A σ_T [N] on particle 1.
    pub f_t: V3,
    /// The contact must be removed now (ε_N > 0 and non-cohesive or ω > threshold; Yade's
    /// `Law2` returning false). Stresses and forces are then 0: apply nothing.
    pub remove: bool,
}

impl CpmOut {
    /// Force on particle 1, F = A(σ_N n + σ_T) (thesis eq. 3.30, digest §4.3.8).
    #[inline]
    pub fn force(&self, n: &V3) -> V3 {
        n * self.f_n + self.f_t
    }
}

/// Normal strain ε_N = l/d₀ − 1 (thesis eq. 2.28), < 0 in compression.
#[inline]
pub fn normal_strain(l: f64, d0: f64) -> f64 {
    l / d0 - 1.0
}

/// Shear strain increment Δε_T = Δt v₁₂⊥/d₀ (thesis eq. 2.33–2.34 with the demhpc sign of
/// digest §3.3/§12, divided by d₀ as in eq. 2.44). `v12` is the velocity of 2 relative to 1 at
/// the contact point (`geom::relative_velocity`).
#[inline]
pub fn shear_strain_increment(v12: V3, n: V3, dt: f64, d0: f64) -> V3 {
    let vt = v12 - n * n.dot(&v12);
    vt * (dt / d0)
}

/// Lever arms (d₁', d₂') of the relative velocity and the torques of a pair at distance `l`:
/// from each centre to the contact point C = C₁ + d₁' n, d₁' = r₁ + (l − r₁ − r₂)/2, d₂' = l − d₁'
/// (thesis eq. 2.22, 2.26, used in eq. 2.32).
///
/// **No (r₁+r₂)/l factor** (issue 20). Yade's ScGeom with the default
/// `Ig2_Sphere_Sphere_ScGeom.avoidGranularRatcheting = true` (ScGeom.cpp `getIncidentVel`)
/// uses the radii as lever arms and scales the translational relative velocity by
/// α = (r₁+r₂)/(r₁+r₂−penetrationDepth) = (r₁+r₂)/l, which keeps a rigid rotation of the pair
/// shear-free with those arms. The arms d₁' + d₂' = l of eq. 2.32 already do that without α,
/// and keep the translational shear stiffness at K_T = k_T A/d₀ (eq. 2.92) for any link
/// length, which is what the calibration of the thesis (ν from α, eq. 3.39) assumes; with α
/// a link of R_I = 1.5 would be up to 1.5× softer in shear than K_T. Yade's choice avoids
/// granular ratcheting (the arm changes with l here), irrelevant at CPM strains (< 1e-2 of the
/// arm). Test: `stretched_link_shear_has_no_distance_factor`.
#[inline]
pub fn lever_arms(l: f64, r1: f64, r2: f64) -> (f64, f64) {
    let a1 = r1 + 0.5 * (l - (r1 + r2));
    (a1, l - a1)
}

/// Damage evolution function ω = g(κ) (thesis eq. 3.2 with the digest erratum, §4.3.2/§12:
/// prefactor ε₀/κ, not ε_f/κ, so that ω(ε₀) = 0):
/// g = 0 for κ < ε₀, g = 1 − (ε₀/κ) exp(−(κ − ε₀)/ε_f) otherwise.
#[inline]
pub fn damage(kappa: f64, eps0: f64, eps_f: f64) -> f64 {
    if kappa < eps0 {
        0.0
    } else {
        1.0 - (eps0 / kappa) * (-(kappa - eps0) / eps_f).exp()
    }
}

/// Linear damage law, Yade `damLaw = 0` (ConcretePM.cpp `CpmPhys::funcG` case 0):
/// ω = (1 − ε₀/κ)/(1 − ε₀/ε_f) for κ ≥ ε₀, so that σ = (1 − ω) k_N κ falls linearly from k_N ε₀
/// to 0 at κ = ε_f; clamped at 1 beyond ε_f (Yade's value would exceed 1 there).
#[inline]
pub fn damage_linear(kappa: f64, eps0: f64, eps_f: f64) -> f64 {
    if kappa < eps0 {
        0.0
    } else {
        ((1.0 - eps0 / kappa) / (1.0 - eps0 / eps_f)).min(1.0)
    }
}

/// Radius r_pl of the shear yield surface at normal stress σ_N and damage ω (thesis eq. 3.23,
/// digest §4.3.6):
/// * σ_N ≥ 0: r = c_T0 (1 − ω) − σ_N tan φ (eq. 3.19), clamped at 0 (digest [X-CHECK]);
/// * σ_N < 0: r = c_T0 [(1 − ω) + Y₀ tan φ ln(1 − σ_N/(c_T0 Y₀))] (eq. 3.23; the §3.2.6
///   summary drops the ln, digest §12), C¹-continuous with the linear branch at σ_N = 0.
///
/// With Y₀ ≤ 0 or c_T0 = 0 the logarithmic branch is undefined; the linear Mohr–Coulomb surface
/// (its Y₀ → ∞ limit, Yade `yieldSurfType = 0`) is used in compression too.
#[inline]
pub fn yield_radius(sigma_n: f64, omega: f64, cohesion: f64, tan_phi: f64, y0: f64) -> f64 {
    if sigma_n >= 0.0 || y0 <= 0.0 || cohesion <= 0.0 {
        mohr_coulomb_radius(sigma_n, omega, cohesion, tan_phi)
    } else {
        let r = cohesion * ((1.0 - omega) + y0 * tan_phi * (1.0 - sigma_n / (cohesion * y0)).ln());
        r.max(0.0)
    }
}

/// Strain shift of the isotropic confinement σ₀ (thesis eq. 3.16, digest §4.3.5; the §3.2.6
/// summary misprints it, digest §12): ε'_N = ε_N + shift, with
/// shift = σ₀/k_N if σ₀ > k_N ε_s (or no hardening), else ε_s + (σ₀ − k_N ε_s)/(k_N K̃_s).
#[inline]
pub fn confinement_shift(p: &CpmPhys) -> f64 {
    if p.sigma0 == 0.0 {
        0.0
    } else if p.eps_soft >= 0.0 || p.sigma0 > p.kn * p.eps_soft {
        p.sigma0 / p.kn
    } else {
        p.eps_soft + (p.sigma0 - p.kn * p.eps_soft) / (p.kn * p.rel_kn_soft)
    }
}

/// Solution of ln(e^β + c e^{Nβ}) = 0 (thesis eq. 3.13 / 3.27).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BetaSolution {
    pub beta: f64,
    /// Newton updates performed.
    pub iterations: u32,
    /// |ln(e^β + c e^{Nβ})| at the returned β.
    pub residual: f64,
}

/// Tolerance on |f| of the β solver (Yade/Woo `solveBeta`: 1e-12, digest §4.3.4).
pub const BETA_TOL: f64 = 1e-12;
/// Iteration cap of the β solver (Yade: 20; convergence is monotone, usually ≤ 4 updates).
pub const BETA_MAX_ITER: u32 = 50;

/// Newton's method for ln(e^β + c e^{Nβ}) = 0 from β = 0 (thesis §3.2.3.2 footnote 2 with the
/// digest erratum a = c e^{Nβ} + e^β, not + e^N). For c > 0, N > 0 the function is convex and
/// increasing with f(0) = ln(1 + c) > 0, so the iteration decreases monotonically to the unique
/// negative root. For c ≤ 0 the root is β = 0 (no viscous term). Never panics: if the cap is
/// reached, the last iterate is returned with its residual.
pub fn solve_beta(c: f64, n: f64) -> BetaSolution {
    let mut beta = 0.0f64;
    if c <= 0.0 {
        return BetaSolution {
            beta,
            iterations: 0,
            residual: 0.0,
        };
    }
    let mut it = 0;
    loop {
        let ecn = c * (n * beta).exp();
        let eb = beta.exp();
        let a = ecn + eb;
        let f = a.ln();
        if f.abs() < BETA_TOL || it >= BETA_MAX_ITER {
            return BetaSolution {
                beta,
                iterations: it,
                residual: f.abs(),
            };
        }
        let df = (n * ecn + eb) / a;
        beta -= f / df;
        it += 1;
    }
}

/// One step of the CPM law for one contact (thesis §3.2.6, order of digest §4.3.9).
///
/// * `eps_n`: ε_N = l/d₀ − 1 ([`normal_strain`]).
/// * `d_eps_t`: shear strain increment of this step ([`shear_strain_increment`]); `st.eps_t`
///   must already have been rotated into the current contact plane by the caller.
/// * `dt`: time step (only the viscous terms use it; they are skipped when `dt ≤ 0`).
///
/// Updates `st` (κ, ω, ε_N^pl, ε_d, ε_T, last stresses, `is_broken`) and returns the stresses,
/// forces and energies.
///
/// Always inlined into the contact loop: as a call it received a 200-byte `CpmPhys` built on
/// the stack and returned the energies nobody reads there; inlined, the unused fields and
/// energies vanish (CPM contact phase −18 %, bench/yade_cpm.sh, measured).
#[inline(always)]
pub fn cpm_step(p: &CpmPhys, st: &mut CpmState, eps_n: f64, d_eps_t: V3, dt: f64) -> CpmOut {
    st.eps_t += d_eps_t;
    st.eps_n = eps_n;

    // Isotropic confinement, pre-shift of the strain (thesis eq. 3.16).
    let eps = eps_n + confinement_shift(p);

    // Damage (thesis eq. 3.2–3.4 with ξ₁ = 0). κ is driven by the positive part of the elastic
    // strain ε_el = ε − ε_N^pl. Thesis/digest §4.3.9 write ⟨ε_N⟩; the two agree unless
    // compressive plasticity occurred (ε_N^pl < 0). After it, ⟨ε_N⟩ would let an unloaded
    // contact carry an undamaged tension k_N|ε_N^pl| (tens of times k_N ε₀), while the stress
    // itself uses H(ε_el) (§3.2.6). We follow the consistent choice of Woo's
    // Law2_L6Geom_ConcretePhys (κ from ⟨ε_N − ε_N^pl⟩) [X-CHECK].
    let mut eps_el = eps - st.eps_n_pl;
    st.kappa = kappa_update(st.kappa, eps_el);
    st.omega = if !st.cohesive {
        1.0 // thesis §3.2.1: non-cohesive = fully damaged from the start
    } else if p.never_damage {
        0.0
    } else if p.linear_damage {
        damage_linear(st.kappa, p.eps0, p.eps_f)
    } else {
        damage(st.kappa, p.eps0, p.eps_f)
    };
    let omega = st.omega;

    // Normal stress, damage in tension only: σ_N = (1 − H(ε_el) ω) k_N ε_el (thesis eq. 3.1,
    // §3.2.6 summary form with the plastic strain; H(0) = 1, irrelevant since ε_el = 0 ⇒ σ = 0).
    let mut sigma_n = normal_stress(eps_el, omega, p.kn);

    // Compressive plasticity with hardening (thesis §3.2.3.1, §3.2.6; digest §4.3.3): the
    // hardening line σ_s = k_N (ε_s + K̃_s (ε − ε_s)) is written in the total strain, so that
    // on the branch ε_N^pl = (1 − K̃_s)(ε − ε_s) and reloading comes back to the same line.
    if p.eps_soft < 0.0 && eps_el < p.eps_soft {
        let sigma_s = p.kn * (p.eps_soft + p.rel_kn_soft * (eps - p.eps_soft));
        if sigma_s > sigma_n {
            st.eps_n_pl += (sigma_n - sigma_s) / p.kn;
            sigma_n = sigma_s;
            eps_el = eps - st.eps_n_pl;
        }
    }
    // Shear: trial stress, yield radius at the already known σ_N (without viscous overstress,
    // digest §4.3.9 note), radial return (thesis eq. 3.18–3.22) or visco-plastic return
    // (eq. 3.24–3.29).
    let trial = st.eps_t * p.kt;
    let r = yield_radius(sigma_n, omega, p.cohesion, p.tan_phi, p.y0);
    let mut sigma_t = trial;
    let t2 = trial.norm_squared();
    if t2 > r * r {
        let tn = t2.sqrt();
        let scale = if p.visco_plastic() && dt > 0.0 {
            // thesis eq. 3.26: c = c_T0 (|σ^t| − r)^{M−1} (τ_pl/(k_T Δt))^M
            let m = p.pl_rate_exp;
            let c = p.cohesion * (tn - r).powf(m - 1.0) * (p.pl_tau / (p.kt * dt)).powf(m);
            let beta = solve_beta(c, m).beta;
            1.0 - beta.exp() * (1.0 - r / tn) // eq. 3.28 (digest §12: not e^{β(…)})
        } else {
            r / tn // eq. 3.21
        };
        sigma_t = trial * scale;
        // eq. 3.22 (digest erratum: ε_T |σ_T|/|σ_T^t|, i.e. the same scale): the plastic
        // strain is not stored, the elastic shear strain is reduced instead.
        st.eps_t *= scale;
    }

    // Visco-damage overstress, cohesive contacts only (thesis eq. 3.5–3.15, digest §4.3.4).
    // The rate-independent damage strain is ε_el − σ_ri/k_N (eq. 3.5) = ω⟨ε_el⟩: zero in
    // compression, where damage is inactive. (Yade/Woo use ω ε_N for either sign, which also
    // creates an overstress while a damaged contact re-opens in compression; eq. 3.5 does not.)
    if st.cohesive && p.visco_damage() && dt > 0.0 {
        let target = omega * eps_el.max(0.0);
        let rhs = target - st.eps_d; // ω ε_N⁺ − ε_d° of eq. 3.10
        if rhs <= 0.0 {
            st.eps_d = target; // unloading: eq. 3.11, no overstress
        } else {
            let m = p.dmg_rate_exp;
            // eq. 3.14 as printed, with the factor (1 − ω). The literal elimination of
            // eq. 3.5–3.7 gives it without (1 − ω); the digest (§4.3.4, §12) keeps the printed
            // form for parity with the thesis curves and Yade — so do we.
            let c = p.eps0 * (1.0 - omega) * (p.dmg_tau / dt).powf(m) * rhs.powf(m - 1.0);
            let beta = solve_beta(c, m).beta;
            st.eps_d += rhs * beta.exp(); // eq. 3.15
            sigma_n += p.kn * (target - st.eps_d); // σ_Nv = k_N(ω ε_N − ε_d) ≥ 0, eq. 3.6–3.7
        }
    }

    // Confinement post-shift (thesis eq. 3.17).
    sigma_n -= p.sigma0;

    // Removal (thesis §3.2.1, Yade omegaThreshold, digest §4.3.1): on the geometric strain.
    let remove = eps_n > 0.0 && (!st.cohesive || omega > p.omega_threshold);
    st.is_broken = remove;
    if remove {
        st.sigma_n = 0.0;
        st.sigma_t = V3::zeros();
        return CpmOut {
            remove: true,
            ..Default::default()
        };
    }

    st.sigma_n = sigma_n;
    st.sigma_t = sigma_t;
    CpmOut {
        sigma_n,
        sigma_t,
        f_n: sigma_n * p.area,
        f_t: sigma_t * p.area,
        remove: false,
    }
}

/// Energy tracking (issue 23): the elastic energy [J] stored in a CPM contact in state `st`
/// (its ε_N, ε_N^pl, ω, ε_T): A d₀ (½ σ_N ε_el + ½ k_T |ε_T|²), forces A σ doing work on
/// displacements d₀ ε. The normal spring unloads to the origin with the damaged (secant)
/// modulus (1 − ω) k_N in tension (thesis eq. 3.1), so ½ σ_N ε_el is what it gives back; the
/// plastic strain ε_N^pl is not recoverable. Rate-independent, unconfined contacts (the scene
/// refuses energy tracking with visco-damage or `iso_prestress`).
#[inline]
pub fn stored_energy(p: &CpmPhys, st: &CpmState) -> f64 {
    let eps_el = st.eps_n - st.eps_n_pl;
    let normal = normal_stress(eps_el, st.omega, p.kn) * eps_el;
    p.area * st.d0 * 0.5 * (normal + p.kt * st.eps_t.norm_squared())
}

/// Energy tracking (issue 23): what one step of [`cpm_step`] dissipated [J], as (shear slip,
/// normal: damage and compressive plasticity). `old`: the contact before the step, its ε_T
/// carried into the current plane, its ε_N that of the previous positions (a contact created
/// now: `None`, nothing stored and no force before); `d_eps_t` the step's shear increment;
/// `new` the state after the step; `removed` if the step ended the contact (no force now,
/// nothing stored after).
///
/// * Shear: the leapfrog-consistent slip work [`super::slip_work`] of the stresses (old,
///   trial = old + k_T Δε_T, new) times the volume A d₀ (plain or visco-plastic return alike).
/// * Normal: the work the particles did on the normal spring along the step, by the trapezoid
///   A d₀ ½ (σ_old + σ_new)(ε_new − ε_old) (what the leapfrog's kinetic energy pays for), less
///   the change of the stored ½ σ ε_el ([`stored_energy`]). With a constant ε_N^pl this is
///   A d₀ ½ (s_old − s_new) ε_old ε_new for the secant moduli s = (1 − H(ε) ω) k_N: a growth
///   Δω of damage in tension dissipates Δω · A d₀ ½ k_N ε_old ε_new, the energy release rate
///   Y = ½ k_N ε² of continuum damage times Δω in the limit of small steps; it is 0 in
///   elastic loading or unloading (ω constant) and in compression. On the hardening branch
///   (thesis §3.2.3.1) the plastic strain's work is the same difference.
pub fn step_dissipation(
    p: &CpmPhys,
    old: Option<&CpmState>,
    d_eps_t: V3,
    new: &CpmState,
    removed: bool,
) -> (f64, f64) {
    let (eps_old, sigma_old, u_old, t_old) = match old {
        None => (new.eps_n, 0.0, 0.0, V3::zeros()),
        Some(o) => {
            let eps_el = o.eps_n - o.eps_n_pl;
            let sigma = normal_stress(eps_el, o.omega, p.kn);
            (o.eps_n, sigma, 0.5 * sigma * eps_el, o.eps_t * p.kt)
        }
    };
    let (sigma_new, u_new, t_new) = if removed {
        (0.0, 0.0, V3::zeros())
    } else {
        let eps_el = new.eps_n - new.eps_n_pl;
        let sigma = normal_stress(eps_el, new.omega, p.kn);
        (sigma, 0.5 * sigma * eps_el, new.eps_t * p.kt)
    };
    let trial = t_old + d_eps_t * p.kt;
    let vol = p.area * new.d0;
    let slip = vol * super::slip_work(t_old, trial, t_new, p.kt);
    let work = 0.5 * (sigma_old + sigma_new) * (new.eps_n - eps_old);
    let normal = vol * (work - (u_new - u_old));
    (slip, normal)
}

/// Love–Weber contribution of one contact to the stress of a volume V (thesis eq. 3.32–3.37
/// with the digest erratum §12 — the printed component form drops 1/V and l):
/// σ_ij += ½(l_i f_j + l_j f_i)/V, with `l` = C₂ − C₁ (branch vector 1→2, including any periodic
/// shift) and `f` the force on particle 1. Tension positive. The symmetric part is returned:
/// for a contact force with a shear part l⊗f alone is not symmetric (the sum over an
/// equilibrated packing is).
#[inline]
pub fn love_weber(l: &V3, f: &V3, volume: f64) -> Matrix3<f64> {
    let m = l * f.transpose();
    (m + m.transpose()) * (0.5 / volume)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::geom::{self, rotate_shear};

    /// Thesis fig. 3.1 parameters: ε₀ = 1e-4, ε_f = 30 ε₀, k_N = 24e9 Pa.
    fn mat() -> CpmMat {
        CpmMat::thesis()
    }
    const R: f64 = 5e-3;
    const D0: f64 = 1.2e-2;

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    /// Two-particle law tester: particle 1 fixed at the origin, particle 2 moved to prescribed
    /// positions (no spins). Each `goto` is one time step: the geometry is that of
    /// `contact/geom.rs` (normal strain eq. 2.28, shear rotation eq. 2.30–2.31, increment
    /// eq. 2.34), then the law runs.
    struct LawTester {
        p: CpmPhys,
        st: CpmState,
        x2: V3,
        n_old: V3,
        dt: f64,
    }

    impl LawTester {
        fn new(m: &CpmMat, cohesive: bool, dt: f64) -> Self {
            LawTester {
                p: CpmPhys::new(m, m, R, R, D0),
                st: CpmState::new(D0, cohesive),
                x2: V3::new(D0, 0.0, 0.0),
                n_old: V3::x(),
                dt,
            }
        }
        /// Move particle 2 to `x2` in one step.
        fn goto(&mut self, x2: V3) -> CpmOut {
            let l = x2.norm();
            let n = x2 / l;
            let v12 = (x2 - self.x2) / self.dt;
            self.st.eps_t = rotate_shear(self.st.eps_t, self.n_old, n, 0.0, self.dt);
            let d0 = self.st.d0;
            let de = shear_strain_increment(v12, n, self.dt, d0);
            let out = cpm_step(&self.p, &mut self.st, normal_strain(l, d0), de, self.dt);
            self.x2 = x2;
            self.n_old = n;
            out
        }
        /// Position for normal strain `e` and shear displacement (y, z) of 2 relative to 1.
        fn at(e: f64, uy: f64, uz: f64) -> V3 {
            V3::new(D0 * (1.0 + e), uy, uz)
        }
        /// |σ_T^trial| the next `goto(x2)` will see (no state change).
        fn trial(&self, x2: V3) -> f64 {
            let n = x2.normalize();
            let e = rotate_shear(self.st.eps_t, self.n_old, n, 0.0, self.dt)
                + shear_strain_increment((x2 - self.x2) / self.dt, n, self.dt, self.st.d0);
            self.p.kt * e.norm()
        }
        /// Position for normal strain `e` exactly (|x₂| = d₀(1+e)) and shear displacement y.
        fn at_exact(e: f64, uy: f64) -> V3 {
            let l = D0 * (1.0 + e);
            V3::new((l * l - uy * uy).sqrt(), uy, 0.0)
        }
        /// Ramp the normal strain (along x, no shear) to `e` in `n` equal steps.
        fn ramp(&mut self, e: f64, n: usize) -> Vec<(f64, CpmOut)> {
            let e0 = self.x2.x / D0 - 1.0;
            (1..=n)
                .map(|k| {
                    let ek = e0 + (e - e0) * k as f64 / n as f64;
                    (ek, self.goto(Self::at(ek, 0.0, 0.0)))
                })
                .collect()
        }
    }

    #[test]
    fn pair_parameters() {
        // K_N = k_N π min(r)²/d₀ (eq. 2.24, 2.92), K_T = α K_N; averages for unlike materials.
        let m = mat();
        let p = CpmPhys::new(&m, &m, R, 2.0 * R, D0);
        let a = std::f64::consts::PI * R * R;
        assert!(rel(p.area, a) < 1e-15);
        assert!(rel(p.stiff_n, 24e9 * a / D0) < 1e-15);
        assert!(rel(p.stiff_t, 0.2 * 24e9 * a / D0) < 1e-15);
        assert!(rel(p.eps_f, 3e-3) < 1e-15);
        let m2 = CpmMat {
            young: 36e9,
            poisson: 0.4,
            tan_phi: 0.6,
            ..m
        };
        let q = CpmPhys::new(&m, &m2, R, R, D0);
        assert!(rel(q.kn, 30e9) < 1e-15);
        assert!(rel(q.kt, 0.3 * 30e9) < 1e-15);
        assert!(rel(q.tan_phi, 0.7) < 1e-15);
        assert!(m.validate().is_ok());
        assert!(CpmMat {
            iso_prestress: 1.0,
            ..m
        }
        .validate()
        .is_err());
        assert!(rel(m.with_eps_fracture(2e-3).rel_ductility, 20.0) < 1e-15);
    }

    /// Parse a `params: (…)` body as a scene would (ron, the project's options).
    fn params(body: &str) -> CpmParams {
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(&format!("({body})"))
            .unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn defaults_are_yades_public_law() {
        // Yade ConcretePM.hpp (CpmMat, Law2_ScGeom_CpmPhys_Cpm), ElastMat, FrictMat defaults:
        // young 1e9, poisson 0.25, frictionAngle 0.5 rad, density 4800, damLaw 1 (exp.),
        // epsSoft 1 (≥ 0: off), relKnSoft 0.3, dmgTau = plTau = −1 (off), rate exponents 0,
        // isoPrestress 0, omegaThreshold 1, neverDamage false; the public law has the linear
        // Mohr–Coulomb surface only. sigmaT, epsCrackOnset, relDuctility: required.
        let m = params("sigmaT: 3e6, epsCrackOnset: 1e-4, relDuctility: 20")
            .resolve()
            .unwrap();
        assert_eq!(m, CpmMat::yade(3e6, 1e-4, 20.0));
        assert_eq!((m.young, m.poisson, m.density), (1e9, 0.25, 4800.0));
        assert_eq!(m.tan_phi, 0.5f64.tan());
        assert_eq!(m.dam_law, DamLaw::Exponential);
        assert_eq!(m.yield_surface, YieldSurface::MohrCoulomb);
        assert!(m.eps_soft >= 0.0 && m.rel_kn_soft == 0.3);
        assert!(m.dmg_tau <= 0.0 && m.pl_tau <= 0.0);
        assert_eq!((m.iso_prestress, m.omega_threshold), (0.0, 1.0));
        assert!(!m.never_damage);
        // The pair: no log surface (Y₀ = 0), no hardening, no rate terms.
        let p = CpmPhys::new(&m, &m, R, R, D0);
        assert!(p.y0 == 0.0 && p.eps_soft >= 0.0 && !p.visco_damage() && !p.visco_plastic());
        // Under compression the yield radius is Mohr–Coulomb: c + |σ_N| tan φ (eq. 3.19).
        let r = yield_radius(-10e6, 0.0, p.cohesion, p.tan_phi, p.y0);
        assert!(rel(r, 3e6 + 10e6 * 0.5f64.tan()) < 1e-15);
        // Compression far beyond the thesis' ε_s = −3e-3 stays elastic (k_N ε).
        let mut st = CpmState::new(D0, true);
        let o = cpm_step(&p, &mut st, -1e-2, V3::zeros(), 1e-6);
        assert!(rel(o.sigma_n, -1e9 * 1e-2) < 1e-15 && st.eps_n_pl == 0.0);
        // Required parameters.
        for body in [
            "epsCrackOnset: 1e-4, relDuctility: 20",
            "sigmaT: 3e6, relDuctility: 20",
            "sigmaT: 3e6, epsCrackOnset: 1e-4",
        ] {
            assert!(params(body).resolve().is_err(), "{body}");
        }
    }

    #[test]
    fn yade_aliases_and_friction_forms() {
        // Every Yade name maps onto its demhpc field; frictionAngle is in radians (tan taken,
        // Yade Ip2_CpmMat_CpmMat_CpmPhys); tan_phi is the alternative; both = error.
        let y = params(
            "young: 24e9, poisson: 0.2, frictionAngle: 0.6747409422, sigmaT: 3.5e6, \
             epsCrackOnset: 1e-4, relDuctility: 30, damLaw: Linear, epsSoft: -3e-3, \
             relKnSoft: 0.25, yieldLogSpeed: 0.2, dmgTau: 1000, dmgRateExp: 0.3, plTau: 1, \
             plRateExp: 0.1, isoPrestress: -1e6, omegaThreshold: 0.99, neverDamage: true, \
             density: 2500, equivStrainShearContrib: 0",
        )
        .resolve()
        .unwrap();
        let d = params(
            "young: 24e9, poisson: 0.2, friction_angle: 0.6747409422, cohesion: 3.5e6, \
             eps_cracking: 1e-4, rel_ductility: 30, dam_law: Linear, eps_soft: -3e-3, \
             rel_kn_soft: 0.25, yield_log_speed: 0.2, dmg_tau: 1000, dmg_rate_exp: 0.3, \
             pl_tau: 1, pl_rate_exp: 0.1, iso_prestress: -1e6, omega_threshold: 0.99, \
             never_damage: true, density: 2500",
        )
        .resolve()
        .unwrap();
        assert_eq!(y, d);
        assert!((y.tan_phi - 0.8).abs() < 1e-10); // atan(0.8) = 0.6747409422 rad
        assert_eq!(y.dam_law, DamLaw::Linear);
        let t = params("tan_phi: 0.8, sigmaT: 1, epsCrackOnset: 1e-4, relDuctility: 2")
            .resolve()
            .unwrap();
        assert_eq!(t.tan_phi, 0.8);
        // `friction` is the coefficient's name in every law (issue 32)
        let c = params("friction: 0.8, sigmaT: 1, epsCrackOnset: 1e-4, relDuctility: 2")
            .resolve()
            .unwrap();
        assert_eq!(c, t);
        let both = "tan_phi: 0.8, frictionAngle: 0.6, sigmaT: 1, epsCrackOnset: 1e-4, \
                    relDuctility: 2";
        assert_eq!(params(both).resolve().unwrap_err().0, "tan_phi");
        let deg = "friction_angle: 38.7, sigmaT: 1, epsCrackOnset: 1e-4, relDuctility: 2";
        assert_eq!(params(deg).resolve().unwrap_err().0, "friction_angle");
        let xi = "equivStrainShearContrib: 1, sigmaT: 1, epsCrackOnset: 1e-4, relDuctility: 2";
        assert!(params(xi).resolve().is_err());
        // The log surface is opt-in and needs Y₀ > 0.
        let lg = "yield_surface: Log, sigmaT: 1, epsCrackOnset: 1e-4, relDuctility: 2";
        let m = params(lg).resolve().unwrap();
        assert_eq!(CpmPhys::new(&m, &m, R, R, D0).y0, 0.1);
        assert!(params(&format!("{lg}, yieldLogSpeed: 0"))
            .resolve()
            .is_err());
    }

    #[test]
    fn linear_damage_law() {
        // Yade damLaw = 0 (ConcretePM.cpp funcG case 0): σ = (1−ω) k_N κ falls linearly from
        // k_N ε₀ at κ = ε₀ to 0 at κ = ε_f; ω = 1 beyond. Tol 1e-12.
        let (e0, ef) = (1e-4, 3e-3);
        assert_eq!(damage_linear(0.5e-4, e0, ef), 0.0);
        assert_eq!(damage_linear(e0, e0, ef), 0.0);
        for k in [2e-4, 1e-3, 2.5e-3, ef] {
            let s = (1.0 - damage_linear(k, e0, ef)) * k;
            let expect = e0 * (ef - k) / (ef - e0);
            assert!((s - expect).abs() < 1e-12 * e0, "{k}: {s} {expect}");
        }
        assert_eq!(damage_linear(1e-2, e0, ef), 1.0);
        let m = CpmMat {
            dam_law: DamLaw::Linear,
            ..mat()
        };
        let mut t = LawTester::new(&m, true, 1e-6);
        let o = t.ramp(1.55e-3, 155).last().unwrap().1;
        let expect = 24e9 * 1e-4 * (3e-3 - 1.55e-3) / (3e-3 - 1e-4);
        assert!(rel(o.sigma_n, expect) < 1e-9, "{} {expect}", o.sigma_n);
    }

    #[test]
    fn stretched_link_shear_has_no_distance_factor() {
        // Issue 20, the (r₁+r₂)/d question: a link with d = d₀ = 1.2 (r₁ + r₂) (R = 5 mm,
        // d₀ = 12 mm). Particle 2 translated by δ ⟂ n in one step, no spins: demhpc gives
        // F_T = K_T δ = k_T π R² δ/d₀ (thesis eq. 2.32–2.34, 2.44, 2.92, 3.30), Yade's default
        // ScGeom (avoidGranularRatcheting) would give (r₁+r₂)/d · K_T δ = K_T δ/1.2. Tol 1e-9.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        let delta = 1e-7;
        let o = t.goto(V3::new(D0, delta, 0.0));
        let kt = 0.2 * 24e9 * std::f64::consts::PI * R * R / D0;
        // |l| grows by δ²/2d₀ (a 1e-11 normal strain): compare the shear only.
        assert!(
            rel(o.f_t.norm(), kt * delta) < 1e-9,
            "{} {}",
            o.f_t.norm(),
            kt * delta
        );
        assert!(rel(o.f_t.norm(), 2.0 * R / D0 * kt * delta) > 0.19);
        assert!(rel(t.p.stiff_t, kt) < 1e-15);
        // The arms: d₁' = d₂' = d/2 for equal radii (not R), and they sum to d.
        let (a1, a2) = lever_arms(D0, R, R);
        assert_eq!((a1, a2), (0.5 * D0, 0.5 * D0));
        let (b1, b2) = lever_arms(D0, R, 2.0 * R);
        assert!(rel(b1 + b2, D0) < 1e-15 && rel(b1 - R, b2 - 2.0 * R) < 1e-12);
        // Objectivity without α: the stretched pair spinning rigidly about its midpoint
        // (v = ω × x, both spins ω) has no relative velocity at C. With the radii as arms and
        // no α it would have |ω| (d − r₁ − r₂); Yade's α removes that, as the arms do here.
        let w = V3::new(0.0, 0.0, 300.0);
        let n = V3::x();
        let (x1, x2) = (-n * (0.5 * D0), n * (0.5 * D0));
        let v12 = geom::relative_velocity(w.cross(&x1), w, a1, w.cross(&x2), w, a2, n);
        assert!(v12.norm() < 1e-12 * 300.0 * D0, "{v12}");
        let radii = geom::relative_velocity(w.cross(&x1), w, R, w.cross(&x2), w, R, n);
        assert!(rel(radii.norm(), 300.0 * (D0 - 2.0 * R)) < 1e-12);
        let alpha = 2.0 * R / D0;
        let yade = (w.cross(&x2) - w.cross(&x1)) * alpha - w.cross(&n) * R - w.cross(&n) * R;
        assert!(yade.norm() < 1e-12 * 300.0 * D0);
    }

    #[test]
    fn damage_function_values() {
        // digest §10.1 U12: ω(ε₀) = 0; ω(2e-4) = 1 − ½e^{−1/30} = 0.516392;
        // ω(1e-3) = 1 − 0.1 e^{−0.3} = 0.925918 (ε₀ = 1e-4, ε_f = 3e-3). Tol 1e-6.
        let (e0, ef) = (1e-4, 3e-3);
        assert_eq!(damage(e0, e0, ef), 0.0);
        assert_eq!(damage(0.5e-4, e0, ef), 0.0);
        assert!((damage(2e-4, e0, ef) - 0.516392).abs() < 1e-6);
        assert!((damage(1e-3, e0, ef) - 0.925918).abs() < 1e-6);
        assert!((damage(2e-4, e0, ef) - (1.0 - 0.5 * (-1.0f64 / 30.0).exp())).abs() < 1e-15);
    }

    #[test]
    fn tensile_peak_and_softening() {
        // Monotonic tension (thesis eq. 3.1–3.2, digest §4.3.2, U12):
        // σ(ε₀) = k_N ε₀ = 2.4e6 Pa is the maximum of the curve, force E ε₀ A;
        // σ(ε₀+ε_f) = k_N ε₀/e; on the softening branch σ = k_N ε₀ exp(−(κ−ε₀)/ε_f). Tol 1e-12.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        let kn_e0 = 24e9 * 1e-4;
        let curve = t.ramp(1e-4, 10);
        let (_, at_peak) = curve[9];
        assert!(rel(at_peak.sigma_n, kn_e0) < 1e-12);
        assert!(rel(at_peak.f_n, kn_e0 * t.p.area) < 1e-12);
        assert!(t.st.omega < 1e-12);
        let curve = t.ramp(3.1e-3, 300);
        for (e, o) in &curve {
            assert!(o.sigma_n < kn_e0);
            let expect = kn_e0 * (-(e - 1e-4) / 3e-3).exp();
            assert!(rel(o.sigma_n, expect) < 1e-10, "{e} {} {expect}", o.sigma_n);
        }
        let last = curve.last().unwrap().1;
        assert!(rel(last.sigma_n, kn_e0 / std::f64::consts::E) < 1e-12);
        assert!(!last.remove && !t.st.is_broken);
    }

    #[test]
    fn unloading_is_secant_to_origin_and_compression_undamaged() {
        // digest U13: after loading to κ, σ = (1−ω(κ)) k_N ε for 0 ≤ ε ≤ κ (secant to the
        // origin), κ and ω unchanged; compression uses the undamaged k_N. Tol 1e-12.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        t.ramp(5e-4, 50);
        let w = damage(5e-4, 1e-4, 3e-3);
        assert!(rel(t.st.omega, w) < 1e-12);
        for (e, o) in t.ramp(1e-5, 49) {
            assert!(rel(o.sigma_n, (1.0 - w) * 24e9 * e) < 1e-9);
        }
        let o = t.goto(LawTester::at(2.5e-4, 0.0, 0.0));
        assert!(rel(o.sigma_n, (1.0 - w) * 24e9 * 2.5e-4) < 1e-12);
        let o = t.goto(LawTester::at(-1e-4, 0.0, 0.0));
        assert!(rel(o.sigma_n, -24e9 * 1e-4) < 1e-12);
        assert!(rel(t.st.kappa, 5e-4) < 1e-12);
        // Reloading past κ resumes the softening envelope.
        let o = t.ramp(6e-4, 70).last().unwrap().1;
        assert!(rel(o.sigma_n, 24e9 * 1e-4 * (-(5e-4f64) / 3e-3).exp()) < 1e-10);
    }

    #[test]
    fn compressive_hardening() {
        // digest U14 (ε_s = −3e-3, K̃_s = 0.3): tangent K̃_s k_N beyond ε_s; on the branch
        // ε^pl = (1 − K̃_s)(ε − ε_s); elastic unloading with k_N; reloading rejoins the line.
        let m = mat();
        let kn = 24e9;
        let line = |e: f64| kn * (-3e-3 + 0.3 * (e + 3e-3));
        let mut t = LawTester::new(&m, true, 1e-6);
        let c = t.ramp(-5e-3, 500);
        // Elastic up to ε_s.
        let (e, o) = c[299];
        assert!(rel(e, -3e-3) < 1e-12 && rel(o.sigma_n, kn * e) < 1e-9);
        let (e1, o1) = c[399];
        let (e2, o2) = c[499];
        let slope = (o2.sigma_n - o1.sigma_n) / (e2 - e1);
        assert!(rel(slope, 0.3 * kn) < 1e-9, "{slope}");
        assert!(rel(o2.sigma_n, line(e2)) < 1e-12);
        assert!((t.st.eps_n_pl - 0.7 * (-5e-3 + 3e-3)).abs() < 1e-15);
        // Unload elastically to −4e-3: σ = k_N(ε − ε^pl).
        let o = t.goto(LawTester::at(-4e-3, 0.0, 0.0));
        assert!(rel(o.sigma_n, kn * (-4e-3 + 1.4e-3)) < 1e-9);
        let o = t.goto(LawTester::at(-4.5e-3, 0.0, 0.0));
        assert!(rel(o.sigma_n, kn * (-4.5e-3 + 1.4e-3)) < 1e-9);
        // Reload beyond the previous minimum: back on the line.
        let o = t.ramp(-6e-3, 100).last().unwrap().1;
        assert!(rel(o.sigma_n, line(-6e-3)) < 1e-12);
        assert!((t.st.eps_n_pl - 0.7 * (-6e-3 + 3e-3)).abs() < 1e-15);
        // No damage from compression.
        assert_eq!(t.st.omega, 0.0);
    }

    #[test]
    fn yield_surface_continuous_at_zero() {
        // digest U15: eq. 3.19 (σ_N ≥ 0) and eq. 3.23 (σ_N < 0) have the same value c_T0(1−ω)
        // and slope −tan φ at σ_N = 0. Value 1e-12 rel; one-sided difference slopes (h = 0.1 Pa)
        // within 1e-6 rel of −tan φ. In compression the log surface lies below the linear one
        // (ln(1+x) ≤ x: no shear locking, §3.2.4.1) and still grows without bound.
        let (c, tp, y0) = (3.5e6, 0.8, 0.1);
        for w in [0.0, 0.3, 0.9] {
            let r0 = yield_radius(0.0, w, c, tp, y0);
            assert!(rel(r0, c * (1.0 - w)) < 1e-12);
            let h = 0.1;
            let rp = yield_radius(h, w, c, tp, y0);
            let rm = yield_radius(-h, w, c, tp, y0);
            assert!(rel((rp - r0) / h, -tp) < 1e-6);
            assert!(rel((r0 - rm) / h, -tp) < 1e-6, "{}", (r0 - rm) / h);
            let s = -50e6;
            let rlog = yield_radius(s, w, c, tp, y0);
            assert!(rlog < c * (1.0 - w) - s * tp && rlog > r0);
            let expect = c * ((1.0 - w) + y0 * tp * (1.0 + 50e6 / (c * y0)).ln());
            assert!(rel(rlog, expect) < 1e-14);
        }
        // Tension cut-off: r = 0 at σ_N ≥ c_T0(1−ω)/tan φ.
        assert_eq!(yield_radius(c / tp * 1.01, 0.0, c, tp, y0), 0.0);
        // Y₀ ≤ 0: Mohr–Coulomb everywhere.
        assert!(rel(yield_radius(-1e6, 0.2, c, tp, 0.0), c * 0.8 + 0.8e6) < 1e-15);
    }

    #[test]
    fn beta_solver() {
        // digest U17: c = 1, N = 1 → β = −ln 2; c = 1, N = ½ → β = 2 ln((√5−1)/2);
        // N = 0.3: c = 1e-3 → −1.0002e-3, c = 100 → −15.35057, c = 1e6 → −46.05170;
        // residual < 1e-12, monotone convergence from 0 in ≤ 4 updates.
        let s = solve_beta(1.0, 1.0);
        assert!((s.beta + 2f64.ln()).abs() < 1e-12 && s.residual < 1e-12);
        assert!(s.iterations <= 4);
        let s = solve_beta(1.0, 0.5);
        let exact = 2.0 * ((5f64.sqrt() - 1.0) / 2.0).ln();
        assert!((s.beta - exact).abs() < 1e-10 && (exact + 0.962424).abs() < 1e-6);
        assert!(s.iterations <= 4);
        for (c, b) in [(1e-3, -1.0002e-3), (100.0, -15.35057), (1e6, -46.05170)] {
            let s = solve_beta(c, 0.3);
            assert!(s.residual < 1e-12 && s.iterations <= 4, "{c} {s:?}");
            assert!((s.beta - b).abs() < 1e-5 * b.abs(), "{c} {s:?}");
            // Independent check of the root: e^β + c e^{0.3β} = 1.
            assert!((s.beta.exp() + c * (0.3 * s.beta).exp() - 1.0).abs() < 1e-11);
        }
        // Reference by bisection for a spread of (c, N).
        for &c in &[1e-9, 1e-4, 0.1, 3.0, 1e3, 1e9] {
            for &nn in &[0.05, 0.3, 1.0, 2.5] {
                let f = |b: f64| (b.exp() + c * (nn * b).exp()).ln();
                let (mut lo, mut hi) = (-1e4f64, 0.0f64);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if f(mid) > 0.0 {
                        hi = mid
                    } else {
                        lo = mid
                    }
                }
                let s = solve_beta(c, nn);
                assert!(s.residual < 1e-12, "{c} {nn} {s:?}");
                assert!((s.beta - lo).abs() < 1e-9 * lo.abs().max(1e-3), "{c} {nn}");
            }
        }
        assert_eq!(solve_beta(0.0, 0.3).beta, 0.0);
    }

    /// Small deterministic generator for the random histories (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn sym(&mut self) -> f64 {
            2.0 * self.uniform() - 1.0
        }
    }

    #[test]
    fn shear_never_exceeds_yield_surface_on_random_history() {
        // |σ_T| ≤ r_pl(σ_N, ω) after every step (thesis eq. 3.21: the return lands exactly on
        // the surface), for a random walk in normal strain and 2-D shear displacement, cohesive
        // and non-cohesive. Tol 1e-12 rel. Also: the return is exact when it acts, and energy
        // bookkeeping is non-negative.
        for cohesive in [true, false] {
            let m = mat();
            let mut t = LawTester::new(&m, cohesive, 1e-6);
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            let (mut e, mut uy, mut uz) = (-1e-4, 0.0, 0.0);
            let mut plastic = 0;
            for _ in 0..20_000 {
                e = (e + 2e-5 * rng.sym()).clamp(-4e-3, 3e-4);
                uy += 2e-7 * rng.sym();
                uz += 2e-7 * rng.sym();
                let o = t.goto(LawTester::at(e, uy, uz));
                if o.remove {
                    assert!(!cohesive && t.st.eps_n > 0.0);
                    t.st = CpmState::new(D0, cohesive);
                    continue;
                }
                let r = yield_radius(o.sigma_n, t.st.omega, 3.5e6, 0.8, 0.1);
                let s = o.sigma_t.norm();
                assert!(s <= r * (1.0 + 1e-12) + 1e-6, "{s} > {r}");
                if (s - r).abs() <= 1e-9 * r {
                    plastic += 1;
                }
                assert!(stored_energy(&t.p, &t.st) >= 0.0);
                // ε_T stays in the contact plane and gives σ_T.
                let n = t.x2.normalize();
                assert!(t.st.eps_t.dot(&n).abs() < 1e-12 * t.st.eps_t.norm().max(1e-30));
                assert!((o.sigma_t - t.st.eps_t * t.p.kt).norm() <= 1e-9 * s.max(1.0));
            }
            assert!(
                plastic > 100,
                "the history must reach the surface: {plastic}"
            );
        }
    }

    #[test]
    fn shear_slip_saturates_at_radius() {
        // Constant compression ε = −1e-4 (σ_N = −2.4e6 Pa, no damage): monotonic shear along
        // +y saturates at r = c(1 + Y₀ tanφ ln(1 + 2.4e6/(c Y₀))); the force on 1 points +y
        // (friction on 1 follows 2's sliding, digest §0.2). Tol 1e-12.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        t.goto(LawTester::at(-1e-4, 0.0, 0.0));
        let mut o = CpmOut::default();
        for k in 1..=400 {
            o = t.goto(LawTester::at_exact(-1e-4, 1e-7 * k as f64));
        }
        let c = 3.5e6;
        let r: f64 = c * (1.0 + 0.1 * 0.8 * (1.0f64 + 24e9 * 1e-4 / (c * 0.1)).ln());
        assert!(o.f_t.y > 0.0);
        assert!(rel(o.sigma_n, -2.4e6) < 1e-9);
        assert!(rel(o.sigma_t.norm(), yield_radius(o.sigma_n, 0.0, c, 0.8, 0.1)) < 1e-12);
        assert!(rel(o.sigma_t.norm(), r) < 1e-9);
        let f = o.force(&t.x2.normalize());
        assert!(rel(f.dot(&t.x2.normalize()), o.f_n) < 1e-12);
    }

    #[test]
    fn non_cohesive_contact_carries_no_tension() {
        // thesis §3.2.1: ω = 1; compression is elastic k_N ε, any tension removes the contact
        // with zero force; the shear capacity at σ_N = 0 is 0.
        let m = mat();
        let mut t = LawTester::new(&m, false, 1e-6);
        let o = t.goto(LawTester::at(-2e-4, 0.0, 0.0));
        assert!(rel(o.sigma_n, -24e9 * 2e-4) < 1e-12 && !o.remove);
        assert_eq!(t.st.omega, 1.0);
        assert_eq!(yield_radius(0.0, 1.0, 3.5e6, 0.8, 0.1), 0.0);
        let o = t.goto(LawTester::at(1e-6, 0.0, 0.0));
        assert!(o.remove && t.st.is_broken);
        assert_eq!(o.sigma_n, 0.0);
        assert_eq!(o.force(&V3::x()), V3::zeros());
        // A cohesive link is never removed with the default threshold (1), even when nearly
        // fully damaged; with threshold 0.9 it is.
        let mut t = LawTester::new(&m, true, 1e-6);
        let o = t.ramp(1e-2, 100).last().unwrap().1;
        assert!(!o.remove && t.st.omega > 0.99 && o.sigma_n > 0.0);
        let m9 = CpmMat {
            omega_threshold: 0.9,
            ..m
        };
        let mut t = LawTester::new(&m9, true, 1e-6);
        let c = t.ramp(1e-3, 100);
        let first = c.iter().position(|(_, o)| o.remove).unwrap();
        assert!(damage(c[first].0, 1e-4, 3e-3) > 0.9);
        assert!(damage(c[first - 1].0, 1e-4, 3e-3) <= 0.9);
    }

    #[test]
    fn isotropic_confinement_shift() {
        // digest U16: σ₀ < 0 and no strain → returned σ_N = 0 (eq. 3.16–3.17), both branches of
        // eq. 3.16; the yield radius sees the confined stress σ₀. Tol 1e-12 rel of σ₀.
        for s0 in [-10e6, -100e6] {
            let m = CpmMat {
                iso_prestress: s0,
                ..mat()
            };
            let mut t = LawTester::new(&m, true, 1e-6);
            let o = t.goto(LawTester::at(0.0, 0.0, 0.0));
            assert!(o.sigma_n.abs() < 1e-12 * s0.abs(), "{}", o.sigma_n);
            let shift = confinement_shift(&t.p);
            if s0 > 24e9 * -3e-3 {
                assert!(rel(shift, s0 / 24e9) < 1e-15);
            } else {
                let expect = -3e-3 + (s0 - 24e9 * -3e-3) / (24e9 * 0.3);
                assert!(rel(shift, expect) < 1e-15);
                assert!(t.st.eps_n_pl < 0.0); // sits on the hardening line
            }
            // Shear capacity is that of σ_N = σ₀.
            let mut o = o;
            for k in 1..=2000 {
                o = t.goto(LawTester::at_exact(0.0, 1e-7 * k as f64));
            }
            let r = yield_radius(s0, 0.0, 3.5e6, 0.8, 0.1);
            assert!(rel(o.sigma_t.norm(), r) < 1e-9, "{} {r}", o.sigma_t.norm());
        }
    }

    /// Monotonic tension to ε = 1e-3 at strain rate `rate` with `m`; returns peak σ_N and the
    /// final state.
    fn tension_at_rate(m: &CpmMat, rate: f64) -> (f64, Vec<f64>) {
        let n = 2000;
        let dt = 1e-3 / (rate * n as f64);
        let mut t = LawTester::new(m, true, dt);
        let c = t.ramp(1e-3, n);
        let s: Vec<f64> = c.iter().map(|(_, o)| o.sigma_n).collect();
        (s.iter().cloned().fold(f64::MIN, f64::max), s)
    }

    #[test]
    fn visco_damage_off_is_rate_independent() {
        // digest U18: τ_d = 0 (off) reproduces the rate-independent law exactly at any rate
        // (bit-identical); τ_d → 0 converges to it: the overstress is ≈ k_N ε₀ (τ_d ε̇_d)^M_d,
        // so τ_d = 1e-20 s, M_d = 0.3, ε̇ = 1e-4/s gives ≈ 6e-8 k_N ε₀ (checked to 1e-6).
        let m = mat();
        let (p1, s1) = tension_at_rate(&m, 1e-4);
        let (_, s2) = tension_at_rate(&m, 1e2);
        assert_eq!(s1, s2);
        assert!(rel(p1, 24e9 * 1e-4) < 1e-9);
        let mv = CpmMat {
            dmg_tau: 1e-20,
            dmg_rate_exp: 0.3,
            ..m
        };
        let (_, s3) = tension_at_rate(&mv, 1e-4);
        for (a, b) in s1.iter().zip(&s3) {
            assert!((a - b).abs() <= 1e-6 * 2.4e6, "{a} {b}");
        }
        // M_d = 0 also means off.
        let (_, s4) = tension_at_rate(&CpmMat { dmg_tau: 1.0, ..m }, 1.0);
        assert_eq!(s1, s4);
    }

    #[test]
    fn visco_damage_raises_strength_with_rate() {
        // Thesis fig. 3.4 (τ_d = 1 s, M_d = 0.1): the stress never falls below the
        // rate-independent curve, the peak grows with the strain rate; before cracking
        // (ε ≤ ε₀) there is no overstress (ω = 0 ⇒ ε_d target 0).
        let base = mat();
        let m = CpmMat {
            dmg_tau: 1.0,
            dmg_rate_exp: 0.1,
            ..base
        };
        let (_, ri) = tension_at_rate(&base, 1.0);
        let mut last_peak = 24e9 * 1e-4;
        for rate in [1e-4, 1e-2, 1.0] {
            let (peak, s) = tension_at_rate(&m, rate);
            for (k, (a, b)) in ri.iter().zip(&s).enumerate() {
                assert!(b >= a, "{rate} {k}");
                if k < 199 {
                    assert_eq!(a, b);
                }
            }
            assert!(peak > last_peak, "{rate}: {peak} <= {last_peak}");
            last_peak = peak;
        }
        // Strain held after loading: the overstress relaxes monotonically, stays ≥ 0.
        let mut t = LawTester::new(&m, true, 1e-3);
        t.ramp(5e-4, 10);
        let ri = (1.0 - t.st.omega) * 24e9 * 5e-4;
        let mut prev = f64::MAX;
        for _ in 0..50 {
            let o = t.goto(LawTester::at(5e-4, 0.0, 0.0));
            assert!(o.sigma_n >= ri * (1.0 - 1e-12) && o.sigma_n <= prev);
            prev = o.sigma_n;
        }
        // Unloading removes the overstress at once (eq. 3.11).
        let o = t.goto(LawTester::at(1e-4, 0.0, 0.0));
        assert!(rel(o.sigma_n, (1.0 - t.st.omega) * 24e9 * 1e-4) < 1e-9);
    }

    #[test]
    fn visco_plastic_scale() {
        // digest U19: with visco-plasticity the returned |σ_T| lies in [r_pl, |σ_T^t|]
        // (s ∈ [r/|σ^t|, 1], eq. 3.28); τ_pl ≤ 0 gives the plain return |σ_T| = r_pl.
        let base = mat();
        let m = CpmMat {
            pl_tau: 1e-3,
            pl_rate_exp: 0.3,
            ..base
        };
        for (mm, visco) in [(m, true), (base, false)] {
            let mut t = LawTester::new(&mm, true, 1e-6);
            t.goto(LawTester::at(-1e-4, 0.0, 0.0));
            for k in 1..=300 {
                let x2 = LawTester::at_exact(-1e-4, 1e-7 * k as f64);
                let trial = t.trial(x2);
                let o = t.goto(x2);
                let r = yield_radius(o.sigma_n, 0.0, 3.5e6, 0.8, 0.1);
                let s = o.sigma_t.norm();
                if trial <= r {
                    assert!(rel(s, trial) < 1e-14);
                } else if visco {
                    assert!(s >= r * (1.0 - 1e-12) && s <= trial * (1.0 + 1e-12));
                } else {
                    assert!(rel(s, r) < 1e-12);
                }
            }
            if visco {
                let r = yield_radius(t.st.sigma_n, 0.0, 3.5e6, 0.8, 0.1);
                assert!(t.st.sigma_t.norm() > r * (1.0 + 1e-6));
            }
        }
    }

    #[test]
    fn elastic_energy_matches_spring() {
        // Elastic tension ε < ε₀: E_el = ½ K_N u_N², u_N = ε d₀; pure shear strain ε_T:
        // ½ K_T u_T². Tol 1e-12.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        let o = t.goto(LawTester::at(5e-5, 0.0, 0.0));
        assert!(!o.remove);
        let u = 5e-5 * D0;
        assert!(rel(stored_energy(&t.p, &t.st), 0.5 * t.p.stiff_n * u * u) < 1e-9);
        let p = t.p;
        let mut st = CpmState::new(D0, true);
        let old = st;
        let de = V3::new(0.0, 1e-5, 0.0);
        cpm_step(&p, &mut st, 0.0, de, 1e-6);
        let ut = 1e-5 * D0;
        assert!(rel(stored_energy(&p, &st), 0.5 * p.stiff_t * ut * ut) < 1e-12);
        let (slip, normal) = step_dissipation(&p, Some(&old), de, &st, false);
        assert!(slip.abs() < 1e-12 * stored_energy(&p, &st) && normal == 0.0);
    }

    /// Runs a link with pair constants `p` (at rest at d₀, cohesive) along the strain path
    /// `path` (ε_N, Δε_T per step) with energy tracking: (slip, normal dissipation, stored
    /// energy at the end) [J]; no step dissipates a negative energy.
    fn dissipation_along(p: &CpmPhys, path: impl Iterator<Item = (f64, V3)>) -> (f64, f64, f64) {
        let mut st = CpmState::new(D0, true);
        let (mut slip, mut normal) = (0.0, 0.0);
        for (eps_n, de) in path {
            let old = st;
            let o = cpm_step(p, &mut st, eps_n, de, 1e-6);
            assert!(!o.remove);
            let (s, n) = step_dissipation(p, Some(&old), de, &st, false);
            // (round-off: of the energy at a strain of 1e-4)
            let tiny = -1e-12 * p.area * D0 * p.kn * 1e-8;
            assert!(s >= tiny && n >= tiny, "{s} {n}");
            slip += s;
            normal += n;
        }
        (slip, normal, stored_energy(p, &st))
    }

    fn ramp(a: f64, b: f64, n: usize) -> impl Iterator<Item = (f64, V3)> {
        (1..=n).map(move |k| (a + (b - a) * k as f64 / n as f64, V3::zeros()))
    }

    #[test]
    fn damage_dissipates_the_area_under_the_softening_curve() {
        // A link stretched to ε₁ = 10 ε₀ and unloaded to 0 (secant, thesis eq. 3.1) has
        // dissipated the area under the loading curve, ∫ k_N ε (1 − ω(ε)) dε = ½ k_N ε₀² +
        // k_N ε₀ ε_f (1 − exp(−(ε₁ − ε₀)/ε_f)) for the exponential law (eq. 3.2), less the
        // triangle ½ (1 − ω₁) k_N ε₁² the unloading gave back; nothing stays stored. Volume
        // A d₀. Tol 1e-6 (trapezoid steps of ε₀/2000).
        let m = mat();
        let p = CpmPhys::new(&m, &m, R, R, D0);
        let (kn, e0, ef) = (p.kn, p.eps0, p.eps_f);
        let e1 = 10.0 * e0;
        let path = ramp(0.0, e1, 20_000).chain(ramp(e1, 0.0, 20_000));
        let (slip, normal, stored) = dissipation_along(&p, path);
        let w1 = damage(e1, e0, ef);
        let area = 0.5 * kn * e0 * e0 + kn * e0 * ef * (1.0 - (-(e1 - e0) / ef).exp());
        let want = p.area * D0 * (area - 0.5 * (1.0 - w1) * kn * e1 * e1);
        assert!(rel(normal, want) < 1e-6, "{normal:e} vs {want:e}");
        assert_eq!(slip, 0.0);
        assert!(stored.abs() < 1e-12 * want, "{stored:e}");
        // elastic loading and unloading dissipate nothing
        let (_, normal, stored) =
            dissipation_along(&p, ramp(0.0, 0.9 * e0, 100).chain(ramp(0.9 * e0, -e0, 100)));
        assert!(normal.abs() < 1e-12 * stored, "{normal:e} of {stored:e}");
    }

    #[test]
    fn compressive_plasticity_dissipates_the_hysteresis_area() {
        // Compression to ε₁ = −5e-3 on the hardening line σ = k_N (ε_s + K̃_s (ε − ε_s))
        // (thesis §3.2.3.1; ε_s = −3e-3, K̃_s = 0.3), elastic unloading to σ = 0: dissipated
        // = ½ k_N ε_s² + k_N (ε_s (ε₁ − ε_s) + ½ K̃_s (ε₁ − ε_s)²) − ½ σ₁²/k_N. Tol 1e-9.
        let m = mat();
        let p = CpmPhys::new(&m, &m, R, R, D0);
        let (kn, es, ks, e1) = (p.kn, p.eps_soft, p.rel_kn_soft, -5e-3);
        let s1 = kn * (es + ks * (e1 - es));
        let e_pl = e1 - s1 / kn;
        let path = ramp(0.0, e1, 5_000).chain(ramp(e1, e_pl, 5_000));
        let (_, normal, stored) = dissipation_along(&p, path);
        let area = 0.5 * kn * es * es + kn * (es * (e1 - es) + 0.5 * ks * (e1 - es).powi(2));
        let want = p.area * D0 * (area - 0.5 * s1 * s1 / kn);
        assert!(rel(normal, want) < 1e-9, "{normal:e} vs {want:e}");
        assert!(stored.abs() < 1e-9 * want, "{stored:e}");
    }

    #[test]
    fn shear_slip_dissipates_radius_times_slide() {
        // Under a constant compression ε_N = −1e-4 the shear stress saturates at the yield
        // radius r (eq. 3.23); sheared on to ε_T, the slider has taken A d₀ r (ε_T − r/k_T),
        // and the spring keeps ½ A d₀ r²/k_T. Tol 1e-6 on the slip (the trapezoid of the step
        // that reaches the surface: measured 4.5e-8), 1e-9 on the spring.
        let m = mat();
        let p = CpmPhys::new(&m, &m, R, R, D0);
        let de = V3::new(0.0, 1e-6, 0.0);
        let n = 4000;
        let path = (0..n).map(|k| (-1e-4, if k == 0 { V3::zeros() } else { de }));
        let (slip, normal, stored) = dissipation_along(&p, path);
        let r = yield_radius(-1e-4 * p.kn, 0.0, p.cohesion, p.tan_phi, p.y0);
        let eps_t = 1e-6 * (n - 1) as f64;
        let vol = p.area * D0;
        let want = vol * r * (eps_t - r / p.kt);
        assert!(rel(slip, want) < 1e-6, "{slip:e} vs {want:e}");
        assert!(normal.abs() < 1e-12 * slip);
        let spring = vol * 0.5 * (r * r / p.kt + p.kn * 1e-8);
        assert!(rel(stored, spring) < 1e-9, "{stored:e} vs {spring:e}");
    }

    #[test]
    fn love_weber_single_contact() {
        // σ_ij = ½(l_i f_j + l_j f_i)/V (thesis eq. 3.37 / D.1): a tensile contact along x with
        // force F on 1 towards 2 gives σ_xx = l F/V > 0; a shear force F_y gives
        // σ_xy = σ_yx = ½ l F_y/V.
        let l = V3::new(2e-3, 0.0, 0.0);
        let s = love_weber(&l, &V3::new(10.0, 4.0, 0.0), 1e-6);
        assert!(rel(s[(0, 0)], 2e-3 * 10.0 / 1e-6) < 1e-15);
        assert!(rel(s[(0, 1)], 0.5 * 2e-3 * 4.0 / 1e-6) < 1e-15);
        assert_eq!(s[(0, 1)], s[(1, 0)]);
        assert_eq!(s[(1, 1)], 0.0);
        // With the CPM force: tension (σ_N > 0) gives a positive macroscopic σ_xx.
        let m = mat();
        let mut t = LawTester::new(&m, true, 1e-6);
        let o = t.goto(LawTester::at(5e-5, 0.0, 0.0));
        let s = love_weber(&t.x2, &o.force(&V3::x()), 1.0);
        assert!(s[(0, 0)] > 0.0);
    }
}
