//! pHost's receiver ([Y] `CapabilityFlow` receiving side): registers the
//! flow with the host's token clock and issues one token whenever the clock
//! grants it a turn.

use super::{pack, unpack, PhostParams, CONTROL_RANK};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{Ctx, SinkStats, Transport};

/// Receiver of a pHost flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PhostSink {
    flow: u64,
    sender: u32,
    me: u32,
    proto: Protocol,
    prio: u8,
    p: PhostParams,
    /// Flow start as the receiver knows it (creation time of the first packet).
    start: u64,
    total: u64,
    registered: bool,
    received: Vec<u64>,
    got: u64,
    /// First packet not yet received.
    received_until: u64,
    /// Next token number to issue (`capability_count`).
    count: u64,
    /// Highest token number seen in arriving data (`largest_cap_seq_received`), −1 at first.
    largest: i64,
    /// Token number at which the redundancy timer arms (`capability_goal`).
    goal: u64,
    /// When missing packets may be re-tokened (`redundancy_ctrl_timeout`).
    redundancy_at: Option<u64>,
    last_token_at: u64,
    /// Where the round robin over missing packets continues.
    rr: u64,
    /// Tokens sent (for per-token path spraying).
    tokens_sent: u64,
    /// Counters.
    pub stats: SinkStats,
}

impl PhostSink {
    /// A receiver for the flow of `first` (an RTS or a data packet).
    pub fn new(first: &Packet, p: &PhostParams) -> Self {
        PhostSink {
            flow: first.flow,
            sender: first.src,
            me: first.dst,
            proto: first.proto,
            prio: first.prio,
            p: p.clone(),
            start: first.sent_ps,
            total: unpack(first.ack).0.max(1),
            registered: false,
            received: Vec::new(),
            got: 0,
            received_until: 0,
            count: 0,
            largest: -1,
            goal: 0,
            redundancy_at: None,
            last_token_at: 0,
            rr: 0,
            tokens_sent: 0,
            stats: SinkStats::default(),
        }
    }

    /// Tokens issued so far.
    pub fn tokens_issued(&self) -> u64 {
        self.tokens_sent
    }

    fn has(&self, seq: u64) -> bool {
        self.received
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
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

    fn done(&self) -> bool {
        self.got >= self.total
    }

    /// The first packet at or after `from` not yet received, if any before the end.
    fn missing_from(&self, from: u64) -> Option<u64> {
        (from..self.total).find(|&s| !self.has(s))
    }

    fn control(&self, kind: PacketKind, path: u32, now: u64) -> Packet {
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.sender,
            seq: 0,
            ack: 0,
            size: HEADER_BYTES,
            payload: 0,
            path,
            sent_ps: now,
            kind,
            proto: self.proto,
            flags: 0,
            prio: self.prio,
            rank: CONTROL_RANK,
        }
    }

    /// When the token clock may next grant this flow: after its redundancy
    /// timer, and, while more than a window of its tokens is unanswered,
    /// not before the window timeout since its last token (downgrade).
    fn ready_at(&self, slot_ps: u64) -> u64 {
        let mut t = self.redundancy_at.unwrap_or(0);
        if self.count as i64 - self.largest > self.p.window_packets as i64 {
            let wait = (self.p.window_timeout_slots * slot_ps as f64).round() as u64;
            t = t.max(self.last_token_at + wait);
        }
        t
    }

    /// Tells the host's token clock where this flow stands.
    fn offer(&self, cx: &mut Ctx<'_>) {
        if self.done() {
            cx.services.phost.rx.remove(cx.slot);
            return;
        }
        let slot_ps = self.p.slot_ps(cx.nic_bps);
        let key = (self.total - self.got, self.start, self.flow);
        cx.services
            .phost
            .rx
            .update(cx.slot, key, self.ready_at(slot_ps));
    }

    /// [Y] `receive_rts`: the flow's free tokens are out; hold the clock
    /// while their data arrives.
    fn register(&mut self, cx: &mut Ctx<'_>) {
        self.registered = true;
        let slot_ps = self.p.slot_ps(cx.nic_bps);
        let f = self.p.free_tokens(self.total);
        self.count = f;
        self.rr = f;
        self.goal = self.total;
        if f == self.total {
            self.redundancy_at = Some(cx.now + 2 * f * slot_ps);
        }
        let add = self.p.holdoff == super::Holdoff::Add;
        cx.services.phost.rx.hold_off(cx.now, f, slot_ps, add);
    }

    fn ack(&mut self, path: u32, cx: &mut Ctx<'_>) {
        cx.out.push(self.control(PacketKind::Ack, path, cx.now));
    }
}

impl Transport for PhostSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        let rts = pkt.kind == PacketKind::Header && pkt.has(flags::SYN);
        if !self.registered && (rts || pkt.kind == PacketKind::Data) {
            self.register(cx);
        }
        match pkt.kind {
            PacketKind::Data => {
                if self.mark(pkt.seq) {
                    self.got += 1;
                    self.stats.bytes_received += pkt.payload as u64;
                    while self.has(self.received_until) {
                        self.received_until += 1;
                    }
                }
                self.largest = self.largest.max(unpack(pkt.ack).1 as i64);
                if self.done() {
                    if self.stats.finish_ps.is_none() {
                        self.stats.finish_ps = Some(cx.now);
                    }
                    self.ack(pkt.path, cx);
                }
            }
            // An RTS (resent) for a finished flow: the ACK was lost.
            PacketKind::Header if rts && self.done() => self.ack(pkt.path, cx),
            _ => {} // trimmed headers count as lost
        }
        self.offer(cx);
    }

    /// The host's token clock chose this flow: issue one token.
    fn on_grant(&mut self, cx: &mut Ctx<'_>) {
        if self.done() {
            self.offer(cx);
            return;
        }
        let slot_ps = self.p.slot_ps(cx.nic_bps);
        // Loss recovery: the goal grows by what is still missing.
        if self.redundancy_at.is_some_and(|t| t <= cx.now) {
            self.redundancy_at = None;
            self.goal += self.total - self.got;
        }
        // Downgrade: relax a skipped flow whose window timeout has passed.
        let window = self.p.window_packets as i64;
        if self.count as i64 - self.largest > window {
            self.largest = self.count as i64 - window;
        }
        let seq = self
            .missing_from(self.rr)
            .or_else(|| self.missing_from(self.received_until))
            .unwrap_or(self.received_until);
        self.rr = seq + 1;
        let mut tok = self.control(PacketKind::Pull, self.tokens_sent as u32, cx.now);
        tok.seq = seq;
        tok.ack = pack(self.total - self.got, self.count);
        cx.out.push(tok);
        self.tokens_sent += 1;
        self.count += 1;
        self.last_token_at = cx.now;
        if self.count >= self.goal && self.redundancy_at.is_none() {
            let wait = (self.p.resend_timeout_slots * slot_ps as f64).round() as u64;
            self.redundancy_at = Some(cx.now + wait);
        }
        cx.services.phost.rx.sent(cx.now, slot_ps);
        self.offer(cx);
    }

    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}
