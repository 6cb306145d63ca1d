//! Sphere–triangle geometry: the closest point of a triangle to a point, with the feature
//! (face, edge, vertex) it lies on — Ericson, *Real-Time Collision Detection* (2005), §5.1.5
//! `ClosestPtPointTriangle` (Voronoi regions of the vertices, then the edges, else the face),
//! written for our vectors.

use crate::V3;

/// The part of a triangle (a, b, c) a closest point lies on. Edge k joins vertex k and vertex
/// k + 1 (mod 3): 0 = ab, 1 = bc, 2 = ca.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Feature {
    #[default]
    Face,
    Edge(u8),
    Vertex(u8),
}

/// The closest point of triangle (a, b, c) to `p` and the feature it lies on (Ericson §5.1.5:
/// barycentric coordinates from the dot products d1..d6, region by region). The triangle must
/// not be degenerate (the scene refuses zero-area triangles).
#[inline]
pub fn closest_point(p: V3, a: V3, b: V3, c: V3) -> (V3, Feature) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, Feature::Vertex(0));
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, Feature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, Feature::Edge(0));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, Feature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, Feature::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, Feature::Edge(1));
    }
    let denom = 1.0 / (va + vb + vc);
    (a + ab * (vb * denom) + ac * (vc * denom), Feature::Face)
}

/// Unit normal of triangle (a, b, c) (right-hand order), or zero for a degenerate one.
#[inline]
pub fn unit_normal(a: V3, b: V3, c: V3) -> V3 {
    let n = (b - a).cross(&(c - a));
    let l = n.norm();
    if l > 0.0 {
        n / l
    } else {
        V3::zeros()
    }
}

/// Contact of a sphere (centre `p`, radius `r`) with triangle (a, b, c) of unit normal `nf`:
/// the closest point `q`, the unit normal from the triangle to the centre, the normal
/// displacement u_N = |p − q| − r (negative in overlap, digest A5.1) and the feature. A face
/// contact takes its normal and distance from the plane (the distance to a flat floor made of
/// triangles then has the plane wall's bits); a centre on the triangle itself gets the face
/// normal.
#[inline]
pub fn sphere_contact(p: V3, r: f64, a: V3, b: V3, c: V3, nf: V3) -> (V3, V3, f64, Feature) {
    let (q, feat) = closest_point(p, a, b, c);
    if feat == Feature::Face {
        let h = (p - a).dot(&nf);
        let n = if h < 0.0 { -nf } else { nf };
        return (p - nf * h, n, h.abs() - r, feat);
    }
    let d = p - q;
    let l = d.norm();
    let n = if l > 0.0 { d / l } else { nf };
    (q, n, l - r, feat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri() -> (V3, V3, V3) {
        (
            V3::new(0.0, 0.0, 0.0),
            V3::new(1.0, 0.0, 0.0),
            V3::new(0.0, 1.0, 0.0),
        )
    }

    /// Above the face: the projection, distance = height (exact).
    #[test]
    fn face_region() {
        let (a, b, c) = tri();
        let (q, f) = closest_point(V3::new(0.25, 0.25, 0.7), a, b, c);
        assert_eq!(f, Feature::Face);
        assert!((q - V3::new(0.25, 0.25, 0.0)).norm() < 1e-15);
        let (q, n, u, f) =
            sphere_contact(V3::new(0.2, 0.3, -0.4), 0.5, a, b, c, unit_normal(a, b, c));
        assert_eq!(f, Feature::Face);
        assert_eq!(n, V3::new(0.0, 0.0, -1.0)); // from below: the normal turns
        assert_eq!(q.z, 0.0);
        assert!((u - (0.4 - 0.5)).abs() < 1e-15);
    }

    /// Beside each edge: the perpendicular foot on the edge, distance √(h² + s²) against the
    /// analytic value.
    #[test]
    fn edge_regions() {
        let (a, b, c) = tri();
        // below edge ab (y < 0): foot (0.3, 0, 0), distance √(0.2² + 0.1²)
        let p = V3::new(0.3, -0.2, 0.1);
        let (q, f) = closest_point(p, a, b, c);
        assert_eq!(f, Feature::Edge(0));
        assert!((q - V3::new(0.3, 0.0, 0.0)).norm() < 1e-15);
        assert!(((p - q).norm() - (0.05f64).sqrt()).abs() < 1e-15);
        // beyond the hypotenuse bc (x + y > 1): foot at ((x - y + 1)/2, (y - x + 1)/2)
        let p = V3::new(0.8, 0.6, 0.3);
        let (q, f) = closest_point(p, a, b, c);
        assert_eq!(f, Feature::Edge(1));
        assert!((q - V3::new(0.6, 0.4, 0.0)).norm() < 1e-15);
        let s = 0.4 / 2f64.sqrt(); // in-plane distance (x + y − 1)/√2
        assert!(((p - q).norm() - (s * s + 0.09).sqrt()).abs() < 1e-15);
        // left of edge ca (x < 0)
        let (q, f) = closest_point(V3::new(-0.5, 0.5, 0.0), a, b, c);
        assert_eq!(f, Feature::Edge(2));
        assert!((q - V3::new(0.0, 0.5, 0.0)).norm() < 1e-15);
    }

    /// In each vertex's region: the vertex, distance to it.
    #[test]
    fn vertex_regions() {
        let (a, b, c) = tri();
        let cases = [
            (V3::new(-0.3, -0.4, 1.2), a, 0u8),
            (V3::new(1.5, -0.2, 0.0), b, 1),
            (V3::new(-0.1, 1.7, -0.3), c, 2),
        ];
        for (p, v, k) in cases {
            let (q, f) = closest_point(p, a, b, c);
            assert_eq!(f, Feature::Vertex(k));
            assert_eq!(q, v);
        }
        // sphere of radius 1.4 at distance 1.3 from vertex a: u_N = −0.1
        let p = V3::new(-0.3, -0.4, 1.2);
        let (_, n, u, _) = sphere_contact(p, 1.4, a, b, c, unit_normal(a, b, c));
        assert!((u - (1.3 - 1.4)).abs() < 1e-15);
        assert!((n - p / 1.3).norm() < 1e-15);
    }

    /// A slanted triangle: the closest point is where the brute-force search over a fine
    /// barycentric grid finds it (to the grid's resolution).
    #[test]
    fn matches_brute_force() {
        let (a, b, c) = (
            V3::new(0.1, -0.3, 0.2),
            V3::new(1.2, 0.4, -0.5),
            V3::new(-0.2, 0.9, 0.6),
        );
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        };
        for _ in 0..50 {
            let p = V3::new(rnd(), rnd(), rnd());
            let (q, _) = closest_point(p, a, b, c);
            let mut best = f64::INFINITY;
            let m = 200;
            for i in 0..=m {
                for j in 0..=(m - i) {
                    let (u, v) = (i as f64 / m as f64, j as f64 / m as f64);
                    let x = a + (b - a) * u + (c - a) * v;
                    best = best.min((p - x).norm());
                }
            }
            let d = (p - q).norm();
            assert!(d <= best + 1e-12, "closer grid point: {d} > {best}");
            assert!(best - d < 1e-2, "grid {best} vs {d}");
        }
    }
}
