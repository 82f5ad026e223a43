//! FQ-CoDel ([FQCODEL], RFC 8290): flows hashed into buckets, deficit round
//! robin over the backlogged buckets with a *new* list served before the
//! *old* one (a sparse flow goes first), and CoDel ([CODEL]) on each
//! bucket's queue. The FQ-CoDel column of the UPS runs (T41, [TH] §5.3).
//!
//! * Enqueue ([FQCODEL] §4.1): the packet joins its bucket (`flows.rs`,
//!   the flow id standing for the 5-tuple, hashed without perturbation so
//!   runs repeat); a bucket on no list joins the new list with a full
//!   quantum (`drr.rs`).
//! * Dequeue ([FQCODEL] §4.2): the head bucket of the new list, else the
//!   old list; a bucket whose deficit is used up gets a quantum and goes to
//!   the tail of the old list; otherwise its CoDel ([`Codel`], the same
//!   state machine as `kind = "codel"`) gives the packet, reporting any
//!   `DequeueDropped` (or `Marked`) first. A bucket found empty moves from
//!   the new list to the old one, or leaves the old one. CoDel's MTU guard
//!   counts the whole port's bytes, as Linux does.
//! * Overflow: when the packets exceed the limit or the bytes the memory
//!   limit, Linux's `fq_codel_drop`: from the *head* of the bucket with
//!   the most bytes, up to `drop_batch` packets or until half of that
//!   bucket's bytes are gone (the RFC drops one packet from that bucket;
//!   `drop_batch = 1` gives that). The arrival is queued first, so it can
//!   be among them: it is then reported `Dropped`, the others `Evicted`,
//!   and batches repeat until the buffer is within both limits.
//!
//! | parameter (`kind = "fq_codel"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 10240 packets ([`DEFAULT_QUEUE_PACKETS`]) | Linux `sch_fq_codel` limit; UPS's runs use 34,250 |
//! | `memory_limit_bytes` | 32 MiB ([`DEFAULT_MEMORY_LIMIT`]) | Linux `memory_limit` |
//! | `buckets` | 1024 ([`DEFAULT_BUCKETS`]) | [FQCODEL] §5.2; Linux `flows`; UPS 1024 bins |
//! | `quantum_bytes` | one full packet of the traffic: the largest MTU (or MSS) payload of `[[traffic]]`'s protocols + 64 B header (docs/disciplines.md) (1514 B for Ethernet's 1500) | [FQCODEL] §5.2 ("the interface MTU"); Linux `psched_mtu` |
//! | `target_us` | 5000 µs | [CODEL] §4.3; UPS runs (target 0.005 s) |
//! | `interval_us` | 100000 µs | [CODEL] §4.2 |
//! | `mtu_bytes` | the traffic's full packet | [CODEL] §5 `MAXPACKET`; Linux device MTU |
//! | `ecn` | `true` | Linux `fq_codel` default (ECN on) |
//! | `drop_batch` | 64 ([`DEFAULT_DROP_BATCH`]) | Linux `drop_batch_size` |

use super::codel::{self, Codel, CodelParams, CodelSource, DEFAULT_INTERVAL_PS, DEFAULT_TARGET_PS};
use super::drr::DrrLists;
use super::flows::FlowTable;
use super::fq::{quantum, validate_flows, DEFAULT_BUCKETS};
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use crate::transport::config::Micros;
use serde::{Deserialize, Serialize};

/// Default packet limit (Linux `sch_fq_codel`).
pub const DEFAULT_QUEUE_PACKETS: u32 = 10_240;
/// Default memory limit, bytes: 32 MiB (Linux `sch_fq_codel`).
pub const DEFAULT_MEMORY_LIMIT: u64 = 32 << 20;
/// Most packets one overflow drops at once (Linux `drop_batch_size`).
pub const DEFAULT_DROP_BATCH: u32 = 64;

/// `kind = "fq_codel"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Packet limit (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Byte limit, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Memory limit, bytes.
    pub memory_limit_bytes: u64,
    /// Flow buckets (default [`DEFAULT_BUCKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
    /// DRR quantum, bytes (default: the scenario's MTU payload plus a header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum_bytes: Option<u64>,
    /// CoDel target, µs.
    pub target_us: Micros,
    /// CoDel interval, µs.
    pub interval_us: Micros,
    /// CoDel's MTU guard, bytes (default: the traffic's full packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu_bytes: Option<u64>,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Most packets dropped per overflow.
    pub drop_batch: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            queue_packets: None,
            queue_bytes: None,
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT,
            buckets: None,
            quantum_bytes: None,
            target_us: Micros::from_ps(DEFAULT_TARGET_PS),
            interval_us: Micros::from_ps(DEFAULT_INTERVAL_PS),
            mtu_bytes: None,
            ecn: true,
            drop_batch: DEFAULT_DROP_BATCH,
        }
    }
}

impl FqCodelConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for FqCodelConfig {
    type Queue = FqCodelQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c.buckets.get_or_insert(DEFAULT_BUCKETS);
        c.quantum_bytes = Some(quantum(env, self.quantum_bytes));
        let p = codel::params(env, c.target_us, c.interval_us, c.mtu_bytes, c.ecn);
        c.mtu_bytes = Some(p.mtu);
        c
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key)?;
        validate_flows(key, self.quantum_bytes, self.buckets)?;
        codel::validate_params(key, self.target_us, self.interval_us, self.mtu_bytes)?;
        if self.memory_limit_bytes == 0 {
            return Err(bad(
                &format!("{key}.memory_limit_bytes"),
                0,
                "must be at least 1",
            ));
        }
        if self.drop_batch == 0 {
            return Err(bad(&format!("{key}.drop_batch"), 0, "must be at least 1"));
        }
        Ok(())
    }
    fn build(&self, env: &QueueEnv) -> FqCodelQueue {
        let n = self.buckets.unwrap_or(DEFAULT_BUCKETS);
        FqCodelQueue {
            cap: self.cap("").expect("validated"),
            memory_limit: self.memory_limit_bytes,
            drop_batch: self.drop_batch,
            params: codel::params(
                env,
                self.target_us,
                self.interval_us,
                self.mtu_bytes,
                self.ecn,
            ),
            table: FlowTable::new(n),
            drr: DrrLists::new(n, quantum(env, self.quantum_bytes), true),
            codel: Vec::new(),
        }
    }
}

/// One bucket's queue as its CoDel reads it; the MTU guard sees the port's bytes.
struct Bucket<'a> {
    table: &'a mut FlowTable,
    b: u32,
}

impl CodelSource for Bucket<'_> {
    #[inline]
    fn pop(&mut self) -> Option<(Packet, u64)> {
        self.table.pop_front(self.b).map(|e| (e.pkt, e.stamp))
    }
    #[inline]
    fn bytes(&self) -> u64 {
        self.table.bytes()
    }
}

/// FQ-CoDel.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FqCodelQueue {
    cap: Capacity,
    memory_limit: u64,
    drop_batch: u32,
    params: CodelParams,
    table: FlowTable,
    drr: DrrLists,
    /// Each bucket's CoDel (empty until the first packet).
    codel: Vec<Codel>,
}

impl FqCodelQueue {
    #[inline]
    fn over_limit(&self) -> bool {
        let (pkts, bytes) = (self.table.pkts(), self.table.bytes());
        let over = match self.cap {
            Capacity::Packets(n) => pkts > n,
            Capacity::Bytes(b) => bytes > b,
        };
        over || bytes > self.memory_limit
    }
}

impl FqCodelQueue {
    /// The bucket that `flow` hashes to.
    #[inline]
    pub(super) fn bucket_of(&self, flow: u64) -> u32 {
        self.table.bucket_of(flow)
    }

    /// How many buckets.
    #[inline]
    pub(super) fn buckets(&self) -> u32 {
        self.table.buckets()
    }

    /// The same queue running Edge-CoDel's CoDel ([`CodelParams::edge`]).
    pub(super) fn edge(mut self) -> Self {
        self.params.edge = true;
        self
    }

    /// Re-initialises bucket `b`'s CoDel (Edge-CoDel's refresh, `edge_codel.rs`).
    #[inline]
    pub(super) fn refresh(&mut self, b: u32) {
        if let Some(c) = self.codel.get_mut(b as usize) {
            *c = Codel::default();
        }
    }

    /// Enqueue with `stamp` as the packet's queueing start: CoDel's sojourn
    /// at dequeue is `now − stamp` (`fq_codel`: the arrival time;
    /// `edge_codel`: the arrival time less the queueing met upstream).
    pub(super) fn enqueue_stamped(&mut self, pkt: Packet, stamp: u64, cx: &mut QueueCtx<'_>) {
        if self.codel.is_empty() {
            self.codel = vec![Codel::default(); self.table.buckets() as usize];
        }
        let b = self.table.bucket_of(pkt.flow);
        // Packets ahead of the arrival in its bucket: the arrival is the
        // one a head drop takes when none are left.
        let mut ahead = self.table.pkts_in(b);
        let arrival = pkt.clone();
        self.table.push(b, pkt, stamp, 0);
        self.drr.activate(b);
        let mut arrival_dropped = false;
        while self.over_limit() {
            let fat = self.table.longest().expect("over the limit, so backlogged");
            let threshold = self.table.bytes_in(fat) / 2;
            let (mut n, mut bytes) = (0, 0);
            while n < self.drop_batch && bytes < threshold || n == 0 {
                let e = self.table.pop_front(fat).expect("backlogged");
                bytes += e.pkt.size as u64;
                n += 1;
                if fat == b && ahead == 0 {
                    arrival_dropped = true;
                    break;
                }
                if fat == b {
                    ahead -= 1;
                }
                cx.evicted(e.pkt);
            }
            if arrival_dropped {
                break;
            }
        }
        if arrival_dropped {
            cx.dropped(arrival);
        } else {
            cx.queued(&arrival);
        }
    }
}

impl Discipline for FqCodelQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        self.enqueue_stamped(pkt, cx.now, cx);
    }

    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let FqCodelQueue {
            params,
            table,
            drr,
            codel,
            ..
        } = self;
        drr.next(|b| {
            let mut src = Bucket { table, b };
            codel[b as usize].dequeue(params, &mut src, cx)
        })
    }

    fn len_packets(&self) -> u32 {
        self.table.pkts()
    }
    fn len_bytes(&self) -> u64 {
        self.table.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::flags;
    use crate::queue::testkit::{distinct_bucket_flows as flows, flow_data as pkt, Kit, ENV};
    use crate::queue::Outcome::*;
    use crate::units::PS_PER_US;

    const MS: u64 = 1_000 * PS_PER_US;
    fn queue(cfg: FqCodelConfig) -> FqCodelQueue {
        cfg.validate("q").unwrap();
        cfg.build(&ENV)
    }

    /// A bulk flow has a backlog and has used its first quantum; a sparse
    /// flow's single packet then arrives: it joins the new list and goes
    /// before the bulk flow's next packet. Found empty on the new list, it
    /// moves to the old list, so its next packet does not jump the queue.
    #[test]
    fn a_sparse_flow_goes_first() {
        let f = flows(2);
        let (mut k, mut q) = (Kit::new(0), queue(FqCodelConfig::default()));
        k.fill(&mut q, (0..10).map(|i| pkt(f[0], i, 1500)));
        assert_eq!(k.take(&mut q).unwrap().seq, 0);
        k.fill(&mut q, [pkt(f[1], 100, 100)]);
        assert!(q.drr.on_new_list(q.table.bucket_of(f[1])));
        assert_eq!(k.take(&mut q).unwrap().seq, 100);
        assert_eq!(k.take(&mut q).unwrap().seq, 1);
        k.fill(&mut q, [pkt(f[1], 101, 100)]);
        assert!(!q.drr.on_new_list(q.table.bucket_of(f[1])));
        assert_eq!(k.take(&mut q).unwrap().seq, 101);
        assert_eq!(k.take(&mut q).unwrap().seq, 2);
    }

    /// Over the packet limit: the bucket with the most bytes loses packets
    /// from its head, until half its bytes are gone (here 3 of 5 1000-B
    /// packets: 3000 ≥ 2500), reported `Evicted` before the arrival's `Queued`.
    #[test]
    fn overflow_drops_a_batch_from_the_head_of_the_fattest_flow() {
        let f = flows(3);
        let cfg = FqCodelConfig {
            queue_packets: Some(8),
            ..Default::default()
        };
        let (mut k, mut q) = (Kit::new(0), queue(cfg));
        k.fill(&mut q, (0..5).map(|i| pkt(f[0], i, 1000)));
        k.fill(&mut q, (10..13).map(|i| pkt(f[1], i, 1000)));
        assert_eq!(
            k.offer(&mut q, pkt(f[2], 20, 1000)),
            [(Evicted, 0), (Evicted, 1), (Evicted, 2), (Queued, 20)]
        );
        assert_eq!(q.len_packets(), 6);
        // The RFC's single drop: one packet from the head.
        let cfg = FqCodelConfig {
            queue_packets: Some(2),
            drop_batch: 1,
            ..Default::default()
        };
        let (mut k, mut q) = (Kit::new(0), queue(cfg));
        k.fill(&mut q, (0..2).map(|i| pkt(f[0], i, 1000)));
        assert_eq!(
            k.offer(&mut q, pkt(f[1], 10, 100)),
            [(Evicted, 0), (Queued, 10)]
        );
    }

    /// The arrival is the only packet of the fattest bucket: it is the one
    /// dropped, reported `Dropped` (not queued, then evicted).
    #[test]
    fn an_arrival_in_the_fattest_flow_can_be_the_one_dropped() {
        let f = flows(2);
        let cfg = FqCodelConfig {
            queue_packets: Some(2),
            ..Default::default()
        };
        let (mut k, mut q) = (Kit::new(0), queue(cfg));
        k.fill(&mut q, (0..2).map(|i| pkt(f[0], i, 100)));
        assert_eq!(k.offer(&mut q, pkt(f[1], 10, 1500)), [(Dropped, 10)]);
        assert_eq!(q.len_packets(), 2);
        assert_eq!(k.drain_seqs(&mut q), [0, 1]);
    }

    /// Each bucket runs its own CoDel: a standing queue in one bucket is
    /// dropped at dequeue (reported by name) while a fresh bucket is not.
    #[test]
    fn codel_runs_per_bucket() {
        let f = flows(2);
        let cfg = FqCodelConfig {
            ecn: false,
            ..Default::default()
        };
        let (mut k, mut q) = (Kit::new(0), queue(cfg));
        k.at(0).fill(&mut q, (0..100).map(|i| pkt(f[0], i, 1500)));
        assert_eq!(k.at(5 * MS).take(&mut q).unwrap().seq, 0);
        k.at(105 * MS).fill(&mut q, [pkt(f[1], 200, 1500)]);
        // The new bucket first: its packet waited 0.
        assert_eq!(k.take(&mut q).unwrap().seq, 200);
        assert!(k.reports.is_empty());
        // Bulk: an interval above target: head 1 dropped, 2 sent.
        assert_eq!(k.take(&mut q).unwrap().seq, 2);
        assert_eq!(k.summary(), [(DequeueDropped, 1)]);
        let bulk = q.table.bucket_of(f[0]) as usize;
        assert!(q.codel[bulk].dropping());
        assert!(!q.codel[q.table.bucket_of(f[1]) as usize].dropping());
    }

    #[test]
    fn ecn_by_default_marks_ect_packets() {
        let f = flows(1);
        let (mut k, mut q) = (Kit::new(0), queue(FqCodelConfig::default()));
        let ect = |i| {
            let mut p = pkt(f[0], i, 1500);
            p.flags |= flags::ECT;
            p
        };
        k.at(0).fill(&mut q, (0..10).map(ect));
        k.at(5 * MS).take(&mut q);
        let p = k.at(105 * MS).take(&mut q).unwrap();
        assert!(p.has(flags::ECN_CE));
        assert_eq!(k.summary(), [(Marked, 1)]);
    }

    /// In a run, CoDel's drops at dequeue reach the port counters as drops
    /// of queued packets, and every packet is accounted for: a TCP incast
    /// over FQ-CoDel with a 2 µs target (a datacenter setting) drops at
    /// dequeue, yet the flows finish. The same run with ECN on marks instead.
    #[test]
    fn dequeue_drops_and_marks_reach_the_port_in_a_run() {
        use crate::config::Scenario;
        use crate::engine::{SimOptions, Simulation};
        let run = |proto: &str, ecn: bool| {
            let text = format!(
                "seed = 1\nstop_us = 20000\n[topology]\nkind = \"fattree\"\nk = 4\n\
                 [switch.queue]\nkind = \"fq_codel\"\ntarget_us = 2\ninterval_us = 20\necn = {ecn}\n\
                 [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 300000\n"
            );
            let scn = Scenario::from_str(&text, std::path::Path::new("t.toml"), &[]).unwrap();
            let opts = SimOptions {
                shards: 2,
                threads: 1,
            };
            let s = Simulation::new(&scn, opts)
                .unwrap()
                .run(&mut |_| {})
                .unwrap();
            assert!(s.conserved(), "{s:?}");
            assert_eq!(
                s.ports.enqueued,
                s.ports.dequeued + s.queued + s.ports.discarded
            );
            s
        };
        let s = run("tcp", false);
        assert!(s.ports.discarded > 0, "{s:?}");
        assert_eq!(s.ports.marked, 0);
        let s = run("dctcp", true);
        assert!(s.ports.marked > 0, "{s:?}");
    }

    #[test]
    fn validation_names_the_key() {
        let mut cfg = FqCodelConfig {
            drop_batch: 0,
            ..Default::default()
        };
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.drop_batch = 0"), "{e}");
        cfg.drop_batch = 1;
        cfg.target_us = Micros::from_us(200_000.0);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.target_us"), "{e}");
        cfg.target_us = Micros::from_us(5_000.0);
        cfg.quantum_bytes = Some(0);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.quantum_bytes = 0"), "{e}");
        cfg.quantum_bytes = None;
        cfg.memory_limit_bytes = 0;
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.memory_limit_bytes = 0"), "{e}");
    }
}
