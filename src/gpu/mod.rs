//! The GPU step (issue 34; docs/ARCHITECTURE.md "GPU step"): the whole state of a
//! single-rank run on one device, stepped by the kernels of `kernels/step.cu`, copied to the
//! host only when something is written (series rows as a reduction, snapshots and
//! checkpoints through the CPU [`Simulation`], which stays the physics' source of truth and
//! writes every output).
//!
//! Scope (`support.rs`): spheres, plane walls (fixed and moving), the frictional laws
//! (Cundall–Strack, Hertz–Mindlin, LAMMPS hooke/history) with their histories, gravity,
//! Cundall damping, periodic axes, blocked DOFs. The device is a CUDA GPU (`cuda.rs`,
//! feature `gpu`) or the host running the same kernels compiled for the CPU (`host.rs`),
//! which CI tests against the CPU path.

pub mod device;
pub mod host;
pub mod params;
pub mod support;

#[cfg(feature = "gpu")]
pub mod cuda;

use crate::contact::law::FrictPhys;
use crate::contact::store::{ContactState, FrictState};
use crate::contact::Wall;
use crate::domain::exact::ExactSum;
use crate::error::{Error, Result};
use crate::material::Material;
use crate::particles::{Particle, Particles};
use crate::sim::{Restored, Simulation, Stats};
use crate::{Quat, V3};
use device::{Device, DeviceExt, HostDevice};
use params::*;
use std::time::{Duration, Instant};

/// Which device runs the step (`--gpu N` or `--gpu host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// CUDA GPU of this ordinal (feature `gpu`).
    Cuda(usize),
    /// The kernels compiled for the host: slow; for checking the GPU path without a GPU.
    Host,
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "host" => Ok(Target::Host),
            _ => s
                .parse::<usize>()
                .map(Target::Cuda)
                .map_err(|_| format!("`{s}` is not a GPU ordinal (0, 1, ...) or `host`")),
        }
    }
}

/// Open the device `t`.
pub fn open(t: Target) -> Result<Box<dyn Device>> {
    match t {
        Target::Host => Ok(Box::new(HostDevice::new())),
        #[cfg(feature = "gpu")]
        Target::Cuda(k) => Ok(Box::new(cuda::CudaDevice::new(k)?)),
        #[cfg(not(feature = "gpu"))]
        Target::Cuda(_) => Err(Error::Input(
            "this demhpc was built without GPU support: build it with `cargo build --release \
             --features gpu` (or run the GPU kernels on the host with --gpu host)"
                .into(),
        )),
    }
}

/// Particles per thread of the statistics reduction.
const STATS_CHUNK: u32 = 256;
/// Elements per thread of the prefix sums.
const SCAN_CHUNK: u32 = 256;

/// Time spent per phase of the GPU step (the device is synchronised at every step's end by
/// the rebuild flag it returns, so host clocks time the kernels).
#[derive(Clone, Debug, Default)]
pub struct GpuTimers {
    pub rebuild: Duration,
    pub step: Duration,
    pub output: Duration,
}

/// One rank's simulation on a device.
pub struct GpuStep {
    dev: Box<dyn Device>,
    p: DemParams,
    n: usize,
    n_walls: usize,
    /// Neighbour slots per particle of the two list buffers (`_in`, `_out`).
    cap: [u32; 2],
    walls: Vec<Wall>,
    pub step: u64,
    pub time: f64,
    need_rebuild: bool,
    pub n_rebuilds: u64,
    /// Contacts whose pair was no neighbour any more at a rebuild (their history dropped).
    pub lost_contacts: u64,
    /// Prefix-sum levels: each level's chunk totals.
    scan_levels: Vec<(DevPtr, u32)>,
    n_stats_chunks: u32,
    pub timers: GpuTimers,
}

/// Pack a scene's pair mixing into the kernels' table (`mix_phys` of dem.h).
fn mix_rows(sim: &Simulation) -> Vec<f64> {
    let nm = sim.materials.len();
    let mut rows = Vec::with_capacity(nm * nm * MIX_ROW);
    for a in 0..nm {
        for b in 0..nm {
            rows.extend_from_slice(&sim.mix.get(a as u16, b as u16).gpu_row());
        }
    }
    rows
}

fn law_of(sim: &Simulation) -> Result<(Law, [f64; 3], bool)> {
    use crate::contact::law::FrictLawKind as K;
    if sim.cpm.is_some() {
        return Err(Error::Input("CPM is not supported on GPU yet".into()));
    }
    Ok(match sim.mix.law() {
        K::CundallStrack => (Law::CundallStrack, [0.0; 3], false),
        K::HertzMindlin(h) => (Law::Hertz, [0.0, 0.0, h.surface_energy], false),
        K::Hooke(h) => (Law::Hooke, [h.gamma_n, h.gamma_t, 0.0], h.coulomb_total),
    })
}

impl GpuStep {
    /// Take over `sim` (after its set-up or restore): its owned particles, walls and contact
    /// histories go to the device `dev`, which builds its own neighbour lists.
    pub fn new(sim: &Simulation, dev: Box<dyn Device>) -> Result<GpuStep> {
        support::check_simulation(sim)?;
        let ps = &sim.ps;
        let n = ps.n_owned;
        if n == 0 {
            return Err(Error::Input(
                "the GPU step needs at least one particle".into(),
            ));
        }
        if n >= (1 << 31) {
            return Err(Error::Input(format!("{n} particles: too many for one GPU")));
        }
        let (law, lc, coulomb_total) = law_of(sim)?;
        let mut g = GpuStep {
            dev,
            p: DemParams::default(),
            n,
            n_walls: sim.walls.len(),
            cap: [0, 0],
            walls: sim.walls.clone(),
            step: sim.step,
            time: sim.time,
            need_rebuild: true,
            n_rebuilds: sim.n_rebuilds,
            lost_contacts: 0,
            scan_levels: Vec::new(),
            n_stats_chunks: (n as u32).div_ceil(STATS_CHUNK),
            timers: GpuTimers::default(),
        };
        let p = &mut g.p;
        p.n = n as u32;
        p.n_walls = g.n_walls as u32;
        p.law = law as u32;
        (p.hooke_gn, p.hooke_gt, p.surface_energy) = (lc[0], lc[1], lc[2]);
        p.hooke_total = coulomb_total as u32;
        p.dt = sim.dt;
        p.lambda = sim.damping;
        p.g = [sim.gravity.x, sim.gravity.y, sim.gravity.z];
        p.damp_gravity = sim.damp_gravity as u32;
        p.skin = sim.skin;
        p.lim2 = (0.5 * sim.skin).powi(2);
        p.halo2 = sim.halo().powi(2);
        p.n_mat = sim.materials.len() as u32;
        p.stats_chunk = STATS_CHUNK;
        p.store_phys = std::env::var("DEMHPC_GPU_STORE_PHYS").is_ok_and(|v| v == "1") as u32;
        p.scan_chunk = SCAN_CHUNK;
        g.set_domain(sim)?;
        g.set_walls();
        g.allocate(sim)?;
        g.upload_particles(ps)?;
        g.rebuild()?;
        g.import_contacts(sim)?;
        Ok(g)
    }

    /// The box, periodic shifts and cell grid of the neighbour search.
    fn set_domain(&mut self, sim: &Simulation) -> Result<()> {
        let d = &sim.domain;
        if d.cell.deformed {
            return Err(Error::Input(
                "a deforming cell is not supported on GPU yet".into(),
            ));
        }
        let p = &mut self.p;
        let size = d.size();
        for a in 0..3 {
            p.lo[a] = d.lo[a];
            p.hi[a] = d.hi[a];
            p.len[a] = size[a];
            p.periodic[a] = d.periodic[a] as u32;
        }
        // H (c2 - c1) of every image difference, as the CPU path forms it (`Cell::shift`)
        for code in 0..27 {
            let dc = [code % 3 - 1, (code / 3) % 3 - 1, code / 9 - 1];
            let s = if dc == [0, 0, 0] {
                V3::zeros()
            } else {
                d.cell.shift(dc)
            };
            p.shift[code as usize] = [s.x, s.y, s.z];
        }
        // cells at least the halo (2 r_max + skin) wide, at most ~2 per particle
        let halo = sim.halo();
        let mut width = halo;
        let dims = loop {
            let dims: [u32; 3] = std::array::from_fn(|a| {
                ((size[a] / width).floor() as u64).clamp(1, 1 << 20) as u32
            });
            let cells: u64 = dims.iter().map(|&k| k as u64).product();
            if cells <= 2 * self.n as u64 + 64 {
                break dims;
            }
            width *= 1.25;
        };
        for a in 0..3 {
            p.dims[a] = dims[a];
            p.cell_lo[a] = d.lo[a];
            p.cell_inv[a] = dims[a] as f64 / size[a];
        }
        p.n_cells = dims.iter().product();
        Ok(())
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr> {
        self.dev.alloc(bytes)
    }

    /// Every device array but the neighbour lists' (sized at the first rebuild).
    fn allocate(&mut self, sim: &Simulation) -> Result<()> {
        let (n, nw) = (self.n, self.n_walls.max(1));
        let d4 = 32 * n;
        macro_rules! pair {
            ($a:ident, $b:ident, $bytes:expr) => {
                self.p.$a = self.alloc($bytes)?;
                self.p.$b = self.alloc($bytes)?;
            };
        }
        pair!(pos_in, pos_out, d4);
        pair!(vel_in, vel_out, d4);
        pair!(ang_in, ang_out, d4);
        pair!(ori_in, ori_out, d4);
        pair!(gid_in, gid_out, 8 * n);
        pair!(info_in, info_out, 4 * n);
        pair!(tag_in, tag_out, 4 * n);
        pair!(wrap_in, wrap_out, 16 * n);
        pair!(wact_in, wact_out, nw * n);
        pair!(whist_in, whist_out, 48 * nw * n);
        pair!(nn_in, nn_out, 4 * n);
        self.p.reference = self.alloc(d4)?;
        self.p.rec_f = self.alloc(d4)?;
        self.p.rec_t = self.alloc(d4)?;
        self.p.rec_c = self.alloc(16 * n)?;
        self.p.wrec = self.alloc(24 * nw * n)?;
        let cells = self.p.n_cells as usize + 1;
        self.p.cell_of = self.alloc(4 * n)?;
        self.p.cell_count = self.alloc(4 * cells)?;
        self.p.cell_start = self.alloc(4 * cells)?;
        self.p.order = self.alloc(4 * n)?;
        self.p.inv = self.alloc(4 * n)?;
        self.p.flags = self.alloc(4 * N_FLAGS)?;
        let rows = mix_rows(sim);
        self.p.mix = self.alloc(8 * rows.len())?;
        self.dev.upload(self.p.mix, &rows)?;
        let stats = (STATS_FIXED + 3 * self.n_walls) * self.n_stats_chunks as usize;
        self.p.stats_out = self.alloc(8 * stats)?;
        // prefix-sum levels over the cell counts
        let mut len = cells as u32;
        while len > 1 {
            let chunks = len.div_ceil(SCAN_CHUNK);
            let buf = self.alloc(4 * chunks as usize)?;
            self.scan_levels.push((buf, chunks));
            len = chunks;
        }
        Ok(())
    }

    /// The owned particles of `ps` to the `_in` arrays; reference positions = positions.
    fn upload_particles(&mut self, ps: &Particles) -> Result<()> {
        let n = self.n;
        let d4 = |f: &dyn Fn(usize) -> [f64; 4]| (0..n).map(f).collect::<Vec<_>>();
        let pos = d4(&|i| [ps.pos[i].x, ps.pos[i].y, ps.pos[i].z, ps.radius[i]]);
        let vel = d4(&|i| [ps.vel[i].x, ps.vel[i].y, ps.vel[i].z, ps.mass[i]]);
        let ang = d4(&|i| {
            let w = ps.angvel[i];
            [w.x, w.y, w.z, ps.inertia[i]]
        });
        let ori = d4(&|i| {
            let c = ps.ori[i].quaternion().coords;
            [c.x, c.y, c.z, c.w]
        });
        let info: Vec<u32> = (0..n)
            .map(|i| ps.material[i] as u32 | (ps.blocked[i] as u32) << 16)
            .collect();
        let tag: Vec<u32> = ps.tag[..n].iter().map(|&t| t as u32).collect();
        let wrap: Vec<[i32; 4]> = ps.wrap[..n].iter().map(|w| [w[0], w[1], w[2], 0]).collect();
        let p = self.p;
        self.dev.upload(p.pos_in, &pos)?;
        self.dev.upload(p.reference, &pos)?;
        self.dev.upload(p.vel_in, &vel)?;
        self.dev.upload(p.ang_in, &ang)?;
        self.dev.upload(p.ori_in, &ori)?;
        self.dev.upload(p.gid_in, &ps.gid[..n])?;
        self.dev.upload(p.info_in, &info)?;
        self.dev.upload(p.tag_in, &tag)?;
        self.dev.upload(p.wrap_in, &wrap)
    }

    fn flags(&mut self) -> Result<Vec<u32>> {
        self.dev.download::<u32>(self.p.flags, N_FLAGS)
    }

    fn reset_flags(&mut self) -> Result<()> {
        let mut f = [0u32; N_FLAGS];
        f[F_BAD] = u32::MAX;
        self.dev.upload(self.p.flags, &f)
    }

    /// A blow-up found by `k_prep`, as the CPU path words it (`Simulation::local_failure`).
    fn failure(&mut self, bits: u32, bad: u32) -> Error {
        let gid = self
            .dev
            .download::<u64>(self.p.gid_in + 8 * bad as u64, 1)
            .map(|g| g[0])
            .unwrap_or(u64::MAX);
        let what = if bits & E_NONFINITE != 0 {
            "has a non-finite state"
        } else if bits & E_MOVED != 0 {
            "moved more than the halo since the last neighbour rebuild: the time step is too \
             large or the particle was shot out"
        } else {
            "left the domain"
        };
        Error::Runtime(format!(
            "particle gid {gid} {what} at step {} (GPU)",
            self.step
        ))
    }

    /// Exclusive prefix sum in place of `len` counts at `data`: each level scans its chunks
    /// and hands their totals to the next; the totals, scanned, are added back deepest first.
    fn scan(&mut self, data: DevPtr, len: u32) -> Result<()> {
        let mut p = self.p;
        let levels = self.scan_levels.clone();
        let (mut d, mut l) = (data, len);
        let mut passes = Vec::with_capacity(levels.len());
        for &(sums, chunks) in &levels {
            (p.scan_data, p.scan_sums, p.scan_n) = (d, sums, l);
            self.dev.launch(Kernel::ScanLocal, chunks, &p)?;
            passes.push((d, sums, l, chunks));
            (d, l) = (sums, chunks);
        }
        for &(d, sums, l, chunks) in passes.iter().rev() {
            // a single chunk's exclusive total is 0: nothing to add
            if chunks > 1 {
                (p.scan_data, p.scan_sums, p.scan_n) = (d, sums, l);
                self.dev.launch(Kernel::ScanAdd, l, &p)?;
            }
        }
        Ok(())
    }

    /// Neighbour lists of capacity `cap` for the `_out` side (reallocated if smaller).
    fn ensure_out_lists(&mut self, cap: u32) -> Result<()> {
        if self.cap[1] >= cap && self.p.nbr_out != 0 {
            return Ok(());
        }
        let slots = cap as usize * self.n;
        for ptr in [self.p.nbr_out, self.p.meta_out, self.p.hist_out] {
            if ptr != 0 {
                self.dev.free(ptr);
            }
        }
        self.p.nbr_out = self.alloc(4 * slots)?;
        self.p.meta_out = self.alloc(slots)?;
        let comps = if self.p.store_phys != 0 { 10 } else { 6 };
        self.p.hist_out = self.alloc(8 * comps * slots)?;
        self.cap[1] = cap;
        Ok(())
    }

    fn swap_particles(&mut self) {
        let p = &mut self.p;
        std::mem::swap(&mut p.pos_in, &mut p.pos_out);
        std::mem::swap(&mut p.vel_in, &mut p.vel_out);
        std::mem::swap(&mut p.ang_in, &mut p.ang_out);
        std::mem::swap(&mut p.ori_in, &mut p.ori_out);
        std::mem::swap(&mut p.gid_in, &mut p.gid_out);
        std::mem::swap(&mut p.info_in, &mut p.info_out);
        std::mem::swap(&mut p.tag_in, &mut p.tag_out);
        std::mem::swap(&mut p.wrap_in, &mut p.wrap_out);
        std::mem::swap(&mut p.wact_in, &mut p.wact_out);
        std::mem::swap(&mut p.whist_in, &mut p.whist_out);
    }

    fn swap_lists(&mut self) {
        let p = &mut self.p;
        std::mem::swap(&mut p.nbr_in, &mut p.nbr_out);
        std::mem::swap(&mut p.meta_in, &mut p.meta_out);
        std::mem::swap(&mut p.nn_in, &mut p.nn_out);
        std::mem::swap(&mut p.hist_in, &mut p.hist_out);
        self.cap.swap(0, 1);
        p.cap_in = self.cap[0];
        p.cap_out = self.cap[1];
    }

    /// Wrap, check, sort the particles by cell (ties by gid), build the neighbour lists and
    /// carry the contact histories into them.
    fn rebuild(&mut self) -> Result<()> {
        let t = Instant::now();
        let n = self.n as u32;
        let cells = self.p.n_cells + 1;
        self.reset_flags()?;
        self.dev.zero(self.p.cell_count, 4 * cells as usize)?;
        self.dev.launch(Kernel::Prep, n, &self.p)?;
        let f = self.flags()?;
        if f[F_ERROR] != 0 {
            return Err(self.failure(f[F_ERROR], f[F_BAD]));
        }
        self.scan(self.p.cell_count, cells)?;
        // the counts became the starts; the other buffer is the fill cursor
        std::mem::swap(&mut self.p.cell_count, &mut self.p.cell_start);
        self.dev.zero(self.p.cell_count, 4 * cells as usize)?;
        self.dev.launch(Kernel::Scatter, n, &self.p)?;
        self.dev
            .launch(Kernel::SortCells, self.p.n_cells, &self.p)?;
        self.dev.launch(Kernel::Gather, n, &self.p)?;
        self.swap_particles();
        // neighbour lists, the capacity grown until every list fits
        let mut cap = self.cap[0].max(self.cap[1]).max(16);
        loop {
            self.ensure_out_lists(cap)?;
            self.p.cap_out = self.cap[1];
            self.p.cap_in = self.cap[0];
            self.dev.launch(Kernel::Build, n, &self.p)?;
            let f = self.flags()?;
            if f[F_MAXNBR] <= self.cap[1] {
                break;
            }
            cap = f[F_MAXNBR] + f[F_MAXNBR] / 4 + 2;
            self.reset_flags()?;
        }
        self.dev.launch(Kernel::Carry, n, &self.p)?;
        let f = self.flags()?;
        self.lost_contacts += f[F_LOST] as u64;
        self.swap_lists();
        self.reset_flags()?;
        self.need_rebuild = false;
        self.n_rebuilds += 1;
        self.timers.rebuild += t.elapsed();
        Ok(())
    }

    /// The contacts of `sim` (keys and histories) into the device's lists.
    fn import_contacts(&mut self, sim: &Simulation) -> Result<()> {
        let pick = |l: &crate::contact::store::PairList, walls: bool| {
            let mut v: Vec<((u64, u64), FrictState)> = (0..l.len())
                .filter(|&k| l.active[k] && (!walls || (l.j[k] as usize) < self.n_walls))
                .map(|k| (l.key[k], l.state[k]))
                .collect();
            v.sort_by_key(|c| c.0);
            v.dedup_by_key(|c| c.0);
            v
        };
        let pairs = pick(&sim.pairs, false);
        let walls = pick(&sim.wall_pairs, true);
        let upload = |dev: &mut Box<dyn Device>, v: &[((u64, u64), FrictState)]| {
            let a: Vec<u64> = v.iter().map(|c| c.0 .0).collect();
            let b: Vec<u64> = v.iter().map(|c| c.0 .1).collect();
            let s: Vec<f64> = v
                .iter()
                .flat_map(|c| {
                    let (f, no) = (c.1.fs, c.1.n_old);
                    let ph = c.1.phys;
                    [
                        f.x, f.y, f.z, no.x, no.y, no.z, ph.kn, ph.ks, ph.tan_phi, ph.cn,
                    ]
                })
                .collect();
            let pa = dev.alloc(8 * a.len().max(1))?;
            let pb = dev.alloc(8 * b.len().max(1))?;
            let ps = dev.alloc(8 * s.len().max(1))?;
            dev.upload(pa, &a)?;
            dev.upload(pb, &b)?;
            dev.upload(ps, &s)?;
            Ok::<_, Error>((pa, pb, ps))
        };
        let (a, b, s) = upload(&mut self.dev, &pairs)?;
        let (wa, wb, ws) = upload(&mut self.dev, &walls)?;
        let mut p = self.p;
        (p.xkey_a, p.xkey_b, p.xstate, p.n_keys) = (a, b, s, pairs.len() as u32);
        (p.xwkey_a, p.xwkey_b, p.xwstate, p.n_wkeys) = (wa, wb, ws, walls.len() as u32);
        self.dev.launch(Kernel::Import, self.n as u32, &p)?;
        for ptr in [a, b, s, wa, wb, ws] {
            self.dev.free(ptr);
        }
        Ok(())
    }

    /// The walls at their current pose into the kernels' parameters.
    fn set_walls(&mut self) {
        for (k, w) in self.walls.iter().enumerate() {
            self.p.walls[k] = DemWall {
                p: [w.point.x, w.point.y, w.point.z],
                n: {
                    let n = w.plane_normal().unwrap_or_default();
                    [n.x, n.y, n.z]
                },
                v: [w.vel.x, w.vel.y, w.vel.z],
                mat: w.material as u32,
                pad: 0,
            };
        }
    }

    /// One time step: a rebuild first if the last step asked for one. `record`: store the
    /// forces that [`Self::stats`] reads.
    pub fn advance(&mut self, record: bool) -> Result<()> {
        if self.need_rebuild {
            self.rebuild()?;
        }
        let t = Instant::now();
        self.p.record = record as u32;
        self.dev.launch(Kernel::Step, self.n as u32, &self.p)?;
        let p = &mut self.p;
        std::mem::swap(&mut p.pos_in, &mut p.pos_out);
        std::mem::swap(&mut p.vel_in, &mut p.vel_out);
        std::mem::swap(&mut p.ang_in, &mut p.ang_out);
        // the Verlet trigger's answer (and the step's end: the one synchronisation)
        let f = self.flags()?;
        self.need_rebuild = f[F_REBUILD] != 0;
        for w in &mut self.walls {
            w.point += w.vel * self.p.dt;
        }
        self.set_walls();
        self.step += 1;
        self.time += self.p.dt;
        self.timers.step += t.elapsed();
        Ok(())
    }

    /// The series row's statistics of the last step (which must have recorded its forces),
    /// as [`Simulation::stats`] defines them; sums over chunks of particles in a fixed order
    /// (the same bits run to run, not the CPU path's: its sums are exact).
    pub fn stats(&mut self) -> Result<Stats> {
        let t = Instant::now();
        self.dev
            .launch(Kernel::Stats, self.n_stats_chunks, &self.p)?;
        let width = STATS_FIXED + 3 * self.n_walls;
        let v = self
            .dev
            .download::<f64>(self.p.stats_out, width * self.n_stats_chunks as usize)?;
        let mut sums = vec![ExactSum::new(); width];
        let mut max_ov: f64 = 0.0;
        for chunk in v.chunks_exact(width) {
            for (k, x) in chunk.iter().enumerate() {
                match k {
                    6 => max_ov = max_ov.max(*x),
                    _ => sums[k].add(*x),
                }
            }
        }
        let s: Vec<f64> = sums.iter().map(|x| x.value()).collect();
        let (n_free, n_contacts) = (s[3] as usize, s[5] as usize);
        self.timers.output += t.elapsed();
        Ok(Stats {
            ke_trans: s[0],
            ke_rot: s[1],
            n_contacts,
            unbalanced: crate::sim::unbalanced_force(s[2], n_free, s[4], n_contacts),
            max_overlap_rel: max_ov,
            wall_force: (0..self.n_walls)
                .map(|w| {
                    let a = STATS_FIXED + 3 * w;
                    V3::new(s[a], s[a + 1], s[a + 2])
                })
                .collect(),
            n_particles: self.n as u64,
            ..Stats::default()
        })
    }

    /// The device's contacts: (keys, histories) of the sphere pairs and of the wall pairs.
    #[allow(clippy::type_complexity)]
    fn export_contacts(
        &mut self,
    ) -> Result<(
        Vec<((u64, u64), ContactState)>,
        Vec<((u64, u64), ContactState)>,
    )> {
        self.reset_flags()?;
        self.dev
            .launch(Kernel::ExportCount, self.n as u32, &self.p)?;
        let f = self.flags()?;
        let (np, nw) = (f[F_COUNT] as usize, f[F_WCOUNT] as usize);
        let mut p = self.p;
        p.xkey_a = self.alloc(8 * np.max(1))?;
        p.xkey_b = self.alloc(8 * np.max(1))?;
        p.xstate = self.alloc(80 * np.max(1))?;
        p.xwkey_a = self.alloc(8 * nw.max(1))?;
        p.xwkey_b = self.alloc(8 * nw.max(1))?;
        p.xwstate = self.alloc(80 * nw.max(1))?;
        self.reset_flags()?;
        self.dev.launch(Kernel::Export, self.n as u32, &p)?;
        let mut read = |ka: DevPtr, kb: DevPtr, st: DevPtr, len: usize| -> Result<_> {
            let a = self.dev.download::<u64>(ka, len)?;
            let b = self.dev.download::<u64>(kb, len)?;
            let s = self.dev.download::<f64>(st, 10 * len)?;
            let mut v: Vec<((u64, u64), ContactState)> = (0..len)
                .map(|k| {
                    let x = &s[10 * k..10 * k + 10];
                    let frict = FrictState {
                        fs: V3::new(x[0], x[1], x[2]),
                        n_old: V3::new(x[3], x[4], x[5]),
                        phys: FrictPhys {
                            kn: x[6],
                            ks: x[7],
                            tan_phi: x[8],
                            cn: x[9],
                        },
                    };
                    let st = ContactState {
                        frict,
                        ..Default::default()
                    };
                    ((a[k], b[k]), st)
                })
                .collect();
            // the atomics' order leaves no trace
            v.sort_by_key(|c| c.0);
            for ptr in [ka, kb, st] {
                self.dev.free(ptr);
            }
            Ok(v)
        };
        let pairs = read(p.xkey_a, p.xkey_b, p.xstate, np)?;
        let walls = read(p.xwkey_a, p.xwkey_b, p.xwstate, nw)?;
        self.reset_flags()?;
        Ok((pairs, walls))
    }

    /// The device's state into `sim` (as a checkpoint restores it): particles, contacts,
    /// walls, step and time, so that the CPU path's writers (snapshots, checkpoints) and
    /// steps can take it from here. The forces of the last recorded step come along.
    pub fn sync_host(&mut self, sim: &mut Simulation) -> Result<()> {
        let t = Instant::now();
        let n = self.n;
        let p = self.p;
        let pos = self.dev.download::<[f64; 4]>(p.pos_in, n)?;
        let vel = self.dev.download::<[f64; 4]>(p.vel_in, n)?;
        let ang = self.dev.download::<[f64; 4]>(p.ang_in, n)?;
        let ori = self.dev.download::<[f64; 4]>(p.ori_in, n)?;
        let gid = self.dev.download::<u64>(p.gid_in, n)?;
        let info = self.dev.download::<u32>(p.info_in, n)?;
        let tag = self.dev.download::<u32>(p.tag_in, n)?;
        let wrap = self.dev.download::<[i32; 4]>(p.wrap_in, n)?;
        let force = self.dev.download::<[f64; 4]>(p.rec_f, n)?;
        let mut ps = Particles::default();
        for i in 0..n {
            let v3 = |a: [f64; 4]| V3::new(a[0], a[1], a[2]);
            let q = nalgebra::Quaternion::new(ori[i][3], ori[i][0], ori[i][1], ori[i][2]);
            ps.push_owned(&Particle {
                gid: gid[i],
                pos: v3(pos[i]),
                vel: v3(vel[i]),
                angvel: v3(ang[i]),
                ori: Quat::new_unchecked(q),
                radius: pos[i][3],
                mass: vel[i][3],
                inertia: ang[i][3],
                material: (info[i] & 0xffff) as u16,
                blocked: (info[i] >> 16) as u8,
                image: [0; 3],
                wrap: [wrap[i][0], wrap[i][1], wrap[i][2]],
                tag: tag[i] as u16,
            });
            ps.force[i] = v3(force[i]);
        }
        let (contacts, wall_contacts) = self.export_contacts()?;
        let reference = ps.pos.clone();
        let r = Restored {
            step: self.step,
            time: self.time,
            need_rebuild: false,
            n_rebuilds: self.n_rebuilds,
            wall_point: self.walls.iter().map(|w| w.point).collect(),
            wall_vel: self.walls.iter().map(|w| w.vel).collect(),
            wall_ref: self.walls.iter().map(|w| w.point).collect(),
            particles: ps,
            reference,
            contacts,
            wall_contacts,
            leading: Vec::new(),
            engines: sim.engine_state(),
        };
        sim.restore(r)?;
        self.timers.output += t.elapsed();
        Ok(())
    }

    /// What runs the kernels.
    pub fn device_name(&self) -> String {
        self.dev.name()
    }

    /// Neighbour slots per particle now.
    pub fn capacity(&self) -> u32 {
        self.cap[0]
    }
}

/// The materials a GPU scene may have: the frictional ones.
pub fn material_supported(m: &Material) -> bool {
    !matches!(m, Material::Cpm(_))
}
