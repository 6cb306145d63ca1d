//! Building a simulation: from a scene (the rank grid, this rank's particles, the start-up
//! balancing), from a checkpoint (`restore`), and the set-up's first neighbour build.

use super::*;

/// [`Simulation::setup_poll`] on the flag alone (usable while fields are borrowed).
pub(crate) fn setup_stop(in_setup: bool) -> Result<()> {
    match crate::signals::requested().filter(|_| in_setup) {
        Some(sig) => Err(Error::Stopped {
            signal: crate::signals::name(sig),
            what: "the first neighbour build".into(),
        }),
        None => Ok(()),
    }
}

/// This rank's spheres, created from the scene's generators (ARCHITECTURE.md "Distributed
/// set-up"): each sphere is wrapped into the cell and kept if this rank owns it; tiles of a
/// replicated scene far from the subdomain are skipped. The overlap check of the set-up runs
/// here, on the owned spheres plus those within 2 max radii (collective).
pub(crate) fn create_owned(scene: &Scene, dec: &Decomp, comm: &Comm) -> Result<Particles> {
    let margin = 2.0 * scene.summary.rmax;
    let d = &scene.domain;
    // dense packings first, by all ranks together (collective); then every rank walks the
    // generators, skipping what cannot be near its subdomain — a random fill's far tiles may
    // fail (too full) on some ranks only: agreed before the collective overlap check
    let packs = crate::scene::pack::packs_for(scene, dec, comm)?;
    let kept = scene.generate(
        &|lo, hi| dec.may_hold(lo, hi, margin),
        &mut |p| {
            d.wrap_one(&mut p.pos, &mut p.wrap);
            dec.near(&p.pos, margin)
        },
        &packs,
    );
    drop(packs);
    let kept = comm.agree(kept)?;
    let mut ps = Particles::default();
    for p in kept.iter().filter(|p| dec.owns(&p.pos)) {
        ps.push_owned(p);
    }
    for p in kept.iter().filter(|p| !dec.owns(&p.pos)) {
        ps.push(p);
    }
    drop(kept);
    crate::scene::check_overlaps(scene, &ps, comm)?;
    ps.truncate_ghosts();
    Ok(ps)
}

impl Simulation {
    /// A simulation on one process, without MPI (tests, tools).
    pub fn new(scene: Scene) -> Result<Self> {
        Self::build(scene, None, None)
    }

    /// A simulation on every rank of the MPI world: chooses the rank grid (or checks `grid`),
    /// creates the Cartesian communicator and keeps this rank's particles. Every rank must
    /// call it with the same scene.
    pub fn new_mpi(scene: Scene, grid: Option<[usize; 3]>) -> Result<Self> {
        let n = Comm::world_size();
        Self::build(scene, Some(n), grid)
    }

    pub(super) fn build(
        scene: Scene,
        mpi: Option<usize>,
        grid: Option<[usize; 3]>,
    ) -> Result<Self> {
        // Open axes are cut over the bounding box of the initial centres (wrapped into the
        // cell), found by the scene's streaming walk without creating the spheres, and of the
        // inlets' regions and the meshes (`Scene::decomposition_box`).
        let bbox = scene.decomposition_box();
        let mut sim = Self::build_with_bbox(scene, mpi, grid, bbox, true)?;
        sim.balance_start()?;
        sim.log_subdomain();
        Ok(sim)
    }

    /// Like `build`, with the bounding box over which open axes are cut given (restarts), and
    /// this rank's spheres created (`populate`) or left to the caller (restarts).
    pub(super) fn build_with_bbox(
        scene: Scene,
        mpi: Option<usize>,
        grid: Option<[usize; 3]>,
        (bb_lo, bb_hi): (V3, V3),
        populate: bool,
    ) -> Result<Self> {
        let rmax = scene.summary.rmax;
        // CPM: links reach R_I (r₁ + r₂) at creation, so candidates and the halo reach
        // (R_I − 1)·2 r_max further (thesis §6.1.4: enlarged bounding boxes).
        let reach_extra = scene
            .interaction_radius
            .map_or(0.0, |ri| (ri - 1.0) * 2.0 * rmax);
        let cpm = scene.interaction_radius.map(|ri| {
            let mats: Vec<CpmMat> = scene
                .materials
                .iter()
                // a CPM scene has only CPM materials (scene validation); the fallback is unused
                .map(|m| m.cpm().copied().unwrap_or_else(CpmMat::thesis))
                .collect();
            CpmSim {
                table: contact::CpmTable::new(&mats),
                mats,
                interaction_radius: ri,
                links_created: false,
                n_links0: 0,
            }
        });
        let halo = 2.0 * rmax + scene.skin + reach_extra;
        scene.domain.check_halo(halo)?;
        let d = &scene.domain;
        let ext = V3::from_fn(|a, _| {
            if d.periodic[a] {
                d.hi[a] - d.lo[a]
            } else {
                bb_hi[a] - bb_lo[a]
            }
        });
        let (comm, dims) = match mpi {
            None => (Comm::Serial, [1, 1, 1]),
            Some(n) => {
                let dims = match grid {
                    Some(g) => {
                        decomp::check_dims(g, n, ext, d.periodic, halo)?;
                        g
                    }
                    None => decomp::choose_dims(n, ext, d.periodic, halo)?,
                };
                let comm = Comm::cartesian(dims, d.periodic).ok_or_else(|| {
                    Error::Runtime("could not create the Cartesian communicator".into())
                })?;
                (comm, dims)
            }
        };
        let dec = Decomp::new(dims, comm.coords(), d.periodic, d.lo, d.hi, bb_lo, bb_hi);
        if comm.is_root() {
            let (n, how) = match (mpi, grid) {
                (None, _) => (1, "one process"),
                (Some(n), Some(_)) => (n, "given by --grid"),
                (Some(n), None) => (n, "the least ghost volume"),
            };
            log::debug!(
                "rank grid {}×{}×{} for {n} rank(s) ({how}): extents cut {:.4e} × {:.4e} × \
                 {:.4e} m (periodic axes: the cell; open: the box of the particles, inlets and \
                 meshes), halo {halo:.4e} m",
                dims[0],
                dims[1],
                dims[2],
                ext.x,
                ext.y,
                ext.z
            );
        }
        // the cell engine starts from the box (`domain` moves into the simulation below)
        let h0 = d.cell.h;
        dec.check_halo(halo)?;
        let mut mine = match populate {
            true => create_owned(&scene, &dec, &comm)?,
            false => Particles::default(),
        };
        // A fresh run sets the strainer up from the scene's summary (identical on every rank)
        // and its owned spheres; a restart gets it from the checkpoint's engine state.
        let strainer = match (populate, &scene.strainer) {
            (true, Some(st)) => Some(UniaxialStrainer::new(st, &scene.summary, &mut mine, &comm)?),
            _ => None,
        };
        Ok(Simulation {
            name: scene.name,
            mix: MixTable::new(&scene.materials).with_rolling(scene.rolling),
            materials: scene.materials,
            wall_ref: scene.walls.iter().map(|w| w.point).collect(),
            walls: scene.walls,
            meshes: MeshSet::new(scene.meshes),
            facets: FacetPairs::default(),
            ps: mine,
            domain: scene.domain,
            gravity: scene.gravity,
            damping: scene.damping,
            damp_gravity: scene.damp_gravity,
            dt: scene.dt,
            skin: scene.skin,
            step: 0,
            time: 0.0,
            pairs: PairList::for_law(cpm.is_some(), scene.rolling.has_history()),
            wall_pairs: PairList::for_law(false, scene.rolling.has_history()),
            n_rebuilds: 0,
            timers: Timers::default(),
            slots: ForceSlots::default(),
            comm: Arc::new(comm),
            dec,
            halo_ex: Halo::default(),
            reproducible: scene.reproducible,
            conserved: None,
            decomp_bbox: (bb_lo, bb_hi),
            record_forces: true,
            stop_requested: false,
            stop_agreed: false,
            checkpoint_requested: false,
            checkpoint_agreed: false,
            cpm,
            engines: {
                // the hooks run in this order (the strainer's velocities before the servo
                // walls', as always)
                let mut e = Engines::default();
                if let Some(f) = Flow::new(scene.flow) {
                    e.push(f);
                }
                if let Some(s) = strainer {
                    e.push(s);
                }
                if let Some(s) = scene.servo_walls {
                    e.push(s);
                }
                if let Some(mut c) = scene.cell {
                    c.h_ref = h0;
                    e.push(c);
                }
                if scene.energy {
                    e.push(EnergyBook::default());
                }
                for (_, x) in scene.engines {
                    e.push(x);
                }
                if let Some(p) = scene.protocol {
                    e.push(p);
                }
                e
            },
            strainer_wanted: scene.strainer.is_some(),
            external: External::default(),
            analysis_region: scene.analysis_region,
            stage_clock: Instant::now(),
            stage_cpu: 0.0,
            reach_extra,
            grid: CellGrid::default(),
            wall_cands: Vec::new(),
            origin: Vec::new(),
            claims: Default::default(),
            fuse: true,
            n_fused: 0,
            reference: Vec::new(),
            perm: Vec::new(),
            sort_scratch: Default::default(),
            scratch: PermuteScratch::default(),
            need_rebuild: true,
            in_setup: false,
            rebuild_why: "the first step".into(),
            want_box: false,
            halo,
            balance: scene.balance,
            n_balances: 0,
            imbalance: 1.0,
            cost: Vec::new(),
            hist: Vec::new(),
            frame_pos: Vec::new(),
            canon: Canon::default(),
        })
    }

    /// A simulation to be filled by [`Simulation::restore`]: the scene's materials, walls and
    /// box, the rank grid chosen over `bbox` (the checkpoint's), and no particles yet.
    pub fn new_restart(
        scene: Scene,
        mpi: bool,
        grid: Option<[usize; 3]>,
        bbox: (V3, V3),
    ) -> Result<Self> {
        let n = mpi.then(Comm::world_size);
        Self::build_with_bbox(scene, n, grid, bbox, false)
    }

    /// Continue from a checkpoint (collective). The neighbour structures are rebuilt at the
    /// positions of the last rebuild (`reference`, wrapped into the cell then), exactly as the
    /// uninterrupted run built them, and the particles then put back at their current positions:
    /// rebuild steps, periodic wrapping and hence every bit of the continuation are those of a
    /// run that never stopped, on any rank count.
    pub fn restore(&mut self, r: Restored) -> Result<()> {
        if r.wall_point.len() != self.walls.len() {
            return Err(Error::Input(format!(
                "the checkpoint has {} walls, the scene {}",
                r.wall_point.len(),
                self.walls.len()
            )));
        }
        self.step = r.step;
        self.time = r.time;
        for (w, (&p, &v)) in self
            .walls
            .iter_mut()
            .zip(r.wall_point.iter().zip(&r.wall_vel))
        {
            w.point = p;
            w.vel = v;
        }
        self.ps = r.particles;
        let n = self.ps.n_owned;
        let mut current: Vec<(u64, V3)> =
            (0..n).map(|i| (self.ps.gid[i], self.ps.pos[i])).collect();
        current.sort_unstable_by_key(|c| c.0);
        self.ps.pos[..n].copy_from_slice(&r.reference);
        for (k, st) in r.contacts {
            self.pairs.absorb(k, st);
        }
        let mut lead = r.leading;
        lead.sort_unstable();
        lead.dedup();
        self.pairs.set_leading_keys(lead);
        for (k, st) in r.wall_contacts {
            self.wall_pairs.absorb(k, st);
        }
        self.check_conservation()?;
        // the meshes at their pose of the last rebuild, as the spheres (the same candidates and
        // Verlet bound as the uninterrupted run), then at the checkpoint's time
        let mesh_ref = ron::from_str::<EngineState>(&r.engines)
            .ok()
            .and_then(|e| e.mesh_ref_time);
        self.meshes.set_time(mesh_ref.unwrap_or(r.time));
        // a deforming cell at its shape of the last rebuild too (`prepare_cell_restart` put it
        // there), the owned particles at their home images then, as the rebuild gave them
        let cell_state = ron::from_str::<EngineState>(&r.engines)
            .ok()
            .and_then(|e| e.cell);
        if cell_state.is_some() {
            self.domain.wrap_owned(&mut self.ps);
        }
        self.in_setup = true;
        let built = self.rebuild_structure(true);
        self.in_setup = false;
        built?;
        self.meshes.set_time(r.time);
        if let (Some(c), Some(st)) = (self.engines.get_mut::<CellEngine>(), &cell_state) {
            c.restore(st, &mut self.domain.cell);
            self.pairs.refresh_shifts(&self.domain.cell);
            self.pairs.grad = c.contact_gradient().filter(|_| r.step > 0);
            self.wall_pairs.grad = self.pairs.grad;
            self.wall_pairs.grad_origin = self.domain.cell.origin;
        }
        for i in 0..n {
            let g = self.ps.gid[i];
            let k = current
                .binary_search_by_key(&g, |c| c.0)
                .map_err(|_| Error::Runtime(format!("restore: particle {g} lost")))?;
            self.ps.pos[i] = current[k].1;
        }
        self.refresh_ghosts();
        self.wall_ref = r.wall_ref;
        self.need_rebuild = r.need_rebuild;
        self.rebuild_why = "the checkpoint's rebuild flag (the run it continues)".into();
        // `want_box` as the checkpointed step set it (the same maximum: the same rebuild steps),
        // a deforming cell's displacements measured from the references its mean field
        // carried (`integrate::Affine`: the same operations, the same bits)
        let carried: Vec<V3> = match self.engines.get::<CellEngine>() {
            Some(c) => {
                let a = self.domain.cell.h * c.h_ref.try_inverse().unwrap_or(M3::identity());
                let o = self.domain.cell.origin;
                self.reference.iter().map(|r| o + a * (r - o)).collect()
            }
            None => self.reference.clone(),
        };
        let d2 = integrate::Moved::between(&self.ps.pos[..n], &carried).d2max;
        let d2 = self.comm.max_f64(d2);
        self.want_box = !self.need_rebuild && collide::box_wanted(d2, self.skin);
        self.n_rebuilds = r.n_rebuilds;
        self.set_engine_state(&r.engines)
    }

    /// The run's set-up (collective): build the neighbour structures now if the next step
    /// would build them, as LAMMPS' `run` does before its timed loop, so that the step loop's
    /// timing holds only steps. The first step then finds them built: the same operations in
    /// the same order, the same bits. The pair list's second generation of buffers is sized
    /// too ([`crate::contact::store::PairList::warm`]), so that no rebuild of the loop
    /// allocates. Its time goes to no phase; returns it in seconds.
    /// A stop signal during it ends the set-up (`Error::Stopped`, between the build's stages,
    /// and once it is done): a huge scene's first build takes long, and a stop used to wait
    /// for it, then run the first step and checkpoint it (issue 32).
    pub fn prepare(&mut self) -> Result<f64> {
        let t = Instant::now();
        self.in_setup = true;
        let built = self.prepare_build();
        self.in_setup = false;
        built?;
        Ok(t.elapsed().as_secs_f64())
    }

    pub(super) fn prepare_build(&mut self) -> Result<()> {
        if self.need_rebuild {
            let timers = self.timers.clone();
            self.rebuild()?;
            self.pairs.warm();
            self.timers = timers;
        }
        self.setup_poll()
    }

    /// In the set-up's neighbour build ([`Self::prepare`], a restart's rebuild): a stop signal
    /// ends it now (`Error::Stopped`; each rank that has the signal stops, `mpirun` forwards it
    /// to all). Outside the set-up nothing: a stop there is agreed by the step's reduction.
    pub(super) fn setup_poll(&self) -> Result<()> {
        setup_stop(self.in_setup)
    }

    /// `-v`: this rank's subdomain and particles (every rank).
    pub fn log_subdomain(&self) {
        if !log::log_enabled!(log::Level::Debug) {
            return;
        }
        let c = self.dec.coords;
        let slab = |a: usize| {
            let k = c[a];
            format!(
                "{:.4e}..{:.4e}",
                self.dec.cuts[a][k],
                self.dec.cuts[a][k + 1]
            )
        };
        log::debug!(
            "rank {}: subdomain ({}, {}, {}) of the grid: x {}, y {}, z {} m; {} particles",
            self.comm.rank(),
            c[0],
            c[1],
            c[2],
            slab(0),
            slab(1),
            slab(2),
            self.ps.n_owned
        );
    }
}
