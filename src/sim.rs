//! The DEM loop of one rank (ARCHITECTURE.md "The one picture"; thesis §1.1 engine order):
//! rebuild or refresh ghosts → contacts → force gather + integrate (one pass) → move walls.
//! No I/O here: the driver in `io::run` writes outputs between steps.

use crate::collide::{self, CellGrid};
use crate::contact::store::{Candidate, PairList};
use crate::contact::{self, Wall};
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::forces::ForceSlots;
use crate::integrate;
use crate::material::Material;
use crate::particles::{Particles, PermuteScratch, BLOCK_ALL};
use crate::scene::Scene;
use crate::V3;
use std::time::{Duration, Instant};

/// Wall-clock time spent per phase of the loop.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    pub collide: Duration,
    pub contact: Duration,
    /// Force gather + integration + wall motion.
    pub integrate: Duration,
    pub comm: Duration,
    pub output: Duration,
}

/// Global quantities for the time series.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub ke_trans: f64,
    pub ke_rot: f64,
    pub n_contacts: usize,
    /// Mean |resultant force| on free particles / mean |contact force| (Yade's unbalanced force).
    pub unbalanced: f64,
    /// Largest overlap / smaller radius over all contacts.
    pub max_overlap_rel: f64,
    /// Force exerted by the spheres on each wall.
    pub wall_force: Vec<V3>,
}

#[derive(Clone)]
pub struct Simulation {
    pub name: String,
    pub materials: Vec<Material>,
    pub walls: Vec<Wall>,
    pub ps: Particles,
    pub domain: Domain,
    pub gravity: V3,
    pub damping: f64,
    pub dt: f64,
    pub skin: f64,
    pub step: u64,
    pub time: f64,
    pub pairs: PairList,
    pub wall_pairs: PairList,
    pub n_rebuilds: u64,
    pub timers: Timers,
    pub slots: ForceSlots,
    grid: CellGrid,
    cands: Vec<Candidate>,
    ghost_src: Vec<u32>,
    reference: Vec<V3>,
    wall_ref: Vec<V3>,
    perm: Vec<u32>,
    morton: Vec<(u64, u64)>,
    scratch: PermuteScratch,
    need_rebuild: bool,
    halo: f64,
}

impl Simulation {
    pub fn new(scene: Scene) -> Result<Self> {
        let rmax = scene.particles.radius.iter().cloned().fold(0.0, f64::max);
        let halo = 2.0 * rmax + scene.skin;
        scene.domain.check_halo(halo)?;
        Ok(Simulation {
            name: scene.name,
            materials: scene.materials,
            wall_ref: scene.walls.iter().map(|w| w.point).collect(),
            walls: scene.walls,
            ps: scene.particles,
            domain: scene.domain,
            gravity: scene.gravity,
            damping: scene.damping,
            dt: scene.dt,
            skin: scene.skin,
            step: 0,
            time: 0.0,
            pairs: PairList::default(),
            wall_pairs: PairList::default(),
            n_rebuilds: 0,
            timers: Timers::default(),
            slots: ForceSlots::default(),
            grid: CellGrid::default(),
            cands: Vec::new(),
            ghost_src: Vec::new(),
            reference: Vec::new(),
            perm: Vec::new(),
            morton: Vec::new(),
            scratch: PermuteScratch::default(),
            need_rebuild: true,
            halo,
        })
    }

    /// Ask for a rebuild at the next step (e.g. after changing particles by hand).
    pub fn invalidate(&mut self) {
        self.need_rebuild = true;
    }

    /// Wrap, re-sort along a Morton curve, rebuild ghosts, candidate pairs and adjacency.
    fn rebuild(&mut self) -> Result<()> {
        let ps = &mut self.ps;
        ps.truncate_ghosts();
        if let Some((i, msg)) = self.domain.find_escaped(ps) {
            return Err(Error::Runtime(format!(
                "particle gid {} {msg} at step {}",
                ps.gid[i], self.step
            )));
        }
        self.domain.wrap_owned(ps);
        self.sort_owned();
        let ps = &mut self.ps;
        self.domain.build_ghosts(ps, self.halo, &mut self.ghost_src);
        let cell = self.domain.size();
        collide::sphere_candidates(ps, self.skin, &cell, &mut self.grid, &mut self.cands);
        let lost = self.pairs.merge(&self.cands);
        debug_assert_eq!(lost, 0, "a real contact was not a candidate");
        collide::wall_candidates(ps, &self.walls, self.skin, &mut self.cands);
        let lost_w = self.wall_pairs.merge(&self.cands);
        debug_assert_eq!(lost_w, 0, "a real wall contact was not a candidate");
        self.slots.build(ps.n_owned, &self.pairs, &self.wall_pairs);
        self.reference.clear();
        self.reference.extend_from_slice(&ps.pos[..ps.n_owned]);
        for (r, w) in self.wall_ref.iter_mut().zip(&self.walls) {
            *r = w.point;
        }
        self.need_rebuild = false;
        self.n_rebuilds += 1;
        Ok(())
    }

    /// Re-sort owned particles along a Z-order curve (ties by gid: deterministic).
    fn sort_owned(&mut self) {
        let ps = &mut self.ps;
        let n = ps.n_owned;
        if n == 0 {
            return;
        }
        let mut lo = V3::repeat(f64::INFINITY);
        for x in &ps.pos[..n] {
            lo = lo.inf(x);
        }
        let h = self.halo.max(1e-300);
        self.morton.clear();
        for i in 0..n {
            let c = (ps.pos[i] - lo) / h;
            let q = |v: f64| (v.max(0.0) as u64).min(0x1f_ffff);
            self.morton
                .push((morton3(q(c.x), q(c.y), q(c.z)), ps.gid[i]));
        }
        self.perm.clear();
        self.perm.extend(0..n as u32);
        let keys = &self.morton;
        self.perm.sort_unstable_by_key(|&k| keys[k as usize]);
        ps.permute_owned(&self.perm, &mut self.scratch);
    }

    /// Advance one time step.
    pub fn step(&mut self) -> Result<()> {
        let t0 = Instant::now();
        if self.need_rebuild {
            self.rebuild()?;
        } else {
            self.domain.refresh_ghosts(&mut self.ps, &self.ghost_src);
        }
        let t1 = Instant::now();
        let cell = self.domain.size();
        let out = self.slots.writer();
        let sl = &self.slots;
        let (ps, mats, dt) = (&self.ps, &self.materials, self.dt);
        contact::sphere_pairs(&mut self.pairs, &sl.pair_slot, out, ps, mats, &cell, dt);
        contact::wall_pairs(
            &mut self.wall_pairs,
            &sl.wall_slot,
            out,
            ps,
            &self.walls,
            mats,
            dt,
        );
        let t2 = Instant::now();
        let slots = &self.slots;
        let d2 = integrate::leapfrog(
            &mut self.ps,
            &self.reference,
            self.dt,
            self.damping,
            self.gravity,
            |p| slots.contact_sum(p),
        );
        let mut wall_d2: f64 = 0.0;
        for (w, r) in self.walls.iter_mut().zip(&self.wall_ref) {
            w.point += w.vel * self.dt;
            wall_d2 = wall_d2.max((w.point - r).norm_squared());
        }
        let half = 0.5 * self.skin;
        // Verlet trigger (thesis eq. 2.10–2.12): a particle or wall moved more than skin/2.
        self.need_rebuild = !(d2 <= half * half && wall_d2 <= half * half);
        self.step += 1;
        self.time += self.dt;
        let t4 = Instant::now();
        self.timers.collide += t1 - t0;
        self.timers.contact += t2 - t1;
        self.timers.integrate += t4 - t2;
        Ok(())
    }

    /// Check the current state for NaN or escaped particles (the rebuild does it too).
    pub fn check(&self) -> Result<()> {
        if let Some((i, msg)) = self.domain.find_escaped(&self.ps) {
            return Err(Error::Runtime(format!(
                "particle gid {} {msg} at step {}",
                self.ps.gid[i], self.step
            )));
        }
        Ok(())
    }

    /// Global quantities of the current state (forces are those of the last step).
    pub fn stats(&self) -> Stats {
        let ps = &self.ps;
        let (ke_trans, ke_rot) = ps.kinetic_energy();
        let mut n_contacts = 0;
        let mut sum_fc = 0.0;
        let mut max_ov: f64 = 0.0;
        for k in 0..self.pairs.len() {
            let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
            if self.pairs.active[k] && i < ps.n_owned {
                n_contacts += 1;
                sum_fc += self.slots.pair_force(k).norm();
                let l = crate::contact::geom::branch(
                    ps.pos[i],
                    ps.pos[j],
                    ps.image[i],
                    ps.image[j],
                    &self.domain.size(),
                );
                let ov = ps.radius[i] + ps.radius[j] - l.norm();
                max_ov = max_ov.max(ov / ps.radius[i].min(ps.radius[j]));
            }
        }
        let mut wall_force = vec![V3::zeros(); self.walls.len()];
        for k in 0..self.wall_pairs.len() {
            if self.wall_pairs.active[k] {
                let i = self.wall_pairs.i[k] as usize;
                n_contacts += 1;
                let f = self.slots.wall_force(k);
                sum_fc += f.norm();
                wall_force[self.wall_pairs.j[k] as usize] += f;
                let w = &self.walls[self.wall_pairs.j[k] as usize];
                let ov = ps.radius[i] - (ps.pos[i] - w.point).dot(&w.normal);
                max_ov = max_ov.max(ov / ps.radius[i]);
            }
        }
        let (mut sum_f, mut n_free) = (0.0, 0usize);
        for i in 0..ps.n_owned {
            if ps.blocked[i] != BLOCK_ALL {
                sum_f += ps.force[i].norm();
                n_free += 1;
            }
        }
        let unbalanced = if n_contacts > 0 && sum_fc > 0.0 && n_free > 0 {
            (sum_f / n_free as f64) / (sum_fc / n_contacts as f64)
        } else {
            f64::NAN
        };
        Stats {
            ke_trans,
            ke_rot,
            n_contacts,
            unbalanced,
            max_overlap_rel: max_ov,
            wall_force,
        }
    }

    /// Elastic energy stored in the contacts: Σ ½ K_N u_N² + ½ |F_T|²/K_T over real contacts
    /// (each counted once), for energy-balance checks.
    pub fn elastic_energy(&self) -> f64 {
        let ps = &self.ps;
        let cell = self.domain.size();
        let mut e = 0.0;
        let shear = |st: &crate::contact::store::ContactState| {
            if st.phys.ks > 0.0 {
                0.5 * st.fs.norm_squared() / st.phys.ks
            } else {
                0.0
            }
        };
        for k in 0..self.pairs.len() {
            let st = &self.pairs.state[k];
            let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
            if self.pairs.active[k] && i < ps.n_owned {
                let l = crate::contact::geom::branch(
                    ps.pos[i],
                    ps.pos[j],
                    ps.image[i],
                    ps.image[j],
                    &cell,
                );
                let u_n = (l.norm() - ps.radius[i] - ps.radius[j]).min(0.0);
                e += 0.5 * st.phys.kn * u_n * u_n + shear(st);
            }
        }
        for k in 0..self.wall_pairs.len() {
            let st = &self.wall_pairs.state[k];
            if self.wall_pairs.active[k] {
                let i = self.wall_pairs.i[k] as usize;
                let w = &self.walls[self.wall_pairs.j[k] as usize];
                let u_n = ((ps.pos[i] - w.point).dot(&w.normal) - ps.radius[i]).min(0.0);
                e += 0.5 * st.phys.kn * u_n * u_n + shear(st);
            }
        }
        e
    }

    /// Local index of the owned particle with global id `gid` (linear search; tests/tools).
    pub fn find(&self, gid: u64) -> Option<usize> {
        self.ps.gid[..self.ps.n_owned]
            .iter()
            .position(|&g| g == gid)
    }
}

/// Interleave the low 21 bits of three integers (Morton / Z-order key).
fn morton3(x: u64, y: u64, z: u64) -> u64 {
    fn spread(v: u64) -> u64 {
        let mut x = v & 0x1f_ffff;
        x = (x | x << 32) & 0x1f00000000ffff;
        x = (x | x << 16) & 0x1f0000ff0000ff;
        x = (x | x << 8) & 0x100f00f00f00f00f;
        x = (x | x << 4) & 0x10c30c30c30c30c3;
        x = (x | x << 2) & 0x1249249249249249;
        x
    }
    spread(x) | spread(y) << 1 | spread(z) << 2
}
