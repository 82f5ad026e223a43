//! Cut Payload (CP, Cheng et al. [9] in [P]): one FIFO that, above a
//! threshold, cuts the payload off arriving data packets and queues the
//! header in the same FIFO ([P] §2.3, §3.1; spec `ndp.md` §1.3).
//!
//! Enqueue:
//! * a data packet is queued whole if the FIFO is below the `threshold`
//!   (with a packet threshold: fewer than `threshold` packets queued, headers
//!   included) and the whole packet fits the total `capacity`;
//! * otherwise its payload is cut (`kind = Header`, `payload = 0`,
//!   `size = HEADER_BYTES`, other fields kept) and the header is queued at the
//!   tail of the same FIFO, if it fits the `capacity`: reported `Trimmed`;
//! * a payload-less packet (header, ACK, NACK, PULL) is queued if it fits the
//!   `capacity`;
//! * a packet that does not fit even as a header is dropped unchanged:
//!   reported `Dropped` (no trim is counted). CP has no return-to-sender.
//!
//! Dequeue: FIFO. Headers get no priority, which is why CP collapses when
//! only headers get through ([P] §2.3, Fig. 2).
//!
//! | parameter (`[switch.queue] kind = "cp"`) | default | source |
//! |---|---|---|
//! | `threshold`: `queue_packets` (or `queue_bytes`) | 8 packets ([`DEFAULT_THRESHOLD_PACKETS`]), NDP's data-queue length, so that CP and NDP compare at equal data buffering | [P] §3.1 compares CP to NDP with the same small buffers; §3.1.1 |
//! | `capacity_bytes` | the NDP port's memory: data budget + header budget = 2 × threshold × MTU bytes ([`CpQueue::default_capacity`]; 144 000 B for 8 × 9000 B, i.e. the 8 packets plus about 1125 headers) | [P] §3.2.4; A3 |
//! | header size | [`HEADER_BYTES`] = 64 B | [P] §3.2.4 |

use super::ndp::trim;
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::{bad, ConfigError};
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Default trimming threshold in packets (NDP's data queue, [P] §3.1.1).
pub const DEFAULT_THRESHOLD_PACKETS: u32 = 8;

/// `kind = "cp"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpConfig {
    /// Trimming threshold in packets (default [`DEFAULT_THRESHOLD_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Trimming threshold in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Total capacity in bytes (default [`CpQueue::default_capacity`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
}

impl CpConfig {
    fn threshold(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(DEFAULT_THRESHOLD_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for CpConfig {
    type Queue = CpQueue;
    fn resolved(&self, env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(threshold) = self.threshold("") {
            super::write_capacity(threshold, &mut c.queue_packets, &mut c.queue_bytes);
            if let Capacity::Bytes(b) = CpQueue::default_capacity(threshold, env.mtu) {
                c.capacity_bytes.get_or_insert(b);
            }
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.threshold(key)?;
        if self.capacity_bytes == Some(0) {
            return Err(bad(&format!("{key}.capacity_bytes"), 0, "must be positive"));
        }
        Ok(())
    }
    fn build(&self, env: &QueueEnv) -> CpQueue {
        let threshold = self.threshold("").expect("validated");
        let capacity = match self.capacity_bytes {
            Some(b) => Capacity::Bytes(b),
            None => CpQueue::default_capacity(threshold, env.mtu),
        };
        CpQueue::new(threshold, capacity)
    }
}

/// A cut-payload FIFO. See the module documentation.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CpQueue {
    threshold: Capacity,
    cap: Capacity,
    q: VecDeque<Packet>,
    bytes: u64,
    trims: u64,
    drops: u64,
}

impl CpQueue {
    /// A queue that trims data packets once `threshold` is reached and drops
    /// anything beyond `capacity`.
    pub fn new(threshold: Capacity, capacity: Capacity) -> Self {
        CpQueue {
            threshold,
            cap: capacity,
            q: VecDeque::new(),
            bytes: 0,
            trims: 0,
            drops: 0,
        }
    }

    /// The NDP port's memory for a data budget of `threshold`: twice its bytes
    /// (data queue + an equal header queue, [P] §3.2.4). A packet threshold
    /// counts `mtu` bytes per packet (pass 9000 for the paper's 1125 headers).
    pub fn default_capacity(threshold: Capacity, mtu: u32) -> Capacity {
        Capacity::Bytes(2 * super::ndp::NdpQueue::header_bytes_for(threshold, mtu))
    }

    #[inline]
    fn fits(&self, cap: Capacity, size: u32) -> bool {
        cap.fits(self.q.len() as u32, self.bytes, size)
    }

    #[inline]
    fn push(&mut self, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(p);
    }

    /// Payloads cut off so far.    /// Payloads cut off so far.
    pub fn trims(&self) -> u64 {
        self.trims
    }
    /// Packets dropped so far.
    pub fn drops(&self) -> u64 {
        self.drops
    }
}

impl Discipline for CpQueue {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx<'_>) {
        if pkt.kind == PacketKind::Data {
            if self.fits(self.threshold, pkt.size) && self.fits(self.cap, pkt.size) {
                cx.queued(&pkt);
                self.push(pkt);
                return;
            }
            if !self.fits(self.cap, HEADER_BYTES) {
                self.drops += 1;
                cx.dropped(pkt);
                return;
            }
            cx.trimmed(&pkt);
            trim(&mut pkt);
            self.trims += 1;
            self.push(pkt);
            return;
        }
        if self.fits(self.cap, pkt.size) {
            cx.queued(&pkt);
            self.push(pkt);
        } else {
            self.drops += 1;
            cx.dropped(pkt);
        }
    }

    /// FIFO.
    #[inline]
    fn dequeue(&mut self, _cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    fn len_packets(&self) -> u32 {
        self.q.len() as u32
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::flags;
    use crate::queue::testkit::Kit;
    use crate::queue::Outcome::*;
    use crate::queue::Queue;
    use PacketKind::{Ack, Data, Nack, Pull};

    fn pkt(seq: u64, kind: PacketKind) -> Packet {
        let size = if kind == Data { 9064 } else { HEADER_BYTES };
        Packet {
            flow: 2,
            path: 4,
            flags: flags::LAST,
            ..crate::packet::test_packet(kind, seq, size)
        }
    }

    #[test]
    fn default_capacity_is_the_ndp_port_memory() {
        assert_eq!(
            CpQueue::default_capacity(Capacity::Packets(8), 9000),
            Capacity::Bytes(144_000)
        );
    }

    #[test]
    fn fifo_below_threshold_trims_in_order_above_and_drops_at_capacity() {
        let mut k = Kit::new(0);
        let mut q = Queue::Cp(CpQueue::new(Capacity::Packets(8), Capacity::Packets(12)));
        k.fill(&mut q, (0..8).map(|s| pkt(s, Data)));
        // At the threshold: trimmed into the same FIFO, interleaved with an ACK.
        assert_eq!(k.offer(&mut q, pkt(8, Data)), [(Trimmed, 8)]);
        assert_eq!(k.reports[0].pkt, pkt(8, Data), "reported before the cut");
        assert_eq!(k.offer(&mut q, pkt(9, Ack)), [(Queued, 9)]);
        assert_eq!(k.offer(&mut q, pkt(10, Data)), [(Trimmed, 10)]);
        assert_eq!(k.offer(&mut q, pkt(11, Data)), [(Trimmed, 11)]);
        // Capacity reached: drop, unchanged.
        assert_eq!(k.offer(&mut q, pkt(12, Data)), [(Dropped, 12)]);
        assert_eq!(k.reports[0].pkt, pkt(12, Data));
        assert_eq!(k.offer(&mut q, pkt(13, Nack)), [(Dropped, 13)]);
        assert_eq!((q.len_packets(), q.len_bytes()), (12, 8 * 9064 + 4 * 64));
        let out = k.drain(&mut q);
        assert!(out.iter().map(|p| p.seq).eq(0..12));
        for p in &out[8..] {
            assert_eq!(p.size, 64);
            assert_eq!(p.payload, 0);
            assert_eq!((p.flow, p.path, p.flags), (2, 4, flags::LAST));
        }
        assert_eq!(out[8].kind, PacketKind::Header);
        assert_eq!(out[9].kind, Ack);
        let Queue::Cp(cp) = &q else { unreachable!() };
        assert_eq!((cp.trims(), cp.drops()), (3, 2));
        assert_eq!(q.len_bytes(), 0);
    }

    #[test]
    fn below_threshold_after_draining_queues_whole_packets_again() {
        let mut k = Kit::new(0);
        let mut q = CpQueue::new(Capacity::Packets(2), Capacity::Bytes(1_000_000));
        k.fill(&mut q, (0..2).map(|s| pkt(s, Data)));
        assert_eq!(k.offer(&mut q, pkt(2, Data)), [(Trimmed, 2)]);
        k.take(&mut q);
        k.take(&mut q);
        // One header queued: below threshold again.
        assert_eq!(k.offer(&mut q, pkt(3, Data)), [(Queued, 3)]);
        assert_eq!(q.len_bytes(), 64 + 9064);
    }

    #[test]
    fn byte_threshold_and_capacity() {
        let mut k = Kit::new(0);
        let mut q = CpQueue::new(Capacity::Bytes(20_000), Capacity::Bytes(2 * 9064 + 128));
        k.fill(&mut q, (0..2).map(|s| pkt(s, Data)));
        // 3 × 9064 > 20 000: over the threshold, trimmed; two headers fit.
        assert_eq!(k.offer(&mut q, pkt(2, Data)), [(Trimmed, 2)]);
        assert_eq!(k.offer(&mut q, pkt(3, Data)), [(Trimmed, 3)]);
        assert_eq!(q.len_bytes(), 2 * 9064 + 128);
        assert_eq!(k.offer(&mut q, pkt(4, Data)), [(Dropped, 4)]);
        assert_eq!(k.offer(&mut q, pkt(5, Pull)), [(Dropped, 5)]);
        assert_eq!((q.trims(), q.drops(), q.len_packets()), (2, 2, 4));
    }
}
