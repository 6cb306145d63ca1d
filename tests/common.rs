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
