//! The flows table: one row per flow, written as Parquet parts (one per
//! shard) under `DIR/flows/`, plus a canonical CSV rendering for byte-exact
//! comparison of runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array, UInt64Array, UInt8Array};
use arrow::datatypes::{DataType, SchemaRef, UInt32Type, UInt64Type, UInt8Type};
use arrow::record_batch::RecordBatch;

use super::table::Table;
use super::OutputError;

/// Version of the flows table layout. Bump it on any change to the columns
/// (name, type, nullability, order or meaning) so that old readers refuse new
/// files instead of misreading them.
pub const FLOWS_SCHEMA_VERSION: u32 = 3;

/// Parquet key/value metadata key holding [`FLOWS_SCHEMA_VERSION`].
pub const SCHEMA_VERSION_KEY: &str = "psim.schema_version";

/// Name of the flows subdirectory of an output directory.
pub const FLOWS_DIR: &str = "flows";

/// Rows per record batch when writing. Bounds the extra memory used for the
/// columnar copy of a large shard's records.
const WRITE_BATCH_ROWS: usize = 1 << 16;

/// One row of the flows table. Times are integer picoseconds, the engine's
/// native unit, so no precision is lost and runs compare exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    /// Flow id (from the workload: entry, source host, counter).
    pub flow_id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Transport name: "cbr", "ndp", "tcp", ...
    pub protocol: String,
    /// Priority class (0 = normal).
    pub priority: u8,
    /// None for long-lived flows.
    pub size_bytes: Option<u64>,
    /// Start time, ps.
    pub start_ps: u64,
    /// None if unfinished when the run stopped.
    pub finish_ps: Option<u64>,
    /// finish - start, None if unfinished.
    pub fct_ps: Option<u64>,
    /// Closed-form ideal FCT, None where the model does not provide one.
    pub ideal_fct_ps: Option<u64>,
    /// Payload bytes the sender transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Distinct payload bytes delivered to the receiver.
    pub bytes_received: u64,
    /// Packets the sender transmitted.
    pub packets_sent: u64,
    /// Packets that reached the receiver.
    pub packets_received: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Trimmed packets reported to the sender.
    pub trims: u64,
    /// Packets returned to the sender.
    pub bounces: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// When the sender learned that the last byte was acknowledged, ps;
    /// None if it had not when the run stopped, and for transports without
    /// acknowledgements (CBR). `finish_ps` is the receiver's completion.
    pub sender_finish_ps: Option<u64>,
    /// RTT samples the sender took (0 for transports that take none).
    pub rtt_samples: u64,
    /// Their mean, ps (rounded down); None without samples.
    pub rtt_mean_ps: Option<u64>,
}

/// The flows table: columns in [`FlowRecord`] field order, nullable exactly
/// where the field is an `Option`. The single source of truth for the
/// schema, the CSV header and the read-side column order; documented column
/// by column in `docs/outputs.md`.
pub const FLOWS: Table = Table {
    dir: FLOWS_DIR,
    columns: &[
        ("flow_id", DataType::UInt64),
        ("src", DataType::UInt32),
        ("dst", DataType::UInt32),
        ("protocol", DataType::Utf8),
        ("priority", DataType::UInt8),
        ("size_bytes", DataType::UInt64),
        ("start_ps", DataType::UInt64),
        ("finish_ps", DataType::UInt64),
        ("fct_ps", DataType::UInt64),
        ("ideal_fct_ps", DataType::UInt64),
        ("bytes_sent", DataType::UInt64),
        ("bytes_received", DataType::UInt64),
        ("packets_sent", DataType::UInt64),
        ("packets_received", DataType::UInt64),
        ("retransmissions", DataType::UInt64),
        ("trims", DataType::UInt64),
        ("bounces", DataType::UInt64),
        ("timeouts", DataType::UInt64),
        ("sender_finish_ps", DataType::UInt64),
        ("rtt_samples", DataType::UInt64),
        ("rtt_mean_ps", DataType::UInt64),
    ],
    nullable: &[
        "size_bytes",
        "finish_ps",
        "fct_ps",
        "ideal_fct_ps",
        "sender_finish_ps",
        "rtt_mean_ps",
    ],
    version: FLOWS_SCHEMA_VERSION,
};

/// Arrow schema of the flows table ([`FLOWS`]).
pub fn flows_schema() -> SchemaRef {
    FLOWS.schema()
}

/// Write `records` as `DIR/flows/part-{part:05}.parquet`, atomically (temp
/// file in the same directory, fsync, rename), creating `DIR/flows` if
/// missing. zstd-compressed, tagged with `psim.schema_version`.
///
/// Rows are stored sorted by `flow_id` so the file's bytes do not depend on
/// the order in which a shard happened to collect its flows. An empty
/// `records` still produces a valid file carrying the schema: every shard
/// writes its part, so a missing part always means a failed shard.
pub fn write_flows_part(
    dir: &Path,
    part: u32,
    records: &[FlowRecord],
) -> Result<PathBuf, OutputError> {
    let mut order: Vec<&FlowRecord> = records.iter().collect();
    order.sort_by_key(|r| r.flow_id);
    FLOWS.write_part(
        dir,
        part,
        &[],
        &mut order.chunks(WRITE_BATCH_ROWS).map(to_columns),
    )
}

/// The columns of one record batch, in [`FLOWS`] column order.
fn to_columns(rows: &[&FlowRecord]) -> Vec<ArrayRef> {
    fn u64s(rows: &[&FlowRecord], f: impl Fn(&FlowRecord) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| f(r))))
    }
    fn opt_u64s(rows: &[&FlowRecord], f: impl Fn(&FlowRecord) -> Option<u64>) -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<UInt64Array>())
    }
    vec![
        u64s(rows, |r| r.flow_id),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.src))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.dst))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.protocol.as_str()),
        )),
        Arc::new(UInt8Array::from_iter_values(
            rows.iter().map(|r| r.priority),
        )),
        opt_u64s(rows, |r| r.size_bytes),
        u64s(rows, |r| r.start_ps),
        opt_u64s(rows, |r| r.finish_ps),
        opt_u64s(rows, |r| r.fct_ps),
        opt_u64s(rows, |r| r.ideal_fct_ps),
        u64s(rows, |r| r.bytes_sent),
        u64s(rows, |r| r.bytes_received),
        u64s(rows, |r| r.packets_sent),
        u64s(rows, |r| r.packets_received),
        u64s(rows, |r| r.retransmissions),
        u64s(rows, |r| r.trims),
        u64s(rows, |r| r.bounces),
        u64s(rows, |r| r.timeouts),
        opt_u64s(rows, |r| r.sender_finish_ps),
        u64s(rows, |r| r.rtt_samples),
        opt_u64s(rows, |r| r.rtt_mean_ps),
    ]
}

/// Read every `DIR/flows/part-*.parquet`, concatenate and sort by `flow_id`
/// (stable, so ties keep part order). Temporary (`*.tmp`) and foreign files
/// are ignored.
///
/// Errors name the offending path: a missing `DIR/flows`, a directory with
/// no parts, an unreadable or corrupt part, a part whose columns or
/// `psim.schema_version` differ from this build's, or a null in a non-null
/// column.
pub fn read_flows(dir: &Path) -> Result<Vec<FlowRecord>, OutputError> {
    let mut records = Vec::new();
    for part in &FLOWS.parts(dir)? {
        read_part(part, &mut records)?;
    }
    records.sort_by_key(|r| r.flow_id);
    Ok(records)
}

/// Read one part file, appending its rows to `out`.
pub fn read_part(path: &Path, out: &mut Vec<FlowRecord>) -> Result<(), OutputError> {
    FLOWS.read_part(path, &mut |batch| append_batch(path, batch, out))?;
    Ok(())
}

fn append_batch(
    path: &Path,
    batch: &RecordBatch,
    out: &mut Vec<FlowRecord>,
) -> Result<(), OutputError> {
    let u64_col = |i| FLOWS.col::<UInt64Type>(path, batch, i);
    let flow_id = u64_col(0)?;
    let src = FLOWS.col::<UInt32Type>(path, batch, 1)?;
    let dst = FLOWS.col::<UInt32Type>(path, batch, 2)?;
    let protocol =
        batch
            .column(3)
            .as_string_opt::<i32>()
            .ok_or_else(|| OutputError::SchemaMismatch {
                path: path.to_path_buf(),
                detail: "column protocol has unexpected type".into(),
            })?;
    let priority = FLOWS.col::<UInt8Type>(path, batch, 4)?;
    let size_bytes = u64_col(5)?;
    let start_ps = u64_col(6)?;
    let finish_ps = u64_col(7)?;
    let fct_ps = u64_col(8)?;
    let ideal_fct_ps = u64_col(9)?;
    let bytes_sent = u64_col(10)?;
    let bytes_received = u64_col(11)?;
    let packets_sent = u64_col(12)?;
    let packets_received = u64_col(13)?;
    let retransmissions = u64_col(14)?;
    let trims = u64_col(15)?;
    let bounces = u64_col(16)?;
    let timeouts = u64_col(17)?;
    let sender_finish_ps = u64_col(18)?;
    let rtt_samples = u64_col(19)?;
    let rtt_mean_ps = u64_col(20)?;

    // Nulls in non-null columns were refused by `Table::read_part`.
    let opt = |a: &UInt64Array, row: usize| (!a.is_null(row)).then(|| a.value(row));
    out.reserve(batch.num_rows());
    for row in 0..batch.num_rows() {
        out.push(FlowRecord {
            flow_id: flow_id.value(row),
            src: src.value(row),
            dst: dst.value(row),
            protocol: protocol.value(row).to_string(),
            priority: priority.value(row),
            size_bytes: opt(size_bytes, row),
            start_ps: start_ps.value(row),
            finish_ps: opt(finish_ps, row),
            fct_ps: opt(fct_ps, row),
            ideal_fct_ps: opt(ideal_fct_ps, row),
            bytes_sent: bytes_sent.value(row),
            bytes_received: bytes_received.value(row),
            packets_sent: packets_sent.value(row),
            packets_received: packets_received.value(row),
            retransmissions: retransmissions.value(row),
            trims: trims.value(row),
            bounces: bounces.value(row),
            timeouts: timeouts.value(row),
            sender_finish_ps: opt(sender_finish_ps, row),
            rtt_samples: rtt_samples.value(row),
            rtt_mean_ps: opt(rtt_mean_ps, row),
        });
    }
    Ok(())
}

/// Canonical CSV of `records`: a header of the schema's column names, then one
/// line per record sorted by `flow_id` (stable), `\n` line endings, integers
/// in decimal, an empty field for null. Text is quoted (RFC 4180) only when it
/// contains a comma, quote or line break. Two runs are equivalent exactly when
/// their canonical CSVs are byte-identical, whatever their shard count.
pub fn flows_to_csv(records: &[FlowRecord], w: &mut dyn Write) -> std::io::Result<()> {
    let header: Vec<&str> = FLOWS.columns.iter().map(|c| c.0).collect();
    writeln!(w, "{}", header.join(","))?;

    let mut order: Vec<&FlowRecord> = records.iter().collect();
    order.sort_by_key(|r| r.flow_id);

    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in order {
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.flow_id,
            r.src,
            r.dst,
            csv_text(&r.protocol),
            r.priority,
            opt(r.size_bytes),
            r.start_ps,
            opt(r.finish_ps),
            opt(r.fct_ps),
            opt(r.ideal_fct_ps),
            r.bytes_sent,
            r.bytes_received,
            r.packets_sent,
            r.packets_received,
            r.retransmissions,
            r.trims,
            r.bounces,
            r.timeouts,
            opt(r.sender_finish_ps),
            r.rtt_samples,
            opt(r.rtt_mean_ps),
        )?;
    }
    Ok(())
}

fn csv_text(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;
    use std::fs::{self, File};

    fn to_batch(
        schema: &SchemaRef,
        rows: &[&FlowRecord],
    ) -> Result<RecordBatch, arrow::error::ArrowError> {
        RecordBatch::try_new(schema.clone(), to_columns(rows))
    }

    fn rec(flow_id: u64, finished: bool) -> FlowRecord {
        FlowRecord {
            flow_id,
            src: (flow_id % 7) as u32,
            dst: (flow_id % 5) as u32 + 100,
            protocol: if flow_id.is_multiple_of(2) {
                "ndp"
            } else {
                "tcp"
            }
            .to_string(),
            priority: (flow_id % 3) as u8,
            size_bytes: (!flow_id.is_multiple_of(4)).then_some(1000 * flow_id),
            start_ps: 10 * flow_id,
            finish_ps: finished.then_some(10 * flow_id + 5000),
            fct_ps: finished.then_some(5000),
            ideal_fct_ps: flow_id.is_multiple_of(3).then_some(4000),
            bytes_sent: 1000 * flow_id + 1,
            bytes_received: 1000 * flow_id,
            packets_sent: flow_id + 2,
            packets_received: flow_id + 1,
            retransmissions: flow_id % 2,
            trims: flow_id % 3,
            bounces: flow_id % 5,
            timeouts: flow_id % 11,
            sender_finish_ps: (finished && !flow_id.is_multiple_of(2))
                .then_some(10 * flow_id + 5500),
            rtt_samples: flow_id % 7,
            rtt_mean_ps: (!flow_id.is_multiple_of(7)).then_some(3000 + flow_id),
        }
    }

    fn extreme() -> FlowRecord {
        FlowRecord {
            flow_id: u64::MAX,
            src: u32::MAX,
            dst: 0,
            protocol: "x,\"y\"".to_string(),
            priority: u8::MAX,
            size_bytes: Some(u64::MAX),
            start_ps: u64::MAX,
            finish_ps: None,
            fct_ps: None,
            ideal_fct_ps: Some(u64::MAX),
            bytes_sent: u64::MAX,
            bytes_received: 0,
            packets_sent: u64::MAX,
            packets_received: 0,
            retransmissions: u64::MAX,
            trims: 0,
            bounces: u64::MAX,
            timeouts: 0,
            sender_finish_ps: Some(u64::MAX),
            rtt_samples: u64::MAX,
            rtt_mean_ps: Some(u64::MAX),
        }
    }

    fn dir_names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Pinned literally so that any change to the table is deliberate (and
    /// comes with a FLOWS_SCHEMA_VERSION bump and a docs/outputs.md update).
    #[test]
    fn schema_is_pinned() {
        let expected: [(&str, DataType, bool); 21] = [
            ("flow_id", DataType::UInt64, false),
            ("src", DataType::UInt32, false),
            ("dst", DataType::UInt32, false),
            ("protocol", DataType::Utf8, false),
            ("priority", DataType::UInt8, false),
            ("size_bytes", DataType::UInt64, true),
            ("start_ps", DataType::UInt64, false),
            ("finish_ps", DataType::UInt64, true),
            ("fct_ps", DataType::UInt64, true),
            ("ideal_fct_ps", DataType::UInt64, true),
            ("bytes_sent", DataType::UInt64, false),
            ("bytes_received", DataType::UInt64, false),
            ("packets_sent", DataType::UInt64, false),
            ("packets_received", DataType::UInt64, false),
            ("retransmissions", DataType::UInt64, false),
            ("trims", DataType::UInt64, false),
            ("bounces", DataType::UInt64, false),
            ("timeouts", DataType::UInt64, false),
            ("sender_finish_ps", DataType::UInt64, true),
            ("rtt_samples", DataType::UInt64, false),
            ("rtt_mean_ps", DataType::UInt64, true),
        ];
        let schema = flows_schema();
        let got: Vec<(String, DataType, bool)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect();
        let want: Vec<(String, DataType, bool)> = expected
            .iter()
            .map(|(n, t, b)| (n.to_string(), t.clone(), *b))
            .collect();
        assert_eq!(got, want);
        assert_eq!(FLOWS_SCHEMA_VERSION, 3);
    }

    #[test]
    fn round_trip_across_parts_sorted_with_nulls() {
        let t = tempfile::tempdir().unwrap();
        // Interleaved ids, each part given in unsorted order.
        let part0: Vec<FlowRecord> = [8, 0, 4, 6, 2].iter().map(|&i| rec(i, i != 4)).collect();
        let part1: Vec<FlowRecord> = [7, 1, 5, 3].iter().map(|&i| rec(i, i != 5)).collect();
        let part2 = vec![extreme()];
        let p0 = write_flows_part(t.path(), 0, &part0).unwrap();
        let p1 = write_flows_part(t.path(), 1, &part1).unwrap();
        write_flows_part(t.path(), 12345, &part2).unwrap();
        assert_eq!(p0, t.path().join("flows/part-00000.parquet"));
        assert_eq!(p1, t.path().join("flows/part-00001.parquet"));

        let got = read_flows(t.path()).unwrap();
        let mut want: Vec<FlowRecord> = part0.into_iter().chain(part1).chain(part2).collect();
        want.sort_by_key(|r| r.flow_id);
        assert_eq!(got, want);
        // Nulls really are nulls, not zeros.
        assert!(got
            .iter()
            .any(|r| r.finish_ps.is_none() && r.fct_ps.is_none()));
        assert!(got.iter().any(|r| r.size_bytes.is_none()));
        assert!(got.iter().any(|r| r.ideal_fct_ps.is_none()));
        assert!(got
            .iter()
            .any(|r| r.finish_ps.is_some() && r.sender_finish_ps.is_none()));
        assert_eq!(got.last().unwrap(), &extreme());
    }

    #[test]
    fn many_rows_span_several_batches() {
        let t = tempfile::tempdir().unwrap();
        let n = WRITE_BATCH_ROWS as u64 + 10;
        let recs: Vec<FlowRecord> = (0..n).rev().map(|i| rec(i, i % 9 != 0)).collect();
        write_flows_part(t.path(), 3, &recs).unwrap();
        let got = read_flows(t.path()).unwrap();
        assert_eq!(got.len() as u64, n);
        assert!(got.windows(2).all(|w| w[0].flow_id < w[1].flow_id));
        assert_eq!(got[12345], rec(12345, 12345 % 9 != 0));
    }

    #[test]
    fn file_carries_schema_version_and_zstd() {
        let t = tempfile::tempdir().unwrap();
        let p = write_flows_part(t.path(), 0, &[rec(1, true)]).unwrap();
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap();
        let kv = b.metadata().file_metadata().key_value_metadata().unwrap();
        assert!(kv
            .iter()
            .any(|e| e.key == "psim.schema_version" && e.value.as_deref() == Some("3")));
        let col = b.metadata().row_group(0).column(0);
        assert!(matches!(col.compression(), Compression::ZSTD(_)));
    }

    #[test]
    fn empty_part_is_valid() {
        let t = tempfile::tempdir().unwrap();
        let p = write_flows_part(t.path(), 7, &[]).unwrap();
        assert!(p.is_file());
        assert_eq!(read_flows(t.path()).unwrap(), vec![]);
        // The schema is in the file even with no rows.
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap();
        assert_eq!(b.schema().fields(), flows_schema().fields());
        // An empty part next to a full one contributes nothing.
        write_flows_part(t.path(), 0, &[rec(3, true)]).unwrap();
        assert_eq!(read_flows(t.path()).unwrap(), vec![rec(3, true)]);
    }

    #[test]
    fn writes_leave_no_tmp_files_and_overwrite_in_place() {
        let t = tempfile::tempdir().unwrap();
        write_flows_part(t.path(), 0, &[rec(1, true)]).unwrap();
        write_flows_part(t.path(), 0, &[rec(2, false)]).unwrap();
        write_flows_part(t.path(), 1, &[]).unwrap();
        assert_eq!(
            dir_names(&t.path().join("flows")),
            vec!["part-00000.parquet", "part-00001.parquet"]
        );
        assert_eq!(read_flows(t.path()).unwrap(), vec![rec(2, false)]);
    }

    #[test]
    fn identical_input_gives_identical_bytes() {
        let t = tempfile::tempdir().unwrap();
        let recs: Vec<FlowRecord> = (0..50).map(|i| rec(i, true)).collect();
        let mut shuffled = recs.clone();
        shuffled.reverse();
        let a = write_flows_part(t.path(), 0, &recs).unwrap();
        let b = write_flows_part(t.path(), 1, &shuffled).unwrap();
        assert_eq!(fs::read(a).unwrap(), fs::read(b).unwrap());
    }

    #[test]
    fn stray_tmp_and_foreign_files_are_ignored() {
        let t = tempfile::tempdir().unwrap();
        write_flows_part(t.path(), 0, &[rec(1, true)]).unwrap();
        let flows = t.path().join("flows");
        fs::write(flows.join("part-00001.parquet.tmp"), b"half written").unwrap();
        fs::write(flows.join("README"), b"x").unwrap();
        assert_eq!(read_flows(t.path()).unwrap(), vec![rec(1, true)]);
    }

    #[test]
    fn missing_flows_dir_is_named() {
        let t = tempfile::tempdir().unwrap();
        let err = read_flows(t.path()).unwrap_err();
        assert!(matches!(err, OutputError::MissingDir { .. }), "{err:?}");
        let flows = t.path().join("flows");
        assert_eq!(err.path(), flows.as_path());
        assert!(err.to_string().contains(&flows.display().to_string()));
    }

    #[test]
    fn flows_dir_without_parts_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("flows")).unwrap();
        let err = read_flows(t.path()).unwrap_err();
        assert!(matches!(err, OutputError::NoParts { .. }), "{err:?}");
        assert!(err
            .to_string()
            .contains(&t.path().join("flows").display().to_string()));
    }

    fn assert_names_file(err: &OutputError, file: &Path) {
        let msg = err.to_string();
        assert!(msg.contains(&file.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'), "multi-line message: {msg}");
        assert_eq!(err.path(), file);
    }

    #[test]
    fn truncated_part_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        write_flows_part(t.path(), 0, &[rec(1, true)]).unwrap();
        let recs: Vec<FlowRecord> = (0..100).map(|i| rec(i + 10, true)).collect();
        let bad = write_flows_part(t.path(), 1, &recs).unwrap();
        let bytes = fs::read(&bad).unwrap();
        for keep in [0, 3, bytes.len() / 2, bytes.len() - 1] {
            fs::write(&bad, &bytes[..keep]).unwrap();
            let err = read_flows(t.path()).unwrap_err();
            assert_names_file(&err, &bad);
        }
    }

    #[test]
    fn random_bytes_part_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let bad = t.path().join("flows/part-00002.parquet");
        fs::create_dir_all(bad.parent().unwrap()).unwrap();
        // Deterministic pseudo-random bytes (xorshift), long enough to look
        // like a file, plus a variant that even ends in the Parquet magic.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut junk: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        fs::write(&bad, &junk).unwrap();
        assert_names_file(&read_flows(t.path()).unwrap_err(), &bad);
        junk.extend_from_slice(b"PAR1");
        fs::write(&bad, &junk).unwrap();
        assert_names_file(&read_flows(t.path()).unwrap_err(), &bad);
    }

    #[test]
    fn part_that_is_a_directory_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let bad = t.path().join("flows/part-00000.parquet");
        fs::create_dir_all(&bad).unwrap();
        assert_names_file(&read_flows(t.path()).unwrap_err(), &bad);
    }

    fn write_custom(path: &Path, schema: SchemaRef, cols: Vec<ArrayRef>, version: Option<&str>) {
        let kv = version.map(|v| vec![KeyValue::new(SCHEMA_VERSION_KEY.into(), v.to_string())]);
        let props = WriterProperties::builder()
            .set_key_value_metadata(kv)
            .build();
        let file = File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
        w.write(&RecordBatch::try_new(schema, cols).unwrap())
            .unwrap();
        w.close().unwrap();
    }

    #[test]
    fn schema_mismatch_is_an_error_naming_the_file() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("flows")).unwrap();
        let bad = t.path().join("flows/part-00000.parquet");
        let schema = Arc::new(Schema::new(vec![Field::new(
            "flow_id",
            DataType::Int64,
            false,
        )]));
        let cols: Vec<ArrayRef> = vec![Arc::new(arrow::array::Int64Array::from(vec![1i64]))];
        write_custom(&bad, schema, cols, Some("3"));
        let err = read_flows(t.path()).unwrap_err();
        assert!(matches!(err, OutputError::SchemaMismatch { .. }), "{err:?}");
        assert_names_file(&err, &bad);
    }

    #[test]
    fn wrong_type_or_nullability_is_a_mismatch() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("flows")).unwrap();
        let bad = t.path().join("flows/part-00000.parquet");
        // Same names, but flow_id made nullable.
        let mut fields: Vec<Field> = flows_schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[0] = Field::new("flow_id", DataType::UInt64, true);
        let schema = Arc::new(Schema::new(fields));
        let batch = to_batch(&flows_schema(), &[&rec(1, true)]).unwrap();
        write_custom(&bad, schema, batch.columns().to_vec(), Some("3"));
        let err = read_flows(t.path()).unwrap_err();
        assert!(matches!(err, OutputError::SchemaMismatch { .. }), "{err:?}");
        assert!(err.to_string().contains("flow_id"), "{err}");
        assert_names_file(&err, &bad);
    }

    #[test]
    fn wrong_or_missing_schema_version_is_refused() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("flows")).unwrap();
        let bad = t.path().join("flows/part-00000.parquet");
        let batch = to_batch(&flows_schema(), &[&rec(1, true)]).unwrap();
        for version in [Some("2"), Some("4"), None] {
            write_custom(&bad, flows_schema(), batch.columns().to_vec(), version);
            let err = read_flows(t.path()).unwrap_err();
            assert!(matches!(err, OutputError::SchemaVersion { .. }), "{err:?}");
            assert_names_file(&err, &bad);
        }
    }

    #[test]
    fn canonical_csv_for_hand_made_records() {
        let a = FlowRecord {
            flow_id: 42,
            src: 3,
            dst: 17,
            protocol: "ndp".into(),
            priority: 1,
            size_bytes: Some(90000),
            start_ps: 1_000_000,
            finish_ps: Some(8_500_000),
            fct_ps: Some(7_500_000),
            ideal_fct_ps: Some(7_200_000),
            bytes_sent: 94500,
            bytes_received: 90000,
            packets_sent: 21,
            packets_received: 20,
            retransmissions: 1,
            trims: 2,
            bounces: 0,
            timeouts: 0,
            sender_finish_ps: Some(9_100_000),
            rtt_samples: 20,
            rtt_mean_ps: Some(13_000_000),
        };
        let b = FlowRecord {
            flow_id: 7,
            src: 0,
            dst: 1,
            protocol: "cbr".into(),
            priority: 0,
            size_bytes: None,
            start_ps: 0,
            finish_ps: None,
            fct_ps: None,
            ideal_fct_ps: None,
            bytes_sent: 4500,
            bytes_received: 3000,
            packets_sent: 5,
            packets_received: 3,
            retransmissions: 0,
            trims: 0,
            bounces: 0,
            timeouts: 0,
            sender_finish_ps: None,
            rtt_samples: 0,
            rtt_mean_ps: None,
        };
        let mut out = Vec::new();
        flows_to_csv(&[a, b], &mut out).unwrap();
        let expected = "\
flow_id,src,dst,protocol,priority,size_bytes,start_ps,finish_ps,fct_ps,ideal_fct_ps,bytes_sent,bytes_received,packets_sent,packets_received,retransmissions,trims,bounces,timeouts,sender_finish_ps,rtt_samples,rtt_mean_ps
7,0,1,cbr,0,,0,,,,4500,3000,5,3,0,0,0,0,,0,
42,3,17,ndp,1,90000,1000000,8500000,7500000,7200000,94500,90000,21,20,1,2,0,0,9100000,20,13000000
";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn csv_quotes_awkward_text_and_handles_empty_input() {
        let mut out = Vec::new();
        flows_to_csv(&[extreme()], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().nth(1).unwrap();
        assert!(line.starts_with("18446744073709551615,4294967295,0,\"x,\"\"y\"\"\",255,"));

        let mut out = Vec::new();
        flows_to_csv(&[], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);
    }

    #[test]
    fn csv_of_parts_does_not_depend_on_sharding() {
        let t1 = tempfile::tempdir().unwrap();
        let t2 = tempfile::tempdir().unwrap();
        let recs: Vec<FlowRecord> = (0..30).map(|i| rec(i, i % 4 != 0)).collect();
        write_flows_part(t1.path(), 0, &recs).unwrap();
        for (k, chunk) in recs.chunks(7).enumerate() {
            write_flows_part(t2.path(), k as u32, chunk).unwrap();
        }
        let (mut c1, mut c2) = (Vec::new(), Vec::new());
        flows_to_csv(&read_flows(t1.path()).unwrap(), &mut c1).unwrap();
        flows_to_csv(&read_flows(t2.path()).unwrap(), &mut c2).unwrap();
        assert_eq!(c1, c2);
    }
}
