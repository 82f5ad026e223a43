//! Scenario files: TOML parsed into raw structs, then validated into a typed
//! [`Scenario`].
//!
//! Every table rejects unknown keys, so a typo is an error rather than a
//! silently ignored setting. Errors are one line and name the key or file.
//! Units are in key names (`link_gbps`, `latency_ns`, `stop_us`).

mod error;
mod keys;
mod overrides;
pub mod profile;
mod ranges;
mod switch;
mod topology;

pub use error::ConfigError;
pub use switch::{HostFile, NamedQueue, PortQueues, SwitchFile, TierQueue};
pub use topology::{DegradedLinkFile, TierFile, TopologyFile};

use crate::packet::Protocol;
use crate::queue::QueueConfig;
use crate::topo::Topology;
use crate::transport::ProtocolParams;
use crate::units::{PS_PER_SEC, PS_PER_US};
pub(crate) use error::{bad, latency, rate, time_ps};
pub use error::{MAX_LINK_DELAY_PS, MAX_LINK_GBPS, MAX_TIME_PS};
use overrides::{apply_set, key_at, line_col};
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
    /// `[link]`: random loss on every link (`net/link.rs`).
    #[serde(
        default,
        skip_serializing_if = "crate::net::link::LinkFile::is_default"
    )]
    pub link: crate::net::link::LinkFile,
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
    /// `[replay]`: run the scenario, then replay its schedule with LSTF
    /// (`replay.rs`); absent: one ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplayFile>,
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
    /// Stop with an error when no packet has reached a host for this long,
    /// in simulated seconds, while events still happen (a livelock, or a
    /// PFC deadlock); 0 turns the check off. Default [`DEFAULT_WATCHDOG_S`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog_s: Option<f64>,
    /// The order in which a window's events run (docs/engine.md,
    /// "Entity-major windows"); results are the same either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_order: Option<WindowOrder>,
    /// How long a flow's completion takes to reach the workload (closed-loop
    /// patterns: incast rounds, clients, collectives, `.cm` triggers), µs.
    /// Default: the largest link delay of the network (docs/engine.md,
    /// "Workload flows and completion notices"). Windows are never longer,
    /// so a short delay on a network of long links costs more windows; the
    /// results never depend on the partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice_delay_us: Option<f64>,
}

/// `[run] window_order`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowOrder {
    /// Entity by entity wherever no link is shorter than a window; by time
    /// elsewhere.
    #[default]
    Auto,
    /// Always by time, across entities (the reference order, for checks).
    Time,
}

/// Default stall span, simulated seconds: far above any RTO psim's
/// transports use (TCP's 1 s minimum is the largest), far below the hours a
/// livelocked batch job would burn.
pub const DEFAULT_WATCHDOG_S: f64 = 10.0;

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
    /// Stall span of the progress watchdog, ps; None: off.
    pub watchdog_ps: Option<u64>,
    /// `run.notice_delay_us`, ps; None: the largest link delay.
    pub notice_ps: Option<u64>,
    /// Network.
    pub topology: Topology,
    /// The discipline of every port: host NICs and each switch tier.
    pub queues: PortQueues,
    /// Transport parameters.
    pub protocols: ProtocolParams,
    /// Protocol of each traffic entry (indexed by `FlowSpec::class`).
    pub traffic_protocols: Vec<Protocol>,
    /// Each traffic entry's application (`app`, transport/app.rs); None: a backlog.
    pub traffic_apps: Vec<Option<crate::transport::app::AppSpec>>,
    /// Whether each traffic entry's flows are RDMA Reads (`verb = "read"`,
    /// transport/roce/read.rs); false: writes.
    pub traffic_reads: Vec<bool>,
    /// The traffic.
    pub workload: std::sync::Arc<workloads::Workload>,
    /// What to trace.
    pub trace: crate::trace::TraceSpec,
    /// Record and replay (`[replay]`), when set.
    pub replay: Option<crate::replay::ReplaySpec>,
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
        let mut table: toml::Table = toml::from_str(text).map_err(|e| parse_err(e, text))?;
        if sets.is_empty() && !profile::named(&table) {
            let table_doc = &table;
            switch::reject_old_keys(table_doc)?;
            ranges::check_numbers(table_doc)?;
            // Parse the text as written, so that schema errors point at the user's line.
            let file: ScenarioFile = toml::from_str(text).map_err(|e| {
                // Inside a tagged table serde points at its header and names
                // no key: find the key from the value it quotes, and its line.
                let message = e.message().trim().replace('\n', " ");
                let key = e.span().and_then(|s| {
                    let table = key_at(text, s.start)?;
                    keys::key_in_table(table_doc, &table, &message)
                });
                let Some(key) = key else {
                    return parse_err(e, text);
                };
                let at = keys::value_offset(text, &key)
                    .or(e.span().map(|s| s.start))
                    .unwrap_or(0);
                let (line, col) = line_col(text, at);
                ConfigError::Parse {
                    path: path.into(),
                    line,
                    col,
                    message: format!("`{key}`: {message}"),
                }
            })?;
            return Self::validate(file, path);
        }
        for s in sets {
            apply_set(&mut table, s)?;
        }
        // After the overrides: a profile fills only the keys still missing.
        profile::apply(&mut table)?;
        switch::reject_old_keys(&table)?;
        ranges::check_numbers(&table)?;
        // Parse the overridden document as text, so that a schema error has a
        // position there, and name the key at it: no line of the user's file applies.
        let merged = toml::to_string(&table).map_err(|e| ConfigError::ParseOverridden {
            path: path.into(),
            message: e.to_string(),
        })?;
        let file: ScenarioFile = toml::from_str(&merged).map_err(|e: toml::de::Error| {
            let message = e.message().trim().replace('\n', " ");
            let key = e
                .span()
                .and_then(|s| key_at(&merged, s.start))
                .map(|k| keys::key_in_table(&table, &k, &message).unwrap_or(k));
            ConfigError::ParseOverridden {
                path: path.into(),
                message: match key {
                    Some(k) => format!("`{k}`: {message}"),
                    None => message,
                },
            }
        })?;
        Self::validate(file, path)
    }

    fn validate(file: ScenarioFile, path: &Path) -> Result<Scenario, ConfigError> {
        let stop_ps = match file.stop_us {
            Some(us) if us.is_nan() || us <= 0.0 => {
                return Err(bad("stop_us", us, "must be positive"));
            }
            Some(us) => Some(time_ps("stop_us", us, PS_PER_US, MAX_TIME_PS)?),
            None => None,
        };
        let watchdog_ps = match file.run.watchdog_s.unwrap_or(DEFAULT_WATCHDOG_S) {
            s if !(s >= 0.0 && s.is_finite()) => {
                return Err(bad(
                    "run.watchdog_s",
                    s,
                    "must be 0 (off) or a positive number",
                ));
            }
            0.0 => None,
            s => Some(time_ps("run.watchdog_s", s, PS_PER_SEC, MAX_TIME_PS)?),
        };
        let notice_ps = match file.run.notice_delay_us {
            Some(us) if !(us > 0.0 && us.is_finite()) => {
                return Err(bad(
                    "run.notice_delay_us",
                    us,
                    "must be a positive time: a completion reaches the workload after it happens",
                ));
            }
            Some(us) => Some(time_ps("run.notice_delay_us", us, PS_PER_US, MAX_TIME_PS)?),
            None => None,
        };
        if notice_ps == Some(0) {
            return Err(bad(
                "run.notice_delay_us",
                file.run.notice_delay_us.unwrap_or(0.0),
                "must be at least 1 ps",
            ));
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let topology = topology::build_topology(&file.topology, &base)?;
        file.protocol.validate()?;
        file.link.validate("link")?;
        let protocols = file.protocol.clone();
        let mut traffic_protocols = Vec::new();
        let mut traffic_apps = Vec::new();
        let mut traffic_reads = Vec::new();
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
            let app = match entry.remove("app") {
                None => None,
                Some(v) => {
                    let key = format!("traffic[{index}].app");
                    let spec: crate::transport::app::AppSpec =
                        v.try_into()
                            .map_err(|e: toml::de::Error| ConfigError::Traffic {
                                index,
                                key: ".app".into(),
                                message: e.message().trim().replace('\n', " "),
                            })?;
                    spec.validate(&key)?;
                    if !proto.takes_messages() {
                        return Err(bad(
                            &format!("traffic[{index}].protocol"),
                            proto.name(),
                            "takes no `app` messages (only roce, dcqcn, timely, irn and its variants, tcp, dctcp and rc3 do)",
                        ));
                    }
                    Some(spec)
                }
            };
            traffic_reads.push(read_verb(
                index,
                entry.remove("verb"),
                proto,
                app.is_some(),
            )?);
            traffic_apps.push(app);
            let spec: workloads::PatternSpec =
                toml::Value::Table(entry)
                    .try_into()
                    .map_err(|e: toml::de::Error| {
                        let message = e.message().trim().replace('\n', " ");
                        let entry = toml::Value::Table(file.traffic[index].clone());
                        ConfigError::Traffic {
                            index,
                            key: keys::offending_key(&entry, &message)
                                .map(|k| format!(".{k}"))
                                .unwrap_or_default(),
                            message,
                        }
                    })?;
            patterns.push(spec);
        }
        // Every port must hold one full packet of what crosses it (else the
        // run livelocks): the NICs carry every protocol of the traffic.
        let mut protos = traffic_protocols.clone();
        protos.sort_by_key(|p| *p as u8);
        protos.dedup();
        // "One packet" of the disciplines' defaults, and of PFC's bounds on
        // headroom and buffers, is the traffic's largest on the wire (NDP's
        // when there is no traffic).
        let packet_bytes = ranges::full_packet_bytes(&protos, &protocols)
            .unwrap_or(protocols.ndp.mtu_bytes as u64 + crate::packet::HEADER_BYTES as u64);
        let mut queues = switch::port_queues(
            &file.switch,
            &file.host,
            protocols.ndp.mtu_bytes,
            packet_bytes,
        )?;
        switch::resolve_named(&file.switch, &topology, &mut queues)?;
        if file.switch.pfc.enabled {
            let ports = (0..topology.entities())
                .filter(|&e| topology.kind(e) != crate::topo::EntityKind::Host)
                .map(|e| topology.port_count(e) as usize)
                .max()
                .unwrap_or(0);
            file.switch
                .pfc
                .validate_pool("switch.pfc", ports, packet_bytes)?;
        }
        for (key, q) in queues.tables() {
            ranges::check_queue_fits(&key, q, &protos, &protocols)?;
        }
        switch::check_port_sizes(&topology, &queues, ranges::full_packet(&protos, &protocols))?;
        switch::check_scaled_ramps(&topology, &queues)?;
        let env = workloads::WorkloadEnv {
            hosts: topology.hosts(),
            host_link_bps: topology.host_link().rate_bps,
            bisection_bps: topology.bisection_bps(),
            hosts_per_rack: topology.hosts_per_tor(),
            seed: file.seed,
            stop_ps,
            base_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let switch_marks = queues.switch_configs().any(QueueConfig::marks_ecn);
        protocols.roce.check_with_scenario(
            &traffic_protocols,
            queues.tiers[0].name(),
            switch_marks,
        )?;
        check_roce_lossless(&protocols, &traffic_protocols, &patterns, &file.switch.pfc)?;
        let workload = workloads::Workload::new(patterns, env)?;
        let trace = crate::trace::spec::validate(
            &file.trace,
            file.seed,
            topology.entities(),
            traffic_protocols.len(),
        )?;
        let replay = match &file.replay {
            Some(r) => Some(r.validate(
                &queues,
                &traffic_protocols,
                path.parent().unwrap_or(Path::new("")),
            )?),
            None => None,
        };
        Ok(Scenario {
            replay,
            trace,
            path: path.into(),
            seed: file.seed,
            stop_ps,
            watchdog_ps,
            notice_ps,
            topology,
            queues,
            protocols,
            traffic_protocols,
            traffic_apps,
            traffic_reads,
            workload: std::sync::Arc::new(workload),
            file,
        })
    }

    /// The resolved scenario as JSON, for the manifest: the file after
    /// `--set`, with every default that applies written out (link tiers,
    /// port disciplines' capacities, the watchdog, trace settings). Keys
    /// that have no value are left out rather than written as `null`: no
    /// `stop_us` (run until done), no `name`, filters that keep everything,
    /// CBR's `rate_gbps` (each source's NIC rate). A pure function of the
    /// scenario (sweeps compare it with a manifest's).
    pub fn resolved_json(&self) -> serde_json::Value {
        let mut file = self.file.clone();
        topology::resolve_defaults(&mut file.topology);
        file.run.watchdog_s.get_or_insert(DEFAULT_WATCHDOG_S);
        let env = &self.queues.env;
        file.host.queue = file.host.queue.resolved(env);
        file.switch.pfc = file.switch.pfc.resolved();
        file.protocol.dcqcn = file.protocol.dcqcn.resolved();
        if let (Some(t), Some(p)) = (file.switch.tofino.as_mut(), &self.queues.tofino) {
            t.meter_burst_bytes = Some(p.burst_bytes);
        }
        file.switch.queue = file.switch.queue.resolved(env);
        for t in [
            &mut file.switch.tor,
            &mut file.switch.agg,
            &mut file.switch.core,
            &mut file.switch.to_host,
        ]
        .into_iter()
        .flatten()
        {
            t.queue = t.queue.resolved(env);
        }
        for n in &mut file.switch.named {
            n.queue = n.queue.resolved(env);
        }
        let mut v = serde_json::to_value(&file).unwrap_or(serde_json::Value::Null);
        let trace = &mut v["trace"];
        let spec = crate::trace::spec::DEFAULT_MAX_ROWS;
        for (part, key, default) in [
            ("packets", "start_us", serde_json::json!(0.0)),
            ("packets", "sample", serde_json::json!(1.0)),
            ("packets", "max_rows", serde_json::json!(spec)),
            (
                "queues",
                "interval_us",
                serde_json::json!(crate::trace::spec::DEFAULT_INTERVAL_US),
            ),
            ("queues", "format", serde_json::json!("parquet")),
        ] {
            if let Some(t) = trace.get_mut(part).and_then(|t| t.as_object_mut()) {
                let slot = t.entry(key).or_insert(serde_json::Value::Null);
                if slot.is_null() {
                    *slot = default;
                }
            }
        }
        drop_nulls(&mut v);
        v
    }
}

/// Removes `null` members of objects, at every depth.
fn drop_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// `[[traffic]] verb`: "write" (the default) or "read" (an RDMA Read,
/// transport/roce/read.rs), for a protocol that reads and without `app`.
fn read_verb(
    index: usize,
    verb: Option<toml::Value>,
    proto: Protocol,
    has_app: bool,
) -> Result<bool, ConfigError> {
    let key = format!("traffic[{index}].verb");
    let read = match verb.as_ref().map(|v| v.as_str()) {
        None | Some(Some("write")) => false,
        Some(Some("read")) => true,
        _ => {
            let v = verb.map(|v| v.to_string()).unwrap_or_default();
            return Err(bad(&key, v, "must be \"write\" or \"read\""));
        }
    };
    if read && !proto.reads() {
        return Err(bad(
            &format!("traffic[{index}].protocol"),
            proto.name(),
            "cannot read: reads run on roce, dcqcn, timely, irn, irn_dcqcn, irn_timely, irn_aimd and irn_dctcp (roce_aimd and roce_dctcp open their windows on ACKs, which Read responses do not get)",
        ));
    }
    if read && has_app {
        return Err(bad(
            &format!("traffic[{index}].app"),
            "a table",
            "a read moves the whole flow on one request: `app` messages need verb = \"write\"",
        ));
    }
    Ok(read)
}

/// `protocol.roce.pfc = true` turns go-back-N RoCE's timeout off ([TH]
/// §4.3.1: with PFC nothing is lost), so a RoCE flow at a priority that
/// the switches do not keep lossless would never resend a dropped packet
/// and hang. IRN keeps its timeouts under PFC and is not checked. A flow
/// list's per-row priorities are not known here.
fn check_roce_lossless(
    protocols: &crate::transport::ProtocolParams,
    traffic_protocols: &[Protocol],
    patterns: &[workloads::PatternSpec],
    pfc: &crate::net::pfc::PfcConfig,
) -> Result<(), ConfigError> {
    if !protocols.roce.pfc {
        return Ok(());
    }
    for (index, (proto, pattern)) in traffic_protocols.iter().zip(patterns).enumerate() {
        if !proto.go_back_n() {
            continue;
        }
        let prio = match pattern {
            workloads::PatternSpec::Poisson(p) => p.priority,
            _ => 0,
        };
        let why = if !pfc.enabled {
            "switch.pfc.enabled = false".to_string()
        } else if !pfc.lossless.contains(&prio) {
            format!("switch.pfc.lossless = {:?} leaves it out", pfc.lossless)
        } else {
            continue;
        };
        return Err(bad(
            "protocol.roce.pfc",
            true,
            &format!(
                "traffic[{index}] ({}) runs at priority {prio}, which no switch keeps lossless ({why}), \
                 and with pfc = true RoCE never resends a dropped packet: enable PFC for that priority \
                 or set protocol.roce.pfc = false",
                proto.name()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;
    use crate::topo::{EntityKind, LinkSpec};

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
        for tier in [EntityKind::Tor, EntityKind::Agg, EntityKind::Core] {
            assert_eq!(s.queues.config(tier, false), &QueueConfig::default());
        }
        assert_eq!(s.queues.config(EntityKind::Host, false).name(), "priority");
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

    /// A degraded link's own loss: 0 to 1 (1 = failed), on both of its ports
    /// only; a bad value names its key.
    #[test]
    fn a_degraded_link_carries_its_own_loss_rate() {
        let link = "[[topology.degraded_links]]\ncore = 1\npod = 3\nloss_rate = 1.0\n";
        let s = load(&format!("{BASE}{link}"), &[]).unwrap();
        let t = &s.topology;
        let lossy: Vec<(u32, u16)> = (0..t.entities())
            .flat_map(|e| (0..t.port_count(e)).map(move |p| (e, p)))
            .filter(|&(e, p)| t.link_loss(e, p).is_some())
            .collect();
        assert_eq!(lossy.len(), 2, "{lossy:?}");
        for (e, p) in lossy {
            let far = t.port(e, p).peer;
            let ends = [t.kind(e), t.kind(far)];
            assert!(ends.contains(&EntityKind::Core) && ends.contains(&EntityKind::Agg));
            assert_eq!(t.link_loss(e, p), Some(1.0));
        }
        let e = load(
            &format!("{BASE}{link}"),
            &["topology.degraded_links.0.loss_rate=1.5"],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("topology.degraded_links[0].loss_rate"), "{e}");
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

    /// `[run] window_order` takes "auto" (the default) and "time"; anything
    /// else is refused naming the key.
    #[test]
    fn the_window_order_is_auto_or_time() {
        assert_eq!(load(BASE, &[]).unwrap().file.run.window_order, None);
        let s = load(BASE, &["run.window_order=\"time\""]).unwrap();
        assert_eq!(s.file.run.window_order, Some(WindowOrder::Time));
        let e = load(BASE, &["run.window_order=\"entity\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.window_order"), "{e}");
    }

    /// `[switch.to_host.queue]` takes the switch ports that feed a host,
    /// over the tier's; a missing kind, a bad key, and the Tofino chip
    /// (whose ToR ports are all its own) are refused naming the table.
    #[test]
    fn to_host_ports_take_their_own_discipline() {
        let s = load(BASE, &["switch.to_host.queue.kind=\"fq_codel\""]).unwrap();
        assert_eq!(s.queues.config(EntityKind::Tor, true).name(), "fq_codel");
        assert_eq!(s.queues.config(EntityKind::Tor, false).name(), "droptail");
        assert_eq!(s.queues.config(EntityKind::Host, true).name(), "priority");
        let names: Vec<_> = s.queues.switch_configs().map(|q| q.name()).collect();
        assert_eq!(names, ["droptail", "droptail", "droptail", "fq_codel"]);
        let plain = load(BASE, &[]).unwrap();
        assert_eq!(
            plain.queues.config(EntityKind::Tor, true).name(),
            "droptail"
        );
        for (sets, key) in [
            (
                &["switch.to_host.queue.queue_packets=5"][..],
                "switch.to_host.queue.kind",
            ),
            (
                &["switch.to_host.queue={kind=\"fq_codel\", target_us=0}"][..],
                "switch.to_host.queue.target_us",
            ),
            (
                &[
                    "switch.to_host.queue.kind=\"ndp\"",
                    "switch.queue.kind=\"ndp\"",
                    "switch.tofino={}",
                ][..],
                "switch.to_host",
            ),
        ] {
            let e = load(BASE, sets).unwrap_err().to_string();
            assert!(e.contains(key), "{sets:?}: {e}");
        }
    }

    #[test]
    fn queue_tables_take_their_kind_and_keys() {
        let s = load(
            BASE,
            &["switch.queue={kind=\"droptail\", queue_bytes=12000}"],
        )
        .unwrap();
        let QueueConfig::DropTail(d) = s.queues.config(EntityKind::Tor, false) else {
            panic!("droptail")
        };
        assert_eq!((d.queue_packets, d.queue_bytes), (None, Some(12000)));
        let s = load(BASE, &["switch.queue.kind=\"ndp\""]).unwrap();
        assert_eq!(
            s.queues.config(EntityKind::Core, false),
            &QueueConfig::Ndp(Default::default())
        );
        let s = load(BASE, &["switch.queue={kind=\"classes\"}"]).unwrap();
        assert_eq!(
            s.queues.config(EntityKind::Agg, false),
            &QueueConfig::Classes(Default::default())
        );
        for (sets, key) in [
            (
                &["switch.queue.header_bytes=100"][..],
                "switch.queue.kind = missing",
            ),
            (
                &["switch.queue={kind=\"droptail\", header_bytes=100}"][..],
                "header_bytes",
            ),
            (
                &["switch.queue={kind=\"cp\", return_to_sender=false}"][..],
                "return_to_sender",
            ),
            (
                &["switch.queue={kind=\"ecn\", queue_bytes=1, queue_packets=1}"][..],
                "switch.queue.queue_bytes",
            ),
            (
                &["switch.queue={kind=\"ndp\", queue_packets=0}"][..],
                "switch.queue.queue_packets",
            ),
            (
                &["switch.queue={kind=\"red\", red_max_p=2.0}"][..],
                "switch.queue.red_max_p",
            ),
            (
                &["switch.queue={kind=\"red\", red_min=20.0}"][..],
                "switch.queue.red_max",
            ),
            (
                &["switch.tor.queue={kind=\"cp\", capacity_bytes=0}"][..],
                "switch.tor.queue.capacity_bytes",
            ),
            (
                &["host.queue={kind=\"priority\", queue_packets=0}"][..],
                "host.queue.queue_packets",
            ),
            (
                &["protocol.ndp.iw_packets=0"][..],
                "protocol.ndp.iw_packets",
            ),
            (&["protocol.ndp.spray=\"sideways\""][..], "sideways"),
        ] {
            let e = load(BASE, sets)
                .err()
                .unwrap_or_else(|| panic!("{sets:?} accepted"));
            assert!(e.to_string().contains(key), "{sets:?}: {e}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }

    #[test]
    fn an_unknown_kind_lists_the_registered_names() {
        let e = load(BASE, &["switch.queue.kind=\"wred\""])
            .unwrap_err()
            .to_string();
        assert!(e.contains("wred"), "{e}");
        for name in QueueConfig::NAMES {
            assert!(e.contains(name), "{name} missing: {e}");
        }
    }

    #[test]
    fn old_flat_keys_say_where_they_went() {
        for (text, sets, want) in [
            (
                "[switch]\nqueue = \"ndp\"\n",
                &[][..],
                "[switch.queue] kind = \"ndp\"",
            ),
            (
                "",
                &["switch.queue=\"ecn\""][..],
                "[switch.queue] kind = \"ecn\"",
            ),
            (
                "[switch]\nqueue_packets = 8\n",
                &[][..],
                "switch.queue.queue_packets",
            ),
            ("", &["switch.red_min=3.0"][..], "switch.queue.red_min"),
            (
                "",
                &["switch.cp_capacity_bytes=9"][..],
                "switch.queue.capacity_bytes",
            ),
            (
                "",
                &["switch.tcp_class_queue=\"ecn\""][..],
                "switch.queue.class",
            ),
            (
                "[host]\nnic_queue_packets = 10\n",
                &[][..],
                "host.queue.queue_packets",
            ),
            (
                "",
                &["host.nic_ecn_threshold=0"][..],
                "host.queue.ecn_threshold",
            ),
        ] {
            let e = load(&format!("{BASE}{text}"), sets)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}{sets:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// An edge AQM that reads the used slack from `rank` needs a NIC that
    /// keeps it there in the same form; `"measured"` needs nothing.
    #[test]
    fn edge_aqms_need_a_nic_that_keeps_the_used_slack() {
        let go = |sets: &[&str]| load(BASE, sets).map(drop).map_err(|e| e.to_string());
        let fifo_plus = [
            "switch.queue.kind=\"fifo_plus\"",
            "switch.tor.queue.kind=\"edge_ecn\"",
        ];
        let e = go(&fifo_plus).unwrap_err();
        assert!(
            e.contains("host.queue.kind = priority")
                && e.contains("switch.tor.queue's edge_ecn")
                && e.contains("give [host.queue] kind = \"fifo_plus\""),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        go(&[&fifo_plus[..], &["host.queue.kind=\"fifo_plus\""]].concat()).unwrap();
        // At the ports that feed a host, the same.
        let to_host = ["switch.to_host.queue.kind=\"edge_codel\""];
        assert!(go(&to_host)
            .unwrap_err()
            .contains("switch.to_host.queue's edge_codel"));
        go(&[
            "switch.to_host.queue.kind=\"edge_codel\"",
            "switch.to_host.queue.used_slack=\"measured\"",
        ])
        .unwrap();
        // The LSTF form: the NIC must take its wait from the slack, which
        // FIFO+ (adding it) does not.
        let lstf = [
            "switch.queue.kind=\"lstf\"",
            "switch.tor.queue.kind=\"edge_ecn\"",
            "switch.tor.queue.used_slack=\"lstf\"",
            "host.slack.policy=\"tail\"",
        ];
        let e = go(&[&lstf[..], &["host.queue.kind=\"fifo_plus\""]].concat()).unwrap_err();
        assert!(e.contains("give [host.queue] kind = \"lstf\""), "{e}");
        go(&[&lstf[..], &["host.queue.kind=\"lstf\""]].concat()).unwrap();
        // Without an edge AQM the default NIC is fine.
        go(&["switch.queue.kind=\"fifo_plus\""]).unwrap();
    }

    /// The NIC marks at the ToRs' K (asked through the spec), unless told otherwise.
    #[test]
    fn host_nics_mark_at_the_tors_threshold() {
        use crate::packet::flags;
        use crate::queue::testkit::{data, Kit};
        use crate::queue::Outcome;
        // Offers 40 ECN-capable data packets to a NIC; how many got marked.
        let marks = |sets: &[&str]| {
            let s = load(BASE, sets).unwrap();
            let (mut k, mut q) = (
                Kit::new(0),
                s.queues.build(EntityKind::Host, false, None, 0, 0),
            );
            (0..40)
                .filter(|&i| {
                    let mut p = data(i, 1000);
                    p.flags |= flags::ECT;
                    k.offer(&mut q, p).contains(&(Outcome::Marked, i))
                })
                .count()
        };
        assert_eq!(marks(&[]), 0, "drop-tail switches: no marking");
        assert_eq!(
            marks(&["switch.queue.kind=\"ecn\""]),
            9,
            "K = 30: arrivals 31..40"
        );
        let k5 = ["switch.tor.queue={kind=\"ecn\", ecn_threshold=5}"];
        assert_eq!(marks(&k5), 34, "the ToR tier's K");
        assert_eq!(
            marks(&["switch.core.queue.kind=\"ecn\""]),
            0,
            "not the core's"
        );
        assert_eq!(
            marks(&["switch.queue.kind=\"classes\""]),
            9,
            "the TCP class's K"
        );
        let off = [
            "switch.queue.kind=\"ecn\"",
            "host.queue={kind=\"priority\", ecn_threshold=0}",
        ];
        assert_eq!(marks(&off), 0);
        let own = ["host.queue={kind=\"priority\", ecn_threshold=2}"];
        assert_eq!(marks(&own), 37);
    }

    #[test]
    fn a_tier_table_overrides_the_switch_queue_for_that_tier_only() {
        let s = load(
            BASE,
            &["switch.queue.kind=\"ecn\"", "switch.agg.queue.kind=\"ndp\""],
        )
        .unwrap();
        let names = [EntityKind::Tor, EntityKind::Agg, EntityKind::Core]
            .map(|t| s.queues.config(t, false).name());
        assert_eq!(names, ["ecn", "ndp", "ecn"]);
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
        // A bad value names its dotted key, though the overridden document has no
        // line in the file (inside a tagged table such as [topology], its table).
        let e = load(BASE, &["protocol.rc3.bucket_rule=bogus"]).unwrap_err();
        assert!(e.to_string().contains("`protocol.rc3.bucket_rule`"), "{e}");
        let e = load(BASE, &["topology.k=-4"]).unwrap_err();
        assert!(e.to_string().contains("`topology.k`"), "{e}");
    }

    /// "One packet" in the disciplines' defaults (fq's DRR quantum here) is
    /// the largest packet the traffic sends on the wire: MSS/MTU + 64 B
    /// header, IRN's overhead included, NDP's packet with no traffic.
    #[test]
    fn disciplines_one_packet_default_follows_the_traffic() {
        let quantum = |traffic: &str, sets: &[&str]| {
            let text = format!(
                "[topology]\nkind = \"fattree\"\nk = 4\n[host.queue]\nkind = \"fq\"\n{traffic}"
            );
            load(&text, sets).unwrap().resolved_json()["host"]["queue"]["quantum_bytes"]
                .as_u64()
                .unwrap()
        };
        let entry = |proto: &str| {
            format!("[[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 0\nsenders = 2\nsize_bytes = 10000\n")
        };
        assert_eq!(quantum(&entry("tcp"), &[]), 9000 + 64);
        let mss = ["protocol.tcp.mss_bytes=1460"];
        assert_eq!(quantum(&entry("tcp"), &mss), 1460 + 64);
        assert_eq!(quantum(&entry("roce"), &[]), 1000 + 64);
        let irn = ["protocol.irn.header_overhead_bytes=16"];
        assert_eq!(quantum(&entry("irn"), &irn), 1000 + 16 + 64);
        let mixed = entry("tcp") + &entry("roce");
        assert_eq!(quantum(&mixed, &mss), 1460 + 64);
        assert_eq!(
            quantum(&entry("ndp"), &["protocol.ndp.mtu_bytes=4000"]),
            4064
        );
        assert_eq!(quantum("", &[]), 9064);
    }

    /// PFC's headroom must hold one packet of the traffic on the wire: 1064 B
    /// for RoCE's 1000 B MTU (5000 B is enough), 9064 B for TCP's 9000 B;
    /// the error names the key and the bound.
    #[test]
    fn pfc_headroom_bound_is_the_traffics_packet() {
        let text = |proto: &str| {
            format!(
                "[topology]\nkind = \"fattree\"\nk = 4\n[switch.pfc]\nenabled = true\n\
                 headroom_bytes = 5000\n[[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\n\
                 receiver = 0\nsenders = 2\nsize_bytes = 10000\n"
            )
        };
        load(&text("roce"), &[]).unwrap();
        let e = load(&text("roce"), &["switch.pfc.headroom_bytes=1000"]).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("switch.pfc.headroom_bytes") && e.contains("1064 bytes"),
            "{e}"
        );
        let e = load(&text("tcp"), &[]).unwrap_err().to_string();
        assert!(
            e.contains("switch.pfc.headroom_bytes") && e.contains("9064 bytes"),
            "{e}"
        );
    }

    /// An `ecn_ramp` Kmax that scales with the rate (the default) must fit
    /// the buffer at every port's rate: 50 KB at 25 Gb/s is 20 KB at the
    /// k = 4 FatTree's 10 Gb/s and fits 100 KB, but is 200 KB at 100 Gb/s.
    #[test]
    fn a_scaled_kmax_must_fit_the_buffer_at_each_ports_rate() {
        let text = "[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"ecn_ramp\"\n\
                    queue_bytes = 100000\nkmin_kb = 10\nkmax_kb = 50\n[[traffic]]\nprotocol = \"dcqcn\"\n\
                    pattern = \"permutation\"\nsize_bytes = 10000\n";
        load(text, &[]).unwrap();
        let e = load(text, &["topology.link_gbps=100"])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("switch.queue.kmax_kb") && e.contains("200000 bytes at a 100 Gb/s port"),
            "{e}"
        );
        load(
            text,
            &[
                "topology.link_gbps=100",
                "switch.queue.scale_with_rate=false",
            ],
        )
        .unwrap();
    }

    /// RoCE with `pfc = true` has no timeout, so its traffic must run at a
    /// priority the switches keep lossless: PFC off, or the priority left
    /// out of `lossless`, is a one-line error naming `protocol.roce.pfc`.
    /// IRN keeps its timeouts and is not refused.
    #[test]
    fn roce_over_pfc_needs_a_lossless_priority() {
        let text = |proto: &str| {
            format!(
                "[topology]\nkind = \"fattree\"\nk = 4\n[switch.pfc]\nenabled = true\n\
                 [protocol.roce]\npfc = true\n[[traffic]]\nprotocol = \"{proto}\"\n\
                 pattern = \"poisson\"\nload = 0.1\nsize_dist = \"irn_heavy\"\nstop_us = 10\n"
            )
        };
        load(&text("dcqcn"), &["switch.queue.kind=\"ecn_ramp\""]).unwrap();
        for (proto, sets) in [
            ("roce", &["switch.pfc.enabled=false"][..]),
            ("roce", &["switch.pfc.lossless=[3]"][..]),
            (
                "timely",
                &["traffic.0.priority=2", "switch.pfc.lossless=[0, 1]"][..],
            ),
        ] {
            let e = load(&text(proto), sets).unwrap_err().to_string();
            assert!(
                e.starts_with("protocol.roce.pfc") && e.contains("traffic[0]") && !e.contains('\n'),
                "{proto} {sets:?}: {e}"
            );
        }
        load(
            &text("roce"),
            &["traffic.0.priority=3", "switch.pfc.lossless=[3]"],
        )
        .unwrap();
        load(&text("irn"), &["switch.pfc.enabled=false"]).unwrap();
        load(
            &text("roce"),
            &["switch.pfc.enabled=false", "protocol.roce.pfc=false"],
        )
        .unwrap();
    }

    /// The manifest's `config` writes out defaults that depend on other
    /// settings: PFC's static X-OFF (buffer − headroom = 240 000 − 20 000,
    /// docs/pfc.md), CoDel's MTU guard (NDP's 9000 B payload + 64 B header),
    /// and firmware-style DCQCN's constants (docs/rdma.md: T = 300 µs, F = 1);
    /// the rate steps, which scale with each NIC, stay out.
    #[test]
    fn resolved_config_writes_out_dependent_defaults() {
        let text = "[topology]\nkind = \"fattree\"\nk = 4\n\
                    [switch.queue]\nkind = \"ecn_ramp\"\n[switch.pfc]\nenabled = true\n\
                    [[traffic]]\nprotocol = \"dcqcn\"\npattern = \"incast\"\nreceiver = 0\nsenders = 2\nsize_bytes = 10000\n";
        let v = load(text, &[]).unwrap().resolved_json();
        assert_eq!(v["switch"]["pfc"]["xoff_bytes"], 220_000);
        let codel = load(
            text,
            &[
                "switch.pfc.enabled=false",
                "switch.core.queue.kind=\"codel\"",
            ],
        );
        let v2 = codel.unwrap().resolved_json();
        // DCQCN's 1000 B payload + 64 B header: the traffic's packet, not NDP's.
        assert_eq!(v2["switch"]["core"]["queue"]["mtu_bytes"], 1064);
        let d = &v["protocol"]["dcqcn"];
        assert_eq!(d["rate_timer_us"], 300.0);
        assert_eq!(d["fast_recovery_stages"], 1);
        assert!(d.get("rate_ai_mbps").is_none(), "{d}");
    }
}
