//! `Particles`: structure-of-arrays storage of one rank's spheres, owned first (`0..n_owned`),
//! then ghosts (`n_owned..len`). Global ids (`gid`) are stable across re-sorting, migration and
//! restart (ARCHITECTURE.md "Data layout").
//!
//! Ghosts are exact copies of their source's coordinates plus an integer periodic image offset
//! `image` (never pre-shifted coordinates), so every rank evaluates the branch vector of a pair
//! bit-identically as `(x2 - x1) + H (c2 - c1)` (digest Part D, §A11.2).

use crate::{Quat, V3};

/// Blocked degrees of freedom (Yade `blockedDOFs` "xyzXYZ", digest A8.5): bit k blocks
/// translation along axis k, bit 3+k rotation about axis k.
pub const BLOCK_ALL: u8 = 0b11_1111;

/// No owned origin: the ghost copies another rank's particle (`domain::halo::Halo::self_origins`).
pub const NO_ORIGIN: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct Particles {
    pub gid: Vec<u64>,
    pub pos: Vec<V3>,
    /// Velocity at the half step t − Δt/2 (leapfrog).
    pub vel: Vec<V3>,
    /// Angular velocity at the half step t − Δt/2.
    pub angvel: Vec<V3>,
    pub ori: Vec<Quat>,
    pub radius: Vec<f64>,
    pub mass: Vec<f64>,
    /// Scalar moment of inertia (spheres).
    pub inertia: Vec<f64>,
    pub material: Vec<u16>,
    /// Blocked DOFs, see [`BLOCK_ALL`].
    pub blocked: Vec<u8>,
    /// Periodic image offset (in cell lengths) of this copy relative to its owner's coordinates:
    /// zero for owned particles.
    pub image: Vec<[i32; 3]>,
    /// Owned particles: how many cell lengths the particle has been wrapped by (unwrapped
    /// position = pos + wrap·L). Ghosts: copy of the source's.
    pub wrap: Vec<[i32; 3]>,
    /// User tag (group) of the particle, 0 by default: the optional 5th column of a `TextFile`
    /// source, the atom type of a LAMMPS data file; selects e.g. the strainer's supports.
    /// Carried through migration, ghosts, checkpoints (format 3) and snapshots.
    pub tag: Vec<u16>,
    /// Total force of the current step (owned particles only; ghosts hold zeros), for the time
    /// series, the snapshots and the strain controller; stored by the integrator only in the
    /// steps that record forces (`Simulation::record_forces`).
    pub force: Vec<V3>,
    /// Total torque of the current step (the contacts'), as `force`: for the snapshots.
    pub torque: Vec<V3>,
    /// Number of owned particles; the rest are ghosts.
    pub n_owned: usize,
}

/// Everything about one particle, for building and moving particles around.
#[derive(Clone, Debug, PartialEq)]
pub struct Particle {
    pub gid: u64,
    pub pos: V3,
    pub vel: V3,
    pub angvel: V3,
    pub ori: Quat,
    pub radius: f64,
    pub mass: f64,
    pub inertia: f64,
    pub material: u16,
    pub blocked: u8,
    pub image: [i32; 3],
    pub wrap: [i32; 3],
    pub tag: u16,
}

impl Particle {
    /// A solid sphere of density `rho` at rest: m = 4/3 π r³ ρ, I = 2/5 m r².
    pub fn sphere(gid: u64, pos: V3, radius: f64, rho: f64, material: u16) -> Self {
        let mass = 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3) * rho;
        Particle {
            gid,
            pos,
            vel: V3::zeros(),
            angvel: V3::zeros(),
            ori: Quat::identity(),
            radius,
            mass,
            inertia: 0.4 * mass * radius * radius,
            material,
            blocked: 0,
            image: [0; 3],
            wrap: [0; 3],
            tag: 0,
        }
    }
}

impl Particles {
    pub fn len(&self) -> usize {
        self.gid.len()
    }
    pub fn is_empty(&self) -> bool {
        self.gid.is_empty()
    }
    pub fn n_ghosts(&self) -> usize {
        self.len() - self.n_owned
    }

    /// Append a particle (owned or ghost: the caller keeps `n_owned` right).
    pub fn push(&mut self, p: &Particle) {
        self.gid.push(p.gid);
        self.pos.push(p.pos);
        self.vel.push(p.vel);
        self.angvel.push(p.angvel);
        self.ori.push(p.ori);
        self.radius.push(p.radius);
        self.mass.push(p.mass);
        self.inertia.push(p.inertia);
        self.material.push(p.material);
        self.blocked.push(p.blocked);
        self.image.push(p.image);
        self.wrap.push(p.wrap);
        self.tag.push(p.tag);
        self.force.push(V3::zeros());
        self.torque.push(V3::zeros());
    }

    /// Add an owned particle (only valid while there are no ghosts).
    pub fn push_owned(&mut self, p: &Particle) {
        debug_assert_eq!(self.n_owned, self.len(), "push_owned with ghosts present");
        self.push(p);
        self.n_owned += 1;
    }

    pub fn get(&self, i: usize) -> Particle {
        Particle {
            gid: self.gid[i],
            pos: self.pos[i],
            vel: self.vel[i],
            angvel: self.angvel[i],
            ori: self.ori[i],
            radius: self.radius[i],
            mass: self.mass[i],
            inertia: self.inertia[i],
            material: self.material[i],
            blocked: self.blocked[i],
            image: self.image[i],
            wrap: self.wrap[i],
            tag: self.tag[i],
        }
    }

    /// Drop all ghosts (keeps capacity).
    pub fn truncate_ghosts(&mut self) {
        self.truncate(self.n_owned);
    }

    /// Keep the first `n` particles (all owned afterwards if `n ≤ n_owned`).
    pub fn truncate(&mut self, n: usize) {
        self.n_owned = self.n_owned.min(n);
        self.gid.truncate(n);
        self.pos.truncate(n);
        self.vel.truncate(n);
        self.angvel.truncate(n);
        self.ori.truncate(n);
        self.radius.truncate(n);
        self.mass.truncate(n);
        self.inertia.truncate(n);
        self.material.truncate(n);
        self.blocked.truncate(n);
        self.image.truncate(n);
        self.wrap.truncate(n);
        self.tag.truncate(n);
        self.force.truncate(n);
        self.torque.truncate(n);
    }

    /// Overwrite particle `i` with `p` (the force and torque are reset).
    pub fn set(&mut self, i: usize, p: &Particle) {
        self.gid[i] = p.gid;
        self.pos[i] = p.pos;
        self.vel[i] = p.vel;
        self.angvel[i] = p.angvel;
        self.ori[i] = p.ori;
        self.radius[i] = p.radius;
        self.mass[i] = p.mass;
        self.inertia[i] = p.inertia;
        self.material[i] = p.material;
        self.blocked[i] = p.blocked;
        self.image[i] = p.image;
        self.wrap[i] = p.wrap;
        self.tag[i] = p.tag;
        self.force[i] = V3::zeros();
        self.torque[i] = V3::zeros();
    }

    /// Copy the kinematic state (what changes every step) of `src` into ghost `dst`.
    #[inline]
    pub fn copy_kinematics(&mut self, src: usize, dst: usize) {
        self.pos[dst] = self.pos[src];
        self.vel[dst] = self.vel[src];
        self.angvel[dst] = self.angvel[src];
        self.ori[dst] = self.ori[src];
    }

    /// Reorder the owned particles by `perm` (new index k takes old index `perm[k]`).
    /// Ghosts must have been dropped. `scratch` avoids allocation when warm.
    pub fn permute_owned(&mut self, perm: &[u32], scratch: &mut PermuteScratch) {
        debug_assert_eq!(self.n_ghosts(), 0);
        // rayon: a gather of every column (chute, 2 threads: rebuild −4 %)
        fn apply<T: Copy + Send + Sync>(v: &mut Vec<T>, perm: &[u32], tmp: &mut Vec<T>) {
            use rayon::prelude::*;
            tmp.clear();
            tmp.par_extend(perm.par_iter().map(|&k| v[k as usize]));
            std::mem::swap(v, tmp);
        }
        let s = scratch;
        apply(&mut self.gid, perm, &mut s.u64s);
        apply(&mut self.pos, perm, &mut s.v3s);
        apply(&mut self.vel, perm, &mut s.v3s);
        apply(&mut self.angvel, perm, &mut s.v3s);
        apply(&mut self.force, perm, &mut s.v3s);
        apply(&mut self.torque, perm, &mut s.v3s);
        apply(&mut self.ori, perm, &mut s.quats);
        apply(&mut self.radius, perm, &mut s.f64s);
        apply(&mut self.mass, perm, &mut s.f64s);
        apply(&mut self.inertia, perm, &mut s.f64s);
        apply(&mut self.material, perm, &mut s.u16s);
        apply(&mut self.blocked, perm, &mut s.u8s);
        apply(&mut self.image, perm, &mut s.i3s);
        apply(&mut self.wrap, perm, &mut s.i3s);
        apply(&mut self.tag, perm, &mut s.u16s);
    }

    /// Kinetic energies (translational, rotational) of owned particles, summed in index order.
    pub fn kinetic_energy(&self) -> (f64, f64) {
        let mut et = 0.0;
        let mut er = 0.0;
        for i in 0..self.n_owned {
            et += 0.5 * self.mass[i] * self.vel[i].norm_squared();
            er += 0.5 * self.inertia[i] * self.angvel[i].norm_squared();
        }
        (et, er)
    }

    /// Unwrapped position of particle i for a periodic cell of edge lengths `cell`.
    pub fn unwrapped(&self, i: usize, cell: &V3) -> V3 {
        let w = self.wrap[i];
        self.pos[i]
            + V3::new(
                w[0] as f64 * cell.x,
                w[1] as f64 * cell.y,
                w[2] as f64 * cell.z,
            )
    }
}

/// Reusable buffers for [`Particles::permute_owned`].
#[derive(Clone, Default, Debug)]
pub struct PermuteScratch {
    u64s: Vec<u64>,
    v3s: Vec<V3>,
    quats: Vec<Quat>,
    f64s: Vec<f64>,
    u16s: Vec<u16>,
    u8s: Vec<u8>,
    i3s: Vec<[i32; 3]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sphere_mass_and_inertia() {
        let p = Particle::sphere(0, V3::zeros(), 2.0, 3.0, 0);
        let m = 4.0 / 3.0 * std::f64::consts::PI * 8.0 * 3.0;
        assert!((p.mass - m).abs() < 1e-12);
        assert!((p.inertia - 0.4 * m * 4.0).abs() < 1e-12);
    }

    #[test]
    fn permute_keeps_particles_together() {
        let mut ps = Particles::default();
        for k in 0..4u64 {
            ps.push_owned(&Particle::sphere(
                k,
                V3::new(k as f64, 0.0, 0.0),
                1.0,
                1.0,
                0,
            ));
        }
        let mut s = PermuteScratch::default();
        ps.permute_owned(&[3, 1, 0, 2], &mut s);
        assert_eq!(ps.gid, vec![3, 1, 0, 2]);
        for i in 0..4 {
            assert_eq!(ps.pos[i].x, ps.gid[i] as f64);
        }
    }
}
