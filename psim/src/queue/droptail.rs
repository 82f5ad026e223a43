//! Drop-tail FIFO: the baseline discipline of every simulator.
//!
//! Parameters: capacity in packets or bytes (scenario `[switch] queue_packets`
//! or `queue_bytes`). The NDP paper runs pHost over 8-packet drop-tail buffers
//! ([P] §6.2) and TCP-family protocols over 200-packet buffers ([P] §6.1).

use super::{Capacity, Enqueued, QueueCtx};
use crate::packet::Packet;
use std::collections::VecDeque;

/// A FIFO that drops arrivals when full.
#[derive(Clone, Debug)]
pub struct DropTail {
    cap: Capacity,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl DropTail {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        DropTail {
            cap,
            q: VecDeque::new(),
            bytes: 0,
        }
    }
    /// Whether a packet of `size` bytes fits.
    #[inline]
    pub(super) fn has_room(&self, size: u32) -> bool {
        self.cap.fits(self.q.len() as u32, self.bytes, size)
    }
    /// Occupancy in the capacity's unit (packets or bytes).
    #[inline]
    pub(super) fn occupancy(&self) -> u64 {
        match self.cap {
            Capacity::Packets(_) => self.q.len() as u64,
            Capacity::Bytes(_) => self.bytes,
        }
    }
    #[inline]
    pub(super) fn enqueue(&mut self, pkt: Packet, _cx: &mut QueueCtx<'_>) -> Enqueued {
        if self.has_room(pkt.size) {
            self.bytes += pkt.size as u64;
            self.q.push_back(pkt);
            Enqueued::Queued
        } else {
            Enqueued::Dropped(pkt)
        }
    }
    #[inline]
    pub(super) fn dequeue(&mut self, _now: u64) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    pub(super) fn len_packets(&self) -> u32 {
        self.q.len() as u32
    }
    pub(super) fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Queue, QueueCtx};
    use super::*;
    use crate::packet::PacketKind;

    fn pkt(seq: u64, size: u32) -> Packet {
        crate::packet::test_packet(PacketKind::Data, seq, size)
    }

    #[test]
    fn packet_capacity_drops_the_arrival_beyond_it() {
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut cx = QueueCtx {
            now: 0,
            rng: &mut rng,
        };
        let mut q = Queue::DropTail(DropTail::new(Capacity::Packets(2)));
        assert_eq!(q.enqueue(pkt(0, 100), &mut cx), Enqueued::Queued);
        assert_eq!(q.enqueue(pkt(1, 100), &mut cx), Enqueued::Queued);
        assert_eq!(
            q.enqueue(pkt(2, 100), &mut cx),
            Enqueued::Dropped(pkt(2, 100))
        );
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 200));
        assert_eq!(q.dequeue(0).unwrap().seq, 0);
        assert_eq!(q.dequeue(0).unwrap().seq, 1);
        assert_eq!(q.dequeue(0), None);
        assert_eq!(q.len_bytes(), 0);
    }

    #[test]
    fn byte_capacity_counts_sizes() {
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut cx = QueueCtx {
            now: 0,
            rng: &mut rng,
        };
        let mut q = Queue::DropTail(DropTail::new(Capacity::Bytes(1000)));
        assert_eq!(q.enqueue(pkt(0, 600), &mut cx), Enqueued::Queued);
        assert!(matches!(
            q.enqueue(pkt(1, 500), &mut cx),
            Enqueued::Dropped(_)
        ));
        assert_eq!(q.enqueue(pkt(2, 400), &mut cx), Enqueued::Queued);
        assert_eq!(q.len_bytes(), 1000);
    }
}
