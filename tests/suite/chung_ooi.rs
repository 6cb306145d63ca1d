//! Chung & Ooi (2011), "Benchmark tests for verifying discrete element modelling codes at
//! particle impact level", Granular Matter 13:643–656: tests 1–6 and 8 with the Hertz–Mindlin
//! law (`contact/law/hertz.rs`), each against its analytic result (laws-and-flows digest §1).
//! Materials as in the paper's Table 1 (glass, limestone, aluminium and magnesium alloys,
//! aluminium oxide, nylon); a "rigid" plane is a wall of E = 1e30 Pa.
//!
//! Analytic results (Johnson, Contact Mechanics §11.1; laws-and-flows digest §1): for an
//! elastic impact at normal speed v, contact time t_c = 2.868 (m*² / (R* E*² v))^{1/5},
//! maximum overlap δ_max = (15 m* v² / (16 E* √R*))^{2/5}, peak force (4/3) E* √R* δ_max^{3/2}.
//! Oblique impacts in gross sliding (tests 4 and 6): the tangential impulse is μ times the
//! normal one, m (1 + e) v_n (rigid-body impact theory; the large-angle branch of Maw,
//! Barber & Fawcett's 1976 curves, which C&O plot as the analytic solution).

use crate::common;
use common::*;
use demhpc::{Simulation, V3};
use std::f64::consts::PI;

/// (name, E [Pa], ν, ρ [kg/m³]) of C&O's Table 1.
const GLASS: (&str, f64, f64, f64) = ("glass", 4.8e10, 0.20, 2800.0);
const LIMESTONE: (&str, f64, f64, f64) = ("limestone", 2.0e10, 0.25, 2500.0);
const AL_ALLOY: (&str, f64, f64, f64) = ("al_alloy", 7.0e10, 0.33, 2700.0);
const MG_ALLOY: (&str, f64, f64, f64) = ("mg_alloy", 4.0e10, 0.35, 1800.0);
const AL_OXIDE: (&str, f64, f64, f64) = ("al_oxide", 3.8e11, 0.23, 4000.0);
const NYLON: (&str, f64, f64, f64) = ("nylon", 2.5e9, 0.40, 1000.0);

fn mass(r: f64, rho: f64) -> f64 {
    4.0 / 3.0 * PI * r * r * r * rho
}

/// Hertz elastic impact: (t_c, δ_max, F_max) for m*, R*, E*, normal speed v.
fn hertz_impact(m: f64, r: f64, e: f64, v: f64) -> (f64, f64, f64) {
    let tc = 2.868 * (m * m / (r * e * e * v)).powf(0.2);
    let dmax = (15.0 * m * v * v / (16.0 * e * r.sqrt())).powf(0.4);
    (tc, dmax, 4.0 / 3.0 * e * r.sqrt() * dmax.powf(1.5))
}

fn hertz_material(m: (&str, f64, f64, f64), friction: f64, restitution: Option<f64>) -> String {
    let rest = restitution.map_or(String::new(), |e| format!(", restitution: {e}"));
    format!(
        r#"Hertz(name: "{}", young: {:e}, poisson: {}, friction_angle: {:e}, density: {:e}{rest})"#,
        m.0,
        m.1,
        m.2,
        friction.atan(),
        m.3
    )
}

/// A sphere of material `m`, radius `r`, above a rigid plane z = 0 at gap r/1000, with
/// velocity `vel` and angular velocity `w`; time step t_c/`per_tc` of the elastic impact.
fn sphere_on_plane(
    m: (&str, f64, f64, f64),
    r: f64,
    mu: f64,
    e: Option<f64>,
    vel: [f64; 3],
    w: [f64; 3],
) -> (Simulation, f64) {
    let e_star = 1.0 / ((1.0 - m.2 * m.2) / m.1 + (1.0 - 0.25 * 0.25) / 1e30);
    let (tc, _, _) = hertz_impact(mass(r, m.3), r, e_star, -vel[2]);
    let dt = tc / 2000.0;
    let text = format!(
        r#"Scene(materials: [{}, {}],
        walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "rigid")],
        spheres: [Sphere(pos: (0.0, 0.0, {:e}), radius: {r:e}, material: "{}",
                         vel: ({:e}, {:e}, {:e}), angvel: ({:e}, {:e}, {:e}))],
        dt: Fixed({dt:e}), run: Steps(1))"#,
        hertz_material(m, mu, e),
        hertz_material(("rigid", 1e30, 0.25, 1000.0), mu, e),
        r * 1.001,
        m.0,
        vel[0],
        vel[1],
        vel[2],
        w[0],
        w[1],
        w[2]
    );
    (sim(&text), dt)
}

/// Run until the contact that starts has ended: (contact time, max overlap, max force).
fn impact_on_plane(s: &mut Simulation, dt: f64) -> (f64, f64, f64) {
    let (mut n, mut seen, mut dmax, mut fmax) = (0u64, false, 0.0_f64, 0.0_f64);
    for _ in 0..1_000_000 {
        s.step().unwrap();
        let active = s.wall_pairs.active.iter().any(|&a| a);
        n += active as u64;
        seen |= active;
        if active {
            dmax = dmax.max(s.ps.radius[0] - s.ps.pos[0].z);
            fmax = fmax.max(s.stats().wall_force[0].z.abs());
        }
        if seen && !active {
            return (n as f64 * dt, dmax, fmax);
        }
    }
    panic!("the impact did not end");
}

/// Run two spheres of radius `r` (gids 0, 1 along x) until their contact has ended: (contact
/// time, maximum overlap).
fn two_sphere_impact(s: &mut Simulation, r: f64, dt: f64) -> (f64, f64) {
    let (mut n, mut seen, mut dm) = (0u64, false, 0.0_f64);
    for _ in 0..100_000 {
        s.step().unwrap();
        let active = s.pairs.active.iter().any(|&a| a);
        n += active as u64;
        seen |= active;
        let (a, b) = (idx(s, 0), idx(s, 1));
        dm = dm.max(2.0 * r - (s.ps.pos[b].x - s.ps.pos[a].x));
        if seen && !active {
            return (n as f64 * dt, dm);
        }
    }
    panic!("the impact did not end");
}

/// C&O test 1: elastic normal impact of two identical spheres (glass and limestone, R = 10
/// mm, relative speed 10 m/s): contact time, maximum overlap within 1 % of Hertz.
#[test]
fn test1_normal_impact_of_two_spheres() {
    for m in [GLASS, LIMESTONE] {
        let (r, v) = (0.010, 10.0);
        let e_star = m.1 / (2.0 * (1.0 - m.2 * m.2));
        let (m_star, r_star) = (0.5 * mass(r, m.3), 0.5 * r);
        let (tc, dmax, _) = hertz_impact(m_star, r_star, e_star, v);
        let dt = tc / 2000.0;
        let mut s = sim(&format!(
            r#"Scene(materials: [{}],
            spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: {r:e}, material: "{}", vel: ({:e}, 0.0, 0.0)),
                      Sphere(pos: ({:e}, 0.0, 0.0), radius: {r:e}, material: "{}", vel: ({:e}, 0.0, 0.0))],
            dt: Fixed({dt:e}), run: Steps(1))"#,
            hertz_material(m, 0.35, None),
            m.0,
            0.5 * v,
            2.0 * r * 1.0001,
            m.0,
            -0.5 * v
        ));
        let (t, dm) = two_sphere_impact(&mut s, r, dt);
        assert!(rel(t, tc) < 0.01, "{}: contact time {t} vs {tc}", m.0);
        assert!(rel(dm, dmax) < 0.01, "{}: overlap {dm} vs {dmax}", m.0);
        // elastic: the spheres separate at ∓v/2
        let (a, b) = (idx(&s, 0), idx(&s, 1));
        let vrel = s.ps.vel[b].x - s.ps.vel[a].x;
        assert!(rel(vrel, v) < 1e-3, "{}: rebound {vrel}", m.0);
    }
}

/// C&O test 2: elastic normal impact of a sphere with a rigid plane (aluminium and magnesium
/// alloys, R = 0.1 m, 0.2 m/s): contact time, overlap and peak force within 1 % of Hertz.
#[test]
fn test2_normal_impact_with_rigid_plane() {
    for m in [AL_ALLOY, MG_ALLOY] {
        let (r, v) = (0.1, 0.2);
        let (mut s, dt) = sphere_on_plane(m, r, 0.35, None, [0.0, 0.0, -v], [0.0; 3]);
        let e_star = m.1 / (1.0 - m.2 * m.2);
        let (tc, dmax, fmax) = hertz_impact(mass(r, m.3), r, e_star, v);
        let (t, dm, fm) = impact_on_plane(&mut s, dt);
        assert!(rel(t, tc) < 0.01, "{}: contact time {t} vs {tc}", m.0);
        assert!(rel(dm, dmax) < 0.01, "{}: overlap {dm} vs {dmax}", m.0);
        assert!(rel(fm, fmax) < 0.01, "{}: force {fm} vs {fmax}", m.0);
        assert!(
            rel(s.ps.vel[0].z, v) < 1e-3,
            "{}: rebound {}",
            m.0,
            s.ps.vel[0].z
        );
    }
}

/// C&O test 3: normal impact with a plane at 3.9 m/s for restitution coefficients 0.1–0.9
/// (aluminium oxide and nylon, R = 2.5 mm): the rebound speed is e v within 1 %.
#[test]
fn test3_restitution() {
    for m in [AL_OXIDE, NYLON] {
        for e in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let v = 3.9;
            let (mut s, dt) = sphere_on_plane(m, 0.0025, 0.35, Some(e), [0.0, 0.0, -v], [0.0; 3]);
            impact_on_plane(&mut s, dt);
            let got = s.ps.vel[0].z / v;
            assert!(rel(got, e) < 0.01, "{} e {e}: rebound ratio {got}", m.0);
        }
    }
}

/// Rigid-body impact in gross sliding: the tangential impulse is μ m (1 + e) v_n against
/// the slip of the contact point. Returns (v_t', ω') for a sphere of radius r, incoming
/// tangential speed `vt` along x (≥ 0) and spin `w` about y, normal speed `vn`.
fn sliding_rebound(r: f64, mu: f64, e: f64, vn: f64, vt: f64, w: f64) -> (f64, f64) {
    // contact point (at −r z) velocity along x: vt − r w·(y × z)·… = vt − r w
    let slip = vt - r * w;
    let j = mu * (1.0 + e) * vn * slip.signum();
    // Δv = −j; Δω_y: torque (−r z) × (−j m x) = r j m (z × x) = r j m y, / (0.4 m r²)
    (vt - j, w + 2.5 * j / r)
}

/// An impact on the plane at normal speed `vn`, tangential speed `vt` (along x) and spin `w0`
/// (about y) in gross sliding (asserted: |v_t − r ω₀| > 3.5 μ (1 + e) v_n): runs it, checks the
/// rebound tangential velocity and spin against [`sliding_rebound`] within 3 % (`what` labels
/// the case) and returns the sphere's velocity and spin after, with the analytic (v_t', ω').
#[allow(clippy::too_many_arguments)]
fn sliding_case(
    what: &str,
    m: (&str, f64, f64, f64),
    r: f64,
    mu: f64,
    e: f64,
    vn: f64,
    vt: f64,
    w0: f64,
) -> (V3, V3, f64, f64) {
    assert!(
        (vt - r * w0).abs() > 3.5 * mu * (1.0 + e) * vn,
        "{what} is in gross sliding"
    );
    let (mut s, dt) = sphere_on_plane(m, r, mu, Some(e), [vt, 0.0, -vn], [0.0, w0, 0.0]);
    impact_on_plane(&mut s, dt);
    let (vt1, w1) = sliding_rebound(r, mu, e, vn, vt, w0);
    let (v, w) = (s.ps.vel[0], s.ps.angvel[0]);
    assert!(rel(v.x, vt1) < 0.03, "{what}: v_t' {} vs {vt1}", v.x);
    assert!(rel(w.y, w1) < 0.03, "{what}: ω' {} vs {w1}", w.y);
    (v, w, vt1, w1)
}

/// C&O test 4: oblique impact of an aluminium oxide sphere (R = 2.5 mm, μ = 0.092, e = 0.98)
/// on a plane at 3.9 m/s and incidence angles 40°–80° (gross sliding: tan θ > 3.5 μ (1 + e)):
/// rebound tangential velocity, spin, rebound angle and tangential restitution within 3 %.
#[test]
fn test4_oblique_impact_constant_speed() {
    let (m, r, mu, e, speed) = (AL_OXIDE, 0.0025, 0.092, 0.98, 3.9);
    for deg in [40.0_f64, 50.0, 60.0, 70.0, 80.0] {
        let th = deg.to_radians();
        let (vn, vt) = (speed * th.cos(), speed * th.sin());
        let (v, w, vt1, w1) = sliding_case(&format!("{deg}°"), m, r, mu, e, vn, vt, 0.0);
        assert!(rel(v.z, e * vn) < 0.01, "{deg}°: normal rebound {}", v.z);
        // rebound angle of the contact point's velocity and the tangential restitution
        // (C&O's normalised variables: both in terms of the contact point)
        let (ang, ang_a) = ((v.x - r * w.y) / v.z, (vt1 - r * w1) / (e * vn));
        assert!(
            rel(ang, ang_a) < 0.03,
            "{deg}°: rebound tan {ang} vs {ang_a}"
        );
        let (et, et_a) = ((v.x - r * w.y) / vt, (vt1 - r * w1) / vt);
        assert!(
            rel(et, et_a) < 0.03,
            "{deg}°: tangential restitution {et} vs {et_a}"
        );
    }
}

/// C&O test 6: a spinning sphere (aluminium alloy, R = 0.1 m, μ = 0.4, e = 0.5) dropped at
/// 0.2 m/s on a plane, spins ω₀ in gross sliding (r ω₀ > 3.5 μ (1 + e) v_n): rebound
/// tangential velocity and spin within 3 %.
#[test]
fn test6_impact_with_spin() {
    let (m, r, mu, e, vn) = (AL_ALLOY, 0.1, 0.4, 0.5, 0.2);
    for w0 in [5.0, 10.0, 20.0, 50.0, 100.0] {
        sliding_case(&format!("ω₀ {w0}"), m, r, mu, e, vn, 0.0, w0);
    }
}

/// C&O test 5: oblique impact of an aluminium oxide sphere at a constant normal speed of 5 m/s
/// with tangential speeds 4–20 m/s (gross sliding: v_t > 3.5 μ (1 + e) v_n = 3.2 m/s):
/// rebound tangential velocity and spin within 3 % of rigid-body theory.
#[test]
fn test5_oblique_impact_constant_normal_speed() {
    let (m, r, mu, e, vn) = (AL_OXIDE, 0.0025, 0.092, 0.98, 5.0);
    for vt in [4.0, 6.0, 8.0, 12.0, 20.0] {
        let (v, _, _, _) = sliding_case(&format!("v_t {vt}"), m, r, mu, e, vn, vt, 0.0);
        assert!(rel(v.z, e * vn) < 0.01, "v_t {vt}: normal rebound {}", v.z);
    }
}

/// C&O test 8: elastic normal impact of two spheres of different materials (glass on
/// limestone, R = 10 mm, relative speed 10 m/s): contact time and maximum overlap within 1 % of
/// Hertz with the mixed E* and m*, and the velocities after of a 1-D elastic collision.
#[test]
fn test8_impact_of_different_materials() {
    let (r, v) = (0.010, 10.0);
    let (ma, mb) = (mass(r, GLASS.3), mass(r, LIMESTONE.3));
    let e_star = 1.0
        / ((1.0 - GLASS.2 * GLASS.2) / GLASS.1 + (1.0 - LIMESTONE.2 * LIMESTONE.2) / LIMESTONE.1);
    let m_star = ma * mb / (ma + mb);
    let (tc, dmax, _) = hertz_impact(m_star, 0.5 * r, e_star, v);
    let dt = tc / 2000.0;
    let mut s = sim(&format!(
        r#"Scene(materials: [{}, {}],
        spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: {r:e}, material: "glass", vel: ({:e}, 0.0, 0.0)),
                  Sphere(pos: ({:e}, 0.0, 0.0), radius: {r:e}, material: "limestone")],
        dt: Fixed({dt:e}), run: Steps(1))"#,
        hertz_material(GLASS, 0.35, None),
        hertz_material(LIMESTONE, 0.35, None),
        v,
        2.0 * r * 1.0001
    ));
    let (t, dm) = two_sphere_impact(&mut s, r, dt);
    assert!(rel(t, tc) < 0.01, "contact time {t} vs {tc}");
    assert!(rel(dm, dmax) < 0.01, "overlap {dm} vs {dmax}");
    let (a, b) = (idx(&s, 0), idx(&s, 1));
    let (va, vb) = ((ma - mb) / (ma + mb) * v, 2.0 * ma / (ma + mb) * v);
    assert!(
        (s.ps.vel[a].x - va).abs() < 1e-3 * v,
        "glass after {} vs {va}",
        s.ps.vel[a].x
    );
    assert!(
        rel(s.ps.vel[b].x, vb) < 1e-3,
        "limestone after {} vs {vb}",
        s.ps.vel[b].x
    );
}

/// DMT adhesion (`Hertz(surface_energy: γ)`, contact/law/hertz.rs): a sphere on a floor rests
/// at the overlap where kn δ^{3/2} = m g + 4π r γ; hung under a ceiling it stays stuck at
/// kn δ^{3/2} = 4π r γ − m g while m g < 4π r γ, and falls off when m g exceeds it.
#[test]
fn dmt_adhesion_rest_overlaps_and_pull_off() {
    let (r, rho, gamma) = (1e-3, 2500.0, 0.05);
    let (e, nu) = (1e7, 0.25);
    let m = mass(r, rho);
    let f_adh = 4.0 * PI * r * gamma; // 6.3e-4 N; m g = 1.0e-4 N
    let e_star = 1.0 / ((1.0 - nu * nu) / e + (1.0 - nu * nu) / 1e30);
    let kn = 4.0 / 3.0 * e_star * r.sqrt();
    // gravity `g_z` along z; the wall at z = 0 facing `side` (+1: a floor, −1: a ceiling, the
    // sphere below it)
    let run = |g_z: f64, side: f64| {
        let mut s = sim(&format!(
            r#"Scene(materials: [Hertz(name: "a", young: {e:e}, poisson: {nu}, friction_angle: 0.5, density: {rho:e}, restitution: 0.5, surface_energy: {gamma:e}),
                                 Hertz(name: "w", young: 1e30, poisson: {nu}, friction_angle: 0.5, density: 1.0, surface_energy: {gamma:e})],
            walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, {side:e}), material: "w")],
            spheres: [Sphere(pos: (0.0, 0.0, {:e}), radius: {r:e}, material: "a")],
            gravity: (0.0, 0.0, {g_z:e}), damping: 0.3, dt: Fixed(2e-6), run: Steps(1),
            domain: Domain(lo: (-0.1, -0.1, -1.0), hi: (0.1, 0.1, 0.1)))"#,
            side * (r - 1e-7)
        ));
        steps(&mut s, 50_000); // 0.1 s
        s
    };
    let overlap = |s: &Simulation, side: f64| r - side * s.ps.pos[0].z;
    // floor: kn δ^{3/2} = m g + F_a
    let floor = run(-9.81, 1.0);
    let want = ((m * 9.81 + f_adh) / kn).powf(2.0 / 3.0);
    let got = overlap(&floor, 1.0);
    assert!(rel(got, want) < 1e-6, "floor: δ {got}, predicted {want}");
    // ceiling, m g < F_a: held at kn δ^{3/2} = F_a − m g
    let held = run(-9.81, -1.0);
    let want = ((f_adh - m * 9.81) / kn).powf(2.0 / 3.0);
    let got = overlap(&held, -1.0);
    assert!(rel(got, want) < 1e-6, "ceiling: δ {got}, predicted {want}");
    // ceiling, m g = 1.5 F_a: pulled off (the contact ends, the sphere falls away)
    let g_off = 1.5 * f_adh / m;
    let off = run(-g_off, -1.0);
    assert!(
        overlap(&off, -1.0) < -0.1 * r,
        "m g > F_a: still at overlap {}",
        overlap(&off, -1.0)
    );
    // the regime tested: adhesion about 6 times the weight
    assert!(f_adh > 6.0 * m * 9.81);
}
