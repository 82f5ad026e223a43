//! Readers for graph topology files: psim's own text format and a
//! Rocketfuel-style weighted edge list ([RF]); htsim's generic topology files
//! are read in `htsim_topo.rs`. All produce a [`GraphSpec`]:
//! named nodes and duplex links, in file order. [`super::graph::Graph`] checks
//! the shape (hosts, connectivity) and computes routes.
//!
//! psim's format, one statement per line, `#` starts a comment:
//!
//! ```text
//! host h0 h1            # hosts (one NIC each), any number of names per line
//! switch s0 s1
//! link h0 s0 10Gbps 1us
//! link s0 s1 5556Mbps 10ms weight=2 queue=3425pkts
//! ```
//!
//! | field | meaning | default |
//! |---|---|---|
//! | rate | `<number><unit>`, unit `bps`, `Kbps`, `Mbps`, `Gbps` or `Tbps` (powers of 1000) | required |
//! | delay | `<number><unit>`, unit `s`, `ms`, `us`, `ns` or `ps`; zero allowed | required |
//! | `weight=` | routing cost of the link, both directions, positive | 1 |
//! | `queue=` | this link's output queue, `<n>pkts` or `<n>B`, both ends; it replaces the capacity of the port's discipline (docs/topologies.md) | the switch's discipline |
//!
//! Names are declared once (a second declaration is an error) and may be used
//! before their declaration. Links are duplex: one line is one cable (GR2).
//!
//! Rocketfuel (`format = "rocketfuel"`): each line `A B [W]` is one direction
//! of a router-to-router link with routing weight `W` (default 1). `B A` on
//! another line is the same cable's other direction; a cable given once gets
//! the same weight both ways. Routers are declared by use; psim attaches
//! `hosts_per_switch` hosts to every router (named `<router>/h<i>`), with the
//! rates and delays the scenario gives.

use super::LinkSpec;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Routing weights are stored in thousandths, so that fractional
/// Rocketfuel weights (e.g. `2.5`) stay exact integers.
pub const WEIGHT_SCALE: f64 = 1000.0;

/// A graph topology file that could not be used. Displays as one line,
/// `file:line: message` (or `file: message` for whole-graph problems).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct GraphError {
    /// The topology file.
    pub file: PathBuf,
    /// 1-based line, when one line is at fault.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// A per-link output queue size given in the file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum QueueLimit {
    /// At most this many packets.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
}

/// A port's queue size as a file gives it, with the line that gives it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PortSize {
    /// The size.
    pub limit: QueueLimit,
    /// The line of the file that gives it.
    pub line: usize,
}

/// One node as declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// Name, unique in the file.
    pub name: String,
    /// A host (one NIC) rather than a switch.
    pub host: bool,
    /// Line of the declaration.
    pub line: usize,
}

/// One duplex link as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeSpec {
    /// Index of one end in [`GraphSpec::nodes`].
    pub a: usize,
    /// Index of the other end.
    pub b: usize,
    /// Rate and propagation delay (both directions).
    pub link: LinkSpec,
    /// Routing cost a → b, in units of 1/[`WEIGHT_SCALE`].
    pub weight_ab: u64,
    /// Routing cost b → a.
    pub weight_ba: u64,
    /// Size of the output queue at `a`, towards `b`, if the file gives one.
    pub queue_ab: Option<PortSize>,
    /// Size of the output queue at `b`, towards `a`.
    pub queue_ba: Option<PortSize>,
    /// Line of the link.
    pub line: usize,
}

/// A parsed topology file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphSpec {
    /// Nodes in declaration order.
    pub nodes: Vec<NodeSpec>,
    /// Links in file order.
    pub edges: Vec<EdgeSpec>,
}

/// Options of the Rocketfuel reader: the hosts psim adds and the links' rates.
#[derive(Copy, Clone, Debug)]
pub struct RocketfuelOptions {
    /// Hosts attached to every router.
    pub hosts_per_switch: u32,
    /// Router-to-router links.
    pub link: LinkSpec,
    /// Host-to-router links.
    pub host_link: LinkSpec,
}

/// An error at `file`'s `line` (or the whole file).
pub(super) fn err(file: &Path, line: Option<usize>, message: impl Into<String>) -> GraphError {
    GraphError {
        file: file.into(),
        line,
        message: message.into(),
    }
}

/// The text before any `#`.
pub(super) fn uncommented(line: &str) -> &str {
    line.split('#').next().unwrap_or("")
}

/// Statements of a line: the text before any `#`, split on whitespace.
fn words(line: &str) -> Vec<&str> {
    uncommented(line).split_whitespace().collect()
}

/// Splits `10Gbps` into (10.0, "Gbps").
fn number_unit(s: &str) -> Option<(f64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit))
}

/// A rate such as `5556Mbps`, in bits per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (v, unit) =
        number_unit(s).ok_or_else(|| format!("rate {s:?}: expected a number and a unit"))?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "bps" => 1.0,
        "kbps" => 1e3,
        "mbps" => 1e6,
        "gbps" => 1e9,
        "tbps" => 1e12,
        _ => {
            return Err(format!(
                "rate {s:?}: unit must be bps, Kbps, Mbps, Gbps or Tbps"
            ))
        }
    };
    let bps = (v * scale).round();
    if !bps.is_finite() || bps < 1.0 {
        return Err(format!(
            "rate {s:?}: a link rate must be positive and finite"
        ));
    }
    if bps > crate::config::MAX_LINK_GBPS * 1e9 {
        return Err(format!(
            "rate {s:?}: at most {} Gb/s (docs/ranges.md)",
            crate::config::MAX_LINK_GBPS
        ));
    }
    Ok(bps as u64)
}

/// A delay such as `10ms`, in picoseconds.
pub fn parse_delay(s: &str) -> Result<u64, String> {
    let (v, unit) =
        number_unit(s).ok_or_else(|| format!("delay {s:?}: expected a number and a unit"))?;
    let scale = match unit {
        "s" => 1e12,
        "ms" => 1e9,
        "us" => 1e6,
        "ns" => 1e3,
        "ps" => 1.0,
        _ => return Err(format!("delay {s:?}: unit must be s, ms, us, ns or ps")),
    };
    let ps = (v * scale).round();
    // Checked, never saturated: the same 1 s ceiling as a scenario's latency_ns.
    if !(0.0..=crate::config::MAX_LINK_DELAY_PS as f64).contains(&ps) {
        return Err(format!("delay {s:?}: must be 0 to 1 s (docs/ranges.md)"));
    }
    Ok(ps as u64)
}

/// A routing weight (positive, at most 10^9), in 1/[`WEIGHT_SCALE`] units.
fn parse_weight(s: &str) -> Result<u64, String> {
    match s.parse::<f64>() {
        Ok(w) if w > 0.0 && w <= 1e9 => Ok(((w * WEIGHT_SCALE).round() as u64).max(1)),
        _ => Err(format!("weight {s:?}: must be a positive number up to 1e9")),
    }
}

fn parse_queue(s: &str) -> Result<QueueLimit, String> {
    let bad = || format!("queue {s:?}: expected <n>pkts (1 to 2^32 - 1) or <n>B, n >= 1");
    let (n, unit) = match s.strip_suffix("pkts") {
        Some(n) => (n, true),
        None => (s.strip_suffix('B').ok_or_else(bad)?, false),
    };
    let n: u64 = n.parse().map_err(|_| bad())?;
    if n == 0 || (unit && n > u32::MAX as u64) {
        return Err(bad());
    }
    Ok(if unit {
        QueueLimit::Packets(n)
    } else {
        QueueLimit::Bytes(n)
    })
}

/// A node name: letters, digits and `_ - . : + / ,`.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.:+/,".contains(c))
    {
        Ok(())
    } else {
        Err(format!(
            "node name {name:?}: use letters, digits and _ - . : + / ,"
        ))
    }
}

/// Rejects a second link between the same two nodes and self-loops.
fn check_pair(
    seen: &mut HashMap<(usize, usize), usize>,
    a: usize,
    b: usize,
    line: usize,
    nodes: &[NodeSpec],
) -> Result<(), String> {
    if a == b {
        return Err(format!("link from {} to itself", nodes[a].name));
    }
    let key = (a.min(b), a.max(b));
    if let Some(first) = seen.insert(key, line) {
        return Err(format!(
            "second link between {} and {} (first on line {first})",
            nodes[a].name, nodes[b].name
        ));
    }
    Ok(())
}

/// Parses psim's graph format. `file` is used in error messages only.
pub fn parse_psim(text: &str, file: &Path) -> Result<GraphSpec, GraphError> {
    let mut spec = GraphSpec::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    // Pass 1: declarations, so that links may name nodes declared later.
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let w = words(raw);
        let host = match w.first() {
            Some(&"host") => true,
            Some(&"switch") => false,
            Some(&"link") | None => continue,
            Some(other) => {
                return Err(err(
                    file,
                    Some(line),
                    format!("unknown statement {other:?} (expected host, switch or link)"),
                ))
            }
        };
        if w.len() < 2 {
            return Err(err(
                file,
                Some(line),
                format!("`{}` needs at least one name", w[0]),
            ));
        }
        for name in &w[1..] {
            check_name(name).map_err(|m| err(file, Some(line), m))?;
            if let Some(&first) = index.get(*name) {
                return Err(err(
                    file,
                    Some(line),
                    format!(
                        "duplicate node {name} (first declared on line {})",
                        spec.nodes[first].line
                    ),
                ));
            }
            index.insert(name.to_string(), spec.nodes.len());
            spec.nodes.push(NodeSpec {
                name: name.to_string(),
                host,
                line,
            });
        }
    }
    // Pass 2: links.
    let mut seen = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let w = words(raw);
        if w.first() != Some(&"link") {
            continue;
        }
        let at = |m: String| err(file, Some(line), m);
        if w.len() < 5 {
            return Err(at(
                "a link needs: link <node> <node> <rate> <delay> [weight=W] [queue=Q]".into(),
            ));
        }
        let node = |name: &str| {
            index
                .get(name)
                .copied()
                .ok_or_else(|| at(format!("link names unknown node {name}")))
        };
        let (a, b) = (node(w[1])?, node(w[2])?);
        check_pair(&mut seen, a, b, line, &spec.nodes).map_err(at)?;
        let link = LinkSpec {
            rate_bps: parse_rate(w[3]).map_err(at)?,
            delay_ps: parse_delay(w[4]).map_err(at)?,
        };
        let mut weight = None;
        let mut queue = None;
        // A second `weight=` or `queue=` would silently win over the first.
        let twice = |key: &str| at(format!("link option {key}= given twice"));
        for opt in &w[5..] {
            match opt.split_once('=') {
                Some(("weight", _)) if weight.is_some() => return Err(twice("weight")),
                Some(("queue", _)) if queue.is_some() => return Err(twice("queue")),
                Some(("weight", v)) => weight = Some(parse_weight(v).map_err(at)?),
                Some(("queue", v)) => {
                    let limit = parse_queue(v).map_err(at)?;
                    queue = Some(PortSize { limit, line });
                }
                _ => {
                    return Err(at(format!(
                        "unknown link option {opt:?} (expected weight=W or queue=Q)"
                    )))
                }
            }
        }
        let weight = weight.unwrap_or(WEIGHT_SCALE as u64);
        spec.edges.push(EdgeSpec {
            a,
            b,
            link,
            weight_ab: weight,
            weight_ba: weight,
            queue_ab: queue,
            queue_ba: queue,
            line,
        });
    }
    Ok(spec)
}

/// Parses a Rocketfuel-style weighted edge list and attaches hosts.
pub fn parse_rocketfuel(
    text: &str,
    file: &Path,
    opts: &RocketfuelOptions,
) -> Result<GraphSpec, GraphError> {
    let mut routers: Vec<(String, usize)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    // (lower router, higher router) -> edge index; directions seen.
    let mut cables: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut edges: Vec<EdgeSpec> = Vec::new();
    let mut directed: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let w = words(raw);
        if w.is_empty() {
            continue;
        }
        let at = |m: String| err(file, Some(line), m);
        if w.len() != 2 && w.len() != 3 {
            return Err(at(format!(
                "expected `<router> <router> [weight]`, found {} fields",
                w.len()
            )));
        }
        let mut id = |name: &str| -> Result<usize, GraphError> {
            check_name(name).map_err(at)?;
            Ok(*index.entry(name.to_string()).or_insert_with(|| {
                routers.push((name.to_string(), line));
                routers.len() - 1
            }))
        };
        let (a, b) = (id(w[0])?, id(w[1])?);
        if a == b {
            return Err(at(format!("link from {} to itself", w[0])));
        }
        let weight = match w.get(2) {
            Some(v) => parse_weight(v).map_err(at)?,
            None => WEIGHT_SCALE as u64,
        };
        if let Some(first) = directed.insert((a, b), line) {
            return Err(at(format!(
                "second link from {} to {} (first on line {first})",
                w[0], w[1]
            )));
        }
        match cables.get(&(a.min(b), a.max(b))) {
            // The other direction of a cable seen before: its own weight.
            Some(&e) => {
                let edge = &mut edges[e];
                if edge.a == b {
                    edge.weight_ba = weight;
                } else {
                    edge.weight_ab = weight;
                }
            }
            None => {
                cables.insert((a.min(b), a.max(b)), edges.len());
                edges.push(EdgeSpec {
                    a,
                    b,
                    link: opts.link,
                    weight_ab: weight,
                    weight_ba: weight,
                    queue_ab: None,
                    queue_ba: None,
                    line,
                });
            }
        }
    }
    // Hosts first (router order), then routers; edges are renumbered to match.
    let h = opts.hosts_per_switch as usize;
    let r = routers.len();
    let mut spec = GraphSpec::default();
    for (name, line) in &routers {
        for i in 0..h {
            spec.nodes.push(NodeSpec {
                name: format!("{name}/h{i}"),
                host: true,
                line: *line,
            });
        }
    }
    for (name, line) in &routers {
        spec.nodes.push(NodeSpec {
            name: name.clone(),
            host: false,
            line: *line,
        });
    }
    let router_id = |x: usize| r * h + x;
    for e in &mut edges {
        e.a = router_id(e.a);
        e.b = router_id(e.b);
    }
    spec.edges = edges;
    for (x, (_, line)) in routers.iter().enumerate() {
        for i in 0..h {
            spec.edges.push(EdgeSpec {
                a: x * h + i,
                b: router_id(x),
                link: opts.host_link,
                weight_ab: WEIGHT_SCALE as u64,
                weight_ba: WEIGHT_SCALE as u64,
                queue_ab: None,
                queue_ba: None,
                line: *line,
            });
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GraphSpec, String> {
        parse_psim(text, Path::new("t.graph")).map_err(|e| e.to_string())
    }

    #[test]
    fn units_convert_exactly() {
        assert_eq!(parse_rate("5556Mbps"), Ok(5_556_000_000));
        assert_eq!(parse_rate("555.6Mbps"), Ok(555_600_000));
        assert_eq!(parse_rate("10Gbps"), Ok(10_000_000_000));
        assert_eq!(parse_delay("10ms"), Ok(10_000_000_000));
        assert_eq!(parse_delay("1.5us"), Ok(1_500_000));
        assert_eq!(parse_delay("0ns"), Ok(0));
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("infGbps").is_err());
        assert!(parse_rate("20Tbps").is_err());
        assert!(parse_delay("1e18s").is_err());
        assert!(parse_delay("-5ms").is_err());
        assert_eq!(parse_delay("1s"), Ok(1_000_000_000_000));
        assert!(parse_rate("10Gb").is_err());
        assert!(parse_delay("3 furlongs").is_err());
    }

    #[test]
    fn a_file_parses_with_options_and_forward_references() {
        let s = parse(
            "# two hosts\nlink a s 1Gbps 1ms queue=10pkts\nhost a b\nswitch s # the switch\n\
             link s b 2Gbps 2us weight=2.5\n",
        )
        .unwrap();
        assert_eq!(s.nodes.len(), 3);
        assert!(s.nodes[0].host && !s.nodes[2].host);
        assert_eq!(s.edges.len(), 2);
        let ten = Some(PortSize {
            limit: QueueLimit::Packets(10),
            line: 2,
        });
        assert_eq!((s.edges[0].queue_ab, s.edges[0].queue_ba), (ten, ten));
        assert_eq!(s.edges[0].line, 2);
        assert_eq!(s.edges[1].weight_ab, 2500);
        assert_eq!(s.edges[1].link.delay_ps, 2_000_000);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let cases = [
            (
                "host a\nhost a\n",
                "t.graph:2: duplicate node a (first declared on line 1)",
            ),
            (
                "host a\nswitch s\nlink a x 1Gbps 1ms\n",
                "t.graph:3: link names unknown node x",
            ),
            (
                "host a\nswitch s\nlink a s 0Gbps 1ms\n",
                "t.graph:3: rate \"0Gbps\": a link rate must be positive",
            ),
            (
                "host a\nswitch s\nlink a s 1Gbps\n",
                "t.graph:3: a link needs",
            ),
            (
                "host a\nswitch s\nlink a s 1Gbps 1ms\nlink s a 1Gbps 1ms\n",
                "t.graph:4: second link between s and a",
            ),
            (
                "host a\nswitch s\nlink a s 1Gbps 1ms colour=red\n",
                "t.graph:3: unknown link option",
            ),
            (
                "host a\nswitch s\nlink a s 1Gbps 1ms queue=5pkts queue=6pkts\n",
                "t.graph:3: link option queue= given twice",
            ),
            (
                "host a\nswitch s\nlink a s 1Gbps 1ms weight=2 queue=5pkts weight=3\n",
                "t.graph:3: link option weight= given twice",
            ),
            ("router r\n", "t.graph:1: unknown statement \"router\""),
            (
                "switch s\nlink s s 1Gbps 1ms\n",
                "t.graph:2: link from s to itself",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn rocketfuel_merges_directions_and_adds_hosts() {
        let l = LinkSpec {
            rate_bps: 1_000_000_000,
            delay_ps: 5,
        };
        let opts = RocketfuelOptions {
            hosts_per_switch: 2,
            link: l,
            host_link: l,
        };
        let s = parse_rocketfuel("r1 r2 3\nr2 r1 4\nr2 r3\n", Path::new("rf"), &opts).unwrap();
        assert_eq!(s.nodes.len(), 3 * 2 + 3);
        assert_eq!(s.nodes[0].name, "r1/h0");
        assert_eq!(s.nodes[6].name, "r1");
        // 2 cables between routers, 6 host links.
        assert_eq!(s.edges.len(), 8);
        assert_eq!((s.edges[0].weight_ab, s.edges[0].weight_ba), (3000, 4000));
        assert_eq!((s.edges[1].weight_ab, s.edges[1].weight_ba), (1000, 1000));
        let e = parse_rocketfuel("r1 r2\nr1 r2\n", Path::new("rf"), &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rf:2: second link from r1 to r2 (first on line 1)"
        );
        let e = parse_rocketfuel("r1 r2 1 9\n", Path::new("rf"), &opts).unwrap_err();
        assert!(e.to_string().starts_with("rf:1: expected"), "{e}");
    }
}
