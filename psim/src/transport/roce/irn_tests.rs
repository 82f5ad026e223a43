//! IRN: selective repeat, the recovery exit rule, RTO_low/RTO_high, BDP-FC
//! and the §4.5.3 overheads, with the transport test kit.

use super::*;
use crate::packet::{flags, PacketKind};
use crate::transport::testkit::{expect_out, flow, never, recv, Host, Net};
use crate::transport::Transport;

const US: u64 = 1_000_000;
/// 1064 wire bytes at 10 Gb/s.
const GAP: u64 = 851_200;

fn params(f: impl FnOnce(&mut IrnParams)) -> ProtocolParams {
    let mut p = ProtocolParams::default();
    f(&mut p.irn);
    p.validate().unwrap();
    p
}

fn data(psn: u64) -> Packet {
    let mut p = crate::packet::test_packet(PacketKind::Data, psn, 1064);
    p.proto = Protocol::Irn;
    p.src = 0;
    p.dst = 5;
    p
}

/// Feedback from the receiver: cumulative ACK `ack`, SACKed PSN `seq`.
fn feedback(kind: PacketKind, ack: u64, seq: u64) -> Packet {
    super::tests::as_feedback(data(seq), kind, ack)
}

fn source(p: &ProtocolParams, size: u64) -> Host<IrnSource> {
    let Endpoint::IrnSource(s) = Protocol::Irn.source(&flow(Some(size), 1), p) else {
        panic!("an IRN source")
    };
    Host::new(0, *s)
}

fn psns(out: &[(u64, Packet)]) -> Vec<u64> {
    out.iter().map(|(_, p)| p.seq).collect()
}

#[test]
fn the_receiver_keeps_out_of_order_packets_and_nacks_each_one() {
    let p = params(|_| {});
    let mut s = Host::new(5, Protocol::sink(&data(0), &p));
    recv!(s, at = 10, data(0) => [Ack { ack: 1, seq: 0 }]);
    // PSN 1 lost: every later arrival is kept and NACKed with (1, its PSN).
    recv!(s, at = 20, data(2) => [Nack { ack: 1, seq: 2 }]);
    recv!(s, at = 30, data(3) => [Nack { ack: 1, seq: 3 }]);
    let mut last = data(4);
    last.flags |= flags::LAST;
    last.payload = 500;
    recv!(s, at = 40, last => [Nack { ack: 1, seq: 4 }]);
    assert_eq!(s.ep.sink_stats().unwrap().finish_ps, None);
    // The hole filled: one cumulative ACK past everything held; complete.
    recv!(s, at = 50, data(1) => [Ack { ack: 5, seq: 1 }]);
    let st = s.ep.sink_stats().unwrap();
    assert_eq!((st.bytes_received, st.finish_ps), (4500, Some(50)));
    // A duplicate is ACKed, not counted.
    recv!(s, at = 60, data(2) => [Ack { ack: 5 }]);
    assert_eq!(s.ep.sink_stats().unwrap().bytes_received, 4500);
}

#[test]
fn a_single_loss_is_resent_once_without_going_back_n() {
    for proto in [Protocol::Irn, Protocol::IrnDcqcn, Protocol::IrnTimely] {
        let p = params(|_| {});
        let mut net = Net::new(proto, &flow(Some(20_000), 1), p, 5 * US);
        let mut drop = |pkt: &Packet| pkt.seq == 3 && !pkt.has(flags::RETX);
        net.run(100_000 * US, &mut drop, &mut never);
        assert_eq!(
            net.sink_stats().unwrap().bytes_received,
            20_000,
            "{proto:?}"
        );
        assert!(net.finish().is_some(), "{proto:?}");
        let retx: Vec<u64> = net
            .sent
            .iter()
            .filter(|(_, p)| p.has(flags::RETX))
            .map(|(_, p)| p.seq)
            .collect();
        assert_eq!(retx, [3], "{proto:?}: only the lost PSN is resent");
        let Endpoint::IrnSource(s) = &net.src.ep else {
            panic!()
        };
        assert_eq!(s.stats().timeouts, 0, "{proto:?}");
        assert_eq!(s.stats().packets_sent, 21, "{proto:?}");
        assert_eq!(net.src.next_wake(), None, "{proto:?}: idle at the end");
    }
}

/// PSNs 0..=5 sent; PSN 0 ACKed; 1, 2 and 3 lost; 4 arrives: NACK(1, SACK
/// 4) enters recovery. The sender and the time of that feedback.
fn holes_below_sack_4(p: &ProtocolParams) -> (Host<IrnSource>, u64) {
    let mut h = source(p, 10_000);
    h.start(0);
    assert_eq!(h.advance(5 * GAP).len(), 5); // PSNs 0..=5 sent
    let t = 5 * GAP + 10;
    h.deliver(t, feedback(PacketKind::Ack, 1, 0));
    h.deliver(t, feedback(PacketKind::Nack, 1, 4));
    assert_eq!(h.ep.recovery(), Some(5), "the last new PSN sent");
    (h, t)
}

#[test]
fn recovery_resends_holes_below_the_highest_sack_and_exits_past_the_recovery_sequence() {
    let (mut h, t) = holes_below_sack_4(&params(|_| {}));
    // Resent first: the cumulative-ACK PSN, then 2 and 3 (below SACK 4);
    // 5 is above every SACK, so it is not lost yet: new PSNs follow.
    let out = h.advance(t + 5 * GAP);
    assert_eq!(psns(&out), [1, 2, 3, 6, 7]);
    assert!(out[..3].iter().all(|(_, p)| p.has(flags::RETX)));
    assert!(!out[3].1.has(flags::RETX));
    // A cumulative ACK up to the recovery sequence does not end recovery...
    let t = t + 5 * GAP + 10;
    h.deliver(t, feedback(PacketKind::Nack, 5, 6));
    assert_eq!(h.ep.recovery(), Some(5));
    // ... one past it does.
    h.deliver(t + 1, feedback(PacketKind::Ack, 6, 5));
    assert_eq!(h.ep.recovery(), None);
    assert_eq!(h.ep.stats().retransmissions, 3);
}

#[test]
fn rto_low_applies_with_at_most_n_packets_in_flight_else_rto_high() {
    // Two packets, both lost: in flight 2 <= N = 3, timeout at RTO_low.
    let p = params(|_| {});
    let mut h = source(&p, 2000);
    h.start(0);
    h.advance(GAP);
    assert_eq!(h.next_wake(), Some(100 * US));
    let out = expect_out!(h.advance(100 * US), [(100 * US, Data { seq: 0 })]);
    assert!(out[0].1.has(flags::RETX));
    assert_eq!(h.ep.stats().timeouts, 1);
    assert_eq!(h.ep.recovery(), Some(1));
    // Ten packets, all lost: RTO_low expires with 10 > N in flight and is
    // extended to RTO_high after the arming.
    let mut h = source(&p, 10_000);
    h.start(0);
    h.advance(9 * GAP);
    assert_eq!(h.ep.in_flight(), 10);
    assert!(h.advance(320 * US - 1).is_empty());
    assert_eq!(h.ep.stats().timeouts, 0);
    expect_out!(h.advance(320 * US), [(320 * US, Data { seq: 0 })]);
    assert_eq!(h.ep.stats().timeouts, 1);
    // SACKed packets are not in flight: with 8 of 10 SACKed, RTO_low applies.
    eight_of_ten_sacked(&p);
    // Without a timeout there is no timer at all.
    let p = params(|i| i.timeout = false);
    let mut h = source(&p, 2000);
    h.start(0);
    h.advance(GAP);
    assert_eq!(h.next_wake(), None);
}

/// Ten packets sent, PSNs 2..=9 SACKed by NACKs, PSN 0 resent: 2 packets
/// in flight (at most N = 3), so the timer armed at 0 stays at RTO_low.
fn eight_of_ten_sacked(p: &ProtocolParams) -> Host<IrnSource> {
    let mut h = source(p, 10_000);
    h.start(0);
    h.advance(9 * GAP);
    for s in 2..10 {
        h.deliver(9 * GAP + s, feedback(PacketKind::Nack, 0, s));
    }
    h.advance(10 * US); // the resend of PSN 0
    assert_eq!(h.ep.in_flight(), 2);
    assert_eq!(h.ep.rto_at(), Some(100 * US));
    h
}

#[test]
fn bdp_fc_stops_new_packets_at_the_cap() {
    let p = params(|i| i.bdp_cap_packets = 4);
    let mut h = source(&p, 10_000);
    h.start(0);
    let out = h.advance(50 * US);
    assert_eq!(psns(&out), [1, 2, 3], "PSNs 0..=3, then the cap");
    assert_eq!(h.next_wake(), Some(100 * US), "only the RTO remains");
    // Each cumulative ACK opens one slot.
    let out = h.deliver(50 * US, feedback(PacketKind::Ack, 1, 0));
    assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), [4]);
    assert!(h.advance(60 * US).is_empty());
    // 0 turns BDP-FC off: all ten leave back to back.
    let p = params(|i| i.bdp_cap_packets = 0);
    let mut h = source(&p, 10_000);
    h.start(0);
    assert_eq!(h.advance(50 * US).len(), 9);
}

#[test]
fn the_fetch_delay_holds_retransmissions_and_the_header_overhead_grows_packets() {
    let p = params(|i| {
        i.retx_fetch = crate::transport::config::Micros::from_us(2.0);
        i.header_overhead_bytes = 16;
    });
    let mut h = source(&p, 3000);
    let out = h.start(0);
    assert_eq!((out[0].size, out[0].payload), (1080, 1000));
    h.advance(10 * US);
    // PSN 0 lost, 1 arrives: the resend of 0 leaves 2 µs after the NACK.
    h.deliver(20 * US, feedback(PacketKind::Nack, 0, 1));
    let out = h.advance(30 * US);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1.seq), (22 * US, 0));
}

/// Runs a 300 KB flow of `proto` dropping every 13th data packet and every
/// 7th packet back; (data packets dropped, retransmissions, completed).
fn lossy(proto: Protocol) -> (u64, u64, bool) {
    let mut net = Net::new(proto, &flow(Some(300_000), 1), params(|_| {}), 5 * US);
    let (mut n, mut drops) = (0, 0);
    let mut drop = |pkt: &Packet| {
        n += 1;
        let d = pkt.kind == PacketKind::Data && n % 13 == 0;
        drops += d as u64;
        d
    };
    net.back_drop_every = 7;
    net.run(100_000 * US, &mut drop, &mut never);
    let done = net.sink_stats().unwrap().bytes_received == 300_000 && net.finish().is_some();
    assert_eq!(
        net.src.next_wake(),
        None,
        "{proto:?}: idle after completion"
    );
    let retx = net.src.ep.source_stats().unwrap().retransmissions;
    (drops, retx, done)
}

#[test]
fn irn_completes_over_a_lossy_network_with_fewer_resends_than_go_back_n() {
    let (_, gbn, done) = lossy(Protocol::Roce);
    assert!(done);
    for proto in [Protocol::Irn, Protocol::IrnDcqcn, Protocol::IrnTimely] {
        let (drops, retx, done) = lossy(proto);
        assert!(done, "{proto:?}");
        assert!(retx >= drops && drops > 0, "{proto:?}: {retx} {drops}");
        assert!(2 * retx < gbn, "{proto:?}: IRN {retx}, go-back-N {gbn}");
    }
}

#[test]
fn bad_irn_settings_name_their_key() {
    let mut p = ProtocolParams::default();
    p.irn.rto_high = crate::transport::config::Micros::from_us(50.0);
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("protocol.irn.rto_high_us"), "{e}");
    let mut p = ProtocolParams::default();
    p.irn.retx_fetch = crate::transport::config::Micros::from_us(-1.0);
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("protocol.irn.retx_fetch_us"), "{e}");
}

/// `irn_aimd` ([TH] §4.3.6): NewReno's window over IRN's new packets. It
/// starts in congestion avoidance at its initial window (here 4 packets,
/// with BDP-FC off), grows by MTU²/cwnd per ACKed MTU, and halves when a
/// NACK starts recovery; the recovery's retransmissions still go out. Plain
/// IRN without BDP-FC keeps sending at line rate.
#[test]
fn irn_aimd_holds_new_packets_to_a_window_that_halves_on_a_nack() {
    let mut p = params(|i| i.bdp_cap_packets = 0);
    p.tcp.iw_packets = 4;
    p.validate().unwrap();
    let Endpoint::IrnSource(s) = Protocol::IrnAimd.source(&flow(Some(100_000), 1), &p) else {
        panic!("an IRN source")
    };
    let mut h = Host::new(0, *s);
    use crate::transport::cc::CongestionControl;
    let cwnd = |h: &Host<IrnSource>| h.ep.controller().unwrap().metrics().cwnd;
    let mut sent = h.start(0);
    sent.extend(h.advance(100 * US).into_iter().map(|(_, p)| p));
    assert_eq!(sent.iter().map(|p| p.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(cwnd(&h), 4000.0);
    // One ACKed packet: 4000 + 1000·1000/4000 = 4250 bytes, room for two more.
    let mut more: Vec<u64> = h
        .deliver(100 * US, feedback(PacketKind::Ack, 1, 0))
        .iter()
        .map(|p| p.seq)
        .collect();
    assert_eq!(cwnd(&h), 4250.0);
    more.extend(psns(&h.advance(200 * US)));
    assert_eq!(more, [4, 5]);
    // PSN 2 lost: the NACK for 3 starts recovery with 4 packets in flight
    // (1, 2, 4, 5): ssthresh = cwnd = 2000. The cumulative-ACK PSN and the
    // hole below the SACK are resent all the same; nothing new.
    let mut resent: Vec<u64> = h
        .deliver(200 * US, feedback(PacketKind::Nack, 1, 3))
        .iter()
        .map(|p| p.seq)
        .collect();
    assert_eq!(cwnd(&h), 2000.0);
    resent.extend(psns(&h.advance(300 * US)));
    assert_eq!(resent, [1, 2]);
    // Without the window, IRN sends on at line rate.
    let mut irn = source(&p, 100_000);
    let mut out = irn.start(0);
    out.extend(irn.advance(10 * GAP).into_iter().map(|(_, p)| p));
    assert_eq!(out.len(), 11);
}

/// A data packet of an `irn_dctcp` flow; `ce`: marked on the way.
fn dctcp_data(psn: u64, ce: bool) -> Packet {
    let mut p = data(psn);
    p.proto = Protocol::IrnDctcp;
    p.flags = flags::ECT | if ce { flags::ECN_CE } else { 0 };
    p
}

/// Feedback as `feedback`, echoing a CE mark when `ece`.
fn echo(kind: PacketKind, ack: u64, seq: u64, ece: bool) -> Packet {
    let mut p = feedback(kind, ack, seq);
    if ece {
        p.flags |= flags::ECE;
    }
    p
}

/// `[protocol.irn] bdp_cap_packets = 0` and `[protocol.tcp] iw_packets = 4`:
/// the window-based IRNs start at 4 packets (4000 bytes) in congestion
/// avoidance, and plain arithmetic follows.
fn window_params() -> ProtocolParams {
    let mut p = params(|i| i.bdp_cap_packets = 0);
    p.tcp.iw_packets = 4;
    p.validate().unwrap();
    p
}

/// A window-based IRN sender of `proto` for a 100 KB flow.
fn window_source(proto: Protocol, p: &ProtocolParams) -> Host<IrnSource> {
    let Endpoint::IrnSource(s) = proto.source(&flow(Some(100_000), 1), p) else {
        panic!("an IRN source")
    };
    Host::new(0, *s)
}

/// The sender's controller state.
fn cc_state(h: &Host<IrnSource>) -> crate::transport::cc::CcMetrics {
    use crate::transport::cc::CongestionControl;
    h.ep.controller().expect("a controller").metrics()
}

/// Delivers `pkt` at `t` and lets the sender run to `until`: the PSNs it sent.
fn feed(h: &mut Host<IrnSource>, t: u64, pkt: Packet, until: u64) -> Vec<u64> {
    let mut out: Vec<u64> = h.deliver(t, pkt).iter().map(|p| p.seq).collect();
    out.extend(psns(&h.advance(until)));
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// `irn_dctcp`'s receiver echoes each CE mark on the ACK or NACK of that
/// packet (in order, out of order, duplicate alike) and sends no CNP; plain
/// IRN's receiver still answers a mark with a CNP (an `ECE` ACK carrying
/// the expected PSN) before its unflagged ACK.
#[test]
fn the_irn_dctcp_receiver_echoes_each_mark_on_its_ack_or_nack() {
    let p = params(|_| {});
    let mut s = Host::new(5, Protocol::sink(&dctcp_data(0, true), &p));
    recv!(s, at = 10, dctcp_data(0, true) => [Ack { ack: 1, seq: 0, flags: flags::ECE }]);
    recv!(s, at = 20, dctcp_data(1, false) => [Ack { ack: 2, seq: 1, flags: 0 }]);
    // PSN 2 lost: NACKs, each with its packet's echo.
    recv!(s, at = 30, dctcp_data(3, true) => [Nack { ack: 2, seq: 3, flags: flags::ECE }]);
    recv!(s, at = 40, dctcp_data(4, false) => [Nack { ack: 2, seq: 4, flags: 0 }]);
    recv!(s, at = 50, dctcp_data(2, false) => [Ack { ack: 5, seq: 2, flags: 0 }]);
    recv!(s, at = 60, dctcp_data(1, true) => [Ack { ack: 5, seq: 1, flags: flags::ECE }]);
    // Plain IRN: CNP first, then the ACK; no echo on the ACK.
    let mut ce = data(0);
    ce.flags |= flags::ECN_CE;
    let mut irn = Host::new(5, Protocol::sink(&data(0), &p));
    recv!(irn, at = 10, ce => [Ack { ack: 0, flags: flags::ECE }, Ack { ack: 1, flags: 0 }]);
}

/// DCTCP over IRN without losses. Window 0 ends at the first ACK (alpha =
/// 15/16 · 1 + 1/16 · 0 = 15/16, cwnd 4000 + 1000·1000/4000 = 4250);
/// window 1 runs until the cumulative ACK passes PSN 4 (the next PSN when
/// window 0 ended). Its first marked ACK cuts to 4250 · (1 − 15/32) =
/// 2257.8125 = ssthresh and does not grow it; the second is in the same
/// window and only grows it. The ACK of PSN 4 ends window 1 with 2 of 4
/// packets marked: alpha = 15/16 · 15/16 + 1/16 · 1/2 = 233/256. The cut
/// was at next PSN 6, so the marked ACK of PSN 5 may cut again: by
/// alpha / 2 = 233/512.
#[test]
fn irn_dctcp_updates_alpha_per_window_and_cuts_once_per_window_of_marks() {
    let p = window_params();
    let mut h = window_source(Protocol::IrnDctcp, &p);
    let mut sent = h.start(0);
    assert!(sent.iter().all(|d| d.has(flags::ECT)), "ECN-capable data");
    sent.extend(h.advance(100 * US).into_iter().map(|(_, d)| d));
    assert_eq!(sent.iter().map(|d| d.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let m = cc_state(&h);
    assert_eq!((m.cwnd, m.ssthresh, m.alpha), (4000.0, 4000.0, Some(1.0)));
    let ack = |n: u64, ece: bool| echo(PacketKind::Ack, n, n - 1, ece);
    assert_eq!(feed(&mut h, 100 * US, ack(1, false), 200 * US), [4, 5]);
    let m = cc_state(&h);
    assert_eq!(
        (m.cwnd, m.ssthresh, m.alpha),
        (4250.0, 4000.0, Some(15.0 / 16.0))
    );
    // Marked: cut by alpha/2, no growth; 4 packets in flight, nothing sent.
    assert!(feed(&mut h, 200 * US, ack(2, true), 200 * US).is_empty());
    let c1 = 4250.0 * 17.0 / 32.0;
    let m = cc_state(&h);
    assert_eq!((m.cwnd, m.ssthresh, m.alpha), (c1, c1, Some(15.0 / 16.0)));
    // Marked again in the same window: no second cut, additive increase.
    assert!(feed(&mut h, 200 * US, ack(3, true), 200 * US).is_empty());
    let c2 = c1 + 1000.0 * 1000.0 / c1;
    assert!(close(cc_state(&h).cwnd, c2));
    feed(&mut h, 200 * US, ack(4, false), 200 * US);
    let c3 = c2 + 1000.0 * 1000.0 / c2;
    assert!(close(cc_state(&h).cwnd, c3));
    // The ACK of PSN 4 ends window 1: F = 2/4.
    feed(&mut h, 200 * US, ack(5, false), 300 * US);
    let c4 = c3 + 1000.0 * 1000.0 / c3;
    let m = cc_state(&h);
    assert!(close(m.cwnd, c4) && m.ssthresh == c1);
    assert_eq!(m.alpha, Some(233.0 / 256.0));
    // Past the cut's window, a mark cuts again, by the new alpha.
    feed(&mut h, 300 * US, ack(6, true), 300 * US);
    let m = cc_state(&h);
    assert!(close(m.cwnd, c4 * (1.0 - 233.0 / 512.0)), "{m:?}");
    assert_eq!(m.ssthresh, m.cwnd);
}

/// Without marks `irn_dctcp` never cuts: alpha decays by 15/16 per window
/// (1 → 15/16 at the first ACK → 225/256 when window 1 ends) and its
/// window and its packets are `irn_aimd`'s, ACK for ACK.
#[test]
fn irn_dctcp_without_marks_never_cuts_and_sends_as_irn_aimd() {
    let p = window_params();
    let mut dctcp = window_source(Protocol::IrnDctcp, &p);
    let mut aimd = window_source(Protocol::IrnAimd, &p);
    let psns_at_start = |h: &mut Host<IrnSource>| {
        let mut out: Vec<u64> = h.start(0).iter().map(|d| d.seq).collect();
        out.extend(psns(&h.advance(100 * US)));
        out
    };
    assert_eq!(psns_at_start(&mut dctcp), psns_at_start(&mut aimd));
    let mut cwnd = 4000.0;
    for n in 1..=8u64 {
        let t = (100 + 100 * n) * US;
        let ack = || echo(PacketKind::Ack, n, n - 1, false);
        let sent = feed(&mut dctcp, t, ack(), t + 50 * US);
        assert_eq!(sent, feed(&mut aimd, t, ack(), t + 50 * US), "ACK {n}");
        cwnd += 1000.0 * 1000.0 / cwnd;
        let (m, a) = (cc_state(&dctcp), cc_state(&aimd));
        assert!(close(m.cwnd, cwnd) && m.cwnd == a.cwnd, "ACK {n}: {m:?}");
        assert_eq!(m.ssthresh, 4000.0);
        if n == 1 {
            assert_eq!(m.alpha, Some(15.0 / 16.0));
        }
        if n == 5 {
            assert_eq!(m.alpha, Some(225.0 / 256.0), "window 1 (PSNs 1-4) ended");
        }
    }
}

/// A marked NACK that starts recovery: DCTCP's cut (4250 → 2257.8125),
/// then the loss response, as `irn_aimd`'s: cwnd = ssthresh = 4 packets in
/// flight / 2 = 2000. Marks in recovery do not cut, but they count: window
/// 1 (PSNs 1–5) ends at the ACK that fills the hole, with PSNs 2, 3 and 5
/// marked of 5 delivered (the NACKs reported 2–5, the ACK only PSN 1):
/// alpha = 15/16 · 15/16 + 1/16 · 3/5. That ACK ends recovery (cwnd back to
/// ssthresh 2000) and grows it by 5000 · 1000 / 2000 = 2500; the next mark
/// is past the cut's window (next PSN 6) and cuts 4500 by alpha / 2.
#[test]
fn a_marked_nack_halves_irn_dctcp_as_irn_aimd_and_recovery_marks_count_but_do_not_cut() {
    let p = window_params();
    let mut h = window_source(Protocol::IrnDctcp, &p);
    let mut aimd = window_source(Protocol::IrnAimd, &p);
    for s in [&mut h, &mut aimd] {
        s.start(0);
        s.advance(100 * US);
        assert_eq!(
            feed(s, 100 * US, echo(PacketKind::Ack, 1, 0, false), 200 * US),
            [4, 5]
        );
    }
    // PSN 1 lost; 2, 3, 4 and 5 arrive, 2, 3 and 5 marked.
    let nack = |seq, ece| echo(PacketKind::Nack, 1, seq, ece);
    assert_eq!(feed(&mut h, 200 * US, nack(2, true), 200 * US), [1]);
    assert_eq!(feed(&mut aimd, 200 * US, nack(2, false), 200 * US), [1]);
    let m = cc_state(&h);
    assert_eq!((m.cwnd, m.ssthresh), (2000.0, 2000.0));
    assert_eq!(cc_state(&aimd).cwnd, 2000.0);
    assert_eq!(h.ep.recovery(), Some(5));
    assert!(feed(&mut h, 200 * US + 1, nack(3, true), 200 * US + 1).is_empty());
    assert!(feed(&mut h, 200 * US + 2, nack(4, false), 200 * US + 2).is_empty());
    // One packet in flight (PSN 1): the window lets PSN 6 out.
    assert_eq!(feed(&mut h, 200 * US + 3, nack(5, true), 300 * US), [6]);
    let m = cc_state(&h);
    assert_eq!(
        (m.cwnd, m.ssthresh, m.alpha),
        (2000.0, 2000.0, Some(15.0 / 16.0))
    );
    // The resent PSN 1 arrives: ACK 6 ends recovery and window 1.
    let sent = feed(
        &mut h,
        300 * US,
        echo(PacketKind::Ack, 6, 1, false),
        400 * US,
    );
    assert_eq!(h.ep.recovery(), None);
    let alpha = 225.0 / 256.0 + 3.0 / 80.0;
    let m = cc_state(&h);
    assert_eq!((m.cwnd, m.ssthresh), (4500.0, 2000.0));
    assert!(close(m.alpha.unwrap(), alpha), "{m:?}");
    assert_eq!(sent, [7, 8, 9, 10], "4 more packets under 4500 bytes");
    // Marked ACK of PSN 6: past the cut's window, out of recovery: a cut.
    feed(
        &mut h,
        400 * US,
        echo(PacketKind::Ack, 7, 6, true),
        400 * US,
    );
    let m = cc_state(&h);
    assert!(close(m.cwnd, 4500.0 * (1.0 - alpha / 2.0)), "{m:?}");
    assert_eq!(m.ssthresh, m.cwnd);
}

/// End to end over the scripted network, dropping every 13th data packet
/// and marking every 3rd: `irn_dctcp` completes and its window was cut
/// below the initial 120 packets; marks never reach a plain IRN sender's
/// window (it has none) and the flow completes the same.
#[test]
fn irn_dctcp_completes_over_a_lossy_marking_network() {
    for proto in [Protocol::IrnDctcp, Protocol::Irn] {
        let mut net = Net::new(proto, &flow(Some(300_000), 1), params(|_| {}), 5 * US);
        let (mut n, mut m) = (0, 0);
        let mut drop = |pkt: &Packet| {
            n += 1;
            pkt.kind == PacketKind::Data && n % 13 == 0
        };
        let mut mark = |_: &Packet| {
            m += 1;
            m % 3 == 0
        };
        net.run(100_000 * US, &mut drop, &mut mark);
        assert_eq!(
            net.sink_stats().unwrap().bytes_received,
            300_000,
            "{proto:?}"
        );
        assert!(
            net.finish().is_some() && net.sender_finish().is_some(),
            "{proto:?}"
        );
        assert_eq!(net.src.next_wake(), None, "{proto:?}: idle at the end");
        let Endpoint::IrnSource(s) = &net.src.ep else {
            panic!()
        };
        if proto == Protocol::IrnDctcp {
            use crate::transport::cc::CongestionControl;
            let m = s.controller().unwrap().metrics();
            assert!(m.ssthresh < 120_000.0, "{m:?}");
            assert!(m.alpha.unwrap() < 1.0, "{m:?}");
        }
    }
}

/// Over switches that never mark, `irn_dctcp` would be `irn_aimd`: refused
/// naming the switches' discipline, as DCQCN is.
#[test]
fn irn_dctcp_over_switches_that_never_mark_is_refused() {
    let r = RoceParams::default();
    let e = r
        .check_with_scenario(&[Protocol::Irn, Protocol::IrnDctcp], "droptail", false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("switch.queue.kind") && e.contains("irn_dctcp"),
        "{e}"
    );
    assert!(e.contains("never marks ECN"), "{e}");
    r.check_with_scenario(&[Protocol::IrnDctcp], "ecn", true)
        .unwrap();
    r.check_with_scenario(&[Protocol::IrnAimd], "droptail", false)
        .unwrap();
}

/// `CW`'s variant ([`IrnParams::rules`]): `cw_compat` picks `CW`'s choice
/// for every key not given, a key given wins, and the default is the
/// thesis's.
#[test]
fn cw_compat_resolves_each_choice_and_a_given_key_wins() {
    let thesis = IrnParams::default().rules();
    assert_eq!(
        thesis,
        IrnRules {
            resend: Resend::BelowHighestSack,
            rto_in_flight: RtoInFlight::Unsacked,
            rto_choice: RtoChoice::AtExpiry,
            nack_repeat_ps: 0,
            cnp_on_nack: false,
        }
    );
    let cw = IrnParams {
        cw_compat: true,
        ..IrnParams::default()
    };
    assert_eq!(
        cw.rules(),
        IrnRules {
            resend: Resend::BelowRecovery,
            rto_in_flight: RtoInFlight::Sent,
            rto_choice: RtoChoice::WhenArmed,
            nack_repeat_ps: 4 * US,
            cnp_on_nack: true,
        }
    );
    let mixed = IrnParams {
        cw_compat: true,
        resend: Some(Resend::BelowHighestSack),
        nack_repeat: Some(crate::transport::config::Micros::from_us(0.0)),
        ..IrnParams::default()
    };
    let r = mixed.rules();
    assert_eq!((r.resend, r.nack_repeat_ps), (Resend::BelowHighestSack, 0));
    assert_eq!(r.rto_choice, RtoChoice::WhenArmed);
    // The keys as a scenario writes them.
    let p: IrnParams = toml::from_str(
        "cw_compat = false\nresend = \"below_recovery\"\nrto_in_flight = \"sent\"\n\
         rto_choice = \"when_armed\"\nnack_repeat_us = 2.5\ncnp_on_nack = true\n",
    )
    .unwrap();
    let r = p.rules();
    assert_eq!(r.resend, Resend::BelowRecovery);
    assert_eq!(r.rto_in_flight, RtoInFlight::Sent);
    assert_eq!(r.rto_choice, RtoChoice::WhenArmed);
    assert_eq!((r.nack_repeat_ps, r.cnp_on_nack), (2_500_000, true));
    assert!(toml::from_str::<IrnParams>("resend = \"all\"\n").is_err());
    let mut p = ProtocolParams::default();
    p.irn.nack_repeat = Some(crate::transport::config::Micros::from_us(-1.0));
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("protocol.irn.nack_repeat_us"), "{e}");
}

/// `resend = "below_recovery"`: the scenario of the thesis's recovery test
/// above, where PSN 5 (above the only SACK, 4) is not resent; `CW` resends
/// it too, since it is below the recovery sequence, then sends new PSNs.
#[test]
fn cw_recovery_resends_every_unsacked_psn_up_to_the_recovery_sequence() {
    let (mut h, t) = holes_below_sack_4(&params(|i| i.resend = Some(Resend::BelowRecovery)));
    let out = h.advance(t + 5 * GAP);
    assert_eq!(psns(&out), [1, 2, 3, 5, 6]);
    assert!(out[..4].iter().all(|(_, p)| p.has(flags::RETX)));
    assert!(!out[4].1.has(flags::RETX));
    assert_eq!(h.ep.stats().retransmissions, 4);
}

/// `rto_in_flight = "sent"`: with 8 of 10 packets SACKed, the thesis's
/// count (2 in flight, at most N = 3) keeps RTO_low; `CW`'s (10 sent and
/// not cumulatively ACKed) extends it to RTO_high after the arming.
#[test]
fn cw_counts_sacked_packets_in_flight_for_rto_low() {
    let run = |p: &ProtocolParams| {
        let mut h = eight_of_ten_sacked(p);
        // At RTO_low's expiry: a timeout, or an extension.
        let out = h.advance(100 * US);
        (h.ep.stats().timeouts, out.len(), h.ep.rto_at())
    };
    assert_eq!(run(&params(|_| {})), (1, 1, Some(200 * US)));
    let p = params(|i| i.rto_in_flight = Some(RtoInFlight::Sent));
    assert_eq!(run(&p), (0, 0, Some(320 * US)));
}

/// `rto_choice = "when_armed"`: the length is chosen from the packets in
/// flight each time the timer starts, and it restarts on every data packet
/// sent and every ACK or NACK while data is outstanding.
#[test]
fn cw_chooses_the_rto_when_armed_and_restarts_it_on_every_send_and_ack() {
    let p = params(|i| i.rto_choice = Some(RtoChoice::WhenArmed));
    // Two packets: at most N in flight, RTO_low from the last send.
    let mut h = source(&p, 2000);
    h.start(0);
    h.advance(GAP);
    assert_eq!(h.ep.rto_at(), Some(GAP + 100 * US));
    // Ten packets: RTO_high from the last send, never extended.
    let mut h = source(&p, 10_000);
    h.start(0);
    h.advance(9 * GAP);
    assert_eq!(h.ep.rto_at(), Some(9 * GAP + 320 * US));
    // A NACK that advances nothing still restarts it (10 sent, 1 SACKed:
    // still above N); the thesis's timer keeps its arming at 0.
    let t = 20 * US;
    let resend = feed(&mut h, t, feedback(PacketKind::Nack, 0, 5), t + 1);
    assert_eq!(resend, [0], "PSN 0 resent in recovery");
    assert_eq!(h.ep.rto_at(), Some(t + 320 * US));
    // ACKs down to 2 outstanding: RTO_low from that ACK.
    let t = 30 * US;
    h.deliver(t, feedback(PacketKind::Ack, 8, 7));
    assert_eq!(h.ep.rto_at(), Some(t + 100 * US));
    // It fires at expiry, without an extension.
    h.advance(t + 100 * US);
    assert_eq!(h.ep.stats().timeouts, 1);
    // Thesis: the same NACK leaves the timer where the first send armed it.
    let p = params(|_| {});
    let mut h = source(&p, 10_000);
    h.start(0);
    h.advance(9 * GAP);
    h.deliver(20 * US, feedback(PacketKind::Nack, 0, 5));
    assert_eq!(h.ep.rto_at(), Some(100 * US));
}

/// `nack_repeat_us` and `cnp_on_nack` at the receiver: a PSN already held
/// is not NACKed again within the guard of the last NACK, and every NACK
/// carries `ECE` as a CNP; the thesis's receiver NACKs every out-of-order
/// arrival and flags none.
#[test]
fn cw_receiver_skips_repeat_nacks_within_the_guard_and_flags_each_nack_as_a_cnp() {
    let p = params(|i| i.cw_compat = true);
    let mut s = Host::new(5, Protocol::sink(&data(0), &p));
    recv!(s, at = 0, data(0) => [Ack { ack: 1 }]);
    let out = recv!(s, at = 10 * US, data(2) => [Nack { ack: 1, seq: 2 }]);
    assert!(out[0].has(flags::ECE));
    // The same PSN again 3 µs later: held, inside the 4 µs guard.
    recv!(s, at = 13 * US, data(2) => []);
    // A new PSN is NACKed whatever the guard, and restarts it.
    recv!(s, at = 13 * US + 1, data(3) => [Nack { ack: 1, seq: 3 }]);
    recv!(s, at = 17 * US, data(2) => []);
    // Past the guard, the repeat is NACKed again.
    recv!(s, at = 17 * US + 1, data(3) => [Nack { ack: 1, seq: 3 }]);
    let Endpoint::IrnSink(k) = &s.ep else {
        panic!()
    };
    assert_eq!(k.nacks(), 3);
    // The thesis's receiver.
    let p = params(|_| {});
    let mut s = Host::new(5, Protocol::sink(&data(0), &p));
    recv!(s, at = 0, data(0) => [Ack { ack: 1 }]);
    let out = recv!(s, at = 10 * US, data(2) => [Nack { ack: 1, seq: 2 }]);
    assert!(!out[0].has(flags::ECE));
    recv!(s, at = 13 * US, data(2) => [Nack { ack: 1, seq: 2 }]);
}

/// `cnp_on_nack` at the sender: DCQCN takes a NACK flagged `ECE` as a CNP
/// and cuts its rate; the same NACKs unflagged leave it at line rate.
#[test]
fn a_nack_that_carries_a_cnp_cuts_dcqcn() {
    let p = params(|i| i.cw_compat = true);
    let run = |cnp: bool| {
        let Endpoint::IrnSource(src) = Protocol::IrnDcqcn.source(&flow(Some(1_000_000), 1), &p)
        else {
            panic!()
        };
        let mut h = Host::new(0, *src);
        h.start(0);
        h.advance(20 * US);
        for (k, t) in [(2, 20 * US), (3, 40 * US), (4, 60 * US)] {
            let mut n = feedback(PacketKind::Nack, 0, k);
            if cnp {
                n.flags |= flags::ECE;
            }
            h.deliver(t, n);
            h.advance(t + 10 * US);
        }
        cc_state(&h).rate_bps.expect("a rate")
    };
    let line = 10_000_000_000;
    assert_eq!(run(false), line);
    assert!(run(true) < line, "{}", run(true));
}

/// IRN's sender under `nic_packets = 1`: one packet in the NIC at a time,
/// new or resent; the next goes as the NIC lets one go.
#[test]
fn irn_hands_the_nic_one_packet_at_a_time_with_nic_packets_1() {
    let mut p = params(|_| {});
    p.roce.nic_packets = 1;
    let mut h = source(&p, 10_000);
    h.nic_holds = true;
    assert_eq!(h.start(0).len(), 1);
    assert!(h.advance(10 * US).is_empty(), "the NIC holds PSN 0");
    assert_eq!(psns(&[(0, h.nic_sent(10 * US).remove(0))]), [1]);
    assert!(h.advance(20 * US).is_empty());
    // A NACK for PSN 0 (SACK 1) enters recovery: the resend takes the place
    // PSN 1 leaves, once the fetch delay is over.
    h.deliver(21 * US, feedback(PacketKind::Nack, 0, 1));
    let out = h.nic_sent(30 * US);
    assert_eq!((out[0].seq, out[0].has(flags::RETX)), (0, true));
    assert!(h.advance(40 * US).is_empty());
}

/// `shift_pending_departure` over IRN's sender: the same hand-worked
/// timeline as the go-back-N sender's test in tests.rs (a CNP at 0.1 µs
/// halves a paper-style DCQCN to 5 Gb/s, and a 1 µs rate timer lifts it to
/// 7.5, 8.75, 9.375 Gb/s at 1.1, 2.1, 3.1 µs): each change moves the
/// pending departure to one packet's time at the new rate after the last.
#[test]
fn irn_dcqcn_shifts_its_pending_departure_too() {
    let mut p = params(|_| {});
    p.dcqcn.style = crate::transport::cc::dcqcn::Style::Paper;
    p.dcqcn.rate_timer = Some(Micros::from_us(1.0));
    p.dcqcn.shift_pending_departure = true;
    p.validate().unwrap();
    let Endpoint::IrnSource(src) = Protocol::IrnDcqcn.source(&flow(Some(10_000), 1), &p) else {
        panic!("an IRN source")
    };
    let mut h = Host::new(0, *src);
    assert_eq!(h.start(0).len(), 1);
    let mut cnp = feedback(PacketKind::Ack, 0, 0);
    cnp.flags |= flags::ECE;
    assert!(h.deliver(US / 10, cnp).is_empty());
    let out = h.advance(4 * US + US / 2);
    let t: Vec<u64> = out.iter().map(|x| x.0).collect();
    assert_eq!(t[..4], [1_134_934, 2_107_734, 3_080_534, 3_988_481]);
    assert_eq!(psns(&out)[..4], [1, 2, 3, 4]);
}
