//! Constitutive laws: pure functions of (geometry, pair parameters, history) → force.
//!
//! The frictional laws share one history layout ([`super::store::FrictState`]: the normal of the
//! previous step, a shear vector and four pair constants in [`crate::material::FrictPhys`]) and
//! one scalar step function each ([`FrictLaw::step`]); the batched contact loop
//! (`contact/batch.rs`) and the wall loop run that function lane by lane, monomorphised per
//! law. Adding a frictional law is a new file here, an impl of [`FrictLaw`] and one arm of
//! [`FrictLawKind`] (plus its material in `material.rs`). CPM keeps its own per-pair path
//! (`cpm.rs`: more state, per-pair branches).
pub mod cpm;
pub mod hertz;
pub mod hooke;
pub mod linear;
pub mod rolling;

use super::store::FrictState;
use crate::material::FrictPhys;
use crate::V3;

/// `a` where `c`, else `b`, component-wise: a select, not a branch, so that the batch kernel
/// vectorises the laws that use it.
#[inline(always)]
pub fn select3(c: bool, a: V3, b: V3) -> V3 {
    V3::new(
        if c { a.x } else { b.x },
        if c { a.y } else { b.y },
        if c { a.z } else { b.z },
    )
}

/// One step of an elastic–frictional pair law, written without branches (selects only) so
/// that the batch kernel vectorises it; the scalar callers get the same bits.
pub trait FrictLaw {
    /// Force on particle 1 and the new shear history, from the pair constants `p`, the shear
    /// history `fs` and normal `n_old` of the previous step, the current unit normal `n` (1→2),
    /// the normal displacement `u_n` (< 0 in compression), the relative velocity `v12` of 2's
    /// material point with respect to 1's at the contact, the twist n·(ω1 + ω2), Δt and the
    /// effective radius R* = r1 r2/(r1 + r2) (a wall: the sphere's radius; adhesion).
    /// `self` holds the law's scene-wide constants (LAMMPS' pair coefficients; none for the
    /// laws whose constants are all per pair).
    #[allow(clippy::too_many_arguments)]
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
        r_eff: f64,
    ) -> (V3, V3);

    /// The tangential stiffness k_T [N/m] of a contact with pair constants `p` at normal
    /// displacement `u_n`: the rolling spring of the EPSD model is k_T R_eff² (`rolling.rs`).
    /// The constant `ks` of the linear laws (Cundall–Strack's K_T, LAMMPS' kt) unless a law
    /// says otherwise.
    #[inline(always)]
    fn tangential_stiffness(&self, p: &FrictPhys, _u_n: f64) -> f64 {
        p.ks
    }

    /// The secant normal stiffness k_N = F_N^el / δ [N/m] at normal displacement `u_n`: the
    /// rolling spring of LIGGGHTS' `epsd` model is 2.25 k_N μ_r² R_eff² (`rolling.rs`). The
    /// constant `kn` of the linear laws unless a law says otherwise.
    #[inline(always)]
    fn normal_stiffness(&self, p: &FrictPhys, _u_n: f64) -> f64 {
        p.kn
    }

    /// Energy tracking (scene `energy: true`): the dissipation of one step with the inputs
    /// of [`Self::step`] and its new shear history `fs_new` — (frictional slip work, viscous
    /// work) [J], or `None` for a law that does not split them yet (the scene refuses energy
    /// tracking then).
    #[allow(clippy::too_many_arguments)]
    fn step_energy(
        &self,
        _p: &FrictPhys,
        _fs: V3,
        _n_old: V3,
        _n: V3,
        _v12: V3,
        _twist: f64,
        _dt: f64,
        _fs_new: V3,
    ) -> Option<(f64, f64)> {
        None
    }

    /// [`Self::step`] on a pair's stored history `st` (shear vector and normal updated in
    /// place): the force on particle 1. The scalar callers' form (walls, tests).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        st: &mut FrictState,
        n: V3,
        u_n: f64,
        v12: V3,
        twist: f64,
        dt: f64,
        r_eff: f64,
    ) -> V3 {
        let (f, fs) = self.step(&st.phys, st.fs, st.n_old, n, u_n, v12, twist, dt, r_eff);
        st.fs = fs;
        st.n_old = n;
        f
    }
}

/// The frictional law of a scene (all its frictional materials share one family; CPM scenes
/// have their own loop). A closed set: one `match` where a loop is chosen (the batch loop,
/// monomorphised per law), or per contact for the scalar callers ([`Self::apply`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum FrictLawKind {
    /// Linear Cundall–Strack (`Frict` materials, [`linear::CundallStrack`]).
    #[default]
    CundallStrack,
    /// Hertz–Mindlin with restitution damping and optional DMT adhesion (`Hertz` materials,
    /// [`hertz::HertzMindlin`]).
    HertzMindlin(hertz::HertzMindlin),
    /// LAMMPS `pair gran/hooke/history` (`Hooke` materials, [`hooke::Hooke`]): constant kn, kt,
    /// γ_N, γ_T, Coulomb on the total or the elastic normal force.
    Hooke(hooke::Hooke),
}

impl FrictLawKind {
    /// [`FrictLaw::apply`] of this law (the scalar callers: plane walls, mesh facets).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn apply(
        &self,
        st: &mut FrictState,
        n: V3,
        u_n: f64,
        v12: V3,
        twist: f64,
        dt: f64,
        r_eff: f64,
    ) -> V3 {
        match self {
            FrictLawKind::CundallStrack => {
                linear::CundallStrack.apply(st, n, u_n, v12, twist, dt, r_eff)
            }
            FrictLawKind::HertzMindlin(h) => h.apply(st, n, u_n, v12, twist, dt, r_eff),
            FrictLawKind::Hooke(h) => h.apply(st, n, u_n, v12, twist, dt, r_eff),
        }
    }

    /// ([`FrictLaw::tangential_stiffness`], [`FrictLaw::normal_stiffness`]) of this law.
    #[inline(always)]
    pub fn stiffnesses(&self, p: &FrictPhys, u_n: f64) -> (f64, f64) {
        fn of<L: FrictLaw>(l: &L, p: &FrictPhys, u_n: f64) -> (f64, f64) {
            (l.tangential_stiffness(p, u_n), l.normal_stiffness(p, u_n))
        }
        match self {
            FrictLawKind::CundallStrack => of(&linear::CundallStrack, p, u_n),
            FrictLawKind::HertzMindlin(h) => of(h, p, u_n),
            FrictLawKind::Hooke(h) => of(h, p, u_n),
        }
    }
}
