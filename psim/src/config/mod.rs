//! Scenario files: TOML parsed into raw structs, then validated into a typed
//! [`Scenario`].
//!
//! Every table rejects unknown keys, so a typo is an error rather than a
//! silently ignored setting. Errors are one line and name the key or file.
//! Units are in key names (`link_gbps`, `latency_ns`, `stop_us`).

mod error;
mod overrides;
mod switch;
mod topology;

pub use error::ConfigError;
pub use switch::{HostFile, SwitchFile};
pub use topology::{DegradedLinkFile, TierFile, TopologyFile};

use crate::packet::Protocol;
use crate::queue::QueueSpec;
use crate::topo::Topology;
use crate::transport::ProtocolParams;
use crate::units::us_to_ps;
use error::bad;
use overrides::{apply_set, line_col};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
    /// Transport parameters: `[protocol.<name>]`, one sub-table per transport
    /// configuration, each defined and checked in its transport's file.
    #[serde(default)]
    pub protocol: ProtocolParams,
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
        let topology = topology::build_topology(&file.topology)?;
        file.protocol.validate()?;
        let protocols = file.protocol.clone();
        let switch_queue = switch::switch_queue(&file.switch, protocols.ndp.mtu_bytes)?;
        let nic_queue = switch::nic_queue(&file.host, &switch_queue)?;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Capacity, Marking};
    use crate::topo::LinkSpec;

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
