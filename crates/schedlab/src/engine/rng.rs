//! Named, seeded random streams.
//!
//! A stream is a `Pcg64Mcg` generator whose seed is a fixed 64-bit FNV-1a/splitmix
//! hash of `(seed, replication, name)`. Values are drawn with our own small functions
//! on top of `next_u64` (see `workload::dist`), so outputs do not change when the
//! `rand` family changes its distribution algorithms.

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

/// One independent random stream.
pub struct RngStream {
    rng: Pcg64Mcg,
}

impl RngStream {
    /// The raw 64-bit output.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[0, n)` (`n > 0`), by Lemire's multiply-shift with rejection.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// Derives streams from `(seed, replication, name)`.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
    replication: u64,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl RngStreams {
    pub fn new(seed: u64, replication: u64) -> Self {
        RngStreams { seed, replication }
    }

    /// The stream called `name`.
    pub fn stream(&self, name: &str) -> RngStream {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        let a = splitmix64(self.seed ^ splitmix64(self.replication ^ splitmix64(h)));
        let b = splitmix64(a ^ 0x5851_f42d_4c95_7f2d);
        let state = ((a as u128) << 64) | b as u128 | 1;
        RngStream {
            rng: Pcg64Mcg::new(state),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let s = RngStreams::new(42, 0);
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream("workload");
                move |_| r.next_u64()
            })
            .collect();
        let mut again = RngStreams::new(42, 0).stream("workload");
        assert_eq!(a, (0..4).map(|_| again.next_u64()).collect::<Vec<_>>());
        let mut other = s.stream("policy");
        assert_ne!(a[0], other.next_u64());
        let mut rep = RngStreams::new(42, 1).stream("workload");
        assert_ne!(a[0], rep.next_u64());
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = RngStreams::new(1, 0).stream("t");
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = r.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        let f = r.next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
