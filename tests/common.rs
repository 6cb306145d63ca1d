//! Shared helpers for the integration tests (included with `mod common;`).
#![allow(dead_code)]

use demhpc::scene::Scene;
use demhpc::Simulation;
use std::path::Path;

/// Build a simulation from scene text (the file name only labels errors).
pub fn sim(text: &str) -> Simulation {
    let scene = Scene::parse(text, Path::new("test.ron")).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(scene).unwrap_or_else(|e| panic!("{e}"))
}

/// Run `n` steps.
pub fn steps(s: &mut Simulation, n: u64) {
    for _ in 0..n {
        s.step().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Index of the owned particle with this gid.
pub fn idx(s: &Simulation, gid: u64) -> usize {
    s.find(gid).expect("particle present")
}

pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// Step `s` along a peer's kinetic-energy reference (a CSV of `step, KE_trans, KE_rot` rows;
/// other lines are comments) and hand `check(step, (demhpc's KE_t, KE_r), (the peer's))` each
/// row; returns the last step.
pub fn follow_ke_reference(
    s: &mut Simulation,
    csv: &std::path::Path,
    mut check: impl FnMut(u64, (f64, f64), (f64, f64)),
) -> u64 {
    let reference =
        std::fs::read_to_string(csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
    let mut step = 0;
    for line in reference
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
    {
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        let at = v[0] as u64;
        steps(s, at - step);
        step = at;
        check(at, s.ps.kinetic_energy(), (v[1], v[2]));
    }
    step
}

/// The small periodic packing of the cell tests (issue 23): 300 frictional spheres (r = 0.5 mm
/// ± 30 %, E = 2e7 Pa, Cundall damping 0.2) as a granular gas in a fully periodic 9.5 mm cell,
/// Δt = `pwave` × the p-wave step; `extra` (top-level fields) and `stages` (the cell's stages)
/// go into the scene.
pub fn periodic_packing(pwave: f64, extra: &str, stages: &str) -> String {
    format!(
        "Scene(
    materials: [Frict(name: \"g\", young: 2e7, poisson: 0.3, friction_angle: 0.5, density: 2650.0)],
    spheres: [RandomFill(material: \"g\", lo: (0.0, 0.0, 0.0), hi: (0.0095, 0.0095, 0.0095), count: 300,
                         radius: 0.0005, polydispersity: 0.3, seed: 3)],
    damping: 0.2,
    dt: PWave({pwave}),
    run: Steps(400000),
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.0095, 0.0095, 0.0095), periodic: (true, true, true)),
    {extra}
    cell: Cell(stages: [{stages}]),
)"
    )
}

/// Isotropic compression to 50 kPa without friction (the dense recipe) until the unbalanced
/// force is below `max_unbalanced` and every stress within `rel_tol`, then a drained triaxial
/// shear with tan φ = 0.5: axial log strain to −2 % at 0.5 /s, the lateral stresses at 50 kPa.
pub fn triax_stages(max_unbalanced: f64, rel_tol: f64) -> String {
    format!(
        "
        Stage(name: \"iso\", goal: (-5e4, -5e4, -5e4), max_strain_rate: (5.0, 5.0, 5.0),
              max_unbalanced: {max_unbalanced:?}, rel_stress_tol: {rel_tol:?}, friction_angle: Some(0.0)),
        Stage(name: \"triax\", goal: (-5e4, -5e4, -0.02), stress_mask: (true, true, false),
              max_strain_rate: (5.0, 5.0, 0.5), max_unbalanced: 10.0,
              friction_angle: Some(0.4636476090008061), reset_strain: true),
    "
    )
}
