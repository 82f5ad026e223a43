//! Naming the key behind a schema error that serde reports without one.
//!
//! Inside an internally tagged table (`[topology]` with its `kind`, a
//! port's `[switch.queue]`, a `[[traffic]]` entry with its `pattern`) serde
//! buffers the table before it picks the variant, so a type error there
//! loses its key and points at the table's header: `k = "four"` reads as
//! "line 2: invalid type: string "four", expected u32". The value serde
//! quotes is enough to find the key: the one value in the table that
//! prints as quoted is the culprit.

use toml::de::{DeTable, DeValue};

/// The path, below `v`, of the one value that serde's `message` quotes as
/// unexpected (`k`, `host_link.gbps`, `class[1].queue_bytes`); None when
/// the message quotes no value or several values match.
pub(crate) fn offending_key(v: &toml::Value, message: &str) -> Option<String> {
    let quoted = unexpected(message)?;
    let mut found = Vec::new();
    collect(v, String::new(), &quoted, &mut found);
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// What serde's message says was found: `string "four"`, `integer `-4``,
/// or the variant name of `unknown variant `x``.
fn unexpected(message: &str) -> Option<String> {
    for head in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(head) {
            return rest.split_once(", expected").map(|(u, _)| u.to_string());
        }
    }
    let rest = message.strip_prefix("unknown variant `")?;
    let (name, _) = rest.split_once('`')?;
    Some(format!("string {name:?}"))
}

/// How serde prints `v` as an unexpected value (`serde::de::Unexpected`).
fn shown(v: &toml::Value) -> Option<String> {
    Some(match v {
        toml::Value::String(s) => format!("string {s:?}"),
        toml::Value::Integer(i) => format!("integer `{i}`"),
        toml::Value::Boolean(b) => format!("boolean `{b}`"),
        toml::Value::Table(_) => "map".into(),
        toml::Value::Array(_) => "sequence".into(),
        toml::Value::Float(_) | toml::Value::Datetime(_) => return None,
    })
}

fn matches(v: &toml::Value, quoted: &str) -> bool {
    if let (toml::Value::Float(f), Some(x)) = (v, quoted.strip_prefix("floating point `")) {
        return x.trim_end_matches('`').parse::<f64>().ok() == Some(*f);
    }
    shown(v).as_deref() == Some(quoted)
}

fn collect(v: &toml::Value, path: String, quoted: &str, found: &mut Vec<String>) {
    if !path.is_empty() && matches(v, quoted) {
        found.push(path.clone());
    }
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                collect(v, p, quoted, found);
            }
        }
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                collect(v, format!("{path}[{i}]"), quoted, found);
            }
        }
        _ => {}
    }
}

/// The value at a dotted `path` with `[i]` indices (`topology.k`,
/// `switch.queue.class[1].queue_bytes`) in `doc`.
pub(crate) fn lookup<'a>(doc: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut table = doc;
    let segs = segments(path);
    let last = segs.len().checked_sub(1)?;
    for (n, (name, idx)) in segs.into_iter().enumerate() {
        let mut v = table.get(name)?;
        for i in idx {
            v = v.as_array()?.get(i)?;
        }
        if n == last {
            return Some(v);
        }
        table = v.as_table()?;
    }
    None
}

/// `table` joined with a path below it (`[1].x` or `x`).
pub(crate) fn join(table: &str, rel: &str) -> String {
    if rel.starts_with('[') {
        format!("{table}{rel}")
    } else {
        format!("{table}.{rel}")
    }
}

/// The full key behind a schema error whose position is the header of
/// `table` (as [`super::overrides::key_at`] names it), if the message
/// quotes a value that only one key below it holds.
pub(crate) fn key_in_table(doc: &toml::Table, table: &str, message: &str) -> Option<String> {
    offending_key(lookup(doc, table)?, message).map(|rel| join(table, &rel))
}

/// `a.b[1][2].c` as `[(a, []), (b, [1, 2]), (c, [])]`.
fn segments(path: &str) -> Vec<(&str, Vec<usize>)> {
    path.split('.')
        .map(|seg| {
            let (name, rest) = seg.split_once('[').unwrap_or((seg, ""));
            let idx = rest
                .split('[')
                .filter_map(|i| i.trim_end_matches(']').parse().ok())
                .collect();
            (name, idx)
        })
        .collect()
}

/// The byte offset in `text` of the value at `path`, for an error's line.
pub(crate) fn value_offset(text: &str, path: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let segs = segments(path);
    let last = segs.len().checked_sub(1)?;
    for (n, (name, idx)) in segs.into_iter().enumerate() {
        let (_, v) = table.iter().find(|(k, _)| k.get_ref() == name)?;
        let mut v = v;
        for i in idx {
            let DeValue::Array(a) = v.get_ref() else {
                return None;
            };
            v = a.get(i)?;
        }
        if n == last {
            return Some(v.span().start);
        }
        let DeValue::Table(t) = v.get_ref() else {
            return None;
        };
        table = t;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quoted_value_names_its_key() {
        let doc: toml::Table = toml::from_str(
            "[topology]\nkind = \"fattree\"\nk = \"four\"\n[topology.host_link]\ngbps = true\n\
             [[c]]\nq = 5\n[[c]]\nq = -4\n",
        )
        .unwrap();
        let at = |path: &str, msg: &str| offending_key(lookup(&doc, path).unwrap(), msg);
        let msg = "invalid type: string \"four\", expected u32";
        assert_eq!(at("topology", msg).as_deref(), Some("k"));
        let msg = "invalid type: boolean `true`, expected f64";
        assert_eq!(at("topology", msg).as_deref(), Some("host_link.gbps"));
        let msg = "invalid value: integer `-4`, expected u32";
        assert_eq!(at("c", msg).as_deref(), Some("[1].q"));
        assert_eq!(
            at("topology", "unknown variant `fattree`, expected x").as_deref(),
            Some("kind")
        );
        assert_eq!(at("topology", "missing field `k`"), None);
    }

    #[test]
    fn offsets_point_at_the_value() {
        let text =
            "seed = 1\n[topology]\nkind = \"fattree\"\nk = \"four\"\n[[a]]\nx = 1\n[[a]]\nx = 2\n";
        let at = |p: &str| value_offset(text, p).map(|o| &text[o..o + 1]);
        assert_eq!(at("topology.k"), Some("\""));
        assert_eq!(value_offset(text, "topology.k"), text.find("\"four\""));
        assert_eq!(value_offset(text, "a[1].x"), text.find("2\n"));
        assert_eq!(value_offset(text, "nope"), None);
    }
}
