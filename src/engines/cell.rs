//! The deforming periodic cell as an engine (issue 23): the velocity gradient L of each step,
//! imposed or set by a stress servo, moves the cell (H ← (I + L Δt) H, seed 001 "Deformations
//! handling", digest A11.1) and the particles' mean field (`integrate::Affine`).
//!
//! The servo is Yade's `PeriTriaxController` (pkg/dem/PeriIsoCompressor.cpp, read from the
//! source: /work notes of issue 23), its formulas reproduced literally so that a Yade script
//! translates with the same numbers: per axis a stress goal (Pa) or a log-strain goal
//! (ln F_ii), the stiffness-based strain rate with its low-pass filter (`grow_damping`, 0.8 of
//! the previous rate), the cap `max_strain_rate`, the stress extrapolated between updates every
//! `glob_update` steps, and the stop test: every goal within its tolerance and the unbalanced
//! force below `max_unbalanced`. A scene gives a list of such stages (Yade scripts switch them
//! in a `doneHook`); the run ends after the last.
//!
//! Plain Rust: the simulation measures (contact stress, stiffness, unbalanced force, exact sums
//! over all ranks) and hands the numbers in; every rank computes the same bits.

use crate::domain::Domain;
use crate::error::Result;
use crate::scene::ctx::Ctx;
use crate::scene::schema::{SceneFile, Vec3, WallSpec};
use crate::{M3, V3};
use serde::{Deserialize, Serialize};

/// How particles follow the cell (Yade/Woo `Cell.homoDeform`; digest A11.1). In both modes a
/// particle moves with the mean field L (x − o) plus its fluctuation velocity v′ (what
/// `Particles::vel` holds), damping and kinetic energy act on v′.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Homothetic {
    /// Homothetic velocity (Yade `homoDeform` 2, its default): particles carry the mean-field
    /// velocity — in total velocities V = v′ + L (x − o), V jumps by ΔL (x − o) and the spin by
    /// the skew part of ΔL when L changes, and gains the convective term L₋ V Δt — and contacts
    /// see the mean-field relative velocity L l (Yade's `intrShiftVel` for periodic images).
    #[default]
    Velocity,
    /// Homothetic displacement (Woo `homoDeform` 1): positions follow the mean field, the
    /// contacts see the fluctuations only (no L l, Woo's `intrShiftVel` = 0), no spin jump.
    Position,
}

/// How a stress-controlled axis sets its strain rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Servo {
    /// A PI controller on the packing's own scales: with the affine stiffness S_a = (1/V)
    /// Σ l_a² (k_N n_a² + k_T (1 − n_a²)) (the stress change of a uniform strain, Love–Weber)
    /// and τ = l_a √(ρ_b / S_a) the time a p-wave crosses the cell, ε̇ = (e/τ + ∫e dt/(4τ²)) /
    /// (2 S_a), e = σ_goal − σ: damping ratio 0.7 for the affine response (the real one is
    /// softer, hence slower), and no steady error while another axis is strained at a
    /// constant rate (the integral; held while the rate is capped). Default.
    #[default]
    Affine,
    /// Yade's stiffness-based servo, literally (`PeriTriaxController`, `dynCell=False`):
    /// ε̇ = (σ_goal − σ) A / k̄ / Δt with k̄ the mean contact stiffness, low-pass filtered
    /// (`grow_damping`, 0.8 of the previous rate). Rings about the goal when its gain is too
    /// high for the packing (seen here), as Yade's does.
    Yade,
    /// Yade's "dynamic cell" (`dynCell=True`): the cell has a mass [kg] (default: the
    /// particles' total mass, Yade's) and ε̇ += (1 − grow_damping sgn(ε̇ (σ_goal − σ))) Δt
    /// (σ_goal − σ)/mass, stress measured every step.
    Dynamic { mass: Option<f64> },
}

/// One stage of the servo (Yade `PeriTriaxController` attributes, same names in snake case).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub name: String,
    /// Per axis: the stress goal [Pa] (compression negative) where `stress_mask` is set, else
    /// the log-strain goal ln F_ii.
    pub goal: V3,
    /// Axes under stress control (Yade `stressMask` bits 0, 1, 2).
    pub stress_mask: [bool; 3],
    /// Largest |L_ii| [1/s].
    pub max_strain_rate: V3,
    /// The stage ends once the goals hold and the unbalanced force is below this.
    pub max_unbalanced: f64,
    pub abs_stress_tol: f64,
    pub rel_stress_tol: f64,
    pub grow_damping: f64,
    /// Steps between measurements of the stress and stiffness (extrapolated in between).
    pub glob_update: u64,
    pub servo: Servo,
    /// Off-diagonal velocity gradient (L_xy, L_xz, L_yz) [1/s] during the stage (simple
    /// shear), where `shear_mask` is not set.
    pub shear_rate: V3,
    /// Shear stress goals (σ_xy, σ_xz, σ_yz) [Pa] of the components in `shear_mask`, whose
    /// L_ab the servo sets (at most `max_shear_rate` [1/s]): Yade `Peri3dController`'s
    /// stress-controlled shear.
    pub shear_goal: V3,
    pub shear_mask: [bool; 3],
    pub max_shear_rate: V3,
    /// At the start of the stage, every frictional material and contact takes this friction
    /// angle [rad] (the dense-packing recipe: compact frictionless, then shear with friction).
    pub friction_angle: Option<f64>,
    /// At the start of the stage, strains count from the current cell (Yade `cell.trsf = I`).
    pub reset_strain: bool,
    /// The stage ends after this many steps whatever its goals (simple shear to a given
    /// strain; a Yade script's `O.run(n)`).
    pub steps: Option<u64>,
}

/// The servo's measurement at an update step (collective sums by the simulation): the contact
/// part of the Love–Weber stress tensor, and Yade's per-axis stiffness Σ |n_i| k_N +
/// (1 − |n_i|) k_T with the contact count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measure {
    pub stress: M3,
    pub sum_stiff: V3,
    pub n_contacts: u64,
    /// (1/V) Σ l_a² (k_N n_a² + k_T (1 − n_a²)) [Pa]: dσ_aa/dε_aa of a uniform strain.
    pub affine_stiff: V3,
    /// Total particle mass [kg].
    pub mass: f64,
    /// The affine shear stiffnesses dσ_ab/dL_ab Δt of (xy, xz, yz) [Pa] ([`SHEAR`]; measured
    /// only for stages with shear stress goals, else zero).
    pub shear_stiff: V3,
}

/// The shear components (a, b) of the stages' (xy, xz, yz) triples: L_ab moves axis a along
/// axis b (v_a = L_ab x_b).
pub const SHEAR: [(usize, usize); 3] = [(0, 1), (0, 2), (1, 2)];

/// The cell's columns of one `series.csv` row (`io::series::CELL_COLUMNS`).
#[derive(Clone, Debug)]
pub struct CellRow {
    pub stage: usize,
    pub strain: V3,
    pub strain_vol: f64,
    /// Contact part of the Love–Weber stress and the kinetic part.
    pub stress: M3,
    pub kinetic: M3,
    pub coordination: f64,
    pub volume: f64,
    pub h: M3,
    pub grad: V3,
    pub flips: u64,
    pub external_work: f64,
}

impl CellRow {
    /// p = −tr σ/3 and q = σ₁ − σ₃ of the contact stress's principal values, positive in
    /// compression (soil mechanics' signs).
    pub fn p_q(&self) -> (f64, f64) {
        let sym = (self.stress + self.stress.transpose()) * 0.5;
        let e = sym.symmetric_eigenvalues();
        let (mn, mx) = (e.min(), e.max());
        (-sym.trace() / 3.0, mx - mn)
    }

    /// The row's text after the other columns (a leading comma).
    pub fn columns(&self) -> String {
        let (p, q) = self.p_q();
        let t = |m: &M3| {
            [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]
                .iter()
                .map(|&(a, b)| format!(",{:.9e}", 0.5 * (m[(a, b)] + m[(b, a)])))
                .collect::<String>()
        };
        let mut s = format!(
            ",{},{:.9e},{:.9e},{:.9e},{:.9e}",
            self.stage, self.strain.x, self.strain.y, self.strain.z, self.strain_vol
        );
        s += &t(&self.stress);
        s += &t(&self.kinetic);
        s += &format!(
            ",{p:.9e},{q:.9e},{:.6e},{:.9e}",
            self.coordination, self.volume
        );
        for r in 0..3 {
            for c in 0..3 {
                s += &format!(",{:.12e}", self.h[(r, c)]);
            }
        }
        s += &format!(
            ",{:.6e},{:.6e},{:.6e},{},{:.9e}",
            self.grad.x, self.grad.y, self.grad.z, self.flips, self.external_work
        );
        s
    }
}

/// Checkpointed state of the cell engine (RON in the engine state text).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CellState {
    /// H (columns: the edge vectors).
    pub h: [[f64; 3]; 3],
    /// H at the last rebuild.
    pub h_ref: [[f64; 3]; 3],
    /// L of the step being taken and of the previous step.
    pub grad: [[f64; 3]; 3],
    pub grad_prev: [[f64; 3]; 3],
    /// Deformation gradient since the last strain reset (Yade `Cell.trsf`).
    pub trsf: [[f64; 3]; 3],
    pub stage: usize,
    /// Steps into the current stage (Yade's controller `iter`).
    pub iter: u64,
    pub stress: [f64; 3],
    pub stress_tensor: [[f64; 3]; 3],
    pub stiff: [f64; 3],
    pub affine_stiff: [f64; 3],
    pub mass: f64,
    pub prev_grow: [f64; 3],
    /// The `Affine` servo's integral of the stress error [Pa s].
    #[serde(default)]
    pub integral: [f64; 3],
    /// The same for the shear stress goals, and their stiffnesses.
    #[serde(default)]
    pub shear_integral: [f64; 3],
    #[serde(default)]
    pub shear_stiff: [f64; 3],
    pub all_ok: bool,
    pub unbalanced: Option<f64>,
    pub external_work: f64,
    pub flips: u64,
    /// The stage's start-of-stage actions were done.
    pub started: bool,
    /// The friction angle the stages set last (re-applied to the materials on restart).
    #[serde(default)]
    pub friction: Option<f64>,
}

fn to_a(m: &M3) -> [[f64; 3]; 3] {
    std::array::from_fn(|r| std::array::from_fn(|c| m[(r, c)]))
}

fn from_a(a: &[[f64; 3]; 3]) -> M3 {
    M3::from_fn(|r, c| a[r][c])
}

/// The cell engine: mode, stages and state.
#[derive(Clone, Debug)]
pub struct CellEngine {
    pub homothetic: Homothetic,
    /// Flip the cell when a tilt passes half an edge (Yade `Cell.flipFlippable`).
    pub flip: bool,
    /// The velocity gradient outside the stages (and after them).
    pub base_grad: M3,
    pub stages: Vec<Stage>,
    /// L₊½: the gradient of the step being taken.
    pub grad: M3,
    /// L₋½: the gradient of the previous step.
    pub grad_prev: M3,
    pub trsf: M3,
    /// H at the last rebuild (the reference of the Verlet displacements).
    pub h_ref: M3,
    pub stage: usize,
    pub iter: u64,
    pub stress: V3,
    pub stress_tensor: M3,
    pub stiff: V3,
    /// The affine stiffness and total mass of the last measurement ([`Measure`]).
    pub affine_stiff: V3,
    pub mass: f64,
    pub prev_grow: V3,
    /// The `Affine` servo's integral of the stress error per axis [Pa s].
    pub integral: V3,
    /// The shear stress goals' integrals [Pa s] and affine stiffnesses [Pa] ((xy, xz, yz)).
    pub shear_integral: V3,
    pub shear_stiff: V3,
    /// The goals held at the last servo step.
    pub all_ok: bool,
    /// The unbalanced force of the last check (Yade `currUnbalanced`).
    pub unbalanced: Option<f64>,
    /// ∫ tr(L̄ σ) V dt: work done *by* the packing's contact stress on the cell (Yade
    /// `externalWork`; the work of the boundary on the packing is its negative).
    pub external_work: f64,
    pub flips: u64,
    pub started: bool,
    /// The friction angle a stage set last (the materials' and contacts').
    pub friction: Option<f64>,
    /// The stages of this run that ended by their `steps` without their goals (named in the
    /// run's summary; not checkpointed).
    pub missed: Vec<String>,
}

impl CellEngine {
    pub fn new(homothetic: Homothetic, flip: bool, base_grad: M3, stages: Vec<Stage>) -> Self {
        CellEngine {
            homothetic,
            flip,
            base_grad,
            stages,
            grad: base_grad,
            grad_prev: M3::zeros(),
            trsf: M3::identity(),
            h_ref: M3::zeros(),
            stage: 0,
            iter: 0,
            stress: V3::zeros(),
            stress_tensor: M3::zeros(),
            stiff: V3::zeros(),
            affine_stiff: V3::zeros(),
            mass: 0.0,
            prev_grow: V3::zeros(),
            integral: V3::zeros(),
            shear_integral: V3::zeros(),
            shear_stiff: V3::zeros(),
            all_ok: false,
            unbalanced: None,
            external_work: 0.0,
            flips: 0,
            started: false,
            friction: None,
            missed: Vec::new(),
        }
    }

    /// The stage running now, if any.
    pub fn current(&self) -> Option<&Stage> {
        self.stages.get(self.stage)
    }

    /// Every stage is done (a scene with stages then ends its run).
    pub fn finished(&self) -> bool {
        !self.stages.is_empty() && self.stage >= self.stages.len()
    }

    /// The current stage needs a measurement at this step (Yade: every `globUpdate` steps,
    /// or while the stiffness is not known).
    pub fn wants_measure(&self) -> bool {
        match self.current() {
            Some(s) if matches!(s.servo, Servo::Dynamic { .. }) => true,
            // Yade's servo also measures while its stiffness is unknown
            Some(s) => {
                self.iter.is_multiple_of(s.glob_update.max(1))
                    || (s.servo == Servo::Yade && self.stiff.min() <= 0.0)
            }
            None => false,
        }
    }

    /// Log strains ln F_ii (Yade `PeriTriaxController.strain`).
    pub fn strain(&self) -> V3 {
        V3::from_fn(|a, _| self.trsf[(a, a)].ln())
    }

    /// The current stage's goals against where the cell is, for messages: per axis the stress
    /// (last servo value) or the log strain and its goal, the shear stress goals, and the
    /// unbalanced force against its maximum.
    pub fn goals_report(&self) -> String {
        let Some(st) = self.current() else {
            return String::new();
        };
        let strain = self.strain();
        let mut parts: Vec<String> = (0..3)
            .map(|a| {
                let ax = ["xx", "yy", "zz"][a];
                match st.stress_mask[a] {
                    true => format!("σ_{ax} {:.4e} Pa (goal {:.4e})", self.stress[a], st.goal[a]),
                    false => format!(
                        "log strain {ax} {:.4e} (goal {:.4e})",
                        strain[a], st.goal[a]
                    ),
                }
            })
            .collect();
        for (k, &(a, b)) in SHEAR.iter().enumerate().filter(|(k, _)| st.shear_mask[*k]) {
            let ax = ["x", "y", "z"];
            parts.push(format!(
                "σ_{}{} {:.4e} Pa (goal {:.4e})",
                ax[a],
                ax[b],
                self.stress_tensor[(a, b)],
                st.shear_goal[k]
            ));
        }
        let unb = match self.unbalanced {
            Some(u) => format!("{u:.3e}"),
            None => "not measured (the goals did not hold)".into(),
        };
        parts.push(format!(
            "unbalanced force {unb} (max {:.3e})",
            st.max_unbalanced
        ));
        parts.join(", ")
    }

    /// The servo of one step (Yade `PeriTriaxController::action`, before the integrator): the
    /// new diagonal of L from the stress (measured now, `m`, or extrapolated), with `size` the
    /// cell's edge lengths |H col i| and `max_span` the largest particle diameter (Yade
    /// `maxBodySpan`). Sets `grad` for this step; the off-diagonals come from the stage.
    pub fn servo(&mut self, m: Option<Measure>, size: V3, max_span: f64, dt: f64, volume: f64) {
        let Some(st) = self.current().cloned() else {
            self.grad = self.base_grad;
            return;
        };
        if let Some(m) = m {
            self.stress_tensor = m.stress;
            self.stress = m.stress.diagonal();
            self.stiff = match m.n_contacts {
                0 => V3::zeros(),
                n => m.sum_stiff / n as f64,
            };
            self.affine_stiff = m.affine_stiff;
            self.shear_stiff = m.shear_stiff;
            self.mass = m.mass;
        }
        // Yade: cellArea from the column lengths ("FIXME wrong" for sheared cells)
        let area = V3::new(size.y * size.z, size.x * size.z, size.x * size.y);
        let strain = self.strain();
        let mut grad = self.base_grad;
        grad[(0, 1)] = st.shear_rate.x;
        grad[(0, 2)] = st.shear_rate.y;
        grad[(1, 2)] = st.shear_rate.z;
        let rho_b = self.mass / volume;
        let mut ok = self.shear_servo(&st, &mut grad, size, rho_b, dt);
        let mut rate = V3::zeros();
        for a in 0..3 {
            let err = st.goal[a] - self.stress[a];
            let mut r = match (st.stress_mask[a], st.servo) {
                (false, _) => ((st.goal[a] - strain[a]).exp() - 1.0) / dt,
                (true, Servo::Affine) => match self.affine_stiff[a] > 0.0 {
                    true => {
                        let s = self.affine_stiff[a];
                        let tau = size[a] * (rho_b / s).sqrt();
                        if self.prev_grow[a].abs() < st.max_strain_rate[a] {
                            self.integral[a] += err * dt;
                        }
                        (err / tau + self.integral[a] / (4.0 * tau * tau)) / (2.0 * s)
                    }
                    false => st.max_strain_rate[a].copysign(err),
                },
                (true, Servo::Yade) => {
                    let k = if self.stiff[a] > 0.0 {
                        self.stiff[a]
                    } else {
                        1.0
                    };
                    err * area[a] / k / dt
                }
                (true, Servo::Dynamic { mass }) => {
                    let m = mass.unwrap_or(self.mass);
                    let r0 = self.grad[(a, a)];
                    let sgn = (r0 * err).signum() * ((r0 * err) != 0.0) as u8 as f64;
                    r0 + (1.0 - st.grow_damping * sgn) * dt * err / m
                }
            };
            if st.servo == Servo::Yade {
                // Yade filters every axis of its stiffness-based controller
                r = (1.0 - st.grow_damping) * r + 0.8 * self.prev_grow[a];
            }
            if r.abs() > st.max_strain_rate[a] {
                r = st.max_strain_rate[a].copysign(r);
            }
            r = r.max(-(size[a] - 2.1 * max_span) / dt);
            rate[a] = r;
            let s_strain = strain[a] + r * dt;
            if st.stress_mask[a] {
                let g = st.goal[a];
                let err = self.stress[a] - g;
                if (g != 0.0 && (err / g).abs() > st.rel_stress_tol)
                    || err.abs() > st.abs_stress_tol
                {
                    ok = false;
                }
            } else {
                let g = st.goal[a];
                let err = s_strain - g;
                if (g != 0.0 && (err / g).abs() > 1e-6) || err.abs() > 1e-6 {
                    ok = false;
                }
            }
            grad[(a, a)] = r;
        }
        // the stress predicted between measurements: Yade's Δσ = (L_ii Δt / l_i) k_i / A_i,
        // ours the affine stiffness' Δσ = S_a L_ii Δt
        for a in 0..3 {
            match st.servo {
                Servo::Yade if self.stiff[a] > 0.0 => {
                    self.stress[a] += rate[a] * dt / size[a] * self.stiff[a] / area[a];
                }
                Servo::Affine => self.stress[a] += self.affine_stiff[a] * rate[a] * dt,
                _ => {}
            }
        }
        // external work with the mean of the old and new gradient (Yade `externalWork`)
        let lbar = (self.grad_prev + grad) * 0.5;
        self.external_work += (lbar * self.stress_tensor).trace() * dt * volume;
        self.prev_grow = rate;
        self.all_ok = ok;
        self.grad = grad;
        self.iter += 1;
    }

    /// The stress-controlled shear components of stage `st` (`shear_mask`): the `Affine`
    /// servo's PI law on each, L_ab from the error of σ_ab (measured, or extrapolated with the
    /// affine shear stiffness S_ab between measurements), with the shear wave's crossing time
    /// of edge b as its time scale, capped at `max_shear_rate`. Sets those L_ab in `grad`;
    /// returns whether every shear goal holds (Yade's tolerances).
    fn shear_servo(&mut self, st: &Stage, grad: &mut M3, size: V3, rho_b: f64, dt: f64) -> bool {
        let mut ok = true;
        for (c, &(a, b)) in SHEAR.iter().enumerate() {
            if !st.shear_mask[c] {
                continue;
            }
            let (g, s) = (st.shear_goal[c], self.shear_stiff[c]);
            let err = g - self.stress_tensor[(a, b)];
            let max = st.max_shear_rate[c];
            let mut r = match s > 0.0 {
                true => {
                    let tau = size[b] * (rho_b / s).sqrt();
                    if self.grad[(a, b)].abs() < max {
                        self.shear_integral[c] += err * dt;
                    }
                    (err / tau + self.shear_integral[c] / (4.0 * tau * tau)) / (2.0 * s)
                }
                false => max.copysign(err),
            };
            if r.abs() > max {
                r = max.copysign(r);
            }
            grad[(a, b)] = r;
            // the stress predicted until the next measurement
            let ds = s * r * dt;
            self.stress_tensor[(a, b)] += ds;
            self.stress_tensor[(b, a)] += ds;
            if (g != 0.0 && (err / g).abs() > st.rel_stress_tol) || err.abs() > st.abs_stress_tol {
                ok = false;
            }
        }
        ok
    }

    /// After the step's integrator, with the unbalanced force of this step when `measured`
    /// (Yade evaluates it on update steps): whether the stage ended now. The caller then
    /// starts the next one (friction, strain reset: `Simulation`).
    pub fn check_done(&mut self, unbalanced: Option<f64>) -> bool {
        let Some((max, steps)) = self.current().map(|s| (s.max_unbalanced, s.steps)) else {
            return false;
        };
        if let Some(u) = unbalanced {
            self.unbalanced = Some(u);
        }
        let done = match steps {
            Some(n) => self.iter >= n,
            None => self.all_ok && self.unbalanced.is_some_and(|u| u < max),
        };
        if done {
            self.stage += 1;
            self.iter = 0;
            self.unbalanced = None;
            self.prev_grow = V3::zeros();
            self.integral = V3::zeros();
            self.shear_integral = V3::zeros();
            self.started = false;
        }
        done
    }

    /// The cell's update after the integrator: H ← exp(L Δt) H and F ← exp(L Δt) F (001,
    /// digest A11.1, `Cell::advance`); L becomes the previous gradient.
    pub fn advance(&mut self, cell: &mut crate::cell::Cell, dt: f64) {
        cell.advance(&self.grad, dt);
        self.trsf += crate::cell::step_map(&self.grad, dt) * self.trsf;
        self.grad_prev = self.grad;
    }

    /// H₊₁ H_ref⁻¹: the map of the reference positions to the end of this step.
    pub fn reference_map(&self, cell: &crate::cell::Cell, dt: f64) -> M3 {
        let h_next = cell.h + crate::cell::step_map(&self.grad, dt) * cell.h;
        h_next * self.h_ref.try_inverse().unwrap_or(M3::identity())
    }

    /// κ = 1 + ‖A⁻¹ − I‖_F ≥ ‖A⁻¹‖₂ for A = H H_ref⁻¹: how much a homothetic motion since
    /// the rebuild may have shortened a branch vector (`collide::still_valid_deforming`).
    pub fn stretch(&self, cell: &crate::cell::Cell) -> f64 {
        let a = cell.h * self.h_ref.try_inverse().unwrap_or(M3::identity());
        match a.try_inverse() {
            Some(ai) => 1.0 + (ai - M3::identity()).norm(),
            None => f64::INFINITY,
        }
    }

    /// The integrator's part of this step (`integrate::Affine`).
    pub fn affine(&self, cell: &crate::cell::Cell, dt: f64) -> crate::integrate::Affine {
        let dl = self.grad - self.grad_prev;
        let jump = self.homothetic == Homothetic::Velocity && dl != M3::zeros();
        crate::integrate::Affine {
            step_map: crate::cell::step_map(&self.grad, dt),
            // Yade NewtonIntegrator: R = ½(ΔL − ΔLᵀ), dSpin = (−R₁₂, R₀₂, −R₀₁)
            dspin: jump.then(|| {
                let r = (dl - dl.transpose()) * 0.5;
                V3::new(-r[(1, 2)], r[(0, 2)], -r[(0, 1)])
            }),
            a: self.reference_map(cell, dt),
            o: cell.origin,
        }
    }

    /// The gradient the contact loop adds to the pairs' relative velocity, L l, in the next
    /// step (`PairList::grad`): the velocity mode's; none in the position mode (Woo's
    /// `homoDeform` 1: contacts see the particles' fluctuations only, `intrShiftVel` = 0).
    pub fn contact_gradient(&self) -> Option<M3> {
        (self.homothetic == Homothetic::Velocity).then_some(self.grad_prev)
    }

    pub fn state(&self, cell: &crate::cell::Cell) -> CellState {
        CellState {
            h: to_a(&cell.h),
            h_ref: to_a(&self.h_ref),
            grad: to_a(&self.grad),
            grad_prev: to_a(&self.grad_prev),
            trsf: to_a(&self.trsf),
            stage: self.stage,
            iter: self.iter,
            stress: self.stress.into(),
            stress_tensor: to_a(&self.stress_tensor),
            stiff: self.stiff.into(),
            affine_stiff: self.affine_stiff.into(),
            mass: self.mass,
            prev_grow: self.prev_grow.into(),
            integral: self.integral.into(),
            shear_integral: self.shear_integral.into(),
            shear_stiff: self.shear_stiff.into(),
            all_ok: self.all_ok,
            unbalanced: self.unbalanced,
            external_work: self.external_work,
            flips: self.flips,
            started: self.started,
            friction: self.friction,
        }
    }

    /// Restore a checkpointed state; sets the cell's H.
    pub fn restore(&mut self, s: &CellState, cell: &mut crate::cell::Cell) {
        let h = from_a(&s.h);
        if h != cell.h || cell.deformed {
            cell.set_h(h);
        }
        self.h_ref = from_a(&s.h_ref);
        self.grad = from_a(&s.grad);
        self.grad_prev = from_a(&s.grad_prev);
        self.trsf = from_a(&s.trsf);
        self.stage = s.stage;
        self.iter = s.iter;
        self.stress = s.stress.into();
        self.stress_tensor = from_a(&s.stress_tensor);
        self.stiff = s.stiff.into();
        self.affine_stiff = s.affine_stiff.into();
        self.mass = s.mass;
        self.prev_grow = s.prev_grow.into();
        self.integral = s.integral.into();
        self.shear_integral = s.shear_integral.into();
        self.shear_stiff = s.shear_stiff.into();
        self.all_ok = s.all_ok;
        self.unbalanced = s.unbalanced;
        self.external_work = s.external_work;
        self.flips = s.flips;
        self.started = s.started;
        self.friction = s.friction;
    }
}

/// Hooks: the stress measurement when due (the servo and the cell's motion are `sim`'s:
/// `Simulation::cell_servo`, `finish_step`); the run ends with the last stage.
impl super::Hooks for CellEngine {
    fn records_forces(&self) -> bool {
        self.wants_measure()
    }
    fn finished(&self) -> bool {
        CellEngine::finished(self)
    }
}

/// The deforming periodic cell (`engines/cell.rs`; Yade `Cell` + `PeriTriaxController`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Cell")]
pub struct CellSpec {
    /// How particles follow the cell: `Velocity` (Yade `homoDeform` 2, default) or `Position`
    /// (Woo `homoDeform` 1).
    #[serde(default, alias = "homoDeform")]
    pub homothetic: Homothetic,
    /// Flip the cell to a less skewed basis when a tilt passes half an edge (Yade
    /// `flipFlippable`; default true).
    #[serde(default = "yes", alias = "flipFlippable")]
    pub flip: bool,
    /// Velocity gradient L [1/s] outside the stages, by rows ((Lxx, Lxy, Lxz), (Lyx, ...), ...)
    /// (Yade `velGrad`; default zero).
    #[serde(default, alias = "velGrad")]
    pub velocity_gradient: [Vec3; 3],
    /// Servo stages run in order; the run ends after the last (default none).
    #[serde(default)]
    pub stages: Vec<StageSpec>,
}

/// One stage of the stress servo (Yade `PeriTriaxController`, its attribute names as aliases).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Stage")]
pub struct StageSpec {
    pub name: String,
    /// Per axis: stress [Pa] (compression negative) where `stress_mask` is set, else the log
    /// strain ln F_ii to reach.
    pub goal: Vec3,
    /// Stress-controlled axes (Yade `stressMask` bits 0, 1, 2; default all).
    #[serde(default = "yes3", alias = "stressMask")]
    pub stress_mask: [bool; 3],
    /// Largest |L_ii| [1/s] per axis (Yade `maxStrainRate`, default (1, 1, 1)).
    #[serde(default = "one_f3", alias = "maxStrainRate")]
    pub max_strain_rate: Vec3,
    /// Unbalanced force below which the stage may end (Yade `maxUnbalanced`, default 1e-4).
    #[serde(default = "default_max_unbalanced", alias = "maxUnbalanced")]
    pub max_unbalanced: f64,
    /// Stress tolerances (Yade `absStressTol` 1e3 Pa, `relStressTol` 3e-5).
    #[serde(default = "default_abs_stress_tol", alias = "absStressTol")]
    pub abs_stress_tol: f64,
    #[serde(default = "default_rel_stress_tol", alias = "relStressTol")]
    pub rel_stress_tol: f64,
    /// Yade `growDamping` (default 0.25).
    #[serde(default = "default_grow_damping", alias = "growDamping")]
    pub grow_damping: f64,
    /// Steps between stress measurements (Yade `globUpdate`, default 5).
    #[serde(default = "default_glob_update", alias = "globUpdate")]
    pub glob_update: u64,
    /// How stress-controlled axes set their rate: `Affine` (default), `Yade` (its stiffness
    /// servo, literally) or `Dynamic(mass: ...)` (Yade `dynCell`).
    #[serde(default)]
    pub servo: Servo,
    /// Off-diagonal velocity gradient (L_xy, L_xz, L_yz) [1/s] during the stage (default 0).
    #[serde(default = "zero3")]
    pub shear_rate: Vec3,
    /// Shear stress goals (σ_xy, σ_xz, σ_yz) [Pa] where `shear_mask` is set: the servo sets
    /// that L_ab (Yade `Peri3dController`'s stress-controlled shear; default none).
    #[serde(default = "zero3")]
    pub shear_goal: Vec3,
    #[serde(default)]
    pub shear_mask: [bool; 3],
    /// Largest |L_ab| [1/s] of the stress-controlled shear components (default (1, 1, 1)).
    #[serde(default = "one_f3")]
    pub max_shear_rate: Vec3,
    /// Friction angle [rad] that every frictional material and contact takes when the stage
    /// starts (default: unchanged).
    #[serde(default)]
    pub friction_angle: Option<f64>,
    /// Strains count from the cell at the start of the stage (Yade `cell.trsf = I`; default
    /// false).
    #[serde(default)]
    pub reset_strain: bool,
    /// End the stage after this many steps, whatever its goals (default: at its goals).
    #[serde(default)]
    pub steps: Option<u64>,
}

fn yes() -> bool {
    true
}
fn zero3() -> Vec3 {
    [0.0; 3]
}
fn yes3() -> [bool; 3] {
    [true; 3]
}
fn one_f3() -> Vec3 {
    [1.0; 3]
}
fn default_max_unbalanced() -> f64 {
    1e-4
}
fn default_abs_stress_tol() -> f64 {
    1e3
}
fn default_rel_stress_tol() -> f64 {
    3e-5
}
fn default_grow_damping() -> f64 {
    0.25
}
fn default_glob_update() -> u64 {
    5
}

const AXES: [&str; 3] = ["x", "y", "z"];

impl CellEngine {
    /// The deforming periodic cell (issue 23), validated: a gradient only along periodic axes,
    /// the stages' parameters in range. What the cell does not support yet is refused by name
    /// (`cpm`: the scene's materials are CPM).
    pub fn from_spec(
        ctx: &Ctx,
        c: &CellSpec,
        sf: &SceneFile,
        domain: &Domain,
        cpm: bool,
    ) -> Result<CellEngine> {
        let p = domain.periodic;
        refuse_unsupported(ctx, sf, p, cpm)?;
        let l = velocity_gradient(ctx, c, p)?;
        check_walls(ctx, sf, p, &l)?;
        let mut stages = Vec::new();
        for (k, s) in c.stages.iter().enumerate() {
            stages.push(Stage::from_spec(ctx, k, s, p)?);
        }
        Ok(CellEngine::new(c.homothetic, c.flip, l, stages))
    }
}

/// A periodic domain (`p`: its periodic axes), and none of what the cell does not support yet.
fn refuse_unsupported(ctx: &Ctx, sf: &SceneFile, p: [bool; 3], cpm: bool) -> Result<()> {
    if !p.iter().any(|&x| x) {
        return Err(ctx.err("cell", "needs a periodic domain (domain.periodic)"));
    }
    for (what, bad) in [
        ("meshes", !sf.meshes.is_empty()),
        ("inlets", !sf.inlets.is_empty()),
        ("outlets", !sf.outlets.is_empty()),
        ("strainer", sf.strainer.is_some()),
        ("materials", cpm),
    ] {
        if bad {
            return Err(ctx.err(
                what,
                "not supported with a deforming cell yet (frictional spheres in a fully or \
                 partly periodic cell only)",
            ));
        }
    }
    Ok(())
}

/// The gradient L outside the stages: finite, moving only periodic axes (`p`).
fn velocity_gradient(ctx: &Ctx, c: &CellSpec, p: [bool; 3]) -> Result<M3> {
    let mut l = M3::zeros();
    for (r, row) in c.velocity_gradient.iter().enumerate() {
        let v = ctx.finite3("cell.velocity_gradient", *row)?;
        for k in 0..3 {
            l[(r, k)] = v[k];
        }
    }
    for r in 0..3 {
        for k in 0..3 {
            if l[(r, k)] != 0.0 && !(p[r] && p[k]) {
                return Err(ctx.err(
                    "cell.velocity_gradient",
                    format!(
                        "L[{r}][{k}] moves a non-periodic axis ({}): only periodic axes deform",
                        if p[r] { AXES[k] } else { AXES[r] }
                    ),
                ));
            }
        }
    }
    Ok(l)
}

/// Plane walls: only across the open axes of a cell that never shears (the walls do not
/// deform; the spheres slide along them with the mean field).
fn check_walls(ctx: &Ctx, sf: &SceneFile, p: [bool; 3], l: &M3) -> Result<()> {
    if sf.walls.is_empty() {
        return Ok(());
    }
    if (0..3).any(|r| (0..3).any(|k| r != k && l[(r, k)] != 0.0)) {
        return Err(ctx.err(
            "walls",
            "walls need an unskewed cell: no off-diagonal velocity gradient",
        ));
    }
    for (w, wall) in sf.walls.iter().enumerate() {
        #[allow(irrefutable_let_patterns)]
        let WallSpec::Wall(wall) = wall
        else {
            return Err(ctx.err(
                &format!("walls[{w}]"),
                "a deforming cell takes plane walls only",
            ));
        };
        if (0..3).any(|a| p[a] && wall.normal[a] != 0.0) {
            return Err(ctx.err(
                &format!("walls[{w}].normal"),
                "with a deforming cell a wall's normal must lie along the non-periodic axes",
            ));
        }
    }
    Ok(())
}

impl Stage {
    /// Stage `k` of the servo (`s`), validated; the servo needs every axis periodic (`p`).
    fn from_spec(ctx: &Ctx, k: usize, s: &StageSpec, p: [bool; 3]) -> Result<Stage> {
        let at = |f: &str| format!("cell.stages[{k}].{f}");
        if !p.iter().all(|&x| x) {
            return Err(ctx.err(
                &format!("cell.stages[{k}]"),
                "the servo needs all three axes periodic",
            ));
        }
        if s.name.is_empty() {
            return Err(ctx.err(&at("name"), "must not be empty"));
        }
        let goal = ctx.finite3(&at("goal"), s.goal)?;
        let rate = ctx.finite3(&at("max_strain_rate"), s.max_strain_rate)?;
        if rate.iter().any(|&r| r <= 0.0) {
            return Err(ctx.err(&at("max_strain_rate"), "must be positive on every axis"));
        }
        ctx.positive(&at("max_unbalanced"), s.max_unbalanced)?;
        ctx.non_negative(&at("abs_stress_tol"), s.abs_stress_tol)?;
        ctx.non_negative(&at("rel_stress_tol"), s.rel_stress_tol)?;
        if !(0.0..1.0).contains(&s.grow_damping) {
            return Err(ctx.err(&at("grow_damping"), "must be in [0, 1)"));
        }
        if s.glob_update == 0 {
            return Err(ctx.err(&at("glob_update"), "must be ≥ 1"));
        }
        if s.steps == Some(0) {
            return Err(ctx.err(&at("steps"), "must be ≥ 1"));
        }
        let (shear, shear_goal, shear_max) = Stage::shear_spec(ctx, &at, s)?;
        if let Servo::Dynamic { mass: Some(m) } = s.servo {
            ctx.positive(&at("servo"), m)?;
        }
        if let Some(phi) = s.friction_angle {
            if !(0.0..std::f64::consts::FRAC_PI_2).contains(&phi) {
                return Err(ctx.err(&at("friction_angle"), "must be in [0, π/2) rad"));
            }
        }
        Ok(Stage {
            name: s.name.clone(),
            goal,
            stress_mask: s.stress_mask,
            max_strain_rate: rate,
            max_unbalanced: s.max_unbalanced,
            abs_stress_tol: s.abs_stress_tol,
            rel_stress_tol: s.rel_stress_tol,
            grow_damping: s.grow_damping,
            glob_update: s.glob_update,
            servo: s.servo,
            shear_rate: shear,
            shear_goal,
            shear_mask: s.shear_mask,
            max_shear_rate: shear_max,
            friction_angle: s.friction_angle,
            reset_strain: s.reset_strain,
            steps: s.steps,
        })
    }

    /// The stage's shear rate, shear goal and largest shear rate (`at`: a field's path):
    /// stress-controlled components only with the `Affine` servo, and then without a rate.
    fn shear_spec(ctx: &Ctx, at: &dyn Fn(&str) -> String, s: &StageSpec) -> Result<(V3, V3, V3)> {
        let shear = ctx.finite3(&at("shear_rate"), s.shear_rate)?;
        let shear_goal = ctx.finite3(&at("shear_goal"), s.shear_goal)?;
        let shear_max = ctx.finite3(&at("max_shear_rate"), s.max_shear_rate)?;
        if shear_max.iter().any(|&r| r <= 0.0) {
            return Err(ctx.err(&at("max_shear_rate"), "must be positive on every component"));
        }
        if s.shear_mask.iter().any(|&m| m) {
            if s.servo != Servo::Affine {
                return Err(ctx.err(
                    &at("shear_mask"),
                    "shear stress goals need `servo: Affine` (Yade's PeriTriaxController \
                     servos the diagonal only)",
                ));
            }
            if (0..3).any(|c| s.shear_mask[c] && shear[c] != 0.0) {
                return Err(ctx.err(
                    &at("shear_rate"),
                    "a stress-controlled shear component (shear_mask) takes no shear_rate",
                ));
            }
        }
        Ok((shear, shear_goal, shear_max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;

    #[test]
    fn constant_gradient_gives_the_exponential_cell_to_round_off() {
        // A particle-free cell under a constant velocity gradient L for t = 1 s in 10⁴ steps:
        // H(t) = exp(L t) H₀ (the exp-integrated form), the volume exp(tr L t) V₀ (Jacobi's
        // formula) and the log strains ln F_ii = L_ii t for a diagonal L — to round-off
        // accumulated over the steps (≤ 1e-11 relative; a first-order update, Yade's I + L Δt,
        // would be 3e-6 off here). Three gradients: diagonal (the servo's), simple shear
        // (L² = 0) and a general one (stretch, shear and spin).
        let diag = M3::from_diagonal(&V3::new(-0.1, 0.05, 0.2));
        let mut shear = M3::zeros();
        shear[(0, 2)] = 0.3;
        let mut general = diag + shear;
        general[(1, 0)] = -0.07;
        general[(2, 1)] = 0.02;
        for l in [diag, shear, general] {
            let mut e = CellEngine::new(Homothetic::Velocity, false, l, vec![]);
            let mut cell = Cell::boxed(V3::new(0.5, -1.0, 2.0), V3::new(1.5, 1.0, 5.0));
            let h0 = cell.h;
            let (dt, n) = (1e-4, 10_000);
            for _ in 0..n {
                e.servo(None, V3::zeros(), 0.0, dt, cell.volume());
                e.advance(&mut cell, dt);
            }
            let exact = l.exp() * h0;
            let rel = (cell.h - exact).norm() / h0.norm();
            assert!(rel < 1e-11, "{l}: {rel}");
            let v = cell.volume() / h0.determinant();
            assert!((v - l.trace().exp()).abs() < 1e-11, "{v}");
            assert!((e.trsf - l.exp()).norm() < 1e-11);
            if l == diag {
                let s = e.strain();
                for a in 0..3 {
                    assert!((s[a] - l[(a, a)]).abs() < 1e-12, "{s}");
                }
            }
        }
    }

    #[test]
    fn strain_goal_is_reached_at_the_capped_rate_and_stops() {
        // Yade's strain control: ε̇ = (exp(goal − ε) − 1)/Δt, filtered and capped: the axis
        // runs at the cap, then lands on the goal within 1e-6 (Yade's tolerance).
        let st = Stage {
            name: "s".into(),
            goal: V3::new(0.0, 0.0, -0.02),
            stress_mask: [false; 3],
            max_strain_rate: V3::new(1.0, 1.0, 0.5),
            max_unbalanced: 1.0,
            abs_stress_tol: 1e3,
            rel_stress_tol: 3e-5,
            grow_damping: 0.25,
            glob_update: 5,
            servo: Servo::Affine,
            shear_rate: V3::zeros(),
            shear_goal: V3::zeros(),
            shear_mask: [false; 3],
            max_shear_rate: V3::repeat(1.0),
            friction_angle: None,
            reset_strain: false,
            steps: None,
        };
        let mut e = CellEngine::new(Homothetic::Velocity, false, M3::zeros(), vec![st]);
        let mut cell = Cell::boxed(V3::zeros(), V3::repeat(1.0));
        let dt = 1e-3;
        let mut max_rate: f64 = 0.0;
        for _ in 0..2000 {
            let size = V3::from_fn(|a, _| cell.h.column(a).norm());
            e.servo(None, size, 0.01, dt, cell.volume());
            max_rate = max_rate.max(e.grad[(2, 2)].abs());
            e.advance(&mut cell, dt);
            if e.check_done(Some(0.0)) {
                break;
            }
        }
        assert!(e.finished());
        assert!((max_rate - 0.5).abs() < 1e-12);
        assert!((e.strain().z + 0.02).abs() < 2e-6, "{}", e.strain().z);
    }
}
