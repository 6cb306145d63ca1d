//! The fused contact–integrator step: one parallel region per step for the default mode's
//! accumulator tasks (ARCHITECTURE.md "Fused step").
//!
//! Run as two parallel regions, the contact loop ends at a barrier: the threads whose tasks
//! finish first wait for the slowest (chute, 2 threads: task 0, the bottom of the flow with
//! its short collisions, took ~13 % longer than task 1, and the cut cannot follow without
//! moving work off the cores that hold its particles), and the integrator's region starts
//! after a wake-up. Here each worker runs a contact task and then integrates chunks of
//! particles as soon as every task whose accumulator window meets the chunk has finished: a
//! chunk of particles no running task touches can move, since no running task reads it. The
//! workers that finish first integrate their own particles and then help with the slow
//! task's.
//!
//! Every chunk is integrated exactly as by [`crate::integrate::leapfrog`] (the same gather of
//! the same accumulators in task order), so the bits do not depend on which thread takes it.

use crate::contact::SphereLoop;
use crate::forces::{Gather, TaskPlan, MAX_ACC_TASKS};
use crate::integrate::{Advance, Moved};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Per-chunk claim flags, kept from step to step (no allocation once warm).
#[derive(Debug, Default)]
pub struct Claims(Vec<AtomicBool>);

impl Clone for Claims {
    /// Scratch: a clone starts empty.
    fn clone(&self) -> Self {
        Claims::default()
    }
}

impl Claims {
    fn reset(&mut self, n: usize) {
        if self.0.len() < n {
            self.0.resize_with(n, || AtomicBool::new(false));
        }
        for c in &mut self.0[..n] {
            *c.get_mut() = false;
        }
    }
}

/// The tasks of `plan` (at least one) over the pair loop `lp`, then the integrator `lf` with
/// the contact sums of `gather`, as one parallel region. Returns how far the particles moved
/// (as [`crate::integrate::leapfrog`]) and when the last contact task finished.
///
/// # Safety
/// `lp` reads particles that `lf` writes: the caller made both from the same particles, and
/// `plan`'s windows hold every owned particle that a task's pairs touch (`ForceSlots`), so a
/// chunk is written only after every task reading it has finished. Ghosts are not written.
pub unsafe fn contact_and_integrate(
    plan: &TaskPlan,
    lp: &SphereLoop,
    lf: &Advance,
    gather: &Gather,
    claims: &mut Claims,
    t0: Instant,
) -> (Moved, Instant) {
    let nt = plan.n;
    assert!((1..=MAX_ACC_TASKS).contains(&nt));
    let nc = lf.chunks();
    claims.reset(nc);
    let claims = &claims.0[..nc];
    let started: [AtomicBool; MAX_ACC_TASKS] = Default::default();
    let done: [AtomicBool; MAX_ACC_TASKS] = Default::default();
    // A task that panicked: the waits end (rayon then re-raises the panic) instead of spinning
    // for ever.
    let failed = AtomicBool::new(false);
    let last_done = AtomicU64::new(0);
    // The tasks whose windows meet chunk c (a bit per task).
    let deps = |c: usize| {
        let r = lf.chunk_range(c);
        (0..nt)
            .filter(|&t| {
                let w = plan.writers[t].window();
                w.start < w.end && w.start < r.end && r.start < w.end
            })
            .fold(0u32, |m, t| m | 1 << t)
    };
    let ready = |d: u32| (0..nt).all(|t| d & (1 << t) == 0 || done[t].load(Ordering::Acquire));
    // Home chunks of task t: home[t]..home[t + 1], those whose middle lies below the end of
    // its window and not below an earlier task's (the last task takes the rest).
    let mut home = [nc; MAX_ACC_TASKS + 1];
    home[0] = 0;
    for t in 1..nt {
        let end = plan.writers[t - 1].window().end;
        home[t] = (home[t - 1]..nc)
            .find(|&c| {
                let r = lf.chunk_range(c);
                (r.start + r.end) / 2 >= end
            })
            .unwrap_or(nc);
    }
    let contacts =
        |p0: usize, f: &mut [crate::V3], t: &mut [crate::V3]| gather.take_block(p0, f, t);
    let worker = |w: usize| {
        // contact tasks: its own first, then any not started (so that a wait below is only
        // ever for a task that some thread is running)
        for k in 0..nt {
            let t = (w + k) % nt;
            if !started[t].swap(true, Ordering::AcqRel) {
                let guard = FailOnUnwind(&failed);
                // SAFETY: tasks' ranges are disjoint; each task is run once.
                plan.run_task(t, |r, out| unsafe { lp.run(r, out) });
                std::mem::forget(guard);
                done[t].store(true, Ordering::Release);
                last_done.fetch_max(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
        }
        // chunks: its home chunks upwards, then the other tasks' by distance (those below
        // downwards, towards the rest of the helpers)
        let mut moved = Moved::NONE;
        let mut passes = 0u32;
        loop {
            let mut waiting = false;
            let mut visit = |c: usize| {
                if claims[c].load(Ordering::Relaxed) {
                    return;
                }
                if !ready(deps(c)) {
                    waiting = true;
                } else if !claims[c].swap(true, Ordering::AcqRel) {
                    // SAFETY: claimed once; every task touching it has finished (doc).
                    moved = moved.join(unsafe { lf.chunk(c, &contacts) });
                }
            };
            let home_of = |t: usize| home[t]..home[t + 1];
            // (w < nt: the workers are 0..nt)
            home_of(w).for_each(&mut visit);
            for d in 1..nt {
                if w + d < nt {
                    home_of(w + d).for_each(&mut visit);
                }
                if w >= d {
                    home_of(w - d).rev().for_each(&mut visit);
                }
            }
            if !waiting || failed.load(Ordering::Acquire) {
                break moved;
            }
            // The wait is for a task running on another thread: short on a core of its own
            // (spin); with more threads than cores (oversubscribed tests), give the core up.
            passes += 1;
            match passes < 256 {
                true => std::hint::spin_loop(),
                false => std::thread::yield_now(),
            }
        }
    };
    let moved = (0..nt)
        .into_par_iter()
        .map(worker)
        .reduce(|| Moved::NONE, Moved::join);
    let end = t0 + std::time::Duration::from_nanos(last_done.load(Ordering::Relaxed));
    (moved, end)
}

/// Sets its flag when dropped, i.e. when the task it guards unwinds (a finished task forgets
/// it).
struct FailOnUnwind<'a>(&'a AtomicBool);

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Run the pool's pending jobs until `stop` (see [`Simulation::step`]), yielding the core
/// while there are none, so an oversubscribed node loses little. After [`KEEP_AWAKE_IDLE`]
/// without work it gives up and lets the worker sleep: a long sequential stretch (a rebuild's
/// merge, a slow collective) does not burn a core, and should the step's own thread ever run
/// this job while it waits for a stolen one, it returns to it.
fn keep_awake(stop: &AtomicBool) {
    let mut idle_since = None;
    while !stop.load(Ordering::Acquire) {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => idle_since = None,
            _ => {
                if idle_since.get_or_insert_with(Instant::now).elapsed() > KEEP_AWAKE_IDLE {
                    return;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// Run `f` with `n` [`keep_awake`] jobs offered to the other workers: nested `rayon::join`s,
/// whose jobs live on the stack (no allocation in the step loop). `f` runs on this thread;
/// when it returns, a keep-alive job nobody took runs here and returns at once.
pub(crate) fn with_keep_awake<R: Send>(
    n: usize,
    stop: &AtomicBool,
    f: impl FnOnce() -> R + Send,
) -> R {
    match n {
        0 => f(),
        _ => rayon::join(|| with_keep_awake(n - 1, stop, f), || keep_awake(stop)).0,
    }
}

/// See [`keep_awake`]: longer than the sequential gaps of a step between its parallel regions.
const KEEP_AWAKE_IDLE: Duration = Duration::from_micros(500);

/// Sets the flag when dropped.
pub(crate) struct SetOnDrop<'a>(pub(crate) &'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
