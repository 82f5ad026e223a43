//! Fair queueing per flow: UPS's FQ ([TH] §1.13 / §5, [UPSP]), one of the
//! schedulers LSTF replays, and the FQ baseline of the fairness runs (T40,
//! T41).
//!
//! Flows are told apart by the packet's flow id (standing for a real
//! switch's 5-tuple) hashed into `buckets` queues (`flows.rs`: bounded
//! memory, no per-flow timer; flows sharing a bucket share its queue, as
//! in UPS's sfqCoDel with 1024 bins). Two schedulers:
//! * `drr`: deficit round robin ([DRR] §3) over the backlogged buckets,
//!   `quantum_bytes` per round, in FQ-CoDel's check-before-send form
//!   (`drr.rs`);
//! * `stfq`: start-time fair queueing ([STFQ] §2): an arrival of `L` bytes
//!   to a bucket gets the start tag `S = max(v, F)`, where `F` is the
//!   finish tag `S + L` of the bucket's previous arrival, and the packet
//!   with the smallest start tag is served first (ties: the earlier
//!   arrival). The virtual time `v` is the start tag of the packet in
//!   service; when the port has been idle (queue empty and the last packet
//!   fully sent), `v` is the largest finish tag served so far. Weights are
//!   equal. Tags are in bytes.
//!
//! When the buffer is full, `overflow = "longest"` (the default) drops the
//! last packet of the bucket with the most bytes, counting the arrival in
//! its own bucket: if that is the arrival's bucket (or ties with it), the
//! arrival is dropped (`Dropped`), otherwise the other bucket's last packet
//! is pushed out (`Evicted`) until the arrival fits. That is what UPS's FQ
//! did (ns-2 sfqCoDel drops the tail of its longest bin; it counts in
//! packets, which is the same for UPS's equal 1460-byte packets).
//! `overflow = "tail"` drops the arrival. An evicted packet's bucket gets
//! back its STFQ finish tag (the start tag of the evicted packet), so a
//! flow is not charged for what it did not send.
//!
//! UPS's replay runs use buffers that never fill (10⁸ packets) and a
//! packet-by-packet round robin (sfqCoDel's quantum 0); with equal
//! packets, `quantum_bytes` = the packet size gives that order.
//!
//! | parameter (`kind = "fq"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`DEFAULT_QUEUE_PACKETS`]) | as `droptail`; UPS's replay runs: 10⁸, its TCP runs 3425 or 34,250 |
//! | `scheduler` | `"drr"` (or `"stfq"`) | [DRR], [STFQ] |
//! | `quantum_bytes` (drr) | one full packet of the traffic: the largest MTU (or MSS) payload of `[[traffic]]`'s protocols + 64 B header (docs/disciplines.md) | [DRR] §3 (a quantum of at least one maximum packet keeps the work O(1) per packet) |
//! | `buckets` | 1024 ([`DEFAULT_BUCKETS`]) | UPS's sfqCoDel `maxbins` 1024; [FQCODEL] §5.2 |
//! | `overflow` | `"longest"` (or `"tail"`) | UPS's sfqCoDel: drop from the longest bin |

use super::drr::DrrLists;
use super::flows::FlowTable;
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use crate::units::tx_time_ps;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Default capacity, packets (as drop-tail's).
pub const DEFAULT_QUEUE_PACKETS: u32 = super::droptail::DEFAULT_QUEUE_PACKETS;
/// Default number of flow buckets (UPS's sfqCoDel, [FQCODEL] §5.2).
pub const DEFAULT_BUCKETS: u32 = 1024;

/// How backlogged flows share the link.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FqScheduler {
    /// Deficit round robin.
    #[default]
    Drr,
    /// Start-time fair queueing.
    Stfq,
}

/// What to drop when the buffer is full.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// The last packet of the flow with the most bytes.
    #[default]
    Longest,
    /// The arrival.
    Tail,
}

/// `kind = "fq"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Scheduler across flows.
    pub scheduler: FqScheduler,
    /// DRR quantum, bytes (default: the scenario's MTU payload plus a header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum_bytes: Option<u64>,
    /// Flow buckets (default [`DEFAULT_BUCKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
    /// Overflow policy.
    pub overflow: Overflow,
}

impl FqConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

/// Checks `quantum_bytes` and `buckets` (shared with `fq_codel`).
pub(super) fn validate_flows(
    key: &str,
    quantum: Option<u64>,
    buckets: Option<u32>,
) -> Result<(), ConfigError> {
    if quantum == Some(0) {
        return Err(bad(
            &format!("{key}.quantum_bytes"),
            0,
            "must be at least 1",
        ));
    }
    if buckets == Some(0) {
        return Err(bad(&format!("{key}.buckets"), 0, "must be at least 1"));
    }
    Ok(())
}

/// The quantum: as given, else the traffic's full packet.
pub(super) fn quantum(env: &QueueEnv, quantum: Option<u64>) -> u64 {
    quantum.unwrap_or(env.packet_bytes)
}

impl DisciplineConfig for FqConfig {
    type Queue = FqQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c.buckets.get_or_insert(DEFAULT_BUCKETS);
        if self.scheduler != FqScheduler::Stfq {
            c.quantum_bytes = Some(quantum(env, self.quantum_bytes));
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key)?;
        if self.scheduler == FqScheduler::Stfq && self.quantum_bytes.is_some() {
            let msg = "only with scheduler = \"drr\"";
            return Err(bad(&format!("{key}.quantum_bytes"), "set", msg));
        }
        validate_flows(key, self.quantum_bytes, self.buckets)
    }
    fn build(&self, env: &QueueEnv) -> FqQueue {
        let n = self.buckets.unwrap_or(DEFAULT_BUCKETS);
        let sched = match self.scheduler {
            FqScheduler::Drr => {
                Sched::Drr(DrrLists::new(n, quantum(env, self.quantum_bytes), false))
            }
            FqScheduler::Stfq => Sched::Stfq(Stfq::default()),
        };
        FqQueue {
            cap: self.cap("").expect("validated"),
            overflow: self.overflow,
            table: FlowTable::new(n),
            sched,
        }
    }
}

/// Start-time fair queueing's state.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Stfq {
    /// One entry per backlogged bucket: (its head's start tag, arrival
    /// number, bucket); entries whose head was evicted are skipped.
    heads: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Finish tag of each bucket's last arrival (empty until first use).
    finish: Vec<u64>,
    /// Virtual time: the start tag of the packet in service.
    v: u64,
    /// Largest finish tag served.
    max_finish: u64,
    /// When the packet in service is fully sent.
    busy_until: u64,
    /// Arrivals so far (the tie-break).
    arrivals: u64,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
enum Sched {
    Drr(DrrLists),
    Stfq(Stfq),
}

/// Per-flow fair queueing.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FqQueue {
    cap: Capacity,
    overflow: Overflow,
    table: FlowTable,
    sched: Sched,
}

impl FqQueue {
    /// Makes room for `size` more bytes in bucket `b`; false if the arrival
    /// is to be dropped instead.
    fn make_room(&mut self, b: u32, size: u32, cx: &mut QueueCtx<'_>) -> bool {
        while !self.cap.fits(self.table.pkts(), self.table.bytes(), size) {
            let victim = match (self.overflow, self.table.longest()) {
                (Overflow::Longest, Some(v)) if v != b => v,
                _ => return false,
            };
            if self.table.bytes_in(victim) <= self.table.bytes_in(b) + size as u64 {
                return false;
            }
            let e = self.table.pop_back(victim).expect("backlogged");
            if let Sched::Stfq(s) = &mut self.sched {
                s.finish[victim as usize] = e.tag;
            }
            cx.evicted(e.pkt);
        }
        true
    }
}

impl Discipline for FqQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let b = self.table.bucket_of(pkt.flow);
        if !self.make_room(b, pkt.size, cx) {
            cx.dropped(pkt);
            return;
        }
        cx.queued(&pkt);
        match &mut self.sched {
            Sched::Drr(d) => {
                d.activate(b);
                self.table.push(b, pkt, 0, 0);
            }
            Sched::Stfq(s) => {
                if s.finish.is_empty() {
                    s.finish = vec![0; self.table.buckets() as usize];
                }
                if self.table.pkts() == 0 && cx.now >= s.busy_until {
                    s.v = s.max_finish;
                }
                let start = s.v.max(s.finish[b as usize]);
                s.finish[b as usize] = start + pkt.size as u64;
                s.arrivals += 1;
                if self.table.pkts_in(b) == 0 {
                    s.heads.push(Reverse((start, s.arrivals, b)));
                }
                self.table.push(b, pkt, s.arrivals, start);
            }
        }
    }

    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let table = &mut self.table;
        match &mut self.sched {
            Sched::Drr(d) => d.next(|b| table.pop_front(b).map(|e| e.pkt)),
            Sched::Stfq(s) => loop {
                let Reverse((start, arrival, b)) = s.heads.pop()?;
                if table.front(b).map(|(_, a, _)| a) != Some(arrival) {
                    continue; // its head was evicted
                }
                let e = table.pop_front(b).expect("head");
                s.v = start;
                s.max_finish = s.max_finish.max(start + e.pkt.size as u64);
                s.busy_until = cx.now + tx_time_ps(e.pkt.size as u64, cx.rate_bps);
                if let Some((_, a, tag)) = table.front(b) {
                    s.heads.push(Reverse((tag, a, b)));
                }
                return Some(e.pkt);
            },
        }
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
    use crate::queue::testkit::{distinct_bucket_flows as flows, flow_data as pkt, Kit, ENV};
    use crate::queue::Outcome::*;

    fn fq(scheduler: FqScheduler, cap: u32, quantum: Option<u64>) -> FqQueue {
        let cfg = FqConfig {
            queue_packets: Some(cap),
            scheduler,
            quantum_bytes: quantum,
            ..Default::default()
        };
        cfg.validate("q").unwrap();
        cfg.build(&ENV)
    }

    /// DRR, quantum 1500 B. Flow A is backlogged with 1500-B packets, flow
    /// B with 500-B packets, flow C with 1000-B packets, all offered at
    /// once in the order A, B, C. Each round every flow sends until its
    /// deficit is used up: A one packet (1500), B three (1500), C two
    /// (2000: it overdraws by 500, and gets only 1000 next round). Over 6
    /// rounds: A 6 × 1500 = 9000 B, B 18 × 500 = 9000 B, C 2000 + 1000 +
    /// 2000 + 1000 + 2000 + 1000 = 9000 B.
    #[test]
    fn drr_shares_bytes_equally_over_scripted_backlogs() {
        let f = flows(3);
        let (mut k, mut q) = (Kit::new(0), fq(FqScheduler::Drr, 1000, Some(1500)));
        for i in 0..20 {
            k.fill(&mut q, [pkt(f[0], i, 1500)]);
        }
        for i in 0..60 {
            k.fill(&mut q, [pkt(f[1], 100 + i, 500)]);
        }
        for i in 0..30 {
            k.fill(&mut q, [pkt(f[2], 200 + i, 1000)]);
        }
        // One round: A1, B3, C2.
        let round: Vec<u64> = (0..6).map(|_| k.take(&mut q).unwrap().seq).collect();
        assert_eq!(round, [0, 100, 101, 102, 200, 201]);
        // Five more rounds, counting bytes per flow from the first round's.
        let mut bytes = [1500u64, 1500, 2000];
        while bytes[0] < 9000 || bytes[1] < 9000 || bytes[2] < 9000 {
            let p = k.take(&mut q).unwrap();
            let i = f.iter().position(|&x| x == p.flow).unwrap();
            bytes[i] += p.size as u64;
            assert!(bytes[i] <= 9000, "{bytes:?}");
        }
        assert_eq!(bytes, [9000, 9000, 9000]);
    }

    /// An idle flow leaves the round: the others share the whole link.
    #[test]
    fn drr_gives_an_idle_flows_share_to_the_others() {
        let f = flows(2);
        let (mut k, mut q) = (Kit::new(0), fq(FqScheduler::Drr, 100, Some(1500)));
        k.fill(&mut q, (0..4).map(|i| pkt(f[0], i, 1500)));
        assert_eq!(k.drain_seqs(&mut q), [0, 1, 2, 3]);
        k.fill(&mut q, (10..12).map(|i| pkt(f[1], i, 1500)));
        k.fill(&mut q, (4..6).map(|i| pkt(f[0], i, 1500)));
        assert_eq!(k.drain_seqs(&mut q), [10, 4, 11, 5]);
    }

    /// STFQ, worked by hand (tags in bytes, v = 0 at start, all offered at
    /// time 0 before any dequeue):
    /// A1 1000 B: S 0, F 1000;   A2 1000 B: S 1000, F 2000;
    /// B1  500 B: S 0, F 500;    B2  500 B: S 500, F 1000;  B3 500 B: S 1000, F 1500;
    /// C1 2000 B: S 0, F 2000;   C2 2000 B: S 2000, F 4000.
    /// Order by (S, arrival): A1 (0), B1 (0), C1 (0), B2 (500), A2 (1000),
    /// B3 (1000), C2 (2000). Then D1 arrives while C2 is in service
    /// (v = 2000) and a new flow E arrives with it: both start at 2000,
    /// after C3 (S 4000) would.
    #[test]
    fn stfq_serves_the_smallest_start_tag_first() {
        let f = flows(5);
        let (mut k, mut q) = (Kit::new(0), fq(FqScheduler::Stfq, 100, None));
        k.fill(
            &mut q,
            [
                pkt(f[0], 1, 1000),
                pkt(f[0], 2, 1000),
                pkt(f[1], 11, 500),
                pkt(f[1], 12, 500),
                pkt(f[1], 13, 500),
                pkt(f[2], 21, 2000),
                pkt(f[2], 22, 2000),
            ],
        );
        let first: Vec<u64> = (0..7).map(|_| k.take(&mut q).unwrap().seq).collect();
        assert_eq!(first, [1, 11, 21, 12, 2, 13, 22]);
        // C2 (S 2000) is in service until 2000 B at 10 Gb/s = 1.6 µs.
        k.at(1_000_000);
        k.fill(
            &mut q,
            [pkt(f[2], 23, 2000), pkt(f[3], 31, 100), pkt(f[4], 41, 100)],
        );
        assert_eq!(k.drain_seqs(&mut q), [31, 41, 23]);
        // Idle (queue empty, last packet sent): v jumps to the largest
        // finish tag served (C3's 6000), and every flow starts there: A3
        // and C4 both get S 6000 and go in arrival order.
        k.at(1_000_000_000);
        k.fill(&mut q, [pkt(f[0], 3, 100), pkt(f[2], 24, 100)]);
        assert_eq!(k.drain_seqs(&mut q), [3, 24]);
        let Sched::Stfq(s) = &q.sched else { panic!() };
        assert_eq!(s.v, 6000);
    }

    /// Full buffer: the longest flow's last packet makes room; an arrival
    /// to the longest flow (or one as long) is dropped itself.
    #[test]
    fn overflow_drops_from_the_longest_flow() {
        let f = flows(3);
        for sched in [FqScheduler::Drr, FqScheduler::Stfq] {
            let (mut k, mut q) = (Kit::new(0), fq(sched, 6, None));
            k.fill(&mut q, (0..4).map(|i| pkt(f[0], i, 1000)));
            k.fill(&mut q, (10..12).map(|i| pkt(f[1], i, 1000)));
            assert_eq!(
                k.offer(&mut q, pkt(f[2], 20, 1000)),
                [(Evicted, 3), (Queued, 20)]
            );
            assert_eq!(k.offer(&mut q, pkt(f[0], 4, 1000)), [(Dropped, 4)]);
            // f1 with the arrival (3000 B) is as long as f0: the arrival goes.
            assert_eq!(k.offer(&mut q, pkt(f[1], 12, 1000)), [(Dropped, 12)]);
            let mut out = k.drain_seqs(&mut q);
            out.sort();
            assert_eq!(out, [0, 1, 2, 10, 11, 20]);
        }
    }

    #[test]
    fn tail_overflow_drops_the_arrival() {
        let f = flows(2);
        let mut q = FqConfig {
            queue_packets: Some(2),
            overflow: Overflow::Tail,
            ..Default::default()
        }
        .build(&ENV);
        let mut k = Kit::new(0);
        k.fill(&mut q, (0..2).map(|i| pkt(f[0], i, 1000)));
        assert_eq!(k.offer(&mut q, pkt(f[1], 10, 100)), [(Dropped, 10)]);
    }

    /// An evicted STFQ packet is not charged: its flow's next arrival
    /// starts where the evicted one did.
    #[test]
    fn stfq_eviction_gives_back_the_finish_tag() {
        let f = flows(2);
        let (mut k, mut q) = (Kit::new(0), fq(FqScheduler::Stfq, 3, None));
        k.fill(&mut q, (0..3).map(|i| pkt(f[0], i, 1000)));
        assert_eq!(
            k.offer(&mut q, pkt(f[1], 10, 1000)),
            [(Evicted, 2), (Queued, 10)]
        );
        let Sched::Stfq(s) = &q.sched else { panic!() };
        assert_eq!(s.finish[q.table.bucket_of(f[0]) as usize], 2000);
    }

    #[test]
    fn validation_names_the_key() {
        let mut cfg = FqConfig {
            quantum_bytes: Some(0),
            ..Default::default()
        };
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.quantum_bytes = 0"), "{e}");
        cfg.quantum_bytes = Some(1500);
        cfg.scheduler = FqScheduler::Stfq;
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.quantum_bytes"), "{e}");
        cfg.quantum_bytes = None;
        cfg.buckets = Some(0);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.buckets = 0"), "{e}");
    }
}
