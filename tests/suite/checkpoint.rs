//! Checkpoint and restart (issue #4), through the real binary, real `mpirun` and real parallel
//! HDF5 files: bit-exact continuation on the same and on other rank counts, signals, crashes
//! mid-write, corrupt files, `demhpc info`, incompatible scenes.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use support::*;

fn ok(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}: {}", describe(o));
}

/// The file named by `dir/checkpoints/latest`.
fn latest(out: &Path) -> PathBuf {
    let d = out.join("checkpoints");
    let name = std::fs::read_to_string(d.join("latest")).expect("latest pointer");
    d.join(name.trim())
}

fn ckpt(out: &Path, step: u64) -> PathBuf {
    out.join(format!("checkpoints/ckpt_{step:010}.h5"))
}

fn snap(out: &Path, step: u64) -> PathBuf {
    out.join(format!("snapshots/snap_{step:09}.h5"))
}

/// Every contact of a checkpoint, (gid1, gid2, image, state bits), sorted: the histories.
fn contacts(file: &Path) -> Vec<(u64, u64, Vec<i32>, Vec<u64>)> {
    let f = hdf5::File::open(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut all = Vec::new();
    for (group, key2) in [("contacts", "gid2"), ("wall_contacts", "wall")] {
        let g = f.group(group).unwrap();
        let a = g
            .dataset(if key2 == "wall" { "gid" } else { "gid1" })
            .unwrap();
        let a = a.read_raw::<u64>().unwrap();
        let b: Vec<u64> = if key2 == "wall" {
            let w = g.dataset("wall").unwrap().read_raw::<u64>().unwrap();
            w.iter().map(|&w| u64::MAX - w).collect()
        } else {
            g.dataset("gid2").unwrap().read_raw::<u64>().unwrap()
        };
        let image = match key2 {
            "wall" => vec![0; 3 * a.len()],
            _ => g.dataset("image").unwrap().read_raw::<i32>().unwrap(),
        };
        let st = g.dataset("state").unwrap();
        let w = st.shape()[1];
        let st = st.read_raw::<f64>().unwrap();
        for k in 0..a.len() {
            all.push((
                a[k],
                b[k],
                image[3 * k..3 * k + 3].to_vec(),
                st[w * k..w * (k + 1)].iter().map(|x| x.to_bits()).collect(),
            ));
        }
    }
    all.sort();
    all
}

/// Write `scene` into `tmp` and run it to `steps` on `ranks` ranks into `out`.
fn run(tmp: &TempDir, scene: &str, ranks: usize, steps: u64, out: &str, extra: &[&str]) {
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let s = steps.to_string();
    let mut args = vec!["--steps", &s, "--out", out];
    args.extend_from_slice(extra);
    args.push("scene.ron");
    ok(&demhpc(ranks, 1, &args, &tmp.0), out);
}

/// Restart `file` on `ranks` ranks and run to `steps` into `out`.
fn restart(tmp: &TempDir, file: &Path, ranks: usize, steps: u64, out: &str) {
    let s = steps.to_string();
    let f = file.to_str().unwrap();
    let args = ["--restart", f, "--steps", &s, "--out", out];
    ok(&demhpc(ranks, 1, &args, &tmp.0), &format!("restart {out}"));
}

/// The uninterrupted run `a` and the restarted run `b` end in the same state: particles,
/// contact histories (from the final checkpoints) and the whole time series.
fn assert_same_end(tmp: &TempDir, a: &str, b: &str, step: u64) {
    let (a, b) = (tmp.0.join(a), tmp.0.join(b));
    let (sa, sb) = (read_state(&snap(&a, step)), read_state(&snap(&b, step)));
    eprintln!("hash {:016x} vs {:016x}", hash(&sa), hash(&sb));
    assert_eq!(sa.gid, sb.gid, "particle ids differ");
    assert!(
        sa == sb,
        "restarted state differs from the uninterrupted run"
    );
    let (ca, cb) = (contacts(&ckpt(&a, step)), contacts(&ckpt(&b, step)));
    assert!(!ca.is_empty());
    assert!(ca == cb, "contact histories differ");
    // The interrupted run wrote one extra row at the step it stopped at (every run ends with
    // a row); apart from it the series must be the same rows, none duplicated.
    let series = |d: &Path| std::fs::read_to_string(d.join("series.csv")).unwrap();
    let (sa, sb) = (series(&a), series(&b));
    let steps = |s: &str| -> Vec<u64> {
        s.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect()
    };
    let (ka, kb) = (steps(&sa), steps(&sb));
    assert!(
        kb.windows(2).all(|w| w[0] < w[1]),
        "rows out of order or duplicated: {kb:?}"
    );
    let extra: Vec<&u64> = kb.iter().filter(|k| !ka.contains(k)).collect();
    assert!(
        extra.len() <= 1,
        "rows {extra:?} are not in the uninterrupted series"
    );
    let kept: Vec<&str> = sb
        .lines()
        .filter(|l| !extra.iter().any(|k| l.starts_with(&format!("{k},"))))
        .collect();
    assert_eq!(
        sa.lines().collect::<Vec<_>>(),
        kept,
        "series.csv rows differ"
    );
}

/// Acceptance 1 (settle): 2N steps = N steps, checkpoint, restart, N steps — bitwise, on 1 rank
/// and on 2 ranks (default mode, same rank count). The restart writes into the same output
/// directory: the series continues without duplicated rows and the XDMF lists every snapshot
/// once.
#[test]
fn settle_restart_continues_bitwise() {
    let tmp = TempDir::new("ck-settle");
    let scene = settle_with_checkpoints(0, 2);
    for ranks in [1, 2] {
        let (full, part) = (format!("full{ranks}"), format!("part{ranks}"));
        run(&tmp, &scene, ranks, 1200, &full, &[]);
        // stop at 750, then (as a user might) restart from it after a longer aborted attempt
        run(&tmp, &scene, ranks, 750, &part, &[]);
        let at = latest(&tmp.0.join(&part));
        assert_eq!(at, ckpt(&tmp.0.join(&part), 750));
        restart(&tmp, &at, ranks, 1200, &part);
        assert_same_end(&tmp, &full, &part, 1200);
        let xmf = std::fs::read_to_string(tmp.0.join(&part).join("snapshots.xmf")).unwrap();
        for step in [300, 600, 750, 900, 1200] {
            let name = format!("snap_{step:09}.h5:/radius");
            assert_eq!(xmf.matches(&name).count(), 1, "{name} in the XDMF once");
        }
    }
}

/// Acceptance 1 (sliding contacts): the chute on 2 ranks, restarted half-way.
#[test]
fn chute_restart_keeps_sliding_histories() {
    let tmp = TempDir::new("ck-chute");
    let scene = chute();
    run(&tmp, &scene, 2, 240, "full", &[]);
    run(&tmp, &scene, 2, 120, "part", &[]);
    let at = ckpt(&tmp.0.join("part"), 120);
    let sliding = contacts(&at);
    assert!(sliding.len() > 10_000, "{} contacts", sliding.len());
    restart(&tmp, &at, 2, 240, "part");
    assert_same_end(&tmp, "full", "part", 240);
}

/// Acceptance 2: reproducible mode, checkpoint written by 3 ranks, restarted on 1, 2 and 4
/// ranks (into fresh output directories) — each bitwise identical to the uninterrupted run.
#[test]
fn reproducible_checkpoint_restarts_on_any_rank_count() {
    let tmp = TempDir::new("ck-ranks");
    let scene = settle_with_checkpoints(600, 3);
    run(&tmp, &scene, 3, 1200, "r3", &["--reproducible"]);
    let mid = ckpt(&tmp.0.join("r3"), 600);
    let info = demhpc(1, 1, &["info", mid.to_str().unwrap()], &tmp.0);
    ok(&info, "info");
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("on 3 rank(s)"), "{text}");
    assert!(text.contains("reproducible    true"), "{text}");
    let want = read_state(&snap(&tmp.0.join("r3"), 1200));
    let want_contacts = contacts(&ckpt(&tmp.0.join("r3"), 1200));
    for ranks in [1, 2, 4] {
        let out = format!("from3_on{ranks}");
        restart(&tmp, &mid, ranks, 1200, &out);
        let got = read_state(&snap(&tmp.0.join(&out), 1200));
        eprintln!("{ranks} ranks: hash {:016x}", hash(&got));
        assert!(got == want, "restart on {ranks} ranks differs");
        let c = contacts(&ckpt(&tmp.0.join(&out), 1200));
        assert!(c == want_contacts, "contacts differ on {ranks} ranks");
    }
}

/// Start a long run in the background, wait until it is stepping (the series has rows), send
/// `signal` to the launcher, and return its output.
fn signal_mid_run(tmp: &TempDir, ranks: usize, signal: i32, out: &str) -> Output {
    std::fs::write(tmp.0.join("scene.ron"), settle_with_checkpoints(0, 2)).unwrap();
    let args = ["--steps", "1000000", "--out", out, "scene.ron"];
    let child = command(ranks, 1, &args, &tmp.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let series = tmp.0.join(out).join("series.csv");
    let t0 = Instant::now();
    while std::fs::read_to_string(&series).map_or(0, |s| s.lines().count()) < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill() sends a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    child.wait_with_output().unwrap()
}

/// The step at which a signalled run stopped, from its "stopped by … at step N" line.
fn stopped_at(o: &Output, signal: &str) -> u64 {
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("stopped by {signal} at step ")))
        .unwrap_or_else(|| panic!("no stop message: {}", describe(o)));
    line.split_whitespace()
        .nth(5)
        .unwrap()
        .trim_end_matches(';')
        .parse()
        .unwrap()
}

/// Acceptance 3: SIGTERM sent to the solver (1 rank) and to `mpirun` (2 ranks), and SIGUSR1
/// (what Slurm's `--signal` sends) to `mpirun`: every rank finishes its step, a valid checkpoint
/// is written, the solver exits 0, and the restart finishes exactly like an uninterrupted run.
///
/// `mpirun` itself forwards SIGUSR1 and exits with the ranks' status (0), but on SIGTERM
/// OpenMPI's launcher terminates the job by its own rule: it sends the ranks SIGCONT, SIGTERM
/// `odls_base_sigkill_timeout` seconds later (1 s; they checkpoint and exit 0, as the stop
/// message printed by rank 0 shows), SIGKILL as long again after, and reports 1 itself
/// whatever the ranks did. Under Slurm, `srun` forwards SIGTERM and returns the ranks' 0.
#[test]
fn signals_checkpoint_and_restart_finishes_identically() {
    let tmp = TempDir::new("ck-signal");
    for (ranks, sig, name) in [
        (1, libc::SIGTERM, "SIGTERM"),
        (2, libc::SIGUSR1, "SIGUSR1"),
        (2, libc::SIGTERM, "SIGTERM"),
    ] {
        let out = format!("sig{ranks}_{name}");
        let o = signal_mid_run(&tmp, ranks, sig, &out);
        let code = o.status.code();
        match (ranks, sig) {
            (2, libc::SIGTERM) => assert!(code.is_some(), "killed: {}", describe(&o)),
            _ => assert_eq!(code, Some(0), "{}", describe(&o)),
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("exited on signal"),
            "a rank was killed: {err}"
        );
        let stop = stopped_at(&o, name);
        let at = latest(&tmp.0.join(&out));
        assert_eq!(at, ckpt(&tmp.0.join(&out), stop));
        let end = stop + 300;
        restart(&tmp, &at, ranks, end, &out);
        run(&tmp, &settle_with_checkpoints(0, 2), ranks, end, "ref", &[]);
        let (a, b) = (
            read_state(&snap(&tmp.0.join("ref"), end)),
            read_state(&snap(&tmp.0.join(&out), end)),
        );
        assert!(
            a == b,
            "{ranks} ranks, {name}: restart differs from the uninterrupted run"
        );
        std::fs::remove_dir_all(tmp.0.join("ref")).unwrap();
    }
}

/// SIGUSR2 stops like SIGUSR1 (issue 18; before it had a handler it killed the ranks, exit
/// 140, no checkpoint): sent to the solver (1 rank) and to `mpirun -n 2` (which forwards it),
/// every rank finishes its step, the checkpoint at that step is published, the exit status is
/// 0, and the checkpoint restarts.
#[test]
fn sigusr2_checkpoints_and_exits_0() {
    let tmp = TempDir::new("ck-usr2");
    for ranks in [1, 2] {
        let out = format!("usr2_{ranks}");
        let o = signal_mid_run(&tmp, ranks, libc::SIGUSR2, &out);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let stop = stopped_at(&o, "SIGUSR2");
        let at = latest(&tmp.0.join(&out));
        assert_eq!(at, ckpt(&tmp.0.join(&out), stop));
        restart(&tmp, &at, ranks, stop + 20, &out);
        assert!(ckpt(&tmp.0.join(&out), stop + 20).exists());
    }
}

/// A restart without `--out` continues the run's own outputs (issue 18): started from another
/// directory with a relative path to `OUT/checkpoints/ckpt_….h5`, it writes into `OUT` — the
/// series goes on (one header, rows in order, the old rows kept), the next checkpoint lands
/// beside the first — and creates nothing in its working directory. A checkpoint copied out of
/// that layout restarts into `output/<name>/` with a warning naming `--out`.
#[test]
fn restart_without_out_continues_in_the_run_directory() {
    let tmp = TempDir::new("ck-noout");
    let (run_dir, other) = (tmp.0.join("run"), tmp.0.join("other"));
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::create_dir(&other).unwrap();
    std::fs::write(run_dir.join("scene.ron"), settle_with_checkpoints(0, 2)).unwrap();
    ok(
        &demhpc(1, 1, &["--steps", "200", "scene.ron"], &run_dir),
        "first run",
    );
    let out = run_dir.join("output/scene");
    let series = || std::fs::read_to_string(out.join("series.csv")).unwrap();
    let before = series();
    let ck = "../run/output/scene/checkpoints/ckpt_0000000200.h5";
    let o = demhpc(1, 1, &["--restart", ck, "--steps", "400"], &other);
    ok(&o, "restart without --out");
    assert!(
        std::fs::read_dir(&other).unwrap().next().is_none(),
        "the restart wrote into its working directory"
    );
    assert!(ckpt(&out, 400).exists());
    let after = series();
    assert!(
        after.starts_with(&before),
        "old rows changed:\n{before}\n{after}"
    );
    let steps: Vec<&str> = after
        .lines()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(steps, ["step", "100", "200", "300", "400"], "{after}");
    // The same checkpoint outside an output directory: output/<name>/ of the working directory.
    std::fs::copy(ckpt(&out, 400), tmp.0.join("copy.h5")).unwrap();
    let o = demhpc(1, 1, &["--restart", "../copy.h5", "--steps", "500"], &other);
    ok(&o, "restart of a copy");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("output/scene/") && err.contains("--out"),
        "{err}"
    );
    let series = std::fs::read_to_string(other.join("output/scene/series.csv")).unwrap();
    assert_eq!(series.lines().count(), 2, "{series}");
}

/// Acceptance 4: a process SIGKILLed while writing a checkpoint (half-way through the file,
/// injected by `DEMHPC_FAULT_KILL_IN_CHECKPOINT`) leaves the previous checkpoint readable and
/// `latest` pointing to it; the restart from `latest` finishes like an uninterrupted run, and
/// the next successful checkpoint clears the partial `.tmp`.
#[test]
fn sigkill_while_writing_keeps_previous_checkpoint() {
    let tmp = TempDir::new("ck-kill");
    let scene = settle_with_checkpoints(200, 5);
    std::fs::write(tmp.0.join("scene.ron"), &scene).unwrap();
    let args = ["--steps", "1000", "--out", "crash", "scene.ron"];
    let o = command(1, 1, &args, &tmp.0)
        .env("DEMHPC_FAULT_KILL_IN_CHECKPOINT", "600")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{}", describe(&o));
    let out = tmp.0.join("crash");
    let partial = out.join("checkpoints/ckpt_0000000600.h5.tmp");
    assert!(partial.exists(), "the write was interrupted mid-file");
    assert!(!ckpt(&out, 600).exists());
    assert_eq!(
        latest(&out),
        ckpt(&out, 400),
        "latest still points to step 400"
    );
    let info = demhpc(1, 1, &["info", latest(&out).to_str().unwrap()], &tmp.0);
    ok(&info, "info on the previous checkpoint");
    assert!(String::from_utf8_lossy(&info.stdout).contains("step            400"));
    restart(&tmp, &latest(&out), 1, 1000, "crash");
    assert!(!partial.exists(), "the partial file was cleaned up");
    run(&tmp, &scene, 1, 1000, "ref", &[]);
    let (a, b) = (
        read_state(&snap(&tmp.0.join("ref"), 1000)),
        read_state(&snap(&out, 1000)),
    );
    assert!(
        a == b,
        "restart after the crash differs from the uninterrupted run"
    );
}

/// Acceptance 4: truncated, random-byte, foreign (a snapshot) and missing files given to
/// `--restart` and `info` exit non-zero with a clear message naming the file, no panic.
#[test]
fn corrupt_checkpoints_are_refused_clearly() {
    let tmp = TempDir::new("ck-corrupt");
    run(&tmp, &settle_with_checkpoints(0, 1), 1, 300, "good", &[]);
    let good = std::fs::read(latest(&tmp.0.join("good"))).unwrap();
    std::fs::write(tmp.0.join("truncated.h5"), &good[..good.len() / 2]).unwrap();
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let noise: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(tmp.0.join("random.h5"), noise).unwrap();
    let snapshot = snap(&tmp.0.join("good"), 300);
    for file in [
        "truncated.h5",
        "random.h5",
        snapshot.to_str().unwrap(),
        "missing.h5",
    ] {
        for args in [vec!["info", file], vec!["--restart", file, "--out", "x"]] {
            let o = demhpc(1, 1, &args, &tmp.0);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(
                err.contains(file),
                "{args:?}: the message names the file: {err}"
            );
            assert!(
                err.contains("not a readable demhpc checkpoint")
                    || err.contains("not a demhpc checkpoint")
                    || err.contains("damaged checkpoint")
                    || err.contains("No such file"),
                "{args:?}: {err}"
            );
        }
    }
    assert!(
        !tmp.0.join("x").exists(),
        "nothing written by a refused restart"
    );
}

/// `info` names everything the issue lists; h5dump reads the file (format attributes).
#[test]
fn info_and_h5dump_describe_a_checkpoint() {
    let tmp = TempDir::new("ck-info");
    run(&tmp, &settle_with_checkpoints(0, 1), 2, 300, "o", &[]);
    let f = latest(&tmp.0.join("o"));
    let o = demhpc(1, 1, &["info", f.to_str().unwrap()], &tmp.0);
    ok(&o, "info");
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "demhpc-checkpoint version 4",
        "on 2 rank(s)",
        "step            300",
        "particles       512",
        "sphere-sphere",
        "sphere-wall",
        "integrity       ok: checksums of every dataset verified",
    ] {
        assert!(text.contains(want), "`{want}` missing in:\n{text}");
    }
    let dump = std::process::Command::new("h5dump")
        .args([
            "-a",
            "/format_version",
            "-d",
            "/particles/gid",
            "-a",
            "/particles/gid/crc32c",
        ])
        .arg(&f)
        .output()
        .expect("h5dump (hdf5-tools) installed by scripts/setup.sh");
    let d = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.status.success(), "{d}");
    assert!(d.contains("DATASPACE  SIMPLE { ( 512 ) / ( 512 ) }"), "{d}");
    assert!(d.contains("(0): 4"), "format_version 4: {d}");
    assert!(
        d.contains("ATTRIBUTE \"crc32c\""),
        "checksum attribute: {d}"
    );
}

/// A scene that changes the physics is refused at restart (exit 2, the field named, nothing
/// written); one that changes only run length and outputs is accepted.
#[test]
fn restart_scene_must_be_compatible() {
    let tmp = TempDir::new("ck-compat");
    let scene = settle_with_checkpoints(0, 1);
    run(&tmp, &scene, 1, 300, "o", &[]);
    let f = latest(&tmp.0.join("o"));
    let fs = f.to_str().unwrap();
    std::fs::write(
        tmp.0.join("stiffer.ron"),
        scene.replace("young: 1e7", "young: 2e7"),
    )
    .unwrap();
    let o = demhpc(
        1,
        1,
        &["--restart", fs, "--out", "bad", "stiffer.ron"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("changes materials"), "{err}");
    assert!(!tmp.0.join("bad").exists());
    let longer = scene.replace("series_every: 100", "series_every: 50");
    std::fs::write(tmp.0.join("longer.ron"), longer).unwrap();
    let args = [
        "--restart",
        fs,
        "--steps",
        "400",
        "--out",
        "o",
        "longer.ron",
    ];
    ok(&demhpc(1, 1, &args, &tmp.0), "compatible restart");
    assert!(snap(&tmp.0.join("o"), 400).exists());
}

/// A published checkpoint is complete the moment `latest` names it, not only when the writer
/// exits (the HDF5 file is closed before the rename): a copy taken while the 2-rank job is still
/// running is described by `info` and restarts.
#[test]
fn published_checkpoint_is_complete_while_the_job_runs() {
    let tmp = TempDir::new("ck-live");
    std::fs::write(tmp.0.join("scene.ron"), settle_with_checkpoints(300, 3)).unwrap();
    let args = ["--steps", "1000000", "--out", "live", "scene.ron"];
    let mut child = command(2, 1, &args, &tmp.0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = tmp.0.join("live/checkpoints");
    let t0 = Instant::now();
    let copy = tmp.0.join("copy.h5");
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no second checkpoint"
        );
        // Published means named by `latest` (the file itself appears by rename just before the
        // pointer is updated): wait until it names a checkpoint after the first one.
        let named = std::fs::read_to_string(dir.join("latest")).unwrap_or_default();
        let named = named.trim();
        let first = ckpt(Path::new(""), 300);
        if !named.is_empty()
            && Some(std::ffi::OsStr::new(named)) != first.file_name()
            && std::fs::copy(dir.join(named), &copy).is_ok()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill() sends a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGUSR1);
    }
    child.wait().unwrap();
    let info = demhpc(1, 1, &["info", "copy.h5"], &tmp.0);
    ok(&info, "info on the live copy");
    let text = String::from_utf8_lossy(&info.stdout);
    let step: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("step"))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(step >= 600 && step.is_multiple_of(300), "{text}");
    restart(&tmp, &copy, 2, step + 50, "cont");
}

/// A restart started from another directory finds the scene's data files: the checkpoint
/// stores the scene's absolute path (the chute reads `../bench/data/data.chute` relative to
/// `scenes/chute.ron`, given here as a relative path from the repository root).
#[test]
fn restart_from_another_directory_finds_the_data_files() {
    let tmp = TempDir::new("ck-cwd");
    let out = tmp.0.join("o");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = demhpc(
        1,
        1,
        &[
            "--steps",
            "20",
            "--out",
            out.to_str().unwrap(),
            "scenes/chute.ron",
        ],
        root,
    );
    ok(&o, "chute from the repository root");
    restart(&tmp, &ckpt(&out, 20), 1, 30, "o");
    assert!(ckpt(&out, 30).exists());
}

/// Tags (issue 20): a `TextFile` with a 5th column tags its spheres; the tags go through
/// migration (2 ranks), a checkpoint (format 3, `particles/tag`) and a restart on 1 rank into
/// the snapshot's `tag`; a version-2 file (written through the test hook, as demhpc wrote
/// before tags) restarts with every tag 0.
#[test]
fn tags_survive_checkpoints_and_old_files_read_as_zero() {
    let tmp = TempDir::new("ck-tags");
    let mut txt = String::from("# x y z r tag\n");
    for k in 0..27u64 {
        let (i, j, l) = (k % 3, (k / 3) % 3, k / 9);
        let x = [i, j, l].map(|c| 0.01 + 0.021 * c as f64);
        let tag = if k % 4 == 0 {
            String::new()
        } else {
            format!(" {}", 100 + k)
        };
        txt += &format!("{} {} {} 0.01{tag}\n", x[0], x[1], x[2]);
    }
    std::fs::write(tmp.0.join("s.txt"), &txt).unwrap();
    let scene = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2500.0)],
    spheres: [TextFile(path: "s.txt", material: "g")],
    gravity: (0.0, 0.0, -9.81),
    dt: PWave(0.5),
    run: Steps(40),
    output: Output(series_every: 10, snapshot_every: 20),
    checkpoint: Checkpoint(every: 20, keep: 5),
    reproducible: true,
)"#;
    let expect: Vec<u32> = (0..27u32)
        .map(|k| if k % 4 == 0 { 0 } else { 100 + k })
        .collect();
    let tags = |f: &Path| -> Vec<u32> {
        let h = hdf5::File::open(f).unwrap();
        h.dataset("tag").unwrap().read_raw::<u32>().unwrap()
    };
    run(&tmp, scene, 2, 20, "a", &[]);
    assert_eq!(tags(&snap(&tmp.0.join("a"), 20)), expect);
    let ck = ckpt(&tmp.0.join("a"), 20);
    let h = hdf5::File::open(&ck).unwrap();
    assert_eq!(
        h.attr("format_version")
            .unwrap()
            .read_scalar::<u64>()
            .unwrap(),
        4
    );
    drop(h);
    restart(&tmp, &ck, 1, 40, "a");
    assert_eq!(tags(&snap(&tmp.0.join("a"), 40)), expect);
    // A version-2 checkpoint: no tags, verified, restarts with tag 0 everywhere.
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let mut cmd = command(2, 1, &["--steps", "20", "--out", "b", "scene.ron"], &tmp.0);
    let o = cmd
        .env("DEMHPC_TEST_CHECKPOINT_FORMAT", "2")
        .output()
        .unwrap();
    ok(&o, "format 2 writer");
    let ck2 = ckpt(&tmp.0.join("b"), 20);
    let h = hdf5::File::open(&ck2).unwrap();
    assert_eq!(
        h.attr("format_version")
            .unwrap()
            .read_scalar::<u64>()
            .unwrap(),
        2
    );
    assert!(h.dataset("particles/tag").is_err());
    drop(h);
    let o = demhpc(1, 1, &["info", ck2.to_str().unwrap()], &tmp.0);
    ok(&o, "info v2");
    assert!(String::from_utf8_lossy(&o.stdout).contains("integrity       ok"));
    restart(&tmp, &ck2, 1, 40, "b");
    assert_eq!(tags(&snap(&tmp.0.join("b"), 40)), vec![0; 27]);
}
