//! Force assembly, two ways (ARCHITECTURE.md "Force assembly"); the integrator adds gravity.
//!
//! * Slots (reproducible mode, and default mode beyond [`MAX_ACC_TASKS`] threads): the contact
//!   loop writes each pair's force into one slot per owned particle, and each particle sums its
//!   slots in partner-gid order, then its wall slots in wall order. The result is bit-identical
//!   for any thread count, any particle ordering and (with ghosts computed bit-identically) any
//!   rank count, which is what reproducible mode needs (ARCHITECTURE.md "Reproducibility").
//! * Per-task accumulators (default mode, up to [`MAX_ACC_TASKS`] threads): the thesis'
//!   per-thread ForceContainer (§7.4.4) with tasks fixed at the rebuild, summed in task order:
//!   bit-identical for a given ranks × threads layout.
//!
//! No atomics, no locks.

use crate::contact::store::PairList;
use crate::V3;

/// Marks the side of a pair whose particle is a ghost (its force is applied by its owner).
pub const NO_SLOT: u32 = u32::MAX;

/// One contribution to a particle: force and torque.
pub type Slot = [V3; 2];

/// Per-owned-particle force slots (CSR), one per (pair, owned side), in partner-gid order:
/// the contact loop writes each pair's ±F and torques into its slots, the integrator sums a
/// particle's slots sequentially. Reads in the integrator are then contiguous, and the
/// summation order depends on gids alone.
#[derive(Clone, Default, Debug)]
pub struct ForceSlots {
    start: Vec<u32>,
    /// Slots of each sphere pair: [particle 1's, particle 2's] (or [`NO_SLOT`]).
    pub pair_slot: Vec<[u32; 2]>,
    wall_start: Vec<u32>,
    /// Slot of each wall pair's sphere.
    pub wall_slot: Vec<u32>,
    buf: Vec<Slot>,
    /// Default mode with at most [`MAX_ACC_TASKS`] threads: per-task accumulators instead of
    /// pair slots (the thesis' ForceContainer, §7.4.4): task t adds the forces of its pairs
    /// into `acc[t·n_owned + p]` in pair-list order, and the gather sums particle p's
    /// accumulators in task order. Bit-identical for a given ranks × threads layout, not across
    /// layouts; reproducible mode keeps the slots.
    acc: Vec<Slot>,
    /// Accumulator mode: number of tasks (the rayon thread count at the rebuild) and each
    /// task's two pair ranges, [leading part, trailing part] (see [`Self::task_ranges`]).
    n_tasks: usize,
    ranges: Vec<[std::ops::Range<usize>; 2]>,
    /// Accumulator mode: each pair's force on particle 1 (the slots hold it otherwise).
    pair_f: Vec<V3>,
    accumulate: bool,
    /// The last contact loop's writer was asked not to record forces (see [`Self::writer`];
    /// false before any step).
    unrecorded: bool,
    wall_buf: Vec<Slot>,
    fill: Vec<u32>,
    /// (partner gid, pair·2 + side) per slot, for ordering.
    entries: Vec<(u64, u32)>,
}

/// Most threads for which the default mode accumulates per task: the gather reads one
/// accumulator per task and particle, which beyond a few tasks costs more than the slots.
pub const MAX_ACC_TASKS: usize = 4;

/// Task t of `tasks`' share of a pair list whose first `n_lead` pairs (of `n`) form the leading
/// group (touching at the rebuild, the expensive ones): an equal part of each group, so the
/// tasks get equal work.
fn task_ranges(t: usize, tasks: usize, n_lead: usize, n: usize) -> [std::ops::Range<usize>; 2] {
    let part = |len: usize, k: usize| len * k / tasks;
    let n_trail = n - n_lead;
    [
        part(n_lead, t)..part(n_lead, t + 1),
        n_lead + part(n_trail, t)..n_lead + part(n_trail, t + 1),
    ]
}

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
    /// Rebuild after the pair lists changed (rebuild steps only). Each owned particle's slots
    /// are ordered by partner gid (sphere pairs), then by wall index.
    /// `fast`: the default (not reproducible) mode, which with one thread per rank accumulates
    /// in pair-list order instead of using slots (chute, 1 thread: +10–15 %; with two threads the
    /// slots' fine-grained chunks balance better, measured). The pair-list order is rebuilt
    /// identically after a restart (`PairList::leading` is checkpointed).
    pub fn build(&mut self, n_owned: usize, pairs: &PairList, walls: &PairList, fast: bool) {
        let tasks = rayon::current_num_threads();
        let accumulate = fast && tasks <= MAX_ACC_TASKS;
        self.accumulate = accumulate;
        if accumulate {
            self.build_accumulators(n_owned, pairs, tasks);
            self.build_walls(n_owned, walls);
            return;
        }
        offsets(n_owned, &[&pairs.i, &pairs.j], &mut self.start);
        self.fill.clear();
        self.fill.extend_from_slice(&self.start[..n_owned]);
        self.entries.clear();
        self.entries.resize(self.start[n_owned] as usize, (0, 0));
        for k in 0..pairs.len() {
            let (g1, g2) = pairs.key[k];
            for (side, p, partner) in [(0u32, pairs.i[k], g2), (1, pairs.j[k], g1)] {
                if (p as usize) < n_owned {
                    self.entries[self.fill[p as usize] as usize] =
                        (partner, (k as u32) << 1 | side);
                    self.fill[p as usize] += 1;
                }
            }
        }
        self.pair_slot.clear();
        self.pair_slot.resize(pairs.len(), [NO_SLOT; 2]);
        for p in 0..n_owned {
            let (a, b) = (self.start[p] as usize, self.start[p + 1] as usize);
            let seg = &mut self.entries[a..b];
            seg.sort_unstable();
            for (s, &(_, e)) in seg.iter().enumerate() {
                self.pair_slot[(e >> 1) as usize][(e & 1) as usize] = (a + s) as u32;
            }
        }
        self.buf.clear();
        self.buf
            .resize(self.start[n_owned] as usize, [V3::zeros(); 2]);
        self.build_walls(n_owned, walls);
    }

    /// Accumulator mode: `tasks` accumulators per owned particle, zero; no pair slots (empty
    /// ranges in `start`, so the gather finds only the wall slots there).
    fn build_accumulators(&mut self, n_owned: usize, pairs: &PairList, tasks: usize) {
        let n_pairs = pairs.len();
        self.n_tasks = tasks;
        // Every accumulator is zero between steps (each step's gather clears what its contact
        // loop added, in every task), so only new ones need writing (no 3 MB clear per chute
        // rebuild).
        debug_assert!(self.acc.iter().all(|a| *a == [V3::zeros(); 2]));
        self.acc.resize(tasks * n_owned, [V3::zeros(); 2]);
        let n_lead = pairs.leading.iter().take_while(|&&l| l).count();
        self.ranges.clear();
        self.ranges
            .extend((0..tasks).map(|t| task_ranges(t, tasks, n_lead, n_pairs)));
        self.start.clear();
        self.start.resize(n_owned + 1, 0);
        self.pair_slot.clear();
        // Read only for pairs in contact, which every recording step writes: stale elsewhere.
        self.pair_f.resize(n_pairs, V3::zeros());
        self.buf.clear();
    }

    fn build_walls(&mut self, n_owned: usize, walls: &PairList) {
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
        let n_owned = self.start.len().saturating_sub(1);
        self.unrecorded = !record;
        SlotWriter {
            acc: match self.accumulate {
                true => self.acc.as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            n_acc: self.acc.len(),
            n_owned,
            pair_f: match record {
                true => self.pair_f.as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            n_pair_f: self.pair_f.len(),
            pairs: self.buf.as_mut_ptr(),
            n_pairs: self.buf.len(),
            walls: self.wall_buf.as_mut_ptr(),
            n_walls: self.wall_buf.len(),
        }
    }

    /// The gather of one step (see [`Gather`]). The fields are borrowed one by one: the
    /// accumulators mutably (through a raw pointer), the slots shared.
    pub fn gather(&mut self) -> Gather<'_> {
        let ForceSlots {
            start,
            wall_start,
            buf,
            wall_buf,
            acc,
            accumulate,
            n_tasks,
            ..
        } = self;
        Gather {
            n_acc: acc.len(),
            acc: match accumulate {
                true => acc.as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            n_tasks: *n_tasks,
            n_owned: start.len().saturating_sub(1),
            start,
            buf,
            wall_start,
            wall_buf,
        }
    }

    /// Contact force and torque on owned particle `p` from the slots: its sphere slots in
    /// partner-gid order, then its wall slots in wall order.
    #[inline]
    pub fn contact_sum(&self, p: usize) -> (V3, V3) {
        slot_sum(&self.start, &self.buf, &self.wall_start, &self.wall_buf, p)
    }

    /// Accumulator mode: the pair ranges of each task (empty otherwise).
    pub fn task_ranges(&self) -> &[[std::ops::Range<usize>; 2]] {
        match self.accumulate {
            true => &self.ranges,
            false => &[],
        }
    }

    /// The last step recorded the forces ([`Self::writer`]'s `record`): the pair forces, and
    /// the integrator's total particle forces, which follow the same switch.
    pub fn recorded(&self) -> bool {
        !self.unrecorded
    }

    /// Force on particle 1 of sphere pair `k` (zero if particle 1 is a ghost), for a pair in
    /// contact (in accumulator mode other pairs may hold stale values).
    ///
    /// # Panics
    /// In accumulator mode if the last contact loop did not record pair forces.
    pub fn pair_force(&self, k: usize) -> V3 {
        if self.accumulate {
            assert!(
                !self.unrecorded,
                "pair forces were not recorded in the last step (Simulation::record_forces)"
            );
            return self.pair_f[k];
        }
        match self.pair_slot[k][0] {
            NO_SLOT => V3::zeros(),
            s => self.buf[s as usize][0],
        }
    }

    /// Force exerted by the sphere on the wall of wall pair `k`.
    pub fn wall_force(&self, k: usize) -> V3 {
        -self.wall_buf[self.wall_slot[k] as usize][0]
    }
}

#[inline(always)]
fn slot_sum(
    start: &[u32],
    buf: &[Slot],
    wall_start: &[u32],
    wall_buf: &[Slot],
    p: usize,
) -> (V3, V3) {
    let mut f = V3::zeros();
    let mut t = V3::zeros();
    for s in &buf[start[p] as usize..start[p + 1] as usize] {
        f += s[0];
        t += s[1];
    }
    for s in &wall_buf[wall_start[p] as usize..wall_start[p + 1] as usize] {
        f += s[0];
        t += s[1];
    }
    (f, t)
}

/// The integrator's view of the contact forces of a step: [`Gather::take`] returns particle p's
/// sum and, in accumulator mode, clears p's accumulators for the next step (each particle is
/// taken by one task: the writes are disjoint, like the slot writes).
pub struct Gather<'a> {
    acc: *mut Slot,
    n_acc: usize,
    n_tasks: usize,
    n_owned: usize,
    start: &'a [u32],
    buf: &'a [Slot],
    wall_start: &'a [u32],
    wall_buf: &'a [Slot],
}

// SAFETY: `take(p)` touches only particle p's accumulators, and the integrator takes every
// owned particle exactly once per step.
unsafe impl Send for Gather<'_> {}
unsafe impl Sync for Gather<'_> {}

impl Gather<'_> {
    /// Σ of particle p's contact forces and torques: accumulators in chunk order (default mode)
    /// or slots in partner-gid order, then the wall slots in wall order.
    #[inline]
    pub fn take(&self, p: usize) -> (V3, V3) {
        // Accumulator mode without walls has no slots: skip reading their (empty) ranges.
        let (mut f, mut t) = match self.buf.is_empty() && self.wall_buf.is_empty() {
            true => (V3::zeros(), V3::zeros()),
            false => slot_sum(self.start, self.buf, self.wall_start, self.wall_buf, p),
        };
        if !self.acc.is_null() {
            assert!(p < self.n_owned && self.n_tasks * self.n_owned <= self.n_acc);
            for task in 0..self.n_tasks {
                // SAFETY: in bounds (checked above); particle p's entries are used by this
                // call alone (type docs).
                let a = unsafe { &mut *self.acc.add(task * self.n_owned + p) };
                f += a[0];
                t += a[1];
                *a = [V3::zeros(); 2];
            }
        }
        (f, t)
    }
}

/// Shared write access to the slot buffers (or accumulators) for the parallel contact loops.
///
/// Each slot belongs to exactly one (pair, side) — [`ForceSlots::build`] hands slot indices
/// out once — so concurrent writes from different pairs never touch the same element; the
/// accumulators are written by one thread (the loop runs sequentially in that mode). No one
/// reads the buffers while the contact loop runs (`ForceSlots` is borrowed mutably to make the
/// writer).
#[derive(Clone, Copy)]
pub struct SlotWriter {
    pairs: *mut Slot,
    n_pairs: usize,
    /// Accumulator mode (null otherwise): per task, one accumulator per owned particle.
    acc: *mut Slot,
    n_acc: usize,
    n_owned: usize,
    /// Accumulator mode, recording pair forces (null otherwise).
    pair_f: *mut V3,
    n_pair_f: usize,
    walls: *mut Slot,
    n_walls: usize,
}

// SAFETY: see the type's documentation: disjoint writes only.
unsafe impl Send for SlotWriter {}
unsafe impl Sync for SlotWriter {}

impl SlotWriter {
    /// Write one sphere pair's result: +F and T1 to particle 1, −F and T2 to particle 2.
    #[inline]
    pub fn pair(&self, slot: [u32; 2], f: V3, t1: V3, t2: V3) {
        for (s, v) in [(slot[0], [f, t1]), (slot[1], [-f, t2])] {
            if s != NO_SLOT {
                assert!((s as usize) < self.n_pairs);
                // SAFETY: in bounds (checked) and written by this pair only (type docs).
                unsafe { *self.pairs.add(s as usize) = v };
            }
        }
    }

    /// Sphere pair k = (i, j) of task `task`: its result to the accumulators or to its slots
    /// `pair_slot[k]` (empty in accumulator mode), whichever mode this writer is in.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn sphere(
        &self,
        task: usize,
        k: usize,
        (i, j): (usize, usize),
        pair_slot: &[[u32; 2]],
        f: V3,
        t1: V3,
        t2: V3,
    ) {
        match self.accumulating() {
            true => self.accumulate(task, k, i, j, f, t1, t2),
            false => self.pair(pair_slot[k], f, t1, t2),
        }
    }

    /// Accumulator mode: add pair k's result to task `task`'s accumulators: +F, T1 on
    /// particle i, −F, T2 on particle j (owned sides only); remember F. Each task is run by one
    /// thread at a time and owns its accumulators; pair k belongs to one task.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn accumulate(&self, task: usize, k: usize, i: usize, j: usize, f: V3, t1: V3, t2: V3) {
        if !self.pair_f.is_null() {
            assert!(k < self.n_pair_f);
            // Like a slot: the force on particle 1 if it is owned here, else zero.
            let f1 = if i < self.n_owned { f } else { V3::zeros() };
            // SAFETY: in bounds (checked); pair k is written by its task only (see above).
            unsafe { *self.pair_f.add(k) = f1 };
        }
        let base = task * self.n_owned;
        for (p, v) in [(i, [f, t1]), (j, [-f, t2])] {
            if p < self.n_owned {
                assert!(base + p < self.n_acc);
                // SAFETY: in bounds (checked); task `task`'s accumulators are written by the
                // thread running that task only.
                unsafe {
                    let s = &mut *self.acc.add(base + p);
                    s[0] += v[0];
                    s[1] += v[1];
                }
            }
        }
    }

    pub fn accumulating(&self) -> bool {
        !self.acc.is_null()
    }

    /// Write one wall pair's result: −F (F acts on the wall) and the sphere's torque.
    #[inline]
    pub fn wall(&self, slot: u32, f: V3, t2: V3) {
        assert!((slot as usize) < self.n_walls);
        // SAFETY: in bounds (checked) and written by this pair only (type docs).
        unsafe { *self.walls.add(slot as usize) = [-f, t2] };
    }
}

/// Number of real contacts touching each owned particle (for snapshots).
pub fn contact_counts(n_owned: usize, pairs: &PairList, walls: &PairList, out: &mut Vec<u32>) {
    out.clear();
    out.resize(n_owned, 0);
    for (k, &a) in pairs.active.iter().enumerate() {
        if a {
            for p in [pairs.i[k], pairs.j[k]] {
                if (p as usize) < n_owned {
                    out[p as usize] += 1;
                }
            }
        }
    }
    for (k, &a) in walls.active.iter().enumerate() {
        if a {
            out[walls.i[k] as usize] += 1;
        }
    }
}
