//! The one error type of the crate.
//!
//! Every failure a scenario author can cause has its own variant, and every message names the
//! place to fix: the `[[traffic]]` entry (by index and pattern), the key, the file and the line.

use std::path::PathBuf;

/// Everything that can go wrong while validating a traffic section or reading its input files.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A key holds a value outside its allowed range (negative time, zero count, ...).
    #[error("[[traffic]] entry {entry} ({pattern}): key `{key}`: {reason}")]
    InvalidValue {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
        /// The offending key.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Two keys that exclude each other were both given, or a key that another key needs is missing.
    #[error("[[traffic]] entry {entry} ({pattern}): {reason}")]
    Conflict {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
        /// Which keys conflict or are missing.
        reason: String,
    },
    /// An offered load outside (0, 1].
    #[error("[[traffic]] entry {entry} ({pattern}): key `load` = {load} must be in (0, 1]")]
    LoadOutOfRange {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
        /// The load given.
        load: f64,
    },
    /// A host index that the topology does not have.
    #[error("[[traffic]] entry {entry} ({pattern}): key `{key}` names host {host}, but the topology has {hosts} hosts")]
    HostOutOfRange {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
        /// The key naming the host.
        key: &'static str,
        /// The host named.
        host: u64,
        /// Number of hosts in the topology.
        hosts: u32,
    },
    /// The pattern needs more participating hosts than it has.
    #[error("[[traffic]] entry {entry} ({pattern}): needs at least {needed} participating hosts, has {have}")]
    TooFewHosts {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
        /// Hosts needed.
        needed: u64,
        /// Hosts available.
        have: u64,
    },
    /// An open-loop pattern without a generation horizon would never end.
    #[error("[[traffic]] entry {entry} ({pattern}): open-loop pattern needs a horizon: set `stop_us` or the scenario's stop time")]
    MissingHorizon {
        /// Index of the `[[traffic]]` entry.
        entry: usize,
        /// Pattern name of the entry.
        pattern: &'static str,
    },
    /// More `[[traffic]]` entries than the flow-id layout can tell apart.
    #[error("{count} [[traffic]] entries given; flow ids hold at most 256")]
    TooManyEntries {
        /// Number of entries given.
        count: usize,
    },
    /// More hosts than the flow-id layout can tell apart.
    #[error("topology has {hosts} hosts; flow ids hold at most 2^24 hosts")]
    TooManyHosts {
        /// Number of hosts.
        hosts: u32,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a flow-size CDF file could not be parsed.
    #[error("{}:{line}: {reason}", file.display())]
    CdfParse {
        /// The CDF file (or the built-in table's name).
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A CDF whose sizes or cumulative probabilities decrease.
    #[error("{}:{line}: CDF is not monotone: {reason}", file.display())]
    CdfNotMonotone {
        /// The CDF file.
        file: PathBuf,
        /// 1-based line number of the first point that goes backwards.
        line: usize,
        /// Which column decreases.
        reason: String,
    },
    /// A CDF that does not end at probability 1 (100%).
    #[error("{}: CDF must end at cumulative probability 1 (100%), ends at {last}", file.display())]
    CdfIncomplete {
        /// The CDF file.
        file: PathBuf,
        /// The last cumulative probability (as a fraction).
        last: f64,
    },
    /// A CDF whose mass sits (almost) all at 0 B: a load-driven pattern would
    /// need an unbounded arrival rate to carry its load.
    #[error("{}: the mean flow size is {mean} B; a flow-size CDF must have a mean of at least 1 byte", file.display())]
    CdfMean {
        /// The CDF file.
        file: PathBuf,
        /// The mean of the CDF, bytes.
        mean: f64,
    },
    /// A malformed line in an htsim connection-matrix (`.cm`) file.
    #[error("{}:{line}: {reason}", file.display())]
    CmParse {
        /// The `.cm` file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A `.cm` file whose header disagrees with its body or with the topology.
    #[error("{}: {reason}", file.display())]
    CmInconsistent {
        /// The `.cm` file.
        file: PathBuf,
        /// What disagrees.
        reason: String,
    },
    /// A malformed row in a CSV flow list.
    #[error("{}:{line}: {reason}", file.display())]
    CsvParse {
        /// The CSV file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A Parquet flow list that cannot be read or does not follow the schema.
    #[error("{}: {reason}", file.display())]
    Parquet {
        /// The Parquet file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
}
