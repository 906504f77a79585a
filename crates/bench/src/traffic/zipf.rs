//! Seeded randomness and Zipf-like samplers.
//!
//! Every random choice of the generator goes through [`Rng`], a ChaCha8 stream seeded
//! from the user's `--seed`: ChaCha8's output is specified bit for bit, so the same
//! seed gives the same corpus on every platform and with every build.
//!
//! [`Zipf`] draws ranks `0..n` with probability proportional to `1 / (rank + 1)^s`;
//! [`HeadTail`] decides for one value whether it comes from a target's few frequent
//! ("head") values, with a chosen probability, or from its unbounded tail.

use rand_chacha::rand_core::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The generator's random stream.
#[derive(Debug, Clone)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// A stream determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A uniform `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform integer in `0..n` (0 when `n` is 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        // Lemire's multiply-shift with rejection.
        loop {
            let x = self.next_u64();
            let m = u128::from(x) * u128::from(n);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// A uniform float in `[0, 1)` (53 random bits).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A uniformly chosen element (`None` for an empty slice).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }

    /// An index drawn with the given (non-negative) weights; `None` when all are 0.
    pub fn weighted(&mut self, weights: &[f64]) -> Option<usize> {
        let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
        if total <= 0.0 {
            return None;
        }
        let mut x = self.unit() * total;
        let mut last = None;
        for (i, &w) in weights.iter().enumerate() {
            if w <= 0.0 {
                continue;
            }
            last = Some(i);
            if x < w {
                return Some(i);
            }
            x -= w;
        }
        last
    }

    /// `n` lowercase hexadecimal digits.
    pub fn hex(&mut self, n: usize) -> String {
        const HEX: &[u8] = b"0123456789abcdef";
        (0..n)
            .map(|_| HEX[self.below(16) as usize] as char)
            .collect()
    }

    /// `n` characters of `[A-Za-z0-9]`.
    pub fn alnum(&mut self, n: usize) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize] as char)
            .collect()
    }
}

/// Ranks `0..n` drawn with probability proportional to `1 / (rank + 1)^exponent`.
#[derive(Debug, Clone)]
pub struct Zipf {
    /// Cumulative probabilities, the last one 1.0.
    cumulative: Vec<f64>,
}

impl Zipf {
    /// A Zipf law over `n` ranks (at least one) with the given exponent (0 is uniform).
    pub fn new(n: usize, exponent: f64) -> Self {
        let n = n.max(1);
        let weights: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-exponent)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let mut cumulative: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Zipf { cumulative }
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.cumulative.len()
    }

    /// Always false: a law has at least one rank.
    pub fn is_empty(&self) -> bool {
        self.cumulative.is_empty()
    }

    /// The probability of `rank`.
    pub fn probability(&self, rank: usize) -> f64 {
        let hi = self.cumulative.get(rank).copied().unwrap_or(0.0);
        let lo = if rank == 0 {
            0.0
        } else {
            self.cumulative.get(rank - 1).copied().unwrap_or(1.0)
        };
        hi - lo
    }

    /// Draws a rank.
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let x = rng.unit();
        self.cumulative
            .partition_point(|&c| c <= x)
            .min(self.cumulative.len() - 1)
    }
}

/// Head or tail: with probability `share` a value is one of a target's frequent values.
#[derive(Debug, Clone, Copy)]
pub struct HeadTail {
    /// Probability of a head value, clamped to `[0, 1]`.
    pub share: f64,
}

impl HeadTail {
    /// True when the next value must be a head value.
    pub fn head(&self, rng: &mut Rng) -> bool {
        rng.chance(self.share.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let xa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800 && n < 1200), "{seen:?}");
    }

    #[test]
    fn zipf_matches_its_law() {
        let z = Zipf::new(10, 1.0);
        let mut r = Rng::new(3);
        let mut counts = [0u32; 10];
        let n = 100_000;
        for _ in 0..n {
            counts[z.sample(&mut r)] += 1;
        }
        for (rank, &c) in counts.iter().enumerate() {
            let want = z.probability(rank);
            let got = f64::from(c) / f64::from(n);
            assert!((got - want).abs() < 0.005, "rank {rank}: {got} vs {want}");
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[9]);
    }

    #[test]
    fn weighted_respects_zero_weights() {
        let mut r = Rng::new(5);
        for _ in 0..1000 {
            assert_eq!(r.weighted(&[0.0, 1.0, 0.0]), Some(1));
        }
        assert_eq!(r.weighted(&[0.0, 0.0]), None);
    }
}
