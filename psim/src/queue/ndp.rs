//! NDP switch output port: packet trimming, a priority header queue,
//! weighted round robin and return-to-sender ([P] §3.1, §3.2.4, §4; [O];
//! spec `ndp.md` §1.1 and A3–A7).
//!
//! # Structure
//!
//! Two FIFOs per port:
//! * the **data queue** (low priority) holds packets with payload
//!   ([`PacketKind::Data`]);
//! * the **header queue** (high priority) holds every payload-less packet:
//!   trimmed headers, ACKs, NACKs, PULLs, bounced headers (A6, [P] §3.1
//!   footnote 1, P4 "Directprio" §4).
//!
//! # Enqueue
//!
//! 1. A payload-less packet goes to the header queue (step 3).
//! 2. A data packet is queued if the data queue has room. Otherwise (the
//!    queue is "full" for this packet) a fair coin is flipped with the port's
//!    random stream — only then, so the draw count is deterministic (A5):
//!    * heads: trim the **arriving** packet;
//!    * tails: trim the data packet at the **tail** of the data queue (the most
//!      recently enqueued one, A5) and queue the arrival in its place.
//!
//!    The tail is trimmed only if (a) the data queue is non-empty, (b) taking
//!    the tail out makes room for the arrival (always true with a packet cap;
//!    with a byte cap the arrival may be larger than the tail), and (c) the
//!    header queue has room for the tail's header. Otherwise the arrival is
//!    trimmed. Condition (c) keeps one outcome per arrival: since every header
//!    is [`HEADER_BYTES`] long, the header queue overflows by the same header
//!    either way, and it is the arrival's header that is bounced or dropped.
//!    With `trim_arrival_only` (the NetFPGA prototype, [P] §4) no coin is
//!    flipped and the arrival is always trimmed.
//!
//!    Trimming sets `kind = Header`, `payload = 0`, `size = HEADER_BYTES` and
//!    keeps everything else (flow, seq, path, flags, ...). The header goes to
//!    the header queue (step 3). Every trim counts in [`NdpQueue::trims`].
//! 3. Header queue: queued if it has room. If not:
//!    * a `Header` not yet bounced, with return-to-sender on: source and
//!      destination are swapped, [`flags::BOUNCED`] is set, and the packet is
//!      reported `Bounced` for the switch to route back ([P] §3.2.4). A
//!      header is bounced at most once (A7);
//!    * anything else (an already-bounced header, an ACK/NACK/PULL, or any
//!      header with return-to-sender off, as on NetFPGA [P] §4) is dropped:
//!      reported `Dropped`.
//!
//! Reports (see [`super::Outcome`]): `Queued` (the arrival queued as is),
//! `Trimmed` (the arrival, before the cut, whose header was queued), or a
//! tail trim: `TrimmedQueued` naming the tail (before the cut), then `Queued`
//! naming the arrival; `Bounced`, `Dropped`. When the arrival is trimmed and
//! its header then bounced or dropped, only `Bounced`/`Dropped` is reported
//! (the port saw one outcome for it), but the trim is still counted in
//! [`NdpQueue::trims`].
//!
//! # Dequeue: weighted round robin (A4), strict priority or byte WFQ
//!
//! `sched` picks how the two queues share the port when both hold packets;
//! a lone backlogged queue is always served (work conserving).
//! * `"wrr"` (default): the paper's packet round robin, below.
//! * `"strict"`: the header queue always first, as the Tofino program's
//!   "low prio queue" for data implies ([T] `switch.p4`, spec
//!   `trimming-pfabric.md` §5.2) and as htsim's 100000:1 practically is.
//! * `"byte_wfq"`: byte-based weighted fair queueing, which [TRIM] §2
//!   recommends over strict priority: early trimmed headers still jump the
//!   data queue, yet data keeps a byte share however many headers arrive, so
//!   trimming cannot livelock the port. Headers get `header_share` of the
//!   bytes while both queues are backlogged; by default the paper's 10:1 in
//!   bytes, `wrr_headers × 64 / (wrr_headers × 64 + MTU + 64)` (6.6% at
//!   9 KB: the weights are not given in [TRIM], which defers to the NDP
//!   paper, spec §5.2). The pick is by finish tag over one contended
//!   period: with `S_h`, `S_d` the bytes each queue has sent since both
//!   became backlogged, the header goes first iff
//!   `(S_h + size_h) / w_h <= (S_d + size_d) / w_d` (integer arithmetic,
//!   ties to the header). A queue that empties ends the period and both
//!   counts restart at 0: an idle queue banks no credit, as in GPS.
//!
//! The WRR:
//!
//! Packets, not bytes, are counted. A cycle position `wrr_pos` in
//! `0..=wrr_headers` (default 0..=10) is kept per port:
//! * both queues non-empty (a contended decision): if `wrr_pos < wrr_headers`
//!   a header is sent, else a data packet; then `wrr_pos = (wrr_pos + 1) %
//!   (wrr_headers + 1)`. From a fresh port the contended sequence is exactly
//!   10 headers, 1 data packet, 10 headers, 1 data packet, ...
//! * only one queue non-empty: it is served and `wrr_pos` is left unchanged
//!   (work conserving; as htsim's `CompositeQueue` [C], whose cycle counter
//!   also advances only when both queues are backlogged).
//!
//! # Parameters (`[switch.queue] kind = "ndp"`)
//!
//! | parameter | default | source |
//! |---|---|---|
//! | data queue capacity `queue_bytes` (or `queue_packets`) | 8 MTU payloads in bytes ([`DEFAULT_DATA_PACKETS`] × MTU): 72,000 B at 9 KB, which holds 7 packets of 9,064 B on the wire, as [C]'s "8-packet" queues do; `queue_packets` counts whole packets instead | [P] §3.1.1, §6 ("8 packets"); [O]; A3 |
//! | header queue capacity `header_bytes` | same bytes as the data queue: [`NdpQueue::header_bytes_for`] at NDP's MTU payload (8 × 9000 B = 1125 × 64 B headers) | [P] §3.2.4; A3 |
//! | header size | [`HEADER_BYTES`] = 64 B | [P] §3.2.4 |
//! | WRR ratio `wrr_headers` : 1 | 10 : 1 ([`DEFAULT_WRR_HEADERS`]) | [P] §3.1; [O]; A4 |
//! | `sched` | `"wrr"`; also `"strict"`, `"byte_wfq"` | [P] §3.1; [T] `switch.p4`; [TRIM] §2 |
//! | `header_share` (`byte_wfq` only) | the paper's 10:1 in bytes at the MTU (6.6% at 9 KB) | [TRIM] §2 and spec `trimming-pfabric.md` §5.2 (weights from [P]) |
//! | coin probability | 0.5, flipped only when the data queue is full | [P] §3.1; A5 |
//! | `trim_arrival_only` | false (true = NetFPGA prototype) | [P] §4 |
//! | `return_to_sender` | true (false = NetFPGA: drop) | [P] §3.2.4, §4; A7 |
//! | `count_in_service` | false: only waiting packets count against a queue's cap | psim; htsim (`profile = "htsim"`): true, see below |
//! | `header_multiple` | 1.0: the header queue holds the data queue's byte budget; above 0, at most 1000 | A3; htsim: 2.0 ([C] `compositequeue.cpp`: headers fit while under `2 * _maxsize`) |
//!
//! # Queue accounting (issue 19, item 4)
//!
//! With `count_in_service` the packet on the wire still counts against the
//! cap of the queue it left (data or header) until its last bit is sent
//! (`now + size / rate`), as htsim's `CompositeQueue` does: it removes a
//! packet and its bytes only in `completeService` ([C]). A 35-packet data
//! queue then admits 34 waiting packets while one is in service. Only
//! admission changes; the reported queue lengths are of waiting packets.
//! `header_multiple` scales the default header budget (an explicit
//! `header_bytes` wins).

use super::{capacity, Capacity, Discipline, DisciplineConfig, Outcome, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::net::{PacketFifo, PacketPool};
use crate::packet::{flags, Packet, PacketKind, HEADER_BYTES};
use crate::units::tx_time_ps;
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// The paper's data-queue length, "8 packets" ([P] §3.1.1, §6.1, §6.2;
/// [O]); the default cap is this many MTU payloads in bytes (A3).
pub const DEFAULT_DATA_PACKETS: u32 = 8;
/// Default headers served per data packet when both queues are backlogged
/// ([P] §3.1; [O]).
pub const DEFAULT_WRR_HEADERS: u32 = 10;

/// How the header and data queues share the port when both hold packets.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderSched {
    /// `wrr_headers` headers per data packet ([P] §3.1, A4).
    #[default]
    Wrr,
    /// Headers always first ([T] `switch.p4`).
    Strict,
    /// Byte-based weighted fair queueing ([TRIM] §2).
    ByteWfq,
}

/// `kind = "ndp"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NdpConfig {
    /// Data queue capacity in packets (default: none, the byte cap applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Data queue capacity in bytes (default [`DEFAULT_DATA_PACKETS`] MTU
    /// payloads, A3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Header queue bytes (default: the data queue's byte budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_bytes: Option<u64>,
    /// Always trim the arrival instead of the fair coin (NetFPGA).
    pub trim_arrival_only: bool,
    /// Return overflowing headers to their sender.
    pub return_to_sender: bool,
    /// Headers served per data packet when both queues are backlogged.
    pub wrr_headers: u32,
    /// How the two queues share the port (default: the paper's WRR).
    pub sched: HeaderSched,
    /// `byte_wfq`: the headers' byte share while both queues are
    /// backlogged (default: `wrr_headers` headers per MTU packet, in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_share: Option<f64>,
    /// Count the packet in service against its queue's cap (htsim).
    pub count_in_service: bool,
    /// Default header budget as a multiple of the data queue's bytes.
    pub header_multiple: f64,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig {
            queue_packets: None,
            queue_bytes: None,
            header_bytes: None,
            trim_arrival_only: false,
            return_to_sender: true,
            wrr_headers: DEFAULT_WRR_HEADERS,
            sched: HeaderSched::Wrr,
            header_share: None,
            count_in_service: false,
            header_multiple: 1.0,
        }
    }
}

impl NdpConfig {
    /// The header queue's bytes: `header_bytes`, else `header_multiple`
    /// times the data queue's budget ([`NdpQueue::header_bytes_for`]).
    fn header_cap(&self, data: Capacity, mtu: u32) -> u64 {
        self.header_bytes.unwrap_or_else(|| {
            let base = NdpQueue::header_bytes_for(data, mtu);
            if self.header_multiple == 1.0 {
                base
            } else {
                ((base as f64 * self.header_multiple) as u64).max(HEADER_BYTES as u64)
            }
        })
    }

    /// The byte-WFQ weights (header, data): from `header_share` in parts
    /// of [`WFQ_SCALE`], else exactly the paper's `wrr_headers` headers per
    /// data packet of `mtu` payload, in bytes.
    fn wfq_weights(&self, mtu: u32) -> (u64, u64) {
        match self.header_share {
            Some(share) => {
                let w = ((share * WFQ_SCALE as f64).round() as u64).clamp(1, WFQ_SCALE - 1);
                (w, WFQ_SCALE - w)
            }
            None => (
                self.wrr_headers as u64 * HEADER_BYTES as u64,
                (mtu + HEADER_BYTES) as u64,
            ),
        }
    }

    /// The data queue's cap; by default A3's bytes, [`DEFAULT_DATA_PACKETS`]
    /// MTU payloads of `mtu` bytes (the headers are not budgeted, so the cap
    /// holds one packet fewer, as in [C]).
    fn data_cap(&self, key: &str, mtu: u32) -> Result<Capacity, ConfigError> {
        let default = Capacity::Bytes(DEFAULT_DATA_PACKETS as u64 * mtu as u64);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl NdpConfig {
    /// The data queue's capacity in bytes, packets counted at the MTU
    /// payload `mtu` plus the header (the Tofino meters' default depth).
    pub fn data_capacity_bytes(&self, mtu: u32) -> u64 {
        match self.data_cap("", mtu) {
            Ok(Capacity::Bytes(b)) => b,
            Ok(Capacity::Packets(n)) => n as u64 * (mtu + HEADER_BYTES) as u64,
            Err(_) => DEFAULT_DATA_PACKETS as u64 * mtu as u64,
        }
    }
}

impl DisciplineConfig for NdpConfig {
    type Queue = NdpQueue;
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        // The MTU only sizes the default, which is always valid.
        self.data_cap(key, 1)?;
        if self.header_bytes == Some(0) {
            return Err(bad(
                &format!("{key}.header_bytes"),
                0,
                "must be at least 64",
            ));
        }
        if self.wrr_headers == 0 {
            return Err(bad(&format!("{key}.wrr_headers"), 0, "must be at least 1"));
        }
        if let Some(share) = self.header_share {
            if self.sched != HeaderSched::ByteWfq {
                return Err(bad(
                    &format!("{key}.header_share"),
                    share,
                    "applies only with sched = \"byte_wfq\"",
                ));
            }
            if !(share > 0.0 && share < 1.0) {
                return Err(bad(
                    &format!("{key}.header_share"),
                    share,
                    "must be above 0 and below 1",
                ));
            }
        }
        if !(self.header_multiple > 0.0 && self.header_multiple <= 1000.0) {
            return Err(bad(
                &format!("{key}.header_multiple"),
                self.header_multiple,
                "must be above 0 and at most 1000",
            ));
        }
        Ok(())
    }
    fn build(&self, env: &QueueEnv) -> NdpQueue {
        let data = self.data_cap("", env.mtu).expect("validated");
        let header = self.header_cap(data, env.mtu);
        NdpQueue::new(data, Capacity::Bytes(header))
            .with_trim_arrival_only(self.trim_arrival_only)
            .with_return_to_sender(self.return_to_sender)
            .with_wrr_headers(self.wrr_headers)
            .with_count_in_service(self.count_in_service)
            .with_sched(self.sched, self.wfq_weights(env.mtu))
    }
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        let data = self.data_cap("", env.mtu).expect("validated");
        if let Capacity::Bytes(b) = data {
            c.queue_bytes = Some(b);
        }
        c.header_bytes = Some(self.header_cap(data, env.mtu));
        // `header_share` stays unset when unset: the default weights are
        // exact integers (640 : 9064 at 9 KB), which a share in f64 would
        // only approximate, so a rerun of the resolved table could differ.
        c
    }
}

/// Event counters of one NDP port.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NdpCounters {
    /// Payloads cut off (arrivals or queue tails).
    pub trims: u64,
    /// Headers returned to their sender.
    pub bounces: u64,
    /// Packets discarded (header-queue overflow without return-to-sender).
    pub drops: u64,
}

/// One FIFO with its byte count. The packets are in the shard's pool
/// (`net/pool.rs`), which holds only the packets that exist; a ring per
/// queue would keep the room of each port's fullest moment.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Fifo {
    cap: Capacity,
    q: PacketFifo,
    bytes: u64,
}

impl Fifo {
    fn new(cap: Capacity) -> Self {
        Fifo {
            cap,
            q: PacketFifo::default(),
            bytes: 0,
        }
    }
    #[inline]
    fn fits(&self, size: u32) -> bool {
        self.cap.fits(self.q.len(), self.bytes, size)
    }
    #[inline]
    fn push(&mut self, pool: &mut PacketPool, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(pool, p);
    }
    #[inline]
    fn pop_front(&mut self, pool: &mut PacketPool) -> Option<Packet> {
        let p = self.q.pop_front(pool)?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    /// Puts `p` in the tail's place; returns the tail.
    #[inline]
    fn replace_tail(&mut self, pool: &mut PacketPool, p: Packet) -> Option<Packet> {
        let size = p.size as u64;
        let tail = std::mem::replace(self.q.back_mut(pool)?, p);
        self.bytes = self.bytes - tail.size as u64 + size;
        Some(tail)
    }
}

/// Cuts the payload off a packet, keeping its header fields.
#[inline]
pub fn trim(p: &mut Packet) {
    p.kind = PacketKind::Header;
    p.payload = 0;
    p.size = HEADER_BYTES;
}

/// A `header_share` becomes integer byte-WFQ weights in this many parts.
const WFQ_SCALE: u64 = 1 << 20;

/// State touched only on trims, bounces, drops and byte-WFQ picks: boxed,
/// so the port's `Queue` keeps its pinned size (`queue/mod.rs`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Cold {
    counters: NdpCounters,
    /// Byte-WFQ weights of the header and data queues.
    w_hdr: u64,
    w_data: u64,
    /// Bytes each queue has sent in the current contended period.
    sent_hdr: u64,
    sent_data: u64,
}

/// The packet on the wire, for `count_in_service`.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
struct InService {
    /// It left the data queue (else the header queue).
    data: bool,
    size: u32,
    /// When its last bit is sent, ps.
    until: u64,
}

/// An NDP switch output port. See the module documentation.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NdpQueue {
    data: Fifo,
    hdr: Fifo,
    wrr_headers: u32,
    wrr_pos: u32,
    sched: HeaderSched,
    trim_arrival_only: bool,
    return_to_sender: bool,
    count_in_service: bool,
    in_service: Option<InService>,
    cold: Box<Cold>,
}

impl NdpQueue {
    /// A port with the given data- and header-queue capacities, 10:1 WRR, the
    /// fair coin and return-to-sender on.
    ///
    /// The paper's header queue has the data queue's byte budget:
    /// `NdpQueue::new(cap, Capacity::Bytes(NdpQueue::header_bytes_for(cap, mtu)))`.
    pub fn new(data_cap: Capacity, header_cap: Capacity) -> Self {
        NdpQueue {
            data: Fifo::new(data_cap),
            hdr: Fifo::new(header_cap),
            wrr_headers: DEFAULT_WRR_HEADERS,
            wrr_pos: 0,
            sched: HeaderSched::Wrr,
            trim_arrival_only: false,
            return_to_sender: true,
            count_in_service: false,
            in_service: None,
            cold: Box::default(),
        }
    }

    /// Header-queue bytes equal to the data queue's byte budget ([P] §3.2.4,
    /// A3). A packet cap counts `mtu` bytes per packet: pass the MTU the
    /// paper counts, 9000 B, to get its 72 000 B = 1125 × 64 B headers. A byte
    /// cap is returned as is.
    pub fn header_bytes_for(data_cap: Capacity, mtu: u32) -> u64 {
        match data_cap {
            Capacity::Packets(n) => n as u64 * mtu as u64,
            Capacity::Bytes(b) => b,
        }
    }

    /// Always trim the arriving packet, never the tail: the NetFPGA
    /// prototype ([P] §4). Default false.
    pub fn with_trim_arrival_only(mut self, on: bool) -> Self {
        self.trim_arrival_only = on;
        self
    }

    /// Return overflowing headers to their sender ([P] §3.2.4); when off they
    /// are dropped, as on NetFPGA ([P] §4). Default true.
    pub fn with_return_to_sender(mut self, on: bool) -> Self {
        self.return_to_sender = on;
        self
    }

    /// Headers served per data packet when both queues are backlogged.
    /// Default 10 ([P] §3.1). Must be at least 1.
    pub fn with_wrr_headers(mut self, n: u32) -> Self {
        assert!(n >= 1, "NDP WRR needs at least one header per data packet");
        self.wrr_headers = n;
        self
    }

    /// How the two queues share the port; under [`HeaderSched::ByteWfq`]
    /// the header and data queues get bytes in the ratio `weights` (both
    /// at least 1; ignored otherwise). Default: the paper's WRR.
    pub fn with_sched(mut self, sched: HeaderSched, weights: (u64, u64)) -> Self {
        self.sched = sched;
        if sched == HeaderSched::ByteWfq {
            assert!(
                weights.0 >= 1 && weights.1 >= 1,
                "byte WFQ needs positive weights"
            );
            (self.cold.w_hdr, self.cold.w_data) = weights;
        }
        self
    }

    /// Count the packet in service against the cap of the queue it left
    /// until its last bit is sent, as htsim does ([C] `compositequeue.cpp`).
    /// Default false: only waiting packets count.
    pub fn with_count_in_service(mut self, on: bool) -> Self {
        self.count_in_service = on;
        self
    }

    /// What the packet in service adds to the data (`data`) or header
    /// queue's occupancy at `now`: (packets, bytes).
    #[inline]
    fn serving(&self, data: bool, now: u64) -> (u32, u64) {
        match self.in_service {
            Some(s) if s.data == data && now < s.until => (1, s.size as u64),
            _ => (0, 0),
        }
    }

    /// Whether `size` more bytes fit in the data (`data`) or header queue.
    #[inline]
    fn room(&self, data: bool, size: u32, now: u64) -> bool {
        let f = if data { &self.data } else { &self.hdr };
        let (n, b) = self.serving(data, now);
        f.cap.fits(f.q.len() + n, f.bytes + b, size)
    }

    /// Whether removing the data queue's tail leaves room for `size` bytes.
    #[inline]
    fn tail_can_make_room(&self, size: u32, now: u64, pool: &PacketPool) -> bool {
        let (n, b) = self.serving(true, now);
        match self.data.q.back(pool) {
            None => false,
            Some(t) => self.data.cap.fits(
                self.data.q.len() - 1 + n,
                self.data.bytes - t.size as u64 + b,
                size,
            ),
        }
    }

    /// Header-queue admission, with return-to-sender on overflow.
    #[inline]
    fn enqueue_header(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.room(false, pkt.size, cx.now) {
            cx.queued(&pkt);
            self.hdr.push(cx.pool, pkt);
        } else {
            self.overflow_header(pkt, cx);
        }
    }

    /// A header that does not fit: bounced once, else dropped.
    #[inline]
    fn overflow_header(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.return_to_sender && pkt.kind == PacketKind::Header && !pkt.has(flags::BOUNCED) {
            std::mem::swap(&mut pkt.src, &mut pkt.dst);
            pkt.flags |= flags::BOUNCED;
            self.cold.counters.bounces += 1;
            cx.bounced(pkt);
        } else {
            self.cold.counters.drops += 1;
            cx.dropped(pkt);
        }
    }

    /// Whether the data queue has room for `size` bytes (the Tofino chip
    /// decides trimming itself, `net/tofino.rs`).
    #[inline]
    pub fn data_fits(&self, size: u32) -> bool {
        self.data.fits(size)
    }
    /// Packets in the data (low-priority) queue.
    pub fn data_len_packets(&self) -> u32 {
        self.data.q.len()
    }
    /// Bytes in the data (low-priority) queue.
    pub fn data_len_bytes(&self) -> u64 {
        self.data.bytes
    }
    /// Packets in the header (high-priority) queue.
    pub fn header_len_packets(&self) -> u32 {
        self.hdr.q.len()
    }
    /// Bytes in the header (high-priority) queue.
    pub fn header_len_bytes(&self) -> u64 {
        self.hdr.bytes
    }
    /// Payloads cut off so far.
    pub fn trims(&self) -> u64 {
        self.cold.counters.trims
    }
    /// Headers returned to sender so far.
    pub fn bounces(&self) -> u64 {
        self.cold.counters.bounces
    }
    /// Packets dropped so far.
    pub fn drops(&self) -> u64 {
        self.cold.counters.drops
    }
    /// All counters.
    pub fn counters(&self) -> NdpCounters {
        self.cold.counters
    }
}

impl Discipline for NdpQueue {
    /// Offers a packet. See the module documentation for the rules.
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if pkt.kind.is_control() {
            return self.enqueue_header(pkt, cx);
        }
        if self.room(true, pkt.size, cx.now) {
            cx.queued(&pkt);
            self.data.push(cx.pool, pkt);
            return;
        }
        // Data queue full for this packet: trim the arrival or the tail.
        let trim_tail = !self.trim_arrival_only && cx.rng.random_bool(0.5);
        if trim_tail
            && self.tail_can_make_room(pkt.size, cx.now, cx.pool)
            && self.room(false, HEADER_BYTES, cx.now)
        {
            // The arrival takes the tail's place in the data queue, and the
            // tail's header joins the header queue. The reports keep their
            // order: the tail's trim, then the arrival.
            let arrival = pkt.clone();
            let mut tail = self
                .data
                .replace_tail(cx.pool, pkt)
                .expect("tail_can_make_room");
            cx.trimmed_queued(&tail);
            trim(&mut tail);
            self.cold.counters.trims += 1;
            cx.report(Outcome::Queued, arrival);
            self.hdr.push(cx.pool, tail);
            return;
        }
        self.cold.counters.trims += 1;
        if self.room(false, HEADER_BYTES, cx.now) {
            cx.trimmed(&pkt);
            trim(&mut pkt);
            self.hdr.push(cx.pool, pkt);
        } else {
            trim(&mut pkt);
            self.overflow_header(pkt, cx);
        }
    }

    /// Takes the next packet to transmit (weighted round robin, see the
    /// module documentation).
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let next = self.pick(cx.pool);
        if self.count_in_service {
            self.in_service = next.as_ref().map(|p| InService {
                data: !p.kind.is_control(),
                size: p.size,
                until: cx.now + tx_time_ps(p.size as u64, cx.rate_bps),
            });
        }
        next
    }

    /// Both heads: which one goes next depends on the scheduler's turn.
    #[inline]
    fn prefetch_next(&self, pool: &PacketPool) {
        self.hdr.q.prefetch_front(pool);
        self.data.q.prefetch_front(pool);
    }
    /// The data queue's next slot (most arrivals are data).
    #[inline]
    fn prefetch_tail(&self, pool: &PacketPool) {
        self.data.q.prefetch_push(pool);
    }

    /// Packets waiting in both queues.
    fn len_packets(&self) -> u32 {
        self.data.q.len() + self.hdr.q.len()
    }
    /// Bytes waiting in both queues.
    fn len_bytes(&self) -> u64 {
        self.data.bytes + self.hdr.bytes
    }
}

impl NdpQueue {
    /// The next packet: `sched` decides between two backlogged queues.
    #[inline]
    fn pick(&mut self, pool: &mut PacketPool) -> Option<Packet> {
        match (self.hdr.q.is_empty(), self.data.q.is_empty()) {
            (false, false) => {
                let header_turn = match self.sched {
                    HeaderSched::Wrr => {
                        let turn = self.wrr_pos < self.wrr_headers;
                        self.wrr_pos = (self.wrr_pos + 1) % (self.wrr_headers + 1);
                        turn
                    }
                    HeaderSched::Strict => true,
                    HeaderSched::ByteWfq => self.wfq_header_turn(pool),
                };
                if header_turn {
                    self.hdr.pop_front(pool)
                } else {
                    self.data.pop_front(pool)
                }
            }
            (false, true) => {
                self.end_contention();
                self.hdr.pop_front(pool)
            }
            (true, false) => {
                self.end_contention();
                self.data.pop_front(pool)
            }
            (true, true) => None,
        }
    }

    /// Byte WFQ between two backlogged queues: the smaller finish tag goes,
    /// ties to the header (module documentation). Counts the chosen bytes.
    /// Kept out of line: the default WRR's dequeue stays as small as before.
    #[inline(never)]
    fn wfq_header_turn(&mut self, pool: &PacketPool) -> bool {
        let size = |f: &Fifo| f.q.front(pool).expect("backlogged").size as u64;
        let (h, d) = (size(&self.hdr), size(&self.data));
        let c = &mut *self.cold;
        let finish_hdr = (c.sent_hdr + h) as u128 * c.w_data as u128;
        let finish_data = (c.sent_data + d) as u128 * c.w_hdr as u128;
        let header = finish_hdr <= finish_data;
        if header {
            c.sent_hdr += h;
        } else {
            c.sent_data += d;
        }
        header
    }

    /// One queue is empty: a byte-WFQ contended period ends.
    #[inline]
    fn end_contention(&mut self) {
        if self.sched == HeaderSched::ByteWfq {
            let c = &mut *self.cold;
            c.sent_hdr = 0;
            c.sent_data = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::Kit;
    use crate::queue::Outcome::*;
    use crate::queue::{Outcome, Queue};
    use proptest::prelude::*;
    use PacketKind::{Ack, Data, Nack, Pull};

    const MTU: u32 = 9064;

    fn pkt(seq: u64, kind: PacketKind) -> Packet {
        let size = if kind == Data { MTU } else { HEADER_BYTES };
        Packet {
            flow: 7,
            src: 3,
            dst: 5,
            path: 11,
            sent_ps: 42,
            flags: flags::SYN,
            ..crate::packet::test_packet(kind, seq, size)
        }
    }
    fn data(seq: u64) -> Packet {
        pkt(seq, Data)
    }
    fn trimmed(mut p: Packet) -> Packet {
        trim(&mut p);
        p
    }

    fn paper_queue() -> NdpQueue {
        let cap = Capacity::Packets(8);
        NdpQueue::new(cap, Capacity::Bytes(NdpQueue::header_bytes_for(cap, 9000)))
    }

    #[test]
    fn header_budget_matches_the_paper() {
        assert_eq!(
            NdpQueue::header_bytes_for(Capacity::Packets(8), 9000) / HEADER_BYTES as u64,
            1125
        );
        assert_eq!(
            NdpQueue::header_bytes_for(Capacity::Bytes(72_000), 1500),
            72_000
        );
    }

    #[test]
    fn ninth_packet_is_trimmed_on_arrival_with_the_coin_off() {
        let (mut k, mut q) = (Kit::new(0), paper_queue().with_trim_arrival_only(true));
        k.fill(&mut q, (0..8).map(data));
        assert_eq!(k.offer(&mut q, data(8)), [(Trimmed, 8)]);
        assert_eq!(k.reports[0].pkt, data(8), "reported before the cut");
        assert_eq!((q.data_len_packets(), q.header_len_packets()), (8, 1));
        assert_eq!(q.trims(), 1);
        // Header first (WRR), and it is the arrival, trimmed, other fields kept.
        let h = k.take(&mut q).unwrap();
        assert_eq!(h, trimmed(data(8)));
        assert_eq!((h.size, h.payload, h.kind), (64, 0, PacketKind::Header));
        assert_eq!((h.seq, h.flow, h.path, h.flags), (8, 7, 11, flags::SYN));
        assert_eq!(k.drain_seqs(&mut q), (0..8).collect::<Vec<_>>());
    }

    /// A tail trim names the tail (trimmed in place), then the arrival (queued).
    #[test]
    fn coin_trims_the_tail_about_half_the_time() {
        let mut k = Kit::new(1);
        let trials = 2000u32;
        let mut tail = 0u32;
        for _ in 0..trials {
            let mut q = paper_queue();
            k.fill(&mut q, (0..8).map(data));
            let out = k.offer(&mut q, data(8));
            let h = k.take(&mut q).unwrap();
            assert_eq!((h.kind, h.size, h.payload), (PacketKind::Header, 64, 0));
            let rest = k.drain_seqs(&mut q);
            match h.seq {
                7 => {
                    tail += 1;
                    assert_eq!(out, [(TrimmedQueued, 7), (Queued, 8)]);
                    assert_eq!(rest, vec![0, 1, 2, 3, 4, 5, 6, 8]);
                }
                8 => {
                    assert_eq!(out, [(Trimmed, 8)]);
                    assert_eq!(rest, (0..8).collect::<Vec<_>>());
                }
                s => panic!("trimmed seq {s}"),
            }
        }
        let n = trials as f64;
        let sigma = (n * 0.25).sqrt();
        let dev = (tail as f64 - n / 2.0).abs();
        assert!(tail > 0 && tail < trials);
        assert!(dev < 5.0 * sigma, "tail trims {tail} of {trials}");
    }

    #[test]
    fn wrr_serves_ten_headers_per_data_packet() {
        let mut k = Kit::new(0);
        let mut q = NdpQueue::new(Capacity::Packets(100), Capacity::Packets(100));
        k.fill(&mut q, (0..5).map(data));
        k.fill(&mut q, (0..40).map(|s| pkt(100 + s, Ack)));
        let kinds: Vec<bool> = k.drain(&mut q).iter().map(|p| p.kind == Data).collect();
        let mut want = Vec::new();
        for _ in 0..3 {
            want.extend(std::iter::repeat_n(false, 10));
            want.push(true);
        }
        want.extend(std::iter::repeat_n(false, 10)); // 40 headers done
        want.extend(std::iter::repeat_n(true, 2)); // data alone
        assert_eq!(kinds, want);
    }

    /// A port with room for everything the scheduling tests offer.
    fn roomy() -> NdpQueue {
        NdpQueue::new(Capacity::Packets(1000), Capacity::Packets(10_000))
    }

    #[test]
    fn strict_priority_sends_every_header_before_any_data() {
        let mut k = Kit::new(0);
        let mut q = roomy().with_sched(HeaderSched::Strict, (0, 0));
        k.fill(&mut q, (0..3).map(data));
        k.fill(&mut q, (0..40).map(|s| pkt(100 + s, Ack)));
        let kinds: Vec<bool> = k.drain(&mut q).iter().map(|p| p.kind == Data).collect();
        let want: Vec<bool> = (0..43).map(|i| i >= 40).collect();
        assert_eq!(kinds, want);
    }

    /// Equal byte weights: before the k-th data packet of 9064 B goes, the
    /// headers have sent the largest multiple of 64 B not above 9064·k B
    /// (finish tags 64·i against 9064·k, ties to the header): 141, then
    /// 283, 424, 566 headers in all.
    #[test]
    fn byte_wfq_splits_bytes_by_weight_between_backlogged_queues() {
        let mut k = Kit::new(0);
        let mut q = roomy().with_sched(HeaderSched::ByteWfq, (1, 1));
        k.fill(&mut q, (0..4).map(data));
        k.fill(&mut q, (0..600).map(|s| pkt(1000 + s, Pull)));
        let out = k.drain(&mut q);
        let headers_before: Vec<usize> = out
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == Data)
            .enumerate()
            .map(|(k, (i, _))| i - k)
            .collect();
        let want: Vec<usize> = (1..=4).map(|k| (9064 * k) / 64).collect();
        assert_eq!(want, [141, 283, 424, 566]);
        assert_eq!(headers_before, want);
        assert_eq!(out.len(), 604, "work conserving: the rest drain alone");
    }

    /// The default weights are the paper's 10 headers per MTU packet in
    /// bytes, so with full-size data byte WFQ sends exactly what the 10:1 WRR
    /// sends; with small data packets it gives headers fewer turns.
    #[test]
    fn byte_wfq_default_weights_are_the_papers_ten_to_one_in_bytes() {
        let cfg = NdpConfig {
            sched: HeaderSched::ByteWfq,
            ..NdpConfig::default()
        };
        assert_eq!(cfg.wfq_weights(9000), (640, 9064));
        let env = QueueEnv {
            mtu: 9000,
            packet_bytes: 9064,
            switch_k: None,
            switch: None,
            seed: 0,
        };
        assert_eq!(cfg.resolved(&env).wfq_weights(9000), (640, 9064));
        let mut k = Kit::new(0);
        let mut wfq = roomy().with_sched(HeaderSched::ByteWfq, cfg.wfq_weights(9000));
        let mut wrr = roomy();
        for q in [&mut wfq, &mut wrr] {
            k.fill(q, (0..5).map(data));
            k.fill(q, (0..40).map(|s| pkt(100 + s, Ack)));
        }
        let seqs = |q: &mut NdpQueue, k: &mut Kit| k.drain_seqs(q);
        assert_eq!(seqs(&mut wfq, &mut k), seqs(&mut wrr, &mut k));
        // 1564 B data packets: headers get 640 B per 9064 B of data.
        let mut q = roomy().with_sched(HeaderSched::ByteWfq, (640, 9064));
        k.fill(
            &mut q,
            (0..4).map(|s| pkt(s, Data)).map(|mut p| {
                p.size = 1564;
                p
            }),
        );
        k.fill(&mut q, (0..10).map(|s| pkt(100 + s, Ack)));
        let kinds: Vec<bool> = k.drain(&mut q).iter().map(|p| p.kind == Data).collect();
        // Header i goes iff 64·i·9064 <= 1564·k·640 with k data sent so far
        // plus the waiting one: i <= 1.7255·k, i.e. 1, 3, 5, 6 headers before
        // data 1..4 (floor(1564·640·k / (64·9064))).
        let before: Vec<u64> = (1..=4).map(|k| 1564 * 640 * k / (64 * 9064)).collect();
        assert_eq!(before, [1, 3, 5, 6]);
        let mut want = Vec::new();
        let mut sent = 0;
        for &b in &before {
            want.extend(std::iter::repeat_n(false, (b - sent) as usize));
            want.push(true);
            sent = b;
        }
        want.extend(std::iter::repeat_n(false, 10 - sent as usize));
        assert_eq!(kinds, want);
    }

    /// An idle header queue banks no credit: after data has gone alone, the
    /// next contended period starts even, so a lone header jumps the data.
    #[test]
    fn byte_wfq_restarts_its_counts_when_a_queue_empties() {
        let mut k = Kit::new(0);
        let mut q = roomy().with_sched(HeaderSched::ByteWfq, (1, 1));
        k.fill(&mut q, (0..3).map(data));
        assert_eq!(k.take(&mut q).map(|p| p.seq), Some(0));
        k.fill(&mut q, [pkt(50, Nack)]);
        assert_eq!(k.take(&mut q).map(|p| p.seq), Some(50), "the header jumps");
        assert_eq!(k.take(&mut q).map(|p| p.seq), Some(1));
    }

    #[test]
    fn header_share_needs_byte_wfq_and_a_fraction() {
        let err = |c: NdpConfig| c.validate("switch.queue").unwrap_err().to_string();
        let wrr = NdpConfig {
            header_share: Some(0.5),
            ..NdpConfig::default()
        };
        assert!(err(wrr).contains("switch.queue.header_share"));
        for share in [0.0, 1.0, -0.1, f64::NAN] {
            let c = NdpConfig {
                sched: HeaderSched::ByteWfq,
                header_share: Some(share),
                ..NdpConfig::default()
            };
            assert!(err(c).contains("above 0 and below 1"), "{share}");
        }
        let ok = NdpConfig {
            sched: HeaderSched::ByteWfq,
            header_share: Some(0.25),
            ..NdpConfig::default()
        };
        assert!(ok.validate("switch.queue").is_ok());
        assert_eq!(ok.wfq_weights(9000), (1 << 18, 3 << 18));
    }

    #[test]
    fn data_alone_flows_every_dequeue_and_headers_alone_too() {
        let (mut k, mut q) = (Kit::new(0), paper_queue());
        k.fill(&mut q, (0..8).map(data));
        assert_eq!(k.drain_seqs(&mut q), (0..8).collect::<Vec<_>>());
        k.fill(&mut q, (0..20).map(|s| pkt(s, Pull)));
        assert_eq!(k.drain_seqs(&mut q), (0..20).collect::<Vec<_>>());
        assert_eq!(q.len_bytes(), 0);
    }

    #[test]
    fn control_packets_take_the_header_queue() {
        let (mut k, mut q) = (Kit::new(0), paper_queue());
        let kinds = [Ack, Nack, Pull, PacketKind::Header];
        k.fill(
            &mut q,
            kinds.iter().enumerate().map(|(i, &t)| pkt(i as u64, t)),
        );
        assert_eq!((q.header_len_packets(), q.data_len_packets()), (4, 0));
        assert_eq!(q.header_len_bytes(), 4 * 64);
        assert_eq!(q.trims(), 0);
    }

    #[test]
    fn header_overflow_bounces_once_and_drops_the_rest() {
        let mut k = Kit::new(0);
        let mut q = NdpQueue::new(Capacity::Packets(1), Capacity::Bytes(2 * 64));
        k.fill(&mut q, [pkt(0, Ack), pkt(1, PacketKind::Header)]);
        // A header that does not fit goes back, addresses swapped.
        assert_eq!(k.offer(&mut q, pkt(2, PacketKind::Header)), [(Bounced, 2)]);
        let b = k.reports[0].pkt.clone();
        assert_eq!((b.src, b.dst, b.seq), (5, 3, 2));
        assert!(b.has(flags::BOUNCED) && b.has(flags::SYN));
        // Already bounced: dropped.
        assert_eq!(k.offer(&mut q, b.clone()), [(Dropped, 2)]);
        assert_eq!(k.reports[0].pkt, b);
        // Control packets are dropped.
        for t in [Ack, Nack, Pull] {
            assert_eq!(k.offer(&mut q, pkt(3, t)), [(Dropped, 3)]);
        }
        // A trimmed data packet whose header does not fit is bounced (one report).
        k.fill(&mut q, [data(4)]);
        assert_eq!(k.offer(&mut q, data(5)), [(Bounced, 5)]);
        let b = &k.reports[0].pkt;
        assert_eq!(
            (b.kind, b.size, b.seq, b.src),
            (PacketKind::Header, 64, 5, 5)
        );
        assert_eq!((q.trims(), q.bounces(), q.drops()), (1, 2, 4));
        assert_eq!(q.len_packets(), 3);
    }

    #[test]
    fn return_to_sender_off_drops() {
        let mut k = Kit::new(0);
        let mut q =
            NdpQueue::new(Capacity::Packets(1), Capacity::Packets(1)).with_return_to_sender(false);
        k.fill(&mut q, [pkt(0, PacketKind::Header)]);
        assert_eq!(k.offer(&mut q, pkt(1, PacketKind::Header)), [(Dropped, 1)]);
        assert_eq!((q.bounces(), q.drops()), (0, 1));
    }

    #[test]
    fn byte_capacities() {
        let mut k = Kit::new(3);
        // [C]: a 72 000 B cap holds 7 packets of 9064 B.
        let mut q = NdpQueue::new(Capacity::Bytes(72_000), Capacity::Bytes(72_000))
            .with_trim_arrival_only(true);
        k.fill(&mut q, (0..7).map(data));
        assert_eq!(k.offer(&mut q, data(7)), [(Trimmed, 7)]);
        assert_eq!(q.data_len_bytes(), 7 * 9064);
        // 1125 headers fit in 72 000 B; the 1126th bounces.
        k.fill(&mut q, (1..1125).map(|s| pkt(100 + s, PacketKind::Header)));
        assert_eq!(q.header_len_bytes(), 72_000);
        assert_eq!(
            k.offer(&mut q, pkt(99, PacketKind::Header)),
            [(Bounced, 99)]
        );
        // With the coin on and a byte cap, a large arrival cannot take the
        // place of a smaller tail: the arrival is trimmed whatever the coin.
        let mut q = NdpQueue::new(Capacity::Bytes(10_000), Capacity::Bytes(10_000));
        let mut small = data(1);
        small.size = 500;
        small.payload = 436;
        k.fill(&mut q, [data(0), small]);
        for s in 2..50 {
            assert_eq!(k.offer(&mut q, data(s)), [(Trimmed, s)]);
        }
        assert_eq!(q.trims(), 48);
        assert_eq!(q.header_len_bytes(), 48 * 64);
        assert!(q.hdr.q.iter(&k.pool).map(|h| h.seq).eq(2..50));
        assert_eq!(q.data_len_bytes(), 9064 + 500);
    }

    #[test]
    fn queue_enum_dispatches() {
        let mut k = Kit::new(0);
        let mut q = Queue::Ndp(paper_queue().with_trim_arrival_only(true));
        for s in 0..9 {
            k.offer(&mut q, data(s));
        }
        assert_eq!((q.len_packets(), q.len_bytes()), (9, 8 * 9064 + 64));
        assert_eq!(k.take(&mut q).unwrap().kind, PacketKind::Header);
    }

    /// 9064 B at the kit's 10 Gb/s: 9064 · 8 bits · 100 ps = 7.2512 µs on the wire.
    const DATA_ON_WIRE: u64 = 7_251_200;
    /// 64 B at 10 Gb/s: 51.2 ns.
    const HEADER_ON_WIRE: u64 = 51_200;

    /// `count_in_service` (htsim): a 2-packet data queue with one packet on
    /// the wire and one waiting is full until the wire packet's last bit is
    /// sent; without it the same arrival is queued.
    #[test]
    fn the_packet_in_service_counts_against_the_data_cap() {
        for cap in [Capacity::Packets(2), Capacity::Bytes(2 * 9064)] {
            for counted in [false, true] {
                let mut k = Kit::new(0);
                let mut q = NdpQueue::new(cap, Capacity::Bytes(72_000))
                    .with_trim_arrival_only(true)
                    .with_count_in_service(counted);
                k.fill(&mut q, [data(0), data(1)]);
                assert_eq!(
                    k.take(&mut q).unwrap().seq,
                    0,
                    "0 on the wire until 7.2512 µs"
                );
                let out = k.at(DATA_ON_WIRE - 1).offer(&mut q, data(2));
                if counted {
                    assert_eq!(out, [(Trimmed, 2)], "{cap:?}: 1 waiting + 1 in service");
                    // The last bit is out: only packet 1 counts now.
                    assert_eq!(k.at(DATA_ON_WIRE).offer(&mut q, data(3)), [(Queued, 3)]);
                    assert_eq!(k.drain_seqs(&mut q), [2, 1, 3], "the header first");
                } else {
                    assert_eq!(out, [(Queued, 2)], "{cap:?}: 1 waiting");
                    assert_eq!(k.drain_seqs(&mut q), [1, 2]);
                }
            }
        }
    }

    /// A header on the wire counts against the header queue's cap (htsim
    /// serves both queues the same way); a data packet on the wire does not.
    #[test]
    fn a_header_in_service_counts_against_the_header_cap_only() {
        let mut k = Kit::new(0);
        let mut q = NdpQueue::new(Capacity::Packets(1), Capacity::Bytes(3 * 64))
            .with_count_in_service(true);
        k.fill(&mut q, [pkt(0, Ack), pkt(1, Ack), pkt(2, Ack)]);
        assert_eq!(k.take(&mut q).unwrap().seq, 0);
        assert_eq!(
            k.offer(&mut q, pkt(3, Ack)),
            [(Dropped, 3)],
            "2 waiting + 1 in service"
        );
        assert_eq!(
            k.at(HEADER_ON_WIRE).offer(&mut q, pkt(4, Ack)),
            [(Queued, 4)]
        );
        assert_eq!(k.drain_seqs(&mut q), [1, 2, 4]);
        // A data packet on the wire fills its own queue (cap 1) and leaves
        // the header queue's 3 slots to headers.
        k.fill(&mut q, [data(10)]);
        assert_eq!(k.take(&mut q).unwrap().seq, 10);
        k.fill(&mut q, [pkt(11, Ack), pkt(12, Ack)]);
        assert_eq!(
            k.at(HEADER_ON_WIRE + 1).offer(&mut q, data(13)),
            [(Trimmed, 13)]
        );
        assert_eq!(q.header_len_packets(), 3, "two ACKs and 13's header");
        assert_eq!(q.data_len_packets(), 0);
    }

    /// `header_multiple`: the default header budget is the data queue's
    /// bytes times it (8 × 9000 B → 72 000 B, × 2 = 144 000 B = 2250
    /// headers); an explicit `header_bytes` wins; zero is refused by name.
    #[test]
    fn header_multiple_scales_the_default_header_budget() {
        let env = QueueEnv {
            mtu: 9000,
            packet_bytes: 9064,
            ..crate::queue::testkit::ENV
        };
        let paper = NdpConfig::default();
        assert_eq!(paper.resolved(&env).header_bytes, Some(72_000));
        let htsim = NdpConfig {
            header_multiple: 2.0,
            ..NdpConfig::default()
        };
        assert_eq!(htsim.resolved(&env).header_bytes, Some(144_000));
        let mut k = Kit::new(0);
        let mut q = htsim.build(&env);
        k.fill(&mut q, (0..2250).map(|s| pkt(s, Ack)));
        assert_eq!(k.offer(&mut q, pkt(2250, Ack)), [(Dropped, 2250)]);
        let explicit = NdpConfig {
            header_bytes: Some(640),
            ..htsim.clone()
        };
        assert_eq!(explicit.resolved(&env).header_bytes, Some(640));
        let bad = NdpConfig {
            header_multiple: 0.0,
            ..htsim
        };
        let e = bad.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.header_multiple"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn lengths_and_conservation(
            ops in proptest::collection::vec(0u8..6, 1..400),
            seed in any::<u64>(),
            bytes_cap in any::<bool>(),
        ) {
            let mut k = Kit::new(seed);
            let (dc, hc) = if bytes_cap {
                (Capacity::Bytes(30_000), Capacity::Bytes(640))
            } else {
                (Capacity::Packets(3), Capacity::Packets(6))
            };
            let mut q = NdpQueue::new(dc, hc);
            let (mut accepted, mut dequeued, mut rejected, mut offered) = (0u64, 0u64, 0u64, 0u64);
            for (i, op) in ops.into_iter().enumerate() {
                let p = match op {
                    0 | 1 => {
                        let mut p = data(i as u64);
                        p.size = 1000 + (i as u32 * 37) % 9000;
                        p
                    }
                    2 => pkt(i as u64, Ack),
                    3 => pkt(i as u64, PacketKind::Header),
                    _ => {
                        if k.take(&mut q).is_some() {
                            dequeued += 1;
                        }
                        continue;
                    }
                };
                offered += 1;
                // Exactly one admission outcome names the arrival.
                let out = k.offer(&mut q, p);
                let mine: Vec<Outcome> = out.iter().filter(|r| r.1 == i as u64).map(|r| r.0).collect();
                prop_assert_eq!(mine.len(), 1);
                match mine[0] {
                    Queued | Trimmed => accepted += 1,
                    Bounced | Dropped => rejected += 1,
                    o => prop_assert!(false, "{:?}", o),
                }
                prop_assert_eq!(q.len_bytes(), q.data.q.iter(&k.pool).chain(q.hdr.q.iter(&k.pool)).map(|p| p.size as u64).sum::<u64>());
                prop_assert_eq!(q.len_packets(), q.data.q.len() + q.hdr.q.len());
                prop_assert!(q.data.q.iter(&k.pool).all(|p| p.kind == Data));
                prop_assert!(q.hdr.q.iter(&k.pool).all(|p| p.kind != Data && p.size == HEADER_BYTES));
            }
            prop_assert_eq!(offered, accepted + rejected);
            prop_assert_eq!(accepted, dequeued + q.len_packets() as u64);
            prop_assert_eq!(rejected, q.bounces() + q.drops());
        }
    }
}
