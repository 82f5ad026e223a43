//! Edge-CoDel ([TH] §5.3.1): FQ-CoDel's drop logic moved to the egress
//! edge and run on the network-wide *used slack* (the queueing a packet met
//! on every hop) instead of one queue's sojourn time. The thesis changes
//! exactly two things in FQ-CoDel, and so does this queue, which *is*
//! `fq_codel` (`fq_codel.rs`: DRR with new/old lists, RFC 8289's control
//! law in `codel.rs`, the same parameters) with:
//!
//! 1. **Sojourn = used slack.** A packet enters its bucket stamped with its
//!    arrival time less the used slack it brings, so CoDel's `now − stamp`
//!    at dequeue is the upstream queueing plus the wait here: the
//!    packet's whole queueing in the network. The upstream part is
//!    (`used_slack`):
//!    - `"fifo_plus"` or `"lstf"`: read from `rank` as `edge_ecn` reads it
//!      (`edge_ecn.rs`): switches run `fifo_plus` (`rank` is the queueing
//!      so far) or `lstf` with one slack for all packets (used = initial −
//!      current). While queued here the packet's `rank` holds the stamp;
//!      at dequeue it gets back the used slack in its own form, now
//!      including the wait here, as `fifo_plus` and `lstf` update it.
//!    - `"measured"`: whatever the switches run, arrival − `sent_ps` −
//!      t_min to this switch (`QueueCtx::t_min_here_ps`: store and forward
//!      on each link so far, no queueing). LSTF takes every wait off the
//!      slack, so this equals initial − current slack, the thesis's two
//!      header fields, without the second field the 64-byte packet lacks;
//!      with FQ switches it is what the thesis's bookkeeping slack holds.
//!      So it serves the thesis's runs: LSTF with per-flow fairness slacks,
//!      and FQ. `rank` is left alone. It counts the host NIC's queue, since
//!      the transport stamps `sent_ps` as it hands the packet over.
//!
//!    Control packets, which no host stamps, count only their wait here
//!    and keep their `rank`.
//! 2. **Refresh.** An edge cannot see that a flow's packets have all left
//!    the network, FQ-CoDel's other refresh event. Instead, when the send
//!    times (`sent_ps`, TCP's timestamps in the thesis) of two consecutive
//!    data packets of a bucket arriving here differ by more than
//!    `refresh_us`, the bucket's CoDel is re-initialised (not dropping,
//!    count 0, interval back to `interval_us`) before the later packet
//!    joins. The thesis's other refresh, a sojourn below target, is
//!    CoDel's own rule and stays. For the same reason this queue running
//!    low says nothing of the flow's backlog, which is upstream: CoDel's
//!    MTU guard (no drop with at most one MTU left) is off, and an empty
//!    bucket keeps its state (`CodelParams::edge`). With them a bucket that
//!    holds one packet at a time, as at an egress that is not the
//!    bottleneck, would reset at every packet and never drop.
//!
//! **Where.** The thesis drops at the egress edge only: give
//! `[switch.to_host.queue]` (the switch ports that feed a host,
//! `config/switch.rs`) `kind = "edge_codel"` and the switches their own
//! discipline. (The whole ToR tier would also hold the ToR's uplinks, which
//! would then run FQ-CoDel on the queueing so far.)
//!
//! | parameter (`kind = "edge_codel"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 10240 packets | as `fq_codel` (Linux limit); the thesis's Edge-CoDel runs use 50 MB buffers ([TH] §5.3.1) |
//! | `memory_limit_bytes` | 32 MiB | as `fq_codel` (Linux `memory_limit`) |
//! | `buckets` | 1024 | as `fq_codel` ([FQCODEL] §5.2) |
//! | `quantum_bytes` | the traffic's full packet (docs/disciplines.md) | as `fq_codel` ([FQCODEL] §5.2) |
//! | `target_us` | 5000 µs | [TH] §5.3.1 "keeping ... the target value ... the same as in FQ-CoDel"; [CODEL] §4.3 |
//! | `interval_us` | 100000 µs | [TH] §5.3.1 (the initial interval as in FQ-CoDel); [CODEL] §4.2 |
//! | `ecn` | `false` | [TH] §5.3.1 drops packets (Edge-CoDel "when to drop") |
//! | `drop_batch` | 64 | as `fq_codel` (Linux `drop_batch_size`) |
//! | `refresh_us` | 20000 µs ([`DEFAULT_REFRESH_US`]), must exceed `target_us` | [TH] §5.3.1: 20 ms (4 × target) in the runs; 2–4 × target works |
//! | `used_slack` | `"fifo_plus"` | `"fifo_plus"`, `"lstf"` as `edge_ecn`; `"measured"` above ([TH] §5.3: used slack = queueing in the network) |
//! | `initial_slack_us` (`used_slack = "lstf"` only) | 1,000,000 (1 s) | as `edge_ecn` |

use super::codel::{DEFAULT_INTERVAL_PS, DEFAULT_TARGET_PS};
use super::edge_ecn::{reader, validate_used_slack, UsedSlack, UsedSlackReader};
use super::fq_codel::{FqCodelConfig, FqCodelQueue, DEFAULT_DROP_BATCH, DEFAULT_MEMORY_LIMIT};
use super::{Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::{Packet, PacketKind};
use crate::transport::config::Micros;
use crate::units::PS_PER_US;
use serde::{Deserialize, Serialize};

/// Refresh threshold, µs: 20 ms, 4 × CoDel's target ([TH] §5.3.1).
pub const DEFAULT_REFRESH_US: u64 = 20_000;
/// No data packet seen yet in a bucket.
const NEVER: u64 = u64::MAX;

/// `kind = "edge_codel"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EdgeCodelConfig {
    /// Packet limit (default 10240).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Byte limit, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Memory limit, bytes.
    pub memory_limit_bytes: u64,
    /// Flow buckets (default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
    /// DRR quantum, bytes (default: the traffic's full packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum_bytes: Option<u64>,
    /// CoDel target (on the used slack), µs.
    pub target_us: Micros,
    /// CoDel interval, µs.
    pub interval_us: Micros,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Most packets dropped per overflow.
    pub drop_batch: u32,
    /// Send-time gap that re-initialises a bucket's CoDel, µs.
    pub refresh_us: Micros,
    /// Where the used slack comes from.
    pub used_slack: UsedSlack,
    /// The hosts' slack (`used_slack = "lstf"`; default 1 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_slack_us: Option<Micros>,
}

impl Default for EdgeCodelConfig {
    fn default() -> Self {
        EdgeCodelConfig {
            queue_packets: None,
            queue_bytes: None,
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT,
            buckets: None,
            quantum_bytes: None,
            target_us: Micros::from_ps(DEFAULT_TARGET_PS),
            interval_us: Micros::from_ps(DEFAULT_INTERVAL_PS),
            ecn: false,
            drop_batch: DEFAULT_DROP_BATCH,
            refresh_us: Micros::from_ps(DEFAULT_REFRESH_US * PS_PER_US),
            used_slack: UsedSlack::FifoPlus,
            initial_slack_us: None,
        }
    }
}

impl EdgeCodelConfig {
    /// The FQ-CoDel this queue runs.
    fn fq_codel(&self) -> FqCodelConfig {
        FqCodelConfig {
            queue_packets: self.queue_packets,
            queue_bytes: self.queue_bytes,
            memory_limit_bytes: self.memory_limit_bytes,
            buckets: self.buckets,
            quantum_bytes: self.quantum_bytes,
            target_us: self.target_us,
            interval_us: self.interval_us,
            mtu_bytes: None,
            ecn: self.ecn,
            drop_batch: self.drop_batch,
        }
    }
}

impl DisciplineConfig for EdgeCodelConfig {
    type Queue = EdgeCodelQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let f = self.fq_codel().resolved(env);
        let mut c = self.clone();
        (c.queue_packets, c.queue_bytes) = (f.queue_packets, f.queue_bytes);
        (c.buckets, c.quantum_bytes) = (f.buckets, f.quantum_bytes);
        if c.used_slack == UsedSlack::Lstf {
            let r = reader(c.used_slack, c.initial_slack_us);
            c.initial_slack_us = Some(Micros::from_ps(r.initial_ps as u64));
        }
        c
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.fq_codel().validate(key)?;
        let k = format!("{key}.refresh_us");
        let r = self.refresh_us.positive(&k)?;
        if r <= self.target_us.ps {
            let msg = format!(
                "must exceed target_us ({} µs)",
                self.target_us.ps as f64 / PS_PER_US as f64
            );
            return Err(bad(&k, r as f64 / PS_PER_US as f64, &msg));
        }
        validate_used_slack(key, self.used_slack, self.initial_slack_us)
    }
    fn build(&self, env: &QueueEnv) -> EdgeCodelQueue {
        EdgeCodelQueue {
            inner: self.fq_codel().build(env).edge(),
            used: reader(self.used_slack, self.initial_slack_us),
            refresh: self.refresh_us.ps,
            last_sent: Vec::new(),
        }
    }
}

/// FQ-CoDel on the used slack, refreshed by send-time gaps.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct EdgeCodelQueue {
    inner: FqCodelQueue,
    used: UsedSlackReader,
    /// Refresh threshold, ps.
    refresh: u64,
    /// Each bucket's last data packet's send time ([`NEVER`]: none yet;
    /// empty until the first packet).
    last_sent: Vec<u64>,
}

impl Discipline for EdgeCodelQueue {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        let mut stamp = cx.now;
        let measured = self.used.mode == UsedSlack::Measured;
        if pkt.kind == PacketKind::Data {
            let b = self.inner.bucket_of(pkt.flow);
            if self.last_sent.is_empty() {
                self.last_sent = vec![NEVER; self.inner.buckets() as usize];
            }
            let last = &mut self.last_sent[b as usize];
            if *last != NEVER && pkt.sent_ps.saturating_sub(*last) > self.refresh {
                self.inner.refresh(b);
            }
            *last = pkt.sent_ps;
            if measured {
                // Unloaded, the packet would be here at sent + t_min: the
                // stamp, so that CoDel's now − stamp is its queueing so far.
                if let Some(t) = cx.t_min_here_ps(&pkt) {
                    stamp = pkt.sent_ps.saturating_add(t).min(cx.now);
                }
            } else {
                stamp = cx.now.saturating_sub(self.used.used(pkt.rank));
                pkt.rank = stamp;
            }
        }
        self.inner.enqueue_stamped(pkt, stamp, cx);
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let mut p = self.inner.dequeue(cx)?;
        if p.kind == PacketKind::Data && self.used.mode != UsedSlack::Measured {
            p.rank = self.used.rank(cx.now.saturating_sub(p.rank));
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
    use crate::queue::testkit::{flow_data, Kit, ENV};
    use crate::queue::Outcome::*;

    const US: u64 = PS_PER_US;
    const MS: u64 = 1_000 * US;

    /// Target 5 µs, interval 100 µs, refresh 20 µs, MTU guard 1 byte.
    fn queue() -> EdgeCodelQueue {
        let c: EdgeCodelConfig =
            toml::from_str("target_us = 5\ninterval_us = 100\nrefresh_us = 20").unwrap();
        c.validate("q").unwrap();
        c.build(&ENV)
    }

    /// A data packet of flow 7 sent at `sent` that met `used` upstream.
    fn pkt(seq: u64, used: u64, sent: u64) -> Packet {
        let mut p = flow_data(7, seq, 1500);
        (p.rank, p.sent_ps) = (used, sent);
        p
    }

    /// The same arrivals with 10 µs of upstream queueing and with none. At
    /// 1 ms: 0, 1 and 2 arrive, 0 leaves (sojourn 10 µs ≥ target: CoDel's
    /// clock starts, first above at 1.1 ms; with no upstream queueing the
    /// sojourn is 0 and nothing starts). At 1.1 ms: 1 has 110 µs (or 100
    /// µs): with the used slack its hour has come and it is dropped (2 is
    /// sent); without, the clock only starts now and 1 is sent.
    #[test]
    fn the_used_slack_is_the_sojourn() {
        let run = |used: u64| {
            let (mut k, mut q) = (Kit::new(0), queue());
            k.at(MS).fill(&mut q, (0..3).map(|i| pkt(i, used, i)));
            assert_eq!(k.take(&mut q).unwrap().seq, 0);
            let p = k.at(MS + 100 * US).take(&mut q).unwrap();
            (p.seq, k.summary())
        };
        assert_eq!(run(10 * US), (2, vec![(DequeueDropped, 1)]));
        assert_eq!(run(0), (1, vec![]));
    }

    /// A flow whose packets reach the edge one at a time (its backlog is
    /// upstream): the bucket never holds more than one packet, yet every
    /// packet brings 10 µs of queueing (sent 1 ps apart: no refresh).
    /// FQ-CoDel's guards (at most one MTU
    /// left, an empty queue) would reset the state at each packet and never
    /// drop; Edge-CoDel keeps it ([TH] §5.3.1: only a sojourn below target
    /// refreshes here).
    /// - 1 ms: 0 leaves (above target: the clock starts, 1.1 ms).
    /// - 1.05 ms: 1 leaves (not an interval yet).
    /// - 1.1 ms: 2 is dropped (dropping, count 1, next at 1.2 ms).
    /// - 1.15 ms: 3 leaves (still dropping, not due).
    /// - 1.2 ms: 4 is dropped (count 2).
    #[test]
    fn a_backlog_upstream_drops_though_the_bucket_holds_one_packet() {
        let (mut k, mut q) = (Kit::new(0), queue());
        let (mut sent, mut dropped) = (Vec::new(), Vec::new());
        for (i, t) in [0, 50, 100, 150, 200].into_iter().enumerate() {
            k.at(MS + t * US)
                .fill(&mut q, [pkt(i as u64, 10 * US, i as u64)]);
            if let Some(p) = k.take(&mut q) {
                sent.push(p.seq);
            }
            dropped.extend(k.summary());
        }
        assert_eq!(sent, [0, 1, 3]);
        assert_eq!(dropped, [(DequeueDropped, 2), (DequeueDropped, 4)]);
    }

    /// `rank` leaves with the used slack including the wait here: 10 µs
    /// upstream + 3 µs = 13 µs (FIFO+ form); 1 s − 13 µs (LSTF form).
    #[test]
    fn rank_leaves_with_the_wait_here_added() {
        let (mut k, mut q) = (Kit::new(0), queue());
        k.at(MS).fill(&mut q, [pkt(0, 10 * US, 0)]);
        assert_eq!(k.at(MS + 3 * US).take(&mut q).unwrap().rank, 13 * US);
        let c: EdgeCodelConfig = toml::from_str("used_slack = \"lstf\"").unwrap();
        let mut q = c.build(&ENV);
        let s = 1_000_000 * US;
        k.at(MS).fill(&mut q, [pkt(0, s - 10 * US, 0)]);
        assert_eq!(k.at(MS + 3 * US).take(&mut q).unwrap().rank, s - 13 * US);
    }

    /// 0–3 arrive at 1 ms (10 µs used, sent at 0–3 ps); 0 leaves at 1 ms,
    /// and at 1.1 ms 1 is dropped and 2 sent: dropping, count 1, next drop
    /// at 1.2 ms. At 1.15 ms 4 arrives, sent `gap` after 3.
    /// - gap = 20 µs (not more than the threshold): at 1.2 ms 3 (210 µs,
    ///   4 still queued) is dropped and 4 sent (60 µs, nothing left
    ///   behind it: the dropping state ends).
    /// - gap = 20 µs + 1 ps: the bucket's CoDel was re-initialised when 4
    ///   arrived, so 3 only starts the clock again and is sent.
    #[test]
    fn a_send_time_gap_over_the_threshold_refreshes() {
        let run = |gap: u64| {
            let (mut k, mut q) = (Kit::new(0), queue());
            k.at(MS).fill(&mut q, (0..4).map(|i| pkt(i, 10 * US, i)));
            assert_eq!(k.take(&mut q).unwrap().seq, 0);
            assert_eq!(k.at(MS + 100 * US).take(&mut q).unwrap().seq, 2);
            assert_eq!(k.summary(), [(DequeueDropped, 1)]);
            k.at(MS + 150 * US).fill(&mut q, [pkt(4, 10 * US, 3 + gap)]);
            let p = k.at(MS + 200 * US).take(&mut q).unwrap();
            (p.seq, k.summary())
        };
        assert_eq!(run(20 * US), (4, vec![(DequeueDropped, 3)]));
        assert_eq!(run(20 * US + 1), (3, vec![]));
    }

    /// `used_slack = "lstf"`: used = initial − current. A current slack of
    /// 1 s − 10 µs under an initial 1 s is the first test's 10 µs.
    #[test]
    fn lstf_slack_reads_initial_minus_current() {
        let c: EdgeCodelConfig =
            toml::from_str("target_us = 5\ninterval_us = 100\nused_slack = \"lstf\"").unwrap();
        c.validate("q").unwrap();
        let (mut k, mut q) = (Kit::new(0), c.build(&ENV));
        let s = 1_000_000 * US - 10 * US;
        k.at(MS).fill(&mut q, (0..3).map(|i| pkt(i, s, i)));
        assert_eq!(k.take(&mut q).unwrap().seq, 0);
        assert_eq!(k.at(MS + 100 * US).take(&mut q).unwrap().seq, 2);
        assert_eq!(k.summary(), [(DequeueDropped, 1)]);
    }

    #[test]
    fn bad_input_names_the_key() {
        let e = |t: &str| {
            let c: EdgeCodelConfig = toml::from_str(t).unwrap();
            c.validate("switch.queue").unwrap_err().to_string()
        };
        assert!(e("refresh_us = 5000").contains("switch.queue.refresh_us"));
        assert!(e("refresh_us = 0").contains("switch.queue.refresh_us"));
        assert!(e("target_us = 200000").contains("switch.queue.target_us"));
        assert!(e("drop_batch = 0").contains("switch.queue.drop_batch"));
        assert!(e("initial_slack_us = 1").contains("switch.queue.initial_slack_us"));
        assert!(toml::from_str::<EdgeCodelConfig>("refresh = 3").is_err());
        let d = EdgeCodelConfig::default();
        assert_eq!(d.refresh_us.ps, 4 * d.target_us.ps, "[TH]: 4 × target");
    }
}
