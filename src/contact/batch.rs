//! The frictional sphere–sphere contact loop in batches (ARCHITECTURE.md "Contact loop").
//!
//! One pair of the Cundall–Strack law is a long dependency chain (two square roots and three
//! divisions in a row): run pair by pair, the processor waits on it (chute: ~55 ns per
//! touching pair, measured). The loop is split in three passes over batches of [`LANES`]
//! pairs:
//! 1. *select*: the distance check of every candidate, [`SEL`] pairs at a time into a bit
//!    mask (with AVX-512, eight pairs per instruction through gathers: chute contact phase
//!    −8 %, measured); the pairs in contact (and those that were) copy their geometry,
//!    kinematics and history into structure-of-arrays lanes ([`Lanes::fill`]; with AVX-512,
//!    eight lanes per gather);
//! 2. *kernel*: the law on all lanes, without branches, so that the compiler vectorises it
//!    (SSE2 in the generic build; AVX2 or AVX-512 picked at run time, [`crate::kernel`]);
//! 3. *scatter*: histories back to the pair store, forces to the slots or accumulators, in pair
//!    order.
//!
//! Every lane computes exactly the scalar law ([`law::linear::cundall_strack_step`]) with the
//! same IEEE operations (no fused multiply–add, no reassociation: Rust never contracts), so the
//! result of a pair is the same bits whatever its lane, its batch, the vector width or the
//! thread count.

use super::law::linear::cundall_strack_step;
use super::store::FrictState;
#[cfg(doc)]
use super::store::PairList;
use super::{branch_at, geom, reduced_mass, PairsView};
use crate::forces::SlotWriter;
use crate::kernel::Kernel;
use crate::material::{FrictPhys, MixTable};
use crate::particles::Particles;
use crate::V3;

/// Pairs per batch: the lanes of one batch (~25 KB) stay in L1.
const LANES: usize = 64;

/// Pairs per block of the select pass (bits of a `u64`).
const SEL: usize = 64;

impl Kernel {
    /// The law on all lanes of `b` ([`kernel`]) in this variant.
    fn run(self, b: &mut Lanes, dt: f64) {
        match self {
            Kernel::Generic => kernel(b, dt),
            // SAFETY: `detect` chose the variant from the CPU's features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { kernel_avx2(b, dt) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { kernel_avx512(b, dt) },
        }
    }
}

/// Three components, one array each.
#[derive(Clone, Copy)]
struct L3([[f64; LANES]; 3]);

impl L3 {
    #[inline(always)]
    fn get(&self, q: usize) -> V3 {
        V3::new(self.0[0][q], self.0[1][q], self.0[2][q])
    }
    #[inline(always)]
    fn set(&mut self, q: usize, v: V3) {
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
    // outputs
    u_n: [f64; LANES],
    n: L3,
    fs_new: L3,
    f: L3,
    t1: L3,
    t2: L3,
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
            u_n: zs,
            n: z,
            fs_new: z,
            f: z,
            t1: z,
            t2: z,
            k: [0; LANES],
            i: [0; LANES],
            j: [0; LANES],
            code: [0; LANES],
        }
    }

    /// Pass 1b: the inputs of lanes 0..m from their pairs (`k`, `i`, `j`, `code` set):
    /// geometry, kinematics and history (pairs `st`).
    #[inline(always)]
    fn fill(&mut self, kernel: Kernel, m: usize, ps: &Particles, st: &[FrictState], sh: &[V3]) {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 {
            // SAFETY: `Kernel::detect` found AVX-512F.
            return unsafe { self.fill_avx512(m, ps, st, sh) };
        }
        let _ = kernel;
        self.fill_scalar(m, ps, st, sh)
    }

    /// [`Self::fill`] lane by lane.
    fn fill_scalar(&mut self, m: usize, ps: &Particles, st: &[FrictState], sh: &[V3]) {
        for q in 0..m {
            let (k, i, j) = (self.k[q] as usize, self.i[q] as usize, self.j[q] as usize);
            let br = branch_at(&ps.pos, &ps.radius, sh, self.code[q] as u8, i, j);
            self.load(q, k, i, j, br, ps, &st[k]);
        }
    }

    /// [`Self::fill`] eight lanes at a time with gathers (the same values: copies, and the
    /// branch vector by [`branch_at`]'s operations, the shift added only where the code is
    /// not 0). Lanes from m to the next multiple of 8 repeat lane 0's pair.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    unsafe fn fill_avx512(&mut self, m: usize, ps: &Particles, st: &[FrictState], sh: &[V3]) {
        use std::arch::x86_64::*;
        let n = ps.pos.len();
        assert!(ps.vel.len() == n && ps.angvel.len() == n && ps.radius.len() == n);
        for q in 0..m {
            assert!((self.i[q] as usize) < n && (self.j[q] as usize) < n);
            assert!((self.k[q] as usize) < st.len() && (self.code[q] as usize) < sh.len());
        }
        let m8 = m.div_ceil(8) * 8;
        for q in m..m8 {
            (self.k[q], self.i[q], self.j[q]) = (self.k[0], self.i[0], self.j[0]);
            self.code[q] = self.code[0];
        }
        const STRIDE: usize = std::mem::size_of::<FrictState>() / 8;
        const _: () = assert!(std::mem::size_of::<FrictState>() == 8 * STRIDE);
        let f64s = |v: &[V3]| v.as_ptr() as *const f64;
        let (x, vel, w, sh) = (f64s(&ps.pos), f64s(&ps.vel), f64s(&ps.angvel), f64s(sh));
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
            let (vi, vj, vc) = (ld(&self.i, q), ld(&self.j, q), ld(&self.code, q));
            let (i3, j3, c3) = (
                _mm256_mullo_epi32(vi, three),
                _mm256_mullo_epi32(vj, three),
                _mm256_mullo_epi32(vc, three),
            );
            let kk = _mm256_mullo_epi32(ld(&self.k, q), stride);
            let mut shifted: __mmask8 = 0;
            for l in 0..8 {
                shifted |= ((self.code[q + l] != 0) as u8) << l;
            }
            let mut d2 = _mm512_setzero_pd();
            for a in 0..3 {
                let g = |base: *const f64, idx: __m256i| _mm512_i32gather_pd::<8>(idx, base.add(a));
                let l = _mm512_sub_pd(g(x, j3), g(x, i3));
                let l = match shifted {
                    0 => l, // no pair crosses a periodic boundary: no shift gather
                    _ => _mm512_mask_add_pd(l, shifted, l, g(sh, c3)),
                };
                d2 = if a == 0 {
                    _mm512_mul_pd(l, l)
                } else {
                    _mm512_add_pd(d2, _mm512_mul_pd(l, l))
                };
                let st =
                    |dst: &mut L3, v: __m512d| _mm512_storeu_pd(dst.0[a].as_mut_ptr().add(q), v);
                st(&mut self.l, l);
                st(&mut self.v1, g(vel, i3));
                st(&mut self.w1, g(w, i3));
                st(&mut self.v2, g(vel, j3));
                st(&mut self.w2, g(w, j3));
                st(&mut self.fs, g(o_fs, kk));
                st(&mut self.n_old, g(o_n, kk));
            }
            _mm512_storeu_pd(self.d2.as_mut_ptr().add(q), d2);
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

    /// Copy pair `k` = (i, j) with branch `l`, |l|² `d2` and its history into lane `q`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        q: usize,
        k: usize,
        i: usize,
        j: usize,
        b: super::Branch,
        ps: &Particles,
        st: &FrictState,
    ) {
        self.k[q] = k as u32;
        self.i[q] = i as u32;
        self.j[q] = j as u32;
        self.l.set(q, b.l);
        self.d2[q] = b.d2;
        self.r1[q] = b.r1;
        self.r2[q] = b.r2;
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

/// The law on every lane: geometry (thesis §2.3, digest A4.2–A4.3), Cundall–Strack (thesis
/// eq. 2.45–2.49), torques (digest A6, erratum A13 row 5). The same operations as the scalar
/// functions it calls, lane by lane.
#[inline(always)]
fn kernel(b: &mut Lanes, dt: f64) {
    for q in 0..LANES {
        let l = b.l.get(q);
        let d = b.d2[q].sqrt();
        let (r1, r2) = (b.r1[q], b.r2[q]);
        let u_n = d - (r1 + r2);
        let n = l / d;
        let (w1, w2) = (b.w1.get(q), b.w2.get(q));
        // Lever arms d1 = r1, d2 = r2 (digest A4.1 with d0 = r1 + r2; radius arms avoid ratcheting).
        let v12 = geom::relative_velocity(b.v1.get(q), w1, r1, b.v2.get(q), w2, r2, n);
        let p = FrictPhys {
            kn: b.kn[q],
            ks: b.ks[q],
            tan_phi: b.tan_phi[q],
            cn: b.cn[q],
        };
        let twist = n.dot(&(w1 + w2));
        let (f, fs) = cundall_strack_step(&p, b.fs.get(q), b.n_old.get(q), n, u_n, v12, twist, dt);
        // Torques: T1 += d1 n × F, T2 += d2 n × F (digest A6, erratum A13 row 5).
        let nxf = n.cross(&f);
        b.u_n[q] = u_n;
        b.n.set(q, n);
        b.fs_new.set(q, fs);
        b.f.set(q, f);
        b.t1.set(q, nxf * r1);
        b.t2.set(q, nxf * r2);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(b: &mut Lanes, dt: f64) {
    kernel(b, dt)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512(b: &mut Lanes, dt: f64) {
    kernel(b, dt)
}

impl PairsView<'_> {
    /// The frictional sphere–sphere pairs of range `r` in batches (module docs); results go to
    /// the pairs' slots or to the accumulators of the task `out` was made for.
    ///
    /// # Safety
    /// No other thread may run an overlapping range at the same time.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run_frict(
        &self,
        r: std::ops::Range<usize>,
        pair_slot: &[[u32; 2]],
        out: SlotWriter,
        ps: &Particles,
        mix: &MixTable,
        dt: f64,
        kernel: Kernel,
    ) {
        let (pos, radius) = (&ps.pos[..], &ps.radius[..]);
        let base = r.start;
        let (act, st) = self.pp.range(r);
        let mut b = Lanes::new();
        let mut m = 0;
        let n = st.len();
        for c0 in (0..n).step_by(SEL) {
            let c1 = (c0 + SEL).min(n);
            // Pass 1a: which pairs of the block may act (a superset of those that do).
            let mut bits = self.select(kernel, base + c0..base + c1, &act[c0..c1], pos, radius);
            while bits != 0 {
                let k = c0 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (i, j) = (self.i[base + k] as usize, self.j[base + k] as usize);
                let code = self.code[base + k];
                if !act[k] {
                    let br = branch_at(pos, radius, self.shifts, code, i, j);
                    let reach = br.r1 + br.r2;
                    if br.d2 >= reach * reach {
                        continue; // apart, and was: nothing to add
                    }
                    // A new contact. Its n_old is never used: the shear force starts at zero,
                    // and the rotation of a zero vector is zero.
                    act[k] = true;
                    let phys = mix.get(ps.material[i], ps.material[j]).phys(
                        br.r1,
                        br.r2,
                        reduced_mass(ps.mass[i], ps.mass[j]),
                    );
                    st[k] = FrictState::new(phys, V3::zeros());
                }
                (b.k[m], b.i[m], b.j[m]) = (k as u32, i as u32, j as u32);
                b.code[m] = code as u32;
                m += 1;
                if m == LANES {
                    b.fill(kernel, m, ps, st, self.shifts);
                    kernel.run(&mut b, dt);
                    scatter(&b, m, base, act, st, pair_slot, out);
                    m = 0;
                }
            }
        }
        if m > 0 {
            b.fill(kernel, m, ps, st, self.shifts);
            kernel.run(&mut b, dt);
            scatter(&b, m, base, act, st, pair_slot, out);
        }
    }

    /// Pass 1a of pairs `r` (at most [`SEL`]) with contact flags `act`: bit q is set if pair
    /// `r.start + q` is in contact or within reach (|l| < r₁ + r₂), the test of the per-pair
    /// loop, which repeats it exactly: a variant may set more bits (AVX-512 compares with
    /// [`PairList::reach2`], rounded up to f32), so only the cost depends on the variant.
    #[inline(always)]
    fn select(
        &self,
        kernel: Kernel,
        r: std::ops::Range<usize>,
        act: &[bool],
        pos: &[V3],
        radius: &[f64],
    ) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512 {
            // SAFETY: `Kernel::detect` found AVX-512F.
            return unsafe { self.select_avx512(r, act, pos, radius) };
        }
        let _ = kernel;
        self.select_scalar(r, 0, act, pos, radius)
    }

    /// [`Self::select`] pair by pair, from the `q0`-th pair of `r` on.
    #[inline(always)]
    fn select_scalar(
        &self,
        r: std::ops::Range<usize>,
        q0: usize,
        act: &[bool],
        pos: &[V3],
        radius: &[f64],
    ) -> u64 {
        let mut bits = 0u64;
        for (q, &a) in act.iter().enumerate().take(r.len()).skip(q0) {
            let k = r.start + q;
            let (i, j) = (self.i[k] as usize, self.j[k] as usize);
            let br = branch_at(pos, radius, self.shifts, self.code[k], i, j);
            let reach = br.r1 + br.r2;
            bits |= ((a | (br.d2 < reach * reach)) as u64) << q;
        }
        bits
    }

    /// [`Self::select`] eight pairs at a time with gathers. The shift is added for every pair
    /// (shift code 0 adds +0.0, which leaves |l|² unchanged), so |l|² has the bits of
    /// [`branch_at`]'s; it is compared with the pairs' (r₁ + r₂)² rounded up to f32, loaded
    /// instead of gathering both radii (chute, 2 threads: contact −3 %).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    unsafe fn select_avx512(
        &self,
        r: std::ops::Range<usize>,
        act: &[bool],
        pos: &[V3],
        radius: &[f64],
    ) -> u64 {
        use std::arch::x86_64::*;
        let len = r.len();
        assert!(len <= SEL && act.len() == len && r.end <= self.i.len());
        assert!(r.end <= self.j.len() && r.end <= self.code.len() && r.end <= self.reach2.len());
        let (px, sh) = (
            pos.as_ptr() as *const f64,
            self.shifts.as_ptr() as *const f64,
        );
        let three = _mm256_set1_epi32(3);
        let mut bits = 0u64;
        let mut q = 0;
        while q + 8 <= len {
            let k = r.start + q;
            // 8 flags (bytes 0 or 1) to 8 bits
            let a8 = u64::from_le_bytes(*(act.as_ptr().add(q) as *const [u8; 8]));
            let on = (a8.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
            if on == u8::MAX {
                // all in contact (most of the leading group): nothing to test
                bits |= 0xff << q;
                q += 8;
                continue;
            }
            let vi = _mm256_loadu_si256(self.i.as_ptr().add(k) as *const __m256i);
            let vj = _mm256_loadu_si256(self.j.as_ptr().add(k) as *const __m256i);
            let (i3, j3) = (_mm256_mullo_epi32(vi, three), _mm256_mullo_epi32(vj, three));
            let mut l = [0, 1, 2].map(|a| {
                _mm512_sub_pd(
                    _mm512_i32gather_pd::<8>(j3, px.add(a)),
                    _mm512_i32gather_pd::<8>(i3, px.add(a)),
                )
            });
            let c8 = std::ptr::read_unaligned(self.code.as_ptr().add(k) as *const u64);
            if c8 != 0 {
                // some periodic image: add the shifts (code 0 adds +0.0, |l|² unchanged)
                let vc = _mm256_cvtepu8_epi32(_mm_set1_epi64x(c8 as i64));
                let c3 = _mm256_mullo_epi32(vc, three);
                for (a, la) in l.iter_mut().enumerate() {
                    *la = _mm512_add_pd(*la, _mm512_i32gather_pd::<8>(c3, sh.add(a)));
                }
            }
            let d2 = _mm512_add_pd(
                _mm512_add_pd(_mm512_mul_pd(l[0], l[0]), _mm512_mul_pd(l[1], l[1])),
                _mm512_mul_pd(l[2], l[2]),
            );
            // (r₁ + r₂)² rounded up: a superset of the exact test (which the loop repeats)
            let reach2 = _mm512_cvtps_pd(_mm256_loadu_ps(self.reach2.as_ptr().add(k)));
            let near = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(d2, reach2);
            bits |= ((near | on) as u64) << q;
            q += 8;
        }
        bits | self.select_scalar(r, q, act, pos, radius)
    }
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
    pair_slot: &[[u32; 2]],
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
        out.sphere(base + k, ij, pair_slot, f, t1, t2);
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
        }
        b
    }

    #[test]
    fn kernels_agree_bitwise_and_match_the_scalar_law() {
        let dt = 1e-4;
        for seed in 1..20 {
            let mut g = random_lanes(seed);
            kernel(&mut g, dt);
            let mut w = random_lanes(seed);
            Kernel::detect().run(&mut w, dt);
            for q in 0..LANES {
                let what = format!("kernel {:?}", Kernel::detect());
                let outputs = [
                    (&g.f, &w.f),
                    (&g.fs_new, &w.fs_new),
                    (&g.t1, &w.t1),
                    (&g.t2, &w.t2),
                ];
                assert_same_lane(&outputs, q, &what);
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
                let f = super::super::law::linear::cundall_strack(
                    &mut st,
                    n,
                    u_n,
                    v12,
                    n.dot(&(w1 + w2)),
                    dt,
                );
                assert_eq!(f, g.f.get(q));
                assert_eq!(st.fs, g.fs_new.get(q));
                assert_eq!(g.u_n[q], u_n);
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
        pl.set_shifts(&ps.image, &ps.radius, &V3::new(4.0, 4.0, 4.0));
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
            a.fill_scalar(m, &ps, &st, v.shifts);
            b.fill(Kernel::detect(), m, &ps, &st, v.shifts);
            for q in 0..m {
                let what = format!("of {m}, {:?}", Kernel::detect());
                let inputs = [
                    (&a.l, &b.l),
                    (&a.v1, &b.v1),
                    (&a.w1, &b.w1),
                    (&a.v2, &b.v2),
                    (&a.w2, &b.w2),
                    (&a.fs, &b.fs),
                    (&a.n_old, &b.n_old),
                ];
                super::tests::assert_same_lane(&inputs, q, &what);
                for (x, y) in [
                    (&a.d2, &b.d2),
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

    /// Every variant of the select pass marks the pairs the scalar test marks, on random pairs
    /// with periodic shifts, contact flags and blocks of every length.
    #[test]
    fn select_variants_agree_with_the_scalar_test() {
        let (ps, mut pl) = pairs_scene();
        for (k, a) in pl.active.iter_mut().enumerate() {
            // sparse flags, and a run of 16 pairs all in contact
            *a = k % 5 == 0 || (128..144).contains(&k);
        }
        let act = pl.active.clone();
        let v = PairsView::new(&mut pl);
        let (pos, radius) = (&ps.pos[..], &ps.radius[..]);
        let mut hits = 0;
        assert!(v.code[..64].iter().all(|&c| c == 0) && v.code[600..].iter().any(|&c| c != 0));
        for (start, len) in [
            (120, 64),
            (0, 64),
            (3, 64),
            (64, 61),
            (200, 7),
            (500, 1),
            (700, 0),
            (800, 40),
        ] {
            let r = start..start + len;
            let want = v.select_scalar(r.clone(), 0, &act[r.clone()], pos, radius);
            let got = v.select(Kernel::detect(), r.clone(), &act[r.clone()], pos, radius);
            assert_eq!(got, want, "pairs {r:?}, kernel {:?}", Kernel::detect());
            hits += want.count_ones();
            assert!(len == 64 || want >> len == 0);
        }
        // both outcomes occur, apart from the flags
        assert!(hits > 20 && hits < 200, "{hits}");
    }
}
