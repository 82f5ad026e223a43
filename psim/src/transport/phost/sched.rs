//! pHost's two host-wide schedulers ([PH]; [Y] `CapabilityHost`): the
//! receiver's token clock and the sender's arbiter. Both are one per host,
//! shared by every pHost flow the host receives or sends (HP8), and both
//! grant endpoints turns through [`crate::transport::Transport::on_grant`].
//!
//! - **Token clock** (receiver): at most one token per slot (a full data
//!   packet's time at the host rate). At each decision it grants the flow
//!   with the fewest packets not yet received (ties: earlier start, then
//!   flow id) among those whose sink says they are ready: the sink folds
//!   the redundancy timer and the window/downgrade rule into one "ready at"
//!   time. A hold-off keeps the clock silent for F slots after an RTS with
//!   F free tokens, so granted data does not collide with the free data.
//! - **Send arbiter** (sender): when the NIC has finished the previous data
//!   packet, grant the flow with the fewest receiver-reported remaining
//!   packets that holds an unexpired token.
//!
//! Entries are kept in a small vector and scanned linearly at each decision,
//! as [Y]'s `CustomPriorityQueue::top` does; a receiver has at most a few
//! hundred active flows.

use crate::rng::Rng;
use crate::transport::services::HostScheduler;

/// SRPT order: (remaining packets, flow start, flow id), smaller first.
pub type SrptKey = (u64, u64, u64);

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    slot: u32,
    key: SrptKey,
    /// Receiver: when the flow may next get a token. Sender: when its latest
    /// token expires (0: it holds none).
    at: u64,
}

fn upsert(v: &mut Vec<Entry>, e: Entry) {
    match v.iter_mut().find(|x| x.slot == e.slot) {
        Some(x) => *x = e,
        None => v.push(e),
    }
}

fn best(v: &[Entry], ok: impl Fn(&Entry) -> bool) -> Option<u32> {
    v.iter()
        .filter(|e| ok(e))
        .min_by_key(|e| (e.key, e.slot))
        .map(|e| e.slot)
}

/// The receiver's token clock (one per host).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TokenClock {
    flows: Vec<Entry>,
    /// One slot after the last token: the earliest next decision.
    paced_until: u64,
    /// End of the current hold-off.
    hold_until: u64,
    /// Tokens issued (for tests and statistics).
    pub tokens: u64,
}

impl TokenClock {
    /// Adds or updates flow `slot`: its SRPT key and when it is ready.
    pub fn update(&mut self, slot: u32, key: SrptKey, ready_at: u64) {
        upsert(
            &mut self.flows,
            Entry {
                slot,
                key,
                at: ready_at,
            },
        );
    }

    /// Removes flow `slot` (finished at the receiver).
    pub fn remove(&mut self, slot: u32) {
        self.flows.retain(|e| e.slot != slot);
    }

    /// Holds the clock silent for `slots` decisions from now ([Y]
    /// `CAPABILITY_HOLD`): `add` adds them to a hold-off in progress (the
    /// paper-era code), otherwise they replace it (HEAD).
    pub fn hold_off(&mut self, now: u64, slots: u64, slot_ps: u64, add: bool) {
        let from = if add {
            self.hold_until.max(self.paced_until).max(now)
        } else {
            self.paced_until.max(now)
        };
        self.hold_until = from + slots * slot_ps;
    }

    /// When the next token can go, if any flow is (or becomes) ready.
    pub fn next_at(&self, now: u64) -> Option<u64> {
        let ready = self.flows.iter().map(|e| e.at).min()?;
        Some(ready.max(self.paced_until).max(self.hold_until).max(now))
    }

    /// The decision at `now`: the flow to grant one token, which then
    /// occupies the clock for `slot_ps`.
    fn grant(&mut self, now: u64) -> Option<u32> {
        if now < self.paced_until.max(self.hold_until) {
            return None;
        }
        let slot = best(&self.flows, |e| e.at <= now)?;
        self.tokens += 1;
        Some(slot)
    }

    /// Records that a token left at `now`; the next one waits `slot_ps`.
    pub fn sent(&mut self, now: u64, slot_ps: u64) {
        self.paced_until = now + slot_ps;
    }
}

/// The sender's arbiter (one per host).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SendArbiter {
    flows: Vec<Entry>,
    /// When the NIC finishes the last data packet granted.
    busy_until: u64,
}

impl SendArbiter {
    /// Adds or updates flow `slot`: its SRPT key (receiver-reported
    /// remaining packets) and when its latest token expires (0: none).
    pub fn update(&mut self, slot: u32, key: SrptKey, expires: u64) {
        upsert(
            &mut self.flows,
            Entry {
                slot,
                key,
                at: expires,
            },
        );
    }

    /// Removes flow `slot` (acknowledged).
    pub fn remove(&mut self, slot: u32) {
        self.flows.retain(|e| e.slot != slot);
    }

    /// When the next data packet can go, if some flow still holds a token then.
    pub fn next_at(&self, now: u64) -> Option<u64> {
        let t = self.busy_until.max(now);
        self.flows.iter().any(|e| e.at > t).then_some(t)
    }

    fn grant(&mut self, now: u64) -> Option<u32> {
        if now < self.busy_until {
            return None;
        }
        best(&self.flows, |e| e.at > now)
    }

    /// Records that a data packet taking `tx_ps` on the NIC left at `now`.
    pub fn sent(&mut self, now: u64, tx_ps: u64) {
        self.busy_until = now + tx_ps;
    }
}

/// Both pHost schedulers of one host.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PhostSched {
    /// The receiver's token clock.
    pub rx: TokenClock,
    /// The sender's arbiter.
    pub tx: SendArbiter,
}

impl HostScheduler for PhostSched {
    fn poll_at(&mut self, now: u64, _rng: &mut Rng) -> Option<u64> {
        match (self.rx.next_at(now), self.tx.next_at(now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn on_timer(&mut self, now: u64) -> Option<u32> {
        self.rx.grant(now).or_else(|| self.tx.grant(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_clock_grants_the_ready_flow_with_fewest_remaining_packets() {
        let mut c = TokenClock::default();
        c.update(1, (10, 0, 1), 0);
        c.update(2, (3, 5, 2), 0);
        c.update(3, (1, 9, 3), 500); // fewest, but not ready until 500
        c.update(4, (3, 1, 4), 0); // ties with 2 on packets, started earlier
        assert_eq!(c.next_at(100), Some(100));
        assert_eq!(c.grant(100), Some(4));
        c.sent(100, 1_000);
        assert_eq!(c.grant(600), None, "one token per slot");
        assert_eq!(c.next_at(600), Some(1_100));
        assert_eq!(c.grant(1_100), Some(3), "flow 3 is ready by now");
        c.remove(3);
        c.remove(4);
        c.update(2, (3, 5, 2), 5_000);
        c.update(1, (10, 0, 1), 7_000);
        assert_eq!(
            c.next_at(2_000),
            Some(5_000),
            "sleeps until the first is ready"
        );
        c.remove(1);
        c.remove(2);
        assert_eq!(c.next_at(2_000), None, "idle without flows");
    }

    #[test]
    fn hold_off_set_replaces_add_accumulates() {
        let mut c = TokenClock::default();
        c.update(1, (5, 0, 1), 0);
        c.hold_off(0, 4, 100, false);
        assert_eq!(c.next_at(0), Some(400));
        c.hold_off(50, 2, 100, false);
        assert_eq!(c.next_at(50), Some(250), "HEAD: set");
        c.hold_off(60, 2, 100, true);
        assert_eq!(c.next_at(60), Some(450), "paper era: added");
    }

    #[test]
    fn arbiter_sends_for_the_shortest_flow_holding_an_unexpired_token() {
        let mut a = SendArbiter::default();
        a.update(1, (2, 0, 1), 1_000);
        a.update(2, (1, 0, 2), 300);
        a.update(3, (9, 0, 3), 0);
        assert_eq!(a.next_at(0), Some(0));
        assert_eq!(a.grant(0), Some(2));
        a.sent(0, 400);
        assert_eq!(a.next_at(10), Some(400));
        assert_eq!(a.grant(400), Some(1), "flow 2's token expired at 300");
        a.sent(400, 700);
        assert_eq!(
            a.next_at(500),
            None,
            "no token outlives the NIC's busy time"
        );
    }
}
