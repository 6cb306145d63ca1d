//! MPI tests with real `mpirun` (issue #3): rank- and thread-count independence, conservation
//! and contact histories across migration, clear errors for impossible decompositions, and no
//! hung job when one rank fails. Each runs the release binary on small scenes (seconds).
//!
//! Snapshots are read back with the `hdf5` crate (the file format users read with h5py).

use crate::support;

use std::time::{Duration, Instant};
use support::*;

/// Run `scene` for `steps` on each (ranks, threads) layout and return the final states.
fn run_layouts(
    tmp: &TempDir,
    scene: &str,
    steps: u64,
    layouts: &[(usize, usize)],
    extra: &[&str],
) -> Vec<((usize, usize), State, String)> {
    let path = tmp.0.join("scene.ron");
    std::fs::write(&path, scene).unwrap();
    let mut out = Vec::new();
    for &(r, t) in layouts {
        let dir = tmp.0.join(format!("out_r{r}_t{t}"));
        let s = steps.to_string();
        let mut args = vec!["--steps", &s, "--out", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push("scene.ron");
        let o = demhpc(r, t, &args, &tmp.0);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{r} ranks × {t} threads: {}",
            describe(&o)
        );
        let st = read_state(&dir.join(format!("snapshots/snap_{steps:09}.h5")));
        let series = std::fs::read_to_string(dir.join("series.csv")).unwrap();
        out.push(((r, t), st, series));
    }
    out
}

/// Assert every layout's state (and series) equals the first one's, bit for bit.
fn assert_all_identical(runs: &[((usize, usize), State, String)]) {
    let (l0, s0, c0) = &runs[0];
    eprintln!("{l0:?}: {} particles, hash {:016x}", s0.gid.len(), hash(s0));
    for (l, s, c) in &runs[1..] {
        eprintln!("{l:?}: hash {:016x}", hash(s));
        assert_eq!(
            s.gid, s0.gid,
            "{l:?}: particle ids differ from {l0:?} (lost/duplicated)"
        );
        assert!(s == s0, "{l:?}: state differs from {l0:?}");
        assert_eq!(c, c0, "{l:?}: series.csv differs from {l0:?}");
    }
}

/// Acceptance 1: settle on 1, 2, 3, 4, 8 ranks and 1, 2 threads, reproducible mode: the final
/// particle states (gid-sorted arrays and their hash) and the series are bit-identical.
#[test]
fn settle_is_bitwise_identical_on_any_rank_and_thread_count() {
    let tmp = TempDir::new("settle");
    let layouts = [(1, 1), (1, 2), (2, 1), (3, 2), (4, 1), (8, 1)];
    let runs = run_layouts(&tmp, SETTLE, 3000, &layouts, &["--reproducible"]);
    assert_eq!(runs[0].1.gid.len(), 512);
    // the run did something: contacts formed
    assert!(runs[0].1.ncontacts.iter().any(|&c| c > 0));
    assert_all_identical(&runs);
}

/// Acceptance 1 (default mode): the same layouts without --reproducible agree to 1e-9
/// relative over 200 steps (the default mode sums a particle's forces in pair-list order on
/// one thread per rank, which depends on the layout), on the chute (dense, every particle in
/// contact from the start) and on settle; and a repeated layout is bit-identical.
#[test]
fn default_mode_agrees_across_rank_counts() {
    let tmp = TempDir::new("default");
    let runs = run_layouts(&tmp, &chute(), 200, &[(1, 1), (2, 2), (4, 1), (1, 1)], &[]);
    let (a, b) = (&runs[0].1, &runs[3].1);
    assert!(a == b, "1 rank, twice: not bit-identical");
    for (l, s, _) in &runs[1..3] {
        assert_eq!(s.gid, runs[0].1.gid, "{l:?}: particle ids differ");
        let d = max_rel_pos_diff(&runs[0].1, s);
        eprintln!("{l:?}: max |Δx|/L = {d:e}");
        assert!(d < 1e-9, "{l:?}: positions differ by {d:e} relative");
    }
    let runs = run_layouts(&tmp, SETTLE, 200, &[(1, 1), (2, 2), (4, 1)], &[]);
    for (l, s, _) in &runs[1..] {
        assert!(max_rel_pos_diff(&runs[0].1, s) < 1e-9, "{l:?}");
    }
}

/// Largest |Δx| between two gid-sorted states, relative to the largest coordinate.
fn max_rel_pos_diff(a: &State, b: &State) -> f64 {
    let x = |s: &State| -> Vec<f64> { s.pos.iter().map(|&v| f64::from_bits(v)).collect() };
    let (xa, xb) = (x(a), x(b));
    let scale = xa.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    xa.iter()
        .zip(&xb)
        .fold(0.0f64, |m, (p, q)| m.max((p - q).abs() / scale))
}

/// Acceptance 1, periodic: the LAMMPS chute (32 000 spheres, periodic x and y) for a short run.
#[test]
fn chute_is_bitwise_identical_on_any_rank_count() {
    let tmp = TempDir::new("chute");
    let scene = chute();
    let layouts = [(1, 1), (2, 1), (3, 1), (4, 2), (8, 1)];
    let runs = run_layouts(&tmp, &scene, 100, &layouts, &["--reproducible"]);
    assert_eq!(runs[0].1.gid.len(), 32000);
    assert_all_identical(&runs);
}

/// A periodic "gas" of fast frictional spheres: particles cross subdomain and periodic
/// boundaries many times (each crosses the 4 cm cell several times in the run). Acceptance 2:
/// nothing lost or duplicated (the solver also checks count and mass at every rebuild) and
/// every contact history survives migration — a single lost shear force would change the
/// bits, and the states are compared bitwise with the single-rank run.
const GAS: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e6, poisson: 0.3, friction_angle: 0.6, density: 1000.0, restitution: 0.8)],
    spheres: [SPHERES],
    gravity: (0.0, 0.0, 0.0), dt: Fixed(2e-6), skin: 0.3e-3, run: Steps(1),
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.04, 0.04, 0.04), periodic: (true, true, true)),
    output: Output(series_every: 500),
)"#;

/// The gas: a cubic arrangement of `Sphere` entries with random velocities up to ±4 m/s per
/// component (a small LCG; the text-file format has no velocities).
fn gas_spheres(n: usize, seed: u64) -> String {
    let mut s = seed;
    let mut u = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = String::new();
    let per = (n as f64).cbrt().ceil() as usize;
    let h = 0.04 / per as f64;
    let mut k = 0;
    'outer: for i in 0..per {
        for j in 0..per {
            for l in 0..per {
                if k == n {
                    break 'outer;
                }
                let p = [
                    (i as f64 + 0.5) * h,
                    (j as f64 + 0.5) * h,
                    (l as f64 + 0.5) * h,
                ];
                let v = [u() - 0.5, u() - 0.5, u() - 0.5].map(|x| 8.0 * x);
                out += &format!(
                    "Sphere(pos: ({:e}, {:e}, {:e}), radius: {:e}, material: \"g\", vel: ({:e}, {:e}, {:e})),\n",
                    p[0], p[1], p[2], 0.3 * h * (1.0 + 0.3 * u()), v[0], v[1], v[2]
                );
                k += 1;
            }
        }
    }
    out
}

#[test]
fn fast_particles_migrate_without_loss_and_keep_histories() {
    let scene = GAS.replace("SPHERES", &gas_spheres(729, 3));
    let tmp = TempDir::new("gas");
    // 4000 steps × 2e-6 s × up to 4 m/s: up to 3.2 cm, most of a cell length, through
    // several subdomains of the 2×2×2 and 3×1×1 grids.
    // Reproducible mode: the default mode sums forces in pair-list order on one thread, which
    // differs between rank counts (and would hide nothing, but would not compare bitwise).
    let layouts = [(1, 1), (2, 1), (3, 1), (8, 1)];
    let runs = run_layouts(&tmp, &scene, 4000, &layouts, &["--reproducible"]);
    assert_eq!(runs[0].1.gid.len(), 729);
    assert!(runs[0].2.lines().count() > 5);
    // contacts existed during the run (collisions in the gas): n_contacts column > 0 somewhere
    let collided = runs[0]
        .2
        .lines()
        .skip(1)
        .any(|l| l.split(',').nth(5).unwrap().parse::<u64>().unwrap() > 0);
    assert!(
        collided,
        "the gas must collide for the test to mean anything"
    );
    assert_all_identical(&runs);
}

/// Acceptance 2, explicitly: a sphere sliding (rotation blocked) on a frictional floor
/// across four subdomains (4×1×1 grid). K_T is tiny (kt/kn = 1e-4), so the shear force takes
/// ~10 steps to build up to μ F_N: a history lost at a migration would cost ~5 steps of
/// friction (Δv/v ≈ 1e-3) and change the bits. So: the 4-rank run equals the 1-rank run
/// bitwise, and v(t) = v0 − μ g t (within 2e-3 relative, the initial build-up) after 0.15 s.
#[test]
fn sliding_contact_keeps_its_shear_force_across_ranks() {
    let tmp = TempDir::new("slide");
    let (r, rho, e, g, mu, v0) = (0.001, 2600.0, 1e7, 9.81, 0.5, 1.0);
    let m = 4.0 / 3.0 * std::f64::consts::PI * r * r * r * rho;
    // sphere–wall K_N = E r (mirror sphere): start at the static equilibrium overlap m g / K_N
    let z0 = r - m * g / (e * r);
    // Two frozen spheres spread the bounding box over x ∈ [−0.01, 0.09]: cuts every 2.5 cm.
    let scene = format!(
        r#"Scene(
        materials: [Frict(name: "m", young: {e:e}, poisson: 1e-4, friction_angle: 0.4636476090008061, density: {rho:e})],
        walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m")],
        spheres: [
            Sphere(pos: (0.0, 0.0, {z0:e}), radius: {r:e}, material: "m", vel: ({v0:e}, 0.0, 0.0), blocked: "XYZ"),
            Sphere(pos: (-0.01, 0.05, 0.001), radius: 0.001, material: "m", blocked: "xyzXYZ"),
            Sphere(pos: (0.09, 0.05, 0.001), radius: 0.001, material: "m", blocked: "xyzXYZ"),
        ],
        gravity: (0.0, 0.0, -{g:e}), dt: Fixed(1e-5), skin: 0.0002, run: Steps(1),
        domain: Domain(lo: (-0.1, -0.1, -0.1), hi: (0.2, 0.2, 0.2)),
        output: Output(series_every: 1000),
    )"#
    );
    let one = run_layouts(&tmp, &scene, 15000, &[(1, 1)], &[]);
    let four = run_layouts(&tmp, &scene, 15000, &[(4, 1)], &["--grid", "4x1x1"]);
    let s = &four[0].1;
    let k = s.gid.iter().position(|&g| g == 0).unwrap();
    let (x, vx) = (f64::from_bits(s.pos[3 * k]), f64::from_bits(s.vel[3 * k]));
    assert!(x > 0.07, "the slider crossed all three cuts (x = {x})");
    let expect = v0 - mu * g * 0.15;
    assert!(
        ((vx - expect) / expect).abs() < 2e-3,
        "v = {vx}, expected v0 − μ g t = {expect}"
    );
    assert!(
        *s == one[0].1,
        "4 ranks differ from 1 rank: a history was lost"
    );
}

/// Acceptance 3: an impossible decomposition is refused with a clear message, exit 2,
/// nothing written.
#[test]
fn impossible_decomposition_is_refused() {
    let tmp = TempDir::new("grid");
    std::fs::write(tmp.0.join("scene.ron"), SETTLE).unwrap();
    // 8 slabs along x of a 2 cm packing are 2.4 mm wide, less than the halo (2·1.1 + 0.2 mm)
    // only when forced: 8×1×1 of the 1.68 cm lattice extent → 2.1 mm < 2.4 mm.
    let o = demhpc(
        8,
        1,
        &["--grid", "8x1x1", "--out", "out", "scene.ron"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("thinner than the halo"), "{err}");
    assert_eq!(
        err.matches("thinner than the halo").count(),
        1,
        "said once: {err}"
    );
    assert!(!tmp.0.join("out").exists(), "nothing written");
    // a grid that does not match the rank count
    let o = demhpc(
        2,
        1,
        &["--grid", "2x2x1", "--out", "out", "scene.ron"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not match the 2 ranks"));
}

/// Acceptance 3: one rank blows up (a particle shot out of the domain in its subdomain);
/// the whole job stops within seconds with a non-zero status and the particle named.
#[test]
fn a_failing_rank_stops_the_whole_job() {
    let tmp = TempDir::new("fail");
    let scene = SETTLE.replace(
        "spheres: [",
        r#"spheres: [Sphere(pos: (0.018, 0.018, 0.03), radius: 0.001, material: "g", vel: (0.0, 0.0, 3000.0)), "#,
    );
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let t0 = Instant::now();
    let o = demhpc(
        4,
        1,
        &["--steps", "2000", "--out", "out", "scene.ron"],
        &tmp.0,
    );
    let took = t0.elapsed();
    assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("particle gid 0"), "{}", describe(&o));
}

/// Replication (issue 6, weak scaling): a 4×4×4 walled lattice whose domain is exactly the
/// walled box, tiled (2, 2, 1): 256 spheres in one box twice as wide and deep (the far walls
/// move to x = y = 2 · 9.6 mm, docs/scene-format.md "Replication"). Reproducible mode on 1, 2
/// and 4 ranks (each rank generates only the tiles near its subdomain): bit-identical states.
#[test]
fn replicated_scene_is_bitwise_identical_on_1_2_4_ranks() {
    let scene = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, density: 2600.0)],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0096, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 1.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0096, 0.0), normal: (0.0, -1.0, 0.0), material: "g"),
    ],
    spheres: [Lattice(material: "g", spacing: 2.4e-3, counts: (4, 4, 4), radius: 1e-3,
                      polydispersity: 0.1, jitter: 0.05e-3, seed: 7)],
    gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(1),
    domain: Domain(lo: (0.0, 0.0, -0.002), hi: (0.0096, 0.0096, 0.03)),
    output: Output(series_every: 100),
    replicate: (2, 2, 1),
)"#;
    let tmp = TempDir::new("replicate");
    let runs = run_layouts(
        &tmp,
        scene,
        3000,
        &[(1, 1), (2, 1), (4, 1)],
        &["--reproducible"],
    );
    let s = &runs[0].1;
    assert_eq!(s.gid, (0..256).collect::<Vec<u64>>());
    let x: Vec<f64> = s.pos.chunks(3).map(|p| f64::from_bits(p[0])).collect();
    let y: Vec<f64> = s.pos.chunks(3).map(|p| f64::from_bits(p[1])).collect();
    // copies fill the far tiles, and stay inside the moved walls (tolerance: 10 % of a radius
    // of wall overlap)
    assert!(x.iter().any(|&v| v > 0.0096) && y.iter().any(|&v| v > 0.0096));
    assert!(x
        .iter()
        .chain(&y)
        .all(|&v| v > 0.0009 && v < 0.0192 - 0.0009));
    assert!(s.ncontacts.iter().any(|&c| c > 0));
    assert_all_identical(&runs);
}

/// `SETTLE` with the Hertz–Mindlin law (restitution 0.5, DMT adhesion) instead of the linear one, and
/// rolling and twisting resistance of the EPSD model (its moment histories travel with
/// migrating particles and checkpoints; the constant-torque model runs the same kernel minus
/// the history), with the energy budget (its columns in series.csv: exact sums over spheres,
/// walls and rolling springs).
fn settle_hertz() -> String {
    SETTLE
        .replace(
            "gravity: (0.0, 0.0, -9.81),",
            "gravity: (0.0, 0.0, -9.81), rolling: (mu_r: 0.1, mu_t: 0.05, model: Epsd2),\n    energy: true,",
        )
        .replace(
        r#"Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, density: 2600.0)"#,
        r#"Hertz(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, density: 2600.0, restitution: 0.5, surface_energy: 1e-3)"#,
    )
}

/// Issue 20: the Hertz–Mindlin law with rolling resistance keeps the reproducible mode's promise — settle on 1, 2, 3,
/// 4, 8 ranks and 1, 2 threads bit-identical, and a restart on another rank count from a
/// checkpoint continues bit-identically.
#[test]
fn hertz_settle_is_bitwise_identical_on_any_rank_and_thread_count_and_restart() {
    let tmp = TempDir::new("hertz");
    let scene = settle_hertz();
    assert!(scene.contains("Hertz(") && scene.contains("mu_r"));
    let layouts = [(1, 1), (1, 2), (2, 1), (3, 2), (4, 1), (8, 1)];
    let runs = run_layouts(&tmp, &scene, 3000, &layouts, &["--reproducible"]);
    assert_eq!(runs[0].1.gid.len(), 512);
    // the energy columns are there and non-trivial (gravity's work, friction)
    let series = &runs[0].2;
    let head: Vec<&str> = series.lines().next().unwrap().split(',').collect();
    let last: Vec<&str> = series.lines().last().unwrap().split(',').collect();
    for c in ["w_gravity_J", "d_friction_J", "e_elastic_J"] {
        let k = head
            .iter()
            .position(|h| *h == c)
            .unwrap_or_else(|| panic!("no {c}"));
        assert!(last[k].parse::<f64>().unwrap() > 0.0, "{c} = {}", last[k]);
    }
    assert!(runs[0].1.ncontacts.iter().any(|&c| c > 0));
    assert_all_identical(&runs);
    // 1 rank to step 2000 with a checkpoint (the spheres have landed: contacts with
    // histories), then 3 ranks from it to step 3000
    let ck = scene.replace(
        "output: Output(series_every: 100),",
        "output: Output(series_every: 100),\n    checkpoint: (every: 2000, keep: 2),",
    );
    std::fs::write(tmp.0.join("ck.ron"), ck).unwrap();
    let a = tmp.0.join("ck_a");
    let o = demhpc(
        1,
        1,
        &[
            "--steps",
            "2000",
            "--reproducible",
            "--out",
            a.to_str().unwrap(),
            "ck.ron",
        ],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let ckpt = a.join("checkpoints/ckpt_0000002000.h5");
    // the checkpoint carries moment histories, sphere–sphere and sphere–wall
    let h = hdf5::File::open(&ckpt).unwrap();
    for g in ["contacts", "wall_contacts"] {
        let m = h.dataset(&format!("{g}/roll")).unwrap();
        let m = m.read_raw::<f64>().unwrap();
        eprintln!(
            "{g}/roll: {} rows, {} non-zero",
            m.len() / 3,
            m.iter().filter(|&&x| x != 0.0).count()
        );
        assert!(m.iter().any(|&x| x != 0.0), "{g}/roll: all zero");
    }
    drop(h);
    let o = demhpc(
        3,
        1,
        &[
            "--restart",
            ckpt.to_str().unwrap(),
            "--steps",
            "3000",
            "--reproducible",
        ],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let st = read_state(&a.join("snapshots/snap_000003000.h5"));
    assert!(
        st == runs[0].1,
        "restart on 3 ranks differs from the uninterrupted run"
    );
}
