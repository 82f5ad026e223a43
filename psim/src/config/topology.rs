//! `[topology]`: the schema of the network section and its validation into a [`Topology`].

use super::error::{bad, latency, rate, ConfigError};
use crate::topo::graph_file::{self, GraphError, RocketfuelOptions};
use crate::topo::{FatTree, Graph, LeafSpine, LinkSpec, Topology};
use serde::{Deserialize, Serialize};
use std::path::Path;

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
    /// A graph read from a file: keys and defaults in `topo/graph.rs`,
    /// formats in `topo/graph_file.rs` and docs/topologies.md.
    Graph {
        /// Topology file, relative to the scenario file.
        file: String,
        /// `"psim"` (default), `"rocketfuel"` or `"htsim"`.
        #[serde(default)]
        format: Option<String>,
        /// Rocketfuel: hosts attached to every router (default 1).
        #[serde(default)]
        hosts_per_switch: Option<u32>,
        /// Rocketfuel: router-to-router rate, Gb/s (default 10).
        #[serde(default)]
        link_gbps: Option<f64>,
        /// Rocketfuel: router-to-router delay, ns (default 1000).
        #[serde(default)]
        latency_ns: Option<f64>,
        /// Rocketfuel: host links (default: the router links').
        #[serde(default)]
        host_link: Option<TierFile>,
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
    /// Probability that a packet is lost on this link, in either direction
    /// (default: `[link] loss_rate`); 1 is a failed link that routing has
    /// not yet removed ([P] §3.2.3).
    pub loss_rate: Option<f64>,
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

fn tier(name: &str, t: &TierFile, gbps: f64, ns: f64) -> Result<LinkSpec, ConfigError> {
    Ok(LinkSpec {
        rate_bps: rate(&format!("topology.{name}.gbps"), t.gbps.unwrap_or(gbps))?,
        delay_ps: latency(
            &format!("topology.{name}.latency_ns"),
            t.latency_ns.unwrap_or(ns),
        )?,
    })
}

/// Reads and checks a `kind = "graph"` topology; `base` is the scenario's directory.
#[allow(clippy::too_many_arguments)]
fn build_graph(
    base: &Path,
    file: &str,
    format: Option<&str>,
    hosts_per_switch: Option<u32>,
    link_gbps: Option<f64>,
    latency_ns: Option<f64>,
    host_link: Option<&TierFile>,
) -> Result<Topology, ConfigError> {
    let path = base.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| GraphError {
        file: path.clone(),
        line: None,
        message: format!("cannot read the topology file: {e}"),
    })?;
    let spec = match format.unwrap_or("psim") {
        fmt @ ("psim" | "htsim") => {
            for (key, given) in [
                ("hosts_per_switch", hosts_per_switch.is_some()),
                ("link_gbps", link_gbps.is_some()),
                ("latency_ns", latency_ns.is_some()),
                ("host_link", host_link.is_some()),
            ] {
                if given {
                    return Err(bad(
                        &format!("topology.{key}"),
                        "(set)",
                        &format!("applies only to format = \"rocketfuel\"; {fmt} files give every link's rate and delay"),
                    ));
                }
            }
            if fmt == "psim" {
                graph_file::parse_psim(&text, &path)?
            } else {
                crate::topo::htsim_topo::parse_htsim_topo(&text, &path)?
            }
        }
        "rocketfuel" => {
            let hps = hosts_per_switch.unwrap_or(1);
            if hps == 0 || hps > 1024 {
                return Err(bad("topology.hosts_per_switch", hps, "must be 1 to 1024"));
            }
            let gbps = link_gbps.unwrap_or_else(default_gbps);
            let ns = latency_ns.unwrap_or_else(default_latency_ns);
            let link = LinkSpec {
                rate_bps: rate("topology.link_gbps", gbps)?,
                delay_ps: latency("topology.latency_ns", ns)?,
            };
            let opts = RocketfuelOptions {
                hosts_per_switch: hps,
                link,
                host_link: tier(
                    "host_link",
                    &host_link.cloned().unwrap_or_default(),
                    gbps,
                    ns,
                )?,
            };
            graph_file::parse_rocketfuel(&text, &path, &opts)?
        }
        other => {
            return Err(bad(
                "topology.format",
                format!("{other:?}"),
                "unknown graph format (known: psim, rocketfuel, htsim)",
            ))
        }
    };
    Ok(Topology::Graph(Box::new(Graph::new(&spec, &path)?)))
}

/// Writes out the defaults of a validated `[topology]`: each link tier's
/// rate and delay (the topology's `link_gbps` / `latency_ns`), a degraded
/// link's (the core tier's), a graph's format and Rocketfuel's defaults.
pub(crate) fn resolve_defaults(t: &mut TopologyFile) {
    fn fill(t: &mut TierFile, gbps: f64, ns: f64) {
        t.gbps.get_or_insert(gbps);
        t.latency_ns.get_or_insert(ns);
    }
    match t {
        TopologyFile::Fattree {
            link_gbps,
            latency_ns,
            host_link,
            tor_link,
            core_link,
            degraded_links,
            ..
        } => {
            for tier in [&mut *host_link, &mut *tor_link, &mut *core_link] {
                fill(tier, *link_gbps, *latency_ns);
            }
            let (g, ns) = (core_link.gbps, core_link.latency_ns);
            for d in degraded_links {
                d.gbps = d.gbps.or(g);
                d.latency_ns = d.latency_ns.or(ns);
            }
        }
        TopologyFile::Leafspine {
            link_gbps,
            latency_ns,
            host_link,
            uplink,
            ..
        } => {
            fill(host_link, *link_gbps, *latency_ns);
            fill(uplink, *link_gbps, *latency_ns);
        }
        TopologyFile::Graph {
            format,
            hosts_per_switch,
            link_gbps,
            latency_ns,
            host_link,
            ..
        } => {
            if format.get_or_insert_with(|| "psim".into()) == "rocketfuel" {
                hosts_per_switch.get_or_insert(1);
                let g = *link_gbps.get_or_insert_with(default_gbps);
                let ns = *latency_ns.get_or_insert_with(default_latency_ns);
                fill(host_link.get_or_insert_with(TierFile::default), g, ns);
            }
        }
    }
}

/// Validates `[topology]` and builds the network; `base` is the scenario's
/// directory, against which a graph's file name is resolved.
pub(crate) fn build_topology(t: &TopologyFile, base: &Path) -> Result<Topology, ConfigError> {
    match t {
        TopologyFile::Graph {
            file,
            format,
            hosts_per_switch,
            link_gbps,
            latency_ns,
            host_link,
        } => build_graph(
            base,
            file,
            format.as_deref(),
            *hosts_per_switch,
            *link_gbps,
            *latency_ns,
            host_link.as_ref(),
        ),
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
                if let Some(l) = d.loss_rate {
                    if !(0.0..=1.0).contains(&l) {
                        return Err(bad(
                            &format!("{key}.loss_rate"),
                            l,
                            "must be 0 to 1 (1 = a failed link)",
                        ));
                    }
                    ft = ft.with_core_link_loss(d.core, d.pod, l);
                }
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
