//! Links: a packet leaves a port after its serialisation time and reaches the
//! far end one propagation delay later, whole (store and forward). Packets on
//! a wire wait in the receiving input port's FIFO; only the FIFO's head has an
//! arrival event, so a busy link costs one pending event, not one per packet.

use crate::packet::Packet;
use std::collections::VecDeque;

/// A packet on a wire, waiting to arrive.
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug, Default)]
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
