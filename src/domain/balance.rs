//! Dynamic load balancing by shifting the cut planes of the Cartesian rank grid (LAMMPS'
//! `balance shift`; the grid of ranks never changes, only where its planes lie). Plain Rust:
//! the simulation gathers the global cost profile along each axis (one histogram reduction per
//! axis) and this module places the cuts at its quantiles.
//!
//! * **Cost model.** A particle costs `PARTICLE + CANDIDATE·(its candidate pairs) +
//!   CONTACT·(its touching pairs)` (integers, so every sum is exact and every rank computes the
//!   same cuts): the exaDEM form W = 1 + a·contacts, with the weights measured on the chute's
//!   phases (bench/RESULTS.md "Load balancing": per particle integration ≈ 4 µs, per candidate
//!   select ≈ 1.4 µs, per touching pair ≈ 14 µs per 1000 steps, each pair shared by its two
//!   particles). A cost model, not timings, drives the cuts: the decisions are then the same in
//!   every run of a scene, and a restart repeats them exactly.
//! * **Quantile cuts.** Along each cut axis the global profile of cost is binned finely
//!   ([`BINS_PER_SLAB`] bins per slab) and cut k goes where the cumulated cost reaches k/P of
//!   the total (interpolated inside a bin). Balancing the marginal profiles balances the ranks
//!   exactly for profiles that separate by axis (a bed settling under gravity, a chute), as
//!   LAMMPS' shift does.
//! * **Constraints.** No slab is thinner than the halo (ghosts come from direct neighbours
//!   only; LAMMPS #2337 lost atoms that way): cuts are pushed apart to the halo, and an axis
//!   whose extent cannot hold its slabs keeps its cuts. During a run every cut stays strictly
//!   inside its two neighbouring old slabs, so a particle changes owner by at most one slab
//!   and the ordinary migration (three sweeps to direct neighbours, histories along) moves it;
//!   larger moves take several rebuilds. At start-up the cuts may go anywhere (particles are
//!   then redistributed by an all-to-all).

/// Cost weights of the model (see the module documentation).
pub const PARTICLE: u64 = 6;
pub const CANDIDATE: u64 = 1;
pub const CONTACT: u64 = 10;

/// Histogram bins per slab along an axis (the cuts' resolution: 1/64 of a slab's cost).
pub const BINS_PER_SLAB: usize = 64;

/// Cost of one particle with `candidates` candidate pairs and `contacts` touching pairs.
pub fn cost(candidates: u32, contacts: u32) -> u64 {
    PARTICLE + CANDIDATE * candidates as u64 + CONTACT * contacts as u64
}

/// Bin of coordinate `x` in `bins` bins over `[lo, hi)` (clamped into the range).
pub fn bin_of(x: f64, lo: f64, hi: f64, bins: usize) -> usize {
    let t = (x - lo) / (hi - lo) * bins as f64;
    if t.is_nan() || t < 0.0 {
        0
    } else {
        (t as usize).min(bins - 1)
    }
}

/// The cut positions along one axis for the global cost profile `hist` (bins over
/// `[lo, hi)`): `old` are the current `P + 1` cuts (the outer two stay: the periodic cell's
/// faces or ±∞), `halo` the narrowest slab allowed, `near_old` keeps each new cut strictly
/// inside the two old slabs around it (a run's migration moves particles one slab at most).
/// `None` when the profile is empty or the constraints leave nothing to move.
pub fn cuts(
    old: &[f64],
    hist: &[i64],
    lo: f64,
    hi: f64,
    halo: f64,
    near_old: bool,
) -> Option<Vec<f64>> {
    let p = old.len() - 1;
    let total: u128 = hist.iter().map(|&h| h.max(0) as u128).sum();
    if p < 2 || total == 0 || hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let bw = (hi - lo) / hist.len() as f64;
    // quantile k/P of the cumulated cost, linear inside its bin
    let mut new = old.to_vec();
    let mut acc: u128 = 0;
    let mut b = 0;
    for (k, c) in new.iter_mut().enumerate().take(p).skip(1) {
        let target = total * k as u128 / p as u128;
        while b < hist.len() && acc + hist[b].max(0) as u128 <= target {
            acc += hist[b].max(0) as u128;
            b += 1;
        }
        let frac = match hist.get(b) {
            Some(&h) if h > 0 => (target - acc) as f64 / h as f64,
            _ => 0.0,
        };
        *c = lo + (b as f64 + frac) * bw;
    }
    // within the two old slabs around each cut (strictly: a margin of a tenth of the thinner)
    if near_old {
        for k in 1..p {
            let (a, c, d) = (old[k - 1], old[k], old[k + 1]);
            let m = 0.1 * (c - a).min(d - c);
            let (lo_k, hi_k) = (
                if a.is_finite() {
                    a + m
                } else {
                    f64::NEG_INFINITY
                },
                if d.is_finite() { d - m } else { f64::INFINITY },
            );
            new[k] = new[k].clamp(lo_k.min(c), hi_k.max(c));
        }
    }
    // no slab thinner than the halo: push cuts up from below, then down from above (by the
    // halo and a hair, so that the difference of the rounded cuts is not below it)
    let gap = halo * (1.0 + 1e-9);
    for k in 1..p {
        if new[k - 1].is_finite() {
            new[k] = new[k].max(new[k - 1] + gap);
        }
    }
    for k in (1..p).rev() {
        if new[k + 1].is_finite() {
            new[k] = new[k].min(new[k + 1] - gap);
        }
    }
    let widths_ok = (1..=p).all(|k| {
        let w = new[k] - new[k - 1];
        !w.is_finite() || w >= halo
    });
    let near_ok =
        !near_old || (1..p).all(|k| new[k] > old[k - 1] && new[k] < old[k + 1] || new[k] == old[k]);
    let ordered = new.windows(2).all(|w| w[0] < w[1]);
    (widths_ok && near_ok && ordered && new != old).then_some(new)
}

/// Max over average of per-rank costs (1 = perfect balance; ranks without cost count).
pub fn imbalance(max: u64, sum: u64, ranks: usize) -> f64 {
    if sum == 0 {
        1.0
    } else {
        max as f64 * ranks as f64 / sum as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal slabs of cost for a profile dense at the bottom (a settled bed): the cuts follow
    /// the quantiles.
    #[test]
    fn cuts_split_the_cost_evenly() {
        let (lo, hi) = (0.0, 1.0);
        // cost density ∝ (1 − x) on [0, 1): cumulated 2x − x², quantiles at 1 − sqrt(1 − k/P)
        let bins = 4096;
        let hist: Vec<i64> = (0..bins)
            .map(|b| {
                let x = (b as f64 + 0.5) / bins as f64;
                (1e6 * (1.0 - x)) as i64
            })
            .collect();
        let old = vec![f64::NEG_INFINITY, 0.25, 0.5, 0.75, f64::INFINITY];
        let new = cuts(&old, &hist, lo, hi, 0.01, false).unwrap();
        for (k, c) in new.iter().enumerate().take(4).skip(1) {
            let want = 1.0 - (1.0 - k as f64 / 4.0).sqrt();
            assert!((c - want).abs() < 1e-3, "cut {k}: {c} vs {want}");
        }
        assert!(new[0].is_infinite() && new[4].is_infinite());
    }

    /// In a run a cut moves at most into the neighbouring old slabs; repeated, the cuts reach
    /// the balanced ones.
    #[test]
    fn run_moves_are_limited_to_the_neighbouring_slabs_and_converge() {
        let hist: Vec<i64> = (0..1024).map(|b| if b < 128 { 100 } else { 1 }).collect();
        let mut c = vec![0.0, 0.25, 0.5, 0.75, 1.0];
        for _ in 0..20 {
            let Some(n) = cuts(&c, &hist, 0.0, 1.0, 0.001, true) else {
                break;
            };
            for k in 1..4 {
                assert!(n[k] > c[k - 1] && n[k] < c[k + 1], "{n:?} from {c:?}");
            }
            c = n;
        }
        let free = cuts(&[0.0, 0.25, 0.5, 0.75, 1.0], &hist, 0.0, 1.0, 0.001, false).unwrap();
        for k in 1..4 {
            assert!((c[k] - free[k]).abs() < 1e-3, "{c:?} vs {free:?}");
        }
    }

    /// All cost in a layer thinner than the slabs would need: the cuts stop at the halo (no
    /// subdomain thinner than it), and an extent that cannot hold the slabs moves nothing.
    #[test]
    fn no_slab_thinner_than_the_halo() {
        let mut hist = vec![0i64; 1000];
        hist[500] = 1000; // everything at x ≈ 0.5
        let old = vec![0.0, 0.25, 0.5, 0.75, 1.0];
        let new = cuts(&old, &hist, 0.0, 1.0, 0.1, false).unwrap();
        for w in new.windows(2) {
            assert!(w[1] - w[0] >= 0.1, "{new:?}");
        }
        // four slabs of at least 0.3 do not fit in [0, 1]
        assert_eq!(cuts(&old, &hist, 0.0, 1.0, 0.3, false), None);
    }

    #[test]
    fn bins_and_imbalance() {
        assert_eq!(bin_of(-1.0, 0.0, 1.0, 10), 0);
        assert_eq!(bin_of(0.55, 0.0, 1.0, 10), 5);
        assert_eq!(bin_of(1.0, 0.0, 1.0, 10), 9);
        assert_eq!(bin_of(f64::NAN, 0.0, 1.0, 10), 0);
        assert_eq!(imbalance(30, 100, 4), 1.2);
        assert_eq!(imbalance(0, 0, 4), 1.0);
        assert_eq!(cost(0, 0), PARTICLE);
    }
}
