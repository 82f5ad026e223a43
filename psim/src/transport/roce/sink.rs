//! The RoCE receiver: in-order acceptance, NACK per gap, coalesced ACKs, and
//! DCQCN's notification point (module documentation in `mod.rs`).

use std::collections::VecDeque;

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
    /// When the last CNP was decided (it leaves `np_delay` later).
    last_cnp: Option<u64>,
    /// The notification point's options (`cnp_defer`, `np_delay_us`), only
    /// when one is set: the default receiver stays as small as it was.
    np: Option<Box<NpOptions>>,
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

/// The notification point's options, boxed in [`RoceSink`] only when set.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct NpOptions {
    /// `cnp_defer`: a mark within the interval waits for its end.
    defer: bool,
    /// `cnp_defer`: the mark waiting for the interval's end, as the
    /// (PSN, send time) its CNP echoes.
    deferred: Option<(u64, u64)>,
    /// `np_delay_us`, ps.
    np_delay: u64,
    /// CNPs decided and waiting out `np_delay`: (departure time, PSN, send
    /// time), in order (one per interval at most, so a handful).
    delayed: VecDeque<(u64, u64, u64)>,
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
            np: (p.cnp_defer || p.np_delay.ps > 0).then(|| {
                Box::new(NpOptions {
                    defer: p.cnp_defer,
                    deferred: None,
                    np_delay: p.np_delay.ps,
                    delayed: VecDeque::new(),
                })
            }),
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
    /// With `cnp_defer` a mark within the interval gets one CNP when the
    /// interval ends; with `np_delay_us` every CNP leaves that much later.
    pub(super) fn notify(&mut self, pkt: &Packet, cx: &mut Ctx<'_>) {
        if self.echo {
            self.ce_pending |= pkt.has(flags::ECN_CE);
            return;
        }
        if !pkt.has(flags::ECN_CE) {
            return;
        }
        let now = cx.now;
        let mark = (pkt.seq, pkt.sent_ps);
        if self.last_cnp.is_none_or(|t| now >= t + self.cnp_interval) {
            self.send_cnp(now, mark, cx);
        } else if let Some(np) = self.np.as_mut().filter(|np| np.defer) {
            np.deferred.get_or_insert(mark);
        }
    }

    /// Sends the CNP for `mark` (PSN, send time), decided at `at`, now or
    /// after the NIC's delay.
    fn send_cnp(&mut self, at: u64, mark: (u64, u64), cx: &mut Ctx<'_>) {
        self.last_cnp = Some(at);
        match self.np.as_mut().filter(|np| np.np_delay > 0) {
            Some(np) => np.delayed.push_back((at + np.np_delay, mark.0, mark.1)),
            None => self.emit_cnp(mark, cx),
        }
    }

    /// The CNP answering the data packet of `mark` (PSN, send time).
    fn emit_cnp(&mut self, (seq, sent_ps): (u64, u64), cx: &mut Ctx<'_>) {
        self.cnps += 1;
        let cnp = self.control_for(PacketKind::Ack, seq, sent_ps, flags::ECE);
        cx.out.push(cnp);
    }

    /// When the deferred CNP is due: the end of the current interval.
    fn deferred_at(&self) -> Option<u64> {
        let t = self.last_cnp?;
        self.np.as_ref()?.deferred.map(|_| t + self.cnp_interval)
    }

    /// The notification point's timer: a deferred CNP whose interval has
    /// ended, and delayed CNPs whose time has come.
    pub(super) fn notify_timer(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        if let Some(at) = self.deferred_at().filter(|&at| at <= now) {
            let np = self.np.as_mut().expect("deferred_at says one waits");
            let mark = np.deferred.take().expect("deferred_at says one waits");
            self.send_cnp(at, mark, cx);
        }
        while let Some(np) = self.np.as_mut() {
            match np.delayed.front() {
                Some(&(at, seq, sent_ps)) if at <= now => {
                    np.delayed.pop_front();
                    self.emit_cnp((seq, sent_ps), cx);
                }
                _ => break,
            }
        }
    }

    /// When the notification point next needs [`Self::notify_timer`]: only
    /// while a CNP waits, so an idle flow holds no timer.
    pub(super) fn notify_at(&self) -> Option<u64> {
        let np = self.np.as_ref()?;
        let delayed = np.delayed.front().map(|&(at, ..)| at);
        match (self.deferred_at(), delayed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A 64-byte control packet answering `data`.
    pub(super) fn control(&self, kind: PacketKind, data: &Packet, fl: u8) -> Packet {
        self.control_for(kind, data.seq, data.sent_ps, fl)
    }

    /// A 64-byte control packet answering the data packet of PSN `seq`
    /// sent at `sent_ps`.
    fn control_for(&self, kind: PacketKind, seq: u64, sent_ps: u64, fl: u8) -> Packet {
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.peer,
            seq,
            ack: self.expected,
            size: HEADER_BYTES,
            payload: 0,
            path: self.path,
            sent_ps,
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

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.notify_timer(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        self.notify_at()
    }

    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}
