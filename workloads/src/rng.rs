//! Random streams keyed by position, not by call order.
//!
//! Shard independence needs every random decision to be a function of *what* is decided (which
//! entry, which host, which flow), never of how many other decisions happened before it on the
//! same thread. So each stream is seeded from a SplitMix64 hash of a key tuple, and a stream is
//! only ever consumed by one logical owner (one host of one entry, or one entry's global layout).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One SplitMix64 step: the standard mixer used to turn correlated keys into independent seeds.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A xoshiro256++ stream for the key tuple `(seed, parts...)`.
///
/// Each part is folded in through a SplitMix64 round so that neighbouring keys (host 3 vs
/// host 4) give unrelated streams.
pub(crate) fn stream(seed: u64, parts: &[u64]) -> Stream {
    let mut h = seed;
    let mut key = splitmix64(&mut h);
    for &p in parts {
        let mut s = key ^ p.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        key = splitmix64(&mut s);
    }
    let mut sm = key;
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix64(&mut sm).to_le_bytes());
    }
    Stream(Xoshiro256PlusPlus::from_seed(bytes))
}

/// A random stream with the few draws the generators need.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// Uniform in [0, 1) with 53 random bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1]: safe to take the logarithm of.
    pub(crate) fn unit_open0(&mut self) -> f64 {
        1.0 - self.unit()
    }

    /// Uniform integer in [0, n) by multiply-shift (bias below n / 2^64, irrelevant here). n > 0.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponential with the given mean (any unit).
    pub(crate) fn exp(&mut self, mean: f64) -> f64 {
        -self.unit_open0().ln() * mean
    }

    /// A jitter in [0, max_ps).
    pub(crate) fn jitter(&mut self, max_ps: u64) -> u64 {
        if max_ps == 0 {
            0
        } else {
            self.below(max_ps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_by_key_and_repeat_by_key() {
        let a1 = stream(1, &[0, 3]).0.next_u64();
        let a2 = stream(1, &[0, 3]).0.next_u64();
        let b = stream(1, &[0, 4]).0.next_u64();
        let c = stream(2, &[0, 3]).0.next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }

    #[test]
    fn unit_mean_is_one_half() {
        let mut s = stream(7, &[]);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| s.unit()).sum::<f64>() / n as f64;
        // Standard error is 1/sqrt(12 n) ~ 0.00065; 5 sigma.
        assert!((m - 0.5).abs() < 0.0033, "{m}");
    }
}
