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
