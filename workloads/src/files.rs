//! CSV and Parquet flow lists.
//!
//! Schema (both formats), one row per flow:
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `src` | unsigned integer | source host |
//! | `dst` | unsigned integer | destination host |
//! | `size_bytes` | unsigned integer, empty / null allowed | bytes; empty = long-lived flow |
//! | `start_ps` | unsigned integer | start time in picoseconds |
//! | `priority` | unsigned integer 0..=255, optional column | 0 normal, 1 prioritised |
//! | `id`, `class` | optional, ignored on input | written by [`write_flows_csv`] |
//!
//! Columns may come in any order; any other column is an error (so a misspelt `start_us` is not
//! silently dropped). CSV needs a header row; fields are plain numbers (no quoting).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

use crate::error::WorkloadError;
use crate::FlowSpec;

/// One row of a flow list, before ids are assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedFlow {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes; `None` = long-lived.
    pub size_bytes: Option<u64>,
    /// Start time in ps.
    pub start_ps: u64,
    /// 0 normal, 1 prioritised.
    pub priority: u8,
}

const KNOWN: [&str; 7] = [
    "src",
    "dst",
    "size_bytes",
    "start_ps",
    "priority",
    "id",
    "class",
];

/// Reads a CSV flow list.
pub fn read_flows_csv(path: &Path) -> Result<Vec<ListedFlow>, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_flows_csv(&text, path)
}

/// Parses CSV flow-list text; `file` names the source in errors.
pub fn parse_flows_csv(text: &str, file: &Path) -> Result<Vec<ListedFlow>, WorkloadError> {
    let err = |line: usize, reason: String| WorkloadError::CsvParse {
        file: file.to_path_buf(),
        line,
        reason,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Err(err(1, "missing header row".into()));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut col = [None::<usize>; 5];
    for (i, n) in names.iter().enumerate() {
        match KNOWN.iter().position(|k| k == n) {
            Some(k) if k < 5 => {
                if col[k].is_some() {
                    return Err(err(hline + 1, format!("column `{n}` appears twice")));
                }
                col[k] = Some(i);
            }
            Some(_) => {}
            None => {
                return Err(err(
                    hline + 1,
                    format!(
                        "unknown column `{n}` (expected src, dst, size_bytes, start_ps, priority)"
                    ),
                ))
            }
        }
    }
    for (k, name) in KNOWN.iter().take(4).enumerate() {
        if col[k].is_none() {
            return Err(err(hline + 1, format!("missing column `{name}`")));
        }
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(err(
                line,
                format!("{} fields, header has {}", fields.len(), names.len()),
            ));
        }
        let num = |k: usize| -> Result<Option<u64>, WorkloadError> {
            let Some(c) = col[k] else { return Ok(None) };
            let f = fields[c];
            if f.is_empty() {
                return Ok(None);
            }
            f.parse::<u64>().map(Some).map_err(|_| {
                err(
                    line,
                    format!("`{}` value `{f}` is not an unsigned integer", KNOWN[k]),
                )
            })
        };
        let need = |k: usize| -> Result<u64, WorkloadError> {
            num(k)?.ok_or_else(|| err(line, format!("`{}` is empty", KNOWN[k])))
        };
        let host = |k: usize| -> Result<u32, WorkloadError> {
            u32::try_from(need(k)?).map_err(|_| err(line, format!("`{}` is too large", KNOWN[k])))
        };
        let size = num(2)?;
        let priority = match num(4)? {
            None => 0,
            Some(p) => {
                u8::try_from(p).map_err(|_| err(line, format!("`priority` {p} exceeds 255")))?
            }
        };
        out.push(ListedFlow {
            src: host(0)?,
            dst: host(1)?,
            size_bytes: size.filter(|&s| s > 0),
            start_ps: need(3)?,
            priority,
        });
    }
    Ok(out)
}

/// Writes flows as CSV with the header `id,src,dst,size_bytes,start_ps,class,priority`
/// (long-lived flows get an empty `size_bytes`). The output reads back with [`read_flows_csv`].
pub fn write_flows_csv(flows: &[FlowSpec], mut w: impl Write) -> std::io::Result<()> {
    writeln!(w, "id,src,dst,size_bytes,start_ps,class,priority")?;
    for f in flows {
        let size = f.size_bytes.map(|s| s.to_string()).unwrap_or_default();
        writeln!(
            w,
            "{},{},{},{},{},{},{}",
            f.id, f.src, f.dst, size, f.start_ps, f.class, f.priority
        )?;
    }
    Ok(())
}

/// Writes flows as Parquet with columns `id` (u64), `src`, `dst` (u32), `size_bytes` (u64,
/// null = long-lived), `start_ps` (u64), `class` (u16), `priority` (u8).
pub fn write_flows_parquet(
    flows: &[FlowSpec],
    w: impl Write + Send,
) -> Result<(), parquet::errors::ParquetError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("src", DataType::UInt32, false),
        Field::new("dst", DataType::UInt32, false),
        Field::new("size_bytes", DataType::UInt64, true),
        Field::new("start_ps", DataType::UInt64, false),
        Field::new("class", DataType::UInt16, false),
        Field::new("priority", DataType::UInt8, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(flows.iter().map(|f| f.id))),
        Arc::new(UInt32Array::from_iter_values(flows.iter().map(|f| f.src))),
        Arc::new(UInt32Array::from_iter_values(flows.iter().map(|f| f.dst))),
        Arc::new(UInt64Array::from_iter(flows.iter().map(|f| f.size_bytes))),
        Arc::new(UInt64Array::from_iter_values(
            flows.iter().map(|f| f.start_ps),
        )),
        Arc::new(UInt16Array::from_iter_values(flows.iter().map(|f| f.class))),
        Arc::new(UInt8Array::from_iter_values(
            flows.iter().map(|f| f.priority),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols)?;
    let mut writer = ArrowWriter::try_new(w, schema, None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(())
}

/// Reads a Parquet flow list (same schema as CSV; any unsigned or non-negative signed integer
/// column type is accepted).
pub fn read_flows_parquet(path: &Path) -> Result<Vec<ListedFlow>, WorkloadError> {
    let perr = |reason: String| WorkloadError::Parquet {
        file: path.to_path_buf(),
        reason,
    };
    let f = File::open(path).map_err(|source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| perr(e.to_string()))?;
    let schema = builder.schema().clone();
    let mut col = [None::<usize>; 5];
    for (i, field) in schema.fields().iter().enumerate() {
        match KNOWN.iter().position(|k| k == field.name()) {
            Some(k) if k < 5 => col[k] = Some(i),
            Some(_) => {}
            None => return Err(perr(format!("unknown column `{}`", field.name()))),
        }
    }
    for (k, name) in KNOWN.iter().take(4).enumerate() {
        if col[k].is_none() {
            return Err(perr(format!("missing column `{name}`")));
        }
    }
    let reader = builder.build().map_err(|e| perr(e.to_string()))?;
    let mut out = Vec::new();
    let mut row0 = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| perr(e.to_string()))?;
        let mut arrays: Vec<Option<UInt64Array>> = Vec::with_capacity(5);
        for (k, c) in col.iter().enumerate() {
            arrays.push(match c {
                None => None,
                Some(c) => {
                    let a = cast(batch.column(*c), &DataType::UInt64)
                        .map_err(|e| perr(format!("column `{}`: {e}", KNOWN[k])))?;
                    let a = a
                        .as_any()
                        .downcast_ref::<UInt64Array>()
                        .cloned()
                        .ok_or_else(|| perr(format!("column `{}` is not numeric", KNOWN[k])))?;
                    // Casting a negative signed value to unsigned yields null; reject it unless
                    // the column itself had a null there (only size_bytes may be null).
                    if a.null_count() != batch.column(*c).null_count() {
                        return Err(perr(format!("column `{}` holds negative values", KNOWN[k])));
                    }
                    Some(a)
                }
            });
        }
        for r in 0..batch.num_rows() {
            let get = |k: usize| -> Option<u64> {
                arrays[k]
                    .as_ref()
                    .and_then(|a| (!a.is_null(r)).then(|| a.value(r)))
            };
            let row = row0 + r;
            let need =
                |k: usize| get(k).ok_or_else(|| perr(format!("row {row}: `{}` is null", KNOWN[k])));
            let host = |k: usize| {
                need(k).and_then(|v| {
                    u32::try_from(v)
                        .map_err(|_| perr(format!("row {row}: `{}` is too large", KNOWN[k])))
                })
            };
            let priority = match get(4) {
                None => 0,
                Some(p) => u8::try_from(p)
                    .map_err(|_| perr(format!("row {row}: `priority` {p} exceeds 255")))?,
            };
            out.push(ListedFlow {
                src: host(0)?,
                dst: host(1)?,
                size_bytes: get(2).filter(|&s| s > 0),
                start_ps: need(3)?,
                priority,
            });
        }
        row0 += batch.num_rows();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_errors_name_line_and_column() {
        let p = Path::new("f.csv");
        let e = parse_flows_csv("src,dst,size_bytes,start_ps\n0,1,5,0\n0,x,5,0\n", p).unwrap_err();
        assert!(e.to_string().starts_with("f.csv:3:"), "{e}");
        let e = parse_flows_csv("src,dst,size_bytes,start_us\n", p).unwrap_err();
        assert!(e.to_string().contains("start_us"), "{e}");
        let ok = parse_flows_csv("dst,src,start_ps,size_bytes\n1,0,7,\n", p).unwrap();
        assert_eq!(
            ok,
            vec![ListedFlow {
                src: 0,
                dst: 1,
                size_bytes: None,
                start_ps: 7,
                priority: 0
            }]
        );
    }
}
