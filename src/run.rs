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

/// Run a validated scene.
pub fn run(scene: Scene, opts: &RunOptions) -> Result<RunSummary> {
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&scene.name));
    let end = opts.steps.unwrap_or(scene.steps);
    let output = scene.output.clone();
    let mut sim = Simulation::new(scene)?;
    std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let mut series = Series::create(&out_dir.join("series.csv"), sim.walls.len())?;
    let mut snaps = SnapshotWriter::new(&out_dir)?;
    let n = sim.ps.n_owned;
    info!(
        "{}: {} particles, {} walls, dt = {:.4e} s, skin = {:.3e} m, steps {} → {}, {} thread(s)",
        sim.name,
        n,
        sim.walls.len(),
        sim.dt,
        sim.skin,
        sim.step,
        end,
        rayon::current_num_threads()
    );
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
                series.row(sim.step, sim.time, sim.dt, &sim.stats())?;
            }
            if output.snapshot_every > 0 && sim.step % output.snapshot_every == 0 && sim.step != end
            {
                snaps.write(&sim)?;
            }
            if last_progress.elapsed().as_secs_f64() >= output.progress_s {
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
        // Keep what there is: the state at the failure goes to a snapshot before we stop.
        series.flush().ok();
        match snaps.write(&sim) {
            Ok(p) => error!("state at step {} written to {}", sim.step, p.display()),
            Err(w) => error!("writing the failure snapshot failed too: {w}"),
        }
        return Err(e);
    }
    let t0 = Instant::now();
    snaps.write(&sim)?;
    series.flush()?;
    sim.timers.output += t0.elapsed();
    let wall_s = start.elapsed().as_secs_f64();
    let done = sim.step - first;
    let psps = done as f64 * n as f64 / wall_s.max(1e-12);
    let summary = RunSummary {
        out_dir: out_dir.clone(),
        steps_done: done,
        wall_s,
        particle_steps_per_s: psps,
    };
    write_timing(&out_dir, &sim, &summary)?;
    let t = &sim.timers;
    let pct = |d: std::time::Duration| 100.0 * d.as_secs_f64() / wall_s.max(1e-12);
    info!(
        "done: {} steps of {} particles in {:.3} s: {:.3e} particle-steps/s ({:.3e} per thread), {} rebuilds",
        done,
        n,
        wall_s,
        psps,
        psps / rayon::current_num_threads() as f64,
        sim.n_rebuilds
    );
    info!(
        "{} candidate pairs, {} wall pairs, {} ghosts at the end",
        sim.pairs.len(),
        sim.wall_pairs.len(),
        sim.ps.n_ghosts()
    );
    info!(
        "time per phase: collide {:.1} %, contact {:.1} %, forces+integrate {:.1} %, output {:.1} %",
        pct(t.collide),
        pct(t.contact),
        pct(t.integrate),
        pct(t.output)
    );
    Ok(summary)
}

fn write_timing(dir: &Path, sim: &Simulation, s: &RunSummary) -> Result<()> {
    let t = &sim.timers;
    let json = format!(
        "{{\n  \"scene\": \"{}\",\n  \"ranks\": 1,\n  \"threads\": {},\n  \"particles\": {},\n  \"steps\": {},\n  \"wall_s\": {:.6},\n  \"particle_steps_per_s\": {:.6e},\n  \"rebuilds\": {},\n  \"phases_s\": {{\"collide\": {:.6}, \"contact\": {:.6}, \"integrate\": {:.6}, \"comm\": {:.6}, \"output\": {:.6}}}\n}}\n",
        sim.name,
        rayon::current_num_threads(),
        sim.ps.n_owned,
        s.steps_done,
        s.wall_s,
        s.particle_steps_per_s,
        sim.n_rebuilds,
        t.collide.as_secs_f64(),
        t.contact.as_secs_f64(),
        t.integrate.as_secs_f64(),
        t.comm.as_secs_f64(),
        t.output.as_secs_f64()
    );
    crate::io::write_atomic(&dir.join("timing.json"), json.as_bytes())
}
