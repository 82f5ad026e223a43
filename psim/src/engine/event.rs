//! Events and their total order.
//!
//! Events are ordered by `(time, target entity, source entity, source
//! sequence number)`. Every part of the key is a property of the simulated
//! system, not of the partition: the sequence number is a counter kept by the
//! entity that created the event. Two runs with different shard counts
//! therefore process every entity's events in the same order. No two events
//! share a key, since one source never reuses a sequence number.

use std::cmp::Ordering;

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
    Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
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
    /// A superseded timer (processed in a window or dropped at a boundary).
    pub const TIMER_STALE: usize = 8;
    /// [`EventKind::TxDone`] after which the port went idle (nothing to
    /// send): the events a deferred completion could save (docs/engine.md).
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
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest key.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// The pending-event set of one shard.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct EventQueue {
    heap: std::collections::BinaryHeap<Event>,
}

impl EventQueue {
    /// Schedules an event.
    #[inline]
    pub fn push(&mut self, key: EventKey, kind: EventKind) {
        self.heap.push(Event { key, kind });
    }
    /// Time of the earliest event.
    #[inline]
    pub fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.key.time)
    }
    /// Removes the earliest event if its time is before `end`.
    #[inline]
    pub fn pop_before(&mut self, end: u64) -> Option<Event> {
        if self.heap.peek()?.key.time < end {
            self.heap.pop()
        } else {
            None
        }
    }
    /// The earliest event.
    #[inline]
    pub fn peek(&self) -> Option<&Event> {
        self.heap.peek()
    }
    /// Removes every event for which `drop` holds and returns how many. It
    /// walks and rebuilds the whole heap, so it is for window boundaries
    /// only; it does not call the heap's `pop`, so the per-event loop keeps
    /// its one inlined copy of it.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&Event) -> bool) -> u64 {
        let before = self.heap.len();
        self.heap.retain(|e| !drop(e));
        (before - self.heap.len()) as u64
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

    #[test]
    fn pop_before_respects_the_window_end() {
        let mut q = EventQueue::default();
        q.push(key(10, 0, 0, 0), EventKind::TxDone { port: 0 });
        assert!(q.pop_before(10).is_none());
        assert!(q.pop_before(11).is_some());
    }
}
