//! Force assembly: each owned particle sums its contacts' forces in partner-gid order, then its
//! wall contacts in wall order, then gravity (an ordered gather).
//!
//! This replaces the thesis' per-thread ForceContainer (§7.4.4) — chunked accumulators reduced
//! in a fixed order — with something stricter and no slower on few cores: the contact loop
//! writes one [`PairForce`] per pair and the gather reads them in an order that depends on gids
//! alone. The result is bit-identical for any thread count, any particle ordering and (with
//! ghosts computed bit-identically) any rank count, which is what reproducible mode needs
//! (ARCHITECTURE.md "Reproducibility"). No atomics, no locks.

use crate::contact::store::PairList;
use crate::particles::Particles;
use crate::V3;
use rayon::prelude::*;

const CHUNK: usize = 1024;

/// Per-owned-particle lists of the pairs it takes part in (CSR), in partner-gid order.
/// Entry = pair index · 2 + side (0: the particle is particle 1 of the pair, 1: particle 2).
#[derive(Clone, Default, Debug)]
pub struct Adjacency {
    start: Vec<u32>,
    entries: Vec<u32>,
    wall_start: Vec<u32>,
    wall_entries: Vec<u32>,
    fill: Vec<u32>,
}

fn build_csr(
    n_owned: usize,
    ij: &[(&[u32], u32)],
    start: &mut Vec<u32>,
    entries: &mut Vec<u32>,
    fill: &mut Vec<u32>,
) {
    start.clear();
    start.resize(n_owned + 1, 0);
    for (col, side) in ij {
        let _ = side;
        for &p in col.iter() {
            if (p as usize) < n_owned {
                start[p as usize + 1] += 1;
            }
        }
    }
    for k in 0..n_owned {
        start[k + 1] += start[k];
    }
    entries.clear();
    entries.resize(start[n_owned] as usize, 0);
    fill.clear();
    fill.extend_from_slice(&start[..n_owned]);
    // Scanning pairs in key order and sides together gives, per particle, partners of lower gid
    // (ascending) then partners of higher gid (ascending): partner-gid order without a sort.
    let npairs = ij.first().map_or(0, |c| c.0.len());
    for k in 0..npairs {
        for (col, side) in ij {
            let p = col[k] as usize;
            if p < n_owned {
                entries[fill[p] as usize] = (k as u32) << 1 | side;
                fill[p] += 1;
            }
        }
    }
}

impl Adjacency {
    /// Rebuild after the pair lists changed (rebuild steps only).
    pub fn build(&mut self, n_owned: usize, pairs: &PairList, wall_pairs: &PairList) {
        build_csr(
            n_owned,
            &[(&pairs.i, 0), (&pairs.j, 1)],
            &mut self.start,
            &mut self.entries,
            &mut self.fill,
        );
        build_csr(
            n_owned,
            &[(&wall_pairs.i, 1)],
            &mut self.wall_start,
            &mut self.wall_entries,
            &mut self.fill,
        );
    }

    /// Number of sphere–sphere pair entries of owned particle `p`.
    pub fn pairs_of(&self, p: usize) -> &[u32] {
        &self.entries[self.start[p] as usize..self.start[p + 1] as usize]
    }
}

/// Fill `force`/`torque` of the owned particles: Σ contacts (partner-gid order) + Σ walls +
/// m g. Particle 1 of a pair receives +F, particle 2 −F; a wall pair's sphere receives −F.
pub fn gather(ps: &mut Particles, pairs: &PairList, walls: &PairList, adj: &Adjacency, g: V3) {
    let n = ps.n_owned;
    let mass = &ps.mass;
    ps.force[..n]
        .par_chunks_mut(CHUNK)
        .zip(ps.torque[..n].par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (fc, tc))| {
            for k in 0..fc.len() {
                let p = c * CHUNK + k;
                let mut f = V3::zeros();
                let mut t = V3::zeros();
                for &e in adj.pairs_of(p) {
                    let pf = &pairs.out[(e >> 1) as usize];
                    if e & 1 == 0 {
                        f += pf.f;
                        t += pf.t1;
                    } else {
                        f -= pf.f;
                        t += pf.t2;
                    }
                }
                for &e in
                    &adj.wall_entries[adj.wall_start[p] as usize..adj.wall_start[p + 1] as usize]
                {
                    let pf = &walls.out[(e >> 1) as usize];
                    f -= pf.f;
                    t += pf.t2;
                }
                fc[k] = f + g * mass[p];
                tc[k] = t;
            }
        });
}

/// Number of real contacts touching each owned particle (for snapshots).
pub fn contact_counts(n_owned: usize, pairs: &PairList, walls: &PairList, out: &mut Vec<u32>) {
    out.clear();
    out.resize(n_owned, 0);
    for (k, st) in pairs.state.iter().enumerate() {
        if st.active {
            for p in [pairs.i[k], pairs.j[k]] {
                if (p as usize) < n_owned {
                    out[p as usize] += 1;
                }
            }
        }
    }
    for (k, st) in walls.state.iter().enumerate() {
        if st.active {
            out[walls.i[k] as usize] += 1;
        }
    }
}
