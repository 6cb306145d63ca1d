//! Helpers shared by the tests that run the `demhpc` binary (with or without `mpirun`) and
//! read its HDF5 outputs back (included with `mod support;`).
#![allow(dead_code)]

pub mod limits;
pub mod shapes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const BIN: &str = env!("CARGO_BIN_EXE_demhpc");

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(test: &str) -> Self {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "demhpc-test-{test}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn describe(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The command running demhpc on `ranks` ranks (1 = plain process, no mpirun) with `threads`
/// threads, quiet, in `cwd`.
pub fn command(ranks: usize, threads: usize, args: &[&str], cwd: &Path) -> Command {
    let t = threads.to_string();
    let mut cmd = if ranks == 1 {
        Command::new(BIN)
    } else {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-n", &ranks.to_string(), BIN]);
        c
    };
    cmd.args(["-q", "--threads", &t])
        .args(args)
        .current_dir(cwd);
    mpi_env(&mut cmd);
    cmd
}

/// Open MPI settings of scripts/env.sh (root in containers, oversubscription, idle yield),
/// and no `RUST_LOG` (errors are always printed).
pub fn mpi_env(cmd: &mut Command) -> &mut Command {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_MCA_btl_base_warn_component_unused", "0")
        .env_remove("RUST_LOG")
}

/// The Python of the packages `scripts/setup.sh` installs (Debian's h5py, NumPy, meshio), with
/// the user's site directory ignored: `-s`, and `PYTHONNOUSERSITE` for the interpreters it
/// starts. A user-site NumPy 2 (`pip install --user`) broke Debian's meshio (`np.string_`),
/// and with it the tests (issue 32).
pub fn python3() -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg("-s");
    no_user_site(&mut cmd);
    cmd
}

/// The user's site directory ignored by a program embedding Python (`pvbatch`).
pub fn no_user_site(cmd: &mut Command) -> &mut Command {
    cmd.env("PYTHONNOUSERSITE", "1")
}

/// Run demhpc to completion (see [`command`]).
pub fn demhpc(ranks: usize, threads: usize, args: &[&str], cwd: &Path) -> Output {
    command(ranks, threads, args, cwd)
        .output()
        .expect("run demhpc / mpirun")
}

/// gid-sorted particle state of a snapshot, as raw bits (pos, vel, angvel, radius, ncontacts).
#[derive(PartialEq, Debug)]
pub struct State {
    pub gid: Vec<u64>,
    pub pos: Vec<u64>,
    pub vel: Vec<u64>,
    pub angvel: Vec<u64>,
    pub radius: Vec<u64>,
    pub ncontacts: Vec<u32>,
}

pub fn read_state(file: &Path) -> State {
    let f = hdf5::File::open(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let bits = |name: &str| -> Vec<u64> {
        f.dataset(name)
            .unwrap()
            .read_raw::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    };
    State {
        gid: f.dataset("gid").unwrap().read_raw::<u64>().unwrap(),
        pos: bits("pos"),
        vel: bits("vel"),
        angvel: bits("angvel"),
        radius: bits("radius"),
        ncontacts: f.dataset("ncontacts").unwrap().read_raw::<u32>().unwrap(),
    }
}

/// FNV-1a hash of the state (printed, so two runs can be compared at a glance).
pub fn hash(s: &State) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    };
    for v in [&s.gid, &s.pos, &s.vel, &s.angvel, &s.radius] {
        v.iter().for_each(|&x| eat(x));
    }
    s.ncontacts.iter().for_each(|&x| eat(x as u64));
    h
}

/// Small settle: 8×8×8 lattice under gravity in a walled box, long enough for contacts, wall
/// contacts and rebuilds with migration across the rank grid.
pub const SETTLE: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, density: 2600.0)],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0192, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 1.0, 0.0), material: "g"),
        Wall(point: (0.0, 0.0192, 0.0), normal: (0.0, -1.0, 0.0), material: "g"),
    ],
    spheres: [Lattice(material: "g", spacing: 2.4e-3, counts: (8, 8, 8), radius: 1e-3,
                      polydispersity: 0.1, jitter: 0.05e-3, seed: 20240601)],
    gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(1),
    domain: Domain(lo: (-0.002, -0.002, -0.002), hi: (0.022, 0.022, 0.05)),
    output: Output(series_every: 100),
)"#;

/// `SETTLE` with checkpoints every `every` steps (0 = only at the end), keeping `keep`.
pub fn settle_with_checkpoints(every: u64, keep: u64) -> String {
    SETTLE.replace(
        "output: Output(series_every: 100),",
        &format!(
            "output: Output(series_every: 100, snapshot_every: 300),\n    \
             checkpoint: (every: {every}, keep: {keep}),"
        ),
    )
}

/// The LAMMPS chute (32 000 spheres sliding down a rough periodic incline, scenes/chute.ron)
/// with its data file path made absolute.
pub fn chute() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("bench/data/data.chute");
    std::fs::read_to_string(root.join("scenes/chute.ron"))
        .unwrap()
        .replace("../bench/data/data.chute", data.to_str().unwrap())
}

/// The number after the first `key` (e.g. `"\"cut_moves\""`) at or after byte `from` of a
/// `timing.json` text.
pub fn json_num(t: &str, key: &str, from: usize) -> f64 {
    let k = t[from..]
        .find(key)
        .unwrap_or_else(|| panic!("{key} in {t}"))
        + from;
    let rest = t[k + key.len()..].trim_start_matches([':', ' ', '"']);
    let end = rest.find([',', '}', '\n']).unwrap();
    rest[..end].trim().parse().unwrap()
}

/// The reproducible-mode check of the flow tests: `run(ranks, threads, out)` runs one layout
/// into directory `out` and returns its final state and series.csv; every layout must give
/// the bits of the first, which is returned.
pub fn same_bits_on_layouts(
    layouts: &[(usize, usize)],
    mut run: impl FnMut(usize, usize, &str) -> (State, String),
) -> (State, String) {
    let mut first: Option<(State, String)> = None;
    for &(r, t) in layouts {
        let (st, series) = run(r, t, &format!("o{r}_{t}"));
        eprintln!(
            "{r} × {t}: {} particles, hash {:016x}",
            st.gid.len(),
            hash(&st)
        );
        match &first {
            None => first = Some((st, series)),
            Some((s0, c0)) => {
                assert_eq!(
                    st.gid, s0.gid,
                    "{r} × {t}: other particles than on the first layout"
                );
                assert!(st == *s0, "{r} × {t}: state differs from the first layout");
                assert_eq!(
                    series, *c0,
                    "{r} × {t}: series differs from the first layout"
                );
            }
        }
    }
    first.expect("at least one layout")
}
