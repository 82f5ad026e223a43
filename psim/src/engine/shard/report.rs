//! What a shard reports at the end of a run, and to stall reports: packets
//! held, port and flow counters, pacer statistics.

use super::{FlowRows, Shard, SourceRow};
use crate::net::tofino::Chip;
use crate::queue::Discipline;
use crate::transport::Transport;

impl Shard {
    /// Ports held by a PFC pause with packets waiting: (entity, port, the
    /// neighbour that paused it, packets waiting). For stall reports.
    pub fn paused_ports(&self) -> Vec<(u32, u16, u32, u32)> {
        let mut v = Vec::new();
        for n in &self.nodes {
            for (i, p) in n.ports.iter().enumerate() {
                let held = p.pause.as_deref().is_some_and(|st| st.mask != 0);
                if held && p.queue.len_packets() > 0 {
                    v.push((n.id, i as u16, p.link.peer, p.queue.len_packets()));
                }
            }
        }
        v
    }

    /// Packets waiting in queues (and on Tofino recirculation lines).
    pub fn queued_packets(&self) -> u64 {
        let chips: u64 = self
            .nodes
            .iter()
            .filter_map(|n| n.tofino.as_deref())
            .map(Chip::held_packets)
            .sum();
        self.nodes
            .iter()
            .flat_map(|n| &n.ports)
            .map(|p| p.queue.len_packets() as u64)
            .sum::<u64>()
            + chips
    }

    /// Packets on wires (including those in the outboxes).
    pub fn in_flight_packets(&self) -> u64 {
        self.inbound.packets() + self.outbox.iter().map(|o| o.len() as u64).sum::<u64>()
    }

    /// Port counters summed over the shard at `now` (a pause still open
    /// counts up to `now`).
    pub fn port_totals(&self, now: u64) -> crate::net::PortCounters {
        let mut t = crate::net::PortCounters::default();
        for p in self.nodes.iter().flat_map(|n| &n.ports) {
            t += p.totals(now);
        }
        t
    }

    /// Paused time per priority summed over the shard's ports at `now`.
    pub fn paused_by_priority(&self, now: u64) -> [u64; 8] {
        let mut t = [0u64; 8];
        for p in self.nodes.iter().flat_map(|n| &n.ports) {
            for (a, b) in t.iter_mut().zip(p.paused_by_priority(now)) {
                *a += b;
            }
        }
        t
    }

    /// Source rows (flows that started here), sink stats (flows received
    /// here) and the sender counters of RDMA Reads served here (a read's
    /// responder: sender counters on a slot that did not start the flow),
    /// each of the last two with the host that started the flow.
    pub fn flow_rows(&self) -> FlowRows {
        let mut rows = FlowRows::default();
        for host in self.nodes.iter().filter_map(|n| n.host.as_deref()) {
            for s in &host.slots {
                match (&s.info, s.ep.source_stats()) {
                    (Some(info), Some(stats)) => rows.sources.push(SourceRow {
                        info: (**info).clone(),
                        proto: s.proto,
                        stats: stats.clone(),
                    }),
                    (None, Some(stats)) => rows.served.push((s.flow, s.peers.0, stats.clone())),
                    _ => {}
                }
                if let Some(st) = s.ep.sink_stats() {
                    rows.sinks.push((s.flow, s.peers.0, st.clone()));
                }
            }
        }
        rows
    }

    /// Pull-pacer statistics of every host that sent a PULL: (host, stats).
    pub fn pull_stats(&self) -> Vec<(u32, crate::transport::PullStats)> {
        self.nodes
            .iter()
            .filter_map(|n| n.host.as_deref().map(|h| (n.id, h.services.pulls.stats)))
            .filter(|(_, st)| st.sent > 0)
            .collect()
    }

    /// Workload groups (collectives) that completed in this shard's generator.
    pub fn completed_groups(&self) -> Vec<workloads::GroupCompletion> {
        self.generator.completed_groups().to_vec()
    }

    /// Number of pending events.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }
}
