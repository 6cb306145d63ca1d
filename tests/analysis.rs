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
