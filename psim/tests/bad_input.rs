//! Bad input to the `psim` binary, as a new user would give it (issue 18,
//! items 1-3, 6 and 8): each case's input, exit code and one-line message;
//! the peak memory of the degenerate ones, measured on a bounded run; and
//! the defaults in a manifest's resolved `config`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `psim` binary cargo built for these tests.
fn psim() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_psim"))
}

/// What one run of the binary gave.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident memory of the child, bytes (its own, from `wait4`).
    peak_rss: u64,
}

/// Runs `psim args` in `dir`, killed after `limit` (a run that should
/// have stopped at once; the test then fails on its exit code).
// The child is reaped by `wait4` (which also gives its own rusage), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_in(dir: &Path, args: &[&str], limit: Duration) -> Ran {
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let mut child = Command::new(psim())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("psim starts");
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our own child; status and usage are valid pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(r >= 0, "wait4 failed");
        if r == pid {
            break (status, usage);
        }
        if start.elapsed() > limit {
            child.kill().ok();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ran {
        code,
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
        // Linux reports ru_maxrss in KiB.
        peak_rss: usage.ru_maxrss as u64 * 1024,
    }
}

const BASE: &str = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n\
    [[traffic]]\nprotocol = \"tcp\"\npattern = \"permutation\"\nsize_bytes = 100000\n";

/// A scratch directory holding `scenario.toml` with `text`.
fn scenario(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scenario.toml"), text).unwrap();
    dir
}

/// `psim check` and `psim run` on `text` with `extra` arguments: both fail
/// with exit 1 and a one-line error that contains `want`, within `limit`.
fn rejected(text: &str, extra: &[&str], want: &str) -> Vec<Ran> {
    let dir = scenario(text);
    let mut ran = Vec::new();
    for cmd in [
        &["check", "scenario.toml"][..],
        &["run", "scenario.toml", "--out", "out"],
    ] {
        let args: Vec<&str> = cmd.iter().chain(extra).copied().collect();
        let r = run_in(dir.path(), &args, Duration::from_secs(60));
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stderr.starts_with("error: "), "{args:?}: {r:?}");
        assert!(r.stderr.contains(want), "{args:?}: want {want:?} in {r:?}");
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{args:?}: {r:?}");
        assert!(r.stdout.is_empty(), "{args:?}: nothing on stdout: {r:?}");
        assert!(
            !dir.path().join("out/manifest.json").exists(),
            "{args:?}: no manifest"
        );
        ran.push(r);
    }
    ran
}

/// The limit on peak memory for the degenerate inputs.
const MAX_RSS: u64 = 100 << 20;

fn small(ran: &[Ran]) {
    for r in ran {
        assert!(r.peak_rss > 0, "{r:?}");
        assert!(r.peak_rss < MAX_RSS, "peak {} B: {r:?}", r.peak_rss);
    }
}

// Item 1: what cannot work is rejected before the run.

#[test]
fn a_queue_smaller_than_one_packet_is_rejected() {
    // TCP's default MSS is 9000 B (NDP paper §6 runs jumbo frames), plus psim's 64 B header.
    let text = format!("{BASE}[switch.queue]\nkind = \"droptail\"\nqueue_bytes = 1000\n");
    small(&rejected(
        &text,
        &[],
        "switch.queue.queue_bytes = 1000: smaller than one packet (9064 B: tcp MTU 9000 + header 64)",
    ));
    // 9064 B holds one packet: accepted.
    let ok = text.replace("queue_bytes = 1000", "queue_bytes = 9064");
    let dir = scenario(&ok);
    let r = run_in(
        dir.path(),
        &["check", "scenario.toml"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 0, "{r:?}");
    // Per tier, per class, and the NIC.
    for (table, key) in [
        (
            "[switch.core.queue]\nkind = \"ecn\"\nqueue_bytes = 5000\n",
            "switch.core.queue.queue_bytes = 5000",
        ),
        (
            "[switch.queue]\nkind = \"classes\"\n[[switch.queue.class]]\nkind = \"ndp\"\n\
             [[switch.queue.class]]\nkind = \"droptail\"\nqueue_bytes = 4000\n",
            "switch.queue.class[1].queue_bytes = 4000",
        ),
        (
            "[host.queue]\nkind = \"priority\"\nqueue_bytes = 2000\n",
            "host.queue.queue_bytes = 2000",
        ),
    ] {
        rejected(&format!("{BASE}{table}"), &[], key);
    }
}

/// DCTCP's K counts the capacity's unit: beside `queue_bytes`, K = 15 is
/// 15 bytes, which marks behind any queued packet (T43 once ran so).
#[test]
fn an_ecn_threshold_below_one_packet_in_bytes_is_rejected() {
    let table = "[protocol.tcp]\nmss_bytes = 1460\n[switch.queue]\nkind = \"ecn\"\nqueue_bytes = 500000\necn_threshold = 15\n";
    rejected(
        &format!("{BASE}{table}"),
        &[],
        "switch.queue.ecn_threshold = 15: counts bytes here (the capacity is queue_bytes) and is below one packet (1524 B: tcp MTU 1460 + header 64)",
    );
    // The same on the thesis's VOQ switch.
    rejected(
        &format!("{BASE}{}", table.replace("\"ecn\"", "\"voq\"")),
        &[],
        "switch.queue.ecn_threshold = 15: counts bytes here",
    );
    // RED's thresholds too: its default red_max (15) is packets.
    rejected(
        &format!("{BASE}[switch.queue]\nkind = \"red\"\nqueue_bytes = 500000\n"),
        &[],
        "switch.queue.red_max = 15.0: counts bytes here",
    );
    // In packets, in bytes of at least one packet, or 0: accepted.
    for ok in [
        table.replace("queue_bytes = 500000", "queue_packets = 342"),
        table.replace("ecn_threshold = 15", "ecn_threshold = 22860"),
        table.replace("ecn_threshold = 15", "ecn_threshold = 0"),
    ] {
        let dir = scenario(&format!("{BASE}{ok}"));
        let r = run_in(
            dir.path(),
            &["check", "scenario.toml"],
            Duration::from_secs(60),
        );
        assert_eq!(r.code, 0, "{ok}: {r:?}");
    }
}

#[test]
fn a_header_queue_smaller_than_one_header_is_rejected() {
    let text =
        BASE.replace("\"tcp\"", "\"ndp\"") + "[switch.queue]\nkind = \"ndp\"\nheader_bytes = 10\n";
    rejected(
        &text,
        &[],
        "switch.queue.header_bytes = 10: smaller than one header (64 B)",
    );
}

/// The packet is the protocol's own: NDP's 9000 B MTU under NDP, the MSS
/// given under TCP.
#[test]
fn the_packet_is_the_traffic_protocols() {
    let text = format!(
        "{BASE}[protocol.tcp]\nmss_bytes = 1436\n[switch.queue]\nkind = \"droptail\"\nqueue_bytes = 1499\n"
    );
    rejected(
        &text,
        &[],
        "queue_bytes = 1499: smaller than one packet (1500 B: tcp MTU 1436 + header 64)",
    );
    let dir = scenario(&text.replace("1499", "1500"));
    let r = run_in(
        dir.path(),
        &["check", "scenario.toml"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 0, "{r:?}");
}

// Item 2 / deliver 3: ranges, checked conversions, no blow-ups.

#[test]
fn a_cdf_with_its_mass_at_zero_is_rejected_by_run_and_workload() {
    let text = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"tcp\"\n\
                pattern = \"poisson\"\nload = 0.5\nsize_dist = \"file\"\ncdf_file = \"zero.cdf\"\n";
    let dir = scenario(text);
    std::fs::write(
        dir.path().join("zero.cdf"),
        "size_bytes cumulative_fraction\n0 0\n0 1\n",
    )
    .unwrap();
    let want =
        "zero.cdf: the mean flow size is 0 B; a flow-size CDF must have a mean of at least 1 byte";
    for args in [
        &["run", "scenario.toml", "--out", "out"][..],
        &["workload", "scenario.toml", "--out", "w.csv"],
        &["check", "scenario.toml"],
    ] {
        let r = run_in(dir.path(), args, Duration::from_secs(60));
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stderr.contains(want), "{args:?}: {r:?}");
        assert!(r.peak_rss < MAX_RSS, "{args:?}: {r:?}");
    }
}

#[test]
fn a_huge_latency_is_an_error_not_a_saturated_lookahead() {
    let text = BASE.replace("k = 4\n", "k = 4\nlatency_ns = 1e18\n");
    let ran = rejected(&text, &[], "topology.latency_ns = 1e18: too long");
    small(&ran);
    assert!(!ran[0].stdout.contains("18446744"), "{:?}", ran[0]);
    // Within u64 but beyond any link: 1 s is the ceiling.
    rejected(
        &BASE.replace("k = 4\n", "k = 4\n[topology.core_link]\nlatency_ns = 2e9\n"),
        &[],
        "topology.core_link.latency_ns = 2e9: too long: at most 1e9 (1.000 s)",
    );
}

#[test]
fn too_many_threads_or_shards_are_refused_before_any_thread_starts() {
    let ran = rejected(BASE, &["--threads", "100000"], "--threads 100000: at most");
    small(&ran);
    // As many threads as the shards given is allowed (a determinism check's form).
    let dir = scenario(BASE);
    let r = run_in(
        dir.path(),
        &[
            "check",
            "scenario.toml",
            "--threads",
            "36",
            "--shards",
            "36",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 0, "{r:?}");
    // More shards than the 36 hosts and switches of a k = 4 FatTree.
    let ran = rejected(
        BASE,
        &["--shards", "100000", "--threads", "1"],
        "--shards 100000: at most 36",
    );
    small(&ran);
    // Given in the file, the message names the file's key.
    let file = format!("{BASE}[run]\nthreads = 100000\n");
    small(&rejected(&file, &[], "run.threads = 100000: at most"));
}

#[test]
fn an_infinite_rate_is_rejected() {
    let text = BASE.replace("k = 4\n", "k = 4\nlink_gbps = inf\n");
    small(&rejected(
        &text,
        &[],
        "topology.link_gbps = inf: must be a finite number",
    ));
    rejected(
        BASE,
        &["--set", "protocol.ndp.pull_jitter=nan"],
        "protocol.ndp.pull_jitter = NaN: must be a finite number",
    );
    rejected(
        BASE,
        &["--set", "topology.link_gbps=20000"],
        "topology.link_gbps = 20000: at most 10000 Gb/s",
    );
}

#[test]
fn a_stop_time_beyond_u64_picoseconds_is_an_error_not_a_clamp() {
    let text = format!("stop_us = 1e30\n{BASE}");
    let ran = rejected(&text, &[], "stop_us = 1e30: too long");
    small(&ran);
    rejected(
        BASE,
        &["--set", "protocol.tcp.min_rto_us=1e20"],
        "protocol.tcp.min_rto_us = 1e20: too long",
    );
}

// Item 6: messages name the key.

#[test]
fn a_set_value_of_the_wrong_type_names_its_key() {
    rejected(
        BASE,
        &["--set", "topology.k=abc"],
        "`topology.k`: invalid type: string \"abc\", expected u32",
    );
}

#[test]
fn a_type_error_inside_traffic_names_entry_and_key() {
    let text = format!(
        "{BASE}[[traffic]]\nprotocol = \"tcp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 3\nsize_bytes = \"big\"\n"
    );
    rejected(
        &text,
        &[],
        "traffic[1].size_bytes: invalid type: string \"big\", expected u64",
    );
}

#[test]
fn a_string_for_a_number_points_at_its_own_line() {
    let text = BASE.replace("k = 4", "k = \"four\"");
    // Line 4 holds `k = "four"`; its value starts at column 5.
    rejected(
        &text,
        &[],
        "scenario.toml:4:5: `topology.k`: invalid type: string \"four\", expected u32",
    );
}

#[test]
fn seeds_are_0_to_2_pow_63_minus_1() {
    let dir = scenario(BASE);
    let r = run_in(
        dir.path(),
        &["check", "scenario.toml", "--seed", "9223372036854775808"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 2, "a command-line error: {r:?}");
    assert!(
        r.stderr
            .contains("9223372036854775808 is 2^63 or more; seeds are 0 to 2^63 - 1"),
        "{r:?}"
    );
    let r = run_in(
        dir.path(),
        &["check", "scenario.toml", "--seed", "9223372036854775807"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("seed       9223372036854775807"), "{r:?}");
}

// Item 8: the manifest's config is resolved.

#[test]
fn the_manifest_config_writes_out_every_default() {
    let dir = scenario(BASE);
    let r = run_in(
        dir.path(),
        &["run", "scenario.toml", "--out", "out", "--threads", "1"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, 0, "{r:?}");
    let text = std::fs::read_to_string(dir.path().join("out/manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let c = &m["config"];
    fn no_nulls(v: &serde_json::Value, at: &str) {
        match v {
            serde_json::Value::Null => panic!("null at {at}"),
            serde_json::Value::Object(o) => o
                .iter()
                .for_each(|(k, v)| no_nulls(v, &format!("{at}.{k}"))),
            serde_json::Value::Array(a) => a.iter().for_each(|v| no_nulls(v, at)),
            _ => {}
        }
    }
    no_nulls(c, "config");
    // The documented defaults (docs/disciplines.md, docs/topologies.md, README):
    // drop-tail switch ports of 100 packets (ns-3's DropTailQueue), priority
    // NICs of 1000 packets, every link tier at the topology's 10 Gb/s and
    // 1 us, the watchdog at 10 s of simulated time, TCP's 200 ms minimum RTO.
    for (path, want) in [
        ("/switch/queue/kind", serde_json::json!("droptail")),
        ("/switch/queue/queue_packets", serde_json::json!(100)),
        ("/host/queue/kind", serde_json::json!("priority")),
        ("/host/queue/queue_packets", serde_json::json!(1000)),
        ("/topology/host_link/gbps", serde_json::json!(10.0)),
        ("/topology/core_link/latency_ns", serde_json::json!(1000.0)),
        ("/run/watchdog_s", serde_json::json!(10.0)),
        ("/protocol/tcp/min_rto_us", serde_json::json!(200000.0)),
        ("/trace/packets/max_rows", serde_json::json!(10_000_000)),
    ] {
        assert_eq!(c.pointer(path), Some(&want), "{path} in {c}");
    }
}

/// An ACK carries one SACK block: asking the sender to read more is refused
/// by name rather than silently run with one.
#[test]
fn more_sack_blocks_than_an_ack_carries_are_refused() {
    rejected(
        BASE,
        &["--set", "protocol.tcp.sack_blocks=3"],
        "protocol.tcp.sack_blocks = 3: must be 0 (no SACK) or 1",
    );
}

/// TIMELY's rate-engine keys and the workload's connections per pair
/// ([TH] Ch. 3's testbed) name themselves when impossible.
#[test]
fn impossible_timely_engine_and_connection_settings_are_refused() {
    let timely = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n\
        [[traffic]]\nprotocol = \"timely\"\npattern = \"many_to_many\"\nsenders = [1, 2]\nreceivers = [0]\n";
    rejected(
        timely,
        &["--set", "protocol.timely.rtt_noise_us=-3"],
        "protocol.timely.rtt_noise_us = -3: must be 0 (off) or a positive time",
    );
    rejected(
        timely,
        &["--set", "protocol.timely.nic_pacing_mbps=0"],
        "protocol.timely.nic_pacing_mbps = 0",
    );
    rejected(
        timely,
        &["--set", "protocol.timely.rise_app_share=1.5"],
        "protocol.timely.rise_app_share = 1.5: must be in [0, 1]",
    );
    rejected(
        timely,
        &["--set", "protocol.timely.mode=fork"],
        "`protocol.timely.mode`: unknown variant `fork`, expected one of `thesis`, `hpcc`, `patched`",
    );
    rejected(
        timely,
        &["--set", "protocol.timely.patched_ref_us=0"],
        "protocol.timely.patched_ref_us = 0: must be positive",
    );
    rejected(
        timely,
        &["--set", "traffic.0.flows_per_pair=0"],
        "`flows_per_pair`: must be > 0",
    );
}

/// A traffic entry's `app` (transport/app.rs): impossible values, unknown
/// keys and a protocol that takes no messages are refused with the key named.
#[test]
fn impossible_app_messages_are_refused() {
    let roce = "seed = 1\nstop_us = 100\n[topology]\nkind = \"fattree\"\nk = 4\n\
        [[traffic]]\nprotocol = \"roce\"\npattern = \"background\"\n\
        app = { message_bytes = 65536, gbps = 2.0 }\n";
    rejected(
        roce,
        &["--set", "traffic.0.app.gbps=0"],
        "traffic[0].app.gbps = 0: must be above 0",
    );
    rejected(
        roce,
        &["--set", "traffic.0.app.message_bytes=0"],
        "traffic[0].app.message_bytes = 0",
    );
    rejected(
        roce,
        &["--set", "traffic.0.app.arrivals=\"bursty\""],
        "traffic[0].app",
    );
    rejected(
        roce,
        &["--set", "traffic.0.protocol=\"mptcp\""],
        "traffic[0].protocol = mptcp: takes no `app` messages",
    );
    rejected(
        roce,
        &["--set", "traffic.0.app.first_bytes=0"],
        "traffic[0].app.first_bytes = 0",
    );
}

/// A traffic entry's `verb` (transport/roce/read.rs): an unknown verb, a
/// read over a protocol that cannot read, and a read with `app` messages
/// are refused with the key named.
#[test]
fn impossible_reads_are_refused() {
    let irn = "seed = 1\nstop_us = 100\n[topology]\nkind = \"fattree\"\nk = 4\n\
        [[traffic]]\nprotocol = \"irn\"\npattern = \"permutation\"\nsize_bytes = 10000\n\
        verb = \"read\"\n";
    rejected(
        irn,
        &["--set", "traffic.0.verb=\"send\""],
        "traffic[0].verb = \"send\": must be \"write\" or \"read\"",
    );
    rejected(
        irn,
        &["--set", "traffic.0.protocol=\"roce_aimd\""],
        "traffic[0].protocol = roce_aimd: cannot read",
    );
    rejected(
        irn,
        &["--set", "traffic.0.protocol=\"tcp\""],
        "traffic[0].protocol = tcp: cannot read",
    );
    rejected(
        irn,
        &[
            "--set",
            "traffic.0.app={ message_bytes = 65536, gbps = 2.0 }",
        ],
        "traffic[0].app = a table: a read moves the whole flow on one request",
    );
}
