//! Slurm batch script, dry run (issue #6): `scripts/slurm_dryrun.sh` runs `slurm/run.sbatch`
//! with fake Slurm (srun → mpirun, scontrol requeue → run the script again). A SIGUSR1 to the
//! batch script (what `#SBATCH --signal=B:USR1@…` does before the time limit) must make the
//! solver checkpoint and exit, the script requeue itself, the second start continue from
//! `OUT/checkpoints/latest` to the last step, and the final state equal, bit for bit, that of
//! an uninterrupted run.
//!
//! The signal is sent as soon as the first periodic checkpoint exists (`--signal-when-exists`),
//! not after a fixed sleep: the solver is then surely past its start-up and far from its end.
//! Should a very slow machine still finish the run before the signal lands, the script sees a
//! finished run and does not requeue; the final state must be identical all the same.

use crate::support;

use support::{describe, TempDir};

use std::path::Path;
use std::process::Command;

use support::{mpi_env, read_state, settle_with_checkpoints, BIN};
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Long enough (seconds on 2 ranks) that the stop lands well before the end.
const STEPS: u64 = 8000;

#[test]
fn dry_run_usr1_checkpoints_requeues_restarts_and_matches_uninterrupted_run() {
    let tmp = TempDir::new("dryrun");
    let scene = tmp.0.join("scene.ron");
    std::fs::write(&scene, settle_with_checkpoints(200, 2)).unwrap();
    let steps = STEPS.to_string();

    // Uninterrupted reference: 2 ranks × 1 thread, as in the dry run.
    let reference = tmp.0.join("reference");
    let o = mpi_env(Command::new("mpirun").args(["--oversubscribe", "--bind-to", "none"]))
        .args([
            "-n",
            "2",
            BIN,
            "-q",
            "--threads",
            "1",
            "--steps",
            &steps,
            "--out",
        ])
        .arg(&reference)
        .arg(&scene)
        .output()
        .expect("run mpirun");
    assert_eq!(o.status.code(), Some(0), "reference run: {}", describe(&o));

    // The batch job, stopped by SIGUSR1 once the first checkpoint is there.
    let out = tmp.0.join("job");
    let o = mpi_env(&mut Command::new("bash"))
        .arg(Path::new(ROOT).join("scripts/slurm_dryrun.sh"))
        .args([
            "-n",
            "2",
            "-c",
            "1",
            "--max-requeues",
            "3",
            "--signal-when-exists",
        ])
        .arg(out.join("checkpoints/latest"))
        .arg(Path::new(ROOT).join("slurm/run.sbatch"))
        .arg(&scene)
        .arg(&steps)
        .arg(&out)
        .env("DEMHPC", BIN)
        .env_remove("FLAGS")
        .env_remove("SRUN_FLAGS")
        .current_dir(&tmp.0)
        .output()
        .expect("run scripts/slurm_dryrun.sh");
    let log = describe(&o);
    for l in log.lines().filter(|l| {
        l.contains("run.sbatch[") || l.contains("[slurm_dryrun]") || l.contains("stopped by")
    }) {
        eprintln!("{l}");
    }
    assert_eq!(o.status.code(), Some(0), "dry run: {log}");
    assert!(
        log.contains("SIGUSR1 to the batch script"),
        "no signal sent: {log}"
    );
    assert!(log.contains("the run is finished"), "{log}");
    if log.contains("stopped by SIGUSR1 at step") {
        // The interesting path: checkpoint → exit 0 → requeue → restart from latest → end.
        assert!(log.contains("restart with: demhpc --restart"), "{log}");
        assert!(log.contains("scontrol requeue"), "not requeued: {log}");
        assert!(log.contains("restart count 1"), "no second start: {log}");
        assert!(
            log.contains("continuing from"),
            "second start did not restart: {log}"
        );
        assert!(
            log.contains("restarted from"),
            "solver did not restart: {log}"
        );
        assert!(log.contains("1 requeue(s), exit status 0"), "{log}");
    } else {
        eprintln!("note: the run finished before SIGUSR1 reached it (slow machine?); no requeue");
        assert!(log.contains("0 requeue(s), exit status 0"), "{log}");
    }

    let snap = format!("snapshots/snap_{STEPS:09}.h5");
    let (a, b) = (
        read_state(&reference.join(&snap)),
        read_state(&out.join(&snap)),
    );
    assert_eq!(a.gid.len(), 512);
    assert!(a.ncontacts.iter().any(|&c| c > 0), "no contacts formed");
    assert_eq!(b.gid, a.gid, "particle ids differ (lost/duplicated)");
    assert!(
        a == b,
        "final state after stop/requeue/restart differs from the uninterrupted run: {log}"
    );
    let series = |d: &Path| std::fs::read_to_string(d.join("series.csv")).unwrap();
    assert_eq!(
        series(&out),
        series(&reference),
        "series.csv differs from the uninterrupted run"
    );
    let latest = std::fs::read_to_string(out.join("checkpoints/latest")).unwrap();
    assert_eq!(latest.trim(), format!("ckpt_{STEPS:010}.h5"));
}
