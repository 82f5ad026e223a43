//! Last in, first out: each dequeue takes the most recently queued packet.
//! One of the schedulers whose schedules UPS replays with LSTF ([TH]
//! §5.1.3; thesis T33–T34): it skews the slack distribution, which is why
//! LSTF replays it worst without preemption.
//! Arrivals beyond the capacity are tail-dropped (the replay runs use
//! buffers large enough never to drop, `UPS` scripts).
//!
//! | parameter (`kind = "lifo"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets (the shared [`super::CapacityConfig`]) | as `droptail` (ns-3's `DropTailQueue` default); the UPS replay runs set 100,000,000 |

use super::{Capacity, Discipline, QueueCtx};
use crate::packet::Packet;

impl From<Capacity> for LifoQueue {
    fn from(cap: Capacity) -> Self {
        LifoQueue::new(cap)
    }
}

/// A stack of packets.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LifoQueue {
    cap: Capacity,
    q: Vec<Packet>,
    bytes: u64,
}

impl LifoQueue {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        LifoQueue {
            cap,
            q: Vec::new(),
            bytes: 0,
        }
    }
}

impl Discipline for LifoQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.cap.fits(self.q.len() as u32, self.bytes, pkt.size) {
            cx.queued(&pkt);
            self.bytes += pkt.size as u64;
            self.q.push(pkt);
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, _cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let p = self.q.pop()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    fn len_packets(&self) -> u32 {
        self.q.len() as u32
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::DisciplineConfig;
    use crate::queue::Outcome::*;

    /// Script: 0, 1, 2 queued; take (gets 2, the newest); 3, 4 queued; then
    /// drain: 4, 3, 1, 0 (newest first). By hand: stack [0 1 2] -> pop 2 ->
    /// [0 1] -> push 3 4 -> [0 1 3 4] -> 4 3 1 0.
    #[test]
    fn serves_the_newest_first() {
        let (mut k, mut q) = (Kit::new(0), LifoQueue::new(Capacity::Packets(10)));
        k.fill(&mut q, (0..3).map(|s| data(s, 100)));
        assert_eq!(k.take(&mut q).unwrap().seq, 2);
        k.fill(&mut q, (3..5).map(|s| data(s, 100)));
        assert_eq!(k.drain_seqs(&mut q), [4, 3, 1, 0]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }

    /// Full at 3 packets: the arrival is dropped, the stack is untouched; in
    /// bytes, 250 B hold two 100 B packets and a 50 B one still fits.
    #[test]
    fn tail_drops_at_capacity() {
        let (mut k, mut q) = (Kit::new(0), LifoQueue::new(Capacity::Packets(3)));
        k.fill(&mut q, (0..3).map(|s| data(s, 100)));
        assert_eq!(k.offer(&mut q, data(3, 100)), [(Dropped, 3)]);
        assert_eq!(k.drain_seqs(&mut q), [2, 1, 0]);
        let mut q = LifoQueue::new(Capacity::Bytes(250));
        k.fill(&mut q, (0..2).map(|s| data(s, 100)));
        assert_eq!(k.offer(&mut q, data(2, 100)), [(Dropped, 2)]);
        assert_eq!(k.offer(&mut q, data(3, 50)), [(Queued, 3)]);
        assert_eq!(q.len_bytes(), 250);
    }

    #[test]
    fn bad_capacity_names_the_key() {
        let c = crate::queue::CapacityConfig {
            queue_packets: Some(0),
            ..Default::default()
        };
        let e = c.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.queue_packets"), "{e}");
    }
}
