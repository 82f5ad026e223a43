//! DCQCN's congestion point: RED-style ECN marking on the *instantaneous*
//! queue in bytes ([DCQCN]; `HPCC` `switch-mmu.cc` ShouldSendCN, `R3`
//! `broadcom-node.cc`).
//!
//! With q the bytes queued: no mark while q ≤ Kmin, always above Kmax,
//! and in between with probability Pmax·(q − Kmin)/(Kmax − Kmin), a fresh
//! uniform draw per packet. Only ECN-capable (`ECT`) packets are marked;
//! others pass unmarked (RoCE's ACKs, CNPs and NACKs). At enqueue, q is the
//! queue the arrival finds; at dequeue (`HPCC`, `R3`, `CW` mark there), q is
//! what the departing packet leaves behind. A FIFO with a tail-drop limit
//! otherwise. A Kmax above a byte capacity is an error: fixed thresholds
//! (`scale_with_rate = false`) in `validate`, scaled ones at each port's
//! rate once the topology is known (`config/switch.rs`, `check_scaled_ramps`).
//!
//! Thresholds are in KB of 1000 B (`HPCC`, DQ2; `R3` counts 1030-B cells).
//! With `scale_with_rate` they are per `reference_gbps` of the port's link
//! rate: 100/400 KB at 25 Gb/s give 160/640 KB at 40 Gb/s, 400/1600 KB at
//! 100 Gb/s (`HPCC` run.py, whose author calls these "from Alibaba's
//! production", `HPCC` issue 21). `CW` keeps 100/400 KB at every speed:
//! `scale_with_rate = false`. The paper's values (Kmin 5 KB, Kmax 200 KB,
//! Pmax 1% at 40 Gb/s, second-hand) are `kmin_kb = 5, kmax_kb = 200,
//! pmax = 0.01, scale_with_rate = false`.
//!
//! | key (`kind = "ecn_ramp"`) | default | source |
//! |---|---|---|
//! | `kmin_kb` | 100 | `HPCC` run.py / config.txt (at 25 Gb/s) |
//! | `kmax_kb` | 400 | `HPCC` run.py / config.txt (at 25 Gb/s) |
//! | `pmax` | 0.2 | `HPCC` run.py; `HPCC` issue 21 |
//! | `scale_with_rate` | true | `HPCC` (thresholds ∝ link speed); `CW`: false |
//! | `reference_gbps` | 25 | the rate the thresholds are given for (`HPCC`) |
//! | `mark_at` | `"enqueue"` | `"dequeue"` as in `HPCC`, `R3`, `CW` |
//! | `queue_bytes`, or `queue_packets` | 32 000 000 bytes | `HPCC` `BUFFER_SIZE` 32 MB (a switch's shared buffer, here per port; the shared-buffer MMU is PFC's) |

use super::{
    capacity, Capacity, Discipline, DisciplineConfig, DropTail, MarkAt, QueueCtx, QueueEnv,
};
use crate::config::{bad, ConfigError};
use crate::net::PacketPool;
use crate::packet::{flags, Packet};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// Default capacity, bytes (`HPCC` `BUFFER_SIZE`).
pub const DEFAULT_QUEUE_BYTES: u64 = 32_000_000;

/// `kind = "ecn_ramp"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EcnRampConfig {
    /// Capacity in packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes (default [`DEFAULT_QUEUE_BYTES`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Kmin, KB (1000 B).
    pub kmin_kb: f64,
    /// Kmax, KB.
    pub kmax_kb: f64,
    /// Marking probability at Kmax.
    pub pmax: f64,
    /// Scale Kmin and Kmax with the port's rate.
    pub scale_with_rate: bool,
    /// The rate Kmin and Kmax are given for, Gb/s.
    pub reference_gbps: f64,
    /// Mark at enqueue or at dequeue.
    pub mark_at: MarkAt,
}

impl Default for EcnRampConfig {
    fn default() -> Self {
        EcnRampConfig {
            queue_packets: None,
            queue_bytes: None,
            kmin_kb: 100.0,
            kmax_kb: 400.0,
            pmax: 0.2,
            scale_with_rate: true,
            reference_gbps: 25.0,
            mark_at: MarkAt::Enqueue,
        }
    }
}

impl EcnRampConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Bytes(DEFAULT_QUEUE_BYTES);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
    /// With `scale_with_rate`, Kmax at a port of `rate_bps` and the buffer
    /// it must fit (bytes; `buffer` replaces the table's capacity where a
    /// graph file sizes the port), when it does not fit; `validate` checks
    /// only fixed thresholds, as the scaled ones depend on each port's rate.
    pub(crate) fn scaled_kmax_overflow(
        &self,
        rate_bps: u64,
        buffer: Option<Capacity>,
    ) -> Option<(f64, u64)> {
        if !self.scale_with_rate {
            return None;
        }
        let Capacity::Bytes(b) = buffer.or_else(|| self.cap("").ok())? else {
            return None;
        };
        let kmax = self.kmax_kb * 1000.0 * rate_bps as f64 / (self.reference_gbps * 1e9);
        (kmax > b as f64).then_some((kmax, b))
    }
    /// The marking decision these keys describe. Call only after `validate`.
    pub(super) fn ramp(&self) -> Ramp {
        Ramp {
            kmin: self.kmin_kb * 1000.0,
            kmax: self.kmax_kb * 1000.0,
            pmax: self.pmax,
            reference_bps: self.scale_with_rate.then_some(self.reference_gbps * 1e9),
            mark_at: self.mark_at,
        }
    }
}

/// The ramp alone: whether a packet is marked, given the bytes queued. A
/// discipline that marks on its own backlog (`voq`) uses it too.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ramp {
    /// Thresholds at the reference rate, bytes.
    kmin: f64,
    kmax: f64,
    pmax: f64,
    /// `Some(rate)`: thresholds scale with the link rate over this one.
    reference_bps: Option<f64>,
    /// Where the decision is taken.
    pub mark_at: MarkAt,
}

impl Ramp {
    /// Whether a packet seeing `q` queued bytes is marked (draws only on the ramp).
    pub fn mark(&self, q: u64, cx: &mut QueueCtx<'_>) -> bool {
        let s = self.reference_bps.map_or(1.0, |r| cx.rate_bps as f64 / r);
        let (kmin, kmax, q) = (self.kmin * s, self.kmax * s, q as f64);
        if q > kmax {
            true
        } else if q > kmin {
            cx.rng.random::<f64>() < self.pmax * (q - kmin) / (kmax - kmin)
        } else {
            false
        }
    }
}

impl DisciplineConfig for EcnRampConfig {
    type Queue = EcnRampQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = self.cap("") {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn marks_ecn(&self) -> bool {
        true
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |n: &str| format!("{key}.{n}");
        let cap = self.cap(key)?;
        if self.kmin_kb.is_nan() || self.kmin_kb < 0.0 {
            return Err(bad(&k("kmin_kb"), self.kmin_kb, "must be at least 0"));
        }
        if self.kmax_kb.is_nan() || self.kmax_kb <= self.kmin_kb {
            return Err(bad(&k("kmax_kb"), self.kmax_kb, "must exceed kmin_kb"));
        }
        // Scaled thresholds depend on each port's rate: checked only when fixed.
        if let (Capacity::Bytes(b), false) = (cap, self.scale_with_rate) {
            if self.kmax_kb * 1000.0 > b as f64 {
                let msg = format!("must not exceed the buffer ({b} bytes)");
                return Err(bad(&k("kmax_kb"), self.kmax_kb, &msg));
            }
        }
        if !(self.pmax > 0.0 && self.pmax <= 1.0) {
            return Err(bad(&k("pmax"), self.pmax, "must be in (0, 1]"));
        }
        if self.reference_gbps.is_nan() || self.reference_gbps <= 0.0 {
            let value = self.reference_gbps;
            return Err(ConfigError::NonPositiveRate {
                key: k("reference_gbps"),
                value,
            });
        }
        Ok(())
    }
    fn build(&self, _env: &QueueEnv) -> EcnRampQueue {
        EcnRampQueue {
            ramp: self.ramp(),
            fifo: DropTail::new(self.cap("").expect("validated")),
            marked: 0,
        }
    }
    /// A FIFO that marks (at enqueue or dequeue) and drops only at enqueue:
    /// DCQCN's switches run it under PFC.
    fn keeps_priority_order(&self) -> bool {
        true
    }
}

/// A FIFO that ECN-marks ECT packets on a Kmin/Kmax/Pmax ramp.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct EcnRampQueue {
    ramp: Ramp,
    fifo: DropTail,
    /// Packets marked CE here.
    pub marked: u64,
}

impl Discipline for EcnRampQueue {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if !self.fifo.has_room(pkt.size) {
            cx.dropped(pkt);
            return;
        }
        let mark = self.ramp.mark_at == MarkAt::Enqueue
            && pkt.has(flags::ECT)
            && self.ramp.mark(self.fifo.len_bytes(), cx);
        cx.queued(&pkt);
        if mark {
            pkt.flags |= flags::ECN_CE;
            self.marked += 1;
            cx.marked(&pkt);
        }
        let admitted = self.fifo.push(pkt, cx.pool);
        debug_assert!(admitted.is_ok(), "room was checked");
    }

    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let mut pkt = self.fifo.dequeue(cx)?;
        if self.ramp.mark_at == MarkAt::Dequeue
            && pkt.has(flags::ECT)
            && self.ramp.mark(self.fifo.len_bytes(), cx)
        {
            pkt.flags |= flags::ECN_CE;
            self.marked += 1;
            cx.marked(&pkt);
        }
        Some(pkt)
    }
    #[inline]
    fn prefetch_next(&self, pool: &PacketPool) {
        self.fifo.prefetch_next(pool);
    }
    #[inline]
    fn prefetch_tail(&self, pool: &PacketPool) {
        self.fifo.prefetch_tail(pool);
    }
    fn len_packets(&self) -> u32 {
        self.fifo.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::Outcome::*;

    fn ect(seq: u64) -> Packet {
        let mut p = data(seq, 1000);
        p.flags |= flags::ECT;
        p
    }

    fn ramp(f: impl FnOnce(&mut EcnRampConfig)) -> EcnRampQueue {
        // The kit's links run at 10 Gb/s: give thresholds for 10 Gb/s.
        let mut c = EcnRampConfig {
            kmin_kb: 2.0,
            kmax_kb: 5.0,
            pmax: 0.5,
            reference_gbps: 10.0,
            ..Default::default()
        };
        f(&mut c);
        c.validate("switch.queue").unwrap();
        c.build(&crate::queue::testkit::ROCE_ENV)
    }

    #[test]
    fn no_mark_up_to_kmin_always_above_kmax_and_only_ect() {
        let (mut k, mut q) = (Kit::new(1), ramp(|_| {}));
        // Arrivals finding 0, 1000, 2000 bytes: at or below Kmin.
        for s in 0..3 {
            assert_eq!(k.offer(&mut q, ect(s)), [(Queued, s)]);
        }
        // Fill to 6000 B without marks (not ECT), then every ECT arrival is marked.
        for s in 3..6 {
            assert_eq!(k.offer(&mut q, data(s, 1000)), [(Queued, s)]);
        }
        assert_eq!(k.offer(&mut q, ect(6)), [(Queued, 6), (Marked, 6)]);
        assert_eq!(k.offer(&mut q, data(7, 1000)), [(Queued, 7)]);
        let out = k.drain(&mut q);
        assert!(out[6].has(flags::ECN_CE) && !out[5].has(flags::ECN_CE));
    }

    #[test]
    fn the_ramp_marks_about_pmax_times_the_fraction() {
        let (mut k, mut q) = (Kit::new(7), ramp(|c| c.pmax = 1.0));
        // Hold the queue at 3500 B: halfway up the ramp, p = 0.5.
        let mut marks = 0;
        for s in 0..4000u64 {
            let mut p = data(s, 1000);
            p.flags |= flags::ECT;
            let mut p0 = p.clone();
            p0.size = 3500;
            k.fill(
                &mut q,
                [{
                    let mut f = p0;
                    f.flags = 0;
                    f
                }],
            );
            let r = k.offer(&mut q, p);
            marks += r.iter().filter(|(o, _)| *o == Marked).count();
            k.drain(&mut q);
        }
        assert!((1800..2200).contains(&marks), "{marks}");
    }

    #[test]
    fn thresholds_scale_with_the_link_rate() {
        // Given for 40 Gb/s: on the kit's 10 Gb/s link, a quarter: 500 B / 1250 B.
        let (mut k, mut q) = (Kit::new(1), ramp(|c| c.reference_gbps = 40.0));
        k.fill(&mut q, [data(0, 1000), data(1, 1000)]);
        assert_eq!(k.offer(&mut q, ect(2)), [(Queued, 2), (Marked, 2)]);
        let (mut k, mut q) = (
            Kit::new(1),
            ramp(|c| {
                c.reference_gbps = 40.0;
                c.scale_with_rate = false;
            }),
        );
        k.fill(&mut q, [data(0, 1000), data(1, 1000)]);
        assert_eq!(k.offer(&mut q, ect(2)), [(Queued, 2)]);
    }

    #[test]
    fn dequeue_marking_looks_at_what_the_packet_leaves_behind() {
        let (mut k, mut q) = (Kit::new(1), ramp(|c| c.mark_at = MarkAt::Dequeue));
        for s in 0..8 {
            assert_eq!(k.offer(&mut q, ect(s)), [(Queued, s)]);
        }
        // The first two leave 7000 and 6000 B behind: marked; the last leaves 0.
        let p = k.take(&mut q).unwrap();
        assert!(p.has(flags::ECN_CE));
        assert_eq!(k.summary(), [(Marked, 0)]);
        let rest = k.drain(&mut q);
        assert!(!rest.last().unwrap().has(flags::ECN_CE));
        assert_eq!(
            q.marked as usize,
            1 + rest.iter().filter(|p| p.has(flags::ECN_CE)).count()
        );
    }

    #[test]
    fn impossible_settings_name_their_key() {
        let c = EcnRampConfig {
            queue_bytes: Some(100_000),
            scale_with_rate: false,
            ..Default::default()
        };
        let e = c.validate("switch.queue").unwrap_err().to_string();
        assert!(
            e.contains("switch.queue.kmax_kb") && e.contains("buffer"),
            "{e}"
        );
        let c = EcnRampConfig {
            kmin_kb: 500.0,
            ..Default::default()
        };
        assert!(c
            .validate("switch.queue")
            .unwrap_err()
            .to_string()
            .contains("kmax_kb"));
        let c = EcnRampConfig {
            pmax: 0.0,
            ..Default::default()
        };
        assert!(c
            .validate("switch.queue")
            .unwrap_err()
            .to_string()
            .contains("switch.queue.pmax"));
    }
}
