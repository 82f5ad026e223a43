//! IRN, "improved RoCE NIC" ([TH] §4.2): RoCE with selective repeat instead
//! of go-back-N, so that it needs no lossless fabric. Protocols `irn` (line
//! rate), `irn_dcqcn` and `irn_timely` (the controllers of `dcqcn` and
//! `timely`), `irn_aimd`, IRN "augmented with TCP's AIMD logic" ([TH]
//! §4.3.6, T30; below), and `irn_dctcp`, IRN with DCTCP's window ([TH]
//! §4.3.6, T32; below). It reuses the RoCE sender's pacing, packet format and
//! controller plumbing ([`RoceSource`]) and the RoCE receiver's control
//! packets and CNPs ([`RoceSink`]); only the loss recovery differs.
//!
//! - **Receiver** ([`IrnSink`], [TH] §4.2.1): keeps out-of-order packets. It
//!   ACKs every in-order packet (cumulative ACK = next expected PSN; ACKs are
//!   per packet whatever `[protocol.roce] ack_every` says) and NACKs **every**
//!   out-of-order arrival with (cumulative ACK = expected PSN, `seq` = the
//!   arriving PSN as a one-entry SACK) (TA11). No CNP on a NACK (`CW` adds
//!   one; [TH] does not: `cnp_on_nack`).
//! - **Sender** ([`IrnSource`], [TH] §4.2.1): a bitmap of selectively ACKed
//!   PSNs above the cumulative ACK. A NACK or a timeout enters recovery and
//!   records the *recovery sequence*, the last new PSN sent. In recovery it
//!   resends, before any new packet, first the cumulative-ACK PSN, then each
//!   un-SACKed PSN below the highest SACKed one (a packet counts as lost
//!   only if a higher PSN was SACKed; `CW` resends every un-SACKed PSN below
//!   the recovery point: `resend`). With nothing to resend it sends new
//!   PSNs, paced as RoCE, while BDP-FC allows: PSN − cumulative ACK <
//!   `bdp_cap_packets` ([TH] §4.2.2). Recovery ends when the cumulative ACK
//!   passes the recovery sequence. No window, slow start or AIMD.
//! - **`irn_aimd`** ([TH] §4.3.6): the same sender with NewReno's window
//!   (`cc/reno.rs`) over new packets: packets in flight (sent, neither
//!   cumulatively nor selectively ACKed) stay below cwnd as well as under
//!   BDP-FC; retransmissions in recovery are not held back. The window
//!   starts at the BDP-FC cap (120 packets; `[protocol.tcp] iw_packets` when
//!   BDP-FC is off) with ssthresh there, so there is no slow start, as the
//!   thesis credits IRN's BDP-FC for; then one MTU more per window of ACKs,
//!   halved when a NACK starts recovery, and one MTU after a timeout (then
//!   slow start back to ssthresh, as TCP). The thesis gives no more detail.
//! - **`irn_dctcp`** ([TH] §4.3.6: the thesis runs IRN with DCTCP as well as
//!   with AIMD, and finds the same trends, T32; it gives no detail): the
//!   `irn_aimd` sender with DCTCP's controller (`cc/dctcp.rs`, the one TCP's
//!   `dctcp` uses) instead of NewReno's, the same initial window and the same
//!   loss response (halve on a NACK that starts recovery, one MTU after a
//!   timeout), plus ECN:
//!   - Its data is ECN-capable (`ECT`), so a marking switch (`kind = "ecn"`,
//!     DCTCP's threshold K; `"red"`, `"ecn_ramp"`) sets CE instead of dropping.
//!   - The receiver runs in *echo mode*: the ACK or NACK answering a CE-marked
//!     data packet carries `ECE`, one echo per packet as DCTCP with an ACK per
//!     segment (RFC 8257 §3.2; IRN ACKs or NACKs every packet), and it sends no
//!     CNPs. In echo mode the sender reads `ECE` on an ACK or NACK as that echo,
//!     not as a CNP (they share the flag; only `irn_dctcp` echoes).
//!   - Every ACK and NACK feeds the controller's estimate (`on_ecn`): alpha,
//!     the moving average with gain g of the marked fraction F per window of
//!     data (a window ends when the cumulative ACK passes what had been sent
//!     when the last one ended). F counts the packets each ACK or NACK reports
//!     delivered (cumulatively ACKed and not SACKed before, or newly SACKed),
//!     marked if it carries `ECE`: per packet, as Linux's DCTCP counts
//!     `delivered` and `delivered_ce` (`tcp_dctcp.c`) and `HPCC`'s DCTCP
//!     counts marked ACKs per packet. RFC 8257 §3.3 step 1 counts bytes
//!     cumulatively ACKed and ignores SACKs: over IRN that would give a loss
//!     episode's SACKed packets the mark of the one retransmission that fills
//!     the hole, and the NACKs' echoes none.
//!   - A cut (`cwnd × (1 − alpha/2)`, ssthresh = cwnd) needs an echo outside
//!     recovery, at most one per window: after a cut, none until the
//!     cumulative ACK reaches the next new PSN of the cut (TCP's subflow does
//!     the same). The ACK that cuts does not also grow the window; otherwise
//!     growth is `irn_aimd`'s: one MTU per window of ACKs, in recovery too.
//!   - A NACK that starts recovery is a loss as for `irn_aimd`, after its echo:
//!     cwnd = ssthresh = max(in flight / 2, 2 MTU) whether it cut or not.
//!   - Parameters: `[protocol.dctcp]`, shared with TCP's `dctcp`: `g` = 1/16
//!     (TA4: [TH] takes DCTCP's constants from [DCTCP]; RFC 8257 §4.2),
//!     `initial_alpha` = 1 (RFC 8257 §3.3), `cut_rule` = `"marked_window"`.
//!     K is where the switches mark (`ecn`'s `ecn_threshold`, or a ramp
//!     that steps from 0 to 1 at K); [TH] Ch. 4 gives none, and
//!     scenarios/rdma/irn_dctcp.toml takes TA4's 65 packets (docs/rdma.md).
//!     A scenario whose switches never mark is refused, as for DCQCN.
//! - **Timeouts** ([TH] §4.2.1, TA9): the timer is armed at RTO_low when a
//!   packet leaves with none armed, and re-armed on every advance of the
//!   cumulative ACK. When RTO_low expires with more than N packets in flight
//!   (sent, neither cumulatively nor selectively ACKed; `CW` does not
//!   subtract SACKed ones: `rto_in_flight`) it is extended to RTO_high
//!   after the arming (`CW` chooses when it arms: `rto_choice`). A
//!   timeout enters recovery and restarts from the cumulative ACK. Nothing
//!   outstanding: no timer.
//! - **Overheads** ([TH] §4.5.3, T31): `retx_fetch_us` delays the
//!   retransmissions of each recovery event (entering recovery, a timeout)
//!   by one PCIe fetch; later retransmissions of the same event pipeline
//!   behind it. `header_overhead_bytes` is added to every data packet (the
//!   RETH of RDMA Writes: 16 B).
//!
//! | key (`[protocol.irn]`; MTU and CNP interval from `[protocol.roce]`) | default | source |
//! |---|---|---|
//! | `rto_low_us` | 100 | [TH] §4.2.1 |
//! | `rto_high_us` | 320 | [TH] §4.2.1 (TA10: longest-path RTT with full buffers) |
//! | `n_low_packets` (RTO_low while in flight ≤ N) | 3 | [TH] §4.2.1 |
//! | `timeout` | true | [TH] §4.2.1 (`CW` turns IRN's timeout off under PFC) |
//! | `bdp_cap_packets` (0 = no BDP-FC) | 120 | [TH] §4.2.2: 120 KB / 1 KB MTU, "~110" in the text (TA8) |
//! | `retx_fetch_us` | 0 | [TH] §4.5.3: 2 µs per retransmission |
//! | `header_overhead_bytes` | 0 | [TH] §4.5.3: RETH 16 B per Write packet (Send 6 B, Read response 0) |
//! | `cw_compat` | false | true: `CW`'s choice for each of the five keys below not given (`CW` `rdma-hw.cc`, `rdma-queue-pair.h`; spec `rdma-scheduling-params.md` §7) |
//! | `resend` | `"below_highest_sack"` (`cw_compat`: `"below_recovery"`) | [TH] §4.2.1: lost only if a higher PSN was SACKed; `CW` rewinds to the cumulative ACK and resends every un-SACKed PSN |
//! | `rto_in_flight` | `"unsacked"` (`cw_compat`: `"sent"`) | [TH] §4.2.1 "packets in flight"; `CW` GetRto: highest sent − cumulative ACK, SACKed included |
//! | `rto_choice` | `"at_expiry"` (`cw_compat`: `"when_armed"`) | TA9; `CW`: GetRto when the timer is (re)started, on every send and every ACK or NACK |
//! | `nack_repeat_us` | 0 (`cw_compat`: 4) | [TH]: a NACK per out-of-order packet (TA11); `CW` `m_nack_interval`: no NACK for a PSN already held within 4 µs of the last NACK |
//! | `cnp_on_nack` | false (`cw_compat`: true) | [TH]: none; `CW` sets the CNP flag on every NACK ("out-of-order should accompany with CNP (?)"), which its DCQCN takes as a CNP |
//!
//! **`CW`'s variant** (`cw_compat = true`, or the five keys one by one).
//! The sender resends every un-SACKed PSN from the cumulative ACK up to
//! the recovery sequence, including those above the highest SACK that may
//! still be on their way; the timer's length is chosen when it is
//! (re)started, from the packets sent and not cumulatively ACKed, and it
//! restarts on every data packet sent and every ACK or NACK while data is
//! outstanding, so it fires only after RTO of silence; the receiver skips
//! the NACK of a PSN it already holds within 4 µs of its last NACK, and
//! marks every NACK it sends as a CNP (counted in `cnps`), which DCQCN's
//! reaction point takes as one (the other controllers ignore it; `irn_dctcp`
//! echoes marks instead and sends none). `CW`'s BDP-FC in bytes (in
//! flight plus the next packet below the cap, or the highest ACK plus the
//! cap above the next PSN) admits the same PSNs as the cap in packets here
//! when every packet is one MTU, and its IRN timeout off under PFC is
//! `timeout = false`.

use std::collections::VecDeque;

use super::{timely_parts, window_controller, RoceDef, RoceSink, RoceSource, TcpWindow};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol};
use crate::transport::cc::dcqcn::Style;
use crate::transport::cc::timely::SegmentPacer;
use crate::transport::cc::{CongestionControl, Controller, Dcqcn, Loss};
use crate::transport::config::{bad, in_range, Micros};
use crate::transport::{
    Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SinkStats, SourceStats, SwitchClass,
    Transport,
};

/// `[protocol.irn]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IrnParams {
    /// Timeout while few packets are in flight (`rto_low_us`).
    #[serde(rename = "rto_low_us")]
    pub rto_low: Micros,
    /// Timeout otherwise (`rto_high_us`).
    #[serde(rename = "rto_high_us")]
    pub rto_high: Micros,
    /// RTO_low applies while at most this many packets are in flight.
    pub n_low_packets: u32,
    /// Whether the sender times out at all.
    pub timeout: bool,
    /// BDP-FC: new PSNs only while PSN − cumulative ACK is below this; 0: off.
    pub bdp_cap_packets: u32,
    /// PCIe fetch delay of a retransmission (`retx_fetch_us`).
    #[serde(rename = "retx_fetch_us")]
    pub retx_fetch: Micros,
    /// Extra header bytes on every data packet.
    pub header_overhead_bytes: u32,
    /// `CW`'s choice for each of the five keys below that is not given.
    pub cw_compat: bool,
    /// What recovery resends after the cumulative-ACK PSN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resend: Option<Resend>,
    /// What counts as in flight for RTO_low's N.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_in_flight: Option<RtoInFlight>,
    /// When RTO_low or RTO_high is chosen, and when the timer restarts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_choice: Option<RtoChoice>,
    /// The receiver sends no second NACK for an out-of-order PSN it already
    /// holds within this long of its last NACK (`nack_repeat_us`; 0: never
    /// skips).
    #[serde(rename = "nack_repeat_us", skip_serializing_if = "Option::is_none")]
    pub nack_repeat: Option<Micros>,
    /// Each NACK also carries a CNP (`ECE`) for DCQCN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnp_on_nack: Option<bool>,
}

/// `resend`: which PSNs recovery resends after the cumulative-ACK PSN.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resend {
    /// Un-SACKed PSNs below the highest SACKed one: a packet counts as lost
    /// only if a higher PSN was SACKed ([TH] §4.2.1).
    BelowHighestSack,
    /// Every un-SACKed PSN up to the recovery sequence (`CW`).
    BelowRecovery,
}

/// `rto_in_flight`: the packets RTO_low's N is compared with.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoInFlight {
    /// Sent and neither cumulatively nor selectively ACKed ([TH] §4.2.1).
    Unsacked,
    /// Sent and not cumulatively ACKed, SACKed ones included (`CW`: the
    /// highest PSN sent less the cumulative ACK).
    Sent,
}

/// `rto_choice`: when the timeout's length is chosen.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoChoice {
    /// Armed at RTO_low when a packet leaves with none armed and on every
    /// advance of the cumulative ACK; at expiry with more than N in flight
    /// it is extended to RTO_high after the arming (TA9).
    AtExpiry,
    /// Chosen when armed from the packets then in flight, and re-armed on
    /// every data packet sent and every ACK or NACK while data is
    /// outstanding; it fires when it expires (`CW`).
    WhenArmed,
}

/// The loss-recovery choices of `[protocol.irn]` with `cw_compat` applied.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct IrnRules {
    /// What recovery resends.
    pub resend: Resend,
    /// What RTO_low's N counts.
    pub rto_in_flight: RtoInFlight,
    /// When the RTO's length is chosen.
    pub rto_choice: RtoChoice,
    /// The receiver's NACK repeat guard, ps (0: none).
    pub nack_repeat_ps: u64,
    /// Each NACK carries a CNP.
    pub cnp_on_nack: bool,
}

/// `CW`'s NACK repeat guard (`m_nack_interval`), µs.
pub const CW_NACK_REPEAT_US: f64 = 4.0;

impl Default for IrnParams {
    fn default() -> Self {
        IrnParams {
            rto_low: Micros::from_ps(100_000_000),
            rto_high: Micros::from_ps(320_000_000),
            n_low_packets: 3,
            timeout: true,
            bdp_cap_packets: 120,
            retx_fetch: Micros::from_ps(0),
            header_overhead_bytes: 0,
            cw_compat: false,
            resend: None,
            rto_in_flight: None,
            rto_choice: None,
            nack_repeat: None,
            cnp_on_nack: None,
        }
    }
}

impl IrnParams {
    /// Checks the section; `key` is `protocol.irn`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        let low = self.rto_low.positive(&k("rto_low_us"))?;
        let high = self.rto_high.positive(&k("rto_high_us"))?;
        if high < low {
            return Err(bad(
                &k("rto_high_us"),
                high as f64 / 1e6,
                "must be at least rto_low_us",
            ));
        }
        if self.retx_fetch != Micros::from_ps(0) {
            // 0 (no fetch delay) or a positive delay.
            self.retx_fetch.positive(&k("retx_fetch_us"))?;
        }
        if let Some(r) = self.nack_repeat {
            r.zero_or_positive(&k("nack_repeat_us"))?;
        }
        in_range(
            &k("header_overhead_bytes"),
            self.header_overhead_bytes,
            0,
            1000,
        )
    }

    /// The loss-recovery choices: each key as given, else the thesis's
    /// choice, or `CW`'s with `cw_compat`.
    pub fn rules(&self) -> IrnRules {
        let cw = self.cw_compat;
        IrnRules {
            resend: self.resend.unwrap_or(match cw {
                true => Resend::BelowRecovery,
                false => Resend::BelowHighestSack,
            }),
            rto_in_flight: self.rto_in_flight.unwrap_or(match cw {
                true => RtoInFlight::Sent,
                false => RtoInFlight::Unsacked,
            }),
            rto_choice: self.rto_choice.unwrap_or(match cw {
                true => RtoChoice::WhenArmed,
                false => RtoChoice::AtExpiry,
            }),
            nack_repeat_ps: match self.nack_repeat {
                Some(r) => r.ps,
                None if cw => Micros::from_us(CW_NACK_REPEAT_US).ps,
                None => 0,
            },
            cnp_on_nack: self.cnp_on_nack.unwrap_or(cw),
        }
    }
}

/// Sender of an IRN flow: the RoCE sender's pacing and controller with
/// selective repeat (module documentation above).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct IrnSource {
    base: RoceSource,
    /// Bit i: PSN `una + i` was selectively ACKed.
    sacked: VecDeque<bool>,
    n_sacked: u64,
    /// The highest SACKed PSN.
    top_sack: Option<u64>,
    /// The recovery sequence while recovering.
    recovery: Option<u64>,
    /// Next PSN to consider for retransmission.
    cursor: u64,
    rto_low: u64,
    rto_high: u64,
    n_low: u64,
    timeout: bool,
    rto_at: Option<u64>,
    armed_at: u64,
    extended: bool,
    cap: u64,
    fetch: u64,
    /// Retransmissions may not leave before this (PCIe fetch).
    fetch_ready: u64,
    extra: u32,
    /// Recovery resends every un-SACKed PSN up to the recovery sequence
    /// (`resend = "below_recovery"`).
    resend_to_recovery: bool,
    /// RTO_low's N counts SACKed packets too (`rto_in_flight = "sent"`).
    rto_counts_sacked: bool,
    /// The RTO is chosen when armed and re-armed on every send and ACK
    /// (`rto_choice = "when_armed"`).
    rto_when_armed: bool,
}

impl IrnSource {
    /// An IRN sender for `flow` over a RoCE sender `base`.
    pub fn new(base: RoceSource, p: &IrnParams) -> Self {
        let rules = p.rules();
        IrnSource {
            base,
            sacked: VecDeque::new(),
            n_sacked: 0,
            top_sack: None,
            recovery: None,
            cursor: 0,
            rto_low: p.rto_low.ps,
            rto_high: p.rto_high.ps,
            n_low: p.n_low_packets as u64,
            timeout: p.timeout,
            rto_at: None,
            armed_at: 0,
            extended: false,
            cap: p.bdp_cap_packets as u64,
            fetch: p.retx_fetch.ps,
            fetch_ready: 0,
            extra: p.header_overhead_bytes,
            resend_to_recovery: rules.resend == Resend::BelowRecovery,
            rto_counts_sacked: rules.rto_in_flight == RtoInFlight::Sent,
            rto_when_armed: rules.rto_choice == RtoChoice::WhenArmed,
        }
    }

    /// The same sender in echo mode (`irn_dctcp`, module documentation):
    /// its receiver echoes CE marks on ACKs and NACKs instead of sending CNPs
    /// (the RoCE sender's echo state and estimate feed, [`RoceSource`]).
    pub fn with_ecn_echo(mut self) -> Self {
        self.base.echo = true;
        self
    }

    /// Counters.
    pub fn stats(&self) -> &SourceStats {
        &self.base.stats
    }

    /// An RDMA Read's responder: the requester asked for the PSNs below
    /// `end` too ([`RoceSource::grant`]).
    pub(super) fn grant(&mut self, end: u64) {
        self.base.grant(end);
    }

    /// The rate controller, if any.
    pub fn controller(&self) -> Option<&Controller> {
        self.base.controller()
    }

    /// The recovery sequence, while in recovery.
    pub fn recovery(&self) -> Option<u64> {
        self.recovery
    }

    /// The pending timeout, if any.
    pub fn rto_at(&self) -> Option<u64> {
        self.rto_at
    }

    /// Packets sent and neither cumulatively nor selectively ACKed.
    pub fn in_flight(&self) -> u64 {
        self.base.next_psn - self.base.una - self.n_sacked
    }

    /// The packets RTO_low's N is compared with (`rto_in_flight`).
    fn in_flight_for_rto(&self) -> u64 {
        match self.rto_counts_sacked {
            true => self.base.next_psn - self.base.una,
            false => self.in_flight(),
        }
    }

    /// Starts the timer: at RTO_low, extended at expiry if need be (TA9),
    /// or, with `rto_choice = "when_armed"`, at the length the packets in
    /// flight now call for, never extended.
    fn arm(&mut self, now: u64) {
        self.armed_at = now;
        self.extended = self.rto_when_armed;
        let rto = match self.rto_when_armed && self.in_flight_for_rto() > self.n_low {
            true => self.rto_high,
            false => self.rto_low,
        };
        self.rto_at = self.timeout.then_some(now + rto);
    }

    /// Skips the cursor over SACKed PSNs.
    fn settle(&mut self) {
        let una = self.base.una;
        self.cursor = self.cursor.max(una);
        while self.cursor < self.base.next_psn
            && self.sacked.get((self.cursor - una) as usize) == Some(&true)
        {
            self.cursor += 1;
        }
    }

    /// The PSN to resend next, if any: the cumulative-ACK PSN, then holes
    /// below the highest SACK (or, with `resend = "below_recovery"`, up to
    /// the recovery sequence).
    fn lost(&self) -> Option<u64> {
        let recovery = self.recovery?;
        let c = self.cursor;
        let hole = c == self.base.una
            || match self.resend_to_recovery {
                true => c <= recovery,
                false => self.top_sack.is_some_and(|h| c < h),
            };
        (c < self.base.next_psn && hole).then_some(c)
    }

    fn may_send_new(&self) -> bool {
        let b = &self.base;
        b.started
            && b.next_psn < b.send_limit()
            && (self.cap == 0 || b.next_psn - b.una < self.cap)
            && b.cc.as_ref().is_none_or(|cc| {
                // A window-based controller (irn_aimd, irn_dctcp); the others' is infinite.
                ((self.in_flight() * b.mtu as u64) as f64) < cc.window()
            })
    }

    /// Cumulative acknowledgement up to (not including) `e`; bytes newly acked.
    fn acknowledge(&mut self, e: u64, now: u64) -> u64 {
        let una = self.base.una;
        if e <= una {
            return 0;
        }
        let bytes = self.base.bytes_between(una, e);
        let k = ((e - una) as usize).min(self.sacked.len());
        self.n_sacked -= self.sacked.drain(..k).filter(|s| *s).count() as u64;
        self.base.una = e;
        self.base.next_psn = self.base.next_psn.max(e);
        self.base.note_done(now);
        if self.recovery.is_some_and(|r| e > r) {
            self.recovery = None;
            if let Some(cc) = &mut self.base.cc {
                cc.on_recovery_end();
            }
        }
        if e < self.base.next_psn {
            self.arm(now);
        } else {
            self.rto_at = None;
        }
        self.settle();
        bytes
    }

    /// Selective acknowledgement of `psn`; true if it was not SACKed before.
    fn sack(&mut self, psn: u64) -> bool {
        let una = self.base.una;
        if psn < una || psn >= self.base.next_psn {
            return false;
        }
        let i = (psn - una) as usize;
        if self.sacked.len() <= i {
            self.sacked.resize(i + 1, false);
        }
        let new = !self.sacked[i];
        if new {
            self.sacked[i] = true;
            self.n_sacked += 1;
        }
        self.top_sack = Some(self.top_sack.map_or(psn, |h| h.max(psn)));
        self.settle();
        new
    }

    /// Enters recovery (if not in it) from the cumulative ACK; true if it
    /// entered.
    fn recover(&mut self, now: u64) -> bool {
        if self.recovery.is_some() {
            return false;
        }
        self.recovery = Some(self.base.next_psn - 1);
        self.cursor = self.base.una;
        self.fetch_ready = now + self.fetch;
        true
    }

    fn try_send(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        self.base.take_messages(cx);
        self.base.follow_rate(now, cx.nic_bps);
        if !self.base.started || self.base.next_tx > now || !self.base.nic_ready() {
            return;
        }
        let psn = match self.lost() {
            Some(_) if self.fetch_ready > now => return,
            Some(p) => {
                self.cursor = p + 1;
                p
            }
            None if self.may_send_new() => {
                self.base.next_psn += 1;
                self.base.next_psn - 1
            }
            None => return,
        };
        let rate = self.base.rate(now, cx.nic_bps);
        self.base.emit(psn, self.extra, rate, cx);
        self.settle();
        if self.rto_at.is_none() || self.rto_when_armed {
            self.arm(now);
        }
    }
}

impl Transport for IrnSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.base.begin(cx);
        self.try_send(cx);
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        let now = cx.now;
        match pkt.kind {
            PacketKind::Ack if pkt.has(flags::ECE) && !self.base.echo => {
                self.base.feed_cnp(now, cx.nic_bps)
            }
            PacketKind::Ack | PacketKind::Nack => {
                if pkt.kind == PacketKind::Nack && pkt.has(flags::ECE) && !self.base.echo {
                    // `cnp_on_nack`: the NACK carries a CNP as well.
                    self.base.feed_cnp(now, cx.nic_bps);
                }
                let (was_recovering, una, sacked) =
                    (self.recovery.is_some(), self.base.una, self.n_sacked);
                let acked = self.acknowledge(pkt.ack, now);
                // PSNs this feedback reports delivered: cumulatively ACKed
                // and not SACKed before, then the one it SACKs, if new.
                let mut delivered = (self.base.una - una) - (sacked - self.n_sacked);
                let nack = pkt.kind == PacketKind::Nack && pkt.seq > self.base.una;
                if nack && self.sack(pkt.seq) {
                    delivered += 1;
                }
                // Echo mode (irn_dctcp): the ECN estimate before growth and
                // loss, as TCP's subflow orders them; an ACK that cut does
                // not also grow the window.
                let ece = pkt.has(flags::ECE);
                let cut = self.base.echo && self.base.feed_echo(delivered, ece, was_recovering);
                if acked > 0 && !cut {
                    self.base.feed_ack(acked, &pkt, cx);
                }
                if nack && self.recover(now) {
                    // A loss signal for a window-based controller (irn_aimd, irn_dctcp).
                    let flight = self.in_flight() * self.base.mtu as u64;
                    if let Some(cc) = &mut self.base.cc {
                        cc.on_loss(Loss::FastRetransmit, flight);
                    }
                }
                if self.rto_when_armed && self.base.una < self.base.next_psn {
                    self.arm(now);
                }
                self.try_send(cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        if self.rto_at.is_some_and(|t| t <= now) {
            if self.base.una >= self.base.next_psn {
                self.rto_at = None;
            } else if !self.extended && self.in_flight_for_rto() > self.n_low {
                // RTO_low does not apply: wait until RTO_high after arming (TA9).
                self.extended = true;
                self.rto_at = Some(self.armed_at + self.rto_high);
            } else {
                self.base.stats.timeouts += 1;
                self.recovery = None;
                self.recover(now);
                self.arm(now);
                let bytes = self.in_flight() * self.base.mtu as u64;
                if let Some(cc) = &mut self.base.cc {
                    cc.on_loss(Loss::Timeout, bytes);
                }
            }
        }
        self.try_send(cx);
    }

    fn on_nic_sent(&mut self, cx: &mut Ctx<'_>) {
        self.base.nic_sent();
        self.try_send(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        let b = &self.base;
        let tx = match self.lost() {
            _ if !b.nic_ready() => None,
            Some(_) => Some(b.next_tx.max(self.fetch_ready)),
            None => self.may_send_new().then_some(b.next_tx),
        };
        [b.departure_wake(tx), self.rto_at, b.app_wake()]
            .into_iter()
            .flatten()
            .min()
    }

    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.base.stats)
    }
}

/// Receiver of an IRN flow: keeps out-of-order packets, ACKs each in-order
/// one and NACKs each out-of-order one (module documentation above).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct IrnSink {
    base: RoceSink,
    /// Bit i: PSN `expected + 1 + i` is held.
    held: VecDeque<bool>,
    /// The flow's last PSN, once seen.
    last: Option<u64>,
    /// Echo mode (`irn_dctcp`): `ECE` on the ACK or NACK of a CE-marked
    /// packet, and no CNPs.
    echo: bool,
    /// `nack_repeat_us`, ps.
    nack_repeat: u64,
    /// No NACK for a PSN already held before this time.
    nack_quiet_until: u64,
    /// `cnp_on_nack`.
    cnp_on_nack: bool,
}

impl IrnSink {
    /// The receiver for the flow of `first`, at most one CNP per
    /// `cnp_interval` ps, with the NACK rules of `irn`.
    pub fn new(first: &Packet, p: &super::RoceParams, irn: &IrnParams, cnp_interval: u64) -> Self {
        let rules = irn.rules();
        IrnSink {
            base: RoceSink::new(first, p, cnp_interval),
            held: VecDeque::new(),
            last: None,
            echo: false,
            nack_repeat: rules.nack_repeat_ps,
            nack_quiet_until: 0,
            cnp_on_nack: rules.cnp_on_nack,
        }
    }

    /// The same receiver in echo mode (`irn_dctcp`, module documentation):
    /// the ACK or NACK answering a CE-marked data packet carries `ECE`, one
    /// echo per packet, and it sends no CNPs.
    pub fn with_ecn_echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// NACKs sent.
    pub fn nacks(&self) -> u64 {
        self.base.nacks
    }
}

impl IrnSink {
    /// Next expected PSN: every PSN below it has arrived.
    pub(super) fn expected(&self) -> u64 {
        self.base.expected
    }
}

impl Transport for IrnSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        let b = &mut self.base;
        b.stats.packets_received += 1;
        if pkt.kind != PacketKind::Data {
            return;
        }
        let fl = match self.echo {
            true if pkt.has(flags::ECN_CE) => flags::ECE,
            true => 0,
            false => {
                b.notify(&pkt, cx);
                0
            }
        };
        let now = cx.now;
        let fresh = |b: &mut RoceSink, last: &mut Option<u64>| {
            b.stats.bytes_received += pkt.payload as u64;
            if pkt.has(flags::LAST) {
                *last = Some(pkt.seq);
            }
        };
        if pkt.seq == b.expected {
            fresh(b, &mut self.last);
            b.expected += 1;
            while self.held.pop_front() == Some(true) {
                b.expected += 1;
            }
            let done = self.last.is_some_and(|l| b.expected > l);
            if done && b.stats.finish_ps.is_none() {
                b.stats.finish_ps = Some(now);
            }
            cx.out.push(b.control(PacketKind::Ack, &pkt, fl));
        } else if pkt.seq > b.expected {
            let i = (pkt.seq - b.expected - 1) as usize;
            if self.held.len() <= i {
                self.held.resize(i + 1, false);
            }
            if self.held[i] {
                if now < self.nack_quiet_until {
                    // `nack_repeat_us`: this PSN was NACKed moments ago.
                    return;
                }
            } else {
                self.held[i] = true;
                fresh(b, &mut self.last);
            }
            self.nack_quiet_until = now + self.nack_repeat;
            let mut fl = fl;
            if self.cnp_on_nack && !self.echo {
                b.cnps += 1;
                fl |= flags::ECE;
            }
            b.nacks += 1;
            cx.out.push(b.control(PacketKind::Nack, &pkt, fl));
        } else {
            // A duplicate: the ACK that covered it may have been lost.
            cx.out.push(b.control(PacketKind::Ack, &pkt, fl));
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.base.notify_timer(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        self.base.notify_at()
    }

    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.base.stats)
    }
}

fn irn_source(
    proto: Protocol,
    flow: &FlowInfo,
    p: &ProtocolParams,
    cc: Option<Controller>,
    ect: bool,
    pacer: Option<SegmentPacer>,
) -> IrnSource {
    let base = RoceSource::new(flow, proto, &p.roce, cc, ect, pacer);
    IrnSource::new(base, &p.irn)
}

fn irn_endpoint(
    proto: Protocol,
    flow: &FlowInfo,
    p: &ProtocolParams,
    cc: Option<Controller>,
    ect: bool,
    pacer: Option<SegmentPacer>,
) -> Endpoint {
    Endpoint::IrnSource(Box::new(irn_source(proto, flow, p, cc, ect, pacer)))
}

fn irn_receiver(first: &Packet, p: &ProtocolParams, style: Style) -> IrnSink {
    IrnSink::new(first, &p.roce, &p.irn, p.roce.cnp_interval_ps(style))
}

fn irn_sink(first: &Packet, p: &ProtocolParams, style: Style) -> Endpoint {
    Endpoint::IrnSink(Box::new(irn_receiver(first, p, style)))
}

/// The protocol table's row for IRN at line rate.
pub struct IrnDef;

impl ProtocolDef for IrnDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        irn_endpoint(proto, flow, p, None, false, None)
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        irn_sink(first, p, Style::Paper)
    }
}

/// The protocol table's row for IRN + DCQCN.
pub struct IrnDcqcnDef;

impl ProtocolDef for IrnDcqcnDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = Controller::Dcqcn(Dcqcn::new(p.dcqcn.resolve(flow.nic_bps)));
        irn_endpoint(proto, flow, p, Some(cc), true, None)
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        irn_sink(first, p, p.dcqcn.style)
    }
}

/// The protocol table's row for IRN + AIMD: NewReno's window over IRN
/// ([TH] §4.3.6), starting at the BDP-FC cap in congestion avoidance.
pub struct IrnAimdDef;

impl ProtocolDef for IrnAimdDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = window_controller(TcpWindow::Aimd, p);
        irn_endpoint(proto, flow, p, Some(cc), false, None)
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        irn_sink(first, p, Style::Paper)
    }
}

/// The protocol table's row for IRN + DCTCP ([TH] §4.3.6, T32): `irn_aimd`
/// with DCTCP's controller (`cc/dctcp.rs`, `[protocol.dctcp]`) instead of
/// NewReno's, ECN-capable data and a receiver that echoes CE marks on its
/// ACKs and NACKs (module documentation).
pub struct IrnDctcpDef;

impl ProtocolDef for IrnDctcpDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = Some(window_controller(TcpWindow::Dctcp, p));
        let src = irn_source(proto, flow, p, cc, true, None).with_ecn_echo();
        Endpoint::IrnSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        // Echo mode sends no CNPs: the interval is not used.
        let sink = irn_receiver(first, p, Style::Paper).with_ecn_echo();
        Endpoint::IrnSink(Box::new(sink))
    }
}

/// The protocol table's row for IRN + TIMELY.
pub struct IrnTimelyDef;

impl ProtocolDef for IrnTimelyDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let (cc, pacer) = timely_parts(flow, p);
        irn_endpoint(proto, flow, p, Some(cc), false, Some(pacer.per_flow()))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        irn_sink(first, p, Style::Paper)
    }
}
