//! scenes/settle.ron (issue #2, acceptance 2): run long enough, the 8000-sphere deposition
//! comes to rest — kinetic energy below 1e-6 of its peak — with no particle lost, and the
//! packing is physical: mean coordination in the bulk between 4 and 7, no overlap above 2 % of
//! a radius. Runs the release binary on the real scene file (about two minutes on 2 cores).

use std::path::PathBuf;
use std::process::Command;

/// Steps after which the deposition is at rest, in reproducible mode (a fixed realisation on any
/// machine, rank and thread count; on 2 threads so that the test takes half the time: it runs
/// alone in its test binary). Measured (2026-11-25, this realisation): KE/peak 2.2e-6 at
/// 300 000 and 6.1e-7 at 320 000 (translational 1.1e-8) — the residue is rattlers spinning
/// about their contact normal, which the linear law (no twisting resistance) and Cundall
/// damping (no torque, nothing to damp) leave alone. (The default mode on 1 thread, the
/// realisation before: below 1e-6 from ~250 000, plateau 2.5e-7.)
const REST_STEPS: u64 = 320_000;

fn out_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("demhpc-settle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn settle_comes_to_rest_in_a_physical_packing() {
    let out = out_dir();
    let st = Command::new(env!("CARGO_BIN_EXE_demhpc"))
        .args([
            "-q",
            "--threads",
            "2",
            "--reproducible",
            "--steps",
            &REST_STEPS.to_string(),
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
    assert_eq!(last[0] as u64, REST_STEPS);
    assert!(
        ke(last) < 1e-6 * peak,
        "KE {} vs peak {peak}: not at rest",
        ke(last)
    );
    // and the packing itself does not move (what is left is spin)
    assert!(last[kt] < 1e-7 * peak, "translational KE {}", last[kt]);
    assert!(last[ov] < 0.02, "overlap {} of a radius", last[ov]);

    // Final snapshot: every particle present once, inside the box, bulk coordination.
    let f = hdf5::File::open(out.join(format!("snapshots/snap_{REST_STEPS:09}.h5"))).unwrap();
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
    assert!((4.0..=7.0).contains(&coord), "bulk coordination {coord}");
    let _ = std::fs::remove_dir_all(&out);
}
