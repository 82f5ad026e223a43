//! TIMELY: rate-based congestion control from the RTT gradient ([TH] Ch. 3,
//! Algorithm 1; [TIMELY] = [91] in [TH]).
//!
//! On every completion (one RTT sample, see below), exactly Algorithm 1:
//!
//! ```text
//! new_rtt_diff = new_rtt − prev_rtt ; prev_rtt = new_rtt
//! rtt_diff = (1 − α)·rtt_diff + α·new_rtt_diff
//! g = rtt_diff / minRTT
//! new_rtt < T_low:  rate += δ                                 (return)
//! new_rtt > T_high: rate *= 1 − β·(1 − T_high/new_rtt)        (return)
//! g ≤ 0:            rate += N·δ   (N = 5 once the last 5 completions had g ≤ 0, else 1)
//! else:             rate *= 1 − β·g
//! ```
//!
//! then the rate is clamped to [`min_rate_mbps`, line rate]. The first
//! sample has no predecessor, so its new_rtt_diff is 0. The HAI count
//! (consecutive completions in the gradient region with g ≤ 0, the current
//! one included) is reset by a gradient decrease and by the T_high branch;
//! the T_low branch leaves it as it is.
//!
//! **Segments.** The thesis samples the RTT once per segment (16–64 KB)
//! sent as a line-rate burst ([TH] §3.2.1, §3.4). Here packets are paced
//! one by one at the rate and the sender reports one RTT sample per
//! `segment_bytes` acknowledged: the ACK that completes a segment gives
//! now − (send time of the packet it acknowledges) − that packet's
//! serialisation at the NIC rate, which equals the thesis's
//! completion − send − seg/NIC rate for a line-rate burst. Burst sending is
//! not modelled.
//!
//! **`completion_scaling`** (off by default: Algorithm 1 exactly). [TH] §3.4
//! says to "scale updates by the number of completions per minRTT" without
//! a formula; this option follows the author's code snippet (TA2): the
//! additive steps and the T_high decrease are multiplied by
//! min((now − last update)/minRTT, 1), a new rate is never below half the
//! old one, and the HAI count counts raw new_rtt_diff < 0.
//!
//! | key (`[protocol.timely]`) | default | source |
//! |---|---|---|
//! | `alpha` (EWMA of rtt_diff) | 0.02 | not in [TH] (TA1); the author's snippet via `eRPC`. The forks (`HPCC`, `R3`) use 0.875, the ECN-vs-delay value ([ECND]) |
//! | `beta` | 0.8 | [TH] §3.5 |
//! | `t_low_us` | 50 | [TH] §3.5 |
//! | `t_high_us` | 500 | [TH] §3.5 (`eRPC`'s copy: 1000) |
//! | `min_rtt_us` | 20 | [TH] Ch. 3 text; TA3 advises the base RTT of the longest path: set it per topology |
//! | `delta_mbps` (δ) | 10 Mb/s per 10 Gb/s of NIC rate | [TH] §3.5 (10 Mb/s on 10G); scaled with line rate, TA3 |
//! | `hai_threshold` | 5 completions | [TH] §3.5 |
//! | `hai_multiplier` (N) | 5 | [TH] Algorithm 1 |
//! | `segment_bytes` | 16384 | [TH] §3.5 (16 KB; up to 64 KB) |
//! | `min_rate_mbps` | 100 | `HPCC` `MinRate` attribute ([TH] gives none) |
//! | `completion_scaling` | false | TA2 |

use super::{AckEvent, CcMetrics, CongestionControl, Loss};
use crate::config::ConfigError;
use crate::transport::config::{bad, Micros};

/// `[protocol.timely]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimelyParams {
    /// EWMA weight of rtt_diff.
    pub alpha: f64,
    /// Multiplicative decrease factor.
    pub beta: f64,
    /// Below it, additive increase (`t_low_us`).
    #[serde(rename = "t_low_us")]
    pub t_low: Micros,
    /// Above it, decrease on the RTT itself (`t_high_us`).
    #[serde(rename = "t_high_us")]
    pub t_high: Micros,
    /// Gradient normaliser (`min_rtt_us`).
    #[serde(rename = "min_rtt_us")]
    pub min_rtt: Micros,
    /// Additive step δ, Mb/s; default 10 Mb/s per 10 Gb/s of NIC rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_mbps: Option<f64>,
    /// Completions with g ≤ 0 in a row before hyper increase.
    pub hai_threshold: u32,
    /// N: the step in δ units in hyper increase.
    pub hai_multiplier: u32,
    /// Bytes acknowledged per RTT sample.
    pub segment_bytes: u64,
    /// Lowest rate, Mb/s.
    pub min_rate_mbps: f64,
    /// Scale updates by the time since the last one (TA2).
    pub completion_scaling: bool,
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            alpha: 0.02,
            beta: 0.8,
            t_low: Micros::from_ps(50_000_000),
            t_high: Micros::from_ps(500_000_000),
            min_rtt: Micros::from_ps(20_000_000),
            delta_mbps: None,
            hai_threshold: 5,
            hai_multiplier: 5,
            segment_bytes: 16_384,
            min_rate_mbps: 100.0,
            completion_scaling: false,
        }
    }
}

impl TimelyParams {
    /// Checks the section; `key` is `protocol.timely`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(bad(&k(name), v, "must be in (0, 1]"));
            }
        }
        let lo = self.t_low.positive(&k("t_low_us"))?;
        let hi = self.t_high.positive(&k("t_high_us"))?;
        if hi < lo {
            return Err(bad(
                &k("t_high_us"),
                hi as f64 / 1e6,
                "must be at least t_low_us",
            ));
        }
        self.min_rtt.positive(&k("min_rtt_us"))?;
        if let Some(d) = self.delta_mbps {
            if d.is_nan() || d <= 0.0 {
                return Err(ConfigError::NonPositiveRate {
                    key: k("delta_mbps"),
                    value: d,
                });
            }
        }
        if self.min_rate_mbps.is_nan() || self.min_rate_mbps <= 0.0 {
            let value = self.min_rate_mbps;
            return Err(ConfigError::NonPositiveRate {
                key: k("min_rate_mbps"),
                value,
            });
        }
        if self.segment_bytes == 0 {
            return Err(bad(&k("segment_bytes"), 0, "must be at least 1"));
        }
        if self.hai_threshold == 0 || self.hai_multiplier == 0 {
            return Err(bad(
                &k("hai_threshold"),
                0,
                "hai_threshold and hai_multiplier must be at least 1",
            ));
        }
        Ok(())
    }
}

/// One flow's TIMELY rate computation.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Timely {
    /// (Its serde layout is made for TOML: a checkpoint stores it as JSON.)
    #[serde(with = "crate::engine::as_json")]
    p: TimelyParams,
    line: f64,
    delta: f64,
    min_rate: f64,
    rate: f64,
    prev_rtt: Option<f64>,
    rtt_diff: f64,
    /// Consecutive completions counted towards HAI.
    neg: u32,
    last_update: Option<u64>,
    /// RTT samples taken.
    pub samples: u64,
}

impl Timely {
    /// A controller at line rate for a NIC of `line_bps`.
    pub fn new(p: &TimelyParams, line_bps: u64) -> Self {
        let line = line_bps as f64;
        Timely {
            p: p.clone(),
            line,
            delta: p.delta_mbps.unwrap_or(line / 1e9) * 1e6,
            min_rate: (p.min_rate_mbps * 1e6).min(line),
            rate: line,
            prev_rtt: None,
            rtt_diff: 0.0,
            neg: 0,
            last_update: None,
            samples: 0,
        }
    }

    /// Current rate, b/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The smoothed rtt_diff, ps.
    pub fn rtt_diff(&self) -> f64 {
        self.rtt_diff
    }

    /// Algorithm 1 for one completion with RTT `rtt_ps` at `now`.
    pub fn on_completion(&mut self, rtt_ps: u64, now: u64) {
        self.samples += 1;
        let p = &self.p;
        let new_rtt = rtt_ps as f64;
        let new_diff = new_rtt - self.prev_rtt.unwrap_or(new_rtt);
        self.prev_rtt = Some(new_rtt);
        self.rtt_diff = (1.0 - p.alpha) * self.rtt_diff + p.alpha * new_diff;
        let min_rtt = p.min_rtt.ps as f64;
        let g = self.rtt_diff / min_rtt;
        let scale = match (p.completion_scaling, self.last_update) {
            (true, Some(t)) => ((now - t) as f64 / min_rtt).min(1.0),
            _ => 1.0,
        };
        self.last_update = Some(now);
        let old = self.rate;
        let mut rate = old;
        if new_rtt < p.t_low.ps as f64 {
            rate += scale * self.delta;
        } else if new_rtt > p.t_high.ps as f64 {
            self.neg = 0;
            rate *= 1.0 - scale * p.beta * (1.0 - p.t_high.ps as f64 / new_rtt);
        } else {
            let counts = if p.completion_scaling {
                new_diff < 0.0
            } else {
                g <= 0.0
            };
            self.neg = if counts { self.neg + 1 } else { 0 };
            if g <= 0.0 {
                let n = if self.neg >= p.hai_threshold {
                    p.hai_multiplier
                } else {
                    1
                };
                rate += scale * n as f64 * self.delta;
            } else {
                rate *= 1.0 - p.beta * g;
            }
        }
        if p.completion_scaling {
            rate = rate.max(0.5 * old);
        }
        self.rate = rate.clamp(self.min_rate, self.line);
    }
}

impl CongestionControl for Timely {
    fn window(&self) -> f64 {
        f64::INFINITY
    }
    fn pacing_bps(&self) -> Option<u64> {
        Some((self.rate as u64).max(1))
    }
    fn on_rtt_sample(&mut self, rtt_ps: u64, now: u64) {
        self.on_completion(rtt_ps, now);
    }
    fn on_ack(&mut self, _ack: &AckEvent) {}
    fn on_loss(&mut self, _loss: Loss, _flight: u64) {}
    fn on_recovery_end(&mut self) {}
    fn limit(&mut self, _max: f64) {}
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: f64::INFINITY,
            ssthresh: f64::INFINITY,
            alpha: None,
            rate_bps: Some(self.rate as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000_000;
    const LINE: u64 = 10_000_000_000;

    fn timely() -> Timely {
        let p = TimelyParams::default();
        p.validate("protocol.timely").unwrap();
        let mut t = Timely::new(&p, LINE);
        // Start below line rate so that increases show.
        t.rate = 5e9;
        t
    }

    #[test]
    fn below_t_low_adds_delta_and_above_t_high_cuts_on_the_rtt() {
        let mut t = timely();
        t.on_completion(30 * US, 0);
        assert_eq!(t.rate(), 5e9 + 10e6);
        t.on_completion(1000 * US, 1);
        // 1 − 0.8·(1 − 500/1000) = 0.6.
        assert_eq!(t.rate(), (5e9 + 10e6) * 0.6);
    }

    #[test]
    fn gradient_sign_decides_between_increase_and_decrease() {
        // Rising RTTs in the band: positive gradient, multiplicative decrease.
        let mut t = timely();
        t.on_completion(100 * US, 0);
        // First sample: diff 0, g = 0: an increase by δ.
        assert_eq!(t.rate(), 5e9 + 10e6);
        let r = t.rate();
        t.on_completion(110 * US, 1);
        let diff = 0.02 * (10 * US) as f64;
        assert_eq!(t.rtt_diff(), diff);
        let g = diff / (20 * US) as f64;
        assert_eq!(t.rate(), r * (1.0 - 0.8 * g));
        // Falling RTTs: the EWMA turns negative after enough samples; then increases.
        let mut t = timely();
        t.on_completion(200 * US, 0);
        t.on_completion(190 * US, 1);
        assert!(t.rtt_diff() < 0.0);
        assert_eq!(t.rate(), 5e9 + 2.0 * 10e6);
    }

    #[test]
    fn hyper_increase_after_five_non_positive_gradients() {
        let mut t = timely();
        let mut rates = vec![t.rate()];
        for i in 0..7u64 {
            t.on_completion((200 - i) * US, i);
            rates.push(t.rate());
        }
        let steps: Vec<f64> = rates
            .windows(2)
            .map(|w| ((w[1] - w[0]) / 1e6).round())
            .collect();
        assert_eq!(steps, [10.0, 10.0, 10.0, 10.0, 50.0, 50.0, 50.0]);
        // A positive gradient decreases and resets the count: the next
        // non-positive gradient adds δ only.
        let r = t.rate();
        t.on_completion(300 * US, 10);
        assert!(t.rtt_diff() > 0.0 && t.rate() < r);
        t.on_completion(100 * US, 11);
        assert!(t.rtt_diff() <= 0.0);
        let r = t.rate();
        t.on_completion(100 * US, 12);
        assert_eq!(((t.rate() - r) / 1e6).round(), 10.0);
    }

    #[test]
    fn rate_stays_within_min_and_line() {
        let mut t = timely();
        for i in 0..100 {
            t.on_completion(10_000 * US, i);
        }
        assert_eq!(t.rate(), 100e6);
        for i in 0..2000 {
            t.on_completion(10 * US, 100 + i);
        }
        assert_eq!(t.rate(), LINE as f64);
    }

    #[test]
    fn completion_scaling_shrinks_steps_between_close_completions() {
        let p = TimelyParams {
            completion_scaling: true,
            ..Default::default()
        };
        let mut t = Timely::new(&p, LINE);
        t.rate = 5e9;
        t.on_completion(30 * US, 0);
        assert_eq!(t.rate(), 5e9 + 10e6);
        // 5 µs later: a quarter of minRTT, a quarter of δ.
        t.on_completion(30 * US, 5 * US);
        assert_eq!(t.rate(), 5e9 + 10e6 + 2.5e6);
        // A huge RTT cannot cut below half.
        t.on_completion(100_000 * US, 100 * US);
        assert!(t.rate() >= 0.5 * (5e9 + 12.5e6));
    }

    #[test]
    fn bad_values_name_their_key() {
        let p = TimelyParams {
            beta: -1.0,
            ..Default::default()
        };
        let e = p.validate("protocol.timely").unwrap_err();
        assert!(e.to_string().contains("protocol.timely.beta"), "{e}");
    }
}
