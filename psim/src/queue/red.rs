//! ECN marking queues: DCTCP's instantaneous threshold and RED.
//!
//! A FIFO with a tail-drop capacity, plus an early-congestion signal taken
//! on each arrival. A signalled packet that is ECN-capable (`ECT`) is
//! marked CE and queued. One that is not (pure ACKs, RFC 3168 §6.1.4) is
//! dropped by RED, as RFC 3168 §5 requires of an ECN-enabled RED router,
//! but passes unmarked through the DCTCP threshold, which is a marking
//! rule, not an AQM (as in htsim's ECN queue; dropping ACKs above K would
//! punish the reverse path of every loaded link).
//!
//! | `[switch.queue] kind` | signal | parameters, defaults, source |
//! |---|---|---|
//! | `"ecn"` (threshold) | queue occupancy on arrival greater than K | `ecn_threshold` K = 30 ([`DEFAULT_ECN_THRESHOLD_PACKETS`]), `queue_packets` = 200 ([`DEFAULT_ECN_QUEUE_PACKETS`]): [P] §6.1 for DCTCP; RFC 8257 §3.1 / Alizadeh et al. §3.1 ("mark ... if the queue occupancy is greater than K upon its arrival"); `red_ecn` = true |
//! | `"red"` | RED's average queue (Floyd & Jacobson 1993): below `red_min` none; above `red_max` always; in between with probability `p_b / (1 − count·p_b)`, `p_b = max_p (avg − min)/(max − min)` | `red_min` = 5, `red_max` = 15 (packets, or bytes with `queue_bytes`), `red_max_p` = 0.1, `red_weight` = 0.002 (Floyd & Jacobson §4 / RFC 2309 era defaults), `red_ecn` = true, `queue_packets` = 200 |
//!
//! `mark_at` (`"ecn"` only) chooses when the threshold is tested:
//! `"enqueue"` (default; the DCTCP paper and RFC 8257 §3.1) or `"dequeue"`,
//! as htsim's ECN queue does ([C] `sim/ecnqueue.cpp`: a packet leaving while
//! the queue, itself included, holds more than K). psim tests at the start
//! of the packet's transmission; htsim at its end, so htsim also counts the
//! arrivals during that one serialisation.
//!
//! Thresholds are in the unit of the capacity (packets or bytes). RED's
//! average is updated on arrivals only; the idle-time decay of the original
//! algorithm is not modelled, so after an idle period the average starts
//! where it was left (it is then high for a few arrivals at most, at the
//! default weight).

use super::{
    capacity, Capacity, Discipline, DisciplineConfig, DropTail, MarkAt, QueueCtx, QueueEnv,
};
use crate::config::{bad, ConfigError};
use crate::packet::{flags, Packet};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// Default DCTCP marking threshold, packets ([P] §6.1).
pub const DEFAULT_ECN_THRESHOLD_PACKETS: u32 = 30;
/// Default buffer of the TCP-family comparisons, packets ([P] §6.1).
pub const DEFAULT_ECN_QUEUE_PACKETS: u32 = 200;

/// RED's default minimum threshold (Floyd & Jacobson §4).
pub const DEFAULT_RED_MIN: f64 = 5.0;
/// RED's default maximum threshold (Floyd & Jacobson §4).
pub const DEFAULT_RED_MAX: f64 = 15.0;
/// RED's default marking probability at the maximum threshold (Floyd & Jacobson §4).
pub const DEFAULT_RED_MAX_P: f64 = 0.1;
/// RED's default EWMA weight (Floyd & Jacobson §4).
pub const DEFAULT_RED_WEIGHT: f64 = 0.002;

fn default_capacity(key: &str, p: Option<u32>, b: Option<u64>) -> Result<Capacity, ConfigError> {
    capacity(key, p, b, Capacity::Packets(DEFAULT_ECN_QUEUE_PACKETS))
}

/// `kind = "ecn"`: DCTCP's threshold marking.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EcnConfig {
    /// Capacity in packets (default [`DEFAULT_ECN_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// K, in the capacity's unit.
    pub ecn_threshold: u64,
    /// Mark ECN-capable packets (true) or drop every signalled packet.
    pub red_ecn: bool,
    /// When the threshold is tested.
    pub mark_at: MarkAt,
}

impl Default for EcnConfig {
    fn default() -> Self {
        EcnConfig {
            queue_packets: None,
            queue_bytes: None,
            ecn_threshold: DEFAULT_ECN_THRESHOLD_PACKETS as u64,
            red_ecn: true,
            mark_at: MarkAt::Enqueue,
        }
    }
}

impl DisciplineConfig for EcnConfig {
    type Queue = RedQueue;
    fn marks_ecn(&self) -> bool {
        self.red_ecn
    }
    /// K (or red_min/red_max) counts in the capacity's unit.
    fn thresholds_follow_capacity(&self) -> bool {
        true
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        default_capacity(key, self.queue_packets, self.queue_bytes).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> RedQueue {
        let cap = default_capacity("", self.queue_packets, self.queue_bytes).expect("validated");
        let k = self.ecn_threshold;
        let mut q = RedQueue::new(cap, Marking::Threshold { k }, self.red_ecn);
        q.mark_at = self.mark_at;
        q
    }
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        super::resolve_capacity(
            &mut c.queue_packets,
            c.queue_bytes,
            DEFAULT_ECN_QUEUE_PACKETS,
        );
        c
    }
    fn ecn_threshold_packets(&self) -> Option<u32> {
        self.queue_bytes
            .is_none()
            .then_some(self.ecn_threshold as u32)
    }
    /// A FIFO: order kept, drops only at enqueue.
    fn keeps_priority_order(&self) -> bool {
        true
    }
}

/// `kind = "red"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedConfig {
    /// Capacity in packets (default [`DEFAULT_ECN_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Minimum threshold, in the capacity's unit.
    pub red_min: f64,
    /// Maximum threshold.
    pub red_max: f64,
    /// Marking probability at the maximum threshold.
    pub red_max_p: f64,
    /// EWMA weight of the average queue.
    pub red_weight: f64,
    /// Mark ECN-capable packets (true) or drop every signalled packet.
    pub red_ecn: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            queue_packets: None,
            queue_bytes: None,
            red_min: DEFAULT_RED_MIN,
            red_max: DEFAULT_RED_MAX,
            red_max_p: DEFAULT_RED_MAX_P,
            red_weight: DEFAULT_RED_WEIGHT,
            red_ecn: true,
        }
    }
}

impl DisciplineConfig for RedConfig {
    type Queue = RedQueue;
    fn marks_ecn(&self) -> bool {
        self.red_ecn
    }
    /// K (or red_min/red_max) counts in the capacity's unit.
    fn thresholds_follow_capacity(&self) -> bool {
        true
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        default_capacity(key, self.queue_packets, self.queue_bytes)?;
        let (min, max) = (self.red_min, self.red_max);
        if !(min >= 0.0 && max > min) {
            return Err(bad(
                &format!("{key}.red_max"),
                max,
                "must exceed red_min, and red_min must be at least 0",
            ));
        }
        if !(self.red_max_p > 0.0 && self.red_max_p <= 1.0) {
            let k = format!("{key}.red_max_p");
            return Err(bad(&k, self.red_max_p, "must be in (0, 1]"));
        }
        if !(self.red_weight > 0.0 && self.red_weight <= 1.0) {
            let k = format!("{key}.red_weight");
            return Err(bad(&k, self.red_weight, "must be in (0, 1]"));
        }
        Ok(())
    }
    fn build(&self, _env: &QueueEnv) -> RedQueue {
        let cap = default_capacity("", self.queue_packets, self.queue_bytes).expect("validated");
        let marking = Marking::Red {
            min: self.red_min,
            max: self.red_max,
            max_p: self.red_max_p,
            weight: self.red_weight,
        };
        RedQueue::new(cap, marking, self.red_ecn)
    }
    /// A FIFO: order kept, drops only at enqueue.
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        super::resolve_capacity(
            &mut c.queue_packets,
            c.queue_bytes,
            DEFAULT_ECN_QUEUE_PACKETS,
        );
        c
    }
    fn keeps_priority_order(&self) -> bool {
        true
    }
}

/// How a marking queue decides to signal congestion.
#[derive(Copy, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Marking {
    /// Signal when the instantaneous occupancy exceeds the threshold (DCTCP).
    Threshold {
        /// K, in the capacity's unit.
        k: u64,
    },
    /// Random early detection on the average occupancy.
    Red {
        /// Minimum threshold.
        min: f64,
        /// Maximum threshold.
        max: f64,
        /// Marking probability at `max`.
        max_p: f64,
        /// EWMA weight of the average.
        weight: f64,
    },
}

/// A FIFO that ECN-marks (or early-drops) on congestion and tail-drops when full.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RedQueue {
    marking: Marking,
    /// Mark ECT packets (true) or drop every signalled packet (false).
    ecn: bool,
    /// When a threshold marking is tested (RED always tests on arrival).
    mark_at: MarkAt,
    fifo: DropTail,
    avg: f64,
    count: i64,
    /// Packets marked CE here.
    pub marked: u64,
    /// Packets dropped early (signalled, not ECN-capable).
    pub early_drops: u64,
}

impl RedQueue {
    /// An empty queue.
    pub fn new(cap: Capacity, marking: Marking, ecn: bool) -> Self {
        RedQueue {
            marking,
            ecn,
            mark_at: MarkAt::Enqueue,
            fifo: DropTail::new(cap),
            avg: 0.0,
            count: -1,
            marked: 0,
            early_drops: 0,
        }
    }

    /// Sets CE on `pkt`, counts it and reports it.
    fn mark(&mut self, pkt: &mut Packet, cx: &mut QueueCtx<'_>) {
        pkt.flags |= flags::ECN_CE;
        self.marked += 1;
        cx.marked(pkt);
    }

    fn signal(&mut self, cx: &mut QueueCtx<'_>) -> bool {
        let occ = self.fifo.occupancy();
        match self.marking {
            Marking::Threshold { k } => occ > k,
            Marking::Red {
                min,
                max,
                max_p,
                weight,
            } => {
                self.avg = (1.0 - weight) * self.avg + weight * occ as f64;
                if self.avg < min {
                    self.count = -1;
                    false
                } else if self.avg >= max {
                    self.count = 0;
                    true
                } else {
                    self.count += 1;
                    let pb = max_p * (self.avg - min) / (max - min);
                    let denom = 1.0 - self.count as f64 * pb;
                    let pa = if denom <= 0.0 { 1.0 } else { pb / denom };
                    if cx.rng.random::<f64>() < pa {
                        self.count = 0;
                        true
                    } else {
                        false
                    }
                }
            }
        }
    }
}

impl Discipline for RedQueue {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if !self.fifo.has_room(pkt.size) {
            cx.dropped(pkt);
            return;
        }
        let mut mark = false;
        if self.mark_at == MarkAt::Enqueue && self.signal(cx) {
            if self.ecn && pkt.has(flags::ECT) {
                mark = true;
            } else if self.ecn && matches!(self.marking, Marking::Threshold { .. }) {
                // Not ECN-capable: the threshold only marks.
            } else {
                self.early_drops += 1;
                cx.dropped(pkt);
                return;
            }
        }
        cx.queued(&pkt);
        if mark {
            self.mark(&mut pkt, cx);
        }
        let admitted = self.fifo.push(pkt, cx.pool);
        debug_assert!(admitted.is_ok(), "room was checked");
    }

    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if self.mark_at == MarkAt::Enqueue {
            return self.fifo.dequeue(cx);
        }
        // Tested with the leaving packet still counted.
        let over = self.signal(cx);
        let mut pkt = self.fifo.dequeue(cx)?;
        if over && self.ecn && pkt.has(flags::ECT) {
            self.mark(&mut pkt, cx);
        }
        Some(pkt)
    }
    fn len_packets(&self) -> u32 {
        self.fifo.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;
    use crate::queue::testkit::{control, data, Kit};
    use crate::queue::Outcome::*;

    fn ect(seq: u64) -> Packet {
        let mut p = data(seq, 1000);
        p.flags |= flags::ECT;
        p
    }

    /// `mark_at = "dequeue"`: with K = 3 and six packets queued, the first
    /// three leave with 6, 5, 4 packets counted (themselves included) and are
    /// marked; the rest leave with 3, 2, 1 and are not. Nothing is marked on arrival.
    #[test]
    fn dequeue_marking_tests_the_queue_with_the_leaving_packet() {
        let mut k = Kit::new(0);
        let cfg = EcnConfig {
            queue_packets: Some(10),
            ecn_threshold: 3,
            mark_at: MarkAt::Dequeue,
            ..EcnConfig::default()
        };
        let mut q = cfg.build(&crate::queue::testkit::ROCE_ENV);
        k.fill(&mut q, (0..6).map(ect));
        assert_eq!(q.marked, 0);
        let out = k.drain(&mut q);
        let marked: Vec<bool> = out.iter().map(|p| p.has(flags::ECN_CE)).collect();
        assert_eq!(marked, [true, true, true, false, false, false]);
        assert_eq!(q.marked, 3);
    }

    #[test]
    fn threshold_marks_arrivals_above_k_and_drops_at_capacity() {
        let mut k = Kit::new(0);
        let mut q = RedQueue::new(Capacity::Packets(6), Marking::Threshold { k: 3 }, true);
        // Occupancy on arrival 0,1,2,3 -> not above 3; 4,5 -> marked; the 7th finds the queue full.
        k.fill(&mut q, (0..4).map(ect));
        assert_eq!(k.offer(&mut q, ect(4)), [(Queued, 4), (Marked, 4)]);
        assert_eq!(k.offer(&mut q, ect(5)), [(Queued, 5), (Marked, 5)]);
        assert_eq!(k.offer(&mut q, ect(6)), [(Dropped, 6)]);
        let ce: Vec<bool> = k
            .drain(&mut q)
            .iter()
            .map(|p| p.has(flags::ECN_CE))
            .collect();
        assert_eq!(ce, [false, false, false, false, true, true]);
        assert_eq!(q.marked, 2);
    }

    #[test]
    fn a_signalled_packet_without_ect_is_dropped_by_red_but_not_by_the_threshold() {
        let mut k = Kit::new(0);
        let mut q = RedQueue::new(Capacity::Packets(10), Marking::Threshold { k: 0 }, true);
        k.fill(&mut q, [ect(0), control(PacketKind::Ack, 1)]);
        let red = Marking::Red {
            min: 0.0,
            max: 0.5,
            max_p: 1.0,
            weight: 1.0,
        };
        let mut q = RedQueue::new(Capacity::Packets(10), red, true);
        k.fill(&mut q, [ect(0)]);
        assert_eq!(k.offer(&mut q, control(PacketKind::Ack, 1)), [(Dropped, 1)]);
        assert_eq!(q.early_drops, 1);
        assert_eq!(q.len_packets(), 1);
    }

    /// With the average held between the thresholds, RED's count-based
    /// probability p_b / (1 − count·p_b) makes the gap X between marks
    /// uniform: P(X > n) = (1 − (n+1)·p_b) / (1 − p_b), so X is uniform on
    /// {1, …, 1/p_b − 1}, with mean 1/(2·p_b): a long-run mark fraction of
    /// 2·p_b (Floyd & Jacobson §7).
    #[test]
    fn red_mark_rate_matches_its_closed_form() {
        let mut k = Kit::new(7);
        // weight 1: avg = instantaneous occupancy; hold it at 10 of [5, 15] -> p_b = 0.05.
        let marking = Marking::Red {
            min: 5.0,
            max: 15.0,
            max_p: 0.1,
            weight: 1.0,
        };
        let mut q = RedQueue::new(Capacity::Packets(100), marking, true);
        for i in 0..10 {
            k.offer(&mut q, ect(i));
        }
        let (n, mut marks) = (200_000, 0u64);
        for i in 0..n {
            if k.offer(&mut q, ect(i)).contains(&(Marked, i)) {
                marks += 1;
            }
            k.take(&mut q);
        }
        let pb: f64 = 0.05;
        let expected = 2.0 * pb;
        let got = marks as f64 / n as f64;
        assert!((got - expected).abs() < 0.004, "{got} vs {expected}");
    }
}
