//! The periodic cell (thesis §2.6; seed 001 "Periodic boundary conditions"; digest A11): a
//! parallelepiped whose edge vectors are the columns of H (Yade `Cell.hSize`), deformed by a
//! velocity gradient L through H₊₁ = (I + L Δt) H (001 "Deformations handling", digest A11.1).
//!
//! A static cell is the box `lo..hi` (H = diag(hi − lo)); every computation here then gives
//! the bits the axis-aligned code always gave. Once the cell deforms:
//!
//! * positions are **never wrapped** (Yade's rule, digest A11.2): an owned particle carries
//!   its *home image* h = −⌊H⁻¹(x − o)⌋ in `Particles::image`, so that x + H h lies in the
//!   cell. A copy's image offset stays an integer vector and the branch vector of a pair is
//!   (x₂ − x₁) + H (c₂ − c₁) as before. Flipping the cell (below) then changes no position.
//! * ranks own slabs of the *cell*, not of space: the decomposition sees every position in
//!   the frame of the reference cell, ξ = o + S₀ H⁻¹ (x − o) with S₀ = diag(hi − lo)
//!   ([`Cell::frame`]), which a homothetic deformation leaves unchanged;
//! * the cell can be **flipped** to an equivalent, less skewed basis (Yade `Cell.flipCell`,
//!   LAMMPS' tilt flip): H ← H M with an integer unimodular M, so that simple shear goes on
//!   without limit. For one tilt (simple shear) the new columns are exact (Sterbenz), so every
//!   shift H c of a periodic image keeps its bits.

use crate::{M3, V3};

/// Shape of the periodic cell and the map to the decomposition's reference frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Corner of the cell (fixed): the mean-field velocity is L (x − origin).
    pub origin: V3,
    /// Edge vectors as columns (Yade `Cell.hSize`).
    pub h: M3,
    /// H⁻¹ (kept with H).
    pub h_inv: M3,
    /// Edge lengths of the reference (scene) box: the frame the decomposition cuts.
    pub size0: V3,
    /// The cell has deformed (H ≠ diag(size0)): positions go through H⁻¹ to the frame.
    pub deformed: bool,
}

impl Cell {
    /// The box `lo..hi` as a static cell.
    pub fn boxed(lo: V3, hi: V3) -> Self {
        let size0 = hi - lo;
        let h = M3::from_diagonal(&size0);
        Cell {
            origin: lo,
            h,
            h_inv: M3::from_diagonal(&size0.map(|l| 1.0 / l)),
            size0,
            deformed: false,
        }
    }

    /// H c: the shift of periodic image offset `c` (in cell vectors). The one place it is
    /// formed, so that the binning, the pair store's shift codes and the branch vector agree
    /// to the bit. For a box (zero off-diagonal terms) it has the bits of the component-wise
    /// c ⊙ L: the products with zeros add ±0, which leaves every nonzero sum unchanged.
    #[inline(always)]
    pub fn shift(&self, c: [i32; 3]) -> V3 {
        let (x, y, z) = (c[0] as f64, c[1] as f64, c[2] as f64);
        let h = &self.h;
        V3::new(
            x * h[(0, 0)] + y * h[(0, 1)] + z * h[(0, 2)],
            x * h[(1, 0)] + y * h[(1, 1)] + z * h[(1, 2)],
            x * h[(2, 0)] + y * h[(2, 1)] + z * h[(2, 2)],
        )
    }

    /// Reduced coordinates s = H⁻¹ (x − o) (the cell is s ∈ [0, 1)³).
    #[inline]
    pub fn reduced(&self, x: &V3) -> V3 {
        self.h_inv * (x - self.origin)
    }

    /// The position of `x` in the decomposition's frame (the reference box): x itself for a
    /// cell that never deformed; o + S₀ H⁻¹ (x − o) along periodic axes otherwise (open axes,
    /// which a deforming cell never stretches nor shears, keep x).
    #[inline]
    pub fn frame(&self, x: &V3, periodic: [bool; 3]) -> V3 {
        if !self.deformed {
            return *x;
        }
        let s = self.reduced(x);
        V3::from_fn(|a, _| match periodic[a] {
            true => self.origin[a] + self.size0[a] * s[a],
            false => x[a],
        })
    }

    /// The frame position of a copy at `x` with image offset `c`: [`Self::frame`] of x + H c,
    /// formed as frame(x) + S₀ c (the frame is affine), which for a static cell is the
    /// coordinate the ghost code always used, x + c ⊙ L.
    #[inline]
    pub fn frame_image(&self, x: &V3, c: [i32; 3], periodic: [bool; 3]) -> V3 {
        let f = self.frame(x, periodic);
        V3::from_fn(|a, _| match c[a] {
            0 => f[a],
            k => f[a] + k as f64 * self.size0[a],
        })
    }

    /// The home image of a position: the integer offset h (periodic axes) with
    /// x + H h in the cell, h = −⌊H⁻¹(x − o)⌋.
    pub fn home(&self, x: &V3, periodic: [bool; 3]) -> [i32; 3] {
        let s = self.reduced(x);
        std::array::from_fn(|a| match periodic[a] {
            true => -(s[a].floor() as i32),
            false => 0,
        })
    }

    /// Distance between the two faces of the cell crossed by axis `a` of the reduced
    /// coordinates: 1/|row a of H⁻¹| (a box: its edge length).
    pub fn face_distance(&self, a: usize) -> f64 {
        1.0 / self.h_inv.row(a).norm()
    }

    /// A real distance `d` normal to the faces of axis `a`, in frame units along `a`:
    /// d · S₀ₐ |row a of H⁻¹| (a static cell: d).
    pub fn frame_distance(&self, a: usize, d: f64) -> f64 {
        if !self.deformed {
            return d;
        }
        d * self.size0[a] * self.h_inv.row(a).norm()
    }

    /// Volume det H.
    pub fn volume(&self) -> f64 {
        self.h.determinant()
    }

    /// Set H (and H⁻¹); the cell counts as deformed from now on.
    pub fn set_h(&mut self, h: M3) {
        self.h = h;
        self.h_inv = h.try_inverse().unwrap_or(M3::from_element(f64::NAN));
        self.deformed = true;
    }

    /// One step of the velocity gradient L: H ← exp(L Δt) H, written H + D H with D =
    /// [`step_map`]. Seed 001 ("Deformations handling", digest A11.1) and Yade use the first
    /// order (I + L Δt); the exponential is exact for a constant L (H(t) = exp(L t) H₀ to
    /// round-off) and equals it where L² = 0 (simple shear). The particles' mean field moves
    /// with the same D (`integrate::Affine`), so a homothetic lattice follows the cell.
    pub fn advance(&mut self, l: &M3, dt: f64) {
        let h = self.h + step_map(l, dt) * self.h;
        self.set_h(h);
    }

    /// Flip the cell to a less skewed equivalent basis if some periodic edge vector k has a
    /// projection on another periodic edge vector j beyond `limit` (> 1/2) of |j|²: edge k −=
    /// round(projection) · edge j (Yade `Cell.flipCell`; LAMMPS flips a tilt beyond half the
    /// box). Returns the integer matrix M with H_new = H_old M, or `None`.
    pub fn flip(&mut self, periodic: [bool; 3], limit: f64) -> Option<[[i32; 3]; 3]> {
        let mut m = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
        let mut h = self.h;
        let mut any = false;
        for k in (0..3).filter(|&k| periodic[k]) {
            for j in (0..3).filter(|&j| j != k && periodic[j]) {
                let (cj, ck) = (h.column(j).into_owned(), h.column(k).into_owned());
                let p = ck.dot(&cj) / cj.norm_squared();
                if p.abs() <= limit {
                    continue;
                }
                let n = p.round();
                // column k −= n column j: for one tilt, ck.x − n cj.x with cj.x the only
                // nonzero of cj and |ck.x| in [cj.x/2, 2 cj.x] (n = ±1) is exact (Sterbenz)
                let new = ck - cj * n;
                h.set_column(k, &new);
                for row in m.iter_mut() {
                    row[k] -= n as i32 * row[j];
                }
                any = true;
            }
        }
        if !any {
            return None;
        }
        self.set_h(h);
        Some(m)
    }
}

/// D = exp(L Δt) − I, the map of one step's homothetic displacement x ↦ x + D (x − o):
/// expm1 of each entry for a diagonal L (the servo's), L Δt exactly where L² = 0 (a simple
/// shear), else the matrix exponential (Padé, nalgebra) less I.
pub fn step_map(l: &M3, dt: f64) -> M3 {
    let off = (0..3).any(|r| (0..3).any(|c| r != c && l[(r, c)] != 0.0));
    if !off {
        return M3::from_diagonal(&l.diagonal().map(|x| (x * dt).exp_m1()));
    }
    let ldt = l * dt;
    if ldt * ldt == M3::zeros() {
        return ldt;
    }
    ldt.exp() - M3::identity()
}

/// The integer matrix M applied to an image offset in the old basis gives the offset in the
/// new one: c_new = M⁻¹ c_old (H_new c_new = H_old c_old). M is unimodular.
pub fn reexpress(m: &[[i32; 3]; 3], c: [i32; 3]) -> [i32; 3] {
    // adjugate / det (det = ±1)
    let a = |r: usize, k: usize| m[r][k] as i64;
    let cof = |r: usize, k: usize| {
        let (r1, r2) = ((r + 1) % 3, (r + 2) % 3);
        let (k1, k2) = ((k + 1) % 3, (k + 2) % 3);
        a(r1, k1) * a(r2, k2) - a(r1, k2) * a(r2, k1)
    };
    let det = a(0, 0) * cof(0, 0) + a(0, 1) * cof(0, 1) + a(0, 2) * cof(0, 2);
    std::array::from_fn(|r| {
        // inverse[r][k] = cof(k, r) / det
        let s: i64 = (0..3).map(|k| cof(k, r) * c[k] as i64).sum();
        (s / det) as i32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_shifts_with_the_componentwise_bits() {
        let c = Cell::boxed(V3::new(-0.3, 0.1, 0.7), V3::new(1.9, 2.3, 5.1));
        let l = V3::new(1.9 - -0.3, 2.3 - 0.1, 5.1 - 0.7);
        for img in [[1, 0, -1], [-1, -1, 1], [0, 1, 0], [2, -3, 1]] {
            let s = c.shift(img);
            for a in 0..3 {
                assert_eq!(s[a].to_bits(), (img[a] as f64 * l[a]).to_bits());
            }
        }
        let x = V3::new(0.2, 0.4, 0.9);
        assert_eq!(c.frame(&x, [true; 3]), x);
    }

    #[test]
    fn home_image_brings_a_point_into_the_sheared_cell() {
        let mut c = Cell::boxed(V3::zeros(), V3::new(2.0, 1.0, 3.0));
        let mut h = c.h;
        h[(0, 2)] = 1.1; // tilt of the z edge along x
        c.set_h(h);
        for x in [V3::new(5.3, -0.2, 7.0), V3::new(-4.0, 3.3, -1.0)] {
            let k = c.home(&x, [true; 3]);
            let s = c.reduced(&(x + c.shift(k)));
            assert!(s.iter().all(|&s| (0.0..1.0).contains(&s)), "{s:?}");
            // the frame coordinate of the wrapped point lies in the reference box
            let f = c.frame_image(&x, k, [true; 3]);
            assert!((0..3).all(|a| f[a] >= -1e-12 && f[a] < c.size0[a] + 1e-12));
        }
    }

    #[test]
    fn simple_shear_flip_keeps_every_shift_bitwise() {
        // simple shear of the xz plane: the z edge tilts along x past half the x edge
        let mut c = Cell::boxed(V3::zeros(), V3::new(1.0 / 3.0, 0.7, 0.9));
        let mut h = c.h;
        h[(0, 2)] = 0.6 * c.size0.x + 1e-17;
        c.set_h(h);
        let old = c.clone();
        let m = c.flip([true; 3], 0.55).expect("flips");
        assert_eq!(m, [[1, 0, -1], [0, 1, 0], [0, 0, 1]]);
        assert!(c.h[(0, 2)].abs() <= 0.5 * c.size0.x);
        for cx in -1..=1 {
            for cy in -1..=1 {
                for cz in -1..=1 {
                    let co = [cx, cy, cz];
                    let cn = reexpress(&m, co);
                    let (so, sn) = (old.shift(co), c.shift(cn));
                    for a in 0..3 {
                        assert_eq!(so[a].to_bits(), sn[a].to_bits(), "{co:?} -> {cn:?}");
                    }
                }
            }
        }
        // no flip below the limit
        assert!(c.flip([true; 3], 0.55).is_none());
    }

    #[test]
    fn frame_distance_of_a_sheared_cell() {
        let mut c = Cell::boxed(V3::zeros(), V3::new(1.0, 1.0, 1.0));
        let mut h = c.h;
        h[(0, 2)] = 1.0; // 45° tilt: the x faces are planes x − z = const, √2/2 apart
        c.set_h(h);
        assert!((c.face_distance(0) - 0.5f64.sqrt()).abs() < 1e-15);
        assert!((c.face_distance(2) - 1.0).abs() < 1e-15);
        assert!((c.frame_distance(0, 0.1) - 0.1 * 2f64.sqrt()).abs() < 1e-15);
    }
}
