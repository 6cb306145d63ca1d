//! The engines' hooks that need the whole simulation rather than a [`StepView`]: the energy
//! book's entries and tally, the servo walls' measurement, the deforming cell's servo and its
//! stage test, CPM's link count. The step (`mod.rs`) calls them at their named points.

use super::*;

impl Simulation {
    /// `pre_force` of the energy book: the frictional batch loop sums its contacts' terms
    /// exactly as it goes; the per-pair loops (CPM, walls, facets) write per-pair entries,
    /// zeroed here for the pairs they skip (apart, and were).
    pub(super) fn energy_entries(&mut self) {
        if !self.engines.has::<EnergyBook>() {
            return;
        }
        let batch = self.pair_model().frictional();
        self.pairs.track_energy = batch;
        self.pairs.energy_each_exact = self.slots.canonical();
        for (list, per_pair) in [(&mut self.pairs, !batch), (&mut self.wall_pairs, true)] {
            list.work.clear();
            if per_pair {
                list.work.resize(list.len(), [0.0; 4]);
            }
        }
    }

    /// The deforming cell's servo before the integrator (collective on measurement steps):
    /// the start of a stage (friction, strain reference), the stress and stiffness measured
    /// when due, the step's velocity gradient, and the integrator's mean-field motion.
    pub(super) fn cell_servo(&mut self, measure: bool) -> Result<Option<integrate::Affine>> {
        let Some(c) = self.engines.get::<CellEngine>() else {
            return Ok(None);
        };
        if let Some(st) = c.current().filter(|_| !c.started).cloned() {
            if let Some(phi) = st.friction_angle {
                self.set_friction(phi);
            }
            if let Some(c) = self.engines.get_mut::<CellEngine>() {
                if st.reset_strain {
                    c.trsf = M3::identity();
                }
                c.started = true;
                c.friction = st.friction_angle.or(c.friction);
                self.stage_clock = Instant::now();
                self.stage_cpu = crate::usage::cpu_seconds();
            }
        }
        let stage = self.engines.get::<CellEngine>().and_then(|c| c.current());
        let yade = stage.is_some_and(|s| s.servo == crate::engines::cell::Servo::Yade);
        let shear = stage.is_some_and(|s| s.shear_mask.iter().any(|&m| m));
        let m = measure.then(|| self.cell_measure(yade, shear));
        let cell = &self.domain.cell;
        let size = V3::from_fn(|a, _| cell.h.column(a).norm());
        let (dt, volume) = (self.dt, cell.volume());
        let max_span = self.halo - self.skin - self.reach_extra;
        let Some(c) = self.engines.get_mut::<CellEngine>() else {
            return Ok(None);
        };
        c.servo(m, size, max_span, dt, volume);
        Ok(Some(c.affine(&self.domain.cell, dt)))
    }

    /// The servo walls' `post_force` hook: F · n of this step's contacts on each plane wall and
    /// their stiffness to a move within one step, Σ (dF_N/dδ + c_N/Δt) (the law's
    /// `normal_response`: tangent spring and dashpot), exact sums over the ranks
    /// (the same bits on any layout). Collective; nothing without servo walls.
    pub(super) fn servo_measure(&mut self) {
        let Some(sv) = self.engines.get::<ServoWalls>() else {
            return;
        };
        // [F · n of the six box walls, their Σ k_N] (`ServoWalls::slot`): no allocation
        let mut sums: [ExactSum; 12] = std::array::from_fn(|_| ExactSum::new());
        let (ps, law, nw) = (&self.ps, self.mix.law(), self.walls.len());
        for k in 0..self.wall_pairs.len() {
            let w = self.wall_pairs.j[k] as usize;
            // a box wall (not another wall, not a mesh facet), in contact
            let slot = (w < nw).then(|| sv.slot(w)).flatten();
            let Some(s) = slot.filter(|_| self.wall_pairs.active[k]) else {
                continue;
            };
            let i = self.wall_pairs.i[k] as usize;
            let wall = &self.walls[w];
            sums[s].add(self.slots.wall_force(k).dot(&wall.direction()));
            let u_n = wall.gap(ps.pos[i], ps.radius[i]).min(0.0);
            let phys = &self.wall_pairs.state[k].phys;
            sums[6 + s].add(law.normal_response(phys, u_n, self.dt));
        }
        self.comm.sum_exact(&mut sums);
        let f = std::array::from_fn(|s| sums[s].value());
        let k = std::array::from_fn(|s| sums[6 + s].value());
        if let Some(sv) = self.engines.get_mut::<ServoWalls>() {
            sv.measure(&self.walls, f, k);
        }
    }

    /// Energy tracking: this step's terms of the contacts (the contact loops' per-pair
    /// entries, `PairList::work`: sphere pairs, walls, facets; zeros for pairs apart), each
    /// contact once (on the rank owning its sphere, particle 1 of a sphere pair), into this
    /// rank's cumulative exact sums. Contacts that ended now count: a CPM link's last step
    /// dissipates what it stored.
    pub(super) fn tally_contacts(&mut self) {
        let Some(book) = self.engines.get_mut::<EnergyBook>() else {
            return;
        };
        let n = self.ps.n_owned;
        for (s, w) in book.contact.iter_mut().zip(&self.pairs.work_sum.take()) {
            s.merge(w);
        }
        // the per-pair loops' entries (CPM, walls, facets); the batch loop summed its own
        for pairs in [&self.pairs, &self.wall_pairs] {
            if pairs.work.len() != pairs.len() {
                continue;
            }
            for k in 0..pairs.len() {
                // (most pairs are apart: a zero entry skipped at the cost of a compare)
                if (pairs.i[k] as usize) < n && pairs.work[k] != [0.0; 4] {
                    for (s, &w) in book.contact.iter_mut().zip(&pairs.work[k]) {
                        s.add(w);
                    }
                }
            }
        }
    }

    /// `end_of_step` of a cell stage: its stop test, with Yade's unbalanced force on
    /// measurement steps (Yade evaluates it only once the goals hold); the stage's end logged,
    /// and said when it ended by its step limit without its goals (issue 32).
    pub(super) fn cell_stage_test(&mut self) {
        if self
            .engines
            .get::<CellEngine>()
            .is_some_and(|c| c.current().is_some())
        {
            let ok = self.engines.get::<CellEngine>().is_some_and(|c| c.all_ok);
            let unb = (ok && self.slots.recorded()).then(|| self.unbalanced_now());
            let root = self.comm.is_root();
            if let Some(c) = self.engines.get_mut::<CellEngine>() {
                let name = c.current().map(|s| s.name.clone()).unwrap_or_default();
                // a stage ending by its `steps` without its goals is said (issue 32): the
                // goals as they stand before the stage ends
                let limit = c.current().and_then(|s| s.steps);
                let by_steps = limit.is_some_and(|n| c.iter >= n) && !c.all_ok;
                let report = by_steps.then(|| c.goals_report());
                let done = c.check_done(unb);
                if done && by_steps {
                    if root {
                        log::warn!(
                            "cell: stage `{name}` ended after its {} steps without reaching its \
                             goals, at step {}: {}",
                            limit.unwrap_or(0),
                            self.step,
                            report.unwrap_or_default()
                        );
                    }
                    c.missed.push(name.clone());
                }
                if done && root {
                    let wall = self.stage_clock.elapsed().as_secs_f64();
                    let cpu = crate::usage::cpu_seconds() - self.stage_cpu;
                    log::info!(
                        "cell: stage \"{name}\" done at step {} after {wall:.3} s ({cpu:.3} s CPU) \
                         (stress {:.4e} {:.4e} {:.4e} Pa, log strain {:.4e} {:.4e} {:.4e})",
                        self.step,
                        c.stress.x,
                        c.stress.y,
                        c.stress.z,
                        c.strain().x,
                        c.strain().y,
                        c.strain().z
                    );
                }
            }
        }
    }

    /// CPM after its first step: the cohesive links it created, counted once (the reference
    /// of the broken-link statistics).
    pub(super) fn count_links_once(&mut self) {
        if self.cpm.as_ref().is_some_and(|c| !c.links_created) {
            let n = self.link_stats();
            if let Some(c) = &mut self.cpm {
                c.links_created = true;
                c.n_links0 = n.intact + n.damaged;
            }
        }
    }
}

use crate::engines::protocol::{Ended, Protocol, Settings};

impl Simulation {
    /// What a protocol's stages set (gravity, damping, friction, wall motions): at a stage's
    /// start, and after a restart (every stage begun so far, in order).
    pub(super) fn protocol_apply(&mut self, s: &Settings) {
        if let Some(g) = s.gravity {
            self.gravity = g;
        }
        if let Some(d) = s.damping {
            self.damping = d;
        }
        if let Some(phi) = s.friction_angle {
            self.set_friction(phi);
        }
        if let Some(dt) = s.dt {
            self.dt = dt;
        }
        s.move_walls(&mut self.walls);
    }

    /// `pre_force` of the protocol: the current stage's start actions, once (logged on
    /// rank 0). Nothing without stages, or inside a stage.
    pub(super) fn protocol_start(&mut self) {
        let Some(p) = self.engines.get_mut::<Protocol>() else {
            return;
        };
        let (k, n) = (p.st.stage, p.stages.len());
        let Some(st) = p.start(self.step, self.time) else {
            return;
        };
        let set = Settings::of(st);
        let log = format!(
            "protocol: stage {}/{n} `{}` starts at step {} (t = {:.6e} s): {}; until {}",
            k + 1,
            st.name,
            self.step,
            self.time,
            st.describe(),
            st.describe_until()
        );
        self.protocol_apply(&set);
        if self.comm.is_root() {
            log::info!("{log}");
        }
    }

    /// `end_of_step` of the protocol: the current stage's end test, with the kinetic energy
    /// and the unbalanced force (exact global sums, collective) when its conditions need
    /// them; its end logged on rank 0 with why (a warning when its `max_steps` ended it).
    pub(super) fn protocol_test(&mut self) {
        let Some(p) = self.engines.get::<Protocol>() else {
            return;
        };
        if !p.st.started {
            return;
        }
        let (want_ke, want_unb, want_n) = p.wants();
        let ke = want_ke.then(|| self.kinetic_energy());
        let unb = (want_unb && self.slots.recorded()).then(|| self.unbalanced_now());
        // (the count every rebuild checks: no reduction)
        let n_p = want_n.then(|| self.n_present());
        let (step, time, root) = (self.step, self.time, self.comm.is_root());
        let Some(p) = self.engines.get_mut::<Protocol>() else {
            return;
        };
        let (k, n, began) = (p.st.stage, p.stages.len(), p.st.start_step);
        let Some(ended) = p.test(step, time, ke, unb, n_p) else {
            return;
        };
        if !root {
            return;
        }
        // (the stage's name only now: nothing is allocated on the steps that do not end it)
        let name = &p.stages[k].name;
        let head = format!(
            "protocol: stage {}/{n} `{name}` ended at step {step} (t = {time:.6e} s) after {} steps",
            k + 1,
            step - began
        );
        match ended {
            Ended::Met(why) => log::info!("{head}: {why}"),
            Ended::Capped(why) => log::warn!(
                "{head}: ITS max_steps ENDED IT WITHOUT ITS CONDITIONS — where they stood: {why}"
            ),
        }
    }

    /// Σ ½ m v² + ½ I ω² over all particles, an exact sum over the ranks (collective).
    pub fn kinetic_energy(&self) -> f64 {
        let mut ke = [self.kinetic_sum()];
        self.comm.sum_exact(&mut ke);
        ke[0].value()
    }

    /// This rank's Σ ½ m v² + ½ I ω² over its owned particles, exactly (the energy budget's
    /// kinetic term and the protocol's `ke_below`).
    pub(super) fn kinetic_sum(&self) -> ExactSum {
        let ps = &self.ps;
        let mut ke = ExactSum::new();
        for i in 0..ps.n_owned {
            ke.add(0.5 * ps.mass[i] * ps.vel[i].norm_squared());
            ke.add(0.5 * ps.inertia[i] * ps.angvel[i].norm_squared());
        }
        ke
    }
}
