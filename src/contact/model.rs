//! The scene's pair model: what computes the sphere–sphere contacts of a step. One of the
//! frictional laws (`law::FrictLawKind`, their pair constants in the `MixTable`, run in
//! batches: `batch.rs`) or CPM (`CpmSim`: its materials, pair constants and the state of its
//! initial cohesive network). The step asks the model (`PairModel::run`) and names no law.

use super::{cpm_pairs, sphere_pairs, CpmStep, CpmTable};
use crate::contact::law::cpm::CpmMat;
use crate::contact::store::PairList;
use crate::forces::{ForceSlots, SlotWriter};
use crate::material::MixTable;
use crate::particles::Particles;

/// CPM set-up of a simulation whose materials are all CPM.
#[derive(Clone, Debug)]
pub struct CpmSim {
    /// CPM parameters per material index.
    pub mats: Vec<CpmMat>,
    /// Their pair constants ([`cpm_pairs`]).
    pub table: CpmTable,
    /// Interaction radius R_I of the initial step (thesis eq. 2.23).
    pub interaction_radius: f64,
    /// The initial cohesive network has been created (after the first step).
    pub links_created: bool,
    /// Number of cohesive links created then (all ranks).
    pub n_links0: u64,
}

impl CpmSim {
    /// The CPM loop's switches of a step: links are made at the first step only, and removed
    /// when stretched past half the skin.
    pub fn step(&self, skin: f64) -> CpmStep {
        CpmStep {
            link_factor: if self.links_created {
                0.0
            } else {
                self.interaction_radius
            },
            max_stretch: 0.5 * skin,
        }
    }
}

/// The pair model of a step (borrowed from the simulation).
#[derive(Clone, Copy)]
pub enum PairModel<'a> {
    /// A frictional law (the scene's `FrictLawKind`, in the mixing table).
    Frict(&'a MixTable),
    /// CPM, with the Verlet skin (how far a link may stretch).
    Cpm(&'a CpmSim, f64),
}

impl<'a> PairModel<'a> {
    /// The model of a scene: CPM when it has CPM materials, else its frictional law.
    pub fn of(mix: &'a MixTable, cpm: Option<&'a CpmSim>, skin: f64) -> Self {
        match cpm {
            Some(c) => PairModel::Cpm(c, skin),
            None => PairModel::Frict(mix),
        }
    }

    /// The sphere–sphere contacts of one step: forces into the accumulators through `out`.
    pub fn run(
        self,
        pairs: &mut PairList,
        slots: &ForceSlots,
        out: SlotWriter,
        ps: &Particles,
        dt: f64,
    ) {
        match self {
            PairModel::Frict(mix) => sphere_pairs(pairs, slots, out, ps, mix, dt),
            PairModel::Cpm(c, skin) => {
                cpm_pairs(pairs, slots, out, ps, &c.mats, &c.table, dt, c.step(skin))
            }
        }
    }

    /// The frictional model, which the fused contact–integrator step runs (`sched`).
    pub fn frictional(self) -> bool {
        matches!(self, PairModel::Frict(_))
    }
}
