//! pFabric's switch queue ([PFAB] §4.1), as its public ns-2 code runs it
//! (`NS2PF` `drop-tail.cc` with `drop_prio_`, `deque_prio_` and
//! `keep_order_` on; decisions TP11–TP13). Registered twice: `pfabric` and
//! `srpt` are the same discipline with the same defaults, since the
//! thesis's SRPT is "SRPT with starvation prevention as in [11]", [11] being
//! pFabric ([TH] §5.2.1; TA17).
//!
//! - **Priority** is the packet's `rank`, smaller first. The discipline only
//!   orders by it: the transport stamps it. pFabric's transport stamps the
//!   flow's remaining size (SRPT), or its absolute size as an option (then
//!   this is SJF; [PFAB] §5.4.3); nothing stamps it yet, so every rank is 0
//!   and the queue is FIFO until that transport lands.
//! - **Control packets** are not special-cased, as in the ns-2 queue: they
//!   compete by their own rank. An unstamped ACK has rank 0, the best, so
//!   ACKs go first and are evicted last (TP14's "ACKs: highest priority").
//! - **Dequeue:** find the best rank (ties: the earliest queued), then send
//!   the *earliest queued packet of that packet's flow*, matched on (source,
//!   destination, flow id) as ns-2 does: starvation prevention ([PFAB]
//!   §4.1, Fig. 2). `starvation_prevention = false` sends the best packet
//!   itself (plain priority order).
//! - **Full** means that the arrival would bring the queue to its limit or
//!   beyond: `bytes + size >= queue_bytes` (or `packets + 1 >=
//!   queue_packets`). So the queue always stays *strictly below* its limit:
//!   36,000 B holds 23 packets of 1500 B, exactly as ns-2's does.
//! - **On overflow** the arrival is appended, then exactly one packet is
//!   dropped: among those whose removal brings the bytes below the limit
//!   (the arrival included), the one with the largest rank; ties go to the
//!   *latest* queued, so an arrival tied with the worst is itself dropped
//!   (`Dropped`), otherwise the queued one is (`Evicted`, naming it).
//!
//! Cost per packet is O(log n) ([`super::ranked`]); eviction also skips the
//! packets too small to make room (control packets ranked worse than the
//! victim), a handful in a 36 KB buffer.
//!
//! | parameter (`kind = "pfabric"` or `"srpt"`) | default | source |
//! |---|---|---|
//! | `queue_bytes`, or `queue_packets` | 36,000 B ([`DEFAULT_QUEUE_BYTES`]), kept strictly below | [PFAB] §4.1 "~36KB or 24 full-sized packets"; `NS2PF` `spine_empirical.tcl`: 2 × BDP (12) packets of 1500 B, `queue_in_bytes_`, full at `>=` (TP12) |
//! | `starvation_prevention` | `true` ([`DEFAULT_STARVATION_PREVENTION`]) | [PFAB] §4.1; `NS2PF` `keep_order_ = true`; [TH] §5.2.1 for SRPT |

use super::ranked::RankStore;
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// Default capacity, bytes: 2 × BDP of 12 packets × 1500 B ([PFAB] §4.1, TP12).
pub const DEFAULT_QUEUE_BYTES: u64 = 36_000;
/// Serve the earliest packet of the best packet's flow ([PFAB] §4.1).
pub const DEFAULT_STARVATION_PREVENTION: bool = true;

/// `kind = "pfabric"` and `kind = "srpt"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PfabricConfig {
    /// Capacity in bytes (default [`DEFAULT_QUEUE_BYTES`]); kept strictly below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Capacity in packets, instead of bytes; kept strictly below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Dequeue the earliest packet of the best packet's flow.
    pub starvation_prevention: bool,
}

impl Default for PfabricConfig {
    fn default() -> Self {
        PfabricConfig {
            queue_bytes: None,
            queue_packets: None,
            starvation_prevention: DEFAULT_STARVATION_PREVENTION,
        }
    }
}

impl PfabricConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Bytes(DEFAULT_QUEUE_BYTES);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for PfabricConfig {
    type Queue = PfabricQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.queue_packets == Some(1) {
            // Kept strictly below 1 packet, it would hold nothing.
            let why = "pfabric stays strictly below its limit: at least 2";
            return Err(bad(&format!("{key}.queue_packets"), 1, why));
        }
        self.cap(key).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> PfabricQueue {
        PfabricQueue::new(self.cap("").expect("validated"), self.starvation_prevention)
    }
}

/// pFabric's priority queue with eviction; see the module docs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PfabricQueue {
    cap: Capacity,
    starvation_prevention: bool,
    store: RankStore,
}

impl PfabricQueue {
    /// An empty queue kept strictly below `cap`.
    pub fn new(cap: Capacity, starvation_prevention: bool) -> Self {
        PfabricQueue {
            cap,
            starvation_prevention,
            store: RankStore::new(starvation_prevention),
        }
    }
}

impl Discipline for PfabricQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let size = pkt.size;
        let (len, bytes) = (self.store.len(), self.store.bytes());
        // ns-2's full test: the arrival would reach the limit.
        let full = match self.cap {
            Capacity::Packets(n) => len + 1 >= n,
            Capacity::Bytes(b) => bytes + size as u64 >= b,
        };
        let rank = pkt.rank;
        if !full {
            cx.queued(&pkt);
            self.store.push(pkt, rank, cx.now);
            return;
        }
        let arrival = self.store.push(pkt, rank, cx.now);
        // Candidates: packets whose removal brings the total below the limit.
        let min_size = match self.cap {
            Capacity::Packets(_) => 0,
            Capacity::Bytes(b) => (self.store.bytes() + 1).saturating_sub(b) as u32,
        };
        // The arrival is always a candidate (the queue was below its limit),
        // so a victim exists; it is the arrival on a tie (latest queued).
        let victim = self.store.worst_of_size(min_size).unwrap_or(arrival);
        if victim == arrival {
            cx.dropped(self.store.take(arrival).0);
        } else {
            cx.evicted(self.store.take(victim).0);
            cx.queued(self.store.pkt(arrival));
        }
    }
    fn dequeue(&mut self, _cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let mut slot = self.store.best()?;
        if self.starvation_prevention {
            slot = self.store.flow_head(slot);
        }
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
    use crate::packet::PacketKind;
    use crate::queue::testkit::{control, data, Kit};
    use crate::queue::Outcome::*;

    /// A `size`-byte data packet `seq` of flow `flow` with rank `rank`.
    fn pkt(seq: u64, flow: u64, rank: u64, size: u32) -> Packet {
        let mut p = data(seq, size);
        p.flow = flow;
        p.rank = rank;
        p
    }

    /// Queue (arrival order, flow:rank): 0 a:5, 1 b:3, 2 a:1, 3 c:3. By
    /// hand, with starvation prevention: best is 2 (rank 1), its flow a's
    /// earliest is 0 -> out 0; best 2 again, now a's earliest -> 2; best
    /// rank 3, tie 1 vs 3, earliest is 1 (flow b's only) -> 1; then 3.
    /// Without: plain (rank, arrival) order 2, 1, 3, 0.
    #[test]
    fn dequeues_the_earliest_packet_of_the_best_flow() {
        let script = [(0, 10, 5), (1, 11, 3), (2, 10, 1), (3, 12, 3)];
        let order = |sp| {
            let (mut k, mut q) = (Kit::new(0), PfabricQueue::new(Capacity::Packets(10), sp));
            k.fill(&mut q, script.map(|(s, f, r)| pkt(s, f, r, 100)));
            k.drain_seqs(&mut q)
        };
        assert_eq!(order(true), [0, 2, 1, 3]);
        assert_eq!(order(false), [2, 1, 3, 0]);
    }

    /// 1000 B kept strictly below, 300 B packets (flow:rank) 0 a:4, 1 b:9,
    /// 2 c:9 hold 900 B. By hand:
    /// - 3 d:2 (300 B): 1200 >= 1000, full; all can make room (>= 201 B);
    ///   worst rank 9, tie 1 vs 2 -> the later, 2, is evicted.
    /// - 4 e:9: full; worst rank 9, tie 1 vs 4 (the arrival) -> 4 dropped.
    /// - 5, a 64 B ACK f:20: 964 < 1000, queued.
    /// - 6 g:1 (100 B): 1064, full; only packets of >= 65 B make room, so
    ///   the ACK (rank 20, the worst) is skipped and 1 (rank 9) is evicted.
    ///
    /// Left: 0 a:4, 3 d:2, 5 f:20, 6 g:1 -> served 6, 3, 0, 5.
    #[test]
    fn evicts_the_worst_packet_that_makes_room_and_the_latest_on_ties() {
        let (mut k, mut q) = (Kit::new(0), PfabricQueue::new(Capacity::Bytes(1000), true));
        k.fill(
            &mut q,
            [pkt(0, 10, 4, 300), pkt(1, 11, 9, 300), pkt(2, 12, 9, 300)],
        );
        assert_eq!(
            k.offer(&mut q, pkt(3, 13, 2, 300)),
            [(Evicted, 2), (Queued, 3)]
        );
        assert_eq!(k.offer(&mut q, pkt(4, 14, 9, 300)), [(Dropped, 4)]);
        let mut ack = control(PacketKind::Ack, 5);
        (ack.flow, ack.rank) = (15, 20);
        assert_eq!(k.offer(&mut q, ack), [(Queued, 5)]);
        assert_eq!(
            k.offer(&mut q, pkt(6, 16, 1, 100)),
            [(Evicted, 1), (Queued, 6)]
        );
        assert_eq!((q.len_packets(), q.len_bytes()), (4, 764));
        assert_eq!(k.drain_seqs(&mut q), [6, 3, 0, 5]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }

    /// ns-2's full test is `>=`: the default 36,000 B holds 23 packets of
    /// 1500 B (23 × 1500 = 34,500; one more would reach 36,000), and 3
    /// packets hold 2. Equal ranks: the arrival is the latest, so dropped.
    #[test]
    fn stays_strictly_below_the_limit() {
        let mut k = Kit::new(0);
        let mut q = PfabricConfig::default().build(&QueueEnv {
            mtu: 1500,
            packet_bytes: 1564,
            switch_k: None,
            switch: None,
            seed: 0,
        });
        k.fill(&mut q, (0..23).map(|s| data(s, 1500)));
        assert_eq!(k.offer(&mut q, data(23, 1500)), [(Dropped, 23)]);
        assert_eq!(q.len_bytes(), 34_500);
        let mut q = PfabricQueue::new(Capacity::Packets(3), true);
        k.fill(&mut q, (0..2).map(|s| data(s, 100)));
        assert_eq!(k.offer(&mut q, data(2, 100)), [(Dropped, 2)]);
    }

    /// An unstamped ACK (rank 0) overtakes queued data of rank 1000.
    #[test]
    fn control_packets_compete_by_their_rank() {
        let (mut k, mut q) = (
            Kit::new(0),
            PfabricQueue::new(Capacity::Bytes(36_000), true),
        );
        k.fill(&mut q, [pkt(0, 10, 1000, 1500), pkt(1, 10, 1000, 1500)]);
        let mut ack = control(PacketKind::Ack, 2);
        ack.flow = 11;
        k.fill(&mut q, [ack]);
        assert_eq!(k.drain_seqs(&mut q), [2, 0, 1]);
    }

    #[test]
    fn bad_input_names_the_key() {
        let err = |c: PfabricConfig| c.validate("switch.queue").unwrap_err().to_string();
        let c = PfabricConfig {
            queue_packets: Some(1),
            ..Default::default()
        };
        assert!(err(c).contains("switch.queue.queue_packets"));
        let c = PfabricConfig {
            queue_packets: Some(20),
            queue_bytes: Some(30_000),
            ..Default::default()
        };
        assert!(err(c).contains("switch.queue.queue_bytes"));
        let c: PfabricConfig = toml::from_str("starvation_prevention = false").unwrap();
        assert!(!c.starvation_prevention);
        assert!(toml::from_str::<PfabricConfig>("evict = true").is_err());
    }
}
