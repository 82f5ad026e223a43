//! Application-limited senders: a `[[traffic]]` entry's `app` table gives
//! its flows an application that hands the transport messages at a set
//! offered rate, instead of a backlog that is all there at the start.
//! [TH] §3.5.2's Clos runs offer RPC load this way: each client issues
//! 64 KB messages on long-lived connections at an offered load, and the
//! congestion controller's state lives across messages.
//!
//! | key (`app = { ... }`) | default | meaning |
//! |---|---|---|
//! | `message_bytes` | – (required) | bytes per message, rounded up to whole packets of the protocol's MTU |
//! | `gbps` | – (required) | offered load of each flow, Gb/s of payload: messages arrive every `message_bytes × 8 / gbps` on average |
//! | `arrivals` | `"poisson"` | `"poisson"`: exponential gaps from the host's random stream; `"periodic"`: fixed gaps |
//! | `first_bytes` | `message_bytes` | bytes of the first message, rounded up to whole packets: an initial buffer before the paced messages (a video player's start-up buffer, [TH] §2.4.1: 1.5 MB, then 64 KB every 100 ms) |
//!
//! The first message arrives when the flow starts. A sized flow stops at
//! its size. Messages that arrive faster than the transport sends them
//! queue at the sender (a count, so the queue costs no memory); the sender
//! wakes at the next arrival only when it has nothing left to send.
//!
//! Which transports take messages: the RoCE family (`roce`, `dcqcn`,
//! `timely` and the IRN variants), whose senders send packet sequence
//! numbers, and the single-path TCP family (`tcp`, `dctcp`, `rc3`), whose
//! senders take bytes up to the packets released so far. A scenario that
//! gives `app` to another protocol is refused.

use crate::config::ConfigError;
use crate::rng::Rng;
use crate::transport::config::bad;
use rand::RngExt;

/// How message arrivals are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exponential gaps: a Poisson process at the offered rate.
    #[default]
    Poisson,
    /// Fixed gaps.
    Periodic,
}

/// A traffic entry's `app` table.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Bytes per message.
    pub message_bytes: u64,
    /// Offered load per flow, Gb/s of payload.
    pub gbps: f64,
    /// Spacing of the arrivals.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// Bytes of the first message (None: `message_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bytes: Option<u64>,
}

impl AppSpec {
    /// Checks the table; `key` names it (`traffic[2].app`).
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |name: &str| format!("{key}.{name}");
        if self.message_bytes == 0 || self.message_bytes > 1 << 40 {
            return Err(bad(
                &k("message_bytes"),
                self.message_bytes,
                "must be 1 byte to 1 TiB",
            ));
        }
        if !(self.gbps.is_finite() && self.gbps > 0.0 && self.gbps <= 1e6) {
            return Err(bad(
                &k("gbps"),
                self.gbps,
                "must be above 0 and at most 10^6",
            ));
        }
        if let Some(b) = self.first_bytes {
            if b == 0 || b > 1 << 40 {
                return Err(bad(&k("first_bytes"), b, "must be 1 byte to 1 TiB"));
            }
        }
        if self.mean_gap_ps() < 1.0 {
            return Err(bad(
                &k("gbps"),
                self.gbps,
                "messages would arrive less than 1 ps apart: raise message_bytes or lower gbps",
            ));
        }
        Ok(())
    }

    /// Mean time between message arrivals, picoseconds.
    fn mean_gap_ps(&self) -> f64 {
        self.message_bytes as f64 * 8.0 / self.gbps * 1e3
    }
}

/// The sender's view of its application: packets handed over so far, and
/// when the next message arrives.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MessageSupply {
    /// Packets per message, and each packet's payload bytes.
    per_message: u64,
    /// Packets of the first message.
    first: u64,
    mtu: u32,
    mean_gap_ps: f64,
    poisson: bool,
    /// Packets handed over so far (sequence numbers below this may be sent).
    released: u64,
    /// Arrival time of the next message, picoseconds.
    next_ps: f64,
    /// Packets released and the time at the last [`Self::offered_bps`].
    mark: (u64, u64),
}

impl MessageSupply {
    /// The supply of `spec` for packets of `mtu` payload bytes.
    pub fn new(spec: &AppSpec, mtu: u32) -> Self {
        let packets = |bytes: u64| bytes.div_ceil(u64::from(mtu.max(1)));
        MessageSupply {
            per_message: packets(spec.message_bytes),
            first: packets(spec.first_bytes.unwrap_or(spec.message_bytes)),
            mtu,
            mean_gap_ps: spec.mean_gap_ps(),
            poisson: spec.arrivals == Arrivals::Poisson,
            released: 0,
            next_ps: 0.0,
            mark: (0, 0),
        }
    }

    /// The flow starts at `now`: its first message arrives.
    pub fn start(&mut self, now: u64, rng: &mut Rng) {
        self.mark = (0, now);
        self.released = self.first;
        self.next_ps = now as f64 + self.gap(rng);
    }

    fn gap(&self, rng: &mut Rng) -> f64 {
        if self.poisson {
            // 1 - U is in (0, 1]: the log is finite.
            -(1.0 - rng.random::<f64>()).ln() * self.mean_gap_ps
        } else {
            self.mean_gap_ps
        }
    }

    /// Hands over every message that has arrived by `now`; returns the
    /// packets released so far.
    pub fn catch_up(&mut self, now: u64, rng: &mut Rng) -> u64 {
        while self.next_ps <= now as f64 {
            self.released = self.released.saturating_add(self.per_message);
            self.next_ps += self.gap(rng);
        }
        self.released
    }

    /// The rate the application offered since the last call (or the
    /// start), bits per second of payload; infinite when no time has passed.
    pub fn offered_bps(&mut self, now: u64) -> f64 {
        let (released, at) = std::mem::replace(&mut self.mark, (self.released, now));
        let bits = (self.released - released) as f64 * f64::from(self.mtu) * 8.0;
        match now.saturating_sub(at) {
            0 => f64::INFINITY,
            dt => bits / (dt as f64 * 1e-12),
        }
    }

    /// Packets released so far (as of the last `catch_up`).
    pub fn released(&self) -> u64 {
        self.released
    }

    /// When the next message arrives, picoseconds (rounded up).
    pub fn next_arrival(&self) -> u64 {
        self.next_ps.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn spec(arrivals: Arrivals) -> AppSpec {
        AppSpec {
            message_bytes: 65_536,
            gbps: 2.0,
            arrivals,
            first_bytes: None,
        }
    }

    /// 64 KB at 2 Gb/s: a message every 65536 × 8 / 2e9 s = 262.144 µs, of
    /// 64 packets of 1024 B.
    #[test]
    fn periodic_messages_arrive_at_the_offered_rate() {
        let mut rng = Rng::seed_from_u64(1);
        let mut s = MessageSupply::new(&spec(Arrivals::Periodic), 1024);
        s.start(1_000, &mut rng);
        assert_eq!(s.released(), 64);
        assert_eq!(s.next_arrival(), 1_000 + 262_144_000);
        assert_eq!(s.catch_up(262_144_999, &mut rng), 64);
        assert_eq!(s.catch_up(262_145_000, &mut rng), 128);
        // Ten gaps later: ten more messages, however late the catch-up.
        assert_eq!(s.catch_up(1_000 + 11 * 262_144_000, &mut rng), 12 * 64);
    }

    /// Poisson arrivals: over 20,000 gaps the offered rate is within 3% of
    /// 2 Gb/s (the count's relative deviation is 1/sqrt(20000) = 0.7%).
    #[test]
    fn poisson_messages_average_the_offered_rate() {
        let mut rng = Rng::seed_from_u64(7);
        let mut s = MessageSupply::new(&spec(Arrivals::Poisson), 1024);
        s.start(0, &mut rng);
        let horizon = 20_000 * 262_144_000u64;
        let packets = s.catch_up(horizon, &mut rng);
        let gbps = packets as f64 * 1024.0 * 8.0 / (horizon as f64 * 1e-12) / 1e9;
        assert!((gbps / 2.0 - 1.0).abs() < 0.03, "{gbps} Gb/s");
    }

    /// Two 64 KB messages (one at the start, one 262.144 µs later) in
    /// 300 µs offer 2 × 65536 × 8 / 300 µs = 3.495 Gb/s; the next call
    /// counts from there.
    #[test]
    fn the_offered_rate_counts_the_messages_since_the_last_call() {
        let mut rng = Rng::seed_from_u64(1);
        let mut s = MessageSupply::new(&spec(Arrivals::Periodic), 1024);
        s.start(0, &mut rng);
        s.catch_up(300_000_000, &mut rng);
        let want = 2.0 * 65536.0 * 8.0 / 300e-6;
        assert!((s.offered_bps(300_000_000) / want - 1.0).abs() < 1e-12);
        assert_eq!(s.offered_bps(300_000_000), f64::INFINITY);
        assert_eq!(s.offered_bps(400_000_000), 0.0);
    }

    /// A start-up buffer: the first message is `first_bytes` (1.5 MB of
    /// 1460-byte packets = 1028 packets), then 64 KB (45 packets) every
    /// 100 ms: 65536 × 8 / 0.00524288 Gb/s = 100 ms.
    #[test]
    fn the_first_message_can_be_a_larger_buffer() {
        let mut rng = Rng::seed_from_u64(1);
        let spec = AppSpec {
            message_bytes: 65_536,
            gbps: 0.005_242_88,
            arrivals: Arrivals::Periodic,
            first_bytes: Some(1_500_000),
        };
        let mut s = MessageSupply::new(&spec, 1460);
        s.start(0, &mut rng);
        assert_eq!(s.released(), 1028);
        assert_eq!(s.next_arrival(), 100_000_000_000);
        assert_eq!(s.catch_up(99_999_999_999, &mut rng), 1028);
        assert_eq!(s.catch_up(100_000_000_000, &mut rng), 1028 + 45);
        assert_eq!(s.catch_up(300_000_000_000, &mut rng), 1028 + 3 * 45);
    }

    #[test]
    fn a_message_rounds_up_to_whole_packets() {
        let s = MessageSupply::new(
            &AppSpec {
                message_bytes: 1025,
                gbps: 1.0,
                arrivals: Arrivals::Periodic,
                first_bytes: Some(3000),
            },
            1024,
        );
        assert_eq!(s.per_message, 2);
        assert_eq!(s.first, 3);
    }

    #[test]
    fn impossible_specs_name_their_key() {
        for (s, key) in [
            (
                AppSpec {
                    message_bytes: 0,
                    gbps: 1.0,
                    arrivals: Arrivals::Poisson,
                    first_bytes: None,
                },
                "traffic[0].app.message_bytes",
            ),
            (
                AppSpec {
                    message_bytes: 1000,
                    gbps: f64::NAN,
                    arrivals: Arrivals::Poisson,
                    first_bytes: None,
                },
                "traffic[0].app.gbps",
            ),
            (
                AppSpec {
                    message_bytes: 1,
                    gbps: 1e6,
                    arrivals: Arrivals::Poisson,
                    first_bytes: None,
                },
                "traffic[0].app.gbps",
            ),
            (
                AppSpec {
                    message_bytes: 1000,
                    gbps: 1.0,
                    arrivals: Arrivals::Periodic,
                    first_bytes: Some(0),
                },
                "traffic[0].app.first_bytes",
            ),
        ] {
            let e = s.validate("traffic[0].app").unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
