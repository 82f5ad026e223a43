//! The packet-event trace: one row per queue event of a traced packet
//! (enqueue, trim, drop, bounce, ECN mark, pause, dequeue, pause received), written as one
//! Parquet part per shard under `DIR/packets/`.
//!
//! Each shard owns a [`PacketTracer`] and records the events of its own
//! entities; nothing is shared between shards. Rows are sorted by the total
//! key [`PacketRow::key`] when written and when read, so the content read
//! back does not depend on the partition.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, AsArray, StringArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::datatypes::{DataType, UInt16Type, UInt32Type, UInt64Type, UInt8Type};

use super::spec::{PacketEvent, PacketFilter};
use super::table::Table;
use super::OutputError;
use crate::packet::{Packet, PacketKind};

/// Version of the packets table layout.
pub const PACKETS_SCHEMA_VERSION: u32 = 1;

/// The packets table.
pub const PACKETS: Table = Table {
    dir: "packets",
    columns: &[
        ("time_ps", DataType::UInt64),
        ("entity", DataType::UInt32),
        ("entity_seq", DataType::UInt64),
        ("port", DataType::UInt16),
        ("event", DataType::Utf8),
        ("flow", DataType::UInt64),
        ("seq", DataType::UInt64),
        ("kind", DataType::Utf8),
        ("flags", DataType::UInt8),
        ("src", DataType::UInt32),
        ("dst", DataType::UInt32),
        ("size_bytes", DataType::UInt32),
        ("payload_bytes", DataType::UInt32),
        ("queue_bytes", DataType::UInt64),
        ("queue_pkts", DataType::UInt32),
    ],
    nullable: &[],
    version: PACKETS_SCHEMA_VERSION,
};

/// Names of [`PacketKind`]s in the `kind` column, indexed by discriminant.
pub const KIND_NAMES: [&str; 6] = ["data", "header", "ack", "nack", "pull", "pause"];

/// One packet event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PacketRow {
    /// When, ps.
    pub time_ps: u64,
    /// What happened.
    pub event: PacketEvent,
    /// Entity owning the output port.
    pub entity: u32,
    /// 1-based position of the event among every queue event of `entity`
    /// (counted before all filters but the entity filter): orders rows that
    /// tie on time, and shows where filtered-out events were.
    pub entity_seq: u64,
    /// Output port index on that entity.
    pub port: u16,
    /// The packet's flow.
    pub flow: u64,
    /// The packet's transport sequence number.
    pub seq: u64,
    /// The packet's kind, one of [`KIND_NAMES`] (a checkpoint stores its index).
    #[serde(with = "kind_index")]
    pub kind: KindName,
    /// The packet's flag bits (`crate::packet::flags`: 1 ECN CE, 2 ECE, 4
    /// last, 8 bounced, 16 retransmission, 32 SYN, 64 piggybacked PULL).
    pub flags: u8,
    /// The packet's source host, as carried in the packet.
    pub src: u32,
    /// The packet's destination host.
    pub dst: u32,
    /// Wire bytes, header included.
    pub size_bytes: u32,
    /// Payload bytes.
    pub payload_bytes: u32,
    /// Bytes in the port's queue just after the event.
    pub queue_bytes: u64,
    /// Packets in the port's queue just after the event.
    pub queue_pkts: u32,
}

/// A row's `kind`: one of [`KIND_NAMES`]. Named through an alias so that
/// serde's derive does not treat it as a string borrowed from its input.
pub type KindName = &'static str;

/// A row's `kind` in a checkpoint: its index in [`KIND_NAMES`], so that the
/// row read back points at the same static name.
mod kind_index {
    use super::KIND_NAMES;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(kind: &&'static str, s: S) -> Result<S::Ok, S::Error> {
        let i = KIND_NAMES.iter().position(|k| k == kind).unwrap_or(0);
        s.serialize_u8(i as u8)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        let i = u8::deserialize(d)?;
        KIND_NAMES
            .get(i as usize)
            .copied()
            .ok_or_else(|| D::Error::custom(format!("packet kind {i} out of range")))
    }
}

impl PacketRow {
    /// The total order of rows: time, entity, then the entity's own event
    /// order, which is the causal order of rows that tie on time.
    pub fn key(&self) -> (u64, u32, u64) {
        (self.time_ps, self.entity, self.entity_seq)
    }
}

/// The fields of a packet a trace row needs, copied before the packet is
/// moved into a queue.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PacketFields {
    flow: u64,
    seq: u64,
    kind: PacketKind,
    flags: u8,
    src: u32,
    dst: u32,
    size: u32,
    payload: u32,
}

impl PacketFields {
    /// Copies what the trace needs.
    #[inline]
    pub fn of(p: &Packet) -> PacketFields {
        PacketFields {
            flow: p.flow,
            seq: p.seq,
            kind: p.kind,
            flags: p.flags,
            src: p.src,
            dst: p.dst,
            size: p.size,
            payload: p.payload,
        }
    }

    /// The same fields with the flag bits `f` also set.
    pub fn with_flags(mut self, f: u8) -> PacketFields {
        self.flags |= f;
        self
    }
}

/// A shard's packet-event recorder. Filters are applied at record time, so
/// memory holds only the rows that will be written; past `max_rows` rows are
/// counted but no longer stored (the run then fails, see [`Self::seen`]).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PacketTracer {
    /// Shared by every shard: a checkpoint leaves it out (a default filter,
    /// recording nothing, until [`PacketTracer::reattach`]).
    #[serde(skip)]
    filter: Arc<PacketFilter>,
    counts: rustc_hash::FxHashMap<u32, u64>,
    rows: Vec<PacketRow>,
    seen: u64,
}

impl PacketTracer {
    /// Re-attaches a recorder read back from a checkpoint to the filter of
    /// `fresh`, a recorder built anew from the same scenario.
    pub fn reattach(&mut self, fresh: &PacketTracer) {
        self.filter = fresh.filter.clone();
    }

    /// A recorder applying `filter`.
    pub fn new(filter: Arc<PacketFilter>) -> PacketTracer {
        PacketTracer {
            filter,
            counts: Default::default(),
            rows: Vec::new(),
            seen: 0,
        }
    }

    /// Records event `ev` of packet `p` at port `port` of `entity`, with the
    /// queue holding `queue_bytes` / `queue_pkts` just after the event. The
    /// one call a queue model needs to report an event (e.g. an ECN mark).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        ev: PacketEvent,
        now: u64,
        entity: u32,
        port: u16,
        p: &PacketFields,
        queue_bytes: u64,
        queue_pkts: u32,
    ) {
        if !self.filter.wants_entity(entity) {
            return;
        }
        let n = self.counts.entry(entity).or_insert(0);
        *n += 1;
        let entity_seq = *n;
        if !self.filter.wants_at(ev, now, port) || !self.filter.wants_packet(p.flow, p.seq) {
            return;
        }
        self.seen += 1;
        if self.seen > self.filter.max_rows {
            return;
        }
        self.rows.push(PacketRow {
            time_ps: now,
            event: ev,
            entity,
            entity_seq,
            port,
            flow: p.flow,
            seq: p.seq,
            kind: KIND_NAMES[p.kind as usize],
            flags: p.flags,
            src: p.src,
            dst: p.dst,
            size_bytes: p.size,
            payload_bytes: p.payload,
            queue_bytes,
            queue_pkts,
        });
    }

    /// Rows that passed the filters, stored or not: a partition-independent
    /// total once summed over shards.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Whether this shard alone has passed the row limit (then so has the run).
    pub fn over_limit(&self) -> bool {
        self.seen > self.filter.max_rows
    }

    /// The stored rows.
    pub fn rows(&self) -> &[PacketRow] {
        &self.rows
    }

    /// The stored rows, by value.
    pub fn into_rows(self) -> Vec<PacketRow> {
        self.rows
    }

    /// The row limit.
    pub fn max_rows(&self) -> u64 {
        self.filter.max_rows
    }
}

/// Writes `rows` as `DIR/packets/part-{part:05}.parquet`, sorted by
/// [`PacketRow::key`]. An empty part is still written.
pub fn write_packets_part(
    dir: &Path,
    part: u32,
    rows: &[PacketRow],
) -> Result<PathBuf, OutputError> {
    let mut order: Vec<&PacketRow> = rows.iter().collect();
    order.sort_by_key(|r| r.key());
    let mut chunks = order.chunks(1 << 16).map(|c| -> Vec<ArrayRef> {
        vec![
            Arc::new(UInt64Array::from_iter_values(c.iter().map(|r| r.time_ps))),
            Arc::new(UInt32Array::from_iter_values(c.iter().map(|r| r.entity))),
            Arc::new(UInt64Array::from_iter_values(
                c.iter().map(|r| r.entity_seq),
            )),
            Arc::new(UInt16Array::from_iter_values(c.iter().map(|r| r.port))),
            Arc::new(StringArray::from_iter_values(
                c.iter().map(|r| r.event.name()),
            )),
            Arc::new(UInt64Array::from_iter_values(c.iter().map(|r| r.flow))),
            Arc::new(UInt64Array::from_iter_values(c.iter().map(|r| r.seq))),
            Arc::new(StringArray::from_iter_values(c.iter().map(|r| r.kind))),
            Arc::new(UInt8Array::from_iter_values(c.iter().map(|r| r.flags))),
            Arc::new(UInt32Array::from_iter_values(c.iter().map(|r| r.src))),
            Arc::new(UInt32Array::from_iter_values(c.iter().map(|r| r.dst))),
            Arc::new(UInt32Array::from_iter_values(
                c.iter().map(|r| r.size_bytes),
            )),
            Arc::new(UInt32Array::from_iter_values(
                c.iter().map(|r| r.payload_bytes),
            )),
            Arc::new(UInt64Array::from_iter_values(
                c.iter().map(|r| r.queue_bytes),
            )),
            Arc::new(UInt32Array::from_iter_values(
                c.iter().map(|r| r.queue_pkts),
            )),
        ]
    });
    PACKETS.write_part(dir, part, &[], &mut chunks)
}

/// Reads every `DIR/packets/part-*.parquet`, sorted by [`PacketRow::key`].
/// Errors name the offending file or directory.
pub fn read_packets(dir: &Path) -> Result<Vec<PacketRow>, OutputError> {
    let mut rows = Vec::new();
    for path in PACKETS.parts(dir)? {
        PACKETS.read_part(&path, &mut |b| {
            let t = &PACKETS;
            let time = t.col::<UInt64Type>(&path, b, 0)?;
            let entity = t.col::<UInt32Type>(&path, b, 1)?;
            let entity_seq = t.col::<UInt64Type>(&path, b, 2)?;
            let port = t.col::<UInt16Type>(&path, b, 3)?;
            let event = b.column(4).as_string_opt::<i32>();
            let flow = t.col::<UInt64Type>(&path, b, 5)?;
            let seq = t.col::<UInt64Type>(&path, b, 6)?;
            let kind = b.column(7).as_string_opt::<i32>();
            let flags = t.col::<UInt8Type>(&path, b, 8)?;
            let src = t.col::<UInt32Type>(&path, b, 9)?;
            let dst = t.col::<UInt32Type>(&path, b, 10)?;
            let size = t.col::<UInt32Type>(&path, b, 11)?;
            let payload = t.col::<UInt32Type>(&path, b, 12)?;
            let qb = t.col::<UInt64Type>(&path, b, 13)?;
            let qp = t.col::<UInt32Type>(&path, b, 14)?;
            let (Some(event), Some(kind)) = (event, kind) else {
                return Err(OutputError::SchemaMismatch {
                    path: path.clone(),
                    detail: "event or kind column is not text".into(),
                });
            };
            let invalid = |detail: String| OutputError::InvalidData {
                path: path.clone(),
                detail,
            };
            for i in 0..b.num_rows() {
                let ev = PacketEvent::from_name(event.value(i))
                    .ok_or_else(|| invalid(format!("unknown event {:?}", event.value(i))))?;
                let k = KIND_NAMES
                    .iter()
                    .find(|n| **n == kind.value(i))
                    .ok_or_else(|| invalid(format!("unknown kind {:?}", kind.value(i))))?;
                rows.push(PacketRow {
                    time_ps: time.value(i),
                    event: ev,
                    entity: entity.value(i),
                    entity_seq: entity_seq.value(i),
                    port: port.value(i),
                    flow: flow.value(i),
                    seq: seq.value(i),
                    kind: k,
                    flags: flags.value(i),
                    src: src.value(i),
                    dst: dst.value(i),
                    size_bytes: size.value(i),
                    payload_bytes: payload.value(i),
                    queue_bytes: qb.value(i),
                    queue_pkts: qp.value(i),
                });
            }
            Ok(())
        })?;
    }
    rows.sort_by_key(|r| r.key());
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_is_pinned() {
        // docs/outputs.md documents these columns; change both (and the
        // version) together.
        let cols = crate::trace::table::signature(&PACKETS.schema());
        assert_eq!(
            cols,
            [
                "time_ps:UInt64:false",
                "entity:UInt32:false",
                "entity_seq:UInt64:false",
                "port:UInt16:false",
                "event:Utf8:false",
                "flow:UInt64:false",
                "seq:UInt64:false",
                "kind:Utf8:false",
                "flags:UInt8:false",
                "src:UInt32:false",
                "dst:UInt32:false",
                "size_bytes:UInt32:false",
                "payload_bytes:UInt32:false",
                "queue_bytes:UInt64:false",
                "queue_pkts:UInt32:false",
            ]
        );
        assert_eq!(PACKETS_SCHEMA_VERSION, 1);
        assert_eq!(PACKETS.dir, "packets");
        let names: Vec<&str> = PacketEvent::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(
            names,
            [
                "enqueue",
                "trim",
                "drop",
                "bounce",
                "ecn_mark",
                "pause",
                "dequeue",
                "pause_received"
            ]
        );
        for (i, k) in [
            PacketKind::Data,
            PacketKind::Header,
            PacketKind::Ack,
            PacketKind::Nack,
            PacketKind::Pull,
            PacketKind::Pause,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(k as usize, i);
        }
    }

    fn row(t: u64, ev: PacketEvent, flow: u64) -> PacketRow {
        PacketRow {
            time_ps: t,
            event: ev,
            entity: 3,
            entity_seq: t,
            port: 1,
            flow,
            seq: t * 10,
            kind: "data",
            flags: 1,
            src: 0,
            dst: 5,
            size_bytes: 1500,
            payload_bytes: 1436,
            queue_bytes: 3000,
            queue_pkts: 2,
        }
    }

    #[test]
    fn round_trip_across_parts_is_sorted() {
        let t = tempfile::tempdir().unwrap();
        let a = vec![
            row(5, PacketEvent::Dequeue, 1),
            row(1, PacketEvent::Enqueue, 1),
        ];
        let b = vec![row(3, PacketEvent::Drop, u64::MAX)];
        write_packets_part(t.path(), 0, &a).unwrap();
        write_packets_part(t.path(), 1, &b).unwrap();
        write_packets_part(t.path(), 2, &[]).unwrap();
        let back = read_packets(t.path()).unwrap();
        assert_eq!(back, vec![a[1].clone(), b[0].clone(), a[0].clone()]);
    }

    #[test]
    fn corrupt_or_missing_part_names_the_file() {
        let t = tempfile::tempdir().unwrap();
        let e = read_packets(t.path()).unwrap_err().to_string();
        assert!(
            e.contains(&t.path().join("packets").display().to_string()),
            "{e}"
        );
        write_packets_part(t.path(), 0, &[row(1, PacketEvent::Enqueue, 1)]).unwrap();
        let p = t.path().join("packets/part-00001.parquet");
        std::fs::write(&p, b"PAR1 not really").unwrap();
        let e = read_packets(t.path()).unwrap_err().to_string();
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn tracer_filters_and_caps() {
        let f = Arc::new(PacketFilter {
            events: 1 << PacketEvent::Dequeue as u8,
            flows: Some(vec![7]),
            entries: None,
            entities: None,
            ports: None,
            start_ps: 0,
            end_ps: u64::MAX,
            sample_below: None,
            seed: 1,
            max_rows: 2,
        });
        let mut tr = PacketTracer::new(f);
        let mut p = crate::packet::test_packet(PacketKind::Data, 1, 1500);
        p.flow = 7;
        let fields = PacketFields::of(&p);
        tr.record(PacketEvent::Enqueue, 1, 0, 0, &fields, 0, 0);
        for t in 0..3 {
            tr.record(PacketEvent::Dequeue, t, 0, 0, &fields, 0, 0);
        }
        p.flow = 8;
        tr.record(PacketEvent::Dequeue, 9, 0, 0, &PacketFields::of(&p), 0, 0);
        assert_eq!(tr.seen(), 3);
        assert_eq!(tr.rows().len(), 2);
        assert!(tr.over_limit());
    }
}
