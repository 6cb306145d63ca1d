//! The infinite cylinder wall (`contact/wall/cylinder.rs`, issue 33; Woo `InfCylinder`): a
//! ball rolling in a fixed cylinder oscillates with the rolling pendulum's period; a ball in a
//! turning drum ends rolling without slip at the bottom; a turning drum of spheres gives the
//! same bits on any ranks × threads layout and across a restart (reproducible mode).

use crate::common;
use crate::support;
use common::*;
use demhpc::V3;
use support::*;

const R: f64 = 0.1;
const RB: f64 = 0.01;

/// A ball of radius RB inside a cylinder of radius R (axis y through the origin), placed
/// against the wall at angle `theta0` from the bottom, the cylinder turning at `omega`.
fn ball_in_cylinder(theta0: f64, omega: f64, damping: f64, dt: f64) -> String {
    let (s, c) = theta0.sin_cos();
    let d = R - RB;
    format!(
        r#"Scene(
    materials: [Frict(name: "g", young: 1e9, poisson: 0.3, friction_angle: 0.5, density: 2500.0)],
    walls: [Cylinder(point: (0.0, 0.0, 0.0), axis: (0.0, 1.0, 0.0), radius: {R:?}, material: "g",
                     omega: {omega:?})],
    spheres: [Sphere(pos: ({:?}, 0.0, {:?}), radius: {RB:?}, material: "g")],
    gravity: (0.0, 0.0, -9.81),
    damping: {damping:?},
    dt: Fixed({dt:?}),
    run: Steps(1000000),
    domain: Domain(lo: (-0.2, -0.2, -0.2), hi: (0.2, 0.2, 0.2)),
)"#,
        d * s,
        -d * c
    )
}

#[test]
fn a_ball_rolls_in_a_cylinder_with_the_rolling_pendulums_period() {
    // rolling without slip on a circle of radius R − r: T = 2π √(7 (R − r) / (5 g)) for small
    // amplitudes (the rolling ball's 7/5 of inertia; Landau–Lifshitz §6 problem 2); the
    // amplitude 0.05 rad lengthens it by θ₀²/16 = 1.6e-4
    let dt = 5e-6;
    let mut s = sim(&ball_in_cylinder(0.05, 0.0, 0.0, dt));
    let t_an = 2.0 * std::f64::consts::PI * (7.0 * (R - RB) / (5.0 * 9.81)).sqrt();
    let mut crossings = Vec::new();
    let mut x_prev = s.ps.pos[0].x;
    while crossings.len() < 3 && s.time < 2.0 * t_an {
        steps(&mut s, 1);
        let x = s.ps.pos[0].x;
        if x_prev > 0.0 && x <= 0.0 || x_prev < 0.0 && x >= 0.0 {
            // the time of x = 0, linear between the steps
            crossings.push(s.time - dt * x / (x - x_prev));
        }
        x_prev = x;
    }
    assert_eq!(crossings.len(), 3, "it oscillates");
    let t = crossings[2] - crossings[0];
    eprintln!("period {t:.6} s, rolling pendulum {t_an:.6} s");
    assert!(rel(t, t_an) < 2e-3, "{t} vs {t_an}");
    // rolling, not sliding: the contact point (r below the centre, near the bottom) nearly at
    // rest, v_x − ω_y r ≈ 0 (measured 1.5e-3 of v: the elastic shear spring; gross sliding
    // would be the whole of it)
    let (v, w) = (s.ps.vel[0], s.ps.angvel[0]);
    eprintln!("v {:?}, ω {:?}", v.as_slice(), w.as_slice());
    assert!((w.y * RB - v.x).abs() < 5e-3 * v.norm(), "v {v}, ω {w}");
}

#[test]
fn a_ball_in_a_turning_drum_ends_rolling_without_slip_at_the_bottom() {
    // its centre at rest at the bottom and its surface moving with the drum's at the contact:
    // ω_ball r = ω R (both about +y)
    let omega = 2.0;
    let mut s = sim(&ball_in_cylinder(0.0, omega, 0.5, 5e-6));
    steps(&mut s, 200_000);
    let (x, w) = (s.ps.pos[0], s.ps.angvel[0]);
    eprintln!("centre {:?}, spin {:?}", x.as_slice(), w.as_slice());
    // dragged up at the start, it creeps back towards the bottom under Cundall's damping
    // (measured 4° after 1 s, 3.8° after 3 s)
    assert!(x.x.abs() < 0.1 * (R - RB), "near the bottom: {x}");
    assert!(
        rel(w.y * RB, omega * R) < 2e-3,
        "ω_ball {} vs ω R / r {}",
        w.y,
        omega * R / RB
    );
    assert!(s.ps.vel[0].norm() < 1e-4, "{}", s.ps.vel[0]);
}

#[test]
fn bad_cylinders_are_refused_at_their_field() {
    let base = ball_in_cylinder(0.0, 0.0, 0.0, 1e-6);
    for (from, to, field) in [
        (
            "axis: (0.0, 1.0, 0.0)",
            "axis: (0.0, 0.0, 0.0)",
            "walls[0].axis",
        ),
        ("radius: 0.1", "radius: -0.1", "walls[0].radius"),
        (
            "material: \"g\",\n",
            "material: \"h\",\n",
            "walls[0].material",
        ),
    ] {
        let text = base.replacen(from, to, 1);
        assert_ne!(text, base, "{from}");
        let e = demhpc::scene::Scene::parse(&text, std::path::Path::new("c.ron"))
            .err()
            .unwrap_or_else(|| panic!("{to} accepted"))
            .to_string();
        assert!(e.starts_with("c.ron:") && e.contains(field), "{to}: {e}");
    }
}

/// A turning drum (periodic along its axis y), 200 spheres near its bottom under a strong
/// gravity (they reach the wall within the test's 1 200 steps), reproducible mode.
fn drum(steps: u64) -> String {
    format!(
        r#"Scene(
    materials: [Frict(name: "g", young: 2e7, poisson: 0.3, friction_angle: 0.5, density: 2650.0,
                      restitution: 0.5)],
    walls: [Cylinder(point: (0.0, 0.0, 0.0), axis: (0.0, 1.0, 0.0), radius: 0.05, material: "g",
                     omega: 3.0)],
    spheres: [RandomFill(material: "g", lo: (-0.012, 0.0, -0.046), hi: (0.012, 0.03, -0.02),
                         count: 200, radius: 0.0015, polydispersity: 0.2, seed: 9)],
    gravity: (0.0, 0.0, -1000.0),
    dt: PWave(0.3),
    run: Steps({steps}),
    domain: Domain(lo: (-0.06, 0.0, -0.06), hi: (0.06, 0.03, 0.06), periodic: (false, true, false)),
    reproducible: true,
    output: Output(series_every: 100),
    checkpoint: (every: 800, keep: 4),
)"#
    )
}

#[test]
fn a_turning_drum_gives_the_same_bits_on_any_layout_and_across_a_restart() {
    let tmp = TempDir::new("cylinder_drum");
    std::fs::write(tmp.0.join("scene.ron"), drum(1200)).unwrap();
    let run = |r: usize, t: usize, out: &str| {
        let o = demhpc(r, t, &["--out", out, "scene.ron"], &tmp.0);
        assert!(o.status.success(), "{r} × {t}: {}", describe(&o));
        let snap = tmp.0.join(out).join("snapshots/snap_000001200.h5");
        let series = std::fs::read_to_string(tmp.0.join(out).join("series.csv")).unwrap();
        (read_state(&snap), series)
    };
    let (first, series) =
        same_bits_on_layouts(&[(1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (1, 2)], run);
    // the spheres fell onto the drum and touch it: contacts in the last row
    let last = series.lines().last().unwrap();
    let n_contacts: u64 = last.split(',').nth(5).unwrap().parse().unwrap();
    assert!(n_contacts > 50, "{last}");
    let ck = tmp.0.join("o1_1/checkpoints/ckpt_0000000800.h5");
    let o = demhpc(
        3,
        1,
        &["--restart", ck.to_str().unwrap(), "--out", "restarted"],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let snap = tmp.0.join("restarted/snapshots/snap_000001200.h5");
    assert!(read_state(&snap) == first, "the restart parted");
    let x: Vec<V3> = first
        .pos
        .chunks_exact(3)
        .map(|c| {
            V3::new(
                f64::from_bits(c[0]),
                f64::from_bits(c[1]),
                f64::from_bits(c[2]),
            )
        })
        .collect();
    // every centre inside the drum
    assert!(x.iter().all(|p| (p.x * p.x + p.z * p.z).sqrt() < 0.05));
}
