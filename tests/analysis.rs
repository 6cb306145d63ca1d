//! Outputs for analysis (issue 32): what the snapshots carry per particle (material, tag,
//! force and torque of the last step, coordination number; a step-0 snapshot), and — on
//! request — the contact network, read back with the `hdf5` crate as a user's h5py would.

mod support;

use std::path::Path;
use support::*;

fn read<T: hdf5::H5Type>(f: &hdf5::File, name: &str) -> Vec<T> {
    f.dataset(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .read_raw::<T>()
        .unwrap()
}

fn snapshot(out: &Path, step: u64) -> hdf5::File {
    let p = out.join(format!("snapshots/snap_{step:09}.h5"));
    hdf5::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Two spheres stacked on a floor (materials `a` below, `b` above) settling under gravity with
/// damping, and an inlet dropping one sphere of material `b` with tag 3 far above them.
const STACK: &str = r#"Scene(
    materials: [Frict(name: "a", young: 1e7, friction: 0.5, density: 2600.0),
                Frict(name: "b", young: 1e7, friction: 0.5, density: 1300.0)],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "a")],
    spheres: [Sphere(pos: (0.0, 0.0, 0.01), radius: 0.01, material: "a"),
              Sphere(pos: (0.0, 0.0, 0.03), radius: 0.01, material: "b")],
    gravity: (0.0, 0.0, -9.81), damping: 0.5,
    dt: Fixed(2e-5), run: Steps(10000),
    domain: Domain(lo: (-0.1, -0.1, -0.01), hi: (0.1, 0.1, 1.0)),
    output: Output(series_every: 1000, snapshot_every: 5000),
    inlets: [Inlet(name: "drop", region: Box(lo: (0.0, 0.0, 0.8), hi: (0.05, 0.05, 0.9)),
                   material: "b", diameters: Constant(0.02), rate: Fill(1), every: 100,
                   tag: 3)],
)"#;

/// Per particle: the material index, the tag (an inlet's sphere takes its inlet's), the
/// contacts with particles (coordination) beside all contacts (`ncontacts`), and the force and
/// torque of the last step: NaN in the step-0 snapshot (no step computed any), exactly m g on
/// the sphere in free fall (no contact: the integrator adds gravity to zero), and in
/// equilibrium below 1e-6 m g on the settled stack (Cundall damping 0.5 over 0.2 s, ~100
/// periods of the contact spring).
#[test]
fn snapshots_carry_material_tag_force_torque_coordination() {
    let tmp = TempDir::new("analysis_fields");
    std::fs::write(tmp.0.join("scene.ron"), STACK).unwrap();
    let o = demhpc(1, 1, &["--out", "out", "scene.ron"], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = tmp.0.join("out");

    let f0 = snapshot(&out, 0);
    let force0: Vec<f64> = read(&f0, "force");
    assert!(force0.iter().all(|x| x.is_nan()), "step 0: {force0:?}");
    assert!(read::<f64>(&f0, "torque").iter().all(|x| x.is_nan()));
    assert_eq!(read::<u32>(&f0, "material")[..2], [0, 1]);

    let f = snapshot(&out, 10000);
    let gid: Vec<u64> = read(&f, "gid");
    assert_eq!(gid, [0, 1, 2], "the inlet's sphere has gid n + 0");
    assert_eq!(read::<u32>(&f, "material"), [0, 1, 1]);
    assert_eq!(read::<u32>(&f, "tag"), [0, 0, 3]);
    assert_eq!(read::<u32>(&f, "coordination"), [1, 1, 0]);
    assert_eq!(read::<u32>(&f, "ncontacts"), [2, 1, 0]);
    let (force, torque): (Vec<f64>, Vec<f64>) = (read(&f, "force"), read(&f, "torque"));
    let r: Vec<f64> = read(&f, "radius");
    let mass = |k: usize, rho: f64| 4.0 / 3.0 * std::f64::consts::PI * r[k].powi(3) * rho;
    // free fall: exactly (0, 0, −9.81 m)
    assert_eq!(force[6..9], [0.0, 0.0, -9.81 * mass(2, 1300.0)]);
    assert_eq!(torque[6..9], [0.0; 3]);
    // at rest: the contacts carry the weight
    for (k, rho) in [(0, 2600.0), (1, 1300.0)] {
        let fk = &force[3 * k..3 * k + 3];
        let w = 9.81 * mass(k, rho);
        assert!(
            fk.iter().all(|x| x.abs() < 1e-6 * w),
            "sphere {k}: {fk:?} vs m g {w}"
        );
        assert!(torque[3 * k..3 * k + 3].iter().all(|x| x.abs() < 1e-12));
    }
    let unit = |name: &str| -> String {
        let a = f.dataset(name).unwrap().attr("unit").unwrap();
        a.read_scalar::<hdf5::types::VarLenUnicode>()
            .unwrap()
            .to_string()
    };
    assert_eq!((unit("force"), unit("torque")), ("N".into(), "N m".into()));
    let xmf = std::fs::read_to_string(out.join("snapshots.xmf")).unwrap();
    for name in ["material", "force", "torque", "coordination", "tag"] {
        let item = format!("snapshots/snap_000010000.h5:/{name}<");
        assert!(xmf.contains(&item), "{name} in the XDMF");
    }
}

/// The columns of `series.csv` by name.
fn series(out: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (head, rows)
}

fn col(head: &[String], name: &str) -> usize {
    head.iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn run_scene(tmp: &TempDir, scene: &str, out: &str) -> std::path::PathBuf {
    std::fs::write(tmp.0.join(format!("{out}.ron")), scene).unwrap();
    let o = demhpc(1, 1, &["--out", out, &format!("{out}.ron")], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    tmp.0.join(out)
}

/// A sphere that cannot turn (`blocked: "XYZ"`) resting on a fixed sphere at an angle θ from
/// the top, under gravity: with tan θ above the friction coefficient its contact slides at
/// Coulomb's limit (`sliding_fraction` 1 while they touch), below it the contact sticks
/// (0 at rest). For each law, with a dashpot (the limit of Cundall–Strack and of `Hooke`'s
/// `coulomb: Elastic` is then recomputed from the step's overlap, not read off the force).
#[test]
fn sliding_fraction_sees_coulomb_limit() {
    let tmp = TempDir::new("analysis_sliding");
    let laws = [
        "Frict(name: \"g\", young: 1e7, friction: MU, restitution: 0.5, density: 2600.0)",
        "Hertz(name: \"g\", young: 1e7, poisson: 0.3, friction: MU, restitution: 0.5, \
         density: 2600.0)",
        "Hooke(name: \"g\", kn: 1e5, gamma_n: 200.0, xmu: MU, coulomb: Elastic, density: 2600.0)",
        "Hooke(name: \"g\", kn: 1e5, gamma_n: 200.0, xmu: MU, density: 2600.0)",
    ];
    for (k, law) in laws.iter().enumerate() {
        for (theta, mu, slides) in [(45f64, 0.1, true), (30f64, 0.9, false)] {
            let th = theta.to_radians();
            let d = 0.02 - 1e-7; // touching, a hair of overlap
            let scene = format!(
                r#"Scene(
    materials: [{}],
    spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "g", blocked: "xyzXYZ"),
              Sphere(pos: ({:.17e}, 0.0, {:.17e}), radius: 0.01, material: "g", blocked: "XYZ")],
    gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(1e-5), run: Steps(2000),
    domain: Domain(lo: (-0.1, -0.1, -0.1), hi: (0.1, 0.1, 0.1)),
    output: Output(series_every: 100),
)"#,
                law.replace("MU", &mu.to_string()),
                d * th.sin(),
                d * th.cos()
            );
            let out = run_scene(&tmp, &scene, &format!("s{k}_{theta}"));
            let (h, rows) = series(&out);
            let (nc, sl) = (col(&h, "n_contacts"), col(&h, "sliding_fraction"));
            let ctx = format!("{law}, θ = {theta}°, μ = {mu}");
            match slides {
                // sliding from the first rows (the spring reaches the limit within 100 steps)
                true => {
                    let touching: Vec<&Vec<f64>> = rows.iter().filter(|r| r[nc] == 1.0).collect();
                    assert!(
                        touching.len() >= 5,
                        "{ctx}: contact rows {}",
                        touching.len()
                    );
                    assert!(touching.iter().all(|r| r[sl] == 1.0), "{ctx}: {rows:?}");
                }
                false => {
                    let last = rows.last().unwrap();
                    assert_eq!((last[nc], last[sl]), (1.0, 0.0), "{ctx}");
                }
            }
        }
    }
}

/// `output.analysis_region` restricts the network columns: a pair along x inside a box and a
/// chain of three spheres along z outside it, all barely overlapping in zero gravity, at
/// the first step: everywhere 2 N_c / N = 6/5 and Satake's fabric (1/3)(e_x e_x + 2 e_z e_z),
/// eigenvalues (2/3, 1/3, 0); in the box 1 and (1, 0, 0).
#[test]
fn analysis_region_restricts_the_network() {
    let tmp = TempDir::new("analysis_region");
    let scene = |region: &str| {
        format!(
            r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600.0)],
    spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "g"),
              Sphere(pos: (0.0199, 0.0, 0.0), radius: 0.01, material: "g"),
              Sphere(pos: (0.1, 0.0, 0.0), radius: 0.01, material: "g"),
              Sphere(pos: (0.1, 0.0, 0.0199), radius: 0.01, material: "g"),
              Sphere(pos: (0.1, 0.0, 0.0398), radius: 0.01, material: "g")],
    dt: Fixed(1e-6), run: Steps(2),
    domain: Domain(lo: (-0.1, -0.1, -0.1), hi: (0.2, 0.1, 0.2)),
    output: Output(series_every: 1{region}),
)"#
        )
    };
    for (region, z, e) in [
        ("", 1.2, [2.0 / 3.0, 1.0 / 3.0, 0.0]),
        (
            ", analysis_region: Box(lo: (-0.02, -0.02, -0.02), hi: (0.04, 0.02, 0.02))",
            1.0,
            [1.0, 0.0, 0.0],
        ),
    ] {
        let out = run_scene(&tmp, &scene(region), &format!("r{}", region.len()));
        let (h, rows) = series(&out);
        let r = &rows[0];
        assert_eq!(r[col(&h, "n_contacts")], 3.0);
        assert!(
            (r[col(&h, "mean_coordination")] - z).abs() < 1e-15,
            "{region}: {r:?}"
        );
        for (k, want) in e.iter().enumerate() {
            let got = r[col(&h, &format!("fabric_e{}", k + 1))];
            assert!(
                (got - want).abs() < 1e-12,
                "{region}: e{} {got} vs {want}",
                k + 1
            );
        }
        assert_eq!(r[col(&h, "sliding_fraction")], 0.0);
    }
}

/// A restart into the `series.csv` of an earlier version (without the network columns, which
/// come last) keeps its rows up to the checkpoint with the new columns empty and appends full
/// rows after them under the new header; a restart into a current file changes nothing of it.
#[test]
fn series_resume_pads_rows_of_an_older_file() {
    let tmp = TempDir::new("analysis_resume");
    let scene = STACK.replace(
        "output: Output(series_every: 1000, snapshot_every: 5000),",
        "output: Output(series_every: 1000), checkpoint: (every: 5000),",
    );
    let out = run_scene(&tmp, &scene, "full");
    let full = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 11);
    let extra = ",mean_coordination,fabric_e1,fabric_e2,fabric_e3,sliding_fraction";
    let cut = |l: &str| -> String {
        let n = l.split(',').count() - 5;
        l.split(',').take(n).collect::<Vec<_>>().join(",")
    };
    // what an earlier version wrote up to step 5000, and a row past the checkpoint
    let old: Vec<String> = lines[..8].iter().map(|l| cut(l)).collect();
    assert!(lines[0].ends_with(extra) && !old[0].ends_with("sliding_fraction"));
    std::fs::write(out.join("series.csv"), old.join("\n") + "\n").unwrap();
    let ck = out.join("checkpoints/ckpt_0000005000.h5");
    let o = demhpc(1, 1, &["--restart", ck.to_str().unwrap()], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let resumed = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let r: Vec<&str> = resumed.lines().collect();
    assert_eq!(r.len(), 11, "{resumed}");
    assert_eq!(r[0], lines[0], "the current header");
    for k in 1..=5 {
        assert_eq!(r[k], format!("{},,,,,", old[k]), "old row {k} padded");
    }
    for k in 6..=10 {
        assert_eq!(r[k], lines[k], "row {k} as the uninterrupted run's");
    }
    // into a current file: the rows up to the checkpoint as they were
    let o = demhpc(1, 1, &["--restart", ck.to_str().unwrap()], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let again = std::fs::read_to_string(out.join("series.csv")).unwrap();
    assert_eq!(again.lines().skip(6).count(), 5);
    assert_eq!(again.lines().take(6).collect::<Vec<_>>(), r[..6]);
}
