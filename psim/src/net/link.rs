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

use super::pool::{List, PacketPool};
use crate::config::{bad, ConfigError};
use crate::packet::Packet;
use crate::rng::Rng;
use rand::RngExt;

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

/// The packets on the wires into a shard's entities: a list per wire
/// through the shard's [`PacketPool`] (`net/pool.rs`). Wires are indexed
/// by their entity's first input port plus the port number
/// (`Shared::wire`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Inbound {
    /// Per wire: its packets, first to arrive first.
    wires: Vec<List>,
    /// Packets on the wires.
    len: u64,
}

impl Inbound {
    /// `ports` empty FIFOs.
    pub fn new(ports: usize) -> Inbound {
        Inbound {
            wires: vec![List::EMPTY; ports],
            len: 0,
        }
    }

    /// Appends a packet to FIFO `idx`. Returns true when it is the head: the
    /// caller schedules its arrival (a later packet is scheduled when the one
    /// before it arrives, since a link delivers in order).
    #[inline]
    pub fn push(&mut self, pool: &mut PacketPool, idx: usize, f: InFlight) -> bool {
        self.len += 1;
        self.wires[idx].push_back(pool, f)
    }

    /// Removes FIFO `idx`'s head (it has arrived); returns it and the new
    /// head, whose arrival the caller schedules.
    #[inline]
    pub fn pop<'p>(
        &mut self,
        pool: &'p mut PacketPool,
        idx: usize,
    ) -> (InFlight, Option<&'p InFlight>) {
        let wire = &mut self.wires[idx];
        let f = wire
            .pop_front(pool)
            .expect("an arrival event has its packet");
        self.len -= 1;
        // The new head's successor arrives next after it: fetching it now
        // hides the miss its arrival would otherwise take (a hint only).
        wire.prefetch_second(pool);
        (f, wire.front(pool))
    }

    /// Asks the CPU to fetch FIFO `idx`'s head: a hint for an arrival a few
    /// events ahead, so that its first loads do not stall the event loop.
    /// No effect on any result.
    #[inline]
    pub fn prefetch_head(&self, pool: &PacketPool, idx: usize) {
        if let Some(w) = self.wires.get(idx) {
            w.prefetch_front(pool);
        }
    }

    /// Asks the CPU to fetch the packet behind FIFO `idx`'s head, whose
    /// arrival the head's arrival schedules (a hint, after
    /// [`Inbound::prefetch_head`] has brought the head in).
    #[inline]
    pub fn prefetch_second(&self, pool: &PacketPool, idx: usize) {
        if let Some(w) = self.wires.get(idx) {
            w.prefetch_second(pool);
        }
    }

    /// FIFO `idx`'s head: the next packet to arrive on that wire (None for
    /// an empty or unknown wire).
    #[inline]
    pub fn head<'p>(&self, pool: &'p PacketPool, idx: usize) -> Option<&'p InFlight> {
        self.wires.get(idx)?.front(pool)
    }

    /// Asks the CPU to fetch FIFO `idx`'s last packet and the free slot that
    /// its next packet will take (a hint for a transmission a few events
    /// ahead; no effect on any result).
    #[inline]
    pub fn prefetch_tail(&self, pool: &PacketPool, idx: usize) {
        if let Some(w) = self.wires.get(idx) {
            w.prefetch_push(pool);
        }
    }

    /// Packets on every wire into this shard.
    pub fn packets(&self) -> u64 {
        self.len
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
        let (mut ib, mut pool) = (Inbound::new(2), PacketPool::new());
        assert!(ib.push(&mut pool, 1, inflight(10, 0)));
        assert!(!ib.push(&mut pool, 1, inflight(20, 1)));
        assert!(ib.push(&mut pool, 0, inflight(15, 2)));
        assert_eq!(ib.packets(), 3);
        let (f, next) = ib.pop(&mut pool, 1);
        assert_eq!((f.seq, next.map(|n| n.arrive)), (0, Some(20)));
        let (f, next) = ib.pop(&mut pool, 1);
        assert_eq!((f.seq, next.is_none()), (1, true));
        assert_eq!(ib.packets(), 1);
    }

    /// Many wires through one pool: each keeps its order against a ring per
    /// wire, and the pool never holds more slots than the most packets that
    /// were on the wires at once.
    #[test]
    fn wires_sharing_the_pool_keep_their_order_and_reuse_slots() {
        let wires = 37;
        let (mut ib, mut pool) = (Inbound::new(wires), PacketPool::new());
        let mut model: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); wires];
        let mut rng = crate::rng::stream_rng(5, 1);
        let (mut seq, mut most) = (0u64, 0u64);
        for _ in 0..200_000 {
            let w = rng.random_range(0..wires);
            // Pushes a little more often than pops at first, then less.
            let push_bias = if seq < 60_000 { 0.55 } else { 0.45 };
            if model[w].is_empty() || rng.random::<f64>() < push_bias {
                assert_eq!(
                    ib.push(&mut pool, w, inflight(seq, seq)),
                    model[w].is_empty()
                );
                model[w].push_back(seq);
                seq += 1;
            } else {
                let (f, next) = ib.pop(&mut pool, w);
                let next = next.map(|n| n.seq);
                assert_eq!(Some(f.seq), model[w].pop_front());
                assert_eq!(next, model[w].front().copied());
            }
            let live: u64 = model.iter().map(|q| q.len() as u64).sum();
            most = most.max(live);
            assert_eq!(ib.packets(), live);
            assert_eq!(ib.head(&pool, w).map(|f| f.seq), model[w].front().copied());
        }
        assert!(most > 1000, "the test reaches a real backlog ({most})");
        assert_eq!(pool.slots() as u64, most, "slots are reused, not added");
        // A checkpoint reads back the same lists.
        let bytes = postcard::to_stdvec(&(&ib, &pool)).unwrap();
        let (back, back_pool): (Inbound, PacketPool) = postcard::from_bytes(&bytes).unwrap();
        for (w, q) in model.iter().enumerate() {
            assert_eq!(back.head(&back_pool, w).map(|f| f.seq), q.front().copied());
        }
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
