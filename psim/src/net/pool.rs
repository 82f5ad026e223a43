//! One pool of packet slots per shard, for every packet the shard holds
//! between two events: those on the wires into its entities
//! ([`super::Inbound`]) and those waiting in its ports' queues (the NDP and
//! priority disciplines, through [`PacketFifo`]).
//!
//! A ring per queue or wire keeps the room of its fullest moment, rounded up
//! to a power of two. At 8192 hosts that was 2.6 slots for every packet on a
//! wire, and for the queues far more: each host NIC kept room for its flow's
//! whole initial window long after sending it (docs/performance.md). The
//! pool holds as many slots as the most packets the shard ever held at
//! once, in fixed blocks, so it grows without copying; a packet that moves
//! from a queue to a wire frees one slot and takes another, and the slot
//! freed last is the next one taken, while it is still in cache. The free
//! slots are a stack of indices, not a list through the slots, so that a
//! burst of takes (a window's mail) can fetch the slots it will take a few
//! takes ahead instead of finding each one only when it takes it.
//!
//! A [`List`] is a FIFO through the pool: its first and last slot, each
//! slot naming the next. The slot indices depend on the partition (each
//! shard has its own pool) but no result reads them, only the order of each
//! list.

use super::link::InFlight;
use crate::engine::prefetch::prefetch;
use crate::packet::Packet;

/// No slot: the end of a list.
const NIL: u32 = u32::MAX;

/// Slots per block (4096 x 96 bytes).
const BLOCK_BITS: u32 = 12;
const BLOCK: usize = 1 << BLOCK_BITS;

/// How many takes ahead [`PacketPool::take`] fetches the slot it will take.
const FREE_AHEAD: usize = 4;

/// A packet, and the next slot of the same list.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Slot {
    f: InFlight,
    next: u32,
}

/// The slots of one shard. See the module documentation.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PacketPool {
    blocks: Vec<Vec<Slot>>,
    /// Slots ever used (the free ones included).
    used: u32,
    /// The free slots, the last freed on top.
    free: Vec<u32>,
}

impl Default for PacketPool {
    fn default() -> Self {
        PacketPool::new()
    }
}

impl PacketPool {
    /// An empty pool; it allocates at its first packet.
    pub fn new() -> PacketPool {
        PacketPool {
            blocks: Vec::new(),
            used: 0,
            free: Vec::new(),
        }
    }

    /// Slots ever taken: the most packets held at once.
    pub fn slots(&self) -> u32 {
        self.used
    }

    #[inline]
    fn slot(&self, i: u32) -> &Slot {
        &self.blocks[(i >> BLOCK_BITS) as usize][i as usize & (BLOCK - 1)]
    }

    #[inline]
    fn slot_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.blocks[(i >> BLOCK_BITS) as usize][i as usize & (BLOCK - 1)]
    }

    /// Takes a free slot for `f`, the last freed first.
    #[inline]
    fn take(&mut self, f: InFlight) -> u32 {
        if let Some(i) = self.free.pop() {
            // The slot taken a few takes from now: fetched now, it is in
            // cache when a burst of packets (a window's mail) gets there
            // (a hint only).
            let ahead = self.free.len().checked_sub(FREE_AHEAD);
            if let Some(&ahead) = ahead.and_then(|k| self.free.get(k)) {
                prefetch(self.slot(ahead));
            }
            *self.slot_mut(i) = Slot { f, next: NIL };
            return i;
        }
        let i = self.used;
        // 2^32 packets held by one shard would take 384 GiB first.
        assert!(i != NIL, "more than 2^32 - 1 packets held by one shard");
        if i as usize & (BLOCK - 1) == 0 {
            self.blocks.push(Vec::with_capacity(BLOCK));
        }
        let block = self.blocks.last_mut().expect("a block was just added");
        block.push(Slot { f, next: NIL });
        self.used += 1;
        i
    }

    /// Frees slot `i`, returning its packet and the slot that followed it.
    #[inline]
    fn give_back(&mut self, i: u32) -> (InFlight, u32) {
        let s = self.slot(i);
        let (f, next) = (s.f.clone(), s.next);
        self.free.push(i);
        (f, next)
    }

    /// Asks the CPU to fetch the slot the next packet will take (a hint).
    #[inline]
    fn prefetch_free(&self) {
        if let Some(&i) = self.free.last() {
            prefetch(self.slot(i));
        }
    }
}

/// A FIFO of packets through a [`PacketPool`]: its first and last slot.
/// A clone names the same slots, so only an empty list is cloned (a port
/// built from a template); a checkpoint saves the lists with their pool.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct List {
    head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List::EMPTY
    }
}

impl List {
    /// No packet.
    pub const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Whether it holds no packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Appends `f`; returns whether it is the only packet (the new head).
    #[inline]
    pub fn push_back(&mut self, pool: &mut PacketPool, f: InFlight) -> bool {
        let i = pool.take(f);
        if self.head == NIL {
            *self = List { head: i, tail: i };
            return true;
        }
        pool.slot_mut(self.tail).next = i;
        self.tail = i;
        false
    }

    /// Removes and returns the first packet.
    #[inline]
    pub fn pop_front(&mut self, pool: &mut PacketPool) -> Option<InFlight> {
        if self.head == NIL {
            return None;
        }
        let (f, next) = pool.give_back(self.head);
        if next == NIL {
            *self = List::EMPTY;
        } else {
            self.head = next;
        }
        Some(f)
    }

    /// The first packet.
    #[inline]
    pub fn front<'p>(&self, pool: &'p PacketPool) -> Option<&'p InFlight> {
        (self.head != NIL).then(|| &pool.slot(self.head).f)
    }

    /// The last packet.
    #[inline]
    pub fn back<'p>(&self, pool: &'p PacketPool) -> Option<&'p InFlight> {
        (self.tail != NIL).then(|| &pool.slot(self.tail).f)
    }

    /// The last packet, to change in place.
    #[inline]
    pub fn back_mut<'p>(&self, pool: &'p mut PacketPool) -> Option<&'p mut InFlight> {
        (self.tail != NIL).then(|| &mut pool.slot_mut(self.tail).f)
    }

    /// The packets, first to last.
    pub fn iter<'p>(&self, pool: &'p PacketPool) -> impl Iterator<Item = &'p InFlight> + 'p {
        let mut i = self.head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let s = pool.slot(i);
            i = s.next;
            Some(&s.f)
        })
    }

    /// Asks the CPU to fetch the first packet (a hint; no effect on any
    /// result).
    #[inline]
    pub fn prefetch_front(&self, pool: &PacketPool) {
        if self.head != NIL {
            prefetch(pool.slot(self.head));
        }
    }

    /// Asks the CPU to fetch the packet behind the first (a hint, after
    /// [`List::prefetch_front`] has brought the first in).
    #[inline]
    pub fn prefetch_second(&self, pool: &PacketPool) {
        if self.head != NIL {
            let next = pool.slot(self.head).next;
            if next != NIL {
                prefetch(pool.slot(next));
            }
        }
    }

    /// Asks the CPU to fetch what a push touches: the last slot's link and
    /// the free slot the packet will take (a hint).
    #[inline]
    pub fn prefetch_push(&self, pool: &PacketPool) {
        if self.tail != NIL {
            prefetch(&pool.slot(self.tail).next);
        }
        pool.prefetch_free();
    }
}

/// A FIFO of queued packets through the shard's pool, with its length: the
/// storage of the NDP, priority and drop-tail disciplines' queues (cloned only empty,
/// as a [`List`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PacketFifo {
    list: List,
    len: u32,
}

impl PacketFifo {
    /// Packets held.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether it holds no packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `pkt`.
    #[inline]
    pub fn push_back(&mut self, pool: &mut PacketPool, pkt: Packet) {
        let f = InFlight {
            arrive: 0,
            src: 0,
            seq: 0,
            pkt,
        };
        self.list.push_back(pool, f);
        self.len += 1;
    }

    /// Removes and returns the first packet.
    #[inline]
    pub fn pop_front(&mut self, pool: &mut PacketPool) -> Option<Packet> {
        let f = self.list.pop_front(pool)?;
        self.len -= 1;
        Some(f.pkt)
    }

    /// The first packet.
    #[inline]
    pub fn front<'p>(&self, pool: &'p PacketPool) -> Option<&'p Packet> {
        self.list.front(pool).map(|f| &f.pkt)
    }

    /// The last packet.
    #[inline]
    pub fn back<'p>(&self, pool: &'p PacketPool) -> Option<&'p Packet> {
        self.list.back(pool).map(|f| &f.pkt)
    }

    /// The last packet, to change in place.
    #[inline]
    pub fn back_mut<'p>(&self, pool: &'p mut PacketPool) -> Option<&'p mut Packet> {
        self.list.back_mut(pool).map(|f| &mut f.pkt)
    }

    /// The packets, first to last.
    pub fn iter<'p>(&self, pool: &'p PacketPool) -> impl Iterator<Item = &'p Packet> + 'p {
        self.list.iter(pool).map(|f| &f.pkt)
    }

    /// Hints the first packet ([`List::prefetch_front`]).
    #[inline]
    pub fn prefetch_front(&self, pool: &PacketPool) {
        self.list.prefetch_front(pool);
    }

    /// Hints what a push touches ([`List::prefetch_push`]).
    #[inline]
    pub fn prefetch_push(&self, pool: &PacketPool) {
        self.list.prefetch_push(pool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, PacketKind};
    use rand::RngExt;
    use std::collections::VecDeque;

    fn pkt(seq: u64) -> Packet {
        test_packet(PacketKind::Data, seq, 1000)
    }

    /// Many FIFOs through one pool, as a shard's queues share it: each
    /// keeps its order against a ring per FIFO (the tail changed in place
    /// too, as NDP's tail trim does), and the pool never holds more slots
    /// than the most packets held at once.
    #[test]
    fn fifos_sharing_the_pool_keep_their_order_and_reuse_slots() {
        let n = 29;
        let mut pool = PacketPool::new();
        let mut fifos = vec![PacketFifo::default(); n];
        let mut model: Vec<VecDeque<u64>> = vec![Default::default(); n];
        let mut rng = crate::rng::stream_rng(9, 2);
        let (mut seq, mut most) = (0u64, 0u64);
        for step in 0..200_000 {
            let w = rng.random_range(0..n);
            let push_bias = if step < 60_000 { 0.55 } else { 0.45 };
            let r: f64 = rng.random();
            if model[w].is_empty() || r < push_bias {
                fifos[w].push_back(&mut pool, pkt(seq));
                model[w].push_back(seq);
                seq += 1;
            } else if r < push_bias + 0.05 {
                // Replace the tail in place.
                fifos[w].back_mut(&mut pool).unwrap().seq = seq;
                *model[w].back_mut().unwrap() = seq;
                seq += 1;
            } else {
                assert_eq!(
                    fifos[w].pop_front(&mut pool).map(|p| p.seq),
                    model[w].pop_front()
                );
            }
            let live: u64 = model.iter().map(|q| q.len() as u64).sum();
            most = most.max(live);
            assert_eq!(fifos[w].len() as usize, model[w].len());
            assert_eq!(
                fifos[w].front(&pool).map(|p| p.seq),
                model[w].front().copied()
            );
            assert_eq!(
                fifos[w].back(&pool).map(|p| p.seq),
                model[w].back().copied()
            );
        }
        assert!(most > 1000, "the test reaches a real backlog ({most})");
        assert_eq!(pool.slots() as u64, most, "slots are reused, not added");
        // A checkpoint reads back the same lists.
        let back: PacketPool = postcard::from_bytes(&postcard::to_stdvec(&pool).unwrap()).unwrap();
        for (f, q) in fifos.iter().zip(&model) {
            assert!(f.iter(&back).map(|p| p.seq).eq(q.iter().copied()));
        }
        // Emptied, every FIFO gives its slots back for the others.
        for f in &mut fifos {
            while f.pop_front(&mut pool).is_some() {}
            assert!(f.is_empty() && f.list == List::EMPTY);
        }
        fifos[0].push_back(&mut pool, pkt(0));
        assert_eq!(pool.slots() as u64, most);
    }

    /// A slot is the 88-byte packet on a wire and a link.
    #[test]
    fn slots_stay_96_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 96);
    }
}
