//! The energy budget's book (scene `energy: true`, issue 23; Yade `O.trackEnergy`): this
//! rank's cumulative terms, exact sums (ARCHITECTURE.md "Energy budget").

use crate::domain::exact::ExactSum;
use crate::integrate;

/// The energy budget's cumulative terms on one rank (issue 23; Yade `O.energy`): exact sums,
/// so that their sum over the ranks has the same bits on any layout. `integ`: the
/// integrator's ΔKE, work of all forces and of gravity (`integrate::EnergyTally`);
/// `contact`: the contacts' terms ([`crate::contact::store::PairWork`]: frictional slip work,
/// viscous work, the boundary's work through the contacts, CPM's normal dissipation);
/// `flow`: the energy inlets brought in less what outlets took out (kinetic energy of the
/// particles, elastic energy of the contacts of deleted ones).
#[derive(Clone, Debug, Default)]
pub struct EnergyBook {
    pub integ: integrate::EnergyTally,
    pub contact: [ExactSum; 4],
    pub flow: ExactSum,
}

impl EnergyBook {
    /// The number of cumulative terms ([`Self::sums`]); checkpoints written before the CPM
    /// and flow terms hold the first [`Self::N_SUMS_V1`].
    pub const N_SUMS: usize = 9;
    pub const N_SUMS_V1: usize = 7;

    /// This rank's cumulative terms in one list: [ΔKE, damping, gravity, blocked DOFs' work,
    /// friction, viscous, boundary, damage, flow] (the checkpoint's order too).
    pub fn sums(&self) -> Vec<ExactSum> {
        let flow = std::iter::once(&self.flow);
        self.integ
            .0
            .iter()
            .chain(&self.contact)
            .chain(flow)
            .cloned()
            .collect()
    }

    /// Inverse of [`Self::sums`] (a shorter, older list: the missing terms zero).
    pub fn set_sums(&mut self, sums: &[ExactSum]) {
        let mut it = sums.iter().cloned();
        let slots = self.integ.0.iter_mut().chain(&mut self.contact);
        for (slot, v) in slots.chain(std::iter::once(&mut self.flow)).zip(&mut it) {
            *slot = v;
        }
    }
}

/// The book has no hooks of its own: the step zeroes the pairs' work entries, tallies them
/// after the contacts and lets the integrator add its terms (`sim/mod.rs`).
impl super::Hooks for EnergyBook {}
