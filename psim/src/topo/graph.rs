//! A topology read from a file: any graph of hosts and switches, for the
//! wide-area experiments of [TH] Ch. 5 (Internet2, Rocketfuel). The file
//! formats are in `graph_file.rs`, `htsim_topo.rs` and docs/topologies.md.
//!
//! | `[topology]` key | meaning | default |
//! |---|---|---|
//! | `kind` | `"graph"` | — |
//! | `file` | topology file, relative to the scenario file | required |
//! | `format` | `"psim"` (hosts, switches, links with rate and delay), `"rocketfuel"` (weighted router edge list, [RF]) or `"htsim"` (htsim's generic topology: hosts, switches, queues with speed and size in bytes, pipes with latency; `htsim_topo.rs`) | `"psim"` |
//! | `hosts_per_switch` | rocketfuel only: hosts attached to every router | 1 |
//! | `link_gbps`, `latency_ns` | rocketfuel only: router-to-router links | 10, 1000 |
//! | `host_link.gbps`, `host_link.latency_ns` | rocketfuel only: host links | `link_gbps`, `latency_ns` |
//!
//! **Entity ids.** The engine needs hosts at `0..hosts`: hosts are numbered
//! in the order the file declares them, then switches in declaration order.
//! A switch with hosts attached is a ToR for the per-tier queue tables
//! (`[switch.tor.queue]`), any other switch a core. Ports are numbered per
//! entity in the order of the file's link lines.
//!
//! **Routing.** Shortest paths by (routing weight, then hop count): with no
//! `weight=` that is the hop count; with weights, equal-weight paths of
//! different lengths are not mixed, so `hops` is one number per pair (GR3). ECMP
//! splits among every next hop on a shortest path. Routes are computed once
//! per *access switch* (a switch with hosts), not per host and not per pair:
//! one Dijkstra per access switch `a` stores, for every switch `v`, its hop
//! count to `a` and its list of next-hop ports. A host's packets use its
//! switch's table; the last switch uses the host's port.
//!
//! **Path ids.** Path `p` picks its next hop at switch `v`, `d` hops from the
//! destination's switch, by a mixed-radix digit: `digit = (p / W[d]) % C[d]`,
//! next hop `digit % c(v)`, where `c(v)` is `v`'s number of next hops, `C[d]`
//! the largest `c` among switches `d` hops away, and `W[d]` the product of
//! `C[1..d]`. The choice depends only on (switch, destination, path), so the
//! same (src, dst, path) always takes the same path. `num_paths(src, dst)` is
//! `W[h + 1]`, `h` the source switch's distance, capped at [`MAX_PATHS`]:
//! every shortest path has an id below it (before the cap), and where switches
//! at one distance branch unequally, several ids name the same path. On a
//! graph with one branching switch per level (a diamond, a FatTree-like
//! graph) ids and paths correspond one to one.
//!
//! **Memory and build time.** With `A` access switches, `S` switches and `E`
//! links: `A·S·6` bytes of offsets and hop counts, plus 2 bytes per next-hop
//! entry (at most `A·2E`); building is `A` Dijkstra runs, `O(A·E·log S)`.
//! Tens of nodes (Internet2) cost kilobytes. At 1,000 access switches of
//! 1,000 switches about 6 MB and well under a second; at 10,000 about 600 MB
//! and minutes to build, the practical limit: beyond it, routes should be
//! computed on demand.
//!
//! **Partition groups.** The partitioner never splits a group. A host is
//! always grouped with its switch. The largest link delay that can be cut is
//! chosen: entities joined by shorter links form one group, as long as no
//! group weighs more than 1/[`MIN_GROUPS`] of the total (so at least that
//! many shards can be balanced); otherwise the next smaller delay is tried.
//! On Internet2 that cuts only the 10 ms core links: the lookahead is 10 ms
//! (GR4).

use super::graph_file::{GraphError, GraphSpec, PortSize, QueueLimit};
use super::{EntityKind, LinkSpec, PortInfo};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

/// Path ids per pair are capped here, so that a spraying transport's
/// per-flow path list stays small (256 = a k = 32 FatTree's inter-pod paths).
pub const MAX_PATHS: u32 = 256;

/// Groups stay below 1/MIN_GROUPS of the total weight, so that up to about
/// this many shards balance ([`Graph`] doc, "Partition groups").
const MIN_GROUPS: u64 = 8;

const UNREACHED: (u64, u32) = (u64::MAX, u32::MAX);

/// A graph topology with its routing tables.
#[derive(Clone, Debug)]
pub struct Graph {
    source: String,
    hosts: u32,
    names: Vec<String>,
    kinds: Vec<EntityKind>,
    /// Ports of entity `e` are `ports[port_base[e]..port_base[e + 1]]`.
    port_base: Vec<u32>,
    ports: Vec<PortInfo>,
    /// Routing cost of leaving by each port (thousandths of a weight).
    weights: Vec<u64>,
    /// Per-port queue sizes given in the file, with the line that gives each.
    queues: Vec<Option<(QueueLimit, usize)>>,
    /// Per host: its switch and the switch's port to it.
    attach: Vec<(u32, u16)>,
    /// Per switch (`e - hosts`): its index among access switches, or `u32::MAX`.
    dest_of: Vec<u32>,
    /// Next hops of switch `v` towards access switch `a`:
    /// `next[next_off[a·S + v]..next_off[a·S + v + 1]]`.
    next_off: Vec<u32>,
    next: Vec<u16>,
    /// Hop count from switch `v` to access switch `a`, at `a·S + v`.
    hop: Vec<u16>,
    /// Per access switch: `radix[level_off[a] + d]` = C[d] and
    /// `stride[level_off[a] + d]` = W[d], for d = 0..=max distance + 1.
    level_off: Vec<u32>,
    radix: Vec<u16>,
    stride: Vec<u64>,
    group: Vec<u32>,
}

fn gerr(file: &Path, line: Option<usize>, message: String) -> GraphError {
    GraphError {
        file: file.into(),
        line,
        message,
    }
}

/// Union-find with path halving; the root is the smallest member.
fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

fn union(parent: &mut [u32], a: u32, b: u32) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    parent[ra.max(rb) as usize] = ra.min(rb);
}

impl Graph {
    /// Checks the shape of a parsed file and computes its routes. `file`
    /// names the file in errors.
    pub fn new(spec: &GraphSpec, file: &Path) -> Result<Graph, GraphError> {
        let at = |line: Option<usize>, m: String| gerr(file, line, m);
        let n = spec.nodes.len();
        let hosts = spec.nodes.iter().filter(|x| x.host).count();
        if hosts == 0 || hosts == n {
            return Err(at(
                None,
                "a graph needs at least one host and one switch".into(),
            ));
        }
        if n >= u32::MAX as usize {
            return Err(at(None, format!("{n} nodes: too many")));
        }
        // Hosts first, each group in declaration order.
        let mut id_of = vec![0u32; n];
        let mut order: Vec<usize> = (0..n).filter(|&i| spec.nodes[i].host).collect();
        order.extend((0..n).filter(|&i| !spec.nodes[i].host));
        for (new, &old) in order.iter().enumerate() {
            id_of[old] = new as u32;
        }
        let names: Vec<String> = order.iter().map(|&i| spec.nodes[i].name.clone()).collect();
        let decl_line = |e: u32| spec.nodes[order[e as usize]].line;

        // Ports, in file order per entity.
        // Per entity: (peer, link, routing cost, queue, file line).
        type End = (u32, LinkSpec, u64, Option<PortSize>, usize);
        let mut adj: Vec<Vec<End>> = vec![Vec::new(); n];
        for edge in &spec.edges {
            let (a, b) = (id_of[edge.a], id_of[edge.b]);
            if (a as usize) < hosts && (b as usize) < hosts {
                return Err(at(
                    Some(edge.line),
                    format!(
                        "link joins two hosts, {} and {}: a host connects to a switch",
                        names[a as usize], names[b as usize]
                    ),
                ));
            }
            adj[a as usize].push((b, edge.link, edge.weight_ab, edge.queue_ab, edge.line));
            adj[b as usize].push((a, edge.link, edge.weight_ba, edge.queue_ba, edge.line));
        }
        for (e, list) in adj.iter().enumerate() {
            let e32 = e as u32;
            if e < hosts && list.len() != 1 {
                return Err(if list.is_empty() {
                    at(
                        Some(decl_line(e32)),
                        format!(
                            "host {} is not connected (it needs one link to a switch)",
                            names[e]
                        ),
                    )
                } else {
                    at(
                        Some(list[1].4),
                        format!(
                            "host {} has a second link (first on line {}): a host has one NIC",
                            names[e], list[0].4
                        ),
                    )
                });
            }
            if list.len() > u16::MAX as usize {
                return Err(at(
                    Some(decl_line(e32)),
                    format!(
                        "{} has {} links: at most {}",
                        names[e],
                        list.len(),
                        u16::MAX
                    ),
                ));
            }
        }
        let mut port_base = Vec::with_capacity(n + 1);
        let mut ports = Vec::new();
        let mut weights = Vec::new();
        let mut queues = Vec::new();
        port_base.push(0u32);
        for (e, list) in adj.iter().enumerate() {
            for (i, &(peer, link, w, q, _)) in list.iter().enumerate() {
                // The peer's port back: the k-th entry of its list that names us,
                // k = how many earlier entries of ours name the peer (always 0:
                // parallel links are rejected by the parser; kept general).
                let k = list[..i].iter().filter(|x| x.0 == peer).count();
                let peer_port = adj[peer as usize]
                    .iter()
                    .enumerate()
                    .filter(|x| x.1 .0 == e as u32)
                    .nth(k)
                    .map(|x| x.0)
                    .expect("links are stored at both ends");
                ports.push(PortInfo {
                    peer,
                    peer_port: peer_port as u16,
                    link,
                });
                weights.push(w);
                queues.push(q.map(|q| (q.limit, q.line)));
            }
            port_base.push(ports.len() as u32);
        }
        let switches = n - hosts;
        let mut kinds = vec![EntityKind::Core; n];
        let mut attach = Vec::with_capacity(hosts);
        for (h, kind) in kinds.iter_mut().enumerate().take(hosts) {
            *kind = EntityKind::Host;
            let p = ports[port_base[h] as usize];
            attach.push((p.peer, p.peer_port));
        }
        for &(s, _) in &attach {
            kinds[s as usize] = EntityKind::Tor;
        }
        let mut dest_of = vec![u32::MAX; switches];
        let mut access = Vec::new();
        for (v, d) in dest_of.iter_mut().enumerate() {
            if kinds[hosts + v] == EntityKind::Tor {
                *d = access.len() as u32;
                access.push((hosts + v) as u32);
            }
        }

        let mut g = Graph {
            source: file.display().to_string(),
            hosts: hosts as u32,
            names,
            kinds,
            port_base,
            ports,
            weights,
            queues,
            attach,
            dest_of,
            next_off: Vec::with_capacity(access.len() * switches + 1),
            next: Vec::new(),
            hop: Vec::with_capacity(access.len() * switches),
            level_off: Vec::with_capacity(access.len()),
            radix: Vec::new(),
            stride: Vec::new(),
            group: Vec::new(),
        };
        g.next_off.push(0);
        let mut dist = vec![UNREACHED; switches];
        for &a in &access {
            g.shortest_paths_to(a, &mut dist);
            if let Some(v) = dist.iter().position(|&d| d == UNREACHED) {
                let v = (hosts + v) as u32;
                let msg = match g.attach.iter().position(|x| x.0 == v) {
                    Some(h) => format!(
                        "host {} cannot reach host {}: the graph is disconnected",
                        g.names[h],
                        g.names[g.attach.iter().position(|x| x.0 == a).unwrap_or(0)]
                    ),
                    None => format!(
                        "switch {} cannot reach switch {}: the graph is disconnected",
                        g.names[v as usize], g.names[a as usize]
                    ),
                };
                return Err(at(Some(decl_line(v)), msg));
            }
            g.store_routes(a, &dist).map_err(|m| at(None, m))?;
        }
        g.group = g.partition_groups();
        Ok(g)
    }

    fn port_index(&self, e: u32, p: u16) -> usize {
        self.port_base[e as usize] as usize + p as usize
    }

    fn switch_ports(&self, e: u32) -> std::ops::Range<usize> {
        self.port_base[e as usize] as usize..self.port_base[e as usize + 1] as usize
    }

    /// Dijkstra towards access switch `a` over switches: `dist[v - hosts]` =
    /// (weight, hops) of the best path from `v` to `a`.
    fn shortest_paths_to(&self, a: u32, dist: &mut [(u64, u32)]) {
        let h = self.hosts;
        dist.fill(UNREACHED);
        dist[(a - h) as usize] = (0, 0);
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((0u64, 0u32, a)));
        while let Some(Reverse((w, hops, u))) = heap.pop() {
            if (w, hops) > dist[(u - h) as usize] {
                continue;
            }
            for i in self.switch_ports(u) {
                let PortInfo {
                    peer: v, peer_port, ..
                } = self.ports[i];
                if v < h {
                    continue;
                }
                // The cost of v's port towards u.
                let cost = self.weights[self.port_index(v, peer_port)];
                let cand = (w.saturating_add(cost), hops + 1);
                if cand < dist[(v - h) as usize] {
                    dist[(v - h) as usize] = cand;
                    heap.push(Reverse((cand.0, cand.1, v)));
                }
            }
        }
    }

    /// Appends the next hops, hop counts and path-id radices towards `a`.
    fn store_routes(&mut self, a: u32, dist: &[(u64, u32)]) -> Result<(), String> {
        let h = self.hosts;
        let max_d = dist.iter().map(|d| d.1).max().unwrap_or(0) as usize;
        let mut radix = vec![1u16; max_d + 2];
        for (vi, &(w, hops)) in dist.iter().enumerate() {
            let v = h + vi as u32;
            let before = self.next.len();
            if v != a {
                for p in self.switch_ports(v) {
                    let PortInfo { peer: u, .. } = self.ports[p];
                    if u < h {
                        continue;
                    }
                    let du = dist[(u - h) as usize];
                    if du.1 + 1 == hops && du.0.saturating_add(self.weights[p]) == w {
                        self.next
                            .push((p - self.port_base[v as usize] as usize) as u16);
                    }
                }
            }
            let c = (self.next.len() - before) as u16;
            radix[hops as usize] = radix[hops as usize].max(c);
            self.hop
                .push(u16::try_from(hops).map_err(|_| "a path over 65535 hops".to_string())?);
            self.next_off.push(
                u32::try_from(self.next.len())
                    .map_err(|_| "the routing tables exceed 2^32 entries".to_string())?,
            );
        }
        self.level_off.push(self.radix.len() as u32);
        let mut w = 1u64;
        for &c in &radix {
            self.stride.push(w);
            w = w.saturating_mul(c as u64);
        }
        self.radix.extend_from_slice(&radix);
        Ok(())
    }

    /// One group per component of links shorter than the chosen cut delay
    /// (module doc, "Partition groups"); a group id is its smallest member.
    fn partition_groups(&self) -> Vec<u32> {
        let n = self.entities();
        let weight = |e: u32| (self.port_base[e as usize + 1] - self.port_base[e as usize]) as u64;
        let total: u64 = (0..n).map(weight).sum();
        let mut delays: Vec<u64> = self.ports.iter().map(|p| p.link.delay_ps).collect();
        delays.sort_unstable();
        delays.dedup();
        let base = || {
            let mut parent: Vec<u32> = (0..n).collect();
            for (h, &(s, _)) in self.attach.iter().enumerate() {
                union(&mut parent, h as u32, s);
            }
            parent
        };
        for &cut in delays.iter().rev() {
            let mut parent = base();
            for e in 0..n {
                for i in self.switch_ports(e) {
                    if self.ports[i].link.delay_ps < cut {
                        union(&mut parent, e, self.ports[i].peer);
                    }
                }
            }
            let mut sum = vec![0u64; n as usize];
            for e in 0..n {
                let r = find(&mut parent, e);
                sum[r as usize] += weight(e);
            }
            if sum.iter().all(|&s| s * MIN_GROUPS <= total) {
                return (0..n).map(|e| find(&mut parent, e)).collect();
            }
        }
        let mut parent = base();
        (0..n).map(|e| find(&mut parent, e)).collect()
    }

    /// The name the file gives entity `e`.
    pub fn name(&self, e: u32) -> &str {
        &self.names[e as usize]
    }
    /// The entity named `name`.
    pub fn entity(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|x| x == name).map(|i| i as u32)
    }
    /// The queue size the file gives port `p` of entity `e`, if any: it
    /// replaces the capacity of the port's discipline (docs/topologies.md).
    pub fn queue_limit(&self, e: u32, p: u16) -> Option<QueueLimit> {
        self.queues[self.port_index(e, p)].map(|(q, _)| q)
    }
    /// An error about the queue size the file gives port `p` of entity `e`,
    /// at the line that gives it.
    pub fn queue_error(&self, e: u32, p: u16, message: &str) -> GraphError {
        let line = self.queues[self.port_index(e, p)].map(|(_, l)| l);
        let peer = self.ports[self.port_index(e, p)].peer;
        gerr(
            std::path::Path::new(&self.source),
            line,
            format!(
                "the queue of {} towards {}: {message}",
                self.name(e),
                self.name(peer)
            ),
        )
    }
    pub(super) fn hosts(&self) -> u32 {
        self.hosts
    }
    pub(super) fn entities(&self) -> u32 {
        self.names.len() as u32
    }
    /// Hosts per access switch when every access switch has the same number
    /// of hosts with consecutive ids; otherwise 1.
    pub(super) fn hosts_per_tor(&self) -> u32 {
        let first = self.attach[0].0;
        let k = self.attach.iter().take_while(|x| x.0 == first).count();
        let uniform = self.attach.len().is_multiple_of(k)
            && self
                .attach
                .chunks(k)
                .all(|c| c.iter().all(|x| x.0 == c[0].0))
            && {
                let mut s: Vec<u32> = self.attach.iter().map(|x| x.0).collect();
                s.dedup();
                let n = s.len();
                s.sort_unstable();
                s.dedup();
                s.len() == n
            };
        if uniform {
            k as u32
        } else {
            1
        }
    }
    /// The slowest host link (rate, then delay): loads relative to the host
    /// link then never exceed any host's NIC.
    pub(super) fn host_link(&self) -> LinkSpec {
        (0..self.hosts)
            .map(|h| self.ports[self.port_base[h as usize] as usize].link)
            .min_by_key(|l| (l.rate_bps, l.delay_ps))
            .expect("a graph has hosts")
    }
    pub(super) fn kind(&self, e: u32) -> EntityKind {
        self.kinds[e as usize]
    }
    pub(super) fn port_count(&self, e: u32) -> u16 {
        (self.port_base[e as usize + 1] - self.port_base[e as usize]) as u16
    }
    pub(super) fn port(&self, e: u32, p: u16) -> PortInfo {
        self.ports[self.port_index(e, p)]
    }
    #[inline]
    pub(super) fn route(&self, e: u32, dst: u32, path: u32) -> u16 {
        if e < self.hosts {
            return 0;
        }
        let (a, host_port) = self.attach[dst as usize];
        if e == a {
            return host_port;
        }
        let s = (self.entities() - self.hosts) as usize;
        let ai = self.dest_of[(a - self.hosts) as usize] as usize;
        let k = ai * s + (e - self.hosts) as usize;
        let (lo, hi) = (self.next_off[k] as usize, self.next_off[k + 1] as usize);
        let c = hi - lo;
        if c == 1 {
            return self.next[lo];
        }
        let l = self.level_off[ai] as usize + self.hop[k] as usize;
        let digit = (path as u64 / self.stride[l]) % self.radix[l] as u64;
        self.next[lo + (digit % c as u64) as usize]
    }
    fn hops_to_switch(&self, src: u32, dst: u32) -> Option<(usize, usize)> {
        let (sa, a) = (self.attach[src as usize].0, self.attach[dst as usize].0);
        if sa == a {
            return None;
        }
        let ai = self.dest_of[(a - self.hosts) as usize] as usize;
        let s = (self.entities() - self.hosts) as usize;
        Some((ai, self.hop[ai * s + (sa - self.hosts) as usize] as usize))
    }
    pub(super) fn num_paths(&self, src: u32, dst: u32) -> u32 {
        match self.hops_to_switch(src, dst) {
            None => 1,
            Some((ai, d)) => {
                let w = self.stride[self.level_off[ai] as usize + d + 1];
                w.min(MAX_PATHS as u64) as u32
            }
        }
    }
    pub(super) fn hops(&self, src: u32, dst: u32) -> u32 {
        if src == dst {
            return 0;
        }
        match self.hops_to_switch(src, dst) {
            None => 2,
            Some((_, d)) => d as u32 + 2,
        }
    }
    pub(super) fn group(&self, e: u32) -> Option<u32> {
        Some(self.group[e as usize])
    }
    /// Not a min cut: half the smaller of the total host-link capacity and
    /// the total switch-to-switch capacity (an upper bound on the bisection).
    /// Give graph loads relative to the host link where that matters.
    pub(super) fn bisection_bps(&self) -> u64 {
        let mut host = 0u64;
        let mut core = 0u64;
        for e in 0..self.entities() {
            for i in self.switch_ports(e) {
                let p = self.ports[i];
                if e < self.hosts {
                    host += p.link.rate_bps;
                } else if e < p.peer {
                    core += p.link.rate_bps;
                }
            }
        }
        host.min(core) / 2
    }
    pub(super) fn describe(&self) -> String {
        format!(
            "graph {} ({} hosts, {} switches, {} links)",
            self.source,
            self.hosts,
            self.entities() - self.hosts,
            self.ports.len() / 2
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::graph_file::parse_psim;
    use super::super::Topology;
    use super::*;
    use std::collections::BTreeSet;

    fn graph(text: &str) -> Result<Topology, String> {
        let f = Path::new("t.graph");
        let spec = parse_psim(text, f).map_err(|e| e.to_string())?;
        Graph::new(&spec, f)
            .map(|g| Topology::Graph(Box::new(g)))
            .map_err(|e| e.to_string())
    }

    fn shipped(name: &str) -> Topology {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/topologies")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        Topology::Graph(Box::new(
            Graph::new(&parse_psim(&text, &path).unwrap(), &path).unwrap(),
        ))
    }

    /// The path of `path` from `src` to `dst`, as entity ids.
    fn walk(t: &Topology, src: u32, dst: u32, path: u32) -> Vec<u32> {
        let mut at = src;
        let mut v = vec![src];
        while at != dst {
            at = t.port(at, t.route(at, dst, path)).peer;
            v.push(at);
            assert!(
                v.len() <= t.entities() as usize + 1,
                "loop {src}->{dst}: {v:?}"
            );
        }
        v
    }

    /// Every shortest path (by hop count) between two hosts, by brute force.
    fn all_shortest(t: &Topology, src: u32, dst: u32) -> BTreeSet<Vec<u32>> {
        let n = t.entities() as usize;
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::from([dst]);
        dist[dst as usize] = 0;
        while let Some(u) = queue.pop_front() {
            for p in 0..t.port_count(u) {
                let v = t.port(u, p).peer;
                // Hosts never transit.
                if dist[v as usize] == u32::MAX && (v == src || t.kind(v) != EntityKind::Host) {
                    dist[v as usize] = dist[u as usize] + 1;
                    queue.push_back(v);
                }
            }
        }
        let mut out = BTreeSet::new();
        let mut stack = vec![vec![src]];
        while let Some(path) = stack.pop() {
            let u = *path.last().unwrap();
            if u == dst {
                out.insert(path);
                continue;
            }
            for p in 0..t.port_count(u) {
                let v = t.port(u, p).peer;
                if dist[v as usize] != u32::MAX && dist[v as usize] + 1 == dist[u as usize] {
                    let mut next = path.clone();
                    next.push(v);
                    stack.push(next);
                }
            }
        }
        out
    }

    /// Symmetric wiring; for every pair, path ids below num_paths reach the
    /// destination in `hops` links and together take every shortest path.
    fn check(t: &Topology) {
        for e in 0..t.entities() {
            for p in 0..t.port_count(e) {
                let info = t.port(e, p);
                let back = t.port(info.peer, info.peer_port);
                assert_eq!((back.peer, back.peer_port), (e, p));
                assert_eq!(back.link, info.link);
            }
        }
        for s in 0..t.hosts() {
            for d in 0..t.hosts() {
                if s == d {
                    continue;
                }
                let want = all_shortest(t, s, d);
                let mut got = BTreeSet::new();
                for path in 0..t.num_paths(s, d) {
                    let w = walk(t, s, d, path);
                    assert_eq!(w.len() as u32 - 1, t.hops(s, d), "{s}->{d} path {path}");
                    assert_eq!(w, walk(t, s, d, path), "same id, same path");
                    got.insert(w);
                }
                assert_eq!(got, want, "{s}->{d}");
            }
        }
    }

    const DIAMOND: &str = "host a b\nswitch s0 s1 s2 s3\nlink a s0 10Gbps 1us\nlink s0 s1 10Gbps 1us\n\
                           link s0 s2 10Gbps 1us\nlink s1 s3 10Gbps 1us\nlink s2 s3 10Gbps 1us\nlink s3 b 10Gbps 1us\n";

    #[test]
    fn a_diamond_has_two_paths_and_every_path_id_uses_one() {
        let t = graph(DIAMOND).unwrap();
        check(&t);
        assert_eq!((t.hosts(), t.entities(), t.links()), (2, 6, 12));
        assert_eq!(t.num_paths(0, 1), 2);
        assert_eq!(t.hops(0, 1), 4);
        let s1 = 3; // hosts 0, 1, then s0 = 2, s1 = 3, s2 = 4, s3 = 5
        assert_eq!(walk(&t, 0, 1, 0), vec![0, 2, s1, 5, 1]);
        assert_eq!(walk(&t, 0, 1, 1), vec![0, 2, 4, 5, 1]);
        // Ids beyond num_paths wrap onto the same two paths.
        assert_eq!(walk(&t, 0, 1, 7), walk(&t, 0, 1, 1));
        assert_eq!(t.kind(2), EntityKind::Tor);
        assert_eq!(t.kind(3), EntityKind::Core);
        assert_eq!(t.label(3), "s1");
    }

    #[test]
    fn two_diamonds_in_a_row_give_four_distinct_paths() {
        let t = graph(
            "host a b\nswitch s0 s1 s2 s3 s4 s5\nlink a s0 1Gbps 1us\nlink s0 s1 1Gbps 1us\nlink s0 s2 1Gbps 1us\n\
             link s1 s3 1Gbps 1us\nlink s2 s3 1Gbps 1us\nlink s3 s4 1Gbps 1us\nlink s3 s5 1Gbps 1us\n\
             link s4 s0x 1Gbps 1us\nswitch s0x\nlink s5 s0x 1Gbps 1us\nlink s0x b 1Gbps 1us\n",
        )
        .unwrap();
        check(&t);
        assert_eq!(t.num_paths(0, 1), 4);
        let paths: BTreeSet<_> = (0..4).map(|p| walk(&t, 0, 1, p)).collect();
        assert_eq!(paths.len(), 4);
        assert_eq!(t.hops(0, 1), 6);
    }

    #[test]
    fn weights_pick_the_cheaper_branch_and_break_ties_by_hops() {
        let heavy = DIAMOND.replace("link s0 s1 10Gbps 1us", "link s0 s1 10Gbps 1us weight=2");
        let t = graph(&heavy).unwrap();
        assert_eq!(t.num_paths(0, 1), 1);
        assert_eq!(walk(&t, 0, 1, 0), vec![0, 2, 4, 5, 1]);
        // A 3-hop detour of weight 1 + 0.5 + 0.5 ties a direct weight-2 link:
        // the fewer hops win, so there is one path, of 3 links.
        let t = graph(
            "host a b\nswitch x y z\nlink a x 1Gbps 1us\nlink x y 1Gbps 1us weight=2\nlink x z 1Gbps 1us\n\
             link z y 1Gbps 1us weight=1\nlink y b 1Gbps 1us\n",
        )
        .unwrap();
        assert_eq!((t.num_paths(0, 1), t.hops(0, 1)), (1, 3));
    }

    #[test]
    fn the_internet2_files_load_with_their_sizes_and_capacities() {
        let gbps = |t: &Topology, a: &str, b: &str| {
            let Topology::Graph(g) = t else {
                unreachable!()
            };
            let (a, b) = (g.entity(a).unwrap(), g.entity(b).unwrap());
            (0..t.port_count(a))
                .map(|p| t.port(a, p))
                .find(|p| p.peer == b)
                .map(|p| (p.link.rate_bps, p.link.delay_ps))
                .unwrap()
        };
        const MS: u64 = 1_000_000_000;
        for (file, nodes, links, hosts, edge, access, core03) in [
            (
                "i2_1g_10g.graph",
                210,
                216,
                100,
                1_000_000_000,
                10_000_000_000,
                14_445_000_000,
            ),
            (
                "i2_1g_1g.graph",
                210,
                216,
                100,
                1_000_000_000,
                1_000_000_000,
                14_445_000_000,
            ),
            (
                "i2_div10.graph",
                210,
                216,
                100,
                100_000_000,
                100_000_000,
                1_444_500_000,
            ),
        ] {
            let t = shipped(file);
            assert_eq!(
                (t.entities(), t.links() / 2, t.hosts()),
                (nodes, links, hosts),
                "{file}"
            );
            assert_eq!(gbps(&t, "c0", "c3"), (core03, 10 * MS), "{file}");
            assert_eq!(gbps(&t, "c7", "e17"), (edge, MS), "{file}");
            assert_eq!(gbps(&t, "e17", "h117"), (access, MS), "{file}");
            // h110 sits under core 0, h119 under core 9: 0-3-7-9, plus 4 edge/access links.
            assert_eq!(t.hops(0, 9), 7);
            assert_eq!(t.hops(0, 10), 4);
            check(&t);
        }
        let t = shipped("i2_10g_10g.graph");
        assert_eq!((t.entities(), t.links() / 2, t.hosts()), (110, 116, 100));
        assert_eq!(gbps(&t, "c8", "c9"), (2_223_000_000, 10 * MS));
        assert_eq!(gbps(&t, "c5", "h15"), (10_000_000_000, MS));
        assert_eq!(t.hops(0, 10), 2);
        check(&t);
        let t = shipped("i2_10g_10g_us.graph");
        assert_eq!(gbps(&t, "c8", "c9"), (2_223_000_000, 10_000_000));
        // 1G-10G core link capacities, summed: 98,897 Mb/s (docs/topologies.md).
        let t = shipped("i2_1g_10g.graph");
        let core: u64 = (100..110)
            .flat_map(|e| (0..t.port_count(e)).map(move |p| (e, p)))
            .map(|(e, p)| t.port(e, p))
            .filter(|p| p.peer >= 100 && p.peer < 110)
            .map(|p| p.link.rate_bps)
            .sum();
        assert_eq!(core / 2, 98_897_000_000);
    }

    #[test]
    fn the_partition_cuts_only_the_longest_links_of_internet2() {
        let t = shipped("i2_1g_10g.graph");
        let g = t.partition_graph();
        // Ten groups: each core with its edge switches and hosts.
        let groups: BTreeSet<_> = g.entities.iter().map(|e| e.group).collect();
        assert_eq!(groups.len(), 10);
        for shards in [2, 3, 4, 10] {
            let r = partition::partition(&g, shards)
                .unwrap()
                .report(&g)
                .unwrap();
            assert_eq!(r.lookahead_ps, Some(10_000_000_000), "{shards} shards");
        }
        // Equal delays everywhere: a host stays with its switch, nothing else is grouped.
        let t = graph(DIAMOND).unwrap();
        let g = t.partition_graph();
        assert_eq!(g.entities[0].group, g.entities[2].group);
        assert_ne!(g.entities[2].group, g.entities[3].group);
    }

    #[test]
    fn bad_graphs_are_one_line_errors_naming_file_and_line() {
        let cases = [
            ("host a b\nswitch s\nlink a s 1Gbps 1us\n", "t.graph:1: host b is not connected"),
            (
                "host a\nswitch s t\nlink a s 1Gbps 1us\nlink a t 1Gbps 1us\n",
                "t.graph:4: host a has a second link (first on line 3)",
            ),
            (
                "host a b c\nswitch s t\nlink a s 1Gbps 1us\nlink b s 1Gbps 1us\nlink c t 1Gbps 1us\n",
                "t.graph:2: host c cannot reach host a: the graph is disconnected",
            ),
            (
                "host a b\nswitch s t\nlink a s 1Gbps 1us\nlink b s 1Gbps 1us\n",
                "t.graph:2: switch t cannot reach switch s",
            ),
            ("host a b\nswitch s\nlink a b 1Gbps 1us\n", "t.graph:3: link joins two hosts"),
            ("host a\n", "t.graph: a graph needs at least one host and one switch"),
        ];
        for (text, want) in cases {
            let e = graph(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn uniform_racks_report_their_size_and_the_slowest_host_link() {
        let t = graph(
            "host a b c d\nswitch s t\nlink a s 10Gbps 1us\nlink b s 10Gbps 1us\nlink c t 1Gbps 1us\n\
             link d t 10Gbps 1us\nlink s t 40Gbps 1us\n",
        )
        .unwrap();
        assert_eq!(t.hosts_per_tor(), 2);
        assert_eq!(t.host_link().rate_bps, 1_000_000_000);
        // min(31G of hosts, 40G between switches) / 2.
        assert_eq!(t.bisection_bps(), 15_500_000_000);
        check(&t);
    }
}
