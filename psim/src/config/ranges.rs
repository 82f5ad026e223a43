//! Checks that apply to every key of a scenario, whatever model owns it,
//! and the static check that every port can hold one packet.
//!
//! Each model's `validate` checks its own keys' ranges; the walk here adds
//! what holds for all of them, by the key's unit suffix, so that a key added
//! later is covered without a copy of the check:
//!
//! | keys | range |
//! |---|---|
//! | every number | finite (TOML admits `inf` and `nan`) |
//! | `*_ns`, `*_us`, `*_ms`, `*_s` | at most [`MAX_TIME_PS`] in magnitude (about 106 days), converted with checked arithmetic |
//! | `*gbps` | at most [`MAX_LINK_GBPS`] (10 Tb/s) |
//! | `*_mbps` | at most 1000 x [`MAX_LINK_GBPS`] |
//!
//! The packet check: a queue whose byte capacity is below one full packet of
//! a protocol it carries can never forward that protocol's data (TCP, NDP
//! and pHost then retransmit forever), so `psim check` rejects it.

use super::error::{bad, finite, num, time_ps, ConfigError, MAX_LINK_GBPS, MAX_TIME_PS};
use crate::packet::{Protocol, HEADER_BYTES};
use crate::queue::QueueConfig;
use crate::transport::ProtocolParams;
use crate::units::{PS_PER_NS, PS_PER_SEC, PS_PER_US};

/// Checks every number in `doc` (the scenario after `--set`) by its key's
/// suffix; errors name the dotted key (`traffic[2].jitter_us`).
pub(crate) fn check_numbers(doc: &toml::Table) -> Result<(), ConfigError> {
    walk_table(doc, "")
}

fn walk_table(t: &toml::Table, prefix: &str) -> Result<(), ConfigError> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        walk_value(v, k, &key)?;
    }
    Ok(())
}

fn walk_value(v: &toml::Value, name: &str, key: &str) -> Result<(), ConfigError> {
    match v {
        toml::Value::Table(t) => walk_table(t, key),
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                walk_value(v, name, &format!("{key}[{i}]"))?;
            }
            Ok(())
        }
        toml::Value::Float(f) => check_number(name, key, finite(key, *f)?),
        toml::Value::Integer(i) => check_number(name, key, *i as f64),
        _ => Ok(()),
    }
}

/// The range every key named `name` (its last segment) has, by unit suffix.
fn check_number(name: &str, key: &str, x: f64) -> Result<(), ConfigError> {
    let unit_ps = [
        ("_ns", PS_PER_NS),
        ("_us", PS_PER_US),
        ("_ms", PS_PER_SEC / 1000),
        ("_s", PS_PER_SEC),
    ]
    .into_iter()
    .find(|(suffix, _)| name.ends_with(suffix))
    .map(|(_, unit)| unit);
    if let Some(unit) = unit_ps {
        // Negative times are each model's to reject (with its own words);
        // here only the magnitude must convert.
        if x < 0.0 {
            time_ps(key, -x, unit, MAX_TIME_PS).map_err(|_| {
                bad(
                    key,
                    num(x),
                    "too long (negative, and beyond psim's time range)",
                )
            })?;
        } else {
            time_ps(key, x, unit, MAX_TIME_PS)?;
        }
    }
    if name.ends_with("gbps") && x > MAX_LINK_GBPS {
        return Err(bad(key, num(x), &format!("at most {MAX_LINK_GBPS} Gb/s")));
    }
    if name.ends_with("_mbps") && x > MAX_LINK_GBPS * 1000.0 {
        return Err(bad(
            key,
            num(x),
            &format!("at most {} Mb/s", MAX_LINK_GBPS * 1000.0),
        ));
    }
    Ok(())
}

/// The largest data packet of some protocols, on the wire.
#[derive(Copy, Clone, Debug)]
struct FullPacket {
    proto: Protocol,
    mtu: u64,
    extra: u64,
}

impl FullPacket {
    fn bytes(&self) -> u64 {
        self.mtu + self.extra + HEADER_BYTES as u64
    }
    fn describe(&self) -> String {
        let extra = if self.extra > 0 {
            format!(" + IRN header overhead {}", self.extra)
        } else {
            String::new()
        };
        format!(
            "{} B: {} MTU {}{extra} + header {HEADER_BYTES}",
            self.bytes(),
            self.proto.name(),
            self.mtu
        )
    }
}

/// The largest data packet of `protos` on the wire, bytes (IRN's header
/// overhead included); None for no protocols.
pub(crate) fn full_packet_bytes(protos: &[Protocol], p: &ProtocolParams) -> Option<u64> {
    largest(protos, p).map(|f| f.bytes())
}

/// The largest data packet of `protos` on the wire: bytes, and what it is
/// made of (for errors); None for no protocols.
pub(crate) fn full_packet(protos: &[Protocol], p: &ProtocolParams) -> Option<(u64, String)> {
    largest(protos, p).map(|f| (f.bytes(), f.describe()))
}

fn largest(protos: &[Protocol], p: &ProtocolParams) -> Option<FullPacket> {
    protos
        .iter()
        .map(|&proto| FullPacket {
            proto,
            mtu: proto.mtu(p) as u64,
            extra: if proto.name().starts_with("irn") {
                p.irn.header_overhead_bytes as u64
            } else {
                0
            },
        })
        .max_by_key(FullPacket::bytes)
}

/// Rejects a queue at `key` that cannot hold one full data packet of the
/// protocols in `protos` (byte capacities: `queue_bytes`, `capacity_bytes`,
/// `memory_limit_bytes`), or one header in its header queue
/// (`header_bytes`). A `classes` queue that classifies by protocol checks
/// each class against the protocols it carries.
pub(crate) fn check_queue_fits(
    key: &str,
    q: &QueueConfig,
    protos: &[Protocol],
    params: &ProtocolParams,
) -> Result<(), ConfigError> {
    let Ok(toml::Value::Table(t)) = toml::Value::try_from(q) else {
        return Ok(());
    };
    fits(key, &t, protos, params)
}

fn fits(
    key: &str,
    t: &toml::Table,
    protos: &[Protocol],
    params: &ProtocolParams,
) -> Result<(), ConfigError> {
    let Some(pkt) = largest(protos, params) else {
        return Ok(());
    };
    for name in ["queue_bytes", "capacity_bytes", "memory_limit_bytes"] {
        if let Some(b) = t.get(name).and_then(toml::Value::as_integer) {
            if (b as u64) < pkt.bytes() {
                return Err(bad(
                    &format!("{key}.{name}"),
                    b,
                    &format!("smaller than one packet ({})", pkt.describe()),
                ));
            }
        }
    }
    // DCTCP's K (`ecn`, `voq`) and RED's `red_max` count in the capacity's
    // unit: beside `queue_bytes`, one below a packet marks every arrival
    // that finds anything queued (K = 0's meaning). A value meant in packets
    // is the usual cause (K = 15 becoming 15 bytes; RED's defaults, 5 and
    // 15, are packets).
    if t.contains_key("queue_bytes") {
        let below = |name: &str| {
            let v = t.get(name)?;
            let x = v.as_float().or_else(|| v.as_integer().map(|i| i as f64))?;
            (x > 0.0 && x < pkt.bytes() as f64).then(|| (name.to_string(), v.to_string()))
        };
        if let Some((name, v)) = below("ecn_threshold").or_else(|| below("red_max")) {
            return Err(bad(
                &format!("{key}.{name}"),
                v,
                &format!(
                    "counts bytes here (the capacity is queue_bytes) and is below one packet ({}): give it in bytes, the capacity in packets (queue_packets), or 0 to mark behind any queued packet",
                    pkt.describe()
                ),
            ));
        }
    }
    if let Some(b) = t.get("header_bytes").and_then(toml::Value::as_integer) {
        if b < HEADER_BYTES as i64 {
            return Err(bad(
                &format!("{key}.header_bytes"),
                b,
                &format!("smaller than one header ({HEADER_BYTES} B)"),
            ));
        }
    }
    if let Some(classes) = t.get("class").and_then(toml::Value::as_array) {
        let by_protocol = t.get("kind").and_then(toml::Value::as_str) == Some("classes")
            && t.get("classify").and_then(toml::Value::as_str) != Some("prio");
        for (i, c) in classes.iter().enumerate() {
            let Some(c) = c.as_table() else { continue };
            let carried: Vec<Protocol> = protos
                .iter()
                .copied()
                .filter(|p| !by_protocol || p.switch_class() as usize == i)
                .collect();
            fits(&format!("{key}.class[{i}]"), c, &carried, params)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(text: &str) -> Result<(), ConfigError> {
        check_numbers(&toml::from_str(text).unwrap())
    }

    #[test]
    fn infinite_and_nan_numbers_name_their_key() {
        for (text, key) in [
            ("a = inf", "a = inf"),
            ("[t]\nb = nan", "t.b = NaN"),
            (
                "[[traffic]]\nx = 1\n[[traffic]]\nload = -inf",
                "traffic[1].load = -inf",
            ),
        ] {
            let e = numbers(text).unwrap_err().to_string();
            assert!(e.starts_with(key), "{text}: {e}");
            assert!(e.contains("finite"), "{e}");
        }
    }

    #[test]
    fn times_beyond_u64_picoseconds_are_errors() {
        // u64::MAX ps is about 1.8e7 s; half of it is the limit.
        assert!(numbers("a_s = 9.2e6").is_ok());
        for text in ["a_s = 9.3e6", "b_us = 1e30", "c_ns = 1e18", "d_ms = -1e20"] {
            let e = numbers(text).unwrap_err().to_string();
            assert!(e.contains("psim's time range"), "{text}: {e}");
        }
        assert!(numbers("latency_ns = 1e15").is_ok(), "1e6 s: in range here");
    }

    #[test]
    fn rates_have_a_ceiling() {
        assert!(numbers("link_gbps = 10000").is_ok());
        assert!(numbers("[x]\ngbps = 10001").is_err());
        assert!(numbers("rate_ai_mbps = 1e8").is_err());
    }
}
