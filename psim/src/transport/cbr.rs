//! Paced constant-bit-rate source and its sink.
//!
//! Not a model from the papers: a load generator with no feedback and no
//! reliability, so that the engine, links and queues can be checked against
//! closed-form arithmetic before real transports exist.
//!
//! Parameters (scenario `[protocol.cbr]`):
//! - `rate_gbps`: sending rate; default: the source NIC's line rate.
//! - `packet_bytes`: wire size of each packet, header included; default 1500
//!   (Ethernet MTU). Payload per packet is `packet_bytes - 64`
//!   ([`HEADER_BYTES`]); the last packet of a sized flow is shorter.
//!
//! Pacing is exact: packet `i` leaves at `start + tx_time(wire bytes of
//! packets 0..i, rate)`, computed from the running total so that rounding
//! never accumulates.

use super::config::bad;
use super::{Ctx, Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SinkStats, SourceStats};
use super::{SwitchClass, Transport};
use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::units::{gbps_to_bps, tx_time_ps};

/// `[protocol.cbr]`.
///
/// | key | default | source |
/// |---|---|---|
/// | `rate_gbps` | the source NIC's line rate | (load generator, not from a paper) |
/// | `packet_bytes` | 1500 (Ethernet MTU), header included | (load generator) |
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CbrParams {
    /// Sending rate, Gb/s; `None` means the NIC line rate.
    pub rate_gbps: Option<f64>,
    /// Wire bytes per packet.
    pub packet_bytes: u32,
}

impl Default for CbrParams {
    fn default() -> Self {
        CbrParams {
            rate_gbps: None,
            packet_bytes: 1500,
        }
    }
}

impl CbrParams {
    /// Checks the section; `key` is `protocol.cbr`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if let Some(g) = self.rate_gbps {
            if g.is_nan() || g <= 0.0 || gbps_to_bps(g) == 0 {
                return Err(ConfigError::NonPositiveRate {
                    key: format!("{key}.rate_gbps"),
                    value: g,
                });
            }
        }
        if self.packet_bytes <= HEADER_BYTES {
            return Err(bad(
                &format!("{key}.packet_bytes"),
                self.packet_bytes,
                "must exceed the 64-byte header",
            ));
        }
        Ok(())
    }
}

/// The protocol table's row for CBR.
pub struct Cbr;

impl ProtocolDef for Cbr {
    const CLASS: SwitchClass = SwitchClass::Other;
    // No reliability, so no completion time to compare with.
    const IDEAL_FCT: bool = false;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.cbr.packet_bytes - HEADER_BYTES
    }
    fn source(_: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Endpoint::CbrSource(CbrSource::new(flow, &p.cbr))
    }
    fn sink(_: &Packet, _: &ProtocolParams) -> Endpoint {
        Endpoint::CbrSink(CbrSink::default())
    }
}

/// Sender of a CBR flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CbrSource {
    flow: u64,
    src: u32,
    dst: u32,
    prio: u8,
    path: u32,
    size: Option<u64>,
    rate_bps: u64,
    packet_bytes: u32,
    start_ps: u64,
    wire_sent: u64,
    next_at: Option<u64>,
    /// Counters.
    pub stats: SourceStats,
}

impl CbrSource {
    /// A source for `flow`.
    pub fn new(flow: &FlowInfo, p: &CbrParams) -> Self {
        CbrSource {
            flow: flow.id,
            src: flow.src,
            dst: flow.dst,
            prio: flow.prio,
            path: flow.ecmp_path,
            size: flow.size,
            rate_bps: p.rate_gbps.map_or(flow.nic_bps, gbps_to_bps),
            packet_bytes: p.packet_bytes,
            start_ps: flow.start_ps,
            wire_sent: 0,
            next_at: None,
            stats: SourceStats::default(),
        }
    }
}

impl Transport for CbrSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.next_at = Some(cx.now);
        self.on_timer(cx);
    }
    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let Some(at) = self.next_at else { return };
        if cx.now < at {
            return;
        }
        let max_payload = (self.packet_bytes - HEADER_BYTES) as u64;
        let offset = self.stats.bytes_sent;
        let payload = match self.size {
            Some(size) => max_payload.min(size - offset),
            None => max_payload,
        };
        let last = self.size == Some(offset + payload);
        let size = payload as u32 + HEADER_BYTES;
        cx.out.push(Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            seq: offset,
            ack: 0,
            size,
            payload: payload as u32,
            path: self.path,
            sent_ps: cx.now,
            kind: PacketKind::Data,
            proto: Protocol::Cbr,
            flags: if last { flags::LAST } else { 0 },
            prio: self.prio,
            rank: 0,
        });
        self.stats.bytes_sent += payload;
        self.stats.packets_sent += 1;
        self.wire_sent += size as u64;
        self.next_at = (!last).then(|| self.start_ps + tx_time_ps(self.wire_sent, self.rate_bps));
    }
    fn poll_at(&self) -> Option<u64> {
        self.next_at
    }
    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}

/// Receiver of a CBR flow.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CbrSink {
    expected: Option<u64>,
    /// Counters.
    pub stats: SinkStats,
}

impl Transport for CbrSink {
    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        self.stats.bytes_received += pkt.payload as u64;
        if pkt.has(flags::LAST) {
            self.expected = Some(pkt.seq + pkt.payload as u64);
        }
        if self.stats.finish_ps.is_none() && self.expected == Some(self.stats.bytes_received) {
            self.stats.finish_ps = Some(cx.now);
        }
    }
    fn sink_stats(&self) -> Option<&SinkStats> {
        Some(&self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::testkit::Host;
    use crate::transport::{Endpoint, ProtocolParams};

    fn flow(size: Option<u64>) -> FlowInfo {
        FlowInfo {
            id: 7,
            src: 1,
            dst: 2,
            size,
            start_ps: 1_000,
            prio: 0,
            num_paths: 1,
            ecmp_path: 0,
            nic_bps: 10_000_000_000,
            ideal_fct_ps: None,
            app: None,
            read: false,
        }
    }

    /// Drives a source alone (test kit host): (time, packet) for every
    /// packet it emits, up to `limit`.
    fn drive(src: &mut Endpoint, limit: usize) -> Vec<(u64, Packet)> {
        let mut h = Host::new(1, src.clone());
        let mut sent: Vec<_> = h.start(1_000).into_iter().map(|p| (1_000, p)).collect();
        while sent.len() < limit {
            let Some((t, out)) = h.wake(u64::MAX) else {
                break;
            };
            sent.extend(out.into_iter().map(|p| (t, p)));
        }
        *src = h.ep;
        sent
    }

    #[test]
    fn sized_flow_sends_exactly_its_bytes_at_the_configured_rate() {
        let p = CbrParams {
            rate_gbps: Some(5.0),
            packet_bytes: 1064,
        };
        let mut src = Protocol::Cbr.source(
            &flow(Some(2500)),
            &ProtocolParams {
                cbr: p,
                ..Default::default()
            },
        );
        let sent = drive(&mut src, 100);
        // 2500 B of payload at 1000 B per packet: 1000, 1000, 500.
        let payloads: Vec<u32> = sent.iter().map(|(_, p)| p.payload).collect();
        assert_eq!(payloads, vec![1000, 1000, 500]);
        // Send times: start, start + 1064 B at 5 Gb/s (1702.4 ns -> 1_702_400 ps), twice that.
        let times: Vec<u64> = sent.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![1_000, 1_000 + 1_702_400, 1_000 + 3_404_800]);
        assert!(sent[2].1.has(flags::LAST));
        assert!(!sent[1].1.has(flags::LAST));
        assert_eq!(src.source_stats().unwrap().bytes_sent, 2500);
        assert_eq!(src.poll_at(), None);
    }

    #[test]
    fn long_lived_flow_keeps_sending_at_line_rate() {
        let mut src = Protocol::Cbr.source(&flow(None), &ProtocolParams::default());
        let sent = drive(&mut src, 50);
        assert_eq!(sent.len(), 50);
        // 1500 B at 10 Gb/s = 1.2 us per packet, no drift after 49 gaps.
        assert_eq!(sent[49].0 - sent[0].0, 49 * 1_200_000);
    }

    #[test]
    fn sink_finishes_when_all_bytes_arrived() {
        let mut src = Protocol::Cbr.source(&flow(Some(3000)), &ProtocolParams::default());
        let sent = drive(&mut src, 10);
        let mut sink = Host::new(2, Protocol::sink(&sent[0].1, &Default::default()));
        for (i, (_, p)) in sent.iter().enumerate() {
            assert!(sink.deliver(100 + i as u64, p.clone()).is_empty());
        }
        let st = sink.ep.sink_stats().unwrap();
        assert_eq!(st.bytes_received, 3000);
        assert_eq!(st.finish_ps, Some(100 + sent.len() as u64 - 1));
    }

    #[test]
    fn sink_does_not_finish_when_a_packet_is_lost() {
        let mut src = Protocol::Cbr.source(&flow(Some(3000)), &ProtocolParams::default());
        let sent = drive(&mut src, 10);
        let mut sink = Host::new(2, Protocol::sink(&sent[0].1, &Default::default()));
        for (_, p) in sent.iter().skip(1) {
            sink.deliver(5, p.clone());
        }
        assert_eq!(sink.ep.sink_stats().unwrap().finish_ps, None);
    }
}
