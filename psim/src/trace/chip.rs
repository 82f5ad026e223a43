//! The Tofino chip trace (`[trace.tofino] enabled = true`): one row per
//! change of a (pipeline, port)'s mode or of a pipeline's DoD or MoD queue
//! length, on every Tofino switch (`net/tofino.rs`). One part per shard
//! under `DIR/tofino/`, rows sorted by (time, switch, series, pipeline, port).
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `time_ps` | u64 | when the value changed |
//! | `switch` | u32 | the switch's entity id |
//! | `pipeline` | u16 | the ingress pipeline |
//! | `port` | u16 | the egress port (mode rows); 65535 on queue rows |
//! | `series` | u8 | 0: mode, 1: DoD queue, 2: MoD queue |
//! | `value` | u32 | mode 0 optimistic, 1 half-pessimistic, 2 pessimistic, 3 trim-all; or packets waiting in the queue |

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use arrow::datatypes::{DataType, UInt16Type, UInt32Type, UInt64Type, UInt8Type};

use super::table::Table;
use super::OutputError;

/// Schema version of the tofino table.
pub const TOFINO_SCHEMA_VERSION: u32 = 1;

/// The tofino table.
pub const TOFINO: Table = Table {
    dir: "tofino",
    columns: &[
        ("time_ps", DataType::UInt64),
        ("switch", DataType::UInt32),
        ("pipeline", DataType::UInt16),
        ("port", DataType::UInt16),
        ("series", DataType::UInt8),
        ("value", DataType::UInt32),
    ],
    nullable: &[],
    version: TOFINO_SCHEMA_VERSION,
};

/// One row (see the module table).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChipRow {
    /// Time, ps.
    pub time_ps: u64,
    /// The switch.
    pub switch: u32,
    /// The pipeline.
    pub pipeline: u16,
    /// The egress port (mode rows; `u16::MAX` on queue rows).
    pub port: u16,
    /// 0: mode, 1: DoD queue packets, 2: MoD queue packets.
    pub series: u8,
    /// The new value.
    pub value: u32,
}

/// Writes part `part` (rows already sorted).
pub fn write_tofino_part(dir: &Path, part: u32, rows: &[ChipRow]) -> Result<PathBuf, OutputError> {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.time_ps),
        )),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.switch))),
        Arc::new(UInt16Array::from_iter_values(
            rows.iter().map(|r| r.pipeline),
        )),
        Arc::new(UInt16Array::from_iter_values(rows.iter().map(|r| r.port))),
        Arc::new(UInt8Array::from_iter_values(rows.iter().map(|r| r.series))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.value))),
    ];
    TOFINO.write_part(dir, part, &[], &mut std::iter::once(cols))
}

/// Reads every `DIR/tofino/part-*.parquet`, rows sorted by (time, switch,
/// series, pipeline, port).
pub fn read_tofino(dir: &Path) -> Result<Vec<ChipRow>, OutputError> {
    let mut rows = Vec::new();
    for path in TOFINO.parts(dir)? {
        TOFINO.read_part(&path, &mut |b| {
            let t = &TOFINO;
            let time = t.col::<UInt64Type>(&path, b, 0)?;
            let switch = t.col::<UInt32Type>(&path, b, 1)?;
            let pipeline = t.col::<UInt16Type>(&path, b, 2)?;
            let port = t.col::<UInt16Type>(&path, b, 3)?;
            let series = t.col::<UInt8Type>(&path, b, 4)?;
            let value = t.col::<UInt32Type>(&path, b, 5)?;
            for i in 0..b.num_rows() {
                rows.push(ChipRow {
                    time_ps: time.value(i),
                    switch: switch.value(i),
                    pipeline: pipeline.value(i),
                    port: port.value(i),
                    series: series.value(i),
                    value: value.value(i),
                });
            }
            Ok(())
        })?;
    }
    rows.sort_by_key(|r| (r.time_ps, r.switch, r.series, r.pipeline, r.port));
    Ok(rows)
}
