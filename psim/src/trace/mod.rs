//! Output layer of psim: everything a run leaves on disk.
//!
//! A run writes one output directory (see `docs/outputs.md` for the full
//! contract):
//!
//! ```text
//! DIR/
//!   flows/part-00000.parquet   one file per shard, written by `write_flows_part`
//!   flows/part-00001.parquet
//!   packets/part-00000.parquet optional packet-event trace, one part per shard
//!   queues/part-00000.parquet  optional queue/link time series, one part per shard
//!   queues.h5                  the same series as dense arrays (format = "hdf5")
//!   manifest.json              written LAST by `write_manifest`
//! ```
//!
//! The module is deliberately self-contained (std, arrow, parquet, serde,
//! serde_json, thiserror) so that the file formats can be read and tested
//! without the simulator, and so that analysis tools can depend on the exact
//! same reader the tests use.
//!
//! Every file is written atomically (temporary name in the same directory,
//! fsync, rename), so a reader never sees a half-written part, and the
//! manifest is written after all data files: a directory without
//! `manifest.json` is an incomplete run. The manifest records each part's
//! rows, bytes and CRC-32, and readers check them (`verify`) before reading.

pub mod chip;
pub mod flows;
#[cfg(feature = "hdf5")]
pub mod hdf5;
pub mod manifest;
pub mod outdir;
pub mod packets;
pub mod queues;
pub mod record;
pub mod recorder;
pub mod spec;
pub mod table;
pub mod verify;

use std::path::PathBuf;

pub use chip::{read_tofino, write_tofino_part, ChipRow, TOFINO};
pub use flows::{
    flows_schema, flows_to_csv, read_flows, write_flows_part, FlowRecord, FLOWS_DIR,
    FLOWS_SCHEMA_VERSION, SCHEMA_VERSION_KEY,
};
pub use manifest::{
    git_commit, peak_rss_bytes, read_manifest, write_manifest, GroupRecord, Manifest, PartEntry,
    MANIFEST_FILE,
};
pub use outdir::prepare_out_dir;
pub use packets::{read_packets, write_packets_part, PacketFields, PacketRow, PACKETS};
pub use queues::{read_queues, write_queues_part, PortAtEnd, PortSeries, QueueSample, QUEUES};
pub use record::{read_record, write_record_part, RECORD};
pub use recorder::{ShardTrace, TraceOutput};
pub use spec::{PacketEvent, QueueFormat, TraceFile, TraceSpec};
pub use verify::{check_run, describe_part, read_flows_checked, verify_run, RunCheck};

/// Everything that can go wrong while writing or reading psim outputs.
///
/// Every variant carries the path it concerns and every message is a single
/// line naming that path, because these errors are shown to a user who has to
/// find the offending file among many shards' outputs.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// An ordinary I/O failure on a specific file or directory.
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The output directory already holds files and `--force` was not given.
    #[error("output directory {} is not empty (use --force to overwrite)", .path.display())]
    NotEmpty {
        /// The file or directory concerned.
        path: PathBuf,
    },

    /// The output directory could not be created or written to.
    #[error("output directory {} is not writable: {source}", .path.display())]
    NotWritable {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A path that must be a directory exists but is something else.
    #[error("{} exists and is not a directory", .path.display())]
    NotADirectory {
        /// The file or directory concerned.
        path: PathBuf,
    },

    /// A directory that must exist (e.g. `DIR/flows`) does not.
    #[error("directory {} does not exist", .path.display())]
    MissingDir {
        /// The file or directory concerned.
        path: PathBuf,
    },

    /// The flows directory exists but holds no `part-*.parquet` file; every
    /// shard writes a part (even an empty one), so this is an incomplete run.
    #[error("no part-*.parquet files in {}", .path.display())]
    NoParts {
        /// The file or directory concerned.
        path: PathBuf,
    },

    /// There is no `manifest.json`: the run did not finish, or this is not a
    /// psim output directory.
    #[error("no manifest at {} (the run is incomplete or this is not a psim output directory)", .path.display())]
    MissingManifest {
        /// The file or directory concerned.
        path: PathBuf,
    },

    /// The manifest says `"complete": false`.
    #[error("{}: the run is incomplete (\"complete\": false); --allow-incomplete reads what is there", .path.display())]
    Incomplete {
        /// The manifest.
        path: PathBuf,
    },

    /// A part the manifest lists is not on disk.
    #[error("part {} is listed in the manifest but missing; --allow-incomplete reads what is there", .path.display())]
    PartMissing {
        /// The part.
        path: PathBuf,
    },

    /// A part on disk that the manifest does not list.
    #[error("part {} is not listed in the manifest (left by another run, or the manifest is stale); --allow-incomplete reads it anyway", .path.display())]
    PartExtra {
        /// The part.
        path: PathBuf,
    },

    /// A part whose bytes, checksum or rows differ from the manifest's.
    #[error("part {} does not match the manifest: {detail}", .path.display())]
    PartMismatch {
        /// The part.
        path: PathBuf,
        /// What differs.
        detail: String,
    },

    /// The Parquet library rejected a file (corrupt, truncated, not Parquet).
    #[error("parquet error in {}: {source}", .path.display())]
    Parquet {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: parquet::errors::ParquetError,
    },

    /// Arrow failed to build or decode a record batch for a file.
    #[error("arrow error in {}: {source}", .path.display())]
    Arrow {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: arrow::error::ArrowError,
    },

    /// A file's columns differ from the schema this build expects.
    #[error("schema mismatch in {}: {detail}", .path.display())]
    SchemaMismatch {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },

    /// A file's `psim.schema_version` metadata is missing or unsupported.
    #[error("{}: schema version {} is not the supported version {expected}", .path.display(), .found.as_deref().unwrap_or("(missing)"))]
    SchemaVersion {
        /// The file or directory concerned.
        path: PathBuf,
        /// What was found.
        found: Option<String>,
        /// What was expected.
        expected: u32,
    },

    /// A file decoded but holds values that violate the format (e.g. a null
    /// in a column documented as non-null).
    #[error("invalid data in {}: {detail}", .path.display())]
    InvalidData {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },

    /// JSON (de)serialisation of the manifest failed.
    #[error("JSON error in {}: {source}", .path.display())]
    Json {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
}

impl OutputError {
    /// Shorthand used throughout the module: wrap an `io::Error` with the path
    /// it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        OutputError::Io {
            path: path.into(),
            source,
        }
    }

    /// The file or directory this error concerns.
    pub fn path(&self) -> &std::path::Path {
        match self {
            OutputError::Io { path, .. }
            | OutputError::NotEmpty { path }
            | OutputError::NotWritable { path, .. }
            | OutputError::NotADirectory { path }
            | OutputError::MissingDir { path }
            | OutputError::NoParts { path }
            | OutputError::MissingManifest { path }
            | OutputError::Incomplete { path }
            | OutputError::PartMissing { path }
            | OutputError::PartExtra { path }
            | OutputError::PartMismatch { path, .. }
            | OutputError::Parquet { path, .. }
            | OutputError::Arrow { path, .. }
            | OutputError::SchemaMismatch { path, .. }
            | OutputError::SchemaVersion { path, .. }
            | OutputError::InvalidData { path, .. }
            | OutputError::Json { path, .. } => path,
        }
    }
}
