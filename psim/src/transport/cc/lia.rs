//! MPTCP's Linked Increases Algorithm (LIA, RFC 6356; Raiciu et al., [31] in
//! [P]), the coupled congestion control of the NDP paper's MPTCP baseline.
//!
//! An MPTCP connection runs n TCP subflows (`transport/tcp`), each pinned to
//! its own ECMP path. Losses and slow start are per subflow, as in TCP; only
//! the congestion-avoidance increase is coupled, so that the connection as a
//! whole takes no more than a single TCP would on its best path, and moves
//! traffic away from congested paths. New data goes to the subflow with the
//! lowest smoothed RTT that has window space (the Linux default scheduler).
//!
//! | parameter | default | source |
//! |---|---|---|
//! | `[protocol.mptcp] subflows` | 8 (`tcp/mptcp.rs`) | [P] §6.2 ("8 subflows", via [31] Fig. 2); A18 |
//! | increase per ACK of `b` bytes on subflow i | `min(alpha·b·mss/cwnd_total, b·mss/cwnd_i)` | RFC 6356 §3 |
//! | `alpha` | `cwnd_total · max_i(cwnd_i/rtt_i²) / (Σ_i cwnd_i/rtt_i)²` | RFC 6356 §3 |
//! | paths | subflow i takes path i of a per-connection shuffle of the equal-cost paths (distinct while there are enough) | [31]; A19 |
//!
//! Not modelled: MP_CAPABLE / MP_JOIN set-up (all subflows start together,
//! after the optional handshake of the first), and reinjection of data from a
//! failed subflow onto another (each subflow retransmits its own data).

use super::{AckEvent, CcMetrics, CongestionControl, Loss, Reno};

/// What LIA needs to know about one subflow.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SubflowWindow {
    /// Congestion window, bytes.
    pub cwnd: f64,
    /// Smoothed RTT, picoseconds (a subflow without a sample uses the
    /// connection's best one, or 1 µs before any sample exists).
    pub rtt_ps: f64,
}

/// The coupling term shared by all subflows: RFC 6356's `alpha` and the
/// total window.
#[derive(Copy, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LiaCoupling {
    /// Aggressiveness factor.
    pub alpha: f64,
    /// Sum of the subflows' windows, bytes.
    pub cwnd_total: f64,
}

impl LiaCoupling {
    /// Computes the coupling from every subflow's window and RTT (read
    /// three times, so no per-ACK vector is needed).
    pub fn new(subflows: impl Iterator<Item = SubflowWindow> + Clone) -> Self {
        let cwnd_total: f64 = subflows.clone().map(|s| s.cwnd).sum();
        let best = subflows
            .clone()
            .map(|s| s.cwnd / (s.rtt_ps * s.rtt_ps))
            .fold(0.0, f64::max);
        let sum: f64 = subflows.map(|s| s.cwnd / s.rtt_ps).sum();
        let alpha = if sum > 0.0 {
            cwnd_total * best / (sum * sum)
        } else {
            1.0
        };
        LiaCoupling { alpha, cwnd_total }
    }

    /// Congestion-avoidance increase of a subflow with window `cwnd` for an
    /// ACK of `acked` bytes, segment size `mss` (RFC 6356 §3, in bytes).
    pub fn increase(&self, cwnd: f64, acked: f64, mss: f64) -> f64 {
        let coupled = self.alpha * acked * mss / self.cwnd_total;
        let uncoupled = acked * mss / cwnd;
        coupled.min(uncoupled)
    }
}

/// LIA: NewReno per subflow, with the congestion-avoidance increase
/// coupled through [`AckEvent::coupling`] (uncoupled without one).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Lia {
    reno: Reno,
}

impl Lia {
    /// An initial window of `iw_packets` segments of `mss` bytes; `ecn`
    /// turns on NewReno's response to echoed marks.
    pub fn new(iw_packets: u32, mss: u32, ecn: bool) -> Self {
        Lia {
            reno: Reno::new(iw_packets, mss, ecn),
        }
    }
}

impl CongestionControl for Lia {
    fn window(&self) -> f64 {
        self.reno.window()
    }
    fn on_ecn(&mut self, ack: &AckEvent, may_cut: bool) -> bool {
        self.reno.on_ecn(ack, may_cut)
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        let Some(c) = ack.coupling else {
            return self.reno.on_ack(ack);
        };
        let acked = ack.bytes_acked;
        self.reno
            .grow_by(acked, |w| c.increase(w.cwnd, acked as f64, w.mss as f64));
    }
    fn on_loss(&mut self, loss: Loss, flight: u64) {
        self.reno.on_loss(loss, flight);
    }
    fn on_recovery_end(&mut self) {
        self.reno.on_recovery_end();
    }
    fn limit(&mut self, max: f64) {
        self.reno.limit(max);
    }
    fn set_ssthresh(&mut self, bytes: f64) {
        self.reno.set_ssthresh(bytes);
    }
    fn metrics(&self) -> CcMetrics {
        self.reno.metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(cwnd: f64, rtt_us: f64) -> SubflowWindow {
        SubflowWindow {
            cwnd,
            rtt_ps: rtt_us * 1e6,
        }
    }

    /// n identical subflows: alpha = n·w·(w/r²) / (n·w/r)² = 1/n, and the
    /// per-ACK increase is 1/n of what one TCP flow with the total window
    /// would get, so n subflows together grow like one TCP.
    #[test]
    fn equal_subflows_share_one_tcp_increase() {
        for n in [1usize, 2, 8] {
            let subs = vec![sf(10_000.0, 100.0); n];
            let c = LiaCoupling::new(subs.iter().copied());
            assert!(
                (c.alpha - 1.0 / n as f64).abs() < 1e-12,
                "n={n}: {}",
                c.alpha
            );
            let inc = c.increase(10_000.0, 1000.0, 1000.0);
            let total = 10_000.0 * n as f64;
            let expected = (1.0 / n as f64) * 1000.0 * 1000.0 / total;
            assert!((inc - expected).abs() < 1e-9);
            // Never more than an uncoupled TCP on that subflow.
            assert!(inc <= 1000.0 * 1000.0 / 10_000.0 + 1e-9);
        }
    }

    /// Hand-computed alpha for two unequal subflows (RFC 6356 §3 formula).
    #[test]
    fn alpha_matches_the_formula_for_unequal_subflows() {
        // w1 = 20000 B at 100 µs, w2 = 5000 B at 400 µs (rtt in ps).
        let subs = [sf(20_000.0, 100.0), sf(5_000.0, 400.0)];
        let c = LiaCoupling::new(subs.iter().copied());
        let (r1, r2) = (100e6, 400e6);
        let best = f64::max(20_000.0 / (r1 * r1), 5_000.0 / (r2 * r2));
        let sum = 20_000.0 / r1 + 5_000.0 / r2;
        let expected = 25_000.0 * best / (sum * sum);
        assert!((c.alpha - expected).abs() < 1e-12);
        // Numerically: best = 2e-12, sum = 2.125e-4, alpha = 25000*2e-12/4.515625e-8.
        assert!((c.alpha - 1.107266).abs() < 1e-6, "{}", c.alpha);
        // The small subflow is capped by its uncoupled increase? No: coupled is smaller.
        let inc = c.increase(5_000.0, 9000.0, 9000.0);
        assert!((inc - c.alpha * 9000.0 * 9000.0 / 25_000.0).abs() < 1e-6);
        assert!(inc < 9000.0 * 9000.0 / 5_000.0);
    }

    /// Through the controller trait: in congestion avoidance a coupled
    /// subflow grows by LIA's increase, without a coupling by NewReno's.
    #[test]
    fn the_controller_uses_the_coupling_in_congestion_avoidance() {
        let mut lia = Lia::new(10, 1000, false);
        lia.on_loss(Loss::FastRetransmit, 20_000); // cwnd = ssthresh = 10 000
        let coupling = LiaCoupling::new([sf(10_000.0, 100.0), sf(10_000.0, 100.0)].into_iter());
        let ack = |coupling| AckEvent {
            bytes_acked: 1000,
            ece: false,
            snd_una: 0,
            snd_nxt: 10_000,
            coupling,
        };
        lia.on_ack(&ack(Some(coupling)));
        let coupled = coupling.increase(10_000.0, 1000.0, 1000.0);
        assert_eq!(lia.window(), 10_000.0 + coupled);
        let mut alone = Lia::new(10, 1000, false);
        alone.on_loss(Loss::FastRetransmit, 20_000);
        alone.on_ack(&ack(None));
        assert_eq!(alone.window(), 10_000.0 + 100.0);
        assert!(
            coupled < 100.0,
            "two equal subflows: half of one TCP's increase"
        );
    }
}
