//! An NDP sender's packets in flight: what was recorded when each was sent,
//! by sequence number, and their retransmission deadlines in order.
//!
//! Every data packet is filed once and settled once (its ACK, NACK or
//! bounce), so both must be cheap: a sequence number indexes a ring that
//! spans the lowest outstanding packet to the highest, and the earliest
//! deadline is kept beside it. Two ordered trees did this before: four
//! tree updates per packet, about a tenth of an 8192-host NDP run's time,
//! and about 4 KB per flow (docs/performance.md).
//!
//! Settling the packet with the earliest deadline rescans the ring. NDP
//! jitters each deadline by ±25% of the RTO, so while the RTO is long
//! against the time to send a window, that packet is about any one of
//! those outstanding and a rescan comes once per window's worth of
//! settles. Where deadlines follow sending order (an RTO near a window's
//! sending time), in-order ACKs rescan each time: a pass over the window's
//! 24-byte records per ACK.
//!
//! Timeouts are taken together (`take_due`): one pass finds every due
//! packet and the earliest of the rest. Each timer still costs that pass
//! over the window, so a huge window timing out packet by packet is
//! quadratic: 63 senders with initial windows of 20,000 packets into one
//! port run at 0.05 M events/s (docs/performance.md, "Large NDP windows").
//!
//! The order of deadlines is `(deadline, seq)`, exactly as the trees kept
//! it, so timeouts fire and resend in the same order.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// No retransmission deadline: the packet is never timed out.
pub const NO_DEADLINE: u64 = u64::MAX;

/// What a sender recorded about a packet it sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    /// When it was sent, ps.
    pub at: u64,
    /// When it times out, ps ([`NO_DEADLINE`]: never).
    pub deadline: u64,
    /// The path it took.
    pub path: u32,
    /// Whether it belongs to the first window (sent without a PULL).
    pub first_window: bool,
    /// Whether it is a retransmission.
    pub retx: bool,
}

/// Packets sent and not yet settled.
///
/// Invariants: `ring[i]` is packet `base + i`; the first and last entries
/// are `Some` (the ring is empty when nothing is outstanding); `earliest` is
/// the least `(deadline, seq)` over them, leaving out [`NO_DEADLINE`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Outstanding {
    base: u64,
    ring: VecDeque<Option<Sent>>,
    earliest: Option<(u64, u64)>,
    /// How many of them belong to the first window: a bounce asks, and a
    /// count over the ring would cost a pass per bounce.
    #[serde(default)]
    first_window: usize,
}

impl Outstanding {
    /// Files `seq`, returning what was recorded for it before, if it was
    /// still outstanding.
    pub fn insert(&mut self, seq: u64, sent: Sent) -> Option<Sent> {
        if self.ring.is_empty() {
            self.base = seq;
        }
        if seq < self.base {
            for _ in seq..self.base {
                self.ring.push_front(None);
            }
            self.base = seq;
        }
        let i = (seq - self.base) as usize;
        if i >= self.ring.len() {
            self.ring.resize(i + 1, None);
        }
        let old = self.ring[i].replace(sent);
        self.first_window += usize::from(sent.first_window);
        self.first_window -= usize::from(old.is_some_and(|o| o.first_window));
        if old.is_some_and(|o| self.earliest == Some((o.deadline, seq))) {
            self.rescan();
        }
        let key = (sent.deadline, seq);
        if sent.deadline != NO_DEADLINE && self.earliest.is_none_or(|e| key < e) {
            self.earliest = Some(key);
        }
        old
    }

    /// Settles `seq`, returning what was recorded when it was sent.
    pub fn remove(&mut self, seq: u64) -> Option<Sent> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        let s = self.ring.get_mut(i)?.take()?;
        self.first_window -= usize::from(s.first_window);
        self.trim_ends();
        if self.earliest == Some((s.deadline, seq)) {
            self.rescan();
        }
        Some(s)
    }

    /// The earliest deadline of a packet outstanding.
    pub fn earliest_deadline(&self) -> Option<u64> {
        self.earliest.map(|(d, _)| d)
    }

    /// The packets whose deadline is at or before `now`, in deadline order
    /// (ties by sequence number).
    #[cfg(test)]
    fn due(&self, now: u64) -> Vec<u64> {
        let mut due: Vec<(u64, u64)> = self.deadlines().filter(|&(d, _)| d <= now).collect();
        due.sort_unstable();
        due.into_iter().map(|(_, seq)| seq).collect()
    }

    /// How many packets of the first window are outstanding.
    pub fn first_window(&self) -> usize {
        self.first_window
    }

    /// Settles every packet whose deadline is at or before `now`, in
    /// deadline order (ties by sequence number), returning what was
    /// recorded for each. One pass and one rescan for all of them: settled
    /// one by one, in deadline order, each would be the earliest and cost
    /// a rescan (a window of n packets timing out took O(n²)).
    pub fn take_due(&mut self, now: u64) -> Vec<(u64, Sent)> {
        if self.earliest.is_none_or(|(d, _)| d > now) {
            return Vec::new();
        }
        // One pass finds the due packets and the earliest of the others.
        let (mut due, mut rest) = (Vec::new(), None::<(u64, u64)>);
        for key in self.deadlines() {
            if key.0 <= now {
                due.push(key);
            } else if rest.is_none_or(|r| key < r) {
                rest = Some(key);
            }
        }
        due.sort_unstable();
        let taken = due
            .into_iter()
            .map(|(_, seq)| {
                let s = self.ring[(seq - self.base) as usize]
                    .take()
                    .expect("a due packet is outstanding");
                self.first_window -= usize::from(s.first_window);
                (seq, s)
            })
            .collect();
        self.trim_ends();
        self.earliest = rest;
        taken
    }

    /// The packets outstanding, by sequence number.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Sent)> {
        (self.base..)
            .zip(&self.ring)
            .filter_map(|(seq, s)| s.as_ref().map(|s| (seq, s)))
    }

    /// `(deadline, seq)` of the packets outstanding that have a deadline.
    fn deadlines(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.iter()
            .filter(|(_, s)| s.deadline != NO_DEADLINE)
            .map(|(seq, s)| (s.deadline, seq))
    }

    /// How many packets are outstanding.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.iter().count()
    }

    /// Gives the ring's room back once nothing is outstanding (a finished
    /// flow keeps none).
    pub fn release(&mut self) {
        if self.ring.is_empty() {
            *self = Outstanding::default();
        }
    }

    /// Drops settled slots at both ends, so that the ring's first and last
    /// entries are outstanding packets.
    fn trim_ends(&mut self) {
        while self.ring.front().is_some_and(Option::is_none) {
            self.ring.pop_front();
            self.base += 1;
        }
        while self.ring.back().is_some_and(Option::is_none) {
            self.ring.pop_back();
        }
    }

    /// Finds the earliest deadline again, its packet having been settled.
    fn rescan(&mut self) {
        self.earliest = self.deadlines().min();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn sent(deadline: u64) -> Sent {
        Sent {
            at: 0,
            deadline,
            path: 0,
            first_window: false,
            retx: false,
        }
    }

    /// A first-window packet on odd deadlines, so that the proptest mixes both.
    fn sent_mixed(deadline: u64) -> Sent {
        Sent {
            first_window: deadline % 2 == 1,
            ..sent(deadline)
        }
    }

    #[test]
    fn settles_in_any_order_and_frees_the_room() {
        let mut o = Outstanding::default();
        for seq in 10..20 {
            assert_eq!(o.insert(seq, sent(100 - seq)), None);
        }
        assert_eq!(o.earliest_deadline(), Some(81));
        assert_eq!(o.remove(19).map(|s| s.deadline), Some(81));
        assert_eq!(o.earliest_deadline(), Some(82));
        assert_eq!(o.remove(19), None, "settled once");
        assert_eq!(o.remove(5), None, "below the ring");
        for seq in 10..19 {
            assert!(o.remove(seq).is_some());
        }
        assert_eq!((o.len(), o.earliest_deadline()), (0, None));
        assert!(o.ring.is_empty());
        // A retransmission below what is outstanding extends the ring down.
        o.insert(50, sent(7));
        o.insert(40, sent(9));
        assert_eq!(o.iter().map(|(s, _)| s).collect::<Vec<_>>(), [40, 50]);
        assert_eq!(o.due(8), [50]);
        assert_eq!(o.due(9), [50, 40]);
    }

    #[test]
    fn refiling_a_packet_replaces_its_deadline() {
        let mut o = Outstanding::default();
        o.insert(3, sent(10));
        assert_eq!(o.insert(3, sent(30)).map(|s| s.deadline), Some(10));
        assert_eq!(o.earliest_deadline(), Some(30));
        assert_eq!(o.due(29), Vec::<u64>::new());
        assert_eq!(o.len(), 1);
    }

    /// The ring spans only what is outstanding, however long a flow runs.
    #[test]
    fn the_ring_follows_the_window() {
        let mut o = Outstanding::default();
        for seq in 0..10_000u64 {
            o.insert(seq, sent(1_000_000 - seq));
            if seq >= 4 {
                o.remove(seq - 4);
            }
        }
        assert_eq!((o.len(), o.ring.len(), o.base), (4, 4, 9_996));
        assert_eq!(o.earliest_deadline(), Some(1_000_000 - 9_999));
    }

    proptest! {
        /// Against the two ordered sets it replaces: the same settled
        /// records, the same earliest deadline and the same due order.
        #[test]
        fn matches_ordered_sets(ops in proptest::collection::vec((0u8..3, 0u64..40, 0u64..60), 1..300)) {
            let mut o = Outstanding::default();
            let mut map: BTreeMap<u64, Sent> = BTreeMap::new();
            let mut set: BTreeSet<(u64, u64)> = BTreeSet::new();
            for (op, seq, d) in ops {
                let deadline = if d == 59 { NO_DEADLINE } else { d };
                match op {
                    0 | 1 => {
                        let got = o.insert(seq, sent_mixed(deadline));
                        let want = map.insert(seq, sent_mixed(deadline));
                        if let Some(old) = want {
                            set.remove(&(old.deadline, seq));
                        }
                        if deadline != NO_DEADLINE {
                            set.insert((deadline, seq));
                        }
                        prop_assert_eq!(got, want);
                    }
                    _ => {
                        let got = o.remove(seq);
                        let want = map.remove(&seq);
                        if let Some(s) = want {
                            set.remove(&(s.deadline, seq));
                        }
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(o.len(), map.len());
                prop_assert_eq!(o.first_window(), map.values().filter(|s| s.first_window).count());
                prop_assert_eq!(o.earliest_deadline(), set.first().map(|&(d, _)| d));
                let due: Vec<u64> = set.iter().take_while(|(x, _)| *x <= d).map(|&(_, s)| s).collect();
                prop_assert_eq!(o.due(d), due.clone());
                // Taking them settles exactly those, as removing them one by one would.
                let mut taken = o.clone();
                let mut one_by_one = o.clone();
                let got: Vec<(u64, Sent)> = taken.take_due(d);
                let want: Vec<(u64, Sent)> = due.iter().map(|&q| (q, one_by_one.remove(q).unwrap())).collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(taken.earliest_deadline(), one_by_one.earliest_deadline());
                prop_assert_eq!(taken.first_window(), one_by_one.first_window());
                prop_assert_eq!(taken.ring.len(), one_by_one.ring.len());
                if !taken.ring.is_empty() {
                    prop_assert_eq!(taken.base, one_by_one.base);
                }
                let seqs: Vec<u64> = o.iter().map(|(s, _)| s).collect();
                prop_assert_eq!(seqs, map.keys().copied().collect::<Vec<_>>());
            }
        }
    }
}
