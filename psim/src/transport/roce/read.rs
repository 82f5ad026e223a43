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
//! - **Not supported** (refused at load): `timely` and `irn_timely`, whose
//!   requester paces its read requests by the rate and counts the bytes each
//!   request reads ([TH] §3.4), which psim does not model yet; `roce_aimd`
//!   and `roce_dctcp`, whose windows open on ACKs that Read responses do not
//!   get; and `app` messages (one read moves the whole flow).
//!
//! The flow record keeps `src` as the requester and `dst` as the
//! responder; its sender-side counters (`bytes_sent`, `packets_sent`,
//! `retransmissions`, `rtt_*`, `sender_finish_ps`) are the responder's, and
//! `timeouts` adds the requester's. `ideal_fct_ps` is the request's one-way
//! time plus the data's ideal time from `dst` to `src`.
//!
//! IRN's WQE sequence numbers, 2-bitmaps and premature CQEs ([TH] §4.4.3)
//! keep out-of-order placement correct on a real NIC; they change no timing
//! (IRN's receiver here already accepts out-of-order packets), so they are
//! not modelled.

use crate::packet::{Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::{
    Ctx, Endpoint, FlowInfo, ProtocolParams, SinkStats, SourceStats, Transport,
};

/// Whether `pkt` asks for a read: the only `Pull` the RoCE family sends.
pub fn is_read_request(pkt: &Packet) -> bool {
    pkt.kind == PacketKind::Pull && pkt.proto.reads()
}

/// Whether the protocol recovers with go-back-N (its Read responses are
/// not acknowledged); the others are IRN's.
fn go_back_n(proto: Protocol) -> bool {
    matches!(proto, Protocol::Roce | Protocol::Dcqcn)
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
    /// Requests sent (the first included).
    pub requests: u64,
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
            request_only: !gbn,
            requests: 0,
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

    /// Asks for the data from PSN `from` on, and arms the timer.
    fn request(&mut self, from: u64, cx: &mut Ctx<'_>) {
        self.requests += 1;
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
            flags: 0,
            prio: self.prio,
            rank: 0,
        });
        self.rto_at = self.rto.map(|r| cx.now + r);
    }
}

impl Transport for ReadRequester {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.request(0, cx);
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        let data = pkt.kind == PacketKind::Data;
        let before = self.expected();
        self.inner.on_packet(pkt, cx);
        if !data || self.rto_at.is_none() {
            return;
        }
        if self.done() || self.request_only {
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
            self.request(from, cx);
        }
    }

    fn poll_at(&self) -> Option<u64> {
        [self.inner.poll_at(), self.rto_at]
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
}

impl ReadResponder {
    /// The responder to the read request `first`, its NIC at `nic_bps`.
    pub fn new(first: &Packet, p: &ProtocolParams, nic_bps: u64) -> Self {
        let gbn = go_back_n(first.proto);
        let mut rp = p.clone();
        // Go-back-N: no ACKs come back, so the requester keeps the timer.
        rp.roce.timeout = !gbn && rp.roce.timeout;
        // Read responses carry no RETH ([TH] §4.5.3).
        rp.irn.header_overhead_bytes = 0;
        let info = FlowInfo {
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
        };
        ReadResponder {
            inner: first.proto.source(&info, &rp),
            started: false,
            gbn,
        }
    }
}

impl Transport for ReadResponder {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Pull {
            self.inner.on_packet(pkt, cx);
        } else if !std::mem::replace(&mut self.started, true) {
            self.inner.on_start(cx);
        } else if self.gbn {
            // A new request from PSN `seq`: go back to it, as on a NACK.
            let nack = Packet {
                kind: PacketKind::Nack,
                ack: pkt.seq,
                ..pkt
            };
            self.inner.on_packet(nack, cx);
        }
        // IRN: the responder's own timeouts recover; a repeated request
        // changes nothing.
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
