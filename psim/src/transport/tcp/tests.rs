//! TCP, DCTCP and MPTCP through their state machines, on a scripted network.

use super::*;
use crate::transport::cc::CongestionControl;
use crate::transport::testkit::{flow, never, periodic_app, Net};

const MSS: u64 = 9000;
/// One-way delay of the scripted network, ps (a 20 µs RTT).
const DELAY: u64 = 10_000_000;

fn params() -> TcpParams {
    TcpParams {
        min_rto: Micros::from_ps(1_000_000_000), // 1 ms
        initial_rto: Micros::from_ps(1_000_000_000),
        ..TcpParams::default()
    }
}

/// A TCP-family flow of `size` bytes on the test kit's scripted network.
fn net(proto: Protocol, p: TcpParams, size: Option<u64>) -> Net {
    let params = ProtocolParams {
        tcp: p,
        ..ProtocolParams::default()
    };
    Net::new(proto, &flow(size, 16), params, DELAY)
}

/// The TCP source of `n`.
fn tcp(n: &Net) -> &TcpSource {
    match &n.src.ep {
        Endpoint::TcpSource(s) => s,
        other => panic!("not a TCP source: {other:?}"),
    }
}

/// Data transmissions: (time, byte sequence number, retransmission?).
fn sent(n: &Net) -> Vec<(u64, u64, bool)> {
    n.sent
        .iter()
        .map(|(t, p)| (*t, split_seq(p.seq).1, p.has(flags::RETX)))
        .collect()
}

fn received(n: &Net) -> u64 {
    n.sink_stats().expect("something arrived").bytes_received
}

#[test]
fn slow_start_doubles_the_window_each_round_trip() {
    let mut n = net(Protocol::Tcp, params(), Some(1000 * MSS));
    // Round trip r sends iw * 2^r segments (every ACK adds one MSS).
    n.run(DELAY * 2 - 1, &mut never, &mut never);
    assert_eq!(sent(&n).len(), 10);
    n.run(DELAY * 4 - 1, &mut never, &mut never);
    assert_eq!(sent(&n).len(), 10 + 20);
    n.run(DELAY * 6 - 1, &mut never, &mut never);
    assert_eq!(sent(&n).len(), 10 + 20 + 40);
    // ACKs of the first two rounds (30 segments) have arrived.
    assert!((tcp(&n).cwnd(0) - 40.0 * MSS as f64).abs() < 1e-6);
}

#[test]
fn a_lone_flow_delivers_every_byte_once_without_retransmitting() {
    let size = 100 * MSS + 123;
    let mut n = net(Protocol::Tcp, params(), Some(size));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(received(&n), size);
    assert_eq!(tcp(&n).stats.retransmissions, 0);
    assert_eq!(tcp(&n).stats.bytes_sent, size);
    assert!(n.finish().is_some());
    assert_eq!(
        n.src.ep.poll_at(),
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
    let mut n = net(Protocol::Tcp, params(), Some(size));
    let lost = 25 * MSS; // sent in the second round trip, with 19 more behind it
    let mut dropped = false;
    let mut drop = |p: &Packet| {
        let hit = !dropped && split_seq(p.seq).1 == lost;
        dropped |= hit;
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    let retx: Vec<_> = sent(&n).into_iter().filter(|s| s.2).collect();
    assert_eq!(retx.len(), 1, "exactly one retransmission: {retx:?}");
    assert_eq!(retx[0].1, lost);
    let first = sent(&n).iter().find(|s| s.1 == lost).expect("sent").0;
    // The retransmission leaves one RTT after the loss plus the three
    // segments' worth of duplicate ACKs (same instant in this zero-
    // serialisation network): well before the 1 ms RTO.
    assert!(
        retx[0].0 - first <= 2 * DELAY + 1,
        "{} ps",
        retx[0].0 - first
    );
    assert_eq!(tcp(&n).stats.timeouts, 0);
    assert_eq!(received(&n), size);
    assert!(n.finish().is_some());
}

/// The last segment lost: no duplicate ACKs can follow, so only the
/// retransmission timer recovers it (RFC 6298), after the minimum RTO.
#[test]
fn a_tail_loss_recovers_by_rto() {
    let size = 30 * MSS;
    let p = params();
    let mut n = net(Protocol::Tcp, p.clone(), Some(size));
    let last = 29 * MSS;
    let mut dropped = false;
    let mut drop = |pk: &Packet| {
        let hit = !dropped && split_seq(pk.seq).1 == last;
        dropped |= hit;
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    assert_eq!(tcp(&n).stats.timeouts, 1);
    let retx: Vec<_> = sent(&n).into_iter().filter(|s| s.2).collect();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0].1, last);
    let first = sent(&n).iter().find(|s| s.1 == last).expect("sent").0;
    // The timer was (re)armed by the ACK of the segment before it, one RTT
    // after `first` at most, and runs for max(min RTO, srtt + 4 rttvar) = 1 ms.
    let gap = retx[0].0 - first;
    assert!(
        gap >= p.min_rto.ps && gap <= p.min_rto.ps + 2 * DELAY,
        "{gap}"
    );
    assert_eq!(received(&n), size);
    assert_eq!(n.finish(), Some(retx[0].0 + DELAY));
    // The sender completes when the retransmission's cumulative ACK is back.
    assert_eq!(n.sender_finish(), Some(retx[0].0 + 2 * DELAY));
}

/// `initial_ssthresh_packets = 15`: slow start stops at 15 segments, so the
/// second round trip sends 15 segments instead of 20 (after the fifth ACK
/// the window grows by MSS/cwnd per ACK and frees one segment per ACK).
#[test]
fn initial_ssthresh_ends_slow_start_at_its_window() {
    let p = TcpParams {
        initial_ssthresh_packets: 15,
        ..params()
    };
    let mut n = net(Protocol::Tcp, p, Some(1000 * MSS));
    n.run(DELAY * 4 - 1, &mut never, &mut never);
    assert_eq!(sent(&n).len(), 10 + 15);
    let m = tcp(&n).subs[0].cc.metrics();
    assert_eq!(m.ssthresh, 15.0 * MSS as f64);
    assert!(m.cwnd > 15.0 * MSS as f64 && m.cwnd < 16.0 * MSS as f64);
}

/// `fixed_rto_us = 45`: a lost tail segment is resent 45 µs after the ACK
/// that armed the timer, below the 1 ms minimum RTO of the other keys, and a
/// second loss of it waits exactly 45 µs again: no back-off (pFabric, [PFAB] §4.2).
#[test]
fn a_fixed_rto_ignores_the_estimate_and_does_not_back_off() {
    let fixed = 45_000_000; // 45 µs
    let p = TcpParams {
        fixed_rto: Micros::from_ps(fixed),
        ..params()
    };
    let size = 30 * MSS;
    let mut n = net(Protocol::Tcp, p, Some(size));
    let last = 29 * MSS;
    let mut drops = 0;
    let mut drop = |pk: &Packet| {
        let hit = drops < 2 && split_seq(pk.seq).1 == last;
        drops += hit as u32;
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    assert_eq!(tcp(&n).stats.timeouts, 2);
    let retx: Vec<_> = sent(&n).into_iter().filter(|s| s.2).collect();
    assert_eq!(retx.len(), 2);
    let first = sent(&n).iter().find(|s| s.1 == last).expect("sent").0;
    let gap = retx[0].0 - first;
    assert!(gap >= fixed && gap <= fixed + 2 * DELAY, "{gap}");
    assert_eq!(retx[1].0 - retx[0].0, fixed, "no back-off");
    assert_eq!(received(&n), size);
}

/// DCTCP through the state machines: with every other data packet
/// marked, alpha settles near 1/2 and each window is cut by about alpha/2.
#[test]
fn dctcp_alpha_tracks_the_marked_fraction() {
    let mut n = net(Protocol::Dctcp, params(), None);
    let mut mark = |p: &Packet| (split_seq(p.seq).1 / MSS).is_multiple_of(2);
    n.run(DELAY * 2 * 300, &mut never, &mut mark);
    let alpha = tcp(&n).subs[0].cc.metrics().alpha.expect("dctcp");
    assert!((alpha - 0.5).abs() < 0.05, "alpha {alpha}");
    assert!(sent(&n).iter().all(|s| !s.2), "marks are not losses");
}

#[test]
fn reno_without_ecn_ignores_echoes_and_with_ecn_halves_once_per_window() {
    let everything = |_: &Packet| true;
    let mut plain = net(Protocol::Tcp, params(), Some(400 * MSS));
    plain.run(DELAY * 8, &mut never, &mut { everything });
    let mut ecn = net(
        Protocol::Tcp,
        TcpParams {
            ecn: true,
            ..params()
        },
        Some(400 * MSS),
    );
    ecn.run(DELAY * 8, &mut never, &mut { everything });
    assert!(tcp(&plain).cwnd(0) > 100.0 * MSS as f64);
    // One cut per round trip from 10 segments, floored at 2 MSS.
    assert!(
        tcp(&ecn).cwnd(0) < 10.0 * MSS as f64,
        "{}",
        tcp(&ecn).cwnd(0)
    );
}

#[test]
fn delayed_ack_acks_every_second_segment() {
    let p = TcpParams {
        delayed_ack: true,
        ..params()
    };
    let mut n = net(Protocol::Tcp, p, Some(10 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(n.to_source, 5);
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
    let mut n = net(Protocol::Tcp, p, Some(3 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    // Segment 0 alone: ACKed by the timer; then 1 and 2 (cwnd 2): one ACK, which completes.
    assert_eq!(n.to_source, 2);
    assert_eq!(sent(&n)[1].0, 2 * DELAY + delack);
}

#[test]
fn handshake_costs_one_round_trip_before_data() {
    let p = TcpParams {
        handshake: true,
        ..params()
    };
    let mut n = net(Protocol::Tcp, p, Some(5 * MSS));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(sent(&n)[0].0, 2 * DELAY, "first data one RTT after the SYN");
    assert_eq!(n.finish(), Some(3 * DELAY));
}

#[test]
fn mptcp_spreads_subflows_over_distinct_paths_and_completes() {
    let size = 500 * MSS;
    let mut n = net(Protocol::Mptcp, params(), Some(size));
    n.run(u64::MAX, &mut never, &mut never);
    assert_eq!(tcp(&n).subflows(), 8);
    let paths: std::collections::BTreeSet<u32> = tcp(&n).subs.iter().map(|s| s.path).collect();
    assert_eq!(paths.len(), 8);
    assert_eq!(received(&n), size);
    assert!(n.finish().is_some());
    assert_eq!(tcp(&n).stats.retransmissions, 0);
    // Only when every subflow's last byte is acknowledged.
    assert_eq!(n.sender_finish(), n.finish().map(|f| f + DELAY));
    assert!(tcp(&n).subs.iter().all(|s| s.snd_una == s.snd_nxt));
}

/// MPTCP params with reinjection on or off.
fn mptcp_params(reinject: bool) -> ProtocolParams {
    ProtocolParams {
        tcp: params(),
        mptcp: MptcpParams {
            reinject,
            ..MptcpParams::default()
        },
        ..ProtocolParams::default()
    }
}

/// Subflow 3's path loses every data packet sent before `until` ps: it
/// stalls with its first window (10 segments, sent at 0). A 50 ms run.
fn stall_subflow_3(reinject: bool, until: u64) -> Net {
    let size = 200 * MSS;
    let mut n = Net::new(
        Protocol::Mptcp,
        &flow(Some(size), 16),
        mptcp_params(reinject),
        DELAY,
    );
    let mut drop = |p: &Packet| split_seq(p.seq).0 == 3 && p.sent_ps < until;
    n.run(50_000_000_000, &mut drop, &mut never);
    n
}

/// RFC 8684 §3.3.6: a subflow whose path has failed holds the connection
/// until its data is sent on another. Its first RTO fires at the initial
/// 1 ms; the other subflows, done with their own data, have room and send
/// the ten segments at once, so the receiver completes one one-way delay
/// later and the sender one round trip later. Without reinjection the flow
/// never completes.
#[test]
fn mptcp_reinjects_a_stalled_subflows_data_on_the_others() {
    let rto = 1_000_000_000;
    let n = stall_subflow_3(true, u64::MAX);
    assert_eq!(received(&n), 200 * MSS, "every byte once");
    assert_eq!(n.finish(), Some(rto + DELAY));
    assert_eq!(n.sender_finish(), Some(rto + 2 * DELAY));
    let reinjected: Vec<_> = n
        .sent
        .iter()
        .filter(|(t, p)| *t == rto && p.has(flags::RETX) && split_seq(p.seq).0 != 3)
        .collect();
    assert_eq!(reinjected.len(), 10, "subflow 3's window, on the others");
    assert_eq!(n.src.ep.poll_at(), None, "the stalled subflow stops too");

    let n = stall_subflow_3(false, u64::MAX);
    assert_eq!(
        n.finish(),
        None,
        "without reinjection the dead path holds the flow"
    );
    assert_eq!(received(&n), 190 * MSS);
}

/// The stalled subflow's own retransmissions get through once its path
/// recovers, so its data arrives twice: the receiver counts it once, by
/// data sequence number, and the flow still ends at the reinjection.
#[test]
fn mptcp_counts_data_that_arrives_twice_once() {
    let n = stall_subflow_3(true, 1_000_000_000);
    assert_eq!(received(&n), 200 * MSS);
    assert_eq!(n.finish(), Some(1_000_000_000 + DELAY));
    assert_eq!(n.src.ep.poll_at(), None);
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
        let mut n = net(Protocol::Tcp, p, Some(3 * MSS));
        let mut dropped = false;
        let mut drop = |pk: &Packet| {
            let hit = !dropped && split_seq(pk.seq).1 == 0;
            dropped |= hit;
            hit
        };
        n.run(u64::MAX, &mut drop, &mut never);
        let retx = sent(&n).iter().find(|s| s.2).expect("retransmitted").0;
        if er {
            assert_eq!(retx, 2 * DELAY, "on the second duplicate ACK");
            assert_eq!(tcp(&n).stats.timeouts, 0);
        } else {
            assert_eq!(tcp(&n).stats.timeouts, 1);
        }
        assert_eq!(received(&n), 3 * MSS);
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
        let mut n = net(proto, p, Some(size));
        n.back_drop_every = ack_drop_every;
        let mut k = 0usize;
        let mut drop = |_: &Packet| {
            k += 1;
            lost.contains(&(k - 1))
        };
        n.run(u64::MAX, &mut drop, &mut never);
        proptest::prop_assert_eq!(received(&n), size);
        proptest::prop_assert!(n.finish().is_some());
        proptest::prop_assert_eq!(n.src.ep.poll_at(), None);
        // Every transmission beyond one per segment is a counted retransmission.
        let segs = size.div_ceil(MSS) as usize;
        proptest::prop_assert_eq!(sent(&n).len() - segs, tcp(&n).stats.retransmissions as usize);
    }
}

#[test]
fn subflow_index_survives_the_sequence_encoding() {
    let (sub, seq) = split_seq(sub_seq(7, 123_456_789));
    assert_eq!((sub, seq), (7, 123_456_789));
}

/// Runs a 100-segment flow with `sack_blocks` = `blocks`, dropping the first
/// transmission of each segment in `lost`.
fn run_with_losses(blocks: u32, lost: &[u64]) -> Net {
    let p = TcpParams {
        sack_blocks: blocks,
        ..params()
    };
    let mut n = net(Protocol::Tcp, p, Some(100 * MSS));
    let mut dropped = Vec::new();
    let mut drop = |pk: &Packet| {
        let seg = split_seq(pk.seq).1 / MSS;
        let hit = lost.contains(&seg) && !dropped.contains(&seg);
        if hit {
            dropped.push(seg);
        }
        hit
    };
    n.run(u64::MAX, &mut drop, &mut never);
    assert_eq!(received(&n), 100 * MSS);
    n
}

/// `sack_blocks = 0` with one loss: every duplicate ACK stands for a segment
/// that left, as a SACK block would, so NewReno's fast recovery (RFC 6582
/// §3.2, the window inflated by one MSS per duplicate ACK) sends exactly what
/// SACK recovery sends (RFC 6675's pipe less the SACKed segments): the same
/// transmissions at the same times. (Without that accounting the pipe stays
/// full until the retransmission's ACK, and this flow waits for its RTO.)
#[test]
fn without_sack_one_loss_recovers_as_with_sack() {
    let (plain, sack) = (run_with_losses(0, &[15]), run_with_losses(1, &[15]));
    assert_eq!(sent(&plain), sent(&sack));
    assert_eq!(sent(&plain).iter().filter(|x| x.2).count(), 1);
    assert_eq!(tcp(&plain).stats.timeouts, 0);
}

/// `sack_blocks = 0` with four holes in one window (segments 11, 13, 15,
/// 17, all sent in the second round trip): the sender learns of each next
/// hole only from the partial ACK of the previous retransmission (RFC 6582
/// §3.2 step 5), so the four go out exactly one round trip apart. With SACK,
/// the segments SACKed above each hole mark it lost at once (RFC 6675
/// IsLost), and all four go out together.
#[test]
fn without_sack_each_further_hole_waits_a_round_trip() {
    let holes = [11, 13, 15, 17];
    let retx = |n: &Net| -> Vec<(u64, u64)> {
        sent(n)
            .iter()
            .filter(|x| x.2)
            .map(|x| (x.0, x.1 / MSS))
            .collect()
    };
    let (plain, sack) = (run_with_losses(0, &holes), run_with_losses(1, &holes));
    let (p, s) = (retx(&plain), retx(&sack));
    let t0 = p[0].0;
    let rtt = 2 * DELAY;
    let one_per_rtt: Vec<_> = (0..4).map(|i| (t0 + i * rtt, holes[i as usize])).collect();
    assert_eq!(p, one_per_rtt);
    let together: Vec<_> = holes.iter().map(|&h| (t0, h)).collect();
    assert_eq!(s, together);
    assert_eq!(tcp(&plain).stats.timeouts + tcp(&sack).stats.timeouts, 0);
}

/// An application-limited TCP flow (`app`): 8 segments at the start, then
/// 4 every 1.152 ms (36 KB of 9000-byte segments at 0.25 Gb/s: 36000 ×
/// 8 / 0.25 ns), 20 segments in all. The scripted network has a 20 µs
/// RTT, so each message is sent whole at its arrival (the window is 10 at
/// the start and larger later) and the sender is idle in between; the flow
/// ends one one-way delay after the last message arrives.
#[test]
fn an_application_limited_flow_sends_each_message_at_its_arrival() {
    const GAP: u64 = 1_152_000_000; // ps
    let mut info = flow(Some(20 * MSS), 16);
    info.app = Some(periodic_app(4 * MSS, 0.25, Some(8 * MSS)));
    let params = ProtocolParams {
        tcp: params(),
        ..ProtocolParams::default()
    };
    let mut n = Net::new(Protocol::Tcp, &info, params, DELAY);
    n.run(u64::MAX, &mut never, &mut never);
    let mut want = Vec::new();
    for k in 0..8 {
        want.push((0, k * MSS, false));
    }
    for m in 1..=3 {
        for k in 0..4 {
            want.push((m * GAP, (4 + 4 * m + k) * MSS, false));
        }
    }
    assert_eq!(sent(&n), want);
    assert!(n.sent.last().unwrap().1.has(flags::LAST));
    assert_eq!(received(&n), 20 * MSS);
    assert_eq!(n.finish(), Some(3 * GAP + DELAY));
    assert_eq!(n.sender_finish(), Some(3 * GAP + 2 * DELAY));
    // Nothing is left to wake the sender.
    assert_eq!(n.src.next_wake(), None);
}

/// RFC 5681 §4.1's restart after idle (`slow_start_after_idle`): 40
/// segments at the start, then 30 more 1.728 ms later (270 KB at 1.25 Gb/s).
/// By then the first 40 are acknowledged (slow start: the window is 10 +
/// 40 = 50 segments) and the sender has been idle for more than its 1 ms
/// RTO. With the restart it sends the initial window of 10 at once; without,
/// all 30.
#[test]
fn an_idle_sender_restarts_from_the_initial_window_when_asked() {
    const GAP: u64 = 1_728_000_000; // ps
    let burst = |restart: bool| {
        let mut info = flow(Some(70 * MSS), 16);
        info.app = Some(periodic_app(30 * MSS, 1.25, Some(40 * MSS)));
        let params = ProtocolParams {
            tcp: TcpParams {
                slow_start_after_idle: restart,
                ..params()
            },
            ..ProtocolParams::default()
        };
        let mut n = Net::new(Protocol::Tcp, &info, params, DELAY);
        n.run(u64::MAX, &mut never, &mut never);
        assert_eq!(received(&n), 70 * MSS);
        sent(&n).iter().filter(|s| s.0 == GAP).count()
    };
    assert_eq!(burst(false), 30);
    assert_eq!(burst(true), 10);
}
