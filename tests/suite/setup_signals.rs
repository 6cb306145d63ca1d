//! A stop signal during a long set-up ends the job at once (issue 18): before the first step
//! the signals used to be looked at by nobody, and a large `DensePack` ran for minutes without a
//! word. The set-up loops tick `signals::SetupWatch`: SIGTERM ends the set-up within a moment
//! (exit 1, "stopped by SIGTERM during the set-up"), and a set-up longer than 2 s logs
//! `set-up: ...` progress lines. Nothing is written.

use crate::support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{TempDir, BIN};

/// A scene whose set-up takes ~20 s: a dense packing of ~85 000 spheres (its compaction costs
/// about 0.2 ms per sphere on one core since issue 19; 18 000 spheres were no longer enough).
const SLOW: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600.0)],
    spheres: [DensePack(material: "g", shape: Box(lo: (0.0, 0.0, 0.0), hi: (0.04, 0.04, 0.08)),
                        radius: 0.6e-3, porosity: 0.4, seed: 1)],
    dt: PWave(0.5),
    run: Steps(10),
)"#;

/// What a stopped child left: exit code, stderr, and seconds from the signal to its end.
struct Stopped {
    code: Option<i32>,
    stderr: String,
    after_signal: f64,
}

/// Start `cmd` (stderr captured), send SIGTERM to it after `delay`, and wait (at most 20 s).
fn stop_after(mut cmd: Command, delay: Duration) -> Stopped {
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    std::thread::sleep(delay);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the set-up ended before the signal: the scene is too small to test this"
    );
    // SAFETY: plain FFI: a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running 20 s after SIGTERM: {}",
                reader.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Stopped {
        code: status.code(),
        after_signal: sent.elapsed().as_secs_f64(),
        stderr: reader.join().unwrap_or_default(),
    }
}

fn scene(tmp: &TempDir) -> std::path::PathBuf {
    let p = tmp.0.join("slow.ron");
    std::fs::write(&p, SLOW).unwrap();
    p
}

/// `demhpc --out OUT SCENE` in `dir`, one process, info logging (progress lines).
fn single(dir: &Path, scene: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.args(["--threads", "1", "--out"])
        .arg(dir.join("out"))
        .arg(scene)
        .current_dir(dir)
        .env_remove("RUST_LOG");
    support::mpi_env(&mut c);
    c
}

/// SIGTERM one second into the set-up: exit 1 within 2 s, the message names the signal and
/// the set-up, no output directory.
#[test]
fn sigterm_stops_the_setup() {
    let tmp = TempDir::new("sigterm_stops_the_setup");
    let s = stop_after(single(&tmp.0, &scene(&tmp)), Duration::from_secs(1));
    assert_eq!(s.code, Some(1), "{}", s.stderr);
    assert!(
        s.after_signal < 2.0,
        "{:.2} s after SIGTERM",
        s.after_signal
    );
    assert!(
        s.stderr.contains("SIGTERM") && s.stderr.contains("set-up"),
        "{}",
        s.stderr
    );
    assert!(!tmp.0.join("out").exists(), "wrote the output directory");
}

/// A set-up longer than 2 s says that it is alive: a `set-up:` progress line on stderr.
#[test]
fn long_setup_logs_progress() {
    let tmp = TempDir::new("long_setup_logs_progress");
    let s = stop_after(single(&tmp.0, &scene(&tmp)), Duration::from_millis(4500));
    assert_eq!(s.code, Some(1), "{}", s.stderr);
    assert!(
        s.after_signal < 2.0,
        "{:.2} s after SIGTERM",
        s.after_signal
    );
    assert!(
        s.stderr.lines().any(|l| l.contains("set-up: DensePack")),
        "no progress line in 4.5 s of set-up: {}",
        s.stderr
    );
}

/// The same under `mpirun -n 2`: SIGTERM to mpirun (which passes it on to the ranks) ends the
/// job within a few seconds, with a non-zero exit code.
#[test]
fn sigterm_stops_the_setup_under_mpirun() {
    let tmp = TempDir::new("sigterm_stops_the_setup_under_mpirun");
    let out = tmp.0.join("out");
    let sc = scene(&tmp);
    let args = ["--out", out.to_str().unwrap(), sc.to_str().unwrap()];
    let cmd = support::command(2, 1, &args, &tmp.0);
    let s = stop_after(cmd, Duration::from_secs(2));
    assert!(
        s.code.is_some_and(|c| c != 0) || s.code.is_none(),
        "exit code {:?}: {}",
        s.code,
        s.stderr
    );
    assert!(
        s.after_signal < 5.0,
        "{:.2} s after SIGTERM",
        s.after_signal
    );
    assert!(!out.exists(), "wrote the output directory");
}

/// 512 000 spheres on a lattice: generated in about a second, then the overlap check and the
/// first neighbour build take seconds more — set-up that no stop flag was looked at in.
const MANY: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600.0)],
    spheres: [Lattice(material: "g", spacing: 0.0021, counts: (80, 80, 80), radius: 0.001, seed: 1)],
    dt: PWave(0.5),
    run: Steps(10),
)"#;

/// Issue 32, defect 10: SIGTERM once the spheres exist — during the overlap check, the
/// balancing or the first neighbour build — ends the set-up there: exit 1, "stopped by
/// SIGTERM during the set-up", no step run and no checkpoint written (before: the run went on
/// to its first step and wrote a checkpoint of it, 19–28 s for 2.9e7 spheres). The signal is
/// sent once the run's header line (`N particles, … steps 0 → 10`), printed just before the
/// first neighbour build, appears.
#[test]
fn sigterm_after_the_spheres_exist_stops_the_setup() {
    let tmp = TempDir::new("sigterm_after_generation");
    let p = tmp.0.join("many.ron");
    std::fs::write(&p, MANY).unwrap();
    let mut child = single(&tmp.0, &p)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines() {
            let line = line.unwrap_or_default();
            if line.contains("512000 particles") {
                tx.send(()).ok();
            }
            all += &line;
            all.push('\n');
        }
        all
    });
    let header = rx.recv_timeout(Duration::from_secs(120));
    assert!(header.is_ok(), "no header line: {:?}", child.kill());
    // SAFETY: plain FFI: a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).ok();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("stopped by SIGTERM during the set-up (the first neighbour build)"),
        "{err}"
    );
    assert!(!out.contains("stopped by SIGTERM at step"), "{out}");
    let ck = tmp.0.join("out/checkpoints");
    let written: Vec<_> = std::fs::read_dir(&ck).map_or(Vec::new(), |d| d.collect());
    assert!(written.is_empty(), "checkpoints written: {written:?}");
}
