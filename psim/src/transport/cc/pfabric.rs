//! pFabric's window ([PFAB] §4.2–4.3, as `YAPS` `pfabricflow.cpp` and the
//! ns-2 agent (`NS2PF`) run it): start at the BDP, grow by one segment per
//! ACK in slow start and by one segment per window after, never beyond the
//! maximum window; on a timeout ssthresh = max(cwnd / 2, 2 segments) and
//! cwnd = 1 segment. pFabric reacts to nothing else: no ECN, no fast
//! retransmit (its sender never reports one), no recovery to end.
//!
//! The keys, defaults and sources are in `[protocol.pfabric]`
//! (`transport/pfabric.rs`).

use super::{AckEvent, CcMetrics, CongestionControl, Loss};

/// pFabric's congestion window, bytes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PfabricWindow {
    cwnd: f64,
    ssthresh: f64,
    max: f64,
    mss: f64,
}

impl PfabricWindow {
    /// A window of `iw` segments of `mss` bytes, capped at `max` segments,
    /// with the slow-start threshold at `ssthresh` segments (0: none).
    pub fn new(iw: u32, max: u32, ssthresh: u32, mss: u32) -> Self {
        let mss = mss as f64;
        let max = max as f64 * mss;
        PfabricWindow {
            cwnd: (iw as f64 * mss).min(max),
            ssthresh: if ssthresh == 0 {
                f64::INFINITY
            } else {
                ssthresh as f64 * mss
            },
            max,
            mss,
        }
    }
}

impl CongestionControl for PfabricWindow {
    fn window(&self) -> f64 {
        self.cwnd
    }
    fn on_ack(&mut self, _ack: &AckEvent) {
        // Per ACK that acknowledges new data, whatever it covers (YAPS `increase_cwnd`).
        self.cwnd += if self.cwnd < self.ssthresh {
            self.mss
        } else {
            self.mss * self.mss / self.cwnd
        };
        self.cwnd = self.cwnd.min(self.max);
    }
    fn on_loss(&mut self, loss: Loss, _flight: u64) {
        // Half the window, not the flight (YAPS; ns-2's `slowdown` halves `window()`).
        self.ssthresh = (self.cwnd / 2.0).max(2.0 * self.mss);
        self.cwnd = match loss {
            Loss::Timeout => self.mss,
            Loss::FastRetransmit => self.ssthresh,
        };
    }
    fn on_recovery_end(&mut self) {}
    fn limit(&mut self, max: f64) {
        self.cwnd = self.cwnd.min(max);
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            ..CcMetrics::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack() -> AckEvent {
        AckEvent {
            bytes_acked: 1460,
            ece: false,
            snd_una: 0,
            snd_nxt: 0,
            coupling: None,
        }
    }

    #[test]
    fn slow_start_per_ack_then_one_per_window_capped() {
        let mut w = PfabricWindow::new(12, 23, 0, 1000);
        assert_eq!(w.window(), 12_000.0);
        w.on_ack(&ack());
        assert_eq!(w.window(), 13_000.0, "one segment per ACK, not per byte");
        for _ in 0..50 {
            w.on_ack(&ack());
        }
        assert_eq!(w.window(), 23_000.0, "capped at the maximum window");
        w.on_loss(Loss::Timeout, 0);
        assert_eq!((w.window(), w.metrics().ssthresh), (1000.0, 11_500.0));
        w.on_loss(Loss::Timeout, 0);
        assert_eq!(w.metrics().ssthresh, 2000.0, "never below 2 segments");
        let mut ca = PfabricWindow::new(4, 23, 4, 1000);
        ca.on_ack(&ack());
        assert_eq!(ca.window(), 4000.0 + 1000.0 * 1000.0 / 4000.0);
        assert_eq!(PfabricWindow::new(30, 23, 0, 1).window(), 23.0);
    }
}
