//! htsim connection-matrix (`.cm`) files: reading, and writing them back.
//!
//! The grammar follows htsim's `ConnectionMatrix::load`:
//!
//! ```text
//! Nodes 16
//! Connections 3
//! Triggers 1
//! 0->1 id 1 start 0 size 90000 send_done_trigger 1
//! 2->3 id 2 start 0 size 90000 recv_done_trigger 1
//! 1->2 id 3 trigger 1 size 90000 prio 1
//! trigger id 1 barrier count 2
//! ```
//!
//! A flow line needs a size and exactly one of `start` and `trigger`. A trigger is `oneshot` (all
//! its flows start on the first activation), `multishot` (each activation starts the next of its
//! flows, in file order) or `barrier count N` (all start on the N-th activation). A flow
//! activates its `send_done_trigger` and `recv_done_trigger` when it finishes; psim only knows
//! when a flow's last byte arrived, so both fire at that moment.
//!
//! The unit of `start` changed between htsim versions (µs in older files, ps now), so the reader
//! takes it as an argument instead of guessing. `size 0` stands for a long-lived flow.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::WorkloadError;
use crate::spec::TimeUnit;
use crate::FlowSpec;

/// One connection of a `.cm` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmFlow {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// The file's flow id (non-zero, unique in the file).
    pub cm_id: u64,
    /// Start time in ps, or `None` for a flow started by `trigger`.
    pub start_ps: Option<u64>,
    /// Bytes; `None` = long-lived (`size 0` in the file).
    pub size_bytes: Option<u64>,
    /// `prio` value, if given (0..=255).
    pub prio: Option<u8>,
    /// Trigger that starts this flow.
    pub trigger: Option<u64>,
    /// Trigger activated when the flow finishes (sender side in htsim).
    pub send_done_trigger: Option<u64>,
    /// Trigger activated when the flow finishes (receiver side in htsim).
    pub recv_done_trigger: Option<u64>,
}

/// Kinds of htsim trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerKind {
    /// Starts all its flows on the first activation; later activations do nothing.
    Oneshot,
    /// Each activation starts the next of its flows, in file order.
    Multishot,
    /// Starts all its flows on the `count`-th activation.
    Barrier {
        /// Activations needed.
        count: u32,
    },
}

/// One trigger line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmTrigger {
    /// The file's trigger id (non-zero).
    pub id: u64,
    /// What an activation does.
    pub kind: TriggerKind,
}

/// A parsed `.cm` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmFile {
    /// `Nodes` header.
    pub nodes: u32,
    /// Connections in file order.
    pub flows: Vec<CmFlow>,
    /// Triggers in file order.
    pub triggers: Vec<CmTrigger>,
}

fn parse_num<T: std::str::FromStr>(
    tok: Option<&&str>,
    what: &str,
    file: &Path,
    line: usize,
) -> Result<T, WorkloadError> {
    let err = |reason: String| WorkloadError::CmParse {
        file: file.to_path_buf(),
        line,
        reason,
    };
    let t = tok.ok_or_else(|| err(format!("`{what}` needs a value")))?;
    t.parse()
        .map_err(|_| err(format!("`{what}` value `{t}` is not a valid number")))
}

/// Converts a start value in `unit` to ps. Accepts integers exactly and decimals rounded to the
/// nearest ps (htsim itself reads starts as floating point).
fn start_to_ps(tok: &str, unit: TimeUnit) -> Option<u64> {
    if let Ok(v) = tok.parse::<u64>() {
        return v.checked_mul(unit.ps());
    }
    let v: f64 = tok.parse().ok()?;
    let ps = v * unit.ps() as f64;
    (ps.is_finite() && ps >= 0.0 && ps < u64::MAX as f64).then(|| ps.round() as u64)
}

/// Writes a ps time in `unit` exactly (a decimal fraction when the unit is coarser than ps).
fn ps_to_start(ps: u64, unit: TimeUnit) -> String {
    let per = unit.ps();
    let whole = ps / per;
    let frac = ps % per;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = per.ilog10() as usize;
    let s = format!("{whole}.{frac:0digits$}");
    s.trim_end_matches('0').to_string()
}

impl CmFile {
    /// Parses `.cm` text. `file` names the source in errors; start values are in `unit`.
    pub fn parse(text: &str, file: &Path, unit: TimeUnit) -> Result<CmFile, WorkloadError> {
        let mut nodes = None;
        let mut conns_hdr = None;
        let mut trig_hdr = None;
        let mut flows = Vec::new();
        let mut triggers: Vec<CmTrigger> = Vec::new();
        let mut flow_line: BTreeMap<u64, usize> = BTreeMap::new();
        let mut trig_line: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |reason: String| WorkloadError::CmParse {
                file: file.to_path_buf(),
                line,
                reason,
            };
            let toks: Vec<&str> = raw.split_whitespace().collect();
            let Some(&first) = toks.first() else { continue };
            if first.starts_with('#') {
                continue;
            }
            match first {
                "Nodes" => nodes = Some(parse_num::<u32>(toks.get(1), "Nodes", file, line)?),
                "Connections" => {
                    conns_hdr = Some(parse_num::<u64>(toks.get(1), "Connections", file, line)?)
                }
                "Triggers" => {
                    trig_hdr = Some(parse_num::<u64>(toks.get(1), "Triggers", file, line)?)
                }
                "Failures" | "failure" => {
                    return Err(err(
                        "failure lines are not supported: psim configures link failures in the topology"
                            .into(),
                    ))
                }
                "trigger" => {
                    let mut id = None;
                    let mut kind = None;
                    let mut count = None;
                    let mut k = 1;
                    while k < toks.len() {
                        match toks[k] {
                            "id" => {
                                id = Some(parse_num::<u64>(toks.get(k + 1), "id", file, line)?);
                                k += 1;
                            }
                            "count" => {
                                count =
                                    Some(parse_num::<u32>(toks.get(k + 1), "count", file, line)?);
                                k += 1;
                            }
                            t @ ("oneshot" | "multishot" | "barrier") => {
                                if kind.is_some() {
                                    return Err(err("trigger has more than one type".into()));
                                }
                                kind = Some(t);
                            }
                            t => return Err(err(format!("unknown trigger token `{t}`"))),
                        }
                        k += 1;
                    }
                    let id = id.ok_or_else(|| err("trigger has no id".into()))?;
                    if id == 0 {
                        return Err(err("trigger id 0 is not allowed".into()));
                    }
                    let kind = match (kind, count) {
                        (Some("oneshot"), None) => TriggerKind::Oneshot,
                        (Some("multishot"), None) => TriggerKind::Multishot,
                        (Some("barrier"), Some(c)) if c > 0 => TriggerKind::Barrier { count: c },
                        (Some("barrier"), _) => {
                            return Err(err("barrier trigger needs `count N` with N > 0".into()))
                        }
                        (Some(_), Some(_)) => {
                            return Err(err("`count` is only valid for barrier triggers".into()))
                        }
                        _ => return Err(err("trigger has no type (oneshot, multishot, barrier)".into())),
                    };
                    if let Some(prev) = trig_line.insert(id, line) {
                        return Err(err(format!("trigger id {id} already defined on line {prev}")));
                    }
                    triggers.push(CmTrigger { id, kind });
                }
                t if t.contains("->") => {
                    let (s, d) = t.split_once("->").unwrap_or((t, ""));
                    let src: u32 = s
                        .parse()
                        .map_err(|_| err(format!("source `{s}` in `{t}` is not a host number")))?;
                    let dst: u32 = d.parse().map_err(|_| {
                        err(format!("destination `{d}` in `{t}` is not a host number"))
                    })?;
                    let mut f = CmFlow {
                        src,
                        dst,
                        cm_id: 0,
                        start_ps: None,
                        size_bytes: None,
                        prio: None,
                        trigger: None,
                        send_done_trigger: None,
                        recv_done_trigger: None,
                    };
                    let mut size = None;
                    let mut k = 1;
                    while k < toks.len() {
                        let key = toks[k];
                        let val = toks.get(k + 1);
                        match key {
                            "start" => {
                                let v = val.ok_or_else(|| err("`start` needs a value".into()))?;
                                f.start_ps = Some(start_to_ps(v, unit).ok_or_else(|| {
                                    err(format!("`start` value `{v}` is not a valid time"))
                                })?);
                            }
                            "size" => size = Some(parse_num::<u64>(val, "size", file, line)?),
                            "id" => f.cm_id = parse_num(val, "id", file, line)?,
                            "prio" => {
                                f.prio = Some(parse_num::<u8>(val, "prio (0..=255)", file, line)?)
                            }
                            "trigger" => f.trigger = Some(parse_num(val, "trigger", file, line)?),
                            "send_done_trigger" => {
                                f.send_done_trigger =
                                    Some(parse_num(val, "send_done_trigger", file, line)?)
                            }
                            "recv_done_trigger" => {
                                f.recv_done_trigger =
                                    Some(parse_num(val, "recv_done_trigger", file, line)?)
                            }
                            other => return Err(err(format!("unknown token `{other}`"))),
                        }
                        k += 2;
                    }
                    if f.cm_id == 0 {
                        return Err(err("flow needs a non-zero `id`".into()));
                    }
                    let size = size.ok_or_else(|| err("flow has no `size`".into()))?;
                    f.size_bytes = (size > 0).then_some(size);
                    match (f.start_ps, f.trigger) {
                        (None, None) => {
                            return Err(err("flow has neither `start` nor `trigger`".into()))
                        }
                        (Some(_), Some(_)) => {
                            return Err(err("flow has both `start` and `trigger`".into()))
                        }
                        _ => {}
                    }
                    if src == dst {
                        return Err(err(format!("flow from host {src} to itself")));
                    }
                    if let Some(prev) = flow_line.insert(f.cm_id, line) {
                        return Err(err(format!("flow id {} already used on line {prev}", f.cm_id)));
                    }
                    flows.push(f);
                }
                other => return Err(err(format!("unknown line start `{other}`"))),
            }
        }
        let incons = |reason: String| WorkloadError::CmInconsistent {
            file: file.to_path_buf(),
            reason,
        };
        let nodes = nodes.ok_or_else(|| incons("missing `Nodes N` header".into()))?;
        let conns = conns_hdr.ok_or_else(|| incons("missing `Connections N` header".into()))?;
        if conns != flows.len() as u64 {
            return Err(incons(format!(
                "header says Connections {conns}, file has {} flow lines",
                flows.len()
            )));
        }
        if trig_hdr.unwrap_or(0) != triggers.len() as u64 {
            return Err(incons(format!(
                "header says Triggers {}, file has {} trigger lines",
                trig_hdr.unwrap_or(0),
                triggers.len()
            )));
        }
        for f in &flows {
            let line = flow_line[&f.cm_id];
            if f.src >= nodes || f.dst >= nodes {
                return Err(WorkloadError::CmParse {
                    file: file.to_path_buf(),
                    line,
                    reason: format!("host out of range: file has Nodes {nodes}"),
                });
            }
            for t in [f.trigger, f.send_done_trigger, f.recv_done_trigger]
                .into_iter()
                .flatten()
            {
                if !trig_line.contains_key(&t) {
                    return Err(WorkloadError::CmParse {
                        file: file.to_path_buf(),
                        line,
                        reason: format!("trigger {t} is referenced but never defined"),
                    });
                }
            }
        }
        Ok(CmFile {
            nodes,
            flows,
            triggers,
        })
    }

    /// Writes the file back in `.cm` syntax with start values in `unit`. Parsing the result with
    /// the same unit gives an equal [`CmFile`] (as long as every start is a whole number of
    /// `unit`s or the unit is at most 10^6 ps, which `ps`, `ns` and `us` are).
    pub fn to_cm(&self, unit: TimeUnit) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Nodes {}", self.nodes);
        let _ = writeln!(s, "Connections {}", self.flows.len());
        if !self.triggers.is_empty() {
            let _ = writeln!(s, "Triggers {}", self.triggers.len());
        }
        for f in &self.flows {
            let _ = write!(s, "{}->{} id {}", f.src, f.dst, f.cm_id);
            if let Some(t) = f.start_ps {
                let _ = write!(s, " start {}", ps_to_start(t, unit));
            }
            if let Some(t) = f.trigger {
                let _ = write!(s, " trigger {t}");
            }
            let _ = write!(s, " size {}", f.size_bytes.unwrap_or(0));
            if let Some(p) = f.prio {
                let _ = write!(s, " prio {p}");
            }
            if let Some(t) = f.send_done_trigger {
                let _ = write!(s, " send_done_trigger {t}");
            }
            if let Some(t) = f.recv_done_trigger {
                let _ = write!(s, " recv_done_trigger {t}");
            }
            s.push('\n');
        }
        for t in &self.triggers {
            let _ = match t.kind {
                TriggerKind::Oneshot => writeln!(s, "trigger id {} oneshot", t.id),
                TriggerKind::Multishot => writeln!(s, "trigger id {} multishot", t.id),
                TriggerKind::Barrier { count } => {
                    writeln!(s, "trigger id {} barrier count {count}", t.id)
                }
            };
        }
        s
    }
}

/// Re-expresses a flat flow list as a `.cm` file with `Nodes nodes`: one line per flow in the
/// given order, ids 1, 2, ... in that order, no triggers. `prio` is written only when non-zero.
pub fn to_cm(flows: &[FlowSpec], nodes: u32, unit: TimeUnit) -> String {
    let file = CmFile {
        nodes,
        flows: flows
            .iter()
            .enumerate()
            .map(|(i, f)| CmFlow {
                src: f.src,
                dst: f.dst,
                cm_id: i as u64 + 1,
                start_ps: Some(f.start_ps),
                size_bytes: f.size_bytes,
                prio: (f.priority != 0).then_some(f.priority),
                trigger: None,
                send_done_trigger: None,
                recv_done_trigger: None,
            })
            .collect(),
        triggers: Vec::new(),
    };
    file.to_cm(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<CmFile, WorkloadError> {
        CmFile::parse(text, Path::new("t.cm"), TimeUnit::Ps)
    }

    #[test]
    fn exact_time_text_round_trip() {
        assert_eq!(ps_to_start(1_500_000, TimeUnit::Us), "1.5");
        assert_eq!(ps_to_start(7, TimeUnit::Us), "0.000007");
        assert_eq!(ps_to_start(3_000_000, TimeUnit::Us), "3");
        assert_eq!(start_to_ps("1.5", TimeUnit::Us), Some(1_500_000));
        assert_eq!(start_to_ps("0.000007", TimeUnit::Us), Some(7));
        assert_eq!(start_to_ps("12", TimeUnit::Ps), Some(12));
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let cases = [
            ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size x\n", 3),
            ("Nodes 4\nConnections 1\n\n0-1 id 1 start 0 size 5\n", 4),
            ("Nodes 4\nConnections 1\n0->1 id 1 size 5\n", 3),
            ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 colour red\n", 3),
            ("Nodes 4\nConnections 1\n0->1 id 0 start 0 size 5\n", 3),
            ("Nodes 4\nConnections 1\n0->1 id 1 start 0 trigger 1 size 5\ntrigger id 1 oneshot\n", 3),
            ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5\ntrigger id 1\n", 4),
            ("Nodes 4\nConnections 1\n0->9 id 1 start 0 size 5\n", 3),
            ("Nodes 4\nConnections 1\n0->1 id 1 trigger 7 size 5\n", 3),
        ];
        for (text, line) in cases {
            match p(text) {
                Err(WorkloadError::CmParse { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: expected a parse error, got {other:?}"),
            }
        }
        let e = p("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n").unwrap_err();
        assert!(matches!(e, WorkloadError::CmInconsistent { .. }), "{e}");
        assert!(e.to_string().contains("Connections 2"), "{e}");
    }
}
