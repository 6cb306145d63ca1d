//! Meshes under MPI (issue 21): a small rotating drum in reproducible mode gives the same bits
//! on 1, 2, 3 and 4 ranks (particles and the series with the drum's force and torque), and a
//! run restarted from a checkpoint taken mid-rotation ends as the uninterrupted one. Real
//! `mpirun`, small scene (a few seconds).

use crate::support;

use demhpc::mesh::stl;
use std::f64::consts::PI;
use std::path::Path;
use support::shapes::drum;
use support::*;

/// 120 spheres in four layers just above the bottom of a drum (radius 3 cm, 48 segments)
/// turning at 3 rad/s: they land on it after ~1 900 steps, bounce a little (restitution 0.3)
/// and are carried up.
const DRUM: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0,
                         restitution: 0.3)],
    meshes: [Mesh(file: "drum.stl", material: "g",
                  motion: Rotate(point: (0.0, 0.0, 0.0), axis: (0.0, 1.0, 0.0), omega: 3.0))],
    spheres: [Lattice(material: "g", origin: (-0.0099, -0.00825, -0.0281), spacing: 3.3e-3,
                      counts: (6, 5, 4), radius: 1.5e-3, polydispersity: 0.05, jitter: 0.0)],
    gravity: (0.0, 0.0, -9.81), damping: 0.0, dt: Fixed(7e-6), skin: 0.3e-3, run: Steps(1),
    domain: Domain(lo: (-0.035, -0.012, -0.035), hi: (0.035, 0.012, 0.035)),
    output: Output(series_every: 100, snapshot_every: 1000),
    checkpoint: (every: 2000, keep: 4),
)"#;

fn setup(tmp: &TempDir) {
    std::fs::write(
        tmp.0.join("drum.stl"),
        stl::to_ascii("drum", &drum(0.03, 0.02, 48)),
    )
    .unwrap();
    std::fs::write(tmp.0.join("scene.ron"), DRUM).unwrap();
}

fn run(tmp: &TempDir, ranks: usize, args: &[&str], out: &str) {
    let mut a = args.to_vec();
    a.extend(["--out", out]);
    let o = demhpc(ranks, 1, &a, &tmp.0);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{ranks} ranks {args:?}: {}",
        describe(&o)
    );
}

fn end(dir: &Path, step: u64) -> (State, String) {
    let st = read_state(&dir.join(format!("snapshots/snap_{step:09}.h5")));
    (st, std::fs::read_to_string(dir.join("series.csv")).unwrap())
}

/// Reproducible mode: 4 000 steps on 1, 2, 3, 4 ranks end in the same bits (positions,
/// velocities, spins, contact counts) and the same series.csv, whose drum force (x, z) and
/// torque (about y) columns are non-zero at the end (the spheres lie on the turning drum).
#[test]
fn drum_is_bitwise_identical_on_1_to_4_ranks() {
    let tmp = TempDir::new("mesh-mpi");
    setup(&tmp);
    let mut ends = Vec::new();
    for ranks in 1..=4 {
        let out = format!("r{ranks}");
        run(
            &tmp,
            ranks,
            &["--steps", "4000", "--reproducible", "scene.ron"],
            &out,
        );
        ends.push(end(&tmp.0.join(&out), 4000));
    }
    let (s0, c0) = &ends[0];
    let last = c0.lines().last().unwrap();
    let cols: Vec<f64> = last.split(',').map(|x| x.parse().unwrap()).collect();
    eprintln!("1 rank: hash {:016x}, last row {last}", hash(s0));
    // force in the plane of the drum's cross-section and torque about its axis
    assert!(
        [8, 10, 12].iter().all(|&k| cols[k] != 0.0),
        "drum force and torque: {last}"
    );
    assert!(s0.ncontacts.iter().any(|&c| c > 0));
    check_mesh_snapshot(&tmp.0.join("r3"), 2000);
    for (r, (s, c)) in ends.iter().enumerate().skip(1) {
        eprintln!("{} ranks: hash {:016x}", r + 1, hash(s));
        assert_eq!(
            s.gid,
            s0.gid,
            "{} ranks: particles lost or duplicated",
            r + 1
        );
        assert!(s == s0, "{} ranks: state differs from 1 rank", r + 1);
        assert_eq!(c, c0, "{} ranks: series.csv differs", r + 1);
    }
}

/// Restart mid-rotation: the checkpoint of step 2 000 (spheres on the turning drum, facet
/// histories among the wall contacts, the drum's pose a function of time), restarted on 2 ranks,
/// ends at step 4 000 with the uninterrupted 2-rank run's bits and series rows.
#[test]
fn drum_restart_mid_rotation_is_bitwise() {
    let tmp = TempDir::new("mesh-restart");
    setup(&tmp);
    run(&tmp, 2, &["--steps", "4000", "scene.ron"], "full");
    run(&tmp, 2, &["--steps", "2000", "scene.ron"], "part");
    let ck = tmp.0.join("part/checkpoints/ckpt_0000002000.h5");
    run(
        &tmp,
        2,
        &["--restart", ck.to_str().unwrap(), "--steps", "4000"],
        "part",
    );
    let (a, ca) = end(&tmp.0.join("full"), 4000);
    let (b, cb) = end(&tmp.0.join("part"), 4000);
    eprintln!("full {:016x}, restarted {:016x}", hash(&a), hash(&b));
    assert!(a == b, "restarted state differs");
    let rows = |c: &str| -> Vec<String> {
        c.lines()
            .filter(|l| !l.starts_with("2000,"))
            .map(String::from)
            .collect()
    };
    assert_eq!(rows(&ca), rows(&cb), "series rows differ");
}

/// The snapshot of `step` (written by 3 ranks: rank 0 the mesh rows) holds the drum's 192
/// triangles at their pose of that time — vertex 0 of triangle 0 is the rim point at
/// −π/2 + π/48 turned by ω t = 3 · 2000 · 7e-6 rad about y (to 1e-15 m) — and snapshots.xmf
/// lists them as a Triangle grid beside the spheres.
fn check_mesh_snapshot(out: &Path, step: u64) {
    let f = hdf5::File::open(out.join(format!("snapshots/snap_{step:09}.h5"))).unwrap();
    let v = f.dataset("mesh_vertices").unwrap();
    assert_eq!(v.shape(), [3 * 192, 3]);
    let v = v.read_raw::<f64>().unwrap();
    let cells = f
        .dataset("mesh_triangles")
        .unwrap()
        .read_raw::<u32>()
        .unwrap();
    assert_eq!(cells, (0..3 * 192).collect::<Vec<u32>>());
    let id = f.dataset("mesh_id").unwrap().read_raw::<u32>().unwrap();
    assert!(id.len() == 192 && id.iter().all(|&k| k == 0));
    let t0 = -PI / 2.0 + PI / 48.0;
    let th = 3.0 * step as f64 * 7e-6; // right-handed about y: z → x
    let (x, z) = (0.03 * t0.cos(), 0.03 * t0.sin());
    let want = [
        x * th.cos() + z * th.sin(),
        -0.01,
        -x * th.sin() + z * th.cos(),
    ];
    for k in 0..3 {
        assert!(
            (v[k] - want[k]).abs() < 1e-15,
            "vertex 0: {:?} vs {want:?}",
            &v[..3]
        );
    }
    let xmf = std::fs::read_to_string(out.join("snapshots.xmf")).unwrap();
    let grid = format!("snap_{step:09}.h5:/mesh_triangles");
    assert!(
        xmf.contains("TopologyType=\"Triangle\" NumberOfElements=\"192\""),
        "{xmf}"
    );
    assert_eq!(xmf.matches(&grid).count(), 1, "{xmf}");
}
