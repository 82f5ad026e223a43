//! Reader for htsim's generic topology files (`format = "htsim"`): the
//! format of csg-htsim's `GenericTopology` (`sim/datacenter/generic_topology.cpp`),
//! which describes a network as its queues and pipes. psim keeps only what a
//! [`GraphSpec`] holds: the hosts, the switches, and one duplex link per pair
//! of neighbours with its rate, delay and queue size.
//!
//! ```text
//! Hosts 2                  # header: three counts, in this order
//! Switches 1
//! Links 2
//! host h0, queue nic0      # a host and its NIC's output queue
//! switch s0, queue s0_h0, queue s0_h1, pos 10 20
//! queue nic0, type composite, speed 10 Gbps, size 150000, dst p0
//! pipe p0, latency 1 us, src h0, dst s0, reverse p0r
//! queue s0_h0, type composite, speed 10 Gbps, size 150000, dst p0r
//! ```
//!
//! A statement is `<kind> <id>` and then attributes, each after a comma:
//!
//! | statement | attributes read | ignored |
//! |---|---|---|
//! | `host` | `queue Q`: the NIC's first queue (at most one) | `pos X Y` |
//! | `switch` | `queue Q`: one output port per `queue` | `pos X Y` |
//! | `queue` | `speed N Gbps\|Mbps`, `size N` (bytes), `type T`, `dst D` (a pipe, queue or host) | `log ...`; the type (`queue`, `random`, `composite`, `fairscheduler`) is checked, the discipline comes from the scenario |
//! | `pipe` | `latency N s\|ms\|us\|ns\|ps` (positive), `dst D` and `src S` (a switch, queue or host), `reverse R` | — |
//!
//! `reverse R` defines a second pipe `R` with the same latency that delivers
//! to `src`. The header's `Hosts` and `Switches` must match the statements;
//! `Links` is read and not checked (htsim does not define what it counts).
//!
//! **From queues to links.** From every port queue (a host's `queue`, each of
//! a switch's) psim follows `dst` through queues and pipes until it reaches a
//! host or a switch: that is one direction of a link. Its rate is the slowest
//! queue's speed on the way, its delay the sum of the pipes' latencies, and its
//! queue size the port queue's. The two directions between two nodes form one
//! psim link: both must exist and have the same rate and delay. Each
//! direction's port queue size (bytes) becomes the capacity of the psim
//! port at that end, in place of the scenario discipline's own
//! (docs/topologies.md). Links are numbered as they are found: nodes
//! in declaration order, each node's queues in order; routing weights are 1.
//!
//! Stricter than htsim, which skips what it does not know: unknown
//! statements and attributes are errors, ids are unique across all four
//! kinds, an id contains no comma, and `#` starts a comment anywhere on a line.
//! Every error is one line naming the file and line.

use super::graph_file::{
    check_name, err, parse_delay, parse_rate, uncommented, EdgeSpec, GraphError, GraphSpec,
    NodeSpec, PortSize, QueueLimit, WEIGHT_SCALE,
};
use super::LinkSpec;
use std::collections::HashMap;
use std::path::Path;

/// What a statement declares, with its attributes as given (references by name).
#[derive(Debug)]
enum Body {
    Host {
        queue: Option<String>,
    },
    Switch {
        ports: Vec<String>,
    },
    Queue {
        rate_bps: u64,
        size: u64,
        dst: Option<String>,
    },
    Pipe {
        delay_ps: u64,
        dst: Option<String>,
        src: Option<String>,
    },
}

#[derive(Debug)]
struct Element {
    name: String,
    line: usize,
    body: Body,
}

impl Element {
    fn kind(&self) -> &'static str {
        match self.body {
            Body::Host { .. } => "host",
            Body::Switch { .. } => "switch",
            Body::Queue { .. } => "queue",
            Body::Pipe { .. } => "pipe",
        }
    }
}

/// One direction of a link, found by following a port queue.
struct Direction {
    from: usize,
    to: usize,
    link: LinkSpec,
    size: u64,
    /// The port queue (an index into the elements).
    queue: usize,
}

/// A header line `<keyword> <n>`.
fn header(text: &str, keyword: &str) -> Result<u64, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let want = || {
        format!(
            "expected `{keyword} <n>` (an htsim topology starts with Hosts, Switches and Links lines)"
        )
    };
    match w.as_slice() {
        // htsim's other `.topo` files describe its FatTree by parameters.
        [k, ..] if k.eq_ignore_ascii_case("Nodes") || k.eq_ignore_ascii_case("Tiers") => Err(
            "this is htsim's FatTree settings file (Nodes, Tiers, Podsize), not a generic \
             topology: use [topology] kind = \"fattree\" with its k, rates and delays"
                .to_string(),
        ),
        [k, n] if k.eq_ignore_ascii_case(keyword) => n
            .parse::<u64>()
            .map_err(|_| format!("{keyword} {n:?}: expected a whole number")),
        _ => Err(want()),
    }
}

/// Only digits, `.` and an exponent: so that number and unit cannot run together.
fn plain_number(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E')
}

/// `speed N Gbps|Mbps`, in bits per second.
fn parse_speed(n: &str, unit: &str) -> Result<u64, String> {
    let u = unit.to_ascii_lowercase();
    if u != "gbps" && u != "mbps" {
        return Err(format!("speed unit {unit:?}: htsim reads Gbps or Mbps"));
    }
    if !plain_number(n) {
        return Err(format!("speed {n:?}: expected a number"));
    }
    parse_rate(&format!("{n}{unit}"))
}

/// `latency N s|ms|us|ns|ps`, in picoseconds, positive.
fn parse_latency(n: &str, unit: &str) -> Result<u64, String> {
    let u = unit.to_ascii_lowercase();
    if !["s", "ms", "us", "ns", "ps"].contains(&u.as_str()) {
        return Err(format!(
            "latency unit {unit:?}: expected s, ms, us, ns or ps"
        ));
    }
    if !plain_number(n) {
        return Err(format!("latency {n:?}: expected a number"));
    }
    match parse_delay(&format!("{n}{u}"))? {
        0 => Err(format!(
            "latency {n} {unit}: a pipe's latency must be positive (htsim rejects 0)"
        )),
        ps => Ok(ps),
    }
}

/// Sets a single-valued attribute, rejecting a second one.
fn once<T>(slot: &mut Option<T>, attr: &str, v: T) -> Result<(), String> {
    if slot.replace(v).is_some() {
        return Err(format!("`{attr}` given twice"));
    }
    Ok(())
}

/// The arguments of `attr`, which takes exactly `n` (described by `usage`).
fn args<'a>(clause: &[&'a str], n: usize, usage: &str) -> Result<Vec<&'a str>, String> {
    if clause.len() != n + 1 {
        return Err(format!("expected `{usage}`"));
    }
    Ok(clause[1..].to_vec())
}

/// One statement's kind, id and attributes into an element (and a reverse pipe).
fn statement(clauses: &[Vec<&str>]) -> Result<Vec<(String, Body)>, String> {
    let first = clauses.first().map(Vec::as_slice).unwrap_or_default();
    let Some(given) = first.first() else {
        return Err(
            "expected a statement (host, switch, queue or pipe) before the first comma".into(),
        );
    };
    let cmd = given.to_ascii_lowercase();
    if !["host", "switch", "queue", "pipe"].contains(&cmd.as_str()) {
        return Err(format!(
            "unknown statement {given:?} (expected host, switch, queue or pipe)"
        ));
    }
    let id = match first {
        [_, id] => *id,
        [_, id, ..] => {
            return Err(format!(
                "expected `{given} {id}, <attribute> ...`: attributes follow a comma"
            ))
        }
        _ => return Err(format!("`{given}` needs an id")),
    };
    check_name(id)?;
    let attrs = &clauses[1..];
    let unknown = |a: &str, known: &str| format!("unknown {cmd} attribute {a:?} (known: {known})");
    let ignore_pos = |c: &[&str]| -> Result<(), String> {
        let xy = args(c, 2, "pos <x> <y>")?;
        if xy.iter().all(|v| v.parse::<i64>().is_ok()) {
            Ok(())
        } else {
            Err("expected `pos <x> <y>` with whole numbers".into())
        }
    };
    let name = |s: &str| -> Result<String, String> {
        check_name(s)?;
        Ok(s.to_string())
    };
    let mut out = Vec::new();
    match cmd.as_str() {
        "host" => {
            let mut queue = None;
            for c in attrs {
                match c[0] {
                    "queue" => {
                        let q = args(c, 1, "queue <id>")?;
                        if let Some(first) = queue.replace(name(q[0])?) {
                            return Err(format!(
                                "a second queue {} (first {first}): a host has one NIC",
                                q[0]
                            ));
                        }
                    }
                    "pos" => ignore_pos(c)?,
                    a => return Err(unknown(a, "queue, pos")),
                }
            }
            out.push((id.to_string(), Body::Host { queue }));
        }
        "switch" => {
            let mut ports = Vec::new();
            for c in attrs {
                match c[0] {
                    "queue" => ports.push(name(args(c, 1, "queue <id>")?[0])?),
                    "pos" => ignore_pos(c)?,
                    a => return Err(unknown(a, "queue, pos")),
                }
            }
            out.push((id.to_string(), Body::Switch { ports }));
        }
        "queue" => {
            let (mut ty, mut speed, mut size, mut dst) = (None, None, None, None);
            for c in attrs {
                match c[0] {
                    "type" => {
                        let t = args(c, 1, "type <queue|random|composite|fairscheduler>")?[0];
                        let lower = t.to_ascii_lowercase();
                        if !["queue", "random", "composite", "fairscheduler"]
                            .contains(&lower.as_str())
                        {
                            return Err(format!(
                                "queue type {t:?}: expected queue, random, composite or fairscheduler"
                            ));
                        }
                        once(&mut ty, "type", lower)?;
                    }
                    "speed" => {
                        let v = args(c, 2, "speed <number> <Gbps|Mbps>")?;
                        once(&mut speed, "speed", parse_speed(v[0], v[1])?)?;
                    }
                    "size" => {
                        let v = args(c, 1, "size <bytes>")?[0];
                        let n = v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                            format!("size {v:?}: expected a positive whole number of bytes")
                        })?;
                        once(&mut size, "size", n)?;
                    }
                    "dst" => once(&mut dst, "dst", name(args(c, 1, "dst <id>")?[0])?)?,
                    "log" => {
                        if c.len() < 2 {
                            return Err("expected `log <type> ...`".into());
                        }
                    }
                    a => return Err(unknown(a, "type, speed, size, dst, log")),
                }
            }
            let missing = |a: &str, usage: &str| format!("queue {id} has no {a} (`{usage}`)");
            ty.ok_or_else(|| missing("type", "type <queue|random|composite|fairscheduler>"))?;
            out.push((
                id.to_string(),
                Body::Queue {
                    rate_bps: speed.ok_or_else(|| missing("speed", "speed <n> <Gbps|Mbps>"))?,
                    size: size.ok_or_else(|| missing("size", "size <bytes>"))?,
                    dst,
                },
            ));
        }
        _ => {
            let (mut latency, mut dst, mut src, mut reverse) = (None, None, None, None);
            for c in attrs {
                match c[0] {
                    "latency" => {
                        let v = args(c, 2, "latency <number> <s|ms|us|ns|ps>")?;
                        once(&mut latency, "latency", parse_latency(v[0], v[1])?)?;
                    }
                    "dst" => once(&mut dst, "dst", name(args(c, 1, "dst <id>")?[0])?)?,
                    "src" => once(&mut src, "src", name(args(c, 1, "src <id>")?[0])?)?,
                    "reverse" => once(
                        &mut reverse,
                        "reverse",
                        name(args(c, 1, "reverse <id>")?[0])?,
                    )?,
                    a => return Err(unknown(a, "latency, dst, src, reverse")),
                }
            }
            let delay_ps = latency.ok_or_else(|| {
                format!("pipe {id} has no latency (`latency <n> <s|ms|us|ns|ps>`)")
            })?;
            if let Some(r) = reverse {
                let Some(s) = src.clone() else {
                    return Err(format!(
                        "pipe {id}: `reverse {r}` needs `src` (where {r} delivers)"
                    ));
                };
                out.push((id.to_string(), Body::Pipe { delay_ps, dst, src }));
                out.push((
                    r,
                    Body::Pipe {
                        delay_ps,
                        dst: Some(s),
                        src: None,
                    },
                ));
            } else {
                out.push((id.to_string(), Body::Pipe { delay_ps, dst, src }));
            }
        }
    }
    Ok(out)
}

/// Parses an htsim generic topology file. `file` is used in error messages only.
pub fn parse_htsim_topo(text: &str, file: &Path) -> Result<GraphSpec, GraphError> {
    // Header, then statements; blank and comment lines anywhere.
    let mut counts: Vec<(u64, usize)> = Vec::new();
    let mut elems: Vec<Element> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = uncommented(raw);
        if body.trim().is_empty() {
            continue;
        }
        let at = |m: String| err(file, Some(line), m);
        if counts.len() < 3 {
            let keyword = ["Hosts", "Switches", "Links"][counts.len()];
            counts.push((header(body, keyword).map_err(at)?, line));
            continue;
        }
        // The first clause is `<kind> <id>`; empty attribute clauses (a
        // trailing comma) are skipped.
        let mut parts = body
            .split(',')
            .map(|c| c.split_whitespace().collect::<Vec<_>>());
        let mut clauses: Vec<Vec<&str>> = parts.next().into_iter().collect();
        clauses.extend(parts.filter(|c| !c.is_empty()));
        for (name, b) in statement(&clauses).map_err(at)? {
            if let Some(&first) = index.get(&name) {
                let f = &elems[first];
                return Err(at(format!(
                    "duplicate id {name} (first the {} on line {})",
                    f.kind(),
                    f.line
                )));
            }
            index.insert(name.clone(), elems.len());
            elems.push(Element {
                name,
                line,
                body: b,
            });
        }
    }
    if counts.len() < 3 {
        let keyword = ["Hosts", "Switches", "Links"][counts.len()];
        return Err(err(
            file,
            None,
            format!(
                "no `{keyword} <n>` line: an htsim topology starts with Hosts, Switches and Links"
            ),
        ));
    }

    // Nodes, in declaration order; the header's counts.
    let mut spec = GraphSpec::default();
    let mut node_of: Vec<Option<usize>> = vec![None; elems.len()];
    for (e, el) in elems.iter().enumerate() {
        let host = match el.body {
            Body::Host { .. } => true,
            Body::Switch { .. } => false,
            _ => continue,
        };
        node_of[e] = Some(spec.nodes.len());
        spec.nodes.push(NodeSpec {
            name: el.name.clone(),
            host,
            line: el.line,
        });
    }

    // References: each `dst`/`src`/`queue` names an element of an allowed kind.
    let resolve = |e: &Element, attr: &str, target: &str, kinds: &[&str]| {
        let at = |m: String| err(file, Some(e.line), m);
        let &t = index.get(target).ok_or_else(|| {
            at(format!(
                "{} {}: {attr} {target} is not defined",
                e.kind(),
                e.name
            ))
        })?;
        let k = elems[t].kind();
        if kinds.contains(&k) {
            Ok(t)
        } else {
            Err(at(format!(
                "{} {}: {attr} {target} is a {k}; it must be a {}",
                e.kind(),
                e.name,
                kinds.join(" or ")
            )))
        }
    };
    let mut next: Vec<Option<usize>> = vec![None; elems.len()];
    let mut ports: Vec<Vec<usize>> = vec![Vec::new(); elems.len()];
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (e, el) in elems.iter().enumerate() {
        let named: Vec<&String> = match &el.body {
            Body::Host { queue } => queue.iter().collect(),
            Body::Switch { ports } => ports.iter().collect(),
            Body::Queue { dst, .. } => {
                if let Some(d) = dst {
                    next[e] = Some(resolve(el, "dst", d, &["pipe", "queue", "host"])?);
                }
                continue;
            }
            Body::Pipe { dst, src, .. } => {
                if let Some(s) = src {
                    resolve(el, "src", s, &["switch", "queue", "host"])?;
                }
                if let Some(d) = dst {
                    next[e] = Some(resolve(el, "dst", d, &["switch", "queue", "host"])?);
                }
                continue;
            }
        };
        for q in named {
            let t = resolve(el, "queue", q, &["queue"])?;
            if let Some(&o) = owner.get(&t) {
                return Err(err(
                    file,
                    Some(el.line),
                    format!(
                        "queue {q} is already a port of {} (line {})",
                        elems[o].name, elems[o].line
                    ),
                ));
            }
            owner.insert(t, e);
            ports[e].push(t);
        }
    }

    // Directions: follow each port queue to the next host or switch.
    let mut dirs: Vec<Direction> = Vec::new();
    for (e, el) in elems.iter().enumerate() {
        let Some(from) = node_of[e] else { continue };
        for &q in &ports[e] {
            let (qname, qline) = (&elems[q].name, elems[q].line);
            let (mut at, mut rate, mut delay, mut steps) = (q, u64::MAX, 0u64, 0usize);
            let size = match elems[q].body {
                Body::Queue { size, .. } => size,
                _ => 0,
            };
            let to = loop {
                match elems[at].body {
                    Body::Queue { rate_bps, .. } => rate = rate.min(rate_bps),
                    Body::Pipe { delay_ps, .. } => delay = delay.saturating_add(delay_ps),
                    Body::Host { .. } | Body::Switch { .. } => break node_of[at],
                }
                let Some(n) = next[at] else {
                    return Err(err(
                        file,
                        Some(elems[at].line),
                        format!(
                            "{} {} has no dst: the path from {} through queue {qname} ends there",
                            elems[at].kind(),
                            elems[at].name,
                            el.name
                        ),
                    ));
                };
                at = n;
                steps += 1;
                if steps > elems.len() {
                    return Err(err(
                        file,
                        Some(qline),
                        format!(
                            "the path from {} through queue {qname} loops and never reaches a host or switch",
                            el.name
                        ),
                    ));
                }
            };
            let Some(to) = to else { continue };
            if delay > crate::config::MAX_LINK_DELAY_PS {
                return Err(err(
                    file,
                    Some(qline),
                    format!(
                        "the path from {} through queue {qname} has {delay} ps of latency: at most 1 s (docs/ranges.md)",
                        el.name
                    ),
                ));
            }
            dirs.push(Direction {
                from,
                to,
                link: LinkSpec {
                    rate_bps: rate,
                    delay_ps: delay,
                },
                size,
                queue: q,
            });
        }
    }

    // Pair the two directions of each link.
    let name = |n: usize| &spec.nodes[n].name;
    let mut by_pair: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, d) in dirs.iter().enumerate() {
        let at = |m: String| err(file, Some(elems[d.queue].line), m);
        let qname = &elems[d.queue].name;
        if d.from == d.to {
            return Err(at(format!(
                "queue {qname} leads from {} back to itself",
                name(d.from)
            )));
        }
        if let Some(&first) = by_pair.get(&(d.from, d.to)) {
            let f = &elems[dirs[first].queue];
            return Err(at(format!(
                "queue {qname} is a second path from {} to {} (first queue {} on line {}): psim has one link per pair of nodes",
                name(d.from),
                name(d.to),
                f.name,
                f.line
            )));
        }
        by_pair.insert((d.from, d.to), i);
    }
    let mut paired = vec![false; dirs.len()];
    for (i, d) in dirs.iter().enumerate() {
        if paired[i] {
            continue;
        }
        let (q, qline) = (&elems[d.queue].name, elems[d.queue].line);
        let Some(&j) = by_pair.get(&(d.to, d.from)) else {
            return Err(err(
                file,
                Some(qline),
                format!(
                    "queue {q} leads from {} to {}, but no queue of {} leads back: a psim link is duplex",
                    name(d.from),
                    name(d.to),
                    name(d.to)
                ),
            ));
        };
        paired[i] = true;
        paired[j] = true;
        let back = &dirs[j];
        if back.link != d.link {
            return Err(err(
                file,
                Some(elems[back.queue].line),
                format!(
                    "{} to {} is {} bps and {} ps (queue {q}), the way back {} bps and {} ps (queue {}): a psim link has one rate and delay both ways",
                    name(d.from),
                    name(d.to),
                    d.link.rate_bps,
                    d.link.delay_ps,
                    back.link.rate_bps,
                    back.link.delay_ps,
                    elems[back.queue].name
                ),
            ));
        }
        spec.edges.push(EdgeSpec {
            a: d.from,
            b: d.to,
            link: d.link,
            weight_ab: WEIGHT_SCALE as u64,
            weight_ba: WEIGHT_SCALE as u64,
            queue_ab: Some(PortSize {
                limit: QueueLimit::Bytes(d.size),
                line: qline,
            }),
            queue_ba: Some(PortSize {
                limit: QueueLimit::Bytes(back.size),
                line: elems[back.queue].line,
            }),
            line: qline,
        });
    }
    // Last, so that a wrong count does not hide the line at fault.
    let hosts = spec.nodes.iter().filter(|n| n.host).count() as u64;
    let switches = spec.nodes.len() as u64 - hosts;
    for ((want, line), (got, what)) in counts.iter().zip([(hosts, "host"), (switches, "switch")]) {
        if *want != got {
            return Err(err(
                file,
                Some(*line),
                format!("the header says {want}, the file declares {got} {what} statements"),
            ));
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::super::{Graph, Topology};
    use super::*;

    fn parse(text: &str) -> Result<GraphSpec, String> {
        parse_htsim_topo(text, Path::new("t.topo")).map_err(|e| e.to_string())
    }

    /// Two hosts on one switch. h0's link: 10 Gb/s both ways, one pipe of
    /// 1 us with its reverse; port queues of 1000 (h0) and 2000 bytes (s0).
    /// h1's link: NIC 40 Gb/s then a 10 Gb/s shaper, so 10 Gb/s; 1500 ns each
    /// way; both port queues 3000 bytes.
    const SMALL: &str = "\
# hand-written
Hosts 2
Switches 1
Links 2

switch s0, queue s0_h0, queue s0_h1, pos 1 2
host h0, queue nic0
Host h1, queue nic1   # commands are case-insensitive
queue nic0, type composite, speed 10 Gbps, size 1000, dst p0, log sampling 10
pipe p0, latency 1 us, src h0, dst s0, reverse p0r
queue s0_h0, type queue, speed 10000 Mbps, size 2000, dst p0r
queue nic1, type fairscheduler, speed 40 Gbps, size 3000, dst shape1
queue shape1, type random, speed 10 gbps, size 64, dst p1
pipe p1, latency 1500 ns, dst s0
queue s0_h1, type composite, speed 10 Gbps, size 3000, dst p1r,
pipe p1r, latency 1.5 us, dst h1
";

    #[test]
    fn a_small_file_parses_to_the_expected_spec() {
        let node = |name: &str, host, line| NodeSpec {
            name: name.into(),
            host,
            line,
        };
        let want = GraphSpec {
            nodes: vec![
                node("s0", false, 6),
                node("h0", true, 7),
                node("h1", true, 8),
            ],
            edges: vec![
                EdgeSpec {
                    a: 0,
                    b: 1,
                    link: LinkSpec {
                        rate_bps: 10_000_000_000,
                        delay_ps: 1_000_000,
                    },
                    weight_ab: 1000,
                    weight_ba: 1000,
                    queue_ab: Some(PortSize {
                        limit: QueueLimit::Bytes(2000),
                        line: 11,
                    }),
                    queue_ba: Some(PortSize {
                        limit: QueueLimit::Bytes(1000),
                        line: 9,
                    }),
                    line: 11,
                },
                EdgeSpec {
                    a: 0,
                    b: 2,
                    link: LinkSpec {
                        rate_bps: 10_000_000_000,
                        delay_ps: 1_500_000,
                    },
                    weight_ab: 1000,
                    weight_ba: 1000,
                    queue_ab: Some(PortSize {
                        limit: QueueLimit::Bytes(3000),
                        line: 15,
                    }),
                    queue_ba: Some(PortSize {
                        limit: QueueLimit::Bytes(3000),
                        line: 12,
                    }),
                    line: 15,
                },
            ],
        };
        assert_eq!(parse(SMALL).unwrap(), want);
    }

    #[test]
    fn the_shipped_example_builds() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/topologies/htsim_2sw_4h.topo");
        let text = std::fs::read_to_string(&path).unwrap();
        let spec = parse_htsim_topo(&text, &path).unwrap();
        assert_eq!(spec.nodes.len(), 6);
        assert_eq!(spec.edges.len(), 5);
        let t = Topology::Graph(Box::new(Graph::new(&spec, &path).unwrap()));
        assert_eq!((t.hosts(), t.entities()), (4, 6));
        // h0 (host 0) to h3 (host 3): over the 40 Gb/s, 10 us switch link.
        let s0 = t.port(0, 0).peer;
        let up = (0..t.port_count(s0))
            .map(|p| t.port(s0, p))
            .find(|p| p.peer >= t.hosts())
            .unwrap();
        assert_eq!(
            up.link,
            LinkSpec {
                rate_bps: 40_000_000_000,
                delay_ps: 10_000_000
            }
        );
        assert_eq!(t.port(0, 0).link.rate_bps, 10_000_000_000);
    }

    #[test]
    fn a_scenario_reads_it_as_format_htsim() {
        // The path only places the scenario next to the shipped example.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/topologies/s.toml");
        let load = |extra: &str| {
            let text = format!(
                "[topology]\nkind = \"graph\"\nfile = \"htsim_2sw_4h.topo\"\nformat = \"htsim\"\n{extra}"
            );
            crate::config::Scenario::from_str(&text, &path, &[]).map(|s| s.topology)
        };
        let t = load("").unwrap();
        assert_eq!((t.hosts(), t.entities()), (4, 6));
        // A psim file read as htsim's: its first statement is not the header.
        let e = crate::config::Scenario::from_str(
            "[topology]\nkind = \"graph\"\nfile = \"timely_testbed.graph\"\nformat = \"htsim\"\n",
            &path,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with(
                "timely_testbed.graph:6: expected `Hosts <n>` (an htsim topology starts with \
                 Hosts, Switches and Links lines)"
            ),
            "{e}"
        );
        let e = load("link_gbps = 40").unwrap_err().to_string();
        assert!(
            e.contains("applies only to format = \"rocketfuel\"; htsim files give"),
            "{e}"
        );
    }

    #[test]
    fn bad_inputs_name_the_file_and_line() {
        // A valid base: one host, one switch.
        let base = |host: &str, extra: &str| {
            format!(
                "Hosts 1\nSwitches 1\nLinks 1\n{host}\nswitch s, queue sq\n\
                 queue hq, type queue, speed 10 Gbps, size 100, dst p\n\
                 queue sq, type queue, speed 10 Gbps, size 100, dst pr\n\
                 pipe p, latency 1 us, src h, dst s, reverse pr\n{extra}"
            )
        };
        assert!(parse(&base("host h, queue hq", "")).is_ok());
        let cases = [
            (
                "host h0\n".to_string(),
                "t.topo:1: expected `Hosts <n>`",
            ),
            (
                "Nodes 1024\nTiers 3\nPodsize 32\n".to_string(),
                "t.topo:1: this is htsim's FatTree settings file",
            ),
            ("Hosts 1\nSwitches x\n".into(), "t.topo:2: Switches \"x\": expected a whole number"),
            ("Hosts 1\nSwitches 1\n".into(), "t.topo: no `Links <n>` line"),
            (
                base("host h, queue hq", "host h2, queue hq2\n"),
                "t.topo:9: host h2: queue hq2 is not defined",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed 10 Gbps, size 1, dst nowhere\n"),
                "t.topo:9: queue q9: dst nowhere is not defined",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, size 1\n"),
                "t.topo:9: queue q9 has no speed",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed 10 Gbps\n"),
                "t.topo:9: queue q9 has no size",
            ),
            (
                base("host h, queue hq", "queue q9, speed 10 Gbps, size 1\n"),
                "t.topo:9: queue q9 has no type",
            ),
            (
                base("host h, queue hq", "pipe p9, dst s\n"),
                "t.topo:9: pipe p9 has no latency",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed ten Gbps, size 1\n"),
                "t.topo:9: speed \"ten\": expected a number",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed 10 Kbps, size 1\n"),
                "t.topo:9: speed unit \"Kbps\"",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed 0 Gbps, size 1\n"),
                "t.topo:9: rate \"0Gbps\": a link rate must be positive",
            ),
            (
                base("host h, queue hq", "queue q9, type queue, speed 1 Gbps, size -5\n"),
                "t.topo:9: size \"-5\": expected a positive whole number of bytes",
            ),
            (
                base("host h, queue hq", "queue q9, type red, speed 1 Gbps, size 5\n"),
                "t.topo:9: queue type \"red\"",
            ),
            (
                base("host h, queue hq", "pipe p9, latency 0 us\n"),
                "t.topo:9: latency 0 us: a pipe's latency must be positive",
            ),
            (
                base("host h, queue hq", "pipe p9, latency 1 min\n"),
                "t.topo:9: latency unit \"min\"",
            ),
            (
                base("host h, queue hq", "pipe p9, latency 1 us, latency 2 us\n"),
                "t.topo:9: `latency` given twice",
            ),
            (
                base("host h, queue hq", "pipe p9, latency 1 us, reverse p10\n"),
                "t.topo:9: pipe p9: `reverse p10` needs `src`",
            ),
            (
                base("host h, queue hq", "pipe p9, latency 1 us, colour red\n"),
                "t.topo:9: unknown pipe attribute \"colour\"",
            ),
            (
                base("host h, queue hq", "link a b\n"),
                "t.topo:9: unknown statement \"link\"",
            ),
            (
                base("host h, queue hq", "queue hq, type queue, speed 1 Gbps, size 5\n"),
                "t.topo:9: duplicate id hq (first the queue on line 6)",
            ),
            (
                base("host h queue hq", ""),
                "t.topo:4: expected `host h, <attribute> ...`",
            ),
            (
                base("host h, queue hq, queue sq", ""),
                "t.topo:4: a second queue sq (first hq): a host has one NIC",
            ),
            (base("host h", ""), "t.topo:7: queue sq leads from s to h, but no queue of h leads back"),
            (
                base("host h, queue hq", "queue q9, type queue, speed 1 Gbps, size 5, dst s\n"),
                "t.topo:9: queue q9: dst s is a switch; it must be a pipe or queue or host",
            ),
            (
                base("host h, queue hq", "host h2, queue sq\n"),
                "t.topo:9: queue sq is already a port of s (line 5)",
            ),
            (
                // s2's port queues feed each other.
                base(
                    "host h, queue hq",
                    "switch s2, queue s2q\nqueue s2q, type queue, speed 1 Gbps, size 5, dst s2q2\n\
                     queue s2q2, type queue, speed 1 Gbps, size 5, dst s2q\n",
                )
                .replace("Switches 1", "Switches 2"),
                "t.topo:10: the path from s2 through queue s2q loops",
            ),
            (
                base("host h, queue hq", "").replace("Hosts 1", "Hosts 2"),
                "t.topo:1: the header says 2, the file declares 1 host statements",
            ),
            (
                base("host h, queue hq", "").replace("dst pr\n", "dst pr2\n")
                    + "pipe pr2, latency 2 us, dst h\n",
                "t.topo:7: h to s is 10000000000 bps and 1000000 ps (queue hq), the way back 10000000000 bps and 2000000 ps (queue sq)",
            ),
            (
                base("host h, queue hq", "").replace("switch s, queue sq", "switch s, queue sq, queue sq2")
                    + "queue sq2, type queue, speed 10 Gbps, size 100, dst pr\n",
                "t.topo:9: queue sq2 is a second path from s to h (first queue sq on line 7)",
            ),
            (
                base("host h, queue hq", "").replace("switch s, queue sq", "switch s, queue sq, queue sq2")
                    + "queue sq2, type queue, speed 10 Gbps, size 100, dst p\n",
                "t.topo:9: queue sq2 leads from s back to itself",
            ),
            (
                base("host h, queue hq", "").replace("dst pr\n", "\n"),
                "t.topo:7: queue sq has no dst: the path from s through queue sq ends there",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}:\n got {e}\nwant {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn no_input_panics() {
        // Every prefix of the small file and every one-line deletion parses
        // or fails cleanly.
        for (i, _) in SMALL.char_indices() {
            let _ = parse(&SMALL[..i]);
        }
        let lines: Vec<&str> = SMALL.lines().collect();
        for skip in 0..lines.len() {
            let text: Vec<&str> = (0..lines.len())
                .filter(|&l| l != skip)
                .map(|l| lines[l])
                .collect();
            let _ = parse(&text.join("\n"));
        }
        for junk in [
            ",",
            ",,,",
            "host",
            "host ,",
            "pipe p, latency",
            "queue q, speed 1",
            "\u{0}",
            ", host h",
            "pipe p, reverse r, src",
        ] {
            let _ = parse(&format!("Hosts 0\nSwitches 0\nLinks 0\n{junk}\n"));
        }
    }
}
