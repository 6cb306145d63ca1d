//! No allocation in the step loop once warm (issue #2, acceptance 5): a counting global
//! allocator around `Simulation::step`, on 1 and 2 threads, over steps that do not rebuild the
//! neighbour structures (a rebuild may grow its buffers when the contact count grows).

mod common;
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The counter is global: the tests of this file run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A falling, colliding cloud with walls (frictional law, damping): every kind of pair.
const SCENE: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2600.0,
                      restitution: 0.5)],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.024, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
    ],
    spheres: [Lattice(material: "g", spacing: 2.4e-3, counts: (10, 10, 10), radius: 1e-3,
                      polydispersity: 0.1, jitter: 0.05e-3, seed: 7)],
    gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(1),
    domain: Domain(lo: (-0.002, -0.002, -0.002), hi: (0.026, 0.026, 0.05),
                   periodic: (false, true, false)))"#;

/// Run `n` steps; returns how many of them did not rebuild and how many allocations those made.
fn count_allocations(s: &mut demhpc::Simulation, n: usize) -> (u64, u64) {
    let (mut counted, mut allocs) = (0, 0);
    for _ in 0..n {
        let rebuild = s.need_rebuild();
        let before = ALLOCS.load(Ordering::Relaxed);
        s.step().unwrap();
        if !rebuild {
            allocs += ALLOCS.load(Ordering::Relaxed) - before;
            counted += 1;
        }
    }
    (counted, allocs)
}

#[test]
fn steps_without_rebuild_do_not_allocate() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    // default mode on 1 and 2 threads, and the reproducible mode's canonical accumulation
    for (threads, reproducible) in [(1, false), (2, false), (2, true)] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let text = SCENE.replace(
                "run: Steps(1),",
                &format!("run: Steps(1), reproducible: {reproducible},"),
            );
            let mut s = sim(&text);
            steps(&mut s, 10_000); // warm: the spheres reach the floor, contacts form
            assert!(
                s.stats().n_contacts > 300,
                "contacts: {}",
                s.stats().n_contacts
            );
            let (counted, allocs) = count_allocations(&mut s, 2000);
            assert!(
                counted > 1000,
                "{threads} threads: {counted} steps without rebuild"
            );
            assert_eq!(
                allocs, 0,
                "{threads} threads: allocations in {counted} steps"
            );
        });
    }
}

/// The same for the fused contact–integrator step (src/sched.rs: 2 threads, no wall
/// contacts), on the chute.
#[test]
fn fused_steps_without_rebuild_do_not_allocate() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let text = std::fs::read_to_string("scenes/chute.ron")
        .unwrap()
        .replace("../bench/data/", "bench/data/");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let mut s = sim(&text);
        steps(&mut s, 200); // warm: the buffers of a few rebuilds
        let fused = s.n_fused;
        let (counted, allocs) = count_allocations(&mut s, 300);
        assert_eq!(s.n_fused - fused, 300, "every step fused");
        assert!(counted > 200, "{counted} steps without rebuild");
        assert_eq!(allocs, 0, "allocations in {counted} fused steps");
    });
}
