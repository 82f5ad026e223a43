//! Parameter sweeps: a grid of `--set` overrides over one base scenario,
//! expanded into tasks that run locally or as a SLURM job array.
//!
//! A sweep file is TOML:
//!
//! ```toml
//! base = "../scenarios/small/ndp_incast_k4.toml"   # relative to this file
//! out = "../out/incast_sweep"                       # the sweep folder, relative to this file
//! [local]
//! jobs = 2                                          # tasks at once without SLURM
//! [slurm]
//! partition = "compute"
//! time = "00:10:00"
//! [grid]                                            # dotted scenario key -> values
//! "traffic.0.senders" = [4, 8]
//! "protocol.ndp.iw_packets" = [4, 23]
//! seed = [1, 2]
//! ```
//!
//! An axis may also bundle settings that must change together, such as a
//! protocol and the switch queue it needs: its values are then tables, each
//! with a `name` (what the directory is called by) and the overrides it
//! applies:
//!
//! ```toml
//! [grid]
//! stack = [
//!     { name = "ndp", "traffic.0.protocol" = "ndp", "switch.queue.kind" = "ndp" },
//!     { name = "dctcp", "traffic.0.protocol" = "dctcp", "switch.queue.kind" = "ecn" },
//! ]
//! ```
//!
//! Every combination of grid values is one task. A task is `psim run` of the
//! base scenario with the task's values as `--set` overrides, into its own
//! directory named by those values (`protocol.ndp.iw_packets=4,seed=1,stack=ndp,...`),
//! so that a task's directory does not depend on the other axes' lengths and
//! a grown grid still finds the tasks already done. A task whose directory
//! holds a complete manifest, every data file it lists, and the task's own
//! resolved scenario is skipped; any other directory (a partial run, or a run
//! of a base scenario that has since changed) is redone (`psim run --force`),
//! except that a directory holding a checkpoint (the sweep file's
//! `checkpoint_every`) resumes from it (`psim resume`).
//!
//! Everything that can be checked before running is: the sweep file's
//! schema, empty axes, and every task's scenario (each key must exist in the
//! scenario schema and each combination must validate), so a typo is one
//! error line before anything runs or is submitted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::Scenario;
use crate::trace::outdir::TMP_SUFFIX;

mod child;
use crate::slurm::ArrayJob;
pub use crate::slurm::{array_spec, shell_quote, SlurmSettings, ARRAY_TEMPLATE};
pub use child::{ChildOptions, TaskOutcome};

/// File name of the sweep's task index inside the sweep folder.
pub const INDEX_FILE: &str = "sweep.json";
/// File name of the job-array script written into the sweep folder.
pub const SCRIPT_FILE: &str = "sweep.sbatch";
/// Per-task log (the `psim run` child's stdout and stderr), inside the task directory.
pub const TASK_LOG: &str = "psim.log";

/// Longest task directory name accepted: file systems limit a name to 255
/// bytes, and a clear error beats a failure halfway through a sweep.
const MAX_DIR_NAME: usize = 200;

/// A sweep error: one line naming the sweep file, key or task at fault.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file cannot be read.
    #[error("cannot read sweep file {path}: {source}")]
    Read {
        /// The sweep file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The sweep file is not valid TOML or does not match the schema.
    #[error("{path}: {message}")]
    Parse {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong, with its line when known.
        message: String,
    },
    /// A grid key or combination that the base scenario rejects, or any other
    /// invalid sweep content.
    #[error("{path}: {message}")]
    Invalid {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong and where.
        message: String,
    },
    /// Reading or writing the sweep folder failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SweepError + '_ {
    move |source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The sweep file as written.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// Base scenario, relative to the sweep file.
    pub base: PathBuf,
    /// Sweep folder, relative to the sweep file.
    pub out: PathBuf,
    /// Dotted scenario key -> the values it takes.
    #[serde(default)]
    pub grid: BTreeMap<String, toml::Value>,
    /// Settings for running without SLURM.
    #[serde(default)]
    pub local: LocalSettings,
    /// Settings for a SLURM job array.
    #[serde(default)]
    pub slurm: SlurmSettings,
    /// Wall time between checkpoints of each task (`"30m"`, `"90s"`; none by
    /// default). A task stopped part-way resumes from its checkpoint the next
    /// time the sweep runs it, instead of starting again (docs/checkpoint.md).
    pub checkpoint_every: Option<String>,
}

/// `[local]`: running the tasks on this machine.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct LocalSettings {
    /// Tasks run at once (default: the number of cores).
    pub jobs: Option<usize>,
    /// Worker threads per task (default: cores / jobs, at least 1).
    pub threads: Option<u32>,
}

/// One point of the grid.
/// Fields in sorted order, the order of their keys in `sweep.json`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Task {
    /// Its directory name inside the sweep folder.
    pub dir: String,
    /// Index in the expansion order (the job-array index).
    pub id: usize,
    /// Scenario key -> value (TOML text): the `--set` overrides, with
    /// bundles expanded.
    pub overrides: BTreeMap<String, String>,
    /// Grid axis -> this task's value, as TOML text (a bundle's `name`).
    pub params: BTreeMap<String, String>,
    /// A digest of the resolved scenario its manifest must record, once
    /// [`Sweep::validate`] (or [`Sweep::validate_task`]) has computed it. A
    /// digest, not the scenario: a parsed scenario takes about 30 KB, too
    /// much for a grid of 100,000 tasks.
    #[serde(skip)]
    pub expected_config: Option<ConfigDigest>,
}

impl Task {
    /// The `--set KEY=VALUE` overrides of this task.
    pub fn sets(&self) -> Vec<String> {
        self.overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }
}

/// A loaded and expanded sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The sweep file (absolute).
    pub path: PathBuf,
    /// The sweep file's content.
    pub file: SweepFile,
    /// The base scenario (absolute).
    pub base: PathBuf,
    /// The sweep folder (absolute).
    pub out: PathBuf,
    /// Every task, in expansion order.
    pub tasks: Vec<Task>,
}

/// How a task stands on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// A complete manifest and every data file it lists: skipped.
    Complete,
    /// No directory yet.
    Missing,
    /// A directory without a valid, complete run: redone.
    Partial,
    /// A complete run of another scenario than the task's (the base
    /// scenario or psim's schema changed since): redone.
    Stale,
}

impl Sweep {
    /// Reads a sweep file and expands its grid, checking its schema and axes.
    /// Task scenarios are not validated yet; see [`Sweep::validate`].
    pub fn load(path: &Path) -> Result<Sweep, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|source| SweepError::Read {
            path: path.into(),
            source,
        })?;
        let path = std::path::absolute(path).map_err(io_err(path))?;
        let file: SweepFile = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    let before = &text[..s.start.min(text.len())];
                    format!("line {}: ", before.matches('\n').count() + 1)
                })
                .unwrap_or_default();
            SweepError::Parse {
                path: path.clone(),
                message: format!("{at}{}", e.message().trim().replace('\n', " ")),
            }
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let base = dir.join(&file.base);
        let out = dir.join(&file.out);
        let tasks = expand(&file.grid).map_err(|message| SweepError::Invalid {
            path: path.clone(),
            message,
        })?;
        if file.local.jobs == Some(0) || file.local.threads == Some(0) {
            return Err(SweepError::Invalid {
                path,
                message: "[local] jobs and threads must be at least 1".into(),
            });
        }
        if let Some(d) = &file.checkpoint_every {
            crate::engine::checkpoint::parse_duration(d).map_err(|e| SweepError::Invalid {
                path: path.clone(),
                message: format!("checkpoint_every = {d:?}: {e}"),
            })?;
        }
        if file.slurm.cpus_per_task == Some(0) || file.slurm.max_parallel == Some(0) {
            return Err(SweepError::Invalid {
                path,
                message: "[slurm] cpus_per_task and max_parallel must be at least 1".into(),
            });
        }
        Ok(Sweep {
            path,
            file,
            base,
            out,
            tasks,
        })
    }

    /// Checks every grid key on its own (so an unknown key is named as such)
    /// and then every task's full scenario, in parallel. Nothing should run or
    /// be submitted before this passes.
    pub fn validate(&mut self) -> Result<(), SweepError> {
        let invalid = |message: String| SweepError::Invalid {
            path: self.path.clone(),
            message,
        };
        if !self.base.is_file() {
            return Err(invalid(format!(
                "base scenario {} is not a file",
                self.base.display()
            )));
        }
        // Each plain axis's key (with its first value) and each bundle on its
        // own, so that an unknown key or a bundle that does not fit the base
        // is named as such; the tasks' full scenarios are checked after.
        for (axis, values) in axes(&self.file.grid).map_err(&invalid)? {
            let bundles = values[0].bundle;
            for v in values.iter().take(if bundles { values.len() } else { 1 }) {
                let sets: Vec<String> = v
                    .overrides
                    .iter()
                    .map(|(k, x)| format!("{k}={x}"))
                    .collect();
                Scenario::load(&self.base, &sets).map_err(|e| {
                    let what = if v.bundle {
                        format!("[grid] `{axis}` bundle {}", v.label)
                    } else {
                        format!("[grid] key `{axis}`")
                    };
                    invalid(format!("{what} is not valid for the base scenario: {e}"))
                })?;
            }
        }
        let (base, path) = (&self.base, &self.path);
        self.tasks
            .par_iter_mut()
            .try_for_each(|t| resolve_task(base, path, t))
    }

    /// Validates one task (all a job-array element needs) and records the
    /// scenario its manifest must hold.
    pub fn validate_task(&mut self, id: usize) -> Result<(), SweepError> {
        let n = self.tasks.len();
        let (base, path) = (&self.base, &self.path);
        let t = self.tasks.get_mut(id).ok_or_else(|| SweepError::Invalid {
            path: path.clone(),
            message: format!("--task {id}: the sweep has {n} tasks (0 to {})", n - 1),
        })?;
        resolve_task(base, path, t)
    }

    /// Puts the sweep folder at `out` instead of the file's `out` (relative
    /// paths are relative to the current directory, as on any command line).
    pub fn with_out(mut self, out: &Path) -> Result<Sweep, SweepError> {
        self.out = std::path::absolute(out).map_err(io_err(out))?;
        Ok(self)
    }

    /// The directory of a task.
    pub fn task_dir(&self, t: &Task) -> PathBuf {
        self.out.join(&t.dir)
    }

    /// Whether a task is done, absent or to be redone.
    pub fn state(&self, t: &Task) -> TaskState {
        task_state(&self.task_dir(t), t.expected_config.as_ref())
    }

    /// Writes `sweep.json` (task id -> directory -> parameters) into the
    /// sweep folder, creating it. Written through a temporary file and a
    /// rename, so a reader never sees half an index.
    pub fn write_index(&self) -> Result<PathBuf, SweepError> {
        if self.out.exists() && !self.out.is_dir() {
            return Err(SweepError::Invalid {
                path: self.path.clone(),
                message: format!(
                    "the sweep folder {} exists and is not a folder",
                    self.out.display()
                ),
            });
        }
        std::fs::create_dir_all(&self.out).map_err(io_err(&self.out))?;
        // Serialised straight from the tasks (keys in sorted order), not
        // through a JSON value tree, which took kilobytes per task.
        #[derive(Serialize)]
        struct Index<'a> {
            base: String,
            out: String,
            sweep: String,
            tasks: &'a [Task],
        }
        let index = Index {
            base: self.base.display().to_string(),
            out: self.out.display().to_string(),
            sweep: self.path.display().to_string(),
            tasks: &self.tasks,
        };
        let mut text = serde_json::to_string_pretty(&index).expect("JSON of strings and maps");
        text.push('\n');
        let path = self.out.join(INDEX_FILE);
        write_atomic(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Whether a task's directory holds a checkpoint to resume from.
    pub fn resumable(&self, t: &Task) -> bool {
        self.task_dir(t)
            .join("checkpoint")
            .join("current")
            .is_file()
    }

    /// The job array that runs this sweep's tasks with the psim binary
    /// `exe`: `sweep.sbatch` in the sweep folder, each task running `psim
    /// sweep SWEEP --out SWEEP_DIR --task ID` (the folder this submission
    /// checked, even if it came from --out).
    pub fn array_job(&self, exe: &Path) -> ArrayJob {
        ArrayJob {
            name: "psim-sweep".into(),
            settings: self.file.slurm.clone(),
            command: "sweep".into(),
            exe: exe.to_path_buf(),
            dir: self.out.clone(),
            script: SCRIPT_FILE.into(),
            script_args: vec![
                self.path.display().to_string(),
                "--out".into(),
                self.out.display().to_string(),
            ],
            chdir: None,
        }
    }
}

/// Loads a task's scenario (which validates it) and records the digest of
/// its resolved form, which its manifest will hold.
fn resolve_task(base: &Path, sweep: &Path, t: &mut Task) -> Result<(), SweepError> {
    let scn = Scenario::load(base, &t.sets()).map_err(|e| SweepError::Invalid {
        path: sweep.to_path_buf(),
        message: format!("task {} ({}): {e}", t.id, t.dir),
    })?;
    t.expected_config = Some(ConfigDigest::of(&scn.resolved_json()));
    Ok(())
}

/// 128 bits standing for a resolved scenario: two SipHashes of its compact
/// JSON text, each behind its own prefix byte. The text of a value read back
/// from a manifest is the text of the value written there (serde_json's
/// `float_roundtrip` reads every float back exactly, and its text is the
/// shortest that does), so the scenario need not go through text and back
/// before it is digested. Both sides of a comparison are computed by the
/// same binary in the same process, so the hasher need not be stable across
/// Rust versions, and accidental collisions are negligible (a stale task
/// would be skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigDigest([u64; 2]);

impl ConfigDigest {
    /// The digest of `config`'s compact JSON text.
    pub fn of(config: &serde_json::Value) -> ConfigDigest {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let text = serde_json::to_vec(config).expect("JSON values serialise");
        ConfigDigest([0u8, 1].map(|key| {
            let mut h = DefaultHasher::new();
            key.hash(&mut h);
            text.hash(&mut h);
            h.finish()
        }))
    }
}

/// Whether `dir` holds a finished run: a manifest that parses, says
/// `complete`, has every data file it lists present and, when `expected` is
/// given, records that scenario. A complete run of another scenario is
/// stale; anything else that exists is partial. Both are redone.
pub fn task_state(dir: &Path, expected: Option<&ConfigDigest>) -> TaskState {
    if !dir.exists() {
        return TaskState::Missing;
    }
    // Every part present, with the rows, size and CRC-32 the manifest lists:
    // a damaged task is redone, not skipped.
    match crate::trace::verify_run(dir) {
        Ok(m) => {
            if expected.is_some_and(|c| *c != ConfigDigest::of(&m.config)) {
                TaskState::Stale
            } else {
                TaskState::Complete
            }
        }
        _ => TaskState::Partial,
    }
}

/// Expands a grid into tasks: the cartesian product of its axes, keys in
/// sorted order, the last key varying fastest. Errors (as a message) on an
/// empty grid, an axis that is not a non-empty array, or two tasks whose
/// directory names collide.
pub fn expand(grid: &BTreeMap<String, toml::Value>) -> Result<Vec<Task>, String> {
    let axes = axes(grid)?;
    let total: usize = axes.iter().map(|(_, v)| v.len()).product();
    let mut tasks = Vec::with_capacity(total);
    let mut seen = BTreeMap::new();
    for id in 0..total {
        let mut rest = id;
        let mut params = BTreeMap::new();
        let mut overrides = BTreeMap::new();
        for (key, values) in axes.iter().rev() {
            let v = &values[rest % values.len()];
            params.insert(key.to_string(), v.label.clone());
            overrides.extend(v.overrides.iter().cloned());
            rest /= values.len();
        }
        let dir = dir_name(&params);
        if dir.len() > MAX_DIR_NAME {
            return Err(format!(
                "task {id}: directory name `{dir}` is longer than {MAX_DIR_NAME} bytes; use shorter grid values"
            ));
        }
        if let Some(other) = seen.insert(dir.clone(), id) {
            return Err(format!(
                "tasks {other} and {id} both map to directory `{dir}`: grid values must differ after sanitising"
            ));
        }
        tasks.push(Task {
            id,
            dir,
            params,
            overrides,
            expected_config: None,
        });
    }
    Ok(tasks)
}

/// One value of a grid axis.
#[derive(Debug, Clone)]
struct AxisValue {
    /// What the task directory and index call it: the value, or a bundle's `name`.
    label: String,
    /// The `--set` overrides it applies: (scenario key, TOML text).
    overrides: Vec<(String, String)>,
    /// Whether it is a bundle (a table of several overrides).
    bundle: bool,
}

/// Reads the grid's axes, in key order: plain values (one override of the
/// axis key each) or bundles (tables with a `name` and their overrides).
/// Errors on an empty grid, an empty or non-array axis, a malformed bundle,
/// or a scenario key that two axes both set.
fn axes(grid: &BTreeMap<String, toml::Value>) -> Result<Vec<(&str, Vec<AxisValue>)>, String> {
    if grid.is_empty() {
        return Err("[grid] is empty: the sweep has no tasks".into());
    }
    let mut axes = Vec::new();
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for (key, v) in grid {
        if key.trim().is_empty() {
            return Err("[grid] has an empty key".into());
        }
        let items = match v {
            toml::Value::Array(a) if a.is_empty() => {
                return Err(format!(
                    "[grid] `{key}` has no values: the sweep would have no tasks"
                ))
            }
            toml::Value::Array(a) => a,
            other => {
                return Err(format!(
                    "[grid] `{key}` must be an array of values, found {}",
                    other.type_str()
                ))
            }
        };
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            let value = match item {
                toml::Value::Table(t) => {
                    let Some(toml::Value::String(name)) = t.get("name") else {
                        return Err(format!(
                            "[grid] `{key}`: a bundle of settings needs a string `name`"
                        ));
                    };
                    let overrides: Vec<(String, String)> = t
                        .iter()
                        .filter(|(k, _)| k.as_str() != "name")
                        .map(|(k, v)| (k.clone(), toml_text(v)))
                        .collect();
                    if overrides.is_empty() {
                        return Err(format!(
                            "[grid] `{key}` bundle `{name}` sets nothing besides its name"
                        ));
                    }
                    AxisValue {
                        label: toml_text(&toml::Value::String(name.clone())),
                        overrides,
                        bundle: true,
                    }
                }
                plain => AxisValue {
                    label: toml_text(plain),
                    overrides: vec![(key.clone(), toml_text(plain))],
                    bundle: false,
                },
            };
            for (k, _) in &value.overrides {
                match owner.get(k) {
                    Some(&other) if other != key.as_str() => {
                        return Err(format!("[grid] `{k}` is set by both `{other}` and `{key}`"))
                    }
                    _ => {
                        owner.insert(k.clone(), key);
                    }
                }
            }
            values.push(value);
        }
        axes.push((key.as_str(), values));
    }
    Ok(axes)
}

/// A value as `--set` reads it: TOML text, so that strings keep their quotes
/// and are not re-parsed as numbers.
fn toml_text(v: &toml::Value) -> String {
    v.to_string()
}

/// `key=value,key=value` in key order, with every byte outside
/// `[A-Za-z0-9._+=-]` (quotes, spaces, slashes...) replaced by `_`, so that
/// the name is safe in a path and in a shell, and the same on every run.
pub fn dir_name(params: &BTreeMap<String, String>) -> String {
    let raw = params
        .iter()
        .map(|(k, v)| format!("{k}={}", v.trim_matches('"')))
        .collect::<Vec<_>>()
        .join(",");
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+=-,".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `bytes` to `path` through `path.tmp` and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(TMP_SUFFIX);
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(text: &str) -> BTreeMap<String, toml::Value> {
        let t: toml::Table = toml::from_str(text).unwrap();
        t.into_iter().collect()
    }

    #[test]
    fn expands_the_cartesian_product_last_key_fastest() {
        let tasks = expand(&grid(
            "\"traffic.0.senders\" = [4, 8]\nseed = [1, 2, 3]\n\"switch.queue.kind\" = [\"ndp\"]",
        ))
        .unwrap();
        assert_eq!(tasks.len(), 6);
        let dirs: Vec<&str> = tasks.iter().map(|t| t.dir.as_str()).collect();
        assert_eq!(
            dirs,
            [
                "seed=1,switch.queue.kind=ndp,traffic.0.senders=4",
                "seed=1,switch.queue.kind=ndp,traffic.0.senders=8",
                "seed=2,switch.queue.kind=ndp,traffic.0.senders=4",
                "seed=2,switch.queue.kind=ndp,traffic.0.senders=8",
                "seed=3,switch.queue.kind=ndp,traffic.0.senders=4",
                "seed=3,switch.queue.kind=ndp,traffic.0.senders=8",
            ]
        );
        assert!(tasks.iter().enumerate().all(|(i, t)| t.id == i));
        // Strings keep their TOML quotes in --set, so "1" stays a string.
        assert_eq!(
            tasks[5].sets(),
            ["seed=3", "switch.queue.kind=\"ndp\"", "traffic.0.senders=8"]
        );
    }

    #[test]
    fn bad_grids_are_errors_naming_the_axis() {
        assert!(expand(&grid("")).unwrap_err().contains("[grid] is empty"));
        let e = expand(&grid("seed = [1]\n\"topology.k\" = []")).unwrap_err();
        assert!(e.contains("`topology.k` has no values"), "{e}");
        let e = expand(&grid("seed = 3")).unwrap_err();
        assert!(e.contains("`seed` must be an array"), "{e}");
        // "a b" and "a/b" both sanitise to "a_b".
        let e = expand(&grid("name = [\"a b\", \"a/b\"]")).unwrap_err();
        assert!(e.contains("both map to directory `name=a_b`"), "{e}");
    }

    #[test]
    fn a_bundle_axis_sets_its_keys_together_and_names_the_directory() {
        let tasks = expand(&grid(
            "seed = [1, 2]\nstack = [\n { name = \"ndp\", \"traffic.0.protocol\" = \"ndp\", \"switch.queue.kind\" = \"ndp\" },\n              { name = \"dctcp\", \"traffic.0.protocol\" = \"dctcp\", \"switch.queue.kind\" = \"ecn\", \"switch.queue.queue_packets\" = 200 },\n]",
        ))
        .unwrap();
        assert_eq!(tasks.len(), 4);
        assert_eq!(tasks[1].dir, "seed=1,stack=dctcp");
        assert_eq!(
            tasks[1].sets(),
            [
                "seed=1",
                "switch.queue.kind=\"ecn\"",
                "switch.queue.queue_packets=200",
                "traffic.0.protocol=\"dctcp\""
            ]
        );
        assert_eq!(
            tasks[2].sets(),
            [
                "seed=2",
                "switch.queue.kind=\"ndp\"",
                "traffic.0.protocol=\"ndp\""
            ]
        );
        let e = expand(&grid("stack = [{ \"switch.queue.kind\" = \"ndp\" }]")).unwrap_err();
        assert!(e.contains("needs a string `name`"), "{e}");
        let e = expand(&grid("stack = [{ name = \"a\" }]")).unwrap_err();
        assert!(e.contains("sets nothing"), "{e}");
        let e = expand(&grid(
            "\"switch.queue.kind\" = [\"ndp\"]\nstack = [{ name = \"a\", \"switch.queue.kind\" = \"ecn\" }]",
        ))
        .unwrap_err();
        assert!(e.contains("set by both"), "{e}");
    }

    #[test]
    fn names_are_filesystem_safe() {
        let tasks = expand(&grid(
            "name = [\"x/../y z\"]\n\"protocol.ndp.min_rto_us\" = [0.5]",
        ))
        .unwrap();
        assert_eq!(tasks[0].dir, "name=x_.._y_z,protocol.ndp.min_rto_us=0.5");
        assert!(!tasks[0].dir.contains('/'));
    }

    #[test]
    fn config_digests_tell_scenarios_apart_and_survive_json_text() {
        let a = serde_json::json!({"seed": 1, "load": 0.7, "k": [4, 8]});
        let text = serde_json::to_string_pretty(&a).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(ConfigDigest::of(&a), ConfigDigest::of(&back));
        for other in [
            serde_json::json!({"seed": 2, "load": 0.7, "k": [4, 8]}),
            serde_json::json!({"seed": 1, "load": 0.7000000000000001, "k": [4, 8]}),
            serde_json::json!({"seed": 1, "load": 0.7, "k": [8, 4]}),
        ] {
            assert_ne!(ConfigDigest::of(&a), ConfigDigest::of(&other), "{other}");
        }
    }

    #[test]
    fn task_state_needs_a_complete_manifest_and_its_parts() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t");
        assert_eq!(task_state(&dir, None), TaskState::Missing);
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(task_state(&dir, None), TaskState::Partial);
        std::fs::write(dir.join("manifest.json"), "{\"complete\": tr").unwrap();
        assert_eq!(task_state(&dir, None), TaskState::Partial);
    }
}
