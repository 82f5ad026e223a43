//! Units used throughout psim.
//!
//! Time is an integer number of picoseconds: floating-point time accumulates
//! rounding error that depends on the order of additions, which would make
//! results depend on the partition. Rates are integer bits per second.

/// Picoseconds per second.
pub const PS_PER_SEC: u64 = 1_000_000_000_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: u64 = 1_000_000;
/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;

/// Time to serialise `bytes` onto a link of `rate_bps`, in picoseconds,
/// rounded up so that a packet never leaves earlier than the line rate allows.
///
/// Exact (no rounding) whenever `8e12 / rate_bps` is an integer, which holds for
/// every common datacenter rate (1, 10, 25, 40, 50, 100, 200, 400 Gb/s).
/// Saturates at `u64::MAX` (about 213 days) rather than wrapping, for the
/// whole-flow bounds of absurd sizes (petabytes at 10 Gb/s).
#[inline]
pub fn tx_time_ps(bytes: u64, rate_bps: u64) -> u64 {
    debug_assert!(rate_bps > 0);
    let num = bytes as u128 * 8 * PS_PER_SEC as u128;
    u64::try_from(num.div_ceil(rate_bps as u128)).unwrap_or(u64::MAX)
}

/// Bytes a link of `rate_bps` can carry in `ps` picoseconds (rounded down).
#[inline]
pub fn bytes_in(ps: u64, rate_bps: u64) -> u64 {
    (ps as u128 * rate_bps as u128 / (8 * PS_PER_SEC as u128)) as u64
}

/// Converts Gb/s given by a user into bits per second.
pub fn gbps_to_bps(gbps: f64) -> u64 {
    (gbps * 1e9).round() as u64
}

/// Converts nanoseconds given by a user into picoseconds.
pub fn ns_to_ps(ns: f64) -> u64 {
    (ns * PS_PER_NS as f64).round() as u64
}

/// Converts microseconds given by a user into picoseconds.
pub fn us_to_ps(us: f64) -> u64 {
    (us * PS_PER_US as f64).round() as u64
}

/// Formats picoseconds for humans (`1.200 us`).
pub fn fmt_ps(ps: u64) -> String {
    if ps >= PS_PER_SEC {
        format!("{:.3} s", ps as f64 / PS_PER_SEC as f64)
    } else if ps >= 1_000_000_000 {
        format!("{:.3} ms", ps as f64 / 1e9)
    } else if ps >= PS_PER_US {
        format!("{:.3} us", ps as f64 / PS_PER_US as f64)
    } else {
        format!("{:.3} ns", ps as f64 / PS_PER_NS as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_times_are_exact_at_common_rates() {
        // 1500 B at 10 Gb/s = 12000 bits / 1e10 b/s = 1.2 us (NDP overview, pull spacing).
        assert_eq!(tx_time_ps(1500, 10_000_000_000), 1_200_000);
        // 9000 B at 10 Gb/s = 7.2 us (NDP paper Fig. 12).
        assert_eq!(tx_time_ps(9000, 10_000_000_000), 7_200_000);
        // 4000 B at 100 Gb/s = 320 ns.
        assert_eq!(tx_time_ps(4000, 100_000_000_000), 320_000);
        assert_eq!(tx_time_ps(1, 400_000_000_000), 20);
    }

    #[test]
    fn serialisation_rounds_up() {
        // 1 byte at 3 Gb/s = 2666.67 ps -> 2667.
        assert_eq!(tx_time_ps(1, 3_000_000_000), 2667);
    }

    #[test]
    fn serialisation_saturates_instead_of_wrapping() {
        // 2^61 B at 1 Gb/s is 1.8e22 ps, beyond u64: the largest time, not a wrapped one.
        assert_eq!(tx_time_ps(1 << 61, 1_000_000_000), u64::MAX);
        assert_eq!(tx_time_ps(u64::MAX, 400_000_000_000), u64::MAX);
        // The largest size that fits at 10 Gb/s still gives its exact time.
        let fits = u64::MAX / 800;
        assert_eq!(tx_time_ps(fits, 10_000_000_000), fits * 800);
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = 10_000_000_000;
        assert_eq!(bytes_in(tx_time_ps(1500, r), r), 1500);
        assert_eq!(bytes_in(1_199_999, r), 1499);
    }

    #[test]
    fn unit_conversions() {
        assert_eq!(gbps_to_bps(2.5), 2_500_000_000);
        assert_eq!(ns_to_ps(1.5), 1500);
        assert_eq!(us_to_ps(10.0), 10_000_000);
        assert_eq!(fmt_ps(1_200_000), "1.200 us");
    }
}
