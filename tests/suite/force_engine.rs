//! The force engine (`engines/force.rs`, issue 33): a constant force and torque accelerate a
//! free sphere as the leapfrog's closed form says; a table scales them; the selection by gid,
//! tag and region; the same bits on any ranks × threads layout and across a restart in
//! reproducible mode.

use crate::common;
use crate::support;
use common::*;
use demhpc::V3;
use support::*;

/// Two free spheres far apart, no gravity, no damping: `force` acts through `forces`.
fn free(forces: &str) -> String {
    format!(
        r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    spheres: [
        Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "g"),
        Sphere(pos: (1.0, 0.0, 0.0), radius: 0.01, material: "g"),
    ],
    dt: Fixed(1e-5),
    run: Steps(1000),
    forces: [{forces}],
)"#
    )
}

#[test]
fn a_constant_force_and_torque_accelerate_a_free_sphere_as_the_leapfrog_says() {
    let (f, t) = (V3::new(2.0, -1.0, 0.5), V3::new(0.0, 3e-4, 0.0));
    let mut s = sim(&free(
        "Force(select: Gids(lo: 0, hi: 1), force: (2.0, -1.0, 0.5), torque: (0.0, 3e-4, 0.0))",
    ));
    let n = 1000u64;
    steps(&mut s, n);
    let (i, j) = (idx(&s, 0), idx(&s, 1));
    let (m, inertia, dt) = (s.ps.mass[i], s.ps.inertia[i], s.dt);
    // leapfrog from rest under a constant acceleration a: v_N = N Δt a, x_N = x_0 + a Δt² N(N+1)/2
    let a = f / m;
    let v = a * (n as f64 * dt);
    let x = a * (dt * dt * (n * (n + 1)) as f64 / 2.0);
    let w = t / inertia * (n as f64 * dt);
    let close = |p: V3, q: V3| (p - q).norm() <= 1e-12 * q.norm();
    assert!(close(s.ps.vel[i], v), "{} vs {v}", s.ps.vel[i]);
    assert!(close(s.ps.pos[i], x), "{} vs {x}", s.ps.pos[i]);
    assert!(close(s.ps.angvel[i], w), "{} vs {w}", s.ps.angvel[i]);
    // the other sphere is not selected
    assert_eq!(s.ps.vel[j], V3::zeros());
    assert_eq!(s.ps.angvel[j], V3::zeros());
}

#[test]
fn a_table_scales_the_force_in_time() {
    // a ramp from 0 at t = 0 to 1 at t = 5 ms, then held: Σ_k a k(t_k) Δt
    let mut s = sim(&free(
        "Force(select: Tag(0), force: (0.0, 0.0, 4.0), table: [(0.0, 0.0), (0.005, 1.0)])",
    ));
    steps(&mut s, 1000);
    let i = idx(&s, 0);
    let a = 4.0 / s.ps.mass[i];
    let want: f64 = (0..1000)
        .map(|k| a * (k as f64 * 1e-5 / 0.005).min(1.0) * 1e-5)
        .sum();
    assert!(
        (s.ps.vel[i].z - want).abs() <= 1e-12 * want,
        "{} vs {want}",
        s.ps.vel[i].z
    );
    // tag 0 is every sphere: both move alike
    assert_eq!(s.ps.vel[idx(&s, 1)].z, s.ps.vel[i].z);
}

#[test]
fn a_region_selects_the_particles_inside_it_at_each_step() {
    let mut s = sim(&free(
        "Force(select: Region(Box(lo: (0.5, -1.0, -1.0), hi: (2.0, 1.0, 1.0))), force: (1.0, 0.0, 0.0))",
    ));
    steps(&mut s, 10);
    assert_eq!(s.ps.vel[idx(&s, 0)], V3::zeros());
    assert!(s.ps.vel[idx(&s, 1)].x > 0.0);
}

#[test]
fn bad_force_specs_are_refused_at_their_field() {
    for (spec, field) in [
        (
            "Force(select: Gids(lo: 5, hi: 5), force: (1.0, 0.0, 0.0))",
            "forces[0].select",
        ),
        (
            "Force(select: Tag(1), table: [(1.0, 0.0), (0.5, 1.0)])",
            "forces[0].table",
        ),
        (
            "Force(select: Region(Box(lo: (1.0, 0.0, 0.0), hi: (0.0, 1.0, 1.0))))",
            "forces[0].select",
        ),
    ] {
        let e = demhpc::scene::Scene::parse(&free(spec), std::path::Path::new("f.ron"))
            .err()
            .unwrap_or_else(|| panic!("{spec} accepted"))
            .to_string();
        assert!(e.starts_with("f.ron:") && e.contains(field), "{spec}: {e}");
    }
}

/// A periodic box of 300 spheres pushed through the periodic x face by a force on half of them
/// (a region), colliding with the rest.
fn pushed(steps: u64, ck_every: u64) -> String {
    format!(
        r#"Scene(
    materials: [Frict(name: "g", young: 2e7, poisson: 0.3, friction_angle: 0.5, density: 2650.0)],
    spheres: [RandomFill(material: "g", lo: (0.0, 0.0, 0.0), hi: (0.0095, 0.0095, 0.0095), count: 300,
                         radius: 0.0005, polydispersity: 0.3, seed: 3)],
    damping: 0.2,
    dt: PWave(0.2),
    run: Steps({steps}),
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.0095, 0.0095, 0.0095), periodic: (true, true, true)),
    reproducible: true,
    output: Output(series_every: 50),
    checkpoint: (every: {ck_every}, keep: 4),
    forces: [Force(select: Region(Box(lo: (0.0, 0.0, 0.0), hi: (0.00475, 0.0095, 0.0095))),
                   force: (2e-3, 0.0, -1e-3), torque: (0.0, 0.0, 1e-7))],
)"#
    )
}

#[test]
fn the_same_bits_on_any_layout_and_across_a_restart() {
    let tmp = TempDir::new("force_engine_layouts");
    std::fs::write(tmp.0.join("scene.ron"), pushed(600, 300)).unwrap();
    let run = |r: usize, t: usize, out: &str| {
        let o = demhpc(r, t, &["--out", out, "scene.ron"], &tmp.0);
        assert!(o.status.success(), "{r} × {t}: {}", describe(&o));
        let snap = tmp.0.join(out).join("snapshots/snap_000000600.h5");
        let series = std::fs::read_to_string(tmp.0.join(out).join("series.csv")).unwrap();
        (read_state(&snap), series)
    };
    let (first, series) =
        same_bits_on_layouts(&[(1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (1, 2)], run);
    // the pushed half moved: the x velocities are not all zero
    assert!(first.vel.iter().any(|&v| f64::from_bits(v) != 0.0));
    // a restart at step 300 on 3 ranks continues with the same bits
    let ck = tmp.0.join("o1_1/checkpoints/ckpt_0000000300.h5");
    let o = demhpc(
        3,
        1,
        &["--restart", ck.to_str().unwrap(), "--out", "restarted"],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let snap = tmp.0.join("restarted/snapshots/snap_000000600.h5");
    assert!(read_state(&snap) == first, "the restart parted");
    // its series: the rows after the restart, as the uninterrupted run wrote them
    let again = std::fs::read_to_string(tmp.0.join("restarted/series.csv")).unwrap();
    let tail: Vec<&str> = series
        .lines()
        .filter(|l| {
            !l.starts_with(|c: char| c.is_ascii_digit())
                || l.split(',').next().unwrap().parse::<u64>().unwrap() > 300
        })
        .collect();
    assert_eq!(again.lines().collect::<Vec<_>>(), tail);
}
