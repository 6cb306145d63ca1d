//! The run driver's command-line checks (issue 18, "Fail safely"), through the real binary and
//! real `mpirun`: a `--grid` that does not match the rank count and absurd thread counts are
//! refused (exit 2) before anything is written, an oversubscribed layout is warned about once,
//! an output directory that cannot be written is reported (exit 1) before the set-up, and
//! outputs never land outside the output directory.

use crate::support;

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

/// Spheres overlapping at the start: gids 0–1 by 20 % of their radius, 2–3 by 80 % of the
/// smaller one, 4–5 by 5 % (below the warning's 10 %). The set-up warns about the deep pairs.
const OVERLAPS: &str = r#"Scene(
    name: "overlaps",
    materials: [Frict(name: "s", young: 1e6, poisson: 0.3, friction_angle: 0.5, density: 1000.0)],
    spheres: [
        Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "s"),
        Sphere(pos: (0.018, 0.0, 0.0), radius: 0.01, material: "s"),
        Sphere(pos: (0.1, 0.0, 0.0), radius: 0.01, material: "s"),
        Sphere(pos: (0.1, 0.0, 0.011), radius: 0.005, material: "s"),
        Sphere(pos: (0.05, 0.0, 0.0), radius: 0.01, material: "s"),
        Sphere(pos: (0.0695, 0.0, 0.0), radius: 0.01, material: "s"),
    ],
    dt: PWave(0.1),
    run: Steps(10),
)"#;

/// An output directory that cannot be created is reported before the set-up, on 1 rank and
/// under `mpirun -n 2`: exit 1 (an I/O failure, not bad input), `DIR: cannot write the output
/// directory: <OS error>` once, and nothing from the set-up — the overlap warning that the
/// set-up of this scene prints (checked on a writable directory) does not appear. Tests run as
/// root, which writes into any mode-0555 directory: the directory is put under a regular file.
#[test]
fn unwritable_output_directory_is_reported_before_the_set_up() {
    let tmp = TempDir::new("cli-out");
    std::fs::write(tmp.0.join("scene.ron"), OVERLAPS).unwrap();
    std::fs::write(tmp.0.join("file"), "not a directory").unwrap();
    let o = demhpc(1, 1, &["--out", "ok", "scene.ron"], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        stderr(&o).contains("overlap by more than"),
        "{}",
        describe(&o)
    );
    let bad = tmp.0.join("file/out");
    let want = format!(
        "{}: cannot write the output directory: Not a directory",
        bad.display()
    );
    for ranks in [1, 2] {
        let t0 = std::time::Instant::now();
        let o = demhpc(
            ranks,
            1,
            &["--out", bad.to_str().unwrap(), "scene.ron"],
            &tmp.0,
        );
        assert!(
            t0.elapsed().as_secs() < 30,
            "{ranks} ranks: took {:?}",
            t0.elapsed()
        );
        assert_eq!(o.status.code(), Some(1), "{ranks} ranks: {}", describe(&o));
        let e = stderr(&o);
        assert_eq!(
            e.matches(&want).count(),
            1,
            "{ranks} ranks: {}",
            describe(&o)
        );
        assert!(!e.contains("overlap"), "set-up ran first: {}", describe(&o));
    }
    assert_eq!(entries(&tmp.0), ["file", "ok", "scene.ron"]);
}

/// A scene named `..` must not write into the working directory's parent (`output/..`): it is
/// refused (exit 2) before anything is written.
#[test]
fn scene_name_cannot_leave_the_output_directory() {
    let tmp = TempDir::new("cli-name");
    let cwd = tmp.0.join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let scene = OVERLAPS.replace("name: \"overlaps\"", "name: \"..\"");
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let o = demhpc(1, 1, &["../scene.ron"], &cwd);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(entries(&cwd).is_empty(), "wrote {:?}", entries(&cwd));
    assert_eq!(entries(&tmp.0), ["cwd", "scene.ron"]);
}

/// The set-up's overlap warning names the deepest pair and counts the deep ones, the same on
/// any layout (each pair judged once, on the rank owning its lower gid): OVERLAPS has two
/// pairs above 10 % of the smaller radius, gids 2–3 the deepest at 80 %.
#[test]
fn overlap_warning_names_the_deepest_pair() {
    let tmp = TempDir::new("cli-overlaps");
    std::fs::write(tmp.0.join("scene.ron"), OVERLAPS).unwrap();
    let want = "2 pair(s) of spheres overlap by more than 10 % of the smaller radius at the \
                start (a large initial force); the deepest: gid 2 and gid 3 (spheres[2] and \
                spheres[3]), by 80.0 % of the smaller radius";
    for (ranks, grid) in [(1, "1x1x1"), (2, "2x1x1"), (2, "1x1x2")] {
        let o = demhpc(
            ranks,
            1,
            &["--grid", grid, "--out", grid, "scene.ron"],
            &tmp.0,
        );
        assert_eq!(o.status.code(), Some(0), "{grid}: {}", describe(&o));
        assert_eq!(
            stderr(&o).matches(want).count(),
            1,
            "{grid}: {}",
            describe(&o)
        );
    }
}

/// The shipped scenes start without warnings (quiet mode prints warnings and errors only):
/// the CPM specimens' residual packing overlaps (up to 12 % of r) are not warned about, since
/// cohesive links take the initial distance as their equilibrium distance.
#[test]
fn shipped_scenes_start_without_warnings() {
    let tmp = TempDir::new("cli-shipped");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut names: Vec<String> = entries(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".ron"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        let s = scene_path(&name);
        let o = demhpc(1, 1, &["--steps", "1", "--out", &name, &s], &tmp.0);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", describe(&o));
        assert_eq!(stderr(&o), "", "{name}: {}", describe(&o));
    }
}

/// A Hertz scene whose fixed step exceeds 0.2 of the Rayleigh time is warned about (once, by
/// `demhpc check`, which is the set-up of a run); the shipped step and `PWave(1.0)` are not.
#[test]
fn hertz_step_beyond_the_rayleigh_bound_is_warned() {
    let tmp = TempDir::new("cli-rayleigh");
    let text = std::fs::read_to_string(scene_path("settle_hertz.ron")).unwrap();
    for (dt, warned) in [("Fixed(7e-6)", 0), ("Fixed(3e-5)", 1), ("PWave(1.0)", 0)] {
        let p = tmp.0.join("s.ron");
        std::fs::write(&p, text.replace("dt: Fixed(7e-6)", &format!("dt: {dt}"))).unwrap();
        let o = std::process::Command::new(BIN)
            .args(["check", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        assert_eq!(
            stderr(&o).matches("Rayleigh time").count(),
            warned,
            "{dt}: {}",
            describe(&o)
        );
    }
}

/// `demhpc ARGS` on `ranks` ranks (mpirun beyond 1) with `env` set, without `-q`.
fn logged(ranks: usize, args: &[&str], env: &[(&str, &str)], dir: &Path) -> Output {
    let mut cmd = match ranks {
        1 => std::process::Command::new(BIN),
        n => {
            let mut c = std::process::Command::new("mpirun");
            c.args(["--oversubscribe", "-n", &n.to_string(), BIN]);
            c
        }
    };
    cmd.args(["--threads", "1"]).args(args).current_dir(dir);
    mpi_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Issue 32, defect 11: `-v` (and `RUST_LOG=debug`) log what a user debugging a scene needs —
/// the rank grid and cuts chosen, why each neighbour rebuild happened, the balancing
/// decisions, the checkpoint's timings per rank — and `-vv` the per-step detail (`TRACE`);
/// without them none of it. 2 ranks (every rank logs its own lines at debug).
#[test]
fn verbose_flags_log_debug_and_trace_lines() {
    let tmp = TempDir::new("cli-verbose");
    std::fs::write(tmp.0.join("scene.ron"), settle_with_checkpoints(300, 1)).unwrap();
    let run = |flags: &[&str], env: &[(&str, &str)], out: &str| {
        let mut args = flags.to_vec();
        args.extend(["--steps", "2000", "--out", out, "scene.ron"]);
        let o = logged(2, &args, env, &tmp.0);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{flags:?} {env:?}: {}",
            describe(&o)
        );
        stderr(&o)
    };
    let lines = |err: &str, level: &str, needle: &str| {
        err.lines()
            .filter(|l| l.contains(&format!("[{level}")) && l.contains(needle))
            .count()
    };
    let plain = run(&[], &[], "o0");
    assert!(
        !plain.contains("[DEBUG") && !plain.contains("[TRACE"),
        "{plain}"
    );
    for (flags, env, out) in [
        (&["-v"][..], &[][..], "o1"),
        (&[][..], &[("RUST_LOG", "debug")][..], "o2"),
        (&["-vv"][..], &[][..], "o3"),
    ] {
        let err = run(flags, env, out);
        let ctx = format!("{flags:?} {env:?}:\n{err}");
        assert!(lines(&err, "DEBUG", "rank grid 2×1×1") >= 1, "{ctx}");
        assert!(lines(&err, "DEBUG", "cuts") >= 1, "{ctx}");
        assert!(lines(&err, "DEBUG", "rebuild at step") >= 2, "{ctx}");
        assert!(lines(&err, "DEBUG", "balance") >= 1, "{ctx}");
        for rank in [0, 1] {
            let per_rank = err.lines().any(|l| {
                l.contains("[DEBUG")
                    && l.contains("checkpoint")
                    && l.contains(&format!("rank {rank}:"))
            });
            assert!(per_rank, "no checkpoint timing of rank {rank}: {ctx}");
        }
        let trace = lines(&err, "TRACE", "step ");
        match flags.first() {
            Some(&"-vv") => assert!(trace >= 2000, "{trace} trace lines: {ctx}"),
            _ => assert_eq!(trace, 0, "{ctx}"),
        }
    }
}
