//! Checkpoints: one HDF5 file per checkpoint, written by all ranks together through MPI-IO
//! (each rank writes its block of every dataset at the offset of an exclusive prefix sum),
//! read back on any rank count. Layout: `docs/checkpoint-format.md`.
//!
//! Atomic: the file is written as `NAME.h5.tmp`, fsynced and renamed; the `latest` pointer (a
//! small text file holding the file name) moves only after the rename, so a crash at any
//! moment leaves the previous checkpoint and pointer intact.
//!
//! The parts, by what each is:
//! - `state.rs`: the rank's state, both ways: [`CheckpointState`] (what [`write`] takes; the
//!   simulation builds it, `Simulation::checkpoint_state`) and [`Restored`] (what
//!   [`read_local`] returns). Nothing here names the simulation.
//! - `layout.rs`: the dataset table (`LAYOUT`: path, element type, columns, in file order),
//!   the datasets of each format version, a rank's rows of each, the root attributes'
//!   helpers.
//! - `integrity.rs`: the checksums (each dataset's `crc32c`, the root attributes'
//!   `attrs_crc32c`) and the integrity block in the HDF5 user block, which checks HDF5's own
//!   metadata before HDF5 opens a file (`seal` on writing, `precheck` on reading).
//! - `write.rs`: [`write`], collective and atomic (`.tmp`, agreed steps, seal, fsync,
//!   rename), and its test hooks.
//! - `read.rs`: [`read_info`], [`verify`], [`read_local`] (through the index: the writers'
//!   blocks a rank may own), [`read_ref_pos_share`], [`check_global`], [`inspect`].
//! - `check.rs`: the bookkeeping cross-checks of the values read: [`Limits`], [`GidBook`],
//!   [`check_counts`], each particle and contact history row.
//! - here: the format's name and version, [`CheckpointInfo`] (the root attributes), the
//!   damage error, and the files of a checkpoint directory (names, `latest`, pruning).

mod check;
mod integrity;
mod layout;
mod read;
mod state;
mod write;

pub use check::{check_counts, GidBook, Limits};
pub use read::{check_global, inspect, read_info, read_local, read_ref_pos_share, verify, Wanted};
pub use state::{CheckpointState, Header, Restored};
pub use write::write;

use crate::error::{Error, Result};
use crate::V3;
use std::path::{Path, PathBuf};

/// Value of the root attribute `format`.
pub const FORMAT: &str = "demhpc-checkpoint";
/// Layout version; a reader accepts files of this version only (bumped when the layout changes).
pub const FORMAT_VERSION: u64 = 4;

/// Everything a checkpoint says about itself (root attributes).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointInfo {
    pub format_version: u64,
    pub demhpc_version: String,
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    pub reproducible: bool,
    pub n_particles: u64,
    pub n_contacts: u64,
    pub n_wall_contacts: u64,
    /// Ranks that wrote the file and their grid.
    pub ranks: u64,
    pub grid: [u64; 3],
    /// The box over which open axes were cut (see `Simulation::decomp_bbox`).
    pub bbox_lo: V3,
    pub bbox_hi: V3,
    pub need_rebuild: bool,
    pub n_rebuilds: u64,
    pub scene_text: String,
    pub scene_file: String,
    /// Engine and controller state (RON; empty when the scene has none).
    pub engines: String,
    /// The rank grid's cut planes per axis (`dims + 1` each, ±∞ at open ends; version 2): a
    /// restart on the same grid takes them (load balancing moved them), so that every rank
    /// owns what it owned and the continuation is bitwise.
    pub cuts: Option<[Vec<f64>; 3]>,
}

/// The error for a checkpoint whose contents are wrong (exit 2).
pub fn damaged(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Input(format!(
        "{}: damaged checkpoint: {what}; restart from an earlier checkpoint",
        path.display()
    ))
}

/// Point `DIR/latest` at `file` (a file name in DIR): temporary file, fsync, rename.
pub fn set_latest(dir: &Path, file: &str) -> Result<()> {
    let tmp = dir.join("latest.tmp");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{file}")?;
        f.sync_all()
    };
    write().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, dir.join("latest")).map_err(|e| Error::io(dir.join("latest"), e))
}

/// The checkpoint `DIR/latest` points to, if any.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let name = std::fs::read_to_string(dir.join("latest")).ok()?;
    let p = dir.join(name.trim());
    p.exists().then_some(p)
}

/// File name of the checkpoint at `step`.
pub fn file_name(step: u64) -> String {
    format!("ckpt_{step:010}.h5")
}

/// Delete all but the newest `keep` checkpoints in `dir` (never the one `latest` names).
pub fn prune(dir: &Path, keep: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let cur = latest(dir);
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // a `.h5.tmp` left by a crash mid-write is garbage once a later file is published
            if n.starts_with("ckpt_") && n.ends_with(".h5.tmp") {
                std::fs::remove_file(p).ok();
            }
            n.starts_with("ckpt_") && n.ends_with(".h5")
        })
        .collect();
    files.sort();
    let n = files.len();
    for p in files.into_iter().take(n.saturating_sub(keep)) {
        if Some(&p) != cur.as_ref() {
            std::fs::remove_file(&p).ok();
        }
    }
}
