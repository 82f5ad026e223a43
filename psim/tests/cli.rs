//! End-to-end tests of the `psim` command line.
//!
//! Every bad input must end with exit code 1 (never 101, a panic), print
//! exactly one line on stderr that starts with `error: ` and names the
//! offending key or file, and leave no outputs behind. Good inputs are
//! checked for the numbers `check` and `partition` print, and for the files
//! `run` leaves in its output directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{assert_ok, text, CBR_K4};

/// A small k = 4 FatTree (16 hosts) with a CBR permutation: runs in well
/// under a second even in a debug build.
const BASE: &str = CBR_K4;

/// A scratch directory holding scenario files and outputs of one test.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("create a temporary directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `text` to `name` and returns the full path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        fs::write(&p, text).expect("write scenario");
        p
    }
}

/// Runs the `psim` binary with `args` inside `cwd`.
fn psim<I, S>(cwd: &Path, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_psim"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("start psim")
}

/// Asserts a clean failure and returns the single error line.
/// `needles` must all appear in that line.
fn assert_fails(out: &Output, needles: &[&str]) -> String {
    let stderr = text(&out.stderr);
    let stdout = text(&out.stdout);
    assert!(
        !stderr.contains("panicked"),
        "psim panicked:\n{stderr}\nstdout:\n{stdout}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected exit code 1\nstderr:\n{stderr}\nstdout:\n{stdout}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "expected exactly one line on stderr, got:\n{stderr}"
    );
    let line = lines[0];
    assert!(line.starts_with("error: "), "{line}");
    for n in needles {
        assert!(line.contains(n), "error should mention `{n}`: {line}");
    }
    line.to_string()
}

/// `psim check FILE ARGS...`, expected to fail naming `needles`; also checks
/// that `psim run` refuses the same input without creating its `--out`.
fn check_and_run_fail(s: &Scratch, file: &Path, args: &[&str], needles: &[&str]) {
    let mut a: Vec<&str> = vec!["check", file.to_str().unwrap()];
    a.extend_from_slice(args);
    assert_fails(&psim(s.dir.path(), &a), needles);

    let out = s.path("out-of-failed-run");
    let mut a: Vec<&str> = vec!["run", "-q", file.to_str().unwrap()];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--out", out.to_str().unwrap()]);
    assert_fails(&psim(s.dir.path(), &a), needles);
    assert!(!out.exists(), "a failed run must not create {out:?}");
}

/// The value printed after `label` on `psim check`'s output.
fn check_field<'a>(stdout: &'a str, label: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(char::is_whitespace)?;
            (k == label).then(|| v.trim())
        })
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{stdout}"))
}

/// Every file under `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, acc: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, acc);
            } else {
                acc.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut acc = Vec::new();
    walk(dir, dir, &mut acc);
    acc.sort();
    acc
}

// ---------------------------------------------------------------- bad input

#[test]
fn malformed_toml_names_file_and_line() {
    let s = Scratch::new();
    // The unterminated string is on line 3.
    let f = s.write(
        "bad.toml",
        "seed = 1\n[topology]\nkind = \"fattree\nk = 4\n",
    );
    check_and_run_fail(&s, &f, &[], &["bad.toml:3:"]);
}

#[test]
fn unknown_top_level_key_is_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", &format!("colour = 3\n{BASE}"));
    check_and_run_fail(&s, &f, &[], &["colour", "s.toml"]);
}

#[test]
fn unknown_topology_key_is_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", &BASE.replace("k = 4\n", "k = 4\nlink_gpbs = 3\n"));
    check_and_run_fail(&s, &f, &[], &["link_gpbs", "s.toml"]);
}

/// Schema errors point at the user's file (regression: positions once
/// referred to a re-serialised document). A top-level key is located exactly;
/// inside `[topology]`, an internally tagged enum, serde only knows the
/// table, so the error points at its header and names the key.
#[test]
fn unknown_key_error_points_at_its_line() {
    let s = Scratch::new();
    let f = s.write("s.toml", &format!("seed = 1\ncolour = 3\n{}", &BASE[9..]));
    assert_fails(
        &psim(s.dir.path(), ["check", f.to_str().unwrap()]),
        &["s.toml:2:", "colour"],
    );
    let f = s.write(
        "t.toml",
        "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\nlink_gpbs = 3\n",
    );
    assert_fails(
        &psim(s.dir.path(), ["check", f.to_str().unwrap()]),
        &["t.toml:2:", "link_gpbs"],
    );
}

#[test]
fn odd_k_is_rejected() {
    let s = Scratch::new();
    let f = s.write("s.toml", &BASE.replace("k = 4", "k = 5"));
    check_and_run_fail(&s, &f, &[], &["topology.k", "5"]);
}

#[test]
fn zero_and_negative_rates_are_rejected() {
    let s = Scratch::new();
    for v in ["0", "-10", "0.0"] {
        let f = s.write(
            "s.toml",
            &BASE.replace("k = 4\n", &format!("k = 4\nlink_gbps = {v}\n")),
        );
        check_and_run_fail(&s, &f, &[], &["topology.link_gbps"]);
    }
    let f = s.write("s.toml", &format!("{BASE}[topology.core_link]\ngbps = 0\n"));
    check_and_run_fail(&s, &f, &[], &["topology.core_link.gbps"]);
    let f = s.write(
        "s.toml",
        &format!("{BASE}[topology.host_link]\ngbps = -1\n"),
    );
    check_and_run_fail(&s, &f, &[], &["topology.host_link.gbps"]);
}

#[test]
fn negative_latency_is_rejected() {
    let s = Scratch::new();
    let f = s.write(
        "s.toml",
        &BASE.replace("k = 4\n", "k = 4\nlatency_ns = -5\n"),
    );
    check_and_run_fail(&s, &f, &[], &["topology.latency_ns"]);
    let f = s.write(
        "s.toml",
        &format!("{BASE}[topology.tor_link]\nlatency_ns = -1\n"),
    );
    check_and_run_fail(&s, &f, &[], &["topology.tor_link.latency_ns"]);
}

#[test]
fn zero_latency_cut_link_is_refused_with_two_shards_only() {
    let s = Scratch::new();
    // Only the aggregation-core links have zero delay (a network with no
    // delay anywhere is refused for any shard count).
    let f = s.write(
        "s.toml",
        &format!("{BASE}[topology.core_link]\nlatency_ns = 0\n"),
    );
    // Two shards cut the network between aggregation and core switches: both
    // ends of the offending link must be named.
    let line = assert_fails(
        &psim(
            s.dir.path(),
            ["check", f.to_str().unwrap(), "--shards", "2"],
        ),
        &["agg", "core"],
    );
    assert!(line.contains("delay") || line.contains("latency"), "{line}");
    check_and_run_fail(&s, &f, &["--shards", "2"], &["agg", "core"]);

    // One shard cuts nothing: the same scenario is fine.
    let out = s.path("out");
    assert_ok(&psim(
        s.dir.path(),
        [
            "run",
            "-q",
            f.to_str().unwrap(),
            "--shards",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(out.join("manifest.json").is_file());
}

#[test]
fn missing_scenario_file_is_named() {
    let s = Scratch::new();
    let f = s.path("no-such-scenario.toml");
    check_and_run_fail(&s, &f, &[], &["no-such-scenario.toml"]);
}

#[test]
fn out_under_a_regular_file_is_not_writable() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    // Tests run as root, so permission bits would not stop the write; a
    // path below a regular file fails for everybody.
    s.write("afile", "keep");
    let out = s.path("afile").join("out");
    assert_fails(
        &psim(
            s.dir.path(),
            [
                "run",
                "-q",
                f.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        ),
        &[out.to_str().unwrap()],
    );
    assert_eq!(fs::read_to_string(s.path("afile")).unwrap(), "keep");
}

#[test]
fn out_that_is_a_regular_file_is_refused() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let out = s.write("afile", "keep");
    for force in [false, true] {
        let mut args = vec![
            "run",
            "-q",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        assert_fails(&psim(s.dir.path(), &args), &[out.to_str().unwrap()]);
        assert_eq!(fs::read_to_string(&out).unwrap(), "keep");
    }
}

#[test]
fn non_empty_out_needs_force() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let out = s.path("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "keep").unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "-q",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        psim(s.dir.path(), &a)
    };

    assert_fails(&run(&[]), &[out.to_str().unwrap(), "--force"]);
    assert_eq!(tree(&out), vec!["notes.txt"]);
    assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "keep");

    assert_ok(&run(&["--force"]));
    assert!(out.join("manifest.json").is_file());
    assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "keep");

    // A finished run is not overwritten by accident either.
    let manifest = fs::read(out.join("manifest.json")).unwrap();
    assert_fails(&run(&[]), &[out.to_str().unwrap()]);
    assert_eq!(fs::read(out.join("manifest.json")).unwrap(), manifest);
    assert_ok(&run(&["--force"]));
}

#[test]
fn bad_set_arguments_are_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    // Not key=value at all.
    check_and_run_fail(&s, &f, &["--set", "nokey"], &["--set", "nokey"]);
    // A path that walks into a scalar.
    check_and_run_fail(&s, &f, &["--set", "seed.x=1"], &["--set", "seed.x"]);
    // An array index out of range.
    check_and_run_fail(&s, &f, &["--set", "traffic.3.size_bytes=1"], &["traffic"]);
    // An empty segment.
    check_and_run_fail(&s, &f, &["--set", "topology..k=4"], &["--set"]);
}

#[test]
fn set_producing_an_unknown_key_is_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    check_and_run_fail(&s, &f, &["--set", "colour=3"], &["colour"]);
    check_and_run_fail(&s, &f, &["--set", "topology.colour=3"], &["colour"]);
    check_and_run_fail(&s, &f, &["--set", "traffic.0.bogus=1"], &["bogus"]);
}

#[test]
fn set_values_are_validated_like_file_values() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    check_and_run_fail(&s, &f, &["--set", "topology.k=5"], &["topology.k"]);
    check_and_run_fail(
        &s,
        &f,
        &["--set", "topology.core_link.gbps=0"],
        &["topology.core_link.gbps"],
    );
}

#[test]
fn unknown_traffic_protocol_is_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", &BASE.replace("\"cbr\"", "\"quic\""));
    check_and_run_fail(&s, &f, &[], &["traffic[0]", "protocol", "quic"]);
}

#[test]
fn unknown_traffic_pattern_is_named() {
    let s = Scratch::new();
    let f = s.write("s.toml", &BASE.replace("\"permutation\"", "\"zigzag\""));
    check_and_run_fail(&s, &f, &[], &["traffic[0]", "zigzag"]);
}

#[test]
fn zero_shards_or_threads_are_refused() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    check_and_run_fail(&s, &f, &["--shards", "0"], &["--shards"]);
    check_and_run_fail(&s, &f, &["--threads", "0"], &["--threads"]);
}

#[test]
fn flows_of_a_directory_without_outputs_fails() {
    let s = Scratch::new();
    let missing = s.path("nothing-here");
    assert_fails(
        &psim(s.dir.path(), ["flows", missing.to_str().unwrap()]),
        &["nothing-here"],
    );
}

/// Typed errors embed their cause in their own message; printing the whole
/// cause chain must not repeat it (`... (os error 2): ... (os error 2)`).
#[test]
fn error_causes_are_not_repeated() {
    let s = Scratch::new();
    let missing = s.path("missing.toml");
    let line = assert_fails(
        &psim(s.dir.path(), ["check", missing.to_str().unwrap()]),
        &["missing.toml"],
    );
    assert_eq!(line.matches("os error 2").count(), 1, "{line}");
    let f = s.write(
        "s.toml",
        &format!("{BASE}[topology.core_link]\nlatency_ns = 0\n"),
    );
    let line = assert_fails(
        &psim(
            s.dir.path(),
            [
                "run",
                "-q",
                f.to_str().unwrap(),
                "--shards",
                "2",
                "--out",
                "o",
            ],
        ),
        &["agg", "core"],
    );
    assert_eq!(line.matches("zero propagation delay").count(), 1, "{line}");
}

// --------------------------------------------------------------- good input

#[test]
fn check_prints_the_network_size() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let out = assert_ok(&psim(
        s.dir.path(),
        [
            "check",
            f.to_str().unwrap(),
            "--shards",
            "2",
            "--threads",
            "2",
        ],
    ));
    // k = 4: k^3/4 = 16 hosts; k^2/2 = 8 ToRs, 8 aggregation and k^2/4 = 4
    // core switches. Directed links = ports: 16 host ports + 8*4 + 8*4 + 4*4
    // switch ports = 96.
    assert_eq!(check_field(&out, "hosts"), "16", "{out}");
    assert_eq!(check_field(&out, "switches"), "20", "{out}");
    assert!(check_field(&out, "links").starts_with("96 "), "{out}");
    assert!(
        check_field(&out, "shards").starts_with("2 on 2 threads"),
        "{out}"
    );
    // The default latency is 1000 ns, so every cut link has 1 us of delay.
    assert_eq!(check_field(&out, "lookahead"), "1.000 us", "{out}");
    assert_eq!(check_field(&out, "seed"), "1", "{out}");
    assert!(text(&psim(s.dir.path(), ["check", f.to_str().unwrap()]).stderr).is_empty());

    // --set and --seed reach the same numbers: k = 8 is 128 hosts, 80
    // switches, 128 + 80 * 8 = 768 directed links.
    let out = assert_ok(&psim(
        s.dir.path(),
        [
            "check",
            f.to_str().unwrap(),
            "--set",
            "topology.k=8",
            "--seed",
            "7",
            "--shards",
            "1",
        ],
    ));
    assert_eq!(check_field(&out, "hosts"), "128", "{out}");
    assert_eq!(check_field(&out, "switches"), "80", "{out}");
    assert!(check_field(&out, "links").starts_with("768 "), "{out}");
    assert_eq!(check_field(&out, "seed"), "7", "{out}");
    assert!(
        check_field(&out, "lookahead").starts_with("unbounded"),
        "{out}"
    );
}

#[test]
fn partition_reports_the_lookahead() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let out = assert_ok(&psim(
        s.dir.path(),
        ["partition", f.to_str().unwrap(), "--shards", "2"],
    ));
    let line = out
        .lines()
        .find(|l| l.starts_with("lookahead"))
        .unwrap_or_else(|| panic!("no lookahead line in:\n{out}"));
    assert!(
        line.contains("1.000000 µs") || line.contains("1000.000 ns"),
        "{line}"
    );
    assert!(out.contains("2 shards"), "{out}");
}

#[test]
fn run_writes_a_complete_output_directory_and_flows_prints_csv() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let out = s.path("out");
    let stdout = assert_ok(&psim(
        s.dir.path(),
        [
            "run",
            "-q",
            f.to_str().unwrap(),
            "--shards",
            "2",
            "--threads",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(stdout.is_empty(), "run keeps stdout clean: {stdout}");

    let files = tree(&out);
    assert_eq!(
        files,
        vec![
            "flows/part-00000.parquet",
            "flows/part-00001.parquet",
            "manifest.json"
        ],
        "no *.tmp or probe files may remain"
    );

    let m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["complete"], serde_json::json!(true), "{m}");
    assert_eq!(m["shards"], serde_json::json!(2), "{m}");
    assert_eq!(m["seed"], serde_json::json!(1), "{m}");
    let parts: Vec<&str> = m["parts"]
        .as_array()
        .expect("parts is an array")
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        parts,
        vec!["flows/part-00000.parquet", "flows/part-00001.parquet"]
    );
    // Each part with its rows (16 flows in all), size and checksum.
    let rows: u64 = m["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 16, "{m}");
    for p in m["parts"].as_array().unwrap() {
        let bytes = fs::read(out.join(p["path"].as_str().unwrap())).unwrap();
        assert_eq!(p["bytes"].as_u64(), Some(bytes.len() as u64), "{p}");
        assert!(p["crc32"].as_u64().is_some(), "{p}");
    }
    // The PFC frame totals of the conservation balance are written (0: no PFC).
    for k in ["frames_sent", "frames_received"] {
        assert_eq!(m["packets"][k], serde_json::json!(0), "{k}: {m}");
    }
    // A permutation on 16 hosts starts one flow per host.
    assert_eq!(m["flows_started"], serde_json::json!(16), "{m}");

    let csv = assert_ok(&psim(s.dir.path(), ["flows", out.to_str().unwrap()]));
    let mut lines = csv.lines();
    let header = lines.next().expect("a header line");
    assert!(header.starts_with("flow_id,src,dst,protocol"), "{header}");
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 16, "{csv}");
    assert!(rows.iter().all(|r| r.contains(",cbr,")), "{csv}");
}

#[test]
fn runs_are_deterministic_across_shard_counts() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let mut csvs = Vec::new();
    for shards in ["1", "2", "4"] {
        let out = s.path(&format!("out{shards}"));
        assert_ok(&psim(
            s.dir.path(),
            [
                "run",
                "-q",
                f.to_str().unwrap(),
                "--shards",
                shards,
                "--out",
                out.to_str().unwrap(),
            ],
        ));
        csvs.push(assert_ok(&psim(
            s.dir.path(),
            ["flows", out.to_str().unwrap()],
        )));
    }
    assert_eq!(csvs[0], csvs[1]);
    assert_eq!(csvs[0], csvs[2]);
}

#[test]
fn workload_writes_the_generated_flows_as_csv_and_parquet() {
    let s = Scratch::new();
    let f = s.write("s.toml", BASE);
    let csv = s.dir.path().join("flows.csv");
    assert_ok(&psim(
        s.dir.path(),
        [
            "workload",
            f.to_str().unwrap(),
            "--out",
            csv.to_str().unwrap(),
        ],
    ));
    let body = std::fs::read_to_string(&csv).unwrap();
    let mut lines = body.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("id,src,dst,size_bytes,start_ps"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // The permutation of 16 hosts: 16 flows, every host sends once and receives once, never to itself.
    assert_eq!(rows.len(), 16);
    let mut srcs: Vec<&str> = rows.iter().map(|r| r[1]).collect();
    let mut dsts: Vec<&str> = rows.iter().map(|r| r[2]).collect();
    srcs.sort();
    dsts.sort();
    assert_eq!(srcs, dsts);
    assert!(rows.iter().all(|r| r[1] != r[2]));
    let pq = s.dir.path().join("flows.parquet");
    assert_ok(&psim(
        s.dir.path(),
        [
            "workload",
            f.to_str().unwrap(),
            "--out",
            pq.to_str().unwrap(),
        ],
    ));
    let bytes = std::fs::read(&pq).unwrap();
    assert_eq!(&bytes[..4], b"PAR1");
    assert!(!s.dir.path().join("flows.parquet.tmp").exists());
    let bad = s.dir.path().join("flows.txt");
    assert_fails(
        &psim(
            s.dir.path(),
            [
                "workload",
                f.to_str().unwrap(),
                "--out",
                bad.to_str().unwrap(),
            ],
        ),
        &["flows.txt", ".parquet"],
    );
}

#[test]
fn workload_errors_name_the_traffic_problem() {
    let s = Scratch::new();
    let f = s.write(
        "s.toml",
        "seed = 1\nstop_us = 10\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"poisson\"\nload = 1.5\nsize_dist = \"websearch\"\n",
    );
    let out = s.dir.path().join("w.csv");
    assert_fails(
        &psim(
            s.dir.path(),
            [
                "workload",
                f.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        ),
        &["load"],
    );
    assert!(!out.exists());
}

/// A run without a stop time whose flows can never finish (RoCE with
/// `pfc = true` has no timeout, and lossy links drop its packets, which PFC
/// cannot prevent) ends when
/// nothing is left to do: its flow table records the flows unfinished, and a
/// warning on stderr says why; a run that finishes every flow prints none.
#[test]
fn flows_stuck_without_a_timer_are_named_in_a_warning() {
    let s = Scratch::new();
    let text = |loss: f64| {
        format!(
            "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n[link]\nloss_rate = {loss}\n\
             [switch.pfc]\nenabled = true\n[protocol.roce]\npfc = true\n\
             [[traffic]]\nprotocol = \"roce\"\npattern = \"incast\"\nreceiver = 0\nsenders = 8\nsize_bytes = 20000\n"
        )
    };
    let file = s.write("stuck.toml", &text(0.1));
    let out = psim(
        s.dir.path(),
        ["run", "-q", file.to_str().unwrap(), "--out", "o"],
    );
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let warning = err.lines().find(|l| l.starts_with("warning:")).expect(&err);
    assert!(warning.contains("flows never finished"), "{warning}");
    assert!(warning.contains("packets were dropped"), "{warning}");
    let file = s.write("fine.toml", &text(0.0));
    let out = psim(
        s.dir.path(),
        ["run", "-q", file.to_str().unwrap(), "--out", "p"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning:"));
}
