//! `[switch]` and `[host]`: the queue disciplines of switch ports and host NICs.

use super::error::{bad, ConfigError};
use crate::queue::{Capacity, CpQueue, Marking, NdpQueue, QueueSpec};
use serde::{Deserialize, Serialize};

/// `[switch]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchFile {
    /// Queue discipline of every switch output port: `droptail`, `ndp`, `cp`,
    /// `ecn` (DCTCP threshold marking), `red`, or `classes` (NDP and TCP
    /// classes, fair-queued).
    #[serde(default = "default_discipline")]
    pub queue: String,
    /// Capacity in packets. droptail: the queue (default 100, ns-3's
    /// DropTailQueue default); ndp: the data queue (default 8, [P] §3.1.1);
    /// cp: the cut threshold (default 8).
    pub queue_packets: Option<u32>,
    /// The same in bytes (instead of packets).
    pub queue_bytes: Option<u64>,
    /// ndp: header queue bytes (default: the data queue's byte budget at the
    /// NDP MTU payload, 8 x 9000 B = 1125 headers, [P] §3.2.4, spec A3).
    pub header_bytes: Option<u64>,
    /// ndp: always trim the arriving packet (NetFPGA, [P] §4) instead of the fair coin.
    pub trim_arrival_only: Option<bool>,
    /// ndp: return headers to the sender when the header queue is full (default true, [P] §3.2.4).
    pub return_to_sender: Option<bool>,
    /// cp: total capacity in bytes (default: twice the threshold in MTU payloads).
    pub cp_capacity_bytes: Option<u64>,
    /// ecn: marking threshold K, in the capacity's unit (default 30 packets, [P] §6.1).
    pub ecn_threshold: Option<u64>,
    /// red: minimum threshold, in the capacity's unit (default 5).
    pub red_min: Option<f64>,
    /// red: maximum threshold (default 15).
    pub red_max: Option<f64>,
    /// red: marking probability at the maximum threshold (default 0.1).
    pub red_max_p: Option<f64>,
    /// red: EWMA weight of the average queue (default 0.002).
    pub red_weight: Option<f64>,
    /// ecn, red: mark ECN-capable packets instead of dropping them (default true).
    pub red_ecn: Option<bool>,
    /// classes: discipline of the non-NDP class, `ecn` (default), `red` or `droptail`.
    pub tcp_class_queue: Option<String>,
    /// classes: capacity of the non-NDP class in packets (default 200, [P] §6.1).
    pub tcp_queue_packets: Option<u32>,
}

impl Default for SwitchFile {
    fn default() -> Self {
        SwitchFile {
            queue: default_discipline(),
            queue_packets: None,
            queue_bytes: None,
            header_bytes: None,
            trim_arrival_only: None,
            return_to_sender: None,
            cp_capacity_bytes: None,
            ecn_threshold: None,
            red_min: None,
            red_max: None,
            red_max_p: None,
            red_weight: None,
            red_ecn: None,
            tcp_class_queue: None,
            tcp_queue_packets: None,
        }
    }
}

fn default_discipline() -> String {
    "droptail".into()
}

/// `[host]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostFile {
    /// NIC queue capacity in packets (default 1000: hosts should not be the bottleneck).
    pub nic_queue_packets: Option<u32>,
    /// CE-mark ECN-capable data above this many packets in the NIC queue
    /// (default: the switches' `ecn_threshold` when they mark, else off; 0 = off).
    pub nic_ecn_threshold: Option<u32>,
}

/// Builds the switch port discipline from `[switch]`.
pub(crate) fn switch_queue(sw: &SwitchFile, mtu: u32) -> Result<QueueSpec, ConfigError> {
    let cap = |default: u32| -> Result<Capacity, ConfigError> {
        match (sw.queue_packets, sw.queue_bytes) {
            (Some(_), Some(_)) => Err(ConfigError::BadValue {
                key: "switch.queue_bytes".into(),
                value: "both".into(),
                message: "give queue_packets or queue_bytes, not both".into(),
            }),
            (Some(0), _) => Err(bad("switch.queue_packets", 0, "must be at least 1")),
            (_, Some(0)) => Err(bad("switch.queue_bytes", 0, "must be at least 1")),
            (Some(p), None) => Ok(Capacity::Packets(p)),
            (None, Some(b)) => Ok(Capacity::Bytes(b)),
            (None, None) => Ok(Capacity::Packets(default)),
        }
    };
    // Every discipline-specific key, and the disciplines it applies to.
    let keys: [(&str, bool, &[&str]); 8] = [
        (
            "header_bytes",
            sw.header_bytes.is_some(),
            &["ndp", "classes"],
        ),
        (
            "trim_arrival_only",
            sw.trim_arrival_only.is_some(),
            &["ndp", "classes"],
        ),
        (
            "return_to_sender",
            sw.return_to_sender.is_some(),
            &["ndp", "classes"],
        ),
        ("cp_capacity_bytes", sw.cp_capacity_bytes.is_some(), &["cp"]),
        (
            "ecn_threshold",
            sw.ecn_threshold.is_some(),
            &["ecn", "classes"],
        ),
        (
            "red_min / red_max / red_max_p / red_weight",
            sw.red_min.is_some()
                || sw.red_max.is_some()
                || sw.red_max_p.is_some()
                || sw.red_weight.is_some(),
            &["red", "classes"],
        ),
        ("red_ecn", sw.red_ecn.is_some(), &["ecn", "red", "classes"]),
        (
            "tcp_class_queue / tcp_queue_packets",
            sw.tcp_class_queue.is_some() || sw.tcp_queue_packets.is_some(),
            &["classes"],
        ),
    ];
    let kind = sw.queue.as_str();
    const KNOWN: [&str; 6] = ["droptail", "ndp", "cp", "ecn", "red", "classes"];
    if !KNOWN.contains(&kind) {
        return Err(ConfigError::BadValue {
            key: "switch.queue".into(),
            value: format!("{kind:?}"),
            message: format!("unknown discipline (known: {})", KNOWN.join(", ")),
        });
    }
    for (key, set, applies) in keys {
        if set && !applies.contains(&kind) {
            return Err(bad(
                &format!("switch.{key}"),
                "set",
                &format!("only applies to queue = {}", applies.join(" or ")),
            ));
        }
    }
    let ndp = |data: Capacity| -> Result<QueueSpec, ConfigError> {
        let header = match sw.header_bytes {
            Some(0) => return Err(bad("switch.header_bytes", 0, "must be at least 64")),
            Some(b) => b,
            None => NdpQueue::header_bytes_for(data, mtu),
        };
        Ok(QueueSpec::Ndp {
            data,
            header: Capacity::Bytes(header),
            trim_arrival_only: sw.trim_arrival_only.unwrap_or(false),
            return_to_sender: sw.return_to_sender.unwrap_or(true),
        })
    };
    let marking = |cap: Capacity, red: bool| -> Result<QueueSpec, ConfigError> {
        let marking = if red {
            let min = sw.red_min.unwrap_or(5.0);
            let max = sw.red_max.unwrap_or(15.0);
            let max_p = sw.red_max_p.unwrap_or(0.1);
            let weight = sw.red_weight.unwrap_or(0.002);
            if !(min >= 0.0 && max > min) {
                return Err(bad(
                    "switch.red_max",
                    max,
                    "must exceed red_min, and red_min must be at least 0",
                ));
            }
            if !(max_p > 0.0 && max_p <= 1.0) {
                return Err(bad("switch.red_max_p", max_p, "must be in (0, 1]"));
            }
            if !(weight > 0.0 && weight <= 1.0) {
                return Err(bad("switch.red_weight", weight, "must be in (0, 1]"));
            }
            Marking::Red {
                min,
                max,
                max_p,
                weight,
            }
        } else {
            let k = sw
                .ecn_threshold
                .unwrap_or(crate::queue::red::DEFAULT_ECN_THRESHOLD_PACKETS as u64);
            Marking::Threshold { k }
        };
        Ok(QueueSpec::Red {
            cap,
            marking,
            ecn: sw.red_ecn.unwrap_or(true),
        })
    };
    match kind {
        "droptail" => Ok(QueueSpec::DropTail { cap: cap(100)? }),
        "ndp" => ndp(cap(crate::queue::ndp::DEFAULT_DATA_PACKETS)?),
        "cp" => {
            let threshold = cap(crate::queue::cp::DEFAULT_THRESHOLD_PACKETS)?;
            let capacity = match sw.cp_capacity_bytes {
                Some(0) => return Err(bad("switch.cp_capacity_bytes", 0, "must be positive")),
                Some(b) => Capacity::Bytes(b),
                None => CpQueue::default_capacity(threshold, mtu),
            };
            Ok(QueueSpec::Cp {
                threshold,
                capacity,
            })
        }
        "ecn" => marking(cap(crate::queue::red::DEFAULT_ECN_QUEUE_PACKETS)?, false),
        "red" => marking(cap(crate::queue::red::DEFAULT_ECN_QUEUE_PACKETS)?, true),
        _ => {
            // "classes": NDP's port for NDP, a large queue for the rest ([P] §3, [O]).
            let tcp_cap = match sw.tcp_queue_packets {
                Some(0) => return Err(bad("switch.tcp_queue_packets", 0, "must be at least 1")),
                Some(p) => Capacity::Packets(p),
                None => Capacity::Packets(crate::queue::red::DEFAULT_ECN_QUEUE_PACKETS),
            };
            let other = match sw.tcp_class_queue.as_deref().unwrap_or("ecn") {
                "ecn" => marking(tcp_cap, false)?,
                "red" => marking(tcp_cap, true)?,
                "droptail" => QueueSpec::DropTail { cap: tcp_cap },
                q => {
                    return Err(bad(
                        "switch.tcp_class_queue",
                        format!("{q:?}"),
                        "unknown class discipline (known: ecn, red, droptail)",
                    ))
                }
            };
            Ok(QueueSpec::Classes {
                ndp: Box::new(ndp(cap(crate::queue::ndp::DEFAULT_DATA_PACKETS)?)?),
                other: Box::new(other),
                quantum: mtu as u64 + crate::packet::HEADER_BYTES as u64,
            })
        }
    }
}

/// Builds the host NIC discipline from `[host]`: strict priority, control
/// first, marking ECN-capable data at the switches' threshold K when they mark
/// by threshold (as htsim's host queues do), unless `nic_ecn_threshold` says otherwise.
pub(crate) fn nic_queue(
    host: &HostFile,
    switch_queue: &QueueSpec,
) -> Result<QueueSpec, ConfigError> {
    let cap = match host.nic_queue_packets {
        Some(0) => return Err(bad("host.nic_queue_packets", 0, "must be at least 1")),
        Some(p) => Capacity::Packets(p),
        None => Capacity::Packets(1000),
    };
    // The switches' marking threshold, in packets, when they mark by threshold.
    let switch_k = match switch_queue {
        QueueSpec::Red {
            cap: Capacity::Packets(_),
            marking: Marking::Threshold { k },
            ..
        } => Some(*k as u32),
        QueueSpec::Classes { other, .. } => match **other {
            QueueSpec::Red {
                cap: Capacity::Packets(_),
                marking: Marking::Threshold { k },
                ..
            } => Some(k as u32),
            _ => None,
        },
        _ => None,
    };
    let ecn_threshold = match host.nic_ecn_threshold {
        Some(0) => None,
        Some(k) => Some(k),
        None => switch_k,
    };
    Ok(QueueSpec::Priority { cap, ecn_threshold })
}
