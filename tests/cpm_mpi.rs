//! CPM tension test on several ranks and across a checkpoint (issue 5, acceptance 3): the
//! same tension test on 1 and 4 ranks (reproducible mode) gives the identical `strainer.csv`;
//! a checkpoint taken after the peak restarts to the identical curve. Real `mpirun`, release
//! binary, ~600 spheres.

mod support;

use std::path::Path;
use support::{demhpc as run, describe, TempDir};

/// Run on `ranks` ranks × 1 thread and require success.
fn demhpc(ranks: usize, args: &[&str], cwd: &Path) {
    let o = run(ranks, 1, args, cwd);
    assert_eq!(o.status.code(), Some(0), "{ranks} ranks: {}", describe(&o));
}

const SCENE: &str = r#"Scene(
    materials: [Cpm(name: "c", params: (young: 24e9, poisson: 0.2, tan_phi: 0.8, cohesion: 3.5e6,
        eps_cracking: 1e-4, rel_ductility: 30.0,
        yield_surface: Log, yield_log_speed: 0.1, eps_soft: -3e-3, rel_kn_soft: 0.3))],
    spheres: [DensePack(material: "c", shape: Box(lo: (0.0, 0.0, 0.0), hi: (0.018, 0.018, 0.036)),
        radius: 1.4e-3, porosity: 0.40, seed: 7)],
    strainer: Strainer(strain_rate: 0.4, ramp_steps: 100, stop_fraction: 0.5, every: 10),
    damping: 0.4,
    dt: PWave(0.8),
    run: Steps(4000),
    output: Output(series_every: 100),
    checkpoint: Checkpoint(every: 1000, keep: 10),
    reproducible: true,
)"#;

fn csv(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("strainer.csv")).unwrap()
}

/// Strain and stress columns of the peak row.
fn peak_step(csv: &str) -> u64 {
    let mut best = (0.0, 0);
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let s: f64 = f[3].parse().unwrap();
        if s > best.0 {
            best = (s, f[0].parse().unwrap());
        }
    }
    best.1
}

#[test]
fn tension_curve_is_identical_on_1_and_4_ranks_and_across_a_restart() {
    let tmp = TempDir::new("cpm-ranks");
    let t = &tmp.0;
    std::fs::write(t.join("scene.ron"), SCENE).unwrap();
    demhpc(1, &["--out", "r1", "scene.ron"], t);
    demhpc(4, &["--out", "r4", "scene.ron"], t);
    let (a, b) = (csv(&t.join("r1")), csv(&t.join("r4")));
    assert!(a.lines().count() > 50, "{a}");
    assert_eq!(a, b, "strainer.csv differs between 1 and 4 ranks");
    // The run stopped on the softening criterion, after the peak.
    let last: u64 = a
        .lines()
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let pk = peak_step(&a);
    assert!(
        pk > 0 && last > pk && last < 4000,
        "peak at {pk}, stop at {last}"
    );
    // Restart from the first checkpoint after the peak (into the same directory, whose csv
    // has rows beyond it: they must be replaced, not duplicated), on 2 ranks.
    let ck = (pk / 1000 + 1) * 1000;
    assert!(
        ck < last,
        "no checkpoint between the peak {pk} and the stop {last}"
    );
    let f = format!("r1/checkpoints/ckpt_{ck:010}.h5");
    demhpc(2, &["--restart", &f, "--out", "r1"], t);
    assert_eq!(csv(&t.join("r1")), a, "the restarted curve differs");
}
