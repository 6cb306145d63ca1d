//! Regions of space in which flow engines act (outlets; inlets later): a test of a particle's
//! centre.

use crate::V3;

/// A region, validated by the scene (`scene::flow_engines`): boxes with `lo < hi`, unit
/// normals, cylinders with distinct ends and a positive radius.
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
