//! Congestion control, separate from reliability: a sender (TCP's SACK
//! scoreboard today; go-back-N or selective repeat for RoCE and IRN later)
//! detects ACKs, losses and ECN echoes and reports them to its
//! [`CongestionControl`]; it never asks which controller it holds. The
//! controller answers with a window and, optionally, a pacing rate.
//!
//! | controller | file | response |
//! |---|---|---|
//! | NewReno | `reno.rs` | RFC 5681 / 6582; halve on ECE when ECN is on (RFC 3168) |
//! | DCTCP | `dctcp.rs` | RFC 8257: cut by alpha/2 once per window of marks |
//! | LIA | `lia.rs` | RFC 6356: NewReno with the increase coupled across subflows |
//! | DCQCN | `dcqcn.rs` | [DCQCN]: rate cut by alpha/2 per CNP, timer/byte-counter recovery (lazy timers) |
//! | TIMELY | `timely.rs` | [TH] Ch. 3 Algorithm 1: rate from the RTT gradient |
//! | pFabric | `pfabric.rs` | [PFAB] §4.2–4.3: from the BDP, capped, +1 per ACK / per window, cwnd = 1 on a timeout |
//!
//! **Rate-based controllers** (DCQCN, TIMELY, Swift) implement the same
//! trait: `window()` returns `f64::INFINITY` (or a BDP cap, as IRN uses) and
//! `pacing_bps()` the current rate. The sender that pairs with them (a
//! go-back-N or selective-repeat one, for RoCE and IRN) spaces its
//! transmissions at that rate, arming its own timer for the next departure;
//! TCP's sender does not pace. A controller that needs timers of its own
//! (DCQCN's rate-increase timer and alpha update) returns its deadline from
//! `poll_at()`: the sender folds it into its `Transport::poll_at` and calls
//! `on_timer` once it is reached (TCP's sender already does). RTT-driven
//! controllers (TIMELY) read `on_rtt_sample`; ECN-driven ones (DCQCN's
//! CNPs) `on_ecn`.
//!
//! Adding a controller: one file here with its struct, its config (if it has
//! keys) and `impl CongestionControl`, plus one line in `controllers!` below.

pub mod dcqcn;
pub mod dctcp;
pub mod lia;
pub mod pfabric;
pub mod reno;
pub mod timely;

pub use dcqcn::{Dcqcn, DcqcnParams};
pub use dctcp::{Dctcp, DctcpAlpha, DctcpParams};
pub use lia::{Lia, LiaCoupling, SubflowWindow};
pub use pfabric::PfabricWindow;
pub use reno::Reno;
pub use timely::{Timely, TimelyParams};

/// What one ACK told the sender, as a controller sees it.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AckEvent {
    /// Bytes newly acknowledged (cumulatively) by this ACK.
    pub bytes_acked: u64,
    /// The ACK echoed a CE mark (ECE).
    pub ece: bool,
    /// The first unacknowledged byte after this ACK.
    pub snd_una: u64,
    /// The next byte to be sent.
    pub snd_nxt: u64,
    /// The coupling across the connection's subflows, for multipath senders.
    pub coupling: Option<LiaCoupling>,
}

impl AckEvent {
    /// Bytes in flight (sent, not cumulatively acknowledged).
    pub fn flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
}

/// How the sender found a loss.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Loss {
    /// Duplicate ACKs or SACK: fast retransmit, entering recovery.
    FastRetransmit,
    /// The retransmission timer expired.
    Timeout,
}

/// A controller's state, for tests and traces.
#[derive(Copy, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CcMetrics {
    /// Congestion window, bytes.
    pub cwnd: f64,
    /// Slow-start threshold, bytes.
    pub ssthresh: f64,
    /// DCTCP's congestion estimate.
    pub alpha: Option<f64>,
    /// Pacing rate, bits per second.
    pub rate_bps: Option<u64>,
}

/// A congestion controller: the sender reports what it observes, in this
/// order per ACK: `on_rtt_sample` (if the ACK gave one), `on_ecn`, then,
/// after loss detection, either `on_loss(FastRetransmit)` or `on_ack`, and
/// `on_recovery_end` when the ACK ends a recovery.
pub trait CongestionControl {
    /// Congestion window, bytes.
    fn window(&self) -> f64;
    /// Pacing rate, bits per second; `None`: send as the window allows.
    fn pacing_bps(&self) -> Option<u64> {
        None
    }
    /// When the controller wants `on_timer` (rate-based controllers).
    fn poll_at(&self) -> Option<u64> {
        None
    }
    /// The deadline from `poll_at` was reached.
    fn on_timer(&mut self, _now: u64) {}
    /// An RTT measurement, picoseconds.
    fn on_rtt_sample(&mut self, _rtt_ps: u64, _now: u64) {}
    /// Every ACK, before loss detection: its ECN feedback. `may_cut` is
    /// false while the sender forbids a cut (in recovery, or already cut in
    /// this window of data). Returns whether the window was cut.
    fn on_ecn(&mut self, _ack: &AckEvent, _may_cut: bool) -> bool {
        false
    }
    /// New data acknowledged outside recovery by an ACK that did not cut:
    /// grow the window.
    fn on_ack(&mut self, ack: &AckEvent);
    /// A loss; `flight` is the bytes in flight when it was found.
    fn on_loss(&mut self, loss: Loss, flight: u64);
    /// The ACK passed the recovery point: deflate the window (RFC 6582).
    fn on_recovery_end(&mut self);
    /// Caps the window at `max` bytes (the receiver's window).
    fn limit(&mut self, max: f64);
    /// Sets the slow-start threshold of a new connection, bytes (window-based
    /// controllers; rate-based ones have none and ignore it).
    fn set_ssthresh(&mut self, _bytes: f64) {}
    /// The controller's state.
    fn metrics(&self) -> CcMetrics;
}

/// The window arithmetic every loss-based controller shares: slow start
/// with appropriate byte counting and the NewReno loss response.
#[derive(Copy, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// Congestion window, bytes.
    pub cwnd: f64,
    /// Slow-start threshold, bytes.
    pub ssthresh: f64,
    /// Segment size, bytes.
    pub mss: u64,
}

impl Window {
    /// An initial window of `iw_packets` segments of `mss` bytes, no threshold.
    pub fn new(iw_packets: u32, mss: u32) -> Self {
        let mss = mss as u64;
        Window {
            cwnd: (iw_packets as u64 * mss) as f64,
            ssthresh: f64::INFINITY,
            mss,
        }
    }

    /// Slow start with appropriate byte counting, L = 2 (RFC 3465); false
    /// (and no change) in congestion avoidance.
    pub fn slow_start(&mut self, acked: u64) -> bool {
        if self.cwnd < self.ssthresh {
            self.cwnd += (acked as f64).min(2.0 * self.mss as f64);
            return true;
        }
        false
    }

    /// ssthresh = max(FlightSize / 2, 2 MSS) (RFC 5681 (4)).
    pub fn halve(&mut self, flight: u64) {
        self.ssthresh = ((flight / 2).max(2 * self.mss)) as f64;
    }

    /// Fast recovery is over: deflate to ssthresh (RFC 6582 step 3).
    pub fn end_recovery(&mut self) {
        self.cwnd = self.ssthresh;
    }

    /// Caps the window at `max` bytes (the receiver's window).
    pub fn limit(&mut self, max: f64) {
        self.cwnd = self.cwnd.min(max);
    }

    /// NewReno's response to a loss: halve, then continue from ssthresh
    /// (fast retransmit) or from one segment (timeout, RFC 5681 (5)).
    pub fn on_loss(&mut self, loss: Loss, flight: u64) {
        self.halve(flight);
        self.cwnd = match loss {
            Loss::FastRetransmit => self.ssthresh,
            Loss::Timeout => self.mss as f64,
        };
    }

    /// The state as metrics.
    pub fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            ..CcMetrics::default()
        }
    }
}

/// Generates [`Controller`], the enum a sender stores, and its static
/// forwarding of [`CongestionControl`], from one list.
macro_rules! controllers {
    ( $( $(#[$m:meta])* $V:ident($T:ty), )* ) => {
        /// The congestion controllers psim implements.
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub enum Controller {
            $( $(#[$m])* $V($T), )*
        }

        impl CongestionControl for Controller {
            #[inline]
            fn window(&self) -> f64 {
                match self { $( Controller::$V(c) => c.window(), )* }
            }
            #[inline]
            fn pacing_bps(&self) -> Option<u64> {
                match self { $( Controller::$V(c) => c.pacing_bps(), )* }
            }
            #[inline]
            fn poll_at(&self) -> Option<u64> {
                match self { $( Controller::$V(c) => c.poll_at(), )* }
            }
            #[inline]
            fn on_timer(&mut self, now: u64) {
                match self { $( Controller::$V(c) => c.on_timer(now), )* }
            }
            #[inline]
            fn on_rtt_sample(&mut self, rtt_ps: u64, now: u64) {
                match self { $( Controller::$V(c) => c.on_rtt_sample(rtt_ps, now), )* }
            }
            #[inline]
            fn on_ecn(&mut self, ack: &AckEvent, may_cut: bool) -> bool {
                match self { $( Controller::$V(c) => c.on_ecn(ack, may_cut), )* }
            }
            #[inline]
            fn on_ack(&mut self, ack: &AckEvent) {
                match self { $( Controller::$V(c) => c.on_ack(ack), )* }
            }
            #[inline]
            fn on_loss(&mut self, loss: Loss, flight: u64) {
                match self { $( Controller::$V(c) => c.on_loss(loss, flight), )* }
            }
            #[inline]
            fn on_recovery_end(&mut self) {
                match self { $( Controller::$V(c) => c.on_recovery_end(), )* }
            }
            #[inline]
            fn limit(&mut self, max: f64) {
                match self { $( Controller::$V(c) => c.limit(max), )* }
            }
            fn set_ssthresh(&mut self, bytes: f64) {
                match self { $( Controller::$V(c) => c.set_ssthresh(bytes), )* }
            }
            fn metrics(&self) -> CcMetrics {
                match self { $( Controller::$V(c) => c.metrics(), )* }
            }
        }
    };
}

controllers! {
    /// NewReno, ECN per RFC 3168 when enabled.
    Reno(Reno),
    /// DCTCP (RFC 8257).
    Dctcp(Dctcp),
    /// MPTCP's LIA (RFC 6356).
    Lia(Lia),
    /// DCQCN's reaction point ([DCQCN], firmware or paper style).
    Dcqcn(Dcqcn),
    /// TIMELY's rate computation ([TH] Ch. 3, Algorithm 1).
    Timely(Timely),
    /// pFabric's window ([PFAB] §4.2): capped, halved on a timeout only.
    Pfabric(PfabricWindow),
}
