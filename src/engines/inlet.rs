//! Inlet (issue 22; Woo `BoxInlet`/`CylinderInlet`/`RandomInlet` with PSD generators, seed
//! 004; LIGGGHTS `fix insert/rate/region`): spheres drawn from a size distribution are placed
//! at random in a box or a cylinder without overlapping anything there, at a mass or count
//! rate or up to a count.
//!
//! Reproducible placement: the k-th new sphere of inlet i (its sequence number k) has the gid
//! `gid_base + k` and its diameter from the counter-based hash of (seed, i, k); its centre at
//! attempt a (counted over all the inlet's attempts) from the hash of (seed, i, k, a). Every rank gathers the particles near the box
//! (one all-gather of the owned centres within 2 r_max of it) and runs the same insertion, in
//! sequence order, then keeps the new spheres whose centre it owns: the same spheres, bits and
//! gids on any rank count, and across restarts (the sequence number and the inserted mass are
//! checkpointed).

use super::region::{Region, RegionSpec};
use crate::contact::Wall;
use crate::domain::comm::Comm;
use crate::domain::decomp::Decomp;
use crate::domain::Domain;
use crate::error::Result;
use crate::material::Material;
use crate::particles::{Particle, Particles};
use crate::scene::ctx::Ctx;
use crate::scene::gen::splitmix;
use crate::scene::schema::Vec3;
use crate::V3;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Gids of inlet i start at (initial particle count) + i · `GID_STRIDE`: 2⁴⁰ ids per inlet
/// (refused beyond: `Inlet::act`), 64 inlets at most (scene limit), so the ranges never meet
/// each other nor the initial gids 0..n.
pub const GID_STRIDE: u64 = 1 << 40;

/// Particle size distribution of diameters [m].
#[derive(Clone, Debug, PartialEq)]
pub enum Psd {
    Constant(f64),
    /// Uniform in diameter on [min, max].
    Uniform {
        min: f64,
        max: f64,
    },
    /// Normal in diameter, truncated to [min, max] (rejection, then clamped).
    Normal {
        mean: f64,
        std: f64,
        min: f64,
        max: f64,
    },
    /// ln d normal with median `median` and standard deviation `sigma` of ln d, truncated.
    LogNormal {
        median: f64,
        sigma: f64,
        min: f64,
        max: f64,
    },
    /// Diameters with mass fractions: drawn by number fraction w_i/d_i³ normalised (Woo
    /// `PsdSphereGenerator(mass=True)`: a mass fraction of spheres of diameter d is w/(ρ π d³/6)
    /// spheres per kg). `cum`: cumulative number probabilities.
    Discrete {
        d: Vec<f64>,
        cum: Vec<f64>,
    },
}

impl Psd {
    /// The discrete distribution of (diameter, mass fraction) pairs (validated: positive).
    pub fn discrete(table: &[(f64, f64)]) -> Self {
        let w: Vec<f64> = table.iter().map(|&(d, f)| f / (d * d * d)).collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cum = w
            .iter()
            .map(|x| {
                acc += x / total;
                acc
            })
            .collect();
        Psd::Discrete {
            d: table.iter().map(|t| t.0).collect(),
            cum,
        }
    }

    /// Largest diameter it can draw.
    pub fn max(&self) -> f64 {
        match self {
            Psd::Constant(d) => *d,
            Psd::Uniform { max, .. } | Psd::Normal { max, .. } | Psd::LogNormal { max, .. } => *max,
            Psd::Discrete { d, .. } => d.iter().copied().fold(0.0, f64::max),
        }
    }

    /// Smallest diameter it can draw.
    pub fn min(&self) -> f64 {
        match self {
            Psd::Constant(d) => *d,
            Psd::Uniform { min, .. } | Psd::Normal { min, .. } | Psd::LogNormal { min, .. } => *min,
            Psd::Discrete { d, .. } => d.iter().copied().fold(f64::INFINITY, f64::min),
        }
    }

    /// A diameter from the uniforms `u(0), u(1), …` in [0, 1).
    fn sample(&self, u: impl Fn(u64) -> f64) -> f64 {
        // Box–Muller (Box & Muller 1958): z = sqrt(−2 ln u₁) cos 2π u₂, u₁ ∈ (0, 1]
        let gauss = |j: u64| {
            let u1 = 1.0 - u(2 * j);
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u(2 * j + 1)).cos()
        };
        let truncated = |f: &dyn Fn(f64) -> f64, min: f64, max: f64| {
            (0..64)
                .map(|j| f(gauss(j)))
                .find(|d| (min..=max).contains(d))
                .unwrap_or_else(|| f(gauss(0)).clamp(min, max))
        };
        match self {
            Psd::Constant(d) => *d,
            Psd::Uniform { min, max } => min + (max - min) * u(0),
            Psd::Normal {
                mean,
                std,
                min,
                max,
            } => truncated(&|z| mean + std * z, *min, *max),
            Psd::LogNormal {
                median,
                sigma,
                min,
                max,
            } => truncated(&|z| median * (sigma * z).exp(), *min, *max),
            Psd::Discrete { d, cum } => {
                let x = u(0);
                let k = cum.iter().position(|&c| x < c).unwrap_or(d.len() - 1);
                d[k]
            }
        }
    }
}

/// How much an inlet inserts.
#[derive(Clone, Debug, PartialEq)]
pub enum Rate {
    /// kg/s from `start` to `stop`: inserts while the mass inserted is below rate × elapsed.
    Mass(f64),
    /// Spheres per second, likewise.
    Count(f64),
    /// This many spheres in all, as fast as the region allows.
    Fill(u64),
}

#[derive(Clone, Debug)]
pub struct Inlet {
    pub name: String,
    /// A `Box` or a `Cylinder` (validated by [`Inlet::from_spec`]): the whole of every new
    /// sphere lies in it.
    pub region: Region,
    /// The region's bounding box.
    pub lo: V3,
    pub hi: V3,
    pub material: u16,
    pub density: f64,
    pub psd: Psd,
    pub rate: Rate,
    pub velocity: V3,
    pub start: f64,
    pub stop: f64,
    pub seed: u64,
    /// Index among the scene's inlets (a key of the hash).
    pub index: u64,
    /// First gid of this inlet's range.
    pub gid_base: u64,
    /// Acts at the steps that are multiples of `every`.
    pub every: u64,
    /// Placement attempts per sphere before the inlet gives up for this step.
    pub attempts: u64,
    /// The tag of the spheres it makes (`Particles::tag`).
    pub tag: u16,
    /// Twice the largest radius of the scene (initial spheres and every inlet): the reach of the
    /// gathered neighbourhood and the cell of the overlap grid.
    pub reach: f64,
    /// Spheres inserted so far (their sequence numbers are 0..seq).
    pub seq: u64,
    /// Mass inserted so far, summed in sequence order (the same bits on every rank).
    pub mass: f64,
    /// Placement attempts so far (all spheres): attempt a of the hash is this counter, so a
    /// sphere that found no room tries new places at the next action.
    pub tries: u64,
    /// The rate could not be met once already (warned).
    pub warned: bool,
}

/// The bounding box of an inlet's region (a `Box` or a `Cylinder`; a half-space has none).
pub fn bounding_box(region: &Region) -> Option<(V3, V3)> {
    match region {
        Region::Box { lo, hi } => Some((*lo, *hi)),
        Region::Cylinder { a, b, radius } => {
            // the end discs reach radius · sqrt(1 − e_k²) along axis k (e: the unit axis)
            let e = (b - a).normalize();
            let ext = V3::from_fn(|k, _| radius * (1.0 - e[k] * e[k]).max(0.0).sqrt());
            Some((a.inf(b) - ext, a.sup(b) + ext))
        }
        Region::HalfSpace { .. } => None,
    }
}

/// The centre of a sphere of radius `r` lying wholly in `region` (a `Box` or a `Cylinder`
/// at least 2r wide), uniform over the region shrunk by r, from three uniforms in [0, 1).
fn place(region: &Region, r: f64, u: [f64; 3]) -> V3 {
    match region {
        Region::Box { lo, hi } => V3::from_fn(|k, _| lo[k] + r + (hi[k] - lo[k] - 2.0 * r) * u[k]),
        Region::Cylinder { a, b, radius } => {
            let ab = b - a;
            let len = ab.norm();
            let e = ab / len;
            // two unit vectors across the axis: the coordinate axis least along it, made
            // orthogonal to it (Gram–Schmidt), and their cross product
            let h = if e.x.abs() < 0.9 {
                V3::new(1.0, 0.0, 0.0)
            } else {
                V3::new(0.0, 1.0, 0.0)
            };
            let e1 = (h - e * h.dot(&e)).normalize();
            let e2 = e.cross(&e1);
            // uniform over the disc of radius R − r: the area inside ρ grows as ρ², so
            // ρ = (R − r) √u (inverse transform sampling)
            let rho = (radius - r) * u[0].sqrt();
            let phi = 2.0 * std::f64::consts::PI * u[1];
            let t = r + (len - 2.0 * r) * u[2];
            a + e * t + (e1 * phi.cos() + e2 * phi.sin()) * rho
        }
        Region::HalfSpace { .. } => unreachable!("inlets take boxes and cylinders"),
    }
}

impl Inlet {
    /// It would insert at `step` (time `time`): a multiple of `every` with something wanted.
    pub fn due(&self, step: u64, time: f64) -> bool {
        step.is_multiple_of(self.every) && self.wants(time)
    }

    /// More spheres wanted at `time`.
    fn wants(&self, time: f64) -> bool {
        if time < self.start {
            return false;
        }
        let elapsed = time.min(self.stop) - self.start;
        match self.rate {
            Rate::Mass(q) => self.mass < q * elapsed,
            Rate::Count(q) => (self.seq as f64) < (q * elapsed).floor(),
            Rate::Fill(n) => self.seq < n,
        }
    }

    /// Uniform in [0, 1) keyed by (seed, inlet, sequence number, attempt, draw).
    fn uniform(&self, seq: u64, attempt: u64, j: u64) -> f64 {
        let h = splitmix(self.seed ^ splitmix(self.index.wrapping_add(0x1e7)));
        let h = splitmix(h ^ seq);
        let h = splitmix(h ^ (attempt << 16 | j));
        crate::scene::gen::unit(h)
    }

    /// Insert the spheres wanted at `time` (collective: one all-gather). New spheres are
    /// appended to this rank's owned particles where it owns their centre (no ghosts present).
    /// Returns whether the rate was met (false: some sphere found no room).
    pub fn act(
        &mut self,
        time: f64,
        ps: &mut Particles,
        dec: &Decomp,
        comm: &Comm,
        walls: &[Wall],
    ) -> bool {
        debug_assert_eq!(ps.n_ghosts(), 0);
        let (glo, ghi) = (
            self.lo.add_scalar(-self.reach),
            self.hi.add_scalar(self.reach),
        );
        let mut mine = Vec::new();
        for i in 0..ps.n_owned {
            let p = ps.pos[i];
            if (0..3).all(|a| p[a] >= glo[a] && p[a] <= ghi[a]) {
                mine.extend([p.x, p.y, p.z, ps.radius[i]].map(f64::to_bits));
            }
        }
        let all = comm.all_gather_varlen_u64s(&mine);
        let mut near: Vec<(V3, f64)> = all
            .chunks(4)
            .map(|c| {
                let f = |k: usize| f64::from_bits(c[k]);
                (V3::new(f(0), f(1), f(2)), f(3))
            })
            .collect();
        // cells of `reach` ≥ r₁ + r₂: an overlapping sphere lies in the 27 cells around
        let h = self.reach;
        let cell = |x: &V3| x.map(|c| (c / h).floor() as i64);
        let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (k, (p, _)) in near.iter().enumerate() {
            let c = cell(p);
            grid.entry([c.x, c.y, c.z]).or_default().push(k as u32);
        }
        let mut met = true;
        let seq0 = self.seq;
        while self.wants(time) {
            assert!(
                self.seq < GID_STRIDE,
                "inlet {}: 2^40 spheres inserted (its gid range is full)",
                self.name
            );
            let seq = self.seq;
            let r = 0.5 * self.psd.sample(|j| self.uniform(seq, u64::MAX, j));
            let mut placed = None;
            let first = self.tries;
            for a in first..first + self.attempts {
                self.tries += 1;
                let c = place(&self.region, r, [0, 1, 2].map(|k| self.uniform(seq, a, k)));
                // clear of the walls (one-sided planes, normal towards the spheres)
                if walls.iter().any(|w| w.gap(c, r) < 0.0) {
                    continue;
                }
                let cc = cell(&c);
                let mut free = true;
                'cells: for dx in -1..=1 {
                    for dy in -1..=1 {
                        for dz in -1..=1 {
                            let key = [cc.x + dx, cc.y + dy, cc.z + dz];
                            for &k in grid.get(&key).map_or(&[][..], |v| &v[..]) {
                                let (p, rp) = near[k as usize];
                                if (c - p).norm_squared() < (r + rp) * (r + rp) {
                                    free = false;
                                    break 'cells;
                                }
                            }
                        }
                    }
                }
                if free {
                    placed = Some(c);
                    break;
                }
            }
            let Some(c) = placed else {
                met = false;
                break;
            };
            let mut p = Particle::sphere(self.gid_base + seq, c, r, self.density, self.material);
            p.vel = self.velocity;
            p.tag = self.tag;
            grid.entry([cell(&c).x, cell(&c).y, cell(&c).z])
                .or_default()
                .push(near.len() as u32);
            near.push((c, r));
            self.seq += 1;
            self.mass += p.mass;
            if dec.owns(&c) {
                ps.push_owned(&p);
            }
        }
        if comm.is_root() {
            log::debug!(
                "inlet `{}` at t = {time:.4e} s: {} spheres inserted ({} so far, {:.4e} kg, {} \
                 placement attempts){}",
                self.name,
                self.seq - seq0,
                self.seq,
                self.mass,
                self.tries,
                if met { "" } else { "; no room for more" }
            );
        }
        if !met && !self.warned {
            self.warned = true;
            if comm.is_root() {
                log::warn!(
                    "inlet `{}`: no room for a sphere after {} attempts at t = {time:.3e} s: the \
                     rate cannot be met (the achieved count and mass are in series.csv)",
                    self.name,
                    self.attempts
                );
            }
        }
        met
    }
}

fn default_hundred() -> u64 {
    100
}
fn default_attempts() -> u64 {
    50
}
fn default_inlet_seed() -> u64 {
    22
}
fn infinity() -> f64 {
    f64::INFINITY
}
fn zero3() -> Vec3 {
    [0.0; 3]
}

/// An inlet (`engines/inlet.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Inlet")]
pub struct InletSpec {
    /// Letters, digits and `_`; unique among the inlets.
    pub name: String,
    /// A `Box` or a `Cylinder` (a `HalfSpace` is refused: no volume to fill).
    pub region: RegionSpec,
    pub material: String,
    /// Size distribution of the diameters [m] (also written `diameters`); or `radii`.
    #[serde(default, alias = "diameters")]
    pub psd: Option<PsdSpec>,
    /// The same distributions of the radii [m], instead of `psd`.
    #[serde(default)]
    pub radii: Option<PsdSpec>,
    pub rate: RateSpec,
    /// Initial velocity of the new spheres [m/s] (default 0).
    #[serde(default = "zero3")]
    pub velocity: Vec3,
    /// Start and stop times [s] (default 0, never).
    #[serde(default)]
    pub start: f64,
    #[serde(default = "infinity")]
    pub stop: f64,
    #[serde(default = "default_inlet_seed")]
    pub seed: u64,
    /// Acts every this many steps (default 100): each action forces a neighbour rebuild.
    #[serde(default = "default_hundred")]
    pub every: u64,
    /// Placement attempts per sphere before giving up for the step (default 50).
    #[serde(default = "default_attempts")]
    pub attempts: u64,
    /// The tag of the spheres it makes, 0–65535 (default 0; the snapshots' `tag`, as a
    /// `TextFile`'s 5th column or a LAMMPS atom type).
    #[serde(default)]
    pub tag: u16,
}

/// Size distribution of diameters [m] (`engines::inlet::Psd`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum PsdSpec {
    Constant(f64),
    Uniform(f64, f64),
    /// (mean, std, min, max)
    Normal(f64, f64, f64, f64),
    /// (median, sigma of ln d, min, max)
    LogNormal(f64, f64, f64, f64),
    /// [(diameter, mass fraction), ...]
    Discrete(Vec<(f64, f64)>),
}

impl PsdSpec {
    /// The distribution of `k` times the sizes (radii → diameters: k = 2, exact); the
    /// log-normal's σ of ln d and the discrete mass fractions do not change.
    pub fn scaled(&self, k: f64) -> PsdSpec {
        match self {
            PsdSpec::Constant(d) => PsdSpec::Constant(k * d),
            PsdSpec::Uniform(a, b) => PsdSpec::Uniform(k * a, k * b),
            PsdSpec::Normal(m, s, a, b) => PsdSpec::Normal(k * m, k * s, k * a, k * b),
            PsdSpec::LogNormal(m, s, a, b) => PsdSpec::LogNormal(k * m, *s, k * a, k * b),
            PsdSpec::Discrete(t) => PsdSpec::Discrete(t.iter().map(|&(d, f)| (k * d, f)).collect()),
        }
    }
}

/// An inlet's rate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum RateSpec {
    /// kg/s
    Mass(f64),
    /// spheres/s
    Count(f64),
    /// spheres in all
    Fill(u64),
}

/// Most spheres of its smallest size an inlet's box may hold (volume ratio).
pub const MAX_INLET_SPHERES: f64 = 1e8;

impl Psd {
    /// The validated size distribution (of diameters) of inlet `p` (`s`): `psd` / `diameters`,
    /// or `radii` (doubled), exactly one; errors at the field as written.
    pub fn from_spec(ctx: &Ctx, p: &str, s: &InletSpec) -> Result<Psd> {
        let (spec, pp) = match (&s.psd, &s.radii) {
            (Some(_), Some(_)) => {
                return Err(ctx.err(
                    &format!("{p}.radii"),
                    "give either `psd` (diameters) or `radii`, not both",
                ))
            }
            (None, None) => {
                return Err(ctx.err(
                    p,
                    "missing the size distribution: `psd` (diameters) or `radii`",
                ))
            }
            (Some(d), None) => (d.clone(), ctx.written(p, &["psd", "diameters"])),
            (None, Some(r)) => (r.scaled(2.0), format!("{p}.radii")),
        };
        let pos = |v: f64| ctx.positive(&pp, v);
        let bounds = |min: f64, max: f64| -> Result<()> {
            pos(min)?;
            pos(max)?;
            if min > max {
                return Err(ctx.err(&pp, format!("min {min} > max {max}")));
            }
            Ok(())
        };
        Ok(match &spec {
            PsdSpec::Constant(d) => Psd::Constant(pos(*d)?),
            PsdSpec::Uniform(a, b) => {
                bounds(*a, *b)?;
                Psd::Uniform { min: *a, max: *b }
            }
            PsdSpec::Normal(mean, std, min, max) => {
                pos(*mean)?;
                ctx.non_negative(&pp, *std)?;
                bounds(*min, *max)?;
                Psd::Normal {
                    mean: *mean,
                    std: *std,
                    min: *min,
                    max: *max,
                }
            }
            PsdSpec::LogNormal(median, sigma, min, max) => {
                pos(*median)?;
                ctx.non_negative(&pp, *sigma)?;
                bounds(*min, *max)?;
                Psd::LogNormal {
                    median: *median,
                    sigma: *sigma,
                    min: *min,
                    max: *max,
                }
            }
            PsdSpec::Discrete(t) => {
                if t.is_empty() || t.len() > 1000 {
                    return Err(ctx.err(&pp, "needs 1 to 1000 (diameter, mass fraction) pairs"));
                }
                for &(d, f) in t {
                    pos(d)?;
                    pos(f)?;
                }
                Psd::discrete(t)
            }
        })
    }
}

impl Inlet {
    /// Validate inlet `k` of `specs` (the inlets before it: for unique names); `n`: the
    /// scene's initial sphere count (the gids before the inlets'), `dt`: the time step (a
    /// warning when it exceeds the p-wave step of the inlet's smallest spheres).
    pub fn from_spec(
        ctx: &Ctx,
        specs: &[InletSpec],
        k: usize,
        materials: &[Material],
        n: u64,
        domain: &Domain,
        dt: f64,
    ) -> Result<Inlet> {
        let (s, p) = (&specs[k], format!("inlets[{k}]"));
        ctx.column_name(&p, &s.name)?;
        if specs[..k].iter().any(|e| e.name == s.name) {
            return Err(ctx.err(
                &format!("{p}.name"),
                format!("inlet `{}` is defined twice", s.name),
            ));
        }
        let material = ctx.material(&format!("{p}.material"), &s.material, materials)?;
        let mat = &materials[material as usize];
        if mat.cpm().is_some() {
            return Err(ctx.err(&format!("{p}.material"), "inlets take frictional materials"));
        }
        let psd = Psd::from_spec(ctx, &p, s)?;
        let pp = match s.radii {
            Some(_) => format!("{p}.radii"),
            None => ctx.written(&p, &["psd", "diameters"]),
        };
        let rp = format!("{p}.region");
        let (region, volume) = region(ctx, &rp, &s.region, psd.max())?;
        let (lo, hi) = bounding_box(&region).expect("a box or a cylinder");
        if (0..3).any(|a| lo[a] < domain.lo[a] || hi[a] > domain.hi[a]) {
            return Err(ctx.err(&rp, "the region must lie inside the domain"));
        }
        // nothing sized from an unvalidated number: the region holds at most ~its volume over
        // the smallest sphere's (random sequential addition jams below that)
        let cap = volume / (psd.min().powi(3) * std::f64::consts::PI / 6.0);
        if cap > MAX_INLET_SPHERES {
            return Err(ctx.err(
                &pp,
                format!(
                    "the region could hold {cap:.3e} of its smallest spheres (at most \
                     {MAX_INLET_SPHERES:e}): a diameter in the wrong unit?"
                ),
            ));
        }
        let rate = rate(ctx, &p, &s.rate)?;
        let velocity = ctx.finite3(&format!("{p}.velocity"), s.velocity)?;
        let start = ctx.non_negative(&format!("{p}.start"), s.start)?;
        if s.stop.is_nan() || s.stop <= start {
            return Err(ctx.err(&format!("{p}.stop"), "must be later than start"));
        }
        if s.every == 0 {
            return Err(ctx.err(&format!("{p}.every"), "must be ≥ 1"));
        }
        if s.attempts == 0 || s.attempts > 100_000 {
            return Err(ctx.err(&format!("{p}.attempts"), "must be in 1..=100000"));
        }
        // the p-wave time step of the smallest sphere it makes (thesis eq. 2.85–2.86)
        let crit = mat.pwave_step(0.5 * psd.min());
        if dt > crit {
            log::warn!(
                "{}: {pp}: dt {dt:.3e} s exceeds the p-wave critical step {crit:.3e} s of its \
                 smallest spheres",
                ctx.file.display()
            );
        }
        Ok(Inlet {
            name: s.name.clone(),
            region,
            lo,
            hi,
            material,
            density: mat.density(),
            psd,
            rate,
            velocity,
            start,
            stop: s.stop,
            seed: s.seed,
            index: k as u64,
            gid_base: n + k as u64 * GID_STRIDE,
            every: s.every,
            attempts: s.attempts,
            tag: s.tag,
            reach: 0.0,
            seq: 0,
            mass: 0.0,
            tries: 0,
            warned: false,
        })
    }
}

/// An inlet's region (`rp`: its path) and its volume: a `Box` or a `Cylinder` wider than the
/// largest diameter `dmax` (a sphere must fit whole).
fn region(ctx: &Ctx, rp: &str, spec: &RegionSpec, dmax: f64) -> Result<(Region, f64)> {
    Ok(match spec {
        RegionSpec::Box { lo, hi } => {
            let (lo, hi) = (ctx.finite3(rp, *lo)?, ctx.finite3(rp, *hi)?);
            if (0..3).any(|a| hi[a] - lo[a] <= dmax) {
                return Err(ctx.err(
                    rp,
                    format!("the box must be wider than the largest diameter {dmax} on every axis"),
                ));
            }
            let v = (0..3).map(|a| hi[a] - lo[a]).product::<f64>();
            (Region::Box { lo, hi }, v)
        }
        RegionSpec::Cylinder { a, b, radius } => {
            let (a, b) = (ctx.finite3(rp, *a)?, ctx.finite3(rp, *b)?);
            if (b - a).norm_squared() == 0.0 {
                return Err(ctx.err(rp, "the axis ends a and b must differ"));
            }
            let radius = ctx.positive(rp, *radius)?;
            let len = (b - a).norm();
            if 2.0 * radius <= dmax || len <= dmax {
                return Err(ctx.err(
                    rp,
                    format!(
                        "the cylinder's diameter {} and length {len} must exceed the largest \
                         sphere diameter {dmax}",
                        2.0 * radius
                    ),
                ));
            }
            let v = std::f64::consts::PI * radius * radius * len;
            (Region::Cylinder { a, b, radius }, v)
        }
        RegionSpec::HalfSpace { .. } => {
            return Err(ctx.err(
                rp,
                "inlets take a `Box` or `Cylinder` region (a half-space has no volume to fill)",
            ))
        }
    })
}

/// An inlet's rate (`p`: the inlet's path).
fn rate(ctx: &Ctx, p: &str, spec: &RateSpec) -> Result<Rate> {
    let rp = format!("{p}.rate");
    Ok(match *spec {
        RateSpec::Mass(q) => Rate::Mass(ctx.positive(&rp, q)?),
        RateSpec::Count(q) => Rate::Count(ctx.positive(&rp, q)?),
        RateSpec::Fill(n) if n > 0 && n < GID_STRIDE => Rate::Fill(n),
        RateSpec::Fill(_) => return Err(ctx.err(&rp, "Fill needs 1 to 2^40")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discrete_psd_draws_by_number_fraction() {
        // equal mass fractions of d and 2d: 8 times more small spheres by number
        let p = Psd::discrete(&[(1.0, 0.5), (2.0, 0.5)]);
        let n = 100_000;
        let small = (0..n)
            .filter(|&k| p.sample(|_| crate::scene::gen::unit(splitmix(k))) == 1.0)
            .count();
        let f = small as f64 / n as f64;
        assert!((f - 8.0 / 9.0).abs() < 0.005, "{f}");
    }

    #[test]
    fn truncated_normal_stays_in_bounds_with_its_mean() {
        let p = Psd::Normal {
            mean: 1.0,
            std: 0.1,
            min: 0.8,
            max: 1.2,
        };
        let n = 20_000u64;
        let mut s = 0.0;
        for k in 0..n {
            let d = p.sample(|j| crate::scene::gen::unit(splitmix(k * 1000 + j)));
            assert!((0.8..=1.2).contains(&d));
            s += d;
        }
        assert!((s / n as f64 - 1.0).abs() < 0.005);
    }

    /// Centres in a tilted cylinder: every sphere wholly inside; uniform over the shrunk
    /// cylinder (mean (ρ/(R − r))² = 1/2 as for a uniform disc, mean axial position L/2,
    /// mean angle-free: the centroid on the axis).
    #[test]
    fn cylinder_placement_is_uniform_and_inside() {
        let (a, b) = (V3::new(0.1, -0.2, 0.3), V3::new(0.5, 0.4, -0.1));
        let (big_r, r) = (0.2, 0.05);
        let reg = Region::Cylinder {
            a,
            b,
            radius: big_r,
        };
        let (e, len) = ((b - a).normalize(), (b - a).norm());
        let n = 40_000u64;
        let (mut s_rho2, mut s_t, mut s_perp) = (0.0, 0.0, V3::zeros());
        for k in 0..n {
            let u = [0, 1, 2].map(|j| crate::scene::gen::unit(splitmix(k * 3 + j)));
            let c = place(&reg, r, u);
            let t = (c - a).dot(&e);
            let perp = (c - a) - e * t;
            assert!(perp.norm() <= big_r - r + 1e-15 && t >= r - 1e-15 && t <= len - r + 1e-15);
            s_rho2 += perp.norm_squared() / ((big_r - r) * (big_r - r));
            s_t += (t - r) / (len - 2.0 * r);
            s_perp += perp;
        }
        let nf = n as f64;
        assert!((s_rho2 / nf - 0.5).abs() < 0.005, "{}", s_rho2 / nf);
        assert!((s_t / nf - 0.5).abs() < 0.005, "{}", s_t / nf);
        assert!(
            (s_perp / nf).norm() < 0.005 * big_r,
            "{}",
            (s_perp / nf).norm()
        );
        let (lo, hi) = bounding_box(&reg).unwrap();
        // the bounding box of the two end discs (radius R across the axis)
        for k in 0..3 {
            let ext = big_r * (1.0 - e[k] * e[k]).sqrt();
            assert!((lo[k] - (a[k].min(b[k]) - ext)).abs() < 1e-15);
            assert!((hi[k] - (a[k].max(b[k]) + ext)).abs() < 1e-15);
        }
    }
}
