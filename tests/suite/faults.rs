//! I/O faults (issue 18, acceptance 1): a write that fails on a full disk — on one rank or on
//! all, in MPI-IO or in the single-process driver — ends the job on every rank with exit 1
//! within seconds, naming the file and the reason; no segfault, no hang; the partial file is
//! removed, `latest` still names the last good checkpoint, and a restart from it continues
//! bitwise like a run that never failed.
//!
//! The failures are real: `DEMHPC_FAULT_FSIZE=STEP:BYTES[:RANK]` sets `RLIMIT_FSIZE` from the
//! outputs of step STEP on (writes past BYTES fail with EFBIG inside HDF5 and MPI-IO, as on a
//! full disk), and, where this machine lets the test mount one (root), a 1 MB tmpfs fills up
//! for real (ENOSPC).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use support::*;

/// Small settle with checkpoints every 300 steps (keeping `keep`) and no snapshots but the
/// final one: the checkpoint is the first file a fault at step 600 hits.
fn scene(keep: u64, snapshots: bool) -> String {
    SETTLE.replace(
        "output: Output(series_every: 100),",
        &format!(
            "output: Output(series_every: 100, snapshot_every: {}),\n    \
             checkpoint: (every: 300, keep: {keep}),",
            if snapshots { 300 } else { 0 }
        ),
    )
}

fn latest(out: &Path) -> PathBuf {
    let d = out.join("checkpoints");
    let name = std::fs::read_to_string(d.join("latest")).expect("latest pointer");
    d.join(name.trim())
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default()
}

/// Run and time it (the job must end by itself within `limit`; a hang fails the test by the
/// timeout of `run_limited`).
fn run_limited(
    ranks: usize,
    args: &[&str],
    cwd: &Path,
    env: &[(&str, &str)],
    limit: Duration,
) -> (Output, Duration) {
    let mut cmd = command(ranks, 1, args, cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()).ok());
    match rx.recv_timeout(limit) {
        Ok(o) => (o.expect("wait"), t.elapsed()),
        Err(_) => {
            // SAFETY: kill(2) on the child we spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{args:?} on {ranks} rank(s) did not end within {limit:?}: a hang");
        }
    }
}

/// The failed run's guarantees: exit 1, a message naming `file_part` and a reason, no crash,
/// no partial file, `latest` = the checkpoint of `good_step` and `demhpc info` finds it sound.
fn check_failure(o: &Output, took: Duration, out: &Path, file_part: &str, good_step: u64) {
    let err = String::from_utf8_lossy(&o.stderr);
    let ctx = describe(o);
    assert_eq!(o.status.code(), Some(1), "exit code must be 1: {ctx}");
    assert!(took < Duration::from_secs(30), "took {took:?}: {ctx}");
    for crash in [
        "Segmentation",
        "signal 11",
        "SIGSEGV",
        "core dumped",
        "panicked",
    ] {
        assert!(!err.contains(crash), "crashed ({crash}): {ctx}");
    }
    let line = err
        .lines()
        .find(|l| l.contains("[ERROR]") && l.contains(file_part))
        .unwrap_or_else(|| panic!("no error line naming {file_part}: {ctx}"));
    assert!(
        ["space", "ulimit", "limited", "File too large"]
            .iter()
            .any(|w| line.contains(w)),
        "the error must say why: {line}"
    );
    let ck = out.join("checkpoints");
    assert_eq!(leftovers(&ck), Vec::<String>::new(), "partial files left");
    assert_eq!(leftovers(&out.join("snapshots")), Vec::<String>::new());
    let l = latest(out);
    assert!(
        l.ends_with(format!("ckpt_{good_step:010}.h5")),
        "latest must stay on step {good_step}: {}",
        l.display()
    );
    let info = std::process::Command::new(BIN)
        .args(["info", l.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(info.status.code(), Some(0), "info: {}", describe(&info));
    assert!(String::from_utf8_lossy(&info.stdout).contains("integrity       ok"));
}

fn ok(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}: {}", describe(o));
}

/// The restarted run and an uninterrupted one end in the same particle state (bits of the
/// final snapshot).
fn same_end(a: &Path, b: &Path, step: u64) {
    let snap = |d: &Path| d.join(format!("snapshots/snap_{step:09}.h5"));
    let (sa, sb) = (read_state(&snap(a)), read_state(&snap(b)));
    assert_eq!(sa.gid.len(), 512);
    assert!(
        sa == sb,
        "restart from `latest` differs from the uninterrupted run"
    );
}

/// Acceptance 18.1 through the fault hook: the checkpoint of step 600 fails on 1 rank, and on
/// 2 ranks with the fault on rank 0, on rank 1 and on both (in MPI-IO the aggregator writes
/// for both ranks, so either rank may see the error first); the job ends with exit 1, and a
/// restart from `latest` (step 300) to step 900 ends bitwise like an uninterrupted run.
#[test]
fn a_failed_checkpoint_write_ends_every_rank_cleanly_and_latest_restarts_bitwise() {
    let tmp = TempDir::new("fault-ckpt");
    std::fs::write(tmp.0.join("scene.ron"), scene(2, false)).unwrap();
    for (ranks, spec) in [
        (1, "600:40000"),
        (2, "600:40000:0"),
        (2, "600:40000:1"),
        (2, "600:40000"),
    ] {
        let out = format!("fail_{ranks}_{}", spec.replace(':', "_"));
        let (o, took) = run_limited(
            ranks,
            &["--steps", "900", "--out", &out, "scene.ron"],
            &tmp.0,
            &[("DEMHPC_FAULT_FSIZE", spec)],
            Duration::from_secs(120),
        );
        eprintln!(
            "{ranks} rank(s), fault {spec}: exit {:?} in {took:?}",
            o.status.code()
        );
        let out = tmp.0.join(out);
        check_failure(&o, took, &out, "ckpt_0000000600.h5", 300);
        // continue from `latest` in the same directory, to the end
        let l = latest(&out);
        let args = ["--restart", l.to_str().unwrap(), "--steps", "900", "--out"];
        let mut args = args.to_vec();
        args.push(out.to_str().unwrap());
        ok(&demhpc(ranks, 1, &args, &tmp.0), "restart from latest");
        let reference = tmp.0.join(format!("ref_{ranks}"));
        if !reference.exists() {
            let r = reference.to_str().unwrap();
            ok(
                &demhpc(
                    ranks,
                    1,
                    &["--steps", "900", "--out", r, "scene.ron"],
                    &tmp.0,
                ),
                "uninterrupted run",
            );
        }
        same_end(&reference, &out, 900);
    }
}

/// A snapshot that cannot be written ends the run the same way (the snapshot of step 600 is
/// the first file written at that step), on 2 ranks.
#[test]
fn a_failed_snapshot_write_ends_every_rank_cleanly() {
    let tmp = TempDir::new("fault-snap");
    std::fs::write(tmp.0.join("scene.ron"), scene(2, true)).unwrap();
    let (o, took) = run_limited(
        2,
        &["--steps", "900", "--out", "o", "scene.ron"],
        &tmp.0,
        &[("DEMHPC_FAULT_FSIZE", "600:20000:1")],
        Duration::from_secs(120),
    );
    check_failure(&o, took, &tmp.0.join("o"), "snap_000000600.h5", 300);
}

/// A small tmpfs mounted by the test (when this machine allows it: root with CAP_SYS_ADMIN),
/// unmounted however the test ends.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        st.success().then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        std::process::Command::new("umount")
            .arg(&self.0)
            .status()
            .ok();
    }
}

/// A real full disk: a 1 MB tmpfs that holds a few checkpoints of the small settle (~110 kB each,
/// all kept) fills up mid-run, on 1 and on 2 ranks. The run ends with exit 1 naming "no
/// space", and a restart from `latest` on a roomier disk ends like an uninterrupted run.
/// Skipped (with a message) where the test may not mount a file system.
#[test]
fn a_full_file_system_ends_the_run_cleanly() {
    let tmp = TempDir::new("fault-tmpfs");
    std::fs::write(tmp.0.join("scene.ron"), scene(100, false)).unwrap();
    for ranks in [1, 2] {
        let mnt = tmp.0.join(format!("disk{ranks}"));
        let Some(_disk) = Tmpfs::mount(&mnt, "1m") else {
            eprintln!("SKIPPED a_full_file_system_ends_the_run_cleanly: cannot mount a tmpfs here");
            return;
        };
        let out = mnt.join("o");
        let (o, took) = run_limited(
            ranks,
            &[
                "--steps",
                "6000",
                "--out",
                out.to_str().unwrap(),
                "scene.ron",
            ],
            &tmp.0,
            &[],
            Duration::from_secs(120),
        );
        let l = latest(&out);
        let good: u64 = l
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.strip_prefix("ckpt_"))
            .and_then(|s| s.parse().ok())
            .expect("latest names a checkpoint");
        eprintln!(
            "{ranks} rank(s): disk full after step {good}, exit {:?}",
            o.status.code()
        );
        assert!((300..6000).contains(&good), "latest at step {good}");
        check_failure(&o, took, &out, &format!("ckpt_{:010}.h5", good + 300), good);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("space"),
            "the reason is a full disk: {}",
            describe(&o)
        );
        // continue elsewhere (the disk is full) from the last good checkpoint
        let cont = tmp.0.join(format!("cont{ranks}"));
        let args = [
            "--restart",
            l.to_str().unwrap(),
            "--steps",
            "6000",
            "--out",
            cont.to_str().unwrap(),
        ];
        ok(&demhpc(ranks, 1, &args, &tmp.0), "restart from latest");
        let reference = tmp.0.join(format!("ref{ranks}"));
        let r = reference.to_str().unwrap();
        ok(
            &demhpc(
                ranks,
                1,
                &["--steps", "6000", "--out", r, "scene.ron"],
                &tmp.0,
            ),
            "uninterrupted run",
        );
        same_end(&reference, &cont, 6000);
    }
}
