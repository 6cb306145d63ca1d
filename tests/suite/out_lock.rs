//! Two runs into one output directory (issue 32, defect 3): a Slurm requeue that starts while
//! the old job still writes, or a user starting the same command twice. The first run holds
//! an advisory lock on `OUT/.demhpc.lock` for its whole run (rank 0 takes it, every rank
//! agrees on the verdict); a second run into `OUT` exits 1 at its start, naming the process
//! and host that hold it, and touches nothing (before: the run that exited 0 could lose all its
//! `series.csv` rows, the other exited 1 naming a vanished file). The lock ends with the run.

use crate::support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// The small settle, run "forever" (stopped by a signal), a series row every 10 steps.
fn endless() -> String {
    SETTLE
        .replace("run: Steps(1)", "run: Steps(100000000)")
        .replace("series_every: 100", "series_every: 10")
}

/// Wait until `f` holds (a safety bound of 120 s, then fail with `what`).
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(120), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The first run, killed should the test fail while it runs.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

fn rows(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("series.csv"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_second_run_into_a_busy_output_directory_is_refused() {
    let tmp = TempDir::new("out_lock");
    std::fs::write(tmp.0.join("scene.ron"), endless()).unwrap();
    let out = tmp.0.join("out");
    // the first run: one process, so that the lock holder's pid is the child's
    let mut a = Running(
        command(1, 1, &["--out", "out", "scene.ron"], &tmp.0)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start demhpc"),
    );
    let mut a_err = a.0.stderr.take().unwrap();
    let a_log = std::thread::spawn(move || {
        let mut s = String::new();
        a_err.read_to_string(&mut s).ok();
        s
    });
    // in its step loop: some rows written
    wait_for("the first run writes rows", || rows(&out).len() >= 3);
    let want = format!(
        "{} is in use by process {} on host {}",
        out.display(),
        a.0.id(),
        host_name()
    );
    for ranks in [1, 2] {
        let before = rows(&out).len();
        let out_arg = out.to_str().unwrap();
        // (a finite run: before the lock it ran, into the first run's files)
        let args = ["--steps", "2000", "--out", out_arg, "scene.ron"];
        let o = demhpc(ranks, 1, &args, &tmp.0);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{ranks} ranks: {}", describe(&o));
        assert_eq!(
            err.matches(&want).count(),
            1,
            "{ranks} ranks: {}",
            describe(&o)
        );
        assert!(!err.contains("set-up:"), "{ranks} ranks: {}", describe(&o));
        // the first run's series is untouched and still growing
        wait_for("rows keep coming", || rows(&out).len() > before);
        let r = rows(&out);
        assert!(r[0].starts_with("step,"), "{r:?}");
        assert_eq!(
            r.iter().filter(|l| l.starts_with("step,")).count(),
            1,
            "{ranks} ranks: the series was restarted: {r:?}"
        );
    }
    // stop the first run: it checkpoints and ends normally, its rows intact
    // SAFETY: a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(a.0.id() as i32, libc::SIGUSR1) }, 0);
    let status = a.0.wait().unwrap();
    let log = a_log.join().unwrap();
    assert_eq!(status.code(), Some(0), "{log}");
    let r = rows(&out);
    let steps: Vec<u64> = r[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(steps.len() >= 3, "{r:?}");
    assert!(
        steps.windows(2).all(|w| w[1] == w[0] + 10),
        "rows lost or repeated: {steps:?}"
    );
    // the lock ended with the run: the next run into OUT starts (and a restart from the
    // checkpoint the signal wrote continues there)
    let ck = std::fs::read_to_string(out.join("checkpoints/latest")).unwrap();
    let ck = out.join("checkpoints").join(ck.trim());
    let last = steps.last().unwrap() + 20;
    let o = demhpc(
        2,
        1,
        &[
            "--restart",
            ck.to_str().unwrap(),
            "--steps",
            &last.to_string(),
        ],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = demhpc(
        1,
        1,
        &["--steps", "10", "--out", "out", "scene.ron"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}
