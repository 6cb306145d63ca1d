//! Damaged checkpoints (issue 18, acceptance 2): a flipped byte in any dataset or in the root
//! attributes, a truncated file, and files that read but hold impossible values (a gid twice,
//! a negative radius, a contact naming a gid that is no particle) are refused on restart with
//! exit 2 naming what is wrong, on 1 and 2 ranks, before anything is written; `demhpc info`
//! reports the damage. Files of format version 1 (no checksums) still restart, bitwise.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

/// Every dataset of format version 2 (docs/checkpoint-format.md).
const DATASETS: &[&str] = &[
    "particles/gid",
    "particles/pos",
    "particles/vel",
    "particles/angvel",
    "particles/ref_pos",
    "particles/ori",
    "particles/radius",
    "particles/mass",
    "particles/inertia",
    "particles/material",
    "particles/blocked",
    "particles/wrap",
    "contacts/gid1",
    "contacts/gid2",
    "contacts/image",
    "contacts/state",
    "wall_contacts/gid",
    "wall_contacts/wall",
    "wall_contacts/state",
    "leading/gid1",
    "leading/gid2",
    "walls/point",
    "walls/normal",
    "walls/vel",
    "walls/ref_point",
    "text/scene",
    "index/rows",
    "index/ref_box",
];

/// A checkpoint of the small settle at step 6000 (a packed bed: 250 contacts), written on
/// `ranks` ranks, and the directory it lies in.
fn checkpoint(tmp: &TempDir, ranks: usize) -> PathBuf {
    std::fs::write(tmp.0.join("scene.ron"), SETTLE).unwrap();
    let out = format!("base{ranks}");
    let o = demhpc(
        ranks,
        1,
        &["--steps", "6000", "--out", &out, "scene.ron"],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    tmp.0.join(out).join("checkpoints/ckpt_0000006000.h5")
}

/// Restart from `file` on `ranks` ranks into a fresh directory; returns the output and
/// whether that directory was created.
fn restart(tmp: &TempDir, file: &Path, ranks: usize, steps: &str) -> (Output, bool) {
    let out = tmp.0.join("restarted");
    let _ = std::fs::remove_dir_all(&out);
    let args = [
        "--restart",
        file.to_str().unwrap(),
        "--steps",
        steps,
        "--out",
        out.to_str().unwrap(),
    ];
    let o = demhpc(ranks, 1, &args, &tmp.0);
    (o, out.exists())
}

fn info(file: &Path) -> Output {
    Command::new(BIN)
        .args(["info", file.to_str().unwrap()])
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The refusal a damaged file must meet: on restart exit 2 naming `what`, nothing written; and
/// `demhpc info` says DAMAGED (exit 2) naming it too.
fn refused(tmp: &TempDir, file: &Path, ranks: usize, what: &str, case: &str) {
    let (o, wrote) = restart(tmp, file, ranks, "6100");
    let err = String::from_utf8_lossy(&o.stderr);
    let ctx = format!("{case} on {ranks} rank(s): {}", describe(&o));
    assert_eq!(o.status.code(), Some(2), "exit code must be 2: {ctx}");
    assert!(err.contains(what), "the message must name `{what}`: {ctx}");
    assert!(!err.contains("panicked"), "{ctx}");
    assert!(!wrote, "output written for a damaged checkpoint: {ctx}");
    if ranks == 1 {
        let i = info(file);
        let ctx = format!("info, {case}: {}", describe(&i));
        assert_eq!(i.status.code(), Some(2), "{ctx}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&i.stdout),
            String::from_utf8_lossy(&i.stderr)
        );
        assert!(text.contains(what), "info must name `{what}`: {ctx}");
    }
}

/// File offset and size of a dataset's raw data (contiguous layout).
fn raw_extent(file: &Path, name: &str) -> Option<(u64, u64)> {
    let f = hdf5::File::open(file).unwrap();
    let d = f.dataset(name).unwrap();
    let size = d.storage_size();
    Some((d.offset()?, size)).filter(|_| size > 0)
}

fn flip(src: &Path, dst: &Path, at: u64) {
    let mut b = std::fs::read(src).unwrap();
    b[at as usize] ^= 0x5a;
    std::fs::write(dst, b).unwrap();
}

/// Acceptance 18.2: one flipped byte in the middle of each dataset's data is found by its
/// checksum (the dataset named), on restart and by `demhpc info`.
#[test]
fn a_flipped_byte_in_any_dataset_is_found() {
    let tmp = TempDir::new("corrupt-flip");
    let good = checkpoint(&tmp, 1);
    let i = info(&good);
    assert_eq!(i.status.code(), Some(0), "{}", describe(&i));
    let bad = tmp.0.join("bad.h5");
    let mut n = 0;
    for name in DATASETS {
        let (off, size) = raw_extent(&good, name)
            .unwrap_or_else(|| panic!("{name}: no data to damage in the test checkpoint"));
        flip(&good, &bad, off + size / 2);
        refused(
            &tmp,
            &bad,
            1,
            &format!("dataset {name} fails its checksum"),
            name,
        );
        n += 1;
    }
    assert_eq!(n, DATASETS.len());
    // and on 2 ranks (each rank verifies a share of every dataset), for a few
    for name in ["particles/gid", "contacts/state", "walls/point"] {
        let (off, size) = raw_extent(&good, name).unwrap();
        flip(&good, &bad, off + size - 1);
        refused(
            &tmp,
            &bad,
            2,
            &format!("dataset {name} fails its checksum"),
            name,
        );
    }
}

/// A changed root attribute (a letter of the stored scene file's name) fails the checksum of
/// HDF5's metadata (the integrity block, checked before HDF5 reads the file); a changed digit
/// of the stored scene (the seed) fails `text/scene`'s.
#[test]
fn a_damaged_root_attribute_is_found() {
    let tmp = TempDir::new("corrupt-attr");
    let good = checkpoint(&tmp, 1);
    let bytes = std::fs::read(&good).unwrap();
    let bad = tmp.0.join("bad.h5");
    for (needle, k, to, what) in [
        (
            &b"scene.ron"[..],
            7,
            b'p',
            "HDF5's metadata fails its checksum",
        ),
        (
            &b"20240601"[..],
            7,
            b'7',
            "dataset text/scene fails its checksum",
        ),
    ] {
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("the text in the file");
        let mut b = bytes.clone();
        b[at + k] = to;
        std::fs::write(&bad, b).unwrap();
        refused(&tmp, &bad, 1, what, what);
        refused(&tmp, &bad, 2, what, what);
    }
}

/// A truncated file (a copy cut short) is refused as unreadable.
#[test]
fn a_truncated_file_is_refused() {
    let tmp = TempDir::new("corrupt-trunc");
    let good = checkpoint(&tmp, 1);
    let b = std::fs::read(&good).unwrap();
    let bad = tmp.0.join("bad.h5");
    for frac in [0.5, 0.9, 0.999] {
        std::fs::write(&bad, &b[..(b.len() as f64 * frac) as usize]).unwrap();
        refused(&tmp, &bad, 1, "checkpoint", &format!("truncated to {frac}"));
    }
}

/// Rewrite a dataset with `edit` applied and its checksum recomputed, as a tool or a buggy
/// writer would: the file reads, and only the checks of its values can find the damage.
fn rewrite<T: hdf5::H5Type + Copy>(src: &Path, dst: &Path, name: &str, edit: impl Fn(&mut [T])) {
    std::fs::copy(src, dst).unwrap();
    let f = hdf5::File::open_rw(dst).unwrap();
    let d = f.dataset(name).unwrap();
    let mut v = d.read_raw::<T>().unwrap();
    edit(&mut v);
    d.write_raw(&v).unwrap();
    // SAFETY: plain numbers, viewed as their bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(&v[..]))
    };
    d.attr("crc32c")
        .unwrap()
        .write_scalar(&crc32c::crc32c(bytes))
        .unwrap();
    drop(d);
    drop(f);
    reseal(dst);
}

/// Recompute the integrity block of a file changed in place (docs/checkpoint-format.md
/// "Integrity block"), as a tool that rewrites a checkpoint on purpose would.
fn reseal(path: &Path) {
    let mut b = std::fs::read(path).unwrap();
    let u64_at = |b: &[u8], k: usize| u64::from_le_bytes(b[k..k + 8].try_into().unwrap());
    let n = u32::from_le_bytes(b[20..24].try_into().unwrap()) as usize;
    let ranges: Vec<(u64, u64)> = (0..n)
        .map(|k| (u64_at(&b, 48 + 16 * k), u64_at(&b, 56 + 16 * k)))
        .collect();
    let (mut crc, mut len, mut at) = (0u32, 0u64, 4096u64);
    let file_len = b.len() as u64;
    for (s, e) in ranges
        .iter()
        .map(|&(o, l)| (o, o + l))
        .chain([(file_len, file_len)])
    {
        if s > at {
            let piece = &b[at as usize..s as usize];
            crc = crc32c::crc32c_append(crc, piece);
            len += piece.len() as u64;
        }
        at = at.max(e);
    }
    b[24..32].copy_from_slice(&file_len.to_le_bytes());
    b[32..40].copy_from_slice(&len.to_le_bytes());
    b[40..44].copy_from_slice(&crc.to_le_bytes());
    let end = 48 + 16 * n;
    let c = crc32c::crc32c(&b[..end]);
    b[end..end + 4].copy_from_slice(&c.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

/// Acceptance 18.2: files with valid checksums but impossible contents — a duplicate gid, a
/// negative radius, a contact naming a gid that is no particle, a NaN velocity, a wall index
/// out of range — refused naming the dataset, on 1 and 2 ranks (a duplicate may be owned by
/// two ranks: the distributed census finds it).
#[test]
fn impossible_values_are_refused() {
    let tmp = TempDir::new("corrupt-values");
    let good = checkpoint(&tmp, 1);
    let bad = tmp.0.join("bad.h5");
    // the particle farthest in x from particle row 0 gets its gid (so on 2 ranks cut along x
    // the two copies lie on different ranks)
    let f = hdf5::File::open(&good).unwrap();
    let pos = f
        .dataset("particles/ref_pos")
        .unwrap()
        .read_raw::<f64>()
        .unwrap();
    let far = (0..pos.len() / 3)
        .max_by(|&a, &b| {
            (pos[3 * a] - pos[0])
                .abs()
                .total_cmp(&(pos[3 * b] - pos[0]).abs())
        })
        .unwrap();
    drop(f);
    type Case = (&'static str, Box<dyn Fn(&Path, &Path)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "duplicate gid",
            Box::new(move |s, d| rewrite::<u64>(s, d, "particles/gid", |v| v[far] = v[0])),
            "appears twice",
        ),
        (
            "negative radius",
            Box::new(|s, d| rewrite::<f64>(s, d, "particles/radius", |v| v[7] = -v[7])),
            "particles/radius",
        ),
        (
            "gid out of range",
            Box::new(|s, d| rewrite::<u64>(s, d, "particles/gid", |v| v[3] = 1_000_000_000_000)),
            "particles/gid",
        ),
        (
            "contact naming no particle",
            Box::new(|s, d| rewrite::<u64>(s, d, "contacts/gid2", |v| v[0] = 100_000)),
            "contacts/gid1, gid2",
        ),
        (
            "NaN velocity",
            Box::new(|s, d| rewrite::<f64>(s, d, "particles/vel", |v| v[10] = f64::NAN)),
            "particles/vel",
        ),
        (
            "wall index",
            Box::new(|s, d| rewrite::<u64>(s, d, "wall_contacts/wall", |v| v[0] = 9)),
            "wall_contacts/wall",
        ),
    ];
    for (case, make, what) in &cases {
        make(&good, &bad);
        for ranks in [1, 2] {
            refused(&tmp, &bad, ranks, what, case);
        }
    }
}

/// Format version 1 (written before checksums; tests/data/README.md): still restarts, says it
/// cannot verify, and continues bitwise like an uninterrupted run of the same scene.
#[test]
fn version_1_files_still_restart_bitwise() {
    let tmp = TempDir::new("corrupt-v1");
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ckpt_v1_settle512.h5");
    let i = info(&v1);
    assert_eq!(i.status.code(), Some(0), "{}", describe(&i));
    assert!(String::from_utf8_lossy(&i.stdout).contains("version 1"));
    let f = hdf5::File::open(&v1).unwrap();
    let text = f
        .attr("scene_text")
        .unwrap()
        .read_scalar::<hdf5::types::VarLenUnicode>()
        .unwrap()
        .to_string();
    std::fs::write(tmp.0.join("scene.ron"), text).unwrap();
    let args = ["--steps", "6300", "--out", "ref", "scene.ron"];
    let o = demhpc(1, 1, &args, &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = tmp.0.join("cont");
    let args = [
        "--restart",
        v1.to_str().unwrap(),
        "--steps",
        "6300",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = demhpc(1, 1, &args, &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no checksums"),
        "a version-1 restart says it cannot verify: {}",
        describe(&o)
    );
    let snap = |d: &Path| d.join("snapshots/snap_000006300.h5");
    let (a, b) = (
        read_state(&snap(&tmp.0.join("ref"))),
        read_state(&snap(&out)),
    );
    assert!(
        a == b,
        "restart from the version-1 file differs from the uninterrupted run"
    );
}

/// The format as documented: an independent reader (h5py and a plain-Python CRC-32C,
/// scripts/check_checkpoint.py) verifies a file written on 2 ranks, and finds a flipped byte.
#[test]
fn the_checksums_verify_with_h5py() {
    let tmp = TempDir::new("corrupt-py");
    let good = checkpoint(&tmp, 2);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_checkpoint.py");
    let run = |f: &Path| {
        python3()
            .arg(&script)
            .arg(f)
            .output()
            .expect("python3 with h5py (scripts/setup.sh)")
    };
    let o = run(&good);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        34, // 32 datasets (index/, particles/tag and the rolling histories included), the
        // root attributes, the integrity block
        "{text}"
    );
    let bad = tmp.0.join("bad.h5");
    let (off, size) = raw_extent(&good, "contacts/state").unwrap();
    flip(&good, &bad, off + size / 3);
    let o = run(&bad);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("BAD contacts/state"));
}

/// A version-1 file (no checksums) whose stored scene no longer parses: the error names the
/// checkpoint's copy of the scene, not the original file (which may be fine).
#[test]
fn a_bad_stored_scene_is_blamed_on_the_checkpoint() {
    let tmp = TempDir::new("corrupt-scene");
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ckpt_v1_settle512.h5");
    let bad = tmp.0.join("bad.h5");
    std::fs::copy(&v1, &bad).unwrap();
    {
        let f = hdf5::File::open_rw(&bad).unwrap();
        let text = f
            .attr("scene_text")
            .unwrap()
            .read_scalar::<hdf5::types::VarLenUnicode>()
            .unwrap()
            .to_string()
            .replace("damping: 0.3", "damping: 0.3 0.3");
        f.delete_attr("scene_text").unwrap();
        let v: hdf5::types::VarLenUnicode = text.parse().unwrap();
        f.new_attr::<hdf5::types::VarLenUnicode>()
            .create("scene_text")
            .unwrap()
            .write_scalar(&v)
            .unwrap();
    }
    let (o, wrote) = restart(&tmp, &bad, 1, "6100");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(!wrote);
    let want = format!("{} (the scene stored in it, from ", bad.display());
    assert!(
        err.contains(&want),
        "the error must name the checkpoint: {err}"
    );
}

/// The checkpoint reader against random damage anywhere in the file — HDF5's own metadata
/// too, which HDF5 1.10 does not check and crashes on (a segfault decoding an attribute, a
/// huge allocation from a damaged shape: both found by this test before the integrity block):
/// 400 seeded single-bit flips, half of them in the first 8 kB where the integrity block,
/// HDF5's superblock and object headers lie. Every one must be refused by `demhpc info`
/// (exit 2, "damaged"), within seconds; none may crash or hang.
#[test]
fn random_bit_flips_never_crash_the_reader() {
    let tmp = TempDir::new("corrupt-fuzz");
    let good = checkpoint(&tmp, 1);
    let src = std::fs::read(&good).unwrap();
    let bad = tmp.0.join("bad.h5");
    let mut rng: u64 = 0x5eed_2026_1124;
    let mut next = || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for k in 0..400 {
        let span = if k % 2 == 0 {
            8192.min(src.len())
        } else {
            src.len()
        };
        let at = (next() % span as u64) as usize;
        let bit = next() % 8;
        let mut b = src.clone();
        b[at] ^= 1 << bit;
        std::fs::write(&bad, &b).unwrap();
        let t = std::time::Instant::now();
        let o = info(&bad);
        let ctx = format!("flip of bit {bit} at byte {at}: {}", describe(&o));
        assert!(t.elapsed().as_secs() < 10, "slow: {ctx}");
        assert_eq!(o.status.code(), Some(2), "must be refused: {ctx}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("damaged checkpoint"),
            "{ctx}"
        );
    }
}

/// 27 lattice spheres settling on a floor, an inlet filling 60 spheres above them and an outlet
/// (x > 45 mm) removing a column of them and some of the new ones: 300 steps, a checkpoint
/// at the end with wall contacts, inlet gids (27 + k) and outlet deletions (issue 32).
const FLOW: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e6, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g")],
    spheres: [Lattice(material: "g", spacing: 0.02, counts: (3, 3, 3), radius: 0.004,
                      origin: (0.0, 0.0, -0.005999), seed: 1)],
    gravity: (0.0, 0.0, -9.81), damping: 0.5,
    dt: Fixed(1e-5), skin: 0.001, run: Steps(300),
    domain: Domain(lo: (-0.01, -0.01, -0.01), hi: (0.08, 0.08, 0.15)),
    output: Output(series_every: 100),
    inlets: [Inlet(name: "top", region: Box(lo: (0.0, 0.0, 0.07), hi: (0.06, 0.06, 0.13)),
                   material: "g", psd: Uniform(0.006, 0.008), rate: Fill(60), every: 10, seed: 3)],
    outlets: [Outlet(name: "side", region: HalfSpace(point: (0.045, 0.0, 0.0), normal: (1.0, 0.0, 0.0)),
                     every: 100)],
)"#;

/// The checkpoint of [`FLOW`] at step 300, written on one rank.
fn flow_checkpoint(tmp: &TempDir) -> PathBuf {
    std::fs::write(tmp.0.join("flow.ron"), FLOW).unwrap();
    let o = demhpc(1, 1, &["--out", "flow", "flow.ron"], &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    tmp.0.join("flow/checkpoints/ckpt_0000000300.h5")
}

/// The engine text of a checkpoint (`text/engines`).
fn engines_text(file: &Path) -> String {
    let f = hdf5::File::open(file).unwrap();
    let b = f.dataset("text/engines").unwrap().read_raw::<u8>().unwrap();
    String::from_utf8(b).unwrap()
}

/// Issue 32, defect 1: `demhpc info` bounds the gids as a restart does (the initial spheres,
/// then each inlet's range), so a good checkpoint of a run with an inlet is no longer called
/// damaged; and the restart continues from it.
#[test]
fn info_accepts_a_checkpoint_of_a_run_with_an_inlet() {
    let tmp = TempDir::new("corrupt-info-inlet");
    let good = flow_checkpoint(&tmp);
    let gids = hdf5::File::open(&good)
        .unwrap()
        .dataset("particles/gid")
        .unwrap()
        .read_raw::<u64>()
        .unwrap();
    assert!(gids.iter().any(|&g| g >= 27), "no inlet gid in the file");
    let i = info(&good);
    assert_eq!(i.status.code(), Some(0), "{}", describe(&i));
    assert!(
        String::from_utf8_lossy(&i.stdout).contains("integrity       ok"),
        "{}",
        describe(&i)
    );
    let (o, _) = restart(&tmp, &good, 1, "310");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

/// Issue 32, defect 2: checkpoints whose checksums were recomputed after an edit (a forged or
/// hand-repaired file) but whose bookkeeping does not add up are refused (exit 2, naming the
/// dataset) on restart on 1 and 2 ranks and by `demhpc info`: an inlet's counter lowered
/// below the gids it issued (the restart would issue them again), counters raised or lowered
/// so that initial + inserted − removed is not the particles present, a gid of 2⁴⁰ + 5
/// (inside the inlet's range, beyond its counter), a wall contact of a gid that is no
/// particle, and a sphere contact of two gids that are no particles (dropped unread before).
#[test]
fn forged_bookkeeping_is_refused() {
    let tmp = TempDir::new("corrupt-bookkeeping");
    let good = flow_checkpoint(&tmp);
    let text = engines_text(&good);
    // the counters as written: inlet `top` issued 60, outlet `side` removed 19
    for needle in ["(\"top\",60,", "(\"side\",19,"] {
        assert!(text.contains(needle), "{needle} not in {text}");
    }
    let bad = tmp.0.join("bad.h5");
    // same-length edits of the engine text, every checksum recomputed: the dataset's, the
    // root attributes' (which cover the text too) and the integrity block
    let edit_text = |edits: &'static [(&'static str, &'static str)]| {
        move |s: &Path, d: &Path| {
            let mut info = demhpc::io::checkpoint::read_info(s).unwrap();
            for (from, to) in edits {
                assert_eq!(from.len(), to.len());
                info.engines = info.engines.replacen(from, to, 1);
            }
            let text = info.engines.clone();
            rewrite::<u8>(s, d, "text/engines", |v| v.copy_from_slice(text.as_bytes()));
            let f = hdf5::File::open_rw(d).unwrap();
            f.attr("attrs_crc32c")
                .unwrap()
                .write_scalar(&info.digest())
                .unwrap();
            drop(f);
            reseal(d);
        }
    };
    type Case = (&'static str, Box<dyn Fn(&Path, &Path)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "inlet counter lowered (60 → 11)",
            Box::new(edit_text(&[("(\"top\",60,", "(\"top\",11,")])),
            "text/engines",
        ),
        (
            "inlet counter raised (60 → 99)",
            Box::new(edit_text(&[("(\"top\",60,", "(\"top\",99,")])),
            "text/engines",
        ),
        (
            "outlet counter lowered (19 → 18)",
            Box::new(edit_text(&[("(\"side\",19,", "(\"side\",18,")])),
            "text/engines",
        ),
        (
            "both lowered by one: the counts add up, the last inlet gid is beyond the counter",
            Box::new(edit_text(&[
                ("(\"top\",60,", "(\"top\",59,"),
                ("(\"side\",19,", "(\"side\",18,"),
            ])),
            "particles/gid",
        ),
        (
            "gid 2^40 + 5",
            Box::new(|s, d| rewrite::<u64>(s, d, "particles/gid", |v| v[2] = (1 << 40) + 5)),
            "particles/gid",
        ),
        (
            "wall contact of gid 1e9",
            Box::new(|s, d| rewrite::<u64>(s, d, "wall_contacts/gid", |v| v[0] = 1_000_000_000)),
            "wall_contacts/gid",
        ),
    ];
    for (case, make, what) in &cases {
        make(&good, &bad);
        for ranks in [1, 2] {
            refused(&tmp, &bad, ranks, what, case);
        }
    }
    // a sphere contact of two gids that are no particles, in the settle's checkpoint (which
    // has sphere contacts)
    let settle = checkpoint(&tmp, 1);
    rewrite::<u64>(&settle, &bad, "contacts/gid1", |v| v[0] = 100_000);
    let bad2 = tmp.0.join("bad2.h5");
    rewrite::<u64>(&bad, &bad2, "contacts/gid2", |v| v[0] = 100_001);
    for ranks in [1, 2] {
        refused(
            &tmp,
            &bad2,
            ranks,
            "contacts/gid1, gid2",
            "contact of two absent gids",
        );
    }
}
