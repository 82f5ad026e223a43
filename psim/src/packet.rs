//! Packet headers.
//!
//! A packet carries only what real headers carry (addresses, path id, sequence
//! numbers, flags, priority) plus a few measurement fields. Protocol logic
//! lives in `transport/`; this module is plain data. Packets are moved by
//! value: at 64 bytes they are cheaper to copy than to box.

/// Bytes of header on every packet (Ethernet + IP + transport, as in the NDP
/// paper's 64-byte trimmed headers, [P] §3.2.4). A trimmed packet is this size.
pub const HEADER_BYTES: u32 = 64;

/// What a packet is, as far as switches and endpoints care.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum PacketKind {
    /// Carries payload.
    Data = 0,
    /// A data packet whose payload a switch cut off (NDP, CP).
    Header = 1,
    /// Acknowledgement.
    Ack = 2,
    /// Negative acknowledgement (NDP: a header arrived).
    Nack = 3,
    /// Receiver pull (NDP, pHost grants).
    Pull = 4,
    /// Link-level pause (PFC).
    Pause = 5,
}

impl PacketKind {
    /// Packets without payload that switches priority-forward when a discipline
    /// has a control class (NDP [P] §3.1 footnote 1).
    #[inline]
    pub fn is_control(self) -> bool {
        !matches!(self, PacketKind::Data)
    }
}

/// Transport protocol of a packet: the table lives with the transports
/// (`transport/mod.rs`), one row per protocol.
pub use crate::transport::Protocol;

/// Packet flag bits.
pub mod flags {
    /// ECN Congestion Experienced (set by a marking queue).
    pub const ECN_CE: u8 = 1 << 0;
    /// ECN echo (receiver to sender).
    pub const ECE: u8 = 1 << 1;
    /// Last packet of a flow.
    pub const LAST: u8 = 1 << 2;
    /// Returned to sender by a switch (NDP return-to-sender).
    pub const BOUNCED: u8 = 1 << 3;
    /// Retransmission (measurement only).
    pub const RETX: u8 = 1 << 4;
    /// First-RTT packet carrying connection set-up (NDP SYN).
    pub const SYN: u8 = 1 << 5;
    /// A PULL piggybacked on an ACK or NACK (NDP A8).
    pub const PULL: u8 = 1 << 6;
    /// ECN-Capable Transport: a marking queue may set CE instead of dropping (RFC 3168).
    pub const ECT: u8 = 1 << 7;
}

/// One packet.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Packet {
    /// Flow the packet belongs to.
    pub flow: u64,
    /// Source host.
    pub src: u32,
    /// Destination host (swapped with `src` when bounced).
    pub dst: u32,
    /// Transport sequence number (bytes or packets, as the protocol defines).
    pub seq: u64,
    /// Acknowledgement or pull counter, as the protocol defines.
    pub ack: u64,
    /// Bytes on the wire, header included.
    pub size: u32,
    /// Payload bytes (0 for control packets and trimmed headers).
    pub payload: u32,
    /// Path id for source routing: which of the equal-cost paths to take.
    pub path: u32,
    /// Measurement: when the sending transport created this packet.
    pub sent_ps: u64,
    /// What the packet is.
    pub kind: PacketKind,
    /// Protocol of the flow.
    pub proto: Protocol,
    /// Flag bits, see [`flags`].
    pub flags: u8,
    /// Priority class (0 = default); used by priority-aware disciplines
    /// (`classify = "prio"` uses 3 bits: 8 classes).
    pub prio: u8,
    /// Scheduling rank: a rank, slack or deadline, as the discipline that
    /// reads it defines (pFabric's remaining size, LSTF's slack, EDF's
    /// deadline); 0 when nothing sets it.
    pub rank: u64,
}

impl Packet {
    /// Whether `flag` is set.
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Whether this is a data packet that a NIC-fetched sender on host `id`
    /// handed to that host's NIC (`[protocol.roce] nic_packets`), so the
    /// sender hears when it leaves the NIC's queue.
    #[inline]
    pub fn nic_fetched_from(&self, id: u32) -> bool {
        self.kind == PacketKind::Data && self.proto.nic_fetched() && self.src == id
    }
}

/// A packet for unit tests: `kind` with `size` bytes on the wire (payload =
/// size minus the header for data, 0 otherwise), flow 1 from host 0 to host 1.
#[cfg(test)]
pub(crate) fn test_packet(kind: PacketKind, seq: u64, size: u32) -> Packet {
    Packet {
        flow: 1,
        src: 0,
        dst: 1,
        seq,
        ack: 0,
        size,
        payload: if kind == PacketKind::Data {
            size.saturating_sub(HEADER_BYTES)
        } else {
            0
        },
        path: 0,
        sent_ps: 0,
        kind,
        proto: Protocol::Cbr,
        flags: 0,
        prio: 0,
        rank: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_stays_compact() {
        // Packets are copied through queues and links: keep them within one cache line.
        assert_eq!(std::mem::size_of::<Packet>(), 64);
    }
}
