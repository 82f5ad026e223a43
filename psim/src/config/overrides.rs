//! `--set key=value` overrides of a scenario's TOML table, and error positions.

use super::error::ConfigError;

/// 1-based line and column of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// The dotted key of the TOML line at `offset` in `text`: the nearest table
/// header above it (`[a.b]` or `[[a]]`) joined with the line's own key, so that
/// a schema error in a re-serialised document still names the user's key.
pub(crate) fn key_at(text: &str, offset: usize) -> Option<String> {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    let header = |l: &str| {
        let l = l.trim();
        (l.starts_with('[') && l.ends_with(']'))
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    };
    if let Some(h) = header(line) {
        return Some(h);
    }
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string());
    let table = text[..start].lines().rev().find_map(header);
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (t, None) => t,
    }
}

/// Applies `a.b.0.c=value`: the value is parsed as TOML (number, boolean,
/// string, array), falling back to a bare string.
pub(crate) fn apply_set(table: &mut toml::Table, arg: &str) -> Result<(), ConfigError> {
    let mut root = toml::Value::Table(std::mem::take(table));
    let result = set_path(&mut root, arg);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_path(root: &mut toml::Value, arg: &str) -> Result<(), ConfigError> {
    let err = |m: &str| ConfigError::Set {
        arg: arg.into(),
        message: m.into(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected key=value"))?;
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").ok_or_else(|| err("no value"))?,
        Err(_) => toml::Value::String(value.to_string()),
    };
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err("empty key segment"));
    }
    let (last, walk) = parts.split_last().expect("split yields at least one part");
    let mut cur = root;
    for part in walk {
        cur = match cur {
            toml::Value::Table(t) => t
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new())),
            toml::Value::Array(a) => {
                let len = a.len();
                let idx: usize = part
                    .parse()
                    .map_err(|_| err(&format!("`{part}` is not an array index")))?;
                a.get_mut(idx)
                    .ok_or_else(|| err(&format!("index {idx} out of range (length {len})")))?
            }
            _ => {
                return Err(err(&format!(
                    "`{part}` is inside a value that is not a table"
                )))
            }
        };
    }
    match cur {
        toml::Value::Table(t) => {
            t.insert(last.to_string(), value);
        }
        toml::Value::Array(a) => {
            let len = a.len();
            let idx: usize = last
                .parse()
                .map_err(|_| err(&format!("`{last}` is not an array index")))?;
            *a.get_mut(idx)
                .ok_or_else(|| err(&format!("index {idx} out of range (length {len})")))? = value;
        }
        _ => {
            return Err(err(&format!(
                "`{last}` is inside a value that is not a table"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod key_tests {
    use super::key_at;

    #[test]
    fn key_at_joins_the_header_above_with_the_line_key() {
        let text = "seed = 1\n\n[protocol.rc3]\nlevels = 3\nbucket_rule = \"bogus\"\n\n[[traffic]]\npattern = \"x\"\n";
        let at = |needle: &str| key_at(text, text.find(needle).unwrap());
        assert_eq!(at("1\n").as_deref(), Some("seed"));
        assert_eq!(at("\"bogus\"").as_deref(), Some("protocol.rc3.bucket_rule"));
        assert_eq!(at("[protocol").as_deref(), Some("protocol.rc3"));
        assert_eq!(at("\"x\"").as_deref(), Some("traffic.pattern"));
    }
}
