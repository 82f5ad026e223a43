//! The window boundary's view of a shard: its next live event, with
//! superseded timers swept out first (docs/engine.md, "No idle windows").

use super::{Node, Shard};
use crate::engine::event::{Event, EventCounts, EventKind};

impl Shard {
    /// Earliest time this shard has work: an event or a flow start. Called
    /// at a window boundary: when the earliest event is a superseded timer,
    /// it first drops every superseded timer, so that no window runs only
    /// for them and the run ends once only they remain.
    ///
    /// This is exact. A stale timer does nothing when it fires and stays
    /// stale (its slot's generation only grows), so dropping it early is the
    /// same as processing it; it is counted as processed, as before, so the
    /// event count does not change. The end time never depended on stale
    /// timers (`last_event_ps` skips them). Only timers before the stop time
    /// are dropped: later ones were never processed. The check costs a peek
    /// per boundary and nothing per event; the sweep (one pass over the
    /// heap) runs only at boundaries whose earliest event is stale.
    pub fn next_time(&mut self) -> Option<u64> {
        if self.error.is_some() {
            return None;
        }
        let stop = self.shared.stop_ps.unwrap_or(u64::MAX);
        let stale = |nodes: &[Node], local: &[u32], ev: &Event| {
            let EventKind::Timer { slot, gen } = ev.kind else {
                return false;
            };
            let at = ev.key.time;
            at < stop
                && nodes[local[ev.key.target as usize] as usize]
                    .host
                    .as_deref()
                    .is_some_and(|h| h.timer_is_stale(slot, gen, at))
        };
        let (nodes, local) = (&self.nodes, &self.shared.local);
        if self.events.peek().is_some_and(|e| stale(nodes, local, e)) {
            let n = self.events.remove_where(|e| stale(nodes, local, e));
            self.events_processed += n;
            self.event_counts.0[EventCounts::TIMER_STALE] += n;
        }
        match (self.events.next_time(), self.generator.peek_start()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
