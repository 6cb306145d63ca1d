//! Stop requests from the batch system: SIGTERM (what `scancel` and the time limit send),
//! SIGUSR1 and SIGUSR2 (Slurm's `--signal=B:USR1@T` / `--signal=USR2@T`; `mpirun` and `srun`
//! forward both user signals to every rank) set a flag; the run loop sees it between steps,
//! agrees on it with the other ranks, writes a checkpoint and exits 0 (run.rs). Without a
//! handler SIGUSR2 would kill the ranks (exit 140) with no checkpoint.

use std::sync::atomic::{AtomicI32, Ordering};

/// The last stop signal received (0 = none).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(sig, Ordering::SeqCst);
}

/// Install the handlers for SIGTERM, SIGUSR1 and SIGUSR2 (call once, before the run).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: `on_signal` is async-signal-safe (one atomic store) and lives for the program.
    unsafe {
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGUSR1, handler);
        libc::signal(libc::SIGUSR2, handler);
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
        libc::SIGUSR2 => "SIGUSR2",
        _ => "a stop request",
    }
}

/// Watch over a long set-up loop (a generator, a file reader, a checkpoint scan): a stop
/// signal ends the set-up with [`crate::Error::Stopped`] at the next tick, and the loop logs
/// its progress every [`SetupWatch::EVERY`] (the user sees that a long set-up is alive).
/// `tick` costs an atomic load; the clock is read once every 1024 ticks.
pub struct SetupWatch {
    what: String,
    total: Option<u64>,
    start: std::time::Instant,
    last: std::time::Instant,
    ticks: u64,
}

impl SetupWatch {
    /// Seconds between progress lines.
    pub const EVERY: f64 = 2.0;

    /// `what` names the loop in messages ("DensePack of spheres[0]"); `total` is the count of
    /// items the loop will tick through, when known.
    pub fn new(what: impl Into<String>, total: Option<u64>) -> Self {
        let now = std::time::Instant::now();
        SetupWatch {
            what: what.into(),
            total,
            start: now,
            last: now,
            ticks: 0,
        }
    }

    /// One more item done (`done` items so far): `Err(Stopped)` once a stop signal arrived.
    #[inline]
    pub fn tick(&mut self, done: u64) -> crate::error::Result<()> {
        if let Some(sig) = requested() {
            return Err(crate::Error::Stopped {
                signal: name(sig),
                what: self.what.clone(),
            });
        }
        self.ticks += 1;
        if self.ticks.is_multiple_of(1024) {
            self.progress(done);
        }
        Ok(())
    }

    /// `n` more items done at once (a parallel loop's worth; `done` so far): as [`tick`]
    /// `n` times, with one look at the signals.
    ///
    /// [`tick`]: SetupWatch::tick
    pub fn tick_many(&mut self, done: u64, n: u64) -> crate::error::Result<()> {
        if let Some(sig) = requested() {
            return Err(crate::Error::Stopped {
                signal: name(sig),
                what: self.what.clone(),
            });
        }
        let before = self.ticks / 1024;
        self.ticks += n;
        if self.ticks / 1024 != before {
            self.progress(done);
        }
        Ok(())
    }

    #[cold]
    fn progress(&mut self, done: u64) {
        if self.last.elapsed().as_secs_f64() < Self::EVERY {
            return;
        }
        self.last = std::time::Instant::now();
        let el = self.start.elapsed().as_secs_f64();
        match self.total {
            Some(t) if t > 0 => log::info!(
                "set-up: {}: {done}/{t} ({:.1} %) after {el:.0} s",
                self.what,
                100.0 * done as f64 / t as f64
            ),
            _ => log::info!("set-up: {}: {done} after {el:.0} s", self.what),
        }
    }
}
