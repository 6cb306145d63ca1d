//! Force assembly, two ways (ARCHITECTURE.md "Key decisions"); the integrator adds gravity.
//!
//! * Canonical accumulation (reproducible mode, and the default mode beyond
//!   [`MAX_ACC_TASKS`] threads): the pair list in an order that depends on the particles
//!   alone, one accumulator per particle shared by the tasks, contributions added in list
//!   order, those a task may not add directly deferred and folded after the loop in list order
//!   ([`ForceSlots::build_canonical`]). Bit-identical for any thread count, any particle
//!   ordering and (ghosts computed bit-identically) any rank count; its cost does not grow
//!   with the thread count.
//! * Per-task accumulators (default mode, up to [`MAX_ACC_TASKS`] threads): the thesis'
//!   per-thread ForceContainer (§7.4.4) with tasks fixed at the rebuild, summed in task order:
//!   bit-identical for a given ranks × threads layout; no sort at the rebuild, and the fused
//!   contact–integrator step (`sched`).
//!
//! Wall contacts write one slot each, summed per sphere in wall order. No atomics, no locks.

use crate::contact::store::PairList;
use crate::particles::Particles;
use crate::V3;
use rayon::prelude::*;

/// Marks the side of a pair whose particle is a ghost (its force is applied by its owner).
pub const NO_SLOT: u32 = u32::MAX;

/// One contribution to a particle: force and torque.
pub type Slot = [V3; 2];

/// The force assembly of the contact loop and the integrator: accumulators per task (default
/// mode) or shared (canonical mode), and one slot per wall contact (CSR by sphere, wall order).
#[derive(Clone, Default, Debug)]
pub struct ForceSlots {
    n_owned: usize,
    wall_start: Vec<u32>,
    /// Slot of each wall pair's sphere.
    pub wall_slot: Vec<u32>,
    /// Default mode (up to [`MAX_ACC_TASKS`] threads): per-task accumulators (the thesis'
    /// ForceContainer, §7.4.4): task t adds the forces of its pairs into its accumulator of
    /// particle p in pair-list order, and the gather sums particle p's accumulators in task
    /// order. Bit-identical for a given ranks × threads layout, not across layouts. Canonical
    /// mode: one accumulator per owned particle ([`Self::build_canonical`]).
    ///
    /// Task t's accumulators cover only the window of particles its pairs touch (`win[t]`):
    /// the pairs are in cell order and each task takes a contiguous part of each group, so
    /// the windows barely overlap, and the integrator reads and clears about one accumulator
    /// per particle instead of one per task (chute, 2 threads: integrate 0.19 → 0.16 s per
    /// 1000 steps, measured).
    acc: Vec<Slot>,
    /// Accumulator mode: each task's two pair ranges, [leading part, trailing part], one task
    /// per rayon thread at the rebuild (see [`Self::task_ranges`]).
    ranges: Vec<[std::ops::Range<usize>; 2]>,
    /// Accumulator mode: each task's window of owned particles and where it starts in `acc`.
    win: Vec<Window>,
    /// Each pair's force on particle 1 (zero if it is a ghost), stored in recording steps.
    pair_f: Vec<V3>,
    /// The last contact loop's writer was asked not to record forces (see [`Self::writer`];
    /// false before any step).
    unrecorded: bool,
    /// A contact loop ran (a writer was made) since this was made: forces exist.
    stepped: bool,
    wall_buf: Vec<Slot>,
    fill: Vec<u32>,
    /// (wall index, pair) per wall slot, for ordering.
    entries: Vec<(u64, u32)>,
    /// Reproducible mode: the accumulators are one per owned particle, shared by the tasks
    /// (see [`Self::build_canonical`]), and the contributions a task may not add directly go
    /// to `deferred`.
    canonical: bool,
    /// Canonical mode: each pair side's entry in `deferred` ([`NO_SLOT`]: added directly).
    def_slot: Vec<[u32; 2]>,
    /// Canonical mode: the particle of each deferred entry, and the entries (in canonical
    /// order: by task, then pair order).
    def_p: Vec<u32>,
    deferred: Vec<Slot>,
    /// Canonical mode: first task adding to each owned particle (scratch of the build).
    first: Vec<u32>,
}

/// The owned particles [lo, hi) whose accumulators one task has, at `acc[off..off + hi − lo]`.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Window {
    lo: usize,
    hi: usize,
    off: usize,
}

/// The window of the owned particles (below `n_owned`) among the pairs `ranges` of `pairs`.
fn window_of(ranges: &[std::ops::Range<usize>; 2], pairs: &PairList, n_owned: usize) -> Window {
    match crate::kernel::Kernel::detect() {
        crate::kernel::Kernel::Generic => window_in(ranges, pairs, n_owned),
        // SAFETY: `detect` found AVX2 (or AVX-512, which implies it).
        #[cfg(target_arch = "x86_64")]
        _ => unsafe { window_avx2(ranges, pairs, n_owned) },
    }
}

/// [`window_of`] with AVX2: unsigned 32-bit minima and maxima are SSE4.1 instructions, which
/// the generic x86-64 build lacks (its loop ran scalar: 0.2 ms per chute rebuild).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn window_avx2(
    ranges: &[std::ops::Range<usize>; 2],
    pairs: &PairList,
    n_owned: usize,
) -> Window {
    window_in(ranges, pairs, n_owned)
}

#[inline(always)]
fn window_in(ranges: &[std::ops::Range<usize>; 2], pairs: &PairList, n_owned: usize) -> Window {
    let n = n_owned as u32;
    // minima and maxima of u32 without a branch, one plain slice at a time (the compiler
    // vectorises the loop); ghosts (≥ n_owned) count as u32::MAX for the minimum and as 0
    // for the maximum
    let (mut lo, mut hi) = (u32::MAX, 0u32);
    let mut any = false;
    for r in ranges {
        for col in [&pairs.i[r.clone()], &pairs.j[r.clone()]] {
            let (mut l, mut h) = ([u32::MAX; 8], [0u32; 8]);
            let chunks = col.chunks_exact(8);
            for &p in chunks.remainder() {
                let ghost = ((p >= n) as u32).wrapping_neg();
                (l[0], h[0]) = (l[0].min(p | ghost), h[0].max(p & !ghost));
            }
            for c in chunks {
                for q in 0..8 {
                    let ghost = ((c[q] >= n) as u32).wrapping_neg();
                    (l[q], h[q]) = (l[q].min(c[q] | ghost), h[q].max(c[q] & !ghost));
                }
            }
            lo = l.iter().fold(lo, |a, &b| a.min(b));
            hi = h.iter().fold(hi, |a, &b| a.max(b));
            any |= lo < n;
        }
    }
    match any {
        true => Window {
            lo: lo as usize,
            hi: hi as usize + 1,
            off: 0,
        },
        false => Window::default(),
    }
}

/// Most threads for which the default mode accumulates per task: the windows of neighbouring
/// tasks overlap by about a layer of cells, and the gather reads an accumulator per window
/// that holds a particle, which beyond a few tasks costs more than the slots.
pub const MAX_ACC_TASKS: usize = 4;

/// The tasks' shares of a pair list whose first `n_lead` pairs form the leading group
/// (touching at the rebuild, the expensive ones): task t gets [leading part, trailing part].
///
/// Each group lists its pairs by their search particle (the lower local index, in cell order,
/// up to folded periodic images), so both groups are cut at the same particles: each task
/// then touches one contiguous run of particles (its accumulator window, [`window_of`]), and
/// the runs of neighbouring tasks overlap only by the reach of a pair. The cuts balance an
/// estimated cost: a leading pair (mostly in contact: select, law, scatter) as
/// [`LEAD_WEIGHT`] trailing ones (mostly a distance check). Cut at equal counts of each group
/// instead, the two cuts fell thousands of particles apart (chute: windows overlapped by 17 %
/// of the particles), and any assignment that is not contiguous in particles cost the contact
/// phase up to 20 % in cache misses (chute, 2 threads, measured).
fn task_ranges(
    pairs: &PairList,
    n_owned: usize,
    n_lead: usize,
    tasks: usize,
    out: &mut Vec<[std::ops::Range<usize>; 2]>,
) {
    let n = pairs.len();
    let low = |k: usize| pairs.i[k].min(pairs.j[k]) as usize;
    // first pair of [a, b) whose search particle is at or after p (binary search: the order
    // is by particle up to folded periodic images; any cut is correct, this one is local)
    let cut = |a: usize, b: usize, p: usize| {
        let (mut a, mut b) = (a, b);
        while a < b {
            let m = a + (b - a) / 2;
            match low(m) < p {
                true => a = m + 1,
                false => b = m,
            }
        }
        a
    };
    let cost = |p: usize| LEAD_WEIGHT * cut(0, n_lead, p) + (cut(n_lead, n, p) - n_lead);
    let total = LEAD_WEIGHT * n_lead + (n - n_lead);
    let mut lead = [0; MAX_ACC_TASKS + 1];
    let mut trail = [n_lead; MAX_ACC_TASKS + 1];
    (lead[tasks], trail[tasks]) = (n_lead, n);
    for t in 1..tasks {
        // the first particle p at which the cost before p reaches t/tasks of the total
        let goal = total * t / tasks;
        // (a pair's lower local index is owned: ghosts come after the owned particles)
        let (mut a, mut b) = (0, n_owned);
        while a < b {
            let m = a + (b - a) / 2;
            match cost(m) < goal {
                true => a = m + 1,
                false => b = m,
            }
        }
        lead[t] = cut(0, n_lead, a).max(lead[t - 1]);
        trail[t] = cut(n_lead, n, a).max(trail[t - 1]);
    }
    out.clear();
    out.extend((0..tasks).map(|t| [lead[t]..lead[t + 1], trail[t]..trail[t + 1]]));
}

/// The tasks' shares of a pair list in canonical order (`ForceSlots::build_canonical`): both
/// groups (the first `n_lead` pairs, the rest; each sorted by its pairs' lower particle rank
/// `low_rank`) cut at the same ranks, balancing the estimated cost as [`task_ranges`] does.
fn canonical_ranges(
    pairs: &PairList,
    n_lead: usize,
    tasks: usize,
    out: &mut Vec<[std::ops::Range<usize>; 2]>,
) {
    let n = pairs.len();
    let low = &pairs.low_rank;
    assert_eq!(low.len(), n, "canonical order not set");
    // first pair of [a, b) whose lower rank is at least r
    let cut = |a: usize, b: usize, r: u32| a + low[a..b].partition_point(|&x| x < r);
    let cost = |r: u32| LEAD_WEIGHT * cut(0, n_lead, r) + (cut(n_lead, n, r) - n_lead);
    let total = LEAD_WEIGHT * n_lead + (n - n_lead);
    let max_rank = low.iter().copied().max().map_or(0, |m| m + 1);
    let mut bounds = vec![(0, n_lead)];
    for t in 1..tasks {
        let goal = total * t / tasks;
        let (mut a, mut b) = (0u32, max_rank);
        while a < b {
            let m = a + (b - a) / 2;
            match cost(m) < goal {
                true => a = m + 1,
                false => b = m,
            }
        }
        let prev = bounds[t - 1];
        bounds.push((cut(0, n_lead, a).max(prev.0), cut(n_lead, n, a).max(prev.1)));
    }
    bounds.push((n_lead, n));
    out.clear();
    out.extend((0..tasks).map(|t| [bounds[t].0..bounds[t + 1].0, bounds[t].1..bounds[t + 1].1]));
}

/// Cost of a leading pair in units of a trailing one in [`task_ranges`] (chute, 2 threads:
/// ~5 ns per pair checked, ~15 ns more per pair in contact, measured).
const LEAD_WEIGHT: usize = 4;

/// Count slots per owned particle into `start` (CSR offsets).
fn offsets(n_owned: usize, cols: &[&[u32]], start: &mut Vec<u32>) {
    start.clear();
    start.resize(n_owned + 1, 0);
    for col in cols {
        for &p in col.iter() {
            if (p as usize) < n_owned {
                start[p as usize + 1] += 1;
            }
        }
    }
    for k in 0..n_owned {
        start[k + 1] += start[k];
    }
}

impl ForceSlots {
    /// Rebuild after the pair lists changed (rebuild steps only). `canonical`: the pair list
    /// is in canonical order and the assembly is [`Self::build_canonical`]'s (reproducible
    /// mode, or more than [`MAX_ACC_TASKS`] threads); otherwise per-task accumulators, at
    /// most [`MAX_ACC_TASKS`] tasks. The pair-list order is rebuilt identically after a
    /// restart (`PairList::leading` is checkpointed).
    pub fn build(&mut self, n_owned: usize, pairs: &PairList, walls: &PairList, canonical: bool) {
        let tasks = rayon::current_num_threads();
        self.n_owned = n_owned;
        self.canonical = canonical;
        match canonical {
            true => self.build_canonical(n_owned, pairs, tasks),
            false => self.build_accumulators(n_owned, pairs, tasks.min(MAX_ACC_TASKS)),
        }
        self.build_walls(n_owned, walls);
    }

    /// Default mode: `tasks` windows of accumulators, zero.
    fn build_accumulators(&mut self, n_owned: usize, pairs: &PairList, tasks: usize) {
        let n_pairs = pairs.len();
        let n_lead = pairs.leading.iter().take_while(|&&l| l).count();
        task_ranges(pairs, n_owned, n_lead, tasks, &mut self.ranges);
        self.win.clear();
        self.win
            .extend(self.ranges.iter().map(|r| window_of(r, pairs, n_owned)));
        let mut off = 0;
        for w in self.win.iter_mut() {
            w.off = off;
            off += w.hi - w.lo;
        }
        // Every accumulator is zero between steps (each step's gather clears what its contact
        // loop added, in every task), so only new ones need writing (no 3 MB clear per chute
        // rebuild).
        debug_assert!(self.acc.iter().all(|a| *a == [V3::zeros(); 2]));
        if off > self.acc.capacity() {
            // room to grow: the windows change a little at every rebuild (a reallocation
            // copies and faults in megabytes, ~1 ms)
            self.acc.reserve_exact(off + off / 4 - self.acc.len());
        }
        self.acc.resize(off, [V3::zeros(); 2]);
        // Read only for pairs in contact, which every recording step writes: stale elsewhere.
        crate::contact::store::resize_stale(&mut self.pair_f, n_pairs, V3::zeros());
    }

    /// Reproducible mode, any thread count: the pair list is in canonical order (each of its
    /// two groups — touching at the rebuild, the others — sorted by the particles' keys, the
    /// same order on any rank or thread count: `Simulation`), so adding the pairs'
    /// contributions in list order gives every particle the sum of its contributions in an
    /// order that depends on the particles alone. Both groups are cut into one range per task
    /// at the same particle ranks (`PairList::low_rank`), so the ranges of a task cover one
    /// region of space. One accumulator per owned particle is shared by the tasks: a task adds
    /// directly while a particle's contributions, in list order, stay within that task (the
    /// task runs its ranges in list order); from the first contribution in another task on,
    /// every later one goes to its own entry of `deferred`, which [`Self::fold_deferred`]
    /// adds after the loop in list order — the sums one task would have made. Deferred
    /// contributions are those of particles where two tasks' regions meet, and those that a
    /// neighbouring region's touching pairs make come before (a few per cent).
    fn build_canonical(&mut self, n_owned: usize, pairs: &PairList, tasks: usize) {
        let n = pairs.len();
        let n_lead = pairs.leading.iter().take_while(|&&l| l).count();
        canonical_ranges(pairs, n_lead, tasks, &mut self.ranges);
        self.win.clear();
        self.win.push(Window {
            lo: 0,
            hi: n_owned,
            off: 0,
        });
        debug_assert!(self.acc.iter().all(|a| *a == [V3::zeros(); 2]));
        if n_owned > self.acc.capacity() {
            self.acc
                .reserve_exact(n_owned + n_owned / 4 - self.acc.len());
        }
        self.acc.resize(n_owned, [V3::zeros(); 2]);
        // per owned particle: the task of its direct prefix, with DEFERRING set once a
        // contribution went to another task
        const DEFERRING: u32 = 1 << 31;
        self.first.clear();
        self.first.resize(n_owned, u32::MAX);
        self.def_p.clear();
        self.def_slot.clear();
        self.def_slot.resize(n, [NO_SLOT; 2]);
        for group in 0..2 {
            for (t, r) in self.ranges.iter().enumerate() {
                for k in r[group].clone() {
                    for (side, p) in [pairs.i[k], pairs.j[k]].into_iter().enumerate() {
                        let p = p as usize;
                        if p >= n_owned {
                            continue;
                        }
                        let f = &mut self.first[p];
                        if *f == u32::MAX {
                            *f = t as u32;
                        } else if *f != t as u32 {
                            *f |= DEFERRING;
                            self.def_slot[k][side] = self.def_p.len() as u32;
                            self.def_p.push(p as u32);
                        }
                    }
                }
            }
        }
        self.deferred.clear();
        self.deferred.resize(self.def_p.len(), [V3::zeros(); 2]);
        crate::contact::store::resize_stale(&mut self.pair_f, n, V3::zeros());
    }

    /// Canonical mode, after the contact loop: add the deferred contributions to their
    /// particles' accumulators in canonical order, and clear them.
    pub fn fold_deferred(&mut self) {
        if !self.canonical {
            return;
        }
        for (e, &p) in self.deferred.iter_mut().zip(&self.def_p) {
            let a = &mut self.acc[p as usize];
            a[0] += e[0];
            a[1] += e[1];
            *e = [V3::zeros(); 2];
        }
    }

    /// Reproducible mode's canonical accumulation (see [`Self::build_canonical`]).
    pub fn canonical(&self) -> bool {
        self.canonical
    }

    fn build_walls(&mut self, n_owned: usize, walls: &PairList) {
        if walls.is_empty() {
            // no wall pairs (a periodic or open box): no slots; skips three passes over the
            // particles (0.1 ms per chute rebuild)
            self.wall_start.clear();
            self.wall_start.resize(n_owned + 1, 0);
            self.wall_slot.clear();
            self.wall_buf.clear();
            return;
        }
        offsets(n_owned, &[&walls.i], &mut self.wall_start);
        self.fill.clear();
        self.fill.extend_from_slice(&self.wall_start[..n_owned]);
        // A sphere's wall slots go in wall-index order, whatever order the pair list keeps
        // (it puts touching pairs first, so the list order changes from rebuild to rebuild).
        self.entries.clear();
        self.entries
            .resize(self.wall_start[n_owned] as usize, (0, 0));
        for (k, &p) in walls.i.iter().enumerate() {
            self.entries[self.fill[p as usize] as usize] = (walls.j[k] as u64, k as u32);
            self.fill[p as usize] += 1;
        }
        self.wall_slot.clear();
        self.wall_slot.resize(walls.len(), 0);
        for p in 0..n_owned {
            let (a, b) = (self.wall_start[p] as usize, self.wall_start[p + 1] as usize);
            let seg = &mut self.entries[a..b];
            seg.sort_unstable();
            for (s, &(_, k)) in seg.iter().enumerate() {
                self.wall_slot[k as usize] = (a + s) as u32;
            }
        }
        self.wall_buf.clear();
        self.wall_buf
            .resize(self.wall_start[n_owned] as usize, [V3::zeros(); 2]);
    }

    /// Raw writer for the contact loops (see [`SlotWriter`]). Slots start at zero after a
    /// build; a loop may skip writing a pair that stayed apart. `record`: in accumulator mode,
    /// also store each pair's force for [`Self::pair_force`] (the slots hold it otherwise).
    pub fn writer(&mut self, record: bool) -> SlotWriter {
        let n_owned = self.n_owned;
        self.unrecorded = !record;
        self.stepped = true;
        SlotWriter {
            acc: self.acc.as_mut_ptr(),
            n_acc: self.acc.len(),
            acc_lo: 0,
            n_owned,
            pair_f: match record {
                true => self.pair_f.as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            n_pair_f: self.pair_f.len(),
            walls: self.wall_buf.as_mut_ptr(),
            n_walls: self.wall_buf.len(),
            def_slot: match self.canonical {
                true => self.def_slot.as_ptr(),
                false => std::ptr::null(),
            },
            n_def_slot: self.def_slot.len(),
            deferred: self.deferred.as_mut_ptr(),
            n_deferred: self.deferred.len(),
        }
    }

    /// The gather of one step (see [`Gather`]). The fields are borrowed one by one: the
    /// accumulators mutably (through a raw pointer), the slots shared.
    pub fn gather(&mut self) -> Gather<'_> {
        let ForceSlots {
            n_owned,
            wall_start,
            wall_buf,
            acc,
            win,
            ..
        } = self;
        // the windows lie in `acc` (checked once per step, not per block of particles)
        assert!(win
            .iter()
            .all(|w| w.lo <= w.hi && w.off + (w.hi - w.lo) <= acc.len()));
        Gather {
            acc: acc.as_mut_ptr(),
            win: &win[..],
            n_owned: *n_owned,
            wall_start,
            wall_buf,
        }
    }

    /// The writer for task `task`'s pairs: in accumulator mode, `out` narrowed to the task's
    /// accumulators; otherwise `out` itself.
    fn task_writer(&self, out: SlotWriter, task: usize) -> SlotWriter {
        match self.canonical {
            false => {
                let w = self.win[task];
                assert!(w.off + (w.hi - w.lo) <= out.n_acc && w.lo <= w.hi);
                SlotWriter {
                    // SAFETY: in bounds (checked).
                    acc: unsafe { out.acc.add(w.off) },
                    n_acc: w.hi - w.lo,
                    acc_lo: w.lo,
                    ..out
                }
            }
            true => out,
        }
    }

    /// The tasks of this step's contact loop with `out` (see [`TaskPlan`]; the default mode's
    /// accumulators: at most [`MAX_ACC_TASKS`] tasks).
    pub fn task_plan(&self, out: SlotWriter) -> TaskPlan {
        let mut plan = TaskPlan {
            n: self.task_ranges().len(),
            ranges: Default::default(),
            writers: [out; MAX_ACC_TASKS],
        };
        for (t, rs) in self.task_ranges().iter().enumerate() {
            plan.ranges[t] = rs.clone();
            plan.writers[t] = self.task_writer(out, t);
        }
        plan
    }

    /// The pair ranges of each task, [leading part, trailing part].
    pub fn task_ranges(&self) -> &[[std::ops::Range<usize>; 2]] {
        &self.ranges
    }

    /// The last step recorded the forces ([`Self::writer`]'s `record`): the pair forces, and
    /// the integrator's total particle forces, which follow the same switch.
    pub fn recorded(&self) -> bool {
        !self.unrecorded
    }

    /// The forces of a step are there to read: a step ran in this process (not at step 0, nor
    /// right after a restart) and recorded them ([`Self::recorded`]).
    pub fn forces_known(&self) -> bool {
        self.stepped && !self.unrecorded
    }

    /// Force on particle 1 of sphere pair `k` (zero if particle 1 is a ghost), for a pair in
    /// contact (other pairs may hold stale values).
    ///
    /// # Panics
    /// If the last contact loop did not record pair forces.
    pub fn pair_force(&self, k: usize) -> V3 {
        assert!(
            !self.unrecorded,
            "pair forces were not recorded in the last step (Simulation::record_forces)"
        );
        self.pair_f[k]
    }

    /// Force exerted by the sphere on the wall of wall pair `k`.
    pub fn wall_force(&self, k: usize) -> V3 {
        -self.wall_buf[self.wall_slot[k] as usize][0]
    }
}

/// Σ of sphere `p`'s wall slots, in wall order.
#[inline(always)]
fn wall_sum(wall_start: &[u32], wall_buf: &[Slot], p: usize) -> (V3, V3) {
    let mut f = V3::zeros();
    let mut t = V3::zeros();
    for s in &wall_buf[wall_start[p] as usize..wall_start[p + 1] as usize] {
        f += s[0];
        t += s[1];
    }
    (f, t)
}

/// The accumulator tasks of one step's contact loop ([`ForceSlots::task_plan`]), copied out of
/// the slots so that the integrator's [`Gather`] can be made beside them: task t runs the pair
/// ranges `ranges[t]` with `writers[t]`, which writes the accumulators of the owned particles
/// [`SlotWriter::window`] (its pairs touch no other owned particle).
pub struct TaskPlan {
    pub n: usize,
    pub ranges: [[std::ops::Range<usize>; 2]; MAX_ACC_TASKS],
    pub writers: [SlotWriter; MAX_ACC_TASKS],
}

impl TaskPlan {
    /// Task t: `run(range, writer)` for each of its pair ranges, in order.
    pub fn run_task(&self, t: usize, mut run: impl FnMut(std::ops::Range<usize>, SlotWriter)) {
        for r in &self.ranges[t] {
            run(r.clone(), self.writers[t]);
        }
    }
}

/// The integrator's view of the contact forces of a step: [`Gather::take_block`] returns the
/// sums of a block of particles and, in accumulator mode, clears their accumulators for the
/// next step (each particle is taken by one task: the writes are disjoint, like the slot
/// writes).
pub struct Gather<'a> {
    acc: *mut Slot,
    win: &'a [Window],
    n_owned: usize,
    wall_start: &'a [u32],
    wall_buf: &'a [Slot],
}

// SAFETY: `take_block(p0, ..)` touches only its particles' accumulators, and the integrator
// takes every owned particle exactly once per step.
unsafe impl Send for Gather<'_> {}
unsafe impl Sync for Gather<'_> {}

impl Gather<'_> {
    /// Σ of the contact forces and torques of particles p0.. into `f` and `t` (as many as
    /// they hold): the wall slots in wall order, then the accumulators (in task order in the
    /// default mode; the canonical mode has one window). Clears the accumulators read.
    /// A block of particles meets each task's window in one contiguous run: the accumulators
    /// are summed run by run, without a test per particle and task.
    #[inline]
    pub fn take_block(&self, p0: usize, f: &mut [V3], t: &mut [V3]) {
        let n = f.len();
        assert!(t.len() == n && p0 + n <= self.n_owned);
        // Without wall contacts: skip reading their (empty) ranges.
        let mut summed = !self.wall_buf.is_empty();
        if summed {
            for k in 0..n {
                (f[k], t[k]) = wall_sum(self.wall_start, self.wall_buf, p0 + k);
            }
        }
        for w in self.win {
            let (a, b) = (p0.max(w.lo), (p0 + n).min(w.hi));
            if a >= b {
                continue;
            }
            if !summed && (a, b) != (p0, p0 + n) {
                f.fill(V3::zeros());
                t.fill(V3::zeros());
                summed = true;
            }
            // SAFETY: in bounds (every window lies in `acc`: checked by `ForceSlots::gather`);
            // particles a..b's entries are used by this call alone (type docs).
            let acc =
                unsafe { std::slice::from_raw_parts_mut(self.acc.add(w.off + a - w.lo), b - a) };
            let (f, t) = (&mut f[a - p0..b - p0], &mut t[a - p0..b - p0]);
            // The first sum of a block starts from zero (0 + x: the bits of a sum from zero)
            // in the same pass: a separate clearing pass cost the chute integrator 5 %.
            let z = V3::zeros();
            for ((s, f), t) in acc.iter_mut().zip(f).zip(t) {
                (*f, *t) = match summed {
                    true => (*f + s[0], *t + s[1]),
                    false => (z + s[0], z + s[1]),
                };
                *s = [V3::zeros(); 2];
            }
            summed = true;
        }
        if !summed {
            f.fill(V3::zeros());
            t.fill(V3::zeros());
        }
    }
}

/// Shared write access to the accumulators and wall slots for the parallel contact loops.
///
/// Each wall slot and each deferred entry belongs to exactly one (pair, side) — the build
/// hands them out once — so concurrent writes from different pairs never touch the same
/// element; a task's accumulators (default mode), or the accumulators of the particles a task
/// adds to directly (canonical mode), are written by the thread running that task only. No
/// one reads the buffers while the contact loop runs (`ForceSlots` is borrowed mutably to
/// make the writer).
#[derive(Clone, Copy)]
pub struct SlotWriter {
    /// All tasks' accumulators, or once made for one task ([`ForceSlots::task_writer`]) that
    /// task's, of owned particles `acc_lo..acc_lo + n_acc` (all of them before; in canonical
    /// mode always all).
    acc: *mut Slot,
    n_acc: usize,
    acc_lo: usize,
    n_owned: usize,
    /// Recording pair forces (null otherwise).
    pair_f: *mut V3,
    n_pair_f: usize,
    walls: *mut Slot,
    n_walls: usize,
    /// Canonical mode (null otherwise): each pair side's deferred entry, and the entries.
    def_slot: *const [u32; 2],
    n_def_slot: usize,
    deferred: *mut Slot,
    n_deferred: usize,
}

// SAFETY: see the type's documentation: disjoint writes only.
unsafe impl Send for SlotWriter {}
unsafe impl Sync for SlotWriter {}

impl SlotWriter {
    /// Sphere pair k = (i, j): +F, T1 on particle i, −F, T2 on particle j, through the
    /// accumulators of the task this writer was made for.
    #[inline(always)]
    pub fn sphere(&self, k: usize, (i, j): (usize, usize), f: V3, t1: V3, t2: V3) {
        self.accumulate(k, i, j, f, t1, t2)
    }

    /// A writer made for one task ([`ForceSlots::task_writer`]): add pair
    /// k's result to the task's accumulators: +F, T1 on particle i, −F, T2 on particle j
    /// (owned sides only); remember F. Each task is run by one thread at a time and owns its
    /// accumulators; pair k belongs to one task. Always inlined: as a call from the CPM loop
    /// it took 11 % of the CPM contact phase (three force vectors through the stack per pair);
    /// inlined, CPM −6 %, chute contact −5 % (measured, bench/yade_cpm.sh and the chute).
    #[inline(always)]
    pub fn accumulate(&self, k: usize, i: usize, j: usize, f: V3, t1: V3, t2: V3) {
        if !self.pair_f.is_null() {
            assert!(k < self.n_pair_f);
            // Like a slot: the force on particle 1 if it is owned here, else zero.
            let f1 = if i < self.n_owned { f } else { V3::zeros() };
            // SAFETY: in bounds (checked); pair k is written by its task only (see above).
            unsafe { *self.pair_f.add(k) = f1 };
        }
        for (side, (p, v)) in [(i, [f, t1]), (j, [-f, t2])].into_iter().enumerate() {
            if p < self.n_owned {
                if !self.def_slot.is_null() {
                    assert!(k < self.n_def_slot);
                    // SAFETY: in bounds (checked); read only.
                    let d = unsafe { (*self.def_slot.add(k))[side] };
                    if d != NO_SLOT {
                        assert!((d as usize) < self.n_deferred);
                        // SAFETY: in bounds (checked); entry d belongs to this pair side only.
                        unsafe { *self.deferred.add(d as usize) = v };
                        continue;
                    }
                }
                // The window holds every owned particle of the task's pairs (`window_of`);
                // in canonical mode all owned particles, and a task adds only to those whose
                // first contribution is its own (`ForceSlots::build_canonical`).
                let s = p.wrapping_sub(self.acc_lo);
                assert!(s < self.n_acc, "pair outside its task's window");
                // SAFETY: in bounds (checked); a task's accumulators are written by the
                // thread running that task only.
                unsafe {
                    let s = &mut *self.acc.add(s);
                    s[0] += v[0];
                    s[1] += v[1];
                }
            }
        }
    }

    /// The owned particles whose accumulators this writer holds (a task's window, see
    /// [`ForceSlots::task_writer`]).
    pub fn window(&self) -> std::ops::Range<usize> {
        self.acc_lo..self.acc_lo + self.n_acc
    }

    /// Write one wall pair's result: −F (F acts on the wall) and the sphere's torque.
    #[inline]
    pub fn wall(&self, slot: u32, f: V3, t2: V3) {
        assert!((slot as usize) < self.n_walls);
        // SAFETY: in bounds (checked) and written by this pair only (type docs).
        unsafe { *self.walls.add(slot as usize) = [-f, t2] };
    }
}

/// Number of real contacts touching each owned particle (for snapshots): [all (walls and
/// facets too), with other particles only (the coordination number)].
pub fn contact_counts(n_owned: usize, pairs: &PairList, walls: &PairList, out: &mut Vec<[u32; 2]>) {
    out.clear();
    out.resize(n_owned, [0; 2]);
    for (k, &a) in pairs.active.iter().enumerate() {
        if a {
            for p in [pairs.i[k], pairs.j[k]] {
                if (p as usize) < n_owned {
                    out[p as usize][0] += 1;
                    out[p as usize][1] += 1;
                }
            }
        }
    }
    for (k, &a) in walls.active.iter().enumerate() {
        if a {
            out[walls.i[k] as usize][0] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::gen::Lcg;

    /// A pair list as the search and merge leave it: each group lists pairs by search particle
    /// s (partners after s, a few folded periodic images before it, some ghosts).
    fn pair_list(n_owned: usize, n_lead: usize, n: usize, seed: u64) -> PairList {
        let mut rng = Lcg::at(seed, 0);
        let mut u = move || rng.uniform();
        let mut pairs = PairList::for_law(false, false);
        for (g, len) in [(true, n_lead), (false, n - n_lead)] {
            let mut s: Vec<usize> = (0..len).map(|_| (u() * n_owned as f64) as usize).collect();
            s.sort_unstable();
            for s in s {
                let partner = match u() {
                    x if x < 0.1 => n_owned + (u() * 50.0) as usize, // a ghost
                    x if x < 0.2 => s.saturating_sub((u() * 40.0) as usize), // folded image
                    _ => (s + 1 + (u() * 30.0) as usize).min(n_owned - 1),
                };
                let (i, j) = match u() < 0.5 {
                    true => (s, partner),
                    false => (partner, s),
                };
                pairs.key.push((i as u64, j as u64));
                pairs.i.push(i as u32);
                pairs.j.push(j as u32);
                pairs.leading.push(g);
                pairs.active.push(true);
            }
        }
        pairs
    }

    #[test]
    fn task_ranges_cut_each_group_in_order() {
        let pairs = pair_list(2000, 1500, 9000, 3);
        for tasks in 1..=MAX_ACC_TASKS {
            let mut r = Vec::new();
            task_ranges(&pairs, 2000, 1500, tasks, &mut r);
            assert_eq!(r.len(), tasks);
            for (g, (a, b)) in [(0, 1500), (1500, 9000)].into_iter().enumerate() {
                assert_eq!(r[0][g].start, a, "{tasks} tasks");
                assert_eq!(r[tasks - 1][g].end, b, "{tasks} tasks");
                for t in 1..tasks {
                    assert_eq!(r[t][g].start, r[t - 1][g].end, "{tasks} tasks");
                }
            }
            // balanced by the estimated cost within a few per cent
            let cost = |t: usize| LEAD_WEIGHT * r[t][0].len() + r[t][1].len();
            let total = LEAD_WEIGHT * 1500 + 7500;
            for t in 0..tasks {
                let dev = (cost(t) as f64 * tasks as f64 / total as f64 - 1.0).abs();
                assert!(dev < 0.05, "{tasks} tasks, task {t}: {dev}");
            }
        }
    }

    #[test]
    fn windowed_accumulators_sum_each_particle_in_task_order() {
        let (n_owned, n_lead, n) = (3000, 2000, 12000);
        let pairs = pair_list(n_owned, n_lead, n, 11);
        let mut rng = Lcg::at(5, 0);
        let mut v3 = move || V3::new(rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform());
        let forces: Vec<[V3; 3]> = (0..n).map(|_| [v3(), v3(), v3()]).collect();
        for tasks in 1..=MAX_ACC_TASKS {
            let mut slots = ForceSlots {
                n_owned,
                ..Default::default()
            };
            slots.build_accumulators(n_owned, &pairs, tasks);
            slots.build_walls(n_owned, &PairList::default());
            // each task's sums from zero in pair order, then the tasks in order
            let mut part = vec![vec![None::<[V3; 2]>; n_owned]; tasks];
            let out = slots.writer(false);
            for (t, rs) in slots.task_ranges().iter().enumerate() {
                let w = slots.task_writer(out, t);
                for k in rs.iter().flat_map(|r| r.clone()) {
                    let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
                    let [f, t1, t2] = forces[k];
                    w.accumulate(k, i, j, f, t1, t2);
                    for (p, v) in [(i, [f, t1]), (j, [-f, t2])] {
                        if p < n_owned {
                            let s = part[t][p].get_or_insert([V3::zeros(); 2]);
                            (s[0], s[1]) = (s[0] + v[0], s[1] + v[1]);
                        }
                    }
                }
            }
            let g = slots.gather();
            let mut p0 = 0;
            for len in (1..).map(|b| [64, 7, 1, 33][b % 4]) {
                let len = len.min(n_owned - p0);
                let (mut f, mut t) = (vec![V3::repeat(9.0); len], vec![V3::repeat(9.0); len]);
                g.take_block(p0, &mut f, &mut t);
                for q in 0..len {
                    let mut want = [V3::zeros(); 2];
                    for s in part.iter().filter_map(|p| p[p0 + q]) {
                        want = [want[0] + s[0], want[1] + s[1]];
                    }
                    assert_eq!([f[q], t[q]], want, "{tasks} tasks, particle {}", p0 + q);
                }
                p0 += len;
                if p0 == n_owned {
                    break;
                }
            }
            assert!(slots.acc.iter().all(|a| *a == [V3::zeros(); 2]));
            // the windows overlap by about a pair's reach, not a task's share
            let total: usize = slots.win.iter().map(|w| w.hi - w.lo).sum();
            assert!(total <= n_owned + tasks * 100, "{tasks} tasks: {total}");
        }
    }

    /// Reproducible mode: with the list in canonical order, any number of tasks — run in any
    /// order — gives each particle the bits of one task adding the list in order, and that is
    /// the sum over its partners in key order (here local indices are the keys).
    #[test]
    fn canonical_accumulation_is_the_same_for_any_task_count() {
        let (n_owned, n_lead, n) = (3000, 2000, 12000);
        let mut pairs = pair_list(n_owned, n_lead, n, 17);
        pairs.state.resize(n, Default::default());
        // canonical order: each group by (lower index, higher index)
        let mut order: Vec<u32> = (0..n as u32).collect();
        let key = |k: u32| {
            let (i, j) = (pairs.i[k as usize], pairs.j[k as usize]);
            (!pairs.leading[k as usize], i.min(j), i.max(j))
        };
        order.sort_by_key(|&k| key(k));
        let m = order.len();
        pairs.permute(&order);
        pairs.low_rank = (0..m).map(|k| pairs.i[k].min(pairs.j[k])).collect();
        let mut rng = Lcg::at(9, 0);
        let mut v3 = move || V3::new(rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform());
        let forces: Vec<[V3; 3]> = (0..m).map(|_| [v3(), v3(), v3()]).collect();
        // one task, in list order
        let mut want = vec![[V3::zeros(); 2]; n_owned];
        for (k, &[f, t1, t2]) in forces.iter().enumerate() {
            let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
            for (p, v) in [(i, [f, t1]), (j, [-f, t2])] {
                if p < n_owned {
                    want[p] = [want[p][0] + v[0], want[p][1] + v[1]];
                }
            }
        }
        for tasks in 1..=8 {
            let mut slots = ForceSlots::default();
            slots.build(n_owned, &pairs, &PairList::default(), true);
            slots.build_canonical(n_owned, &pairs, tasks);
            assert_eq!(slots.task_ranges().len(), tasks);
            let out = slots.writer(false);
            // the tasks in reverse order: their direct writes are disjoint
            for (t, rs) in slots.task_ranges().iter().enumerate().rev() {
                let w = slots.task_writer(out, t);
                for k in rs.iter().flat_map(|r| r.clone()) {
                    let [f, t1, t2] = forces[k];
                    w.accumulate(k, pairs.i[k] as usize, pairs.j[k] as usize, f, t1, t2);
                }
            }
            slots.fold_deferred();
            let g = slots.gather();
            let (mut f, mut t) = (vec![V3::zeros(); n_owned], vec![V3::zeros(); n_owned]);
            g.take_block(0, &mut f, &mut t);
            for p in 0..n_owned {
                assert_eq!([f[p], t[p]], want[p], "{tasks} tasks, particle {p}");
            }
            let deferred = slots.def_p.len();
            assert!(tasks > 1 || deferred == 0);
            assert!(
                deferred * 10 < 2 * m,
                "{tasks} tasks: {deferred} of {m} deferred"
            );
        }
    }
}

/// Scratch of [`canonical_order`].
#[derive(Clone, Default)]
pub(crate) struct Canon {
    keys: Vec<(u64, u64)>,
    by_key: Vec<u32>,
    rank: Vec<u32>,
    pairs: Vec<(u64, u32)>,
    scratch: Vec<(u64, u32)>,
    order: Vec<u32>,
}

/// Reproducible mode: put the pairs in an order that depends on the particles alone, whatever
/// the decomposition, the storage order or the thread count: by the keys of their two
/// particles, (lower key, higher key), a particle's key being (its cell in a grid of `h`
/// cells anchored at `lo`, its gid) — close to the order of space, so the contact loop still
/// walks the particles nearly in memory order. Adding the pairs' contributions in this order
/// gives each particle the sum over its partners in the order of their keys
/// (`ForceSlots::build_canonical`): the contributions of partners with lower keys come in
/// pairs led by those partners, before the pairs the particle leads. A periodic image has
/// its origin's key (ghosts keep the owner's coordinates, `halo.rs`).
pub(crate) fn canonical_order(pairs: &mut PairList, ps: &Particles, lo: V3, h: f64, c: &mut Canon) {
    let n = ps.len();
    let cell = |x: f64, a: usize| ((x - lo[a]) / h).clamp(0.0, (1u64 << 20) as f64 - 1.0) as u64;
    c.keys.clear();
    c.keys.extend((0..n).map(|p| {
        let x = ps.pos[p];
        (
            (cell(x.z, 2) << 40) | (cell(x.y, 1) << 20) | cell(x.x, 0),
            ps.gid[p],
        )
    }));
    c.by_key.clear();
    c.by_key.extend(0..n as u32);
    let keys = &c.keys;
    c.by_key.par_sort_unstable_by_key(|&p| keys[p as usize]);
    // dense ranks: equal keys (a particle and its periodic images) share one
    c.rank.clear();
    c.rank.resize(n, 0);
    let mut r = 0u32;
    for w in 0..n {
        let p = c.by_key[w] as usize;
        if w > 0 && keys[p] != keys[c.by_key[w - 1] as usize] {
            r += 1;
        }
        c.rank[p] = r;
    }
    let rank = &c.rank;
    // key = lower rank · 2^bits + higher rank: 2·bits significant bits, radix-sorted
    let bits = 64 - (r as u64).leading_zeros();
    c.pairs.clear();
    c.pairs.extend((0..pairs.len()).map(|k| {
        let (a, b) = (rank[pairs.i[k] as usize], rank[pairs.j[k] as usize]);
        (((a.min(b) as u64) << bits) | a.max(b) as u64, k as u32)
    }));
    // The merge puts the pairs touching at the rebuild first (the leading group: the contact
    // loop streams their histories); each group is sorted apart — the order (group, keys)
    // depends on the particles alone too, touching being physics.
    let n_lead = pairs.leading.iter().take_while(|&&l| l).count();
    c.scratch.resize(c.pairs.len(), (0, 0));
    let (lead, rest) = c.pairs.split_at_mut(n_lead);
    let (sl, sr) = c.scratch.split_at_mut(n_lead);
    rayon::join(
        || radix_sort(lead, sl, 2 * bits),
        || radix_sort(rest, sr, 2 * bits),
    );
    c.order.clear();
    c.order.extend(c.pairs.iter().map(|&(_, k)| k));
    pairs.permute(&c.order);
    // the pairs' lower particle rank, for the tasks' cuts (`ForceSlots::build_canonical`)
    pairs.low_rank.clear();
    pairs
        .low_rank
        .extend(c.pairs.iter().map(|&(key, _)| (key >> bits) as u32));
}

/// Sort `v` by its keys' low `bits` bits (LSD radix, 11-bit digits, through `scratch` of the
/// same length): the pair keys of [`canonical_order`] have ~35 significant bits, 4 passes
/// (a comparison sort of the chute's pairs took ~9 ms per rebuild).
fn radix_sort(v: &mut [(u64, u32)], scratch: &mut [(u64, u32)], bits: u32) {
    const DIGIT: u32 = 11;
    const MASK: u64 = (1 << DIGIT) - 1;
    let passes = bits.div_ceil(DIGIT).max(1);
    let (mut src, mut dst) = (v, scratch);
    for pass in 0..passes {
        let shift = pass * DIGIT;
        let mut count = [0usize; 1 << DIGIT];
        for &(k, _) in src.iter() {
            count[((k >> shift) & MASK) as usize] += 1;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        for &e in src.iter() {
            let d = ((e.0 >> shift) & MASK) as usize;
            dst[count[d]] = e;
            count[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    if passes % 2 == 1 {
        // the sorted data is in `scratch`: copy it back
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod canonical_tests {
    use super::*;

    /// The radix sort of the canonical order sorts like a comparison sort, for odd and even
    /// numbers of passes and keys with equal parts.
    #[test]
    fn radix_sort_sorts() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for bits in [1u32, 11, 22, 35, 40] {
            let v: Vec<(u64, u32)> = (0..5000u32)
                .map(|k| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x & ((1u64 << bits) - 1) & !0xf0, k)
                })
                .collect();
            let mut a = v.clone();
            let mut scratch = vec![(0, 0); a.len()];
            radix_sort(&mut a, &mut scratch, bits);
            let mut b = v;
            b.sort_by_key(|e| e.0); // stable, as the LSD radix sort
            assert_eq!(a, b, "{bits} bits");
        }
    }
}
