//! Random service: each dequeue takes a packet chosen uniformly among those
//! queued (Mittal's thesis §1.13 and UPS, Mittal et al., NSDI 2016: one of
//! the schedulers LSTF replays; spec `thesis.md` §1.13, "uniform among
//! queued packets"). Arrivals beyond the capacity are tail-dropped (the
//! replay runs use buffers large enough never to drop).
//!
//! The draw uses the port's random stream ([`QueueCtx::rng`]), once per
//! dequeue with two or more packets queued, so runs stay deterministic.
//!
//! `control_below_bytes` (off by default) is the control side queue of the
//! UPS authors' `random-dequeue.cc`: a packet smaller than this on the wire
//! goes ahead of the random draw, first come, first served among its kind.
//! Their queue always has it (a "hack to ensure same route computation when
//! ECMP is enabled", for packets under 1460 B), so in their open-loop
//! replay runs the short last packet of every UDP flow skips the draw at
//! every hop; `lstf`'s `control_below_bytes` is the replay's side of it
//! (docs/replay.md).
//!
//! | parameter (`kind = "random"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets | as `droptail` (ns-3's `DropTailQueue` default) |
//! | `control_below_bytes` | none (off) | `random-dequeue.cc`: 1460, always on (UPS) |

use super::{Capacity, CapacityConfig, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::ConfigError;
use crate::packet::Packet;
use rand::RngExt;
use std::collections::VecDeque;

/// `kind = "random"`.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomConfig {
    /// Capacity in packets (default 100, as drop-tail's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Packets smaller than this on the wire skip the draw, FIFO (UPS's
    /// control side queue); none: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_below_bytes: Option<u32>,
}

impl RandomConfig {
    fn capacity(&self) -> CapacityConfig {
        CapacityConfig {
            queue_packets: self.queue_packets,
            queue_bytes: self.queue_bytes,
        }
    }
}

impl DisciplineConfig for RandomConfig {
    type Queue = RandomQueue;
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.capacity().validate(key)?;
        super::validate_control_below(key, self.control_below_bytes)
    }
    fn build(&self, env: &QueueEnv) -> RandomQueue {
        let mut q = RandomQueue::new(self.capacity().build(env));
        q.control_below = self.control_below_bytes.unwrap_or(0);
        q
    }
    fn resolved(&self, env: &QueueEnv) -> Self {
        let c = self.capacity().resolved(env);
        RandomConfig {
            queue_packets: c.queue_packets,
            queue_bytes: c.queue_bytes,
            ..self.clone()
        }
    }
}

/// Packets served in uniformly random order.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RandomQueue {
    cap: Capacity,
    q: Vec<Packet>,
    bytes: u64,
    /// Packets under this many bytes skip the draw (0: none do).
    control_below: u32,
    /// Those packets, in arrival order.
    control: VecDeque<Packet>,
}

impl RandomQueue {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        RandomQueue {
            cap,
            q: Vec::new(),
            bytes: 0,
            control_below: 0,
            control: VecDeque::new(),
        }
    }

    fn len(&self) -> usize {
        self.q.len() + self.control.len()
    }
}

impl Discipline for RandomQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self.cap.fits(self.len() as u32, self.bytes, pkt.size) {
            cx.queued(&pkt);
            self.bytes += pkt.size as u64;
            if pkt.size < self.control_below {
                self.control.push_back(pkt);
            } else {
                self.q.push(pkt);
            }
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if let Some(p) = self.control.pop_front() {
            self.bytes -= p.size as u64;
            return Some(p);
        }
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
        self.len() as u32
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

    /// With `control_below_bytes = 1000`, packets under 1000 B leave first
    /// in arrival order (no draw), the others after them in random order.
    #[test]
    fn control_packets_skip_the_draw_in_arrival_order() {
        let (mut k, mut q) = (Kit::new(0), RandomQueue::new(Capacity::Packets(10)));
        q.control_below = 1000;
        k.fill(
            &mut q,
            [
                data(0, 1460),
                data(1, 999),
                data(2, 1460),
                data(3, 64),
                data(4, 1000),
            ],
        );
        assert_eq!(
            (q.len_packets(), q.len_bytes()),
            (5, 1460 * 2 + 999 + 64 + 1000)
        );
        let out = k.drain_seqs(&mut q);
        assert_eq!(out[..2], [1, 3]);
        let mut rest = out[2..].to_vec();
        rest.sort();
        assert_eq!(rest, [0, 2, 4]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
        // The capacity counts both queues: a third packet is dropped at 2.
        let mut q = RandomQueue::new(Capacity::Packets(2));
        q.control_below = 1000;
        k.fill(&mut q, [data(0, 100), data(1, 1460)]);
        assert_eq!(k.offer(&mut q, data(2, 100)), [(Dropped, 2)]);
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
