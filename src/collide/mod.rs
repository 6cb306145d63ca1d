//! Broad phase with a Verlet skin (thesis §2.1.3.2 eq. 2.10–2.12, digest A2.5): a linked-cell
//! grid finds every pair whose spheres are closer than `skin` (gap), so no contact can appear
//! before some particle has moved more than skin/2 — the trigger of the next rebuild.
//!
//! Chosen over the thesis' sweep-and-prune because it is O(n), trivially parallel with rayon and
//! maps onto the MPI halo; SAP's advantage (wide size distributions) does not apply to the
//! benchmark packings (see docs/ARCHITECTURE.md).

use crate::contact::geom::{branch, image_shift};
use crate::contact::store::Candidate;
use crate::contact::Wall;
use crate::particles::{Particles, BLOCK_ALL};
use crate::V3;
use rayon::prelude::*;

/// Owned particles per rayon task in the grid search.
const CHUNK: usize = 1024;

/// Reusable buffers of the cell grid (no allocation once warm).
#[derive(Clone, Default, Debug)]
pub struct CellGrid {
    cell_of: Vec<u32>,
    start: Vec<u32>,
    /// Particle index of each binned entry, in cell order.
    items: Vec<u32>,
    /// Binned position (image-shifted) and radius of each entry, in cell order: the search
    /// streams these instead of gathering `pos`, `image` and `radius` particle by particle.
    xr: Vec<[f64; 4]>,
    fill: Vec<u32>,
    chunks: Vec<Vec<Candidate>>,
    lo: V3,
    h: f64,
    dims: [usize; 3],
}

/// Relative margin on squared distances in the candidate and near tests. The search measures
/// image-shifted coordinates, which may differ from the exact branch vector ([`branch`]) by
/// round-off; the margin makes every pair that the exact test accepts a candidate (and every
/// touching pair "near") on any rank layout. Extra pairs at the margin are harmless: they
/// cannot touch before the next rebuild.
const MARGIN: f64 = 1.0 + 1e-9;

impl CellGrid {
    fn cell_coords(&self, x: &V3) -> [usize; 3] {
        let mut c = [0usize; 3];
        for a in 0..3 {
            // `as` truncates: the floor for k ≥ 0 (and a negative k is clamped to 0 either
            // way), without the libm call `floor` is on baseline x86-64
            let k = (x[a] - self.lo[a]) / self.h;
            c[a] = (k.max(0.0) as usize).min(self.dims[a] - 1);
        }
        c
    }

    fn index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// Bin all particles (owned and ghosts, ghosts at their image positions), cell size ≥
    /// `h_min`.
    fn bin(&mut self, ps: &Particles, h_min: f64, cell: &V3) {
        let n = ps.len();
        let mut lo = V3::repeat(f64::INFINITY);
        let mut hi = V3::repeat(f64::NEG_INFINITY);
        for i in 0..n {
            let x = image_pos(ps, i, cell);
            lo = lo.inf(&x);
            hi = hi.sup(&x);
        }
        if n == 0 {
            lo = V3::zeros();
            hi = V3::zeros();
        }
        let ext = hi - lo;
        // Cap the cell count near the particle count so far-flung particles cannot make the
        // grid explode in memory.
        let mut h = h_min.max(1e-300);
        loop {
            let cells: f64 = (0..3).map(|a| (ext[a] / h).floor() + 1.0).product();
            if cells <= 2.0 * n as f64 + 64.0 {
                break;
            }
            h *= 1.26;
        }
        self.lo = lo;
        self.h = h;
        for a in 0..3 {
            self.dims[a] = (ext[a] / h).floor() as usize + 1;
        }
        let ncell = self.dims.iter().product::<usize>();
        self.cell_of.clear();
        self.start.clear();
        self.start.resize(ncell + 1, 0);
        for i in 0..n {
            let c = self.index(self.cell_coords(&image_pos(ps, i, cell))) as u32;
            self.cell_of.push(c);
            self.start[c as usize + 1] += 1;
        }
        for k in 0..ncell {
            self.start[k + 1] += self.start[k];
        }
        self.items.clear();
        self.items.resize(n, 0);
        self.xr.clear();
        self.xr.resize(n, [0.0; 4]);
        self.fill.clear();
        self.fill.extend_from_slice(&self.start);
        for (p, &c) in self.cell_of.iter().enumerate() {
            let s = self.fill[c as usize] as usize;
            let x = image_pos(ps, p, cell);
            self.items[s] = p as u32;
            self.xr[s] = [x.x, x.y, x.z, ps.radius[p]];
            self.fill[c as usize] += 1;
        }
    }
}

/// Where a particle copy sits for binning: its coordinates shifted by its periodic image
/// (only for binning: contact geometry uses [`branch`], which never pre-shifts).
#[inline]
fn image_pos(ps: &Particles, i: usize, cell: &V3) -> V3 {
    let c = ps.image[i];
    if c == [0, 0, 0] {
        ps.pos[i]
    } else {
        ps.pos[i] + image_shift(c, cell)
    }
}

/// The candidate for particles a and b (local indices), particle 1 = the lower gid.
#[inline]
fn candidate(ps: &Particles, a: usize, b: usize, near: bool) -> Candidate {
    let (ga, gb) = (ps.gid[a], ps.gid[b]);
    let (i, j) = if ga < gb { (a, b) } else { (b, a) };
    Candidate {
        key: (ga.min(gb), ga.max(gb)),
        i: i as u32,
        j: j as u32,
        near,
    }
}

/// Candidate pairs among `ps` with gap < `skin`: every owned–owned pair once and every
/// owned–ghost pair, grouped by the pair's lower local index in index (space-filling curve)
/// order — the order the contact loop wants, so no sort is needed. Particle 1 of each
/// candidate has the lower gid; `near` marks pairs that may touch now (gap ≤ 0, with
/// the relative margin `MARGIN`). Pairs of two particles with all DOFs blocked are skipped (they can exert
/// nothing on anything).
pub fn sphere_candidates(
    ps: &Particles,
    skin: f64,
    cell: &V3,
    grid: &mut CellGrid,
    out: &mut Vec<Candidate>,
) {
    let rmax = ps.radius.iter().cloned().fold(0.0, f64::max);
    grid.bin(ps, 2.0 * rmax + skin, cell);
    let n_owned = ps.n_owned;
    let nchunks = n_owned.div_ceil(CHUNK);
    grid.chunks.resize_with(nchunks, Vec::new);
    let mut chunks = std::mem::take(&mut grid.chunks);
    let g = &*grid;
    chunks.par_iter_mut().enumerate().for_each(|(c, buf)| {
        buf.clear();
        for i in c * CHUNK..((c + 1) * CHUNK).min(n_owned) {
            neighbours_of(ps, g, i, skin, buf);
        }
    });
    out.clear();
    for c in &chunks {
        out.extend_from_slice(c);
    }
    grid.chunks = chunks;
}

/// Candidates of owned particle i with every particle of higher local index (owned–owned
/// pairs once; ghosts come after the owned particles, so owned–ghost pairs are all found
/// here). The three cells along x of each (y, z) row are contiguous in the binned arrays.
fn neighbours_of(ps: &Particles, g: &CellGrid, i: usize, skin: f64, buf: &mut Vec<Candidate>) {
    let xi = ps.pos[i]; // owned: image 0
    let c = g.cell_coords(&xi);
    let ri = ps.radius[i];
    let fixed_i = ps.blocked[i] == BLOCK_ALL;
    let dist2 = |xr: &[f64; 4]| {
        let d = [xr[0] - xi.x, xr[1] - xi.y, xr[2] - xi.z];
        d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    };
    let lo = |a: usize| c[a].saturating_sub(1);
    let hi = |a: usize| (c[a] + 1).min(g.dims[a] - 1);
    for cz in lo(2)..=hi(2) {
        for cy in lo(1)..=hi(1) {
            let k0 = g.index([lo(0), cy, cz]);
            let k1 = g.index([hi(0), cy, cz]);
            let (s0, s1) = (g.start[k0] as usize, g.start[k1 + 1] as usize);
            // Two passes per block of entries: the test of every entry without a branch
            // (its index is written, the count advances only on a hit: ~1 entry in 10 is a
            // candidate, in no pattern a branch predictor could learn), then the hits.
            for b0 in (s0..s1).step_by(SCAN) {
                let b1 = (b0 + SCAN).min(s1);
                let mut hit = [0u32; SCAN];
                let mut nh = 0;
                for (s, (xr, &j)) in g.xr[b0..b1].iter().zip(&g.items[b0..b1]).enumerate() {
                    let d2 = dist2(xr);
                    let reach = ri + xr[3] + skin;
                    hit[nh] = s as u32;
                    nh += ((d2 < reach * reach * MARGIN) & (j as usize > i)) as usize;
                }
                for &s in &hit[..nh] {
                    let (xr, j) = (&g.xr[b0 + s as usize], g.items[b0 + s as usize] as usize);
                    if fixed_i && ps.blocked[j] == BLOCK_ALL {
                        continue;
                    }
                    let touch = ri + xr[3];
                    buf.push(candidate(ps, i, j, dist2(xr) <= touch * touch * MARGIN));
                }
            }
        }
    }
}

/// Entries per block of the branch-free candidate test (a stack buffer of hits).
const SCAN: usize = 64;

/// Sphere–wall candidates (owned spheres whose gap to the wall is < `skin`), sorted by
/// (gid, wall index). `j` holds the wall index.
pub fn wall_candidates(ps: &Particles, walls: &[Wall], skin: f64, out: &mut Vec<Candidate>) {
    out.clear();
    for i in 0..ps.n_owned {
        for (w, wall) in walls.iter().enumerate() {
            let gap = (ps.pos[i] - wall.point).dot(&wall.normal) - ps.radius[i];
            if gap < skin {
                out.push(Candidate {
                    key: (ps.gid[i], w as u64),
                    i: i as u32,
                    j: w as u32,
                    near: true,
                });
            }
        }
    }
    out.sort_unstable_by_key(|c| c.key);
}

/// Brute-force reference of [`sphere_candidates`] (tests only; O(n²)), with the exact branch
/// vector; sorted (compare with a sorted [`sphere_candidates`] list).
pub fn brute_force_candidates(ps: &Particles, skin: f64, cell: &V3) -> Vec<Candidate> {
    let mut out = Vec::new();
    for i in 0..ps.n_owned {
        for j in i + 1..ps.len() {
            if ps.blocked[i] == BLOCK_ALL && ps.blocked[j] == BLOCK_ALL {
                continue;
            }
            let l = branch(ps.pos[i], ps.pos[j], ps.image[i], ps.image[j], cell);
            let touch = ps.radius[i] + ps.radius[j];
            let reach = touch + skin;
            let d2 = l.norm_squared();
            if d2 < reach * reach * MARGIN {
                out.push(candidate(ps, i, j, d2 <= touch * touch * MARGIN));
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::particles::Particle;

    /// Small deterministic generator for test clouds.
    fn lcg(s: &mut u64) -> f64 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    fn cloud(n: usize, box_len: f64, seed: u64) -> Particles {
        let mut s = seed;
        let mut ps = Particles::default();
        for k in 0..n {
            let x = V3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * box_len;
            let r = 0.5 + 0.5 * lcg(&mut s);
            // gids deliberately not in index order
            ps.push_owned(&Particle::sphere((k as u64 * 7919) % 100_003, x, r, 1.0, 0));
        }
        ps
    }

    /// The grid's list comes grouped by the lower local index, ascending, with particle 1 the
    /// lower gid.
    fn check_grouped(ps: &Particles, out: &[Candidate]) {
        let lo = |c: &Candidate| c.i.min(c.j);
        assert!(out.windows(2).all(|w| lo(&w[0]) <= lo(&w[1])));
        assert!(out
            .iter()
            .all(|c| ps.gid[c.i as usize] < ps.gid[c.j as usize]));
    }

    #[test]
    fn grid_equals_brute_force_on_random_clouds() {
        for (seed, skin) in [(1u64, 0.0), (2, 0.3), (3, 1.0), (4, 0.05)] {
            let ps = cloud(800, 20.0, seed);
            let mut grid = CellGrid::default();
            let mut out = Vec::new();
            let cell = V3::repeat(1.0);
            sphere_candidates(&ps, skin, &cell, &mut grid, &mut out);
            check_grouped(&ps, &out);
            out.sort_unstable();
            let bf = brute_force_candidates(&ps, skin, &cell);
            assert!(!bf.is_empty());
            assert!(bf.iter().any(|c| c.near));
            assert!(skin == 0.0 || bf.iter().any(|c| !c.near));
            assert_eq!(out, bf, "seed {seed} skin {skin}");
        }
    }

    #[test]
    fn grid_equals_brute_force_with_periodic_ghosts() {
        let d = crate::domain::Domain {
            lo: V3::zeros(),
            hi: V3::repeat(20.0),
            periodic: [true, true, false],
        };
        for (seed, skin) in [(5u64, 0.0), (6, 0.4)] {
            let mut ps = cloud(600, 20.0, seed);
            d.build_ghosts(&mut ps, 2.0 + skin);
            assert!(ps.n_ghosts() > 50);
            let (mut grid, mut out) = (CellGrid::default(), Vec::new());
            sphere_candidates(&ps, skin, &d.size(), &mut grid, &mut out);
            check_grouped(&ps, &out);
            out.sort_unstable();
            let bf = brute_force_candidates(&ps, skin, &d.size());
            assert!(bf
                .iter()
                .any(|c| ps.image[c.i as usize] != ps.image[c.j as usize]));
            assert_eq!(out, bf, "seed {seed} skin {skin}");
        }
    }

    #[test]
    fn far_flung_particle_does_not_blow_up_grid() {
        let mut ps = cloud(100, 10.0, 9);
        ps.push_owned(&Particle::sphere(
            1_000_000,
            V3::new(1e9, 0.0, 0.0),
            1.0,
            1.0,
            0,
        ));
        let mut grid = CellGrid::default();
        let mut out = Vec::new();
        sphere_candidates(&ps, 0.1, &V3::repeat(1.0), &mut grid, &mut out);
        assert!(grid.start.len() < 1000);
        out.sort_unstable();
        assert_eq!(out, brute_force_candidates(&ps, 0.1, &V3::repeat(1.0)));
    }
}
