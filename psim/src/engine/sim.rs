//! The window loop.
//!
//! Each round: hand packets and flow completions that crossed shards to their
//! owners; take `T`, the earliest pending work over all shards; let every shard
//! process its events before `T + L` in parallel, `L` being the lookahead (the
//! smallest propagation delay of any link between shards). A packet sent at
//! `t >= T` over a cut link arrives at `t + delay >= T + L`, so no shard can
//! receive anything inside a window it is processing. Idle stretches cost
//! nothing: `T` jumps straight to the next real event.
//!
//! Across MPI ranks the loop is the same: each rank holds only its own
//! shards, packets for other ranks' shards are aggregated per destination
//! rank and exchanged once per window ([`Comm::all_to_all`]), notices are
//! gathered, and `T` is an allreduce. With one process, [`SingleProcess`]
//! makes those collectives identities.

use super::comm::{Comm, SingleProcess};
use super::shard::{PacketCounters, Shard, ShardError, Shared};
use super::stall;
use super::wire;
use crate::config::Scenario;
use crate::net::Message;
use crate::net::PortCounters;
use rayon::prelude::*;
use std::sync::Arc;

mod outputs;

/// With one shard nothing is cut and the window is unbounded; a window this
/// long still returns control regularly for progress reports. It does not
/// change results.
const MAX_WINDOW_PS: u64 = 10_000_000;

/// The length of every window: the lookahead (None when nothing is cut),
/// and never longer than the notice delay, since completion notices are due
/// one notice delay after their flow ends, even with a single shard.
fn window_ps(lookahead: Option<u64>, notice_ps: u64) -> u64 {
    lookahead.unwrap_or(MAX_WINDOW_PS).min(notice_ps)
}

/// A window that follows one with fewer events than this runs on the calling
/// thread, not the pool: at about 0.5 µs per event, two threads save less
/// than the 10–20 µs that waking the pool and waiting for it cost.
const SERIAL_WINDOW_EVENTS: u64 = 256;

/// Cross-shard packets at a boundary from which the shards file them in
/// parallel: about 50 ns each against 10–20 µs to wake the pool.
const PARALLEL_MAIL: usize = 1024;

/// Errors while building or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The partition is impossible (e.g. a zero-delay cut link).
    #[error("partition: {0}")]
    Partition(#[from] partition::PartitionError),
    /// Shard and thread counts.
    #[error("{0}")]
    Options(String),
    /// A model error while running.
    #[error("{0}")]
    Model(#[from] ShardError),
    /// Another rank reported an error (it prints its own message).
    #[error("rank {rank}: stopping because another rank failed")]
    Remote {
        /// This rank.
        rank: u32,
    },
    /// A cross-rank buffer could not be decoded.
    #[error(transparent)]
    Wire(#[from] wire::WireError),
    /// The run stopped making progress: nothing reached a host for the
    /// watchdog's span while events went on, or nothing was left to do with
    /// packets held by PFC pauses.
    #[error("{0}")]
    Stalled(String),
    /// A checkpoint could not be written.
    #[error("{0}")]
    Checkpoint(String),
    /// The run stopped after a checkpoint, as asked (`--checkpoint-and-exit`).
    #[error("stopped after a checkpoint at {} s of simulated time; continue with psim resume", *sim_ps as f64 / 1e12)]
    Checkpointed {
        /// Simulated time of the checkpoint, ps.
        sim_ps: u64,
    },
    /// The thread pool could not start.
    #[error("cannot start {threads} worker threads: {message}")]
    Threads {
        /// Requested threads.
        threads: u32,
        /// Cause.
        message: String,
    },
}

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct SimOptions {
    /// Number of shards (partitions of the network).
    pub shards: u32,
    /// Number of worker threads.
    pub threads: u32,
}

/// A progress report, given once per window.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time reached.
    pub sim_ps: u64,
    /// Stop time, if known.
    pub stop_ps: Option<u64>,
    /// Events processed so far.
    pub events: u64,
    /// Flows started so far, and how many of them finished.
    pub flows: (u64, u64),
    /// Whether the counts cover only this rank's shards (an MPI run).
    pub partial: bool,
}

/// What a finished run reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunSummary {
    /// Simulated time at the end.
    pub sim_end_ps: u64,
    /// Events processed.
    pub events: u64,
    /// Events processed by each shard.
    pub events_per_shard: Vec<u64>,
    /// Events processed, by kind (they sum to `events`).
    pub event_counts: super::event::EventCounts,
    /// Windows run.
    pub windows: u64,
    /// Whether the windows ran entity by entity (docs/engine.md,
    /// "Entity-major windows"); false: by time.
    pub entity_major: bool,
    /// Packet counters over the whole network.
    pub packets: PacketCounters,
    /// Packets still in queues at the end.
    pub queued: u64,
    /// Packets still on wires at the end.
    pub in_flight: u64,
    /// Port counters summed over every port.
    pub ports: PortCounters,
    /// Time ports spent paused, per priority, summed over every port, ps
    /// (they sum to `ports.paused_ps`).
    pub paused_ps_by_priority: [u64; 8],
    /// Pull pacers summed over every host (NDP, pHost).
    pub pulls: crate::transport::PullStats,
    /// Per-rank figures, in rank order.
    pub ranks: Vec<RankFigures>,
    /// The Tofino chips' counters summed over every chip (None: no chip).
    pub tofino: Option<crate::net::tofino::ChipCounters>,
}

/// What one rank did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct RankFigures {
    /// Rank.
    pub rank: u32,
    /// Shards it ran.
    pub shards: u32,
    /// Events it processed.
    pub events: u64,
    /// Wall time of its window loop, seconds.
    pub wall_s: f64,
    /// Bytes it sent to other ranks.
    pub bytes_sent: u64,
    /// Time spent in collectives (waiting at window barriers), seconds.
    pub wait_s: f64,
    /// Its peak resident memory, bytes.
    pub peak_rss_bytes: Option<u64>,
}

impl RunSummary {
    /// Whether every packet is accounted for: created = delivered, dropped,
    /// queued or in flight, where link-level frames (PFC) count as created
    /// when sent and delivered when received.
    pub fn conserved(&self) -> bool {
        let p = &self.packets;
        p.created + p.frames_sent
            == p.delivered + p.frames_received + p.dropped + self.queued + self.in_flight
    }
}

/// A simulation built from a scenario: this rank's shards.
pub struct Simulation {
    pub(super) shards: Vec<Shard>,
    shared: Arc<Shared>,
    pub(super) pool: rayon::ThreadPool,
    pub(super) comm: Box<dyn Comm>,
    rank_of_shard: Vec<u32>,
    /// Index in `shards` of each global shard this rank runs (None elsewhere).
    local_of: Vec<Option<usize>>,
    lookahead: Option<u64>,
    report: partition::Report,
    pub(super) windows: u64,
    pub(super) now: u64,
    wall: std::time::Duration,
    pub(super) opts: SimOptions,
    fault_after_windows: Option<u64>,
    /// The watchdog's last count of packets that reached hosts, and when.
    pub(super) watch: (u64, u64),
    /// When to write checkpoints (None: never).
    pub(super) checkpoints: Option<super::checkpoint::Policy>,
    /// Packets between shards at a window boundary: `mail[d][s]` holds what
    /// local shard `s` sent local shard `d`, and `mail[d][shards]` what came
    /// from other ranks. The lists swap with the shards' outboxes, so no
    /// packet is copied on the way and no list is allocated per window
    /// (8 MiB less at the peak of a 4-shard CBR run at k = 16).
    mail: Vec<Vec<Vec<Message>>>,
}

impl Simulation {
    /// Partitions the network and builds every shard, in one process.
    pub fn new(scn: &Scenario, opts: SimOptions) -> Result<Simulation, SimError> {
        Self::with_comm(scn, opts, Box::new(SingleProcess))
    }

    /// Partitions the network and builds the shards of this rank of `comm`.
    /// Shards go to ranks in contiguous blocks; every rank keeps O(entities)
    /// shared metadata (shard and port index of each entity) and builds only
    /// its own entities.
    pub fn with_comm(
        scn: &Scenario,
        opts: SimOptions,
        comm: Box<dyn Comm>,
    ) -> Result<Simulation, SimError> {
        if opts.shards == 0 || opts.threads == 0 {
            return Err(SimError::Options(
                "--shards and --threads must be at least 1".into(),
            ));
        }
        let rank_of_shard = partition::rank_of_shards(opts.shards, comm.size())?;
        let topo = scn.topology.clone();
        let graph = topo.partition_graph();
        let part = partition::partition(&graph, opts.shards)?;
        let report = part.report(&graph)?;
        // Completion notices travel one maximum link delay by default: that
        // bounds the lookahead of every possible partition, so windows keep
        // the lookahead. `run.notice_delay_us` sets another delay; windows
        // never exceed it, so a notice is never due inside a running window,
        // and the delay never depends on the partition.
        let longest = graph.links.iter().map(|l| l.delay_ps).max().unwrap_or(0);
        if longest == 0 {
            return Err(SimError::Options(
                "every link has zero latency: psim needs a positive propagation delay".into(),
            ));
        }
        let notice_ps = scn.notice_ps.unwrap_or(longest);
        // Entity-major windows need every link, cut or not, to take at
        // least a window to cross.
        let shortest = graph.links.iter().map(|l| l.delay_ps).min().unwrap_or(0);
        let entity_major = scn.file.run.window_order != Some(crate::config::WindowOrder::Time)
            && shortest > 0
            && window_ps(report.lookahead_ps, notice_ps) <= shortest;
        let n = topo.entities() as usize;
        let mut in_base = vec![0u32; n];
        let mut local = vec![0u32; n];
        let members: Vec<Vec<u32>> = (0..opts.shards).map(|s| part.members(s)).collect();
        for m in &members {
            let mut base = 0u32;
            for (i, &e) in m.iter().enumerate() {
                in_base[e as usize] = base;
                local[e as usize] = i as u32;
                base += topo.port_count(e) as u32;
            }
        }
        let shared = Arc::new(Shared {
            topo,
            shard_of: part.shard_of.clone(),
            in_base,
            local,
            protocols: scn.protocols.clone(),
            traffic_protocols: scn.traffic_protocols.clone(),
            traffic_apps: scn.traffic_apps.clone(),
            traffic_reads: scn.traffic_reads.clone(),
            seed: scn.seed,
            stop_ps: scn.stop_ps,
            watchdog_ps: scn.watchdog_ps,
            notice_ps,
            entity_major,
        });
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads as usize)
            .build()
            .map_err(|e| SimError::Threads {
                threads: opts.threads,
                message: e.to_string(),
            })?;
        let me = comm.rank();
        let mine: Vec<u32> = (0..opts.shards)
            .filter(|&s| rank_of_shard[s as usize] == me)
            .collect();
        let shards: Vec<Shard> = pool.install(|| {
            mine.par_iter()
                .map(|&s| Shard::new(s, opts.shards, &members[s as usize], shared.clone(), scn))
                .collect()
        });
        // Fault injection for the failure-path test: PSIM_FAULT_RANK=r makes
        // rank r exit abruptly after its first window, like a crashed node.
        let fault_after_windows = std::env::var("PSIM_FAULT_RANK")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&r| r == me)
            .map(|_| 1);
        // `shards` holds this rank's shards in ascending global order (`mine`).
        let mut local_of = vec![None; opts.shards as usize];
        for (i, &s) in mine.iter().enumerate() {
            local_of[s as usize] = Some(i);
        }
        Ok(Simulation {
            shards,
            shared,
            pool,
            comm,
            rank_of_shard,
            local_of,
            lookahead: report.lookahead_ps,
            report,
            windows: 0,
            now: 0,
            wall: std::time::Duration::ZERO,
            opts,
            fault_after_windows,
            watch: (0, 0),
            checkpoints: None,
            mail: (0..mine.len())
                .map(|_| (0..=mine.len()).map(|_| Vec::new()).collect())
                .collect(),
        })
    }

    /// The lookahead (None when nothing is cut).
    pub fn lookahead_ps(&self) -> Option<u64> {
        self.lookahead
    }

    /// The partition report.
    pub fn partition_report(&self) -> &partition::Report {
        &self.report
    }

    /// Options the simulation was built with.
    pub fn options(&self) -> SimOptions {
        self.opts
    }

    /// This process's rank and the number of ranks.
    pub fn rank(&self) -> (u32, u32) {
        (self.comm.rank(), self.comm.size())
    }

    /// Global ids of the shards this rank runs.
    pub fn local_shards(&self) -> Vec<u32> {
        self.shards.iter().map(|s| s.id).collect()
    }

    /// Whether any rank reports a failure (`local_failed` is this rank's own verdict).
    pub fn any_rank_failed(&mut self, local_failed: bool) -> bool {
        self.comm.all_min(&[u64::from(!local_failed)])[0] == 0
    }

    /// Element-wise sums over ranks.
    pub fn sum_over_ranks(&mut self, v: &[u64]) -> Vec<u64> {
        self.comm.all_sum(v)
    }

    /// Hands over cross-shard packets and flow completions, locally and across ranks.
    fn exchange(&mut self) -> Result<(), SimError> {
        let ranks = self.comm.size() as usize;
        let me = self.comm.rank();
        let mut remote: Vec<Vec<u8>> = vec![Vec::new(); ranks];
        let mut notices: Vec<(u64, u64)> = Vec::new();
        let (local_of, mail) = (&self.local_of, &mut self.mail);
        for (i, s) in self.shards.iter_mut().enumerate() {
            for (d, out) in s.outbox.iter_mut().enumerate() {
                let r = self.rank_of_shard[d];
                if r == me {
                    // The list received last window is empty, with its room.
                    std::mem::swap(&mut mail[local_of[d].expect("local shard")][i], out);
                } else {
                    for m in out.drain(..) {
                        wire::put_message(&m, &mut remote[r as usize]);
                    }
                }
            }
            notices.append(&mut s.finished_out);
        }
        if ranks > 1 {
            let from_ranks = self.shards.len();
            for buf in self.comm.all_to_all(remote) {
                for m in wire::get_messages(&buf)? {
                    let d = self.shared.shard_of[m.dst as usize] as usize;
                    mail[local_of[d].ok_or_else(|| {
                        wire::WireError(format!("packet for shard {d} on the wrong rank"))
                    })?][from_ranks]
                        .push(m);
                }
            }
            let mine = wire::put_notices(&notices);
            notices.clear();
            for buf in self.comm.all_gather(mine) {
                notices.extend(wire::get_notices(&buf)?);
            }
        }
        let deliver = |(s, lists): (&mut Shard, &mut Vec<Vec<Message>>)| {
            for m in lists.iter_mut().flat_map(|l| l.drain(..)) {
                s.receive(m);
            }
            for &(due, flow) in &notices {
                s.schedule_notice(due, flow);
            }
        };
        // Each shard files its own mail, so with a pool they do it in
        // parallel: the filing touches the receiver's wires and calendar,
        // which are cold in the sender's cache anyway. A few messages are
        // filed here, as waking the pool costs more than they do.
        let letters: usize = mail.iter().flatten().map(Vec::len).sum();
        if self.pool.current_num_threads() > 1 && letters >= PARALLEL_MAIL {
            self.pool.install(|| {
                self.shards
                    .par_iter_mut()
                    .zip(mail.par_iter_mut())
                    .for_each(deliver)
            });
        } else {
            self.shards
                .iter_mut()
                .zip(mail.iter_mut())
                .for_each(deliver);
        }
        Ok(())
    }

    /// Runs to the stop time, or until nothing is left to do.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<RunSummary, SimError> {
        let started = std::time::Instant::now();
        let stop = self.shared.stop_ps.unwrap_or(u64::MAX);
        let window = window_ps(self.lookahead, self.shared.notice_ps);
        // Events the last window processed on this rank: a quiet window
        // predicts a quiet next one, which this thread runs itself.
        let mut last_window_events = 0;
        loop {
            self.exchange()?;
            // One allreduce: the earliest work anywhere, and whether any rank failed.
            let failed = self.shards.iter().any(|s| s.error.is_some());
            let t_local = self
                .shards
                .iter_mut()
                .filter_map(Shard::next_time)
                .min()
                .unwrap_or(u64::MAX);
            // Checkpoint wishes ride on the same allreduce: any rank's wish
            // (a signal, its timer) makes every rank write at this boundary.
            let w = super::checkpoint::wishes(&mut self.checkpoints);
            let g = self
                .comm
                .all_min(&[t_local, u64::from(!failed), w[0], w[1]]);
            if g[1] == 0 {
                return Err(self.local_error());
            }
            let t = g[0];
            if t == u64::MAX && self.sum_over_ranks(&[self.queued_local()])[0] > 0 {
                if let Some(msg) = self.pause_report() {
                    return Err(SimError::Stalled(format!(
                        "PFC deadlock: no event is left and packets wait behind paused ports: {msg}"
                    )));
                }
            }
            if t == u64::MAX || t >= stop {
                break;
            }
            // Here no packet is between shards: the state a checkpoint holds.
            if g[2] == 0 && (self.take_checkpoint()? || g[3] == 0) {
                return Err(SimError::Checkpointed { sim_ps: self.now });
            }
            if let Some(span) = self.shared.watchdog_ps {
                if self.windows.is_multiple_of(stall::WATCHDOG_WINDOWS) {
                    let now = self.sum_over_ranks(&[self.delivered_local()])[0];
                    if now != self.watch.0 || self.windows == 0 {
                        self.watch = (now, self.now);
                    } else if t.saturating_sub(self.watch.1) > span {
                        return Err(self.stalled(span, self.watch.1));
                    }
                }
            }
            let end = t.saturating_add(window).min(stop);
            let before = self.events();
            if self.pool.current_num_threads() == 1
                || self.shards.len() == 1
                || last_window_events < SERIAL_WINDOW_EVENTS
            {
                // Run the shards here, in order. Handing the window to the
                // pool costs two thread switches (a futex wake and wait), which
                // dominates runs with short lookaheads and few events per
                // window. Shards are independent within a window, so who runs
                // them changes nothing but the wall time.
                for s in &mut self.shards {
                    s.run_window(end);
                }
            } else {
                self.pool
                    .install(|| self.shards.par_iter_mut().for_each(|s| s.run_window(end)));
            }
            last_window_events = self.events() - before;
            self.windows += 1;
            self.now = end;
            if self.fault_after_windows == Some(self.windows) {
                eprintln!(
                    "error: rank {}: injected failure (PSIM_FAULT_RANK)",
                    self.comm.rank()
                );
                std::process::exit(3);
            }
            if self.comm.rank() == 0 {
                progress(Progress {
                    sim_ps: end,
                    stop_ps: self.shared.stop_ps,
                    events: self.events(),
                    flows: self
                        .shards
                        .iter()
                        .fold((0, 0), |(a, b), s| (a + s.flows.0, b + s.flows.1)),
                    partial: self.comm.size() > 1,
                });
            }
        }
        for s in &mut self.shards {
            s.settle_deferred();
        }
        // The end time is a property of the simulated system: the stop time, or
        // the last event processed. Window ends depend on the partition.
        self.now = match self.shared.stop_ps {
            Some(s) => s,
            None => {
                let last = self
                    .shards
                    .iter()
                    .map(|s| s.last_event_ps)
                    .max()
                    .unwrap_or(0);
                u64::MAX - self.comm.all_min(&[u64::MAX - last])[0]
            }
        };
        self.wall = started.elapsed();
        Ok(self.summary())
    }

    fn queued_local(&self) -> u64 {
        self.shards.iter().map(Shard::queued_packets).sum()
    }

    fn delivered_local(&self) -> u64 {
        self.shards.iter().map(|s| s.counters.delivered).sum()
    }

    /// The watchdog's error: what is known about why nothing arrives.
    fn stalled(&mut self, span: u64, since: u64) -> SimError {
        let why = match self.pause_report() {
            Some(msg) => format!("; packets wait behind PFC pauses: {msg}"),
            None => "; check that every queue holds at least one full packet \
                     (switch.queue.queue_bytes, host.queue.queue_bytes) and that flows can finish"
                .to_string(),
        };
        SimError::Stalled(format!(
            "no packet reached a host for {} s of simulated time after {} s (run.watchdog_s){why}",
            span as f64 / 1e12,
            since as f64 / 1e12,
        ))
    }

    /// The ports held by PFC pauses with packets waiting, over every rank,
    /// as one line: a cycle of pauses if there is one (a PFC deadlock),
    /// else the first few held ports. None if no port is held.
    fn pause_report(&mut self) -> Option<String> {
        let mut mine = Vec::new();
        for s in &self.shards {
            for (e, p, peer, n) in s.paused_ports() {
                for w in [e, p as u32, peer, n] {
                    mine.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
        let mut held: Vec<stall::Held> = Vec::new();
        for buf in self.comm.all_gather(mine) {
            for c in buf.chunks_exact(16) {
                let w = |i: usize| u32::from_le_bytes(c[i..i + 4].try_into().expect("4 bytes"));
                held.push((w(0), w(4) as u16, w(8), w(12)));
            }
        }
        stall::describe(held, &self.shared.topo)
    }

    fn local_error(&self) -> SimError {
        match self.shards.iter().find_map(|s| s.error.clone()) {
            Some(e) => e.into(),
            None => SimError::Remote {
                rank: self.comm.rank(),
            },
        }
    }

    fn events(&self) -> u64 {
        self.shards.iter().map(|s| s.events_processed).sum()
    }
}
