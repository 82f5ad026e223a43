//! FIFO+ ([FIFOPLUS]; [TH] §5.2.2): serve packets in
//! the order they would have arrived had no earlier hop queued them, i.e. by
//! arrival time minus the queueing delay met so far, so a packet delayed
//! upstream catches up here. Its goal is the tail of end-to-end delay.
//!
//! As UPS runs it: LSTF with the same slack S on every packet ([TH] §5.2.2,
//! "tail delay" slacks). With slack = S − delay so far, LSTF's key now +
//! slack + T orders exactly as now − delay + T. This queue keeps the delay
//! itself in `rank` (ps, unsigned: 0 at the source, which needs no edge
//! stamping), keys on now − delay + T (T = this link's transmission time),
//! and adds the time waited here at dequeue, so the next hop sees the sum.
//! Ties are first come, first served; when full, the larger key of the
//! arrival and the tail loses (the tail on a tie), as in `lstf` (the same
//! queue, see `lstf.rs`).
//!
//! Clark, Shenker and Zhang's original subtracts at each hop the *average*
//! delay of the class there, carrying only the excess. The averages shift
//! every packet that crossed the same hops by the same amount, so at one
//! hop the two orders differ only between packets with different upstream
//! paths; UPS (and this queue) carries the raw delay.
//!
//! | parameter (`kind = "fifo_plus"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`super::lstf::DEFAULT_QUEUE_PACKETS`]) | as `droptail`; the UPS tail-delay runs set 100,000,000 (`UPS` scripts, T37) |

use super::lstf::{ups_capacity, Form, LstfQueue};
use super::{DisciplineConfig, QueueEnv};
use crate::config::ConfigError;
use serde::{Deserialize, Serialize};

/// `kind = "fifo_plus"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoPlusConfig {
    /// Capacity in packets (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
}

impl DisciplineConfig for FifoPlusConfig {
    type Queue = LstfQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = ups_capacity("", self.queue_packets, self.queue_bytes) {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        ups_capacity(key, self.queue_packets, self.queue_bytes).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> LstfQueue {
        let cap = ups_capacity("", self.queue_packets, self.queue_bytes).expect("validated");
        LstfQueue::new(cap, Form::FifoPlus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::lstf::tests::{pkt, U};
    use crate::queue::testkit::Kit;
    use crate::queue::{Capacity, Discipline};

    /// By hand (T = U; key = arrival − delay + T):
    /// - t=0: 0 (no delay yet: key U) arrives;
    /// - t=U: 1 (queued 5U upstream: key −3U) and 2 (0: key 2U) arrive;
    ///   take: 1 (it "arrived" earliest), delay 5U + 0;
    /// - t=2U: take 0, waited 2U: delay 2U; then 2, waited U: delay U.
    ///
    /// Plain FIFO would serve 0, 1, 2.
    #[test]
    fn serves_by_arrival_minus_upstream_delay_and_adds_the_wait() {
        let mut q = FifoPlusConfig::default().build(&QueueEnv {
            mtu: 1500,
            packet_bytes: 1564,
            switch_k: None,
            switch: None,
            seed: 0,
        });
        let mut k = Kit::new(0);
        k.fill(&mut q, [pkt(0, 0)]);
        k.at(U).fill(&mut q, [pkt(1, 5 * U as i64), pkt(2, 0)]);
        let out: Vec<(u64, u64)> = std::iter::from_fn(|| {
            let p = k.take(&mut q)?;
            k.at(2 * U);
            Some((p.seq, p.rank))
        })
        .collect();
        assert_eq!(out, [(1, 5 * U), (0, 2 * U), (2, U)]);
        assert_eq!(q.len_packets(), 0);
    }

    /// FIFO+ is LSTF with one slack S for all: slack = S − delay gives the
    /// same order on the same arrivals. By hand, keys (arrival − delay):
    /// 0: 0, 1: −3U, 2: U − 7U = −6U, 3: U − U = 0, 4: 2U − 2U = 0, so
    /// 2, 1, then the ties 0, 3, 4 in arrival order.
    #[test]
    fn orders_as_lstf_with_equal_slacks() {
        let s = 100 * U as i64;
        let script = [
            (0, 0u64, 0i64),
            (1, 0, 3),
            (2, U, 7),
            (3, U, 1),
            (4, 2 * U, 2),
        ];
        let run = |form: Form| {
            let mut q = LstfQueue::new(Capacity::Packets(10), form);
            let mut k = Kit::new(0);
            for (seq, at, d) in script {
                let d = d * U as i64;
                let r = if form == Form::Lstf { s - d } else { d };
                k.at(at).fill(&mut q, [pkt(seq, r)]);
            }
            k.drain_seqs(&mut q)
        };
        assert_eq!(run(Form::FifoPlus), run(Form::Lstf));
        assert_eq!(run(Form::FifoPlus), [2, 1, 0, 3, 4]);
    }
}
