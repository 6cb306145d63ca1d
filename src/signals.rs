//! Stop requests from the batch system: SIGTERM and SIGUSR1 (Slurm's `--signal=B:USR1@T`, and
//! what `scancel`/the time limit send) set a flag; the run loop sees it between steps, agrees
//! on it with the other ranks, writes a checkpoint and exits 0 (run.rs).

use std::sync::atomic::{AtomicI32, Ordering};

/// The last stop signal received (0 = none).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(sig, Ordering::SeqCst);
}

/// Install the handlers for SIGTERM and SIGUSR1 (call once, before the run).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: `on_signal` is async-signal-safe (one atomic store) and lives for the program.
    unsafe {
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGUSR1, handler);
    }
}

/// The stop signal received since start, if any.
pub fn requested() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Ask for a stop from inside the program (tests, a wall-clock limit).
pub fn request(sig: i32) {
    STOP.store(sig, Ordering::SeqCst);
}

/// Name of a stop signal for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        _ => "a stop request",
    }
}
