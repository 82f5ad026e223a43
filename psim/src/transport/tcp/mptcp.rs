//! MPTCP's connection level: the shape of a connection, the data sequence
//! number (DSN) that ties its subflows' byte streams to one another, and
//! the reinjection of a stalled subflow's data. Its congestion control is
//! LIA (`transport/cc/lia.rs`); its subflows are TCP's (`subflow.rs`).
//!
//! Each segment carries the DSN of its first byte (RFC 8684 §3.3, the data
//! sequence mapping) as well as its subflow sequence number. The receiver
//! reassembles the connection's bytes by DSN, so that data sent twice (on
//! its own subflow and reinjected on another) counts once, and the flow
//! completes when the connection's last byte has arrived, on whichever
//! subflow. When a subflow's retransmission timer fires, the data it holds
//! that is not known delivered is queued for reinjection (RFC 8684 §3.3.6:
//! "data could be retransmitted on other subflows"; the Linux MPTCP
//! implementation reinjects on a subflow's RTO): the next subflow with room
//! in its window, other than the stalled one, sends it before any new data.
//! Each segment is reinjected at most once; the stalled subflow still
//! repairs its own sequence space, as TCP must.
//!
//! | parameter (`[protocol.mptcp]`) | default | source |
//! |---|---|---|
//! | `subflows` | 8 | [P] §6.2 ("8 subflows", via [31] Fig. 2); A18 |
//! | `reinject` | true | RFC 8684 §3.3.6; Linux MPTCP reinjects on a subflow's RTO. false: each subflow's data stays on it |
//!
//! On the wire: a data packet's `ack` field carries its DSN (plain TCP puts
//! the connection's length there); the segment holding the connection's
//! last byte carries `LAST`, and the receiver reads the length from it.
//! The DATA_ACK option is not carried (the 64-byte packet has no room):
//! the sender derives the connection-level acknowledgement from its
//! subflows' cumulative ACKs and SACK blocks, which tell it which segments,
//! and so which DSNs, arrived. The two agree except that a lost ACK delays
//! the news of its SACK block until a later cumulative ACK covers it.
//!
//! Not modelled: a connection-level receive window (each subflow's window
//! is capped by `rwnd_packets`), and with it opportunistic retransmission
//! and penalisation, which exist to work around it.

use crate::config::ConfigError;
use crate::transport::config::in_range;
use std::collections::{BTreeMap, VecDeque};

/// `[protocol.mptcp]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MptcpParams {
    /// Subflows per connection.
    pub subflows: u32,
    /// Reinject a subflow's data on the others when its RTO fires.
    pub reinject: bool,
}

impl Default for MptcpParams {
    fn default() -> Self {
        MptcpParams {
            subflows: 8,
            reinject: true,
        }
    }
}

impl MptcpParams {
    /// Checks the section; `key` is `protocol.mptcp`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(&format!("{key}.subflows"), self.subflows, 1, 255)
    }
}

/// How a range of bytes met a [`Ranges`] set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Entirely below the cumulative point.
    Duplicate,
    /// It advanced the cumulative point; `filled_hole` if ranges above it
    /// were waiting.
    InOrder { filled_hole: bool },
    /// Above the cumulative point, leaving a hole below it.
    OutOfOrder,
}

/// The bytes of one sequence space known to have arrived: everything below
/// `nxt`, and disjoint, non-adjacent ranges `[start, end)` above it. A
/// subflow's receiver, MPTCP's connection-level receiver, and MPTCP's
/// sender (what it knows was delivered) each keep one.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Ranges {
    /// The first byte not yet received: the cumulative point.
    pub(crate) nxt: u64,
    above: BTreeMap<u64, u64>,
}

impl Ranges {
    /// Adds `[start, end)`; returns how it arrived and how many of its
    /// bytes were new to the set.
    pub(crate) fn insert(&mut self, start: u64, end: u64) -> (Arrival, u64) {
        if end <= self.nxt {
            return (Arrival::Duplicate, 0);
        }
        let start = start.max(self.nxt);
        let in_order = start == self.nxt;
        let filled_hole = !self.above.is_empty();
        // Merge every range that overlaps or touches [start, end).
        let (mut lo, mut hi, mut had) = (start, end, 0u64);
        while let Some((&s, &e)) = self.above.range(..=hi).next_back() {
            if e < lo {
                break;
            }
            self.above.remove(&s);
            had += e.min(end).saturating_sub(s.max(start));
            lo = lo.min(s);
            hi = hi.max(e);
        }
        let new = (end - start) - had;
        if in_order {
            self.nxt = hi;
            (Arrival::InOrder { filled_hole }, new)
        } else {
            self.above.insert(lo, hi);
            (Arrival::OutOfOrder, new)
        }
    }

    /// Whether every byte of `[start, end)` has arrived.
    pub(crate) fn contains(&self, start: u64, end: u64) -> bool {
        end <= self.nxt
            || self
                .above
                .range(..=start)
                .next_back()
                .is_some_and(|(_, &e)| e >= end)
    }
}

/// A segment's bytes queued for reinjection.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Reinjection {
    pub(crate) dsn: u64,
    pub(crate) len: u32,
    /// The subflow that stalled with it: not sent there again.
    pub(crate) from: u8,
}

/// The sender's connection level: what it knows was delivered, and the
/// data waiting to be reinjected.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct DataLevel {
    /// DSNs known delivered; `delivered.nxt` is the connection-level
    /// cumulative acknowledgement.
    pub(crate) delivered: Ranges,
    pub(crate) reinject: VecDeque<Reinjection>,
    /// Whether to reinject at all (`protocol.mptcp.reinject`).
    pub(crate) enabled: bool,
}

impl DataLevel {
    /// Queues `[dsn, dsn + len)` from subflow `from` unless already delivered.
    pub(crate) fn queue(&mut self, dsn: u64, len: u32, from: u8) {
        if self.enabled && !self.delivered.contains(dsn, dsn + len as u64) {
            self.reinject.push_back(Reinjection { dsn, len, from });
        }
    }

    /// The first queued reinjection subflow `sub` may send (dropping those
    /// delivered meanwhile).
    pub(crate) fn next_for(&mut self, sub: u8) -> Option<Reinjection> {
        let delivered = &self.delivered;
        self.reinject
            .retain(|r| !delivered.contains(r.dsn, r.dsn + r.len as u64));
        let i = self.reinject.iter().position(|r| r.from != sub)?;
        self.reinject.remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_each_byte_once_and_merge() {
        let mut r = Ranges::default();
        assert_eq!(
            r.insert(0, 10),
            (Arrival::InOrder { filled_hole: false }, 10)
        );
        assert_eq!(r.insert(20, 30), (Arrival::OutOfOrder, 10));
        assert_eq!(r.insert(40, 50), (Arrival::OutOfOrder, 10));
        // A duplicate above the cumulative point adds nothing.
        assert_eq!(r.insert(20, 30), (Arrival::OutOfOrder, 0));
        assert!(r.contains(20, 30) && r.contains(42, 45) && !r.contains(25, 35));
        // Overlapping the range above it: only [30, 40) is new, and the
        // three ranges become one.
        assert_eq!(r.insert(25, 40), (Arrival::OutOfOrder, 10));
        assert!(r.contains(20, 50));
        assert_eq!(r.insert(5, 10), (Arrival::Duplicate, 0));
        // Filling the hole advances the cumulative point over everything.
        assert_eq!(
            r.insert(10, 20),
            (Arrival::InOrder { filled_hole: true }, 10)
        );
        assert_eq!(r.nxt, 50);
        assert!(r.contains(0, 50) && !r.contains(49, 51));
    }

    #[test]
    fn reinjections_skip_their_own_subflow_and_delivered_data() {
        let mut d = DataLevel {
            enabled: true,
            ..DataLevel::default()
        };
        d.queue(0, 10, 1);
        d.queue(10, 10, 1);
        d.queue(20, 10, 2);
        assert_eq!(
            d.next_for(1).map(|r| r.dsn),
            Some(20),
            "not back on subflow 1"
        );
        d.delivered.insert(0, 10);
        assert_eq!(
            d.next_for(2).map(|r| r.dsn),
            Some(10),
            "0 arrived meanwhile"
        );
        assert_eq!(d.next_for(2), None);
        // Already delivered, or reinjection off: nothing is queued.
        d.queue(0, 10, 3);
        assert!(d.reinject.is_empty());
        d.enabled = false;
        d.queue(40, 10, 3);
        assert!(d.reinject.is_empty());
    }
}
