//! Diagnostics of the current state: the series' statistics (`Stats`), contact views for the
//! snapshots, energies, stresses and CPM link statistics (collective, exact sums).

use super::*;

/// Global quantities for the time series.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub ke_trans: f64,
    pub ke_rot: f64,
    pub n_contacts: usize,
    /// Yade's unbalanced force: mean |resultant force| (contacts + gravity) on the free
    /// particles / mean |contact force| (sphere–sphere and sphere–wall). Finite for finite
    /// forces: with no contact force to compare with (no contacts, or contacts all at zero
    /// force, as CPM links at the start) it is 1 when a free particle carries a resultant
    /// force — none of it is balanced, as in free fall — and 0 when none does (nothing acts,
    /// or no particle is free). Yade's `Shop::unbalancedForce` divides by the contact count
    /// and gives NaN there.
    pub unbalanced: f64,
    /// Largest overlap / smaller radius over all contacts.
    pub max_overlap_rel: f64,
    /// Force exerted by the spheres on each wall.
    pub wall_force: Vec<V3>,
    /// Force and torque (about its centre: `mesh::Mesh::centre0` moved with it) exerted by the
    /// spheres on each mesh.
    pub mesh_force: Vec<(V3, V3)>,
    /// Particles over all ranks.
    pub n_particles: u64,
    /// Per flow engine (`Flow::columns`): particles and mass removed (outlets) or inserted
    /// (inlets) so far.
    pub flow: Vec<(u64, f64)>,
    /// The deforming cell's columns (scenes with a `cell`).
    pub cell: Option<crate::engines::cell::CellRow>,
    /// The servo walls' box (scenes with `servo_walls`): the stress of each axis [Pa] (wall
    /// forces over the cross-section, tension positive; NaN for a periodic axis) and its edges
    /// [m].
    pub servo: Option<[f64; 6]>,
    /// The energy budget (scenes with `energy: true`).
    pub energy: Option<Budget>,
    /// The contact network of the particles (within the scene's `analysis_region`).
    pub network: Network,
    /// The protocol's stage that ran the last step (scenes with `stages`).
    pub stage: Option<usize>,
}

/// The particles' contact network in `series.csv` (issue 32), over sphere–sphere contacts —
/// within the scene's `output.analysis_region` if it has one: of the particles whose centre
/// lies in it, and of the contacts whose contact point does.
#[derive(Clone, Copy, Debug, Default)]
pub struct Network {
    /// Mean coordination number: the particles' contacts with particles over the particles
    /// (2 N_c / N without a region).
    pub coordination: f64,
    /// Eigenvalues, largest first, of Satake's fabric tensor F = (1/N_c) Σ n ⊗ n (trace 1;
    /// NaN without contacts).
    pub fabric: [f64; 3],
    /// Fraction of the contacts at Coulomb's limit ([`ContactView::sliding`]; NaN without
    /// contacts).
    pub sliding: f64,
}

/// One contact as the analysis outputs see it (issue 32: `series.csv`'s network columns, the
/// snapshots' `contacts`): body 1 is the particle of lower gid, or the particle of a contact
/// with a wall or facet (body 2).
#[derive(Clone, Copy, Debug)]
pub struct ContactView {
    /// Contact point [m] at the current positions: x₁ + n (r₁ − δ/2) between spheres (the
    /// middle of the overlap, Yade's `ScGeom::contactPoint`), x − n_w (r − δ/2) on a plane
    /// wall, the closest point of the triangle (of the last step) on a facet.
    pub point: V3,
    /// Unit normal from body 1 towards body 2, as the law used it in the last step.
    pub normal: V3,
    /// Force on body 1 in the last step [N] (NaN where no step recorded forces).
    pub force: V3,
    /// Normal force −F · n [N], positive in compression (negative: a cohesive pull).
    pub f_n: f64,
    /// Tangential force |F − (F · n) n| [N].
    pub f_t: f64,
    /// Overlap δ [m] at the current positions: r₁ + r₂ − |l| (negative for a stretched CPM
    /// link), −gap on a wall.
    pub overlap: f64,
    /// CPM damage ω (0 for frictional contacts).
    pub damage: f64,
    /// Coulomb's limit held the tangential force in the last step: |F_T| ≥ (1 − 10⁻⁶) × the
    /// law's limit ([`FrictLawKind::coulomb_limit`](crate::contact::law::FrictLawKind::coulomb_limit));
    /// false for CPM contacts and where no force is known.
    pub sliding: bool,
}

/// The relative tolerance of [`ContactView::sliding`]: the law's radial return puts |F_T| on
/// its limit to round-off, and the limit recomputed here (from the force, or from the step's
/// geometry — the positions less the step's displacement) is as close.
pub(crate) const SLIDE_TOL: f64 = 1e-6;

/// (−F · n, |F − (F · n) n|): the normal force (compression positive) and the tangential
/// force's magnitude.
pub(crate) fn split(f: V3, n: V3) -> (f64, f64) {
    let fn_ = f.dot(&n);
    (-fn_, (f - n * fn_).norm())
}

/// The energy budget over all ranks, in joules (collective: [`Simulation::energy_budget`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Kinetic energy (fluctuation velocities; translation and rotation).
    pub kinetic: f64,
    /// Elastic energy stored in the contacts (½ K_N u_N² + ½ |F_T|²/K_T).
    pub elastic: f64,
    /// Dissipated by frictional slip, by viscous dashpots, by Cundall damping, by CPM's damage
    /// and compressive plasticity (`law::cpm::step_dissipation`).
    pub friction: f64,
    pub viscous: f64,
    pub damping: f64,
    pub damage: f64,
    /// Work done on the particles by gravity and by the boundary (moving walls and meshes,
    /// particles with prescribed velocities — the strainer's supports —, the deforming cell's
    /// mean field: through the contacts).
    pub gravity: f64,
    pub boundary: f64,
    /// Energy brought in by inlets less what outlets took out: the kinetic energy of the
    /// particles created and deleted, the elastic energy of the deleted ones' contacts.
    pub flow: f64,
}

impl Budget {
    /// kinetic + elastic + dissipated − work done: constant when the budget closes.
    pub fn total(&self) -> f64 {
        self.kinetic + self.elastic + self.friction + self.viscous + self.damping + self.damage
            - self.gravity
            - self.boundary
            - self.flow
    }
}

/// Link statistics of a CPM packing.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    /// Cohesive links with ω = 0.
    pub intact: u64,
    /// Cohesive links with ω > 0 still present.
    pub damaged: u64,
    /// Cohesive links removed since the first step.
    pub broken: u64,
    /// Mean ω over the present cohesive links.
    pub mean_omega: f64,
    /// Non-cohesive (frictional) contacts.
    pub frictional: u64,
}

/// [`Stats::unbalanced`] from Σ|F| over the `n_free` free particles and Σ|F_c| over the
/// `n_contacts` contacts.
pub(crate) fn unbalanced_force(
    f_free: f64,
    n_free: usize,
    f_contacts: f64,
    n_contacts: usize,
) -> f64 {
    let mean_free = if n_free > 0 {
        f_free / n_free as f64
    } else {
        0.0
    };
    let mean_contact = if n_contacts > 0 {
        f_contacts / n_contacts as f64
    } else {
        0.0
    };
    if mean_free.is_nan() || mean_contact.is_nan() {
        return f64::NAN; // a blow-up (the series' `check` stops the run before)
    }
    match (mean_contact > 0.0, mean_free > 0.0) {
        (true, _) => mean_free / mean_contact,
        (false, true) => 1.0,
        (false, false) => 0.0,
    }
}

/// Particles or pairs per task of the series statistics.
pub(crate) const STATS_CHUNK: usize = 8192;

/// Fold items 0..n on rayon: `add(item, acc)` into one accumulator `init()` per chunk of
/// [`STATS_CHUNK`] items, then merged in chunk order (`merge(into, from)`). Exact
/// sums, counts and maxima: the same result as one sequential pass. Allocates (outputs only).
pub(crate) fn par_fold<T: Send>(
    n: usize,
    init: impl Fn() -> T + Sync,
    add: impl Fn(usize, &mut T) + Sync,
    merge: impl Fn(&mut T, T),
) -> T {
    let parts: Vec<T> = (0..n.div_ceil(STATS_CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut acc = init();
            for i in c * STATS_CHUNK..((c + 1) * STATS_CHUNK).min(n) {
                add(i, &mut acc);
            }
            acc
        })
        .collect();
    let mut all = init();
    for p in parts {
        merge(&mut all, p);
    }
    all
}

impl Simulation {
    /// Check the current state for NaN or escaped particles on every rank (collective; the
    /// rebuild does it too).
    pub fn check(&self) -> Result<()> {
        let failure = self.domain.find_escaped(&self.ps).map(|(i, msg)| {
            format!(
                "particle gid {} {msg} at step {} (rank {})",
                self.ps.gid[i],
                self.step,
                self.comm.rank()
            )
        });
        if self.comm.any(failure.is_some()) {
            return Err(failure.map(Error::Runtime).unwrap_or(Error::Peer {
                rank: self.comm.rank(),
                step: self.step,
            }));
        }
        Ok(())
    }

    /// Overlap of sphere pair `k` relative to the smaller radius, and its branch length.
    pub(super) fn pair_overlap(&self, k: usize) -> (f64, f64) {
        let ps = &self.ps;
        let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
        let l = self.pairs.branch(k, &ps.pos);
        let ov = ps.radius[i] + ps.radius[j] - l.norm();
        (ov / ps.radius[i].min(ps.radius[j]), ov)
    }

    /// Global quantities of the current state (forces are those of the last step), summed
    /// exactly over all ranks: the same bits for any rank and thread count. Collective.
    ///
    /// # Panics
    /// If the last step did not record the forces ([`Self::record_forces`]).
    pub fn stats(&self) -> Stats {
        assert!(
            self.slots.recorded(),
            "forces were not recorded in the last step (Simulation::record_forces)"
        );
        let ps = &self.ps;
        let nw = self.walls.len();
        let nm = self.meshes.meshes.len();
        // [ke_t, ke_r, Σ|F_c|, Σ|F| over free particles, wall forces…, mesh forces and torques…]
        let mut sums = vec![ExactSum::new(); 4 + 3 * nw + 6 * nm];
        let sum3 = || std::array::from_fn::<_, 3, _>(|_| ExactSum::new());
        // per chunk of particles: [ke_t, ke_r, Σ|F| over free particles], free particles
        let ([ke_t, ke_r, f_free], n_free) = par_fold(
            ps.n_owned,
            || (sum3(), 0i64),
            |i, (s, n)| {
                s[0].add(0.5 * ps.mass[i] * ps.vel[i].norm_squared());
                s[1].add(0.5 * ps.inertia[i] * ps.angvel[i].norm_squared());
                if ps.blocked[i] != BLOCK_ALL {
                    s[2].add(ps.force[i].norm());
                    *n += 1;
                }
            },
            |(a, n), (b, m)| {
                a.iter_mut().zip(&b).for_each(|(a, b)| a.merge(b));
                *n += m;
            },
        );
        (sums[0], sums[1], sums[3]) = (ke_t, ke_r, f_free);
        // per chunk of pairs: Σ|F_c|, contacts, largest overlap, and the contact network's
        // part ([`Network`]: one pass, the pairs' geometry formed once)
        let (pairs, n) = (&self.pairs, ps.n_owned);
        let inside = |x: &V3| self.analysis_region.as_ref().is_none_or(|r| r.contains(x));
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        struct Acc {
            f: ExactSum,
            n: i64,
            ov: f64,
            fabric: Vec<ExactSum>,
            /// [contacts in the region, those sliding, contact ends on owned particles in it]
            net: [i64; 3],
        }
        let acc = par_fold(
            pairs.len(),
            || Acc {
                f: ExactSum::new(),
                n: 0,
                ov: 0.0,
                fabric: vec![ExactSum::new(); 6],
                net: [0; 3],
            },
            |k, a| {
                if !pairs.active[k] {
                    return;
                }
                let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
                for p in [i, j] {
                    a.net[2] += (p < n && inside(&ps.pos[p])) as i64;
                }
                // each contact counted once: on the rank owning its particle 1
                if i < n {
                    let v = self.sphere_contact(k);
                    a.n += 1;
                    a.f.add(v.force.norm());
                    a.ov = a.ov.max(v.overlap / ps.radius[i].min(ps.radius[j]));
                    if inside(&v.point) {
                        a.net[0] += 1;
                        a.net[1] += v.sliding as i64;
                        for (s, &(x, y)) in a.fabric.iter_mut().zip(&IJ) {
                            s.add(v.normal[x] * v.normal[y]);
                        }
                    }
                }
            },
            |a, b| {
                a.f.merge(&b.f);
                a.n += b.n;
                a.ov = a.ov.max(b.ov);
                a.fabric
                    .iter_mut()
                    .zip(&b.fabric)
                    .for_each(|(x, y)| x.merge(y));
                a.net.iter_mut().zip(b.net).for_each(|(x, y)| *x += y);
            },
        );
        let (f_c, mut n_contacts, mut max_ov) = (acc.f, acc.n, acc.ov);
        sums[2] = f_c;
        for k in 0..self.wall_pairs.len() {
            if self.wall_pairs.active[k] {
                let i = self.wall_pairs.i[k] as usize;
                let w = self.wall_pairs.j[k] as usize;
                n_contacts += 1;
                let f = self.slots.wall_force(k);
                sums[2].add(f.norm());
                let ov = if w < nw {
                    for a in 0..3 {
                        sums[4 + 3 * w + a].add(f[a]);
                    }
                    -self.walls[w].gap(ps.pos[i], ps.radius[i])
                } else {
                    let h = &self.facets.hit[k];
                    let m = self.meshes.mesh_of[w - nw] as usize;
                    let t = (h.q - self.meshes.centre[m]).cross(&f);
                    let at = 4 + 3 * nw + 6 * m;
                    for a in 0..3 {
                        sums[at + a].add(f[a]);
                        sums[at + 3 + a].add(t[a]);
                    }
                    -h.u_n
                };
                max_ov = max_ov.max(ov / ps.radius[i]);
            }
        }
        sums.extend(acc.fabric);
        let n_p = ps.pos[..n].iter().filter(|x| inside(x)).count() as i64;
        let [net0, net1, net2] = acc.net;
        let mut counts = [n_contacts, n_free, n as i64, net0, net1, net2, n_p];
        self.comm.sum_i64s(&mut counts);
        self.comm.sum_exact(&mut sums);
        let max_ov = self.comm.max_f64(max_ov);
        let v: Vec<f64> = sums.iter().map(|s| s.value()).collect();
        let (n_contacts, n_free) = (counts[0] as usize, counts[1] as usize);
        let unbalanced = unbalanced_force(v[3], n_free, v[2], n_contacts);
        Stats {
            ke_trans: v[0],
            ke_rot: v[1],
            n_contacts,
            unbalanced,
            max_overlap_rel: max_ov,
            wall_force: (0..nw)
                .map(|w| V3::new(v[4 + 3 * w], v[5 + 3 * w], v[6 + 3 * w]))
                .collect(),
            mesh_force: (0..nm)
                .map(|m| {
                    let a = 4 + 3 * nw + 6 * m;
                    (
                        V3::new(v[a], v[a + 1], v[a + 2]),
                        V3::new(v[a + 3], v[a + 4], v[a + 5]),
                    )
                })
                .collect(),
            n_particles: counts[2] as u64,
            flow: self
                .engines
                .get::<Flow>()
                .map_or(Vec::new(), |f| f.totals()),
            cell: self.engines.get::<CellEngine>().map(|c| {
                let m = self.cell_measure(false, false);
                let cell = &self.domain.cell;
                crate::engines::cell::CellRow {
                    stage: c.stage,
                    strain: c.strain(),
                    strain_vol: c.trsf.determinant().ln(),
                    stress: m.stress,
                    kinetic: self.kinetic_stress(),
                    coordination: 2.0 * m.n_contacts as f64 / (counts[2] as f64).max(1.0),
                    volume: cell.volume(),
                    h: cell.h,
                    grad: c.grad_prev.diagonal(),
                    flips: c.flips,
                    external_work: c.external_work,
                }
            }),
            servo: self.engines.get::<ServoWalls>().map(|sv| {
                let ([x, y, z], e) = (sv.stress, sv.edges(&self.walls));
                [x, y, z, e.x, e.y, e.z]
            }),
            energy: self.energy_budget(),
            stage: self
                .engines
                .get::<crate::engines::protocol::Protocol>()
                .map(|p| p.column()),
            network: {
                let at = 4 + 3 * nw + 6 * nm;
                let ([n_c, n_slide, ends, n_p], f) =
                    ([3, 4, 5, 6].map(|k| counts[k] as f64), &v[at..]);
                let fabric = match n_c > 0.0 {
                    // (nalgebra's iteration would not end on NaN)
                    false => [f64::NAN; 3],
                    true => {
                        let m = M3::new(f[0], f[5], f[4], f[5], f[1], f[3], f[4], f[3], f[2]);
                        let e = (m / n_c).symmetric_eigenvalues();
                        let mut e = [e[0], e[1], e[2]];
                        e.sort_by(|a, b| b.total_cmp(a));
                        e
                    }
                };
                Network {
                    coordination: ends / n_p,
                    fabric,
                    sliding: n_slide / n_c,
                }
            },
        }
    }

    /// Sphere pair `k` (in contact, particle 1 owned) as the outputs see it.
    pub fn sphere_contact(&self, k: usize) -> ContactView {
        let (ps, pairs) = (&self.ps, &self.pairs);
        let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
        let (r1, r2) = (ps.radius[i], ps.radius[j]);
        let l = pairs.branch(k, &ps.pos);
        let d = l.norm();
        let overlap = r1 + r2 - d;
        let st = &pairs.state[k];
        let force = match self.slots.forces_known() {
            true => self.slots.pair_force(k),
            false => V3::repeat(f64::NAN),
        };
        let (f_n, f_t) = split(force, st.n_old);
        let (damage, sliding) = match &self.cpm {
            Some(_) => (pairs.cpm[k].omega, false),
            None => {
                let limit = self.mix.law().coulomb_limit(&st.phys, -f_n, || {
                    // the step's geometry: the branch vector less the step's relative
                    // displacement (with a deforming cell, its mean field's too)
                    let dv = ps.vel[j] - ps.vel[i] + pairs.grad.map_or(V3::zeros(), |g| g * l);
                    (l - dv * self.dt).norm() - r1 - r2
                });
                (0.0, f_t > 0.0 && f_t >= (1.0 - SLIDE_TOL) * limit)
            }
        };
        ContactView {
            point: ps.pos[i] + l * ((r1 - 0.5 * overlap) / d),
            normal: st.n_old,
            force,
            f_n,
            f_t,
            overlap,
            damage,
            sliding,
        }
    }

    /// Wall (or facet) pair `k` (in contact) as the outputs see it: body 1 the sphere, body 2
    /// the wall.
    pub fn wall_contact_view(&self, k: usize) -> ContactView {
        let (ps, pairs) = (&self.ps, &self.wall_pairs);
        let (i, w) = (pairs.i[k] as usize, pairs.j[k] as usize);
        let r = ps.radius[i];
        let st = &pairs.state[k];
        // the law's body 1 is the wall, its normal points to the sphere
        let f_wall = match self.slots.forces_known() {
            true => self.slots.wall_force(k),
            false => V3::repeat(f64::NAN),
        };
        let n = st.n_old;
        let (f_n, f_t) = split(f_wall, n);
        let (point, overlap, u_n) = match self.walls.get(w) {
            Some(wall) => {
                let g = wall.geom(ps.pos[i], r);
                let gap = g.u_n;
                let v = ps.vel[i] - g.v
                    + pairs
                        .grad
                        .map_or(V3::zeros(), |g| g * (ps.pos[i] - pairs.grad_origin));
                let point = ps.pos[i] - g.n * (r + 0.5 * gap);
                (point, -gap, gap - v.dot(&g.n) * self.dt)
            }
            None => {
                let h = &self.facets.hit[k];
                (h.q, -h.u_n, h.u_n)
            }
        };
        let limit = self.mix.law().coulomb_limit(&st.phys, -f_n, || u_n);
        ContactView {
            point,
            normal: -n,
            force: -f_wall,
            f_n,
            f_t,
            overlap,
            damage: 0.0,
            sliding: f_t > 0.0 && f_t >= (1.0 - SLIDE_TOL) * limit,
        }
    }

    /// Yade's unbalanced force (`Shop::unbalancedForce`): the mean total force on the free
    /// particles over the mean contact force, this step's forces (recorded), exact sums over
    /// all ranks. Collective.
    pub fn unbalanced_now(&self) -> f64 {
        let ps = &self.ps;
        let mut sums = [ExactSum::new(), ExactSum::new()];
        let mut counts = [0i64; 2];
        for i in 0..ps.n_owned {
            if ps.blocked[i] != BLOCK_ALL {
                sums[0].add(ps.force[i].norm());
                counts[0] += 1;
            }
        }
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < ps.n_owned {
                sums[1].add(self.slots.pair_force(k).norm());
                counts[1] += 1;
            }
        }
        self.comm.sum_exact(&mut sums);
        self.comm.sum_i64s(&mut counts);
        unbalanced_force(
            sums[0].value(),
            counts[0] as usize,
            sums[1].value(),
            counts[1] as usize,
        )
    }

    /// The kinetic part of the stress, −(1/V) Σ m v′ ⊗ v′ over the owned particles (v′ the
    /// fluctuation velocity: what `Particles::vel` holds in a deforming cell), exact sums over
    /// all ranks. Collective.
    pub fn kinetic_stress(&self) -> M3 {
        let ps = &self.ps;
        let mut sums = vec![ExactSum::new(); 9];
        for i in 0..ps.n_owned {
            let v = ps.vel[i];
            for a in 0..3 {
                for b in 0..3 {
                    sums[3 * a + b].add(ps.mass[i] * v[a] * v[b]);
                }
            }
        }
        self.comm.sum_exact(&mut sums);
        let vol = self.domain.cell.volume();
        M3::from_fn(|a, b| -sums[3 * a + b].value() / vol)
    }

    /// Elastic energy stored in the contacts over real contacts (each counted once): the law's
    /// springs ([`FrictLaw::elastic_energy`](crate::contact::law::FrictLaw::elastic_energy):
    /// ½ K_N u_N² + ½ |F_T|²/K_T for Cundall–Strack, the Hertz potential (2/5) k_N δ^{5/2} +
    /// ½ S_T |ξ|², …, CPM's [`stored_energy`](crate::contact::law::cpm::stored_energy)) and the
    /// EPSD rolling springs ½ |M|²/k_r; sphere pairs, walls and facets. Collective.
    pub fn elastic_energy(&self) -> f64 {
        let n = self.ps.n_owned;
        let mut e = ExactSum::new();
        for k in 0..self.pairs.len() {
            if (self.pairs.i[k] as usize) < n {
                e.add(self.pair_elastic(k));
            }
        }
        for k in 0..self.wall_pairs.len() {
            e.add(self.wall_pair_elastic(k));
        }
        let mut v = [e];
        self.comm.sum_exact(&mut v);
        v[0].value()
    }

    /// The EPSD rolling spring's energy of a contact with pair constants `p`, normal
    /// displacement `u_n`, effective radius `r_eff` and moment `m` (0 without the model).
    pub(super) fn rolling_elastic(
        &self,
        p: &crate::contact::law::FrictPhys,
        u_n: f64,
        r_eff: f64,
        m: V3,
    ) -> f64 {
        let (law, roll) = (self.mix.law(), self.mix.rolling());
        if !roll.has_history() {
            return 0.0;
        }
        let (k_t, k_n) = law.stiffnesses(p, u_n);
        roll.spring_energy(m, roll.spring(r_eff, k_t, k_n, 0.0).0)
    }

    /// The elastic energy of sphere pair `k` at the current positions (0 when not in contact).
    pub(super) fn pair_elastic(&self, k: usize) -> f64 {
        let ps = &self.ps;
        let st = &self.pairs.state[k];
        let (i, j) = (self.pairs.i[k] as usize, self.pairs.j[k] as usize);
        if !self.pairs.active[k] {
            return 0.0;
        }
        if let Some(c) = &self.cpm {
            use crate::contact::law::cpm;
            let h = &self.pairs.cpm[k];
            let (m1, m2) = (ps.material[i] as usize, ps.material[j] as usize);
            let (r1, r2) = (ps.radius[i], ps.radius[j]);
            let p = cpm::CpmPhys::new(&c.mats[m1], &c.mats[m2], r1, r2, h.d0);
            let l = self.pairs.branch(k, &ps.pos).norm();
            return cpm::stored_energy(&p, &h.state(st.fs, cpm::normal_strain(l, h.d0)));
        }
        let u_n = (-self.pair_overlap(k).1).min(0.0);
        let r_eff = ps.radius[i] * ps.radius[j] / (ps.radius[i] + ps.radius[j]);
        self.mix.law().elastic_energy(&st.phys, u_n, st.fs, r_eff)
            + self.rolling_elastic(&st.phys, u_n, r_eff, self.pairs.roll[k])
    }

    /// The elastic energy of sphere–wall (or facet) pair `k` at the current positions.
    pub(super) fn wall_pair_elastic(&self, k: usize) -> f64 {
        let ps = &self.ps;
        let st = &self.wall_pairs.state[k];
        if !self.wall_pairs.active[k] {
            return 0.0;
        }
        let i = self.wall_pairs.i[k] as usize;
        let u_n = match self.walls.get(self.wall_pairs.j[k] as usize) {
            Some(w) => w.gap(ps.pos[i], ps.radius[i]),
            None => {
                // a mesh facet: its triangle now (as the walls: current positions)
                let t = self.wall_pairs.j[k] as usize - self.walls.len();
                let (v, nf) = (&self.meshes.tri[t], self.meshes.normal[t]);
                let c = (ps.pos[i], ps.radius[i]);
                crate::mesh::geom::sphere_contact(c.0, c.1, v[0], v[1], v[2], nf).2
            }
        }
        .min(0.0);
        let r = ps.radius[i];
        self.mix.law().elastic_energy(&st.phys, u_n, st.fs, r)
            + self.rolling_elastic(&st.phys, u_n, r, self.wall_pairs.roll[k])
    }

    /// CPM link statistics over all ranks (each contact counted once). Collective.
    pub fn link_stats(&self) -> LinkStats {
        let n_owned = self.ps.n_owned;
        let (mut c, mut om) = ([0i64; 3], ExactSum::new());
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < n_owned {
                let h = &self.pairs.cpm[k];
                if h.cohesive {
                    c[(h.omega > 0.0) as usize] += 1;
                    om.add(h.omega);
                } else {
                    c[2] += 1;
                }
            }
        }
        self.comm.sum_i64s(&mut c);
        let mut om = [om];
        self.comm.sum_exact(&mut om);
        let present = (c[0] + c[1]) as u64;
        let n0 = self.cpm.as_ref().map_or(0, |cp| cp.n_links0);
        LinkStats {
            intact: c[0] as u64,
            damaged: c[1] as u64,
            broken: n0.saturating_sub(present),
            mean_omega: if present > 0 {
                om[0].value() / present as f64
            } else {
                0.0
            },
            frictional: c[2] as u64,
        }
    }

    /// Love–Weber stress of the packing over a volume V (thesis eq. 3.32–3.37, digest §4.5
    /// with the erratum on the 1/V and l factors): σ = (1/V) Σ_c sym(l ⊗ F), l = C₂ − C₁, F the
    /// force on particle 1 (tension positive), forces of the last step. Summed exactly over all
    /// ranks (each contact once). Collective.
    pub fn love_weber_stress(&self, volume: f64) -> nalgebra::Matrix3<f64> {
        let ps = &self.ps;
        let mut sums = vec![ExactSum::new(); 6];
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        for k in 0..self.pairs.len() {
            if self.pairs.active[k] && (self.pairs.i[k] as usize) < ps.n_owned {
                let l = self.pairs.branch(k, &ps.pos);
                let f = self.slots.pair_force(k);
                for (s, &(a, b)) in sums.iter_mut().zip(&IJ) {
                    s.add(0.5 * (l[a] * f[b] + l[b] * f[a]));
                }
            }
        }
        self.comm.sum_exact(&mut sums);
        let v: Vec<f64> = sums.iter().map(|s| s.value() / volume).collect();
        nalgebra::Matrix3::new(v[0], v[5], v[4], v[5], v[1], v[3], v[4], v[3], v[2])
    }

    /// The energy budget now (collective): the state terms (kinetic, elastic) from the
    /// current state, the cumulative terms summed over the ranks; `None` without tracking.
    /// Its [`Budget::total`] stays constant to the integration error (tests/suite/energy.rs).
    pub fn energy_budget(&self) -> Option<Budget> {
        let book = self.engines.get::<EnergyBook>()?;
        let mut s = book.sums();
        s.push(self.kinetic_sum());
        self.comm.sum_exact(&mut s);
        let v: Vec<f64> = s.iter().map(|x| x.value()).collect();
        // [ΔKE, damping, gravity, blocked DOFs' work, friction, viscous, boundary, damage,
        // flow, kinetic]
        Some(Budget {
            kinetic: v[9],
            elastic: self.elastic_energy(),
            friction: v[4],
            viscous: v[5],
            damping: v[1],
            damage: v[7],
            gravity: v[2],
            boundary: v[6] + v[3],
            flow: v[8],
        })
    }

    /// The servo's measurement (Yade `PeriTriaxController::strainStressStiffUpdate`): the
    /// contact part of the Love–Weber stress (1/V) Σ sym(f ⊗ l) (f on particle 1, l = C₂ − C₁,
    /// this step's forces), the affine stiffness (1/V) Σ l_a² (k_N n_a² + k_T (1 − n_a²)) and,
    /// for Yade's servo (`yade`), its Σ |n_a| k_N + (1 − |n_a|) k_T — exact sums over all ranks
    /// (each contact once), on rayon. The total mass comes along. Collective.
    pub fn cell_measure(&self, yade: bool, shear: bool) -> crate::engines::cell::Measure {
        use crate::engines::cell::SHEAR;
        const IJ: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)];
        let ps = &self.ps;
        let law = self.mix.law();
        let pairs = &self.pairs;
        let ns = 13 + 3 * shear as usize; // the shear stiffnesses' first sum
                                          // [σ (6), affine stiffness (3), mass, Yade's stiffness (3), shear stiffness (3)],
                                          // contacts (unused sums stay zero)
        let (mut sums, n) = par_fold(
            pairs.len().max(ps.n_owned),
            || (vec![ExactSum::new(); ns], 0i64),
            |k, (s, n)| {
                if k < ps.n_owned {
                    s[9].add(ps.mass[k]);
                }
                if !(k < pairs.len() && pairs.active[k] && (pairs.i[k] as usize) < ps.n_owned) {
                    return;
                }
                *n += 1;
                let l = pairs.branch(k, &ps.pos);
                let f = self.slots.pair_force(k);
                for (e, &(a, b)) in IJ.iter().enumerate() {
                    s[e].add(0.5 * (f[a] * l[b] + f[b] * l[a]));
                }
                let d = l.norm();
                let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
                let u_n = d - (ps.radius[i] + ps.radius[j]);
                let (kt, kn) = law.stiffnesses(&pairs.state[k].phys, u_n);
                for a in 0..3 {
                    let na = l[a] / d;
                    s[6 + a].add(l[a] * l[a] * (na * na * kn + (1.0 - na * na) * kt));
                    if yade {
                        let na = na.abs();
                        s[10 + a].add(na * kn + (1.0 - na) * kt);
                    }
                }
                if shear {
                    // dσ_ab/(L_ab Δt) of an affine shear, l = d n (Δl_a = L_ab l_b Δt):
                    // ½ d² [k_T n_b² + 2 (k_N − k_T) n_a² n_b²]
                    for (c, &(a, b)) in SHEAR.iter().enumerate() {
                        let (na2, nb2) = ((l[a] / d).powi(2), (l[b] / d).powi(2));
                        s[13 + c].add(0.5 * d * d * (kt * nb2 + 2.0 * (kn - kt) * na2 * nb2));
                    }
                }
            },
            |(a, n), (b, m)| {
                a.iter_mut().zip(&b).for_each(|(a, b)| a.merge(b));
                *n += m;
            },
        );
        self.comm.sum_exact(&mut sums);
        let mut c = [n];
        self.comm.sum_i64s(&mut c);
        let v: Vec<f64> = sums.iter().map(|s| s.value()).collect();
        let volume = self.domain.cell.volume();
        let sym = |a: usize, b: usize| {
            let e = IJ
                .iter()
                .position(|&p| p == (a.min(b), a.max(b)) || p == (a.max(b), a.min(b)));
            v[e.unwrap_or(0)] / volume
        };
        crate::engines::cell::Measure {
            stress: M3::from_fn(sym),
            sum_stiff: match yade {
                true => V3::new(v[10], v[11], v[12]),
                false => V3::zeros(),
            },
            n_contacts: c[0] as u64,
            affine_stiff: V3::new(v[6], v[7], v[8]) / volume,
            mass: v[9],
            shear_stiff: match shear {
                true => V3::new(v[13], v[14], v[15]) / volume,
                false => V3::zeros(),
            },
        }
    }
}
