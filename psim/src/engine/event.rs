//! Events and their total order.
//!
//! Events are ordered by `(time, target entity, source entity, source
//! sequence number)`. Every part of the key is a property of the simulated
//! system, not of the partition: the sequence number is a counter kept by the
//! entity that created the event. Two runs with different shard counts
//! therefore process every entity's events in the same order. No two events
//! share a key, since one source never reuses a sequence number.

/// Source id used for events created by the workload (flow starts); their
/// sequence number is the flow id, which is unique.
pub const WORKLOAD_SOURCE: u32 = u32::MAX;

/// Target id of completion notices: they are shard-wide, not tied to an
/// entity, and sort after every entity event at the same time.
pub const NOTICE_TARGET: u32 = u32::MAX;

/// [`EventKind::Chip`] steps.
pub const CHIP_SERVED: u8 = 0;
/// See [`EventKind::Chip`].
pub const CHIP_RECIRCULATED: u8 = 1;
/// See [`EventKind::Chip`].
pub const CHIP_NOTICE: u8 = 2;

/// The total order key of an event: by time, then target, source and
/// sequence number.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct EventKey {
    /// Simulated time, picoseconds.
    pub time: u64,
    /// Entity whose state the event touches.
    pub target: u32,
    /// Entity that created the event.
    pub source: u32,
    /// Per-source counter.
    pub seq: u64,
}

impl EventKey {
    /// The first three parts as one number, in their order: one 128-bit
    /// comparison instead of a chain of three, in the calendar's sorts and
    /// the heaps (the order is the derived lexicographic one; tested below).
    #[inline]
    fn packed(&self) -> u128 {
        (u128::from(self.time) << 64) | (u128::from(self.target) << 32) | u128::from(self.source)
    }
}

impl Ord for EventKey {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.packed()
            .cmp(&other.packed())
            .then(self.seq.cmp(&other.seq))
    }
}

impl PartialOrd for EventKey {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What happens. Kept small: the heap holds one of these per busy port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    /// The head packet of the entity's inbound link on `port` has fully arrived.
    LinkArrival {
        /// Input port of the target entity.
        port: u16,
    },
    /// The target's output `port` finished serialising its packet.
    TxDone {
        /// Output port.
        port: u16,
    },
    /// A timed PFC pause of the target's output `port` for `prio` ends.
    PauseEnd {
        /// Output port.
        port: u16,
        /// Priority.
        prio: u8,
    },
    /// A transport timer on a host endpoint.
    Timer {
        /// Endpoint slot on the host.
        slot: u32,
        /// Generation: stale timers (an older generation) are ignored.
        gen: u32,
    },
    /// A workload flow starts at its source host.
    FlowStart {
        /// Index into the shard's table of pending flows.
        pending: u32,
    },
    /// A step of a switch's Tofino chip (`net/tofino.rs`): a recirculation
    /// line finished serving its head ([`CHIP_SERVED`]), its recirculation
    /// head comes out ([`CHIP_RECIRCULATED`]), or a notice is due
    /// ([`CHIP_NOTICE`]).
    Chip {
        /// The line (DoD of pipeline p: 2p; MoD: 2p + 1).
        line: u16,
        /// Which step.
        step: u8,
    },
    /// The workload learns that a flow finished (closed loops, triggers, collectives).
    Notice {
        /// The finished flow.
        flow: u64,
    },
}

/// Events processed, by kind (`docs/engine.md` gives each kind's reason).
/// Timers are split by what they turned out to do. Completion notices are
/// not counted: every shard processes each of them, so their count would
/// depend on the partition. One array increment per event.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventCounts(pub [u64; EventCounts::KINDS]);

impl EventCounts {
    /// Number of counted kinds.
    pub const KINDS: usize = 10;
    /// [`EventKind::LinkArrival`].
    pub const LINK_ARRIVAL: usize = 0;
    /// [`EventKind::TxDone`] after which the port started its next packet.
    pub const TX_DONE: usize = 1;
    /// [`EventKind::PauseEnd`].
    pub const PAUSE_END: usize = 2;
    /// [`EventKind::FlowStart`].
    pub const FLOW_START: usize = 3;
    /// [`EventKind::Chip`].
    pub const CHIP: usize = 4;
    /// A timer that ran an endpoint's deadline (RTO, pacing, probe).
    pub const TIMER_ENDPOINT: usize = 5;
    /// A host-services timer that granted a PULL or token.
    pub const TIMER_GRANT: usize = 6;
    /// A host-services timer that found nothing to grant.
    pub const TIMER_IDLE: usize = 7;
    /// A superseded timer (processed in a window or dropped at a boundary),
    /// or a preemptive port's transmit-done for a packet since interrupted.
    pub const TIMER_STALE: usize = 8;
    /// [`EventKind::TxDone`] after which the port went idle (nothing to
    /// send), whether it ran from the heap or was settled in its port
    /// (docs/engine.md, "Idle completions").
    pub const TX_DONE_IDLE: usize = 9;
    /// Names, in index order (outputs and the bench table use them).
    pub const NAMES: [&'static str; Self::KINDS] = [
        "link_arrival",
        "tx_done",
        "pause_end",
        "flow_start",
        "chip",
        "timer_endpoint",
        "timer_grant",
        "timer_idle",
        "timer_stale",
        "tx_done_idle",
    ];

    /// Total over kinds.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl std::ops::AddAssign for EventCounts {
    fn add_assign(&mut self, o: Self) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

/// A scheduled event.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Order key.
    pub key: EventKey,
    /// Payload.
    pub kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Event {}

/// Children per node of the far-event heap. Four halves the depth of a
/// binary heap, and a node's four children are adjacent in memory, so a pop
/// touches fewer cache lines (measured in docs/performance.md).
const ARITY: usize = 4;
// `sift_down`'s tournament is written out for exactly four children.
const _: () = assert!(ARITY == 4);

/// A 4-ary min-heap on [`EventKey`]: the events beyond the calendar's reach.
#[derive(Default)]
struct FarHeap {
    heap: Vec<Event>,
}

impl FarHeap {
    #[inline]
    fn push(&mut self, ev: Event) {
        let mut i = self.heap.len();
        self.heap.push(ev);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= ev.key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = ev;
    }
    #[inline]
    fn peek(&self) -> Option<&Event> {
        self.heap.first()
    }
    #[inline]
    fn pop(&mut self) -> Option<Event> {
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(last);
        }
        let top = self.heap[0];
        self.sift_down(0, last);
        Some(top)
    }
    /// Puts `ev` at slot `i` (whose old content is gone) or below it. A
    /// node with all four children picks the smallest by a two-round
    /// tournament on one bounds-checked slice, which compiles to
    /// conditional moves rather than a loop of branches.
    #[inline]
    fn sift_down(&mut self, mut i: usize, ev: Event) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        loop {
            let first = i * ARITY + 1;
            let best = if first + ARITY <= n {
                let c = &heap[first..first + ARITY];
                let a = (c[1].key < c[0].key) as usize;
                let b = 2 + (c[3].key < c[2].key) as usize;
                first + if c[b].key < c[a].key { b } else { a }
            } else if first < n {
                let mut best = first;
                for c in first + 1..n {
                    if heap[c].key < heap[best].key {
                        best = c;
                    }
                }
                best
            } else {
                break;
            };
            if heap[best].key >= ev.key {
                break;
            }
            heap[i] = heap[best];
            i = best;
        }
        heap[i] = ev;
    }
    /// Keeps the events for which `keep` holds; restores the heap order
    /// (`retain` keeps it only when it removes nothing).
    fn retain(&mut self, keep: impl FnMut(&Event) -> bool) {
        let n = self.heap.len();
        self.heap.retain(keep);
        if self.heap.len() != n {
            self.heapify();
        }
    }
    /// Restores the heap order of the whole array (Floyd's method).
    fn heapify(&mut self) {
        let n = self.heap.len();
        if n < 2 {
            return;
        }
        for i in (0..=(n - 2) / ARITY).rev() {
            let ev = self.heap[i];
            self.sift_down(i, ev);
        }
    }
}

/// Calendar slots (a power of two). With slots of about 1/256 of the
/// shortest link delay, the calendar reaches 8 to 16 link delays ahead:
/// every transmission and arrival of a datacenter run, and none of its RTOs.
const SLOTS: usize = 4096;
const SLOT_WORDS: usize = SLOTS / 64;
/// The most events a spare list keeps room for (2.5 KB): a burst's room (a
/// thousand flow starts at one instant) goes back to the allocator.
const BUCKET_ROOM: usize = 64;
/// The most spare lists kept (at most 2.5 MB).
const SPARES: usize = SLOTS / 4;

/// The pending-event set of one shard: a calendar of time slots in front
/// of a heap.
///
/// An event's slot is its time shifted right by `shift` (a slot is
/// 2^`shift` ps wide). The current slot's events sit in `cur`, sorted, and
/// pop from its front (events pushed into the current slot after that wait
/// in a small heap beside it, since a sorted insert would move the slot's
/// thousands of events when a full-load run synchronises every host). The
/// next `SLOTS - 1` slots are unsorted buckets (one push each); a bucket is
/// sorted once, when the calendar reaches it, and becomes the current slot
/// without a copy. An empty bucket holds no room: lists move between the
/// buckets, the current slot and a stack of spares, so the calendar keeps
/// room for the events pending, not for every slot it spans (a 4-shard
/// 8192-host run kept 20 MB more when each bucket kept its own).
/// Events further ahead wait in a 4-ary heap and move into the calendar as
/// it advances. So most events cost one append, a share of one small sort,
/// and one read at the front, instead of two walks of a heap of 50 000
/// events that does not fit in cache.
///
/// Keys are unique and every part of the structure is ordered by them, so
/// the pop order is the key order whatever the slot width: the layout
/// cannot change a result (tested below against a sorted model).
///
/// Invariants: `cur` (sorted ascending from `head`) and the `late` heap
/// hold exactly the events of slot `cur_slot`, those pushed after the slot
/// was sorted in `late`; bucket `s % SLOTS` holds the events of slot `s`
/// for `cur_slot < s < cur_slot + SLOTS` (so the current slot's bucket is
/// empty), with its bit set in `occupied` when non-empty; the far heap
/// holds the events of slots `>= cur_slot + SLOTS`.
pub struct EventQueue {
    shift: u32,
    cur_slot: u64,
    cur: Vec<Event>,
    head: usize,
    late: FarHeap,
    buckets: Vec<Vec<Event>>,
    occupied: [u64; SLOT_WORDS],
    in_buckets: usize,
    far: FarHeap,
    /// Empty lists with room, for the next buckets to fill.
    spares: Vec<Vec<Event>>,
    /// While an entity-major window runs ([`EventQueue::open_window`]): its
    /// end. Events pushed before it are the running entity's own and go to
    /// `own`; 0 otherwise, so that no push goes there.
    window_end: u64,
    /// The running entity's own events inside the window, in key order.
    own: FarHeap,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_slot_shift(Self::DEFAULT_SHIFT)
    }
}

impl EventQueue {
    /// Slot width 2^11 ps (2.0 ns), for 1 us links.
    pub const DEFAULT_SHIFT: u32 = 11;

    /// An empty queue whose slots are 2^`shift` ps wide.
    pub fn with_slot_shift(shift: u32) -> Self {
        EventQueue {
            shift: shift.min(56),
            cur_slot: 0,
            cur: Vec::new(),
            head: 0,
            late: FarHeap::default(),
            buckets: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; SLOT_WORDS],
            in_buckets: 0,
            far: FarHeap::default(),
            spares: Vec::new(),
            window_end: 0,
            own: FarHeap::default(),
        }
    }

    /// The slot shift for a network whose shortest link delay is
    /// `min_delay_ps`: slots of 1/256 to 1/512 of it, so that the calendar
    /// reaches 8 to 16 link delays ahead. Any shift gives the same pops; this
    /// one keeps the far heap small and the slots short.
    pub fn shift_for_delay(min_delay_ps: u64) -> u32 {
        (min_delay_ps / 256).max(1).ilog2()
    }

    /// Slot width exponent.
    pub fn slot_shift(&self) -> u32 {
        self.shift
    }

    /// The same events in a queue whose slots are 2^`shift` ps wide.
    pub fn reshaped(self, shift: u32) -> Self {
        if shift == self.shift {
            return self;
        }
        let mut q = Self::with_slot_shift(shift);
        for ev in self.sorted_events() {
            q.push(ev.key, ev.kind);
        }
        q
    }

    /// Schedules an event.
    #[inline]
    pub fn push(&mut self, key: EventKey, kind: EventKind) {
        let ev = Event { key, kind };
        if key.time < self.window_end {
            self.own.push(ev);
            return;
        }
        let slot = key.time >> self.shift;
        if slot == self.cur_slot {
            self.late.push(ev);
        } else if slot > self.cur_slot {
            if slot - self.cur_slot < SLOTS as u64 {
                self.file_in_bucket(slot, ev);
            } else {
                self.far.push(ev);
            }
        } else {
            // Earlier than the current slot. The engine never does this
            // (the calendar moves only to a slot that starts before the
            // window's end, and every later push is at or after it); the
            // queue stays correct for any order of pushes all the same.
            self.rewind(slot);
            self.push(key, kind);
        }
    }

    /// Files `ev` in the bucket of `slot` (within the calendar's reach).
    #[inline]
    fn file_in_bucket(&mut self, slot: u64, ev: Event) {
        let b = slot as usize % SLOTS;
        let bucket = &mut self.buckets[b];
        if bucket.capacity() == 0 {
            if let Some(room) = self.spares.pop() {
                *bucket = room;
            }
        }
        bucket.push(ev);
        self.occupied[b / 64] |= 1 << (b % 64);
        self.in_buckets += 1;
    }

    /// Marks bucket `b` empty, having taken its `n` events out.
    #[inline]
    fn emptied(&mut self, b: usize, n: usize) {
        self.in_buckets -= n;
        self.occupied[b / 64] &= !(1 << (b % 64));
    }

    /// Keeps an emptied list's room for a bucket to fill, within bounds.
    #[inline]
    fn spare(&mut self, mut room: Vec<Event>) {
        if room.capacity() > 0 && room.capacity() <= BUCKET_ROOM && self.spares.len() < SPARES {
            room.clear();
            self.spares.push(room);
        }
    }

    /// Moves the calendar back to `slot` (before `cur_slot`): the current
    /// slot's events return to their bucket, and buckets now beyond reach
    /// go to the far heap.
    #[cold]
    fn rewind(&mut self, slot: u64) {
        let old = self.cur_slot;
        let mut cur: Vec<Event> = self.cur.drain(self.head..).collect();
        cur.append(&mut self.late.heap);
        self.cur.clear();
        self.head = 0;
        self.cur_slot = slot;
        // Slots old + SLOTS - (old - slot) .. old + SLOTS, which share
        // buckets with slot .. old, are now out of reach.
        let gap = (old - slot).min(SLOTS as u64);
        for k in 0..gap {
            let b = (slot + k) as usize % SLOTS;
            let mut moved = std::mem::take(&mut self.buckets[b]);
            self.emptied(b, moved.len());
            for ev in moved.drain(..) {
                self.far.push(ev);
            }
            self.spare(moved);
        }
        for ev in cur {
            self.push(ev.key, ev.kind);
        }
    }

    /// Moves the calendar to `next`, the first occupied slot after the
    /// current one (whose events are used up): its bucket becomes `cur`,
    /// sorted if `sort`, and far events now within reach join the calendar.
    fn advance_to(&mut self, next: u64, sort: bool) {
        self.cur.clear();
        self.head = 0;
        self.cur_slot = next;
        let b = next as usize % SLOTS;
        let n = self.buckets[b].len();
        if n > 0 {
            // The bucket's list becomes the current slot's; the old one,
            // empty, is spare.
            let bucket = std::mem::take(&mut self.buckets[b]);
            let used = std::mem::replace(&mut self.cur, bucket);
            self.spare(used);
            self.emptied(b, n);
        }
        let reach = next.saturating_add(SLOTS as u64);
        while self
            .far
            .peek()
            .is_some_and(|e| (e.key.time >> self.shift) < reach)
        {
            let ev = self.far.pop().expect("peeked");
            let slot = ev.key.time >> self.shift;
            if slot == next {
                self.cur.push(ev);
            } else {
                self.file_in_bucket(slot, ev);
            }
        }
        if sort {
            self.cur.sort_unstable_by_key(|e| e.key);
        }
    }

    /// The slot of the earliest event once `cur` is used up.
    fn next_slot(&self) -> Option<u64> {
        if self.in_buckets > 0 {
            Some(self.next_occupied())
        } else {
            self.far.peek().map(|e| e.key.time >> self.shift)
        }
    }

    /// The first occupied slot after `cur_slot` (there is one).
    fn next_occupied(&self) -> u64 {
        let start = (self.cur_slot as usize + 1) % SLOTS;
        let (w0, bit0) = (start / 64, start % 64);
        // The first word from `start`'s bit on, then whole words around the
        // ring, then the first word's bits before `start`.
        let first = self.occupied[w0] & (!0u64 << bit0);
        let found = if first != 0 {
            w0 * 64 + first.trailing_zeros() as usize
        } else {
            let mut at = None;
            for k in 1..=SLOT_WORDS {
                let w = (w0 + k) % SLOT_WORDS;
                let bits = if k == SLOT_WORDS {
                    self.occupied[w] & !(!0u64 << bit0)
                } else {
                    self.occupied[w]
                };
                if bits != 0 {
                    at = Some(w * 64 + bits.trailing_zeros() as usize);
                    break;
                }
            }
            at.expect("an occupied bucket")
        };
        let dist = (found + SLOTS - (self.cur_slot as usize % SLOTS)) % SLOTS;
        self.cur_slot + dist as u64
    }

    /// Time of the earliest event.
    #[inline]
    pub fn next_time(&self) -> Option<u64> {
        self.peek().map(|e| e.key.time)
    }
    /// Removes the earliest event if its time is before `end`. The
    /// calendar moves to a later slot only when that slot starts before
    /// `end`, so the next window's first pushes (flow starts, arrivals
    /// from other shards, all at `end` or later) never fall behind it.
    #[inline]
    pub fn pop_before(&mut self, end: u64) -> Option<Event> {
        if self.head == self.cur.len() {
            if let Some(l) = self.late.peek() {
                if l.key.time >= end {
                    return None;
                }
                return self.late.pop();
            }
            let next = self.next_slot()?;
            if next << self.shift >= end {
                return None;
            }
            self.advance_to(next, true);
        }
        let ev = self.cur[self.head];
        if let Some(l) = self.late.peek() {
            if l.key < ev.key {
                if l.key.time >= end {
                    return None;
                }
                return self.late.pop();
            }
        }
        if ev.key.time >= end {
            return None;
        }
        self.head += 1;
        Some(ev)
    }
    /// Moves every event before `end` to `out`, in no particular order:
    /// an entity-major window sorts them by entity itself. Only the slot
    /// that straddles `end` is sorted, to find where `end` cuts it; the
    /// slots wholly before it are taken unsorted.
    pub fn drain_before(&mut self, end: u64, out: &mut Vec<Event>) {
        loop {
            while let Some(ev) = self.cur.get(self.head).filter(|e| e.key.time < end) {
                out.push(*ev);
                self.head += 1;
            }
            while self.late.peek().is_some_and(|l| l.key.time < end) {
                out.push(self.late.pop().expect("peeked"));
            }
            if self.head < self.cur.len() || !self.late.heap.is_empty() {
                return; // the rest of this slot is at `end` or later
            }
            let Some(next) = self.next_slot() else {
                return;
            };
            if next << self.shift >= end {
                return;
            }
            let slot_end = (next + 1).checked_shl(self.shift).unwrap_or(u64::MAX);
            self.advance_to(next, slot_end > end);
        }
    }

    /// Starts an entity-major window ending at `end`, after
    /// [`EventQueue::drain_before`]: from here on, an event pushed before
    /// `end` can only be the running entity's own (any event for another
    /// entity is at least one link delay, one window, later), and it waits
    /// in a small heap of its own, read by [`EventQueue::pop_own`].
    pub fn open_window(&mut self, end: u64) {
        self.window_end = end;
    }

    /// Ends the entity-major window: every own event has run.
    pub fn close_window(&mut self) {
        debug_assert!(self.own.heap.is_empty(), "own events left in the window");
        self.window_end = 0;
    }

    /// The key of the running entity's next own event in the window.
    #[inline]
    pub fn own_next(&self) -> Option<EventKey> {
        self.own.peek().map(|e| e.key)
    }

    /// Removes and returns the running entity's next own event.
    #[inline]
    pub fn pop_own(&mut self) -> Option<Event> {
        self.own.pop()
    }

    /// The event `k` places after the next one in the current slot's sorted
    /// run, if there is one (late pushes aside): for cache hints only.
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<&Event> {
        self.cur.get(self.head + k)
    }
    /// The earliest event. It does not move the calendar.
    pub fn peek(&self) -> Option<&Event> {
        match (self.cur.get(self.head), self.late.peek()) {
            (Some(c), Some(l)) => return Some(if l.key < c.key { l } else { c }),
            (Some(c), None) => return Some(c),
            (None, Some(l)) => return Some(l),
            (None, None) => {}
        }
        if self.in_buckets > 0 {
            let b = self.next_occupied() as usize % SLOTS;
            self.buckets[b].iter().min_by_key(|e| e.key)
        } else {
            self.far.peek()
        }
    }
    /// Removes every event for which `drop` holds and returns how many. It
    /// walks the whole queue, so it is for window boundaries only.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&Event) -> bool) -> u64 {
        let before = self.len();
        self.cur.drain(..self.head);
        self.head = 0;
        self.cur.retain(|e| !drop(e));
        self.late.retain(|e| !drop(e));
        for b in 0..SLOTS {
            let bucket = &mut self.buckets[b];
            if bucket.is_empty() {
                continue;
            }
            let n = bucket.len();
            bucket.retain(|e| !drop(e));
            let left = bucket.len();
            if left == 0 {
                let room = std::mem::take(bucket);
                self.spare(room);
                self.emptied(b, n);
            } else {
                self.in_buckets -= n - left;
            }
        }
        self.far.retain(|e| !drop(e));
        self.own.retain(|e| !drop(e));
        (before - self.len()) as u64
    }
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.cur.len() - self.head
            + self.late.heap.len()
            + self.in_buckets
            + self.far.heap.len()
            + self.own.heap.len()
    }
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Every pending event, in key order.
    fn sorted_events(&self) -> Vec<Event> {
        let mut all: Vec<Event> = self.cur[self.head..].to_vec();
        all.extend_from_slice(&self.late.heap);
        for b in &self.buckets {
            all.extend_from_slice(b);
        }
        all.extend_from_slice(&self.far.heap);
        all.extend_from_slice(&self.own.heap);
        all.sort_unstable_by_key(|e| e.key);
        all
    }
}

/// Checkpoints hold the pending events as a plain sequence, in key order
/// (earlier versions wrote their heap's array order); reading one pushes
/// them back, so any order of the sequence reads back to the same pops. A
/// restored shard then takes its fresh queue's slot width
/// ([`EventQueue::reshaped`]).
impl serde::Serialize for EventQueue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.sorted_events().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for EventQueue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut q = EventQueue::default();
        for ev in Vec::<Event>::deserialize(d)? {
            q.push(ev.key, ev.kind);
        }
        Ok(q)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn key(time: u64, target: u32, source: u32, seq: u64) -> EventKey {
        EventKey {
            time,
            target,
            source,
            seq,
        }
    }

    proptest::proptest! {
        /// The packed comparison is the lexicographic order of the four
        /// parts, extremes included.
        #[test]
        fn key_order_is_lexicographic(
            a in (proptest::prop_oneof![0u64..4, proptest::num::u64::ANY], 0u32..3, proptest::prop_oneof![0u32..3, proptest::num::u32::ANY], 0u64..3),
            b in (proptest::prop_oneof![0u64..4, proptest::num::u64::ANY], 0u32..3, proptest::prop_oneof![0u32..3, proptest::num::u32::ANY], 0u64..3),
        ) {
            let (ka, kb) = (key(a.0, a.1, a.2, a.3), key(b.0, b.1, b.2, b.3));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            let top = key(u64::MAX, u32::MAX, u32::MAX, u64::MAX);
            proptest::prop_assert!(ka <= top);
        }
    }

    #[test]
    fn pops_in_key_order_whatever_the_insertion_order() {
        let keys = [
            key(5, 1, 1, 0),
            key(5, 0, 9, 3),
            key(5, 0, 2, 7),
            key(5, 0, 2, 1),
            key(1, 9, 9, 9),
        ];
        let mut sorted = keys.to_vec();
        sorted.sort();
        for perm in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 4, 0, 3, 1]] {
            let mut q = EventQueue::default();
            for i in perm {
                q.push(keys[i], EventKind::TxDone { port: 0 });
            }
            let got: Vec<EventKey> = std::iter::from_fn(|| q.pop_before(u64::MAX))
                .map(|e| e.key)
                .collect();
            assert_eq!(got, sorted);
        }
    }

    #[test]
    fn remove_where_keeps_the_order_of_the_rest() {
        let mut q = EventQueue::default();
        for (t, port) in [(30, 1), (10, 0), (20, 1), (5, 0), (40, 0)] {
            q.push(key(t, 0, 0, t), EventKind::TxDone { port });
        }
        let gone = q.remove_where(|e| e.kind == EventKind::TxDone { port: 1 });
        assert_eq!(gone, 2);
        let got: Vec<u64> = std::iter::from_fn(|| q.pop_before(u64::MAX))
            .map(|e| e.key.time)
            .collect();
        assert_eq!(got, [5, 10, 40]);
    }

    /// A xorshift64 stream from `seed` (not 0): the model tests' inputs.
    pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Interleaved pushes and pops (a xorshift stream of keys with many
    /// equal times) against a sorted model, and the same after a checkpoint
    /// round trip and after `remove_where`, for several slot widths. Most
    /// pushes land just after the last pop (the engine's pattern); some far
    /// ahead (the far heap, and its moves into the calendar); with `rewind`,
    /// some before the last pop (the calendar moving back). Pops stop at a
    /// moving window end, as the engine's do.
    fn matches_a_sorted_model(shift: u32, rewind: bool) {
        let mut rand = xorshift(0x9e37_79b9_7f4a_7c15 ^ shift as u64);
        let mut q = EventQueue::with_slot_shift(shift);
        let mut model = std::collections::BTreeSet::new();
        let mut seq = 0;
        let mut now = 0;
        for step in 0..20_000 {
            let r = rand() % 12;
            if r < 8 {
                seq += 1;
                let time = match rand() % 16 {
                    0 => now + rand() % (1 << 26),
                    1 if rewind => now.saturating_sub(rand() % (1 << 16)),
                    _ => now + rand() % 50,
                };
                let k = key(time, (rand() % 7) as u32, (rand() % 5) as u32, seq);
                q.push(
                    k,
                    EventKind::TxDone {
                        port: (seq % 3) as u16,
                    },
                );
                model.insert(k);
            } else {
                let end = now + rand() % 200;
                match q.pop_before(end) {
                    Some(e) => {
                        let m = model.pop_first().unwrap();
                        assert_eq!(e.key, m, "shift {shift} step {step}");
                        now = e.key.time;
                    }
                    None => {
                        assert!(model.first().is_none_or(|k| k.time >= end));
                        now = end;
                    }
                }
            }
            if step % 5_000 == 2_500 {
                let bytes = postcard::to_allocvec(&q).unwrap();
                q = postcard::from_bytes::<EventQueue>(&bytes)
                    .unwrap()
                    .reshaped(shift);
                let port = (step / 5_000) as u16 % 3;
                let gone = q.remove_where(|e| e.kind == EventKind::TxDone { port });
                let before = model.len();
                model.retain(|k| k.seq % 3 != port as u64);
                assert_eq!(gone as usize, before - model.len());
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.next_time(), model.first().map(|k| k.time));
            assert_eq!(q.peek().map(|e| e.key), model.first().copied());
        }
        // A sequence in any order reads back to the same pops.
        let mut keys: Vec<EventKey> = model.iter().copied().collect();
        keys.reverse();
        let events: Vec<Event> = keys
            .iter()
            .map(|&k| Event {
                key: k,
                kind: EventKind::TxDone { port: 0 },
            })
            .collect();
        let mut q: EventQueue =
            postcard::from_bytes(&postcard::to_allocvec(&events).unwrap()).unwrap();
        let got: Vec<EventKey> = std::iter::from_fn(|| q.pop_before(u64::MAX))
            .map(|e| e.key)
            .collect();
        assert_eq!(got, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn pops_match_a_sorted_model_for_any_slot_width() {
        for shift in [0, 1, 4, 12, 20, 40] {
            matches_a_sorted_model(shift, false);
            matches_a_sorted_model(shift, true);
        }
    }

    /// The calendar moves back when an event lands before its current slot,
    /// and pushes some buckets to the far heap; the pops stay in order.
    #[test]
    fn a_push_before_the_current_slot_rewinds_the_calendar() {
        let mut q = EventQueue::with_slot_shift(0);
        let last = SLOTS as u64 + 10;
        for t in [5000, 100, last, 4000] {
            q.push(key(t, 0, 0, t), EventKind::TxDone { port: 0 });
        }
        assert_eq!(q.pop_before(u64::MAX).unwrap().key.time, 100);
        assert_eq!(q.pop_before(u64::MAX).unwrap().key.time, 4000);
        // Slot 4000 is current, and slots 5000 and `last` are in buckets.
        // From slot 3 the calendar reaches slot 4098: both go to the heap.
        assert_eq!((q.far.heap.len(), q.in_buckets), (0, 2));
        q.push(key(3, 0, 0, 3), EventKind::TxDone { port: 0 });
        assert_eq!((q.far.heap.len(), q.in_buckets), (2, 0));
        let got: Vec<u64> = std::iter::from_fn(|| q.pop_before(u64::MAX))
            .map(|e| e.key.time)
            .collect();
        assert_eq!(got, [3, last, 5000]);
    }

    #[test]
    fn the_slot_width_follows_the_shortest_link_delay() {
        // 1 us / 256 = 3906 ps: slots of 2^11 = 2048 ps, reaching 8.4 us.
        assert_eq!(EventQueue::shift_for_delay(1_000_000), 11);
        // 10 ms / 256 = 39 us: 2^25 ps = 33.6 us slots.
        assert_eq!(EventQueue::shift_for_delay(10_000_000_000), 25);
        assert_eq!(EventQueue::shift_for_delay(0), 0);
    }

    /// An entity-major window: `drain_before` takes exactly the events
    /// before the window's end (unordered), leaves the rest to pop in key
    /// order, and pushes before the end while the window is open wait apart,
    /// in key order; pushes at or after it join the calendar. Against a
    /// sorted model, for several slot widths and window lengths.
    #[test]
    fn drain_before_takes_exactly_the_window_and_own_events_wait_apart() {
        for (shift, window) in [(0, 7), (4, 100), (11, 1_000_000), (20, 3_000)] {
            let mut rand = xorshift(0x2545_f491_4f6c_dd1d ^ shift as u64);
            let mut q = EventQueue::with_slot_shift(shift);
            let mut model = std::collections::BTreeSet::new();
            let mut seq = 0;
            // Pushes an event at `time` with a random target and source.
            let mut push = |q: &mut EventQueue, time: u64, r: u64| {
                seq += 1;
                let k = key(time, (r % 7) as u32, (r / 7 % 5) as u32, seq);
                q.push(k, EventKind::TxDone { port: 0 });
                k
            };
            let mut start = 0;
            for _ in 0..300 {
                let end = start + window;
                for _ in 0..(rand() % 40) {
                    let ahead = match rand() % 8 {
                        0 => rand() % (window << 12).max(1 << 20),
                        _ => rand() % (window * 3),
                    };
                    let k = push(&mut q, start + ahead, rand());
                    model.insert(k);
                }
                let mut drained = Vec::new();
                q.drain_before(end, &mut drained);
                let mut got: Vec<EventKey> = drained.iter().map(|e| e.key).collect();
                got.sort();
                let want: Vec<EventKey> =
                    model.iter().take_while(|k| k.time < end).copied().collect();
                assert_eq!(got, want, "shift {shift}");
                model.retain(|k| k.time >= end);
                // The running entities' own events inside the window.
                q.open_window(end);
                let mut own = std::collections::BTreeSet::new();
                for _ in 0..(rand() % 10) {
                    let at = start + rand() % (window * 2);
                    let k = push(&mut q, at, rand());
                    if at < end {
                        own.insert(k);
                    } else {
                        model.insert(k);
                    }
                }
                assert_eq!(q.len(), model.len() + own.len());
                while let Some(k) = q.own_next() {
                    assert_eq!(q.pop_own().map(|e| e.key), Some(k));
                    assert_eq!(own.pop_first(), Some(k), "own events in key order");
                }
                assert!(own.is_empty());
                q.close_window();
                assert_eq!(q.len(), model.len());
                assert_eq!(q.peek().map(|e| e.key), model.first().copied());
                start = end;
            }
            let rest: Vec<EventKey> = std::iter::from_fn(|| q.pop_before(u64::MAX))
                .map(|e| e.key)
                .collect();
            assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn pop_before_respects_the_window_end() {
        let mut q = EventQueue::default();
        q.push(key(10, 0, 0, 0), EventKind::TxDone { port: 0 });
        assert!(q.pop_before(10).is_none());
        assert!(q.pop_before(11).is_some());
    }
}
