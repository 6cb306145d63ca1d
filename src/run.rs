//! The run driver: steps a [`Simulation`] to the requested step, writing the time series,
//! snapshots, progress lines and the final timing report (`timing.json`).

use crate::error::{Error, Result};
use crate::io::checkpoint;
use crate::io::series::{Series, StrainSeries};
use crate::io::snapshot::SnapshotWriter;
use crate::scene::Scene;
use crate::signals;
use crate::sim::Simulation;
use crate::V3;
use log::{error, info, warn};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Step number at which to stop (default: the scene's).
    pub steps: Option<u64>,
    /// Output directory (default `output/<scene name>/`; main.rs gives a restart the one
    /// holding its checkpoint, [`restart_out_dir`]).
    pub out: Option<PathBuf>,
    /// Run on the MPI world (`mpirun`), not as a plain single process.
    pub mpi: bool,
    /// Rank grid forced by the user (default: chosen from the scene's extents).
    pub grid: Option<[usize; 3]>,
    /// Continue from this checkpoint (the scene must be the one stored in it, or compatible).
    pub restart: Option<PathBuf>,
    /// Run the step on this device (`--gpu`, issue 34): the GPU step (`crate::gpu`) steps
    /// the particles, the CPU `Simulation` writes the outputs from its copies.
    pub gpu: Option<crate::gpu::Target>,
    /// When the set-up began (before the scene was read; `None`: when [`run`] is entered), for
    /// the whole set-up's time in `timing.json` (`setup_total_s`).
    pub started: Option<Instant>,
}

/// What a finished run reports.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub out_dir: PathBuf,
    /// What ran the step: "cpu", or the GPU's name (`--gpu`).
    pub device: String,
    pub steps_done: u64,
    /// The step number the run ended at (counted from step 0 of the scene).
    pub last_step: u64,
    /// Wall-clock time of the step loop (from the first step to the final snapshot): the
    /// set-up is apart (`setup_s`), as in LAMMPS' "Loop time".
    pub wall_s: f64,
    /// Σ over the steps of the particles each step advanced (the count changes with inlets
    /// and outlets), and that over `wall_s`.
    pub particle_steps: u64,
    pub particle_steps_per_s: f64,
    /// Building the neighbour structures before the first step ([`Simulation::prepare`]).
    pub setup_s: f64,
    /// The whole set-up, from reading the scene (or [`RunOptions::started`]) to the first
    /// step: generating or reading the particles, balancing, the first neighbour build (max
    /// over ranks).
    pub setup_total_s: f64,
    /// CPU time (user + system) of a rank's process up to the end of the set-up, max over
    /// ranks: the set-up's work per rank, which oversubscribed ranks' wall time does not show.
    pub setup_cpu_s: f64,
    /// Peak resident memory of a rank at the end of the set-up [MB = 10⁶ bytes], (min, max)
    /// over ranks: the high-water mark of the whole process so far (`getrusage`), so a
    /// transient O(N) buffer of the set-up shows in it.
    pub setup_rss_mb: [f64; 2],
    /// The run stopped early on this signal, after writing this checkpoint.
    pub stopped: Option<(i32, PathBuf)>,
    /// The last checkpoint written by this run.
    pub checkpoint: Option<PathBuf>,
    /// Checkpoint I/O of this run (rank 0's view; the writes are collective).
    pub io: CheckpointIo,
}

/// Checkpoint I/O figures of a run, for `timing.json` and `bench/checkpoint.sh`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckpointIo {
    pub writes: u64,
    pub write_s: f64,
    pub write_bytes: u64,
    /// Restart: reading the file and rebuilding the state from it.
    pub read_s: f64,
    pub read_bytes: u64,
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        "?".into()
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// Per-phase seconds over ranks: (min, avg, max).
pub struct PhaseStats {
    pub name: &'static str,
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

impl PhaseStats {
    /// Load imbalance as LAMMPS prints it: (max − avg) / avg.
    pub fn imbalance_pct(&self) -> f64 {
        if self.avg > 0.0 {
            100.0 * (self.max - self.avg) / self.avg
        } else {
            0.0
        }
    }
}

/// Min/avg/max of each phase's time over ranks (collective).
fn phase_stats(sim: &Simulation) -> Vec<PhaseStats> {
    let t = &sim.timers;
    let names = ["collide", "contact", "integrate", "comm", "output"];
    let local = [t.collide, t.contact, t.integrate, t.comm, t.output].map(|d| d.as_secs_f64());
    let mut sum = local;
    sim.comm.sum_f64s(&mut sum);
    let n = sim.comm.size() as f64;
    names
        .iter()
        .zip(local.iter().zip(&sum))
        .map(|(&name, (&l, &s))| PhaseStats {
            name,
            min: sim.comm.min_f64(l),
            avg: s / n,
            max: sim.comm.max_f64(l),
        })
        .collect()
}

/// `rel` joined under `dir`, refused (bad input) unless it is relative and every component is
/// a plain name (`.` aside): no root, no `..`, not empty. Every path the run writes is the
/// output directory (`--out`, else `output/<name>`) joined with such a name: the scene's
/// `name`, its `checkpoint.dir` (both validated at parse, scene/; this guards the driver should
/// one ever reach it unvalidated) and fixed file names (`series.csv`, `strainer.csv`,
/// `specimen.txt`, `timing.json`, `snapshots/`, `snapshots.xmf`, `ckpt_<step>.h5`, `latest`,
/// `failed_<step>.h5`) — so outputs never land outside the output directory. Only `--out`
/// itself is taken as given.
pub fn join_under(dir: &Path, what: &str, rel: &str) -> Result<PathBuf> {
    use std::path::Component::{CurDir, Normal};
    let p = Path::new(rel);
    let plain = p.components().all(|c| matches!(c, Normal(_) | CurDir));
    if !plain || !p.components().any(|c| matches!(c, Normal(_))) {
        return Err(Error::Input(format!(
            "{what} `{rel}` must be a relative name inside {} (no `..`, not absolute)",
            dir.display()
        )));
    }
    Ok(dir.join(p))
}

/// Check, before the set-up (which may take minutes), that the output directory can be
/// created and written: rank 0 creates it and a probe file, then removes the probe and the
/// directories it created (bad input found later in the set-up, such as an impossible rank
/// grid, must still leave nothing behind), and every rank learns the verdict (collective, over
/// the world communicator: the run's does not exist yet). Rank 0 alone writes the CSV files and
/// renames the HDF5 files, so its view decides. A failure is an I/O failure (exit 1), reported
/// by rank 0 as `DIR: cannot write the output directory: <OS error>`; the other ranks stop
/// with it.
pub fn check_out_dir(dir: &Path) -> Result<()> {
    use crate::domain::comm::Comm;
    let rank = Comm::world_rank();
    let probe = || -> std::io::Result<()> {
        // the missing directories, innermost first
        let missing: Vec<&Path> = (dir.ancestors())
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .collect();
        std::fs::create_dir_all(dir)?;
        let p = dir.join(format!(".demhpc-write-test-{}", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"demhpc\n"));
        let removed = match written {
            Ok(()) => std::fs::remove_file(&p),
            Err(_) => Ok(()),
        };
        for d in missing {
            std::fs::remove_dir(d).ok();
        }
        written.and(removed)
    };
    let failed = match rank {
        0 => probe().err(),
        _ => None,
    };
    if Comm::world_any(failed.is_some()) {
        return Err(match failed {
            Some(e) => Error::io(dir, format!("cannot write the output directory: {e}")),
            None => Error::Peer { rank, step: 0 },
        });
    }
    Ok(())
}

/// The lock file of an output directory (`OUT/.demhpc.lock`): `pid host` of the run holding it.
pub const LOCK_FILE: &str = ".demhpc.lock";

/// The output directory's lock, held for the run ([`lock_out_dir`]): rank 0 holds an advisory
/// lock (`flock`) on `OUT/.demhpc.lock`, which the kernel releases when the file is closed or
/// the process ends, however it ends. Until [`OutLock::keep`] (the run created its outputs),
/// dropping it removes the lock file and the directories it created, so that a run refused in
/// its set-up leaves nothing behind.
pub struct OutLock {
    file: Option<std::fs::File>,
    path: PathBuf,
    /// Directories created for the lock, innermost first.
    created: Vec<PathBuf>,
    kept: bool,
}

impl OutLock {
    /// The run's outputs exist: the lock file stays after the run.
    pub fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        let Some(f) = self.file.take() else {
            return;
        };
        if !self.kept {
            // removed while still locked: a run waiting on this file finds it unlinked and
            // takes a fresh one (`lock_out_dir`'s inode check)
            std::fs::remove_file(&self.path).ok();
            for d in &self.created {
                std::fs::remove_dir(d).ok();
            }
        }
        drop(f);
    }
}

/// Rank 0's attempt at the lock: `Ok(None)` where the file system cannot lock (warned: a
/// concurrent run is then not detected), `Err(holder)` with the holder's `pid host` when
/// another process holds it.
fn take_lock(dir: &Path) -> std::io::Result<std::result::Result<OutLock, String>> {
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    let created: Vec<PathBuf> = (dir.ancestors())
        .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir)?;
    let path = dir.join(LOCK_FILE);
    loop {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(e);
            }
            let mut holder = String::new();
            f.read_to_string(&mut holder).ok();
            return Ok(Err(holder));
        }
        // the file may have been unlinked by its last holder between our open and our lock:
        // then the lock is on a file nobody else will see; take the one at the path
        let same = std::fs::metadata(&path)
            .and_then(|m| {
                f.metadata()
                    .map(|g| m.ino() == g.ino() && m.dev() == g.dev())
            })
            .unwrap_or(false);
        if !same {
            continue;
        }
        let host = host_name();
        f.set_len(0)?;
        f.rewind()?;
        f.write_all(format!("{} {host}\n", std::process::id()).as_bytes())?;
        f.flush()?;
        return Ok(Ok(OutLock {
            file: Some(f),
            path,
            created,
            kept: false,
        }));
    }
}

/// This machine's host name (`gethostname`), or `?`.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer it is given.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match r {
        0 => String::from_utf8_lossy(&buf[..n]).into_owned(),
        _ => "?".into(),
    }
}

/// Lock the output directory for this run (collective over the world, before the set-up):
/// two runs writing into one directory — a Slurm requeue started while the old job still
/// writes, the same command started twice — truncated each other's `series.csv` and deleted
/// each other's files. Rank 0 takes an advisory lock on `OUT/.demhpc.lock` (`flock`, held
/// until the run ends; the file says `pid host`); when another process holds it every rank
/// stops with `OUT is in use by process P on host H` (exit 1) before touching anything. A file
/// system without locks (some NFS or Lustre mounts) is warned about and the run goes on.
pub fn lock_out_dir(dir: &Path) -> Result<Option<OutLock>> {
    use crate::domain::comm::Comm;
    let rank = Comm::world_rank();
    let mut lock = None;
    let mut failed = None;
    if rank == 0 {
        match take_lock(dir) {
            Ok(Ok(l)) => lock = Some(l),
            Ok(Err(holder)) => {
                let mut w = holder.split_whitespace();
                let (pid, host) = (w.next().unwrap_or("?"), w.next().unwrap_or("?"));
                failed = Some(Error::Runtime(format!(
                    "{} is in use by process {pid} on host {host} (it holds {}): another run \
                     writes there; wait for it to end, or give this run another --out",
                    dir.display(),
                    dir.join(LOCK_FILE).display()
                )));
            }
            Err(e) => warn!(
                "cannot lock the output directory {} ({e}): a second run started into it \
                 would not be detected",
                dir.display()
            ),
        }
    }
    if Comm::world_any(failed.is_some()) {
        return Err(failed.unwrap_or(Error::Peer { rank, step: 0 }));
    }
    Ok(lock)
}

/// The output directory a restart from `checkpoint` continues in when no `--out` is given: the
/// one holding it, `OUT` for `OUT/<ck_dir>/ckpt_*.h5` with `ck_dir` one of the scene's
/// `checkpoint.dir`s given (the stored scene's, which wrote it, and the one now used), so that
/// `series.csv`, the snapshots and the checkpoints continue where they were. `None` when the
/// file is not in such a layout (copied elsewhere). The path is taken lexically (joined to the
/// working directory only when it is too short to hold `ck_dir`), not resolved, so a symbolic
/// link such as `OUT/checkpoints → /scratch/…` keeps the run in `OUT`.
pub fn restart_out_dir(checkpoint: &Path, ck_dirs: &[&str]) -> Option<PathBuf> {
    use std::path::Component::{CurDir, Normal};
    let parent: PathBuf = (checkpoint.parent()?.components())
        .filter(|c| *c != CurDir)
        .collect();
    let strip = |parent: &Path| {
        ck_dirs.iter().find_map(|d| {
            let d: PathBuf = (Path::new(d).components())
                .filter(|c| matches!(c, Normal(_)))
                .collect();
            let n = d.components().count();
            // `ends_with` compares whole components: `OUT/checkpoints` ends with
            // `checkpoints`, `OUT/old_checkpoints` does not.
            if n == 0 || !parent.ends_with(&d) {
                return None;
            }
            let out = parent.ancestors().nth(n)?;
            Some(match out.as_os_str().is_empty() {
                true => PathBuf::from("."),
                false => out.to_path_buf(),
            })
        })
    };
    strip(&parent).or_else(|| strip(&std::env::current_dir().ok()?.join(&parent)))
}

/// Run a validated scene (every rank calls it; rank 0 writes the series, the snapshot files
/// and `timing.json`). The output directory is checked first ([`check_out_dir`]), before the
/// set-up.
pub fn run(scene: Scene, opts: &RunOptions) -> Result<RunSummary> {
    let started = opts.started.unwrap_or_else(Instant::now);
    let out_dir = match &opts.out {
        Some(d) => d.clone(),
        None => join_under(Path::new("output"), "scene name", &scene.name)?,
    };
    let ck = scene.checkpoint.clone();
    let ck_dir = join_under(&out_dir, "checkpoint.dir", &ck.dir)?;
    check_out_dir(&out_dir)?;
    // held until this function returns: no other run writes into `out_dir` meanwhile
    let mut lock = lock_out_dir(&out_dir)?;
    // the GPU first (driver, NVRTC, the kernels compiled): a machine without one stops here
    let mut device = opts.gpu.map(crate::gpu::open).transpose()?;
    let end = opts.steps.unwrap_or(scene.steps);
    // the scene's own run length (`run`), not a segment of it chosen with --steps
    let scene_end = end == scene.steps;
    let output = scene.output.clone();
    let strain_every = scene.strainer.as_ref().map_or(0, |s| s.every);
    // The scene's path made absolute: a restart resolves the scene's data files relative to
    // it, from whatever directory the restart is started in.
    let scene_path = std::fs::canonicalize(&scene.file).unwrap_or_else(|_| scene.file.clone());
    let (scene_text, scene_file) = (scene.text.clone(), scene_path.display().to_string());
    // A generated CPM specimen is saved (`x y z r`, readable by `TextFile`) so that other runs
    // can start from it: written by all ranks from their own spheres once they exist.
    let specimen = opts.restart.is_none() && scene.interaction_radius.is_some();
    let mut io = CheckpointIo::default();
    let t_read = Instant::now();
    let mut sim = match &opts.restart {
        Some(path) => restart(scene, opts, path)?,
        None if opts.mpi => Simulation::new_mpi(scene, opts.grid)?,
        None => Simulation::new(scene)?,
    };
    if let Some(path) = &opts.restart {
        io.read_s = t_read.elapsed().as_secs_f64();
        io.read_bytes = file_len(path);
    }
    let root = sim.comm.is_root();
    if root && sim.step >= end {
        warn!(
            "the run is already at step {} ≥ the last step {end}: nothing to do (give --steps)",
            sim.step
        );
    }
    // Rank 0 creates the output files; a failure there is agreed by every rank (exit 1 on
    // all, no rank left stepping alone).
    let made = match root {
        true => std::fs::create_dir_all(&ck_dir).map_err(|e| Error::io(&ck_dir, e)),
        false => Ok(()),
    };
    sim.comm.agree(made)?;
    if let Some(l) = lock.as_mut() {
        l.keep();
    }
    let series_path = out_dir.join("series.csv");
    let n_walls = sim.walls.len();
    let n_meshes = sim.meshes.meshes.len();
    let outlets = sim
        .engines
        .get::<crate::engines::Flow>()
        .map(|f| f.columns());
    let outlets = outlets.as_deref();
    let more = crate::io::series::Extra {
        cell: sim.engines.has::<crate::engines::cell::CellEngine>(),
        servo: sim.engines.has::<crate::engines::servo_wall::ServoWalls>(),
        energy: sim.engines.has::<crate::engines::energy::EnergyBook>(),
        stage: sim.engines.has::<crate::engines::protocol::Protocol>(),
    };
    let series = match (root, opts.restart.is_some()) {
        (true, false) => Series::create(&series_path, n_walls, n_meshes, outlets, more).map(Some),
        (true, true) => {
            Series::resume(&series_path, n_walls, n_meshes, outlets, more, sim.step).map(Some)
        }
        (false, _) => Ok(None),
    };
    let mut series = sim.comm.agree(series)?;
    let strain_csv = match (
        sim.engines
            .get::<crate::engines::strainer::UniaxialStrainer>(),
        root,
    ) {
        (Some(_), true) => StrainSeries::open(
            &out_dir.join("strainer.csv"),
            opts.restart.as_ref().map(|_| sim.step),
        )
        .map(Some),
        _ => Ok(None),
    };
    let mut strain_csv = sim.comm.agree(strain_csv)?;
    if specimen {
        write_specimen(&sim, &out_dir.join("specimen.txt"))?;
    }
    let snaps = match opts.restart {
        Some(_) => SnapshotWriter::resume(&out_dir, root, sim.step),
        None => SnapshotWriter::new(&out_dir, root),
    }
    .map(|w| w.with_contacts(output.contacts));
    let mut snaps = sim.comm.agree(snaps)?;
    let save = |sim: &Simulation| -> Result<PathBuf> {
        write_checkpoint(sim, &ck_dir, ck.keep as usize, &scene_text, &scene_file)
    };
    let fault = FaultHook::from_env();
    let mut last_checkpoint: Option<PathBuf> = None;
    let mut last_ckpt_time = Instant::now();
    let n = sim.n_global();
    if root {
        let d = sim.dec.dims;
        info!(
            "{}: {} particles, {} walls, dt = {:.4e} s, skin = {:.3e} m, steps {} → {}, {} rank(s) \
             (grid {}×{}×{}) × {} thread(s){}",
            sim.name,
            n,
            sim.walls.len(),
            sim.dt,
            sim.skin,
            sim.step,
            end,
            sim.comm.size(),
            d[0],
            d[1],
            d[2],
            rayon::current_num_threads(),
            if sim.reproducible { ", reproducible" } else { "" }
        );
    }
    let mut start = Instant::now();
    let mut setup_s = 0.0;
    let (mut setup_total_s, mut setup_cpu_s, mut setup_rss_mb) = (0.0, 0.0, [0.0; 2]);
    let first = sim.step;
    let mut last_progress = Instant::now();
    let mut stopped = None;
    // particles present at each step, summed (inlets and outlets change the count)
    let mut particle_steps: u64 = 0;
    let every = output.series_every;
    let mut gpu: Option<crate::gpu::GpuStep> = None;
    // the step whose GPU state the CPU copy holds (snapshots and checkpoints read it)
    let mut synced = sim.step;
    let series_due = |step: u64| every > 0 && (step.is_multiple_of(every) || step == end);
    let snap_every = output.snapshot_every;
    // periodic snapshots, and the final one (the loop's end, or its last step)
    let snapshot_due =
        |step: u64| step == end || (snap_every > 0 && step.is_multiple_of(snap_every));
    let result = (|| -> Result<()> {
        // the first neighbour build is set-up, timed apart (a failure in it is reported like
        // one in a step: it is a rebuild)
        if sim.step < end {
            let t = match device.take() {
                None => sim.prepare()?,
                Some(dev) => {
                    // the device builds its own lists: the CPU path's first build is skipped
                    let t = Instant::now();
                    let g = crate::gpu::GpuStep::new(&sim, dev)?;
                    info!("GPU step on {}", g.device_name());
                    gpu = Some(g);
                    t.elapsed().as_secs_f64()
                }
            };
            setup_s = sim.comm.max_f64(t);
            // the initial state (LIGGGHTS' dump at step 0) with periodic snapshots, part of
            // the set-up's time; its forces are NaN (no step has computed any)
            if sim.step == 0 && snap_every > 0 {
                snaps.write(&sim)?;
            }
            start = Instant::now();
        }
        setup_total_s = sim.comm.max_f64(started.elapsed().as_secs_f64());
        let rss = crate::usage::peak_rss_mb();
        setup_rss_mb = [sim.comm.min_f64(rss), sim.comm.max_f64(rss)];
        setup_cpu_s = sim.comm.max_f64(crate::usage::cpu_seconds());
        if root {
            info!(
                "set-up: {setup_total_s:.3} s ({setup_cpu_s:.3} s CPU on the busiest rank), \
                 peak memory per rank {:.1} to {:.1} MB",
                setup_rss_mb[0], setup_rss_mb[1]
            );
        }
        while sim.step < end {
            // Forces are read by the series rows, the strainer's rows and the snapshots only.
            let next = sim.step + 1;
            sim.record_forces = strain_every > 0
                || series_due(next)
                || snapshot_due(next)
                || (every > 0 && sim.may_finish_next());
            sim.stop_requested = signals::requested().is_some();
            sim.checkpoint_requested = root
                && ck.wall_seconds > 0.0
                && last_ckpt_time.elapsed().as_secs_f64() >= ck.wall_seconds;
            match gpu.as_mut() {
                None => sim.step()?,
                Some(g) => {
                    g.advance(sim.record_forces)?;
                    (sim.step, sim.time) = (g.step, g.time);
                    // one rank: the requests are the agreement
                    sim.stop_agreed = sim.stop_requested;
                    sim.checkpoint_agreed = sim.checkpoint_requested;
                }
            }
            particle_steps += sim.n_present();
            let t0 = Instant::now();
            if let Some(f) = &fault {
                f.apply(sim.step, sim.comm.rank());
            }
            let finished = sim.finished();
            // (a protocol that ends before the run length ends with its row too: its last
            // stage's steps that may end it record their forces)
            if series_due(sim.step) || (finished && every > 0 && sim.slots.recorded()) {
                let st = match gpu.as_mut() {
                    None => {
                        sim.check()?;
                        sim.stats()
                    }
                    Some(g) => g.stats()?,
                };
                let row = match series.as_mut() {
                    Some(s) => s.row(sim.step, sim.time, sim.dt, &st),
                    None => Ok(()),
                };
                sim.comm.agree(row)?;
            }
            // periodic snapshots, and a protocol stage's at its end (the run's last step
            // has its own, after the loop)
            let (stage_snap, stage_ckpt) = sim.stage_outputs();
            let periodic_snap = snap_every > 0 && sim.step % snap_every == 0;
            if (periodic_snap || stage_snap) && sim.step != end && !finished {
                sync_gpu(&mut gpu, &mut sim, &mut synced)?;
                snaps.write(&sim)?;
            }
            if strain_every > 0 && (sim.step % strain_every == 0 || sim.step == end || finished) {
                let row = strain_row(&sim);
                let written = match strain_csv.as_mut() {
                    Some(c) => c.row(&row),
                    None => Ok(()),
                };
                sim.comm.agree(written)?;
            }
            let periodic = ck.every > 0 && sim.step % ck.every == 0;
            let at_end = ck.at_end && (sim.step == end || finished);
            if periodic || at_end || stage_ckpt || sim.checkpoint_agreed || sim.stop_agreed {
                sim.comm.agree(flush(&mut series, &mut strain_csv))?;
                sync_gpu(&mut gpu, &mut sim, &mut synced)?;
                let t_write = Instant::now();
                let p = save(&sim)?;
                io.writes += 1;
                io.write_s += t_write.elapsed().as_secs_f64();
                io.write_bytes += file_len(&p);
                last_checkpoint = Some(p);
                last_ckpt_time = Instant::now();
            }
            if finished {
                if root
                    && sim
                        .engines
                        .has::<crate::engines::strainer::UniaxialStrainer>()
                {
                    info!(
                        "strainer: stress fell below the stop fraction of the peak at step {}",
                        sim.step
                    );
                } else if root && protocol_done(&sim) {
                    info!(
                        "protocol: the last stage ended at step {}, before the run length \
                         ({end}): the run ends",
                        sim.step
                    );
                } else if root {
                    info!("cell: the last stage ended at step {}", sim.step);
                }
                break;
            }
            // A stop agreed on the last step is a normal end (final snapshot, no "stopped").
            if sim.stop_agreed && sim.step < end {
                let sig = signals::requested().unwrap_or(libc::SIGTERM);
                stopped = last_checkpoint.clone().map(|p| (sig, p));
                break;
            }
            if root && last_progress.elapsed().as_secs_f64() >= output.progress_s {
                last_progress = Instant::now();
                let el = start.elapsed().as_secs_f64();
                let done = sim.step - first;
                let rate = particle_steps as f64 / el;
                let eta = (end - sim.step) as f64 * el / done as f64;
                info!(
                    "step {}/{} ({:.1} %)  t = {:.6e} s  {} particles  {:.3e} particle-steps/s  \
                     ETA {}",
                    sim.step,
                    end,
                    100.0 * sim.step as f64 / end as f64,
                    sim.time,
                    sim.n_present(),
                    rate,
                    fmt_secs(eta)
                );
            }
            sim.timers.output += t0.elapsed();
        }
        Ok(())
    })();
    if let Err(e) = result {
        // Keep what there is: the state at a blow-up goes to a snapshot before we stop. Blow-ups
        // (`Runtime`, `Peer`) are agreed on by all ranks, so the collective write can run. An
        // I/O failure (agreed too, `Agreed`) writes nothing more: the disk that failed would
        // most likely fail again.
        if let Some(s) = series.as_mut() {
            s.flush().ok();
        }
        let all_here = matches!(e, Error::Runtime(_) | Error::Peer { .. });
        if all_here && gpu.is_some() {
            // the state the device reached, for the failure snapshot (best effort)
            if let Err(w) = sync_gpu(&mut gpu, &mut sim, &mut synced) {
                error!("reading the GPU's state back failed too: {w}");
            }
        }
        if all_here {
            match snaps.write(&sim) {
                Ok(Some(p)) => error!("state at step {} written to {}", sim.step, p.display()),
                Ok(None) => {}
                Err(w) => error!("writing the failure snapshot failed too: {w}"),
            }
        }
        // A blow-up is detected by all ranks together: they can write a checkpoint of the
        // failed state for post-mortem (`latest` keeps pointing at the last good one).
        if matches!(e, Error::Runtime(_) | Error::Peer { .. }) {
            let p = ck_dir.join(format!("failed_{:010}.h5", sim.step));
            match checkpoint::write(
                &sim.checkpoint_state(),
                &sim.comm,
                &scene_text,
                &scene_file,
                &p,
            ) {
                Ok(()) if root => error!("failed state checkpointed to {}", p.display()),
                Ok(()) => {}
                Err(w) => error!("writing the failure checkpoint failed too: {w}"),
            }
        }
        return Err(e);
    }
    // A cell stage still running when the run reached its last step: its goals were not met
    // (issue 32: an unreachable goal used to run to the step limit without a word).
    let unfinished = match (
        sim.engines.get::<crate::engines::cell::CellEngine>(),
        stopped.is_none() && sim.step >= end,
    ) {
        (Some(c), true) => c
            .current()
            .map(|st| (st.name.clone(), c.stage, c.stages.len())),
        _ => None,
    };
    if let (Some((name, k, m)), Some(c), true) = (
        &unfinished,
        sim.engines.get::<crate::engines::cell::CellEngine>(),
        root,
    ) {
        // the scene's run length should hold every stage (the run ends after the last): a
        // warning; a segment chosen with --steps (a job of a chain) ends where it was asked to
        let (k, goals) = (k + 1, c.goals_report());
        match scene_end {
            true => warn!(
                "cell: the run ended at its last step ({end}) in stage `{name}` ({k} of {m}), \
                 which had not reached its goals: {goals} (a longer run, or a reachable goal)"
            ),
            false => {
                info!("cell: --steps {end} ended the run in stage `{name}` ({k} of {m}): {goals}")
            }
        }
    }
    // a protocol still in a stage when the run reached its last step
    if let (Some(p), true, true) = (
        sim.engines.get::<crate::engines::protocol::Protocol>(),
        stopped.is_none() && sim.step >= end,
        root,
    ) {
        if let Some(st) = p.current() {
            let (k, m) = (p.st.stage + 1, p.stages.len());
            match scene_end {
                true => warn!(
                    "protocol: the run length ({end} steps) ended the run in stage {k}/{m} \
                     `{}`, before the protocol's end (a longer `run`)",
                    st.name
                ),
                false => info!(
                    "protocol: --steps {end} ended the run in stage {k}/{m} `{}`",
                    st.name
                ),
            }
        }
    }
    let t0 = Instant::now();
    if stopped.is_none() {
        sync_gpu(&mut gpu, &mut sim, &mut synced)?;
        snaps.write(&sim)?;
    }
    if let Some(g) = &gpu {
        // the GPU step's phases in the CPU path's table: rebuilds, steps (contacts and
        // integration in one kernel), reading back
        sim.timers.collide = g.timers.rebuild;
        sim.timers.contact = g.timers.step;
        sim.timers.output += g.timers.output;
        sim.n_rebuilds = g.n_rebuilds;
        if g.lost_contacts > 0 && root {
            warn!(
                "GPU: {} contact histories were dropped at rebuilds (pairs more than the skin \
                 apart at a rebuild)",
                g.lost_contacts
            );
        }
    }
    sim.comm.agree(flush(&mut series, &mut strain_csv))?;
    sim.timers.output += t0.elapsed();
    let wall_s = sim.comm.max_f64(start.elapsed().as_secs_f64());
    let done = sim.step - first;
    let psps = particle_steps as f64 / wall_s.max(1e-12);
    // the particles at the end (inlets and outlets change the count during the run)
    let n = sim.n_global();
    let summary = RunSummary {
        out_dir: out_dir.clone(),
        device: gpu.as_ref().map_or("cpu".into(), |g| g.device_name()),
        steps_done: done,
        last_step: sim.step,
        wall_s,
        particle_steps,
        particle_steps_per_s: psps,
        setup_s,
        setup_total_s,
        setup_cpu_s,
        setup_rss_mb,
        stopped,
        checkpoint: last_checkpoint,
        io,
    };
    let phases = phase_stats(&sim);
    let traffic = sim.halo_ex.traffic;
    let mut tr = [
        traffic.bytes_sent as f64,
        sim.ps.n_ghosts() as f64,
        sim.n_rebuilds as f64,
        traffic.messages as f64,
    ];
    sim.comm.sum_f64s(&mut tr);
    let (pairs, wall_pairs) = (sim.pairs.len(), sim.wall_pairs.len());
    let load = sim.load().map(|x| {
        let c = &sim.comm;
        [c.min_u64(x), c.sum_u64(x), c.max_u64(x)]
    });
    let mut timing = Ok(());
    if root {
        let ranks = sim.comm.size();
        let cores = ranks * rayon::current_num_threads();
        let comm = Comm {
            ranks,
            bytes_per_step_per_rank: tr[0] / (done.max(1) as f64 * ranks as f64),
            messages_per_step_per_rank: tr[3] / (done.max(1) as f64 * ranks as f64),
            ghost_fraction: tr[1] / n.max(1) as f64,
            load,
            balances: sim.n_balances,
        };
        // a run that had nothing to do keeps the timing report of the run that did the work
        if done > 0 {
            timing = write_timing(&out_dir, &sim, &summary, &phases, &comm, n);
        }
        info!(
            "done: {done} steps, {particle_steps} particle-steps ({n} particles at the end) in \
             {wall_s:.3} s (+ {setup_s:.3} s set-up): {psps:.3e} particle-steps/s ({:.3e} per \
             core, {cores} core(s)), {} rebuilds",
            psps / cores as f64,
            sim.n_rebuilds
        );
        info!(
            "rank 0: {pairs} candidate pairs, {wall_pairs} wall pairs, {} ghosts at the end; all ranks: ghosts / particles = {:.3}, {:.0} bytes in {:.1} messages sent per step per rank",
            sim.ps.n_ghosts(),
            comm.ghost_fraction,
            comm.bytes_per_step_per_rank,
            comm.messages_per_step_per_rank
        );
        if ranks > 1 {
            let f = |k: usize| {
                let [mn, sum, mx] = load[k];
                let avg = sum as f64 / ranks as f64;
                format!(
                    "{mn}/{avg:.0}/{mx} (max/avg {:.3})",
                    mx as f64 / avg.max(1e-300)
                )
            };
            info!(
                "load per rank, min/avg/max: particles {}, contacts {}, modelled cost {}; {} cut move(s)",
                f(0),
                f(1),
                f(3),
                sim.n_balances
            );
        }
        if let Some((name, k, m)) = &unfinished {
            info!(
                "cell: unfinished stage `{name}` ({} of {m}) at the end of the run",
                k + 1
            );
        }
        if let Some(c) = sim
            .engines
            .get::<crate::engines::cell::CellEngine>()
            .filter(|c| !c.missed.is_empty())
        {
            info!(
                "cell: stages that ended by their steps without their goals: `{}`",
                c.missed.join("`, `")
            );
        }
        info!("phase        min s      avg s      max s   %total  imbalance");
        for p in &phases {
            info!(
                "{:<10} {:>8.3} {:>10.3} {:>10.3} {:>7.1} % {:>7.1} %",
                p.name,
                p.min,
                p.avg,
                p.max,
                100.0 * p.avg / wall_s.max(1e-12),
                p.imbalance_pct()
            );
        }
    }
    sim.comm.agree(timing)?;
    Ok(summary)
}

/// The GPU step's state into the CPU `sim` (for a snapshot or checkpoint), once per step.
fn sync_gpu(
    gpu: &mut Option<crate::gpu::GpuStep>,
    sim: &mut Simulation,
    synced: &mut u64,
) -> Result<()> {
    match gpu {
        Some(g) if *synced != g.step => {
            g.sync_host(sim)?;
            *synced = g.step;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Test hook: `DEMHPC_FAULT_FSIZE=STEP:BYTES[:RANK]` makes the file system refuse, from the
/// outputs of step STEP on (series row, snapshot, checkpoint), every write beyond BYTES bytes
/// of a file (`RLIMIT_FSIZE`, with SIGXFSZ ignored so that writes fail with EFBIG as on a
/// full disk or an exhausted quota) — on rank RANK only, or on every rank. A real write
/// failure deep in MPI-IO or HDF5, without mounting a small file system (tests/suite/faults.rs).
#[derive(Clone, Copy, Debug)]
struct FaultHook {
    step: u64,
    bytes: u64,
    rank: Option<u64>,
}

impl FaultHook {
    fn from_env() -> Option<FaultHook> {
        let v = std::env::var("DEMHPC_FAULT_FSIZE").ok()?;
        let f: Vec<u64> = v.split(':').filter_map(|x| x.parse().ok()).collect();
        match *f.as_slice() {
            [step, bytes] => Some(FaultHook {
                step,
                bytes,
                rank: None,
            }),
            [step, bytes, r] => Some(FaultHook {
                step,
                bytes,
                rank: Some(r),
            }),
            _ => None,
        }
    }

    fn apply(&self, step: u64, rank: usize) {
        if step != self.step || self.rank.is_some_and(|r| r != rank as u64) {
            return;
        }
        let lim = libc::rlimit {
            rlim_cur: self.bytes,
            rlim_max: self.bytes,
        };
        // SAFETY: plain system calls on this process with valid arguments.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
        }
    }
}

/// Flush the CSV files rank 0 keeps open (their rows reach the disk before a checkpoint that
/// a restart would continue them from).
/// The scene's protocol ran its last stage.
fn protocol_done(sim: &Simulation) -> bool {
    use crate::engines::Hooks;
    sim.engines
        .get::<crate::engines::protocol::Protocol>()
        .is_some_and(|p| p.finished())
}

fn flush(series: &mut Option<Series>, strain: &mut Option<StrainSeries>) -> Result<()> {
    if let Some(s) = series.as_mut() {
        s.flush()?;
    }
    if let Some(c) = strain.as_mut() {
        c.flush()?;
    }
    Ok(())
}

/// Build the simulation from a checkpoint (collective).
/// Spheres as `x y z r` lines.
/// Write `specimen.txt`, `x y z r` per sphere in gid order, and the tag as a 5th column where
/// it is not 0 (readable by `TextFile`), from the
/// ranks' own spheres before the first step (collective): each rank sends its spheres to the
/// rank whose gid block [r·N/P, (r + 1)·N/P) holds them (one all-to-all, as snapshots do),
/// formats its block and writes it at its byte offset (an exclusive prefix sum of the blocks'
/// lengths) into the file rank 0 created. No rank holds more than its block (issue 19: rank 0
/// used to generate the whole scene for it). Positions are the generated ones (unwrapped).
fn write_specimen(sim: &Simulation, path: &Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    const HEADER: &str = "# demhpc specimen: x y z r [m] [tag]\n";
    let comm = &sim.comm;
    let (n, p) = (sim.n_global().max(1) as u128, comm.size());
    let ps = &sim.ps;
    let cell = sim.domain.size();
    // gid g lies in block ⌊((g + 1) P − 1) / N⌋ (gids are dense in a fresh run)
    let block = |g: u64| (((g as u128 + 1) * p as u128 - 1) / n) as usize;
    let mut bufs: Vec<Vec<f64>> = vec![Vec::new(); p];
    for i in 0..ps.n_owned {
        let x = ps.unwrapped(i, &cell);
        let b = &mut bufs[block(ps.gid[i]).min(p - 1)];
        b.extend_from_slice(&[
            f64::from_bits(ps.gid[i]),
            x.x,
            x.y,
            x.z,
            ps.radius[i],
            ps.tag[i] as f64,
        ]);
    }
    let counts: Vec<usize> = bufs.iter().map(Vec::len).collect();
    let send = bufs.concat();
    drop(bufs);
    let mut recv = Vec::new();
    comm.all_to_all_f64s(&send, &counts, &mut recv);
    drop(send);
    let mut rows: Vec<&[f64]> = recv.chunks_exact(6).collect();
    rows.sort_unstable_by_key(|v| v[0].to_bits());
    let mut text = String::new();
    for v in rows {
        text += &match v[5] {
            0.0 => format!("{:e} {:e} {:e} {:e}\n", v[1], v[2], v[3], v[4]),
            t => format!("{:e} {:e} {:e} {:e} {t}\n", v[1], v[2], v[3], v[4]),
        };
    }
    let at = HEADER.len() as u64 + comm.exscan_u64(text.len() as u64);
    let created = match comm.is_root() {
        true => std::fs::write(path, HEADER).map_err(|e| Error::io(path, e)),
        false => Ok(()),
    };
    comm.agree(created)?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.write_all_at(text.as_bytes(), at))
        .map_err(|e| Error::io(path, e));
    comm.agree(written)
}

/// One row of `strainer.csv` (collective: every rank computes, rank 0 writes).
fn strain_row(sim: &Simulation) -> String {
    let Some(st) = sim
        .engines
        .get::<crate::engines::strainer::UniaxialStrainer>()
    else {
        return String::new();
    };
    let lw = sim.love_weber_stress(st.area * st.length0);
    let lat = st.lateral_strain(&sim.ps, &sim.comm);
    let ls = sim.link_stats();
    format!(
        "{},{:.12e},{:.9e},{:.9e},{:.9e},{:.9e},{},{},{},{},{:.6e}",
        sim.step,
        sim.time,
        st.strain(),
        st.stress,
        lw[(st.axis, st.axis)],
        lat,
        ls.intact,
        ls.damaged,
        ls.broken,
        ls.frictional,
        ls.mean_omega
    )
}

fn restart(scene: Scene, opts: &RunOptions, path: &Path) -> Result<Simulation> {
    let info = checkpoint::read_info(path)?;
    let reproducible = scene.reproducible || info.reproducible;
    let limits =
        checkpoint::Limits::of(&scene, &info.engines).map_err(|e| checkpoint::damaged(path, e))?;
    let mut sim =
        Simulation::new_restart(scene, opts.mpi, opts.grid, (info.bbox_lo, info.bbox_hi))?;
    if sim.dt.to_bits() != info.dt.to_bits() {
        return Err(Error::Input(format!(
            "{}: time step {:e} s differs from the scene's {:e} s",
            path.display(),
            info.dt,
            sim.dt
        )));
    }
    // Damage is found before any of it is used: checksums (each rank verifies a share of
    // every dataset), the engines' counters against the particle count, then every row a
    // rank keeps, then the checks across ranks.
    if !checkpoint::verify(path, &info, &sim.comm)? && sim.comm.is_root() {
        warn!(
            "{}: format version {} has no checksums: damage to it cannot be detected",
            path.display(),
            info.format_version
        );
    }
    checkpoint::check_counts(path, &info, &limits)?;
    // a deforming cell at its shape of the last rebuild: its reference positions are cut
    // through that cell's frame
    sim.prepare_cell_restart(&info.engines);
    restart_cuts(&mut sim, path, &info)?;
    let dec = sim.dec.clone();
    let (cell, periodic) = (sim.domain.cell.clone(), sim.domain.periodic);
    let owns = |x: &V3| match cell.deformed {
        false => dec.owns(x),
        true => dec.owns(&cell.frame_image(x, cell.home(x, periodic), periodic)),
    };
    // only the writers' blocks near this subdomain (the checkpoint's index): a contact's two
    // particles lay within the halo of each other at the last rebuild. A deformed cell never
    // wraps positions (the boxes are of unwrapped positions): every block is read.
    let want = checkpoint::Wanted {
        owns: &owns,
        near: &|lo, hi, m| cell.deformed || dec.may_reach(lo, hi, m),
        reach: sim.halo() * 1.01,
    };
    let t_read = Instant::now();
    let restored = checkpoint::read_local(path, &info, &limits, &want);
    // A rank that cannot read its part must not leave the others waiting in `restore`.
    let restored = sim.comm.agree(restored)?;
    log::debug!(
        "rank {}: read its part of {} in {:.3} s: {} particles, {} contacts, {} wall contacts",
        sim.comm.rank(),
        path.display(),
        t_read.elapsed().as_secs_f64(),
        restored.particles.n_owned,
        restored.contacts.len(),
        restored.wall_contacts.len()
    );
    checkpoint::check_global(path, &info, &restored, &sim.comm)?;
    // before `restore`: the force assembly of the rebuild there depends on the mode
    sim.reproducible = reproducible;
    sim.restore(restored)?;
    sim.log_subdomain();
    if sim.comm.is_root() {
        info!(
            "restarted from {} at step {} (t = {:.6e} s): {} particles, {} contacts; written by {} rank(s), now {}",
            path.display(),
            info.step,
            info.time,
            info.n_particles,
            info.n_contacts + info.n_wall_contacts,
            info.ranks,
            sim.comm.size()
        );
    }
    Ok(sim)
}

/// The cuts a restart reads its particles with: the checkpoint's, on the grid that wrote them
/// (load balancing moved them; the same cuts give every rank the same particles, and the
/// continuation is bitwise), else — another rank count — cuts balanced on the particles'
/// reference positions (each rank reads a share; collective).
fn restart_cuts(
    sim: &mut Simulation,
    path: &Path,
    info: &checkpoint::CheckpointInfo,
) -> Result<()> {
    let same_grid = info.grid == sim.dec.dims.map(|d| d as u64);
    match &info.cuts {
        Some(c) if same_grid => {
            let cuts = [0, 1, 2].map(|a| Some(c[a].clone()));
            sim.apply_cuts(cuts)?;
        }
        _ if sim.balance.enabled && sim.dec.n_ranks() > 1 => {
            let mut share = checkpoint::read_ref_pos_share(path, info, &sim.comm)?;
            let (cell, periodic) = (&sim.domain.cell, sim.domain.periodic);
            if cell.deformed {
                for x in share.iter_mut() {
                    *x = cell.frame_image(x, cell.home(x, periodic), periodic);
                }
            }
            let cost = vec![crate::domain::balance::PARTICLE; share.len()];
            let mut hist = Vec::new();
            let cuts = sim.balanced_cuts(&mut hist, &share, &cost, true);
            sim.apply_cuts(cuts)?;
        }
        _ => {}
    }
    Ok(())
}

/// Write a checkpoint of the current state into `dir`, move `latest` to it and prune old ones
/// (collective).
fn write_checkpoint(
    sim: &Simulation,
    dir: &Path,
    keep: usize,
    scene_text: &str,
    scene_file: &str,
) -> Result<PathBuf> {
    let t0 = Instant::now();
    let name = checkpoint::file_name(sim.step);
    let path = dir.join(&name);
    checkpoint::write(
        &sim.checkpoint_state(),
        &sim.comm,
        scene_text,
        scene_file,
        &path,
    )?;
    let moved = if sim.comm.is_root() {
        let r = checkpoint::set_latest(dir, &name);
        checkpoint::prune(dir, keep);
        r
    } else {
        Ok(())
    };
    sim.comm.agree(moved)?;
    if sim.comm.is_root() {
        let mb = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let s = t0.elapsed().as_secs_f64();
        info!(
            "checkpoint at step {}: {} ({mb:.1} MB in {s:.3} s, {:.0} MB/s)",
            sim.step,
            path.display(),
            mb / s.max(1e-9)
        );
    }
    Ok(path)
}

/// Communication figures of a run.
struct Comm {
    ranks: usize,
    bytes_per_step_per_rank: f64,
    messages_per_step_per_rank: f64,
    ghost_fraction: f64,
    /// Per rank (min, sum, max) of: particles, contacts, ghosts, modelled cost.
    load: [[u64; 3]; 4],
    balances: u64,
}

/// `{"particles": {"min": …, "avg": …, "max": …}, "contacts": …, "ghosts": …, "cost": …}`.
fn load_json(c: &Comm) -> serde_json::Value {
    let names = ["particles", "contacts", "ghosts", "cost"];
    let items = names.iter().zip(&c.load).map(|(n, [mn, sum, mx])| {
        let avg = *sum as f64 / c.ranks as f64;
        (n.to_string(), json!({"min": mn, "avg": avg, "max": mx}))
    });
    serde_json::Value::Object(items.collect())
}

/// `timing.json`, written with serde_json: valid JSON whatever the scene name holds (a quote
/// in it made the hand-formatted text invalid, issue 32).
fn write_timing(
    dir: &Path,
    sim: &Simulation,
    s: &RunSummary,
    phases: &[PhaseStats],
    c: &Comm,
    n: u64,
) -> Result<()> {
    let per_phase = |f: &dyn Fn(&PhaseStats) -> serde_json::Value| {
        serde_json::Value::Object(phases.iter().map(|p| (p.name.to_string(), f(p))).collect())
    };
    let io = &s.io;
    let t = json!({
        "scene": sim.name,
        "ranks": c.ranks,
        "grid": sim.dec.dims,
        "threads": rayon::current_num_threads(),
        "reproducible": sim.reproducible,
        "device": s.device,
        "particles": n,
        "steps": s.steps_done,
        "particle_steps": s.particle_steps,
        "wall_s": s.wall_s,
        "setup_s": s.setup_s,
        "setup_total_s": s.setup_total_s,
        "setup_cpu_s": s.setup_cpu_s,
        "setup_rss_mb": {"min": s.setup_rss_mb[0], "max": s.setup_rss_mb[1]},
        "particle_steps_per_s": s.particle_steps_per_s,
        "rebuilds": sim.n_rebuilds,
        "ghost_fraction": c.ghost_fraction,
        "bytes_sent_per_step_per_rank": c.bytes_per_step_per_rank,
        "messages_per_step_per_rank": c.messages_per_step_per_rank,
        "load_per_rank": load_json(c),
        "cut_moves": c.balances,
        "checkpoint": {
            "writes": io.writes,
            "write_s": io.write_s,
            "write_bytes": io.write_bytes,
            "read_s": io.read_s,
            "read_bytes": io.read_bytes,
        },
        "phases_s": per_phase(&|p| json!(p.avg)),
        "phases": per_phase(&|p| json!({
            "min": p.min,
            "avg": p.avg,
            "max": p.max,
            "imbalance_pct": p.imbalance_pct(),
        })),
    });
    let mut text =
        serde_json::to_string_pretty(&t).map_err(|e| Error::io(dir.join("timing.json"), e))?;
    text.push('\n');
    crate::io::write_atomic(&dir.join("timing.json"), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_under_takes_plain_relative_names_only() {
        let out = Path::new("out");
        assert_eq!(join_under(out, "n", "a").unwrap(), Path::new("out/a"));
        assert_eq!(join_under(out, "n", "a/b").unwrap(), Path::new("out/a/b"));
        assert_eq!(join_under(out, "n", "./a").unwrap(), Path::new("out/./a"));
        for bad in ["", ".", "..", "../a", "a/../..", "/abs", "a/../b"] {
            assert!(join_under(out, "n", bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn restart_continues_in_the_directory_holding_the_checkpoint() {
        let ck = "checkpoints";
        let at = |p: &str, dirs: &[&str]| restart_out_dir(Path::new(p), dirs);
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(at("o/checkpoints/ckpt_1.h5", &[ck]), p("o"));
        assert_eq!(at("/a/b/checkpoints/ckpt_1.h5", &[ck]), p("/a/b"));
        assert_eq!(at("checkpoints/ckpt_1.h5", &[ck]), p("."));
        assert_eq!(at("./checkpoints/ckpt_1.h5", &[ck]), p("."));
        assert_eq!(at("../checkpoints/ckpt_1.h5", &[ck]), p(".."));
        assert_eq!(at("o/ck/deep/ckpt_1.h5", &["ck/deep"]), p("o"));
        assert_eq!(at("o/ck/deep/ckpt_1.h5", &[ck, "./ck/deep"]), p("o"));
        // not in a checkpoint directory: no output directory to continue in
        assert_eq!(at("o/old_checkpoints/ckpt_1.h5", &[ck]), None);
        assert_eq!(at("/tmp/copy.h5", &[ck]), None);
        // a bare file name is looked up in the working directory
        let cwd = std::env::current_dir().unwrap();
        let want = (cwd.file_name() == Some(std::ffi::OsStr::new(ck)))
            .then(|| cwd.parent().unwrap().to_path_buf());
        assert_eq!(at("ckpt_1.h5", &[ck]), want);
    }
}
