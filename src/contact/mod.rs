//! Contacts: geometry ([`geom`]), constitutive laws ([`law`]) and the persistent pair store with
//! its history ([`store`]). [`sphere_pairs`] and [`wall_pairs`] run one step of the contact
//! loop (rayon over fixed chunks: each pair's result depends on that pair alone, so the loop is
//! bit-identical for any thread count).

pub mod geom;
pub mod law;
pub mod store;

use crate::forces::SlotWriter;
use crate::material::{mix, Material};
use crate::particles::Particles;
use crate::V3;
use rayon::prelude::*;
use store::{ContactState, PairForce, PairList};

/// Pairs per rayon task: large enough to amortise scheduling, small enough to balance.
pub const CHUNK: usize = 2048;

/// A plane wall, replicated on every rank (ARCHITECTURE.md "Walls").
#[derive(Clone, Debug, PartialEq)]
pub struct Wall {
    /// A point of the plane at the current time.
    pub point: V3,
    /// Unit normal pointing into the region where the spheres are (digest A5.1, one-sided wall).
    pub normal: V3,
    /// Constant prescribed velocity.
    pub vel: V3,
    pub material: u16,
}

/// Reduced mass m1 m2 / (m1 + m2).
#[inline]
fn reduced_mass(m1: f64, m2: f64) -> f64 {
    m1 * m2 / (m1 + m2)
}

/// Sphere–sphere contact loop of one step. Particle 1 of each pair has the lower gid.
/// `cell` holds the periodic cell's edge lengths (any value when not periodic: images are 0).
/// Each pair's force goes to its slots (`slots[k]`) through `out`.
#[allow(clippy::too_many_arguments)]
pub fn sphere_pairs(
    pairs: &mut PairList,
    slots: &[[u32; 2]],
    out: SlotWriter,
    ps: &Particles,
    mats: &[Material],
    cell: &V3,
    dt: f64,
) {
    let (ii, jj) = (&pairs.i, &pairs.j);
    pairs
        .active
        .par_chunks_mut(CHUNK)
        .zip(pairs.state.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (act, st))| {
            let base = c * CHUNK;
            for k in 0..st.len() {
                let (i, j) = (ii[base + k] as usize, jj[base + k] as usize);
                let was_active = act[k];
                let r = sphere_pair(&mut act[k], &mut st[k], ps, mats, cell, dt, i, j);
                // A pair that was and stays apart already holds zeros in its slots.
                if was_active || act[k] {
                    out.pair(slots[base + k], r.f, r.t1, r.t2);
                }
            }
        });
}

/// One sphere–sphere pair: geometry (thesis §2.3, digest A4.2–A4.3) then the linear law.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn sphere_pair(
    active: &mut bool,
    st: &mut ContactState,
    ps: &Particles,
    mats: &[Material],
    cell: &V3,
    dt: f64,
    i: usize,
    j: usize,
) -> PairForce {
    let (r1, r2) = (ps.radius[i], ps.radius[j]);
    let l = geom::branch(ps.pos[i], ps.pos[j], ps.image[i], ps.image[j], cell);
    let d2 = l.norm_squared();
    let reach = r1 + r2;
    if !*active && d2 >= reach * reach {
        return PairForce::default();
    }
    let d = d2.sqrt();
    let u_n = d - reach;
    if u_n > 0.0 {
        // Separation of a non-cohesive contact: delete it (digest A6).
        *active = false;
        return PairForce::default();
    }
    let n = l / d;
    if !*active {
        *active = true;
        let phys = mix(
            &mats[ps.material[i] as usize],
            &mats[ps.material[j] as usize],
            r1,
            r2,
            reduced_mass(ps.mass[i], ps.mass[j]),
        );
        *st = ContactState::new(phys, n);
    }
    let (w1, w2) = (ps.angvel[i], ps.angvel[j]);
    // Lever arms d1 = r1, d2 = r2 (digest A4.1 with d0 = r1 + r2; radius arms avoid ratcheting).
    let v12 = geom::relative_velocity(ps.vel[i], w1, r1, ps.vel[j], w2, r2, n);
    let f = law::linear::cundall_strack(st, n, u_n, v12, n.dot(&(w1 + w2)), dt);
    // Torques: T1 += d1 n × F, T2 += d2 n × F (digest A6, erratum A13 row 5).
    let nxf = n.cross(&f);
    PairForce {
        f,
        t1: nxf * r1,
        t2: nxf * r2,
    }
}

/// Sphere–wall contact loop of one step (the wall is particle 1, digest A5.1).
#[allow(clippy::too_many_arguments)]
pub fn wall_pairs(
    pairs: &mut PairList,
    slots: &[u32],
    out: SlotWriter,
    ps: &Particles,
    walls: &[Wall],
    mats: &[Material],
    dt: f64,
) {
    let (ii, ww) = (&pairs.i, &pairs.j);
    pairs
        .active
        .par_chunks_mut(CHUNK)
        .zip(pairs.state.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (act, st))| {
            let base = c * CHUNK;
            for k in 0..st.len() {
                let (i, w) = (ii[base + k] as usize, ww[base + k] as usize);
                let was_active = act[k];
                let r = wall_pair(&mut act[k], &mut st[k], ps, &walls[w], mats, dt, i);
                if was_active || act[k] {
                    out.wall(slots[base + k], r.f, r.t2);
                }
            }
        });
}

/// One sphere–wall pair. Returns the force on the wall (`f`) and the torque on the sphere (`t2`).
#[inline]
pub fn wall_pair(
    active: &mut bool,
    st: &mut ContactState,
    ps: &Particles,
    wall: &Wall,
    mats: &[Material],
    dt: f64,
    i: usize,
) -> PairForce {
    let r = ps.radius[i];
    let n = wall.normal;
    // u_N = (c − p)·n − r, negative in penetration (digest A5.1).
    let u_n = (ps.pos[i] - wall.point).dot(&n) - r;
    if u_n > 0.0 {
        *active = false;
        return PairForce::default();
    }
    if !*active {
        *active = true;
        let phys = mix(
            &mats[wall.material as usize],
            &mats[ps.material[i] as usize],
            r,
            r,
            ps.mass[i],
        );
        *st = ContactState::new(phys, n);
    }
    let w2 = ps.angvel[i];
    let v12 = geom::relative_velocity(wall.vel, V3::zeros(), 0.0, ps.vel[i], w2, r, n);
    let f = law::linear::cundall_strack(st, n, u_n, v12, n.dot(&w2), dt);
    PairForce {
        f,
        t1: V3::zeros(),
        t2: n.cross(&f) * r,
    }
}
