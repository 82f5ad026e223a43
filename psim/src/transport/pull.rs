//! The receiver's pull queue: one per host, shared by every NDP flow that
//! the host receives ([P] §3.2, [O]).
//!
//! Each arriving data packet or trimmed header adds one pull request for its
//! flow. The host sends one PULL per pull interval, so that the data the pulls
//! elicit arrives at the receiver's link rate. Connections are served round
//! robin (fair queuing, [P] §3.2); a prioritised flow's requests go ahead of
//! everyone else's (strict priority, [P] §6.1, A10).
//!
//! | parameter | default | source |
//! |---|---|---|
//! | interval | MTU payload at the receiver's link rate: 7.2 µs for 9000 B at 10 Gb/s, 1.2 µs for 1500 B | A9; [O]; [P] Fig. 12 |
//! | jitter | 0 (perfect pacing, as htsim) | [P] §6: the simulator paces perfectly |
//!
//! Requests are kept as a count per endpoint slot plus a queue of slots, so a
//! flow with many pending pulls costs one queue entry.

use super::services::HostScheduler;
use crate::rng::Rng;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// A host's pull pacer.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PullQueue {
    interval_ps: u64,
    jitter: f64,
    last_pull_ps: Option<u64>,
    hi: VecDeque<u32>,
    rr: VecDeque<u32>,
    pending: FxHashMap<u32, u32>,
    /// Measurements of the pulls this host sent.
    pub stats: PullStats,
}

/// What a host's pull pacer did (NDP V10: pull spacing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PullStats {
    /// PULLs sent, piggybacked ones included.
    pub sent: u64,
    /// Gaps between consecutive PULLs.
    pub gaps: u64,
    /// Gaps exactly one pull interval long.
    pub gaps_at_interval: u64,
    /// Smallest gap, ps.
    pub min_gap_ps: Option<u64>,
    /// The configured interval, ps.
    pub interval_ps: u64,
}

impl PullQueue {
    /// Sets the pacing interval (first NDP sink on the host) and jitter fraction.
    pub fn configure(&mut self, interval_ps: u64, jitter: f64) {
        if self.interval_ps == 0 {
            self.interval_ps = interval_ps;
            self.jitter = jitter;
        }
    }

    /// The nominal interval between PULLs.
    pub fn interval_ps(&self) -> u64 {
        self.interval_ps
    }

    /// Adds one pull request for `slot`.
    pub fn request(&mut self, slot: u32, priority: bool) {
        let n = self.pending.entry(slot).or_insert(0);
        if *n == 0 {
            if priority {
                self.hi.push_back(slot);
            } else {
                self.rr.push_back(slot);
            }
        }
        *n += 1;
    }

    /// Requests of `slot` not yet granted.
    pub fn pending(&self, slot: u32) -> u32 {
        self.pending.get(&slot).copied().unwrap_or(0)
    }

    /// How long at most until every flow now waiting has had its next turn
    /// (round robin, one PULL each, at the longest jittered gap). Flows
    /// that arrive later with priority can still delay a turn past it.
    pub fn round_ps(&self) -> u64 {
        let gap = (self.interval_ps as f64 * (1.0 + self.jitter)).ceil() as u64;
        gap * self.pending.len() as u64
    }

    /// Drops every pending request of `slot` (its flow is complete).
    pub fn flush(&mut self, slot: u32) {
        self.pending.remove(&slot);
    }

    /// Whether no request is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Spec A8: an ACK or NACK may carry the pull itself when nothing is
    /// queued and a pull interval has passed since the last PULL.
    pub fn can_piggyback(&self, now: u64) -> bool {
        self.is_empty()
            && self
                .last_pull_ps
                .is_none_or(|l| now >= l + self.interval_ps)
    }

    /// Records that a pull (standalone or piggybacked) left at `now`.
    pub fn note_pull(&mut self, now: u64) {
        let st = &mut self.stats;
        st.sent += 1;
        st.interval_ps = self.interval_ps;
        if let Some(last) = self.last_pull_ps {
            let gap = now - last;
            st.gaps += 1;
            st.gaps_at_interval += (gap == self.interval_ps) as u64;
            st.min_gap_ps = Some(st.min_gap_ps.map_or(gap, |m| m.min(gap)));
        }
        self.last_pull_ps = Some(now);
    }

    /// When the next PULL may leave, if any is pending. `jitter_draw` is a
    /// uniform draw in [-1, 1) used when jitter is configured.
    pub fn next_due(&self, now: u64, jitter_draw: f64) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        let gap = (self.interval_ps as f64 * (1.0 + self.jitter * jitter_draw)).round() as u64;
        Some(self.last_pull_ps.map_or(now, |l| (l + gap).max(now)))
    }

    /// Takes the slot whose PULL goes next: prioritised flows first, then
    /// round robin, one pull per turn.
    pub fn pop(&mut self) -> Option<u32> {
        loop {
            let (slot, from_hi) = match self.hi.pop_front() {
                Some(s) => (s, true),
                None => (self.rr.pop_front()?, false),
            };
            let Some(n) = self.pending.get_mut(&slot) else {
                continue;
            }; // flushed
            *n -= 1;
            if *n == 0 {
                self.pending.remove(&slot);
            } else if from_hi {
                self.hi.push_back(slot);
            } else {
                self.rr.push_back(slot);
            }
            return Some(slot);
        }
    }
}

impl HostScheduler for PullQueue {
    fn poll_at(&mut self, now: u64, rng: &mut Rng) -> Option<u64> {
        // The jitter draw is taken whenever a pull is pending, jitter or not,
        // so that every host's random stream stays in step across settings.
        let draw = if self.is_empty() {
            0.0
        } else {
            rand::RngExt::random::<f64>(rng) * 2.0 - 1.0
        };
        self.next_due(now, draw)
    }
    fn on_timer(&mut self, now: u64) -> Option<u32> {
        let slot = self.pop()?;
        self.note_pull(now);
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_across_connections_one_pull_per_turn() {
        let mut q = PullQueue::default();
        q.configure(7_200_000, 0.0);
        for _ in 0..3 {
            q.request(1, false);
        }
        q.request(2, false);
        q.request(3, false);
        q.request(3, false);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![1, 2, 3, 1, 3, 1]);
        assert!(q.is_empty());
    }

    /// Every waiting flow gets its turn within one gap per flow (the
    /// longest jittered gap), however many requests each one has.
    #[test]
    fn a_round_takes_one_gap_per_waiting_flow() {
        let mut q = PullQueue::default();
        q.configure(7_200_000, 0.5);
        assert_eq!(q.round_ps(), 0);
        for slot in [1, 1, 1, 2, 3] {
            q.request(slot, slot == 3);
        }
        assert_eq!(q.round_ps(), 3 * 10_800_000);
        q.flush(2);
        assert_eq!(q.round_ps(), 2 * 10_800_000);
    }

    #[test]
    fn priority_flows_go_first_and_flush_removes_requests() {
        let mut q = PullQueue::default();
        q.request(1, false);
        q.request(1, false);
        q.request(9, true);
        q.request(2, false);
        q.flush(2);
        assert_eq!(
            std::iter::from_fn(|| q.pop()).collect::<Vec<_>>(),
            vec![9, 1, 1]
        );
    }

    #[test]
    fn pacing_and_piggyback_rules() {
        let mut q = PullQueue::default();
        q.configure(1_200_000, 0.0);
        assert!(q.can_piggyback(0));
        q.note_pull(0);
        assert!(!q.can_piggyback(1_000_000));
        assert!(q.can_piggyback(1_200_000));
        q.request(4, false);
        assert!(!q.can_piggyback(5_000_000), "a queued pull must go first");
        assert_eq!(q.next_due(100, 0.0), Some(1_200_000));
        assert_eq!(q.next_due(2_000_000, 0.0), Some(2_000_000));
    }
}
