//! Running a scenario into an output directory.
//!
//! Order matters for "nothing is lost": the simulation is built (and the
//! partition checked) before the output directory is touched; data files are
//! written atomically; the manifest is written last, so a directory without
//! `manifest.json` is an incomplete run.
//!
//! Across MPI ranks: rank 0 prepares the directory, every rank writes the
//! flow parts of its own shards (no gather of bulk data), and rank 0 writes the
//! manifest with every rank's figures. Each step that can fail on one rank is
//! followed by a collective verdict, so a failure on any rank stops all of them
//! instead of leaving the others waiting.

use crate::config::Scenario;
use crate::engine::checkpoint::{self, CheckpointError, Policy};
use crate::engine::{Comm, Progress, RunSummary, SimError, SimOptions, Simulation, SingleProcess};
use crate::trace::{self, Manifest, OutputError, QueueFormat};
use std::path::Path;

/// Errors of [`execute`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Building or running the simulation failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// Writing outputs failed.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The trace settings cannot be honoured by this run.
    #[error("{0}")]
    Trace(String),
    /// A checkpoint to resume from cannot be used.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A `[replay]` run cannot be done as asked.
    #[error("{0}")]
    Replay(String),
    /// Another rank failed while writing outputs (it prints its own message).
    #[error("rank {rank}: stopping because another rank failed to write its outputs")]
    RemoteOutput {
        /// This rank.
        rank: u32,
    },
}

/// The result of a completed run.
#[derive(Debug)]
pub struct RunOutcome {
    /// Engine counters.
    pub summary: RunSummary,
    /// The manifest (written by rank 0).
    pub manifest: Manifest,
}

/// Builds, runs and writes one simulation in this process.
pub fn execute(
    scn: &Scenario,
    opts: SimOptions,
    out: &Path,
    force: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutcome, RunError> {
    execute_with(scn, opts, out, force, progress, Box::new(SingleProcess))
}

/// Checkpoints of a run (`engine/checkpoint.rs`): when to take them, and
/// the set a resumed run starts from.
#[derive(Default)]
pub struct Checkpointing {
    /// When to take checkpoints; None: never.
    pub policy: Option<Policy>,
    /// Resume from this checkpoint instead of starting at time zero.
    pub resume: Option<Resume>,
}

/// Where a resumed run starts.
pub struct Resume {
    /// The checkpoint set (`checkpoint::current`).
    pub set: std::path::PathBuf,
    /// The run's [`checkpoint::scenario_hash`].
    pub hash: u64,
    /// Simulated time of the checkpoint, ps.
    pub sim_ps: u64,
    /// Resumes before this one.
    pub resumes: u32,
}

/// Builds, runs and writes one simulation as one rank of `comm`.
pub fn execute_with(
    scn: &Scenario,
    opts: SimOptions,
    out: &Path,
    force: bool,
    progress: &mut dyn FnMut(Progress),
    comm: Box<dyn Comm>,
) -> Result<RunOutcome, RunError> {
    execute_checkpointed(
        scn,
        opts,
        out,
        force,
        progress,
        comm,
        Checkpointing::default(),
    )
}

/// [`execute_with`], taking checkpoints, or resuming from one: then the
/// output directory holds the checkpoint and is not prepared again.
pub fn execute_checkpointed(
    scn: &Scenario,
    opts: SimOptions,
    out: &Path,
    force: bool,
    progress: &mut dyn FnMut(Progress),
    comm: Box<dyn Comm>,
    mut ckpt: Checkpointing,
) -> Result<RunOutcome, RunError> {
    // Record and replay: the original runs first, here, writing nothing;
    // then this run is the replay (`replay.rs`).
    let replay = match &scn.replay {
        None => None,
        Some(spec) => {
            if comm.size() > 1 || ckpt.resume.is_some() {
                return Err(RunError::Replay(
                    "replay: a [replay] scenario runs in one process and cannot resume from a checkpoint".into(),
                ));
            }
            // Neither run takes checkpoints: the record lives in memory.
            ckpt.policy = None;
            let table = match &spec.from_record {
                Some(dir) => recorded(scn, dir)?,
                None => record(scn, opts, spec, progress)?,
            };
            Some((spec.clone(), std::sync::Arc::new(table)))
        }
    };
    let replay_scn = replay
        .as_ref()
        .map(|(spec, _)| crate::replay::replay_scenario(scn, spec));
    let mut sim = Simulation::with_comm(replay_scn.as_ref().unwrap_or(scn), opts, comm)?;
    if let Some((spec, table)) = &replay {
        sim.set_replay(|| crate::replay::ShardReplay::Replay {
            table: table.clone(),
            stamp: spec.stamp(),
            threshold_ps: spec.threshold_ps,
            counts: Default::default(),
        });
    }
    let (rank, ranks) = sim.rank();
    if ranks > 1 && scn.trace.queues.as_ref().map(|q| q.format) == Some(QueueFormat::Hdf5) {
        // One dense file would need the series gathered on one rank.
        return Err(RunError::Trace(format!(
            "trace.queues.format = \"hdf5\" is not supported with {ranks} MPI ranks; use format = \"parquet\""
        )));
    }
    let log = ckpt.policy.as_ref().is_some_and(|p| p.log);
    if let Some(p) = ckpt.policy {
        sim.set_checkpoints(p);
    }
    if let Some(r) = &ckpt.resume {
        let started = std::time::Instant::now();
        let restored = sim.restore(&r.set, r.hash);
        if sim.any_rank_failed(restored.is_err()) {
            restored?;
            return Err(RunError::RemoteOutput { rank });
        }
        if rank == 0 && log {
            eprintln!(
                "resumed from {}: {} bytes (rank 0) read in {:.2} s",
                r.set.display(),
                restored.unwrap_or(0),
                started.elapsed().as_secs_f64()
            );
        }
    } else {
        let prepared = if rank == 0 {
            trace::prepare_out_dir(out, force)
        } else {
            Ok(())
        };
        if sim.any_rank_failed(prepared.is_err()) {
            prepared?;
            return Err(RunError::RemoteOutput { rank });
        }
    }
    let summary = sim.run(progress)?;
    let wall_s = summary.ranks.iter().map(|r| r.wall_s).fold(0.0, f64::max);
    let records = sim.flow_records()?;
    let mut written: Result<(), OutputError> = Ok(());
    let (mut started, mut finished) = (0u64, 0u64);
    for (shard, recs) in &records {
        started += recs.len() as u64;
        finished += recs.iter().filter(|r| r.finish_ps.is_some()).count() as u64;
        if written.is_ok() {
            written = trace::write_flows_part(out, *shard, recs).map(|_| ());
        }
    }
    if let Some((_, table)) = replay.as_ref().filter(|(s, _)| s.write_record) {
        if written.is_ok() {
            written = trace::write_record_part(out, table.rows()).map(|_| ());
        }
    }
    if sim.any_rank_failed(written.is_err()) {
        written?;
        return Err(RunError::RemoteOutput { rank });
    }
    let traced = write_traces(scn, &mut sim, out, summary.sim_end_ps);
    if sim.any_rank_failed(traced.is_err()) {
        traced?;
        return Err(RunError::RemoteOutput { rank });
    }
    let h5_ports = traced.unwrap_or(0);
    let groups = sim.completed_groups();
    let totals = sim_totals(&mut sim, started, finished);
    let mut names: Vec<String> = (0..opts.shards)
        .map(|s| format!("{}/part-{s:05}.parquet", trace::FLOWS_DIR))
        .collect();
    names.extend(trace_parts(scn, opts.shards));
    if replay.as_ref().is_some_and(|(s, _)| s.write_record) {
        names.push(trace::RECORD.part_name(0));
    }
    // Every part is closed (and every rank's written, by the verdicts above):
    // rank 0 reads each back for its row count and checksum.
    let parts: Result<Vec<trace::PartEntry>, OutputError> = if rank == 0 {
        names
            .iter()
            .map(|n| trace::describe_part(out, n, h5_ports))
            .collect()
    } else {
        Ok(Vec::new())
    };
    if sim.any_rank_failed(parts.is_err()) {
        parts?;
        return Err(RunError::RemoteOutput { rank });
    }
    let parts = parts.unwrap_or_default();
    let mut ports = serde_json::json!(summary.ports);
    ports["paused_ps_by_priority"] = serde_json::json!(summary.paused_ps_by_priority);
    let mut packets = serde_json::json!({
        "created": summary.packets.created,
        "delivered": summary.packets.delivered,
        "dropped": summary.packets.dropped,
        "lost_on_link": summary.packets.lost_on_link,
        "frames_sent": summary.packets.frames_sent,
        "frames_received": summary.packets.frames_received,
        "queued": summary.queued,
        "in_flight": summary.in_flight,
        "conserved": summary.conserved(),
        "ports": ports,
        "pulls": summary.pulls,
        "events_per_shard": summary.events_per_shard,
        "events_by_kind": events_by_kind(&summary.event_counts),
        "windows": summary.windows,
        "window_order": if summary.entity_major { "entity" } else { "time" },
        "ranks": summary.ranks,
    });
    if let Some((spec, table)) = &replay {
        let counts = crate::replay::counts_of(&sim.take_replay());
        let report = crate::replay::ReplayReport::new(scn, spec, table.len() as u64, &counts);
        packets["replay"] = serde_json::json!(report);
    }
    if let Some(chip) = summary.tofino {
        // Only runs with a Tofino chip (`[switch.tofino]`) carry its counters.
        packets["tofino"] = serde_json::json!(chip);
    }
    let manifest = Manifest {
        psim_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: trace::git_commit(),
        scenario_path: scn.path.display().to_string(),
        config: scn.resolved_json(),
        seed: scn.seed,
        ranks,
        shards: opts.shards,
        threads: opts.threads,
        lookahead_ps: sim.lookahead_ps(),
        sim_end_ps: summary.sim_end_ps,
        events: summary.events,
        wall_s,
        events_per_s: summary.events as f64 / wall_s.max(1e-9),
        peak_rss_bytes: summary.ranks.iter().filter_map(|r| r.peak_rss_bytes).max(),
        flows_started: totals.0,
        flows_finished: totals.1,
        packets,
        parts,
        groups: groups
            .into_iter()
            .map(|g| trace::GroupRecord {
                entry: g.entry,
                name: g.name,
                instance: g.instance,
                completed_ps: g.completed_ps,
            })
            .collect(),
        resumed_from_ps: ckpt.resume.as_ref().map(|r| r.sim_ps),
        resumes: ckpt.resume.as_ref().map_or(0, |r| r.resumes + 1),
        complete: true,
    };
    let wrote = if rank == 0 {
        trace::write_manifest(out, &manifest).map(|_| ())
    } else {
        Ok(())
    };
    if sim.any_rank_failed(wrote.is_err()) {
        wrote?;
        return Err(RunError::RemoteOutput { rank });
    }
    if rank == 0 {
        // The run is complete: its checkpoints are of no further use.
        let _ = std::fs::remove_dir_all(out.join(checkpoint::CHECKPOINT_DIR));
    }
    Ok(RunOutcome { summary, manifest })
}

/// Runs the original schedule of a `[replay]` scenario in this process and
/// returns its record.
fn record(
    scn: &Scenario,
    opts: SimOptions,
    spec: &crate::replay::ReplaySpec,
    progress: &mut dyn FnMut(Progress),
) -> Result<crate::replay::Table, RunError> {
    let mut sim = Simulation::new(scn, opts)?;
    let max = spec.max_packets;
    sim.set_replay(|| crate::replay::ShardReplay::Record {
        rows: Vec::new(),
        max,
    });
    sim.run(progress)?;
    crate::replay::table_of(sim.take_replay(), max).map_err(|m| {
        RunError::Replay(format!(
            "replay.max_packets = {m}: the original delivered more data packets; raise it or shorten the run"
        ))
    })
}

/// The record a run wrote to `dir` (`[replay] from_record`), checked
/// against this scenario's topology.
fn recorded(scn: &Scenario, dir: &Path) -> Result<crate::replay::Table, RunError> {
    let name = || format!("replay.from_record = {:?}", dir.display().to_string());
    let rows = trace::read_record(dir).map_err(|e| RunError::Replay(format!("{}: {e}", name())))?;
    crate::replay::check_record(&rows, &scn.topology).map_err(|e| {
        RunError::Replay(format!(
            "{}: does not match this scenario's topology: {e}",
            name()
        ))
    })?;
    Ok(crate::replay::Table::new(rows))
}

/// Flows started and finished, summed over ranks.
fn sim_totals(sim: &mut Simulation, started: u64, finished: u64) -> (u64, u64) {
    let v = sim.sum_over_ranks(&[started, finished]);
    (v[0], v[1])
}

/// Ends the trace recorders and writes what this rank's shards recorded: a
/// packets part and a queues part per shard, or one `queues.h5` (single rank
/// only). The row limit of the packet trace is checked on the run's total,
/// which every rank learns, so all ranks fail together. Returns the number of
/// ports in `queues.h5` (0 without it): its row count in the manifest.
fn write_traces(
    scn: &Scenario,
    sim: &mut Simulation,
    out: &Path,
    sim_end_ps: u64,
) -> Result<u64, RunError> {
    let outputs = sim.finish_traces(sim_end_ps);
    if let Some(f) = &scn.trace.packets {
        let seen: u64 = outputs
            .iter()
            .filter_map(|(_, t)| t.packets.as_ref().map(|p| p.1))
            .sum();
        if sim.sum_over_ranks(&[seen])[0] > f.max_rows {
            return Err(
                SimError::from(crate::engine::shard::ShardError::TraceTooLarge {
                    max_rows: f.max_rows,
                })
                .into(),
            );
        }
    }
    let format = scn.trace.queues.as_ref().map(|q| q.format);
    let mut dense = Vec::new();
    for (shard, t) in outputs {
        if let Some((rows, _)) = &t.packets {
            trace::write_packets_part(out, shard, rows)?;
        }
        if let (Some(series), Some(q)) = (t.queues, &scn.trace.queues) {
            match q.format {
                QueueFormat::Parquet => {
                    trace::write_queues_part(out, shard, q.interval_ps, &series)?;
                }
                QueueFormat::Hdf5 => dense.extend(series),
            }
        }
    }
    if format == Some(QueueFormat::Hdf5) {
        write_h5(scn, out, sim_end_ps, &dense)?;
    }
    if scn.trace.tofino {
        for (shard, rows) in sim.chip_traces(sim_end_ps) {
            trace::write_tofino_part(out, shard, &rows)?;
        }
    }
    Ok(dense.len() as u64)
}

#[cfg(feature = "hdf5")]
fn write_h5(
    scn: &Scenario,
    out: &Path,
    sim_end_ps: u64,
    series: &[trace::PortSeries],
) -> Result<(), RunError> {
    let meta = trace::hdf5::H5Meta {
        scenario: scn.file.name.clone().unwrap_or_default(),
        seed: scn.seed,
        interval_ps: scn.trace.queues.as_ref().map_or(1, |q| q.interval_ps),
        sim_end_ps,
    };
    trace::hdf5::write_queues_h5(out, &meta, series)?;
    Ok(())
}

#[cfg(not(feature = "hdf5"))]
fn write_h5(_: &Scenario, _: &Path, _: u64, _: &[trace::PortSeries]) -> Result<(), RunError> {
    // Unreachable in practice: the scenario is refused at load time.
    Err(RunError::Trace(
        "trace.queues.format = \"hdf5\": this psim was built without HDF5 support".into(),
    ))
}

/// Manifest entries of the trace files a run with `shards` shards writes.
fn trace_parts(scn: &Scenario, shards: u32) -> Vec<String> {
    let mut v = Vec::new();
    if scn.trace.packets.is_some() {
        v.extend((0..shards).map(|s| trace::PACKETS.part_name(s)));
    }
    match scn.trace.queues.as_ref().map(|q| q.format) {
        Some(QueueFormat::Parquet) => v.extend((0..shards).map(|s| trace::QUEUES.part_name(s))),
        Some(QueueFormat::Hdf5) => v.push("queues.h5".into()),
        None => {}
    }
    if scn.trace.tofino {
        v.extend((0..shards).map(|s| trace::TOFINO.part_name(s)));
    }
    v
}

/// The events by kind as a JSON object keyed by kind name (the manifest's
/// `packets.events_by_kind`).
fn events_by_kind(c: &crate::engine::event::EventCounts) -> serde_json::Value {
    crate::engine::event::EventCounts::NAMES
        .iter()
        .zip(c.0)
        .map(|(n, v)| (n.to_string(), serde_json::json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}
