//! Load balancing of the rank grid's cuts at start-up and at rebuilds: the modelled cost per
//! particle and the collective cost profile; the cuts themselves are `domain::balance`'s.

use super::*;

impl Simulation {
    /// Start-up balancing (collective): cuts at the quantiles of the particle count, wherever
    /// they fall, and every particle sent to its owner under them (an all-to-all: no contact
    /// exists yet).
    pub(super) fn balance_start(&mut self) -> Result<()> {
        if !self.balance.enabled || self.dec.n_ranks() < 2 {
            return Ok(());
        }
        crate::signals::SetupWatch::new("the start-up balancing", None).tick(0)?;
        self.particle_costs();
        let mut hist = std::mem::take(&mut self.hist);
        let pos = &self.ps.pos[..self.ps.n_owned];
        let cuts = self.balanced_cuts(&mut hist, pos, &self.cost, true);
        self.hist = hist;
        let moved = self.apply_cuts(cuts)?;
        if self.comm.is_root() {
            log::debug!(
                "balance at start-up: cuts at the particle count's quantiles: {}",
                self.cuts_text()
            );
        }
        if moved {
            let tc = Instant::now();
            self.halo_ex
                .redistribute(&self.comm, &self.dec, &mut self.ps);
            self.timers.comm += tc.elapsed();
        }
        Ok(())
    }

    /// The cuts that even out `cost` (one entry per position in `pos`, this rank's share of
    /// all particles) over the ranks: per cut axis, the global cost profile (one histogram
    /// reduction) and its quantiles (`balance::cuts`); `None` for an axis that keeps its cuts.
    /// `anywhere`: no limit on the moves (start-up, restart), else within the neighbouring
    /// slabs (a rebuild's migration follows). Collective; the same on every rank.
    pub fn balanced_cuts(
        &self,
        hist: &mut Vec<i64>,
        pos: &[V3],
        cost: &[u64],
        anywhere: bool,
    ) -> [Option<Vec<f64>>; 3] {
        let mut out = [None, None, None];
        for (a, o) in out.iter_mut().enumerate() {
            let p = self.dec.dims[a];
            if p < 2 {
                continue;
            }
            let (lo, hi) = if self.domain.periodic[a] {
                (self.domain.lo[a], self.domain.hi[a])
            } else {
                let (mn, mx) = pos.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |m, x| {
                    (m.0.min(x[a]), m.1.max(x[a]))
                });
                (self.comm.min_f64(mn), self.comm.max_f64(mx))
            };
            if !(lo.is_finite() && hi.is_finite() && hi > lo) {
                continue;
            }
            let bins = balance::BINS_PER_SLAB * p;
            hist.clear();
            hist.resize(bins, 0);
            for (x, &c) in pos.iter().zip(cost) {
                hist[balance::bin_of(x[a], lo, hi, bins)] += c as i64;
            }
            self.comm.sum_i64s(hist);
            *o = balance::cuts(&self.dec.cuts[a], hist, lo, hi, self.halo, !anywhere);
        }
        out
    }

    /// Take new cuts (the same on every rank); whether any moved. Refuses (a bug) cuts that
    /// leave a subdomain thinner than the halo.
    pub fn apply_cuts(&mut self, cuts: [Option<Vec<f64>>; 3]) -> Result<bool> {
        let mut moved = false;
        for (a, c) in cuts.into_iter().enumerate() {
            if let Some(c) = c {
                self.dec.cuts[a] = c;
                moved = true;
            }
        }
        if moved {
            self.dec
                .check_halo3(self.frame_halo())
                .map_err(|e| Error::Runtime(format!("load balancing: {e}")))?;
            self.n_balances += 1;
        }
        Ok(moved)
    }

    /// The modelled cost of each owned particle (`balance::cost`) into `self.cost`: its
    /// candidate and touching pairs of the last rebuild and step, sphere and wall.
    pub(super) fn particle_costs(&mut self) {
        let n = self.ps.n_owned;
        self.cost.clear();
        self.cost.resize(n, balance::PARTICLE);
        for (list, sides) in [(&self.pairs, 2), (&self.wall_pairs, 1)] {
            for k in 0..list.len() {
                let w = balance::CANDIDATE + if list.active[k] { balance::CONTACT } else { 0 };
                let ends = [list.i[k], list.j[k]];
                for &p in &ends[..sides] {
                    if (p as usize) < n {
                        self.cost[p as usize] += w;
                    }
                }
            }
        }
    }

    /// This rank's load: owned particles, contacts it computes (touching pairs of its lists,
    /// a pair across two ranks counted on both), ghosts, and the modelled cost
    /// (`balance::cost`).
    pub fn load(&mut self) -> [u64; 4] {
        self.particle_costs();
        let touching = |l: &PairList| l.active.iter().filter(|&&a| a).count() as u64;
        [
            self.ps.n_owned as u64,
            touching(&self.pairs) + touching(&self.wall_pairs),
            self.ps.n_ghosts() as u64,
            self.cost.iter().sum(),
        ]
    }

    /// At a rebuild (collective): measure the imbalance of the modelled cost and, above the
    /// scene's threshold, move the cuts (within the neighbouring slabs: the migration that
    /// follows moves the particles). Whether any cut moved.
    pub(super) fn balance_rebuild(&mut self) -> Result<bool> {
        let n_ranks = self.dec.n_ranks();
        if n_ranks < 2 {
            return Ok(false);
        }
        self.particle_costs();
        let local: u64 = self.cost.iter().sum();
        let (sum, max) = (self.comm.sum_u64(local), self.comm.max_u64(local));
        self.imbalance = balance::imbalance(max, sum, n_ranks);
        let root = self.comm.is_root();
        if !self.balance.enabled || self.imbalance <= self.balance.threshold {
            if root {
                log::debug!(
                    "balance at step {}: modelled cost max/avg {:.4} ({}), cuts kept",
                    self.step,
                    self.imbalance,
                    match self.balance.enabled {
                        true => format!("≤ the threshold {}", self.balance.threshold),
                        false => "balancing off".into(),
                    }
                );
            }
            return Ok(false);
        }
        let mut hist = std::mem::take(&mut self.hist);
        // a deformed cell is cut in its reference frame (`Cell::frame`)
        let mut frame = std::mem::take(&mut self.frame_pos);
        let pos = match self.domain.cell.deformed {
            false => &self.ps.pos[..self.ps.n_owned],
            true => {
                frame.clear();
                frame.extend((0..self.ps.n_owned).map(|i| self.domain.frame_of(&self.ps, i)));
                &frame[..]
            }
        };
        let cuts = self.balanced_cuts(&mut hist, pos, &self.cost, false);
        self.hist = hist;
        self.frame_pos = frame;
        let moved = self.apply_cuts(cuts)?;
        if root {
            log::debug!(
                "balance at step {}: modelled cost max/avg {:.4} > the threshold {}: cuts {}",
                self.step,
                self.imbalance,
                self.balance.threshold,
                match moved {
                    true => format!("moved to {}", self.cuts_text()),
                    false => "kept (the profile allows no better)".into(),
                }
            );
        }
        Ok(moved)
    }

    /// The cut planes of every axis that is cut, for messages: `x [a, b, c], z [..]`.
    pub fn cuts_text(&self) -> String {
        let axes = (0..3).filter(|&a| self.dec.dims[a] > 1).map(|a| {
            let c: Vec<String> = self.dec.cuts[a][1..self.dec.dims[a]]
                .iter()
                .map(|x| format!("{x:.4e}"))
                .collect();
            format!("{} [{}]", ["x", "y", "z"][a], c.join(", "))
        });
        let t: Vec<String> = axes.collect();
        match t.is_empty() {
            true => "none (one subdomain)".into(),
            false => t.join(", "),
        }
    }
}
