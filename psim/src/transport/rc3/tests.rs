use super::*;
use crate::transport::testkit::{flow, periodic_app, Host};

const MSS: u64 = 1460;

fn params(f: impl FnOnce(&mut Rc3Params)) -> ProtocolParams {
    let mut p = ProtocolParams::default();
    f(&mut p.rc3);
    p.validate().expect("valid");
    p
}

/// Segment number (1-based, from the head) of a data packet.
fn idx(p: &Packet) -> u64 {
    split_seq(p.seq).1 / MSS + 1
}

/// What one round trip of the scripted network saw.
#[derive(Debug, Default)]
struct Round {
    /// Segments TCP (priority 0) sent.
    tcp: Vec<u64>,
    /// Packets the RLP loop handed to the NIC, per priority.
    low_queued: [u64; 8],
    /// Packets the NIC transmitted.
    transmitted: usize,
    /// Segments lost in the network.
    dropped: Vec<u64>,
}

/// The thesis's toy network ([TH] §2.1.2): the NIC is the bottleneck and
/// sends `bdp` packets per RTT; the path adds no queueing. One step is one
/// RTT: the sender takes the previous round's ACKs in the order the receiver
/// sent them, then the NIC transmits. The NIC keeps what it was handed in an
/// earlier round ahead of the new packets (the qdisc has already moved them
/// to the NIC's ring, [TH] §2.3.2) and serves the new ones by priority. The
/// listed segments are lost on their first transmission.
fn rounds(size_packets: u64, bdp: usize, lose: &[u64], p: &ProtocolParams) -> Vec<Round> {
    let f = flow(Some(size_packets * MSS), 1);
    let mut src = Host::new(0, Rc3Source::new(Protocol::Rc3, &f, p));
    let mut sink: Option<Host> = None;
    let (mut ring, mut acks): (Vec<Packet>, Vec<Packet>) = (Vec::new(), Vec::new());
    let mut lost_once = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in 0..10u64 {
        let now = r * 1_000_000_000;
        let new = if r == 0 {
            src.start(now)
        } else {
            let mut v = Vec::new();
            for a in acks.drain(..) {
                v.extend(src.deliver(now, a));
            }
            v
        };
        let mut round = Round::default();
        for p in &new {
            if p.prio == 0 {
                round.tcp.push(idx(p));
            } else {
                round.low_queued[p.prio as usize] += 1;
            }
        }
        let mut new = new;
        new.sort_by_key(|p| p.prio);
        ring.extend(new);
        let n = ring.len().min(bdp);
        round.transmitted = n;
        for pkt in ring.drain(..n).collect::<Vec<_>>() {
            if lose.contains(&idx(&pkt)) && lost_once.insert(idx(&pkt)) {
                round.dropped.push(idx(&pkt));
                continue;
            }
            let s = sink.get_or_insert_with(|| Host::new(5, Protocol::sink(&pkt, p)));
            acks.extend(s.deliver(now + 500_000_000, pkt));
        }
        let done = round.tcp.is_empty() && round.transmitted == 0;
        out.push(round);
        if done {
            break;
        }
    }
    let st = sink
        .expect("a sink")
        .ep
        .sink_stats()
        .cloned()
        .expect("stats");
    assert_eq!(st.bytes_received, size_packets * MSS);
    out
}

/// [TH] §2.1.2: 66 packets, BDP 50, IW 4, packets 21 and 22 lost.
#[test]
fn the_thesis_example_runs_round_by_round() {
    let p = params(|_| {});
    let r = rounds(66, 50, &[21, 22], &p);
    // RTT 1: TCP sends 4 at P0; the RLP queues 62, 40 at P1 and 22 at P2;
    // the NIC sends 50 (4 + 46); 21 and 22 (P2, the last two sent) are lost.
    assert_eq!(r[0].tcp, [1, 2, 3, 4]);
    assert_eq!(&r[0].low_queued[..3], &[0, 40, 22]);
    assert_eq!(r[0].transmitted, 50);
    assert_eq!(r[0].dropped, [22, 21]); // sent tail first
                                        // RTT 2: TCP doubles its window and sends 8; the NIC also sends the 16
                                        // RLP packets left.
    assert_eq!(r[1].tcp, (5..=12).collect::<Vec<_>>());
    assert_eq!(r[1].low_queued, [0; 8]);
    assert_eq!(r[1].transmitted, 24);
    // RTT 3: TCP resends only the holes.
    assert_eq!(r[2].tcp, [21, 22]);
    // RTT 4: the ACKs arrive; nothing more is sent and no timer is left.
    assert!(r[3].tcp.is_empty() && r[3].transmitted == 0);
    assert_eq!(r.len(), 4);
}

/// With a handshake the RLP loop waits for the SYN-ACK: the first round
/// carries the SYN alone, and the thesis's example follows one round later,
/// its RLP packets behind TCP's initial window as without a handshake.
#[test]
fn with_a_handshake_the_low_loop_starts_after_the_syn_ack() {
    let mut p = params(|_| {});
    p.tcp.handshake = true;
    p.validate().expect("valid");
    let r = rounds(66, 50, &[21, 22], &p);
    assert_eq!(r[0].low_queued, [0; 8], "no RLP packet before the SYN-ACK");
    assert_eq!(r[0].transmitted, 1, "the SYN alone");
    assert_eq!(r[1].tcp, [1, 2, 3, 4]);
    assert_eq!(&r[1].low_queued[..3], &[0, 40, 22]);
    assert_eq!(r[1].transmitted, 50);
    assert_eq!(r[1].dropped, [22, 21]);
    assert_eq!(r[2].tcp, (5..=12).collect::<Vec<_>>());
    assert_eq!(r[3].tcp, [21, 22]);
    assert_eq!(r.len(), 5);
}

/// The same flow without the RLP loop is TCP: 4, 8, 16, 32, then the rest.
#[test]
fn without_the_low_loop_it_is_slow_starting_tcp() {
    let p = params(|c| c.low_loop = false);
    let r = rounds(66, 50, &[], &p);
    let sent: Vec<usize> = r.iter().map(|r| r.tcp.len()).collect();
    assert_eq!(sent, [4, 8, 16, 32, 6, 0]);
}

/// The ACK bump: a priority-0 cumulative ACK beyond `snd_nxt` advances it,
/// and the bytes below are not sent again.
#[test]
fn a_cumulative_ack_beyond_snd_nxt_bumps_it() {
    let p = params(|_| {});
    let f = flow(Some(20 * MSS), 1);
    let mut h = Host::new(0, Rc3Source::new(Protocol::Rc3, &f, &p));
    let out = h.start(0);
    assert_eq!(out.iter().filter(|p| p.prio == 0).count(), 4);
    assert_eq!(out.len(), 20);
    let ack = |cum: u64, prio: u8| {
        let mut a = out[0].clone();
        (a.src, a.dst, a.kind, a.payload, a.size) = (5, 0, PacketKind::Ack, 0, HEADER_BYTES);
        (a.ack, a.seq, a.prio, a.sent_ps) = (cum, sub_seq(0, cum.saturating_sub(MSS)), prio, 0);
        a
    };
    // A low-priority ACK up to segment 10 sends nothing and moves no window.
    let cwnd = h.ep.cwnd();
    assert!(h.deliver(1_000, ack(10 * MSS, 2)).is_empty());
    assert_eq!((h.ep.cwnd(), h.ep.rc3.bumps), (cwnd, 0));
    // A priority-0 ACK at segment 12: bump; TCP goes on from segment 13.
    let sent = h.deliver(2_000, ack(12 * MSS, 0));
    assert_eq!(h.ep.rc3.bumps, 1);
    let first: Vec<u64> = sent.iter().map(idx).collect();
    assert_eq!(first.first(), Some(&13), "{first:?}");
    assert!(sent.iter().all(|p| p.prio == 0 && p.has(flags::RETX)));
    // Everything delivered: the sender's timer stops.
    h.deliver(3_000, ack(20 * MSS, 1));
    assert_eq!(h.ep.poll_at(), None);
}

/// Both bucket rules on their boundaries (TA5) and the level cap.
#[test]
fn bucket_rules_on_their_boundaries() {
    let cum = Rc3Params {
        levels: 4,
        ..Default::default()
    };
    let ranks = [
        1,
        40,
        41,
        400,
        401,
        440,
        441,
        4000,
        4001,
        4440,
        4441,
        1 << 40,
    ];
    let got: Vec<u8> = ranks.iter().map(|&r| cum.bucket(r)).collect();
    assert_eq!(got, [1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4]);
    let index = Rc3Params {
        bucket_rule: BucketRule::Index,
        ..cum.clone()
    };
    let got: Vec<u8> = ranks.iter().map(|&r| index.bucket(r)).collect();
    assert_eq!(got, [1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]);
    // One level: every RLP packet at P1. T5's 4 levels of 10/…/10000.
    let one = Rc3Params {
        levels: 1,
        ..Default::default()
    };
    assert_eq!((one.bucket(1), one.bucket(100_000)), (1, 1));
    let t5 = Rc3Params {
        levels: 4,
        bucket_base: 10,
        ..Default::default()
    };
    let got: Vec<u8> = [10, 11, 110, 111, 1110, 1111]
        .iter()
        .map(|&r| t5.bucket(r))
        .collect();
    assert_eq!(got, [1, 2, 2, 3, 3, 4]);
}

#[test]
fn bad_levels_name_the_key() {
    let mut p = ProtocolParams::default();
    p.rc3.levels = 0;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("protocol.rc3.levels"), "{e}");
}

/// Delivered ranges merge, and the primary loop skips them.
#[test]
fn delivered_ranges_merge() {
    let mut s = LowSeen::new();
    s.insert(10, 20);
    s.insert(30, 40);
    assert!(!s.covers(15, 35));
    s.insert(20, 30);
    assert!(s.covers(10, 40) && !s.covers(9, 40) && !s.covers(10, 41));
    s.insert(0, 5);
    s.insert(4, 12);
    assert!(s.covers(0, 40));
    assert_eq!(s.delivered.len(), 1);
    // Two runs of the RLP loop (two messages): [100, 200) and [300, 400).
    s.low.insert(100, 200);
    s.low.insert(300, 400);
    assert_eq!(s.classify(50, 10), Seen::New);
    assert_eq!(s.classify(100, 10), Seen::Hole);
    assert_eq!(s.classify(190, 10), Seen::Hole);
    assert_eq!(s.classify(200, 10), Seen::New);
    assert_eq!(s.classify(390, 10), Seen::Hole);
    assert_eq!(s.classify(400, 10), Seen::New);
    assert_eq!(s.classify(0, 10), Seen::Delivered);
}

/// Without SACK, lost RLP packets are still recovered (cumulative ACKs only),
/// with redundant sends.
#[test]
fn without_sack_the_example_completes_with_redundant_sends() {
    let p = params(|c| c.sack = false);
    let r = rounds(66, 50, &[21, 22], &p);
    let tcp: usize = r.iter().map(|r| r.tcp.len()).sum();
    assert!(tcp > 14, "{r:?}");
    assert!(r.len() <= 6, "{}", r.len());
}

/// RC3 under an application (`app`): 8 packets at the start, then one
/// message of 20 packets at 934.4 µs (29200 B × 8 / 0.25 Gb/s), 28 in all,
/// on a scripted network with a 20 µs RTT that keeps every packet's order.
/// - At the start TCP sends its IW of 4 and the RLP loop the other 4 of the
///   first message, tail first, at P1.
/// - One RTT later TCP's four ACKs arrive before the RLP's (the receiver
///   ACKed in arrival order), so TCP reaches packets 5–8 not yet known
///   delivered and sends them as holes, as TCP does in RTT 2 of [TH]
///   §2.1.2's example.
/// - Their ACKs advance the cumulative ACK by 4 segments, which appropriate
///   byte counting (L = 2) counts as 2: TCP's window is 4 + 4 + 2 = 10 when
///   the message arrives. TCP sends packets 9–18, and the RLP loop the
///   message's other 10 from its tail down (ranks 1–10 from the message's
///   end: P1), packet 28 with the flow's LAST flag. One RTT later TCP
///   again reaches the RLP's packets first and sends 19–28 as holes.
#[test]
fn the_low_loop_runs_again_over_each_message() {
    const GAP: u64 = 934_400_000; // ps
    let p = params(|_| {});
    let mut info = flow(Some(28 * MSS), 1);
    info.app = Some(periodic_app(20 * MSS, 0.25, Some(8 * MSS)));
    let mut n = crate::transport::testkit::Net::new(Protocol::Rc3, &info, p, 10_000_000);
    n.run(u64::MAX, &mut crate::transport::testkit::never, &mut |_| {
        false
    });
    let at = |t: u64| -> Vec<(u64, u8)> {
        n.sent
            .iter()
            .filter(|(s, _)| *s == t)
            .map(|(_, p)| (idx(p), p.prio))
            .collect()
    };
    let mut first: Vec<(u64, u8)> = (1..=4).map(|k| (k, 0)).collect();
    first.extend((5..=8).rev().map(|k| (k, 1)));
    assert_eq!(at(0), first);
    let holes: Vec<(u64, u8)> = (5..=8).map(|k| (k, 0)).collect();
    assert_eq!(at(20_000_000), holes);
    let mut second: Vec<(u64, u8)> = (9..=18).map(|k| (k, 0)).collect();
    second.extend((19..=28).rev().map(|k| (k, 1)));
    assert_eq!(at(GAP), second);
    let holes: Vec<(u64, u8)> = (19..=28).map(|k| (k, 0)).collect();
    assert_eq!(at(GAP + 20_000_000), holes);
    let retx = n.sent.iter().filter(|(_, p)| p.has(flags::RETX)).count();
    assert_eq!(retx, 14, "the holes, and nothing else");
    assert_eq!(n.sent.len(), 28 + 14);
    let last: Vec<u64> = n
        .sent
        .iter()
        .filter(|(_, p)| p.has(flags::LAST))
        .map(|(_, p)| idx(p))
        .collect();
    assert_eq!(last, [28, 28], "the RLP's copy and TCP's hole");
    assert_eq!(n.sink_stats().expect("arrived").bytes_received, 28 * MSS);
    assert_eq!(n.finish(), Some(GAP + 10_000_000));
    assert_eq!(n.src.next_wake(), None);
}
