//! Validated sphere sources and the streaming passes over them (ARCHITECTURE.md "Distributed
//! set-up"). A scene never holds its spheres: every rank walks the sources once at parse time
//! (the [`Summary`]: count, bounding boxes, radii, placement checks; O(1) memory) and once more
//! when the simulation is built, keeping only the spheres it owns. Sphere k of a source comes
//! from (seed, k) or from line k of a file, so both walks see the same spheres with the same
//! gids on any rank count.

use super::gen::{self, Ticker};
use super::schema::{LammpsDataSpec, LatticeSpec, RandomFillSpec};
use crate::error::{Error, Result};
use crate::material::Material;
use crate::particles::Particle;
use crate::V3;
use std::path::PathBuf;

/// One generator of the scene, validated.
#[derive(Clone, Debug)]
pub enum Source {
    One(Box<Particle>),
    Lattice(LatticeSpec, u16),
    /// Random sequential addition is sequential by nature (sphere k is rejected against all
    /// earlier ones): every walk regenerates the whole fill, O(count) memory while it runs.
    RandomFill(RandomFillSpec, u16),
    /// A dense packing is generated once, at parse time (its compaction is global and costly),
    /// and shared by both walks: every rank holds the whole specimen (CPM specimens are small).
    DensePack(std::sync::Arc<Vec<(V3, f64)>>, u16),
    Text(PathBuf, u16),
    Lammps(PathBuf, LammpsDataSpec, Vec<u16>),
}

/// Where a source stands in the scene file, for errors found after parsing.
#[derive(Clone, Debug)]
pub struct SourceLoc {
    pub file: String,
    pub line: usize,
    pub col: usize,
    /// `spheres[k]`.
    pub path: String,
}

impl SourceLoc {
    pub fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::Scene {
            file: self.file.clone(),
            line: self.line,
            col: self.col,
            msg: format!("{}: {msg}", self.path),
        }
    }
}

impl Source {
    /// Walk the spheres (gids from `offset`) in source order — gid order, except LAMMPS files
    /// (file order). `visit` may move a sphere (wrap it) and says whether to keep it; kept
    /// spheres are appended to `out` (LAMMPS: sorted by gid, with their velocities). Returns the
    /// number of spheres walked.
    pub fn walk(
        &self,
        offset: u64,
        mats: &[Material],
        loc: &SourceLoc,
        out: &mut Vec<Particle>,
        visit: &mut dyn FnMut(&mut Particle) -> bool,
        tick: &mut Ticker,
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
                let v = gen::random_fill(f, &|e| loc.err(e), tick)?;
                for (k, (x, r)) in v.into_iter().enumerate() {
                    emit(Particle::sphere(offset + k as u64, x, r, rho(*m), *m));
                }
                Ok(f.count)
            }
            Source::DensePack(v, m) => {
                for (k, &(x, r)) in v.iter().enumerate() {
                    tick.tick()?;
                    emit(Particle::sphere(offset + k as u64, x, r, rho(*m), *m));
                }
                Ok(v.len() as u64)
            }
            Source::Text(path, m) => {
                let mut k = 0;
                gen::read_text(path, max, tick, &mut |x, r| {
                    emit(Particle::sphere(offset + k, x, r, rho(*m), *m));
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
        self.pwave = self.pwave.min(r * (m.density() / m.young()).sqrt());
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
