//! The files a run writes (CONVENTIONS.md "Files the project writes"), checked with independent
//! readers: `h5dump -H` (HDF5 layout), `/usr/bin/python3` + h5py (values), Python's XML parser
//! (XDMF), plain Rust (series.csv; pandas is not required).
//!
//! The scene is two equal steel spheres (r = 0.01 m) approaching head-on at ±0.5 m/s, 0.5 mm apart,
//! dt = 1e-5 s, 1000 steps, series every 30 steps, snapshots every 300 steps: snapshots at steps
//! 300, 600, 900 and the final 1000; series rows at 30, 60, …, 990 and the final 1000 (34 rows).
//! The collision (contact from t ≈ 0.5 ms, lasting π sqrt(m*/kn) ≈ 0.28 ms) is over long before
//! step 300, so every snapshot shows the spheres flying apart.

use crate::support;

use support::{describe, TempDir};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::BIN;
const PYTHON: &str = "/usr/bin/python3";
const H5DUMP: &str = "/usr/bin/h5dump";

const SCENE: &str = r#"// two_spheres with snapshots (tests/suite/outputs.rs)
Scene(
    name: "two_spheres_out",
    materials: [
        Frict(name: "steel", young: 2e8, poisson: 0.3, friction_angle: 0.5, density: 7800.0),
    ],
    spheres: [
        Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "steel", vel: (0.5, 0.0, 0.0)),
        Sphere(pos: (0.0205, 0.0, 0.0), radius: 0.01, material: "steel", vel: (-0.5, 0.0, 0.0)),
    ],
    dt: Fixed(1e-5),
    run: Steps(1000),
    output: Output(series_every: 30, snapshot_every: 300),
)
"#;
const DT: f64 = 1e-5;
const STEPS: u64 = 1000;
const SNAP_STEPS: [u64; 5] = [0, 300, 600, 900, 1000];
const RADIUS: f64 = 0.01;
const DENSITY: f64 = 7800.0;
const V0: f64 = 0.5;

/// Write the scene into a fresh temp dir and run it; returns (temp dir, output dir).
fn run_scene(test: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new(test);
    let scene = tmp.0.join("scene.ron");
    std::fs::write(&scene, SCENE).unwrap();
    let out = tmp.0.join("out");
    let o = Command::new(BIN)
        .args(["-q", "--threads", "1", "--out"])
        .arg(&out)
        .arg(&scene)
        .current_dir(&tmp.0)
        .env_remove("RUST_LOG")
        .output()
        .expect("run demhpc");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l == format!("output: {}", out.display())),
        "stdout must say `output: {}`: {}",
        out.display(),
        describe(&o)
    );
    (tmp, out)
}

fn snap(out: &Path, step: u64) -> PathBuf {
    out.join(format!("snapshots/snap_{step:09}.h5"))
}

/// A notice that shows even when the test harness captures output (a skip is not a silent pass).
fn notice(msg: &str) {
    let _ = writeln!(std::io::stderr(), "NOTICE: {msg}");
}

/// Is `/usr/bin/python3` with h5py there? Prints a notice when not.
fn have_h5py(test: &str) -> bool {
    let ok = support::python3()
        .args(["-c", "import h5py"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        notice(&format!(
            "{test}: SKIPPED the Python part: {PYTHON} with h5py is not available"
        ));
    }
    ok
}

/// Run an inline Python script with arguments; panics with its output if it fails.
fn python(script: &str, args: &[&Path]) -> String {
    let o = support::python3()
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python3");
    assert!(o.status.success(), "python failed: {}", describe(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn sphere_mass() -> f64 {
    4.0 / 3.0 * std::f64::consts::PI * RADIUS.powi(3) * DENSITY
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// The output directory holds exactly the expected files, with no temporaries left over.
#[test]
fn output_layout() {
    let (_tmp, out) = run_scene("output_layout");
    let mut top: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    for f in ["series.csv", "snapshots", "snapshots.xmf", "timing.json"] {
        assert!(top.iter().any(|t| t == f), "{f} missing from {top:?}");
    }
    assert!(
        !top.iter().any(|t| t.ends_with(".tmp")),
        "temporaries left: {top:?}"
    );
    let mut snaps: Vec<String> = std::fs::read_dir(out.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    snaps.sort();
    let want: Vec<String> = SNAP_STEPS
        .iter()
        .map(|s| format!("snap_{s:09}.h5"))
        .collect();
    assert_eq!(snaps, want, "snapshot files");
    // timing.json: the step loop and the set-up (first neighbour build) apart, both measured
    let timing = std::fs::read_to_string(out.join("timing.json")).unwrap();
    for key in ["wall_s", "setup_s", "particle_steps_per_s"] {
        let v: f64 = timing
            .split(&format!("\"{key}\": "))
            .nth(1)
            .and_then(|r| r.split([',', '\n']).next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{key} missing from timing.json:\n{timing}"));
        assert!(v > 0.0 && v.is_finite(), "{key} = {v}");
    }
}

/// One `DATASET`/`ATTRIBUTE` of an `h5dump -H` listing.
#[derive(Debug)]
struct H5Obj {
    kind: String,
    name: String,
    /// The dataset an attribute hangs on ("" for the root group).
    parent: String,
    datatype: String,
    /// `SCALAR` or the current dims, e.g. [2, 3].
    dims: Option<Vec<u64>>,
}

/// Parse `h5dump -H` output: each object's DATATYPE and DATASPACE are the first ones after its
/// opening line (a nested attribute's come after its dataset's).
fn parse_h5dump(text: &str) -> Vec<H5Obj> {
    let mut objs: Vec<H5Obj> = Vec::new();
    let mut current_dataset = String::new();
    let mut last_open: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        for kind in ["DATASET", "ATTRIBUTE"] {
            if let Some(rest) = t.strip_prefix(&format!("{kind} \"")) {
                let name = rest.split('"').next().unwrap().to_string();
                // Root-level objects are indented by 3 in h5dump's layout.
                let parent = if indent <= 3 {
                    String::new()
                } else {
                    current_dataset.clone()
                };
                if kind == "DATASET" {
                    current_dataset = name.clone();
                }
                objs.push(H5Obj {
                    kind: kind.into(),
                    name,
                    parent,
                    datatype: String::new(),
                    dims: None,
                });
                last_open = Some(objs.len() - 1);
            }
        }
        let Some(k) = last_open else { continue };
        if let Some(rest) = t.strip_prefix("DATATYPE") {
            if objs[k].datatype.is_empty() {
                objs[k].datatype = rest.split_whitespace().next().unwrap_or("").to_string();
            }
        } else if let Some(rest) = t.strip_prefix("DATASPACE") {
            if objs[k].dims.is_none() {
                let rest = rest.trim();
                objs[k].dims = Some(if rest.starts_with("SCALAR") {
                    vec![]
                } else {
                    // SIMPLE { ( 2, 3 ) / ( 2, 3 ) }
                    let inner = rest
                        .split('(')
                        .nth(1)
                        .and_then(|s| s.split(')').next())
                        .unwrap_or_else(|| panic!("cannot parse `{line}`"));
                    inner
                        .split(',')
                        .map(|d| d.trim().parse().unwrap_or_else(|_| panic!("`{line}`")))
                        .collect()
                });
            }
        }
    }
    objs
}

/// (a) `h5dump -H` of the final snapshot: dataset names, types and shapes; attributes.
#[test]
fn h5dump_layout() {
    if !Path::new(H5DUMP).is_file() {
        notice(&format!(
            "h5dump_layout: SKIPPED: {H5DUMP} not installed (hdf5-tools)"
        ));
        return;
    }
    let (_tmp, out) = run_scene("h5dump_layout");
    let f = snap(&out, STEPS);
    let o = Command::new(H5DUMP).arg("-H").arg(&f).output().unwrap();
    assert!(o.status.success(), "h5dump: {}", describe(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let objs = parse_h5dump(&text);
    let get = |kind: &str, name: &str, parent: &str| -> &H5Obj {
        objs.iter()
            .find(|o| o.kind == kind && o.name == name && o.parent == parent)
            .unwrap_or_else(|| panic!("no {kind} {name} (in `{parent}`) in:\n{text}"))
    };
    for (name, ty, dims) in [
        ("gid", "H5T_STD_U64LE", vec![2u64]),
        ("pos", "H5T_IEEE_F64LE", vec![2, 3]),
        ("vel", "H5T_IEEE_F64LE", vec![2, 3]),
        ("angvel", "H5T_IEEE_F64LE", vec![2, 3]),
        ("radius", "H5T_IEEE_F64LE", vec![2]),
        ("ncontacts", "H5T_STD_U32LE", vec![2]),
        ("tag", "H5T_STD_U32LE", vec![2]),
        ("material", "H5T_STD_U32LE", vec![2]),
        ("force", "H5T_IEEE_F64LE", vec![2, 3]),
        ("torque", "H5T_IEEE_F64LE", vec![2, 3]),
        ("coordination", "H5T_STD_U32LE", vec![2]),
        ("domain", "H5T_IEEE_F64LE", vec![8, 3]),
    ] {
        let d = get("DATASET", name, "");
        assert_eq!(d.datatype, ty, "{name} type");
        assert_eq!(d.dims.as_ref(), Some(&dims), "{name} shape");
    }
    let n_datasets = objs.iter().filter(|o| o.kind == "DATASET").count();
    assert_eq!(n_datasets, 12, "datasets: {objs:?}");
    // Units on the physical quantities, step/time/version on the file.
    for name in [
        "pos", "vel", "angvel", "radius", "force", "torque", "domain",
    ] {
        assert_eq!(get("ATTRIBUTE", "unit", name).datatype, "H5T_STRING");
    }
    let step = get("ATTRIBUTE", "step", "");
    assert_eq!(
        (step.datatype.as_str(), step.dims.as_ref()),
        ("H5T_STD_U64LE", Some(&vec![]))
    );
    let time = get("ATTRIBUTE", "time", "");
    assert_eq!(
        (time.datatype.as_str(), time.dims.as_ref()),
        ("H5T_IEEE_F64LE", Some(&vec![]))
    );
    assert_eq!(
        get("ATTRIBUTE", "demhpc_version", "").datatype,
        "H5T_STRING"
    );
}

const READ_SNAP: &str = r#"
import sys, h5py
for path in sys.argv[1:]:
    with h5py.File(path, "r") as f:
        print("file", path)
        print("step", int(f.attrs["step"]))
        print("time", repr(float(f.attrs["time"])))
        print("version", str(f.attrs["demhpc_version"]))
        for k in ("gid", "ncontacts"):
            print(k, *[int(x) for x in f[k][()].ravel()])
        for k in ("radius", "pos", "vel", "angvel"):
            print(k, *[repr(float(x)) for x in f[k][()].ravel()])
        for k in ("pos", "vel", "angvel", "radius"):
            print("unit_" + k, str(f[k].attrs["unit"]))
"#;

/// One snapshot as printed by `READ_SNAP`.
#[derive(Debug, Default)]
struct Snap {
    step: u64,
    time: f64,
    version: String,
    gid: Vec<u64>,
    ncontacts: Vec<u64>,
    radius: Vec<f64>,
    pos: Vec<f64>,
    vel: Vec<f64>,
    angvel: Vec<f64>,
    units: Vec<(String, String)>,
}

fn read_snaps(paths: &[&Path]) -> Vec<Snap> {
    let text = python(READ_SNAP, paths);
    let mut v: Vec<Snap> = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let key = it.next().unwrap();
        let rest: Vec<&str> = it.collect();
        let f = |r: &[&str]| -> Vec<f64> { r.iter().map(|x| x.parse().unwrap()).collect() };
        let u = |r: &[&str]| -> Vec<u64> { r.iter().map(|x| x.parse().unwrap()).collect() };
        if key == "file" {
            v.push(Snap::default());
            continue;
        }
        let s = v.last_mut().expect("`file` line first");
        match key {
            "step" => s.step = rest[0].parse().unwrap(),
            "time" => s.time = rest[0].parse().unwrap(),
            "version" => s.version = rest.join(" "),
            "gid" => s.gid = u(&rest),
            "ncontacts" => s.ncontacts = u(&rest),
            "radius" => s.radius = f(&rest),
            "pos" => s.pos = f(&rest),
            "vel" => s.vel = f(&rest),
            "angvel" => s.angvel = f(&rest),
            k if k.starts_with("unit_") => s.units.push((k[5..].into(), rest.join(" "))),
            _ => panic!("unexpected line `{line}`"),
        }
    }
    assert_eq!(v.len(), paths.len(), "python output:\n{text}");
    v
}

/// Parsed `series.csv`: header and rows of numbers (`NaN` allowed).
fn read_series(out: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(String::from)
        .collect();
    let rows: Vec<Vec<f64>> = lines
        .enumerate()
        .map(|(k, l)| {
            let r: Vec<f64> = l
                .split(',')
                .map(|x| {
                    x.parse()
                        .unwrap_or_else(|_| panic!("series.csv line {}: `{x}`", k + 2))
                })
                .collect();
            assert_eq!(r.len(), header.len(), "series.csv line {}: `{l}`", k + 2);
            r
        })
        .collect();
    (header, rows)
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// (b) Values of the final snapshot read with h5py: radius, gid, positions after the collision,
/// consistent with the previous snapshot (free flight), with the series (kinetic energy, time)
/// and with momentum conservation (symmetric positions and velocities).
#[test]
fn h5py_values() {
    if !have_h5py("h5py_values") {
        return;
    }
    let (_tmp, out) = run_scene("h5py_values");
    let (p900, p1000) = (snap(&out, 900), snap(&out, STEPS));
    let s = read_snaps(&[&p900, &p1000]);
    let (a, b) = (&s[0], &s[1]);

    assert_eq!(b.step, STEPS);
    assert!(close(b.time, STEPS as f64 * DT, 1e-12), "time {}", b.time);
    assert_eq!(b.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(b.gid, vec![0, 1]);
    assert_eq!(b.radius, vec![RADIUS, RADIUS]);
    assert_eq!(b.ncontacts, vec![0, 0], "the spheres are apart");
    assert_eq!(b.angvel, vec![0.0; 6], "head-on: no rotation");
    for (q, unit) in [
        ("pos", "m"),
        ("vel", "m/s"),
        ("angvel", "rad/s"),
        ("radius", "m"),
    ] {
        assert!(
            b.units.iter().any(|(k, u)| k == q && u == unit),
            "unit of {q} must be {unit}: {:?}",
            b.units
        );
    }
    let (x0, x1) = (b.pos[0], b.pos[3]);
    // After the collision the spheres fly apart: sphere 0 left of its start, sphere 1 right.
    assert!(x0 < 0.0, "pos[0].x = {x0}");
    assert!(x1 > 0.0205, "pos[1].x = {x1}");
    // Head-on along x: y and z stay exactly 0.
    for k in [1, 2, 4, 5] {
        assert_eq!(b.pos[k], 0.0, "pos {:?}", b.pos);
        assert_eq!(b.vel[k], 0.0, "vel {:?}", b.vel);
    }
    // Equal masses: the centre of mass stays at 0.01025 m, velocities are opposite.
    assert!((x0 + x1 - 0.0205).abs() < 1e-12, "x0 + x1 = {}", x0 + x1);
    assert!((b.vel[0] + b.vel[3]).abs() < 1e-12, "vel {:?}", b.vel);
    // Elastic (no restitution given): speed returns to 0.5 m/s (1 % at this coarse dt), reversed.
    assert!(
        b.vel[0] < 0.0 && close(-b.vel[0], V0, 1e-2),
        "vel {:?}",
        b.vel
    );
    // Sphere 0: contact at x ≈ +0.25 mm, then back at ~0.5 m/s for ~9.2 ms: x ≈ −4.4 mm.
    assert!((-0.0050..-0.0035).contains(&x0), "pos[0].x = {x0}");
    // Free flight between steps 900 and 1000: Δx = v · 100 dt (to rounding).
    assert_eq!(a.step, 900);
    assert_eq!(a.vel, b.vel, "no forces after the collision");
    for k in [0, 3] {
        let dx = b.pos[k] - a.pos[k];
        let want = b.vel[k] * 100.0 * DT;
        assert!((dx - want).abs() < 1e-12, "Δx {dx} vs v·Δt {want}");
    }
    // The series agrees with the snapshot: same time, kinetic energy ½ Σ m v².
    let (h, rows) = read_series(&out);
    let last = rows.last().unwrap();
    assert_eq!(last[col(&h, "step")], STEPS as f64);
    assert!(close(last[col(&h, "time_s")], b.time, 1e-11));
    let ke: f64 = 0.5 * sphere_mass() * b.vel.iter().map(|v| v * v).sum::<f64>();
    let ke_series = last[col(&h, "ke_trans_J")];
    assert!(close(ke_series, ke, 1e-8), "series KE {ke_series} vs {ke}");
    assert_eq!(last[col(&h, "n_contacts")], 0.0);
}

const CHECK_XMF: &str = r#"
import os, sys
import xml.etree.ElementTree as ET
import h5py
xmf = sys.argv[1]
base = os.path.dirname(os.path.abspath(xmf))
root = ET.parse(xmf).getroot()  # raises on malformed XML
def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
if root.tag != "Xdmf":
    fail("root element is " + root.tag)
coll = root.findall("./Domain/Grid")
if [c.get("Name") for c in coll] != ["domain", "particles"]:
    fail("expected the domain's and the particles' collections")
for c in coll:
    if c.get("GridType") != "Collection" or c.get("CollectionType") != "Temporal":
        fail("expected temporal collections")
kinds = {"Float": "f", "UInt": "u", "Int": "i"}
for g in coll[0].findall("Grid"):
    fname, dname = g.find("Geometry/DataItem").text.strip().split(":/")
    with h5py.File(os.path.join(base, fname), "r") as f:
        if dname != "domain" or f[dname].shape != (8, 3):
            fail("domain grid " + g.get("Name"))
    print("domain", g.get("Name"), g.find("Time").get("Value"))
n = 0
for g in coll[1].findall("Grid"):
    t = float(g.find("Time").get("Value"))
    topo = g.find("Topology")
    if topo.get("TopologyType") != "Polyvertex":
        fail("topology " + str(topo.get("TopologyType")))
    nel = int(topo.get("NumberOfElements"))
    conn = topo.findall("DataItem")
    if len(conn) != 1 or not (conn[0].text or "").strip().endswith(":/gid"):
        fail("the Polyvertex topology must name its connectivity (gid)")
    files = set()
    for di in g.iter("DataItem"):
        text = (di.text or "").strip()
        if ":/" not in text:
            fail("DataItem text " + repr(text))
        fname, dname = text.split(":/", 1)
        path = os.path.join(base, fname)
        if not os.path.isfile(path):
            fail(text + ": no file " + path)
        if di.get("Format") != "HDF":
            fail(text + ": Format " + str(di.get("Format")))
        with h5py.File(path, "r") as f:
            if dname not in f:
                fail(text + ": no dataset " + dname)
            ds = f[dname]
            dims = tuple(int(x) for x in di.get("Dimensions").split())
            if dims != ds.shape:
                fail("%s: Dimensions %s but dataset shape %s" % (text, dims, ds.shape))
            if dims[0] != nel:
                fail("%s: %d rows but %d elements" % (text, dims[0], nel))
            nt = di.get("NumberType", "Float")
            prec = int(di.get("Precision", "4"))
            if kinds.get(nt) != ds.dtype.kind or prec != ds.dtype.itemsize:
                fail("%s: NumberType %s Precision %d but dtype %s" % (text, nt, prec, ds.dtype))
            if abs(float(f.attrs["time"]) - t) > 1e-11 * abs(t):
                fail("%s: Time %r but attribute time %r" % (text, t, float(f.attrs["time"])))
            if g.get("Name") != "step%d" % int(f.attrs["step"]):
                fail("%s: grid %s but attribute step %d" % (text, g.get("Name"), int(f.attrs["step"])))
        files.add(fname)
        n += 1
    print("grid", g.get("Name"), repr(t), nel, *sorted(files))
print("dataitems", n)
"#;

/// (c) `snapshots.xmf` is well-formed XML; every DataItem `file.h5:/name` names an existing file
/// (relative to the xmf) holding dataset `name` with the declared Dimensions and number type;
/// one grid per snapshot file, in step order, with the snapshot's time; the Polyvertex topology
/// names `gid` (0..N−1) as its connectivity.
#[test]
fn xdmf_matches_snapshots() {
    if !have_h5py("xdmf_matches_snapshots") {
        return;
    }
    let (_tmp, out) = run_scene("xdmf_matches_snapshots");
    let text = python(CHECK_XMF, &[&out.join("snapshots.xmf")]);
    let grids: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("grid "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(grids.len(), SNAP_STEPS.len(), "{text}");
    let domains = text.lines().filter(|l| l.starts_with("domain ")).count();
    assert_eq!(
        domains,
        SNAP_STEPS.len(),
        "the domain at every time: {text}"
    );
    for (g, step) in grids.iter().zip(SNAP_STEPS) {
        assert_eq!(g[1], format!("step{step}"), "{text}");
        let t: f64 = g[2].parse().unwrap();
        assert!(close(t, step as f64 * DT, 1e-11), "{text}");
        assert_eq!(g[3], "2", "{text}");
        // Each grid reads only its own snapshot file.
        assert_eq!(&g[4..], [format!("snapshots/snap_{step:09}.h5")], "{text}");
    }
    // connectivity (gid), pos, radius, vel, angvel, gid, ncontacts, tag, material, force,
    // torque, coordination, pos (as data, for meshio's time-series reader) per grid.
    assert!(
        text.lines()
            .any(|l| l == format!("dataitems {}", 13 * SNAP_STEPS.len())),
        "{text}"
    );
}

/// (d) `series.csv`: header `step,time_s,...` with SI units in the names, one row every 30 steps
/// plus the final step, consistent times, and the collision visible in the contact count.
#[test]
fn series_csv() {
    let (_tmp, out) = run_scene("series_csv");
    let (h, rows) = read_series(&out);
    assert_eq!(
        h.join(","),
        "step,time_s,dt_s,ke_trans_J,ke_rot_J,n_contacts,unbalanced,max_overlap_rel,\
         mean_coordination,fabric_e1,fabric_e2,fabric_e3,sliding_fraction",
        "header (no walls)"
    );
    let want: Vec<u64> = (1..=STEPS / 30).map(|k| 30 * k).chain([STEPS]).collect();
    assert_eq!(rows.len(), 34);
    let steps: Vec<u64> = rows.iter().map(|r| r[0] as u64).collect();
    assert_eq!(steps, want, "rows every 30 steps and the final one");
    let ke0 = sphere_mass() * V0 * V0; // ½ · 2m · v0²
    let mut seen_contact = false;
    for r in &rows {
        let step = r[0];
        assert!(close(r[col(&h, "time_s")], step * DT, 1e-9), "row {r:?}");
        assert_eq!(r[col(&h, "dt_s")], DT, "row {r:?}");
        assert_eq!(r[col(&h, "ke_rot_J")], 0.0, "row {r:?}");
        let nc = r[col(&h, "n_contacts")];
        let ke = r[col(&h, "ke_trans_J")];
        let unbalanced = r[col(&h, "unbalanced")];
        if nc > 0.0 {
            seen_contact = true;
            assert_eq!(nc, 1.0, "one sphere–sphere contact: {r:?}");
            // each sphere's resultant is the contact force: mean |F| / mean |F_c| = 1
            assert!(close(unbalanced, 1.0, 1e-12), "row {r:?}");
            assert!(r[col(&h, "max_overlap_rel")] > 0.0, "row {r:?}");
            assert!(ke < ke0, "energy stored in the contact: {r:?}");
            // the network: 2 N_c / N = 1, all contact normals along x (F = n ⊗ n = e_x ⊗ e_x),
            // head-on (no tangential force: not sliding)
            assert_eq!(r[col(&h, "mean_coordination")], 1.0, "row {r:?}");
            let e: Vec<f64> = ["fabric_e1", "fabric_e2", "fabric_e3"]
                .iter()
                .map(|c| r[col(&h, c)])
                .collect();
            assert!(
                (e[0] - 1.0).abs() < 1e-15 && e[1].abs() < 1e-15 && e[2].abs() < 1e-15,
                "{e:?}"
            );
            assert_eq!(r[col(&h, "sliding_fraction")], 0.0, "row {r:?}");
        } else {
            // Before and after the collision: all energy kinetic (1 % at this coarse dt).
            assert!(close(ke, ke0, 1e-2), "KE {ke} vs {ke0}: {r:?}");
            assert_eq!(r[col(&h, "max_overlap_rel")], 0.0, "row {r:?}");
            // no contact and no force at all: nothing unbalanced (not NaN)
            assert_eq!(unbalanced, 0.0, "row {r:?}");
            // no contact: coordination 0, no fabric nor sliding fraction (NaN)
            assert_eq!(r[col(&h, "mean_coordination")], 0.0, "row {r:?}");
            assert!(r[col(&h, "fabric_e1")].is_nan() && r[col(&h, "sliding_fraction")].is_nan());
        }
    }
    assert!(
        seen_contact,
        "the row at step 60 (t = 0.6 ms) is during the contact"
    );
    assert_eq!(rows.last().unwrap()[col(&h, "n_contacts")], 0.0);
}

/// `unbalanced` without a contact force to compare with is finite (it used to be NaN): 1 for a
/// sphere in free fall (its whole resultant, m g, is unbalanced), 0 for two CPM spheres held
/// by a cohesive link at its equilibrium distance (the link carries no force, nor does either
/// sphere).
#[test]
fn unbalanced_is_finite_without_contact_forces() {
    let tmp = TempDir::new("unbalanced");
    let scenes = [
        (
            "fall",
            r#"Scene(materials: [Frict(name: "m", young: 1e7, friction_angle: 0.5, density: 2600.0)],
            spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "m")],
            gravity: (0.0, 0.0, -9.81), dt: Fixed(1e-4), run: Steps(20),
            domain: Domain(lo: (-1.0, -1.0, -1.0), hi: (1.0, 1.0, 1.0)),
            output: Output(series_every: 10))"#,
            1.0,
        ),
        (
            "link",
            r#"Scene(materials: [Cpm(name: "c", params: (young: 24e9, density: 4800.0, sigmaT: 3.5e6, epsCrackOnset: 1e-4, relDuctility: 30.0))],
            spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.002, material: "c"),
                      Sphere(pos: (0.0035, 0.0, 0.0), radius: 0.002, material: "c")],
            dt: PWave(0.5), run: Steps(20), output: Output(series_every: 10))"#,
            0.0,
        ),
    ];
    for (name, scene, want) in scenes {
        let file = tmp.0.join(format!("{name}.ron"));
        std::fs::write(&file, scene).unwrap();
        let out = tmp.0.join(name);
        let o = Command::new(BIN)
            .args(["-q", "--threads", "1", "--out"])
            .arg(&out)
            .arg(&file)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", describe(&o));
        let (h, rows) = read_series(&out);
        assert_eq!(rows.len(), 2, "{name}");
        for r in &rows {
            let nc = r[col(&h, "n_contacts")];
            assert_eq!(nc, if name == "link" { 1.0 } else { 0.0 }, "{name}: {r:?}");
            assert_eq!(r[col(&h, "unbalanced")], want, "{name}: {r:?}");
        }
    }
}

/// 27 lattice spheres and an inlet adding 200 (every 10 steps, as room allows) in zero
/// gravity: the particle count grows from 27 to 227 during the 200 steps. A series row and a
/// progress line every step.
const INLET: &str = r#"Scene(
    name: "inlet_out",
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    spheres: [Lattice(material: "g", spacing: 0.02, counts: (3, 3, 3), radius: 0.004, seed: 1)],
    dt: Fixed(1e-5), skin: 0.001, run: Steps(200),
    domain: Domain(lo: (-0.01, -0.01, -0.01), hi: (0.08, 0.08, 0.08)),
    output: Output(series_every: 1, progress_s: 0.0),
    inlets: [Inlet(name: "box", region: Box(lo: (0.0, 0.0, 0.0), hi: (0.06, 0.06, 0.06)), material: "g",
                   psd: Uniform(0.004, 0.008), rate: Fill(200), every: 10, seed: 7)],
)"#;

/// Run `scene` (written as `scene.ron`) on one process with info logging into `out`; returns
/// (temp dir, output dir, stderr).
fn run_logged(test: &str, scene: &str) -> (TempDir, PathBuf, String) {
    let tmp = TempDir::new(test);
    std::fs::write(tmp.0.join("scene.ron"), scene).unwrap();
    let out = tmp.0.join("out");
    let o = Command::new(BIN)
        .args(["--threads", "1", "--out"])
        .arg(&out)
        .arg("scene.ron")
        .current_dir(&tmp.0)
        .env_remove("RUST_LOG")
        .output()
        .expect("run demhpc");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (tmp, out, err)
}

/// Issue 32, defect 4: with an inlet, `timing.json` and the log count the particles present
/// at each step, not the initial 27: `particle_steps` is the sum over the steps of the
/// particles each step advanced (the series' `n_particles`, one row per step), the rate is
/// it over `wall_s`, `particles` the count at the end; each progress line names the
/// particles of its step, and the summary the particle-steps.
#[test]
fn timing_counts_the_particles_present_at_each_step() {
    let (_tmp, out, err) = run_logged("timing_inlet", INLET);
    let (head, rows) = read_series(&out);
    let n = col(&head, "n_particles");
    assert_eq!(rows.len(), 200);
    let per_step: Vec<u64> = rows.iter().map(|r| r[n] as u64).collect();
    let total: u64 = per_step.iter().sum();
    let last = *per_step.last().unwrap();
    assert!(last > 200, "the inlet inserted too few: {per_step:?}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("timing.json")).unwrap())
            .expect("timing.json is JSON");
    assert_eq!(t["particles"].as_u64(), Some(last), "{t}");
    assert_eq!(t["particle_steps"].as_u64(), Some(total), "{t}");
    let rate = t["particle_steps_per_s"].as_f64().unwrap();
    let wall = t["wall_s"].as_f64().unwrap();
    assert!(
        close(rate * wall, total as f64, 1e-9),
        "{rate} × {wall} vs {total}"
    );
    // a progress line per step, each with the particles of its step
    let mut seen = 0;
    for l in err.lines().filter(|l| l.starts_with("[INFO ] step ")) {
        let step: usize = l
            .split("step ")
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let want = format!(" {} particles ", per_step[step - 1]);
        assert!(l.contains(&want), "step {step}: `{want}` not in `{l}`");
        seen += 1;
    }
    assert!(seen >= 199, "{seen} progress lines: {err}");
    let done = err.lines().find(|l| l.contains("done:")).unwrap();
    assert!(
        done.contains(&format!("{total} particle-steps"))
            && done.contains(&format!("{last} particles at the end")),
        "{done}"
    );
}

/// Issue 32, defect 5: `timing.json` is JSON whatever the scene name holds (a quote, a
/// a brace): it parses, and gives the name back.
#[test]
fn timing_json_is_json_with_a_quote_in_the_scene_name() {
    let scene = SCENE.replace("name: \"two_spheres_out\"", r#"name: "say \"hi\" {x}""#);
    let (_tmp, out, _) = run_logged("timing_quote", &scene);
    let text = std::fs::read_to_string(out.join("timing.json")).unwrap();
    let t: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("timing.json is not JSON ({e}):\n{text}"));
    assert_eq!(t["scene"].as_str(), Some(r#"say "hi" {x}"#), "{t}");
    assert_eq!(t["steps"].as_u64(), Some(STEPS), "{t}");
}
