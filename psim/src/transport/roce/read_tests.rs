//! RDMA Reads (`read.rs`): the request's trip, go-back-N's requests again,
//! IRN's read (N)ACKs and responder timeouts, and DCQCN at the responder.

use super::*;
use crate::packet::{flags, PacketKind};
use crate::transport::testkit::{expect_out, flow, never, recv, Host, Net};
use crate::transport::Transport;

const US: u64 = 1_000_000;
/// 1064 wire bytes (1000 B of payload and the 64-byte header) at 10 Gb/s.
const GAP: u64 = 851_200;
/// The test network's one-way delay.
const DELAY: u64 = 7 * US;

fn read_flow(size: u64) -> FlowInfo {
    FlowInfo {
        read: true,
        ..flow(Some(size), 1)
    }
}

/// A response packet of a read of flow 1 (requester 0, responder 5).
fn response(proto: Protocol, psn: u64) -> Packet {
    let mut p = crate::packet::test_packet(PacketKind::Data, psn, 1064);
    p.proto = proto;
    p.src = 5;
    p.dst = 0;
    p
}

fn requester(proto: Protocol, p: &ProtocolParams, size: u64) -> Host {
    Host::new(0, proto.starter(&read_flow(size), p))
}

/// Every protocol that reads: on a lossless network with one-way delay D
/// and an instant NIC, a write of n packets ends when the last, paced one
/// gap apart from time 0, arrives: (n − 1)·gap + D (checked for the
/// protocols that pace packet by packet). A read first sends its
/// request, which takes D, so it ends D later: 2D + (n − 1)·gap. The data
/// comes from the responder, its packets carry the protocol's 1000 + 64
/// bytes, and the request is a 64-byte `Pull` with the read's length.
#[test]
fn a_read_ends_one_request_trip_after_a_write_of_the_same_bytes() {
    let n = 100;
    for proto in Protocol::ALL.into_iter().filter(|p| p.reads()) {
        let p = ProtocolParams::default();
        if !matches!(proto, Protocol::Timely | Protocol::IrnTimely) {
            // (TIMELY's writes go as host-scheduled bursts: not this form.)
            let mut w = Net::new(proto, &flow(Some(n * 1000), 1), p.clone(), DELAY);
            w.run(u64::MAX, &mut never, &mut never);
            assert_eq!(w.finish(), Some((n - 1) * GAP + DELAY), "{proto:?} write");
        }

        let mut r = Net::new(proto, &read_flow(n * 1000), p, DELAY);
        r.run(u64::MAX, &mut never, &mut never);
        assert_eq!(
            r.finish(),
            Some(2 * DELAY + (n - 1) * GAP),
            "{proto:?} read"
        );
        let st = r.sink_stats().expect("the requester receives");
        assert_eq!(st.bytes_received, n * 1000, "{proto:?}");
        assert_eq!(r.sent.len() as u64, n, "{proto:?}: no retransmission");
        assert!(r
            .sent
            .iter()
            .all(|(_, d)| d.src == 5 && d.dst == 0 && d.size == 1064));
        let mut h = requester(proto, &ProtocolParams::default(), 12_345);
        let out = h.start(0);
        assert_eq!(out.len(), 1, "{proto:?}");
        let q = &out[0];
        assert_eq!(
            (q.kind, q.size, q.seq, q.ack),
            (PacketKind::Pull, 64, 0, 12_345)
        );
        assert_eq!((q.src, q.dst, q.proto), (0, 5, proto));
        assert!(is_read_request(q));
    }
}

/// RoCE's Read responses are not acknowledged; a gap makes the requester
/// ask again from the PSN it expects (the NACK), once per gap; a request
/// asked again after a timeout (`RETX`) sends the responder back to its PSN.
#[test]
fn roce_read_responses_get_no_acks_and_a_gap_asks_again() {
    let p = ProtocolParams::default();
    let mut h = requester(Protocol::Roce, &p, 10_000);
    h.start(0);
    recv!(h, at = 10, response(Protocol::Roce, 0) => []);
    recv!(h, at = 20, response(Protocol::Roce, 1) => []);
    recv!(h, at = 30, response(Protocol::Roce, 3) => [Nack { ack: 2, seq: 3 }]);
    recv!(h, at = 40, response(Protocol::Roce, 4) => []);
    // The responder: PSNs 0..3 out, then a request from 1 goes back to 1.
    let req = requester(Protocol::Roce, &p, 10_000).start(50).remove(0);
    let mut resp = Host::new(5, Protocol::receiver(&req, &p, 10_000_000_000));
    let out = resp.deliver(60, req.clone());
    expect_out!(
        out.iter().map(|x| (60, x.clone())).collect(),
        [(60, Data { seq: 0 })]
    );
    let mut sent: Vec<u64> = resp
        .advance(60 + 3 * GAP)
        .iter()
        .map(|(_, d)| d.seq)
        .collect();
    assert_eq!(sent, vec![1, 2, 3]);
    let again = Packet {
        seq: 1,
        flags: flags::RETX,
        ..req
    };
    sent = resp
        .deliver(70 + 3 * GAP, again)
        .iter()
        .map(|d| d.seq)
        .collect();
    sent.extend(resp.advance(60 + 6 * GAP).iter().map(|(_, d)| d.seq));
    assert_eq!(sent, vec![1, 2, 3], "back to PSN 1");
    // No timer at the responder: nothing comes back to time out on.
    assert_eq!(
        resp.next_wake(),
        Some(60 + 7 * GAP),
        "only its next departure"
    );
}

/// Without PFC the RoCE requester's timer asks again from its expected PSN
/// when nothing arrived in order for `rto_us`; a lost request is recovered
/// that way, and the flow record counts the requester's timeouts.
#[test]
fn roce_requester_times_out_and_asks_again() {
    let p = ProtocolParams::default();
    let rto = p.roce.rto.ps;
    let mut h = requester(Protocol::Roce, &p, 10_000);
    expect_out!(
        h.start(0).into_iter().map(|x| (0, x)).collect(),
        [(0, Pull { seq: 0 })]
    );
    expect_out!(h.advance(rto), [(rto, Pull { seq: 0 })]);
    // PSN 0 arrives: the timer restarts from it.
    recv!(h, at = rto + 5, response(Protocol::Roce, 0) => []);
    assert_eq!(h.next_wake(), Some(2 * rto + 5));
    expect_out!(h.advance(2 * rto + 5), [(2 * rto + 5, Pull { seq: 1 })]);
    assert_eq!(h.ep.source_stats().unwrap().timeouts, 2);
    // With PFC there is no timer.
    let mut p = ProtocolParams::default();
    p.roce.pfc = true;
    let mut h = requester(Protocol::Roce, &p, 10_000);
    h.start(0);
    assert_eq!(h.next_wake(), None);
}

/// A whole read over a lossy RoCE path: a lost response is recovered by the
/// requester's NACK, a lost last response by its timeout.
#[test]
fn roce_reads_recover_lost_responses() {
    let p = ProtocolParams::default();
    let mut lost = vec![10u64, 49];
    let mut drop = |d: &Packet| match lost.iter().position(|&s| s == d.seq) {
        Some(i) => {
            lost.remove(i);
            true
        }
        None => false,
    };
    let mut r = Net::new(Protocol::Roce, &read_flow(50_000), p.clone(), DELAY);
    r.run(u64::MAX, &mut drop, &mut never);
    let st = r.sink_stats().unwrap();
    assert_eq!(st.bytes_received, 50_000);
    // PSN 49 (the last) is lost in the pass that follows PSN 10's recovery
    // (the first pass went back before reaching it): only the timeout, rto
    // after PSN 48 arrived, asks for it.
    let fin = st.finish_ps.expect("finished");
    let t48 = r.sent.iter().rev().find(|(_, d)| d.seq == 48).unwrap().0 + DELAY;
    assert_eq!(
        fin,
        t48 + p.roce.rto.ps + 2 * DELAY,
        "timeout, request, response"
    );
    assert_eq!(r.src.ep.source_stats().unwrap().timeouts, 1);
}

/// IRN's requester sends a read (N)ACK per response packet; the responder
/// recovers a loss selectively with its own timeouts, and its responses
/// carry no extra header even when writes carry 16 bytes.
#[test]
fn irn_reads_ack_every_response_and_the_responder_recovers() {
    let mut p = ProtocolParams::default();
    p.irn.header_overhead_bytes = 16;
    let mut h = requester(Protocol::Irn, &p, 10_000);
    h.start(0);
    recv!(h, at = 10, response(Protocol::Irn, 0) => [Ack { ack: 1 }]);
    recv!(h, at = 20, response(Protocol::Irn, 2) => [Nack { ack: 1, seq: 2 }]);
    // The first response ended the request's timer: the responder's own
    // RTO covers the rest.
    assert_eq!(h.next_wake(), None);

    let mut lost = vec![5u64];
    let mut drop = |d: &Packet| match lost.iter().position(|&s| s == d.seq) {
        Some(i) => {
            lost.remove(i);
            true
        }
        None => false,
    };
    let mut r = Net::new(Protocol::Irn, &read_flow(20_000), p, DELAY);
    r.run(u64::MAX, &mut drop, &mut never);
    assert_eq!(r.sink_stats().unwrap().bytes_received, 20_000);
    assert!(
        r.sent.iter().all(|(_, d)| d.size == 1064),
        "no RETH on read responses"
    );
    let responder = r.sink.as_ref().unwrap().ep.source_stats().unwrap();
    assert_eq!(responder.retransmissions, 1);
    // Selective repeat: PSN 5 resent once, nothing else.
    assert_eq!(r.sent.iter().filter(|(_, d)| d.seq == 5).count(), 2);
    assert!(
        r.sender_finish().is_some(),
        "IRN's responder hears every ACK"
    );
}

/// DCQCN's reaction point is the responder: the requester answers marked
/// responses with CNPs, and the responder's cut makes the read take
/// longer than the same read unmarked.
#[test]
fn dcqcn_reads_slow_the_responder_on_marks() {
    let p = ProtocolParams::default();
    let mut h = requester(Protocol::Dcqcn, &p, 10_000);
    h.start(0);
    let mut ce = response(Protocol::Dcqcn, 0);
    ce.flags |= flags::ECN_CE | flags::ECT;
    let out = h.deliver(10, ce);
    assert_eq!(out.len(), 1);
    assert!(out[0].kind == PacketKind::Ack && out[0].has(flags::ECE) && out[0].dst == 5);

    let size = 200_000;
    let mut plain = Net::new(Protocol::Dcqcn, &read_flow(size), p.clone(), DELAY);
    plain.run(u64::MAX, &mut never, &mut never);
    let mut marked = Net::new(Protocol::Dcqcn, &read_flow(size), p, DELAY);
    let mut mark = |d: &Packet| d.seq.is_multiple_of(20);
    marked.run(u64::MAX, &mut never, &mut mark);
    let (a, b) = (plain.finish().unwrap(), marked.finish().unwrap());
    assert!(b > a, "marks slow the read: {b} against {a}");
}

/// PSNs per TIMELY segment at the defaults, and its wire time at 10 Gb/s.
fn timely_segment(p: &ProtocolParams) -> (u64, u64) {
    let seg = p.timely.segment_bytes.div_ceil(1000);
    (seg, seg * GAP)
}

/// TIMELY's requester asks for one segment at a time, the next one
/// segment's wire time at its rate (the line rate at the start) later; with
/// `window_packets` of one segment the second request waits for the first
/// segment's data. The responder sends what was asked for and no more.
#[test]
fn timely_reads_ask_for_one_segment_at_a_time() {
    let p = ProtocolParams::default();
    let (seg, gap) = timely_segment(&p);
    let size = 5 * seg * 1000;
    for proto in [Protocol::Timely, Protocol::IrnTimely] {
        let mut h = requester(proto, &p, size);
        expect_out!(
            h.start(0).into_iter().map(|x| (0, x)).collect(),
            [(0, Pull { seq: 0 })]
        );
        expect_out!(h.advance(gap), [(gap, Pull { seq: seg })]);

        let mut w = p.clone();
        w.roce.window_packets = seg as u32;
        let mut h = requester(proto, &w, size);
        let req = h.start(0).remove(0);
        assert_eq!(
            h.advance(10 * gap).len(),
            0,
            "{proto:?}: the window is full"
        );
        // The responder sends the segment asked for, then waits.
        let mut r = Host::new(5, Protocol::receiver(&req, &w, 10_000_000_000));
        let mut sent = r.deliver(0, req);
        sent.extend(r.advance(gap).into_iter().map(|(_, d)| d));
        let psns: Vec<u64> = sent.iter().map(|d| d.seq).collect();
        assert_eq!(psns, (0..seg).collect::<Vec<_>>(), "{proto:?}");
        // Its data arrives: the next request leaves at once.
        let mut out = Vec::new();
        for d in sent {
            out = h.deliver(10 * gap, d);
        }
        let asks: Vec<_> = out.iter().filter(|x| x.kind == PacketKind::Pull).collect();
        assert_eq!(asks.len(), 1, "{proto:?}: {out:?}");
        assert_eq!(asks[0].seq, seg);
    }
}

/// On an idle network TIMELY's paced requests cost a read nothing: each
/// request reaches the responder as it finishes the segment before, so
/// the read ends when a read asked for all at once would, 2D + (n − 1)·gap.
/// Each segment gives one RTT sample: its last packet's arrival less its
/// request's departure, less the segment's serialisation, which on this
/// network (delivery one delay after departure) is 2D − one packet's gap.
#[test]
fn timely_reads_on_an_idle_network_end_as_unpaced_ones_and_sample_each_segment() {
    let p = ProtocolParams::default();
    let (seg, _) = timely_segment(&p);
    let n = 10 * seg;
    for proto in [Protocol::Timely, Protocol::IrnTimely] {
        let mut r = Net::new(proto, &read_flow(n * 1000), p.clone(), DELAY);
        r.run(u64::MAX, &mut never, &mut never);
        assert_eq!(r.finish(), Some(2 * DELAY + (n - 1) * GAP), "{proto:?}");
        let st = r.src.ep.source_stats().unwrap();
        assert_eq!(st.rtt_samples, 10, "{proto:?}");
        assert_eq!(st.rtt_sum_ps, 10 * (2 * DELAY - GAP), "{proto:?}");
    }
}

/// Above T_high TIMELY cuts its rate, so the requests spread out and the
/// read takes longer than one asked for at once.
#[test]
fn timely_reads_slow_their_requests_when_the_rtt_is_high() {
    let p = ProtocolParams::default();
    let (seg, _) = timely_segment(&p);
    // 100 segments: at the line rate the requests would span about 1.4 ms,
    // and the first samples, about 600 µs (above T_high's 500 µs), come
    // back while most are still to be asked for.
    let n = 100 * seg;
    let delay = 300 * US;
    let mut r = Net::new(Protocol::Timely, &read_flow(n * 1000), p, delay);
    r.run(u64::MAX, &mut never, &mut never);
    let fin = r.finish().unwrap();
    assert!(fin > 2 * delay + (n - 1) * GAP, "{fin}");
}

/// A lost segment request under TIMELY is asked again when nothing arrived
/// in order for the timeout (IRN's `rto_high_us`, as IRN's responder
/// never hears of a request it did not get).
#[test]
fn timely_reads_ask_again_for_a_lost_segment_request() {
    let p = ProtocolParams::default();
    let (seg, gap) = timely_segment(&p);
    let rto = p.irn.rto_high.ps;
    let mut h = requester(Protocol::IrnTimely, &p, 2 * seg * 1000);
    h.start(0);
    // The second request (for PSN `seg` on) is lost on its way.
    expect_out!(h.advance(gap), [(gap, Pull { seq: seg })]);
    let t = 2 * gap;
    for psn in 0..seg {
        h.deliver(t, response(Protocol::IrnTimely, psn));
    }
    assert_eq!(h.next_wake(), Some(t + rto));
    expect_out!(h.advance(t + rto), [(t + rto, Pull { seq: seg })]);
    assert_eq!(h.ep.source_stats().unwrap().timeouts, 1);
}

/// An endless TIMELY read under `window_packets` keeps going: the window
/// is the requester's (PSNs asked for and not received), so the responder,
/// which hears no ACKs, does not hold one of its own.
#[test]
fn an_endless_timely_read_slides_its_window() {
    let mut p = ProtocolParams::default();
    p.roce.window_packets = 128;
    let f = FlowInfo {
        read: true,
        ..flow(None, 1)
    };
    let mut r = Net::new(Protocol::Timely, &f, p, DELAY);
    r.run(2_000 * US, &mut never, &mut never);
    // 2 ms at 10 Gb/s is about 2,350 packets (128 packets more than cover
    // the 14 µs round trip); a responder holding the window would stop at 128.
    let got = r.sink_stats().unwrap().packets_received;
    assert!(got > 1_000, "{got}");
}

/// TIMELY's requester holds no timer while nothing it asked for is
/// missing, so a slow rate between requests never times out; the next
/// request arms it again.
#[test]
fn timely_requester_times_out_only_while_data_is_missing() {
    let p = ProtocolParams::default();
    let (seg, gap) = timely_segment(&p);
    for proto in [Protocol::Timely, Protocol::IrnTimely] {
        let rto = match proto {
            Protocol::Timely => p.roce.rto.ps,
            _ => p.irn.rto_high.ps,
        };
        let mut h = requester(proto, &p, 2 * seg * 1000);
        h.start(0);
        for psn in 0..seg {
            h.deliver(gap / 2, response(proto, psn));
        }
        assert_eq!(h.next_wake(), Some(gap), "{proto:?}: only the next request");
        expect_out!(h.advance(gap), [(gap, Pull { seq: seg })]);
        assert_eq!(h.next_wake(), Some(gap + rto), "{proto:?}: the timer");
    }
}

/// A go-back-N responder under TIMELY goes back only for a request asked
/// again after a timeout (`RETX`), never for a plain one that arrives late.
#[test]
fn timely_responders_go_back_only_for_requests_asked_again() {
    let p = ProtocolParams::default();
    let (seg, gap) = timely_segment(&p);
    let mut h = requester(Protocol::Timely, &p, 4 * seg * 1000);
    let first = h.start(0).remove(0);
    let mut r = Host::new(5, Protocol::receiver(&first, &p, 10_000_000_000));
    let mut psns: Vec<u64> = r.deliver(0, first.clone()).iter().map(|d| d.seq).collect();
    psns.extend(r.advance(gap).iter().map(|(_, d)| d.seq));
    assert_eq!(psns, (0..seg).collect::<Vec<_>>());
    // A plain request from PSN 3 (below what was sent): only a grant up to
    // its segment's end, which is already granted: nothing is sent.
    let late = Packet {
        seq: 3,
        ..first.clone()
    };
    assert!(r.deliver(gap, late).is_empty());
    assert_eq!(r.advance(3 * gap).len(), 0);
    // Asked again from PSN 3: back to it.
    let again = Packet {
        seq: 3,
        flags: flags::RETX,
        ..first
    };
    let out = r.deliver(3 * gap, again);
    assert_eq!(out.first().map(|d| d.seq), Some(3), "{out:?}");
}

/// A window smaller than a segment lets one segment go at a time.
#[test]
fn timely_reads_with_a_window_below_a_segment_complete() {
    let mut p = ProtocolParams::default();
    p.roce.window_packets = 4;
    let (seg, _) = timely_segment(&p);
    let mut r = Net::new(Protocol::Timely, &read_flow(3 * seg * 1000), p, DELAY);
    r.run(u64::MAX, &mut never, &mut never);
    assert_eq!(r.sink_stats().unwrap().bytes_received, 3 * seg * 1000);
}
