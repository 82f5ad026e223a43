//! What a shard records for the traces: the glue between the engine's port
//! operations and the packet-event and queue-series recorders.
//!
//! The shard holds an `Option<Box<ShardTrace>>`, None when nothing is traced,
//! so a run without traces pays one predictable branch per port operation.

use std::sync::Arc;

use super::packets::{PacketFields, PacketRow, PacketTracer};
use super::queues::{PortAtEnd, PortSeries, QueueSeries};
use super::spec::{PacketEvent, TraceSpec};
use crate::packet::Packet;
use crate::queue::{Discipline, Outcome, Queue, Report};

/// What a shard recorded, ready to write.
#[derive(Debug, Default)]
pub struct TraceOutput {
    /// Packet rows and the number of rows that passed the filters.
    pub packets: Option<(Vec<PacketRow>, u64)>,
    /// Port series, sorted by (node, port).
    pub queues: Option<Vec<PortSeries>>,
}

/// A shard's trace recorders.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ShardTrace {
    /// Packet events, if traced.
    pub packets: Option<PacketTracer>,
    /// Queue series, if traced.
    pub queues: Option<QueueSeries>,
}

impl ShardTrace {
    /// Recorders for `spec`; `ports` lists the shard's ports as
    /// (node, port, peer). None when `spec` traces nothing.
    pub fn new(
        spec: &TraceSpec,
        ports: impl Iterator<Item = (u32, u16, u32)>,
    ) -> Option<Box<ShardTrace>> {
        if !spec.any() {
            return None;
        }
        let queues = spec
            .queues
            .as_ref()
            .map(|q| QueueSeries::new(q.interval_ps, ports.filter(|&(n, p, _)| q.wants(n, p))));
        Some(Box::new(ShardTrace {
            packets: spec
                .packets
                .as_ref()
                .map(|f| PacketTracer::new(Arc::new(f.clone()))),
            queues,
        }))
    }

    /// The row limit, if this shard's packet trace has passed it.
    pub fn over_limit(&self) -> Option<u64> {
        self.packets
            .as_ref()
            .filter(|t| t.over_limit())
            .map(PacketTracer::max_rows)
    }

    /// Ends recording at `sim_end_ps`; `state` gives a port's final queue
    /// and its pauses still open.
    pub fn finish(self, sim_end_ps: u64, state: impl Fn(u32, u16) -> PortAtEnd) -> TraceOutput {
        TraceOutput {
            packets: self.packets.map(|t| {
                let seen = t.seen();
                (t.into_rows(), seen)
            }),
            queues: self.queues.map(|q| q.finish(sim_end_ps, state)),
        }
    }

    /// Priority `prio` of port `port` of `node` was paused from `start` to `end`.
    #[cold]
    pub fn paused(&mut self, node: u32, port: u16, prio: u8, start: u64, end: u64) {
        if let Some(s) = &mut self.queues {
            s.paused(node, port, prio, start, end);
        }
    }

    /// Just before `q` (port `port` of `node`) is offered or asked for a packet.
    #[inline]
    pub fn before(&mut self, node: u32, port: u16, q: &Queue, now: u64) {
        if let Some(s) = &mut self.queues {
            s.before_change(node, port, now, q.len_bytes(), q.len_packets());
        }
    }

    /// After an enqueue or dequeue of `q` (port `port` of `node`) whose
    /// discipline reported `reports`: one row per report, naming the packet
    /// it happened to, with the queue's length after the operation. One
    /// exception keeps "one admission row per admitted packet": a trim of a
    /// queued packet (NDP's tail trim) is the `trim` row of the arrival it
    /// made room for, so that arrival's own `Queued` report has no row.
    #[inline]
    pub fn reported(&mut self, node: u32, port: u16, now: u64, reports: &[Report], q: &Queue) {
        let Some(t) = &mut self.packets else { return };
        let (b, n) = (q.len_bytes(), q.len_packets());
        let mut made_room = false;
        for r in reports {
            let ev = match r.outcome {
                Outcome::Queued if std::mem::take(&mut made_room) => continue,
                Outcome::TrimmedQueued => {
                    made_room = true;
                    PacketEvent::Trim
                }
                Outcome::Queued => PacketEvent::Enqueue,
                Outcome::Marked => PacketEvent::EcnMark,
                Outcome::Trimmed => PacketEvent::Trim,
                Outcome::Dropped | Outcome::Evicted | Outcome::DequeueDropped => PacketEvent::Drop,
                Outcome::Bounced => PacketEvent::Bounce,
            };
            t.record(ev, now, node, port, &PacketFields::of(&r.pkt), b, n);
        }
    }

    /// A PFC frame left `port` (it bypasses the queue): a `pause` row, and
    /// the link busy until `done` in the queue series.
    pub fn pause_sent(
        &mut self,
        node: u32,
        port: u16,
        now: u64,
        done: u64,
        pkt: &Packet,
        q: &Queue,
    ) {
        if let Some(t) = &mut self.packets {
            let (b, n) = (q.len_bytes(), q.len_packets());
            t.record(
                PacketEvent::Pause,
                now,
                node,
                port,
                &PacketFields::of(pkt),
                b,
                n,
            );
        }
        if let Some(s) = &mut self.queues {
            s.transmitted(node, port, now, done, pkt.size as u64);
        }
    }

    /// A PFC frame from the link's peer was applied to `port` (whose queue
    /// is `q`): a `pause_received` row.
    #[cold]
    pub fn pause_received(&mut self, node: u32, port: u16, now: u64, pkt: &Packet, q: &Queue) {
        if let Some(t) = &mut self.packets {
            let fields = PacketFields::of(pkt);
            let (b, n) = (q.len_bytes(), q.len_packets());
            t.record(PacketEvent::PauseReceived, now, node, port, &fields, b, n);
        }
    }

    /// After `pkt` was dequeued from `q` to be serialised from `now` to `done`.
    #[inline]
    pub fn dequeued(&mut self, node: u32, port: u16, now: u64, done: u64, pkt: &Packet, q: &Queue) {
        if let Some(t) = &mut self.packets {
            t.record(
                PacketEvent::Dequeue,
                now,
                node,
                port,
                &PacketFields::of(pkt),
                q.len_bytes(),
                q.len_packets(),
            );
        }
        if let Some(s) = &mut self.queues {
            s.transmitted(node, port, now, done, pkt.size as u64);
        }
    }
}
