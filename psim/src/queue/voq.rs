//! The thesis's IRN switch as an output port's service order: virtual
//! output queues served round robin over inputs ([TH] §4.3.1: "All switches
//! in our simulation are input-queued with virtual output ports, that are
//! scheduled using round-robin"; decision TA12, spec `thesis.md`
//! ambiguity 12: "input-queued with VOQs, RR over inputs, per-input
//! buffers").
//!
//! At each output port, packets wait in one FIFO per input port: that
//! input's virtual output queue for this output. The output serves the
//! inputs that have packets waiting in round robin, one packet per turn: a
//! pointer moves to the input after the one just served, and inputs with
//! nothing waiting are skipped. So a packet waits behind at most one packet
//! of each other input per turn, however long their backlogs are; a
//! drop-tail FIFO makes it wait behind all of them. Packets with no input
//! port (those a host's own transport sends) share one more FIFO, so on a
//! host NIC `voq` is a FIFO.
//!
//! **Buffer.** The thesis bounds the buffer per *input* port (240 KB for
//! each input port, [TH] §4.3.1), shared by all of that input's VOQs on the
//! switch. That is `[switch.pfc]`'s per-input-port accounting
//! (`net/pfc.rs`), which this discipline reuses rather than keeping a second
//! one: with lossless priorities it pauses the upstream at X-OFF (IRN+PFC,
//! RoCE+PFC); with `lossless = []` it never pauses and drops an arrival
//! that would overflow its input's buffer (IRN without PFC). This
//! discipline's own capacity bounds the output port (all its VOQs
//! together), as drop-tail's does; under `[switch.pfc]` make it large so
//! that the input buffers decide.
//!
//! **Under PFC** the charge of a dequeued packet is released against its
//! input port. Round robin reorders one priority's packets across inputs,
//! so the switch cannot find the input by order as it does for a FIFO: the
//! discipline names the input of each packet it dequeues
//! ([`Discipline::dequeued_ingress`], [`DisciplineConfig::names_ingress`]).
//! Each input's packets stay in arrival order, which the release checks in
//! debug builds. A paused priority is not served: the round robin skips an
//! input whose head packet has a paused priority, and what is queued behind
//! that head in the same VOQ waits too (one FIFO per VOQ: the thesis's VOQs
//! are per input, not per input and priority).
//!
//! **ECN.** For DCQCN the same ramp as `ecn_ramp` marks ECT packets on the
//! bytes queued at the output, all its VOQs together, so that the DCQCN
//! scenarios run on this switch with `--set switch.queue.kind=voq` and
//! their `ecn_ramp` keys unchanged. For DCTCP, `ecn_threshold` is `ecn`'s
//! step instead: CE on an ECT packet when the output's occupancy (packets,
//! or bytes with `queue_bytes`) exceeds K, tested where `ecn` tests it
//! (on arrival, or at dequeue with the leaving packet counted). The two are
//! exclusive.
//!
//! **The crossbar** (`crossbar = true`). A real input-queued switch moves
//! at most one packet per input at a time through its fabric (no speedup).
//! With `crossbar`, the switch's inputs share one (`net/crossbar.rs`): an
//! input is busy from when an output takes its packet until that packet's
//! last bit has left the output, and an output serves, in its round robin,
//! only the inputs that are free. An output whose waiting inputs are all
//! busy idles until one is freed, when the outputs of the switch with
//! packets waiting try again, in port order from the output that freed it.
//! So an input backlogged towards several outputs feeds them one packet at
//! a time: the head-of-line coupling of an input-queued switch, without a
//! cell time (packets cross whole, at the output's rate). The thesis names
//! no matching algorithm (iSLIP, PIM, ...), speedup or cell time; without
//! `crossbar` (the default, which every shipped result ran) each output
//! serves its VOQs on its own, which is an input-queued switch with enough
//! speedup, or an output-queued switch with per-input buffers and round
//! robin over inputs at each output.
//!
//! | parameter (`kind = "voq"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes`: bound of the output port, all VOQs together | 100 packets ([`super::droptail::DEFAULT_QUEUE_PACKETS`]) | as `droptail`; the thesis bounds per input port instead, through `[switch.pfc]` `buffer_bytes` = 240 000 ([TH] §4.3.1) |
//! | service order | round robin over inputs with packets waiting, one packet per turn | [TH] §4.3.1 ("scheduled using round-robin"); TA12 |
//! | `kmin_kb`, `kmax_kb`, `pmax`, `scale_with_rate`, `reference_gbps`, `mark_at` | absent: no marking; any one given: `ecn_ramp`'s defaults for the rest | `ecn_ramp`'s keys and sources (DCQCN); the thesis does not say where its input-queued switch marks: here on the output's bytes, all VOQs together, as an output queue would |
//! | `crossbar`: one packet per input at a time through the switch's fabric | false: each output serves its VOQs on its own | [TH] §4.3.1 ("input-queued"); the thesis gives no speedup, cell time or matching, so the default keeps the results every shipped scenario ran with |
//! | `ecn_threshold`: DCTCP's K, in the capacity's unit (packets, or bytes with `queue_bytes`), with `mark_at` | absent: no step | `ecn`'s step (RFC 8257 §3.1: "mark ... if the queue occupancy is greater than K upon its arrival"); not with the ramp keys |

use super::ecn_ramp::{EcnRampConfig, Ramp};
use super::{capacity, Capacity, Discipline, DisciplineConfig, MarkAt, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::{flags, Packet};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `kind = "voq"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct VoqConfig {
    /// Capacity of the output port in packets (default as drop-tail's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity of the output port in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// `ecn_ramp`'s Kmin, KB: any of the ramp keys turns marking on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmin_kb: Option<f64>,
    /// `ecn_ramp`'s Kmax, KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmax_kb: Option<f64>,
    /// `ecn_ramp`'s Pmax.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmax: Option<f64>,
    /// `ecn_ramp`'s scaling of Kmin and Kmax with the port's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_with_rate: Option<bool>,
    /// `ecn_ramp`'s reference rate, Gb/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_gbps: Option<f64>,
    /// `ecn_ramp`'s marking point, or the step's with `ecn_threshold`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark_at: Option<MarkAt>,
    /// `ecn`'s step: DCTCP's K, in the capacity's unit (not with the ramp).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<u64>,
    /// One packet per input at a time through the switch (`net/crossbar.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crossbar: Option<bool>,
}

impl VoqConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(super::droptail::DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }

    /// Whether a key that only the ramp has is given.
    fn ramp_keys(&self) -> bool {
        self.kmin_kb.is_some()
            || self.kmax_kb.is_some()
            || self.pmax.is_some()
            || self.scale_with_rate.is_some()
            || self.reference_gbps.is_some()
    }

    /// The ECN ramp, with `ecn_ramp`'s defaults for the keys not given and
    /// this table's capacity; None when no ramp key is given (`mark_at`
    /// alone is the ramp's unless `ecn_threshold` is given).
    fn ramp(&self) -> Option<EcnRampConfig> {
        let any = self.ramp_keys() || (self.mark_at.is_some() && self.ecn_threshold.is_none());
        let d = EcnRampConfig::default();
        let mut c = EcnRampConfig {
            queue_packets: self.queue_packets,
            queue_bytes: self.queue_bytes,
            kmin_kb: self.kmin_kb.unwrap_or(d.kmin_kb),
            kmax_kb: self.kmax_kb.unwrap_or(d.kmax_kb),
            pmax: self.pmax.unwrap_or(d.pmax),
            scale_with_rate: self.scale_with_rate.unwrap_or(d.scale_with_rate),
            reference_gbps: self.reference_gbps.unwrap_or(d.reference_gbps),
            mark_at: self.mark_at.unwrap_or(d.mark_at),
        };
        super::resolve_capacity(
            &mut c.queue_packets,
            c.queue_bytes,
            super::droptail::DEFAULT_QUEUE_PACKETS,
        );
        any.then_some(c)
    }
}

impl DisciplineConfig for VoqConfig {
    type Queue = VoqQueue;
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key)?;
        if let (Some(k), true) = (self.ecn_threshold, self.ramp_keys()) {
            return Err(bad(
                &format!("{key}.ecn_threshold"),
                k,
                "is DCTCP's step; give it or the ecn_ramp keys (kmin_kb, kmax_kb, pmax, \
                 scale_with_rate, reference_gbps), not both",
            ));
        }
        self.ramp().map_or(Ok(()), |r| r.validate(key))
    }
    fn build(&self, _env: &QueueEnv) -> VoqQueue {
        let mut q = VoqQueue::new(self.cap("").expect("validated"));
        q.marker = match (self.ramp(), self.ecn_threshold) {
            (Some(r), _) => Some(Marker::Ramp(Box::new(r.ramp()))),
            (None, Some(k)) => Some(Marker::Step {
                k,
                mark_at: self.mark_at.unwrap_or(MarkAt::Enqueue),
            }),
            (None, None) => None,
        };
        q
    }
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        super::resolve_capacity(
            &mut c.queue_packets,
            c.queue_bytes,
            super::droptail::DEFAULT_QUEUE_PACKETS,
        );
        if let Some(r) = self.ramp() {
            c.kmin_kb = Some(r.kmin_kb);
            c.kmax_kb = Some(r.kmax_kb);
            c.pmax = Some(r.pmax);
            c.scale_with_rate = Some(r.scale_with_rate);
            c.reference_gbps = Some(r.reference_gbps);
            c.mark_at = Some(r.mark_at);
        } else if self.ecn_threshold.is_some() {
            c.mark_at = Some(self.mark_at.unwrap_or(MarkAt::Enqueue));
        }
        c.crossbar = Some(self.crossbar());
        c
    }
    fn marks_ecn(&self) -> bool {
        self.ramp().is_some() || self.ecn_threshold.is_some()
    }
    /// DCTCP's step K counts in the capacity's unit (the ramp's in KB).
    fn thresholds_follow_capacity(&self) -> bool {
        self.ecn_threshold.is_some()
    }
    /// K for the NICs' default, as `ecn`'s, when the step counts packets.
    fn ecn_threshold_packets(&self) -> Option<u32> {
        let in_packets = matches!(self.cap(""), Ok(Capacity::Packets(_)));
        let k = self.ecn_threshold.filter(|_| in_packets)?;
        u32::try_from(k).ok()
    }
    /// Names each dequeued packet's input; drops only at enqueue.
    fn names_ingress(&self) -> bool {
        true
    }
    fn crossbar(&self) -> bool {
        self.crossbar.unwrap_or(false)
    }
}

/// How the output signals congestion to ECT packets.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Marker {
    /// `ecn_ramp`'s ramp on the output's bytes (DCQCN).
    Ramp(Box<Ramp>),
    /// `ecn`'s step: CE when the occupancy exceeds `k` (DCTCP).
    Step {
        /// K, in the capacity's unit.
        k: u64,
        mark_at: MarkAt,
    },
}

/// One FIFO per input port, served round robin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VoqQueue {
    cap: Capacity,
    /// Slot 0: packets with no input port; slot i + 1: input port i. Grown
    /// on an input's first packet (the port count is not known at build).
    voqs: Vec<VecDeque<Packet>>,
    /// The slot whose turn is next.
    next: usize,
    pkts: u32,
    bytes: u64,
    /// Paused priorities, one bit each.
    paused: u8,
    /// Input port of the packet the last dequeue returned.
    last: Option<u16>,
    /// ECN marking on the output's occupancy, all VOQs together.
    marker: Option<Marker>,
}

impl VoqQueue {
    /// An empty queue bounded by `cap` over all its VOQs.
    pub fn new(cap: Capacity) -> Self {
        VoqQueue {
            cap,
            voqs: Vec::new(),
            next: 0,
            pkts: 0,
            bytes: 0,
            paused: 0,
            last: None,
            marker: None,
        }
    }

    /// Whether `pkt` is up for an ECN decision at `at` (an ECT packet, a
    /// marker that tests there).
    #[inline]
    fn marks_at(&self, at: MarkAt, pkt: &Packet) -> bool {
        let here = match &self.marker {
            Some(Marker::Ramp(r)) => r.mark_at == at,
            Some(Marker::Step { mark_at, .. }) => *mark_at == at,
            None => false,
        };
        here && pkt.has(flags::ECT)
    }

    /// The marker's decision with `pkts` packets and `bytes` bytes counted
    /// at this output (the ramp reads the bytes, the step the capacity's unit).
    #[inline]
    fn signal(&self, pkts: u32, bytes: u64, cx: &mut QueueCtx<'_>) -> bool {
        match &self.marker {
            Some(Marker::Ramp(r)) => r.mark(bytes, cx),
            Some(Marker::Step { k, .. }) => self.cap.occupancy(pkts, bytes) > *k,
            None => false,
        }
    }

    /// Sets CE on `pkt` and reports it.
    fn mark(pkt: &mut Packet, cx: &mut QueueCtx<'_>) {
        pkt.flags |= flags::ECN_CE;
        cx.marked(pkt);
    }

    /// Whether the head of slot `i` may be served now: its priority is not
    /// paused, and its input is not busy feeding another output through
    /// the crossbar.
    #[inline]
    fn servable(&self, i: usize, cx: &QueueCtx<'_>) -> bool {
        let input_free = i == 0 || cx.input_free((i - 1) as u16);
        input_free
            && self.voqs[i]
                .front()
                .is_some_and(|p| self.paused & (1 << p.prio.min(7)) == 0)
    }
}

impl Discipline for VoqQueue {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if !self.cap.fits(self.pkts, self.bytes, pkt.size) {
            cx.dropped(pkt);
            return;
        }
        let i = cx.ingress.map_or(0, |p| p as usize + 1);
        if i >= self.voqs.len() {
            self.voqs.resize_with(i + 1, VecDeque::new);
        }
        cx.queued(&pkt);
        if self.marks_at(MarkAt::Enqueue, &pkt) && self.signal(self.pkts, self.bytes, cx) {
            Self::mark(&mut pkt, cx);
        }
        self.pkts += 1;
        self.bytes += pkt.size as u64;
        self.voqs[i].push_back(pkt);
    }

    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if self.pkts == 0 {
            return None;
        }
        let n = self.voqs.len();
        let i = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.servable(i, cx))?;
        let mut p = self.voqs[i].pop_front().expect("servable");
        self.next = (i + 1) % n;
        self.pkts -= 1;
        self.bytes -= p.size as u64;
        self.last = i.checked_sub(1).map(|port| port as u16);
        if self.marks_at(MarkAt::Dequeue, &p) {
            // The ramp reads what stays behind, as `ecn_ramp` does; the step
            // counts the leaving packet too, as `ecn` does.
            let (pkts, bytes) = match self.marker {
                Some(Marker::Step { .. }) => (self.pkts + 1, self.bytes + p.size as u64),
                _ => (self.pkts, self.bytes),
            };
            if self.signal(pkts, bytes, cx) {
                Self::mark(&mut p, cx);
            }
        }
        Some(p)
    }

    fn len_packets(&self) -> u32 {
        self.pkts
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    /// The round robin skips VOQs whose head has a paused priority.
    fn set_paused(&mut self, prio: u8, paused: bool) -> bool {
        let bit = 1 << prio.min(7);
        if paused {
            self.paused |= bit;
        } else {
            self.paused &= !bit;
        }
        true
    }

    fn dequeued_ingress(&self) -> Option<u16> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, with_prio, Kit};
    use crate::queue::Outcome::*;

    /// Offers packet `seq` (1000 B, priority `prio`) as if it came in on `input`.
    fn offer_from(k: &mut Kit, q: &mut VoqQueue, input: u16, seq: u64, prio: u8) {
        k.ingress = Some(input);
        k.fill(q, [with_prio(data(seq, 1000), prio)]);
    }

    fn big() -> VoqQueue {
        VoqQueue::new(Capacity::Packets(1000))
    }

    /// Inputs 1, 2, 3 with backlogs of 3 (seq = 10 × input + i): the output
    /// takes one packet from each in turn, and each input's packets in order.
    #[test]
    fn serves_inputs_round_robin_one_packet_per_turn_each_in_order() {
        let (mut k, mut q) = (Kit::new(0), big());
        for input in [1u16, 2, 3] {
            for i in 0..3 {
                offer_from(&mut k, &mut q, input, 10 * input as u64 + i, 0);
            }
        }
        assert_eq!(k.drain_seqs(&mut q), [10, 20, 30, 11, 21, 31, 12, 22, 32]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }

    /// Input 2 is idle: the turn passes from input 1 straight to input 3;
    /// a packet that arrives later at input 2 is served when the pointer
    /// reaches input 2 again.
    #[test]
    fn an_idle_input_is_skipped() {
        let (mut k, mut q) = (Kit::new(0), big());
        for (input, seq) in [(1, 10), (1, 11), (3, 30), (3, 31)] {
            offer_from(&mut k, &mut q, input, seq, 0);
        }
        assert_eq!(k.take(&mut q).unwrap().seq, 10);
        assert_eq!(k.take(&mut q).unwrap().seq, 30);
        offer_from(&mut k, &mut q, 2, 20, 0);
        assert_eq!(k.drain_seqs(&mut q), [11, 20, 31]);
    }

    /// With a crossbar, an input busy feeding another output is skipped
    /// in the turn, and taken again once free: inputs 1 and 2 each hold
    /// two packets; input 1 is busy until 100 ps. At 0 the output takes
    /// input 2's first packet; with input 2 busy too it takes nothing,
    /// though three packets wait; at 100 input 1 is free again, and its
    /// turn comes before input 2's.
    #[test]
    fn a_crossbar_skips_busy_inputs_and_serves_them_once_free() {
        let (mut k, mut q) = (Kit::new(0), big());
        for (input, seq) in [(1, 10), (1, 11), (2, 20), (2, 21)] {
            offer_from(&mut k, &mut q, input, seq, 0);
        }
        k.inputs_busy_until = vec![0, 100, 0];
        assert_eq!(k.take(&mut q).unwrap().seq, 20);
        assert_eq!(q.dequeued_ingress(), Some(2));
        k.inputs_busy_until[2] = 100;
        assert!(k.take(&mut q).is_none());
        assert_eq!(q.len_packets(), 3);
        k.at(100);
        assert_eq!(k.drain_seqs(&mut q), [10, 21, 11]);
    }

    /// The key: absent or false, no crossbar; true asks the switch for one,
    /// and the manifest writes the default out.
    #[test]
    fn the_crossbar_is_off_unless_asked_for() {
        let env = crate::queue::testkit::ROCE_ENV;
        let off = VoqConfig::default();
        assert!(!off.crossbar());
        assert_eq!(off.resolved(&env).crossbar, Some(false));
        let on = VoqConfig {
            crossbar: Some(true),
            ..Default::default()
        };
        assert!(on.crossbar());
        assert!(on.validate("switch.queue").is_ok());
    }

    /// A 1-packet input and a 100-packet input, the 100 queued first: the
    /// single packet leaves second, after one packet of the long backlog
    /// (a FIFO would send it 101st).
    #[test]
    fn a_one_packet_input_waits_one_turn_behind_a_hundred_packet_input() {
        let (mut k, mut q) = (Kit::new(0), big());
        for i in 0..100 {
            offer_from(&mut k, &mut q, 0, i, 0);
        }
        offer_from(&mut k, &mut q, 1, 1000, 0);
        let out = k.drain_seqs(&mut q);
        assert_eq!(out.iter().position(|&s| s == 1000), Some(1));
        assert_eq!(out.len(), 101);
    }

    /// The bound is the output's, over all VOQs: 3 packets of 1000 B fit
    /// in 3000 B whatever their inputs, the 4th is dropped.
    #[test]
    fn the_capacity_bounds_all_voqs_together() {
        let (mut k, mut q) = (Kit::new(0), VoqQueue::new(Capacity::Bytes(3000)));
        for (input, seq) in [(0, 0), (1, 1), (2, 2)] {
            offer_from(&mut k, &mut q, input, seq, 0);
        }
        k.ingress = Some(3);
        assert_eq!(k.offer(&mut q, data(3, 1000)), [(Dropped, 3)]);
        assert_eq!(q.len_bytes(), 3000);
    }

    /// The dequeued packet's input is named (None for a host's own packets),
    /// for PFC to release its charge there.
    #[test]
    fn names_the_input_of_each_dequeued_packet() {
        let (mut k, mut q) = (Kit::new(0), big());
        offer_from(&mut k, &mut q, 4, 40, 0);
        k.ingress = None;
        k.fill(&mut q, [data(99, 1000)]);
        assert_eq!(k.take(&mut q).unwrap().seq, 99);
        assert_eq!(q.dequeued_ingress(), None);
        assert_eq!(k.take(&mut q).unwrap().seq, 40);
        assert_eq!(q.dequeued_ingress(), Some(4));
    }

    /// With `ecn_ramp`'s keys it marks ECT packets on the output's bytes,
    /// all VOQs together: Kmin 2 KB, Kmax 5 KB at the kit's 10 Gb/s.
    /// Arrivals from three inputs finding 0, 1000 and 2000 B (at most Kmin)
    /// are not marked; one finding 6000 B (above Kmax) is. Without the keys
    /// it never marks.
    #[test]
    fn marks_on_the_outputs_bytes_with_the_ramp_keys() {
        let cfg: VoqConfig = toml::from_str(
            "queue_bytes = 100000\nkmin_kb = 2.0\nkmax_kb = 5.0\npmax = 0.5\nreference_gbps = 10.0",
        )
        .unwrap();
        cfg.validate("switch.queue").unwrap();
        assert!(cfg.marks_ecn() && !VoqConfig::default().marks_ecn());
        let (mut k, mut q) = (Kit::new(1), cfg.build(&crate::queue::testkit::ENV));
        let ect = |seq| {
            let mut p = data(seq, 1000);
            p.flags |= flags::ECT;
            p
        };
        for s in 0..6u64 {
            k.ingress = Some(s as u16 % 3);
            let out = k.offer(&mut q, ect(s));
            if s < 3 {
                assert_eq!(out, [(Queued, s)]);
            }
        }
        assert_eq!(k.offer(&mut q, ect(6)), [(Queued, 6), (Marked, 6)]);
        let e = toml::from_str::<VoqConfig>("kmin_kb = 5.0\nkmax_kb = 4.0")
            .unwrap()
            .validate("switch.queue")
            .unwrap_err()
            .to_string();
        assert!(e.contains("switch.queue.kmax_kb"), "{e}");
    }

    /// An ECT packet of 1000 B from input `seq % 3`.
    fn ect_from(k: &mut Kit, seq: u64) -> Packet {
        k.ingress = Some(seq as u16 % 3);
        let mut p = data(seq, 1000);
        p.flags |= flags::ECT;
        p
    }

    /// `ecn_threshold = 2` on a packet capacity: ECT arrivals finding 0, 1
    /// and 2 packets at the output (from three inputs) pass unmarked, those
    /// finding 3 and 4 are marked, a non-ECT arrival finding 5 is queued
    /// unmarked. No random draw is involved.
    #[test]
    fn the_step_marks_arrivals_that_find_more_than_k_packets() {
        let cfg: VoqConfig = toml::from_str("queue_packets = 10\necn_threshold = 2").unwrap();
        cfg.validate("switch.queue").unwrap();
        assert!(cfg.marks_ecn());
        assert_eq!(cfg.ecn_threshold_packets(), Some(2));
        let (mut k, mut q) = (Kit::new(0), cfg.build(&crate::queue::testkit::ENV));
        for s in 0..5u64 {
            let p = ect_from(&mut k, s);
            let mut want = vec![(Queued, s)];
            if s > 2 {
                want.push((Marked, s));
            }
            assert_eq!(k.offer(&mut q, p), want, "arrival {s}");
        }
        k.ingress = Some(1);
        assert_eq!(k.offer(&mut q, data(5, 1000)), [(Queued, 5)]);
        assert!(k
            .drain(&mut q)
            .iter()
            .all(|p| !p.has(flags::ECN_CE) || p.seq > 2));
    }

    /// `ecn_threshold = 2500` on a byte capacity, tested at dequeue with the
    /// leaving packet counted (as `ecn`): of four 1000 B packets, the first
    /// two leave with 4000 and 3000 B counted and are marked, the last two
    /// with 2000 and 1000 B are not. Nothing is marked on arrival.
    #[test]
    fn the_step_at_dequeue_counts_bytes_with_the_leaving_packet() {
        let cfg: VoqConfig =
            toml::from_str("queue_bytes = 100000\necn_threshold = 2500\nmark_at = \"dequeue\"")
                .unwrap();
        cfg.validate("switch.queue").unwrap();
        assert_eq!(cfg.ecn_threshold_packets(), None, "K is in bytes");
        let (mut k, mut q) = (Kit::new(0), cfg.build(&crate::queue::testkit::ENV));
        for s in 0..4u64 {
            let p = ect_from(&mut k, s);
            assert_eq!(k.offer(&mut q, p), [(Queued, s)]);
        }
        let marked: Vec<bool> = k
            .drain(&mut q)
            .iter()
            .map(|p| p.has(flags::ECN_CE))
            .collect();
        assert_eq!(marked, [true, true, false, false]);
    }

    /// The step and the ramp are exclusive, and the error names the key;
    /// `mark_at` with `ecn_threshold` is the step's, not a ramp.
    #[test]
    fn the_step_and_the_ramp_are_exclusive() {
        let both: VoqConfig = toml::from_str("ecn_threshold = 30\nkmin_kb = 5.0").unwrap();
        let e = both.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.ecn_threshold"), "{e}");
        let step: VoqConfig = toml::from_str("ecn_threshold = 30\nmark_at = \"dequeue\"").unwrap();
        assert!(step.ramp().is_none());
        let r = step.resolved(&crate::queue::testkit::ENV);
        assert_eq!(
            (r.ecn_threshold, r.mark_at),
            (Some(30), Some(MarkAt::Dequeue))
        );
        assert!(r.kmin_kb.is_none());
    }

    /// Priority 3 paused: input 1 (priority 3 at its head) is not served,
    /// input 2 (priority 0) is; nothing is left to serve until the resume.
    #[test]
    fn a_paused_priority_is_not_served() {
        let (mut k, mut q) = (Kit::new(0), big());
        offer_from(&mut k, &mut q, 1, 10, 3);
        offer_from(&mut k, &mut q, 1, 11, 0);
        offer_from(&mut k, &mut q, 2, 20, 0);
        assert!(q.set_paused(3, true), "holds the priority back itself");
        assert_eq!(k.take(&mut q).unwrap().seq, 20);
        assert!(k.take(&mut q).is_none(), "11 waits behind 10 in its VOQ");
        assert_eq!(q.len_packets(), 2);
        q.set_paused(3, false);
        assert_eq!(k.drain_seqs(&mut q), [10, 11]);
    }
}
