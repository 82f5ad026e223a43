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

/// The total order key of an event.
#[derive(
    Copy,
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
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

/// Children per node of the pending-event heap. Four halves the depth of a
/// binary heap (8 levels instead of 16 for the ~50 000 events pending at
/// 8192 hosts), and a node's four children are adjacent in memory, so a pop
/// touches fewer cache lines (measured in docs/performance.md).
const ARITY: usize = 4;
// `sift_down`'s tournament is written out for exactly four children.
const _: () = assert!(ARITY == 4);

/// The pending-event set of one shard: a 4-ary min-heap on [`EventKey`].
///
/// Keys are unique, so the pop order is the key order whatever the heap's
/// layout: the layout (and so the arity) cannot change a result.
#[derive(Default)]
pub struct EventQueue {
    heap: Vec<Event>,
}

impl EventQueue {
    /// Schedules an event.
    #[inline]
    pub fn push(&mut self, key: EventKey, kind: EventKind) {
        let ev = Event { key, kind };
        let mut i = self.heap.len();
        self.heap.push(ev);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = ev;
    }
    /// Time of the earliest event.
    #[inline]
    pub fn next_time(&self) -> Option<u64> {
        self.heap.first().map(|e| e.key.time)
    }
    /// Removes the earliest event if its time is before `end`.
    #[inline]
    pub fn pop_before(&mut self, end: u64) -> Option<Event> {
        if self.heap.first()?.key.time >= end {
            return None;
        }
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
    /// The earliest event.
    #[inline]
    pub fn peek(&self) -> Option<&Event> {
        self.heap.first()
    }
    /// Removes every event for which `drop` holds and returns how many. It
    /// walks and rebuilds the whole heap, so it is for window boundaries
    /// only.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&Event) -> bool) -> u64 {
        let before = self.heap.len();
        self.heap.retain(|e| !drop(e));
        let gone = before - self.heap.len();
        if gone > 0 {
            // `retain` keeps the heap order only when it removes nothing.
            self.heapify();
        }
        gone as u64
    }
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Checkpoints hold the pending events as a plain sequence (as the binary
/// heap of earlier versions wrote them); reading one rebuilds the heap, so
/// any order of the sequence reads back to the same pops.
impl serde::Serialize for EventQueue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.heap.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for EventQueue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut q = EventQueue {
            heap: Vec::deserialize(d)?,
        };
        q.heapify();
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(time: u64, target: u32, source: u32, seq: u64) -> EventKey {
        EventKey {
            time,
            target,
            source,
            seq,
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

    /// Interleaved pushes and pops (a xorshift stream of keys with many
    /// equal times) against a sorted model, and the same after a checkpoint
    /// round trip and after `remove_where`.
    #[test]
    fn pops_match_a_sorted_model_under_interleaving_and_round_trips() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = EventQueue::default();
        let mut model = std::collections::BTreeSet::new();
        let mut seq = 0;
        let mut now = 0;
        for step in 0..20_000 {
            if rand() % 3 != 0 {
                seq += 1;
                let k = key(
                    now + rand() % 50,
                    (rand() % 7) as u32,
                    (rand() % 5) as u32,
                    seq,
                );
                q.push(
                    k,
                    EventKind::TxDone {
                        port: (seq % 3) as u16,
                    },
                );
                model.insert(k);
            } else if let Some(e) = q.pop_before(u64::MAX) {
                let m = model.pop_first().unwrap();
                assert_eq!(e.key, m, "step {step}");
                now = e.key.time;
            }
            if step == 10_000 {
                let bytes = postcard::to_allocvec(&q).unwrap();
                q = postcard::from_bytes(&bytes).unwrap();
                let gone = q.remove_where(|e| e.kind == EventKind::TxDone { port: 1 });
                let before = model.len();
                model.retain(|k| k.seq % 3 != 1);
                assert_eq!(gone as usize, before - model.len());
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.next_time(), model.first().map(|k| k.time));
        }
        // A sequence in any order reads back as a valid heap.
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
    fn pop_before_respects_the_window_end() {
        let mut q = EventQueue::default();
        q.push(key(10, 0, 0, 0), EventKind::TxDone { port: 0 });
        assert!(q.pop_before(10).is_none());
        assert!(q.pop_before(11).is_some());
    }
}
