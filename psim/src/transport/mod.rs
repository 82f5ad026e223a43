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
pub mod dctcp;
pub mod mptcp;
pub mod ndp;
pub mod pull;
pub mod rtt;
pub mod tcp;

use crate::packet::{Packet, Protocol};
use crate::rng::Rng;

pub use cbr::{CbrParams, CbrSink, CbrSource};
pub use dctcp::DctcpParams;
pub use mptcp::MptcpParams;
pub use ndp::{NdpParams, NdpSink, NdpSource, Spray};
pub use pull::{PullQueue, PullStats};
pub use tcp::{TcpParams, TcpSink, TcpSource};

/// What an endpoint may use while handling an input.
pub struct Ctx<'a> {
    /// Current simulated time, picoseconds.
    pub now: u64,
    /// The host the endpoint lives on.
    pub host: u32,
    /// The endpoint's slot on the host (its key in the pull queue).
    pub slot: u32,
    /// The host's NIC rate, bits per second.
    pub nic_bps: u64,
    /// Packets to transmit, in order.
    pub out: &'a mut Vec<Packet>,
    /// The host's random stream.
    pub rng: &'a mut Rng,
    /// The host's pull queue (receiver-driven transports).
    pub pulls: &'a mut PullQueue,
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
    /// NDP, and pHost (same endpoints).
    pub ndp: NdpParams,
    /// TCP, DCTCP and MPTCP (shared endpoint parameters).
    pub tcp: TcpParams,
    /// DCTCP's estimator.
    pub dctcp: DctcpParams,
    /// MPTCP's subflows.
    pub mptcp: MptcpParams,
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
    /// Closed-form ideal completion time, where the protocol defines one.
    pub ideal_fct_ps: Option<u64>,
}

/// The endpoint kinds psim implements.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// CBR sender.
    CbrSource(CbrSource),
    /// CBR receiver.
    CbrSink(CbrSink),
    /// NDP or pHost sender.
    NdpSource(Box<NdpSource>),
    /// NDP or pHost receiver.
    NdpSink(Box<NdpSink>),
    /// TCP, DCTCP or MPTCP sender.
    TcpSource(Box<TcpSource>),
    /// TCP, DCTCP or MPTCP receiver.
    TcpSink(Box<TcpSink>),
}

impl Endpoint {
    /// Builds the source endpoint of `flow` for `proto`.
    pub fn source(proto: Protocol, flow: &FlowInfo, params: &ProtocolParams) -> Endpoint {
        match proto {
            Protocol::Cbr => Endpoint::CbrSource(CbrSource::new(flow, &params.cbr)),
            Protocol::Ndp | Protocol::Phost => {
                Endpoint::NdpSource(Box::new(NdpSource::new(flow, proto, &params.ndp)))
            }
            Protocol::Tcp | Protocol::Dctcp | Protocol::Mptcp => Endpoint::TcpSource(Box::new(
                TcpSource::new(flow, proto, &params.tcp, &params.dctcp, &params.mptcp),
            )),
        }
    }
    /// Builds the receiving endpoint for a flow's first packet.
    pub fn sink(first: &Packet, params: &ProtocolParams) -> Endpoint {
        match first.proto {
            Protocol::Cbr => Endpoint::CbrSink(CbrSink::default()),
            Protocol::Ndp | Protocol::Phost => Endpoint::NdpSink(Box::new(NdpSink::new(first))),
            Protocol::Tcp | Protocol::Dctcp | Protocol::Mptcp => {
                Endpoint::TcpSink(Box::new(TcpSink::new(first, &params.tcp)))
            }
        }
    }

    /// The host's pull pacer picked this endpoint: emit one PULL (receivers only).
    pub fn make_pull(&mut self, cx: &mut Ctx<'_>) {
        if let Endpoint::NdpSink(s) = self {
            s.make_pull(cx);
        }
    }
    /// The flow starts (sources only).
    pub fn on_start(&mut self, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(s) => s.on_start(cx),
            Endpoint::NdpSource(s) => s.on_start(cx),
            Endpoint::TcpSource(s) => s.on_start(cx),
            Endpoint::CbrSink(_) | Endpoint::NdpSink(_) | Endpoint::TcpSink(_) => {}
        }
    }
    /// A packet of this flow arrived at this host.
    pub fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(_) => {}
            Endpoint::CbrSink(s) => s.on_packet(pkt, cx),
            Endpoint::NdpSource(s) => s.on_packet(pkt, cx),
            Endpoint::NdpSink(s) => s.on_packet(pkt, cx),
            Endpoint::TcpSource(s) => s.on_packet(pkt, cx),
            Endpoint::TcpSink(s) => s.on_packet(pkt, cx),
        }
    }
    /// The deadline from [`Endpoint::poll_at`] was reached.
    pub fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        match self {
            Endpoint::CbrSource(s) => s.on_timer(cx),
            Endpoint::NdpSource(s) => s.on_timer(cx),
            Endpoint::TcpSource(s) => s.on_timer(cx),
            Endpoint::TcpSink(s) => s.on_timer(cx),
            Endpoint::CbrSink(_) | Endpoint::NdpSink(_) => {}
        }
    }
    /// When the endpoint next wants `on_timer`.
    pub fn poll_at(&self) -> Option<u64> {
        match self {
            Endpoint::CbrSource(s) => s.poll_at(),
            Endpoint::NdpSource(s) => s.poll_at(),
            Endpoint::TcpSource(s) => s.poll_at(),
            Endpoint::TcpSink(s) => s.poll_at(),
            Endpoint::CbrSink(_) | Endpoint::NdpSink(_) => None,
        }
    }
    /// Sender counters, for sources.
    pub fn source_stats(&self) -> Option<&SourceStats> {
        match self {
            Endpoint::CbrSource(s) => Some(&s.stats),
            Endpoint::NdpSource(s) => Some(&s.stats),
            Endpoint::TcpSource(s) => Some(&s.stats),
            Endpoint::CbrSink(_) | Endpoint::NdpSink(_) | Endpoint::TcpSink(_) => None,
        }
    }
    /// Receiver counters, for sinks.
    pub fn sink_stats(&self) -> Option<&SinkStats> {
        match self {
            Endpoint::CbrSink(s) => Some(&s.stats),
            Endpoint::NdpSink(s) => Some(&s.stats),
            Endpoint::TcpSink(s) => Some(&s.stats),
            Endpoint::CbrSource(_) | Endpoint::NdpSource(_) | Endpoint::TcpSource(_) => None,
        }
    }
}
