//! scenes/settle.ron (issue #2, acceptance 2): run long enough, the 8000-sphere deposition
//! comes to rest — kinetic energy below 1e-6 of its peak — with no particle lost, and the
//! packing is physical: mean coordination in the bulk between 4 and 7, no overlap above 2 % of
//! a radius. Runs the optimised binary on the real scene file.
//!
//! Two lengths: the suite runs the deposition to the end of its fast decay (60 000 steps,
//! about a minute on 2 cores) and checks the packing formed and the decay reached; the rest
//! criterion itself needs 320 000 steps (about four minutes), a third of the suite's time on
//! 2 cores, so it is `#[ignore]`d: `scripts/test.sh --long` runs it (and so does
//! `cargo test --test suite settle -- --ignored`).

use std::path::PathBuf;
use std::process::Command;

/// Steps after which the deposition is at rest, in reproducible mode (a fixed realisation on any
/// machine, rank and thread count; on 2 threads). Measured (2026-11-25, this realisation):
/// KE/peak 2.2e-6 at 300 000 and 6.1e-7 at 320 000 (translational 1.1e-8) — the residue is
/// rattlers spinning about their contact normal, which the linear law (no twisting
/// resistance) and Cundall damping (no torque, nothing to damp) leave alone. (The default mode
/// on 1 thread, the realisation before: below 1e-6 from ~250 000, plateau 2.5e-7.)
const REST_STEPS: u64 = 320_000;

/// The end of the fast decay, same realisation. Measured (2026-11-28): KE/peak 2.3e-3 at
/// 40 000, 9.5e-4 at 50 000, 5.3e-4 at 60 000 (translational 3.3e-4), 1.6e-4 at 120 000; the
/// largest overlap 8.5e-4 of a radius; bulk coordination 4.00 at 60 000.
const DECAY_STEPS: u64 = 60_000;

fn out_dir(steps: u64) -> PathBuf {
    let d = std::env::temp_dir().join(format!("demhpc-settle-{}-{steps}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn settle_forms_a_physical_packing_and_decays() {
    // 4× above the measured 5.3e-4 (and the translational part above its 3.3e-4): a
    // deposition that stops losing energy, or never loses it, fails
    // bulk coordination 4.00 at 60 000 (4.56 at rest): a packing still closing up
    settle(DECAY_STEPS, 2e-3, 1.5e-3, 3.5);
}

#[test]
#[ignore = "long (about four minutes on 2 cores): scripts/test.sh --long"]
fn settle_comes_to_rest_in_a_physical_packing() {
    settle(REST_STEPS, 1e-6, 1e-7, 4.0);
}

/// Run the scene `steps` steps; the kinetic energy at the end below `ke_max` of its peak
/// (translational below `trans_max`), and the packing physical: the bulk coordination
/// between `z_min` and 7.
fn settle(steps: u64, ke_max: f64, trans_max: f64, z_min: f64) {
    let out = out_dir(steps);
    let st = Command::new(env!("CARGO_BIN_EXE_demhpc"))
        .args([
            "-q",
            "--threads",
            "2",
            "--reproducible",
            "--steps",
            &steps.to_string(),
            "--out",
        ])
        .arg(&out)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/settle.ron"))
        .status()
        .expect("run demhpc");
    assert!(st.success(), "settle run failed: {st}");

    // Time series: kinetic energy relative to its peak, overlap.
    let csv = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (kt, kr, ov) = (col("ke_trans_J"), col("ke_rot_J"), col("max_overlap_rel"));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect())
        .collect();
    let ke = |r: &Vec<f64>| r[kt] + r[kr];
    let peak = rows.iter().map(ke).fold(0.0, f64::max);
    let last = rows.last().unwrap();
    assert_eq!(last[0] as u64, steps);
    assert!(
        ke(last) < ke_max * peak,
        "KE {} vs peak {peak}: not at rest",
        ke(last)
    );
    // and the packing itself does not move (what is left is spin)
    assert!(last[kt] < trans_max * peak, "translational KE {}", last[kt]);
    assert!(last[ov] < 0.02, "overlap {} of a radius", last[ov]);

    // Final snapshot: every particle present once, inside the box, bulk coordination.
    let f = hdf5::File::open(out.join(format!("snapshots/snap_{steps:09}.h5"))).unwrap();
    let gid: Vec<u64> = f.dataset("gid").unwrap().read_raw().unwrap();
    let pos: Vec<f64> = f.dataset("pos").unwrap().read_raw().unwrap();
    let nc: Vec<u32> = f.dataset("ncontacts").unwrap().read_raw().unwrap();
    assert_eq!(
        gid,
        (0..8000u64).collect::<Vec<_>>(),
        "no particle lost or duplicated"
    );
    let (lx, d) = (0.048, 2.2e-3);
    let top = (0..8000).map(|k| pos[3 * k + 2]).fold(0.0, f64::max);
    let (mut sum, mut n) = (0u64, 0u64);
    for k in 0..8000 {
        let (x, y, z) = (pos[3 * k], pos[3 * k + 1], pos[3 * k + 2]);
        assert!((0.0..lx).contains(&x) && (0.0..lx).contains(&y) && z > 0.0 && z < 0.05);
        if x > 3.0 * d
            && x < lx - 3.0 * d
            && y > 3.0 * d
            && y < lx - 3.0 * d
            && z > 3.0 * d
            && z < top - 3.0 * d
        {
            sum += nc[k] as u64;
            n += 1;
        }
    }
    let coord = sum as f64 / n as f64;
    assert!(n > 1000, "bulk has {n} particles");
    assert!((z_min..=7.0).contains(&coord), "bulk coordination {coord}");
    let _ = std::fs::remove_dir_all(&out);
}
