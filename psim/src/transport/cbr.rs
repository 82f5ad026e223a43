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

use super::{Ctx, FlowInfo, SinkStats, SourceStats};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::units::tx_time_ps;

/// CBR parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CbrParams {
    /// Sending rate in bits per second; `None` means the NIC line rate.
    pub rate_bps: Option<u64>,
    /// Wire bytes per packet.
    pub packet_bytes: u32,
}

impl Default for CbrParams {
    fn default() -> Self {
        CbrParams {
            rate_bps: None,
            packet_bytes: 1500,
        }
    }
}

/// Sender of a CBR flow.
#[derive(Clone, Debug)]
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
            rate_bps: p.rate_bps.unwrap_or(flow.nic_bps),
            packet_bytes: p.packet_bytes,
            start_ps: flow.start_ps,
            wire_sent: 0,
            next_at: None,
            stats: SourceStats::default(),
        }
    }
    pub(super) fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.next_at = Some(cx.now);
        self.on_timer(cx);
    }
    pub(super) fn on_timer(&mut self, cx: &mut Ctx<'_>) {
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
    pub(super) fn poll_at(&self) -> Option<u64> {
        self.next_at
    }
}

/// Receiver of a CBR flow.
#[derive(Clone, Debug, Default)]
pub struct CbrSink {
    expected: Option<u64>,
    /// Counters.
    pub stats: SinkStats,
}

impl CbrSink {
    pub(super) fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        self.stats.bytes_received += pkt.payload as u64;
        if pkt.has(flags::LAST) {
            self.expected = Some(pkt.seq + pkt.payload as u64);
        }
        if self.stats.finish_ps.is_none() && self.expected == Some(self.stats.bytes_received) {
            self.stats.finish_ps = Some(cx.now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
    }

    /// Drives a source alone: returns (time, packet) for every packet it emits.
    fn drive(src: &mut Endpoint, limit: usize) -> Vec<(u64, Packet)> {
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut pulls = crate::transport::PullQueue::default();
        let mut out = Vec::new();
        let mut sent = Vec::new();
        let mut now = 1_000;
        src.on_start(&mut Ctx {
            now,
            host: 1,
            out: &mut out,
            rng: &mut rng,
            slot: 0,
            nic_bps: 10_000_000_000,
            pulls: &mut pulls,
        });
        sent.extend(out.drain(..).map(|p| (now, p)));
        while let Some(t) = src.poll_at() {
            if sent.len() >= limit {
                break;
            }
            now = t;
            src.on_timer(&mut Ctx {
                now,
                host: 1,
                out: &mut out,
                rng: &mut rng,
                slot: 0,
                nic_bps: 10_000_000_000,
                pulls: &mut pulls,
            });
            sent.extend(out.drain(..).map(|p| (now, p)));
        }
        sent
    }

    #[test]
    fn sized_flow_sends_exactly_its_bytes_at_the_configured_rate() {
        let p = CbrParams {
            rate_bps: Some(5_000_000_000),
            packet_bytes: 1064,
        };
        let mut src = Endpoint::source(
            Protocol::Cbr,
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
        let mut src = Endpoint::source(Protocol::Cbr, &flow(None), &ProtocolParams::default());
        let sent = drive(&mut src, 50);
        assert_eq!(sent.len(), 50);
        // 1500 B at 10 Gb/s = 1.2 us per packet, no drift after 49 gaps.
        assert_eq!(sent[49].0 - sent[0].0, 49 * 1_200_000);
    }

    #[test]
    fn sink_finishes_when_all_bytes_arrived() {
        let mut src =
            Endpoint::source(Protocol::Cbr, &flow(Some(3000)), &ProtocolParams::default());
        let sent = drive(&mut src, 10);
        let mut sink = Endpoint::sink(&sent[0].1, &Default::default());
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut pulls = crate::transport::PullQueue::default();
        let mut out = Vec::new();
        for (i, (_, p)) in sent.iter().enumerate() {
            sink.on_packet(
                p.clone(),
                &mut Ctx {
                    now: 100 + i as u64,
                    host: 2,
                    out: &mut out,
                    rng: &mut rng,
                    slot: 0,
                    nic_bps: 10_000_000_000,
                    pulls: &mut pulls,
                },
            );
        }
        let st = sink.sink_stats().unwrap();
        assert_eq!(st.bytes_received, 3000);
        assert_eq!(st.finish_ps, Some(100 + sent.len() as u64 - 1));
    }

    #[test]
    fn sink_does_not_finish_when_a_packet_is_lost() {
        let mut src =
            Endpoint::source(Protocol::Cbr, &flow(Some(3000)), &ProtocolParams::default());
        let sent = drive(&mut src, 10);
        let mut sink = Endpoint::sink(&sent[0].1, &Default::default());
        let mut rng = crate::rng::stream_rng(0, 0);
        let mut pulls = crate::transport::PullQueue::default();
        let mut out = Vec::new();
        for (_, p) in sent.iter().skip(1) {
            sink.on_packet(
                p.clone(),
                &mut Ctx {
                    now: 5,
                    host: 2,
                    out: &mut out,
                    rng: &mut rng,
                    slot: 0,
                    nic_bps: 10_000_000_000,
                    pulls: &mut pulls,
                },
            );
        }
        assert_eq!(sink.sink_stats().unwrap().finish_ps, None);
    }
}
