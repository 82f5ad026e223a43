//! The receiver of a TCP, DCTCP or MPTCP flow: per-subflow reassembly,
//! ACK every segment or every second one (delayed ACK, RFC 5681 §4.2, RFC
//! 8257 §3.2 for CE changes), echo of the sender's timestamp (RFC 7323) and
//! of CE marks.

use super::{split_seq, sub_seq, TcpParams};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{Ctx, SinkStats, Transport};
use std::collections::BTreeMap;

/// Receive state of one subflow.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RecvState {
    rcv_nxt: u64,
    /// Out-of-order ranges [start, end), merged.
    ooo: BTreeMap<u64, u64>,
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
            ack: r.rcv_nxt,
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

    fn delivered(&self) -> u64 {
        self.subs.iter().map(|s| s.rcv_nxt).sum()
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
        if pkt.ack != u64::MAX {
            self.total = Some(pkt.ack);
        }
        let end = start + pkt.payload as u64;
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
        let mut new_bytes = 0u64;
        if end <= r.rcv_nxt {
            immediate = true; // duplicate: ACK at once (RFC 5681 §4.2)
            r.echo = pkt.sent_ps;
        } else if start <= r.rcv_nxt {
            new_bytes += end - r.rcv_nxt;
            r.rcv_nxt = end;
            let filled_hole = !r.ooo.is_empty();
            while let Some((&s, &e)) = r.ooo.first_key_value() {
                if s > r.rcv_nxt {
                    break;
                }
                r.ooo.pop_first();
                if e > r.rcv_nxt {
                    r.rcv_nxt = e;
                }
            }
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
        } else {
            // Out of order: remember the range, ACK at once (a duplicate ACK with SACK).
            let overlaps = r
                .ooo
                .range(..=start)
                .next_back()
                .is_some_and(|(_, &e)| e >= end);
            if !overlaps {
                new_bytes += pkt.payload as u64;
                let e = r.ooo.entry(start).or_insert(end);
                *e = (*e).max(end);
            }
            r.echo = pkt.sent_ps;
            immediate = true;
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
