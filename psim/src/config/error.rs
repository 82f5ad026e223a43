//! Scenario errors: one line each, naming the key or file at fault.

use crate::units::{gbps_to_bps, ns_to_ps};
use std::path::PathBuf;

/// A scenario that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The scenario file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema (unknown key, wrong type).
    #[error("{path}:{line}:{col}: {message}")]
    Parse {
        /// File.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What is wrong.
        message: String,
    },
    /// The scenario, after `--set` overrides, does not match the schema.
    #[error("{path} (with --set overrides): {message}")]
    ParseOverridden {
        /// File.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A `--set key=value` override is malformed.
    #[error("--set {arg}: {message}")]
    Set {
        /// The argument as given.
        arg: String,
        /// What is wrong.
        message: String,
    },
    /// A FatTree needs an even k of at least 2.
    #[error("topology.k = {k}: a FatTree needs an even k >= 2")]
    OddK {
        /// The value given.
        k: u32,
    },
    /// A rate must be positive.
    #[error("{key} = {value}: a link rate must be positive")]
    NonPositiveRate {
        /// Key.
        key: String,
        /// Value given.
        value: f64,
    },
    /// A latency must be zero or positive.
    #[error("{key} = {value}: a latency cannot be negative")]
    NegativeLatency {
        /// Key.
        key: String,
        /// Value given.
        value: f64,
    },
    /// Any other out-of-range value.
    #[error("{key} = {value}: {message}")]
    BadValue {
        /// Key.
        key: String,
        /// Value given.
        value: String,
        /// Allowed range.
        message: String,
    },
    /// A traffic entry names no protocol.
    #[error("traffic[{index}]: missing key `protocol`")]
    MissingProtocol {
        /// Entry index.
        index: usize,
    },
    /// A traffic entry names a protocol psim does not have.
    #[error(
        "traffic[{index}].protocol = {name:?}: unknown protocol (known: {})",
        crate::transport::known_protocols()
    )]
    UnknownProtocol {
        /// Entry index.
        index: usize,
        /// Name given.
        name: String,
    },
    /// A traffic entry does not match its pattern's schema.
    #[error("traffic[{index}]: {message}")]
    Traffic {
        /// Entry index.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A graph topology file is unreadable or wrong (names the file and line).
    #[error("{0}")]
    Topology(#[from] crate::topo::GraphError),
    /// The workload rejected the traffic section.
    #[error("traffic: {0}")]
    Workload(#[from] workloads::WorkloadError),
}

/// An out-of-range value at `key`.
pub(crate) fn bad(key: &str, value: impl std::fmt::Display, message: &str) -> ConfigError {
    ConfigError::BadValue {
        key: key.into(),
        value: value.to_string(),
        message: message.into(),
    }
}

/// A positive rate in Gb/s at `key`, in bits per second.
pub(crate) fn rate(key: &str, gbps: f64) -> Result<u64, ConfigError> {
    if gbps.is_nan() || gbps <= 0.0 || gbps_to_bps(gbps) == 0 {
        return Err(ConfigError::NonPositiveRate {
            key: key.into(),
            value: gbps,
        });
    }
    Ok(gbps_to_bps(gbps))
}

/// A non-negative latency in ns at `key`, in picoseconds.
pub(crate) fn latency(key: &str, ns: f64) -> Result<u64, ConfigError> {
    if ns.is_nan() || ns < 0.0 {
        return Err(ConfigError::NegativeLatency {
            key: key.into(),
            value: ns,
        });
    }
    Ok(ns_to_ps(ns))
}
