//! Host services: schedulers that a host runs for all of its endpoints, with
//! their own deadline, driven by the host the way it drives an endpoint.
//!
//! NDP's pull pacer ([`super::pull`], [P] §3.2) is the first: receivers queue
//! pull requests, and the pacer grants one endpoint a turn per pull interval
//! ([`super::Transport::on_grant`]). A QP arbiter or a per-host rate limiter
//! (RoCE, DCQCN) would be the next: one more field here, implementing
//! [`HostScheduler`], and one more line in [`HostServices::rearm`] and
//! [`HostServices::on_timer`].

use super::pull::PullQueue;
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
#[derive(Clone, Debug, Default)]
pub struct HostServices {
    /// The receiver's pull pacer, shared by every receiver-driven flow (NDP, pHost).
    pub pulls: PullQueue,
    /// Deadline currently scheduled in the engine.
    timer_at: Option<u64>,
    /// Timer generation; a timer event with an older one is stale.
    gen: u32,
}

impl HostServices {
    /// The host's timer slot for its services (endpoint slots count up from 0).
    pub const TIMER_SLOT: u32 = u32::MAX;

    /// After an endpoint ran: the (time, generation) of a new deadline to
    /// schedule, if none is pending and a service wants one.
    pub fn rearm(&mut self, now: u64, rng: &mut Rng) -> Option<(u64, u32)> {
        if self.timer_at.is_some() {
            return None;
        }
        let t = self.pulls.poll_at(now, rng)?;
        self.gen = self.gen.wrapping_add(1);
        self.timer_at = Some(t);
        Some((t, self.gen))
    }

    /// The services' timer of generation `gen` fired at `now`: `None` if it
    /// is stale, else the slot granted a turn (if any is still waiting).
    pub fn on_timer(&mut self, now: u64, gen: u32) -> Option<Option<u32>> {
        if self.gen != gen || self.timer_at != Some(now) {
            return None;
        }
        self.timer_at = None;
        Some(self.pulls.on_timer(now))
    }
}
