//! Sweep folders: `sweep.json` (written by `psim sweep`) lists every task,
//! so a task that failed, never ran or left a damaged run is reported with
//! its status instead of silently left out of the table.

use std::path::{Path, PathBuf};

use psim::trace::{OutputError, MANIFEST_FILE};
use serde_json::Value;

use crate::error::{AnalysisError, Result};
use crate::runs::{load_run, Run};

/// The sweep index inside a sweep folder (`psim::sweep::INDEX_FILE`).
pub const INDEX_FILE: &str = psim::sweep::INDEX_FILE;

/// A sweep task that could not be analysed.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskStatus {
    /// The task's directory (which may not exist).
    pub dir: PathBuf,
    /// Task id in `sweep.json` (the job-array index).
    pub id: u64,
    /// `missing` (no directory: never ran), `failed` (no manifest: the run
    /// stopped with an error, or is still running), `incomplete` (the
    /// manifest says `"complete": false`) or `damaged` (a part is missing,
    /// extra or disagrees with the manifest, or the manifest is unreadable).
    pub status: &'static str,
    /// The reason, on one line.
    pub detail: String,
    /// Its grid parameters and overrides (dotted key -> TOML text).
    pub params: Vec<(String, String)>,
}

impl TaskStatus {
    /// The warning line printed for it.
    pub fn warning(&self) -> String {
        format!(
            "sweep task {} ({}) is {}: {}",
            self.id,
            self.dir.display(),
            self.status,
            self.detail
        )
    }

    /// Its value for a dotted config key, if the sweep set that key.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim_matches('"'))
    }
}

/// Whether `dir` is a sweep folder: a `sweep.json` and no manifest.
pub fn is_sweep(dir: &Path) -> bool {
    dir.join(INDEX_FILE).is_file() && !dir.join(MANIFEST_FILE).is_file()
}

fn status_of(e: &AnalysisError) -> &'static str {
    match e {
        AnalysisError::Output(OutputError::MissingManifest { .. }) => "failed",
        AnalysisError::Output(OutputError::Incomplete { .. }) => "incomplete",
        _ => "damaged",
    }
}

/// Loads every task of the sweep folder `dir` in `sweep.json` order: the
/// runs that check (with `allow_incomplete`, those that have a manifest),
/// and the status of the others.
pub fn load_sweep(dir: &Path, allow_incomplete: bool) -> Result<(Vec<Run>, Vec<TaskStatus>)> {
    let index = dir.join(INDEX_FILE);
    let text = std::fs::read(&index).map_err(|e| AnalysisError::io(&index, e))?;
    let bad = |detail: String| AnalysisError::Invalid(format!("{}: {detail}", index.display()));
    let v: Value = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    let tasks = v
        .get("tasks")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `tasks` array".into()))?;
    let (mut runs, mut statuses) = (Vec::new(), Vec::new());
    for (i, t) in tasks.iter().enumerate() {
        let name = t
            .get("dir")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty() && !d.contains('/') && *d != "..")
            .ok_or_else(|| bad(format!("task {i} has no usable `dir`")))?;
        let task_dir = dir.join(name);
        let mut params = Vec::new();
        for field in ["params", "overrides"] {
            if let Some(m) = t.get(field).and_then(Value::as_object) {
                for (k, x) in m {
                    params.push((k.clone(), x.as_str().unwrap_or_default().to_string()));
                }
            }
        }
        let mut status = |status, detail| {
            statuses.push(TaskStatus {
                dir: task_dir.clone(),
                id: t.get("id").and_then(Value::as_u64).unwrap_or(i as u64),
                status,
                detail,
                params: params.clone(),
            })
        };
        if !task_dir.is_dir() {
            status("missing", "no task directory (the task never ran)".into());
            continue;
        }
        match load_run(&task_dir, allow_incomplete) {
            Ok(r) => runs.push(r),
            Err(e) => status(status_of(&e), e.to_string()),
        }
    }
    Ok((runs, statuses))
}
