//! What a checkpoint holds of a rank (`checkpoint_state`; the engines' state as RON text),
//! the phase timers, the energy book and the CPM set-up.

use super::*;
use crate::io::checkpoint::{CheckpointState, Header};

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

impl Simulation {
    /// This rank's state as its checkpoint stores it (collective: the engine text sums the
    /// energy budget over the ranks, [`Simulation::engine_state`]): the owned particles and
    /// their reference positions, every contact once (the copy whose particle 1 is owned
    /// here), the pairs touching at the last rebuild (likewise), the wall contacts of owned
    /// spheres, and the walls.
    pub fn checkpoint_state(&self) -> CheckpointState {
        let header = Header {
            step: self.step,
            time: self.time,
            dt: self.dt,
            reproducible: self.reproducible,
            grid: self.dec.dims.map(|d| d as u64),
            bbox_lo: self.decomp_bbox.0,
            bbox_hi: self.decomp_bbox.1,
            need_rebuild: self.need_rebuild(),
            n_rebuilds: self.n_rebuilds,
            engines: self.engine_state(),
            cuts: self.dec.cuts.clone(),
        };
        let mut s = CheckpointState::new(header, &self.ps, self.reference());
        let (ps, n) = (&self.ps, self.ps.n_owned);
        let pl = &self.pairs;
        for k in 0..pl.len() {
            let (i, j) = (pl.i[k] as usize, pl.j[k] as usize);
            if pl.active[k] && i < n {
                let image = [0, 1, 2].map(|a| ps.image[j][a] - ps.image[i][a]);
                s.push_contact(pl.key[k], image, &pl.record(k));
            }
            if pl.leading[k] && i < n {
                s.push_leading(pl.key[k]);
            }
        }
        let wl = &self.wall_pairs;
        for k in 0..wl.len() {
            if wl.active[k] && (wl.i[k] as usize) < n {
                s.push_wall_contact(wl.key[k], &wl.record(k));
            }
        }
        s.set_walls(&self.walls, self.wall_reference());
        s
    }

    /// Engine and controller state as RON text, for checkpoints (empty: no CPM, no engines).
    pub fn engine_state(&self) -> String {
        if self.cpm.is_none()
            && !self.engines.has::<UniaxialStrainer>()
            && self.meshes.is_empty()
            && !self.engines.has::<Flow>()
            && !self.engines.has::<CellEngine>()
            && !self.engines.has::<ServoWalls>()
            && !self.engines.has::<EnergyBook>()
            && !self.engines.has::<crate::engines::protocol::Protocol>()
        {
            return String::new();
        }
        let mut e = EngineState {
            links_created: self.cpm.as_ref().is_some_and(|c| c.links_created),
            n_links0: self.cpm.as_ref().map_or(0, |c| c.n_links0),
            strainer: self.engines.get::<UniaxialStrainer>().cloned(),
            mesh_ref_time: (!self.meshes.is_empty()).then(|| self.meshes.ref_time()),
            flow: self.engines.get::<Flow>().map(|f| f.state()),
            cell: self
                .engines
                .get::<CellEngine>()
                .map(|c| c.state(&self.domain.cell)),
            servo: self.engines.get::<ServoWalls>().cloned(),
            // collective: every rank writes the same text (`io::checkpoint`)
            energy: self.engines.get::<EnergyBook>().map(|b| {
                let mut s = b.sums();
                self.comm.sum_exact(&mut s);
                s.iter().map(|x| x.to_limbs()).collect()
            }),
            protocol: None,
        };
        // the engines that save their own part (`Hooks::save`: the protocol)
        self.engines.save(&mut e);
        ron::to_string(&e).unwrap_or_default()
    }

    /// Inverse of [`Simulation::engine_state`].
    pub fn set_engine_state(&mut self, s: &str) -> Result<()> {
        if s.is_empty() {
            if self.cpm.is_some()
                || self.engines.has::<UniaxialStrainer>()
                || self.engines.has::<Flow>()
                || self.engines.has::<CellEngine>()
                || self.engines.has::<ServoWalls>()
                || self.engines.has::<EnergyBook>()
            {
                return Err(Error::Input(
                    "the checkpoint holds no CPM/strainer/flow/cell state but the scene has them"
                        .into(),
                ));
            }
            return Ok(());
        }
        let e: EngineState =
            ron::from_str(s).map_err(|e| Error::Input(format!("checkpoint engine state: {e}")))?;
        // the engines that load their own part (`Hooks::load`: the protocol, which refuses a
        // scene whose begun stages changed)
        self.engines.load(&e)?;
        match &mut self.cpm {
            Some(c) => {
                c.links_created = e.links_created;
                c.n_links0 = e.n_links0;
            }
            None if e.links_created => {
                return Err(Error::Input(
                    "the checkpoint holds CPM state this scene does not have".into(),
                ))
            }
            None => {}
        }
        if e.strainer.is_some() != self.strainer_wanted {
            return Err(Error::Input(
                "the checkpoint and the scene disagree about the strainer".into(),
            ));
        }
        match e.strainer {
            Some(st) => self.engines.set(st),
            None => self.engines.remove::<UniaxialStrainer>(),
        }
        match (self.engines.get_mut::<Flow>(), &e.flow) {
            (Some(f), Some(s)) => f.set_state(s)?,
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about inlets/outlets".into(),
                ))
            }
        }
        match (self.engines.get_mut::<EnergyBook>(), &e.energy) {
            (Some(b), Some(limbs)) => {
                // the totals on rank 0, zeros elsewhere: their sum over the ranks is the same
                *b = EnergyBook::default();
                if self.comm.is_root() {
                    let sums: Option<Vec<ExactSum>> =
                        limbs.iter().map(|l| ExactSum::from_limbs(l)).collect();
                    let n = [EnergyBook::N_SUMS, EnergyBook::N_SUMS_V1];
                    let sums = sums
                        .filter(|s| n.contains(&s.len()))
                        .ok_or_else(|| Error::Input("checkpoint energy state: bad sums".into()))?;
                    b.set_sums(&sums);
                }
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about energy tracking".into(),
                ))
            }
        }
        match (self.engines.get_mut::<CellEngine>(), &e.cell) {
            (Some(c), Some(s)) => {
                c.restore(s, &mut self.domain.cell);
                // the stages' friction reaches the materials (the contacts have it already)
                if let Some(phi) = s.friction {
                    self.set_friction(phi);
                }
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about the deforming cell".into(),
                ))
            }
        }
        match (self.engines.get_mut::<ServoWalls>(), e.servo) {
            (Some(sv), Some(s)) => {
                // the scene's parameters, the checkpoint's last measurement
                (sv.force_n, sv.stiffness) = (s.force_n, s.stiffness);
                (sv.measured, sv.stress) = (s.measured, s.stress);
            }
            (None, None) => {}
            _ => {
                return Err(Error::Input(
                    "the checkpoint and the scene disagree about the servo walls".into(),
                ))
            }
        }
        // what the stages begun so far set
        if let Some(p) = self.engines.get::<crate::engines::protocol::Protocol>() {
            let set = p.settings();
            self.protocol_apply(&set);
        }
        Ok(())
    }

    /// Before a restart reads its particles: a deforming cell at its shape of the checkpoint's
    /// last rebuild, from the checkpoint's engine text, so that the reference positions go
    /// to the ranks (and cuts) that held them then.
    pub fn prepare_cell_restart(&mut self, engines: &str) {
        let st = ron::from_str::<EngineState>(engines)
            .ok()
            .and_then(|e| e.cell);
        if let (Some(_), Some(st)) = (self.engines.get::<CellEngine>(), st) {
            let h_ref = M3::from_fn(|r, k| st.h_ref[r][k]);
            if h_ref != self.domain.cell.h {
                self.domain.cell.set_h(h_ref);
            }
        }
    }
}
