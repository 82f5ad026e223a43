//! Congestion points per packet from a packet trace, as [TH] §5.1.3 counts
//! them for T35 (footnote 9: "we record the number of non-empty queues
//! (excluding the endhost queues) encountered by each packet").
//!
//! # Definition
//!
//! A data packet meets a congestion point at a switch port when the queue
//! it joins already holds a packet: its `enqueue` row shows `queue_pkts` of
//! 2 or more (the column counts the queue just after the event, the packet
//! itself included, and not the packet being serialised, as ns-2's queue
//! length does not). Host NICs are left out. A packet enqueued more than once
//! at a port (a retransmission) counts each time; the open-loop runs of T35
//! send every packet once. A sampled trace keeps or drops whole packets, so
//! the shares it gives are unbiased.

use std::collections::HashMap;

use crate::topo::{EntityKind, Topology};
use crate::trace::packets::PacketRow;
use crate::trace::spec::PacketEvent;

/// Traced data packets by the congestion points they met: element `n` is
/// how many met exactly `n` (the vector is as long as the largest count + 1;
/// empty when the trace holds no data packet).
pub fn congestion_points(rows: &[PacketRow], topo: &Topology) -> Vec<u64> {
    let mut per_packet: HashMap<(u64, u64), u32> = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| r.kind == "data" && r.event == PacketEvent::Enqueue)
    {
        let n = per_packet.entry((r.flow, r.seq)).or_insert(0);
        if topo.kind(r.entity) != EntityKind::Host && r.queue_pkts >= 2 {
            *n += 1;
        }
    }
    let mut hist = Vec::new();
    for &n in per_packet.values() {
        let n = n as usize;
        if hist.len() <= n {
            hist.resize(n + 1, 0);
        }
        hist[n] += 1;
    }
    hist
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::testrows::{data_row, fattree};

    /// An enqueue row of data packet `seq` at `entity` leaving `queue_pkts`.
    fn row(entity: u32, seq: u64, queue_pkts: u32) -> PacketRow {
        data_row(seq, PacketEvent::Enqueue, entity, 0, seq, queue_pkts)
    }

    /// By hand: packet 0 joins a queue of 3 at the host's NIC (not counted)
    /// and empty ones at two switches: 0 points. Packet 1 finds company at
    /// both switches: 2. Packet 2 finds company at one: 1. Packet 3 is
    /// alone in every queue: 0. A dequeue row changes nothing.
    #[test]
    fn counts_non_empty_switch_queues_per_packet() {
        let t = fattree();
        let tor = t.port(0, 0).peer;
        let agg = (0..t.port_count(tor))
            .map(|p| t.port(tor, p).peer)
            .find(|&e| t.kind(e) == EntityKind::Agg)
            .expect("an uplink");
        assert_eq!(t.kind(0), EntityKind::Host);
        assert_eq!(t.kind(tor), EntityKind::Tor);
        let mut dequeued = row(tor, 3, 5);
        dequeued.event = PacketEvent::Dequeue;
        let rows = vec![
            row(0, 0, 3),
            row(tor, 0, 1),
            row(agg, 0, 1),
            row(tor, 1, 2),
            row(agg, 1, 4),
            row(tor, 2, 1),
            row(agg, 2, 2),
            row(tor, 3, 1),
            dequeued,
        ];
        assert_eq!(congestion_points(&rows, &t), [2, 1, 1]);
    }
}
