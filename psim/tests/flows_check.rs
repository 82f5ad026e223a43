//! `psim flows` checks a run against its manifest before printing it: every
//! way a run can be incomplete or damaged is refused with exit 1 and one
//! line naming the part; `--allow-incomplete` prints what is there with
//! warnings; a closed pipe ends it quietly.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{psim, text, CBR_K4};

/// A k = 4 FatTree, 16 CBR flows, with a packet trace, over 2 shards: four
/// parts (flows and packets, one each per shard), every one checked.
fn base() -> String {
    format!("{CBR_K4}[trace.packets]\nenabled = true\n")
}

/// A finished run in a fresh scratch directory.
fn good_run() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("s.toml");
    fs::write(&f, base()).unwrap();
    let out = t.path().join("out");
    let o = psim(&[
        "run",
        "-q",
        f.to_str().unwrap(),
        "--shards",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (t, out)
}

fn flows(dir: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["flows", dir.to_str().unwrap()];
    a.extend_from_slice(extra);
    psim(&a)
}

/// Exit 1, nothing on stdout, one `error:` line holding every needle.
fn refused(dir: &Path, needles: &[&str]) -> String {
    let o = flows(dir, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "printed data from a bad run");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    for n in needles {
        assert!(lines[0].contains(n), "`{n}` not in: {err}");
    }
    lines[0].to_string()
}

fn edit_manifest(dir: &Path, f: impl Fn(&mut serde_json::Value)) {
    let p = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
    f(&mut m);
    fs::write(&p, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

fn rows(o: &Output) -> usize {
    text(&o.stdout).lines().count() - 1
}

#[test]
fn a_good_run_prints_every_flow() {
    let (_t, out) = good_run();
    let o = flows(&out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert_eq!(rows(&o), 16);
}

#[test]
fn a_missing_part_is_refused_and_allow_incomplete_reads_the_rest() {
    let (_t, out) = good_run();
    let all = rows(&flows(&out, &[]));
    fs::remove_file(out.join("flows/part-00001.parquet")).unwrap();
    refused(&out, &["flows/part-00001.parquet", "missing"]);

    let o = flows(&out, &["--allow-incomplete"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("warning: part") && err.contains("part-00001"),
        "{err}"
    );
    assert!(err.contains("--allow-incomplete"), "{err}");
    let n = rows(&o);
    assert!(n > 0 && n < all, "{n} of {all}");
}

#[test]
fn a_missing_trace_part_is_refused_too() {
    let (_t, out) = good_run();
    fs::remove_file(out.join("packets/part-00000.parquet")).unwrap();
    refused(&out, &["packets/part-00000.parquet", "missing"]);
}

#[test]
fn an_extra_part_is_refused() {
    let (_t, out) = good_run();
    fs::copy(
        out.join("flows/part-00000.parquet"),
        out.join("flows/part-00002.parquet"),
    )
    .unwrap();
    refused(&out, &["flows/part-00002.parquet", "not listed"]);
    let o = flows(&out, &["--allow-incomplete"]);
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("part-00002"));
}

#[test]
fn no_manifest_is_refused() {
    let (_t, out) = good_run();
    fs::remove_file(out.join("manifest.json")).unwrap();
    refused(&out, &["no manifest", "manifest.json"]);
    let o = flows(&out, &["--allow-incomplete"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(rows(&o), 16);
    assert!(text(&o.stderr).contains("warning: no manifest"));
}

#[test]
fn complete_false_is_refused() {
    let (_t, out) = good_run();
    edit_manifest(&out, |m| m["complete"] = false.into());
    refused(
        &out,
        &["incomplete", "\"complete\": false", "manifest.json"],
    );
    let o = flows(&out, &["--allow-incomplete"]);
    assert!(o.status.success());
    assert_eq!(rows(&o), 16);
}

#[test]
fn a_truncated_part_is_refused() {
    let (_t, out) = good_run();
    let p = out.join("flows/part-00000.parquet");
    let bytes = fs::read(&p).unwrap();
    // What a writer killed mid-write would leave had it written in place.
    fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    refused(&out, &["flows/part-00000.parquet", "bytes", "truncated"]);
    // The part does not decode: --allow-incomplete skips it, with a warning.
    let o = flows(&out, &["--allow-incomplete"]);
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("skipped"), "{}", text(&o.stderr));
}

#[test]
fn a_bit_flipped_part_is_refused() {
    let (_t, out) = good_run();
    let p = out.join("flows/part-00001.parquet");
    let mut bytes = fs::read(&p).unwrap();
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x10;
    fs::write(&p, &bytes).unwrap();
    refused(&out, &["flows/part-00001.parquet", "crc32", "damaged"]);
}

#[test]
fn a_wrong_row_count_is_refused() {
    let (_t, out) = good_run();
    edit_manifest(&out, |m| {
        let r = m["parts"][0]["rows"].as_u64().unwrap();
        m["parts"][0]["rows"] = (r + 1).into();
    });
    refused(&out, &["flows/part-00000.parquet", "rows"]);
}

/// The reader has gone before psim writes a byte: `psim flows DIR | head`
/// with a `head` that is already done. Exit 0, nothing on stderr.
#[test]
fn a_closed_pipe_ends_quietly() {
    let (_t, out) = good_run();
    let mut child = Command::new(env!("CARGO_BIN_EXE_psim"))
        .args(["flows", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");

    // And through a shell, as in the README.
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; {:?} flows {:?} | head -n 2",
            env!("CARGO_BIN_EXE_psim"),
            out
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 2);
}
