//! Scenario errors: one line each, naming the key or file at fault.

use crate::units::gbps_to_bps;
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
    #[error("traffic[{index}]{key}: {message}")]
    Traffic {
        /// Entry index.
        index: usize,
        /// The key in the entry (`.size_bytes`), when psim could tell.
        key: String,
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

/// The latest simulated time psim represents, ps: half of u64 (about 106
/// days), so that any time plus any delay or timeout still fits in a u64.
pub const MAX_TIME_PS: u64 = u64::MAX / 2;

/// The longest link propagation delay a key may give, ps: 1 s, well above
/// any terrestrial path (a geostationary hop is 0.24 s); more is a unit mistake.
pub const MAX_LINK_DELAY_PS: u64 = crate::units::PS_PER_SEC;

/// The fastest link rate a key may give, Gb/s: 10 Tb/s, well above any
/// link built, and small enough that a topology's summed capacity fits a u64.
pub const MAX_LINK_GBPS: f64 = 10_000.0;

/// `value` at `key` as a finite number (TOML admits `inf` and `nan`).
pub(crate) fn finite(key: &str, value: f64) -> Result<f64, ConfigError> {
    if !value.is_finite() {
        return Err(bad(key, value, "must be a finite number"));
    }
    Ok(value)
}

/// A number for a message: large and tiny ones in exponent form (`1e18`,
/// not nineteen digits).
pub(crate) fn num(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e9).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// [`num`], cut to 5 significant digits when long (`9.2234e12`).
fn short(x: f64) -> String {
    let s = num(x);
    if s.len() > 10 {
        format!("{x:.4e}")
    } else {
        s
    }
}

/// A duration written in units of `unit_ps` picoseconds (1000 for `_ns`,
/// 10^6 for `_us`, 10^12 for `_s`) at `key`, converted to picoseconds with
/// checked arithmetic: finite, at least 0, and at most `max_ps`; never
/// saturated or clamped. The one conversion every model's config uses.
pub(crate) fn time_ps(
    key: &str,
    value: f64,
    unit_ps: u64,
    max_ps: u64,
) -> Result<u64, ConfigError> {
    finite(key, value)?;
    if value < 0.0 {
        return Err(bad(key, num(value), "cannot be negative"));
    }
    let ps = (value * unit_ps as f64).round();
    if ps > max_ps as f64 {
        let max = (max_ps / unit_ps) as f64;
        let why = if max_ps == MAX_TIME_PS {
            ", psim's time range: half of u64 picoseconds"
        } else {
            ""
        };
        return Err(bad(
            key,
            num(value),
            &format!(
                "too long: at most {} ({}{why})",
                short(max),
                crate::units::fmt_ps(max_ps)
            ),
        ));
    }
    Ok(ps as u64)
}

/// A positive rate in Gb/s at `key`, up to [`MAX_LINK_GBPS`], in bits per second.
pub(crate) fn rate(key: &str, gbps: f64) -> Result<u64, ConfigError> {
    finite(key, gbps)?;
    if gbps <= 0.0 || gbps_to_bps(gbps) == 0 {
        return Err(ConfigError::NonPositiveRate {
            key: key.into(),
            value: gbps,
        });
    }
    if gbps > MAX_LINK_GBPS {
        return Err(bad(
            key,
            num(gbps),
            &format!("at most {MAX_LINK_GBPS} Gb/s (10 Tb/s)"),
        ));
    }
    Ok(gbps_to_bps(gbps))
}

/// A non-negative latency in ns at `key`, up to [`MAX_LINK_DELAY_PS`], in picoseconds.
pub(crate) fn latency(key: &str, ns: f64) -> Result<u64, ConfigError> {
    if ns < 0.0 {
        return Err(ConfigError::NegativeLatency {
            key: key.into(),
            value: ns,
        });
    }
    time_ps(key, ns, crate::units::PS_PER_NS, MAX_LINK_DELAY_PS)
}
