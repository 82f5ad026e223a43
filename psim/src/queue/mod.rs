//! Queue disciplines: what an output port does with packets waiting for the
//! link.
//!
//! Every switch port and host NIC holds one [`Queue`]. A discipline decides,
//! on enqueue, whether the packet is queued, changed (ECN mark, payload
//! trimmed), dropped or sent back to its source, and may act on packets it
//! already holds (trim or evict a queued packet); on dequeue it picks the
//! next packet (FIFO, header-first round robin, priority, ...) and may drop
//! some first. Every such outcome is *reported* through the [`QueueCtx`],
//! naming the packet it happened to (ns-3's `DropBeforeEnqueue`,
//! `DropAfterDequeue` and `Mark`); the port counts and traces from the
//! reports, so no discipline keeps port counters of its own.
//!
//! Dispatch is static: [`disciplines!`] generates `enum Queue` and its
//! [`Discipline`] forwarding from one list, so the hot path has no virtual
//! calls. Adding a discipline is its file plus one line in that list.

pub mod classes;
pub mod cp;
pub mod droptail;
pub mod ndp;
pub mod priority;
pub mod red;
#[cfg(test)]
pub mod testkit;

pub use classes::ClassQueue;
pub use cp::CpQueue;
pub use droptail::DropTail;
pub use ndp::{NdpCounters, NdpQueue};
pub use priority::PriorityQueue;
pub use red::{Marking, RedQueue};

use crate::packet::Packet;
use crate::rng::Rng;

/// A capacity limit, in packets or in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Capacity {
    /// At most this many packets.
    Packets(u32),
    /// At most this many bytes (packet sizes summed).
    Bytes(u64),
}

impl Capacity {
    /// Whether a queue holding `pkts` packets and `bytes` bytes has room for one more of `size` bytes.
    #[inline]
    pub fn fits(&self, pkts: u32, bytes: u64, size: u32) -> bool {
        match *self {
            Capacity::Packets(n) => pkts < n,
            Capacity::Bytes(b) => bytes + size as u64 <= b,
        }
    }
}

/// What a discipline did to one packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The offered packet entered the queue (reported as offered).
    Queued,
    /// A packet got its ECN CE bit set (reported after the mark). A marked
    /// arrival is reported `Queued`, then `Marked`.
    Marked,
    /// The offered packet entered the queue with its payload cut (reported as
    /// it was before the cut).
    Trimmed,
    /// A packet already queued had its payload cut and stays queued
    /// (reported as it was before the cut): NDP's tail trim.
    TrimmedQueued,
    /// The offered packet was discarded at enqueue.
    Dropped,
    /// A queued packet was pushed out to make room (pFabric).
    Evicted,
    /// A queued packet was discarded when it reached the head (CoDel).
    DequeueDropped,
    /// The offered packet (possibly trimmed) goes back to its source, with
    /// source and destination swapped: the port routes it back (NDP).
    Bounced,
}

impl Outcome {
    /// Whether the packet left the queue without being sent (it had been counted as enqueued).
    #[inline]
    pub fn discards_queued(self) -> bool {
        matches!(self, Outcome::Evicted | Outcome::DequeueDropped)
    }
}

/// One reported outcome and the packet it happened to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// What happened.
    pub outcome: Outcome,
    /// The packet it happened to (see [`Outcome`] for whether before or after the change).
    pub pkt: Packet,
}

/// What a discipline may know and where it reports, for one enqueue or dequeue.
pub struct QueueCtx<'a> {
    /// Current simulated time.
    pub now: u64,
    /// The owning entity's random stream (e.g. NDP's coin flip).
    pub rng: &'a mut Rng,
    /// Rate of the link this port feeds, bits per second.
    pub rate_bps: u64,
    /// Input port the packet came in on; None for packets a host's transport emits.
    pub ingress: Option<u16>,
    reports: &'a mut Vec<Report>,
}

impl<'a> QueueCtx<'a> {
    /// A context that appends its reports to `reports` (a scratch buffer the
    /// caller reuses, so reporting allocates nothing once it has grown).
    #[inline]
    pub fn new(
        now: u64,
        rng: &'a mut Rng,
        rate_bps: u64,
        ingress: Option<u16>,
        reports: &'a mut Vec<Report>,
    ) -> Self {
        QueueCtx {
            now,
            rng,
            rate_bps,
            ingress,
            reports,
        }
    }
    /// Reports `outcome` for `pkt`.
    #[inline]
    pub fn report(&mut self, outcome: Outcome, pkt: Packet) {
        self.reports.push(Report { outcome, pkt });
    }
    /// Reports that the offered `pkt` entered the queue as it is.
    #[inline]
    pub fn queued(&mut self, pkt: &Packet) {
        self.report(Outcome::Queued, pkt.clone());
    }
    /// Reports that `pkt` (after the change) was ECN-marked.
    #[inline]
    pub fn marked(&mut self, pkt: &Packet) {
        self.report(Outcome::Marked, pkt.clone());
    }
    /// Reports that the offered `pkt` (before the cut) was admitted trimmed.
    #[inline]
    pub fn trimmed(&mut self, pkt: &Packet) {
        self.report(Outcome::Trimmed, pkt.clone());
    }
    /// Reports that the queued `pkt` (before the cut) was trimmed in place.
    #[inline]
    pub fn trimmed_queued(&mut self, pkt: &Packet) {
        self.report(Outcome::TrimmedQueued, pkt.clone());
    }
    /// Reports that the offered `pkt` was dropped.
    #[inline]
    pub fn dropped(&mut self, pkt: Packet) {
        self.report(Outcome::Dropped, pkt);
    }
    /// Reports that the queued `pkt` was evicted.
    #[inline]
    pub fn evicted(&mut self, pkt: Packet) {
        self.report(Outcome::Evicted, pkt);
    }
    /// Reports that the queued `pkt` was dropped at dequeue.
    #[inline]
    pub fn dequeue_dropped(&mut self, pkt: Packet) {
        self.report(Outcome::DequeueDropped, pkt);
    }
    /// Reports that `pkt` (addresses already swapped) goes back to its source.
    #[inline]
    pub fn bounced(&mut self, pkt: Packet) {
        self.report(Outcome::Bounced, pkt);
    }
}

/// What every queue discipline provides. Outcomes go to the context's
/// reports; the port acts on them.
pub trait Discipline {
    /// Offers a packet. Reports exactly one of `Queued`, `Trimmed`, `Dropped`
    /// or `Bounced` for it, plus any mark and anything done to queued packets.
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>);
    /// Takes the next packet to transmit; may report `DequeueDropped` first.
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet>;
    /// Packets waiting.
    fn len_packets(&self) -> u32;
    /// Bytes waiting.
    fn len_bytes(&self) -> u64;
    /// Stops (`true`) or resumes serving priority `prio` (PFC pause). Default:
    /// the discipline has no per-priority service and ignores it.
    fn set_paused(&mut self, _prio: u8, _paused: bool) {}
}

/// Generates [`Queue`], one variant per registered discipline, and its
/// [`Discipline`] forwarding. The list below is the registry.
macro_rules! disciplines {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty) ),* $(,)?) => {
        /// The queue disciplines psim implements (generated from one list).
        #[derive(Clone, Debug)]
        pub enum Queue {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Discipline for Queue {
            #[inline]
            fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
                match self { $( Queue::$variant(q) => q.enqueue(pkt, cx), )* }
            }
            #[inline]
            fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
                match self { $( Queue::$variant(q) => q.dequeue(cx), )* }
            }
            #[inline]
            fn len_packets(&self) -> u32 {
                match self { $( Queue::$variant(q) => q.len_packets(), )* }
            }
            #[inline]
            fn len_bytes(&self) -> u64 {
                match self { $( Queue::$variant(q) => q.len_bytes(), )* }
            }
            fn set_paused(&mut self, prio: u8, paused: bool) {
                match self { $( Queue::$variant(q) => q.set_paused(prio, paused), )* }
            }
        }
    };
}

disciplines! {
    /// First in, first out; tail drop.
    DropTail(DropTail),
    /// Strict priority, control before data (host NICs).
    Priority(PriorityQueue),
    /// NDP: trimming, a priority header queue, 10:1 WRR, return-to-sender.
    Ndp(NdpQueue),
    /// Cut payload: trim above a threshold into the same FIFO.
    Cp(CpQueue),
    /// ECN marking (DCTCP threshold or RED).
    Red(RedQueue),
    /// Two classes (NDP, other) under deficit round robin.
    Classes(Box<ClassQueue>),
}

impl<D: Discipline + ?Sized> Discipline for Box<D> {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        (**self).enqueue(pkt, cx)
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        (**self).dequeue(cx)
    }
    #[inline]
    fn len_packets(&self) -> u32 {
        (**self).len_packets()
    }
    #[inline]
    fn len_bytes(&self) -> u64 {
        (**self).len_bytes()
    }
    fn set_paused(&mut self, prio: u8, paused: bool) {
        (**self).set_paused(prio, paused)
    }
}
/// How to build the queue of a port, from the scenario.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum QueueSpec {
    /// Drop-tail FIFO.
    DropTail {
        /// Capacity.
        cap: Capacity,
    },
    /// NDP trimming port.
    Ndp {
        /// Data queue capacity.
        data: Capacity,
        /// Header queue capacity.
        header: Capacity,
        /// Always trim the arrival (NetFPGA) instead of the fair coin.
        trim_arrival_only: bool,
        /// Return headers to their sender when the header queue overflows.
        return_to_sender: bool,
    },
    /// Cut Payload.
    Cp {
        /// Queue length from which payloads are cut.
        threshold: Capacity,
        /// Total capacity.
        capacity: Capacity,
    },
    /// Strict priority, control first (host NICs).
    Priority {
        /// Capacity shared by both classes.
        cap: Capacity,
        /// CE-mark ECN-capable data above this many queued data packets.
        ecn_threshold: Option<u32>,
    },
    /// ECN marking FIFO.
    Red {
        /// Capacity.
        cap: Capacity,
        /// When to signal.
        marking: Marking,
        /// Mark ECT packets instead of dropping them.
        ecn: bool,
    },
    /// NDP class and another class, fair-queued.
    Classes {
        /// The NDP class.
        ndp: Box<QueueSpec>,
        /// Every other protocol.
        other: Box<QueueSpec>,
        /// DRR quantum, bytes.
        quantum: u64,
    },
}

impl QueueSpec {
    /// A new, empty queue of this kind.
    pub fn build(&self) -> Queue {
        match *self {
            QueueSpec::DropTail { cap } => Queue::DropTail(DropTail::new(cap)),
            QueueSpec::Ndp {
                data,
                header,
                trim_arrival_only,
                return_to_sender,
            } => Queue::Ndp(
                NdpQueue::new(data, header)
                    .with_trim_arrival_only(trim_arrival_only)
                    .with_return_to_sender(return_to_sender),
            ),
            QueueSpec::Cp {
                threshold,
                capacity,
            } => Queue::Cp(CpQueue::new(threshold, capacity)),
            QueueSpec::Priority { cap, ecn_threshold } => {
                Queue::Priority(PriorityQueue::new(cap).with_ecn_threshold(ecn_threshold))
            }
            QueueSpec::Red { cap, marking, ecn } => Queue::Red(RedQueue::new(cap, marking, ecn)),
            QueueSpec::Classes {
                ref ndp,
                ref other,
                quantum,
            } => Queue::Classes(Box::new(ClassQueue::new(
                ndp.build(),
                other.build(),
                quantum,
            ))),
        }
    }
}
