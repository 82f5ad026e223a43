//! What a finished simulation hands back: the run summary (counters summed
//! over shards and ranks), flow records joined across ranks, traces, pull
//! statistics and completed workload groups. Kept apart from the window loop
//! in `sim.rs`, which only runs the simulation.

use super::super::shard::{PacketCounters, Shard, SourceRow};
use super::super::wire;
use super::{RankFigures, RunSummary, SimError, Simulation};
use crate::net::PortCounters;
use crate::trace::FlowRecord;
use crate::transport::SinkStats;
use std::collections::BTreeMap;

/// Reads back per-flow rows that one rank wrote for another (`wire.rs`).
type Decode<T> = fn(&[u8]) -> Result<Vec<(u64, T)>, wire::WireError>;

impl Simulation {
    pub(super) fn summary(&mut self) -> RunSummary {
        let mut packets = PacketCounters::default();
        let mut ports = PortCounters::default();
        let mut paused = [0u64; 8];
        for s in &self.shards {
            packets.created += s.counters.created;
            packets.delivered += s.counters.delivered;
            packets.dropped += s.counters.dropped;
            packets.frames_sent += s.counters.frames_sent;
            packets.frames_received += s.counters.frames_received;
            packets.lost_on_link += s.counters.lost_on_link;
            ports += s.port_totals(self.now);
            for (a, b) in paused.iter_mut().zip(s.paused_by_priority(self.now)) {
                *a += b;
            }
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
        let mut local = local.to_vec();
        local.extend_from_slice(&paused);
        let g = self.comm.all_sum(&local);
        let mut counts = super::super::event::EventCounts::default();
        for s in &self.shards {
            counts += s.event_counts;
        }
        let counts = super::super::event::EventCounts(
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
            entity_major: self.shared.entity_major && self.shards.iter().all(Shard::entity_major),
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
            paused_ps_by_priority: g[24..32].try_into().expect("eight priorities"),
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
        let (mut sources, mut sinks, mut served) = (Vec::new(), Vec::new(), Vec::new());
        for s in &self.shards {
            let rows = s.flow_rows();
            sources.push((s.id, rows.sources));
            sinks.extend(rows.sinks);
            served.extend(rows.served);
        }
        let sinks = self.at_source_ranks(sinks, wire::put_sink, wire::get_sinks)?;
        let mut served = self.at_source_ranks(served, wire::put_served, wire::get_served)?;
        Ok(sources
            .into_iter()
            .map(|(id, rows)| {
                let mut recs: Vec<FlowRecord> = rows
                    .into_iter()
                    .map(|mut r| {
                        if let Some(st) = served.remove(&r.info.id) {
                            // An RDMA Read: the responder sent the data; the
                            // requester's timeouts and RTT samples (TIMELY's)
                            // add to its.
                            let own = std::mem::replace(&mut r.stats, st);
                            r.stats.timeouts += own.timeouts;
                            r.stats.rtt_samples += own.rtt_samples;
                            r.stats.rtt_sum_ps += own.rtt_sum_ps;
                        }
                        let sink = sinks.get(&r.info.id);
                        record(r, sink)
                    })
                    .collect();
                recs.sort_by_key(|r| r.flow_id);
                (id, recs)
            })
            .collect())
    }

    /// Moves per-flow rows `(flow, source host, stats)` to the rank that owns
    /// each flow's source host: kept here when it is this one, else written
    /// with `put`, exchanged, and read back with `get` there.
    fn at_source_ranks<T>(
        &mut self,
        rows: Vec<(u64, u32, T)>,
        put: fn(u64, &T, &mut Vec<u8>),
        get: Decode<T>,
    ) -> Result<BTreeMap<u64, T>, SimError> {
        let me = self.comm.rank() as usize;
        let mut here = BTreeMap::new();
        let mut remote = vec![Vec::new(); self.comm.size() as usize];
        for (flow, src_host, st) in rows {
            let shard = self.shared.shard_of[src_host as usize] as usize;
            match self.rank_of_shard[shard] as usize {
                r if r == me => {
                    here.insert(flow, st);
                }
                r => put(flow, &st, &mut remote[r]),
            }
        }
        if self.comm.size() > 1 {
            for buf in self.comm.all_to_all(remote) {
                here.extend(get(&buf)?);
            }
        }
        Ok(here)
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
        rtt_samples: r.stats.rtt_samples,
        rtt_mean_ps: r.stats.rtt_mean_ps(),
    }
}
