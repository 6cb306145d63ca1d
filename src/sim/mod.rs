//! The DEM loop of one rank (ARCHITECTURE.md "The one picture"; thesis §1.1 engine order):
//! rebuild (if needed) → contacts → force gather + integrate (one pass) → move walls →
//! refresh ghosts.
//! No I/O here: the driver in `io::run` writes outputs between steps.

/// The engines' view of the step ([`StepView`]): disjoint borrows of the simulation's fields,
/// so that `self.engines` stays borrowable beside it.
macro_rules! step_view {
    ($s:ident) => {
        StepView {
            step: $s.step,
            time: $s.time,
            dt: $s.dt,
            ps: &mut $s.ps,
            walls: &mut $s.walls,
            comm: &$s.comm,
            external: &mut $s.external,
        }
    };
}

mod balancing;
mod build;
mod diag;
mod hooks;
mod rebuild;
mod state;

pub use crate::contact::CpmSim;
use crate::engines::cell::CellEngine;
use crate::engines::energy::EnergyBook;
use crate::engines::servo_wall::ServoWalls;
use crate::engines::strainer::UniaxialStrainer;
use crate::engines::{EngineState, Engines, External, Flow, StepView};
use crate::forces::{canonical_order, Canon};
pub use crate::io::checkpoint::Restored;
use crate::sched::with_keep_awake;
pub(crate) use build::setup_stop;
pub(crate) use diag::unbalanced_force;
pub use diag::{Budget, ContactView, LinkStats, Network, Stats};
pub use state::Timers;

use crate::collide::{self, CellGrid};
use crate::contact::facet::FacetPairs;
use crate::contact::store::{Candidate, PairList};
use crate::contact::{self, Wall};
use crate::domain::balance;
use crate::domain::comm::Comm;
use crate::domain::decomp::{self, Decomp};
use crate::domain::exact::ExactSum;
use crate::domain::halo::Halo;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::forces::ForceSlots;
use crate::integrate;
use crate::material::{CpmMat, Material, MixTable};
use crate::mesh::MeshSet;
use crate::particles::{Particles, PermuteScratch, BLOCK_ALL};
use crate::scene::schema::BalanceSpec;
use crate::scene::Scene;
use crate::{M3, V3};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Simulation {
    pub name: String,
    pub materials: Vec<Material>,
    /// The materials' pair parameters, mixed once (`MixTable`).
    pub mix: MixTable,
    pub walls: Vec<Wall>,
    /// Triangle meshes (every rank holds them all) at the current time.
    pub meshes: MeshSet,
    /// Facet groups of the wall pair list and their per-pair geometry (`contact::facet`).
    facets: FacetPairs,
    pub ps: Particles,
    pub domain: Domain,
    pub gravity: V3,
    pub damping: f64,
    /// Gravity goes through the Cundall damping (Yade `NewtonIntegrator.dampGravity`).
    pub damp_gravity: bool,
    pub dt: f64,
    pub skin: f64,
    pub step: u64,
    pub time: f64,
    pub pairs: PairList,
    pub wall_pairs: PairList,
    pub n_rebuilds: u64,
    pub timers: Timers,
    pub slots: ForceSlots,
    /// The communicator (shared by clones of a simulation, which tests make on one rank).
    pub comm: Arc<Comm>,
    /// This rank's subdomain in the rank grid.
    pub dec: Decomp,
    /// Ghost and migration traffic.
    pub halo_ex: Halo,
    /// Bitwise-reproducible mode requested (see docs/ARCHITECTURE.md "Reproducibility": the
    /// default path already is, so the flag only documents the run).
    pub reproducible: bool,
    /// Global particle count and exact total mass at the first rebuild: every later rebuild
    /// checks that migration lost and duplicated nothing.
    conserved: Option<(u64, f64)>,
    /// Bounding box over which open axes are cut into subdomains (the initial particles'; kept
    /// in checkpoints so a restart on the same rank count cuts identically).
    pub decomp_bbox: (V3, V3),
    /// Input: the next `step` stores each pair's force and each particle's total force
    /// (`Particles::force`) for [`Self::stats`] and [`Self::love_weber_stress`] (default: on;
    /// always with a strainer, which reads them every step). A driver that reads them only at
    /// output steps switches it off for the others (default mode: it saves a 24-byte write per
    /// contact and per particle per step, chute −3 %); reading pair forces after a step without
    /// it panics.
    pub record_forces: bool,
    /// Input: this rank received a stop request (signal); `step` ORs it over all ranks.
    pub stop_requested: bool,
    /// Output of the last `step`: some rank asked to stop (the same on every rank).
    pub stop_agreed: bool,
    /// Input: this rank asks for a checkpoint after the next step (wall-clock interval).
    pub checkpoint_requested: bool,
    /// Output of the last `step`: some rank asked for a checkpoint.
    pub checkpoint_agreed: bool,
    /// CPM contacts (all materials CPM), else the frictional law.
    pub cpm: Option<CpmSim>,
    /// The engines (`engines`: controllers, sources and sinks, forces), in the order their
    /// hooks run: the flow engines, the strainer, servo walls, the deforming cell, the energy
    /// book, then the scene's others.
    pub engines: Engines,
    /// The scene has a strainer (checked against checkpoints).
    strainer_wanted: bool,
    /// Forces and torques the engines add this step (empty unless one does).
    external: External,
    /// The region the contact network's series columns are restricted to (`Network`).
    pub analysis_region: Option<crate::engines::region::Region>,
    /// Wall clock since the current cell stage started (or the run), for its log line.
    stage_clock: Instant,
    /// This process' CPU seconds when the current cell stage started.
    stage_cpu: f64,
    /// Extra candidate distance for CPM links: (R_I − 1)·2 r_max (0 otherwise).
    reach_extra: f64,
    grid: CellGrid,
    /// Sphere–wall candidates of the last rebuild (the sphere candidates stay in `grid`).
    wall_cands: Vec<Candidate>,
    /// The owned origin of each ghost that is a periodic image of an owned particle
    /// (`Halo::self_origins`), at the last rebuild.
    origin: Vec<u32>,
    /// Scratch of the fused contact–integrator step (`sched`).
    claims: crate::sched::Claims,
    /// Use the fused contact–integrator step where it applies (default; tests compare
    /// without).
    pub fuse: bool,
    /// Steps taken with the fused step.
    pub n_fused: u64,
    reference: Vec<V3>,
    wall_ref: Vec<V3>,
    perm: Vec<u32>,
    sort_scratch: collide::OrderScratch,
    scratch: PermuteScratch,
    need_rebuild: bool,
    /// Inside the set-up's neighbour build (`prepare`, a restart's `restore`): a stop signal
    /// ends it between its stages ([`Self::setup_poll`]).
    in_setup: bool,
    /// Why the next rebuild happens (`-v`: the debug log of each rebuild).
    rebuild_why: String,
    /// The next step's integrator returns the box of the displacements (see `advance`).
    want_box: bool,
    halo: f64,
    /// Load balancing of the rank grid's cuts (`domain::balance`).
    pub balance: BalanceSpec,
    /// Cut moves so far (start-up and rebuilds).
    pub n_balances: u64,
    /// Max over average modelled cost per rank at the last rebuild (1 with one rank).
    pub imbalance: f64,
    /// Scratch of the balancing: modelled cost per owned particle, and a cost histogram.
    cost: Vec<u64>,
    hist: Vec<i64>,
    /// Scratch: owned positions in the decomposition frame of a deformed cell.
    frame_pos: Vec<V3>,
    /// Scratch of the reproducible mode's pair order ([`canonical_order`]).
    canon: Canon,
}

impl Simulation {
    /// The halo: 2 r_max + skin (+ the CPM reach), how far ghosts and candidate pairs reach.
    /// The halo in the decomposition frame along each axis (`Cell::frame_distance`: the
    /// halo itself until the cell deforms).
    pub fn frame_halo(&self) -> [f64; 3] {
        std::array::from_fn(|a| self.domain.cell.frame_distance(a, self.halo))
    }

    pub fn halo(&self) -> f64 {
        self.halo
    }

    /// Positions of the owned particles at the last neighbour rebuild (Verlet trigger).
    pub fn reference(&self) -> &[V3] {
        &self.reference
    }

    /// Geometry of the facet pairs at the last step, aligned with [`Self::wall_pairs`] (entries
    /// of plane-wall pairs are unused; empty without meshes).
    pub fn facet_hits(&self) -> &[contact::facet::Hit] {
        &self.facets.hit
    }

    /// Wall positions at the last neighbour rebuild.
    pub fn wall_reference(&self) -> &[V3] {
        &self.wall_ref
    }

    /// Will the next step start with a neighbour rebuild?
    pub fn need_rebuild(&self) -> bool {
        self.need_rebuild
    }

    /// The strain controller asked to stop (collective agreement: its criterion uses global
    /// sums only).
    /// The next step may end the protocol (and the run): its forces are recorded for the
    /// series' last row ([`crate::engines::protocol::Protocol::may_finish_after`]).
    pub fn may_finish_next(&self) -> bool {
        self.engines
            .get::<crate::engines::protocol::Protocol>()
            .is_some_and(|p| p.may_finish_after(self.step, self.time, self.dt))
    }

    /// A protocol stage that ended at this step asks for (a snapshot, a checkpoint) now.
    pub fn stage_outputs(&self) -> (bool, bool) {
        self.engines
            .get::<crate::engines::protocol::Protocol>()
            .map_or((false, false), |p| p.outputs)
    }

    pub fn finished(&self) -> bool {
        self.engines.finished()
    }
    /// The uniaxial strain controller, if the scene has one.
    pub fn strainer(&self) -> Option<&UniaxialStrainer> {
        self.engines.get()
    }
    /// The inlets and outlets, if the scene has any.
    pub fn flow(&self) -> Option<&Flow> {
        self.engines.get()
    }
    /// The servo walls, if the scene has them.
    pub fn servo(&self) -> Option<&ServoWalls> {
        self.engines.get()
    }
    pub fn servo_mut(&mut self) -> Option<&mut ServoWalls> {
        self.engines.get_mut()
    }
    /// The deforming cell's engine, if the scene has one.
    pub fn cell(&self) -> Option<&CellEngine> {
        self.engines.get()
    }
    pub fn cell_mut(&mut self) -> Option<&mut CellEngine> {
        self.engines.get_mut()
    }
    /// The energy book, with `energy: true`.
    pub fn energy(&self) -> Option<&EnergyBook> {
        self.engines.get()
    }

    /// Ask for a rebuild at the next step (e.g. after changing particles by hand).
    pub fn invalidate(&mut self) {
        self.need_rebuild = true;
        self.rebuild_why = "asked for (Simulation::invalidate)".into();
    }

    /// Total number of particles over all ranks.
    pub fn n_global(&self) -> u64 {
        self.comm.sum_u64(self.ps.n_owned as u64)
    }

    /// The particles present now, over all ranks, without a reduction: the count every
    /// rebuild checks (and the flow engines' `pre_exchange` re-takes after creating or
    /// deleting particles), the same on every rank. Before the first rebuild (and after a
    /// restore) it is summed (collective then, on every rank alike).
    pub fn n_present(&self) -> u64 {
        match self.conserved {
            Some((n, _)) => n,
            None => self.n_global(),
        }
    }

    /// Refresh the ghosts' kinematics from their owners. A single subdomain has only images
    /// of its own particles, and its pair list refers to their origins instead
    /// (`PairList::fold_images`): nothing reads them between rebuilds (chute: −2 % of a step).
    fn refresh_ghosts(&mut self) {
        if self.dec.n_ranks() > 1 {
            self.halo_ex.refresh(&self.comm, &self.dec, &mut self.ps);
        }
    }

    /// Advance one time step. Ghosts of other ranks' particles are refreshed at the end of the
    /// step, so that between steps (outputs, stats, checkpoints) they hold the current state.
    pub fn step(&mut self) -> Result<()> {
        // Keep the other workers awake through the sequential parts of the step: an idle rayon
        // worker sleeps after a few µs and takes tens of µs to wake (bench/RESULTS.md
        // "Threads"), longer than a parallel region of a small subdomain. The keep-alive jobs
        // spin by running whatever work the step's parallel regions offer (none on 1 thread).
        let stop = AtomicBool::new(false);
        with_keep_awake(
            rayon::current_num_threads().saturating_sub(1),
            &stop,
            || {
                // Set on return and on unwinding alike (the joins wait for the keep-alive jobs).
                let _stop = crate::sched::SetOnDrop(&stop);
                self.advance()
            },
        )
    }

    /// One time step (see [`Self::step`]): the fixed choreography, in LAMMPS `Verlet::run`'s
    /// order, each engine hook at its named point (`engines`), every phase timed.
    fn advance(&mut self) -> Result<()> {
        let t0 = Instant::now();
        self.rebuild_if_due(t0)?; // with the engines' `pre_exchange`
        let t1 = Instant::now();
        let record = self.record_forces || self.engines.records_forces();
        self.pre_force()?;
        if self.fusable() {
            // contacts and integration in one parallel region (`sched`)
            let out = self.slots.writer(record);
            return self.fused_step(self.slots.task_plan(out), record, t1);
        }
        self.contacts(record);
        let affine = self.post_force()?;
        let t2 = Instant::now();
        let moved = self.integrate(record, affine);
        self.timers.contact += t2 - t1;
        self.finish_step(moved, t2) // walls, ghosts, the Verlet trigger, `end_of_step`
    }

    /// A rebuild if the last step's Verlet trigger asked for one or an engine acts now.
    fn rebuild_if_due(&mut self, t0: Instant) -> Result<()> {
        if self.engines.wants_rebuild(self.step, self.time) {
            if !self.need_rebuild {
                self.rebuild_why = "a flow engine (inlet, outlet) acts at this step".into();
            }
            self.need_rebuild = true;
        }
        if self.need_rebuild {
            let c0 = self.timers.comm;
            self.rebuild()?;
            let t_comm = self.timers.comm - c0;
            self.timers.collide += t0.elapsed().saturating_sub(t_comm);
        }
        Ok(())
    }

    /// `pre_force`: a protocol stage's start (`hooks.rs`), the engines' prescribed velocities,
    /// wall motions and external forces; the energy book's per-pair entries zeroed.
    fn pre_force(&mut self) -> Result<()> {
        self.protocol_start();
        self.engines.pre_force(&mut step_view!(self))?;
        self.energy_entries();
        Ok(())
    }

    /// The fused contact–integrator step applies: default mode with two to four accumulator
    /// tasks, the frictional model, and nothing between the contacts and the integrator (no
    /// wall contacts, no post_force measurement: the cell's servo, the energy book's tally).
    fn fusable(&self) -> bool {
        self.fuse
            && self.slots.task_ranges().len() >= 2
            && self.pair_model().frictional()
            && !self.engines.has::<CellEngine>()
            && !self.engines.has::<EnergyBook>()
            && self.wall_pairs.is_empty()
            && !self.slots.canonical()
    }

    /// The scene's pair model ([`contact::PairModel`]).
    fn pair_model(&self) -> contact::PairModel<'_> {
        contact::PairModel::of(&self.mix, self.cpm.as_ref(), self.skin)
    }

    /// The contact loops: sphere pairs by the pair model, plane walls and mesh facets by the
    /// scene's frictional law, forces into the accumulators and slots.
    fn contacts(&mut self, record: bool) {
        let out = self.slots.writer(record);
        let model = contact::PairModel::of(&self.mix, self.cpm.as_ref(), self.skin);
        let (ps, mix, dt, sl) = (&self.ps, &self.mix, self.dt, &self.slots);
        let (pairs, wall_pairs, walls) = (&mut self.pairs, &mut self.wall_pairs, &self.walls);
        let (meshes, facets) = (&self.meshes, &mut self.facets);
        // Sphere and wall pairs write disjoint buffers: one parallel region for both, so that
        // no sequential gap lets an idle worker fall asleep between them (waking one costs
        // tens of µs, measured: bench/RESULTS.md "Threads").
        rayon::join(
            || model.run(pairs, sl, out, ps, dt),
            || {
                contact::wall_pairs(wall_pairs, &sl.wall_slot, out, ps, walls, mix, dt);
                let nw = walls.len();
                contact::facet::facet_pairs(
                    wall_pairs,
                    facets,
                    &sl.wall_slot,
                    out,
                    ps,
                    meshes,
                    nw,
                    mix,
                    dt,
                );
            },
        );
        self.slots.fold_deferred();
    }

    /// `post_force`: the measurements of the step's forces (`hooks.rs`) — the energy book's
    /// tally, the servo walls', the cell's stress and servo (its mean field for the integrator).
    fn post_force(&mut self) -> Result<Option<integrate::Affine>> {
        self.tally_contacts();
        self.servo_measure();
        let cell_due = self
            .engines
            .get::<CellEngine>()
            .is_some_and(|c| c.wants_measure());
        self.cell_servo(cell_due)
    }

    /// The force gather and the leapfrog of the owned particles (`integrate`).
    fn integrate(&mut self, record: bool, affine: Option<integrate::Affine>) -> integrate::Moved {
        // reproducible mode: every particle's energy terms added exactly (any layout's bits)
        let exact = self.slots.canonical();
        let gather = self.slots.gather();
        integrate::leapfrog(
            &mut self.ps,
            &self.reference,
            self.dt,
            self.damping,
            self.gravity,
            self.damp_gravity,
            record,
            self.want_box,
            affine,
            self.external.forces(),
            self.engines
                .get_mut::<EnergyBook>()
                .map(|b| (&mut b.integ, exact)),
            |p0, f, t| gather.take_block(p0, f, t),
        )
    }

    /// [`Self::advance`] from the contact loop on in one parallel region (`sched`): default
    /// mode with the accumulator tasks of `plan` (two or more), frictional spheres, no wall
    /// contacts. The same bits as the two regions.
    fn fused_step(
        &mut self,
        plan: crate::forces::TaskPlan,
        record: bool,
        t1: Instant,
    ) -> Result<()> {
        let ps: *mut Particles = &mut self.ps;
        // SAFETY: the integrator writes the kinematics of owned particles through raw
        // pointers, chunk by chunk, only once every contact task reading that chunk has
        // finished (`sched::contact_and_integrate`); the contact loop reads them through `ps`
        // meanwhile, and nothing else touches the particles during the call.
        let lf = integrate::Advance::new(
            unsafe { &mut *ps },
            &self.reference,
            self.dt,
            self.damping,
            self.gravity,
            record,
            self.want_box,
        )
        .damp_gravity(self.damp_gravity)
        .external(self.external.forces());
        let lp = contact::SphereLoop::new(&mut self.pairs, unsafe { &*ps }, &self.mix, self.dt);
        let gather = self.slots.gather();
        let (moved, t2) = unsafe {
            crate::sched::contact_and_integrate(&plan, &lp, &lf, &gather, &mut self.claims, t1)
        };
        self.timers.contact += t2.saturating_duration_since(t1);
        self.n_fused += 1;
        self.finish_step(moved, t2)
    }

    /// The rest of a step after the integrator (started at `t2`): walls and meshes move, ghosts
    /// refresh, the ranks agree on the Verlet trigger and the stop requests, `end_of_step`.
    fn finish_step(&mut self, moved: integrate::Moved, t2: Instant) -> Result<()> {
        let wall_d2 = self.move_boundaries();
        let t3 = Instant::now();
        self.refresh_ghosts();
        let moved = self.agree(moved);
        self.need_rebuild = self.verlet_trigger(&moved, wall_d2);
        self.want_box = !self.need_rebuild && collide::box_wanted(moved.d2max, self.skin);
        self.log_step(&moved, wall_d2);
        self.step += 1;
        self.time += self.dt;
        self.end_of_step()?;
        let t4 = Instant::now();
        self.timers.comm += t4 - t3;
        self.timers.integrate += t3.saturating_duration_since(t2);
        Ok(())
    }

    /// Plane walls at their velocities, meshes at their pose of the step's end; returns how
    /// far the boundary moved since the last rebuild, squared (0 without walls).
    fn move_boundaries(&mut self) -> f64 {
        let mut wall_d2: f64 = 0.0;
        for (w, r) in self.walls.iter_mut().zip(&self.wall_ref) {
            w.point += w.vel * self.dt;
            wall_d2 = wall_d2.max((w.point - r).norm_squared());
        }
        if !self.meshes.is_empty() {
            // the pose is a function of time (no drift); its move since the last rebuild
            // counts as a wall's in the Verlet trigger
            self.meshes.set_time(self.time + self.dt);
            wall_d2 = wall_d2.max(self.meshes.max_displacement().powi(2));
        }
        wall_d2
    }

    /// The displacements of all ranks (maxima and minima are order-independent, so rebuild
    /// steps are the same for every rank count; NaN counts as a move), and in the same message
    /// the stop and checkpoint requests (signals reach ranks at different steps; all must act
    /// at the same one). Collective.
    fn agree(&mut self, moved: integrate::Moved) -> integrate::Moved {
        let (lo, hi) = (moved.lo, moved.hi);
        let d2 = match moved.d2max.is_nan() {
            true => f64::INFINITY,
            false => moved.d2max,
        };
        let mut m = [
            d2,
            self.stop_requested as u8 as f64,
            self.checkpoint_requested as u8 as f64,
            hi.x,
            hi.y,
            hi.z,
            -lo.x,
            -lo.y,
            -lo.z,
        ];
        self.comm.max_f64s(&mut m);
        self.stop_agreed = m[1] > 0.0;
        self.checkpoint_agreed = m[2] > 0.0;
        integrate::Moved {
            d2max: m[0],
            lo: -V3::new(m[6], m[7], m[8]),
            hi: V3::new(m[3], m[4], m[5]),
        }
    }

    /// Verlet trigger (thesis eq. 2.10–2.12, `collide::still_valid`): whether the next step
    /// rebuilds. In a deforming cell the cell advances first, H ← (I + L Δt) H, with the
    /// images' shifts and the mean field the contact loop adds (`PairList::grad`).
    fn verlet_trigger(&mut self, moved: &integrate::Moved, wall_d2: f64) -> bool {
        let walls = (!self.walls.is_empty() || !self.meshes.is_empty()).then_some(wall_d2);
        let Some(c) = self.engines.get_mut::<CellEngine>() else {
            return !collide::still_valid(moved, walls, self.skin);
        };
        c.advance(&mut self.domain.cell, self.dt);
        self.pairs.refresh_shifts(&self.domain.cell);
        self.pairs.grad = c.contact_gradient();
        self.wall_pairs.grad = c.contact_gradient();
        self.wall_pairs.grad_origin = self.domain.cell.origin;
        let kappa = c.stretch(&self.domain.cell);
        let two_rmax = self.halo - self.skin - self.reach_extra;
        !collide::still_valid_deforming(moved, self.skin, kappa, two_rmax)
    }

    /// `RUST_LOG=debug`: why the next step rebuilds; `trace`: each step's state on rank 0.
    fn log_step(&mut self, moved: &integrate::Moved, wall_d2: f64) {
        if self.need_rebuild && log::log_enabled!(log::Level::Debug) {
            self.rebuild_why = format!(
                "the Verlet trigger after step {}: largest displacement {:.4e} m, displacement \
                 box diagonal {:.4e} m, walls and meshes {:.4e} m, against the skin {:.4e} m",
                self.step,
                moved.d2max.sqrt(),
                (moved.hi - moved.lo).norm(),
                wall_d2.sqrt(),
                self.skin
            );
        }
        if self.comm.is_root() && log::log_enabled!(log::Level::Trace) {
            log::trace!(
                "step {} done: t = {:.6e} s, rank 0: {} particles, {} ghosts, {} candidate \
                 pairs, {} wall pairs; largest displacement since the rebuild {:.4e} m{}",
                self.step + 1,
                self.time + self.dt,
                self.ps.n_owned,
                self.ps.n_ghosts(),
                self.pairs.len(),
                self.wall_pairs.len(),
                moved.d2max.sqrt(),
                if self.need_rebuild {
                    "; rebuild next"
                } else {
                    ""
                }
            );
        }
    }

    /// `end_of_step`: the engines' measurements of the new state, then the hooks that need the
    /// whole simulation (`hooks.rs`: the cell's stage test, the protocol's, CPM's link count).
    fn end_of_step(&mut self) -> Result<()> {
        self.engines.end_of_step(&mut step_view!(self))?;
        self.cell_stage_test();
        self.protocol_test();
        self.count_links_once();
        Ok(())
    }

    /// Every frictional material, and every contact's pair constant tan φ, take the friction
    /// angle `phi` (a cell stage's start: the dense-packing recipe).
    pub fn set_friction(&mut self, phi: f64) {
        for m in &mut self.materials {
            m.set_friction(phi);
        }
        self.mix = MixTable::new(&self.materials).with_rolling(self.mix.rolling());
        let t = phi.tan();
        for list in [&mut self.pairs, &mut self.wall_pairs] {
            for st in list.state.iter_mut() {
                st.phys.tan_phi = t;
            }
        }
    }

    /// Does this rank own a particle whose reference position is `x` (a restart's reading;
    /// a deforming cell through its decomposition frame and home image)?
    pub fn owns_reference(&self, x: &V3) -> bool {
        let cell = &self.domain.cell;
        match cell.deformed {
            false => self.dec.owns(x),
            true => {
                let h = cell.home(x, self.domain.periodic);
                self.dec.owns(&cell.frame_image(x, h, self.domain.periodic))
            }
        }
    }

    /// Local index of the owned particle with global id `gid` (linear search; tests/tools).
    pub fn find(&self, gid: u64) -> Option<usize> {
        self.ps.gid[..self.ps.n_owned]
            .iter()
            .position(|&g| g == gid)
    }
}
