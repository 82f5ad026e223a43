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
//! g ≤ 0:            rate += N·δ   (N = 5 once the last 5 completions had g < 0, else 1)
//! else:             rate *= 1 − β·g
//! ```
//!
//! then the rate is clamped to [`min_rate_mbps`, line rate]. The first
//! sample has no predecessor, so its new_rtt_diff is 0. The HAI count
//! (consecutive completions in the gradient region with g < 0, the current
//! one included: Algorithm 1's "gradient < 0") is reset by a zero or positive
//! gradient and by the T_high branch; the T_low branch leaves it as it is.
//!
//! **The rate engine and segments** ([TH] §3.2.1, §3.2.3, §3.4;
//! [`SegmentPacer`]). A flow's data leaves in segments of `segment_bytes`
//! (rounded up to whole packets of the RoCE MTU). With `burst = true` (the
//! thesis's engine) a segment goes out as one burst of back-to-back packets
//! at the NIC rate, or at the static `nic_pacing_mbps` rate of the thesis's
//! fine-grained NIC pacer (§3.6, Fig. 3.14), and the next segment may start
//! `segment wire bytes / rate` after this one started (or when this one
//! ends, if that is later): the pacing delay between segments. With `burst =
//! false` every packet is paced at the rate, as the Ch. 4 simulations and
//! the ns-3 forks do (TA3). One segment with `segment_bytes` at most the MTU
//! is one packet, and both modes are the same.
//!
//! **The host's scheduler.** With bursts of more than one packet at the NIC
//! rate, a flow whose segment is due asks the host's segment scheduler
//! (`transport/segment_sched.rs`) for a turn; when the NIC has sent the last
//! burst, due flows get one segment each in round robin, and the whole
//! segment goes to the NIC at once. The RoCE sender (`timely`) works this
//! way; IRN's sender (`irn_timely`), which picks its packets one at a time,
//! paces its bursts on its own.
//!
//! **RTT samples.** One per segment: the ACK that completes it (the
//! `segment_bytes`-th byte acknowledged) gives now − (send time of the
//! packet it acknowledges) − that packet's serialisation at the burst rate.
//! For a burst that left at the burst rate this is the thesis's
//! completion − t_send − segment/NIC rate (the pacer's serialisation is
//! subtracted too, as §3.6 does). A host-scheduled burst's packets all carry
//! the burst's start, so its sample subtracts the whole segment at the NIC
//! rate: exactly completion − t_send − segment/NIC rate. Time queued in the
//! host's NIC behind other traffic counts as RTT, as in the thesis.
//! `rtt_noise_us` adds uniform noise in [0, x] to every sample (Fig. 3.12's
//! experiment), drawn from the host's random stream.
//!
//! **`completion_scaling`** (off by default: Algorithm 1 exactly). [TH] §3.4
//! says to "scale updates by the number of completions per minRTT" without
//! a formula; this option follows the author's code snippet (TA2): the
//! additive steps and the T_high decrease are multiplied by
//! min((now − last update)/minRTT, 1), a new rate is never below half the
//! old one, and the HAI count counts raw new_rtt_diff < 0.
//!
//! **`mode`** (`"thesis"` by default). The public implementations run two
//! other rules; each is a mode, and keys not given take the mode's default
//! (table below):
//! - `"hpcc"`, the `HPCC` ns-3 fork (`rdma-hw.cc`, `cc_mode = 7`): one
//!   update per RTT, when the cumulative ACK passes the PSN that was next to
//!   send at the last update; the first update only records the RTT; the
//!   sample is the ACK's arrival less the packet's send time, with no
//!   serialisation taken off; every increase (T_low's included) counts
//!   towards hyper increase, which adds `hai_multiplier`·δ once
//!   `hai_threshold` increases came in a row before it (the 6th), and any
//!   decrease resets the count; 1 − β·g is clamped at 0. Every packet is
//!   paced at the rate (`burst = false`).
//! - `"patched"`, [ECND]'s patch as `eRPC` runs it (`timely.h`, `w_func`):
//!   between T_low and T_high, w = clamp(2g + 1/2, 0, 1) weighs a decrease
//!   on the RTT's excess against an additive step,
//!   rate·(1 − β·w·(RTT − ref)/ref) + δ·(1 − w), with ref = T_low as
//!   `eRPC` has it (`patched_ref_us`; the parameter sheet writes minRTT).
//!   No hyper increase. With `completion_scaling` both terms are scaled, as
//!   `eRPC` does. Flows with the same RTT tend to one rate,
//!   δ(1 − w)/(β·w·err), where Algorithm 1 at g = 0 keeps any gap.
//!
//! | key (`[protocol.timely]`) | default | source |
//! |---|---|---|
//! | `mode` | `"thesis"` | [TH] Algorithm 1; `"hpcc"`: `HPCC`; `"patched"`: [ECND] via `eRPC` |
//! | `alpha` (EWMA of rtt_diff) | 0.02 (`hpcc`, `patched`: 0.875) | not in [TH] (TA1); the author's snippet via `eRPC`. The forks (`HPCC`, `R3`) use 0.875, the ECN-vs-delay value ([ECND]) |
//! | `beta` | 0.8 (`patched`: 0.008) | [TH] §3.5; `eRPC`'s sweep header pairs the patch with 0.008 |
//! | `t_low_us` | 50 | [TH] §3.5 |
//! | `t_high_us` | 500 | [TH] §3.5 (`eRPC`'s copy: 1000) |
//! | `min_rtt_us` | 20 | [TH] Ch. 3 text; TA3 advises the base RTT of the longest path: set it per topology |
//! | `delta_mbps` (δ) | 10 Mb/s per 10 Gb/s of NIC rate | [TH] §3.5 (10 Mb/s on 10G); scaled with line rate, TA3 |
//! | `hai_threshold` | 5 completions | [TH] §3.5 |
//! | `hai_multiplier` (N) | 5 | [TH] Algorithm 1 |
//! | `segment_bytes` | 16384 | [TH] §3.5 (16 KB; up to 64 KB); `hpcc` samples once per RTT instead |
//! | `min_rate_mbps` | 100 (`hpcc`: 1000) | `HPCC` `MinRate` attribute ([TH] gives none); `hpcc`: its run.py |
//! | `completion_scaling` | false | TA2 |
//! | `burst` | true (`hpcc`: false) | [TH] §3.2.3 (segments leave as line-rate bursts); false: per-packet pacing (TA3, `HPCC`) |
//! | `nic_pacing_mbps` | none (the NIC rate) | [TH] §3.6: static NIC pacing of the packets in a segment, e.g. 700 Mb/s |
//! | `rtt_noise_us` | 0 | [TH] §3.6, Fig. 3.12: uniform noise in [0, x] added to each RTT sample |
//! | `rise_app_share` | 0.8 (`hpcc`: 0) | [TH] §3.4 "Application limited behavior": the rate rises only while the application offers more than this share of it (0 = always); only flows with a traffic entry's `app` are ever limited. `HPCC` has no such rule |
//! | `patched_ref_us` | `t_low_us` | `patched` only: `eRPC` measures the error from T_low; the parameter sheet (§4.1) writes minRTT |

use super::{AckEvent, CcMetrics, CongestionControl, Loss};
use crate::config::ConfigError;
use crate::rng::Rng;
use crate::transport::config::{bad, Micros};
use crate::units::tx_time_ps;

/// `[protocol.timely]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimelyParams {
    /// Which update rule runs: the thesis's, `HPCC`'s fork, or [ECND]'s
    /// patch. Keys not given take the mode's default.
    pub mode: TimelyMode,
    /// EWMA weight of rtt_diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Multiplicative decrease factor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
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
    /// Completions with g < 0 in a row before hyper increase.
    pub hai_threshold: u32,
    /// N: the step in δ units in hyper increase.
    pub hai_multiplier: u32,
    /// Bytes acknowledged per RTT sample.
    pub segment_bytes: u64,
    /// Lowest rate, Mb/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rate_mbps: Option<f64>,
    /// Scale updates by the time since the last one (TA2).
    pub completion_scaling: bool,
    /// Send each segment as one burst (else pace every packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<bool>,
    /// Static pacing rate of the packets inside a segment, Mb/s (none: the NIC rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic_pacing_mbps: Option<f64>,
    /// Upper bound of the uniform noise added to each RTT sample (`rtt_noise_us`).
    #[serde(rename = "rtt_noise_us")]
    pub rtt_noise: Micros,
    /// The rate rises only while the application offers more than this
    /// share of it (`rise_app_share`; 0: always).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rise_app_share: Option<f64>,
    /// `patched`: the RTT the error term is measured from
    /// (`patched_ref_us`; none: `t_low_us`, as `eRPC` does).
    #[serde(rename = "patched_ref_us", skip_serializing_if = "Option::is_none")]
    pub patched_ref: Option<Micros>,
}

/// `mode`: TIMELY's update rule (module documentation).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelyMode {
    /// [TH] Algorithm 1 on every completion.
    #[default]
    Thesis,
    /// `HPCC`'s ns-3 fork: one update per RTT, no serialisation taken off
    /// the sample, hyper increase after any 5 increases.
    Hpcc,
    /// [ECND]'s patch as `eRPC` runs it: between T_low and T_high the
    /// gradient weighs a decrease on the RTT's excess against an additive
    /// step, which gives one fair fixed point.
    Patched,
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            mode: TimelyMode::Thesis,
            alpha: None,
            beta: None,
            t_low: Micros::from_ps(50_000_000),
            t_high: Micros::from_ps(500_000_000),
            min_rtt: Micros::from_ps(20_000_000),
            delta_mbps: None,
            hai_threshold: 5,
            hai_multiplier: 5,
            segment_bytes: 16_384,
            min_rate_mbps: None,
            completion_scaling: false,
            burst: None,
            nic_pacing_mbps: None,
            rtt_noise: Micros::from_ps(0),
            rise_app_share: None,
            patched_ref: None,
        }
    }
}

impl TimelyParams {
    /// EWMA weight: as given, else 0.02 (`thesis`) or 0.875 (`hpcc`,
    /// `patched`).
    pub fn alpha(&self) -> f64 {
        self.alpha.unwrap_or(match self.mode {
            TimelyMode::Thesis => 0.02,
            TimelyMode::Hpcc | TimelyMode::Patched => 0.875,
        })
    }

    /// Decrease factor: as given, else 0.8, or 0.008 (`patched`).
    pub fn beta(&self) -> f64 {
        self.beta.unwrap_or(match self.mode {
            TimelyMode::Patched => 0.008,
            TimelyMode::Thesis | TimelyMode::Hpcc => 0.8,
        })
    }

    /// Lowest rate, Mb/s: as given, else 100, or 1000 (`hpcc`, its run.py).
    pub fn min_rate_mbps(&self) -> f64 {
        self.min_rate_mbps.unwrap_or(match self.mode {
            TimelyMode::Hpcc => 1000.0,
            TimelyMode::Thesis | TimelyMode::Patched => 100.0,
        })
    }

    /// Segments leave as bursts: as given, else true, or false (`hpcc`
    /// paces every packet).
    pub fn burst(&self) -> bool {
        self.burst.unwrap_or(self.mode != TimelyMode::Hpcc)
    }

    /// Share of the rate the application must offer for a rise: as given,
    /// else 0.8, or 0 (`hpcc` has no such rule).
    pub fn rise_app_share(&self) -> f64 {
        self.rise_app_share.unwrap_or(match self.mode {
            TimelyMode::Hpcc => 0.0,
            TimelyMode::Thesis | TimelyMode::Patched => 0.8,
        })
    }

    /// `patched`'s reference RTT, ps: as given, else T_low.
    pub fn patched_ref_ps(&self) -> u64 {
        self.patched_ref.map_or(self.t_low.ps, |r| r.ps)
    }

    /// Checks the section; `key` is `protocol.timely`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        for (name, v) in [("alpha", self.alpha()), ("beta", self.beta())] {
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
        let rates = [
            ("delta_mbps", self.delta_mbps),
            ("min_rate_mbps", Some(self.min_rate_mbps())),
            ("nic_pacing_mbps", self.nic_pacing_mbps),
        ];
        for (name, value) in rates {
            if let Some(value) = value.filter(|v| v.is_nan() || *v <= 0.0) {
                return Err(ConfigError::NonPositiveRate {
                    key: k(name),
                    value,
                });
            }
        }
        self.rtt_noise.zero_or_positive(&k("rtt_noise_us"))?;
        if let Some(r) = self.patched_ref {
            r.positive(&k("patched_ref_us"))?;
        }
        let share = self.rise_app_share();
        if !(0.0..=1.0).contains(&share) {
            return Err(bad(&k("rise_app_share"), share, "must be in [0, 1]"));
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

/// TIMELY's rate engine for one flow ([TH] §3.2.3): when its packets may
/// leave, and which ACKs give an RTT sample (module documentation).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SegmentPacer {
    /// Packets per segment.
    pkts: u64,
    /// Send segments as bursts.
    burst: bool,
    /// Rate of the packets inside a burst, b/s.
    burst_bps: u64,
    /// The NIC's rate, b/s.
    nic_bps: u64,
    /// Bursts take turns in the host's segment scheduler
    /// (`transport/segment_sched.rs`) instead of pacing each flow alone.
    host_sched: bool,
    /// Upper bound of the RTT noise, ps.
    noise_ps: u64,
    /// Payload bytes per RTT sample: one segment.
    sample_bytes: u64,
    /// Wire bytes of a full packet (MTU + header).
    full_wire: u64,
    /// When the current segment's first packet left.
    seg_start: u64,
    /// Packets of the current segment sent so far.
    in_seg: u64,
    /// Wire bytes of the current segment sent so far.
    seg_wire: u64,
    /// Payload bytes acknowledged since the last sample.
    acked: u64,
    /// `hpcc`: one sample per RTT, when the cumulative ACK passes the PSN
    /// that was next to send at the last sample.
    per_rtt: bool,
    /// `hpcc`: that PSN (none before the first sample).
    milestone: Option<u64>,
    /// `hpcc`: the sample is the ACK's arrival less the packet's send
    /// time, with no serialisation taken off.
    bare_rtt: bool,
}

impl SegmentPacer {
    /// The engine of a flow with `mtu` payload bytes (`header` more on the
    /// wire) per packet on a NIC of `nic_bps`.
    pub fn new(p: &TimelyParams, mtu: u32, header: u32, nic_bps: u64) -> Self {
        let pkts = p.segment_bytes.div_ceil(mtu as u64).max(1);
        let pacing = p.nic_pacing_mbps.map_or(nic_bps, |m| (m * 1e6) as u64);
        let burst = p.burst();
        let hpcc = p.mode == TimelyMode::Hpcc;
        SegmentPacer {
            pkts,
            burst,
            burst_bps: pacing.clamp(1, nic_bps.max(1)),
            nic_bps: nic_bps.max(1),
            host_sched: burst && pkts > 1 && p.nic_pacing_mbps.is_none(),
            noise_ps: p.rtt_noise.ps,
            sample_bytes: pkts * mtu as u64,
            full_wire: (mtu + header) as u64,
            seg_start: 0,
            in_seg: 0,
            seg_wire: 0,
            acked: 0,
            per_rtt: hpcc,
            milestone: None,
            bare_rtt: hpcc,
        }
    }

    /// The same engine pacing each flow's bursts on its own, without the
    /// host's scheduler (IRN's sender, which picks packets one at a time).
    pub fn per_flow(mut self) -> Self {
        self.host_sched = false;
        self
    }

    /// Whether whole segments take turns in the host's scheduler: bursts of
    /// more than one packet at the NIC rate.
    pub fn host_scheduled(&self) -> bool {
        self.host_sched
    }

    /// Packets per segment.
    pub fn segment_packets(&self) -> u64 {
        self.pkts
    }

    /// When the next segment of a flow at `rate_bps` may start, after one of
    /// `wire` bytes started at `start`; the granted burst holds the NIC
    /// until the returned `.1` (host-scheduled engines).
    pub fn after_burst(&self, start: u64, wire: u64, rate_bps: u64) -> (u64, u64) {
        let nic_done = start + tx_time_ps(wire, self.nic_bps);
        (start + tx_time_ps(wire, rate_bps.max(1)), nic_done)
    }

    /// When the packet after one of `wire` bytes that left at `now` may
    /// leave, with the controller at `rate_bps`.
    pub fn next_departure(&mut self, now: u64, wire: u64, rate_bps: u64) -> u64 {
        let rate = rate_bps.max(1);
        let own = now + tx_time_ps(wire, self.burst_bps);
        if !self.burst {
            return own.max(now + tx_time_ps(wire, rate));
        }
        if self.in_seg == 0 {
            self.seg_start = now;
        }
        self.in_seg += 1;
        self.seg_wire += wire;
        if self.in_seg < self.pkts {
            return own;
        }
        let gap = self.seg_start + tx_time_ps(self.seg_wire, rate);
        self.in_seg = 0;
        self.seg_wire = 0;
        gap.max(own)
    }

    /// `hpcc`: one sample per RTT rather than per segment.
    pub fn per_rtt(&self) -> bool {
        self.per_rtt
    }

    /// Whether an ACK that newly acknowledged `bytes`, leaving the
    /// cumulative ACK at PSN `una` with PSN `next` the next to send, gives
    /// an RTT sample: when it completes a segment, or (`hpcc`) when `una`
    /// passed the PSN that was next to send at the last sample (the first
    /// ACK gives one too).
    pub fn takes_sample(&mut self, bytes: u64, una: u64, next: u64) -> bool {
        if !self.per_rtt {
            return self.completes_segment(bytes);
        }
        if self.milestone.is_some_and(|m| una <= m) {
            return false;
        }
        self.milestone = Some(next);
        true
    }

    /// Counts `bytes` newly acknowledged; true when they complete a segment.
    pub fn completes_segment(&mut self, bytes: u64) -> bool {
        self.acked += bytes;
        if self.acked < self.sample_bytes {
            return false;
        }
        self.acked %= self.sample_bytes;
        true
    }

    /// The RTT sample of an ACK arriving at `now` for a packet sent at
    /// `sent`, plus noise: less the packet's serialisation at the burst
    /// rate, or, for a host-scheduled burst (whose packets all carry the
    /// burst's start), less the whole segment's serialisation at the NIC
    /// rate; `hpcc` takes nothing off.
    pub fn rtt(&self, now: u64, sent: u64, rng: &mut Rng) -> u64 {
        let serialisation = if self.bare_rtt {
            0
        } else if self.host_sched {
            tx_time_ps(self.pkts * self.full_wire, self.nic_bps)
        } else {
            tx_time_ps(self.full_wire, self.burst_bps)
        };
        let rtt = (now - sent.min(now)).saturating_sub(serialisation);
        if self.noise_ps == 0 {
            return rtt;
        }
        rtt + rand::RngExt::random_range(rng, 0..=self.noise_ps)
    }
}

/// One flow's TIMELY rate computation.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Timely {
    /// (Its serde layout is made for TOML: a checkpoint stores it as JSON.)
    #[serde(with = "crate::engine::as_json")]
    p: TimelyParams,
    alpha: f64,
    beta: f64,
    rise_app_share: f64,
    line: f64,
    delta: f64,
    min_rate: f64,
    rate: f64,
    prev_rtt: Option<f64>,
    rtt_diff: f64,
    /// Consecutive completions counted towards HAI.
    neg: u32,
    last_update: Option<u64>,
    /// The application offered too little for the next sample to raise the
    /// rate ([TH] §3.4; set by the sender before each sample).
    app_limited: bool,
    /// RTT samples taken.
    pub samples: u64,
}

/// [ECND]'s weight of the decrease against the additive step for a
/// normalised gradient `g`: 0 up to −1/4, 1 from 1/4, linear between.
pub fn patched_weight(g: f64) -> f64 {
    (2.0 * g + 0.5).clamp(0.0, 1.0)
}

impl Timely {
    /// A controller at line rate for a NIC of `line_bps`.
    pub fn new(p: &TimelyParams, line_bps: u64) -> Self {
        let line = line_bps as f64;
        Timely {
            p: p.clone(),
            alpha: p.alpha(),
            beta: p.beta(),
            rise_app_share: p.rise_app_share(),
            line,
            delta: p.delta_mbps.unwrap_or(line / 1e9) * 1e6,
            min_rate: (p.min_rate_mbps() * 1e6).min(line),
            rate: line,
            prev_rtt: None,
            rtt_diff: 0.0,
            neg: 0,
            last_update: None,
            app_limited: false,
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

    /// Notes what the application offered since the last completion,
    /// `offered_bps`: below `rise_app_share` of the rate, the next
    /// completion may lower the rate but not raise it ([TH] §3.4).
    pub fn note_app_offer(&mut self, offered_bps: f64) {
        self.app_limited = offered_bps < self.rise_app_share * self.rate;
    }

    /// One update for a completion (`hpcc`: an RTT) with RTT `rtt_ps` at
    /// `now`: Algorithm 1, or the mode's rule (module documentation).
    pub fn on_completion(&mut self, rtt_ps: u64, now: u64) {
        self.samples += 1;
        let new_rtt = rtt_ps as f64;
        let prev = self.prev_rtt.replace(new_rtt);
        if self.p.mode == TimelyMode::Hpcc && prev.is_none() {
            // The fork's first update only records the RTT.
            self.last_update = Some(now);
            return;
        }
        let new_diff = new_rtt - prev.unwrap_or(new_rtt);
        self.rtt_diff = (1.0 - self.alpha) * self.rtt_diff + self.alpha * new_diff;
        let min_rtt = self.p.min_rtt.ps as f64;
        let g = self.rtt_diff / min_rtt;
        let scale = match (self.p.completion_scaling, self.last_update) {
            (true, Some(t)) => ((now - t) as f64 / min_rtt).min(1.0),
            _ => 1.0,
        };
        self.last_update = Some(now);
        let old = self.rate;
        let mut rate = match self.p.mode {
            TimelyMode::Hpcc => self.hpcc_rule(new_rtt, g, scale),
            TimelyMode::Thesis | TimelyMode::Patched => {
                self.thesis_rule(new_rtt, new_diff, g, scale)
            }
        };
        if self.p.completion_scaling {
            rate = rate.max(0.5 * old);
        }
        if std::mem::take(&mut self.app_limited) {
            rate = rate.min(old);
        }
        self.rate = rate.clamp(self.min_rate, self.line);
    }

    /// Algorithm 1's new rate (`patched`: with [ECND]'s rule between T_low
    /// and T_high).
    fn thesis_rule(&mut self, new_rtt: f64, new_diff: f64, g: f64, scale: f64) -> f64 {
        let (p, old) = (&self.p, self.rate);
        if new_rtt < p.t_low.ps as f64 {
            return old + scale * self.delta;
        }
        if new_rtt > p.t_high.ps as f64 {
            self.neg = 0;
            return self.t_high_cut(new_rtt, scale);
        }
        if p.mode == TimelyMode::Patched {
            self.neg = 0;
            let reference = p.patched_ref_ps() as f64;
            let w = patched_weight(g);
            let err = (new_rtt - reference) / reference;
            return old * (1.0 - scale * self.beta * w * err) + scale * self.delta * (1.0 - w);
        }
        // Algorithm 1: N = 5 once the gradient has been negative ("gradient
        // < 0") for five completions in a row; a zero gradient still gives
        // the plain step but breaks the run. The completion-scaling variant
        // counts the raw difference, as the author's code snippet does.
        let counts = if p.completion_scaling {
            new_diff < 0.0
        } else {
            g < 0.0
        };
        self.neg = if counts { self.neg + 1 } else { 0 };
        if g > 0.0 {
            return old * (1.0 - self.beta * g);
        }
        old + scale * self.hai_steps() * self.delta
    }

    /// `HPCC`'s new rate: the same three regions, but every increase (T_low
    /// included) counts towards hyper increase, which starts after
    /// `hai_threshold` of them in a row, and any decrease resets the count.
    fn hpcc_rule(&mut self, new_rtt: f64, g: f64, scale: f64) -> f64 {
        let (p, old) = (&self.p, self.rate);
        let t_high = p.t_high.ps as f64;
        let increase = new_rtt < p.t_low.ps as f64 || (new_rtt <= t_high && g <= 0.0);
        if increase {
            let n = self.hai_steps();
            self.neg += 1;
            return old + scale * n * self.delta;
        }
        self.neg = 0;
        if new_rtt > t_high {
            self.t_high_cut(new_rtt, scale)
        } else {
            // The fork clamps the factor at 0; the rate then stops at the minimum.
            old * (1.0 - self.beta * g).max(0.0)
        }
    }

    /// Additive steps this increase takes: `hai_multiplier` once `neg` has
    /// reached `hai_threshold` (hyper increase), else one.
    fn hai_steps(&self) -> f64 {
        if self.neg >= self.p.hai_threshold {
            self.p.hai_multiplier as f64
        } else {
            1.0
        }
    }

    /// The cut above T_high, in proportion to how far the RTT passed it.
    fn t_high_cut(&self, new_rtt: f64, scale: f64) -> f64 {
        let t_high = self.p.t_high.ps as f64;
        self.rate * (1.0 - scale * self.beta * (1.0 - t_high / new_rtt))
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

    /// [TH] §3.4: an application offering under 80% of the rate holds the
    /// rate on a sample that would raise it, lets a cut through, and holds
    /// only the one sample it was noted for.
    #[test]
    fn an_application_limited_flow_may_fall_but_not_rise() {
        let mut t = timely();
        t.note_app_offer(0.79 * 5e9);
        t.on_completion(30 * US, 0);
        assert_eq!(t.rate(), 5e9);
        t.note_app_offer(0.79 * 5e9);
        t.on_completion(1000 * US, 1);
        assert_eq!(t.rate(), 5e9 * 0.6);
        // The next sample, not noted, rises by δ; 80% or more also rises.
        t.on_completion(30 * US, 2);
        assert_eq!(t.rate(), 5e9 * 0.6 + 10e6);
        t.note_app_offer(0.8 * t.rate());
        t.on_completion(30 * US, 3);
        assert_eq!(t.rate(), 5e9 * 0.6 + 20e6);
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

    /// Algorithm 1: N = 5 once "gradient < 0" for five completions. The
    /// first sample's gradient is 0, so it adds δ without counting; the
    /// 2nd to 6th are negative, and the 6th is the first at 5δ.
    #[test]
    fn hyper_increase_after_five_negative_gradients() {
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
        assert_eq!(steps, [10.0, 10.0, 10.0, 10.0, 10.0, 50.0, 50.0]);
        // A positive gradient decreases and resets the count: the next
        // negative gradient adds δ only.
        let r = t.rate();
        t.on_completion(300 * US, 10);
        assert!(t.rtt_diff() > 0.0 && t.rate() < r);
        t.on_completion(100 * US, 11);
        assert!(t.rtt_diff() < 0.0);
        let r = t.rate();
        t.on_completion(100 * US, 12);
        assert_eq!(((t.rate() - r) / 1e6).round(), 10.0);
    }

    /// A flat RTT in the band keeps g = 0 exactly: every completion adds δ
    /// and none counts towards hyper increase.
    #[test]
    fn a_zero_gradient_never_reaches_hyper_increase() {
        let mut t = timely();
        let r0 = t.rate();
        for i in 0..12u64 {
            t.on_completion(100 * US, i);
            assert_eq!(t.rtt_diff(), 0.0);
        }
        assert_eq!(((t.rate() - r0) / 1e6).round(), 120.0);
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

    /// 1000 B of payload + 64 B of header at 10 Gb/s.
    const WIRE: u64 = 1064;
    const PKT_10G: u64 = 851_200;

    fn pacer(f: impl FnOnce(&mut TimelyParams)) -> SegmentPacer {
        let mut p = TimelyParams {
            segment_bytes: 4000,
            ..Default::default()
        };
        f(&mut p);
        p.validate("protocol.timely").unwrap();
        SegmentPacer::new(&p, 1000, 64, LINE)
    }

    #[test]
    fn a_segment_leaves_as_a_line_rate_burst_then_waits_out_its_share_of_the_rate() {
        let mut s = pacer(|_| {});
        // Four packets of a 4000-byte segment, back to back at 10 Gb/s.
        let mut t = 0;
        let mut departures = vec![t];
        for _ in 0..4 {
            t = s.next_departure(t, WIRE, 1_000_000_000);
            departures.push(t);
        }
        // At 1 Gb/s the segment's 4 × 1064 wire bytes take 34.048 µs: the
        // next segment starts then, counted from the first packet.
        assert_eq!(
            departures,
            [0, PKT_10G, 2 * PKT_10G, 3 * PKT_10G, 4 * WIRE * 8 * 1000]
        );
        // The next segment does the same from there.
        let t0 = departures[4];
        for _ in 0..3 {
            t = s.next_departure(t, WIRE, 1_000_000_000);
        }
        assert_eq!(t, t0 + 3 * PKT_10G);
        assert_eq!(s.next_departure(t, WIRE, 1_000_000_000), 2 * t0);
    }

    #[test]
    fn without_bursts_every_packet_is_paced_at_the_rate() {
        let mut s = pacer(|p| p.burst = Some(false));
        assert_eq!(s.next_departure(0, WIRE, 1_000_000_000), WIRE * 8 * 1000);
        assert_eq!(s.next_departure(7, WIRE, 10_000_000_000), 7 + PKT_10G);
    }

    #[test]
    fn nic_pacing_spaces_the_packets_of_a_segment_and_caps_the_flow() {
        // 700 Mb/s ([TH] Fig. 3.14): 1064 B take 12.16 µs.
        let mut s = pacer(|p| p.nic_pacing_mbps = Some(700.0));
        let gap = (WIRE * 8 * 1_000_000_000_000u64).div_ceil(700_000_000);
        assert_eq!(gap, 12_160_000);
        let mut t = 0;
        for i in 1..=8 {
            // Whatever the controller allows, packets never leave faster.
            t = s.next_departure(t, WIRE, LINE);
            assert_eq!(t, i * gap);
        }
        // The RTT sample subtracts the pacer's serialisation (§3.6).
        let mut rng = crate::rng::stream_rng(1, 2);
        assert_eq!(s.rtt(100 * US, 10 * US, &mut rng), 90 * US - gap);
    }

    #[test]
    fn a_sample_per_completed_segment_with_bounded_noise() {
        // 4000 bytes per segment: the ACKs of four 1000-byte packets.
        let mut s = pacer(|_| {});
        let done: Vec<bool> = (0..8).map(|_| s.completes_segment(1000)).collect();
        assert_eq!(done, [false, false, false, true, false, false, false, true]);
        // A cumulative ACK of 6000 bytes completes one and starts the next half way.
        assert!(s.completes_segment(6000));
        assert!(!s.completes_segment(1000));
        assert!(s.completes_segment(1000));
        // Segments round up to whole packets: 4500 bytes are 5 packets.
        let mut s = pacer(|p| p.segment_bytes = 4500);
        assert!(!s.completes_segment(4500) && s.completes_segment(500));

        let mut rng = crate::rng::stream_rng(1, 2);
        // A host-scheduled burst: all four packets carry its start, and the
        // sample subtracts the whole segment at the NIC rate.
        let quiet = pacer(|_| {});
        assert!(quiet.host_scheduled());
        assert_eq!(quiet.rtt(50 * US, 0, &mut rng), 50 * US - 4 * PKT_10G);
        // Paced alone, each packet carries its own departure: one packet less.
        let alone = pacer(|_| {}).per_flow();
        assert!(!alone.host_scheduled());
        assert_eq!(alone.rtt(50 * US, 0, &mut rng), 50 * US - PKT_10G);
        let noisy = pacer(|p| p.rtt_noise = Micros::from_us(20.0)).per_flow();
        let base = 50 * US - PKT_10G;
        let v: Vec<u64> = (0..2000).map(|_| noisy.rtt(50 * US, 0, &mut rng)).collect();
        assert!(v.iter().all(|&r| (base..=base + 20 * US).contains(&r)));
        // Uniform: the mean is near the middle, and both halves are used.
        let mean = v.iter().map(|&r| (r - base) as f64).sum::<f64>() / v.len() as f64;
        assert!((mean - 10e6).abs() < 0.5e6, "{mean}");
        assert!(v.iter().any(|&r| r < base + 2 * US) && v.iter().any(|&r| r > base + 18 * US));
    }

    #[test]
    fn bad_engine_settings_name_their_key() {
        for (f, key) in [
            (
                (|p: &mut TimelyParams| p.nic_pacing_mbps = Some(0.0)) as fn(&mut TimelyParams),
                "protocol.timely.nic_pacing_mbps",
            ),
            (
                |p: &mut TimelyParams| p.rtt_noise = Micros::from_us(-5.0),
                "protocol.timely.rtt_noise_us",
            ),
        ] {
            let mut p = TimelyParams::default();
            f(&mut p);
            let e = p.validate("protocol.timely").unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        let p = TimelyParams {
            rtt_noise: Micros::from_us(0.0),
            ..Default::default()
        };
        p.validate("protocol.timely").unwrap();
    }

    fn with_mode(mode: TimelyMode) -> Timely {
        let p = TimelyParams {
            mode,
            ..Default::default()
        };
        p.validate("protocol.timely").unwrap();
        let mut t = Timely::new(&p, LINE);
        t.rate = 5e9;
        t
    }

    /// Each mode's defaults (docs/rdma.md), and a key given in the file
    /// wins over the mode.
    #[test]
    fn each_mode_has_its_sources_defaults_and_a_given_key_wins() {
        let p = |mode| TimelyParams {
            mode,
            ..Default::default()
        };
        let row = |p: &TimelyParams| {
            (
                p.alpha(),
                p.beta(),
                p.min_rate_mbps(),
                p.burst(),
                p.rise_app_share(),
            )
        };
        assert_eq!(row(&p(TimelyMode::Thesis)), (0.02, 0.8, 100.0, true, 0.8));
        assert_eq!(row(&p(TimelyMode::Hpcc)), (0.875, 0.8, 1000.0, false, 0.0));
        assert_eq!(
            row(&p(TimelyMode::Patched)),
            (0.875, 0.008, 100.0, true, 0.8)
        );
        let given: TimelyParams = toml::from_str(
            "mode = \"hpcc\"\nalpha = 0.5\nbeta = 0.3\nmin_rate_mbps = 40\nburst = true\n\
             rise_app_share = 0.6\n",
        )
        .unwrap();
        assert_eq!(given.mode, TimelyMode::Hpcc);
        assert_eq!(row(&given), (0.5, 0.3, 40.0, true, 0.6));
        assert!(toml::from_str::<TimelyParams>("mode = \"fork\"\n").is_err());
        // `patched`'s reference RTT is T_low unless given.
        let mut q = p(TimelyMode::Patched);
        assert_eq!(q.patched_ref_ps(), 50 * US);
        q.patched_ref = Some(Micros::from_us(20.0));
        assert_eq!(q.patched_ref_ps(), 20 * US);
        q.patched_ref = Some(Micros::from_us(0.0));
        let e = q.validate("protocol.timely").unwrap_err().to_string();
        assert!(e.contains("protocol.timely.patched_ref_us"), "{e}");
    }

    /// `hpcc`: the first update only records the RTT; later ones run the
    /// three regions, and the 6th increase in a row, T_low's included, is
    /// a hyper increase of 5δ. A decrease resets the count.
    #[test]
    fn hpcc_records_the_first_rtt_and_counts_every_increase_towards_hai() {
        let mut t = with_mode(TimelyMode::Hpcc);
        t.on_completion(30 * US, 0);
        assert_eq!((t.rate(), t.samples), (5e9, 1));
        let mut steps = vec![];
        for i in 1..=7 {
            let r = t.rate();
            t.on_completion(30 * US, i);
            steps.push(((t.rate() - r) / 1e6).round());
        }
        assert_eq!(steps, [10.0, 10.0, 10.0, 10.0, 10.0, 50.0, 50.0]);
        // The thesis counts only the gradient region: all δ below T_low.
        let mut th = with_mode(TimelyMode::Thesis);
        for i in 0..8 {
            let r = th.rate();
            th.on_completion(30 * US, i);
            assert_eq!(((th.rate() - r) / 1e6).round(), 10.0);
        }
        // Above T_high: 1 − 0.8·(1 − 500/1000) = 0.6, and the count restarts.
        let r = t.rate();
        t.on_completion(1000 * US, 8);
        assert_eq!(t.rate(), r * 0.6);
        let r = t.rate();
        t.on_completion(30 * US, 9);
        assert_eq!(t.rate(), r + 10e6);
    }

    /// `hpcc`: a gradient so steep that 1 − βg < 0 stops at the minimum
    /// rate, 1 Gb/s by the fork's run.py.
    #[test]
    fn hpcc_clamps_a_negative_decrease_factor_to_the_minimum_rate() {
        let mut t = with_mode(TimelyMode::Hpcc);
        t.on_completion(100 * US, 0);
        // new_rtt_diff 200 µs; rtt_diff = 0.875 × 200 = 175 µs; g = 8.75.
        t.on_completion(300 * US, 1);
        assert_eq!(t.rtt_diff(), 0.875 * (200 * US) as f64);
        assert_eq!(t.rate(), 1e9);
    }

    /// [ECND]'s weight: 0 up to g = −1/4, 1 from 1/4, 2g + 1/2 between.
    #[test]
    fn the_patched_weight_is_a_clamped_line() {
        let w: Vec<f64> = [-1.0, -0.25, -0.1, 0.0, 0.1, 0.25, 3.0]
            .iter()
            .map(|&g| patched_weight(g))
            .collect();
        assert_eq!(w, [0.0, 0.0, 0.3, 0.5, 0.7, 1.0, 1.0]);
    }

    /// `patched` between T_low and T_high: rate·(1 − β·w·err) + δ·(1 − w)
    /// with err = (RTT − T_low)/T_low. At a steady 100 µs (g = 0, w = 1/2,
    /// err = 1) every flow tends to the one fixed point δ/(β·err) =
    /// 10 Mb/s / 0.008 = 1.25 Gb/s, wherever it starts. Algorithm 1 has no
    /// such point: g = 0 adds δ to every flow, and their gap stays.
    #[test]
    fn patched_flows_converge_to_one_fixed_point_and_thesis_flows_keep_their_gap() {
        let mut t = with_mode(TimelyMode::Patched);
        t.on_completion(100 * US, 0);
        assert_eq!(t.rate(), 5e9 * (1.0 - 0.008 * 0.5) + 10e6 * 0.5);
        let run = |mode, start: f64, samples: u64| {
            let mut t = with_mode(mode);
            t.rate = start;
            for i in 0..samples {
                t.on_completion(100 * US, i);
            }
            t.rate()
        };
        for start in [9e9, 0.3e9] {
            let r = run(TimelyMode::Patched, start, 5000);
            assert!((r - 1.25e9).abs() < 1e3, "{start}: {r}");
        }
        // (20 samples at g = 0: both rise by 20 plain steps, never hyper
        // increase, and stay below line rate.)
        let hi = run(TimelyMode::Thesis, 6e9, 20);
        let lo = run(TimelyMode::Thesis, 3e9, 20);
        assert_eq!((hi - 6e9, hi - lo), (200e6, 3e9));
        // With the reference at minRTT (20 µs): err = 4, δ/(β·4) = 312.5 Mb/s.
        let p = TimelyParams {
            mode: TimelyMode::Patched,
            patched_ref: Some(Micros::from_us(20.0)),
            ..Default::default()
        };
        let mut t = Timely::new(&p, LINE);
        for i in 0..5000 {
            t.on_completion(100 * US, i);
        }
        assert!((t.rate() - 312.5e6).abs() < 1e3, "{}", t.rate());
    }

    /// `hpcc`'s engine: a sample when the cumulative ACK passes the PSN
    /// that was next to send at the last one (the first ACK gives one), the
    /// bare RTT, and every packet paced at the rate.
    #[test]
    fn hpcc_samples_once_per_rtt_without_taking_serialisation_off() {
        let mut s = pacer(|p| p.mode = TimelyMode::Hpcc);
        // (bytes, cumulative ACK PSN, next PSN to send) per ACK.
        let acks = [
            (1000, 1, 10),
            (4000, 5, 14),
            (5000, 10, 19),
            (1000, 11, 20),
            (8000, 19, 28),
            (1000, 21, 29),
        ];
        let taken: Vec<bool> = acks
            .iter()
            .map(|&(b, u, n)| s.takes_sample(b, u, n))
            .collect();
        assert_eq!(taken, [true, false, false, true, false, true]);
        let mut rng = crate::rng::stream_rng(1, 2);
        assert_eq!(s.rtt(50 * US, 7, &mut rng), 50 * US - 7);
        assert!(!s.host_scheduled());
        assert_eq!(s.next_departure(0, WIRE, 1_000_000_000), WIRE * 8 * 1000);
        // The other modes sample per segment (4000 bytes here).
        let mut s = pacer(|p| p.mode = TimelyMode::Patched);
        let taken: Vec<bool> = acks
            .iter()
            .map(|&(b, u, n)| s.takes_sample(b, u, n))
            .collect();
        assert_eq!(taken, [false, true, true, false, true, true]);
    }

    #[test]
    fn bad_values_name_their_key() {
        let p = TimelyParams {
            beta: Some(-1.0),
            ..Default::default()
        };
        let e = p.validate("protocol.timely").unwrap_err();
        assert!(e.to_string().contains("protocol.timely.beta"), "{e}");
    }
}
