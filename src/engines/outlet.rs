//! Outlet (Woo `BoxOutlet`, seed 004; LIGGGHTS `delete_atoms region`): every `every` steps,
//! at the pre-exchange hook (`engines`), the owned particles whose centre lies in the region
//! are deleted. Cumulative count and mass removed, summed exactly over the ranks
//! (`domain::exact`), go to `series.csv` and checkpoints.

use super::region::Region;
use crate::domain::comm::Comm;
use crate::domain::exact::ExactSum;
use crate::error::Result;
use crate::particles::Particles;
use crate::scene::ctx::Ctx;
use crate::scene::schema::OutletSpec;

#[derive(Clone, Debug)]
pub struct Outlet {
    /// Name (letters, digits, `_`): the `series.csv` columns `outlet_<name>_count`,
    /// `outlet_<name>_mass_kg`.
    pub name: String,
    pub region: Region,
    /// Acts at the steps that are multiples of `every` (≥ 1).
    pub every: u64,
    /// Particles removed so far (all ranks).
    pub count: u64,
    /// Mass removed so far (all ranks), exact: the same bits for any rank count and across
    /// restarts (the limbs are checkpointed).
    pub mass: ExactSum,
}

impl Outlet {
    pub fn new(name: String, region: Region, every: u64) -> Self {
        Outlet {
            name,
            region,
            every,
            count: 0,
            mass: ExactSum::new(),
        }
    }

    /// Validate outlet `k` of `specs` (the outlets before it: for unique names).
    pub fn from_spec(ctx: &Ctx, specs: &[OutletSpec], k: usize) -> Result<Outlet> {
        let (o, p) = (&specs[k], format!("outlets[{k}]"));
        ctx.column_name(&p, &o.name)?;
        if specs[..k].iter().any(|e| e.name == o.name) {
            return Err(ctx.err(
                &format!("{p}.name"),
                format!("outlet `{}` is defined twice", o.name),
            ));
        }
        if o.every == 0 {
            return Err(ctx.err(&format!("{p}.every"), "must be ≥ 1"));
        }
        let region = Region::from_spec(ctx, &format!("{p}.region"), &o.region)?;
        Ok(Outlet::new(o.name.clone(), region, o.every))
    }

    pub fn due(&self, step: u64) -> bool {
        step.is_multiple_of(self.every)
    }

    /// Delete the owned particles in the region (ghosts must have been dropped), keeping the
    /// others in order; their gids go to `gone`. Collective (two reductions).
    pub fn act(&mut self, ps: &mut Particles, comm: &Comm, gone: &mut Vec<u64>) {
        debug_assert_eq!(ps.n_ghosts(), 0);
        let mut mass = ExactSum::new();
        let mut keep = 0;
        let mut n = 0u64;
        for i in 0..ps.n_owned {
            if self.region.contains(&ps.pos[i]) {
                mass.add(ps.mass[i]);
                gone.push(ps.gid[i]);
                n += 1;
            } else {
                if keep != i {
                    let p = ps.get(i);
                    ps.set(keep, &p);
                }
                keep += 1;
            }
        }
        ps.truncate(keep);
        let mut m = [mass];
        comm.sum_exact(&mut m);
        self.mass.merge(&m[0]);
        let removed = comm.sum_u64(n);
        self.count += removed;
        if comm.is_root() {
            log::debug!(
                "outlet `{}`: {removed} particles removed ({} so far, {:.4e} kg)",
                self.name,
                self.count,
                self.mass.value()
            );
        }
    }
}
