//! Running a scenario into an output directory.
//!
//! Order matters for "nothing is lost": the simulation is built (and the
//! partition checked) before the output directory is touched; data files are
//! written atomically; the manifest is written last, so a directory without
//! `manifest.json` is an incomplete run.

use crate::config::Scenario;
use crate::engine::{Progress, RunSummary, SimError, SimOptions, Simulation};
use crate::trace::{self, Manifest, OutputError};
use std::path::Path;
use std::time::Instant;

/// Errors of [`execute`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Building or running the simulation failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// Writing outputs failed.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// The result of a completed run.
#[derive(Debug)]
pub struct RunOutcome {
    /// Engine counters.
    pub summary: RunSummary,
    /// The manifest that was written.
    pub manifest: Manifest,
}

/// Builds, runs and writes one simulation.
pub fn execute(
    scn: &Scenario,
    opts: SimOptions,
    out: &Path,
    force: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutcome, RunError> {
    let mut sim = Simulation::new(scn, opts)?;
    trace::prepare_out_dir(out, force)?;
    let wall = Instant::now();
    let summary = sim.run(progress)?;
    let wall_s = wall.elapsed().as_secs_f64();
    let mut parts = Vec::new();
    let mut started = 0;
    let mut finished = 0;
    for (shard, recs) in sim.flow_records().iter().enumerate() {
        started += recs.len() as u64;
        finished += recs.iter().filter(|r| r.finish_ps.is_some()).count() as u64;
        let p = trace::write_flows_part(out, shard as u32, recs)?;
        parts.push(p.strip_prefix(out).unwrap_or(&p).display().to_string());
    }
    let manifest = Manifest {
        psim_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: trace::git_commit(),
        scenario_path: scn.path.display().to_string(),
        config: scn.resolved_json(),
        seed: scn.seed,
        ranks: 1,
        shards: opts.shards,
        threads: opts.threads,
        lookahead_ps: sim.lookahead_ps(),
        sim_end_ps: summary.sim_end_ps,
        events: summary.events,
        wall_s,
        events_per_s: summary.events as f64 / wall_s.max(1e-9),
        peak_rss_bytes: trace::peak_rss_bytes(),
        flows_started: started,
        flows_finished: finished,
        packets: serde_json::json!({
            "created": summary.packets.created,
            "delivered": summary.packets.delivered,
            "dropped": summary.packets.dropped,
            "queued": summary.queued,
            "in_flight": summary.in_flight,
            "conserved": summary.conserved(),
            "ports": summary.ports,
            "pulls": summary.pulls,
            "events_per_shard": summary.events_per_shard,
            "windows": summary.windows,
        }),
        parts,
        groups: sim
            .completed_groups()
            .into_iter()
            .map(|g| trace::GroupRecord {
                entry: g.entry,
                name: g.name,
                instance: g.instance,
                completed_ps: g.completed_ps,
            })
            .collect(),
        complete: true,
    };
    trace::write_manifest(out, &manifest)?;
    Ok(RunOutcome { summary, manifest })
}
