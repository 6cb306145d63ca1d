//! Broad phase with a Verlet skin (thesis §2.1.3.2 eq. 2.10–2.12, digest A2.5): a linked-cell
//! grid finds every pair whose spheres are closer than `skin` (gap), so no contact can appear
//! before some particle has moved more than skin/2 — the trigger of the next rebuild.
//!
//! Chosen over the thesis' sweep-and-prune because it is O(n), trivially parallel with rayon and
//! maps onto the MPI halo; SAP's advantage (wide size distributions) does not apply to the
//! benchmark packings (see docs/ARCHITECTURE.md).

use crate::cell::Cell;
use crate::contact::geom::branch;
use crate::contact::store::Candidate;
use crate::contact::Wall;
use crate::integrate::Moved;
use crate::particles::{Particles, BLOCK_ALL};
use crate::V3;
use rayon::prelude::*;

/// Owned particles per rayon task in the grid search.
const CHUNK: usize = 1024;

/// Particles per rayon task in the binning passes (a plain map per particle).
const BIN_CHUNK: usize = 4096;

/// Reusable buffers of the cell grid (no allocation once warm).
///
/// The grid is planned from the owned particles alone (`GridPlan`): the owned particles' bounding
/// box plus one cell on each side. Ghosts outside it are binned into the border cells (clamped),
/// which keeps the search exact (a ghost within reach of an owned particle lies at most one
/// cell beyond the border). Owned and ghost entries are binned separately, each in linear cell
/// order (x fastest): a row of three cells along x is one contiguous range of each.
#[derive(Clone, Default, Debug)]
pub struct CellGrid {
    /// Smallest cell edge: the caller's halo, so that [`order_by_cell`] (which runs before the
    /// ghosts exist) plans the same grid as the search.
    pub min_cell: f64,
    plan: GridPlan,
    /// Owned entries: the first entry of each cell (CSR, `ncell + 1`), each entry's particle,
    /// cell coordinates and packed (x, y, z, r).
    start_o: Vec<u32>,
    items_o: Vec<u32>,
    coords_o: Vec<[u32; 3]>,
    xr_o: Vec<[f64; 4]>,
    /// Ghost entries, binned the same way (image-shifted positions).
    start_g: Vec<u32>,
    items_g: Vec<u32>,
    xr_g: Vec<[f64; 4]>,
    cell_of: Vec<u32>,
    coords_p: Vec<[usize; 3]>,
    /// Owned positions in a deformed cell (`owned_sites`).
    sites: Vec<V3>,
    fill: Vec<u32>,
    chunks: Vec<Vec<Candidate>>,
}

/// Relative margin on squared distances in the candidate and near tests. The search measures
/// image-shifted coordinates, which may differ from the exact branch vector ([`branch`]) by
/// round-off; the margin makes every pair that the exact test accepts a candidate (and every
/// touching pair "near") on any rank layout. Extra pairs at the margin are harmless: they
/// cannot touch before the next rebuild.
const MARGIN: f64 = 1.0 + 1e-9;

/// The geometry of a cell grid: origin, cell edge, cells per axis.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct GridPlan {
    lo: V3,
    h: f64,
    dims: [usize; 3],
}

impl GridPlan {
    /// The grid over owned positions `pos` with cells of edge ≥ `h_min`: their bounding box
    /// and one cell more on each side, the cell count capped near the particle count (so that
    /// far-flung particles cannot make it explode in memory).
    fn new(pos: &[V3], h_min: f64) -> GridPlan {
        let n = pos.len();
        // the bounding box on rayon (minima and maxima: any order gives the same bits)
        let (mut lo, mut hi) = pos
            .par_chunks(BIN_CHUNK)
            .map(|c| {
                let mut b = (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY));
                for x in c {
                    b = (b.0.inf(x), b.1.sup(x));
                }
                b
            })
            .reduce(
                || (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY)),
                |a, b| (a.0.inf(&b.0), a.1.sup(&b.1)),
            );
        if n == 0 {
            lo = V3::zeros();
            hi = V3::zeros();
        }
        let ext = hi - lo;
        let mut h = h_min.max(1e-300);
        // Bounded rounds: 1.26^8192 exceeds any ratio of finite extent to h (≤ 1e609), so
        // the cap is met for finite positions long before; a non-finite extent (which the
        // set-up refuses and the step's escape check stops) must not spin forever.
        for _ in 0..8192 {
            let cells: f64 = (0..3).map(|a| (ext[a] / h).floor() + 3.0).product();
            if cells <= 2.0 * n as f64 + 64.0 {
                break;
            }
            h *= 1.26;
        }
        if !(h.is_finite() && ext.iter().all(|e| e.is_finite())) {
            // one cell per axis beyond the borders: coordinates clamp into it, nothing is
            // sized from the extent
            return GridPlan {
                lo,
                h: f64::INFINITY,
                dims: [3; 3],
            };
        }
        let dims = [0, 1, 2].map(|a| (ext[a] / h).floor() as usize + 3);
        GridPlan {
            lo: lo - V3::repeat(h),
            h,
            dims,
        }
    }

    fn n_cells(&self) -> usize {
        self.dims.iter().product()
    }

    /// Cell coordinates of x, clamped into the grid.
    #[inline]
    fn coords(&self, x: &V3) -> [usize; 3] {
        let mut c = [0usize; 3];
        for a in 0..3 {
            // `as` truncates: the floor for k ≥ 0 (and a negative k is clamped to 0 either
            // way), without the libm call `floor` is on baseline x86-64
            let k = (x[a] - self.lo[a]) / self.h;
            c[a] = (k.max(0.0) as usize).min(self.dims[a] - 1);
        }
        c
    }

    #[inline]
    fn index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }
}

/// The order of the owned particles that the grid search wants: by cell of the grid
/// [`sphere_candidates`] will plan (linear cell order, x fastest), ties by gid (deterministic).
/// `perm[new] = old`. In this order the search lists the candidates grouped by their lower
/// local index, and a particle's partners lie within about one layer of cells of it in memory
/// (chute: ~1 000 particles, ~130 KB of particle data: L2-resident). Counting sort: O(n).
/// `scratch`: reusable buffers.
pub fn order_by_cell(
    ps: &Particles,
    cell: &Cell,
    min_cell: f64,
    perm: &mut Vec<u32>,
    scratch: &mut OrderScratch,
) {
    let OrderScratch {
        bins: [cells, start, count],
        sites,
    } = scratch;
    let pos = owned_sites(ps, cell, sites);
    let plan = GridPlan::new(pos, min_cell);
    pos.par_iter()
        .with_min_len(BIN_CHUNK)
        .map(|x| plan.index(plan.coords(x)) as u32)
        .collect_into_vec(cells);
    counting_bin(cells, plan.n_cells(), start, count, perm);
    // `count[c]` is now the end of cell c: sort each cell's few particles by gid.
    let mut s = 0;
    for &e in &count[..plan.n_cells()] {
        let seg = &mut perm[s..e as usize];
        if seg.len() > 1 {
            seg.sort_unstable_by_key(|&p| ps.gid[p as usize]);
        }
        s = e as usize;
    }
}

/// Reusable buffers of [`order_by_cell`].
#[derive(Clone, Default, Debug)]
pub struct OrderScratch {
    bins: [Vec<u32>; 3],
    sites: Vec<V3>,
}

/// The owned particles' positions in the cell: `ps.pos` itself for a cell that never deformed
/// (owned particles carry no image), else x + H h with their home images (a deformed cell moves
/// no position, `Domain::wrap_owned`), computed into `buf`.
fn owned_sites<'a>(ps: &'a Particles, cell: &Cell, buf: &'a mut Vec<V3>) -> &'a [V3] {
    let n = ps.n_owned;
    if !cell.deformed {
        return &ps.pos[..n];
    }
    buf.clear();
    buf.par_extend((0..n).into_par_iter().map(|i| image_pos(ps, i, cell)));
    buf
}

impl CellGrid {
    /// Bin all particles: owned entries and ghosts (at their image positions) apart.
    fn bin(&mut self, ps: &Particles, h_min: f64, cell: &Cell) {
        let n_owned = ps.n_owned;
        let mut sites = std::mem::take(&mut self.sites);
        let pos = owned_sites(ps, cell, &mut sites);
        let plan = GridPlan::new(pos, h_min.max(self.min_cell));
        self.plan = plan;
        let ncell = plan.n_cells();
        // owned (each particle's cell coordinates once: three divisions); the passes per
        // owned particle on rayon (chute, 2 threads: binning 1.0 → 0.8 ms per rebuild)
        pos.par_iter()
            .with_min_len(BIN_CHUNK)
            .map(|x| {
                let c = plan.coords(x);
                (c, plan.index(c) as u32)
            })
            .unzip_into_vecs(&mut self.coords_p, &mut self.cell_of);
        counting_bin(
            &self.cell_of,
            ncell,
            &mut self.start_o,
            &mut self.fill,
            &mut self.items_o,
        );
        let coords_p = &self.coords_p;
        self.items_o
            .par_iter()
            .with_min_len(BIN_CHUNK)
            .map(|&p| {
                let (x, c) = (pos[p as usize], coords_p[p as usize]);
                (
                    [c[0] as u32, c[1] as u32, c[2] as u32],
                    [x.x, x.y, x.z, ps.radius[p as usize]],
                )
            })
            .unzip_into_vecs(&mut self.coords_o, &mut self.xr_o);
        // ghosts (few: sequential)
        self.cell_of.clear();
        self.cell_of.extend(
            (n_owned..ps.len()).map(|p| plan.index(plan.coords(&image_pos(ps, p, cell))) as u32),
        );
        counting_bin(
            &self.cell_of,
            ncell,
            &mut self.start_g,
            &mut self.fill,
            &mut self.items_g,
        );
        self.xr_g.clear();
        for g in self.items_g.iter_mut() {
            let p = n_owned + *g as usize;
            *g = p as u32;
            let x = image_pos(ps, p, cell);
            self.xr_g.push([x.x, x.y, x.z, ps.radius[p]]);
        }
        self.sites = sites;
    }
}

/// Counting sort of entries 0..n by `cell_of`: `start` (CSR over `ncell` cells) and `items`
/// (the entries in cell order, each cell's in entry order).
fn counting_bin(
    cell_of: &[u32],
    ncell: usize,
    start: &mut Vec<u32>,
    fill: &mut Vec<u32>,
    items: &mut Vec<u32>,
) {
    start.clear();
    start.resize(ncell + 1, 0);
    for &c in cell_of {
        start[c as usize + 1] += 1;
    }
    for k in 0..ncell {
        start[k + 1] += start[k];
    }
    fill.clear();
    fill.extend_from_slice(&start[..ncell]);
    items.clear();
    items.resize(cell_of.len(), 0);
    for (e, &c) in cell_of.iter().enumerate() {
        items[fill[c as usize] as usize] = e as u32;
        fill[c as usize] += 1;
    }
}

/// Where a particle copy sits for binning: its coordinates shifted by its periodic image
/// (only for binning: contact geometry uses [`branch`], which never pre-shifts).
#[inline]
fn image_pos(ps: &Particles, i: usize, cell: &Cell) -> V3 {
    let c = ps.image[i];
    if c == [0, 0, 0] {
        ps.pos[i]
    } else {
        ps.pos[i] + cell.shift(c)
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
/// owned–ghost pair. Particle 1 of each candidate has the lower gid; `near` marks pairs that
/// may touch now (gap ≤ 0, with the relative margin `MARGIN`). Pairs of two particles with all
/// DOFs blocked are skipped (they can exert nothing on anything).
///
/// The list comes grouped by owned entry in cell order; when the owned particles are in the
/// order of [`order_by_cell`] (with `grid.min_cell` as its `min_cell`), that is grouped by the
/// pair's lower local index, ascending: the order the contact loop wants, so no sort is needed.
/// Any other order gives the same set.
pub fn sphere_candidates(
    ps: &Particles,
    skin: f64,
    cell: &Cell,
    grid: &mut CellGrid,
    out: &mut Vec<Candidate>,
) {
    out.clear();
    for c in sphere_candidate_chunks(ps, skin, cell, grid).iter() {
        out.extend_from_slice(c);
    }
}

/// [`sphere_candidates`] as the search left them: one list per chunk of owned entries, in
/// order (`PairList::merge_chunks` takes them so, without a concatenation).
pub fn sphere_candidate_chunks<'g>(
    ps: &Particles,
    skin: f64,
    cell: &Cell,
    grid: &'g mut CellGrid,
) -> &'g mut [Vec<Candidate>] {
    let rmax = ps.radius.iter().cloned().fold(0.0, f64::max);
    grid.bin(ps, 2.0 * rmax + skin, cell);
    let n_owned = ps.n_owned;
    let nchunks = n_owned.div_ceil(CHUNK);
    grid.chunks.resize_with(nchunks, Vec::new);
    let mut chunks = std::mem::take(&mut grid.chunks);
    let g = &*grid;
    chunks.par_iter_mut().enumerate().for_each(|(c, buf)| {
        buf.clear();
        for s in c * CHUNK..((c + 1) * CHUNK).min(n_owned) {
            neighbours_of(ps, g, s, skin, buf);
        }
    });
    grid.chunks = chunks;
    &mut grid.chunks[..nchunks]
}

/// Candidates of the owned entry `s` (in cell order): with the owned entries after it in the
/// forward half of its 27-cell neighbourhood (its own cell and the next along x, the next row
/// along y, the next layer along z: five contiguous ranges, each owned–owned pair once), and
/// with the ghosts of all 27 cells (nine rows).
fn neighbours_of(ps: &Particles, g: &CellGrid, s: usize, skin: f64, buf: &mut Vec<Candidate>) {
    let i = g.items_o[s] as usize;
    let e = g.xr_o[s];
    let (xi, ri) = (V3::new(e[0], e[1], e[2]), e[3]);
    let c = g.coords_o[s].map(|v| v as usize);
    let d = g.plan.dims;
    let fixed_i = ps.blocked[i] == BLOCK_ALL;
    let lo = |a: usize| c[a].saturating_sub(1);
    let hi = |a: usize| (c[a] + 1).min(d[a] - 1);
    let row = |start: &[u32], y: usize, z: usize| {
        let k0 = g.plan.index([lo(0), y, z]);
        let k1 = g.plan.index([hi(0), y, z]);
        start[k0] as usize..start[k1 + 1] as usize
    };
    let mut scan = |xr: &[[f64; 4]], items: &[u32], r: std::ops::Range<usize>| {
        scan_range(ps, xi, ri, i, fixed_i, skin, &xr[r.clone()], &items[r], buf)
    };
    // owned, forward half: the rest of this cell and the next cell along x …
    let own_end = g.start_o[g.plan.index([hi(0), c[1], c[2]]) + 1] as usize;
    scan(&g.xr_o, &g.items_o, s + 1..own_end);
    // … the next row along y, the next layer along z
    if c[1] + 1 < d[1] {
        scan(&g.xr_o, &g.items_o, row(&g.start_o, c[1] + 1, c[2]));
    }
    if c[2] + 1 < d[2] {
        for y in lo(1)..=hi(1) {
            scan(&g.xr_o, &g.items_o, row(&g.start_o, y, c[2] + 1));
        }
    }
    // ghosts, all 27 cells
    if !g.items_g.is_empty() {
        for z in lo(2)..=hi(2) {
            for y in lo(1)..=hi(1) {
                scan(&g.xr_g, &g.items_g, row(&g.start_g, y, z));
            }
        }
    }
}

/// Test particle i (at `xi`, radius `ri`) against the binned entries `xr`/`items`, pushing the
/// candidates. Two passes per block of entries: the test of every entry without a branch (its
/// position is written, the count advances only on a hit: ~1 entry in 5 is a candidate, in no
/// pattern a branch predictor could learn), then the hits.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn scan_range(
    ps: &Particles,
    xi: V3,
    ri: f64,
    i: usize,
    fixed_i: bool,
    skin: f64,
    xr: &[[f64; 4]],
    items: &[u32],
    buf: &mut Vec<Candidate>,
) {
    let dist2 = |xr: &[f64; 4]| {
        let d = [xr[0] - xi.x, xr[1] - xi.y, xr[2] - xi.z];
        d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    };
    for b0 in (0..xr.len()).step_by(SCAN) {
        let b1 = (b0 + SCAN).min(xr.len());
        let mut hit = [0u8; SCAN];
        let mut nh = 0;
        for (s, e) in xr[b0..b1].iter().enumerate() {
            let reach = ri + e[3] + skin;
            hit[nh] = s as u8;
            nh += (dist2(e) < reach * reach * MARGIN) as usize;
        }
        for &s in &hit[..nh] {
            let (e, j) = (&xr[b0 + s as usize], items[b0 + s as usize] as usize);
            if fixed_i && ps.blocked[j] == BLOCK_ALL {
                continue;
            }
            let touch = ri + e[3];
            buf.push(candidate(ps, i, j, dist2(e) <= touch * touch * MARGIN));
        }
    }
}

/// Entries per block of the branch-free candidate test (a stack buffer of hits).
const SCAN: usize = 64;

/// The Verlet trigger: whether the candidate lists built with gap < `skin` still hold every
/// pair that may touch, given how far the particles `moved` since (over all ranks) and, if
/// there are walls, the largest squared wall displacement `walls`.
///
/// A sphere pair's gap shrinks by at most |Δx₁ − Δx₂|. The thesis bounds it by 2 max |Δx|
/// (eq. 2.10–2.12: rebuild once a particle moved skin/2); it is also bounded by the diagonal of
/// the box holding every Δx, which is the sharper bound when the particles move alike (a
/// flow, a settling bed: chute ~2× fewer rebuilds). The list is valid while either bound is ≤
/// `skin`. A sphere–wall gap shrinks by at most |Δx| + |Δw|. NaN displacements (∞ in
/// `d2max`) invalidate the lists. No particle may move more than `skin` either: a rebuild also
/// wraps, migrates and checks for escaped particles, which must not lag further behind.
pub fn still_valid(moved: &Moved, walls: Option<f64>, skin: f64) -> bool {
    if !moved.d2max.is_finite() {
        return false;
    }
    let dmax = moved.d2max.sqrt();
    let diag = (moved.hi - moved.lo).norm();
    let pairs = 2.0 * dmax <= skin || diag <= skin;
    let walls = walls.is_none_or(|w2| dmax + w2.sqrt() <= skin);
    pairs && walls && dmax <= skin
}

/// [`still_valid`] in a deforming periodic cell (issue 23). The displacements `moved` are
/// measured from the reference positions carried by the mean field (`integrate::Affine`): a
/// pair's branch vector is l = A l_ref + δ, A = H H_ref⁻¹ the cell's deformation since the
/// rebuild, |δ| ≤ min(2 max |Δx|, diag) the fluctuations. A pair that touches now, |l| ≤
/// r₁ + r₂ ≤ `two_rmax`, had |l_ref| ≤ κ (r₁ + r₂ + |δ|) with κ ≥ ‖A⁻¹‖₂ (`kappa`), so it was a
/// candidate (|l_ref| < r₁ + r₂ + skin) while (κ − 1)·2 r_max + κ |δ| ≤ skin.
pub fn still_valid_deforming(moved: &Moved, skin: f64, kappa: f64, two_rmax: f64) -> bool {
    if !(moved.d2max.is_finite() && kappa.is_finite()) {
        return false;
    }
    let dmax = moved.d2max.sqrt();
    let diag = (moved.hi - moved.lo).norm();
    let delta = (2.0 * dmax).min(if diag.is_finite() {
        diag
    } else {
        f64::INFINITY
    });
    (kappa - 1.0) * two_rmax + kappa * delta <= skin && dmax <= skin
}

/// Whether the next step's integrator should form the box of the displacements
/// ([`Moved`]), given the largest squared displacement `d2max` so far: once 2 max |Δx| nears
/// the skin. Before, [`still_valid`] needs no box; without it later, the trigger would fall
/// back on 2 max |Δx| alone (a particle moving 0.1 skin in one step would rebuild early).
pub fn box_wanted(d2max: f64, skin: f64) -> bool {
    2.0 * d2max.sqrt() > 0.8 * skin
}

/// Drop one of each twin pair of a subdomain with its own periodic images: the pair of owned
/// a with the image of owned b is also found as the pair of b with the image of a. The one
/// kept has its owned particle as particle 1 (the lower gid); `PairList::fold_images` then
/// refers it to b. `origin`: see `Halo::self_origins`.
pub fn drop_image_twins(cands: &mut [Vec<Candidate>], n_owned: usize, origin: &[u32]) {
    if origin.is_empty() {
        return;
    }
    cands.par_iter_mut().for_each(|ch| {
        ch.retain(|c| {
            let i = c.i as usize;
            i < n_owned || {
                let o = origin[i - n_owned];
                o == crate::particles::NO_ORIGIN || o == c.j
            }
        })
    });
}

/// Sphere–wall candidates (owned spheres whose gap to the wall is < `skin`), sorted by
/// (gid, wall index). `j` holds the wall index.
pub fn wall_candidates(ps: &Particles, walls: &[Wall], skin: f64, out: &mut Vec<Candidate>) {
    out.clear();
    for i in 0..ps.n_owned {
        for (w, wall) in walls.iter().enumerate() {
            let gap = wall.gap(ps.pos[i], ps.radius[i]);
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
pub fn brute_force_candidates(ps: &Particles, skin: f64, cell: &Cell) -> Vec<Candidate> {
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

    /// Put the owned particles in the order of [`order_by_cell`] for cells ≥ `min_cell`.
    fn sort_by_cell(ps: &mut Particles, min_cell: f64) {
        let mut perm = Vec::new();
        let cell = Cell::boxed(V3::zeros(), V3::repeat(1e9));
        order_by_cell(ps, &cell, min_cell, &mut perm, &mut Default::default());
        ps.permute_owned(&perm, &mut Default::default());
    }

    #[test]
    fn grid_equals_brute_force_on_random_clouds() {
        for (seed, skin, sorted) in [
            (1u64, 0.0, true),
            (2, 0.3, true),
            (3, 1.0, false),
            (4, 0.05, true),
            (4, 0.05, false),
        ] {
            let mut ps = cloud(800, 20.0, seed);
            let mut grid = CellGrid::default();
            if sorted {
                grid.min_cell = 2.0 + skin;
                sort_by_cell(&mut ps, grid.min_cell);
            }
            let mut out = Vec::new();
            let cell = Cell::boxed(V3::zeros(), V3::repeat(1.0));
            sphere_candidates(&ps, skin, &cell, &mut grid, &mut out);
            if sorted {
                check_grouped(&ps, &out);
            }
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
        let d = crate::domain::Domain::new(V3::zeros(), V3::repeat(20.0), [true, true, false]);
        for (seed, skin) in [(5u64, 0.0), (6, 0.4)] {
            let mut ps = cloud(600, 20.0, seed);
            let mut grid = CellGrid {
                min_cell: 2.0 + skin,
                ..Default::default()
            };
            sort_by_cell(&mut ps, grid.min_cell);
            d.build_ghosts(&mut ps, 2.0 + skin);
            assert!(ps.n_ghosts() > 50);
            let mut out = Vec::new();
            sphere_candidates(&ps, skin, &d.cell, &mut grid, &mut out);
            check_grouped(&ps, &out);
            out.sort_unstable();
            let bf = brute_force_candidates(&ps, skin, &d.cell);
            assert!(bf
                .iter()
                .any(|c| ps.image[c.i as usize] != ps.image[c.j as usize]));
            assert_eq!(out, bf, "seed {seed} skin {skin}");
        }
    }

    #[test]
    fn image_twins_are_dropped_and_folded_onto_their_origins() {
        use crate::contact::store::PairList;
        let d = crate::domain::Domain::new(V3::zeros(), V3::repeat(20.0), [true; 3]);
        let skin = 0.4;
        let mut ps = cloud(600, 20.0, 8);
        let mut grid = CellGrid::default();
        let origin = d.build_ghosts(&mut ps, 2.0 + skin);
        let n = ps.n_owned;
        assert!(ps.n_ghosts() > 100);
        // every ghost is a copy of its origin in another image (corner images too)
        for (g, &o) in origin.iter().enumerate() {
            let o = o as usize;
            assert!(o < n, "ghost {g} has no owned origin");
            assert_eq!((ps.gid[n + g], ps.pos[n + g]), (ps.gid[o], ps.pos[o]));
            assert_ne!(ps.image[n + g], ps.image[o]);
        }
        let mut out = Vec::new();
        sphere_candidates(&ps, skin, &d.cell, &mut grid, &mut out);
        let before = out.len();
        let mut chunks = [out];
        drop_image_twins(&mut chunks, n, &origin);
        let [out] = chunks;
        // one of each periodic twin dropped: the keys are unique, the set is the brute force's
        let mut keys: Vec<_> = out.iter().map(|c| c.key).collect();
        keys.sort_unstable();
        let mut bf: Vec<_> = brute_force_candidates(&ps, skin, &d.cell)
            .iter()
            .map(|c| c.key)
            .collect();
        bf.sort_unstable();
        let twins = bf.len();
        bf.dedup();
        assert!(twins - bf.len() > 50 && before - out.len() == twins - bf.len());
        assert!(keys.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(keys, bf);
        assert!(out.iter().all(|c| (c.i as usize) < n));
        // folded: both particles owned, the branch vector bit for bit the ghost's
        let mut pl = PairList::default();
        pl.merge(&out, false, false, |_| true);
        pl.set_shifts(&ps.image, &ps.radius, &d.cell);
        let want: Vec<V3> = (0..pl.len())
            .map(|k| {
                let (i, j) = (pl.i[k] as usize, pl.j[k] as usize);
                branch(ps.pos[i], ps.pos[j], ps.image[i], ps.image[j], &d.cell)
            })
            .collect();
        pl.fold_images(n, &origin);
        assert!(pl.i.iter().chain(&pl.j).all(|&p| (p as usize) < n));
        for (k, w) in want.iter().enumerate() {
            assert_eq!(pl.branch(k, &ps.pos), *w, "pair {k}");
        }
    }

    /// [`Moved`] of displacements `d`.
    fn moved_by(d: &[V3]) -> Moved {
        Moved::between(d, &vec![V3::zeros(); d.len()])
    }

    #[test]
    fn verlet_trigger_bounds() {
        let s = 1.0;
        let x = |v: f64| V3::new(v, 0.0, 0.0);
        // apart by ±0.3: 2 max|Δx| = 0.6 ≤ skin
        assert!(still_valid(&moved_by(&[x(0.3), x(-0.3)]), None, s));
        // ±0.6: both bounds 1.2
        assert!(!still_valid(&moved_by(&[x(0.6), x(-0.6)]), None, s));
        // a flow profile 0 … 0.9 (2 max|Δx| = 1.8, but the box is 0.9 wide)
        assert!(still_valid(&moved_by(&[x(0.0), x(0.5), x(0.9)]), None, s));
        // a uniform translation by 0.8, and by 1.2 (more than a skin: rebuild)
        assert!(still_valid(&moved_by(&[x(0.8), x(0.8)]), None, s));
        assert!(!still_valid(&moved_by(&[x(1.2), x(1.2)]), None, s));
        // walls: |Δx| + |Δw| ≤ skin
        assert!(still_valid(
            &moved_by(&[x(0.6), x(0.5)]),
            Some(0.3 * 0.3),
            s
        ));
        assert!(!still_valid(
            &moved_by(&[x(0.6), x(0.5)]),
            Some(0.5 * 0.5),
            s
        ));
        // NaN (∞ in d2max)
        let mut m = moved_by(&[x(0.0)]);
        m.d2max = f64::INFINITY;
        assert!(!still_valid(&m, None, s));
        // no particle anywhere
        assert!(still_valid(&Moved::NONE, None, s));
    }

    /// Move every particle of random clouds as far as the trigger allows, each its own way
    /// (displacements anywhere in a box of diagonal ~0.93 skin, about twice what the thesis'
    /// bound allows): every pair that touches after the move was a candidate before it.
    #[test]
    fn displacements_the_trigger_accepts_keep_every_contact_a_candidate() {
        let skin = 0.4;
        let (mut checked, mut lost_far) = (0, 0);
        for seed in 10..20u64 {
            let mut ps = cloud(500, 9.0, seed);
            let (mut grid, mut before) = (CellGrid::default(), Vec::new());
            sphere_candidates(
                &ps,
                skin,
                &Cell::boxed(V3::zeros(), V3::repeat(1.0)),
                &mut grid,
                &mut before,
            );
            let keys: std::collections::BTreeSet<_> = before.iter().map(|c| c.key).collect();
            let mut s = seed;
            let dir = V3::new(1.0, 0.3, -0.2).normalize();
            let d: Vec<V3> = (0..ps.len())
                .map(|_| {
                    // along the flow 0 … 0.85 skin, across it ±0.1 skin
                    let along = 0.85 * skin * lcg(&mut s);
                    let across = V3::new(0.0, 1.0, 0.0) * 0.2 * skin * (lcg(&mut s) - 0.5);
                    dir * along + across
                })
                .collect();
            let m = moved_by(&d);
            assert!(still_valid(&m, None, skin) && 2.0 * m.d2max.sqrt() > skin);
            // 1.7 times as far, the trigger refuses (and contacts do get lost)
            let far: Vec<V3> = d.iter().map(|d| d * 1.7).collect();
            assert!(!still_valid(&moved_by(&far), None, skin));
            let mut moved = ps.clone();
            for (x, d) in moved.pos.iter_mut().zip(&far) {
                *x += d;
            }
            lost_far +=
                brute_force_candidates(&moved, 0.0, &Cell::boxed(V3::zeros(), V3::repeat(1.0)))
                    .iter()
                    .filter(|c| c.near && !keys.contains(&c.key))
                    .count();
            for (x, d) in ps.pos.iter_mut().zip(&d) {
                *x += d;
            }
            for c in brute_force_candidates(&ps, 0.0, &Cell::boxed(V3::zeros(), V3::repeat(1.0))) {
                if c.near {
                    assert!(
                        keys.contains(&c.key),
                        "seed {seed}: {:?} was no candidate",
                        c.key
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "{checked}");
        assert!(lost_far > 0);
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
        sphere_candidates(
            &ps,
            0.1,
            &Cell::boxed(V3::zeros(), V3::repeat(1.0)),
            &mut grid,
            &mut out,
        );
        assert!(grid.start_o.len() < 1000);
        out.sort_unstable();
        assert_eq!(
            out,
            brute_force_candidates(&ps, 0.1, &Cell::boxed(V3::zeros(), V3::repeat(1.0)))
        );
    }
}
