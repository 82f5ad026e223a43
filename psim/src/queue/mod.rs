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

pub mod droptail;

pub use droptail::DropTail;

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
    /// Queued unchanged (or ECN-marked in place).
    Queued,
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
}

impl Queue {
    /// Offers a packet.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) -> Enqueued {
        match self {
            Queue::DropTail(q) => q.enqueue(pkt, cx),
        }
    }
    /// Takes the next packet to transmit.
    #[inline]
    pub fn dequeue(&mut self, now: u64) -> Option<Packet> {
        match self {
            Queue::DropTail(q) => q.dequeue(now),
        }
    }
    /// Packets waiting.
    #[inline]
    pub fn len_packets(&self) -> u32 {
        match self {
            Queue::DropTail(q) => q.len_packets(),
        }
    }
    /// Bytes waiting.
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        match self {
            Queue::DropTail(q) => q.len_bytes(),
        }
    }
}
