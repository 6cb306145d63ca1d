//! Regions of space in which engines act (outlets, inlets, force engines, the analysis region):
//! a test of a particle's centre; the spec and its validation.

use crate::error::Result;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// A region of space as a scene gives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum RegionSpec {
    /// Axis-aligned box [m].
    Box { lo: [f64; 3], hi: [f64; 3] },
    /// The side of the plane through `point` that `normal` points to (normalised on read).
    HalfSpace { point: [f64; 3], normal: [f64; 3] },
    /// Cylinder with axis from `a` to `b` and radius `radius` [m].
    Cylinder {
        a: [f64; 3],
        b: [f64; 3],
        radius: f64,
    },
}

/// A region, validated ([`Region::from_spec`]): boxes with `lo < hi`, unit normals,
/// cylinders with distinct ends and a positive radius.
#[derive(Clone, Debug, PartialEq)]
pub enum Region {
    /// Axis-aligned box `[lo, hi]`.
    Box { lo: V3, hi: V3 },
    /// The side of the plane through `point` that the unit `normal` points to (points on the
    /// plane included).
    HalfSpace { point: V3, normal: V3 },
    /// Finite cylinder: axis from `a` to `b`, radius `radius` (caps included).
    Cylinder { a: V3, b: V3, radius: f64 },
}

impl Region {
    /// A region (`rp`: its field path) validated: finite numbers, a box with lo < hi, a non-zero
    /// half-space normal (normalised), a cylinder with distinct ends and a positive radius.
    pub fn from_spec(ctx: &Ctx, rp: &str, spec: &RegionSpec) -> Result<Region> {
        Ok(match spec {
            RegionSpec::Box { lo, hi } => {
                let (lo, hi) = (ctx.finite3(rp, *lo)?, ctx.finite3(rp, *hi)?);
                if (0..3).any(|a| lo[a] >= hi[a]) {
                    return Err(ctx.err(rp, "the box needs lo < hi on every axis"));
                }
                Region::Box { lo, hi }
            }
            RegionSpec::HalfSpace { point, normal } => {
                let point = ctx.finite3(rp, *point)?;
                let n = ctx.finite3(rp, *normal)?;
                if n.norm_squared() == 0.0 {
                    return Err(ctx.err(rp, "the normal must not be zero"));
                }
                Region::HalfSpace {
                    point,
                    normal: n.normalize(),
                }
            }
            RegionSpec::Cylinder { a, b, radius } => {
                let (a, b) = (ctx.finite3(rp, *a)?, ctx.finite3(rp, *b)?);
                if (b - a).norm_squared() == 0.0 {
                    return Err(ctx.err(rp, "the axis ends a and b must differ"));
                }
                let radius = ctx.positive(rp, *radius)?;
                Region::Cylinder { a, b, radius }
            }
        })
    }

    /// The point `x` lies in the region (boundary included).
    pub fn contains(&self, x: &V3) -> bool {
        match self {
            Region::Box { lo, hi } => (0..3).all(|k| x[k] >= lo[k] && x[k] <= hi[k]),
            Region::HalfSpace { point, normal } => (x - point).dot(normal) >= 0.0,
            Region::Cylinder { a, b, radius } => {
                // projection on the axis: t = (x − a)·(b − a) / |b − a|², inside for t ∈ [0, 1]
                // and a distance to the axis |(x − a) − t (b − a)| ≤ radius
                let ab = b - a;
                let ax = x - a;
                let t = ax.dot(&ab) / ab.norm_squared();
                (0.0..=1.0).contains(&t) && (ax - ab * t).norm_squared() <= radius * radius
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_contain_their_points() {
        let b = Region::Box {
            lo: V3::new(0.0, 0.0, 0.0),
            hi: V3::new(1.0, 2.0, 3.0),
        };
        assert!(b.contains(&V3::new(0.5, 1.0, 3.0)));
        assert!(!b.contains(&V3::new(0.5, 2.1, 1.0)));
        let h = Region::HalfSpace {
            point: V3::new(0.0, 0.0, -1.0),
            normal: V3::new(0.0, 0.0, -1.0),
        };
        assert!(h.contains(&V3::new(5.0, 5.0, -1.5)));
        assert!(!h.contains(&V3::new(5.0, 5.0, -0.5)));
        let c = Region::Cylinder {
            a: V3::new(0.0, 0.0, 0.0),
            b: V3::new(0.0, 0.0, 2.0),
            radius: 0.5,
        };
        assert!(c.contains(&V3::new(0.3, 0.3, 1.0)));
        assert!(!c.contains(&V3::new(0.4, 0.4, 1.0)));
        assert!(!c.contains(&V3::new(0.0, 0.0, 2.1)));
    }
}
