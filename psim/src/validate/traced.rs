//! Figures that need a run's traces, not only its flow table: the [TRIM]
//! Fig 5 and Fig 12 targets (P1–P3, P16) look at when trimmed headers reach
//! the receiver and when the chip first deflects.
//!
//! A run yields them only when its overrides turn the traces on
//! (`trace.packets.enabled=true` with `dequeue` events for headers,
//! `trace.tofino.enabled=true` for the DoD queues); they are reduced here to
//! a few numbers per header so that a validation pass keeps no packet rows.
//! NDP's Fig. 4 latencies (V3, V26) come from the same trace
//! ([`super::ack_latency`]), and Fig. 23's trims by tier (V25) from its
//! `trim` rows ([`TierTrims`]), and the UPS tail delays (T37) from its
//! data packets' one-way delays ([`super::one_way`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::ack_latency::AckLatencies;
use crate::topo::{EntityKind, Topology};
use crate::trace::chip::ChipRow;
use crate::trace::packets::PacketRow;
use crate::trace::spec::PacketEvent;

/// One trimmed header leaving a switch port (NDP's header queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderSeen {
    /// When the switch dequeued it, ps.
    pub at_ps: u64,
    /// From its data packet's last departure from the sender's NIC to this
    /// dequeue, ps: the header's one-way latency short of one 64 B
    /// serialisation and one link, the same for every header of a
    /// one-switch run.
    pub latency_ps: u64,
}

/// What a run's traces add to its [`super::metrics::RunData`].
#[derive(Clone, Debug, Default)]
pub struct Traced {
    /// Every trimmed header a switch dequeued towards its destination
    /// (returned headers left out), in trace order.
    pub headers: Vec<HeaderSeen>,
    /// When a DoD queue of any chip first held a packet, ps (None: never, or
    /// no chip trace).
    pub first_dod_ps: Option<u64>,
    /// Whether the run wrote a chip trace.
    pub chip_traced: bool,
    /// The chip trace's mode rows (series 0), in trace order.
    pub modes: Vec<ChipRow>,
    /// Whether the run wrote a packet trace.
    pub packets_traced: bool,
    /// Send-to-ACK latencies and RTTs of the traced data packets.
    pub acks: AckLatencies,
    /// Traced trims of data packets, by where they happened.
    pub trims: TierTrims,
    /// The first arrival of every traced data packet that arrived
    /// ([`super::one_way`]).
    pub arrivals: Vec<super::one_way::Arrival>,
    /// Traced data packets by the congestion points they met
    /// ([`super::congestion_points`]).
    pub congestion_points: Vec<u64>,
    /// The queue time series (`[trace.queues]`) in units of time: every
    /// sample of each (entity, port) as (sample time, its queued bytes'
    /// serialisation at the port's link rate), ps ([TH] Fig. 3.2's "queue
    /// occupancy ... in units of time"). Empty without a queue trace.
    pub queue_time_ps: BTreeMap<(u32, u16), Vec<(u64, u64)>>,
}

/// Data packets trimmed (`trim` rows of `data` packets) by the switch tier
/// and direction of the port that cut them. In a FatTree a packet climbs
/// only at its source's ToR, so `tor_up` is "the first ToR" of [P] §6.3
/// and the rest is "past the ToR". Counted from the rows, so a sampled
/// trace (`sample < 1`) gives a sample of the trims, not their number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierTrims {
    /// At a ToR port towards an aggregation (or spine) switch.
    pub tor_up: u64,
    /// At a ToR port towards a host.
    pub tor_down: u64,
    /// At an aggregation switch, either way.
    pub agg: u64,
    /// Of `agg`, those at a port towards a core switch.
    pub agg_up: u64,
    /// At a core (or spine) switch.
    pub core: u64,
}

impl TierTrims {
    /// Counts the `trim` rows of data packets; `topo` tells tiers and
    /// directions apart.
    pub fn count(rows: &[PacketRow], topo: &Topology) -> TierTrims {
        let mut t = TierTrims::default();
        for r in rows
            .iter()
            .filter(|r| r.event == PacketEvent::Trim && r.kind == "data")
        {
            match topo.kind(r.entity) {
                EntityKind::Tor => {
                    let peer = topo.port(r.entity, r.port).peer;
                    if peer < topo.hosts() {
                        t.tor_down += 1;
                    } else {
                        t.tor_up += 1;
                    }
                }
                EntityKind::Agg => {
                    t.agg += 1;
                    let peer = topo.port(r.entity, r.port).peer;
                    if topo.kind(peer) == EntityKind::Core {
                        t.agg_up += 1;
                    }
                }
                EntityKind::Core => t.core += 1,
                EntityKind::Host => {}
            }
        }
        t
    }

    /// Trims anywhere but the first ToR's uplinks.
    pub fn past_first_tor(&self) -> u64 {
        self.tor_down + self.agg + self.core
    }

    /// Trims on the way up: at ToR and aggregation ports towards the core
    /// ([P] §3.2's "uplinks", where sender path permutation should leave
    /// almost none).
    pub fn uplinks(&self) -> u64 {
        self.tor_up + self.agg_up
    }
}

/// Each queue sample as (its time, the time its bytes take to leave at the
/// port's link rate), grouped by (entity, port) in time order.
pub fn queue_time(
    samples: &[crate::trace::QueueSample],
    topo: &Topology,
) -> BTreeMap<(u32, u16), Vec<(u64, u64)>> {
    let mut out: BTreeMap<(u32, u16), Vec<(u64, u64)>> = BTreeMap::new();
    for s in samples {
        let rate = topo.port(s.node, s.port).link.rate_bps;
        let t = crate::units::tx_time_ps(s.queue_bytes, rate.max(1));
        out.entry((s.node, s.port))
            .or_default()
            .push((s.time_ps, t));
    }
    out
}

/// The share of `[0, end_ps)` that egress port `port` spends in `mode`
/// (0 optimistic, 1 half-pessimistic, 2 pessimistic, 3 trim-all;
/// docs/tofino.md, "Trace"), averaged over the (switch, pipeline) pairs with
/// a mode row for the port. Each pair is optimistic until its first row and
/// then in the mode of its latest row. A port no pipeline ever left
/// optimistic is wholly optimistic.
pub fn mode_share(rows: &[ChipRow], port: u16, mode: u32, end_ps: u64) -> f64 {
    let mut by_pair: BTreeMap<(u32, u16), (u64, u32, u64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.series == 0 && r.port == port) {
        let (since, cur, acc) = by_pair.entry((r.switch, r.pipeline)).or_insert((0, 0, 0));
        let t = r.time_ps.min(end_ps);
        if *cur == mode {
            *acc += t - *since;
        }
        (*since, *cur) = (t, r.value);
    }
    if by_pair.is_empty() {
        return if mode == 0 { 1.0 } else { 0.0 };
    }
    let total: f64 = by_pair
        .values()
        .map(|&(since, cur, acc)| {
            let tail = if cur == mode { end_ps - since } else { 0 };
            (acc + tail) as f64 / end_ps as f64
        })
        .sum();
    total / by_pair.len() as f64
}

/// The headers of a packet trace, rows in the trace's (causal) order. A
/// data row dequeued at its own source host is the NIC departure; a
/// `header` row dequeued elsewhere, not bounced, is a switch sending the
/// header on (in a one-switch run: to the receiver). Headers whose data
/// packet's departure is not in the trace (sampled out) are skipped.
pub fn headers(rows: &[PacketRow]) -> Vec<HeaderSeen> {
    let mut sent: HashMap<(u64, u64), u64> = HashMap::new();
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.event == PacketEvent::Dequeue) {
        if r.kind == "data" && r.entity == r.src {
            sent.insert((r.flow, r.seq), r.time_ps);
        } else if r.kind == "header"
            && r.flags & crate::packet::flags::BOUNCED == 0
            && r.entity != r.src
        {
            if let Some(&t0) = sent.get(&(r.flow, r.seq)) {
                out.push(HeaderSeen {
                    at_ps: r.time_ps,
                    latency_ps: r.time_ps - t0,
                });
            }
        }
    }
    out
}

/// Reads the traces a finished run on `topo` left in `dir` (those it has).
pub fn read(dir: &Path, topo: &Topology) -> Result<Traced, String> {
    let mut t = Traced::default();
    if dir.join("packets").is_dir() {
        let rows =
            crate::trace::read_packets(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        t.headers = headers(&rows);
        t.acks = super::ack_latency::ack_latencies(&rows, topo);
        t.trims = TierTrims::count(&rows, topo);
        t.arrivals = super::one_way::arrivals(&rows, topo);
        t.congestion_points = super::congestion_points::congestion_points(&rows, topo);
        t.packets_traced = true;
    }
    if dir.join("queues").is_dir() {
        let (_, samples) =
            crate::trace::read_queues(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        t.queue_time_ps = queue_time(&samples, topo);
    }
    if dir.join("tofino").is_dir() {
        let rows = crate::trace::read_tofino(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        t.first_dod_ps = rows
            .iter()
            .filter(|r| r.series == 1 && r.value > 0)
            .map(|r| r.time_ps)
            .min();
        t.chip_traced = true;
        t.modes = rows.into_iter().filter(|r| r.series == 0).collect();
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, entity: u32, kind: &'static str, seq: u64, flags: u8) -> PacketRow {
        PacketRow {
            time_ps: t,
            event: PacketEvent::Dequeue,
            entity,
            entity_seq: t,
            port: 0,
            flow: 7,
            seq,
            kind,
            flags,
            src: 3,
            dst: 0,
            size_bytes: 64,
            payload_bytes: 0,
            queue_bytes: 0,
            queue_pkts: 0,
        }
    }

    /// Mode shares: a step function per pipeline, averaged over the
    /// pipelines that have rows for the port; other ports are optimistic.
    #[test]
    fn mode_shares_follow_the_rows() {
        let m = |t: u64, pipeline: u16, value: u32| ChipRow {
            time_ps: t,
            switch: 64,
            pipeline,
            port: 3,
            series: 0,
            value,
        };
        // Pipeline 0: optimistic 0-20, pessimistic 20-50, half 50-100.
        // Pipeline 1: optimistic 0-60, pessimistic 60-100.
        let rows = vec![m(20, 0, 2), m(50, 0, 1), m(60, 1, 2)];
        let share = |mode| mode_share(&rows, 3, mode, 100);
        assert!((share(2) - (0.3 + 0.4) / 2.0).abs() < 1e-12);
        assert!((share(1) - 0.5 / 2.0).abs() < 1e-12);
        assert!((share(0) - (0.2 + 0.6) / 2.0).abs() < 1e-12);
        assert_eq!(mode_share(&rows, 4, 0, 100), 1.0);
        assert_eq!(mode_share(&rows, 4, 2, 100), 0.0);
    }

    /// A k = 4 FatTree of 10 Gb/s, 1 µs links.
    fn fattree_k4() -> Topology {
        let l = crate::topo::LinkSpec {
            rate_bps: 10_000_000_000,
            delay_ps: 1_000_000,
        };
        Topology::FatTree(crate::topo::FatTree::new(4, 1, l, l, l))
    }

    /// Queue samples become time at the port's link rate: 12,500 bytes at
    /// 10 Gb/s are 10 µs, grouped per (entity, port) in sample order.
    #[test]
    fn queue_samples_become_time_at_the_link_rate() {
        let topo = fattree_k4();
        let sample = |t: u64, node: u32, port: u16, bytes: u64| crate::trace::QueueSample {
            time_ps: t,
            node,
            port,
            peer: 0,
            queue_bytes: bytes,
            queue_pkts: 0,
            tx_bytes: 0,
            busy_ps: 0,
            paused_ps: [0; 8],
        };
        let q = queue_time(
            &[
                sample(0, 16, 0, 12_500),
                sample(0, 16, 1, 0),
                sample(10, 16, 0, 1250),
            ],
            &topo,
        );
        assert_eq!(q[&(16, 0)], [(0, 10_000_000), (10, 1_000_000)]);
        assert_eq!(q[&(16, 1)], [(0, 0)]);
        assert_eq!(q.len(), 2);
    }

    /// Trims sort by the cutting port: a k = 4 FatTree's first ToR (entity
    /// 16) has hosts on ports 0-1 and aggregation switches on 2-3, its first
    /// aggregation switch (24) ToRs on 0-1 and cores on 2-3; headers,
    /// bounces and enqueues are not trims of data.
    #[test]
    fn trims_sort_by_tier_and_direction() {
        let topo = fattree_k4();
        let at = |entity: u32, port: u16, ev: PacketEvent, kind: &'static str| PacketRow {
            entity,
            port,
            event: ev,
            ..row(0, entity, kind, 0, 0)
        };
        let rows = vec![
            at(16, 2, PacketEvent::Trim, "data"),
            at(16, 3, PacketEvent::Trim, "data"),
            at(16, 1, PacketEvent::Trim, "data"),
            at(24, 0, PacketEvent::Trim, "data"),
            at(24, 3, PacketEvent::Trim, "data"),
            at(32, 0, PacketEvent::Trim, "data"),
            at(16, 2, PacketEvent::Trim, "header"),
            at(16, 2, PacketEvent::Bounce, "data"),
            at(16, 2, PacketEvent::Enqueue, "data"),
        ];
        let t = TierTrims::count(&rows, &topo);
        assert_eq!(
            t,
            TierTrims {
                tor_up: 2,
                tor_down: 1,
                agg: 2,
                agg_up: 1,
                core: 1
            }
        );
        assert_eq!(t.past_first_tor(), 4);
        assert_eq!(t.uplinks(), 3);
    }

    /// A header's latency runs from its data packet's latest NIC departure
    /// (a retransmission restarts it); returned headers and headers of
    /// untraced packets are left out.
    #[test]
    fn header_latency_is_from_the_last_departure() {
        let rows = vec![
            row(100, 3, "data", 1, 0),
            row(900, 64, "header", 1, 0),
            row(1000, 3, "data", 1, 16),
            row(1500, 64, "header", 1, 0),
            row(1600, 64, "header", 2, 0),
            row(1700, 3, "data", 3, 0),
            row(1800, 64, "header", 3, crate::packet::flags::BOUNCED),
        ];
        let h = headers(&rows);
        assert_eq!(
            h,
            vec![
                HeaderSeen {
                    at_ps: 900,
                    latency_ps: 800
                },
                HeaderSeen {
                    at_ps: 1500,
                    latency_ps: 500
                },
            ]
        );
    }
}
