//! Edge rank and slack policies ([TH] §5.2–5.3): the host stamps `rank` on
//! every data packet it sends, whatever the transport, so that rank-ordered
//! switches (`sjf`, `srpt`, `pfabric`, `rank`) or LSTF (`lstf`) pursue an
//! objective. `[host.slack] policy = ...`:
//!
//! | policy | `rank` of each data packet | reader | source |
//! |---|---|---|---|
//! | `"none"` (default) | the transport's own (pFabric's remaining size; 0 for the others) | – | – |
//! | `"flow_size"` | the flow's size, bytes (SJF) | `sjf`, `rank`, `pfabric`, `srpt` | [TH] §5.2.1 |
//! | `"remaining"` | flow size − new payload bytes this host sent before the packet (SRPT, as the host knows it: retransmissions, flagged, do not count) | `srpt`, `pfabric`, `sjf`, `rank` | [TH] §5.2.1 |
//! | `"mean_fct"` | slack = ⌈size / MSS⌉ × `d_us` (the flow's protocol MSS) | `lstf` | [TH] §5.2.1; `UPS` `tcp.cc` (packets × 1 s) |
//! | `"tail"` | slack = `slack_us`, the same for all (FIFO+ as LSTF) | `lstf` | [TH] §5.2.2; `UPS` `initSlack_` = 1 s |
//! | `"fairness"` | slack₀ = 0; slackᵢ = max(0, slackᵢ₋₁ + sizeᵢ × 8 / r_est − (tᵢ − tᵢ₋₁)), per flow | `lstf` | [TH] §5.2.3 (Virtual Clock); TA19 |
//! | `"deadline"` | deadline = now + `deadline_us` (absolute, ps) | `lstf` with `mode = "edf"`, `rank` | [TH] App. A.4 (EDF ≡ LSTF) |
//!
//! | key | default | source |
//! |---|---|---|
//! | `d_us` (`mean_fct`) | 1,000,000 (1 s per packet) | [TH] §5.2.1 "D = 1 s"; `UPS` `tcp.cc` |
//! | `slack_us` (`tail`) | 1,000,000 (1 s) | `UPS` `initSlack_` (T37 runs) |
//! | `r_est_mbps_by_entry` (`fairness`) | [] (every flow uses `r_est_mbps`) | [TH] §5.2.3 (T39: r_est 900 : 100 : 100 Mb/s gives flows weights 9 : 1 : 1) |
//! | `r_est_mbps` (`fairness`) | 100 | `UPS` scripts: interSlack 116,800 ns = 1460 B at 100 Mb/s, the best r_est at 70% load (T40, T41) |
//! | `at` (`fairness`) | `"handoff"` | [TH] §5.2.3; `"nic_departure"`: `UPS` `edge-fq-lstf.cc` (the host link's dequeue) |
//! | `packets` (`fairness`) | `"data"` | `"all"`: `UPS` `edge-fq-lstf.cc` keys every packet on its flow id, TCP's ACKs too |
//! | `per_packet_bytes` (`fairness`) | none: the packet's wire size | `UPS` interSlack = 1460 B × 8 / r_est per packet |
//! | `deadline_us` (`deadline`) | 1,000,000 (1 s) | none: as `tail`, so that EDF and LSTF give the same schedule |
//!
//! Slacks are signed picoseconds (LSTF's unit, `queue/lstf.rs`) and
//! saturate at `i64::MAX`; a flow without a size has rank `u64::MAX` under
//! `flow_size` and `remaining`, and the largest slack under `mean_fct`.
//!
//! **Fairness** follows the thesis's formula by default: the packet's wire
//! size over a common r_est, and t = when the transport hands the packet to
//! the host's NIC. The `UPS` code (`edge-fq-lstf.cc`) adds a per-packet
//! constant instead, at the host link's departure, to every packet of the
//! flow: `at = "nic_departure"`, `per_packet_bytes = 1460`, `packets =
//! "all"` (the shard calls [`SlackConfig::stamp_departure`] as the NIC
//! starts a packet). The two agree with equal packets and an idle NIC; a
//! window handed to a NIC slower than r_est per packet gets smaller slacks
//! at the departure (T40's 1G-1G row). One r_est for every flow, or one per `[[traffic]]` entry
//! (`r_est_mbps_by_entry`: weights, T39; the thesis gives per-flow values
//! without saying how a host learns them).
//!
//! State: one [`EdgeFlow`] per source endpoint, in its host slot, updated
//! only when the flow sends: no timers, nothing per idle flow. Replay's
//! slack o − i − t_min is not a policy here: a `[replay]` scenario stamps
//! it from its recorded original (`replay.rs`). Edge-ECN and Edge-CoDel
//! (`queue/edge_ecn.rs`, `queue/edge_codel.rs`) read the used slack at the
//! receiving edge; with `used_slack = "lstf"` they read a `tail` slack.
//!
//! A policy needs a discipline that reads what it writes: if no port (the
//! NIC, any switch tier, or a class inside one) does, the scenario is
//! rejected with an error naming `host.slack.policy`.

use crate::config::ConfigError;
use crate::packet::{flags, Packet, PacketKind};
use crate::queue::edge_ecn::UsedSlack;
use crate::queue::lstf::LstfMode;
use crate::queue::QueueConfig;
use crate::transport::config::{bad, Micros};
use crate::transport::FlowInfo;
use serde::{Deserialize, Serialize};

/// `d_us` of `mean_fct`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeanFct {
    /// Slack per packet of the flow (`d_us`).
    #[serde(rename = "d_us")]
    pub d: Micros,
}

/// `slack_us` of `tail`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tail {
    /// Every packet's slack (`slack_us`).
    #[serde(rename = "slack_us")]
    pub slack: Micros,
}

/// `r_est_mbps` (and `r_est_mbps_by_entry`, `at`, `packets`,
/// `per_packet_bytes`) of `fairness`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fairness {
    /// The rate estimate, Mb/s.
    pub r_est_mbps: f64,
    /// Per-`[[traffic]]`-entry rate estimates, Mb/s: entry i's flows use
    /// element i, entries past the end use `r_est_mbps` (weights, T39).
    pub r_est_mbps_by_entry: Vec<f64>,
    /// When a packet's time tᵢ is read.
    pub at: StampAt,
    /// Which of a flow's packets are stamped.
    pub packets: StampPackets,
    /// If set, every packet adds this many bytes at r_est (the `UPS` code's
    /// per-packet `interSlack_`) instead of its own wire size.
    pub per_packet_bytes: Option<u32>,
}

/// When the fairness slack reads a packet's time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StampAt {
    /// When the transport hands the packet to the NIC ([TH] §5.2.3).
    #[default]
    Handoff,
    /// When the NIC starts sending it (`UPS` `edge-fq-lstf.cc`, whose host
    /// link dequeues it then).
    NicDeparture,
}

/// Which packets the fairness slack stamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StampPackets {
    /// The source's data packets; the others keep the transport's rank.
    #[default]
    Data,
    /// Every packet of the flow a host sends, acknowledgements included,
    /// each direction with its own virtual clock (the `UPS` edge queue keys
    /// on the flow id, which TCP's acknowledgements carry too).
    All,
}

/// `deadline_us` of `deadline`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deadline {
    /// Time from the packet's departure to its deadline (`deadline_us`).
    #[serde(rename = "deadline_us")]
    pub after: Micros,
}

const ONE_SECOND: Micros = Micros::from_ps(1_000_000_000_000);

impl Default for MeanFct {
    fn default() -> Self {
        MeanFct { d: ONE_SECOND }
    }
}
impl Default for Tail {
    fn default() -> Self {
        Tail { slack: ONE_SECOND }
    }
}
impl Default for Fairness {
    fn default() -> Self {
        Fairness {
            r_est_mbps: 100.0,
            r_est_mbps_by_entry: Vec::new(),
            at: StampAt::Handoff,
            packets: StampPackets::Data,
            per_packet_bytes: None,
        }
    }
}
impl Default for Deadline {
    fn default() -> Self {
        Deadline { after: ONE_SECOND }
    }
}

/// `[host.slack]`: the policy and its key.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum SlackConfig {
    /// Leave the transport's rank.
    #[default]
    None,
    /// SJF: the flow size.
    FlowSize,
    /// SRPT: the bytes not yet sent.
    Remaining,
    /// LSTF slack = packets × D.
    MeanFct(MeanFct),
    /// LSTF slack = a constant.
    Tail(Tail),
    /// LSTF slack from a per-flow virtual clock.
    Fairness(Fairness),
    /// EDF deadline = now + a constant.
    Deadline(Deadline),
}

/// What a policy writes into `rank`, so which disciplines can read it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Writes {
    Priority,
    Slack,
    Deadline,
}

impl SlackConfig {
    /// Whether it leaves `rank` alone.
    pub fn is_none(&self) -> bool {
        *self == SlackConfig::None
    }

    fn name(&self) -> &'static str {
        match self {
            SlackConfig::None => "none",
            SlackConfig::FlowSize => "flow_size",
            SlackConfig::Remaining => "remaining",
            SlackConfig::MeanFct(_) => "mean_fct",
            SlackConfig::Tail(_) => "tail",
            SlackConfig::Fairness(_) => "fairness",
            SlackConfig::Deadline(_) => "deadline",
        }
    }

    fn writes(&self) -> Option<Writes> {
        match self {
            SlackConfig::None => None,
            SlackConfig::FlowSize | SlackConfig::Remaining => Some(Writes::Priority),
            SlackConfig::MeanFct(_) | SlackConfig::Tail(_) | SlackConfig::Fairness(_) => {
                Some(Writes::Slack)
            }
            SlackConfig::Deadline(_) => Some(Writes::Deadline),
        }
    }

    /// Checks the values (`key` is `host.slack`), and that one of `ports`
    /// (the NIC's first, then the switch tiers' disciplines) reads what the
    /// policy writes.
    pub fn validate<'a>(
        &self,
        key: &str,
        ports: impl IntoIterator<Item = &'a QueueConfig> + Clone,
    ) -> Result<(), ConfigError> {
        match self {
            SlackConfig::MeanFct(m) => drop(m.d.positive(&format!("{key}.d_us"))?),
            SlackConfig::Tail(t) => drop(t.slack.positive(&format!("{key}.slack_us"))?),
            SlackConfig::Deadline(d) => drop(d.after.positive(&format!("{key}.deadline_us"))?),
            SlackConfig::Fairness(f) => {
                let too_small = |r: f64| r.is_nan() || r < 1e-6;
                if too_small(f.r_est_mbps) {
                    return Err(bad(
                        &format!("{key}.r_est_mbps"),
                        f.r_est_mbps,
                        "must be at least 1e-6 (1 b/s)",
                    ));
                }
                if let Some((i, &r)) = f
                    .r_est_mbps_by_entry
                    .iter()
                    .enumerate()
                    .find(|(_, &r)| too_small(r))
                {
                    return Err(bad(
                        &format!("{key}.r_est_mbps_by_entry[{i}]"),
                        r,
                        "must be at least 1e-6 (1 b/s)",
                    ));
                }
                if f.per_packet_bytes == Some(0) {
                    return Err(bad(
                        &format!("{key}.per_packet_bytes"),
                        0,
                        "must be at least 1 (leave it out to add each packet's own size)",
                    ));
                }
                if f.packets == StampPackets::All && f.at != StampAt::NicDeparture {
                    return Err(bad(
                        &format!("{key}.packets"),
                        "\"all\"",
                        "needs at = \"nic_departure\" (a sink's packets are stamped as its NIC sends them)",
                    ));
                }
                let nic = ports.clone().into_iter().next();
                if f.at == StampAt::NicDeparture && nic.is_some_and(|q| reads(q, Writes::Slack)) {
                    return Err(bad(
                        &format!("{key}.at"),
                        "\"nic_departure\"",
                        "stamps a packet as the NIC sends it, after the NIC's own lstf has read it ([host.queue]): give the NIC a discipline that ignores the slack, or at = \"handoff\"",
                    ));
                }
            }
            _ => {}
        }
        let Some(w) = self.writes() else {
            return Ok(());
        };
        if ports.clone().into_iter().any(|q| reads(q, w)) {
            return Ok(());
        }
        let (what, kinds) = match w {
            Writes::Priority => ("a rank", "sjf, srpt, pfabric or rank"),
            Writes::Slack => ("a slack", "lstf"),
            Writes::Deadline => (
                "a deadline",
                "lstf with mode = \"edf\" or \"edf_network\", or rank",
            ),
        };
        let mut names: Vec<&str> = ports.into_iter().map(QueueConfig::name).collect();
        names.dedup();
        Err(bad(
            &format!("{key}.policy"),
            format!("{:?}", self.name()),
            &format!(
                "writes {what} that no port's discipline reads (they run {}); use {kinds}",
                names.join(", ")
            ),
        ))
    }

    /// The per-flow state of a source endpoint for `flow`, whose protocol
    /// sends `mss`-byte payloads.
    pub fn flow(&self, flow: &FlowInfo, mss: u32) -> EdgeFlow {
        let size = flow.size.unwrap_or(u64::MAX);
        let slack = match self {
            SlackConfig::MeanFct(m) => match flow.size {
                Some(s) => (s.div_ceil(mss.max(1) as u64) as u128 * m.d.ps as u128)
                    .min(i64::MAX as u128) as i64,
                None => i64::MAX,
            },
            _ => 0,
        };
        let r_est_bps = match self {
            SlackConfig::Fairness(f) => r_est_bps(f, flow.id),
            _ => 0,
        };
        EdgeFlow {
            source: true,
            size,
            slack,
            sent: 0,
            last_at: None,
            r_est_bps,
        }
    }

    /// Whether the NIC stamps packets as it sends them (`fairness` with
    /// `at = "nic_departure"`): then [`Self::stamp_departure`] does, not
    /// [`Self::stamp`].
    #[inline]
    pub fn at_departure(&self) -> bool {
        matches!(self, SlackConfig::Fairness(f) if f.at == StampAt::NicDeparture)
    }

    /// Stamps `pkt` of flow `id`, whose endpoint on this host keeps `flow`,
    /// as the host's NIC starts sending it at `now` (`at_departure` only).
    /// With `packets = "all"` a sink's packets get a virtual clock of their
    /// own, its r_est that of the flow's `[[traffic]]` entry.
    pub fn stamp_departure(&self, flow: &mut EdgeFlow, id: u64, now: u64, pkt: &mut Packet) {
        let SlackConfig::Fairness(f) = self else {
            return;
        };
        let stamped = match f.packets {
            StampPackets::Data => flow.source && pkt.kind == PacketKind::Data,
            StampPackets::All => pkt.kind != PacketKind::Pause,
        };
        if !stamped {
            return;
        }
        if flow.r_est_bps == 0 {
            flow.r_est_bps = r_est_bps(f, id);
        }
        pkt.rank = fairness_next(flow, f, pkt.size, now) as u64;
    }

    /// Stamps the data packets `pkts` that `flow`'s endpoint sent at `now`.
    #[inline]
    pub fn stamp(&self, flow: &mut EdgeFlow, now: u64, pkts: &mut [Packet]) {
        // `at = "nic_departure"` stamps in `stamp_departure` instead.
        if self.is_none() || self.at_departure() || !flow.source {
            return;
        }
        for p in pkts.iter_mut().filter(|p| p.kind == PacketKind::Data) {
            p.rank = match self {
                SlackConfig::None => p.rank,
                SlackConfig::FlowSize => flow.size,
                SlackConfig::Remaining => {
                    let r = flow.size.saturating_sub(flow.sent);
                    if !p.has(flags::RETX) {
                        flow.sent += p.payload as u64;
                    }
                    r
                }
                SlackConfig::MeanFct(_) => flow.slack as u64,
                SlackConfig::Tail(t) => t.slack.ps.min(i64::MAX as u64),
                SlackConfig::Fairness(f) => fairness_next(flow, f, p.size, now) as u64,
                SlackConfig::Deadline(d) => now.saturating_add(d.after.ps),
            };
        }
    }
}

/// The next fairness slack of `flow` for a `bytes`-byte packet at `now`:
/// 0 for its first packet, then max(0, previous + bytes × 8 / r_est −
/// (now − previous time)), `bytes` being `per_packet_bytes` if set.
fn fairness_next(flow: &mut EdgeFlow, f: &Fairness, bytes: u32, now: u64) -> i64 {
    let slack = match flow.last_at {
        None => 0,
        Some(t) => {
            let bits = f.per_packet_bytes.unwrap_or(bytes) as f64 * 8.0;
            let tx = (bits / flow.r_est_bps as f64 * 1e12).round() as i64;
            let gap = now.saturating_sub(t).min(i64::MAX as u64) as i64;
            flow.slack.saturating_add(tx).saturating_sub(gap).max(0)
        }
    };
    flow.slack = slack;
    flow.last_at = Some(now);
    slack
}

/// Flow `id`'s rate estimate under `f`, b/s.
fn r_est_bps(f: &Fairness, id: u64) -> u64 {
    let entry = workloads::split_flow_id(id).0 as usize;
    let mbps = f
        .r_est_mbps_by_entry
        .get(entry)
        .copied()
        .unwrap_or(f.r_est_mbps);
    (mbps * 1e6).round() as u64
}

/// Whether discipline `q` (or a class inside it) reads what a policy writes.
fn reads(q: &QueueConfig, w: Writes) -> bool {
    match (q, w) {
        (QueueConfig::Classes(c), _) => c.class.iter().any(|q| reads(q, w)),
        (
            QueueConfig::Sjf(_)
            | QueueConfig::Rank(_)
            | QueueConfig::Srpt(_)
            | QueueConfig::Pfabric(_),
            Writes::Priority,
        ) => true,
        (QueueConfig::Lstf(c), Writes::Slack) => c.mode == LstfMode::Lstf,
        (QueueConfig::Lstf(c), Writes::Deadline) => {
            matches!(c.mode, LstfMode::Edf | LstfMode::EdfNetwork)
        }
        (QueueConfig::Rank(_), Writes::Deadline) => true,
        (QueueConfig::EdgeEcn(c), Writes::Slack) => c.used_slack == UsedSlack::Lstf,
        (QueueConfig::EdgeCodel(c), Writes::Slack) => c.used_slack == UsedSlack::Lstf,
        _ => false,
    }
}

/// A source endpoint's edge state: what its policy remembers between
/// packets (kept in the host's slot; sinks have the inert default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EdgeFlow {
    /// A source (sinks are never stamped).
    source: bool,
    /// Flow size, bytes (`u64::MAX`: no size).
    size: u64,
    /// `mean_fct`: the flow's slack; `fairness`: the last packet's slack.
    slack: i64,
    /// `remaining`: new payload bytes sent so far.
    sent: u64,
    /// `fairness`: when the last packet left.
    last_at: Option<u64>,
    /// `fairness`: this flow's rate estimate, b/s.
    r_est_bps: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, HEADER_BYTES};
    use crate::transport::testkit::flow;

    fn data(payload: u32, retx: bool) -> Packet {
        let mut p = test_packet(PacketKind::Data, 0, payload + HEADER_BYTES);
        p.rank = 7;
        if retx {
            p.flags |= flags::RETX;
        }
        p
    }

    fn parse(text: &str) -> Result<SlackConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn reads_each_policy_and_its_defaults() {
        assert_eq!(parse("policy = \"none\"").unwrap(), SlackConfig::None);
        assert!(parse("").is_err(), "a [host.slack] table names its policy");
        assert_eq!(
            parse("policy = \"flow_size\"").unwrap(),
            SlackConfig::FlowSize
        );
        let SlackConfig::Tail(t) = parse("policy = \"tail\"").unwrap() else {
            panic!("tail")
        };
        assert_eq!(t.slack.ps, 1_000_000_000_000);
        let SlackConfig::Fairness(f) = parse("policy = \"fairness\"\nr_est_mbps = 50").unwrap()
        else {
            panic!("fairness")
        };
        assert_eq!(f.r_est_mbps, 50.0);
        assert!(
            parse("policy = \"tail\"\nr_est_mbps = 50").is_err(),
            "not tail's key"
        );
        assert!(parse("policy = \"replay\"").is_err());
    }

    #[test]
    fn flow_size_and_remaining_stamp_data_only() {
        let f = flow(Some(3000), 1);
        let mut ack = test_packet(PacketKind::Ack, 0, 64);
        ack.rank = 7;
        let sjf = SlackConfig::FlowSize;
        let mut st = sjf.flow(&f, 1000);
        let mut pkts = [data(1000, false), ack.clone()];
        sjf.stamp(&mut st, 0, &mut pkts);
        assert_eq!((pkts[0].rank, pkts[1].rank), (3000, 7));
        let srpt = SlackConfig::Remaining;
        let mut st = srpt.flow(&f, 1000);
        let mut pkts = [data(1000, false), data(1000, false), data(1000, true)];
        srpt.stamp(&mut st, 0, &mut pkts);
        let ranks: Vec<u64> = pkts.iter().map(|p| p.rank).collect();
        assert_eq!(
            ranks,
            [3000, 2000, 1000],
            "a retransmission sends nothing new"
        );
        let mut pkts = [data(1000, false)];
        srpt.stamp(&mut st, 0, &mut pkts);
        assert_eq!(pkts[0].rank, 1000);
        // A sink's state stamps nothing.
        let mut sink = EdgeFlow::default();
        let mut pkts = [data(1000, false)];
        srpt.stamp(&mut sink, 0, &mut pkts);
        assert_eq!(pkts[0].rank, 7);
    }

    #[test]
    fn slacks_mean_fct_tail_deadline() {
        let f = flow(Some(2500), 1);
        let m = SlackConfig::MeanFct(MeanFct::default());
        let mut st = m.flow(&f, 1000);
        let mut pkts = [data(1000, false)];
        m.stamp(&mut st, 5, &mut pkts);
        assert_eq!(pkts[0].rank, 3 * 1_000_000_000_000, "3 packets × 1 s");
        let endless = m.flow(&flow(None, 1), 1000);
        assert_eq!(endless.slack, i64::MAX);
        let t = SlackConfig::Tail(Tail {
            slack: Micros::from_us(2.0),
        });
        let mut st = t.flow(&f, 1000);
        t.stamp(&mut st, 5, &mut pkts);
        assert_eq!(pkts[0].rank, 2_000_000);
        let d = SlackConfig::Deadline(Deadline {
            after: Micros::from_us(2.0),
        });
        let mut st = d.flow(&f, 1000);
        d.stamp(&mut st, 5, &mut pkts);
        assert_eq!(pkts[0].rank, 2_000_005);
    }

    #[test]
    fn fairness_is_a_virtual_clock_per_flow() {
        // 1000 B on the wire at 100 Mb/s: 80 µs per packet.
        let fair = SlackConfig::Fairness(Fairness::default());
        let mut st = fair.flow(&flow(Some(1 << 30), 1), 936);
        let mut burst = [data(936, false), data(936, false), data(936, false)];
        fair.stamp(&mut st, 0, &mut burst);
        let us = 1_000_000;
        let ranks: Vec<u64> = burst.iter().map(|p| p.rank).collect();
        assert_eq!(ranks, [0, 80 * us, 160 * us], "a burst builds up slack");
        // 100 µs later: 160 + 80 − 100 = 140 µs; much later: never below 0.
        let mut one = [data(936, false)];
        fair.stamp(&mut st, 100 * us, &mut one);
        assert_eq!(one[0].rank, 140 * us);
        fair.stamp(&mut st, 10_000 * us, &mut one);
        assert_eq!(one[0].rank, 0);
    }

    #[test]
    fn a_policy_needs_a_discipline_that_reads_it() {
        let drop_tail = QueueConfig::default();
        let lstf: QueueConfig = toml::from_str("kind = \"lstf\"").unwrap();
        let edf: QueueConfig = toml::from_str("kind = \"lstf\"\nmode = \"edf\"").unwrap();
        let sjf: QueueConfig = toml::from_str("kind = \"sjf\"").unwrap();
        let classes: QueueConfig = toml::from_str(
            "kind = \"classes\"\n[[class]]\nkind = \"droptail\"\n[[class]]\nkind = \"lstf\"",
        )
        .unwrap();
        let mean = SlackConfig::MeanFct(MeanFct::default());
        let e = mean.validate("host.slack", [&drop_tail]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("host.slack.policy") && msg.contains("droptail"),
            "{msg}"
        );
        assert!(mean.validate("host.slack", [&drop_tail, &lstf]).is_ok());
        assert!(
            mean.validate("host.slack", [&classes]).is_ok(),
            "a class reads it"
        );
        assert!(
            mean.validate("host.slack", [&edf]).is_err(),
            "EDF reads deadlines"
        );
        let dl = SlackConfig::Deadline(Deadline::default());
        assert!(dl.validate("host.slack", [&edf]).is_ok());
        assert!(dl.validate("host.slack", [&lstf]).is_err());
        assert!(SlackConfig::FlowSize.validate("host.slack", [&sjf]).is_ok());
        assert!(SlackConfig::FlowSize
            .validate("host.slack", [&lstf])
            .is_err());
        assert!(SlackConfig::None
            .validate("host.slack", [&drop_tail])
            .is_ok());
        let zero = SlackConfig::Fairness(Fairness {
            r_est_mbps: 0.0,
            ..Fairness::default()
        });
        let msg = zero
            .validate("host.slack", [&lstf])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("host.slack.r_est_mbps"), "{msg}");
        let weights = SlackConfig::Fairness(Fairness {
            r_est_mbps_by_entry: vec![900.0, f64::NAN],
            ..Fairness::default()
        });
        let msg = weights
            .validate("host.slack", [&lstf])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("host.slack.r_est_mbps_by_entry[1]"), "{msg}");
    }

    /// `at = "nic_departure"`: the handoff leaves the rank alone and the
    /// NIC's departures, not the handoff, space the virtual clock. A
    /// window handed over at once to a NIC that sends a 1,000 B packet
    /// every 8 µs (1 Gb/s): at r_est 1 Gb/s its slacks stay 0 (at the
    /// handoff they grow by 8 µs a packet); with `per_packet_bytes =
    /// 1460` at 100 Mb/s each adds 116.8 µs less the 8 µs gap.
    #[test]
    fn nic_departure_spaces_the_clock_by_the_nics_departures() {
        let us = 1_000_000u64;
        let at_nic = |r_est_mbps: f64, per_packet_bytes: Option<u32>| {
            SlackConfig::Fairness(Fairness {
                r_est_mbps,
                at: StampAt::NicDeparture,
                per_packet_bytes,
                ..Fairness::default()
            })
        };
        let departures = |cfg: &SlackConfig| -> Vec<u64> {
            let mut st = cfg.flow(&flow(Some(1 << 30), 1), 936);
            let mut window = [data(936, false), data(936, false), data(936, false)];
            cfg.stamp(&mut st, 0, &mut window);
            assert!(window.iter().all(|p| p.rank == 7), "handoff stamps nothing");
            let mut ranks = Vec::new();
            for (i, p) in window.iter_mut().enumerate() {
                cfg.stamp_departure(&mut st, 1, i as u64 * 8 * us, p);
                ranks.push(p.rank);
            }
            ranks
        };
        let line_rate = at_nic(1000.0, None);
        assert!(line_rate.at_departure());
        assert_eq!(departures(&line_rate), [0, 0, 0]);
        let handoff = SlackConfig::Fairness(Fairness {
            r_est_mbps: 1000.0,
            ..Fairness::default()
        });
        assert!(!handoff.at_departure());
        let mut st = handoff.flow(&flow(Some(1 << 30), 1), 936);
        let mut window = [data(936, false), data(936, false), data(936, false)];
        handoff.stamp(&mut st, 0, &mut window);
        let ranks: Vec<u64> = window.iter().map(|p| p.rank).collect();
        assert_eq!(ranks, [0, 8 * us, 16 * us], "the handoff reading grows");
        let ups = at_nic(100.0, Some(1460));
        let ns = 1_000u64;
        assert_eq!(departures(&ups), [0, 108_800 * ns, 217_600 * ns]);
    }

    /// `packets = "data"` stamps only a source's data at the NIC; `"all"`
    /// stamps its acknowledgements too, and a sink's, each flow end with
    /// its own clock and its `[[traffic]]` entry's r_est.
    #[test]
    fn nic_departure_packets_all_gives_a_sink_its_own_clock() {
        let us = 1_000_000u64;
        let cfg = |packets| {
            SlackConfig::Fairness(Fairness {
                r_est_mbps_by_entry: vec![900.0, 10.0],
                at: StampAt::NicDeparture,
                packets,
                ..Fairness::default()
            })
        };
        let id = workloads::flow_id(1, 0, 0);
        let ack = || {
            let mut p = test_packet(PacketKind::Ack, 0, 936 + HEADER_BYTES);
            p.rank = 7;
            p
        };
        // Data only: a sink's acknowledgements keep the transport's rank.
        let data_only = cfg(StampPackets::Data);
        let mut sink = EdgeFlow::default();
        for t in [0, 10] {
            let mut a = ack();
            data_only.stamp_departure(&mut sink, id, t * us, &mut a);
            assert_eq!(a.rank, 7);
        }
        // All: 1000 B at entry 1's 10 Mb/s is 800 µs; 100 µs apart, the
        // second has 700 µs.
        let all = cfg(StampPackets::All);
        let mut sink = EdgeFlow::default();
        let ranks: Vec<u64> = [0, 100]
            .iter()
            .map(|&t| {
                let mut a = ack();
                all.stamp_departure(&mut sink, id, t * us, &mut a);
                a.rank
            })
            .collect();
        assert_eq!(ranks, [0, 700 * us]);
        // A source's own acknowledgements share its data's clock (one per
        // flow end): after a data packet at 0, an ACK at 0 has 800 µs.
        let mut f = flow(Some(1 << 30), 1);
        f.id = id;
        let mut src = all.flow(&f, 936);
        let mut first = data(936, false);
        all.stamp_departure(&mut src, id, 0, &mut first);
        let mut a = ack();
        all.stamp_departure(&mut src, id, 0, &mut a);
        assert_eq!([first.rank, a.rank], [0, 800 * us]);
    }

    #[test]
    fn nic_departure_keys_are_checked() {
        let lstf: QueueConfig = toml::from_str("kind = \"lstf\"").unwrap();
        let fifo = QueueConfig::default();
        let parsed = |text: &str| parse(&format!("policy = \"fairness\"\n{text}"));
        let err = |text: &str, ports: &[&QueueConfig]| {
            parsed(text)
                .unwrap()
                .validate("host.slack", ports.iter().copied())
                .unwrap_err()
                .to_string()
        };
        let msg = err("packets = \"all\"", &[&fifo, &lstf]);
        assert!(msg.contains("host.slack.packets"), "{msg}");
        let msg = err("at = \"nic_departure\"", &[&lstf]);
        assert!(msg.contains("host.slack.at"), "the NIC's lstf: {msg}");
        let msg = err(
            "at = \"nic_departure\"\nper_packet_bytes = 0",
            &[&fifo, &lstf],
        );
        assert!(msg.contains("host.slack.per_packet_bytes"), "{msg}");
        assert!(
            parsed("at = \"nic_departure\"\npackets = \"all\"\nper_packet_bytes = 1460")
                .unwrap()
                .validate("host.slack", [&fifo, &lstf])
                .is_ok()
        );
        assert!(parsed("at = \"departure\"").is_err(), "an unknown value");
    }

    /// `r_est_mbps_by_entry`: a flow of entry 1 takes element 1 (10 Mb/s:
    /// 800 µs per 1000 B packet), a flow of entry 3, past the end, takes
    /// `r_est_mbps` (100 Mb/s: 80 µs).
    #[test]
    fn fairness_weights_follow_the_traffic_entry() {
        let fair = SlackConfig::Fairness(Fairness {
            r_est_mbps_by_entry: vec![900.0, 10.0],
            ..Fairness::default()
        });
        let us = 1_000_000;
        for (entry, per_packet) in [(1u16, 800 * us), (3, 80 * us)] {
            let mut f = flow(Some(1 << 30), 1);
            f.id = workloads::flow_id(entry, 0, 0);
            let mut st = fair.flow(&f, 936);
            let mut two = [data(936, false), data(936, false)];
            fair.stamp(&mut st, 0, &mut two);
            assert_eq!([two[0].rank, two[1].rank], [0, per_packet], "entry {entry}");
        }
    }
}
