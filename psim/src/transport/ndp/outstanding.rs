//! An NDP sender's packets in flight: what was recorded when each was sent,
//! by sequence number, and their retransmission deadlines in order.
//!
//! Every data packet is filed once and settled once (its ACK, NACK or
//! bounce), so both must be cheap: a sequence number indexes a ring that
//! spans the lowest outstanding packet to the highest. Two ordered trees
//! did this before: four tree updates per packet, about a tenth of an
//! 8192-host NDP run's time, and about 4 KB per flow (docs/performance.md).
//!
//! Beside the ring, `soon` holds the earliest deadlines, sorted: every
//! outstanding packet whose key is at or below `bound` is in it, and it
//! keeps at most a sixteenth of the window's keys. Settled or refiled
//! packets leave stale keys behind, dropped when they reach the front.
//! When it runs dry, a pass over the ring refills it with the earliest
//! sixteenth of the keys. A window of fewer than 1024 packets keeps one
//! key, the earliest, as the single field before it did; a huge window
//! timing out packet by packet costs a pass per sixteenth of the window,
//! not a pass per packet (63 senders with windows of 20,000 packets into
//! one port ran 6.0x faster; docs/performance.md, "Large NDP windows").
//!
//! The order of deadlines is `(deadline, seq)`, exactly as the trees kept
//! it, so timeouts fire and resend in the same order.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// No retransmission deadline: the packet is never timed out.
pub const NO_DEADLINE: u64 = u64::MAX;

/// A refill of `soon` keeps this share of the keys (one in `REFILL_SHARE`).
const REFILL_SHARE: usize = 16;

/// A window with fewer keys than this keeps one in `soon`, the earliest:
/// a pass over it costs little, and one key needs no room beyond it.
const SHARE_FROM_KEYS: usize = 1024;

/// How many keys `soon` keeps for a window spanning `n` packets.
fn share_of(n: usize) -> usize {
    if n < SHARE_FROM_KEYS {
        1
    } else {
        n / REFILL_SHARE
    }
}

/// `bound` when `soon` holds every key: nothing is left out.
const ALL_KEYS: (u64, u64) = (u64::MAX, u64::MAX);

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
/// are `Some` (the ring is empty when nothing is outstanding). `soon` is
/// sorted with the least key first and holds no key twice; every
/// outstanding `(deadline, seq)` at or below `bound` is in it (leaving out
/// [`NO_DEADLINE`]), and its first key, if any, is outstanding, so it is the
/// earliest. `soon` is empty only when nothing outstanding has a deadline.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outstanding {
    base: u64,
    ring: VecDeque<Option<Sent>>,
    soon: SortedKeys,
    bound: (u64, u64),
    /// How many of them belong to the first window: a bounce asks, and a
    /// count over the ring would cost a pass per bounce.
    first_window: usize,
    /// Passes over the ring to refill `soon`, for the tests' count.
    #[cfg(test)]
    #[serde(skip)]
    refills: usize,
}

impl Default for Outstanding {
    fn default() -> Self {
        Outstanding {
            base: 0,
            ring: VecDeque::new(),
            soon: SortedKeys::default(),
            bound: ALL_KEYS,
            first_window: 0,
            #[cfg(test)]
            refills: 0,
        }
    }
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
        let key = (sent.deadline, seq);
        if sent.deadline != NO_DEADLINE && key <= self.bound {
            self.file_key(key);
        }
        if old.is_some() {
            // A refiled packet's old key may have been the front.
            self.settle_front();
        }
        old
    }

    /// Settles `seq`, returning what was recorded when it was sent.
    pub fn remove(&mut self, seq: u64) -> Option<Sent> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        let s = self.ring.get_mut(i)?.take()?;
        self.first_window -= usize::from(s.first_window);
        self.trim_ends();
        if self.soon.front() == Some((s.deadline, seq)) {
            self.soon.pop_front();
            self.settle_front();
        }
        Some(s)
    }

    /// The earliest deadline of a packet outstanding.
    pub fn earliest_deadline(&self) -> Option<u64> {
        self.soon.front().map(|(d, _)| d)
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
    /// recorded for each.
    pub fn take_due(&mut self, now: u64) -> Vec<(u64, Sent)> {
        let mut taken = Vec::new();
        while let Some((deadline, seq)) = self.soon.front() {
            if deadline > now {
                break;
            }
            self.soon.pop_front();
            let s = self.ring[(seq - self.base) as usize]
                .take()
                .expect("the front of `soon` is outstanding");
            self.first_window -= usize::from(s.first_window);
            taken.push((seq, s));
            self.settle_front();
        }
        self.trim_ends();
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

    /// Whether `key` is an outstanding packet's current deadline.
    fn is_current(&self, (deadline, seq): (u64, u64)) -> bool {
        seq.checked_sub(self.base)
            .and_then(|i| self.ring.get(usize::try_from(i).ok()?))
            .is_some_and(|s| s.is_some_and(|s| s.deadline == deadline))
    }

    /// Files a key at or below `bound` into `soon`, which keeps at most
    /// its share of the window: a key above all of `soon`'s, once it holds
    /// that many, lowers `bound` instead, and a key filed into a full
    /// `soon` pushes its greatest out. A window spanning fewer than
    /// `SHARE_FROM_KEYS` packets keeps one key, the earliest, as the single
    /// field before it did.
    fn file_key(&mut self, key: (u64, u64)) {
        let share = share_of(self.ring.len());
        if let Some(last) = self.soon.back() {
            if key > last && self.soon.len() >= share {
                self.bound = last;
                return;
            }
        }
        if share == 1 {
            // One key kept: the lesser of it and the earliest (a window
            // that has shrunk may still hold more), with no room taken
            // beyond the first key's field.
            match self.soon.front() {
                None => self.soon.set_one(key),
                Some(front) => {
                    let least = front.min(key);
                    self.soon.set_one(least);
                    self.bound = least;
                }
            }
            return;
        }
        self.soon.insert(key);
        if self.soon.len() > share {
            self.soon.truncate(share);
            self.bound = self.soon.back().expect("`soon` holds its share");
        }
    }

    /// Drops stale keys from the front of `soon`, refilling it from the
    /// ring when it runs dry with keys left out.
    fn settle_front(&mut self) {
        while let Some(key) = self.soon.front() {
            if self.is_current(key) {
                return;
            }
            self.soon.pop_front();
        }
        if self.bound != ALL_KEYS {
            self.refill();
        }
    }

    /// Refills `soon` with the earliest sixteenth of the keys (one below
    /// `SHARE_FROM_KEYS` keys) in one pass over the ring, and sets `bound`
    /// to the last of them.
    fn refill(&mut self) {
        #[cfg(test)]
        {
            self.refills += 1;
        }
        if self.ring.len() >= SHARE_FROM_KEYS {
            // One pass collects the keys; a window that has that many keeps
            // its share of them.
            let mut keys: Vec<(u64, u64)> = self.deadlines().collect();
            let keep = share_of(keys.len());
            if keep > 1 {
                keys.select_nth_unstable(keep - 1);
                keys.truncate(keep);
                // The pass needed room for every key; `soon` keeps room for its share.
                keys.shrink_to_fit();
                keys.sort_unstable();
                self.bound = keys[keep - 1];
                self.soon = SortedKeys::from_sorted(keys);
            } else {
                self.keep_one(keys.len(), keys.iter().min().copied());
            }
            return;
        }
        let (mut count, mut least) = (0usize, None::<(u64, u64)>);
        for key in self.deadlines() {
            count += 1;
            if least.is_none_or(|l| key < l) {
                least = Some(key);
            }
        }
        self.keep_one(count, least);
    }

    /// A small window: the earliest of its `count` keys alone, as a single
    /// field did.
    fn keep_one(&mut self, count: usize, least: Option<(u64, u64)>) {
        self.soon = SortedKeys::default();
        if let Some(least) = least {
            self.soon.set_one(least);
        }
        self.bound = if count <= 1 {
            ALL_KEYS
        } else {
            least.unwrap_or(ALL_KEYS)
        };
    }
}

/// Keys in ascending order, none twice. The first sits in its own field,
/// so that a small window's single key takes no room beyond it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct SortedKeys {
    first: Option<(u64, u64)>,
    rest: VecDeque<(u64, u64)>,
}

impl SortedKeys {
    /// The least key kept.
    fn front(&self) -> Option<(u64, u64)> {
        self.first
    }

    /// The greatest key kept.
    fn back(&self) -> Option<(u64, u64)> {
        self.rest.back().copied().or(self.first)
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    fn pop_front(&mut self) {
        self.first = self.rest.pop_front();
    }

    /// Keeps `key` alone.
    fn set_one(&mut self, key: (u64, u64)) {
        self.first = Some(key);
        self.rest.clear();
    }

    /// Files `key` in order, unless it is kept already.
    fn insert(&mut self, key: (u64, u64)) {
        match self.first {
            None => self.first = Some(key),
            Some(first) if key < first => {
                self.rest.push_front(first);
                self.first = Some(key);
            }
            Some(first) if key == first => {}
            Some(_) => {
                if let Err(at) = self.rest.binary_search(&key) {
                    self.rest.insert(at, key);
                }
            }
        }
    }

    /// Keeps the least `n` keys, `n` at least one.
    fn truncate(&mut self, n: usize) {
        self.rest.truncate(n - 1);
    }

    /// From keys sorted in ascending order, none twice.
    fn from_sorted(keys: Vec<(u64, u64)>) -> Self {
        let mut rest = VecDeque::from(keys);
        SortedKeys {
            first: rest.pop_front(),
            rest,
        }
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

    /// A window that shrinks below `SHARE_FROM_KEYS` keeps its keys until
    /// the next one is filed, which then leaves the earliest alone.
    #[test]
    fn a_shrinking_window_keeps_its_earliest_key() {
        let mut o = Outstanding::default();
        for seq in 0..2_000u64 {
            o.insert(seq, sent(10_000 + seq));
        }
        assert_eq!(o.take_due(10_000).len(), 1);
        assert!(o.soon.len() > 1, "a large window keeps several keys");
        // Settle the newest packets: the ring shrinks under 1024.
        for seq in 100..2_000u64 {
            o.remove(seq);
        }
        assert!(o.ring.len() < SHARE_FROM_KEYS);
        // A key between the earliest and the last kept.
        o.insert(100, sent(10_050));
        assert!(o.ring.len() < SHARE_FROM_KEYS);
        assert_eq!(o.earliest_deadline(), Some(10_001));
        let due: Vec<u64> = o.take_due(10_060).into_iter().map(|(q, _)| q).collect();
        let mut want: Vec<u64> = (1..=60).collect();
        want.insert(50, 100);
        assert_eq!(due, want);
    }

    /// A huge window timing out packet by packet refills `soon` about
    /// REFILL_SHARE times per halving of the window, not once per packet.
    #[test]
    fn a_huge_window_times_out_without_a_pass_per_packet() {
        let n = 20_000u64;
        let mut o = Outstanding::default();
        // Deadlines out of sending order, as NDP's jitter makes them.
        let deadline = |seq: u64| 1_000 + (seq * 7_919) % n;
        for seq in 0..n {
            o.insert(seq, sent(deadline(seq)));
        }
        let mut order = Vec::new();
        for now in 1_000..1_000 + n {
            let due = o.take_due(now);
            assert_eq!(due.len(), 1, "one packet is due at {now}");
            order.push(due[0].0);
            if now % 3 == 0 {
                // A resend, due after everything else.
                o.insert(n + now, sent(10 * n + now));
            }
        }
        let mut want: Vec<u64> = (0..n).collect();
        want.sort_by_key(|&seq| deadline(seq));
        assert_eq!(order, want);
        // ln(20,000) x 16 is about 160; a pass per packet would be 20,000.
        assert!(o.refills < 400, "{} passes over the window", o.refills);
        assert!(o.soon.len() <= share_of(o.ring.len()) + 1);
    }

    /// Keys that arrive below the bound join `soon`, and stale keys do not
    /// pile up behind a long-lived earliest one.
    #[test]
    fn stale_keys_stay_bounded() {
        let mut o = Outstanding::default();
        o.insert(0, sent(1));
        for seq in 1..10_000u64 {
            // Each deadline is below the one before, so each key is filed
            // into `soon`; settled, it leaves a stale key behind the first.
            o.insert(seq, sent(1_000_000 - seq));
            if seq > 3 {
                o.remove(seq - 3);
            }
        }
        assert_eq!(o.earliest_deadline(), Some(1));
        let share = share_of(o.ring.len());
        assert!(o.soon.len() <= share, "{} keys", o.soon.len());
        assert_eq!(o.take_due(1_000_000 - 9_998).len(), 3);
    }

    /// The same check as `matches_ordered_sets`, over one sequence of
    /// operations: the earliest deadline after each, everything else after
    /// every `every`-th.
    fn check_against_ordered_sets(
        ops: Vec<(u8, u64, u64)>,
        no_deadline: u64,
        every: usize,
    ) -> Result<(), TestCaseError> {
        let mut o = Outstanding::default();
        let mut map: BTreeMap<u64, Sent> = BTreeMap::new();
        let mut set: BTreeSet<(u64, u64)> = BTreeSet::new();
        for (i, (op, seq, d)) in ops.into_iter().enumerate() {
            let deadline = if d == no_deadline { NO_DEADLINE } else { d };
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
            prop_assert_eq!(o.earliest_deadline(), set.first().map(|&(d, _)| d));
            if i % every != 0 {
                continue;
            }
            prop_assert_eq!(o.len(), map.len());
            prop_assert_eq!(
                o.first_window(),
                map.values().filter(|s| s.first_window).count()
            );
            prop_assert_eq!(o.earliest_deadline(), set.first().map(|&(d, _)| d));
            let due: Vec<u64> = set
                .iter()
                .take_while(|(x, _)| *x <= d)
                .map(|&(_, s)| s)
                .collect();
            prop_assert_eq!(o.due(d), due.clone());
            // Taking them settles exactly those, as removing them one by one would.
            let mut taken = o.clone();
            let mut one_by_one = o.clone();
            let got: Vec<(u64, Sent)> = taken.take_due(d);
            let want: Vec<(u64, Sent)> = due
                .iter()
                .map(|&q| (q, one_by_one.remove(q).unwrap()))
                .collect();
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
        Ok(())
    }

    proptest! {
        /// Against the two ordered sets it replaces: the same settled
        /// records, the same earliest deadline and the same due order.
        #[test]
        fn matches_ordered_sets(ops in proptest::collection::vec((0u8..3, 0u64..40, 0u64..60), 1..300)) {
            check_against_ordered_sets(ops, 59, 1)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        /// The same over windows of thousands of packets, where a refill
        /// keeps many keys and new keys fall below the bound.
        #[test]
        fn matches_ordered_sets_in_large_windows(ops in proptest::collection::vec((0u8..3, 0u64..4000, 0u64..20_000), 1..6000)) {
            check_against_ordered_sets(ops, 19_999, 97)?;
        }
    }
}
