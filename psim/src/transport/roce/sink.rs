//! The RoCE receiver: in-order acceptance, NACK per gap, coalesced ACKs, and
//! DCQCN's notification point (module documentation in `mod.rs`).

use super::RoceParams;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{Ctx, SinkStats, Transport};

/// Receiver of a RoCE, DCQCN or TIMELY flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RoceSink {
    flow: u64,
    /// This host (the data's destination) and the sender.
    me: u32,
    peer: u32,
    path: u32,
    prio: u8,
    proto: Protocol,
    /// Next expected PSN.
    pub(super) expected: u64,
    ack_every: u32,
    since_ack: u32,
    /// The expected PSN last NACKed, and when.
    nacked: Option<(u64, u64)>,
    nack_interval: u64,
    cnp_interval: u64,
    last_cnp: Option<u64>,
    /// Echo mode (`roce_dctcp`): CE marks go back on ACKs and NACKs, not
    /// as CNPs.
    echo: bool,
    /// Echo mode: a CE-marked packet arrived since the last ACK or NACK.
    ce_pending: bool,
    /// CNPs sent.
    pub cnps: u64,
    /// NACKs sent.
    pub nacks: u64,
    /// Counters.
    pub stats: SinkStats,
}

impl RoceSink {
    /// The receiver for the flow of `first`, at most one CNP per `cnp_interval` ps.
    pub fn new(first: &Packet, p: &RoceParams, cnp_interval: u64) -> Self {
        RoceSink {
            flow: first.flow,
            me: first.dst,
            peer: first.src,
            path: first.path,
            prio: first.prio,
            proto: first.proto,
            expected: 0,
            ack_every: p.ack_every,
            since_ack: 0,
            nacked: None,
            nack_interval: p.nack_interval.ps,
            cnp_interval,
            last_cnp: None,
            echo: false,
            ce_pending: false,
            cnps: 0,
            nacks: 0,
            stats: SinkStats::default(),
        }
    }

    /// The same receiver in echo mode (`roce_dctcp`, `window.rs`): the next
    /// ACK or NACK after a CE-marked packet carries `ECE` (one per packet
    /// with an ACK per packet, as DCTCP, RFC 8257 §3.2), and no CNPs.
    pub fn with_ecn_echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// The flags of the next ACK or NACK: `ECE` in echo mode after a mark.
    fn echo_flags(&mut self) -> u8 {
        match std::mem::take(&mut self.ce_pending) {
            true => flags::ECE,
            false => 0,
        }
    }

    /// DCQCN's notification point: a CNP for a CE-marked `pkt`, at most one
    /// per interval (echo mode: the mark waits for the next ACK or NACK).
    pub(super) fn notify(&mut self, pkt: &Packet, cx: &mut Ctx<'_>) {
        if self.echo {
            self.ce_pending |= pkt.has(flags::ECN_CE);
            return;
        }
        let now = cx.now;
        if pkt.has(flags::ECN_CE) && self.last_cnp.is_none_or(|t| now >= t + self.cnp_interval) {
            self.last_cnp = Some(now);
            self.cnps += 1;
            cx.out.push(self.control(PacketKind::Ack, pkt, flags::ECE));
        }
    }

    /// A 64-byte control packet answering `data`.
    pub(super) fn control(&self, kind: PacketKind, data: &Packet, fl: u8) -> Packet {
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.peer,
            seq: data.seq,
            ack: self.expected,
            size: HEADER_BYTES,
            payload: 0,
            path: self.path,
            sent_ps: data.sent_ps,
            kind,
            proto: self.proto,
            flags: fl,
            prio: self.prio,
            rank: 0,
        }
    }
}

impl Transport for RoceSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        if pkt.kind != PacketKind::Data {
            return;
        }
        let now = cx.now;
        self.notify(&pkt, cx);
        if pkt.seq == self.expected {
            self.expected += 1;
            self.stats.bytes_received += pkt.payload as u64;
            self.since_ack += 1;
            let last = pkt.has(flags::LAST);
            if last && self.stats.finish_ps.is_none() {
                self.stats.finish_ps = Some(now);
            }
            if self.ack_every > 0 && (self.since_ack >= self.ack_every || last) {
                self.since_ack = 0;
                let fl = self.echo_flags();
                cx.out.push(self.control(PacketKind::Ack, &pkt, fl));
            }
        } else if pkt.seq > self.expected {
            // Out of order: discarded; one NACK per gap (and per interval).
            let again = match self.nacked {
                Some((e, at)) => e != self.expected || now >= at + self.nack_interval,
                None => true,
            };
            if again {
                self.nacked = Some((self.expected, now));
                self.nacks += 1;
                let fl = self.echo_flags();
                cx.out.push(self.control(PacketKind::Nack, &pkt, fl));
            }
        } else if self.ack_every > 0 {
            // A duplicate: the ACK that covered it may have been lost.
            let fl = self.echo_flags();
            cx.out.push(self.control(PacketKind::Ack, &pkt, fl));
        }
    }

    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}
