//! The bookkeeping cross-checks of a file's values: the root attributes' plausibility, what
//! the scene allows ([`Limits`]: gids, materials, walls, facets), the gids the engines'
//! counters account for ([`GidBook`], [`check_counts`]), and each particle and contact
//! history row as read ([`check_particle`], [`check_state`]). The checks that need every
//! rank are `read::check_global`'s.

use super::{damaged, CheckpointInfo};
use crate::engines::EngineState;
use crate::error::Result;
use crate::V3;
use std::path::Path;

impl CheckpointInfo {
    /// The values no writer produces (checked before any of them sizes or drives anything).
    pub(super) fn implausible(&self) -> Option<String> {
        let finite3 = |v: &V3| v.iter().all(|x| x.is_finite());
        if !(self.time.is_finite() && self.time >= 0.0) {
            return Some(format!("attribute time = {}", self.time));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Some(format!("attribute dt = {}", self.dt));
        }
        if self.grid.iter().product::<u64>() != self.ranks || self.ranks == 0 {
            return Some(format!(
                "attribute grid {:?} does not match ranks = {}",
                self.grid, self.ranks
            ));
        }
        if !finite3(&self.bbox_lo) || !finite3(&self.bbox_hi) {
            return Some("attributes decomp_bbox_lo/hi are not finite".into());
        }
        if let Some(c) = &self.cuts {
            let ok = (0..3).all(|a| {
                c[a].len() as u64 == self.grid[a] + 1
                    && c[a].windows(2).all(|w| w[0] < w[1])
                    && c[a].iter().all(|x| !x.is_nan())
            });
            if !ok {
                return Some(format!(
                    "attributes decomp_cuts_x/y/z {c:?} do not fit the grid"
                ));
            }
        }
        None
    }
}

/// What the scene allows in a checkpoint of it: gids below `max_gid`, material indices below
/// `n_materials`, `n_walls` plane walls, wall-contact indices below `n_walls + n_facets` (mesh
/// facets are wall contacts too, `contact::facet`), and, where the engine text was read, the
/// gids its counters say exist (`book`).
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_gid: u64,
    pub n_materials: usize,
    pub n_walls: usize,
    pub n_facets: usize,
    pub book: Option<GidBook>,
}

/// The particles' bookkeeping of a checkpoint: the scene's initial spheres have gids
/// 0..`initial`; inlet i (scene order) issued the gids initial + i·2⁴⁰ + 0..issued
/// (`engines::inlet::GID_STRIDE`; its counter in `text/engines`); the outlets removed
/// `removed` particles. So every gid is one of those, and the file holds initial + Σ issued −
/// removed particles: a forged counter (lowered, the restart would issue gids again; raised)
/// or a gid outside every range shows.
#[derive(Clone, Debug, Default)]
pub struct GidBook {
    pub initial: u64,
    /// Per inlet: its name and the spheres it issued.
    pub inlets: Vec<(String, u64)>,
    pub removed: u64,
}

impl GidBook {
    /// Is `g` a gid the counters account for? `Err` says why not.
    fn check(&self, g: u64) -> std::result::Result<(), String> {
        if g < self.initial {
            return Ok(());
        }
        let stride = crate::engines::inlet::GID_STRIDE;
        let (i, k) = ((g - self.initial) / stride, (g - self.initial) % stride);
        match self.inlets.get(i as usize) {
            Some((_, issued)) if k < *issued => Ok(()),
            Some((name, issued)) => Err(format!(
                "gid {g} would be sphere {k} of inlet `{name}`, which issued {issued} (its \
                 counter in text/engines)"
            )),
            None => Err(format!(
                "gid {g} is neither one of the scene's {} spheres nor an inlet's ({} inlets)",
                self.initial,
                self.inlets.len()
            )),
        }
    }

    /// initial + Σ issued − removed, `None` when the counters cannot be (negative, overflow).
    fn present(&self) -> Option<u64> {
        let issued = (self.inlets.iter()).try_fold(0u64, |s, (_, n)| s.checked_add(*n))?;
        self.initial.checked_add(issued)?.checked_sub(self.removed)
    }
}

impl Limits {
    /// The limits a checkpoint of `scene` whose engine text is `engines` must keep: the same
    /// for a restart and for `demhpc info` (gids below the initial spheres' count plus each
    /// inlet's range, the materials, walls and facets of the scene, the counters of the
    /// engine text). `Err`: the engine text does not parse or does not fit the scene (damage,
    /// naming `text/engines`).
    pub fn of(scene: &crate::scene::Scene, engines: &str) -> std::result::Result<Self, String> {
        let n_inlets = scene.n_inlets();
        let (inlets, removed) = EngineState::flow_counters(engines)
            .map_err(|e| format!("text/engines: {e}"))?
            .unwrap_or_default();
        if inlets.len() as u64 != n_inlets {
            return Err(format!(
                "text/engines: counters of {} inlets, the scene has {n_inlets}",
                inlets.len()
            ));
        }
        Ok(Limits {
            // the initial gids, then each inlet's range (`engines::inlet::GID_STRIDE`)
            max_gid: scene.summary.n + n_inlets * crate::engines::inlet::GID_STRIDE,
            n_materials: scene.materials.len(),
            n_walls: scene.walls.len(),
            n_facets: scene.meshes.iter().map(|m| m.body.len()).sum(),
            book: Some(GidBook {
                initial: scene.summary.n,
                inlets,
                removed,
            }),
        })
    }

    /// The gid `g` of a particle row is possible: below `max_gid` and, with the engines'
    /// counters, one they issued.
    fn check_gid(&self, g: u64) -> std::result::Result<(), String> {
        if g >= self.max_gid {
            return Err(format!(
                "gid {g} ≥ {} (the scene's particles and its inlets' ranges)",
                self.max_gid
            ));
        }
        match &self.book {
            Some(b) => b.check(g),
            None => Ok(()),
        }
    }
}

/// The particle count the engines' counters give (`GidBook`) against the file's, before
/// anything is read: a counter changed by hand shows here.
pub fn check_counts(path: &Path, info: &CheckpointInfo, limits: &Limits) -> Result<()> {
    let Some(b) = &limits.book else {
        return Ok(());
    };
    let issued: u128 = b.inlets.iter().map(|i| i.1 as u128).sum();
    if b.present() == Some(info.n_particles) {
        return Ok(());
    }
    Err(damaged(
        path,
        format!(
            "text/engines: the inlets' and outlets' counters give {} initial + {issued} inserted \
             − {} removed particles, the file holds {} (particles/gid)",
            b.initial, b.removed, info.n_particles
        ),
    ))
}

/// One particle row as read, checked against the limits: `Err` says what is impossible.
pub(super) fn check_particle(
    p: &crate::particles::Particle,
    rf: &V3,
    lim: &Limits,
) -> std::result::Result<(), String> {
    let finite = |v: &V3| v.iter().all(|x| x.is_finite());
    let q = p.ori.quaternion();
    let gid = lim.check_gid(p.gid);
    let checks: [(bool, &str, String); 10] = [
        (gid.is_ok(), "gid", gid.clone().err().unwrap_or_default()),
        (
            finite(&p.pos),
            "pos",
            format!("position {:?}", p.pos.as_slice()),
        ),
        (
            finite(rf),
            "ref_pos",
            format!("reference position {:?}", rf.as_slice()),
        ),
        (
            finite(&p.vel),
            "vel",
            format!("velocity {:?}", p.vel.as_slice()),
        ),
        (
            finite(&p.angvel),
            "angvel",
            format!("angular velocity {:?}", p.angvel.as_slice()),
        ),
        (
            (q.norm() - 1.0).abs() < 1e-6,
            "ori",
            format!(
                "orientation {:?} is not a unit quaternion",
                q.coords.as_slice()
            ),
        ),
        (
            p.radius > 0.0 && p.radius.is_finite(),
            "radius",
            format!("radius {}", p.radius),
        ),
        (
            p.mass > 0.0 && p.mass.is_finite(),
            "mass",
            format!("mass {}", p.mass),
        ),
        (
            p.inertia > 0.0 && p.inertia.is_finite(),
            "inertia",
            format!("inertia {}", p.inertia),
        ),
        (
            (p.material as usize) < lim.n_materials && p.blocked < 64,
            "material",
            format!(
                "material {} (of {}), blocked {}",
                p.material, lim.n_materials, p.blocked
            ),
        ),
    ];
    match checks.iter().find(|c| !c.0) {
        Some((_, field, what)) => Err(format!("particles/{field}: gid {}: {what}", p.gid)),
        None => Ok(()),
    }
}

/// A contact history row: every value finite.
pub(super) fn check_state(
    group: &str,
    key: (u64, u64),
    st: &[f64],
) -> std::result::Result<(), String> {
    match st.iter().position(|x| !x.is_finite()) {
        Some(c) => Err(format!(
            "{group}/state: contact {key:?}: column {c} is {}",
            st[c]
        )),
        None => Ok(()),
    }
}
