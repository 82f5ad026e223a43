//! pHost's sender ([Y] `CapabilityFlow` sending side): an RTS, free tokens,
//! then one data packet per token the host's arbiter lets it spend.

use super::{pack, unpack, PhostParams, CONTROL_RANK, DATA_RANK};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{Ctx, FlowInfo, SourceStats, Transport};
use crate::units::tx_time_ps;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Longest RTS back-off: 2^6 = 64 times the timeout.
const MAX_BACKOFF: u32 = 6;

/// Sender of a pHost flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PhostSource {
    info: FlowInfo,
    proto: Protocol,
    p: PhostParams,
    total: u64,
    /// Packets the receiver last said it still misses.
    remaining: u64,
    /// Unspent tokens: (expiry, token number, data sequence number).
    tokens: BinaryHeap<Reverse<(u64, u64, u64)>>,
    /// Expiry of the latest token received (tokens arrive in expiry order).
    latest_expiry: u64,
    /// Which data packets were sent at least once.
    sent: Vec<u64>,
    /// Packets sent, for per-packet path spraying.
    sprayed: u64,
    acked: bool,
    /// When the sender last sent an RTS or heard from the receiver.
    heard_at: u64,
    backoff: u32,
    ctrl_at: Option<u64>,
    /// Counters.
    pub stats: SourceStats,
}

impl PhostSource {
    /// A sender for `flow`.
    pub fn new(flow: &FlowInfo, proto: Protocol, p: &PhostParams) -> Self {
        let size = flow.size.unwrap_or(u64::MAX / 2);
        let total = size.div_ceil(p.mss_bytes as u64).max(1);
        PhostSource {
            info: flow.clone(),
            proto,
            p: p.clone(),
            total,
            remaining: total,
            tokens: BinaryHeap::new(),
            latest_expiry: 0,
            sent: Vec::new(),
            sprayed: 0,
            acked: false,
            heard_at: 0,
            backoff: 0,
            ctrl_at: None,
            stats: SourceStats::default(),
        }
    }

    /// Whether the receiver acknowledged the whole flow.
    pub fn done(&self) -> bool {
        self.acked
    }

    /// Unspent tokens, expired ones included until next examined.
    pub fn tokens_held(&self) -> usize {
        self.tokens.len()
    }

    fn payload(&self, seq: u64) -> u32 {
        let mss = self.p.mss_bytes as u64;
        match self.info.size {
            Some(size) => (size - seq * mss).min(mss) as u32,
            None => mss as u32,
        }
    }

    /// Per-packet spraying over the flow's paths ([Y] `load_balancing` 0).
    fn next_path(&mut self) -> u32 {
        let n = self.info.num_paths.max(1) as u64;
        self.sprayed += 1;
        ((self.info.ecmp_path as u64 + self.sprayed - 1) % n) as u32
    }

    fn packet(&mut self, kind: PacketKind, now: u64) -> Packet {
        Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq: 0,
            ack: pack(self.total, 0),
            size: HEADER_BYTES,
            payload: 0,
            path: self.next_path(),
            sent_ps: now,
            kind,
            proto: self.proto,
            flags: 0,
            prio: self.info.prio,
            rank: CONTROL_RANK,
        }
    }

    fn send_rts(&mut self, cx: &mut Ctx<'_>) {
        let mut rts = self.packet(PacketKind::Header, cx.now);
        rts.flags = flags::SYN;
        cx.out.push(rts);
        self.stats.packets_sent += 1;
        self.heard_at = cx.now;
    }

    /// Tells the host's arbiter what this flow holds.
    fn offer(&self, cx: &mut Ctx<'_>) {
        let key = (self.remaining, self.info.start_ps, self.info.id);
        let expires = if self.tokens.is_empty() {
            0
        } else {
            self.latest_expiry
        };
        cx.services.phost.tx.update(cx.slot, key, expires);
    }

    fn mark_sent(&mut self, seq: u64) -> bool {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if self.sent.len() <= w {
            self.sent.resize(w + 1, 0);
        }
        let first = self.sent[w] & (1 << b) == 0;
        self.sent[w] |= 1 << b;
        first
    }
}

impl Transport for PhostSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.send_rts(cx);
        let f = self.p.free_tokens(self.total);
        if f > 0 {
            // [Y] `assign_init_capability`: token i names packet i; all
            // expire (F + ttl) slots after the start.
            let expiry = cx.now
                + self
                    .p
                    .slots_ps(f as f64 + self.p.token_ttl_slots, cx.nic_bps);
            self.tokens.extend((0..f).map(|i| Reverse((expiry, i, i))));
            self.latest_expiry = expiry;
        }
        self.offer(cx);
        if self.p.ctrl_timeout.ps > 0 {
            self.ctrl_at = Some(cx.now + self.p.ctrl_timeout.ps);
        }
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if self.acked || pkt.has(flags::BOUNCED) {
            return;
        }
        self.heard_at = cx.now;
        self.backoff = 0;
        match pkt.kind {
            PacketKind::Pull => {
                let (remaining, token) = unpack(pkt.ack);
                self.remaining = remaining;
                let expiry = cx.now + self.p.slots_ps(self.p.token_ttl_slots, cx.nic_bps);
                self.tokens.push(Reverse((expiry, token, pkt.seq)));
                self.latest_expiry = self.latest_expiry.max(expiry);
                self.offer(cx);
            }
            PacketKind::Ack => {
                // The receiver's completion ACK: every packet arrived.
                self.acked = true;
                self.stats.finish(cx.now);
                self.tokens.clear();
                self.ctrl_at = None;
                cx.services.phost.tx.remove(cx.slot);
            }
            _ => {}
        }
    }

    /// The host's arbiter chose this flow: spend its earliest-expiring
    /// unexpired token on one data packet.
    fn on_grant(&mut self, cx: &mut Ctx<'_>) {
        while let Some(&Reverse((expiry, token, seq))) = self.tokens.peek() {
            self.tokens.pop();
            if expiry <= cx.now {
                continue; // lapsed
            }
            let payload = self.payload(seq);
            let mut pkt = self.packet(PacketKind::Data, cx.now);
            pkt.seq = seq;
            pkt.ack = pack(self.total, token);
            pkt.payload = payload;
            pkt.size = payload + HEADER_BYTES;
            pkt.rank = DATA_RANK;
            if seq + 1 == self.total && self.info.size.is_some() {
                pkt.flags |= flags::LAST;
            }
            if !self.mark_sent(seq) {
                pkt.flags |= flags::RETX;
                self.stats.retransmissions += 1;
            }
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += payload as u64;
            cx.services
                .phost
                .tx
                .sent(cx.now, tx_time_ps(pkt.size as u64, cx.nic_bps));
            cx.out.push(pkt);
            break;
        }
        self.offer(cx);
    }

    /// The RTS timer (HP4): resend the RTS if the receiver has been silent
    /// for the (backed-off) timeout.
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        if self.acked {
            self.ctrl_at = None;
            return;
        }
        let wait = self.p.ctrl_timeout.ps << self.backoff;
        if cx.now >= self.heard_at + wait {
            self.stats.timeouts += 1;
            self.send_rts(cx);
            self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        }
        self.ctrl_at = Some(self.heard_at + (self.p.ctrl_timeout.ps << self.backoff));
    }

    fn poll_at(&self) -> Option<u64> {
        self.ctrl_at
    }

    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}
