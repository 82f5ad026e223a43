//! Random service: each dequeue takes a packet chosen uniformly among those
//! queued (Mittal's thesis §1.13 and UPS, Mittal et al., NSDI 2016: one of
//! the schedulers LSTF replays; spec `thesis.md` §1.13, "uniform among
//! queued packets"). Arrivals beyond the capacity are tail-dropped (the
//! replay runs use buffers large enough never to drop).
//!
//! The draw uses the port's random stream ([`QueueCtx::rng`]), once per
//! dequeue with two or more packets queued, so runs stay deterministic.
//!
//! | parameter (`kind = "random"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets (the shared [`super::CapacityConfig`]) | as `droptail` (ns-3's `DropTailQueue` default) |

use super::{Capacity, Discipline, QueueCtx};
use crate::packet::Packet;
use rand::RngExt;

impl From<Capacity> for RandomQueue {
    fn from(cap: Capacity) -> Self {
        RandomQueue::new(cap)
    }
}

/// Packets served in uniformly random order.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RandomQueue {
    cap: Capacity,
    q: Vec<Packet>,
    bytes: u64,
}

impl RandomQueue {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        RandomQueue {
            cap,
            q: Vec::new(),
            bytes: 0,
        }
    }
}

impl Discipline for RandomQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.cap.fits(self.q.len() as u32, self.bytes, pkt.size) {
            cx.queued(&pkt);
            self.bytes += pkt.size as u64;
            self.q.push(pkt);
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let i = match self.q.len() {
            0 => return None,
            1 => 0,
            n => cx.rng.random_range(0..n),
        };
        // Order among the rest does not matter: every pick is uniform.
        let p = self.q.swap_remove(i);
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
    use crate::queue::Outcome::*;

    #[test]
    fn tail_drops_at_capacity_and_serves_every_packet_once() {
        let (mut k, mut q) = (Kit::new(0), RandomQueue::new(Capacity::Packets(5)));
        k.fill(&mut q, (0..5).map(|s| data(s, 100)));
        assert_eq!(k.offer(&mut q, data(5, 100)), [(Dropped, 5)]);
        let mut out = k.drain_seqs(&mut q);
        assert_ne!(out, [0, 1, 2, 3, 4], "seed 0 does not happen to give FIFO");
        out.sort();
        assert_eq!(out, [0, 1, 2, 3, 4]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }

    /// With n queued, each is first out with probability 1/n: over many
    /// trials every position's count is within 5 sigma of the mean.
    #[test]
    fn the_first_packet_out_is_uniform_among_the_queued() {
        let (n, trials) = (4u64, 8000u32);
        let mut k = Kit::new(9);
        let mut first = [0u32; 4];
        for _ in 0..trials {
            let mut q = RandomQueue::new(Capacity::Packets(10));
            k.fill(&mut q, (0..n).map(|s| data(s, 100)));
            first[k.take(&mut q).unwrap().seq as usize] += 1;
        }
        let mean = trials as f64 / n as f64;
        let sigma = (trials as f64 * 0.25 * 0.75).sqrt();
        for c in first {
            assert!((c as f64 - mean).abs() < 5.0 * sigma, "{first:?}");
        }
    }

    #[test]
    fn same_seed_same_order() {
        let order = |seed| {
            let (mut k, mut q) = (Kit::new(seed), RandomQueue::new(Capacity::Packets(50)));
            k.fill(&mut q, (0..50).map(|s| data(s, 100)));
            k.drain_seqs(&mut q)
        };
        assert_eq!(order(3), order(3));
        assert_ne!(order(3), order(4));
    }
}
