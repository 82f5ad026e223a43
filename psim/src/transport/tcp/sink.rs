//! The receiver of a TCP, DCTCP or MPTCP flow: per-subflow reassembly (and
//! MPTCP's connection-level reassembly by data sequence number, `mptcp.rs`),
//! ACK every segment or every second one (delayed ACK, RFC 5681 §4.2, RFC
//! 8257 §3.2 for CE changes), echo of the sender's timestamp (RFC 7323) and
//! of CE marks.

use super::mptcp::{Arrival, Ranges};
use super::{split_seq, sub_seq, TcpParams};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{Ctx, SinkStats, Transport};

/// Receive state of one subflow.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RecvState {
    /// Bytes received; `got.nxt` is the cumulative ACK.
    got: Ranges,
    /// In-order segments received since the last ACK (delayed ACK).
    unacked: u32,
    /// Timestamp to echo: the earliest unacknowledged segment's (RFC 7323 §4.3).
    echo: u64,
    /// CE state of the last segment (DCTCP receiver, RFC 8257 §3.2).
    ce: bool,
    path: u32,
    last_seq: u64,
}

/// Receiver of a TCP, DCTCP or MPTCP flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TcpSink {
    flow: u64,
    sender: u32,
    me: u32,
    proto: Protocol,
    prio: u8,
    subs: Vec<RecvState>,
    /// MPTCP: the connection's bytes by data sequence number.
    data: Option<Ranges>,
    total: Option<u64>,
    delayed: bool,
    delay_ps: u64,
    ack_at: Option<u64>,
    /// ACK at the priority of the data that triggers it (RC3, [TH] §2.3.1).
    follow_prio: bool,
    /// Counters.
    pub stats: SinkStats,
}

impl TcpSink {
    /// A receiver for the flow of `first`.
    pub fn new(first: &Packet, p: &TcpParams) -> Self {
        TcpSink {
            flow: first.flow,
            sender: first.src,
            me: first.dst,
            proto: first.proto,
            prio: first.prio,
            subs: Vec::new(),
            data: (first.proto == Protocol::Mptcp).then(Ranges::default),
            total: None,
            delayed: p.delayed_ack,
            delay_ps: p.delayed_ack_timeout.ps,
            ack_at: None,
            follow_prio: false,
            stats: SinkStats::default(),
        }
    }

    /// This receiver, ACKing each segment at the priority it arrived on
    /// (RC3's receiver, [TH] §2.3.1).
    pub fn following_prio(mut self) -> Self {
        self.follow_prio = true;
        self
    }

    fn ack(&self, sub: u8, sack: u64, ece: bool) -> Packet {
        let r = &self.subs[sub as usize];
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.sender,
            seq: sub_seq(sub, sack),
            ack: r.got.nxt,
            size: HEADER_BYTES,
            payload: 0,
            path: r.path,
            sent_ps: r.echo,
            kind: PacketKind::Ack,
            proto: self.proto,
            flags: if ece { flags::ECE } else { 0 },
            prio: self.prio,
            rank: 0,
        }
    }

    /// Bytes of the connection received in order.
    fn delivered(&self) -> u64 {
        match &self.data {
            Some(d) => d.nxt,
            None => self.subs[0].got.nxt,
        }
    }

    fn packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        if pkt.kind == PacketKind::Ack && pkt.has(flags::SYN) {
            // SYN: answer with a SYN-ACK on the same path.
            let mut r = pkt.clone();
            r.src = self.me;
            r.dst = self.sender;
            r.flags = flags::SYN;
            r.sent_ps = cx.now;
            cx.out.push(r);
            return;
        }
        if pkt.kind != PacketKind::Data {
            return;
        }
        if self.follow_prio {
            self.prio = pkt.prio;
        }
        let (sub, start) = split_seq(pkt.seq);
        if self.subs.len() <= sub as usize {
            self.subs.resize(sub as usize + 1, RecvState::default());
        }
        let end = start + pkt.payload as u64;
        let mut new_bytes = 0u64;
        if let Some(d) = &mut self.data {
            // MPTCP: `ack` is the DSN; the copy of the last byte says so.
            let dsn_end = pkt.ack + pkt.payload as u64;
            new_bytes = d.insert(pkt.ack, dsn_end).1;
            if pkt.has(flags::LAST) {
                self.total = Some(dsn_end);
            }
        } else if pkt.ack != u64::MAX {
            self.total = Some(pkt.ack);
        }
        let ce = pkt.has(flags::ECN_CE);
        // DCTCP (RFC 8257 §3.2): on a change of CE state, ACK what came before at once.
        let r = &self.subs[sub as usize];
        if self.delayed && ce != r.ce && r.unacked > 0 {
            cx.out.push(self.ack(sub, r.last_seq, r.ce));
            self.subs[sub as usize].unacked = 0;
        }
        let r = &mut self.subs[sub as usize];
        r.path = pkt.path;
        let mut immediate = !self.delayed;
        r.ce = ce;
        r.last_seq = start;
        let (arrival, sub_new) = r.got.insert(start, end);
        match arrival {
            Arrival::Duplicate => {
                immediate = true; // duplicate: ACK at once (RFC 5681 §4.2)
                r.echo = pkt.sent_ps;
            }
            Arrival::InOrder { filled_hole } => {
                if filled_hole {
                    immediate = true; // RFC 5681 §4.2: ACK at once when a hole is filled
                }
                if r.unacked == 0 {
                    r.echo = pkt.sent_ps;
                }
                r.unacked += 1;
                if r.unacked >= 2 {
                    immediate = true;
                }
            }
            Arrival::OutOfOrder => {
                // Remembered; ACK at once (a duplicate ACK with SACK).
                r.echo = pkt.sent_ps;
                immediate = true;
            }
        }
        if self.data.is_none() {
            new_bytes = sub_new;
        }
        self.stats.bytes_received += new_bytes;
        let complete = self.total.is_some_and(|t| self.delivered() >= t);
        if complete && self.stats.finish_ps.is_none() {
            self.stats.finish_ps = Some(cx.now);
        }
        if immediate || complete {
            cx.out.push(self.ack(sub, start, ce));
            let r = &mut self.subs[sub as usize];
            r.unacked = 0;
            r.echo = 0;
            if self.subs.iter().all(|s| s.unacked == 0) {
                self.ack_at = None;
            }
        } else if self.ack_at.is_none() {
            self.ack_at = Some(cx.now + self.delay_ps);
        }
    }

    fn timer(&mut self, cx: &mut Ctx<'_>) {
        if self.ack_at.is_some_and(|t| t <= cx.now) {
            self.ack_at = None;
            for sub in 0..self.subs.len() {
                if self.subs[sub].unacked > 0 {
                    let r = &self.subs[sub];
                    let a = self.ack(sub as u8, r.last_seq, r.ce);
                    cx.out.push(a);
                    let r = &mut self.subs[sub];
                    r.unacked = 0;
                    r.echo = 0;
                }
            }
        }
    }

    fn deadline(&self) -> Option<u64> {
        self.ack_at
    }
}

impl Transport for TcpSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.packet(pkt, cx)
    }
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.timer(cx)
    }
    fn poll_at(&self) -> Option<u64> {
        self.deadline()
    }
    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}
