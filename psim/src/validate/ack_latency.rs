//! Per-packet send-to-ACK latency from a packet trace: the metric of NDP's
//! Fig. 4 ([P] §3.2.4, "a CDF of latency from when a packet is first sent
//! to when it is Acked at the sender, including any delay due to
//! retransmissions"), and the RTT samples behind V26's worst-case RTT.
//!
//! # Definition
//!
//! For every data packet `(flow, seq)`:
//!
//! - **first send**: the first `enqueue` row of the packet at its source
//!   host's NIC (entity = the packet's `src`): the moment the transport hands
//!   its first transmission to the NIC. Time queued in the NIC (NDP's first
//!   window goes out as one burst) is part of the latency, as in the paper,
//!   where a packet's time starts when its source sends it;
//! - **ACK at the sender**: the first ACK with the same `(flow, seq)` to
//!   arrive at the source. NDP acknowledges each packet by its own `seq`
//!   (transport/ndp.rs), so that ACK is the one covering the packet. The trace
//!   records events at output queues only, so the arrival is the ACK's
//!   `dequeue` row at the port whose link ends at the source, plus that
//!   link's serialisation of the ACK and its propagation delay;
//! - **send-to-ACK latency** = arrival − first send. A trimmed, NACKed or
//!   bounced packet keeps its first send: the wait for and the trip of its
//!   retransmissions are included, as the paper counts them.
//!
//! The **RTT** of a packet sent exactly once (one `enqueue` at the source
//! before its ACK) runs from its `dequeue` at the source NIC to the same
//! ACK arrival: the time on the network alone, what the switch queues bound
//! ([P] §3.2.4's "400 µs maximum RTT").
//!
//! A packet whose ACK is not in the trace (in flight at a `stop_us`, or its
//! rows filtered out) is left out. Transports with cumulative ACKs (the TCP
//! family) would need "the first ACK whose cumulative number passes the
//! packet", which this reduction does not compute: it is for NDP.
//!
//! # Sampling
//!
//! `[trace.packets] sample = f` keeps a packet by a hash of `(seed, flow,
//! seq)`, and keeps its ACK with it (docs/outputs.md), so a sampled trace
//! yields the latencies of a uniform random subset of the packets, drawn
//! independently of their latency: percentiles are unbiased estimates whose
//! error shrinks as `1/sqrt(f × packets)` (the median of 10,000 samples is
//! within about 1% of the population's in rank). Only the extremes (the
//! largest RTT) can be missed by a sample. The events needed are `enqueue`
//! and `dequeue`; leaving the others out (`events = ["enqueue",
//! "dequeue"]`) keeps the trace smaller without changing the result.

use std::collections::HashMap;

use crate::topo::Topology;
use crate::trace::packets::PacketRow;
use crate::trace::spec::PacketEvent;

/// What the trace showed of each acknowledged data packet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckLatencies {
    /// Send-to-ACK latency of every acknowledged traced data packet, ps,
    /// in the order the ACKs arrived.
    pub send_to_ack_ps: Vec<u64>,
    /// RTT of every acknowledged traced data packet sent exactly once, ps.
    pub rtt_ps: Vec<u64>,
}

/// One data packet's sends so far.
#[derive(Clone, Copy)]
enum State {
    /// First enqueue at the source, first dequeue there (if seen), sends.
    Sent {
        first: u64,
        left: Option<u64>,
        sends: u32,
    },
    /// Its ACK arrived: later rows of the packet change nothing.
    Acked,
}

/// Reduces a packet trace (rows in the trace's causal order) to the
/// latencies of its acknowledged data packets; `topo` gives each ACK's last
/// link.
pub fn ack_latencies(rows: &[PacketRow], topo: &Topology) -> AckLatencies {
    let mut seen: HashMap<(u64, u64), State> = HashMap::new();
    let mut out = AckLatencies::default();
    for r in rows {
        match (r.kind, r.event) {
            ("data", PacketEvent::Enqueue) if r.entity == r.src => {
                match seen.entry((r.flow, r.seq)).or_insert(State::Sent {
                    first: r.time_ps,
                    left: None,
                    sends: 0,
                }) {
                    State::Sent { sends, .. } => *sends += 1,
                    State::Acked => {}
                }
            }
            ("data", PacketEvent::Dequeue) if r.entity == r.src => {
                if let Some(State::Sent { left, .. }) = seen.get_mut(&(r.flow, r.seq)) {
                    left.get_or_insert(r.time_ps);
                }
            }
            ("ack", PacketEvent::Dequeue) => {
                let Some(at) = super::one_way::delivered_at(r, topo) else {
                    continue;
                };
                let Some(state) = seen.get_mut(&(r.flow, r.seq)) else {
                    continue;
                };
                let State::Sent { first, left, sends } = *state else {
                    continue;
                };
                out.send_to_ack_ps.push(at - first);
                if let (1, Some(left)) = (sends, left) {
                    out.rtt_ps.push(at - left);
                }
                *state = State::Acked;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{FatTree, LinkSpec};
    use crate::units::tx_time_ps;

    const L: LinkSpec = LinkSpec {
        rate_bps: 10_000_000_000,
        delay_ps: 1_000_000,
    };

    fn topo() -> Topology {
        Topology::FatTree(FatTree::new(4, 1, L, L, L))
    }

    /// A row of flow 7 from host 0 to host 10 (data) or back (ack).
    fn row(
        t: u64,
        ev: PacketEvent,
        entity: u32,
        port: u16,
        kind: &'static str,
        seq: u64,
    ) -> PacketRow {
        let (src, dst, size) = if kind == "ack" {
            (10, 0, 64)
        } else {
            (0, 10, 9064)
        };
        PacketRow {
            time_ps: t,
            event: ev,
            entity,
            entity_seq: t,
            port,
            flow: 7,
            seq,
            kind,
            flags: 0,
            src,
            dst,
            size_bytes: size,
            payload_bytes: size - 64,
            queue_bytes: 0,
            queue_pkts: 0,
        }
    }

    /// The ToR of host 0 and its port towards host 0.
    fn last_hop(t: &Topology) -> (u32, u16) {
        let tor = t.port(0, 0).peer;
        (tor, crate::validate::testrows::port_towards(t, tor, 0))
    }

    /// Hand-built trace, answers by hand: packet 0 is sent once; packet 1
    /// is sent, trimmed and resent, and its latency runs from the first
    /// send; packet 2's ACK is not in the trace; an ACK dequeued at a hop
    /// short of the source is not an arrival; a second ACK changes nothing.
    #[test]
    fn latency_runs_from_the_first_send_to_the_ack_arrival() {
        use PacketEvent::{Dequeue, Enqueue, Trim};
        let t = topo();
        let (tor, port) = last_hop(&t);
        let tail = tx_time_ps(64, L.rate_bps) + L.delay_ps; // 51.2 ns + 1 µs
        assert_eq!(tail, 1_051_200);
        let rows = vec![
            row(0, Enqueue, 0, 0, "data", 0),
            row(0, Dequeue, 0, 0, "data", 0),
            row(10, Enqueue, 0, 0, "data", 1),
            row(7_000_000, Dequeue, 0, 0, "data", 1),
            row(8_000_000, Trim, tor, 2, "data", 1),
            row(20_000_000, Enqueue, 0, 0, "data", 2),
            // packet 0's ACK one hop before the source, then at its last hop
            row(40_000_000, Dequeue, tor + 1, 0, "ack", 0),
            row(50_000_000, Dequeue, tor, port, "ack", 0),
            // packet 1 resent at 90 µs, acked at 150 µs
            row(90_000_000, Enqueue, 0, 0, "data", 1),
            row(90_000_000, Dequeue, 0, 0, "data", 1),
            row(150_000_000, Dequeue, tor, port, "ack", 1),
            // a duplicate ACK of packet 0
            row(160_000_000, Dequeue, tor, port, "ack", 0),
        ];
        let l = ack_latencies(&rows, &t);
        assert_eq!(
            l.send_to_ack_ps,
            vec![50_000_000 + tail, 150_000_000 + tail - 10]
        );
        // Only packet 0 was sent once: from its NIC departure at 0.
        assert_eq!(l.rtt_ps, vec![50_000_000 + tail]);
    }

    /// An ACK of a packet whose send is not in the trace (sampled out, or
    /// before the trace's window) is not a latency.
    #[test]
    fn an_ack_without_its_send_is_left_out() {
        let t = topo();
        let (tor, port) = last_hop(&t);
        let rows = vec![row(5, PacketEvent::Dequeue, tor, port, "ack", 3)];
        assert_eq!(ack_latencies(&rows, &t), AckLatencies::default());
    }
}
