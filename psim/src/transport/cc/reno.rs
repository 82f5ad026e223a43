//! NewReno's congestion response (RFC 5681, RFC 6582): slow start with
//! appropriate byte counting (RFC 3465, L = 2), additive increase of one MSS
//! per window, halving on loss; with ECN on, halving once per window on an
//! echoed CE mark (RFC 3168 §6.1.2).
//!
//! | parameter | default | source |
//! |---|---|---|
//! | initial window | `[protocol.tcp] iw_packets` = 10 | RFC 6928 |
//! | ECN response | `[protocol.tcp] ecn` = false | RFC 3168 |

use super::{AckEvent, CcMetrics, CongestionControl, Loss, Window};

/// NewReno.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Reno {
    w: Window,
    ecn: bool,
}

impl Reno {
    /// An initial window of `iw_packets` segments of `mss` bytes; `ecn`
    /// turns on the response to echoed marks.
    pub fn new(iw_packets: u32, mss: u32, ecn: bool) -> Self {
        Reno {
            w: Window::new(iw_packets, mss),
            ecn,
        }
    }

    /// Congestion-avoidance growth with a given increase for this ACK.
    pub(super) fn grow_by(&mut self, acked: u64, increase: impl FnOnce(&Window) -> f64) {
        if !self.w.slow_start(acked) {
            self.w.cwnd += increase(&self.w);
        }
    }
}

impl CongestionControl for Reno {
    fn window(&self) -> f64 {
        self.w.cwnd
    }
    fn on_ecn(&mut self, ack: &AckEvent, may_cut: bool) -> bool {
        if ack.ece && self.ecn && may_cut {
            self.w.on_loss(Loss::FastRetransmit, ack.flight());
            return true;
        }
        false
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        // One MSS per window of data (RFC 5681 (3)).
        let acked = ack.bytes_acked;
        self.grow_by(acked, |w| acked as f64 * w.mss as f64 / w.cwnd);
    }
    fn on_loss(&mut self, loss: Loss, flight: u64) {
        self.w.on_loss(loss, flight);
    }
    fn on_recovery_end(&mut self) {
        self.w.end_recovery();
    }
    fn limit(&mut self, max: f64) {
        self.w.limit(max);
    }
    fn set_ssthresh(&mut self, bytes: f64) {
        self.w.ssthresh = bytes;
    }
    fn metrics(&self) -> CcMetrics {
        self.w.metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(bytes: u64, ece: bool) -> AckEvent {
        AckEvent {
            bytes_acked: bytes,
            ece,
            snd_una: 0,
            snd_nxt: 40_000,
            coupling: None,
        }
    }

    #[test]
    fn slow_start_then_one_mss_per_window() {
        let mut r = Reno::new(2, 1000, false);
        r.on_ack(&ack(1000, false));
        assert_eq!(r.window(), 3000.0, "slow start adds the bytes acked");
        r.on_loss(Loss::FastRetransmit, 10_000);
        assert_eq!(r.window(), 5000.0, "half the flight");
        r.on_ack(&ack(1000, false));
        assert_eq!(r.window(), 5000.0 + 1000.0 * 1000.0 / 5000.0);
        r.on_loss(Loss::Timeout, 1000);
        assert_eq!(r.metrics().ssthresh, 2000.0, "never below 2 MSS");
        assert_eq!(r.window(), 1000.0);
    }

    #[test]
    fn echoes_cut_only_with_ecn_on_and_when_allowed() {
        let mut off = Reno::new(10, 1000, false);
        assert!(!off.on_ecn(&ack(0, true), true));
        let mut on = Reno::new(10, 1000, true);
        assert!(!on.on_ecn(&ack(0, true), false), "the sender forbids it");
        assert!(on.on_ecn(&ack(0, true), true));
        assert_eq!(on.window(), 20_000.0, "half the 40 kB in flight");
    }
}
