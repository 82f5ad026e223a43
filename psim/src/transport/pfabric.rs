//! pFabric's transport ([PFAB] §4.2–4.3), as its public code runs it
//! (`YAPS` `pfabricflow.cpp`, the ns-2 agent and drivers of `NS2PF`): a
//! windowed SACK sender that starts at line rate with a BDP window, never
//! fast-retransmits, and finds losses only by a short fixed timeout. The
//! switches (`queue/pfabric.rs`) do the scheduling; the transport only
//! stamps each packet's priority and recovers losses.
//!
//! - **Priority** in `rank`, smaller first: the flow's remaining size, flow
//!   size − cumulative ACK − SACKed bytes, recomputed for every packet sent,
//!   retransmissions included (`YAPS` `get_priority`; TP14). With
//!   `priority = "absolute"` the flow size ([PFAB] §5.4.3). A flow without a
//!   size has rank `u64::MAX`. ACKs carry rank 0, the best (`YAPS` builds
//!   ACKs with priority 0; TP14): the receiver is TCP's ([`TcpSink`], one
//!   ACK per segment with one SACK block), whose ACKs have rank 0.
//! - **Window:** IW = BDP, capped at the maximum window; +1 segment per ACK
//!   in slow start, +1 per window in congestion avoidance; on a timeout
//!   ssthresh = max(cwnd / 2, 2), cwnd = 1 ([`PfabricWindow`]).
//! - **Loss recovery:** SACK, **no duplicate-ACK fast retransmit** (ns-2
//!   sets the dupACK threshold to 10^6; here no count of duplicate ACKs or
//!   SACKed segments marks a loss). One retransmission timer per flow, armed
//!   only while data is outstanding, fixed at `rto_us` with no back-off and
//!   no RTT estimate ([PFAB] §4.2 "3 × RTT"). On expiry every un-SACKed
//!   segment is marked lost and resent from the first un-ACKed byte, as the
//!   window allows (`YAPS`). The sender is TCP's [`Subflow`] scoreboard with
//!   these settings and this window; nothing TCP-specific (RFC 6298 RTO,
//!   RFC 6675 IsLost) takes effect.
//! - **Probe mode** ([PFAB] §4.3; `NS2PF` `prob_cap_` = 5; not in `YAPS`):
//!   after `probe_after` consecutive timeouts the sender stops sending data
//!   and, at each further timeout (every `rto_us`), sends one probe: a
//!   header-only data packet (64 B, no payload; the paper's probe carries
//!   one byte) at the first un-ACKed byte, flagged as a retransmission. Any
//!   ACK of the flow resets the timeout count and ends probe mode; the
//!   sender then resumes in slow start from cwnd 1 with the segments still
//!   marked lost. The receiver answers a probe with a duplicate ACK whose
//!   SACK block equals its cumulative ACK, which the sender reads as "no
//!   SACK" (a data segment never produces that ACK).
//! - **Load balancing:** `load_balancing = "spray"` (the default) sends
//!   each data packet of a flow on the next path id in turn, starting from
//!   the flow's ECMP hash, so a leaf sends a flow's packets round robin over
//!   its uplinks ([PFAB] §5.1: "each switch sprays packets among all
//!   shortest-path next hops in round-robin fashion"; `YAPS` turns the
//!   uplink per packet at the host, the only choice a two-tier leaf-spine
//!   has). psim's counter is the flow's, where `YAPS` keeps one per host and
//!   ns-2 one per switch port: at a leaf with several flows the turns
//!   interleave differently, and each flow still spreads evenly. The
//!   receiver's ACK takes the path of the packet it answers. `"ecmp"` keeps
//!   every packet of a flow on its hashed path ([PFAB] §5.1 tried it too).
//! - **Sizes:** the MSS is a parameter (1460 B as both sources); the header
//!   is psim's 64 B (`HEADER_BYTES`), not ns-2's 40 B, so a full packet is
//!   1524 B on the wire and a 36,000 B pFabric queue holds 23 of them, as it
//!   holds 23 of ns-2's 1500 B packets (kept strictly below the limit).
//!
//! | parameter (`[protocol.pfabric]`) | default | source |
//! |---|---|---|
//! | `mss_bytes` (payload; + 64 B header) | 1460 | `NS2PF`, `YAPS` (1460 / 40 B header) |
//! | `iw_packets` | 12 (the BDP, 10 Gb/s × 14.6 µs) | [PFAB] §4.2; `NS2PF` `windowInit_ = bdp`; `YAPS` 12 |
//! | `max_cwnd_packets` | 23 (2 × BDP − 1) | `NS2PF`; `YAPS` uses 15 |
//! | `initial_ssthresh_packets` | 0 = none (slow start until the cap) | `YAPS` (100,000); TP15 suggested 12 |
//! | `rto_us` | 45 | [PFAB] §4.2 "3 × RTT"; `YAPS`; 200–300 µs also works ([PFAB] §5.4.3) |
//! | `probe_after` (0 = never probe) | 5 | [PFAB] §4.3; `NS2PF` `prob_cap_` |
//! | `priority` | `"remaining"` | `"remaining"` ([PFAB] §4.2; `YAPS`) or `"absolute"` ([PFAB] §5.4.3) |
//! | `load_balancing` | `"spray"` | per-packet spraying ([PFAB] §5.1; `YAPS` `load_balancing 0`) or `"ecmp"`, one hashed path per flow ([PFAB] §5.1; `YAPS` `load_balancing 1`) |

use super::cc::{Controller, PfabricWindow};
use super::config::{in_range, Micros};
use super::tcp::{split_seq, AckInfo, Send, Subflow, Supply, TcpParams, TcpSink};
use super::Transport;
use super::{Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SourceStats, SwitchClass};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use serde::{Deserialize, Serialize};

/// What a data packet's `rank` holds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityMode {
    /// Flow size − cumulative ACK − SACKed bytes.
    #[default]
    Remaining,
    /// The flow size.
    Absolute,
}

/// How a flow's packets are spread over the equal-cost paths.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancing {
    /// Each data packet on the next path id in turn ([PFAB] §5.1).
    #[default]
    Spray,
    /// Every packet on the flow's hashed path.
    Ecmp,
}

/// `[protocol.pfabric]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfabricParams {
    /// Payload bytes per full segment.
    pub mss_bytes: u32,
    /// Initial window, segments.
    pub iw_packets: u32,
    /// Largest window, segments.
    pub max_cwnd_packets: u32,
    /// Initial slow-start threshold, segments (0: none).
    pub initial_ssthresh_packets: u32,
    /// The fixed retransmission timeout (`rto_us`).
    #[serde(rename = "rto_us")]
    pub rto: Micros,
    /// Consecutive timeouts before probe mode (0: never).
    pub probe_after: u32,
    /// Remaining or absolute flow size in `rank`.
    pub priority: PriorityMode,
    /// Per-packet spraying or one path per flow.
    pub load_balancing: LoadBalancing,
}

impl Default for PfabricParams {
    fn default() -> Self {
        PfabricParams {
            mss_bytes: 1460,
            iw_packets: 12,
            max_cwnd_packets: 23,
            initial_ssthresh_packets: 0,
            rto: Micros::from_ps(45_000_000),
            probe_after: 5,
            priority: PriorityMode::Remaining,
            load_balancing: LoadBalancing::Spray,
        }
    }
}

impl PfabricParams {
    /// Checks the section; `key` is `protocol.pfabric`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |name: &str| format!("{key}.{name}");
        in_range(&k("mss_bytes"), self.mss_bytes, 1, 65_000)?;
        in_range(&k("iw_packets"), self.iw_packets, 1, u32::MAX)?;
        in_range(&k("max_cwnd_packets"), self.max_cwnd_packets, 1, u32::MAX)?;
        self.rto.positive(&k("rto_us"))?;
        Ok(())
    }

    /// The settings under which TCP's scoreboard behaves as pFabric's
    /// sender: a fixed timeout, and no loss inferred from duplicates.
    fn scoreboard(&self) -> TcpParams {
        TcpParams {
            mss_bytes: self.mss_bytes,
            iw_packets: self.iw_packets,
            min_rto: self.rto,
            initial_rto: self.rto,
            max_rto: self.rto,
            dupack_threshold: u32::MAX,
            early_retransmit: false,
            delayed_ack: false,
            ..TcpParams::default()
        }
    }
}

/// The protocol table's row for pFabric's transport.
pub struct Pfabric;

impl ProtocolDef for Pfabric {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.pfabric.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Endpoint::PfabricSource(Box::new(PfabricSource::new(flow, proto, &p.pfabric)))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        let tp = p.pfabric.scoreboard();
        Endpoint::TcpSink(Box::new(TcpSink::new(first, &tp)))
    }
}

/// Sender of a pFabric flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PfabricSource {
    info: FlowInfo,
    proto: Protocol,
    mode: PriorityMode,
    tp: TcpParams,
    sub: Subflow,
    supply: Supply,
    /// Scratch for the segments one call sends (reused).
    sends: Vec<Send>,
    probe_after: u32,
    /// Whether data packets are sprayed over the paths.
    spray: bool,
    /// The path the next sprayed data packet takes.
    next_path: u32,
    /// Timeouts since the last ACK.
    timeouts_in_row: u32,
    probing: bool,
    /// Counters.
    pub stats: SourceStats,
}

impl PfabricSource {
    /// A sender for `flow`.
    pub fn new(flow: &FlowInfo, proto: Protocol, p: &PfabricParams) -> Self {
        let tp = p.scoreboard();
        let w = PfabricWindow::new(
            p.iw_packets,
            p.max_cwnd_packets,
            p.initial_ssthresh_packets,
            p.mss_bytes,
        );
        PfabricSource {
            info: flow.clone(),
            proto,
            mode: p.priority,
            sub: Subflow::new(0, flow.ecmp_path, &tp, Controller::Pfabric(w)),
            supply: Supply {
                next: 0,
                total: flow.size,
                released: u64::MAX,
                mss: p.mss_bytes as u64,
                seen: None,
                data: None,
            },
            tp,
            sends: Vec::new(),
            probe_after: p.probe_after,
            spray: p.load_balancing == LoadBalancing::Spray,
            next_path: flow.ecmp_path % flow.num_paths.max(1),
            timeouts_in_row: 0,
            probing: false,
            stats: SourceStats::default(),
        }
    }

    /// The priority every packet sent now carries.
    pub fn rank(&self) -> u64 {
        let Some(size) = self.info.size else {
            return u64::MAX;
        };
        match self.mode {
            PriorityMode::Absolute => size,
            PriorityMode::Remaining => {
                size.saturating_sub(self.sub.snd_una() + self.sub.sacked_bytes())
            }
        }
    }

    /// Whether the sender is in probe mode.
    pub fn probing(&self) -> bool {
        self.probing
    }

    /// The path of the next data packet: the flow's hashed path, or with
    /// spraying the next path id in turn from it.
    fn path(&mut self) -> u32 {
        if !self.spray {
            return self.info.ecmp_path;
        }
        let path = self.next_path;
        self.next_path = (path + 1) % self.info.num_paths.max(1);
        path
    }

    fn data(&mut self, seq: u64, len: u32, fl: u8, now: u64, rank: u64) -> Packet {
        let path = self.path();
        Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq,
            ack: self.info.size.unwrap_or(u64::MAX),
            size: len + HEADER_BYTES,
            payload: len,
            path,
            sent_ps: now,
            kind: PacketKind::Data,
            proto: self.proto,
            flags: fl,
            prio: self.info.prio,
            rank,
        }
    }

    /// Sends what the window allows (nothing while probing).
    fn pump(&mut self, cx: &mut Ctx<'_>) {
        if self.probing {
            return;
        }
        let mut sends = std::mem::take(&mut self.sends);
        self.sub
            .fill(&mut self.supply, cx.now, &self.tp, &mut sends);
        let rank = self.rank();
        for s in sends.drain(..) {
            let mut f = 0;
            if s.retx {
                f |= flags::RETX;
                self.stats.retransmissions += 1;
            }
            if s.last {
                f |= flags::LAST;
            }
            cx.out.push(self.data(s.seq, s.len, f, cx.now, rank));
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += s.len as u64;
        }
        self.sends = sends;
    }

    fn packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Ack {
            return;
        }
        self.timeouts_in_row = 0;
        self.probing = false;
        let (_, sack) = split_seq(pkt.seq);
        // A probe's ACK SACKs nothing (its block equals the cumulative ACK).
        let sack = if sack == pkt.ack { u64::MAX } else { sack };
        let a = AckInfo {
            ack: pkt.ack,
            sack,
            ece: false,
            echo: pkt.sent_ps,
        };
        let more = self.supply.remaining();
        if let Some(r) = self.sub.on_ack(a, cx.now, &self.tp, None, more, None) {
            self.stats.rtt(r);
        }
        if !more && self.info.size.is_some() && self.sub.all_acked() {
            // The cumulative ACK covering the last byte.
            self.stats.finish(cx.now);
        }
        self.pump(cx);
    }

    fn timer(&mut self, cx: &mut Ctx<'_>) {
        if self.sub.rto_at().is_none_or(|t| t > cx.now) {
            return;
        }
        self.stats.timeouts += 1;
        self.sub.on_rto(cx.now, &self.tp);
        self.timeouts_in_row += 1;
        if self.probe_after > 0 && self.timeouts_in_row >= self.probe_after {
            self.probing = true;
        }
        if self.probing {
            let probe = self.data(self.sub.snd_una(), 0, flags::RETX, cx.now, self.rank());
            cx.out.push(probe);
            self.stats.packets_sent += 1;
        } else {
            self.pump(cx);
        }
    }
}

impl Transport for PfabricSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.pump(cx)
    }
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.packet(pkt, cx)
    }
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.timer(cx)
    }
    fn poll_at(&self) -> Option<u64> {
        self.sub.rto_at()
    }
    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::testkit::{flow, never, Host, Net};

    const MSS: u64 = 1460;
    const RTO: u64 = 45_000_000;

    fn source(size: u64, p: &PfabricParams) -> Host<PfabricSource> {
        Host::new(
            0,
            PfabricSource::new(&flow(Some(size), 4), Protocol::Pfabric, p),
        )
    }

    /// The receiver's ACK: cumulative `ack`, SACK block at `sack`.
    fn ack(ack: u64, sack: u64) -> Packet {
        Packet {
            flow: 1,
            src: 5,
            dst: 0,
            seq: sack,
            ack,
            size: HEADER_BYTES,
            payload: 0,
            path: 0,
            sent_ps: 0,
            kind: PacketKind::Ack,
            proto: Protocol::Pfabric,
            flags: 0,
            prio: 0,
            rank: 0,
        }
    }

    #[test]
    fn starts_with_the_bdp_window_capped_at_the_maximum() {
        let out = source(100 * MSS, &PfabricParams::default()).start(0);
        assert_eq!(out.len(), 12);
        assert!(out.iter().all(|p| p.payload == 1460 && p.size == 1524));
        let big = PfabricParams {
            iw_packets: 40,
            ..PfabricParams::default()
        };
        assert_eq!(source(100 * MSS, &big).start(0).len(), 23, "2 × BDP − 1");
    }

    /// The testkit's flow hashes to path 3 of 4: sprayed, its initial window
    /// of 12 takes paths 3, 0, 1, 2 in turn (three packets each); the next
    /// packet, sent on an ACK, takes the next turn; with ECMP all stay on 3.
    #[test]
    fn packets_are_sprayed_round_robin_from_the_hashed_path() {
        let mut h = source(100 * MSS, &PfabricParams::default());
        let out = h.start(0);
        let paths: Vec<u32> = out.iter().map(|p| p.path).collect();
        assert_eq!(paths, [3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]);
        let out = h.deliver(10_000_000, ack(MSS, 0));
        assert_eq!(out[0].path, 3);
        let ecmp = PfabricParams {
            load_balancing: LoadBalancing::Ecmp,
            ..PfabricParams::default()
        };
        let out = source(100 * MSS, &ecmp).start(0);
        assert!(out.iter().all(|p| p.path == 3), "{out:?}");
    }

    #[test]
    fn rank_is_the_remaining_size_and_falls_as_acks_and_sacks_arrive() {
        let size = 100 * MSS;
        let mut h = source(size, &PfabricParams::default());
        let out = h.start(0);
        assert!(out.iter().all(|p| p.rank == size));
        // Segment 0 ACKed: the next packets carry size − 1 segment.
        let out = h.deliver(10_000_000, ack(MSS, 0));
        assert!(!out.is_empty() && out.iter().all(|p| p.rank == size - MSS));
        // Segment 2 SACKed above the hole at segment 1: one more segment off.
        let out = h.deliver(10_100_000, ack(MSS, 2 * MSS));
        assert!(out.iter().all(|p| p.rank == size - 2 * MSS), "{out:?}");
        assert_eq!(h.ep.rank(), size - 2 * MSS);
        // Absolute: the flow size, whatever was acknowledged.
        let abs = PfabricParams {
            priority: PriorityMode::Absolute,
            ..PfabricParams::default()
        };
        let mut h = source(size, &abs);
        h.start(0);
        let out = h.deliver(10_000_000, ack(MSS, 0));
        assert!(!out.is_empty() && out.iter().all(|p| p.rank == size));
    }

    #[test]
    fn duplicate_acks_never_trigger_a_retransmission() {
        let mut h = source(100 * MSS, &PfabricParams::default());
        h.start(0);
        // Segment 0 lost: eight ACKs that SACK segments 1..=8.
        for i in 1..=8u64 {
            let out = h.deliver(10_000_000 + i, ack(0, i * MSS));
            assert!(out.iter().all(|p| !p.has(flags::RETX)), "{out:?}");
        }
        assert_eq!(h.ep.stats.retransmissions, 0);
        // Only the timeout resends it, and only it (the rest was SACKed).
        let (t, out) = h.wake(u64::MAX).expect("the RTO");
        assert_eq!(t, RTO);
        assert_eq!(out.len(), 1);
        assert!(out[0].seq == 0 && out[0].has(flags::RETX));
    }

    #[test]
    fn the_rto_is_fixed_without_backoff() {
        let mut h = source(100 * MSS, &PfabricParams::default());
        h.start(0);
        for k in 1..=4u64 {
            let (t, out) = h.wake(u64::MAX).expect("a timeout");
            assert_eq!(t, k * RTO, "timeout {k}");
            assert_eq!(out.len(), 1, "cwnd = 1 after a timeout");
            assert!(out[0].seq == 0 && out[0].payload == 1460);
        }
        assert_eq!(h.ep.stats.timeouts, 4);
    }

    #[test]
    fn probes_after_five_timeouts_until_an_ack_then_resumes() {
        let mut h = source(100 * MSS, &PfabricParams::default());
        h.start(0);
        for _ in 0..4 {
            let (_, out) = h.wake(u64::MAX).expect("a timeout");
            assert_eq!(out[0].payload, 1460);
        }
        for k in 5..=7u64 {
            let (t, out) = h.wake(u64::MAX).expect("a timeout");
            assert_eq!(t, k * RTO);
            assert_eq!(out.len(), 1);
            let p = &out[0];
            assert!(p.kind == PacketKind::Data && p.payload == 0 && p.size == HEADER_BYTES);
            assert_eq!(p.seq, 0, "the first un-ACKed byte");
            assert!(h.ep.probing());
        }
        // The probe's ACK (block = cumulative ACK) ends probe mode and SACKs
        // nothing: segment 0 goes again, in slow start from one segment.
        let out = h.deliver(7 * RTO + 10_000_000, ack(0, 0));
        assert!(!h.ep.probing());
        assert_eq!(out.len(), 1);
        assert!(out[0].seq == 0 && out[0].payload == 1460);
        // Without probe mode the sender keeps resending data.
        let never_probe = PfabricParams {
            probe_after: 0,
            ..PfabricParams::default()
        };
        let mut h = source(100 * MSS, &never_probe);
        h.start(0);
        for _ in 0..8 {
            let (_, out) = h.wake(u64::MAX).expect("a timeout");
            assert_eq!(out[0].payload, 1460);
        }
    }

    #[test]
    fn completes_through_losses_and_its_acks_have_the_best_rank() {
        let size = 60 * MSS + 100;
        let params = ProtocolParams::default();
        let mut net = Net::new(Protocol::Pfabric, &flow(Some(size), 4), params, 5_000_000);
        let mut n = 0;
        // Lose the first transmission of every 7th data packet, and probes never.
        let mut drop = |p: &Packet| {
            n += 1;
            !p.has(flags::RETX) && n % 7 == 0
        };
        net.run(u64::MAX, &mut drop, &mut never);
        assert!(net.finish().is_some(), "completed");
        assert_eq!(net.sink_stats().unwrap().bytes_received, size);
        assert!(net.sent.iter().all(|(_, p)| p.rank <= size));
        let last = net.sent.last().unwrap().1.rank;
        assert!(last < size, "ranks fell: {last}");
        assert!(net.sent.iter().any(|(_, p)| p.has(flags::RETX)));
        // The sink is TCP's: its ACKs have rank 0.
        let mut sink = Host::new(5, Pfabric::sink(&net.sent[0].1, &ProtocolParams::default()));
        let out = sink.deliver(1, net.sent[0].1.clone());
        assert!(out.len() == 1 && out[0].kind == PacketKind::Ack && out[0].rank == 0);
    }
}
