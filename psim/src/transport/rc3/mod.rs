//! RC3, recursively cautious congestion control ([TH] Ch. 2): two loops
//! over one send buffer.
//!
//! - The **primary loop** is the TCP NewReno + SACK sender of `tcp/`
//!   ([`TcpSource`], reused, not copied) at priority 0, from byte 0
//!   ([TH] §2.1.1).
//! - The **recursive low-priority (RLP) loop** sends the rest of the buffer
//!   once, from its tail backwards, at the start of the flow: the first
//!   `bucket_base` packets from the right at priority 1, the next
//!   `bucket_base · bucket_factor` at priority 2, and so on up to `levels`
//!   ([TH] §2.1.1). It hands them to the host NIC, which must be strict
//!   priority (`[host.queue] kind = "prio_drop"`, large enough to hold a
//!   flow): the NIC sends them only when no priority-0 packet waits, so the
//!   RLP rate is the NIC rate minus TCP's, work-conserving and without any
//!   timer, as the thesis's Linux implementation does with its `prio` qdisc
//!   ([TH] §2.3.2). It starts where TCP's first window ends (TCP's highest
//!   byte sent) and sends each packet once; it never retransmits.
//! - **ACKs**: the receiver ([`TcpSink::following_prio`]) ACKs each segment
//!   at the priority it arrived on, with the cumulative ACK and a SACK block.
//!   A low-priority ACK changes no window and sends nothing: its cumulative
//!   ACK and SACK block only mark bytes as delivered ([`LowSeen`]). When TCP
//!   reaches those bytes it records them as SACKed without sending them, and
//!   it sends the bytes the RLP sent that are not known delivered (the
//!   holes), as retransmissions ([TH] §2.1.1).
//! - **ACK bump** ([TH] §2.3.1): a priority-0 cumulative ACK beyond TCP's
//!   `snd_nxt` advances `snd_nxt` to it.
//! - `sack = false`: the sender ignores every SACK block (TCP's and the
//!   RLP's); only cumulative ACKs say what was delivered, so some delivered
//!   bytes are sent again ([TH] §2.1.1 fn. 3). The primary loop then recovers
//!   as NewReno does, each duplicate ACK standing for one segment that left
//!   (TCP's `sack_blocks = 0`, `transport/tcp/mod.rs`).
//!
//! TCP's timers and the other `[protocol.tcp]` keys apply to the primary
//! loop; `[protocol.rc3]` sets its MSS and initial window (the thesis's
//! baseline, [TH] §2.4.1).
//!
//! | parameter (`[protocol.rc3]`) | default | source |
//! |---|---|---|
//! | `mss_bytes` | 1460 | [TH] §2.4.1 |
//! | `iw_packets` | 4 | [TH] §2.4.1 (simulated baseline: initcwnd 4) |
//! | `levels`: low priorities used (1 to 7; the last takes the rest of the buffer) | 7 | [TH] §2.3.1 (Linux has 16 bands, "enough for petabyte flows"); 7 fills the 3-bit priority of psim's switches |
//! | `bucket_base`: packets at priority 1 | 40 | [TH] §2.1.1 |
//! | `bucket_factor`: growth of each next bucket | 10 | [TH] §2.1.1 (40 / 400 / 4000) |
//! | `bucket_rule` | `"cumulative"`: packet ranks 1–40 from the tail → P1, 41–440 → P2, 441–4440 → P3 | TA5 ([TH] §2.1.1); `"index"`: rank ≤ 40 → P1, ≤ 400 → P2, ≤ 4000 → P3 ([TH] §2.3.1) |
//! | `sack` | true | [TH] §2.1.1 (SACK on; FACK and DSACK off, as psim's TCP has neither) |
//! | `low_loop` | true | false: the primary loop alone (TCP with these MSS and IW), for comparisons |
//!
//! Departures from the thesis: the RLP loop runs at the flow's start (the
//! thesis also starts it there, "as soon as the TCP send buffer is
//! populated"): once for a backlog, which hands its whole buffer at once,
//! and again over each message of an application-paced flow (`app`,
//! `transport/app.rs`), from the message's tail down. A packet's
//! rank from the tail counts whole segments: the last (partial) segment is
//! rank 1, so both rules see the same ranks.

mod model;
#[cfg(test)]
mod tests;

pub use model::LooseModel;

use super::cc::{Controller, Reno};
use super::config::{bad, in_range};
use super::tcp::{split_seq, sub_seq, Seen, TcpParams, TcpSink, TcpSource};
use super::{Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SourceStats};
use super::{SwitchClass, Transport};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use std::collections::BTreeMap;

/// Which packets of the RLP loop go to which priority (TA5).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BucketRule {
    /// Buckets of base, base·f, base·f², … packets: ranks 1–40, 41–440, … ([TH] §2.1.1).
    Cumulative,
    /// Rank bounds base, base·f, …: ranks ≤ 40, ≤ 400, … ([TH] §2.3.1).
    Index,
}

/// `[protocol.rc3]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rc3Params {
    /// Payload bytes per full segment.
    pub mss_bytes: u32,
    /// TCP's initial window, segments.
    pub iw_packets: u32,
    /// Low priorities the RLP loop uses (1..=7).
    pub levels: u8,
    /// Packets at priority 1.
    pub bucket_base: u32,
    /// Growth factor of each next bucket.
    pub bucket_factor: u32,
    /// Bucket rule.
    pub bucket_rule: BucketRule,
    /// SACK on.
    pub sack: bool,
    /// The RLP loop on (false: the primary loop alone).
    pub low_loop: bool,
}

impl Default for Rc3Params {
    fn default() -> Self {
        Rc3Params {
            mss_bytes: 1460,
            iw_packets: 4,
            levels: 7,
            bucket_base: 40,
            bucket_factor: 10,
            bucket_rule: BucketRule::Cumulative,
            sack: true,
            low_loop: true,
        }
    }
}

impl Rc3Params {
    /// Checks the section; `key` is `protocol.rc3`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |name: &str| format!("{key}.{name}");
        in_range(&k("mss_bytes"), self.mss_bytes, 1, 65_000)?;
        in_range(&k("iw_packets"), self.iw_packets, 1, u32::MAX)?;
        in_range(&k("bucket_base"), self.bucket_base, 1, u32::MAX)?;
        in_range(&k("bucket_factor"), self.bucket_factor, 1, 1_000_000)?;
        if !(1..=7).contains(&self.levels) {
            return Err(bad(&k("levels"), self.levels, "must be 1 to 7"));
        }
        Ok(())
    }

    /// The primary loop's TCP parameters: `[protocol.tcp]` with this MSS and
    /// IW, and without SACK when `sack = false` (NewReno's recovery).
    pub fn tcp(&self, tcp: &TcpParams) -> TcpParams {
        TcpParams {
            mss_bytes: self.mss_bytes,
            iw_packets: self.iw_packets,
            sack_blocks: if self.sack { tcp.sack_blocks } else { 0 },
            ..tcp.clone()
        }
    }

    /// The priority of the RLP packet `rank` packets from the tail (rank 1 =
    /// the last packet).
    pub fn bucket(&self, rank: u64) -> u8 {
        let f = self.bucket_factor as u64;
        let (mut size, mut bound) = (self.bucket_base as u64, 0u64);
        for level in 1..self.levels {
            bound = match self.bucket_rule {
                BucketRule::Cumulative => bound.saturating_add(size),
                BucketRule::Index => size,
            };
            if rank <= bound {
                return level;
            }
            size = size.saturating_mul(f);
        }
        self.levels
    }
}

/// What the sender knows of the bytes the RLP loop sent: which were
/// delivered (from low-priority ACKs), and where the RLP's bytes start.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LowSeen {
    /// Delivered byte ranges [start, end), merged, keyed by start.
    delivered: BTreeMap<u64, u64>,
    /// The byte ranges [start, end) the RLP loop sent, keyed by start: one
    /// per run of the loop (one for a backlog; one per message an
    /// application hands over).
    low: BTreeMap<u64, u64>,
}

impl LowSeen {
    fn new() -> Self {
        LowSeen::default()
    }

    /// Whether the RLP loop sent the byte at `seq`.
    fn sent_low(&self, seq: u64) -> bool {
        self.low
            .range(..=seq)
            .next_back()
            .is_some_and(|(_, &e)| e > seq)
    }

    /// Marks [start, end) delivered.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        // Merge with a range that starts at or before `start` and reaches it.
        if let Some((&ps, &pe)) = self.delivered.range(..=s).next_back() {
            if pe >= s {
                if pe >= e {
                    return;
                }
                s = ps;
                e = e.max(pe);
            }
        }
        // Swallow ranges that start inside [s, e].
        while let Some((&ns, &ne)) = self.delivered.range(s..).next() {
            if ns > e {
                break;
            }
            self.delivered.remove(&ns);
            e = e.max(ne);
        }
        self.delivered.insert(s, e);
    }

    /// Whether all of [start, end) is known delivered.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.delivered
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }

    /// What the primary loop should do with the segment [seq, seq + len).
    pub(crate) fn classify(&self, seq: u64, len: u32) -> Seen {
        if self.covers(seq, seq + len as u64) {
            Seen::Delivered
        } else if self.sent_low(seq) {
            Seen::Hole
        } else {
            Seen::New
        }
    }
}

/// RC3's counters beyond the TCP sender's.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rc3Stats {
    /// Packets the RLP loop sent, per priority (index 0 unused).
    pub low_sent: [u64; 8],
    /// ACK bumps.
    pub bumps: u64,
    /// Low-priority ACKs received.
    pub low_acks: u64,
}

/// The protocol table's row for RC3.
pub struct Rc3;

impl ProtocolDef for Rc3 {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.rc3.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Endpoint::Rc3Source(Box::new(Rc3Source::new(proto, flow, p)))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        let tp = p.rc3.tcp(&p.tcp);
        Endpoint::TcpSink(Box::new(TcpSink::new(first, &tp).following_prio()))
    }
}

/// Sender of an RC3 flow: the TCP sender plus the RLP loop.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Rc3Source {
    tcp: TcpSource,
    p: Rc3Params,
    /// Where the RLP loop's last run ended (0: it has not run).
    low_end: u64,
    /// RC3's own counters.
    pub rc3: Rc3Stats,
}

impl Rc3Source {
    /// A sender for `flow` under `p`.
    pub fn new(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Self {
        let tp = p.rc3.tcp(&p.tcp);
        let (iw, mss) = (tp.iw_packets, tp.mss_bytes);
        let cc = || Controller::Reno(Reno::new(iw, mss, false));
        // The primary loop is priority 0 whatever the workload says ([TH] §2.1.1).
        let info = FlowInfo {
            prio: 0,
            ..flow.clone()
        };
        let mut tcp = TcpSource::new(&info, proto, &tp, 1, false, cc);
        if p.rc3.low_loop && (flow.size.is_some() || flow.app.is_some()) {
            tcp.supply.seen = Some(Box::new(LowSeen::new()));
        }
        Rc3Source {
            tcp,
            p: p.rc3.clone(),
            low_end: 0,
            rc3: Rc3Stats::default(),
        }
    }

    /// TCP's congestion window, bytes.
    pub fn cwnd(&self) -> f64 {
        self.tcp.cwnd(0)
    }

    /// The RLP loop: the buffer from its tail down to TCP's highest byte
    /// sent, each segment once, at its bucket's priority. With an
    /// application (`app`), the buffer is what it has handed over: the loop
    /// runs again over each new message, from the message's tail down to
    /// TCP's highest byte sent or the loop's last run.
    fn send_low(&mut self, cx: &mut Ctx<'_>) {
        let end = self.tcp.supply.sendable_end();
        let from = self.tcp.supply.next.max(self.low_end);
        let Some(seen) = self.tcp.supply.seen.as_deref_mut() else {
            return;
        };
        if end == u64::MAX {
            return;
        }
        self.low_end = end;
        if from >= end {
            return;
        }
        seen.low.insert(from, end);
        let total = self.tcp.info.size.unwrap_or(u64::MAX);
        let mss = self.p.mss_bytes as u64;
        let n = end.div_ceil(mss);
        let info = &self.tcp.info;
        for k in (from / mss..n).rev() {
            let seq = k * mss;
            let len = (end - seq).min(mss) as u32;
            let prio = self.p.bucket(n - k);
            let last = if seq + len as u64 == total {
                flags::LAST
            } else {
                0
            };
            cx.out.push(Packet {
                flow: info.id,
                src: info.src,
                dst: info.dst,
                seq: sub_seq(0, seq),
                ack: total,
                size: len + HEADER_BYTES,
                payload: len,
                path: self.tcp.subs[0].path(),
                sent_ps: cx.now,
                kind: PacketKind::Data,
                proto: self.tcp.proto,
                flags: last,
                prio,
                rank: 0,
            });
            self.rc3.low_sent[prio as usize] += 1;
            self.tcp.stats.packets_sent += 1;
            self.tcp.stats.bytes_sent += len as u64;
        }
    }

    /// Runs the RLP loop over bytes not yet handed to it: at the start the
    /// whole backlog (or the messages handed over so far), then each new
    /// message. A flow without the loop (`low_loop = false`, or endless
    /// without `app`) has no `seen` and costs one test per ACK.
    /// With a handshake (`protocol.tcp.handshake`) the loop waits for the
    /// SYN-ACK, as in the thesis's Linux RC3, which sends from the first
    /// window on ([TH] §2.1, Fig. 2.2): its first run follows TCP's IW.
    fn send_new_low(&mut self, cx: &mut Ctx<'_>) {
        if self.tcp.supply.seen.is_some()
            && self.tcp.established()
            && self.tcp.supply.sendable_end() > self.low_end
        {
            self.send_low(cx);
        }
    }

    fn packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Ack || pkt.has(flags::SYN) {
            self.tcp.packet(pkt, cx);
            return;
        }
        // Without SACK the primary loop ignores the block itself
        // (`sack_blocks = 0`, see `tcp()`); only the RLP's use is guarded here.
        let total = self.tcp.info.size.unwrap_or(u64::MAX);
        if pkt.prio > 0 {
            self.rc3.low_acks += 1;
            if let Some(seen) = self.tcp.supply.seen.as_deref_mut() {
                seen.insert(0, pkt.ack);
                let (_, s) = split_seq(pkt.seq);
                let mss = self.p.mss_bytes as u64;
                if self.p.sack && s < total {
                    seen.insert(s, (s + mss).min(total));
                }
            }
            if pkt.ack < total {
                // Changes no window and sends nothing ([TH] §2.1.1).
                return;
            }
            // Everything arrived: let TCP see the final cumulative ACK, so
            // that it stops its timer.
        }
        let sub = &mut self.tcp.subs[0];
        if pkt.ack > sub.snd_nxt() && pkt.ack <= total {
            // The ACK bump ([TH] §2.3.1).
            sub.extend_delivered_to(pkt.ack);
            self.tcp.supply.next = self.tcp.supply.next.max(pkt.ack);
            self.rc3.bumps += 1;
        }
        self.tcp.packet(pkt, cx);
    }
}

impl Transport for Rc3Source {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.tcp.start(cx);
        self.send_new_low(cx);
    }
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.packet(pkt, cx);
        self.send_new_low(cx);
    }
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.tcp.timer(cx);
        self.send_new_low(cx);
    }
    fn poll_at(&self) -> Option<u64> {
        self.tcp.deadline()
    }
    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.tcp.stats)
    }
}
