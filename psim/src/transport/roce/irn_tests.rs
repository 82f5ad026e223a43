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
    let mut p = data(seq);
    p.kind = kind;
    p.ack = ack;
    p.size = 64;
    p.payload = 0;
    p
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

#[test]
fn recovery_resends_holes_below_the_highest_sack_and_exits_past_the_recovery_sequence() {
    let p = params(|_| {});
    let mut h = source(&p, 10_000);
    h.start(0);
    assert_eq!(h.advance(5 * GAP).len(), 5); // PSNs 0..=5 sent
    let t = 5 * GAP + 10;
    // PSN 0 ACKed; 1, 2 and 3 lost; 4 arrives: NACK(1, SACK 4).
    h.deliver(t, feedback(PacketKind::Ack, 1, 0));
    h.deliver(t, feedback(PacketKind::Nack, 1, 4));
    assert_eq!(h.ep.recovery(), Some(5), "the last new PSN sent");
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
    let mut h = source(&p, 10_000);
    h.start(0);
    h.advance(9 * GAP);
    for s in 2..10 {
        h.deliver(9 * GAP + s, feedback(PacketKind::Nack, 0, s));
    }
    h.advance(10 * US); // the resend of PSN 0
    assert_eq!(h.ep.in_flight(), 2);
    assert_eq!(h.ep.rto_at(), Some(100 * US));
    // Without a timeout there is no timer at all.
    let p = params(|i| i.timeout = false);
    let mut h = source(&p, 2000);
    h.start(0);
    h.advance(GAP);
    assert_eq!(h.next_wake(), None);
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
