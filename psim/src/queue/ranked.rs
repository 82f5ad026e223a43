//! The store behind the rank-ordered disciplines (`pfabric`/`srpt`,
//! `rank`/`sjf`, `lstf`/`edf`, `fifo_plus`): queued packets ordered by a
//! 64-bit key, arrival order breaking ties, with O(log n) access to both
//! ends and, optionally, to each flow's earliest packet.
//!
//! Why not a `BTreeMap`: its nodes are allocated and freed as a short queue
//! grows and empties, i.e. about once per packet. Here packets live in a
//! slab (`Vec` plus free list) and two binary heaps index it, so once the
//! vectors have grown to the queue's high-water mark nothing allocates.
//! Heap entries of packets that left by the other end are skipped when
//! they surface (lazy deletion: an entry is live when its slot still holds
//! a packet with the entry's arrival number) and swept out when they
//! outnumber the live ones, which keeps both heaps O(queue length).
//!
//! Each flow's queued packets form a list through the slab in arrival order
//! (when `track_flows`), so "the earliest packet of this flow" (pFabric's
//! starvation prevention, [PFAB] §4.1) is O(1) and removal anywhere O(1).

use super::Capacity;
use crate::packet::Packet;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No slot (end of a flow list).
const NIL: u32 = u32::MAX;

/// Maps a signed key (slack, deadline) onto `u64` preserving its order.
#[inline]
pub fn signed_key(k: i64) -> u64 {
    (k as u64) ^ (1 << 63)
}

/// A flow as pFabric's ns-2 queue matches it: (source, destination, flow id).
type FlowKey = (u32, u32, u64);

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Slot {
    /// The packet; None when the slot is free.
    pkt: Option<Packet>,
    /// Arrival number (unique, increasing): the tie-break and the liveness check.
    order: u64,
    /// When it was queued, ps.
    since: u64,
    /// Neighbours in its flow's list (earlier, later).
    prev: u32,
    next: u32,
}

/// A heap entry: (key, arrival number, slot).
type Ent = (u64, u64, u32);

/// Packets ordered by (key, arrival number); see the module docs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RankStore {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Smallest (key, order) first: the best.
    min: BinaryHeap<Reverse<Ent>>,
    /// Largest (key, order) first: the worst, the latest among equal keys.
    max: BinaryHeap<Ent>,
    /// First and last slot of each flow's list, when flows are tracked.
    flows: Option<FxHashMap<FlowKey, (u32, u32)>>,
    /// Entries popped while looking for room, put back if none is taken.
    scratch: Vec<Ent>,
    next_order: u64,
    len: u32,
    bytes: u64,
}

impl RankStore {
    /// An empty store; `track_flows` keeps the per-flow lists.
    pub fn new(track_flows: bool) -> Self {
        RankStore {
            slots: Vec::new(),
            free: Vec::new(),
            min: BinaryHeap::new(),
            max: BinaryHeap::new(),
            flows: track_flows.then(FxHashMap::default),
            scratch: Vec::new(),
            next_order: 0,
            len: 0,
            bytes: 0,
        }
    }

    /// Packets stored.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether nothing is stored.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes stored.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The packet in `slot`.
    #[inline]
    pub fn pkt(&self, slot: u32) -> &Packet {
        self.slots[slot as usize].pkt.as_ref().expect("live slot")
    }

    #[inline]
    fn live(&self, (_, order, slot): Ent) -> bool {
        let s = &self.slots[slot as usize];
        s.pkt.is_some() && s.order == order
    }

    /// Stores `pkt` under `key` at time `now`; returns its slot.
    pub fn push(&mut self, pkt: Packet, key: u64, now: u64) -> u32 {
        let order = self.next_order;
        self.next_order += 1;
        self.len += 1;
        self.bytes += pkt.size as u64;
        let fk = (pkt.src, pkt.dst, pkt.flow);
        let slot = Slot {
            pkt: Some(pkt),
            order,
            since: now,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        if let Some(flows) = &mut self.flows {
            let e = flows.entry(fk).or_insert((NIL, NIL));
            if e.1 == NIL {
                *e = (i, i);
            } else {
                let tail = e.1;
                e.1 = i;
                self.slots[tail as usize].next = i;
                self.slots[i as usize].prev = tail;
            }
        }
        self.min.push(Reverse((key, order, i)));
        self.max.push((key, order, i));
        i
    }

    /// The best slot: smallest key, earliest arrival among equal keys.
    pub fn best(&mut self) -> Option<u32> {
        while let Some(&Reverse(e)) = self.min.peek() {
            if self.live(e) {
                return Some(e.2);
            }
            self.min.pop();
        }
        None
    }

    /// The best slot with its key.
    pub fn best_keyed(&mut self) -> Option<(u64, u32)> {
        self.best()?;
        self.min.peek().map(|&Reverse((k, _, slot))| (k, slot))
    }

    /// The worst slot: largest key, latest arrival among equal keys.
    pub fn worst(&mut self) -> Option<u32> {
        while let Some(&e) = self.max.peek() {
            if self.live(e) {
                return Some(e.2);
            }
            self.max.pop();
        }
        None
    }

    /// The earliest queued packet of `slot`'s flow (needs `track_flows`).
    pub fn flow_head(&self, slot: u32) -> u32 {
        let p = self.pkt(slot);
        let flows = self.flows.as_ref().expect("flows tracked");
        flows[&(p.src, p.dst, p.flow)].0
    }

    /// The worst slot holding at least `min_size` bytes (pFabric's eviction
    /// candidates). Skips smaller packets: O(k log n) for k skipped, and k
    /// is only the small (control) packets ranked worse than the candidate.
    pub fn worst_of_size(&mut self, min_size: u32) -> Option<u32> {
        let mut found = None;
        while let Some(e) = self.max.pop() {
            if !self.live(e) {
                continue;
            }
            self.scratch.push(e);
            if self.pkt(e.2).size >= min_size {
                found = Some(e.2);
                break;
            }
        }
        self.max.extend(self.scratch.drain(..));
        found
    }

    /// Frees room for an arrival of `size` bytes and key `key` by removing
    /// the worst packets while each is worse than the arrival (or tied,
    /// when `evict_ties`), until it fits under `cap`. Returns whether it
    /// fits; the removed packets go to `evicted`, worst first. Removes
    /// nothing when removing all such packets would not make room.
    pub fn make_room(
        &mut self,
        cap: Capacity,
        size: u32,
        key: u64,
        evict_ties: bool,
        mut evicted: impl FnMut(Packet),
    ) -> bool {
        let (mut len, mut bytes) = (self.len, self.bytes);
        let mut fits = cap.fits(len, bytes, size);
        while !fits {
            let Some(e) = self.max.pop() else { break };
            if !self.live(e) {
                continue;
            }
            self.scratch.push(e);
            if e.0 < key || (e.0 == key && !evict_ties) {
                break;
            }
            len -= 1;
            bytes -= self.pkt(e.2).size as u64;
            fits = cap.fits(len, bytes, size);
        }
        if fits {
            // Every entry looked at is a victim: the search stopped as soon
            // as the arrival fitted.
            for i in 0..self.scratch.len() {
                let slot = self.scratch[i].2;
                evicted(self.take(slot).0);
            }
            self.scratch.clear();
        } else {
            self.max.extend(self.scratch.drain(..));
        }
        fits
    }

    /// Removes the packet in `slot`; returns it with the time it was queued.
    pub fn take(&mut self, slot: u32) -> (Packet, u64) {
        let s = &mut self.slots[slot as usize];
        let pkt = s.pkt.take().expect("live slot");
        let (prev, next, since) = (s.prev, s.next, s.since);
        s.prev = NIL;
        s.next = NIL;
        if let Some(flows) = &mut self.flows {
            let fk = (pkt.src, pkt.dst, pkt.flow);
            if prev != NIL {
                self.slots[prev as usize].next = next;
            }
            if next != NIL {
                self.slots[next as usize].prev = prev;
            }
            if prev == NIL && next == NIL {
                flows.remove(&fk);
            } else {
                let e = flows.get_mut(&fk).expect("flow listed");
                if prev == NIL {
                    e.0 = next;
                }
                if next == NIL {
                    e.1 = prev;
                }
            }
        }
        self.free.push(slot);
        self.len -= 1;
        self.bytes -= pkt.size as u64;
        // Sweep stale entries once they outnumber the live ones.
        let limit = 2 * self.len as usize + 64;
        if self.min.len() > limit {
            let slots = &self.slots;
            self.min.retain(|&Reverse((_, o, i))| {
                slots[i as usize].pkt.is_some() && slots[i as usize].order == o
            });
        }
        if self.max.len() > limit {
            let slots = &self.slots;
            self.max.retain(|&(_, o, i)| {
                slots[i as usize].pkt.is_some() && slots[i as usize].order == o
            });
        }
        (pkt, since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::data;

    fn flow(mut p: Packet, f: u64) -> Packet {
        p.flow = f;
        p
    }

    /// Keys 5, 3, 3, 9 arrive as seqs 0..4: best-first is 1, 2 (tie: earlier
    /// first), 0, 3; worst-first is 3, 0, 2 (tie: later first), 1.
    #[test]
    fn best_and_worst_break_ties_by_arrival() {
        let mut s = RankStore::new(false);
        for (seq, key) in [(0, 5), (1, 3), (2, 3), (3, 9)] {
            s.push(data(seq, 100), key, 0);
        }
        let w = s.worst().unwrap();
        assert_eq!(s.pkt(w).seq, 3);
        let mut best = vec![];
        while let Some(b) = s.best() {
            best.push(s.take(b).0.seq);
        }
        assert_eq!(best, [1, 2, 0, 3]);
        let mut s2 = RankStore::new(false);
        for (seq, key) in [(0, 5), (1, 3), (2, 3), (3, 9)] {
            s2.push(data(seq, 100), key, 0);
        }
        let mut worst = vec![];
        while let Some(w) = s2.worst() {
            worst.push(s2.take(w).0.seq);
        }
        assert_eq!(worst, [3, 0, 2, 1]);
        assert!(s2.is_empty() && s2.bytes() == 0);
    }

    /// Flow lists survive removal from the middle: flow 7 holds seqs 0, 2,
    /// 4; after 2 and then 0 leave, its head is 4.
    #[test]
    fn flow_lists_follow_removals() {
        let mut s = RankStore::new(true);
        let slots: Vec<u32> = (0..5)
            .map(|seq| s.push(flow(data(seq, 100), 7 + seq % 2), 0, 0))
            .collect();
        assert_eq!(s.pkt(s.flow_head(slots[4])).seq, 0);
        s.take(slots[2]);
        s.take(slots[0]);
        assert_eq!(s.pkt(s.flow_head(slots[4])).seq, 4);
        assert_eq!(s.pkt(s.flow_head(slots[3])).seq, 1);
    }

    /// Stale heap entries are swept: 10,000 packets through a queue of at
    /// most 2 leave both heaps small.
    #[test]
    fn heaps_stay_bounded_by_the_queue() {
        let mut s = RankStore::new(true);
        for seq in 0..10_000 {
            s.push(data(seq, 100), seq, 0);
            if seq % 2 == 1 {
                let b = s.best().unwrap();
                s.take(b);
                let b = s.best().unwrap();
                s.take(b);
            }
        }
        assert!(
            s.min.len() <= 66 && s.max.len() <= 66,
            "{} {}",
            s.min.len(),
            s.max.len()
        );
        assert!(s.slots.len() <= 2);
    }
}
