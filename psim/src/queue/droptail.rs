//! Drop-tail FIFO: the baseline discipline of every simulator.
//!
//! The NDP paper runs pHost over 8-packet drop-tail buffers ([P] §6.2) and
//! TCP-family protocols over 200-packet buffers ([P] §6.1).
//!
//! | parameter (`[switch.queue] kind = "droptail"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`DEFAULT_QUEUE_PACKETS`]) | ns-3's `DropTailQueue` default |

use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::ConfigError;
use crate::net::{PacketFifo, PacketPool};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// Default capacity, packets (ns-3's `DropTailQueue` default).
pub const DEFAULT_QUEUE_PACKETS: u32 = 100;

/// `kind = "droptail"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DropTailConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
}

impl DropTailConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for DropTailConfig {
    type Queue = DropTail;
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> DropTail {
        DropTail::new(self.cap("").expect("validated"))
    }
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        super::resolve_capacity(&mut c.queue_packets, c.queue_bytes, DEFAULT_QUEUE_PACKETS);
        c
    }
    /// A FIFO: order kept, drops only at enqueue.
    fn keeps_priority_order(&self) -> bool {
        true
    }
}

/// A FIFO that drops arrivals when full. Its packets live in the shard's
/// [`PacketPool`] (a ring per port would keep the room of its fullest moment
/// for the rest of the run).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct DropTail {
    cap: Capacity,
    q: PacketFifo,
    bytes: u64,
}

impl DropTail {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        DropTail {
            cap,
            q: PacketFifo::default(),
            bytes: 0,
        }
    }
    /// Whether a packet of `size` bytes fits.
    #[inline]
    pub(super) fn has_room(&self, size: u32) -> bool {
        self.cap.fits(self.q.len(), self.bytes, size)
    }
    /// Occupancy in the capacity's unit (packets or bytes).
    #[inline]
    pub(super) fn occupancy(&self) -> u64 {
        self.cap.occupancy(self.q.len(), self.bytes)
    }
    /// Queues `pkt` if it fits, without reporting (for disciplines built on a FIFO).
    #[inline]
    pub(super) fn push(&mut self, pkt: Packet, pool: &mut PacketPool) -> Result<(), Packet> {
        if self.has_room(pkt.size) {
            self.bytes += pkt.size as u64;
            self.q.push_back(pool, pkt);
            Ok(())
        } else {
            Err(pkt)
        }
    }
}

impl Discipline for DropTail {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.has_room(pkt.size) {
            cx.queued(&pkt);
            self.bytes += pkt.size as u64;
            self.q.push_back(cx.pool, pkt);
        } else {
            cx.dropped(pkt);
        }
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let p = self.q.pop_front(cx.pool)?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    #[inline]
    fn prefetch_next(&self, pool: &PacketPool) {
        self.q.prefetch_front(pool);
    }
    #[inline]
    fn prefetch_tail(&self, pool: &PacketPool) {
        self.q.prefetch_push(pool);
    }
    fn len_packets(&self) -> u32 {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::Outcome::*;

    #[test]
    fn packet_capacity_drops_the_arrival_beyond_it() {
        let (mut k, mut q) = (Kit::new(0), DropTail::new(Capacity::Packets(2)));
        assert_eq!(k.offer(&mut q, data(0, 100)), [(Queued, 0)]);
        assert_eq!(k.offer(&mut q, data(1, 100)), [(Queued, 1)]);
        assert_eq!(k.offer(&mut q, data(2, 100)), [(Dropped, 2)]);
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 200));
        assert_eq!(k.drain_seqs(&mut q), [0, 1]);
        assert_eq!(q.len_bytes(), 0);
    }

    #[test]
    fn byte_capacity_counts_sizes() {
        let (mut k, mut q) = (Kit::new(0), DropTail::new(Capacity::Bytes(1000)));
        assert_eq!(k.offer(&mut q, data(0, 600)), [(Queued, 0)]);
        assert_eq!(k.offer(&mut q, data(1, 500)), [(Dropped, 1)]);
        assert_eq!(k.offer(&mut q, data(2, 400)), [(Queued, 2)]);
        assert_eq!(q.len_bytes(), 1000);
    }
}
