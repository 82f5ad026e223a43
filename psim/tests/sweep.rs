//! End-to-end tests of `psim sweep` without SLURM: local runs, resuming,
//! redoing partial tasks, failures, bad input, and the SLURM dry run (which
//! needs no SLURM). `tests/slurm.sh` submits to a real SLURM.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{assert_ok, psim, text};

/// The incast scenario shipped in `scenarios/small/` (16 hosts, runs in a
/// fraction of a second).
fn base_scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/small/ndp_incast_k4.toml")
}

/// 2 incast sizes x 2 initial windows; `[slurm]` only matters for the dry run.
fn sweep_text(grid: &str) -> String {
    format!(
        "base = {base:?}\nout = \"out\"\n[local]\njobs = 2\n[slurm]\npartition = \"short\"\naccount = \"proj1\"\n\
         time = \"00:05:00\"\ncpus_per_task = 2\nmax_parallel = 3\nmodules = [\"gcc\", \"openmpi\"]\n[grid]\n{grid}",
        base = base_scenario().display().to_string()
    )
}

const GRID: &str = "\"traffic.0.senders\" = [4, 8]\n\"protocol.ndp.iw_packets\" = [4, 23]\n";

/// Task directories in expansion order (keys sorted, the last varying fastest)
/// with their sender count and initial window.
const TASKS: [(&str, u64, u64); 4] = [
    ("protocol.ndp.iw_packets=4,traffic.0.senders=4", 4, 4),
    ("protocol.ndp.iw_packets=4,traffic.0.senders=8", 8, 4),
    ("protocol.ndp.iw_packets=23,traffic.0.senders=4", 4, 23),
    ("protocol.ndp.iw_packets=23,traffic.0.senders=8", 8, 23),
];

/// A clean failure: exit code 1, one `error:` line naming every needle.
fn assert_fails(out: &Output, needles: &[&str]) -> String {
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    for n in needles {
        assert!(
            lines[0].contains(n),
            "error should mention `{n}`: {}",
            lines[0]
        );
    }
    lines[0].to_string()
}

/// Writes the sweep file into a fresh directory; returns (dir guard, sweep path).
fn setup(text: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("temporary directory");
    let p = d.path().join("sweep.toml");
    fs::write(&p, text).expect("write sweep file");
    (d, p)
}

fn manifest(dir: &Path) -> serde_json::Value {
    let bytes = fs::read(dir.join("manifest.json")).expect("read manifest");
    serde_json::from_slice(&bytes).expect("manifest is JSON")
}

#[test]
fn local_sweep_runs_every_task_then_skips_them_and_redoes_partial_ones() {
    let (d, sweep) = setup(&sweep_text(GRID));
    let sweep_s = sweep.to_str().unwrap();
    let out = d.path().join("out");

    let first = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(first.contains("ran 4, skipped 0, failed 0"), "{first}");
    for (dir, senders, iw) in TASKS {
        let m = manifest(&out.join(dir));
        assert_eq!(m["complete"], true, "{dir}");
        // An incast of N senders is N flows, all of which finish.
        assert_eq!(m["flows_started"], senders, "{dir}");
        assert_eq!(m["flows_finished"], senders, "{dir}");
        // The task's own override reached its scenario.
        let cfg = m["config"].to_string();
        assert!(
            cfg.contains(&format!("\"iw_packets\":{iw}")),
            "{dir}: {cfg}"
        );
        assert!(out.join(dir).join("flows").is_dir(), "{dir}");
    }
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("sweep.json")).unwrap()).unwrap();
    let listed: Vec<&str> = index["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["dir"].as_str().unwrap())
        .collect();
    assert_eq!(listed, TASKS.map(|t| t.0));
    assert_eq!(index["tasks"][3]["params"]["traffic.0.senders"], "8");

    // Nothing to do the second time: every manifest is left as it was (each
    // holds its own wall time, so a rerun would change the bytes).
    let before: Vec<Vec<u8>> = TASKS
        .iter()
        .map(|t| fs::read(out.join(t.0).join("manifest.json")).unwrap())
        .collect();
    let again = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(again.contains("ran 0, skipped 4, failed 0"), "{again}");
    for (t, b) in TASKS.iter().zip(&before) {
        assert_eq!(&fs::read(out.join(t.0).join("manifest.json")).unwrap(), b);
    }

    // A truncated manifest and a missing flows part are partial runs: redone.
    let (t1, t2) = (out.join(TASKS[1].0), out.join(TASKS[2].0));
    fs::write(t1.join("manifest.json"), &before[1][..before[1].len() / 2]).unwrap();
    let part = manifest(&t2)["parts"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    fs::remove_file(t2.join(&part)).unwrap();

    // The dry run of the SLURM backend lists only those two.
    let dry = assert_ok(&psim(&[
        "sweep",
        sweep_s,
        "--backend",
        "slurm",
        "--dry-run",
    ]));
    let line = dry.lines().find(|l| l.contains(" sbatch ")).expect(&dry);
    assert!(line.contains("--array=1-2%3 "), "{line}");

    let redo = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(redo.contains("ran 2, skipped 2, failed 0"), "{redo}");
    assert_eq!(manifest(&t1)["complete"], true);
    assert!(t2.join(&part).is_file());
    for i in [0, 3] {
        let now = fs::read(out.join(TASKS[i].0).join("manifest.json")).unwrap();
        assert_eq!(now, before[i], "task {i} was rerun");
    }

    // One task, as a job-array element runs it: complete, so skipped.
    let one = assert_ok(&psim(&["sweep", sweep_s, "--task", "3"]));
    assert!(one.contains("skipped (complete)"), "{one}");
    assert_fails(
        &psim(&["sweep", sweep_s, "--task", "4"]),
        &["sweep.toml", "--task 4", "4 tasks"],
    );
}

#[test]
fn slurm_dry_run_prints_the_sbatch_line_and_writes_the_script() {
    let (d, sweep) = setup(&sweep_text(GRID));
    let out = assert_ok(&psim(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--backend",
        "slurm",
        "--dry-run",
        "--wait",
    ]));
    let line = out.lines().find(|l| l.contains(" sbatch ")).expect(&out);
    for opt in [
        "PSIM_MODULES='gcc openmpi'",
        "--array=0-3%3",
        "--partition=short",
        "--account=proj1",
        "--time=00:05:00",
        "--cpus-per-task=2",
        "--wait",
    ] {
        assert!(line.contains(opt), "missing {opt}: {line}");
    }
    assert!(
        line.ends_with(&format!(
            "sweep.sbatch {} --out {}",
            sweep.display(),
            d.path().join("out").display()
        )),
        "{line}"
    );
    // The submitted script is the documented template, byte for byte.
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("../slurm/sweep_array.sbatch");
    assert_eq!(
        fs::read(d.path().join("out/sweep.sbatch")).unwrap(),
        fs::read(template).unwrap()
    );
    // Nothing ran.
    for (dir, _, _) in TASKS {
        assert!(!d.path().join("out").join(dir).exists(), "{dir}");
    }
}

#[test]
fn a_failing_task_is_named_and_the_others_still_run() {
    let (d, sweep) = setup(&sweep_text(GRID));
    // A plain file where a task's directory should be: that task cannot run.
    fs::create_dir_all(d.path().join("out")).unwrap();
    fs::write(d.path().join("out").join(TASKS[2].0), "in the way").unwrap();
    let r = psim(&["sweep", sweep.to_str().unwrap()]);
    let line = assert_fails(&r, &["sweep.toml", "1 of 4 tasks failed", TASKS[2].0]);
    assert!(!line.contains(TASKS[0].0), "{line}");
    let stdout = text(&r.stdout);
    assert!(stdout.contains("ran 3, skipped 0, failed 1"), "{stdout}");
    for i in [0, 1, 3] {
        assert_eq!(
            manifest(&d.path().join("out").join(TASKS[i].0))["complete"],
            true
        );
    }
}

#[test]
fn bad_sweeps_are_one_line_errors_before_anything_runs() {
    let cases: [(&str, &[&str]); 8] = [
        // An unknown scenario key, named with its table.
        (
            "\"protocol.ndp.no_such_key\" = [1, 2]\n",
            &["[grid] key `protocol.ndp.no_such_key`", "no_such_key"],
        ),
        // A traffic entry that does not exist.
        (
            "\"traffic.5.senders\" = [2]\n",
            &["`traffic.5.senders`", "out of range"],
        ),
        // An axis with no values: the grid expands to nothing.
        (
            "seed = [1, 2]\n\"traffic.0.senders\" = []\n",
            &["`traffic.0.senders` has no values"],
        ),
        // No axis at all.
        ("", &["[grid] is empty"]),
        // A bundle with a key the scenario does not have: the bundle is named.
        (
            "stack = [{ name = \"x\", \"switch.nope\" = 1 }]\n",
            &["`stack` bundle \"x\"", "nope"],
        ),
        // A scalar instead of a list.
        ("seed = 3\n", &["`seed` must be an array"]),
        // A valid key with one invalid value: the task is named.
        (
            "\"traffic.0.senders\" = [4, 99]\n",
            &["traffic.0.senders=99", "senders"],
        ),
        // Two values that name the same directory.
        (
            "name = [\"a b\", \"a/b\"]\n",
            &["both map to directory `name=a_b`"],
        ),
    ];
    for (grid, needles) in cases {
        let (d, sweep) = setup(&sweep_text(grid));
        for backend in ["local", "slurm"] {
            let r = psim(&["sweep", sweep.to_str().unwrap(), "--backend", backend]);
            let mut n = vec!["sweep.toml"];
            n.extend_from_slice(needles);
            assert_fails(&r, &n);
            assert!(
                !d.path().join("out").exists(),
                "{grid}: outputs were created"
            );
        }
    }
    // An unknown field of the sweep file itself, with its line.
    let (_d, sweep) = setup(&sweep_text(GRID).replace("[local]\n", "[local]\nthreds = 1\n"));
    assert_fails(
        &psim(&["sweep", sweep.to_str().unwrap()]),
        &["sweep.toml", "line ", "unknown field `threds`"],
    );
    // A missing base scenario.
    let (_d, sweep) = setup(&sweep_text(GRID).replace("ndp_incast_k4.toml", "nope.toml"));
    assert_fails(&psim(&["sweep", sweep.to_str().unwrap()]), &["nope.toml"]);
    // No SLURM: a clear error, and no task runs.
    let (d, sweep) = setup(&sweep_text(GRID));
    let r = Command::new(env!("CARGO_BIN_EXE_psim"))
        .args(["sweep", sweep.to_str().unwrap(), "--backend", "slurm"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_fails(&r, &["cannot run sbatch", "--backend local"]);
    assert!(!d.path().join("out").join(TASKS[0].0).exists());
    // An sbatch that refuses the array (a stand-in script first on PATH):
    // an error, and without --wait nothing else is claimed; one that accepts
    // it: queued, exit 0.
    for (code, ok) in [(1, false), (0, true)] {
        let bin = d.path().join(format!("bin{code}"));
        fs::create_dir_all(&bin).unwrap();
        let sbatch = bin.join("sbatch");
        fs::write(
            &sbatch,
            format!("#!/bin/sh\necho refused >&2\nexit {code}\n"),
        )
        .unwrap();
        fs::set_permissions(&sbatch, PermissionsExt::from_mode(0o755)).unwrap();
        let r = Command::new(env!("CARGO_BIN_EXE_psim"))
            .args(["sweep", sweep.to_str().unwrap(), "--backend", "slurm"])
            .env("PATH", &bin)
            .output()
            .unwrap();
        if ok {
            assert_ok(&r);
        } else {
            // sbatch's own message, then psim's one error line.
            let stderr = text(&r.stderr);
            assert_eq!(r.status.code(), Some(1), "{stderr}");
            assert_eq!(
                stderr.lines().collect::<Vec<_>>(),
                ["refused", "error: sbatch failed; see its message above"]
            );
        }
    }
    // Zero jobs or threads.
    assert_fails(
        &psim(&["sweep", sweep.to_str().unwrap(), "--jobs", "0"]),
        &["--jobs"],
    );
    // A missing sweep file.
    assert_fails(
        &psim(&["sweep", "/nonexistent/sweep.toml"]),
        &["/nonexistent/sweep.toml"],
    );
    // A sweep folder that is a file: named, and the file is left alone.
    let (d, sweep) = setup(&sweep_text(GRID));
    fs::write(d.path().join("out"), "not a folder").unwrap();
    for backend in ["local", "slurm"] {
        assert_fails(
            &psim(&["sweep", sweep.to_str().unwrap(), "--backend", backend]),
            &["sweep.toml", "exists and is not a folder"],
        );
    }
    assert_eq!(fs::read(d.path().join("out")).unwrap(), b"not a folder");
}

#[test]
fn the_shipped_example_sweep_validates_and_out_overrides_its_folder() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/sweep/incast_k4.toml");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("elsewhere");
    let r = assert_ok(&psim(&[
        "sweep",
        example.to_str().unwrap(),
        "--backend",
        "slurm",
        "--dry-run",
        "--out",
        out.to_str().unwrap(),
    ]));
    // 3 incast sizes x 2 queue sizes x 2 seeds x 3 protocol stacks.
    assert!(r.contains("36 tasks, 0 complete, 36 to run"), "{r}");
    assert!(r.contains("--array=0-35%16 "), "{r}");
    assert!(r.contains(&format!("--out {}", out.display())), "{r}");
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("sweep.json")).unwrap()).unwrap();
    let tasks = index["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 36);
    // The last task: 15 senders, 64-packet queues, seed 2, the DCTCP bundle.
    assert_eq!(tasks[35]["params"]["stack"], "\"dctcp\"");
    assert_eq!(tasks[35]["overrides"]["switch.queue.kind"], "\"ecn\"");
    assert_eq!(tasks[35]["overrides"]["traffic.0.protocol"], "\"dctcp\"");
}

#[test]
fn tasks_of_a_changed_base_scenario_are_redone() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base.toml");
    fs::copy(base_scenario(), &base).unwrap();
    let sweep = d.path().join("sweep.toml");
    fs::write(
        &sweep,
        "base = \"base.toml\"\nout = \"out\"\n[grid]\n\"traffic.0.senders\" = [2, 3]\n",
    )
    .unwrap();
    let sweep_s = sweep.to_str().unwrap();
    let first = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(first.contains("ran 2, skipped 0"), "{first}");
    let again = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(again.contains("ran 0, skipped 2"), "{again}");
    // A job-array element agrees.
    let one = assert_ok(&psim(&["sweep", sweep_s, "--task", "1"]));
    assert!(one.contains("skipped (complete)"), "{one}");

    // Smaller flows: the finished runs no longer match their tasks.
    let text = fs::read_to_string(&base).unwrap();
    fs::write(
        &base,
        text.replace("size_bytes = 450000", "size_bytes = 90000"),
    )
    .unwrap();
    let one = assert_ok(&psim(&["sweep", sweep_s, "--task", "1"]));
    assert!(one.contains("done in"), "{one}");
    let redo = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(
        redo.contains("1 of them hold a complete run of another scenario"),
        "{redo}"
    );
    assert!(redo.contains("ran 1, skipped 1"), "{redo}");
    for n in [2, 3] {
        let m = manifest(&d.path().join(format!("out/traffic.0.senders={n}")));
        assert_eq!(m["config"]["traffic"][0]["size_bytes"], 90000);
    }
}

/// A task stopped after a checkpoint resumes from it the next time the sweep
/// runs, and ends with the flows of an uninterrupted run; a task whose
/// checkpoint is damaged runs again from the start, and says so in its log.
#[test]
fn a_task_stopped_after_a_checkpoint_resumes_from_it() {
    let grid = "\"traffic.0.senders\" = [4]\n";
    let file = sweep_text(grid).replace("[local]\n", "checkpoint_every = \"0s\"\n[local]\n");
    let (d, sweep) = setup(&file);
    let sweep_s = sweep.to_str().unwrap();
    let task = d.path().join("out").join("traffic.0.senders=4");
    let base = base_scenario();
    let base_s = base.to_str().unwrap();

    let reference = d.path().join("reference");
    assert_ok(&psim(&[
        "run",
        base_s,
        "--out",
        reference.to_str().unwrap(),
        "--quiet",
        "--set",
        "traffic.0.senders=4",
    ]));
    let flows = |dir: &Path| assert_ok(&psim(&["flows", dir.to_str().unwrap()]));
    let want = flows(&reference);

    // What an interrupted task leaves: a checkpoint and no manifest.
    let interrupt = || {
        let o = Command::new(env!("CARGO_BIN_EXE_psim"))
            .args(["run", base_s, "--out", task.to_str().unwrap(), "--quiet"])
            .args(["--force", "--set", "traffic.0.senders=4"])
            .args(["--checkpoint-every", "0s"])
            .env("PSIM_CKPT_EXIT_AFTER", "3")
            .output()
            .expect("start psim");
        assert_eq!(o.status.code(), Some(75), "{}", text(&o.stderr));
        assert!(task.join("checkpoint").join("current").is_file());
    };

    interrupt();
    let out = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(out.contains("1 of them resume from a checkpoint"), "{out}");
    assert!(out.contains("ran 1, skipped 0, failed 0"), "{out}");
    assert_eq!(manifest(&task)["resumes"], 1);
    assert_eq!(flows(&task), want);

    // A flipped byte in the checkpoint: the resume is refused, the task runs
    // from the start, and its outputs are still right.
    interrupt();
    let current = fs::read_to_string(task.join("checkpoint").join("current")).unwrap();
    let rank = task
        .join("checkpoint")
        .join(current.trim())
        .join("rank-00000.ckpt");
    let mut bytes = fs::read(&rank).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&rank, bytes).unwrap();
    let out = assert_ok(&psim(&["sweep", sweep_s]));
    assert!(out.contains("ran 1, skipped 0, failed 0"), "{out}");
    let log = fs::read_to_string(task.join("psim.log")).unwrap();
    assert!(log.contains("the resume failed"), "{log}");
    assert!(manifest(&task).get("resumes").is_none());
    assert_eq!(flows(&task), want);

    // A bad duration is refused before anything runs.
    let bad = sweep_text(grid).replace("[local]\n", "checkpoint_every = \"soon\"\n[local]\n");
    let (_d, sweep) = setup(&bad);
    assert_fails(
        &psim(&["sweep", sweep.to_str().unwrap()]),
        &["sweep.toml", "checkpoint_every"],
    );
}

/// `psim sweep --task` (what each job-array task runs) passes `SIGUSR1` on
/// to its task's psim, which checkpoints and stops; the command then exits
/// with status 75 (the array script requeues on it). The next `--task` run
/// resumes from the checkpoint, again stoppable by the signal, and the task
/// ends with the flows of an uninterrupted run.
#[test]
fn sweep_task_passes_sigusr1_on_and_exits_75_then_resumes() {
    let d = tempfile::tempdir().expect("temporary directory");
    let base = d.path().join("base.toml");
    fs::write(&base, common::CBR_K4).unwrap();
    // One task, the base scenario itself (its seed is 1).
    let sweep = d.path().join("sweep.toml");
    fs::write(
        &sweep,
        format!(
            "base = {:?}\nout = \"out\"\ncheckpoint_every = \"0s\"\n[grid]\nseed = [1]\n",
            base.display().to_string()
        ),
    )
    .unwrap();
    let task = d.path().join("out").join("seed=1");
    let reference = d.path().join("reference");
    let flows = |dir: &Path| assert_ok(&psim(&["flows", dir.to_str().unwrap()]));
    assert_ok(&psim(&[
        "run",
        base.to_str().unwrap(),
        "--out",
        reference.to_str().unwrap(),
        "--quiet",
    ]));
    let current = task.join("checkpoint").join("current");

    // Twice: a fresh run, then a resumed one, each signalled once it has
    // written a checkpoint of its own (every checkpoint paused 100 ms, so
    // it is still running then).
    for (round, resumes) in [(1, None), (2, Some(1))] {
        let before = fs::read_to_string(&current).ok();
        let child = Command::new(env!("CARGO_BIN_EXE_psim"))
            .args(["sweep", sweep.to_str().unwrap(), "--task", "0"])
            .env("PSIM_CKPT_PAUSE_MS", "100")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start psim sweep");
        common::wait_for(|| {
            fs::read_to_string(&current)
                .ok()
                .filter(|c| Some(c) != before.as_ref())
        });
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid, not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
        let o = child.wait_with_output().unwrap();
        let out = text(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(75),
            "round {round}: {out}{}",
            text(&o.stderr)
        );
        assert!(out.contains("stopped by SIGUSR1"), "round {round}: {out}");
        assert!(current.is_file(), "round {round}: no checkpoint");
        assert!(!task.join("manifest.json").exists(), "round {round}");
        let log = fs::read_to_string(task.join("psim.log")).unwrap();
        assert!(log.contains("psim resume"), "round {round}: {log}");
        if let Some(n) = resumes {
            // The resumed run's checkpoint records that it was resumed.
            let meta = fs::read_to_string(
                task.join("checkpoint")
                    .join(fs::read_to_string(&current).unwrap().trim())
                    .join("meta.json"),
            )
            .unwrap();
            let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
            assert_eq!(meta["resumes"], n, "round {round}: {meta}");
        }
    }

    let out = assert_ok(&psim(&["sweep", sweep.to_str().unwrap(), "--task", "0"]));
    assert!(out.contains("done in"), "{out}");
    assert_eq!(manifest(&task)["resumes"], 2);
    assert_eq!(flows(&task), flows(&reference));
    // Complete now: skipped.
    let out = assert_ok(&psim(&["sweep", sweep.to_str().unwrap(), "--task", "0"]));
    assert!(out.contains("skipped (complete)"), "{out}");
}

/// Every shipped sweep file expands and validates every task's scenario
/// (a dry run writes nothing else): [TH] Ch. 4's sensitivity sweeps give
/// 16, 16 and 12 tasks (RoCE+PFC has no RTO_high or N rows).
#[test]
fn every_shipped_sweep_file_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/sweep");
    let mut seen = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let r = assert_ok(&psim(&[
            "sweep",
            path.to_str().unwrap(),
            "--dry-run",
            "--out",
            out.to_str().unwrap(),
        ]));
        let name = path.file_name().unwrap().to_str().unwrap();
        let want = match name {
            "rdma_sensitivity_irn.toml" | "rdma_sensitivity_irn_pfc.toml" => Some(16),
            "rdma_sensitivity_roce_pfc.toml" => Some(12),
            _ => None,
        };
        if let Some(n) = want {
            assert!(
                r.contains(&format!("dry run: {n} to run, skipped 0")),
                "{name}: {r}"
            );
        }
        seen += 1;
    }
    assert!(seen >= 6, "{seen} sweep files");
}
