//! CPM tension test on several ranks and across a checkpoint (issue 5, acceptance 3): the
//! same tension test on 1 and 4 ranks (reproducible mode) gives the identical `strainer.csv`
//! and `series.csv` (with the energy budget, issue 23); a checkpoint taken after the peak
//! restarts to the identical curve and budget. Real `mpirun`, release binary, ~600 spheres.

use crate::support;

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
    energy: true,
    dt: PWave(0.8),
    run: Steps(4000),
    output: Output(series_every: 100),
    checkpoint: Checkpoint(every: 1000, keep: 10),
    reproducible: true,
)"#;

fn csv(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("strainer.csv")).unwrap()
}

fn series(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("series.csv")).unwrap()
}

/// The step of the last row.
fn last_step(csv: &str) -> u64 {
    let row = csv.lines().last().unwrap();
    row.split(',').next().unwrap().parse().unwrap()
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
    let e = series(&t.join("r1"));
    assert!(e.lines().next().unwrap().contains("d_damage_J"), "{e}");
    assert_eq!(
        e,
        series(&t.join("r4")),
        "series.csv differs between 1 and 4 ranks"
    );
    // The run stopped on the softening criterion, after the peak.
    let last = last_step(&a);
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
    assert_eq!(
        series(&t.join("r1")),
        e,
        "the restarted energy budget differs"
    );
}

/// Issue 20: the new inputs keep reproducible mode rank-independent. A TextFile specimen
/// whose end layers are tagged (5th column) is pulled by a strainer with `Tags` supports,
/// with gravity outside the damping (`damp_gravity: false`), Yade's public law (the batched
/// loop; with the energy budget, issue 23, the scalar one): 1, 2, 3, 4, 8 ranks and 2 ranks ×
/// 2 threads give the identical `strainer.csv` and `series.csv`.
#[test]
fn tag_supports_and_undamped_gravity_are_rank_independent() {
    let tmp = TempDir::new("cpm-tags");
    let t = &tmp.0;
    let (r, nx, nz) = (1e-3, 4u64, 8u64);
    let mut txt = String::new();
    for k in 0..nz {
        for j in 0..nx {
            for i in 0..nx {
                let tag = [1, 0, 0, 0, 0, 0, 0, 2][k as usize];
                let c = |n: u64| r + 2.0 * r * n as f64 + 1e-5 * ((n * 7 + k) % 3) as f64;
                txt += &format!("{:e} {:e} {:e} {r:e} {tag}\n", c(i), c(j), c(k));
            }
        }
    }
    std::fs::write(t.join("spec.txt"), txt).unwrap();
    let scene = r#"Scene(
    materials: [Cpm(name: "c", params: (young: 24e9, poisson: 0.2, frictionAngle: 0.6747,
        sigmaT: 3.5e6, epsCrackOnset: 1e-4, relDuctility: 30))],
    spheres: [TextFile(path: "spec.txt", material: "c")],
    strainer: Strainer(strain_rate: 0.5, supports: Tags(lower: 1, upper: 2), area: 6.4e-5,
        ramp_steps: 20, stop_fraction: 0.0, every: 5),
    gravity: (0.0, 0.0, -9.81),
    damping: 0.4,
    damp_gravity: false,
    energy: true,
    dt: PWave(0.5),
    run: Steps(400),
    output: Output(series_every: 20),
    reproducible: true,
)"#;
    std::fs::write(t.join("scene.ron"), scene).unwrap();
    for r in [1, 2, 3, 4, 8] {
        demhpc(r, &["--out", &format!("r{r}"), "scene.ron"], t);
    }
    let o = run(2, 2, &["--out", "t2", "scene.ron"], t);
    assert_eq!(o.status.code(), Some(0), "2 x 2: {}", describe(&o));
    let (a, e) = (csv(&t.join("r1")), series(&t.join("r1")));
    assert!(a.lines().count() > 50, "{a}");
    for out in ["r2", "r3", "r4", "r8", "t2"] {
        assert_eq!(a, csv(&t.join(out)), "strainer.csv differs: {out}");
        assert_eq!(e, series(&t.join(out)), "series.csv differs: {out}");
    }
}

/// A CPM checkpoint written before the Yade-compatible defaults (format version 2, the test
/// hook of `io/checkpoint/write.rs`) is refused on restart with exit 2 and a message saying why: its
/// stored scene would resolve to other parameters now. A current one restarts.
#[test]
fn cpm_checkpoint_of_format_2_is_refused() {
    let tmp = TempDir::new("cpm_v2");
    let scene = SCENE.replace("run: Steps(4000)", "run: Steps(20)").replace(
        "checkpoint: Checkpoint(every: 1000, keep: 10)",
        "checkpoint: Checkpoint(every: 10, keep: 2)",
    );
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let mut cmd = support::command(1, 1, &["--out", "v2", "scene.ron"], &tmp.0);
    let o = cmd
        .env("DEMHPC_TEST_CHECKPOINT_FORMAT", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let ck = tmp.0.join("v2/checkpoints/ckpt_0000000010.h5");
    let o = run(
        1,
        1,
        &["--restart", ck.to_str().unwrap(), "--steps", "20"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("format version 2") && err.contains("CPM"),
        "{err}"
    );
    // the same run written in the current format restarts
    demhpc(1, &["--out", "v3", "scene.ron"], &tmp.0);
    let ck = tmp.0.join("v3/checkpoints/ckpt_0000000010.h5");
    demhpc(
        1,
        &["--restart", ck.to_str().unwrap(), "--steps", "20"],
        &tmp.0,
    );
}

/// Issue 20, acceptance 6: Yade's public law runs in the batched CPM loop
/// (`contact/cpm_batch.rs`); the tension test with it past the peak gives the identical
/// `strainer.csv` on 1, 2, 3, 4 and 8 ranks (oversubscribed) × 1 and 2 threads, and a restart
/// after the peak on 3 ranks × 2 threads continues to the identical curve.
#[test]
fn batched_public_law_is_rank_and_thread_independent() {
    let tmp = TempDir::new("cpm-batched");
    let t = &tmp.0;
    let scene = SCENE.replace(
        "\n        yield_surface: Log, yield_log_speed: 0.1, eps_soft: -3e-3, rel_kn_soft: 0.3))",
        "))",
    );
    assert!(!scene.contains("Log"), "the public law: {scene}");
    std::fs::write(t.join("scene.ron"), scene).unwrap();
    let runs = [(1, 1), (1, 2), (2, 1), (3, 1), (4, 2), (8, 1)];
    let mut curves = vec![];
    for (ranks, threads) in runs {
        let out = format!("r{ranks}t{threads}");
        let o = run(ranks, threads, &["--out", &out, "scene.ron"], t);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{ranks}x{threads}: {}",
            describe(&o)
        );
        curves.push(csv(&t.join(&out)));
    }
    let a = &curves[0];
    let pk = peak_step(a);
    let last = last_step(a);
    assert!(
        pk > 0 && last > pk + 200,
        "peak at {pk}, stop at {last}: softening reached"
    );
    for ((ranks, threads), b) in runs.iter().zip(&curves) {
        assert_eq!(
            a, b,
            "strainer.csv differs on {ranks} ranks x {threads} threads"
        );
    }
    let ck = (pk / 1000 + 1) * 1000;
    assert!(
        ck < last,
        "no checkpoint between the peak {pk} and the stop {last}"
    );
    let f = format!("r1t1/checkpoints/ckpt_{ck:010}.h5");
    let o = run(3, 2, &["--restart", &f, "--out", "r1t1"], t);
    assert_eq!(o.status.code(), Some(0), "restart: {}", describe(&o));
    assert_eq!(&csv(&t.join("r1t1")), a, "the restarted curve differs");
}
