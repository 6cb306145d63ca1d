//! Run a child process with bounded memory and time, and measure both (hostile-input tests).
//!
//! Memory: the child's address space is capped with `RLIMIT_AS` (set between fork and exec),
//! so that a runaway allocation fails inside the child (an abort, exit by signal: the test
//! sees it) instead of eating the machine; and its peak resident set is read from the kernel
//! when it is reaped (`wait4`'s `ru_maxrss`), exact for that one child whatever else the test
//! process runs in parallel. Time: the child is killed at a deadline, and a test asserts on
//! the measured wall time.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// What a limited run gave.
pub struct Limited {
    pub out: Output,
    /// Wall time from spawn to exit.
    pub secs: f64,
    /// Peak resident set of the child, bytes.
    pub max_rss: u64,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Sent SIGTERM (see [`run_limited_term`]).
    pub signalled: bool,
}

impl Limited {
    /// The exit code, `None` when a signal ended the child.
    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
}

/// Run `cmd` with its address space capped at `address_space` bytes, killed (SIGKILL) after
/// `deadline`.
pub fn run_limited(cmd: &mut Command, address_space: u64, deadline: Duration) -> Limited {
    run_limited_term(cmd, address_space, None, deadline)
}

/// [`run_limited`], with SIGTERM sent at `term_at` (if it is still running then).
pub fn run_limited_term(
    cmd: &mut Command,
    address_space: u64,
    term_at: Option<Duration>,
    deadline: Duration,
) -> Limited {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only `setrlimit` runs (async-signal-safe, no allocation).
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: address_space as libc::rlim_t,
                rlim_max: address_space as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn the child");
    let pid = child.id() as libc::pid_t;
    let pipe = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let so = pipe(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let se = pipe(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let mut timed_out = false;
    let mut signalled = false;
    let (status, rss) = loop {
        let mut st: libc::c_int = 0;
        // SAFETY: plain FFI; `ru` is a zeroed POD the kernel fills in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut st, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (st, ru.ru_maxrss as u64 * 1024);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if !signalled && term_at.is_some_and(|t| start.elapsed() > t) {
            signalled = true;
            // SAFETY: as below
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if !timed_out && start.elapsed() > deadline {
            timed_out = true;
            // SAFETY: the child is ours and not reaped yet, so `pid` is still its id.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let secs = start.elapsed().as_secs_f64();
    // the child was reaped by wait4: `child` must not be waited on again (dropping it does not)
    drop(child);
    use std::os::unix::process::ExitStatusExt;
    Limited {
        out: Output {
            status: ExitStatus::from_raw(status),
            stdout: so.join().unwrap_or_default(),
            stderr: se.join().unwrap_or_default(),
        },
        secs,
        max_rss: rss,
        timed_out,
        signalled,
    }
}
