//! `psim validate --backend slurm`: the targets as a SLURM job array (the
//! sweep machinery of [`crate::slurm`]), one array task per target.
//!
//! The submission records what it submitted in `OUT/array.json` (the scale
//! and the target IDs) and clears those targets' task folders. Array task
//! `I` runs target `I` of the table (table order, every target counted)
//! into its own folder, `OUT/tasks/ID/` (its own `quick.json` or
//! `full.json`), so that tasks running at once never write the same file.
//! Collecting (after `--wait`, or `psim validate --collect` later) merges
//! every task's target into `OUT/SCALE.json`, as a local pass writes it,
//! and names each submitted target that left no result: its task failed,
//! ran out of time, or never ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Results, Scale, Target};

/// The submission's record, in `--out`.
pub const INDEX_FILE: &str = "array.json";
/// The folder of the per-task results, in `--out`.
pub const TASKS_DIR: &str = "tasks";
/// The array script's copy, in `--out`.
pub const SCRIPT_FILE: &str = "validate.sbatch";

/// What one submission asked for.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ArrayIndex {
    /// The scale every task runs at.
    pub scale: Scale,
    /// The submitted targets, in table order.
    pub targets: Vec<String>,
}

impl ArrayIndex {
    /// `OUT/array.json`.
    pub fn path(out: &Path) -> PathBuf {
        out.join(INDEX_FILE)
    }

    /// Reads the record of the last submission into `out`.
    pub fn read(out: &Path) -> Result<ArrayIndex, String> {
        let p = Self::path(out);
        let b = std::fs::read(&p).map_err(|e| {
            format!(
                "cannot read {} ({e}): submit first with `psim validate --backend slurm --out {}`",
                p.display(),
                out.display()
            )
        })?;
        serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Records this submission and removes its targets' old task results,
    /// so that a task that fails this time cannot pass for one that ran.
    pub fn prepare(&self, out: &Path) -> Result<(), String> {
        for id in &self.targets {
            let d = task_dir(out, id);
            match std::fs::remove_dir_all(&d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot remove {}: {e}", d.display())),
            }
        }
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let text = serde_json::to_string_pretty(self).expect("the index serialises") + "\n";
        crate::sweep::write_atomic(&Self::path(out), text.as_bytes()).map_err(|e| e.to_string())
    }
}

/// The folder target `id`'s task writes its results to.
pub fn task_dir(out: &Path, id: &str) -> PathBuf {
    out.join(TASKS_DIR).join(id)
}

/// The array task ids of `selected`: each target's position in `all`.
pub fn task_ids(all: &[Target], selected: &[&Target]) -> Vec<usize> {
    all.iter()
        .enumerate()
        .filter(|(_, t)| selected.iter().any(|s| s.id == t.id))
        .map(|(i, _)| i)
        .collect()
}

/// What collecting found.
#[derive(Debug)]
pub struct Collected {
    /// The targets whose tasks left results (now merged into `OUT/SCALE.json`).
    pub results: Results,
    /// The submitted targets without results, each with why.
    pub missing: Vec<String>,
}

/// Merges every submitted target's task results into `OUT/SCALE.json` (over
/// what is there, as a local pass does) and lists the targets that left none.
pub fn collect(out: &Path) -> Result<Collected, String> {
    let index = ArrayIndex::read(out)?;
    let mut results = Results {
        scale: index.scale,
        psim_version: env!("CARGO_PKG_VERSION").into(),
        targets: BTreeMap::new(),
    };
    let mut missing = Vec::new();
    for id in &index.targets {
        let dir = task_dir(out, id);
        match Results::read(&dir, index.scale) {
            Ok(Some(mut r)) => match r.targets.remove(id) {
                Some(t) => {
                    results.targets.insert(id.clone(), t);
                }
                None => missing.push(format!("{id} (its results file does not hold it)")),
            },
            Ok(None) => missing.push(format!("{id} (no results)")),
            Err(e) => missing.push(format!("{id} ({e})")),
        }
    }
    if !results.targets.is_empty() {
        results.write_merged(out)?;
    }
    Ok(Collected { results, missing })
}

#[cfg(test)]
mod tests {
    use super::super::{CheckResult, TargetResult, Verdict};
    use super::*;

    fn one(id: &str, value: f64) -> Results {
        Results {
            scale: Scale::Quick,
            psim_version: "0".into(),
            targets: BTreeMap::from([(
                id.to_string(),
                TargetResult {
                    runs: vec![],
                    checks: vec![CheckResult {
                        key: format!("{id}.1"),
                        value: Some(value),
                        shown: format!("{value}"),
                        verdict: Verdict::Pass,
                    }],
                },
            )]),
        }
    }

    #[test]
    fn collect_merges_the_tasks_and_names_the_missing_one() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        // An earlier local pass left V1 and V9; V9 is resubmitted.
        let mut before = one("V1", 1.0);
        before.targets.extend(one("V9", 9.0).targets);
        before.write_merged(out).unwrap();
        // A stale task result of an earlier submission: removed by prepare.
        one("V3", 0.5).write_merged(&task_dir(out, "V3")).unwrap();
        let index = ArrayIndex {
            scale: Scale::Quick,
            targets: vec!["V2".into(), "V3".into(), "V9".into()],
        };
        index.prepare(out).unwrap();
        assert!(!task_dir(out, "V3").exists());
        assert_eq!(ArrayIndex::read(out).unwrap(), index);
        // Tasks V2 and V9 ran; V3 never did.
        one("V2", 2.0).write_merged(&task_dir(out, "V2")).unwrap();
        one("V9", 9.5).write_merged(&task_dir(out, "V9")).unwrap();
        let c = collect(out).unwrap();
        assert_eq!(c.missing, ["V3 (no results)"]);
        assert_eq!(c.results.targets.len(), 2);
        let merged = Results::read(out, Scale::Quick).unwrap().unwrap();
        let value = |id: &str| merged.targets[id].checks[0].value;
        assert_eq!(value("V1"), Some(1.0), "kept from the earlier pass");
        assert_eq!(value("V2"), Some(2.0));
        assert_eq!(value("V9"), Some(9.5), "replaced by the task's");
        assert!(!merged.targets.contains_key("V3"));
        // A damaged task file is named, not skipped.
        std::fs::create_dir_all(task_dir(out, "V3")).unwrap();
        std::fs::write(task_dir(out, "V3").join("quick.json"), "{").unwrap();
        let c = collect(out).unwrap();
        assert_eq!(c.missing.len(), 1);
        assert!(c.missing[0].starts_with("V3 ("), "{:?}", c.missing);
        assert!(c.missing[0].contains("quick.json"), "{:?}", c.missing);
    }

    #[test]
    fn collect_without_a_submission_says_how_to_submit() {
        let d = tempfile::tempdir().unwrap();
        let e = collect(d.path()).unwrap_err();
        assert!(
            e.contains(INDEX_FILE) && e.contains("--backend slurm"),
            "{e}"
        );
    }
}
