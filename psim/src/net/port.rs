//! An output port: admission through its queue discipline, the counters and
//! traces of what the discipline reports, serialisation onto the link, and a
//! pause state that stops transmission per priority (PFC, IEEE 802.1Qbb).
//!
//! The port never schedules events itself: [`Port::offer`] and
//! [`Port::start`] return what happened, and the shard turns a started
//! packet into a transmit-done event and a packet on the wire.

use super::PortCounters;
use crate::packet::Packet;
use crate::queue::{Discipline, Queue, QueueCtx, Report};
use crate::rng::Rng;
use crate::topo::PortInfo;
use crate::trace::ShardTrace;
use crate::units::tx_time_ps;

/// What one port operation needs from its node and shard.
pub struct PortCx<'a> {
    /// Current time, ps.
    pub now: u64,
    /// The owning entity (for traces).
    pub node: u32,
    /// This port's number on it (for traces).
    pub port: u16,
    /// The owning entity's random stream.
    pub rng: &'a mut Rng,
    /// Scratch for the discipline's reports; after [`Port::offer`] it holds
    /// them, so the caller can route bounced packets.
    pub reports: &'a mut Vec<Report>,
    /// The shard's trace recorders, when anything is traced.
    pub trace: Option<&'a mut ShardTrace>,
    /// The network, for disciplines that price a packet's path
    /// ([`QueueCtx::t_min_here_ps`]); None in unit tests.
    pub topo: Option<&'a crate::topo::Topology>,
    /// The shard's packet slots (`net/pool.rs`).
    pub pool: &'a mut super::PacketPool,
    /// Until when each input of the switch is busy in its crossbar, ps
    /// (`net/crossbar.rs`); empty without one.
    pub inputs_busy_until: &'a [u64],
}

/// What an offer did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Offered {
    /// Packets the discipline discarded (dropped or evicted).
    pub dropped: u64,
    /// Whether a packet was bounced (it is among the reports).
    pub bounced: bool,
}

/// What an attempt to start the next transmission did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Started {
    /// Packets the discipline discarded at dequeue (CoDel's head drops).
    pub dropped: u64,
    /// The packet now in service and when its last bit leaves, ps.
    pub sent: Option<(Packet, u64)>,
    /// The input port the discipline says that packet came in on, when it
    /// keeps track (`voq`; [`crate::queue::Discipline::dequeued_ingress`]).
    pub ingress: Option<u16>,
}

/// Per-priority pause state (PFC). Allocated on a port's first pause (sent
/// or received), so ports that never see one carry one pointer.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PauseState {
    /// Paused priorities, one bit each.
    pub mask: u8,
    /// When each timed pause ends by itself, ps (0: untimed).
    pub until: [u64; 8],
    /// Priorities with a PFC frame waiting to be sent (it goes before the
    /// next data packet and ignores this port's own pause).
    pub to_send: u8,
    /// Of those, the ones whose frame is a PAUSE (the rest: RESUME).
    pub send_pause: u8,
    /// Pause time the waiting PAUSE frames carry, ps.
    pub send_pause_ps: u64,
    /// Whether the discipline holds paused priorities back itself; if not,
    /// the whole port stops while any priority is paused (one FIFO: the
    /// head blocks everything behind it anyway).
    pub per_priority: bool,
    /// Since when each paused priority has been paused, ps.
    pub since: [u64; 8],
    /// Time each priority spent paused, ps (up to its last resume).
    pub paused_ps: [u64; 8],
}

/// An output port.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Port {
    /// Waiting packets.
    pub queue: Queue,
    /// Whether a packet is being serialised.
    pub busy: bool,
    /// Where the link goes.
    pub link: PortInfo,
    /// Counters.
    pub counters: PortCounters,
    /// Pause state; None until the port is first paused.
    pub pause: Option<Box<PauseState>>,
    /// Random loss on the link it feeds; None without loss (`net/link.rs`).
    pub loss: Option<Box<super::link::LinkLoss>>,
    /// The completion of the packet in service, when nothing waited behind
    /// it as it started: (time, sequence number) of the transmit-done event
    /// the port would have scheduled. The shard keeps it here instead of in
    /// the event heap, and settles it when the port is next touched or the
    /// run ends (docs/engine.md, "Idle completions").
    pub deferred_done: Option<(u64, u64)>,
    /// A preemptive discipline's port state ([`Discipline::preemptive`]);
    /// None on every other port.
    pub preempt: Option<Box<Preemption>>,
}

/// A preemptive port (preemptive LSTF, [TH] §5.1.3): the packet being sent
/// stays here until its last bit has left, so that a better arrival can
/// still interrupt it; an interrupted packet goes back to the discipline
/// and later sends only its remaining bits (preempt-resume).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Preemption {
    /// The packet on the wire, if any.
    pub in_service: Option<InService>,
    /// Interrupted packets back in the queue, with the transmission time
    /// they have already had, ps. Few at a time: one per interruption not
    /// yet resumed.
    pub partial: Vec<(PacketId, u64)>,
    /// Interruptions so far.
    pub interrupted: u64,
}

/// The packet a preemptive port is sending.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InService {
    /// The packet, handed to the link at `done`.
    pub pkt: Packet,
    /// When this stretch of its transmission started, ps.
    pub start: u64,
    /// When its last bit leaves, ps.
    pub done: u64,
    /// Transmission time it had before this stretch, ps.
    pub sent_before: u64,
    /// Whether the discipline gave it (PFC frames are never interrupted).
    pub from_queue: bool,
}

/// What tells a packet from the others queued at a port: its flow, number,
/// send time and kind.
pub type PacketId = (u64, u64, u64, u8);

fn packet_id(p: &Packet) -> PacketId {
    (p.flow, p.seq, p.sent_ps, p.kind as u8)
}

impl Preemption {
    /// The transmission time `pkt` already had, ps (0 if never interrupted);
    /// forgets it.
    fn resume(&mut self, pkt: &Packet) -> u64 {
        let id = packet_id(pkt);
        match self.partial.iter().position(|(p, _)| *p == id) {
            Some(i) => self.partial.swap_remove(i).1,
            None => 0,
        }
    }
}

impl Port {
    /// An idle port feeding `link` through `queue`.
    pub fn new(queue: Queue, link: PortInfo) -> Port {
        Port {
            busy: false,
            link,
            counters: PortCounters::default(),
            pause: None,
            loss: None,
            deferred_done: None,
            preempt: queue.preemptive().then(Box::default),
            queue,
        }
    }

    /// Whether nothing waits to be sent: no packet queued and no PFC frame
    /// requested (so a completion now would leave the port idle).
    #[inline]
    pub fn nothing_waiting(&self) -> bool {
        self.queue.len_packets() == 0 && self.pause.as_deref().is_none_or(|st| st.to_send == 0)
    }

    /// Whether the port is held entirely by a pause.
    #[inline]
    fn held(&self) -> bool {
        self.pause
            .as_deref()
            .is_some_and(|p| p.mask != 0 && !p.per_priority)
    }

    /// Offers a packet that came in on `ingress` (None: from the host's
    /// transport): counts and traces what the discipline reports. The caller
    /// routes bounced packets and starts the port if it is idle.
    #[inline]
    pub fn offer(&mut self, pkt: Packet, ingress: Option<u16>, cx: &mut PortCx<'_>) -> Offered {
        if let Some(t) = cx.trace.as_deref_mut() {
            t.before(cx.node, cx.port, &self.queue, cx.now);
        }
        cx.reports.clear();
        let rate = self.link.link.rate_bps;
        self.queue.enqueue(
            pkt,
            &mut QueueCtx::new(cx.now, cx.rng, rate, ingress, cx.reports, cx.pool)
                .placed(cx.topo.map(|t| (cx.node, t))),
        );
        let (dropped, bounced) = self.counters.count_all(cx.reports);
        debug_assert!(
            self.counters.balanced(self.queue.len_packets()),
            "{:?}",
            self.counters
        );
        if let Some(t) = cx.trace.as_deref_mut() {
            t.reported(cx.node, cx.port, cx.now, cx.reports, &self.queue);
        }
        Offered { dropped, bounced }
    }

    /// Counts and traces a packet the switch refused before it reached the
    /// discipline (PFC: no buffer for it), as a drop at this port.
    pub fn refuse(&mut self, pkt: Packet, cx: &mut PortCx<'_>) {
        cx.reports.clear();
        cx.reports.push(Report {
            outcome: crate::queue::Outcome::Dropped,
            pkt,
        });
        self.counters.count_all(cx.reports);
        if let Some(t) = cx.trace.as_deref_mut() {
            t.reported(cx.node, cx.port, cx.now, cx.reports, &self.queue);
        }
    }

    /// Starts serialising the next packet, if the port is idle: a waiting
    /// PFC frame first, then, unless a pause holds the port, the next packet
    /// the discipline gives.
    #[inline]
    pub fn start(&mut self, cx: &mut PortCx<'_>) -> Started {
        let mut out = Started::default();
        if self.busy {
            return out;
        }
        if let Some(frame) = self.take_frame(cx) {
            out.sent = Some(frame);
            return out;
        }
        if self.held() {
            return out;
        }
        if let Some(t) = cx.trace.as_deref_mut() {
            t.before(cx.node, cx.port, &self.queue, cx.now);
        }
        cx.reports.clear();
        let rate = self.link.link.rate_bps;
        let next = self.queue.dequeue(
            &mut QueueCtx::new(cx.now, cx.rng, rate, None, cx.reports, cx.pool)
                .placed(cx.topo.map(|t| (cx.node, t)))
                .crossbar(cx.inputs_busy_until),
        );
        if !cx.reports.is_empty() {
            // Dequeue-time outcomes (drops at the head, as CoDel's).
            out.dropped = self.counters.count_all(cx.reports).0;
            if let Some(t) = cx.trace.as_deref_mut() {
                t.reported(cx.node, cx.port, cx.now, cx.reports, &self.queue);
            }
        }
        let Some(pkt) = next else {
            return out;
        };
        out.ingress = self.queue.dequeued_ingress();
        self.counters.dequeued += 1;
        self.counters.dequeued_bytes += pkt.size as u64;
        debug_assert!(
            self.counters.balanced(self.queue.len_packets()),
            "{:?}",
            self.counters
        );
        self.busy = true;
        let mut tx = tx_time_ps(pkt.size as u64, rate);
        if let Some(pre) = self.preempt.as_deref_mut() {
            tx -= pre.resume(&pkt).min(tx);
        }
        let done = cx.now + tx;
        if let Some(t) = cx.trace.as_deref_mut() {
            t.dequeued(cx.node, cx.port, cx.now, done, &pkt, &self.queue);
        }
        out.sent = Some((pkt, done));
        out
    }

    /// A preemptive port keeps the packet it started from `now` until
    /// `done` (see [`Preemption`]).
    pub fn hold(&mut self, pkt: Packet, now: u64, done: u64) {
        let pre = self.preempt.as_deref_mut().expect("a preemptive port");
        let from_queue = pkt.kind != crate::packet::PacketKind::Pause;
        // Start shortened the transmission by the time it already had.
        let full = tx_time_ps(pkt.size as u64, self.link.link.rate_bps);
        let sent_before = full.saturating_sub(done - now);
        pre.in_service = Some(InService {
            pkt,
            start: now,
            done,
            sent_before,
            from_queue,
        });
    }

    /// The packet a preemptive port holds, if its last bit leaves at `now`
    /// (None: a transmit-done superseded by an interruption).
    pub fn release(&mut self, now: u64) -> Option<Packet> {
        let pre = self.preempt.as_deref_mut()?;
        pre.in_service.take_if(|s| s.done == now).map(|s| s.pkt)
    }

    /// After an arrival at `now` on a busy preemptive port: if the
    /// discipline's best packet beats the one on the wire, puts that one
    /// back (its transmission so far noted) and frees the port for
    /// [`Port::start`]. Returns whether it did.
    pub fn interrupt(&mut self, now: u64) -> bool {
        let Some(pre) = self.preempt.as_deref_mut() else {
            return false;
        };
        let Some(s) = pre.in_service.as_ref() else {
            return false;
        };
        if !s.from_queue || now >= s.done || !self.queue.preempts() {
            return false;
        }
        let s = pre.in_service.take().expect("checked");
        let sent = now - s.start;
        pre.partial.push((packet_id(&s.pkt), s.sent_before + sent));
        pre.interrupted += 1;
        // It was counted as handed to the link when it started; it is
        // queued again (the counters' identity holds).
        self.counters.dequeued -= 1;
        self.counters.dequeued_bytes -= s.pkt.size as u64;
        self.queue.requeue(s.pkt, sent);
        self.busy = false;
        true
    }

    /// The packet in service has left: the port is idle until [`Port::start`].
    #[inline]
    pub fn finish(&mut self) {
        self.busy = false;
    }

    /// Pauses (`true`) or resumes priority `prio` (0..8) at `now`. The packet
    /// in service is never cut short: a pause takes effect at the next
    /// start. Returns whether the caller should try to start the port (a
    /// resume may have released it).
    pub fn set_paused(&mut self, prio: u8, paused: bool, now: u64) -> bool {
        debug_assert!(prio < 8);
        let st = self.pause.get_or_insert_with(Default::default);
        let bit = 1u8 << prio;
        if paused == (st.mask & bit != 0) {
            return false;
        }
        let i = prio as usize;
        if paused {
            st.mask |= bit;
            st.since[i] = now;
        } else {
            st.mask &= !bit;
            st.paused_ps[i] += now - st.since[i];
        }
        st.per_priority = self.queue.set_paused(prio, paused);
        !paused
    }

    /// Queues a PFC frame for priority `prio` (PAUSE for `pause_ps`, 0 =
    /// until RESUME; or RESUME): it is sent when the packet in service
    /// finishes, before any data. A newer request for the same priority
    /// replaces a waiting one. Returns whether the caller should start the
    /// port (it is idle).
    pub fn request_frame(&mut self, prio: u8, pause: bool, pause_ps: u64) -> bool {
        let st = self.pause.get_or_insert_with(Default::default);
        let bit = 1u8 << prio;
        st.to_send |= bit;
        if pause {
            st.send_pause |= bit;
            st.send_pause_ps = pause_ps;
        } else {
            st.send_pause &= !bit;
        }
        !self.busy
    }

    /// The next waiting PFC frame, started on the link.
    #[inline]
    fn take_frame(&mut self, cx: &mut PortCx<'_>) -> Option<(Packet, u64)> {
        let st = self.pause.as_deref_mut().filter(|st| st.to_send != 0)?;
        let prio = st.to_send.trailing_zeros() as u8;
        let bit = 1u8 << prio;
        st.to_send &= !bit;
        let pause = st.send_pause & bit != 0;
        let ps = st.send_pause_ps;
        let pkt = super::pfc::frame(cx.node, self.link.peer, prio, pause, ps, cx.now);
        self.counters.pause_sent += 1;
        self.busy = true;
        let done = cx.now + tx_time_ps(pkt.size as u64, self.link.link.rate_bps);
        if let Some(t) = cx.trace.as_deref_mut() {
            t.pause_sent(cx.node, cx.port, cx.now, done, &pkt, &self.queue);
        }
        Some((pkt, done))
    }

    /// Applies a PFC frame that arrived from this port's peer at `now`.
    /// Returns the priorities it paused for a limited time (one bit each;
    /// each ends at [`Port::pause_end`], for the caller to schedule), and
    /// whether the port may start (a priority resumed).
    pub fn receive_frame(&mut self, frame: &Packet, now: u64) -> (u8, bool) {
        self.counters.pause_received += 1;
        let (mut timed, mut resumed) = (0u8, false);
        for prio in 0..8u8 {
            let bit = 1u8 << prio;
            if frame.seq & bit as u64 == 0 {
                continue;
            }
            let pause = frame.ack & bit as u64 != 0;
            resumed |= self.set_paused(prio, pause, now);
            let st = self.pause.as_deref_mut().expect("set_paused made it");
            st.until[prio as usize] = 0;
            if pause && frame.rank > 0 {
                st.until[prio as usize] = now + frame.rank;
                timed |= bit;
            }
        }
        (timed, resumed)
    }

    /// When the timed pause of `prio` ends, ps (0: untimed or not paused).
    pub fn pause_end(&self, prio: u8) -> u64 {
        self.pause
            .as_deref()
            .map_or(0, |st| st.until[prio as usize])
    }

    /// A timed pause of `prio` due to end at `at` ends, unless a later
    /// frame replaced it. Returns whether the port may start.
    pub fn pause_expired(&mut self, prio: u8, at: u64) -> bool {
        let live = self
            .pause
            .as_deref()
            .is_some_and(|st| st.mask & (1 << prio) != 0 && st.until[prio as usize] == at);
        live && self.set_paused(prio, false, at)
    }

    /// The port's counters at `now`, with the paused time summed from the
    /// pause state (which keeps it per priority; see [`Port::paused_by_priority`]).
    pub fn totals(&self, now: u64) -> PortCounters {
        let mut c = self.counters;
        c.paused_ps = self.paused_by_priority(now).iter().sum();
        c
    }

    /// Time each priority has spent paused up to `now`, ps: the pauses that
    /// ended, and a pause still open counted up to `now`.
    pub fn paused_by_priority(&self, now: u64) -> [u64; 8] {
        let Some(st) = self.pause.as_deref() else {
            return [0; 8];
        };
        let since = self.paused_since();
        std::array::from_fn(|i| st.paused_ps[i] + since[i].map_or(0, |t| now.saturating_sub(t)))
    }

    /// For each priority paused now, since when, ps.
    pub fn paused_since(&self) -> [Option<u64>; 8] {
        let Some(st) = self.pause.as_deref() else {
            return [None; 8];
        };
        std::array::from_fn(|i| (st.mask & (1 << i) != 0).then_some(st.since[i]))
    }

    /// Whether priority `prio` is paused.
    pub fn is_paused(&self, prio: u8) -> bool {
        self.pause
            .as_deref()
            .is_some_and(|p| p.mask & (1 << prio) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, PacketKind};
    use crate::queue::{Capacity, DropTail};
    use crate::topo::LinkSpec;

    fn port() -> Port {
        let link = PortInfo {
            peer: 1,
            peer_port: 0,
            link: LinkSpec {
                rate_bps: 10_000_000_000,
                delay_ps: 1_000_000,
            },
        };
        Port::new(Queue::DropTail(DropTail::new(Capacity::Packets(2))), link)
    }

    fn cx<'a>(
        now: u64,
        rng: &'a mut Rng,
        reports: &'a mut Vec<Report>,
        pool: &'a mut crate::net::PacketPool,
    ) -> PortCx<'a> {
        PortCx {
            now,
            node: 0,
            port: 0,
            rng,
            reports,
            trace: None,
            topo: None,
            pool,
            inputs_busy_until: &[],
        }
    }

    /// 1500 B at 10 Gb/s serialise in 1.2 µs; the counters follow the
    /// outcomes; a full queue drops.
    #[test]
    fn offer_then_start_serialises_at_line_rate() {
        let (mut p, mut rng, mut r) = (port(), crate::rng::stream_rng(1, 0), Vec::new());
        let mut pool = crate::net::PacketPool::new();
        for seq in 0..3 {
            let o = p.offer(
                test_packet(PacketKind::Data, seq, 1500),
                None,
                &mut cx(0, &mut rng, &mut r, &mut pool),
            );
            assert_eq!(o.dropped, u64::from(seq == 2));
        }
        let s = p.start(&mut cx(5, &mut rng, &mut r, &mut pool));
        let (pkt, done) = s.sent.unwrap();
        assert_eq!((pkt.seq, done), (0, 5 + 1_200_000));
        assert!(
            p.start(&mut cx(6, &mut rng, &mut r, &mut pool))
                .sent
                .is_none(),
            "busy"
        );
        p.finish();
        assert_eq!(
            p.start(&mut cx(done, &mut rng, &mut r, &mut pool))
                .sent
                .unwrap()
                .0
                .seq,
            1
        );
        assert_eq!(
            (p.counters.enqueued, p.counters.dequeued, p.counters.dropped),
            (2, 2, 1)
        );
    }

    /// Preemptive LSTF at 10 Gb/s, T = U = 1 µs per 1250 B packet (keys =
    /// arrival + slack + T), by hand:
    /// - 0: A (slack 10U, key 11U) starts, due at U;
    /// - U/4: B (slack 0, key 1.25U) arrives and interrupts A, which has had
    ///   U/4 on the wire; B is due at 1.25U, and A's old completion at U
    ///   finds nothing;
    /// - 1.25U: B leaves with slack 0; A resumes for its last 0.75U, due at
    ///   2U, and leaves with slack 10U − (2U − U − 0) = 9U (it waited U);
    /// - 1.5U: C (slack 9U, key 11.5U) does not interrupt A (key 11U);
    /// - 2U: D (slack 6U, key 9U) would, but A's last bit leaves then.
    #[test]
    fn preemptive_lstf_interrupts_and_resumes_by_hand() {
        use crate::queue::lstf::{tests::pkt, tests::U, Form, LstfQueue};
        let link = PortInfo {
            peer: 1,
            peer_port: 0,
            link: LinkSpec {
                rate_bps: 10_000_000_000,
                delay_ps: 0,
            },
        };
        let q = LstfQueue::new(Capacity::Packets(10), Form::Lstf).with_preemption(true);
        let mut p = Port::new(Queue::Lstf(Box::new(q)), link);
        let (mut rng, mut r) = (crate::rng::stream_rng(1, 0), Vec::new());
        let mut pool = crate::net::PacketPool::new();
        let u = U as i64;
        p.offer(
            pkt(1, 10 * u),
            None,
            &mut cx(0, &mut rng, &mut r, &mut pool),
        );
        let (a, done) = p
            .start(&mut cx(0, &mut rng, &mut r, &mut pool))
            .sent
            .unwrap();
        assert_eq!(done, U);
        p.hold(a, 0, done);
        assert!(!p.interrupt(U / 8), "nothing better waits");
        p.offer(pkt(2, 0), None, &mut cx(U / 4, &mut rng, &mut r, &mut pool));
        assert!(p.interrupt(U / 4));
        assert_eq!(p.counters.dequeued, 0);
        let (b, done) = p
            .start(&mut cx(U / 4, &mut rng, &mut r, &mut pool))
            .sent
            .unwrap();
        assert_eq!((b.seq, done), (2, 5 * U / 4));
        p.hold(b, U / 4, done);
        assert_eq!(p.release(U), None, "A's first completion is superseded");
        let b = p.release(5 * U / 4).unwrap();
        assert_eq!((b.seq, b.rank as i64), (2, 0));
        p.finish();
        let (a, done) = p
            .start(&mut cx(5 * U / 4, &mut rng, &mut r, &mut pool))
            .sent
            .unwrap();
        assert_eq!((a.seq, done), (1, 2 * U));
        p.hold(a, 5 * U / 4, done);
        assert_eq!(
            p.preempt
                .as_deref()
                .unwrap()
                .in_service
                .as_ref()
                .unwrap()
                .sent_before,
            U / 4
        );
        p.offer(
            pkt(3, 9 * u),
            None,
            &mut cx(3 * U / 2, &mut rng, &mut r, &mut pool),
        );
        assert!(!p.interrupt(3 * U / 2));
        p.offer(
            pkt(4, 6 * u),
            None,
            &mut cx(2 * U, &mut rng, &mut r, &mut pool),
        );
        assert!(!p.interrupt(2 * U));
        let a = p.release(2 * U).unwrap();
        assert_eq!((a.seq, a.rank as i64), (1, 9 * u));
        assert_eq!(p.preempt.as_deref().unwrap().interrupted, 1);
        assert!(p.preempt.as_deref().unwrap().partial.is_empty());
        assert_eq!((p.counters.enqueued, p.counters.dequeued), (4, 2));
    }

    /// A discipline without per-priority service: a pause holds the whole
    /// port after the packet in service, a resume releases it, and the
    /// paused time is accounted per priority.
    #[test]
    fn a_pause_holds_the_port_after_the_packet_in_service() {
        let (mut p, mut rng, mut r) = (port(), crate::rng::stream_rng(1, 0), Vec::new());
        let mut pool = crate::net::PacketPool::new();
        for seq in 0..2 {
            p.offer(
                test_packet(PacketKind::Data, seq, 1500),
                None,
                &mut cx(0, &mut rng, &mut r, &mut pool),
            );
        }
        assert!(p
            .start(&mut cx(0, &mut rng, &mut r, &mut pool))
            .sent
            .is_some());
        assert!(!p.set_paused(3, true, 100));
        assert!(p.is_paused(3) && !p.is_paused(2));
        assert!(p.busy, "the packet in service goes on");
        p.finish();
        assert!(p
            .start(&mut cx(1_200_000, &mut rng, &mut r, &mut pool))
            .sent
            .is_none());
        assert!(!p.set_paused(3, true, 200), "already paused");
        assert!(p.set_paused(3, false, 5_000_100));
        let (pkt, _) = p
            .start(&mut cx(5_000_100, &mut rng, &mut r, &mut pool))
            .sent
            .unwrap();
        assert_eq!(pkt.seq, 1);
        assert_eq!(p.pause.as_deref().unwrap().paused_ps[3], 5_000_000);
        assert_eq!(p.totals(6_000_000).paused_ps, 5_000_000);
        // Priority 1 paused at 5.5 us and still paused: it counts up to the
        // time asked for, beside priority 3's closed pause.
        assert!(!p.set_paused(1, true, 5_500_000));
        assert_eq!(p.paused_since()[1], Some(5_500_000));
        assert_eq!(p.paused_since()[3], None);
        let by = p.paused_by_priority(6_000_000);
        assert_eq!((by[1], by[3], by[0]), (500_000, 5_000_000, 0));
        assert_eq!(p.totals(6_000_000).paused_ps, 5_500_000);
    }
}
