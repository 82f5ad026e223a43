//! Per-packet one-way delay from a packet trace: the metric of [TH] Fig 5.3
//! (T37, "tail packet delays": the mean and 99th percentile of the time
//! each packet takes from its source to its destination).
//!
//! # Definition
//!
//! For every data packet `(flow, seq)`:
//!
//! - **sent**: its first `enqueue` row at its source host's NIC (entity =
//!   the packet's `src`), when the transport hands it to the network. Time
//!   queued in the NIC counts. (The thesis's ns-2 runs measure from the
//!   flow's start instead, as their UDP agent emits a whole flow at once;
//!   the metric's `from = "flow_start"` does that with the flow table's
//!   start times.);
//! - **arrived**: its first `dequeue` row at a port whose link ends at the
//!   packet's `dst`, plus that link's serialisation of the packet and its
//!   propagation delay (the trace records events at output queues only);
//! - **one-way delay** = arrived − sent.
//!
//! A packet whose arrival is not in the trace (still in flight at
//! `stop_us`, dropped, or its rows sampled out) is left out; a second copy
//! (a retransmission) changes nothing. The events needed are `enqueue` and
//! `dequeue`, and a sampled trace (`[trace.packets] sample = f`, which keeps
//! or drops each packet by a hash of its identity) gives an unbiased
//! estimate, as for [`super::ack_latency`].

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::topo::Topology;
use crate::trace::packets::PacketRow;
use crate::trace::spec::PacketEvent;
use crate::units::tx_time_ps;

/// One data packet's first arrival at its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Its flow.
    pub flow: u64,
    /// Its sequence number, as its protocol numbers packets (bytes for the
    /// TCP family).
    pub seq: u64,
    /// When its last bit reached the destination, ps.
    pub at_ps: u64,
    /// Its payload, bytes.
    pub payload_bytes: u32,
    /// Its one-way delay, ps; None when its first send is not in the trace
    /// (a trace without `enqueue` rows).
    pub delay_ps: Option<u64>,
}

/// Reduces a packet trace (rows in causal order) to the first arrival of
/// every data packet that arrived, in order of arrival; `topo` gives each
/// packet's last link. Arrivals need only `dequeue` rows; delays need the
/// `enqueue` rows at the sources as well.
pub fn arrivals(rows: &[PacketRow], topo: &Topology) -> Vec<Arrival> {
    let mut sent: HashMap<(u64, u64), u64> = HashMap::new();
    let mut arrived: HashSet<(u64, u64)> = HashSet::new();
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.kind == "data") {
        match r.event {
            PacketEvent::Enqueue if r.entity == r.src => {
                sent.entry((r.flow, r.seq)).or_insert(r.time_ps);
            }
            PacketEvent::Dequeue => {
                let Some(at) = delivered_at(r, topo) else {
                    continue;
                };
                if !arrived.insert((r.flow, r.seq)) {
                    continue;
                }
                out.push(Arrival {
                    flow: r.flow,
                    seq: r.seq,
                    at_ps: at,
                    payload_bytes: r.payload_bytes,
                    delay_ps: sent.get(&(r.flow, r.seq)).map(|&t0| at - t0),
                });
            }
            _ => {}
        }
    }
    out
}

/// When the packet of `dequeue` row `r` reaches its destination, if the
/// row's port is the last hop (its link ends at the packet's `dst`): the
/// dequeue plus that link's serialisation and propagation. The trace has no
/// arrival rows; this is how every reduction reads one.
pub fn delivered_at(r: &PacketRow, topo: &Topology) -> Option<u64> {
    if r.entity == r.dst {
        return None;
    }
    let link = topo.port(r.entity, r.port);
    (link.peer == r.dst).then(|| {
        r.time_ps + tx_time_ps(r.size_bytes as u64, link.link.rate_bps) + link.link.delay_ps
    })
}

/// The one-way delay of every traced data packet that arrived and whose
/// first send is in the trace, ps, in order of arrival.
pub fn one_way_delays(rows: &[PacketRow], topo: &Topology) -> Vec<u64> {
    arrivals(rows, topo)
        .iter()
        .filter_map(|a| a.delay_ps)
        .collect()
}

/// For every flow whose destination came to hold its first `bytes` bytes,
/// when it did: the arrival that completed the prefix [0, `bytes`) of its
/// byte sequence numbers (the TCP family's; a video's start-up buffer,
/// [TH] §2.4.1). `arrivals` in order of arrival, as [`arrivals`] returns
/// them; a flow whose prefix never completes in the trace is absent.
pub fn prefix_done(arrivals: &[Arrival], bytes: u64) -> HashMap<u64, u64> {
    // Per flow: bytes held from 0 on, and the ranges above a hole, by start.
    let mut held: HashMap<u64, (u64, BTreeMap<u64, u64>)> = HashMap::new();
    let mut done = HashMap::new();
    for a in arrivals {
        if done.contains_key(&a.flow) {
            continue;
        }
        let (front, above) = held.entry(a.flow).or_default();
        let end = a.seq + a.payload_bytes as u64;
        let e = above.entry(a.seq).or_insert(end);
        *e = (*e).max(end);
        while let Some(entry) = above.first_entry() {
            if *entry.key() > *front {
                break;
            }
            *front = (*front).max(entry.remove());
        }
        if *front >= bytes {
            done.insert(a.flow, a.at_ps);
            held.remove(&a.flow);
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::testrows::{data_row, fattree, port_towards, L};

    fn row(t: u64, ev: PacketEvent, entity: u32, port: u16, seq: u64) -> PacketRow {
        data_row(t, ev, entity, port, seq, 0)
    }

    /// Hand-built trace, answers by hand: packet 0 is sent at 0 and leaves
    /// host 10's ToR at 5 µs, so it arrives 1.2 ns x 1000 = 1.2 µs of
    /// serialisation and 1 µs of propagation later: 7.2 µs. Packet 1 is
    /// enqueued twice at the source (a resend) and its delay runs from the
    /// first; its dequeue one hop short of host 10 is not an arrival, and a
    /// second arrival changes nothing. Packet 2 never arrives.
    #[test]
    fn delay_runs_from_the_first_send_to_the_last_link_s_end() {
        use PacketEvent::{Dequeue, Enqueue};
        let t = fattree();
        let tor = t.port(10, 0).peer;
        let down = port_towards(&t, tor, 10);
        let up = (0..t.port_count(tor))
            .find(|&p| t.port(tor, p).peer != 10)
            .expect("another port");
        let tail = tx_time_ps(1500, L.rate_bps) + L.delay_ps;
        assert_eq!(tail, 2_200_000);
        let rows = vec![
            row(0, Enqueue, 0, 0, 0),
            row(1_000_000, Enqueue, 0, 0, 1),
            row(2_000_000, Enqueue, 0, 0, 1),
            row(3_000_000, Enqueue, 0, 0, 2),
            row(4_000_000, Dequeue, tor, up, 1),
            row(5_000_000, Dequeue, tor, down, 0),
            row(6_000_000, Dequeue, tor, down, 1),
            row(9_000_000, Dequeue, tor, down, 1),
        ];
        assert_eq!(
            one_way_delays(&rows, &t),
            [5_000_000 + tail, 5_000_000 + tail]
        );
    }

    /// Without `enqueue` rows the arrivals are still there (the T38
    /// throughput per millisecond needs no more), with no delays.
    #[test]
    fn arrivals_need_only_dequeue_rows() {
        use PacketEvent::Dequeue;
        let t = fattree();
        let tor = t.port(10, 0).peer;
        let down = port_towards(&t, tor, 10);
        let rows = vec![
            row(5_000_000, Dequeue, tor, down, 0),
            row(6_000_000, Dequeue, tor, down, 0),
        ];
        let a = arrivals(&rows, &t);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].at_ps, 5_000_000 + 2_200_000);
        assert_eq!((a[0].payload_bytes, a[0].delay_ps), (1436, None));
        assert!(one_way_delays(&rows, &t).is_empty());
    }

    /// The prefix by hand: flow 1's 1000-byte packets arrive as 0 (t = 1),
    /// 2000 (t = 2, above a hole), 1000 (t = 3, fills it: [0, 3000) held)
    /// and 3000 (t = 4). Its first 2500 bytes are held at t = 3, its first
    /// 3000 also at t = 3, its first 3001 at t = 4. Flow 2 holds only
    /// [1000, 2000): never a prefix.
    #[test]
    fn a_prefix_is_done_when_its_last_hole_fills() {
        let at = |flow, seq, t| Arrival {
            flow,
            seq,
            at_ps: t,
            payload_bytes: 1000,
            delay_ps: None,
        };
        let a = [
            at(1, 0, 1),
            at(2, 1000, 1),
            at(1, 2000, 2),
            at(1, 1000, 3),
            at(1, 3000, 4),
        ];
        assert_eq!(prefix_done(&a, 2500), HashMap::from([(1, 3)]));
        assert_eq!(prefix_done(&a, 3000), HashMap::from([(1, 3)]));
        assert_eq!(prefix_done(&a, 3001), HashMap::from([(1, 4)]));
        assert_eq!(prefix_done(&a, 1000), HashMap::from([(1, 1)]));
        assert!(prefix_done(&a, 5000).is_empty());
    }
}
