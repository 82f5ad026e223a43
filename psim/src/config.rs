//! Scenario files: TOML parsed into raw structs, then validated into a typed
//! [`Scenario`].
//!
//! Every table rejects unknown keys, so a typo is an error rather than a
//! silently ignored setting. Errors are one line and name the key or file.
//! Units are in key names (`link_gbps`, `latency_ns`, `stop_us`).

use crate::packet::Protocol;
use crate::queue::{Capacity, CpQueue, Marking, NdpQueue, QueueSpec};
use crate::topo::{FatTree, LeafSpine, LinkSpec, Topology};
use crate::transport::{
    CbrParams, DctcpParams, MptcpParams, NdpParams, ProtocolParams, Spray, TcpParams,
};
use crate::units::{gbps_to_bps, ns_to_ps, us_to_ps};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
    #[error("traffic[{index}].protocol = {name:?}: unknown protocol (known: cbr, ndp, phost, tcp, dctcp, mptcp)")]
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
    /// The workload rejected the traffic section.
    #[error("traffic: {0}")]
    Workload(#[from] workloads::WorkloadError),
}

/// The scenario file as written.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Free-form name.
    #[serde(default)]
    pub name: Option<String>,
    /// Global seed: every random stream derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Stop the simulation at this time. Without it, the run ends when no event is left.
    #[serde(default)]
    pub stop_us: Option<f64>,
    /// Network.
    pub topology: TopologyFile,
    /// Switch ports.
    #[serde(default)]
    pub switch: SwitchFile,
    /// Host NICs.
    #[serde(default)]
    pub host: HostFile,
    /// Transport parameters.
    #[serde(default)]
    pub protocol: ProtocolFile,
    /// Traffic entries: `protocol` plus a `workloads` pattern.
    #[serde(default)]
    pub traffic: Vec<toml::Table>,
    /// Default shard and thread counts (the command line overrides them).
    #[serde(default)]
    pub run: RunFile,
    /// Packet-event and queue traces (off by default); see `trace/spec.rs`.
    #[serde(default)]
    pub trace: crate::trace::TraceFile,
}

fn default_seed() -> u64 {
    1
}
fn default_gbps() -> f64 {
    10.0
}
fn default_latency_ns() -> f64 {
    1000.0
}
fn default_one() -> u32 {
    1
}

/// `[topology]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologyFile {
    /// 3-tier k-ary FatTree.
    Fattree {
        /// Switch radix, even.
        k: u32,
        /// Hosts per ToR = oversubscription x k/2.
        #[serde(default = "default_one")]
        oversubscription: u32,
        /// Default rate of every link, Gb/s (10 in the NDP paper, [P] §6).
        #[serde(default = "default_gbps")]
        link_gbps: f64,
        /// Default propagation delay of every link, ns.
        #[serde(default = "default_latency_ns")]
        latency_ns: f64,
        /// Host-ToR links.
        #[serde(default)]
        host_link: TierFile,
        /// ToR-aggregation links.
        #[serde(default)]
        tor_link: TierFile,
        /// Aggregation-core links.
        #[serde(default)]
        core_link: TierFile,
        /// Individual core links with their own rate or delay (e.g. NDP V24's degraded link).
        #[serde(default)]
        degraded_links: Vec<DegradedLinkFile>,
    },
    /// 2-tier leaf-spine.
    Leafspine {
        /// Leaf (ToR) switches.
        leaves: u32,
        /// Spine switches.
        spines: u32,
        /// Hosts under each leaf.
        hosts_per_leaf: u32,
        /// Default link rate, Gb/s.
        #[serde(default = "default_gbps")]
        link_gbps: f64,
        /// Default propagation delay, ns.
        #[serde(default = "default_latency_ns")]
        latency_ns: f64,
        /// Host-leaf links.
        #[serde(default)]
        host_link: TierFile,
        /// Leaf-spine links.
        #[serde(default)]
        uplink: TierFile,
    },
}

/// `[[topology.degraded_links]]`: the link between core switch `core` and pod `pod`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DegradedLinkFile {
    /// Core switch index, 0 to (k/2)^2 - 1.
    pub core: u32,
    /// Pod, 0 to k - 1.
    pub pod: u32,
    /// Rate, Gb/s (default: the core tier's).
    pub gbps: Option<f64>,
    /// Propagation delay, ns (default: the core tier's).
    pub latency_ns: Option<f64>,
}

/// Overrides for one tier of links.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TierFile {
    /// Rate, Gb/s.
    pub gbps: Option<f64>,
    /// Propagation delay, ns.
    pub latency_ns: Option<f64>,
}

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

/// `[protocol]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolFile {
    /// `[protocol.cbr]`.
    #[serde(default)]
    pub cbr: CbrFile,
    /// `[protocol.ndp]` (also used by pHost).
    #[serde(default)]
    pub ndp: NdpFile,
    /// `[protocol.tcp]` (also used by DCTCP and MPTCP subflows).
    #[serde(default)]
    pub tcp: TcpFile,
    /// `[protocol.dctcp]`.
    #[serde(default)]
    pub dctcp: DctcpFile,
    /// `[protocol.mptcp]`.
    #[serde(default)]
    pub mptcp: MptcpFile,
}

/// `[protocol.tcp]`: see `transport/tcp.rs` for defaults and sources.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpFile {
    /// Payload bytes per segment (default 9000).
    pub mss_bytes: Option<u32>,
    /// Initial window, segments (default 10).
    pub iw_packets: Option<u32>,
    /// Minimum RTO, µs (default 200000).
    pub min_rto_us: Option<f64>,
    /// RTO before the first RTT sample, µs (default 1000000).
    pub initial_rto_us: Option<f64>,
    /// Largest backed-off RTO, µs (default 60000000).
    pub max_rto_us: Option<f64>,
    /// Duplicate ACKs that trigger fast retransmit (default 3).
    pub dupack_threshold: Option<u32>,
    /// RFC 5827 early retransmit (default true).
    pub early_retransmit: Option<bool>,
    /// ACK every second segment (default false).
    pub delayed_ack: Option<bool>,
    /// Delayed-ACK timeout, µs (default 40000).
    pub delayed_ack_us: Option<f64>,
    /// SYN / SYN-ACK before data (default false).
    pub handshake: Option<bool>,
    /// RFC 3168 ECN for plain TCP (default false).
    pub ecn: Option<bool>,
    /// Receiver window, segments (default 0 = unlimited).
    pub rwnd_packets: Option<u32>,
}

/// `[protocol.dctcp]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpFile {
    /// Estimation gain (default 1/16).
    pub g: Option<f64>,
    /// Alpha before the first window (default 1).
    pub initial_alpha: Option<f64>,
}

/// `[protocol.mptcp]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpFile {
    /// Subflows per connection (default 8).
    pub subflows: Option<u32>,
}

/// `[protocol.ndp]`: see `transport/ndp.rs` for defaults and sources.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NdpFile {
    /// Initial window, packets (default 23).
    pub iw_packets: Option<u32>,
    /// Payload bytes per packet (default 9000).
    pub mtu_bytes: Option<u32>,
    /// Minimum RTO, µs (default 1000).
    pub min_rto_us: Option<f64>,
    /// `"permute"` (default) or `"random"`.
    pub spray: Option<Spray>,
    /// Path penalty (default true).
    pub path_penalty: Option<bool>,
    /// Pull pacing jitter, fraction of the interval (default 0).
    pub pull_jitter: Option<f64>,
}

/// `[protocol.cbr]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CbrFile {
    /// Sending rate, Gb/s (default: the NIC rate).
    pub rate_gbps: Option<f64>,
    /// Wire bytes per packet (default 1500).
    pub packet_bytes: Option<u32>,
}

/// `[run]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// Number of shards.
    pub shards: Option<u32>,
    /// Number of worker threads.
    pub threads: Option<u32>,
}

/// A validated scenario, ready to build a simulation from.
#[derive(Clone)]
pub struct Scenario {
    /// Where it was read from.
    pub path: PathBuf,
    /// The file after `--set` overrides, defaults filled in.
    pub file: ScenarioFile,
    /// Global seed.
    pub seed: u64,
    /// Stop time, if any.
    pub stop_ps: Option<u64>,
    /// Network.
    pub topology: Topology,
    /// Discipline and capacity of switch ports.
    pub switch_queue: QueueSpec,
    /// Host NIC queues.
    pub nic_queue: QueueSpec,
    /// Transport parameters.
    pub protocols: ProtocolParams,
    /// Protocol of each traffic entry (indexed by `FlowSpec::class`).
    pub traffic_protocols: Vec<Protocol>,
    /// The traffic.
    pub workload: std::sync::Arc<workloads::Workload>,
    /// What to trace.
    pub trace: crate::trace::TraceSpec,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("path", &self.path)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl Scenario {
    /// Reads, overrides and validates a scenario file.
    pub fn load(path: &Path, sets: &[String]) -> Result<Scenario, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        Self::from_str(&text, path, sets)
    }

    /// Parses scenario text; `path` is used in messages and to resolve relative file names.
    pub fn from_str(text: &str, path: &Path, sets: &[String]) -> Result<Scenario, ConfigError> {
        let parse_err = |e: toml::de::Error, text: &str| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            ConfigError::Parse {
                path: path.into(),
                line,
                col,
                message: e.message().trim().replace('\n', " "),
            }
        };
        if sets.is_empty() {
            // Parse the text as written, so that schema errors point at the user's line.
            let file: ScenarioFile = toml::from_str(text).map_err(|e| parse_err(e, text))?;
            return Self::validate(file, path);
        }
        let mut table: toml::Table = toml::from_str(text).map_err(|e| parse_err(e, text))?;
        for s in sets {
            apply_set(&mut table, s)?;
        }
        let file: ScenarioFile =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| {
                    // The error comes from the overridden document: no position in the user's file applies.
                    ConfigError::ParseOverridden {
                        path: path.into(),
                        message: e.message().trim().replace('\n', " "),
                    }
                })?;
        Self::validate(file, path)
    }

    fn validate(file: ScenarioFile, path: &Path) -> Result<Scenario, ConfigError> {
        let stop_ps = match file.stop_us {
            Some(us) if us.is_nan() || us <= 0.0 => {
                return Err(bad("stop_us", us, "must be positive"));
            }
            Some(us) => Some(us_to_ps(us)),
            None => None,
        };
        let topology = build_topology(&file.topology)?;
        let ndp = ndp_params(&file.protocol.ndp)?;
        let switch_queue = switch_queue(&file.switch, ndp.mtu_bytes)?;
        let cap = match file.host.nic_queue_packets {
            Some(0) => return Err(bad("host.nic_queue_packets", 0, "must be at least 1")),
            Some(p) => Capacity::Packets(p),
            None => Capacity::Packets(1000),
        };
        // The switches' marking threshold, in packets, when they mark by threshold.
        let switch_k = match &switch_queue {
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
        let ecn_threshold = match file.host.nic_ecn_threshold {
            Some(0) => None,
            Some(k) => Some(k),
            None => switch_k,
        };
        let nic_queue = QueueSpec::Priority { cap, ecn_threshold };
        let cbr = &file.protocol.cbr;
        let mut protocols = ProtocolParams {
            cbr: CbrParams::default(),
            ndp,
            tcp: tcp_params(&file.protocol.tcp)?,
            dctcp: dctcp_params(&file.protocol.dctcp)?,
            mptcp: mptcp_params(&file.protocol.mptcp)?,
        };
        if let Some(g) = cbr.rate_gbps {
            protocols.cbr.rate_bps = Some(rate("protocol.cbr.rate_gbps", g)?);
        }
        if let Some(b) = cbr.packet_bytes {
            if b <= crate::packet::HEADER_BYTES {
                return Err(bad(
                    "protocol.cbr.packet_bytes",
                    b,
                    "must exceed the 64-byte header",
                ));
            }
            protocols.cbr.packet_bytes = b;
        }

        let mut traffic_protocols = Vec::new();
        let mut patterns = Vec::new();
        for (index, entry) in file.traffic.iter().enumerate() {
            let mut entry = entry.clone();
            let proto = match entry.remove("protocol") {
                None => return Err(ConfigError::MissingProtocol { index }),
                Some(toml::Value::String(s)) if Protocol::from_name(&s).is_some() => {
                    Protocol::from_name(&s).expect("checked")
                }
                Some(v) => {
                    let name = v
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string());
                    return Err(ConfigError::UnknownProtocol { index, name });
                }
            };
            traffic_protocols.push(proto);
            let spec: workloads::PatternSpec =
                toml::Value::Table(entry)
                    .try_into()
                    .map_err(|e: toml::de::Error| ConfigError::Traffic {
                        index,
                        message: e.message().trim().to_string(),
                    })?;
            patterns.push(spec);
        }
        let env = workloads::WorkloadEnv {
            hosts: topology.hosts(),
            host_link_bps: topology.host_link().rate_bps,
            bisection_bps: topology.bisection_bps(),
            hosts_per_rack: topology.hosts_per_tor(),
            seed: file.seed,
            stop_ps,
            base_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let workload = workloads::Workload::new(patterns, env)?;
        let trace = crate::trace::spec::validate(&file.trace, file.seed, topology.entities())?;
        Ok(Scenario {
            trace,
            path: path.into(),
            seed: file.seed,
            stop_ps,
            topology,
            switch_queue,
            nic_queue,
            protocols,
            traffic_protocols,
            workload: std::sync::Arc::new(workload),
            file,
        })
    }

    /// The resolved scenario as JSON, for the manifest.
    pub fn resolved_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.file).unwrap_or(serde_json::Value::Null)
    }
}

/// Builds the switch port discipline from `[switch]`.
fn switch_queue(sw: &SwitchFile, mtu: u32) -> Result<QueueSpec, ConfigError> {
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

/// Builds NDP parameters from `[protocol.ndp]`.
fn ndp_params(f: &NdpFile) -> Result<NdpParams, ConfigError> {
    let d = NdpParams::default();
    let iw = f.iw_packets.unwrap_or(d.iw_packets);
    if iw == 0 {
        return Err(bad("protocol.ndp.iw_packets", 0, "must be at least 1"));
    }
    let mtu = f.mtu_bytes.unwrap_or(d.mtu_bytes);
    if mtu == 0 || mtu > 65_000 {
        return Err(bad("protocol.ndp.mtu_bytes", mtu, "must be 1 to 65000"));
    }
    let min_rto_ps = match f.min_rto_us {
        Some(us) if us.is_nan() || us <= 0.0 => {
            return Err(bad("protocol.ndp.min_rto_us", us, "must be positive"))
        }
        Some(us) => us_to_ps(us),
        None => d.min_rto_ps,
    };
    let pull_jitter = f.pull_jitter.unwrap_or(0.0);
    if !(0.0..1.0).contains(&pull_jitter) {
        return Err(bad(
            "protocol.ndp.pull_jitter",
            pull_jitter,
            "must be in [0, 1)",
        ));
    }
    Ok(NdpParams {
        iw_packets: iw,
        mtu_bytes: mtu,
        min_rto_ps,
        spray: f.spray.unwrap_or(d.spray),
        path_penalty: f.path_penalty.unwrap_or(d.path_penalty),
        pull_jitter,
    })
}

/// A positive duration in µs at `key`, in ps, or `default`.
fn positive_us(key: &str, v: Option<f64>, default: u64) -> Result<u64, ConfigError> {
    match v {
        Some(us) if us.is_nan() || us <= 0.0 || us_to_ps(us) == 0 => {
            Err(bad(key, us, "must be positive"))
        }
        Some(us) => Ok(us_to_ps(us)),
        None => Ok(default),
    }
}

/// Builds TCP parameters from `[protocol.tcp]`.
fn tcp_params(f: &TcpFile) -> Result<TcpParams, ConfigError> {
    let d = TcpParams::default();
    let mss = f.mss_bytes.unwrap_or(d.mss_bytes);
    if mss == 0 || mss > 65_000 {
        return Err(bad("protocol.tcp.mss_bytes", mss, "must be 1 to 65000"));
    }
    let iw = f.iw_packets.unwrap_or(d.iw_packets);
    if iw == 0 {
        return Err(bad("protocol.tcp.iw_packets", 0, "must be at least 1"));
    }
    let dupack_threshold = f.dupack_threshold.unwrap_or(d.dupack_threshold);
    if dupack_threshold == 0 {
        return Err(bad(
            "protocol.tcp.dupack_threshold",
            0,
            "must be at least 1",
        ));
    }
    let min_rto_ps = positive_us("protocol.tcp.min_rto_us", f.min_rto_us, d.min_rto_ps)?;
    let max_rto_ps = positive_us("protocol.tcp.max_rto_us", f.max_rto_us, d.max_rto_ps)?;
    if max_rto_ps < min_rto_ps {
        return Err(bad(
            "protocol.tcp.max_rto_us",
            max_rto_ps as f64 / 1e6,
            "must be at least min_rto_us",
        ));
    }
    Ok(TcpParams {
        mss_bytes: mss,
        iw_packets: iw,
        min_rto_ps,
        initial_rto_ps: positive_us(
            "protocol.tcp.initial_rto_us",
            f.initial_rto_us,
            d.initial_rto_ps,
        )?,
        max_rto_ps,
        dupack_threshold,
        early_retransmit: f.early_retransmit.unwrap_or(d.early_retransmit),
        delayed_ack: f.delayed_ack.unwrap_or(d.delayed_ack),
        delayed_ack_ps: positive_us(
            "protocol.tcp.delayed_ack_us",
            f.delayed_ack_us,
            d.delayed_ack_ps,
        )?,
        handshake: f.handshake.unwrap_or(d.handshake),
        ecn: f.ecn.unwrap_or(d.ecn),
        rwnd_packets: f.rwnd_packets.unwrap_or(d.rwnd_packets),
    })
}

/// Builds DCTCP parameters from `[protocol.dctcp]`.
fn dctcp_params(f: &DctcpFile) -> Result<DctcpParams, ConfigError> {
    let d = DctcpParams::default();
    let g = f.g.unwrap_or(d.g);
    if !(g > 0.0 && g <= 1.0) {
        return Err(bad("protocol.dctcp.g", g, "must be in (0, 1]"));
    }
    let initial_alpha = f.initial_alpha.unwrap_or(d.initial_alpha);
    if !(0.0..=1.0).contains(&initial_alpha) {
        return Err(bad(
            "protocol.dctcp.initial_alpha",
            initial_alpha,
            "must be in [0, 1]",
        ));
    }
    Ok(DctcpParams { g, initial_alpha })
}

/// Builds MPTCP parameters from `[protocol.mptcp]`.
fn mptcp_params(f: &MptcpFile) -> Result<MptcpParams, ConfigError> {
    let subflows = f.subflows.unwrap_or(MptcpParams::default().subflows);
    if subflows == 0 || subflows > 255 {
        return Err(bad("protocol.mptcp.subflows", subflows, "must be 1 to 255"));
    }
    Ok(MptcpParams { subflows })
}

fn bad(key: &str, value: impl std::fmt::Display, message: &str) -> ConfigError {
    ConfigError::BadValue {
        key: key.into(),
        value: value.to_string(),
        message: message.into(),
    }
}

fn rate(key: &str, gbps: f64) -> Result<u64, ConfigError> {
    if gbps.is_nan() || gbps <= 0.0 || gbps_to_bps(gbps) == 0 {
        return Err(ConfigError::NonPositiveRate {
            key: key.into(),
            value: gbps,
        });
    }
    Ok(gbps_to_bps(gbps))
}

fn latency(key: &str, ns: f64) -> Result<u64, ConfigError> {
    if ns.is_nan() || ns < 0.0 {
        return Err(ConfigError::NegativeLatency {
            key: key.into(),
            value: ns,
        });
    }
    Ok(ns_to_ps(ns))
}

fn tier(name: &str, t: &TierFile, gbps: f64, ns: f64) -> Result<LinkSpec, ConfigError> {
    Ok(LinkSpec {
        rate_bps: rate(&format!("topology.{name}.gbps"), t.gbps.unwrap_or(gbps))?,
        delay_ps: latency(
            &format!("topology.{name}.latency_ns"),
            t.latency_ns.unwrap_or(ns),
        )?,
    })
}

fn build_topology(t: &TopologyFile) -> Result<Topology, ConfigError> {
    match t {
        TopologyFile::Fattree {
            k,
            oversubscription,
            link_gbps,
            latency_ns,
            host_link,
            tor_link,
            core_link,
            degraded_links,
        } => {
            rate("topology.link_gbps", *link_gbps)?;
            latency("topology.latency_ns", *latency_ns)?;
            if *k < 2 || !k.is_multiple_of(2) {
                return Err(ConfigError::OddK { k: *k });
            }
            if *k > 128 {
                return Err(bad(
                    "topology.k",
                    k,
                    "at most 128 (psim's port ids are 16-bit)",
                ));
            }
            if *oversubscription == 0 || *oversubscription > 64 {
                return Err(bad(
                    "topology.oversubscription",
                    oversubscription,
                    "must be 1 to 64",
                ));
            }
            let core = tier("core_link", core_link, *link_gbps, *latency_ns)?;
            let mut ft = FatTree::new(
                *k,
                *oversubscription,
                tier("host_link", host_link, *link_gbps, *latency_ns)?,
                tier("tor_link", tor_link, *link_gbps, *latency_ns)?,
                core,
            );
            for (i, d) in degraded_links.iter().enumerate() {
                let key = format!("topology.degraded_links[{i}]");
                if d.core >= ft.cores() {
                    return Err(bad(
                        &format!("{key}.core"),
                        d.core,
                        &format!("must be below {} (the number of cores)", ft.cores()),
                    ));
                }
                if d.pod >= *k {
                    return Err(bad(
                        &format!("{key}.pod"),
                        d.pod,
                        &format!("must be below k = {k}"),
                    ));
                }
                let link = LinkSpec {
                    rate_bps: d
                        .gbps
                        .map(|g| rate(&format!("{key}.gbps"), g))
                        .transpose()?
                        .unwrap_or(core.rate_bps),
                    delay_ps: d
                        .latency_ns
                        .map(|n| latency(&format!("{key}.latency_ns"), n))
                        .transpose()?
                        .unwrap_or(core.delay_ps),
                };
                ft = ft.with_core_link_override(d.core, d.pod, link);
            }
            Ok(Topology::FatTree(ft))
        }
        TopologyFile::Leafspine {
            leaves,
            spines,
            hosts_per_leaf,
            link_gbps,
            latency_ns,
            host_link,
            uplink,
        } => {
            rate("topology.link_gbps", *link_gbps)?;
            latency("topology.latency_ns", *latency_ns)?;
            for (key, v) in [
                ("topology.leaves", leaves),
                ("topology.spines", spines),
                ("topology.hosts_per_leaf", hosts_per_leaf),
            ] {
                if *v == 0 || *v > 4096 {
                    return Err(bad(key, v, "must be 1 to 4096"));
                }
            }
            Ok(Topology::LeafSpine(LeafSpine::new(
                *leaves,
                *spines,
                *hosts_per_leaf,
                tier("host_link", host_link, *link_gbps, *latency_ns)?,
                tier("uplink", uplink, *link_gbps, *latency_ns)?,
            )))
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Applies `a.b.0.c=value`: the value is parsed as TOML (number, boolean,
/// string, array), falling back to a bare string.
fn apply_set(table: &mut toml::Table, arg: &str) -> Result<(), ConfigError> {
    let mut root = toml::Value::Table(std::mem::take(table));
    let result = set_path(&mut root, arg);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_path(root: &mut toml::Value, arg: &str) -> Result<(), ConfigError> {
    let err = |m: &str| ConfigError::Set {
        arg: arg.into(),
        message: m.into(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected key=value"))?;
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").ok_or_else(|| err("no value"))?,
        Err(_) => toml::Value::String(value.to_string()),
    };
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err("empty key segment"));
    }
    let (last, walk) = parts.split_last().expect("split yields at least one part");
    let mut cur = root;
    for part in walk {
        cur = match cur {
            toml::Value::Table(t) => t
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new())),
            toml::Value::Array(a) => {
                let len = a.len();
                let idx: usize = part
                    .parse()
                    .map_err(|_| err(&format!("`{part}` is not an array index")))?;
                a.get_mut(idx)
                    .ok_or_else(|| err(&format!("index {idx} out of range (length {len})")))?
            }
            _ => {
                return Err(err(&format!(
                    "`{part}` is inside a value that is not a table"
                )))
            }
        };
    }
    match cur {
        toml::Value::Table(t) => {
            t.insert(last.to_string(), value);
        }
        toml::Value::Array(a) => {
            let len = a.len();
            let idx: usize = last
                .parse()
                .map_err(|_| err(&format!("`{last}` is not an array index")))?;
            *a.get_mut(idx)
                .ok_or_else(|| err(&format!("index {idx} out of range (length {len})")))? = value;
        }
        _ => {
            return Err(err(&format!(
                "`{last}` is inside a value that is not a table"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "seed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n";

    fn load(text: &str, sets: &[&str]) -> Result<Scenario, ConfigError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_str(text, Path::new("test.toml"), &sets)
    }

    #[test]
    fn defaults_fill_in() {
        let s = load(BASE, &[]).unwrap();
        assert_eq!(s.topology.hosts(), 16);
        assert_eq!(
            s.topology.host_link(),
            LinkSpec {
                rate_bps: 10_000_000_000,
                delay_ps: 1_000_000
            }
        );
        assert_eq!(
            s.switch_queue,
            QueueSpec::DropTail {
                cap: Capacity::Packets(100)
            }
        );
        assert_eq!(s.seed, 3);
    }

    #[test]
    fn set_overrides_nested_keys_and_array_entries() {
        let text = format!(
            "{BASE}[[traffic]]\nprotocol = \"cbr\"\npattern = \"permutation\"\nsize_bytes = 1000\n"
        );
        let s = load(
            &text,
            &[
                "topology.k=8",
                "topology.core_link.gbps=40",
                "traffic.0.size_bytes=2000",
            ],
        )
        .unwrap();
        assert_eq!(s.topology.hosts(), 128);
        assert_eq!(s.file.traffic[0]["size_bytes"].as_integer(), Some(2000));
    }

    #[test]
    fn malformed_toml_names_file_and_line() {
        let e = load("seed = 1\n[topology\n", &[]).unwrap_err().to_string();
        assert!(e.starts_with("test.toml:2:"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn unknown_key_is_an_error() {
        let e = load(&format!("{BASE}colour = 3\n"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        // Inside [topology] (an internally tagged enum) serde can only point at
        // the table's header, line 2; the message names the key itself.
        assert!(e.starts_with("test.toml:2:"), "{e}");
        let e = load(&format!("{BASE}link_gpbs = 3\n"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("link_gpbs"), "{e}");
    }

    #[test]
    fn odd_k_is_rejected() {
        let e = load(BASE, &["topology.k=5"]).unwrap_err();
        assert!(matches!(e, ConfigError::OddK { k: 5 }), "{e}");
    }

    #[test]
    fn non_positive_rates_and_negative_latencies_are_rejected() {
        for v in ["0", "-10"] {
            let e = load(BASE, &[&format!("topology.link_gbps={v}")]).unwrap_err();
            assert!(matches!(e, ConfigError::NonPositiveRate { .. }), "{e}");
        }
        let e = load(BASE, &["topology.core_link.gbps=0"]).unwrap_err();
        assert!(e.to_string().contains("topology.core_link.gbps"), "{e}");
        let e = load(BASE, &["topology.latency_ns=-1"]).unwrap_err();
        assert!(matches!(e, ConfigError::NegativeLatency { .. }), "{e}");
    }

    #[test]
    fn queue_capacity_choices() {
        assert_eq!(
            load(BASE, &["switch.queue_bytes=12000"])
                .unwrap()
                .switch_queue,
            QueueSpec::DropTail {
                cap: Capacity::Bytes(12000)
            }
        );
        // NDP defaults: 8-packet data queue, header queue of the same bytes at 9000 B payloads = 1125 x 64 B.
        assert_eq!(
            load(BASE, &["switch.queue=\"ndp\""]).unwrap().switch_queue,
            QueueSpec::Ndp {
                data: Capacity::Packets(8),
                header: Capacity::Bytes(72_000),
                trim_arrival_only: false,
                return_to_sender: true
            }
        );
        assert_eq!(72_000 / 64, 1125);
        assert!(
            load(BASE, &["switch.header_bytes=100"]).is_err(),
            "ndp key on droptail"
        );
        assert!(load(
            BASE,
            &["switch.queue=\"cp\"", "switch.return_to_sender=false"]
        )
        .is_err());
        assert!(matches!(
            load(BASE, &["switch.queue=\"cp\""]).unwrap().switch_queue,
            QueueSpec::Cp {
                threshold: Capacity::Packets(8),
                ..
            }
        ));
        assert!(load(BASE, &["protocol.ndp.iw_packets=0"]).is_err());
        assert!(load(BASE, &["protocol.ndp.spray=\"sideways\""]).is_err());
        assert!(load(BASE, &["switch.queue_bytes=1", "switch.queue_packets=1"]).is_err());
        assert!(load(BASE, &["switch.queue_packets=0"]).is_err());
        assert!(load(BASE, &["switch.queue=\"wred\""]).is_err());
    }

    #[test]
    fn marking_and_class_queues_take_their_defaults_and_reject_bad_keys() {
        let ecn = load(BASE, &["switch.queue=\"ecn\""]).unwrap();
        assert_eq!(
            ecn.switch_queue,
            QueueSpec::Red {
                cap: Capacity::Packets(200),
                marking: Marking::Threshold { k: 30 },
                ecn: true,
            }
        );
        // Host NICs mark at the switches' K unless told otherwise.
        assert_eq!(
            ecn.nic_queue,
            QueueSpec::Priority {
                cap: Capacity::Packets(1000),
                ecn_threshold: Some(30),
            }
        );
        let off = load(BASE, &["switch.queue=\"ecn\"", "host.nic_ecn_threshold=0"]).unwrap();
        assert!(matches!(
            off.nic_queue,
            QueueSpec::Priority {
                ecn_threshold: None,
                ..
            }
        ));
        assert!(matches!(
            load(BASE, &["switch.queue=\"red\""]).unwrap().switch_queue,
            QueueSpec::Red {
                marking: Marking::Red { .. },
                ..
            }
        ));
        let classes = load(BASE, &["switch.queue=\"classes\""]).unwrap();
        let QueueSpec::Classes { ndp, other, .. } = classes.switch_queue else {
            panic!("classes")
        };
        assert!(matches!(*ndp, QueueSpec::Ndp { .. }));
        assert!(matches!(*other, QueueSpec::Red { .. }));
        for (sets, key) in [
            (&["switch.ecn_threshold=5"][..], "switch.ecn_threshold"),
            (
                &["switch.queue=\"red\"", "switch.red_max_p=2.0"][..],
                "switch.red_max_p",
            ),
            (
                &[
                    "switch.queue=\"classes\"",
                    "switch.tcp_class_queue=\"fifo\"",
                ][..],
                "switch.tcp_class_queue",
            ),
            (
                &["protocol.tcp.iw_packets=0"][..],
                "protocol.tcp.iw_packets",
            ),
            (
                &["protocol.tcp.min_rto_us=-1"][..],
                "protocol.tcp.min_rto_us",
            ),
            (&["protocol.dctcp.g=0"][..], "protocol.dctcp.g"),
            (
                &["protocol.mptcp.subflows=0"][..],
                "protocol.mptcp.subflows",
            ),
        ] {
            let e = load(BASE, sets)
                .err()
                .unwrap_or_else(|| panic!("{sets:?} accepted"));
            assert!(e.to_string().contains(key), "{sets:?}: {e}");
        }
    }

    #[test]
    fn traffic_protocol_is_required_and_known() {
        let t = format!("{BASE}[[traffic]]\npattern = \"permutation\"\nsize_bytes = 10\n");
        assert!(matches!(
            load(&t, &[]).unwrap_err(),
            ConfigError::MissingProtocol { index: 0 }
        ));
        let e = load(&t, &["traffic.0.protocol=\"quic\""]).unwrap_err();
        assert!(matches!(e, ConfigError::UnknownProtocol { .. }), "{e}");
    }

    #[test]
    fn bad_set_arguments() {
        assert!(matches!(
            load(BASE, &["nokey"]).unwrap_err(),
            ConfigError::Set { .. }
        ));
        assert!(matches!(
            load(BASE, &["seed.x=1"]).unwrap_err(),
            ConfigError::Set { .. }
        ));
        assert!(matches!(
            load(BASE, &["traffic.3.x=1"]).unwrap_err(),
            ConfigError::Set { .. } | ConfigError::ParseOverridden { .. }
        ));
        let e = load(BASE, &["topology.colour=1"]).unwrap_err();
        assert!(matches!(e, ConfigError::ParseOverridden { .. }), "{e}");
        assert!(e.to_string().contains("colour"), "{e}");
    }
}
