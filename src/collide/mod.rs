//! Broad phase with a Verlet skin (thesis §2.1.3.2 eq. 2.10–2.12, digest A2.5): a linked-cell
//! grid finds every pair whose spheres are closer than `skin` (gap), so no contact can appear
//! before some particle has moved more than skin/2 — the trigger of the next rebuild.
//!
//! Chosen over the thesis' sweep-and-prune because it is O(n), trivially parallel with rayon and
//! maps onto the MPI halo; SAP's advantage (wide size distributions) does not apply to the
//! benchmark packings (see docs/ARCHITECTURE.md).

use crate::contact::geom::branch;
use crate::contact::store::Candidate;
use crate::contact::Wall;
use crate::particles::Particles;
use crate::V3;
use rayon::prelude::*;

/// Owned particles per rayon task in the grid search.
const CHUNK: usize = 1024;

/// Reusable buffers of the cell grid (no allocation once warm).
#[derive(Clone, Default, Debug)]
pub struct CellGrid {
    cell_of: Vec<u32>,
    start: Vec<u32>,
    items: Vec<u32>,
    fill: Vec<u32>,
    chunks: Vec<Vec<Candidate>>,
    lo: V3,
    h: f64,
    dims: [usize; 3],
}

impl CellGrid {
    fn cell_coords(&self, x: &V3) -> [usize; 3] {
        let mut c = [0usize; 3];
        for a in 0..3 {
            let k = ((x[a] - self.lo[a]) / self.h).floor();
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
        self.fill.clear();
        self.fill.extend_from_slice(&self.start);
        for (p, &c) in self.cell_of.iter().enumerate() {
            self.items[self.fill[c as usize] as usize] = p as u32;
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
        ps.pos[i]
            + V3::new(
                c[0] as f64 * cell.x,
                c[1] as f64 * cell.y,
                c[2] as f64 * cell.z,
            )
    }
}

/// Candidate pairs among `ps` with gap < `skin`: every owned–owned pair once and every
/// owned–ghost pair, sorted by key (gid1 < gid2; particle 1 = lower gid). Pairs of two
/// particles with all DOFs blocked are skipped (they can exert nothing on anything).
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
            neighbours_of(ps, g, i, skin, cell, buf);
        }
    });
    out.clear();
    for c in &chunks {
        out.extend_from_slice(c);
    }
    grid.chunks = chunks;
    out.par_sort_unstable();
}

fn neighbours_of(
    ps: &Particles,
    g: &CellGrid,
    i: usize,
    skin: f64,
    cell: &V3,
    buf: &mut Vec<Candidate>,
) {
    let c = g.cell_coords(&ps.pos[i]);
    let (gi, ri) = (ps.gid[i], ps.radius[i]);
    let fixed_i = ps.blocked[i] == crate::particles::BLOCK_ALL;
    let lo = |a: usize| c[a].saturating_sub(1);
    let hi = |a: usize| (c[a] + 1).min(g.dims[a] - 1);
    for cz in lo(2)..=hi(2) {
        for cy in lo(1)..=hi(1) {
            for cx in lo(0)..=hi(0) {
                let k = g.index([cx, cy, cz]);
                for &j in &g.items[g.start[k] as usize..g.start[k + 1] as usize] {
                    let j = j as usize;
                    let gj = ps.gid[j];
                    // Owned–owned pairs once (from the lower gid); owned–ghost from the owned side.
                    if j == i || (j < ps.n_owned && gj < gi) {
                        continue;
                    }
                    if fixed_i && ps.blocked[j] == crate::particles::BLOCK_ALL {
                        continue;
                    }
                    let l = branch(ps.pos[i], ps.pos[j], ps.image[i], ps.image[j], cell);
                    let reach = ri + ps.radius[j] + skin;
                    if l.norm_squared() < reach * reach {
                        buf.push(if gi < gj {
                            Candidate {
                                key: (gi, gj),
                                i: i as u32,
                                j: j as u32,
                            }
                        } else {
                            Candidate {
                                key: (gj, gi),
                                i: j as u32,
                                j: i as u32,
                            }
                        });
                    }
                }
            }
        }
    }
}

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
                });
            }
        }
    }
    out.sort_unstable_by_key(|c| c.key);
}

/// Brute-force reference of [`sphere_candidates`] (tests only; O(n²)).
pub fn brute_force_candidates(ps: &Particles, skin: f64, cell: &V3) -> Vec<Candidate> {
    let mut out = Vec::new();
    for i in 0..ps.n_owned {
        for j in 0..ps.len() {
            if j == i || (j < ps.n_owned && ps.gid[j] < ps.gid[i]) {
                continue;
            }
            let l = branch(ps.pos[i], ps.pos[j], ps.image[i], ps.image[j], cell);
            let reach = ps.radius[i] + ps.radius[j] + skin;
            if l.norm_squared() < reach * reach {
                let (a, b) = if ps.gid[i] < ps.gid[j] {
                    (i, j)
                } else {
                    (j, i)
                };
                out.push(Candidate {
                    key: (ps.gid[a], ps.gid[b]),
                    i: a as u32,
                    j: b as u32,
                });
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

    #[test]
    fn grid_equals_brute_force_on_random_clouds() {
        for (seed, skin) in [(1u64, 0.0), (2, 0.3), (3, 1.0), (4, 0.05)] {
            let ps = cloud(800, 20.0, seed);
            let mut grid = CellGrid::default();
            let mut out = Vec::new();
            let cell = V3::repeat(1.0);
            sphere_candidates(&ps, skin, &cell, &mut grid, &mut out);
            let bf = brute_force_candidates(&ps, skin, &cell);
            assert!(!bf.is_empty());
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
        assert_eq!(out, brute_force_candidates(&ps, 0.1, &V3::repeat(1.0)));
    }
}
