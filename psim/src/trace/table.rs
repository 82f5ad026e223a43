//! Shared plumbing of psim's Parquet tables (flows, packet events, queue
//! series): one part per shard under `DIR/<table>/`, written atomically and
//! tagged with a schema version; read back with every error naming the file.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use arrow::array::{AsArray, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

use super::flows::SCHEMA_VERSION_KEY;
use super::outdir::write_atomic;
use super::OutputError;

/// A table's layout: subdirectory, columns and version.
pub struct Table {
    /// Subdirectory of the output directory.
    pub dir: &'static str,
    /// (name, type), in order.
    pub columns: &'static [(&'static str, DataType)],
    /// The columns that may hold nulls; every other column is refused with a
    /// null in it, so a damaged file is never read as zeros.
    pub nullable: &'static [&'static str],
    /// Bumped on any change to the columns.
    pub version: u32,
}

impl Table {
    /// The Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), self.nullable.contains(n)))
                .collect::<Vec<_>>(),
        ))
    }

    /// `DIR/<table>/part-NNNNN.parquet`.
    pub fn part_path(&self, dir: &Path, part: u32) -> PathBuf {
        dir.join(self.dir).join(format!("part-{part:05}.parquet"))
    }

    /// Manifest entry of part `part`.
    pub fn part_name(&self, part: u32) -> String {
        format!("{}/part-{part:05}.parquet", self.dir)
    }

    /// Writes part `part` atomically; `batches` yields the record batches
    /// (already in the part's row order). Extra key/value metadata is added
    /// next to the schema version.
    pub fn write_part(
        &self,
        dir: &Path,
        part: u32,
        extra: &[(&str, String)],
        batches: &mut dyn Iterator<Item = Vec<arrow::array::ArrayRef>>,
    ) -> Result<PathBuf, OutputError> {
        let sub = dir.join(self.dir);
        fs::create_dir_all(&sub).map_err(|e| OutputError::io(&sub, e))?;
        let path = self.part_path(dir, part);
        let mut kv = vec![KeyValue::new(
            SCHEMA_VERSION_KEY.to_string(),
            self.version.to_string(),
        )];
        kv.extend(
            extra
                .iter()
                .map(|(k, v)| KeyValue::new(k.to_string(), v.clone())),
        );
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_key_value_metadata(Some(kv))
            .build();
        let schema = self.schema();
        write_atomic(&path, |file| {
            let pq_err = |source| OutputError::Parquet {
                path: path.clone(),
                source,
            };
            let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(pq_err)?;
            for cols in batches {
                let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|source| {
                    OutputError::Arrow {
                        path: path.clone(),
                        source,
                    }
                })?;
                w.write(&batch).map_err(pq_err)?;
            }
            w.close().map_err(pq_err)?;
            Ok(())
        })
    }

    /// The `part-*.parquet` files of `DIR/<table>`, sorted by name; an error
    /// if the directory is missing or holds no part.
    pub fn parts(&self, dir: &Path) -> Result<Vec<PathBuf>, OutputError> {
        let sub = dir.join(self.dir);
        if !sub.is_dir() {
            return Err(if sub.exists() {
                OutputError::NotADirectory { path: sub }
            } else {
                OutputError::MissingDir { path: sub }
            });
        }
        let mut parts = Vec::new();
        for entry in fs::read_dir(&sub).map_err(|e| OutputError::io(&sub, e))? {
            let entry = entry.map_err(|e| OutputError::io(&sub, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("part-") && name.ends_with(".parquet") {
                parts.push(entry.path());
            }
        }
        if parts.is_empty() {
            return Err(OutputError::NoParts { path: sub });
        }
        parts.sort();
        Ok(parts)
    }

    /// Reads one part: checks its version and columns, then hands each batch
    /// to `each`. Returns the file's key/value metadata.
    pub fn read_part(
        &self,
        path: &Path,
        each: &mut dyn FnMut(&RecordBatch) -> Result<(), OutputError>,
    ) -> Result<Vec<(String, String)>, OutputError> {
        let file = File::open(path).map_err(|e| OutputError::io(path, e))?;
        let pq_err = |source| OutputError::Parquet {
            path: path.to_path_buf(),
            source,
        };
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq_err)?;
        let kv: Vec<(String, String)> = builder
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .into_iter()
            .flatten()
            .map(|e| (e.key.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        let found = kv
            .iter()
            .find(|(k, _)| k == SCHEMA_VERSION_KEY)
            .map(|(_, v)| v.clone());
        if found.as_deref() != Some(self.version.to_string().as_str()) {
            return Err(OutputError::SchemaVersion {
                path: path.to_path_buf(),
                found,
                expected: self.version,
            });
        }
        self.check_columns(path, builder.schema())?;
        for batch in builder.build().map_err(pq_err)? {
            let batch = batch.map_err(|source| OutputError::Arrow {
                path: path.to_path_buf(),
                source,
            })?;
            for (i, c) in batch.columns().iter().enumerate() {
                if c.null_count() > 0 && !self.nullable.contains(&self.columns[i].0) {
                    return Err(OutputError::InvalidData {
                        path: path.to_path_buf(),
                        detail: format!("null value in non-null column {}", self.columns[i].0),
                    });
                }
            }
            each(&batch)?;
        }
        Ok(kv)
    }

    /// Compares columns by name, type and nullability (metadata is ignored:
    /// the reader adds the file's key/value pairs to it).
    fn check_columns(&self, path: &Path, found: &SchemaRef) -> Result<(), OutputError> {
        let mismatch = |detail: String| OutputError::SchemaMismatch {
            path: path.to_path_buf(),
            detail,
        };
        let describe = |f: &Field| {
            format!(
                "{} {}{}",
                f.name(),
                f.data_type(),
                if f.is_nullable() { " nullable" } else { "" }
            )
        };
        let expected = self.schema();
        if found.fields().len() != expected.fields().len() {
            return Err(mismatch(format!(
                "expected {} columns, found {}",
                expected.fields().len(),
                found.fields().len()
            )));
        }
        for (i, (e, f)) in expected.fields().iter().zip(found.fields()).enumerate() {
            if e.name() != f.name()
                || e.data_type() != f.data_type()
                || e.is_nullable() != f.is_nullable()
            {
                return Err(mismatch(format!(
                    "column {i}: expected {}, found {}",
                    describe(e),
                    describe(f)
                )));
            }
        }
        Ok(())
    }

    /// Typed view of column `i` of a checked batch.
    pub fn col<'a, T: ArrowPrimitiveType>(
        &self,
        path: &Path,
        batch: &'a RecordBatch,
        i: usize,
    ) -> Result<&'a PrimitiveArray<T>, OutputError> {
        batch
            .column(i)
            .as_primitive_opt::<T>()
            .ok_or_else(|| OutputError::SchemaMismatch {
                path: path.to_path_buf(),
                detail: format!("column {} has unexpected type", self.columns[i].0),
            })
    }
}

/// `name:type:nullable` of every column, for the tests that pin each schema
/// (a change to a table's columns must change its test and its docs).
#[cfg(test)]
pub(crate) fn signature(schema: &arrow::datatypes::Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .map(|f| format!("{}:{}:{}", f.name(), f.data_type(), f.is_nullable()))
        .collect()
}
