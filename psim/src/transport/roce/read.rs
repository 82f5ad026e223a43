//! RDMA Reads over the RoCE family (`[[traffic]] verb = "read"`): the flow's
//! source is the *requester*, which asks its destination, the *responder*,
//! for `size` bytes; the data then flows from the responder to the
//! requester ([TH] §4.4.1–4.4.2). Writes (the default) send from the source.
//!
//! - **The request** is one 64-byte control packet (`Pull`: the receiver
//!   asks for data) from the requester at the flow's start, carrying the
//!   first PSN wanted (`seq`) and the read's length in bytes (`ack`). The
//!   responder's endpoint is built when it arrives, and starts sending at
//!   once: the flow's completion time includes the request's trip.
//! - **The responder** is the protocol's own sender (RoCE's go-back-N, or
//!   IRN's selective repeat, with DCQCN or a window as the protocol says)
//!   sending towards the requester, and the **requester** receives with the
//!   protocol's own receiver. DCQCN's reaction point is therefore the
//!   responder, and the requester's CNPs go to it, as on a NIC.
//! - **RoCE (go-back-N; `roce`, `dcqcn`):** Read responses are not
//!   acknowledged ([TH] §4.4.2: "the requester ... does not explicitly
//!   acknowledge the Read response packets"), so the responder keeps no
//!   timer. The requester asks again from its next expected PSN when a
//!   response arrives out of order (the receiver's NACK, once per gap and
//!   per `nack_interval_us`, is that new request) and when nothing arrived in
//!   order for `[protocol.roce] rto_us` (when `timeout` is on and `pfc` off:
//!   the requester's transport timer; a lost request is recovered the same
//!   way). The thesis's all-Reads RoCE+PFC baseline ([TH] §4.4.2), run until
//!   now as writes with `ack_every = 0`, is this without the request.
//! - **IRN (`irn`, `irn_dcqcn`, `irn_aimd`, `irn_dctcp`):** the requester
//!   sends *read (N)ACKs*, one per Read response packet, exactly as IRN's
//!   receiver acknowledges writes, and the responder times out and recovers
//!   as IRN's sender does ([TH] §4.4.2: "IRN also requires the Read
//!   responder ... to implement timeouts"). Read responses carry no extra
//!   header ([TH] §4.5.3: "Read responses do not require additional
//!   headers"), so `[protocol.irn] header_overhead_bytes` does not apply to
//!   them. Until the first response arrives the requester re-sends a lost
//!   request after `[protocol.irn] rto_high_us` (when `timeout` is on); the
//!   thesis does not say how IRN recovers a lost request.
//! - **TIMELY (`timely`, `irn_timely`):** the requester runs TIMELY and
//!   paces its read *requests* ([TH] §3.4: "TIMELY cannot directly pace the
//!   data segments, but instead achieves the same result by pacing the read
//!   requests ... the rate computation engine takes into account the data
//!   segment bytes read"). Each request asks for one segment
//!   (`[protocol.timely] segment_bytes`), the next leaves the segment's wire
//!   bytes at TIMELY's rate later, and at most `[protocol.roce]
//!   window_packets` PSNs are asked for and not yet received (0: no limit;
//!   a segment larger than the window goes alone). The requester's timer
//!   runs only while something asked for is missing; when it fires it asks
//!   again from the PSN it expects (flagged `RETX`: a go-back-N responder
//!   goes back only for such a request) and once more for the last segment
//!   asked (a lost request).
//!   The responder sends what was asked at line rate and nothing more. A
//!   segment's RTT sample is its last packet's arrival less its request's
//!   departure, less the segment's serialisation at the NIC's rate (the
//!   data's burst, as [TH] §3.2.1 takes it off a write's completion), plus
//!   `rtt_noise_us`. Loss recovery is go-back-N's (`timely`) or IRN's
//!   (`irn_timely`), as above. The thesis gives no more detail; the
//!   request's size and the responder's line-rate burst are psim's reading.
//! - **Not supported** (refused at load): `roce_aimd` and `roce_dctcp`, whose
//!   windows open on ACKs that Read responses do not get; and `app` messages
//!   (one read moves the whole flow).
//!
//! The flow record keeps `src` as the requester and `dst` as the
//! responder; its sender-side counters (`bytes_sent`, `packets_sent`,
//! `retransmissions`, `rtt_*`, `sender_finish_ps`) are the responder's, and
//! `timeouts` and the RTT samples add the requester's (TIMELY's). `ideal_fct_ps` is the request's one-way
//! time plus the data's ideal time from `dst` to `src`.
//!
//! IRN's WQE sequence numbers, 2-bitmaps and premature CQEs ([TH] §4.4.3)
//! keep out-of-order placement correct on a real NIC; they change no timing
//! (IRN's receiver here already accepts out-of-order packets), so they are
//! not modelled.

use std::collections::VecDeque;

use super::{IrnSource, RoceSource};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::cc::{CongestionControl, Controller, Timely};
use crate::transport::{
    Ctx, Endpoint, FlowInfo, ProtocolParams, SinkStats, SourceStats, Transport,
};
use crate::units::tx_time_ps;

/// Whether `pkt` asks for a read: the only `Pull` the RoCE family sends.
pub fn is_read_request(pkt: &Packet) -> bool {
    pkt.kind == PacketKind::Pull && pkt.proto.reads()
}

/// Whether the protocol recovers with go-back-N (its Read responses are
/// not acknowledged); the others are IRN's.
fn go_back_n(proto: Protocol) -> bool {
    matches!(proto, Protocol::Roce | Protocol::Dcqcn | Protocol::Timely)
}

/// Whether the requester paces its read requests, one per segment (TIMELY).
fn paced(proto: Protocol) -> bool {
    matches!(proto, Protocol::Timely | Protocol::IrnTimely)
}

/// PSNs per TIMELY segment.
fn segment_psns(p: &ProtocolParams) -> u64 {
    p.timely
        .segment_bytes
        .div_ceil(p.roce.mtu_bytes as u64)
        .max(1)
}

/// The requester of a read of `flow` under `proto`.
pub fn read_requester(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
    Endpoint::ReadRequester(Box::new(ReadRequester::new(proto, flow, p)))
}

/// The responder for the read request `first`, on a host whose NIC runs at
/// `nic_bps`.
pub fn read_responder(first: &Packet, p: &ProtocolParams, nic_bps: u64) -> Endpoint {
    Endpoint::ReadResponder(Box::new(ReadResponder::new(first, p, nic_bps)))
}

/// The data's flow as the responder to the read request `first` sends it
/// (its NIC at `nic_bps`): from the responder to the requester.
pub fn responder_flow(first: &Packet, nic_bps: u64) -> FlowInfo {
    FlowInfo {
        id: first.flow,
        src: first.dst,
        dst: first.src,
        size: (first.ack != u64::MAX).then_some(first.ack),
        start_ps: first.sent_ps,
        prio: first.prio,
        num_paths: 1,
        ecmp_path: first.path,
        nic_bps,
        ideal_fct_ps: None,
        app: None,
        read: false,
    }
}

/// The requester: sends the read request, receives the data with the
/// protocol's receiver, and asks again after a timeout.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ReadRequester {
    /// The request's fields: flow, this host, the responder, path, priority.
    flow: u64,
    me: u32,
    peer: u32,
    path: u32,
    prio: u8,
    proto: Protocol,
    /// Bytes to read (`None`: endless).
    size: Option<u64>,
    /// The protocol's receiver of the data.
    inner: Endpoint,
    /// The requester's timeout, ps (None: none).
    rto: Option<u64>,
    /// When it fires next.
    rto_at: Option<u64>,
    /// IRN: the timer guards the request only, until a response arrives.
    request_only: bool,
    /// TIMELY: the requests paced one segment at a time.
    pacer: Option<Box<RequestPacer>>,
    /// The requester's own counters: `timeouts` only.
    stats: SourceStats,
}

impl ReadRequester {
    /// The requester of `flow`'s read under `proto`.
    pub fn new(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Self {
        let gbn = go_back_n(proto);
        // The receiver is built as for a write's first data packet from the
        // responder; go-back-N sends no ACKs for Read responses.
        let mut rp = p.clone();
        if gbn {
            rp.roce.ack_every = 0;
        }
        let first = Packet {
            flow: flow.id,
            src: flow.dst,
            dst: flow.src,
            seq: 0,
            ack: 0,
            size: HEADER_BYTES,
            payload: 0,
            path: flow.ecmp_path,
            sent_ps: flow.start_ps,
            kind: PacketKind::Data,
            proto,
            flags: 0,
            prio: flow.prio,
            rank: 0,
        };
        let rto = match gbn {
            true => p.roce.rto_ps(),
            false => p.irn.timeout.then_some(p.irn.rto_high.ps),
        };
        ReadRequester {
            flow: flow.id,
            me: flow.src,
            peer: flow.dst,
            path: flow.ecmp_path,
            prio: flow.prio,
            proto,
            size: flow.size,
            inner: Protocol::sink(&first, &rp),
            rto,
            rto_at: None,
            request_only: !gbn && !paced(proto),
            pacer: paced(proto).then(|| Box::new(RequestPacer::new(flow, p))),
            stats: SourceStats::default(),
        }
    }

    /// Next expected PSN of the data's receiver.
    fn expected(&self) -> u64 {
        match &self.inner {
            Endpoint::RoceSink(s) => s.expected,
            Endpoint::IrnSink(s) => s.expected(),
            _ => 0,
        }
    }

    /// Whether every byte arrived.
    fn done(&self) -> bool {
        self.inner
            .sink_stats()
            .is_some_and(|s| s.finish_ps.is_some())
    }

    /// TIMELY: asks for the next segment when its time has come and the
    /// window allows it (the first one at once).
    fn pace(&mut self, cx: &mut Ctx<'_>) {
        let expected = self.expected();
        let Some(p) = self.pacer.as_mut() else {
            return;
        };
        if p.next_at > cx.now || !p.may_ask(expected) {
            return;
        }
        let from = p.asked;
        p.ask(cx.now);
        self.request(from, false, cx);
    }

    /// TIMELY: RTT samples for the segments that completed in order.
    fn sample(&mut self, cx: &mut Ctx<'_>) {
        let expected = self.expected();
        if let Some(p) = self.pacer.as_mut() {
            while let Some(rtt) = p.completed(expected, cx) {
                self.stats.rtt(rtt);
            }
        }
    }

    /// Asks for the data from PSN `from` on, and arms the timer; `again`
    /// (flagged `RETX`): asks again after a timeout, from the PSN it
    /// expects, so a go-back-N responder goes back to it.
    fn request(&mut self, from: u64, again: bool, cx: &mut Ctx<'_>) {
        cx.out.push(Packet {
            flow: self.flow,
            src: self.me,
            dst: self.peer,
            seq: from,
            ack: self.size.unwrap_or(u64::MAX),
            size: HEADER_BYTES,
            payload: 0,
            path: self.path,
            sent_ps: cx.now,
            kind: PacketKind::Pull,
            proto: self.proto,
            flags: if again { flags::RETX } else { 0 },
            prio: self.prio,
            rank: 0,
        });
        self.rto_at = self.rto.map(|r| cx.now + r);
    }
}

impl Transport for ReadRequester {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        match self.pacer.is_some() {
            true => self.pace(cx),
            false => self.request(0, false, cx),
        }
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        let data = pkt.kind == PacketKind::Data;
        let before = self.expected();
        self.inner.on_packet(pkt, cx);
        if data && self.pacer.is_some() {
            self.sample(cx);
            self.pace(cx);
        }
        if !data || self.rto_at.is_none() {
            return;
        }
        // TIMELY: nothing asked for is missing, so nothing to time out on
        // until the next request.
        let idle = self
            .pacer
            .as_ref()
            .is_some_and(|p| self.expected() >= p.asked);
        if self.done() || self.request_only || idle {
            // Done, or IRN's responder times out from here on.
            self.rto_at = None;
        } else if self.expected() > before {
            self.rto_at = self.rto.map(|r| cx.now + r);
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        if self.inner.poll_at().is_some_and(|t| t <= now) {
            self.inner.on_timer(cx);
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.stats.timeouts += 1;
            let from = self.expected();
            self.request(from, true, cx);
            // TIMELY: a later request may have been lost too; asking once
            // more for the last segment asked for grants everything before it.
            let last = self.pacer.as_ref().map_or(0, |p| p.last_start());
            if last > from {
                self.request(last, false, cx);
            }
        }
        self.pace(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        let expected = self.expected();
        let ask = self
            .pacer
            .as_ref()
            .filter(|p| p.may_ask(expected))
            .map(|p| p.next_at);
        [self.inner.poll_at(), self.rto_at, ask]
            .into_iter()
            .flatten()
            .min()
    }

    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }

    fn sink_stats(&self) -> Option<&SinkStats> {
        self.inner.sink_stats()
    }
}

/// The responder: the protocol's sender, started by the first request.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ReadResponder {
    /// The protocol's sender of the data.
    inner: Endpoint,
    /// The first request has started it.
    started: bool,
    /// Go-back-N: a later request goes back to the PSN it asks for.
    gbn: bool,
    /// TIMELY: PSNs each request asks for (None: the whole read).
    segment: Option<u64>,
}

impl ReadResponder {
    /// The responder to the read request `first`, its NIC at `nic_bps`.
    pub fn new(first: &Packet, p: &ProtocolParams, nic_bps: u64) -> Self {
        let gbn = go_back_n(first.proto);
        let mut rp = p.clone();
        // Go-back-N: no ACKs come back, so the requester keeps the timer;
        // nor can a window on unacknowledged PSNs slide, and TIMELY's
        // requester keeps the window itself.
        rp.roce.timeout = !gbn && rp.roce.timeout;
        if gbn || paced(first.proto) {
            rp.roce.window_packets = 0;
        }
        // Read responses carry no RETH ([TH] §4.5.3).
        rp.irn.header_overhead_bytes = 0;
        let info = responder_flow(first, nic_bps);
        // TIMELY's responder sends what it was asked for, at line rate: the
        // requester runs the controller.
        let plain =
            |proto| RoceSource::new(&info, proto, &rp.roce, None, false, None).granted_only();
        let inner = match first.proto {
            Protocol::Timely => Endpoint::RoceSource(Box::new(plain(Protocol::Timely))),
            Protocol::IrnTimely => {
                let src = IrnSource::new(plain(Protocol::IrnTimely), &rp.irn);
                Endpoint::IrnSource(Box::new(src))
            }
            proto => proto.source(&info, &rp),
        };
        ReadResponder {
            inner,
            started: false,
            gbn,
            segment: paced(first.proto).then(|| segment_psns(p)),
        }
    }

    /// The PSN the sender sends next (go-back-N senders only).
    fn next_psn(&self) -> Option<u64> {
        match &self.inner {
            Endpoint::RoceSource(s) => Some(s.next_psn),
            _ => None,
        }
    }

    /// TIMELY: the request from `from` asks for the segment that holds it
    /// (a request asked again may start inside one).
    fn grant(&mut self, from: u64) {
        let Some(seg) = self.segment else {
            return;
        };
        let end = (from / seg + 1) * seg;
        match &mut self.inner {
            Endpoint::RoceSource(s) => s.grant(end),
            Endpoint::IrnSource(s) => s.grant(end),
            _ => {}
        }
    }
}

impl Transport for ReadResponder {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Pull {
            self.inner.on_packet(pkt, cx);
            return;
        }
        let from = pkt.seq;
        if !std::mem::replace(&mut self.started, true) {
            self.grant(from);
            self.inner.on_start(cx);
            return;
        }
        // A request asked again after the requester's timeout (`RETX`), for
        // PSNs already sent: back to it, as on a NACK (go-back-N). IRN's
        // responder recovers on its own timeouts, so there it only grants.
        let again = pkt.has(flags::RETX) && self.next_psn().is_some_and(|n| from < n);
        if self.gbn && again {
            let nack = Packet {
                kind: PacketKind::Nack,
                ack: from,
                ..pkt
            };
            self.inner.on_packet(nack, cx);
        }
        if self.segment.is_some() {
            self.grant(from);
            // Send what the grant let out (a timer input that finds nothing
            // due only sends).
            self.inner.on_timer(cx);
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        self.inner.on_timer(cx);
    }

    fn on_nic_sent(&mut self, cx: &mut Ctx<'_>) {
        self.inner.on_nic_sent(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        self.inner.poll_at()
    }

    fn source_stats(&self) -> Option<&SourceStats> {
        self.inner.source_stats()
    }
}

/// TIMELY's requester ([TH] §3.4): the rate computation, and one read
/// request per segment paced at the rate.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct RequestPacer {
    /// TIMELY's rate computation (`cc/timely.rs`).
    cc: Controller,
    /// PSNs per segment.
    seg: u64,
    /// PSNs in the read (None: endless).
    total: Option<u64>,
    /// Payload bytes per PSN, and the read's bytes.
    mtu: u64,
    size: Option<u64>,
    /// PSNs asked for so far.
    asked: u64,
    /// When the next request may leave.
    next_at: u64,
    /// Most PSNs asked for and not received (0: no limit).
    window: u64,
    /// The requests whose segments are not complete: (end PSN, request's
    /// departure, the segment's wire bytes), in order.
    pending: VecDeque<(u64, u64, u64)>,
    /// The NIC's rate, b/s.
    nic_bps: u64,
    /// The RTT noise's bound, ps.
    noise_ps: u64,
}

impl RequestPacer {
    fn new(flow: &FlowInfo, p: &ProtocolParams) -> Self {
        let mtu = p.roce.mtu_bytes as u64;
        RequestPacer {
            cc: Controller::Timely(Timely::new(&p.timely, flow.nic_bps)),
            seg: segment_psns(p),
            total: flow.size.map(|s| s.div_ceil(mtu).max(1)),
            mtu,
            size: flow.size,
            asked: 0,
            next_at: 0,
            window: p.roce.window_packets as u64,
            pending: VecDeque::new(),
            nic_bps: flow.nic_bps.max(1),
            noise_ps: p.timely.rtt_noise.ps,
        }
    }

    /// The end of the segment that starts at `from`.
    fn end_of(&self, from: u64) -> u64 {
        let end = from + self.seg;
        self.total.map_or(end, |t| end.min(t))
    }

    /// The first PSN of the last segment asked for (0 before any).
    fn last_start(&self) -> u64 {
        self.asked.saturating_sub(1) / self.seg * self.seg
    }

    /// Whether another segment may be asked for, with the PSNs below
    /// `expected` received: one is left, and the window has room for it.
    fn may_ask(&self, expected: u64) -> bool {
        let left = self.total.is_none_or(|t| self.asked < t);
        let outstanding = self.end_of(self.asked) - expected.min(self.asked);
        // A segment larger than the window goes alone.
        let room = self.window == 0 || outstanding <= self.window || expected >= self.asked;
        left && room
    }

    /// Wire bytes of PSNs `from..end`.
    fn wire(&self, from: u64, end: u64) -> u64 {
        let payload = match self.size {
            Some(s) => (end * self.mtu).min(s) - (from * self.mtu).min(s),
            None => (end - from) * self.mtu,
        };
        payload + (end - from) * HEADER_BYTES as u64
    }

    /// Asks for the next segment at `now`; the one after it may leave the
    /// segment's wire bytes at TIMELY's rate later.
    fn ask(&mut self, now: u64) {
        let (from, end) = (self.asked, self.end_of(self.asked));
        let wire = self.wire(from, end);
        self.cc.on_timer(now);
        let rate = self.cc.pacing_bps().unwrap_or(self.nic_bps);
        self.next_at = now + tx_time_ps(wire, rate.clamp(1, self.nic_bps));
        self.asked = end;
        self.pending.push_back((end, now, wire));
    }

    /// With the PSNs below `expected` received, the RTT sample of the oldest
    /// segment if it completed, fed to the rate computation.
    fn completed(&mut self, expected: u64, cx: &mut Ctx<'_>) -> Option<u64> {
        let &(end, sent, wire) = self.pending.front()?;
        if expected < end {
            return None;
        }
        self.pending.pop_front();
        let now = cx.now;
        let busy = tx_time_ps(wire, self.nic_bps);
        let mut rtt = (now - sent.min(now)).saturating_sub(busy);
        if self.noise_ps > 0 {
            rtt += rand::RngExt::random_range(cx.rng, 0..=self.noise_ps);
        }
        self.cc.on_timer(now);
        self.cc.on_rtt_sample(rtt, now);
        Some(rtt)
    }
}
