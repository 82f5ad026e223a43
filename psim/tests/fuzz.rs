//! Fuzzing of the parsers a user's input reaches (issue 18): the scenario
//! parser (TOML text to a validated [`Scenario`], nothing run), the `--set`
//! override parser, the `.cm` connection-matrix parser and the flow-size CDF
//! parser. Each gets arbitrary bytes and structured mutations of valid input
//! (a line dropped, doubled or swapped, a number made extreme, a token
//! spliced in). Every case must end in `Ok` or `Err`, never a panic, within
//! [`CASE_LIMIT`] of wall time, and its peak heap must stay below a small
//! bound: no parser may allocate in proportion to a number it reads.
//!
//! The case counts (10 000 per parser, 5 000 scenario mutations) keep the
//! whole file to about 10 s in a debug build, well inside the 60 s CI allows.
//! A longer campaign: `PROPTEST_CASES=100000 cargo test -p psim --release
//! --test fuzz`; proptest prints a minimal failing input and keeps it in
//! `psim/tests/fuzz.proptest-regressions`.

use proptest::prelude::*;
use psim::config::Scenario;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use workloads::spec::TimeUnit;
use workloads::{CmFile, EmpiricalCdf};

/// Counts the heap of the thread that runs a case (thread-local, so that
/// parallel tests do not see each other).
struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get().saturating_add_signed(delta);
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: forwards to the system allocator; the counters use no heap.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        note(new as isize - l.size() as isize);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Wall time one case may take in a debug build.
const CASE_LIMIT: Duration = Duration::from_secs(10);
/// Peak heap of one parser case: inputs are at most a few KB.
const PARSER_HEAP: usize = 16 << 20;
/// Peak heap of one scenario case: a valid mutation may build a topology
/// of a few thousand hosts and its workload.
const SCENARIO_HEAP: usize = 64 << 20;

/// Runs `f` on a thread of its own: its peak heap, or why it failed (a
/// panic, or no answer within [`CASE_LIMIT`]; the thread is then left).
fn bounded(f: impl FnOnce() + Send + 'static) -> Result<usize, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            f();
            let _ = tx.send(PEAK.with(Cell::get));
        })
        .expect("spawn");
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(peak) => Ok(peak),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("no answer in {CASE_LIMIT:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("panicked".into()),
    }
}

/// `n` cases, or `PROPTEST_CASES` where set.
fn cases(n: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// Values a mutation puts where a number was: limits, overflows, the
/// wrong type, nothing.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "0.5",
    "1e12",
    "1000000000000",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "1e300",
    "1e-300",
    "inf",
    "-inf",
    "nan",
    "1e400",
    "\"x\"",
    "[]",
    "{}",
    "true",
    "",
];

/// A line-level mutation of `text`, chosen by `ops`.
fn mutate(text: &str, ops: &[(u8, usize, usize)]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for &(op, a, b) in ops {
        if lines.is_empty() {
            break;
        }
        let (i, j) = (a % lines.len(), b % lines.len());
        match op % 5 {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(j, l);
            }
            2 => lines.swap(i, j),
            // A number (the value after `=`, or a whitespace token) made extreme.
            3 => {
                let x = EXTREMES[b % EXTREMES.len()];
                lines[i] = match lines[i].split_once('=') {
                    Some((k, _)) => format!("{k}= {x}"),
                    None => {
                        let mut t: Vec<&str> = lines[i].split_whitespace().collect();
                        if !t.is_empty() {
                            let k = b % t.len();
                            t[k] = x;
                        }
                        t.join(" ")
                    }
                };
            }
            // A token from another line spliced in.
            _ => {
                let tok = lines[j].split_whitespace().next().unwrap_or("").to_owned();
                lines[i].push(' ');
                lines[i].push_str(&tok);
            }
        }
    }
    lines.join("\n")
}

fn ops() -> impl Strategy<Value = Vec<(u8, usize, usize)>> {
    prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..6)
}

/// Bytes as text: valid UTF-8 is kept, the rest replaced (the parsers take `&str`).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cdf_case(t: String) -> Result<usize, String> {
    bounded(move || {
        let _ = EmpiricalCdf::parse(&t, Path::new("fuzz.cdf"));
    })
}

fn cm_case(t: String) -> Result<usize, String> {
    bounded(move || {
        for unit in [TimeUnit::Ps, TimeUnit::Us] {
            if let Ok(cm) = CmFile::parse(&t, Path::new("fuzz.cm"), unit) {
                // What parses must write back and parse again.
                let again = cm.to_cm(unit);
                CmFile::parse(&again, Path::new("again.cm"), unit).expect("round trip");
            }
        }
    })
}

/// A scenario from text in `dir` (relative files resolve there), with `sets`.
fn scenario_case(t: String, dir: PathBuf, sets: Vec<String>) -> Result<usize, String> {
    bounded(move || {
        let _ = Scenario::from_str(&t, &dir.join("fuzz.toml"), &sets);
    })
}

const CDF: &str = "# web search\nsize_bytes cumulative_fraction\n6 0\n6000 0.15\n13000 0.2\n\
                   19000 0.3\n33000 0.4\n53000 0.53\n133000 0.6\n667000 0.7\n1333000 0.8\n\
                   3333000 0.9\n6667000 0.97\n20000000 1\n";

const CM: &str = "Nodes 16\nConnections 4\nTriggers 2\n\
                  0->1 id 1 start 0 size 90000 send_done_trigger 1\n\
                  2->3 id 2 start 1.5 size 90000 recv_done_trigger 1\n\
                  1->2 id 3 trigger 1 size 90000 prio 1 send_done_trigger 2\n\
                  3->0 id 4 trigger 2 size 0\n\
                  trigger id 1 barrier count 2\ntrigger id 2 oneshot\n";

/// Every shipped small scenario, as (text, folder).
fn shipped() -> Vec<(String, PathBuf)> {
    let dir = repo().join("scenarios/small");
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| (std::fs::read_to_string(&p).unwrap(), dir.clone()))
        .collect();
    v.sort();
    v
}

/// `--set` arguments: keys from the scenario schema (and junk), values extreme.
fn set_args() -> impl Strategy<Value = Vec<String>> {
    let key = prop_oneof![
        Just("seed".to_string()),
        Just("stop_us".to_string()),
        Just("topology.k".to_string()),
        Just("topology".to_string()),
        Just("traffic.0.size_bytes".to_string()),
        Just("traffic.0".to_string()),
        Just("traffic.1000000000000.size_bytes".to_string()),
        Just("traffic.18446744073709551616.x".to_string()),
        Just("switch.queue.queue_bytes".to_string()),
        Just("protocol.ndp.mtu_bytes".to_string()),
        Just("link.latency_ns".to_string()),
        Just("a..b".to_string()),
        "[a-z_.0-9]{0,24}",
    ];
    let value = prop_oneof![
        prop::sample::select(EXTREMES).prop_map(str::to_owned),
        Just("[1, 2, 3]".to_string()),
        Just("{ a = 1 }".to_string()),
        Just("1\nseed = 2".to_string()),
        ".{0,16}",
    ];
    let arg = prop_oneof![
        (key, value).prop_map(|(k, v)| format!("{k}={v}")),
        ".{0,24}",
    ];
    prop::collection::vec(arg, 0..4)
}

proptest! {
    #![proptest_config(cases(10_000))]

    #[test]
    fn the_cdf_parser_survives_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        let peak = cdf_case(text(&b)).map_err(TestCaseError::fail)?;
        prop_assert!(peak < PARSER_HEAP, "peak heap {peak}");
    }

    #[test]
    fn the_cdf_parser_survives_mutations(o in ops()) {
        let peak = cdf_case(mutate(CDF, &o)).map_err(TestCaseError::fail)?;
        prop_assert!(peak < PARSER_HEAP, "peak heap {peak}");
    }

    #[test]
    fn the_cm_parser_survives_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        let peak = cm_case(text(&b)).map_err(TestCaseError::fail)?;
        prop_assert!(peak < PARSER_HEAP, "peak heap {peak}");
    }

    #[test]
    fn the_cm_parser_survives_mutations(o in ops()) {
        let peak = cm_case(mutate(CM, &o)).map_err(TestCaseError::fail)?;
        prop_assert!(peak < PARSER_HEAP, "peak heap {peak}");
    }

    #[test]
    fn the_scenario_parser_survives_arbitrary_bytes(
        b in prop::collection::vec(any::<u8>(), 0..512),
        sets in set_args(),
    ) {
        let peak = scenario_case(text(&b), repo(), sets).map_err(TestCaseError::fail)?;
        prop_assert!(peak < SCENARIO_HEAP, "peak heap {peak}");
    }
}

proptest! {
    // Each case validates a whole scenario (topology, workload): fewer cases.
    #![proptest_config(cases(5_000))]

    #[test]
    fn the_scenario_and_set_parsers_survive_mutations(
        which in any::<prop::sample::Index>(),
        o in ops(),
        sets in set_args(),
    ) {
        let all = shipped();
        let (t, dir) = which.get(&all).clone();
        let peak = scenario_case(mutate(&t, &o), dir, sets).map_err(TestCaseError::fail)?;
        prop_assert!(peak < SCENARIO_HEAP, "peak heap {peak}");
    }
}

/// Inputs that ask for a huge count must not be allocated for.
#[test]
fn a_huge_count_in_the_input_allocates_nothing_in_proportion() {
    let cm = "Nodes 4294967295\nConnections 1000000000000\nTriggers 1000000000000\n\
              0->1 id 1 start 0 size 1000\n";
    let peak = cm_case(cm.into()).unwrap();
    assert!(peak < PARSER_HEAP, "{peak}");
    let cdf = "size_bytes cumulative_fraction\n0 0\n1000000000000 1\n";
    let peak = cdf_case(cdf.into()).unwrap();
    assert!(peak < PARSER_HEAP, "{peak}");
    let text = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\n\
                protocol = \"ndp\"\npattern = \"random\"\nsize_bytes = 1000\n\
                flows_per_host = 4000000000\n";
    let sets = vec!["traffic.1000000000000.size_bytes=1".to_string()];
    let peak = scenario_case(text.into(), repo(), sets).unwrap();
    assert!(peak < SCENARIO_HEAP, "{peak}");
    let peak = scenario_case(text.into(), repo(), vec![]).unwrap();
    assert!(peak < SCENARIO_HEAP, "{peak}");
}

/// The seeds of the structured mutations are valid input: the mutations
/// start from what parses.
#[test]
fn the_unmutated_inputs_parse() {
    EmpiricalCdf::parse(CDF, Path::new("web.cdf")).unwrap();
    for unit in [TimeUnit::Ps, TimeUnit::Us] {
        CmFile::parse(CM, Path::new("t.cm"), unit).unwrap();
    }
    for (t, dir) in shipped() {
        Scenario::from_str(&t, &dir.join("fuzz.toml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    }
}
