//! Deficit round robin over flow queues, in the form of FQ-CoDel
//! ([FQCODEL] §4.2): each backlogged queue is on a list with a deficit in
//! bytes; the queue at the head of the list sends while its deficit is
//! positive, and one whose deficit is used up gets another `quantum` and
//! goes to the tail. This is Shreedhar and Varghese's DRR ([DRR] §3) with
//! the deficit checked before a packet instead of after, so it needs no
//! peek at the next packet's size: over a round each backlogged queue sends
//! `quantum` bytes, give or take one packet.
//!
//! With `sparse = true` (FQ-CoDel) a queue that becomes backlogged joins a
//! *new* list, served before the *old* one: a flow that sends less than a
//! quantum per round is served ahead of the bulk flows ([FQCODEL] §4.2,
//! its sparse-flow optimisation); with `sparse = false` (plain DRR, `fq`)
//! it joins the tail of the single list.
//!
//! A queue that is found empty leaves the lists (from the new list it
//! first passes through the old one, so it cannot re-enter the new list
//! at once, [FQCODEL] §4.2). The per-bucket state is allocated on first
//! use; the lists never hold more than the number of buckets.
//!
//! The traffic classes' DRR (`classes.rs`) walks a fixed ring of at most 8
//! classes, crediting each in turn, and keeps its own loop: its turn order
//! (ring position, not arrival order) is part of the NDP results.

use crate::packet::Packet;
use std::collections::VecDeque;

/// Which list a queue is on.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum List {
    #[default]
    None,
    New,
    Old,
}

#[derive(Copy, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Slot {
    deficit: i64,
    list: List,
}

/// The DRR lists over `n` queues numbered 0..n.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct DrrLists {
    n: u32,
    quantum: i64,
    sparse: bool,
    new: VecDeque<u32>,
    old: VecDeque<u32>,
    /// Empty until the first activation.
    slots: Vec<Slot>,
}

impl DrrLists {
    /// Lists over `n` queues, `quantum` bytes (at least 1) per round.
    pub fn new(n: u32, quantum: u64, sparse: bool) -> Self {
        assert!(quantum > 0);
        DrrLists {
            n,
            quantum: quantum as i64,
            sparse,
            new: VecDeque::new(),
            old: VecDeque::new(),
            slots: Vec::new(),
        }
    }

    /// Queue `b` got a packet: it joins a list (with a full quantum) unless
    /// it is on one.
    #[inline]
    pub fn activate(&mut self, b: u32) {
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); self.n as usize];
        }
        let s = &mut self.slots[b as usize];
        if s.list == List::None {
            s.deficit = self.quantum;
            if self.sparse {
                s.list = List::New;
                self.new.push_back(b);
            } else {
                s.list = List::Old;
                self.old.push_back(b);
            }
        }
    }

    /// Whether queue `b` is on the new list.
    #[cfg(test)]
    pub fn on_new_list(&self, b: u32) -> bool {
        self.slots
            .get(b as usize)
            .is_some_and(|s| s.list == List::New)
    }

    /// The next packet: `serve(b)` takes queue `b`'s next packet (it may
    /// drop some first, and may find none).
    pub fn next(&mut self, mut serve: impl FnMut(u32) -> Option<Packet>) -> Option<Packet> {
        loop {
            let (b, from_new) = match (self.new.front(), self.old.front()) {
                (Some(&b), _) => (b, true),
                (None, Some(&b)) => (b, false),
                (None, None) => return None,
            };
            let s = &mut self.slots[b as usize];
            if s.deficit <= 0 {
                s.deficit += self.quantum;
                s.list = List::Old;
                self.pop(from_new);
                self.old.push_back(b);
                continue;
            }
            if let Some(p) = serve(b) {
                self.slots[b as usize].deficit -= p.size as i64;
                return Some(p);
            }
            self.pop(from_new);
            if from_new {
                self.slots[b as usize].list = List::Old;
                self.old.push_back(b);
            } else {
                self.slots[b as usize].list = List::None;
            }
        }
    }

    #[inline]
    fn pop(&mut self, from_new: bool) {
        if from_new {
            self.new.pop_front();
        } else {
            self.old.pop_front();
        }
    }
}
