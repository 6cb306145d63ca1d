//! Checksums of checkpoint data: CRC-32C (Castagnoli) of a dataset's elements in row order, as
//! the little-endian bytes HDF5 stores for its native types. The `crc32c` crate computes it
//! with the SSE 4.2 / ARMv8 CRC instructions (several GB/s) and can *combine* the CRCs of
//! consecutive pieces (`crc32c_combine`, the zlib construction): each rank checksums only the
//! rows it writes or verifies, and the pieces are joined in rank order into the dataset's CRC,
//! so writing and verifying stay O(rows per rank) whatever the rank count.

use crate::domain::comm::Comm;

/// Element types stored in checkpoints: plain little-endian numbers without padding, so their
/// memory is exactly the bytes HDF5 writes.
pub trait Plain: Copy {}
impl Plain for u8 {}
impl Plain for u16 {}
impl Plain for u32 {}
impl Plain for u64 {}
impl Plain for i32 {}
impl Plain for f64 {}

/// The bytes of a slice of plain numbers.
pub fn bytes<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `Plain` types have no padding and no invalid bit patterns as bytes; the slice
    // covers exactly `size_of_val(v)` initialised bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// A checksum piece: the CRC of some bytes and their length.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Piece {
    pub crc: u32,
    pub len: u64,
}

impl Piece {
    pub fn of<T: Plain>(v: &[T]) -> Piece {
        let b = bytes(v);
        Piece {
            crc: crc32c::crc32c(b),
            len: b.len() as u64,
        }
    }

    /// Extend with the bytes of `v` (the next rows of the same piece).
    pub fn append<T: Plain>(&mut self, v: &[T]) {
        let b = bytes(v);
        self.crc = crc32c::crc32c_append(self.crc, b);
        self.len += b.len() as u64;
    }

    /// The piece made of `self` followed by `next`.
    pub fn then(self, next: Piece) -> Piece {
        Piece {
            crc: crc32c::crc32c_combine(self.crc, next.crc, next.len as usize),
            len: self.len + next.len,
        }
    }
}

/// Join every rank's pieces (`mine[k]`: this rank's consecutive rows of dataset k; ranks hold
/// consecutive row blocks in rank order) into each dataset's CRC, the same on every rank (one
/// all-gather of two numbers per dataset).
pub fn join(comm: &Comm, mine: &[Piece]) -> Vec<u32> {
    let flat: Vec<u64> = mine.iter().flat_map(|p| [p.crc as u64, p.len]).collect();
    let all = comm.all_gather_u64s(&flat);
    let per_rank = 2 * mine.len();
    (0..mine.len())
        .map(|k| {
            all.chunks_exact(per_rank)
                .map(|r| Piece {
                    crc: r[2 * k] as u32,
                    len: r[2 * k + 1],
                })
                .fold(Piece::default(), Piece::then)
                .crc
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces joined in order give the CRC of the whole, for any cut (also empty pieces);
    /// the known check value of CRC-32C ("123456789" → 0xE3069283, RFC 3720 B.4).
    #[test]
    fn pieces_join_to_the_whole() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        let v: Vec<f64> = (0..1000).map(|k| (k as f64).sin()).collect();
        let whole = Piece::of(&v);
        for cuts in [vec![0, 1000], vec![0, 0, 1000], vec![0, 17, 500, 999, 1000]] {
            let joined = cuts
                .windows(2)
                .map(|w| Piece::of(&v[w[0]..w[1]]))
                .fold(Piece::default(), Piece::then);
            assert_eq!(joined, whole, "cuts {cuts:?}");
        }
        let mut a = Piece::of(&v[..300]);
        a.append(&v[300..]);
        assert_eq!(a, whole);
        assert_eq!(
            join(&Comm::Serial, &[whole, Piece::of(&[1u8, 2])])[0],
            whole.crc
        );
    }

    /// A single flipped bit changes the checksum.
    #[test]
    fn a_flipped_bit_is_seen() {
        let v: Vec<u64> = (0..4096).collect();
        let c0 = Piece::of(&v).crc;
        for k in [0usize, 1, 2000, 4095] {
            let mut w = v.clone();
            w[k] ^= 1 << (k % 64);
            assert_ne!(Piece::of(&w).crc, c0, "bit flip in element {k}");
        }
    }
}
