//! SLURM job arrays, shared by `psim sweep --backend slurm` and `psim
//! validate --backend slurm`: the array script, the `sbatch` command lines,
//! splitting a long task list at the cluster's `MaxArraySize`, and the
//! submission itself. What each array task runs is the caller's: the script
//! runs `psim $PSIM_ARRAY_COMMAND ARGS... --task ID --threads N`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use serde::Deserialize;

/// The job-array script, shared with `slurm/sweep_array.sbatch` so that the
/// documented template and what psim submits cannot drift apart.
pub const ARRAY_TEMPLATE: &str = include_str!("../../slurm/sweep_array.sbatch");

/// SLURM's `MaxArraySize` when `scontrol` cannot say: its default.
pub const DEFAULT_MAX_ARRAY_SIZE: usize = 1001;

/// `[slurm]`: options of the job array. Each becomes an `sbatch` option.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct SlurmSettings {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--time` (e.g. `"00:30:00"`).
    pub time: Option<String>,
    /// `--cpus-per-task`; each task runs that many threads.
    pub cpus_per_task: Option<u32>,
    /// Environment modules loaded before each task (`module load ...`).
    #[serde(default)]
    pub modules: Vec<String>,
    /// At most this many array tasks run at once (`--array=...%N`).
    pub max_parallel: Option<u32>,
    /// Any other `sbatch` options, passed verbatim (e.g. `["--mem=2G"]`).
    #[serde(default)]
    pub sbatch_args: Vec<String>,
}

/// What [`ArrayJob::submit_array`] left to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// `--dry-run`: the sbatch lines were printed, nothing ran.
    DryRun,
    /// Submitted without `--wait`: the arrays are queued.
    Queued,
    /// `--wait`: the arrays have ended; `sbatch_ok` is whether every
    /// `sbatch --wait` exited 0.
    Ended {
        /// Every `sbatch --wait` succeeded.
        sbatch_ok: bool,
    },
}

/// One job array to submit: everything but the task ids.
#[derive(Debug, Clone)]
pub struct ArrayJob {
    /// `--job-name`.
    pub name: String,
    /// The `[slurm]` options.
    pub settings: SlurmSettings,
    /// The psim subcommand each task runs (`sweep`, `validate`).
    pub command: String,
    /// The psim binary the tasks run.
    pub exe: PathBuf,
    /// Where the script copy and `logs/` go.
    pub dir: PathBuf,
    /// The script's file name inside `dir`.
    pub script: String,
    /// Arguments after the script: passed on to `psim COMMAND`.
    pub script_args: Vec<String>,
    /// `--chdir`, where a task must run (None: the submission directory).
    pub chdir: Option<PathBuf>,
}

impl ArrayJob {
    /// The script's path.
    pub fn script_path(&self) -> PathBuf {
        self.dir.join(&self.script)
    }

    /// The array tasks' log folder.
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// The `sbatch` arguments (without the program name) that submit the
    /// array indices `ids` (ascending).
    pub fn sbatch_args(&self, ids: &[usize], wait: bool) -> Vec<String> {
        let s = &self.settings;
        let mut args = vec![format!("--job-name={}", self.name)];
        let mut array = format!("--array={}", array_spec(ids));
        if let Some(n) = s.max_parallel {
            let _ = write!(array, "%{n}");
        }
        args.push(array);
        args.push(format!(
            "--output={}",
            self.logs().join("%A_%a.out").display()
        ));
        if let Some(d) = &self.chdir {
            args.push(format!("--chdir={}", d.display()));
        }
        if let Some(p) = &s.partition {
            args.push(format!("--partition={p}"));
        }
        if let Some(a) = &s.account {
            args.push(format!("--account={a}"));
        }
        if let Some(t) = &s.time {
            args.push(format!("--time={t}"));
        }
        if let Some(c) = s.cpus_per_task {
            args.push(format!("--cpus-per-task={c}"));
        }
        args.extend(s.sbatch_args.iter().cloned());
        if wait {
            args.push("--wait".into());
        }
        args.push(self.script_path().display().to_string());
        args.extend(self.script_args.iter().cloned());
        args
    }

    /// The submission's environment, read by the script (sbatch exports the
    /// submitting environment to the job): the psim binary, the modules, the
    /// subcommand (left out for `sweep`, the script's default) and the
    /// offset added to each array index to give the task id.
    pub fn env(&self, offset: usize) -> Vec<(String, String)> {
        let mut env = vec![
            ("PSIM".into(), self.exe.display().to_string()),
            ("PSIM_MODULES".into(), self.settings.modules.join(" ")),
        ];
        if self.command != "sweep" {
            env.push(("PSIM_ARRAY_COMMAND".into(), self.command.clone()));
        }
        env.push(("PSIM_TASK_OFFSET".into(), offset.to_string()));
        env
    }

    /// [`ArrayJob::submit`], with the outcome both `psim sweep` and `psim
    /// validate` act on: nothing more to do after a dry run or a successful
    /// submission without `wait`; a failed submission without `wait` is an
    /// error; with `wait` the arrays have ended, and the caller judges them
    /// by their outputs (sbatch's own status is passed on).
    pub fn submit_array(
        &self,
        ids: &[usize],
        dry_run: bool,
        wait: bool,
        say: &mut dyn FnMut(&str),
    ) -> Result<Submitted, String> {
        let ok = self.submit(ids, dry_run, wait, say)?;
        Ok(match (dry_run, wait) {
            (true, _) => Submitted::DryRun,
            (false, false) if !ok => return Err("sbatch failed; see its message above".into()),
            (false, false) => Submitted::Queued,
            (false, true) => Submitted::Ended { sbatch_ok: ok },
        })
    }

    /// Writes the script and creates the log folder, then submits the task
    /// ids `ids` (ascending) as one job array per `MaxArraySize` block,
    /// printing each `sbatch` line through `say`. With `dry_run` only the
    /// lines are printed. With `wait`, every array is waited for at once
    /// (`sbatch --wait`). Returns whether every sbatch succeeded.
    pub fn submit(
        &self,
        ids: &[usize],
        dry_run: bool,
        wait: bool,
        say: &mut dyn FnMut(&str),
    ) -> Result<bool, String> {
        let logs = self.logs();
        std::fs::create_dir_all(&logs)
            .map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
        let script = self.script_path();
        crate::sweep::write_atomic(&script, ARRAY_TEMPLATE.as_bytes())
            .map_err(|e| e.to_string())?;
        let max = max_array_size();
        let arrays = split_array(ids, max);
        if arrays.len() > 1 {
            say(&format!(
                "{} tasks exceed the cluster's MaxArraySize = {max}: {} job arrays",
                ids.len(),
                arrays.len()
            ));
        }
        let mut submitted = Vec::new();
        for (offset, idx) in &arrays {
            let args = self.sbatch_args(idx, wait);
            let env = self.env(*offset);
            let line = env
                .iter()
                .map(|(k, v)| format!("{k}={}", shell_quote(v)))
                .chain(std::iter::once("sbatch".to_string()))
                .chain(args.iter().map(|s| shell_quote(s)))
                .collect::<Vec<_>>()
                .join(" ");
            if dry_run {
                say(&line);
                continue;
            }
            say(&format!("submitting {} tasks: {line}", idx.len()));
            let child = Command::new("sbatch")
                .args(&args)
                .envs(env)
                .spawn()
                .map_err(|e| {
                    format!(
                        "cannot run sbatch ({e}): is SLURM installed? Use --backend local or --dry-run"
                    )
                })?;
            submitted.push(child);
        }
        let mut ok = true;
        for mut child in submitted {
            let status = child
                .wait()
                .map_err(|e| format!("waiting for sbatch: {e}"))?;
            ok &= status.success();
        }
        Ok(ok)
    }
}

/// The cluster's `MaxArraySize` (array indices must be below it), from
/// `scontrol show config`; `PSIM_MAX_ARRAY_SIZE` overrides it (tests), and
/// SLURM's default, 1001, stands in where neither answers.
pub fn max_array_size() -> usize {
    if let Some(n) = std::env::var("PSIM_MAX_ARRAY_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 1)
    {
        return n;
    }
    Command::new("scontrol")
        .args(["show", "config"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| parse_max_array_size(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or(DEFAULT_MAX_ARRAY_SIZE)
}

/// `MaxArraySize = N` in `scontrol show config` output.
pub fn parse_max_array_size(text: &str) -> Option<usize> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "MaxArraySize")
            .then(|| v.trim().parse().ok())
            .flatten()
            .filter(|&n| n >= 1)
    })
}

/// Splits task ids (ascending) into job arrays whose indices stay below
/// `max`: (offset, indices), task id = offset + index. The offsets are
/// multiples of `max`, so that a resubmission splits the same way.
pub fn split_array(ids: &[usize], max: usize) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for &id in ids {
        let offset = id / max * max;
        match out.last_mut() {
            Some((o, v)) if *o == offset => v.push(id - offset),
            _ => out.push((offset, vec![id - offset])),
        }
    }
    out
}

/// SLURM's `--array` list for `ids` (sorted ascending): runs of consecutive
/// ids as ranges, e.g. `0-3,5,7-8`.
pub fn array_spec(ids: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

/// Quotes `s` for a POSIX shell when it holds anything but safe characters,
/// so that a printed command line can be pasted back.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+=-,/:%@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_split_at_multiples_of_the_max_array_size() {
        let ids: Vec<usize> = (0..10).chain(12..14).collect();
        assert_eq!(
            split_array(&ids, 4),
            vec![
                (0, vec![0, 1, 2, 3]),
                (4, vec![0, 1, 2, 3]),
                (8, vec![0, 1]),
                (12, vec![0, 1]),
            ]
        );
        // Resubmitting task 13 alone: the same array, index 1.
        assert_eq!(split_array(&[13], 4), vec![(12, vec![1])]);
        assert_eq!(
            split_array(&[0, 5, 1000], 1001),
            vec![(0, vec![0, 5, 1000])]
        );
        assert_eq!(split_array(&[1001], 1001), vec![(1001, vec![0])]);
    }

    #[test]
    fn max_array_size_is_read_from_scontrol_show_config() {
        let text = "Configuration data as of 2026-11-24T10:00:00\n\
                    MailProg                = /bin/mail\n\
                    MaxArraySize            = 40\n\
                    MaxJobCount             = 10000\n";
        assert_eq!(parse_max_array_size(text), Some(40));
        assert_eq!(parse_max_array_size("MaxArraySize = 0\n"), None);
        assert_eq!(parse_max_array_size("nothing here\n"), None);
    }

    #[test]
    fn array_spec_compresses_runs() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 5, 7, 8, 9]), "0,2-3,5,7-9");
        assert_eq!(array_spec(&[4]), "4");
    }

    #[test]
    fn shell_quote_leaves_plain_words() {
        assert_eq!(shell_quote("--array=0-3%2"), "--array=0-3%2");
        assert_eq!(shell_quote("gcc openmpi"), "'gcc openmpi'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_environment_names_the_subcommand_only_when_not_sweep() {
        let mut job = ArrayJob {
            name: "psim-validate".into(),
            settings: SlurmSettings::default(),
            command: "validate".into(),
            exe: "/bin/psim".into(),
            dir: "/o".into(),
            script: "validate.sbatch".into(),
            script_args: vec!["--quick".into()],
            chdir: Some("/repo".into()),
        };
        let env = job.env(3);
        assert!(env.contains(&("PSIM_ARRAY_COMMAND".into(), "validate".into())));
        assert!(env.contains(&("PSIM_TASK_OFFSET".into(), "3".into())));
        let args = job.sbatch_args(&[0, 1, 2, 5], true);
        assert_eq!(
            args,
            [
                "--job-name=psim-validate",
                "--array=0-2,5",
                "--output=/o/logs/%A_%a.out",
                "--chdir=/repo",
                "--wait",
                "/o/validate.sbatch",
                "--quick"
            ]
        );
        job.command = "sweep".into();
        assert!(!job.env(0).iter().any(|(k, _)| k == "PSIM_ARRAY_COMMAND"));
    }
}
