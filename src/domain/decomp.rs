//! Spatial decomposition of the simulation box into a Cartesian grid of subdomains, one per
//! rank (ARCHITECTURE.md "Ownership"). Plain Rust, no MPI: the grid is chosen here and handed
//! to `Comm::cartesian`.
//!
//! * Periodic axes are cut uniformly over the periodic cell.
//! * Open axes are cut uniformly over the particles' initial bounding box, and the outermost
//!   subdomains extend to ±∞ (as MercuryDPM does), so no particle is ever outside every
//!   subdomain — settle's open top works.
//! * A rank owns the particles whose centre lies in `[cut_k, cut_{k+1})` along every axis.

use crate::error::{Error, Result};
use crate::V3;

#[derive(Clone, Debug, PartialEq)]
pub struct Decomp {
    /// Ranks along x, y, z.
    pub dims: [usize; 3],
    /// This rank's grid coordinates.
    pub coords: [usize; 3],
    pub periodic: [bool; 3],
    /// `dims[a] + 1` cut positions per axis (±∞ at the outer ends of open axes).
    pub cuts: [Vec<f64>; 3],
}

/// Uniform cuts of `[lo, hi]` into `p` slabs; the outer ends are ±∞ when `open`.
fn uniform_cuts(lo: f64, hi: f64, p: usize, open: bool) -> Vec<f64> {
    let mut c: Vec<f64> = (0..=p)
        .map(|k| lo + (hi - lo) * k as f64 / p as f64)
        .collect();
    c[p] = hi;
    if open {
        c[0] = f64::NEG_INFINITY;
        c[p] = f64::INFINITY;
    }
    c
}

impl Decomp {
    /// The grid `dims` over the box: periodic axes cut over `[cell_lo, cell_hi]`, open axes over
    /// the particles' bounding box `[bb_lo, bb_hi]`.
    pub fn new(
        dims: [usize; 3],
        coords: [usize; 3],
        periodic: [bool; 3],
        cell_lo: V3,
        cell_hi: V3,
        bb_lo: V3,
        bb_hi: V3,
    ) -> Self {
        let cut = |a: usize| {
            if periodic[a] {
                uniform_cuts(cell_lo[a], cell_hi[a], dims[a], false)
            } else {
                uniform_cuts(bb_lo[a], bb_hi[a], dims[a], true)
            }
        };
        Decomp {
            dims,
            coords,
            periodic,
            cuts: [cut(0), cut(1), cut(2)],
        }
    }

    /// One rank owning the whole (possibly periodic) box.
    pub fn serial(d: &super::Domain) -> Self {
        Decomp::new([1; 3], [0; 3], d.periodic, d.lo, d.hi, d.lo, d.hi)
    }

    pub fn n_ranks(&self) -> usize {
        self.dims.iter().product()
    }

    /// Lower and upper bound of this rank's subdomain along `a`.
    pub fn bounds(&self, a: usize) -> (f64, f64) {
        let c = self.coords[a];
        (self.cuts[a][c], self.cuts[a][c + 1])
    }

    /// Grid coordinate along `a` of the subdomain containing coordinate `x` (clamped to the
    /// grid: a wrapped periodic coordinate is inside the cell).
    pub fn coord_of(&self, a: usize, x: f64) -> usize {
        let cuts = &self.cuts[a];
        // Interior cuts only: number of cuts_k (k = 1..p−1) with cut_k ≤ x.
        cuts[1..self.dims[a]].iter().filter(|&&c| c <= x).count()
    }

    /// Does this rank own a particle at `x`?
    pub fn owns(&self, x: &V3) -> bool {
        (0..3).all(|a| self.coord_of(a, x[a]) == self.coords[a])
    }

    /// Is `x` within `margin` of this rank's subdomain (or in it)? Periodic images are not
    /// considered (the set-up's overlap check, `scene::check_overlaps`).
    pub fn near(&self, x: &V3, margin: f64) -> bool {
        (0..3).all(|a| {
            let (lo, hi) = self.bounds(a);
            x[a] >= lo - margin && x[a] <= hi + margin
        })
    }

    /// Could a sphere with centre in the box `[lo, hi]` be owned by this rank or lie within
    /// `margin` of its subdomain, once wrapped into the periodic cell? Conservative: a box
    /// reaching out of the cell along a periodic axis may hold anything along it.
    pub fn may_hold(&self, lo: &V3, hi: &V3, margin: f64) -> bool {
        (0..3).all(|a| {
            let p = self.dims[a];
            if self.periodic[a] && (lo[a] < self.cuts[a][0] || hi[a] >= self.cuts[a][p]) {
                return true;
            }
            let (b0, b1) = self.bounds(a);
            hi[a] >= b0 - margin && lo[a] <= b1 + margin
        })
    }

    /// Could a point in the box `[lo, hi]` grown by `margin` on every side lie in this rank's
    /// subdomain, periodic images included (a box within `margin` of a periodic face also
    /// reaches the subdomains at the opposite face)? Conservative; a restart uses it to pick
    /// the checkpoint's row blocks it must read.
    pub fn may_reach(&self, lo: &V3, hi: &V3, margin: f64) -> bool {
        (0..3).all(|a| {
            let (b0, b1) = self.bounds(a);
            let (x0, x1) = (lo[a] - margin, hi[a] + margin);
            let meets = |s: f64| x1 + s >= b0 && x0 + s <= b1;
            if !self.periodic[a] {
                return meets(0.0);
            }
            let l = self.cuts[a][self.dims[a]] - self.cuts[a][0];
            x1 - x0 >= l || meets(0.0) || meets(l) || meets(-l)
        })
    }

    /// Which neighbours exist along each axis: [lower, upper].
    pub fn has_neighbours(&self, a: usize) -> [bool; 2] {
        if self.periodic[a] {
            [true, true]
        } else {
            [self.coords[a] > 0, self.coords[a] + 1 < self.dims[a]]
        }
    }

    /// Image shift of a copy sent to the lower (`dir` 0) or upper (1) neighbour along `a`:
    /// crossing the periodic boundary adds ±1 cell length (digest A11.2).
    pub fn image_shift(&self, a: usize, dir: usize) -> i32 {
        if !self.periodic[a] {
            return 0;
        }
        match dir {
            0 if self.coords[a] == 0 => 1,
            1 if self.coords[a] + 1 == self.dims[a] => -1,
            _ => 0,
        }
    }

    /// Direction (0 lower, 1 upper) towards grid coordinate `target` along `a`, if it is a
    /// neighbour; `None` if it is further (a particle that jumped more than a subdomain).
    pub fn direction_to(&self, a: usize, target: usize) -> Option<usize> {
        let (p, c) = (self.dims[a], self.coords[a]);
        if target == c {
            return None;
        }
        if self.periodic[a] {
            let d = (target + p - c) % p;
            if d == 1 {
                Some(1)
            } else if d == p - 1 {
                Some(0)
            } else {
                None
            }
        } else if target + 1 == c {
            Some(0)
        } else if target == c + 1 {
            Some(1)
        } else {
            None
        }
    }

    /// Refuse subdomains thinner than the halo: ghosts come from direct neighbours only.
    pub fn check_halo(&self, halo: f64) -> Result<()> {
        self.check_halo3([halo; 3])
    }

    /// [`Self::check_halo`] with a halo per axis (a deformed cell's, in the frame's units).
    pub fn check_halo3(&self, halos: [f64; 3]) -> Result<()> {
        for a in 0..3 {
            let halo = halos[a];
            for k in 0..self.dims[a] {
                let w = self.cuts[a][k + 1] - self.cuts[a][k];
                if self.dims[a] > 1 && w.is_finite() && w < halo {
                    return Err(Error::Input(format!(
                        "rank grid {}×{}×{}: subdomains along {} are {:.4e} m wide, thinner \
                         than the halo {:.4e} m (2·max radius + skin)",
                        self.dims[0],
                        self.dims[1],
                        self.dims[2],
                        ["x", "y", "z"][a],
                        w,
                        halo
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Subdomain widths along each axis for a grid (finite ones only matter).
fn widths_ok(dims: [usize; 3], ext: V3, periodic: [bool; 3], halo: f64) -> bool {
    (0..3).all(|a| {
        let p = dims[a];
        if p == 1 {
            return true;
        }
        if periodic[a] {
            ext[a] / p as f64 >= halo
        } else {
            // interior slabs are ext/p wide (the outer two are half-infinite)
            p == 2 || ext[a] / p as f64 >= halo
        }
    })
}

/// Volume of the ghost layers of a grid, summed over its subdomains: each subdomain of the
/// `ext` box (cell lengths on periodic axes, the particles' bounding box on open ones) is
/// grown by `halo` on every face that has a neighbour — both faces along a periodic axis
/// (its own images when the axis is not cut), the inner faces along an open one. A measure of
/// the ghosts a grid makes and exchanges (the cut area alone misses that thin slabs carry
/// relatively more ghosts, and that the edges and corners of a 3-D cut add their own).
fn ghost_volume(dims: [usize; 3], ext: V3, periodic: [bool; 3], halo: f64) -> f64 {
    let w = V3::from_fn(|a, _| ext[a].max(1e-300) / dims[a] as f64);
    let mut total = 0.0;
    for i in 0..dims[0] {
        for j in 0..dims[1] {
            for k in 0..dims[2] {
                let c = [i, j, k];
                let grown: f64 = (0..3)
                    .map(|a| {
                        let faces = if periodic[a] {
                            2
                        } else {
                            (c[a] > 0) as usize + (c[a] + 1 < dims[a]) as usize
                        };
                        w[a] + faces as f64 * halo
                    })
                    .product();
                total += grown - w.x * w.y * w.z;
            }
        }
    }
    total
}

/// All (px, py, pz) with px·py·pz = n.
fn factorisations(n: usize) -> Vec<[usize; 3]> {
    let mut out = Vec::new();
    for px in 1..=n {
        if !n.is_multiple_of(px) {
            continue;
        }
        for py in 1..=n / px {
            if (n / px).is_multiple_of(py) {
                out.push([px, py, n / px / py]);
            }
        }
    }
    out
}

/// Choose the rank grid for `n` ranks: the factorisation with the least ghost volume
/// ([`ghost_volume`]: the ghosts made and refreshed every step) whose subdomains are at least
/// `halo` wide; ties prefer cutting x, then y (gravity usually points along z, where the
/// packing changes most). `ext` are the extents that get cut (cell lengths on periodic axes,
/// the particles' bounding box on open ones). Impossible → an error naming the largest rank
/// count that works. (The chute ×4 at 16 ranks: 4×2×2, where the cut area chose 8×1×2 with
/// 8 % more time per step, issue 19.)
pub fn choose_dims(n: usize, ext: V3, periodic: [bool; 3], halo: f64) -> Result<[usize; 3]> {
    let best = |n: usize| {
        factorisations(n)
            .into_iter()
            .filter(|&d| widths_ok(d, ext, periodic, halo))
            .min_by(|&a, &b| {
                let (sa, sb) = (
                    ghost_volume(a, ext, periodic, halo),
                    ghost_volume(b, ext, periodic, halo),
                );
                sa.partial_cmp(&sb)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.cmp(&a))
            })
    };
    if let Some(d) = best(n) {
        return Ok(d);
    }
    let (k, d) = (1..n)
        .rev()
        .find_map(|k| best(k).map(|d| (k, d)))
        .unwrap_or((1, [1, 1, 1]));
    Err(Error::Input(format!(
        "{n} ranks cannot split this scene: every rank grid has subdomains thinner than the \
         halo {halo:.4e} m (2·max radius + skin). The largest rank count that works is {k} \
         (grid {}×{}×{})",
        d[0], d[1], d[2]
    )))
}

/// Check a user-given grid against the rank count and the halo.
pub fn check_dims(
    dims: [usize; 3],
    n: usize,
    ext: V3,
    periodic: [bool; 3],
    halo: f64,
) -> Result<()> {
    if dims.iter().product::<usize>() != n || dims.contains(&0) {
        return Err(Error::Input(format!(
            "rank grid {}×{}×{} does not match the {n} ranks of this job",
            dims[0], dims[1], dims[2]
        )));
    }
    if !widths_ok(dims, ext, periodic, halo) {
        let alt = choose_dims(n, ext, periodic, halo)
            .map(|d| format!("use {}×{}×{} instead", d[0], d[1], d[2]))
            .unwrap_or_else(|e| e.to_string());
        return Err(Error::Input(format!(
            "rank grid {}×{}×{} makes subdomains thinner than the halo {halo:.4e} m: {alt}",
            dims[0], dims[1], dims[2]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_prefers_balanced_grids() {
        let e = V3::repeat(1.0);
        assert_eq!(choose_dims(1, e, [false; 3], 0.1).unwrap(), [1, 1, 1]);
        assert_eq!(choose_dims(2, e, [false; 3], 0.1).unwrap(), [2, 1, 1]);
        assert_eq!(choose_dims(4, e, [false; 3], 0.1).unwrap(), [2, 2, 1]);
        assert_eq!(choose_dims(8, e, [false; 3], 0.1).unwrap(), [2, 2, 2]);
        // a long box is cut along its length
        let long = V3::new(8.0, 1.0, 1.0);
        assert_eq!(choose_dims(4, long, [false; 3], 0.1).unwrap(), [4, 1, 1]);
    }

    /// The chute ×4 (periodic 80 × 40 in x, y; particles 37.3 deep along open z; halo 1.1 d) at
    /// 16 ranks: the ghost volume prefers 4×2×2 (measured 8 % faster) to 8×1×2, which has the
    /// same cut area; and it counts the ghost volume of a small hand-made case right.
    #[test]
    fn grids_minimise_the_ghost_volume() {
        let chute4 = V3::new(80.0, 40.0, 37.3);
        let per = [true, true, false];
        assert_eq!(choose_dims(16, chute4, per, 1.1).unwrap(), [4, 2, 2]);
        // 2 ranks along open x of a unit cube: each grows by h on one face
        let g = ghost_volume([2, 1, 1], V3::repeat(1.0), [false; 3], 0.1);
        assert!((g - 2.0 * 0.1 * 1.0 * 1.0).abs() < 1e-12, "{g}");
        // one rank, periodic x: both faces, the images of itself
        let g = ghost_volume([1, 1, 1], V3::repeat(1.0), [true, false, false], 0.1);
        assert!((g - 0.2).abs() < 1e-12, "{g}");
    }

    #[test]
    fn thin_subdomains_are_refused_with_a_suggestion() {
        let e = V3::new(1.0, 1.0, 1.0);
        // halo 0.3: at most 3 slabs per periodic axis
        let err = choose_dims(64, e, [true; 3], 0.3).unwrap_err().to_string();
        assert!(err.contains("largest rank count that works is 27"), "{err}");
        assert!(check_dims([4, 1, 1], 4, e, [true; 3], 0.3).is_err());
        assert!(check_dims([2, 2, 1], 4, e, [true; 3], 0.3).is_ok());
        assert!(check_dims([2, 2, 2], 4, e, [true; 3], 0.3).is_err());
    }

    #[test]
    fn ownership_partitions_space() {
        let d = |c| {
            Decomp::new(
                [3, 1, 1],
                c,
                [true, false, false],
                V3::zeros(),
                V3::repeat(3.0),
                V3::repeat(0.5),
                V3::repeat(2.5),
            )
        };
        let ranks: Vec<_> = (0..3).map(|k| d([k, 0, 0])).collect();
        for x in [0.0, 0.999, 1.0, 1.5, 2.0, 2.9999] {
            for y in [-100.0, 0.0, 100.0] {
                let p = V3::new(x, y, 1e9);
                assert_eq!(ranks.iter().filter(|r| r.owns(&p)).count(), 1, "{p:?}");
            }
        }
        assert_eq!(ranks[0].direction_to(0, 2), Some(0));
        assert_eq!(ranks[2].direction_to(0, 0), Some(1));
        assert_eq!(ranks[0].image_shift(0, 0), 1);
        assert_eq!(ranks[2].image_shift(0, 1), -1);
        assert_eq!(ranks[1].image_shift(0, 1), 0);
        assert_eq!(ranks[0].has_neighbours(1), [false, false]);
    }
}
