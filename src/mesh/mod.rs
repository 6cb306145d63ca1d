//! Triangle meshes as boundaries (issue 21): rigid surfaces read from STL files
//! ([`stl`]), moved by a prescribed motion whose pose is a closed-form function of time
//! ([`Motion`]: no drift over long runs, and a restart at time t has the same pose), with a
//! broad phase on a grid of the mesh's own (body) frame, built once ([`TriGrid`]). Every rank
//! holds every mesh whole (ARCHITECTURE.md "Meshes"). The contact loop is
//! `contact::facet`; the geometry `geom`.

pub mod geom;
pub mod stl;

use crate::contact::store::Candidate;
use crate::particles::Particles;
use crate::V3;
use nalgebra::{Matrix3, Rotation3, Unit};
use rayon::prelude::*;

/// Most triangles of all meshes of a scene together (every rank holds them all: ~170 bytes
/// each, 170 MB per rank at the limit).
pub const MAX_FACETS: usize = 1_000_000;

/// Prescribed motion of a mesh, closed form in time t (s) from its position in the scene at
/// t = 0.
#[derive(Clone, Debug, PartialEq)]
pub enum Motion {
    Fixed,
    /// x(t) = x₀ + v t.
    Translate {
        velocity: V3,
    },
    /// Rotation about the axis through `point` along unit `axis` at `omega` rad/s
    /// (right-handed): x(t) = p + R(ω t)(x₀ − p), velocity ω × (x − p).
    Rotate {
        point: V3,
        axis: V3,
        omega: f64,
    },
    /// x(t) = x₀ + A (sin(2π f t + φ) − sin φ).
    Oscillate {
        amplitude: V3,
        frequency: f64,
        phase: f64,
    },
    /// x(t) = x₀ + s(t), s piecewise linear through the points (t_k, s_k) (times strictly
    /// increasing, at least two), held at s₀ before t₀ and at the last point after it.
    Table {
        points: Vec<(f64, V3)>,
    },
}

/// The segment of a table containing t (k with t_k ≤ t < t_{k+1}), or `None` outside
/// [t₀, t_last) — where the table holds still.
fn table_segment(points: &[(f64, V3)], t: f64) -> Option<usize> {
    let n = points.len();
    if n < 2 || !(t >= points[0].0 && t < points[n - 1].0) {
        return None;
    }
    // the last k with t_k ≤ t (a binary search: tables of shakers may be long)
    Some(points.partition_point(|p| p.0 <= t) - 1)
}

/// Displacement s(t) of a table (linear interpolation, thesis-free: a prescribed input).
fn table_shift(points: &[(f64, V3)], t: f64) -> V3 {
    match table_segment(points, t) {
        Some(k) => {
            let ((t0, s0), (t1, s1)) = (points[k], points[k + 1]);
            s0 + (s1 - s0) * ((t - t0) / (t1 - t0))
        }
        None if t < points[0].0 => points[0].1,
        None => points[points.len() - 1].1,
    }
}

/// Velocity ds/dt of a table at t (the slope of the segment containing t; zero outside).
fn table_velocity(points: &[(f64, V3)], t: f64) -> V3 {
    match table_segment(points, t) {
        Some(k) => {
            let ((t0, s0), (t1, s1)) = (points[k], points[k + 1]);
            (s1 - s0) / (t1 - t0)
        }
        None => V3::zeros(),
    }
}

/// The path length of a table between t0 and t1: the sum over its segments of |v| times
/// their overlap with [t0, t1] (a bound of any point's displacement).
fn table_path(points: &[(f64, V3)], t0: f64, t1: f64) -> f64 {
    let (a, b) = (t0.min(t1), t0.max(t1));
    points
        .windows(2)
        .map(|w| {
            let ((ta, sa), (tb, sb)) = (w[0], w[1]);
            let overlap = (b.min(tb) - a.max(ta)).max(0.0);
            (sb - sa).norm() / (tb - ta) * overlap
        })
        .sum()
}

impl Motion {
    /// Rotation and shift of the pose at time t: x = R x₀ + s.
    pub fn pose(&self, t: f64) -> (Matrix3<f64>, V3) {
        match *self {
            Motion::Table { ref points } => (Matrix3::identity(), table_shift(points, t)),
            Motion::Fixed => (Matrix3::identity(), V3::zeros()),
            Motion::Translate { velocity } => (Matrix3::identity(), velocity * t),
            Motion::Rotate { point, axis, omega } => {
                let r = *Rotation3::from_axis_angle(&Unit::new_unchecked(axis), omega * t).matrix();
                (r, point - r * point)
            }
            Motion::Oscillate {
                amplitude,
                frequency,
                phase,
            } => {
                let w = 2.0 * std::f64::consts::PI * frequency;
                (
                    Matrix3::identity(),
                    amplitude * ((w * t + phase).sin() - phase.sin()),
                )
            }
        }
    }

    /// Linear velocity of the pose's reference point and angular velocity at time t: a point
    /// x of the mesh moves at v + ω × (x − centre) (`centre` the rotation point).
    pub fn velocity(&self, t: f64) -> (V3, V3) {
        match *self {
            Motion::Table { ref points } => (table_velocity(points, t), V3::zeros()),
            Motion::Fixed => (V3::zeros(), V3::zeros()),
            Motion::Translate { velocity } => (velocity, V3::zeros()),
            Motion::Rotate { axis, omega, .. } => (V3::zeros(), axis * omega),
            Motion::Oscillate {
                amplitude,
                frequency,
                phase,
            } => {
                let w = 2.0 * std::f64::consts::PI * frequency;
                (amplitude * (w * (w * t + phase).cos()), V3::zeros())
            }
        }
    }

    /// An upper bound of how far any point of the mesh (within `reach` of the rotation point)
    /// moved between t0 and t1 — for the Verlet trigger.
    pub fn max_displacement(&self, t0: f64, t1: f64, reach: f64) -> f64 {
        match *self {
            Motion::Fixed => 0.0,
            Motion::Translate { velocity } => velocity.norm() * (t1 - t0).abs(),
            // chord 2ρ sin(Δθ/2) ≤ ρ |Δθ|
            Motion::Rotate { omega, .. } => (omega * (t1 - t0)).abs() * reach,
            Motion::Oscillate { .. } => (self.pose(t1).1 - self.pose(t0).1).norm(),
            Motion::Table { ref points } => table_path(points, t0, t1),
        }
    }

    fn is_fixed(&self) -> bool {
        *self == Motion::Fixed
    }
}

/// One rigid mesh: its triangles at t = 0 (the body frame) and its motion.
#[derive(Clone, Debug)]
pub struct Mesh {
    /// The STL file, for messages and output.
    pub name: String,
    pub material: u16,
    /// Index of its first triangle among all meshes' (a facet's wall index is
    /// `n_walls + first + k`).
    pub first: u32,
    pub motion: Motion,
    /// The triangles at t = 0, and their unit normals.
    pub body: Vec<[V3; 3]>,
    body_normal: Vec<V3>,
    /// Torques are taken about this point at t = 0 (the rotation point, else the vertices'
    /// centroid), moving with the mesh.
    pub centre0: V3,
    /// Largest distance of a vertex from the rotation point (or the centroid).
    pub reach: f64,
    grid: TriGrid,
}

impl Mesh {
    /// A mesh of triangles `body` (validated: finite, not degenerate). `cell` is the smallest
    /// cell of its broad-phase grid (the candidate reach: 2 (r_max + skin)).
    pub fn new(name: String, material: u16, body: Vec<[V3; 3]>, motion: Motion, cell: f64) -> Self {
        let nv = (3 * body.len()).max(1) as f64;
        let centroid = body.iter().flatten().fold(V3::zeros(), |s, v| s + v) / nv;
        let centre0 = match &motion {
            Motion::Rotate { point, .. } => *point,
            _ => centroid,
        };
        let reach = body
            .iter()
            .flatten()
            .map(|v| (v - centre0).norm())
            .fold(0.0, f64::max);
        let body_normal = body
            .iter()
            .map(|t| geom::unit_normal(t[0], t[1], t[2]))
            .collect();
        let grid = TriGrid::new(&body, cell);
        Mesh {
            name,
            material: 0,
            first: 0,
            motion,
            body,
            body_normal,
            centre0,
            reach,
            grid,
        }
        .with_material(material)
    }

    fn with_material(mut self, m: u16) -> Self {
        self.material = m;
        self
    }

    /// Axis-aligned bounding box of the triangles at t = 0.
    pub fn bbox(&self) -> (V3, V3) {
        self.body.iter().flatten().fold(
            (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY)),
            |(lo, hi), v| (lo.inf(v), hi.sup(v)),
        )
    }
}

/// All meshes of a scene with their triangles at the current time (world frame), replicated
/// on every rank. Its state is the time alone: [`MeshSet::set_time`] recomputes the poses.
#[derive(Clone, Debug, Default)]
pub struct MeshSet {
    pub meshes: Vec<Mesh>,
    /// Per triangle of all meshes, at the current time: vertices, unit normal, mesh index.
    pub tri: Vec<[V3; 3]>,
    pub normal: Vec<V3>,
    pub mesh_of: Vec<u16>,
    /// Per mesh at the current time: pose (x = R x₀ + s), velocity of the rotation
    /// point/centre and angular velocity, centre.
    pose: Vec<(Matrix3<f64>, V3)>,
    pub vel: Vec<(V3, V3)>,
    pub centre: Vec<V3>,
    /// Current time, and the time of the last neighbour rebuild.
    pub time: f64,
    ref_time: f64,
}

impl MeshSet {
    pub fn new(mut meshes: Vec<Mesh>) -> Self {
        let mut first = 0u32;
        let mut s = MeshSet::default();
        for (m, mesh) in meshes.iter_mut().enumerate() {
            mesh.first = first;
            first += mesh.body.len() as u32;
            s.tri.extend_from_slice(&mesh.body);
            s.mesh_of
                .extend(std::iter::repeat_n(m as u16, mesh.body.len()));
        }
        s.normal = vec![V3::zeros(); s.tri.len()];
        s.meshes = meshes;
        s.pose = vec![(Matrix3::identity(), V3::zeros()); s.meshes.len()];
        s.vel = vec![(V3::zeros(), V3::zeros()); s.meshes.len()];
        s.centre = s.meshes.iter().map(|m| m.centre0).collect();
        s.time = f64::NAN; // forces the first set_time to place every mesh
        s.set_time(0.0);
        s.ref_time = 0.0;
        s
    }

    pub fn is_empty(&self) -> bool {
        self.meshes.is_empty()
    }

    /// Number of triangles of all meshes.
    pub fn n_facets(&self) -> usize {
        self.tri.len()
    }

    /// Put every mesh at its pose of time `t` (closed form: [`Motion::pose`]).
    pub fn set_time(&mut self, t: f64) {
        let first_time = self.time.is_nan();
        self.time = t;
        for (m, mesh) in self.meshes.iter().enumerate() {
            if mesh.motion.is_fixed() && !first_time {
                continue;
            }
            let (r, s) = mesh.motion.pose(t);
            self.pose[m] = (r, s);
            self.vel[m] = mesh.motion.velocity(t);
            self.centre[m] = r * mesh.centre0 + s;
            let a = mesh.first as usize;
            for (k, b) in mesh.body.iter().enumerate() {
                let w: [V3; 3] = std::array::from_fn(|v| r * b[v] + s);
                self.normal[a + k] = geom::unit_normal(w[0], w[1], w[2]);
                self.tri[a + k] = w;
            }
        }
    }

    /// Velocity of the point `x` of mesh `m` (v + ω × (x − centre)).
    #[inline]
    pub fn point_velocity(&self, m: usize, x: V3) -> V3 {
        let (v, w) = self.vel[m];
        v + w.cross(&(x - self.centre[m]))
    }

    /// Angular velocity of mesh `m`.
    #[inline]
    pub fn angvel(&self, m: usize) -> V3 {
        self.vel[m].1
    }

    /// Time of the last neighbour rebuild ([`Self::candidates`]).
    pub fn ref_time(&self) -> f64 {
        self.ref_time
    }

    /// Largest displacement of any mesh point since the last rebuild (Verlet trigger).
    pub fn max_displacement(&self) -> f64 {
        self.meshes
            .iter()
            .map(|m| m.motion.max_displacement(self.ref_time, self.time, m.reach))
            .fold(0.0, f64::max)
    }

    /// Sphere–triangle candidates at a rebuild: owned spheres whose gap to a triangle is
    /// < `skin`, appended to `out` as (gid, `n_walls` + facet) (in chunks of spheres on the
    /// rayon pool; the order is the chunks', and the pair list is put in key order anyway). The
    /// sphere's centre is taken into the mesh's body frame, where the grid was built once.
    /// Marks the rebuild time.
    pub fn candidates(
        &mut self,
        ps: &Particles,
        skin: f64,
        n_walls: usize,
        out: &mut Vec<Candidate>,
    ) {
        self.ref_time = self.time;
        const CHUNK: usize = 1024;
        let n = ps.n_owned;
        let parts: Vec<Vec<Candidate>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (mut found, mut seen) = (Vec::new(), Vec::new());
                for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                    for (m, mesh) in self.meshes.iter().enumerate() {
                        self.sphere_candidates(m, mesh, ps, i, skin, &mut seen, |t| {
                            found.push(Candidate {
                                key: (ps.gid[i], (n_walls + t) as u64),
                                i: i as u32,
                                j: (n_walls + t) as u32,
                                near: true,
                            })
                        });
                    }
                }
                found
            })
            .collect();
        for p in parts {
            out.extend(p);
        }
    }

    /// The triangles of mesh `m` within `skin` of sphere i (`seen`: scratch), by their index
    /// among all meshes' triangles.
    #[allow(clippy::too_many_arguments)]
    fn sphere_candidates(
        &self,
        m: usize,
        mesh: &Mesh,
        ps: &Particles,
        i: usize,
        skin: f64,
        seen: &mut Vec<u32>,
        mut found: impl FnMut(usize),
    ) {
        let (r, s) = self.pose[m];
        let (c0, rad) = (r.transpose() * (ps.pos[i] - s), ps.radius[i]);
        let reach = V3::repeat(rad + skin);
        seen.clear();
        mesh.grid.query(c0 - reach, c0 + reach, |k| seen.push(k));
        seen.sort_unstable();
        seen.dedup(); // a triangle is listed in every cell its box meets
        for &k in seen.iter() {
            let b = &mesh.body[k as usize];
            // the plane's distance bounds the triangle's from below: a cheap rejection
            let h = (c0 - b[0]).dot(&mesh.body_normal[k as usize]);
            if h.abs() - rad >= skin {
                continue;
            }
            let (q, _) = geom::closest_point(c0, b[0], b[1], b[2]);
            if (c0 - q).norm() - rad < skin {
                found(mesh.first as usize + k as usize);
            }
        }
    }
}

/// Bounding box of a triangle.
fn tri_box(t: &[V3; 3]) -> (V3, V3) {
    (t[0].inf(&t[1]).inf(&t[2]), t[0].sup(&t[1]).sup(&t[2]))
}

/// Uniform grid of a mesh's triangles in its body frame (CSR: each cell lists the triangles
/// whose bounding box meets it). Built once: spheres are taken into the body frame instead.
#[derive(Clone, Debug, Default)]
struct TriGrid {
    lo: V3,
    h: f64,
    dims: [usize; 3],
    start: Vec<u32>,
    items: Vec<u32>,
}

/// Most cells along one axis of a [`TriGrid`].
const GRID_MAX_DIM: usize = 128;
/// Most (cell, triangle) entries of a [`TriGrid`] beyond 64 per triangle: larger cells then.
const GRID_MAX_ENTRIES: usize = 4 << 20;

impl TriGrid {
    /// Cells of at least `cell` (the candidate reach), at most [`GRID_MAX_DIM`] per axis, and
    /// larger while the triangles' bounding boxes would fill more than [`GRID_MAX_ENTRIES`]
    /// plus 64 per triangle (cells as small as the reach keep the few triangles near a sphere
    /// apart from the many that are not: a drum's cap triangles span its whole disc).
    fn new(tris: &[[V3; 3]], cell: f64) -> Self {
        let (mut lo, mut hi) = (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY));
        for t in tris {
            let (a, b) = tri_box(t);
            lo = lo.inf(&a);
            hi = hi.sup(&b);
        }
        if tris.is_empty() {
            return TriGrid::default();
        }
        let ext = (hi - lo).max();
        let mut h = cell.max(ext / GRID_MAX_DIM as f64).max(f64::MIN_POSITIVE);
        let limit = GRID_MAX_ENTRIES + 64 * tris.len();
        let mut g = loop {
            let dims: [usize; 3] = std::array::from_fn(|a| {
                (((hi[a] - lo[a]) / h).floor() as usize + 1).min(GRID_MAX_DIM)
            });
            let g = TriGrid {
                lo,
                h,
                dims,
                start: vec![0; dims[0] * dims[1] * dims[2] + 1],
                items: Vec::new(),
            };
            let entries: usize = tris.iter().map(|t| g.n_cells(tri_box(t))).sum();
            if entries <= limit {
                break g;
            }
            h *= 1.5;
        };
        // two passes: count, then fill (CSR)
        let shape = g.clone();
        for t in tris {
            let (a, b) = tri_box(t);
            shape.for_cells(a, b, |c| g.start[c + 1] += 1);
        }
        for c in 0..g.start.len() - 1 {
            g.start[c + 1] += g.start[c];
        }
        g.items = vec![0; g.start[g.start.len() - 1] as usize];
        let mut fill = g.start.clone();
        for (k, t) in tris.iter().enumerate() {
            let (a, b) = tri_box(t);
            shape.for_cells(a, b, |c| {
                g.items[fill[c] as usize] = k as u32;
                fill[c] += 1;
            });
        }
        g
    }

    fn cell_range(&self, lo: V3, hi: V3) -> Option<[std::ops::RangeInclusive<usize>; 3]> {
        let mut r: [std::ops::RangeInclusive<usize>; 3] = std::array::from_fn(|_| 0..=0);
        for a in 0..3 {
            let top = self.dims[a] as f64 - 1.0;
            let (x0, x1) = ((lo[a] - self.lo[a]) / self.h, (hi[a] - self.lo[a]) / self.h);
            if !(x1 >= 0.0 && x0 <= top + 1.0) {
                return None; // outside (or NaN)
            }
            r[a] = (x0.max(0.0).floor().min(top) as usize)..=(x1.floor().min(top) as usize);
        }
        Some(r)
    }

    /// Number of cells the box (lo, hi) meets.
    fn n_cells(&self, (lo, hi): (V3, V3)) -> usize {
        self.cell_range(lo, hi)
            .map_or(0, |r| r.iter().map(|a| a.clone().count()).product())
    }

    fn for_cells(&self, lo: V3, hi: V3, mut f: impl FnMut(usize)) {
        let Some([rx, ry, rz]) = self.cell_range(lo, hi) else {
            return;
        };
        for z in rz {
            for y in ry.clone() {
                for x in rx.clone() {
                    f((z * self.dims[1] + y) * self.dims[0] + x);
                }
            }
        }
    }

    /// Every triangle listed in a cell that the box [lo, hi] meets (a triangle may come
    /// several times).
    fn query(&self, lo: V3, hi: V3, mut f: impl FnMut(u32)) {
        if self.items.is_empty() {
            return;
        }
        self.for_cells(lo, hi, |c| {
            for &k in &self.items[self.start[c] as usize..self.start[c + 1] as usize] {
                f(k);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table: the displacement interpolates linearly between its points, holds before the
    /// first and after the last; the velocity is the segment's slope (the next segment's at a
    /// breakpoint, zero outside); the Verlet bound is the path length, not the net shift.
    #[test]
    fn table_pose_velocity_and_path() {
        let z = |v: f64| V3::new(0.0, 0.0, v);
        let m = Motion::Table {
            points: vec![
                (0.1, z(0.0)),
                (0.3, z(2e-3)),
                (0.4, z(-1e-3)),
                (0.6, z(-1e-3)),
            ],
        };
        let shift = |t: f64| m.pose(t).1;
        assert_eq!(shift(0.0), z(0.0));
        assert_eq!(shift(0.1), z(0.0));
        assert!((shift(0.2) - z(1e-3)).norm() < 1e-18);
        assert_eq!(shift(0.3), z(2e-3));
        assert!((shift(0.35) - z(0.5e-3)).norm() < 1e-17);
        assert_eq!(shift(0.6), z(-1e-3));
        assert_eq!(shift(7.0), z(-1e-3));
        let vel = |t: f64| m.velocity(t).0;
        assert_eq!(vel(0.05), V3::zeros());
        assert!((vel(0.2) - z(1e-2)).norm() < 1e-16);
        assert!(
            (vel(0.3) - z(-3e-2)).norm() < 1e-15,
            "the next segment at a breakpoint"
        );
        assert_eq!(vel(0.5), V3::zeros());
        assert_eq!(vel(0.6), V3::zeros());
        assert_eq!(m.velocity(0.2).1, V3::zeros(), "no rotation");
        // up 2 mm, down 3 mm: a path of 5 mm for a net shift of 1 mm
        assert!((m.max_displacement(0.0, 1.0, 1.0) - 5e-3).abs() < 1e-15);
        assert!((m.max_displacement(0.2, 0.35, 1.0) - 2.5e-3).abs() < 1e-15);
        assert!((m.max_displacement(0.35, 0.2, 1.0) - 2.5e-3).abs() < 1e-15);
    }

    /// The rotating pose is closed form: after a full turn the mesh is back (to rounding),
    /// and the point velocity is ω × (x − p).
    #[test]
    fn rotation_pose_and_velocity() {
        let m = Motion::Rotate {
            point: V3::new(1.0, 0.0, 0.0),
            axis: V3::new(0.0, 0.0, 1.0),
            omega: 2.0,
        };
        let (r, s) = m.pose(std::f64::consts::PI / 4.0); // quarter turn
        let x = r * V3::new(2.0, 0.0, 0.5) + s;
        assert!((x - V3::new(1.0, 1.0, 0.5)).norm() < 1e-15);
        let (r, s) = m.pose(std::f64::consts::PI); // full turn
        assert!((r * V3::new(2.0, 3.0, 0.5) + s - V3::new(2.0, 3.0, 0.5)).norm() < 1e-14);
        assert!(m.max_displacement(0.0, 0.1, 3.0) >= 0.2 * 3.0 * (0.1f64).sin() / 0.1 - 1e-12);
    }

    /// The grid finds every triangle within reach of a point (against brute force).
    #[test]
    fn grid_query_is_complete() {
        let mut tris = Vec::new();
        for i in 0..20 {
            for j in 0..20 {
                let p = V3::new(i as f64 * 0.1, j as f64 * 0.1, 0.02 * ((i * j) % 3) as f64);
                tris.push([p, p + V3::new(0.1, 0.0, 0.0), p + V3::new(0.0, 0.1, 0.01)]);
            }
        }
        let g = TriGrid::new(&tris, 0.05);
        for k in 0..100 {
            let c = V3::new(0.021 * k as f64, 0.019 * (k % 37) as f64 * 2.5, 0.03);
            let reach = 0.07;
            let mut seen = vec![false; tris.len()];
            g.query(c - V3::repeat(reach), c + V3::repeat(reach), |t| {
                seen[t as usize] = true
            });
            for (t, tri) in tris.iter().enumerate() {
                let (q, _) = geom::closest_point(c, tri[0], tri[1], tri[2]);
                if (c - q).norm() < reach {
                    assert!(seen[t], "triangle {t} missed from {c:?}");
                }
            }
        }
    }
}
