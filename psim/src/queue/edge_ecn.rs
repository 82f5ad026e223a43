//! Edge-ECN ([TH] §5.3.2): ECN marking moved from every switch to the
//! egress edge. Switches schedule by LSTF with equal slacks (that is,
//! FIFO+), DCTCP runs unchanged, and only the last hop marks: a data
//! packet is marked CE when its *used slack*, the queueing it met across
//! the whole network, exceeds the transmission time of K packets.
//!
//! * **Used slack** = initial slack − current slack ([TH] §5.3; the
//!   thesis's §5.3.2 wording is inverted). psim's packet (64 bytes, one
//!   cache line) has no room for a second slack field, so the used slack is
//!   read from `rank` one of two ways (`used_slack`):
//!   - `"fifo_plus"` (default): the switches run `fifo_plus`, which keeps
//!     the queueing met so far in `rank` (0 at the source: no `[host.slack]`
//!     policy needed). FIFO+ is LSTF with equal slacks ([TH] §5.2.2), so
//!     this is exactly the thesis's setup; used slack = `rank`.
//!   - `"lstf"`: the switches run `lstf` and the hosts stamp one slack on
//!     every packet (`[host.slack] policy = "tail"`); `rank` is the current
//!     slack and used slack = `initial_slack_us` − `rank`, so
//!     `initial_slack_us` must equal the hosts' `slack_us`. Per-packet
//!     initial slacks (fairness, mean FCT) cannot be read this way.
//! * This queue itself is that same LSTF/FIFO+ queue (`lstf.rs`), so the
//!   last hop's own wait counts, and it updates `rank` at dequeue as the
//!   switches do. The mark is decided at dequeue on the updated value:
//!   used slack > K × `mtu_bytes` × 8 / this port's rate (strictly more,
//!   "greater than the transmission time of K packets"). At 1500 B, 10 Gb/s
//!   and K = 15 that is 18 µs.
//! * Only data packets (the ones the hosts stamp) are judged. A data packet
//!   that is not ECN-capable (no `ECT`) is never marked and never dropped
//!   for its used slack: it is sent as it is (the thesis's Edge-ECN only
//!   marks; drops happen only when the buffer is full, as in `lstf`).
//!   Control packets (ACKs) are never marked.
//!
//! **Where.** The thesis marks at the egress edge only. psim sets a
//! discipline per switch tier (`[switch.tor.queue]`, `[switch.agg.queue]`,
//! `[switch.core.queue]`, `config/switch.rs`): give the ToR tier `kind =
//! "edge_ecn"` and the others `fifo_plus` (or `lstf` with `used_slack =
//! "lstf"`), or give `[switch.to_host.queue]` (the ports that feed a host)
//! `kind = "edge_ecn"` and every switch tier the other. The ToR tier also
//! holds the ToR's uplinks; there this queue
//! schedules exactly as `fifo_plus` and marks on the queueing so far. As
//! the used slack only grows along a path and CE is never cleared, a
//! packet marked on an uplink would have been marked at the egress: the
//! marked packets are the same as with marking at the egress alone.
//!
//! **The NICs.** Only queues that update `rank` count in the used slack,
//! so the hosts' NICs must run the same form (`fifo_plus` or `lstf`): a
//! scenario whose NIC keeps no used slack is refused at load
//! ([`nic_counts_its_wait`], `config/switch.rs`), since a sender whose own
//! NIC is its bottleneck would never be marked (T43).
//!
//! | parameter (`kind = "edge_ecn"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets (as `lstf`) | as `droptail`; the thesis's DC runs use 500 KB buffers ([TH] §5.2, T43) |
//! | `k_packets` | 15 ([`DEFAULT_K_PACKETS`]) | [TH] §5.3.2 "the DCTCP default value of K = 15 packets"; [DCTCP] |
//! | `mtu_bytes` | one full packet of the traffic: the largest MTU (or MSS) payload of `[[traffic]]`'s protocols + 64 B header (docs/disciplines.md) | [TH] §5.3.2 (transmission time of K packets; 1500 B) |
//! | `used_slack` | `"fifo_plus"` | see above; [TH] §5.3 (used slack), §5.2.2 (FIFO+ = LSTF with equal slacks) |
//! | `initial_slack_us` (`used_slack = "lstf"` only) | 1,000,000 (1 s) | `[host.slack] policy = "tail"`'s default `slack_us` (`UPS` `initSlack_`) |

use super::lstf::{ups_capacity, Form, LstfMode, LstfQueue};
use super::{Discipline, DisciplineConfig, QueueConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::{flags, Packet, PacketKind};
use crate::transport::config::Micros;
use crate::units::tx_time_ps;
use serde::{Deserialize, Serialize};

/// K, packets: DCTCP's default marking threshold ([TH] §5.3.2).
pub const DEFAULT_K_PACKETS: u32 = 15;
/// The hosts' equal slack under `[host.slack] policy = "tail"`, µs (1 s).
pub const DEFAULT_INITIAL_SLACK_US: f64 = 1_000_000.0;

/// Where the used slack comes from (`used_slack`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsedSlack {
    /// `rank` is the queueing so far (switches run `fifo_plus`).
    #[default]
    FifoPlus,
    /// `rank` is the current slack (switches run `lstf`); used slack =
    /// the configured initial slack − `rank`.
    Lstf,
    /// Measured at the port, whatever the switches run: the time since the
    /// transport stamped the packet (`sent_ps`) less what its path costs
    /// to reach here with no queueing (store and forward on each link,
    /// `Topology::t_min_to_ps`). `rank` is neither read nor written.
    /// `edge_codel` only.
    Measured,
}

/// How an edge discipline reads the used slack of a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct UsedSlackReader {
    /// The form of `rank`.
    pub mode: UsedSlack,
    /// Initial slack, ps (`Lstf` only).
    pub initial_ps: i64,
}

impl UsedSlackReader {
    /// The form of the LSTF queue that keeps `rank` in this form.
    pub fn form(&self) -> Form {
        match self.mode {
            // `Measured` is refused where a form is needed (`edge_ecn`).
            UsedSlack::FifoPlus | UsedSlack::Measured => Form::FifoPlus,
            UsedSlack::Lstf => Form::Lstf,
        }
    }

    /// The `rank` that carries `used` ps of used slack (the inverse of
    /// [`Self::used`]).
    #[inline]
    pub fn rank(&self, used: u64) -> u64 {
        match self.mode {
            UsedSlack::FifoPlus | UsedSlack::Measured => used,
            UsedSlack::Lstf => {
                self.initial_ps
                    .saturating_sub(used.min(i64::MAX as u64) as i64) as u64
            }
        }
    }

    /// The used slack, ps, of a packet whose `rank` is `rank` (never
    /// negative: a current slack above the initial one reads as 0).
    #[inline]
    pub fn used(&self, rank: u64) -> u64 {
        match self.mode {
            UsedSlack::FifoPlus | UsedSlack::Measured => rank,
            UsedSlack::Lstf => self.initial_ps.saturating_sub(rank as i64).max(0) as u64,
        }
    }
}

/// Checks `used_slack` against `initial_slack_us` (`key` is the table's path).
pub(super) fn validate_used_slack(
    key: &str,
    mode: UsedSlack,
    initial: Option<Micros>,
) -> Result<(), ConfigError> {
    match (mode, initial) {
        (UsedSlack::FifoPlus | UsedSlack::Measured, Some(i)) => Err(bad(
            &format!("{key}.initial_slack_us"),
            i.ps as f64 / 1e6,
            "applies only with used_slack = \"lstf\"",
        )),
        (UsedSlack::Lstf, Some(i)) => i.positive(&format!("{key}.initial_slack_us")).map(drop),
        _ => Ok(()),
    }
}

/// The reader from validated keys.
pub(super) fn reader(mode: UsedSlack, initial: Option<Micros>) -> UsedSlackReader {
    let initial = initial.unwrap_or(Micros::from_us(DEFAULT_INITIAL_SLACK_US));
    UsedSlackReader {
        mode,
        initial_ps: match mode {
            UsedSlack::FifoPlus | UsedSlack::Measured => 0,
            UsedSlack::Lstf => initial.ps.min(i64::MAX as u64) as i64,
        },
    }
}

/// The used-slack form that an edge AQM in `q` (or in a class inside it)
/// reads from `rank`: `"fifo_plus"` or `"lstf"`. `"measured"` reads no
/// `rank`, so it asks nothing of the other queues.
pub(crate) fn rank_form(q: &QueueConfig) -> Option<UsedSlack> {
    let read = |u: UsedSlack| (u != UsedSlack::Measured).then_some(u);
    match q {
        QueueConfig::Classes(c) => c.class.iter().find_map(rank_form),
        QueueConfig::EdgeEcn(c) => read(c.used_slack),
        QueueConfig::EdgeCodel(c) => read(c.used_slack),
        _ => None,
    }
}

/// Whether a host NIC running `nic` puts its wait into `rank` in `form`:
/// FIFO+ adds it to the queueing so far, LSTF (and its `fifo` mode) takes it
/// from the slack, and an edge AQM of that form does as its queue does.
/// With any other NIC a packet's wait at its own NIC never counts, so a
/// sender whose NIC is its bottleneck is never marked (T43 with the default
/// NIC: its queue reached 1000 packets).
pub(crate) fn nic_counts_its_wait(nic: &QueueConfig, form: UsedSlack) -> bool {
    match (nic, form) {
        (QueueConfig::FifoPlus(_), UsedSlack::FifoPlus) => true,
        (QueueConfig::Lstf(c), UsedSlack::Lstf) => {
            !matches!(c.mode, LstfMode::Edf | LstfMode::EdfNetwork)
        }
        (QueueConfig::EdgeEcn(_) | QueueConfig::EdgeCodel(_), _) => rank_form(nic) == Some(form),
        _ => false,
    }
}

/// `kind = "edge_ecn"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EdgeEcnConfig {
    /// Capacity in packets (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// K: the threshold in packet transmission times.
    pub k_packets: u32,
    /// The packet size K counts, bytes (default: the traffic's full packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu_bytes: Option<u64>,
    /// Where the used slack comes from.
    pub used_slack: UsedSlack,
    /// The hosts' slack (`used_slack = "lstf"`; default 1 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_slack_us: Option<Micros>,
}

impl Default for EdgeEcnConfig {
    fn default() -> Self {
        EdgeEcnConfig {
            queue_packets: None,
            queue_bytes: None,
            k_packets: DEFAULT_K_PACKETS,
            mtu_bytes: None,
            used_slack: UsedSlack::FifoPlus,
            initial_slack_us: None,
        }
    }
}

impl EdgeEcnConfig {
    fn mtu(&self, env: &QueueEnv) -> u64 {
        self.mtu_bytes.unwrap_or(env.packet_bytes)
    }
}

impl DisciplineConfig for EdgeEcnConfig {
    type Queue = EdgeEcnQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = ups_capacity("", self.queue_packets, self.queue_bytes) {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c.mtu_bytes = Some(self.mtu(env));
        if c.used_slack == UsedSlack::Lstf {
            let r = reader(c.used_slack, c.initial_slack_us);
            c.initial_slack_us = Some(Micros::from_ps(r.initial_ps as u64));
        }
        c
    }
    fn marks_ecn(&self) -> bool {
        true
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        ups_capacity(key, self.queue_packets, self.queue_bytes)?;
        if self.k_packets == 0 {
            return Err(bad(&format!("{key}.k_packets"), 0, "must be at least 1"));
        }
        if self.mtu_bytes == Some(0) {
            return Err(bad(&format!("{key}.mtu_bytes"), 0, "must be at least 1"));
        }
        if self.used_slack == UsedSlack::Measured {
            return Err(bad(
                &format!("{key}.used_slack"),
                "measured",
                "applies to edge_codel only: edge_ecn schedules by the slack in rank (use fifo_plus or lstf)",
            ));
        }
        validate_used_slack(key, self.used_slack, self.initial_slack_us)
    }
    fn build(&self, env: &QueueEnv) -> EdgeEcnQueue {
        let cap = ups_capacity("", self.queue_packets, self.queue_bytes).expect("validated");
        let used = reader(self.used_slack, self.initial_slack_us);
        EdgeEcnQueue {
            inner: LstfQueue::new(cap, used.form()),
            used,
            k_bytes: self.k_packets as u64 * self.mtu(env),
        }
    }
}

/// An LSTF (or FIFO+) queue that marks at dequeue on the used slack.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct EdgeEcnQueue {
    inner: LstfQueue,
    used: UsedSlackReader,
    /// K × the packet size, bytes: the threshold is their transmission time.
    k_bytes: u64,
}

impl Discipline for EdgeEcnQueue {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        self.inner.enqueue(pkt, cx);
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let mut p = self.inner.dequeue(cx)?;
        if p.kind == PacketKind::Data
            && p.has(flags::ECT)
            && !p.has(flags::ECN_CE)
            && self.used.used(p.rank) > tx_time_ps(self.k_bytes, cx.rate_bps)
        {
            p.flags |= flags::ECN_CE;
            cx.marked(&p);
        }
        Some(p)
    }
    fn len_packets(&self) -> u32 {
        self.inner.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.inner.len_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{control, data, Kit, ENV};
    use crate::queue::Outcome::*;
    use crate::units::PS_PER_US;

    const US: u64 = PS_PER_US;
    /// 15 × 1500 B at the kit's 10 Gb/s: 15 × 1.2 µs.
    const THRESHOLD: u64 = 18 * US;

    fn queue(toml: &str) -> EdgeEcnQueue {
        let c: EdgeEcnConfig = toml::from_str(toml).unwrap();
        c.validate("q").unwrap();
        c.build(&ENV)
    }

    fn ect(seq: u64, rank: u64) -> Packet {
        let mut p = data(seq, 1500);
        p.flags |= flags::ECT;
        p.rank = rank;
        p
    }

    /// FIFO+ ranks (queueing so far). 0 and 1 both met 17 µs upstream and
    /// arrive at t = 0 (equal keys: first come, first served).
    /// - t = 1 µs: 0 leaves, used = 17 + 1 = 18 µs = the threshold: not
    ///   "greater than", so unmarked.
    /// - t = 1 µs + 1 ps: 1 leaves with 18 µs + 1 ps: marked.
    #[test]
    fn marks_exactly_when_the_used_slack_passes_k_transmission_times() {
        let (mut k, mut q) = (Kit::new(0), queue(""));
        k.fill(&mut q, [ect(0, 17 * US), ect(1, 17 * US)]);
        let p = k.at(US).take(&mut q).unwrap();
        assert_eq!((p.seq, p.rank, p.has(flags::ECN_CE)), (0, THRESHOLD, false));
        assert!(k.summary().is_empty());
        let p = k.at(US + 1).take(&mut q).unwrap();
        assert_eq!((p.seq, p.rank), (1, THRESHOLD + 1));
        assert!(p.has(flags::ECN_CE));
        assert_eq!(k.summary(), [(Marked, 1)]);
    }

    /// `used_slack = "lstf"`, hosts' slack 1 s: `rank` is the current
    /// slack. 0 arrives with 1 s − 17 µs (17 µs used upstream) and waits
    /// 1 µs: 18 µs used, unmarked. 1 arrives at the same time with 1 s − 17
    /// µs − 1 ps and leaves 1 µs later (its key is smaller: it goes first):
    /// 18 µs + 1 ps, marked.
    #[test]
    fn lstf_slack_reads_initial_minus_current() {
        let mut q = queue("used_slack = \"lstf\"\ninitial_slack_us = 1000000");
        let mut k = Kit::new(0);
        let s = 1_000_000 * US;
        k.fill(&mut q, [ect(0, s - 17 * US), ect(1, s - 17 * US - 1)]);
        let p = k.at(US).take(&mut q).unwrap();
        assert_eq!((p.seq, p.has(flags::ECN_CE)), (1, true));
        assert_eq!(p.rank, s - THRESHOLD - 1);
        let p = k.at(US).take(&mut q).unwrap();
        assert_eq!((p.seq, p.has(flags::ECN_CE)), (0, false));
        assert_eq!(p.rank, s - THRESHOLD);
    }

    /// Far over the threshold, a data packet without ECT and an ACK with
    /// ECT are both sent, unmarked and undropped: Edge-ECN only marks.
    #[test]
    fn never_marks_or_drops_non_ect_data_or_control_packets() {
        let (mut k, mut q) = (Kit::new(0), queue(""));
        let mut plain = data(0, 1500);
        plain.rank = 100 * US;
        let mut ack = control(PacketKind::Ack, 1);
        ack.flags |= flags::ECT;
        ack.rank = 100 * US;
        k.fill(&mut q, [plain, ack]);
        let out = k.at(US).drain(&mut q);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| !p.has(flags::ECN_CE)));
        assert!(k.summary().is_empty());
    }

    /// K and the packet size set the threshold: K = 1 at 1000 B is 0.8 µs.
    /// With no wait here, 1 (0.8 µs + 1 ps of queueing, so FIFO+ serves it
    /// first) is marked and 0 (exactly 0.8 µs) is not.
    #[test]
    fn k_and_mtu_set_the_threshold() {
        let (mut k, mut q) = (Kit::new(0), queue("k_packets = 1\nmtu_bytes = 1000"));
        k.fill(&mut q, [ect(0, 800_000), ect(1, 800_001)]);
        let out = k.drain(&mut q);
        let marks: Vec<(u64, bool)> = out.iter().map(|p| (p.seq, p.has(flags::ECN_CE))).collect();
        assert_eq!(marks, [(1, true), (0, false)]);
    }

    #[test]
    fn bad_input_names_the_key() {
        let e = |t: &str| {
            let c: EdgeEcnConfig = toml::from_str(t).unwrap();
            c.validate("switch.queue").unwrap_err().to_string()
        };
        assert!(e("k_packets = 0").contains("switch.queue.k_packets"));
        assert!(e("mtu_bytes = 0").contains("switch.queue.mtu_bytes"));
        assert!(e("initial_slack_us = 5").contains("switch.queue.initial_slack_us"));
        assert!(e("used_slack = \"lstf\"\ninitial_slack_us = 0")
            .contains("switch.queue.initial_slack_us"));
        assert!(e("queue_packets = 0").contains("switch.queue.queue_packets"));
        assert!(e("used_slack = \"measured\"").contains("switch.queue.used_slack"));
        assert!(toml::from_str::<EdgeEcnConfig>("used_slack = \"fq\"").is_err());
        assert!(toml::from_str::<EdgeEcnConfig>("k = 3").is_err());
    }
}
