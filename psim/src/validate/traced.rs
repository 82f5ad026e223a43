//! Figures that need a run's traces, not only its flow table: the [TRIM]
//! Fig 5 and Fig 12 targets (P1–P3, P16) look at when trimmed headers reach
//! the receiver and when the chip first deflects.
//!
//! A run yields them only when its overrides turn the traces on
//! (`trace.packets.enabled=true` with `dequeue` events for headers,
//! `trace.tofino.enabled=true` for the DoD queues); they are reduced here to
//! a few numbers per header so that a validation pass keeps no packet rows.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

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

/// Reads the traces a finished run left in `dir` (those it has).
pub fn read(dir: &Path) -> Result<Traced, String> {
    let mut t = Traced::default();
    if dir.join("packets").is_dir() {
        let rows =
            crate::trace::read_packets(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        t.headers = headers(&rows);
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
