//! The RoCE sender: in-order PSNs paced at the controller's rate, go-back-N
//! on a NACK or a timeout (module documentation in `mod.rs`).

use super::RoceParams;
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use crate::transport::app::MessageSupply;
use crate::transport::cc::timely::SegmentPacer;
use crate::transport::cc::{AckEvent, CongestionControl, Controller, Loss};
use crate::transport::{Ctx, FlowInfo, SourceStats, Transport};
use crate::units::tx_time_ps;

/// Sender of a RoCE, DCQCN or TIMELY flow.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RoceSource {
    flow: u64,
    src: u32,
    dst: u32,
    prio: u8,
    path: u32,
    proto: Protocol,
    size: Option<u64>,
    pub(super) mtu: u32,
    /// PSNs in the flow (`None`: endless).
    pub(super) total: Option<u64>,
    /// Next PSN to send.
    pub(super) next_psn: u64,
    /// First PSN not acknowledged.
    pub(super) una: u64,
    /// One past the highest PSN ever sent.
    pub(super) high: u64,
    /// Earliest time the next packet may leave (pacing).
    pub(super) next_tx: u64,
    pub(super) started: bool,
    rto: Option<u64>,
    rto_at: Option<u64>,
    window: u64,
    /// An RDMA Read's responder sends only below this PSN: what its
    /// requester asked for so far (TIMELY's paced read requests,
    /// `read.rs`); None: no such limit.
    #[serde(default)]
    granted: Option<u64>,
    /// The rate controller; `None`: the NIC's line rate.
    pub(super) cc: Option<Controller>,
    /// Mark data ECN-capable (DCQCN).
    ect: bool,
    /// TIMELY's rate engine: segments, bursts and RTT samples (None: every
    /// packet paced at the rate, and no RTT samples: only TIMELY uses them).
    pacer: Option<SegmentPacer>,
    /// A turn is requested from the host's segment scheduler.
    seg_wait: bool,
    /// The application's messages (`transport/app.rs`); None: a backlog.
    app: Option<MessageSupply>,
    /// A window controller (NewReno's, DCTCP's) bounds the PSNs in flight,
    /// and a NACK is a loss for it (`roce_aimd`, `roce_dctcp`; `window.rs`).
    windowed: bool,
    /// `ECE` on an ACK or NACK echoes a CE mark (`roce_dctcp`, and IRN's
    /// `irn_dctcp` over this sender), not a CNP.
    pub(super) echo: bool,
    /// Go-back-N recovery of a windowed sender: the cumulative ACK that
    /// ends it, one past the highest PSN sent when the NACK came.
    recovery: Option<u64>,
    /// No ECN cut until the cumulative ACK reaches this PSN: one per window.
    ecn_cut_until: u64,
    /// The most of this flow's packets in the host's NIC queue (`nic_packets`;
    /// 0: no cap).
    nic_cap: u32,
    /// This flow's packets in the host's NIC queue now.
    nic_held: u32,
    /// DCQCN's `shift_pending_departure`: a change of rate moves `next_tx`
    /// to one packet's time at the new rate after the last departure.
    shift: bool,
    /// The last paced departure: its time, its wire bytes and the rate its
    /// gap was computed at (0: none yet), for the shift.
    gap_from: u64,
    gap_wire: u64,
    gap_rate: u64,
    /// Counters.
    pub stats: SourceStats,
}

impl RoceSource {
    /// A sender for `flow` with controller `cc`; `ect` marks data
    /// ECN-capable; `pacer` is TIMELY's segment engine.
    pub fn new(
        flow: &FlowInfo,
        proto: Protocol,
        p: &RoceParams,
        cc: Option<Controller>,
        ect: bool,
        pacer: Option<SegmentPacer>,
    ) -> Self {
        let mtu = p.mtu_bytes;
        let shift = pacer.is_none()
            && matches!(&cc, Some(Controller::Dcqcn(d)) if d.shifts_pending_departure());
        RoceSource {
            flow: flow.id,
            src: flow.src,
            dst: flow.dst,
            prio: flow.prio,
            path: flow.ecmp_path,
            proto,
            size: flow.size,
            mtu,
            total: flow.size.map(|s| s.div_ceil(mtu as u64).max(1)),
            next_psn: 0,
            una: 0,
            high: 0,
            next_tx: 0,
            started: false,
            rto: p.rto_ps(),
            rto_at: None,
            window: p.window_packets as u64,
            granted: None,
            cc,
            ect,
            pacer,
            seg_wait: false,
            app: flow.app.map(|a| MessageSupply::new(&a, mtu)),
            windowed: false,
            echo: false,
            recovery: None,
            ecn_cut_until: 0,
            nic_cap: p.nic_packets,
            nic_held: 0,
            shift,
            gap_from: 0,
            gap_wire: 0,
            gap_rate: 0,
            stats: SourceStats::default(),
        }
    }

    /// The same sender under its controller's window (`roce_aimd`,
    /// `roce_dctcp`; `window.rs`); `echo`: its receiver echoes CE marks on
    /// ACKs and NACKs instead of sending CNPs.
    pub fn with_window(mut self, echo: bool) -> Self {
        self.windowed = true;
        self.echo = echo;
        self
    }

    /// Whether the window controller lets one more PSN out: the PSNs sent
    /// and not cumulatively ACKed stay below cwnd (always, unwindowed).
    fn window_open(&self) -> bool {
        let flight = (self.next_psn - self.una) * self.mtu as u64;
        !self.windowed
            || self
                .cc
                .as_ref()
                .is_none_or(|cc| (flight as f64) < cc.window())
    }

    /// Echo mode: one ACK or NACK's ECN feedback to the controller, once its
    /// cumulative ACK (and, for IRN, its SACK) was taken. `delivered` counts
    /// the PSNs it newly reported delivered (go-back-N: newly cumulatively
    /// ACKed; IRN: also newly SACKed), given to the controller as that many
    /// MTUs. A cut needs the sender to have been out of recovery before this
    /// feedback (`was_recovering` false) and the cumulative ACK to have
    /// reached the next new PSN of the last cut: at most one cut per window
    /// of data, as TCP's subflow allows DCTCP. True if the window was cut.
    pub(super) fn feed_echo(&mut self, delivered: u64, ece: bool, was_recovering: bool) -> bool {
        let may_cut = !was_recovering && self.una >= self.ecn_cut_until;
        let ev = self.ack_event(delivered * self.mtu as u64, ece);
        let cut = self.cc.as_mut().is_some_and(|cc| cc.on_ecn(&ev, may_cut));
        if cut {
            self.ecn_cut_until = self.next_psn;
        }
        cut
    }

    /// Takes one ACK's or NACK's cumulative ACK (a NACK also goes back N),
    /// then, in echo mode, its ECN feedback, and ends a windowed sender's
    /// recovery once the cumulative ACK passes it. Returns the bytes newly
    /// acknowledged and whether the echo cut the window.
    fn take_feedback(&mut self, pkt: &Packet, now: u64) -> (u64, bool) {
        let (was_recovering, una) = (self.recovery.is_some(), self.una);
        let acked = self.acknowledge(pkt.ack, now);
        if pkt.kind == PacketKind::Nack {
            self.next_psn = self.next_psn.min(pkt.ack);
        }
        let cut = self.echo && self.feed_echo(self.una - una, pkt.has(flags::ECE), was_recovering);
        if self.recovery.is_some_and(|r| self.una >= r) {
            self.recovery = None;
            if let Some(cc) = &mut self.cc {
                cc.on_recovery_end();
            }
        }
        (acked, cut)
    }

    /// The controller, for tests and traces.
    pub fn controller(&self) -> Option<&Controller> {
        self.cc.as_ref()
    }

    /// First PSN not yet acknowledged.
    pub fn una(&self) -> u64 {
        self.una
    }

    fn payload(&self, psn: u64) -> u32 {
        match self.size {
            Some(s) => (s - (psn * self.mtu as u64).min(s)).min(self.mtu as u64) as u32,
            None => self.mtu,
        }
    }

    fn has_data(&self) -> bool {
        self.started
            && self.next_psn < self.send_limit()
            && (self.window == 0 || self.next_psn - self.una < self.window)
            && self.window_open()
            && self.nic_ready()
    }

    /// Whether the NIC takes another packet of this flow now: fewer than
    /// `nic_packets` of them wait in its queue (host-scheduled segments go
    /// whole, uncapped).
    pub(super) fn nic_ready(&self) -> bool {
        self.nic_cap == 0 || self.nic_held < self.nic_cap || self.host_scheduled()
    }

    /// One of this flow's packets left the NIC's queue.
    pub(super) fn nic_sent(&mut self) {
        self.nic_held = self.nic_held.saturating_sub(1);
    }

    /// The flow starts: pacing from now, and the application's first message.
    pub(super) fn begin(&mut self, cx: &mut Ctx<'_>) {
        self.started = true;
        self.next_tx = cx.now;
        if let Some(a) = &mut self.app {
            a.start(cx.now, cx.rng);
        }
    }

    /// The first PSN the sender may not send yet: the flow's end, or the end
    /// of what the application has handed over.
    pub(super) fn send_limit(&self) -> u64 {
        let end = self.total.unwrap_or(u64::MAX);
        let end = self.granted.map_or(end, |g| end.min(g));
        self.app.as_ref().map_or(end, |a| end.min(a.released()))
    }

    /// An RDMA Read's responder that sends only what its requester asked
    /// for (`read.rs`): nothing until [`Self::grant`].
    pub(super) fn granted_only(mut self) -> Self {
        self.granted = Some(0);
        self
    }

    /// The requester asked for the PSNs below `end` too.
    pub(super) fn grant(&mut self, end: u64) {
        if let Some(g) = &mut self.granted {
            *g = (*g).max(end);
        }
    }

    /// Takes the messages that have arrived by now.
    pub(super) fn take_messages(&mut self, cx: &mut Ctx<'_>) {
        if let Some(a) = &mut self.app {
            a.catch_up(cx.now, cx.rng);
        }
    }

    /// When the application's next message arrives, while the sender has
    /// sent all it was handed and the flow is not over.
    pub(super) fn app_wake(&self) -> Option<u64> {
        let a = self.app.as_ref()?;
        let waiting = self.started
            && self.next_psn >= a.released()
            && self.total.is_none_or(|t| a.released() < t);
        waiting.then(|| a.next_arrival())
    }

    /// Whether whole segments take turns in the host's scheduler.
    fn host_scheduled(&self) -> bool {
        self.pacer.as_ref().is_some_and(|p| p.host_scheduled())
    }

    /// Sends the next PSN if it may leave now (or, host-scheduled, asks for
    /// the next segment's turn).
    fn try_send(&mut self, cx: &mut Ctx<'_>) {
        self.take_messages(cx);
        if self.host_scheduled() {
            if self.has_data() && !self.seg_wait {
                self.seg_wait = true;
                cx.services
                    .segments
                    .request(cx.slot, self.next_tx.max(cx.now));
            }
            return;
        }
        self.follow_rate(cx.now, cx.nic_bps);
        if !self.has_data() || self.next_tx > cx.now {
            return;
        }
        let rate = self.rate(cx.now, cx.nic_bps);
        self.send_next(rate, cx);
    }

    /// Puts the next PSN on the wire at `rate` and arms the RTO if none is
    /// running.
    fn send_next(&mut self, rate: u64, cx: &mut Ctx<'_>) {
        self.emit(self.next_psn, 0, rate, cx);
        self.next_psn += 1;
        if self.rto_at.is_none() {
            self.rto_at = self.rto.map(|r| cx.now + r);
        }
    }

    /// `shift_pending_departure` (DCQCN, packet-paced senders): the
    /// controller's timers caught up to `now`, and if the rate has changed
    /// since the last departure's gap was set, the pending departure moves
    /// to that departure's time plus one packet's time at the new rate.
    /// This is the forks' `ChangeRate` (next += new gap - old gap), the same
    /// for any number of changes while the departure waits.
    pub(super) fn follow_rate(&mut self, now: u64, nic_bps: u64) {
        if !self.shift {
            return;
        }
        let r = self.rate(now, nic_bps);
        if self.gap_rate != 0 && r != self.gap_rate {
            self.next_tx = self.gap_from + tx_time_ps(self.gap_wire, r.max(1));
            self.gap_rate = r;
        }
    }

    /// When to wake for a departure pending at `tx`: then, or earlier at
    /// the controller's next timer-driven rate change when that may shift
    /// it (`shift_pending_departure`). No departure pending, no wake: an
    /// idle flow costs nothing.
    pub(super) fn departure_wake(&self, tx: Option<u64>) -> Option<u64> {
        let t = tx?;
        let change = match &self.cc {
            Some(Controller::Dcqcn(d)) if self.shift => d.next_rate_change(),
            _ => None,
        };
        Some(change.map_or(t, |c| c.min(t)))
    }

    /// The rate to pace at now: the controller's (its lazy timers caught
    /// up first, XM1), at most the NIC's.
    pub(super) fn rate(&mut self, now: u64, nic_bps: u64) -> u64 {
        match &mut self.cc {
            Some(cc) => {
                cc.on_timer(now);
                cc.pacing_bps().unwrap_or(nic_bps).min(nic_bps)
            }
            None => nic_bps,
        }
    }

    /// Puts PSN `psn` on the wire now (a retransmission if it was sent
    /// before), with `extra` header bytes, and paces the next departure at
    /// `rate`. Shared by the go-back-N and the IRN senders.
    pub(super) fn emit(&mut self, psn: u64, extra: u32, rate: u64, cx: &mut Ctx<'_>) {
        let now = cx.now;
        let payload = self.payload(psn);
        let size = payload + HEADER_BYTES + extra;
        let retx = psn < self.high;
        let mut fl = 0;
        if self.total == Some(psn + 1) {
            fl |= flags::LAST;
        }
        if self.ect {
            fl |= flags::ECT;
        }
        if retx {
            fl |= flags::RETX;
            self.stats.retransmissions += 1;
        }
        cx.out.push(Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            seq: psn,
            ack: 0,
            size,
            payload,
            path: self.path,
            sent_ps: now,
            kind: PacketKind::Data,
            proto: self.proto,
            flags: fl,
            prio: self.prio,
            rank: 0,
        });
        self.stats.bytes_sent += payload as u64;
        self.stats.packets_sent += 1;
        self.nic_held += 1;
        self.high = self.high.max(psn + 1);
        self.next_tx = match &mut self.pacer {
            // A host-scheduled burst sets it once, for the whole segment.
            Some(p) if p.host_scheduled() => self.next_tx,
            Some(p) => p.next_departure(now, size as u64, rate),
            None => now + tx_time_ps(size as u64, rate.max(1)),
        };
        (self.gap_from, self.gap_wire, self.gap_rate) = (now, size as u64, rate);
        if let Some(Controller::Dcqcn(d)) = &mut self.cc {
            // DCQCN's byte counter (the controller trait has no hook for sent bytes).
            d.on_transmit(size as u64, now);
        }
        // A byte-counter increase just now shifts the gap just set.
        self.follow_rate(now, cx.nic_bps);
    }

    /// Payload bytes of PSNs `from..to`.
    pub(super) fn bytes_between(&self, from: u64, to: u64) -> u64 {
        let off = |psn: u64| {
            let b = psn * self.mtu as u64;
            self.size.map_or(b, |s| b.min(s))
        };
        off(to) - off(from)
    }

    /// Cumulative acknowledgement up to (not including) PSN `e`.
    fn acknowledge(&mut self, e: u64, now: u64) -> u64 {
        if e <= self.una {
            return 0;
        }
        let bytes = self.bytes_between(self.una, e);
        self.una = e;
        self.next_psn = self.next_psn.max(e);
        self.note_done(now);
        self.rto_at = match self.rto {
            Some(r) if self.una < self.high => Some(now + r),
            _ => None,
        };
        bytes
    }

    /// The sender's completion: the cumulative ACK passed the last PSN.
    pub(super) fn note_done(&mut self, now: u64) {
        if self.total.is_some_and(|t| self.una >= t) {
            self.stats.finish(now);
        }
    }

    /// A CNP: only the rate controller cares (and, with
    /// `shift_pending_departure`, the pending departure).
    pub(super) fn feed_cnp(&mut self, now: u64, nic_bps: u64) {
        let ev = self.ack_event(0, true);
        if let Some(cc) = &mut self.cc {
            cc.on_timer(now);
            cc.on_ecn(&ev, true);
        }
        self.follow_rate(now, nic_bps);
    }

    /// Tells the controller that `acked` bytes were acknowledged by `pkt`,
    /// with an RTT sample when TIMELY's engine takes one (a completed
    /// segment, or `hpcc`'s once per RTT; the only controller that takes
    /// samples).
    pub(super) fn feed_ack(&mut self, acked: u64, pkt: &Packet, cx: &mut Ctx<'_>) {
        let now = cx.now;
        let ev = self.ack_event(acked, false);
        let (una, next) = (self.una, self.next_psn);
        let rtt = self.pacer.as_mut().and_then(|p| {
            p.takes_sample(acked, una, next)
                .then(|| p.rtt(now, pkt.sent_ps, cx.rng))
        });
        if let (Some(_), Some(Controller::Timely(t)), Some(a)) = (rtt, &mut self.cc, &mut self.app)
        {
            // [TH] §3.4: the rate rises only while the application keeps up
            // with it; released data still unsent means it does.
            let offered = a.offered_bps(now);
            let backlog = self.next_psn < a.released();
            t.note_app_offer(if backlog { f64::INFINITY } else { offered });
        }
        if let Some(r) = rtt {
            self.stats.rtt(r);
        }
        if let Some(cc) = &mut self.cc {
            cc.on_timer(now);
            if let Some(rtt) = rtt {
                cc.on_rtt_sample(rtt, now);
            }
            cc.on_ack(&ev);
        }
    }

    /// What an ACK of `bytes_acked` bytes (`ece`: echoing a CE mark) tells
    /// the controller, in bytes of PSNs × MTU.
    pub(super) fn ack_event(&self, bytes_acked: u64, ece: bool) -> AckEvent {
        let m = self.mtu as u64;
        AckEvent {
            bytes_acked,
            ece,
            snd_una: self.una * m,
            snd_nxt: self.next_psn * m,
            coupling: None,
        }
    }
}

impl Transport for RoceSource {
    fn on_start(&mut self, cx: &mut Ctx<'_>) {
        self.begin(cx);
        self.try_send(cx);
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        let now = cx.now;
        match pkt.kind {
            PacketKind::Ack if pkt.has(flags::ECE) && !self.echo => self.feed_cnp(now, cx.nic_bps),
            PacketKind::Ack => {
                // Echo mode: the ECN estimate before growth, as irn_dctcp
                // orders them; an ACK that cut does not also grow the window.
                let (acked, cut) = self.take_feedback(&pkt, now);
                if acked == 0 {
                    return;
                }
                if !cut {
                    self.feed_ack(acked, &pkt, cx);
                }
                self.try_send(cx);
            }
            PacketKind::Nack if self.windowed => {
                let (acked, cut) = self.take_feedback(&pkt, now);
                if acked > 0 && !cut {
                    self.feed_ack(acked, &pkt, cx);
                }
                if self.recovery.is_none() && self.una < self.high {
                    // A NACK that starts recovery is a loss, as for TCP's
                    // fast retransmit; more NACKs until the PSNs then sent
                    // are ACKed are the same loss.
                    self.recovery = Some(self.high);
                    let flight = (self.high - self.una) * self.mtu as u64;
                    if let Some(cc) = &mut self.cc {
                        cc.on_loss(Loss::FastRetransmit, flight);
                    }
                }
                self.try_send(cx);
            }
            PacketKind::Nack => {
                let acked = self.acknowledge(pkt.ack, now);
                if pkt.ack < self.next_psn {
                    // Go back N.
                    self.next_psn = pkt.ack;
                }
                // `hpcc`: the fork passes NACKs through its TIMELY update
                // too, after going back, so a NACK that moves the cumulative
                // ACK past the milestone gives the sample and sets the next
                // milestone at the rewound PSN.
                if acked > 0 && self.pacer.as_ref().is_some_and(|p| p.per_rtt()) {
                    self.feed_ack(acked, &pkt, cx);
                }
                self.try_send(cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        if self.rto_at.is_some_and(|t| t <= now) {
            if self.una < self.high {
                self.stats.timeouts += 1;
                self.next_psn = self.una;
                self.rto_at = self.rto.map(|r| now + r);
                self.recovery = None;
                if let Some(cc) = &mut self.cc {
                    cc.on_loss(Loss::Timeout, (self.high - self.una) * self.mtu as u64);
                }
            } else {
                self.rto_at = None;
            }
        }
        self.try_send(cx);
    }

    fn on_grant(&mut self, cx: &mut Ctx<'_>) {
        if !std::mem::take(&mut self.seg_wait) {
            return;
        }
        self.take_messages(cx);
        // The segment's turn: all of it to the NIC at once, as one burst.
        let Some(pkts) = self.pacer.as_ref().map(|p| p.segment_packets()) else {
            return;
        };
        let now = cx.now;
        let rate = self.rate(now, cx.nic_bps);
        let mut wire = 0;
        for _ in 0..pkts {
            if !self.has_data() {
                break;
            }
            wire += u64::from(self.payload(self.next_psn) + HEADER_BYTES);
            self.send_next(rate, cx);
        }
        if wire > 0 {
            if let Some(p) = &self.pacer {
                let (next, nic_free) = p.after_burst(now, wire, rate);
                self.next_tx = next;
                cx.services.segments.busy_until(nic_free);
            }
        }
        self.try_send(cx);
    }

    fn on_nic_sent(&mut self, cx: &mut Ctx<'_>) {
        self.nic_sent();
        self.try_send(cx);
    }

    fn poll_at(&self) -> Option<u64> {
        let tx = (self.has_data() && !self.host_scheduled()).then_some(self.next_tx);
        [self.departure_wake(tx), self.rto_at, self.app_wake()]
            .into_iter()
            .flatten()
            .min()
    }

    fn source_stats(&self) -> Option<&SourceStats> {
        Some(&self.stats)
    }
}
