//! Two traffic classes with fair queueing between them: NDP beside TCP.
//!
//! The NDP paper's answer to deployment next to TCP ([P] §3, [O]): put the
//! two in separate switch classes and share the link fairly between the
//! classes, so that NDP keeps its tiny trimming queue and TCP gets a large
//! one it can fill without hurting NDP. Packets of NDP and pHost flows go to
//! class 0, every other protocol to class 1. Each class has its own
//! discipline (`[switch] queue = "classes"`: class 0 is the NDP port of the
//! `[switch]` NDP keys; class 1 is chosen by `tcp_class_queue`, default a
//! 200-packet ECN queue with K = 30).
//!
//! Scheduling is deficit round robin (Shreedhar & Varghese, SIGCOMM 1995)
//! with a quantum of one full packet per round, in its "send while the
//! deficit is positive, carry the overdraft" form, which needs no peek at
//! the next packet (a class discipline such as NDP's decides that only on
//! dequeue): each backlogged class gets an equal share of bytes, and an idle
//! class's share goes to the other (work conserving). Within a class, the class's own discipline picks the
//! packet (NDP's header queue still goes first within NDP's share).

use super::{Discipline, Queue, QueueCtx};
use crate::packet::Packet;

/// Number of classes.
const CLASSES: usize = 2;

/// The class of a packet: 0 for NDP-family protocols, 1 for the rest.
#[inline]
pub fn class_of(pkt: &Packet) -> usize {
    if pkt.proto.is_ndp_family() {
        0
    } else {
        1
    }
}

/// Per-class queues under deficit round robin.
#[derive(Clone, Debug)]
pub struct ClassQueue {
    classes: [Queue; CLASSES],
    deficit: [i64; CLASSES],
    quantum: i64,
    /// Class whose turn it is.
    turn: usize,
    /// Whether the class at `turn` already got this round's quantum.
    credited: bool,
}

impl ClassQueue {
    /// Two classes, `quantum` bytes per round each.
    pub fn new(ndp: Queue, other: Queue, quantum: u64) -> Self {
        ClassQueue {
            classes: [ndp, other],
            deficit: [0; CLASSES],
            quantum: quantum.max(1) as i64,
            turn: 0,
            credited: false,
        }
    }

    fn next_turn(&mut self) {
        self.turn = (self.turn + 1) % CLASSES;
        self.credited = false;
    }
}

impl Discipline for ClassQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let c = class_of(&pkt);
        self.classes[c].enqueue(pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if self.classes.iter().all(|q| q.len_packets() == 0) {
            return None;
        }
        loop {
            let c = self.turn;
            if self.classes[c].len_packets() == 0 {
                // An idle class keeps no credit (DRR).
                self.deficit[c] = 0;
                self.next_turn();
                continue;
            }
            if !self.credited {
                self.deficit[c] += self.quantum;
                self.credited = true;
            }
            if self.deficit[c] > 0 {
                let p = self.classes[c].dequeue(cx).expect("non-empty class");
                self.deficit[c] -= p.size as i64;
                if self.classes[c].len_packets() == 0 {
                    self.deficit[c] = 0;
                    self.next_turn();
                }
                return Some(p);
            }
            self.next_turn();
        }
    }

    fn len_packets(&self) -> u32 {
        self.classes.iter().map(Queue::len_packets).sum()
    }
    fn len_bytes(&self) -> u64 {
        self.classes.iter().map(Queue::len_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, PacketKind, Protocol};
    use crate::queue::testkit::Kit;
    use crate::queue::{Capacity, DropTail};

    fn pkt(proto: Protocol, seq: u64, size: u32) -> Packet {
        let mut p = test_packet(PacketKind::Data, seq, size);
        p.proto = proto;
        p
    }

    /// Two 1000-packet drop-tail classes, one 9064 B packet per round.
    fn two_fifos() -> ClassQueue {
        let big = || Queue::DropTail(DropTail::new(Capacity::Packets(1000)));
        ClassQueue::new(big(), big(), 9064)
    }

    /// Both classes backlogged with equal packets: service alternates, and
    /// over any prefix each class's bytes differ by at most one quantum.
    #[test]
    fn backlogged_classes_share_bytes_equally() {
        let (mut k, mut q) = (Kit::new(0), two_fifos());
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
        let (mut k, mut q) = (Kit::new(0), two_fifos());
        k.fill(&mut q, (0..5).map(|i| pkt(Protocol::Tcp, i, 9064)));
        assert_eq!(k.drain_seqs(&mut q), [0, 1, 2, 3, 4]);
        assert_eq!(q.len_packets(), 0);
    }
}
