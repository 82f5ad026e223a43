//! The switch's ingress step: what happens to a packet between its input
//! port and an output port's queue.
//!
//! Today that is the forwarding decision alone (source-routed ECMP by the
//! packet's path id, [`Topology::route`]). The step exists so that the input
//! port and the packet's priority are known where a packet is admitted: a
//! shared-buffer switch (PFC's per ingress port and priority accounting) and
//! an input-queued switch hook in here, and the queue discipline sees both
//! through [`crate::queue::QueueCtx::ingress`] and the packet's `prio`.

use crate::packet::Packet;
use crate::topo::Topology;

/// Where a packet that came in on a switch port goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ingress {
    /// The input port it came in on.
    pub in_port: u16,
    /// The output port it is offered to.
    pub out_port: u16,
    /// Its priority (the packet's `prio`: PFC's class).
    pub prio: u8,
}

/// The ingress step of switch `id` for `pkt`, arrived on `in_port`.
#[inline]
pub fn ingress(topo: &Topology, id: u32, in_port: u16, pkt: &Packet) -> Ingress {
    Ingress {
        in_port,
        out_port: topo.route(id, pkt.dst, pkt.path),
        prio: pkt.prio,
    }
}

/// The output port that takes a bounced packet (addresses already swapped)
/// back towards its source, or None when that is the port that bounced it
/// (the packet cannot go back the way it would go forward; it is dropped).
#[inline]
pub fn bounce_port(topo: &Topology, id: u32, from_port: u16, pkt: &Packet) -> Option<u16> {
    let back = topo.route(id, pkt.dst, pkt.path);
    (back != from_port).then_some(back)
}
