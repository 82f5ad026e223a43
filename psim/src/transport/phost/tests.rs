//! Unit tests of pHost's endpoints and token logic, driven at explicit times
//! on a 10 Gb/s host (`transport/testkit.rs`).

use super::*;
use crate::packet::{flags, PacketKind};
use crate::rng::Rng;
use crate::transport::testkit::{flow, Host};
use crate::transport::{Ctx, HostServices, Transport};

/// One slot at 10 Gb/s: 1460 + 64 B.
const SLOT: u64 = 1_219_200;

fn source(size: u64) -> Host<PhostSource> {
    let f = flow(Some(size), 4);
    Host::new(
        0,
        PhostSource::new(&f, Protocol::Phost, &PhostParams::default()),
    )
}

/// What a sender of `size` bytes puts first on the wire: its RTS.
fn rts(size: u64) -> Packet {
    let mut s = source(size);
    let out = s.start(0);
    assert_eq!(out.len(), 1);
    assert!(out[0].kind == PacketKind::Header && out[0].has(flags::SYN));
    out[0].clone()
}

fn token(seq: u64, remaining: u64, number: u64) -> Packet {
    let mut t = rts(100_000);
    t.kind = PacketKind::Pull;
    t.flags = 0;
    (t.src, t.dst) = (t.dst, t.src);
    t.seq = seq;
    t.ack = pack(remaining, number);
    t
}

fn data(seq: u64, total: u64, number: u64) -> Packet {
    let mut d = rts(100_000);
    d.kind = PacketKind::Data;
    d.flags = 0;
    d.seq = seq;
    d.payload = 1460;
    d.size = 1460 + HEADER_BYTES;
    d.ack = pack(total, number);
    d
}

#[test]
fn a_flow_of_at_most_initial_packets_is_sent_at_once_on_free_tokens() {
    let mut s = source(5_000); // 4 packets, the last of 620 B
    s.start(0);
    let out = s.advance(900_000_000);
    let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, vec![0, SLOT, 2 * SLOT, 3 * SLOT], "line rate");
    let seqs: Vec<(u64, u64, u32)> = out
        .iter()
        .map(|(_, p)| (p.seq, unpack(p.ack).1, p.payload))
        .collect();
    assert_eq!(
        seqs,
        vec![(0, 0, 1460), (1, 1, 1460), (2, 2, 1460), (3, 3, 620)]
    );
    assert!(out
        .iter()
        .all(|(_, p)| p.rank == DATA_RANK && unpack(p.ack).0 == 4));
    assert!(out[3].1.has(flags::LAST));
}

#[test]
fn a_longer_flow_waits_for_tokens_and_lets_unspent_ones_expire() {
    let mut s = source(100_000); // 69 packets: no free tokens
    s.start(0);
    assert!(s.advance(900_000_000).is_empty(), "nothing before a token");
    let out = s.deliver(10_000_000, token(5, 60, 0));
    assert!(out.is_empty(), "the arbiter sends, not the token arrival");
    let out = s.advance(20_000_000);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].0, out[0].1.seq, unpack(out[0].1.ack)),
        (10_000_000, 5, (69, 0))
    );
    // Three tokens at once: one data packet per slot; the third would leave
    // 2 slots later, after its 1.5-slot lifetime, so it lapses.
    for n in 1..=3 {
        s.deliver(30_000_000, token(10 + n, 59, n));
    }
    let out = s.advance(40_000_000);
    let sent: Vec<(u64, u64)> = out.iter().map(|(t, p)| (*t, p.seq)).collect();
    assert_eq!(sent, vec![(30_000_000, 11), (30_000_000 + SLOT, 12)]);
    assert_eq!(s.ep.stats.packets_sent, 1 + 1 + 2, "the RTS and three data");
    // The lapsed token is discarded when the flow next sends.
    s.deliver(50_000_000, token(20, 50, 4));
    let out = s.advance(60_000_000);
    assert_eq!(out.iter().map(|(_, p)| p.seq).collect::<Vec<_>>(), [20]);
    assert_eq!(s.ep.tokens_held(), 0);
}

#[test]
fn the_rts_is_resent_only_while_the_receiver_is_silent_and_never_after_the_ack() {
    let mut s = source(100_000);
    s.start(0);
    s.deliver(500_000_000, token(0, 69, 0));
    s.advance(501_000_000);
    // Heard at 0.5 ms: the 1 ms timer fires at 1 ms but waits until 1.5 ms.
    let out = s.advance(1_499_999_999);
    assert!(out.is_empty(), "{out:?}");
    let out = s.advance(1_500_000_000);
    assert_eq!(out.len(), 1);
    assert!(out[0].1.has(flags::SYN));
    // Backed off: the next resend waits 2 ms.
    assert!(s.advance(3_499_999_999).is_empty());
    assert_eq!(s.advance(3_500_000_000).len(), 1);
    let mut ack = token(0, 0, 0);
    ack.kind = PacketKind::Ack;
    s.deliver(3_600_000_000, ack);
    assert!(s.ep.done());
    assert_eq!(s.ep.poll_at(), None, "no timer once acknowledged");
    assert_eq!(s.ep.stats.timeouts, 2);
}

#[test]
fn an_unresponsive_sender_is_downgraded_then_probed_with_one_token() {
    let r = rts(100_000); // 69 packets
    let mut k = Host::new(5, PhostSink::new(&r, &PhostParams::default()));
    assert!(k.deliver(0, r).is_empty());
    // A window of 8 tokens, one per slot; then one probe token 25 slots
    // after the last, and another 25 slots later.
    let out = k.advance(60 * SLOT);
    let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
    let mut want: Vec<u64> = (0..8).map(|i| i * SLOT).collect();
    want.extend([32 * SLOT, 57 * SLOT]);
    assert_eq!(times, want);
    let seqs: Vec<u64> = out.iter().map(|(_, p)| p.seq).collect();
    assert_eq!(
        seqs,
        (0..10).collect::<Vec<_>>(),
        "tokens name packets in turn"
    );
    assert!(out
        .iter()
        .all(|(_, p)| p.kind == PacketKind::Pull && p.rank == CONTROL_RANK));
    // Data spending token 9 comes back: the flow is answered, tokens resume.
    k.deliver(60 * SLOT, data(0, 69, 9));
    let out = k.advance(63 * SLOT);
    let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, vec![60 * SLOT, 61 * SLOT, 62 * SLOT, 63 * SLOT]);
    assert_eq!(unpack(out[0].1.ack), (68, 10), "remaining and token number");
}

#[test]
fn missing_packets_are_re_tokened_after_the_redundancy_wait_then_acked() {
    let r = rts(7_000); // 5 packets, all on free tokens
    let mut k = Host::new(5, PhostSink::new(&r, &PhostParams::default()));
    k.deliver(0, r);
    for s in [0, 1, 3, 4] {
        assert!(k.deliver(SLOT * (s + 1), data(s, 5, s)).is_empty());
    }
    // 2·F = 10 slots after the RTS, one token for the lost packet 2 (and,
    // were it lost again, another every 9 slots).
    let out = k.advance(12 * SLOT);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!((out[0].0, out[0].1.seq), (10 * SLOT, 2));
    assert_eq!(unpack(out[0].1.ack), (1, 5));
    let out = k.deliver(12 * SLOT, data(2, 5, 5));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, PacketKind::Ack);
    assert_eq!(k.ep.stats.finish_ps, Some(12 * SLOT));
    // A resent RTS after completion is answered with the ACK again.
    let out = k.deliver(20 * SLOT, rts(7_000));
    assert_eq!(
        out.iter().map(|p| p.kind).collect::<Vec<_>>(),
        [PacketKind::Ack]
    );
    assert!(
        k.advance(1_000 * SLOT).is_empty(),
        "no timer after completion"
    );
}

/// Several sinks on one receiving host, driven as the shard drives them.
struct Rx {
    services: HostServices,
    rng: Rng,
    sinks: Vec<PhostSink>,
    timer: Option<(u64, u32)>,
}

impl Rx {
    fn call(&mut self, slot: usize, now: u64, f: impl FnOnce(&mut PhostSink, &mut Ctx<'_>)) {
        let mut out = Vec::new();
        let mut cx = Ctx {
            now,
            host: 5,
            slot: slot as u32,
            nic_bps: 10_000_000_000,
            nic_queued_bytes: 0,
            out: &mut out,
            rng: &mut self.rng,
            services: &mut self.services,
            summed: Default::default(),
        };
        f(&mut self.sinks[slot], &mut cx);
        if let Some(d) = self.services.rearm(now, &mut self.rng) {
            self.timer = Some(d);
        }
    }

    /// Fires the services' timer: (time, slot granted), then runs the grant.
    fn step(&mut self) -> (u64, u32) {
        let (t, gen) = self.timer.take().expect("a deadline");
        let slot = self.services.on_timer(t, gen).flatten().expect("a grant");
        self.call(slot as usize, t, |k, cx| k.on_grant(cx));
        (t, slot)
    }
}

/// Two flows into one receiver: the token clock serves the one with fewer
/// packets missing until its window is out, then the other.
#[test]
fn the_receiver_grants_the_flow_with_the_fewest_missing_packets() {
    let p = PhostParams::default();
    let (mut long_rts, mut short_rts) = (rts(100_000), rts(30_000)); // 69 and 21 packets
    long_rts.flow = 1;
    short_rts.flow = 2;
    let mut rx = Rx {
        services: HostServices::default(),
        rng: crate::rng::stream_rng(1, 5),
        sinks: vec![
            PhostSink::new(&long_rts, &p),
            PhostSink::new(&short_rts, &p),
        ],
        timer: None,
    };
    rx.call(0, 0, |k, cx| k.on_packet(long_rts, cx));
    rx.call(1, 0, |k, cx| k.on_packet(short_rts, cx));
    let grants: Vec<(u64, u32)> = (0..10).map(|_| rx.step()).collect();
    let want: Vec<(u64, u32)> = (0..10)
        .map(|i| (i * SLOT, if i < 8 { 1 } else { 0 }))
        .collect();
    assert_eq!(
        grants, want,
        "eight tokens (a window) to the short flow first"
    );
    // Data answering the short flow's tokens makes it first again.
    rx.call(1, 10 * SLOT, |k, cx| k.on_packet(data(0, 21, 7), cx));
    assert_eq!(rx.step(), (10 * SLOT, 1));
}
