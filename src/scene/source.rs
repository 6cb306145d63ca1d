//! Validated sphere sources and the streaming passes over them (ARCHITECTURE.md "Distributed
//! set-up"). A scene never holds its spheres: every rank walks the sources once at parse time
//! (the [`Summary`]: count, bounding boxes, radii, placement checks; O(1) memory) and once more
//! when the simulation is built, keeping only the spheres it owns. Sphere k of a source comes
//! from (seed, k) or from line k of a file, so both walks see the same spheres with the same
//! gids on any rank count. Random fills and dense packings are not walked at parse time: what
//! the summary needs follows from their spec ([`Source::region`]), and the set-up generates
//! only the tiles of a fill near a rank's subdomain, and packs a `DensePack` with all ranks
//! together (`scene::pack`).

use super::gen::{self, Ticker};
pub use super::locate::SourceLoc;
use super::schema::{DensePackSpec, LammpsDataSpec, LatticeSpec, RandomFillSpec};
use crate::error::Result;
use crate::material::Material;
use crate::particles::Particle;
use crate::V3;
use std::path::PathBuf;

/// One generator of the scene, validated.
#[derive(Clone, Debug)]
pub enum Source {
    One(Box<Particle>),
    Lattice(LatticeSpec, u16),
    /// Random sequential addition in independent tiles (`gen::FillTiles`): a walk generates
    /// only the tiles its `may_hold` accepts.
    RandomFill(RandomFillSpec, u16),
    /// A dense packing: compacted by all ranks together before the set-up's walk
    /// (`scene::pack`), which then emits the spheres handed to it.
    DensePack(DensePackSpec, u16),
    /// A text file; the flag: its 4th column holds diameters.
    Text(PathBuf, u16, bool),
    Lammps(PathBuf, LammpsDataSpec, Vec<u16>),
}

impl Source {
    /// The dense packing this source makes, if it is one (`pack::packs_for`).
    pub fn dense_pack_spec(&self) -> Option<&DensePackSpec> {
        match self {
            Source::DensePack(spec, _) => Some(spec),
            _ => None,
        }
    }
}

impl Source {
    /// Walk the spheres (gids from `offset`) in source order — gid order, except LAMMPS files
    /// (file order) and packings (the order of `pack`). `visit` may move a sphere (wrap it) and
    /// says whether to keep it; kept spheres are appended to `out` (LAMMPS: sorted by gid,
    /// with their velocities). A random fill skips its tiles whose box `may_hold(lo, hi)`
    /// rejects (no sphere centre there can be wanted); a dense packing emits the spheres of
    /// `pack` ((index in the packing, centre), made by `scene::pack`), or, without one, packs
    /// itself in full on this process. Returns the number of spheres of the source.
    #[allow(clippy::too_many_arguments)]
    pub fn walk(
        &self,
        offset: u64,
        mats: &[Material],
        loc: &SourceLoc,
        out: &mut Vec<Particle>,
        visit: &mut dyn FnMut(&mut Particle) -> bool,
        tick: &mut Ticker,
        may_hold: &dyn Fn(&V3, &V3) -> bool,
        pack: Option<&[(u64, V3)]>,
    ) -> Result<u64> {
        let mut emit = |mut p: Particle| {
            if visit(&mut p) {
                out.push(p);
            }
        };
        let rho = |m: u16| mats[m as usize].density();
        let max = super::MAX_SPHERES.saturating_sub(offset);
        match self {
            Source::One(p) => {
                tick.tick()?;
                let mut q = (**p).clone();
                q.gid = offset;
                emit(q);
                Ok(1)
            }
            Source::Lattice(l, m) => {
                let n = gen::lattice_count(l).unwrap_or(0);
                for k in 0..n {
                    tick.tick()?;
                    let (x, r) = gen::lattice_sphere(l, k);
                    emit(Particle::sphere(offset + k, x, r, rho(*m), *m));
                }
                Ok(n)
            }
            Source::RandomFill(f, m) => {
                let tiles = gen::FillTiles::new(f);
                let [nx, ny, nz] = tiles.dims;
                // whole layers and rows of tiles are skipped at once: the work is about the
                // tiles near the subdomain, not all of them
                let skip = |tick: &mut Ticker, a: [u64; 3], b: [u64; 3]| {
                    tick.skip(tiles.first(tiles.index(b)) - tiles.first(tiles.index(a)))
                };
                for k in 0..nz {
                    let (lo, hi) = tiles.span([0, 0, k], [nx - 1, ny - 1, k]);
                    if !may_hold(&lo, &hi) {
                        skip(tick, [0, 0, k], [0, 0, k + 1])?;
                        continue;
                    }
                    for j in 0..ny {
                        let (lo, hi) = tiles.span([0, j, k], [nx - 1, j, k]);
                        if !may_hold(&lo, &hi) {
                            skip(tick, [0, j, k], [0, j + 1, k])?;
                            continue;
                        }
                        for i in 0..nx {
                            let (lo, hi) = tiles.span([i, j, k], [i, j, k]);
                            if !may_hold(&lo, &hi) {
                                skip(tick, [i, j, k], [i + 1, j, k])?;
                                continue;
                            }
                            let first = tiles.first(tiles.index([i, j, k]));
                            let v =
                                gen::random_fill_tile(f, &tiles, [i, j, k], &|e| loc.err(e), tick)?;
                            for (q, (x, r)) in v.into_iter().enumerate() {
                                let g = offset + first + q as u64;
                                emit(Particle::sphere(g, x, r, rho(*m), *m));
                            }
                        }
                    }
                }
                Ok(f.count)
            }
            Source::DensePack(d, m) => {
                let r = d.radius;
                let n = gen::dense_pack_count(d).map_err(|e| loc.err(e))?;
                let owned;
                let v = match pack {
                    Some(v) => v,
                    None => {
                        owned = super::pack::dense_pack(d, loc)?.0;
                        &owned[..]
                    }
                };
                for &(k, x) in v {
                    tick.tick()?;
                    emit(Particle::sphere(offset + k, x, r, rho(*m), *m));
                }
                Ok(n)
            }
            Source::Text(path, m, diameters) => {
                let mut k = 0;
                let scale = if *diameters { 0.5 } else { 1.0 };
                gen::read_text(path, max, tick, &mut |x, r, tag| {
                    let r = r * scale;
                    let mut p = Particle::sphere(offset + k, x, r, rho(*m), *m);
                    p.tag = tag;
                    emit(p);
                    k += 1;
                })
            }
            Source::Lammps(path, spec, idx) => {
                let (n, kept) = gen::read_lammps(path, spec, idx, (offset, max), tick, visit)?;
                out.extend(kept);
                Ok(n)
            }
        }
    }
}

/// What the parse-time walk needs of a generated source, found from its spec alone instead of
/// generating it (random fills, dense packings: their generation is the set-up's costliest
/// part and is distributed over the ranks). Bounds rather than exact values: every centre lies
/// in `centres`, every sphere in `extent`, every radius in `[rmin, rmax]`.
#[derive(Clone, Debug)]
pub struct Region {
    pub n: u64,
    pub centres: (V3, V3),
    pub extent: (V3, V3),
    pub rmin: f64,
    pub rmax: f64,
    /// The mean radius of the distribution the radii are drawn from.
    pub rmean: f64,
    pub material: u16,
}

impl Source {
    /// The source's [`Region`] when it is generated (random fill, dense packing), else `None`
    /// (walked). Needs the validation of `scene::source` (finite boxes, counts).
    pub fn region(&self) -> Option<Region> {
        match self {
            Source::RandomFill(f, m) => {
                let (p, r) = (f.polydispersity, f.radius);
                let (rmin, rmax) = (r * (1.0 - p), r * (1.0 + p));
                let (lo, hi) = (V3::from(f.lo), V3::from(f.hi));
                // a sphere of radius ρ keeps its centre ρ inside its tile, hence the box
                Some(Region {
                    n: f.count,
                    centres: (lo + V3::repeat(rmin), hi - V3::repeat(rmin)),
                    extent: (lo, hi),
                    rmin,
                    rmax,
                    rmean: r,
                    material: *m,
                })
            }
            Source::DensePack(d, m) => {
                let (lo, hi, _) = gen::pack_shape(d);
                let r = d.radius;
                // every centre is clamped into the shape shrunk by r (the bounding box of a
                // cylinder)
                Some(Region {
                    n: gen::dense_pack_count(d).unwrap_or(0),
                    centres: (lo + V3::repeat(r), hi - V3::repeat(r)),
                    extent: (lo, hi),
                    rmin: r,
                    rmax: r,
                    rmean: r,
                    material: *m,
                })
            }
            _ => None,
        }
    }
}

/// What the decomposition and the validation need to know about all spheres, found by one
/// streaming walk (every rank makes it and gets the same bits).
#[derive(Clone, Debug)]
pub struct Summary {
    pub n: u64,
    /// Bounding box of the centres, wrapped into the periodic cell (decomposition of open axes).
    pub lo: V3,
    pub hi: V3,
    /// Bounding box of the centres as generated (unwrapped).
    pub raw_lo: V3,
    pub raw_hi: V3,
    /// Bounding box of the spheres (centre ± radius, unwrapped): the default domain.
    pub ext_lo: V3,
    pub ext_hi: V3,
    pub rmax: f64,
    pub rmin: f64,
    /// Σ radius in walk order (sequential, as the single-process code summed it): default skin.
    pub rsum: f64,
    /// min r sqrt(ρ/E) (thesis eq. 2.85–2.86): the p-wave time step.
    pub pwave: f64,
}

impl Default for Summary {
    fn default() -> Self {
        let (inf, ninf) = (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY));
        Summary {
            n: 0,
            lo: inf,
            hi: ninf,
            raw_lo: inf,
            raw_hi: ninf,
            ext_lo: inf,
            ext_hi: ninf,
            rmax: 0.0,
            rmin: f64::INFINITY,
            rsum: 0.0,
            pwave: f64::INFINITY,
        }
    }
}

impl Summary {
    /// Account for one sphere; `wrapped` is its centre wrapped into the periodic cell.
    pub fn add(&mut self, p: &Particle, wrapped: &V3, mats: &[Material]) {
        let r = p.radius;
        self.n += 1;
        self.lo = self.lo.inf(wrapped);
        self.hi = self.hi.sup(wrapped);
        self.raw_lo = self.raw_lo.inf(&p.pos);
        self.raw_hi = self.raw_hi.sup(&p.pos);
        self.ext_lo = self.ext_lo.inf(&(p.pos - V3::repeat(r)));
        self.ext_hi = self.ext_hi.sup(&(p.pos + V3::repeat(r)));
        self.rmax = self.rmax.max(r);
        self.rmin = self.rmin.min(r);
        self.rsum += r;
        let m = &mats[p.material as usize];
        self.pwave = self.pwave.min(m.pwave_step(r));
    }

    /// Account for a generated source's [`Region`] at once; `wrapped` is its centres' box
    /// wrapped into the periodic cell. Σ radius grows by n × the distribution's mean radius.
    pub fn add_region(&mut self, g: &Region, wrapped: (V3, V3), mats: &[Material]) {
        self.n += g.n;
        self.lo = self.lo.inf(&wrapped.0);
        self.hi = self.hi.sup(&wrapped.1);
        self.raw_lo = self.raw_lo.inf(&g.centres.0);
        self.raw_hi = self.raw_hi.sup(&g.centres.1);
        self.ext_lo = self.ext_lo.inf(&g.extent.0);
        self.ext_hi = self.ext_hi.sup(&g.extent.1);
        self.rmax = self.rmax.max(g.rmax);
        self.rmin = self.rmin.min(g.rmin);
        self.rsum += g.n as f64 * g.rmean;
        let m = &mats[g.material as usize];
        self.pwave = self.pwave.min(m.pwave_step(g.rmin));
    }

    pub fn mean_radius(&self) -> f64 {
        self.rsum / self.n as f64
    }

    /// The summary of `tiles` copies of this block shifted by up to `span` (replication): counts
    /// multiply, boxes grow by `span` upwards, radii are those of the block.
    pub fn tiled(&self, tiles: u64, span: &V3) -> Summary {
        Summary {
            n: self.n * tiles,
            hi: self.hi + span,
            raw_hi: self.raw_hi + span,
            ext_hi: self.ext_hi + span,
            ..self.clone()
        }
    }
}
