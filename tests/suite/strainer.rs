//! The uniaxial strainer's options (issue 20): supports by layer, tag or gid list (the same
//! spheres selected three ways give the same bits), `original_length` (Yade's
//! `originalLength`), and the cross-section rule (a default only for specimens that are
//! prisms along the axis by construction). In-process, small lattice specimens.

use crate::common;

use demhpc::scene::Scene;
use demhpc::Simulation;
use std::path::{Path, PathBuf};

const R: f64 = 1e-3;
/// Lattice 4 × 4 × 8 of touching spheres (spacing 2R), z layers k = 0..7; the bottom layer is
/// tagged 1, the top one 2, the rest 0.
const NX: u64 = 4;
const NZ: u64 = 8;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("demhpc-strainer-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn specimen(d: &Path) {
    let mut t = String::from("# x y z r tag\n");
    for k in 0..NZ {
        for j in 0..NX {
            for i in 0..NX {
                let tag = match k {
                    0 => 1,
                    k if k == NZ - 1 => 2,
                    _ => 0,
                };
                let c = |n: u64| R + 2.0 * R * n as f64;
                t += &format!("{:e} {:e} {:e} {R:e} {tag}\n", c(i), c(j), c(k));
            }
        }
    }
    std::fs::write(d.join("spec.txt"), t).unwrap();
}

/// Gids of layer k (gid order = file order: i fastest, then j, then k).
fn layer(k: u64) -> Vec<u64> {
    (k * NX * NX..(k + 1) * NX * NX).collect()
}

fn scene(strainer: &str) -> String {
    format!(
        r#"Scene(
    materials: [Cpm(name: "c", params: (young: 24e9, poisson: 0.2, tan_phi: 0.8, sigmaT: 3.5e6,
        epsCrackOnset: 1e-4, relDuctility: 30))],
    spheres: [TextFile(path: "spec.txt", material: "c")],
    cpm: Cpm(interaction_radius: 1.5),
    strainer: Strainer(axis: 2, strain_rate: 0.5, ramp_steps: 20, stop_fraction: 0.0, {strainer}),
    damping: 0.4,
    dt: PWave(0.5),
    run: Steps(1000),
    reproducible: true,
)"#
    )
}

fn parse(d: &Path, text: &str) -> Result<Scene, demhpc::Error> {
    Scene::parse(text, &d.join("scene.ron"))
}

fn sim(d: &Path, strainer: &str) -> Simulation {
    let s = parse(d, &scene(strainer)).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(s).unwrap_or_else(|e| panic!("{e}"))
}

/// (strain, stress) bits of `n` steps.
fn curve(s: &mut Simulation, n: u64) -> Vec<(u64, u64)> {
    (0..n)
        .map(|_| {
            s.step().unwrap_or_else(|e| panic!("{e}"));
            let st = s.strainer().unwrap();
            (st.strain().to_bits(), st.stress.to_bits())
        })
        .collect()
}

#[test]
fn supports_by_layer_tag_and_gids_agree() {
    // The bottom and top layers selected as a layer of thickness R (sphere bottoms at the
    // specimen's end, the next layer's 2R above it), as tags 1 and 2, and as gid lists: the
    // same 16 + 16 spheres blocked, bit-identical curves over 300 steps; the stress is tensile
    // and non-zero (the links carry load).
    let d = dir("same");
    specimen(&d);
    let fmt = |v: Vec<u64>| format!("{v:?}");
    let variants = [
        format!("supports: Layer({R:e}), area: 6.4e-5"),
        "supports: Tags(lower: 1, upper: 2), area: 6.4e-5".to_string(),
        format!(
            "supports: Gids(lower: {}, upper: {}), area: 6.4e-5",
            fmt(layer(0)),
            fmt(layer(NZ - 1))
        ),
        format!("support: {R:e}, area: 6.4e-5"),
    ];
    let mut curves = Vec::new();
    for v in &variants {
        let mut s = sim(&d, v);
        let blocked = (0..s.ps.n_owned).filter(|&i| s.ps.blocked[i] == 4).count();
        assert_eq!(blocked, 32, "{v}");
        curves.push(curve(&mut s, 300));
    }
    for (c, v) in curves.iter().zip(&variants).skip(1) {
        assert!(c == &curves[0], "{v} differs from the layer selection");
    }
    let last = f64::from_bits(curves[0].last().unwrap().1);
    assert!(last > 0.0, "stress {last}");
}

#[test]
fn original_length_sets_strain_and_end_velocity() {
    // Default L₀ = the spheres' extent along z, 2R·8 = 16 mm; given 20 mm (Yade
    // originalLength): the end velocity after the ramp is ε̇ L₀/2 and strain = ΔL/L₀. Tol 1e-12.
    let d = dir("l0");
    specimen(&d);
    let s = sim(&d, "area: 6.4e-5");
    let st = s.strainer().unwrap();
    assert!((st.length0 - 16e-3).abs() < 1e-15);
    let mut s = sim(&d, "area: 6.4e-5, originalLength: 0.02");
    let st = s.strainer().unwrap();
    assert_eq!(st.length0, 0.02);
    assert!((st.end_velocity(1000) - 0.5 * 0.5 * 0.02).abs() < 1e-15);
    common::steps(&mut s, 50);
    let st = s.strainer().unwrap();
    assert!((st.strain() - st.displacement / 0.02).abs() <= 1e-12 * st.strain().abs());
    assert!(st.strain() > 0.0);
}

#[test]
fn area_is_required_unless_the_specimen_is_a_prism() {
    // A TextFile specimen has no known cross-section: `area` is required (file:line:col of
    // `strainer`). A DensePack box: the bounding box across the axis (exact); a DensePack
    // cylinder loaded along its axis z: π R² (not the (2R)² of its bounding box); the same
    // cylinder loaded along x: required.
    let d = dir("area");
    specimen(&d);
    let e = parse(&d, &scene("supports: Tags(lower: 1, upper: 2)"))
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("scene.ron:6:") && e.contains("`area`"), "{e}");
    let pack = |shape: &str, axis: u32| {
        format!(
            r#"Scene(
    materials: [Cpm(name: "c", params: (sigmaT: 3.5e6, epsCrackOnset: 1e-4, relDuctility: 30))],
    spheres: [DensePack(material: "c", shape: {shape}, radius: 1e-3, porosity: 0.45, seed: 3)],
    strainer: Strainer(axis: {axis}, strain_rate: 0.1),
    dt: PWave(0.5),
    run: Steps(10),
)"#
        )
    };
    let area = |t: &str| parse(&d, t).unwrap().strainer.unwrap().area.unwrap();
    let b = area(&pack(
        "Box(lo: (0.0, 0.0, 0.0), hi: (0.01, 0.012, 0.02))",
        2,
    ));
    assert!((b - 0.01 * 0.012).abs() < 1e-18, "{b}");
    let c = area(&pack(
        "Cylinder(base: (0.0, 0.0, 0.0), radius: 0.006, height: 0.02)",
        2,
    ));
    assert!((c - std::f64::consts::PI * 36e-6).abs() < 1e-18, "{c}");
    let e = parse(
        &d,
        &pack(
            "Cylinder(base: (0.0, 0.0, 0.0), radius: 0.006, height: 0.02)",
            0,
        ),
    )
    .map(|_| ())
    .expect_err("refused")
    .to_string();
    assert!(e.contains("`area`"), "{e}");
}

#[test]
fn bad_support_selections_are_refused() {
    // Swapped tags (the lower support above the centre), an empty tag group, a gid beyond the
    // scene, a gid in both lists, and `support` with `supports`.
    let d = dir("bad");
    specimen(&d);
    let new = |s: &str| {
        parse(&d, &scene(s))
            .and_then(Simulation::new)
            .err()
            .unwrap_or_else(|| panic!("{s} accepted"))
            .to_string()
    };
    let e = new("supports: Tags(lower: 2, upper: 1), area: 1e-4");
    assert!(e.contains("lie above"), "{e}");
    let e = new("supports: Tags(lower: 1, upper: 7), area: 1e-4");
    assert!(e.contains("the upper 0"), "{e}");
    let e = new("supports: Gids(lower: [0], upper: [128]), area: 1e-4");
    assert!(e.contains("gid 128 does not exist"), "{e}");
    let e = new("supports: Gids(lower: [0, 1], upper: [1]), area: 1e-4");
    assert!(e.contains("gid 1 is in both"), "{e}");
    let e = new("support: 1e-3, supports: Layer(1e-3), area: 1e-4");
    assert!(e.contains("not both"), "{e}");
}
