//! Record and replay ([TH] §5.1–5.2, Table 5.1; [UPSP]): the test of
//! universal packet scheduling. A scenario with a `[replay]` table runs
//! twice in one process:
//!
//! 1. **The original**, as the scenario says (any discipline at the switches
//!    and NICs). At its destination every data packet p records its exit
//!    time o(p) (last bit received) and its slack
//!    `slack(p) = o(p) − i(p) − t_min(p)`, where i(p) is when the source
//!    handed p to its NIC (the packet's `sent_ps`) and t_min(p) is p's
//!    transmission plus propagation time on every link of its path, the
//!    NIC's and the last one into the destination included, with no
//!    queueing ([TH] §5.1: t_min(p, α, α) = T(p, α); `Topology::t_min_ps`).
//!    So the slack is exactly the time p spent queued. The record keeps,
//!    in memory, p's flow, seq, hosts, path, size, i(p), o(p) and slack
//!    (56 bytes per packet), keyed by (flow, seq). `write_record` also
//!    writes it as `DIR/record/part-00000.parquet` (`trace/record.rs`), and
//!    `from_record = "DIR"` replays such a file instead of running the
//!    original, after checking each row against the scenario's topology
//!    (its hosts, its path id, and its t_min recomputed here).
//! 2. **The replay**: the same scenario with LSTF (`queue/lstf.rs`) on every
//!    port, NICs included unless `nic = "fifo"` keeps them first come,
//!    first served as in the UPS scripts, `queue_packets` deep, and no `[host.slack]`
//!    policy; each source stamps every data packet's `rank` with its
//!    recorded slack. The traffic is the same packets at the same times on
//!    the same paths: the workload draws from its own stream, the transport
//!    must be open-loop (`cbr`: paced, no feedback), and ECMP paths are per
//!    flow. At the destination the replay compares o′(p) with o(p).
//!
//! The replay run writes the run's outputs (flows, traces); the manifest's
//! `packets.replay` holds the comparison ([`ReplayReport`]): packets
//! replayed, the fraction **overdue** (o′ > o) and the fraction overdue by
//! more than T, with T = `threshold_us`, one transmission time at the
//! bottleneck ([TH] Table 5.1: 12 µs, 1460 B at 1 Gb/s), and both runs'
//! mean queueing per packet ([TH] Fig 5.1: most packets queue less in the
//! replay).
//!
//! | key (`[replay]`) | default | source |
//! |---|---|---|
//! | `threshold_us` | 12 | [TH] Table 5.1: T = one transmission time at the bottleneck, 12 µs (1460 B at 1 Gb/s = 11.68 µs) |
//! | `max_packets` | 10,000,000 | psim: memory bound of the record (56 B a packet, 560 MB); a run that delivers more stops with an error naming the key |
//! | `queue_packets` | 100,000,000 | the replay's LSTF capacity: `UPS` replay scripts (`maxq`, no drops) |
//! | `write_record` | false | psim: write the original's record (Parquet, `docs/outputs.md`) |
//! | `discipline` | `"lstf"` | [`ReplayDiscipline`]: `"lstf"` ([TH] §5.1), `"priority"` (T34's simple priorities), `"edf"` (network-wide EDF, [TH] App. A.4: the LSTF schedule again), `"queue"` (any discipline, `[replay.queue]`) |
//! | `queue` | none | with `discipline = "queue"`: a `switch.queue` table for every switch port (and the NICs with `nic = "same"`); nothing is stamped, the original's `[host.slack]` stays |
//! | `priority` | `"exit"` | a `priority` replay's key: `"exit"` o(p) ([TH] §5.1's words); `"slack"` o − i − t_min and `"delay"` o − i, each less the NIC's wait, the relative forms the UPS code's edge queue stamps ([`ReplayPriority`]) |
//! | `nic` | `"same"` | `"same"`: the replay's discipline at the NICs too; `"fifo"`: the NICs stay first come, first served (aging the slack under LSTF and under `priority = "slack"` or `"delay"`; a `priority = "exit"` replay keeps the original's drop-tail NIC), as in the `UPS` scripts, whose host queues are DropTail in both runs (spec §9.1); needs the original's `host.queue` to be `droptail` |
//! | `from_record` | none | psim: a run's output directory (relative to the scenario file) whose record to replay; not with `write_record` |
//!
//! Limits: one process (no MPI ranks), no checkpoints, no PFC or Tofino
//! chip, open-loop transports only (`cbr`); each is refused with an error
//! naming `replay`. The LSTF is non-preemptive by default (the thesis's
//! simulations); `preemptive = true` interrupts the packet on the wire (T34).

use crate::config::{bad, ConfigError, PortQueues, Scenario};
use crate::packet::{Packet, PacketKind, Protocol};
use crate::queue::lstf::{LstfConfig, LstfMode};
use crate::queue::rank::RankConfig;
use crate::queue::QueueConfig;
use crate::topo::Topology;
use crate::transport::config::Micros;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the replay runs at every port.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayDiscipline {
    /// LSTF with slack = o − i − t_min ([TH] §5.1).
    #[default]
    Lstf,
    /// "Simple priorities": the `rank` queue with priority = o(p), FIFO
    /// among equals ([TH] §5.1, T34: 21% overdue against LSTF's 0.21%).
    Priority,
    /// Network-wide EDF, LSTF's priority form ([TH] App. A.4): the sources
    /// stamp o(p) and each hop α serves by o(p) − t_min(p, α, dest) +
    /// T(p, α) (`lstf`'s `mode = "edf_network"`). The same schedule as the
    /// LSTF replay, packet for packet.
    Edf,
    /// Any discipline, given as `[replay.queue]` (a `switch.queue` table):
    /// nothing is stamped, and the scenario's `[host.slack]` policy, if
    /// any, stamps as in the original. How well a rule other than LSTF
    /// replays the schedule.
    Queue,
}

/// The value a priority replay (`discipline = "priority"`) sorts on. The
/// thesis says only "the priority for a packet p is set to o(p)" ([TH]
/// §5.1, T34); the public UPS code has no such run. Its replay machinery
/// stamps relative values: the edge queue (`edge-replay.cc`) writes
/// `deadline − now` into the header and lowers it by the packet's wait
/// there, and its static priority queue (`fine-priorities.cc`) sorts on
/// that header unchanged. So a priority replay built from those parts
/// sorts on a relative form, which `slack` and `delay` give.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayPriority {
    /// o(p), the absolute exit time: the thesis's words.
    #[default]
    Exit,
    /// o(p) − i(p) − t_min(p) less the wait at the source's NIC: the
    /// UPS edge queue's stamp from its usual deadline file (o − t_min),
    /// sorted on unchanged.
    Slack,
    /// o(p) − i(p) less the wait at the source's NIC: the same stamp from
    /// a deadline file of o(p) itself.
    Delay,
}

/// What a source writes into each data packet's `rank` in the replay.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// The recorded slack, o − i − t_min (LSTF; `priority = "slack"`).
    Slack,
    /// The recorded exit time o(p) (`priority = "exit"`).
    Exit,
    /// The recorded delay o − i (`priority = "delay"`).
    Delay,
    /// Nothing: `rank` stays as the transport and the edge policy left it
    /// (`discipline = "queue"`).
    None,
}

impl ReplaySpec {
    /// What the sources stamp for this replay.
    pub fn stamp(&self) -> Stamp {
        match (self.discipline, self.priority) {
            (ReplayDiscipline::Lstf, _) | (ReplayDiscipline::Priority, ReplayPriority::Slack) => {
                Stamp::Slack
            }
            (ReplayDiscipline::Priority, ReplayPriority::Exit) | (ReplayDiscipline::Edf, _) => {
                Stamp::Exit
            }
            (ReplayDiscipline::Priority, ReplayPriority::Delay) => Stamp::Delay,
            (ReplayDiscipline::Queue, _) => Stamp::None,
        }
    }
}

/// What the replay runs at the hosts' NICs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayNic {
    /// The replay's discipline, as at every other port.
    #[default]
    Same,
    /// First come, first served, the slack lowered by the wait (`lstf`'s
    /// `mode = "fifo"`): the UPS scripts' hosts, whose queues are FIFO in
    /// both runs (spec §9.1), so each NIC sends as it did in the original.
    /// The original's `host.queue` must be `droptail`.
    Fifo,
}

/// `[replay]` as written.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayFile {
    /// What the replay runs at every port.
    pub discipline: ReplayDiscipline,
    /// What a priority replay sorts on.
    pub priority: ReplayPriority,
    /// T of "overdue by more than T", µs.
    pub threshold_us: f64,
    /// Most packets the original may deliver.
    pub max_packets: u64,
    /// Capacity of the replay's LSTF queues, packets.
    pub queue_packets: u32,
    /// Preemptive LSTF ([TH] §5.1.3, T34): an arrival of less slack
    /// interrupts the packet on the wire.
    pub preemptive: bool,
    /// What the NICs run in the replay.
    pub nic: ReplayNic,
    /// The discipline of a `discipline = "queue"` replay, as `switch.queue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueConfig>,
    /// Write the original's record to `DIR/record/` (`trace/record.rs`).
    pub write_record: bool,
    /// Replay the record a run wrote to this output directory (relative to
    /// the scenario file) instead of running the original.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_record: Option<String>,
    /// The replay's LSTF ports (the NICs too with `nic = "same"`) send
    /// packets under this many bytes first, FIFO (`lstf`'s
    /// `control_below_bytes`, the UPS `lstf.cc` side queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_below_bytes: Option<u32>,
    /// Arrivals from this time on skip that side queue (`lstf`'s
    /// `control_below_until_us`, `lstf.cc`'s `control_packets_time_`).
    #[serde(
        rename = "control_below_until_us",
        skip_serializing_if = "Option::is_none"
    )]
    pub control_below_until: Option<Micros>,
}

/// Default T, µs ([TH] Table 5.1).
pub const DEFAULT_THRESHOLD_US: f64 = 12.0;
/// Default record limit, packets.
pub const DEFAULT_MAX_PACKETS: u64 = 10_000_000;
/// Default replay queue capacity, packets (`UPS` `maxq`).
pub const DEFAULT_QUEUE_PACKETS: u32 = 100_000_000;

impl Default for ReplayFile {
    fn default() -> Self {
        ReplayFile {
            discipline: ReplayDiscipline::Lstf,
            priority: ReplayPriority::Exit,
            threshold_us: DEFAULT_THRESHOLD_US,
            max_packets: DEFAULT_MAX_PACKETS,
            queue_packets: DEFAULT_QUEUE_PACKETS,
            preemptive: false,
            nic: ReplayNic::Same,
            queue: None,
            write_record: false,
            from_record: None,
            control_below_bytes: None,
            control_below_until: None,
        }
    }
}

/// The validated `[replay]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySpec {
    /// What the replay runs.
    pub discipline: ReplayDiscipline,
    /// What a priority replay sorts on.
    pub priority: ReplayPriority,
    /// T, ps.
    pub threshold_ps: u64,
    /// Record limit, packets.
    pub max_packets: u64,
    /// Replay LSTF capacity, packets.
    pub queue_packets: u32,
    /// Preemptive LSTF.
    pub preemptive: bool,
    /// What the NICs run.
    pub nic: ReplayNic,
    /// The discipline of a `discipline = "queue"` replay.
    pub queue: Option<QueueConfig>,
    /// Write the original's record.
    pub write_record: bool,
    /// The output directory whose record to replay (resolved).
    pub from_record: Option<std::path::PathBuf>,
    /// The replay's LSTF ports' control side queue, bytes.
    pub control_below_bytes: Option<u32>,
    /// When that side queue closes to arrivals, ps.
    pub control_below_until_ps: Option<u64>,
}

impl ReplayFile {
    /// Checks the table against the scenario's ports and traffic.
    pub fn validate(
        &self,
        queues: &PortQueues,
        protocols: &[Protocol],
        base_dir: &std::path::Path,
    ) -> Result<ReplaySpec, ConfigError> {
        let t = self.threshold_us;
        if !(t.is_finite() && t >= 0.0) {
            return Err(bad("replay.threshold_us", t, "must be 0 or positive"));
        }
        if self.max_packets == 0 {
            return Err(bad("replay.max_packets", 0, "must be at least 1"));
        }
        if self.queue_packets == 0 {
            return Err(bad("replay.queue_packets", 0, "must be at least 1"));
        }
        if let Some(p) = protocols.iter().find(|p| **p != Protocol::Cbr) {
            return Err(bad(
                "replay",
                format!("protocol {:?}", p.name()),
                "a replay needs open-loop traffic that the schedule cannot change: use protocol = \"cbr\"",
            ));
        }
        if queues.pfc.is_some() || queues.tofino.is_some() {
            return Err(bad(
                "replay",
                "[switch.pfc]/[switch.tofino]",
                "a replay runs LSTF on plain output queues: remove PFC and the Tofino chip",
            ));
        }
        if self.preemptive
            && !matches!(
                self.discipline,
                ReplayDiscipline::Lstf | ReplayDiscipline::Edf
            )
        {
            return Err(bad(
                "replay.preemptive",
                true,
                "only LSTF and its EDF form preempt: remove it, or use discipline = \"lstf\" or \"edf\" (or the preemptive key of an lstf [replay.queue])",
            ));
        }
        match (self.discipline, &self.queue) {
            (ReplayDiscipline::Queue, None) => {
                return Err(bad(
                    "replay.queue",
                    "(missing)",
                    "discipline = \"queue\" replays with the discipline given as [replay.queue] (any switch.queue table): add it",
                ))
            }
            (ReplayDiscipline::Queue, Some(q)) => {
                q.validate("replay.queue")?;
                // The original's edge policy stamps in the replay too, for
                // a replay discipline that reads it (SJF's sizes); others
                // ignore `rank`.
            }
            (d, Some(_)) => {
                return Err(bad(
                    "replay.queue",
                    format!("(with discipline = {:?})", format!("{d:?}").to_lowercase()),
                    "is the discipline of a discipline = \"queue\" replay: remove it, or set discipline = \"queue\"",
                ))
            }
            (_, None) => {}
        }
        if self.nic == ReplayNic::Fifo && queues.host.name() != "droptail" {
            return Err(bad(
                "replay.nic",
                "\"fifo\"",
                &format!(
                    "replays the NICs first come, first served, so the original's host.queue must be \"droptail\", not {:?}",
                    queues.host.name()
                ),
            ));
        }
        crate::queue::validate_control_below("replay", self.control_below_bytes)?;
        crate::queue::validate_control_until(
            "replay",
            self.control_below_bytes,
            self.control_below_until,
        )?;
        if let Some(b) = self
            .control_below_bytes
            .filter(|_| self.discipline != ReplayDiscipline::Lstf)
        {
            return Err(bad(
                "replay.control_below_bytes",
                b,
                "only the LSTF replay has the control side queue (its packets keep their slack, which has no EDF form): remove it, or use discipline = \"lstf\"",
            ));
        }
        if self.priority != ReplayPriority::Exit && self.discipline != ReplayDiscipline::Priority {
            return Err(bad(
                "replay.priority",
                format!("{:?}", self.priority).to_lowercase(),
                "only a priority replay has one: remove it, or use discipline = \"priority\"",
            ));
        }
        if let (true, Some(_)) = (self.write_record, &self.from_record) {
            return Err(bad(
                "replay.write_record",
                true,
                "the record comes from replay.from_record: there is no original run to write",
            ));
        }
        Ok(ReplaySpec {
            discipline: self.discipline,
            priority: self.priority,
            threshold_ps: (t * 1e6).round() as u64,
            max_packets: self.max_packets,
            queue_packets: self.queue_packets,
            preemptive: self.preemptive,
            nic: self.nic,
            queue: self.queue.clone(),
            write_record: self.write_record,
            from_record: self.from_record.as_ref().map(|d| base_dir.join(d)),
            control_below_bytes: self.control_below_bytes,
            control_below_until_ps: self.control_below_until.map(|u| u.ps),
        })
    }
}

/// The scenario of the replay run: `scn` with LSTF (or priority = o(p),
/// or network-wide EDF) on every port and no edge policy (the recorded
/// slacks or exit times are stamped instead); or with `[replay.queue]` on
/// every port and the original's edge policy.
pub fn replay_scenario(scn: &Scenario, spec: &ReplaySpec) -> Scenario {
    let mut r = scn.clone();
    let lstf = match spec.discipline {
        ReplayDiscipline::Lstf => QueueConfig::Lstf(LstfConfig {
            queue_packets: Some(spec.queue_packets),
            preemptive: spec.preemptive,
            control_below_bytes: spec.control_below_bytes,
            control_below_until: spec.control_below_until_ps.map(Micros::from_ps),
            ..LstfConfig::default()
        }),
        ReplayDiscipline::Priority => QueueConfig::Rank(RankConfig {
            queue_packets: Some(spec.queue_packets),
            queue_bytes: None,
        }),
        ReplayDiscipline::Edf => QueueConfig::Lstf(LstfConfig {
            queue_packets: Some(spec.queue_packets),
            preemptive: spec.preemptive,
            mode: LstfMode::EdfNetwork,
            ..LstfConfig::default()
        }),
        ReplayDiscipline::Queue => spec.queue.clone().expect("validated"),
    };
    r.queues.host = match spec.nic {
        ReplayNic::Same => lstf.clone(),
        // LSTF's next hop needs the slack left after the NIC's wait; the
        // relative priorities lose that wait there, as the UPS edge queue's
        // stamp does, and stay fixed after it.
        ReplayNic::Fifo if matches!(spec.stamp(), Stamp::Slack | Stamp::Delay) => {
            QueueConfig::Lstf(LstfConfig {
                queue_packets: Some(spec.queue_packets),
                mode: LstfMode::Fifo,
                ..LstfConfig::default()
            })
        }
        // o(p) and the exit deadline are static, and any other discipline
        // replays with FIFO NICs as the original ran them: the original's
        // drop-tail NIC, which leaves `rank` as it is.
        ReplayNic::Fifo => scn.queues.host.clone(),
    };
    r.queues.set_every_switch(lstf);
    // The replay never drops: replay.queue_packets (or [replay.queue]'s
    // own), not the file's sizes.
    r.queues.topology_sizes = false;
    if spec.stamp() != Stamp::None {
        r.queues.slack = crate::net::edge::SlackConfig::None;
    }
    r
}

/// slack(p) = o(p) − i(p) − t_min(p), ps, signed ([TH] §5.1).
#[inline]
pub fn slack_ps(exit_ps: u64, sent_ps: u64, t_min_ps: u64) -> i64 {
    exit_ps as i64 - sent_ps as i64 - t_min_ps as i64
}

/// One packet of the original schedule (56 bytes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Flow id.
    pub flow: u64,
    /// Sequence number within the flow.
    pub seq: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Path id.
    pub path: u32,
    /// Wire size, bytes.
    pub size: u32,
    /// i(p), ps.
    pub sent_ps: u64,
    /// o(p) − i(p) − t_min(p), ps.
    pub slack_ps: i64,
    /// o(p), ps.
    pub exit_ps: u64,
}

/// The original schedule, sorted by (flow, seq), looked up by binary search.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Record>,
}

impl Table {
    /// The table of `rows` (any order; a packet delivered twice keeps its
    /// first delivery).
    pub fn new(mut rows: Vec<Record>) -> Table {
        rows.sort_by_key(|r| (r.flow, r.seq, r.exit_ps));
        rows.dedup_by_key(|r| (r.flow, r.seq));
        Table { rows }
    }
    /// The record of packet (`flow`, `seq`).
    #[inline]
    pub fn get(&self, flow: u64, seq: u64) -> Option<&Record> {
        self.rows
            .binary_search_by_key(&(flow, seq), |r| (r.flow, r.seq))
            .ok()
            .map(|i| &self.rows[i])
    }
    /// The records, sorted by (flow, seq).
    pub fn rows(&self) -> &[Record] {
        &self.rows
    }
    /// Packets recorded.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Counters of the replay at one shard's destinations (summed over shards).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Data packets delivered in the replay that the original delivered.
    pub packets: u64,
    /// Delivered in the replay, not in the original.
    pub unmatched: u64,
    /// o′(p) > o(p).
    pub overdue: u64,
    /// o′(p) > o(p) + T.
    pub overdue_beyond: u64,
    /// Largest o′(p) − o(p), ps (0 when none is late).
    pub max_late_ps: u64,
    /// Σ queueing in the original (Σ slack), ps.
    pub original_queueing_ps: i128,
    /// Σ queueing in the replay (o′ − i − t_min), ps.
    pub replay_queueing_ps: i128,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.packets += o.packets;
        self.unmatched += o.unmatched;
        self.overdue += o.overdue;
        self.overdue_beyond += o.overdue_beyond;
        self.max_late_ps = self.max_late_ps.max(o.max_late_ps);
        self.original_queueing_ps += o.original_queueing_ps;
        self.replay_queueing_ps += o.replay_queueing_ps;
    }
}

/// What a shard does for record and replay.
#[derive(Debug)]
pub enum ShardReplay {
    /// The original run: records each delivered data packet.
    Record {
        /// The records.
        rows: Vec<Record>,
        /// Limit over all shards (each stops at it; the total is checked after).
        max: u64,
    },
    /// The replay run: stamps slacks at sources, compares exits.
    Replay {
        /// The original schedule.
        table: Arc<Table>,
        /// What the sources stamp.
        stamp: Stamp,
        /// T, ps.
        threshold_ps: u64,
        /// Counters.
        counts: Counts,
    },
}

impl ShardReplay {
    /// Stamps the data packets a source just emitted with their recorded
    /// slacks, exit times or delays, as [`Stamp`] says (replay run only). A
    /// packet the original never delivered gets the largest.
    #[inline]
    pub fn stamp(&self, pkts: &mut [Packet]) {
        let ShardReplay::Replay { table, stamp, .. } = self else {
            return;
        };
        // A `queue` replay leaves `rank` to the edge policy: no lookup.
        if *stamp == Stamp::None {
            return;
        }
        for p in pkts.iter_mut().filter(|p| p.kind == PacketKind::Data) {
            let r = table.get(p.flow, p.seq);
            p.rank = match (r, stamp) {
                (Some(r), Stamp::Slack) => r.slack_ps.max(0) as u64,
                (Some(r), Stamp::Exit) => r.exit_ps,
                (Some(r), Stamp::Delay) => r.exit_ps.saturating_sub(r.sent_ps),
                (_, Stamp::None) => unreachable!("returned above"),
                (None, Stamp::Exit) => u64::MAX,
                (None, _) => i64::MAX as u64,
            };
        }
    }

    /// A data packet reached its destination at `now`.
    #[inline]
    pub fn on_exit(&mut self, pkt: &Packet, now: u64, topo: &Topology) {
        if pkt.kind != PacketKind::Data {
            return;
        }
        let t_min = topo.t_min_ps(pkt.src, pkt.dst, pkt.path, pkt.size as u64);
        match self {
            ShardReplay::Record { rows, max } => {
                if (rows.len() as u64) <= *max {
                    rows.push(Record {
                        flow: pkt.flow,
                        seq: pkt.seq,
                        src: pkt.src,
                        dst: pkt.dst,
                        path: pkt.path,
                        size: pkt.size,
                        sent_ps: pkt.sent_ps,
                        slack_ps: slack_ps(now, pkt.sent_ps, t_min),
                        exit_ps: now,
                    });
                }
            }
            ShardReplay::Replay {
                table,
                threshold_ps,
                counts,
                ..
            } => {
                let Some(r) = table.get(pkt.flow, pkt.seq) else {
                    counts.unmatched += 1;
                    return;
                };
                counts.packets += 1;
                counts.original_queueing_ps += r.slack_ps as i128;
                counts.replay_queueing_ps += slack_ps(now, pkt.sent_ps, t_min) as i128;
                if now > r.exit_ps {
                    let late = now - r.exit_ps;
                    counts.overdue += 1;
                    if late > *threshold_ps {
                        counts.overdue_beyond += 1;
                    }
                    counts.max_late_ps = counts.max_late_ps.max(late);
                }
            }
        }
    }
}

/// The comparison, for the manifest (`packets.replay`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Disciplines of the original: NICs, then ToR/agg/core tiers, then
    /// `[switch.to_host]`'s and the `[[switch.named]]` tables'.
    pub original: Vec<String>,
    /// What the replay ran: `lstf`, `priority`, `edf`, or the discipline
    /// of `[replay.queue]` (`fq`, `droptail`, ...).
    pub replay: String,
    /// Data packets the original delivered (the record).
    pub recorded: u64,
    /// Of them, delivered in the replay.
    pub packets: u64,
    /// Delivered in the replay only.
    pub unmatched: u64,
    /// Packets with o′ > o.
    pub overdue: u64,
    /// overdue / packets.
    pub overdue_fraction: f64,
    /// Packets with o′ > o + T.
    pub overdue_beyond_t: u64,
    /// overdue_beyond_t / packets.
    pub overdue_beyond_t_fraction: f64,
    /// T, µs.
    pub threshold_us: f64,
    /// Largest o′ − o, µs.
    pub max_late_us: f64,
    /// Mean queueing per packet in the original, µs.
    pub original_mean_queueing_us: f64,
    /// Mean queueing per packet in the replay, µs.
    pub replay_mean_queueing_us: f64,
}

impl ReplayReport {
    /// The report of `counts` over a record of `recorded` packets.
    pub fn new(scn: &Scenario, spec: &ReplaySpec, recorded: u64, c: &Counts) -> ReplayReport {
        let n = c.packets.max(1) as f64;
        let mut original = vec![scn.queues.host.name().to_string()];
        original.extend(scn.queues.switch_configs().map(|q| q.name().to_string()));
        ReplayReport {
            original,
            replay: match &spec.queue {
                Some(q) => q.name().to_string(),
                None => format!("{:?}", spec.discipline).to_lowercase(),
            },
            recorded,
            packets: c.packets,
            unmatched: c.unmatched,
            overdue: c.overdue,
            overdue_fraction: c.overdue as f64 / n,
            overdue_beyond_t: c.overdue_beyond,
            overdue_beyond_t_fraction: c.overdue_beyond as f64 / n,
            threshold_us: spec.threshold_ps as f64 / 1e6,
            max_late_us: c.max_late_ps as f64 / 1e6,
            original_mean_queueing_us: c.original_queueing_ps as f64 / n / 1e6,
            replay_mean_queueing_us: c.replay_queueing_ps as f64 / n / 1e6,
        }
    }

    /// The original's switch disciplines, each once, in table order
    /// (`fq/fifo_plus` for a mix).
    fn switch_disciplines(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for n in self.original.iter().skip(1) {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
        names.join("/")
    }

    /// One line for the terminal.
    pub fn line(&self) -> String {
        format!(
            "replay: {} packets of a {} original replayed by {}: {:.4} overdue, {:.4} by more than {} us (max {:.1} us late); mean queueing {:.1} -> {:.1} us",
            self.packets,
            self.switch_disciplines(),
            self.replay,
            self.overdue_fraction,
            self.overdue_beyond_t_fraction,
            self.threshold_us,
            self.max_late_us,
            self.original_mean_queueing_us,
            self.replay_mean_queueing_us
        )
    }
}

/// The record of every shard, merged; Err(limit) past `max_packets`.
pub fn table_of(shards: Vec<ShardReplay>, max: u64) -> Result<Table, u64> {
    let mut rows = Vec::new();
    for s in shards {
        if let ShardReplay::Record { rows: r, .. } = s {
            rows.extend(r);
        }
        if rows.len() as u64 > max {
            return Err(max);
        }
    }
    Ok(Table::new(rows))
}

/// Checks that a record read from a file belongs to `topo`: every packet's
/// hosts exist, its path id is one of the pair's, and its t_min on this
/// network is the recorded one (a different topology, or different link
/// rates or delays, shows there). Err names the row.
pub fn check_record(rows: &[Record], topo: &Topology) -> Result<(), String> {
    let hosts = topo.hosts();
    for (i, r) in rows.iter().enumerate() {
        let at = |why: String| format!("row {i} (flow {}, seq {}): {why}", r.flow, r.seq);
        if r.src >= hosts || r.dst >= hosts || r.src == r.dst {
            return Err(at(format!(
                "hosts {} -> {} are not two of this topology's {hosts}",
                r.src, r.dst
            )));
        }
        let paths = topo.num_paths(r.src, r.dst);
        if r.path >= paths {
            return Err(at(format!(
                "path {} but hosts {} -> {} have {paths}",
                r.path, r.src, r.dst
            )));
        }
        let here = topo.t_min_ps(r.src, r.dst, r.path, r.size as u64);
        let recorded = crate::trace::record::t_min_of(r);
        if here != recorded {
            return Err(at(format!(
                "t_min {recorded} ps recorded, {here} ps on this topology"
            )));
        }
    }
    Ok(())
}

/// The replay counters of every shard, summed.
pub fn counts_of(shards: &[ShardReplay]) -> Counts {
    let mut c = Counts::default();
    for s in shards {
        if let ShardReplay::Replay { counts, .. } = s {
            c.add(counts);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{LeafSpine, LinkSpec};
    use crate::units::tx_time_ps;

    /// With FIFO NICs, an LSTF replay ages the slack at the NIC (`lstf`'s
    /// `mode = "fifo"`), while a priority = o(p) replay keeps the original's
    /// drop-tail NIC: o(p) is static, and aging it would change it. The
    /// relative priorities lose the NIC's wait, as the UPS edge queue does.
    #[test]
    fn fifo_nics_age_the_slack_only_under_lstf() {
        let text = r#"
[topology]
kind = "leafspine"
leaves = 1
spines = 1
hosts_per_leaf = 2
[host.queue]
kind = "droptail"
[replay]
nic = "fifo"
[[traffic]]
protocol = "cbr"
pattern = "permutation"
size_bytes = 10000
"#;
        let path = std::path::Path::new("inline.toml");
        for (sets, want) in [
            (vec![], "lstf"),
            (
                vec!["replay.discipline=\"priority\"".to_string()],
                "droptail",
            ),
            (
                vec![
                    "replay.discipline=\"priority\"".to_string(),
                    "replay.priority=\"slack\"".to_string(),
                ],
                "lstf",
            ),
            (
                vec![
                    "replay.discipline=\"priority\"".to_string(),
                    "replay.priority=\"delay\"".to_string(),
                ],
                "lstf",
            ),
        ] {
            let scn = Scenario::from_str(text, path, &sets).unwrap();
            let spec = scn.replay.clone().expect("a replay");
            let r = replay_scenario(&scn, &spec);
            assert_eq!(r.queues.host.name(), want, "{sets:?}");
            if let QueueConfig::Lstf(c) = &r.queues.host {
                assert_eq!(c.mode, LstfMode::Fifo);
            }
            let switches = match spec.discipline {
                ReplayDiscipline::Lstf => "lstf",
                ReplayDiscipline::Priority => "rank",
                ReplayDiscipline::Edf | ReplayDiscipline::Queue => unreachable!(),
            };
            assert_eq!(r.queues.tiers[0].name(), switches);
            // A graph file's port sizes stay with the original.
            assert!(scn.queues.topology_sizes && !r.queues.topology_sizes);
        }
    }

    #[test]
    fn slack_of_a_two_hop_packet_worked_by_hand() {
        // Host 0 → leaf → host 1 on one leaf of a leaf-spine: two links,
        // 10 Gb/s, 1 µs each. A 1500-byte packet needs 1.2 µs on each.
        let topo = two_hop();
        let t_min = topo.t_min_ps(0, 1, 0, 1500);
        assert_eq!(tx_time_ps(1500, 10_000_000_000), 1_200_000);
        assert_eq!(t_min, 2 * (1_200_000 + 1_000_000), "4.4 µs");
        // Sent at 10 µs, out at 20 µs: 5.6 µs of queueing is its slack.
        assert_eq!(slack_ps(20_000_000, 10_000_000, t_min), 5_600_000);
        // A packet can never beat t_min, but the arithmetic stays signed.
        assert_eq!(slack_ps(14_000_000, 10_000_000, t_min), -400_000);
    }

    /// t_min(p, α, dest) ([TH] App. A.4), which the EDF replay's hops
    /// serve by: from the source, all of t_min; from the leaf, its one
    /// link into host 1; at the destination, or off the path, none.
    #[test]
    fn t_min_from_a_hop_worked_by_hand() {
        let topo = two_hop();
        let leaf = topo.port(0, 0).peer;
        assert_eq!(topo.t_min_from_ps(0, 1, 0, 1500, 0), Some(4_400_000));
        assert_eq!(topo.t_min_from_ps(0, 1, 0, 1500, leaf), Some(2_200_000));
        assert_eq!(topo.t_min_from_ps(0, 1, 0, 1500, 1), None);
        let spine = (0..topo.entities()).find(|&e| e > leaf).expect("a spine");
        assert_eq!(topo.t_min_from_ps(0, 1, 0, 1500, spine), None);
        // With the part before the leaf, the whole of t_min.
        assert_eq!(
            topo.t_min_to_ps(0, 1, 0, 1500, leaf).unwrap() + 2_200_000,
            topo.t_min_ps(0, 1, 0, 1500)
        );
    }

    #[test]
    fn the_table_finds_each_packet_and_keeps_a_first_delivery() {
        let r = |flow, seq, exit_ps| Record {
            flow,
            seq,
            src: 0,
            dst: 1,
            path: 0,
            size: 1500,
            sent_ps: 0,
            slack_ps: exit_ps as i64,
            exit_ps,
        };
        let t = Table::new(vec![r(2, 0, 5), r(1, 1460, 9), r(1, 0, 3), r(1, 0, 7)]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(1, 0).map(|x| x.exit_ps), Some(3));
        assert_eq!(t.get(1, 1460).map(|x| x.exit_ps), Some(9));
        assert_eq!(t.get(2, 0).map(|x| x.exit_ps), Some(5));
        assert!(t.get(2, 1).is_none());
    }

    /// Host 0 → leaf → host 1: two 10 Gb/s links of 1 µs (t_min 4.4 µs
    /// for 1500 B, `slack_of_a_two_hop_packet_worked_by_hand`).
    fn two_hop() -> Topology {
        let link = LinkSpec {
            rate_bps: 10_000_000_000,
            delay_ps: 1_000_000,
        };
        Topology::LeafSpine(LeafSpine::new(1, 1, 2, link, link))
    }

    /// 1500 B packets sent at 10 µs as seq 0, 1436, 2872, ..., one per
    /// exit time, recorded on [`two_hop`]: the packets and their table.
    fn recorded(exits_ps: &[u64], topo: &Topology) -> (Vec<Packet>, Arc<Table>) {
        let mut rec = ShardReplay::Record {
            rows: Vec::new(),
            max: 10,
        };
        let mut pkts = Vec::new();
        for (i, &exit) in exits_ps.iter().enumerate() {
            let mut p = crate::packet::test_packet(PacketKind::Data, 0, 1500);
            p.sent_ps = 10_000_000;
            p.seq = 1436 * i as u64;
            rec.on_exit(&p, exit, topo);
            pkts.push(p);
        }
        (pkts, Arc::new(table_of(vec![rec], 10).unwrap()))
    }

    #[test]
    fn replay_counts_overdue_and_beyond_t() {
        let topo = two_hop();
        let (pkts, table) = recorded(&[20_000_000, 30_000_000], &topo);
        let (p, q) = (pkts[0].clone(), pkts[1].clone());
        let mut rep = ShardReplay::Replay {
            table,
            stamp: Stamp::Slack,
            threshold_ps: 12_000_000,
            counts: Counts::default(),
        };
        let mut out = [p.clone(), q.clone()];
        rep.stamp(&mut out);
        assert_eq!(out[0].rank, 5_600_000);
        assert_eq!(out[1].rank, 15_600_000);
        // p 1 µs late; q 13 µs late (beyond T = 12 µs).
        rep.on_exit(&p, 21_000_000, &topo);
        rep.on_exit(&q, 43_000_000, &topo);
        let c = counts_of(&[rep]);
        assert_eq!((c.packets, c.overdue, c.overdue_beyond), (2, 2, 1));
        assert_eq!(c.max_late_ps, 13_000_000);
        assert_eq!(c.original_queueing_ps, 5_600_000 + 15_600_000);
    }

    #[test]
    fn each_priority_form_stamps_its_value_worked_by_hand() {
        // The packet of `slack_of_a_two_hop_packet_worked_by_hand`: sent at
        // 10 µs, out at 20 µs, t_min 4.4 µs.
        let (pkts, table) = recorded(&[20_000_000], &two_hop());
        let p = pkts[0].clone();
        let mut unknown = p.clone();
        unknown.seq = 99;
        for (stamp, want) in [
            (Stamp::Slack, 5_600_000),
            (Stamp::Exit, 20_000_000),
            (Stamp::Delay, 10_000_000),
        ] {
            let rep = ShardReplay::Replay {
                table: table.clone(),
                stamp,
                threshold_ps: 12_000_000,
                counts: Counts::default(),
            };
            let mut out = [p.clone(), unknown.clone()];
            rep.stamp(&mut out);
            assert_eq!(out[0].rank, want, "{stamp:?}");
            // A packet the original never delivered goes last.
            assert!(out[1].rank >= i64::MAX as u64, "{stamp:?}");
        }
        // Any other discipline: `rank` stays as the edge policy left it.
        let rep = ShardReplay::Replay {
            table: table.clone(),
            stamp: Stamp::None,
            threshold_ps: 12_000_000,
            counts: Counts::default(),
        };
        let mut out = [p.clone(), unknown.clone()];
        out[0].rank = 777;
        out[1].rank = 778;
        rep.stamp(&mut out);
        assert_eq!((out[0].rank, out[1].rank), (777, 778));
        // What each [replay] asks the sources to stamp.
        let spec = |discipline, priority| ReplaySpec {
            discipline,
            priority,
            threshold_ps: 0,
            max_packets: 1,
            queue_packets: 1,
            preemptive: false,
            nic: ReplayNic::Same,
            queue: None,
            write_record: false,
            from_record: None,
            control_below_bytes: None,
            control_below_until_ps: None,
        };
        let p = ReplayDiscipline::Priority;
        assert_eq!(spec(p, ReplayPriority::Exit).stamp(), Stamp::Exit);
        assert_eq!(spec(p, ReplayPriority::Slack).stamp(), Stamp::Slack);
        assert_eq!(spec(p, ReplayPriority::Delay).stamp(), Stamp::Delay);
        let l = ReplayDiscipline::Lstf;
        assert_eq!(spec(l, ReplayPriority::Exit).stamp(), Stamp::Slack);
        let e = ReplayDiscipline::Edf;
        assert_eq!(spec(e, ReplayPriority::Exit).stamp(), Stamp::Exit);
        let q = ReplayDiscipline::Queue;
        assert_eq!(spec(q, ReplayPriority::Exit).stamp(), Stamp::None);
    }
}
