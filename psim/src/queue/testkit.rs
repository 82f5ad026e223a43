//! Helpers to drive a discipline with scripted packets at explicit times, in
//! the style of smoltcp's socket tests: offer packets, check the reported
//! outcomes (and which packet each names), check the dequeue order.
//!
//! ```ignore
//! let (mut k, mut q) = (Kit::new(0), DropTail::new(Capacity::Packets(1)));
//! assert_eq!(k.offer(&mut q, data(0, 100)), [(Queued, 0)]);
//! assert_eq!(k.offer(&mut q, data(1, 100)), [(Dropped, 1)]);
//! assert_eq!(k.drain_seqs(&mut q), [0]);
//! ```

use super::{Discipline, Outcome, QueueCtx, QueueEnv, Report};
use crate::net::PacketPool;
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use crate::rng::Rng;

/// Link rate the kit's context reports (10 Gb/s, the NDP paper's links).
pub const RATE_BPS: u64 = 10_000_000_000;

/// A build environment for unit tests: a 1436-byte MTU payload (1500 B on
/// the wire), no switch marking threshold.
pub const ENV: QueueEnv = QueueEnv {
    mtu: 1436,
    packet_bytes: 1500,
    switch_k: None,
    switch: None,
    seed: 0,
};

/// A data packet of flow `flow` (see [`data`]).
pub fn flow_data(flow: u64, seq: u64, size: u32) -> Packet {
    let mut p = data(seq, size);
    p.flow = flow;
    p
}

/// `n` flow ids that land in distinct buckets of a default-sized flow
/// table (`flows.rs`), so per-flow tests are not confused by collisions.
pub fn distinct_bucket_flows(n: usize) -> Vec<u64> {
    let t = super::flows::FlowTable::new(super::fq::DEFAULT_BUCKETS);
    let mut seen = std::collections::HashSet::new();
    (0..)
        .filter(|&f| seen.insert(t.bucket_of(f)))
        .take(n)
        .collect()
}

/// A build environment of RoCE-sized packets (1000 B payloads, 1064 B on
/// the wire) at no particular switch, for disciplines whose build reads it.
pub const ROCE_ENV: crate::queue::QueueEnv = crate::queue::QueueEnv {
    mtu: 1000,
    packet_bytes: 1064,
    switch_k: None,
    switch: None,
    seed: 0,
};

/// A scripted driver: the time, a random stream and the last reports.
pub struct Kit {
    /// Time of the next offer or dequeue, ps.
    pub now: u64,
    /// Ingress port given to the discipline.
    pub ingress: Option<u16>,
    rng: Rng,
    /// Reports of the last call.
    pub reports: Vec<Report>,
    /// Where pooled disciplines keep their packets, as a shard's pool.
    pub pool: PacketPool,
    /// Until when each input is busy in the switch's crossbar, ps
    /// (`net/crossbar.rs`); empty: no crossbar.
    pub inputs_busy_until: Vec<u64>,
}

impl Kit {
    /// A kit at time 0 whose random stream is seeded from `seed`.
    pub fn new(seed: u64) -> Kit {
        Kit {
            now: 0,
            ingress: None,
            rng: crate::rng::stream_rng(seed, 0),
            reports: Vec::new(),
            pool: PacketPool::new(),
            inputs_busy_until: Vec::new(),
        }
    }

    /// Sets the time of the next calls.
    pub fn at(&mut self, now: u64) -> &mut Self {
        self.now = now;
        self
    }

    fn cx(&mut self) -> QueueCtx<'_> {
        self.reports.clear();
        QueueCtx::new(
            self.now,
            &mut self.rng,
            RATE_BPS,
            self.ingress,
            &mut self.reports,
            &mut self.pool,
        )
        .crossbar(&self.inputs_busy_until)
    }

    /// Offers `pkt`; returns (outcome, seq of the packet it names) per report.
    pub fn offer<D: Discipline>(&mut self, q: &mut D, pkt: Packet) -> Vec<(Outcome, u64)> {
        q.enqueue(pkt, &mut self.cx());
        self.summary()
    }

    /// Offers each packet, expecting each to be queued unchanged.
    pub fn fill<D: Discipline>(&mut self, q: &mut D, pkts: impl IntoIterator<Item = Packet>) {
        for p in pkts {
            let seq = p.seq;
            assert_eq!(self.offer(q, p), [(Outcome::Queued, seq)], "filling");
        }
    }

    /// Takes the next packet; its dequeue-time reports stay in `reports`.
    pub fn take<D: Discipline>(&mut self, q: &mut D) -> Option<Packet> {
        q.dequeue(&mut self.cx())
    }

    /// Dequeues until empty; the packets in order.
    pub fn drain<D: Discipline>(&mut self, q: &mut D) -> Vec<Packet> {
        std::iter::from_fn(|| self.take(q)).collect()
    }

    /// Dequeues until empty; the sequence numbers in order.
    pub fn drain_seqs<D: Discipline>(&mut self, q: &mut D) -> Vec<u64> {
        self.drain(q).into_iter().map(|p| p.seq).collect()
    }

    /// The last call's reports as (outcome, seq).
    pub fn summary(&self) -> Vec<(Outcome, u64)> {
        self.reports
            .iter()
            .map(|r| (r.outcome, r.pkt.seq))
            .collect()
    }
}

/// A data packet of `size` bytes on the wire.
pub fn data(seq: u64, size: u32) -> Packet {
    crate::packet::test_packet(PacketKind::Data, seq, size)
}

/// A payload-less packet of kind `kind` (header size).
pub fn control(kind: PacketKind, seq: u64) -> Packet {
    crate::packet::test_packet(kind, seq, HEADER_BYTES)
}

/// `pkt` with priority `prio`.
pub fn with_prio(mut pkt: Packet, prio: u8) -> Packet {
    pkt.prio = prio;
    pkt
}
