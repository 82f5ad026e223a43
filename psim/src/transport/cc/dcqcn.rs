//! DCQCN's reaction point (the sender's rate controller), [DCQCN] and
//! the Mellanox firmware as the public simulators model it (`HPCC`
//! `rdma-hw.cc`, `R3` `qbb-net-device.cc`; docs/references.md DQ1–DQ10).
//!
//! The controller holds the current rate Rc, the target rate Rt and the
//! congestion estimate α. CNPs (from the receiver's notification point,
//! `transport/roce/sink.rs`) cut the rate; timers and a byte counter raise
//! it again through fast recovery, additive increase and hyper increase.
//! Two families exist, and both are here, with a third reading of the
//! firmware:
//!
//! - **`firmware`** (default; the thesis ran DCQCN "as implemented in
//!   Mellanox CX-4", [TH] Ch. 4): timer-driven. A CNP only sets flags; an
//!   α timer (every `alpha_timer_us`) folds them into α, and a decrease
//!   check (every `decrease_period_us`, 1 ns after the α tick, XM4) cuts
//!   Rc := Rc·(1 − α/2) if a CNP came since the last check and restarts the
//!   rate-increase timer. The timers start at the first CNP, where α := 1.
//! - **`paper`**: event-driven ([DCQCN], `R3`). Each CNP cuts at once
//!   and restarts the α-decay and rate-increase timers; `alpha_first`
//!   picks whether α is updated before the cut (`R3`) or after it (the
//!   paper and `HT-DCQCN`; DQ1).
//! - **`isekai`**: NVIDIA's documented firmware parameters (the NV page's
//!   defaults) run by the state machine of Google's Isekai simulator
//!   (`ISK` `rdma_roce_cc_dcqcn.cc`; spec rdma-scheduling-params.md §1.4,
//!   "ISK / NV differences"). Timers as the firmware style, but: α is kept
//!   in 1/1024 steps (α := ⌊G·α/1024⌋ (+ 1024 − G on a CNP), at most
//!   1023, G = 1024(1 − g) = 1019) and rates in whole Mb/s, each step
//!   rounded down as `ISK`'s integers are; the first CNP sets Rc and Rt to
//!   `rate_on_first_cnp` of the line rate and leaves no cut waiting, and
//!   starts the rate timer too; the decrease check has no 1 ns offset (at
//!   a tie it runs before the α tick, scheduled later); a cut removes
//!   ⌊Rc·α₁₀₂₄/2¹¹⌋ (at most half, `min_dec_fac` 50, which α < 1 never
//!   reaches); the target is clamped if `clamp_target`, or after any
//!   increase since the last cut (timer or byte stage above 0,
//!   `clamp_tgt_rate_after_time_inc` 1); the byte counter (B = 32,767 × 64
//!   B) counts from the flow's first byte, before any CNP, and carries the
//!   bytes past B; R_AI and R_HAI are 5 and 50 Mb/s at any NIC rate. The
//!   receiver sends a CNP for every marked packet (`cnp_interval_us` 0).
//!
//! Increase events (the rate timer, every `rate_timer_us`, and the byte
//! counter, every `byte_counter_bytes` sent) use the stage counts t (timer)
//! and b (bytes) *before* the event: max(t, b) < F is fast recovery
//! (Rc := (Rc + Rt)/2), min(t, b) > F hyper increase (Rt += R_HAI, times
//! min(t, b) − F in the paper style), otherwise additive increase
//! (Rt += R_AI), each then Rc := (Rc + Rt)/2; with the byte counter off b
//! follows t (`HPCC`: stage < F, = F, > F). Rt never exceeds the line rate
//! and Rc never falls below `min_rate_mbps`.
//!
//! **Lazy timers** (XM1): no timer event is ever scheduled. Each input (a
//! CNP, a transmission, the sender's next departure through
//! `on_timer(now)`) first applies every tick that fell due up to `now`, in
//! time order (at equal times the tick scheduled first, as the simulators'
//! event queues run them: `Dcqcn::tie_rank`), then itself; a tick at
//! exactly the time of a CNP comes before it. An idle flow costs nothing,
//! and the rates equal those of periodic timers (see the test
//! `lazy_timers_match_periodic_ones`).
//!
//! The sender must call `on_timer(now)` before `on_ecn` (a CNP) so that the
//! CNP is applied at the right time, and reports its transmissions through
//! [`Dcqcn::on_transmit`] (the byte counter; `CongestionControl` has no hook
//! for sent bytes).
//!
//! | key (`[protocol.dcqcn]`) | firmware default | paper default | isekai default | source |
//! |---|---|---|---|---|
//! | `style` | `"firmware"` | | | [TH] Ch. 4 (CX-4); `HPCC` "Mellanox's version" |
//! | `g` | 1/256 | 1/256 | 5/1024 (a multiple of 1/1024) | `HPCC`/`CW` run.py; [DCQCN] (2nd-hand), `HT-DCQCN`; NV `dce_tcp_g` 1019 |
//! | `alpha_timer_us` | 1 | 55 | 1 | `HPCC` run.py / NV `dce_tcp_rtt`; [DCQCN] (2nd-hand), `R3` |
//! | `decrease_period_us` | 4 | (not used) | 4 | `HPCC`, NV `rate_reduce_monitor_period` |
//! | `rate_timer_us` (T) | 300 | 55 | 300 | `HPCC` run.py, NV `rpg_time_reset`; [DCQCN] (2nd-hand) |
//! | `byte_counter_bytes` (B, 0 = off) | 0 | 10 MB | 2,097,088 | `HPCC` (none); [DCQCN] via `HT-DCQCN`, `R3` issue 9; NV `rpg_byte_reset` 32,767 × 64 B (`ISK`) |
//! | `fast_recovery_stages` (F) | 1 | 5 | 1 | `HPCC` run.py, NV `rpg_threshold`; [DCQCN] |
//! | `rate_ai_mbps` (R_AI) | 5 Mb/s per 25 Gb/s of NIC rate | 40 Mb/s per 40 Gb/s | 5 (whole Mb/s) | `HPCC` run.py (5×B/25) = NV 5 Mb/s at 25G; [DCQCN] 40 at 40G (2nd-hand); NV `rpg_ai_rate` |
//! | `rate_hai_mbps` (R_HAI) | 50 Mb/s per 25 Gb/s | 200 Mb/s per 40 Gb/s | 50 (whole Mb/s) | `HPCC` run.py; `R3` config.txt; NV `rpg_hai_rate` |
//! | `min_rate_mbps` | 100 | 100 | 1 (whole Mb/s) | `HPCC`, `CW` (run.py's 1000 is a template value, XM3); NV `rpg_min_rate` |
//! | `initial_alpha` | 1 (set at the first CNP) | 1 | 1023/1024 | `HPCC`; `HT-DCQCN` (`R3`: 0.5); NV `initial_alpha_value` |
//! | `alpha_first` | (timer order) | false | (timer order) | [DCQCN] order, cut then α (DQ1); `R3`: true |
//! | `clamp_target` | false | true | false | `HPCC` `ClampTargetRate`; [DCQCN] (Rt := Rc at every cut); NV `clamp_tgt_rate` |
//! | `rate_on_first_cnp` | 1.0 | (not used) | 0.85 of the line rate | `HPCC` (DQ3; CX-4 uses 0); `ISK`'s 85,000 Mb/s at its 100 Gb/s line rate (HPCC issue 11) |
//! | `r3_increase` | (not allowed) | false | (not allowed) | `R3` `qbb-net-device.cc`'s increase path, below |
//! | `shift_pending_departure` | false | false | false | `HPCC` (no shift for DCQCN); forks' `ChangeRate` after increase events (below) |
//!
//! **`r3_increase`** (paper style only) runs the increase path as `R3`'s
//! code does, where it differs from `HT-DCQCN`'s (the default above):
//! - a stage counter is raised *before* its event is judged, and the event
//!   follows the controller's phase (fast recovery, additive, hyper) as
//!   `R3` keeps it: in fast recovery a counter below F only averages Rc
//!   toward Rt, else it selects; in additive increase the timer selects
//!   (additive while either counter is below F, else hyper) and the byte
//!   counter adds R_AI; in hyper increase both add R_HAI × (min(t, b) − F
//!   + 1);
//! - in hyper increase the rate timer runs at T/2 and the byte counter at
//!   B/2;
//! - the "target/8" quirk: when either counter is 1 and Rt > 10 Rc, Rt is
//!   divided by 8 instead of raised (`R3` issue 40 asks where the 8 comes
//!   from; unanswered);
//! - Rt is not capped at the line rate (Rc is).
//!
//! With the byte counter off (0) b follows t, as above (`R3` has no off:
//! its config's 300 MB keeps b at 0, i.e. additive increase for ever; set
//! `byte_counter_bytes` so to match it).
//!
//! **`shift_pending_departure`** (off by default). After each packet the
//! sender's next departure is one packet's time at the current rate later.
//! By default a later change of Rc leaves that departure where it is, as
//! the original `HPCC` code does for DCQCN (its Mellanox functions assign
//! the rate; only HPCC's own update calls `ChangeRate`). Some forks call
//! `ChangeRate` after DCQCN's increase events as well: the pending
//! departure moves by the difference of one packet's time at the new and
//! the old rate. On, every change of Rc does that (a cut, an increase by
//! the timer or the byte counter); the sender wakes at a timer-driven
//! change only while a departure waits for it (`next_rate_change`), so an
//! idle flow still costs nothing. It matters at low rates: at the 100 Mb/s
//! floor a 1 KB packet's gap is 85 µs, which an increase would otherwise
//! not shorten.
//!
//! `ISK` runs each timer's work in a second event of the same time (a
//! zero-delay QP-context lookup); that keeps the timers' order, so psim
//! runs the work at the tick.

use super::{AckEvent, CcMetrics, CongestionControl, Loss};
use crate::config::ConfigError;
use crate::transport::config::{bad, Micros};
use crate::units::PS_PER_NS;

/// The two families of DCQCN implementations (docs/references.md DQ1),
/// and `ISK`'s reading of the NVIDIA firmware's parameters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// Mellanox firmware: α and decrease timers consume CNP flags.
    #[default]
    Firmware,
    /// [DCQCN] paper / QCN: each CNP cuts at once.
    Paper,
    /// NVIDIA's documented parameters run as `ISK` runs them: timers as
    /// the firmware style, with α in 1/1024 steps, whole Mb/s rates, a
    /// first CNP that sets the rate, and a byte counter (module docs).
    Isekai,
}

impl Style {
    /// The style's value among (firmware, paper, isekai) defaults.
    fn pick<T>(self, firmware: T, paper: T, isekai: T) -> T {
        match self {
            Style::Firmware => firmware,
            Style::Paper => paper,
            Style::Isekai => isekai,
        }
    }
}

/// `[protocol.dcqcn]`; unset keys take the style's default (table above).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnParams {
    /// `firmware` or `paper`.
    pub style: Style,
    /// EWMA gain of α.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub g: Option<f64>,
    /// α timer period (`alpha_timer_us`).
    #[serde(rename = "alpha_timer_us", skip_serializing_if = "Option::is_none")]
    pub alpha_timer: Option<Micros>,
    /// Firmware decrease-check period (`decrease_period_us`).
    #[serde(rename = "decrease_period_us", skip_serializing_if = "Option::is_none")]
    pub decrease_period: Option<Micros>,
    /// Rate-increase timer T (`rate_timer_us`).
    #[serde(rename = "rate_timer_us", skip_serializing_if = "Option::is_none")]
    pub rate_timer: Option<Micros>,
    /// Byte counter B, bytes sent per increase event; 0 turns it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_counter_bytes: Option<u64>,
    /// Fast-recovery stages F.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_recovery_stages: Option<u32>,
    /// Additive step R_AI, Mb/s (default scales with the NIC rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_ai_mbps: Option<f64>,
    /// Hyper step R_HAI, Mb/s (default scales with the NIC rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_hai_mbps: Option<f64>,
    /// Lowest rate, Mb/s (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rate_mbps: Option<f64>,
    /// α at the first CNP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_alpha: Option<f64>,
    /// Paper style: update α before the cut (`R3`) instead of after it.
    pub alpha_first: bool,
    /// Set Rt := Rc at every cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamp_target: Option<bool>,
    /// Firmware: Rc and Rt := this fraction of Rc at the first CNP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_on_first_cnp: Option<f64>,
    /// Paper style: the increase path as `R3`'s code runs it (module docs).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub r3_increase: bool,
    /// Every change of Rc shifts the sender's pending departure to one
    /// packet's time at the new rate after the last departure (module docs).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shift_pending_departure: bool,
}

/// Every constant of one controller, resolved from the section and the NIC rate.
#[derive(Copy, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DcqcnConfig {
    /// Style.
    pub style: Style,
    /// EWMA gain.
    pub g: f64,
    /// α timer, ps.
    pub alpha_timer: u64,
    /// Decrease check, ps.
    pub decrease_period: u64,
    /// Rate timer T, ps.
    pub rate_timer: u64,
    /// Byte counter B (0: off).
    pub byte_counter: u64,
    /// F.
    pub f: u32,
    /// R_AI, b/s.
    pub r_ai: f64,
    /// R_HAI, b/s.
    pub r_hai: f64,
    /// Minimum rate, b/s.
    pub min_rate: f64,
    /// α at the first CNP.
    pub initial_alpha: f64,
    /// α before the cut (paper style).
    pub alpha_first: bool,
    /// Rt := Rc at every cut.
    pub clamp_target: bool,
    /// Fraction of Rc kept at the first CNP (firmware).
    pub rate_on_first_cnp: f64,
    /// `R3`'s increase path (paper style).
    pub r3_increase: bool,
    /// A change of Rc shifts the pending departure.
    pub shift_pending_departure: bool,
    /// Line rate, b/s.
    pub line: f64,
}

impl DcqcnParams {
    /// Checks the section; `key` is `protocol.dcqcn`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        let unit = |name: &str, v: Option<f64>, lo_open: bool| match v {
            Some(x) if x.is_nan() || !(0.0..=1.0).contains(&x) || (lo_open && x == 0.0) => {
                Err(bad(
                    &k(name),
                    x,
                    if lo_open {
                        "must be in (0, 1]"
                    } else {
                        "must be in [0, 1]"
                    },
                ))
            }
            _ => Ok(()),
        };
        unit("g", self.g, true)?;
        unit("initial_alpha", self.initial_alpha, false)?;
        unit("rate_on_first_cnp", self.rate_on_first_cnp, true)?;
        for (name, t) in [
            ("alpha_timer_us", self.alpha_timer),
            ("decrease_period_us", self.decrease_period),
            ("rate_timer_us", self.rate_timer),
        ] {
            if let Some(t) = t {
                t.positive(&k(name))?;
            }
        }
        for (name, v) in [
            ("rate_ai_mbps", self.rate_ai_mbps),
            ("rate_hai_mbps", self.rate_hai_mbps),
            ("min_rate_mbps", self.min_rate_mbps),
        ] {
            if let Some(x) = v {
                if x.is_nan() || x < 0.0 || (name == "min_rate_mbps" && x == 0.0) {
                    return Err(ConfigError::NonPositiveRate {
                        key: k(name),
                        value: x,
                    });
                }
            }
        }
        if self.fast_recovery_stages == Some(0) {
            return Err(bad(&k("fast_recovery_stages"), 0, "must be at least 1"));
        }
        if self.style == Style::Isekai {
            if let Some(g) = self.g {
                if (g * 1024.0).fract() != 0.0 {
                    return Err(bad(
                        &k("g"),
                        g,
                        "the isekai style keeps alpha in 1/1024 steps: give a multiple of 1/1024 (NV's dce_tcp_g = 1019 is g = 5/1024)",
                    ));
                }
            }
            for (name, v) in [
                ("rate_ai_mbps", self.rate_ai_mbps),
                ("rate_hai_mbps", self.rate_hai_mbps),
                ("min_rate_mbps", self.min_rate_mbps),
            ] {
                if let Some(x) = v.filter(|x| x.fract() != 0.0) {
                    return Err(bad(
                        &k(name),
                        x,
                        "the isekai style keeps rates in whole Mb/s: give a whole number",
                    ));
                }
            }
        }
        if self.r3_increase && self.style != Style::Paper {
            return Err(bad(
                &k("r3_increase"),
                true,
                "R3's increase path is the paper style's: set style = \"paper\", or remove it",
            ));
        }
        Ok(())
    }

    /// The section with the style's defaults written out (the manifest's
    /// `config`, and [`Self::resolve`]). R_AI and R_HAI stay unset when not
    /// given: their default scales with each NIC's rate.
    pub fn resolved(&self) -> Self {
        let style = self.style;
        let us = |v: Option<Micros>, fw: u64, paper: u64, isk: u64| {
            Some(v.unwrap_or(Micros::from_ps(style.pick(fw, paper, isk) * 1_000_000)))
        };
        DcqcnParams {
            g: Some(
                self.g
                    .unwrap_or(style.pick(1.0 / 256.0, 1.0 / 256.0, 5.0 / 1024.0)),
            ),
            alpha_timer: us(self.alpha_timer, 1, 55, 1),
            decrease_period: us(self.decrease_period, 4, 4, 4),
            rate_timer: us(self.rate_timer, 300, 55, 300),
            byte_counter_bytes: Some(self.byte_counter_bytes.unwrap_or(style.pick(
                0,
                10_000_000,
                ISEKAI_BYTE_RESET * 64,
            ))),
            fast_recovery_stages: Some(self.fast_recovery_stages.unwrap_or(style.pick(1, 5, 1))),
            min_rate_mbps: Some(self.min_rate_mbps.unwrap_or(style.pick(100.0, 100.0, 1.0))),
            initial_alpha: Some(self.initial_alpha.unwrap_or(style.pick(
                1.0,
                1.0,
                1023.0 / 1024.0,
            ))),
            clamp_target: Some(self.clamp_target.unwrap_or(style.pick(false, true, false))),
            rate_on_first_cnp: Some(self.rate_on_first_cnp.unwrap_or(style.pick(1.0, 1.0, 0.85))),
            ..self.clone()
        }
    }

    /// The constants for a NIC of `line_bps`.
    pub fn resolve(&self, line_bps: u64) -> DcqcnConfig {
        let r = self.resolved();
        let ps = |v: Option<Micros>| v.expect("resolved").ps;
        let gbps = line_bps as f64 / 1e9;
        // Steps scale with the NIC rate (HPCC run.py: 5 and 50 Mb/s per 25 Gb/s;
        // the paper's 40 Mb/s and R3's 200 Mb/s at 40 Gb/s); NV's are 5 and 50
        // Mb/s whatever the rate.
        let (ai, hai) = match self.style {
            Style::Firmware => (5.0 / 25.0 * gbps, 50.0 / 25.0 * gbps),
            Style::Paper => (gbps, 5.0 * gbps),
            Style::Isekai => (5.0, 50.0),
        };
        let line = line_bps as f64;
        let set = "resolved";
        DcqcnConfig {
            style: self.style,
            g: r.g.expect(set),
            alpha_timer: ps(r.alpha_timer),
            decrease_period: ps(r.decrease_period),
            rate_timer: ps(r.rate_timer),
            byte_counter: r.byte_counter_bytes.expect(set),
            f: r.fast_recovery_stages.expect(set),
            r_ai: self.rate_ai_mbps.unwrap_or(ai) * 1e6,
            r_hai: self.rate_hai_mbps.unwrap_or(hai) * 1e6,
            min_rate: (r.min_rate_mbps.expect(set) * 1e6).min(line),
            initial_alpha: r.initial_alpha.expect(set),
            alpha_first: self.alpha_first,
            clamp_target: r.clamp_target.expect(set),
            rate_on_first_cnp: r.rate_on_first_cnp.expect(set),
            r3_increase: self.r3_increase,
            shift_pending_departure: self.shift_pending_departure,
            line,
        }
    }
}

/// `ISK`'s `byte_reset` (NV `rpg_byte_reset`), in 64-byte units.
const ISEKAI_BYTE_RESET: u64 = 32_767;

/// A DCQCN timer, for ordering ticks due at the same time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tick {
    Alpha,
    Decrease,
    Increase,
}

/// `r3_increase`'s phase, as `R3` keeps it (its `m_rpStage`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum R3Phase {
    /// Fast recovery.
    #[default]
    Fast,
    /// Additive increase.
    Active,
    /// Hyper increase.
    Hyper,
}

/// One flow's reaction point.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Dcqcn {
    c: DcqcnConfig,
    /// Current rate Rc, b/s.
    rc: f64,
    /// Target rate Rt, b/s.
    rt: f64,
    alpha: f64,
    /// The first CNP arrived: the timers run.
    started: bool,
    /// Firmware: a CNP came since the last α tick / decrease check.
    alpha_flag: bool,
    dec_flag: bool,
    /// Next α tick and decrease check (valid once started), next increase.
    next_alpha: u64,
    next_dec: u64,
    next_inc: Option<u64>,
    /// Increase stages since the last cut: timer, byte counter.
    t_stage: u32,
    b_stage: u32,
    /// Bytes left before the next byte-counter event.
    bytes_left: u64,
    /// `r3_increase`: the phase.
    r3_phase: R3Phase,
    /// Time up to which ticks have been applied.
    now: u64,
    /// CNPs received.
    pub cnps: u64,
}

impl Dcqcn {
    /// A controller at line rate, no timers running.
    pub fn new(c: DcqcnConfig) -> Self {
        Dcqcn {
            c,
            rc: c.line,
            rt: c.line,
            alpha: c.initial_alpha,
            started: false,
            alpha_flag: false,
            dec_flag: false,
            next_alpha: 0,
            next_dec: 0,
            next_inc: None,
            t_stage: 0,
            b_stage: 0,
            bytes_left: c.byte_counter,
            r3_phase: R3Phase::Fast,
            now: 0,
            cnps: 0,
        }
    }

    /// Current rate Rc, b/s.
    pub fn rate(&self) -> f64 {
        self.rc
    }
    /// Target rate Rt, b/s.
    pub fn target(&self) -> f64 {
        self.rt
    }
    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether a change of Rc shifts the sender's pending departure
    /// (`shift_pending_departure`).
    pub fn shifts_pending_departure(&self) -> bool {
        self.c.shift_pending_departure
    }

    /// The next time a timer may change Rc: a firmware decrease check with
    /// a CNP waiting for it, or the rate-increase timer (α ticks leave Rc
    /// alone). None before the first CNP. Lets a sender that shifts its
    /// pending departure wake for it, and only while a departure waits.
    pub fn next_rate_change(&self) -> Option<u64> {
        if !self.started {
            return None;
        }
        [self.armed_check(), self.next_inc]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next firmware decrease check that will act: only while a CNP
    /// waits for it (a check without one changes nothing, so it is never
    /// run).
    fn armed_check(&self) -> Option<u64> {
        (self.c.style != Style::Paper && self.dec_flag).then_some(self.next_dec)
    }

    /// Applies every timer tick due up to `now`, in time order; at equal
    /// times, in the order the timers' own simulators run them (see
    /// [`Self::tie_rank`]).
    pub fn advance(&mut self, now: u64) {
        if now < self.now {
            return;
        }
        self.now = now;
        if !self.started {
            return;
        }
        loop {
            let due = [
                (Some(self.next_alpha), Tick::Alpha),
                (self.armed_check(), Tick::Decrease),
                (self.next_inc, Tick::Increase),
            ];
            let Some((t, tick)) = due
                .into_iter()
                .filter_map(|(at, k)| Some((at?, k)))
                .min_by_key(|&(at, k)| (at, self.tie_rank(k)))
            else {
                return;
            };
            if t > now {
                return;
            }
            match tick {
                Tick::Alpha => {
                    self.alpha_step();
                    self.next_alpha += self.c.alpha_timer;
                }
                Tick::Decrease => {
                    self.decrease_step();
                    self.next_dec += self.c.decrease_period;
                    self.next_inc = Some(t + self.c.rate_timer);
                }
                Tick::Increase => {
                    let period = self.increase_step();
                    self.next_inc = Some(t + period);
                }
            }
        }
    }

    /// The order of timer ticks due at the same time: the one scheduled
    /// first runs first, as in the event queues of `HPCC` (ns-3) and `R3`,
    /// which run events of equal time in the order they were scheduled. A
    /// periodic tick at t was scheduled at t − its period, so the longest
    /// period goes first: in the firmware style, a rate-timer event (T =
    /// 300 µs, scheduled at the last cut) before a decrease check due at
    /// the same time (each 300 µs after a cut lands on a check, as T is a
    /// multiple of the 4 µs period). Equal periods (the paper style's α and
    /// rate timers, 55 µs, both restarted by each CNP) go α, decrease,
    /// increase, the order a CNP starts them in. The rate timer's period is
    /// taken as T (`r3_increase`'s T/2 in hyper increase only changes
    /// the order against an α timer shorter than T/2).
    fn tie_rank(&self, k: Tick) -> (std::cmp::Reverse<u64>, Tick) {
        let period = match k {
            Tick::Alpha => self.c.alpha_timer,
            Tick::Decrease => self.c.decrease_period,
            Tick::Increase => self.c.rate_timer,
        };
        (std::cmp::Reverse(period), k)
    }

    /// A CNP at `now` (after the ticks due by then).
    pub fn on_cnp(&mut self, now: u64) {
        self.advance(now);
        let first = !self.started;
        self.cnp_step();
        match self.c.style {
            Style::Paper => {
                self.next_alpha = now + self.c.alpha_timer;
                self.next_inc = Some(now + self.c.rate_timer);
            }
            _ if !first => self.skip_idle_checks(now),
            Style::Firmware => {
                self.next_alpha = now + self.c.alpha_timer;
                // HPCC's +1 ns puts the check after an α tick of the same time (XM4).
                self.next_dec = now + self.c.decrease_period + PS_PER_NS;
            }
            // `ISK` starts all three timers at the first CNP, the check
            // without HPCC's 1 ns (a tie with an α tick goes by `tie_rank`).
            Style::Isekai => {
                self.next_alpha = now + self.c.alpha_timer;
                self.next_dec = now + self.c.decrease_period;
                self.next_inc = Some(now + self.c.rate_timer);
            }
        }
    }

    /// Moves the next decrease check to the first one after `now`: checks
    /// without a CNP flag did nothing, so they were never run.
    fn skip_idle_checks(&mut self, now: u64) {
        if self.next_dec <= now {
            let behind = (now - self.next_dec) / self.c.decrease_period + 1;
            self.next_dec += behind * self.c.decrease_period;
        }
    }

    /// `bytes` sent at `now`: the byte counter. `ISK` counts from the
    /// flow's first byte (before any CNP) and carries the bytes past B into
    /// the next count; the others start at the first CNP and drop them.
    pub fn on_transmit(&mut self, bytes: u64, now: u64) {
        self.advance(now);
        let isekai = self.c.style == Style::Isekai;
        if (!self.started && !isekai) || self.c.byte_counter == 0 {
            return;
        }
        let mut sent = bytes;
        while sent >= self.bytes_left {
            sent -= self.bytes_left;
            self.bytes_left = self.c.byte_counter;
            if self.c.r3_increase {
                self.r3_byte_event();
            } else {
                self.increase(self.b_stage, self.t_stage);
                self.b_stage += 1;
            }
            if !isekai {
                // One event per packet; `r3_increase` may have set B/2 (0
                // when B = 1), which must not loop.
                return;
            }
        }
        self.bytes_left -= sent;
    }

    /// What a CNP changes, without any timer bookkeeping.
    fn cnp_step(&mut self) {
        self.cnps += 1;
        let first = !self.started;
        self.started = true;
        match self.c.style {
            Style::Firmware => {
                self.dec_flag = true;
                if first {
                    // α := 1 and its flag cleared: the first tick decays it (HPCC).
                    self.alpha = self.c.initial_alpha;
                    self.alpha_flag = false;
                    self.rc *= self.c.rate_on_first_cnp;
                    self.rt = self.rc;
                } else {
                    self.alpha_flag = true;
                }
            }
            Style::Isekai => {
                self.alpha_flag = true;
                self.dec_flag = true;
                if first {
                    // α := its initial value, no flag: the first tick decays
                    // it; Rc and Rt := the first-CNP rate, and no cut waits.
                    self.alpha = to_1024(self.c.initial_alpha) as f64 / 1024.0;
                    self.alpha_flag = false;
                    self.rc = (self.c.line / 1e6 * self.c.rate_on_first_cnp).round() * 1e6;
                    self.rt = self.rc;
                    self.dec_flag = false;
                }
            }
            Style::Paper => {
                if first {
                    self.alpha = self.c.initial_alpha;
                }
                if self.c.clamp_target {
                    self.rt = self.rc;
                }
                self.t_stage = 0;
                self.b_stage = 0;
                self.bytes_left = self.c.byte_counter;
                self.r3_phase = R3Phase::Fast;
                let g = self.c.g;
                if self.c.alpha_first {
                    self.alpha = (1.0 - g) * self.alpha + g;
                    self.cut();
                } else {
                    self.cut();
                    self.alpha = (1.0 - g) * self.alpha + g;
                }
            }
        }
    }

    fn cut(&mut self) {
        self.rc = match self.c.style {
            // `ISK`: Rc·α₁₀₂₄ >> 11 in whole Mb/s, at most half of Rc
            // (`min_dec_fac` 50; with α ≤ 1023/1024 it never binds).
            Style::Isekai => {
                let (rc, a) = (to_mbps(self.rc), to_1024(self.alpha));
                let cut = ((rc * a) >> 11).min(rc * 50 / 100);
                ((rc - cut) as f64 * 1e6).max(self.c.min_rate)
            }
            _ => (self.rc * (1.0 - self.alpha / 2.0)).max(self.c.min_rate),
        };
    }

    /// One α tick: firmware folds in the CNP flag, paper only decays.
    fn alpha_step(&mut self) {
        if self.c.style == Style::Isekai {
            return self.alpha_step_1024();
        }
        let g = self.c.g;
        let hit = self.c.style == Style::Firmware && self.alpha_flag;
        self.alpha = if hit {
            (1.0 - g) * self.alpha + g
        } else {
            (1.0 - g) * self.alpha
        };
        self.alpha_flag = false;
    }

    /// `ISK`'s α tick, in 1/1024 steps, rounding down, at most 1023/1024.
    /// Out of line: the 1 µs α tick is DCQCN's most frequent work, and
    /// the other styles should not carry this branch's code.
    #[inline(never)]
    fn alpha_step_1024(&mut self) {
        let keep = 1024 - to_1024(self.c.g);
        let a = keep * to_1024(self.alpha) / 1024;
        let a = if self.alpha_flag {
            (a + 1024 - keep).min(1023)
        } else {
            a
        };
        self.alpha = a as f64 / 1024.0;
        self.alpha_flag = false;
    }

    /// One firmware decrease check; whether it cut (then the rate timer restarts).
    fn decrease_step(&mut self) -> bool {
        if !self.dec_flag {
            return false;
        }
        // `HPCC` clamps after a timer increase; `ISK` after either kind.
        let increased = match self.c.style {
            Style::Isekai => self.t_stage > 0 || self.b_stage > 0,
            _ => self.t_stage != 0,
        };
        if self.c.clamp_target || increased {
            self.rt = self.rc;
        }
        self.cut();
        self.t_stage = 0;
        self.b_stage = 0;
        self.bytes_left = self.c.byte_counter;
        self.dec_flag = false;
        true
    }

    /// One rate-timer event; the time to the next one.
    fn increase_step(&mut self) -> u64 {
        if self.c.r3_increase {
            return self.r3_timer_event();
        }
        self.increase(self.t_stage, self.b_stage);
        self.t_stage += 1;
        self.c.rate_timer
    }

    /// `r3_increase`: the byte counter's stage (the timer's when it is off).
    fn r3_b(&self) -> u32 {
        match self.c.byte_counter {
            0 => self.t_stage,
            _ => self.b_stage,
        }
    }

    /// `r3_increase`: a rate-timer event, by the phase it finds; the time
    /// to the next (T/2 in hyper increase).
    fn r3_timer_event(&mut self) -> u64 {
        self.t_stage += 1;
        match self.r3_phase {
            R3Phase::Hyper => {
                self.r3_hyper();
                self.c.rate_timer / 2
            }
            R3Phase::Active => {
                self.r3_select();
                self.c.rate_timer
            }
            R3Phase::Fast => {
                if self.t_stage < self.c.f {
                    self.r3_adjust(0.0);
                } else {
                    self.r3_select();
                }
                self.c.rate_timer
            }
        }
    }

    /// `r3_increase`: a byte-counter event (the counter already refilled
    /// to B; B/2 in hyper increase).
    fn r3_byte_event(&mut self) {
        self.b_stage += 1;
        match self.r3_phase {
            R3Phase::Hyper => {
                self.bytes_left = self.c.byte_counter / 2;
                self.r3_hyper();
            }
            R3Phase::Active => self.r3_adjust(self.c.r_ai),
            R3Phase::Fast if self.b_stage < self.c.f => self.r3_adjust(0.0),
            R3Phase::Fast => self.r3_select(),
        }
    }

    /// `r3_increase`: additive while either stage is below F, else hyper.
    fn r3_select(&mut self) {
        if self.r3_b() < self.c.f || self.t_stage < self.c.f {
            self.r3_adjust(self.c.r_ai);
            self.r3_phase = R3Phase::Active;
        } else {
            self.r3_hyper();
        }
    }

    /// `r3_increase`: hyper increase, R_HAI × (min(t, b) − F + 1).
    fn r3_hyper(&mut self) {
        let n = (self.t_stage.min(self.r3_b()) + 1).saturating_sub(self.c.f);
        self.r3_adjust(n as f64 * self.c.r_hai);
        self.r3_phase = R3Phase::Hyper;
    }

    /// `r3_increase`: Rt += `inc` (or the target/8 quirk), then Rc halves
    /// its gap to Rt, capped at the line rate; Rt is not capped.
    fn r3_adjust(&mut self, inc: f64) {
        if (self.r3_b() == 1 || self.t_stage == 1) && self.rt > 10.0 * self.rc {
            self.rt /= 8.0;
        } else {
            self.rt += inc;
        }
        self.rc = ((self.rc + self.rt) / 2.0).min(self.c.line);
    }

    /// An increase event with the firing counter's stage `own` and the other's `other`.
    fn increase(&mut self, own: u32, other: u32) {
        let other = if self.c.byte_counter == 0 { own } else { other };
        let (lo, hi, f) = (own.min(other), own.max(other), self.c.f);
        if hi < f {
            // Fast recovery: Rt unchanged.
        } else if lo > f {
            let n = match self.c.style {
                Style::Firmware | Style::Isekai => 1,
                Style::Paper => lo - f,
            };
            self.rt += n as f64 * self.c.r_hai;
        } else {
            self.rt += self.c.r_ai;
        }
        self.rt = self.rt.min(self.c.line);
        self.rc = match self.c.style {
            Style::Isekai => ((to_mbps(self.rc) + to_mbps(self.rt)) / 2) as f64 * 1e6,
            _ => ((self.rc + self.rt) / 2.0).min(self.c.line),
        };
    }
}

/// A rate in b/s as whole Mb/s, rounded down (`ISK`'s integer rates).
fn to_mbps(bps: f64) -> u64 {
    (bps / 1e6) as u64
}

/// A fraction in 1/1024 steps, rounded down (`ISK`'s α and gain).
fn to_1024(x: f64) -> u64 {
    (x * 1024.0) as u64
}

impl CongestionControl for Dcqcn {
    fn window(&self) -> f64 {
        f64::INFINITY
    }
    fn pacing_bps(&self) -> Option<u64> {
        Some((self.rc as u64).max(1))
    }
    fn on_timer(&mut self, now: u64) {
        self.advance(now);
    }
    /// A CNP (the sender's `ece`), at the time of the last `on_timer`.
    fn on_ecn(&mut self, ack: &AckEvent, _may_cut: bool) -> bool {
        if ack.ece {
            self.on_cnp(self.now);
        }
        ack.ece
    }
    fn on_ack(&mut self, _ack: &AckEvent) {}
    fn on_loss(&mut self, _loss: Loss, _flight: u64) {}
    fn on_recovery_end(&mut self) {}
    fn limit(&mut self, _max: f64) {}
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: f64::INFINITY,
            ssthresh: f64::INFINITY,
            alpha: Some(self.alpha),
            rate_bps: Some(self.rc as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000_000;
    const LINE: u64 = 40_000_000_000;

    fn ctl(p: DcqcnParams) -> Dcqcn {
        p.validate("protocol.dcqcn").unwrap();
        Dcqcn::new(p.resolve(LINE))
    }

    fn paper(alpha_first: bool) -> DcqcnParams {
        DcqcnParams {
            style: Style::Paper,
            alpha_first,
            ..Default::default()
        }
    }

    #[test]
    fn paper_cnp_cuts_by_half_alpha_in_either_order() {
        let g = 1.0 / 256.0;
        // Cut first: α = 1 at the cut, updated after.
        let mut d = ctl(paper(false));
        d.on_cnp(10 * US);
        assert_eq!(d.rate(), LINE as f64 * 0.5);
        assert_eq!(d.target(), LINE as f64);
        assert_eq!(d.alpha(), (1.0 - g) + g);
        // α first: the cut uses the updated α; start from α = 0.5 (R3).
        let mut d = ctl(DcqcnParams {
            initial_alpha: Some(0.5),
            ..paper(true)
        });
        d.on_cnp(10 * US);
        let a = (1.0 - g) * 0.5 + g;
        assert_eq!(d.alpha(), a);
        assert_eq!(d.rate(), LINE as f64 * (1.0 - a / 2.0));
        let mut d = ctl(DcqcnParams {
            initial_alpha: Some(0.5),
            ..paper(false)
        });
        d.on_cnp(10 * US);
        assert_eq!(d.rate(), LINE as f64 * 0.75);
    }

    #[test]
    fn paper_fast_recovery_halves_the_gap_for_f_periods_then_adds() {
        let mut d = ctl(paper(false));
        d.on_cnp(0);
        let (rt, mut rc) = (d.target(), d.rate());
        assert_eq!(rt, LINE as f64);
        let cfg = d.c;
        for k in 1..=5u64 {
            d.advance(k * 55 * US);
            rc = (rc + rt) / 2.0;
            assert_eq!(d.rate(), rc, "FR step {k}");
            assert_eq!(d.target(), rt);
        }
        // The 6th event is additive increase, but Rt is capped at the line rate.
        d.advance(6 * 55 * US);
        assert_eq!(d.target(), LINE as f64);
        assert!(cfg.r_ai > 0.0);
        // Nothing due in between: no change.
        let before = d.rate();
        d.advance(6 * 55 * US + 54 * US);
        assert_eq!(d.rate(), before);
    }

    #[test]
    fn paper_additive_then_hyper_increase_below_line_rate() {
        // Two CNPs: the second clamps Rt to the already cut Rc.
        let mut d = ctl(DcqcnParams {
            byte_counter_bytes: Some(0),
            ..paper(false)
        });
        d.on_cnp(0);
        d.on_cnp(US);
        let rt0 = d.target();
        assert!(rt0 < LINE as f64);
        let (ai, hai) = (d.c.r_ai, d.c.r_hai);
        d.advance(US + 5 * 55 * US);
        assert_eq!(d.target(), rt0);
        d.advance(US + 6 * 55 * US);
        assert_eq!(d.target(), rt0 + ai);
        d.advance(US + 7 * 55 * US);
        assert_eq!(d.target(), rt0 + ai + hai);
        d.advance(US + 8 * 55 * US);
        assert_eq!(d.target(), rt0 + ai + hai + 2.0 * hai);
    }

    fn r3(f: u32, byte_counter: u64, clamp: bool) -> DcqcnParams {
        DcqcnParams {
            r3_increase: true,
            fast_recovery_stages: Some(f),
            byte_counter_bytes: Some(byte_counter),
            clamp_target: Some(clamp),
            ..paper(false)
        }
    }

    /// `r3_increase` by hand, F = 1, B = 10 kB, T = 55 µs, at 40 Gb/s
    /// (R_AI 40 Mb/s, R_HAI 200 Mb/s). A CNP at 0: Rt := Rc = 40G, Rc cut
    /// to 20G. 10 kB sent at 1 µs: b = 1, fast recovery with b ≥ F selects:
    /// t = 0 < F, so additive. The timer at 55 µs: t = 1, additive phase
    /// selects: both ≥ F, hyper by R_HAI × (1 − 1 + 1). 10 kB at 60 µs: b
    /// = 2, hyper by R_HAI × min(2, 1), and the counter refills to B/2: the
    /// next event comes 5,000 B later, at 62 µs. The timer at 110 µs (T: it
    /// was armed in the additive phase): t = 2, hyper by 2 R_HAI, and the
    /// next timer comes T/2 later, at 137.5 µs: 3 R_HAI. Rc halves its gap
    /// to Rt each time, capped at 40G; Rt runs past it.
    #[test]
    fn r3_increase_by_hand() {
        let mut d = ctl(r3(1, 10_000, true));
        let (ai, hai, line) = (d.c.r_ai, d.c.r_hai, LINE as f64);
        assert_eq!((ai, hai), (40e6, 200e6));
        d.on_cnp(0);
        let (mut rt, mut rc) = (line, line / 2.0);
        assert_eq!((d.target(), d.rate()), (rt, rc));
        let step = |rt: &mut f64, rc: &mut f64, inc: f64| {
            *rt += inc;
            *rc = ((*rc + *rt) / 2.0).min(line);
        };
        d.on_transmit(10_000, US);
        step(&mut rt, &mut rc, ai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "additive by bytes");
        d.advance(55 * US);
        step(&mut rt, &mut rc, hai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "hyper by the timer");
        d.on_transmit(10_000, 60 * US);
        step(&mut rt, &mut rc, hai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "hyper by bytes");
        d.on_transmit(4_999, 61 * US);
        assert_eq!(d.target(), rt, "B/2 = 5,000 B not yet sent");
        d.on_transmit(1, 62 * US);
        step(&mut rt, &mut rc, hai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "B/2 reached");
        d.advance(110 * US - 1);
        assert_eq!(d.target(), rt);
        d.advance(110 * US);
        step(&mut rt, &mut rc, 2.0 * hai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "t = 2: 2 R_HAI");
        d.advance(137_500_000 - 1);
        assert_eq!(d.target(), rt, "T/2 not yet");
        d.advance(137_500_000);
        step(&mut rt, &mut rc, 3.0 * hai);
        assert_eq!((d.target(), d.rate()), (rt, rc), "T/2 later: 3 R_HAI");
        assert!(rt > line && rc == line, "Rt uncapped, Rc capped");
    }

    /// A 1-byte counter in `r3_increase`'s hyper increase refills to B/2 =
    /// 0 bytes: each packet is one byte event, and sending never loops
    /// (it did, 2026-12-05, when the counter's loop served every style).
    #[test]
    fn r3_one_byte_counter_fires_once_per_packet() {
        let mut d = ctl(r3(1, 1, true));
        d.on_cnp(0);
        d.on_transmit(1000, US); // b = 1, t = 0: additive.
        d.advance(55 * US); // t = 1: hyper.
        let hai = d.c.r_hai;
        for k in 2..5u32 {
            let rt = d.target();
            d.on_transmit(1000, 56 * US + k as u64);
            // Hyper increase by R_HAI × (min(t, b) − F + 1) = R_HAI × 1.
            assert_eq!(d.target(), rt + hai, "packet {k}");
        }
    }

    /// The target/8 quirk: without the clamp Rt stays at 40G while four
    /// CNPs (α = 1, cut first) take Rc to 2.5G. The first timer event, at
    /// t = 1, finds Rt > 10 Rc: Rt := 5G, Rc := 3.75G. Without
    /// `r3_increase` it is fast recovery: Rt kept, Rc := 21.25G.
    #[test]
    fn r3_divides_a_far_target_by_eight() {
        for (r3_on, rt, rc) in [(true, 5e9, 3.75e9), (false, 40e9, 21.25e9)] {
            let mut d = ctl(DcqcnParams {
                r3_increase: r3_on,
                ..r3(5, 0, false)
            });
            for k in 0..4 {
                d.on_cnp(k * US);
            }
            assert_eq!((d.target(), d.rate()), (40e9, 2.5e9));
            d.advance(3 * US + 55 * US);
            assert_eq!((d.target(), d.rate()), (rt, rc), "r3_increase {r3_on}");
        }
    }

    #[test]
    fn r3_increase_needs_the_paper_style() {
        let e = DcqcnParams {
            r3_increase: true,
            ..Default::default()
        }
        .validate("protocol.dcqcn")
        .unwrap_err();
        assert!(e.to_string().contains("protocol.dcqcn.r3_increase"), "{e}");
        assert!(r3(5, 0, true).validate("protocol.dcqcn").is_ok());
    }

    #[test]
    fn firmware_cuts_at_the_first_decrease_check_and_recovers_per_timer() {
        let mut d = ctl(DcqcnParams::default());
        d.on_cnp(0);
        // The first CNP keeps the rate (rate_on_first_cnp 1.0); α = 1.
        assert_eq!((d.rate(), d.alpha()), (LINE as f64, 1.0));
        d.advance(4 * US);
        assert_eq!(d.rate(), LINE as f64);
        d.advance(4 * US + PS_PER_NS);
        // Four α ticks without a new CNP decayed α before the check.
        let a = (1.0f64 - 1.0 / 256.0).powi(4);
        assert!((d.alpha() - a).abs() < 1e-15);
        let cut = LINE as f64 * (1.0 - d.alpha() / 2.0);
        assert_eq!(d.rate(), cut);
        // No clamp at time stage 0: the target keeps the line rate.
        assert_eq!(d.target(), LINE as f64);
        // F = 1: one fast-recovery event after T = 300 µs.
        let t0 = 4 * US + PS_PER_NS;
        d.advance(t0 + 300 * US - 1);
        assert_eq!(d.rate(), cut);
        d.advance(t0 + 300 * US);
        assert_eq!(d.rate(), (cut + LINE as f64) / 2.0);
    }

    #[test]
    fn firmware_ignores_checks_without_a_cnp() {
        let mut d = ctl(DcqcnParams::default());
        d.on_cnp(0);
        d.advance(10 * US);
        let r = d.rate();
        // 10 ms later, several increase events but no cut.
        d.advance(10_000 * US);
        assert!(d.rate() >= r);
        // A CNP between checks: the next α tick folds it in, then the check cuts.
        d.on_cnp(10_002 * US);
        let before = d.rate();
        d.advance(10_004 * US);
        assert_eq!(d.rate(), before);
        // Folded in at 10 003 µs, decayed once at 10 004 µs.
        assert!(d.alpha() > 0.99 / 256.0);
        d.advance(10_004 * US + PS_PER_NS);
        assert_eq!(d.rate(), before * (1.0 - d.alpha() / 2.0));
    }

    fn isekai() -> DcqcnParams {
        DcqcnParams {
            style: Style::Isekai,
            ..Default::default()
        }
    }

    const MBPS: f64 = 1e6;

    /// The isekai style by hand at 40 Gb/s (40,000 Mb/s; B = 32,767 × 64
    /// B, F = 1, R_AI 5 and R_HAI 50 Mb/s, g = 5/1024, α₀ = 1023/1024).
    /// B + 100 bytes before any CNP: b = 1, 100 B carried. A CNP at 10 µs
    /// sets Rc = Rt = 85% of line = 34,000 and starts all timers; no cut
    /// waits. The rate timer at 310 µs: t = 0 but b = 1 ≥ F, additive: Rt
    /// 34,005, Rc ⌊(34,000 + 34,005)/2⌋ = 34,002. B − 100 bytes more fire
    /// the byte counter (the carry): t = 1, b = 1, additive: Rt 34,010, Rc
    /// 34,006. α decays at 11..320 µs (310 ticks, ⌊1019 a / 1024⌋ each:
    /// 1023 → 156), a CNP at 320.5 µs is folded in at 321 (⌊1019 · 156 /
    /// 1024⌋ + 5 = 160), and the check at 322 µs, which runs before the α
    /// tick of 322 (scheduled first), clamps Rt := 34,006 (t > 0) and cuts
    /// ⌊34,006 · 160 / 2048⌋ = 2,656: Rc 31,350; then the tick: α 159. The
    /// rate timer restarted at 322 fires at 622 (not 610): fast recovery,
    /// Rc ⌊(31,350 + 34,006)/2⌋ = 32,678.
    #[test]
    fn isekai_by_hand() {
        let mut d = ctl(isekai());
        let b = 32_767 * 64;
        assert_eq!(d.c.byte_counter, b);
        let rates = |d: &Dcqcn| (d.target() / MBPS, d.rate() / MBPS);
        d.on_transmit(b + 100, US);
        assert_eq!(rates(&d), (40_000.0, 40_000.0));
        d.on_cnp(10 * US);
        assert_eq!(rates(&d), (34_000.0, 34_000.0));
        assert_eq!(d.alpha(), 1023.0 / 1024.0);
        d.advance(310 * US - 1);
        assert_eq!(rates(&d), (34_000.0, 34_000.0), "no cut at the checks");
        d.advance(310 * US);
        assert_eq!(rates(&d), (34_005.0, 34_002.0), "additive by the early b");
        d.on_transmit(b - 101, 311 * US);
        assert_eq!(rates(&d), (34_005.0, 34_002.0));
        d.on_transmit(1, 312 * US);
        assert_eq!(rates(&d), (34_010.0, 34_006.0), "the carried 100 B count");
        d.on_cnp(320 * US + US / 2);
        d.advance(322 * US - 1);
        assert_eq!(d.alpha(), 160.0 / 1024.0);
        assert_eq!(rates(&d), (34_010.0, 34_006.0));
        d.advance(322 * US);
        assert_eq!(rates(&d), (34_006.0, 31_350.0), "clamp, then the cut");
        assert_eq!(d.alpha(), 159.0 / 1024.0);
        d.advance(622 * US - 1);
        assert_eq!(rates(&d), (34_006.0, 31_350.0), "no increase at 610 µs");
        d.advance(622 * US);
        assert_eq!(rates(&d), (34_006.0, 32_678.0));
    }

    #[test]
    fn isekai_refuses_values_off_its_integer_grid() {
        let e = DcqcnParams {
            g: Some(1.0 / 256.0 + 1e-3),
            ..isekai()
        }
        .validate("protocol.dcqcn")
        .unwrap_err();
        assert!(e.to_string().contains("protocol.dcqcn.g"), "{e}");
        let e = DcqcnParams {
            rate_ai_mbps: Some(7.5),
            ..isekai()
        }
        .validate("protocol.dcqcn")
        .unwrap_err();
        assert!(e.to_string().contains("protocol.dcqcn.rate_ai_mbps"), "{e}");
        let ok = DcqcnParams {
            g: Some(4.0 / 1024.0),
            rate_ai_mbps: Some(8.0),
            ..isekai()
        };
        assert!(ok.validate("protocol.dcqcn").is_ok());
    }

    /// The times a sender must wake at to see Rc change: a decrease check
    /// only while a CNP waits for it, the increase timer, never an α tick.
    #[test]
    fn next_rate_change_names_the_timer_that_changes_rc() {
        let mut d = ctl(DcqcnParams::default());
        assert_eq!(d.next_rate_change(), None, "no timer before the first CNP");
        d.on_cnp(0);
        let check = 4 * US + PS_PER_NS;
        assert_eq!(d.next_rate_change(), Some(check));
        d.advance(check);
        // The check cut and started the rate timer (T = 300 µs); later
        // checks find no CNP and are not named.
        assert_eq!(d.next_rate_change(), Some(check + 300 * US));
        d.on_cnp(10 * US);
        assert_eq!(d.next_rate_change(), Some(12 * US + PS_PER_NS));
        let mut p = ctl(paper(false));
        p.on_cnp(5 * US);
        // Paper style: the cut was at the CNP; next is the increase, T = 55 µs.
        assert_eq!(p.next_rate_change(), Some(60 * US));
    }

    /// A reference with periodic timers: every α tick, decrease check and
    /// increase timer is an explicit event, as a simulator with one event per
    /// period would run them, sharing only the per-event arithmetic. Events
    /// of equal time run in the order they were scheduled (`seq`), as
    /// ns-3's and OMNeT++'s queues run them.
    struct Periodic {
        d: Dcqcn,
        /// Each timer's pending event: (time, scheduling order).
        alpha_at: Option<(u64, u64)>,
        dec_at: Option<(u64, u64)>,
        inc_at: Option<(u64, u64)>,
        seq: u64,
    }

    impl Periodic {
        fn new(d: Dcqcn) -> Self {
            Periodic {
                d,
                alpha_at: None,
                dec_at: None,
                inc_at: None,
                seq: 0,
            }
        }
        fn at(&mut self, t: u64) -> Option<(u64, u64)> {
            self.seq += 1;
            Some((t, self.seq))
        }
        fn run_to(&mut self, until: u64) {
            let c = self.d.c;
            loop {
                let cand = [self.alpha_at, self.dec_at, self.inc_at];
                let Some(next) = cand.iter().flatten().min().copied() else {
                    return;
                };
                let t = next.0;
                if t > until {
                    return;
                }
                if self.alpha_at == Some(next) {
                    self.d.alpha_step();
                    self.alpha_at = self.at(t + c.alpha_timer);
                } else if self.dec_at == Some(next) {
                    // A check reschedules itself first, then cuts and
                    // restarts the rate timer (`HPCC` CheckRateDecreaseMlx).
                    self.dec_at = self.at(t + c.decrease_period);
                    if self.d.decrease_step() {
                        self.inc_at = self.at(t + c.rate_timer);
                    }
                } else {
                    let period = self.d.increase_step();
                    self.inc_at = self.at(t + period);
                }
            }
        }
        fn cnp(&mut self, now: u64) {
            self.run_to(now);
            let first = !self.d.started;
            self.d.cnp_step();
            let c = self.d.c;
            match c.style {
                Style::Firmware if first => {
                    self.alpha_at = self.at(now + c.alpha_timer);
                    self.dec_at = self.at(now + c.decrease_period + PS_PER_NS);
                }
                Style::Isekai if first => {
                    self.alpha_at = self.at(now + c.alpha_timer);
                    self.dec_at = self.at(now + c.decrease_period);
                    self.inc_at = self.at(now + c.rate_timer);
                }
                Style::Firmware | Style::Isekai => {}
                Style::Paper => {
                    self.alpha_at = self.at(now + c.alpha_timer);
                    self.inc_at = self.at(now + c.rate_timer);
                }
            }
        }
    }

    #[test]
    fn lazy_timers_match_periodic_ones() {
        // CNP times: a burst, gaps of various lengths (some on tick boundaries), a long idle.
        // Firmware: the cut at 1111 µs + 1 ns starts a rate timer due at
        // 1411 µs + 1 ns, on a decrease check that the CNP at 1409 µs arms.
        let script: Vec<u64> = [
            3, 5, 9, 9, 20, 21, 60, 61, 64, 300, 301, 305, 1000, 1004, 1055, 1110, 1409, 2500,
            2501, 9000,
        ]
        .iter()
        .map(|us| us * US)
        .chain([77_777_777, 77_777_778, 9_000 * US + 4 * US + PS_PER_NS])
        .collect();
        let mut script = script;
        script.sort();
        for p in [
            DcqcnParams::default(),
            paper(false),
            paper(true),
            DcqcnParams {
                fast_recovery_stages: Some(3),
                rate_timer: Some(Micros::from_us(55.0)),
                ..Default::default()
            },
            // R3's increase path: T/2 timers in hyper increase.
            r3(2, 0, true),
            isekai(),
        ] {
            let mut lazy = ctl(p.clone());
            let mut per = Periodic::new(ctl(p.clone()));
            let mut lowest = f64::INFINITY;
            for &t in &script {
                lazy.on_cnp(t);
                lowest = lowest.min(lazy.rate());
                per.cnp(t);
                let got = (lazy.rate(), lazy.target(), lazy.alpha());
                let want = (per.d.rate(), per.d.target(), per.d.alpha());
                assert_eq!(got, want, "{:?} at {t}", p.style);
            }
            let end = 20_000 * US;
            lazy.advance(end);
            per.run_to(end);
            assert_eq!(
                (lazy.rate(), lazy.target(), lazy.alpha()),
                (per.d.rate(), per.d.target(), per.d.alpha())
            );
            assert!(lowest < 0.6 * LINE as f64, "the script cut the rate");
        }
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = DcqcnParams {
            g: Some(-0.1),
            ..Default::default()
        }
        .validate("protocol.dcqcn")
        .unwrap_err();
        assert!(e.to_string().contains("protocol.dcqcn.g"), "{e}");
        let e = DcqcnParams {
            min_rate_mbps: Some(-5.0),
            ..Default::default()
        }
        .validate("protocol.dcqcn")
        .unwrap_err();
        assert!(
            e.to_string().contains("protocol.dcqcn.min_rate_mbps"),
            "{e}"
        );
    }
}
