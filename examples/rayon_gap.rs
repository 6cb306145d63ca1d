//! Cost of a sequential gap between rayon parallel regions (bench/RESULTS.md "Threads").
//!
//!     cargo run --release --example rayon_gap
//!
//! A DEM step is a few short parallel regions (contact loop, integration) separated by short
//! sequential work. An idle rayon worker spins for only a few µs before it sleeps, and waking
//! it again costs tens of µs on a virtual machine; this program measures that: one parallel
//! region over 8000 × 8 values (about the integration of settle 8k) with a sequential gap of
//! `gap` × 1000 square roots after it, on 1 and 2 threads. Prints µs per region + gap.

use rayon::prelude::*;
use std::time::Instant;

fn main() {
    let mut v = vec![1.0f64; 8000 * 8];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        pool.install(|| {
            for gap in [0usize, 5, 20, 50] {
                let reps = 20_000;
                let t0 = Instant::now();
                for _ in 0..reps {
                    v.par_chunks_mut(8192).for_each(|c| {
                        for x in c.iter_mut() {
                            *x = (*x * 1.0000001).sqrt();
                        }
                    });
                    let mut s = 0.0;
                    for _ in 0..gap {
                        for x in &v[..1000] {
                            s += x.sqrt();
                        }
                    }
                    std::hint::black_box(s);
                }
                let us = t0.elapsed().as_secs_f64() / reps as f64 * 1e6;
                println!("threads {threads} gap {gap:>2}: {us:7.1} µs per region + gap");
            }
        });
    }
}
