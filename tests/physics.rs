//! Physics tests against analytic results (issue #2, acceptance 1). Each states the result it
//! checks and its tolerance.

mod common;
use common::*;
use demhpc::V3;
use std::f64::consts::PI;

const MAT: &str = r#"materials: [Frict(name: "m", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2600.0)]"#;

/// Free fall from rest: leapfrog with v(−½) = 0 gives exactly z_n = −g Δt² n(n+1)/2
/// (to 1e-12 relative); the continuous −g t²/2 within 1e-3 after 1e4 steps.
#[test]
fn free_fall() {
    let mut s = sim(&format!(
        r#"Scene({MAT}, spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "m")],
        gravity: (0.0, 0.0, -9.81), dt: Fixed(1e-4), run: Steps(10000),
        domain: Domain(lo: (-1.0, -1.0, -1000.0), hi: (1.0, 1.0, 1.0)))"#
    ));
    steps(&mut s, 10000);
    let n = 10000.0;
    let z = s.ps.pos[0].z;
    let exact_discrete = -9.81 * 1e-8 * n * (n + 1.0) / 2.0;
    assert!(rel(z, exact_discrete) < 1e-12, "{z} vs {exact_discrete}");
    assert!(rel(z, -0.5 * 9.81 * 1.0) < 1e-3);
    assert!(rel(s.ps.vel[0].z, -9.81 * 1.0) < 1e-12);
    assert_eq!(s.ps.pos[0].x, 0.0);
}

/// Two equal spheres, head-on at ±v, no damping: K_N = E r, m* = m/2.
/// Contact lasts π sqrt(m*/K_N) (within 1 %), kinetic energy is returned (within 1e-6
/// relative); with restitution e the relative speed ratio is e (within 1 %).
fn collide(restitution: Option<f64>) -> (f64, f64, f64, f64) {
    let (r, rho, e_mod, v) = (0.01, 7800.0, 2e8, 0.5);
    let m = 4.0 / 3.0 * PI * r * r * r * rho;
    let kn = e_mod * r;
    let tc = PI * (0.5 * m / kn).sqrt();
    let dt = tc / 2000.0;
    let rest = restitution.map_or(String::new(), |e| format!(", restitution: {e}"));
    let mut s = sim(&format!(
        r#"Scene(materials: [Frict(name: "s", young: {e_mod:e}, poisson: 0.3, friction_angle: 0.5, density: {rho:e}{rest})],
        spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: {r:e}, material: "s", vel: ({v:e}, 0.0, 0.0)),
                  Sphere(pos: (0.0205, 0.0, 0.0), radius: {r:e}, material: "s", vel: (-{v:e}, 0.0, 0.0))],
        dt: Fixed({dt:e}), run: Steps(1))"#
    ));
    let ke0 = s.ps.kinetic_energy().0;
    let mut contact_steps = 0u64;
    let mut seen = false;
    for _ in 0..20_000 {
        s.step().unwrap();
        let active = s.pairs.active.iter().any(|&a| a);
        contact_steps += active as u64;
        seen |= active;
        if seen && !active {
            break;
        }
    }
    steps(&mut s, 10);
    let (a, b) = (idx(&s, 0), idx(&s, 1));
    let vrel = s.ps.vel[b].x - s.ps.vel[a].x;
    (
        contact_steps as f64 * dt,
        tc,
        s.ps.kinetic_energy().0 / ke0,
        vrel / (2.0 * v),
    )
}

#[test]
fn head_on_collision_elastic() {
    let (t, tc, ke_ratio, e) = collide(None);
    assert!(rel(t, tc) < 0.01, "contact time {t} vs {tc}");
    assert!((ke_ratio - 1.0).abs() < 1e-6, "KE ratio {ke_ratio}");
    assert!((e - 1.0).abs() < 1e-6);
}

#[test]
fn head_on_collision_restitution() {
    for e_req in [0.9, 0.5, 0.2] {
        let (_, _, _, e) = collide(Some(e_req));
        assert!(rel(e, e_req) < 0.01, "restitution {e} vs {e_req}");
    }
}

/// A sphere on a floor with Cundall damping settles: wall force = m g within 1e-6.
#[test]
fn sphere_resting_on_wall() {
    let mut s = sim(&format!(
        r#"Scene({MAT}, walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m")],
        spheres: [Sphere(pos: (0.0, 0.0, 0.0102), radius: 0.01, material: "m")],
        gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: PWave(0.2), run: Steps(1))"#
    ));
    steps(&mut s, 40_000);
    let m = s.ps.mass[0];
    let f = s.stats().wall_force[0];
    assert!(
        rel(-f.z, m * 9.81) < 1e-6,
        "wall force {f} vs m g {}",
        m * 9.81
    );
    assert!(f.x.abs() + f.y.abs() < 1e-12);
    // and the overlap is m g / K_N (K_N = E r for the mirror-sphere wall)
    let overlap = 0.01 - s.ps.pos[0].z;
    assert!(rel(overlap, m * 9.81 / 1e5) < 1e-6);
}

/// Incline of angle θ through the origin; the sphere rests on it at its equilibrium overlap.
fn incline_scene(
    theta: f64,
    tan_phi: f64,
    vel_down: f64,
    blocked: &str,
) -> (demhpc::Simulation, V3) {
    let (r, rho, e_mod) = (0.01, 2600.0, 1e7);
    let n = V3::new(theta.sin(), 0.0, theta.cos());
    let down = V3::new(theta.cos(), 0.0, -theta.sin());
    let m = 4.0 / 3.0 * PI * r * r * r * rho;
    let delta = m * 9.81 * theta.cos() / (e_mod * r);
    let x = n * (r - delta);
    let v = down * vel_down;
    let s = sim(&format!(
        r#"Scene(materials: [Frict(name: "m", young: {e_mod:e}, poisson: 0.25, friction_angle: {phi:e}, density: {rho:e})],
        walls: [Wall(point: (0.0, 0.0, 0.0), normal: ({:e}, 0.0, {:e}), material: "m")],
        spheres: [Sphere(pos: ({:e}, 0.0, {:e}), radius: {r:e}, material: "m", vel: ({:e}, 0.0, {:e}), blocked: "{blocked}")],
        gravity: (0.0, 0.0, -9.81), dt: Fixed(1e-5), run: Steps(1),
        domain: Domain(lo: (-10.0, -1.0, -10.0), hi: (10.0, 1.0, 10.0)))"#,
        n.x,
        n.z,
        x.x,
        x.z,
        v.x,
        v.z,
        phi = tan_phi.atan()
    ));
    (s, down)
}

/// Sliding with rotations blocked on an incline (θ = 20°, μ = 0.6 > tan θ): the sphere
/// decelerates at g (μ cos θ − sin θ); friction force = μ m g cos θ. Within 1 %.
#[test]
fn sliding_on_incline() {
    let (theta, mu) = (20f64.to_radians(), 0.6);
    let (mut s, down) = incline_scene(theta, mu, 1.0, "XYZ");
    steps(&mut s, 5000);
    let v1 = s.ps.vel[0].dot(&down);
    steps(&mut s, 25000);
    let v2 = s.ps.vel[0].dot(&down);
    let decel = (v1 - v2) / 0.25;
    let expect = 9.81 * (mu * theta.cos() - theta.sin());
    assert!(
        rel(decel, expect) < 0.01,
        "deceleration {decel} vs {expect}"
    );
    assert!(v2 > 0.0, "still sliding");
}

/// Rolling down an incline from rest (θ = 20°, μ = 0.5, tan θ < 7/2 μ): a = 5/7 g sin θ and
/// no slip (ω r = v). Within 1 %.
#[test]
fn rolling_on_incline() {
    let theta = 20f64.to_radians();
    let (mut s, down) = incline_scene(theta, 0.5, 0.0, "");
    steps(&mut s, 5000);
    let v1 = s.ps.vel[0].dot(&down);
    steps(&mut s, 45000);
    let v2 = s.ps.vel[0].dot(&down);
    let a = (v2 - v1) / 0.45;
    let expect = 5.0 / 7.0 * 9.81 * theta.sin();
    assert!(rel(a, expect) < 0.01, "acceleration {a} vs {expect}");
    assert!(
        rel(s.ps.angvel[0].y * 0.01, v2) < 0.01,
        "ω r = {} vs v = {v2}",
        s.ps.angvel[0].y * 0.01
    );
}

/// A sphere pushed tangentially on a horizontal frictional floor slides, spins up and rolls
/// without slipping at v = 5/7 v0, ω r = v (solid sphere, I = 2/5 m r²). Within 1 %.
#[test]
fn rolling_without_slipping_after_push() {
    let (mut s, _) = incline_scene(0.0, 0.5, 0.0, "");
    s.ps.vel[0] = V3::new(1.0, 0.0, 0.0);
    steps(&mut s, 30000); // 0.3 s; rolling starts at 2 v0/(7 μ g) = 0.058 s
    let v = s.ps.vel[0].x;
    assert!(rel(v, 5.0 / 7.0) < 0.01, "v = {v}");
    assert!(rel(s.ps.angvel[0].y * 0.01, v) < 0.01);
}

fn periodic_cloud(n: u64, friction: f64, seed: u64) -> demhpc::Simulation {
    let mut s = sim(&format!(
        r#"Scene(materials: [Frict(name: "m", young: 1e6, poisson: 0.25, friction_angle: {friction:e}, density: 1000.0)],
        spheres: [RandomFill(material: "m", lo: (0.0, 0.0, 0.0), hi: (0.1, 0.1, 0.1), count: {n}, radius: 0.005, polydispersity: 0.2, seed: {seed})],
        dt: PWave(0.1), run: Steps(1),
        domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.1, 0.1, 0.1), periodic: (true, true, true)))"#
    ));
    // random velocities (counter-based, deterministic)
    for i in 0..s.ps.n_owned {
        let g = s.ps.gid[i];
        let h = |k: u64| demhpc::scene::gen::splitmix(g * 3 + k) as f64 / u64::MAX as f64 - 0.5;
        s.ps.vel[i] = V3::new(h(0), h(1), h(2)) * 2.0;
    }
    s
}

fn momentum(s: &demhpc::Simulation) -> (V3, f64) {
    let mut p = V3::zeros();
    let mut scale = 0.0;
    for i in 0..s.ps.n_owned {
        p += s.ps.vel[i] * s.ps.mass[i];
        scale += s.ps.mass[i] * s.ps.vel[i].norm();
    }
    (p, scale)
}

/// Wall-free periodic cloud with friction, no damping, no gravity: total linear momentum is
/// conserved to round-off (1e-13 of Σ m|v|) through thousands of collisions, including those
/// across the periodic boundaries.
#[test]
fn momentum_conserved_in_cloud() {
    let mut s = periodic_cloud(300, 0.5, 3);
    let (p0, scale) = momentum(&s);
    let mut max_contacts = 0;
    for _ in 0..40 {
        steps(&mut s, 100);
        max_contacts = max_contacts.max(s.stats().n_contacts);
    }
    let (p1, _) = momentum(&s);
    assert!(max_contacts > 5, "collisions happened: {max_contacts}");
    assert!(
        (p1 - p0).norm() < 1e-13 * scale,
        "Δp = {}",
        (p1 - p0).norm()
    );
}

/// Frictionless elastic cloud without damping: kinetic + elastic energy is conserved (leapfrog
/// fluctuation only: within 1e-3 relative over 4000 steps with many collisions).
#[test]
fn energy_conserved_without_damping() {
    let mut s = periodic_cloud(300, 0.0, 5);
    let e0 = s.ps.kinetic_energy().0;
    let mut worst: f64 = 0.0;
    for _ in 0..40 {
        steps(&mut s, 100);
        let (kt, kr) = s.ps.kinetic_energy();
        let e = kt + kr + s.elastic_energy();
        worst = worst.max((e - e0).abs() / e0);
    }
    assert!(worst < 1e-3, "energy drift {worst}");
    assert!(s.n_rebuilds > 3);
}

/// Wave speed in a chain of touching equal spheres (no damping): a velocity pulse given to the
/// first sphere travels at c = d sqrt(K_N/m) (d = 2r, long-wave limit of the discrete chain).
/// Time of the velocity peak at spheres 100 and 200 of 300: speed within 1.5 % of c (the
/// front's Airy correction is ≈ 0.6 % at these distances).
#[test]
fn wave_speed_in_chain() {
    let (r, rho, e_mod) = (0.005, 2600.0, 1e7);
    let n = 300;
    let spheres: Vec<String> = (0..n)
        .map(|k| {
            let v = if k == 0 {
                ", vel: (0.01, 0.0, 0.0)"
            } else {
                ""
            };
            format!(
                r#"Sphere(pos: ({:e}, 0.0, 0.0), radius: {r:e}, material: "m"{v})"#,
                2.0 * r * k as f64
            )
        })
        .collect();
    let m = 4.0 / 3.0 * PI * r * r * r * rho;
    let kn = e_mod * r;
    let dt = 0.02 * (m / kn).sqrt();
    let mut s = sim(&format!(
        r#"Scene(materials: [Frict(name: "m", young: {e_mod:e}, poisson: 0.25, friction_angle: 0.5, density: {rho:e})],
        spheres: [{}], dt: Fixed({dt:e}), run: Steps(1))"#,
        spheres.join(",")
    ));
    let probes = [100u64, 200];
    let mut peak = [(0.0f64, 0.0f64); 2];
    let c = 2.0 * r * (kn / m).sqrt();
    let t_end = 260.0 * 2.0 * r / c;
    while s.time < t_end {
        steps(&mut s, 1);
        for (k, &g) in probes.iter().enumerate() {
            let v = s.ps.vel[idx(&s, g)].x;
            if v > peak[k].0 {
                peak[k] = (v, s.time);
            }
        }
    }
    let speed = 100.0 * 2.0 * r / (peak[1].1 - peak[0].1);
    assert!(rel(speed, c) < 0.015, "wave speed {speed} vs {c}");
}

/// A collision across a periodic boundary gives the same result (to 1e-12) as the same
/// collision in the middle of the cell.
#[test]
fn collision_across_periodic_boundary() {
    let run = |x0: f64| {
        let x1 = x0 + 0.0205;
        let mut s = sim(&format!(
            r#"Scene({MAT},
            spheres: [Sphere(pos: ({x0:e}, 0.05, 0.05), radius: 0.01, material: "m", vel: (0.5, 0.1, 0.0)),
                      Sphere(pos: ({x1:e}, 0.05, 0.05), radius: 0.01, material: "m", vel: (-0.5, 0.0, 0.0))],
            dt: Fixed(1e-6), run: Steps(1),
            domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.1, 0.1, 0.1), periodic: (true, true, true)))"#
        ));
        steps(&mut s, 3000);
        let (a, b) = (idx(&s, 0), idx(&s, 1));
        (s.ps.vel[a], s.ps.vel[b], s.ps.angvel[a])
    };
    let mid = run(0.04);
    let edge = run(0.09); // sphere 1 starts across x = 0.1 and is wrapped
    assert!(mid.0.x < 0.0, "the spheres collided");
    for (a, b) in [(mid.0, edge.0), (mid.1, edge.1), (mid.2, edge.2)] {
        assert!((a - b).norm() < 1e-12, "{a} vs {b}");
    }
}
