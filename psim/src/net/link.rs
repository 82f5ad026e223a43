//! Links: a packet leaves a port after its serialisation time and reaches the
//! far end one propagation delay later, whole (store and forward). Packets on
//! a wire wait in the receiving input port's FIFO; only the FIFO's head has an
//! arrival event, so a busy link costs one pending event, not one per packet.
//!
//! **Random loss** (`[link] loss_rate`): every packet that leaves a port onto
//! a link is lost with this probability, drawn from the port's own random
//! stream (seeded from the scenario seed, the entity and the port), so the
//! losses do not depend on the partition. A lost packet has used the link
//! (its serialisation time passes) and never arrives; it counts in
//! `packets.dropped` and `packets.lost_on_link`. PFC frames are never lost.
//! At the default 0 no stream exists and no draw is made. A FatTree's
//! `[[topology.degraded_links]]` may give one core link its own `loss_rate`
//! (up to 1, a failed link that still receives traffic), in both directions.
//!
//! | parameter (`[link]`) | default | source |
//! |---|---|---|
//! | `loss_rate`: probability per packet per link traversal, on every link | 0.0 | [TH] §2.4.1 (random loss of 0.02–0.1% per link, thesis T4) |

use crate::config::{bad, ConfigError};
use crate::engine::prefetch::{prefetch, prefetch_after};
use crate::packet::Packet;
use crate::rng::Rng;
use rand::RngExt;
use std::collections::VecDeque;

/// `[link]`: properties every link shares.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkFile {
    /// Probability that a packet is lost on a link traversal.
    pub loss_rate: f64,
}

impl LinkFile {
    /// Whether every key has its default (for serialisation).
    pub fn is_default(&self) -> bool {
        self == &LinkFile::default()
    }
    /// Checks the values; `key` is `link`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if !(0.0..1.0).contains(&self.loss_rate) {
            return Err(bad(
                &format!("{key}.loss_rate"),
                self.loss_rate,
                "must be at least 0 and below 1",
            ));
        }
        Ok(())
    }
}

/// A port's random loss: the probability and the port's own stream.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LinkLoss {
    p: f64,
    rng: Rng,
}

impl LinkLoss {
    /// Loss with probability `p` for port `port` of entity `entity`.
    pub fn new(p: f64, seed: u64, entity: u32, port: u16) -> Self {
        let id = crate::rng::stream::LINK | (entity as u64) << 16 | port as u64;
        LinkLoss {
            p,
            rng: crate::rng::stream_rng(seed, id),
        }
    }
    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        self.rng.random::<f64>() < self.p
    }
}

/// A packet on a wire, waiting to arrive.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct InFlight {
    /// Arrival time at the far end.
    pub arrive: u64,
    /// Sending entity (part of the event key).
    pub src: u32,
    /// Sender's sequence number (part of the event key).
    pub seq: u64,
    /// The packet.
    pub pkt: Packet,
}

/// A packet crossing to another shard.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Receiving entity.
    pub dst: u32,
    /// Its input port.
    pub port: u16,
    /// The packet and its arrival key.
    pub inflight: InFlight,
}

/// The inbound FIFOs of every input port of a shard's entities, indexed by
/// the entity's first input port plus the port number.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Inbound {
    fifos: Vec<VecDeque<InFlight>>,
}

impl Inbound {
    /// `ports` empty FIFOs.
    pub fn new(ports: usize) -> Inbound {
        Inbound {
            fifos: (0..ports).map(|_| VecDeque::new()).collect(),
        }
    }

    /// Appends a packet to FIFO `idx`. Returns true when it is the head: the
    /// caller schedules its arrival (a later packet is scheduled when the one
    /// before it arrives, since a link delivers in order).
    #[inline]
    pub fn push(&mut self, idx: usize, f: InFlight) -> bool {
        let fifo = &mut self.fifos[idx];
        fifo.push_back(f);
        fifo.len() == 1
    }

    /// Removes FIFO `idx`'s head (it has arrived); returns it and the new
    /// head, whose arrival the caller schedules.
    #[inline]
    pub fn pop(&mut self, idx: usize) -> (InFlight, Option<&InFlight>) {
        let fifo = &mut self.fifos[idx];
        let f = fifo.pop_front().expect("an arrival event has its packet");
        (f, fifo.front())
    }

    /// Asks the CPU to fetch FIFO `idx`'s head into cache, and the packet
    /// behind it, whose arrival the head's arrival schedules: a hint for an
    /// arrival a few events ahead, so that its first loads do not stall the
    /// event loop. No effect on any result.
    #[inline]
    pub fn prefetch_head(&self, idx: usize) {
        if let Some(q) = self.fifos.get(idx) {
            for f in q.iter().take(2) {
                prefetch(f);
            }
        }
    }

    /// FIFO `idx`'s head: the next packet to arrive on that wire.
    #[inline]
    pub fn head(&self, idx: usize) -> Option<&InFlight> {
        self.fifos.get(idx).and_then(|q| q.front())
    }

    /// Asks the CPU to fetch FIFO `idx` and the slot its next packet will
    /// take (a hint for a transmission a few events ahead; no effect on any
    /// result).
    #[inline]
    pub fn prefetch_tail(&self, idx: usize) {
        if let Some(q) = self.fifos.get(idx) {
            prefetch_after(q);
        }
    }

    /// Packets on every wire into this shard.
    pub fn packets(&self) -> u64 {
        self.fifos.iter().map(|f| f.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{test_packet, PacketKind};

    fn inflight(arrive: u64, seq: u64) -> InFlight {
        InFlight {
            arrive,
            src: 7,
            seq,
            pkt: test_packet(PacketKind::Data, seq, 1000),
        }
    }

    #[test]
    fn only_the_head_needs_an_arrival_event_and_order_is_kept() {
        let mut ib = Inbound::new(2);
        assert!(ib.push(1, inflight(10, 0)));
        assert!(!ib.push(1, inflight(20, 1)));
        assert!(ib.push(0, inflight(15, 2)));
        assert_eq!(ib.packets(), 3);
        let (f, next) = ib.pop(1);
        assert_eq!((f.seq, next.map(|n| n.arrive)), (0, Some(20)));
        let (f, next) = ib.pop(1);
        assert_eq!((f.seq, next.is_none()), (1, true));
        assert_eq!(ib.packets(), 1);
    }
}

#[cfg(test)]
mod loss_tests {
    use super::*;

    #[test]
    fn loss_rate_is_checked_and_ports_draw_their_own_streams() {
        let e = LinkFile { loss_rate: 1.0 }.validate("link").unwrap_err();
        assert!(e.to_string().contains("link.loss_rate"), "{e}");
        assert!(LinkFile { loss_rate: 0.001 }.validate("link").is_ok());
        let draws = |entity, port| {
            let mut l = LinkLoss::new(0.5, 7, entity, port);
            (0..64).map(|_| l.lose()).collect::<Vec<_>>()
        };
        assert_eq!(draws(3, 1), draws(3, 1));
        assert_ne!(draws(3, 1), draws(3, 2));
        assert_ne!(draws(3, 1), draws(4, 1));
        // Binomial(100000, 0.01): sd 31.5; 5 sd either side.
        let mut l = LinkLoss::new(0.01, 1, 0, 0);
        let n = (0..100_000).filter(|_| l.lose()).count();
        assert!((843..=1157).contains(&n), "{n}");
    }
}

#[cfg(test)]
mod loss_run_tests {
    use crate::config::Scenario;
    use crate::engine::{SimOptions, Simulation};

    /// Losses on a small FatTree: TCP still completes, every loss is counted
    /// as a drop, and the same packets are lost whatever the partition.
    #[test]
    fn link_loss_is_counted_and_independent_of_the_partition() {
        let run = |loss: f64, shards| {
            let text = format!(
                "seed = 5\n[topology]\nkind = \"fattree\"\nk = 4\n[link]\nloss_rate = {loss}\n\
                 [protocol.tcp]\nmin_rto_us = 1000\n\
                 [[traffic]]\nprotocol = \"tcp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 900000\n"
            );
            let scn = Scenario::from_str(&text, std::path::Path::new("t.toml"), &[]).unwrap();
            let opts = SimOptions { shards, threads: 1 };
            Simulation::new(&scn, opts)
                .unwrap()
                .run(&mut |_| {})
                .unwrap()
        };
        let clean = run(0.0, 1);
        assert_eq!(clean.packets.lost_on_link, 0);
        let a = run(0.01, 1);
        let b = run(0.01, 4);
        assert!(a.packets.lost_on_link > 10, "{:?}", a.packets);
        assert!(a.packets.dropped >= a.packets.lost_on_link);
        assert!(a.conserved());
        assert_eq!(a.packets, b.packets);
        assert_eq!(a.sim_end_ps, b.sim_end_ps);
        assert!(a.sim_end_ps > clean.sim_end_ps);
        let bad = "[topology]\nkind = \"fattree\"\nk = 4\n[link]\nloss_rate = -1\n";
        let e = Scenario::from_str(bad, std::path::Path::new("t.toml"), &[]).unwrap_err();
        assert!(e.to_string().contains("link.loss_rate"), "{e}");
    }
}
