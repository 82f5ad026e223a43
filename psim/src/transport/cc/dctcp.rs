//! DCTCP's congestion estimate (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! Switches mark packets with CE when their queue exceeds K on arrival
//! ([`crate::queue::RedQueue`] in threshold mode); the receiver echoes the
//! marks (ECE); the sender keeps `alpha`, a moving average of the fraction
//! of bytes marked per window of data, and on a window with marks cuts its
//! congestion window by `alpha / 2` instead of TCP's half. Growth and the
//! loss response are NewReno's ([`super::Window`]). TCP's `dctcp` and IRN's
//! `irn_dctcp` (`roce/irn.rs`, which feeds it per delivered packet) use it.
//!
//! | parameter (`[protocol.dctcp]`) | default | source |
//! |---|---|---|
//! | `g` | 1/16 | RFC 8257 §4.2; [P] A18 |
//! | `initial_alpha` | 1.0 | RFC 8257 §3.3 ("DCTCP.Alpha ... initialized to 1"); Linux `dctcp_alpha_on_init` |
//! | marking threshold K | 30 packets, on switch ports (`[switch] queue = "ecn"`) | [P] §6.1 |
//! | window cut | `cwnd × (1 − alpha/2)`, at most once per window of data | RFC 8257 §3.3 |
//! | `cut_rule` | `"marked_window"`: cut in a window with an ECN echo | RFC 8257 §3.3; `"every_window"`: at the end of every window of data while alpha > 0, and an echo ends slow start (ssthresh = cwnd), as htsim's DCTCP does ([C] `sim/dctcp.cpp`; htsim also starts with alpha = 0: set `initial_alpha = 0`) |
//!
//! With `"every_window"` the window is psim's (the cumulative ACK passing
//! the `snd_nxt` of the previous window's end, in bytes); htsim counts
//! ACKed packets against the window it had at the previous update. Neither
//! rule cuts during loss recovery in psim, where NewReno's deflation rules.

use super::{AckEvent, CcMetrics, CongestionControl, Loss, Window};
use crate::config::ConfigError;
use crate::transport::config::bad;

/// `[protocol.dctcp]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpParams {
    /// Estimation gain.
    pub g: f64,
    /// Alpha before the first window completes.
    pub initial_alpha: f64,
    /// When the window is cut for congestion.
    pub cut_rule: CutRule,
}

/// `cut_rule`: when DCTCP cuts its window (table above).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutRule {
    /// On an ECN echo, at most once per window (RFC 8257).
    #[default]
    MarkedWindow,
    /// At every window end while alpha > 0 (htsim).
    EveryWindow,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams {
            g: 1.0 / 16.0,
            initial_alpha: 1.0,
            cut_rule: CutRule::MarkedWindow,
        }
    }
}

impl DctcpParams {
    /// Checks the section; `key` is `protocol.dctcp`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(bad(&format!("{key}.g"), self.g, "must be in (0, 1]"));
        }
        if !(0.0..=1.0).contains(&self.initial_alpha) {
            return Err(bad(
                &format!("{key}.initial_alpha"),
                self.initial_alpha,
                "must be in [0, 1]",
            ));
        }
        Ok(())
    }
}

/// The sender's running estimate of the extent of congestion.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct DctcpAlpha {
    g: f64,
    /// Current estimate, in [0, 1].
    pub alpha: f64,
    acked: u64,
    marked: u64,
    /// The window ends when the cumulative ACK passes this byte.
    window_end: u64,
}

impl DctcpAlpha {
    /// A fresh estimator.
    pub fn new(p: &DctcpParams) -> Self {
        DctcpAlpha {
            g: p.g,
            alpha: p.initial_alpha,
            acked: 0,
            marked: 0,
            window_end: 0,
        }
    }

    /// Accounts one ACK that newly acknowledged `bytes` (RFC 8257 §3.3 steps
    /// 1–4). `ack` is the new cumulative ACK and `snd_nxt` the next byte to be
    /// sent, which starts the next observation window. Returns true when a
    /// window ended and alpha was updated.
    pub fn on_ack(&mut self, bytes: u64, ece: bool, ack: u64, snd_nxt: u64) -> bool {
        self.acked += bytes;
        if ece {
            self.marked += bytes;
        }
        if ack <= self.window_end {
            return false;
        }
        if self.acked > 0 {
            let f = self.marked as f64 / self.acked as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
        }
        self.acked = 0;
        self.marked = 0;
        self.window_end = snd_nxt;
        true
    }

    /// The window after a cut for congestion: `cwnd × (1 − alpha/2)`.
    pub fn cut(&self, cwnd: f64) -> f64 {
        cwnd * (1.0 - self.alpha / 2.0)
    }
}

/// DCTCP's congestion response.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Dctcp {
    w: Window,
    est: DctcpAlpha,
    rule: CutRule,
}

impl Dctcp {
    /// An initial window of `iw_packets` segments of `mss` bytes.
    pub fn new(iw_packets: u32, mss: u32, p: &DctcpParams) -> Self {
        Dctcp {
            w: Window::new(iw_packets, mss),
            est: DctcpAlpha::new(p),
            rule: p.cut_rule,
        }
    }
}

impl CongestionControl for Dctcp {
    fn window(&self) -> f64 {
        self.w.cwnd
    }
    fn on_ecn(&mut self, ack: &AckEvent, may_cut: bool) -> bool {
        let window_ended = self
            .est
            .on_ack(ack.bytes_acked, ack.ece, ack.snd_una, ack.snd_nxt);
        let cut = match self.rule {
            CutRule::MarkedWindow => ack.ece,
            CutRule::EveryWindow => {
                if ack.ece && self.w.cwnd < self.w.ssthresh {
                    self.w.ssthresh = self.w.cwnd; // an echo ends slow start
                }
                window_ended && self.est.alpha > 0.0
            }
        };
        if cut && may_cut {
            self.w.cwnd = self.est.cut(self.w.cwnd).max(self.w.mss as f64);
            self.w.ssthresh = self.w.cwnd;
            return true;
        }
        false
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        let acked = ack.bytes_acked;
        if !self.w.slow_start(acked) {
            self.w.cwnd += acked as f64 * self.w.mss as f64 / self.w.cwnd;
        }
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
        CcMetrics {
            alpha: Some(self.est.alpha),
            ..self.w.metrics()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a constant marked fraction F every window, alpha converges to F
    /// geometrically: alpha_n = F + (alpha_0 - F)(1 - g)^n.
    #[test]
    fn alpha_follows_the_closed_form_for_a_constant_mark_fraction() {
        let p = DctcpParams::default();
        let mut d = DctcpAlpha::new(&p);
        let f = 0.25;
        let mut snd_nxt = 0u64;
        let mut ack = 0u64;
        for n in 1..=100 {
            // One window of 100 segments of 1000 B, a quarter of them marked.
            snd_nxt += 100_000;
            for i in 0..100 {
                ack += 1000;
                let ended = d.on_ack(1000, i % 4 == 0, ack, snd_nxt);
                assert_eq!(ended, i == 0, "a window ends on its first ACK past the end");
            }
            // Windows are accounted on the first ACK of the next window; compare after it.
            let expected = f + (1.0 - f) * (1.0 - p.g).powi(n - 1);
            if n > 1 {
                // The update at the start of window n covers window n - 1.
                assert!(
                    (d.alpha - expected).abs() < 1e-12,
                    "n={n}: {} vs {expected}",
                    d.alpha
                );
            }
        }
        assert!((d.alpha - f).abs() < 0.002);
    }

    #[test]
    fn all_marked_keeps_alpha_at_one_and_none_decays_it_by_g() {
        let mut d = DctcpAlpha::new(&DctcpParams::default());
        assert!(d.on_ack(1000, true, 1000, 5000));
        assert_eq!(d.alpha, 1.0);
        assert!(!d.on_ack(4000, false, 5000, 9000));
        assert!(d.on_ack(1000, false, 6000, 9000));
        // The window (1000, 5000] and the ACK that ended it carried 5000 B,
        // none marked: F = 0, so alpha = (1 - 1/16) x 1 = 15/16.
        assert!((d.alpha - 15.0 / 16.0).abs() < 1e-12);
        assert!((d.cut(100.0) - 100.0 * (1.0 - 15.0 / 32.0)).abs() < 1e-9);
    }

    /// Through the controller trait: every ACK feeds the estimator, a cut
    /// needs an echo and the sender's permission, and it is alpha/2 of the
    /// window with ssthresh following (RFC 8257 §3.3).
    #[test]
    fn the_controller_cuts_by_half_alpha_only_when_allowed() {
        let mut c = Dctcp::new(10, 1000, &DctcpParams::default());
        let ack = |ece| AckEvent {
            bytes_acked: 1000,
            ece,
            snd_una: 1000,
            snd_nxt: 10_000,
            coupling: None,
        };
        assert!(!c.on_ecn(&ack(true), false), "forbidden by the sender");
        assert_eq!(c.window(), 10_000.0);
        assert!(c.on_ecn(&ack(true), true));
        // alpha is still 1 (the first window has not ended): the cut halves.
        assert_eq!(c.window(), 5_000.0);
        assert_eq!(c.metrics().ssthresh, 5_000.0);
        assert_eq!(c.metrics().alpha, Some(1.0));
        c.on_ack(&ack(false));
        assert_eq!(
            c.window(),
            5_000.0 + 1000.0 * 1000.0 / 5_000.0,
            "additive increase"
        );
    }

    /// htsim's rule: no echo needed, a cut of alpha/2 at each window end
    /// while alpha > 0, none mid-window, and an echo only ends slow start.
    #[test]
    fn every_window_rule_cuts_at_window_ends_while_alpha_is_positive() {
        let p = DctcpParams {
            cut_rule: CutRule::EveryWindow,
            initial_alpha: 0.5,
            ..DctcpParams::default()
        };
        let mut c = Dctcp::new(10, 1000, &p);
        let ack = |ece, snd_una, snd_nxt| AckEvent {
            bytes_acked: 1000,
            ece,
            snd_una,
            snd_nxt,
            coupling: None,
        };
        // The first ACK ends the (empty) window 0: alpha = 15/16 x 0.5 + 1/16 x 0 (no echo).
        assert!(c.on_ecn(&ack(false, 1000, 10_000), true));
        let alpha = 0.5 * 15.0 / 16.0;
        assert_eq!(c.metrics().alpha, Some(alpha));
        assert_eq!(c.window(), 10_000.0 * (1.0 - alpha / 2.0));
        assert_eq!(c.metrics().ssthresh, c.window());
        // Mid-window, an echo does not cut.
        let w = c.window();
        assert!(!c.on_ecn(&ack(true, 2000, 11_000), true));
        assert_eq!(c.window(), w);
        // alpha = 0 never cuts, and an echo in slow start sets ssthresh = cwnd.
        let zero = DctcpParams {
            initial_alpha: 0.0,
            ..p
        };
        let mut c = Dctcp::new(10, 1000, &zero);
        assert!(!c.on_ecn(&ack(false, 1000, 10_000), true));
        assert_eq!(c.window(), 10_000.0);
        assert_eq!(c.metrics().ssthresh, f64::INFINITY);
        assert!(!c.on_ecn(&ack(true, 2000, 11_000), true));
        assert_eq!(c.metrics().ssthresh, 10_000.0);
    }
}
