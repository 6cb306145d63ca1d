//! Triangle meshes (issue 21): contact with single triangles, seams and bends, a closed box
//! against plane walls, a rotating drum. Each test states the analytic result it checks and
//! its tolerance; all run in a few seconds (release).

use crate::common;
use crate::support::shapes;
use common::*;
use demhpc::mesh::stl;
use demhpc::scene::Scene;
use demhpc::{Simulation, V3};
use shapes::drum;
use std::f64::consts::PI;
use std::path::PathBuf;

/// A scene directory with STL files in it (removed on drop).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("demhpc-mesh-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    fn stl(&self, file: &str, tris: &[[V3; 3]]) {
        std::fs::write(self.0.join(file), stl::to_ascii("t", tris)).unwrap();
    }
    fn sim(&self, text: &str) -> Simulation {
        let scene = Scene::parse(text, &self.0.join("t.ron")).unwrap_or_else(|e| panic!("{e}"));
        Simulation::new(scene).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

const R: f64 = 0.01;
const RHO: f64 = 2600.0;
const E: f64 = 1e7;
const G: f64 = 9.81;
/// friction_angle 0.5 rad: μ = tan 0.5.
const PHI: f64 = 0.5;

fn mass() -> f64 {
    4.0 / 3.0 * PI * R.powi(3) * RHO
}

fn mat() -> String {
    format!(
        r#"materials: [Frict(name: "m", young: {E:e}, poisson: 0.25, friction_angle: {PHI}, density: {RHO})]"#
    )
}

/// A large triangle in the plane through the origin tilted by θ about y (normal
/// (−sin θ, 0, cos θ)), and a sphere (rotations blocked: a sliding block) resting on it at
/// the static overlap m g cos θ / K_N, K_N = E r (mirror sphere).
fn incline(theta: f64, damping: f64, name: &str) -> (Dir, Simulation) {
    let d = Dir::new(name);
    let (s, y) = (
        V3::new(theta.cos(), 0.0, theta.sin()),
        V3::new(0.0, 1.0, 0.0),
    );
    d.stl("slope.stl", &[[s * -1.0 - y, s * 1.0 - y, y * 1.0]]);
    let n = V3::new(-theta.sin(), 0.0, theta.cos());
    let delta = mass() * G * theta.cos() / (E * R);
    let c = s * -0.3 + n * (R - delta);
    let sim = d.sim(&format!(
        r#"Scene({}, meshes: [Mesh(file: "slope.stl", material: "m")],
        spheres: [Sphere(pos: ({:e}, {:e}, {:e}), radius: {R}, material: "m", blocked: "XYZ")],
        gravity: (0.0, 0.0, -{G}), dt: Fixed(1e-5), run: Steps(1), damping: {damping},
        domain: Domain(lo: (-2.0, -2.0, -2.0), hi: (2.0, 2.0, 2.0)))"#,
        mat(),
        c.x,
        c.y,
        c.z
    ));
    (d, sim)
}

/// Below the friction angle (θ = 0.4 < φ = 0.5) the sphere stays (Cundall damping 0.3 calms
/// the shear spring's oscillation): after 0.1 s it moved less than 1e-5 m (the spring's
/// stretch, m g sin θ / K_T ≈ 1e-6 m, plus its first swing), and the mesh carries its
/// weight: normal force m g cos θ, tangential m g sin θ, within 1e-3 relative.
#[test]
fn incline_holds_below_friction_angle() {
    let theta = 0.4;
    let (_d, mut s) = incline(theta, 0.3, "hold");
    let x0 = s.ps.pos[0];
    steps(&mut s, 10_000);
    let n = V3::new(-theta.sin(), 0.0, theta.cos());
    let moved = (s.ps.pos[0] - x0).norm();
    assert!(moved < 1e-5, "moved {moved} m");
    let f = s.stats().mesh_force[0].0;
    let (fn_, ft) = (-f.dot(&n), (f - n * f.dot(&n)).norm()); // force on the mesh
    let mg = mass() * G;
    eprintln!(
        "incline hold: moved {moved:e} m, normal {:e} and tangential {:e} relative",
        rel(fn_, mg * theta.cos()),
        rel(ft, mg * theta.sin())
    );
    assert!(
        rel(fn_, mg * theta.cos()) < 1e-3,
        "normal {fn_} vs {}",
        mg * theta.cos()
    );
    assert!(
        rel(ft, mg * theta.sin()) < 1e-3,
        "tangential {ft} vs {}",
        mg * theta.sin()
    );
}

/// Above the friction angle (θ = 0.6) it slides: a = g (sin θ − μ cos θ), measured between
/// 0.05 and 0.1 s (after the shear spring's short elastic phase) within 1 %.
#[test]
fn incline_slides_above_friction_angle() {
    let theta: f64 = 0.6;
    let (_d, mut s) = incline(theta, 0.0, "slide");
    steps(&mut s, 5_000);
    let v0 = s.ps.vel[0].norm();
    steps(&mut s, 5_000);
    let a = G * (theta.sin() - PHI.tan() * theta.cos());
    let a_meas = (s.ps.vel[0].norm() - v0) / 0.05;
    eprintln!(
        "incline slide: a = {a_meas} m/s² vs {a} ({:e} relative)",
        rel(a_meas, a)
    );
    assert!(rel(a_meas, a) < 0.01, "acceleration {a_meas} vs {a}");
    assert!(s.ps.vel[0].x < 0.0, "slides down the slope");
}

/// Sphere sliding then rolling along x over z = 0, starting at the static overlap with
/// 0.1 m/s and no spin: `floor` is either a plane wall or a mesh.
fn roller(d: &Dir, floor: &str, y0: f64) -> Simulation {
    roller_with(d, &mat(), floor, y0)
}

/// [`roller`] with other materials (and options) than [`mat`].
fn roller_with(d: &Dir, mat: &str, floor: &str, y0: f64) -> Simulation {
    let delta = mass() * G / (E * R);
    d.sim(&format!(
        r#"Scene({mat}, {floor},
        spheres: [Sphere(pos: (-2e-4, {y0:e}, {:e}), radius: {R}, material: "m", vel: (0.1, 0.0, 0.0))],
        gravity: (0.0, 0.0, -{G}), dt: Fixed(1e-5), run: Steps(1),
        domain: Domain(lo: (-1.0, -1.0, -1.0), hi: (1.0, 1.0, 1.0)))"#,
        R - delta
    ))
}

fn p(x: f64, y: f64, z: f64) -> V3 {
    V3::new(x, y, z)
}

/// Relative difference of two vectors, against `scale`.
fn vdiff(a: V3, b: V3, scale: f64) -> f64 {
    (a - b).norm() / scale
}

/// A sphere crossing the diagonal seam of a square of two coplanar triangles (while it still
/// slides, so the shear spring carries the Coulomb force across the seam) moves as on one
/// plane wall: positions, velocities and spins within 1e-9 relative at every one of 3000
/// steps, one contact at a time — with each frictional law (Cundall–Strack, Hertz–Mindlin,
/// with DMT adhesion too, LAMMPS Hooke) and with rolling resistance (constant torque, EPSD).
#[test]
fn seam_of_coplanar_triangles_is_invisible() {
    let d = Dir::new("seam");
    d.stl(
        "square.stl",
        &[
            [p(-1.0, -1.0, 0.0), p(1.0, -1.0, 0.0), p(1.0, 1.0, 0.0)],
            [p(-1.0, -1.0, 0.0), p(1.0, 1.0, 0.0), p(-1.0, 1.0, 0.0)],
        ],
    );
    let laws = [
        ("Cundall-Strack", mat()),
        (
            "Hertz-Mindlin",
            format!(
                r#"materials: [Hertz(name: "m", young: {E:e}, poisson: 0.3, friction_angle: {PHI}, density: {RHO}, restitution: 0.5)]"#
            ),
        ),
        (
            "Hooke",
            format!(
                r#"materials: [Hooke(name: "m", kn: 1e5, kt: 2.5e4, gamma_n: 100.0, gamma_t: 50.0, xmu: 0.5, density: {RHO}, coulomb: Total)]"#
            ),
        ),
        (
            "rolling",
            format!("{}, rolling: (mu_r: 0.1, mu_t: 0.05)", mat()),
        ),
        (
            "rolling EPSD",
            format!("{}, rolling: (mu_r: 0.1, mu_t: 0.05, model: Epsd2)", mat()),
        ),
        (
            "Hertz-Mindlin DMT",
            format!(
                r#"materials: [Hertz(name: "m", young: {E:e}, poisson: 0.3, friction_angle: {PHI}, density: {RHO}, restitution: 0.5, surface_energy: 0.01)]"#
            ),
        ),
    ];
    for (law, m) in laws {
        let wall =
            r#"walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m")]"#;
        let mut a = roller_with(&d, &m, wall, 0.0);
        let mut b = roller_with(
            &d,
            &m,
            r#"meshes: [Mesh(file: "square.stl", material: "m")]"#,
            0.0,
        );
        let mut worst = [0.0f64; 3];
        let mut crossed = false;
        for _ in 0..3000 {
            a.step().unwrap();
            b.step().unwrap();
            worst[0] = worst[0].max(vdiff(a.ps.pos[0], b.ps.pos[0], R));
            worst[1] = worst[1].max(vdiff(a.ps.vel[0], b.ps.vel[0], 0.1));
            worst[2] = worst[2].max(vdiff(a.ps.angvel[0], b.ps.angvel[0], 0.1 / R));
            let active = b.wall_pairs.active.iter().filter(|&&x| x).count();
            assert!(active <= 1, "{law}: {active} contacts with the square");
            crossed |= b.ps.pos[0].x > b.ps.pos[0].y + 1e-4;
        }
        eprintln!("seam, {law}: worst relative differences pos/vel/spin {worst:?}");
        assert!(crossed, "{law}: the sphere crossed the seam");
        assert!(a.ps.angvel[0].norm() > 0.0, "{law}: it spins");
        assert!(worst.iter().all(|&w| w <= 1e-9), "{law}: {worst:?}");
    }
}

/// Over a convex bend of 5° (z = 0 for x < 0, z = −x tan 5° beyond) a rolling sphere feels one
/// contact at a time and a continuous normal force: no step-to-step jump of the force on the
/// mesh above 1 % of m g (a double contact at the ridge would add ~m g at once); on the far
/// side its normal force averaged over the last 2 000 steps (ten periods of the undamped
/// normal spring's swing, excited by the ridge) is m g cos 5° within 1 %.
#[test]
fn convex_bend_has_no_bump() {
    let d = Dir::new("bend");
    let t = 5f64.to_radians().tan();
    d.stl(
        "bend.stl",
        &[
            [p(-1.0, -1.0, 0.0), p(0.0, -1.0, 0.0), p(0.0, 1.0, 0.0)],
            [p(-1.0, -1.0, 0.0), p(0.0, 1.0, 0.0), p(-1.0, 1.0, 0.0)],
            [p(0.0, -1.0, 0.0), p(1.0, -1.0, -t), p(1.0, 1.0, -t)],
            [p(0.0, -1.0, 0.0), p(1.0, 1.0, -t), p(0.0, 1.0, 0.0)],
        ],
    );
    let mut s = roller(
        &d,
        r#"meshes: [Mesh(file: "bend.stl", material: "m")]"#,
        0.3,
    );
    s.ps.pos[0].x = -0.003;
    s.ps.angvel[0].y = 0.1 / R; // rolling already
    let mg = mass() * G;
    let (mut last, mut worst, mut mean) = (mg, 0.0f64, 0.0);
    let mut max_contacts = 0;
    for k in 0..12_000 {
        s.step().unwrap();
        let f = s.stats().mesh_force[0].0.norm();
        worst = worst.max((f - last).abs());
        last = f;
        if k >= 10_000 {
            mean += f / 2000.0;
        }
        max_contacts = max_contacts.max(s.wall_pairs.active.iter().filter(|&&x| x).count());
    }
    eprintln!(
        "bend: largest step-to-step change of |F| {:.3e} m g, final x {}",
        worst / mg,
        s.ps.pos[0].x
    );
    assert!(
        s.ps.pos[0].x > 0.005,
        "went over the ridge: x = {}",
        s.ps.pos[0].x
    );
    assert_eq!(max_contacts, 1);
    assert!(worst < 0.01 * mg, "jump {} m g", worst / mg);
    let expect = mg * 5f64.to_radians().cos();
    eprintln!(
        "bend: mean normal force beyond {:.3e} relative",
        rel(mean, expect)
    );
    assert!(rel(mean, expect) < 0.01, "{mean} vs {expect}");
}

/// The twelve triangles of the box [0, l]² × [0, h], in the order of `five_walls` (floor,
/// x = 0, x = l, y = 0, y = l), then the lid.
fn box_triangles(l: f64, h: f64) -> Vec<[V3; 3]> {
    let quad = |a: V3, b: V3, c: V3, d: V3| [[a, b, c], [a, c, d]];
    let c = |x: f64, y: f64, z: f64| p(x * l, y * l, z * h);
    [
        quad(c(0., 0., 0.), c(1., 0., 0.), c(1., 1., 0.), c(0., 1., 0.)),
        quad(c(0., 0., 0.), c(0., 1., 0.), c(0., 1., 1.), c(0., 0., 1.)),
        quad(c(1., 0., 0.), c(1., 0., 1.), c(1., 1., 1.), c(1., 1., 0.)),
        quad(c(0., 0., 0.), c(0., 0., 1.), c(1., 0., 1.), c(1., 0., 0.)),
        quad(c(0., 1., 0.), c(1., 1., 0.), c(1., 1., 1.), c(0., 1., 1.)),
        quad(c(0., 0., 1.), c(0., 1., 1.), c(1., 1., 1.), c(1., 0., 1.)),
    ]
    .concat()
}

/// 216 spheres (the `settle` benchmark's lattice, 6³) settled for 0.14 s in an open box of
/// five plane walls or in a closed box of twelve triangles (the lid out of reach): the same
/// packing — in fact the same bits: the facets' distances and normals of axis-aligned faces
/// are the planes', each sphere's wall forces add in the same order (facets in the walls'
/// order), and no history passes between the faces of a corner. Asserted: identical positions,
/// hence mean height, coordination and contact counts; the packing has nearly come to rest
/// (kinetic energy below 1 % of the potential energy released), and the same energy budget.
#[test]
fn closed_box_settles_as_five_walls() {
    let d = Dir::new("box");
    let l = 0.0144;
    d.stl("box.stl", &box_triangles(l, 0.04));
    let scene = |bounds: &str| {
        format!(
            r#"Scene(materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, density: 2600.0)],
            {bounds},
            spheres: [Lattice(material: "g", spacing: 2.4e-3, counts: (6, 6, 6), radius: 1e-3,
                              polydispersity: 0.1, jitter: 0.05e-3, seed: 20240601)],
            gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(1),
            energy: true,
            domain: Domain(lo: (-0.002, -0.002, -0.002), hi: (0.026, 0.026, 0.05)))"#
        )
    };
    let walls = format!(
        r#"walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
                   Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
                   Wall(point: ({l}, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
                   Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 1.0, 0.0), material: "g"),
                   Wall(point: (0.0, {l}, 0.0), normal: (0.0, -1.0, 0.0), material: "g")]"#
    );
    let mut a = d.sim(&scene(&walls));
    let mut b = d.sim(&scene(r#"meshes: [Mesh(file: "box.stl", material: "g")]"#));
    let mean_z = |s: &Simulation| {
        (0..s.ps.n_owned).map(|i| s.ps.pos[i].z).sum::<f64>() / s.ps.n_owned as f64
    };
    let z0 = mean_z(&a);
    let ea0 = a.energy_budget().unwrap();
    steps(&mut a, 20_000);
    steps(&mut b, 20_000);
    let summary = |s: &Simulation| {
        let n = s.ps.n_owned;
        let z = (0..n).map(|i| s.ps.pos[i].z).sum::<f64>() / n as f64;
        let ss = s.pairs.active.iter().filter(|&&x| x).count();
        let sw = s.wall_pairs.active.iter().filter(|&&x| x).count();
        (
            z,
            (2 * ss + sw) as f64 / n as f64,
            ss,
            sw,
            s.ps.kinetic_energy().0,
        )
    };
    let (sa, sb) = (summary(&a), summary(&b));
    let same = a.ps.pos == b.ps.pos;
    eprintln!("box: walls {sa:?}\n     mesh  {sb:?}\n     identical positions: {same}");
    assert!(same, "the same packing, bit for bit");
    // the energy budget counts the facets as the walls (the same contact path), and closes
    // within 5e-3 of gravity's work (measured 2.4e-3: 216 impacts on the floor at Δt = 7 µs,
    // the leapfrog's truncation at each contact's start)
    let (ea, eb) = (a.energy_budget().unwrap(), b.energy_budget().unwrap());
    eprintln!("     energy {ea:?}");
    assert_eq!(ea, eb, "walls and facets: the same budget");
    let closure = (ea.total() - ea0.total()).abs() / ea.gravity;
    assert!(closure < 5e-3, "closure {closure:e} of gravity's work");
    assert!(ea.friction > 0.0 && ea.damping > 0.0);
    assert_eq!((sa.2, sa.3), (sb.2, sb.3), "contact counts");
    let m: f64 = a.ps.mass[..a.ps.n_owned].iter().sum();
    let released = m * 9.81 * (z0 - sa.0);
    eprintln!(
        "     kinetic / released potential energy {:.2e}",
        sa.4 / released
    );
    assert!(
        sa.4 < 0.01 * released,
        "settling: kinetic energy {} J of {released} J",
        sa.4
    );
}

/// A sphere (μ = tan 1.2 ≈ 2.6) at the bottom of a drum turning at ω = 1 rad/s about y: the
/// wall velocity at each contact point is ω × (q − axis point), of speed ω |q − axis| (to
/// 1e-12), with |q − axis| between the faces' distance R_c = R cos(π/n) and R; the sphere's
/// surface at the contact moves with the wall (no slip: averaged over 20 ms after a 30 ms
/// spin-up, the difference is below 1 % of ω R_c); the torque on the drum in `stats` is q × F of the contact (to 1e-12).
#[test]
fn rotating_drum_wall_speed() {
    let d = Dir::new("drum");
    let (big, n, omega) = (0.05, 64, 1.0);
    d.stl("drum.stl", &drum(big, 0.03, n));
    let rc = big * (PI / n as f64).cos();
    let delta = mass() * G / (E * R);
    let mut s = d.sim(&format!(
        r#"Scene(materials: [Frict(name: "m", young: {E:e}, poisson: 0.25, friction_angle: 1.2, density: {RHO})],
        meshes: [Mesh(file: "drum.stl", material: "m",
                      motion: Rotate(point: (0.0, 0.0, 0.0), axis: (0.0, 1.0, 0.0), omega: {omega}))],
        spheres: [Sphere(pos: (0.0, 0.0, {:e}), radius: {R}, material: "m")],
        gravity: (0.0, 0.0, -{G}), dt: Fixed(1e-5), run: Steps(1),
        domain: Domain(lo: (-0.1, -0.1, -0.1), hi: (0.1, 0.1, 0.1)))"#,
        -(rc - R + delta)
    ));
    // no slip on average: the sphere's surface at the contact moves with the wall (the
    // tangential spring swings with a period of ~200 steps after the spin-up; averaged over
    // the last 2 000 steps)
    steps(&mut s, 3000);
    let mut mean_slip = V3::zeros();
    for _ in 0..2000 {
        s.step().unwrap();
        let k = (0..s.wall_pairs.len())
            .find(|&k| s.wall_pairs.active[k])
            .expect("in contact");
        let q = s.facet_hits()[k].q;
        let (c, v, w) = (s.ps.pos[0], s.ps.vel[0], s.ps.angvel[0]);
        mean_slip += (v + w.cross(&(q - c)) - s.meshes.point_velocity(0, q)) / 2000.0;
    }
    let mut contact = None;
    for k in 0..s.wall_pairs.len() {
        if !s.wall_pairs.active[k] {
            continue;
        }
        assert!(contact.is_none(), "one contact");
        let q = s.facet_hits()[k].q;
        let v = s.meshes.point_velocity(0, q);
        let arm = (q - V3::new(0.0, q.y, 0.0)).norm();
        assert!(
            rel(v.norm(), omega * arm) < 1e-12,
            "wall speed {} vs ω r {}",
            v.norm(),
            omega * arm
        );
        assert!(v.y.abs() < 1e-15 && v.dot(&V3::new(q.x, 0.0, q.z)).abs() < 1e-12);
        assert!(
            arm > rc * (1.0 - 1e-12) && arm <= big * (1.0 + 1e-12),
            "arm {arm}"
        );
        contact = Some((q, v));
    }
    let (q, v_wall) = contact.expect("in contact");
    let slip = mean_slip.norm();
    eprintln!(
        "drum: wall speed {:.6e} (ω R_c {:.6e}), mean slip {:.3e} of it",
        v_wall.norm(),
        omega * rc,
        slip / (omega * rc)
    );
    assert!(slip < 0.01 * omega * rc, "slip {slip}");
    let (f, t) = s.stats().mesh_force[0];
    let expect = q.cross(&f);
    assert!(
        (t - expect).norm() <= 1e-12 * q.norm() * f.norm(),
        "torque {t:?} vs {expect:?}"
    );
}

/// A mesh 1000 times larger than the spheres' bounding box (an STL in mm read as m) is run,
/// with a warning naming `scale` at the mesh's place in the scene.
#[test]
fn huge_mesh_warns_of_units() {
    let d = Dir::new("units");
    d.stl("floor_mm.stl", &box_triangles(100.0, 50.0)); // a 100 mm box, meant in mm
    std::fs::write(
        d.0.join("t.ron"),
        format!(
            r#"Scene({},
    meshes: [Mesh(file: "floor_mm.stl", material: "m")],
    spheres: [Sphere(pos: (0.05, 0.05, 0.02), radius: {R}, material: "m")],
    dt: Fixed(1e-5), run: Steps(1))"#,
            mat()
        ),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_demhpc"))
        .args(["check", "t.ron"])
        .current_dir(&d.0)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("t.ron:2:") && err.contains("meshes[0].scale"),
        "{err}"
    );
    assert!(err.contains("unit mistake"), "{err}");
}

/// One step of a sphere (no gravity, at rest) pressed by δ = 1e-4 r onto a convex feature: the
/// apex shared by the six triangles of a pyramid, or the ridge shared by the two faces of a
/// roof (slopes 30°). Each is one contact (the vertex or edge contacts of the triangles at the
/// same point merged), pushing along (c − q) with the plane wall's force for the same overlap
/// (to 1e-12 relative).
#[test]
fn vertex_and_edge_contacts_count_once() {
    let d = Dir::new("apex");
    let s = 30f64.to_radians().tan();
    let fan: Vec<[V3; 3]> = (0..6)
        .map(|k| {
            let a = |k: usize| {
                let t = PI / 3.0 * k as f64;
                p(t.cos(), t.sin(), -s)
            };
            [p(0.0, 0.0, 0.0), a(k), a(k + 1)]
        })
        .collect();
    d.stl("apex.stl", &fan);
    d.stl(
        "roof.stl",
        &[
            [p(-1.0, -1.0, -s), p(0.0, -1.0, 0.0), p(0.0, 1.0, 0.0)],
            [p(-1.0, -1.0, -s), p(0.0, 1.0, 0.0), p(-1.0, 1.0, -s)],
            [p(0.0, -1.0, 0.0), p(1.0, -1.0, -s), p(1.0, 1.0, -s)],
            [p(0.0, -1.0, 0.0), p(1.0, 1.0, -s), p(0.0, 1.0, 0.0)],
        ],
    );
    let one = |bounds: &str| {
        let mut sim = d.sim(&format!(
            r#"Scene({}, {bounds},
            spheres: [Sphere(pos: (0.0, 0.0, {:e}), radius: {R}, material: "m")],
            dt: Fixed(1e-6), run: Steps(1),
            domain: Domain(lo: (-1.0, -1.0, -1.0), hi: (1.0, 1.0, 1.0)))"#,
            mat(),
            R * (1.0 - 1e-4)
        ));
        sim.step().unwrap();
        let n = sim.wall_pairs.active.iter().filter(|&&a| a).count();
        let f = sim.stats();
        let f = match f.mesh_force.first() {
            Some(m) => m.0,
            None => f.wall_force[0],
        };
        (n, f)
    };
    let (_, plane) =
        one(r#"walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m")]"#);
    for file in ["apex.stl", "roof.stl"] {
        let (n, f) = one(&format!(r#"meshes: [Mesh(file: "{file}", material: "m")]"#));
        eprintln!("{file}: {n} contact(s), force {f:?} (plane {plane:?})");
        assert_eq!(n, 1, "{file}: contacts");
        assert!(
            (f - plane).norm() <= 1e-12 * plane.norm(),
            "{file}: {f:?} vs {plane:?}"
        );
    }
}

/// A conveyor: the floor (two triangles, `Translate(velocity: (0.05, 0, 0))`) slides under a
/// sphere at rest, whose friction accelerates it to rolling — against a plane wall with the
/// same velocity: the same trajectory within 1e-9 relative over 3 000 steps (the wall velocity
/// at the contact is the mesh's).
#[test]
fn translating_mesh_is_a_moving_wall() {
    let d = Dir::new("conveyor");
    d.stl(
        "belt.stl",
        &[
            [p(-0.5, -0.5, 0.0), p(0.5, -0.5, 0.0), p(0.5, 0.5, 0.0)],
            [p(-0.5, -0.5, 0.0), p(0.5, 0.5, 0.0), p(-0.5, 0.5, 0.0)],
        ],
    );
    let sim = |floor: &str| {
        let mut s = roller(&d, floor, 0.0);
        s.ps.vel[0] = V3::zeros();
        s
    };
    let mut a = sim(
        r#"walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m", velocity: (0.05, 0.0, 0.0))]"#,
    );
    let mut b = sim(
        r#"meshes: [Mesh(file: "belt.stl", material: "m", motion: Translate(velocity: (0.05, 0.0, 0.0)))]"#,
    );
    let (mut worst, mut mean) = (0.0f64, 0.0);
    for k in 0..3000 {
        a.step().unwrap();
        b.step().unwrap();
        worst = worst.max(vdiff(a.ps.vel[0], b.ps.vel[0], 0.05));
        worst = worst.max(vdiff(a.ps.pos[0], b.ps.pos[0], R));
        if k >= 1000 {
            mean += b.ps.vel[0].x / 2000.0;
        }
    }
    eprintln!("conveyor: mean sphere speed {mean:.4e} m/s, worst relative difference {worst:e}");
    // the sliding phase (2.7 ms) ends at v = 2/7 of the belt's speed (rolling without slip
    // on it); the released shear spring then swings (period ~70 steps): the mean over the last
    // 2 000 steps within 2 %
    assert!(rel(mean, 0.05 * 2.0 / 7.0) < 0.02, "speed {mean}");
    assert!(worst <= 1e-9, "{worst:e}");
}

/// A table of one segment, `Table(points: [(0, 0), (1, (0.05, 0, 0))])`, is the constant
/// velocity 0.05 m/s (s = v t/1 and v = Δs/1 are exact): the conveyor of
/// [`translating_mesh_is_a_moving_wall`] gives the bit-identical trajectory.
#[test]
fn one_segment_table_is_a_translation() {
    let d = Dir::new("table");
    d.stl(
        "belt.stl",
        &[
            [p(-0.5, -0.5, 0.0), p(0.5, -0.5, 0.0), p(0.5, 0.5, 0.0)],
            [p(-0.5, -0.5, 0.0), p(0.5, 0.5, 0.0), p(-0.5, 0.5, 0.0)],
        ],
    );
    let sim = |motion: &str| {
        let mut s = roller(
            &d,
            &format!(r#"meshes: [Mesh(file: "belt.stl", material: "m", motion: {motion})]"#),
            0.0,
        );
        s.ps.vel[0] = V3::zeros();
        s
    };
    let mut a = sim("Translate(velocity: (0.05, 0.0, 0.0))");
    let mut b = sim("Table(points: [(0.0, (0.0, 0.0, 0.0)), (1.0, (0.05, 0.0, 0.0))])");
    for _ in 0..3000 {
        a.step().unwrap();
        b.step().unwrap();
        assert_eq!(a.ps.pos[0], b.ps.pos[0]);
        assert_eq!(a.ps.vel[0], b.ps.vel[0]);
        assert_eq!(a.ps.angvel[0], b.ps.angvel[0]);
    }
    // the belt dragged the sphere along (the contact saw the table's velocity)
    assert!(b.ps.vel[0].x > 0.01, "{}", b.ps.vel[0].x);
}

/// A floor oscillating vertically (`Oscillate(amplitude: (0, 0, 1e-4), frequency: 20, phase:
/// π/2)`: starting at rest at its top, peak acceleration 1.6 m/s² < g) carries a resting
/// sphere: the sphere never leaves it and its height follows the closed-form floor
/// A (sin(2π f t + π/2) − 1) + r within 3e-6 m (the static overlap
/// m (g + a)/K_N ≤ 1.3e-6 m plus the spring's swing), 3 % of the amplitude.
#[test]
fn oscillating_mesh_carries_a_sphere() {
    let d = Dir::new("shaker");
    d.stl(
        "plate.stl",
        &[
            [p(-0.5, -0.5, 0.0), p(0.5, -0.5, 0.0), p(0.5, 0.5, 0.0)],
            [p(-0.5, -0.5, 0.0), p(0.5, 0.5, 0.0), p(-0.5, 0.5, 0.0)],
        ],
    );
    let mut s = roller(
        &d,
        r#"meshes: [Mesh(file: "plate.stl", material: "m", motion: Oscillate(amplitude: (0.0, 0.0, 1e-4), frequency: 20.0, phase: 1.5707963267948966))]"#,
        0.0,
    );
    s.ps.vel[0] = V3::zeros();
    let mut worst = 0.0f64;
    for _ in 0..10_000 {
        s.step().unwrap();
        let floor = 1e-4 * ((2.0 * PI * 20.0 * s.time + PI / 2.0).sin() - 1.0);
        assert!(
            (s.meshes.tri[0][0].z - floor).abs() < 1e-15,
            "closed-form pose"
        );
        assert_eq!(
            s.wall_pairs.active.iter().filter(|&&x| x).count(),
            1,
            "stays on the plate"
        );
        worst = worst.max((s.ps.pos[0].z - R - floor).abs());
    }
    eprintln!("shaker: largest |z − r − floor| {worst:e} m");
    assert!(worst < 3e-6, "{worst:e}");
}

/// The drum validation case (scenes/drum_hertz.ron, bench/liggghts_drum.sh): 4 720 beads
/// falling from their lattice onto the turning drum follow LIGGGHTS' kinetic energy
/// (tests/data/liggghts_drum_ke.csv, made by bench/liggghts_drum_reference.sh) over the first
/// 2 000 steps: translational within 1 % (measured ≤ 1.2e-3), rotational within 5 %
/// (measured ≤ 1.7e-2; among the differences, LIGGGHTS' wall lever arm is r − δ/2, demhpc's
/// r). The drum's turning matters: at step 600 a standing drum gives the landed beads half the
/// rotational energy (the direction does not: the bed is nearly mirror-symmetric;
/// `rotating_drum_wall_speed` checks it). The chaos of the landing bed parts the codes after
/// step ~2 500.
#[test]
fn drum_follows_liggghts_kinetic_energy() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("scenes/drum_hertz.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    let scene = Scene::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    let mut s = Simulation::new(scene).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.n_global(), 4720);
    let (mut worst_t, mut worst_r) = (0.0f64, 0.0f64);
    let csv = root.join("tests/data/liggghts_drum_ke.csv");
    let step = follow_ke_reference(&mut s, &csv, |at, (t, r), (ke_t, ke_r)| {
        if at == 0 {
            return;
        }
        let dt = rel(t, ke_t);
        eprintln!("step {at}: KE trans {t:.6e} vs LIGGGHTS {ke_t:.6e}, rot {r:.4e} vs {ke_r:.4e}");
        assert!(
            dt < 0.01,
            "step {at}: translational KE {t} vs LIGGGHTS {ke_t}"
        );
        worst_t = worst_t.max(dt);
        if ke_r > 1e-6 {
            let dr = rel(r, ke_r);
            assert!(dr < 0.05, "step {at}: rotational KE {r} vs LIGGGHTS {ke_r}");
            worst_r = worst_r.max(dr);
        }
    });
    assert_eq!(step, 2000);
    eprintln!(
        "largest relative differences: translational {worst_t:.2e}, rotational {worst_r:.2e}"
    );
}
