//! Per-flow queues for the fair-queueing disciplines (`fq`, `fq_codel`):
//! flows hashed into a fixed number of buckets, one FIFO per bucket, and
//! the bucket holding the most bytes, for drop-from-the-longest.
//!
//! A real switch tells flows apart by the 5-tuple; psim's packets carry a
//! flow id, which stands for it. Like fq_codel ([FQCODEL] §4.1, 1024
//! buckets) and UPS's FQ (ns-2 sfqCoDel, 1024 bins), flows are hashed into
//! a bounded number of buckets, so memory is bounded whatever the number
//! of flows (8192 hosts), and two flows that share a bucket share its
//! queue. An idle bucket costs its few words and no timer; the bucket
//! array is allocated on a port's first packet, so a port that never
//! queues costs nothing.
//!
//! Packets live in one slab shared by all buckets, each bucket a doubly
//! linked list through it (pop at the head, evict at the tail): the slab
//! grows to the port's peak occupancy and is reused, so the steady state
//! allocates nothing. The longest bucket is the top of an indexed binary
//! heap over the backlogged buckets, keyed by bytes (ties: the lower
//! bucket index), updated on each push and pop in O(log buckets).

use crate::packet::Packet;

/// No node, no heap position.
const NONE: u32 = u32::MAX;

/// One queued packet and what the discipline stores beside it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Node {
    pkt: Option<Packet>,
    /// The discipline's time stamp (enqueue time, or an arrival number).
    stamp: u64,
    /// The discipline's tag (STFQ's start tag).
    tag: u64,
    prev: u32,
    next: u32,
}

/// A packet taken out of the table, with its stamp and tag.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The packet.
    pub pkt: Packet,
    /// Its stamp, as pushed.
    pub stamp: u64,
    /// Its tag, as pushed.
    pub tag: u64,
}

/// One bucket's queue.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Bucket {
    head: u32,
    tail: u32,
    pkts: u32,
    heap_pos: u32,
    bytes: u64,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            head: NONE,
            tail: NONE,
            pkts: 0,
            heap_pos: NONE,
            bytes: 0,
        }
    }
}

/// Buckets of FIFOs over one packet slab, with the longest bucket known.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FlowTable {
    n: u32,
    /// Empty until the first packet.
    buckets: Vec<Bucket>,
    nodes: Vec<Node>,
    /// First free node (linked through `next`).
    free: u32,
    pkts: u32,
    bytes: u64,
    /// Backlogged buckets, the longest first.
    heap: Vec<u32>,
}

impl FlowTable {
    /// An empty table of `n` (at least 1) buckets.
    pub fn new(n: u32) -> Self {
        assert!(n > 0);
        FlowTable {
            n,
            buckets: Vec::new(),
            nodes: Vec::new(),
            free: NONE,
            pkts: 0,
            bytes: 0,
            heap: Vec::new(),
        }
    }

    /// Number of buckets.
    #[inline]
    pub fn buckets(&self) -> u32 {
        self.n
    }

    /// The bucket of flow `flow`: a fixed 64-bit mix (SplitMix64's
    /// finaliser), so buckets are spread evenly and every run hashes alike.
    #[inline]
    pub fn bucket_of(&self, flow: u64) -> u32 {
        let mut z = flow.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z % self.n as u64) as u32
    }

    /// Packets queued in all buckets.
    #[inline]
    pub fn pkts(&self) -> u32 {
        self.pkts
    }
    /// Bytes queued in all buckets.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Packets queued in bucket `b`.
    #[inline]
    pub fn pkts_in(&self, b: u32) -> u32 {
        self.buckets.get(b as usize).map_or(0, |q| q.pkts)
    }
    /// Bytes queued in bucket `b`.
    #[inline]
    pub fn bytes_in(&self, b: u32) -> u64 {
        self.buckets.get(b as usize).map_or(0, |q| q.bytes)
    }
    /// The bucket with the most bytes (ties: the lowest index); None when empty.
    #[inline]
    pub fn longest(&self) -> Option<u32> {
        self.heap.first().copied()
    }

    /// Bucket `b`'s head: its packet, stamp and tag.
    #[inline]
    pub fn front(&self, b: u32) -> Option<(&Packet, u64, u64)> {
        let i = self.buckets.get(b as usize)?.head;
        let n = self.nodes.get(i as usize)?;
        Some((n.pkt.as_ref().expect("queued"), n.stamp, n.tag))
    }

    /// Appends `pkt` to bucket `b`.
    pub fn push(&mut self, b: u32, pkt: Packet, stamp: u64, tag: u64) {
        if self.buckets.is_empty() {
            self.buckets = vec![Bucket::default(); self.n as usize];
        }
        let size = pkt.size as u64;
        let tail = self.buckets[b as usize].tail;
        let node = Node {
            pkt: Some(pkt),
            stamp,
            tag,
            prev: tail,
            next: NONE,
        };
        let i = if self.free != NONE {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let q = &mut self.buckets[b as usize];
        if tail == NONE {
            q.head = i;
        } else {
            self.nodes[tail as usize].next = i;
        }
        q.tail = i;
        q.pkts += 1;
        q.bytes += size;
        self.pkts += 1;
        self.bytes += size;
        if q.heap_pos == NONE {
            q.heap_pos = self.heap.len() as u32;
            self.heap.push(b);
        }
        self.sift_up(self.buckets[b as usize].heap_pos as usize);
    }

    /// Takes bucket `b`'s head.
    pub fn pop_front(&mut self, b: u32) -> Option<Entry> {
        let i = self.buckets.get(b as usize)?.head;
        (i != NONE).then(|| self.unlink(b, i))
    }

    /// Takes bucket `b`'s tail (the packet that arrived last).
    pub fn pop_back(&mut self, b: u32) -> Option<Entry> {
        let i = self.buckets.get(b as usize)?.tail;
        (i != NONE).then(|| self.unlink(b, i))
    }

    fn unlink(&mut self, b: u32, i: u32) -> Entry {
        let (prev, next) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        let q = &mut self.buckets[b as usize];
        if prev == NONE {
            q.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NONE {
            q.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        let node = &mut self.nodes[i as usize];
        let pkt = node.pkt.take().expect("queued");
        let e = Entry {
            stamp: node.stamp,
            tag: node.tag,
            pkt,
        };
        node.next = self.free;
        self.free = i;
        let size = e.pkt.size as u64;
        q.pkts -= 1;
        q.bytes -= size;
        self.pkts -= 1;
        self.bytes -= size;
        let pos = q.heap_pos as usize;
        if q.pkts == 0 {
            q.heap_pos = NONE;
            let last = self.heap.pop().expect("in the heap");
            if pos < self.heap.len() {
                self.heap[pos] = last;
                self.buckets[last as usize].heap_pos = pos as u32;
                self.sift_up(pos);
                self.sift_down(self.buckets[last as usize].heap_pos as usize);
            }
        } else {
            self.sift_down(pos);
        }
        e
    }

    /// Whether bucket `a` goes above bucket `b` in the heap.
    #[inline]
    fn above(&self, a: u32, b: u32) -> bool {
        let (x, y) = (
            self.buckets[a as usize].bytes,
            self.buckets[b as usize].bytes,
        );
        x > y || (x == y && a < b)
    }

    fn place(&mut self, pos: usize, b: u32) {
        self.heap[pos] = b;
        self.buckets[b as usize].heap_pos = pos as u32;
    }

    fn sift_up(&mut self, mut pos: usize) {
        let b = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !self.above(b, self.heap[parent]) {
                break;
            }
            self.place(pos, self.heap[parent]);
            pos = parent;
        }
        self.place(pos, b);
    }

    fn sift_down(&mut self, mut pos: usize) {
        let b = self.heap[pos];
        loop {
            let l = 2 * pos + 1;
            if l >= self.heap.len() {
                break;
            }
            let r = l + 1;
            let c = if r < self.heap.len() && self.above(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            if !self.above(self.heap[c], b) {
                break;
            }
            self.place(pos, self.heap[c]);
            pos = c;
        }
        self.place(pos, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::data;

    /// Random pushes and pops on both ends keep the counts and the longest
    /// bucket equal to a brute-force recount.
    #[test]
    fn the_longest_bucket_and_the_counts_match_a_recount() {
        use rand::RngExt;
        let mut rng = crate::rng::stream_rng(5, 0);
        let mut t = FlowTable::new(16);
        let mut model: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); 16];
        let mut peak = 0;
        for step in 0..20_000u64 {
            let b = rng.random_range(0..16u32);
            match rng.random_range(0..4) {
                0 | 1 => {
                    let size = rng.random_range(64..1500u32);
                    t.push(b, data(step, size), step, 0);
                    model[b as usize].push_back(step);
                }
                2 => assert_eq!(
                    t.pop_front(b).map(|e| e.stamp),
                    model[b as usize].pop_front()
                ),
                _ => assert_eq!(
                    t.pop_back(b).map(|e| e.pkt.seq),
                    model[b as usize].pop_back()
                ),
            }
            let bytes: Vec<u64> = (0..16).map(|b| t.bytes_in(b)).collect();
            let max = bytes.iter().copied().max().unwrap();
            let want = (max > 0).then(|| bytes.iter().position(|&x| x == max).unwrap() as u32);
            assert_eq!(t.longest(), want, "step {step}");
            let pkts: usize = model.iter().map(|q| q.len()).sum();
            assert_eq!(t.pkts() as usize, pkts);
            assert_eq!(t.bytes(), bytes.iter().sum::<u64>());
            peak = peak.max(pkts);
        }
        // Freed nodes are reused: the slab is as large as the peak occupancy.
        assert_eq!(t.nodes.len(), peak);
    }

    #[test]
    fn flows_spread_over_the_buckets() {
        let t = FlowTable::new(1024);
        let mut used = vec![false; 1024];
        for f in 0..1024 {
            used[t.bucket_of(f) as usize] = true;
        }
        // 1024 flows in 1024 buckets: about 1 − 1/e of them used.
        let n = used.iter().filter(|&&u| u).count();
        assert!((600..700).contains(&n), "{n}");
    }
}
