//! Force assembly: each owned particle sums its contacts' forces in partner-gid order, then its
//! wall contacts in wall order (an ordered gather); the integrator adds gravity.
//!
//! This replaces the thesis' per-thread ForceContainer (§7.4.4) — chunked accumulators reduced
//! in a fixed order — with something stricter and no slower on few cores: the contact loop
//! writes each pair's force into one slot per owned particle, and each particle sums its slots
//! in an order that depends on gids alone. The result is bit-identical for any thread count, any particle ordering and (with
//! ghosts computed bit-identically) any rank count, which is what reproducible mode needs
//! (ARCHITECTURE.md "Reproducibility"). No atomics, no locks.

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
    wall_buf: Vec<Slot>,
    fill: Vec<u32>,
    /// (partner gid, pair·2 + side) per slot, for ordering.
    entries: Vec<(u64, u32)>,
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
    pub fn build(&mut self, n_owned: usize, pairs: &PairList, walls: &PairList) {
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
    /// build; a loop may skip writing a pair that stayed apart.
    pub fn writer(&mut self) -> SlotWriter {
        SlotWriter {
            pairs: self.buf.as_mut_ptr(),
            n_pairs: self.buf.len(),
            walls: self.wall_buf.as_mut_ptr(),
            n_walls: self.wall_buf.len(),
        }
    }

    /// Contact force and torque on owned particle `p`: its sphere slots in partner-gid order,
    /// then its wall slots in wall order.
    #[inline]
    pub fn contact_sum(&self, p: usize) -> (V3, V3) {
        let mut f = V3::zeros();
        let mut t = V3::zeros();
        for s in &self.buf[self.start[p] as usize..self.start[p + 1] as usize] {
            f += s[0];
            t += s[1];
        }
        for s in &self.wall_buf[self.wall_start[p] as usize..self.wall_start[p + 1] as usize] {
            f += s[0];
            t += s[1];
        }
        (f, t)
    }

    /// Force on particle 1 of sphere pair `k` (zero if particle 1 is a ghost).
    pub fn pair_force(&self, k: usize) -> V3 {
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

/// Shared write access to the slot buffers for the parallel contact loops.
///
/// Each slot belongs to exactly one (pair, side) — [`ForceSlots::build`] hands slot indices
/// out once — so concurrent writes from different pairs never touch the same element, and no
/// one reads the buffers while the contact loop runs (`ForceSlots` is borrowed mutably to make
/// the writer).
#[derive(Clone, Copy)]
pub struct SlotWriter {
    pairs: *mut Slot,
    n_pairs: usize,
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
