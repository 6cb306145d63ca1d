//! Order-independent exact summation of `f64` (a fixed-point "superaccumulator" covering the
//! whole double range). Adding the same numbers in any order, on any number of ranks, gives
//! the same bits: the sum is exact, and rounded once at the end. Used for every global sum
//! (energies, contact and wall forces, stresses fed to controllers), so the time series are
//! identical for any rank and thread count (ARCHITECTURE.md "Reproducibility").

/// Limbs of 32 bits; bit 0 of limb 0 is 2^−1074 (the smallest subnormal). 66 limbs cover the
/// largest double, two more give room for carries.
pub(crate) const LIMBS: usize = 68;
/// Additions between carry normalisations: each adds < 2^32 to a limb, an i64 holds 2^63.
const NORMALISE_EVERY: u32 = 1 << 30;

#[derive(Clone, Debug, PartialEq)]
pub struct ExactSum {
    limbs: [i64; LIMBS],
    pending: u32,
    /// A NaN or infinity was added: the sum is that (not exact arithmetic any more).
    special: Option<f64>,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum {
            limbs: [0; LIMBS],
            pending: 0,
            special: None,
        }
    }
}

impl ExactSum {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn add(&mut self, x: f64) {
        if x == 0.0 {
            // common (no gravity, no slip): predictable, and cheaper than adding zeros
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as usize;
        if exp == 0x7ff {
            // NaN or infinity: the sum is that (no exact arithmetic any more)
            self.special = Some(match self.special {
                Some(s) => s + x,
                None => x,
            });
            return;
        }
        let frac = bits & ((1u64 << 52) - 1);
        // x = m · 2^(pos − 1074) with m a 53-bit integer
        let (m, pos) = match exp {
            0 => (frac, 0),
            _ => (frac | (1u64 << 52), exp - 1),
        };
        let (limb, off) = (pos / 32, (pos % 32) as u32);
        let v = (m as u128) << off;
        // −1 or +1, no branch on the sign
        let sign = 1 - 2 * (bits >> 63) as i64;
        // limb ≤ 2045/32 = 63, so limb + 2 < LIMBS
        let l = &mut self.limbs[limb..limb + 3];
        l[0] += sign * (v & 0xffff_ffff) as i64;
        l[1] += sign * ((v >> 32) & 0xffff_ffff) as i64;
        l[2] += sign * ((v >> 64) & 0xffff_ffff) as i64;
        self.pending += 1;
        if self.pending >= NORMALISE_EVERY {
            self.normalise();
        }
    }

    /// Carry-propagate so every limb but the top lies in [0, 2^32): a canonical form of the
    /// exact value.
    pub fn normalise(&mut self) {
        for k in 0..LIMBS - 1 {
            let c = self.limbs[k] >> 32;
            self.limbs[k] -= c << 32;
            self.limbs[k + 1] += c;
        }
        self.pending = 0;
    }

    /// Add another accumulator (e.g. from another thread).
    pub fn merge(&mut self, o: &ExactSum) {
        self.normalise();
        let mut o = o.clone();
        o.normalise();
        for k in 0..LIMBS {
            self.limbs[k] += o.limbs[k];
        }
        if let Some(s) = o.special {
            self.special = Some(self.special.map_or(s, |t| t + s));
        }
        self.normalise();
    }

    /// The limbs, normalised, for a global integer allreduce (see `Comm::sum_exact`).
    pub fn limbs_mut(&mut self) -> &mut [i64; LIMBS] {
        self.normalise();
        &mut self.limbs
    }

    /// The normalised limbs, for storing an accumulator exactly (checkpoints: a restarted
    /// sum continues with the same bits).
    pub fn to_limbs(&self) -> Vec<i64> {
        let mut s = self.clone();
        s.normalise();
        s.limbs.to_vec()
    }

    /// Inverse of [`Self::to_limbs`] (`None` for a wrong length).
    pub fn from_limbs(v: &[i64]) -> Option<Self> {
        let limbs: [i64; LIMBS] = v.try_into().ok()?;
        Some(ExactSum {
            limbs,
            pending: 0,
            special: None,
        })
    }

    /// The special value (NaN/inf) as an f64 that survives a max-reduction: NaN if any.
    pub fn special(&self) -> Option<f64> {
        self.special
    }
    pub fn set_special(&mut self, s: Option<f64>) {
        self.special = s;
    }

    /// The exact sum rounded to the nearest double.
    pub fn value(&self) -> f64 {
        if let Some(s) = self.special {
            return s;
        }
        let mut l = self.limbs;
        let norm = |l: &mut [i64; LIMBS]| {
            for k in 0..LIMBS - 1 {
                let c = l[k] >> 32;
                l[k] -= c << 32;
                l[k + 1] += c;
            }
        };
        norm(&mut l);
        let neg = l[LIMBS - 1] < 0;
        if neg {
            for x in l.iter_mut() {
                *x = -*x;
            }
            norm(&mut l);
        }
        let Some(h) = (0..LIMBS).rev().find(|&k| l[k] != 0) else {
            return 0.0;
        };
        // The top three limbs (≥ 65 significant bits) plus a sticky bit for the rest round
        // correctly to 53 bits in one conversion.
        let lo = h.saturating_sub(2);
        let mut top: u128 = 0;
        for k in (lo..=h).rev() {
            top = (top << 32) | l[k] as u64 as u128;
        }
        if l[..lo].iter().any(|&x| x != 0) {
            top |= 1;
        }
        // Scale by 2^e in two exact powers of two (each within the normal range).
        let e = 32 * lo as i64 - 1074;
        let pow2 = |k: i64| f64::from_bits(((k + 1023) as u64) << 52);
        let v = top as f64 * pow2(e / 2) * pow2(e - e / 2);
        if neg {
            -v
        } else {
            v
        }
    }
}

/// Four interleaved floating-point partial sums (lane l takes the terms l, l + 4, …): a loop
/// of them vectorises, and their order is fixed by the terms' indices, so the same terms give
/// the same bits. The default mode's energy terms (the integrator's chunks, the contact
/// loop's ranges) are summed so and their totals added exactly ([`ExactSum`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Partial4([f64; 4]);

impl Partial4 {
    /// Add `xs` (its last `len % 4` terms first, into lanes 0.., then the groups of four).
    #[inline(always)]
    pub fn add_slice(&mut self, xs: &[f64]) {
        let c = xs.chunks_exact(4);
        for (l, x) in c.remainder().iter().enumerate() {
            self.0[l] += x;
        }
        for c in c {
            for (a, x) in self.0.iter_mut().zip(c) {
                *a += x;
            }
        }
    }

    /// Add one term (into lane 0).
    #[inline(always)]
    pub fn add(&mut self, x: f64) {
        self.0[0] += x;
    }

    /// (l₀ + l₁) + (l₂ + l₃).
    pub fn total(&self) -> f64 {
        let a = self.0;
        (a[0] + a[1]) + (a[2] + a[3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::gen::Lcg;

    #[test]
    fn sum_is_exact_and_order_independent() {
        // 1e16 + 1 − 1e16 loses the 1 in floating point; the exact sum keeps it.
        let mut s = ExactSum::new();
        for x in [1e16, 1.0, -1e16] {
            s.add(x);
        }
        assert_eq!(s.value(), 1.0);
        // Random values of wildly different magnitude, in two orders and split in two parts.
        let mut r = Lcg(7);
        let v: Vec<f64> = (0..5000)
            .map(|_| (r.uniform() - 0.5) * 10f64.powi((r.uniform() * 40.0) as i32 - 20))
            .collect();
        let mut a = ExactSum::new();
        v.iter().for_each(|&x| a.add(x));
        let mut b1 = ExactSum::new();
        let mut b2 = ExactSum::new();
        v.iter().rev().step_by(2).for_each(|&x| b1.add(x));
        v.iter().rev().skip(1).step_by(2).for_each(|&x| b2.add(x));
        b1.merge(&b2);
        assert_eq!(a.value().to_bits(), b1.value().to_bits());
        // and it equals a careful (sorted by magnitude) float sum to round-off
        let mut w = v.clone();
        w.sort_by(|x, y| x.abs().partial_cmp(&y.abs()).unwrap());
        let f: f64 = w.iter().sum();
        assert!(
            (a.value() - f).abs() <= 1e-12 * f.abs().max(1e-20),
            "{} {f}",
            a.value()
        );
    }

    #[test]
    fn extremes_and_negatives() {
        for x in [5e-324, -5e-324, 1.7e308, -2.5, 0.1, 3.0e-310] {
            let mut s = ExactSum::new();
            s.add(x);
            assert_eq!(s.value(), x, "{x}");
        }
        let mut s = ExactSum::new();
        s.add(0.1);
        s.add(0.2);
        // one IEEE addition is the correctly rounded exact sum
        assert_eq!(s.value(), 0.1 + 0.2);
        let mut s = ExactSum::new();
        s.add(f64::NAN);
        s.add(1.0);
        assert!(s.value().is_nan());
    }
}
