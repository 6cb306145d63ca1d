//! The file's layout: every dataset (path, element type, columns) in the order the writer,
//! the checksum verifier and `docs/checkpoint-format.md` follow, which group sizes each, a
//! rank's rows of each ([`Rows`]), and the helpers of the root attributes.

use super::{CheckpointInfo, CheckpointState};
use crate::contact::store::ContactState;
use crate::io::checksum::Piece;
use crate::io::h5par::{read_str_attr, write_str_attr};
use crate::V3;
use hdf5::{File, H5Type};

/// The particles' tags, since format version 3 (an older file reads as tag 0 everywhere).
pub(super) const TAG_DATASET: &str = "particles/tag";
/// The contacts' rolling-moment histories (EPSD), since format version 4 (an older file reads
/// as zero: it was written by a demhpc without the model).
pub(super) const ROLL_DATASETS: [&str; 2] = ["contacts/roll", "wall_contacts/roll"];

/// The file's groups, created in this order.
pub(super) const GROUPS: [&str; 7] = [
    "particles",
    "contacts",
    "wall_contacts",
    "leading",
    "walls",
    "text",
    "index",
];

/// Element type of a dataset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    U8,
    U16,
    U64,
    I32,
    F64,
}

/// Every dataset of the file: (path, element type, columns). Its group's row count is
/// [`CheckpointInfo::rows`]. The writer, the checksum verifier and `docs/checkpoint-format.md`
/// follow this order.
pub(super) const LAYOUT: &[(&str, Kind, usize)] = &[
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

/// Index in [`LAYOUT`] of the first contact dataset (`contacts/gid1`): the writer's fault
/// hook fires before it, with the particles written and the contacts not.
pub(super) const FIRST_CONTACT_DATASET: usize = 12;

/// The datasets a file of format `version` has (every one of [`LAYOUT`] but those added later).
pub(super) fn layout_of(
    version: u64,
) -> impl Iterator<Item = &'static (&'static str, Kind, usize)> {
    LAYOUT
        .iter()
        .filter(move |(name, _, _)| version >= 3 || *name != TAG_DATASET)
        .filter(move |(name, _, _)| version >= 4 || !ROLL_DATASETS.contains(name))
}

impl CheckpointInfo {
    /// Rows of a dataset's group (the walls and `leading` are sized by the file).
    pub(super) fn rows(&self, f: &File, name: &str) -> hdf5::Result<u64> {
        Ok(match name.split('/').next() {
            Some("particles") => self.n_particles,
            Some("contacts") => self.n_contacts,
            Some("wall_contacts") => self.n_wall_contacts,
            Some("index") => self.ranks,
            _ => f.dataset(name)?.shape().first().copied().unwrap_or(0) as u64,
        })
    }
}

/// This rank's rows of one dataset.
pub(super) enum Rows<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U64(&'a [u64]),
    I32(&'a [i32]),
    F64(&'a [f64]),
}

impl Rows<'_> {
    pub(super) fn piece(&self) -> Piece {
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
/// only); `index_rows` is this rank's row of `index/rows`.
pub(super) fn rows_of<'a>(
    l: &'a CheckpointState,
    index_rows: &'a [u64],
    texts: [&'a str; 2],
    root: bool,
) -> Vec<Rows<'a>> {
    let w = |k: usize| Rows::F64(if root { &l.walls[k] } else { &[] });
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
        Rows::U64(index_rows),
        Rows::F64(&l.ref_box),
        Rows::U16(&l.tag),
        Rows::F64(&l.c_roll),
        Rows::F64(&l.w_roll),
    ]
}

// ------------------------------------------------------------------------ root attributes

pub(super) fn attr_str(f: &File, name: &str, v: &str) -> hdf5::Result<()> {
    write_str_attr(f, name, v)
}

pub(super) fn attr<T: H5Type>(loc: &hdf5::Location, name: &str, v: T) -> hdf5::Result<()> {
    loc.new_attr::<T>().create(name)?.write_scalar(&v)
}

pub(super) fn attr_vec<T: H5Type>(f: &File, name: &str, v: &[T]) -> hdf5::Result<()> {
    f.new_attr::<T>()
        .shape([v.len()])
        .create(name)?
        .write_raw(v)
}

pub(super) fn get_str(f: &File, name: &str) -> hdf5::Result<String> {
    read_str_attr(f, name)
}

pub(super) fn get<T: H5Type>(f: &File, name: &str) -> hdf5::Result<T> {
    f.attr(name)?.read_scalar::<T>()
}

pub(super) fn get3(f: &File, name: &str) -> hdf5::Result<V3> {
    let v = f.attr(name)?.read_raw::<f64>()?;
    if v.len() != 3 {
        return Err(format!("attribute {name} must have 3 values").into());
    }
    Ok(V3::new(v[0], v[1], v[2]))
}
