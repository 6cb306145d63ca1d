//! Integrity: what lets a reader trust a file before it uses it. Every dataset carries the
//! CRC-32C of its elements (`crc32c`, joined across the writing ranks), the root attributes
//! the CRC of their values (`attrs_crc32c`, [`CheckpointInfo::digest`]), and the file's HDF5
//! user block the integrity block: the checksum of HDF5's own metadata, written by
//! [`seal`] after the close and verified by [`precheck`] with plain reads before HDF5 opens
//! the file.

use super::{damaged, CheckpointInfo};
use crate::contact::store::ContactState;
use crate::error::{Error, Result};
use crate::io::checksum::Piece;
use crate::V3;
use std::path::Path;

/// Name of the checksum attribute of every dataset (format version 2).
pub(super) const CRC_ATTR: &str = "crc32c";
/// Name of the root attribute holding the checksum of the other root attributes.
pub(super) const ATTRS_CRC_ATTR: &str = "attrs_crc32c";

/// Bytes reserved at the start of a checkpoint for its integrity block (an HDF5 user block:
/// HDF5 starts the file after it and never reads it).
pub(super) const USERBLOCK: u64 = 4096;
/// First bytes of the integrity block.
const MAGIC: &[u8; 16] = b"demhpc-integrity";
/// Most data ranges the block can list.
const MAX_RANGES: usize = (USERBLOCK as usize - 52) / 16;

/// The integrity block protects what the datasets' checksums cannot: HDF5's own metadata
/// (superblock, object headers, attributes, B-trees, heaps). HDF5 1.10 does not check it and
/// crashes on some damage to it (a segfault decoding an attribute message, a huge allocation
/// from a damaged shape: found by flipping bits, tests/suite/corrupt.rs), so every byte of the file
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
pub(super) fn seal(tmp: &Path, mut ranges: Vec<(u64, u64)>) -> Result<()> {
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
pub(super) fn precheck(path: &Path) -> Result<bool> {
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
}
