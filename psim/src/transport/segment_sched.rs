//! TIMELY's rate engine scheduler ([TH] §3.2.3): one scheduler per host for
//! every TIMELY flow on it. Each flow asks for a turn once its next segment
//! is due (its pacing delay has passed); when the NIC has finished the last
//! burst, the scheduler grants the due flows one segment each, in round
//! robin ("segments with send times in the past are serviced in
//! round-robin fashion; segments with future send times are queued"). The
//! granted flow hands its whole segment to the NIC at once, and the NIC
//! sends it as one line-rate burst, so bursts of the host's flows follow
//! each other instead of interleaving packet by packet in the NIC queue.
//!
//! A flow's RTT sample then starts when its burst starts (`t_send` in
//! [TH] Fig. 3.5): time waiting for a turn is the rate engine's, not the
//! network's.

use std::collections::BTreeMap;

use super::services::HostScheduler;
use crate::rng::Rng;

/// The host's TIMELY segment scheduler.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SegmentSched {
    /// Flows waiting for a turn: endpoint slot → when its segment is due.
    waiting: BTreeMap<u32, u64>,
    /// The NIC is busy with the last granted burst until then.
    free_at: u64,
    /// The slot granted last (the round-robin position).
    last: Option<u32>,
}

impl SegmentSched {
    /// Endpoint `slot` has a segment due at `due`.
    pub fn request(&mut self, slot: u32, due: u64) {
        let d = self.waiting.entry(slot).or_insert(due);
        *d = (*d).min(due);
    }

    /// The granted burst keeps the NIC busy until `t`.
    pub fn busy_until(&mut self, t: u64) {
        self.free_at = self.free_at.max(t);
    }
}

impl HostScheduler for SegmentSched {
    fn poll_at(&mut self, now: u64, _rng: &mut Rng) -> Option<u64> {
        let due = self.waiting.values().copied().min()?;
        Some(due.max(self.free_at).max(now))
    }

    fn on_timer(&mut self, now: u64) -> Option<u32> {
        if self.free_at > now {
            return None;
        }
        let due = |(&s, &d): (&u32, &u64)| (d <= now).then_some(s);
        let after = self.last.map_or(0, |l| l.saturating_add(1));
        let slot = self
            .waiting
            .range(after..)
            .find_map(due)
            .or_else(|| self.waiting.range(..after).find_map(due))?;
        self.waiting.remove(&slot);
        self.last = Some(slot);
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_flows_take_turns_after_each_burst() {
        let mut s = SegmentSched::default();
        let mut rng = crate::rng::stream_rng(1, 0);
        assert_eq!(s.poll_at(0, &mut rng), None);
        s.request(2, 0);
        s.request(0, 0);
        s.request(1, 50);
        // Slots 0 and 2 are due at once: lowest slot first, then round robin.
        assert_eq!(s.poll_at(0, &mut rng), Some(0));
        assert_eq!(s.on_timer(0), Some(0));
        s.busy_until(30);
        // The NIC is busy with slot 0's burst until 30: nothing before.
        assert_eq!(s.on_timer(10), None);
        assert_eq!(s.poll_at(10, &mut rng), Some(30));
        assert_eq!(s.on_timer(30), Some(2));
        s.busy_until(60);
        // Slot 1 became due at 50; the NIC frees at 60.
        assert_eq!(s.poll_at(30, &mut rng), Some(60));
        s.request(0, 40);
        // Both 0 and 1 are due at 60: after 2, round robin wraps to 0.
        assert_eq!(s.on_timer(60), Some(0));
        assert_eq!(s.on_timer(60), Some(1));
        assert_eq!(s.poll_at(60, &mut rng), None, "nobody waits");
        // A second request keeps the earlier due time.
        s.request(3, 100);
        s.request(3, 90);
        assert_eq!(s.poll_at(60, &mut rng), Some(90));
    }
}
