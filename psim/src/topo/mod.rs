//! Topologies: which entities exist, how their ports are wired, and how a
//! switch picks the output port for a packet.
//!
//! Hosts are always entities `0..hosts`, so a host address is its entity id.
//! Routes are computed arithmetically from the destination address and the
//! packet's path id: there are no per-pair tables, so an 8192-host FatTree
//! costs O(entities) memory. A path id selects one of the equal-cost paths
//! between two hosts ([`Topology::num_paths`]); transports choose it per flow
//! (ECMP hash) or per packet (spraying). A graph read from a file ([`Graph`])
//! is the exception: it keeps per-destination-switch next-hop tables.

pub mod fattree;
pub mod graph;
pub mod graph_file;
pub mod htsim_topo;
pub mod leafspine;
mod path;

pub use fattree::FatTree;
pub use graph::Graph;
pub use graph_file::{GraphError, QueueLimit};
pub use leafspine::LeafSpine;

/// Rate and propagation delay of one tier of links.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkSpec {
    /// Line rate, bits per second.
    pub rate_bps: u64,
    /// Propagation delay, picoseconds.
    pub delay_ps: u64,
}

/// Role of an entity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EntityKind {
    /// An end host with one NIC.
    Host,
    /// A top-of-rack (FatTree edge, or leaf) switch.
    Tor,
    /// A FatTree aggregation switch.
    Agg,
    /// A FatTree core or leaf-spine spine switch.
    Core,
}

/// One end of a link as seen from an output port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortInfo {
    /// Entity at the far end.
    pub peer: u32,
    /// Input port of the far entity this link feeds.
    pub peer_port: u16,
    /// The link's rate and delay.
    pub link: LinkSpec,
}

/// A network topology.
#[derive(Clone, Debug)]
pub enum Topology {
    /// 3-tier k-ary FatTree.
    FatTree(FatTree),
    /// 2-tier leaf-spine.
    LeafSpine(LeafSpine),
    /// Any graph read from a file (boxed: its tables make it far larger
    /// than the arithmetic topologies).
    Graph(Box<Graph>),
}

macro_rules! dispatch {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            Topology::FatTree($t) => $e,
            Topology::LeafSpine($t) => $e,
            Topology::Graph($t) => $e,
        }
    };
}

impl Topology {
    /// Number of hosts; hosts are entities `0..hosts()`.
    pub fn hosts(&self) -> u32 {
        dispatch!(self, t => t.hosts())
    }
    /// Number of entities (hosts and switches).
    pub fn entities(&self) -> u32 {
        dispatch!(self, t => t.entities())
    }
    /// Number of switches.
    pub fn switches(&self) -> u32 {
        self.entities() - self.hosts()
    }
    /// Role of entity `e`.
    pub fn kind(&self, e: u32) -> EntityKind {
        dispatch!(self, t => t.kind(e))
    }
    /// Number of ports of entity `e`.
    pub fn port_count(&self, e: u32) -> u16 {
        dispatch!(self, t => t.port_count(e))
    }
    /// The loss probability of the link leaving port `p` of entity `e`, where
    /// the topology gives that link its own (a FatTree's degraded links);
    /// `None` means the scenario's `[link] loss_rate` applies.
    pub fn link_loss(&self, e: u32, p: u16) -> Option<f64> {
        match self {
            Topology::FatTree(t) => t.link_loss(e, p),
            Topology::LeafSpine(_) | Topology::Graph(_) => None,
        }
    }
    /// The link leaving port `p` of entity `e`.
    pub fn port(&self, e: u32, p: u16) -> PortInfo {
        dispatch!(self, t => t.port(e, p))
    }
    /// Output port at switch `e` for a packet to host `dst` on path `path`.
    pub fn route(&self, e: u32, dst: u32, path: u32) -> u16 {
        dispatch!(self, t => t.route(e, dst, path))
    }
    /// Number of equal-cost paths between two hosts.
    pub fn num_paths(&self, src: u32, dst: u32) -> u32 {
        dispatch!(self, t => t.num_paths(src, dst))
    }
    /// Number of links on the path between two hosts.
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        dispatch!(self, t => t.hops(src, dst))
    }
    /// Group that must stay in one shard (a pod, or a leaf with its hosts);
    /// `None` for core and spine switches, which are spread across shards.
    /// A graph groups every entity (see `graph.rs`, "Partition groups").
    pub fn group(&self, e: u32) -> Option<u32> {
        dispatch!(self, t => t.group(e))
    }
    /// Hosts under one top-of-rack switch.
    pub fn hosts_per_tor(&self) -> u32 {
        dispatch!(self, t => t.hosts_per_tor())
    }
    /// Host NIC link.
    pub fn host_link(&self) -> LinkSpec {
        dispatch!(self, t => t.host_link())
    }
    /// Bisection bandwidth: half the capacity of the narrowest tier.
    pub fn bisection_bps(&self) -> u64 {
        dispatch!(self, t => t.bisection_bps())
    }
    /// Human-readable label of an entity (`host12`, `core3`), used in errors.
    /// A graph's entities carry the names its file gives them.
    pub fn label(&self, e: u32) -> String {
        if let Topology::Graph(g) = self {
            return g.name(e).to_string();
        }
        let hosts = self.hosts();
        match self.kind(e) {
            EntityKind::Host => format!("host{e}"),
            EntityKind::Tor => format!("tor{}", e - hosts),
            EntityKind::Agg => format!("agg{}", e - hosts),
            EntityKind::Core => format!("core{}", e - hosts),
        }
    }
    /// The output queue size the topology itself gives port `p` of entity
    /// `e` (a graph file's `queue=`, an htsim file's queue `size`): it
    /// replaces the capacity of the port's discipline. `None`: the
    /// discipline's own.
    pub fn port_queue(&self, e: u32, p: u16) -> Option<QueueLimit> {
        match self {
            Topology::Graph(g) => g.queue_limit(e, p),
            _ => None,
        }
    }
    /// Total number of directed links.
    pub fn links(&self) -> u64 {
        (0..self.entities())
            .map(|e| self.port_count(e) as u64)
            .sum()
    }
    /// Short description for summaries.
    pub fn describe(&self) -> String {
        dispatch!(self, t => t.describe())
    }

    /// The graph the partitioner works on: one entity per node, weighted by
    /// port count (events scale with ports), one undirected link per cable.
    pub fn partition_graph(&self) -> partition::Graph {
        let entities = (0..self.entities())
            .map(|e| partition::EntityInfo {
                label: self.label(e),
                group: self.group(e),
                weight: self.port_count(e) as u64,
            })
            .collect();
        let mut links = Vec::new();
        for e in 0..self.entities() {
            for p in 0..self.port_count(e) {
                let info = self.port(e, p);
                if e < info.peer {
                    links.push(partition::LinkInfo {
                        a: e,
                        b: info.peer,
                        delay_ps: info.link.delay_ps,
                    });
                }
            }
        }
        partition::Graph { entities, links }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks wiring symmetry and that following routes from every host to
    /// every other host, on every path, reaches the destination in `hops` links.
    pub fn check_topology(t: &Topology) {
        for e in 0..t.entities() {
            for p in 0..t.port_count(e) {
                let info = t.port(e, p);
                let back = t.port(info.peer, info.peer_port);
                assert_eq!(
                    (back.peer, back.peer_port),
                    (e, p),
                    "asymmetric wiring at {e}:{p}"
                );
                assert_eq!(back.link, info.link);
            }
        }
        let hosts = t.hosts();
        let step = (hosts / 24).max(1);
        for s in (0..hosts).step_by(step as usize) {
            for d in 0..hosts {
                if s == d {
                    continue;
                }
                let mut cores = std::collections::BTreeSet::new();
                for path in 0..t.num_paths(s, d) {
                    let mut at = t.port(s, 0).peer;
                    let mut n = 1;
                    let mut visited = vec![at];
                    while at != d {
                        let p = t.route(at, d, path);
                        at = t.port(at, p).peer;
                        n += 1;
                        visited.push(at);
                        assert!(n <= 6, "routing loop {s}->{d} path {path}: {visited:?}");
                    }
                    assert_eq!(n, t.hops(s, d), "{s}->{d} path {path}");
                    cores.insert(visited);
                }
                // Distinct path ids give distinct paths.
                assert_eq!(cores.len() as u32, t.num_paths(s, d), "{s}->{d}");
            }
        }
    }
}
