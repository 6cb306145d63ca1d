//! Contacts: geometry ([`geom`]), constitutive laws ([`law`]) and the persistent pair store with
//! its history ([`store`]). [`sphere_pairs`] (frictional, in batches: `batch.rs`), [`cpm_pairs`]
//! and [`wall_pairs`] run one step of the contact loop; each pair's result depends on that pair
//! alone, so its bits do not depend on how the pairs are split among threads.

mod batch;
mod cpm_batch;
pub mod facet;
pub mod geom;
pub mod law;
pub mod model;
pub mod store;
pub mod wall;

use crate::forces::{ForceSlots, SlotWriter};
use crate::material::MixTable;
use crate::particles::Particles;
use crate::V3;
pub use cpm_batch::CpmTable;
use law::cpm::{self, CpmMat, CpmPhys, CpmState};
use law::linear::CundallStrack;
use law::FrictLawKind;
pub use model::{CpmSim, PairModel};
use rayon::prelude::*;
use store::{CpmHist, FrictState, PairForce, PairList, PairWork, Shared};
pub use wall::Wall;

/// Wall pairs per rayon task: large enough to amortise scheduling, small enough to balance.
pub const CHUNK: usize = 2048;

/// Reduced mass m1 m2 / (m1 + m2).
#[inline]
fn reduced_mass(m1: f64, m2: f64) -> f64 {
    m1 * m2 / (m1 + m2)
}

/// Sphere–sphere contact loop of one step (frictional materials), in batches
/// (`batch.rs`). Particle 1 of each pair has the lower gid. Periodic images enter through the
/// pairs' shift codes ([`PairList::set_shifts`]). Each pair's force goes to its task's
/// accumulators through `out`.
pub fn sphere_pairs(
    pairs: &mut PairList,
    slots: &ForceSlots,
    out: SlotWriter,
    ps: &Particles,
    mix: &MixTable,
    dt: f64,
) {
    let lp = SphereLoop::new(pairs, ps, mix, dt);
    // SAFETY: `for_ranges` hands out disjoint ranges.
    for_ranges(slots, out, |r, out| unsafe { lp.run(r, out) });
}

/// [`sphere_pairs`] range by range, for a caller that schedules the ranges itself (the fused
/// contact–integrator step of `Simulation` runs the accumulator tasks of a
/// [`crate::forces::TaskPlan`]).
pub struct SphereLoop<'a> {
    v: PairsView<'a>,
    ps: &'a Particles,
    mix: &'a MixTable,
    dt: f64,
    kernel: crate::kernel::Kernel,
}

impl<'a> SphereLoop<'a> {
    pub fn new(pairs: &'a mut PairList, ps: &'a Particles, mix: &'a MixTable, dt: f64) -> Self {
        SphereLoop {
            v: PairsView::new(pairs),
            ps,
            mix,
            dt,
            kernel: crate::kernel::Kernel::detect(),
        }
    }

    /// The pairs of range `r`, results through `out`.
    ///
    /// # Safety
    /// No other thread may run an overlapping range at the same time.
    pub unsafe fn run(&self, r: std::ops::Range<usize>, out: SlotWriter) {
        let (ps, mix, dt, kernel) = (self.ps, self.mix, self.dt, self.kernel);
        // one match per range: each law's loop is compiled apart (no dispatch per contact)
        match mix.law() {
            FrictLawKind::CundallStrack => {
                self.v
                    .run_frict(r, out, ps, mix, dt, kernel, &CundallStrack)
            }
            FrictLawKind::HertzMindlin(h) => self.v.run_frict(r, out, ps, mix, dt, kernel, &h),
            FrictLawKind::Hooke(h) => self.v.run_frict(r, out, ps, mix, dt, kernel, &h),
        }
    }
}

/// Geometry of one pair at the start of a step: branch vector l = C₂ − C₁ (with the periodic
/// image shift, thesis §2.3), |l|² and the radii.
#[derive(Clone, Copy, Debug)]
pub struct Branch {
    pub l: V3,
    pub d2: f64,
    pub r1: f64,
    pub r2: f64,
}

/// The pair list as the contact loop sees it: indices and shift codes shared, contact flags
/// and histories through raw pointers, so that several threads can each run a disjoint range
/// (the list stays mutably borrowed while the view lives).
struct PairsView<'a> {
    i: &'a [u32],
    j: &'a [u32],
    code: &'a [u8],
    shifts: &'a [V3],
    reach2: &'a [f32],
    /// The deforming cell's velocity gradient ([`PairList::grad`]).
    grad: Option<crate::M3>,
    /// Energy tracking by exact sums ([`PairList::track_energy`], [`PairList::work_sum`]).
    track_energy: bool,
    /// ... each contact's terms added exactly ([`PairList::energy_each_exact`]).
    energy_each_exact: bool,
    work_sum: &'a store::WorkSum,
    pp: PairsPtr,
}

impl<'a> PairsView<'a> {
    fn new(pairs: &'a mut PairList) -> Self {
        // A merge clears the codes, so a missing `set_shifts` fails the bounds check of the
        // first pair in release builds too (an assert here cost the integrator 8 %, measured:
        // it changed the inlining of the step).
        debug_assert_eq!(
            pairs.shift.len(),
            pairs.len(),
            "PairList::set_shifts must follow every merge"
        );
        PairsView {
            pp: PairsPtr {
                act: Shared::new(&mut pairs.active),
                st: Shared::new(&mut pairs.state),
                cpm: Shared::new(&mut pairs.cpm),
                roll: Shared::new(&mut pairs.roll),
                work: Shared::new(&mut pairs.work),
            },
            i: &pairs.i,
            j: &pairs.j,
            code: &pairs.shift,
            shifts: &pairs.shifts,
            reach2: &pairs.reach2,
            grad: pairs.grad,
            track_energy: pairs.track_energy,
            energy_each_exact: pairs.energy_each_exact,
            work_sum: &pairs.work_sum,
        }
    }

    /// Run the pairs of range `r` in order: `law` computes one pair (it may switch the pair's
    /// contact flag); the result goes to the pair's slots or to the accumulators of the task
    /// `out` was made for.
    ///
    /// A pair that is not in contact and whose distance exceeds `reach_factor` (r₁ + r₂) is
    /// skipped before the law is called (most candidates of the Verlet list are apart).
    ///
    /// # Safety
    /// No other thread may run an overlapping range at the same time.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<L>(
        &self,
        r: std::ops::Range<usize>,
        out: SlotWriter,
        ps: &Particles,
        reach_factor: f64,
        law: &L,
    ) where
        L: Fn(
            &mut bool,
            &mut FrictState,
            &mut CpmHist,
            Branch,
            usize,
            usize,
            Option<&mut PairWork>,
        ) -> PairForce,
    {
        let (pos, radius) = (&ps.pos[..], &ps.radius[..]);
        let base = r.start;
        let cpm = self.pp.range_cpm(r.clone());
        let work = self.pp.range_work(r.clone());
        let (act, st) = self.pp.range(r);
        for k in 0..st.len() {
            let (i, j) = (self.i[base + k] as usize, self.j[base + k] as usize);
            let b = branch_at(pos, radius, self.shifts, self.code[base + k], i, j);
            let was_active = act[k];
            if !was_active {
                let reach = reach_factor * (b.r1 + b.r2);
                if b.d2 > reach * reach {
                    // apart, and was: its slot already holds zeros / it adds nothing (the law
                    // decides the borderline cases)
                    continue;
                }
            }
            let f = law(
                &mut act[k],
                &mut st[k],
                &mut cpm[k],
                b,
                i,
                j,
                work.get_mut(k),
            );
            if !(was_active || act[k]) {
                continue;
            }
            out.sphere(base + k, (i, j), f.f, f.t1, f.t2);
        }
    }
}

/// Split the pair list among the threads: each task its two ranges
/// ([`ForceSlots::task_ranges`]). `run(range, out)` runs one range with the writer of its
/// task ([`ForceSlots::task_plan`]); the ranges handed out are disjoint.
#[inline]
fn for_ranges<R>(slots: &ForceSlots, out: SlotWriter, run: R)
where
    R: Fn(std::ops::Range<usize>, SlotWriter) + Sync,
{
    if slots.canonical() {
        // one writer for all tasks (any number of them): the direct writes are disjoint and
        // the deferred ones have their own entries (`ForceSlots::build_canonical`)
        slots.task_ranges().par_iter().for_each(|rs| {
            for r in rs {
                run(r.clone(), out);
            }
        });
        return;
    }
    let plan = slots.task_plan(out);
    (0..plan.n)
        .into_par_iter()
        .for_each(|t| plan.run_task(t, &run));
}

/// The pair list's contact flags and histories, shared by the accumulator tasks (each touches
/// its own ranges only).
#[derive(Clone, Copy)]
struct PairsPtr {
    act: Shared<bool>,
    st: Shared<FrictState>,
    cpm: Shared<CpmHist>,
    roll: Shared<V3>,
    work: Shared<PairWork>,
}

impl PairsPtr {
    /// The flags and histories of pairs `r`.
    ///
    /// # Safety
    /// No other live reference may reach these elements (the caller hands out disjoint ranges).
    #[allow(clippy::mut_from_ref)]
    unsafe fn range(&self, r: std::ops::Range<usize>) -> (&mut [bool], &mut [FrictState]) {
        (
            self.act.slice(r.start, r.len()),
            self.st.slice(r.start, r.len()),
        )
    }

    /// The CPM histories of pairs `r`.
    ///
    /// # Safety
    /// As [`Self::range`].
    #[allow(clippy::mut_from_ref)]
    unsafe fn range_cpm(&self, r: std::ops::Range<usize>) -> &mut [CpmHist] {
        self.cpm.slice(r.start, r.len())
    }

    /// The rolling-moment histories of pairs `r` (EPSD; `PairList::roll_law` only).
    ///
    /// # Safety
    /// As [`Self::range`].
    #[allow(clippy::mut_from_ref)]
    unsafe fn range_roll(&self, r: std::ops::Range<usize>) -> &mut [V3] {
        self.roll.slice(r.start, r.len())
    }

    /// The energy tracking's per-pair work of pairs `r` (empty when not tracking).
    ///
    /// # Safety
    /// As [`Self::range`].
    #[allow(clippy::mut_from_ref)]
    unsafe fn range_work(&self, r: std::ops::Range<usize>) -> &mut [PairWork] {
        match self.work.len() {
            0 => &mut [],
            _ => self.work.slice(r.start, r.len()),
        }
    }
}

/// [`Branch`] of pair (i, j) whose periodic image shift is `shifts[code]` (code 0: the same
/// image; [`PairList::set_shifts`]). Bit-identical to [`geom::branch`]: the shift
/// H (c₂ − c₁) is added last, so every rank gets the same bits whichever copy is the ghost.
#[inline(always)]
fn branch_at(pos: &[V3], radius: &[f64], shifts: &[V3], code: u8, i: usize, j: usize) -> Branch {
    let mut l = pos[j] - pos[i];
    if code != 0 {
        l += shifts[code as usize];
    }
    Branch {
        l,
        d2: l.norm_squared(),
        r1: radius[i],
        r2: radius[j],
    }
}

/// Per-step switches of the CPM contact loop.
#[derive(Clone, Copy, Debug)]
pub struct CpmStep {
    /// Interaction radius R_I while the initial cohesive network is created (the first step,
    /// thesis §6.1.4 / digest §1.4: pairs with d₀ ≤ R_I (r₁ + r₂) become cohesive links, eq.
    /// 2.23); 0 afterwards (new contacts are non-cohesive, geometric contact only).
    pub link_factor: f64,
    /// A cohesive link stretched by more than this [m] (l − d₀) is removed as fully damaged:
    /// beyond it the pair could leave the collider's reach (half the Verlet skin). With the
    /// default parameters ω > 1 − 1e-6 there.
    pub max_stretch: f64,
}

/// CPM sphere–sphere contact loop of one step (every material is CPM). `mats[m]` holds the
/// CPM parameters of material index m, `table` their pair constants: when every pair runs
/// Yade's public law, the pairs go in batches (`cpm_batch.rs`), else one by one
/// ([`cpm_pair`]).
#[allow(clippy::too_many_arguments)]
pub fn cpm_pairs(
    pairs: &mut PairList,
    slots: &ForceSlots,
    out: SlotWriter,
    ps: &Particles,
    mats: &[CpmMat],
    table: &CpmTable,
    dt: f64,
    cs: CpmStep,
) {
    // energy tracking takes the scalar loop: the same bits (`cpm_batch`'s test), and the
    // state before the step at hand
    if table.public_law() && pairs.work.is_empty() {
        let v = PairsView::new(pairs);
        let kernel = crate::kernel::Kernel::detect();
        // SAFETY: `for_ranges` hands out disjoint ranges.
        for_ranges(slots, out, |r, out| unsafe {
            v.run_cpm(r, out, ps, table, dt, cs, kernel)
        });
        return;
    }
    // the scalar pair loop (the law call inlined, no dispatch per contact)
    let v = PairsView::new(pairs);
    let reach = cs.link_factor.max(1.0);
    // SAFETY: `for_ranges` hands out disjoint ranges.
    for_ranges(slots, out, |r, out| unsafe {
        v.run(r, out, ps, reach, &|act, st, h, b, i, j, w| {
            cpm_pair(act, st, h, ps, mats, dt, cs, b, i, j, w)
        })
    });
}

/// One CPM pair: link/contact creation (thesis §3.2.1, §2.3.1.1), geometry (§2.3.1.2,
/// incremental shear §2.3.2.1), the law (`law::cpm::cpm_step`, §3.2.6) and forces (§3.2.5).
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn cpm_pair(
    active: &mut bool,
    st: &mut FrictState,
    hist: &mut CpmHist,
    ps: &Particles,
    mats: &[CpmMat],
    dt: f64,
    cs: CpmStep,
    b: Branch,
    i: usize,
    j: usize,
    work: Option<&mut PairWork>,
) -> PairForce {
    let Branch { l, d2, r1, r2 } = b;
    let reach = r1 + r2;
    let fresh = !*active;
    if !*active {
        // thesis eq. 2.23: a link if d₀ ≤ R_I (r₁ + r₂) during the initial step
        let link = cs.link_factor * reach;
        let cohesive = cs.link_factor > 0.0 && d2 <= link * link;
        if !cohesive && d2 >= reach * reach {
            return PairForce::default();
        }
        let d = d2.sqrt();
        // d₀ = the distance at creation (eq. 2.21) for a link; for a later frictional contact
        // min(l, r₁ + r₂): r₁ + r₂ at first touch, and no jump for a pair that was overlapping
        // when its link broke.
        let d0 = if cohesive { d } else { d.min(reach) };
        *active = true;
        *st = FrictState {
            n_old: l / d,
            fs: V3::zeros(),
            phys: Default::default(),
        };
        *hist = CpmHist {
            d0,
            omega: if cohesive { 0.0 } else { 1.0 }, // thesis §3.2.1
            cohesive,
            ..Default::default()
        };
    }
    let h = *hist;
    let d = d2.sqrt();
    let phys = || {
        let (m1, m2) = (ps.material[i] as usize, ps.material[j] as usize);
        CpmPhys::new(&mats[m1], &mats[m2], r1, r2, h.d0)
    };
    // energy tracking: the contact before the step (ε_N at the previous positions, x − v Δt)
    let before = |eps_t: V3| {
        let l_old = (l - (ps.vel[j] - ps.vel[i]) * dt).norm();
        h.state(eps_t, cpm::normal_strain(l_old, h.d0))
    };
    if h.cohesive && d - h.d0 > cs.max_stretch {
        *active = false; // fully damaged link beyond the collider's reach
        if let Some(w) = work {
            // what it still stored is dissipated with it
            let old = before(st.fs);
            let gone = CpmState {
                eps_n: cpm::normal_strain(d, h.d0),
                ..old
            };
            let (slip, normal) =
                cpm::step_dissipation(&phys(), Some(&old), V3::zeros(), &gone, true);
            *w = [slip, 0.0, 0.0, normal];
        }
        return PairForce::default();
    }
    let n = l / d;
    let p = phys();
    let eps_n = cpm::normal_strain(d, h.d0); // thesis eq. 2.28
                                             // Contact point C = C₁ + d₁' n with d₁' = d₁ − (d₀ − l)/2 = r₁ + (l − r₁ − r₂)/2 (eq. 2.22,
                                             // 2.26); d₂' = l − d₁'. They are the lever arms of the relative velocity and the torques.
    let (a1, a2) = cpm::lever_arms(d, r1, r2); // no (r₁+r₂)/d factor: see its doc
    let (w1, w2) = (ps.angvel[i], ps.angvel[j]);
    // ε_T carried into the current contact plane (eq. 2.30–2.31), then the increment (2.32–2.34).
    let eps_t = geom::rotate_shear(st.fs, st.n_old, n, n.dot(&(w1 + w2)), dt);
    let v12 = geom::relative_velocity(ps.vel[i], w1, a1, ps.vel[j], w2, a2, n);
    let deps = cpm::shear_strain_increment(v12, n, dt, h.d0);
    let mut cst = h.state(eps_t, 0.0); // (`cpm_step` sets ε_N)
    let o = cpm::cpm_step(&p, &mut cst, eps_n, deps, dt);
    if let Some(w) = work {
        let old = before(eps_t);
        let (slip, normal) =
            cpm::step_dissipation(&p, (!fresh).then_some(&old), deps, &cst, o.remove);
        *w = [slip, 0.0, 0.0, normal];
    }
    if o.remove {
        *active = false;
        return PairForce::default();
    }
    st.n_old = n;
    st.fs = cst.eps_t;
    *hist = CpmHist {
        d0: h.d0,
        kappa: cst.kappa,
        omega: cst.omega,
        eps_n_pl: cst.eps_n_pl,
        eps_d: cst.eps_d,
        cohesive: h.cohesive,
    };
    // thesis eq. 3.30–3.31 (digest §12: lever arm of 2 is C − C₂ = −d₂' n):
    // T₁ = d₁' n × F, T₂ = (−d₂' n) × (−F) = d₂' n × F.
    let f = o.force(&n);
    let nxf = n.cross(&f);
    PairForce {
        f,
        t1: nxf * a1,
        t2: nxf * a2,
    }
}

/// Sphere–wall contact loop of one step (the wall is particle 1, digest A5.1): the plane walls;
/// pairs with a wall index past them are mesh facets, run by [`facet::facet_pairs`].
#[allow(clippy::too_many_arguments)]
pub fn wall_pairs(
    pairs: &mut PairList,
    slots: &[u32],
    out: SlotWriter,
    ps: &Particles,
    walls: &[Wall],
    mix: &MixTable,
    dt: f64,
) {
    let (ii, ww) = (&pairs.i, &pairs.j);
    let mean = pairs.grad.map(|g| (g, pairs.grad_origin));
    // the moment histories (EPSD; without it zeros that nothing reads)
    debug_assert_eq!(
        pairs.roll.len(),
        pairs.len(),
        "PairList::roll is sized with the list"
    );
    // energy tracking's per-pair work (`PairList::work`; empty when not tracking)
    let work = Shared::new(&mut pairs.work);
    pairs
        .active
        .par_chunks_mut(CHUNK)
        .zip(pairs.state.par_chunks_mut(CHUNK))
        .zip(pairs.roll.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, ((act, st), m_roll))| {
            let base = c * CHUNK;
            // SAFETY: chunk c's pairs, this task's only
            let work = match work.len() {
                0 => &mut [][..],
                _ => unsafe { work.slice(base, st.len()) },
            };
            for k in 0..st.len() {
                let (i, w) = (ii[base + k] as usize, ww[base + k] as usize);
                if w >= walls.len() {
                    continue; // a mesh facet (`facet::facet_pairs`)
                }
                let was_active = act[k];
                let m = &mut m_roll[k];
                let wall = &walls[w];
                let e = work.get_mut(k);
                let r = wall_pair(&mut act[k], &mut st[k], m, ps, wall, mix, dt, i, mean, e);
                if was_active || act[k] {
                    out.wall(slots[base + k], r.f, r.t2);
                }
            }
        });
}

/// One sphere–wall pair with its history `st` and rolling-moment history `m_roll` (EPSD only).
/// Returns the force on the wall (`f`) and the torque on the sphere (`t2`). `mean`: a deforming
/// cell's velocity gradient and origin, whose mean field L (x − o) the sphere moves with and
/// the wall does not (`PairList::grad`). `work`: energy tracking's entry of the pair (written
/// while in contact; the caller zeroes it).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn wall_pair(
    active: &mut bool,
    st: &mut FrictState,
    m_roll: &mut V3,
    ps: &Particles,
    wall: &Wall,
    mix: &MixTable,
    dt: f64,
    i: usize,
    mean: Option<(crate::M3, V3)>,
    work: Option<&mut PairWork>,
) -> PairForce {
    let r = ps.radius[i];
    let g = wall.geom(ps.pos[i], r);
    let (n, u_n) = (g.n, g.u_n);
    if u_n > 0.0 {
        end_wall_contact(active, m_roll);
        return PairForce::default();
    }
    if !*active {
        start_wall_contact(
            active,
            st,
            m_roll,
            mix.get(wall.material, ps.material[i]),
            ps,
            i,
            n,
        );
    }
    let w2 = ps.angvel[i];
    let v_mean = match mean {
        None => V3::zeros(),
        Some((g, o)) => g * (ps.pos[i] - o),
    };
    let v2 = ps.vel[i] + v_mean;
    // the wall's surface moves at g.v at the contact point (lever arm 0 from the wall's side)
    let v12 = geom::relative_velocity(g.v, g.w, 0.0, v2, w2, r, n);
    // the boundary's part of the relative motion: the mean field less the wall's motion
    let energy = work.map(|w| (v_mean - g.v, w));
    let w = (g.w, w2);
    let (f, t2) = wall_contact(st, m_roll, n, u_n, v12, w, ps, i, mix, dt, energy);
    PairForce {
        f,
        t1: V3::zeros(),
        t2,
    }
}

/// A sphere–wall (or facet) contact of sphere `i` starts with normal `n`: flag set, the pair's
/// constants `mix` of the wall (a sphere of infinite radius and mass, `PairMix::wall_phys`),
/// zero shear and rolling histories.
#[inline]
pub(crate) fn start_wall_contact(
    active: &mut bool,
    st: &mut FrictState,
    m_roll: &mut V3,
    mix: &crate::material::PairMix,
    ps: &Particles,
    i: usize,
    n: V3,
) {
    *active = true;
    *st = FrictState::new(mix.wall_phys(ps.radius[i], ps.mass[i]), n);
    *m_roll = V3::zeros();
}

/// A sphere–wall (or facet) contact ends: flag cleared, and its rolling history zeroed (every
/// pair not in contact holds zero there, `PairList::roll`).
#[inline]
pub(crate) fn end_wall_contact(active: &mut bool, m_roll: &mut V3) {
    *active = false;
    *m_roll = V3::zeros();
}

/// The scene's frictional law and rolling resistance on one sphere–wall (or facet) contact
/// with history `st`, `m_roll`: normal `n` (wall → sphere), `u_n`, relative velocity `v12`,
/// the wall's and the sphere's angular velocities `(w1, w2)`, sphere `i` (particle 2; the
/// wall a sphere of infinite radius and mass: R* = r, I_r = I + m r²). Returns the force on
/// the wall and the torque on the sphere. Energy tracking: `energy` = (the boundary's part of
/// the relative velocity — the mean field less the wall's motion —, the pair's work entry),
/// which gets the step's [`PairWork`] (`PairList::work`).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn wall_contact(
    st: &mut FrictState,
    m_roll: &mut V3,
    n: V3,
    u_n: f64,
    v12: V3,
    (w1, w2): (V3, V3),
    ps: &Particles,
    i: usize,
    mix: &MixTable,
    dt: f64,
    energy: Option<(V3, &mut PairWork)>,
) -> (V3, V3) {
    let r = ps.radius[i];
    let twist = n.dot(&(w1 + w2));
    let (old, m_old) = (*st, *m_roll);
    let f = mix.law().apply(st, n, u_n, v12, twist, dt, r);
    let mut t2 = n.cross(&f) * r;
    let roll = mix.rolling();
    let i_r = ps.inertia[i] + ps.mass[i] * r * r;
    let mut m = V3::zeros(); // the moment on the wall
    if roll.has_history() {
        let (k_t, k_n) = mix.law().stiffnesses(&old.phys, u_n);
        let (mw, spring) = roll.epsd(
            *m_roll,
            old.n_old,
            n,
            f,
            (w1, w2),
            r,
            roll.spring(r, k_t, k_n, i_r),
            dt,
        );
        *m_roll = spring;
        m = mw;
    } else if !roll.is_off() {
        m = roll.moment(n, f, w1, w2, r);
    }
    t2 -= m;
    if let Some((v_drive, out)) = energy {
        let c = law::ContactStep {
            p: old.phys,
            fs: old.fs,
            n_old: old.n_old,
            n,
            u_n,
            v12,
            twist,
            r_eff: r,
            fs_new: st.fs,
            f,
            w: (w1, w2),
            m_roll: m_old,
            i_r,
        };
        let [slip, visc] = mix.law().contact_energy(&roll, &c, dt);
        // the work the boundary does through the contact: its motion against the force and
        // the moment on it (particle 1), F · v_drive Δt − M · ω₁ Δt
        *out = [slip, visc, (f.dot(&v_drive) - m.dot(&w1)) * dt, 0.0];
    }
    (f, t2)
}
