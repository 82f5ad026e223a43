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
use super::shard::{PacketCounters, Shard, ShardError, Shared, SourceRow};
use super::stall;
use super::wire;
use crate::config::Scenario;
use crate::net::Message;
use crate::net::PortCounters;
use crate::trace::FlowRecord;
use crate::transport::SinkStats;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// With one shard nothing is cut and the window is unbounded; a window this
/// long still returns control regularly for progress reports. It does not
/// change results.
const MAX_WINDOW_PS: u64 = 10_000_000;

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
    /// Packet counters over the whole network.
    pub packets: PacketCounters,
    /// Packets still in queues at the end.
    pub queued: u64,
    /// Packets still on wires at the end.
    pub in_flight: u64,
    /// Port counters summed over every port.
    pub ports: PortCounters,
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
        // Completion notices travel one maximum link delay: that bounds the
        // lookahead of every possible partition, so the delay never depends on
        // the partition and a notice is never due inside a running window.
        let notice_ps = graph.links.iter().map(|l| l.delay_ps).max().unwrap_or(0);
        if notice_ps == 0 {
            return Err(SimError::Options(
                "every link has zero latency: psim needs a positive propagation delay".into(),
            ));
        }
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
            seed: scn.seed,
            stop_ps: scn.stop_ps,
            watchdog_ps: scn.watchdog_ps,
            notice_ps,
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
        let mut mail: Vec<Vec<Message>> = (0..self.shards.len()).map(|_| Vec::new()).collect();
        let mut remote: Vec<Vec<u8>> = vec![Vec::new(); ranks];
        let mut notices: Vec<(u64, u64)> = Vec::new();
        let local_of = &self.local_of;
        for s in &mut self.shards {
            for (d, out) in s.outbox.iter_mut().enumerate() {
                let r = self.rank_of_shard[d];
                if r == me {
                    mail[local_of[d].expect("local shard")].append(out);
                } else {
                    for m in out.drain(..) {
                        wire::put_message(&m, &mut remote[r as usize]);
                    }
                }
            }
            notices.append(&mut s.finished_out);
        }
        if ranks > 1 {
            for buf in self.comm.all_to_all(remote) {
                for m in wire::get_messages(&buf)? {
                    let d = self.shared.shard_of[m.dst as usize] as usize;
                    mail[local_of[d].ok_or_else(|| {
                        wire::WireError(format!("packet for shard {d} on the wrong rank"))
                    })?]
                    .push(m);
                }
            }
            let mine = wire::put_notices(&notices);
            notices.clear();
            for buf in self.comm.all_gather(mine) {
                notices.extend(wire::get_notices(&buf)?);
            }
        }
        for (s, msgs) in self.shards.iter_mut().zip(mail) {
            for m in msgs {
                s.receive(m);
            }
            for &(due, flow) in &notices {
                s.schedule_notice(due, flow);
            }
        }
        Ok(())
    }

    /// Runs to the stop time, or until nothing is left to do.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<RunSummary, SimError> {
        let started = std::time::Instant::now();
        let stop = self.shared.stop_ps.unwrap_or(u64::MAX);
        // Completion notices are due one notice delay after the flow ends, so no
        // window may be longer than that, even with a single shard.
        let window = self
            .lookahead
            .unwrap_or(MAX_WINDOW_PS)
            .min(self.shared.notice_ps);
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
            self.pool
                .install(|| self.shards.par_iter_mut().for_each(|s| s.run_window(end)));
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

    fn summary(&mut self) -> RunSummary {
        let mut packets = PacketCounters::default();
        let mut ports = PortCounters::default();
        for s in &self.shards {
            packets.created += s.counters.created;
            packets.delivered += s.counters.delivered;
            packets.dropped += s.counters.dropped;
            packets.frames_sent += s.counters.frames_sent;
            packets.frames_received += s.counters.frames_received;
            packets.lost_on_link += s.counters.lost_on_link;
            ports += s.port_totals();
        }
        let pulls = self.pull_stats().into_iter().fold(
            crate::transport::PullStats::default(),
            |mut t, (_, p)| {
                t.sent += p.sent;
                t.gaps += p.gaps;
                t.gaps_at_interval += p.gaps_at_interval;
                t.min_gap_ps = match (t.min_gap_ps, p.min_gap_ps) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                t.interval_ps = t.interval_ps.max(p.interval_ps);
                t
            },
        );
        let queued: u64 = self.shards.iter().map(Shard::queued_packets).sum();
        let in_flight: u64 = self.shards.iter().map(Shard::in_flight_packets).sum();
        // Sum everything over ranks in one allreduce.
        let local = [
            packets.created,
            packets.delivered,
            packets.dropped,
            queued,
            in_flight,
            ports.enqueued,
            ports.enqueued_bytes,
            ports.dequeued,
            ports.dequeued_bytes,
            ports.dropped,
            ports.dropped_bytes,
            ports.trimmed,
            ports.bounced,
            pulls.sent,
            pulls.gaps,
            pulls.gaps_at_interval,
            ports.marked,
            ports.discarded,
            packets.frames_sent,
            packets.frames_received,
            ports.pause_sent,
            ports.pause_received,
            ports.paused_ps,
            packets.lost_on_link,
        ];
        let g = self.comm.all_sum(&local);
        let mut counts = super::event::EventCounts::default();
        for s in &self.shards {
            counts += s.event_counts;
        }
        let counts = super::event::EventCounts(
            self.comm
                .all_sum(&counts.0)
                .try_into()
                .expect("one sum per kind"),
        );
        let chip = self.chip_totals();
        let mins = self.comm.all_min(&[
            pulls.min_gap_ps.unwrap_or(u64::MAX),
            u64::MAX - pulls.interval_ps,
        ]);
        let mut per_shard = vec![0u64; self.opts.shards as usize];
        let mut mine = Vec::new();
        for s in &self.shards {
            mine.extend_from_slice(&(s.id as u64).to_le_bytes());
            mine.extend_from_slice(&s.events_processed.to_le_bytes());
        }
        let figures = RankFigures {
            rank: self.comm.rank(),
            shards: self.shards.len() as u32,
            events: self.events(),
            wall_s: self.wall.as_secs_f64(),
            bytes_sent: self.comm.bytes_sent(),
            wait_s: self.comm.wait().as_secs_f64(),
            peak_rss_bytes: crate::trace::peak_rss_bytes(),
        };
        let fig_bytes = serde_json::to_vec(&figures).expect("serialisable");
        let mut ranks = Vec::new();
        for buf in self.comm.all_gather(fig_bytes) {
            if let Ok(f) = serde_json::from_slice::<RankFigures>(&buf) {
                ranks.push(f);
            }
        }
        for buf in self.comm.all_gather(mine) {
            for c in buf.chunks_exact(16) {
                let id = u64::from_le_bytes(c[..8].try_into().expect("8 bytes")) as usize;
                per_shard[id] = u64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
            }
        }
        RunSummary {
            sim_end_ps: self.now,
            events: per_shard.iter().sum(),
            events_per_shard: per_shard,
            event_counts: counts,
            windows: self.windows,
            packets: PacketCounters {
                created: g[0],
                delivered: g[1],
                dropped: g[2],
                frames_sent: g[18],
                frames_received: g[19],
                lost_on_link: g[23],
            },
            queued: g[3],
            in_flight: g[4],
            ports: PortCounters {
                enqueued: g[5],
                enqueued_bytes: g[6],
                dequeued: g[7],
                dequeued_bytes: g[8],
                dropped: g[9],
                dropped_bytes: g[10],
                trimmed: g[11],
                bounced: g[12],
                marked: g[16],
                discarded: g[17],
                pause_sent: g[20],
                pause_received: g[21],
                paused_ps: g[22],
            },
            pulls: crate::transport::PullStats {
                sent: g[13],
                gaps: g[14],
                gaps_at_interval: g[15],
                min_gap_ps: (mins[0] != u64::MAX).then_some(mins[0]),
                interval_ps: u64::MAX - mins[1],
            },
            ranks,
            tofino: chip,
        }
    }

    /// The chips' counters over every rank (None: no chip anywhere); sums,
    /// except the largest DoD queue, which is a maximum.
    fn chip_totals(&mut self) -> Option<crate::net::tofino::ChipCounters> {
        use crate::net::tofino::ChipCounters;
        let mut any = 0u64;
        let mut t = ChipCounters::default();
        for c in self.shards.iter().filter_map(Shard::chip_totals) {
            any = 1;
            t += c;
        }
        let a = t.to_array();
        let mut local = a[..8].to_vec();
        local.push(any);
        let g = self.comm.all_sum(&local);
        let max = self.comm.all_min(&[u64::MAX - a[8]]);
        let mut all = g[..8].to_vec();
        all.push(u64::MAX - max[0]);
        (g[8] > 0).then(|| ChipCounters::from_array(&all))
    }

    /// The chips' trace rows of this rank's shards: (shard, rows).
    pub fn chip_traces(&mut self, sim_end_ps: u64) -> Vec<(u32, Vec<crate::net::tofino::ChipRow>)> {
        self.shards
            .iter_mut()
            .map(|s| (s.id, s.chip_trace(sim_end_ps)))
            .collect()
    }

    /// Flow records of the flows whose source this rank owns: (global shard
    /// id, records sorted by flow id) for each local shard. Receiver-side
    /// figures come from whichever rank owns each flow's destination.
    pub fn flow_records(&mut self) -> Result<Vec<(u32, Vec<FlowRecord>)>, SimError> {
        let me = self.comm.rank();
        let mut sinks: BTreeMap<u64, SinkStats> = BTreeMap::new();
        let mut remote: Vec<Vec<u8>> = vec![Vec::new(); self.comm.size() as usize];
        let mut sources = Vec::new();
        for s in &self.shards {
            let (src, snk) = s.flow_rows();
            sources.push((s.id, src));
            for (flow, src_host, st) in snk {
                let r = self.rank_of_shard[self.shared.shard_of[src_host as usize] as usize];
                if r == me {
                    sinks.insert(flow, st);
                } else {
                    wire::put_sink(flow, &st, &mut remote[r as usize]);
                }
            }
        }
        if self.comm.size() > 1 {
            for buf in self.comm.all_to_all(remote) {
                sinks.extend(wire::get_sinks(&buf)?);
            }
        }
        Ok(sources
            .into_iter()
            .map(|(id, rows)| {
                let mut recs: Vec<FlowRecord> = rows
                    .into_iter()
                    .map(|r| {
                        let sink = sinks.get(&r.info.id);
                        record(r, sink)
                    })
                    .collect();
                recs.sort_by_key(|r| r.flow_id);
                (id, recs)
            })
            .collect())
    }

    /// Gives every shard a record-and-replay role (`replay.rs`), built by `make`.
    pub fn set_replay(&mut self, make: impl Fn() -> crate::replay::ShardReplay) {
        for s in &mut self.shards {
            s.replay = Some(Box::new(make()));
        }
    }

    /// Takes back every shard's record-and-replay state, in shard order.
    pub fn take_replay(&mut self) -> Vec<crate::replay::ShardReplay> {
        self.shards
            .iter_mut()
            .filter_map(|s| s.replay.take().map(|b| *b))
            .collect()
    }

    /// Ends every local shard's trace recorders at `sim_end_ps`: (global shard
    /// id, what it recorded), empty when nothing is traced.
    pub fn finish_traces(&mut self, sim_end_ps: u64) -> Vec<(u32, crate::trace::TraceOutput)> {
        self.shards
            .iter_mut()
            .filter_map(|s| s.finish_trace(sim_end_ps).map(|t| (s.id, t)))
            .collect()
    }

    /// Pull-pacer statistics of this rank's hosts that sent PULLs, by host.
    pub fn pull_stats(&self) -> Vec<(u32, crate::transport::PullStats)> {
        let mut v: Vec<_> = self.shards.iter().flat_map(|s| s.pull_stats()).collect();
        v.sort_by_key(|(h, _)| *h);
        v
    }

    /// Completed workload groups (collective iterations, incast rounds, `.cm`
    /// triggers) over all ranks, sorted by completion time. Each group is
    /// recorded by exactly one shard. The workload learns of a completion one
    /// notice delay after the last byte arrived; that delay is taken off again
    /// here, so the times are when the group's last flow finished.
    pub fn completed_groups(&mut self) -> Vec<workloads::GroupCompletion> {
        let mut mine = Vec::new();
        for g in self.shards.iter().flat_map(|s| s.completed_groups()) {
            mine.extend_from_slice(&g.entry.to_le_bytes());
            mine.extend_from_slice(&g.instance.to_le_bytes());
            mine.extend_from_slice(&g.completed_ps.to_le_bytes());
            mine.extend_from_slice(&(g.name.len() as u32).to_le_bytes());
            mine.extend_from_slice(g.name.as_bytes());
        }
        let mut v = Vec::new();
        for buf in self.comm.all_gather(mine) {
            let mut at = 0;
            while at + 22 <= buf.len() {
                let entry = u16::from_le_bytes(buf[at..at + 2].try_into().expect("2"));
                let instance = u64::from_le_bytes(buf[at + 2..at + 10].try_into().expect("8"));
                let completed_ps = u64::from_le_bytes(buf[at + 10..at + 18].try_into().expect("8"));
                let len = u32::from_le_bytes(buf[at + 18..at + 22].try_into().expect("4")) as usize;
                let name = String::from_utf8_lossy(&buf[at + 22..(at + 22 + len).min(buf.len())])
                    .into_owned();
                at += 22 + len;
                v.push(workloads::GroupCompletion {
                    entry,
                    name,
                    instance,
                    completed_ps: completed_ps.saturating_sub(self.shared.notice_ps),
                });
            }
        }
        v.sort_by(|a, b| {
            (a.completed_ps, a.entry, a.instance, &a.name).cmp(&(
                b.completed_ps,
                b.entry,
                b.instance,
                &b.name,
            ))
        });
        v
    }
}

fn record(r: SourceRow, sink: Option<&SinkStats>) -> FlowRecord {
    let empty = SinkStats::default();
    let sink = sink.unwrap_or(&empty);
    let finish = sink.finish_ps;
    FlowRecord {
        flow_id: r.info.id,
        src: r.info.src,
        dst: r.info.dst,
        protocol: r.proto.name().to_string(),
        priority: r.info.prio,
        size_bytes: r.info.size,
        start_ps: r.info.start_ps,
        finish_ps: finish,
        fct_ps: finish.map(|f| f - r.info.start_ps),
        ideal_fct_ps: r.info.ideal_fct_ps,
        bytes_sent: r.stats.bytes_sent,
        bytes_received: sink.bytes_received,
        packets_sent: r.stats.packets_sent,
        packets_received: sink.packets_received,
        retransmissions: r.stats.retransmissions,
        trims: r.stats.trims,
        bounces: r.stats.bounces,
        timeouts: r.stats.timeouts,
        sender_finish_ps: r.stats.finish_ps,
    }
}
