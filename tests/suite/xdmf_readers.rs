//! The snapshots of a rotating drum as real XDMF readers load them (issue 21, point 4): what a
//! user sees on opening `snapshots.xmf` in ParaView. A small drum (120 spheres falling inside a
//! closed drum of 192 triangles turning at 5 rad/s about y, 600 steps, snapshots at steps 0,
//! 200, 400, 600) is loaded by
//!
//! - ParaView's own readers, through `pvbatch` (`tests/readers/xdmf_paraview.py`): the three
//!   its Open dialog offers for `.xmf`: Xdmf3ReaderS ("Xdmf3 Reader"), Xdmf3ReaderT and the
//!   XDMF 2 XDMFReader. ParaView is heavy (~250 Debian packages, ~1 GB), so `scripts/setup.sh`
//!   installs it only with `--peers`; without it this part is skipped with a NOTICE;
//! - meshio (`tests/readers/xdmf_meshio.py`), the cheap check that always runs (`setup.sh`
//!   installs python3-meshio, ~7 MB): its `TimeSeriesReader` on snapshots.xmf itself (the
//!   particles at every time: issue 32 — the layout before gave it no grid with meshes, and
//!   the first time's positions only without), and `meshio.read` on each time's grids copied
//!   verbatim into one-grid files (it reads one grid per file).
//!
//! Both dump what they read in one format, checked here: the time steps (4, at step · Δt), at
//! each time one particle dataset (120 points, 120 one-point vertex cells over points 0..119,
//! the positions, radii and velocities of the snapshot file) and one mesh dataset (192 triangle
//! cells over points 0..575, all of mesh 0), whose points are the STL's vertices turned by
//! ω t about the axis (to 1e-6 of the radius; the last snapshot's turn moves them 2e4 times
//! that).

use crate::support;

use demhpc::mesh::stl;
use demhpc::V3;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::shapes::drum;
use support::*;

const PYTHON: &str = "/usr/bin/python3";
const R: f64 = 0.03;
const OMEGA: f64 = 5.0;
const DT: f64 = 7e-6;
const SNAP_STEPS: [u64; 4] = [0, 200, 400, 600];
const SPHERES: usize = 120;
const TRIANGLES: usize = 192;
/// Tolerance relative to the scale of each quantity (the drum radius for positions).
const TOL: f64 = 1e-6;

const SCENE: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    meshes: [Mesh(file: "drum.stl", material: "g",
                  motion: Rotate(point: (0.0, 0.0, 0.0), axis: (0.0, 1.0, 0.0), omega: 5.0))],
    spheres: [Lattice(material: "g", origin: (-0.0099, -0.00825, -0.0281), spacing: 3.3e-3,
                      counts: (6, 5, 4), radius: 1.5e-3, polydispersity: 0.05, jitter: 0.0)],
    gravity: (0.0, 0.0, -9.81), damping: 0.0, dt: Fixed(7e-6), skin: 0.3e-3, run: Steps(600),
    domain: Domain(lo: (-0.035, -0.012, -0.035), hi: (0.035, 0.012, 0.035)),
    output: Output(series_every: 100, snapshot_every: 200),
)"#;

/// Run the drum in a fresh temp dir; returns (temp dir, output dir, the drum's triangles).
fn run_drum(test: &str) -> (TempDir, PathBuf, Vec<[V3; 3]>) {
    let tmp = TempDir::new(test);
    let tris = drum(R, 0.02, 48);
    assert_eq!(tris.len(), TRIANGLES);
    std::fs::write(tmp.0.join("drum.stl"), stl::to_ascii("drum", &tris)).unwrap();
    std::fs::write(tmp.0.join("scene.ron"), SCENE).unwrap();
    let o = demhpc(1, 1, &["--out", "out", "scene.ron"], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = tmp.0.join("out");
    (tmp, out, tris)
}

/// A notice that shows even when the test harness captures output (a skip is not a silent pass).
fn notice(msg: &str) {
    let _ = writeln!(std::io::stderr(), "NOTICE: {msg}");
}

/// One dataset as a reader gave it.
#[derive(Default, Debug)]
struct Grid {
    time_index: usize,
    time: f64,
    kind: String,
    n_points: usize,
    n_cells: usize,
    points: Vec<f64>,
    cell_types: Vec<u8>,
    cell_sizes: Vec<usize>,
    conn: Vec<usize>,
    /// name → (components, values), point and cell arrays alike.
    arrays: HashMap<String, (usize, Vec<f64>)>,
}

/// What one reader read.
#[derive(Default, Debug)]
struct Dump {
    reader: String,
    times: Vec<f64>,
    grids: Vec<Grid>,
}

/// Parse the dump of tests/readers/xdmf_*.py.
fn parse(text: &str) -> Vec<Dump> {
    fn nums<T: std::str::FromStr>(w: &[&str]) -> Vec<T>
    where
        T::Err: std::fmt::Debug,
    {
        w.iter().map(|x| x.parse().unwrap()).collect()
    }
    let mut dumps: Vec<Dump> = Vec::new();
    let mut grid: Option<Grid> = None;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let Some(&key) = w.first() else { continue };
        match key {
            "reader" => dumps.push(Dump {
                reader: w[1].to_string(),
                ..Dump::default()
            }),
            "times" => dumps.last_mut().unwrap().times = nums(&w[1..]),
            "grid" => {
                grid = Some(Grid {
                    time_index: w[1].parse().unwrap(),
                    time: w[2].parse().unwrap(),
                    kind: w[3].to_string(),
                    n_points: w[4].parse().unwrap(),
                    n_cells: w[5].parse().unwrap(),
                    ..Grid::default()
                })
            }
            "points" => grid.as_mut().unwrap().points = nums(&w[1..]),
            "celltypes" => grid.as_mut().unwrap().cell_types = nums(&w[1..]),
            "cellsizes" => grid.as_mut().unwrap().cell_sizes = nums(&w[1..]),
            "conn" => grid.as_mut().unwrap().conn = nums(&w[1..]),
            "point" | "cell" => {
                let g = grid.as_mut().unwrap();
                g.arrays
                    .insert(w[1].to_string(), (w[2].parse().unwrap(), nums(&w[3..])));
            }
            "end" => dumps.last_mut().unwrap().grids.push(grid.take().unwrap()),
            _ => {}
        }
    }
    assert!(grid.is_none(), "dump ends inside a grid:\n{text}");
    dumps
}

/// `got` equals `want` to TOL · `scale`, element by element.
fn assert_close(what: &str, got: &[f64], want: &[f64], scale: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= TOL * scale,
            "{what}[{k}]: {a} vs {b} (tolerance {})",
            TOL * scale
        );
    }
}

fn read_f64(f: &hdf5::File, name: &str) -> Vec<f64> {
    f.dataset(name).unwrap().read_raw::<f64>().unwrap()
}

/// The checks of the module doc on one reader's dump (`meshes`: it holds the meshes' grids
/// too; meshio's time-series reader reads the particles only).
fn check(d: &Dump, out: &Path, tris: &[[V3; 3]], meshes: bool) {
    let who = &d.reader;
    // the time steps
    assert_eq!(
        d.times.len(),
        SNAP_STEPS.len(),
        "{who}: times {:?}",
        d.times
    );
    for (t, step) in d.times.iter().zip(SNAP_STEPS) {
        let want = step as f64 * DT;
        assert!(
            (t - want).abs() <= 1e-12 * want,
            "{who}: time {t} vs {want}"
        );
    }
    // the spheres, with meshes the meshes and the domain's box too (meshio's time-series
    // reader reads the particles only)
    let kinds = if meshes { 3 } else { 1 };
    assert_eq!(d.grids.len(), kinds * SNAP_STEPS.len(), "{who}: datasets");
    for (i, step) in SNAP_STEPS.iter().enumerate() {
        let at: Vec<&Grid> = d.grids.iter().filter(|g| g.time_index == i).collect();
        let one = |kind: &str| -> &Grid {
            let g: Vec<&&Grid> = at.iter().filter(|g| g.kind == kind).collect();
            assert_eq!(g.len(), 1, "{who}, time {i}: one {kind} dataset");
            g[0]
        };
        let sp = one("spheres");
        assert!(sp.time == d.times[i], "{who}: dataset times");
        let f = hdf5::File::open(out.join(format!("snapshots/snap_{step:09}.h5"))).unwrap();
        let ctx = format!("{who}, step {step}");

        // particles: one vertex cell per particle, the snapshot's values
        assert_eq!((sp.n_points, sp.n_cells), (SPHERES, SPHERES), "{ctx}");
        assert!(
            sp.cell_types.iter().all(|&t| t == 1 || t == 2), // VTK_VERTEX, VTK_POLY_VERTEX
            "{ctx}: sphere cell types {:?}",
            sp.cell_types
        );
        assert_eq!(sp.cell_sizes, vec![1; SPHERES], "{ctx}: sphere cells");
        assert_eq!(sp.conn, (0..SPHERES).collect::<Vec<_>>(), "{ctx}");
        assert_close(&ctx, &sp.points, &read_f64(&f, "pos"), R);
        let radius = &sp.arrays["radius"];
        assert_eq!(radius.0, 1, "{ctx}: radius components");
        assert_close(&ctx, &radius.1, &read_f64(&f, "radius"), 1.5e-3);
        let vel = &sp.arrays["vel"];
        let want = read_f64(&f, "vel");
        let vmax = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        // at rest at step 0, falling after
        assert!(
            (vmax > 0.01) == (*step > 0),
            "{ctx}: the spheres fall ({vmax} m/s)"
        );
        let vmax = vmax.max(1e-3);
        assert_eq!(vel.0, 3, "{ctx}: vel components");
        assert_close(&ctx, &vel.1, &want, vmax);
        if !meshes {
            continue;
        }

        // the drum: its triangles turned by ω t about y through the origin
        let me = one("meshes");
        assert!(me.time == d.times[i], "{who}: dataset times");
        // the domain: its box, one hexahedron (VTK 12) over the file's 8 corners
        let dom = one("domain");
        assert_eq!(
            (dom.n_points, dom.n_cells, &dom.cell_types[..]),
            (8, 1, &[12u8][..])
        );
        assert_close(&ctx, &dom.points, &read_f64(&f, "domain"), R);
        assert_eq!(
            (me.n_points, me.n_cells),
            (3 * TRIANGLES, TRIANGLES),
            "{ctx}"
        );
        assert_eq!(me.cell_types, vec![5; TRIANGLES], "{ctx}: VTK_TRIANGLE");
        assert_eq!(me.cell_sizes, vec![3; TRIANGLES], "{ctx}");
        assert_eq!(me.conn, (0..3 * TRIANGLES).collect::<Vec<_>>(), "{ctx}");
        assert_eq!(me.arrays["mesh"], (1, vec![0.0; TRIANGLES]), "{ctx}");
        let th = OMEGA * *step as f64 * DT;
        let (c, s) = (th.cos(), th.sin());
        let turned: Vec<f64> = tris
            .iter()
            .flatten()
            .flat_map(|v| [v.x * c + v.z * s, v.y, -v.x * s + v.z * c])
            .collect();
        assert_close(&ctx, &me.points, &turned, R);
        // ... which is not where they started
        let start: Vec<f64> = tris
            .iter()
            .flatten()
            .flat_map(|v| [v.x, v.y, v.z])
            .collect();
        let moved = me
            .points
            .iter()
            .zip(&start)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            (moved > 100.0 * TOL * R) == (*step > 0),
            "{ctx}: the drum turned ({moved} m)"
        );
    }
}

/// Run a reader script; None (after a NOTICE) when its reader is not installed (exit 77 or no
/// such program).
fn read_with(test: &str, mut cmd: Command, install: &str) -> Option<String> {
    let o = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let prog = cmd.get_program().to_string_lossy();
            notice(&format!("{test}: SKIPPED: {prog} not found ({install})"));
            return None;
        }
        Err(e) => panic!("{cmd:?}: {e}"),
    };
    if o.status.code() == Some(77) {
        let why = String::from_utf8_lossy(&o.stdout);
        notice(&format!("{test}: SKIPPED: {} ({install})", why.trim()));
        return None;
    }
    assert!(o.status.success(), "{cmd:?}: {}", describe(&o));
    Some(String::from_utf8(o.stdout).unwrap())
}

fn script(name: &str) -> String {
    format!("{}/tests/readers/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// ParaView's XDMF readers (pvbatch), all three of its Open dialog's choices for `.xmf`.
#[test]
fn paraview_reads_drum_snapshots() {
    let (_tmp, out, tris) = run_drum("paraview_reads_drum_snapshots");
    let mut cmd = Command::new("pvbatch");
    cmd.arg(script("xdmf_paraview.py"))
        .arg(out.join("snapshots.xmf"));
    mpi_env(&mut cmd);
    no_user_site(&mut cmd);
    let install =
        "ParaView: scripts/setup.sh --peers, or apt-get install paraview python3-paraview";
    let Some(text) = read_with("paraview_reads_drum_snapshots", cmd, install) else {
        return;
    };
    let dumps = parse(&text);
    let readers: Vec<&str> = dumps.iter().map(|d| d.reader.as_str()).collect();
    assert_eq!(readers, ["Xdmf3ReaderS", "Xdmf3ReaderT", "XDMFReader"]);
    for d in &dumps {
        check(d, &out, &tris, true);
    }
}

/// The meshio reader's command for the snapshots in `out`.
fn meshio_command(out: &Path) -> Command {
    let mut cmd = python3();
    cmd.arg(script("xdmf_meshio.py"))
        .arg(out.join("snapshots.xmf"));
    cmd
}

/// meshio, grid by grid: always on (CI fails rather than skips when it is missing).
#[test]
fn meshio_reads_drum_snapshots() {
    let (_tmp, out, tris) = run_drum("meshio_reads_drum_snapshots");
    let cmd = meshio_command(&out);
    let install = "scripts/setup.sh installs python3-meshio";
    let Some(text) = read_with("meshio_reads_drum_snapshots", cmd, install) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "meshio missing in CI ({install})"
        );
        return;
    };
    let dumps = parse(&text);
    let readers: Vec<&str> = dumps.iter().map(|d| d.reader.as_str()).collect();
    assert_eq!(readers, ["meshio-series", "meshio"]);
    // its own time-series reader on snapshots.xmf: the particles at every time
    check(&dumps[0], &out, &tris, false);
    // every grid of every time, one by one
    check(&dumps[1], &out, &tris, true);
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".meshio"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 32, defect 12: the readers see the packages `scripts/setup.sh` installed, not a
/// user's own: a user-site NumPy (`pip install --user`; NumPy 2 broke Debian's meshio with
/// `np.string_`) is stood in for by one whose import fails, in a user base of this test
/// (`PYTHONUSERBASE`); the meshio reader must still read the drum.
#[test]
fn readers_ignore_the_users_site_packages() {
    let (tmp, out, tris) = run_drum("readers_ignore_the_users_site_packages");
    let base = tmp.0.join("userbase");
    let site = Command::new(PYTHON)
        .args(["-c", "import site; print(site.getusersitepackages())"])
        .env("PYTHONUSERBASE", &base)
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(site.stdout).unwrap().trim());
    assert!(site.starts_with(&base), "{}", site.display());
    std::fs::create_dir_all(site.join("numpy")).unwrap();
    std::fs::write(
        site.join("numpy/__init__.py"),
        "raise AttributeError('`np.string_` was removed in the NumPy 2.0 release (user site)')\n",
    )
    .unwrap();
    // the stand-in is what a plain interpreter imports
    let plain = Command::new(PYTHON)
        .args(["-c", "import numpy"])
        .env("PYTHONUSERBASE", &base)
        .env_remove("PYTHONNOUSERSITE")
        .output()
        .unwrap();
    assert!(
        !plain.status.success(),
        "the user-site stand-in is not imported"
    );
    let mut cmd = meshio_command(&out);
    cmd.env("PYTHONUSERBASE", &base);
    let Some(text) = read_with("readers_ignore_the_users_site_packages", cmd, "meshio") else {
        return;
    };
    let dumps = parse(&text);
    let readers: Vec<&str> = dumps.iter().map(|d| d.reader.as_str()).collect();
    assert_eq!(readers, ["meshio-series", "meshio"]);
    check(&dumps[1], &out, &tris, true);
}

/// A box of 180 spheres settling on a floor between four walls (gravity tilted towards two of
/// them), with the contact network in each snapshot (`contacts: true`): snapshots at steps 0
/// (no contact yet: left out of the contacts' collection), 3000 and 6000.
const CONTACT_BOX: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction: 0.4, density: 2600.0)],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0144, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 1.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0144, 0.0), normal: (0.0, -1.0, 0.0), material: "g"),
    ],
    spheres: [Lattice(material: "g", spacing: 2.4e-3, counts: (6, 6, 5), radius: 1e-3,
                      polydispersity: 0.1, jitter: 0.05e-3)],
    gravity: (2.0, 1.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(6000),
    domain: Domain(lo: (-0.002, -0.002, -0.002), hi: (0.0164, 0.0164, 0.02)),
    output: Output(series_every: 3000, snapshot_every: 3000, contacts: true),
)"#;

/// The contacts' grids as a reader gave them (`d`): at the times of steps 3000 and 6000 one
/// dataset each, of one 2-point line cell per contact row of the snapshot file (VTK_LINE, or
/// ParaView's VTK_POLY_LINE), whose points are the file's `ends` and whose cell array `fn` is
/// the file's (to 1e-6 of the largest). Returns the rows per time.
fn check_contacts(d: &Dump, out: &Path) -> Vec<usize> {
    let who = &d.reader;
    let steps = [0u64, 3000, 6000];
    assert_eq!(d.times.len(), 3, "{who}: times {:?}", d.times);
    let mut rows = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let at: Vec<&Grid> = d
            .grids
            .iter()
            .filter(|g| g.time_index == i && g.kind == "contacts")
            .collect();
        if *step == 0 {
            assert!(at.is_empty(), "{who}: contacts at step 0");
            continue;
        }
        assert_eq!(at.len(), 1, "{who}, step {step}: one contacts dataset");
        let g = at[0];
        let f = hdf5::File::open(out.join(format!("snapshots/snap_{step:09}.h5"))).unwrap();
        let f_n = read_f64(&f, "contacts/fn");
        let c = f_n.len();
        let ctx = format!("{who}, step {step}");
        assert!(
            c > if *step == 6000 { 50 } else { 0 },
            "{ctx}: {c} contacts"
        );
        assert_eq!((g.n_cells, g.n_points), (c, 2 * c), "{ctx}");
        assert!(
            g.cell_types.iter().all(|&t| t == 3 || t == 4),
            "{ctx}: lines"
        );
        assert_eq!(g.cell_sizes, vec![2; c], "{ctx}");
        assert_eq!(g.conn, (0..2 * c).collect::<Vec<_>>(), "{ctx}");
        assert_close(&ctx, &g.points, &read_f64(&f, "contacts/ends"), 0.02);
        let fmax = f_n.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let got = &g.arrays["fn"];
        assert_eq!(got.0, 1, "{ctx}: fn components");
        assert_close(&ctx, &got.1, &f_n, fmax);
        rows.push(c);
    }
    rows
}

/// Issue 32, acceptance 3, the readers: the contact network opens in ParaView — its three XDMF
/// readers give the contacts' lines between the centres at every time with the normal force —
/// and renders coloured by the normal force (`tests/readers/render_contacts.py`, under
/// `xvfb-run`: the colour map spans the file's `fn`), and in meshio at every time (each grid
/// by `meshio.read`; its time-series reader gives the particles). ParaView is skipped with a
/// NOTICE when absent, as above.
#[test]
fn contacts_open_in_paraview_and_meshio() {
    let tmp = TempDir::new("contacts_readers");
    std::fs::write(tmp.0.join("scene.ron"), CONTACT_BOX).unwrap();
    let o = demhpc(1, 1, &["--out", "out", "scene.ron"], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = tmp.0.join("out");
    let xmf = out.join("snapshots.xmf");

    let mut cmd = Command::new(PYTHON);
    cmd.arg(script("xdmf_meshio.py")).arg(&xmf);
    if let Some(text) = read_with(
        "contacts_meshio",
        cmd,
        "scripts/setup.sh installs python3-meshio",
    ) {
        let dumps = parse(&text);
        assert_eq!(dumps[1].reader, "meshio");
        check_contacts(&dumps[1], &out);
        // the time series: the particles at every time
        assert_eq!(dumps[0].times.len(), 3);
        assert!(dumps[0].grids.iter().all(|g| g.kind == "spheres"));
    }

    let install =
        "ParaView: scripts/setup.sh --peers, or apt-get install paraview python3-paraview";
    let mut cmd = Command::new("pvbatch");
    cmd.arg(script("xdmf_paraview.py")).arg(&xmf);
    mpi_env(&mut cmd);
    let Some(text) = read_with("contacts_paraview", cmd, install) else {
        return;
    };
    let dumps = parse(&text);
    assert_eq!(dumps.len(), 3);
    let rows: Vec<Vec<usize>> = dumps.iter().map(|d| check_contacts(d, &out)).collect();
    assert!(rows.iter().all(|r| *r == rows[0]));

    // the picture: lines coloured by fn
    let png = tmp.0.join("contacts.png");
    let mut cmd = Command::new("xvfb-run");
    cmd.args(["-a", "pvbatch"])
        .arg(script("render_contacts.py"))
        .arg(&xmf)
        .arg(&png);
    mpi_env(&mut cmd);
    let Some(text) = read_with("contacts_render", cmd, "xvfb: scripts/setup.sh --peers") else {
        return;
    };
    let f = hdf5::File::open(out.join("snapshots/snap_000006000.h5")).unwrap();
    let f_n = read_f64(&f, "contacts/fn");
    let lines = text.lines().find(|l| l.starts_with("lines ")).unwrap();
    assert_eq!(lines, format!("lines {}", f_n.len()), "{text}");
    let range: Vec<f64> = text
        .lines()
        .find(|l| l.starts_with("range "))
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let (lo, hi) = f_n
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let tol = 1e-9 * hi.abs();
    assert!(
        (range[0] - lo).abs() <= tol && (range[1] - hi).abs() <= tol,
        "colour map {range:?} vs fn [{lo}, {hi}]"
    );
    let size = std::fs::metadata(&png).unwrap().len();
    assert!(size > 5_000, "{} bytes", size);
}
