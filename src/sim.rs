//! The DEM loop of one rank (ARCHITECTURE.md "The one picture"; thesis §1.1 engine order):
//! rebuild (if needed) → contacts → force gather + integrate (one pass) → move walls →
//! refresh ghosts.
//! No I/O here: the driver in `io::run` writes outputs between steps.

use crate::collide::{self, CellGrid};
use crate::contact::facet::FacetPairs;
use crate::contact::store::{Candidate, ContactState, PairList};
use crate::contact::{self, Wall};
use crate::domain::balance;
use crate::domain::comm::Comm;
use crate::domain::decomp::{self, Decomp};
use crate::domain::exact::ExactSum;
use crate::domain::halo::Halo;
use crate::domain::Domain;
use crate::engines::cell::CellEngine;
use crate::engines::strainer::UniaxialStrainer;
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wall-clock time spent per phase of the loop.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    pub collide: Duration,
    pub contact: Duration,
    /// Force gather + integration + wall motion.
    pub integrate: Duration,
    pub comm: Duration,
    pub output: Duration,
}

/// Global quantities for the time series.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub ke_trans: f64,
    pub ke_rot: f64,
    pub n_contacts: usize,
    /// Yade's unbalanced force: mean |resultant force| (contacts + gravity) on the free
    /// particles / mean |contact force| (sphere–sphere and sphere–wall). Finite for finite
    /// forces: with no contact force to compare with (no contacts, or contacts all at zero
    /// force, as CPM links at the start) it is 1 when a free particle carries a resultant
    /// force — none of it is balanced, as in free fall — and 0 when none does (nothing acts,
    /// or no particle is free). Yade's `Shop::unbalancedForce` divides by the contact count
    /// and gives NaN there.
    pub unbalanced: f64,
    /// Largest overlap / smaller radius over all contacts.
    pub max_overlap_rel: f64,
    /// Force exerted by the spheres on each wall.
    pub wall_force: Vec<V3>,
    /// Force and torque (about its centre: `mesh::Mesh::centre0` moved with it) exerted by the
    /// spheres on each mesh.
    pub mesh_force: Vec<(V3, V3)>,
    /// Particles over all ranks.
    pub n_particles: u64,
    /// Per flow engine (`Flow::columns`): particles and mass removed (outlets) or inserted
    /// (inlets) so far.
    pub flow: Vec<(u64, f64)>,
    /// The deforming cell's columns (scenes with a `cell`).
    pub cell: Option<crate::engines::cell::CellRow>,
    /// The servo walls' box (scenes with `servo_walls`): the stress of each axis [Pa] (wall
    /// forces over the cross-section, tension positive; NaN for a periodic axis) and its edges
    /// [m].
    pub servo: Option<[f64; 6]>,
    /// The energy budget (scenes with `energy: true`).
    pub energy: Option<Budget>,
    /// The contact network of the particles (within the scene's `analysis_region`).
    pub network: Network,
}

/// The particles' contact network in `series.csv` (issue 32), over sphere–sphere contacts —
/// within the scene's `output.analysis_region` if it has one: of the particles whose centre
/// lies in it, and of the contacts whose contact point does.
#[derive(Clone, Copy, Debug, Default)]
pub struct Network {
    /// Mean coordination number: the particles' contacts with particles over the particles
    /// (2 N_c / N without a region).
    pub coordination: f64,
    /// Eigenvalues, largest first, of Satake's fabric tensor F = (1/N_c) Σ n ⊗ n (trace 1;
    /// NaN without contacts).
    pub fabric: [f64; 3],
    /// Fraction of the contacts at Coulomb's limit ([`ContactView::sliding`]; NaN without
    /// contacts).
    pub sliding: f64,
}

/// One contact as the analysis outputs see it (issue 32: `series.csv`'s network columns, the
/// snapshots' `contacts`): body 1 is the particle of lower gid, or the particle of a contact
/// with a wall or facet (body 2).
#[derive(Clone, Copy, Debug)]
pub struct ContactView {
    /// Contact point [m] at the current positions: x₁ + n (r₁ − δ/2) between spheres (the
    /// middle of the overlap, Yade's `ScGeom::contactPoint`), x − n_w (r − δ/2) on a plane
    /// wall, the closest point of the triangle (of the last step) on a facet.
    pub point: V3,
    /// Unit normal from body 1 towards body 2, as the law used it in the last step.
    pub normal: V3,
    /// Force on body 1 in the last step [N] (NaN where no step recorded forces).
    pub force: V3,
    /// Normal force −F · n [N], positive in compression (negative: a cohesive pull).
    pub f_n: f64,
    /// Tangential force |F − (F · n) n| [N].
    pub f_t: f64,
    /// Overlap δ [m] at the current positions: r₁ + r₂ − |l| (negative for a stretched CPM
    /// link), −gap on a wall.
    pub overlap: f64,
    /// CPM damage ω (0 for frictional contacts).
    pub damage: f64,
    /// Coulomb's limit held the tangential force in the last step: |F_T| ≥ (1 − 10⁻⁶) × the
    /// law's limit ([`FrictLawKind::coulomb_limit`](crate::contact::law::FrictLawKind::coulomb_limit));
    /// false for CPM contacts and where no force is known.
    pub sliding: bool,
}

/// The relative tolerance of [`ContactView::sliding`]: the law's radial return puts |F_T| on
/// its limit to round-off, and the limit recomputed here (from the force, or from the step's
/// geometry — the positions less the step's displacement) is as close.
const SLIDE_TOL: f64 = 1e-6;

/// (−F · n, |F − (F · n) n|): the normal force (compression positive) and the tangential
/// force's magnitude.
fn split(f: V3, n: V3) -> (f64, f64) {
    let fn_ = f.dot(&n);
    (-fn_, (f - n * fn_).norm())
}

/// One rank's share of a checkpoint, as `io::checkpoint` reads it.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    pub step: u64,
    pub time: f64,
    pub need_rebuild: bool,
    pub n_rebuilds: u64,
    pub wall_point: Vec<V3>,
    pub wall_vel: Vec<V3>,
    pub wall_ref: Vec<V3>,
    /// Owned particles at their current positions.
    pub particles: Particles,
    /// Their positions at the last neighbour rebuild (aligned with `particles`).
    pub reference: Vec<V3>,
    /// Contacts (key, history) touching an owned particle.
    pub contacts: Vec<((u64, u64), ContactState)>,
    pub wall_contacts: Vec<((u64, u64), ContactState)>,
    /// Keys of the pairs that were touching at the last rebuild (they lead the pair order).
    pub leading: Vec<(u64, u64)>,
    /// Engine state (text; empty = none).
    pub engines: String,
}

/// The energy budget's cumulative terms on one rank (issue 23; Yade `O.energy`): exact sums,
/// so that their sum over the ranks has the same bits on any layout. `integ`: the
/// integrator's ΔKE, work of all forces and of gravity (`integrate::EnergyTally`);
/// `contact`: the contacts' terms ([`contact::store::PairWork`]: frictional slip work,
/// viscous work, the boundary's work through the contacts, CPM's normal dissipation);
/// `flow`: the energy inlets brought in less what outlets took out (kinetic energy of the
/// particles, elastic energy of the contacts of deleted ones).
#[derive(Clone, Debug, Default)]
pub struct EnergyBook {
    pub integ: integrate::EnergyTally,
    pub contact: [ExactSum; 4],
    pub flow: ExactSum,
}

impl EnergyBook {
    /// The number of cumulative terms ([`Self::sums`]); checkpoints written before the CPM
    /// and flow terms hold the first [`Self::N_SUMS_V1`].
    const N_SUMS: usize = 9;
    const N_SUMS_V1: usize = 7;

    /// This rank's cumulative terms in one list: [ΔKE, damping, gravity, blocked DOFs' work,
    /// friction, viscous, boundary, damage, flow] (the checkpoint's order too).
    fn sums(&self) -> Vec<ExactSum> {
        let flow = std::iter::once(&self.flow);
        self.integ
            .0
            .iter()
            .chain(&self.contact)
            .chain(flow)
            .cloned()
            .collect()
    }

    /// Inverse of [`Self::sums`] (a shorter, older list: the missing terms zero).
    fn set_sums(&mut self, sums: &[ExactSum]) {
        let mut it = sums.iter().cloned();
        let slots = self.integ.0.iter_mut().chain(&mut self.contact);
        for (slot, v) in slots.chain(std::iter::once(&mut self.flow)).zip(&mut it) {
            *slot = v;
        }
    }
}

/// The energy budget over all ranks, in joules (collective: [`Simulation::energy_budget`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Kinetic energy (fluctuation velocities; translation and rotation).
    pub kinetic: f64,
    /// Elastic energy stored in the contacts (½ K_N u_N² + ½ |F_T|²/K_T).
    pub elastic: f64,
    /// Dissipated by frictional slip, by viscous dashpots, by Cundall damping, by CPM's damage
    /// and compressive plasticity (`law::cpm::step_dissipation`).
    pub friction: f64,
    pub viscous: f64,
    pub damping: f64,
    pub damage: f64,
    /// Work done on the particles by gravity and by the boundary (moving walls and meshes,
    /// particles with prescribed velocities — the strainer's supports —, the deforming cell's
    /// mean field: through the contacts).
    pub gravity: f64,
    pub boundary: f64,
    /// Energy brought in by inlets less what outlets took out: the kinetic energy of the
    /// particles created and deleted, the elastic energy of the deleted ones' contacts.
    pub flow: f64,
}

impl Budget {
    /// kinetic + elastic + dissipated − work done: constant when the budget closes.
    pub fn total(&self) -> f64 {
        self.kinetic + self.elastic + self.friction + self.viscous + self.damping + self.damage
            - self.gravity
            - self.boundary
            - self.flow
    }
}

/// A contact with key `key` touches a particle deleted now (`gone`: sorted gids): either
/// particle of a sphere pair, the sphere (the first) of a `wall` pair, whose second is a wall
/// or facet index, not a gid.
fn gone_contact((a, b): (u64, u64), gone: &[u64], wall: bool) -> bool {
    gone.binary_search(&a).is_ok() || (!wall && gone.binary_search(&b).is_ok())
}

/// CPM set-up of a simulation whose materials are all CPM.
#[derive(Clone, Debug)]
pub struct CpmSim {
    /// CPM parameters per material index.
    pub mats: Vec<CpmMat>,
    /// Their pair constants (`contact::cpm_pairs`).
    pub table: contact::CpmTable,
    /// Interaction radius R_I of the initial step (thesis eq. 2.23).
    pub interaction_radius: f64,
    /// The initial cohesive network has been created (after the first step).
    pub links_created: bool,
    /// Number of cohesive links created then (all ranks).
    pub n_links0: u64,
}

/// Link statistics of a CPM packing.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    /// Cohesive links with ω = 0.
    pub intact: u64,
    /// Cohesive links with ω > 0 still present.
    pub damaged: u64,
    /// Cohesive links removed since the first step.
    pub broken: u64,
    /// Mean ω over the present cohesive links.
    pub mean_omega: f64,
    /// Non-cohesive (frictional) contacts.
    pub frictional: u64,
}

/// Engine/controller state stored in checkpoints (RON text).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct EngineState {
    links_created: bool,
    n_links0: u64,
    strainer: Option<UniaxialStrainer>,
    /// Time of the last neighbour rebuild, from which the Verlet bound of the meshes' motion
    /// counts (scenes with meshes; absent in older files and scenes without: serde default).
    #[serde(default)]
    mesh_ref_time: Option<f64>,
    /// Inlet/outlet counters (scenes with flow engines; absent otherwise: serde default).
    #[serde(default)]
    flow: Option<crate::engines::FlowState>,
    /// The deforming cell: H, gradients, servo (scenes with a `cell`; serde default).
    #[serde(default)]
    cell: Option<crate::engines::cell::CellState>,
    /// The servo walls' last measurement (scenes with `servo_walls`; serde default).
    #[serde(default)]
    servo: Option<crate::engines::servo_wall::ServoWalls>,
    /// The energy budget's cumulative terms summed over all ranks, as exact-sum limbs
    /// (`EnergyBook::sums`).
    #[serde(default)]
    energy: Option<Vec<Vec<i64>>>,
}

/// [`Simulation::setup_poll`] on the flag alone (usable while fields are borrowed).
fn setup_stop(in_setup: bool) -> Result<()> {
    match crate::signals::requested().filter(|_| in_setup) {
        Some(sig) => Err(Error::Stopped {
            signal: crate::signals::name(sig),
            what: "the first neighbour build".into(),
        }),
        None => Ok(()),
    }
}

/// The inlets' and outlets' counters in a checkpoint's engine text (`FlowState::counters`):
/// `None` for a text without flow engines (empty, or a scene without them); `Err` when the
/// text does not parse.
pub fn flow_counters(
    engines: &str,
) -> std::result::Result<Option<crate::engines::FlowCounters>, String> {
    if engines.is_empty() {
        return Ok(None);
    }
    let e: EngineState = ron::from_str(engines).map_err(|e| e.to_string())?;
    Ok(e.flow.map(|f| f.counters()))
}

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
    /// Uniaxial strain controller.
    pub strainer: Option<UniaxialStrainer>,
    /// The scene has a strainer (checked against checkpoints).
    strainer_wanted: bool,
    /// Particle sources and sinks (outlets) acting at the `pre_exchange` hook of a rebuild
    /// (`engines`); `None` without any.
    pub flow: Option<crate::engines::Flow>,
    /// Stress-controlled box walls (`engines::servo_wall`; hooks `pre_force`, `post_force`).
    pub servo: Option<crate::engines::servo_wall::ServoWalls>,
    /// The deforming periodic cell (issue 23): its gradient moves `domain.cell` and the mean
    /// field; `None` for a static box.
    pub cell: Option<CellEngine>,
    /// Energy tracking (scene `energy: true`): this rank's cumulative terms.
    pub energy: Option<EnergyBook>,
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

/// Scratch of [`canonical_order`].
#[derive(Clone, Default)]
struct Canon {
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
fn canonical_order(pairs: &mut PairList, ps: &Particles, lo: V3, h: f64, c: &mut Canon) {
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

/// [`Stats::unbalanced`] from Σ|F| over the `n_free` free particles and Σ|F_c| over the
/// `n_contacts` contacts.
pub(crate) fn unbalanced_force(
    f_free: f64,
    n_free: usize,
    f_contacts: f64,
    n_contacts: usize,
) -> f64 {
    let mean_free = if n_free > 0 {
        f_free / n_free as f64
    } else {
        0.0
    };
    let mean_contact = if n_contacts > 0 {
        f_contacts / n_contacts as f64
    } else {
        0.0
    };
    if mean_free.is_nan() || mean_contact.is_nan() {
        return f64::NAN; // a blow-up (the series' `check` stops the run before)
    }
    match (mean_contact > 0.0, mean_free > 0.0) {
        (true, _) => mean_free / mean_contact,
        (false, true) => 1.0,
        (false, false) => 0.0,
    }
}

/// This rank's spheres, created from the scene's generators (ARCHITECTURE.md "Distributed
/// set-up"): each sphere is wrapped into the cell and kept if this rank owns it; tiles of a
/// replicated scene far from the subdomain are skipped. The overlap check of the set-up runs
/// here, on the owned spheres plus those within 2 max radii (collective).
fn create_owned(scene: &Scene, dec: &Decomp, comm: &Comm) -> Result<Particles> {
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

    fn build(scene: Scene, mpi: Option<usize>, grid: Option<[usize; 3]>) -> Result<Self> {
        // Open axes are cut over the bounding box of the initial centres (wrapped into the
        // cell), found by the scene's streaming walk without creating the spheres, and of the
        // inlets' regions and the meshes (`Scene::decomposition_box`).
        let bbox = scene.decomposition_box();
        let mut sim = Self::build_with_bbox(scene, mpi, grid, bbox, true)?;
        sim.balance_start()?;
        sim.log_subdomain();
        Ok(sim)
    }

    /// Start-up balancing (collective): cuts at the quantiles of the particle count, wherever
    /// they fall, and every particle sent to its owner under them (an all-to-all: no contact
    /// exists yet).
    fn balance_start(&mut self) -> Result<()> {
        if !self.balance.enabled || self.dec.n_ranks() < 2 {
            return Ok(());
        }
        crate::signals::SetupWatch::new("the start-up balancing", None).tick(0)?;
        self.particle_costs();
        let mut hist = std::mem::take(&mut self.hist);
        let pos = &self.ps.pos[..self.ps.n_owned];
        let cuts = self.balanced_cuts(&mut hist, pos, &self.cost, true);
        self.hist = hist;
        let moved = self.apply_cuts(cuts)?;
        if self.comm.is_root() {
            log::debug!(
                "balance at start-up: cuts at the particle count's quantiles: {}",
                self.cuts_text()
            );
        }
        if moved {
            let tc = Instant::now();
            self.halo_ex
                .redistribute(&self.comm, &self.dec, &mut self.ps);
            self.timers.comm += tc.elapsed();
        }
        Ok(())
    }

    /// The cuts that even out `cost` (one entry per position in `pos`, this rank's share of
    /// all particles) over the ranks: per cut axis, the global cost profile (one histogram
    /// reduction) and its quantiles (`balance::cuts`); `None` for an axis that keeps its cuts.
    /// `anywhere`: no limit on the moves (start-up, restart), else within the neighbouring
    /// slabs (a rebuild's migration follows). Collective; the same on every rank.
    pub fn balanced_cuts(
        &self,
        hist: &mut Vec<i64>,
        pos: &[V3],
        cost: &[u64],
        anywhere: bool,
    ) -> [Option<Vec<f64>>; 3] {
        let mut out = [None, None, None];
        for (a, o) in out.iter_mut().enumerate() {
            let p = self.dec.dims[a];
            if p < 2 {
                continue;
            }
            let (lo, hi) = if self.domain.periodic[a] {
                (self.domain.lo[a], self.domain.hi[a])
            } else {
                let (mn, mx) = pos.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |m, x| {
                    (m.0.min(x[a]), m.1.max(x[a]))
                });
                (self.comm.min_f64(mn), self.comm.max_f64(mx))
            };
            if !(lo.is_finite() && hi.is_finite() && hi > lo) {
                continue;
            }
            let bins = balance::BINS_PER_SLAB * p;
            hist.clear();
            hist.resize(bins, 0);
            for (x, &c) in pos.iter().zip(cost) {
                hist[balance::bin_of(x[a], lo, hi, bins)] += c as i64;
            }
            self.comm.sum_i64s(hist);
            *o = balance::cuts(&self.dec.cuts[a], hist, lo, hi, self.halo, !anywhere);
        }
        out
    }

    /// Take new cuts (the same on every rank); whether any moved. Refuses (a bug) cuts that
    /// leave a subdomain thinner than the halo.
    pub fn apply_cuts(&mut self, cuts: [Option<Vec<f64>>; 3]) -> Result<bool> {
        let mut moved = false;
        for (a, c) in cuts.into_iter().enumerate() {
            if let Some(c) = c {
                self.dec.cuts[a] = c;
                moved = true;
            }
        }
        if moved {
            self.dec
                .check_halo3(self.frame_halo())
                .map_err(|e| Error::Runtime(format!("load balancing: {e}")))?;
            self.n_balances += 1;
        }
        Ok(moved)
    }

    /// The modelled cost of each owned particle (`balance::cost`) into `self.cost`: its
    /// candidate and touching pairs of the last rebuild and step, sphere and wall.
    fn particle_costs(&mut self) {
        let n = self.ps.n_owned;
        self.cost.clear();
        self.cost.resize(n, balance::PARTICLE);
        for (list, sides) in [(&self.pairs, 2), (&self.wall_pairs, 1)] {
            for k in 0..list.len() {
                let w = balance::CANDIDATE + if list.active[k] { balance::CONTACT } else { 0 };
                let ends = [list.i[k], list.j[k]];
                for &p in &ends[..sides] {
                    if (p as usize) < n {
                        self.cost[p as usize] += w;
                    }
                }
            }
        }
    }

    /// This rank's load: owned particles, contacts it computes (touching pairs of its lists,
    /// a pair across two ranks counted on both), ghosts, and the modelled cost
    /// (`balance::cost`).
    pub fn load(&mut self) -> [u64; 4] {
        self.particle_costs();
        let touching = |l: &PairList| l.active.iter().filter(|&&a| a).count() as u64;
        [
            self.ps.n_owned as u64,
            touching(&self.pairs) + touching(&self.wall_pairs),
            self.ps.n_ghosts() as u64,
            self.cost.iter().sum(),
        ]
    }

    /// At a rebuild (collective): measure the imbalance of the modelled cost and, above the
    /// scene's threshold, move the cuts (within the neighbouring slabs: the migration that
    /// follows moves the particles). Whether any cut moved.
    fn balance_rebuild(&mut self) -> Result<bool> {
        let n_ranks = self.dec.n_ranks();
        if n_ranks < 2 {
            return Ok(false);
        }
        self.particle_costs();
        let local: u64 = self.cost.iter().sum();
        let (sum, max) = (self.comm.sum_u64(local), self.comm.max_u64(local));
        self.imbalance = balance::imbalance(max, sum, n_ranks);
        let root = self.comm.is_root();
        if !self.balance.enabled || self.imbalance <= self.balance.threshold {
            if root {
                log::debug!(
                    "balance at step {}: modelled cost max/avg {:.4} ({}), cuts kept",
                    self.step,
                    self.imbalance,
                    match self.balance.enabled {
                        true => format!("≤ the threshold {}", self.balance.threshold),
                        false => "balancing off".into(),
                    }
                );
            }
            return Ok(false);
        }
        let mut hist = std::mem::take(&mut self.hist);
        // a deformed cell is cut in its reference frame (`Cell::frame`)
        let mut frame = std::mem::take(&mut self.frame_pos);
        let pos = match self.domain.cell.deformed {
            false => &self.ps.pos[..self.ps.n_owned],
            true => {
                frame.clear();
                frame.extend((0..self.ps.n_owned).map(|i| self.domain.frame_of(&self.ps, i)));
                &frame[..]
            }
        };
        let cuts = self.balanced_cuts(&mut hist, pos, &self.cost, false);
        self.hist = hist;
        self.frame_pos = frame;
        let moved = self.apply_cuts(cuts)?;
        if root {
            log::debug!(
                "balance at step {}: modelled cost max/avg {:.4} > the threshold {}: cuts {}",
                self.step,
                self.imbalance,
                self.balance.threshold,
                match moved {
                    true => format!("moved to {}", self.cuts_text()),
                    false => "kept (the profile allows no better)".into(),
                }
            );
        }
        Ok(moved)
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

    /// The cut planes of every axis that is cut, for messages: `x [a, b, c], z [..]`.
    pub fn cuts_text(&self) -> String {
        let axes = (0..3).filter(|&a| self.dec.dims[a] > 1).map(|a| {
            let c: Vec<String> = self.dec.cuts[a][1..self.dec.dims[a]]
                .iter()
                .map(|x| format!("{x:.4e}"))
                .collect();
            format!("{} [{}]", ["x", "y", "z"][a], c.join(", "))
        });
        let t: Vec<String> = axes.collect();
        match t.is_empty() {
            true => "none (one subdomain)".into(),
            false => t.join(", "),
        }
    }

    /// Like `build`, with the bounding box over which open axes are cut given (restarts), and
    /// this rank's spheres created (`populate`) or left to the caller (restarts).
    fn build_with_bbox(
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
            strainer,
            strainer_wanted: scene.strainer.is_some(),
            flow: crate::engines::Flow::new(scene.flow),
            servo: scene.servo_walls,
            energy: scene.energy.then(EnergyBook::default),
            analysis_region: scene.analysis_region,
            stage_clock: Instant::now(),
            stage_cpu: 0.0,
            cell: scene.cell.map(|mut c| {
                c.h_ref = h0;
                c
            }),
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
        if let (Some(c), Some(st)) = (&mut self.cell, &cell_state) {
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
        let carried: Vec<V3> = match &self.cell {
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

    /// Engine and controller state as RON text, for checkpoints (empty: no CPM, no engines).
    pub fn engine_state(&self) -> String {
        if self.cpm.is_none()
            && self.strainer.is_none()
            && self.meshes.is_empty()
            && self.flow.is_none()
            && self.cell.is_none()
            && self.servo.is_none()
            && self.energy.is_none()
        {
            return String::new();
        }
        let e = EngineState {
            links_created: self.cpm.as_ref().is_some_and(|c| c.links_created),
            n_links0: self.cpm.as_ref().map_or(0, |c| c.n_links0),
            strainer: self.strainer.clone(),
            mesh_ref_time: (!self.meshes.is_empty()).then(|| self.meshes.ref_time()),
            flow: self.flow.as_ref().map(|f| f.state()),
            cell: self.cell.as_ref().map(|c| c.state(&self.domain.cell)),
            servo: self.servo.clone(),
            // collective: every rank writes the same text (`io::checkpoint`)
            energy: self.energy.as_ref().map(|b| {
                let mut s = b.sums();
                self.comm.sum_exact(&mut s);
                s.iter().map(|x| x.to_limbs()).collect()
            }),
        };
        ron::to_string(&e).unwrap_or_default()
    }

    /// Inverse of [`Simulation::engine_state`].
    pub fn set_engine_state(&mut self, s: &str) -> Result<()> {
        if s.is_empty() {
            if self.cpm.is_some()
                || self.strainer.is_some()
                || self.flow.is_some()
                || self.cell.is_some()
                || self.servo.is_some()
                || self.energy.is_some()
            {
                return Err(Error::Input(
                    "the checkpoint holds no CPM/strainer/flow/cell state but the scene has them"
                        .into(),
                ));
            }
            return Ok(());
        }
        let e: EngineState =
            ron::from_str(s).map_err(|e| Error::Input(format!("checkpoint engine state: {e}")))?;
        match &mut self.cpm {
            Some(c) => {
                c.links_created = e.links_created;
                c.n_links0 = e.n_links0;
            }
            None if e.links_created => {
                return Err(Error::Input(
                    "the checkpoint holds CPM state this scene does not have".into(),
                ))
            }
            None => {}
        }
        if e.strainer.is_some() != self.strainer_wanted {
            return Err(Error::Input(
                "the checkpoint and the scene disagree about the strainer".into(),
            ));
        }
        self.strainer = e.strainer;
        match (&mut self.flow, &e.flow) {
            (Some(f), Some(s)) => f.set_state(s)?,
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about inlets/outlets".into(),
                ))
            }
        }
        match (&mut self.energy, &e.energy) {
            (Some(b), Some(limbs)) => {
                // the totals on rank 0, zeros elsewhere: their sum over the ranks is the same
                *b = EnergyBook::default();
                if self.comm.is_root() {
                    let sums: Option<Vec<ExactSum>> =
                        limbs.iter().map(|l| ExactSum::from_limbs(l)).collect();
                    let n = [EnergyBook::N_SUMS, EnergyBook::N_SUMS_V1];
                    let sums = sums
                        .filter(|s| n.contains(&s.len()))
                        .ok_or_else(|| Error::Input("checkpoint energy state: bad sums".into()))?;
                    b.set_sums(&sums);
                }
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about energy tracking".into(),
                ))
            }
        }
        match (&mut self.cell, &e.cell) {
            (Some(c), Some(s)) => {
                c.restore(s, &mut self.domain.cell);
                // the stages' friction reaches the materials (the contacts have it already)
                if let Some(phi) = s.friction {
                    self.set_friction(phi);
                }
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about the deforming cell".into(),
                ))
            }
        }
        match (&mut self.servo, e.servo) {
            (Some(sv), Some(s)) => {
                // the scene's parameters, the checkpoint's last measurement
                (sv.force_n, sv.stiffness) = (s.force_n, s.stiffness);
                (sv.measured, sv.stress) = (s.measured, s.stress);
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about the servo walls".into(),
                ))
            }
        }
        Ok(())
    }

    /// The strain controller asked to stop (collective agreement: its criterion uses global
    /// sums only).
    pub fn finished(&self) -> bool {
        self.strainer.as_ref().is_some_and(|s| s.done)
            || self.cell.as_ref().is_some_and(|c| c.finished())
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

    /// Blow-up checks of this rank at a rebuild: NaN, leaving the domain, or a jump of more
    /// than the halo since the last rebuild (ghosts could not have followed it).
    fn local_failure(&self) -> Option<String> {
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

    fn prepare_build(&mut self) -> Result<()> {
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
    fn setup_poll(&self) -> Result<()> {
        setup_stop(self.in_setup)
    }

    /// Migrate, wrap, re-sort by grid cell, rebuild ghosts, candidate pairs and slots.
    fn rebuild(&mut self) -> Result<()> {
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
    fn pre_exchange(&mut self, stored: Option<[Vec<f64>; 2]>) -> Result<()> {
        let Some(flow) = &mut self.flow else {
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
        if let Some(book) = &mut self.energy {
            book.flow.merge(&carried);
        }
        self.conserved = None;
        self.check_conservation()
    }

    /// Energy tracking, a flow engine due at this step: the elastic energy of each contact
    /// this rank counts (sphere pairs of an owned particle 1, wall pairs), taken at the start
    /// of the rebuild, while the ghosts are there ([`Self::pre_exchange`] books those of the
    /// deleted particles). `None` otherwise.
    fn flow_contact_energies(&self) -> Option<[Vec<f64>; 2]> {
        let due = self
            .flow
            .as_ref()
            .is_some_and(|f| f.due(self.step, self.time));
        if !(due && self.energy.is_some()) {
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
    fn rebuild_structure(&mut self, restoring: bool) -> Result<()> {
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
        if let Some(c) = &mut self.cell {
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
    fn check_conservation(&mut self) -> Result<()> {
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
    fn sort_owned(&mut self) {
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
                let _stop = SetOnDrop(&stop);
                self.advance()
            },
        )
    }

    /// One time step (see [`Self::step`]).
    fn advance(&mut self) -> Result<()> {
        let t0 = Instant::now();
        // a flow engine due now acts at this step's rebuild (`pre_exchange`)
        if self
            .flow
            .as_ref()
            .is_some_and(|f| f.due(self.step, self.time))
        {
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
        let t1 = Instant::now();
        let cell_due = self.cell.as_ref().is_some_and(|c| c.wants_measure());
        let record =
            self.record_forces || self.strainer.is_some() || self.servo.is_some() || cell_due;
        let out = self.slots.writer(record);
        let sl = &self.slots;
        if let Some(st) = &mut self.strainer {
            st.pre_step(self.step, self.dt, &mut self.ps);
        }
        if let Some(sv) = &self.servo {
            sv.pre_force(&mut self.walls, self.dt);
        }
        let tasks = self.slots.task_ranges().len();
        if self.energy.is_some() {
            // zeros for the pairs the loops skip (apart, and were)
            for list in [&mut self.pairs, &mut self.wall_pairs] {
                list.work.clear();
                list.work.resize(list.len(), [0.0; 4]);
            }
        }
        if self.fuse
            && tasks >= 2
            && self.cpm.is_none()
            && self.cell.is_none()
            && self.energy.is_none()
            && self.wall_pairs.is_empty()
            && !self.slots.canonical()
        {
            return self.fused_step(self.slots.task_plan(out), record, t1);
        }
        let (ps, mix, dt) = (&self.ps, &self.mix, self.dt);
        let (pairs, wall_pairs, walls) = (&mut self.pairs, &mut self.wall_pairs, &self.walls);
        let (meshes, facets) = (&self.meshes, &mut self.facets);
        let (cpm, skin) = (&self.cpm, self.skin);
        // Sphere and wall pairs write disjoint buffers: one parallel region for both, so that
        // no sequential gap lets an idle worker fall asleep between them (waking one costs
        // tens of µs, measured: bench/RESULTS.md "Threads").
        rayon::join(
            || match cpm {
                None => contact::sphere_pairs(pairs, sl, out, ps, mix, dt),
                Some(c) => {
                    let cs = contact::CpmStep {
                        link_factor: if c.links_created {
                            0.0
                        } else {
                            c.interaction_radius
                        },
                        max_stretch: 0.5 * skin,
                    };
                    contact::cpm_pairs(pairs, sl, out, ps, &c.mats, &c.table, dt, cs)
                }
            },
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
        self.tally_contacts();
        self.servo_measure();
        let affine = self.cell_servo(cell_due)?;
        let t2 = Instant::now();
        let gather = self.slots.gather();
        let moved = integrate::leapfrog(
            &mut self.ps,
            &self.reference,
            self.dt,
            self.damping,
            self.gravity,
            self.damp_gravity,
            record,
            self.want_box,
            affine,
            self.energy.as_mut().map(|b| &mut b.integ),
            |p0, f, t| gather.take_block(p0, f, t),
        );
        self.timers.contact += t2 - t1;
        self.finish_step(moved, t2)
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
        .damp_gravity(self.damp_gravity);
        let lp = contact::SphereLoop::new(&mut self.pairs, unsafe { &*ps }, &self.mix, self.dt);
        let gather = self.slots.gather();
        let (moved, t2) = unsafe {
            crate::sched::contact_and_integrate(&plan, &lp, &lf, &gather, &mut self.claims, t1)
        };
        self.timers.contact += t2.saturating_duration_since(t1);
        self.n_fused += 1;
        self.finish_step(moved, t2)
    }

    /// The rest of a step after the integrator (started at `t2`): walls, ghosts, the Verlet
    /// trigger, stop requests, engines.
    fn finish_step(&mut self, moved: integrate::Moved, t2: Instant) -> Result<()> {
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
        let t3 = Instant::now();
        self.refresh_ghosts();
        // Verlet trigger (thesis eq. 2.10–2.12, `collide::still_valid`) on the displacements
        // of all ranks (maxima and minima are order-independent, so rebuild steps are the same
        // for every rank count). NaN counts as a move.
        // The same message carries the stop requests (signals reach ranks at different steps;
        // all must stop at the same one).
        let (lo, hi) = (moved.lo, moved.hi);
        let mut m = [
            if moved.d2max.is_nan() {
                f64::INFINITY
            } else {
                moved.d2max
            },
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
        let moved = integrate::Moved {
            d2max: m[0],
            lo: -V3::new(m[6], m[7], m[8]),
            hi: V3::new(m[3], m[4], m[5]),
        };
        self.stop_agreed = m[1] > 0.0;
        self.checkpoint_agreed = m[2] > 0.0;
        let walls = (!self.walls.is_empty() || !self.meshes.is_empty()).then_some(wall_d2);
        self.need_rebuild = match &mut self.cell {
            None => !collide::still_valid(&moved, walls, self.skin),
            Some(c) => {
                // H ← (I + L Δt) H: the images' shifts of the next step, L the mean field the
                // contact loop adds (`PairList::grad`)
                c.advance(&mut self.domain.cell, self.dt);
                self.pairs.refresh_shifts(&self.domain.cell);
                self.pairs.grad = c.contact_gradient();
                self.wall_pairs.grad = c.contact_gradient();
                self.wall_pairs.grad_origin = self.domain.cell.origin;
                let kappa = c.stretch(&self.domain.cell);
                let two_rmax = self.halo - self.skin - self.reach_extra;
                !collide::still_valid_deforming(&moved, self.skin, kappa, two_rmax)
            }
        };
        self.want_box = !self.need_rebuild && collide::box_wanted(moved.d2max, self.skin);
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
        self.step += 1;
        self.time += self.dt;
        if let Some(st) = &mut self.strainer {
            st.post_step(&self.ps, &self.comm);
        }
        if self.cell.as_ref().is_some_and(|c| c.current().is_some()) {
            // the stage's stop test, with Yade's unbalanced force on measurement steps
            // Yade evaluates it only once the goals hold (and on measurement steps)
            let ok = self.cell.as_ref().is_some_and(|c| c.all_ok);
            let unb = (ok && self.slots.recorded()).then(|| self.unbalanced_now());
            let root = self.comm.is_root();
            if let Some(c) = &mut self.cell {
                let name = c.current().map(|s| s.name.clone()).unwrap_or_default();
                // a stage ending by its `steps` without its goals is said (issue 32): the
                // goals as they stand before the stage ends
                let limit = c.current().and_then(|s| s.steps);
                let by_steps = limit.is_some_and(|n| c.iter >= n) && !c.all_ok;
                let report = by_steps.then(|| c.goals_report());
                let done = c.check_done(unb);
                if done && by_steps {
                    if root {
                        log::warn!(
                            "cell: stage `{name}` ended after its {} steps without reaching its \
                             goals, at step {}: {}",
                            limit.unwrap_or(0),
                            self.step,
                            report.unwrap_or_default()
                        );
                    }
                    c.missed.push(name.clone());
                }
                if done && root {
                    let wall = self.stage_clock.elapsed().as_secs_f64();
                    let cpu = crate::usage::cpu_seconds() - self.stage_cpu;
                    log::info!(
                        "cell: stage \"{name}\" done at step {} after {wall:.3} s ({cpu:.3} s CPU) \
                         (stress {:.4e} {:.4e} {:.4e} Pa, log strain {:.4e} {:.4e} {:.4e})",
                        self.step,
                        c.stress.x,
                        c.stress.y,
                        c.stress.z,
                        c.strain().x,
                        c.strain().y,
                        c.strain().z
                    );
                }
            }
        }
        if self.cpm.as_ref().is_some_and(|c| !c.links_created) {
            let n = self.link_stats();
            if let Some(c) = &mut self.cpm {
                c.links_created = true;
                c.n_links0 = n.intact + n.damaged;
            }
        }
        let t4 = Instant::now();
        self.timers.comm += t4 - t3;
        self.timers.integrate += t3.saturating_duration_since(t2);
        Ok(())
    }

    /// The deforming cell's servo before the integrator (collective on measurement steps):
    /// the start of a stage (friction, strain reference), the stress and stiffness measured
    /// when due, the step's velocity gradient, and the integrator's mean-field motion.
    fn cell_servo(&mut self, measure: bool) -> Result<Option<integrate::Affine>> {
        let Some(c) = &self.cell else {
            return Ok(None);
        };
        if let Some(st) = c.current().filter(|_| !c.started).cloned() {
            if let Some(phi) = st.friction_angle {
                self.set_friction(phi);
            }
            if let Some(c) = &mut self.cell {
                if st.reset_strain {
                    c.trsf = M3::identity();
                }
                c.started = true;
                c.friction = st.friction_angle.or(c.friction);
                self.stage_clock = Instant::now();
                self.stage_cpu = crate::usage::cpu_seconds();
            }
        }
        let stage = self.cell.as_ref().and_then(|c| c.current());
        let yade = stage.is_some_and(|s| s.servo == crate::engines::cell::Servo::Yade);
        let shear = stage.is_some_and(|s| s.shear_mask.iter().any(|&m| m));
        let m = measure.then(|| self.cell_measure(yade, shear));
        let cell = &self.domain.cell;
        let size = V3::from_fn(|a, _| cell.h.column(a).norm());
        let (dt, volume) = (self.dt, cell.volume());
        let max_span = self.halo - self.skin - self.reach_extra;
        let Some(c) = &mut self.cell else {
            return Ok(None);
        };
        c.servo(m, size, max_span, dt, volume);
        Ok(Some(c.affine(&self.domain.cell, dt)))
    }

    /// The servo walls' `post_force` hook: F · n of this step's contacts on each plane wall and
    /// their stiffness to a move within one step, Σ (dF_N/dδ + c_N/Δt) (the law's
    /// `normal_response`: tangent spring and dashpot), exact sums over the ranks
    /// (the same bits on any layout). Collective; nothing without servo walls.
    fn servo_measure(&mut self) {
        let Some(sv) = &self.servo else {
            return;
        };
        // [F · n of the six box walls, their Σ k_N] (`ServoWalls::slot`): no allocation
        let mut sums: [ExactSum; 12] = std::array::from_fn(|_| ExactSum::new());
        let (ps, law, nw) = (&self.ps, self.mix.law(), self.walls.len());
        for k in 0..self.wall_pairs.len() {
            let w = self.wall_pairs.j[k] as usize;
            // a box wall (not another wall, not a mesh facet), in contact
            let slot = (w < nw).then(|| sv.slot(w)).flatten();
            let Some(s) = slot.filter(|_| self.wall_pairs.active[k]) else {
                continue;
            };
            let i = self.wall_pairs.i[k] as usize;
            let wall = &self.walls[w];
            sums[s].add(self.slots.wall_force(k).dot(&wall.normal));
            let u_n = wall.gap(ps.pos[i], ps.radius[i]).min(0.0);
            let phys = &self.wall_pairs.state[k].phys;
            sums[6 + s].add(law.normal_response(phys, u_n, self.dt));
        }
        self.comm.sum_exact(&mut sums);
        let f = std::array::from_fn(|s| sums[s].value());
        let k = std::array::from_fn(|s| sums[6 + s].value());
        if let Some(sv) = &mut self.servo {
            sv.measure(&self.walls, f, k);
        }
    }

    /// Energy tracking: this step's terms of the contacts (the contact loops' per-pair
    /// entries, `PairList::work`: sphere pairs, walls, facets; zeros for pairs apart), each
    /// contact once (on the rank owning its sphere, particle 1 of a sphere pair), into this
    /// rank's cumulative exact sums. Contacts that ended now count: a CPM link's last step
    /// dissipates what it stored.
    fn tally_contacts(&mut self) {
        let Some(book) = &mut self.energy else {
            return;
        };
        let n = self.ps.n_owned;
        for pairs in [&self.pairs, &self.wall_pairs] {
            for k in 0..pairs.len() {
                // (most pairs are apart: a zero entry skipped at the cost of a compare)
                if (pairs.i[k] as usize) < n && pairs.work[k] != [0.0; 4] {
                    for (s, &w) in book.contact.iter_mut().zip(&pairs.work[k]) {
                        s.add(w);
                    }
                }
            }
        }
    }

    /// The energy budget now (collective): the state terms (kinetic, elastic) from the
    /// current state, the cumulative terms summed over the ranks; `None` without tracking.
    /// Its [`Budget::total`] stays constant to the integration error (tests/energy.rs).
    pub fn energy_budget(&self) -> Option<Budget> {
        let book = self.energy.as_ref()?;
        let ps = &self.ps;
        let mut s = book.sums();
        let mut ke = ExactSum::new();
        for i in 0..ps.n_owned {
            ke.add(0.5 * ps.mass[i] * ps.vel[i].norm_squared());
            ke.add(0.5 * ps.inertia[i] * ps.angvel[i].norm_squared());
        }
        s.push(ke);
        self.comm.sum_exact(&mut s);
        let v: Vec<f64> = s.iter().map(|x| x.value()).collect();
        // [ΔKE, damping, gravity, blocked DOFs' work, friction, viscous, boundary, damage,
        // flow, kinetic]
        Some(Budget {
            kinetic: v[9],
            elastic: self.elastic_energy(),
            friction: v[4],
            viscous: v[5],
            damping: v[1],
            damage: v[7],
            gravity: v[2],
            boundary: v[6] + v[3],
            flow: v[8],
        })
    }

    /// The servo's measurement (Yade `PeriTriaxController::strainStressStiffUpdate`): the
    /// contact part of the Love–Weber stress (1/V) Σ sym(f ⊗ l) (f on particle 1, l = C₂ − C₁,
    /// this step's forces), the affine stiffness (1/V) Σ l_a² (k_N n_a² + k_T (1 − n_a²)) and,
    /// for Yade's servo (`yade`), its Σ |n_a| k_N + (1 − |n_a|) k_T — exact sums over all ranks
    /// (each contact once), on rayon. The total mass comes along. Collective.
    pub fn cell_measure(&self, yade: bool, shear: bool) -> crate::engines::cell::Measure {
        use crate::engines::cell::SHEAR;
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        let ps = &self.ps;
        let law = self.mix.law();
        let pairs = &self.pairs;
        let ns = 13 + 3 * shear as usize; // the shear stiffnesses' first sum
                                          // [σ (6), affine stiffness (3), mass, Yade's stiffness (3), shear stiffness (3)],
                                          // contacts (unused sums stay zero)
        let (mut sums, n) = par_fold(
            pairs.len().max(ps.n_owned),
            || (vec![ExactSum::new(); ns], 0i64),
            |k, (s, n)| {
                if k < ps.n_owned {
                    s[9].add(ps.mass[k]);
                }
                if !(k < pairs.len() && pairs.active[k] && (pairs.i[k] as usize) < ps.n_owned) {
                    return;
                }
                *n += 1;
                let l = pairs.branch(k, &ps.pos);
                let f = self.slots.pair_force(k);
                for (e, &(a, b)) in IJ.iter().enumerate() {
                    s[e].add(0.5 * (f[a] * l[b] + f[b] * l[a]));
                }
                let d = l.norm();
                let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
                let u_n = d - (ps.radius[i] + ps.radius[j]);
                let (kt, kn) = law.stiffnesses(&pairs.state[k].phys, u_n);
                for a in 0..3 {
                    let na = l[a] / d;
                    s[6 + a].add(l[a] * l[a] * (na * na * kn + (1.0 - na * na) * kt));
                    if yade {
                        let na = na.abs();
                        s[10 + a].add(na * kn + (1.0 - na) * kt);
                    }
                }
                if shear {
                    // dσ_ab/(L_ab Δt) of an affine shear, l = d n (Δl_a = L_ab l_b Δt):
                    // ½ d² [k_T n_b² + 2 (k_N − k_T) n_a² n_b²]
                    for (c, &(a, b)) in SHEAR.iter().enumerate() {
                        let (na2, nb2) = ((l[a] / d).powi(2), (l[b] / d).powi(2));
                        s[13 + c].add(0.5 * d * d * (kt * nb2 + 2.0 * (kn - kt) * na2 * nb2));
                    }
                }
            },
            |(a, n), (b, m)| {
                a.iter_mut().zip(&b).for_each(|(a, b)| a.merge(b));
                *n += m;
            },
        );
        self.comm.sum_exact(&mut sums);
        let mut c = [n];
        self.comm.sum_i64s(&mut c);
        let v: Vec<f64> = sums.iter().map(|s| s.value()).collect();
        let volume = self.domain.cell.volume();
        let sym = |a: usize, b: usize| {
            let e = IJ
                .iter()
                .position(|&p| p == (a.min(b), a.max(b)) || p == (a.max(b), a.min(b)));
            v[e.unwrap_or(0)] / volume
        };
        crate::engines::cell::Measure {
            stress: M3::from_fn(sym),
            sum_stiff: match yade {
                true => V3::new(v[10], v[11], v[12]),
                false => V3::zeros(),
            },
            n_contacts: c[0] as u64,
            affine_stiff: V3::new(v[6], v[7], v[8]) / volume,
            mass: v[9],
            shear_stiff: match shear {
                true => V3::new(v[13], v[14], v[15]) / volume,
                false => V3::zeros(),
            },
        }
    }

    /// Every frictional material, and every contact's pair constant tan φ, take the friction
    /// angle `phi` (a cell stage's start: the dense-packing recipe).
    pub fn set_friction(&mut self, phi: f64) {
        for m in &mut self.materials {
            match m {
                crate::material::Material::Frict(f) => (f.friction_angle, f.friction) = (phi, None),
                crate::material::Material::Hertz(h) => (h.friction_angle, h.friction) = (phi, None),
                crate::material::Material::Hooke(h) => h.xmu = phi.tan(),
                crate::material::Material::Cpm(_) => {}
            }
        }
        self.mix = MixTable::new(&self.materials).with_rolling(self.mix.rolling());
        let t = phi.tan();
        for list in [&mut self.pairs, &mut self.wall_pairs] {
            for st in list.state.iter_mut() {
                st.phys.tan_phi = t;
            }
        }
    }

    /// At a rebuild: flip a deforming cell to a less skewed basis once a tilt passed half an
    /// edge (Yade `flipFlippable`; positions stay, the home images change: the forces keep
    /// their bits), and check that the deformation left room for the halo (collective: every
    /// rank holds the same cell).
    fn flip_cell(&mut self) -> Result<()> {
        let Some(c) = &mut self.cell else {
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

    /// Before a restart reads its particles: a deforming cell at its shape of the checkpoint's
    /// last rebuild, from the checkpoint's engine text, so that the reference positions go
    /// to the ranks (and cuts) that held them then.
    pub fn prepare_cell_restart(&mut self, engines: &str) {
        let st = ron::from_str::<EngineState>(engines)
            .ok()
            .and_then(|e| e.cell);
        if let (Some(_), Some(st)) = (&self.cell, st) {
            let h_ref = M3::from_fn(|r, k| st.h_ref[r][k]);
            if h_ref != self.domain.cell.h {
                self.domain.cell.set_h(h_ref);
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

    /// Check the current state for NaN or escaped particles on every rank (collective; the
    /// rebuild does it too).
    pub fn check(&self) -> Result<()> {
        let failure = self.domain.find_escaped(&self.ps).map(|(i, msg)| {
            format!(
                "particle gid {} {msg} at step {} (rank {})",
                self.ps.gid[i],
                self.step,
                self.comm.rank()
            )
        });
        if self.comm.any(failure.is_some()) {
            return Err(failure.map(Error::Runtime).unwrap_or(Error::Peer {
                rank: self.comm.rank(),
                step: self.step,
            }));
        }
        Ok(())
    }

    /// Overlap of sphere pair `k` relative to the smaller radius, and its branch length.
    fn pair_overlap(&self, k: usize) -> (f64, f64) {
        let ps = &self.ps;
        let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
        let l = self.pairs.branch(k, &ps.pos);
        let ov = ps.radius[i] + ps.radius[j] - l.norm();
        (ov / ps.radius[i].min(ps.radius[j]), ov)
    }

    /// Global quantities of the current state (forces are those of the last step), summed
    /// exactly over all ranks: the same bits for any rank and thread count. Collective.
    ///
    /// # Panics
    /// If the last step did not record the forces ([`Self::record_forces`]).
    pub fn stats(&self) -> Stats {
        assert!(
            self.slots.recorded(),
            "forces were not recorded in the last step (Simulation::record_forces)"
        );
        let ps = &self.ps;
        let nw = self.walls.len();
        let nm = self.meshes.meshes.len();
        // [ke_t, ke_r, Σ|F_c|, Σ|F| over free particles, wall forces…, mesh forces and torques…]
        let mut sums = vec![ExactSum::new(); 4 + 3 * nw + 6 * nm];
        let sum3 = || std::array::from_fn::<_, 3, _>(|_| ExactSum::new());
        // per chunk of particles: [ke_t, ke_r, Σ|F| over free particles], free particles
        let ([ke_t, ke_r, f_free], n_free) = par_fold(
            ps.n_owned,
            || (sum3(), 0i64),
            |i, (s, n)| {
                s[0].add(0.5 * ps.mass[i] * ps.vel[i].norm_squared());
                s[1].add(0.5 * ps.inertia[i] * ps.angvel[i].norm_squared());
                if ps.blocked[i] != BLOCK_ALL {
                    s[2].add(ps.force[i].norm());
                    *n += 1;
                }
            },
            |(a, n), (b, m)| {
                a.iter_mut().zip(&b).for_each(|(a, b)| a.merge(b));
                *n += m;
            },
        );
        (sums[0], sums[1], sums[3]) = (ke_t, ke_r, f_free);
        // per chunk of pairs: Σ|F_c|, contacts, largest overlap, and the contact network's
        // part ([`Network`]: one pass, the pairs' geometry formed once)
        let (pairs, n) = (&self.pairs, ps.n_owned);
        let inside = |x: &V3| self.analysis_region.as_ref().is_none_or(|r| r.contains(x));
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        struct Acc {
            f: ExactSum,
            n: i64,
            ov: f64,
            fabric: Vec<ExactSum>,
            /// [contacts in the region, those sliding, contact ends on owned particles in it]
            net: [i64; 3],
        }
        let acc = par_fold(
            pairs.len(),
            || Acc {
                f: ExactSum::new(),
                n: 0,
                ov: 0.0,
                fabric: vec![ExactSum::new(); 6],
                net: [0; 3],
            },
            |k, a| {
                if !pairs.active[k] {
                    return;
                }
                let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
                for p in [i, j] {
                    a.net[2] += (p < n && inside(&ps.pos[p])) as i64;
                }
                // each contact counted once: on the rank owning its particle 1
                if i < n {
                    let v = self.sphere_contact(k);
                    a.n += 1;
                    a.f.add(v.force.norm());
                    a.ov = a.ov.max(v.overlap / ps.radius[i].min(ps.radius[j]));
                    if inside(&v.point) {
                        a.net[0] += 1;
                        a.net[1] += v.sliding as i64;
                        for (s, &(x, y)) in a.fabric.iter_mut().zip(&IJ) {
                            s.add(v.normal[x] * v.normal[y]);
                        }
                    }
                }
            },
            |a, b| {
                a.f.merge(&b.f);
                a.n += b.n;
                a.ov = a.ov.max(b.ov);
                a.fabric
                    .iter_mut()
                    .zip(&b.fabric)
                    .for_each(|(x, y)| x.merge(y));
                a.net.iter_mut().zip(b.net).for_each(|(x, y)| *x += y);
            },
        );
        let (f_c, mut n_contacts, mut max_ov) = (acc.f, acc.n, acc.ov);
        sums[2] = f_c;
        for k in 0..self.wall_pairs.len() {
            if self.wall_pairs.active[k] {
                let i = self.wall_pairs.i[k] as usize;
                let w = self.wall_pairs.j[k] as usize;
                n_contacts += 1;
                let f = self.slots.wall_force(k);
                sums[2].add(f.norm());
                let ov = if w < nw {
                    for a in 0..3 {
                        sums[4 + 3 * w + a].add(f[a]);
                    }
                    -self.walls[w].gap(ps.pos[i], ps.radius[i])
                } else {
                    let h = &self.facets.hit[k];
                    let m = self.meshes.mesh_of[w - nw] as usize;
                    let t = (h.q - self.meshes.centre[m]).cross(&f);
                    let at = 4 + 3 * nw + 6 * m;
                    for a in 0..3 {
                        sums[at + a].add(f[a]);
                        sums[at + 3 + a].add(t[a]);
                    }
                    -h.u_n
                };
                max_ov = max_ov.max(ov / ps.radius[i]);
            }
        }
        sums.extend(acc.fabric);
        let n_p = ps.pos[..n].iter().filter(|x| inside(x)).count() as i64;
        let [net0, net1, net2] = acc.net;
        let mut counts = [n_contacts, n_free, n as i64, net0, net1, net2, n_p];
        self.comm.sum_i64s(&mut counts);
        self.comm.sum_exact(&mut sums);
        let max_ov = self.comm.max_f64(max_ov);
        let v: Vec<f64> = sums.iter().map(|s| s.value()).collect();
        let (n_contacts, n_free) = (counts[0] as usize, counts[1] as usize);
        let unbalanced = unbalanced_force(v[3], n_free, v[2], n_contacts);
        Stats {
            ke_trans: v[0],
            ke_rot: v[1],
            n_contacts,
            unbalanced,
            max_overlap_rel: max_ov,
            wall_force: (0..nw)
                .map(|w| V3::new(v[4 + 3 * w], v[5 + 3 * w], v[6 + 3 * w]))
                .collect(),
            mesh_force: (0..nm)
                .map(|m| {
                    let a = 4 + 3 * nw + 6 * m;
                    (
                        V3::new(v[a], v[a + 1], v[a + 2]),
                        V3::new(v[a + 3], v[a + 4], v[a + 5]),
                    )
                })
                .collect(),
            n_particles: counts[2] as u64,
            flow: self.flow.as_ref().map_or(Vec::new(), |f| f.totals()),
            cell: self.cell.as_ref().map(|c| {
                let m = self.cell_measure(false, false);
                let cell = &self.domain.cell;
                crate::engines::cell::CellRow {
                    stage: c.stage,
                    strain: c.strain(),
                    strain_vol: c.trsf.determinant().ln(),
                    stress: m.stress,
                    kinetic: self.kinetic_stress(),
                    coordination: 2.0 * m.n_contacts as f64 / (counts[2] as f64).max(1.0),
                    volume: cell.volume(),
                    h: cell.h,
                    grad: c.grad_prev.diagonal(),
                    flips: c.flips,
                    external_work: c.external_work,
                }
            }),
            servo: self.servo.as_ref().map(|sv| {
                let ([x, y, z], e) = (sv.stress, sv.edges(&self.walls));
                [x, y, z, e.x, e.y, e.z]
            }),
            energy: self.energy_budget(),
            network: {
                let at = 4 + 3 * nw + 6 * nm;
                let ([n_c, n_slide, ends, n_p], f) =
                    ([3, 4, 5, 6].map(|k| counts[k] as f64), &v[at..]);
                let fabric = match n_c > 0.0 {
                    // (nalgebra's iteration would not end on NaN)
                    false => [f64::NAN; 3],
                    true => {
                        let m = M3::new(f[0], f[5], f[4], f[5], f[1], f[3], f[4], f[3], f[2]);
                        let e = (m / n_c).symmetric_eigenvalues();
                        let mut e = [e[0], e[1], e[2]];
                        e.sort_by(|a, b| b.total_cmp(a));
                        e
                    }
                };
                Network {
                    coordination: ends / n_p,
                    fabric,
                    sliding: n_slide / n_c,
                }
            },
        }
    }

    /// Sphere pair `k` (in contact, particle 1 owned) as the outputs see it.
    pub fn sphere_contact(&self, k: usize) -> ContactView {
        let (ps, pairs) = (&self.ps, &self.pairs);
        let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
        let (r1, r2) = (ps.radius[i], ps.radius[j]);
        let l = pairs.branch(k, &ps.pos);
        let d = l.norm();
        let overlap = r1 + r2 - d;
        let st = &pairs.state[k];
        let force = match self.slots.forces_known() {
            true => self.slots.pair_force(k),
            false => V3::repeat(f64::NAN),
        };
        let (f_n, f_t) = split(force, st.n_old);
        let (damage, sliding) = match &self.cpm {
            Some(_) => (pairs.cpm[k].omega, false),
            None => {
                let limit = self.mix.law().coulomb_limit(&st.phys, -f_n, || {
                    // the step's geometry: the branch vector less the step's relative
                    // displacement (with a deforming cell, its mean field's too)
                    let dv = ps.vel[j] - ps.vel[i] + pairs.grad.map_or(V3::zeros(), |g| g * l);
                    (l - dv * self.dt).norm() - r1 - r2
                });
                (0.0, f_t > 0.0 && f_t >= (1.0 - SLIDE_TOL) * limit)
            }
        };
        ContactView {
            point: ps.pos[i] + l * ((r1 - 0.5 * overlap) / d),
            normal: st.n_old,
            force,
            f_n,
            f_t,
            overlap,
            damage,
            sliding,
        }
    }

    /// Wall (or facet) pair `k` (in contact) as the outputs see it: body 1 the sphere, body 2
    /// the wall.
    pub fn wall_contact_view(&self, k: usize) -> ContactView {
        let (ps, pairs) = (&self.ps, &self.wall_pairs);
        let (i, w) = (pairs.i[k] as usize, pairs.j[k] as usize);
        let r = ps.radius[i];
        let st = &pairs.state[k];
        // the law's body 1 is the wall, its normal points to the sphere
        let f_wall = match self.slots.forces_known() {
            true => self.slots.wall_force(k),
            false => V3::repeat(f64::NAN),
        };
        let n = st.n_old;
        let (f_n, f_t) = split(f_wall, n);
        let (point, overlap, u_n) = match self.walls.get(w) {
            Some(wall) => {
                let gap = wall.gap(ps.pos[i], r);
                let v = ps.vel[i] - wall.vel
                    + pairs
                        .grad
                        .map_or(V3::zeros(), |g| g * (ps.pos[i] - pairs.grad_origin));
                let point = ps.pos[i] - wall.normal * (r + 0.5 * gap);
                (point, -gap, gap - v.dot(&wall.normal) * self.dt)
            }
            None => {
                let h = &self.facets.hit[k];
                (h.q, -h.u_n, h.u_n)
            }
        };
        let limit = self.mix.law().coulomb_limit(&st.phys, -f_n, || u_n);
        ContactView {
            point,
            normal: -n,
            force: -f_wall,
            f_n,
            f_t,
            overlap,
            damage: 0.0,
            sliding: f_t > 0.0 && f_t >= (1.0 - SLIDE_TOL) * limit,
        }
    }

    /// Yade's unbalanced force (`Shop::unbalancedForce`): the mean total force on the free
    /// particles over the mean contact force, this step's forces (recorded), exact sums over
    /// all ranks. Collective.
    pub fn unbalanced_now(&self) -> f64 {
        let ps = &self.ps;
        let mut sums = [ExactSum::new(), ExactSum::new()];
        let mut counts = [0i64; 2];
        for i in 0..ps.n_owned {
            if ps.blocked[i] != BLOCK_ALL {
                sums[0].add(ps.force[i].norm());
                counts[0] += 1;
            }
        }
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < ps.n_owned {
                sums[1].add(self.slots.pair_force(k).norm());
                counts[1] += 1;
            }
        }
        self.comm.sum_exact(&mut sums);
        self.comm.sum_i64s(&mut counts);
        unbalanced_force(
            sums[0].value(),
            counts[0] as usize,
            sums[1].value(),
            counts[1] as usize,
        )
    }

    /// The kinetic part of the stress, −(1/V) Σ m v′ ⊗ v′ over the owned particles (v′ the
    /// fluctuation velocity: what `Particles::vel` holds in a deforming cell), exact sums over
    /// all ranks. Collective.
    pub fn kinetic_stress(&self) -> M3 {
        let ps = &self.ps;
        let mut sums = vec![ExactSum::new(); 9];
        for i in 0..ps.n_owned {
            let v = ps.vel[i];
            for a in 0..3 {
                for b in 0..3 {
                    sums[3 * a + b].add(ps.mass[i] * v[a] * v[b]);
                }
            }
        }
        self.comm.sum_exact(&mut sums);
        let vol = self.domain.cell.volume();
        M3::from_fn(|a, b| -sums[3 * a + b].value() / vol)
    }

    /// Elastic energy stored in the contacts over real contacts (each counted once): the law's
    /// springs ([`FrictLaw::elastic_energy`](crate::contact::law::FrictLaw::elastic_energy):
    /// ½ K_N u_N² + ½ |F_T|²/K_T for Cundall–Strack, the Hertz potential (2/5) k_N δ^{5/2} +
    /// ½ S_T |ξ|², …, CPM's [`stored_energy`](crate::contact::law::cpm::stored_energy)) and the
    /// EPSD rolling springs ½ |M|²/k_r; sphere pairs, walls and facets. Collective.
    pub fn elastic_energy(&self) -> f64 {
        let n = self.ps.n_owned;
        let mut e = ExactSum::new();
        for k in 0..self.pairs.len() {
            if (self.pairs.i[k] as usize) < n {
                e.add(self.pair_elastic(k));
            }
        }
        for k in 0..self.wall_pairs.len() {
            e.add(self.wall_pair_elastic(k));
        }
        let mut v = [e];
        self.comm.sum_exact(&mut v);
        v[0].value()
    }

    /// The EPSD rolling spring's energy of a contact with pair constants `p`, normal
    /// displacement `u_n`, effective radius `r_eff` and moment `m` (0 without the model).
    fn rolling_elastic(
        &self,
        p: &crate::contact::law::FrictPhys,
        u_n: f64,
        r_eff: f64,
        m: V3,
    ) -> f64 {
        let (law, roll) = (self.mix.law(), self.mix.rolling());
        if !roll.has_history() {
            return 0.0;
        }
        let (k_t, k_n) = law.stiffnesses(p, u_n);
        roll.spring_energy(m, roll.spring(r_eff, k_t, k_n, 0.0).0)
    }

    /// The elastic energy of sphere pair `k` at the current positions (0 when not in contact).
    fn pair_elastic(&self, k: usize) -> f64 {
        let ps = &self.ps;
        let st = &self.pairs.state[k];
        let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
        if !self.pairs.active[k] {
            return 0.0;
        }
        if let Some(c) = &self.cpm {
            use crate::contact::law::cpm;
            let h = &self.pairs.cpm[k];
            let (m1, m2) = (ps.material[i] as usize, ps.material[j] as usize);
            let (r1, r2) = (ps.radius[i], ps.radius[j]);
            let p = cpm::CpmPhys::new(&c.mats[m1], &c.mats[m2], r1, r2, h.d0);
            let l = self.pairs.branch(k, &ps.pos).norm();
            return cpm::stored_energy(&p, &h.state(st.fs, cpm::normal_strain(l, h.d0)));
        }
        let u_n = (-self.pair_overlap(k).1).min(0.0);
        let r_eff = ps.radius[i] * ps.radius[j] / (ps.radius[i] + ps.radius[j]);
        self.mix.law().elastic_energy(&st.phys, u_n, st.fs, r_eff)
            + self.rolling_elastic(&st.phys, u_n, r_eff, self.pairs.roll[k])
    }

    /// The elastic energy of sphere–wall (or facet) pair `k` at the current positions.
    fn wall_pair_elastic(&self, k: usize) -> f64 {
        let ps = &self.ps;
        let st = &self.wall_pairs.state[k];
        if !self.wall_pairs.active[k] {
            return 0.0;
        }
        let i = self.wall_pairs.i[k] as usize;
        let u_n = match self.walls.get(self.wall_pairs.j[k] as usize) {
            Some(w) => w.gap(ps.pos[i], ps.radius[i]),
            None => {
                // a mesh facet: its triangle now (as the walls: current positions)
                let t = self.wall_pairs.j[k] as usize - self.walls.len();
                let (v, nf) = (&self.meshes.tri[t], self.meshes.normal[t]);
                let c = (ps.pos[i], ps.radius[i]);
                crate::mesh::geom::sphere_contact(c.0, c.1, v[0], v[1], v[2], nf).2
            }
        }
        .min(0.0);
        let r = ps.radius[i];
        self.mix.law().elastic_energy(&st.phys, u_n, st.fs, r)
            + self.rolling_elastic(&st.phys, u_n, r, self.wall_pairs.roll[k])
    }

    /// CPM link statistics over all ranks (each contact counted once). Collective.
    pub fn link_stats(&self) -> LinkStats {
        let n_owned = self.ps.n_owned;
        let (mut c, mut om) = ([0i64; 3], ExactSum::new());
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < n_owned {
                let h = &self.pairs.cpm[k];
                if h.cohesive {
                    c[(h.omega > 0.0) as usize] += 1;
                    om.add(h.omega);
                } else {
                    c[2] += 1;
                }
            }
        }
        self.comm.sum_i64s(&mut c);
        let mut om = [om];
        self.comm.sum_exact(&mut om);
        let present = (c[0] + c[1]) as u64;
        let n0 = self.cpm.as_ref().map_or(0, |cp| cp.n_links0);
        LinkStats {
            intact: c[0] as u64,
            damaged: c[1] as u64,
            broken: n0.saturating_sub(present),
            mean_omega: if present > 0 {
                om[0].value() / present as f64
            } else {
                0.0
            },
            frictional: c[2] as u64,
        }
    }

    /// Love–Weber stress of the packing over a volume V (thesis eq. 3.32–3.37, digest §4.5
    /// with the erratum on the 1/V and l factors): σ = (1/V) Σ_c sym(l ⊗ F), l = C₂ − C₁, F the
    /// force on particle 1 (tension positive), forces of the last step. Summed exactly over all
    /// ranks (each contact once). Collective.
    pub fn love_weber_stress(&self, volume: f64) -> nalgebra::Matrix3<f64> {
        let ps = &self.ps;
        let mut sums = vec![ExactSum::new(); 6];
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < ps.n_owned {
                let l = self.pairs.branch(k, &ps.pos);
                let f = self.slots.pair_force(k);
                for (s, &(a, b)) in sums.iter_mut().zip(&IJ) {
                    s.add(0.5 * (l[a] * f[b] + l[b] * f[a]));
                }
            }
        }
        self.comm.sum_exact(&mut sums);
        let v: Vec<f64> = sums.iter().map(|s| s.value() / volume).collect();
        nalgebra::Matrix3::new(v[0], v[5], v[4], v[5], v[1], v[3], v[4], v[3], v[2])
    }

    /// Local index of the owned particle with global id `gid` (linear search; tests/tools).
    pub fn find(&self, gid: u64) -> Option<usize> {
        self.ps.gid[..self.ps.n_owned]
            .iter()
            .position(|&g| g == gid)
    }
}

/// Particles or pairs per task of the series statistics.
const STATS_CHUNK: usize = 8192;

/// Fold items 0..n on rayon: `add(item, acc)` into one accumulator `init()` per chunk of
/// [`STATS_CHUNK`] items, then merged in chunk order (`merge(into, from)`). Exact
/// sums, counts and maxima: the same result as one sequential pass. Allocates (outputs only).
fn par_fold<T: Send>(
    n: usize,
    init: impl Fn() -> T + Sync,
    add: impl Fn(usize, &mut T) + Sync,
    merge: impl Fn(&mut T, T),
) -> T {
    let parts: Vec<T> = (0..n.div_ceil(STATS_CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut acc = init();
            for i in c * STATS_CHUNK..((c + 1) * STATS_CHUNK).min(n) {
                add(i, &mut acc);
            }
            acc
        })
        .collect();
    let mut all = init();
    for p in parts {
        merge(&mut all, p);
    }
    all
}

/// Run the pool's pending jobs until `stop` (see [`Simulation::step`]), yielding the core
/// while there are none, so an oversubscribed node loses little. After [`KEEP_AWAKE_IDLE`]
/// without work it gives up and lets the worker sleep: a long sequential stretch (a rebuild's
/// merge, a slow collective) does not burn a core, and should the step's own thread ever run
/// this job while it waits for a stolen one, it returns to it.
fn keep_awake(stop: &AtomicBool) {
    let mut idle_since = None;
    while !stop.load(Ordering::Acquire) {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => idle_since = None,
            _ => {
                if idle_since.get_or_insert_with(Instant::now).elapsed() > KEEP_AWAKE_IDLE {
                    return;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// Run `f` with `n` [`keep_awake`] jobs offered to the other workers: nested `rayon::join`s,
/// whose jobs live on the stack (no allocation in the step loop). `f` runs on this thread;
/// when it returns, a keep-alive job nobody took runs here and returns at once.
fn with_keep_awake<R: Send>(n: usize, stop: &AtomicBool, f: impl FnOnce() -> R + Send) -> R {
    match n {
        0 => f(),
        _ => rayon::join(|| with_keep_awake(n - 1, stop, f), || keep_awake(stop)).0,
    }
}

/// See [`keep_awake`]: longer than the sequential gaps of a step between its parallel regions.
const KEEP_AWAKE_IDLE: Duration = Duration::from_micros(500);

/// Sets the flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
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
