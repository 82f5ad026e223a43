//! Strict priority with priority dropping: RC3's switch and host NIC
//! ([TH] §2.1.1, §2.4.1).
//!
//! Packets wait in one FIFO per priority (`Packet::prio`, 0 highest, 8
//! levels: the 3-bit field; larger values count as 7) over one shared
//! capacity. Dequeue serves the highest non-empty priority. RC3 needs its
//! low-priority packets never to hurt priority-0 traffic, so a full queue
//! pushes out: the most recently queued packet of the lowest priority is
//! evicted when it is strictly lower than the arrival's, as often as the
//! arrival needs; otherwise the arrival is dropped (TA6: the thesis names
//! "priority dropping" without defining it). Evictions and drops are
//! counted as drops.
//!
//! **Partial deployment** ([TH] §2.4.1, thesis T8): with
//! `ignore_priorities_fraction = f`, each switch ignores priorities with
//! probability f, drawn once per switch from the scenario seed and the
//! switch id (no shared state, so the same switches are chosen whatever the
//! partition). Such a switch is one drop-tail FIFO of the same capacity.
//! Host NICs always keep priorities.
//!
//! | parameter (`kind = "prio_drop"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`DEFAULT_QUEUE_PACKETS`]) | as `droptail`; RC3's switches hold one BDP ([TH] §2.4.1: 5 MB), set `queue_bytes` |
//! | `ignore_priorities_fraction` | 0.0 | [TH] §2.4.1 (20% and 50% of switches without priorities, T8) |

use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use crate::rng::splitmix64;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Default capacity, packets (as drop-tail's).
pub const DEFAULT_QUEUE_PACKETS: u32 = super::droptail::DEFAULT_QUEUE_PACKETS;

/// Priority levels kept apart (the 3-bit priority of the packet header).
pub const LEVELS: usize = 8;

/// Salt of the per-switch deployment draw, so it is independent of every
/// other use of the seed.
const DEPLOY_SALT: u64 = 0x52C3_D3B1_0000_0001;

/// `kind = "prio_drop"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrioDropConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Fraction of switches that ignore priorities (one FIFO), 0 to 1.
    pub ignore_priorities_fraction: f64,
}

impl PrioDropConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

/// Whether switch `switch` ignores priorities under `seed` when a fraction
/// `f` of switches does: a uniform draw per (seed, switch).
pub fn ignores_priorities(seed: u64, switch: u32, f: f64) -> bool {
    let h = splitmix64(seed ^ splitmix64(switch as u64 ^ DEPLOY_SALT));
    ((h >> 11) as f64 / (1u64 << 53) as f64) < f
}

impl DisciplineConfig for PrioDropConfig {
    type Queue = PrioDropQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let f = self.ignore_priorities_fraction;
        if !(0.0..=1.0).contains(&f) {
            return Err(bad(
                &format!("{key}.ignore_priorities_fraction"),
                f,
                "must be between 0 and 1",
            ));
        }
        self.cap(key).map(drop)
    }
    fn build(&self, env: &QueueEnv) -> PrioDropQueue {
        let f = self.ignore_priorities_fraction;
        let fifo = env
            .switch
            .is_some_and(|s| f > 0.0 && ignores_priorities(env.seed, s, f));
        PrioDropQueue::new(self.cap("").expect("validated"), fifo)
    }
}

/// One FIFO per priority over a shared capacity, pushing out the lowest.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PrioDropQueue {
    cap: Capacity,
    /// Ignores priorities: every packet in class 0, drop-tail.
    fifo: bool,
    q: [VecDeque<Packet>; LEVELS],
    class_bytes: [u64; LEVELS],
    packets: u32,
    bytes: u64,
}

impl PrioDropQueue {
    /// An empty queue; `fifo` makes it one drop-tail FIFO.
    pub fn new(cap: Capacity, fifo: bool) -> Self {
        PrioDropQueue {
            cap,
            fifo,
            q: Default::default(),
            class_bytes: [0; LEVELS],
            packets: 0,
            bytes: 0,
        }
    }

    /// Whether this queue ignores priorities.
    pub fn is_fifo(&self) -> bool {
        self.fifo
    }

    fn class(&self, pkt: &Packet) -> usize {
        if self.fifo {
            0
        } else {
            (pkt.prio as usize).min(LEVELS - 1)
        }
    }

    /// Whether evicting packets of classes below `c` can make room for `size` bytes.
    fn room_below(&self, c: usize, size: u32) -> bool {
        let (pkts, bytes) = self.q[c + 1..]
            .iter()
            .zip(&self.class_bytes[c + 1..])
            .fold((0u32, 0u64), |(p, b), (q, cb)| (p + q.len() as u32, b + cb));
        match self.cap {
            Capacity::Packets(_) => pkts > 0,
            Capacity::Bytes(b) => self.bytes - bytes + size as u64 <= b,
        }
    }
}

impl Discipline for PrioDropQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let c = self.class(&pkt);
        if !self.cap.fits(self.packets, self.bytes, pkt.size) {
            if self.fifo || !self.room_below(c, pkt.size) {
                cx.dropped(pkt);
                return;
            }
            while !self.cap.fits(self.packets, self.bytes, pkt.size) {
                let low = (c + 1..LEVELS).rev().find(|&l| !self.q[l].is_empty());
                let l = low.expect("room_below found room");
                let v = self.q[l].pop_back().expect("non-empty");
                self.packets -= 1;
                self.bytes -= v.size as u64;
                self.class_bytes[l] -= v.size as u64;
                cx.evicted(v);
            }
        }
        cx.queued(&pkt);
        self.packets += 1;
        self.bytes += pkt.size as u64;
        self.class_bytes[c] += pkt.size as u64;
        self.q[c].push_back(pkt);
    }
    fn dequeue(&mut self, _cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let c = self.q.iter().position(|q| !q.is_empty())?;
        let p = self.q[c].pop_front()?;
        self.packets -= 1;
        self.bytes -= p.size as u64;
        self.class_bytes[c] -= p.size as u64;
        Some(p)
    }
    fn len_packets(&self) -> u32 {
        self.packets
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, with_prio, Kit, ENV};
    use crate::queue::Outcome::*;

    fn q(n: u32) -> PrioDropQueue {
        PrioDropQueue::new(Capacity::Packets(n), false)
    }

    #[test]
    fn serves_the_highest_priority_first_fifo_within() {
        let (mut k, mut q) = (Kit::new(0), q(10));
        k.fill(
            &mut q,
            [
                with_prio(data(0, 100), 2),
                with_prio(data(1, 100), 0),
                with_prio(data(2, 100), 1),
                with_prio(data(3, 100), 0),
                with_prio(data(4, 100), 9),
            ],
        );
        assert_eq!(k.drain_seqs(&mut q), [1, 3, 2, 0, 4]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }

    #[test]
    fn full_queue_evicts_the_latest_lowest_priority_packet() {
        let (mut k, mut q) = (Kit::new(0), q(3));
        k.fill(
            &mut q,
            [
                with_prio(data(0, 100), 2),
                with_prio(data(1, 100), 2),
                with_prio(data(2, 100), 1),
            ],
        );
        // Priority 1 arrives: the latest priority-2 packet (1) goes.
        assert_eq!(
            k.offer(&mut q, with_prio(data(3, 100), 1)),
            [(Evicted, 1), (Queued, 3)]
        );
        // Priority 2 arrives: nothing strictly lower is queued; it is dropped.
        assert_eq!(k.offer(&mut q, with_prio(data(4, 100), 2)), [(Dropped, 4)]);
        // Priority 0 evicts the last priority-2 packet, then priority 1 ones.
        assert_eq!(
            k.offer(&mut q, with_prio(data(5, 100), 0)),
            [(Evicted, 0), (Queued, 5)]
        );
        assert_eq!(
            k.offer(&mut q, with_prio(data(6, 100), 0)),
            [(Evicted, 3), (Queued, 6)]
        );
        assert_eq!(k.drain_seqs(&mut q), [5, 6, 2]);
    }

    #[test]
    fn byte_capacity_evicts_several_only_when_the_arrival_then_fits() {
        let mut q = PrioDropQueue::new(Capacity::Bytes(1000), false);
        let mut k = Kit::new(0);
        k.fill(
            &mut q,
            [
                with_prio(data(0, 600), 0),
                with_prio(data(1, 200), 3),
                with_prio(data(2, 200), 3),
            ],
        );
        // 700 B at priority 3: nothing lower, dropped; at priority 1 the two
        // priority-3 packets make 400 B, not enough: dropped, none evicted.
        assert_eq!(k.offer(&mut q, with_prio(data(3, 700), 3)), [(Dropped, 3)]);
        assert_eq!(k.offer(&mut q, with_prio(data(4, 500), 1)), [(Dropped, 4)]);
        assert_eq!(
            k.offer(&mut q, with_prio(data(5, 400), 1)),
            [(Evicted, 2), (Evicted, 1), (Queued, 5)]
        );
        assert_eq!(q.len_bytes(), 1000);
        assert_eq!(k.drain_seqs(&mut q), [0, 5]);
    }

    #[test]
    fn a_switch_that_ignores_priorities_is_drop_tail() {
        let (mut k, mut q) = (Kit::new(0), PrioDropQueue::new(Capacity::Packets(2), true));
        k.fill(
            &mut q,
            [with_prio(data(0, 100), 3), with_prio(data(1, 100), 0)],
        );
        assert_eq!(k.offer(&mut q, with_prio(data(2, 100), 0)), [(Dropped, 2)]);
        assert_eq!(k.drain_seqs(&mut q), [0, 1]);
    }

    /// The deployment draw is per switch and seed, hits about the fraction
    /// asked for, and never touches a host NIC.
    #[test]
    fn partial_deployment_picks_a_seeded_fraction_of_switches() {
        let cfg = PrioDropConfig {
            ignore_priorities_fraction: 0.2,
            ..Default::default()
        };
        let env = |switch, seed| QueueEnv {
            switch,
            seed,
            ..ENV
        };
        let fifo = |seed| {
            (0..1000)
                .filter(|&s| cfg.build(&env(Some(s), seed)).is_fifo())
                .count()
        };
        let (a, b) = (fifo(1), fifo(2));
        // Binomial(1000, 0.2): sd 12.6; 5 sd either side.
        assert!(
            (137..=263).contains(&a) && (137..=263).contains(&b),
            "{a} {b}"
        );
        assert_eq!(a, fifo(1));
        let same = (0..1000)
            .filter(|&s| {
                cfg.build(&env(Some(s), 1)).is_fifo() == cfg.build(&env(Some(s), 2)).is_fifo()
            })
            .count();
        assert!(same < 1000, "the seed changes the subset");
        let all = PrioDropConfig {
            ignore_priorities_fraction: 1.0,
            ..Default::default()
        };
        assert!(all.build(&env(Some(3), 1)).is_fifo());
        assert!(!all.build(&env(None, 1)).is_fifo());
        assert!(!PrioDropConfig::default().build(&env(Some(3), 1)).is_fifo());
        let bad = PrioDropConfig {
            ignore_priorities_fraction: 1.5,
            ..Default::default()
        };
        let e = bad.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.ignore_priorities_fraction"), "{e}");
    }
}
