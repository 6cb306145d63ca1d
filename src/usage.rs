//! This process' resource usage (`getrusage`): CPU time and peak memory, for the log lines and
//! `timing.json`.

/// This process' resource usage so far (`getrusage(RUSAGE_SELF)`), `None` if it fails.
fn usage() -> Option<libc::rusage> {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; on failure we do not read it.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above (and zeroed before).
    Some(unsafe { u.assume_init() })
}

/// Peak resident set size of this process so far [MB = 10⁶ bytes]: the kernel's high-water
/// mark (`ru_maxrss`, kB on Linux), so memory freed again still counts. It includes what the
/// MPI library maps: under `mpirun` with its default binding Open MPI 4.1 loads hwloc's
/// plugins (X11, OpenCL, libxml2: +3 MB) for 3 ranks or more but not for 2, so compare rank
/// counts with `--bind-to none` (tests/suite/scaling_memory.rs).
pub fn peak_rss_mb() -> f64 {
    usage().map_or(0.0, |u| u.ru_maxrss as f64 * 1024.0 / 1e6)
}

/// CPU time (user + system) of this process so far [s].
pub fn cpu_seconds() -> f64 {
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    usage().map_or(0.0, |u| t(u.ru_utime) + t(u.ru_stime))
}
