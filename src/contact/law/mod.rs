//! Constitutive laws: pure functions of (geometry, pair parameters, history) → force.
//!
//! The frictional laws share one history layout ([`super::store::FrictState`]: the normal of the
//! previous step, a shear vector and four pair constants in [`FrictPhys`]) and
//! one scalar step function each ([`FrictLaw::step`]); the batched contact loop
//! (`contact/batch.rs`) and the wall loop run that function lane by lane, monomorphised per
//! law. Adding a frictional law is a new file here with an impl of [`FrictLaw`], one arm of
//! [`FrictLawKind`] (and of its matches below), and the law's material in `<law>/material.rs`
//! (scene form, validation, mixing: a [`material::LawMaterial`]; docs/ARCHITECTURE.md "Adding
//! a frictional law"). CPM keeps its own per-pair path (`cpm.rs`: more state, per-pair
//! branches).
pub mod cpm;
pub mod hertz;
pub mod hooke;
pub mod linear;
pub mod material;
pub mod mix;
pub mod rolling;

use crate::V3;

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

/// The history every sphere contact carries (Yade `IPhys` + the state of `ScGeom`), stored
/// per pair in `PairList::state`; the CPM law keeps more in `PairList::cpm`. Kept apart
/// so that the frictional contact loop streams 80 bytes per contact instead of 128 (chute:
/// ~15 000 histories per step).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrictState {
    /// Normal of the previous step (for the shear rotation).
    pub n_old: V3,
    /// Shear force F_T acting on particle 1. For a CPM contact the elastic shear strain ε_T
    /// instead (and `phys` is unused).
    pub fs: V3,
    pub phys: FrictPhys,
}

impl FrictState {
    pub fn new(phys: FrictPhys, n: V3) -> Self {
        FrictState {
            n_old: n,
            fs: V3::zeros(),
            phys,
        }
    }
}

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

/// One contact's step as the energy tracking sees it (scene `energy: true`): the inputs of
/// [`FrictLaw::step`] (pair constants, old history and normal, normal, u_N, v₁₂, twist, R*),
/// its outputs (new history `fs_new`, force `f` on particle 1) and, for rolling resistance,
/// the angular velocities, the old moment history and the rotational inertia about the
/// contact.
#[derive(Clone, Copy, Debug)]
pub struct ContactStep {
    pub p: FrictPhys,
    pub fs: V3,
    pub n_old: V3,
    pub n: V3,
    pub u_n: f64,
    pub v12: V3,
    pub twist: f64,
    pub r_eff: f64,
    pub fs_new: V3,
    pub f: V3,
    pub w: (V3, V3),
    pub m_roll: V3,
    pub i_r: f64,
}

/// The slip work of one step, consistent with the leapfrog: the spring force `old` (last
/// step's, carried into this step's frame) grew by the step's shear increment to `trial`,
/// and Coulomb's limit returned it to `new` (stiffness k). The leapfrog does the trapezoidal
/// work ½ (old + new) · Δu on the increment Δu = (trial − old)/k (its kinetic energy changes
/// by F_n · ½ (Δx_n + Δx_{n+1})), while the spring's energy changes by ½ (|new|² − |old|²)/k;
/// the difference, ½ (old + new) · (trial − new)/k, went to the slider. At a steady limit
/// (old = new) it is Yade's `plastDissip`, (trial − new) · new/k; when the limit falls with
/// the normal force it is the spring's release ½ (|old|² − |new|²)/k, which Yade's form
/// misses. Measured (tests/suite/energy.rs, Yade's form in brackets): the `Hooke` squeezed box closes
/// to 5e-5 (2.6e-3) of the input work, its oblique sliding impact to 4.4e-4 (2.4e-3); the
/// Cundall–Strack and Hertz cases are within their dashpots' first-order error either way.
/// Zero without slip (trial = new) or without a spring.
#[inline(always)]
pub fn slip_work(old: V3, trial: V3, new: V3, k: f64) -> f64 {
    // computed either way and selected (the batch kernel vectorises it)
    let w = 0.5 * (old + new).dot(&(trial - new)) / k;
    if k > 0.0 {
        w
    } else {
        0.0
    }
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

    /// How much the normal force of a contact at normal displacement `u_n` changes per unit of
    /// a normal move made within one step of length `dt` [N/m]: the spring's tangent
    /// stiffness dF_N/dδ plus the dashpot's c_N/Δt (a move d in one step is a normal velocity
    /// d/Δt too). What the servo walls divide a force error by (`engines::servo_wall`): with
    /// the secant spring alone they moved a viscous contact by many times what its force
    /// answered, and flipped every step (issue 32). The linear laws' kn + cn/Δt unless a law
    /// says otherwise.
    #[inline(always)]
    fn normal_response(&self, p: &FrictPhys, _u_n: f64, dt: f64) -> f64 {
        p.kn + p.cn / dt
    }

    /// Energy tracking (scene `energy: true`): the dissipation of one step `c` — (frictional
    /// slip work, viscous work) [J], both ≥ 0 for a passive law — or `None` for a law that
    /// does not split them (the scene refuses energy tracking then). Slip work is the energy
    /// the shear spring gives up to Coulomb's limit ([`slip_work`]); viscous work is each
    /// dashpot's force times its velocity, over Δt.
    fn step_energy(&self, _c: &ContactStep, _dt: f64) -> Option<(f64, f64)> {
        None
    }

    /// [`Self::step`] and its dissipation ([`Self::step_energy`], NaN where the law does not
    /// split it) in one pass: energy tracking's batch kernel. Both inlined into the kernel,
    /// the compiler computes what they share once (the trial force: Hertz's δ^{1/4}, the
    /// carried history), so the terms cost a fraction of a second pass (chute_hertz: energy
    /// tracking's contact loop 2.1x → 1.x the plain one, measured); the same bits as the two.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn step_tracked(
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
    ) -> (V3, V3, [f64; 2]) {
        let (f, fs_new) = self.step(p, fs, n_old, n, u_n, v12, twist, dt, r_eff);
        let c = ContactStep {
            p: *p,
            fs,
            n_old,
            n,
            u_n,
            v12,
            twist,
            r_eff,
            fs_new,
            f,
            w: (V3::zeros(), V3::zeros()),
            m_roll: V3::zeros(),
            i_r: 0.0,
        };
        let (slip, visc) = self.step_energy(&c, dt).unwrap_or((f64::NAN, f64::NAN));
        (f, fs_new, [slip, visc])
    }

    /// Energy tracking: the elastic energy [J] stored in a contact with pair constants `p`,
    /// normal displacement `u_n` (< 0 in compression), shear history `hist` (the law's
    /// [`Self::step`] history) and effective radius `r_eff`. The linear springs' ½ K_N u_N² +
    /// ½ |F_T|²/K_T (the history is the shear force, Yade's `elastPotential`) unless a law
    /// says otherwise.
    #[inline(always)]
    fn elastic_energy(&self, p: &FrictPhys, u_n: f64, hist: V3, _r_eff: f64) -> f64 {
        let u_n = u_n.min(0.0);
        let shear = match p.ks > 0.0 {
            true => 0.5 * hist.norm_squared() / p.ks,
            false => 0.0,
        };
        0.5 * p.kn * u_n * u_n + shear
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

    /// Coulomb's limit on the tangential force of a contact in its last step (outputs: the
    /// sliding flag; issue 32): μ times the normal force the law limits by, from pair
    /// constants `p`, the force's component `f_n` = F · n along the law's normal (< 0 in
    /// compression: the total normal force, F = F_N n + F_T) and, where the law limits by the
    /// elastic part alone and a dashpot makes the two differ, the normal displacement of that
    /// step `u_n()` (read only then). Cundall–Strack: μ |K_N u_N|; Hertz: μ |min(F_N, 0)| (the
    /// total, DMT attraction included); Hooke: μ |F_N| or, with `coulomb: Elastic`, μ |kn u_N|.
    pub fn coulomb_limit(&self, p: &FrictPhys, f_n: f64, u_n: impl FnOnce() -> f64) -> f64 {
        let elastic = |damped: bool| match damped {
            true => (p.kn * u_n()).abs(),
            false => f_n.abs(), // no dashpot: the normal force is the elastic one
        };
        p.tan_phi
            * match self {
                FrictLawKind::CundallStrack => elastic(p.cn != 0.0),
                FrictLawKind::HertzMindlin(_) => f_n.min(0.0).abs(),
                FrictLawKind::Hooke(h) if h.coulomb_total => f_n.abs(),
                FrictLawKind::Hooke(h) => elastic(h.gamma_n != 0.0 && p.cn != 0.0),
            }
    }

    /// [`FrictLaw::elastic_energy`] of this law.
    pub fn elastic_energy(&self, p: &FrictPhys, u_n: f64, hist: V3, r_eff: f64) -> f64 {
        match self {
            FrictLawKind::CundallStrack => {
                linear::CundallStrack.elastic_energy(p, u_n, hist, r_eff)
            }
            FrictLawKind::HertzMindlin(h) => h.elastic_energy(p, u_n, hist, r_eff),
            FrictLawKind::Hooke(h) => h.elastic_energy(p, u_n, hist, r_eff),
        }
    }

    /// [`contact_energy`] with this law.
    pub fn contact_energy(&self, roll: &rolling::Rolling, c: &ContactStep, dt: f64) -> [f64; 2] {
        match self {
            FrictLawKind::CundallStrack => contact_energy(&linear::CundallStrack, roll, c, dt),
            FrictLawKind::HertzMindlin(h) => contact_energy(h, roll, c, dt),
            FrictLawKind::Hooke(h) => contact_energy(h, roll, c, dt),
        }
    }

    /// [`FrictLaw::normal_response`] of this law.
    pub fn normal_response(&self, p: &FrictPhys, u_n: f64, dt: f64) -> f64 {
        match self {
            FrictLawKind::CundallStrack => linear::CundallStrack.normal_response(p, u_n, dt),
            FrictLawKind::HertzMindlin(h) => h.normal_response(p, u_n, dt),
            FrictLawKind::Hooke(h) => h.normal_response(p, u_n, dt),
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

/// Energy tracking: the dissipation of one contact step `c` under law `law` with rolling
/// resistance `roll` — [frictional (slip of the shear spring, plastic rolling and twisting),
/// viscous (dashpots)] [J]. NaN where the law does not split them (refused by the scene).
#[inline(always)]
pub fn contact_energy<L: FrictLaw>(
    law: &L,
    roll: &rolling::Rolling,
    c: &ContactStep,
    dt: f64,
) -> [f64; 2] {
    let (slip, visc) = law.step_energy(c, dt).unwrap_or((f64::NAN, f64::NAN));
    if roll.is_off() {
        return [slip, visc];
    }
    let [plastic, damp] = rolling_energy(law, roll, c, dt);
    [slip + plastic, visc + damp]
}

/// Energy tracking: the rolling and twisting resistance's part of [`contact_energy`] —
/// [plastic rolling and twisting, the rolling dashpot] [J]; 0 without.
#[inline(always)]
pub fn rolling_energy<L: FrictLaw>(
    law: &L,
    roll: &rolling::Rolling,
    c: &ContactStep,
    dt: f64,
) -> [f64; 2] {
    if roll.is_off() {
        return [0.0, 0.0];
    }
    let (plastic, damp) = if roll.has_history() {
        let (k_t, k_n) = (
            law.tangential_stiffness(&c.p, c.u_n),
            law.normal_stiffness(&c.p, c.u_n),
        );
        let kc = roll.spring(c.r_eff, k_t, k_n, c.i_r);
        roll.epsd_energy(c.m_roll, c.n_old, c.n, c.f, c.w, c.r_eff, kc, dt)
    } else {
        (roll.moment_dissipation(c.n, c.f, c.w, c.r_eff, dt), 0.0)
    };
    [plastic, damp]
}
