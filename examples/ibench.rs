use demhpc::particles::{Particle, Particles};
use demhpc::V3;
use std::time::Instant;
fn main() {
    let mut ps = Particles::default();
    for k in 0..8000u64 {
        let mut p = Particle::sphere(k, V3::new(k as f64, 0.0, 0.0), 1e-3, 2600.0, 0);
        p.vel = V3::new(0.01, -0.02, 0.003);
        p.angvel = V3::new(1.0, 2.0, 3.0);
        ps.push_owned(&p);
    }
    let r = ps.pos.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..3 {
            let t = Instant::now();
            let mut d = 0.0;
            for _ in 0..2000 {
                d += demhpc::integrate::leapfrog(
                    &mut ps,
                    &r,
                    7e-6,
                    0.3,
                    V3::new(0.0, 0.0, -9.81),
                    |p| {
                        (
                            V3::new(1e-4, -2e-4, 3e-4 * p as f64),
                            V3::new(1e-9, 0.0, -1e-9),
                        )
                    },
                );
            }
            let el = t.elapsed().as_secs_f64();
            println!("{} ns/particle {d}", el / 2000.0 / 8000.0 * 1e9);
        }
    });
}
