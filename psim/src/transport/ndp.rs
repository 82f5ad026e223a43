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
//! trimming, so losses are found only by timeout) is the pHost-style baseline
//! of [P] §6.2.
//!
//! | parameter (`[protocol.ndp]`) | default | source |
//! |---|---|---|
//! | `iw_packets` | 23 | spec A13 ([P] §6.2 "a good default"; 30 in §6.2 runs, set per experiment) |
//! | `mtu_bytes` (payload) | 9000; on the wire + 64 B header | [P] §6 (9 KB jumbograms); spec A2 |
//! | `min_rto_us` | 1000 | [P] §3.2 ("as low as 1 ms"); spec A12 |
//! | RTO | max(min RTO, srtt + 4 rttvar), ±25% jitter per packet | spec A12 (TCP-style, RFC 6298 §2) |
//! | `spray` | `"permute"`: shuffle the path list, one packet per path, reshuffle when used up | [P] §3.1.1; `"random"` = per-packet random path (V4 comparison) |
//! | `path_penalty` | true: skip paths that are outliers on NACKs | [P] §3.2.3; thresholds spec A11 |
//! | `pull_jitter` | 0 (perfect pacing) | [P] §6; uniform ± fraction of the interval when set |
//! | `pull_interval` | MTU payload at the receiver's link rate | spec A9 |
//! | RTS resend rule | resend a bounced header now iff (no pulls outstanding and ≤ 1 first-window packet unaccounted for) or ≥ 25% ACKs among the last 12 feedback events; else wait for a PULL | [P] §3.2.4; spec A7 |
//! | bounce penalty | a bounce counts as 3 NACKs on its path | spec A7 |
//! | loss penalty | a retransmission timeout counts as a NACK on its path | [P] §3.2.3 ("a per-path loss counter") |
//! | PULL bit on ACK/NACK | when the pull queue is empty and a pull interval has passed | [P] footnotes 2, 4; spec A8 |
//!
//! Not modelled: connection set-up state and time-wait ([P] §3.2.2): every
//! first-window packet carries SYN and any packet creates the receiver's state,
//! which is all that matters for timing.

use super::rtt::RttEstimator;
use super::{Ctx, FlowInfo, SinkStats, SourceStats};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use rand::RngExt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// NDP parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NdpParams {
    /// Initial window, packets.
    pub iw_packets: u32,
    /// Payload bytes per full packet.
    pub mtu_bytes: u32,
    /// Minimum retransmission timeout, ps.
    pub min_rto_ps: u64,
    /// Per-packet path choice.
    pub spray: Spray,
    /// Whether to avoid paths with outlying NACK ratios.
    pub path_penalty: bool,
    /// Pull pacing jitter, as a fraction of the interval.
    pub pull_jitter: f64,
}

impl Default for NdpParams {
    fn default() -> Self {
        NdpParams {
            iw_packets: 23,
            mtu_bytes: 9000,
            min_rto_ps: 1_000_000_000,
            spray: Spray::Permute,
            path_penalty: true,
            pull_jitter: 0.0,
        }
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

/// Feedback events remembered for the RTS rule (spec A7).
const RECENT: u32 = 12;
/// Path-penalty thresholds (spec A11).
const PENALTY_MIN_FEEDBACK: u64 = 100;
const PENALTY_MEAN_FACTOR: f64 = 1.25;
const PENALTY_MIN_RATIO: f64 = 0.30;

#[derive(Clone, Debug, Default)]
struct PathScore {
    acks: u64,
    nacks: u64,
    avoid: u32,
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    at: u64,
    deadline: u64,
    path: u32,
    first_window: bool,
    retx: bool,
}

/// Sender of an NDP flow.
#[derive(Clone, Debug)]
pub struct NdpSource {
    info: FlowInfo,
    proto: Protocol,
    p: NdpParams,
    total: u64,
    next_new: u64,
    acked: u64,
    rtx: VecDeque<u64>,
    outstanding: BTreeMap<u64, Sent>,
    deadlines: BTreeSet<(u64, u64)>,
    last_pull: u64,
    feedback: u64,
    recent: u32,
    recent_len: u32,
    paths: Vec<u32>,
    path_idx: usize,
    scores: Vec<PathScore>,
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
            outstanding: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            last_pull: 0,
            feedback: 0,
            recent: 0,
            recent_len: 0,
            paths: (0..flow.num_paths).collect(),
            path_idx: usize::MAX,
            scores: vec![PathScore::default(); flow.num_paths as usize],
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
            Some(r) => r.max(self.p.min_rto_ps),
            None => self.p.min_rto_ps,
        }
    }

    /// Next path: walk a shuffled list, skipping penalised paths and `avoid`.
    fn next_path(&mut self, avoid: Option<u32>, cx: &mut Ctx<'_>) -> u32 {
        let n = self.paths.len();
        if n == 1 {
            return self.paths[0];
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
                // Fisher-Yates with the host's stream.
                for i in (1..n).rev() {
                    let j = cx.rng.random_range(0..=i);
                    self.paths.swap(i, j);
                }
                self.path_idx = 0;
            }
            let p = self.paths[self.path_idx];
            self.path_idx += 1;
            if Some(p) == avoid {
                continue;
            }
            if self.p.path_penalty && self.scores[p as usize].avoid > 0 {
                continue;
            }
            return p;
        }
        // Every path is penalised: take the next one regardless.
        let p = self.paths[self.path_idx % n];
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
        cx.out.push(Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq,
            ack: 0,
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
        let rto = self.rto() as f64;
        let deadline =
            cx.now + (rto * (1.0 + 0.25 * (cx.rng.random::<f64>() * 2.0 - 1.0))).round() as u64;
        if let Some(old) = self.outstanding.insert(
            seq,
            Sent {
                at: cx.now,
                deadline,
                path,
                first_window,
                retx,
            },
        ) {
            self.deadlines.remove(&(old.deadline, seq));
        }
        self.deadlines.insert((deadline, seq));
    }

    /// Removes `seq` from the outstanding set, returning what was recorded.
    fn settle(&mut self, seq: u64) -> Option<Sent> {
        let s = self.outstanding.remove(&seq)?;
        self.deadlines.remove(&(s.deadline, seq));
        Some(s)
    }

    fn record_feedback(&mut self, ack: bool) {
        self.feedback += 1;
        self.recent = (self.recent << 1 | ack as u32) & ((1 << RECENT) - 1);
        self.recent_len = (self.recent_len + 1).min(RECENT);
    }

    /// Spec A11: update one path's score and its avoid counter.
    fn score(&mut self, path: u32, acks: u64, nacks: u64) {
        let s = &mut self.scores[path as usize];
        s.acks += acks;
        s.nacks += nacks;
        if !self.p.path_penalty {
            return;
        }
        let (mut sum, mut cnt) = (0.0, 0u32);
        for sc in self.scores.iter().filter(|s| s.acks + s.nacks > 0) {
            sum += sc.nacks as f64 / (sc.acks + sc.nacks) as f64;
            cnt += 1;
        }
        let mean = sum / cnt.max(1) as f64;
        let s = &mut self.scores[path as usize];
        let n = s.acks + s.nacks;
        let ratio = s.nacks as f64 / n.max(1) as f64;
        if n > PENALTY_MIN_FEEDBACK
            && ratio > PENALTY_MEAN_FACTOR * mean
            && ratio > PENALTY_MIN_RATIO
        {
            s.avoid += 1;
        } else {
            s.avoid = s.avoid.saturating_sub(1);
        }
    }

    fn on_pull(&mut self, counter: u64, cx: &mut Ctx<'_>) {
        if counter <= self.last_pull {
            return; // reordered or duplicate pull
        }
        let n = counter - self.last_pull;
        self.last_pull = counter;
        for _ in 0..n {
            if let Some(seq) = self.rtx.pop_front() {
                self.send(seq, true, None, cx);
            } else if self.next_new < self.total {
                let s = self.next_new;
                self.next_new += 1;
                self.send(s, false, None, cx);
            } else {
                break;
            }
        }
    }

    pub(super) fn on_start(&mut self, cx: &mut Ctx<'_>) {
        let iw = (self.p.iw_packets as u64).min(self.total);
        for s in 0..iw {
            self.send(s, false, None, cx);
        }
        self.next_new = iw;
    }

    pub(super) fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        match pkt.kind {
            PacketKind::Ack => {
                if let Some(s) = self.settle(pkt.seq) {
                    self.acked += 1;
                    if !s.retx {
                        self.rtt.sample(cx.now - s.at);
                    }
                    self.score(s.path, 1, 0);
                }
                self.record_feedback(true);
                if pkt.has(flags::PULL) {
                    self.on_pull(pkt.ack, cx);
                }
            }
            PacketKind::Nack => {
                self.stats.trims += 1;
                if let Some(s) = self.settle(pkt.seq) {
                    self.rtx.push_back(pkt.seq);
                    self.score(s.path, 0, 1);
                }
                self.record_feedback(false);
                if pkt.has(flags::PULL) {
                    self.on_pull(pkt.ack, cx);
                }
            }
            PacketKind::Pull => self.on_pull(pkt.ack, cx),
            PacketKind::Header if pkt.has(flags::BOUNCED) => {
                // Return-to-sender ([P] §3.2.4, spec A7).
                self.stats.bounces += 1;
                let Some(s) = self.settle(pkt.seq) else {
                    return;
                };
                self.score(s.path, 0, 3);
                let pulls_outstanding = self.feedback.saturating_sub(self.last_pull);
                let unaccounted = self.outstanding.values().filter(|o| o.first_window).count();
                let acks = self.recent.count_ones();
                let resend_now = (pulls_outstanding == 0 && unaccounted <= 1)
                    || (self.recent_len > 0 && acks * 4 >= self.recent_len);
                if resend_now {
                    self.send(pkt.seq, true, Some(s.path), cx);
                } else {
                    self.rtx.push_back(pkt.seq);
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let due: Vec<u64> = self
            .deadlines
            .iter()
            .take_while(|(d, _)| *d <= cx.now)
            .map(|&(_, s)| s)
            .collect();
        for seq in due {
            let Some(s) = self.settle(seq) else { continue };
            self.stats.timeouts += 1;
            // [P] §3.2.3: the scoreboard also counts losses against the path.
            self.score(s.path, 0, 1);
            self.rtx.retain(|&q| q != seq);
            self.send(seq, true, Some(s.path), cx);
        }
    }

    pub(super) fn poll_at(&self) -> Option<u64> {
        self.deadlines.first().map(|&(d, _)| d)
    }

    /// Whether every packet was acknowledged.
    pub fn done(&self) -> bool {
        self.acked == self.total
    }
}

/// Receiver of an NDP flow.
#[derive(Clone, Debug)]
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
    /// Counters.
    pub stats: SinkStats,
}

impl NdpSink {
    /// A receiver for the flow of `first`.
    pub fn new(first: &Packet) -> Self {
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
            stats: SinkStats::default(),
        }
    }

    fn mark(&mut self, seq: u64) -> bool {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if self.received.len() <= w {
            self.received.resize(w + 1, 0);
        }
        let new = self.received[w] & (1 << b) == 0;
        self.received[w] |= 1 << b;
        new
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

    pub(super) fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        if pkt.has(flags::LAST) {
            self.total = Some(pkt.seq + 1);
        }
        let kind = match pkt.kind {
            PacketKind::Data => {
                if self.mark(pkt.seq) {
                    self.got += 1;
                    self.stats.bytes_received += pkt.payload as u64;
                }
                PacketKind::Ack
            }
            PacketKind::Header => PacketKind::Nack,
            _ => return,
        };
        let mut reply = self.control(kind, pkt.seq, pkt.path, cx.now);
        let complete = self.total == Some(self.got);
        if complete {
            if self.stats.finish_ps.is_none() {
                self.stats.finish_ps = Some(cx.now);
            }
            cx.pulls.flush(cx.slot);
        } else if cx.pulls.can_piggyback(cx.now) {
            self.pull_counter += 1;
            reply.flags |= flags::PULL;
            reply.ack = self.pull_counter;
            cx.pulls.note_pull(cx.now);
        } else {
            cx.pulls.request(cx.slot, self.prio > 0);
        }
        cx.out.push(reply);
    }

    /// The host's pacer chose this flow: emit one PULL.
    pub(super) fn make_pull(&mut self, cx: &mut Ctx<'_>) {
        if self.total == Some(self.got) {
            return;
        }
        self.pull_counter += 1;
        let mut p = self.control(PacketKind::Pull, 0, self.pull_counter as u32, cx.now);
        p.ack = self.pull_counter;
        cx.out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::pull::PullQueue;

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
        }
    }

    struct Harness {
        rng: crate::rng::Rng,
        pulls: PullQueue,
        out: Vec<Packet>,
    }

    impl Harness {
        fn new() -> Self {
            let mut pulls = PullQueue::default();
            pulls.configure(7_200_000, 0.0);
            Harness {
                rng: crate::rng::stream_rng(1, 1),
                pulls,
                out: Vec::new(),
            }
        }
        fn cx(&mut self, now: u64) -> Ctx<'_> {
            Ctx {
                now,
                host: 0,
                slot: 0,
                nic_bps: 10_000_000_000,
                out: &mut self.out,
                rng: &mut self.rng,
                pulls: &mut self.pulls,
            }
        }
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

    #[test]
    fn first_window_is_sent_at_once_on_distinct_paths() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(100 * 9000, 16), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        assert_eq!(h.out.len(), 23);
        let paths: BTreeSet<u32> = h.out[..16].iter().map(|p| p.path).collect();
        assert_eq!(paths.len(), 16, "one packet per path before reshuffling");
        assert!(h.out.iter().all(|p| p.has(flags::SYN) && p.size == 9064));
    }

    #[test]
    fn pull_counter_advance_sends_that_many_packets_retransmissions_first() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(100 * 9000, 4), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        h.out.clear();
        s.on_packet(ctl(PacketKind::Nack, 3, 0, 0), &mut h.cx(10));
        assert!(
            h.out.is_empty(),
            "a NACK queues the packet but does not send it"
        );
        s.on_packet(ctl(PacketKind::Pull, 0, 2, 0), &mut h.cx(20));
        let seqs: Vec<u64> = h.out.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, vec![3, 23]);
        assert!(h.out[0].has(flags::RETX));
        // A reordered, older pull does nothing.
        h.out.clear();
        s.on_packet(ctl(PacketKind::Pull, 0, 1, 0), &mut h.cx(30));
        assert!(h.out.is_empty());
        assert_eq!(s.stats.trims, 1);
    }

    #[test]
    fn last_packet_is_marked_and_short() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(20_000, 1), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        let sizes: Vec<u32> = h.out.iter().map(|p| p.payload).collect();
        assert_eq!(sizes, vec![9000, 9000, 2000]);
        assert!(h.out[2].has(flags::LAST) && !h.out[1].has(flags::LAST));
    }

    #[test]
    fn sink_acks_data_nacks_headers_and_requests_pulls() {
        let mut h = Harness::new();
        let data = Packet {
            kind: PacketKind::Data,
            payload: 9000,
            size: 9064,
            src: 0,
            dst: 5,
            ..ctl(PacketKind::Data, 0, 0, 0)
        };
        let mut k = NdpSink::new(&data);
        // First arrival: the pull queue is empty and no pull has gone: the ACK carries the pull.
        k.on_packet(data.clone(), &mut h.cx(0));
        assert_eq!(h.out[0].kind, PacketKind::Ack);
        assert!(h.out[0].has(flags::PULL));
        assert_eq!(h.out[0].ack, 1);
        // A header 1 us later: NACK at once, the pull waits in the pacer.
        let hdr = Packet {
            kind: PacketKind::Header,
            seq: 1,
            payload: 0,
            size: 64,
            ..data.clone()
        };
        k.on_packet(hdr, &mut h.cx(1_000_000));
        assert_eq!(h.out[1].kind, PacketKind::Nack);
        assert!(!h.out[1].has(flags::PULL));
        assert_eq!(h.pulls.next_due(1_000_000, 0.0), Some(7_200_000));
        h.out.clear();
        k.make_pull(&mut h.cx(7_200_000));
        assert_eq!((h.out[0].kind, h.out[0].ack), (PacketKind::Pull, 2));
    }

    #[test]
    fn sink_finishes_when_every_packet_arrived_and_flushes_its_pulls() {
        let mut h = Harness::new();
        let base = Packet {
            kind: PacketKind::Data,
            payload: 9000,
            size: 9064,
            src: 0,
            dst: 5,
            ..ctl(PacketKind::Data, 0, 0, 0)
        };
        let mut k = NdpSink::new(&base);
        k.on_packet(
            Packet {
                seq: 1,
                flags: flags::LAST,
                ..base.clone()
            },
            &mut h.cx(10),
        );
        assert_eq!(k.stats.finish_ps, None);
        k.on_packet(
            Packet {
                seq: 1,
                flags: flags::LAST,
                ..base.clone()
            },
            &mut h.cx(11),
        );
        assert_eq!(k.stats.bytes_received, 9000, "duplicates do not count");
        k.on_packet(base.clone(), &mut h.cx(20));
        assert_eq!(k.stats.finish_ps, Some(20));
        assert!(h.pulls.is_empty());
    }

    #[test]
    fn a_bounce_is_resent_at_once_only_when_no_pulls_are_expected() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(
            &info(100 * 9000, 4),
            Protocol::Ndp,
            &NdpParams {
                iw_packets: 2,
                ..Default::default()
            },
        );
        s.on_start(&mut h.cx(0));
        h.out.clear();
        // Packet 0 is ACKed, so a pull is owed; but 1 ACK among 1 recent event
        // (100% >= 25%) means the network delivers: resend packet 1 at once.
        s.on_packet(ctl(PacketKind::Ack, 0, 0, 0), &mut h.cx(5));
        s.on_packet(ctl(PacketKind::Header, 1, 0, flags::BOUNCED), &mut h.cx(6));
        assert_eq!(h.out.len(), 1);
        assert_eq!(s.stats.bounces, 1);
        // A fresh flow whose whole first window bounces, with no feedback yet: resend at once.
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(9000, 4), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        let path = h.out[0].path;
        h.out.clear();
        s.on_packet(
            Packet {
                path,
                ..ctl(PacketKind::Header, 0, 0, flags::BOUNCED)
            },
            &mut h.cx(6),
        );
        assert_eq!(h.out.len(), 1);
        assert_ne!(h.out[0].path, path, "a resend takes a different path");
    }

    #[test]
    fn a_bounce_waits_for_a_pull_when_recent_feedback_is_mostly_nacks() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(100 * 9000, 4), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        h.out.clear();
        for seq in 0..12 {
            s.on_packet(ctl(PacketKind::Nack, seq, 0, 0), &mut h.cx(5));
        }
        s.on_packet(ctl(PacketKind::Header, 12, 0, flags::BOUNCED), &mut h.cx(6));
        assert!(h.out.is_empty(), "pulls are owed and feedback is all NACKs");
        s.on_packet(ctl(PacketKind::Pull, 0, 1, 0), &mut h.cx(7));
        assert_eq!(h.out[0].seq, 0, "queued retransmissions go in NACK order");
    }

    #[test]
    fn path_penalty_skips_a_path_with_outlying_nacks() {
        // Spec A11: > 100 feedback events, NACK ratio > 30% and > 1.25x the mean.
        let mut h = Harness::new();
        let mut s = NdpSource::new(
            &info(10_000 * 9000, 4),
            Protocol::Ndp,
            &NdpParams::default(),
        );
        for round in 0..150 {
            for path in 0..4 {
                s.score(
                    path,
                    (path != 2) as u64,
                    (path == 2 || round % 10 == 0) as u64,
                );
            }
        }
        assert!(s.scores[2].avoid > 0);
        assert!(s
            .scores
            .iter()
            .enumerate()
            .all(|(p, sc)| p == 2 || sc.avoid == 0));
        let paths: Vec<u32> = (0..40).map(|_| s.next_path(None, &mut h.cx(0))).collect();
        assert!(!paths.contains(&2), "{paths:?}");
        // Without the penalty every path is used.
        s.p.path_penalty = false;
        let paths: BTreeSet<u32> = (0..40).map(|_| s.next_path(None, &mut h.cx(0))).collect();
        assert_eq!(paths.len(), 4);
    }

    #[test]
    fn a_lost_packet_is_resent_after_the_rto_on_another_path() {
        let mut h = Harness::new();
        let mut s = NdpSource::new(&info(9000, 4), Protocol::Ndp, &NdpParams::default());
        s.on_start(&mut h.cx(0));
        let first = h.out[0].path;
        let due = s.poll_at().unwrap();
        // 1 ms min RTO with +-25% jitter.
        assert!((750_000_000..=1_250_000_000).contains(&due), "{due}");
        h.out.clear();
        s.on_timer(&mut h.cx(due));
        assert_eq!(h.out.len(), 1);
        assert_ne!(h.out[0].path, first);
        assert_eq!((s.stats.timeouts, s.stats.retransmissions), (1, 1));
        s.on_packet(ctl(PacketKind::Ack, 0, 0, 0), &mut h.cx(due + 10));
        assert!(s.done());
        assert_eq!(s.poll_at(), None);
    }
}
