//! What a validation metric reads: one run's data ([`RunData`]), the flow
//! filter, and the selectors that name a counter of the engine, a port, the
//! Tofino chip, the replay or the pull pacer. Kept apart from the metrics
//! themselves (`metrics.rs`), which compute on them; `metrics` re-exports
//! every item here, so targets and tests name them as `metrics::…`.

use serde::{Deserialize, Serialize};

use crate::net::counters::PortCounters;
use crate::trace::FlowRecord;
use crate::transport::PullStats;

/// What one finished run left for the metrics.
#[derive(Clone)]
pub struct RunData {
    /// The flow table.
    pub flows: Vec<FlowRecord>,
    /// Simulated end time, ps.
    pub sim_end_ps: u64,
    /// Port counters summed over the network.
    pub ports: PortCounters,
    /// Pull pacers summed over the hosts.
    pub pulls: PullStats,
    /// The Tofino chips' counters (None: no chip).
    pub chip: Option<crate::net::tofino::ChipCounters>,
    /// What the run's traces show, where it had them on ([`super::traced`]).
    pub traced: super::traced::Traced,
    /// The record-and-replay comparison (None: no `[replay]`).
    pub replay: Option<crate::replay::ReplayReport>,
}

/// Which flows a metric looks at. Every field that is set must match.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Source host.
    #[serde(default)]
    pub src: Option<u32>,
    /// Destination host.
    #[serde(default)]
    pub dst: Option<u32>,
    /// Flow size in bytes; long-lived flows have none.
    #[serde(default)]
    pub size: Option<u64>,
    /// Only long-lived (true) or only sized (false) flows.
    #[serde(default)]
    pub long_lived: Option<bool>,
    /// Transport name.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Sized flows of at least this many bytes.
    #[serde(default)]
    pub min_size: Option<u64>,
    /// Sized flows of at most this many bytes.
    #[serde(default)]
    pub max_size: Option<u64>,
    /// Flows of this `[[traffic]]` entry (0-based; from the flow id).
    #[serde(default)]
    pub entry: Option<u16>,
    /// Flows of this priority.
    #[serde(default)]
    pub priority: Option<u8>,
    /// Flows that started at or after this time, µs (a warm-up to leave
    /// out: the UPS scripts average flows started in 0.5–2 s).
    #[serde(default)]
    pub start_from_us: Option<u64>,
    /// Flows that started at or before this time, µs.
    #[serde(default)]
    pub start_until_us: Option<u64>,
}

impl Filter {
    pub(super) fn keeps(&self, f: &FlowRecord) -> bool {
        self.src.is_none_or(|s| f.src == s)
            && self.dst.is_none_or(|d| f.dst == d)
            && self.size.is_none_or(|s| f.size_bytes == Some(s))
            && self.long_lived.is_none_or(|l| f.size_bytes.is_none() == l)
            && self.protocol.as_ref().is_none_or(|p| &f.protocol == p)
            && self
                .min_size
                .is_none_or(|m| f.size_bytes.is_some_and(|s| s >= m))
            && self
                .max_size
                .is_none_or(|m| f.size_bytes.is_some_and(|s| s <= m))
            && self
                .entry
                .is_none_or(|e| workloads::split_flow_id(f.flow_id).0 == e)
            && self.priority.is_none_or(|p| f.priority == p)
            && self
                .start_from_us
                .is_none_or(|t| f.start_ps >= t.saturating_mul(1_000_000))
            && self
                .start_until_us
                .is_none_or(|t| f.start_ps <= t.saturating_mul(1_000_000))
    }
}

/// A per-flow counter of the flow table.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// Payload bytes delivered.
    BytesReceived,
    /// Packets the sender transmitted.
    PacketsSent,
    /// Packets that reached the receiver.
    PacketsReceived,
    /// Retransmitted packets.
    Retransmissions,
    /// Trimmed packets reported to the sender.
    Trims,
    /// Packets returned to the sender.
    Bounces,
    /// Retransmission timeouts.
    Timeouts,
    /// Trims plus bounces: packets whose payload was cut.
    TrimsAndBounces,
    /// 1 per flow: `of = "flows"` gives a mean per flow.
    Flows,
}

impl Field {
    pub(super) fn of(self, f: &FlowRecord) -> u64 {
        match self {
            Field::BytesReceived => f.bytes_received,
            Field::PacketsSent => f.packets_sent,
            Field::PacketsReceived => f.packets_received,
            Field::Retransmissions => f.retransmissions,
            Field::Trims => f.trims,
            Field::Bounces => f.bounces,
            Field::Timeouts => f.timeouts,
            Field::TrimsAndBounces => f.trims + f.bounces,
            Field::Flows => 1,
        }
    }
}

/// A counter summed over every switch and NIC port.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum PortField {
    /// Packets trimmed.
    Trimmed,
    /// Packets returned to their sender.
    Bounced,
    /// Packets dropped.
    Dropped,
    /// Packets sent onto links.
    Dequeued,
    /// Packets ECN-marked.
    Marked,
}

/// A Tofino chip counter summed over the chips (`net/tofino.rs`).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum ChipField {
    /// Data packets trimmed in ingress.
    TrimmedIngress,
    /// Data packets trimmed after the DoD line.
    TrimmedDod,
    /// Data packets trimmed at a full queue (ideal).
    TrimmedOverflow,
    /// Every trim: ingress + DoD + overflow + mirrored ([TRIM] §6: trims).
    Trims,
    /// Packets deflected to a DoD line.
    Deflected,
    /// Headers mirrored through a MoD line.
    Mirrored,
    /// The largest DoD queue, packets.
    DodMaxPackets,
    /// Packets lost at a full DoD queue.
    DodDropped,
    /// Headers lost at a full MoD queue.
    ModDropped,
}

/// A Tofino control-loop mode (`net/tofino.rs`, [TRIM] Fig 3).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum ChipMode {
    /// The line-rate meter decides.
    Optimistic,
    /// The 1/2 meter decides.
    HalfPessimistic,
    /// The 1/4 meter decides.
    Pessimistic,
    /// Every data packet is trimmed (`trim_all`).
    TrimAll,
}

/// A figure of a `[replay]` run's comparison (`replay.rs`).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum ReplayField {
    /// Fraction of packets that exit later than in the original.
    OverdueFraction,
    /// Fraction that exit more than T later.
    OverdueBeyondTFraction,
    /// The latest packet's lateness, µs.
    MaxLateUs,
    /// Mean queueing per packet in the original, µs.
    OriginalMeanQueueingUs,
    /// Mean queueing per packet in the replay, µs.
    ReplayMeanQueueingUs,
    /// Packets compared.
    Packets,
}

/// A figure of the hosts' pull pacers (NDP, pHost).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum PullField {
    /// The smallest gap between two PULLs of one host, µs.
    MinGapUs,
    /// The configured pull interval, µs.
    IntervalUs,
    /// The fraction of gaps exactly one interval long.
    ShareAtInterval,
}

/// Where a trim happened ([`super::traced::TierTrims`]).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum TrimTier {
    /// The first ToR's uplinks.
    TorUp,
    /// A ToR's ports towards hosts.
    TorDown,
    /// Aggregation switches.
    Agg,
    /// Core switches.
    Core,
    /// Everywhere past the first ToR: `tor_down + agg + core`.
    PastFirstTor,
    /// Ports towards the core: `tor_up` plus aggregation ports towards a
    /// core switch ([P] §3.2's "uplinks").
    Uplinks,
}

/// Which statistic of the per-flow or per-host values.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// Arithmetic mean.
    Mean,
    /// Smallest.
    Min,
    /// Largest.
    Max,
    /// The 10th percentile (linear interpolation).
    P10,
    /// The sum: the flows' aggregate throughput.
    Sum,
    /// Jain's fairness index, (Σx)² / (n Σx²) ([TH] Table 3.1).
    Jain,
}
