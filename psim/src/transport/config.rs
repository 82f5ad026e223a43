//! Value types and checks shared by the transports' `[protocol.<name>]`
//! sections. Each transport's file holds its own section struct (serde,
//! `deny_unknown_fields`, defaults in its `Default`) and its `validate`.

use crate::config::ConfigError;
use crate::units::{us_to_ps, PS_PER_US};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written in µs in scenario files and held in ps, converted once
/// when the scenario is read.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Micros {
    /// As written, µs (kept for messages and the resolved scenario).
    us: f64,
    /// Picoseconds.
    pub ps: u64,
}

impl Micros {
    /// A duration of `ps` picoseconds (for defaults).
    pub const fn from_ps(ps: u64) -> Self {
        Micros {
            us: ps as f64 / 1e6,
            ps,
        }
    }

    /// A duration of `us` microseconds.
    pub fn from_us(us: f64) -> Self {
        Micros {
            us,
            ps: us_to_ps(us),
        }
    }

    /// Checks that the duration at `key` is 0 (off) or a positive time: 0
    /// ps for 0, else as [`Self::positive`], with a message that says 0 is
    /// allowed.
    pub fn zero_or_positive(self, key: &str) -> Result<u64, ConfigError> {
        if self.us == 0.0 {
            return Ok(0);
        }
        if self.us.is_nan() || self.us < 0.0 || self.ps == 0 {
            return Err(bad(key, self.us, "must be 0 (off) or a positive time"));
        }
        self.positive(key)
    }

    /// Checks that the duration at `key` is positive (and not NaN, nor below
    /// 1 ps) and converts to picoseconds without saturating (at most
    /// [`crate::config::MAX_TIME_PS`]).
    pub fn positive(self, key: &str) -> Result<u64, ConfigError> {
        if self.us.is_nan() || self.us <= 0.0 || self.ps == 0 {
            return Err(bad(key, self.us, "must be positive"));
        }
        crate::config::time_ps(key, self.us, PS_PER_US, crate::config::MAX_TIME_PS)
    }
}

/// Scenario files and the manifest hold the microseconds; binary formats
/// (checkpoints) hold both fields, so a value reads back exactly.
impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.us.serialize(s)
        } else {
            (self.us, self.ps).serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            f64::deserialize(d).map(Micros::from_us)
        } else {
            <(f64, u64)>::deserialize(d).map(|(us, ps)| Micros { us, ps })
        }
    }
}

/// An out-of-range value at `key`.
pub fn bad(key: &str, value: impl std::fmt::Display, message: &str) -> ConfigError {
    ConfigError::BadValue {
        key: key.into(),
        value: value.to_string(),
        message: message.into(),
    }
}

/// Checks that `value` at `key` is in `lo..=hi`.
pub fn in_range(key: &str, value: u32, lo: u32, hi: u32) -> Result<(), ConfigError> {
    if value < lo || value > hi {
        let msg = if hi == u32::MAX {
            format!("must be at least {lo}")
        } else {
            format!("must be {lo} to {hi}")
        };
        return Err(bad(key, value, &msg));
    }
    Ok(())
}
