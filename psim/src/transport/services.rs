//! Host services: schedulers that a host runs for all of its endpoints, with
//! their own deadline, driven by the host the way it drives an endpoint.
//!
//! NDP's pull pacer ([`super::pull`], [P] §3.2) is the first: receivers queue
//! pull requests, and the pacer grants one endpoint a turn per pull interval
//! ([`super::Transport::on_grant`]). A QP arbiter or a per-host rate limiter
//! (RoCE, DCQCN) would be the next: one more field here, implementing
//! [`HostScheduler`], and one more line in [`HostServices::rearm`] and
//! [`HostServices::on_timer`]. pHost's token clock and send arbiter
//! ([`super::phost::PhostSched`]) are the second, and TIMELY's segment
//! scheduler ([`super::segment_sched`]) the third.
//!
//! The services share one engine timer: its deadline is the earliest one any
//! service wants. The pull pacer is polled only when it has no deadline (its
//! poll draws from the host's random stream); pHost's and TIMELY's schedulers
//! are polled after every input, and a changed deadline moves the timer (a
//! newer generation makes the old event stale).

use super::phost::PhostSched;
use super::pull::PullQueue;
use super::segment_sched::SegmentSched;
use crate::rng::Rng;

/// A host-owned scheduler that grants endpoints turns.
pub trait HostScheduler {
    /// When the next grant is due, if any is pending; called only while the
    /// service has no deadline scheduled (it may draw from `rng`).
    fn poll_at(&mut self, now: u64, rng: &mut Rng) -> Option<u64>;
    /// The deadline was reached: the endpoint slot granted a turn, if any.
    fn on_timer(&mut self, now: u64) -> Option<u32>;
}

/// Every service of one host, and the one deadline they hold in the engine.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HostServices {
    /// The receiver's pull pacer, shared by every receiver-driven flow (NDP, pHost).
    pub pulls: PullQueue,
    /// pHost's receiver token clock and sender arbiter.
    pub phost: PhostSched,
    /// TIMELY's segment scheduler.
    pub segments: SegmentSched,
    /// The pull pacer's deadline, if it has one.
    pull_at: Option<u64>,
    /// Deadline currently scheduled in the engine.
    timer_at: Option<u64>,
    /// Timer generation; a timer event with an older one is stale.
    gen: u32,
}

impl HostServices {
    /// The host's timer slot for its services (endpoint slots count up from 0).
    pub const TIMER_SLOT: u32 = u32::MAX;

    /// After an endpoint ran: the (time, generation) of a new deadline to
    /// schedule, if the earliest deadline any service wants changed.
    pub fn rearm(&mut self, now: u64, rng: &mut Rng) -> Option<(u64, u32)> {
        if self.pull_at.is_none() {
            self.pull_at = self.pulls.poll_at(now, rng);
        }
        let want = [
            self.pull_at,
            self.phost.poll_at(now, rng),
            self.segments.poll_at(now, rng),
        ]
        .into_iter()
        .flatten()
        .min();
        if want == self.timer_at {
            return None;
        }
        self.gen = self.gen.wrapping_add(1);
        self.timer_at = want;
        want.map(|t| (t, self.gen))
    }

    /// Whether the services' timer event of generation `gen` due at `at` is
    /// superseded: firing it would do nothing (the check [`Self::on_timer`] makes).
    pub fn is_stale(&self, gen: u32, at: u64) -> bool {
        self.gen != gen || self.timer_at != Some(at)
    }

    /// The services' timer of generation `gen` fired at `now`: `None` if it
    /// is stale, else the slot granted a turn (if any is still waiting).
    pub fn on_timer(&mut self, now: u64, gen: u32) -> Option<Option<u32>> {
        if self.is_stale(gen, now) {
            return None;
        }
        self.timer_at = None;
        if self.pull_at == Some(now) {
            self.pull_at = None;
            if let Some(slot) = self.pulls.on_timer(now) {
                return Some(Some(slot));
            }
        }
        if let Some(slot) = self.segments.on_timer(now) {
            return Some(Some(slot));
        }
        Some(self.phost.on_timer(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pull pacer and pHost's token clock share one timer: an earlier
    /// pHost deadline moves it (the old event goes stale), and the pull's
    /// own deadline comes back once pHost has nothing due.
    #[test]
    fn pull_and_phost_deadlines_share_one_timer() {
        let mut s = HostServices::default();
        let mut rng = crate::rng::stream_rng(1, 0);
        s.pulls.configure(1_000, 0.0);
        s.pulls.note_pull(0);
        s.pulls.request(7, false);
        let (t, g1) = s.rearm(0, &mut rng).expect("the pull's deadline");
        assert_eq!(t, 1_000);
        s.phost.rx.update(3, (5, 0, 3), 400);
        let (t, g2) = s.rearm(10, &mut rng).expect("moved earlier");
        assert_eq!(t, 400);
        assert_eq!(s.on_timer(1_000, g1), None, "the old event is stale");
        assert_eq!(s.on_timer(400, g2), Some(Some(3)), "pHost's grant");
        s.phost.rx.sent(400, 10_000);
        s.phost.rx.remove(3);
        let (t, g3) = s.rearm(400, &mut rng).expect("the pull again");
        assert_eq!(t, 1_000);
        assert_eq!(s.on_timer(1_000, g3), Some(Some(7)), "the pull's grant");
        assert_eq!(s.rearm(1_000, &mut rng), None, "nothing left");
    }
}
