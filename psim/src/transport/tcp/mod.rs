//! TCP NewReno with SACK, DCTCP and MPTCP: the window-based baselines of the
//! NDP paper ([P] §6.1; decision A18).
//!
//! One sender state machine, [`Subflow`], implements a TCP byte stream:
//! slow start and congestion avoidance (RFC 5681, with appropriate byte
//! counting, RFC 3465, L = 2), fast retransmit and SACK-based loss recovery
//! (RFC 6675's pipe, IsLost and NextSeg), NewReno's partial-ACK rule
//! (RFC 6582), and a retransmission timer (RFC 6298) with a settable
//! minimum and exponential back-off. Its congestion response is one of
//! Reno (halve on loss, and on ECN echo when `ecn` is on, RFC 3168),
//! DCTCP or LIA (`transport/cc/`), which the subflow calls through
//! [`CongestionControl`](super::cc::CongestionControl) without asking which. A [`TcpSource`] runs
//! one subflow for TCP and DCTCP, or n coupled ones for MPTCP. The receiver,
//! [`TcpSink`], keeps per-subflow reassembly state, ACKs every segment or
//! every second one (delayed ACK, RFC 5681 §4.2, RFC 8257 §3.2 for CE
//! changes), and echoes the sender's timestamp (RFC 7323) and CE marks.
//!
//! | parameter (`[protocol.tcp]`, shared by tcp, dctcp, mptcp) | default | source |
//! |---|---|---|
//! | `mss_bytes` (payload; + 64 B header on the wire) | 9000 | [P] §6 (9 KB jumbograms, as for NDP); A2 |
//! | `iw_packets` | 10 | RFC 6928; [P] gives none (A18) |
//! | `min_rto_us` | 200000 (200 ms) | Linux `TCP_RTO_MIN`, [P] §5.1; set e.g. 1000 for datacenter tuning |
//! | `initial_rto_us` | 1000000 (1 s) | RFC 6298 §2.1 (the RTO before any RTT sample; never below `min_rto_us`) |
//! | `max_rto_us` | 60000000 (60 s) | RFC 6298 §2.5 |
//! | `dupack_threshold` | 3 | RFC 5681 §3.2 / RFC 6675 DupThresh |
//! | `early_retransmit` | true | RFC 5827 (on by default in Linux since 3.5): with fewer than 4 segments outstanding and none new allowed, oseg − 1 duplicate ACKs signal a loss |
//! | `delayed_ack` | false (ACK every segment) | RFC 5681 §4.2 when true: every 2nd full segment, or after `delayed_ack_us` |
//! | `delayed_ack_us` | 40000 (40 ms) | Linux `TCP_DELACK_MIN` |
//! | `handshake` | false | [P] §5.1 (Linux TCP uses one); when true, SYN / SYN-ACK before data |
//! | `ecn` | false | RFC 3168 for plain TCP; DCTCP always uses ECN |
//! | `rwnd_packets` | 0 = unlimited | receiver window cap on the congestion window |
//! | `initial_ssthresh_packets` | 0 = unlimited (slow start until the first loss) | RFC 5681 §3.1 ("arbitrarily high"); htsim's TCP starts at 100 segments (issue 19, [C]); pFabric's control loop at 12 ([PFAB] §4.2, spec note 15) |
//! | `sack_blocks` | 1 | SACK blocks the sender reads from each ACK: 1 = RFC 2018's first block (see below); 0 = none, the sender sees cumulative ACKs only: plain NewReno (RFC 6582), as ns-2's `TCP/Newreno` agent runs behind a SACK sink in the UPS runs ([TH] §5.2; `UPS` scripts). RFC 2018 allows 3–4 blocks (htsim's TCP and ns-2's `Sack1` sink send 3); psim's 64-byte packet carries one, so 2–4 are refused |
//! | `slow_start_after_idle` | false | true: RFC 5681 §4.1's restart: a sender that has sent nothing for longer than its RTO sets cwnd to min(IW, cwnd) before it sends again (Linux restarts by default, decaying the window per idle RTO as RFC 2861 does, which is not modelled); false: the window survives idle periods, as it did before this key. Only an application-paced sender (`app`) goes idle with its connection open |
//! | `fixed_rto_us` | 0 = off | when set, every retransmission timeout is this long: no RTT estimate, no minimum, no back-off (pFabric's 45 µs = 3 fabric RTTs, [PFAB] §4.2); the other RTO keys are then unused |
//!
//! Packet encoding: byte sequence numbers; a data packet's `ack` field
//! carries the connection's total length (so the receiver knows when the
//! flow is complete; `u64::MAX` for endless flows). An ACK carries the
//! cumulative ACK in `ack`, one SACK block (the start of the segment that
//! triggered it, which RFC 2018 §4 requires to be reported first) in `seq`,
//! the echoed timestamp in `sent_ps`, and ECE. MPTCP puts the subflow index
//! in the top 8 bits of `seq` (see [`sub_seq`]), and its data sequence
//! number in a data packet's `ack` (`mptcp.rs`). A lost ACK loses its SACK
//! block; recovery then falls back on NewReno's partial-ACK rule or the RTO.
//!
//! Application-paced flows (`app`, `transport/app.rs`): TCP and DCTCP send
//! only the bytes the application has handed over, and wake at its next
//! message when they have sent them all. Early retransmit counts bytes not
//! yet handed over as no new data. MPTCP takes no messages.
//!
//! An idle application-paced sender keeps its window unless
//! `slow_start_after_idle` is set (RFC 5681 §4.1).
//!
//! Not modelled: Nagle, receive-window auto-tuning, PAWS, time-wait, and
//! RFC 2861's window decay per idle RTO (Linux's restart).

mod mptcp;
mod sink;
mod subflow;
#[cfg(test)]
mod tests;

use mptcp::DataLevel;
pub use mptcp::MptcpParams;
pub use sink::TcpSink;
pub use subflow::Subflow;
pub(crate) use subflow::{AckInfo, Seen, Send, Supply};

use super::app::MessageSupply;
use super::cc::{CongestionControl, Controller, Dctcp as DctcpCc, Lia, LiaCoupling, Reno};
use super::config::{bad, in_range, Micros};
use super::{Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SourceStats};
use super::{SwitchClass, Transport};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use rand::RngExt;

/// `[protocol.tcp]`, shared by TCP, DCTCP and MPTCP (defaults and sources
/// in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpParams {
    /// Payload bytes per full segment.
    pub mss_bytes: u32,
    /// Initial congestion window, segments.
    pub iw_packets: u32,
    /// Minimum retransmission timeout (`min_rto_us`).
    #[serde(rename = "min_rto_us")]
    pub min_rto: Micros,
    /// Retransmission timeout before the first RTT sample (`initial_rto_us`).
    #[serde(rename = "initial_rto_us")]
    pub initial_rto: Micros,
    /// Largest backed-off timeout (`max_rto_us`).
    #[serde(rename = "max_rto_us")]
    pub max_rto: Micros,
    /// Duplicate ACKs (or SACKed segments above a hole) that signal a loss.
    pub dupack_threshold: u32,
    /// RFC 5827 early retransmit for windows under four segments.
    pub early_retransmit: bool,
    /// ACK every second segment.
    pub delayed_ack: bool,
    /// Delayed-ACK timer (`delayed_ack_us`).
    #[serde(rename = "delayed_ack_us")]
    pub delayed_ack_timeout: Micros,
    /// SYN / SYN-ACK before the first data.
    pub handshake: bool,
    /// RFC 3168 ECN for plain TCP (halve once per window on ECE).
    pub ecn: bool,
    /// Receiver window, segments (0 = unlimited).
    pub rwnd_packets: u32,
    /// Slow-start threshold of a new connection, segments (0 = unlimited).
    pub initial_ssthresh_packets: u32,
    /// A constant retransmission timeout (`fixed_rto_us`; 0 = off).
    #[serde(rename = "fixed_rto_us")]
    pub fixed_rto: Micros,
    /// SACK blocks the sender reads from each ACK: 1, or 0 for none.
    pub sack_blocks: u32,
    /// RFC 5681 §4.1: restart from the initial window after an idle RTO.
    pub slow_start_after_idle: bool,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams {
            mss_bytes: 9000,
            iw_packets: 10,
            min_rto: Micros::from_ps(200_000_000_000),
            initial_rto: Micros::from_ps(1_000_000_000_000),
            max_rto: Micros::from_ps(60_000_000_000_000),
            dupack_threshold: 3,
            early_retransmit: true,
            delayed_ack: false,
            delayed_ack_timeout: Micros::from_ps(40_000_000_000),
            handshake: false,
            ecn: false,
            rwnd_packets: 0,
            initial_ssthresh_packets: 0,
            fixed_rto: Micros::from_ps(0),
            sack_blocks: 1,
            slow_start_after_idle: false,
        }
    }
}

impl TcpParams {
    /// Checks the section; `key` is `protocol.tcp`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |name: &str| format!("{key}.{name}");
        in_range(&k("mss_bytes"), self.mss_bytes, 1, 65_000)?;
        in_range(&k("iw_packets"), self.iw_packets, 1, u32::MAX)?;
        in_range(&k("dupack_threshold"), self.dupack_threshold, 1, u32::MAX)?;
        let min_rto = self.min_rto.positive(&k("min_rto_us"))?;
        let max_rto = self.max_rto.positive(&k("max_rto_us"))?;
        if max_rto < min_rto {
            return Err(bad(
                &k("max_rto_us"),
                max_rto as f64 / 1e6,
                "must be at least min_rto_us",
            ));
        }
        self.initial_rto.positive(&k("initial_rto_us"))?;
        self.delayed_ack_timeout.positive(&k("delayed_ack_us"))?;
        if self.fixed_rto != Micros::from_ps(0) {
            self.fixed_rto.positive(&k("fixed_rto_us"))?;
        }
        if self.sack_blocks > 1 {
            return Err(bad(
                &k("sack_blocks"),
                self.sack_blocks,
                "must be 0 (no SACK) or 1: an ACK carries one SACK block",
            ));
        }
        Ok(())
    }
}

/// The protocol table's row for TCP: one subflow, NewReno.
pub struct Tcp;

impl ProtocolDef for Tcp {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.tcp.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let (iw, mss, ecn) = (p.tcp.iw_packets, p.tcp.mss_bytes, p.tcp.ecn);
        let cc = || Controller::Reno(Reno::new(iw, mss, ecn));
        let src = TcpSource::new(flow, proto, &p.tcp, 1, ecn, cc);
        Endpoint::TcpSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Endpoint::TcpSink(Box::new(TcpSink::new(first, &p.tcp)))
    }
}

/// The protocol table's row for DCTCP: one subflow, always ECN-capable,
/// DCTCP's window cuts.
pub struct Dctcp;

impl ProtocolDef for Dctcp {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.tcp.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let (iw, mss) = (p.tcp.iw_packets, p.tcp.mss_bytes);
        let cc = || Controller::Dctcp(DctcpCc::new(iw, mss, &p.dctcp));
        let src = TcpSource::new(flow, proto, &p.tcp, 1, true, cc);
        Endpoint::TcpSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Tcp::sink(first, p)
    }
}

/// The protocol table's row for MPTCP: n subflows coupled by LIA.
pub struct Mptcp;

impl ProtocolDef for Mptcp {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.tcp.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let n = p.mptcp.subflows.clamp(1, 255);
        let (iw, mss, ecn) = (p.tcp.iw_packets, p.tcp.mss_bytes, p.tcp.ecn);
        let cc = || Controller::Lia(Lia::new(iw, mss, ecn));
        let mut src = TcpSource::new(flow, proto, &p.tcp, n, ecn, cc);
        src.supply.data = Some(Box::new(DataLevel {
            enabled: p.mptcp.reinject,
            ..DataLevel::default()
        }));
        Endpoint::TcpSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Tcp::sink(first, p)
    }
}

/// Bits of `seq` below the MPTCP subflow index.
const SUB_SHIFT: u32 = 56;
const SEQ_MASK: u64 = (1 << SUB_SHIFT) - 1;

/// Encodes subflow `sub`'s byte sequence number `seq` into a packet's `seq`.
#[inline]
pub fn sub_seq(sub: u8, seq: u64) -> u64 {
    (sub as u64) << SUB_SHIFT | (seq & SEQ_MASK)
}

/// Splits a packet's `seq` into (subflow, byte sequence number).
#[inline]
pub fn split_seq(seq: u64) -> (u8, u64) {
    ((seq >> SUB_SHIFT) as u8, seq & SEQ_MASK)
}

/// Connection set-up state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Setup {
    /// SYN sent at this time, awaiting the SYN-ACK.
    SynSent { at: u64, deadline: u64, tries: u32 },
    /// Data may flow.
    Established,
}

/// Sender of a TCP, DCTCP or MPTCP flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TcpSource {
    pub(crate) info: FlowInfo,
    pub(crate) proto: Protocol,
    pub(crate) p: TcpParams,
    pub(crate) subs: Vec<Subflow>,
    pub(crate) supply: Supply,
    /// The application that hands over the bytes (`app.rs`); None: all
    /// of them at the start.
    app: Option<MessageSupply>,
    setup: Setup,
    ect: bool,
    /// Scratch: segments to send, and the subflow order (reused, not reallocated per ACK).
    sends: Vec<Send>,
    order: Vec<usize>,
    /// Scratch: DSN ranges an ACK showed delivered (MPTCP).
    delivered: Vec<(u64, u32)>,
    /// Counters.
    pub stats: SourceStats,
}

impl TcpSource {
    /// A sender for `flow` with `n` subflows, each with the congestion
    /// control `cc` builds; `ect` marks data ECN-capable.
    pub(crate) fn new(
        flow: &FlowInfo,
        proto: Protocol,
        p: &TcpParams,
        n: u32,
        ect: bool,
        cc: impl Fn() -> Controller,
    ) -> Self {
        // Paths are assigned at start (MPTCP shuffles them with the host's stream).
        let subs = (0..n)
            .map(|i| Subflow::new(i as u8, flow.ecmp_path, p, cc()))
            .collect();
        TcpSource {
            info: flow.clone(),
            proto,
            p: p.clone(),
            subs,
            supply: Supply {
                next: 0,
                total: flow.size,
                released: if flow.app.is_some() { 0 } else { u64::MAX },
                mss: p.mss_bytes as u64,
                seen: None,
                data: None,
            },
            app: flow.app.map(|a| MessageSupply::new(&a, p.mss_bytes)),
            setup: Setup::Established,
            ect,
            sends: Vec::new(),
            order: Vec::new(),
            delivered: Vec::new(),
            stats: SourceStats::default(),
        }
    }

    /// Number of subflows.
    pub fn subflows(&self) -> usize {
        self.subs.len()
    }

    /// Whether the handshake (if any) is over, so that data may flow.
    pub(crate) fn established(&self) -> bool {
        self.setup == Setup::Established
    }

    /// Whether this is an MPTCP connection (with a connection level).
    fn multipath(&self) -> bool {
        self.supply.data.is_some()
    }

    /// An MPTCP connection whose every byte is known delivered: its
    /// subflows stop, whatever they still hold.
    fn data_done(&self) -> bool {
        self.multipath() && self.stats.finish_ps.is_some()
    }

    /// Congestion window of subflow `i`, bytes.
    pub fn cwnd(&self, i: usize) -> f64 {
        self.subs[i].cc.window()
    }

    fn control(&self, path: u32, now: u64, fl: u8) -> Packet {
        Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq: 0,
            ack: 0,
            size: HEADER_BYTES,
            payload: 0,
            path,
            sent_ps: now,
            kind: PacketKind::Ack,
            proto: self.proto,
            flags: fl,
            prio: self.info.prio,
            rank: 0,
        }
    }

    /// Takes the bytes the application has handed over by now.
    fn take_messages(&mut self, cx: &mut Ctx<'_>) {
        if let Some(a) = &mut self.app {
            let packets = a.catch_up(cx.now, cx.rng);
            self.supply.released = packets.saturating_mul(self.supply.mss);
        }
    }

    /// When the application's next message arrives, while the sender has
    /// sent all it was handed and the flow is not over.
    fn app_wake(&self) -> Option<u64> {
        let a = self.app.as_ref()?;
        let s = &self.supply;
        let waiting = s.next >= s.released && s.total.is_none_or(|t| s.released < t);
        waiting.then(|| a.next_arrival())
    }

    pub(crate) fn start(&mut self, cx: &mut Ctx<'_>) {
        if let Some(a) = &mut self.app {
            a.start(cx.now, cx.rng);
            self.take_messages(cx);
        }
        if self.subs.len() > 1 {
            // Subflow i on path i of a shuffled list: distinct paths while there are enough.
            let n = self.info.num_paths.max(1);
            let mut paths: Vec<u32> = (0..n).collect();
            for i in (1..paths.len()).rev() {
                let j = cx.rng.random_range(0..=i);
                paths.swap(i, j);
            }
            for (i, s) in self.subs.iter_mut().enumerate() {
                s.path = paths[i % paths.len()];
            }
        }
        if self.p.handshake {
            let rto = self.subs[0].rto(&self.p);
            self.setup = Setup::SynSent {
                at: cx.now,
                deadline: cx.now + rto,
                tries: 0,
            };
            cx.out
                .push(self.control(self.subs[0].path, cx.now, flags::SYN));
            self.stats.packets_sent += 1;
            return;
        }
        self.pump(cx);
    }

    /// Lets every subflow send what its window allows; new data goes to the
    /// subflow with the lowest smoothed RTT first.
    fn pump(&mut self, cx: &mut Ctx<'_>) {
        if self.setup != Setup::Established || self.data_done() {
            return;
        }
        let mut sends = std::mem::take(&mut self.sends);
        if self.subs.len() == 1 {
            self.subs[0].fill(&mut self.supply, cx.now, &self.p, &mut sends);
        } else {
            let mut order = std::mem::take(&mut self.order);
            order.clear();
            order.extend(0..self.subs.len());
            order.sort_by_key(|&i| (self.subs[i].rtt.srtt().unwrap_or(0), i));
            for &i in &order {
                self.subs[i].fill(&mut self.supply, cx.now, &self.p, &mut sends);
            }
            self.order = order;
        }
        let total = self.info.size.unwrap_or(u64::MAX);
        let multipath = self.multipath();
        for s in sends.drain(..) {
            let mut f = if self.ect { flags::ECT } else { 0 };
            if s.retx {
                f |= flags::RETX;
                self.stats.retransmissions += 1;
            }
            // MPTCP: every copy of the last byte says so; the receiver
            // learns the connection's length from it.
            let last = match multipath {
                true => s.dsn + s.len as u64 == total,
                false => s.last,
            };
            if last {
                f |= flags::LAST;
            }
            cx.out.push(Packet {
                flow: self.info.id,
                src: self.info.src,
                dst: self.info.dst,
                seq: sub_seq(s.sub, s.seq),
                ack: if multipath { s.dsn } else { total },
                size: s.len + HEADER_BYTES,
                payload: s.len,
                path: s.path,
                sent_ps: cx.now,
                kind: PacketKind::Data,
                proto: self.proto,
                flags: f,
                prio: self.info.prio,
                rank: 0,
            });
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += s.len as u64;
        }
        self.sends = sends;
    }

    pub(crate) fn packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Ack {
            return;
        }
        if pkt.has(flags::SYN) {
            if let Setup::SynSent { at, .. } = self.setup {
                self.setup = Setup::Established;
                self.subs[0].rtt.sample(cx.now - at);
                self.stats.rtt(cx.now - at);
                let rtt = self.subs[0].rtt;
                for s in &mut self.subs[1..] {
                    s.rtt = rtt;
                }
                self.pump(cx);
            }
            return;
        }
        let (sub, sack) = split_seq(pkt.seq);
        let i = sub as usize;
        if i >= self.subs.len() || self.data_done() {
            return; // MPTCP: late ACKs of a finished connection change nothing
        }
        let coupling = (self.subs.len() > 1).then(|| {
            // A subflow without an RTT sample counts with the best one (1 µs before any).
            let best = self
                .subs
                .iter()
                .filter_map(|s| s.rtt.srtt())
                .min()
                .unwrap_or(1_000_000);
            LiaCoupling::new(self.subs.iter().map(|s| s.window(best)))
        });
        let ece = pkt.has(flags::ECE);
        // Without SACK the block reads as "none": above every sequence number.
        let sack = if self.p.sack_blocks == 0 {
            u64::MAX
        } else {
            sack
        };
        let a = AckInfo {
            ack: pkt.ack,
            sack,
            ece,
            echo: pkt.sent_ps,
        };
        self.take_messages(cx);
        let more_data = self.supply.remaining();
        // RFC 5827's "no new data to send" counts what the application has
        // handed over: an application-limited sender may retransmit early.
        let sendable = self.supply.has_new();
        if let Some(data) = self.supply.data.as_deref_mut() {
            // MPTCP: the connection is acknowledged when every DSN is.
            let mut delivered = std::mem::take(&mut self.delivered);
            let rtt =
                self.subs[i].on_ack(a, cx.now, &self.p, coupling, sendable, Some(&mut delivered));
            if let Some(r) = rtt {
                self.stats.rtt(r);
            }
            for (dsn, len) in delivered.drain(..) {
                data.delivered.insert(dsn, dsn + len as u64);
            }
            self.delivered = delivered;
            let total = self.info.size.unwrap_or(u64::MAX);
            if data.delivered.nxt >= total && self.stats.finish_ps.is_none() {
                self.stats.finish(cx.now);
                data.reinject.clear();
                for s in &mut self.subs {
                    s.rto_at = None;
                }
            }
        } else {
            if let Some(r) = self.subs[i].on_ack(a, cx.now, &self.p, coupling, sendable, None) {
                self.stats.rtt(r);
            }
            if !more_data && self.info.size.is_some() && self.subs[0].all_acked() {
                // The cumulative ACK covering the last byte.
                self.stats.finish(cx.now);
            }
        }
        self.pump(cx);
    }

    pub(crate) fn timer(&mut self, cx: &mut Ctx<'_>) {
        if let Setup::SynSent {
            deadline, tries, ..
        } = self.setup
        {
            if cx.now >= deadline {
                // Lost SYN or SYN-ACK: resend with a doubled timeout (RFC 6298 §5.7).
                let tries = tries + 1;
                let rto = self.subs[0]
                    .rto(&self.p)
                    .saturating_mul(1 << tries.min(20))
                    .min(self.p.max_rto.ps);
                self.setup = Setup::SynSent {
                    at: cx.now,
                    deadline: cx.now + rto,
                    tries,
                };
                self.stats.timeouts += 1;
                self.stats.retransmissions += 1;
                cx.out
                    .push(self.control(self.subs[0].path, cx.now, flags::SYN | flags::RETX));
                self.stats.packets_sent += 1;
            }
            return;
        }
        self.take_messages(cx);
        for i in 0..self.subs.len() {
            // A controller's own timer (rate-based ones; none of today's has one).
            if self.subs[i].cc.poll_at().is_some_and(|t| t <= cx.now) {
                self.subs[i].cc.on_timer(cx.now);
            }
            if self.subs[i].rto_at.is_some_and(|t| t <= cx.now) {
                self.stats.timeouts += 1;
                self.subs[i].on_rto(cx.now, &self.p);
                if let Some(data) = self.supply.data.as_deref_mut() {
                    self.subs[i].queue_reinjections(data);
                }
            }
        }
        self.pump(cx);
    }

    pub(crate) fn deadline(&self) -> Option<u64> {
        match self.setup {
            Setup::SynSent { deadline, .. } => Some(deadline),
            Setup::Established => self
                .subs
                .iter()
                .flat_map(|s| [s.rto_at, s.cc.poll_at()])
                .flatten()
                .chain(self.app_wake())
                .min(),
        }
    }
}

impl Transport for TcpSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.start(cx)
    }
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.packet(pkt, cx)
    }
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.timer(cx)
    }
    fn poll_at(&self) -> Option<u64> {
        self.deadline()
    }
    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}
