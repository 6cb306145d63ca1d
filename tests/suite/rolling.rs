//! Issue 20, acceptance 2: rolling and twisting resistance, constant directional torque
//! (`contact/law/rolling.rs`, LIGGGHTS `rolling_friction cdt`), against the rigid-body
//! results: a solid sphere rolling on a plane decelerates at (5/7) μ_r g and stops after
//! 7 v₀² / (10 μ_r g); spinning about the normal it decelerates at (5/2) μ_t g / r; on an
//! incline below the rolling-friction angle (tan θ < μ_r) it does not roll away.

use crate::common;
use common::*;
use demhpc::V3;
use std::f64::consts::PI;

const R: f64 = 0.01;
const RHO: f64 = 2600.0;
const E: f64 = 1e7;

/// A sphere resting at its equilibrium overlap on a plane of angle θ (about y) through the
/// origin, with the scene's rolling resistance; returns the simulation and the downhill
/// direction.
fn on_plane(theta: f64, mu_r: f64, mu_t: f64) -> (demhpc::Simulation, V3) {
    on_plane_with(theta, mu_r, mu_t, "Cdt")
}

/// [`on_plane`] with the rolling model `model` (`Cdt`, `Epsd2`).
fn on_plane_with(theta: f64, mu_r: f64, mu_t: f64, model: &str) -> (demhpc::Simulation, V3) {
    let n = V3::new(theta.sin(), 0.0, theta.cos());
    let down = V3::new(theta.cos(), 0.0, -theta.sin());
    let m = 4.0 / 3.0 * PI * R * R * R * RHO;
    let x = n * (R - m * 9.81 * theta.cos() / (E * R));
    let s = sim(&format!(
        r#"Scene(materials: [Frict(name: "m", young: {E:e}, poisson: 0.25, friction_angle: 0.6, density: {RHO:e}, restitution: 0.5)],
        walls: [Wall(point: (0.0, 0.0, 0.0), normal: ({:e}, 0.0, {:e}), material: "m")],
        spheres: [Sphere(pos: ({:e}, 0.0, {:e}), radius: {R:e}, material: "m")],
        rolling: (mu_r: {mu_r:e}, mu_t: {mu_t:e}, model: {model}),
        gravity: (0.0, 0.0, -9.81), dt: Fixed(1e-5), run: Steps(1),
        domain: Domain(lo: (-10.0, -1.0, -10.0), hi: (10.0, 1.0, 10.0)))"#,
        n.x, n.z, x.x, x.z
    ));
    (s, down)
}

#[test]
fn rolling_sphere_stops_where_the_constant_torque_predicts() {
    let (mu_r, v0) = (0.1, 0.5);
    let (mut s, _) = on_plane(0.0, mu_r, 0.0);
    // rolling without slip from the start: ω = v₀ / r about +y
    s.ps.vel[0] = V3::new(v0, 0.0, 0.0);
    s.ps.angvel[0] = V3::new(0.0, v0 / R, 0.0);
    let a = 5.0 / 7.0 * mu_r * 9.81;
    let (t_stop, d_stop) = (v0 / a, v0 * v0 / (2.0 * a));
    // halfway in time: v = v₀/2
    let half = (0.5 * t_stop / 1e-5).round() as u64;
    steps(&mut s, half);
    assert!(
        rel(s.ps.vel[0].x, 0.5 * v0) < 0.02,
        "v {} at t_stop/2",
        s.ps.vel[0].x
    );
    assert!(
        rel(s.ps.angvel[0].y * R, s.ps.vel[0].x) < 0.01,
        "still rolling without slip"
    );
    // well after the stop: where it came to rest
    steps(&mut s, half + 20_000);
    let d = s.ps.pos[0].x;
    assert!(
        rel(d, d_stop) < 0.02,
        "stopped after {d} m, predicted {d_stop} m"
    );
    assert!(
        s.ps.vel[0].x.abs() < 1e-3 * v0,
        "at rest: v {}",
        s.ps.vel[0].x
    );
}

#[test]
fn twisting_decays_at_the_constant_torque_rate() {
    let (mu_t, w0) = (0.05, 20.0);
    let (mut s, _) = on_plane(0.0, 0.0, mu_t);
    s.ps.angvel[0] = V3::new(0.0, 0.0, w0);
    let alpha = 2.5 * mu_t * 9.81 / R;
    let half = (0.5 * w0 / alpha / 1e-5).round() as u64;
    steps(&mut s, half);
    assert!(
        rel(s.ps.angvel[0].z, 0.5 * w0) < 0.02,
        "ω {} at t_stop/2",
        s.ps.angvel[0].z
    );
    steps(&mut s, half + 20_000);
    assert!(
        s.ps.angvel[0].z.abs() < 1e-2 * w0,
        "stopped: ω {}",
        s.ps.angvel[0].z
    );
}

#[test]
fn sphere_below_the_rolling_friction_angle_does_not_roll_away() {
    // tan θ = μ_r / 2: held (the constant torque chatters about rest, see rolling.rs); with
    // μ_r = 0 the same sphere rolls away at (5/7) g sin θ
    let mu_r: f64 = 0.2;
    let theta = (0.5 * mu_r).atan();
    let n_steps = 20_000; // 0.2 s
    let (mut held, down) = on_plane(theta, mu_r, 0.0);
    let x0 = held.ps.pos[0];
    steps(&mut held, n_steps);
    let moved = (held.ps.pos[0] - x0).dot(&down);
    let (mut free, _) = on_plane(theta, 0.0, 0.0);
    steps(&mut free, n_steps);
    let rolled = (free.ps.pos[0] - x0).dot(&down);
    let expect = 0.5 * 5.0 / 7.0 * 9.81 * theta.sin() * 0.2 * 0.2;
    assert!(
        rel(rolled, expect) < 0.02,
        "free sphere rolled {rolled} m, expected {expect}"
    );
    assert!(
        moved.abs() < 1e-3 * R,
        "held sphere moved {moved} m (free: {rolled} m)"
    );
}

/// EPSD (LIGGGHTS `epsd2`): the spring saturates within a rotation of μ_r R |F_N| / k_r
/// (here ~1e-4 rad), after which the moment is the constant torque: the same stop distance.
#[test]
fn epsd_rolling_sphere_stops_where_the_constant_torque_predicts() {
    let (mu_r, v0) = (0.1, 0.5);
    let (mut s, _) = on_plane_with(0.0, mu_r, 0.0, "Epsd2");
    s.ps.vel[0] = V3::new(v0, 0.0, 0.0);
    s.ps.angvel[0] = V3::new(0.0, v0 / R, 0.0);
    let a = 5.0 / 7.0 * mu_r * 9.81;
    let (t_stop, d_stop) = (v0 / a, v0 * v0 / (2.0 * a));
    steps(&mut s, (t_stop / 1e-5).round() as u64 + 20_000);
    let d = s.ps.pos[0].x;
    assert!(
        rel(d, d_stop) < 0.02,
        "stopped after {d} m, predicted {d_stop} m"
    );
    assert!(s.ps.vel[0].x.abs() < 1e-3 * v0, "v {}", s.ps.vel[0].x);
}

/// EPSD twisting: the same spring about the normal, capped at μ_t R |F_N|.
#[test]
fn epsd_twisting_decays_at_the_constant_torque_rate() {
    let (mu_t, w0) = (0.05, 20.0);
    let (mut s, _) = on_plane_with(0.0, 0.0, mu_t, "Epsd2");
    s.ps.angvel[0] = V3::new(0.0, 0.0, w0);
    let alpha = 2.5 * mu_t * 9.81 / R;
    steps(&mut s, (0.5 * w0 / alpha / 1e-5).round() as u64);
    assert!(
        rel(s.ps.angvel[0].z, 0.5 * w0) < 0.02,
        "ω_z {} at half time",
        s.ps.angvel[0].z
    );
}

/// EPSD on an incline below the rolling-friction angle: the spring holds the sphere at an
/// elastic rotation M/k_r. Without a rolling dashpot (epsd2) it rocks about that rest state at a
/// bounded amplitude (no creep: the constant torque creeps downhill at a steady rate); with
/// Cundall's damping it comes to rest exactly.
#[test]
fn epsd_sphere_rests_on_an_incline_below_the_rolling_friction_angle() {
    let mu_r: f64 = 0.2;
    let theta = (0.5 * mu_r).atan();
    // the displacement downhill after each 0.05 s, over 0.4 s
    let path = |model: &str, damping: f64| {
        let (mut s, down) = on_plane_with(theta, mu_r, 0.0, model);
        s.damping = damping;
        let x0 = s.ps.pos[0];
        let d: Vec<f64> = (0..8)
            .map(|_| {
                steps(&mut s, 5_000);
                (s.ps.pos[0] - x0).dot(&down)
            })
            .collect();
        (d, s.ps.vel[0].norm(), s.wall_pairs.state[0].phys.ks)
    };
    let (rocks, _, _) = path("Epsd2", 0.0);
    let (creeps, _, _) = path("Cdt", 0.0);
    let (rests, v_rest, ks) = path("Epsd2", 0.2);
    eprintln!("EPSD {rocks:?}\ncdt {creeps:?}\nEPSD damped {rests:?} v {v_rest:e}");
    // undamped EPSD: bounded (elastic rocking ~2e-6 m), no trend
    let max = rocks.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
    assert!(max < 3e-4 * R, "EPSD: moved up to {max} m");
    // the constant torque creeps: it has gone farther than EPSD ever does, and keeps going
    assert!(
        creeps[7] > max && creeps[7] > 1.5 * creeps[3],
        "cdt {creeps:?}"
    );
    // damped EPSD: at rest, within 1e-9 r over the last 0.2 s
    assert!(
        (rests[7] - rests[3]).abs() < 1e-9 * R,
        "damped EPSD {rests:?}"
    );
    assert!(v_rest < 1e-9, "damped EPSD: v {v_rest}");
    // where it rests: friction F_T = m g sin θ stretches the shear spring by F_T / k_T, and its
    // moment R F_T turns the sphere by φ = R F_T / k_r = F_T / (k_T R) (k_r = k_T R²), which
    // moves the centre R φ more: x = 2 m g sin θ / k_T downhill
    let m = 4.0 / 3.0 * PI * R * R * R * RHO;
    let x = 2.0 * m * 9.81 * theta.sin() / ks;
    assert!(
        rel(rests[7], x) < 0.01,
        "rests at {} m, predicted {x} m",
        rests[7]
    );
}

/// LIGGGHTS `epsd` (Ai et al. 2011 model C): the spring k_r = 2.25 k_N μ_r² R² with a rolling
/// dashpot (η_r = 0.3). On the incline without any Cundall damping the dashpot stops the rocking
/// that `Epsd2` keeps up: the sphere comes to rest where the springs balance gravity,
/// x = F_T / k_T + R φ with φ = R F_T / k_r (F_T = m g sin θ).
#[test]
fn damped_epsd_comes_to_rest_on_an_incline_without_cundall_damping() {
    let mu_r: f64 = 0.2;
    let theta = (0.5 * mu_r).atan();
    let m = 4.0 / 3.0 * PI * R * R * R * RHO;
    let (mut s, down) = on_plane_with(theta, mu_r, 0.0, "Epsd, eta_r: 0.3");
    let x0 = s.ps.pos[0];
    steps(&mut s, 30_000);
    let d1 = (s.ps.pos[0] - x0).dot(&down);
    steps(&mut s, 10_000);
    let d2 = (s.ps.pos[0] - x0).dot(&down);
    let p = s.wall_pairs.state[0].phys;
    let f_t = m * 9.81 * theta.sin();
    let k_r = 2.25 * p.kn * mu_r * mu_r * R * R;
    let want = f_t / p.ks + R * R * f_t / k_r;
    eprintln!("rest {d2:e} m (0.1 s before {d1:e}), predicted {want:e}");
    assert!((d2 - d1).abs() < 1e-9 * R, "still moving: {d1} → {d2}");
    assert!(rel(d2, want) < 0.01, "rests at {d2} m, predicted {want} m");
}
