//! The run driver's command-line checks (issue 18, "Fail safely"), through the real binary and
//! real `mpirun`: a `--grid` that does not match the rank count and absurd thread counts are
//! refused (exit 2) before anything is written, an oversubscribed layout is warned about once,
//! an output directory that cannot be written is reported (exit 1) before the set-up, and
//! outputs never land outside the output directory.

mod support;

use std::path::Path;
use std::process::Output;
use support::*;

fn scene_path(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(name);
    p.to_str().unwrap().to_string()
}

/// Everything in `dir` (names), to check that a refused run wrote nothing.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2, `needle` on stderr exactly once (bad input is said once, by rank 0, also under
/// `mpirun`), nothing written in `dir`.
fn refused(o: &Output, needle: &str, dir: &Path) {
    assert_eq!(o.status.code(), Some(2), "{}", describe(o));
    assert_eq!(stderr(o).matches(needle).count(), 1, "{}", describe(o));
    assert!(entries(dir).is_empty(), "wrote {:?}", entries(dir));
}

/// A `--grid` whose product is not the rank count is refused on any rank count, before any
/// output: without `mpirun` (it used to be ignored) and under `mpirun -n 2`. `1x1x1` on one
/// process is the job's grid and runs.
#[test]
fn grid_must_match_the_rank_count() {
    let tmp = TempDir::new("cli-grid");
    let s = scene_path("two_spheres.ron");
    let o = demhpc(1, 1, &["--grid", "2x1x1", "--out", "o", &s], &tmp.0);
    refused(&o, "--grid 2x1x1 does not match the single process", &tmp.0);
    assert!(stderr(&o).contains("mpirun -n 2"), "{}", describe(&o));
    let o = demhpc(2, 1, &["--grid", "3x1x1", "--out", "o", &s], &tmp.0);
    refused(&o, "--grid 3x1x1 does not match the 2 ranks", &tmp.0);
    assert!(stderr(&o).contains("mpirun -n 3"), "{}", describe(&o));
    let o = demhpc(
        1,
        1,
        &["--grid", "1x1x1", "--steps", "10", "--out", "o", &s],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

/// Absurd thread counts are refused (exit 2, nothing written), from `--threads` and from
/// `RAYON_NUM_THREADS`, which rayon would otherwise read.
#[test]
fn absurd_thread_counts_are_refused() {
    let tmp = TempDir::new("cli-threads");
    let s = scene_path("two_spheres.ron");
    let o = demhpc(1, 100_000, &["--out", "o", &s], &tmp.0);
    refused(&o, "--threads 100000: too many threads per rank", &tmp.0);
    let o = command(2, 100_000, &["--out", "o", &s], &tmp.0)
        .output()
        .unwrap();
    refused(&o, "--threads 100000: too many threads per rank", &tmp.0);
    let o = std::process::Command::new(BIN)
        .args(["-q", "--out", "o", &s])
        .current_dir(&tmp.0)
        .env("RAYON_NUM_THREADS", "100000")
        .output()
        .unwrap();
    refused(&o, "RAYON_NUM_THREADS 100000: too many threads", &tmp.0);
}

/// More threads than the cores a process may run on is warned about (it runs), once: by rank 0
/// alone under `mpirun -n 2`, where each rank is bound to one core (≤ 2 ranks) or, unbound,
/// 2 ranks × all the CPUs oversubscribe the node.
#[test]
fn oversubscription_is_warned_once() {
    let tmp = TempDir::new("cli-oversub");
    let s = scene_path("two_spheres.ron");
    let cores = std::thread::available_parallelism().unwrap().get();
    let warned = |o: &Output| {
        assert_eq!(o.status.code(), Some(0), "{}", describe(o));
        let e = stderr(o);
        e.matches("threads share").count()
    };
    let o = demhpc(1, cores + 1, &["--steps", "10", "--out", "a", &s], &tmp.0);
    assert_eq!(warned(&o), 1, "{}", describe(&o));
    assert!(stderr(&o).contains(&format!("may run on {cores} core(s)")));
    let o = demhpc(1, cores, &["--steps", "10", "--out", "b", &s], &tmp.0);
    assert_eq!(warned(&o), 0, "{}", describe(&o));
    // 16 threads at most per bound core; on larger machines the layout may fit: no check.
    if cores <= 16 {
        let o = demhpc(2, cores, &["--steps", "10", "--out", "c", &s], &tmp.0);
        assert_eq!(warned(&o), 1, "{}", describe(&o));
    }
}
