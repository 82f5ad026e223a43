//! Finding runs on disk, reading their manifests, and what the manifests'
//! `config` says: the parameters that differ between runs, the host count and
//! the host link rate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use psim::trace::{check_run, Manifest, FLOWS_DIR, MANIFEST_FILE};
use serde_json::Value;

use crate::error::{AnalysisError, Result};

/// One run directory, its manifest and its flows parts (validated lazily by
/// [`crate::flows`]).
#[derive(Clone, Debug)]
pub struct Run {
    /// The run directory, as found.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its flows parts: the manifest's `parts` that are flows parts (with
    /// `--allow-incomplete`: every readable `flows/part-*.parquet` on disk).
    pub parts: Vec<PathBuf>,
    /// What `--allow-incomplete` let through (empty for a run that checks).
    pub warnings: Vec<String>,
}

/// Expands the paths given by the user into run directories.
///
/// A path holding `manifest.json` is a run. Any other directory is searched
/// (recursively, sorted by name, not descending into runs) for run
/// directories: this is what a sweep folder looks like. A missing path, a
/// file, or a directory with no run anywhere inside is an error naming it.
pub fn discover_runs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut runs = Vec::new();
    for p in paths {
        if !p.exists() {
            return Err(AnalysisError::MissingPath { path: p.clone() });
        }
        if !p.is_dir() {
            return Err(AnalysisError::NotADirectory { path: p.clone() });
        }
        let before = runs.len();
        collect_runs(p, &mut runs)?;
        if runs.len() == before {
            return Err(AnalysisError::NotARun { path: p.clone() });
        }
    }
    Ok(runs)
}

fn collect_runs(dir: &Path, runs: &mut Vec<PathBuf>) -> Result<()> {
    if dir.join(MANIFEST_FILE).is_file() {
        runs.push(dir.to_path_buf());
        return Ok(());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| AnalysisError::io(dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    subdirs.sort();
    for s in subdirs {
        // A `flows/` folder without a manifest beside it is an incomplete
        // run's data, not a sweep; its parent is reported by the caller.
        if s.file_name().is_some_and(|n| n == FLOWS_DIR) {
            continue;
        }
        collect_runs(&s, runs)?;
    }
    Ok(())
}

/// Checks a run against its manifest (psim's `check_run`: the manifest is
/// there and says `complete`, every part it lists is on disk with its rows
/// and CRC-32, and no other part is) and lists its flows parts.
///
/// Any problem refuses the run with an error naming the part, unless
/// `allow_incomplete`: then each problem becomes a line of
/// [`Run::warnings`], and the flows parts on disk that pass
/// [`crate::flows::validate_part`] are read. A missing or unreadable
/// manifest is an error either way (the analysis needs its `config`).
pub fn load_run(dir: &Path, allow_incomplete: bool) -> Result<Run> {
    let check = check_run(dir);
    let Some(manifest) = check.manifest else {
        return Err(check
            .problems
            .into_iter()
            .next()
            .map(AnalysisError::Output)
            .unwrap_or(AnalysisError::NotARun {
                path: dir.to_path_buf(),
            }));
    };
    if !allow_incomplete {
        if let Some(p) = check.problems.into_iter().next() {
            return Err(AnalysisError::Output(p));
        }
        let parts = manifest
            .parts
            .iter()
            .filter(|p| p.path.starts_with(&format!("{FLOWS_DIR}/")))
            .map(|p| dir.join(&p.path))
            .collect::<Vec<_>>();
        if parts.is_empty() {
            return Err(AnalysisError::NoParts {
                path: dir.join(FLOWS_DIR),
            });
        }
        return Ok(Run {
            dir: dir.to_path_buf(),
            manifest,
            parts,
            warnings: Vec::new(),
        });
    }
    let mut warnings: Vec<String> = check.problems.iter().map(|p| p.to_string()).collect();
    let flows = dir.join(FLOWS_DIR);
    let mut on_disk: Vec<PathBuf> = std::fs::read_dir(&flows)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"))
                })
                .collect()
        })
        .unwrap_or_default();
    on_disk.sort();
    let mut parts = Vec::new();
    for p in on_disk {
        match crate::flows::validate_part(&p) {
            Ok(_) => parts.push(p),
            Err(e) => warnings.push(format!("skipped: {e}")),
        }
    }
    if parts.is_empty() {
        return Err(AnalysisError::NoParts { path: flows });
    }
    if !warnings.is_empty() {
        warnings.push(format!(
            "--allow-incomplete: {} read from {} flows part(s) as they are; its numbers may be partial or wrong",
            dir.display(),
            parts.len()
        ));
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        manifest,
        parts,
        warnings,
    })
}

/// Flattens a JSON value to dotted keys, the syntax of `psim run --set`:
/// objects by key (`topology.k`), arrays by index (`traffic.0.load`).
/// Leaves are rendered as compact JSON, except strings, which are unquoted;
/// `null` leaves are kept (as `null`) so that "unset" differs from a value.
pub fn flatten_config(v: &Value) -> BTreeMap<String, String> {
    fn go(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
        let key = |k: &str| {
            if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            }
        };
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    go(&key(k), x, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    go(&key(&i.to_string()), x, out);
                }
            }
            Value::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    go("", v, &mut out);
    out
}

/// The scenario parameters that differ between runs: the dotted keys (see
/// [`flatten_config`]) whose values are not the same in every config, sorted,
/// and for each run its values for them (an empty string where a run lacks
/// the key). With fewer than two runs nothing differs.
pub fn differing_params(configs: &[&Value]) -> (Vec<String>, Vec<Vec<String>>) {
    let flat: Vec<BTreeMap<String, String>> = configs.iter().map(|c| flatten_config(c)).collect();
    let all: BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    let keys: Vec<String> = all
        .into_iter()
        .filter(|k| {
            let first = flat.first().and_then(|m| m.get(*k));
            flat.iter().any(|m| m.get(*k) != first)
        })
        .cloned()
        .collect();
    let values = flat
        .iter()
        .map(|m| {
            keys.iter()
                .map(|k| m.get(k).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    (keys, values)
}

/// Host count and host link rate (Gb/s) from a manifest's resolved `config`.
///
/// * FatTree: `hosts = k^3/4 x oversubscription` (k pods x k/2 ToRs x
///   `oversubscription x k/2` hosts per ToR);
/// * leaf-spine: `hosts = leaves x hosts_per_leaf`;
/// * rate: `topology.host_link.gbps` if set, else `topology.link_gbps`
///   (psim's default, 10, where neither is present).
///
/// `None` when the config does not say (an unknown topology kind).
pub fn hosts_and_rate(config: &Value) -> Option<(u64, f64)> {
    let t = config.get("topology")?;
    let u = |k: &str| t.get(k).and_then(Value::as_u64);
    let hosts = match t.get("kind")?.as_str()? {
        "fattree" => {
            let k = u("k")?;
            let over = u("oversubscription").unwrap_or(1);
            k * k * k / 4 * over
        }
        "leafspine" => u("leaves")? * u("hosts_per_leaf")?,
        _ => return None,
    };
    let rate = t
        .get("host_link")
        .and_then(|h| h.get("gbps"))
        .and_then(Value::as_f64)
        .or_else(|| t.get("link_gbps").and_then(Value::as_f64))
        .unwrap_or(10.0);
    Some((hosts, rate))
}
