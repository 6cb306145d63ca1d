//! The CPM sphere–sphere loop in batches, for pairs that run Yade's public CPM law (the
//! defaults; ARCHITECTURE.md "Contact loop"). The same shape as the frictional loop
//! (`batch.rs`): one CPM pair is a long dependency chain (two square roots and four divisions in
//! a row, ~65 ns per pair one by one, measured on bench/yade_cpm.sh); run over batches of
//! [`LANES`] pairs it vectorises. Four passes per batch:
//! 1. *select*: the pairs in contact (links and frictional contacts) and those that start now
//!    (the initial cohesive network of the first step, new frictional contacts: [`start_cpm`]),
//!    in pair order into lanes with their geometry, kinematics, history and pair constants;
//! 2. *strains* (vectorised): normal and shear strain, the shear history carried into the new
//!    contact plane, κ ([`strains`]);
//! 3. *damage* (scalar): ω for the lanes whose κ grew past ε₀ now — the only exponential of
//!    the law ([`cpm::damage_update`]);
//! 4. *stresses* (vectorised): σ_N, the return mapping of σ_T, forces and torques
//!    ([`stresses`], on [`cpm::public_stress`]); then the histories back to the store and the
//!    forces out, in pair order.
//!
//! Every lane computes the operations of the scalar CPM pair (`contact::cpm_pair` with
//! `law::cpm::cpm_step`) in the same order, so a pair's result is the same bits in either loop,
//! in any lane, at any vector width (test below).

use super::batch::{L3, LANES};
use super::law::cpm::{self, CpmConst, CpmMat, CpmPhys};
use super::store::{CpmHist, FrictState};
use super::{branch_at, geom, CpmStep, PairsView};
use crate::forces::SlotWriter;
use crate::kernel::Kernel;
use crate::particles::Particles;
use crate::V3;

/// The public-law constants of every pair of CPM materials, `m1 · n + m2`
/// ([`CpmPhys::public_const`]); whether all of them run the public law.
#[derive(Clone, Debug)]
pub struct CpmTable {
    n: usize,
    c: Vec<CpmConst>,
    public: bool,
}

impl CpmTable {
    pub fn new(mats: &[CpmMat]) -> Self {
        let mut c = Vec::with_capacity(mats.len() * mats.len());
        let mut public = true;
        for m1 in mats {
            for m2 in mats {
                // the constants do not depend on the radii nor on d₀
                let p = CpmPhys::new(m1, m2, 1.0, 1.0, 1.0);
                public &= p.is_public_law();
                c.push(p.public_const());
            }
        }
        CpmTable {
            n: mats.len(),
            c,
            public,
        }
    }

    /// Every material pair runs Yade's public law (so the batched loop applies).
    pub fn public_law(&self) -> bool {
        self.public
    }

    /// One entry: one material (every CPM scene of the examples).
    #[inline(always)]
    fn uniform(&self) -> bool {
        self.c.len() == 1
    }

    /// The entry of materials (m1, m2).
    #[inline(always)]
    fn index(&self, m1: u16, m2: u16) -> usize {
        m1 as usize * self.n + m2 as usize
    }
}

/// One batch of CPM pairs, structure of arrays (inputs from the select pass, outputs of the
/// kernel passes). Lanes past the batch's length hold stale values: the vector passes compute
/// them anyway and nothing reads them.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CpmLanes {
    // geometry and kinematics
    l: L3,
    d2: [f64; LANES],
    r1: [f64; LANES],
    r2: [f64; LANES],
    v1: L3,
    w1: L3,
    v2: L3,
    w2: L3,
    // history (in; updated in place: ε_T, n, κ, ω)
    eps_t: L3,
    n: L3,
    d0: [f64; LANES],
    kappa_old: [f64; LANES],
    kappa: [f64; LANES],
    omega: [f64; LANES],
    eps_n_pl: [f64; LANES],
    cohesive: [bool; LANES],
    // pair constants
    kn: [f64; LANES],
    kt: [f64; LANES],
    tan_phi: [f64; LANES],
    cohesion: [f64; LANES],
    omega_threshold: [f64; LANES],
    /// ε₀, or +∞ for a pair that never damages.
    eps0: [f64; LANES],
    // between the passes
    eps_n: [f64; LANES],
    eps_el: [f64; LANES],
    a1: [f64; LANES],
    a2: [f64; LANES],
    /// κ grew past ε₀ on a cohesive link now: ω changes.
    damaging: [bool; LANES],
    // outputs
    f: L3,
    t1: L3,
    t2: L3,
    /// The contact ends now (link stretched beyond the collider's reach, or the law's removal).
    gone: [bool; LANES],
    // bookkeeping
    k: [u32; LANES],
    i: [u32; LANES],
    j: [u32; LANES],
    /// The contact started in this step.
    fresh: [bool; LANES],
    /// The pair's entry of the [`CpmTable`] (for the damage pass).
    ci: [u32; LANES],
}

impl CpmLanes {
    fn new() -> Box<CpmLanes> {
        let z = L3([[0.0; LANES]; 3]);
        let zs = [0.0; LANES];
        Box::new(CpmLanes {
            l: z,
            d2: zs,
            r1: zs,
            r2: zs,
            v1: z,
            w1: z,
            v2: z,
            w2: z,
            eps_t: z,
            n: z,
            d0: zs,
            kappa_old: zs,
            kappa: zs,
            omega: zs,
            eps_n_pl: zs,
            cohesive: [false; LANES],
            kn: zs,
            kt: zs,
            tan_phi: zs,
            cohesion: zs,
            omega_threshold: zs,
            eps0: zs,
            eps_n: zs,
            eps_el: zs,
            a1: zs,
            a2: zs,
            damaging: [false; LANES],
            f: z,
            t1: z,
            t2: z,
            gone: [false; LANES],
            k: [0; LANES],
            i: [0; LANES],
            j: [0; LANES],
            fresh: [false; LANES],
            ci: [0; LANES],
        })
    }

    /// Lane q: pair k = (i, j) with branch `b`, the [`CpmTable`] entry `ci` (pass 1a; the
    /// rest is [`Self::fill`]'s).
    #[inline(always)]
    fn select(
        &mut self,
        q: usize,
        (k, i, j): (usize, usize, usize),
        b: &super::Branch,
        ci: usize,
        fresh: bool,
    ) {
        (self.k[q], self.i[q], self.j[q]) = (k as u32, i as u32, j as u32);
        self.fresh[q] = fresh;
        self.ci[q] = ci as u32;
        self.l.set(q, b.l);
        self.d2[q] = b.d2;
        self.r1[q] = b.r1;
        self.r2[q] = b.r2;
    }

    /// Pass 1b: kinematics, history (pairs `st`, `hist`) and pair constants of lanes 0..m.
    #[inline(always)]
    fn fill(
        &mut self,
        m: usize,
        ps: &Particles,
        st: &[FrictState],
        hist: &[CpmHist],
        table: &CpmTable,
    ) {
        // equal lengths, so that one bounds check covers both arrays of a pair
        let n = ps.vel.len();
        let (vel, angvel) = (&ps.vel[..n], &ps.angvel[..n]);
        let nk = st.len().min(hist.len());
        let (st, hist) = (&st[..nk], &hist[..nk]);
        for q in 0..m.min(LANES) {
            self.fill1(q, (vel, angvel), st, hist, table);
        }
    }

    /// [`Self::fill`] of lane q.
    #[inline(always)]
    fn fill1(
        &mut self,
        q: usize,
        (vel, angvel): (&[V3], &[V3]),
        st: &[FrictState],
        hist: &[CpmHist],
        table: &CpmTable,
    ) {
        let (k, i, j) = (self.k[q] as usize, self.i[q] as usize, self.j[q] as usize);
        self.v1.set(q, vel[i]);
        self.w1.set(q, angvel[i]);
        self.v2.set(q, vel[j]);
        self.w2.set(q, angvel[j]);
        self.eps_t.set(q, st[k].fs);
        self.n.set(q, st[k].n_old);
        let h = &hist[k];
        self.d0[q] = h.d0;
        self.kappa_old[q] = h.kappa;
        self.omega[q] = h.omega;
        self.eps_n_pl[q] = h.eps_n_pl;
        self.cohesive[q] = h.cohesive;
        if table.uniform() {
            return; // the constants are already in every lane (`CpmLanes::new`)
        }
        self.const_lane(q, &table.c[self.ci[q] as usize]);
    }

    /// The pair constants `c` into lane q.
    #[inline(always)]
    fn const_lane(&mut self, q: usize, c: &CpmConst) {
        self.kn[q] = c.kn;
        self.kt[q] = c.kt;
        self.tan_phi[q] = c.tan_phi;
        self.cohesion[q] = c.cohesion;
        self.omega_threshold[q] = c.omega_threshold;
        self.eps0[q] = if c.never_damage {
            f64::INFINITY
        } else {
            c.eps0
        };
    }
}

/// Pass 2 on every lane: geometry (thesis §2.3.1.2, eq. 2.22, 2.26, 2.28), the shear strain
/// carried into the current contact plane (eq. 2.30–2.31) plus its increment (eq. 2.32–2.34),
/// the elastic strain and κ (eq. 3.3). As `contact::cpm_pair` and the start of
/// `law::cpm::cpm_step`.
#[inline(always)]
fn strains(b: &mut CpmLanes, dt: f64, max_stretch: f64) {
    for q in 0..LANES {
        let d = b.d2[q].sqrt();
        let d0 = b.d0[q];
        let n = b.l.get(q) / d;
        let eps_n = cpm::normal_strain(d, d0);
        let (a1, a2) = cpm::lever_arms(d, b.r1[q], b.r2[q]); // no (r₁+r₂)/d factor: its doc
        let (w1, w2) = (b.w1.get(q), b.w2.get(q));
        let eps_t = geom::rotate_shear(b.eps_t.get(q), b.n.get(q), n, n.dot(&(w1 + w2)), dt);
        let v12 = geom::relative_velocity(b.v1.get(q), w1, a1, b.v2.get(q), w2, a2, n);
        let eps_t = eps_t + cpm::shear_strain_increment(v12, n, dt, d0);
        // no confinement (public law): ε = ε_N (which is never −0: l/d₀ − 1)
        let eps_el = eps_n - b.eps_n_pl[q];
        let kappa = cpm::kappa_update(b.kappa_old[q], eps_el);
        b.kappa[q] = kappa;
        // the test of `cpm::damage_update`, vectorised (`damage` evaluates the few that pass)
        b.damaging[q] = b.cohesive[q] & (kappa > b.kappa_old[q]) & (kappa >= b.eps0[q]);
        // a fully damaged link about to leave the collider's reach ends (`CpmStep`)
        b.gone[q] = b.cohesive[q] & (d - d0 > max_stretch);
        b.n.set(q, n);
        b.eps_t.set(q, eps_t);
        b.eps_n[q] = eps_n;
        b.eps_el[q] = eps_el;
        b.a1[q] = a1;
        b.a2[q] = a2;
    }
}

/// Pass 3 on lanes 0..m: ω where κ grew past ε₀ (thesis eq. 3.2–3.4).
#[inline(always)]
fn damage(b: &mut CpmLanes, m: usize, table: &CpmTable) {
    for q in 0..m {
        if !b.damaging[q] {
            continue;
        }
        b.omega[q] = cpm::damage_update(
            &table.c[b.ci[q] as usize],
            b.cohesive[q],
            b.kappa_old[q],
            b.kappa[q],
            b.omega[q],
        );
    }
}

/// Pass 4 on every lane: the stresses ([`cpm::public_stress`]), removal (thesis §3.2.1),
/// forces F = A(σ_N n + σ_T) (eq. 3.30) and torques T₁ = d₁' n × F, T₂ = d₂' n × F (eq.
/// 3.30–3.31, digest §12).
#[inline(always)]
fn stresses(b: &mut CpmLanes) {
    for q in 0..LANES {
        let c = CpmConst {
            kn: b.kn[q],
            kt: b.kt[q],
            tan_phi: b.tan_phi[q],
            cohesion: b.cohesion[q],
            ..Default::default()
        };
        let omega = b.omega[q];
        let (sigma_n, sigma_t, eps_t) = cpm::public_stress(&c, b.eps_el[q], omega, b.eps_t.get(q));
        // removal on the geometric strain (Yade omegaThreshold, digest §4.3.1)
        let removed = (b.eps_n[q] > 0.0) & (!b.cohesive[q] | (omega > b.omega_threshold[q]));
        b.gone[q] |= removed;
        let rmin = b.r1[q].min(b.r2[q]);
        let area = std::f64::consts::PI * rmin * rmin; // thesis eq. 2.24
        let n = b.n.get(q);
        let f = n * (sigma_n * area) + sigma_t * area;
        let nxf = n.cross(&f);
        b.eps_t.set(q, eps_t);
        b.f.set(q, f);
        b.t1.set(q, nxf * b.a1[q]);
        b.t2.set(q, nxf * b.a2[q]);
    }
}

/// Passes 2–4 of one batch of `m` lanes (inlined into each compiled variant).
#[inline(always)]
fn kernel(b: &mut CpmLanes, m: usize, table: &CpmTable, dt: f64, max_stretch: f64) {
    strains(b, dt, max_stretch);
    damage(b, m, table);
    stresses(b);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(b: &mut CpmLanes, m: usize, t: &CpmTable, dt: f64, max_stretch: f64) {
    kernel(b, m, t, dt, max_stretch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512(b: &mut CpmLanes, m: usize, t: &CpmTable, dt: f64, max_stretch: f64) {
    kernel(b, m, t, dt, max_stretch)
}

/// [`kernel`] in the variant `kind`.
fn run_kernel(kind: Kernel, b: &mut CpmLanes, m: usize, t: &CpmTable, dt: f64, max_stretch: f64) {
    match kind {
        Kernel::Generic => kernel(b, m, t, dt, max_stretch),
        // SAFETY: `Kernel::detect` chose the variant from the CPU's features.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { kernel_avx2(b, m, t, dt, max_stretch) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { kernel_avx512(b, m, t, dt, max_stretch) },
    }
}

/// A pair not in contact at distance² `d2` (radii r1, r2): whether its contact starts now —
/// a cohesive link of the initial network if d ≤ R_I (r₁ + r₂) during the first step (thesis
/// eq. 2.23), a frictional contact if d < r₁ + r₂ — and then its history: d₀ the distance
/// at creation (eq. 2.21) for a link, min(l, r₁ + r₂) for a contact (no jump for a pair that
/// was overlapping when its link broke), ω = 0 for a link, 1 for a contact (§3.2.1), zero
/// shear strain. As `contact::cpm_pair`.
#[inline(always)]
fn start_cpm(
    act: &mut bool,
    st: &mut FrictState,
    h: &mut CpmHist,
    b: &super::Branch,
    cs: CpmStep,
) -> bool {
    let reach = b.r1 + b.r2;
    let link = cs.link_factor * reach;
    let cohesive = cs.link_factor > 0.0 && b.d2 <= link * link;
    if !cohesive && b.d2 >= reach * reach {
        return false;
    }
    let d = b.d2.sqrt();
    let d0 = if cohesive { d } else { d.min(reach) };
    *act = true;
    *st = FrictState {
        n_old: b.l / d,
        fs: V3::zeros(),
        phys: Default::default(),
    };
    *h = CpmHist {
        d0,
        omega: if cohesive { 0.0 } else { 1.0 },
        cohesive,
        ..Default::default()
    };
    true
}

/// Pass 5: the first `m` lanes back to the store and out, in pair order. An ended contact
/// leaves its history as it was and adds zeros, or nothing if it started in this step (as
/// the scalar loop: `PairsView::run`).
#[inline(always)]
fn scatter(
    b: &CpmLanes,
    m: usize,
    base: usize,
    (act, st, hist): (&mut [bool], &mut [FrictState], &mut [CpmHist]),
    out: SlotWriter,
) {
    for q in 0..m {
        let k = b.k[q] as usize;
        let ij = (b.i[q] as usize, b.j[q] as usize);
        if b.gone[q] {
            act[k] = false;
            if !b.fresh[q] {
                out.sphere(base + k, ij, V3::zeros(), V3::zeros(), V3::zeros());
            }
            continue;
        }
        st[k].n_old = b.n.get(q);
        st[k].fs = b.eps_t.get(q);
        let h = &mut hist[k];
        h.kappa = b.kappa[q];
        h.omega = b.omega[q];
        out.sphere(base + k, ij, b.f.get(q), b.t1.get(q), b.t2.get(q));
    }
}

impl PairsView<'_> {
    /// The CPM pairs of range `r` in batches (module docs); every material pair runs the
    /// public law (`table.public_law()`). Results go to the accumulators of the task `out`
    /// was made for.
    ///
    /// # Safety
    /// No other thread may run an overlapping range at the same time.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run_cpm(
        &self,
        r: std::ops::Range<usize>,
        out: SlotWriter,
        ps: &Particles,
        table: &CpmTable,
        dt: f64,
        cs: CpmStep,
        kernel: Kernel,
    ) {
        let base = r.start;
        let hist = self.pp.range_cpm(r.clone());
        let (act, st) = self.pp.range(r);
        let reach_factor = cs.link_factor.max(1.0);
        let mut b = CpmLanes::new();
        if table.uniform() {
            for q in 0..LANES {
                b.const_lane(q, &table.c[0]); // once for every batch (`CpmLanes::fill`)
            }
        }
        let mut m = 0;
        for q in 0..st.len() {
            let k = base + q;
            let (i, j) = (self.i[k] as usize, self.j[k] as usize);
            let br = branch_at(&ps.pos, &ps.radius, self.shifts, self.code[k], i, j);
            let fresh = !act[q];
            if fresh {
                let reach = reach_factor * (br.r1 + br.r2);
                if br.d2 > reach * reach
                    || !start_cpm(&mut act[q], &mut st[q], &mut hist[q], &br, cs)
                {
                    continue; // apart, and was
                }
            }
            let ci = table.index(ps.material[i], ps.material[j]);
            b.select(m, (q, i, j), &br, ci, fresh);
            m += 1;
            if m == LANES {
                b.fill(m, ps, st, hist, table);
                run_kernel(kernel, &mut b, m, table, dt, cs.max_stretch);
                scatter(&b, m, base, (act, st, hist), out);
                m = 0;
            }
        }
        if m > 0 {
            b.fill(m, ps, st, hist, table);
            run_kernel(kernel, &mut b, m, table, dt, cs.max_stretch);
            scatter(&b, m, base, (act, st, hist), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::{cpm_pair, Branch};
    use crate::particles::Particle;
    use crate::scene::gen::Lcg;

    /// Pairs (2p, 2p + 1) of random spheres around links and contacts in every regime of the
    /// law: compressed, stretched (elastic, damaging, softened, beyond the collider's reach),
    /// sliding and sticking, cohesive and not, some starting now; histories consistent (ω =
    /// g(κ)), `mats` assigned at random.
    fn random_pairs(
        seed: u64,
        n: usize,
        mats: &[CpmMat],
        fresh: bool,
    ) -> (Particles, Vec<bool>, Vec<FrictState>, Vec<CpmHist>) {
        let mut rng = Lcg::at(seed, 0);
        let mut u = move || rng.uniform();
        let mut ps = Particles::default();
        let (mut act, mut st, mut hist) = (vec![], vec![], vec![]);
        let v3 = |u: &mut dyn FnMut() -> f64, s: f64| {
            V3::new(
                s * (2.0 * u() - 1.0),
                s * (2.0 * u() - 1.0),
                s * (2.0 * u() - 1.0),
            )
        };
        for p in 0..n {
            let (r1, r2) = (1e-3 * (0.8 + 0.4 * u()), 1e-3 * (0.8 + 0.4 * u()));
            let dir = v3(&mut u, 1.0).normalize();
            let d0 = (r1 + r2) * (0.9 + 0.5 * u());
            // ε_N in [−1e-3, 3e-3]: elastic, damaging and softened links (ε₀ = 1e-4)
            let eps_n = -1e-3 + 4e-3 * u();
            let c1 = v3(&mut u, 1e-2);
            let mat = |u: &mut dyn FnMut() -> f64| (u() * mats.len() as f64) as u16;
            let mut a = Particle::sphere(2 * p as u64, c1, r1, 2500.0, mat(&mut u));
            let mut b = Particle::sphere(
                2 * p as u64 + 1,
                c1 + dir * d0 * (1.0 + eps_n),
                r2,
                2500.0,
                mat(&mut u),
            );
            a.vel = v3(&mut u, 0.1);
            b.vel = v3(&mut u, 0.1);
            a.angvel = v3(&mut u, 50.0);
            b.angvel = v3(&mut u, 50.0);
            ps.push(&a);
            ps.push(&b);
            let cohesive = u() < 0.8;
            let kappa = if cohesive { 4e-4 * u() } else { 0.0 };
            let (ma, mb) = (&mats[a.material as usize], &mats[b.material as usize]);
            let c = CpmPhys::new(ma, mb, r1, r2, d0).public_const();
            let omega = match cohesive {
                true if c.linear_damage => cpm::damage_linear(kappa, c.eps0, c.eps_f),
                true => cpm::damage(kappa, c.eps0, c.eps_f),
                false => 1.0,
            };
            // shear strain up to ~2 ε₀ k_N/k_T: beyond the surface for some
            let n_old = (dir + v3(&mut u, 1e-3)).normalize();
            let t = v3(&mut u, 5e-4);
            act.push(!fresh || u() < 0.3);
            st.push(FrictState {
                n_old,
                fs: t - n_old * n_old.dot(&t),
                phys: Default::default(),
            });
            hist.push(CpmHist {
                d0,
                kappa,
                omega,
                cohesive,
                ..Default::default()
            });
        }
        (ps, act, st, hist)
    }

    /// Every kernel variant this CPU runs gives, lane by lane, the bits of the scalar CPM
    /// pair (`contact::cpm_pair` with `law::cpm::cpm_step`): forces, torques, histories and
    /// the end of contacts; with one material (constants in every lane once) and two.
    #[test]
    fn lanes_match_scalar_pair_bit_for_bit() {
        let m = CpmMat {
            young: 24e9,
            poisson: 0.2,
            tan_phi: 0.8,
            ..CpmMat::yade(3.5e6, 1e-4, 30.0)
        };
        let m2 = CpmMat {
            young: 30e9,
            cohesion: 3e6,
            dam_law: cpm::DamLaw::Linear,
            ..m
        };
        let mut kernels = vec![Kernel::Generic];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                kernels.push(Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                kernels.push(Kernel::Avx512);
            }
        }
        let dt = 1e-7;
        let mut checked = [0usize; 3]; // in contact, ended, damaged now
        for (seed, mats, fresh) in [
            (1, vec![m], false),
            (2, vec![m, m2], false),
            (3, vec![m], true),
        ] {
            let table = CpmTable::new(&mats);
            assert!(table.public_law());
            let n = 150; // two full batches and a partial one
            let cs = CpmStep {
                link_factor: if fresh { 1.5 } else { 0.0 },
                max_stretch: 2e-6,
            };
            let (ps, act0, st0, hist0) = random_pairs(seed, n, &mats, fresh);
            // the scalar reference
            let (mut act_s, mut st_s, mut hist_s) = (act0.clone(), st0.clone(), hist0.clone());
            let mut f_s = vec![];
            for p in 0..n {
                let b = crate::contact::branch_at(
                    &ps.pos,
                    &ps.radius,
                    &[V3::zeros()],
                    0,
                    2 * p,
                    2 * p + 1,
                );
                let r = cpm_pair(
                    &mut act_s[p],
                    &mut st_s[p],
                    &mut hist_s[p],
                    &ps,
                    &mats,
                    dt,
                    cs,
                    b,
                    2 * p,
                    2 * p + 1,
                    None,
                );
                f_s.push(r);
            }
            for &kern in &kernels {
                let (mut act, mut st, mut hist) = (act0.clone(), st0.clone(), hist0.clone());
                let mut b = CpmLanes::new();
                if table.uniform() {
                    for q in 0..LANES {
                        b.const_lane(q, &table.c[0]);
                    }
                }
                for p0 in (0..n).step_by(LANES) {
                    let mut lanes = 0;
                    for p in p0..(p0 + LANES).min(n) {
                        let (i, j) = (2 * p, 2 * p + 1);
                        let br: Branch =
                            crate::contact::branch_at(&ps.pos, &ps.radius, &[V3::zeros()], 0, i, j);
                        let was = act[p];
                        if !was && !start_cpm(&mut act[p], &mut st[p], &mut hist[p], &br, cs) {
                            assert!(!act_s[p]);
                            continue;
                        }
                        let ci = table.index(ps.material[i], ps.material[j]);
                        b.select(lanes, (p, i, j), &br, ci, !was);
                        lanes += 1;
                    }
                    b.fill(lanes, &ps, &st, &hist, &table);
                    run_kernel(kern, &mut b, lanes, &table, dt, cs.max_stretch);
                    for q in 0..lanes {
                        let p = b.k[q] as usize;
                        let what = format!("{kern:?} seed {seed} pair {p}");
                        assert_eq!(b.gone[q], !act_s[p], "{what}: end of contact");
                        if b.gone[q] {
                            checked[1] += 1;
                            continue;
                        }
                        checked[0] += 1;
                        checked[2] += (b.kappa[q] > b.kappa_old[q] && b.kappa[q] > 1e-4) as usize;
                        assert_eq!(b.f.get(q), f_s[p].f, "{what}: force");
                        assert_eq!(b.t1.get(q), f_s[p].t1, "{what}: torque 1");
                        assert_eq!(b.t2.get(q), f_s[p].t2, "{what}: torque 2");
                        assert_eq!(b.eps_t.get(q), st_s[p].fs, "{what}: ε_T");
                        assert_eq!(b.n.get(q), st_s[p].n_old, "{what}: normal");
                        assert_eq!(b.kappa[q], hist_s[p].kappa, "{what}: κ");
                        assert_eq!(b.omega[q], hist_s[p].omega, "{what}: ω");
                        assert_eq!(hist[p].d0, hist_s[p].d0, "{what}: d₀");
                    }
                }
            }
        }
        // every regime met
        assert!(checked.iter().all(|&c| c > 20), "{checked:?}");
    }
}
