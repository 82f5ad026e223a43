//! The one error type of the analysis library.

use std::path::PathBuf;

/// Everything that can go wrong while analysing psim outputs.
///
/// Every message is a single line that names the file or directory at fault,
/// because the user has to find it among the many runs of a sweep.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// A directory given on the command line does not exist.
    #[error("{} does not exist", .path.display())]
    MissingPath {
        /// The path given.
        path: PathBuf,
    },

    /// A path given is a file, not a directory.
    #[error("{} is not a directory", .path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },

    /// A directory has no `manifest.json` and no run folders inside.
    #[error("no manifest at {} and no run folders (with a manifest.json) inside {}: the run is incomplete or this is not a psim output directory", .path.join(psim::trace::MANIFEST_FILE).display(), .path.display())]
    NotARun {
        /// The directory given.
        path: PathBuf,
    },

    /// Reading the manifest failed (unreadable, malformed JSON).
    #[error(transparent)]
    Output(#[from] psim::trace::OutputError),

    /// A flows part listed in the manifest is not on disk.
    #[error("missing flows part {} (listed in the manifest)", .path.display())]
    MissingPart {
        /// The part.
        path: PathBuf,
    },

    /// A run has no flows part at all.
    #[error("no part-*.parquet files in {}", .path.display())]
    NoParts {
        /// The flows directory.
        path: PathBuf,
    },

    /// A part could not be decoded as Parquet (corrupt, truncated, not Parquet).
    #[error("corrupt or unreadable parquet file {}: {detail}", .path.display())]
    Parquet {
        /// The part.
        path: PathBuf,
        /// The reader's message, on one line.
        detail: String,
    },

    /// A part decodes but its columns or schema version are not the ones the
    /// analysis reads (see [`crate::flows::REQUIRED_COLUMNS`]).
    #[error("schema mismatch in {}: {detail}", .path.display())]
    Schema {
        /// The part.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },

    /// A Polars query failed for another reason.
    #[error("polars error while {context}: {detail}")]
    Polars {
        /// What the analysis was doing (names the run directory).
        context: String,
        /// Polars' message, on one line.
        detail: String,
    },

    /// Reading or writing a file failed.
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Writing a CSV file failed.
    #[error("CSV error writing {}: {source}", .path.display())]
    Csv {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: csv::Error,
    },

    /// Drawing or writing a plot failed.
    #[error("plot error writing {}: {detail}", .path.display())]
    Plot {
        /// The image file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },

    /// An option has a value the analysis cannot use.
    #[error("invalid option: {0}")]
    Invalid(String),
}

impl AnalysisError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AnalysisError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Flattens a (possibly multi-line) message to one line.
pub(crate) fn one_line(s: impl std::fmt::Display) -> String {
    s.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Result alias of the analysis library.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;
