//! TCP, DCTCP and MPTCP through their state machines, on a scripted network.

use super::*;
use crate::transport::cc::CongestionControl;
use crate::transport::HostServices;

const MSS: u64 = 9000;
/// One-way delay of the scripted network, ps (a 20 µs RTT).
const DELAY: u64 = 10_000_000;

fn info(size: Option<u64>) -> FlowInfo {
    FlowInfo {
        id: 1,
        src: 0,
        dst: 5,
        size,
        start_ps: 0,
        prio: 0,
        num_paths: 16,
        ecmp_path: 3,
        nic_bps: 10_000_000_000,
        ideal_fct_ps: None,
    }
}

fn params() -> TcpParams {
    TcpParams {
        min_rto: Micros::from_ps(1_000_000_000), // 1 ms
        initial_rto: Micros::from_ps(1_000_000_000),
        ..TcpParams::default()
    }
}

/// A sender and a receiver joined by a lossless, fixed-delay, infinitely
/// fast scripted network; `drop` decides which data transmissions vanish
/// and `mark` which get CE.
struct Net {
    src: TcpSource,
    sink: Option<TcpSink>,
    p: TcpParams,
    now: u64,
    /// (arrival time, order, towards the sink?, packet)
    wire: std::collections::BTreeMap<(u64, u64), (bool, Packet)>,
    order: u64,
    rng: crate::rng::Rng,
    pulls: HostServices,
    /// Data transmissions seen, in order: (time, seq, retransmission?).
    sent: Vec<(u64, u64, bool)>,
    acks_to_source: u64,
    /// Drop every n-th ACK on its way back (0: none).
    ack_drop_every: u64,
    acks_shipped: u64,
}

impl Net {
    fn new(proto: Protocol, p: TcpParams, size: Option<u64>) -> Self {
        let params = ProtocolParams {
            tcp: p.clone(),
            ..ProtocolParams::default()
        };
        let Endpoint::TcpSource(src) = proto.source(&info(size), &params) else {
            panic!("{proto:?} is not a TCP variant")
        };
        let src = *src;
        Net {
            src,
            sink: None,
            p,
            now: 0,
            wire: Default::default(),
            order: 0,
            rng: crate::rng::stream_rng(3, 3),
            pulls: HostServices::default(),
            sent: Vec::new(),
            acks_to_source: 0,
            ack_drop_every: 0,
            acks_shipped: 0,
        }
    }

    fn ship(
        &mut self,
        out: Vec<Packet>,
        to_sink: bool,
        drop: &mut dyn FnMut(&Packet) -> bool,
        mark: &mut dyn FnMut(&Packet) -> bool,
    ) {
        for mut p in out {
            if to_sink && p.kind == PacketKind::Data {
                self.sent
                    .push((self.now, split_seq(p.seq).1, p.has(flags::RETX)));
                if drop(&p) {
                    continue;
                }
                if mark(&p) {
                    p.flags |= flags::ECN_CE;
                }
            }
            if !to_sink {
                self.acks_shipped += 1;
                if self.ack_drop_every > 0 && self.acks_shipped.is_multiple_of(self.ack_drop_every)
                {
                    continue;
                }
            }
            self.order += 1;
            self.wire
                .insert((self.now + DELAY, self.order), (to_sink, p));
        }
    }

    /// Runs until `until` or until nothing is pending.
    fn run(
        &mut self,
        until: u64,
        drop: &mut dyn FnMut(&Packet) -> bool,
        mark: &mut dyn FnMut(&Packet) -> bool,
    ) {
        let mut out = Vec::new();
        if self.now == 0 && self.sent.is_empty() {
            self.src
                .on_start(&mut ctx(0, &mut out, &mut self.rng, &mut self.pulls));
            self.ship(std::mem::take(&mut out), true, drop, mark);
        }
        loop {
            let next_wire = self.wire.keys().next().map(|k| k.0);
            let timers = [
                self.src.poll_at(),
                self.sink.as_ref().and_then(|s| s.poll_at()),
            ];
            let next_timer = timers.iter().flatten().min().copied();
            let Some(t) = [next_wire, next_timer].into_iter().flatten().min() else {
                return;
            };
            if t > until {
                return;
            }
            self.now = t;
            if next_wire == Some(t) {
                let (_, (to_sink, pkt)) = self.wire.pop_first().expect("pending");
                let mut cx = ctx(t, &mut out, &mut self.rng, &mut self.pulls);
                if to_sink {
                    self.sink
                        .get_or_insert_with(|| TcpSink::new(&pkt, &self.p))
                        .on_packet(pkt, &mut cx);
                } else {
                    self.acks_to_source += 1;
                    self.src.on_packet(pkt, &mut cx);
                }
                self.ship(std::mem::take(&mut out), !to_sink, drop, mark);
            } else {
                let mut cx = ctx(t, &mut out, &mut self.rng, &mut self.pulls);
                if self.src.poll_at() == Some(t) {
                    self.src.on_timer(&mut cx);
                    self.ship(std::mem::take(&mut out), true, drop, mark);
                } else if let Some(s) = self.sink.as_mut() {
                    s.on_timer(&mut cx);
                    self.ship(std::mem::take(&mut out), false, drop, mark);
                }
            }
        }
    }

    fn finish(&self) -> Option<u64> {
        self.sink.as_ref().and_then(|s| s.stats.finish_ps)
    }
}

/// The context of host 0, slot 0, on a 10 Gb/s NIC.
fn ctx<'a>(
    now: u64,
    out: &'a mut Vec<Packet>,
    rng: &'a mut crate::rng::Rng,
    pulls: &'a mut HostServices,
) -> Ctx<'a> {
    Ctx {
        now,
        host: 0,
        slot: 0,
        nic_bps: 10_000_000_000,
        out,
        rng,
        services: pulls,
    }
}

fn never(_: &Packet) -> bool {
    false
}

#[test]
fn slow_start_doubles_the_window_each_round_trip() {
    let mut n = Net::new(Protocol::Tcp, params(), Some(1000 * MSS));
    // Round trip r sends iw * 2^r segments (every ACK adds one MSS).
    n.run(DELAY * 2 - 1, &mut never, &mut never);
    assert_eq!(n.sent.len(), 10);
    n.run(DELAY * 4 - 1, &mut never, &mut never);
    assert_eq!(n.sent.len(), 10 + 20);
    n.run(DELAY * 6 - 1, &mut never, &mut never);
    assert_eq!(n.sent.len(), 10 + 20 + 40);
    // ACKs of the first two rounds (30 segments) have arrived.
    assert!((n.src.cwnd(0) - 40.0 * MSS as f64).abs() < 1e-6);
}

#[test]
fn a_lone_flow_delivers_every_byte_once_without_retransmitting() {
    let size = 100 * MSS + 123;
    let mut n = Net::new(Protocol::Tcp, params(), Some(size));
    n.run(u64::MAX, &mut never, &mut never);
    let sink = n.sink.as_ref().expect("sink");
    assert_eq!(sink.stats.bytes_received, size);
    assert_eq!(n.src.stats.retransmissions, 0);
    assert_eq!(n.src.stats.bytes_sent, size);
    assert!(n.finish().is_some());
    assert_eq!(
        n.src.poll_at(),
        None,
        "no timer left once everything is acked"
    );
}

/// RFC 5681 §3.2 / RFC 6675: one lost segment in a large window is
/// repaired by fast retransmit after three duplicate ACKs, within one
/// round trip and without a timeout; the window is halved once.
#[test]
fn one_lost_segment_triggers_fast_retransmit_and_recovery() {
    let size = 200 * MSS;
    let mut n = Net::new(Protocol::Tcp, params(), Some(size));
    let lost = 25 * MSS; // sent in the second round trip, with 19 more behind it
    let mut dropped = false;
    let mut drop = |p: &Packet| {
        let hit = !dropped && split_seq(p.seq).1 == lost;
        dropped |= hit;
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    let retx: Vec<_> = n.sent.iter().filter(|s| s.2).collect();
    assert_eq!(retx.len(), 1, "exactly one retransmission: {retx:?}");
    assert_eq!(retx[0].1, lost);
    let first = n.sent.iter().find(|s| s.1 == lost).expect("sent").0;
    // The retransmission leaves one RTT after the loss plus the three
    // segments' worth of duplicate ACKs (same instant in this zero-
    // serialisation network): well before the 1 ms RTO.
    assert!(
        retx[0].0 - first <= 2 * DELAY + 1,
        "{} ps",
        retx[0].0 - first
    );
    assert_eq!(n.src.stats.timeouts, 0);
    assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
    assert!(n.finish().is_some());
}

/// The last segment lost: no duplicate ACKs can follow, so only the
/// retransmission timer recovers it (RFC 6298), after the minimum RTO.
#[test]
fn a_tail_loss_recovers_by_rto() {
    let size = 30 * MSS;
    let p = params();
    let mut n = Net::new(Protocol::Tcp, p.clone(), Some(size));
    let last = 29 * MSS;
    let mut dropped = false;
    let mut drop = |pk: &Packet| {
        let hit = !dropped && split_seq(pk.seq).1 == last;
        dropped |= hit;
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    assert_eq!(n.src.stats.timeouts, 1);
    let retx: Vec<_> = n.sent.iter().filter(|s| s.2).collect();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0].1, last);
    let first = n.sent.iter().find(|s| s.1 == last).expect("sent").0;
    // The timer was (re)armed by the ACK of the segment before it, one RTT
    // after `first` at most, and runs for max(min RTO, srtt + 4 rttvar) = 1 ms.
    let gap = retx[0].0 - first;
    assert!(
        gap >= p.min_rto.ps && gap <= p.min_rto.ps + 2 * DELAY,
        "{gap}"
    );
    assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
    assert_eq!(n.finish(), Some(retx[0].0 + DELAY));
}

/// DCTCP through the state machines: with every other data packet
/// marked, alpha settles near 1/2 and each window is cut by about alpha/2.
#[test]
fn dctcp_alpha_tracks_the_marked_fraction() {
    let mut n = Net::new(Protocol::Dctcp, params(), None);
    let mut mark = |p: &Packet| (split_seq(p.seq).1 / MSS).is_multiple_of(2);
    n.run(DELAY * 2 * 300, &mut never, &mut mark);
    let alpha = n.src.subs[0].cc.metrics().alpha.expect("dctcp");
    assert!((alpha - 0.5).abs() < 0.05, "alpha {alpha}");
    assert!(n.sent.iter().all(|s| !s.2), "marks are not losses");
}

#[test]
fn reno_without_ecn_ignores_echoes_and_with_ecn_halves_once_per_window() {
    let everything = |_: &Packet| true;
    let mut plain = Net::new(Protocol::Tcp, params(), Some(400 * MSS));
    plain.run(DELAY * 8, &mut never, &mut { everything });
    let mut ecn = Net::new(
        Protocol::Tcp,
        TcpParams {
            ecn: true,
            ..params()
        },
        Some(400 * MSS),
    );
    ecn.run(DELAY * 8, &mut never, &mut { everything });
    assert!(plain.src.cwnd(0) > 100.0 * MSS as f64);
    // One cut per round trip from 10 segments, floored at 2 MSS.
    assert!(ecn.src.cwnd(0) < 10.0 * MSS as f64, "{}", ecn.src.cwnd(0));
}

#[test]
fn delayed_ack_acks_every_second_segment() {
    let p = TcpParams {
        delayed_ack: true,
        ..params()
    };
    let mut n = Net::new(Protocol::Tcp, p, Some(10 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(n.acks_to_source, 5);
    assert!(n.finish().is_some());
}

#[test]
fn a_delayed_ack_for_an_odd_segment_waits_for_its_timer() {
    let p = TcpParams {
        delayed_ack: true,
        delayed_ack_timeout: Micros::from_ps(200_000_000), // 200 µs, below the 1 ms RTO
        iw_packets: 1,
        ..params()
    };
    let delack = p.delayed_ack_timeout.ps;
    let mut n = Net::new(Protocol::Tcp, p, Some(3 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    // Segment 0 alone: ACKed by the timer; then 1 and 2 (cwnd 2): one ACK, which completes.
    assert_eq!(n.acks_to_source, 2);
    assert_eq!(n.sent[1].0, 2 * DELAY + delack);
}

#[test]
fn handshake_costs_one_round_trip_before_data() {
    let p = TcpParams {
        handshake: true,
        ..params()
    };
    let mut n = Net::new(Protocol::Tcp, p, Some(5 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(n.sent[0].0, 2 * DELAY, "first data one RTT after the SYN");
    assert_eq!(n.finish(), Some(3 * DELAY));
}

#[test]
fn mptcp_spreads_subflows_over_distinct_paths_and_completes() {
    let size = 500 * MSS;
    let mut n = Net::new(Protocol::Mptcp, params(), Some(size));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(n.src.subflows(), 8);
    let paths: std::collections::BTreeSet<u32> = n.src.subs.iter().map(|s| s.path).collect();
    assert_eq!(paths.len(), 8);
    assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
    assert!(n.finish().is_some());
    assert_eq!(n.src.stats.retransmissions, 0);
}

/// A 3-segment flow whose first segment is lost gets only two duplicate
/// ACKs: early retransmit (RFC 5827) repairs it at once; without it only
/// the RTO can.
#[test]
fn early_retransmit_repairs_a_small_window_without_the_rto() {
    for er in [true, false] {
        let p = TcpParams {
            early_retransmit: er,
            ..params()
        };
        let mut n = Net::new(Protocol::Tcp, p, Some(3 * MSS));
        let mut dropped = false;
        let mut drop = |pk: &Packet| {
            let hit = !dropped && split_seq(pk.seq).1 == 0;
            dropped |= hit;
            hit
        };
        n.run(u64::MAX, &mut drop, &mut never);
        let retx = n.sent.iter().find(|s| s.2).expect("retransmitted").0;
        if er {
            assert_eq!(retx, 2 * DELAY, "on the second duplicate ACK");
            assert_eq!(n.src.stats.timeouts, 0);
        } else {
            assert_eq!(n.src.stats.timeouts, 1);
        }
        assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, 3 * MSS);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever data transmissions (first sends or retransmissions) and
    /// ACKs are lost, every protocol delivers every byte exactly once,
    /// completes, and leaves no timer behind.
    #[test]
    fn any_loss_pattern_still_delivers_every_byte_once(
        lost in proptest::collection::btree_set(0usize..150, 0..30),
        ack_drop_every in proptest::prop_oneof![proptest::strategy::Just(0u64), 2u64..9],
        proto in proptest::sample::select(vec![Protocol::Tcp, Protocol::Dctcp, Protocol::Mptcp]),
        delayed_ack in proptest::bool::ANY,
        size_segs in 1u64..60,
    ) {
        let p = TcpParams { delayed_ack, delayed_ack_timeout: Micros::from_ps(200_000_000), ..params() };
        let size = size_segs * MSS - 17;
        let mut n = Net::new(proto, p, Some(size));
        n.ack_drop_every = ack_drop_every;
        let mut k = 0usize;
        let mut drop = |_: &Packet| {
            k += 1;
            lost.contains(&(k - 1))
        };
        n.run(u64::MAX, &mut drop, &mut never);
        let sink = n.sink.as_ref().expect("something arrived");
        proptest::prop_assert_eq!(sink.stats.bytes_received, size);
        proptest::prop_assert!(n.finish().is_some());
        proptest::prop_assert_eq!(n.src.poll_at(), None);
        // Every transmission beyond one per segment is a counted retransmission.
        let segs = size.div_ceil(MSS) as usize;
        proptest::prop_assert_eq!(n.sent.len() - segs, n.src.stats.retransmissions as usize);
    }
}

#[test]
fn subflow_index_survives_the_sequence_encoding() {
    let (sub, seq) = split_seq(sub_seq(7, 123_456_789));
    assert_eq!((sub, seq), (7, 123_456_789));
}
