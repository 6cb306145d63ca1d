//! The run driver: steps a [`Simulation`] to the requested step, writing the time series,
//! snapshots, progress lines and the final timing report (`timing.json`).

use crate::error::{Error, Result};
use crate::io::series::Series;
use crate::io::snapshot::SnapshotWriter;
use crate::scene::Scene;
use crate::sim::Simulation;
use log::{error, info};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Step number at which to stop (default: the scene's).
    pub steps: Option<u64>,
    /// Output directory (default `output/<scene name>/`).
    pub out: Option<PathBuf>,
    /// Run on the MPI world (`mpirun`), not as a plain single process.
    pub mpi: bool,
    /// Rank grid forced by the user (default: chosen from the scene's extents).
    pub grid: Option<[usize; 3]>,
}

/// What a finished run reports.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub out_dir: PathBuf,
    pub steps_done: u64,
    pub wall_s: f64,
    pub particle_steps_per_s: f64,
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

/// Run a validated scene (every rank calls it; rank 0 writes the series, the snapshot files
/// and `timing.json`).
pub fn run(scene: Scene, opts: &RunOptions) -> Result<RunSummary> {
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&scene.name));
    let end = opts.steps.unwrap_or(scene.steps);
    let output = scene.output.clone();
    let mut sim = if opts.mpi {
        Simulation::new_mpi(scene, opts.grid)?
    } else {
        Simulation::new(scene)?
    };
    let root = sim.comm.is_root();
    if root {
        std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    }
    let mut series = match root {
        true => Some(Series::create(
            &out_dir.join("series.csv"),
            sim.walls.len(),
        )?),
        false => None,
    };
    let mut snaps = SnapshotWriter::new(&out_dir, root)?;
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
    let start = Instant::now();
    let first = sim.step;
    let mut last_progress = Instant::now();
    let result = (|| -> Result<()> {
        while sim.step < end {
            sim.step()?;
            let t0 = Instant::now();
            let every = output.series_every;
            if every > 0 && (sim.step % every == 0 || sim.step == end) {
                sim.check()?;
                let st = sim.stats();
                if let Some(s) = series.as_mut() {
                    s.row(sim.step, sim.time, sim.dt, &st)?;
                }
            }
            if output.snapshot_every > 0 && sim.step % output.snapshot_every == 0 && sim.step != end
            {
                snaps.write(&sim)?;
            }
            if root && last_progress.elapsed().as_secs_f64() >= output.progress_s {
                last_progress = Instant::now();
                let el = start.elapsed().as_secs_f64();
                let done = sim.step - first;
                let rate = done as f64 * n as f64 / el;
                let eta = (end - sim.step) as f64 * el / done as f64;
                info!(
                    "step {}/{} ({:.1} %)  t = {:.6e} s  {:.3e} particle-steps/s  ETA {}",
                    sim.step,
                    end,
                    100.0 * sim.step as f64 / end as f64,
                    sim.time,
                    rate,
                    fmt_secs(eta)
                );
            }
            sim.timers.output += t0.elapsed();
        }
        Ok(())
    })();
    if let Err(e) = result {
        // Keep what there is: the state at the failure goes to a snapshot before we stop
        // (failures are detected collectively, so every rank is here).
        if let Some(s) = series.as_mut() {
            s.flush().ok();
        }
        match snaps.write(&sim) {
            Ok(Some(p)) => error!("state at step {} written to {}", sim.step, p.display()),
            Ok(None) => {}
            Err(w) => error!("writing the failure snapshot failed too: {w}"),
        }
        return Err(e);
    }
    let t0 = Instant::now();
    snaps.write(&sim)?;
    if let Some(s) = series.as_mut() {
        s.flush()?;
    }
    sim.timers.output += t0.elapsed();
    let wall_s = sim.comm.max_f64(start.elapsed().as_secs_f64());
    let done = sim.step - first;
    let psps = done as f64 * n as f64 / wall_s.max(1e-12);
    let summary = RunSummary {
        out_dir: out_dir.clone(),
        steps_done: done,
        wall_s,
        particle_steps_per_s: psps,
    };
    let phases = phase_stats(&sim);
    let traffic = sim.halo_ex.traffic;
    let mut tr = [
        traffic.bytes_sent as f64,
        sim.ps.n_ghosts() as f64,
        sim.n_rebuilds as f64,
    ];
    sim.comm.sum_f64s(&mut tr);
    let (pairs, wall_pairs) = (sim.pairs.len(), sim.wall_pairs.len());
    if root {
        let ranks = sim.comm.size();
        let cores = ranks * rayon::current_num_threads();
        let comm = Comm {
            ranks,
            bytes_per_step_per_rank: tr[0] / (done.max(1) as f64 * ranks as f64),
            ghost_fraction: tr[1] / n.max(1) as f64,
        };
        write_timing(&out_dir, &sim, &summary, &phases, &comm, n)?;
        info!(
            "done: {} steps of {} particles in {:.3} s: {:.3e} particle-steps/s ({:.3e} per core, {} core(s)), {} rebuilds",
            done, n, wall_s, psps, psps / cores as f64, cores, sim.n_rebuilds
        );
        info!(
            "rank 0: {pairs} candidate pairs, {wall_pairs} wall pairs, {} ghosts at the end; all ranks: ghosts / particles = {:.3}, {:.0} bytes sent per step per rank",
            sim.ps.n_ghosts(),
            comm.ghost_fraction,
            comm.bytes_per_step_per_rank
        );
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
    Ok(summary)
}

/// Communication figures of a run.
struct Comm {
    ranks: usize,
    bytes_per_step_per_rank: f64,
    ghost_fraction: f64,
}

fn write_timing(
    dir: &Path,
    sim: &Simulation,
    s: &RunSummary,
    phases: &[PhaseStats],
    c: &Comm,
    n: u64,
) -> Result<()> {
    let ph: Vec<String> = phases
        .iter()
        .map(|p| format!("\"{}\": {:.6}", p.name, p.avg))
        .collect();
    let table: Vec<String> = phases
        .iter()
        .map(|p| {
            format!(
                "    \"{}\": {{\"min\": {:.6}, \"avg\": {:.6}, \"max\": {:.6}, \"imbalance_pct\": {:.3}}}",
                p.name,
                p.min,
                p.avg,
                p.max,
                p.imbalance_pct()
            )
        })
        .collect();
    let d = sim.dec.dims;
    let json = format!(
        "{{\n  \"scene\": \"{}\",\n  \"ranks\": {},\n  \"grid\": [{}, {}, {}],\n  \"threads\": {},\n  \"reproducible\": {},\n  \"particles\": {},\n  \"steps\": {},\n  \"wall_s\": {:.6},\n  \"particle_steps_per_s\": {:.6e},\n  \"rebuilds\": {},\n  \"ghost_fraction\": {:.6},\n  \"bytes_sent_per_step_per_rank\": {:.1},\n  \"phases_s\": {{{}}},\n  \"phases\": {{\n{}\n  }}\n}}\n",
        sim.name,
        c.ranks,
        d[0],
        d[1],
        d[2],
        rayon::current_num_threads(),
        sim.reproducible,
        n,
        s.steps_done,
        s.wall_s,
        s.particle_steps_per_s,
        sim.n_rebuilds,
        c.ghost_fraction,
        c.bytes_per_step_per_rank,
        ph.join(", "),
        table.join(",\n")
    );
    crate::io::write_atomic(&dir.join("timing.json"), json.as_bytes())
}
