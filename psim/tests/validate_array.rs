//! `psim validate --backend slurm` without SLURM: the dry run's script and
//! job array (one task per target, split at MaxArraySize), a task run, and
//! collecting the tasks' results, with a target whose task left none.
//! `tests/slurm.sh` submits to a real SLURM.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use psim::validate::array::{task_dir, ArrayIndex};
use psim::validate::{CheckResult, Results, Scale, TargetResult, Verdict};

mod common;
use common::{assert_ok, text};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `psim validate ARGS` in the repository, with MaxArraySize `max`.
fn validate(args: &[&str], max: usize) -> Output {
    Command::new(env!("CARGO_BIN_EXE_psim"))
        .arg("validate")
        .args(args)
        .current_dir(root())
        .env("PSIM_MAX_ARRAY_SIZE", max.to_string())
        .env_remove("PSIM_MODULES")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("start psim")
}

/// Every target with its number of checks, in table order (`--list`).
fn table() -> Vec<(String, usize)> {
    assert_ok(&validate(&["--list"], 1001))
        .lines()
        .map(|l| {
            let id = l.split_whitespace().next().unwrap().to_string();
            let n = l
                .rsplit_once('(')
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no check count in {l:?}"));
            (id, n)
        })
        .collect()
}

fn position(table: &[(String, usize)], id: &str) -> usize {
    table.iter().position(|(t, _)| t == id).unwrap()
}

#[test]
fn the_dry_run_writes_the_script_and_one_array_task_per_target() {
    let t = table();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("v");
    let stdout = assert_ok(&validate(
        &[
            "--backend",
            "slurm",
            "--dry-run",
            "--only",
            "V23,V2",
            "--out",
            out.to_str().unwrap(),
            "--time",
            "00:05:00",
            "--sbatch-arg",
            "--mem=1G",
            "--threads",
            "1",
        ],
        1001,
    ));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(" sbatch ")).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let line = lines[0];
    let (v2, v23) = (position(&t, "V2"), position(&t, "V23"));
    let root = fs::canonicalize(root()).unwrap();
    for opt in [
        "PSIM_ARRAY_COMMAND=validate".to_string(),
        "PSIM_TASK_OFFSET=0 sbatch".into(),
        "--job-name=psim-validate".into(),
        format!("--array={v2},{v23} "),
        format!("--chdir={}", root.display()),
        "--time=00:05:00".into(),
        "--cpus-per-task=1".into(),
        "--mem=1G".into(),
        format!("validate.sbatch --quick --out {} --shards 2", out.display()),
    ] {
        assert!(line.contains(&opt), "missing {opt}: {line}");
    }
    assert!(!line.contains("--wait"), "{line}");
    // The script is the documented template, byte for byte; nothing else
    // was written or run.
    assert_eq!(
        fs::read(out.join("validate.sbatch")).unwrap(),
        fs::read(root.join("slurm/sweep_array.sbatch")).unwrap()
    );
    assert!(!out.join("array.json").exists());
    assert!(!out.join("tasks").exists());
}

#[test]
fn a_full_selection_is_split_at_max_array_size() {
    let t = table();
    let ids: Vec<usize> = (0..t.len()).filter(|&i| t[i].1 > 0).collect();
    let d = tempfile::tempdir().unwrap();
    let stdout = assert_ok(&validate(
        &[
            "--backend",
            "slurm",
            "--dry-run",
            "--full",
            "--out",
            d.path().to_str().unwrap(),
        ],
        10,
    ));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(" sbatch ")).collect();
    // One array per block of ten table positions holding a target with checks.
    let mut blocks: Vec<usize> = ids.iter().map(|i| i / 10).collect();
    blocks.dedup();
    assert_eq!(lines.len(), blocks.len(), "{stdout}");
    for (line, b) in lines.iter().zip(&blocks) {
        assert!(
            line.contains(&format!("PSIM_TASK_OFFSET={} ", b * 10)),
            "{line}"
        );
        assert!(line.contains(" --full "), "{line}");
    }
    // Every index below 10, and as many as there are targets with checks.
    let count: usize = lines
        .iter()
        .map(|l| {
            let spec = l
                .split("--array=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            spec.split(',')
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => {
                        let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                        assert!(b < 10, "{l}");
                        b - a + 1
                    }
                    None => {
                        assert!(r.parse::<usize>().unwrap() < 10, "{l}");
                        1
                    }
                })
                .sum::<usize>()
        })
        .sum();
    assert_eq!(count, ids.len());
}

/// One target's task results with its checks' values and verdicts.
fn task_results(id: &str, checks: &[(f64, Verdict)]) -> Results {
    Results {
        scale: Scale::Quick,
        psim_version: "0".into(),
        targets: BTreeMap::from([(
            id.to_string(),
            TargetResult {
                runs: vec![],
                checks: checks
                    .iter()
                    .enumerate()
                    .map(|(i, &(v, verdict))| CheckResult {
                        key: format!("{id}.{}", i + 1),
                        value: Some(v),
                        shown: format!("{v}"),
                        verdict,
                    })
                    .collect(),
            },
        )]),
    }
}

#[test]
fn collect_merges_the_tasks_draws_the_figures_and_names_the_missing_target() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path();
    let arg = out.to_str().unwrap();
    // Nothing submitted yet: one line saying so.
    let e = validate(&["--collect", "--out", arg], 1001);
    assert_eq!(e.status.code(), Some(1));
    assert!(
        text(&e.stderr).contains("array.json"),
        "{}",
        text(&e.stderr)
    );
    ArrayIndex {
        scale: Scale::Quick,
        targets: vec!["V2".into(), "V20".into()],
    }
    .prepare(out)
    .unwrap();
    // V20's task ran (the values are made up: this tests the merge); V2's did not.
    let pass = Verdict::Pass;
    task_results(
        "V20",
        &[(0.97, pass), (9.5, pass), (0.93, pass), (0.9, pass)],
    )
    .write_merged(&task_dir(out, "V20"))
    .unwrap();
    let e = validate(&["--collect", "--out", arg], 1001);
    let stderr = text(&e.stderr);
    assert_eq!(e.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("1 targets left no results: V2 (no results)"),
        "{stderr}"
    );
    let merged = Results::read(out, Scale::Quick).unwrap().unwrap();
    assert_eq!(merged.targets.keys().collect::<Vec<_>>(), ["V20"]);
    // V20 has the paper's points: its figure, with psim's curve in percent.
    let svg = fs::read_to_string(out.join("plots/V20.svg")).unwrap();
    assert!(svg.contains("psim, quick scale: NDP"), "{svg}");
    assert!(svg.contains("hosts (log scale)"), "{svg}");
    // Once V2's task has run, a failing check is the verdict.
    task_results("V2", &[(1.0, pass), (3.0, Verdict::Fail)])
        .write_merged(&task_dir(out, "V2"))
        .unwrap();
    let e = validate(&["--collect", "--out", arg], 1001);
    let stderr = text(&e.stderr);
    assert_eq!(e.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 checks fail their paper tolerance: V2.2"),
        "{stderr}"
    );
    assert!(!stderr.contains("left no results"), "{stderr}");
    let merged = Results::read(out, Scale::Quick).unwrap().unwrap();
    assert_eq!(merged.targets.len(), 2);
}

#[test]
fn a_task_runs_its_one_target_into_its_own_folder() {
    let t = table();
    let d = tempfile::tempdir().unwrap();
    let i = position(&t, "V2").to_string();
    let stdout = assert_ok(&validate(
        &[
            "--task",
            &i,
            "--out",
            d.path().to_str().unwrap(),
            "--threads",
            "1",
        ],
        1001,
    ));
    assert!(
        stdout.contains(&format!("task {i} (V2): quick scale")),
        "{stdout}"
    );
    let r = Results::read(&task_dir(d.path(), "V2"), Scale::Quick)
        .unwrap()
        .expect("the task's quick.json");
    assert_eq!(r.targets.keys().collect::<Vec<_>>(), ["V2"]);
    assert!(
        !d.path().join("quick.json").exists(),
        "only the task's own file"
    );
    // A position past the table, or of a target without checks, is one error line.
    let e = validate(
        &["--task", "100000", "--out", d.path().to_str().unwrap()],
        1001,
    );
    assert_eq!(e.status.code(), Some(1));
    assert!(
        text(&e.stderr).contains("--task 100000"),
        "{}",
        text(&e.stderr)
    );
    if let Some(n) = t.iter().position(|(_, c)| *c == 0) {
        let e = validate(
            &[
                "--task",
                &n.to_string(),
                "--out",
                d.path().to_str().unwrap(),
            ],
            1001,
        );
        assert!(
            text(&e.stderr).contains("has no checks"),
            "{}",
            text(&e.stderr)
        );
    }
}
