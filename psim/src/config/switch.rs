//! `[switch]` and `[host]`: which discipline each port runs. The disciplines'
//! own keys, defaults and checks live in their files under `queue/`; this
//! file only assembles them per tier and rejects the old flat keys.

use super::error::{bad, ConfigError};
use crate::net::edge::SlackConfig;
use crate::queue::edge_ecn::{self, UsedSlack};
use crate::queue::{Capacity, Queue, QueueConfig, QueueEnv};
use crate::topo::{EntityKind, QueueLimit, Topology};
use serde::{Deserialize, Serialize};

/// `[switch]`: `[switch.queue]` for every switch port, per-tier overrides
/// `[switch.tor.queue]`, `[switch.agg.queue]`, `[switch.core.queue]`
/// (leaf-spine: leaves are `tor`, spines `core`; a graph's switches with a
/// host are `tor`, the others `core`), and `[switch.to_host.queue]` for the
/// ports that feed a host (the egress edge), over any tier's.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchFile {
    /// The discipline of every switch port (default drop-tail).
    #[serde(default)]
    pub queue: QueueConfig,
    /// Top-of-rack (FatTree edge, leaf) switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tor: Option<TierQueue>,
    /// FatTree aggregation switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agg: Option<TierQueue>,
    /// FatTree core and leaf-spine spine switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<TierQueue>,
    /// Switch ports whose link leads to a host, whatever their switch's
    /// tier: the egress edge, where the thesis's edge AQMs run ([TH] §5.3;
    /// `queue/edge_codel.rs`), without the ToR's uplinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_host: Option<TierQueue>,
    /// `[[switch.named]]`: the discipline of every port of the switches it
    /// names, over the tiers' and `to_host`'s (a mix of disciplines across
    /// switches, [TH] Table 5.1's "half of the switches run FIFO+").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<NamedQueue>,
    /// PFC on every switch (`net/pfc.rs`).
    #[serde(default)]
    pub pfc: crate::net::pfc::PfcConfig,
    /// The Tofino trimming chip on every ToR (`net/tofino.rs`); absent:
    /// plain output-queued switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tofino: Option<crate::net::tofino::TofinoConfig>,
}

/// `[switch.<tier>]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TierQueue {
    /// The discipline of this tier's ports, instead of `[switch.queue]`.
    pub queue: QueueConfig,
}

/// `[[switch.named]]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NamedQueue {
    /// The switches, by the names errors and `psim partition` show (a
    /// graph file's names; `tor3`, `agg0`, `core1` in a FatTree).
    pub switches: Vec<String>,
    /// Their ports' discipline.
    pub queue: QueueConfig,
}

/// `[host]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostFile {
    /// The NIC's discipline (default strict priority, control first).
    #[serde(default = "default_nic")]
    pub queue: QueueConfig,
    /// `[host.slack]`: the rank or slack stamped on data (`net/edge.rs`).
    #[serde(default, skip_serializing_if = "SlackConfig::is_none")]
    pub slack: SlackConfig,
}

impl Default for HostFile {
    fn default() -> Self {
        HostFile {
            queue: default_nic(),
            slack: SlackConfig::None,
        }
    }
}

fn default_nic() -> QueueConfig {
    QueueConfig::Priority(Default::default())
}

/// The validated discipline of every kind of port.
#[derive(Clone, Debug, PartialEq)]
pub struct PortQueues {
    /// Host NICs.
    pub host: QueueConfig,
    /// Switch ports, by tier: ToR, aggregation, core.
    pub tiers: [QueueConfig; 3],
    /// Switch ports that feed a host, when `[switch.to_host]` is set.
    pub to_host: Option<QueueConfig>,
    /// `[[switch.named]]`'s disciplines, in file order.
    pub named: Vec<QueueConfig>,
    /// Which of `named` each named switch runs (entity id to index).
    pub named_of: std::collections::BTreeMap<u32, usize>,
    /// The scenario key of each tier's table (`switch.queue` where the
    /// tier has none of its own), for errors.
    pub tier_keys: [String; 3],
    /// Whether the topology's own port sizes (a graph file's `queue=`)
    /// apply; a replay's ports keep `replay.queue_packets`, so that it
    /// never drops.
    pub topology_sizes: bool,
    /// What the builds need (NDP's MTU; the ToRs' K for the NICs).
    pub env: QueueEnv,
    /// PFC on the switches, when enabled.
    pub pfc: Option<crate::net::pfc::PfcConfig>,
    /// The hosts' rank or slack policy.
    pub slack: SlackConfig,
    /// The Tofino chip of the ToRs, when `[switch.tofino]` is set.
    pub tofino: Option<crate::net::tofino::TofinoParams>,
}

impl PortQueues {
    /// The discipline of ports of entities of `kind` (`to_host`: a switch
    /// port whose link leads to a host).
    pub fn config(&self, kind: EntityKind, to_host: bool) -> &QueueConfig {
        match (kind, &self.to_host) {
            (EntityKind::Host, _) => &self.host,
            (_, Some(q)) if to_host => q,
            (EntityKind::Tor, _) => &self.tiers[0],
            (EntityKind::Agg, _) => &self.tiers[1],
            (EntityKind::Core, _) => &self.tiers[2],
        }
    }
    /// The discipline of port(s) of entity `entity`: a `[[switch.named]]`
    /// table that names it, else as [`Self::config`].
    pub fn port_config(&self, kind: EntityKind, to_host: bool, entity: u32) -> &QueueConfig {
        match self.named_of.get(&entity) {
            Some(&i) if kind != EntityKind::Host => &self.named[i],
            _ => self.config(kind, to_host),
        }
    }
    /// The scenario key of the table [`Self::port_config`] takes.
    pub fn table_key(&self, kind: EntityKind, to_host: bool, entity: u32) -> String {
        match (kind, self.named_of.get(&entity), &self.to_host) {
            (EntityKind::Host, _, _) => "host.queue".into(),
            (_, Some(i), _) => format!("switch.named[{i}].queue"),
            (_, None, Some(_)) if to_host => "switch.to_host.queue".into(),
            (EntityKind::Tor, ..) => self.tier_keys[0].clone(),
            (EntityKind::Agg, ..) => self.tier_keys[1].clone(),
            (EntityKind::Core, ..) => self.tier_keys[2].clone(),
        }
    }
    /// Every switch port's possible discipline: the tiers', then `to_host`'s,
    /// then the named switches'.
    pub fn switch_configs(&self) -> impl Iterator<Item = &QueueConfig> + Clone {
        self.tiers.iter().chain(&self.to_host).chain(&self.named)
    }
    /// Every table with its scenario key: the NICs', the tiers', then
    /// `to_host`'s and the named switches'.
    pub fn tables(&self) -> impl Iterator<Item = (String, &QueueConfig)> {
        let tiers = self.tier_keys.iter().cloned().zip(&self.tiers);
        let to_host = self
            .to_host
            .iter()
            .map(|q| ("switch.to_host.queue".into(), q));
        let named =
            (self.named.iter().enumerate()).map(|(i, q)| (format!("switch.named[{i}].queue"), q));
        std::iter::once(("host.queue".to_string(), &self.host))
            .chain(tiers)
            .chain(to_host)
            .chain(named)
    }
    /// Runs `q` at every switch port, named or not (a replay's LSTF).
    pub fn set_every_switch(&mut self, q: QueueConfig) {
        self.tiers = [q.clone(), q.clone(), q];
        self.to_host = None;
        self.named.clear();
        self.named_of.clear();
    }
    /// A new queue for a port of entity `entity`, of `kind`, under the
    /// scenario's `seed` (`to_host`: as [`Self::config`]). `size`: the
    /// topology's own size for this port (a graph file's `queue=`), which
    /// replaces the discipline's capacity ([`check_port_sizes`] accepted it).
    pub fn build(
        &self,
        kind: EntityKind,
        to_host: bool,
        size: Option<QueueLimit>,
        entity: u32,
        seed: u64,
    ) -> Queue {
        let env = QueueEnv {
            switch: (kind != EntityKind::Host).then_some(entity),
            seed,
            ..self.env
        };
        let q = self.port_config(kind, to_host, entity);
        match size.filter(|_| self.topology_sizes) {
            None => q.build(&env),
            Some(s) => q
                .with_capacity(capacity(s))
                .expect("port sizes are checked at load")
                .build(&env),
        }
    }
}

/// A topology's port size as a discipline's capacity (a graph file allows
/// at most `u32::MAX` packets).
fn capacity(size: QueueLimit) -> Capacity {
    match size {
        QueueLimit::Packets(n) => Capacity::Packets(n.min(u32::MAX as u64) as u32),
        QueueLimit::Bytes(b) => Capacity::Bytes(b),
    }
}

/// The unit (`"packets"` or `"bytes"`) in which `q` counts ECN or RED
/// thresholds, when they follow its capacity's unit (`ecn`, `red`, and
/// `voq` with `ecn_threshold`); None when it has none such.
fn thresholds_in(q: &QueueConfig, env: &QueueEnv) -> Option<&'static str> {
    if !q.thresholds_follow_capacity() {
        return None;
    }
    // The resolved table writes the default capacity out, in packets.
    let toml::Value::Table(t) = toml::Value::try_from(q.resolved(env)).ok()? else {
        return None;
    };
    Some(if t.contains_key("queue_bytes") {
        "bytes"
    } else {
        "packets"
    })
}

/// Checks every port size a graph file gives (`queue=`, an htsim file's
/// queue `size`) against the discipline it resizes: one with a capacity of
/// its own, whose other keys still hold at the new size, and that holds one
/// full packet of the traffic (`packet`: its bytes and make-up). Each error
/// names the file, the line and the port.
pub(crate) fn check_port_sizes(
    topo: &Topology,
    queues: &PortQueues,
    packet: Option<(u64, String)>,
) -> Result<(), ConfigError> {
    let Topology::Graph(g) = topo else {
        return Ok(());
    };
    let mut checked = std::collections::BTreeSet::new();
    for e in 0..topo.entities() {
        let kind = topo.kind(e);
        for p in 0..topo.port_count(e) {
            let Some(size) = topo.port_queue(e, p) else {
                continue;
            };
            let to_host = topo.kind(topo.port(e, p).peer) == EntityKind::Host;
            let fail = |m: String| ConfigError::Topology(g.queue_error(e, p, &m));
            let chip = queues
                .tofino
                .as_ref()
                .is_some_and(|t| t.tier.kind() == kind);
            if chip {
                return Err(fail(
                    "a size for a port of a switch with [switch.tofino]'s chip cannot be given: the chip sizes its own queues"
                        .into(),
                ));
            }
            let named = queues.named_of.get(&e).copied();
            if !checked.insert((kind as u8, to_host, named, size)) {
                continue;
            }
            let q = queues.port_config(kind, to_host, e);
            let key = queues.table_key(kind, to_host, e);
            let Some(sized) = q.with_capacity(capacity(size)) else {
                return Err(fail(format!(
                    "its discipline ({key}, kind = \"{}\") has no single capacity to replace (size its classes in the scenario)",
                    q.name()
                )));
            };
            if let Some(unit) = thresholds_in(q, &queues.env) {
                let given = match size {
                    QueueLimit::Packets(_) => "packets",
                    QueueLimit::Bytes(_) => "bytes",
                };
                if given != unit {
                    return Err(fail(format!(
                        "a size in {given}, but {key} (kind = \"{}\") counts its thresholds in {unit}, as its capacity: give the size in {unit}, or the table a capacity and thresholds in {given}",
                        q.name()
                    )));
                }
            }
            sized
                .validate(&key)
                .map_err(|err| fail(format!("at this size, {err}")))?;
            if let (QueueLimit::Bytes(b), Some((bytes, make))) = (size, &packet) {
                if b < *bytes {
                    return Err(fail(format!("{b} B is smaller than one packet ({make})")));
                }
            }
        }
    }
    Ok(())
}

/// With `scale_with_rate` (the default), an `ecn_ramp` port's Kmax grows
/// with its link's rate, so a threshold that fits the buffer at the
/// reference rate may not at a faster port: checked here, at every port
/// rate the scenario has, naming the table's `kmax_kb`.
pub(crate) fn check_scaled_ramps(topo: &Topology, queues: &PortQueues) -> Result<(), ConfigError> {
    let mut checked = std::collections::BTreeSet::new();
    for e in 0..topo.entities() {
        let kind = topo.kind(e);
        for p in 0..topo.port_count(e) {
            let port = topo.port(e, p);
            let to_host = topo.kind(port.peer) == EntityKind::Host;
            let QueueConfig::EcnRamp(ramp) = queues.port_config(kind, to_host, e) else {
                continue;
            };
            let size = topo.port_queue(e, p).filter(|_| queues.topology_sizes);
            let named = queues.named_of.get(&e).copied();
            let rate = port.link.rate_bps;
            let size_key = match size {
                None => (0, 0),
                Some(QueueLimit::Packets(n)) => (1, n),
                Some(QueueLimit::Bytes(b)) => (2, b),
            };
            if !checked.insert((kind as u8, to_host, named, size_key, rate)) {
                continue;
            }
            if let Some((kmax, buffer)) = ramp.scaled_kmax_overflow(rate, size.map(capacity)) {
                let key = format!("{}.kmax_kb", queues.table_key(kind, to_host, e));
                let why = format!(
                    "scaled with the rate (scale_with_rate) to {:.0} bytes at a {} Gb/s port, above that port's buffer ({buffer} bytes): lower kmax_kb, raise the capacity, or set scale_with_rate = false",
                    kmax,
                    rate as f64 / 1e9
                );
                return Err(bad(&key, ramp.kmax_kb, &why));
            }
        }
    }
    Ok(())
}

/// Resolves `[[switch.named]]`'s switch names in `topo` into
/// `queues.named_of`: each must name a switch, at most once over all tables.
pub(crate) fn resolve_named(
    sw: &SwitchFile,
    topo: &Topology,
    queues: &mut PortQueues,
) -> Result<(), ConfigError> {
    if sw.named.is_empty() {
        return Ok(());
    }
    let switches: std::collections::HashMap<String, u32> = (topo.hosts()..topo.entities())
        .map(|e| (topo.label(e), e))
        .collect();
    for (i, n) in sw.named.iter().enumerate() {
        let key = format!("switch.named[{i}].switches");
        if n.switches.is_empty() {
            return Err(bad(&key, "[]", "name at least one switch"));
        }
        for name in &n.switches {
            let Some(&e) = switches.get(name) else {
                return Err(bad(
                    &key,
                    format!("{name:?}"),
                    "names no switch of the topology (names as errors and `psim partition` show them)",
                ));
            };
            if let Some(first) = queues.named_of.insert(e, i) {
                return Err(bad(
                    &key,
                    format!("{name:?}"),
                    &format!("is named again (first in switch.named[{first}]): a switch runs one discipline"),
                ));
            }
        }
    }
    Ok(())
}

/// Validates `[switch]` and `[host]`; `mtu` is NDP's MTU payload,
/// `packet_bytes` the traffic's largest full packet ([`QueueEnv::packet_bytes`]),
/// which PFC's headroom and buffers must hold.
pub(crate) fn port_queues(
    sw: &SwitchFile,
    host: &HostFile,
    mtu: u32,
    packet_bytes: u64,
) -> Result<PortQueues, ConfigError> {
    sw.queue.validate("switch.queue")?;
    sw.pfc.validate("switch.pfc", packet_bytes)?;
    let tier_key = |t: &Option<TierQueue>, name: &str| match t {
        None => "switch.queue".to_string(),
        Some(_) => format!("switch.{name}.queue"),
    };
    let tier = |t: &Option<TierQueue>, name: &str| -> Result<QueueConfig, ConfigError> {
        let key = tier_key(t, name);
        let q = match t {
            None => &sw.queue,
            Some(t) => {
                t.queue.validate(&key)?;
                &t.queue
            }
        };
        sw.pfc.validate_queue(&key, q)?;
        Ok(q.clone())
    };
    let tiers = [
        tier(&sw.tor, "tor")?,
        tier(&sw.agg, "agg")?,
        tier(&sw.core, "core")?,
    ];
    let to_host = match &sw.to_host {
        None => None,
        Some(_) => Some(tier(&sw.to_host, "to_host")?),
    };
    let mut named = Vec::new();
    for (i, n) in sw.named.iter().enumerate() {
        let key = format!("switch.named[{i}].queue");
        n.queue.validate(&key)?;
        sw.pfc.validate_queue(&key, &n.queue)?;
        named.push(n.queue.clone());
    }
    if let (true, Some(q)) = (sw.pfc.enabled, &to_host) {
        // The MMU of a switch keeps one ingress bookkeeping for all its ports.
        if tiers.iter().any(|t| t.names_ingress() != q.names_ingress()) {
            return Err(bad(
                "switch.to_host.queue.kind",
                q.name(),
                "with PFC, must name each packet's input port exactly when the switch tiers' disciplines do (voq or not alike)",
            ));
        }
    }
    let tofino = match &sw.tofino {
        None => None,
        Some(_) if !named.is_empty() => {
            return Err(bad(
                "switch.named",
                "a table",
                "cannot be set with [switch.tofino]: the chip's switches run its own NDP queue",
            ))
        }
        Some(_) if to_host.is_some() => return Err(bad(
            "switch.to_host",
            "a table",
            "cannot be set with [switch.tofino]: the chip's ToR ports all run its own NDP queue",
        )),
        Some(t) => {
            let q = match t.tier {
                crate::net::tofino::ChipTier::Tor => &tiers[0],
                crate::net::tofino::ChipTier::Core => &tiers[2],
            };
            let QueueConfig::Ndp(ndp) = q else {
                return Err(bad(
                    "switch.tofino",
                    q.name(),
                    "needs its switches' ports to run kind = \"ndp\" ([switch.queue] or the tier's table)",
                ));
            };
            Some(t.params("switch.tofino", ndp.data_capacity_bytes(mtu))?)
        }
    };
    host.queue.validate("host.queue")?;
    host.slack.validate(
        "host.slack",
        std::iter::once(&host.queue)
            .chain(&tiers)
            .chain(&to_host)
            .chain(&named),
    )?;
    let queues = PortQueues {
        host: host.queue.clone(),
        env: QueueEnv {
            mtu,
            packet_bytes,
            // Hosts attach to ToRs: a NIC marks at their K by default.
            switch_k: tiers[0].ecn_threshold_packets(),
            switch: None,
            seed: 0,
        },
        tiers,
        to_host,
        named,
        named_of: Default::default(),
        tier_keys: [
            tier_key(&sw.tor, "tor"),
            tier_key(&sw.agg, "agg"),
            tier_key(&sw.core, "core"),
        ],
        topology_sizes: true,
        pfc: sw.pfc.enabled.then(|| sw.pfc.clone()),
        slack: host.slack.clone(),
        tofino,
    };
    // An edge AQM reads the queueing a packet met from `rank`, which only
    // queues of its form keep: the NIC must be one, or its wait is lost.
    // (The first table is the NICs' own.)
    for (key, q) in queues.tables().skip(1) {
        let Some(form) = edge_ecn::rank_form(q) else {
            continue;
        };
        if !edge_ecn::nic_counts_its_wait(&queues.host, form) {
            // The form's name is also the NIC discipline that keeps it.
            let form = match form {
                UsedSlack::Lstf => "lstf",
                UsedSlack::FifoPlus | UsedSlack::Measured => "fifo_plus",
            };
            return Err(bad(
                "host.queue.kind",
                queues.host.name(),
                &format!(
                    "keeps no used slack, so {key}'s {} (used_slack = \"{form}\") would not count a packet's wait at its own NIC: give [host.queue] kind = \"{form}\"",
                    q.name()
                ),
            ));
        }
    }
    Ok(queues)
}

/// Where each key of the old flat `[switch]` and `[host]` tables went.
const MOVED: [(&str, &str); 17] = [
    ("switch.queue_packets", "switch.queue.queue_packets"),
    ("switch.queue_bytes", "switch.queue.queue_bytes"),
    ("switch.header_bytes", "switch.queue.header_bytes"),
    ("switch.trim_arrival_only", "switch.queue.trim_arrival_only"),
    ("switch.return_to_sender", "switch.queue.return_to_sender"),
    ("switch.cp_capacity_bytes", "switch.queue.capacity_bytes"),
    ("switch.ecn_threshold", "switch.queue.ecn_threshold"),
    ("switch.red_min", "switch.queue.red_min"),
    ("switch.red_max", "switch.queue.red_max"),
    ("switch.red_max_p", "switch.queue.red_max_p"),
    ("switch.red_weight", "switch.queue.red_weight"),
    ("switch.red_ecn", "switch.queue.red_ecn"),
    (
        "switch.tcp_class_queue",
        "switch.queue.class (an array of discipline tables, [[switch.queue.class]])",
    ),
    (
        "switch.tcp_queue_packets",
        "switch.queue.class[1].queue_packets",
    ),
    ("host.nic_queue_packets", "host.queue.queue_packets"),
    ("host.nic_ecn_threshold", "host.queue.ecn_threshold"),
    ("host.queue", "[host.queue] kind = ..."),
];

/// Rejects the old flat keys with a one-line error naming the new key, and
/// a port's queue table without its `kind`.
pub(crate) fn reject_old_keys(doc: &toml::Table) -> Result<(), ConfigError> {
    if let Some(toml::Value::String(kind)) = doc.get("switch").and_then(|s| s.get("queue")) {
        return Err(bad(
            "switch.queue",
            format!("{kind:?}"),
            &format!("the discipline is now a table: [switch.queue] kind = {kind:?}"),
        ));
    }
    for (old, new) in MOVED {
        let (table, key) = old.split_once('.').expect("dotted");
        let Some(v) = doc.get(table).and_then(|t| t.get(key)) else {
            continue;
        };
        if old == "host.queue" && v.is_table() {
            continue;
        }
        return Err(bad(old, v, &format!("moved to {new}")));
    }
    let tables = [
        (
            "switch.queue",
            doc.get("switch").and_then(|s| s.get("queue")),
        ),
        ("host.queue", doc.get("host").and_then(|s| s.get("queue"))),
    ]
    .into_iter()
    .chain(["tor", "agg", "core", "to_host"].map(|t| {
        let q = doc
            .get("switch")
            .and_then(|s| s.get(t))
            .and_then(|t| t.get("queue"));
        (t, q)
    }));
    for (key, table) in tables {
        if let Some(toml::Value::Table(t)) = table {
            if !t.contains_key("kind") {
                let key = match key {
                    "tor" | "agg" | "core" | "to_host" => format!("switch.{key}.queue.kind"),
                    k => format!("{k}.kind"),
                };
                let names = QueueConfig::NAMES.join(", ");
                return Err(bad(&key, "missing", &format!("name a discipline: {names}")));
            }
        }
    }
    Ok(())
}
