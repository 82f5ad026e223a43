//! Hand-built packet-trace rows for the trace reductions' tests
//! (`one_way.rs`, `congestion_points.rs`, `ack_latency.rs`).

use crate::topo::{FatTree, LinkSpec, Topology};
use crate::trace::packets::PacketRow;
use crate::trace::spec::PacketEvent;

/// Every link of [`fattree`]: 10 Gb/s, 1 µs.
pub const L: LinkSpec = LinkSpec {
    rate_bps: 10_000_000_000,
    delay_ps: 1_000_000,
};

/// A k = 4 FatTree (16 hosts) of [`L`] links.
pub fn fattree() -> Topology {
    Topology::FatTree(FatTree::new(4, 1, L, L, L))
}

/// The port of `from` whose link ends at `to`.
pub fn port_towards(t: &Topology, from: u32, to: u32) -> u16 {
    (0..t.port_count(from))
        .find(|&p| t.port(from, p).peer == to)
        .expect("a port towards the entity")
}

/// A row of data packet `seq` of flow 7 from host 0 to host 10, 1500 B on
/// the wire (1436 B of payload), leaving `queue_pkts` in the queue.
pub fn data_row(
    time_ps: u64,
    event: PacketEvent,
    entity: u32,
    port: u16,
    seq: u64,
    queue_pkts: u32,
) -> PacketRow {
    PacketRow {
        time_ps,
        event,
        entity,
        entity_seq: time_ps,
        port,
        flow: 7,
        seq,
        kind: "data",
        flags: 0,
        src: 0,
        dst: 10,
        size_bytes: 1500,
        payload_bytes: 1436,
        queue_bytes: 0,
        queue_pkts,
    }
}
