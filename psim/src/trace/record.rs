//! The record of a `[replay]` run's original schedule (`[replay]
//! write_record = true`): one row per data packet the original delivered,
//! as the replay uses it (`replay.rs`). One part, `DIR/record/part-00000.parquet`
//! (a replay runs in one process), rows sorted by (flow, seq). A later run
//! replays it with `[replay] from_record = "DIR"`, skipping the original.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `flow_id` | u64 | the packet's flow (as in the flows table) |
//! | `seq` | u64 | its sequence number within the flow |
//! | `src` | u32 | source host |
//! | `dst` | u32 | destination host |
//! | `path` | u32 | the path id it took (which of the pair's equal-cost paths) |
//! | `size_bytes` | u32 | wire size, header included |
//! | `sent_ps` | u64 | i(p): when the source handed it to its NIC |
//! | `exit_ps` | u64 | o(p): when its last bit reached the destination |
//! | `t_min_ps` | u64 | t_min(p): transmission and propagation on every link of its path, no queueing |
//! | `slack_ps` | i64 | o(p) − i(p) − t_min(p): the time it spent queued, the replay's slack |
//!
//! Per-hop times of the original are in its packet trace (`[trace.packets]`
//! with `enqueue` and `dequeue` events, run without `[replay]`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Int64Type, UInt32Type, UInt64Type};

use super::table::Table;
use super::OutputError;
use crate::replay::Record;

/// Schema version of the record table.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// The record table.
pub const RECORD: Table = Table {
    dir: "record",
    columns: &[
        ("flow_id", DataType::UInt64),
        ("seq", DataType::UInt64),
        ("src", DataType::UInt32),
        ("dst", DataType::UInt32),
        ("path", DataType::UInt32),
        ("size_bytes", DataType::UInt32),
        ("sent_ps", DataType::UInt64),
        ("exit_ps", DataType::UInt64),
        ("t_min_ps", DataType::UInt64),
        ("slack_ps", DataType::Int64),
    ],
    nullable: &[],
    version: RECORD_SCHEMA_VERSION,
};

/// t_min(p) of a record: o − i − slack.
pub fn t_min_of(r: &Record) -> u64 {
    (r.exit_ps as i128 - r.sent_ps as i128 - r.slack_ps as i128).max(0) as u64
}

/// Writes the record as part 0 (rows already sorted by flow and seq).
pub fn write_record_part(dir: &Path, rows: &[Record]) -> Result<PathBuf, OutputError> {
    let u64s = |f: fn(&Record) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    let u32s = |f: fn(&Record) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(f)))
    };
    let cols: Vec<ArrayRef> = vec![
        u64s(|r| r.flow),
        u64s(|r| r.seq),
        u32s(|r| r.src),
        u32s(|r| r.dst),
        u32s(|r| r.path),
        u32s(|r| r.size),
        u64s(|r| r.sent_ps),
        u64s(|r| r.exit_ps),
        u64s(t_min_of),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.slack_ps),
        )),
    ];
    RECORD.write_part(dir, 0, &[], &mut std::iter::once(cols))
}

/// Reads every `DIR/record/part-*.parquet`. A row whose t_min disagrees
/// with o − i − slack is damaged, and refused.
pub fn read_record(dir: &Path) -> Result<Vec<Record>, OutputError> {
    let mut rows = Vec::new();
    for path in RECORD.parts(dir)? {
        RECORD.read_part(&path, &mut |b| {
            let t = &RECORD;
            let flow = t.col::<UInt64Type>(&path, b, 0)?;
            let seq = t.col::<UInt64Type>(&path, b, 1)?;
            let src = t.col::<UInt32Type>(&path, b, 2)?;
            let dst = t.col::<UInt32Type>(&path, b, 3)?;
            let route = t.col::<UInt32Type>(&path, b, 4)?;
            let size = t.col::<UInt32Type>(&path, b, 5)?;
            let sent = t.col::<UInt64Type>(&path, b, 6)?;
            let exit = t.col::<UInt64Type>(&path, b, 7)?;
            let t_min = t.col::<UInt64Type>(&path, b, 8)?;
            let slack = t.col::<Int64Type>(&path, b, 9)?;
            for i in 0..b.num_rows() {
                let r = Record {
                    flow: flow.value(i),
                    seq: seq.value(i),
                    src: src.value(i),
                    dst: dst.value(i),
                    path: route.value(i),
                    size: size.value(i),
                    sent_ps: sent.value(i),
                    exit_ps: exit.value(i),
                    slack_ps: slack.value(i),
                };
                if t_min_of(&r) != t_min.value(i) {
                    return Err(OutputError::InvalidData {
                        path: path.clone(),
                        detail: format!(
                            "row {} (flow {}, seq {}): t_min_ps {} is not exit_ps − sent_ps − slack_ps",
                            rows.len(),
                            r.flow,
                            r.seq,
                            t_min.value(i)
                        ),
                    });
                }
                rows.push(r);
            }
            Ok(())
        })?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::table::signature;

    fn row(flow: u64, seq: u64) -> Record {
        Record {
            flow,
            seq,
            src: 3,
            dst: 7,
            path: 2,
            size: 1524,
            sent_ps: 1_000 * seq,
            exit_ps: 1_000 * seq + 50_000,
            slack_ps: 8_000,
        }
    }

    #[test]
    fn schema_is_pinned() {
        assert_eq!(RECORD_SCHEMA_VERSION, 1);
        assert_eq!(
            signature(&RECORD.schema()),
            [
                "flow_id:UInt64:false",
                "seq:UInt64:false",
                "src:UInt32:false",
                "dst:UInt32:false",
                "path:UInt32:false",
                "size_bytes:UInt32:false",
                "sent_ps:UInt64:false",
                "exit_ps:UInt64:false",
                "t_min_ps:UInt64:false",
                "slack_ps:Int64:false",
            ]
        );
    }

    #[test]
    fn round_trips_and_refuses_a_damaged_row() {
        let t = tempfile::tempdir().unwrap();
        let mut rows: Vec<Record> = (0..5).map(|s| row(9, s)).collect();
        rows[3].slack_ps = -4;
        write_record_part(t.path(), &rows).unwrap();
        assert_eq!(read_record(t.path()).unwrap(), rows);
        assert_eq!(t_min_of(&rows[0]), 42_000);

        // A t_min that does not add up names the file and the row.
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(vec![9u64])),
            Arc::new(UInt64Array::from(vec![0u64])),
            Arc::new(UInt32Array::from(vec![3u32])),
            Arc::new(UInt32Array::from(vec![7u32])),
            Arc::new(UInt32Array::from(vec![2u32])),
            Arc::new(UInt32Array::from(vec![1524u32])),
            Arc::new(UInt64Array::from(vec![0u64])),
            Arc::new(UInt64Array::from(vec![50_000u64])),
            Arc::new(UInt64Array::from(vec![1u64])),
            Arc::new(Int64Array::from(vec![8_000i64])),
        ];
        RECORD
            .write_part(t.path(), 0, &[], &mut std::iter::once(cols))
            .unwrap();
        let e = read_record(t.path()).unwrap_err().to_string();
        assert!(
            e.contains("part-00000.parquet") && e.contains("row 0"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_missing_record_is_an_error_naming_the_directory() {
        let t = tempfile::tempdir().unwrap();
        let e = read_record(t.path()).unwrap_err().to_string();
        assert!(e.contains("record"), "{e}");
    }
}
