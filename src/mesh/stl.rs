//! STL reader (ASCII and binary), our own: the crates we looked at (`stl_io`) report a bad
//! file without the triangle or line it failed at, and the scene's errors name both
//! (docs/scene-format.md "Meshes"). Facet normals of the file are ignored (the geometry's
//! right-hand order defines them; contacts are two-sided anyway).
//!
//! Binary layout: 80-byte header, u32 triangle count, then 50 bytes per triangle (normal,
//! three vertices as 12 little-endian f32, a u16 attribute). A file whose size is exactly
//! 84 + 50 n is binary even when its header starts with `solid` (many exporters write that).

use crate::V3;

/// A reading or validation error: the triangle (0-based, in file order) and, for ASCII files,
/// the line (1-based) where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct StlError {
    pub triangle: Option<usize>,
    pub line: Option<usize>,
    pub msg: String,
}

impl std::fmt::Display for StlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.triangle, self.line) {
            (Some(t), Some(l)) => write!(f, "triangle {t} (line {l}): {}", self.msg),
            (Some(t), None) => write!(f, "triangle {t}: {}", self.msg),
            (None, Some(l)) => write!(f, "line {l}: {}", self.msg),
            (None, None) => write!(f, "{}", self.msg),
        }
    }
}

/// Triangles as three vertices each, with the ASCII line of each triangle's `facet` (empty
/// for binary files).
#[derive(Clone, Debug, Default)]
pub struct Stl {
    pub tris: Vec<[V3; 3]>,
    pub lines: Vec<usize>,
}

/// Parse an STL file's bytes; at most `max_tris` triangles (checked before anything is
/// allocated for them).
pub fn parse(bytes: &[u8], max_tris: usize) -> Result<Stl, StlError> {
    let err = |msg: String| StlError {
        triangle: None,
        line: None,
        msg,
    };
    if bytes.len() >= 84 {
        let n = u32::from_le_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]) as u64;
        if 84 + 50 * n == bytes.len() as u64 {
            if n as usize > max_tris {
                return Err(err(format!("{n} triangles: at most {max_tris}")));
            }
            return Ok(parse_binary(&bytes[84..], n as usize));
        }
    }
    let head = bytes.iter().skip_while(|b| b.is_ascii_whitespace());
    if !head.take(5).copied().eq(*b"solid") {
        return Err(err(
            "neither ASCII STL (starts with `solid`) nor binary STL (84 + 50 n bytes for n \
             triangles)"
                .into(),
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| err(format!("ASCII STL that is not UTF-8 text: {e}")))?;
    parse_ascii(text, max_tris)
}

fn parse_binary(body: &[u8], n: usize) -> Stl {
    let f32_at = |o: usize| f32::from_le_bytes([body[o], body[o + 1], body[o + 2], body[o + 3]]);
    let tris = (0..n)
        .map(|t| {
            let o = 50 * t + 12; // skip the normal
            std::array::from_fn(|v| {
                let b = o + 12 * v;
                V3::new(f32_at(b) as f64, f32_at(b + 4) as f64, f32_at(b + 8) as f64)
            })
        })
        .collect();
    Stl {
        tris,
        lines: Vec::new(),
    }
}

/// Whitespace-separated tokens with their line numbers.
struct Tokens<'a> {
    it: std::iter::Peekable<Box<dyn Iterator<Item = (usize, &'a str)> + 'a>>,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        let it: Box<dyn Iterator<Item = (usize, &'a str)>> = Box::new(
            text.lines()
                .enumerate()
                .flat_map(|(l, s)| s.split_whitespace().map(move |w| (l + 1, w))),
        );
        Tokens {
            it: it.peekable(),
            last_line: 1,
        }
    }
    fn next(&mut self) -> Option<(usize, &'a str)> {
        let t = self.it.next();
        if let Some((l, _)) = t {
            self.last_line = l;
        }
        t
    }
    fn peek(&mut self) -> Option<&'a str> {
        self.it.peek().map(|t| t.1)
    }
    /// The next token must be `word`.
    fn expect(&mut self, word: &str, tri: Option<usize>) -> Result<usize, StlError> {
        match self.next() {
            Some((l, w)) if w == word => Ok(l),
            Some((l, w)) => Err(StlError {
                triangle: tri,
                line: Some(l),
                msg: format!("expected `{word}`, found `{w}`"),
            }),
            None => Err(StlError {
                triangle: tri,
                line: Some(self.last_line),
                msg: format!("expected `{word}`, found the end of the file"),
            }),
        }
    }
    /// The next token as a number.
    fn number(&mut self, tri: usize) -> Result<f64, StlError> {
        let (l, w) = self.next().ok_or(StlError {
            triangle: Some(tri),
            line: Some(self.last_line),
            msg: "expected a number, found the end of the file".into(),
        })?;
        w.parse::<f64>().map_err(|_| StlError {
            triangle: Some(tri),
            line: Some(l),
            msg: format!("expected a number, found `{w}`"),
        })
    }
}

fn parse_ascii(text: &str, max_tris: usize) -> Result<Stl, StlError> {
    let mut tk = Tokens::new(text);
    let mut out = Stl::default();
    // one or more solids: `solid [name]` facets `endsolid [name]`
    while tk.peek().is_some() {
        tk.expect("solid", None)?;
        // the name runs to the first `facet` or `endsolid`
        while let Some(w) = tk.peek() {
            if w == "facet" || w == "endsolid" {
                break;
            }
            tk.next();
        }
        loop {
            match tk.peek() {
                Some("facet") => {
                    let t = out.tris.len();
                    if t >= max_tris {
                        return Err(StlError {
                            triangle: Some(t),
                            line: Some(tk.last_line),
                            msg: format!("more than {max_tris} triangles"),
                        });
                    }
                    let line = tk.expect("facet", Some(t))?;
                    tk.expect("normal", Some(t))?;
                    for _ in 0..3 {
                        tk.number(t)?;
                    }
                    tk.expect("outer", Some(t))?;
                    tk.expect("loop", Some(t))?;
                    let mut v = [V3::zeros(); 3];
                    for x in &mut v {
                        tk.expect("vertex", Some(t))?;
                        *x = V3::new(tk.number(t)?, tk.number(t)?, tk.number(t)?);
                    }
                    tk.expect("endloop", Some(t))?;
                    tk.expect("endfacet", Some(t))?;
                    out.tris.push(v);
                    out.lines.push(line);
                }
                Some("endsolid") => {
                    tk.next();
                    // an optional name, up to the next `solid`
                    while let Some(w) = tk.peek() {
                        if w == "solid" {
                            break;
                        }
                        tk.next();
                    }
                    break;
                }
                _ => {
                    let (l, w) = tk.next().map_or(
                        (tk.last_line, "the end of the file".to_string()),
                        |(l, w)| (l, format!("`{w}`")),
                    );
                    return Err(StlError {
                        triangle: None,
                        line: Some(l),
                        msg: format!("expected `facet` or `endsolid`, found {w}"),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Refuse non-finite coordinates, degenerate (zero-area) triangles and duplicates (the same
/// three vertices in any order), naming the first offending triangle. "Zero area": twice the
/// area |ab × ac| ≤ 1e-12 times the longest edge squared (collinear to rounding).
pub fn validate(stl: &Stl) -> Result<(), StlError> {
    let at = |t: usize, msg: String| StlError {
        triangle: Some(t),
        line: stl.lines.get(t).copied(),
        msg,
    };
    for (t, v) in stl.tris.iter().enumerate() {
        if let Some(k) = v.iter().position(|x| !x.iter().all(|c| c.is_finite())) {
            return Err(at(
                t,
                format!("vertex {k} is not finite: {:?}", v[k].as_slice()),
            ));
        }
        let (ab, ac, bc) = (v[1] - v[0], v[2] - v[0], v[2] - v[1]);
        let longest = ab
            .norm_squared()
            .max(ac.norm_squared())
            .max(bc.norm_squared());
        if ab.cross(&ac).norm() <= 1e-12 * longest || longest == 0.0 {
            return Err(at(
                t,
                "zero area (degenerate triangle: its vertices are collinear or coincide)".into(),
            ));
        }
    }
    // duplicates: sort the triangles by their sorted vertex bits
    let key = |t: usize| {
        let mut k: [[u64; 3]; 3] =
            std::array::from_fn(|v| std::array::from_fn(|c| stl.tris[t][v][c].to_bits()));
        k.sort_unstable();
        k
    };
    let mut order: Vec<(_, usize)> = (0..stl.tris.len()).map(|t| (key(t), t)).collect();
    order.sort_unstable();
    let mut dup: Option<(usize, usize)> = None;
    for w in order.windows(2) {
        if w[0].0 == w[1].0 {
            let (a, b) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
            if dup.is_none_or(|(_, d)| b < d) {
                dup = Some((a, b));
            }
        }
    }
    match dup {
        Some((a, b)) => Err(at(b, format!("duplicate of triangle {a}"))),
        None => Ok(()),
    }
}

/// ASCII STL text of `tris` (for tests and generated scenes).
pub fn to_ascii(name: &str, tris: &[[V3; 3]]) -> String {
    let mut s = format!("solid {name}\n");
    for t in tris {
        let n = super::geom::unit_normal(t[0], t[1], t[2]);
        s += &format!(
            "  facet normal {:e} {:e} {:e}\n    outer loop\n",
            n.x, n.y, n.z
        );
        for v in t {
            s += &format!("      vertex {:e} {:e} {:e}\n", v.x, v.y, v.z);
        }
        s += "    endloop\n  endfacet\n";
    }
    s += &format!("endsolid {name}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> Vec<[V3; 3]> {
        let p = |x: f64, y: f64| V3::new(x, y, 0.0);
        vec![
            [p(0.0, 0.0), p(1.0, 0.0), p(1.0, 1.0)],
            [p(0.0, 0.0), p(1.0, 1.0), p(0.0, 1.0)],
        ]
    }

    fn binary(tris: &[[V3; 3]]) -> Vec<u8> {
        let mut b = vec![0u8; 80];
        b[..5].copy_from_slice(b"solid"); // as some exporters do
        b.extend((tris.len() as u32).to_le_bytes());
        for t in tris {
            b.extend([0u8; 12]);
            for v in t {
                for c in v.iter() {
                    b.extend((*c as f32).to_le_bytes());
                }
            }
            b.extend([0u8; 2]);
        }
        b
    }

    #[test]
    fn ascii_and_binary_agree() {
        let a = parse(to_ascii("sq", &square()).as_bytes(), 10).unwrap();
        let b = parse(&binary(&square()), 10).unwrap();
        assert_eq!(a.tris, square());
        assert_eq!(b.tris, square());
        assert_eq!(a.lines, vec![2, 9]);
        validate(&a).unwrap();
    }

    #[test]
    fn ascii_errors_name_line_and_triangle() {
        let text = to_ascii("sq", &square()).replace(
            "vertex 1e0 1e0 0e0\n    endloop\n  endfacet\n  facet",
            "vertex 1e0 x 0e0\n    endloop\n  endfacet\n  facet",
        );
        let e = parse(text.as_bytes(), 10).unwrap_err();
        assert_eq!((e.triangle, e.line), (Some(0), Some(6)), "{e}");
        assert!(e.msg.contains("`x`"), "{e}");
        let e = parse(b"solid a\n facet normal 0 0 1\n outer loop\n", 10).unwrap_err();
        assert_eq!((e.triangle, e.line), (Some(0), Some(3)), "{e}");
        assert!(parse(b"hello", 10).is_err());
        // too many triangles: refused before reading them
        assert!(parse(&binary(&square()), 1)
            .unwrap_err()
            .msg
            .contains("at most 1"));
    }

    #[test]
    fn validation() {
        let mut t = square();
        t[1][2] = V3::new(2.0, 2.0, 0.0); // collinear with (0,0) and (1,1)
        let e = validate(&Stl {
            tris: t,
            lines: vec![],
        })
        .unwrap_err();
        assert_eq!(e.triangle, Some(1));
        assert!(e.msg.contains("zero area"));
        let mut t = square();
        t[0][1].y = f64::NAN;
        assert!(validate(&Stl {
            tris: t,
            lines: vec![]
        })
        .unwrap_err()
        .msg
        .contains("not finite"));
        let mut t = square();
        t.push([t[0][2], t[0][0], t[0][1]]); // the same vertices, rotated
        let e = validate(&Stl {
            tris: t,
            lines: vec![4, 11, 18],
        })
        .unwrap_err();
        assert_eq!((e.triangle, e.line), (Some(2), Some(18)));
        assert!(e.msg.contains("duplicate of triangle 0"), "{e}");
    }
}
