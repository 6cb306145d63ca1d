//! Reading: the root attributes ([`read_info`], checked against their checksum and for
//! plausibility), every dataset's checksum ([`verify`], a share per rank), this rank's part of
//! the rows ([`read_local`], through the index: only the blocks of the writers whose
//! particles it may own), the reference positions a restart balances on
//! ([`read_ref_pos_share`]), the checks across ranks ([`check_global`]) and `demhpc info`'s
//! whole-file check ([`inspect`]). Every failure is an input error naming the file.

use super::check::{check_counts, check_particle, check_state, Limits};
use super::integrity::{precheck, ATTRS_CRC_ATTR, CRC_ATTR};
use super::layout::{get, get3, get_str, layout_of, Kind, LAYOUT};
use super::{damaged, CheckpointInfo, Restored, FORMAT, FORMAT_VERSION};
use crate::contact::store::ContactState;
use crate::domain::comm::Comm;
use crate::error::{Error, Result};
use crate::io::checksum::{self, Piece};
use crate::io::h5par::read_rows;
use crate::particles::Particles;
use crate::{Quat, V3};
use hdf5::File;
use std::path::Path;

/// Rows read per block on restart (bounds the memory of a rank scanning the file).
const READ_BLOCK: usize = 1 << 18;

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
/// that tests/suite/scaling_memory.rs can show its memory measure sees the difference.
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
    let sets = ParticleSets::open(f, info)?;
    let blocks = blocks(f, info, want)?;
    let (ps, reference) = read_particles(&sets, &blocks.particles, info.n_particles, lim, want)?;
    let mut owned: Vec<u64> = ps.gid.clone();
    owned.sort_unstable();
    let is_owned = |g: u64| owned.binary_search(&g).is_ok();
    let contacts = read_contacts(f, info, &blocks.contacts, lim, &is_owned)?;
    let wall_contacts = read_wall_contacts(f, info, &blocks.wall_contacts, lim, &is_owned)?;
    let leading = read_leading(f, &blocks.leading, &is_owned)?;
    let [wall_point, wall_vel, wall_ref] = read_walls(f, lim)?;
    Ok(Restored {
        step: info.step,
        time: info.time,
        need_rebuild: info.need_rebuild,
        n_rebuilds: info.n_rebuilds,
        wall_point,
        wall_vel,
        wall_ref,
        particles: ps,
        reference,
        contacts,
        wall_contacts,
        leading,
        engines: info.engines.clone(),
    })
}

/// The datasets of `particles/`, their shapes checked.
struct ParticleSets {
    gid: hdf5::Dataset,
    pos: hdf5::Dataset,
    vel: hdf5::Dataset,
    angvel: hdf5::Dataset,
    ref_pos: hdf5::Dataset,
    ori: hdf5::Dataset,
    radius: hdf5::Dataset,
    mass: hdf5::Dataset,
    inertia: hdf5::Dataset,
    material: hdf5::Dataset,
    blocked: hdf5::Dataset,
    wrap: hdf5::Dataset,
    /// Format 3 has the tags; an older file reads as tag 0.
    tag: Option<hdf5::Dataset>,
}

impl ParticleSets {
    fn open(f: &File, info: &CheckpointInfo) -> hdf5::Result<Self> {
        let n = info.n_particles;
        let p = |name: &str, cols| ds(f, &format!("particles/{name}"), n, cols);
        Ok(ParticleSets {
            gid: p("gid", 1)?,
            pos: p("pos", 3)?,
            vel: p("vel", 3)?,
            angvel: p("angvel", 3)?,
            ref_pos: p("ref_pos", 3)?,
            ori: p("ori", 4)?,
            radius: p("radius", 1)?,
            mass: p("mass", 1)?,
            inertia: p("inertia", 1)?,
            material: p("material", 1)?,
            blocked: p("blocked", 1)?,
            wrap: p("wrap", 3)?,
            tag: match info.format_version >= 3 {
                true => Some(p("tag", 1)?),
                false => None,
            },
        })
    }
}

/// The particles of `blocks` (of the file's `n`) that `want.owns`, each checked against
/// `lim`, and their reference positions (aligned).
fn read_particles(
    d: &ParticleSets,
    blocks: &[ParticleBlock],
    n: u64,
    lim: &Limits,
    want: &Wanted,
) -> std::result::Result<(Particles, Vec<V3>), Fault> {
    let mut ps = Particles::default();
    let mut reference = Vec::new();
    let mut watch = crate::signals::SetupWatch::new("reading the checkpoint", Some(n));
    let mut done = 0u64;
    for &(first, count, bx) in blocks {
        for (off, rows) in chunks(&[(first, count)]) {
            watch.tick(done).map_err(Fault::Other)?;
            done += rows as u64;
            let rf = read_rows::<f64>(&d.ref_pos, off, rows, 3)?;
            in_box(&rf, off, rows, bx)?;
            let mine: Vec<usize> = (0..rows).filter(|&k| (want.owns)(&v3(&rf, k))).collect();
            if mine.is_empty() {
                continue;
            }
            let c = ParticleChunk::read(d, off, rows)?;
            for &k in &mine {
                let part = c.particle(k);
                check_particle(&part, &v3(&rf, k), lim).map_err(Fault::Damaged)?;
                ps.push_owned(&part);
                reference.push(v3(&rf, k));
            }
        }
    }
    Ok((ps, reference))
}

/// Every one of `rows` reference positions `rf` (from row `off`) lies in its writer's box
/// `bx` (from the index; `None`: no index).
fn in_box(
    rf: &[f64],
    off: usize,
    rows: usize,
    bx: Option<(V3, V3)>,
) -> std::result::Result<(), Fault> {
    let Some((lo, hi)) = bx else {
        return Ok(());
    };
    let outside = (0..rows).find(|&k| {
        let x = v3(rf, k);
        (0..3).any(|a| !(lo[a] <= x[a] && x[a] <= hi[a]))
    });
    match outside {
        Some(k) => Err(Fault::Damaged(format!(
            "index/ref_box: row {} lies outside its writer's box",
            off + k
        ))),
        None => Ok(()),
    }
}

/// Rows `off..off + rows` of every particle dataset but `ref_pos`.
struct ParticleChunk {
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
}

impl ParticleChunk {
    fn read(d: &ParticleSets, off: usize, rows: usize) -> hdf5::Result<Self> {
        Ok(ParticleChunk {
            gid: read_rows::<u64>(&d.gid, off, rows, 1)?,
            pos: read_rows::<f64>(&d.pos, off, rows, 3)?,
            vel: read_rows::<f64>(&d.vel, off, rows, 3)?,
            angvel: read_rows::<f64>(&d.angvel, off, rows, 3)?,
            ori: read_rows::<f64>(&d.ori, off, rows, 4)?,
            radius: read_rows::<f64>(&d.radius, off, rows, 1)?,
            mass: read_rows::<f64>(&d.mass, off, rows, 1)?,
            inertia: read_rows::<f64>(&d.inertia, off, rows, 1)?,
            material: read_rows::<u16>(&d.material, off, rows, 1)?,
            blocked: read_rows::<u8>(&d.blocked, off, rows, 1)?,
            wrap: read_rows::<i32>(&d.wrap, off, rows, 3)?,
            tag: match &d.tag {
                Some(t) => read_rows::<u16>(t, off, rows, 1)?,
                None => vec![0; rows],
            },
        })
    }

    /// The particle of row `k` of the chunk (owned: image 0).
    fn particle(&self, k: usize) -> crate::particles::Particle {
        let q = &self.ori[4 * k..4 * k + 4];
        let w = &self.wrap;
        crate::particles::Particle {
            gid: self.gid[k],
            pos: v3(&self.pos, k),
            vel: v3(&self.vel, k),
            angvel: v3(&self.angvel, k),
            ori: Quat::new_unchecked(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3])),
            radius: self.radius[k],
            mass: self.mass[k],
            inertia: self.inertia[k],
            material: self.material[k],
            blocked: self.blocked[k],
            image: [0; 3],
            wrap: [w[3 * k], w[3 * k + 1], w[3 * k + 2]],
            tag: self.tag[k],
        }
    }
}

/// A contact as read: its key and history.
type ContactRow = ((u64, u64), ContactState);

/// The contacts in the row `ranges` of `contacts/` touching a particle this rank keeps, each
/// checked (ordered gids below `lim.max_gid`, finite history).
fn read_contacts(
    f: &File,
    info: &CheckpointInfo,
    ranges: &[(usize, usize)],
    lim: &Limits,
    is_owned: &dyn Fn(u64) -> bool,
) -> std::result::Result<Vec<ContactRow>, Fault> {
    let s = ContactState::N_F64;
    let c = |name: &str, rows, cols| ds(f, &format!("contacts/{name}"), rows, cols);
    let nc = info.n_contacts;
    let (d1, d2, dst) = (c("gid1", nc, 1)?, c("gid2", nc, 1)?, c("state", nc, s)?);
    c("image", nc, 3)?;
    // format 4 has the rolling histories; an older file reads as zero
    let has_roll = info.format_version >= 4;
    let d_roll = has_roll.then(|| c("roll", nc, 3)).transpose()?;
    let mut contacts = Vec::new();
    for (off, rows) in chunks(ranges) {
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
    Ok(contacts)
}

/// The wall contacts in the row `ranges` of `wall_contacts/` of a sphere this rank keeps, each
/// checked (a wall or facet of the scene, finite history).
fn read_wall_contacts(
    f: &File,
    info: &CheckpointInfo,
    ranges: &[(usize, usize)],
    lim: &Limits,
    is_owned: &dyn Fn(u64) -> bool,
) -> std::result::Result<Vec<ContactRow>, Fault> {
    let s = ContactState::N_F64;
    let w = |name: &str, rows, cols| ds(f, &format!("wall_contacts/{name}"), rows, cols);
    let nw = info.n_wall_contacts;
    let (dg, dw, dst) = (w("gid", nw, 1)?, w("wall", nw, 1)?, w("state", nw, s)?);
    let has_roll = info.format_version >= 4;
    let d_roll = has_roll.then(|| w("roll", nw, 3)).transpose()?;
    let mut wall_contacts = Vec::new();
    for (off, rows) in chunks(ranges) {
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
    Ok(wall_contacts)
}

/// The walls' point, vel and ref_point rows (`walls/`), as many as the scene's walls, finite.
fn read_walls(f: &File, lim: &Limits) -> std::result::Result<[Vec<V3>; 3], Fault> {
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
    Ok([wr("point")?, wr("vel")?, wr("ref_point")?])
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
