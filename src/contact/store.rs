//! The persistent pair store: candidate pairs from the broad phase, keyed by
//! (gid1, gid2) with gid1 < gid2 (or (gid, wall index) for walls), stored in memory-locality order, with
//! each pair's contact history (ARCHITECTURE.md `contact/store.rs`). A rebuild merges the new
//! candidate list into the old store by key, so contact histories survive rebuilds, re-sorting
//! and migration; the order is the broad phase's (never hash order).

use super::law::FrictPhys;
pub use super::law::FrictState;
use crate::cell::Cell;
use crate::V3;
use rayon::prelude::*;

/// The whole history of one pair, as it travels: migration messages, checkpoints, restarts
/// (the two parts a [`PairList`] stores apart).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactState {
    pub frict: FrictState,
    /// CPM history (zero for frictional contacts).
    pub cpm: CpmHist,
    /// Rolling-moment history of the EPSD model (`law/rolling.rs`; zero without it).
    pub roll: V3,
}

/// The exact sums of a step's contact energy terms, shared by the contact loop's tasks (each
/// merges its own once, at its end: no lock per contact).
#[derive(Debug, Default)]
pub struct WorkSum(std::sync::Mutex<[crate::domain::exact::ExactSum; 4]>);

impl Clone for WorkSum {
    fn clone(&self) -> Self {
        WorkSum(std::sync::Mutex::new(self.take_clone()))
    }
}

impl WorkSum {
    /// Add a task's sums.
    pub fn merge(&self, s: &[crate::domain::exact::ExactSum; 4]) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for (a, b) in g.iter_mut().zip(s) {
            a.merge(b);
        }
    }

    /// The sums so far, reset to zero.
    pub fn take(&self) -> [crate::domain::exact::ExactSum; 4] {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *g)
    }

    fn take_clone(&self) -> [crate::domain::exact::ExactSum; 4] {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Energy tracking: one contact's energy terms of one step [J], in this order: frictional
/// (shear) slip work, viscous (dashpot) work, the boundary's work through the contact (moving
/// walls and meshes, the deforming cell's mean field), the normal dissipation of CPM (damage
/// and compressive plasticity, `law::cpm::step_dissipation`).
pub type PairWork = [f64; 4];

/// The per-contact state variables of the CPM law (thesis §3.2.6, digest §11: κ, ω, ε_N^pl,
/// ε_d, d₀, cohesive; ε_T lives in `FrictState::fs`). The pair parameters are not stored: they
/// are re-mixed from the two materials and d₀ every step (`CpmPhys::new`, a few flops).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpmHist {
    /// Equilibrium distance d₀ [m] (thesis eq. 2.21).
    pub d0: f64,
    /// κ (eq. 3.3).
    pub kappa: f64,
    /// ω (eq. 3.2).
    pub omega: f64,
    /// ε_N^pl (§3.2.3.1).
    pub eps_n_pl: f64,
    /// ε_d (eq. 3.5).
    pub eps_d: f64,
    /// A cohesive link of the initial network (§3.2.1).
    pub cohesive: bool,
}

impl CpmHist {
    /// The law's state of this contact (`law::cpm::CpmState`) with shear strain `eps_t` and
    /// normal strain `eps_n`; the last step's stresses and flags are not part of the history.
    #[inline(always)]
    pub fn state(&self, eps_t: V3, eps_n: f64) -> crate::contact::law::cpm::CpmState {
        crate::contact::law::cpm::CpmState {
            d0: self.d0,
            kappa: self.kappa,
            omega: self.omega,
            eps_n_pl: self.eps_n_pl,
            eps_d: self.eps_d,
            eps_t,
            eps_n,
            cohesive: self.cohesive,
            ..Default::default()
        }
    }
}

impl ContactState {
    /// Length of [`ContactState::pack`]'s record (the checkpoints' `contacts/state` row).
    pub const N_F64: usize = 16;
    /// Length of [`ContactState::pack_all`]'s record (migration messages).
    pub const N_ALL: usize = Self::N_F64 + 3;

    /// Everything, the rolling history last (migration messages).
    pub fn pack_all(&self, out: &mut Vec<f64>) {
        self.pack(out);
        out.extend_from_slice(self.roll.as_slice());
    }

    /// Inverse of [`ContactState::pack_all`] (`v` holds exactly `N_ALL` values).
    pub fn unpack_all(v: &[f64]) -> Self {
        let n = Self::N_F64;
        ContactState {
            roll: V3::new(v[n], v[n + 1], v[n + 2]),
            ..Self::unpack(&v[..n])
        }
    }

    /// Flatten into `f64`s, all but the rolling history (a checkpoint's `contacts/state` row;
    /// the rolling history has its own dataset).
    pub fn pack(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(self.frict.n_old.as_slice());
        out.extend_from_slice(self.frict.fs.as_slice());
        let p = &self.frict.phys;
        out.extend_from_slice(&[p.kn, p.ks, p.tan_phi, p.cn]);
        let c = &self.cpm;
        out.extend_from_slice(&[
            c.d0,
            c.kappa,
            c.omega,
            c.eps_n_pl,
            c.eps_d,
            c.cohesive as u8 as f64,
        ]);
    }

    /// Inverse of [`ContactState::pack`] (`v` holds exactly `N_F64` values).
    pub fn unpack(v: &[f64]) -> Self {
        ContactState {
            frict: FrictState {
                n_old: V3::new(v[0], v[1], v[2]),
                fs: V3::new(v[3], v[4], v[5]),
                phys: FrictPhys {
                    kn: v[6],
                    ks: v[7],
                    tan_phi: v[8],
                    cn: v[9],
                },
            },
            cpm: CpmHist {
                d0: v[10],
                kappa: v[11],
                omega: v[12],
                eps_n_pl: v[13],
                eps_d: v[14],
                cohesive: v[15] != 0.0,
            },
            roll: V3::zeros(),
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
    /// The pair may touch now (gap ≤ 0 up to round-off): only such a pair can carry a contact
    /// history on into the next step (a frictional contact found apart is deleted by its law).
    pub near: bool,
}

/// Pairs in contact-loop order (touching first, see [`PairList::merge`]) with their history.
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
    /// History of each pair; meaningful only while `active` (stale values otherwise: the law
    /// initialises a history when its contact starts, and every reader checks `active`).
    pub state: Vec<FrictState>,
    /// CPM history of each pair, beside `state` (same rules). Carried by merges only with
    /// [`Self::cpm_law`]; otherwise every entry stays the default (nothing writes them).
    pub cpm: Vec<CpmHist>,
    /// The pairs follow the CPM law: merges carry `cpm` along.
    pub cpm_law: bool,
    /// Rolling-moment history of each pair (EPSD model, `law/rolling.rs`), beside `state`;
    /// zero for every pair not in contact (a merge gives new pairs zero, a contact that ends
    /// is zeroed), so that a contact starts from zero. Carried only with [`Self::roll_law`].
    pub roll: Vec<V3>,
    /// The contacts carry a rolling-moment history: merges carry `roll` along.
    pub roll_law: bool,
    /// The pair was touching at the last rebuild, so it is stored in the leading group (see
    /// [`Self::merge`]). Checkpointed: a restart must rebuild the same pair order,
    /// since default-mode force sums follow it.
    pub leading: Vec<bool>,
    /// Restart: the keys that led at the checkpointed run's last rebuild (sorted); used by the
    /// next merge instead of the histories present.
    lead_keys: Option<Vec<(u64, u64)>>,
    /// Periodic image shift of each pair: 0 = both copies in the same image, else an index
    /// into `shifts` (set at each rebuild by [`Self::set_shifts`]; the images of the copies
    /// change only then).
    pub shift: Vec<u8>,
    /// H (c₂ − c₁) of each shift code (`shifts[0]` = 0).
    pub shifts: Vec<V3>,
    /// Energy tracking (scene `energy: true`) by the per-pair loops (CPM, walls, facets): per
    /// pair, this step's dissipation and boundary work ([`PairWork`]; sized and zeroed by the
    /// caller before the contact loops, which write only the pairs in contact).
    pub work: Vec<PairWork>,
    /// Energy tracking by the frictional batch loop: it adds its contacts' terms (those whose
    /// particle 1 is owned) straight into [`Self::work_sum`], exact sums, instead of `work`.
    pub track_energy: bool,
    /// ... with each contact's terms added exactly (reproducible mode: the same bits on any
    /// layout); else summed in floating point within each range (the same bits for a given
    /// layout, as the default mode's forces).
    pub energy_each_exact: bool,
    /// The batch loop's energy terms of the step ([`PairWork`]'s order), summed exactly; taken
    /// by the energy book after the contacts.
    pub work_sum: WorkSum,
    /// c₂ − c₁ of each shift code, to form `shifts` again when the cell deforms
    /// ([`Self::refresh_shifts`]).
    pub shift_dc: Vec<[i32; 3]>,
    /// The velocity gradient L of a deforming cell (issue 23) in the step's contact loop: the
    /// particles' velocities are fluctuations about the mean field L (x − o), so the relative
    /// velocity of a pair gains L l (`contact::batch`); `None` for a static cell.
    pub grad: Option<crate::M3>,
    /// The cell's origin o of the mean field L (x − o): the plane walls' contacts add it to the
    /// sphere's velocity (a wall does not move with the cell).
    pub grad_origin: V3,
    /// (r₁ + r₂)² of each pair rounded up to f32 (set with the shift codes): the AVX-512
    /// distance test loads it instead of gathering both radii, a superset test (the contact
    /// loop repeats the exact one).
    pub reach2: Vec<f32>,
    lead: Vec<bool>,
    /// Per candidate chunk of a merge: [first candidate, next leading slot, next other slot].
    chunk_at: Vec<[usize; 3]>,
    scratch_active: Vec<bool>,
    scratch_key: Vec<(u64, u64)>,
    scratch_state: Vec<FrictState>,
    scratch_cpm: Vec<CpmHist>,
    scratch_roll: Vec<V3>,
    scratch_idx: Vec<u32>,
    /// The old list's touching pairs during a merge, indexed by key.
    touching: KeyIndex,
    scratch_keys: Vec<(u64, u64)>,
    /// Reproducible mode: each pair's lower particle rank in the canonical order (set with
    /// it by `Simulation`; the tasks of the force assembly are cut by it). Empty otherwise.
    pub low_rank: Vec<u32>,
}

impl PairList {
    /// An empty list; `cpm_law`, `roll_law`: see [`Self::cpm_law`], [`Self::roll_law`].
    pub fn for_law(cpm_law: bool, roll_law: bool) -> Self {
        PairList {
            cpm_law,
            roll_law,
            ..Default::default()
        }
    }

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

    /// Size the previous generation's buffers (which the next merge writes its output into)
    /// like this one's: a run's set-up calls this after its first merge, so that the second
    /// rebuild does not fault in 13 MB of fresh pages inside the step loop (chute: 6 ms).
    /// Their contents stay stale: a merge reads only the current generation.
    pub fn warm(&mut self) {
        let n = self.len();
        resize_stale(&mut self.scratch_key, n, (0, 0));
        resize_stale(&mut self.scratch_state, n, FrictState::default());
        resize_stale(&mut self.scratch_cpm, n, CpmHist::default());
        resize_stale(&mut self.scratch_active, n, false);
        if self.roll_law {
            resize_stale(&mut self.scratch_roll, n, V3::zeros());
        }
    }

    /// (r₁ + r₂)² of every pair, rounded up to f32 ([`Self::reach2`]).
    fn set_reach(&mut self, radius: &[f64]) {
        self.i
            .par_iter()
            .zip(&self.j)
            .map(|(&i, &j)| {
                let r = radius[i as usize] + radius[j as usize];
                let (e, f) = (r * r, (r * r) as f32);
                match (f as f64) < e {
                    true => f.next_up(),
                    false => f,
                }
            })
            .collect_into_vec(&mut self.reach2);
    }

    /// Give every pair the code of its periodic image shift H (c₂ − c₁) (thesis §2.3, digest
    /// A11.2), `image` being the particles' image offsets and `cell` the cell's edge lengths,
    /// so that the contact loop loads one byte per pair instead of both particles' images.
    /// The shift is [`crate::cell::Cell::shift`], as in [`crate::contact::geom::branch`]
    /// (same bits).
    ///
    /// Also sets each pair's [`Self::reach2`] from the particles' `radius`.
    pub fn set_shifts(&mut self, image: &[[i32; 3]], radius: &[f64], cell: &Cell) {
        self.set_reach(radius);
        // Images lie within ±1 cell of the owner's (halo < cell), so that an owned–ghost pair
        // has one of 27 differences, each with a fixed code (0 for none: the index of
        // (0, 0, 0) swapped with 0's); others (not made by this code's halo) get codes from 27 on.
        let fixed = |dc: [i32; 3]| match dc.iter().all(|d| d.abs() <= 1) {
            true => match (dc[0] + 1 + 3 * (dc[1] + 1) + 9 * (dc[2] + 1)) as u8 {
                13 => 0,
                0 => 13,
                c => c,
            },
            false => u8::MAX,
        };
        let diff = |i: u32, j: u32| {
            let (c1, c2) = (image[i as usize], image[j as usize]);
            [c2[0] - c1[0], c2[1] - c1[1], c2[2] - c1[2]]
        };
        self.shift_dc.clear();
        self.shift_dc.resize(27, [0; 3]);
        for z in -1..=1 {
            for y in -1..=1 {
                for x in -1..=1 {
                    self.shift_dc[fixed([x, y, z]) as usize] = [x, y, z];
                }
            }
        }
        self.shift.clear();
        let (pi, pj) = (&self.i, &self.j);
        self.shift
            .par_extend(pi.par_iter().zip(pj).map(|(&i, &j)| fixed(diff(i, j))));
        if self.shift.contains(&u8::MAX) {
            let mut extra: Vec<[i32; 3]> = Vec::new();
            for k in 0..self.shift.len() {
                if self.shift[k] == u8::MAX {
                    let dc = diff(self.i[k], self.j[k]);
                    let c = match extra.iter().position(|&d| d == dc) {
                        Some(c) => c,
                        None => {
                            extra.push(dc);
                            self.shift_dc.push(dc);
                            extra.len() - 1
                        }
                    };
                    assert!(27 + c < u8::MAX as usize, "more than 254 periodic shifts");
                    self.shift[k] = (27 + c) as u8;
                }
            }
        }
        self.refresh_shifts(cell);
    }

    /// Form the shift of every code, H (c₂ − c₁), for the current cell (each rebuild, and
    /// every step while the cell deforms: the codes stay, H changes).
    pub fn refresh_shifts(&mut self, cell: &Cell) {
        self.shifts.clear();
        self.shifts
            .extend(self.shift_dc.iter().map(|&dc| match dc == [0; 3] {
                true => V3::zeros(),
                false => cell.shift(dc),
            }));
    }

    /// Refer every pair of an owned particle with a periodic image of an owned particle of
    /// this subdomain (`origin`, see `Halo::self_origins`) to the origin itself, after
    /// [`Self::set_shifts`] gave it the image's shift: the pair then acts on both of its
    /// particles ("newton on"), its twin found from the origin's side having been dropped
    /// ([`crate::collide::drop_image_twins`]). Its force has the bits the ghost's copy gave
    /// (the same coordinates, the same shift), so the sums per particle are unchanged.
    pub fn fold_images(&mut self, n_owned: usize, origin: &[u32]) {
        if origin.is_empty() {
            return;
        }
        self.i.par_iter().zip(&mut self.j).for_each(|(i, j)| {
            if (*j as usize) >= n_owned {
                let o = origin[*j as usize - n_owned];
                if o != crate::particles::NO_ORIGIN && o != *i {
                    *j = o;
                }
            }
        });
    }

    /// Branch vector l = C₂ − C₁ of pair k from the positions `pos`, with the pair's periodic
    /// shift added last: the bits of [`crate::contact::geom::branch`].
    pub fn branch(&self, k: usize, pos: &[V3]) -> V3 {
        let l = pos[self.j[k] as usize] - pos[self.i[k] as usize];
        match self.shift[k] {
            0 => l,
            c => l + self.shifts[c as usize],
        }
    }

    /// Put the pairs in the order `order` (pair `order[n]` becomes pair n): keys, particles,
    /// contact flags, histories and leading flags (before [`Self::set_shifts`], which sets the
    /// rest). Through the merge's second generation of buffers: no allocation once warm.
    pub fn permute(&mut self, order: &[u32]) {
        let n = self.len();
        assert_eq!(order.len(), n);
        fn apply<T: Copy + Default>(v: &mut Vec<T>, scratch: &mut Vec<T>, order: &[u32]) {
            scratch.clear();
            scratch.extend(order.iter().map(|&k| v[k as usize]));
            std::mem::swap(v, scratch);
        }
        apply(&mut self.key, &mut self.scratch_key, order);
        apply(&mut self.state, &mut self.scratch_state, order);
        apply(&mut self.active, &mut self.scratch_active, order);
        apply(&mut self.i, &mut self.scratch_idx, order);
        apply(&mut self.j, &mut self.scratch_idx, order);
        apply(&mut self.leading, &mut self.lead, order);
        if self.cpm_law {
            apply(&mut self.cpm, &mut self.scratch_cpm, order);
        }
        if self.roll_law {
            apply(&mut self.roll, &mut self.scratch_roll, order);
        }
    }

    /// Restart: the next merge orders the pairs whose key is in `keys` (sorted) first, as the
    /// checkpointed run's last rebuild did.
    pub fn set_leading_keys(&mut self, keys: Vec<(u64, u64)>) {
        self.lead_keys = Some(keys);
    }

    /// Add the history of active contacts that arrived with migrating particles; the next
    /// [`PairList::merge`] hands it to the candidate with the same key. Local indices are
    /// meaningless until then.
    pub fn absorb(&mut self, key: (u64, u64), state: ContactState) {
        self.key.push(key);
        self.i.push(u32::MAX);
        self.j.push(u32::MAX);
        self.active.push(true);
        self.state.push(state.frict);
        self.cpm.push(state.cpm);
        self.roll.push(state.roll);
    }

    /// The whole history of pair k, for messages and checkpoints.
    pub fn record(&self, k: usize) -> ContactState {
        ContactState {
            frict: self.state[k],
            cpm: self.cpm[k],
            roll: self.roll[k],
        }
    }

    /// Replace the pair list by `cands`, keeping the history of every pair that touches, and
    /// store touching pairs first, then the others, each group in the order of `cands` (the
    /// broad phase's: grouped by the lower local index, in cell order). Most
    /// contacts outlive a rebuild, so their histories stay packed together and are streamed by
    /// the contact loop rather than fetched one cache line at a time from among the far more
    /// numerous near-miss candidates.
    ///
    /// A key may appear twice: a pair across a periodic boundary is found from both owned sides
    /// (each copy applies the force to its owned particle only, "newton off"); both copies
    /// carry bit-identical histories, so either old copy serves both.
    ///
    /// `near_only`: only candidates marked `near` look for a history (a frictional contact
    /// found apart is deleted by its law at the next step anyway): ~15 000 binary searches
    /// instead of 115 000 on chute. Restarts (histories of the checkpoint step, candidates of
    /// the last rebuild) and cohesive laws (links act apart) look for all.
    ///
    /// `check`: count and return the active contacts dropped because their pair is no longer a
    /// candidate (must be 0 when the skin logic is right; debug builds check it). `mine(key)`
    /// says whether this rank still owns one of the pair's particles (a pair whose particles
    /// both left is not lost, it migrated). Costs a sort of all keys; 0 is returned otherwise.
    pub fn merge(
        &mut self,
        cands: &[Candidate],
        near_only: bool,
        check: bool,
        mine: impl Fn((u64, u64)) -> bool,
    ) -> usize {
        self.merge_chunks(&[cands], near_only, check, mine)
    }

    /// [`Self::merge`] of the candidates `chunks` in order (the broad phase's per-task
    /// lists: no concatenation). The chunks are merged in parallel: each writes its touching
    /// pairs and its others at offsets from prefix sums, so the order is that of one sequential
    /// pass.
    pub fn merge_chunks<C: AsRef<[Candidate]> + Sync>(
        &mut self,
        chunks: &[C],
        near_only: bool,
        check: bool,
        mine: impl Fn((u64, u64)) -> bool,
    ) -> usize {
        std::mem::swap(&mut self.key, &mut self.scratch_key);
        std::mem::swap(&mut self.state, &mut self.scratch_state);
        std::mem::swap(&mut self.cpm, &mut self.scratch_cpm);
        std::mem::swap(&mut self.roll, &mut self.scratch_roll);
        std::mem::swap(&mut self.active, &mut self.scratch_active);
        // The shift codes describe the old list: [`Self::set_shifts`] must run again.
        self.shift.clear();
        // Touching old pairs in key order (duplicates carry equal histories: any serves).
        let mut touching = std::mem::take(&mut self.touching);
        touching.entries.clear();
        // 64 flags at a time into a bit mask, then the set bits: no branch per pair (one in
        // seven touches, at random: a branch per pair cost 0.4 ms per chute rebuild)
        for (c, flags) in self.scratch_active.chunks(64).enumerate() {
            let mut bits = flags
                .iter()
                .enumerate()
                .fold(0u64, |b, (q, &a)| b | (a as u64) << q);
            while bits != 0 {
                let o = c * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                touching.entries.push((self.scratch_key[o], o as u32));
            }
        }
        touching.build();
        let lost = if check {
            let all: Vec<Candidate> = chunks.iter().flat_map(|c| c.as_ref()).copied().collect();
            self.count_lost(&all, &touching.entries, &mine)
        } else {
            0
        };
        // Per chunk: where its candidates start, then (below) how many lead.
        let mut at = std::mem::take(&mut self.chunk_at);
        at.clear();
        let mut n = 0;
        for c in chunks {
            at.push([n, 0, 0]);
            n += c.as_ref().len();
        }
        // `src[c]` = old pair whose history candidate c takes; `lead[c]`: it goes first.
        let mut src = std::mem::take(&mut self.scratch_idx);
        let mut lead = std::mem::take(&mut self.lead);
        src.resize(n, NONE);
        lead.resize(n, false);
        {
            let (src_w, lead_w) = (Shared::new(&mut src), Shared::new(&mut lead));
            let (lead_keys, touching) = (&self.lead_keys, &touching);
            at.par_iter_mut().zip(chunks).for_each(|(a, ch)| {
                let ch = ch.as_ref();
                // SAFETY: the chunks' ranges [a[0], a[0] + len) are disjoint.
                let (src, lead) =
                    unsafe { (src_w.slice(a[0], ch.len()), lead_w.slice(a[0], ch.len())) };
                for ((c, s), l) in ch.iter().zip(src.iter_mut()).zip(lead.iter_mut()) {
                    *s = match near_only && !c.near {
                        true => NONE,
                        // ~30 000 look-ups on chute, the largest part of the merge
                        false => touching.find(c.key).unwrap_or(NONE),
                    };
                    *l = match lead_keys {
                        Some(keys) => keys.binary_search(&c.key).is_ok(),
                        None => *s != NONE,
                    };
                }
                a[1] = lead.iter().filter(|&&l| l).count();
            });
        }
        self.lead_keys = None;
        let n_lead: usize = at.iter().map(|a| a[1]).sum();
        // Histories of pairs out of contact are never read (a contact's law initialises its
        // history when it starts), so only the inherited ones are written: the buffer keeps
        // stale values elsewhere (writing 115 000 empty histories cost chute ~4 ms per rebuild).
        resize_stale(&mut self.key, n, (0, 0));
        resize_stale(&mut self.i, n, 0);
        resize_stale(&mut self.j, n, 0);
        resize_stale(&mut self.active, n, false);
        resize_stale(&mut self.leading, n, false);
        resize_stale(&mut self.state, n, FrictState::default());
        resize_stale(&mut self.cpm, n, CpmHist::default());
        resize_stale(&mut self.roll, n, V3::zeros());
        let out = Emit {
            key: Shared::new(&mut self.key),
            i: Shared::new(&mut self.i),
            j: Shared::new(&mut self.j),
            active: Shared::new(&mut self.active),
            leading: Shared::new(&mut self.leading),
            state: Shared::new(&mut self.state),
            cpm: self.cpm_law.then(|| Shared::new(&mut self.cpm)),
            roll: self.roll_law.then(|| Shared::new(&mut self.roll)),
        };
        let old = Old {
            state: &self.scratch_state,
            cpm: &self.scratch_cpm,
            roll: &self.scratch_roll,
        };
        // Output offsets: the leading pairs of earlier chunks come first, the others after all
        // leading pairs.
        let mut lead_at = 0;
        for a in at.iter_mut() {
            let (first, n_l) = (a[0], a[1]);
            *a = [first, lead_at, n_lead + first - lead_at];
            lead_at += n_l;
        }
        at.par_iter().zip(chunks).for_each(|(a, ch)| {
            let [first, mut next_lead, mut next_other] = *a;
            for (q, cand) in ch.as_ref().iter().enumerate() {
                let (g, o) = (lead[first + q], src[first + q]);
                let k = if g { &mut next_lead } else { &mut next_other };
                // SAFETY: every candidate gets its own output index (prefix sums above).
                unsafe { out.put(*k, cand, g, o, &old) };
                *k += 1;
            }
        });
        self.chunk_at = at;
        self.lead = lead;
        self.scratch_idx = src;
        self.touching = touching;
        lost
    }

    /// Touching old pairs (sorted) of this rank whose key no candidate has (each key once).
    fn count_lost(
        &mut self,
        cands: &[Candidate],
        touching: &[((u64, u64), u32)],
        mine: impl Fn((u64, u64)) -> bool,
    ) -> usize {
        let keys = &mut self.scratch_keys;
        keys.clear();
        keys.extend(cands.iter().map(|c| c.key));
        keys.sort_unstable();
        let mut lost = 0;
        for (t, &(k, _)) in touching.iter().enumerate() {
            if (t == 0 || touching[t - 1].0 != k) && mine(k) && keys.binary_search(&k).is_err() {
                lost += 1;
            }
        }
        lost
    }
}

/// No old pair (a new candidate).
const NONE: u32 = u32::MAX;

/// (key, value) entries sorted by key, in buckets by particle 1's gid: the look-up of a key
/// searches one bucket of a few entries instead of the whole list (a binary search over 15 000
/// keys was 14 dependent loads per candidate, the largest part of the chute's merge). Buckets
/// split the gid range evenly; gids are about evenly spread (generators number particles in
/// turn).
#[derive(Clone, Debug, Default)]
struct KeyIndex {
    /// Filled by the user, then sorted by [`Self::build`].
    entries: Vec<((u64, u64), u32)>,
    g0: u64,
    /// Buckets per unit of gid.
    scale: f64,
    /// First entry of each bucket (CSR, one more than the buckets).
    start: Vec<u32>,
}

impl KeyIndex {
    /// The bucket of gid `g` (non-decreasing in g, as the CSR needs; gids outside the range
    /// go to the first or the last bucket).
    #[inline]
    fn bucket(&self, g: u64) -> usize {
        let b = (g.saturating_sub(self.g0) as f64 * self.scale) as usize;
        b.min(self.start.len() - 2)
    }

    /// Sort the entries and index them, one bucket per entry or so.
    fn build(&mut self) {
        self.entries.par_sort_unstable();
        let list = &self.entries;
        let nb = list.len().max(1);
        let (g0, g1) = match (list.first(), list.last()) {
            (Some(a), Some(b)) => (a.0 .0, b.0 .0),
            _ => (0, 0),
        };
        self.g0 = g0;
        self.scale = nb as f64 / ((g1 - g0) as f64 + 1.0);
        self.start.clear();
        self.start.resize(nb + 1, 0);
        for t in list {
            let b = self.bucket(t.0 .0);
            self.start[b + 1] += 1;
        }
        for b in 0..nb {
            self.start[b + 1] += self.start[b];
        }
    }

    /// The value of `key` among the entries (as [`Self::build`] left them), if it is there.
    #[inline]
    fn find(&self, key: (u64, u64)) -> Option<u32> {
        let b = self.bucket(key.0);
        let (a, e) = (self.start[b] as usize, self.start[b + 1] as usize);
        let bucket = &self.entries[a..e];
        bucket
            .binary_search_by_key(&key, |t| t.0)
            .ok()
            .map(|t| bucket[t].1)
    }
}

/// Resize a buffer whose old contents are not needed (a merge's outputs: the emission
/// rewrites every entry it reads; recorded pair forces). Growing past the capacity drops the
/// contents instead of copying them, and leaves a quarter more room, so that a list that grows
/// by a few pairs does not reallocate at every other rebuild (chute: two 4 ms copies of 13 MB
/// of histories into fresh pages, measured).
pub(crate) fn resize_stale<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
    if n > v.capacity() {
        v.clear();
        v.reserve_exact(n + n / 4);
    }
    v.resize(n, fill);
}

/// A slice written by parallel tasks at disjoint indices (the merge's emission, the contact
/// loop's ranges of flags and histories).
#[derive(Clone, Copy)]
pub(crate) struct Shared<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the users access disjoint elements only (`merge_chunks`, the contact loops).
unsafe impl<T: Send> Send for Shared<T> {}
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    pub(crate) fn new(v: &mut [T]) -> Self {
        Shared {
            ptr: v.as_mut_ptr(),
            len: v.len(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Elements `start..start + n`.
    ///
    /// # Safety
    /// No other live reference may reach them.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice(&self, start: usize, n: usize) -> &mut [T] {
        assert!(start + n <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(start), n)
    }

    /// Write element k.
    ///
    /// # Safety
    /// No one else may access element k meanwhile.
    unsafe fn set(&self, k: usize, v: T) {
        assert!(k < self.len);
        *self.ptr.add(k) = v;
    }
}

/// The merge's output columns.
struct Emit {
    key: Shared<(u64, u64)>,
    i: Shared<u32>,
    j: Shared<u32>,
    active: Shared<bool>,
    leading: Shared<bool>,
    state: Shared<FrictState>,
    cpm: Option<Shared<CpmHist>>,
    roll: Option<Shared<V3>>,
}

/// The histories of the list before a merge.
struct Old<'a> {
    state: &'a [FrictState],
    cpm: &'a [CpmHist],
    roll: &'a [V3],
}

impl Emit {
    /// Store candidate `c` as pair k (`lead`: in the leading group), with old pair `o`'s
    /// history if it has one.
    ///
    /// # Safety
    /// Pair k is written by this call alone.
    unsafe fn put(&self, k: usize, c: &Candidate, lead: bool, o: u32, old: &Old) {
        if o != NONE {
            self.state.set(k, old.state[o as usize]);
            if let Some(cpm) = &self.cpm {
                cpm.set(k, old.cpm[o as usize]);
            }
        }
        if let Some(roll) = &self.roll {
            // a new pair starts from zero (see `PairList::roll`)
            let m = if o != NONE {
                old.roll[o as usize]
            } else {
                V3::zeros()
            };
            roll.set(k, m);
        }
        self.key.set(k, c.key);
        self.i.set(k, c.i);
        self.j.set(k, c.j);
        self.active.set(k, o != NONE);
        self.leading.set(k, lead);
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
            near: true,
        }
    }

    #[test]
    fn pack_unpack_round_trips_the_cpm_history() {
        let mut f = FrictState::new(
            FrictPhys {
                kn: 1.0,
                ks: 2.0,
                tan_phi: 3.0,
                cn: 4.0,
            },
            V3::new(0.0, 0.6, 0.8),
        );
        f.fs = V3::new(1e-5, -2e-5, 3e-5);
        let cpm = CpmHist {
            d0: 2.5e-3,
            kappa: 1.5e-4,
            omega: 0.3,
            eps_n_pl: -1e-4,
            eps_d: 2e-6,
            cohesive: true,
        };
        let roll = V3::new(1e-6, 0.0, -2e-6);
        let st = ContactState {
            frict: f,
            cpm,
            roll,
        };
        let mut v = Vec::new();
        st.pack(&mut v);
        assert_eq!(v.len(), ContactState::N_F64);
        // the checkpoint row leaves the rolling history out (its own dataset)
        assert_eq!(
            ContactState::unpack(&v),
            ContactState {
                roll: V3::zeros(),
                ..st
            }
        );
        v.clear();
        st.pack_all(&mut v);
        assert_eq!(v.len(), ContactState::N_ALL);
        assert_eq!(ContactState::unpack_all(&v), st);
    }

    #[test]
    fn merge_keeps_history_by_key() {
        let mut pl = PairList::default();
        pl.merge(&[cand(0, 1), cand(0, 2), cand(1, 3)], true, true, |_| true);
        pl.active[1] = true;
        pl.state[1].fs = V3::new(1.0, 2.0, 3.0);
        pl.active[2] = true;
        let lost = pl.merge(&[cand(0, 2), cand(2, 3)], true, true, |_| true);
        assert_eq!(lost, 1); // (1,3) was active and vanished
        assert_eq!(pl.key, vec![(0, 2), (2, 3)]);
        assert_eq!(pl.state[0].fs, V3::new(1.0, 2.0, 3.0));
        assert!(!pl.active[1]);
    }

    #[test]
    fn only_near_candidates_take_a_history_when_asked() {
        let far = |a, b| Candidate {
            near: false,
            ..cand(a, b)
        };
        for (near_only, kept) in [(true, false), (false, true)] {
            let mut pl = PairList::default();
            pl.merge(&[cand(0, 1), cand(0, 2)], true, true, |_| true);
            pl.active.iter_mut().for_each(|a| *a = true);
            pl.state[0].fs = V3::new(1.0, 0.0, 0.0);
            pl.state[1].fs = V3::new(2.0, 0.0, 0.0);
            // (0,1) is still close, (0,2) has moved apart
            let lost = pl.merge(&[cand(0, 1), far(0, 2)], near_only, true, |_| true);
            assert_eq!(lost, 0);
            assert_eq!(pl.key, vec![(0, 1), (0, 2)]);
            assert!(pl.leading[0] && pl.active[0]);
            assert_eq!(pl.state[0].fs.x, 1.0);
            assert_eq!(pl.active[1], kept);
            assert_eq!(pl.leading[1], kept);
        }
    }

    #[test]
    fn touching_pairs_lead_in_candidate_order() {
        let mut pl = PairList::default();
        pl.merge(&[cand(0, 1), cand(0, 2), cand(1, 2)], true, true, |_| true);
        pl.active[2] = true; // (1,2)
        pl.merge(&[cand(0, 1), cand(0, 2), cand(1, 2)], true, true, |_| true);
        assert_eq!(pl.key, vec![(1, 2), (0, 1), (0, 2)]);
        assert_eq!(pl.leading, vec![true, false, false]);
    }

    #[test]
    fn key_index_finds_what_a_binary_search_finds() {
        let mut rng = crate::scene::gen::Lcg::at(9, 0);
        let mut u = move || rng.uniform();
        for (n, span) in [
            (0, 10),
            (1, 10),
            (500, 300),
            (3000, 1 << 20),
            (2000, u64::MAX / 4),
        ] {
            let mut list: Vec<((u64, u64), u32)> = (0..n)
                .map(|k| {
                    let g = (u() * span as f64) as u64;
                    ((g, g + 1 + (u() * 50.0) as u64), k as u32)
                })
                .collect();
            let mut index = KeyIndex {
                entries: list.clone(),
                ..Default::default()
            };
            index.build();
            list.sort_unstable();
            let whole = |key| {
                list.binary_search_by_key(&key, |t| t.0)
                    .ok()
                    .map(|t| list[t].1)
            };
            for t in &list {
                // present (with duplicates of particle 1: the same key gives the same value)
                let got = index.find(t.0).expect("present key not found");
                assert_eq!(list.iter().find(|e| e.1 == got).unwrap().0, t.0);
            }
            for _ in 0..2000 {
                let g = (u() * span as f64 * 1.2) as u64;
                let key = (g, g + 1 + (u() * 50.0) as u64);
                assert_eq!(index.find(key).is_some(), whole(key).is_some(), "{key:?}");
            }
        }
    }
}
