//! `profile = "htsim"`: one scenario key that selects htsim's choices for
//! the models both simulators have, so that a user moving from htsim can
//! check psim against their own runs (issue 19). Defaults stay at the
//! papers' choices; a profile only fills keys the scenario leaves out, so
//! the scenario's own keys and `--set` overrides still win.
//!
//! | model | key | psim default (paper) | htsim | htsim source |
//! |---|---|---|---|---|
//! | NDP pull pacer | `protocol.ndp.pull_rate` | 1.0 (A9) | 0.99 | csg-htsim's NDP pacer, as measured side by side in issue 19 (item 2) |
//! | NDP pull pacer | `protocol.ndp.pull_counts_header` | false (A9) | true: payload + 64 B | same |
//! | NDP sender | `protocol.ndp.retx_other_path` | true ([P] §3.2) | false: the next path of the permutation | issue 19 (item 5) |
//! | NDP sender | `protocol.ndp.timeout_resends` | true ([P] §3.2) | false: return-to-sender only | `ndp.cpp`, `RESEND_ON_TIMEOUT` unset (spec A12) |
//! | NDP sender | `protocol.ndp.keep_early_pulls` | true: a PULL that overtook its NACK is kept for it | false: spent on nothing, and the NACKed packet waits for a PULL that never comes | `ndp.cpp`, `pull_packets` (a later revision of the authors' repository resends on a NACK whose pull number was already passed) |
//! | NDP receiver | `protocol.ndp.resend_last_pull` | true: a receiver that hears nothing of its unfinished flow for an RTO sends its last PULL again | false: a flow whose last PULL is lost never finishes | `ndp.cpp`: the sink has no timer ("lost pulls are well handled by the cumulative pull number"; its extra pulls, `RCV_CWND`, are off) |
//! | NDP receiver | `protocol.ndp.pull_on_duplicate` | false: a second copy of a data packet pulls nothing (a trimmed one is ACKed) | true: every arrival pulls, every header is NACKed | `ndp.cpp`, `NdpSink::receivePacket` ACKs (and so pulls for) a "bad retransmit" too |
//! | NDP switch (`kind = "ndp"`) | `wrr_headers` | 10 ([P] §3.1, A4) | 100000: practically strict priority | `compositequeue.cpp`, the constructor's high:low ratio |
//! | NDP switch (`kind = "ndp"`) | `count_in_service` | false: waiting packets only | true: the packet on the wire counts against its queue's cap | `compositequeue.cpp`: a packet's bytes leave the queue in `completeService` |
//! | NDP switch (`kind = "ndp"`) | `header_multiple` | 1.0: the data queue's bytes (A3) | 2.0 | `compositequeue.cpp`, `receivePacket`: headers fit under `2 * _maxsize` |
//! | DCTCP | `protocol.dctcp.cut_rule` | `"marked_window"` (RFC 8257) | `"every_window"` | `dctcp.cpp`, `receivePacket` |
//! | DCTCP | `protocol.dctcp.initial_alpha` | 1.0 (RFC 8257 §3.3) | 0.0 | `dctcp.cpp`, the constructor |
//! | DCTCP switch (`kind = "ecn"`) | `mark_at` | `"enqueue"` (RFC 8257 §3.1) | `"dequeue"` | `ecnqueue.cpp`, `completeService` |
//! | TCP | `protocol.tcp.initial_ssthresh_packets` | 0 = unlimited (RFC 5681) | 100 | issue 19 (item 8) |
//! | TCP (and DCTCP, MPTCP) | `protocol.tcp.handshake` | false | true: SYN, then data after the SYN/ACK | `tcp.cpp`: `startflow` leaves the source unestablished and `send_packets` sends a SYN first |
//!
//! Queue keys are filled in every queue table under `[switch]` that names its
//! `kind` (`switch.queue`, the per-tier `switch.<tier>.queue`, and each
//! `[[switch.queue.class]]`); a kind left to its default is not reached.
//!
//! htsim ends a flow when its last ACK reaches the sender: psim reports that
//! time in every profile, as the flows table's `sender_finish_ps` (the
//! receiver's `finish_ps` stays). (htsim's receiver sprays its control
//! packets over a shuffled path list; so does psim's,
//! `protocol.ndp.control_spray`.)

use super::error::{bad, ConfigError};

/// htsim's protocol keys: (section, key, value).
const HTSIM_PROTOCOL: &[(&str, &str, Value)] = &[
    ("ndp", "pull_rate", Value::Float(0.99)),
    ("ndp", "pull_counts_header", Value::Bool(true)),
    ("ndp", "retx_other_path", Value::Bool(false)),
    ("ndp", "timeout_resends", Value::Bool(false)),
    ("ndp", "keep_early_pulls", Value::Bool(false)),
    ("ndp", "resend_last_pull", Value::Bool(false)),
    ("ndp", "pull_on_duplicate", Value::Bool(true)),
    ("dctcp", "cut_rule", Value::Str("every_window")),
    ("dctcp", "initial_alpha", Value::Float(0.0)),
    ("tcp", "initial_ssthresh_packets", Value::Int(100)),
    ("tcp", "handshake", Value::Bool(true)),
];

/// htsim's queue keys by discipline kind: (kind, key, value).
const HTSIM_QUEUE: &[(&str, &str, Value)] = &[
    ("ndp", "wrr_headers", Value::Int(100_000)),
    ("ndp", "count_in_service", Value::Bool(true)),
    ("ndp", "header_multiple", Value::Float(2.0)),
    ("ecn", "mark_at", Value::Str("dequeue")),
];

/// A TOML value in a constant table.
#[derive(Copy, Clone, Debug)]
enum Value {
    Float(f64),
    Int(i64),
    Bool(bool),
    Str(&'static str),
}

impl Value {
    fn toml(self) -> toml::Value {
        match self {
            Value::Float(x) => toml::Value::Float(x),
            Value::Int(i) => toml::Value::Integer(i),
            Value::Bool(b) => toml::Value::Boolean(b),
            Value::Str(s) => toml::Value::String(s.into()),
        }
    }
}

/// Whether the scenario's table names a profile (it then needs [`apply`]).
pub fn named(table: &toml::Table) -> bool {
    table.contains_key("profile")
}

/// Removes the `profile` key from the scenario's table and fills the
/// profile's keys where the table leaves them out.
pub fn apply(table: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(value) = table.remove("profile") else {
        return Ok(());
    };
    match value.as_str() {
        Some("htsim") => {}
        Some("paper") => return Ok(()), // psim's defaults, named explicitly
        _ => {
            return Err(bad(
                "profile",
                value,
                "must be \"htsim\" or \"paper\" (the default)",
            ))
        }
    }
    for &(section, key, v) in HTSIM_PROTOCOL {
        let protocol = sub_table(table, "protocol")?;
        let section_table = sub_table(protocol, section)?;
        section_table.entry(key).or_insert_with(|| v.toml());
    }
    if let Some(toml::Value::Table(switch)) = table.get_mut("switch") {
        fill_queues(switch);
    }
    Ok(())
}

/// The table at `key` of `t`, created if absent.
fn sub_table<'a>(t: &'a mut toml::Table, key: &str) -> Result<&'a mut toml::Table, ConfigError> {
    let entry = t
        .entry(key)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(inner) => Ok(inner),
        other => Err(bad(key, other.clone(), "must be a table")),
    }
}

/// Fills the queue keys in every table below `[switch]` that names a kind.
fn fill_queues(t: &mut toml::Table) {
    if let Some(kind) = t
        .get("kind")
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
    {
        for &(k, key, v) in HTSIM_QUEUE {
            if k == kind {
                t.entry(key).or_insert_with(|| v.toml());
            }
        }
    }
    for (_, v) in t.iter_mut() {
        match v {
            toml::Value::Table(inner) => fill_queues(inner),
            toml::Value::Array(items) => {
                for item in items {
                    if let toml::Value::Table(inner) = item {
                        fill_queues(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn htsim_fills_only_what_the_scenario_leaves_out() {
        let mut t = table(
            r#"
            profile = "htsim"
            [protocol.ndp]
            pull_rate = 0.5
            [switch.queue]
            kind = "ndp"
            [switch.core.queue]
            kind = "ecn"
            [[switch.tor.queue.class]]
            kind = "ndp"
            wrr_headers = 7
            "#,
        );
        apply(&mut t).unwrap();
        assert!(!named(&t), "the key is consumed");
        let ndp = &t["protocol"]["ndp"];
        assert_eq!(ndp["pull_rate"].as_float(), Some(0.5), "the scenario wins");
        assert_eq!(ndp["pull_counts_header"].as_bool(), Some(true));
        assert_eq!(ndp["timeout_resends"].as_bool(), Some(false));
        assert_eq!(ndp["keep_early_pulls"].as_bool(), Some(false));
        assert_eq!(ndp["resend_last_pull"].as_bool(), Some(false));
        assert_eq!(ndp["pull_on_duplicate"].as_bool(), Some(true));
        assert_eq!(
            t["protocol"]["dctcp"]["cut_rule"].as_str(),
            Some("every_window")
        );
        assert_eq!(
            t["protocol"]["tcp"]["initial_ssthresh_packets"].as_integer(),
            Some(100)
        );
        assert_eq!(
            t["switch"]["queue"]["wrr_headers"].as_integer(),
            Some(100_000)
        );
        assert_eq!(
            t["switch"]["queue"]["count_in_service"].as_bool(),
            Some(true)
        );
        assert_eq!(
            t["switch"]["queue"]["header_multiple"].as_float(),
            Some(2.0)
        );
        assert_eq!(
            t["switch"]["core"]["queue"]["mark_at"].as_str(),
            Some("dequeue")
        );
        assert!(t["switch"]["core"]["queue"].get("wrr_headers").is_none());
        let class = &t["switch"]["tor"]["queue"]["class"][0];
        assert_eq!(
            class["wrr_headers"].as_integer(),
            Some(7),
            "the scenario wins"
        );
    }

    /// Through the scenario loader: the profile reaches the models, a
    /// `--set` still wins over it, and a file without it keeps the papers' defaults.
    #[test]
    fn the_loader_applies_the_profile_under_the_overrides() {
        use crate::config::Scenario;
        use crate::transport::cc::dctcp::CutRule;
        let text = "profile = \"htsim\"\n[topology]\nkind = \"fattree\"\nk = 4\n";
        let path = std::path::Path::new("p.toml");
        let sets = ["protocol.ndp.pull_rate=0.5".to_string()];
        let s = Scenario::from_str(text, path, &sets).unwrap();
        assert_eq!(s.protocols.ndp.pull_rate, 0.5);
        assert!(s.protocols.ndp.pull_counts_header);
        assert_eq!(s.protocols.dctcp.cut_rule, CutRule::EveryWindow);
        assert_eq!(s.protocols.tcp.initial_ssthresh_packets, 100);
        assert!(s.protocols.tcp.handshake);
        let plain = text.replace("profile = \"htsim\"\n", "");
        let s = Scenario::from_str(&plain, path, &[]).unwrap();
        assert_eq!(s.protocols.ndp.pull_rate, 1.0);
        assert_eq!(s.protocols.dctcp.cut_rule, CutRule::MarkedWindow);
        assert!(!s.protocols.tcp.handshake);
    }

    #[test]
    fn paper_and_no_profile_change_nothing_and_an_unknown_one_names_the_key() {
        for text in ["profile = \"paper\"", ""] {
            let mut t = table(text);
            apply(&mut t).unwrap();
            assert!(t.is_empty());
        }
        let e = apply(&mut table("profile = \"ns3\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("profile") && e.contains("htsim"), "{e}");
    }
}
