//! CoDel, controlled delay ([CODEL], RFC 8289): a FIFO that drops at the
//! head when packets have waited more than `target` for at least one
//! `interval`, then ever faster (interval/√count) until the wait falls
//! below `target` again. Mittal's UPS runs use it inside FQ-CoDel ([TH]
//! §5.3); `fq_codel.rs` runs one [`Codel`] per flow queue.
//!
//! The state machine is the RFC's pseudocode (§5.5 dequeue, §5.6 control
//! law), step for step:
//! * the sojourn time is `now` minus the enqueue time this discipline stores
//!   beside each packet (the packet has no field for it);
//! * a packet is "ok to drop" once the sojourn has stayed at or above
//!   `target` for `interval` and more than one MTU remains queued;
//! * on entering the dropping state it drops once and sets `count` to 1,
//!   or to `count − lastcount` when that is above 1 and the last drop
//!   schedule ended less than 16 intervals ago (the RFC's re-entry rule);
//! * while dropping, each time `now` reaches `drop_next` it drops the head,
//!   `count += 1`, and `drop_next += interval/√count` (added to the previous
//!   `drop_next`, not to `now`); it leaves the state as soon as a head is
//!   not ok to drop.
//!
//! Drops happen at dequeue and are reported `DequeueDropped` naming the
//! dropped packet. With `ecn = true` an ECN-capable (`ECT`) packet is marked
//! CE (reported `Marked`) instead, at the same points and with the same
//! count updates, and sent (Linux `sch_codel`'s `ecn` option; [CODEL] lets
//! the congestion signal be a mark); other packets are dropped.
//!
//! Time is integer ps. The control law computes `interval / √count` in f64
//! (IEEE `sqrt` is correctly rounded, so the result is the same on every
//! machine) and truncates to ps; Linux's fixed-point Newton step is an
//! approximation of the same value and is not used.
//!
//! | parameter (`kind = "codel"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 1000 packets ([`DEFAULT_QUEUE_PACKETS`]), tail drop | Linux `sch_codel` limit (RFC 8289 sets none) |
//! | `target_us` | 5000 µs ([`DEFAULT_TARGET_PS`]) | [CODEL] §4.3; [TH] §5.3 and the UPS runs (target 0.005 s) |
//! | `interval_us` | 100000 µs ([`DEFAULT_INTERVAL_PS`]) | [CODEL] §4.2; UPS runs (0.1 s) |
//! | `mtu_bytes` | one full packet of the traffic: the largest MTU (or MSS) payload of `[[traffic]]`'s protocols + 64 B header (docs/disciplines.md) | [CODEL] §5 `MAXPACKET` ("SHOULD use interface MTU"); Linux uses the device MTU |
//! | `ecn` | `false` | Linux `sch_codel` default |
//!
//! Datacenter values: the thesis's CoDel runs are wide-area (Internet2) and
//! use the RFC values. For datacenter RTTs of tens of µs the RFC's rule
//! (interval ≈ a worst-case RTT, target 5–10 % of it, §4.2–4.3) gives
//! e.g. `interval_us = 100`, `target_us = 5`; these are not defaults.

use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::{flags, Packet};
use crate::transport::config::Micros;
use crate::units::PS_PER_US;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Default capacity, packets (Linux `sch_codel`'s limit).
pub const DEFAULT_QUEUE_PACKETS: u32 = 1000;
/// Target sojourn time, ps: 5 ms ([CODEL] §4.3).
pub const DEFAULT_TARGET_PS: u64 = 5_000 * PS_PER_US;
/// Interval, ps: 100 ms ([CODEL] §4.2).
pub const DEFAULT_INTERVAL_PS: u64 = 100_000 * PS_PER_US;
/// The re-entry rule remembers the last drop schedule for this many
/// intervals ([CODEL] §5.5).
const REENTRY_INTERVALS: u64 = 16;

/// CoDel's parameters, shared by every queue a discipline runs CoDel on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodelParams {
    /// Target sojourn time, ps.
    pub target: u64,
    /// Interval, ps.
    pub interval: u64,
    /// No drop while at most this many bytes remain queued.
    pub mtu: u64,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Edge-CoDel (`edge_codel.rs`): the sojourn is the packet's queueing
    /// across the network, so this queue running low or empty says nothing
    /// of the flow's backlog. Neither resets the state (no MTU guard, and an
    /// empty queue keeps `first_above_time` and the dropping state); only a
    /// sojourn below target does ([TH] §5.3.1).
    pub edge: bool,
}

impl CodelParams {
    /// `t + interval / √count` ([CODEL] §5.6): added to `t`, never a
    /// division of the sum.
    #[inline]
    pub fn control_law(&self, t: u64, count: u32) -> u64 {
        t + (self.interval as f64 / (count as f64).sqrt()) as u64
    }
}

/// Where CoDel takes packets from: a FIFO whose entries carry the time
/// they were queued.
pub trait CodelSource {
    /// The head packet and its enqueue time, removed.
    fn pop(&mut self) -> Option<(Packet, u64)>;
    /// Bytes still queued (after a pop), for the MTU guard.
    fn bytes(&self) -> u64;
}

/// One queue's CoDel state ([CODEL] §5.2). An idle queue keeps it and
/// costs nothing: CoDel acts only at dequeue.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Codel {
    /// When the sojourn time will have been above target for an interval; 0: not above.
    first_above_time: u64,
    /// When the next drop is due (in the dropping state).
    drop_next: u64,
    /// Drops since entering the dropping state (sets the drop rate).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    /// Whether in the dropping state.
    dropping: bool,
}

impl Codel {
    /// Whether in the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// The RFC's `dodequeue`: the head and whether it is ok to drop.
    #[inline]
    fn head(
        &mut self,
        p: &CodelParams,
        src: &mut impl CodelSource,
        now: u64,
    ) -> (Option<Packet>, bool) {
        let Some((pkt, enqueued)) = src.pop() else {
            if p.edge {
                // Nothing learned: the state stands.
                return (None, self.dropping);
            }
            self.first_above_time = 0;
            return (None, false);
        };
        let sojourn = now.saturating_sub(enqueued);
        if sojourn < p.target || (!p.edge && src.bytes() <= p.mtu) {
            self.first_above_time = 0;
            return (Some(pkt), false);
        }
        if self.first_above_time == 0 {
            self.first_above_time = now + p.interval;
            (Some(pkt), false)
        } else {
            (Some(pkt), now >= self.first_above_time)
        }
    }

    /// Signals congestion on `pkt`: marks it (returned, to be sent) when
    /// ECN is on and it is ECT, else reports it dropped at dequeue.
    #[inline]
    fn signal(p: &CodelParams, mut pkt: Packet, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if p.ecn && pkt.has(flags::ECT) {
            pkt.flags |= flags::ECN_CE;
            cx.marked(&pkt);
            Some(pkt)
        } else {
            cx.dequeue_dropped(pkt);
            None
        }
    }

    /// The RFC's `dequeue` (§5.5): the packet to send, after any drops.
    pub fn dequeue(
        &mut self,
        p: &CodelParams,
        src: &mut impl CodelSource,
        cx: &mut QueueCtx<'_>,
    ) -> Option<Packet> {
        let now = cx.now;
        let (mut pkt, ok_to_drop) = self.head(p, src, now);
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && pkt.is_some() && now >= self.drop_next {
                self.count += 1;
                if let Some(marked) = Self::signal(p, pkt.take().expect("ok to drop"), cx) {
                    self.drop_next = p.control_law(self.drop_next, self.count);
                    return Some(marked);
                }
                let (next, ok) = self.head(p, src, now);
                pkt = next;
                if ok {
                    self.drop_next = p.control_law(self.drop_next, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop && pkt.is_some() {
            let marked = Self::signal(p, pkt.take().expect("ok to drop"), cx);
            if marked.is_some() {
                pkt = marked;
            } else {
                pkt = self.head(p, src, now).0;
            }
            self.dropping = true;
            // count never falls below lastcount: it only grows between entries.
            let delta = self.count - self.lastcount;
            let recent =
                now < self.drop_next || now - self.drop_next < REENTRY_INTERVALS * p.interval;
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.drop_next = p.control_law(now, self.count);
            self.lastcount = self.count;
        }
        pkt
    }
}

/// `kind = "codel"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Target sojourn time, µs.
    pub target_us: Micros,
    /// Interval, µs.
    pub interval_us: Micros,
    /// MTU guard, bytes (default: the scenario's MTU payload plus a header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu_bytes: Option<u64>,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            queue_packets: None,
            queue_bytes: None,
            target_us: Micros::from_ps(DEFAULT_TARGET_PS),
            interval_us: Micros::from_ps(DEFAULT_INTERVAL_PS),
            mtu_bytes: None,
            ecn: false,
        }
    }
}

/// Checks CoDel's keys (shared with `fq_codel`): both times positive,
/// target below interval, the MTU guard at least 1 byte.
pub(super) fn validate_params(
    key: &str,
    target: Micros,
    interval: Micros,
    mtu: Option<u64>,
) -> Result<(), ConfigError> {
    let t = target.positive(&format!("{key}.target_us"))?;
    let i = interval.positive(&format!("{key}.interval_us"))?;
    if t >= i {
        let msg = format!(
            "must be below interval_us ({} µs)",
            i as f64 / PS_PER_US as f64
        );
        return Err(bad(
            &format!("{key}.target_us"),
            t as f64 / PS_PER_US as f64,
            &msg,
        ));
    }
    if mtu == Some(0) {
        return Err(bad(&format!("{key}.mtu_bytes"), 0, "must be at least 1"));
    }
    Ok(())
}

/// The parameters from validated keys; the MTU guard defaults to the
/// traffic's full packet.
pub(super) fn params(
    env: &QueueEnv,
    target: Micros,
    interval: Micros,
    mtu: Option<u64>,
    ecn: bool,
) -> CodelParams {
    CodelParams {
        target: target.ps,
        interval: interval.ps,
        mtu: mtu.unwrap_or(env.packet_bytes),
        ecn,
        edge: false,
    }
}

impl CodelConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for CodelConfig {
    type Queue = CodelQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c.mtu_bytes = Some(params(env, c.target_us, c.interval_us, c.mtu_bytes, c.ecn).mtu);
        c
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key)?;
        validate_params(key, self.target_us, self.interval_us, self.mtu_bytes)
    }
    fn build(&self, env: &QueueEnv) -> CodelQueue {
        let p = params(
            env,
            self.target_us,
            self.interval_us,
            self.mtu_bytes,
            self.ecn,
        );
        CodelQueue::new(self.cap("").expect("validated"), p)
    }
}

/// A FIFO with enqueue times, as CoDel reads it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Fifo {
    q: VecDeque<(Packet, u64)>,
    bytes: u64,
}

impl CodelSource for Fifo {
    #[inline]
    fn pop(&mut self) -> Option<(Packet, u64)> {
        let (p, t) = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some((p, t))
    }
    #[inline]
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// A tail-drop FIFO under CoDel.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CodelQueue {
    cap: Capacity,
    params: CodelParams,
    fifo: Fifo,
    codel: Codel,
}

impl CodelQueue {
    /// An empty queue.
    pub fn new(cap: Capacity, params: CodelParams) -> Self {
        CodelQueue {
            cap,
            params,
            fifo: Fifo::default(),
            codel: Codel::default(),
        }
    }
}

impl Discipline for CodelQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        if self
            .cap
            .fits(self.fifo.q.len() as u32, self.fifo.bytes, pkt.size)
        {
            cx.queued(&pkt);
            self.fifo.bytes += pkt.size as u64;
            self.fifo.q.push_back((pkt, cx.now));
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        self.codel.dequeue(&self.params, &mut self.fifo, cx)
    }
    fn len_packets(&self) -> u32 {
        self.fifo.q.len() as u32
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::ENV;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::Outcome::*;

    const MS: u64 = 1_000 * PS_PER_US;
    fn queue(ecn: bool) -> CodelQueue {
        let cfg = CodelConfig {
            ecn,
            ..Default::default()
        };
        cfg.build(&ENV)
    }

    /// A standing queue: 200 packets of 1500 B offered at time 0, so every
    /// head has waited `now` when it is taken.
    fn standing(q: &mut CodelQueue, k: &mut Kit) {
        k.at(0).fill(q, (0..200).map(|s| data(s, 1500)));
    }

    #[test]
    fn no_drop_while_the_sojourn_is_below_target() {
        let (mut k, mut q) = (Kit::new(0), queue(false));
        standing(&mut q, &mut k);
        // Heads taken from 0 to 4.9 ms, long past an interval: sojourn < 5 ms.
        for (i, t) in (0..50).map(|i| (i, i * MS / 10)).collect::<Vec<_>>() {
            assert_eq!(k.at(t).take(&mut q).unwrap().seq, i);
            assert!(k.reports.is_empty());
        }
        assert!(!q.codel.dropping());
    }

    /// The sojourn first reaches target at 5 ms (head 0); the first drop
    /// comes exactly one interval later (105 ms) with count 1, so the next
    /// is due 100 ms/√1 later (205 ms), the third 100 ms/√2 after that
    /// (70.710678118 ms, truncated to ps), the fourth 100 ms/√3 later; the
    /// state ends at the first head that waited less than target.
    #[test]
    fn first_drop_one_interval_after_the_sojourn_exceeds_target_then_interval_over_root_count() {
        let (mut k, mut q) = (Kit::new(0), queue(false));
        standing(&mut q, &mut k);
        assert_eq!(k.at(5 * MS).take(&mut q).unwrap().seq, 0);
        assert_eq!(k.at(105 * MS - 1).take(&mut q).unwrap().seq, 1);
        assert!(k.reports.is_empty(), "not yet an interval above target");
        assert_eq!(k.at(105 * MS).take(&mut q).unwrap().seq, 3);
        assert_eq!(k.summary(), [(DequeueDropped, 2)]);
        assert!(q.codel.dropping());
        assert_eq!((q.codel.count, q.codel.drop_next), (1, 205 * MS));
        assert_eq!(k.at(205 * MS - 1).take(&mut q).unwrap().seq, 4);
        assert!(k.reports.is_empty());
        assert_eq!(k.at(205 * MS).take(&mut q).unwrap().seq, 6);
        assert_eq!(k.summary(), [(DequeueDropped, 5)]);
        let third = 205 * MS + 70_710_678_118;
        assert_eq!((q.codel.count, q.codel.drop_next), (2, third));
        assert_eq!(k.at(third - 1).take(&mut q).unwrap().seq, 7);
        assert!(k.reports.is_empty());
        assert_eq!(k.at(third).take(&mut q).unwrap().seq, 9);
        assert_eq!(k.summary(), [(DequeueDropped, 8)]);
        assert_eq!(q.codel.drop_next, third + 57_735_026_918);
        // The standing packets are gone; new ones wait 1 ms < target: the
        // dropping state ends at once, with no drop.
        q.fifo = Fifo::default();
        let later = third + 10 * MS;
        k.at(later).fill(&mut q, (500..510).map(|s| data(s, 1500)));
        assert_eq!(k.at(later + MS).take(&mut q).unwrap().seq, 500);
        assert!(k.reports.is_empty());
        assert!(!q.codel.dropping());
    }

    /// Re-entering the dropping state less than 16 intervals after the last
    /// drop was due resumes at count − lastcount; later, at 1 ([CODEL] §5.5).
    #[test]
    fn re_entry_within_sixteen_intervals_keeps_the_drop_rate() {
        let p = queue(false).params;
        let count_after_entry = |now: u64| {
            let mut c = Codel {
                first_above_time: now, // above target for an interval already
                drop_next: 300 * MS,
                count: 9,
                lastcount: 5,
                dropping: false,
            };
            let mut src = Fifo::default();
            for s in 0..10 {
                src.bytes += 1500;
                src.q.push_back((data(s, 1500), 0));
            }
            let (mut reports, mut rng) = (Vec::new(), crate::rng::stream_rng(0, 0));
            let mut pool = crate::net::PacketPool::new();
            let mut cx = QueueCtx::new(now, &mut rng, 0, None, &mut reports, &mut pool);
            assert_eq!(c.dequeue(&p, &mut src, &mut cx).unwrap().seq, 1);
            assert_eq!(reports[0].outcome, DequeueDropped);
            assert!(c.dropping);
            assert_eq!(c.lastcount, c.count);
            assert_eq!(c.drop_next, p.control_law(now, c.count));
            c.count
        };
        assert_eq!(count_after_entry(400 * MS), 4);
        assert_eq!(count_after_entry(300 * MS + 16 * p.interval - 1), 4);
        assert_eq!(count_after_entry(300 * MS + 16 * p.interval), 1);
    }

    #[test]
    fn no_drop_with_one_mtu_or_less_left() {
        let (mut k, mut q) = (Kit::new(0), queue(false));
        k.at(0).fill(&mut q, (0..2).map(|s| data(s, 1500)));
        assert_eq!(k.at(10 * MS).take(&mut q).unwrap().seq, 0);
        assert_eq!(k.at(200 * MS).take(&mut q).unwrap().seq, 1);
        assert!(k.reports.is_empty());
    }

    #[test]
    fn ecn_marks_ect_packets_instead_of_dropping() {
        let (mut k, mut q) = (Kit::new(0), queue(true));
        let ect = |s| {
            let mut p = data(s, 1500);
            p.flags |= flags::ECT;
            p
        };
        k.at(0).fill(&mut q, (0..20).map(ect));
        k.at(5 * MS).take(&mut q);
        let p = k.at(105 * MS).take(&mut q).unwrap();
        assert_eq!((p.seq, p.has(flags::ECN_CE)), (1, true));
        assert_eq!(k.summary(), [(Marked, 1)]);
        assert!(q.codel.dropping());
        // A non-ECT head is dropped even with ECN on.
        q.fifo.q.front_mut().unwrap().0.flags = 0;
        let second = q.codel.drop_next;
        assert_eq!(k.at(second).take(&mut q).unwrap().seq, 3);
        assert_eq!(k.summary(), [(DequeueDropped, 2)]);
    }

    #[test]
    fn tail_drops_when_full() {
        let mut q = CodelQueue::new(Capacity::Packets(2), queue(false).params);
        let mut k = Kit::new(0);
        k.fill(&mut q, (0..2).map(|s| data(s, 100)));
        assert_eq!(k.offer(&mut q, data(2, 100)), [(Dropped, 2)]);
    }

    #[test]
    fn validation_names_the_key() {
        let mut cfg = CodelConfig {
            target_us: Micros::from_us(100_000.0),
            ..Default::default()
        };
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.target_us"), "{e}");
        cfg.target_us = Micros::from_us(5.0);
        cfg.interval_us = Micros::from_us(0.0);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.interval_us"), "{e}");
        cfg.interval_us = Micros::from_us(100.0);
        cfg.mtu_bytes = Some(0);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.mtu_bytes"), "{e}");
    }
}
