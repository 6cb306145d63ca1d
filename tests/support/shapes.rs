//! Triangle meshes the mesh tests share (included by `support` and, by path, by tests/suite/mesh.rs).

use demhpc::V3;
use std::f64::consts::PI;

/// The closed drum of scenes/make_drum_stl.py: axis along y through the origin, radius `r` to
/// the vertices, length `w`, `n` segments (the bottom one centred at −z), end caps as fans.
pub fn drum(r: f64, w: f64, n: usize) -> Vec<[V3; 3]> {
    let at = |k: usize, y: f64| {
        let t = -PI / 2.0 + PI / n as f64 + 2.0 * PI * k as f64 / n as f64;
        V3::new(r * t.cos(), y, r * t.sin())
    };
    let (y0, y1) = (-0.5 * w, 0.5 * w);
    let mut tris = Vec::new();
    for k in 0..n {
        let (a, b, c, d) = (at(k, y0), at(k + 1, y0), at(k + 1, y1), at(k, y1));
        tris.extend([[a, b, c], [a, c, d]]);
        tris.push([V3::new(0.0, y0, 0.0), b, a]);
        tris.push([V3::new(0.0, y1, 0.0), d, c]);
    }
    tris
}
