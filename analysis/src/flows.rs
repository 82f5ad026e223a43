//! The flows table as Polars sees it: the columns the analysis reads (pinned),
//! per-part validation with errors that name the file, and the lazy scan.

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use psim::trace::{FLOWS_SCHEMA_VERSION, SCHEMA_VERSION_KEY};

use crate::error::{one_line, AnalysisError, Result};
use crate::runs::Run;

/// The columns of `flows/part-*.parquet` the analysis reads, with their Arrow
/// types. A part lacking one of them, or holding it with another type, is a
/// [`AnalysisError::Schema`] naming the part. A test pins this list against
/// `psim::trace::flows_schema()`, so a change to psim's table that breaks the
/// analysis is caught at build time rather than misread.
pub const REQUIRED_COLUMNS: [(&str, ArrowDataType); 14] = [
    ("flow_id", ArrowDataType::UInt64),
    ("src", ArrowDataType::UInt32),
    ("dst", ArrowDataType::UInt32),
    ("size_bytes", ArrowDataType::UInt64),
    ("start_ps", ArrowDataType::UInt64),
    ("finish_ps", ArrowDataType::UInt64),
    ("fct_ps", ArrowDataType::UInt64),
    ("ideal_fct_ps", ArrowDataType::UInt64),
    ("bytes_received", ArrowDataType::UInt64),
    ("retransmissions", ArrowDataType::UInt64),
    ("trims", ArrowDataType::UInt64),
    ("bounces", ArrowDataType::UInt64),
    ("timeouts", ArrowDataType::UInt64),
    ("sender_finish_ps", ArrowDataType::UInt64),
];

/// Checks one part: it opens, its Parquet footer decodes, its
/// `psim.schema_version` is the one this build reads, and it has every
/// [`REQUIRED_COLUMNS`] entry with the right type. Returns its row count.
pub fn validate_part(path: &Path) -> Result<usize> {
    let file = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            AnalysisError::MissingPart {
                path: path.to_path_buf(),
            }
        } else {
            AnalysisError::io(path, e)
        }
    })?;
    let pq = |e: PolarsError| AnalysisError::Parquet {
        path: path.to_path_buf(),
        detail: one_line(e),
    };
    let mut reader = ParquetReader::new(file);
    let metadata = reader.get_metadata().map_err(pq)?;
    let rows = metadata.num_rows;
    let version = metadata
        .key_value_metadata()
        .as_ref()
        .and_then(|kv| kv.iter().find(|k| k.key == SCHEMA_VERSION_KEY))
        .and_then(|k| k.value.clone());
    if version.as_deref() != Some(FLOWS_SCHEMA_VERSION.to_string().as_str()) {
        return Err(AnalysisError::Schema {
            path: path.to_path_buf(),
            detail: format!(
                "{SCHEMA_VERSION_KEY} is {}, this build reads {FLOWS_SCHEMA_VERSION}",
                version.as_deref().unwrap_or("missing")
            ),
        });
    }
    let schema = reader.schema().map_err(pq)?;
    for (name, ty) in &REQUIRED_COLUMNS {
        match schema.get(name) {
            None => {
                return Err(AnalysisError::Schema {
                    path: path.to_path_buf(),
                    detail: format!("column `{name}` is missing"),
                })
            }
            Some(f) if f.dtype() != ty => {
                return Err(AnalysisError::Schema {
                    path: path.to_path_buf(),
                    detail: format!("column `{name}` is {:?}, expected {ty:?}", f.dtype()),
                })
            }
            Some(_) => {}
        }
    }
    Ok(rows)
}

fn scan_paths(paths: &[PathBuf]) -> PolarsResult<LazyFrame> {
    let paths: Vec<PlRefPath> = paths
        .iter()
        .map(|p| PlRefPath::try_from_path(p))
        .collect::<PolarsResult<_>>()?;
    // A sweep names its task directories `key=value,...`, which polars
    // would read as hive partitions (and, trying to parse a value such as
    // `load30` as a date, panic): the flows table is the only source.
    let args = ScanArgsParquet {
        glob: false,
        hive_options: HiveOptions::new_disabled(),
        ..Default::default()
    };
    let cols: Vec<Expr> = REQUIRED_COLUMNS.iter().map(|(n, _)| col(*n)).collect();
    Ok(LazyFrame::scan_parquet_files(paths.into(), args)?.select(cols))
}

/// A run's flows as one lazy frame over all its parts, restricted to
/// [`REQUIRED_COLUMNS`]. Validates every part first (see [`validate_part`]).
pub fn scan_flows(run: &Run) -> Result<LazyFrame> {
    for p in &run.parts {
        validate_part(p)?;
    }
    scan_paths(&run.parts).map_err(|e| AnalysisError::Polars {
        context: format!("scanning {}", run.dir.display()),
        detail: one_line(e),
    })
}

/// Collects a query over a run's flows. If Polars fails, each part is read
/// alone to find the one at fault (a part whose footer is fine but whose data
/// pages are corrupt), so that the error names that file.
pub fn collect(run: &Run, lf: LazyFrame, what: &str) -> Result<DataFrame> {
    lf.collect().map_err(|e| {
        for p in &run.parts {
            if let Err(pe) = scan_paths(std::slice::from_ref(p)).and_then(|l| l.collect()) {
                return AnalysisError::Parquet {
                    path: p.clone(),
                    detail: one_line(pe),
                };
            }
        }
        AnalysisError::Polars {
            context: format!("computing {what} for {}", run.dir.display()),
            detail: one_line(e),
        }
    })
}
