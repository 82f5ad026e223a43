//! Helpers shared by psim's cross-crate integration tests.

use psim::config::Scenario;
use psim::engine::SimOptions;
use psim::run::{execute, RunOutcome};
use psim::trace::{flows_to_csv, read_flows, FlowRecord};
use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repo")
        .to_path_buf()
}

/// Every scenario file (`*.toml`) in `dir`, relative to the repository root,
/// sorted by name.
pub fn scenario_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo_root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// Every scenario under `scenarios/small/`: the ones small enough for tests.
pub fn small_scenarios() -> Vec<PathBuf> {
    scenario_files("scenarios/small")
}

/// One finished run: what the engine reported and what it wrote.
pub struct Ran {
    /// Engine outcome and manifest.
    pub outcome: RunOutcome,
    /// The flow table, sorted by flow id.
    pub flows: Vec<FlowRecord>,
    /// The flow table as canonical CSV.
    pub csv: String,
}

/// Runs a loaded scenario into a temporary directory and reads the outputs back.
pub fn run(scn: &Scenario, shards: u32, threads: u32) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let outcome = execute(
        scn,
        SimOptions { shards, threads },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{} with {shards} shards: {e}", scn.path.display()));
    let flows = read_flows(&out).expect("flows readable");
    assert_no_flow_beats_ideal(&flows, &scn.path.display().to_string());
    let mut csv = Vec::new();
    flows_to_csv(&flows, &mut csv).expect("csv");
    Ran {
        outcome,
        flows,
        csv: String::from_utf8(csv).expect("utf8"),
    }
}

/// Runs `scn` again with every window in time order (`[run] window_order =
/// "time"`, the reference order) on `shards` x `threads`, and checks that it
/// gives what `reference` gave (by default entity by entity wherever the
/// network allows; docs/engine.md, "Entity-major windows"): the same flow
/// table, end time and counts. Returns whether `reference` ran entity-major.
pub fn assert_time_order_agrees(
    scn: &Scenario,
    reference: &Ran,
    shards: u32,
    threads: u32,
) -> bool {
    let mut timed = scn.clone();
    timed.file.run.window_order = Some(psim::config::WindowOrder::Time);
    let other = run(&timed, shards, threads);
    let what = scn.path.display();
    let (a, b) = (&reference.outcome.summary, &other.outcome.summary);
    assert!(
        !b.entity_major,
        "{what}: window_order = \"time\" ran entity-major"
    );
    assert!(
        other.csv == reference.csv,
        "{what}: time order gives other flows"
    );
    assert_eq!(a.sim_end_ps, b.sim_end_ps, "{what}: end time");
    assert_eq!(a.event_counts, b.event_counts, "{what}: events by kind");
    assert_eq!(a.packets, b.packets, "{what}: packet counters");
    assert_eq!((a.queued, a.in_flight), (b.queued, b.in_flight), "{what}");
    assert_eq!(a.ports, b.ports, "{what}: port counters");
    assert_eq!(a.paused_ps_by_priority, b.paused_ps_by_priority, "{what}");
    assert_eq!(a.pulls, b.pulls, "{what}: pulls");
    assert_eq!(a.tofino, b.tofino, "{what}: Tofino counters");
    a.entity_major
}

/// Panics if a finished flow of `flows` (from `what`) completed faster
/// than its `ideal_fct_ps`, which is a lower bound (`topo/path.rs`, A16).
/// [`run`] checks every run with it.
pub fn assert_no_flow_beats_ideal(flows: &[FlowRecord], what: &str) {
    for f in flows {
        if let (Some(fct), Some(ideal)) = (f.fct_ps, f.ideal_fct_ps) {
            assert!(
                fct >= ideal,
                "{what}: flow {} ({} B, {}) finished in {fct} ps, below its ideal {ideal} ps",
                f.flow_id,
                f.size_bytes.unwrap_or(0),
                f.protocol,
            );
        }
    }
}

/// Loads scenario text (relative paths resolve against the repo root).
pub fn scenario(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::from_str(text, &repo_root().join("inline.toml"), &sets)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Serialisation of `bytes` at 10 Gb/s, ps.
pub fn ser10(bytes: u64) -> u64 {
    bytes * 800
}

/// Spec A16, computed here independently of psim: every wire byte crosses the
/// receiver's link back to back, plus one full packet's store-and-forward on
/// the 5 other hops and 6 propagation delays.
pub fn optimum(flows: &[FlowRecord]) -> u64 {
    let wire: u64 = flows
        .iter()
        .map(|f| f.size_bytes.unwrap() + f.size_bytes.unwrap().div_ceil(9000) * 64)
        .sum();
    ser10(wire) + 5 * ser10(9064) + 6 * 1_000_000
}

/// A flow's goodput over `over_ps`, Gb/s.
pub fn goodput_gbps(f: &FlowRecord, over_ps: u64) -> f64 {
    f.bytes_received as f64 * 8.0 / (over_ps as f64 / 1e12) / 1e9
}

/// (fastest, slowest) completion time of `flows`, which must all have finished.
pub fn fct_extremes(flows: &[FlowRecord]) -> (u64, u64) {
    let fcts = flows.iter().map(|f| f.fct_ps.expect("finished"));
    (
        fcts.clone().min().expect("flows"),
        fcts.max().expect("flows"),
    )
}
