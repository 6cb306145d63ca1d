//! The energy budget's book (scene `energy: true`, issue 23; Yade `O.trackEnergy`): this
//! rank's cumulative terms, exact sums (ARCHITECTURE.md "Energy budget").

use super::cell::{CellEngine, Homothetic};
use crate::domain::exact::ExactSum;
use crate::error::Result;
use crate::integrate;
use crate::material::Material;
use crate::scene::ctx::Ctx;

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

/// Energy tracking needs a law that splits its dissipation (the frictional laws: `Frict`,
/// `Hertz`, `Hooke`, with rolling resistance, on spheres, walls and meshes; CPM without
/// visco-damage or confinement) and a cell in the velocity mode
/// (the contacts see the mean field's motion, whose work is the boundary's).
pub fn check_spec(ctx: &Ctx, materials: &[Material], cell: &Option<CellEngine>) -> Result<()> {
    let refuse = |what: &str, why: &str| Err(ctx.err(what, format!("with `energy: true`: {why}")));
    for (k, m) in materials.iter().enumerate() {
        let Material::Cpm(c) = m else { continue };
        let p = &c.params;
        // the stored energy is that of the rate-independent, unconfined law
        // (`law::cpm::stored_energy`)
        for (field, bad) in [
            ("dmg_tau", p.dmg_tau > 0.0 && p.dmg_rate_exp > 0.0),
            ("iso_prestress", p.iso_prestress != 0.0),
        ] {
            if bad {
                let at = crate::contact::law::cpm::CpmParams::names(field)
                    .iter()
                    .map(|n| format!("materials[{k}].params.{n}"))
                    .find(|q| ctx.locs.has(q))
                    .unwrap_or(format!("materials[{k}]"));
                return refuse(
                    &at,
                    "CPM's visco-damage overstress and confinement are not split into stored \
                     and dissipated energy yet",
                );
            }
        }
    }
    if cell
        .as_ref()
        .is_some_and(|c| c.homothetic != Homothetic::Velocity)
    {
        return refuse(
            "cell.homothetic",
            "the boundary's work needs `Velocity` (contacts see the mean field)",
        );
    }
    Ok(())
}
