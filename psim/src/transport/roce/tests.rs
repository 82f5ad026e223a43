//! Go-back-N, ACK coalescing, CNP spacing and the RTO, with the test kit.

use super::*;
use crate::packet::{flags, PacketKind, HEADER_BYTES};
use crate::transport::testkit::{expect_out, flow, never, recv, recv_nothing, Host, Net};
use crate::transport::{SourceStats, Transport};

const US: u64 = 1_000_000;
/// 1064 wire bytes at 10 Gb/s.
const GAP: u64 = 851_200;

fn params(f: impl FnOnce(&mut RoceParams)) -> ProtocolParams {
    let mut p = ProtocolParams::default();
    f(&mut p.roce);
    p.validate().unwrap();
    p
}

fn data(psn: u64) -> Packet {
    let mut p = crate::packet::test_packet(PacketKind::Data, psn, 1064);
    p.proto = Protocol::Roce;
    p.src = 0;
    p.dst = 5;
    p
}

/// Data packet `p` turned into the receiver's 64-byte feedback of `kind`
/// (ACK, NACK), acknowledging up to `ack`: the one shape every RoCE and IRN
/// sender test feeds back.
pub(super) fn as_feedback(mut p: Packet, kind: PacketKind, ack: u64) -> Packet {
    (p.kind, p.ack, p.size, p.payload) = (kind, ack, 64, 0);
    p
}

/// The ACK of PSN `psn` (cumulative: up to `psn + 1`), echoing send time `sent`.
fn ack(psn: u64, sent: u64) -> Packet {
    Packet {
        sent_ps: sent,
        ..as_feedback(data(psn), PacketKind::Ack, psn + 1)
    }
}

fn sink(p: &ProtocolParams) -> Host {
    Host::new(5, Protocol::sink(&data(0), p))
}

fn source(p: &ProtocolParams, proto: Protocol, size: u64) -> Host<RoceSource> {
    let Endpoint::RoceSource(s) = proto.source(&flow(Some(size), 1), p) else {
        panic!("a RoCE source")
    };
    Host::new(0, *s)
}

#[test]
fn sender_paces_psns_at_line_rate_and_goes_idle_without_events() {
    let p = params(|_| {});
    let mut h = source(&p, Protocol::Roce, 3500);
    let out = h.start(0);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].seq, out[0].payload, out[0].size), (0, 1000, 1064));
    let rest = expect_out!(
        h.advance(10 * US),
        [
            (GAP, Data { seq: 1 }),
            (2 * GAP, Data { seq: 2 }),
            (
                3 * GAP,
                Data {
                    seq: 3,
                    payload: 500
                }
            )
        ]
    );
    assert!(rest[2].1.has(flags::LAST) && !rest[1].1.has(flags::LAST));
    assert!(!rest[0].1.has(flags::ECT), "plain RoCE is not ECN-capable");
    // Everything sent: only the RTO remains, 320 µs after the first packet.
    assert_eq!(h.next_wake(), Some(320 * US));
}

#[test]
fn a_gap_gives_one_nack_and_the_sender_resends_from_the_expected_psn() {
    let p = params(|_| {});
    let mut s = sink(&p);
    recv!(s, at = 10, data(0) => [Ack { ack: 1 }]);
    // PSN 1 lost: 2, 3, 4 are discarded; only the first of them is NACKed.
    recv!(s, at = 20, data(2) => [Nack { ack: 1, seq: 2 }]);
    recv!(s, at = 30, data(3) => []);
    recv!(s, at = 40, data(4) => []);
    recv!(s, at = 50, data(1) => [Ack { ack: 2 }]);
    assert_eq!(s.ep.sink_stats().unwrap().bytes_received, 2000);
    // A new gap is NACKed again.
    recv!(s, at = 60, data(3) => [Nack { ack: 2 }]);
    // The same gap after the NACK interval (500 µs): once more.
    recv!(s, at = 70, data(4) => []);
    recv!(s, at = 60 + 500 * US, data(4) => [Nack { ack: 2 }]);

    // The sender: 5 packets out, then NACK(1) rewinds to PSN 1.
    let mut h = source(&p, Protocol::Roce, 5000);
    h.start(0);
    assert_eq!(h.advance(4 * GAP).len(), 4);
    let mut nack = data(2);
    nack.kind = PacketKind::Nack;
    nack.ack = 1;
    let out = h.deliver(4 * GAP + 10, nack);
    assert!(out.is_empty(), "the next departure is still paced");
    let resent = expect_out!(
        h.advance(7 * GAP),
        [
            (5 * GAP, Data { seq: 1 }),
            (6 * GAP, Data { seq: 2 }),
            (7 * GAP, Data { seq: 3 })
        ]
    );
    assert!(resent.iter().all(|(_, p)| p.has(flags::RETX)));
    assert_eq!(h.ep.una(), 1);
    assert_eq!(h.ep.stats.retransmissions, 3);
}

#[test]
fn acks_coalesce_every_n_packets_and_on_the_last() {
    let p = params(|r| r.ack_every = 3);
    let mut s = sink(&p);
    for psn in 0..2 {
        recv!(s, at = psn, data(psn) => []);
    }
    recv!(s, at = 2, data(2) => [Ack { ack: 3 }]);
    recv!(s, at = 3, data(3) => []);
    let mut last = data(4);
    last.flags |= flags::LAST;
    recv!(s, at = 4, last => [Ack { ack: 5 }]);
    assert_eq!(s.ep.sink_stats().unwrap().finish_ps, Some(4));
    // No ACKs at all (the thesis's all-Reads runs).
    let p = params(|r| {
        r.ack_every = 0;
        r.pfc = true;
    });
    let mut s = sink(&p);
    recv!(s, at = 1, data(0) => []);
}

#[test]
fn cnps_are_spaced_by_the_cnp_interval() {
    let p = params(|_| {});
    let mut s = sink(&p);
    let ce = |psn| {
        let mut d = data(psn);
        d.flags |= flags::ECN_CE | flags::ECT;
        d
    };
    let out = recv!(s, at = US, ce(0) => [Ack { ack: 0 }, Ack { ack: 1 }]);
    assert!(out[0].has(flags::ECE) && !out[1].has(flags::ECE));
    recv!(s, at = 2 * US, ce(1) => [Ack { ack: 2 }]);
    recv!(s, at = 50 * US, ce(2) => [Ack { ack: 3 }]);
    let out = recv!(s, at = 51 * US, ce(3) => [Ack, Ack]);
    assert!(out[0].has(flags::ECE));
    // DCQCN's firmware style: 4 µs by default.
    let dce = |psn| {
        let mut d = ce(psn);
        d.proto = Protocol::Dcqcn;
        d
    };
    let mut s = Host::new(5, Protocol::sink(&dce(0), &p));
    recv!(s, at = US, dce(0) => [Ack, Ack]);
    recv!(s, at = 5 * US - 1, dce(1) => [Ack]);
    recv!(s, at = 5 * US, dce(2) => [Ack, Ack]);
}

/// A CE-marked RoCE data packet of PSN `psn`.
fn marked(psn: u64) -> Packet {
    let mut d = data(psn);
    d.flags |= flags::ECN_CE | flags::ECT;
    d
}

/// Whether `p` is a CNP: an ACK carrying `ECE`.
fn is_cnp(p: &Packet) -> bool {
    p.kind == PacketKind::Ack && p.has(flags::ECE)
}

/// `cnp_defer` (the paper-style NP): a mark within the 50 µs interval is
/// answered by one CNP when the interval ends, however many came; the next
/// interval runs from that CNP; and with no mark waiting the receiver holds
/// no timer. Without it such marks get nothing.
#[test]
fn a_deferred_cnp_leaves_when_the_interval_ends() {
    let p = params(|r| r.cnp_defer = true);
    let mut s = sink(&p);
    let out = recv!(s, at = US, marked(0) => [Ack, Ack]);
    assert!(is_cnp(&out[0]) && !is_cnp(&out[1]));
    assert_eq!(s.next_wake(), None, "nothing waits");
    recv!(s, at = 10 * US, marked(1) => [Ack { ack: 2 }]);
    recv!(s, at = 20 * US, marked(2) => [Ack { ack: 3 }]);
    assert_eq!(s.next_wake(), Some(51 * US), "the interval's end");
    let sent = s.advance(200 * US);
    assert_eq!(sent.len(), 1, "one CNP for both marks: {sent:?}");
    assert_eq!(sent[0].0, 51 * US);
    assert!(is_cnp(&sent[0].1));
    assert_eq!(sent[0].1.seq, 1, "it answers the first mark that waited");
    assert_eq!(s.next_wake(), None);
    // The interval now runs from 51 µs: a mark at 60 µs waits until 101 µs,
    // and one at 101 µs or later is answered at once.
    recv!(s, at = 60 * US, marked(3) => [Ack { ack: 4 }]);
    let sent = s.advance(101 * US);
    assert_eq!(sent.iter().map(|x| x.0).collect::<Vec<_>>(), [101 * US]);
    let out = recv!(s, at = 151 * US, marked(4) => [Ack, Ack]);
    assert!(is_cnp(&out[0]));
    // Without `cnp_defer` the same marks within the interval get nothing.
    let mut s = sink(&params(|_| {}));
    recv!(s, at = US, marked(0) => [Ack, Ack]);
    recv!(s, at = 10 * US, marked(1) => [Ack]);
    assert_eq!(s.next_wake(), None);
    recv_nothing!(s, until = 200 * US);
}

/// `np_delay_us`: each CNP leaves that long after the mark that caused it;
/// the interval still counts from the mark; the ACKs are not delayed.
#[test]
fn the_nics_cnp_delay_holds_each_cnp_back() {
    let p = params(|r| r.np_delay = Micros::from_us(55.0));
    let mut s = sink(&p);
    let out = recv!(s, at = US, marked(0) => [Ack { ack: 1 }]);
    assert!(!is_cnp(&out[0]));
    recv!(s, at = 30 * US, marked(1) => [Ack { ack: 2 }]);
    recv!(s, at = 51 * US, marked(2) => [Ack { ack: 3 }]);
    assert_eq!(s.next_wake(), Some(56 * US));
    let sent = s.advance(1_000 * US);
    assert_eq!(
        sent.iter().map(|x| x.0).collect::<Vec<_>>(),
        [56 * US, 106 * US],
        "the marks at 1 and 51 µs, each 55 µs later: {sent:?}"
    );
    assert!(sent.iter().all(|x| is_cnp(&x.1)));
    assert_eq!(sent.iter().map(|x| x.1.seq).collect::<Vec<_>>(), [0, 2]);
    let Endpoint::RoceSink(rs) = &s.ep else {
        panic!("a RoCE sink")
    };
    assert_eq!(rs.cnps, 2);
    // With `cnp_defer` too: the deferred CNP is decided at the interval's
    // end and leaves 55 µs after that.
    let p = params(|r| {
        r.np_delay = Micros::from_us(55.0);
        r.cnp_defer = true;
    });
    let mut s = sink(&p);
    recv!(s, at = US, marked(0) => [Ack]);
    recv!(s, at = 2 * US, marked(1) => [Ack]);
    let sent = s.advance(1_000 * US);
    assert_eq!(
        sent.iter().map(|x| x.0).collect::<Vec<_>>(),
        [56 * US, 106 * US]
    );
    assert_eq!(s.next_wake(), None);
}

/// IRN's receiver uses the same notification point, its timer included.
#[test]
fn irns_receiver_defers_and_delays_its_cnps_too() {
    let p = params(|r| {
        r.np_delay = Micros::from_us(5.0);
        r.cnp_defer = true;
    });
    let irn = |psn| {
        let mut d = marked(psn);
        d.proto = Protocol::IrnDcqcn;
        d
    };
    let mut s = Host::new(5, Protocol::sink(&irn(0), &p));
    recv!(s, at = US, irn(0) => [Ack { ack: 1 }]);
    recv!(s, at = 2 * US, irn(1) => [Ack { ack: 2 }]);
    // irn_dcqcn's firmware style: a 4 µs interval. CNPs at 1 + 5 and at the
    // interval's end, 5 µs, + 5.
    let sent = s.advance(100 * US);
    assert_eq!(
        sent.iter().map(|x| x.0).collect::<Vec<_>>(),
        [6 * US, 10 * US]
    );
    assert!(sent.iter().all(|x| is_cnp(&x.1)));
}

#[test]
fn rto_resends_from_the_first_unacknowledged_psn_unless_pfc() {
    let p = params(|_| {});
    let mut h = source(&p, Protocol::Roce, 2000);
    h.start(0);
    assert_eq!(h.advance(GAP).len(), 1);
    // Both packets lost: nothing until the RTO.
    recv_nothing!(h, until = 320 * US - 1);
    let out = expect_out!(h.advance(320 * US), [(320 * US, Data { seq: 0 })]);
    assert!(out[0].1.has(flags::RETX));
    assert_eq!(
        h.ep.stats,
        SourceStats {
            bytes_sent: 3000,
            packets_sent: 3,
            retransmissions: 1,
            timeouts: 1,
            ..Default::default()
        }
    );
    // With PFC there is no timeout: after the last packet, no event at all.
    let p = params(|r| r.pfc = true);
    let mut h = source(&p, Protocol::Roce, 2000);
    h.start(0);
    h.advance(GAP);
    assert_eq!(h.next_wake(), None);
}

#[test]
fn go_back_n_completes_over_a_lossy_network() {
    let windowed = [Protocol::RoceAimd, Protocol::RoceDctcp];
    for proto in [Protocol::Roce, Protocol::Dcqcn, Protocol::Timely]
        .into_iter()
        .chain(windowed)
    {
        let p = params(|_| {});
        let mut net = Net::new(proto, &flow(Some(200_000), 1), p, 5 * US);
        let mut n = 0;
        let mut drop = |pkt: &Packet| {
            n += 1;
            pkt.kind == PacketKind::Data && n % 17 == 0
        };
        net.back_drop_every = 7;
        net.run(100_000 * US, &mut drop, &mut never);
        assert_eq!(
            net.sink_stats().unwrap().bytes_received,
            200_000,
            "{proto:?}"
        );
        assert!(net.finish().is_some());
        let st = net.src.ep.source_stats().unwrap();
        assert!(st.retransmissions > 0, "{proto:?}");
        assert_eq!(
            net.src.next_wake(),
            None,
            "{proto:?}: idle after completion"
        );
    }
}

#[test]
fn dcqcn_marks_data_ect_and_slows_on_cnps() {
    let p = params(|_| {});
    let mut net = Net::new(Protocol::Dcqcn, &flow(Some(2_000_000), 1), p, 5 * US);
    let mut mark = |pkt: &Packet| pkt.seq.is_multiple_of(10);
    net.run(100_000 * US, &mut |_: &Packet| false, &mut mark);
    assert!(net.sent.iter().all(|(_, p)| p.has(flags::ECT)));
    assert!(net.finish().is_some());
    // Under constant marking the flow takes longer than at line rate.
    let line = 2000 * 1064 * 800;
    assert!(net.finish().unwrap() > 2 * line, "{:?}", net.finish());
    let Endpoint::RoceSource(s) = &net.src.ep else {
        panic!()
    };
    let m = crate::transport::cc::CongestionControl::metrics(s.controller().unwrap());
    assert!(m.rate_bps.unwrap() < 10_000_000_000);
}

#[test]
fn timely_takes_one_rtt_sample_per_segment() {
    let p = params(|_| {});
    let mut net = Net::new(Protocol::Timely, &flow(Some(160_000), 1), p, 5 * US);
    net.run(100_000 * US, &mut |_: &Packet| false, &mut never);
    let Endpoint::RoceSource(s) = &net.src.ep else {
        panic!()
    };
    let Some(crate::transport::cc::Controller::Timely(t)) = s.controller() else {
        panic!()
    };
    // 160 KB in 16 KB segments (16384 B, rounded up to 17 packets of
    // 1000 B): 9 complete segments.
    assert_eq!(t.samples, 160_000 / 17_000);
    assert_eq!(HEADER_BYTES, 64);
}

#[test]
fn timely_bursts_a_segment_and_waits_out_its_share_of_a_lower_rate() {
    let mut p = ProtocolParams::default();
    p.timely.segment_bytes = 4000;
    // One segment outstanding, so that the test sets the pace of ACKs.
    p.roce.window_packets = 4;
    p.validate().unwrap();
    let mut h = source(&p, Protocol::Timely, 1_000_000);
    // The flow asks the host's segment scheduler for a turn, and sends the
    // whole 4-packet segment at once when it gets it.
    assert!(h.start(0).is_empty());
    let first = h.advance(0);
    assert_eq!(
        first.iter().map(|(t, p)| (*t, p.seq)).collect::<Vec<_>>(),
        [(0, 0), (0, 1), (0, 2), (0, 3)]
    );
    assert_eq!(
        h.next_wake(),
        Some(320 * US),
        "only the RTO: the window is full"
    );
    // The ACK of the segment measures an RTT of 1000 µs (the burst's start
    // to its ACK, less the segment's 4 × 1064 B at the NIC rate): above
    // T_high, the rate falls to 1 − 0.8·(1 − 500/1000) = 0.6 of line rate.
    let now = 1000 * US + 4 * GAP;
    assert!(h.deliver(now, ack(3, 0)).is_empty());
    let Some(crate::transport::cc::Controller::Timely(t)) = h.ep.controller() else {
        panic!("a TIMELY controller")
    };
    assert_eq!(t.samples, 1);
    let rate = t.rate() as u64;
    assert_eq!(rate, 6_000_000_000);
    let second = h.advance(now);
    assert_eq!(
        second.iter().map(|(t, p)| (*t, p.seq)).collect::<Vec<_>>(),
        [(now, 4), (now, 5), (now, 6), (now, 7)]
    );
    // Its ACK comes back quickly (an RTT below T_low: the rate rises by δ),
    // but the next segment waits for its share of the rate: 4 × 1064 wire
    // bytes at 6 Gb/s from the start of the second burst.
    assert!(h.deliver(now + 5 * GAP, ack(7, now)).is_empty());
    let share = (4 * 1064 * 8 * 1_000_000_000_000u64).div_ceil(rate);
    assert!(share > 5 * GAP);
    let third = h.advance(now + share);
    assert_eq!(
        third.iter().map(|(t, p)| (*t, p.seq)).collect::<Vec<_>>(),
        [
            (now + share, 8),
            (now + share, 9),
            (now + share, 10),
            (now + share, 11)
        ]
    );
}

/// A TIMELY sender in `hpcc` mode with a window of `window` packets and
/// 1 MB to send.
fn hpcc_timely_source(window: u32) -> Host<RoceSource> {
    let mut p = ProtocolParams::default();
    p.timely.mode = crate::transport::cc::timely::TimelyMode::Hpcc;
    p.roce.window_packets = window;
    p.validate().unwrap();
    source(&p, Protocol::Timely, 1_000_000)
}

/// The TIMELY controller's samples taken and rate.
fn timely_state(h: &Host<RoceSource>) -> (u64, f64) {
    match h.ep.controller() {
        Some(crate::transport::cc::Controller::Timely(t)) => (t.samples, t.rate()),
        _ => panic!("a TIMELY controller"),
    }
}

/// `[protocol.timely] mode = "hpcc"` through the sender: packets paced one
/// by one, the first ACK only records its RTT, and the next sample waits
/// until the cumulative ACK passes the PSN that was next to send then. The
/// sample is the bare RTT: 1000 µs cuts to exactly 0.6 of line rate.
#[test]
fn timely_hpcc_mode_samples_once_per_rtt_of_data() {
    let mut h = hpcc_timely_source(4);
    let mut out = h.start(0);
    out.extend(h.advance(3 * GAP).into_iter().map(|(_, p)| p));
    assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
    // PSN 0's ACK: the first sample, recorded only; PSN 4 leaves (next to send then: 4).
    let t1 = 20 * US;
    let sent = h.deliver(t1, ack(0, 0));
    assert_eq!(sent.iter().map(|p| p.seq).collect::<Vec<_>>(), [4]);
    assert_eq!(timely_state(&h), (1, 10e9));
    // Up to PSN 3: the cumulative ACK has not passed PSN 4.
    h.deliver(t1 + US, ack(3, 3 * GAP));
    assert_eq!(timely_state(&h).0, 1);
    // PSN 4's ACK, 1000 µs after it left: above T_high, 1 − 0.8·(1 − 500/1000).
    h.deliver(t1 + 1000 * US, ack(4, t1));
    assert_eq!(timely_state(&h), (2, 6e9));
}

/// `hpcc`: HPCC's fork runs its TIMELY update on NACKs as well, after going
/// back: a NACK whose cumulative ACK passes the milestone gives the sample,
/// and the next milestone is the rewound PSN, so the next advancing ACK
/// samples again.
#[test]
fn timely_hpcc_mode_samples_on_a_nack_past_the_milestone() {
    let mut h = hpcc_timely_source(8);
    h.start(0);
    h.advance(7 * GAP);
    let feedback = |kind: PacketKind, ack: u64, seq: u64, sent: u64| Packet {
        sent_ps: sent,
        ..as_feedback(data(seq), kind, ack)
    };
    // PSN 0's ACK: recorded only; the milestone is PSN 8, next to send.
    let t1 = 20 * US;
    h.deliver(t1, feedback(PacketKind::Ack, 1, 0, 0));
    h.deliver(t1 + 1, feedback(PacketKind::Ack, 2, 1, GAP));
    h.deliver(t1 + 2, feedback(PacketKind::Ack, 3, 2, 2 * GAP));
    assert_eq!(timely_state(&h), (1, 10e9));
    // PSN 9 lost, PSN 10 arrives: the NACK acknowledges up to PSN 8 (past
    // the milestone), 1000 µs after PSN 10 left: 1 − 0.8·(1 − 500/1000).
    let t2 = t1 + 1000 * US;
    let resent = h.deliver(t2, feedback(PacketKind::Nack, 9, 10, t1));
    assert_eq!(timely_state(&h), (2, 6e9));
    assert_eq!(resent.first().map(|p| p.seq), Some(9));
    // The milestone is PSN 9 (rewound): its ACK samples again at once.
    h.deliver(t2 + 1000 * US, feedback(PacketKind::Ack, 10, 9, t2));
    assert_eq!(timely_state(&h), (3, 6e9 * 0.6));
}

#[test]
fn bad_settings_name_their_key() {
    let mut p = ProtocolParams::default();
    p.roce.ack_every = 0;
    let e = p.validate().unwrap_err();
    assert!(e.to_string().contains("protocol.roce.ack_every"), "{e}");
    let mut p = ProtocolParams::default();
    p.roce.np_delay = Micros::from_us(-1.0);
    let e = p.validate().unwrap_err();
    assert!(e.to_string().contains("protocol.roce.np_delay_us"), "{e}");
    let mut p = ProtocolParams::default();
    p.roce.mtu_bytes = 0;
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("protocol.roce.mtu_bytes"));
}

#[test]
fn a_window_limited_sender_waits_for_acks_without_a_pacing_event() {
    let p = params(|r| r.window_packets = 2);
    let mut h = source(&p, Protocol::Roce, 5000);
    h.start(0);
    expect_out!(h.advance(10 * US), [(GAP, Data { seq: 1 })]);
    // Window full: the only deadline is the RTO.
    assert_eq!(h.next_wake(), Some(320 * US));
    let mut ack = data(0);
    ack.kind = PacketKind::Ack;
    ack.ack = 1;
    let out = h.deliver(20 * US, ack);
    expect_out!(
        out.into_iter().map(|p| (20 * US, p)).collect(),
        [(20 * US, Data { seq: 2 })]
    );
    assert_eq!(h.next_wake(), Some(20 * US + 320 * US));
}

/// [TH] §3.4's application-limited rule through the sender: a flow whose
/// application offers one 4-packet message every 3.2 ms (4000 B at
/// 10 Mb/s) is cut by a slow sample as usual, but a fast sample after the
/// next message does not raise its rate (it offered 32 Mb/s, far below
/// 80% of 6 Gb/s); with `rise_app_share = 0` the same sample adds δ.
#[test]
fn an_application_limited_timely_sender_is_cut_but_does_not_rise() {
    for (share, rise) in [(0.8, 0.0), (0.0, 10e6)] {
        let mut p = ProtocolParams::default();
        p.timely.segment_bytes = 4000;
        p.timely.rise_app_share = Some(share);
        p.roce.pfc = true; // no RTO: the only wake-up is the application's
        p.validate().unwrap();
        let mut info = flow(None, 1);
        info.app = Some(crate::transport::testkit::periodic_app(4000, 0.01, None));
        let Endpoint::RoceSource(s) = Protocol::Timely.source(&info, &p) else {
            panic!("a RoCE source")
        };
        let mut h = Host::new(0, *s);
        h.start(0);
        let first = h.advance(0);
        assert_eq!(first.len(), 4, "the first message, as one burst");
        // Nothing more until the next message: the sender sleeps till then.
        assert_eq!(h.next_wake(), Some(3200 * US));
        let rate = |h: &Host<RoceSource>| match h.ep.controller() {
            Some(crate::transport::cc::Controller::Timely(t)) => t.rate(),
            _ => panic!("a TIMELY controller"),
        };
        // A 1000 µs RTT: the cut to 0.6 of line rate applies.
        h.deliver(1000 * US + 4 * GAP, ack(3, 0));
        assert_eq!(rate(&h), 6e9);
        let second = h.advance(3200 * US);
        assert_eq!(second.len(), 4, "the second message at 3.2 ms");
        assert!(second.iter().all(|(t, _)| *t == 3200 * US));
        // A 5 µs RTT (below T_low).
        h.deliver(3200 * US + 10 * GAP, ack(7, 3200 * US));
        assert_eq!(rate(&h), 6e9 + rise, "rise_app_share = {share}");
    }
}

/// The controller's state of a RoCE sender.
fn cc_metrics(h: &Host<RoceSource>) -> crate::transport::cc::CcMetrics {
    crate::transport::cc::CongestionControl::metrics(h.ep.controller().unwrap())
}

/// `roce_aimd` (`window.rs`): 10 packets of window (IRN's BDP-FC cap set to
/// 10), then it waits; NACK(1) with PSNs 0..=9 sent is a loss: cwnd =
/// ssthresh = 9 in flight / 2 = 4,500 B, and go-back-N resends from PSN 1
/// while fewer than 4,500 B are outstanding: PSNs 1 to 5. A second NACK in
/// the same recovery cuts nothing; the ACK that passes PSN 9 ends it.
#[test]
fn roce_aimd_holds_its_window_and_halves_it_on_a_nack() {
    let mut p = params(|_| {});
    p.irn.bdp_cap_packets = 10;
    let mut h = source(&p, Protocol::RoceAimd, 100_000);
    h.start(0);
    assert_eq!(
        h.advance(100 * US).len(),
        9,
        "10 packets in all, then the window"
    );
    assert_eq!(h.next_wake(), Some(320 * US), "only the RTO is armed");
    assert_eq!(cc_metrics(&h).cwnd, 10_000.0);
    let nack = |at_ack: u64| as_feedback(data(3), PacketKind::Nack, at_ack);
    let out = h.deliver(100 * US, nack(1));
    let mut sent: Vec<u64> = out.iter().map(|p| p.seq).collect();
    sent.extend(h.advance(200 * US).iter().map(|(_, p)| p.seq));
    assert_eq!(sent, [1, 2, 3, 4, 5]);
    let m = cc_metrics(&h);
    assert_eq!((m.cwnd, m.ssthresh), (4_500.0, 4_500.0));
    h.deliver(201 * US, nack(1));
    assert_eq!(cc_metrics(&h).cwnd, 4_500.0, "the same loss");
    // PSNs 1..=9 and beyond ACKed: recovery over, the window grows again.
    h.deliver(202 * US, ack(9, 0));
    assert!(cc_metrics(&h).cwnd > 4_500.0);
}

/// `roce_dctcp`'s receiver echoes a CE mark on the ACK it sends next (no
/// CNP), and its sender's data is ECN-capable; its window is cut by the
/// echo, at most once per window of data.
#[test]
fn roce_dctcp_echoes_marks_on_acks_and_cuts_once_per_window() {
    let p = params(|_| {});
    let ce = |psn| {
        let mut d = data(psn);
        d.proto = Protocol::RoceDctcp;
        d.flags |= flags::ECN_CE | flags::ECT;
        d
    };
    let mut s = Host::new(5, Protocol::sink(&ce(0), &p));
    let out = recv!(s, at = US, ce(0) => [Ack { ack: 1 }]);
    assert!(out[0].has(flags::ECE), "the ACK echoes the mark");
    let mut plain = ce(1);
    plain.flags &= !flags::ECN_CE;
    let out = recv!(s, at = 2 * US, plain => [Ack { ack: 2 }]);
    assert!(!out[0].has(flags::ECE));

    let mut net = Net::new(Protocol::RoceDctcp, &flow(Some(2_000_000), 1), p, 5 * US);
    let mut mark = |pkt: &Packet| pkt.seq.is_multiple_of(4);
    net.run(100_000 * US, &mut |_: &Packet| false, &mut mark);
    assert!(net.sent.iter().all(|(_, p)| p.has(flags::ECT)));
    assert!(net.finish().is_some());
    let Endpoint::RoceSource(src) = &net.src.ep else {
        panic!()
    };
    let m = crate::transport::cc::CongestionControl::metrics(src.controller().unwrap());
    assert!(m.alpha.unwrap() > 0.1, "{m:?}");
    assert!(
        m.cwnd < 120_000.0,
        "cut below the initial 120 packets: {m:?}"
    );
}

/// A window needs ACKs, and DCTCP's a marking switch: each named.
#[test]
fn windowed_roce_needs_acks_and_marks() {
    let mut r = RoceParams::default();
    for proto in [Protocol::RoceAimd, Protocol::RoceDctcp] {
        r.ack_every = 0;
        let e = r.check_with_scenario(&[proto], "voq", true).unwrap_err();
        assert!(e.to_string().contains("protocol.roce.ack_every"), "{e}");
        r.ack_every = 1;
        assert!(r.check_with_scenario(&[proto], "voq", true).is_ok());
    }
    let e = r
        .check_with_scenario(&[Protocol::RoceDctcp], "droptail", false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("switch.queue.kind") && e.contains("roce_dctcp"),
        "{e}"
    );
    assert!(r
        .check_with_scenario(&[Protocol::RoceAimd], "droptail", false)
        .is_ok());
}

/// `nic_packets = 2`, the NIC holding what it is handed: the sender hands
/// it PSNs 0 and 1 at their paced times, then waits without a timer (only
/// the RTO), and hands over one more PSN each time the NIC lets one go,
/// at once when its pacing time has passed. A go-back-N rewind resends
/// only through the same two places.
#[test]
fn the_nic_takes_at_most_nic_packets_of_a_flow_and_the_next_as_one_leaves() {
    let p = params(|r| r.nic_packets = 2);
    let mut h = source(&p, Protocol::Roce, 10_000);
    h.nic_holds = true;
    assert_eq!(h.start(0).len(), 1);
    expect_out!(h.advance(10 * US), [(GAP, Data { seq: 1 })]);
    assert_eq!(
        h.next_wake(),
        Some(320 * US),
        "only the RTO: no pacing timer while the NIC is full"
    );
    let out = h.nic_sent(10 * US);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].seq, 2,
        "handed over at once: its pacing time has passed"
    );
    assert!(h.advance(20 * US).is_empty(), "full again");
    // Both go: the next leaves at once, the one after it a packet time later.
    assert_eq!(h.nic_sent(20 * US)[0].seq, 3);
    assert_eq!(
        h.nic_sent(20 * US).len(),
        0,
        "paced: not before 20 µs + GAP"
    );
    expect_out!(h.advance(30 * US), [(20 * US + GAP, Data { seq: 4 })]);
    // A NACK for PSN 1 rewinds; the resend waits for a place in the NIC.
    assert!(h
        .deliver(40 * US, as_feedback(data(1), PacketKind::Nack, 1))
        .is_empty());
    let resent = h.nic_sent(41 * US);
    assert_eq!((resent[0].seq, resent[0].has(flags::RETX)), (1, true));
    // With no cap (0) the same sender never waits for the NIC.
    let mut free = source(&params(|r| r.nic_packets = 0), Protocol::Roce, 10_000);
    free.nic_holds = true;
    free.start(0);
    assert_eq!(free.advance(10 * US).len(), 9, "PSNs 1..=9 at line rate");
}

/// A CNP for the sender of flow 1 at any time.
fn cnp() -> Packet {
    let mut c = as_feedback(data(0), PacketKind::Ack, 0);
    c.flags |= flags::ECE;
    c
}

/// Paper-style DCQCN (each CNP cuts at once; F = 5, so the first increases
/// are fast recovery) with a 1 µs rate timer, 10 packets of 1064 wire bytes
/// on a 10 Gb/s NIC; a CNP at 0.1 µs halves Rc to 5 Gb/s (α = 1, the cut
/// before the α update), and the rate timer then lifts Rc to (Rc + 10)/2 at
/// 1.1, 2.1, 3.1 µs: 7.5, 8.75, 9.375 Gb/s.
fn shifting_dcqcn(shift: bool) -> Vec<(u64, Packet)> {
    let mut p = ProtocolParams::default();
    p.dcqcn.style = Style::Paper;
    p.dcqcn.rate_timer = Some(Micros::from_us(1.0));
    p.dcqcn.shift_pending_departure = shift;
    p.validate().unwrap();
    let mut h = source(&p, Protocol::Dcqcn, 10_000);
    let mut sent: Vec<(u64, Packet)> = h.start(0).into_iter().map(|x| (0, x)).collect();
    assert!(h.deliver(US / 10, cnp()).is_empty());
    sent.extend(h.advance(4 * US + US / 2));
    sent
}

/// `[protocol.dcqcn] shift_pending_departure`: every change of the rate
/// moves the pending departure to one packet's time at the new rate after
/// the last one; off, the gap set at each departure stands. Times by hand
/// from 1064 B × 8 / rate, rounded up to the picosecond.
#[test]
fn a_rate_change_shifts_the_pending_departure_only_when_asked() {
    let off = shifting_dcqcn(false);
    // Off: PSN 1 keeps its line-rate gap (0.8512 µs) although the CNP came
    // first; PSN 2 follows at 5 Gb/s (1.7024 µs); PSN 3 at 8.75 Gb/s (the
    // increase at 2.1 µs, 0.9728 µs).
    let t: Vec<u64> = off.iter().map(|x| x.0).collect();
    assert_eq!(t[..4], [0, GAP, GAP + 1_702_400, GAP + 1_702_400 + 972_800]);
    let on = shifting_dcqcn(true);
    let t: Vec<u64> = on.iter().map(|x| x.0).collect();
    // On: the cut at 0.1 µs moves PSN 1 to 0 + 1.7024 µs; the increase to
    // 7.5 Gb/s at 1.1 µs pulls it back to 0 + 1.134934 µs (after 1.1 µs, so
    // it waits for that time). PSN 2's gap at 7.5 Gb/s would end at 2.269868
    // µs; the increase to 8.75 Gb/s at 2.1 µs makes it 1.134934 + 0.9728 µs.
    // PSN 3 leaves at 2.107734 + 0.9728 µs, before the next increase (3.1 µs),
    // which then moves PSN 4 to 3.080534 + 0.907947 µs (9.375 Gb/s).
    assert_eq!(t[..5], [0, 1_134_934, 2_107_734, 3_080_534, 3_988_481]);
    assert!(on.iter().map(|x| x.1.seq).eq(0..on.len() as u64));
}
