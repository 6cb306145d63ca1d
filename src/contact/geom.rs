//! Contact geometry of spheres and walls (thesis §2.3; digest A4, A5), in the demhpc convention:
//! normal n from particle 1 to particle 2, u_N < 0 in compression.

use crate::cell::Cell;
use crate::V3;

/// Branch vector l = (x2 − x1) + H (c2 − c1) of the periodic `cell` (digest A11.2, Part D):
/// the integer image difference is formed first and the shift added last, so every rank
/// evaluates it bit-identically whichever copy is the ghost.
#[inline(always)]
pub fn branch(x1: V3, x2: V3, c1: [i32; 3], c2: [i32; 3], cell: &Cell) -> V3 {
    let dc = [c2[0] - c1[0], c2[1] - c1[1], c2[2] - c1[2]];
    let mut l = x2 - x1;
    if dc != [0, 0, 0] {
        l += cell.shift(dc);
    }
    l
}

/// Velocity of the material point of 2 relative to that of 1 at the contact point, with lever
/// arms d1 n (from 1) and −d2 n (from 2) (digest A4.3 step 2):
/// v12 = (v2 + ω2 × (−d2 n)) − (v1 + ω1 × (d1 n)).
#[inline(always)]
pub fn relative_velocity(v1: V3, w1: V3, d1: f64, v2: V3, w2: V3, d2: f64, n: V3) -> V3 {
    (v2 - w2.cross(&n) * d2) - (v1 + w1.cross(&n) * d1)
}

/// Carry a shear vector (displacement or force) along with the contact frame for one step
/// (thesis §2.3.2.1 eq. 2.30–2.33, digest A4.3 step 1): the tilt of the normal
/// −u × (n_old × n) and the mean twist −u × (Δt/2 (n·(ω1+ω2)) n), then re-projected onto the
/// plane ⟂ n and rescaled to its length before rotation so that a rigid rotation of the pair
/// keeps |u_T| exactly (the rotation terms are first order only).
#[inline(always)]
pub fn rotate_shear(u: V3, n_old: V3, n: V3, twist: f64, dt: f64) -> V3 {
    let len0 = u.norm_squared();
    let axis = n_old.cross(&n) + n * (0.5 * dt * twist);
    let mut r = u - u.cross(&axis);
    r -= n * n.dot(&r);
    let len1 = r.norm_squared();
    // Selects, not branches, so that the batched contact kernel vectorises (contact/batch.rs):
    // u = 0 gives r = 0, and the scale 1 keeps it 0.
    let s = (len0 / len1).sqrt();
    r * if len1 > 0.0 { s } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quat;

    #[test]
    fn branch_with_image_shift() {
        let cell = Cell::boxed(V3::zeros(), V3::new(10.0, 20.0, 30.0));
        let l = branch(
            V3::new(9.5, 0.0, 0.0),
            V3::new(0.5, 0.0, 0.0),
            [0; 3],
            [1, 0, 0],
            &cell,
        );
        assert!((l - V3::new(1.0, 0.0, 0.0)).norm() < 1e-14);
        // The same pair seen from the other copy: bit-identical.
        let l2 = branch(
            V3::new(9.5, 0.0, 0.0),
            V3::new(0.5, 0.0, 0.0),
            [-1, 0, 0],
            [0; 3],
            &cell,
        );
        assert_eq!(l, l2);
    }

    #[test]
    fn relative_velocity_of_rigid_rotation_is_normal_free() {
        // Two touching spheres spinning together as a rigid body about z through the midpoint:
        // the contact points coincide and move together, v12 = 0.
        let w = V3::new(0.0, 0.0, 2.0);
        let (x1, x2) = (V3::new(-1.0, 0.0, 0.0), V3::new(1.0, 0.0, 0.0));
        let v1 = w.cross(&x1);
        let v2 = w.cross(&x2);
        let n = V3::new(1.0, 0.0, 0.0);
        let v12 = relative_velocity(v1, w, 1.0, v2, w, 1.0, n);
        assert!(v12.norm() < 1e-14, "{v12}");
    }

    #[test]
    fn shear_rotation_keeps_length_under_rigid_rotation() {
        // Rotate a contact pair rigidly about an oblique axis in 1000 small steps; the shear
        // vector must stay ⟂ n and keep |u_T| (digest "ten formulas" #3), within 1e-12 relative.
        let axis = nalgebra::Unit::new_normalize(V3::new(0.3, -0.5, 0.8));
        let omega = 3.0;
        let dt = 1e-3;
        let rot = Quat::from_axis_angle(&axis, omega * dt);
        let mut n = V3::new(1.0, 0.0, 0.0);
        let mut u = V3::new(0.0, 2e-3, -1e-3);
        let len0 = u.norm();
        let w = axis.into_inner() * omega;
        for _ in 0..1000 {
            let n_new = rot * n;
            u = rotate_shear(u, n, n_new, n_new.dot(&(w + w)), dt);
            n = n_new;
        }
        assert!((u.norm() - len0).abs() / len0 < 1e-12);
        assert!(u.dot(&n).abs() < 1e-12 * len0);
        // It also turned with the pair: compare with the exact rotation of the initial vector.
        let exact = Quat::from_axis_angle(&axis, omega * dt * 1000.0) * V3::new(0.0, 2e-3, -1e-3);
        assert!((u - exact).norm() / len0 < 1e-2, "{u} vs {exact}");
    }
}
