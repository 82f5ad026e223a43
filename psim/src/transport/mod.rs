//! Transports: pairs of endpoint state machines (source, sink).
//!
//! Endpoints are sans-IO, in the style of smoltcp: they never touch the
//! engine. The host calls [`Transport::on_start`], [`Transport::on_packet`],
//! [`Transport::on_timer`] and [`Transport::on_grant`] (a host service gave
//! the endpoint a turn); the endpoint pushes packets into `cx.out` (they go
//! to the host's NIC queue in order) and afterwards the host asks
//! [`Transport::poll_at`] for the one time it wants to be woken. A changed
//! deadline bumps a generation counter, so stale wake-ups are ignored rather
//! than searched for. This keeps one pending timer per endpoint and lets a
//! transport be tested without a network.
//!
//! Every endpoint implements [`Transport`]; [`Endpoint`] is the enum the
//! hosts store, generated with its forwarding from one list by `registry!`
//! below. The same invocation holds the protocol table ([`Protocol`], one row
//! per protocol naming its [`ProtocolDef`]) and the `[protocol]` section
//! ([`ProtocolParams`], one sub-table per transport configuration). Host-wide
//! schedulers that endpoints share (NDP's pull pacer) are host services
//! ([`services`]), with their own deadline; congestion controllers are in
//! [`cc`].

pub mod app;
pub mod cbr;
pub mod cc;
pub mod config;
pub mod ndp;
pub mod pfabric;
pub mod phost;
pub mod pull;
pub mod rc3;
pub mod roce;
pub mod rtt;
pub mod segment_sched;
pub mod services;
pub mod tcp;
#[cfg(test)]
pub(crate) mod testkit;

use crate::packet::Packet;
use crate::rng::Rng;

pub use cbr::{CbrParams, CbrSink, CbrSource};
pub use cc::{DcqcnParams, DctcpParams, TimelyParams};
pub use ndp::{NdpParams, NdpSink, NdpSource, Spray};
pub use pfabric::{PfabricParams, PfabricSource};
pub use phost::{PhostParams, PhostSink, PhostSource};
pub use pull::{PullQueue, PullStats};
pub use roce::{IrnParams, IrnSink, IrnSource, RoceParams, RoceSink, RoceSource};
pub use services::{HostScheduler, HostServices};
pub use tcp::{MptcpParams, TcpParams, TcpSink, TcpSource};

/// What an endpoint may use while handling an input.
pub struct Ctx<'a> {
    /// Current simulated time, picoseconds.
    pub now: u64,
    /// The host the endpoint lives on.
    pub host: u32,
    /// The endpoint's slot on the host (its key in the host's services).
    pub slot: u32,
    /// The host's NIC rate, bits per second.
    pub nic_bps: u64,
    /// Bytes waiting in the host's NIC queue as the endpoint is called: the
    /// packets it emits queue behind them (NDP starts its timers from their
    /// estimated departure).
    pub nic_queued_bytes: u64,
    /// Packets to transmit, in order.
    pub out: &'a mut Vec<Packet>,
    /// The host's random stream.
    pub rng: &'a mut Rng,
    /// The host's services (NDP's pull pacer), shared by its endpoints.
    pub services: &'a mut HostServices,
    /// `bytes_ahead`'s running sum; a new context starts from nothing.
    pub summed: OutSummed,
}

/// How many of a context's `out` packets [`Ctx::bytes_ahead`] has summed,
/// and their bytes. It lives in the context, which the engine makes afresh
/// for every call, so no endpoint has to reset it.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutSummed {
    packets: usize,
    bytes: u64,
}

impl Ctx<'_> {
    /// Bytes queued at the NIC ahead of the next packet this call emits: the
    /// queue as the call began and every packet already in `out`. Only the
    /// packets added since the last call are summed, so that a burst of n
    /// packets (a large initial window) costs O(n), not O(n²).
    pub fn bytes_ahead(&mut self) -> u64 {
        let s = &mut self.summed;
        if s.packets > self.out.len() {
            *s = OutSummed::default();
        }
        s.bytes += self.out[s.packets..]
            .iter()
            .map(|p| p.size as u64)
            .sum::<u64>();
        s.packets = self.out.len();
        self.nic_queued_bytes + s.bytes
    }
}

/// Sender-side counters of one flow.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// RTT samples the sender took (the flows table's `rtt_samples`; each
    /// transport's rule is in `docs/outputs.md`).
    pub rtt_samples: u64,
    /// Their sum, ps.
    pub rtt_sum_ps: u64,
    /// When the sender learned that every byte was acknowledged (the
    /// flows table's `sender_finish_ps`; each transport's definition is in
    /// `docs/outputs.md`). Set once, on the acknowledgement that completes
    /// the flow; None while unacknowledged data remains and for transports
    /// without acknowledgements (CBR).
    pub finish_ps: Option<u64>,
}

impl SourceStats {
    /// Records the sender's completion at `now`, the first time only.
    #[inline]
    pub fn finish(&mut self, now: u64) {
        if self.finish_ps.is_none() {
            self.finish_ps = Some(now);
        }
    }

    /// Counts one RTT sample of `rtt_ps`.
    #[inline]
    pub fn rtt(&mut self, rtt_ps: u64) {
        self.rtt_samples += 1;
        self.rtt_sum_ps = self.rtt_sum_ps.saturating_add(rtt_ps);
    }

    /// The mean of the RTT samples, ps (rounded down); None without any.
    pub fn rtt_mean_ps(&self) -> Option<u64> {
        (self.rtt_samples > 0).then(|| self.rtt_sum_ps / self.rtt_samples)
    }
}

/// Receiver-side counters of one flow.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SinkStats {
    /// Distinct payload bytes delivered.
    pub bytes_received: u64,
    /// Packets received (any kind).
    pub packets_received: u64,
    /// When the last byte arrived, if the flow completed.
    pub finish_ps: Option<u64>,
}

/// Static description of a flow that a source endpoint is built from.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// The application that hands the sender its data in messages
    /// (`[[traffic]]`'s `app`, `app.rs`); `None`: all of it at the start.
    pub app: Option<app::AppSpec>,
    /// An RDMA Read (`[[traffic]] verb = "read"`, `roce/read.rs`): `src`
    /// reads `size` bytes from `dst`, so the data flows from `dst` to `src`.
    #[serde(default)]
    pub read: bool,
}

/// What every endpoint state machine offers the host. Every hook has a
/// do-nothing default, so a sink without timers or a source that ignores
/// packets writes only what it uses.
pub trait Transport {
    /// The flow starts (sources).
    fn on_start(&mut self, _cx: &mut Ctx<'_>) {}
    /// A packet of this flow arrived at this host.
    fn on_packet(&mut self, _pkt: Packet, _cx: &mut Ctx<'_>) {}
    /// The deadline from [`Transport::poll_at`] was reached.
    fn on_timer(&mut self, _cx: &mut Ctx<'_>) {}
    /// A host service granted this endpoint a turn (NDP: the pull pacer
    /// chose it, so it sends one PULL).
    fn on_grant(&mut self, _cx: &mut Ctx<'_>) {}
    /// One of this sender's data packets left the host's NIC queue: it
    /// started on the wire, or the queue dropped it. Only protocols whose
    /// row sets [`ProtocolDef::NIC_FETCH`] hear it (RoCE's family: a NIC
    /// fetches a QP's next packet when it can send it).
    fn on_nic_sent(&mut self, _cx: &mut Ctx<'_>) {}
    /// When the endpoint next wants [`Transport::on_timer`].
    fn poll_at(&self) -> Option<u64> {
        None
    }
    /// Sender counters, for sources.
    fn source_stats(&self) -> Option<&SourceStats> {
        None
    }
    /// Receiver counters, for sinks.
    fn sink_stats(&self) -> Option<&SinkStats> {
        None
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    #[inline]
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        (**self).on_start(cx)
    }
    #[inline]
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        (**self).on_packet(pkt, cx)
    }
    #[inline]
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        (**self).on_timer(cx)
    }
    #[inline]
    fn on_grant(&mut self, cx: &mut Ctx<'_>) {
        (**self).on_grant(cx)
    }
    #[inline]
    fn on_nic_sent(&mut self, cx: &mut Ctx<'_>) {
        (**self).on_nic_sent(cx)
    }
    #[inline]
    fn poll_at(&self) -> Option<u64> {
        (**self).poll_at()
    }
    #[inline]
    fn source_stats(&self) -> Option<&SourceStats> {
        (**self).source_stats()
    }
    #[inline]
    fn sink_stats(&self) -> Option<&SinkStats> {
        (**self).sink_stats()
    }
}

/// Which class a protocol's packets take at a two-class switch port
/// (`queue/classes.rs`): NDP's trimming class, or the other one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum SwitchClass {
    /// Receiver-driven, trimming-aware traffic (NDP, pHost).
    NdpFamily = 0,
    /// Everything else (TCP family, CBR).
    Other = 1,
}

/// One row of the protocol table: what the host and the switches need to
/// know about a protocol, so that nothing outside its file asks which
/// protocol a flow runs.
pub trait ProtocolDef {
    /// The class its packets take at a two-class switch port.
    const CLASS: SwitchClass;
    /// Whether a sized flow has an ideal completion time (A16); false
    /// for protocols without reliability.
    const IDEAL_FCT: bool;
    /// Whether its sender takes data in messages (`app.rs`); a scenario
    /// that gives `app` to another protocol is refused.
    const MESSAGES: bool = false;
    /// Whether its sender hands the NIC its packets only as the NIC sends
    /// them, and so hears [`Transport::on_nic_sent`] for each of its data
    /// packets that leaves the host's queue (`[protocol.roce] nic_packets`).
    const NIC_FETCH: bool = false;
    /// Whether a flow may be an RDMA Read (`[[traffic]] verb = "read"`,
    /// `roce/read.rs`): its source then asks its destination for the data.
    const READS: bool = false;
    /// Whether it is RoCE's go-back-N sender, which with
    /// `protocol.roce.pfc = true` never resends a dropped packet and so
    /// needs its priority lossless (IRN keeps its timeouts: false).
    const GO_BACK_N: bool = false;
    /// Payload bytes per full packet, from the protocol's parameters.
    fn mtu(p: &ProtocolParams) -> u32;
    /// The sending endpoint of `flow`.
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint;
    /// The receiving endpoint, built on the flow's first packet.
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint;
}

/// Generates, from one list each, the endpoint enum and its static
/// forwarding, the [`Protocol`] enum and its table lookups, and the
/// `[protocol]` section with one sub-table per transport configuration.
macro_rules! registry {
    (
        endpoints { $( $(#[$em:meta])* $E:ident($ET:ty), )* }
        protocols { $( $(#[$pm:meta])* $P:ident = $n:literal, $name:literal => $def:ty, )* }
        sections { $( $(#[$sm:meta])* $sec:ident: $cfg:ty, )* }
    ) => {
        /// The endpoint kinds psim implements (static dispatch: one `match`
        /// per call, no virtual calls on the hot path).
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub enum Endpoint {
            $( $(#[$em])* $E($ET), )*
        }

        impl Transport for Endpoint {
            #[inline]
            fn on_start(&mut self, cx: &mut Ctx<'_>) {
                match self { $( Endpoint::$E(e) => e.on_start(cx), )* }
            }
            #[inline]
            fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
                match self { $( Endpoint::$E(e) => e.on_packet(pkt, cx), )* }
            }
            #[inline]
            fn on_timer(&mut self, cx: &mut Ctx<'_>) {
                match self { $( Endpoint::$E(e) => e.on_timer(cx), )* }
            }
            #[inline]
            fn on_grant(&mut self, cx: &mut Ctx<'_>) {
                match self { $( Endpoint::$E(e) => e.on_grant(cx), )* }
            }
            #[inline]
            fn on_nic_sent(&mut self, cx: &mut Ctx<'_>) {
                match self { $( Endpoint::$E(e) => e.on_nic_sent(cx), )* }
            }
            #[inline]
            fn poll_at(&self) -> Option<u64> {
                match self { $( Endpoint::$E(e) => e.poll_at(), )* }
            }
            #[inline]
            fn source_stats(&self) -> Option<&SourceStats> {
                match self { $( Endpoint::$E(e) => e.source_stats(), )* }
            }
            #[inline]
            fn sink_stats(&self) -> Option<&SinkStats> {
                match self { $( Endpoint::$E(e) => e.sink_stats(), )* }
            }
        }

        /// Transport protocol a packet belongs to, so that a host can create
        /// the right receiver on a flow's first packet. The number is the
        /// wire encoding (`engine/wire.rs`).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[repr(u8)]
        pub enum Protocol {
            $( $(#[$pm])* $P = $n, )*
        }

        impl Protocol {
            /// Every protocol, for lookups by name.
            pub const ALL: [Protocol; [$( $name, )*].len()] = [ $( Protocol::$P, )* ];
            /// Every protocol's scenario name, in table order.
            pub const NAMES: &'static [&'static str] = &[ $( $name, )* ];

            /// Name used in scenarios and output tables.
            pub fn name(self) -> &'static str {
                match self { $( Protocol::$P => $name, )* }
            }
            /// The class its packets take at a two-class switch port.
            #[inline]
            pub fn switch_class(self) -> SwitchClass {
                match self { $( Protocol::$P => <$def as ProtocolDef>::CLASS, )* }
            }
            /// Whether a sized flow of this protocol has an ideal FCT.
            pub fn has_ideal_fct(self) -> bool {
                match self { $( Protocol::$P => <$def as ProtocolDef>::IDEAL_FCT, )* }
            }
            /// Whether its sender takes data in messages (`app.rs`).
            pub fn takes_messages(self) -> bool {
                match self { $( Protocol::$P => <$def as ProtocolDef>::MESSAGES, )* }
            }
            /// Whether its sender hears [`Transport::on_nic_sent`].
            #[inline]
            pub fn nic_fetched(self) -> bool {
                match self { $( Protocol::$P => <$def as ProtocolDef>::NIC_FETCH, )* }
            }
            /// Whether a flow of it may be an RDMA Read (`roce/read.rs`).
            pub fn reads(self) -> bool {
                match self { $( Protocol::$P => <$def as ProtocolDef>::READS, )* }
            }
            /// Whether it is RoCE's go-back-N sender ([`ProtocolDef::GO_BACK_N`]).
            pub fn go_back_n(self) -> bool {
                match self { $( Protocol::$P => <$def as ProtocolDef>::GO_BACK_N, )* }
            }
            /// Payload bytes per full packet.
            pub fn mtu(self, p: &ProtocolParams) -> u32 {
                match self { $( Protocol::$P => <$def as ProtocolDef>::mtu(p), )* }
            }
            /// Builds the source endpoint of `flow`.
            pub fn source(self, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
                match self { $( Protocol::$P => <$def as ProtocolDef>::source(self, flow, p), )* }
            }
            /// Builds the receiving endpoint for a flow's first packet.
            pub fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
                match first.proto { $( Protocol::$P => <$def as ProtocolDef>::sink(first, p), )* }
            }
        }

        /// `[protocol]`: one sub-table per transport configuration, each
        /// defaulted as a whole and key by key.
        #[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct ProtocolParams {
            $( $(#[$sm])* #[serde(default)] pub $sec: $cfg, )*
        }

        impl ProtocolParams {
            /// Checks every sub-table; errors name the full key
            /// (`protocol.tcp.mss_bytes`).
            pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
                $( self.$sec.validate(concat!("protocol.", stringify!($sec)))?; )*
                Ok(())
            }
        }
    };
}

registry! {
    endpoints {
        /// CBR sender.
        CbrSource(CbrSource),
        /// CBR receiver.
        CbrSink(CbrSink),
        /// NDP sender (also the pHost stand-in's).
        NdpSource(Box<NdpSource>),
        /// NDP receiver (also the pHost stand-in's).
        NdpSink(Box<NdpSink>),
        /// TCP, DCTCP or MPTCP sender.
        TcpSource(Box<TcpSource>),
        /// TCP, DCTCP or MPTCP receiver.
        TcpSink(Box<TcpSink>),
        /// RoCE, DCQCN or TIMELY sender.
        RoceSource(Box<RoceSource>),
        /// RoCE, DCQCN or TIMELY receiver.
        RoceSink(Box<RoceSink>),
        /// IRN sender (plain, DCQCN, TIMELY, AIMD or DCTCP).
        IrnSource(Box<IrnSource>),
        /// IRN receiver.
        IrnSink(Box<IrnSink>),
        /// The requester of an RDMA Read: asks for the data, then receives it.
        ReadRequester(Box<roce::ReadRequester>),
        /// The responder of an RDMA Read: sends the data asked for.
        ReadResponder(Box<roce::ReadResponder>),
        /// pFabric sender (its receiver is TCP's).
        PfabricSource(Box<PfabricSource>),
        /// RC3 sender (its receiver is TCP's, ACKing at the data's priority).
        Rc3Source(Box<rc3::Rc3Source>),
        /// pHost sender.
        PhostSource(Box<PhostSource>),
        /// pHost receiver.
        PhostSink(Box<PhostSink>),
    }
    protocols {
        /// Paced constant bit rate source (no reliability): exercises the engine.
        Cbr = 0, "cbr" => cbr::Cbr,
        /// NDP ([P] §3.2).
        Ndp = 1, "ndp" => ndp::Ndp,
        /// The former pHost stand-in: NDP's endpoints, meant for drop-tail switches ([P] §6.2).
        PhostStandin = 2, "phost_standin" => ndp::PhostStandin,
        /// TCP NewReno with SACK (RFC 5681, 6582, 6675, 6298).
        Tcp = 3, "tcp" => tcp::Tcp,
        /// DCTCP (RFC 8257): TCP with ECN-proportional window cuts.
        Dctcp = 4, "dctcp" => tcp::Dctcp,
        /// MPTCP with LIA coupled congestion control (RFC 6356).
        Mptcp = 5, "mptcp" => tcp::Mptcp,
        /// RoCE RC with go-back-N at line rate ([TH] §4.1.1).
        Roce = 6, "roce" => roce::RoceDef,
        /// RoCE + DCQCN ([DCQCN]; [TH] Ch. 4).
        Dcqcn = 7, "dcqcn" => roce::DcqcnDef,
        /// RoCE + TIMELY ([TH] Ch. 3).
        Timely = 8, "timely" => roce::TimelyDef,
        /// pFabric's transport: remaining size in `rank`, fixed RTO, probe mode ([PFAB] §4.2–4.3).
        Pfabric = 9, "pfabric" => pfabric::Pfabric,
        /// IRN: RoCE with selective repeat, BDP-FC and RTO_low/RTO_high ([TH] §4.2).
        Irn = 10, "irn" => roce::IrnDef,
        /// IRN + DCQCN ([TH] Ch. 4).
        IrnDcqcn = 11, "irn_dcqcn" => roce::IrnDcqcnDef,
        /// IRN + TIMELY ([TH] Ch. 4).
        IrnTimely = 12, "irn_timely" => roce::IrnTimelyDef,
        /// RC3: TCP at priority 0 plus the recursive low-priority loop ([TH] Ch. 2).
        Rc3 = 13, "rc3" => rc3::Rc3,
        /// pHost: RTS, SRPT tokens, free tokens, downgrade, receiver-driven recovery ([PH]; [Y]).
        Phost = 14, "phost" => phost::Phost,
        /// IRN + TCP's AIMD window ([TH] §4.3.6).
        IrnAimd = 15, "irn_aimd" => roce::IrnAimdDef,
        /// IRN + DCTCP's window, with ECN echoed per packet ([TH] §4.3.6).
        IrnDctcp = 16, "irn_dctcp" => roce::IrnDctcpDef,
        /// RoCE's go-back-N + TCP's AIMD window (`roce/window.rs`; [TH] §4.3.6's comparison).
        RoceAimd = 17, "roce_aimd" => roce::RoceAimdDef,
        /// RoCE's go-back-N + DCTCP's window, with ECN echoed per packet (`roce/window.rs`).
        RoceDctcp = 18, "roce_dctcp" => roce::RoceDctcpDef,
    }
    sections {
        /// `[protocol.cbr]`.
        cbr: CbrParams,
        /// `[protocol.ndp]` (also used by the pHost stand-in).
        ndp: NdpParams,
        /// `[protocol.tcp]` (also used by DCTCP and MPTCP subflows).
        tcp: TcpParams,
        /// `[protocol.dctcp]`: DCTCP's estimator (also irn_dctcp's).
        dctcp: DctcpParams,
        /// `[protocol.mptcp]`: MPTCP's subflows.
        mptcp: MptcpParams,
        /// `[protocol.roce]` (also used by DCQCN and TIMELY).
        roce: RoceParams,
        /// `[protocol.dcqcn]`: DCQCN's reaction point.
        dcqcn: DcqcnParams,
        /// `[protocol.timely]`: TIMELY's rate computation.
        timely: TimelyParams,
        /// `[protocol.pfabric]`: pFabric's transport.
        pfabric: PfabricParams,
        /// `[protocol.irn]`: IRN's loss recovery (also irn_dcqcn, irn_timely, irn_aimd, irn_dctcp).
        irn: IrnParams,
        /// `[protocol.rc3]`: RC3's MSS, IW and priority buckets.
        rc3: rc3::Rc3Params,
        /// `[protocol.phost]`: pHost's tokens and timers.
        phost: PhostParams,
    }
}

impl Protocol {
    /// The endpoint of a flow that starts on its source host: the sender,
    /// or for an RDMA Read the requester (`roce/read.rs`).
    pub fn starter(self, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        match flow.read {
            true => roce::read_requester(self, flow, p),
            false => self.source(flow, p),
        }
    }

    /// The endpoint a host builds for the first packet of a flow it did not
    /// start (its NIC at `nic_bps`): the responder of an RDMA Read for a
    /// read request, the receiver otherwise.
    pub fn receiver(first: &Packet, p: &ProtocolParams, nic_bps: u64) -> Endpoint {
        match roce::is_read_request(first) {
            true => roce::read_responder(first, p, nic_bps),
            false => Protocol::sink(first, p),
        }
    }

    /// The protocol called `name` in scenarios.
    pub fn from_name(name: &str) -> Option<Protocol> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The registered protocol names, comma separated (for error messages).
pub fn known_protocols() -> String {
    Protocol::NAMES.join(", ")
}

#[cfg(test)]
mod tests {
    use super::testkit::{flow, Host};
    use super::*;

    /// Every row of the table builds a source from the defaults whose
    /// packets carry its protocol, and a sink from its first packet that
    /// counts it; names round-trip and wire numbers are distinct.
    #[test]
    fn every_protocol_row_builds_endpoints_that_carry_its_protocol() {
        let params = ProtocolParams::default();
        params.validate().expect("the defaults are valid");
        for (i, p) in Protocol::ALL.into_iter().enumerate() {
            assert_eq!(Protocol::from_name(p.name()), Some(p));
            assert_eq!(p.name(), Protocol::NAMES[i]);
            assert!(Protocol::ALL[..i].iter().all(|q| *q as u8 != p as u8));
            assert!(p.mtu(&params) > 0);
            // The go-back-N flag (`protocol.roce.pfc`'s lossless check) is
            // exactly the rows whose sender is RoCE's go-back-N source.
            let ep = p.source(&flow(Some(100_000), 4), &params);
            assert_eq!(
                p.go_back_n(),
                matches!(ep, Endpoint::RoceSource(_)),
                "{p:?}"
            );
            let mut src = Host::new(0, ep);
            // What it sends at time 0, host services' turns included (a
            // TIMELY segment waits for the host's scheduler).
            let mut out = src.start(0);
            out.extend(src.advance(0).into_iter().map(|(_, pkt)| pkt));
            let first = out.first().unwrap_or_else(|| panic!("{p:?} sent nothing"));
            assert!(out.iter().all(|pkt| pkt.proto == p), "{p:?}");
            let mut sink = Host::new(5, Protocol::sink(first, &params));
            sink.deliver(1_000, first.clone());
            let st = sink.ep.sink_stats().expect("a sink");
            assert_eq!(st.packets_received, 1, "{p:?}");
            assert!(src.ep.source_stats().is_some() && sink.ep.source_stats().is_none());
        }
        assert_eq!(Protocol::from_name("quic"), None);
    }

    /// `bytes_ahead` counts the NIC's queue and every packet in `out`,
    /// those of earlier endpoints in the same batch included, and a fresh
    /// context starts its sum again.
    #[test]
    fn bytes_ahead_sums_the_nic_queue_and_the_packets_already_out() {
        let pkt = |size| Packet {
            flow: 1,
            src: 0,
            dst: 5,
            seq: 0,
            ack: 0,
            size,
            payload: 0,
            path: 0,
            sent_ps: 0,
            kind: crate::packet::PacketKind::Data,
            proto: Protocol::Ndp,
            flags: 0,
            prio: 0,
            rank: 0,
        };
        let mut out = vec![pkt(100)];
        let (mut rng, mut services) = (crate::rng::stream_rng(1, 5), HostServices::default());
        let mut cx = Ctx {
            now: 0,
            host: 0,
            slot: 0,
            nic_bps: 10_000_000_000,
            nic_queued_bytes: 1_000,
            out: &mut out,
            rng: &mut rng,
            services: &mut services,
            summed: Default::default(),
        };
        assert_eq!(cx.bytes_ahead(), 1_100);
        cx.out.push(pkt(64));
        cx.out.push(pkt(9_064));
        assert_eq!(cx.bytes_ahead(), 10_228);
        assert_eq!(cx.bytes_ahead(), 10_228, "nothing new");
        out.truncate(1);
        let mut cx = Ctx {
            now: 1,
            host: 0,
            slot: 0,
            nic_bps: 10_000_000_000,
            nic_queued_bytes: 0,
            out: &mut out,
            rng: &mut rng,
            services: &mut services,
            summed: Default::default(),
        };
        cx.out.push(pkt(500));
        assert_eq!(cx.bytes_ahead(), 600, "a new call sums its out afresh");
    }

    /// On a lossless fixed-delay network the sender completes exactly one
    /// one-way delay after the receiver: the acknowledgement that completes
    /// the flow is sent when the last packet arrives. CBR has no
    /// acknowledgements, so no sender completion; an unfinished flow has none.
    #[test]
    fn the_sender_completes_one_ack_trip_after_the_receiver() {
        use super::testkit::{never, Net};
        const DELAY: u64 = 7_000_000;
        for p in Protocol::ALL {
            let mut n = Net::new(p, &flow(Some(100_000), 4), ProtocolParams::default(), DELAY);
            n.run(u64::MAX, &mut never, &mut never);
            let rx = n.finish().unwrap_or_else(|| panic!("{p:?} did not finish"));
            if p == Protocol::Cbr {
                assert_eq!(n.sender_finish(), None);
            } else {
                assert_eq!(n.sender_finish(), Some(rx + DELAY), "{p:?}");
            }
            let mut cut = Net::new(p, &flow(Some(100_000), 4), ProtocolParams::default(), DELAY);
            cut.run(rx - 1, &mut never, &mut never);
            assert_eq!(cut.sender_finish(), None, "{p:?} before the last byte");
        }
    }
}
