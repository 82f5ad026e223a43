//! Byte encoding of what crosses MPI ranks: packets in flight, completion
//! notices and receiver-side flow statistics.
//!
//! Fixed-width little-endian fields, so that a message means the same thing
//! on every rank whatever its build. No serde: this runs once per cross-rank
//! packet and must stay cheap.

use crate::net::{InFlight, Message};
use crate::packet::{Packet, PacketKind, Protocol};
use crate::transport::{SinkStats, SourceStats};

/// Encoded size of one [`Message`].
pub const MESSAGE_BYTES: usize =
    4 + 2 + 8 + 4 + 8 + (8 + 4 + 4 + 8 + 8 + 4 + 4 + 4 + 8 + 1 + 1 + 1 + 1 + 8);

/// A malformed buffer (a bug or a mismatched build on another rank).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed cross-rank buffer: {0}")]
pub struct WireError(pub String);

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let s = self
            .b
            .get(self.at..self.at + N)
            .ok_or_else(|| WireError(format!("truncated at byte {}", self.at)))?;
        self.at += N;
        Ok(s.try_into().expect("length checked"))
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

fn kind_from(v: u8) -> Result<PacketKind, WireError> {
    Ok(match v {
        0 => PacketKind::Data,
        1 => PacketKind::Header,
        2 => PacketKind::Ack,
        3 => PacketKind::Nack,
        4 => PacketKind::Pull,
        5 => PacketKind::Pause,
        _ => return Err(WireError(format!("packet kind {v}"))),
    })
}

fn proto_from(v: u8) -> Result<Protocol, WireError> {
    Protocol::ALL
        .into_iter()
        .find(|p| *p as u8 == v)
        .ok_or_else(|| WireError(format!("protocol {v}")))
}

/// Appends one message.
pub fn put_message(m: &Message, out: &mut Vec<u8>) {
    let f = &m.inflight;
    let p = &f.pkt;
    out.extend_from_slice(&m.dst.to_le_bytes());
    out.extend_from_slice(&m.port.to_le_bytes());
    out.extend_from_slice(&f.arrive.to_le_bytes());
    out.extend_from_slice(&f.src.to_le_bytes());
    out.extend_from_slice(&f.seq.to_le_bytes());
    out.extend_from_slice(&p.flow.to_le_bytes());
    out.extend_from_slice(&p.src.to_le_bytes());
    out.extend_from_slice(&p.dst.to_le_bytes());
    out.extend_from_slice(&p.seq.to_le_bytes());
    out.extend_from_slice(&p.ack.to_le_bytes());
    out.extend_from_slice(&p.size.to_le_bytes());
    out.extend_from_slice(&p.payload.to_le_bytes());
    out.extend_from_slice(&p.path.to_le_bytes());
    out.extend_from_slice(&p.sent_ps.to_le_bytes());
    out.extend_from_slice(&[p.kind as u8, p.proto as u8, p.flags, p.prio]);
    out.extend_from_slice(&p.rank.to_le_bytes());
}

/// Decodes every message of a buffer.
pub fn get_messages(b: &[u8]) -> Result<Vec<Message>, WireError> {
    let mut r = Reader { b, at: 0 };
    let mut v = Vec::with_capacity(b.len() / MESSAGE_BYTES);
    while !r.done() {
        let dst = r.u32()?;
        let port = r.u16()?;
        let arrive = r.u64()?;
        let src = r.u32()?;
        let seq = r.u64()?;
        let pkt = Packet {
            flow: r.u64()?,
            src: r.u32()?,
            dst: r.u32()?,
            seq: r.u64()?,
            ack: r.u64()?,
            size: r.u32()?,
            payload: r.u32()?,
            path: r.u32()?,
            sent_ps: r.u64()?,
            kind: kind_from(r.u8()?)?,
            proto: proto_from(r.u8()?)?,
            flags: r.u8()?,
            prio: r.u8()?,
            rank: r.u64()?,
        };
        v.push(Message {
            dst,
            port,
            inflight: InFlight {
                arrive,
                src,
                seq,
                pkt,
            },
        });
    }
    Ok(v)
}

/// Encodes (due time, flow) completion notices.
pub fn put_notices(n: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(n.len() * 16);
    for &(due, flow) in n {
        out.extend_from_slice(&due.to_le_bytes());
        out.extend_from_slice(&flow.to_le_bytes());
    }
    out
}

/// Decodes completion notices.
pub fn get_notices(b: &[u8]) -> Result<Vec<(u64, u64)>, WireError> {
    let mut r = Reader { b, at: 0 };
    let mut v = Vec::new();
    while !r.done() {
        v.push((r.u64()?, r.u64()?));
    }
    Ok(v)
}

/// Appends one receiver-side flow record: (flow id, stats).
pub fn put_sink(flow: u64, s: &SinkStats, out: &mut Vec<u8>) {
    out.extend_from_slice(&flow.to_le_bytes());
    out.extend_from_slice(&s.bytes_received.to_le_bytes());
    out.extend_from_slice(&s.packets_received.to_le_bytes());
    out.extend_from_slice(&s.finish_ps.map_or(u64::MAX, |f| f).to_le_bytes());
}

/// Decodes receiver-side flow records.
pub fn get_sinks(b: &[u8]) -> Result<Vec<(u64, SinkStats)>, WireError> {
    let mut r = Reader { b, at: 0 };
    let mut v = Vec::new();
    while !r.done() {
        let flow = r.u64()?;
        let bytes_received = r.u64()?;
        let packets_received = r.u64()?;
        let f = r.u64()?;
        v.push((
            flow,
            SinkStats {
                bytes_received,
                packets_received,
                finish_ps: (f != u64::MAX).then_some(f),
            },
        ));
    }
    Ok(v)
}

/// Encodes the sender counters of an RDMA Read's responder for the rank
/// that owns the flow's requester.
pub fn put_served(flow: u64, s: &SourceStats, out: &mut Vec<u8>) {
    let f = s.finish_ps.map_or(u64::MAX, |f| f);
    for v in [
        flow,
        s.bytes_sent,
        s.packets_sent,
        s.retransmissions,
        s.trims,
        s.bounces,
        s.timeouts,
        s.rtt_samples,
        s.rtt_sum_ps,
        f,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Decodes what [`put_served`] encoded.
pub fn get_served(b: &[u8]) -> Result<Vec<(u64, SourceStats)>, WireError> {
    let mut r = Reader { b, at: 0 };
    let mut v = Vec::new();
    while !r.done() {
        let flow = r.u64()?;
        let mut s = SourceStats {
            bytes_sent: r.u64()?,
            packets_sent: r.u64()?,
            retransmissions: r.u64()?,
            trims: r.u64()?,
            bounces: r.u64()?,
            timeouts: r.u64()?,
            rtt_samples: r.u64()?,
            rtt_sum_ps: r.u64()?,
            finish_ps: None,
        };
        let f = r.u64()?;
        s.finish_ps = (f != u64::MAX).then_some(f);
        v.push((flow, s));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::flags;

    #[test]
    fn messages_round_trip_exactly() {
        let m = Message {
            dst: 77,
            port: 3,
            inflight: InFlight {
                arrive: u64::MAX - 5,
                src: 12,
                seq: 99,
                pkt: Packet {
                    flow: 1 << 60,
                    src: 4,
                    dst: 8191,
                    seq: 123_456,
                    ack: 7,
                    size: 9064,
                    payload: 9000,
                    path: 255,
                    sent_ps: 42,
                    kind: PacketKind::Nack,
                    proto: Protocol::Phost,
                    flags: flags::PULL | flags::LAST,
                    prio: 1,
                    rank: u64::MAX - 3,
                },
            },
        };
        let mut b = Vec::new();
        put_message(&m, &mut b);
        put_message(&m, &mut b);
        assert_eq!(b.len(), 2 * MESSAGE_BYTES);
        let back = get_messages(&b).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].inflight.pkt, m.inflight.pkt);
        assert_eq!(
            (
                back[0].dst,
                back[0].port,
                back[0].inflight.arrive,
                back[0].inflight.seq
            ),
            (77, 3, u64::MAX - 5, 99)
        );
        assert!(
            get_messages(&b[..b.len() - 1]).is_err(),
            "truncation is detected"
        );
    }

    #[test]
    fn notices_and_sinks_round_trip() {
        let n = vec![(5, 9), (u64::MAX, 0)];
        assert_eq!(get_notices(&put_notices(&n)).unwrap(), n);
        let s = SinkStats {
            bytes_received: 10,
            packets_received: 2,
            finish_ps: None,
        };
        let t = SinkStats {
            finish_ps: Some(0),
            ..s.clone()
        };
        let mut b = Vec::new();
        put_sink(1, &s, &mut b);
        put_sink(2, &t, &mut b);
        assert_eq!(get_sinks(&b).unwrap(), vec![(1, s), (2, t)]);
        // An RDMA Read's responder counters, every field distinct.
        let r = SourceStats {
            bytes_sent: 1,
            packets_sent: 2,
            retransmissions: 3,
            trims: 4,
            bounces: 5,
            timeouts: 6,
            rtt_samples: 7,
            rtt_sum_ps: 8,
            finish_ps: Some(9),
        };
        let q = SourceStats {
            finish_ps: None,
            ..r.clone()
        };
        let mut b = Vec::new();
        put_served(3, &r, &mut b);
        put_served(4, &q, &mut b);
        assert_eq!(get_served(&b).unwrap(), vec![(3, r), (4, q)]);
        assert!(get_served(&b[..b.len() - 1]).is_err(), "a cut record");
    }
}
