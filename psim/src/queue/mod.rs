//! Queue disciplines: what an output port does with packets waiting for the
//! link.
//!
//! Every switch port and host NIC holds one [`Queue`]. A discipline decides,
//! on enqueue, whether the packet is queued, changed (ECN mark, payload
//! trimmed), dropped or sent back to its source; and on dequeue, which packet
//! goes next (FIFO, header-first round robin, priority, least slack). The
//! outcome is returned to the port, which counts it and acts on it (a bounced
//! packet is routed back towards its source by the switch).
//!
//! Dispatch is a `match` over the concrete kinds: the hot path has no virtual
//! calls. One file per discipline.

pub mod classes;
pub mod cp;
pub mod droptail;
pub mod ndp;
pub mod priority;
pub mod red;

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

/// What happened to a packet offered to a queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued unchanged.
    Queued,
    /// Queued with its ECN CE bit set (a marking discipline signalled congestion).
    Marked,
    /// Queued, after a payload was cut off this or another packet (NDP, CP).
    Trimmed,
    /// No room: the packet is discarded.
    Dropped(Packet),
    /// No room even for the header: it goes back to its sender (NDP return-to-sender).
    Bounced(Packet),
}

/// Context a discipline may need on enqueue.
pub struct QueueCtx<'a> {
    /// Current simulated time.
    pub now: u64,
    /// The owning entity's random stream (e.g. NDP's coin flip).
    pub rng: &'a mut Rng,
}

/// The queue disciplines psim implements.
#[derive(Clone, Debug)]
pub enum Queue {
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

impl Queue {
    /// Offers a packet.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) -> Enqueued {
        match self {
            Queue::DropTail(q) => q.enqueue(pkt, cx),
            Queue::Priority(q) => q.enqueue(pkt, cx),
            Queue::Ndp(q) => q.enqueue(pkt, cx),
            Queue::Cp(q) => q.enqueue(pkt, cx),
            Queue::Red(q) => q.enqueue(pkt, cx),
            Queue::Classes(q) => q.enqueue(pkt, cx),
        }
    }
    /// Takes the next packet to transmit.
    #[inline]
    pub fn dequeue(&mut self, now: u64) -> Option<Packet> {
        match self {
            Queue::DropTail(q) => q.dequeue(now),
            Queue::Priority(q) => q.dequeue(now),
            Queue::Ndp(q) => q.dequeue(now),
            Queue::Cp(q) => q.dequeue(now),
            Queue::Red(q) => q.dequeue(now),
            Queue::Classes(q) => q.dequeue(now),
        }
    }
    /// Packets waiting.
    #[inline]
    pub fn len_packets(&self) -> u32 {
        match self {
            Queue::DropTail(q) => q.len_packets(),
            Queue::Priority(q) => q.len_packets(),
            Queue::Ndp(q) => q.len_packets(),
            Queue::Cp(q) => q.len_packets(),
            Queue::Red(q) => q.len_packets(),
            Queue::Classes(q) => q.len_packets(),
        }
    }
    /// Bytes waiting.
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        match self {
            Queue::DropTail(q) => q.len_bytes(),
            Queue::Priority(q) => q.len_bytes(),
            Queue::Ndp(q) => q.len_bytes(),
            Queue::Cp(q) => q.len_bytes(),
            Queue::Red(q) => q.len_bytes(),
            Queue::Classes(q) => q.len_bytes(),
        }
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
