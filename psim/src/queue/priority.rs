//! Strict-priority host NIC queue: payload-less packets (ACK, NACK, PULL,
//! headers) leave before data.
//!
//! Hosts do not trim (spec A6); a receiver's control packets must not wait
//! behind its own data, as in htsim's priority NIC queue ([C] per spec A6).
//! With only data packets (CBR) it is a plain drop-tail FIFO.
//!
//! | parameter | default | source |
//! |---|---|---|
//! | capacity (`[host] nic_queue_packets`), shared by both classes | 1000 packets | spec A6 ([C] uses a 1000-packet NIC buffer) |
//! | ECN marking of ECN-capable data above K data packets (`[host] nic_ecn_threshold`) | the switches' K when they mark (`queue = "ecn"` or `"classes"`), else off | htsim's host egress queue is of the switches' kind; without it a DCTCP sender's window grows unchecked in its own NIC queue when the NIC is the bottleneck |

use super::{Capacity, Enqueued, QueueCtx};
use crate::packet::{flags, Packet};
use std::collections::VecDeque;

/// Two FIFOs, control first, one shared capacity.
#[derive(Clone, Debug)]
pub struct PriorityQueue {
    cap: Capacity,
    control: VecDeque<Packet>,
    data: VecDeque<Packet>,
    bytes: u64,
    mark_above: Option<u32>,
}

impl PriorityQueue {
    /// An empty queue.
    pub fn new(cap: Capacity) -> Self {
        PriorityQueue {
            cap,
            control: VecDeque::new(),
            data: VecDeque::new(),
            bytes: 0,
            mark_above: None,
        }
    }
    /// Also CE-marks ECN-capable data arriving to more than `k` queued data packets.
    pub fn with_ecn_threshold(mut self, k: Option<u32>) -> Self {
        self.mark_above = k;
        self
    }
    pub(super) fn enqueue(&mut self, mut pkt: Packet, _cx: &mut QueueCtx<'_>) -> Enqueued {
        if !self.cap.fits(self.len_packets(), self.bytes, pkt.size) {
            return Enqueued::Dropped(pkt);
        }
        self.bytes += pkt.size as u64;
        if pkt.kind.is_control() {
            self.control.push_back(pkt);
            return Enqueued::Queued;
        }
        let mark = self
            .mark_above
            .is_some_and(|k| self.data.len() as u32 > k && pkt.has(flags::ECT));
        if mark {
            pkt.flags |= flags::ECN_CE;
        }
        self.data.push_back(pkt);
        if mark {
            Enqueued::Marked
        } else {
            Enqueued::Queued
        }
    }
    pub(super) fn dequeue(&mut self, _now: u64) -> Option<Packet> {
        let p = self.control.pop_front().or_else(|| self.data.pop_front())?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    pub(super) fn len_packets(&self) -> u32 {
        (self.control.len() + self.data.len()) as u32
    }
    pub(super) fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;

    fn pkt(kind: PacketKind, seq: u64) -> Packet {
        crate::packet::test_packet(kind, seq, 100)
    }

    #[test]
    fn control_overtakes_data_and_capacity_is_shared() {
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut cx = QueueCtx {
            now: 0,
            rng: &mut rng,
        };
        let mut q = PriorityQueue::new(Capacity::Packets(3));
        assert_eq!(
            q.enqueue(pkt(PacketKind::Data, 0), &mut cx),
            Enqueued::Queued
        );
        assert_eq!(
            q.enqueue(pkt(PacketKind::Data, 1), &mut cx),
            Enqueued::Queued
        );
        assert_eq!(
            q.enqueue(pkt(PacketKind::Ack, 2), &mut cx),
            Enqueued::Queued
        );
        assert!(matches!(
            q.enqueue(pkt(PacketKind::Pull, 3), &mut cx),
            Enqueued::Dropped(_)
        ));
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(0)).map(|p| p.seq).collect();
        assert_eq!(order, vec![2, 0, 1]);
        assert_eq!(q.len_bytes(), 0);
    }
}
