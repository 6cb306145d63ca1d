//! The frictional sphere–sphere contact loop in batches, for any [`FrictLaw`] (ARCHITECTURE.md "Contact loop").
//!
//! One pair of the Cundall–Strack law is a long dependency chain (two square roots and three
//! divisions in a row): run pair by pair, the processor waits on it (chute: ~55 ns per
//! touching pair, measured). The loop is split in three passes over batches of [`LANES`]
//! pairs:
//! 1. *select*: the distance check of every candidate; the pairs in contact (and those that
//!    were) go in pair order into structure-of-arrays lanes with their branch vector and |l|²
//!    ([`PairsView::select_lanes`]; with AVX-512, eight pairs per instruction through
//!    gathers, the chosen lanes compressed into place: chute contact phase −8 % and then −7 %,
//!    measured); then their kinematics and history ([`Lanes::fill`]; with AVX-512, eight lanes
//!    per gather);
//! 2. *kernel*: the law on all lanes, without branches, so that the compiler vectorises it
//!    (SSE2 in the generic build; AVX2 or AVX-512 picked at run time, [`crate::kernel`]);
//! 3. *scatter*: histories back to the pair store, forces to the slots or accumulators, in pair
//!    order.
//!
//! Every lane computes exactly the scalar law ([`FrictLaw::step`], monomorphised per law) with the
//! same IEEE operations (no fused multiply–add, no reassociation: Rust never contracts), so the
//! result of a pair is the same bits whatever its lane, its batch, the vector width or the
//! thread count.

use super::law::rolling::{RollModel, Rolling};
use super::law::FrictLaw;
use super::law::FrictPhys;
use super::store::FrictState;
#[cfg(doc)]
use super::store::PairList;
use super::{branch_at, geom, reduced_mass, PairsView};
use crate::domain::exact::{ExactSum, Partial4};
use crate::forces::SlotWriter;
use crate::kernel::Kernel;
use crate::material::MixTable;
use crate::particles::Particles;
use crate::V3;

/// What a full batch of lanes goes to (fill, kernel, scatter): lanes, lane count, the range's
/// contact flags and histories.
type BatchFn<'a> = dyn FnMut(&mut Lanes, usize, &mut [bool], &mut [FrictState]) + 'a;

/// Pairs per batch: the lanes of one batch (~25 KB) stay in L1.
pub(super) const LANES: usize = 64;

/// The kernel's rolling-resistance variants (`law/rolling.rs`): none, constant torque, EPSD
/// (moment history in [`Lanes::m_roll`]).
const ROLL_OFF: u8 = 0;
const ROLL_CDT: u8 = 1;
const ROLL_EPSD: u8 = 2;

impl Kernel {
    /// The law on all lanes of `b` ([`kernel`]) in this variant.
    /// `energy`: the law's dissipation too (`Lanes::e`: energy tracking).
    fn run<L: FrictLaw>(self, law: &L, roll: Rolling, b: &mut Lanes, dt: f64, energy: bool) {
        match energy {
            true => self.run_roll::<L, true>(law, roll, b, dt),
            false => self.run_roll::<L, false>(law, roll, b, dt),
        }
    }

    /// [`Self::run`] with energy tracking or not (`E`).
    fn run_roll<L: FrictLaw, const E: bool>(self, law: &L, roll: Rolling, b: &mut Lanes, dt: f64) {
        match (roll.is_off(), roll.model) {
            (true, _) => self.run_with::<L, ROLL_OFF, E>(law, roll, b, dt),
            (false, RollModel::ConstantTorque) => self.run_with::<L, ROLL_CDT, E>(law, roll, b, dt),
            (false, RollModel::Epsd2 | RollModel::Epsd) => {
                self.run_with::<L, ROLL_EPSD, E>(law, roll, b, dt)
            }
        }
    }

    /// [`Self::run`] compiled for one rolling model (`ROLL`: [`ROLL_OFF`], [`ROLL_CDT`],
    /// [`ROLL_EPSD`]) and energy tracking or not (`E`).
    fn run_with<L: FrictLaw, const ROLL: u8, const E: bool>(
        self,
        law: &L,
        roll: Rolling,
        b: &mut Lanes,
        dt: f64,
    ) {
        match self {
            Kernel::Generic => kernel::<L, ROLL, E>(law, roll, b, dt),
            // SAFETY: `detect` chose the variant from the CPU's features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { kernel_avx2::<L, ROLL, E>(law, roll, b, dt) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { kernel_avx512::<L, ROLL, E>(law, roll, b, dt) },
        }
    }
}

/// Three components, one array each.
#[derive(Clone, Copy)]
pub(super) struct L3(pub(super) [[f64; LANES]; 3]);

impl L3 {
    #[inline(always)]
    pub(super) fn get(&self, q: usize) -> V3 {
        V3::new(self.0[0][q], self.0[1][q], self.0[2][q])
    }
    #[inline(always)]
    pub(super) fn set(&mut self, q: usize, v: V3) {
        self.0[0][q] = v.x;
        self.0[1][q] = v.y;
        self.0[2][q] = v.z;
    }
}

/// One batch of pairs, structure of arrays. Inputs are filled by the select pass, outputs by
/// the kernel. Lanes past the batch's length hold stale values: the kernel computes them
/// anyway (no traps, no branches) and the scatter ignores them.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lanes {
    // inputs: geometry
    l: L3,
    d2: [f64; LANES],
    r1: [f64; LANES],
    r2: [f64; LANES],
    // inputs: kinematics at t − Δt/2
    v1: L3,
    w1: L3,
    v2: L3,
    w2: L3,
    // inputs: history
    fs: L3,
    n_old: L3,
    kn: [f64; LANES],
    ks: [f64; LANES],
    tan_phi: [f64; LANES],
    cn: [f64; LANES],
    /// EPSD rolling-moment history (in and out; unused by the other variants).
    m_roll: L3,
    /// EPSD: the pair's rotational inertia about the contact, I_r (`rolling.rs`).
    i_r: [f64; LANES],
    // outputs
    u_n: [f64; LANES],
    n: L3,
    fs_new: L3,
    f: L3,
    t1: L3,
    t2: L3,
    /// Energy tracking: the law's (slip, viscous) work ([`FrictLaw::step_tracked`]).
    e: [[f64; LANES]; 2],
    // bookkeeping
    k: [u32; LANES],
    i: [u32; LANES],
    j: [u32; LANES],
    /// The pair's periodic shift code.
    code: [u32; LANES],
}

impl Lanes {
    fn new() -> Lanes {
        let z = L3([[0.0; LANES]; 3]);
        let zs = [0.0; LANES];
        Lanes {
            l: z,
            d2: zs,
            r1: zs,
            r2: zs,
            v1: z,
            w1: z,
            v2: z,
            w2: z,
            fs: z,
            n_old: z,
            kn: zs,
            ks: zs,
            tan_phi: zs,
            cn: zs,
            m_roll: z,
            i_r: zs,
            u_n: zs,
            n: z,
            fs_new: z,
            f: z,
            t1: z,
            t2: z,
            e: [zs; 2],
            k: [0; LANES],
            i: [0; LANES],
            j: [0; LANES],
            code: [0; LANES],
        }
    }

    /// Pass 1b: the other inputs of lanes 0..m, whose pairs and geometry pass 1a set
    /// ([`PairsView::select_lanes`]): radii, kinematics and history (pairs `st`).
    #[inline(always)]
    fn fill(&mut self, kernel: Kernel, m: usize, ps: &Particles, st: &[FrictState]) {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 {
            // SAFETY: `Kernel::detect` found AVX-512F.
            return unsafe { self.fill_avx512(m, ps, st) };
        }
        let _ = kernel;
        self.fill_scalar(m, ps, st)
    }

    /// [`Self::fill`] lane by lane.
    fn fill_scalar(&mut self, m: usize, ps: &Particles, st: &[FrictState]) {
        for q in 0..m {
            let (k, i, j) = (self.k[q] as usize, self.i[q] as usize, self.j[q] as usize);
            self.load(q, i, j, ps, &st[k]);
        }
    }

    /// [`Self::fill`] eight lanes at a time with gathers (the same values: copies). Lanes from
    /// m to the next multiple of 8 repeat lane 0's pair.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    unsafe fn fill_avx512(&mut self, m: usize, ps: &Particles, st: &[FrictState]) {
        use std::arch::x86_64::*;
        let n = ps.pos.len();
        assert!(ps.vel.len() == n && ps.angvel.len() == n && ps.radius.len() == n);
        for q in 0..m {
            assert!((self.i[q] as usize) < n && (self.j[q] as usize) < n);
            assert!((self.k[q] as usize) < st.len());
        }
        let m8 = m.div_ceil(8) * 8;
        for q in m..m8 {
            (self.k[q], self.i[q], self.j[q]) = (self.k[0], self.i[0], self.j[0]);
        }
        const STRIDE: usize = std::mem::size_of::<FrictState>() / 8;
        const _: () = assert!(std::mem::size_of::<FrictState>() == 8 * STRIDE);
        let f64s = |v: &[V3]| v.as_ptr() as *const f64;
        let (vel, w) = (f64s(&ps.vel), f64s(&ps.angvel));
        let hist = st.as_ptr() as *const f64;
        // offsets of the history's fields, in f64s
        let o = |bytes: usize| hist.add(bytes / 8);
        let (o_fs, o_n) = (
            o(std::mem::offset_of!(FrictState, fs)),
            o(std::mem::offset_of!(FrictState, n_old)),
        );
        let p = std::mem::offset_of!(FrictState, phys);
        let o_phys = [
            o(p + std::mem::offset_of!(FrictPhys, kn)),
            o(p + std::mem::offset_of!(FrictPhys, ks)),
            o(p + std::mem::offset_of!(FrictPhys, tan_phi)),
            o(p + std::mem::offset_of!(FrictPhys, cn)),
        ];
        let (three, stride) = (_mm256_set1_epi32(3), _mm256_set1_epi32(STRIDE as i32));
        let ld =
            |v: &[u32; LANES], q: usize| _mm256_loadu_si256(v.as_ptr().add(q) as *const __m256i);
        for q in (0..m8).step_by(8) {
            let (vi, vj) = (ld(&self.i, q), ld(&self.j, q));
            let (i3, j3) = (_mm256_mullo_epi32(vi, three), _mm256_mullo_epi32(vj, three));
            let kk = _mm256_mullo_epi32(ld(&self.k, q), stride);
            for a in 0..3 {
                let g = |base: *const f64, idx: __m256i| _mm512_i32gather_pd::<8>(idx, base.add(a));
                let st =
                    |dst: &mut L3, v: __m512d| _mm512_storeu_pd(dst.0[a].as_mut_ptr().add(q), v);
                st(&mut self.v1, g(vel, i3));
                st(&mut self.w1, g(w, i3));
                st(&mut self.v2, g(vel, j3));
                st(&mut self.w2, g(w, j3));
                st(&mut self.fs, g(o_fs, kk));
                st(&mut self.n_old, g(o_n, kk));
            }
            let rad = ps.radius.as_ptr();
            _mm512_storeu_pd(
                self.r1.as_mut_ptr().add(q),
                _mm512_i32gather_pd::<8>(vi, rad),
            );
            _mm512_storeu_pd(
                self.r2.as_mut_ptr().add(q),
                _mm512_i32gather_pd::<8>(vj, rad),
            );
            for (dst, src) in [
                (&mut self.kn, o_phys[0]),
                (&mut self.ks, o_phys[1]),
                (&mut self.tan_phi, o_phys[2]),
                (&mut self.cn, o_phys[3]),
            ] {
                _mm512_storeu_pd(dst.as_mut_ptr().add(q), _mm512_i32gather_pd::<8>(kk, src));
            }
        }
    }

    /// The EPSD moment histories `m_roll` (of the batch's range) and rotational inertias
    /// I_r = [1/(I₁ + m₁ r₁²) + 1/(I₂ + m₂ r₂²)]⁻¹ of lanes 0..m.
    /// (The inertias only with the dashpot, `inertia`: computed for `Epsd2` too, they took its
    /// contact phase from +17 % to +34 % over cdt on settle_hertz, measured.)
    fn fill_roll(&mut self, m: usize, m_roll: &[V3], ps: &Particles, inertia: bool) {
        for q in 0..m {
            self.m_roll.set(q, m_roll[self.k[q] as usize]);
        }
        if !inertia {
            return;
        }
        for q in 0..m {
            let about = |p: usize| {
                let r = ps.radius[p];
                ps.inertia[p] + ps.mass[p] * r * r
            };
            let (a, b) = (about(self.i[q] as usize), about(self.j[q] as usize));
            self.i_r[q] = a * b / (a + b);
        }
    }

    /// A deforming periodic cell (issue 23): velocities are fluctuations about the mean field
    /// L (x − o), so particle 2's material moves by L l more than 1's, l the branch vector
    /// (the image's shift H c included: its mean-field velocity L H c, digest A11.2). Added to
    /// v₂ of lanes 0..m, so that v₁₂ = v₂ − v₁ + L l (the laws see the total relative motion).
    fn add_mean_field(&mut self, m: usize, g: &crate::M3) {
        for q in 0..m {
            let dv = g * self.l.get(q);
            self.v2.set(q, self.v2.get(q) + dv);
        }
    }

    /// Energy tracking: each lane's frictional and viscous work from the kernel (`e`: the
    /// law's, [`FrictLaw::step_tracked`], plus the rolling resistance's, as
    /// [`rolling_energy`](super::law::rolling_energy)) and the mean field's work on the contact, F · (L l) Δt (the boundary's work through this contact), added to
    /// `sums` ([`PairWork`]'s order) for the contacts whose particle 1 is owned (below
    /// `n_owned`: each contact once over the ranks). A contact that ends adds nothing. The
    /// terms of [`contact_energy`](super::law::contact_energy), the same bits.
    fn energy(
        &self,
        m: usize,
        dt: f64,
        grad: Option<&crate::M3>,
        n_owned: usize,
        sums: &mut RangeWork,
    ) {
        // the lanes that count: in contact, particle 1 owned
        let keep = |q: usize| q < m && self.u_n[q] <= 0.0 && (self.i[q] as usize) < n_owned;
        if sums.each {
            for q in (0..m).filter(|&q| keep(q)) {
                sums.exact[0].add(self.e[0][q]);
                sums.exact[1].add(self.e[1][q]);
            }
        } else {
            // every lane, the others as 0 (selects: the loop vectorises)
            for (part, e) in sums.part.iter_mut().zip(&self.e) {
                let mut kept = [0.0; LANES];
                for q in 0..LANES {
                    kept[q] = if keep(q) { e[q] } else { 0.0 };
                }
                part.add_slice(&kept);
            }
        }
        let Some(g) = grad else {
            return;
        };
        for q in (0..m).filter(|&q| keep(q)) {
            // the mean field's work (without a cell it is 0: not added)
            sums.add(2, self.f.get(q).dot(&(g * self.l.get(q))) * dt);
        }
    }

    /// Lane q's step as [`ContactStep`](super::law::ContactStep) (after the kernel; no
    /// moment history).
    #[cfg(test)]
    fn contact_step(&self, q: usize) -> super::law::ContactStep {
        let g = self.geometry(q);
        super::law::ContactStep {
            p: g.p,
            fs: self.fs.get(q),
            n_old: self.n_old.get(q),
            n: g.n,
            u_n: g.u_n,
            v12: g.v12,
            twist: g.twist,
            r_eff: g.r1 * g.r2 / (g.r1 + g.r2),
            fs_new: self.fs_new.get(q),
            f: self.f.get(q),
            w: (g.w1, g.w2),
            m_roll: V3::zeros(),
            i_r: self.i_r[q],
        }
    }

    /// Copy the radii and kinematics of particles i and j and pair history `st` into lane q.
    #[inline(always)]
    fn load(&mut self, q: usize, i: usize, j: usize, ps: &Particles, st: &FrictState) {
        self.r1[q] = ps.radius[i];
        self.r2[q] = ps.radius[j];
        self.v1.set(q, ps.vel[i]);
        self.w1.set(q, ps.angvel[i]);
        self.v2.set(q, ps.vel[j]);
        self.w2.set(q, ps.angvel[j]);
        self.fs.set(q, st.fs);
        self.n_old.set(q, st.n_old);
        self.kn[q] = st.phys.kn;
        self.ks[q] = st.phys.ks;
        self.tan_phi[q] = st.phys.tan_phi;
        self.cn[q] = st.phys.cn;
    }
}

/// Energy tracking: one range's contact energy terms ([`PairWork`]'s order). Reproducible
/// mode (`each`): every contact's terms added exactly, the same bits in any order (on any
/// layout); the default mode: summed in floating point in pair order and the range's sums
/// added exactly at its end — the same bits for a given layout (as the default mode's
/// forces), without an exact sum per contact.
pub(super) struct RangeWork {
    each: bool,
    /// [friction, viscous, boundary].
    part: [Partial4; 3],
    exact: [ExactSum; 4],
}

impl RangeWork {
    pub(super) fn new(each: bool) -> Self {
        RangeWork {
            each,
            part: [Partial4::default(); 3],
            exact: Default::default(),
        }
    }

    #[inline(always)]
    fn add(&mut self, term: usize, x: f64) {
        match self.each {
            true => self.exact[term].add(x),
            false => self.part[term].add(x),
        }
    }

    /// The range's exact sums.
    pub(super) fn sums(mut self) -> [ExactSum; 4] {
        for (s, p) in self.exact.iter_mut().zip(&self.part) {
            s.add(p.total());
        }
        self.exact
    }
}

/// What the law of lane q starts from: branch vector, unit normal, normal displacement, radii,
/// angular velocities, the relative velocity at the contact (lever arms d1 = r1, d2 = r2: digest
/// A4.1 with d0 = r1 + r2, radius arms avoid ratcheting), the twist n·(ω1 + ω2) and the pair
/// constants: the kernel's (inlined: its vector code).
struct LaneGeometry {
    n: V3,
    u_n: f64,
    r1: f64,
    r2: f64,
    w1: V3,
    w2: V3,
    v12: V3,
    twist: f64,
    p: FrictPhys,
}

impl Lanes {
    #[inline(always)]
    fn geometry(&self, q: usize) -> LaneGeometry {
        let l = self.l.get(q);
        let d = self.d2[q].sqrt();
        let (r1, r2) = (self.r1[q], self.r2[q]);
        let n = l / d;
        let (w1, w2) = (self.w1.get(q), self.w2.get(q));
        LaneGeometry {
            n,
            u_n: d - (r1 + r2),
            r1,
            r2,
            w1,
            w2,
            v12: geom::relative_velocity(self.v1.get(q), w1, r1, self.v2.get(q), w2, r2, n),
            twist: n.dot(&(w1 + w2)),
            p: FrictPhys {
                kn: self.kn[q],
                ks: self.ks[q],
                tan_phi: self.tan_phi[q],
                cn: self.cn[q],
            },
        }
    }
}

/// The law `L` on every lane: geometry (thesis §2.3, digest A4.2–A4.3), the law's step
/// ([`FrictLaw::step`], e.g. Cundall–Strack, thesis eq. 2.45–2.49), torques (digest A6, erratum A13 row 5). The same operations as the scalar
/// functions it calls, lane by lane.
#[inline(always)]
fn kernel<L: FrictLaw, const ROLL: u8, const E: bool>(
    law: &L,
    roll: Rolling,
    b: &mut Lanes,
    dt: f64,
) {
    for q in 0..LANES {
        let LaneGeometry {
            n,
            u_n,
            r1,
            r2,
            w1,
            w2,
            v12,
            twist,
            p,
            ..
        } = b.geometry(q);
        let n_old = b.n_old.get(q);
        let r_eff = r1 * r2 / (r1 + r2);
        let fs_old = b.fs.get(q);
        let (f, fs) = match E {
            // energy tracking: the law's dissipation in the same pass
            true => {
                let (f, fs, e) = law.step_tracked(&p, fs_old, n_old, n, u_n, v12, twist, dt, r_eff);
                (b.e[0][q], b.e[1][q]) = (e[0], e[1]);
                (f, fs)
            }
            false => law.step(&p, fs_old, n_old, n, u_n, v12, twist, dt, r_eff),
        };
        // Torques: T1 += d1 n × F, T2 += d2 n × F (digest A6, erratum A13 row 5).
        let nxf = n.cross(&f);
        b.u_n[q] = u_n;
        b.n.set(q, n);
        b.fs_new.set(q, fs);
        b.f.set(q, f);
        let (mut t1, mut t2) = (nxf * r1, nxf * r2);
        // rolling and twisting resistance (contact/law/rolling.rs), R_eff = r1 r2/(r1 + r2)
        // (energy tracking: its dissipation added to the law's, `law::rolling_energy`)
        if ROLL == ROLL_CDT {
            let m = roll.moment(n, f, w1, w2, r_eff);
            t1 += m;
            t2 -= m;
            if E {
                b.e[0][q] += roll.moment_dissipation(n, f, (w1, w2), r_eff, dt);
            }
        }
        if ROLL == ROLL_EPSD {
            let (k_t, k_n) = (
                law.tangential_stiffness(&p, u_n),
                law.normal_stiffness(&p, u_n),
            );
            let kc = roll.spring(r_eff, k_t, k_n, b.i_r[q]);
            let m_old = b.m_roll.get(q);
            let (m, spring) = roll.epsd(m_old, n_old, n, f, (w1, w2), r_eff, kc, dt);
            if E {
                let (plastic, damp) = roll.epsd_energy(m_old, n_old, n, f, (w1, w2), r_eff, kc, dt);
                b.e[0][q] += plastic;
                b.e[1][q] += damp;
            }
            b.m_roll.set(q, spring);
            t1 += m;
            t2 -= m;
        }
        b.t1.set(q, t1);
        b.t2.set(q, t2);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2<L: FrictLaw, const ROLL: u8, const E: bool>(
    law: &L,
    roll: Rolling,
    b: &mut Lanes,
    dt: f64,
) {
    kernel::<L, ROLL, E>(law, roll, b, dt)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512<L: FrictLaw, const ROLL: u8, const E: bool>(
    law: &L,
    roll: Rolling,
    b: &mut Lanes,
    dt: f64,
) {
    kernel::<L, ROLL, E>(law, roll, b, dt)
}

impl PairsView<'_> {
    /// The frictional sphere–sphere pairs of range `r` in batches (module docs); results go to
    /// the accumulators of the task `out` was made for.
    ///
    /// # Safety
    /// No other thread may run an overlapping range at the same time.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run_frict<L: FrictLaw>(
        &self,
        r: std::ops::Range<usize>,
        out: SlotWriter,
        ps: &Particles,
        mix: &MixTable,
        dt: f64,
        kernel: Kernel,
        law: &L,
    ) {
        let base = r.start;
        let roll = mix.rolling();
        // the EPSD moment histories of the range (empty without: nothing reads them)
        let m_roll = match roll.has_history() {
            true => self.pp.range_roll(r.clone()),
            false => &mut [],
        };
        let (act, st) = self.pp.range(r);
        let mut b = Lanes::new();
        let grad = self.grad;
        // energy tracking: this range's sums, merged once at its end
        let mut sums = self
            .track_energy
            .then(|| RangeWork::new(self.energy_each_exact));
        self.select_lanes(kernel, base, act, st, ps, mix, &mut b, |b, m, act, st| {
            b.fill(kernel, m, ps, st);
            if let Some(g) = &grad {
                b.add_mean_field(m, g);
            }
            if !m_roll.is_empty() {
                b.fill_roll(m, m_roll, ps, roll.model == RollModel::Epsd);
            }
            kernel.run(law, roll, b, dt, sums.is_some());
            if let Some(s) = &mut sums {
                b.energy(m, dt, grad.as_ref(), ps.n_owned, s);
            }
            scatter(b, m, base, act, st, out);
            if !m_roll.is_empty() {
                scatter_roll(b, m, m_roll);
            }
        });
        if let Some(s) = sums {
            self.work_sum.merge(&s.sums());
        }
    }

    /// Pass 1a of the pairs `base..base + act.len()` (contact flags `act`, histories `st`):
    /// the pairs in contact, and those that come into contact now (their contact starts
    /// here: [`start_contact`]), in pair order into lanes of `b` (indices and geometry);
    /// `batch(b, m, act, st)` takes each batch of `m` lanes (at most [`LANES`], at least one).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn select_lanes<F>(
        &self,
        kernel: Kernel,
        base: usize,
        act: &mut [bool],
        st: &mut [FrictState],
        ps: &Particles,
        mix: &MixTable,
        b: &mut Lanes,
        mut batch: F,
    ) where
        F: FnMut(&mut Lanes, usize, &mut [bool], &mut [FrictState]),
    {
        assert_eq!(act.len(), st.len());
        let n = st.len();
        let (mut q, mut m) = (0, 0);
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 {
            // SAFETY: `Kernel::detect` found AVX-512F.
            (q, m) = unsafe { self.select_avx512(base, act, st, ps, mix, b, &mut batch) };
        }
        let _ = kernel;
        for q in q..n {
            m = self.select1(base, q, act, st, ps, mix, b, m);
            if m == LANES {
                batch(b, m, act, st);
                m = 0;
            }
        }
        if m > 0 {
            batch(b, m, act, st);
        }
    }

    /// [`Self::select_lanes`] of pair `base + q` into lane `m` (m < LANES); returns the new
    /// lane count.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn select1(
        &self,
        base: usize,
        q: usize,
        act: &mut [bool],
        st: &mut [FrictState],
        ps: &Particles,
        mix: &MixTable,
        b: &mut Lanes,
        m: usize,
    ) -> usize {
        let k = base + q;
        let (i, j, code) = (self.i[k] as usize, self.j[k] as usize, self.code[k]);
        let br = branch_at(&ps.pos, &ps.radius, self.shifts, code, i, j);
        if !act[q] && !start_contact(&mut act[q], &mut st[q], &br, ps, mix, i, j) {
            return m; // apart, and was: nothing to add
        }
        (b.k[m], b.i[m], b.j[m]) = (q as u32, i as u32, j as u32);
        b.code[m] = code as u32;
        b.l.set(m, br.l);
        b.d2[m] = br.d2;
        m + 1
    }

    /// [`Self::select_lanes`] of whole groups of eight pairs ([`Self::select8_avx512`]), one
    /// function so that the group's code is inlined; returns where it stopped: the pair and
    /// the lane count. Not generic: the batch is called through `dyn` (once per 64 pairs), so
    /// that one copy serves every law and [`Self::select8_avx512`] keeps its single caller —
    /// monomorphised per law, LLVM stopped inlining it (chute contact phase +5–9 %, measured).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn select_avx512(
        &self,
        base: usize,
        act: &mut [bool],
        st: &mut [FrictState],
        ps: &Particles,
        mix: &MixTable,
        b: &mut Lanes,
        batch: &mut BatchFn,
    ) -> (usize, usize) {
        let (mut q, mut m) = (0, 0);
        while q + 8 <= st.len() {
            m = self.select8_avx512(base, q, act, st, ps, mix, b, m);
            if m > LANES - 8 {
                batch(b, m, act, st);
                m = 0;
            }
            q += 8;
        }
        (q, m)
    }

    /// [`Self::select1`] of the eight pairs `base + q..` with gathers into lanes `m..` (m ≤
    /// LANES − 8), the same lanes with the same bits: the branch vector of [`branch_at`] (the
    /// shift added only where the code is not 0), |l|² summed in its order. Pairs not in
    /// contact are compared first with their (r₁ + r₂)² rounded up to f32
    /// ([`PairList::reach2`], loaded instead of gathering both radii: chute, 2 threads,
    /// contact −3 %), a superset of the exact test, which [`start_contact`] then makes; a group
    /// whose pairs are all in contact (most of the leading group) tests nothing. The lanes are
    /// compressed into place in registers, so their geometry is computed once and no bit loop
    /// hands them out one by one (chute, 2 threads: contact −7 %).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn select8_avx512(
        &self,
        base: usize,
        q: usize,
        act: &mut [bool],
        st: &mut [FrictState],
        ps: &Particles,
        mix: &MixTable,
        b: &mut Lanes,
        m: usize,
    ) -> usize {
        use std::arch::x86_64::*;
        let k = base + q;
        assert!(q + 8 <= act.len() && q + 8 <= st.len() && m + 8 <= LANES);
        assert!(k + 8 <= self.i.len() && k + 8 <= self.j.len());
        assert!(k + 8 <= self.code.len() && k + 8 <= self.reach2.len());
        let (vi, vj) = (
            _mm256_loadu_si256(self.i.as_ptr().add(k) as *const __m256i),
            _mm256_loadu_si256(self.j.as_ptr().add(k) as *const __m256i),
        );
        let c8 = std::ptr::read_unaligned(self.code.as_ptr().add(k) as *const u64);
        let vc = _mm256_cvtepu8_epi32(_mm_set1_epi64x(c8 as i64));
        // every index in bounds (the lanes of the 256-bit vectors: the low 8 bits)
        let below = |v: __m256i, n: usize| {
            let n = _mm512_set1_epi32(n.min(i32::MAX as usize) as i32);
            _mm512_cmplt_epu32_mask(_mm512_castsi256_si512(v), n) as u8 == u8::MAX
        };
        let n = ps.pos.len();
        assert!(below(vi, n) && below(vj, n) && below(vc, self.shifts.len()));
        // 8 flags (bytes 0 or 1) to 8 bits
        let a8 = u64::from_le_bytes(*(act.as_ptr().add(q) as *const [u8; 8]));
        let on = (a8.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
        let three = _mm256_set1_epi32(3);
        let (i3, j3) = (_mm256_mullo_epi32(vi, three), _mm256_mullo_epi32(vj, three));
        let px = ps.pos.as_ptr() as *const f64;
        let mut l = [0, 1, 2].map(|a| {
            _mm512_sub_pd(
                _mm512_i32gather_pd::<8>(j3, px.add(a)),
                _mm512_i32gather_pd::<8>(i3, px.add(a)),
            )
        });
        if c8 != 0 {
            // some periodic image: add the shift where the code is not 0 (as `branch_at`)
            let wide = _mm512_castsi256_si512(vc);
            let shifted = _mm512_test_epi32_mask(wide, wide) as u8;
            let (c3, sh) = (
                _mm256_mullo_epi32(vc, three),
                self.shifts.as_ptr() as *const f64,
            );
            for (a, la) in l.iter_mut().enumerate() {
                let s = _mm512_i32gather_pd::<8>(c3, sh.add(a));
                *la = _mm512_mask_add_pd(*la, shifted, *la, s);
            }
        }
        let d2 = _mm512_add_pd(
            _mm512_add_pd(_mm512_mul_pd(l[0], l[0]), _mm512_mul_pd(l[1], l[1])),
            _mm512_mul_pd(l[2], l[2]),
        );
        let mut sel = on;
        if on != u8::MAX {
            // (r₁ + r₂)² rounded up: a superset of the exact test
            let reach2 = _mm512_cvtps_pd(_mm256_loadu_ps(self.reach2.as_ptr().add(k)));
            let mut new = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(d2, reach2) & !on;
            while new != 0 {
                let p = new.trailing_zeros() as usize;
                new &= new - 1;
                let (i, j) = (self.i[k + p] as usize, self.j[k + p] as usize);
                let br = branch_at(&ps.pos, &ps.radius, self.shifts, self.code[k + p], i, j);
                if start_contact(&mut act[q + p], &mut st[q + p], &br, ps, mix, i, j) {
                    sel |= 1 << p;
                }
            }
        }
        if sel == 0 {
            return m;
        }
        let vk = _mm256_add_epi32(
            _mm256_set1_epi32(q as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        // the selected lanes to the front of each register, stored whole (8 lanes of room)
        let put32 = |dst: &mut [u32; LANES], v: __m256i| {
            let c = _mm512_maskz_compress_epi32(sel as u16, _mm512_castsi256_si512(v));
            _mm256_storeu_si256(
                dst.as_mut_ptr().add(m) as *mut __m256i,
                _mm512_castsi512_si256(c),
            )
        };
        put32(&mut b.k, vk);
        put32(&mut b.i, vi);
        put32(&mut b.j, vj);
        put32(&mut b.code, vc);
        let put = |dst: &mut [f64; LANES], v: __m512d| {
            _mm512_storeu_pd(dst.as_mut_ptr().add(m), _mm512_maskz_compress_pd(sel, v))
        };
        for (a, la) in l.iter().enumerate() {
            put(&mut b.l.0[a], *la);
        }
        put(&mut b.d2, d2);
        m + sel.count_ones() as usize
    }
}

/// Pair (i, j) with branch `br`, not in contact: whether it touches now (|l| < r₁ + r₂). If
/// it does, its contact starts: flag set, parameters mixed, zero shear force. Its n_old is
/// never used: the shear force starts at zero, and the rotation of a zero vector is zero.
#[inline(always)]
fn start_contact(
    act: &mut bool,
    st: &mut FrictState,
    br: &super::Branch,
    ps: &Particles,
    mix: &MixTable,
    i: usize,
    j: usize,
) -> bool {
    let reach = br.r1 + br.r2;
    if br.d2 >= reach * reach {
        return false;
    }
    *act = true;
    let m_eff = reduced_mass(ps.mass[i], ps.mass[j]);
    let phys = mix
        .get(ps.material[i], ps.material[j])
        .phys(br.r1, br.r2, m_eff);
    *st = FrictState::new(phys, V3::zeros());
    true
}

/// Pass 3: the first `m` lanes back to the store and out, in pair order. A pair found apart
/// (u_N > 0) is deleted (digest A6) and contributes zeros.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn scatter(
    b: &Lanes,
    m: usize,
    base: usize,
    act: &mut [bool],
    st: &mut [FrictState],
    out: SlotWriter,
) {
    for q in 0..m {
        let k = b.k[q] as usize;
        let (f, t1, t2) = if b.u_n[q] > 0.0 {
            act[k] = false;
            (V3::zeros(), V3::zeros(), V3::zeros())
        } else {
            st[k].fs = b.fs_new.get(q);
            st[k].n_old = b.n.get(q);
            (b.f.get(q), b.t1.get(q), b.t2.get(q))
        };
        let ij = (b.i[q] as usize, b.j[q] as usize);
        out.sphere(base + k, ij, f, t1, t2);
    }
}

/// Pass 3 of the EPSD moment histories: back to `m_roll`; zero for a contact that ends (a
/// contact starts from zero: `PairList::roll`).
fn scatter_roll(b: &Lanes, m: usize, m_roll: &mut [V3]) {
    for q in 0..m {
        let ended = b.u_n[q] > 0.0;
        m_roll[b.k[q] as usize] = if ended { V3::zeros() } else { b.m_roll.get(q) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::gen::Lcg;

    /// Lane q of each pair of 3-vector lanes is the same in both.
    pub(super) fn assert_same_lane(pairs: &[(&L3, &L3)], q: usize, what: &str) {
        for (a, b) in pairs {
            assert_eq!(a.get(q), b.get(q), "lane {q} {what}");
        }
    }

    /// Random lanes: overlapping pairs, some sliding, some sticking, some apart, some new.
    fn random_lanes(seed: u64) -> Lanes {
        let mut rng = Lcg::at(seed, 0);
        let mut u = || rng.uniform();
        let mut b = Lanes::new();
        let v3 = |u: &mut dyn FnMut() -> f64, s: f64| {
            V3::new(s * (u() - 0.5), s * (u() - 0.5), s * (u() - 0.5))
        };
        for q in 0..LANES {
            let l = v3(&mut u, 2.0);
            b.l.set(q, l);
            b.d2[q] = l.norm_squared();
            b.r1[q] = 0.5 + 0.3 * u();
            b.r2[q] = 0.5 + 0.3 * u();
            b.v1.set(q, v3(&mut u, 1.0));
            b.w1.set(q, v3(&mut u, 1.0));
            b.v2.set(q, v3(&mut u, 1.0));
            b.w2.set(q, v3(&mut u, 1.0));
            b.fs.set(
                q,
                if q % 5 == 0 {
                    V3::zeros()
                } else {
                    v3(&mut u, 1e3)
                },
            );
            b.n_old.set(q, l.normalize());
            b.kn[q] = 1e5;
            b.ks[q] = 2.5e4;
            b.tan_phi[q] = 0.5;
            b.cn[q] = if q % 2 == 0 { 0.0 } else { 3.0 };
            // EPSD histories: some zero, some small, some beyond any cap
            let m = v3(&mut u, [0.0, 1e-3, 10.0][q % 3]);
            b.m_roll
                .set(q, m - l.normalize() * (0.5 * l.normalize().dot(&m)));
            b.i_r[q] = 0.1 + u();
        }
        b
    }

    #[test]
    fn kernels_agree_bitwise_and_match_the_scalar_law() {
        use super::super::law::{hertz, hooke, linear};
        kernels_match(&linear::CundallStrack);
        kernels_match(&hertz::HertzMindlin::default());
        kernels_match(&hertz::HertzMindlin {
            surface_energy: 0.3,
        });
        for total in [false, true] {
            kernels_match(&hooke::Hooke::new(30.0, 10.0, total));
        }
    }

    /// Every kernel variant of law `L` gives the bits of the scalar [`FrictLaw::step`].
    fn kernels_match<L: FrictLaw>(law: &L) {
        let dt = 1e-4;
        for seed in 1..30 {
            let mut g = random_lanes(seed);
            let roll = Rolling {
                mu_r: 0.1 * (seed % 2) as f64,
                mu_t: 0.05 * (seed % 3) as f64,
                model: [RollModel::ConstantTorque, RollModel::Epsd2, RollModel::Epsd]
                    [seed as usize % 3],
                eta_r: 0.3,
            };
            match (roll.is_off(), roll.model) {
                (true, _) => kernel::<L, ROLL_OFF, false>(law, roll, &mut g, dt),
                (false, RollModel::ConstantTorque) => {
                    kernel::<L, ROLL_CDT, false>(law, roll, &mut g, dt)
                }
                (false, _) => kernel::<L, ROLL_EPSD, false>(law, roll, &mut g, dt),
            }
            // the detected variant, with energy tracking's terms (odd seeds): the same bits
            let mut w = random_lanes(seed);
            let energy = seed % 2 == 1;
            Kernel::detect().run(law, roll, &mut w, dt, energy);
            for q in 0..LANES {
                let what = format!("kernel {:?}", Kernel::detect());
                let outputs = [
                    (&g.f, &w.f),
                    (&g.fs_new, &w.fs_new),
                    (&g.t1, &w.t1),
                    (&g.t2, &w.t2),
                    (&g.m_roll, &w.m_roll),
                ];
                assert_same_lane(&outputs, q, &what);
                if energy {
                    // the fused terms are the scalar energy pass's on the same step (the
                    // law's `step_energy` and the rolling resistance's)
                    let mut c = w.contact_step(q);
                    c.m_roll = random_lanes(seed).m_roll.get(q);
                    let want = super::super::law::contact_energy(law, &roll, &c, dt);
                    assert_eq!([w.e[0][q], w.e[1][q]], want, "lane {q}: energy");
                }
                // The scalar law on the same pair.
                let b0 = random_lanes(seed);
                let mut st = FrictState::new(
                    FrictPhys {
                        kn: b0.kn[q],
                        ks: b0.ks[q],
                        tan_phi: b0.tan_phi[q],
                        cn: b0.cn[q],
                    },
                    b0.n_old.get(q),
                );
                st.fs = b0.fs.get(q);
                let l = b0.l.get(q);
                let d = b0.d2[q].sqrt();
                let n = l / d;
                let (w1, w2) = (b0.w1.get(q), b0.w2.get(q));
                let v12 = geom::relative_velocity(
                    b0.v1.get(q),
                    w1,
                    b0.r1[q],
                    b0.v2.get(q),
                    w2,
                    b0.r2[q],
                    n,
                );
                let u_n = d - (b0.r1[q] + b0.r2[q]);
                let (f, fs) = law.step(
                    &st.phys,
                    st.fs,
                    st.n_old,
                    n,
                    u_n,
                    v12,
                    n.dot(&(w1 + w2)),
                    dt,
                    b0.r1[q] * b0.r2[q] / (b0.r1[q] + b0.r2[q]),
                );
                assert_eq!(f, g.f.get(q));
                assert_eq!(fs, g.fs_new.get(q));
                assert_eq!(g.u_n[q], u_n);
                let (r1, r2) = (b0.r1[q], b0.r2[q]);
                let r_eff = r1 * r2 / (r1 + r2);
                let k_t = law.tangential_stiffness(&st.phys, u_n);
                let k_n = law.normal_stiffness(&st.phys, u_n);
                let kc = roll.spring(r_eff, k_t, k_n, b0.i_r[q]);
                let m0 = b0.m_roll.get(q);
                let (m, spring) = match (roll.is_off(), roll.model) {
                    (true, _) => (V3::zeros(), m0),
                    (false, RollModel::ConstantTorque) => (roll.moment(n, f, w1, w2, r_eff), m0),
                    (false, _) => roll.epsd(m0, st.n_old, n, f, (w1, w2), r_eff, kc, dt),
                };
                if roll.has_history() {
                    assert_eq!(g.m_roll.get(q), spring, "lane {q}: EPSD history");
                }
                let nxf = n.cross(&f);
                assert_eq!(g.t1.get(q), nxf * r1 + m);
                assert_eq!(g.t2.get(q), nxf * r2 - m);
            }
        }
    }
}

#[cfg(test)]
mod select_tests {
    use super::*;
    use crate::contact::store::{Candidate, PairList};
    use crate::particles::Particle;
    use crate::scene::gen::Lcg;

    /// 300 random spheres (half of them periodic images, random velocities) and ~900 pairs
    /// with their shift codes.
    fn pairs_scene() -> (Particles, PairList) {
        let mut rng = Lcg::at(7, 0);
        let mut ps = Particles::default();
        for g in 0..300u64 {
            let x = V3::new(rng.uniform(), rng.uniform(), rng.uniform()) * 4.0;
            ps.push_owned(&Particle::sphere(g, x, 0.3 + 0.3 * rng.uniform(), 1.0, 0));
        }
        for g in 0..300 {
            let mut u = || rng.uniform() - 0.5;
            ps.vel[g] = V3::new(u(), u(), u());
            ps.angvel[g] = V3::new(u(), u(), u());
        }
        for g in 150..300 {
            // some copies in another image: their pairs get non-zero shift codes (those among
            // the first 150 particles keep code 0)
            ps.image[g] = [(g % 3) as i32 - 1, 0, (g % 2) as i32];
        }
        let mut cands = Vec::new();
        for a in 0..300u32 {
            for b in [a + 1, a + 7, a + 31] {
                if b < 300 {
                    let key = (a as u64, b as u64);
                    cands.push(Candidate {
                        key,
                        i: a,
                        j: b,
                        near: true,
                    });
                }
            }
        }
        let mut pl = PairList::default();
        pl.merge(&cands, false, false, |_| true);
        pl.set_shifts(
            &ps.image,
            &ps.radius,
            &crate::cell::Cell::boxed(V3::zeros(), V3::new(4.0, 4.0, 4.0)),
        );
        (ps, pl)
    }

    /// Every variant of the lane fill copies what the scalar fill copies, bit for bit, for
    /// batches of any length.
    #[test]
    fn fill_variants_agree_bitwise() {
        let (ps, mut pl) = pairs_scene();
        let mut rng = Lcg::at(9, 0);
        let mut u = || rng.uniform();
        let st: Vec<FrictState> = (0..pl.len())
            .map(|_| {
                let mut s = FrictState::new(
                    FrictPhys {
                        kn: u(),
                        ks: u(),
                        tan_phi: u(),
                        cn: u(),
                    },
                    V3::new(u(), u(), u()),
                );
                s.fs = V3::new(u(), u(), u());
                s
            })
            .collect();
        let v = PairsView::new(&mut pl);
        for (m, start, step) in [
            (64, 0, 1),
            (13, 100, 7),
            (1, 7, 1),
            (8, 600, 5),
            (40, 500, 9),
        ] {
            let (mut a, mut b) = (Lanes::new(), Lanes::new());
            for q in 0..m {
                let k = start + q * step;
                for l in [&mut a, &mut b] {
                    (l.k[q], l.i[q], l.j[q]) = (k as u32, v.i[k], v.j[k]);
                    l.code[q] = v.code[k] as u32;
                }
            }
            assert!((0..m).any(|q| a.code[q] != 0) || start < 150);
            a.fill_scalar(m, &ps, &st);
            b.fill(Kernel::detect(), m, &ps, &st);
            for q in 0..m {
                let what = format!("of {m}, {:?}", Kernel::detect());
                let inputs = [
                    (&a.v1, &b.v1),
                    (&a.w1, &b.w1),
                    (&a.v2, &b.v2),
                    (&a.w2, &b.w2),
                    (&a.fs, &b.fs),
                    (&a.n_old, &b.n_old),
                ];
                super::tests::assert_same_lane(&inputs, q, &what);
                for (x, y) in [
                    (&a.r1, &b.r1),
                    (&a.r2, &b.r2),
                    (&a.kn, &b.kn),
                    (&a.ks, &b.ks),
                    (&a.tan_phi, &b.tan_phi),
                    (&a.cn, &b.cn),
                ] {
                    assert_eq!(x[q].to_bits(), y[q].to_bits(), "lane {q} of {m}");
                }
            }
        }
    }

    /// Every variant of the select pass gives the lanes (pairs and geometry, bit for bit) and
    /// starts the contacts of the scalar pass, which takes the pairs in contact or within
    /// reach: on random pairs with periodic shifts, sparse contact flags and a run in contact,
    /// over ranges of every length and start.
    #[test]
    fn select_variants_give_the_same_lanes() {
        let (ps, mut pl) = pairs_scene();
        for (k, a) in pl.active.iter_mut().enumerate() {
            // sparse flags, and a run of 16 pairs all in contact
            *a = k % 5 == 0 || (128..144).contains(&k);
        }
        use crate::material::{FrictMat, Material};
        let mix = MixTable::new(&[Material::Frict(FrictMat {
            name: "m".into(),
            young: 1e7,
            poisson: 0.3,
            friction_angle: 0.5,
            friction: None,
            density: 1000.0,
            restitution: Some(0.5),
        })]);
        let n = pl.len();
        assert!(pl.shift[..64].iter().all(|&c| c == 0) && pl.shift[600..].iter().any(|&c| c != 0));
        let (mut started, mut lanes_seen) = (0, 0);
        for (start, len) in [
            (0, n),
            (3, 200),
            (120, 64),
            (64, 61),
            (200, 7),
            (500, 1),
            (700, 0),
        ] {
            let run = |kernel: Kernel, pl: &mut PairList| {
                let mut act = pl.active[start..start + len].to_vec();
                let mut st = vec![FrictState::default(); len];
                let v = PairsView::new(pl);
                let mut lanes = Vec::new();
                let mut b = Lanes::new();
                v.select_lanes(
                    kernel,
                    start,
                    &mut act,
                    &mut st,
                    &ps,
                    &mix,
                    &mut b,
                    |b, m, _, _| {
                        assert!((1..=LANES).contains(&m));
                        for q in 0..m {
                            let l = b.l.get(q).map(f64::to_bits);
                            lanes.push((b.k[q], b.i[q], b.j[q], b.code[q], l, b.d2[q].to_bits()));
                        }
                    },
                );
                let st: Vec<_> = st.iter().map(|s| (s.phys.kn.to_bits(), s.fs)).collect();
                (lanes, act, st)
            };
            let want = run(Kernel::Generic, &mut pl);
            let got = run(Kernel::detect(), &mut pl);
            assert!(
                got == want,
                "pairs {start}+{len}, kernel {:?}",
                Kernel::detect()
            );
            // the scalar pass itself: every pair in contact or within reach, in order
            let (lanes, act, _) = want;
            let was = pl.active.clone();
            let v = PairsView::new(&mut pl);
            let mut expect = Vec::new();
            for (q, &now) in act.iter().enumerate() {
                let k = start + q;
                let (i, j) = (v.i[k] as usize, v.j[k] as usize);
                let br = branch_at(&ps.pos, &ps.radius, v.shifts, v.code[k], i, j);
                let touch = br.d2 < (br.r1 + br.r2) * (br.r1 + br.r2);
                if was[k] || touch {
                    expect.push(q as u32);
                }
                assert_eq!(now, was[k] || touch);
                started += (touch && !was[k]) as usize;
            }
            assert_eq!(lanes.iter().map(|l| l.0).collect::<Vec<_>>(), expect);
            lanes_seen += lanes.len();
        }
        // both outcomes occur, apart from the flags
        assert!(started > 10 && lanes_seen > 200, "{started} {lanes_seen}");
    }
}
