//! The loose model of [TH] §2.2: completion times of RC3 and of TCP in slow
//! start, ignoring queueing, drops and the interaction between flows. T1
//! compares the simulation with it.
//!
//! - A = (1 − u)·BW, the capacity left on the bottleneck;
//! - RC3: FCT ≈ RTT + N/A;
//! - TCP: the same plus the slow-start rounds, log₂(min(N, A·RTT)/i) RTTs,
//!   when N > i (i the initial window; base 2 is TA's inference: the window
//!   doubles per RTT). The thesis's gain for N > A·RTT, log(A·RTT/i)·RTT·A/N,
//!   is this difference over the RC3 time without its RTT term.

/// The model's inputs. Flow sizes are in packets of `packet_bytes` on the wire.
#[derive(Copy, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LooseModel {
    /// Round-trip time, seconds.
    pub rtt_s: f64,
    /// Bottleneck capacity, bits per second.
    pub bw_bps: f64,
    /// Utilisation of the bottleneck by other traffic, 0 to 1.
    pub load: f64,
    /// TCP's initial window, packets.
    pub iw_packets: f64,
    /// Bytes on the wire per packet.
    pub packet_bytes: f64,
}

impl LooseModel {
    /// A = (1 − u)·BW, packets per second.
    pub fn available_pps(&self) -> f64 {
        (1.0 - self.load) * self.bw_bps / (8.0 * self.packet_bytes)
    }
    /// RC3's completion time for `n` packets, seconds: RTT + N/A.
    pub fn fct_rc3_s(&self, n: f64) -> f64 {
        self.rtt_s + n / self.available_pps()
    }
    /// TCP's: RC3's plus log₂(min(N, A·RTT)/i) RTTs of slow start when N > i.
    pub fn fct_tcp_s(&self, n: f64) -> f64 {
        let bdp = self.available_pps() * self.rtt_s;
        let rounds = if n > self.iw_packets {
            (n.min(bdp) / self.iw_packets).log2().max(0.0)
        } else {
            0.0
        };
        self.fct_rc3_s(n) + rounds * self.rtt_s
    }
    /// The model's reduction of FCT, (TCP − RC3)/TCP.
    pub fn gain(&self, n: f64) -> f64 {
        let t = self.fct_tcp_s(n);
        (t - self.fct_rc3_s(n)) / t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thesis's I2 setting: 40 ms, 1 Gb/s, 30% load, IW 4, 1500 B.
    const I2: LooseModel = LooseModel {
        rtt_s: 0.040,
        bw_bps: 1e9,
        load: 0.3,
        iw_packets: 4.0,
        packet_bytes: 1500.0,
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Hand-computed: A = 0.7e9 / 12000 = 58333.3 packets/s, A·RTT = 2333.3.
    #[test]
    fn matches_hand_computed_values_in_each_regime() {
        // N < i: no gain, both RTT + N/A = 0.04 + 2/58333.3.
        assert!(close(I2.fct_rc3_s(2.0), 0.040_034_285_714));
        assert!(close(I2.fct_tcp_s(2.0), I2.fct_rc3_s(2.0)));
        assert_eq!(I2.gain(2.0), 0.0);
        // i < N < A·RTT: RC3 0.04 + 100/A; TCP adds 0.04·log2(25) = 0.185754.
        assert!(close(I2.fct_rc3_s(100.0), 0.041_714_285_714));
        assert!(close(I2.fct_tcp_s(100.0), 0.227_468_533_305));
        // N > A·RTT: TCP adds 0.04·log2(2333.3/4) = 0.367527.
        assert!(close(I2.fct_rc3_s(10_000.0), 0.211_428_571_429));
        assert!(close(I2.fct_tcp_s(10_000.0), 0.578_955_639_669));
        assert!((I2.gain(10_000.0) - 0.634_810).abs() < 1e-6);
    }

    /// The gain rises with N up to A·RTT and falls after it ([TH] §2.2).
    #[test]
    fn the_gain_peaks_near_the_bandwidth_delay_product() {
        let bdp = I2.available_pps() * I2.rtt_s;
        let g: Vec<f64> = [10.0, 100.0, bdp, 10.0 * bdp, 100.0 * bdp]
            .iter()
            .map(|&n| I2.gain(n))
            .collect();
        assert!(g[0] < g[1] && g[1] < g[2], "{g:?}");
        assert!(g[2] > g[3] && g[3] > g[4], "{g:?}");
    }
}
