//! Strict-priority host NIC queue: payload-less packets (ACK, NACK, PULL,
//! headers) leave before data.
//!
//! Hosts do not trim (A6); a receiver's control packets must not wait
//! behind its own data, as in htsim's priority NIC queue ([C] per A6).
//! With only data packets (CBR) it is a plain drop-tail FIFO.
//!
//! | parameter (`[host.queue] kind = "priority"`, the NIC default) | default | source |
//! |---|---|---|
//! | `queue_packets` (or `queue_bytes`), shared by both classes | 1000 packets ([`DEFAULT_QUEUE_PACKETS`]) | A6 ([C] uses a 1000-packet NIC buffer) |
//! | `ecn_threshold`: CE-mark ECN-capable data above K queued data packets; 0 = off | the switches' K when they mark at a packet threshold (`ecn`, or an `ecn` class), else off | htsim's host egress queue is of the switches' kind; without it a DCTCP sender's window grows unchecked in its own NIC queue when the NIC is the bottleneck |

use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::ConfigError;
use crate::net::{PacketFifo, PacketPool};
use crate::packet::{flags, Packet};
use serde::{Deserialize, Serialize};

/// Default NIC capacity, packets (A6; [C]).
pub const DEFAULT_QUEUE_PACKETS: u32 = 1000;

/// `kind = "priority"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriorityConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Marking threshold K in data packets (default: the switches' K; 0 = off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<u32>,
}

impl PriorityConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for PriorityConfig {
    type Queue = PriorityQueue;
    fn marks_ecn(&self) -> bool {
        self.ecn_threshold.is_some_and(|k| k > 0)
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key).map(drop)
    }
    fn build(&self, env: &QueueEnv) -> PriorityQueue {
        let k = match self.ecn_threshold {
            Some(0) => None,
            Some(k) => Some(k),
            None => env.switch_k,
        };
        PriorityQueue::new(self.cap("").expect("validated")).with_ecn_threshold(k)
    }
    /// The threshold written out as built: the switches' K, or 0 (off).
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        super::resolve_capacity(&mut c.queue_packets, c.queue_bytes, DEFAULT_QUEUE_PACKETS);
        c.ecn_threshold.get_or_insert(env.switch_k.unwrap_or(0));
        c
    }
    /// Control before data; data (the only packets PFC charges) in order.
    fn keeps_priority_order(&self) -> bool {
        true
    }
}

/// Two FIFOs, control first, one shared capacity.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PriorityQueue {
    cap: Capacity,
    /// Both FIFOs keep their packets in the shard's pool (`net/pool.rs`):
    /// a host NIC queues each flow's initial window at once, and a ring
    /// would keep that room for the rest of the run.
    control: PacketFifo,
    data: PacketFifo,
    bytes: u64,
    mark_above: Option<u32>,
}

impl PriorityQueue {
    /// An empty queue.
    pub fn new(cap: Capacity) -> Self {
        PriorityQueue {
            cap,
            control: PacketFifo::default(),
            data: PacketFifo::default(),
            bytes: 0,
            mark_above: None,
        }
    }
    /// Also CE-marks ECN-capable data arriving to more than `k` queued data packets.
    pub fn with_ecn_threshold(mut self, k: Option<u32>) -> Self {
        self.mark_above = k;
        self
    }
}

impl Discipline for PriorityQueue {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if !self.cap.fits(self.len_packets(), self.bytes, pkt.size) {
            cx.dropped(pkt);
            return;
        }
        self.bytes += pkt.size as u64;
        cx.queued(&pkt);
        if pkt.kind.is_control() {
            self.control.push_back(cx.pool, pkt);
            return;
        }
        let mark = self
            .mark_above
            .is_some_and(|k| self.data.len() > k && pkt.has(flags::ECT));
        if mark {
            pkt.flags |= flags::ECN_CE;
            cx.marked(&pkt);
        }
        self.data.push_back(cx.pool, pkt);
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let p = match self.control.pop_front(cx.pool) {
            Some(p) => p,
            None => self.data.pop_front(cx.pool)?,
        };
        self.bytes -= p.size as u64;
        Some(p)
    }
    #[inline]
    fn prefetch_next(&self, pool: &PacketPool) {
        if self.control.is_empty() {
            self.data.prefetch_front(pool);
        } else {
            self.control.prefetch_front(pool);
        }
    }
    #[inline]
    fn prefetch_tail(&self, pool: &PacketPool) {
        self.data.prefetch_push(pool);
    }
    fn len_packets(&self) -> u32 {
        self.control.len() + self.data.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind::{Ack, Pull};
    use crate::queue::testkit::{control, data, Kit};
    use crate::queue::Outcome::*;

    #[test]
    fn control_overtakes_data_and_capacity_is_shared() {
        let (mut k, mut q) = (Kit::new(0), PriorityQueue::new(Capacity::Packets(3)));
        k.fill(&mut q, [data(0, 100), data(1, 100), control(Ack, 2)]);
        assert_eq!(k.offer(&mut q, control(Pull, 3)), [(Dropped, 3)]);
        assert_eq!(k.drain_seqs(&mut q), [2, 0, 1]);
        assert_eq!(q.len_bytes(), 0);
    }

    #[test]
    fn marks_ect_data_above_k_after_queueing_it() {
        let mut q = PriorityQueue::new(Capacity::Packets(10)).with_ecn_threshold(Some(1));
        let mut k = Kit::new(0);
        let ect = |s| {
            let mut p = data(s, 100);
            p.flags |= flags::ECT;
            p
        };
        k.fill(&mut q, [ect(0), ect(1)]);
        assert_eq!(k.offer(&mut q, ect(2)), [(Queued, 2), (Marked, 2)]);
        assert!(!k.reports[0].pkt.has(flags::ECN_CE) && k.reports[1].pkt.has(flags::ECN_CE));
        // Not ECN-capable: queued unmarked.
        assert_eq!(k.offer(&mut q, data(3, 100)), [(Queued, 3)]);
        let ce: Vec<bool> = k
            .drain(&mut q)
            .iter()
            .map(|p| p.has(flags::ECN_CE))
            .collect();
        assert_eq!(ce, [false, false, true, false]);
    }
}
