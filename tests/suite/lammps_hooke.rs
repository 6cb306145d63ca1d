//! Issue 20, acceptance 3: the `Hooke` law (LAMMPS `gran/hooke/history`: constant kn, kt, γ_N,
//! γ_T, Coulomb on the total normal force) on the settle benchmark reproduces LAMMPS' own
//! kinetic-energy trajectory within 1 % up to step 6 000. The reference is LAMMPS 29 Sep 2021
//! on the same spheres (`tests/data/lammps_hooke_settle_ke.csv`, made by
//! `bench/lammps_hooke_reference.sh`); demhpc reads the same `gen_settle.py` text file.

use crate::common;
use common::*;
use std::path::Path;

#[test]
fn hooke_settle_follows_lammps_kinetic_energy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("demhpc_lammps_hooke_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // `-s`: the user's site packages never shadow the system's (issue 32)
    let ok = std::process::Command::new("python3")
        .arg("-s")
        .env("PYTHONNOUSERSITE", "1")
        .arg(root.join("bench/data/gen_settle.py"))
        .args(["8000", dir.to_str().unwrap()])
        .output()
        .expect("python3")
        .status
        .success();
    assert!(ok, "gen_settle.py failed");
    let txt = dir.join("settle_8000.txt");
    // the lattice replaced by the text file: the same spheres, rounded as LAMMPS reads them
    let scene = std::fs::read_to_string(root.join("scenes/settle_hooke.ron")).unwrap();
    let start = scene.find("        Lattice(").unwrap();
    let end = start + scene[start..].find("        ),\n").unwrap() + "        ),\n".len();
    let scene = format!(
        "{}        TextFile(path: \"{}\", material: \"grain\"),\n{}",
        &scene[..start],
        txt.display(),
        &scene[end..]
    );
    let mut s = sim(&scene);
    assert_eq!(s.n_global(), 8000);
    let mut worst: f64 = 0.0;
    let csv = root.join("tests/data/lammps_hooke_settle_ke.csv");
    let step = follow_ke_reference(&mut s, &csv, |at, (t, r), (ke_t, ke_r)| {
        if at == 0 {
            assert_eq!(t + r, 0.0);
            return;
        }
        let d = rel(t + r, ke_t + ke_r);
        eprintln!(
            "step {at}: KE demhpc {:.6e} LAMMPS {:.6e} (rel {d:.2e}); rot {r:.4e} vs {ke_r:.4e}",
            t + r,
            ke_t + ke_r
        );
        worst = worst.max(d);
        assert!(
            d < 0.01,
            "step {at}: KE {} vs LAMMPS {}",
            t + r,
            ke_t + ke_r
        );
    });
    assert_eq!(step, 6000);
    eprintln!("largest relative KE difference {worst:.2e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The `Hooke` normal law alone: a head-on collision of two equal spheres is a damped linear
/// oscillator of m* = m/2, ω₀² = kn/m*, damping m* γ_N v_N: contact time π / sqrt(ω₀² − γ_N²/4)
/// and restitution exp(−γ_N t_c / 2) (both within 1 %; the force is not cut at zero, as in
/// LAMMPS, so the separation is at zero overlap).
#[test]
fn hooke_head_on_collision_is_a_damped_oscillator() {
    let (r, rho, kn, gamma_n, v) = (1e-3, 2600.0, 1e4, 5000.0, 0.2);
    let m = 4.0 / 3.0 * std::f64::consts::PI * r * r * r * rho;
    let w0 = (kn / (0.5 * m)).sqrt();
    let wd = (w0 * w0 - 0.25 * gamma_n * gamma_n).sqrt();
    let tc = std::f64::consts::PI / wd;
    let e = (-0.5 * gamma_n * tc).exp();
    let dt = tc / 2000.0;
    let mut s = sim(&format!(
        r#"Scene(materials: [Hooke(name: "g", kn: {kn:e}, gamma_n: {gamma_n:e}, xmu: 0.5, density: {rho:e})],
        spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: {r:e}, material: "g", vel: ({:e}, 0.0, 0.0)),
                  Sphere(pos: ({:e}, 0.0, 0.0), radius: {r:e}, material: "g", vel: ({:e}, 0.0, 0.0))],
        dt: Fixed({dt:e}), run: Steps(1))"#,
        0.5 * v,
        2.0 * r * 1.0001,
        -0.5 * v
    ));
    let (mut n, mut seen) = (0u64, false);
    for _ in 0..100_000 {
        s.step().unwrap();
        let active = s.pairs.active.iter().any(|&a| a);
        n += active as u64;
        seen |= active;
        if seen && !active {
            break;
        }
    }
    let t = n as f64 * dt;
    assert!(rel(t, tc) < 0.01, "contact time {t} vs {tc}");
    let (a, b) = (idx(&s, 0), idx(&s, 1));
    let got = (s.ps.vel[b].x - s.ps.vel[a].x) / v;
    assert!(rel(got, e) < 0.01, "restitution {got} vs {e}");
}
