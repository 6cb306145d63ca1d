//! External force and torque on selected particles (Yade `ForceEngine` / `TorqueEngine`, Woo
//! `ConstantForce`, LAMMPS `fix addforce`): each selected particle gets the same force and
//! torque every step, constant or scaled by a table of time.
//!
//! ```ron
//! forces: [
//!     Force(select: Tag(2), force: (0.0, 0.0, -5.0), torque: (0.0, 0.0, 0.1),
//!           table: [(0.0, 0.0), (0.5, 1.0)]),   // optional: a factor, linear in time
//! ],
//! ```
//!
//! The selection is by tag, by a gid range, or by the region holding the particle's centre at
//! the step (`engines/region.rs`). A particle's force is added to its contact forces before
//! gravity (`engines::External`), so it goes through Cundall's damping like the contacts'.
//! Stateless: a restart continues with the same bits.

use super::region::{Region, RegionSpec};
use super::{Hooks, StepView};
use crate::error::Result;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// Which particles the engine acts on, as a scene gives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum SelectSpec {
    /// The particles of this tag (the 5th column of a `TextFile`, a LAMMPS atom type, an
    /// inlet's `tag`).
    Tag(u16),
    /// Gids `lo..hi` (`hi` excluded).
    Gids { lo: u64, hi: u64 },
    /// The particles whose centre lies in the region at the step.
    Region(RegionSpec),
}

/// One force engine as a scene gives it (`forces: [Force(...)]`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Force")]
pub struct ForceSpec {
    pub select: SelectSpec,
    /// Force on each selected particle [N] (default 0).
    #[serde(default)]
    pub force: [f64; 3],
    /// Torque on each selected particle [N m] (default 0).
    #[serde(default)]
    pub torque: [f64; 3],
    /// A factor of time, piecewise linear through `(time [s], factor)` points with increasing
    /// times, held at its end values outside them (default: 1 always).
    #[serde(default)]
    pub table: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Select {
    Tag(u16),
    Gids(u64, u64),
    Region(Region),
}

/// A force engine, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceEngine {
    select: Select,
    force: V3,
    torque: V3,
    table: Vec<(f64, f64)>,
}

impl ForceEngine {
    /// The engine of `spec` (`path`: its field path, for errors).
    pub fn from_spec(ctx: &Ctx, path: &str, spec: &ForceSpec) -> Result<ForceEngine> {
        let select = match &spec.select {
            SelectSpec::Tag(t) => Select::Tag(*t),
            SelectSpec::Gids { lo, hi } if lo < hi => Select::Gids(*lo, *hi),
            SelectSpec::Gids { .. } => {
                return Err(ctx.err(&format!("{path}.select"), "needs lo < hi"))
            }
            SelectSpec::Region(r) => {
                Select::Region(Region::from_spec(ctx, &format!("{path}.select"), r)?)
            }
        };
        let force = ctx.finite3(&format!("{path}.force"), spec.force)?;
        let torque = ctx.finite3(&format!("{path}.torque"), spec.torque)?;
        let tp = format!("{path}.table");
        let finite = spec
            .table
            .iter()
            .all(|(t, f)| t.is_finite() && f.is_finite());
        if !finite {
            return Err(ctx.err(&tp, "times and factors must be finite"));
        }
        if spec.table.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(ctx.err(&tp, "times must increase"));
        }
        Ok(ForceEngine {
            select,
            force,
            torque,
            table: spec.table.clone(),
        })
    }

    /// The table's factor at time `t` (1 without a table).
    pub fn factor(&self, t: f64) -> f64 {
        let tb = &self.table;
        match tb.iter().position(|p| p.0 > t) {
            None => tb.last().map_or(1.0, |p| p.1),
            Some(0) => tb[0].1,
            Some(k) => {
                let ((t0, f0), (t1, f1)) = (tb[k - 1], tb[k]);
                f0 + (f1 - f0) * (t - t0) / (t1 - t0)
            }
        }
    }

    fn selects(&self, v: &StepView, i: usize) -> bool {
        match &self.select {
            Select::Tag(t) => v.ps.tag[i] == *t,
            Select::Gids(lo, hi) => (*lo..*hi).contains(&v.ps.gid[i]),
            Select::Region(r) => r.contains(&v.ps.pos[i]),
        }
    }
}

impl Hooks for ForceEngine {
    /// The force and torque of the step's start time on every selected owned particle.
    fn pre_force(&mut self, v: &mut StepView) -> Result<()> {
        let k = self.factor(v.time);
        let (f, t) = (self.force * k, self.torque * k);
        for i in 0..v.ps.n_owned {
            if self.selects(v, i) {
                v.external.force[i] += f;
                v.external.torque[i] += t;
            }
        }
        Ok(())
    }

    fn adds_forces(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_linear_between_its_points_and_held_outside() {
        let e = ForceEngine {
            select: Select::Tag(0),
            force: V3::x(),
            torque: V3::zeros(),
            table: vec![(1.0, 0.0), (3.0, 2.0), (4.0, -1.0)],
        };
        for (t, want) in [
            (0.0, 0.0),
            (1.0, 0.0),
            (2.0, 1.0),
            (3.0, 2.0),
            (3.5, 0.5),
            (9.0, -1.0),
        ] {
            assert_eq!(e.factor(t), want, "t = {t}");
        }
        let constant = ForceEngine { table: vec![], ..e };
        assert_eq!(constant.factor(5.0), 1.0);
    }
}
