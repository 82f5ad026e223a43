//! Per-port counters, counted from the outcomes a discipline reports.

use crate::queue::{Outcome, Report};

/// Per-port counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortCounters {
    /// Packets accepted by the queue.
    pub enqueued: u64,
    /// Bytes accepted by the queue.
    pub enqueued_bytes: u64,
    /// Packets handed to the link.
    pub dequeued: u64,
    /// Bytes handed to the link.
    pub dequeued_bytes: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Packets whose payload was trimmed.
    pub trimmed: u64,
    /// Packets returned to their sender.
    pub bounced: u64,
    /// Packets ECN-marked (CE) on enqueue.
    pub marked: u64,
    /// Queued packets that left without being sent (evicted, or dropped at
    /// dequeue); also counted in `dropped`.
    pub discarded: u64,
    /// PFC PAUSE and RESUME frames this port sent (not in `dequeued`).
    pub pause_sent: u64,
    /// PFC frames received on the link this port feeds (from its peer).
    pub pause_received: u64,
    /// Time this port spent paused, summed over priorities, ps (pauses
    /// still open at the end of the run are not included). Filled from the
    /// port's pause state by `Port::totals`; zero in `Port::counters`.
    pub paused_ps: u64,
}

impl PortCounters {
    /// Counts one outcome a discipline reported for a packet of `size` bytes
    /// (as reported: a trimmed packet counts its size before the cut).
    #[inline]
    pub fn count(&mut self, outcome: Outcome, size: u32) {
        let size = size as u64;
        match outcome {
            Outcome::Queued => {
                self.enqueued += 1;
                self.enqueued_bytes += size;
            }
            Outcome::Marked => self.marked += 1,
            Outcome::Trimmed => {
                self.enqueued += 1;
                self.enqueued_bytes += size;
                self.trimmed += 1;
            }
            Outcome::TrimmedQueued => self.trimmed += 1,
            Outcome::Dropped => {
                self.dropped += 1;
                self.dropped_bytes += size;
            }
            Outcome::Evicted | Outcome::DequeueDropped => {
                self.dropped += 1;
                self.dropped_bytes += size;
                self.discarded += 1;
            }
            Outcome::Bounced => self.bounced += 1,
        }
    }

    /// Counts every report; returns how many packets the port discarded
    /// (they leave the network) and whether any was bounced.
    #[inline]
    pub fn count_all(&mut self, reports: &[Report]) -> (u64, bool) {
        let (mut dropped, mut bounced) = (0, false);
        for r in reports {
            self.count(r.outcome, r.pkt.size);
            match r.outcome {
                Outcome::Dropped | Outcome::Evicted | Outcome::DequeueDropped => dropped += 1,
                Outcome::Bounced => bounced = true,
                _ => {}
            }
        }
        (dropped, bounced)
    }

    /// The port identity: every packet admitted was sent, is still queued
    /// (`queued` packets), or was discarded after admission.
    #[inline]
    pub fn balanced(&self, queued: u32) -> bool {
        self.enqueued == self.dequeued + queued as u64 + self.discarded
    }
}

impl std::ops::AddAssign for PortCounters {
    fn add_assign(&mut self, o: Self) {
        self.enqueued += o.enqueued;
        self.enqueued_bytes += o.enqueued_bytes;
        self.dequeued += o.dequeued;
        self.dequeued_bytes += o.dequeued_bytes;
        self.dropped += o.dropped;
        self.dropped_bytes += o.dropped_bytes;
        self.trimmed += o.trimmed;
        self.bounced += o.bounced;
        self.marked += o.marked;
        self.discarded += o.discarded;
        self.pause_sent += o.pause_sent;
        self.pause_received += o.pause_received;
        self.paused_ps += o.paused_ps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_balance_over_every_outcome() {
        let mut c = PortCounters::default();
        for o in [
            Outcome::Queued,
            Outcome::Queued,
            Outcome::Queued,
            Outcome::Marked,
        ] {
            c.count(o, 100);
        }
        c.count(Outcome::Trimmed, 9064);
        c.count(Outcome::TrimmedQueued, 9064);
        c.count(Outcome::Dropped, 64);
        c.count(Outcome::Bounced, 64);
        // 4 admitted, none sent: all queued.
        assert!(c.balanced(4) && !c.balanced(3));
        c.dequeued += 1;
        c.count(Outcome::Evicted, 100);
        c.count(Outcome::DequeueDropped, 100);
        assert!(c.balanced(1) && !c.balanced(0));
        assert_eq!(
            (c.enqueued, c.enqueued_bytes, c.trimmed, c.marked),
            (4, 9364, 2, 1)
        );
        assert_eq!(
            (c.dropped, c.dropped_bytes, c.discarded, c.bounced),
            (3, 264, 2, 1)
        );
    }
}
