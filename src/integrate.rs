//! Leapfrog integration of owned particles (thesis §2.5, digest A8) with Cundall non-viscous
//! damping (thesis §2.5.5 eq. 2.75–2.76, digest A9) and blocked DOFs (digest A8.5).

use crate::particles::Particles;
use crate::{Quat, V3};
use rayon::prelude::*;

const CHUNK: usize = 1024;

/// Cundall damping of one acceleration component (digest A9, Woo's 2nd-order variant):
/// a ← a (1 − λ sign(F (v_{−½} + ½ Δt a))); `f` and `a` have the same sign.
#[inline]
fn damp(a: f64, v: f64, dt: f64, lambda: f64) -> f64 {
    let s = a * (v + 0.5 * dt * a);
    // 1 − λ sign(s) with sign(0) = 0, as two selects (the sign is random from particle to
    // particle: a mispredicted branch per component would cost more than the integrator).
    let up = if s > 0.0 { 1.0 - lambda } else { 1.0 };
    a * if s < 0.0 { 1.0 + lambda } else { up }
}

/// Advance one particle: v_{+½} = v_{−½} + Δt F/m, x_{+1} = x_0 + Δt v_{+½} (eq. 2.50–2.57);
/// ω_{+½} = ω_{−½} + Δt T/I, q_{+1} = rot(|ω|Δt, ω̂) q_0 (eq. 2.58–2.62, erratum A13 row 6).
/// Blocked DOFs keep their velocity (a prescribed velocity still moves the particle).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn leapfrog_one(
    pos: &mut V3,
    vel: &mut V3,
    angvel: &mut V3,
    ori: &mut Quat,
    force: V3,
    torque: V3,
    mass: f64,
    inertia: f64,
    blocked: u8,
    dt: f64,
    lambda: f64,
) {
    let (inv_m, inv_i) = (1.0 / mass, 1.0 / inertia);
    if blocked == 0 && lambda == 0.0 {
        // no damping (bit-identical to damp() with λ = 0, which multiplies by 1)
        *vel += force * inv_m * dt;
        *angvel += torque * inv_i * dt;
    } else if blocked == 0 {
        // the common case, written so the compiler can vectorise it
        for a in 0..3 {
            vel[a] += dt * damp(force[a] * inv_m, vel[a], dt, lambda);
            angvel[a] += dt * damp(torque[a] * inv_i, angvel[a], dt, lambda);
        }
    } else {
        for a in 0..3 {
            if blocked & (1 << a) == 0 {
                vel[a] += dt * damp(force[a] * inv_m, vel[a], dt, lambda);
            }
            if blocked & (8 << a) == 0 {
                angvel[a] += dt * damp(torque[a] * inv_i, angvel[a], dt, lambda);
            }
        }
    }
    *pos += *vel * dt;
    if *angvel != V3::zeros() {
        *ori = rotate(*ori, *angvel * dt);
    }
}

/// q ← rot(|θ|, θ̂) q for a rotation vector θ = ω Δt (left multiplication: global frame).
/// The unit quaternion (cos(θ/2), sin(θ/2) θ̂) uses its Taylor series below θ = 1e-3 (error
/// below 1e-20, and no sin/cos in the common case). The product of two unit quaternions is
/// unit up to round-off, so one Newton step q ← q (3 − |q|²)/2 (no sqrt, no division) keeps
/// |q| − 1 at round-off level indefinitely.
#[inline]
pub fn rotate(q: Quat, theta: V3) -> Quat {
    let t2 = theta.norm_squared();
    let (c, s) = if t2 < 1e-6 {
        // Horner form with the reciprocals as constants (no division: this runs for every
        // spinning particle every step)
        (
            1.0 + t2 * (-0.125 + t2 * (1.0 / 384.0)),
            0.5 + t2 * (-1.0 / 48.0 + t2 * (1.0 / 3840.0)),
        )
    } else {
        let t = t2.sqrt();
        ((0.5 * t).cos(), (0.5 * t).sin() / t)
    };
    let dq = nalgebra::Quaternion::new(c, s * theta.x, s * theta.y, s * theta.z);
    let r = dq * q.into_inner();
    Quat::new_unchecked(r * (1.5 - 0.5 * r.norm_squared()))
}

/// The integrator's view of the owned particles: kinematics and force through raw pointers, so
/// that rayon tasks can each advance a disjoint range with plain indexed loops (a rayon zip of
/// five chunked slices compiled to a slower loop: settle 8k integrate −20 %), masses shared.
/// The particles stay mutably borrowed while the view lives.
struct Advance<'a> {
    pos: *mut V3,
    vel: *mut V3,
    angvel: *mut V3,
    ori: *mut Quat,
    force: *mut V3,
    n: usize,
    mass: &'a [f64],
    inertia: &'a [f64],
    blocked: &'a [u8],
    reference: &'a [V3],
    dt: f64,
    lambda: f64,
    g: V3,
}

// SAFETY: the raw pointers are used for disjoint ranges only (`Advance::range`'s contract).
unsafe impl Send for Advance<'_> {}
unsafe impl Sync for Advance<'_> {}

impl<'a> Advance<'a> {
    /// `reference`: positions at the last rebuild; `lambda`: Cundall damping; `g`: gravity.
    fn new(ps: &'a mut Particles, reference: &'a [V3], dt: f64, lambda: f64, g: V3) -> Self {
        let n = ps.n_owned;
        assert!(reference.len() >= n);
        Advance {
            pos: ps.pos[..n].as_mut_ptr(),
            vel: ps.vel[..n].as_mut_ptr(),
            angvel: ps.angvel[..n].as_mut_ptr(),
            ori: ps.ori[..n].as_mut_ptr(),
            force: ps.force[..n].as_mut_ptr(),
            n,
            mass: &ps.mass[..n],
            inertia: &ps.inertia[..n],
            blocked: &ps.blocked[..n],
            reference,
            dt,
            lambda,
            g,
        }
    }

    /// Assemble the force on particles `r` (`contacts(p)` gives the contact force and torque,
    /// gravity m g is added last), store it in `force` and advance them. Returns the largest
    /// squared displacement from the reference positions (∞ for NaN).
    ///
    /// # Safety
    /// No other thread may advance an overlapping range at the same time, and nothing else
    /// may access these particles' kinematics meanwhile.
    unsafe fn range<F>(&self, r: std::ops::Range<usize>, contacts: &F) -> f64
    where
        F: Fn(usize) -> (V3, V3),
    {
        assert!(r.start <= r.end && r.end <= self.n);
        let len = r.len();
        let x = std::slice::from_raw_parts_mut(self.pos.add(r.start), len);
        let v = std::slice::from_raw_parts_mut(self.vel.add(r.start), len);
        let w = std::slice::from_raw_parts_mut(self.angvel.add(r.start), len);
        let q = std::slice::from_raw_parts_mut(self.ori.add(r.start), len);
        let fo = std::slice::from_raw_parts_mut(self.force.add(r.start), len);
        let (mass, inertia, blocked) = (self.mass, self.inertia, self.blocked);
        let mut dmax: f64 = 0.0;
        for k in 0..len {
            let p = r.start + k;
            let (f, t) = contacts(p);
            let f = f + self.g * mass[p];
            fo[k] = f;
            leapfrog_one(
                &mut x[k],
                &mut v[k],
                &mut w[k],
                &mut q[k],
                f,
                t,
                mass[p],
                inertia[p],
                blocked[p],
                self.dt,
                self.lambda,
            );
            let d = (x[k] - self.reference[p]).norm_squared();
            // NaN must force a rebuild (where the blow-up is reported), not vanish in max.
            dmax = dmax.max(if d.is_nan() { f64::INFINITY } else { d });
        }
        dmax
    }
}

/// Assemble the force on every owned particle (`contacts(p)` gives the contact force and
/// torque, gravity m g is added last), store the force in `force`, and integrate — one pass
/// over the particles, rayon over chunks. Returns the largest squared displacement from
/// `reference` (the positions at the last rebuild), for the Verlet trigger.
pub fn leapfrog<F>(
    ps: &mut Particles,
    reference: &[V3],
    dt: f64,
    lambda: f64,
    g: V3,
    contacts: F,
) -> f64
where
    F: Fn(usize) -> (V3, V3) + Sync,
{
    let adv = Advance::new(ps, reference, dt, lambda, g);
    let n = adv.n;
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            // SAFETY: the chunks are disjoint.
            unsafe { adv.range(c * CHUNK..((c + 1) * CHUNK).min(n), &contacts) }
        })
        .reduce(|| 0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_fall_is_exact_for_leapfrog() {
        // Constant force: leapfrog reproduces x(t) = x0 + v0 t − g t²/2 up to the half-step
        // offset of the velocity: with v_{−½} = v0 + g Δt/2 the positions are exact (1e-12).
        let g = -9.81;
        let dt = 1e-3;
        let (mut x, mut v, mut w, mut q) = (
            V3::zeros(),
            V3::new(0.0, 0.0, 0.5 * dt * -g),
            V3::zeros(),
            Quat::identity(),
        );
        let m = 2.0;
        for _ in 0..1000 {
            leapfrog_one(
                &mut x,
                &mut v,
                &mut w,
                &mut q,
                V3::new(0.0, 0.0, m * g),
                V3::zeros(),
                m,
                1.0,
                0,
                dt,
                0.0,
            );
        }
        let t: f64 = 1.0;
        assert!((x.z - 0.5 * g * t * t).abs() < 1e-12, "{}", x.z);
    }

    #[test]
    fn damping_reduces_acceleration_only_when_accelerating() {
        assert_eq!(damp(2.0, 1.0, 0.1, 0.3), 2.0 * 0.7);
        assert_eq!(damp(2.0, -5.0, 0.1, 0.3), 2.0 * 1.3);
        assert_eq!(damp(0.0, 1.0, 0.1, 0.3), 0.0);
    }

    #[test]
    fn blocked_dof_keeps_velocity() {
        let (mut x, mut v, mut w, mut q) = (
            V3::zeros(),
            V3::new(1.0, 0.0, 0.0),
            V3::zeros(),
            Quat::identity(),
        );
        leapfrog_one(
            &mut x,
            &mut v,
            &mut w,
            &mut q,
            V3::new(5.0, 5.0, 0.0),
            V3::zeros(),
            1.0,
            1.0,
            0b001,
            0.1,
            0.0,
        );
        assert_eq!(v.x, 1.0);
        assert!((v.y - 0.5).abs() < 1e-15);
        assert!((x.x - 0.1).abs() < 1e-15);
    }

    #[test]
    fn small_angle_rotation_matches_exact() {
        for t in [1e-7, 3e-4, 9.9e-4, 1.1e-3, 0.5] {
            let th = V3::new(0.3, -0.4, 0.5).normalize() * t;
            let q0 = Quat::from_euler_angles(0.1, 0.2, 0.3);
            let exact = Quat::from_scaled_axis(th) * q0;
            assert!(rotate(q0, th).angle_to(&exact) < 1e-15, "{t}");
        }
    }

    #[test]
    fn orientation_stays_unit_over_many_steps() {
        let mut q = Quat::identity();
        for _ in 0..1_000_000 {
            q = rotate(q, V3::new(3e-4, -1e-4, 2e-4));
        }
        assert!((q.into_inner().norm() - 1.0).abs() < 1e-14);
    }

    #[test]
    fn rotation_advances_orientation_by_omega_dt() {
        let (mut x, mut v, mut w, mut q) = (
            V3::zeros(),
            V3::zeros(),
            V3::new(0.0, 0.0, 2.0),
            Quat::identity(),
        );
        for _ in 0..100 {
            leapfrog_one(
                &mut x,
                &mut v,
                &mut w,
                &mut q,
                V3::zeros(),
                V3::zeros(),
                1.0,
                1.0,
                0,
                0.01,
                0.0,
            );
        }
        assert!((q.angle() - 2.0).abs() < 1e-12);
    }
}
