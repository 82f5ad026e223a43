//! Traffic classes: a classifier, a discipline per class, and a scheduler
//! across the classes.
//!
//! The NDP paper's answer to deployment next to TCP ([P] §3, [O]) is the
//! default: two classes by protocol family (NDP and the pHost stand-in in class 0, every
//! other protocol in class 1), NDP's trimming port for class 0, a 200-packet
//! ECN queue with K = 30 for class 1, and deficit round robin between them,
//! so that NDP keeps its tiny queue and TCP gets a large one it can fill
//! without hurting NDP. Any registered discipline can be a class; classes
//! can also be chosen by the packet's `prio` field (8 strict levels for RC3
//! or PFC classes).
//!
//! Schedulers:
//! * `drr`: deficit round robin (Shreedhar & Varghese, SIGCOMM 1995) with a
//!   quantum of one full packet per round, in its "send while the deficit is
//!   positive, carry the overdraft" form, which needs no peek at the next
//!   packet (a class discipline such as NDP's decides that only on dequeue):
//!   each backlogged class gets an equal share of bytes, and an idle class's
//!   share goes to the others (work conserving);
//! * `wrr`: weighted round robin, `weights[c]` packets per turn (the same
//!   loop with a cost of one per packet);
//! * `strict`: the lowest-numbered backlogged class first.
//!
//! Within a class, the class's own discipline picks the packet (NDP's header
//! queue still goes first within NDP's share).
//!
//! | parameter (`[switch.queue] kind = "classes"`) | default | source |
//! |---|---|---|
//! | `classify` | `"protocol"` (`"prio"`: class = min(prio, classes − 1)) | [P] §3 |
//! | `scheduler` | `"drr"` | [P] §3 ("fair queueing between the classes"); Shreedhar & Varghese 1995 |
//! | `quantum_bytes` (drr) | one full packet of the traffic: the largest MTU (or MSS) payload of `[[traffic]]`'s protocols + 64 B header (docs/disciplines.md) | DRR needs a quantum of at least one packet for O(1) work |
//! | `weights` (wrr) | 1 packet per class | — |
//! | `class` (array of discipline tables, `[[switch.queue.class]]`) | `ndp` defaults, then `ecn` defaults (200 packets, K = 30) | [P] §3, §6.1 |

use super::{Discipline, DisciplineConfig, Queue, QueueConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// The protocol class of a packet: 0 for NDP-family protocols, 1 for the rest.
#[inline]
pub fn class_of(pkt: &Packet) -> usize {
    pkt.proto.switch_class() as usize
}

/// Most classes a port may have (a 3-bit priority).
pub const MAX_CLASSES: usize = 8;

/// How a packet's class is chosen.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Classify {
    /// By protocol family ([`class_of`]); needs exactly two classes.
    #[default]
    Protocol,
    /// By the packet's `prio` field; above the last class, the last class.
    Prio,
}

/// How the classes share the link.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    /// Deficit round robin over bytes.
    #[default]
    Drr,
    /// Weighted round robin over packets.
    Wrr,
    /// Strict priority, class 0 first.
    Strict,
}

/// `kind = "classes"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassesConfig {
    /// Classifier.
    pub classify: Classify,
    /// Scheduler across classes.
    pub scheduler: Scheduler,
    /// DRR quantum, bytes (default: the traffic's full packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum_bytes: Option<u64>,
    /// WRR packets per turn, one per class (default 1 each).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<u32>,
    /// The classes' disciplines, class 0 first.
    pub class: Vec<QueueConfig>,
}

impl Default for ClassesConfig {
    fn default() -> Self {
        ClassesConfig {
            classify: Classify::Protocol,
            scheduler: Scheduler::Drr,
            quantum_bytes: None,
            weights: Vec::new(),
            class: vec![
                QueueConfig::Ndp(Default::default()),
                QueueConfig::Ecn(Default::default()),
            ],
        }
    }
}

impl DisciplineConfig for ClassesConfig {
    type Queue = Box<ClassQueue>;
    fn marks_ecn(&self) -> bool {
        self.class.iter().any(QueueConfig::marks_ecn)
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let n = self.class.len();
        if self.classify == Classify::Protocol && n != 2 {
            let msg = "classify = \"protocol\" needs two classes (NDP family, the rest)";
            return Err(bad(&format!("{key}.class"), n, msg));
        }
        if !(1..=MAX_CLASSES).contains(&n) {
            return Err(bad(&format!("{key}.class"), n, "needs 1 to 8 classes"));
        }
        if self.quantum_bytes == Some(0) {
            return Err(bad(
                &format!("{key}.quantum_bytes"),
                0,
                "must be at least 1",
            ));
        }
        let w = &self.weights;
        if !w.is_empty() && (self.scheduler != Scheduler::Wrr || w.len() != n || w.contains(&0)) {
            let msg = "with scheduler = \"wrr\" only: one weight of at least 1 per class";
            return Err(bad(&format!("{key}.weights"), format!("{w:?}"), msg));
        }
        for (i, c) in self.class.iter().enumerate() {
            c.validate(&format!("{key}.class[{i}]"))?;
            if let QueueConfig::Lstf(l) = c {
                if l.preemptive {
                    let msg = "a class cannot preempt the port's other classes: preemption is for an lstf port discipline";
                    return Err(bad(&format!("{key}.class[{i}].preemptive"), true, msg));
                }
            }
        }
        Ok(())
    }
    fn build(&self, env: &QueueEnv) -> Box<ClassQueue> {
        let n = self.class.len();
        let quantum: Vec<i64> = match self.scheduler {
            Scheduler::Drr => {
                let q = self.quantum_bytes.unwrap_or(env.packet_bytes);
                vec![q as i64; n]
            }
            Scheduler::Wrr if self.weights.is_empty() => vec![1; n],
            Scheduler::Wrr => self.weights.iter().map(|&w| w as i64).collect(),
            Scheduler::Strict => vec![0; n],
        };
        Box::new(ClassQueue {
            classes: self.class.iter().map(|c| c.build(env)).collect(),
            deficit: vec![0; n],
            quantum,
            classify: self.classify,
            scheduler: self.scheduler,
            turn: 0,
            credited: false,
            paused_prios: 0,
            paused: 0,
        })
    }
    fn ecn_threshold_packets(&self) -> Option<u32> {
        self.class
            .iter()
            .find_map(QueueConfig::ecn_threshold_packets)
    }
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        match self.scheduler {
            Scheduler::Drr => {
                c.quantum_bytes.get_or_insert(env.packet_bytes);
            }
            Scheduler::Wrr if c.weights.is_empty() => c.weights = vec![1; c.class.len()],
            _ => {}
        }
        c.class = self.class.iter().map(|q| q.resolved(env)).collect();
        c
    }
    /// By priority, over classes that each keep order: one priority's
    /// packets share a class, so their order is kept.
    fn keeps_priority_order(&self) -> bool {
        self.classify == Classify::Prio && self.class.iter().all(QueueConfig::keeps_priority_order)
    }
}

/// Per-class queues under a scheduler.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ClassQueue {
    classes: Vec<Queue>,
    /// Credit of each class in its turn: bytes (DRR) or packets (WRR).
    deficit: Vec<i64>,
    /// Credit per turn.
    quantum: Vec<i64>,
    classify: Classify,
    scheduler: Scheduler,
    /// Class whose turn it is.
    turn: usize,
    /// Whether the class at `turn` already got this round's quantum.
    credited: bool,
    /// Paused priorities (PFC), one bit each.
    paused_prios: u8,
    /// Classes held back by a pause, one bit each.
    paused: u8,
}

impl ClassQueue {
    #[inline]
    fn class(&self, pkt: &Packet) -> usize {
        match self.classify {
            Classify::Protocol => class_of(pkt),
            Classify::Prio => (pkt.prio as usize).min(self.classes.len() - 1),
        }
    }

    /// Whether class `c` may be served now (has packets, not paused).
    #[inline]
    fn servable(&self, c: usize) -> bool {
        self.paused & (1 << c) == 0 && self.classes[c].len_packets() > 0
    }

    /// Whether any class may be served now.
    #[inline]
    fn any_servable(&self) -> bool {
        if self.paused == 0 {
            return self.len_packets() > 0;
        }
        (0..self.classes.len()).any(|c| self.servable(c))
    }

    fn next_turn(&mut self) {
        self.turn = (self.turn + 1) % self.classes.len();
        self.credited = false;
    }

    /// Round robin with credit (DRR: bytes, WRR: packets).
    fn round_robin(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        while self.any_servable() {
            let c = self.turn;
            if self.paused & (1 << c) != 0 {
                // Paused: it keeps its credit and waits for the resume.
                self.next_turn();
                continue;
            }
            if self.classes[c].len_packets() == 0 {
                // An idle class keeps no credit (DRR).
                self.deficit[c] = 0;
                self.next_turn();
                continue;
            }
            if !self.credited {
                self.deficit[c] += self.quantum[c];
                self.credited = true;
            }
            if self.deficit[c] > 0 {
                // A class may drop at dequeue and return nothing: next turn.
                let p = self.classes[c].dequeue(cx);
                if let Some(p) = &p {
                    self.deficit[c] -= match self.scheduler {
                        Scheduler::Drr => p.size as i64,
                        _ => 1,
                    };
                }
                if self.classes[c].len_packets() == 0 {
                    self.deficit[c] = 0;
                    self.next_turn();
                }
                if p.is_some() {
                    return p;
                }
                continue;
            }
            self.next_turn();
        }
        None
    }
}

impl Discipline for ClassQueue {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let c = self.class(&pkt);
        self.classes[c].enqueue(pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        match self.scheduler {
            Scheduler::Strict => {
                let paused = self.paused;
                self.classes
                    .iter_mut()
                    .enumerate()
                    .filter(|(c, q)| paused & (1 << c) == 0 && q.len_packets() > 0)
                    .find_map(|(_, q)| q.dequeue(cx))
            }
            Scheduler::Drr | Scheduler::Wrr => self.round_robin(cx),
        }
    }

    fn len_packets(&self) -> u32 {
        self.classes.iter().map(Queue::len_packets).sum()
    }
    fn len_bytes(&self) -> u64 {
        self.classes.iter().map(Queue::len_bytes).sum()
    }

    /// By priority, a pause holds back the class of that priority (a class
    /// with several priorities while any of them is paused); by protocol,
    /// the port must stop instead.
    fn set_paused(&mut self, prio: u8, paused: bool) -> bool {
        if self.classify != Classify::Prio {
            return false;
        }
        if paused {
            self.paused_prios |= 1 << prio;
        } else {
            self.paused_prios &= !(1 << prio);
        }
        let last = self.classes.len() - 1;
        self.paused = (0..8u8)
            .filter(|p| self.paused_prios & (1 << p) != 0)
            .fold(0, |m, p| m | 1 << (p as usize).min(last));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, PacketKind, Protocol};
    use crate::queue::droptail::DropTailConfig;
    use crate::queue::testkit::{data, with_prio, Kit};

    fn pkt(proto: Protocol, seq: u64, size: u32) -> Packet {
        let mut p = test_packet(PacketKind::Data, seq, size);
        p.proto = proto;
        p
    }

    const ENV: QueueEnv = QueueEnv {
        mtu: 9000,
        packet_bytes: 9064,
        switch_k: None,
        switch: None,
        seed: 0,
    };

    /// `n` 1000-packet drop-tail classes.
    fn fifos(n: usize, classify: Classify, scheduler: Scheduler) -> ClassesConfig {
        let big = QueueConfig::DropTail(DropTailConfig {
            queue_packets: Some(1000),
            queue_bytes: None,
        });
        ClassesConfig {
            classify,
            scheduler,
            class: vec![big; n],
            ..Default::default()
        }
    }

    /// Both classes backlogged with equal packets: service alternates, and
    /// over any prefix each class's bytes differ by at most one quantum.
    #[test]
    fn backlogged_classes_share_bytes_equally() {
        let cfg = fifos(2, Classify::Protocol, Scheduler::Drr);
        let (mut k, mut q) = (Kit::new(0), cfg.build(&ENV));
        for i in 0..100 {
            k.offer(&mut q, pkt(Protocol::Ndp, i, 9064));
            // TCP sends smaller packets: 1500 B. Fairness is in bytes, not packets.
            for j in 0..6 {
                k.offer(&mut q, pkt(Protocol::Tcp, i * 6 + j, 1500));
            }
        }
        let mut bytes = [0u64; 2];
        for _ in 0..300 {
            let p = k.take(&mut q).expect("backlogged");
            bytes[class_of(&p)] += p.size as u64;
            assert!(bytes[0].abs_diff(bytes[1]) <= 2 * 9064, "{bytes:?}");
        }
    }

    #[test]
    fn an_idle_class_leaves_the_link_to_the_other() {
        let cfg = fifos(2, Classify::Protocol, Scheduler::Drr);
        let (mut k, mut q) = (Kit::new(0), cfg.build(&ENV));
        k.fill(&mut q, (0..5).map(|i| pkt(Protocol::Tcp, i, 9064)));
        assert_eq!(k.drain_seqs(&mut q), [0, 1, 2, 3, 4]);
        assert_eq!(q.len_packets(), 0);
    }

    #[test]
    fn strict_priority_by_prio_serves_lower_classes_first() {
        let cfg = fifos(3, Classify::Prio, Scheduler::Strict);
        let (mut k, mut q) = (Kit::new(0), cfg.build(&ENV));
        // prio 7 falls into the last class.
        let prios = [2, 0, 7, 1, 0, 2];
        k.fill(
            &mut q,
            (0..6).map(|s| with_prio(data(s, 100), prios[s as usize])),
        );
        assert_eq!(k.drain_seqs(&mut q), [1, 4, 3, 0, 2, 5]);
    }

    /// PFC: by priority, a paused priority's class waits (under DRR and
    /// strict priority alike) while the others are served; a resume
    /// releases it in order.
    #[test]
    fn a_paused_priority_waits_while_the_others_are_served() {
        for sched in [Scheduler::Drr, Scheduler::Strict] {
            let cfg = fifos(2, Classify::Prio, sched);
            let (mut k, mut q) = (Kit::new(0), cfg.build(&ENV));
            assert!(q.set_paused(0, true));
            let prios = [0, 1, 0, 1];
            k.fill(
                &mut q,
                (0..4).map(|s| with_prio(data(s, 100), prios[s as usize])),
            );
            assert_eq!(k.drain_seqs(&mut q), [1, 3], "{sched:?}");
            assert_eq!(q.len_packets(), 2);
            assert!(q.set_paused(0, false));
            assert_eq!(k.drain_seqs(&mut q), [0, 2], "{sched:?}");
        }
        let by_protocol = ClassesConfig::default().build(&ENV);
        assert!(
            !by_protocol.clone().set_paused(0, true),
            "cannot pause by priority"
        );
    }

    #[test]
    fn wrr_serves_weights_in_packets() {
        let mut cfg = fifos(2, Classify::Prio, Scheduler::Wrr);
        cfg.weights = vec![3, 1];
        let (mut k, mut q) = (Kit::new(0), cfg.build(&ENV));
        k.fill(&mut q, (0..8).map(|s| with_prio(data(s, 100), 0)));
        k.fill(&mut q, (10..14).map(|s| with_prio(data(s, 9000), 1)));
        assert_eq!(
            k.drain_seqs(&mut q),
            [0, 1, 2, 10, 3, 4, 5, 11, 6, 7, 12, 13]
        );
    }

    #[test]
    fn validation_names_the_key() {
        let mut cfg = fifos(3, Classify::Protocol, Scheduler::Drr);
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.class = 3"), "{e}");
        cfg.classify = Classify::Prio;
        cfg.weights = vec![1, 1, 1];
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(e.starts_with("switch.queue.weights"), "{e}");
        cfg.scheduler = Scheduler::Wrr;
        cfg.class[2] = QueueConfig::DropTail(DropTailConfig {
            queue_packets: Some(0),
            queue_bytes: None,
        });
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(
            e.starts_with("switch.queue.class[2].queue_packets = 0"),
            "{e}"
        );
        cfg.class[2] = QueueConfig::Lstf(crate::queue::lstf::LstfConfig {
            preemptive: true,
            ..Default::default()
        });
        let e = cfg.validate("switch.queue").unwrap_err().to_string();
        assert!(
            e.starts_with("switch.queue.class[2].preemptive = true"),
            "{e}"
        );
    }
}
