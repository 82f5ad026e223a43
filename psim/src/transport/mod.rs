//! Transports: pairs of endpoint state machines (source, sink).
//!
//! Endpoints are sans-IO, in the style of smoltcp: they never touch the
//! engine. The host calls [`Endpoint::on_start`], [`Endpoint::on_packet`] and
//! [`Endpoint::on_timer`]; the endpoint pushes packets into `cx.out` (they go
//! to the host's NIC queue in order) and afterwards the host asks
//! [`Endpoint::poll_at`] for the one time it wants to be woken. A changed
//! deadline bumps a generation counter, so stale wake-ups are ignored rather
//! than searched for. This keeps one pending timer per endpoint and lets a
//! transport be tested without a network.

pub mod cbr;

use crate::packet::{Packet, Protocol};
use crate::rng::Rng;

pub use cbr::{CbrParams, CbrSink, CbrSource};

/// What an endpoint may use while handling an input.
pub struct Ctx<'a> {
    /// Current simulated time, picoseconds.
    pub now: u64,
    /// The host the endpoint lives on.
    pub host: u32,
    /// Packets to transmit, in order.
    pub out: &'a mut Vec<Packet>,
    /// The host's random stream.
    pub rng: &'a mut Rng,
}

/// Sender-side counters of one flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Packets transmitted.
    pub packets_sent: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Trimmed packets reported back (NACKs).
    pub trims: u64,
    /// Packets returned by switches.
    pub bounces: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

/// Receiver-side counters of one flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Distinct payload bytes delivered.
    pub bytes_received: u64,
    /// Packets received (any kind).
    pub packets_received: u64,
    /// When the last byte arrived, if the flow completed.
    pub finish_ps: Option<u64>,
}

/// Protocol parameters for every transport, from the scenario's `[protocol]` section.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ProtocolParams {
    /// Constant bit rate source.
    pub cbr: CbrParams,
}

/// Static description of a flow that a source endpoint is built from.
#[derive(Clone, Debug)]
pub struct FlowInfo {
    /// Flow id.
    pub id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Payload bytes, or `None` for a flow that runs until the end.
    pub size: Option<u64>,
    /// Start time, picoseconds.
    pub start_ps: u64,
    /// Priority class.
    pub prio: u8,
    /// Equal-cost paths between src and dst.
    pub num_paths: u32,
    /// Per-flow ECMP path choice.
    pub ecmp_path: u32,
    /// Source NIC rate, bits per second.
    pub nic_bps: u64,
}

/// The endpoint kinds psim implements.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// CBR sender.
    CbrSource(CbrSource),
    /// CBR receiver.
    CbrSink(CbrSink),
}

impl Endpoint {
    /// Builds the source endpoint of `flow` for `proto`.
    pub fn source(proto: Protocol, flow: &FlowInfo, params: &ProtocolParams) -> Endpoint {
        match proto {
            Protocol::Cbr => Endpoint::CbrSource(CbrSource::new(flow, &params.cbr)),
        }
    }
    /// Builds the receiving endpoint for a flow's first packet.
    pub fn sink(first: &Packet) -> Endpoint {
        match first.proto {
            Protocol::Cbr => Endpoint::CbrSink(CbrSink::default()),
        }
    }
    /// The flow starts (sources only).
    pub fn on_start(&mut self, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(s) => s.on_start(cx),
            Endpoint::CbrSink(_) => {}
        }
    }
    /// A packet of this flow arrived at this host.
    pub fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(_) => {}
            Endpoint::CbrSink(s) => s.on_packet(pkt, cx),
        }
    }
    /// The deadline from [`Endpoint::poll_at`] was reached.
    pub fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(s) => s.on_timer(cx),
            Endpoint::CbrSink(_) => {}
        }
    }
    /// When the endpoint next wants `on_timer`.
    pub fn poll_at(&self) -> Option<u64> {
        match self {
            Endpoint::CbrSource(s) => s.poll_at(),
            Endpoint::CbrSink(_) => None,
        }
    }
    /// Sender counters, for sources.
    pub fn source_stats(&self) -> Option<&SourceStats> {
        match self {
            Endpoint::CbrSource(s) => Some(&s.stats),
            Endpoint::CbrSink(_) => None,
        }
    }
    /// Receiver counters, for sinks.
    pub fn sink_stats(&self) -> Option<&SinkStats> {
        match self {
            Endpoint::CbrSink(s) => Some(&s.stats),
            Endpoint::CbrSource(_) => None,
        }
    }
}
