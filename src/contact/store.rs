//! The persistent pair store: candidate pairs from the broad phase, keyed by
//! (gid1, gid2) with gid1 < gid2 (or (gid, wall index) for walls), stored in memory-locality order, with
//! each pair's contact history (ARCHITECTURE.md `contact/store.rs`). A rebuild merges the new
//! candidate list into the old store by key, so contact histories survive rebuilds, re-sorting
//! and (later) migration; iteration order is key order, never hash order.

use crate::material::FrictPhys;
use crate::V3;

/// History of one pair (Yade `IPhys` + the state of `ScGeom`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactState {
    /// Normal of the previous step (for the shear rotation).
    pub n_old: V3,
    /// Shear force F_T acting on particle 1.
    pub fs: V3,
    pub phys: FrictPhys,
}

impl ContactState {
    pub fn new(phys: FrictPhys, n: V3) -> Self {
        ContactState {
            n_old: n,
            fs: V3::zeros(),
            phys,
        }
    }
}

impl ContactState {
    /// Length of [`ContactState::pack`]'s record.
    pub const N_F64: usize = 10;

    /// Flatten into `f64`s (migration messages and checkpoints).
    pub fn pack(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(self.n_old.as_slice());
        out.extend_from_slice(self.fs.as_slice());
        let p = &self.phys;
        out.extend_from_slice(&[p.kn, p.ks, p.tan_phi, p.cn]);
    }

    /// Inverse of [`ContactState::pack`] (`v` holds exactly `N_F64` values).
    pub fn unpack(v: &[f64]) -> Self {
        ContactState {
            n_old: V3::new(v[0], v[1], v[2]),
            fs: V3::new(v[3], v[4], v[5]),
            phys: FrictPhys {
                kn: v[6],
                ks: v[7],
                tan_phi: v[8],
                cn: v[9],
            },
        }
    }
}

/// Result of one pair for one step: force on particle 1 and torques on 1 and 2.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PairForce {
    pub f: V3,
    pub t1: V3,
    pub t2: V3,
}

/// A candidate pair found by the broad phase: key and local indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    pub key: (u64, u64),
    pub i: u32,
    pub j: u32,
}

/// Pairs sorted by key with their history and this step's forces.
#[derive(Clone, Debug, Default)]
pub struct PairList {
    pub key: Vec<(u64, u64)>,
    /// Local index of particle 1.
    pub i: Vec<u32>,
    /// Local index of particle 2 (or the wall index).
    pub j: Vec<u32>,
    /// The pair touches (a "real" interaction); false = only a candidate, and its `state` is
    /// meaningless. Kept apart from `state` so that the contact loop streams one byte per
    /// far-apart pair.
    pub active: Vec<bool>,
    pub state: Vec<ContactState>,
    scratch_active: Vec<bool>,
    scratch_key: Vec<(u64, u64)>,
    scratch_state: Vec<ContactState>,
    scratch_idx: Vec<u32>,
    order: Vec<u32>,
}

impl PairList {
    pub fn len(&self) -> usize {
        self.key.len()
    }
    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }

    /// Number of real (touching) contacts whose particle 1 is owned: each physical contact
    /// counted once, on one rank.
    pub fn n_active(&self, n_owned: usize) -> usize {
        self.active
            .iter()
            .zip(&self.i)
            .filter(|(&a, &i)| a && (i as usize) < n_owned)
            .count()
    }

    /// Add the history of active contacts that arrived with migrating particles; the next
    /// [`PairList::merge`] hands it to the candidate with the same key. Local indices are
    /// meaningless until then.
    pub fn absorb(&mut self, key: (u64, u64), state: ContactState) {
        self.key.push(key);
        self.i.push(u32::MAX);
        self.j.push(u32::MAX);
        self.active.push(true);
        self.state.push(state);
    }

    /// Replace the pair list by `cands` (sorted by key), keeping the history of every pair that
    /// was there before, then order the pairs by the local index of their first particle
    /// (memory locality: particles are stored along a space-filling curve). A key may appear
    /// twice: a pair across a periodic boundary is found from both owned sides (each copy applies
    /// the force to its owned particle only, "newton off"); both copies carry bit-identical
    /// histories, so either old copy serves both. Returns the number of active contacts dropped
    /// because their pair is no longer a candidate although `mine(key)` says this rank still
    /// owns one of its particles (must be 0 when the skin logic is right).
    pub fn merge(&mut self, cands: &[Candidate], mine: impl Fn((u64, u64)) -> bool) -> usize {
        debug_assert!(cands.windows(2).all(|w| w[0].key <= w[1].key));
        // The old list is in locality order: visit it in key order through a permutation.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..self.key.len() as u32);
        {
            let k = &self.key;
            // Among copies of one key, an active one first: it carries the history.
            let a = &self.active;
            order.sort_unstable_by_key(|&o| (k[o as usize], !a[o as usize], o));
        }
        std::mem::swap(&mut self.key, &mut self.scratch_key);
        std::mem::swap(&mut self.state, &mut self.scratch_state);
        std::mem::swap(&mut self.active, &mut self.scratch_active);
        self.key.clear();
        self.state.clear();
        self.active.clear();
        self.i.clear();
        self.j.clear();
        let (old_k, old_s, old_a) = (&self.scratch_key, &self.scratch_state, &self.scratch_active);
        let key = |o: usize| old_k[order[o] as usize];
        let mut o = 0;
        let mut lost = 0;
        let mut prev = None;
        // An old entry is lost if active, not matched by the previous candidate, and not a
        // duplicate of the entry before it.
        let is_lost = |o: usize, prev: Option<(u64, u64)>| {
            (old_a[order[o] as usize]
                && prev != Some(key(o))
                && (o == 0 || key(o - 1) != key(o))
                && mine(key(o))) as usize
        };
        for c in cands {
            while o < order.len() && key(o) < c.key {
                lost += is_lost(o, prev);
                o += 1;
            }
            prev = Some(c.key);
            let (st, a) = if o < order.len() && key(o) == c.key {
                (old_s[order[o] as usize], old_a[order[o] as usize])
            } else {
                (ContactState::default(), false)
            };
            self.active.push(a);
            self.key.push(c.key);
            self.i.push(c.i);
            self.j.push(c.j);
            self.state.push(st);
        }
        while o < order.len() {
            lost += is_lost(o, prev);
            o += 1;
        }
        self.order = order;
        self.sort_by_locality();
        lost
    }

    /// Reorder pairs by (smaller local index, larger local index).
    fn sort_by_locality(&mut self) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..self.key.len() as u32);
        {
            let (i, j) = (&self.i, &self.j);
            order.sort_unstable_by_key(|&o| {
                let (a, b) = (i[o as usize], j[o as usize]);
                (a.min(b), a.max(b))
            });
        }
        fn apply<T: Copy>(v: &mut Vec<T>, order: &[u32], tmp: &mut Vec<T>) {
            tmp.clear();
            tmp.extend(order.iter().map(|&o| v[o as usize]));
            std::mem::swap(v, tmp);
        }
        apply(&mut self.key, &order, &mut self.scratch_key);
        apply(&mut self.state, &order, &mut self.scratch_state);
        apply(&mut self.active, &order, &mut self.scratch_active);
        let mut tmp = std::mem::take(&mut self.scratch_idx);
        apply(&mut self.i, &order, &mut tmp);
        apply(&mut self.j, &order, &mut tmp);
        self.scratch_idx = tmp;
        self.order = order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(a: u64, b: u64) -> Candidate {
        Candidate {
            key: (a, b),
            i: a as u32,
            j: b as u32,
        }
    }

    #[test]
    fn merge_keeps_history_by_key() {
        let mut pl = PairList::default();
        pl.merge(&[cand(0, 1), cand(0, 2), cand(1, 3)], |_| true);
        pl.active[1] = true;
        pl.state[1].fs = V3::new(1.0, 2.0, 3.0);
        pl.active[2] = true;
        let lost = pl.merge(&[cand(0, 2), cand(2, 3)], |_| true);
        assert_eq!(lost, 1); // (1,3) was active and vanished
        assert_eq!(pl.key, vec![(0, 2), (2, 3)]);
        assert_eq!(pl.state[0].fs, V3::new(1.0, 2.0, 3.0));
        assert!(!pl.active[1]);
    }
}
