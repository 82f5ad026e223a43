//! NDP: receiver-driven transport with trimming switches (Handley et al.,
//! SIGCOMM 2017, seed 000 = [P]; overview seed 001 = [O]; implementation
//! choices from `shared/spec/ndp.md` §1.2 and its ambiguity list A1–A20).
//!
//! The sender sends a full initial window at line rate with no handshake, then
//! sends only when pulled. The receiver ACKs every data packet and NACKs every
//! trimmed header at once, and queues one PULL per arrival in the host's
//! shared, paced pull queue ([`super::pull`]). A PULL carries a per-connection
//! counter; the sender sends as many packets as the counter advanced,
//! retransmissions first. The same state machine over drop-tail switches (no
//! trimming, so losses are found only by timeout) is the `phost_standin`
//! protocol, the pHost-style baseline psim had before its real pHost.
//!
//! | parameter (`[protocol.ndp]`) | default | source |
//! |---|---|---|
//! | `iw_packets` | 23 | A13 ([P] §6.2 "a good default"; 30 in §6.2 runs, set per experiment) |
//! | `mtu_bytes` (payload) | 9000; on the wire + 64 B header | [P] §6 (9 KB jumbograms); A2 |
//! | `min_rto_us` | 1000 | [P] §3.2 ("as low as 1 ms"); A12 |
//! | RTO | max(min RTO, srtt + 4 rttvar), ±25% jitter per packet | A12 (TCP-style, RFC 6298 §2) |
//! | `rto_from_nic` | true: a packet's timer runs from its estimated start on the wire, after the bytes queued ahead of it at the host's NIC | [P] §3.2 sizes the 1 ms RTO by the network's worst round trip, not the sender's own queue; htsim starts it at the NIC queue's estimated service time ([C] `ndp.cpp`, `send_packet`). A host that several receivers pull at once can queue milliseconds of pulled packets (up to 1.7 MB, 1.4 ms at 10 Gb/s, in V25's 10-connection run); timed from the queue, their timers fired while they waited there (42,733 spurious timeouts in that run, none since). false: from the moment the sender queues it |
//! | `spray` | `"permute"`: shuffle the path list, one packet per path, reshuffle when used up | [P] §3.1.1; `"random"` = per-packet random path (V4 comparison) |
//! | `path_penalty` | true: skip paths that are outliers on NACKs | [P] §3.2.3; thresholds A11 |
//! | `pull_jitter` | 0 (perfect pacing) | [P] §6; uniform ± fraction of the interval when set |
//! | pull interval | MTU payload at the receiver's link rate: 7.2 µs for 9000 B at 10 Gb/s | A9 |
//! | `pull_rate` | 1.0: the interval is divided by this fraction of the link rate | A9; htsim paces at 0.99 ([C] `ndp.cpp`, issue 19: 328.4 ns for 4000 B at 100 Gb/s) |
//! | `pull_counts_header` | false: the interval covers the payload only | A9; htsim counts payload + 64 B header ([C]) |
//! | RTS resend rule | resend a bounced header now iff (no pulls outstanding and ≤ 1 first-window packet unaccounted for) or more than 25% ACKs among the last 12 ACKs, NACKs and bounces, this bounce included; else wait for a PULL | [P] §3.2.4; A7. The history holds bounces and the test is strict as in [C] (`count_feedback` records a bounce; `is_bad_path` tests `total / acks <= 3` in integers, though its comment says "at least 25%"); before 2026-12-06 psim left bounces out and took ≥ 25% |
//! | `retx_other_path` | true: a packet resent after a NACK or a bounce avoids the path it was lost on, as a timeout's resend always does | [P] §3.2 ("a lost packet is always retransmitted on a different path"); htsim resends on the next path of its permutation, whichever it is ([C]): false |
//! | `timeout_resends` | true: a packet with no ACK, NACK or bounce by its deadline is resent | [P] §3.2 (a 1 ms RTO is safe); htsim disables timer resends and relies on return-to-sender (A12, [C] `RESEND_ON_TIMEOUT` unset): false. Then a packet lost outright (a bounced header dropped again) is never resent, and the flow stalls until the run's watchdog stops it |
//! | `keep_early_pulls` | true: a PULL that finds nothing to send is kept, and spent on the NACKed packet it was meant for when that NACK comes after it | [P] §3.2.1 (the pull counter absorbs reordering); psim's: over sprayed paths a PULL can overtake the NACK it answers, and a sender that spends it on nothing leaves that packet waiting for a PULL that never comes (no timer runs on a NACKed packet). htsim spends it on nothing ([C] `pull_packets`): false |
//! | `resend_last_pull` | true: a receiver that has heard nothing of its unfinished flow for `min_rto_us`, while no PULL of its own waits at its pacer, sends its last PULL again (the same counter, so it releases only what a lost PULL owed); each repeat without an answer doubles the wait, up to 64 times | psim's: [P] has no timer for a lost PULL (§3.2.1: the next PULL's counter makes up for it), but a flow's last PULL has no next, and the NACKed packets it would have pulled have no timer. With two failed core links of a k = 4 FatTree (`tests/ndp.rs`), 2 of 140 flows stalled so. htsim has none: false |
//! | `pull_on_duplicate` | false: a second copy of a data packet is ACKed (a trimmed one too, since the packet did arrive) but pulls nothing | psim's: [P] §3.2 pulls once per arriving packet so that the packets in flight stay as many as the first window; a timer resend whose original was only late (queued behind a slow link) arrives twice, and pulling for both adds one packet in flight for good. The extra packets wait at the sender's NIC, whose queue then grows with every such timeout: in V24 (a 1 Gb/s core link, no path penalty, 40 ms) 28 senders' NIC queues grew at 11 packets per ms to 3.8 MB, one packet per timeout (correlation 0.9999). htsim pulls for every arrival ([C] `NdpSink::receivePacket`, which has no timer resends to make copies): true |
//! | `control_spray` | true: the receiver sends its ACKs, NACKs and PULLs one per path over a shuffled path list, reshuffled when used up, as the sender sprays data | A19 ([C]: the sink sprays its control packets); false: ACKs and NACKs return on the data packet's path, PULLs go round robin over the paths |
//! | bounce penalty | a bounce counts as 3 NACKs on its path | A7 |
//! | loss counter | a retransmission timeout counts one loss on the path the packet last took (not a NACK). With `path_penalty`, a path whose losses are an outlier (at least 3, and above mean + 3·√mean of the sender's paths) is left out of the next 2^s reshuffles, s = 1, 2, … up to 8 for its successive outlier losses | [P] §3.2.3 ("a path loss counter … outliers … temporarily removed"); the thresholds are psim's (the paper gives none): see [`NdpSource::count_loss`] |
//! | PULL bit on ACK/NACK | when the pull queue is empty and a pull interval has passed | [P] footnotes 2, 4; A8 |
//!
//! Failed links: `loss_rate = 1` on a FatTree's `[[topology.degraded_links]]`
//! is a core link that has failed but that routing has not yet removed
//! ([P] §3.2.3). A sender learns of it only by timeouts, and the loss counter
//! leaves the path out after a few: at most one window is lost before the
//! first timeout (a lost packet returns no pull), then one probe per doubling
//! of the exclusion (`tests/ndp.rs`, `a_failed_core_link_is_left_out_after_a_few_losses`).
//! The receiver's control packets have no such counter: with `control_spray`
//! a receiver keeps sending its share of ACKs and PULLs over the failed link,
//! and each lost ACK costs its data packet a timeout and a needless resend.
//! [P] leaves avoiding failed paths on the way back to routing updates.
//!
//! A PULL lost in the network (a full header queue or a failed link drops
//! control packets) is made up by the next PULL's counter. A flow's last
//! PULL has no next: if it is lost, the packets it would have pulled wait,
//! since no timer runs on a NACKed packet. The receiver's `resend_last_pull`
//! timer sends it again. Without it such a flow never finishes: one of
//! 35,438 in V25's 10-connection run while spurious timeouts' resends
//! filled header queues (6,165 drops, before `rto_from_nic`), and 2 of 140
//! with two failed core links (`tests/ndp.rs`). The timer is armed once per
//! flow and moves only when it fires or when a resent PULL is answered, so
//! it costs no event per packet: it fires at most once per `min_rto_us`
//! while the flow runs, and while the flow's PULL waits at the pacer, only
//! once the pacer has served every waiting flow (V21's 8000-flow incast:
//! about one per PULL cycle of 58 ms, not one per millisecond).
//!
//! Not modelled: connection set-up state and time-wait ([P] §3.2.2): every
//! first-window packet carries SYN and any packet creates the receiver's state,
//! which is all that matters for timing.

use super::config::{bad, in_range, Micros};
use super::rtt::RttEstimator;
use super::{Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SinkStats, SourceStats};
use super::{SwitchClass, Transport};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::units::tx_time_ps;
use outstanding::{Outstanding, Sent, NO_DEADLINE};
use rand::RngExt;
use std::collections::VecDeque;

mod outstanding;

/// `[protocol.ndp]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NdpParams {
    /// Initial window, packets.
    pub iw_packets: u32,
    /// Payload bytes per full packet.
    pub mtu_bytes: u32,
    /// Minimum retransmission timeout (`min_rto_us`).
    #[serde(rename = "min_rto_us")]
    pub min_rto: Micros,
    /// Per-packet path choice.
    pub spray: Spray,
    /// Whether to avoid paths with outlying NACK ratios.
    pub path_penalty: bool,
    /// Pull pacing jitter, as a fraction of the interval.
    pub pull_jitter: f64,
    /// The pull pacer's rate, as a fraction of the receiver's link rate.
    pub pull_rate: f64,
    /// Whether a pull interval covers the header as well as the payload.
    pub pull_counts_header: bool,
    /// Whether a NACKed or bounced packet is resent on another path.
    pub retx_other_path: bool,
    /// Whether a packet with no feedback is resent at its timeout.
    pub timeout_resends: bool,
    /// Whether the receiver sprays its ACKs, NACKs and PULLs over a shuffled path list.
    pub control_spray: bool,
    /// Whether a PULL that overtook its NACK is kept for that NACK.
    pub keep_early_pulls: bool,
    /// Whether a packet's timer runs from its estimated start on the wire
    /// rather than from when it was queued at the NIC.
    pub rto_from_nic: bool,
    /// Whether a receiver that hears nothing for an RTO sends its last PULL again.
    pub resend_last_pull: bool,
    /// Whether a second copy of a data packet is pulled for, like any arrival.
    pub pull_on_duplicate: bool,
}

impl NdpParams {
    /// The pull pacer's interval at a receiver link of `nic_bps`: one
    /// packet's bytes (payload, plus header if counted) at `pull_rate` of it.
    pub fn pull_interval_ps(&self, nic_bps: u64) -> u64 {
        let header = if self.pull_counts_header {
            HEADER_BYTES
        } else {
            0
        };
        let at_line_rate = tx_time_ps(self.mtu_bytes as u64 + header as u64, nic_bps);
        if self.pull_rate == 1.0 {
            at_line_rate
        } else {
            (at_line_rate as f64 / self.pull_rate).round() as u64
        }
    }
}

impl Default for NdpParams {
    fn default() -> Self {
        NdpParams {
            iw_packets: 23,
            mtu_bytes: 9000,
            min_rto: Micros::from_ps(1_000_000_000),
            spray: Spray::Permute,
            path_penalty: true,
            pull_jitter: 0.0,
            pull_rate: 1.0,
            pull_counts_header: false,
            retx_other_path: true,
            timeout_resends: true,
            control_spray: true,
            keep_early_pulls: true,
            rto_from_nic: true,
            resend_last_pull: true,
            pull_on_duplicate: false,
        }
    }
}

impl NdpParams {
    /// Checks the section; `key` is `protocol.ndp`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(&format!("{key}.iw_packets"), self.iw_packets, 1, u32::MAX)?;
        in_range(&format!("{key}.mtu_bytes"), self.mtu_bytes, 1, 65_000)?;
        self.min_rto.positive(&format!("{key}.min_rto_us"))?;
        if !(0.0..1.0).contains(&self.pull_jitter) {
            return Err(bad(
                &format!("{key}.pull_jitter"),
                self.pull_jitter,
                "must be in [0, 1)",
            ));
        }
        if !(self.pull_rate > 0.0 && self.pull_rate <= 1.0) {
            return Err(bad(
                &format!("{key}.pull_rate"),
                self.pull_rate,
                "must be in (0, 1]",
            ));
        }
        Ok(())
    }
}

/// The protocol table's row for NDP.
pub struct Ndp;

impl ProtocolDef for Ndp {
    const CLASS: SwitchClass = SwitchClass::NdpFamily;
    const IDEAL_FCT: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.ndp.mtu_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Endpoint::NdpSource(Box::new(NdpSource::new(flow, proto, &p.ndp)))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Endpoint::NdpSink(Box::new(NdpSink::new(first, &p.ndp)))
    }
}

/// The protocol table's row for `phost_standin`, psim's pHost stand-in
/// before the real pHost (`transport/phost/`): NDP's endpoints and
/// parameters, meant for drop-tail switches ([P] §6.2).
pub struct PhostStandin;

impl ProtocolDef for PhostStandin {
    const CLASS: SwitchClass = SwitchClass::NdpFamily;
    const IDEAL_FCT: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        Ndp::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Ndp::source(proto, flow, p)
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Ndp::sink(first, p)
    }
}

/// How a sender picks each packet's path.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spray {
    /// Shuffle the list of paths and walk it ([P] §3.1.1).
    Permute,
    /// An independent random path per packet (switch-style load balancing).
    Random,
}

/// Feedback events remembered for the RTS rule (A7).
const RECENT: u32 = 12;
/// Path-penalty thresholds (A11).
const PENALTY_MIN_FEEDBACK: u64 = 100;
const PENALTY_MEAN_FACTOR: f64 = 1.25;
const PENALTY_MIN_RATIO: f64 = 0.30;
/// Loss-outlier rule ([`NdpSource::count_loss`]): the fewest losses that can
/// make a path an outlier, and the cap on the exclusion's doubling.
const LOSS_MIN: u64 = 3;
const LOSS_MAX_STRIKES: u32 = 8;

/// A11's feedback on one path, updated by every ACK and NACK. Eight bytes,
/// since a sender keeps one per path: 256 paths x 8192 flows is 16 MiB.
/// NACKs are the minority (a path whose ratio passes 30% is avoided), so
/// they and the avoid counter get 16 bits, the ACKs 32.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct PathScore {
    acks: u32,
    nacks: u16,
    /// A11's avoid counter (NACK outliers). It only grows on feedback from
    /// packets already sent on the path, since an avoided path gets no new
    /// ones, so saturating at 65,535 leaves the rule as it is.
    avoid: u16,
}

impl PathScore {
    /// Counts `acks` and `nacks` more. Should either count reach its limit
    /// (2^32 ACKs, or 2^16 NACKs: over 256 MB of trimmed packets through one
    /// path of one flow at 4 KB), both are halved first: the NACK ratio,
    /// which is all A11 reads, stays as it was (to within one count), and
    /// the count of feedback events stays far above A11's 100.
    fn add(&mut self, acks: u32, nacks: u32) {
        let nacks = nacks.min(u16::MAX as u32) as u16;
        if self.acks.checked_add(acks).is_none() || self.nacks.checked_add(nacks).is_none() {
            self.acks /= 2;
            self.nacks /= 2;
        }
        self.acks += acks;
        self.nacks += nacks;
    }

    /// Feedback events on this path so far.
    fn events(&self) -> u64 {
        self.acks as u64 + self.nacks as u64
    }
}

/// [P] §3.2.3's losses on one path. Timeouts are rare, so a sender keeps
/// these only from its first timeout on.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct PathLoss {
    /// Packets lost on this path (timeouts).
    losses: u32,
    /// Outlier losses on this path so far (they never decay).
    strikes: u32,
    /// Left out of the path list until this many reshuffles have happened.
    excluded_until: u64,
}

/// Sender of an NDP flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NdpSource {
    info: FlowInfo,
    proto: Protocol,
    p: NdpParams,
    total: u64,
    next_new: u64,
    acked: u64,
    /// Packets to resend on the next pulls: (seq, the path it was lost on).
    rtx: VecDeque<(u64, u32)>,
    /// Packets sent and not yet settled, with their deadlines.
    outstanding: Outstanding,
    last_pull: u64,
    /// Pulls that found nothing to send, kept for NACKs they overtook
    /// (`keep_early_pulls`).
    idle_pulls: u64,
    /// ACKs and NACKs received: with `last_pull`, the pulls still owed.
    feedback: u64,
    /// The last `RECENT` ACKs, NACKs and bounces, newest in bit 0 (1 = ACK),
    /// for the RTS rule (A7).
    recent: u32,
    recent_len: u32,
    paths: PathList,
    path_idx: usize,
    /// How many times the path list has been shuffled (the loss exclusion's clock).
    reshuffles: u64,
    scores: Vec<PathScore>,
    /// Per-path losses, empty until the first timeout.
    losses: Vec<PathLoss>,
    rtt: RttEstimator,
    /// Counters.
    pub stats: SourceStats,
}

impl NdpSource {
    /// A sender for `flow`.
    pub fn new(flow: &FlowInfo, proto: Protocol, p: &NdpParams) -> Self {
        let size = flow.size.unwrap_or(u64::MAX / 2);
        let total = size.div_ceil(p.mtu_bytes as u64).max(1);
        NdpSource {
            info: flow.clone(),
            proto,
            p: p.clone(),
            total,
            next_new: 0,
            acked: 0,
            rtx: VecDeque::new(),
            outstanding: Outstanding::default(),
            last_pull: 0,
            idle_pulls: 0,
            feedback: 0,
            recent: 0,
            recent_len: 0,
            paths: PathList::new(flow.num_paths),
            path_idx: usize::MAX,
            reshuffles: 0,
            scores: vec![PathScore::default(); flow.num_paths as usize],
            losses: Vec::new(),
            rtt: RttEstimator::default(),
            stats: SourceStats::default(),
        }
    }

    /// Payload of packet `seq`.
    fn payload(&self, seq: u64) -> u32 {
        let mtu = self.p.mtu_bytes as u64;
        match self.info.size {
            Some(size) => (size - seq * mtu).min(mtu) as u32,
            None => mtu as u32,
        }
    }

    fn rto(&self) -> u64 {
        match self.rtt.rto(0) {
            Some(r) => r.max(self.p.min_rto.ps),
            None => self.p.min_rto.ps,
        }
    }

    /// Next path: walk a shuffled list, skipping penalised paths and `avoid`.
    fn next_path(&mut self, avoid: Option<u32>, cx: &mut Ctx<'_>) -> u32 {
        let n = self.paths.len();
        if n == 1 {
            return self.paths.get(0);
        }
        if self.p.spray == Spray::Random {
            loop {
                let p = cx.rng.random_range(0..n as u32);
                if Some(p) != avoid {
                    return p;
                }
            }
        }
        for _ in 0..2 * n {
            if self.path_idx >= n {
                self.paths.shuffle(cx.rng);
                self.path_idx = 0;
                self.reshuffles += 1;
            }
            let p = self.paths.get(self.path_idx);
            self.path_idx += 1;
            if Some(p) == avoid {
                continue;
            }
            if self.p.path_penalty && self.penalised(p) {
                continue;
            }
            return p;
        }
        // Every path is penalised: take the next one regardless.
        let p = self.paths.get(self.path_idx % n);
        self.path_idx += 1;
        p
    }

    fn send(&mut self, seq: u64, retx: bool, avoid: Option<u32>, cx: &mut Ctx<'_>) {
        let path = self.next_path(avoid, cx);
        let payload = self.payload(seq);
        let mut f = if seq + 1 == self.total && self.info.size.is_some() {
            flags::LAST
        } else {
            0
        };
        let first_window = seq < self.p.iw_packets as u64 && !retx;
        if first_window {
            f |= flags::SYN;
        }
        if retx {
            f |= flags::RETX;
            self.stats.retransmissions += 1;
        }
        // Without timeout resends no deadline is kept (no timer runs).
        let deadline = if self.p.timeout_resends {
            // The timer runs from when the packet starts on the wire: after
            // the bytes queued at the NIC before it, this call's own included.
            let wire_at = if self.p.rto_from_nic {
                cx.now + tx_time_ps(cx.bytes_ahead(), cx.nic_bps)
            } else {
                cx.now
            };
            let rto = self.rto() as f64;
            wire_at + (rto * (1.0 + 0.25 * (cx.rng.random::<f64>() * 2.0 - 1.0))).round() as u64
        } else {
            NO_DEADLINE
        };
        cx.out.push(Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq,
            // Otherwise unused in data: the path count, for the receiver's spraying.
            ack: self.info.num_paths as u64,
            size: payload + HEADER_BYTES,
            payload,
            path,
            sent_ps: cx.now,
            kind: PacketKind::Data,
            proto: self.proto,
            flags: f,
            prio: self.info.prio,
            rank: 0,
        });
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += payload as u64;
        self.outstanding.insert(
            seq,
            Sent {
                at: cx.now,
                deadline,
                path,
                first_window,
                retx,
            },
        );
    }

    /// Whether A11's avoid counter or a loss exclusion keeps `path` out.
    fn penalised(&self, path: u32) -> bool {
        self.scores[path as usize].avoid > 0
            || self
                .losses
                .get(path as usize)
                .is_some_and(|l| l.excluded_until > self.reshuffles)
    }

    /// Removes `seq` from the outstanding set, returning what was recorded.
    fn settle(&mut self, seq: u64) -> Option<Sent> {
        self.outstanding.remove(seq)
    }

    /// An ACK or NACK: one more pull owed, and one more recent event.
    fn record_feedback(&mut self, ack: bool) {
        self.feedback += 1;
        self.remember(ack);
    }

    /// One more event in the RTS rule's history: ACKs and NACKs, and bounces
    /// too, as in htsim ([C] `count_feedback`), so that a sender whose
    /// window is bouncing sees mostly non-ACKs and waits for pulls.
    fn remember(&mut self, ack: bool) {
        self.recent = (self.recent << 1 | ack as u32) & ((1 << RECENT) - 1);
        self.recent_len = (self.recent_len + 1).min(RECENT);
    }

    /// The mean NACK ratio over the paths with feedback (A11).
    fn mean_nack_ratio(&self) -> f64 {
        let (mut sum, mut cnt) = (0.0, 0u32);
        for sc in self.scores.iter().filter(|s| s.events() > 0) {
            sum += sc.nacks as f64 / sc.events() as f64;
            cnt += 1;
        }
        sum / cnt.max(1) as f64
    }

    /// Spec A11: update one path's score and its avoid counter.
    fn score(&mut self, path: u32, acks: u32, nacks: u32) {
        let s = &mut self.scores[path as usize];
        s.add(acks, nacks);
        if !self.p.path_penalty {
            return;
        }
        let n = s.events();
        let ratio = s.nacks as f64 / n.max(1) as f64;
        // The mean over all paths is a loop over them, so it is computed
        // only for a path that passes the two cheap tests (the same answer).
        let bad = n > PENALTY_MIN_FEEDBACK
            && ratio > PENALTY_MIN_RATIO
            && ratio > PENALTY_MEAN_FACTOR * self.mean_nack_ratio();
        let s = &mut self.scores[path as usize];
        if bad {
            s.avoid = s.avoid.saturating_add(1);
        } else {
            s.avoid = s.avoid.saturating_sub(1);
        }
    }

    /// [P] §3.2.3's path loss counter: a timeout counts one loss against the
    /// path the packet last took. The paper removes "outliers with regards
    /// to packet loss" for a while but gives no rule, so psim's is:
    /// * losses should almost never happen and spraying gives every path the
    ///   same share of packets, so with no faulty path the per-path counts
    ///   are about Poisson around their mean `m` (total losses / paths). A
    ///   path is an outlier when its count is at least [`LOSS_MIN`] and
    ///   above `m + 3·√m`, a tail that chance alone rarely reaches;
    /// * an outlier loss is a strike: the path is left out of the next `2^s`
    ///   reshuffles of the path list (`s` strikes, at most
    ///   [`LOSS_MAX_STRIKES`]), then tried again. A failed link keeps losing
    ///   its probes and is tried ever more rarely. Counts and strikes never
    ///   decay, like A11's: a path that comes back is used until it loses
    ///   again, and a slow path whose packets time out (V24's 1 Gb/s link)
    ///   is left out for ever longer even though some of its packets arrive.
    ///
    /// Exclusion is counted in reshuffles, not time, so an idle flow keeps
    /// no timer for it. Without `path_penalty` the losses are only counted.
    fn count_loss(&mut self, path: u32) {
        if self.losses.is_empty() {
            self.losses = vec![PathLoss::default(); self.scores.len()];
        }
        let l = &mut self.losses[path as usize];
        l.losses = l.losses.saturating_add(1);
        if !self.p.path_penalty {
            return;
        }
        // Timeouts are rare, so the total is summed here rather than kept.
        let total: u64 = self.losses.iter().map(|s| s.losses as u64).sum();
        let mean = total as f64 / self.losses.len() as f64;
        let sc = &mut self.losses[path as usize];
        if sc.losses as u64 >= LOSS_MIN && sc.losses as f64 > mean + 3.0 * mean.sqrt() {
            sc.strikes = (sc.strikes + 1).min(LOSS_MAX_STRIKES);
            sc.excluded_until = self.reshuffles + (1u64 << sc.strikes);
        }
    }

    fn on_pull(&mut self, counter: u64, cx: &mut Ctx<'_>) {
        if counter <= self.last_pull {
            return; // reordered or duplicate pull
        }
        let n = counter - self.last_pull;
        self.last_pull = counter;
        for sent in 0..n {
            if !self.send_pulled(cx) {
                self.idle_pulls += n - sent;
                break;
            }
        }
    }

    /// Sends one packet for a pull, retransmissions first; false when there
    /// is nothing to send.
    fn send_pulled(&mut self, cx: &mut Ctx<'_>) -> bool {
        if let Some((seq, lost_on)) = self.rtx.pop_front() {
            let avoid = self.p.retx_other_path.then_some(lost_on);
            self.send(seq, true, avoid, cx);
        } else if self.next_new < self.total {
            let s = self.next_new;
            self.next_new += 1;
            self.send(s, false, None, cx);
        } else {
            return false;
        }
        true
    }

    /// A NACK names the PULL that answers it: the one it carries, or else
    /// the one queued at the receiver's pacer. If that PULL came first (a
    /// later pull counter did) and found nothing to send, the packet goes
    /// now: otherwise it would wait for a PULL already spent.
    fn spend_early_pull(&mut self, pull_no: u64, cx: &mut Ctx<'_>) {
        if self.p.keep_early_pulls
            && pull_no != 0
            && pull_no <= self.last_pull
            && self.idle_pulls > 0
            && self.send_pulled(cx)
        {
            self.idle_pulls -= 1;
        }
    }

    /// Whether every packet was acknowledged.
    pub fn done(&self) -> bool {
        self.acked == self.total
    }
}

impl Transport for NdpSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        let iw = (self.p.iw_packets as u64).min(self.total);
        for s in 0..iw {
            self.send(s, false, None, cx);
        }
        self.next_new = iw;
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        match pkt.kind {
            PacketKind::Ack => {
                let settled = self.settle(pkt.seq);
                // A second ACK of one packet (a resent copy arrived too)
                // owes no PULL unless `pull_on_duplicate`: the receiver pulls
                // once per packet. Counted as owing one, it left the sender
                // waiting for a PULL that never came, with a bounced packet
                // swallowed and no timer (an 8000-sender incast, 2026-12-06).
                // Of two ACKs of one packet at most one settles it, whatever
                // their order; one that owes a PULL and settles nothing (a
                // NACK settled the packet first) goes uncounted, which costs
                // at most a bounced packet resent at once.
                let owes_pull =
                    settled.is_some() || pkt.has(flags::PULL) || self.p.pull_on_duplicate;
                if let Some(s) = settled {
                    self.acked += 1;
                    if self.acked == self.total && self.info.size.is_some() {
                        // The ACK of the last outstanding packet.
                        self.stats.finish(cx.now);
                        self.outstanding.release();
                    }
                    if !s.retx {
                        self.rtt.sample(cx.now - s.at);
                        self.stats.rtt(cx.now - s.at);
                    }
                    self.score(s.path, 1, 0);
                }
                if owes_pull {
                    self.record_feedback(true);
                } else {
                    self.remember(true);
                }
                if pkt.has(flags::PULL) {
                    self.on_pull(pkt.ack, cx);
                }
            }
            PacketKind::Nack => {
                self.stats.trims += 1;
                if let Some(s) = self.settle(pkt.seq) {
                    self.rtx.push_back((pkt.seq, s.path));
                    self.score(s.path, 0, 1);
                }
                self.record_feedback(false);
                if pkt.has(flags::PULL) && pkt.ack > self.last_pull {
                    self.on_pull(pkt.ack, cx);
                } else {
                    self.spend_early_pull(pkt.ack, cx);
                }
            }
            PacketKind::Pull => self.on_pull(pkt.ack, cx),
            PacketKind::Header if pkt.has(flags::BOUNCED) => {
                // Return-to-sender ([P] §3.2.4, A7).
                self.stats.bounces += 1;
                self.remember(false);
                let Some(s) = self.settle(pkt.seq) else {
                    return;
                };
                self.score(s.path, 0, 3);
                let pulls_outstanding = self.feedback.saturating_sub(self.last_pull);
                let unaccounted = self.outstanding.first_window();
                // More than a quarter ACKs among the recent events, this
                // bounce included: the network delivers, so this path was
                // bad ([C]: `total / acks <= 3` in integers, i.e. total < 4 acks).
                let acks = self.recent.count_ones();
                let resend_now =
                    (pulls_outstanding == 0 && unaccounted <= 1) || acks * 4 > self.recent_len;
                if resend_now {
                    self.send(pkt.seq, true, Some(s.path), cx);
                } else {
                    self.rtx.push_back((pkt.seq, s.path));
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let due = self.outstanding.take_due(cx.now);
        if due.is_empty() {
            return;
        }
        // A packet that times out is resent now, not again on a pull. One
        // pass over the resend list for all of them (one per timeout cost
        // O(timeouts x list) when a large window timed out).
        let mut resent: Vec<u64> = due.iter().map(|&(seq, _)| seq).collect();
        resent.sort_unstable();
        self.rtx.retain(|(q, _)| resent.binary_search(q).is_err());
        for (seq, s) in due {
            self.stats.timeouts += 1;
            self.count_loss(s.path);
            self.send(seq, true, Some(s.path), cx);
        }
    }

    fn poll_at(&self) -> Option<u64> {
        self.outstanding.earliest_deadline()
    }
    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}

/// A flow's paths in the order they are walked, reshuffled each time the
/// list is used up ([P] §3.1.1). A sender and a receiver each keep one, for
/// every flow: 256 paths x 8192 flows, so the entries are 16-bit where the
/// path count allows (8 MiB less than 32-bit entries at that scale).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
enum PathList {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl PathList {
    /// Paths 0..n in order: 16-bit entries when the last, n - 1, fits.
    fn new(n: u32) -> Self {
        if n <= 1 << 16 {
            PathList::Narrow((0..n).map(|p| p as u16).collect())
        } else {
            PathList::Wide((0..n).collect())
        }
    }

    fn len(&self) -> usize {
        match self {
            PathList::Narrow(v) => v.len(),
            PathList::Wide(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize) -> u32 {
        match self {
            PathList::Narrow(v) => u32::from(v[i]),
            PathList::Wide(v) => v[i],
        }
    }

    /// Fisher-Yates with the host's stream: a fresh permutation each time
    /// the list is used up.
    fn shuffle(&mut self, rng: &mut crate::rng::Rng) {
        fn fisher_yates<T>(paths: &mut [T], rng: &mut crate::rng::Rng) {
            for i in (1..paths.len()).rev() {
                let j = rng.random_range(0..=i);
                paths.swap(i, j);
            }
        }
        match self {
            PathList::Narrow(v) => fisher_yates(v, rng),
            PathList::Wide(v) => fisher_yates(v, rng),
        }
    }
}

/// Receiver of an NDP flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NdpSink {
    flow: u64,
    sender: u32,
    me: u32,
    proto: Protocol,
    prio: u8,
    received: Vec<u64>,
    got: u64,
    total: Option<u64>,
    pull_counter: u64,
    /// The pull pacer's settings, offered to the host's pacer once.
    pull: NdpParams,
    /// Whether this sink has offered the host's pacer its settings.
    pacer_set: bool,
    /// Paths back to the sender, walked in shuffled order (`control_spray`;
    /// empty until a packet gives the count, or when off).
    paths: PathList,
    path_idx: usize,
    /// When the last packet of the flow arrived (`resend_last_pull`).
    heard_at: u64,
    /// When the receiver next checks whether the flow has gone quiet:
    /// armed by the first packet, cleared when the flow completes.
    check_at: Option<u64>,
    /// Last PULLs resent since the flow was last heard (the backoff's exponent).
    repulls: u8,
    /// Counters.
    pub stats: SinkStats,
}

/// The most times the quiet wait doubles (64 RTOs, 64 ms at the default).
const MAX_REPULL_BACKOFF: u8 = 6;
/// Resent PULLs in a row without an answer before the receiver gives up
/// (255 RTOs of silence in all): a flow whose sender cannot answer (its
/// data lost outright with `timeout_resends = false`) then leaves the run
/// to end, with its flow unfinished, rather than keep it alive for ever.
const MAX_REPULLS: u8 = 8;

impl NdpSink {
    /// A receiver for the flow of `first`.
    pub fn new(first: &Packet, p: &NdpParams) -> Self {
        NdpSink {
            flow: first.flow,
            sender: first.src,
            me: first.dst,
            proto: first.proto,
            prio: first.prio,
            received: Vec::new(),
            got: 0,
            total: None,
            pull_counter: 0,
            pull: p.clone(),
            pacer_set: false,
            paths: PathList::new(0),
            path_idx: 0,
            heard_at: 0,
            check_at: None,
            repulls: 0,
            stats: SinkStats::default(),
        }
    }

    /// How long the flow may stay quiet before the last PULL is resent.
    fn quiet_limit(&self) -> u64 {
        self.pull.min_rto.ps << self.repulls.min(MAX_REPULL_BACKOFF)
    }

    /// The path of the next control packet: the next of a shuffled path
    /// list with `control_spray` (A19), else `fallback`.
    fn control_path(&mut self, fallback: u32, cx: &mut Ctx<'_>) -> u32 {
        if self.paths.len() < 2 {
            return fallback;
        }
        if self.path_idx >= self.paths.len() {
            self.paths.shuffle(cx.rng);
            self.path_idx = 0;
        }
        self.path_idx += 1;
        self.paths.get(self.path_idx - 1)
    }

    /// A standalone PULL carrying the current pull counter.
    fn send_pull(&mut self, cx: &mut Ctx<'_>) {
        let path = self.control_path(self.pull_counter as u32, cx);
        let mut p = self.control(PacketKind::Pull, 0, path, cx.now);
        p.ack = self.pull_counter;
        cx.out.push(p);
    }

    /// Whether packet `seq` has arrived whole.
    fn has(&self, seq: u64) -> bool {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        self.received
            .get(w)
            .is_some_and(|word| word & (1 << b) != 0)
    }

    /// Records packet `seq` as arrived; whether it is new.
    fn mark(&mut self, seq: u64) -> bool {
        if self.has(seq) {
            return false;
        }
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if self.received.len() <= w {
            self.received.resize(w + 1, 0);
        }
        self.received[w] |= 1 << b;
        true
    }

    fn control(&self, kind: PacketKind, seq: u64, path: u32, now: u64) -> Packet {
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.sender,
            seq,
            ack: 0,
            size: HEADER_BYTES,
            payload: 0,
            path,
            sent_ps: now,
            kind,
            proto: self.proto,
            flags: 0,
            prio: self.prio,
            rank: 0,
        }
    }
}

impl Transport for NdpSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if !self.pacer_set {
            // Spec A9: one pull per MTU payload at the receiver's link rate
            // (the host's first NDP sink sets the pacer up; later ones change nothing).
            self.pacer_set = true;
            cx.services.pulls.configure(
                self.pull.pull_interval_ps(cx.nic_bps),
                self.pull.pull_jitter,
            );
        }
        if self.pull.control_spray && self.paths.is_empty() && pkt.ack > 1 {
            self.paths = PathList::new(pkt.ack.min(u32::MAX as u64) as u32);
            self.path_idx = usize::MAX; // shuffled before first use
        }
        self.stats.packets_received += 1;
        if pkt.has(flags::LAST) {
            self.total = Some(pkt.seq + 1);
        }
        let mut duplicate = false;
        let kind = match pkt.kind {
            PacketKind::Data => {
                if self.mark(pkt.seq) {
                    self.got += 1;
                    self.stats.bytes_received += pkt.payload as u64;
                } else {
                    duplicate = true;
                }
                PacketKind::Ack
            }
            PacketKind::Header if self.has(pkt.seq) && !self.pull.pull_on_duplicate => {
                // A trimmed copy of a packet that has arrived whole: the
                // sender resent it because the first ACK was lost. ACK it
                // again; a NACK would have the sender resend it once more
                // on a PULL that its copy never gave.
                duplicate = true;
                PacketKind::Ack
            }
            PacketKind::Header => PacketKind::Nack,
            _ => return,
        };
        let path = self.control_path(pkt.path, cx);
        let mut reply = self.control(kind, pkt.seq, path, cx.now);
        let complete = self.total == Some(self.got);
        self.heard_at = cx.now;
        if !complete && self.pull.resend_last_pull && (self.check_at.is_none() || self.repulls > 0)
        {
            // Armed once per flow; after a resend, back to one RTO from now.
            self.repulls = 0;
            self.check_at = Some(cx.now + self.quiet_limit());
        }
        if complete {
            if self.stats.finish_ps.is_none() {
                self.stats.finish_ps = Some(cx.now);
            }
            cx.services.pulls.flush(cx.slot);
            self.check_at = None;
        } else if duplicate && !self.pull.pull_on_duplicate {
            // Its copy was pulled for already (`pull_on_duplicate`).
        } else if cx.services.pulls.can_piggyback(cx.now) {
            self.pull_counter += 1;
            reply.flags |= flags::PULL;
            reply.ack = self.pull_counter;
            cx.services.pulls.note_pull(cx.now);
        } else {
            cx.services.pulls.request(cx.slot, self.prio > 0);
            if kind == PacketKind::Nack {
                // The number its PULL will carry (`keep_early_pulls`): the
                // pacer grants a flow's requests in order, each one PULL.
                reply.ack = self.pull_counter + cx.services.pulls.pending(cx.slot) as u64;
            }
        }
        cx.out.push(reply);
    }

    /// The host's pacer chose this flow: emit one PULL.
    fn on_grant(&mut self, cx: &mut Ctx<'_>) {
        if self.total == Some(self.got) {
            return;
        }
        self.pull_counter += 1;
        self.send_pull(cx);
    }

    /// `resend_last_pull`: the flow may have gone quiet because its last
    /// PULL was lost. Resent with the same counter, it releases only what
    /// a lost PULL owed; if the PULL arrived it is a duplicate, ignored.
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        if self.total == Some(self.got) {
            self.check_at = None;
            return;
        }
        let quiet_until = self.heard_at + self.quiet_limit();
        if cx.now < quiet_until {
            // Heard since the check was armed: check again later.
            self.check_at = Some(quiet_until);
            return;
        }
        if cx.services.pulls.pending(cx.slot) > 0 {
            // Its PULL waits its turn at the pacer (an incast's flows wait
            // tens of milliseconds): nothing is lost. Check again once every
            // waiting flow has had a turn and an RTO has passed, rather than
            // every RTO while the flow waits.
            self.check_at = Some(cx.now + cx.services.pulls.round_ps() + self.quiet_limit());
            return;
        }
        // Nothing pulled yet, nothing owed (the initial window's losses are
        // the sender's timers' to find).
        if self.pull_counter > 0 {
            self.send_pull(cx);
        }
        self.repulls += 1;
        self.check_at = (self.repulls < MAX_REPULLS).then(|| cx.now + self.quiet_limit());
    }

    fn poll_at(&self) -> Option<u64> {
        self.check_at
    }
    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::testkit::Host;

    fn info(size: u64, paths: u32) -> FlowInfo {
        FlowInfo {
            id: 1,
            src: 0,
            dst: 5,
            size: Some(size),
            start_ps: 0,
            prio: 0,
            num_paths: paths,
            ecmp_path: 0,
            nic_bps: 10_000_000_000,
            ideal_fct_ps: None,
            app: None,
            read: false,
        }
    }

    /// A source for `info`, on a test-kit host.
    fn source(info: &FlowInfo, p: &NdpParams) -> Host<NdpSource> {
        Host::new(0, NdpSource::new(info, Protocol::Ndp, p))
    }

    fn ctl(kind: PacketKind, seq: u64, ack: u64, fl: u8) -> Packet {
        Packet {
            flow: 1,
            src: 5,
            dst: 0,
            seq,
            ack,
            size: 64,
            payload: 0,
            path: 0,
            sent_ps: 0,
            kind,
            proto: Protocol::Ndp,
            flags: fl,
            prio: 0,
            rank: 0,
        }
    }

    /// A full data packet `seq` from host 0 to host 5.
    fn data(seq: u64) -> Packet {
        Packet {
            kind: PacketKind::Data,
            payload: 9000,
            size: 9064,
            src: 0,
            dst: 5,
            ..ctl(PacketKind::Data, seq, 0, 0)
        }
    }

    /// The trimmed header of data packet `seq`.
    fn header(seq: u64) -> Packet {
        Packet {
            kind: PacketKind::Header,
            payload: 0,
            size: 64,
            ..data(seq)
        }
    }

    #[test]
    fn first_window_is_sent_at_once_on_distinct_paths() {
        let mut h = source(&info(100 * 9000, 16), &NdpParams::default());
        let out = h.start(0);
        assert_eq!(out.len(), 23);
        let paths: std::collections::BTreeSet<u32> = out[..16].iter().map(|p| p.path).collect();
        assert_eq!(paths.len(), 16, "one packet per path before reshuffling");
        assert!(out.iter().all(|p| p.has(flags::SYN) && p.size == 9064));
    }

    #[test]
    fn pull_interval_settings_match_the_closed_form() {
        // A9: 9000 B at 10 Gb/s = 7.2 µs.
        assert_eq!(
            NdpParams::default().pull_interval_ps(10_000_000_000),
            7_200_000
        );
        // htsim's pacing (issue 19): (4000 + 64) B at 100 Gb/s = 325.12 ns, at 0.99 of the rate 328.4 ns.
        let htsim = NdpParams {
            mtu_bytes: 4000,
            pull_rate: 0.99,
            pull_counts_header: true,
            ..NdpParams::default()
        };
        let got = htsim.pull_interval_ps(100_000_000_000);
        assert_eq!(got, (325_120.0f64 / 0.99).round() as u64);
        assert!((328_400..328_500).contains(&got));
        let bad = NdpParams {
            pull_rate: 0.0,
            ..NdpParams::default()
        };
        assert!(bad.validate("protocol.ndp").is_err());
    }

    #[test]
    fn pull_counter_advance_sends_that_many_packets_retransmissions_first() {
        let mut h = source(&info(100 * 9000, 4), &NdpParams::default());
        h.start(0);
        let out = h.deliver(10, ctl(PacketKind::Nack, 3, 0, 0));
        assert!(
            out.is_empty(),
            "a NACK queues the packet but does not send it"
        );
        let out = h.deliver(20, ctl(PacketKind::Pull, 0, 2, 0));
        let seqs: Vec<u64> = out.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, vec![3, 23]);
        assert!(out[0].has(flags::RETX));
        // A reordered, older pull does nothing.
        assert!(h.deliver(30, ctl(PacketKind::Pull, 0, 1, 0)).is_empty());
        assert_eq!(h.ep.stats.trims, 1);
    }

    #[test]
    fn last_packet_is_marked_and_short() {
        let mut h = source(&info(20_000, 1), &NdpParams::default());
        let out = h.start(0);
        let sizes: Vec<u32> = out.iter().map(|p| p.payload).collect();
        assert_eq!(sizes, vec![9000, 9000, 2000]);
        assert!(out[2].has(flags::LAST) && !out[1].has(flags::LAST));
    }

    #[test]
    fn sink_acks_data_nacks_headers_and_requests_pulls() {
        let mut h = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        // First arrival: the pull queue is empty and no pull has gone: the ACK carries the pull.
        let out = h.deliver(0, data(0));
        assert_eq!(out[0].kind, PacketKind::Ack);
        assert!(out[0].has(flags::PULL));
        assert_eq!(out[0].ack, 1);
        // A header 1 us later: NACK at once, the pull waits in the pacer.
        let out = h.deliver(1_000_000, header(1));
        assert_eq!(out[0].kind, PacketKind::Nack);
        assert!(!out[0].has(flags::PULL));
        assert_eq!(h.services.pulls.next_due(1_000_000, 0.0), Some(7_200_000));
        let out = h.advance(7_200_000);
        assert_eq!(
            (out[0].0, out[0].1.kind, out[0].1.ack),
            (7_200_000, PacketKind::Pull, 2)
        );
    }

    /// A second copy of a packet (a timer resend whose original was only
    /// late, or whose ACK was lost), whole or trimmed, is ACKed but pulls nothing: the
    /// packets in flight stay as many as the first window. htsim's choice
    /// (`pull_on_duplicate`) pulls for it like any arrival.
    #[test]
    fn a_duplicate_pulls_nothing_unless_asked() {
        for on in [false, true] {
            let p = NdpParams {
                pull_on_duplicate: on,
                ..NdpParams::default()
            };
            let mut h = Host::new(5, NdpSink::new(&data(0), &p));
            assert_eq!(h.deliver(0, data(0))[0].ack, 1, "the ACK carries PULL 1");
            // A pull interval later, the copy: ACKed, and pulled for only when on.
            let copy = h.deliver(10_000_000, data(0));
            assert_eq!(copy[0].kind, PacketKind::Ack);
            assert_eq!(copy[0].has(flags::PULL), on);
            // A trimmed copy: the packet did arrive, so it is ACKed again
            // (a NACK would have it resent once more) and pulls nothing;
            // htsim NACKs and pulls for it.
            let trimmed = h.deliver(20_000_000, header(0));
            let kind = if on {
                PacketKind::Nack
            } else {
                PacketKind::Ack
            };
            assert_eq!((trimmed[0].kind, trimmed[0].seq), (kind, 0));
            assert_eq!(trimmed[0].has(flags::PULL), on);
            // A new packet pulls as ever.
            let next = h.deliver(30_000_000, data(1));
            assert_eq!(next[0].ack, if on { 4 } else { 2 });
            assert_eq!(h.ep.stats.bytes_received, 18_000);
        }
    }

    /// A flow whose last PULL is lost goes quiet. After an RTO of silence
    /// the receiver sends that PULL again with the same counter, then waits
    /// twice as long before the next; the sender answers the resent PULL
    /// with the NACKed packet the lost one owed, and ignores a duplicate.
    /// The timer stops when the flow completes, and never runs when off.
    #[test]
    fn a_quiet_flow_gets_its_last_pull_again() {
        const MS: u64 = 1_000_000_000;
        const US: u64 = 1_000_000;
        let mut sink = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        assert_eq!(sink.deliver(0, data(0))[0].ack, 1, "the ACK carries PULL 1");
        assert_eq!(sink.deliver(US, header(1))[0].kind, PacketKind::Nack);
        let pulls = sink.advance(8 * US);
        assert_eq!(
            pulls
                .iter()
                .map(|(t, p)| (*t, p.kind, p.ack))
                .collect::<Vec<_>>(),
            [(7_200_000, PacketKind::Pull, 2)],
            "the pacer sends PULL 2, which is lost"
        );
        // Quiet since 1 us: the PULL again at 1 ms + 1 us, then 2 ms and 4 ms later.
        let again = sink.advance(US + 7 * MS);
        assert_eq!(
            again
                .iter()
                .map(|(t, p)| (*t, p.kind, p.ack))
                .collect::<Vec<_>>(),
            [
                (US + MS, PacketKind::Pull, 2),
                (US + 3 * MS, PacketKind::Pull, 2),
                (US + 7 * MS, PacketKind::Pull, 2),
            ]
        );
        // The sender: three packets, all in the first window. Packet 1 was
        // trimmed and its PULL (2) lost; the resent PULL 2 sends it, a
        // duplicate sends nothing.
        let mut src = source(&info(3 * 9000, 4), &NdpParams::default());
        assert_eq!(src.start(0).len(), 3);
        assert!(src
            .deliver(10, ctl(PacketKind::Ack, 0, 1, flags::PULL))
            .is_empty());
        assert!(src.deliver(11, ctl(PacketKind::Nack, 1, 2, 0)).is_empty());
        let out = src.deliver(US + MS, ctl(PacketKind::Pull, 0, 2, 0));
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [1]);
        assert!(src
            .deliver(US + MS + 1, ctl(PacketKind::Pull, 0, 2, 0))
            .is_empty());
        // Heard again (its ACK carries PULL 3): the wait is one RTO again.
        assert_eq!(sink.deliver(8 * MS, data(1))[0].ack, 3);
        let again = sink.advance(11 * MS);
        assert_eq!(
            again
                .iter()
                .map(|(t, p)| (*t, p.kind, p.ack))
                .collect::<Vec<_>>(),
            [
                (9 * MS, PacketKind::Pull, 3),
                (11 * MS, PacketKind::Pull, 3)
            ]
        );
        // Complete: the check is cleared.
        let last = Packet {
            flags: flags::LAST,
            ..data(2)
        };
        sink.deliver(12 * MS, last);
        assert_eq!(sink.ep.poll_at(), None);
        // Off (htsim): the same quiet flow has no timer.
        let off = NdpParams {
            resend_last_pull: false,
            ..NdpParams::default()
        };
        let mut quiet = Host::new(5, NdpSink::new(&data(0), &off));
        quiet.deliver(0, data(0));
        quiet.deliver(US, header(1));
        assert_eq!(quiet.advance(100 * MS).len(), 1, "only the pacer's PULL 2");
        assert_eq!(quiet.ep.poll_at(), None);
        // Its PULL waits at the pacer behind two other flows' (an incast):
        // nothing is resent, and the next check comes once the pacer has
        // served all three (3 x 7.2 us), plus an RTO.
        let mut waiting = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        waiting.deliver(0, data(0));
        for slot in [7, 8, 0] {
            waiting.services.pulls.request(slot, false);
        }
        let sent = waiting.with(MS, |ep, cx| {
            ep.on_timer(cx);
            cx.out.len()
        });
        assert_eq!(sent, 0);
        assert_eq!(waiting.ep.poll_at(), Some(MS + 3 * 7_200_000 + MS));
        // Never answered: eight resends, the wait doubling up to 64 ms, then
        // the receiver gives up, so that a run can end with the flow unfinished.
        let mut lost = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        lost.deliver(0, data(0));
        lost.deliver(US, header(1));
        let resent: Vec<u64> = lost
            .advance(u64::MAX)
            .iter()
            .filter(|(t, _)| *t > 8 * US)
            .map(|(t, _)| (t - US) / MS)
            .collect();
        assert_eq!(resent, [1, 3, 7, 15, 31, 63, 127, 191]);
        assert_eq!(lost.ep.poll_at(), None);
    }

    /// A packet's timer runs from its estimated start on the wire: behind
    /// 1 ms of bytes already at the NIC, and behind the first window's
    /// earlier packets, not from when the sender queued it.
    #[test]
    fn the_timer_runs_from_the_packets_start_on_the_wire() {
        const MS: u64 = 1_000_000_000;
        for from_nic in [true, false] {
            let p = NdpParams {
                rto_from_nic: from_nic,
                ..NdpParams::default()
            };
            let mut h = source(&info(2 * 9000, 4), &p);
            h.nic_queued_bytes = 1_250_000; // 1 ms at 10 Gb/s
            h.start(0);
            let first = h.ep.poll_at().unwrap();
            // 1 ms minimum RTO, jittered by at most ±25%.
            if from_nic {
                assert!(
                    (MS + 3 * MS / 4..=MS + 5 * MS / 4).contains(&first),
                    "{first}"
                );
                // The second packet waits for the first: a deadline of its own
                // 9064 B later, drawn from the same jitter range.
                h.deliver(10, ctl(PacketKind::Ack, 0, 0, 0));
                let second = h.ep.poll_at().unwrap();
                let wire = MS + tx_time_ps(9064, 10_000_000_000);
                assert!(
                    (wire + 3 * MS / 4..=wire + 5 * MS / 4).contains(&second),
                    "{second}"
                );
            } else {
                assert!((3 * MS / 4..=5 * MS / 4).contains(&first), "{first}");
            }
        }
    }

    /// The NACK of a header whose PULL waits in the pacer names that PULL's
    /// number, so a sender that saw the PULL first knows it was this one's.
    #[test]
    fn a_nack_names_the_pull_that_will_answer_it() {
        let mut h = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        h.deliver(0, data(0)); // pull 1, piggybacked on the ACK
        let nacks: Vec<Packet> = [1, 2, 3]
            .into_iter()
            .flat_map(|s| h.deliver(1_000 * s, header(s)))
            .collect();
        assert!(nacks.iter().all(|n| !n.has(flags::PULL)));
        let named: Vec<u64> = nacks.iter().map(|n| n.ack).collect();
        assert_eq!(named, vec![2, 3, 4]);
        let pulls: Vec<u64> = [7_200_000, 14_400_000, 21_600_000]
            .into_iter()
            .flat_map(|t| h.advance(t))
            .map(|(_, p)| p.ack)
            .collect();
        assert_eq!(
            pulls, named,
            "each queued PULL carries the number its NACK named"
        );
    }

    /// A PULL that overtakes its NACK (sprayed control packets take different
    /// paths) finds nothing to send. It is kept for that NACK, which is resent
    /// at once; otherwise the packet would wait for a PULL already spent, with
    /// no timer running on it.
    #[test]
    fn a_pull_that_overtook_its_nack_is_spent_on_it() {
        for keep in [true, false] {
            let p = NdpParams {
                keep_early_pulls: keep,
                ..NdpParams::default()
            };
            let mut h = source(&info(2 * 9000, 4), &p);
            assert_eq!(h.start(0).len(), 2, "both packets in the first window");
            // Packet 1 arrives; its pull (1) rides the ACK and finds nothing to send.
            assert!(h
                .deliver(10, ctl(PacketKind::Ack, 1, 1, flags::PULL))
                .is_empty());
            // Packet 0 was trimmed; its PULL (2) overtakes the NACK.
            assert!(h.deliver(20, ctl(PacketKind::Pull, 0, 2, 0)).is_empty());
            let out = h.deliver(30, ctl(PacketKind::Nack, 0, 2, 0));
            if keep {
                assert_eq!(out.len(), 1);
                assert!(out[0].seq == 0 && out[0].has(flags::RETX));
                // The idle pull of packet 1 is not spent on a NACK whose PULL is yet to come.
                let mut h2 = source(&info(2 * 9000, 4), &p);
                h2.start(0);
                h2.deliver(10, ctl(PacketKind::Ack, 1, 1, flags::PULL));
                assert!(h2.deliver(30, ctl(PacketKind::Nack, 0, 2, 0)).is_empty());
                let out = h2.deliver(40, ctl(PacketKind::Pull, 0, 2, 0));
                assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0]);
                // A NACK carrying its own pull (1), overtaken by the next ACK's pull (2).
                let mut h3 = source(&info(2 * 9000, 4), &p);
                h3.start(0);
                h3.deliver(10, ctl(PacketKind::Ack, 1, 2, flags::PULL));
                let out = h3.deliver(20, ctl(PacketKind::Nack, 0, 1, flags::PULL));
                assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0]);
            } else {
                assert!(out.is_empty(), "htsim's sender spent the pull on nothing");
                assert_eq!(h.ep.poll_at(), None, "and no timer runs: the flow stalls");
            }
        }
    }

    #[test]
    fn sink_finishes_when_every_packet_arrived_and_flushes_its_pulls() {
        let mut h = Host::new(5, NdpSink::new(&data(0), &NdpParams::default()));
        let last = Packet {
            flags: flags::LAST,
            ..data(1)
        };
        h.deliver(10, last.clone());
        assert_eq!(h.ep.stats.finish_ps, None);
        h.deliver(11, last);
        assert_eq!(h.ep.stats.bytes_received, 9000, "duplicates do not count");
        h.deliver(20, data(0));
        assert_eq!(h.ep.stats.finish_ps, Some(20));
        assert!(h.services.pulls.is_empty());
    }

    #[test]
    fn a_bounce_is_resent_at_once_only_when_no_pulls_are_expected() {
        let p = NdpParams {
            iw_packets: 2,
            ..Default::default()
        };
        let mut h = source(&info(100 * 9000, 4), &p);
        h.start(0);
        // Packet 0 is ACKed, so a pull is owed; but 1 ACK among 2 recent events
        // (the ACK and this bounce: 50% > 25%) means the network delivers:
        // resend packet 1 at once.
        assert!(h.deliver(5, ctl(PacketKind::Ack, 0, 0, 0)).is_empty());
        let out = h.deliver(6, ctl(PacketKind::Header, 1, 0, flags::BOUNCED));
        assert_eq!(out.len(), 1);
        assert_eq!(h.ep.stats.bounces, 1);
        // A fresh flow whose whole first window bounces, with no feedback yet: resend at once.
        let mut h = source(&info(9000, 4), &NdpParams::default());
        let path = h.start(0)[0].path;
        let bounced = Packet {
            path,
            ..ctl(PacketKind::Header, 0, 0, flags::BOUNCED)
        };
        let out = h.deliver(6, bounced);
        assert_eq!(out.len(), 1);
        assert_ne!(out[0].path, path, "a resend takes a different path");
    }

    #[test]
    fn bounces_count_as_recent_events_against_resending_at_once() {
        // [C]: the history holds bounces, and a bounce is resent at once only
        // with more than 25% ACKs in it. One ACK, then bounces of packets 1,
        // 2 and 3 while pulls are owed: 1 of 2 and 1 of 3 events are ACKs
        // (resend), 1 of 4 is not more than a quarter (wait for a pull).
        let p = NdpParams {
            iw_packets: 8,
            ..Default::default()
        };
        let mut h = source(&info(100 * 9000, 4), &p);
        h.start(0);
        assert!(h.deliver(5, ctl(PacketKind::Ack, 0, 0, 0)).is_empty());
        for (seq, resent) in [(1, true), (2, true), (3, false)] {
            let out = h.deliver(6, ctl(PacketKind::Header, seq, 0, flags::BOUNCED));
            assert_eq!(out.len(), resent as usize, "bounce of packet {seq}");
        }
        let out = h.deliver(7, ctl(PacketKind::Pull, 0, 1, 0));
        assert_eq!(out[0].seq, 3, "the swallowed bounce goes on the next pull");
    }

    #[test]
    fn a_duplicate_ack_owes_no_pull() {
        // The receiver pulls once per packet (`pull_on_duplicate` off), so a
        // second ACK of packet 12 must not leave a PULL owed: with none owed
        // and the first window accounted for, the bounce of packet 13 is
        // resent at once. Counted as owed, the bounce waited for a PULL that
        // never came (the flow stalled with no timer left).
        let p = NdpParams {
            iw_packets: 14,
            ..Default::default()
        };
        let mut h = source(&info(100 * 9000, 4), &p);
        h.start(0);
        for seq in 0..12 {
            assert!(h.deliver(5, ctl(PacketKind::Nack, seq, 0, 0)).is_empty());
        }
        assert!(h.deliver(6, ctl(PacketKind::Ack, 12, 0, 0)).is_empty());
        assert_eq!(h.deliver(7, ctl(PacketKind::Pull, 0, 13, 0)).len(), 13);
        assert!(h.deliver(8, ctl(PacketKind::Ack, 12, 0, 0)).is_empty());
        let out = h.deliver(9, ctl(PacketKind::Header, 13, 0, flags::BOUNCED));
        assert_eq!(out.len(), 1, "no PULL is owed: resend the bounce now");
        assert_eq!(out[0].seq, 13);
    }

    #[test]
    fn a_bounce_waits_for_a_pull_when_recent_feedback_is_mostly_nacks() {
        let mut h = source(&info(100 * 9000, 4), &NdpParams::default());
        h.start(0);
        for seq in 0..12 {
            assert!(h.deliver(5, ctl(PacketKind::Nack, seq, 0, 0)).is_empty());
        }
        let out = h.deliver(6, ctl(PacketKind::Header, 12, 0, flags::BOUNCED));
        assert!(out.is_empty(), "pulls are owed and feedback is all NACKs");
        let out = h.deliver(7, ctl(PacketKind::Pull, 0, 1, 0));
        assert_eq!(out[0].seq, 0, "queued retransmissions go in NACK order");
    }

    #[test]
    fn path_penalty_skips_a_path_with_outlying_nacks() {
        // Spec A11: > 100 feedback events, NACK ratio > 30% and > 1.25x the mean.
        let mut h = source(&info(10_000 * 9000, 4), &NdpParams::default());
        for round in 0..150 {
            for path in 0..4 {
                h.ep.score(
                    path,
                    (path != 2) as u32,
                    (path == 2 || round % 10 == 0) as u32,
                );
            }
        }
        assert!(h.ep.scores[2].avoid > 0);
        assert!(h
            .ep
            .scores
            .iter()
            .enumerate()
            .all(|(p, sc)| p == 2 || sc.avoid == 0));
        let paths: Vec<u32> = (0..40)
            .map(|_| h.with(0, |s, cx| s.next_path(None, cx)))
            .collect();
        assert!(!paths.contains(&2), "{paths:?}");
        // Without the penalty every path is used.
        h.ep.p.path_penalty = false;
        let paths: std::collections::BTreeSet<u32> = (0..40)
            .map(|_| h.with(0, |s, cx| s.next_path(None, cx)))
            .collect();
        assert_eq!(paths.len(), 4);
    }

    /// [P] §3.2.3's loss counter: a path that loses every packet (a failed
    /// link) becomes an outlier once its count passes mean + 3·√mean. With 4
    /// paths and all L losses on one, that is L > L/4 + 1.5·√L, so L = 5. It
    /// is then left out for 2, 4, 8, … reshuffles. Losses spread evenly never
    /// exclude a path.
    #[test]
    fn a_path_that_keeps_losing_packets_is_left_out_for_a_doubling_while() {
        let mut h = source(&info(10_000 * 9000, 4), &NdpParams::default());
        h.start(0);
        let sweep = |h: &mut Host<NdpSource>| -> Vec<u32> {
            (0..12)
                .map(|_| h.with(0, |s, cx| s.next_path(None, cx)))
                .collect()
        };
        for _ in 0..4 {
            h.ep.count_loss(2);
        }
        assert!(
            sweep(&mut h).contains(&2),
            "4 losses are not yet an outlier"
        );
        h.ep.count_loss(2);
        assert_eq!(h.ep.losses[2].strikes, 1);
        let r = h.ep.reshuffles;
        assert_eq!(h.ep.losses[2].excluded_until, r + 2);
        // Left out while the list is reshuffled twice, then back.
        let mut picks = Vec::new();
        while h.ep.reshuffles < r + 2 {
            picks.push(h.with(0, |s, cx| s.next_path(None, cx)));
        }
        assert!(!picks[..picks.len() - 1].contains(&2), "{picks:?}");
        assert!(sweep(&mut h).contains(&2));
        // A second outlier loss doubles the exclusion, and so on up to 2^8.
        h.ep.count_loss(2);
        assert_eq!(h.ep.losses[2].strikes, 2);
        assert_eq!(h.ep.losses[2].excluded_until, h.ep.reshuffles + 4);
        for _ in 0..20 {
            h.ep.count_loss(2);
        }
        assert_eq!(h.ep.losses[2].excluded_until, h.ep.reshuffles + 256);
        // Without the penalty the losses are counted, nothing is excluded.
        let mut h = source(&info(10_000 * 9000, 4), &NdpParams::default());
        h.ep.p.path_penalty = false;
        for _ in 0..20 {
            h.ep.count_loss(1);
        }
        assert_eq!(
            (h.ep.losses[1].losses, h.ep.losses[1].excluded_until),
            (20, 0)
        );
        // Evenly spread losses: no path is an outlier.
        let mut h = source(&info(10_000 * 9000, 4), &NdpParams::default());
        for i in 0..400 {
            h.ep.count_loss(i % 4);
        }
        assert!(h.ep.losses.iter().all(|sc| sc.strikes == 0));
    }

    /// The per-path counters halve rather than wrap or saturate, at either
    /// count's limit, so the NACK ratio A11 reads stays the same.
    #[test]
    fn path_counters_halve_at_their_limit_keeping_the_nack_ratio() {
        let mut sc = PathScore {
            acks: u32::MAX - 1,
            nacks: 40_000,
            avoid: 0,
        };
        sc.add(1, 0);
        assert_eq!((sc.acks, sc.nacks), (u32::MAX, 40_000));
        sc.add(1, 0);
        assert_eq!((sc.acks, sc.nacks), (u32::MAX / 2 + 1, 20_000));
        sc.add(0, 3);
        assert_eq!(sc.nacks, 20_003);
        // The NACK count's limit: 300,000 ACKs and 65,534 NACKs (a ratio
        // of 0.1793) become 150,000 and 32,767 before 3 more NACKs count.
        let mut sc = PathScore {
            acks: 300_000,
            nacks: u16::MAX - 1,
            avoid: 0,
        };
        sc.add(0, 3);
        assert_eq!((sc.acks, sc.nacks), (150_000, 32_770));
        let before = (u16::MAX - 1) as f64 / (300_000.0 + (u16::MAX - 1) as f64);
        let after = 32_770.0 / (150_000.0 + 32_770.0);
        assert!((after - before).abs() < 1e-4, "{before} {after}");
        // 256 paths x 8192 flows of these is 16 MiB.
        assert_eq!(std::mem::size_of::<PathScore>(), 8);
    }

    /// A sender keeps no loss state until its first timeout.
    #[test]
    fn loss_state_is_allocated_on_the_first_loss() {
        let mut h = source(&info(10_000 * 9000, 4), &NdpParams::default());
        h.start(0);
        assert!(h.ep.losses.is_empty());
        h.ep.count_loss(3);
        assert_eq!(h.ep.losses.len(), 4);
        assert_eq!(h.ep.losses[3].losses, 1);
    }

    /// [P] §3.2: a NACKed packet is resent, on the next PULL, on a path other
    /// than the one it was trimmed on; with two paths that is the other one
    /// every time. Without `retx_other_path`, the permutation alone decides,
    /// and over 20 resends the same path comes up again.
    #[test]
    fn a_nacked_packet_is_resent_on_another_path() {
        let resend_paths = |other: bool| {
            let p = NdpParams {
                iw_packets: 1,
                retx_other_path: other,
                ..NdpParams::default()
            };
            let mut h = source(&info(9000 * 40, 2), &p);
            let mut path = h.start(0)[0].path;
            let mut same = 0;
            for i in 1..=20u64 {
                assert!(h
                    .deliver(i * 1000, ctl(PacketKind::Nack, 0, 0, 0))
                    .is_empty());
                let out = h.deliver(i * 1000 + 1, ctl(PacketKind::Pull, 0, i, 0));
                assert_eq!(out.len(), 1);
                assert_eq!((out[0].seq, out[0].has(flags::RETX)), (0, true));
                same += (out[0].path == path) as u32;
                path = out[0].path;
            }
            same
        };
        assert_eq!(resend_paths(true), 0);
        assert!(resend_paths(false) > 0);
    }

    /// A19: with `control_spray` the receiver's ACKs walk a shuffled list of
    /// the 4 paths the data packets announce (each block of 4 uses every
    /// path once), although every data packet came on path 0; without it
    /// they return on the data packet's path.
    #[test]
    fn the_receiver_sprays_its_acks_over_a_shuffled_path_list() {
        let ack_paths = |spray: bool| {
            let p = NdpParams {
                control_spray: spray,
                ..NdpParams::default()
            };
            let mut h = Host::new(5, NdpSink::new(&data(0), &p));
            let mut paths = Vec::new();
            for seq in 0..12 {
                let pkt = Packet {
                    ack: 4,
                    ..data(seq)
                };
                for out in h.deliver(seq * 10_000_000, pkt) {
                    if out.kind == PacketKind::Ack {
                        paths.push(out.path);
                    }
                }
            }
            paths
        };
        let sprayed = ack_paths(true);
        assert_eq!(sprayed.len(), 12);
        for block in sprayed.chunks(4) {
            let mut b = block.to_vec();
            b.sort();
            assert_eq!(b, [0, 1, 2, 3], "{sprayed:?}");
        }
        assert_eq!(ack_paths(false), vec![0; 12]);
    }

    /// `timeout_resends = false` (htsim): no timer is ever armed, so a packet
    /// without feedback is not resent; feedback still settles it.
    #[test]
    fn without_timeout_resends_no_timer_runs() {
        let p = NdpParams {
            timeout_resends: false,
            ..NdpParams::default()
        };
        let mut h = source(&info(9000 * 2, 4), &p);
        assert_eq!(h.start(0).len(), 2);
        assert_eq!(h.ep.poll_at(), None);
        let later = 1_000_000_000_000; // 1 s, a thousand minimum RTOs
        assert!(h.advance(later).is_empty());
        h.deliver(later + 10, ctl(PacketKind::Ack, 0, 0, 0));
        h.deliver(later + 20, ctl(PacketKind::Ack, 1, 0, 0));
        assert!(h.ep.done());
        assert_eq!(h.ep.stats.timeouts, 0);
    }

    #[test]
    fn a_lost_packet_is_resent_after_the_rto_on_another_path() {
        let mut h = source(&info(9000, 4), &NdpParams::default());
        let first = h.start(0)[0].path;
        let due = h.ep.poll_at().unwrap();
        // 1 ms min RTO with +-25% jitter.
        assert!((750_000_000..=1_250_000_000).contains(&due), "{due}");
        let out = h.advance(due);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, due);
        assert_ne!(out[0].1.path, first);
        assert_eq!((h.ep.stats.timeouts, h.ep.stats.retransmissions), (1, 1));
        h.deliver(due + 10, ctl(PacketKind::Ack, 0, 0, 0));
        assert!(h.ep.done());
        assert_eq!(h.ep.poll_at(), None);
    }

    /// Through the test kit, with the pull pacer run as the host service: a
    /// trimmed header gets its NACK at once, and its PULL when the pacer
    /// allows one, a pull interval (9000 B at 10 Gb/s: 7.2 µs) after the
    /// PULL piggybacked on the first ACK.
    #[test]
    fn a_trimmed_header_gets_a_nack_at_once_and_a_pull_at_the_pacer_time() {
        use crate::transport::testkit::{expect_out, recv, recv_nothing, Host};
        use crate::transport::{ProtocolParams, Transport};
        let data = Packet {
            kind: PacketKind::Data,
            payload: 9000,
            size: 9064,
            src: 0,
            dst: 5,
            ..ctl(PacketKind::Data, 0, 0, 0)
        };
        let hdr = Packet {
            kind: PacketKind::Header,
            seq: 1,
            payload: 0,
            size: 64,
            ..data.clone()
        };
        let mut h = Host::new(5, Protocol::sink(&data, &ProtocolParams::default()));
        recv!(h, at = 1_000, data => [Ack { seq: 0, ack: 1, flags: flags::PULL }]);
        recv!(h, at = 2_000, hdr => [Nack { seq: 1, flags: 0 }]);
        expect_out!(h.advance(100_000_000), [(7_201_000, Pull { ack: 2 })]);
        // Nothing more until the flow has been quiet for an RTO
        // (`resend_last_pull`).
        recv_nothing!(h, until = 2_000 + 1_000_000_000 - 1);
        assert_eq!(h.services.pulls.stats.sent, 2);
        assert_eq!(h.ep.sink_stats().map(|s| s.bytes_received), Some(9000));
    }

    /// A whole NDP flow on the scripted network: the first window leaves at
    /// once, every later packet is elicited by a PULL, so after the first
    /// window the sender transmits one packet per pull interval.
    #[test]
    fn after_the_first_window_pulls_pace_the_sender_at_the_receiver_link_rate() {
        use crate::transport::testkit::{flow, never, Net};
        use crate::transport::ProtocolParams;
        let mut n = Net::new(
            Protocol::Ndp,
            &flow(Some(60 * 9000), 8),
            ProtocolParams::default(),
            10_000_000,
        );
        n.run(u64::MAX, &mut never, &mut never);
        assert!(n.finish().is_some());
        assert_eq!(n.sink_stats().map(|s| s.bytes_received), Some(60 * 9000));
        assert_eq!(n.sent.len(), 60, "no retransmission on a lossless network");
        let iw = NdpParams::default().iw_packets as usize;
        assert!(n.sent[..iw].iter().all(|(t, _)| *t == 0));
        let gaps: Vec<u64> = n.sent[iw..].windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|&g| g == 7_200_000), "{gaps:?}");
    }

    /// A path list of 16-bit entries walks the same orders as one of 32-bit
    /// entries on the same stream, so the narrow form changes no result;
    /// counts above 65,536 paths take the wide form.
    #[test]
    fn narrow_and_wide_path_lists_shuffle_alike() {
        let walk = |mut list: PathList| {
            let mut rng = crate::rng::stream_rng(7, 3);
            let mut order = Vec::new();
            for _ in 0..5 {
                list.shuffle(&mut rng);
                order.extend((0..list.len()).map(|i| list.get(i)));
            }
            order
        };
        let narrow = walk(PathList::new(256));
        assert!(matches!(PathList::new(256), PathList::Narrow(_)));
        let wide = walk(PathList::Wide((0..256).collect()));
        assert_eq!(narrow, wide);
        assert_ne!(
            narrow[..256],
            (0..256).collect::<Vec<u32>>()[..],
            "shuffled"
        );
        assert!(matches!(PathList::new(65_536), PathList::Narrow(_)));
        assert!(matches!(PathList::new(65_537), PathList::Wide(_)));
        assert_eq!(PathList::new(65_537).get(65_536), 65_536);
    }
}
