//! Strict priority by the packet's `rank`, smallest first, first come first
//! served among equal ranks. Registered twice, as the thesis's two uses of
//! it are the same queue with a different stamping upstream ([TH] §5.1.3,
//! §5.2.1):
//! - `rank`: "simple priorities" with priority = o(p), the packet's output
//!   time in the schedule being replayed (T34: 21% overdue against LSTF's
//!   0.21%);
//! - `sjf`: shortest job first, priority = the flow's size.
//!
//! SJF needs no starvation prevention: every packet of a flow has the same
//! rank, so the first packet of the best rank is already its flow's
//! earliest. SRPT (remaining size) does: that is `srpt` (pFabric's queue).
//! Nothing stamps `rank` yet (the replay's o(p) and the flow-size stamping
//! come with the edge slack policies and the UDP/TCP transports of issue
//! 15); unstamped packets all have rank 0 and this queue is FIFO.
//!
//! When full, the worst-ranked packets are evicted to make room for a
//! better-ranked arrival (the thesis's finite-buffer runs drop the lowest
//! priority, [TH] §5.2); an arrival ranked no better than the worst queued
//! packet is dropped instead (ties go against the latest, as pFabric's,
//! TP11). In `queue_bytes` one arrival may evict several packets; nothing
//! is evicted unless the arrival then fits.
//!
//! | parameter (`kind = "rank"` or `"sjf"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`DEFAULT_QUEUE_PACKETS`]) | as `droptail`; the UPS runs set 100,000,000 (replay) or 3425 (mean FCT, T36) (`UPS` scripts) |

use super::ranked::RankStore;
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::ConfigError;
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// Default capacity, packets (as drop-tail's).
pub const DEFAULT_QUEUE_PACKETS: u32 = super::droptail::DEFAULT_QUEUE_PACKETS;

/// `kind = "rank"` and `kind = "sjf"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
}

impl RankConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for RankConfig {
    type Queue = RankQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> RankQueue {
        RankQueue::new(self.cap("").expect("validated"))
    }
}

/// Packets served by (rank, arrival).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RankQueue {
    cap: Capacity,
    store: RankStore,
}

impl RankQueue {
    /// An empty queue with the given capacity.
    pub fn new(cap: Capacity) -> Self {
        RankQueue {
            cap,
            store: RankStore::new(false),
        }
    }
}

impl Discipline for RankQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let fits = self
            .store
            .make_room(self.cap, pkt.size, pkt.rank, false, |p| cx.evicted(p));
        if fits {
            cx.queued(&pkt);
            let rank = pkt.rank;
            self.store.push(pkt, rank, cx.now);
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, _cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let slot = self.store.best()?;
        Some(self.store.take(slot).0)
    }
    fn len_packets(&self) -> u32 {
        self.store.len()
    }
    fn len_bytes(&self) -> u64 {
        self.store.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::Outcome::*;

    fn ranked(seq: u64, rank: u64, size: u32) -> Packet {
        let mut p = data(seq, size);
        p.rank = rank;
        p
    }

    /// Arrivals (seq:rank) 0:7, 1:3, 2:7, 3:1, 4:3; take one (3, rank 1);
    /// then 5:0 arrives. By hand, by (rank, arrival): 5, 1, 4, 0, 2.
    #[test]
    fn serves_by_rank_then_arrival() {
        let (mut k, mut q) = (Kit::new(0), RankQueue::new(Capacity::Packets(10)));
        k.fill(
            &mut q,
            [(0, 7), (1, 3), (2, 7), (3, 1), (4, 3)].map(|(s, r)| ranked(s, r, 100)),
        );
        assert_eq!(k.take(&mut q).unwrap().seq, 3);
        k.fill(&mut q, [ranked(5, 0, 100)]);
        assert_eq!(k.drain_seqs(&mut q), [5, 1, 4, 0, 2]);
    }

    /// Three packets fit: 0:5, 1:8, 2:8. By hand:
    /// - 3:8 ties the worst (8): the arrival, the latest, is dropped;
    /// - 4:2 beats it: the worst, the later of 1 and 2, i.e. 2, is evicted;
    /// - 5:9 is worse than all: dropped.
    ///
    /// In bytes (250 B): 0:5 and 1:8 (100 B each); 3:6 of 200 B would need
    /// 0 (rank 5, better) out too: dropped, nothing evicted; then 2:1 of
    /// 200 B evicts both, worst first.
    #[test]
    fn evicts_the_worst_for_a_better_arrival() {
        let (mut k, mut q) = (Kit::new(0), RankQueue::new(Capacity::Packets(3)));
        k.fill(
            &mut q,
            [(0, 5), (1, 8), (2, 8)].map(|(s, r)| ranked(s, r, 100)),
        );
        assert_eq!(k.offer(&mut q, ranked(3, 8, 100)), [(Dropped, 3)]);
        assert_eq!(
            k.offer(&mut q, ranked(4, 2, 100)),
            [(Evicted, 2), (Queued, 4)]
        );
        assert_eq!(k.offer(&mut q, ranked(5, 9, 100)), [(Dropped, 5)]);
        assert_eq!(k.drain_seqs(&mut q), [4, 0, 1]);

        let mut q = RankQueue::new(Capacity::Bytes(250));
        k.fill(&mut q, [ranked(0, 5, 100), ranked(1, 8, 100)]);
        assert_eq!(k.offer(&mut q, ranked(3, 6, 200)), [(Dropped, 3)]);
        assert_eq!(q.len_packets(), 2);
        assert_eq!(
            k.offer(&mut q, ranked(2, 1, 200)),
            [(Evicted, 1), (Evicted, 0), (Queued, 2)]
        );
        assert_eq!((q.len_packets(), q.len_bytes()), (1, 200));
    }
}
