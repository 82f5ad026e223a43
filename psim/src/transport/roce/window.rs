//! RoCE's go-back-N under a TCP-style window: `roce_aimd` (NewReno's AIMD,
//! `cc/reno.rs`) and `roce_dctcp` (DCTCP, `cc/dctcp.rs`). [TH] §4.3.6 runs
//! IRN with AIMD and with DCTCP and finds "similar trends" to its TIMELY and
//! DCQCN results, of which the first is IRN against RoCE with the same
//! congestion control over PFC (T32). These are the RoCE side of that
//! comparison: the sender and receiver of `roce` ([`RoceSource`],
//! [`RoceSink`]) with only the window added, so that against `irn_aimd` and
//! `irn_dctcp` (`irn.rs`) only the loss recovery differs. The thesis gives
//! no detail of either; each choice below is `irn_aimd`'s or `irn_dctcp`'s.
//!
//! - **Window.** PSNs sent and not cumulatively ACKed stay below cwnd, as
//!   well as below `[protocol.roce] window_packets` when that is set. After
//!   go-back-N rewinds, the PSNs resent count again from the cumulative ACK.
//!   The window starts where `irn_aimd`'s does, at IRN's BDP-FC cap
//!   (`[protocol.irn] bdp_cap_packets`, 120 packets of 1 KB: the path's
//!   BDP; `[protocol.tcp] iw_packets` with the cap off), with ssthresh there:
//!   congestion avoidance from the first packet. It grows by one MTU per
//!   window of ACKed data.
//! - **Loss.** A NACK that starts recovery is a loss (TCP's fast
//!   retransmit: NewReno halves cwnd, DCTCP too); the NACKs and ACKs that
//!   follow until the cumulative ACK passes the highest PSN sent when it
//!   came belong to the same loss. A timeout (RTO_high, without PFC) sets
//!   cwnd to one MTU, then slow start to ssthresh. With PFC nothing is lost,
//!   so AIMD's window only grows: `roce_aimd` over PFC is RoCE with an
//!   initial window of the BDP.
//! - **ECN** (`roce_dctcp`). Data is ECN-capable; the receiver runs in echo
//!   mode: the next ACK or NACK after a CE-marked packet carries `ECE` (one
//!   echo per packet with `ack_every = 1`, RFC 8257 §3.2), and it sends no
//!   CNPs. Each ACK or NACK feeds DCTCP's estimate with the PSNs it newly
//!   ACKs cumulatively, before growth, as `irn_dctcp`; a cut needs the sender
//!   out of recovery, at most one per window, and an ACK that cut does not
//!   grow the window.
//!
//! Both need ACKs (`[protocol.roce] ack_every` of 1 or more), and
//! `roce_dctcp` a switch that marks ECN: the scenario is rejected otherwise,
//! naming the key.

use super::{RoceDef, RoceSink, RoceSource};
use crate::packet::{Packet, Protocol};
use crate::transport::cc::dcqcn::Style;
use crate::transport::cc::{CongestionControl, Controller, Dctcp, Reno};
use crate::transport::{Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SwitchClass};

/// Which TCP-style window a RoCE or IRN sender runs.
#[derive(Copy, Clone, Debug)]
pub(super) enum TcpWindow {
    /// NewReno's AIMD (`roce_aimd`, `irn_aimd`).
    Aimd,
    /// DCTCP's (`roce_dctcp`, `irn_dctcp`).
    Dctcp,
}

/// The controller of a RoCE or IRN sender under a TCP-style window: it
/// starts at IRN's BDP-FC cap (`[protocol.tcp] iw_packets` with the cap
/// off) with ssthresh there, so in congestion avoidance.
pub(super) fn window_controller(kind: TcpWindow, p: &ProtocolParams) -> Controller {
    let iw = match p.irn.bdp_cap_packets {
        0 => p.tcp.iw_packets,
        cap => cap,
    };
    let mtu = p.roce.mtu_bytes;
    let ssthresh = iw as f64 * mtu as f64;
    match kind {
        TcpWindow::Aimd => {
            let mut reno = Reno::new(iw, mtu, false);
            reno.set_ssthresh(ssthresh);
            Controller::Reno(reno)
        }
        TcpWindow::Dctcp => {
            let mut dctcp = Dctcp::new(iw, mtu, &p.dctcp);
            dctcp.set_ssthresh(ssthresh);
            Controller::Dctcp(dctcp)
        }
    }
}

/// The protocol table's row for RoCE + AIMD: NewReno's window over
/// go-back-N, starting at the BDP in congestion avoidance.
pub struct RoceAimdDef;

impl ProtocolDef for RoceAimdDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const GO_BACK_N: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = Some(window_controller(TcpWindow::Aimd, p));
        let src = RoceSource::new(flow, proto, &p.roce, cc, false, None).with_window(false);
        Endpoint::RoceSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        RoceDef::sink(first, p)
    }
}

/// The protocol table's row for RoCE + DCQCN's window-based cousin DCTCP:
/// `roce_aimd` with DCTCP's controller, ECN-capable data and a receiver
/// that echoes CE marks on its ACKs and NACKs.
pub struct RoceDctcpDef;

impl ProtocolDef for RoceDctcpDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const GO_BACK_N: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        RoceDef::mtu(p)
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = Some(window_controller(TcpWindow::Dctcp, p));
        let src = RoceSource::new(flow, proto, &p.roce, cc, true, None).with_window(true);
        Endpoint::RoceSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        // Echo mode sends no CNPs: the interval is not used.
        let cnp = p.roce.cnp_interval_ps(Style::Paper);
        let sink = RoceSink::new(first, &p.roce, cnp).with_ecn_echo();
        Endpoint::RoceSink(Box::new(sink))
    }
}
