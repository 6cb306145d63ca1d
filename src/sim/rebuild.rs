//! The neighbour rebuild: blow-up checks, the cell flip and periodic wrap, balancing, the
//! `pre_exchange` engines, migration, ghosts, the broad phase and the merge of the pair lists.

use super::*;

/// A contact with key `key` touches a particle deleted now (`gone`: sorted gids): either
/// particle of a sphere pair, the sphere (the first) of a `wall` pair, whose second is a wall
/// or facet index, not a gid.
pub(crate) fn gone_contact((a, b): (u64, u64), gone: &[u64], wall: bool) -> bool {
    gone.binary_search(&a).is_ok() || (!wall && gone.binary_search(&b).is_ok())
}

impl Simulation {
    /// Migrate, wrap, re-sort by grid cell, rebuild ghosts, candidate pairs and slots.
    pub(super) fn rebuild(&mut self) -> Result<()> {
        self.setup_poll()?;
        if self.comm.is_root() {
            log::debug!("rebuild at step {}: {}", self.step, self.rebuild_why);
        }
        let stored = self.flow_contact_energies();
        self.ps.truncate_ghosts();
        let failure = self.local_failure();
        if self.comm.any(failure.is_some()) {
            return Err(failure.map(Error::Runtime).unwrap_or(Error::Peer {
                rank: self.comm.rank(),
                step: self.step,
            }));
        }
        self.flip_cell()?;
        self.domain.wrap_owned(&mut self.ps);
        self.balance_rebuild()?;
        self.pre_exchange(stored)?;
        let tc = Instant::now();
        self.halo_ex.migrate(
            &self.comm,
            &self.dec,
            &self.domain,
            &mut self.ps,
            &mut self.pairs,
            &mut self.wall_pairs,
            self.step,
        )?;
        self.timers.comm += tc.elapsed();
        self.check_conservation()?;
        self.rebuild_structure(false)
    }

    /// The `pre_exchange` hook (`engines`): flow engines due at this step create and delete
    /// owned particles (after the balancing, whose costs index the old particles; before
    /// migration). Contacts of deleted particles are switched off on every rank, so the merge
    /// drops them (gids are never reused: no history comes back). The conserved count and
    /// mass are taken again (collective). Nothing happens on steps without a due engine.
    /// Energy tracking: the kinetic energy of the particles created and deleted, and the
    /// elastic energy `stored` of the deleted ones' contacts ([`Self::flow_contact_energies`])
    /// go to the budget's flow term.
    pub(super) fn pre_exchange(&mut self, stored: Option<[Vec<f64>; 2]>) -> Result<()> {
        let Some(flow) = self.engines.get_mut::<Flow>() else {
            return Ok(());
        };
        if !flow.due(self.step, self.time) {
            return Ok(());
        }
        let mut carried = ExactSum::new(); // kinetic energy in, less out, less stored out
        let kinetic = |ps: &Particles, sign: f64, e: &mut ExactSum| {
            for i in 0..ps.n_owned {
                let (m, j) = (ps.mass[i], ps.inertia[i]);
                e.add(
                    sign * 0.5 * (m * ps.vel[i].norm_squared() + j * ps.angvel[i].norm_squared()),
                );
            }
        };
        if stored.is_some() {
            kinetic(&self.ps, -1.0, &mut carried);
        }
        let gone = flow.pre_exchange(
            (self.step, self.time),
            &mut self.ps,
            &self.dec,
            &self.comm,
            &self.walls,
        );
        if let Some(stored) = &stored {
            kinetic(&self.ps, 1.0, &mut carried);
            let lists = [(&self.pairs, false), (&self.wall_pairs, true)];
            for ((list, wall), e) in lists.into_iter().zip(stored) {
                for (&key, &e) in list.key.iter().zip(e) {
                    if gone_contact(key, &gone, wall) {
                        carried.add(-e);
                    }
                }
            }
        }
        if !gone.is_empty() {
            for (list, wall) in [(&mut self.pairs, false), (&mut self.wall_pairs, true)] {
                for k in 0..list.len() {
                    if gone_contact(list.key[k], &gone, wall) {
                        list.active[k] = false;
                    }
                }
            }
        }
        if let Some(book) = self.engines.get_mut::<EnergyBook>() {
            book.flow.merge(&carried);
        }
        self.conserved = None;
        self.check_conservation()
    }

    /// Energy tracking, a flow engine due at this step: the elastic energy of each contact
    /// this rank counts (sphere pairs of an owned particle 1, wall pairs), taken at the start
    /// of the rebuild, while the ghosts are there ([`Self::pre_exchange`] books those of the
    /// deleted particles). `None` otherwise.
    pub(super) fn flow_contact_energies(&self) -> Option<[Vec<f64>; 2]> {
        let due = self
            .engines
            .get::<Flow>()
            .is_some_and(|f| f.due(self.step, self.time));
        if !(due && self.engines.has::<EnergyBook>()) {
            return None;
        }
        let n = self.ps.n_owned;
        let owned = |k: usize| (self.pairs.i[k] as usize) < n;
        let sph = (0..self.pairs.len())
            .map(|k| if owned(k) { self.pair_elastic(k) } else { 0.0 })
            .collect();
        let wall = (0..self.wall_pairs.len())
            .map(|k| self.wall_pair_elastic(k))
            .collect();
        Some([sph, wall])
    }

    /// The rebuild after migration: re-sort, ghosts, candidate pairs merged with the contact
    /// histories, force slots, Verlet reference positions. `restoring`: the histories are
    /// those of a checkpoint, newer than the positions (every candidate looks for one).
    /// In the set-up ([`Self::prepare`], a restart) a stop signal ends it between its stages
    /// (`Error::Stopped`); nothing else fails here.
    pub(super) fn rebuild_structure(&mut self, restoring: bool) -> Result<()> {
        // Frictional contacts found apart are deleted by the law: only candidates that may
        // touch look for a history (PairList::merge). CPM links act apart.
        let near_only = !restoring && self.cpm.is_none();
        self.sort_owned();
        self.setup_poll()?;
        let cell = &self.domain.cell;
        let tc = Instant::now();
        self.halo_ex
            .build_ghosts(&self.comm, &self.dec, &mut self.ps, &self.domain, self.halo);
        self.timers.comm += tc.elapsed();
        self.setup_poll()?;
        let ps = &self.ps;
        let reach = self.skin + self.reach_extra;
        let cands = collide::sphere_candidate_chunks(ps, reach, cell, &mut self.grid);
        setup_stop(self.in_setup)?;
        self.halo_ex.self_origins(&self.dec, ps, &mut self.origin);
        collide::drop_image_twins(cands, ps.n_owned, &self.origin);
        // Debug builds check that no contact touching an owned particle was dropped.
        let owned: Vec<u64> = if cfg!(debug_assertions) {
            let mut g = ps.gid[..ps.n_owned].to_vec();
            g.sort_unstable();
            g
        } else {
            Vec::new()
        };
        let is_owned = |g: u64| owned.binary_search(&g).is_ok();
        let check = cfg!(debug_assertions);
        let lost = self
            .pairs
            .merge_chunks(cands, near_only, check, |k| is_owned(k.0) || is_owned(k.1));
        setup_stop(self.in_setup)?;
        // Reproducible mode, and more threads than the per-task accumulators serve: the
        // canonical accumulation, on the canonical pair order (`forces`).
        let canonical =
            self.reproducible || rayon::current_num_threads() > crate::forces::MAX_ACC_TASKS;
        if canonical {
            canonical_order(
                &mut self.pairs,
                ps,
                self.domain.lo,
                self.halo,
                &mut self.canon,
            );
        }
        setup_stop(self.in_setup)?;
        self.pairs.set_shifts(&ps.image, &ps.radius, cell);
        self.pairs.fold_images(ps.n_owned, &self.origin);
        debug_assert_eq!(lost, 0, "a real contact was not a candidate");
        collide::wall_candidates(ps, &self.walls, self.skin, &mut self.wall_cands);
        let n_walls = self.walls.len();
        self.meshes
            .candidates(ps, self.skin, n_walls, &mut self.wall_cands);
        let lost_w = self
            .wall_pairs
            .merge(&self.wall_cands, false, check, |k| is_owned(k.0));
        debug_assert_eq!(lost_w, 0, "a real wall contact was not a candidate");
        self.facets
            .build(&mut self.wall_pairs, n_walls, &self.meshes);
        self.slots
            .build(ps.n_owned, &self.pairs, &self.wall_pairs, canonical);
        self.reference.clear();
        self.reference.extend_from_slice(&ps.pos[..ps.n_owned]);
        if let Some(c) = self.engines.get_mut::<CellEngine>() {
            c.h_ref = self.domain.cell.h;
        }
        for (r, w) in self.wall_ref.iter_mut().zip(&self.walls) {
            *r = w.point;
        }
        self.need_rebuild = false;
        self.n_rebuilds += 1;
        Ok(())
    }

    /// Particle count and total mass are what they were at the first rebuild (collective).
    pub(super) fn check_conservation(&mut self) -> Result<()> {
        let ps = &self.ps;
        let mut m = [ExactSum::new()];
        ps.mass[..ps.n_owned].iter().for_each(|&x| m[0].add(x));
        self.comm.sum_exact(&mut m);
        let now = (self.n_global(), m[0].value());
        match self.conserved {
            None => self.conserved = Some(now),
            Some(c) if c.0 != now.0 || c.1.to_bits() != now.1.to_bits() => {
                return Err(Error::Runtime(format!(
                    "particles not conserved at step {}: {} particles of total mass {:e} kg, \
                     expected {} of {:e} kg (a bug in migration: please report it)",
                    self.step, now.0, now.1, c.0, c.1
                )));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Re-sort owned particles by cell of the search grid (ties by gid: deterministic), the
    /// order in which the search lists candidates grouped by particle
    /// ([`collide::order_by_cell`]).
    pub(super) fn sort_owned(&mut self) {
        let ps = &mut self.ps;
        if ps.n_owned == 0 {
            return;
        }
        self.grid.min_cell = self.halo;
        collide::order_by_cell(
            ps,
            &self.domain.cell,
            self.halo,
            &mut self.perm,
            &mut self.sort_scratch,
        );
        ps.permute_owned(&self.perm, &mut self.scratch);
    }

    /// Blow-up checks of this rank at a rebuild: NaN, leaving the domain, or a jump of more
    /// than the halo since the last rebuild (ghosts could not have followed it).
    pub(super) fn local_failure(&self) -> Option<String> {
        let ps = &self.ps;
        if let Some((i, msg)) = self.domain.find_escaped(ps) {
            return Some(format!(
                "particle gid {} {msg} at step {} (rank {})",
                ps.gid[i],
                self.step,
                self.comm.rank()
            ));
        }
        if self.reference.len() == ps.n_owned {
            for i in 0..ps.n_owned {
                let d = (ps.pos[i] - self.reference[i]).norm();
                if d > self.halo {
                    return Some(format!(
                        "particle gid {} moved {d:.4e} m since the last neighbour rebuild, more \
                         than the halo {:.4e} m, at step {} (rank {}): the time step is too large \
                         or the particle was shot out",
                        ps.gid[i],
                        self.halo,
                        self.step,
                        self.comm.rank()
                    ));
                }
            }
        }
        None
    }

    /// At a rebuild: flip a deforming cell to a less skewed basis once a tilt passed half an
    /// edge (Yade `flipFlippable`; positions stay, the home images change: the forces keep
    /// their bits), and check that the deformation left room for the halo (collective: every
    /// rank holds the same cell).
    pub(super) fn flip_cell(&mut self) -> Result<()> {
        let Some(c) = self.engines.get_mut::<CellEngine>() else {
            return Ok(());
        };
        if c.flip && self.domain.cell.flip(self.domain.periodic, 0.5).is_some() {
            c.flips += 1;
        }
        if self.domain.cell.deformed {
            let step = self.step;
            self.domain
                .check_halo(self.halo)
                .map_err(|e| Error::Runtime(format!("the deforming cell at step {step}: {e}")))?;
            self.dec.check_halo3(self.frame_halo()).map_err(|e| {
                Error::Runtime(format!(
                    "the deforming cell at step {step}: {e} (run on fewer ranks along that axis)"
                ))
            })?;
        }
        Ok(())
    }
}
