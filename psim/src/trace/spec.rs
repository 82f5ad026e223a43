//! The `[trace]` section of a scenario: which packet events and queue time
//! series a run records, and how they are validated.
//!
//! Tracing is off by default. Every filter is a pure function of the event
//! (time, entity, port, flow, sequence number), never of the shard that sees
//! it, so a trace is the same set of rows for any partition. Sampling in
//! particular hashes `(seed, flow, seq)` instead of drawing from a random
//! stream: a shared stream would depend on the order shards happen to run
//! in, and a per-entity stream would sample a packet at one hop but not the
//! next. With the hash, a sampled packet is followed through every hop.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::rng::splitmix64;
use crate::units::us_to_ps;

/// `[trace]` as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFile {
    /// `[trace.packets]`.
    #[serde(default)]
    pub packets: PacketTraceFile,
    /// `[trace.queues]`.
    #[serde(default)]
    pub queues: QueueTraceFile,
    /// `[trace.tofino]` (left out of the resolved scenario when off).
    #[serde(default, skip_serializing_if = "ChipTraceFile::is_off")]
    pub tofino: ChipTraceFile,
}

/// `[trace.tofino]` as written: the Tofino chips' mode and DoD/MoD queue
/// changes (`trace/chip.rs`); see `docs/outputs.md`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChipTraceFile {
    /// Record them (default false).
    #[serde(default)]
    pub enabled: bool,
}

impl ChipTraceFile {
    fn is_off(&self) -> bool {
        !self.enabled
    }
}

/// `[trace.packets]` as written; see `docs/outputs.md`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PacketTraceFile {
    /// Record packet events (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Event kinds to keep (default: all).
    pub events: Option<Vec<String>>,
    /// Flow ids to keep (default: all).
    pub flows: Option<Vec<u64>>,
    /// Traffic entries (`[[traffic]]` indices) whose flows to keep (default: all).
    pub entries: Option<Vec<u64>>,
    /// Entity ids to keep (default: all).
    pub entities: Option<Vec<u32>>,
    /// Output port indices to keep (default: all).
    pub ports: Option<Vec<u16>>,
    /// Keep events at or after this time, µs (default 0).
    pub start_us: Option<f64>,
    /// Keep events before this time, µs (default: no end).
    pub end_us: Option<f64>,
    /// Fraction of packets kept, in (0, 1] (default 1).
    pub sample: Option<f64>,
    /// Fail the run if the trace would have more rows (default 10 million).
    pub max_rows: Option<u64>,
}

/// `[trace.queues]` as written; see `docs/outputs.md`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueTraceFile {
    /// Record queue occupancy and link utilisation (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Sampling interval, µs (default 10).
    pub interval_us: Option<f64>,
    /// Entity ids to keep (default: all).
    pub entities: Option<Vec<u32>>,
    /// Output port indices to keep (default: all).
    pub ports: Option<Vec<u16>>,
    /// `"parquet"` (default) or `"hdf5"`.
    pub format: Option<String>,
}

/// A packet event kind. The discriminant is the sort order of rows that tie
/// on time, entity and port.
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[repr(u8)]
pub enum PacketEvent {
    /// Admitted to an output queue unchanged.
    Enqueue = 0,
    /// Admitted to an output queue after a payload was cut (this packet's or,
    /// depending on the discipline, a queued one's).
    Trim = 1,
    /// Discarded by an output queue.
    Drop = 2,
    /// Sent back towards its source by an output queue (NDP return-to-sender).
    Bounce = 3,
    /// Marked ECN Congestion Experienced by an output queue.
    EcnMark = 4,
    /// A PFC PAUSE or RESUME frame sent by the port (it bypasses the queue;
    /// `ack` = 0 is a RESUME).
    Pause = 5,
    /// Taken from an output queue to be serialised onto the link.
    Dequeue = 6,
    /// A PFC PAUSE or RESUME frame arrived from the link's peer and was
    /// applied to the port it pauses or resumes (the row is at that port).
    PauseReceived = 7,
}

impl PacketEvent {
    /// Every event kind, in sort order.
    pub const ALL: [PacketEvent; 8] = [
        PacketEvent::Enqueue,
        PacketEvent::Trim,
        PacketEvent::Drop,
        PacketEvent::Bounce,
        PacketEvent::EcnMark,
        PacketEvent::Pause,
        PacketEvent::Dequeue,
        PacketEvent::PauseReceived,
    ];

    /// Name used in scenarios and in the `event` column.
    pub fn name(self) -> &'static str {
        match self {
            PacketEvent::Enqueue => "enqueue",
            PacketEvent::Trim => "trim",
            PacketEvent::Drop => "drop",
            PacketEvent::Bounce => "bounce",
            PacketEvent::EcnMark => "ecn_mark",
            PacketEvent::Pause => "pause",
            PacketEvent::Dequeue => "dequeue",
            PacketEvent::PauseReceived => "pause_received",
        }
    }

    /// The event called `name`.
    pub fn from_name(name: &str) -> Option<PacketEvent> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// Which packet events to record: the validated `[trace.packets]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketFilter {
    /// Bit `e as u8` set: keep event `e`.
    pub events: u8,
    /// Sorted flow ids, or None for every flow.
    pub flows: Option<Vec<u64>>,
    /// Sorted traffic entries (a flow id's top 8 bits), or None for every entry.
    pub entries: Option<Vec<u64>>,
    /// Sorted entity ids, or None for every entity.
    pub entities: Option<Vec<u32>>,
    /// Sorted port indices, or None for every port.
    pub ports: Option<Vec<u16>>,
    /// First time kept, ps.
    pub start_ps: u64,
    /// First time no longer kept, ps (`u64::MAX`: no end).
    pub end_ps: u64,
    /// Keep a packet when its hash is below this; None keeps every packet.
    pub sample_below: Option<u64>,
    /// The hash seed (the scenario seed).
    pub seed: u64,
    /// Most rows a run may record.
    pub max_rows: u64,
}

impl PacketFilter {
    /// Whether events at `entity` are recorded at all.
    #[inline]
    pub fn wants_entity(&self, entity: u32) -> bool {
        self.entities
            .as_ref()
            .is_none_or(|v| v.binary_search(&entity).is_ok())
    }

    /// Whether event `ev` at `port` at time `now` passes the filters that do
    /// not need the packet.
    #[inline]
    pub fn wants_at(&self, ev: PacketEvent, now: u64, port: u16) -> bool {
        self.events & (1 << ev as u8) != 0
            && now >= self.start_ps
            && now < self.end_ps
            && self
                .ports
                .as_ref()
                .is_none_or(|v| v.binary_search(&port).is_ok())
    }

    /// Whether packet `(flow, seq)` passes the flow and entry filters and
    /// the sample.
    #[inline]
    pub fn wants_packet(&self, flow: u64, seq: u64) -> bool {
        self.flows
            .as_ref()
            .is_none_or(|v| v.binary_search(&flow).is_ok())
            && self
                .entries
                .as_ref()
                .is_none_or(|v| v.binary_search(&(flow >> 56)).is_ok())
            && self
                .sample_below
                .is_none_or(|t| sample_hash(self.seed, flow, seq) < t)
    }
}

/// The sampling hash of packet `(flow, seq)`: uniform over `u64`, a function
/// of the packet alone, so a packet is kept at every hop or at none.
pub fn sample_hash(seed: u64, flow: u64, seq: u64) -> u64 {
    splitmix64(seq ^ splitmix64(flow ^ splitmix64(seed ^ 0x7472_6163_6500_0000)))
}

/// How the queue time series is stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueFormat {
    /// Long format, one Parquet part per shard (the default).
    Parquet,
    /// Dense per-port arrays in one HDF5 file (needs `--features hdf5`).
    Hdf5,
}

/// The validated `[trace.queues]`.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueTraceSpec {
    /// Sampling interval, ps (> 0).
    pub interval_ps: u64,
    /// Sorted entity ids, or None for every entity.
    pub entities: Option<Vec<u32>>,
    /// Sorted port indices, or None for every port.
    pub ports: Option<Vec<u16>>,
    /// Storage format.
    pub format: QueueFormat,
}

impl QueueTraceSpec {
    /// Whether port `port` of `entity` is recorded.
    pub fn wants(&self, entity: u32, port: u16) -> bool {
        self.entities
            .as_ref()
            .is_none_or(|v| v.binary_search(&entity).is_ok())
            && self
                .ports
                .as_ref()
                .is_none_or(|v| v.binary_search(&port).is_ok())
    }
}

/// The validated `[trace]`: None where that trace is off.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceSpec {
    /// Packet events.
    pub packets: Option<PacketFilter>,
    /// Queue occupancy and link utilisation.
    pub queues: Option<QueueTraceSpec>,
    /// The Tofino chips' mode and DoD/MoD queue changes.
    pub tofino: bool,
}

impl TraceSpec {
    /// Whether anything is traced.
    pub fn any(&self) -> bool {
        self.packets.is_some() || self.queues.is_some()
    }
}

/// Default of `trace.packets.max_rows`: about 0.6 GB of rows in memory.
pub const DEFAULT_MAX_ROWS: u64 = 10_000_000;

/// Default of `trace.queues.interval_us`.
pub const DEFAULT_INTERVAL_US: f64 = 10.0;

fn bad(key: &str, value: impl std::fmt::Display, message: &str) -> ConfigError {
    ConfigError::BadValue {
        key: key.into(),
        value: value.to_string(),
        message: message.into(),
    }
}

fn sorted<T: Ord + Copy>(v: &Option<Vec<T>>) -> Option<Vec<T>> {
    v.as_ref().map(|v| {
        let mut v = v.clone();
        v.sort_unstable();
        v.dedup();
        v
    })
}

fn check_entities(key: &str, v: &Option<Vec<u32>>, entities: u32) -> Result<(), ConfigError> {
    if let Some(&e) = v.iter().flatten().find(|&&e| e >= entities) {
        return Err(bad(
            key,
            e,
            &format!(
                "no such entity (ids are 0 to {})",
                entities.saturating_sub(1)
            ),
        ));
    }
    Ok(())
}

fn time_us(key: &str, us: Option<f64>) -> Result<Option<u64>, ConfigError> {
    match us {
        Some(x) if x.is_nan() || x < 0.0 => Err(bad(key, x, "cannot be negative")),
        Some(x) => Ok(Some(us_to_ps(x))),
        None => Ok(None),
    }
}

/// Validates `[trace]` for a network of `entities` entities and a
/// workload of `entries` traffic entries.
pub fn validate(
    f: &TraceFile,
    seed: u64,
    entities: u32,
    entries: usize,
) -> Result<TraceSpec, ConfigError> {
    let p = &f.packets;
    let packets = if p.enabled {
        let mut events = 0u8;
        match &p.events {
            None => events = u8::MAX,
            Some(names) => {
                for n in names {
                    let Some(e) = PacketEvent::from_name(n) else {
                        return Err(bad(
                            "trace.packets.events",
                            format!("{n:?}"),
                            "unknown event (known: enqueue, dequeue, trim, drop, bounce, ecn_mark, pause)",
                        ));
                    };
                    events |= 1 << e as u8;
                }
            }
        }
        check_entities("trace.packets.entities", &p.entities, entities)?;
        if let Some(&e) = p.entries.iter().flatten().find(|&&e| e >= entries as u64) {
            return Err(bad(
                "trace.packets.entries",
                e,
                &format!("no such traffic entry (the scenario has {entries} [[traffic]] entries)"),
            ));
        }
        let start_ps = time_us("trace.packets.start_us", p.start_us)?.unwrap_or(0);
        let end_ps = time_us("trace.packets.end_us", p.end_us)?.unwrap_or(u64::MAX);
        if end_ps <= start_ps {
            return Err(bad(
                "trace.packets.end_us",
                p.end_us.unwrap_or(0.0),
                "must be after trace.packets.start_us",
            ));
        }
        let sample = p.sample.unwrap_or(1.0);
        if sample.is_nan() || sample <= 0.0 || sample > 1.0 {
            return Err(bad("trace.packets.sample", sample, "must be in (0, 1]"));
        }
        // 2^64 * sample, exactly representable for the thresholds that matter.
        let sample_below = (sample < 1.0).then_some((sample * 18_446_744_073_709_551_616.0) as u64);
        let max_rows = p.max_rows.unwrap_or(DEFAULT_MAX_ROWS);
        if max_rows == 0 {
            return Err(bad("trace.packets.max_rows", 0, "must be at least 1"));
        }
        Some(PacketFilter {
            events,
            flows: sorted(&p.flows),
            entries: sorted(&p.entries),
            entities: sorted(&p.entities),
            ports: sorted(&p.ports),
            start_ps,
            end_ps,
            sample_below,
            seed,
            max_rows,
        })
    } else {
        None
    };

    let q = &f.queues;
    let queues = if q.enabled {
        let us = q.interval_us.unwrap_or(DEFAULT_INTERVAL_US);
        let interval_ps = if us.is_nan() || us <= 0.0 {
            0
        } else {
            us_to_ps(us)
        };
        if interval_ps == 0 {
            return Err(bad("trace.queues.interval_us", us, "must be positive"));
        }
        check_entities("trace.queues.entities", &q.entities, entities)?;
        let format = match q.format.as_deref().unwrap_or("parquet") {
            "parquet" => QueueFormat::Parquet,
            "hdf5" if cfg!(feature = "hdf5") => QueueFormat::Hdf5,
            "hdf5" => {
                return Err(bad(
                    "trace.queues.format",
                    "\"hdf5\"",
                    "this psim was built without HDF5 support; use format = \"parquet\" or rebuild with --features hdf5",
                ))
            }
            other => {
                return Err(bad(
                    "trace.queues.format",
                    format!("{other:?}"),
                    "unknown format (known: parquet, hdf5)",
                ))
            }
        };
        Some(QueueTraceSpec {
            interval_ps,
            entities: sorted(&q.entities),
            ports: sorted(&q.ports),
            format,
        })
    } else {
        None
    };
    Ok(TraceSpec {
        packets,
        queues,
        tofino: f.tofino.enabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TraceSpec, ConfigError> {
        let f: TraceFile = toml::from_str(text).unwrap();
        validate(&f, 1, 100, 2)
    }

    #[test]
    fn off_by_default() {
        assert_eq!(parse("").unwrap(), TraceSpec::default());
        assert!(!parse("").unwrap().any());
    }

    #[test]
    fn unknown_event_names_the_key() {
        let e = parse("[packets]\nenabled = true\nevents = [\"enqueue\", \"ecn\"]")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("trace.packets.events = \"ecn\": unknown event"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_name_their_keys() {
        for (text, key) in [
            (
                "[packets]\nenabled = true\nsample = 0",
                "trace.packets.sample",
            ),
            (
                "[packets]\nenabled = true\nsample = 1.5",
                "trace.packets.sample",
            ),
            (
                "[packets]\nenabled = true\nentities = [100]",
                "trace.packets.entities",
            ),
            (
                "[packets]\nenabled = true\nstart_us = 5\nend_us = 5",
                "trace.packets.end_us",
            ),
            (
                "[packets]\nenabled = true\nmax_rows = 0",
                "trace.packets.max_rows",
            ),
            (
                "[queues]\nenabled = true\ninterval_us = 0",
                "trace.queues.interval_us",
            ),
            (
                "[queues]\nenabled = true\nformat = \"csv\"",
                "trace.queues.format",
            ),
            (
                "[queues]\nenabled = true\nentities = [7, 1000]",
                "trace.queues.entities",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with(key), "{text}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[cfg(not(feature = "hdf5"))]
    #[test]
    fn hdf5_without_the_feature_says_how_to_get_it() {
        let e = parse("[queues]\nenabled = true\nformat = \"hdf5\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--features hdf5") && e.contains("parquet"),
            "{e}"
        );
    }

    #[test]
    fn filters_are_sorted_and_applied() {
        let s = parse(
            "[packets]\nenabled = true\nevents = [\"drop\", \"dequeue\"]\nflows = [9, 3]\n\
             entities = [4, 2]\nports = [1]\nstart_us = 1\nend_us = 2",
        )
        .unwrap();
        let f = s.packets.unwrap();
        assert_eq!(f.flows, Some(vec![3, 9]));
        assert!(f.wants_entity(2) && f.wants_entity(4) && !f.wants_entity(3));
        assert!(f.wants_at(PacketEvent::Drop, 1_000_000, 1));
        assert!(!f.wants_at(PacketEvent::Enqueue, 1_000_000, 1));
        assert!(!f.wants_at(PacketEvent::Drop, 999_999, 1));
        assert!(!f.wants_at(PacketEvent::Drop, 2_000_000, 1));
        assert!(!f.wants_at(PacketEvent::Drop, 1_000_000, 0));
        assert!(f.wants_packet(3, 77) && !f.wants_packet(4, 77));
        let e = parse("[packets]\nenabled = true\nentries = [1]")
            .unwrap()
            .packets
            .unwrap();
        assert!(e.wants_packet(1 << 56 | 5 << 32 | 7, 0));
        assert!(!e.wants_packet(5 << 32 | 7, 0));
        let err = parse("[packets]\nenabled = true\nentries = [2]").unwrap_err();
        assert!(
            err.to_string().contains("trace.packets.entries = 2"),
            "{err}"
        );
    }

    #[test]
    fn sampling_keeps_about_the_fraction_asked() {
        let f = parse("[packets]\nenabled = true\nsample = 0.1")
            .unwrap()
            .packets
            .unwrap();
        let kept = (0..100_000u64)
            .filter(|&s| f.wants_packet(s % 7, s))
            .count();
        // Binomial(100000, 0.1): sd = 95; 5 sd either side.
        assert!((9_525..=10_475).contains(&kept), "{kept}");
    }
}
