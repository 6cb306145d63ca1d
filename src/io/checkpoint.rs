//! Checkpoints: one HDF5 file per checkpoint, written by all ranks together through MPI-IO
//! (each rank writes its block of every dataset at the offset of an exclusive prefix sum),
//! read back on any rank count. Layout: `docs/checkpoint-format.md`.
//!
//! Atomic: the file is written as `NAME.h5.tmp`, fsynced and renamed; the `latest` pointer (a
//! small text file holding the file name) moves only after the rename, so a crash at any
//! moment leaves the previous checkpoint and pointer intact.

use super::checksum::{self, Piece};
use super::h5par::{read_rows, read_str_attr, write_rows, write_str_attr, ParFile};
use crate::contact::store::ContactState;
use crate::domain::comm::Comm;
use crate::error::{Error, Result};
use crate::particles::Particles;
use crate::sim::{Restored, Simulation};
use crate::{Quat, V3};
use hdf5::{File, H5Type};
use std::path::{Path, PathBuf};

/// Value of the root attribute `format`.
pub const FORMAT: &str = "demhpc-checkpoint";
/// Layout version; a reader accepts files of this version only (bumped when the layout changes).
pub const FORMAT_VERSION: u64 = 4;

/// The particles' tags, since format version 3 (an older file reads as tag 0 everywhere).
const TAG_DATASET: &str = "particles/tag";
/// The contacts' rolling-moment histories (EPSD), since format version 4 (an older file reads
/// as zero: it was written by a demhpc without the model).
const ROLL_DATASETS: [&str; 2] = ["contacts/roll", "wall_contacts/roll"];
/// Rows read per block on restart (bounds the memory of a rank scanning the file).
const READ_BLOCK: usize = 1 << 18;

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

// ---------------------------------------------------------------------------------- writing

/// This rank's rows of every dataset.
#[derive(Default)]
struct Local {
    gid: Vec<u64>,
    pos: Vec<f64>,
    vel: Vec<f64>,
    angvel: Vec<f64>,
    ori: Vec<f64>,
    radius: Vec<f64>,
    mass: Vec<f64>,
    inertia: Vec<f64>,
    material: Vec<u16>,
    blocked: Vec<u8>,
    wrap: Vec<i32>,
    tag: Vec<u16>,
    ref_pos: Vec<f64>,
    c_gid1: Vec<u64>,
    c_gid2: Vec<u64>,
    c_image: Vec<i32>,
    c_state: Vec<f64>,
    c_roll: Vec<f64>,
    w_gid: Vec<u64>,
    w_wall: Vec<u64>,
    w_state: Vec<f64>,
    w_roll: Vec<f64>,
    lead_gid1: Vec<u64>,
    lead_gid2: Vec<u64>,
    /// This rank's row of `index/rows`: (first row, rows) of its block of particles,
    /// contacts, wall contacts and leading pairs.
    index_rows: Vec<u64>,
    /// This rank's row of `index/ref_box`: the bounding box (lo, hi) of its `ref_pos` rows
    /// (+∞, −∞ when it has none).
    index_box: Vec<f64>,
}

fn collect(sim: &Simulation) -> Local {
    let ps = &sim.ps;
    let n = ps.n_owned;
    let mut l = Local::default();
    let flat = |v: &[V3]| -> Vec<f64> { v.iter().flat_map(|x| [x.x, x.y, x.z]).collect() };
    l.gid = ps.gid[..n].to_vec();
    l.pos = flat(&ps.pos[..n]);
    l.vel = flat(&ps.vel[..n]);
    l.angvel = flat(&ps.angvel[..n]);
    l.ori = ps.ori[..n]
        .iter()
        .flat_map(|q| [q.w, q.i, q.j, q.k])
        .collect();
    l.radius = ps.radius[..n].to_vec();
    l.mass = ps.mass[..n].to_vec();
    l.inertia = ps.inertia[..n].to_vec();
    l.material = ps.material[..n].to_vec();
    l.blocked = ps.blocked[..n].to_vec();
    l.wrap = ps.wrap[..n].iter().flatten().copied().collect();
    l.tag = ps.tag[..n].to_vec();
    l.ref_pos = flat(sim.reference());
    // Every contact once: the copy whose particle 1 is owned here.
    let pl = &sim.pairs;
    for k in 0..pl.len() {
        let (i, j) = (pl.i[k] as usize, pl.j[k] as usize);
        if pl.active[k] && i < n {
            l.c_gid1.push(pl.key[k].0);
            l.c_gid2.push(pl.key[k].1);
            for a in 0..3 {
                l.c_image.push(ps.image[j][a] - ps.image[i][a]);
            }
            let st = pl.record(k);
            st.pack(&mut l.c_state);
            l.c_roll.extend_from_slice(st.roll.as_slice());
        }
        if pl.leading[k] && i < n {
            l.lead_gid1.push(pl.key[k].0);
            l.lead_gid2.push(pl.key[k].1);
        }
    }
    let wl = &sim.wall_pairs;
    for k in 0..wl.len() {
        if wl.active[k] && (wl.i[k] as usize) < n {
            l.w_gid.push(wl.key[k].0);
            l.w_wall.push(wl.key[k].1);
            let st = wl.record(k);
            st.pack(&mut l.w_state);
            l.w_roll.extend_from_slice(st.roll.as_slice());
        }
    }
    l
}

fn attr_str(f: &File, name: &str, v: &str) -> hdf5::Result<()> {
    write_str_attr(f, name, v)
}

fn attr<T: H5Type>(loc: &hdf5::Location, name: &str, v: T) -> hdf5::Result<()> {
    loc.new_attr::<T>().create(name)?.write_scalar(&v)
}

fn attr_vec<T: H5Type>(f: &File, name: &str, v: &[T]) -> hdf5::Result<()> {
    f.new_attr::<T>()
        .shape([v.len()])
        .create(name)?
        .write_raw(v)
}

/// Element type of a dataset.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    U8,
    U16,
    U64,
    I32,
    F64,
}

/// Every dataset of the file: (path, element type, columns). Its group's row count is
/// [`CheckpointInfo::rows`]. The writer, the checksum verifier and `docs/checkpoint-format.md`
/// follow this order.
const LAYOUT: &[(&str, Kind, usize)] = &[
    ("particles/gid", Kind::U64, 1),
    ("particles/pos", Kind::F64, 3),
    ("particles/vel", Kind::F64, 3),
    ("particles/angvel", Kind::F64, 3),
    ("particles/ref_pos", Kind::F64, 3),
    ("particles/ori", Kind::F64, 4),
    ("particles/radius", Kind::F64, 1),
    ("particles/mass", Kind::F64, 1),
    ("particles/inertia", Kind::F64, 1),
    ("particles/material", Kind::U16, 1),
    ("particles/blocked", Kind::U8, 1),
    ("particles/wrap", Kind::I32, 3),
    ("contacts/gid1", Kind::U64, 1),
    ("contacts/gid2", Kind::U64, 1),
    ("contacts/image", Kind::I32, 3),
    ("contacts/state", Kind::F64, ContactState::N_F64),
    ("wall_contacts/gid", Kind::U64, 1),
    ("wall_contacts/wall", Kind::U64, 1),
    ("wall_contacts/state", Kind::F64, ContactState::N_F64),
    ("leading/gid1", Kind::U64, 1),
    ("leading/gid2", Kind::U64, 1),
    ("walls/point", Kind::F64, 3),
    ("walls/normal", Kind::F64, 3),
    ("walls/vel", Kind::F64, 3),
    ("walls/ref_point", Kind::F64, 3),
    ("text/scene", Kind::U8, 1),
    ("text/engines", Kind::U8, 1),
    ("index/rows", Kind::U64, 8),
    ("index/ref_box", Kind::F64, 6),
    // version 3: last, so that the datasets of version 2 keep their positions
    (TAG_DATASET, Kind::U16, 1),
    // version 4
    (ROLL_DATASETS[0], Kind::F64, 3),
    (ROLL_DATASETS[1], Kind::F64, 3),
];

/// The datasets a file of format `version` has (every one of [`LAYOUT`] but those added later).
fn layout_of(version: u64) -> impl Iterator<Item = &'static (&'static str, Kind, usize)> {
    LAYOUT
        .iter()
        .filter(move |(name, _, _)| version >= 3 || *name != TAG_DATASET)
        .filter(move |(name, _, _)| version >= 4 || !ROLL_DATASETS.contains(name))
}

/// This rank's rows of one dataset.
enum Rows<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U64(&'a [u64]),
    I32(&'a [i32]),
    F64(&'a [f64]),
}

impl Rows<'_> {
    fn piece(&self) -> Piece {
        match self {
            Rows::U8(v) => Piece::of(v),
            Rows::U16(v) => Piece::of(v),
            Rows::U64(v) => Piece::of(v),
            Rows::I32(v) => Piece::of(v),
            Rows::F64(v) => Piece::of(v),
        }
    }
}

/// The rows of every dataset this rank writes, in [`LAYOUT`] order (walls and texts: rank 0's
/// only).
fn rows_of<'a>(
    l: &'a Local,
    walls: &'a [Vec<f64>; 4],
    texts: [&'a str; 2],
    root: bool,
) -> Vec<Rows<'a>> {
    let w = |k: usize| Rows::F64(if root { &walls[k] } else { &[] });
    let t = |k: usize| Rows::U8(if root { texts[k].as_bytes() } else { &[] });
    vec![
        Rows::U64(&l.gid),
        Rows::F64(&l.pos),
        Rows::F64(&l.vel),
        Rows::F64(&l.angvel),
        Rows::F64(&l.ref_pos),
        Rows::F64(&l.ori),
        Rows::F64(&l.radius),
        Rows::F64(&l.mass),
        Rows::F64(&l.inertia),
        Rows::U16(&l.material),
        Rows::U8(&l.blocked),
        Rows::I32(&l.wrap),
        Rows::U64(&l.c_gid1),
        Rows::U64(&l.c_gid2),
        Rows::I32(&l.c_image),
        Rows::F64(&l.c_state),
        Rows::U64(&l.w_gid),
        Rows::U64(&l.w_wall),
        Rows::F64(&l.w_state),
        Rows::U64(&l.lead_gid1),
        Rows::U64(&l.lead_gid2),
        w(0),
        w(1),
        w(2),
        w(3),
        t(0),
        t(1),
        Rows::U64(&l.index_rows),
        Rows::F64(&l.index_box),
        Rows::U16(&l.tag),
        Rows::F64(&l.c_roll),
        Rows::F64(&l.w_roll),
    ]
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

// ------------------------------------------------------------------------- integrity block

/// Bytes reserved at the start of a checkpoint for its integrity block (an HDF5 user block:
/// HDF5 starts the file after it and never reads it).
const USERBLOCK: u64 = 4096;
/// First bytes of the integrity block.
const MAGIC: &[u8; 16] = b"demhpc-integrity";
/// Most data ranges the block can list.
const MAX_RANGES: usize = (USERBLOCK as usize - 52) / 16;

/// The integrity block protects what the datasets' checksums cannot: HDF5's own metadata
/// (superblock, object headers, attributes, B-trees, heaps). HDF5 1.10 does not check it and
/// crashes on some damage to it (a segfault decoding an attribute message, a huge allocation
/// from a damaged shape: found by flipping bits, tests/corrupt.rs), so every byte of the file
/// outside the datasets' raw data is checksummed here and verified with plain reads *before*
/// HDF5 opens the file. Layout (little-endian): magic (16 bytes), version u32 = 1, number n of
/// data ranges u32, file length u64, metadata bytes u64, metadata CRC-32C u32, 0u32, then n ×
/// (offset u64, length u64) of the datasets' raw data in file order, then the CRC-32C of all
/// the preceding bytes of the block, then zeros to the end of the block (checked: no byte of
/// the file goes unchecked). The metadata CRC covers `[USERBLOCK, file length)` minus
/// the data ranges, in file order.
struct Integrity {
    file_len: u64,
    meta_len: u64,
    meta_crc: u32,
    ranges: Vec<(u64, u64)>,
}

impl Integrity {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(USERBLOCK as usize);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(self.ranges.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.file_len.to_le_bytes());
        b.extend_from_slice(&self.meta_len.to_le_bytes());
        b.extend_from_slice(&self.meta_crc.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for &(o, l) in &self.ranges {
            b.extend_from_slice(&o.to_le_bytes());
            b.extend_from_slice(&l.to_le_bytes());
        }
        let c = crc32c::crc32c(&b);
        b.extend_from_slice(&c.to_le_bytes());
        b.resize(USERBLOCK as usize, 0);
        b
    }

    /// The block in `b` (the file's first bytes): `Ok(None)` without the magic (a file of
    /// format version 1, or not a checkpoint); `Err` if the block itself is damaged.
    fn decode(b: &[u8]) -> std::result::Result<Option<Integrity>, String> {
        if b.len() < USERBLOCK as usize || &b[..16] != MAGIC {
            return Ok(None);
        }
        let u32_at = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
        let u64_at = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().unwrap());
        let n = u32_at(20) as usize;
        if u32_at(16) != 1 || n > MAX_RANGES {
            return Err("the integrity block is damaged (version or range count)".into());
        }
        let end = 48 + 16 * n;
        if crc32c::crc32c(&b[..end]) != u32_at(end) || b[end + 4..].iter().any(|&x| x != 0) {
            return Err("the integrity block fails its checksum".into());
        }
        Ok(Some(Integrity {
            file_len: u64_at(24),
            meta_len: u64_at(32),
            meta_crc: u32_at(40),
            ranges: (0..n)
                .map(|k| (u64_at(48 + 16 * k), u64_at(56 + 16 * k)))
                .collect(),
        }))
    }
}

/// CRC piece and byte count of `[USERBLOCK, file_len)` minus `ranges` (sorted, disjoint),
/// read with plain file reads.
fn metadata_crc(
    f: &mut std::fs::File,
    file_len: u64,
    ranges: &[(u64, u64)],
) -> std::io::Result<Piece> {
    use std::io::{Read, Seek, SeekFrom};
    let mut p = Piece::default();
    let mut at = USERBLOCK;
    let mut buf = Vec::new();
    let gaps = ranges
        .iter()
        .map(|&(o, l)| (o, o + l))
        .chain(std::iter::once((file_len, file_len)));
    for (start, end) in gaps {
        if start > at {
            buf.resize((start - at) as usize, 0);
            f.seek(SeekFrom::Start(at))?;
            f.read_exact(&mut buf)?;
            p.append(&buf);
        }
        at = at.max(end);
    }
    Ok(p)
}

/// Rank 0, after the close: checksum the metadata of the finished file and write the
/// integrity block into its user block.
fn seal(tmp: &Path, mut ranges: Vec<(u64, u64)>) -> Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    ranges.sort_unstable();
    if ranges.len() > MAX_RANGES {
        return Err(Error::io(tmp, "too many datasets for the integrity block"));
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(tmp)
        .map_err(|e| Error::io(tmp, e))?;
    let file_len = f.metadata().map_err(|e| Error::io(tmp, e))?.len();
    if ranges
        .iter()
        .any(|&(o, l)| o < USERBLOCK || o + l > file_len)
    {
        return Err(Error::io(
            tmp,
            "a dataset lies outside the file (HDF5 offsets)",
        ));
    }
    let p = metadata_crc(&mut f, file_len, &ranges).map_err(|e| Error::io(tmp, e))?;
    let block = Integrity {
        file_len,
        meta_len: p.len,
        meta_crc: p.crc,
        ranges,
    }
    .encode();
    f.seek(SeekFrom::Start(0))
        .and_then(|_| f.write_all(&block))
        .map_err(|e| Error::io(tmp, e))
}

/// Verify the integrity block of `path` before HDF5 reads it: `Ok(true)` when the metadata
/// checks, `Ok(false)` when the file has no block (format version 1, or not a checkpoint:
/// HDF5 judges), an input error naming the damage otherwise.
fn precheck(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut head = vec![0u8; USERBLOCK.min(len) as usize];
    f.read_exact(&mut head)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    let Some(b) = Integrity::decode(&head).map_err(|m| damaged(path, m))? else {
        return Ok(false);
    };
    if b.file_len != len {
        return Err(damaged(
            path,
            format!(
                "the file is {len} bytes, it was written with {} (truncated or appended to)",
                b.file_len
            ),
        ));
    }
    let p = metadata_crc(&mut f, len, &b.ranges)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    if p.len != b.meta_len || p.crc != b.meta_crc {
        return Err(damaged(
            path,
            format!(
                "HDF5's metadata fails its checksum (stored {:#010x}, computed {:#010x})",
                b.meta_crc, p.crc
            ),
        ));
    }
    Ok(true)
}

/// Name of the checksum attribute of every dataset (format version 2).
const CRC_ATTR: &str = "crc32c";
/// Name of the root attribute holding the checksum of the other root attributes.
const ATTRS_CRC_ATTR: &str = "attrs_crc32c";

/// The root attributes describing the current state (every rank computes the same).
fn info_of_sim(
    sim: &Simulation,
    scene_text: &str,
    scene_file: &str,
    tots: [u64; 3],
) -> CheckpointInfo {
    CheckpointInfo {
        format_version: FORMAT_VERSION,
        demhpc_version: env!("CARGO_PKG_VERSION").to_string(),
        step: sim.step,
        time: sim.time,
        dt: sim.dt,
        reproducible: sim.reproducible,
        n_particles: tots[0],
        n_contacts: tots[1],
        n_wall_contacts: tots[2],
        ranks: sim.comm.size() as u64,
        grid: sim.dec.dims.map(|d| d as u64),
        bbox_lo: sim.decomp_bbox.0,
        bbox_hi: sim.decomp_bbox.1,
        need_rebuild: sim.need_rebuild(),
        n_rebuilds: sim.n_rebuilds,
        scene_text: scene_text.to_string(),
        scene_file: scene_file.to_string(),
        engines: sim.engine_state(),
        cuts: Some(sim.dec.cuts.clone()),
    }
}

/// Write the checkpoint of the current state to `path` (collective: every rank calls it).
///
/// The file is written as `NAME.h5.tmp` in agreed steps ([`ParFile`]): an I/O error on any
/// rank (a full disk, a quota) stops every rank at the same dataset, the partial file is
/// closed by all and removed, and the error — the path and the OS error of the lowest failing
/// rank — is returned on every rank; `latest` still names the last good checkpoint.
pub fn write(sim: &Simulation, scene_text: &str, scene_file: &str, path: &Path) -> Result<()> {
    let comm = &sim.comm;
    let t0 = std::time::Instant::now();
    let mut l = collect(sim);
    let counts = [l.gid.len(), l.c_gid1.len(), l.w_gid.len()].map(|c| c as u64);
    let offs = counts.map(|c| comm.exscan_u64(c));
    let tots = counts.map(|c| comm.sum_u64(c));
    let n_lead = l.lead_gid1.len() as u64;
    let lead = (comm.sum_u64(n_lead), comm.exscan_u64(n_lead));
    l.index_rows = vec![
        offs[0], counts[0], offs[1], counts[1], offs[2], counts[2], lead.1, n_lead,
    ];
    let (lo, hi) = sim.reference().iter().fold(
        (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY)),
        |(lo, hi), x| (lo.inf(x), hi.sup(x)),
    );
    l.index_box = [lo.as_slice(), hi.as_slice()].concat();
    let mut info = info_of_sim(sim, scene_text, scene_file, tots);
    info.format_version = write_version();
    let walls = wall_rows(sim);
    let mut rows = rows_of(
        &l,
        &walls,
        [&info.scene_text, &info.engines],
        comm.is_root(),
    );
    rows.truncate(layout_of(info.format_version).count());
    let crcs = checksum::join(comm, &rows.iter().map(Rows::piece).collect::<Vec<_>>());
    let n_walls = sim.walls.len() as u64;
    let extent = |k: usize| -> (u64, u64, usize) {
        let (name, _, cols) = LAYOUT[k];
        let (total, offset) = match name.split('/').next() {
            Some("particles") => (tots[0], offs[0]),
            Some("contacts") => (tots[1], offs[1]),
            Some("wall_contacts") => (tots[2], offs[2]),
            Some("leading") => lead,
            Some("index") => (comm.size() as u64, comm.rank() as u64),
            _ if name == "text/scene" => (info.scene_text.len() as u64, 0),
            _ if name == "text/engines" => (info.engines.len() as u64, 0),
            _ => (n_walls, 0),
        };
        (total, offset, cols)
    };
    let tmp = path.with_extension("h5.tmp");
    let hint = 2 * (scene_text.len() + info.engines.len()) as u64;
    let w = ParFile::create(comm, &tmp, hint, USERBLOCK)?;
    let collective = w.collective();
    let mut data_ranges = Vec::new();
    let written = (|| -> Result<()> {
        w.step(|f| {
            write_root_attrs(f, &info)?;
            for g in [
                "particles",
                "contacts",
                "wall_contacts",
                "leading",
                "walls",
                "text",
                "index",
            ] {
                f.create_group(g)?;
            }
            Ok(())
        })?;
        for (k, r) in rows.iter().enumerate() {
            if k == 12 {
                fault_kill(sim.step);
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
        Ok(())
    })();
    let t_data = t0.elapsed().as_secs_f64();
    match written {
        Ok(()) => w.close()?,
        Err(e) => {
            w.abandon();
            return Err(e);
        }
    }
    // each rank's share (`-v`): a slow rank shows here, not in rank 0's total
    log::debug!(
        "rank {}: checkpoint {} at step {}: {} particle, {} contact, {} wall-contact rows; \
         collected and written in {t_data:.3} s, closed after {:.3} s",
        comm.rank(),
        path.display(),
        sim.step,
        counts[0],
        counts[1],
        counts[2],
        t0.elapsed().as_secs_f64()
    );
    let published = if comm.is_root() {
        seal(&tmp, data_ranges).and_then(|()| publish(&tmp, path))
    } else {
        Ok(())
    };
    comm.agree(published)
}

/// Test hook: `DEMHPC_TEST_CHECKPOINT_FORMAT=2` writes a version-2 file (no `particles/tag`),
/// as demhpc did before tags, so that tests/checkpoint.rs can restart from one.
fn write_version() -> u64 {
    match std::env::var("DEMHPC_TEST_CHECKPOINT_FORMAT").as_deref() {
        Ok("2") => 2,
        Ok("3") => 3,
        _ => FORMAT_VERSION,
    }
}

/// Test hook: `DEMHPC_FAULT_KILL_IN_CHECKPOINT=STEP` makes the process SIGKILL itself half-way
/// through writing the checkpoint of that step (particles written, contacts not), as the OOM
/// killer or `scancel --signal=KILL` would. tests/checkpoint.rs uses it to show that a crash
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

/// Walls (replicated on every rank: written by rank 0's block only): point, normal (a
/// plane's; another shape's direction, `Wall::direction`), vel, ref_point as flat rows.
fn wall_rows(sim: &Simulation) -> [Vec<f64>; 4] {
    let flat =
        |v: &mut dyn Iterator<Item = V3>| -> Vec<f64> { v.flat_map(|x| [x.x, x.y, x.z]).collect() };
    let w = &sim.walls;
    [
        flat(&mut w.iter().map(|w| w.point)),
        flat(&mut w.iter().map(|w| w.direction())),
        flat(&mut w.iter().map(|w| w.vel)),
        flat(&mut sim.wall_reference().iter().copied()),
    ]
}

/// fsync the temporary file, rename it, fsync the directory (rank 0).
fn publish(tmp: &Path, path: &Path) -> Result<()> {
    super::h5par::trim_and_sync(tmp)?;
    std::fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            d.sync_all().ok();
        }
    }
    Ok(())
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

// ---------------------------------------------------------------------------------- reading

/// Turn any HDF5 failure while reading into a clear input error naming the file.
fn bad(path: &Path) -> impl Fn(hdf5::Error) -> Error + '_ {
    move |e| {
        Error::Input(format!(
            "{}: not a readable demhpc checkpoint ({e})",
            path.display()
        ))
    }
}

/// What is wrong with a file being read: HDF5 could not read it, or it reads but holds
/// impossible values (damage, or a file that is not what it claims).
enum Fault {
    H5(hdf5::Error),
    Damaged(String),
    /// Not the file's fault (a stop signal while reading it).
    Other(Error),
}

impl From<hdf5::Error> for Fault {
    fn from(e: hdf5::Error) -> Self {
        Fault::H5(e)
    }
}

impl Fault {
    fn into_error(self, path: &Path) -> Error {
        match self {
            Fault::H5(e) => bad(path)(e),
            Fault::Damaged(m) => damaged(path, m),
            Fault::Other(e) => e,
        }
    }
}

/// The error for a checkpoint whose contents are wrong (exit 2).
pub fn damaged(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Input(format!(
        "{}: damaged checkpoint: {what}; restart from an earlier checkpoint",
        path.display()
    ))
}

fn get_str(f: &File, name: &str) -> hdf5::Result<String> {
    read_str_attr(f, name)
}

/// Longest text dataset read (the scene file limit is 16 MiB; a damaged shape must not size
/// an allocation).
const MAX_TEXT: usize = 64 << 20;

/// A text of format version 2 (`text/scene`, `text/engines`: UTF-8 bytes), checked against
/// its own checksum before use.
fn get_text(f: &File, name: &str) -> std::result::Result<String, Fault> {
    let d = f.dataset(name)?;
    let n = d.shape().first().copied().unwrap_or(0);
    if d.ndim() != 1 || n > MAX_TEXT {
        return Err(Fault::Damaged(format!(
            "dataset {name}: shape {:?}",
            d.shape()
        )));
    }
    let b = read_rows::<u8>(&d, 0, n, 1)?;
    let stored = d.attr(CRC_ATTR)?.read_scalar::<u32>()?;
    let computed = Piece::of(&b).crc;
    if stored != computed {
        return Err(Fault::Damaged(format!(
            "dataset {name} fails its checksum (stored {stored:#010x}, computed {computed:#010x})"
        )));
    }
    String::from_utf8(b).map_err(|_| Fault::Damaged(format!("dataset {name}: not UTF-8")))
}

fn get<T: H5Type>(f: &File, name: &str) -> hdf5::Result<T> {
    f.attr(name)?.read_scalar::<T>()
}

fn get3(f: &File, name: &str) -> hdf5::Result<V3> {
    let v = f.attr(name)?.read_raw::<f64>()?;
    if v.len() != 3 {
        return Err(format!("attribute {name} must have 3 values").into());
    }
    Ok(V3::new(v[0], v[1], v[2]))
}

fn open(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::Input(format!("{}: cannot read checkpoint: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Error::Input(format!("{}: not a file", path.display())));
    }
    let sealed = precheck(path)?;
    let f = File::open(path).map_err(bad(path))?;
    // A file of version 2 always carries the block: without it, HDF5's metadata is unchecked.
    if !sealed && get::<u64>(&f, "format_version").is_ok_and(|v| v >= 2) {
        return Err(damaged(path, "the integrity block is missing"));
    }
    Ok(f)
}

impl CheckpointInfo {
    /// CRC-32C of the root attributes, the value of `attrs_crc32c` (format version 2): every
    /// attribute but `format` and the checksum itself, in the order of
    /// `docs/checkpoint-format.md`, each as its name, a NUL byte, its length in bytes (u64)
    /// and its value (numbers little-endian, strings UTF-8).
    pub fn digest(&self) -> u32 {
        let mut b: Vec<u8> = Vec::new();
        let mut put = |name: &str, v: &[u8]| {
            b.extend_from_slice(name.as_bytes());
            b.push(0);
            b.extend_from_slice(&(v.len() as u64).to_le_bytes());
            b.extend_from_slice(v);
        };
        let f3 = |v: &V3| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        put("format_version", &self.format_version.to_le_bytes());
        put("demhpc_version", self.demhpc_version.as_bytes());
        put("step", &self.step.to_le_bytes());
        put("time", &self.time.to_le_bytes());
        put("dt", &self.dt.to_le_bytes());
        put("reproducible", &[self.reproducible as u8]);
        put("n_particles", &self.n_particles.to_le_bytes());
        put("n_contacts", &self.n_contacts.to_le_bytes());
        put("n_wall_contacts", &self.n_wall_contacts.to_le_bytes());
        put(
            "contact_state_len",
            &(ContactState::N_F64 as u64).to_le_bytes(),
        );
        put("ranks", &self.ranks.to_le_bytes());
        let grid: Vec<u8> = self.grid.iter().flat_map(|g| g.to_le_bytes()).collect();
        put("grid", &grid);
        put("decomp_bbox_lo", &f3(&self.bbox_lo));
        put("decomp_bbox_hi", &f3(&self.bbox_hi));
        put("need_rebuild", &[self.need_rebuild as u8]);
        put("n_rebuilds", &self.n_rebuilds.to_le_bytes());
        put("scene_text", self.scene_text.as_bytes());
        put("scene_file", self.scene_file.as_bytes());
        put("engines", self.engines.as_bytes());
        if let Some(c) = &self.cuts {
            for (a, name) in ["decomp_cuts_x", "decomp_cuts_y", "decomp_cuts_z"]
                .iter()
                .enumerate()
            {
                let b: Vec<u8> = c[a].iter().flat_map(|x| x.to_le_bytes()).collect();
                put(name, &b);
            }
        }
        crc32c::crc32c(&b)
    }

    /// Rows of a dataset's group (the walls and `leading` are sized by the file).
    fn rows(&self, f: &File, name: &str) -> hdf5::Result<u64> {
        Ok(match name.split('/').next() {
            Some("particles") => self.n_particles,
            Some("contacts") => self.n_contacts,
            Some("wall_contacts") => self.n_wall_contacts,
            Some("index") => self.ranks,
            _ => f.dataset(name)?.shape().first().copied().unwrap_or(0) as u64,
        })
    }

    /// The values no writer produces (checked before any of them sizes or drives anything).
    fn implausible(&self) -> Option<String> {
        let finite3 = |v: &V3| v.iter().all(|x| x.is_finite());
        if !(self.time.is_finite() && self.time >= 0.0) {
            return Some(format!("attribute time = {}", self.time));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Some(format!("attribute dt = {}", self.dt));
        }
        if self.grid.iter().product::<u64>() != self.ranks || self.ranks == 0 {
            return Some(format!(
                "attribute grid {:?} does not match ranks = {}",
                self.grid, self.ranks
            ));
        }
        if !finite3(&self.bbox_lo) || !finite3(&self.bbox_hi) {
            return Some("attributes decomp_bbox_lo/hi are not finite".into());
        }
        if let Some(c) = &self.cuts {
            let ok = (0..3).all(|a| {
                c[a].len() as u64 == self.grid[a] + 1
                    && c[a].windows(2).all(|w| w[0] < w[1])
                    && c[a].iter().all(|x| !x.is_nan())
            });
            if !ok {
                return Some(format!(
                    "attributes decomp_cuts_x/y/z {c:?} do not fit the grid"
                ));
            }
        }
        None
    }
}

/// Read the root attributes (cheap: no datasets) and check their checksum (format version 2)
/// and plausibility.
pub fn read_info(path: &Path) -> Result<CheckpointInfo> {
    let f = open(path)?;
    info_of(&f).map_err(|e| e.into_error(path))
}

fn info_of(f: &File) -> std::result::Result<CheckpointInfo, Fault> {
    let format = get_str(f, "format").map_err(|_| hdf5::Error::from("no `format` attribute"))?;
    if format != FORMAT {
        return Err(hdf5::Error::from(format!("format is `{format}`, expected `{FORMAT}`")).into());
    }
    let version: u64 = get(f, "format_version")?;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(hdf5::Error::from(format!(
            "format version {version}; this demhpc reads versions 1 to {FORMAT_VERSION}"
        ))
        .into());
    }
    let s: u64 = get(f, "contact_state_len")?;
    if s != ContactState::N_F64 as u64 {
        return Err(hdf5::Error::from(format!(
            "contact state has {s} values per contact; this demhpc stores {}",
            ContactState::N_F64
        ))
        .into());
    }
    let grid = f.attr("grid")?.read_raw::<u64>()?;
    let i = CheckpointInfo {
        format_version: version,
        demhpc_version: get_str(f, "demhpc_version")?,
        step: get(f, "step")?,
        time: get(f, "time")?,
        dt: get(f, "dt")?,
        reproducible: get::<u8>(f, "reproducible")? != 0,
        n_particles: get(f, "n_particles")?,
        n_contacts: get(f, "n_contacts")?,
        n_wall_contacts: get(f, "n_wall_contacts")?,
        ranks: get(f, "ranks")?,
        grid: [
            *grid.first().unwrap_or(&0),
            *grid.get(1).unwrap_or(&0),
            *grid.get(2).unwrap_or(&0),
        ],
        bbox_lo: get3(f, "decomp_bbox_lo")?,
        bbox_hi: get3(f, "decomp_bbox_hi")?,
        need_rebuild: get::<u8>(f, "need_rebuild")? != 0,
        n_rebuilds: get(f, "n_rebuilds")?,
        cuts: match version {
            1 => None,
            _ => Some([
                f.attr("decomp_cuts_x")?.read_raw::<f64>()?,
                f.attr("decomp_cuts_y")?.read_raw::<f64>()?,
                f.attr("decomp_cuts_z")?.read_raw::<f64>()?,
            ]),
        },
        scene_text: match version {
            1 => get_str(f, "scene_text")?,
            _ => get_text(f, "text/scene")?,
        },
        scene_file: get_str(f, "scene_file")?,
        engines: match version {
            1 => get_str(f, "engines")?,
            _ => get_text(f, "text/engines")?,
        },
    };
    if version >= 2 {
        let stored: u32 = get(f, ATTRS_CRC_ATTR)?;
        let computed = i.digest();
        if stored != computed {
            return Err(Fault::Damaged(format!(
                "the root attributes fail their checksum (stored {stored:#010x}, computed \
                 {computed:#010x})"
            )));
        }
    }
    if let Some(m) = i.implausible() {
        return Err(Fault::Damaged(m));
    }
    Ok(i)
}

/// CRC piece of rows `a..b` of a dataset, read in blocks.
fn piece_of(f: &File, name: &str, kind: Kind, cols: usize, a: u64, b: u64) -> hdf5::Result<Piece> {
    let d = f.dataset(name)?;
    let mut p = Piece::default();
    let mut off = a as usize;
    while off < b as usize {
        let rows = READ_BLOCK.min(b as usize - off);
        match kind {
            Kind::U8 => p.append(&read_rows::<u8>(&d, off, rows, cols)?),
            Kind::U16 => p.append(&read_rows::<u16>(&d, off, rows, cols)?),
            Kind::U64 => p.append(&read_rows::<u64>(&d, off, rows, cols)?),
            Kind::I32 => p.append(&read_rows::<i32>(&d, off, rows, cols)?),
            Kind::F64 => p.append(&read_rows::<f64>(&d, off, rows, cols)?),
        }
        off += rows;
    }
    Ok(p)
}

/// Verify the checksum of every dataset (collective over `comm`: each rank reads an equal
/// share of every dataset's rows, O(file / ranks) per rank, and the pieces are joined in rank
/// order). A file of format version 1 has no checksums: returns `Ok(false)`, nothing verified.
/// A mismatch is a [`damaged`] error naming the dataset, on every rank.
pub fn verify(path: &Path, info: &CheckpointInfo, comm: &Comm) -> Result<bool> {
    if info.format_version < 2 {
        return Ok(false);
    }
    let (r, p) = (comm.rank() as u128, comm.size() as u128);
    let local = (|| -> std::result::Result<(Vec<Piece>, Vec<u32>), Fault> {
        let f = open(path).map_err(Fault::Other)?;
        let mut pieces = Vec::with_capacity(LAYOUT.len());
        let mut stored = Vec::with_capacity(LAYOUT.len());
        for &(name, kind, cols) in layout_of(info.format_version) {
            let n = info.rows(&f, name)? as u128;
            ds(&f, name, n as u64, cols)?;
            let (a, b) = ((r * n / p) as u64, ((r + 1) * n / p) as u64);
            pieces.push(piece_of(&f, name, kind, cols, a, b)?);
            stored.push(f.dataset(name)?.attr(CRC_ATTR)?.read_scalar::<u32>()?);
        }
        Ok((pieces, stored))
    })()
    .map_err(|e| e.into_error(path));
    let (pieces, stored) = comm.agree(local)?;
    let computed = checksum::join(comm, &pieces);
    for (k, &(name, _, _)) in layout_of(info.format_version).enumerate() {
        if computed[k] != stored[k] {
            return Err(damaged(
                path,
                format!(
                    "dataset {name} fails its checksum (stored {:#010x}, computed {:#010x})",
                    stored[k], computed[k]
                ),
            ));
        }
    }
    Ok(true)
}

fn ds(f: &File, name: &str, rows: u64, cols: usize) -> hdf5::Result<hdf5::Dataset> {
    let d = f.dataset(name)?;
    let shape = d.shape();
    let want: Vec<usize> = if cols == 1 {
        vec![rows as usize]
    } else {
        vec![rows as usize, cols]
    };
    if shape != want {
        return Err(format!("dataset {name} has shape {shape:?}, expected {want:?}").into());
    }
    Ok(d)
}

fn v3(v: &[f64], k: usize) -> V3 {
    V3::new(v[3 * k], v[3 * k + 1], v[3 * k + 2])
}

/// What the scene allows in a checkpoint of it: gids below `max_gid`, material indices below
/// `n_materials`, `n_walls` plane walls, wall-contact indices below `n_walls + n_facets` (mesh
/// facets are wall contacts too, `contact::facet`), and, where the engine text was read, the
/// gids its counters say exist (`book`).
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_gid: u64,
    pub n_materials: usize,
    pub n_walls: usize,
    pub n_facets: usize,
    pub book: Option<GidBook>,
}

/// The particles' bookkeeping of a checkpoint: the scene's initial spheres have gids
/// 0..`initial`; inlet i (scene order) issued the gids initial + i·2⁴⁰ + 0..issued
/// (`engines::inlet::GID_STRIDE`; its counter in `text/engines`); the outlets removed
/// `removed` particles. So every gid is one of those, and the file holds initial + Σ issued −
/// removed particles: a forged counter (lowered, the restart would issue gids again; raised)
/// or a gid outside every range shows.
#[derive(Clone, Debug, Default)]
pub struct GidBook {
    pub initial: u64,
    /// Per inlet: its name and the spheres it issued.
    pub inlets: Vec<(String, u64)>,
    pub removed: u64,
}

impl GidBook {
    /// Is `g` a gid the counters account for? `Err` says why not.
    fn check(&self, g: u64) -> std::result::Result<(), String> {
        if g < self.initial {
            return Ok(());
        }
        let stride = crate::engines::inlet::GID_STRIDE;
        let (i, k) = ((g - self.initial) / stride, (g - self.initial) % stride);
        match self.inlets.get(i as usize) {
            Some((_, issued)) if k < *issued => Ok(()),
            Some((name, issued)) => Err(format!(
                "gid {g} would be sphere {k} of inlet `{name}`, which issued {issued} (its \
                 counter in text/engines)"
            )),
            None => Err(format!(
                "gid {g} is neither one of the scene's {} spheres nor an inlet's ({} inlets)",
                self.initial,
                self.inlets.len()
            )),
        }
    }

    /// initial + Σ issued − removed, `None` when the counters cannot be (negative, overflow).
    fn present(&self) -> Option<u64> {
        let issued = (self.inlets.iter()).try_fold(0u64, |s, (_, n)| s.checked_add(*n))?;
        self.initial.checked_add(issued)?.checked_sub(self.removed)
    }
}

impl Limits {
    /// The limits a checkpoint of `scene` whose engine text is `engines` must keep: the same
    /// for a restart and for `demhpc info` (gids below the initial spheres' count plus each
    /// inlet's range, the materials, walls and facets of the scene, the counters of the
    /// engine text). `Err`: the engine text does not parse or does not fit the scene (damage,
    /// naming `text/engines`).
    pub fn of(scene: &crate::scene::Scene, engines: &str) -> std::result::Result<Self, String> {
        let n_inlets = scene.n_inlets();
        let (inlets, removed) = crate::sim::flow_counters(engines)
            .map_err(|e| format!("text/engines: {e}"))?
            .unwrap_or_default();
        if inlets.len() as u64 != n_inlets {
            return Err(format!(
                "text/engines: counters of {} inlets, the scene has {n_inlets}",
                inlets.len()
            ));
        }
        Ok(Limits {
            // the initial gids, then each inlet's range (`engines::inlet::GID_STRIDE`)
            max_gid: scene.summary.n + n_inlets * crate::engines::inlet::GID_STRIDE,
            n_materials: scene.materials.len(),
            n_walls: scene.walls.len(),
            n_facets: scene.meshes.iter().map(|m| m.body.len()).sum(),
            book: Some(GidBook {
                initial: scene.summary.n,
                inlets,
                removed,
            }),
        })
    }

    /// The gid `g` of a particle row is possible: below `max_gid` and, with the engines'
    /// counters, one they issued.
    fn check_gid(&self, g: u64) -> std::result::Result<(), String> {
        if g >= self.max_gid {
            return Err(format!(
                "gid {g} ≥ {} (the scene's particles and its inlets' ranges)",
                self.max_gid
            ));
        }
        match &self.book {
            Some(b) => b.check(g),
            None => Ok(()),
        }
    }
}

/// The particle count the engines' counters give (`GidBook`) against the file's, before
/// anything is read: a counter changed by hand shows here.
pub fn check_counts(path: &Path, info: &CheckpointInfo, limits: &Limits) -> Result<()> {
    let Some(b) = &limits.book else {
        return Ok(());
    };
    let issued: u128 = b.inlets.iter().map(|i| i.1 as u128).sum();
    if b.present() == Some(info.n_particles) {
        return Ok(());
    }
    Err(damaged(
        path,
        format!(
            "text/engines: the inlets' and outlets' counters give {} initial + {issued} inserted \
             − {} removed particles, the file holds {} (particles/gid)",
            b.initial, b.removed, info.n_particles
        ),
    ))
}

/// One particle row as read, checked against the limits: `Err` says what is impossible.
fn check_particle(
    p: &crate::particles::Particle,
    rf: &V3,
    lim: &Limits,
) -> std::result::Result<(), String> {
    let finite = |v: &V3| v.iter().all(|x| x.is_finite());
    let q = p.ori.quaternion();
    let gid = lim.check_gid(p.gid);
    let checks: [(bool, &str, String); 10] = [
        (gid.is_ok(), "gid", gid.clone().err().unwrap_or_default()),
        (
            finite(&p.pos),
            "pos",
            format!("position {:?}", p.pos.as_slice()),
        ),
        (
            finite(rf),
            "ref_pos",
            format!("reference position {:?}", rf.as_slice()),
        ),
        (
            finite(&p.vel),
            "vel",
            format!("velocity {:?}", p.vel.as_slice()),
        ),
        (
            finite(&p.angvel),
            "angvel",
            format!("angular velocity {:?}", p.angvel.as_slice()),
        ),
        (
            (q.norm() - 1.0).abs() < 1e-6,
            "ori",
            format!(
                "orientation {:?} is not a unit quaternion",
                q.coords.as_slice()
            ),
        ),
        (
            p.radius > 0.0 && p.radius.is_finite(),
            "radius",
            format!("radius {}", p.radius),
        ),
        (
            p.mass > 0.0 && p.mass.is_finite(),
            "mass",
            format!("mass {}", p.mass),
        ),
        (
            p.inertia > 0.0 && p.inertia.is_finite(),
            "inertia",
            format!("inertia {}", p.inertia),
        ),
        (
            (p.material as usize) < lim.n_materials && p.blocked < 64,
            "material",
            format!(
                "material {} (of {}), blocked {}",
                p.material, lim.n_materials, p.blocked
            ),
        ),
    ];
    match checks.iter().find(|c| !c.0) {
        Some((_, field, what)) => Err(format!("particles/{field}: gid {}: {what}", p.gid)),
        None => Ok(()),
    }
}

/// A contact history row: every value finite.
fn check_state(group: &str, key: (u64, u64), st: &[f64]) -> std::result::Result<(), String> {
    match st.iter().position(|x| !x.is_finite()) {
        Some(c) => Err(format!(
            "{group}/state: contact {key:?}: column {c} is {}",
            st[c]
        )),
        None => Ok(()),
    }
}

/// Rows `off..off + rows` of a `roll` dataset (format 4), or nothing (older: zeros).
fn read_roll(
    d: &Option<hdf5::Dataset>,
    off: usize,
    rows: usize,
) -> std::result::Result<Vec<f64>, Fault> {
    Ok(match d {
        Some(d) => read_rows::<f64>(d, off, rows, 3)?,
        None => Vec::new(),
    })
}

/// Contact k's state from its `state` row and its row of `roll` (empty: zero), checked finite.
fn with_roll(
    row: &[f64],
    roll: &[f64],
    k: usize,
    group: &str,
    key: (u64, u64),
) -> std::result::Result<ContactState, Fault> {
    let mut st = ContactState::unpack(row);
    if !roll.is_empty() {
        st.roll = v3(roll, k);
        if !st.roll.iter().all(|x| x.is_finite()) {
            return Err(Fault::Damaged(format!(
                "{group}/roll: contact {key:?}: {:?} is not finite",
                st.roll.as_slice()
            )));
        }
    }
    Ok(st)
}

/// What a rank reads on restart: the particles whose reference position it owns, and the
/// contacts touching them.
pub struct Wanted<'a> {
    /// Does this rank own a particle whose reference position (at the last rebuild, inside
    /// the cell) is `x`?
    pub owns: &'a dyn Fn(&V3) -> bool,
    /// Could this rank own a particle whose reference position lies in the box `[lo, hi]`
    /// grown by `margin` (periodic images included)? Conservative (`Decomp::may_reach`).
    pub near: &'a dyn Fn(&V3, &V3, f64) -> bool,
    /// The largest distance between the reference positions of a contact's two particles:
    /// the halo (a contact is a candidate pair of the last rebuild, closer than
    /// 2 r_max + skin, plus the CPM reach).
    pub reach: f64,
}

impl Wanted<'static> {
    /// Everything (`demhpc info`, one process).
    pub fn all() -> Self {
        Wanted {
            owns: &|_| true,
            near: &|_, _, _| true,
            reach: 0.0,
        }
    }
}

/// Read this rank's part of a checkpoint: the particles whose position at the last neighbour
/// rebuild (`ref_pos`, inside the cell) `want.owns` accepts, and every contact touching one of
/// them. A file of version 2 is read through its index (`index/rows`, `index/ref_box`): only
/// the row blocks of the writers whose particles this rank may own (particles, wall
/// contacts), or whose particles lie within `want.reach` of its subdomain (contacts and
/// leading pairs, written by the owner of particle 1): O(N/P) rows per rank when reader and
/// writer subdomains are alike. A version-1 file is scanned whole. Blocks are read
/// `READ_BLOCK` rows at a time. Every row kept is checked against `limits` and for finite
/// values, and every row read against its writer's box; the checks that need every rank
/// (counts, unique gids, contact partners) are [`check_global`]'s.
pub fn read_local(
    path: &Path,
    info: &CheckpointInfo,
    limits: &Limits,
    want: &Wanted,
) -> Result<Restored> {
    let f = open(path)?;
    read_local_h5(&f, info, limits, want).map_err(|e| e.into_error(path))
}

/// Test hook: `DEMHPC_CHECKPOINT_SCAN_ALL=1` makes every rank scan every row, as for a
/// version-1 file (no index): the O(N)-per-rank reading the index replaced, kept reachable so
/// that tests/scaling_memory.rs can show its memory measure sees the difference.
fn scan_all() -> bool {
    std::env::var_os("DEMHPC_CHECKPOINT_SCAN_ALL").is_some_and(|v| v == "1")
}

/// Row ranges (first, count) of each group a rank reads, and for the particle ranges the
/// box every row's `ref_pos` must lie in.
#[derive(Default)]
struct Blocks {
    particles: Vec<ParticleBlock>,
    contacts: Vec<(usize, usize)>,
    wall_contacts: Vec<(usize, usize)>,
    leading: Vec<(usize, usize)>,
}

/// A block of particle rows: first row, rows, and the box of their `ref_pos` (from the index).
type ParticleBlock = (usize, usize, Option<(V3, V3)>);

/// Rows of `leading/`.
fn leading_rows(f: &File) -> hdf5::Result<u64> {
    Ok(f.dataset("leading/gid1")?
        .shape()
        .first()
        .copied()
        .unwrap_or(0) as u64)
}

/// The blocks this rank reads: from the index (version 2), else every row (version 1). The
/// index is checked first: each group's blocks must follow each other in writer order and
/// add up to its rows, a writer with contacts must have particles, and a writer's box must
/// be finite (or empty when it wrote no particle).
fn blocks(f: &File, info: &CheckpointInfo, want: &Wanted) -> std::result::Result<Blocks, Fault> {
    let totals = [
        info.n_particles,
        info.n_contacts,
        info.n_wall_contacts,
        leading_rows(f)?,
    ];
    let mut b = Blocks::default();
    if info.format_version < 2 || scan_all() {
        let all = |n: u64| vec![(0usize, n as usize)];
        b.particles = vec![(0, totals[0] as usize, None)];
        b.contacts = all(totals[1]);
        b.wall_contacts = all(totals[2]);
        b.leading = all(totals[3]);
        return Ok(b);
    }
    let w = info.ranks as usize;
    let rows = read_rows::<u64>(&ds(f, "index/rows", w as u64, 8)?, 0, w, 8)?;
    let boxes = read_rows::<f64>(&ds(f, "index/ref_box", w as u64, 6)?, 0, w, 6)?;
    let bad = |what: String| Fault::Damaged(format!("index/rows: {what}"));
    let mut next = [0u64; 4];
    for k in 0..w {
        let row = &rows[8 * k..8 * k + 8];
        for g in 0..4 {
            let (first, n) = (row[2 * g], row[2 * g + 1]);
            if first != next[g] || n > totals[g] - next[g].min(totals[g]) {
                return Err(bad(format!(
                    "writer {k}'s block ({first}, {n}) does not follow the previous ones \
                     (next row {}, {} rows)",
                    next[g], totals[g]
                )));
            }
            next[g] += n;
        }
        if row[1] == 0 && (row[3] > 0 || row[5] > 0 || row[7] > 0) {
            return Err(bad(format!("writer {k} wrote contacts but no particle")));
        }
        let (lo, hi) = (v3(&boxes[6 * k..], 0), v3(&boxes[6 * k..], 1));
        let empty =
            lo.iter().all(|&x| x == f64::INFINITY) && hi.iter().all(|&x| x == f64::NEG_INFINITY);
        let finite =
            lo.iter().chain(hi.iter()).all(|x| x.is_finite()) && (0..3).all(|a| lo[a] <= hi[a]);
        if !(finite || (empty && row[1] == 0)) {
            return Err(Fault::Damaged(format!(
                "index/ref_box: writer {k}'s box {:?}..{:?} is not a box",
                lo.as_slice(),
                hi.as_slice()
            )));
        }
        if row[1] == 0 {
            continue;
        }
        let range = |g: usize| (row[2 * g] as usize, row[2 * g + 1] as usize);
        if (want.near)(&lo, &hi, 0.0) {
            b.particles
                .push((row[0] as usize, row[1] as usize, Some((lo, hi))));
            b.wall_contacts.push(range(2));
        }
        if (want.near)(&lo, &hi, want.reach) {
            b.contacts.push(range(1));
            b.leading.push(range(3));
        }
    }
    if next != totals {
        return Err(bad(format!(
            "the blocks hold {next:?} rows, the file {totals:?} (particles, contacts, wall \
             contacts, leading pairs)"
        )));
    }
    Ok(b)
}

/// `(offset, rows)` pieces of at most `READ_BLOCK` rows covering the ranges.
fn chunks(ranges: &[(usize, usize)]) -> impl Iterator<Item = (usize, usize)> + '_ {
    ranges.iter().flat_map(|&(first, n)| {
        (0..n.div_ceil(READ_BLOCK)).map(move |c| {
            let off = c * READ_BLOCK;
            (first + off, READ_BLOCK.min(n - off))
        })
    })
}

fn read_local_h5(
    f: &File,
    info: &CheckpointInfo,
    lim: &Limits,
    want: &Wanted,
) -> std::result::Result<Restored, Fault> {
    let n = info.n_particles;
    let p = |name: &str, cols| ds(f, &format!("particles/{name}"), n, cols);
    let (d_gid, d_pos, d_vel, d_w, d_ref) = (
        p("gid", 1)?,
        p("pos", 3)?,
        p("vel", 3)?,
        p("angvel", 3)?,
        p("ref_pos", 3)?,
    );
    let (d_ori, d_r, d_m, d_i) = (
        p("ori", 4)?,
        p("radius", 1)?,
        p("mass", 1)?,
        p("inertia", 1)?,
    );
    let (d_mat, d_blk, d_wrap) = (p("material", 1)?, p("blocked", 1)?, p("wrap", 3)?);
    // format 3 has the tags; an older file reads as tag 0
    let d_tag = match info.format_version >= 3 {
        true => Some(p("tag", 1)?),
        false => None,
    };
    let blocks = blocks(f, info, want)?;
    let mut ps = Particles::default();
    let mut reference = Vec::new();
    let mut watch = crate::signals::SetupWatch::new("reading the checkpoint", Some(n));
    let mut done = 0u64;
    for &(first, count, bx) in &blocks.particles {
        for (off, rows) in chunks(&[(first, count)]) {
            watch.tick(done).map_err(Fault::Other)?;
            done += rows as u64;
            let rf = read_rows::<f64>(&d_ref, off, rows, 3)?;
            if let Some((lo, hi)) = bx {
                let outside = (0..rows).find(|&k| {
                    let x = v3(&rf, k);
                    (0..3).any(|a| !(lo[a] <= x[a] && x[a] <= hi[a]))
                });
                if let Some(k) = outside {
                    return Err(Fault::Damaged(format!(
                        "index/ref_box: row {} lies outside its writer's box",
                        off + k
                    )));
                }
            }
            let mine: Vec<usize> = (0..rows).filter(|&k| (want.owns)(&v3(&rf, k))).collect();
            if mine.is_empty() {
                continue;
            }
            let gid = read_rows::<u64>(&d_gid, off, rows, 1)?;
            let pos = read_rows::<f64>(&d_pos, off, rows, 3)?;
            let vel = read_rows::<f64>(&d_vel, off, rows, 3)?;
            let w = read_rows::<f64>(&d_w, off, rows, 3)?;
            let ori = read_rows::<f64>(&d_ori, off, rows, 4)?;
            let r = read_rows::<f64>(&d_r, off, rows, 1)?;
            let m = read_rows::<f64>(&d_m, off, rows, 1)?;
            let inertia = read_rows::<f64>(&d_i, off, rows, 1)?;
            let mat = read_rows::<u16>(&d_mat, off, rows, 1)?;
            let blk = read_rows::<u8>(&d_blk, off, rows, 1)?;
            let wrap = read_rows::<i32>(&d_wrap, off, rows, 3)?;
            let tag = match &d_tag {
                Some(d) => read_rows::<u16>(d, off, rows, 1)?,
                None => vec![0; rows],
            };
            for &k in &mine {
                let q = &ori[4 * k..4 * k + 4];
                let part = crate::particles::Particle {
                    gid: gid[k],
                    pos: v3(&pos, k),
                    vel: v3(&vel, k),
                    angvel: v3(&w, k),
                    ori: Quat::new_unchecked(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3])),
                    radius: r[k],
                    mass: m[k],
                    inertia: inertia[k],
                    material: mat[k],
                    blocked: blk[k],
                    image: [0; 3],
                    wrap: [wrap[3 * k], wrap[3 * k + 1], wrap[3 * k + 2]],
                    tag: tag[k],
                };
                check_particle(&part, &v3(&rf, k), lim).map_err(Fault::Damaged)?;
                ps.push_owned(&part);
                reference.push(v3(&rf, k));
            }
        }
    }
    let mut owned: Vec<u64> = ps.gid.clone();
    owned.sort_unstable();
    let is_owned = |g: u64| owned.binary_search(&g).is_ok();
    let s = ContactState::N_F64;
    let c = |name: &str, rows, cols| ds(f, &format!("contacts/{name}"), rows, cols);
    let nc = info.n_contacts;
    let (d1, d2, dst) = (c("gid1", nc, 1)?, c("gid2", nc, 1)?, c("state", nc, s)?);
    c("image", nc, 3)?;
    // format 4 has the rolling histories; an older file reads as zero
    let has_roll = info.format_version >= 4;
    let d_roll = has_roll.then(|| c("roll", nc, 3)).transpose()?;
    let mut contacts = Vec::new();
    for (off, rows) in chunks(&blocks.contacts) {
        let g1 = read_rows::<u64>(&d1, off, rows, 1)?;
        let g2 = read_rows::<u64>(&d2, off, rows, 1)?;
        let mine: Vec<usize> = (0..rows)
            .filter(|&k| is_owned(g1[k]) || is_owned(g2[k]))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let st = read_rows::<f64>(&dst, off, rows, s)?;
        let roll = read_roll(&d_roll, off, rows)?;
        for &k in &mine {
            let key = (g1[k], g2[k]);
            if key.0 >= key.1 || key.1 >= lim.max_gid {
                return Err(Fault::Damaged(format!(
                    "contacts/gid1, gid2: contact {key:?} (gids must be ordered and below {})",
                    lim.max_gid
                )));
            }
            let row = &st[s * k..s * (k + 1)];
            check_state("contacts", key, row).map_err(Fault::Damaged)?;
            contacts.push((key, with_roll(row, &roll, k, "contacts", key)?));
        }
    }
    let w = |name: &str, rows, cols| ds(f, &format!("wall_contacts/{name}"), rows, cols);
    let nw = info.n_wall_contacts;
    let (dg, dw, dst) = (w("gid", nw, 1)?, w("wall", nw, 1)?, w("state", nw, s)?);
    let d_roll = has_roll.then(|| w("roll", nw, 3)).transpose()?;
    let mut wall_contacts = Vec::new();
    for (off, rows) in chunks(&blocks.wall_contacts) {
        let g = read_rows::<u64>(&dg, off, rows, 1)?;
        let wi = read_rows::<u64>(&dw, off, rows, 1)?;
        let mine: Vec<usize> = (0..rows).filter(|&k| is_owned(g[k])).collect();
        if mine.is_empty() {
            continue;
        }
        let st = read_rows::<f64>(&dst, off, rows, s)?;
        let roll = read_roll(&d_roll, off, rows)?;
        for &k in &mine {
            let key = (g[k], wi[k]);
            if key.1 >= (lim.n_walls + lim.n_facets) as u64 {
                return Err(Fault::Damaged(format!(
                    "wall_contacts/wall: contact {key:?} names wall {} of {} (walls and mesh \
                     facets)",
                    key.1,
                    lim.n_walls + lim.n_facets
                )));
            }
            let row = &st[s * k..s * (k + 1)];
            check_state("wall_contacts", key, row).map_err(Fault::Damaged)?;
            wall_contacts.push((key, with_roll(row, &roll, k, "wall_contacts", key)?));
        }
    }
    let leading = read_leading(f, &blocks.leading, &is_owned)?;
    let walls_n = f
        .dataset("walls/point")?
        .shape()
        .first()
        .copied()
        .unwrap_or(0);
    if walls_n != lim.n_walls {
        return Err(Fault::Damaged(format!(
            "walls/point: {walls_n} walls, the scene has {}",
            lim.n_walls
        )));
    }
    let wr = |name: &str| -> std::result::Result<Vec<V3>, Fault> {
        let d = ds(f, &format!("walls/{name}"), walls_n as u64, 3)?;
        let v = read_rows::<f64>(&d, 0, walls_n, 3)?;
        let out: Vec<V3> = (0..walls_n).map(|k| v3(&v, k)).collect();
        match out.iter().position(|x| !x.iter().all(|c| c.is_finite())) {
            Some(k) => Err(Fault::Damaged(format!(
                "walls/{name}: wall {k} is not finite"
            ))),
            None => Ok(out),
        }
    };
    Ok(Restored {
        step: info.step,
        time: info.time,
        need_rebuild: info.need_rebuild,
        n_rebuilds: info.n_rebuilds,
        wall_point: wr("point")?,
        wall_vel: wr("vel")?,
        wall_ref: wr("ref_point")?,
        particles: ps,
        reference,
        contacts,
        wall_contacts,
        leading,
        engines: info.engines.clone(),
    })
}

/// This rank's equal share of every particle's reference position (rows r·N/P to
/// (r + 1)·N/P of `particles/ref_pos`): what a restart balances its cuts on before reading.
pub fn read_ref_pos_share(path: &Path, info: &CheckpointInfo, comm: &Comm) -> Result<Vec<V3>> {
    let local = (|| -> Result<Vec<V3>> {
        let f = open(path)?;
        let n = info.n_particles as u128;
        let (r, p) = (comm.rank() as u128, comm.size() as u128);
        let (a, b) = ((r * n / p) as usize, ((r + 1) * n / p) as usize);
        let d = ds(&f, "particles/ref_pos", info.n_particles, 3).map_err(bad(path))?;
        let mut out = Vec::with_capacity(b - a);
        let mut off = a;
        while off < b {
            let rows = READ_BLOCK.min(b - off);
            let v = read_rows::<f64>(&d, off, rows, 3).map_err(bad(path))?;
            out.extend((0..rows).map(|k| v3(&v, k)));
            off += rows;
        }
        Ok(out)
    })();
    comm.agree(local)
}

/// The checks of a restart that need every rank (collective): each particle read by exactly
/// one rank (a damaged reference position would leave it to none), no gid twice, and every
/// contact's partner present somewhere.
pub fn check_global(path: &Path, info: &CheckpointInfo, r: &Restored, comm: &Comm) -> Result<()> {
    let ps = &r.particles;
    let owned = &ps.gid[..ps.n_owned];
    let n = comm.sum_u64(owned.len() as u64);
    if n != info.n_particles {
        return Err(damaged(
            path,
            format!(
                "particles/ref_pos: {n} of the {} particles lie in a subdomain (the others' \
                 reference positions are outside the decomposed box)",
                info.n_particles
            ),
        ));
    }
    let mut sorted = owned.to_vec();
    sorted.sort_unstable();
    let mine = |g: &u64| sorted.binary_search(g).is_ok();
    let wanted: Vec<u64> = r
        .contacts
        .iter()
        .flat_map(|&((a, b), _)| [a, b])
        .filter(|g| !mine(g))
        .collect();
    let (dup, missing) = comm.gid_census(&sorted, &wanted);
    if let Some(g) = dup {
        return Err(damaged(
            path,
            format!("particles/gid: gid {g} appears twice"),
        ));
    }
    if let Some(g) = missing {
        return Err(damaged(
            path,
            format!("contacts/gid1, gid2: a contact names gid {g}, which is no particle"),
        ));
    }
    // Every contact is kept by the owner of its particle 1 (which wrote it, beside that
    // particle), every wall contact by its sphere's owner: a row naming no particle at all
    // was kept by no rank.
    let kept = r.contacts.iter().filter(|((a, _), _)| mine(a)).count() as u64;
    let all = [
        comm.sum_u64(kept),
        comm.sum_u64(r.wall_contacts.len() as u64),
    ];
    let rows = [info.n_contacts, info.n_wall_contacts];
    let what = ["contacts/gid1, gid2", "wall_contacts/gid"];
    for k in 0..2 {
        if all[k] != rows[k] {
            return Err(damaged(
                path,
                format!(
                    "{}: {} of the {} rows name a particle of the file, the others gids \
                     that are no particle",
                    what[k], all[k], rows[k]
                ),
            ));
        }
    }
    Ok(())
}

/// The keys of `leading/` (pairs touching at the last rebuild) in the row ranges `ranges` that
/// touch a particle this rank keeps.
fn read_leading(
    f: &File,
    ranges: &[(usize, usize)],
    is_owned: &dyn Fn(u64) -> bool,
) -> hdf5::Result<Vec<(u64, u64)>> {
    let n = leading_rows(f)?;
    let (d1, d2) = (ds(f, "leading/gid1", n, 1)?, ds(f, "leading/gid2", n, 1)?);
    let mut out = Vec::new();
    for (off, rows) in chunks(ranges) {
        let g1 = read_rows::<u64>(&d1, off, rows, 1)?;
        let g2 = read_rows::<u64>(&d2, off, rows, 1)?;
        out.extend(
            (0..rows)
                .filter(|&k| is_owned(g1[k]) || is_owned(g2[k]))
                .map(|k| (g1[k], g2[k])),
        );
    }
    Ok(out)
}

/// `demhpc info`: verify the checksums and check every row of the whole file on this process
/// (`limits` from the stored scene when it validates here; else the file's own wall count and
/// no gid or material bounds). Returns what was checked, or the damage found.
pub fn inspect(path: &Path, info: &CheckpointInfo, limits: Option<Limits>) -> Result<String> {
    let comm = Comm::Serial;
    let verified = verify(path, info, &comm)?;
    let limits = match limits {
        Some(l) => l,
        None => {
            let f = open(path)?;
            let n_walls = f
                .dataset("walls/point")
                .map_err(bad(path))?
                .shape()
                .first()
                .copied()
                .unwrap_or(0);
            Limits {
                max_gid: u64::MAX,
                n_materials: u16::MAX as usize + 1,
                n_walls,
                n_facets: crate::mesh::MAX_FACETS,
                book: None,
            }
        }
    };
    check_counts(path, info, &limits)?;
    let r = read_local(path, info, &limits, &Wanted::all())?;
    check_global(path, info, &r, &comm)?;
    Ok(format!(
        "{}, {} particles and {} contacts checked",
        if verified {
            "checksums of every dataset verified"
        } else {
            "format version 1: no checksums to verify"
        },
        r.particles.n_owned,
        r.contacts.len() + r.wall_contacts.len()
    ))
}
