//! Network elements: the nodes (hosts and switches), their output ports, the
//! links between them, and what a switch does at ingress.
//!
//! - [`port`]: admission through the queue discipline, counters and traces
//!   of its outcomes, serialisation, per-priority pause.
//! - [`link`]: store-and-forward wires and the inbound FIFOs.
//! - [`pool`]: the shard's one pool of slots for the packets on its wires
//!   and in its NDP and priority queues.
//! - [`switch`]: the ingress step (forwarding).
//! - [`pfc`]: PFC's ingress accounting and pause frames.
//! - [`crossbar`]: an input-queued switch's one-packet-per-input fabric.
//! - [`tofino`]: the Tofino trimming chip (meters, DoD/MoD lines, modes).
//! - [`host`]: transport endpoints, their timers and shared services.
//! - [`edge`]: the rank and slack a host stamps on the data it sends.
//!
//! The elements return effects (a packet started, a timer wanted, a flow
//! finished); the shard (`engine/shard.rs`) owns the event queue and applies
//! them, so every event key is made in one place.

pub mod counters;
pub mod crossbar;
pub mod edge;
pub mod host;
pub mod link;
pub mod pfc;
pub mod pool;
pub mod port;
pub mod switch;
pub mod tofino;

pub use counters::PortCounters;
pub use host::{Called, HostState, Slot, TimerDue};
pub use link::{InFlight, Inbound, Message};
pub use pool::{PacketFifo, PacketPool};
pub use port::{Offered, PauseState, Port, PortCx, Started};

use crate::rng::Rng;

/// A host or a switch.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// Entity id (hosts: the host address).
    pub id: u32,
    /// Counter for the keys of events this node creates.
    pub seq: u64,
    /// The node's own random stream.
    pub rng: Rng,
    /// Output ports; a host has one, its NIC.
    pub ports: Vec<Port>,
    /// Present on hosts.
    pub host: Option<Box<HostState>>,
    /// A switch's PFC ingress accounting, when PFC is on.
    pub pfc: Option<Box<pfc::Mmu>>,
    /// A switch's Tofino trimming chip, when `[switch.tofino]` is set.
    pub tofino: Option<Box<tofino::Chip>>,
    /// An input-queued switch's crossbar, when its discipline asks for one
    /// (`voq`'s `crossbar`).
    pub crossbar: Option<Box<crossbar::Crossbar>>,
}

impl Node {
    /// The next sequence number for an event key.
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The NIC's line rate (hosts: port 0), bits per second.
    #[inline]
    pub fn nic_bps(&self) -> u64 {
        self.ports[0].link.link.rate_bps
    }
}
