//! `psim run` without a terminal on stderr (a SLURM job, a pipe) prints one
//! progress line every 30 s of wall time (issue 18); `PSIM_PROGRESS_SECS`
//! shortens the interval here, and `--quiet` turns the lines off.

use std::fs;
use std::process::Command;

mod common;
use common::CBR_K4;

/// Runs the scenario with stderr on a pipe; returns stderr and the flow
/// table's parts, concatenated.
fn run(extra: &[&str], every: &str) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let scn = dir.path().join("s.toml");
    fs::write(&scn, CBR_K4).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_psim"))
        .arg("run")
        .arg(&scn)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .env("PSIM_PROGRESS_SECS", every)
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "{err}");
    let mut parts: Vec<_> = fs::read_dir(out.join("flows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    (
        err,
        parts.iter().flat_map(|p| fs::read(p).unwrap()).collect(),
    )
}

#[test]
fn a_pipe_gets_progress_lines_and_quiet_none_and_the_outputs_do_not_change() {
    let (err, flows) = run(&[], "0");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert!(!lines.is_empty(), "no progress line in:\n{err}");
    let last = lines.last().unwrap();
    assert!(
        last.contains("simulated ")
            && last.contains(" of 50.000 us")
            && last.contains(" of 16 flows finished")
            && last.contains(" M events/s"),
        "{last}"
    );
    let (quiet, quiet_flows) = run(&["--quiet"], "0");
    assert!(!quiet.contains("progress: "), "{quiet}");
    assert_eq!(flows, quiet_flows);
    // At the default 30 s, a run this short prints none.
    let (slow, _) = run(&[], "30");
    assert!(!slow.contains("progress: "), "{slow}");
}

#[test]
fn a_bad_interval_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let scn = dir.path().join("s.toml");
    fs::write(&scn, CBR_K4).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_psim"))
        .arg("run")
        .arg(&scn)
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("PSIM_PROGRESS_SECS", "soon")
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("PSIM_PROGRESS_SECS"),
        "{err}"
    );
}
