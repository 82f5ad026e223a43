//! RoCE (RDMA over Converged Ethernet), reliable connection with go-back-N
//! ([TH] §4.1.1, §4.3.1), and the rate-controlled RoCE variants: plain
//! `roce` (line rate, no congestion control), `dcqcn` (RoCE + DCQCN,
//! `cc/dcqcn.rs`) and `timely` (RoCE + TIMELY, `cc/timely.rs`); `roce_aimd`
//! and `roce_dctcp`, the same go-back-N under NewReno's or DCTCP's window,
//! are in `window.rs`. IRN
//! (`irn`, `irn_dcqcn`, `irn_timely`, `irn_aimd`, `irn_dctcp`: selective
//! repeat over the same sender and receiver) is in `irn.rs`.
//!
//! - **Receiver** ([`RoceSink`]): accepts only the expected PSN. An
//!   out-of-order packet is discarded and answered with a NACK carrying the
//!   expected PSN, once per gap (TA11): another NACK for the same expected
//!   PSN only after `nack_interval_us` (`HPCC`'s NACK generation interval).
//!   ACKs (cumulative: the next expected PSN) every `ack_every` in-order
//!   packets and on the last one; a duplicate is answered with an ACK (IB
//!   spec C9-110, as `CW` does). The notification point of DCQCN: a CE-marked
//!   packet triggers a CNP at once, at most one per `cnp_interval_us` per
//!   flow ([DCQCN] via `HT-DCQCN`; marks inside the interval are not
//!   remembered, unlike `HT-DCQCN`'s deferred CNP and `R3`'s periodic one).
//! - **Sender** ([`RoceSource`]): sends PSNs in order, paced at the
//!   controller's rate (the NIC rate for plain RoCE): after a packet of w
//!   wire bytes at rate r the next may leave w·8/r later (DCQCN's
//!   `shift_pending_departure` moves that when the rate changes meanwhile,
//!   `cc/dcqcn.rs`). It holds one timer,
//!   for the next departure only while it has something to send, or for the
//!   RTO. A NACK(e) acknowledges up to e and rewinds to e (go back N); a
//!   timeout (`rto_us`, when `timeout` is on and `pfc` off) rewinds to the
//!   first unacknowledged PSN. No window unless `window_packets` is set
//!   (RoCE has none, [TH] §4.3.1 / TA8 note).
//! - **The NIC fetches** (every sender here, IRN's too; unless `nic_packets`
//!   is 0): a sender hands the host's NIC queue at most `nic_packets`
//!   packets of its flow at a time, and the next one when one of them
//!   starts on the wire (or is dropped there). So the NIC serves its QPs in turn, as a NIC's transmit
//!   scheduler does, and nothing piles up behind a PFC pause or a
//!   go-back-N rewind: a resent PSN waits behind at most `nic_packets`
//!   older ones, not behind everything the pacing let out. (TIMELY's
//!   host-scheduled segments go to the NIC whole, as bursts: the segment
//!   scheduler already paces them, so the cap does not apply.)
//!
//! Packet encoding: `seq` is the PSN (packets, not bytes); data carries
//! `mtu_bytes` of payload (the last packet less) plus the 64-byte header
//! (`HEADER_BYTES`); `LAST` marks the flow's last PSN. ACK, NACK and CNP are
//! 64-byte control packets whose `ack` is the receiver's next expected PSN
//! and whose `sent_ps` echoes the send time of the data packet that
//! triggered them (TIMELY's RTT). A CNP is an `Ack` with the `ECE` flag (its
//! `ack` is not used): RoCE sends no ECN echo otherwise, and this needs no new
//! packet kind on the wire. DCQCN data packets carry `ECT`.
//!
//! | key (`[protocol.roce]`, shared by roce, dcqcn, timely) | default | source |
//! |---|---|---|
//! | `mtu_bytes` (payload; + 64 B header on the wire) | 1000 | [TH] §4.3 "MTU 1 KB"; taken as payload as in `HPCC` `PACKET_PAYLOAD_SIZE` 1000 (`CW` counts 1048 B on the wire) |
//! | `ack_every` (in-order packets per ACK; 0 = no ACKs) | 1 | `HPCC`/`CW`/`ALI` ACK interval 1 (`R3`: 256); 0 models the thesis's all-Reads RoCE+PFC runs, [TH] §4.4.2 |
//! | `rto_us` | 320 | [TH] §4.3.1 RTO_high (TA10) |
//! | `timeout` | true | [TH] §4.3.1 (a fixed timeout without PFC) |
//! | `pfc` | false | [TH] §4.3.1: with PFC the timeout is disabled |
//! | `nack_interval_us` | 500 | `HPCC`, `ALI`, `R3` (`CW`: 4) |
//! | `cnp_interval_us` | 4 with `[protocol.dcqcn] style = "firmware"`, 50 with `"paper"` (and for roce, timely), 0 with `"isekai"` | isekai: `ISK` answers every marked packet. paper: [DCQCN] via `HT-DCQCN`, `R3` `CNP_INTERVAL`. Firmware: *inf*, the decrease-check period, so each check can see a fresh CNP; `HPCC` flags every marked packet (no interval). With 50 µs the firmware's 1 µs α timer decays α 50 times between CNPs and α stays near 0.02: cuts of 1% per 50 µs |
//! | `window_packets` (0 = none) | 0 | RoCE has no window ([TH] §4.3.1) |
//! | `cnp_defer` | false | a mark within the CNP interval waits, and one CNP leaves when the interval ends: the paper-style NP as `HT-DCQCN` runs it (spec rdma-scheduling-params.md §1.3). Off: such a mark is not answered (a least gap between CNPs, as the firmware's `min_time_between_cnps`); [TH] does not say |
//! | `np_delay_us` | 0 | the receiver NIC's CNP generation delay: a CNP leaves that long after the mark that caused it (spec §1.6 pitfall 10: ~55 µs suspected on a Broadcom TD3 testbed, `ALI` #12). No public simulator models it |
//! | `nic_packets` (0 = no cap) | 1 | the NIC of [TH] Ch. 4's simulator, whose QPs poll the MAC (spec thesis.md §1.10), and `HPCC`'s (its NIC scheduler takes a packet from a ready QP when the link is free). 0 gives the sender's pacing alone (docs/rdma.md, "The NIC") |

mod irn;
#[cfg(test)]
mod irn_tests;
mod read;
#[cfg(test)]
mod read_tests;
mod sink;
mod source;
#[cfg(test)]
mod tests;
mod window;
use window::{window_controller, TcpWindow};

pub use irn::{
    IrnAimdDef, IrnDcqcnDef, IrnDctcpDef, IrnDef, IrnParams, IrnRules, IrnSink, IrnSource,
    IrnTimelyDef, Resend, RtoChoice, RtoInFlight,
};
pub use read::{
    is_read_request, read_requester, read_responder, responder_flow, ReadRequester, ReadResponder,
};
pub use sink::RoceSink;
pub use source::RoceSource;
pub use window::{RoceAimdDef, RoceDctcpDef};

use super::cc::dcqcn::Style;
use super::cc::timely::SegmentPacer;
use super::cc::{Controller, Dcqcn, Timely};
use super::config::{bad, in_range, Micros};
use super::{Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SwitchClass};
use crate::config::ConfigError;
use crate::packet::{Packet, Protocol, HEADER_BYTES};

/// `[protocol.roce]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoceParams {
    /// Payload bytes per full packet.
    pub mtu_bytes: u32,
    /// In-order packets per ACK; 0: no ACKs.
    pub ack_every: u32,
    /// Retransmission timeout (`rto_us`).
    #[serde(rename = "rto_us")]
    pub rto: Micros,
    /// Whether the sender times out at all.
    pub timeout: bool,
    /// The fabric is lossless (PFC): no timeout.
    pub pfc: bool,
    /// Least time between two NACKs for the same expected PSN (`nack_interval_us`).
    #[serde(rename = "nack_interval_us")]
    pub nack_interval: Micros,
    /// Least time between two CNPs of a flow (`cnp_interval_us`); by
    /// default it follows `[protocol.dcqcn] style`.
    #[serde(rename = "cnp_interval_us", skip_serializing_if = "Option::is_none")]
    pub cnp_interval: Option<Micros>,
    /// Cap on PSNs sent and not acknowledged; 0: none.
    pub window_packets: u32,
    /// The most packets of one flow (QP) waiting in the host's NIC queue;
    /// 0: no cap.
    pub nic_packets: u32,
    /// The notification point remembers a mark that came within the CNP
    /// interval and sends one CNP when the interval ends (`cnp_defer`).
    pub cnp_defer: bool,
    /// The receiver NIC's CNP generation delay (`np_delay_us`); 0: none.
    #[serde(rename = "np_delay_us")]
    pub np_delay: Micros,
}

impl Default for RoceParams {
    fn default() -> Self {
        RoceParams {
            mtu_bytes: 1000,
            ack_every: 1,
            rto: Micros::from_ps(320_000_000),
            timeout: true,
            pfc: false,
            nack_interval: Micros::from_ps(500_000_000),
            cnp_interval: None,
            window_packets: 0,
            nic_packets: 1,
            cnp_defer: false,
            np_delay: Micros::from_ps(0),
        }
    }
}

impl RoceParams {
    /// Checks the section; `key` is `protocol.roce`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        in_range(&k("mtu_bytes"), self.mtu_bytes, 1, 65_000)?;
        self.rto.positive(&k("rto_us"))?;
        self.nack_interval.positive(&k("nack_interval_us"))?;
        if let Some(c) = self.cnp_interval {
            c.positive(&k("cnp_interval_us"))?;
        }
        self.np_delay.zero_or_positive(&k("np_delay_us"))?;
        if self.ack_every == 0 && self.timeout && !self.pfc {
            return Err(bad(
                &k("ack_every"),
                0,
                "without ACKs every flow would time out: set pfc = true or timeout = false",
            ));
        }
        Ok(())
    }

    /// Checks what depends on the rest of the scenario: DCQCN needs a switch
    /// that marks ECN (else it never slows down), as does IRN + DCTCP (else
    /// it is `irn_aimd` under another name), and TIMELY needs ACKs for
    /// its RTT samples (IRN ACKs every packet whatever `ack_every` says).
    /// `switch_kind` names the switches' discipline; `switch_marks` is
    /// whether any tier can mark.
    pub fn check_with_scenario(
        &self,
        used: &[Protocol],
        switch_kind: &str,
        switch_marks: bool,
    ) -> Result<(), ConfigError> {
        let uses = |p: Protocol| used.contains(&p);
        // The controllers that slow down only on ECN marks.
        let needs_marks: [(&[Protocol], &str); 3] = [
            (
                &[Protocol::Dcqcn, Protocol::IrnDcqcn],
                "never marks ECN, so DCQCN never slows down: use \"ecn_ramp\", \"ecn\" or \"red\" on some tier",
            ),
            (
                &[Protocol::IrnDctcp],
                "never marks ECN, so irn_dctcp never cuts for ECN (it would be irn_aimd): use \"ecn\", \"red\" or \"ecn_ramp\" on some tier",
            ),
            (
                &[Protocol::RoceDctcp],
                "never marks ECN, so roce_dctcp never cuts for ECN (it would be roce_aimd): use \"ecn\", \"red\" or \"ecn_ramp\" on some tier",
            ),
        ];
        for (protocols, why) in needs_marks {
            if !switch_marks && protocols.iter().any(|&p| uses(p)) {
                return Err(bad("switch.queue.kind", format!("\"{switch_kind}\""), why));
            }
        }
        if (uses(Protocol::RoceAimd) || uses(Protocol::RoceDctcp)) && self.ack_every == 0 {
            return Err(bad(
                "protocol.roce.ack_every",
                0,
                "roce_aimd and roce_dctcp open their window on ACKs: set it to 1 or more",
            ));
        }
        if uses(Protocol::Timely) && self.ack_every == 0 {
            return Err(bad(
                "protocol.roce.ack_every",
                0,
                "TIMELY needs ACKs for its RTT samples: set it to 1 or more",
            ));
        }
        Ok(())
    }

    /// The notification point's CNP interval, ps, for a DCQCN of `style`.
    fn cnp_interval_ps(&self, style: Style) -> u64 {
        let us = match style {
            Style::Firmware => 4,
            Style::Paper => 50,
            // `ISK` sends a CNP for every marked packet.
            Style::Isekai => 0,
        };
        self.cnp_interval.map_or(us * 1_000_000, |m| m.ps)
    }

    /// The sender's timeout, if it has one.
    fn rto_ps(&self) -> Option<u64> {
        (self.timeout && !self.pfc).then_some(self.rto.ps)
    }
}

/// The protocol table's row for plain RoCE: line rate, no congestion control.
pub struct RoceDef;

impl ProtocolDef for RoceDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const GO_BACK_N: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.roce.mtu_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let src = RoceSource::new(flow, proto, &p.roce, None, false, None);
        Endpoint::RoceSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        let cnp = p.roce.cnp_interval_ps(Style::Paper);
        Endpoint::RoceSink(Box::new(RoceSink::new(first, &p.roce, cnp)))
    }
}

/// The protocol table's row for RoCE + DCQCN: ECN-capable data, CNPs, and
/// the reaction point of `[protocol.dcqcn]`.
pub struct DcqcnDef;

impl ProtocolDef for DcqcnDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const GO_BACK_N: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.roce.mtu_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let cc = Controller::Dcqcn(Dcqcn::new(p.dcqcn.resolve(flow.nic_bps)));
        let src = RoceSource::new(flow, proto, &p.roce, Some(cc), true, None);
        Endpoint::RoceSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        let cnp = p.roce.cnp_interval_ps(p.dcqcn.style);
        Endpoint::RoceSink(Box::new(RoceSink::new(first, &p.roce, cnp)))
    }
}

/// A TIMELY sender's controller and rate engine (`cc/timely.rs`).
fn timely_parts(flow: &FlowInfo, p: &ProtocolParams) -> (Controller, SegmentPacer) {
    let cc = Controller::Timely(Timely::new(&p.timely, flow.nic_bps));
    let mtu = p.roce.mtu_bytes;
    let pacer = SegmentPacer::new(&p.timely, mtu, HEADER_BYTES, flow.nic_bps);
    (cc, pacer)
}

/// The protocol table's row for RoCE + TIMELY: segments of
/// `[protocol.timely] segment_bytes`, one RTT sample each.
pub struct TimelyDef;

impl ProtocolDef for TimelyDef {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    const MESSAGES: bool = true;
    const NIC_FETCH: bool = true;
    const GO_BACK_N: bool = true;
    const READS: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.roce.mtu_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        let (cc, pacer) = timely_parts(flow, p);
        let src = RoceSource::new(flow, proto, &p.roce, Some(cc), false, Some(pacer));
        Endpoint::RoceSource(Box::new(src))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        RoceDef::sink(first, p)
    }
}
