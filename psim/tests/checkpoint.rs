//! Checkpoint and resume (docs/checkpoint.md): a run interrupted at any
//! window boundary and resumed writes the same bytes as an uninterrupted one;
//! damaged or mismatched checkpoints are refused with one line.

mod common;

use common::{paused_run, text, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Exit status after `--checkpoint-and-exit` (and the test hook).
const CHECKPOINTED: i32 = 75;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/small")
        .join(name)
}

/// Traces on, so packets and queue series are compared too.
const TRACES: [&str; 4] = [
    "--set",
    "trace.packets.enabled=true",
    "--set",
    "trace.queues.enabled=true",
];

fn psim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_psim"));
    c.args(args).env_remove("RUST_BACKTRACE");
    c.env_remove("PSIM_CKPT_EXIT_AFTER")
        .env_remove("PSIM_CKPT_PAUSE_MS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("start psim")
}

fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", text(&o.stderr));
}

/// `psim run SCENARIO --out OUT --shards N` with traces, plus `extra`.
fn run(scn: &Path, out: &Path, shards: u32, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let shards = shards.to_string();
    let mut args = vec![
        "run",
        scn.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--shards",
        &shards,
        "--threads",
        "1",
    ];
    args.extend(TRACES);
    args.extend(extra);
    psim(&args, env)
}

fn resume(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["resume", dir.to_str().unwrap(), "--quiet"];
    args.extend(extra);
    psim(&args, env)
}

/// Every data file of a run directory, by relative path (the manifest
/// aside: it holds wall times).
fn data_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for sub in ["flows", "packets", "queues"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            v.push((
                format!("{sub}/{}", p.file_name().unwrap().to_string_lossy()),
                std::fs::read(&p).unwrap(),
            ));
        }
    }
    v.sort();
    v
}

fn assert_same_outputs(reference: &Path, resumed: &Path, what: &str) {
    let (a, b) = (data_files(reference), data_files(resumed));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "{what}: the same files");
    assert!(
        a.iter().any(|f| f.0.starts_with("packets/")),
        "{what}: traced"
    );
    assert!(
        a.iter().any(|f| f.0.starts_with("queues/")),
        "{what}: traced"
    );
    for (x, y) in a.iter().zip(&b) {
        assert!(x.1 == y.1, "{what}: {} differs", x.0);
    }
    let flows = |d: &Path| psim(&["flows", d.to_str().unwrap()], &[]).stdout;
    assert_eq!(flows(reference), flows(resumed), "{what}: psim flows");
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn runs_interrupted_at_several_windows_resume_to_identical_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    // pFabric and LSTF carry queue state (ranks, slacks) and edge state
    // (the mean-FCT slack) through a checkpoint too.
    for name in [
        "ndp_permutation_k4.toml",
        "tcp_incast_k4.toml",
        "pfabric_websearch_k4.toml",
        "lstf_tcp_k4.toml",
    ] {
        let scn = scenario(name);
        for shards in [1, 3] {
            let reference = tmp.path().join(format!("{name}-{shards}-ref"));
            ok(&run(&scn, &reference, shards, &[], &[]), "reference run");
            for after in [1, 7, 40] {
                let what = format!("{name}, {shards} shards, stopped after checkpoint {after}");
                let dir = tmp.path().join(format!("{name}-{shards}-{after}"));
                let n = after.to_string();
                let o = run(
                    &scn,
                    &dir,
                    shards,
                    &["--checkpoint-every", "0s"],
                    &[("PSIM_CKPT_EXIT_AFTER", &n)],
                );
                assert_eq!(
                    o.status.code(),
                    Some(CHECKPOINTED),
                    "{what}: {}",
                    text(&o.stderr)
                );
                assert!(
                    !dir.join("manifest.json").exists(),
                    "{what}: no manifest yet"
                );
                // Threads may differ on resume; results do not depend on them.
                ok(
                    &resume(&dir, &["--threads", "2", "--checkpoint-every", "1h"], &[]),
                    &what,
                );
                assert_same_outputs(&reference, &dir, &what);
                let m = manifest(&dir);
                assert_eq!(m["resumes"], 1, "{what}");
                assert!(m["resumed_from_ps"].as_u64().is_some(), "{what}");
                assert!(
                    !dir.join("checkpoint").exists(),
                    "{what}: removed when complete"
                );
            }
            assert!(manifest(&reference).get("resumes").is_none());
        }
    }
}

#[test]
fn taking_checkpoints_does_not_change_the_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    // 277 windows, so 277 checkpoints.
    let scn = scenario("cbr_permutation_k4.toml");
    let reference = tmp.path().join("ref");
    ok(&run(&scn, &reference, 3, &[], &[]), "reference run");
    let dir = tmp.path().join("every-window");
    ok(
        &run(&scn, &dir, 3, &["--checkpoint-every", "0s"], &[]),
        "a checkpoint at every window",
    );
    assert_same_outputs(&reference, &dir, "checkpointed at every window");
    assert!(manifest(&dir).get("resumed_from_ps").is_none());
}

#[test]
fn a_run_interrupted_twice_resumes_to_identical_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let scn = scenario("cbr_pfc_incast_k4.toml");
    let reference = tmp.path().join("ref");
    ok(&run(&scn, &reference, 3, &[], &[]), "reference run");
    let dir = tmp.path().join("twice");
    let o = run(
        &scn,
        &dir,
        3,
        &["--checkpoint-every", "0s"],
        &[("PSIM_CKPT_EXIT_AFTER", "3")],
    );
    assert_eq!(o.status.code(), Some(CHECKPOINTED), "{}", text(&o.stderr));
    let o = resume(&dir, &[], &[("PSIM_CKPT_EXIT_AFTER", "5")]);
    assert_eq!(o.status.code(), Some(CHECKPOINTED), "{}", text(&o.stderr));
    ok(
        &resume(&dir, &["--checkpoint-every", "1h"], &[]),
        "second resume",
    );
    assert_same_outputs(&reference, &dir, "interrupted twice");
    assert_eq!(manifest(&dir)["resumes"], 2);
}

#[test]
fn sigusr1_with_checkpoint_and_exit_stops_and_resumes_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let scn = scenario("cbr_permutation_k4.toml");
    let reference = tmp.path().join("ref");
    ok(&run(&scn, &reference, 3, &[], &[]), "reference run");
    let dir = tmp.path().join("signalled");
    // Each window's checkpoint paused: the run lasts long enough to be
    // signalled while it runs.
    let mut c = paused_run(&scn, &dir, 20, &["--shards", "3", "--threads", "1"]);
    c.arg("--checkpoint-and-exit")
        .args(TRACES)
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let current = dir.join("checkpoint").join("current");
    wait_for(|| current.exists().then_some(()));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(CHECKPOINTED), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("psim resume"),
        "{}",
        text(&o.stderr)
    );
    ok(
        &resume(&dir, &["--checkpoint-every", "1h"], &[]),
        "resume after the signal",
    );
    assert_same_outputs(&reference, &dir, "signalled");
}

#[test]
fn a_kill_during_the_write_leaves_the_previous_checkpoint_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let scn = scenario("ndp_permutation_k4.toml");
    let reference = tmp.path().join("ref");
    ok(&run(&scn, &reference, 3, &[], &[]), "reference run");
    let dir = tmp.path().join("killed");
    let mut c = paused_run(&scn, &dir, 400, &["--shards", "3", "--threads", "1"]);
    c.args(TRACES).stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let ckpt = dir.join("checkpoint");
    let first = wait_for(|| std::fs::read_to_string(ckpt.join("current")).ok());
    // The next set's rank file is half written (paused): kill -9 now.
    let half = wait_for(|| {
        std::fs::read_dir(&ckpt).ok()?.flatten().find_map(|e| {
            let tmp = e.path().join("rank-00000.ckpt.tmp");
            (e.file_name().to_string_lossy() != first && tmp.exists()).then_some(tmp)
        })
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(half.exists());
    let current = std::fs::read_to_string(ckpt.join("current")).unwrap();
    assert_eq!(current, first, "the pointer still names the complete set");
    ok(
        &resume(&dir, &["--checkpoint-every", "1h"], &[]),
        "resume after kill -9",
    );
    assert_same_outputs(&reference, &dir, "killed mid-write");
}

/// A run stopped after its second checkpoint, in its own folder with a
/// copy of the scenario: (scenario copy, run directory).
fn stopped(tmp: &Path) -> (PathBuf, PathBuf) {
    let scn = tmp.join("s.toml");
    std::fs::copy(scenario("cbr_permutation_k4.toml"), &scn).unwrap();
    let dir = tmp.join("run");
    let o = run(
        &scn,
        &dir,
        3,
        &["--checkpoint-every", "0s"],
        &[("PSIM_CKPT_EXIT_AFTER", "2")],
    );
    assert_eq!(o.status.code(), Some(CHECKPOINTED), "{}", text(&o.stderr));
    (scn, dir)
}

fn rank_file(dir: &Path) -> PathBuf {
    let ckpt = dir.join("checkpoint");
    let cur = std::fs::read_to_string(ckpt.join("current")).unwrap();
    ckpt.join(cur).join("rank-00000.ckpt")
}

/// Resuming fails with one line on stderr containing every `needles`.
fn refused(dir: &Path, needles: &[&str]) {
    let o = resume(dir, &[], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` in: {err}");
    }
    assert!(!dir.join("manifest.json").exists());
}

#[test]
fn damaged_or_mismatched_checkpoints_are_refused_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    // A flipped byte, early (header) and late (body).
    for at in [12usize, 40, usize::MAX] {
        let t = tmp.path().join(format!("flip{at}"));
        std::fs::create_dir(&t).unwrap();
        let (_, dir) = stopped(&t);
        let f = rank_file(&dir);
        let mut b = std::fs::read(&f).unwrap();
        let i = at.min(b.len() - 1);
        b[i] ^= 0x01;
        std::fs::write(&f, b).unwrap();
        refused(&dir, &["rank-00000.ckpt"]);
    }
    // Truncated.
    let t = tmp.path().join("trunc");
    std::fs::create_dir(&t).unwrap();
    let (_, dir) = stopped(&t);
    let f = rank_file(&dir);
    let b = std::fs::read(&f).unwrap();
    std::fs::write(&f, &b[..b.len() / 2]).unwrap();
    refused(&dir, &["rank-00000.ckpt", "truncated"]);
    // The scenario file changed.
    let t = tmp.path().join("edited");
    std::fs::create_dir(&t).unwrap();
    let (scn, dir) = stopped(&t);
    let s = std::fs::read_to_string(&scn).unwrap();
    std::fs::write(&scn, format!("{s}\n# edited\n")).unwrap();
    refused(&dir, &["s.toml", "changed"]);
    // Another shard count than the checkpoint's.
    let t = tmp.path().join("shards");
    std::fs::create_dir(&t).unwrap();
    let (_, dir) = stopped(&t);
    let ckpt = dir.join("checkpoint");
    let meta = ckpt
        .join(std::fs::read_to_string(ckpt.join("current")).unwrap())
        .join("meta.json");
    let m = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, m.replace("\"shards\": 3", "\"shards\": 2")).unwrap();
    refused(&dir, &["written with 3 shards", "2 shards"]);
    // No checkpoint at all.
    let empty = tmp.path().join("none");
    std::fs::create_dir(&empty).unwrap();
    refused(&empty, &["current"]);
}

#[test]
fn bad_checkpoint_options_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let scn = scenario("cbr_permutation_k4.toml");
    for (args, needle) in [
        (vec!["--checkpoint-every", "30"], "unit"),
        (vec!["--checkpoint-every=-5m"], "non-negative"),
        (
            vec!["--checkpoint-signal", "KILL"],
            "--checkpoint-signal KILL",
        ),
    ] {
        let o = run(&scn, &tmp.path().join("x"), 1, &args, &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
