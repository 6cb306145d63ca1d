//! Dense random packings (`DensePack`), compacted by all ranks together (ARCHITECTURE.md
//! "Distributed set-up").
//!
//! A geometric, frictionless compaction (force-biased / Jodrey–Tory style): n = (1 − porosity)
//! V / (4/3 π r³) centres are drawn uniformly, then the radius ρ grows from 0.8 r to r while
//! overlaps are pushed apart and centres are kept inside the shape shrunk by ρ. Each sweep is
//! a *Jacobi* sweep: every sphere moves by ω Σ_j ½ · 1.01 · overlap_ij along −n_ij, summed over
//! its overlapping neighbours in gid order, from the positions of the previous sweep, and
//! all move at once. So a sphere's new position depends on its neighbours' old positions and
//! nothing else, and a rank holding exact copies of the neighbours of its spheres (ghosts)
//! computes the same bits as one process holding all: the packing is identical on any rank
//! count, while each rank holds and moves only its share (O(N/P) memory and time per sweep,
//! plus the ghost exchange of a halo of 2r + skin). The growth schedule reads only the largest
//! overlap (a `max` reduction, exact), so every rank takes the same decisions.
//!
//! Before issue 19 the compaction was a Gauss–Seidel sweep in gid order over all spheres
//! (each pair pushed apart in turn), inherently sequential: every rank packed the whole
//! specimen at ~1 ms per sphere. The Jacobi sweep with ω = 0.7 reaches the same residual
//! overlaps (porosity 0.40, 2300 spheres: largest 0.12 r, mean 0.021 r of the overlapping
//! pairs, against 0.12 r and 0.015 r) and coordination (6.8–6.9 contacts within 1.05 · 2r),
//! and with the faster schedule below ~550 sweeps instead of ~3500 (0.2 ms per sphere on one
//! core). Residual overlaps are harmless for CPM: cohesive links take their initial distance as
//! d₀ (thesis eq. 2.21, §6.1.4).

use super::gen::{self, splitmix, unit};
use super::locate::SourceLoc;
use super::schema::DensePackSpec;
use super::Scene;
use crate::contact::store::PairList;
use crate::domain::comm::Comm;
use crate::domain::decomp::{self, Decomp};
use crate::domain::halo::Halo;
use crate::error::{Error, Result};
use crate::particles::{Particle, Particles};
use crate::signals::{self, SetupWatch};
use crate::V3;

/// Spheres of a packing: (index in the packing, centre).
pub type PackSpheres = Vec<(u64, V3)>;

/// The radius the compaction starts from, in final radii.
const START: f64 = 0.8;
/// Growth factor of the radius per step of the schedule.
const GROW: f64 = 1.01;
/// Sweeps at one radius before it grows anyway (the overlaps were not below 1 % of ρ).
const STUCK: u32 = 10;
/// Sweeps at the final radius before the packing is taken as it is.
const FULL: u32 = 300;
/// Relaxation factor of the Jacobi sweep: the sum of a sphere's pushes overshoots when several
/// neighbours push it the same way (1 gave larger residual overlaps, 0.5 slower progress).
const OMEGA: f64 = 0.7;
/// Each pair is pushed apart by 1.01 × its overlap (half to each sphere).
const PUSH: f64 = 1.01;
/// Largest move of a sphere in one sweep, in radii (a sphere among many overlapping
/// neighbours at the start would otherwise jump across subdomains).
const CAP: f64 = 0.5;
/// Ghost skin, in radii: the ghosts are re-made once a sphere moved half of it.
const SKIN: f64 = 1.0;
/// Edge of the tiles in which the initial centres are drawn, in radii (at least).
const TILE_RADII: f64 = 8.0;

/// The shape a packing fills: its bounding box and, for a cylinder, base centre and radius.
#[derive(Clone, Copy, Debug)]
struct Shape {
    lo: V3,
    hi: V3,
    cyl: Option<(V3, f64)>,
}

impl Shape {
    fn of(s: &DensePackSpec) -> Self {
        let (lo, hi, cyl) = gen::pack_shape(s);
        Shape { lo, hi, cyl }
    }

    /// Keep a centre inside the shape shrunk by `rho` (a projection: each coordinate clamped,
    /// then the radial distance of a cylinder).
    fn clamp(&self, x: &mut V3, rho: f64) {
        for a in 0..3 {
            x[a] = x[a].clamp(self.lo[a] + rho, self.hi[a] - rho);
        }
        if let Some((b, rc)) = self.cyl {
            let (dx, dy) = (x.x - b.x, x.y - b.y);
            let d = (dx * dx + dy * dy).sqrt();
            if d > rc - rho {
                let f = (rc - rho) / d;
                x.x = b.x + dx * f;
                x.y = b.y + dy * f;
            }
        }
    }
}

/// Tiles of the shape's bounding box for the initial centres: sphere k of tile t is drawn
/// uniformly in the tile from (seed, k), tile t holds spheres `first(t)..first(t + 1)` (an
/// even split), so a rank draws only the tiles whose centre its subdomain holds.
struct Tiles {
    lo: V3,
    edge: V3,
    dims: [u64; 3],
    n: u64,
}

impl Tiles {
    fn new(shape: &Shape, r: f64, n: u64) -> Self {
        let ext = shape.hi - shape.lo;
        let dims = [0, 1, 2].map(|a| (ext[a] / (TILE_RADII * r)).floor().max(1.0) as u64);
        Tiles {
            lo: shape.lo,
            edge: V3::from_fn(|a, _| ext[a] / dims[a] as f64),
            dims,
            n,
        }
    }

    fn first(&self, t: u64) -> u64 {
        (t as u128 * self.n as u128 / self.dims.iter().product::<u64>() as u128) as u64
    }

    /// Tile indices along `a` whose centre lies in this rank's slab.
    fn mine(&self, dec: &Decomp, a: usize) -> Vec<u64> {
        (0..self.dims[a])
            .filter(|&i| {
                let c = self.lo[a] + (i as f64 + 0.5) * self.edge[a];
                dec.coord_of(a, c) == dec.coords[a]
            })
            .collect()
    }
}

/// Uniform cells over a rank's spheres (owned and ghosts) for the neighbour search: a counting
/// sort, rebuilt every sweep.
#[derive(Default)]
struct Cells {
    lo: V3,
    h: f64,
    dims: [usize; 3],
    /// Start of each cell's entries in `items` (one more than cells).
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Cells {
    fn build(&mut self, pos: &[V3], h_min: f64) {
        let (mut lo, mut hi) = (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY));
        for x in pos {
            lo = lo.inf(x);
            hi = hi.sup(x);
        }
        if pos.is_empty() {
            (lo, hi) = (V3::zeros(), V3::zeros());
        }
        let ext = hi - lo;
        // at most about two cells per sphere (a few spheres far apart would ask for many)
        let cap = 2.0 * pos.len() as f64 + 64.0;
        let mut h = h_min;
        while (0..3).map(|a| (ext[a] / h).floor() + 1.0).product::<f64>() > cap {
            h *= 1.26;
        }
        self.lo = lo;
        self.h = h;
        self.dims = [0, 1, 2].map(|a| (ext[a] / h).floor() as usize + 1);
        let nc: usize = self.dims.iter().product();
        self.start.clear();
        self.start.resize(nc + 1, 0);
        let cell: Vec<u32> = pos.iter().map(|x| self.index(x) as u32).collect();
        for &c in &cell {
            self.start[c as usize + 1] += 1;
        }
        for c in 0..nc {
            self.start[c + 1] += self.start[c];
        }
        self.items.clear();
        self.items.resize(pos.len(), 0);
        let mut at = self.start.clone();
        for (i, &c) in cell.iter().enumerate() {
            self.items[at[c as usize] as usize] = i as u32;
            at[c as usize] += 1;
        }
    }

    fn coords(&self, x: &V3) -> [usize; 3] {
        [0, 1, 2].map(|a| (((x[a] - self.lo[a]) / self.h).max(0.0) as usize).min(self.dims[a] - 1))
    }

    fn index(&self, x: &V3) -> usize {
        let c = self.coords(x);
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// Every sphere in the 27 cells around `x` (cells are ≥ 2r: every overlapping one).
    fn around(&self, x: &V3, mut f: impl FnMut(usize)) {
        let c = self.coords(x);
        let d = self.dims;
        for cz in c[2].saturating_sub(1)..=(c[2] + 1).min(d[2] - 1) {
            for cy in c[1].saturating_sub(1)..=(c[1] + 1).min(d[1] - 1) {
                let row = (cz * d[1] + cy) * d[0];
                let a = row + c[0].saturating_sub(1);
                let b = row + (c[0] + 1).min(d[0] - 1);
                for &j in &self.items[self.start[a] as usize..self.start[b + 1] as usize] {
                    f(j as usize);
                }
            }
        }
    }
}

/// The unit vector from sphere `g` towards sphere `h` when their centres coincide: a direction
/// hashed from the pair (the same on every rank), opposite for the two.
fn apart(g: u64, h: u64) -> V3 {
    let (a, b) = (g.min(h), g.max(h));
    let k = splitmix(a ^ splitmix(b));
    let u = V3::new(
        2.0 * unit(k) - 1.0,
        2.0 * unit(splitmix(k)) - 1.0,
        2.0 * unit(splitmix(k ^ 1)) - 1.0,
    );
    let u = u / u.norm().max(1e-300);
    if g < h {
        u
    } else {
        -u
    }
}

/// One Jacobi sweep's moves of the owned spheres (`disp`, from the positions of all local
/// spheres at radius `rho`) and the largest overlap among their pairs. Rayon over the owned
/// spheres; each move sums its neighbours' pushes in gid order, so the bits do not depend on
/// the threads, the ranks or the cell layout.
fn displacements(ps: &Particles, cells: &Cells, rho: f64, cap: f64, disp: &mut [V3]) -> f64 {
    use rayon::prelude::*;
    let reach2 = 4.0 * rho * rho;
    disp.par_iter_mut()
        .enumerate()
        .map_init(Vec::new, |nb: &mut Vec<(u64, V3, f64)>, (i, d)| {
            nb.clear();
            let x = ps.pos[i];
            let g = ps.gid[i];
            cells.around(&x, |j| {
                let dv = ps.pos[j] - x;
                let l2 = dv.norm_squared();
                if l2 < reach2 && j != i {
                    nb.push((ps.gid[j], dv, l2));
                }
            });
            nb.sort_unstable_by_key(|e| e.0);
            let mut s = V3::zeros();
            let mut worst = 0.0f64;
            for &(h, dv, l2) in nb.iter() {
                let l = l2.sqrt();
                let ov = 2.0 * rho - l;
                worst = worst.max(ov);
                match l2 > 0.0 {
                    true => s -= dv * (0.5 * ov * PUSH / l),
                    // coincident centres (two spheres clamped into the same corner of the
                    // shape in the same sweep): apart along a direction of the pair's gids
                    false => s -= apart(g, h) * (0.5 * ov * PUSH),
                }
            }
            s *= OMEGA;
            let m = s.norm();
            if m > cap {
                s *= cap / m;
            }
            *d = s;
            worst
        })
        .reduce(|| 0.0, f64::max)
}

/// Compact a packing on the ranks of `comm` over the grid `dec` (non-periodic, cut over the
/// shape's bounding box, every subdomain at least 2r + skin wide). Returns the spheres this
/// rank owns at the end, (index in the packing, centre), and the largest residual overlap
/// relative to r. Collective.
fn compact(
    spec: &DensePackSpec,
    comm: &Comm,
    dec: &Decomp,
    what: &str,
) -> Result<(PackSpheres, f64)> {
    let r = spec.radius;
    let shape = Shape::of(spec);
    let n = gen::dense_pack_count(spec).map_err(Error::Input)?;
    let tiles = Tiles::new(&shape, r, n);
    let mut ps = Particles::default();
    let (xs, ys, zs) = (tiles.mine(dec, 0), tiles.mine(dec, 1), tiles.mine(dec, 2));
    for &k in &zs {
        for &j in &ys {
            for &i in &xs {
                let t = i + tiles.dims[0] * (j + tiles.dims[1] * k);
                let tlo =
                    tiles.lo + V3::new(i as f64, j as f64, k as f64).component_mul(&tiles.edge);
                for g in tiles.first(t)..tiles.first(t + 1) {
                    let h = |c: u64| unit(splitmix(spec.seed ^ splitmix(3 * g + c)));
                    let mut x = tlo + V3::new(h(0), h(1), h(2)).component_mul(&tiles.edge);
                    shape.clamp(&mut x, r);
                    ps.push_owned(&Particle::sphere(g, x, r, 1.0, 0));
                }
            }
        }
    }
    let parallel = dec.n_ranks() > 1;
    let mut halo = Halo::default();
    if parallel {
        // a clamped centre may lie in another subdomain than its tile
        halo.redistribute(comm, dec, &mut ps);
    }
    let skin = SKIN * r;
    let reach = 2.0 * r + skin;
    let dom = crate::domain::Domain::new(shape.lo, shape.hi, dec.periodic);
    let (mut pairs, mut walls) = (PairList::default(), PairList::default());
    let (mut reference, mut disp) = (Vec::new(), Vec::new());
    let mut cells = Cells::default();
    let mut watch = SetupWatch::new(what, None);
    let mut rebuild = true;
    let (mut rho, mut since, mut at_full) = (START * r, 0u32, 0u32);
    let mut sweep = 0u64;
    let mut done = 0u64;
    loop {
        if rebuild {
            ps.truncate_ghosts();
            if parallel {
                halo.migrate(comm, dec, &dom, &mut ps, &mut pairs, &mut walls, sweep)?;
            }
            halo.build_ghosts(comm, dec, &mut ps, &dom, reach);
            reference.clear();
            reference.extend_from_slice(&ps.pos[..ps.n_owned]);
        }
        cells.build(&ps.pos, 2.0 * r);
        let n_owned = ps.n_owned;
        disp.clear();
        disp.resize(n_owned, V3::zeros());
        let worst = displacements(&ps, &cells, rho, CAP * r, &mut disp);
        let mut moved = 0.0f64;
        for i in 0..n_owned {
            ps.pos[i] += disp[i];
            shape.clamp(&mut ps.pos[i], rho);
            moved = moved.max((ps.pos[i] - reference[i]).norm_squared());
        }
        // one reduction per sweep: the largest overlap (the schedule), the largest move since
        // the ghosts were made, and a stop signal, so that all ranks stop at the same sweep
        let mut v = [
            worst,
            moved.sqrt(),
            signals::requested().is_some() as u8 as f64,
        ];
        comm.max_f64s(&mut v);
        if v[2] > 0.0 {
            return Err(Error::Stopped {
                signal: signals::name(signals::requested().unwrap_or(libc::SIGTERM)),
                what: what.to_string(),
            });
        }
        done += n_owned as u64;
        // progress lines only: a signal is seen (and agreed) by the next sweep's reduction, so
        // that no rank leaves the others waiting in it
        watch.tick_many(done, n_owned as u64).ok();
        let max_ov = v[0];
        rebuild = v[1] > 0.5 * skin;
        if !rebuild {
            halo.refresh(comm, dec, &mut ps);
        }
        sweep += 1;
        if rho >= r {
            at_full += 1;
            if max_ov < 1e-3 * r || at_full > FULL {
                ps.truncate_ghosts();
                let out = (0..ps.n_owned).map(|i| (ps.gid[i], ps.pos[i])).collect();
                return Ok((out, max_ov / r));
            }
        } else if max_ov < 1e-2 * rho || since >= STUCK {
            rho = (rho * GROW).min(r);
            since = 0;
        } else {
            since += 1;
        }
    }
}

/// The whole packing on this process, sorted by index (tools, tests, `demhpc check`): O(n).
pub fn dense_pack(spec: &DensePackSpec, loc: &SourceLoc) -> Result<(PackSpheres, f64)> {
    let (lo, hi, _) = gen::pack_shape(spec);
    let dec = Decomp::new([1; 3], [0; 3], [false; 3], lo, hi, lo, hi);
    let what = format!("DensePack of {} (compaction sweeps)", loc.path);
    let (mut v, ov) = compact(spec, &Comm::Serial, &dec, &what)?;
    v.sort_unstable_by_key(|e| e.0);
    Ok((v, ov))
}

/// Compact a packing with every rank of `comm` (collective): on a rank grid of its own, cut
/// over the shape's bounding box, when the shape is wide enough for one (each subdomain at
/// least 2r + skin), else on every rank in full (a shape too thin to split holds few spheres
/// per rank anyway). Returns this rank's spheres, the largest residual overlap / r, and
/// whether every rank holds all spheres (the fallback).
fn compact_on(spec: &DensePackSpec, comm: &Comm, what: &str) -> Result<(PackSpheres, f64, bool)> {
    let r = spec.radius;
    let (lo, hi, _) = gen::pack_shape(spec);
    let p = comm.size();
    let dims = decomp::choose_dims(p, hi - lo, [false; 3], (2.0 + SKIN) * r).ok();
    let grid = match dims {
        Some(d) if p > 1 => comm.regrid(d, [false; 3]).map(|c| (d, c)),
        _ => None,
    };
    match grid {
        Some((d, pc)) => {
            let dec = Decomp::new(d, pc.coords(), [false; 3], lo, hi, lo, hi);
            let (v, ov) = compact(spec, &pc, &dec, what)?;
            Ok((v, ov, false))
        }
        None => {
            let dec = Decomp::new([1; 3], [0; 3], [false; 3], lo, hi, lo, hi);
            let (v, ov) = compact(spec, &Comm::Serial, &dec, what)?;
            Ok((v, ov, true))
        }
    }
}

/// For each source of `scene`: `None`, or for a dense packing the spheres this rank may need,
/// (index in the packing, centre in the base block), sorted by index — those that, in some
/// tile of a replicated scene and wrapped into the periodic cell, lie within 2 r_max of its
/// subdomain (owned, or wanted by the set-up's overlap check): the argument `packs` of
/// [`Scene::generate`]. Each packing is compacted by all ranks together, and its spheres are
/// sent to the ranks that need them (one all-to-all). Collective.
pub fn packs_for(scene: &Scene, dec: &Decomp, comm: &Comm) -> Result<Vec<Option<PackSpheres>>> {
    let margin = 2.0 * scene.summary.rmax * 1.001;
    let mut out = Vec::with_capacity(scene.sources.len());
    for (src, _, loc) in scene.sources.iter() {
        let Some(spec) = src.dense_pack_spec() else {
            out.push(None);
            continue;
        };
        let what = format!("DensePack of {} (compaction sweeps)", loc.path);
        let (mine, ov, everywhere) = compact_on(spec, comm, &what)?;
        if comm.is_root() {
            log::info!(
                "{}: {} spheres, largest overlap {ov:.3e} r",
                loc.path,
                gen::dense_pack_count(spec).unwrap_or(0)
            );
        }
        out.push(Some(route(scene, dec, comm, &mine, margin, everywhere)));
    }
    Ok(out)
}

/// Send each sphere of `mine` to every rank within `margin` of one of its tile copies (see
/// [`packs_for`]); `everywhere`: every rank holds all spheres, each keeps its own share
/// without sending anything.
fn route(
    scene: &Scene,
    dec: &Decomp,
    comm: &Comm,
    mine: &[(u64, V3)],
    margin: f64,
    everywhere: bool,
) -> PackSpheres {
    let p = comm.size();
    let me = comm.rank();
    let mut bufs: Vec<Vec<f64>> = vec![Vec::new(); if everywhere { 1 } else { p }];
    let mut kept = Vec::new();
    // the last sphere sent to each rank: one copy per rank, whatever the tiles
    let mut last = vec![u64::MAX; p];
    let d = &scene.domain;
    for &(k, x) in mine {
        for t in 0..scene.n_tiles() {
            let mut y = x;
            if t > 0 {
                y += scene.tile_shift(t);
            }
            d.wrap_one(&mut y, &mut [0; 3]);
            let range = |a: usize| dec.coord_of(a, y[a] - margin)..=dec.coord_of(a, y[a] + margin);
            for cz in range(2) {
                for cy in range(1) {
                    for cx in range(0) {
                        let to = comm.rank_at([cx, cy, cz]);
                        if last[to] == k {
                            continue;
                        }
                        last[to] = k;
                        match everywhere {
                            true if to == me => kept.push((k, x)),
                            true => {}
                            false => {
                                bufs[to].extend_from_slice(&[f64::from_bits(k), x.x, x.y, x.z])
                            }
                        }
                    }
                }
            }
        }
    }
    if !everywhere {
        let counts: Vec<usize> = bufs.iter().map(Vec::len).collect();
        let send: Vec<f64> = bufs.concat();
        drop(bufs);
        let mut recv = Vec::new();
        comm.all_to_all_f64s(&send, &counts, &mut recv);
        kept = recv
            .chunks_exact(4)
            .map(|v| (v[0].to_bits(), V3::new(v[1], v[2], v[3])))
            .collect();
    }
    kept.sort_unstable_by_key(|e| e.0);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::schema::PackShape;

    fn spec(shape: PackShape, r: f64) -> DensePackSpec {
        DensePackSpec {
            material: "c".into(),
            shape,
            radius: r,
            diameter: None,
            porosity: 0.4,
            seed: 3,
        }
    }

    fn loc() -> SourceLoc {
        SourceLoc {
            file: "t.ron".into(),
            line: 1,
            col: 1,
            path: "spheres[0]".into(),
        }
    }

    /// Every centre inside the shape shrunk by r, the count of the spec, indices 0..n, and a
    /// dense packing: residual overlaps below 25 % of r (the compaction's, thesis specimens
    /// at porosity 0.40 keep about 12 %).
    #[test]
    fn box_and_cylinder_packings() {
        let r = 1e-3;
        for sh in [
            PackShape::Box {
                lo: [0.0; 3],
                hi: [0.012, 0.012, 0.016],
            },
            PackShape::Cylinder {
                base: [0.0, 0.0, 0.0],
                radius: 0.007,
                height: 0.014,
            },
        ] {
            let s = spec(sh, r);
            let (v, ov) = dense_pack(&s, &loc()).unwrap();
            assert_eq!(v.len() as u64, gen::dense_pack_count(&s).unwrap());
            assert!(v.iter().enumerate().all(|(k, e)| e.0 == k as u64));
            assert!(ov < 0.25, "largest overlap {ov} r");
            let shape = Shape::of(&s);
            for (_, x) in &v {
                let mut y = *x;
                shape.clamp(&mut y, r);
                assert!((y - x).norm() < 1e-15, "{x:?} outside the shape");
            }
        }
    }
}
