//! Writing: all ranks together through MPI-IO, each its block of every dataset at the offset
//! of an exclusive prefix sum. Atomic: the file is written as `NAME.h5.tmp` in agreed steps,
//! closed, sealed (the integrity block), fsynced and renamed ([`publish`]); the caller moves
//! `latest` only after that. Test hooks choose an older format version ([`write_version`])
//! or kill the process half-way ([`fault_kill`]).

use super::integrity::{seal, ATTRS_CRC_ATTR, CRC_ATTR, USERBLOCK};
use super::layout::{
    attr, attr_str, attr_vec, layout_of, rows_of, Rows, FIRST_CONTACT_DATASET, GROUPS, LAYOUT,
};
use super::{CheckpointInfo, CheckpointState, Header, FORMAT, FORMAT_VERSION};
use crate::contact::store::ContactState;
use crate::domain::comm::Comm;
use crate::error::{Error, Result};
use crate::io::checksum;
use crate::io::h5par::{trim_and_sync, write_rows, ParFile};
use hdf5::{File, H5Type};
use std::path::Path;

/// Write the checkpoint of `state` to `path` (collective: every rank of `comm` calls it with
/// its own state).
///
/// The file is written as `NAME.h5.tmp` in agreed steps ([`ParFile`]): an I/O error on any
/// rank (a full disk, a quota) stops every rank at the same dataset, the partial file is
/// closed by all and removed, and the error — the path and the OS error of the lowest failing
/// rank — is returned on every rank; `latest` still names the last good checkpoint.
pub fn write(
    state: &CheckpointState,
    comm: &Comm,
    scene_text: &str,
    scene_file: &str,
    path: &Path,
) -> Result<()> {
    let t0 = std::time::Instant::now();
    let at = Placement::of(state, comm);
    let mut info = info_of_state(&state.header, comm, scene_text, scene_file, at.tots);
    info.format_version = write_version();
    let texts = [info.scene_text.as_str(), info.engines.as_str()];
    let mut rows = rows_of(state, &at.index_rows, texts, comm.is_root());
    rows.truncate(layout_of(info.format_version).count());
    let crcs = checksum::join(comm, &rows.iter().map(Rows::piece).collect::<Vec<_>>());
    let tmp = path.with_extension("h5.tmp");
    let hint = 2 * (scene_text.len() + info.engines.len()) as u64;
    let w = ParFile::create(comm, &tmp, hint, USERBLOCK)?;
    let extent = |k: usize| at.extent(k, &info, state.n_walls, comm);
    let written = write_datasets(&w, &info, &rows, &crcs, extent);
    let t_data = t0.elapsed().as_secs_f64();
    let data_ranges = match written {
        Ok(r) => {
            w.close()?;
            r
        }
        Err(e) => {
            w.abandon();
            return Err(e);
        }
    };
    // each rank's share (`-v`): a slow rank shows here, not in rank 0's total
    log::debug!(
        "rank {}: checkpoint {} at step {}: {} particle, {} contact, {} wall-contact rows; \
         written in {t_data:.3} s, closed after {:.3} s",
        comm.rank(),
        path.display(),
        info.step,
        at.counts[0],
        at.counts[1],
        at.counts[2],
        t0.elapsed().as_secs_f64()
    );
    let published = if comm.is_root() {
        seal(&tmp, data_ranges).and_then(|()| publish(&tmp, path))
    } else {
        Ok(())
    };
    comm.agree(published)
}

/// Where this rank's rows go in the file (collective: prefix sums and totals over the ranks).
struct Placement {
    /// This rank's rows of particles, contacts and wall contacts.
    counts: [u64; 3],
    /// Its first row of each (exclusive prefix sums).
    offs: [u64; 3],
    /// Every rank's rows of each.
    tots: [u64; 3],
    /// Leading pairs: every rank's rows, this rank's first.
    lead: (u64, u64),
    /// This rank's row of `index/rows`: (first row, rows) of its block of particles,
    /// contacts, wall contacts and leading pairs.
    index_rows: Vec<u64>,
}

impl Placement {
    fn of(s: &CheckpointState, comm: &Comm) -> Self {
        let counts = [s.gid.len(), s.c_gid1.len(), s.w_gid.len()].map(|c| c as u64);
        let offs = counts.map(|c| comm.exscan_u64(c));
        let tots = counts.map(|c| comm.sum_u64(c));
        let n_lead = s.lead_gid1.len() as u64;
        let lead = (comm.sum_u64(n_lead), comm.exscan_u64(n_lead));
        let index_rows = vec![
            offs[0], counts[0], offs[1], counts[1], offs[2], counts[2], lead.1, n_lead,
        ];
        Placement {
            counts,
            offs,
            tots,
            lead,
            index_rows,
        }
    }

    /// Dataset `k` of [`LAYOUT`]: (rows in the file, this rank's first row, columns).
    fn extent(&self, k: usize, info: &CheckpointInfo, n_walls: u64, comm: &Comm) -> Extent {
        let (name, _, cols) = LAYOUT[k];
        let (total, offset) = match name.split('/').next() {
            Some("particles") => (self.tots[0], self.offs[0]),
            Some("contacts") => (self.tots[1], self.offs[1]),
            Some("wall_contacts") => (self.tots[2], self.offs[2]),
            Some("leading") => self.lead,
            Some("index") => (comm.size() as u64, comm.rank() as u64),
            _ if name == "text/scene" => (info.scene_text.len() as u64, 0),
            _ if name == "text/engines" => (info.engines.len() as u64, 0),
            _ => (n_walls, 0),
        };
        (total, offset, cols)
    }
}

/// A dataset's rows in the file, this rank's first row and its columns.
type Extent = (u64, u64, usize);

/// The root attributes describing `h` on the ranks of `comm`, with `tots` rows of particles,
/// contacts and wall contacts (every rank computes the same).
fn info_of_state(
    h: &Header,
    comm: &Comm,
    scene_text: &str,
    scene_file: &str,
    tots: [u64; 3],
) -> CheckpointInfo {
    CheckpointInfo {
        format_version: FORMAT_VERSION,
        demhpc_version: env!("CARGO_PKG_VERSION").to_string(),
        step: h.step,
        time: h.time,
        dt: h.dt,
        reproducible: h.reproducible,
        n_particles: tots[0],
        n_contacts: tots[1],
        n_wall_contacts: tots[2],
        ranks: comm.size() as u64,
        grid: h.grid,
        bbox_lo: h.bbox_lo,
        bbox_hi: h.bbox_hi,
        need_rebuild: h.need_rebuild,
        n_rebuilds: h.n_rebuilds,
        scene_text: scene_text.to_string(),
        scene_file: scene_file.to_string(),
        engines: h.engines.clone(),
        cuts: Some(h.cuts.clone()),
    }
}

/// The root attributes, the groups and every dataset of `rows` (with its checksum from
/// `crcs`, placed by `extent`), each in an agreed step of `w`. Returns where the datasets'
/// data lie in the file (offset, bytes), for the integrity block.
fn write_datasets(
    w: &ParFile,
    info: &CheckpointInfo,
    rows: &[Rows],
    crcs: &[u32],
    extent: impl Fn(usize) -> Extent,
) -> Result<Vec<(u64, u64)>> {
    let collective = w.collective();
    w.step(|f| {
        write_root_attrs(f, info)?;
        for g in GROUPS {
            f.create_group(g)?;
        }
        Ok(())
    })?;
    let mut data_ranges = Vec::new();
    for (k, r) in rows.iter().enumerate() {
        if k == FIRST_CONTACT_DATASET {
            fault_kill(info.step);
        }
        let (name, e, crc) = (LAYOUT[k].0, extent(k), crcs[k]);
        let at = w.step(|f| match r {
            Rows::U8(v) => dataset(f, name, e, v, crc, collective),
            Rows::U16(v) => dataset(f, name, e, v, crc, collective),
            Rows::U64(v) => dataset(f, name, e, v, crc, collective),
            Rows::I32(v) => dataset(f, name, e, v, crc, collective),
            Rows::F64(v) => dataset(f, name, e, v, crc, collective),
        })?;
        data_ranges.extend(at);
    }
    Ok(data_ranges)
}

/// Create dataset `name` with `total` rows of `cols` (1 = a 1-D dataset), its `crc32c`
/// attribute, and write this rank's block at `offset` (collective over the file's ranks).
/// Returns where its data lies in the file (offset, bytes; `None` when it has none).
fn dataset<T: H5Type>(
    f: &File,
    name: &str,
    (total, offset, cols): (u64, u64, usize),
    data: &[T],
    crc: u32,
    collective: bool,
) -> hdf5::Result<Option<(u64, u64)>> {
    let b = f.new_dataset::<T>();
    let ds = if cols == 1 {
        b.shape([total as usize]).create(name)?
    } else {
        b.shape([total as usize, cols]).create(name)?
    };
    attr(&ds, CRC_ATTR, crc)?;
    write_rows(&ds, offset as usize, cols, data, collective)?;
    let bytes = total * cols as u64 * std::mem::size_of::<T>() as u64;
    Ok(ds.offset().filter(|_| bytes > 0).map(|o| (o, bytes)))
}

/// Test hook: `DEMHPC_TEST_CHECKPOINT_FORMAT=2` writes a version-2 file (no `particles/tag`),
/// as demhpc did before tags, so that tests/suite/checkpoint.rs can restart from one.
fn write_version() -> u64 {
    match std::env::var("DEMHPC_TEST_CHECKPOINT_FORMAT").as_deref() {
        Ok("2") => 2,
        Ok("3") => 3,
        _ => FORMAT_VERSION,
    }
}

/// Test hook: `DEMHPC_FAULT_KILL_IN_CHECKPOINT=STEP` makes the process SIGKILL itself half-way
/// through writing the checkpoint of that step (particles written, contacts not), as the OOM
/// killer or `scancel --signal=KILL` would. tests/suite/checkpoint.rs uses it to show that a crash
/// mid-write leaves the previous checkpoint and `latest` intact.
fn fault_kill(step: u64) {
    let hit = std::env::var("DEMHPC_FAULT_KILL_IN_CHECKPOINT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        == Some(step);
    if hit {
        // SAFETY: raise() is async-signal-safe and only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

fn write_root_attrs(f: &File, i: &CheckpointInfo) -> hdf5::Result<()> {
    attr_str(f, "format", FORMAT)?;
    attr(f, "format_version", i.format_version)?;
    attr_str(f, "demhpc_version", &i.demhpc_version)?;
    attr(f, "step", i.step)?;
    attr(f, "time", i.time)?;
    attr(f, "dt", i.dt)?;
    attr(f, "reproducible", i.reproducible as u8)?;
    attr(f, "n_particles", i.n_particles)?;
    attr(f, "n_contacts", i.n_contacts)?;
    attr(f, "n_wall_contacts", i.n_wall_contacts)?;
    attr(f, "contact_state_len", ContactState::N_F64 as u64)?;
    attr(f, "ranks", i.ranks)?;
    attr_vec(f, "grid", &i.grid)?;
    attr_vec(f, "decomp_bbox_lo", i.bbox_lo.as_slice())?;
    attr_vec(f, "decomp_bbox_hi", i.bbox_hi.as_slice())?;
    attr(f, "need_rebuild", i.need_rebuild as u8)?;
    attr(f, "n_rebuilds", i.n_rebuilds)?;
    if let Some(c) = &i.cuts {
        attr_vec(f, "decomp_cuts_x", &c[0])?;
        attr_vec(f, "decomp_cuts_y", &c[1])?;
        attr_vec(f, "decomp_cuts_z", &c[2])?;
    }
    attr_str(f, "scene_file", &i.scene_file)?;
    attr(f, ATTRS_CRC_ATTR, i.digest())?;
    Ok(())
}

/// fsync the temporary file, rename it, fsync the directory (rank 0).
fn publish(tmp: &Path, path: &Path) -> Result<()> {
    trim_and_sync(tmp)?;
    std::fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            d.sync_all().ok();
        }
    }
    Ok(())
}
