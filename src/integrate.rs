//! Leapfrog integration of owned particles (thesis §2.5, digest A8) with Cundall non-viscous
//! damping (thesis §2.5.5 eq. 2.75–2.76, digest A9) and blocked DOFs (digest A8.5).

use crate::domain::exact::Partial4;
use crate::kernel::Kernel;
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
    let trig = step_core(
        pos,
        vel,
        angvel,
        ori,
        force,
        torque,
        mass,
        inertia,
        blocked,
        dt,
        lambda,
        V3::repeat(-0.0),
    );
    if trig {
        *ori = rotate(*ori, *angvel * dt);
    }
}

/// [`leapfrog_one`] without branches, so that [`Advance`] vectorises it over particles: the
/// damping of an undamped run multiplies by 1, a blocked DOF selects its old velocity, and
/// the orientation takes the small-angle series. Returns true where that series does not
/// apply (|ω Δt| ≥ 1e-3): the orientation is left as it was, for the caller to [`rotate`].
/// Every variant gives the bits of the others (the same IEEE operations in the same order).
/// `gu` is an acceleration added after the damping (gravity with `damp_gravity: false`, Yade
/// NewtonIntegrator.cpp: "gravity is added after damping"); −0 when there is none, which
/// leaves every bit as without it (x + (−0) = x for every x, −0 included).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn step_core(
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
    gu: V3,
) -> bool {
    let (inv_m, inv_i) = (1.0 / mass, 1.0 / inertia);
    for a in 0..3 {
        let v = vel[a] + dt * (damp(force[a] * inv_m, vel[a], dt, lambda) + gu[a]);
        vel[a] = if blocked & (1 << a) == 0 { v } else { vel[a] };
        let w = angvel[a] + dt * damp(torque[a] * inv_i, angvel[a], dt, lambda);
        angvel[a] = if blocked & (8 << a) == 0 {
            w
        } else {
            angvel[a]
        };
    }
    *pos += *vel * dt;
    let theta = *angvel * dt;
    let t2 = theta.norm_squared();
    let (c, s) = small_angle(t2);
    let spinning = (angvel.x != 0.0) | (angvel.y != 0.0) | (angvel.z != 0.0);
    let small = t2 < SMALL_ANGLE2;
    let q = rotate_by(*ori, theta, c, s);
    // A fast spin keeps its old orientation here: the caller rotates it.
    *ori = if spinning & small { q } else { *ori };
    spinning & !small
}

/// |θ|² below which [`small_angle`] is used.
const SMALL_ANGLE2: f64 = 1e-6;

/// cos(θ/2) and sin(θ/2)/θ from θ² by their Taylor series (error below 1e-20 for θ < 1e-3), in
/// Horner form with the reciprocals as constants: no sin, cos or division, because this runs
/// for every spinning particle every step.
#[inline(always)]
fn small_angle(t2: f64) -> (f64, f64) {
    (
        1.0 + t2 * (-0.125 + t2 * (1.0 / 384.0)),
        0.5 + t2 * (-1.0 / 48.0 + t2 * (1.0 / 3840.0)),
    )
}

/// q ← (c, s θ) q, then one Newton step q ← q (3 − |q|²)/2 towards unit length (no sqrt, no
/// division): the product of two unit quaternions is unit up to round-off, and the step keeps
/// |q| − 1 at round-off level indefinitely.
#[inline(always)]
fn rotate_by(q: Quat, theta: V3, c: f64, s: f64) -> Quat {
    let dq = nalgebra::Quaternion::new(c, s * theta.x, s * theta.y, s * theta.z);
    let r = dq * q.into_inner();
    Quat::new_unchecked(r * (1.5 - 0.5 * r.norm_squared()))
}

/// q ← rot(|θ|, θ̂) q for a rotation vector θ = ω Δt (left multiplication: global frame),
/// with the unit quaternion (cos(θ/2), sin(θ/2) θ̂) from [`small_angle`] below θ = 1e-3.
#[inline]
pub fn rotate(q: Quat, theta: V3) -> Quat {
    let t2 = theta.norm_squared();
    let (c, s) = if t2 < SMALL_ANGLE2 {
        small_angle(t2)
    } else {
        let t = t2.sqrt();
        ((0.5 * t).cos(), (0.5 * t).sin() / t)
    };
    rotate_by(q, theta, c, s)
}

/// The integrator's view of the owned particles: kinematics and force through raw pointers, so
/// that rayon tasks can each advance a disjoint range with plain indexed loops (a rayon zip of
/// five chunked slices compiled to a slower loop: settle 8k integrate −20 %), masses shared.
/// The particles stay mutably borrowed while the view lives. [`leapfrog`] runs its chunks on
/// rayon; the fused contact–integrator step (`sched`) schedules them itself: chunk c is owned
/// particles [`Advance::chunk_range`]`(c)`, and any order or thread gives the same bits.
pub struct Advance<'a> {
    pos: *mut V3,
    vel: *mut V3,
    angvel: *mut V3,
    ori: *mut Quat,
    /// Null: the total forces and torques are not stored.
    force: *mut V3,
    torque: *mut V3,
    n: usize,
    mass: &'a [f64],
    inertia: &'a [f64],
    blocked: &'a [u8],
    reference: &'a [V3],
    dt: f64,
    lambda: f64,
    g: V3,
    /// Gravity goes through the Cundall damping (Yade `NewtonIntegrator.dampGravity`).
    damp_gravity: bool,
    kernel: Kernel,
    want_box: bool,
    /// The deforming cell's homothetic motion (issue 23), if any.
    affine: Option<Affine>,
    /// Forces and torques the engines add to each particle (`engines::External`), if any.
    external: Option<(&'a [V3], &'a [V3])>,
}

/// The mean-field motion of a deforming periodic cell over one step (seed 001 "Deformations
/// handling", digest A11.1; issue 23). Velocities are fluctuations v′ about the mean field
/// L (x − o): each particle moves by D (x − o) + v′ Δt with D = exp(L Δt) − I, the cell by
/// H ← H + D H (`cell::Cell::advance`), so a lattice with v′ = 0 follows the cell
/// (homothetic displacement). In total velocities V = v′ + L (x − o) this is Yade's default
/// `homoDeform` 2: V jumps by ΔL (x − o) when L changes and gains the convective L₋ V Δt
/// (worked out in docs/ARCHITECTURE.md "Deforming periodic cell").
#[derive(Clone, Copy, Debug)]
pub struct Affine {
    /// D = exp(L Δt) − I of this step (`cell::step_map`): x += D (x − o).
    pub step_map: crate::M3,
    /// The change of the mean spin (the skew part of ΔL) added to the angular velocities
    /// when L changed (velocity mode; Yade NewtonIntegrator `dSpin`).
    pub dspin: Option<V3>,
    /// The map of the reference positions to now, x ↦ o + A (x − o) with A = H₊₁ H_ref⁻¹: the
    /// Verlet displacements are measured from the reference positions carried by the mean
    /// field, so a homothetic motion triggers no rebuild by itself (`collide::still_valid`
    /// bounds the stretch of the pairs apart).
    pub a: crate::M3,
    /// The cell's origin o.
    pub o: V3,
}

// SAFETY: the raw pointers are used for disjoint ranges only (`Advance::range`'s contract).
unsafe impl Send for Advance<'_> {}
unsafe impl Sync for Advance<'_> {}

impl<'a> Advance<'a> {
    /// `reference`: positions at the last rebuild; `lambda`: Cundall damping; `g`: gravity;
    /// `record`: store each particle's total force and torque in `Particles::force`, `torque`; `want_box`: return
    /// the box of the displacements (else an empty one).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ps: &'a mut Particles,
        reference: &'a [V3],
        dt: f64,
        lambda: f64,
        g: V3,
        record: bool,
        want_box: bool,
    ) -> Self {
        let n = ps.n_owned;
        assert!(reference.len() >= n);
        Advance {
            pos: ps.pos[..n].as_mut_ptr(),
            vel: ps.vel[..n].as_mut_ptr(),
            angvel: ps.angvel[..n].as_mut_ptr(),
            ori: ps.ori[..n].as_mut_ptr(),
            force: match record {
                true => ps.force[..n].as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            torque: match record {
                true => ps.torque[..n].as_mut_ptr(),
                false => std::ptr::null_mut(),
            },
            n,
            mass: &ps.mass[..n],
            inertia: &ps.inertia[..n],
            blocked: &ps.blocked[..n],
            reference,
            dt,
            lambda,
            g,
            damp_gravity: true,
            kernel: Kernel::detect(),
            want_box,
            affine: None,
            external: None,
        }
    }

    /// Add these forces and torques (one per owned particle; the engines', `engines::External`)
    /// to the contact forces, before gravity; `None` or empty: nothing (no cost).
    pub fn external(mut self, e: Option<(&'a [V3], &'a [V3])>) -> Self {
        self.external = e.filter(|(f, t)| f.len() >= self.n && t.len() >= self.n);
        self
    }

    /// Move the particles with a deforming cell's mean field too ([`Affine`]).
    pub fn affine(mut self, a: Option<Affine>) -> Self {
        self.affine = a;
        self
    }

    /// Whether gravity is damped with the contact forces (default true, as Yade's
    /// `NewtonIntegrator.dampGravity`); false adds g after the damping, so that a free fall
    /// accelerates at exactly g whatever the damping.
    pub fn damp_gravity(mut self, yes: bool) -> Self {
        self.damp_gravity = yes;
        self
    }

    /// Assemble the force on particles `r` (`contacts(p0, f, t)` gives the contact forces and
    /// torques of particles p0.., gravity m g is added last), store it in `force` and advance
    /// them. Returns how far they moved from the reference positions.
    ///
    /// # Safety
    /// No other thread may advance an overlapping range at the same time, and nothing else
    /// may access these particles' kinematics meanwhile.
    unsafe fn range<F, T: Tally>(
        &self,
        r: std::ops::Range<usize>,
        contacts: &F,
        tally: &mut T,
    ) -> Moved
    where
        F: Fn(usize, &mut [V3], &mut [V3]),
    {
        assert!(r.start <= r.end && r.end <= self.n);
        let len = r.len();
        let x = std::slice::from_raw_parts_mut(self.pos.add(r.start), len);
        let v = std::slice::from_raw_parts_mut(self.vel.add(r.start), len);
        let w = std::slice::from_raw_parts_mut(self.angvel.add(r.start), len);
        let q = std::slice::from_raw_parts_mut(self.ori.add(r.start), len);

        let mut dmax: f64 = 0.0;
        let (mut lo, mut hi) = (Moved::NONE.lo, Moved::NONE.hi);
        let mut f = [V3::zeros(); LANES];
        let mut t = [V3::zeros(); LANES];
        let mut d2 = [0.0; LANES];
        let mut trig = [false; LANES];
        let mut moved_ref = [V3::zeros(); LANES];
        let mut energy = BlockEnergy::new();
        for b0 in (0..len).step_by(LANES) {
            let n = LANES.min(len - b0);
            let p0 = r.start + b0;
            // The contact sums first (each particle's accumulators are read and cleared).
            contacts(p0, &mut f[..n], &mut t[..n]);
            if let Some((ef, et)) = self.external {
                for k in 0..n {
                    f[k] += ef[p0 + k];
                    t[k] += et[p0 + k];
                }
            }
            let gu = if self.damp_gravity {
                for (f, &m) in f[..n].iter_mut().zip(&self.mass[p0..p0 + n]) {
                    *f += self.g * m;
                }
                V3::repeat(-0.0)
            } else {
                self.g
            };
            if !self.force.is_null() {
                std::slice::from_raw_parts_mut(self.torque.add(p0), n).copy_from_slice(&t[..n]);
                let out = std::slice::from_raw_parts_mut(self.force.add(p0), n);
                out.copy_from_slice(&f[..n]);
                if !self.damp_gravity {
                    // the recorded force is the total one, gravity included
                    for (o, &m) in out.iter_mut().zip(&self.mass[p0..p0 + n]) {
                        *o += self.g * m;
                    }
                }
            }
            let mut refs = &self.reference[p0..p0 + n];
            if let Some(af) = &self.affine {
                let (xb, wb) = (&mut x[b0..b0 + n], &mut w[b0..b0 + n]);
                affine_block(af, xb, wb, refs, &mut moved_ref);
                refs = &moved_ref[..n];
            }
            let at = Kin {
                m: &self.mass[p0..p0 + n],
                inertia: &self.inertia[p0..p0 + n],
                blocked: &self.blocked[p0..p0 + n],
                f: &f[..n],
                t: &t[..n],
                g: self.g,
                gu,
                damped: self.lambda != 0.0,
            };
            if T::ON {
                energy.before(self.kernel, &at, &v[b0..b0 + n], &w[b0..b0 + n]);
            }
            let blk = Block {
                x: &mut x[b0..b0 + n],
                v: &mut v[b0..b0 + n],
                w: &mut w[b0..b0 + n],
                q: &mut q[b0..b0 + n],
                f: &f[..n],
                t: &t[..n],
                mass: &self.mass[p0..p0 + n],
                inertia: &self.inertia[p0..p0 + n],
                blocked: &self.blocked[p0..p0 + n],
                reference: refs,
                d2: &mut d2[..n],
                trig: &mut trig[..n],
            };
            self.kernel.advance(blk, self.dt, self.lambda, gu);
            if T::ON {
                energy.after(self.kernel, &at, &v[b0..b0 + n], &w[b0..b0 + n], self.dt);
                tally.block(&energy, &at, n);
            }
            for k in 0..n {
                if trig[k] {
                    // |ω Δt| ≥ 1e-3: the old orientation is still there (`step_core`)
                    q[b0 + k] = rotate(q[b0 + k], w[b0 + k] * self.dt);
                }
            }
            dmax = max_of(dmax, &d2[..n]);
            if self.want_box {
                box_of(&mut lo, &mut hi, &x[b0..b0 + n], refs);
            }
        }
        Moved {
            d2max: dmax,
            lo,
            hi,
        }
    }
}

/// The mean-field part of one block's step ([`Affine`]): the spin jump, the homothetic
/// displacement D (x − o), and the block's reference positions carried by the mean field into
/// `moved_ref`.
#[inline]
fn affine_block(af: &Affine, x: &mut [V3], w: &mut [V3], refs: &[V3], moved_ref: &mut [V3]) {
    for k in 0..x.len() {
        let r = x[k] - af.o;
        if let Some(ds) = af.dspin {
            w[k] += ds;
        }
        x[k] += af.step_map * r;
        moved_ref[k] = af.o + af.a * (refs[k] - af.o);
    }
}

/// What acts on one block of particles, for the energy tally ([`BlockEnergy`]): masses,
/// blocked DOFs, the force (gravity inside when damped with it, `gu` = −0; else apart, `gu` =
/// g) and torque, and whether Cundall's damping is on.
pub struct Kin<'a> {
    m: &'a [f64],
    inertia: &'a [f64],
    blocked: &'a [u8],
    f: &'a [V3],
    t: &'a [V3],
    g: V3,
    gu: V3,
    damped: bool,
}

/// A block's (v, ω, torque, mass, inertia), for the energy passes ([`BlockEnergy`]).
type Motion<'a> = (&'a [V3], &'a [V3], &'a [V3], &'a [f64], &'a [f64]);

/// Energy tracking in the integrator (scene `energy: true`): per particle and step, on the
/// free DOFs, the work of the total force and torque over the step, F · ½(v₋ + v₊) Δt +
/// T · ½(ω₋ + ω₊) Δt, less the change of the kinetic energy ½ m v² + ½ I ω² — the work of
/// Cundall's damping — and the work of gravity, m g · ½(v₋ + v₊) Δt; on the blocked DOFs
/// (prescribed velocity) the work the constraint does on the rest through the contacts,
/// −F_contact · v Δt − T · ω Δt. Without damping the first is round-off (for the leapfrog
/// ½ m (v₊² − v₋²) = F · ½(v₋ + v₊) Δt exactly) and is not computed.
///
/// The free particles' terms are split into what the step starts from and what it ends with
/// — F · v₋ + T · ω₋, m v₋² + I ω₋², m g · v₋ before the kernel, the same with the new
/// velocities after — in two short vectorised passes beside the integrator's kernel, which
/// stays as it is (computed inside it, the terms made it keep more values live and cost
/// settle's integrator 1.3–1.9x; apart: 1.0x, measured). The blocked ones (few: a
/// strainer's supports) keep their old velocities for the per-DOF split.
pub struct BlockEnergy {
    /// Before the step: [m g · v₋, F · v₋ + T · ω₋, m v₋² + I ω₋²].
    start: [[f64; LANES]; 3],
    /// Each particle's (damping, gravity, blocked DOFs') terms (damping not written for a
    /// free one without damping; the last written only when some particle is blocked).
    e: [[f64; LANES]; 3],
    /// The blocked particles' velocities before the step (valid for those only).
    v0: [V3; LANES],
    w0: [V3; LANES],
    any_blocked: bool,
}

impl BlockEnergy {
    fn new() -> Self {
        BlockEnergy {
            start: [[0.0; LANES]; 3],
            e: [[0.0; LANES]; 3],
            v0: [V3::zeros(); LANES],
            w0: [V3::zeros(); LANES],
            any_blocked: false,
        }
    }

    /// The step's start: velocities `v`, `w` of the block's particles; in the integrator's
    /// vector width (`kernel`: the same bits in any).
    fn before(&mut self, kernel: Kernel, at: &Kin, v: &[V3], w: &[V3]) {
        match kernel {
            Kernel::Generic => self.before_in(at, v, w),
            // SAFETY: `Kernel::detect` chose the variant from the CPU's features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { self.before_avx2(at, v, w) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { self.before_avx512(at, v, w) },
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn before_avx2(&mut self, at: &Kin, v: &[V3], w: &[V3]) {
        self.before_in(at, v, w)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn before_avx512(&mut self, at: &Kin, v: &[V3], w: &[V3]) {
        self.before_in(at, v, w)
    }

    /// The step's end: the new velocities; the terms into `e` (as [`Self::before`]).
    fn after(&mut self, kernel: Kernel, at: &Kin, v: &[V3], w: &[V3], dt: f64) {
        match kernel {
            Kernel::Generic => self.after_in(at, v, w, dt),
            // SAFETY: `Kernel::detect` chose the variant from the CPU's features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { self.after_avx2(at, v, w, dt) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { self.after_avx512(at, v, w, dt) },
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn after_avx2(&mut self, at: &Kin, v: &[V3], w: &[V3], dt: f64) {
        self.after_in(at, v, w, dt)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn after_avx512(&mut self, at: &Kin, v: &[V3], w: &[V3], dt: f64) {
        self.after_in(at, v, w, dt)
    }

    #[inline(always)]
    fn before_in(&mut self, at: &Kin, v: &[V3], w: &[V3]) {
        let n = v.len();
        // every slice n long: no bounds check in the loops (they vectorise)
        let (m, inertia, f, t, w) = (
            &at.m[..n],
            &at.inertia[..n],
            &at.f[..n],
            &at.t[..n],
            &w[..n],
        );
        let [gv, work, ke] = &mut self.start;
        let (gv, work, ke) = (&mut gv[..n], &mut work[..n], &mut ke[..n]);
        if at.damped {
            // (separate loops: one loop of all three vectorised worse, settle +10 %)
            for k in 0..n {
                gv[k] = m[k] * at.g.dot(&v[k]);
            }
            // the total force (gravity apart: + g m; else f itself), the loop compiled
            // for each (a select computed both: settle's tally +30 %)
            #[inline(always)]
            fn pass(ft: impl Fn(usize) -> V3, s: Motion, out: (&mut [f64], &mut [f64])) {
                let (v, w, t, m, inertia) = s;
                let n = v.len();
                let (w, t, m, inertia) = (&w[..n], &t[..n], &m[..n], &inertia[..n]);
                let (work, ke) = (&mut out.0[..n], &mut out.1[..n]);
                for k in 0..n {
                    work[k] = ft(k).dot(&v[k]) + t[k].dot(&w[k]);
                    ke[k] = m[k] * v[k].norm_squared() + inertia[k] * w[k].norm_squared();
                }
            }
            let s = (v, w, t, m, inertia);
            match at.gu == V3::repeat(-0.0) {
                true => pass(|k| f[k], s, (work, ke)),
                false => pass(|k| f[k] + at.gu * m[k], s, (work, ke)),
            }
        }
        self.any_blocked = at.blocked.iter().fold(0, |a, &b| a | b) != 0;
        if self.any_blocked {
            for k in (0..n).filter(|&k| at.blocked[k] != 0) {
                self.v0[k] = v[k];
                self.w0[k] = w[k];
            }
        }
    }

    #[inline(always)]
    fn after_in(&mut self, at: &Kin, v: &[V3], w: &[V3], dt: f64) {
        let n = v.len();
        let h = 0.5 * dt;
        let (m, inertia, f, t, w) = (
            &at.m[..n],
            &at.inertia[..n],
            &at.f[..n],
            &at.t[..n],
            &w[..n],
        );
        let [gv, work, ke] = &self.start;
        let (gv, work, ke) = (&gv[..n], &work[..n], &ke[..n]);
        let [ed, eg, _] = &mut self.e;
        let (ed, eg) = (&mut ed[..n], &mut eg[..n]);
        let none = at.gu == V3::repeat(-0.0);
        if !at.damped {
            // undamped: v₋ = v₊ − Δt F/m, so m g · ½(v₋ + v₊) Δt = (m g · v₊ − ½Δt g · F) Δt
            // in real arithmetic — one pass after the step, none before (drum: the tally's
            // cost halved)
            for k in 0..n {
                let ft = if none { f[k] } else { f[k] + at.gu * m[k] };
                eg[k] = (m[k] * at.g.dot(&v[k]) - h * at.g.dot(&ft)) * dt;
            }
        } else {
            for k in 0..n {
                eg[k] = (gv[k] + m[k] * at.g.dot(&v[k])) * h;
            }
            #[inline(always)]
            fn pass(
                ft: impl Fn(usize) -> V3,
                s: Motion,
                start: (&[f64], &[f64]),
                ed: &mut [f64],
                h: f64,
            ) {
                let (v, w, t, m, inertia) = s;
                let n = v.len();
                let (w, t, m, inertia) = (&w[..n], &t[..n], &m[..n], &inertia[..n]);
                let (work, ke, ed) = (&start.0[..n], &start.1[..n], &mut ed[..n]);
                for k in 0..n {
                    let w1 = ft(k).dot(&v[k]) + t[k].dot(&w[k]);
                    let k1 = m[k] * v[k].norm_squared() + inertia[k] * w[k].norm_squared();
                    ed[k] = (work[k] + w1) * h - 0.5 * (k1 - ke[k]);
                }
            }
            let s = (v, w, t, m, inertia);
            match none {
                true => pass(|k| f[k], s, (work, ke), ed, h),
                false => pass(|k| f[k] + at.gu * m[k], s, (work, ke), ed, h),
            }
        }
        if self.any_blocked {
            self.e[2][..n].fill(0.0);
            for k in (0..n).filter(|&k| at.blocked[k] != 0) {
                let t = self.blocked_terms(at, k, v[k], w[k], dt);
                for (e, t) in self.e.iter_mut().zip(t) {
                    e[k] = t;
                }
            }
        }
    }

    /// Blocked particle k's (damping, gravity, blocked DOFs') terms: on a free DOF the same
    /// as a free particle's (in the per-DOF form), on a blocked one the constraint's work;
    /// `v`, `w` the new velocities.
    fn blocked_terms(&self, at: &Kin, k: usize, v: V3, w: V3, dt: f64) -> [f64; 3] {
        let (m, bl) = (at.m[k], at.blocked[k]);
        let vm = (self.v0[k] + v) * 0.5;
        // the total force (gravity inside `f` when damped with it, else apart)
        let ft = at.f[k] + at.gu * m;
        let wm = (self.w0[k] + w) * 0.5;
        let (t, g) = (at.t[k], at.g);
        let (mut work, mut grav, mut held) = (0.0, 0.0, 0.0);
        for a in 0..3 {
            if bl & (1 << a) == 0 {
                work += ft[a] * vm[a];
                grav += m * g[a] * vm[a];
            } else {
                // a blocked DOF moves as prescribed: what the contacts do on it (the total
                // force less gravity), the constraint takes out, and it passes the negative
                // on to the contacts
                held -= (ft[a] - m * g[a]) * vm[a];
            }
            match bl & (8 << a) == 0 {
                true => work += t[a] * wm[a],
                false => held -= t[a] * wm[a],
            }
        }
        let ke = 0.5 * m * (v.norm_squared() - self.v0[k].norm_squared())
            + 0.5 * at.inertia[k] * (w.norm_squared() - self.w0[k].norm_squared());
        let damping = if at.damped { work * dt - ke } else { 0.0 };
        [damping, grav * dt, held * dt]
    }
}

/// How the integrator's energy terms ([`BlockEnergy`]) are added up; a no-op [`NoTally`]
/// compiles the tracking away.
pub trait Tally {
    const ON: bool;
    /// Add the terms of a block of `n` particles (after [`BlockEnergy::after`]).
    fn block(&mut self, e: &BlockEnergy, at: &Kin, n: usize);
}

/// No energy tracking.
pub struct NoTally;

impl Tally for NoTally {
    const ON: bool = false;
    #[inline(always)]
    fn block(&mut self, _: &BlockEnergy, _: &Kin, _: usize) {}
}

/// Exact sums of the integrator's energy terms: [ΔKE (no longer tallied: 0, a checkpoint's
/// slot), the damping's dissipation, gravity's work, the blocked DOFs' work on the rest]. As
/// a [`Tally`]: each particle's terms added exactly (reproducible mode: the same bits
/// whatever the particles' order, so on any layout).
#[derive(Clone, Debug, Default)]
pub struct EnergyTally(pub [crate::domain::exact::ExactSum; 4]);

impl Tally for EnergyTally {
    const ON: bool = true;
    #[inline(always)]
    fn block(&mut self, e: &BlockEnergy, at: &Kin, n: usize) {
        for k in 0..n {
            if at.damped {
                self.0[1].add(e.e[0][k]);
            }
            self.0[2].add(e.e[1][k]);
            if e.any_blocked && at.blocked[k] != 0 {
                self.0[3].add(e.e[2][k]);
            }
        }
    }
}

impl EnergyTally {
    fn merge(mut self, o: EnergyTally) -> Self {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.merge(b);
        }
        self
    }
}

/// The default mode's [`Tally`]: each chunk's terms summed in floating point in particle
/// order ([`Partial4`]), the chunk's sums
/// added exactly after the chunks — the same bits for a given particle order (a given
/// ranks × threads layout, as the default mode's forces), without an exact sum per particle.
#[derive(Clone, Copy, Debug, Default)]
struct ChunkTally {
    /// [damping, gravity, blocked DOFs'].
    acc: [Partial4; 3],
}

impl Tally for ChunkTally {
    const ON: bool = true;
    #[inline(always)]
    fn block(&mut self, e: &BlockEnergy, at: &Kin, n: usize) {
        // (undamped: no damping term; the blocked DOFs' only with some)
        let terms = (!at.damped as usize)..(2 + e.any_blocked as usize);
        for (acc, e) in self.acc[terms.clone()].iter_mut().zip(&e.e[terms]) {
            acc.add_slice(&e[..n]);
        }
    }
}

impl ChunkTally {
    /// The chunk's sums [damping, gravity, blocked DOFs'].
    fn sums(&self) -> [f64; 3] {
        self.acc.map(|a| a.total())
    }
}

/// How far particles moved since the last rebuild: the input of the Verlet trigger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moved {
    /// The largest squared displacement (∞ if some position is NaN).
    pub d2max: f64,
    /// The bounding box of the displacement vectors (empty: lo = +∞, hi = −∞).
    pub lo: V3,
    pub hi: V3,
}

impl Moved {
    /// No particle.
    pub const NONE: Moved = Moved {
        d2max: 0.0,
        lo: V3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY),
        hi: V3::new(f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY),
    };

    /// Of positions `x` against `reference` (what the integrator returns, computed apart: for
    /// a restart and tests).
    pub fn between(x: &[V3], reference: &[V3]) -> Moved {
        let d2: Vec<f64> = x
            .iter()
            .zip(reference)
            .map(|(x, r)| match (x - r).norm_squared() {
                d if d.is_nan() => f64::INFINITY,
                d => d,
            })
            .collect();
        let (mut lo, mut hi) = (Moved::NONE.lo, Moved::NONE.hi);
        box_of(&mut lo, &mut hi, x, reference);
        Moved {
            d2max: max_of(0.0, &d2),
            lo,
            hi,
        }
    }

    /// Both sets together (maxima and minima: the order does not matter).
    pub fn join(self, o: Moved) -> Moved {
        Moved {
            d2max: if o.d2max > self.d2max {
                o.d2max
            } else {
                self.d2max
            },
            lo: self.lo.inf(&o.lo),
            hi: self.hi.sup(&o.hi),
        }
    }
}

/// max(m, max of `v`) for NaN-free values, with 8 independent running maxima: one chain of
/// `max` through every particle cost a few cycles of latency each (settle 64k: a fifth of
/// the integrator). The maximum of a set does not depend on the order: same bits.
#[inline]
fn max_of(m: f64, v: &[f64]) -> f64 {
    let mut acc = [m; 8];
    let chunks = v.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            acc[l] = if c[l] > acc[l] { c[l] } else { acc[l] };
        }
    }
    let m = rest.iter().fold(m, |a, &x| if x > a { x } else { a });
    acc.iter().fold(m, |a, &x| if x > a { x } else { a })
}

/// Grow the box [lo, hi] by the displacements x − r (a NaN is caught by the squared
/// displacements instead), with 8 running minima and maxima per axis like [`max_of`] (one
/// chain of selects through every particle cost the chute integrator 13 %, measured).
#[inline]
fn box_of(lo: &mut V3, hi: &mut V3, x: &[V3], r: &[V3]) {
    let mut l = [[f64::INFINITY; 8]; 3];
    let mut h = [[f64::NEG_INFINITY; 8]; 3];
    let (xc, rc) = (x.chunks_exact(8), r.chunks_exact(8));
    let (xr, rr) = (xc.remainder(), rc.remainder());
    for (xs, rs) in xc.zip(rc) {
        for k in 0..8 {
            for a in 0..3 {
                let d = xs[k][a] - rs[k][a];
                l[a][k] = if d < l[a][k] { d } else { l[a][k] };
                h[a][k] = if d > h[a][k] { d } else { h[a][k] };
            }
        }
    }
    for (x, r) in xr.iter().zip(rr) {
        for a in 0..3 {
            let d = x[a] - r[a];
            l[a][0] = if d < l[a][0] { d } else { l[a][0] };
            h[a][0] = if d > h[a][0] { d } else { h[a][0] };
        }
    }
    for a in 0..3 {
        for k in 0..8 {
            lo[a] = if l[a][k] < lo[a] { l[a][k] } else { lo[a] };
            hi[a] = if h[a][k] > hi[a] { h[a][k] } else { hi[a] };
        }
    }
}

/// Particles per block of the integrator (stack buffers of the contact sums).
const LANES: usize = 64;

/// One block of particles for [`step_block`].
struct Block<'b> {
    x: &'b mut [V3],
    v: &'b mut [V3],
    w: &'b mut [V3],
    q: &'b mut [Quat],
    f: &'b [V3],
    t: &'b [V3],
    mass: &'b [f64],
    inertia: &'b [f64],
    blocked: &'b [u8],
    reference: &'b [V3],
    /// Out: squared displacement from the reference positions.
    d2: &'b mut [f64],
    /// Out: the orientation still needs [`rotate`] (see [`step_core`]).
    trig: &'b mut [bool],
}

/// [`step_core`] on every particle of a block: no branch, so the compiler vectorises it.
/// Without damping the loop is compiled with λ = 0 as a constant, which removes the damping
/// terms (their factor is exactly 1: the same bits; chute integrate −5 %).
/// Likewise without an undamped acceleration (`gu` = −0, the default `damp_gravity: true`) the
/// −0 is a constant and its additions vanish.
#[inline(always)]
fn step_block(b: Block, dt: f64, lambda: f64, gu: V3) {
    let none = gu.iter().all(|x| x.to_bits() == (-0.0f64).to_bits());
    match (lambda == 0.0, none) {
        (true, true) => step_block_with(b, dt, 0.0, V3::repeat(-0.0)),
        (false, true) => step_block_with(b, dt, lambda, V3::repeat(-0.0)),
        (true, false) => step_block_with(b, dt, 0.0, gu),
        (false, false) => step_block_with(b, dt, lambda, gu),
    }
}

#[inline(always)]
fn step_block_with(b: Block, dt: f64, lambda: f64, gu: V3) {
    let n = b.x.len();
    let (v, w, q, f, t) = (
        &mut b.v[..n],
        &mut b.w[..n],
        &mut b.q[..n],
        &b.f[..n],
        &b.t[..n],
    );
    let (m, i, bl, rf) = (
        &b.mass[..n],
        &b.inertia[..n],
        &b.blocked[..n],
        &b.reference[..n],
    );
    let (d2, trig) = (&mut b.d2[..n], &mut b.trig[..n]);
    for k in 0..n {
        trig[k] = step_core(
            &mut b.x[k],
            &mut v[k],
            &mut w[k],
            &mut q[k],
            f[k],
            t[k],
            m[k],
            i[k],
            bl[k],
            dt,
            lambda,
            gu,
        );
        let d = (b.x[k] - rf[k]).norm_squared();
        // NaN must force a rebuild (where the blow-up is reported), not vanish in a max.
        d2[k] = if d.is_nan() { f64::INFINITY } else { d };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn step_block_avx2(b: Block, dt: f64, lambda: f64, gu: V3) {
    step_block(b, dt, lambda, gu)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn step_block_avx512(b: Block, dt: f64, lambda: f64, gu: V3) {
    step_block(b, dt, lambda, gu)
}

impl Kernel {
    /// [`step_block`] in this variant.
    fn advance(self, b: Block, dt: f64, lambda: f64, gu: V3) {
        match self {
            Kernel::Generic => step_block(b, dt, lambda, gu),
            // SAFETY: `Kernel::detect` chose the variant from the CPU's features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { step_block_avx2(b, dt, lambda, gu) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { step_block_avx512(b, dt, lambda, gu) },
        }
    }
}

/// Assemble the force on every owned particle (`contacts(p0, f, t)` writes the contact forces
/// and torques of particles p0.. into `f` and `t`, as many as they hold; gravity m g is added
/// last), store the force in `force` if `record_force`, and
/// integrate — one pass over the particles, rayon over chunks. Returns how far the particles
/// moved from `reference` (the positions at the last rebuild), for the Verlet trigger: the
/// box of the displacements only if `want_box` (it costs settle 8k 7 % of the integrator).
#[allow(clippy::too_many_arguments)]
pub fn leapfrog<F>(
    ps: &mut Particles,
    reference: &[V3],
    dt: f64,
    lambda: f64,
    g: V3,
    damp_gravity: bool,
    record_force: bool,
    want_box: bool,
    affine: Option<Affine>,
    external: Option<(&[V3], &[V3])>,
    energy: Option<(&mut EnergyTally, bool)>,
    contacts: F,
) -> Moved
where
    F: Fn(usize, &mut [V3], &mut [V3]) + Sync,
{
    let lf = Advance::new(ps, reference, dt, lambda, g, record_force, want_box)
        .damp_gravity(damp_gravity)
        .affine(affine)
        .external(external);
    let chunks = 0..lf.chunks();
    match energy {
        None => chunks
            .into_par_iter()
            // SAFETY: the chunks are disjoint.
            .map(|c| unsafe { lf.chunk(c, &contacts) })
            .reduce(|| Moved::NONE, Moved::join),
        // reproducible mode: every particle's terms added exactly (any layout's bits)
        Some((e, true)) => {
            let (moved, t) = chunks
                .into_par_iter()
                .map(|c| {
                    let mut t = EnergyTally::default();
                    // SAFETY: the chunks are disjoint.
                    let m = unsafe { lf.range(lf.chunk_range(c), &contacts, &mut t) };
                    (m, t)
                })
                .reduce(
                    || (Moved::NONE, EnergyTally::default()),
                    |a, b| (a.0.join(b.0), a.1.merge(b.1)),
                );
            *e = std::mem::take(e).merge(t);
            moved
        }
        // the default mode: each chunk's sums, added exactly in chunk order
        Some((e, false)) => {
            let per_chunk: Vec<(Moved, [f64; 3])> = chunks
                .into_par_iter()
                .map(|c| {
                    let mut t = ChunkTally::default();
                    // SAFETY: the chunks are disjoint.
                    let m = unsafe { lf.range(lf.chunk_range(c), &contacts, &mut t) };
                    (m, t.sums())
                })
                .collect();
            let mut moved = Moved::NONE;
            for (m, sums) in per_chunk {
                moved = moved.join(m);
                for (s, x) in e.0[1..].iter_mut().zip(sums) {
                    s.add(x);
                }
            }
            moved
        }
    }
}

impl Advance<'_> {
    pub fn chunks(&self) -> usize {
        self.n.div_ceil(CHUNK)
    }

    /// The owned particles of chunk `c`.
    pub fn chunk_range(&self, c: usize) -> std::ops::Range<usize> {
        c * CHUNK..((c + 1) * CHUNK).min(self.n)
    }

    /// Assemble the forces of chunk `c` and advance it (see [`leapfrog`]).
    ///
    /// # Safety
    /// Each chunk once per step; nothing else may access its particles' kinematics meanwhile.
    pub unsafe fn chunk<F>(&self, c: usize, contacts: &F) -> Moved
    where
        F: Fn(usize, &mut [V3], &mut [V3]),
    {
        self.range(self.chunk_range(c), contacts, &mut NoTally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damp_gravity_switch() {
        // Yade NewtonIntegrator.dampGravity (issue 20). One sphere released from rest, no
        // contacts, Cundall damping λ = 0.4, g = −9.81 ẑ, Δt = 1e-3, 1000 steps (the AVX
        // variant this CPU picks, through `leapfrog`):
        // * damp_gravity true (default): the only force is m g, it accelerates the particle
        //   (F·v > 0), so every step damps it by (1 − λ) (thesis eq. 2.75–2.76):
        //   v_n = n Δt (1 − λ) g — it falls at 0.6 g;
        // * damp_gravity false: gravity is added after the damping, v_n = n Δt g and
        //   z_n = Δt² g n(n+1)/2 (leapfrog from v_{−½} = 0), exactly g. Tol 1e-12 rel.
        // The recorded force is m g either way.
        let (lambda, dt, g, n) = (0.4, 1e-3, -9.81, 1000usize);
        for damp_gravity in [true, false] {
            let mut ps = Particles::default();
            ps.push_owned(&crate::particles::Particle::sphere(
                0,
                V3::zeros(),
                0.01,
                2500.0,
                0,
            ));
            let reference = vec![V3::zeros()];
            let m = ps.mass[0];
            for _ in 0..n {
                leapfrog(
                    &mut ps,
                    &reference,
                    dt,
                    lambda,
                    V3::new(0.0, 0.0, g),
                    damp_gravity,
                    true,
                    false,
                    None,
                    None,
                    None,
                    |_, f, t| {
                        f.fill(V3::zeros());
                        t.fill(V3::zeros());
                    },
                );
            }
            let a = if damp_gravity { (1.0 - lambda) * g } else { g };
            let v = ps.vel[0].z;
            let z = ps.pos[0].z;
            let nn = n as f64;
            assert!((v - nn * dt * a).abs() < 1e-12 * (nn * dt * a).abs(), "{v}");
            let ze = dt * dt * a * nn * (nn + 1.0) / 2.0;
            assert!((z - ze).abs() < 1e-12 * ze.abs(), "{z} {ze}");
            assert!((ps.force[0].z - m * g).abs() < 1e-15 * m * g.abs());
            assert_eq!((ps.vel[0].x, ps.vel[0].y), (0.0, 0.0));
        }
    }

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
    fn block_kernels_give_the_bits_of_the_scalar_step() {
        // Random particles: damped and undamped, blocked DOFs, still, slow and fast spins (the
        // last take the sin/cos path). Every vector width must reproduce leapfrog_one exactly.
        let mut rng = crate::scene::gen::Lcg::at(7, 0);
        let mut u = move || rng.uniform() - 0.5;
        let n = 150;
        let mut v3 = |s: f64| V3::new(s * u(), s * u(), s * u());
        let x: Vec<V3> = (0..n).map(|_| v3(1.0)).collect();
        let v: Vec<V3> = (0..n).map(|_| v3(1.0)).collect();
        let w: Vec<V3> = (0..n)
            .map(|k| [V3::zeros(), v3(0.1), v3(300.0)][k % 3])
            .collect();
        let f: Vec<V3> = (0..n).map(|_| v3(10.0)).collect();
        let t: Vec<V3> = (0..n).map(|_| v3(1.0)).collect();
        let q: Vec<Quat> = (0..n)
            .map(|k| Quat::from_euler_angles(0.1 * k as f64, 0.2, 0.3))
            .collect();
        let mass: Vec<f64> = (0..n).map(|k| 1.0 + 0.01 * k as f64).collect();
        let inertia: Vec<f64> = (0..n).map(|k| 0.4 + 0.01 * k as f64).collect();
        let blocked: Vec<u8> = (0..n).map(|k| [0, 0, 0b001, 0b101010, 63][k % 5]).collect();
        let reference = vec![V3::zeros(); n];
        let (dt, kinds) = (1e-4, [Kernel::Generic, Kernel::detect()]);
        // gu: none (−0, `leapfrog_one`'s path) or undamped gravity (`damp_gravity: false`)
        for (lambda, gu) in [0.0, 0.3]
            .into_iter()
            .flat_map(|l| [(l, V3::repeat(-0.0)), (l, V3::new(0.0, 0.0, -9.81))])
        {
            let mut want = (x.clone(), v.clone(), w.clone(), q.clone());
            for k in 0..n {
                let trig = step_core(
                    &mut want.0[k],
                    &mut want.1[k],
                    &mut want.2[k],
                    &mut want.3[k],
                    f[k],
                    t[k],
                    mass[k],
                    inertia[k],
                    blocked[k],
                    dt,
                    lambda,
                    gu,
                );
                if trig {
                    want.3[k] = rotate(want.3[k], want.2[k] * dt);
                }
            }
            for kind in kinds {
                let mut got = (x.clone(), v.clone(), w.clone(), q.clone());
                let (mut d2, mut trig) = (vec![0.0; n], vec![false; n]);
                kind.advance(
                    Block {
                        x: &mut got.0,
                        v: &mut got.1,
                        w: &mut got.2,
                        q: &mut got.3,
                        f: &f,
                        t: &t,
                        mass: &mass,
                        inertia: &inertia,
                        blocked: &blocked,
                        reference: &reference,
                        d2: &mut d2,
                        trig: &mut trig,
                    },
                    dt,
                    lambda,
                    gu,
                );
                for ((q, w), _) in got.3.iter_mut().zip(&got.2).zip(&trig).filter(|x| *x.1) {
                    *q = rotate(*q, w * dt);
                }
                assert_eq!(got.0, want.0, "{kind:?}");
                assert_eq!(got.1, want.1, "{kind:?}");
                assert_eq!(got.2, want.2, "{kind:?}");
                assert_eq!(got.3, want.3, "{kind:?}");
                assert!(trig.iter().filter(|&&b| b).count() > 10);
                for k in 0..n {
                    assert_eq!(d2[k], (got.0[k] - reference[k]).norm_squared());
                }
            }
        }
    }

    #[test]
    fn max_of_and_box_of_for_any_length() {
        let v: Vec<f64> = (0..37).map(|k| ((k * 7919) % 101) as f64 * 0.5).collect();
        for n in [0, 1, 7, 8, 9, 16, 37] {
            let want = v[..n].iter().cloned().fold(0.25, f64::max);
            assert_eq!(max_of(0.25, &v[..n]), want, "{n}");
        }
        assert_eq!(max_of(0.0, &[1.0, f64::INFINITY, 2.0]), f64::INFINITY);
        for n in [0, 1, 7, 8, 9, 16, 37] {
            let x: Vec<V3> = (0..n).map(|k| V3::new(v[k], -v[k], 0.5 * v[k])).collect();
            let r = vec![V3::new(1.0, 2.0, 3.0); n];
            let (mut lo, mut hi) = (Moved::NONE.lo, Moved::NONE.hi);
            box_of(&mut lo, &mut hi, &x, &r);
            for a in 0..3 {
                let d = x.iter().zip(&r).map(|(x, r)| x[a] - r[a]);
                assert_eq!(lo[a], d.clone().fold(f64::INFINITY, f64::min), "{n}");
                assert_eq!(hi[a], d.fold(f64::NEG_INFINITY, f64::max), "{n}");
            }
        }
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
