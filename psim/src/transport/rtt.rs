//! The round-trip time estimator every retransmitting transport shares
//! (RFC 6298 §2: alpha = 1/8, beta = 1/4, RTO = SRTT + max(G, 4·RTTVAR)).

/// Smoothed RTT and its variation, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
}

impl RttEstimator {
    /// Takes one RTT measurement (RFC 6298 (2.2) for the first, (2.3) after).
    pub fn sample(&mut self, r: u64) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// The smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// SRTT + max(`granularity`, 4·RTTVAR), before any minimum or back-off;
    /// `None` before the first sample.
    pub fn rto(&self, granularity: u64) -> Option<u64> {
        self.srtt.map(|s| s + (4 * self.rttvar).max(granularity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298_by_hand() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(1), None);
        e.sample(100);
        // First: SRTT = R, RTTVAR = R/2.
        assert_eq!((e.srtt(), e.rto(0)), (Some(100), Some(100 + 200)));
        e.sample(180);
        // RTTVAR = 3/4·50 + 1/4·|100 − 180| = 57 (integer), SRTT = 7/8·100 + 1/8·180 = 110.
        assert_eq!((e.srtt(), e.rto(0)), (Some(110), Some(110 + 4 * 57)));
        // Identical samples drive RTTVAR to 0; the granularity then bounds the RTO.
        for _ in 0..200 {
            e.sample(110);
        }
        assert_eq!(e.rto(0), Some(110));
        assert_eq!(e.rto(1), Some(111));
    }
}
