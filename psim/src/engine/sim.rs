//! The window loop.
//!
//! Each round: hand packets and flow completions that crossed shards to their
//! owners; take `T`, the earliest pending work over all shards; let every shard
//! process its events before `T + L` in parallel, `L` being the lookahead (the
//! smallest propagation delay of any link between shards). A packet sent at
//! `t >= T` over a cut link arrives at `t + delay >= T + L`, so no shard can
//! receive anything inside a window it is processing. Idle stretches cost
//! nothing: `T` jumps straight to the next real event.

use super::shard::{Message, PacketCounters, Shard, ShardError, Shared, SourceRow};
use crate::config::Scenario;
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
}

impl RunSummary {
    /// Whether every packet is accounted for: created = delivered + dropped + queued + in flight.
    pub fn conserved(&self) -> bool {
        self.packets.created
            == self.packets.delivered + self.packets.dropped + self.queued + self.in_flight
    }
}

/// A simulation built from a scenario.
pub struct Simulation {
    shards: Vec<Shard>,
    shared: Arc<Shared>,
    pool: rayon::ThreadPool,
    lookahead: Option<u64>,
    report: partition::Report,
    windows: u64,
    now: u64,
    opts: SimOptions,
}

impl Simulation {
    /// Partitions the network and builds every shard.
    pub fn new(scn: &Scenario, opts: SimOptions) -> Result<Simulation, SimError> {
        if opts.shards == 0 || opts.threads == 0 {
            return Err(SimError::Options(
                "--shards and --threads must be at least 1".into(),
            ));
        }
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
            notice_ps,
        });
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads as usize)
            .build()
            .map_err(|e| SimError::Threads {
                threads: opts.threads,
                message: e.to_string(),
            })?;
        let shards: Vec<Shard> = pool.install(|| {
            members
                .par_iter()
                .enumerate()
                .map(|(s, m)| Shard::new(s as u32, opts.shards, m, shared.clone(), scn))
                .collect()
        });
        Ok(Simulation {
            shards,
            shared,
            pool,
            lookahead: report.lookahead_ps,
            report,
            windows: 0,
            now: 0,
            opts,
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

    /// Hands over cross-shard packets and flow completions.
    fn exchange(&mut self) {
        let mut mail: Vec<Vec<Message>> = (0..self.shards.len()).map(|_| Vec::new()).collect();
        let mut notices: Vec<(u64, u64)> = Vec::new();
        for s in &mut self.shards {
            for (d, out) in s.outbox.iter_mut().enumerate() {
                mail[d].append(out);
            }
            notices.append(&mut s.finished_out);
        }
        for (s, msgs) in self.shards.iter_mut().zip(mail) {
            for m in msgs {
                s.receive(m);
            }
            for &(due, flow) in &notices {
                s.schedule_notice(due, flow);
            }
        }
    }

    /// Runs to the stop time, or until nothing is left to do.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<RunSummary, SimError> {
        let stop = self.shared.stop_ps.unwrap_or(u64::MAX);
        // Completion notices are due one notice delay after the flow ends, so no
        // window may be longer than that, even with a single shard.
        let window = self
            .lookahead
            .unwrap_or(MAX_WINDOW_PS)
            .min(self.shared.notice_ps);
        loop {
            self.exchange();
            if let Some(e) = self.shards.iter().find_map(|s| s.error.clone()) {
                return Err(e.into());
            }
            let Some(t) = self.shards.iter().filter_map(Shard::next_time).min() else {
                break;
            };
            if t >= stop {
                break;
            }
            let end = t.saturating_add(window).min(stop);
            self.pool
                .install(|| self.shards.par_iter_mut().for_each(|s| s.run_window(end)));
            self.windows += 1;
            self.now = end;
            progress(Progress {
                sim_ps: end,
                stop_ps: self.shared.stop_ps,
                events: self.events(),
            });
        }
        if let Some(e) = self.shards.iter().find_map(|s| s.error.clone()) {
            return Err(e.into());
        }
        // The end time is a property of the simulated system: the stop time, or
        // the last event processed. Window ends depend on the partition.
        self.now = match self.shared.stop_ps {
            Some(s) => s,
            None => self
                .shards
                .iter()
                .map(|s| s.last_event_ps)
                .max()
                .unwrap_or(0),
        };
        Ok(self.summary())
    }

    fn events(&self) -> u64 {
        self.shards.iter().map(|s| s.events_processed).sum()
    }

    fn summary(&self) -> RunSummary {
        let mut packets = PacketCounters::default();
        let mut ports = PortCounters::default();
        for s in &self.shards {
            packets.created += s.counters.created;
            packets.delivered += s.counters.delivered;
            packets.dropped += s.counters.dropped;
            ports += s.port_totals();
        }
        RunSummary {
            sim_end_ps: self.now,
            events: self.events(),
            events_per_shard: self.shards.iter().map(|s| s.events_processed).collect(),
            windows: self.windows,
            packets,
            queued: self.shards.iter().map(Shard::queued_packets).sum(),
            in_flight: self.shards.iter().map(Shard::in_flight_packets).sum(),
            ports,
            pulls: self
                .pull_stats()
                .into_iter()
                .fold(Default::default(), |mut t, (_, p)| {
                    t.sent += p.sent;
                    t.gaps += p.gaps;
                    t.gaps_at_interval += p.gaps_at_interval;
                    t.min_gap_ps = match (t.min_gap_ps, p.min_gap_ps) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    t.interval_ps = t.interval_ps.max(p.interval_ps);
                    t
                }),
        }
    }

    /// Flow records, grouped by the shard that owns each flow's source, each group sorted by flow id.
    pub fn flow_records(&self) -> Vec<Vec<FlowRecord>> {
        let mut sinks: BTreeMap<u64, SinkStats> = BTreeMap::new();
        let mut sources: Vec<Vec<SourceRow>> = Vec::new();
        for s in &self.shards {
            let (src, snk) = s.flow_rows();
            sources.push(src);
            sinks.extend(snk);
        }
        sources
            .into_iter()
            .map(|rows| {
                let mut recs: Vec<FlowRecord> = rows
                    .into_iter()
                    .map(|r| {
                        let sink = sinks.get(&r.info.id);
                        record(r, sink)
                    })
                    .collect();
                recs.sort_by_key(|r| r.flow_id);
                recs
            })
            .collect()
    }

    /// Pull-pacer statistics of every host that sent PULLs, by host.
    pub fn pull_stats(&self) -> Vec<(u32, crate::transport::PullStats)> {
        let mut v: Vec<_> = self.shards.iter().flat_map(|s| s.pull_stats()).collect();
        v.sort_by_key(|(h, _)| *h);
        v
    }

    /// Completed workload groups (collective iterations, incast rounds, `.cm`
    /// triggers), sorted by completion time. Each group is recorded by exactly
    /// one shard. The workload learns of a completion one notice delay after
    /// the last byte arrived; that delay is taken off again here, so the times
    /// are when the group's last flow finished.
    pub fn completed_groups(&self) -> Vec<workloads::GroupCompletion> {
        let mut v: Vec<_> = self
            .shards
            .iter()
            .flat_map(|s| s.completed_groups())
            .collect();
        for g in &mut v {
            g.completed_ps = g.completed_ps.saturating_sub(self.shared.notice_ps);
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
    }
}
