//! Validation metrics: the numbers a target's checks compare with the paper.
//!
//! Each metric is a function of the flow records ([`crate::trace::read_flows`])
//! and the engine's counters of one or more named runs. They are computed here
//! in Rust rather than through `psim-analyze` (which needs Polars, minutes to
//! build); where a metric is one of `psim-analyze`'s, it uses the same formula,
//! and its doc comment names the definition in docs/analysis.md.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::trace::FlowRecord;

pub use super::inputs::*;

/// Where [`Metric::OneWay`]'s delay of a packet starts.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DelayFrom {
    /// Its first enqueue at the source's NIC.
    #[default]
    Send,
    /// Its flow's start (`start_ps` in the flow table): the UPS scripts'
    /// packet delay, where the UDP agent hands every packet of a flow to the
    /// NIC at the flow's start, so a packet's wait behind the earlier
    /// packets of its own flow counts ([UPS] `apps/udp.cc`, the PCT log).
    FlowStart,
}

/// Which completion a flow's FCT ends at (docs/outputs.md, "Two completion
/// times").
#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// The last payload byte reached the receiver (`fct_ps`).
    #[default]
    Receiver,
    /// The sender learned that the last byte was acknowledged
    /// (`sender_finish_ps`): what ns-2's TCP agent logs as a flow's
    /// completion in the UPS scripts (`TcpAgent::finish`, at the ACK of the
    /// last packet), half a round trip after the receiver's.
    Sender,
}

impl Completion {
    /// The flow's FCT by this completion, ps; None if it did not complete.
    fn fct_ps(self, f: &FlowRecord) -> Option<u64> {
        match self {
            Completion::Receiver => f.fct_ps,
            Completion::Sender => f.sender_finish_ps.map(|t| t.saturating_sub(f.start_ps)),
        }
    }
}

/// A metric expression: a function of named runs, or arithmetic on others.
/// Written in targets.toml as an inline table with `fn` naming the variant.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(tag = "fn", rename_all = "snake_case", deny_unknown_fields)]
pub enum Metric {
    /// Last flow's completion over the spec's A16 optimum, minus 1 (0.01 = 1%
    /// over): every wire byte of every matching flow back to back through the
    /// receiver's link, plus one full packet's store-and-forward on each of
    /// the `hops - 1` other hops, plus `hops` propagation delays. This is
    /// stricter than psim-analyze's `span_over_ideal` (docs/analysis.md,
    /// "Completion against the ideal"), whose receiver bound counts payload only.
    LastOverOptimum {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
        /// Payload per packet, bytes (default 9000, [P] §6).
        #[serde(default = "d_mtu")]
        mtu: u64,
        /// Link rate, Gb/s (default 10, [P] §6).
        #[serde(default = "d_gbps")]
        gbps: f64,
        /// Links on the path (default 6: across a FatTree's core).
        #[serde(default = "d_hops")]
        hops: u64,
        /// Propagation per link, µs (default 1, [P] §6).
        #[serde(default = "d_latency")]
        latency_us: f64,
    },
    /// Slowest over fastest completion time of the matching flows.
    FctSpread {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// An FCT percentile of the finished matching flows, µs, with
    /// psim-analyze's linear interpolation (docs/analysis.md, "Percentiles").
    FctPct {
        /// Run name.
        run: String,
        /// Quantile in [0, 1].
        q: f64,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// A slowdown percentile (FCT over the flow's ideal FCT) of the finished
    /// matching flows with an ideal: psim-analyze's `slowdown_pXX`
    /// (docs/analysis.md, "Slowdown"). q = 1 is the largest.
    Slowdown {
        /// Run name.
        run: String,
        /// Quantile in [0, 1].
        q: f64,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// Mean slowdown (FCT over the flow's ideal FCT) of the finished
    /// matching flows with an ideal: psim-analyze's `slowdown_mean`, [TH]
    /// Ch. 4's "average slowdown".
    SlowdownMean {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// The largest FCT of the matching flows, µs.
    LastFct {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// From the first matching flow's start to the last one's finish,
    /// seconds: the time to run a benchmark of many flows (P19's 1000
    /// requests per client). Every matching flow must have finished, unless
    /// `open_until_end`: then an unfinished flow counts as finishing at the
    /// run's end, and the value is a lower bound (for "more than" claims).
    Span {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
        /// Unfinished flows end at the run's end (a lower bound).
        #[serde(default)]
        open_until_end: bool,
    },
    /// Mean over matching finished flows of FCT minus the flow's ideal FCT, µs.
    RiseOverIdeal {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// A statistic of per-flow goodput, Gb/s: `bytes_received × 8 / time`
    /// (psim-analyze's per-host goodput, docs/analysis.md, when each host
    /// receives one flow, as in a permutation). With `since`, the bytes and
    /// time between the end of that (shorter, otherwise identical) run and
    /// this one: a steady-state window that leaves out start-up (spec A15).
    Goodput {
        /// Run name.
        run: String,
        /// Which statistic.
        stat: Stat,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
        /// The same run stopped earlier: measure from its end.
        #[serde(default)]
        since: Option<String>,
    },
    /// Matching flows whose goodput over the run is below `gbps`.
    FlowsBelow {
        /// Run name.
        run: String,
        /// Threshold, Gb/s.
        gbps: f64,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// Goodput of the matching flows over the whole run as a fraction of
    /// `hosts × gbps`: psim-analyze's `utilisation` (docs/analysis.md) with
    /// the host count given, so that traffic to a few hosts can be measured.
    Utilisation {
        /// Run name.
        run: String,
        /// Hosts whose capacity counts.
        hosts: u32,
        /// Link rate, Gb/s.
        #[serde(default = "d_gbps")]
        gbps: f64,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// A per-flow counter summed over the matching flows (psim-analyze's
    /// loss-recovery totals, docs/analysis.md).
    Sum {
        /// Run name.
        run: String,
        /// Which counter.
        field: Field,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// Sum of `field` over the sum of `of`, over the matching flows.
    PerFlowRatio {
        /// Run name.
        run: String,
        /// Numerator counter.
        field: Field,
        /// Denominator counter.
        of: Field,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// A port counter summed over the network.
    Port {
        /// Run name.
        run: String,
        /// Which counter.
        field: PortField,
    },
    /// A Tofino chip counter.
    Chip {
        /// Run name.
        run: String,
        /// Which counter.
        field: ChipField,
    },
    /// A percentile of the trimmed headers' latency, µs: from the data
    /// packet's last departure from its sender to the header's departure
    /// from the switch ([TRIM] Fig 5's header arrivals, less one constant 64 B
    /// serialisation and link in a one-switch run). Needs the run's packet
    /// trace with dequeue events (`super::traced`).
    HeaderLatency {
        /// Run name.
        run: String,
        /// Quantile in [0, 1].
        q: f64,
    },
    /// The per-packet send-to-ACK latency, µs: a percentile (`q` in [0, 1]),
    /// or the mean when `q` is absent. From a data packet's first send to the
    /// arrival at its sender of the ACK covering it, retransmissions included
    /// ([P] §3.2.4, Fig. 4; definition in [`super::ack_latency`]). Needs the
    /// run's packet trace with `enqueue` and `dequeue` events; a sampled
    /// trace gives an unbiased estimate.
    AckLatency {
        /// Run name.
        run: String,
        /// Quantile in [0, 1]; None: the mean.
        #[serde(default)]
        q: Option<f64>,
    },
    /// The one-way delay of data packets, µs: a percentile (`q` in [0, 1]),
    /// or the mean when `q` is absent. From the first send at the source
    /// NIC (or, `from = "flow_start"`, from its flow's start) to the arrival
    /// at the destination ([`super::one_way`], [TH] Fig 5.3). Needs the
    /// run's packet trace with `enqueue` and `dequeue` events; a sampled
    /// trace gives an unbiased estimate. `filter` keeps the packets of the
    /// flows it keeps (the UPS tail-delay analysis reads the packets of the
    /// flows that start in 0.5-2 s).
    OneWay {
        /// Run name.
        run: String,
        /// Quantile in [0, 1]; None: the mean.
        #[serde(default)]
        q: Option<f64>,
        /// Where each packet's delay starts.
        #[serde(default)]
        from: DelayFrom,
        /// Which flows' packets count (default: all).
        #[serde(default)]
        filter: Filter,
    },
    /// Jain's fairness index of the flows' throughput in each `bin_us`
    /// window, averaged over the windows that start in [`from_us`,
    /// `until_us`) and see any arrival: (Σx)² / (n Σx²) over every flow of the
    /// run's flow table, x = payload bytes that reached the destination in
    /// the window (0 for a flow with none). [TH] Fig 5.4, as the UPS script
    /// computes it per millisecond. Needs the packet trace's `dequeue` rows.
    Jain {
        /// Run name.
        run: String,
        /// First window start, µs.
        from_us: u64,
        /// Windows start before this, µs.
        until_us: u64,
        /// Window, µs (1000: one millisecond).
        #[serde(default = "one_ms")]
        bin_us: u64,
    },
    /// The fraction of traced data packets that met exactly `n` congestion
    /// points: non-empty switch queues ([`super::congestion_points`], [TH]
    /// §5.1.3 footnote 9). Needs the run's packet trace with `enqueue`
    /// events.
    CongestionPoints {
        /// Run name.
        run: String,
        /// Congestion points.
        n: u32,
    },
    /// The RTT of data packets sent exactly once, µs: a percentile (`q` in
    /// [0, 1]; 1 is the largest, [P] §3.2.4's "maximum RTT"), or the mean when
    /// `q` is absent. From the source NIC's dequeue to the ACK's arrival (the
    /// network's share of [`Metric::AckLatency`]).
    Rtt {
        /// Run name.
        run: String,
        /// Quantile in [0, 1]; None: the mean.
        #[serde(default)]
        q: Option<f64>,
    },
    /// The queue of one port in units of time, µs: a percentile (`q` in
    /// [0, 1]) or the mean of the run's queue time series at `entity`'s
    /// output `port` from `from_us` on, each sample's bytes at the link's
    /// rate ([TH] Fig. 3.2; needs `[trace.queues]`, sampled every
    /// `interval_us`).
    QueueTime {
        /// Run name.
        run: String,
        /// The switch or host.
        entity: u32,
        /// Its output port.
        port: u16,
        /// Quantile in [0, 1]; None: the mean.
        #[serde(default)]
        q: Option<f64>,
        /// Samples before this time are left out, µs (default 0).
        #[serde(default)]
        from_us: u64,
    },
    /// Data packets trimmed at one tier, counted from the run's packet trace
    /// (`trim` events, unsampled; [`super::traced::TierTrims`]).
    Trims {
        /// Run name.
        run: String,
        /// Where.
        tier: TrimTier,
    },
    /// When the first trimmed header left a switch, µs after `since_us`
    /// (needs the packet trace).
    FirstHeader {
        /// Run name.
        run: String,
        /// The time that counts as 0, µs.
        #[serde(default)]
        since_us: f64,
    },
    /// When a Tofino DoD queue first held a packet, µs after `since_us`
    /// (needs `trace.tofino`).
    FirstDeflection {
        /// Run name.
        run: String,
        /// The time that counts as 0, µs.
        #[serde(default)]
        since_us: f64,
    },
    /// The share of the run that a Tofino egress port spends in a mode,
    /// averaged over the pipelines ([TRIM] Fig 7; needs `trace.tofino`;
    /// `super::traced::mode_share`).
    ModeShare {
        /// Run name.
        run: String,
        /// Egress port.
        port: u16,
        /// Which mode.
        mode: ChipMode,
    },
    /// A figure of the record-and-replay comparison.
    Replay {
        /// Run name.
        run: String,
        /// Which figure.
        field: ReplayField,
    },
    /// A pull-pacer figure summed over the hosts.
    Pulls {
        /// Run name.
        run: String,
        /// Which figure.
        field: PullField,
    },
    /// a / b.
    Ratio {
        /// Numerator.
        a: Box<Metric>,
        /// Denominator.
        b: Box<Metric>,
    },
    /// a − b.
    Diff {
        /// Minuend.
        a: Box<Metric>,
        /// Subtrahend.
        b: Box<Metric>,
    },
    /// The mean of several values: one statistic over runs that differ only
    /// in their seed (P17's ECMP hashing).
    Mean {
        /// The values.
        of: Vec<Metric>,
    },
    /// The mean of `of` over the seeds of the repeated runs it reads
    /// (`repeat` on the run): `of` evaluated once per seed k, each repeated
    /// run read at its seed k. Every repeated run `of` reads must take the
    /// same number of seeds; runs that do not repeat are read as they are.
    SeedMean {
        /// The value.
        of: Box<Metric>,
    },
    /// `of` × `by`: a unit conversion.
    Scale {
        /// The value.
        of: Box<Metric>,
        /// The factor.
        by: f64,
    },
    /// Mean FCT of the finished matching flows, seconds: over flows, or
    /// with `by_bytes` weighted by flow size ([TH] Table 2.1's "average over
    /// bytes"), ending where `completion` says.
    FctMean {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
        /// Weight each flow by its size.
        #[serde(default)]
        by_bytes: bool,
        /// Which completion an FCT ends at.
        #[serde(default)]
        completion: Completion,
    },
    /// Mean time from a matching flow's start until its destination held
    /// its first `bytes` bytes, seconds ([`super::one_way::prefix_done`]): a
    /// video's start-up buffering time ([TH] §2.4.1, 1.5 MB). Over the
    /// flows whose prefix arrived in the trace; byte sequence numbers (the
    /// TCP family). Needs the run's packet trace with `dequeue` events.
    PrefixMean {
        /// Run name.
        run: String,
        /// The prefix, bytes.
        bytes: u64,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
    },
    /// Mean of the matching flows' mean RTTs (`rtt_mean_ps`), seconds,
    /// over the flows with a sample: over flows, or with `by_bytes`
    /// weighted by flow size ([TH] Fig 5.9's "average RTT across bytes").
    RttMean {
        /// Run name.
        run: String,
        /// Flows that count.
        #[serde(default)]
        filter: Filter,
        /// Weight each flow by its size.
        #[serde(default)]
        by_bytes: bool,
    },
    /// 1 − a / b: the reduction of `a` against the reference `b` ([TH] §2.2's gain).
    Reduction {
        /// The new value.
        a: Box<Metric>,
        /// The reference.
        b: Box<Metric>,
    },
    /// The gain of RC3 over TCP that [TH] §2.2's loose model predicts for a
    /// flow of `packets` packets of 1500 B (`transport::rc3::LooseModel`).
    Rc3Model {
        /// Flow size, packets.
        packets: f64,
        /// Round-trip time, ms.
        rtt_ms: f64,
        /// Bottleneck rate, Gb/s.
        gbps: f64,
        /// Utilisation by other traffic, 0 to 1.
        load: f64,
        /// TCP's initial window, packets.
        iw: f64,
    },
    /// |a / b − 1|: a relative change.
    RelChange {
        /// The changed value.
        a: Box<Metric>,
        /// The reference.
        b: Box<Metric>,
    },
}

/// FCT over ideal FCT of each finished flow that has an ideal.
fn slowdowns(flows: Vec<&FlowRecord>, run: &str) -> Result<Vec<f64>, String> {
    let v: Vec<f64> = flows
        .iter()
        .filter_map(|f| match (f.fct_ps, f.ideal_fct_ps) {
            (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
            _ => None,
        })
        .collect();
    if v.is_empty() {
        return Err(format!("no finished flow with an ideal in `{run}`"));
    }
    Ok(v)
}

fn d_mtu() -> u64 {
    9000
}
fn d_gbps() -> f64 {
    10.0
}
fn d_hops() -> u64 {
    6
}
fn d_latency() -> f64 {
    1.0
}

/// NDP's header on the wire, bytes ([P] §3.2: 64 B headers).
const HEADER_BYTES: u64 = 64;

/// The name a repeated run `name` is kept under at seed `k`: `name#k`.
pub fn seed_run(name: &str, k: usize) -> String {
    format!("{name}#{k}")
}

/// Whether run `name` is in `runs`, once or repeated over seeds.
pub fn ran(runs: &BTreeMap<String, RunData>, name: &str) -> bool {
    runs.contains_key(name) || runs.contains_key(&seed_run(name, 1))
}

/// The runs a metric reads: a repeated run `X` is kept as `X#1`, `X#2`,
/// ...; inside `seed_mean`, at seed k, `X` reads `X#k`.
struct Runs<'a> {
    all: &'a BTreeMap<String, RunData>,
    seed: Option<usize>,
}

impl Runs<'_> {
    fn get(&self, name: &str) -> Result<&RunData, String> {
        let at_seed = self.seed.and_then(|k| self.all.get(&seed_run(name, k)));
        at_seed.or_else(|| self.all.get(name)).ok_or_else(|| {
            if ran(self.all, name) {
                format!("run `{name}` repeats over seeds: read it inside seed_mean")
            } else {
                format!("run `{name}` did not run")
            }
        })
    }

    /// How many seeds run `name` repeats over (0: it does not).
    fn seeds(&self, name: &str) -> usize {
        (1..)
            .take_while(|&k| self.all.contains_key(&seed_run(name, k)))
            .count()
    }
}

impl Metric {
    /// Every run this metric reads.
    pub fn runs(&self, into: &mut Vec<String>) {
        self.runs_where(into, true);
    }

    /// The runs this metric reads outside any `seed_mean`.
    pub fn bare_runs(&self, into: &mut Vec<String>) {
        self.runs_where(into, false);
    }

    fn runs_where(&self, into: &mut Vec<String>, in_seed_means: bool) {
        match self {
            Metric::Ratio { a, b }
            | Metric::Diff { a, b }
            | Metric::RelChange { a, b }
            | Metric::Reduction { a, b } => {
                a.runs_where(into, in_seed_means);
                b.runs_where(into, in_seed_means);
            }
            Metric::Scale { of, .. } => of.runs_where(into, in_seed_means),
            Metric::Mean { of } => of.iter().for_each(|m| m.runs_where(into, in_seed_means)),
            Metric::SeedMean { of } => {
                if in_seed_means {
                    of.runs_where(into, true);
                }
            }
            Metric::Goodput { run, since, .. } => {
                into.push(run.clone());
                into.extend(since.iter().cloned());
            }
            Metric::LastOverOptimum { run, .. }
            | Metric::FctSpread { run, .. }
            | Metric::FctPct { run, .. }
            | Metric::Slowdown { run, .. }
            | Metric::SlowdownMean { run, .. }
            | Metric::LastFct { run, .. }
            | Metric::Span { run, .. }
            | Metric::RiseOverIdeal { run, .. }
            | Metric::FlowsBelow { run, .. }
            | Metric::Utilisation { run, .. }
            | Metric::Sum { run, .. }
            | Metric::PerFlowRatio { run, .. }
            | Metric::Port { run, .. }
            | Metric::Chip { run, .. }
            | Metric::Replay { run, .. }
            | Metric::Pulls { run, .. }
            | Metric::HeaderLatency { run, .. }
            | Metric::AckLatency { run, .. }
            | Metric::Rtt { run, .. }
            | Metric::QueueTime { run, .. }
            | Metric::OneWay { run, .. }
            | Metric::CongestionPoints { run, .. }
            | Metric::Jain { run, .. }
            | Metric::Trims { run, .. }
            | Metric::FirstHeader { run, .. }
            | Metric::FirstDeflection { run, .. }
            | Metric::ModeShare { run, .. }
            | Metric::FctMean { run, .. }
            | Metric::PrefixMean { run, .. }
            | Metric::RttMean { run, .. } => into.push(run.clone()),
            Metric::Rc3Model { .. } => {}
        }
    }

    /// Evaluates the metric; an error names what is missing.
    pub fn eval(&self, runs: &BTreeMap<String, RunData>) -> Result<f64, String> {
        self.eval_in(&Runs {
            all: runs,
            seed: None,
        })
    }

    /// Evaluates the metric over `runs` (at one seed, inside `seed_mean`).
    fn eval_in(&self, runs: &Runs) -> Result<f64, String> {
        let get = |name: &String| runs.get(name);
        // A run whose packet trace the metric reads.
        let traced = |name: &String| {
            get(name).and_then(|d| {
                if d.traced.packets_traced {
                    Ok(d)
                } else {
                    Err(format!(
                        "no packet trace in `{name}` (trace.packets.enabled)"
                    ))
                }
            })
        };
        let flows = |name: &String, filter: &Filter| -> Result<Vec<&FlowRecord>, String> {
            let v: Vec<&FlowRecord> = get(name)?
                .flows
                .iter()
                .filter(|f| filter.keeps(f))
                .collect();
            if v.is_empty() {
                return Err(format!("no flow of run `{name}` matches {filter:?}"));
            }
            Ok(v)
        };
        let fcts = |name: &String, filter: &Filter| -> Result<Vec<u64>, String> {
            let fl = flows(name, filter)?;
            let v: Vec<u64> = fl.iter().filter_map(|f| f.fct_ps).collect();
            if v.is_empty() {
                return Err(format!("no flow of run `{name}` finished"));
            }
            Ok(v)
        };
        Ok(match self {
            Metric::LastOverOptimum {
                run,
                filter,
                mtu,
                gbps,
                hops,
                latency_us,
            } => {
                let fl = flows(run, filter)?;
                let last = fl
                    .iter()
                    .map(|f| f.fct_ps.ok_or("a flow did not finish"))
                    .try_fold(0u64, |m, x| x.map(|x| m.max(x)))?;
                let ps_per_byte = 8000.0 / gbps;
                let wire: u64 = fl
                    .iter()
                    .map(|f| {
                        let s = f.size_bytes.unwrap_or(0);
                        s + s.div_ceil(*mtu) * HEADER_BYTES
                    })
                    .sum();
                let opt = wire as f64 * ps_per_byte
                    + (hops - 1) as f64 * (mtu + HEADER_BYTES) as f64 * ps_per_byte
                    + *hops as f64 * latency_us * 1e6;
                last as f64 / opt - 1.0
            }
            Metric::FctSpread { run, filter } => {
                let v = fcts(run, filter)?;
                let (lo, hi) = (v.iter().min().unwrap(), v.iter().max().unwrap());
                *hi as f64 / *lo as f64
            }
            Metric::FctPct { run, q, filter } => {
                let mut v: Vec<f64> = fcts(run, filter)?.iter().map(|&x| x as f64 / 1e6).collect();
                quantile(&mut v, *q)
            }
            Metric::Slowdown { run, q, filter } => {
                let mut v = slowdowns(flows(run, filter)?, run)?;
                quantile(&mut v, *q)
            }
            Metric::SlowdownMean { run, filter } => {
                let v = slowdowns(flows(run, filter)?, run)?;
                v.iter().sum::<f64>() / v.len() as f64
            }
            Metric::LastFct { run, filter } => {
                *fcts(run, filter)?.iter().max().unwrap() as f64 / 1e6
            }
            Metric::Span {
                run,
                filter,
                open_until_end,
            } => {
                let fl = flows(run, filter)?;
                let open = fl.iter().filter(|f| f.finish_ps.is_none()).count();
                if open > 0 && !open_until_end {
                    return Err(format!(
                        "{open} of the {} matching flows of `{run}` did not finish: no span",
                        fl.len()
                    ));
                }
                let end = get(run)?.sim_end_ps;
                let first = fl.iter().map(|f| f.start_ps).min().unwrap_or(0);
                let last = fl
                    .iter()
                    .map(|f| f.finish_ps.unwrap_or(end))
                    .max()
                    .unwrap_or(0);
                last.saturating_sub(first) as f64 / 1e12
            }
            Metric::RiseOverIdeal { run, filter } => {
                let v: Vec<f64> = flows(run, filter)?
                    .iter()
                    .filter_map(|f| Some(f.fct_ps? as f64 - f.ideal_fct_ps? as f64))
                    .collect();
                if v.is_empty() {
                    return Err(format!("no finished flow with an ideal in `{run}`"));
                }
                v.iter().sum::<f64>() / v.len() as f64 / 1e6
            }
            Metric::Goodput {
                run,
                stat,
                filter,
                since,
            } => {
                let late = get(run)?;
                let fl = flows(run, filter)?;
                let mut g: Vec<f64> = match since {
                    None => {
                        let t = late.sim_end_ps as f64;
                        fl.iter()
                            .map(|f| f.bytes_received as f64 * 8e3 / t)
                            .collect()
                    }
                    Some(s) => {
                        let early = get(s)?;
                        let t = late.sim_end_ps as f64 - early.sim_end_ps as f64;
                        if t <= 0.0 {
                            return Err(format!("run `{s}` does not end before `{run}`"));
                        }
                        let before: BTreeMap<u64, u64> = early
                            .flows
                            .iter()
                            .map(|f| (f.flow_id, f.bytes_received))
                            .collect();
                        fl.iter()
                            .map(|f| {
                                let b0 = before.get(&f.flow_id).copied().unwrap_or(0);
                                (f.bytes_received - b0.min(f.bytes_received)) as f64 * 8e3 / t
                            })
                            .collect()
                    }
                };
                match stat {
                    Stat::Mean => g.iter().sum::<f64>() / g.len() as f64,
                    Stat::Min => g.iter().copied().fold(f64::MAX, f64::min),
                    Stat::Max => g.iter().copied().fold(f64::MIN, f64::max),
                    Stat::P10 => quantile(&mut g, 0.1),
                    Stat::Sum => g.iter().sum(),
                    Stat::Jain => jain_index(&g)
                        .ok_or_else(|| format!("run `{run}`: no flow received anything"))?,
                }
            }
            Metric::FlowsBelow { run, gbps, filter } => {
                let t = get(run)?.sim_end_ps as f64;
                flows(run, filter)?
                    .iter()
                    .filter(|f| (f.bytes_received as f64 * 8e3 / t) < *gbps)
                    .count() as f64
            }
            Metric::Utilisation {
                run,
                hosts,
                gbps,
                filter,
            } => {
                let t = get(run)?.sim_end_ps as f64;
                let bytes: u64 = flows(run, filter)?.iter().map(|f| f.bytes_received).sum();
                bytes as f64 * 8e3 / t / (*hosts as f64 * gbps)
            }
            Metric::Sum { run, field, filter } => {
                flows(run, filter)?.iter().map(|f| field.of(f)).sum::<u64>() as f64
            }
            Metric::PerFlowRatio {
                run,
                field,
                of,
                filter,
            } => {
                let fl = flows(run, filter)?;
                let den: u64 = fl.iter().map(|f| of.of(f)).sum();
                if den == 0 {
                    return Err(format!("{of:?} sums to 0 in `{run}`"));
                }
                fl.iter().map(|f| field.of(f)).sum::<u64>() as f64 / den as f64
            }
            Metric::Port { run, field } => {
                let p = &get(run)?.ports;
                (match field {
                    PortField::Trimmed => p.trimmed,
                    PortField::Bounced => p.bounced,
                    PortField::Dropped => p.dropped,
                    PortField::Dequeued => p.dequeued,
                    PortField::Marked => p.marked,
                }) as f64
            }
            Metric::Chip { run, field } => {
                let c = get(run)?
                    .chip
                    .ok_or_else(|| format!("run `{run}` has no Tofino chip"))?;
                (match field {
                    ChipField::TrimmedIngress => c.trimmed_ingress,
                    ChipField::TrimmedDod => c.trimmed_dod,
                    ChipField::TrimmedOverflow => c.trimmed_overflow,
                    ChipField::Trims => {
                        c.trimmed_ingress + c.trimmed_dod + c.trimmed_overflow + c.mirrored
                    }
                    ChipField::Deflected => c.deflected,
                    ChipField::Mirrored => c.mirrored,
                    ChipField::DodMaxPackets => c.dod_max_packets,
                    ChipField::DodDropped => c.dod_dropped,
                    ChipField::ModDropped => c.mod_dropped,
                }) as f64
            }
            Metric::HeaderLatency { run, q } => {
                let mut v: Vec<f64> = get(run)?
                    .traced
                    .headers
                    .iter()
                    .map(|h| h.latency_ps as f64 / 1e6)
                    .collect();
                if v.is_empty() {
                    return Err(format!("no traced header in `{run}`"));
                }
                quantile(&mut v, *q)
            }
            Metric::AckLatency { run, .. } | Metric::Rtt { run, .. } => {
                let d = traced(run)?;
                let (ps, q) = match self {
                    Metric::AckLatency { q, .. } => (&d.traced.acks.send_to_ack_ps, q),
                    Metric::Rtt { q, .. } => (&d.traced.acks.rtt_ps, q),
                    _ => unreachable!("matched above"),
                };
                let mut v: Vec<f64> = ps.iter().map(|&x| x as f64 / 1e6).collect();
                if v.is_empty() {
                    return Err(format!(
                        "no acknowledged data packet in the trace of `{run}`"
                    ));
                }
                quantile_or_mean(&mut v, *q)
            }
            Metric::QueueTime {
                run,
                entity,
                port,
                q,
                from_us,
            } => {
                let d = get(run)?;
                let Some(v) = d.traced.queue_time_ps.get(&(*entity, *port)) else {
                    return Err(format!(
                        "no queue series for entity {entity} port {port} in `{run}` (enable [trace.queues])"
                    ));
                };
                let from = from_us.saturating_mul(1_000_000);
                let mut v: Vec<f64> = v
                    .iter()
                    .filter(|&&(t, _)| t >= from)
                    .map(|&(_, x)| x as f64 / 1e6)
                    .collect();
                if v.is_empty() {
                    return Err(format!("no queue sample in `{run}`"));
                }
                quantile_or_mean(&mut v, *q)
            }
            Metric::OneWay {
                run,
                q,
                from,
                filter,
            } => {
                let d = traced(run)?;
                // The start of every flow the filter keeps; a packet of any
                // other flow is left out.
                let starts: HashMap<u64, u64> = d
                    .flows
                    .iter()
                    .filter(|f| filter.keeps(f))
                    .map(|f| (f.flow_id, f.start_ps))
                    .collect();
                let mut v: Vec<f64> = d
                    .traced
                    .arrivals
                    .iter()
                    .filter_map(|a| {
                        let t0 = *starts.get(&a.flow)?;
                        match from {
                            DelayFrom::Send => a.delay_ps,
                            DelayFrom::FlowStart => Some(a.at_ps.saturating_sub(t0)),
                        }
                    })
                    .map(|x| x as f64 / 1e6)
                    .collect();
                if v.is_empty() {
                    let whose = if *filter == Filter::default() {
                        ""
                    } else {
                        " of the flows its filter keeps"
                    };
                    return Err(format!(
                        "no data packet{whose} arrived in the trace of `{run}`"
                    ));
                }
                quantile_or_mean(&mut v, *q)
            }
            Metric::Jain {
                run,
                from_us,
                until_us,
                bin_us,
            } => {
                let d = traced(run)?;
                jain_mean(&d.flows, &d.traced.arrivals, *from_us, *until_us, *bin_us)
                    .ok_or_else(|| format!("no arrival in the windows of `{run}`"))?
            }
            Metric::CongestionPoints { run, n } => {
                let d = traced(run)?;
                let h = &d.traced.congestion_points;
                let total: u64 = h.iter().sum();
                if total == 0 {
                    return Err(format!("no data packet in the trace of `{run}`"));
                }
                h.get(*n as usize).copied().unwrap_or(0) as f64 / total as f64
            }
            Metric::Trims { run, tier } => {
                let d = traced(run)?;
                let t = &d.traced.trims;
                (match tier {
                    TrimTier::TorUp => t.tor_up,
                    TrimTier::TorDown => t.tor_down,
                    TrimTier::Agg => t.agg,
                    TrimTier::Core => t.core,
                    TrimTier::PastFirstTor => t.past_first_tor(),
                    TrimTier::Uplinks => t.uplinks(),
                }) as f64
            }
            Metric::FirstHeader { run, since_us } => {
                let t = get(run)?.traced.headers.iter().map(|h| h.at_ps).min();
                t.ok_or(format!("no traced header in `{run}`"))? as f64 / 1e6 - since_us
            }
            Metric::FirstDeflection { run, since_us } => {
                let t = get(run)?.traced.first_dod_ps;
                t.ok_or(format!("no DoD queue in the chip trace of `{run}`"))? as f64 / 1e6
                    - since_us
            }
            Metric::ModeShare { run, port, mode } => {
                let d = get(run)?;
                if !d.traced.chip_traced {
                    return Err(format!("no chip trace in `{run}` (trace.tofino.enabled)"));
                }
                super::traced::mode_share(&d.traced.modes, *port, *mode as u32, d.sim_end_ps)
            }
            Metric::Replay { run, field } => {
                let r = get(run)?
                    .replay
                    .as_ref()
                    .ok_or_else(|| format!("run `{run}` has no [replay]"))?;
                match field {
                    ReplayField::OverdueFraction => r.overdue_fraction,
                    ReplayField::OverdueBeyondTFraction => r.overdue_beyond_t_fraction,
                    ReplayField::MaxLateUs => r.max_late_us,
                    ReplayField::OriginalMeanQueueingUs => r.original_mean_queueing_us,
                    ReplayField::ReplayMeanQueueingUs => r.replay_mean_queueing_us,
                    ReplayField::Packets => r.packets as f64,
                }
            }
            Metric::Pulls { run, field } => {
                let p = &get(run)?.pulls;
                match field {
                    PullField::MinGapUs => {
                        p.min_gap_ps.ok_or(format!("no pull gaps in `{run}`"))? as f64 / 1e6
                    }
                    PullField::IntervalUs => p.interval_ps as f64 / 1e6,
                    PullField::ShareAtInterval => {
                        if p.gaps == 0 {
                            return Err(format!("no pull gaps in `{run}`"));
                        }
                        p.gaps_at_interval as f64 / p.gaps as f64
                    }
                }
            }
            Metric::FctMean {
                run,
                filter,
                by_bytes,
                completion,
            } => mean_of(flows(run, filter)?, *by_bytes, |f| completion.fct_ps(f))
                .ok_or_else(|| format!("no flow of run `{run}` finished"))?,
            Metric::PrefixMean { run, bytes, filter } => {
                let done = super::one_way::prefix_done(&traced(run)?.traced.arrivals, *bytes);
                let fl = flows(run, filter)?;
                let v: Vec<f64> = fl
                    .iter()
                    .filter_map(|f| {
                        done.get(&f.flow_id)
                            .map(|&t| t.saturating_sub(f.start_ps) as f64 / 1e12)
                    })
                    .collect();
                if v.is_empty() {
                    return Err(format!(
                        "no matching flow of `{run}` delivered its first {bytes} bytes in the trace"
                    ));
                }
                v.iter().sum::<f64>() / v.len() as f64
            }
            Metric::RttMean {
                run,
                filter,
                by_bytes,
            } => mean_of(flows(run, filter)?, *by_bytes, |f| f.rtt_mean_ps)
                .ok_or_else(|| format!("no flow of run `{run}` measured an RTT"))?,
            Metric::Reduction { a, b } => 1.0 - a.eval_in(runs)? / b.eval_in(runs)?,
            Metric::Rc3Model {
                packets,
                rtt_ms,
                gbps,
                load,
                iw,
            } => crate::transport::rc3::LooseModel {
                rtt_s: rtt_ms / 1e3,
                bw_bps: gbps * 1e9,
                load: *load,
                iw_packets: *iw,
                packet_bytes: 1500.0,
            }
            .gain(*packets),
            Metric::Ratio { a, b } => a.eval_in(runs)? / b.eval_in(runs)?,
            Metric::Diff { a, b } => a.eval_in(runs)? - b.eval_in(runs)?,
            Metric::Scale { of, by } => of.eval_in(runs)? * by,
            Metric::SeedMean { of } => {
                let mut used = Vec::new();
                of.runs(&mut used);
                let mut counts = used.iter().map(|u| runs.seeds(u)).filter(|&n| n > 0);
                let n = counts.next().ok_or("seed_mean reads no repeated run")?;
                if counts.any(|c| c != n) {
                    return Err("the runs seed_mean reads repeat over different seed counts".into());
                }
                let mut sum = 0.0;
                for k in 1..=n {
                    sum += of.eval_in(&Runs {
                        all: runs.all,
                        seed: Some(k),
                    })?;
                }
                sum / n as f64
            }
            Metric::Mean { of } => {
                if of.is_empty() {
                    return Err("mean of no values".into());
                }
                let mut sum = 0.0;
                for m in of {
                    sum += m.eval_in(runs)?;
                }
                sum / of.len() as f64
            }
            Metric::RelChange { a, b } => (a.eval_in(runs)? / b.eval_in(runs)? - 1.0).abs(),
        })
    }
}

/// [`Metric::Jain`]'s default window, µs.
fn one_ms() -> u64 {
    1000
}

/// [`Metric::Jain`]'s mean over the windows with arrivals; None if none has.
/// Only windows that see an arrival hold a row of per-flow bytes, so the
/// memory follows the trace, whatever span the target asks for.
fn jain_mean(
    flows: &[FlowRecord],
    arrivals: &[super::one_way::Arrival],
    from_us: u64,
    until_us: u64,
    bin_us: u64,
) -> Option<f64> {
    let bin_ps = bin_us.max(1).saturating_mul(1_000_000);
    let (from_ps, until_ps) = (
        from_us.saturating_mul(1_000_000),
        until_us.saturating_mul(1_000_000),
    );
    let index: HashMap<u64, usize> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| (f.flow_id, i))
        .collect();
    let mut bytes: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for a in arrivals {
        let b = a.at_ps / bin_ps;
        if b * bin_ps < from_ps || b * bin_ps >= until_ps {
            continue;
        }
        if let Some(&i) = index.get(&a.flow) {
            bytes.entry(b).or_insert_with(|| vec![0.0; flows.len()])[i] += a.payload_bytes as f64;
        }
    }
    let js: Vec<f64> = bytes.values().filter_map(|x| jain_index(x)).collect();
    (!js.is_empty()).then(|| js.iter().sum::<f64>() / js.len() as f64)
}

/// Jain's fairness index (Σx)² / (n Σx²); None when every x is 0.
fn jain_index(x: &[f64]) -> Option<f64> {
    let (sum, sq) = x.iter().fold((0.0, 0.0), |(s, q), &v| (s + v, q + v * v));
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
}

/// The q-quantile with linear interpolation: psim-analyze's percentiles
/// (docs/analysis.md, "Percentiles"; numpy's default).
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The `q` quantile of `v`, or its mean when `q` is None (`v` not empty).
fn quantile_or_mean(v: &mut [f64], q: Option<f64>) -> f64 {
    match q {
        Some(q) => quantile(v, q),
        None => v.iter().sum::<f64>() / v.len() as f64,
    }
}

/// The mean of `value` (ps, as seconds) over the `flows` that have one: over
/// flows, or with `by_bytes` weighted by flow size. None when none has one.
fn mean_of<'a>(
    flows: impl IntoIterator<Item = &'a FlowRecord>,
    by_bytes: bool,
    value: impl Fn(&FlowRecord) -> Option<u64>,
) -> Option<f64> {
    let (mut num, mut den) = (0.0, 0.0);
    for f in flows {
        let Some(v) = value(f) else { continue };
        let w = if by_bytes {
            f.size_bytes.unwrap_or(0) as f64
        } else {
            1.0
        };
        num += w * v as f64 / 1e12;
        den += w;
    }
    (den > 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::counters::PortCounters;
    use crate::transport::PullStats;

    fn flow(id: u64, size: u64, fct_us: u64, bytes: u64) -> FlowRecord {
        FlowRecord {
            flow_id: id,
            src: id as u32,
            dst: 0,
            protocol: "ndp".into(),
            priority: 0,
            size_bytes: Some(size),
            start_ps: 0,
            finish_ps: Some(fct_us * 1_000_000),
            fct_ps: Some(fct_us * 1_000_000),
            ideal_fct_ps: Some(fct_us * 500_000),
            bytes_sent: bytes,
            bytes_received: bytes,
            packets_sent: 10,
            packets_received: 10,
            retransmissions: 1,
            trims: 2,
            bounces: 0,
            timeouts: 0,
            sender_finish_ps: None,
            rtt_samples: 0,
            rtt_mean_ps: None,
        }
    }

    fn one(flows: Vec<FlowRecord>, end_ps: u64) -> BTreeMap<String, RunData> {
        let data = RunData {
            flows,
            sim_end_ps: end_ps,
            ports: PortCounters::default(),
            pulls: PullStats::default(),
            chip: None,
            traced: Default::default(),
            replay: None,
        };
        BTreeMap::from([("r".to_string(), data)])
    }

    /// The mean slowdown averages per-flow FCT/ideal ratios (not the ratio
    /// of the means), skips flows with no ideal, and filters by size.
    #[test]
    fn slowdown_mean_averages_per_flow_ratios() {
        let mut a = flow(1, 1000, 10, 1000); // slowdown 2
        let mut b = flow(2, 5000, 40, 5000);
        b.ideal_fct_ps = Some(10_000_000); // slowdown 4
        let mut c = flow(3, 9000, 90, 9000);
        c.ideal_fct_ps = None; // no ideal: not counted
        a.protocol = "irn".into();
        let runs = one(vec![a, b, c], 0);
        let m = |filter| Metric::SlowdownMean {
            run: "r".into(),
            filter,
        };
        assert!((m(Filter::default()).eval(&runs).unwrap() - 3.0).abs() < 1e-12);
        let small = Filter {
            max_size: Some(1000),
            ..Filter::default()
        };
        assert!((m(small).eval(&runs).unwrap() - 2.0).abs() < 1e-12);
        let only_c = Filter {
            min_size: Some(9000),
            ..Filter::default()
        };
        assert!(m(only_c)
            .eval(&runs)
            .unwrap_err()
            .contains("no finished flow"));
    }

    /// `seed_mean` over repeated runs: `a` at seeds 1-3 (last FCTs 10, 20,
    /// 60 us), `b` at seeds 1-3 (5, 10, 15 us) and `c` once (20 us). The
    /// mean of a/b per seed is (2 + 2 + 4)/3; the ratio of the means is
    /// 30/10 = 3; a/c per seed (0.5, 1, 3) averages 1.5. A repeated run read
    /// bare, or runs of different seed counts, are errors that say so.
    #[test]
    fn seed_mean_reads_each_seed_of_a_repeated_run() {
        let mut runs = BTreeMap::new();
        let mut add = |name: &str, fct_us: u64| {
            let r = one(vec![flow(1, 1000, fct_us, 1000)], 0)
                .remove("r")
                .unwrap();
            runs.insert(name.to_string(), r);
        };
        for (k, (a, b)) in [(10, 5), (20, 10), (60, 15)].into_iter().enumerate() {
            add(&format!("a#{}", k + 1), a);
            add(&format!("b#{}", k + 1), b);
        }
        add("c", 20);
        add("d#1", 1);
        let last = |run: &str| {
            Box::new(Metric::LastFct {
                run: run.into(),
                filter: Filter::default(),
            })
        };
        let seed_mean = |of: Metric| Metric::SeedMean { of: Box::new(of) };
        let v = |m: &Metric| m.eval(&runs);
        let per_seed = seed_mean(Metric::Ratio {
            a: last("a"),
            b: last("b"),
        });
        assert!((v(&per_seed).unwrap() - 8.0 / 3.0).abs() < 1e-12);
        let of_means = Metric::Ratio {
            a: Box::new(seed_mean(*last("a"))),
            b: Box::new(seed_mean(*last("b"))),
        };
        assert!((v(&of_means).unwrap() - 3.0).abs() < 1e-12);
        let against_once = seed_mean(Metric::Ratio {
            a: last("a"),
            b: last("c"),
        });
        assert!((v(&against_once).unwrap() - 1.5).abs() < 1e-12);
        let bare = v(&last("a")).unwrap_err();
        assert!(bare.contains("repeats over seeds"), "{bare}");
        let uneven = seed_mean(Metric::Ratio {
            a: last("a"),
            b: last("d"),
        });
        assert!(v(&uneven).unwrap_err().contains("different seed counts"));
        assert!(v(&seed_mean(*last("c")))
            .unwrap_err()
            .contains("no repeated run"));
        let mut bare_runs = Vec::new();
        of_means.bare_runs(&mut bare_runs);
        assert!(bare_runs.is_empty(), "{bare_runs:?}");
        let mut all = Vec::new();
        of_means.runs(&mut all);
        assert_eq!(all, ["a", "b"]);
    }

    /// Mean FCT over flows and over bytes, the size, entry and priority
    /// filters, the reduction, and the loose model's gain.
    #[test]
    fn fct_means_filters_and_reductions() {
        // Sizes 1000 B at 10 us and 3000 B at 30 us (entry 1, priority 2).
        let mut big = flow(workloads::flow_id(1, 0, 0), 3000, 30, 3000);
        big.priority = 2;
        let runs = one(vec![flow(1, 1000, 10, 1000), big], 0);
        let mean = |by_bytes, filter| Metric::FctMean {
            run: "r".into(),
            filter,
            by_bytes,
            completion: Completion::Receiver,
        };
        let v = |m: &Metric| m.eval(&runs).unwrap();
        assert!((v(&mean(false, Filter::default())) - 20e-6).abs() < 1e-15);
        // (1000 x 10 + 3000 x 30) / 4000 = 25 us.
        assert!((v(&mean(true, Filter::default())) - 25e-6).abs() < 1e-15);
        // Ending at the sender: the small flow's ACK came back at 14 us, the
        // big flow's never did (it does not count).
        let mut acked = runs.clone();
        acked.get_mut("r").unwrap().flows[0].sender_finish_ps = Some(14_000_000);
        let sender = Metric::FctMean {
            run: "r".into(),
            filter: Filter::default(),
            by_bytes: false,
            completion: Completion::Sender,
        };
        assert!((sender.eval(&acked).unwrap() - 14e-6).abs() < 1e-15);
        assert!(
            sender.eval(&runs).is_err(),
            "no flow completed at its sender"
        );
        let only = |f: Filter| v(&mean(false, f));
        let small = Filter {
            max_size: Some(1000),
            ..Filter::default()
        };
        assert!((only(small) - 10e-6).abs() < 1e-15);
        let large = Filter {
            min_size: Some(1001),
            ..Filter::default()
        };
        assert!((only(large) - 30e-6).abs() < 1e-15);
        let entry1 = Filter {
            entry: Some(1),
            ..Filter::default()
        };
        assert!((only(entry1) - 30e-6).abs() < 1e-15);
        let prio2 = Filter {
            priority: Some(2),
            ..Filter::default()
        };
        assert!((only(prio2) - 30e-6).abs() < 1e-15);
        // RTT means: the small flow 2 us, the big one 4 us; a flow without
        // samples does not count.
        let mut rtts = runs.clone();
        let fl = &mut rtts.get_mut("r").unwrap().flows;
        fl[0].rtt_mean_ps = Some(2_000_000);
        fl[1].rtt_mean_ps = Some(4_000_000);
        let mut silent = flow(2, 5000, 50, 5000);
        silent.rtt_mean_ps = None;
        fl.push(silent);
        let rtt = |by_bytes| {
            Metric::RttMean {
                run: "r".into(),
                filter: Filter::default(),
                by_bytes,
            }
            .eval(&rtts)
            .unwrap()
        };
        assert!((rtt(false) - 3e-6).abs() < 1e-15);
        // (1000 x 2 + 3000 x 4) / 4000 = 3.5 us.
        assert!((rtt(true) - 3.5e-6).abs() < 1e-15);
        let none = one(vec![flow(1, 1000, 10, 1000)], 0);
        let m = Metric::RttMean {
            run: "r".into(),
            filter: Filter::default(),
            by_bytes: false,
        };
        assert!(m.eval(&none).unwrap_err().contains("measured an RTT"));
        // Start windows are inclusive: the big flow starts at 5 us.
        let mut late = runs.clone();
        late.get_mut("r").unwrap().flows[1].start_ps = 5_000_000;
        let window = |from, until| {
            let f = Filter {
                start_from_us: from,
                start_until_us: until,
                ..Filter::default()
            };
            mean(false, f).eval(&late).unwrap()
        };
        assert!((window(Some(5), None) - 30e-6).abs() < 1e-15);
        assert!((window(None, Some(4)) - 10e-6).abs() < 1e-15);
        assert!((window(Some(0), Some(5)) - 20e-6).abs() < 1e-15);
        let red = Metric::Reduction {
            a: Box::new(mean(false, Filter::default())),
            b: Box::new(mean(true, Filter::default())),
        };
        assert!((v(&red) - 0.2).abs() < 1e-12);
        let model = Metric::Rc3Model {
            packets: 2.0,
            rtt_ms: 40.0,
            gbps: 1.0,
            load: 0.3,
            iw: 4.0,
        };
        assert_eq!(v(&model), 0.0);
    }

    #[test]
    fn quantiles_interpolate_like_psim_analyze() {
        // docs/analysis.md's pinned example: 1..=1000 gives p50 500.5, p99 990.01.
        let mut v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert!((quantile(&mut v, 0.5) - 500.5).abs() < 1e-9);
        assert!((quantile(&mut v, 0.99) - 990.01).abs() < 1e-9);
    }

    #[test]
    fn a_lone_packet_at_the_optimum_is_zero_over() {
        // 9000 B across 6 hops at 10 Gb/s: 9064 B x 0.8 ns x 6 + 6 us = 49.5072 us.
        let runs = one(vec![flow(1, 9000, 0, 9000)], 0);
        let m = |fct_ps: u64| {
            let mut r = runs.get("r").unwrap().flows.clone();
            r[0].fct_ps = Some(fct_ps);
            let m = Metric::LastOverOptimum {
                run: "r".into(),
                filter: Filter::default(),
                mtu: 9000,
                gbps: 10.0,
                hops: 6,
                latency_us: 1.0,
            };
            m.eval(&one(r, 0)).unwrap()
        };
        assert!(m(49_507_200).abs() < 1e-12);
        assert!((m(2 * 49_507_200) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn goodput_spread_and_arithmetic() {
        let runs = one(
            vec![flow(1, 1000, 10, 1000), flow(2, 2000, 40, 2000)],
            1_000_000,
        );
        let g = |stat| Metric::Goodput {
            run: "r".into(),
            stat,
            filter: Filter::default(),
            since: None,
        };
        // 1000 B in 1 us = 8 Gb/s; 2000 B = 16 Gb/s.
        assert!((g(Stat::Mean).eval(&runs).unwrap() - 12.0).abs() < 1e-9);
        assert!((g(Stat::Min).eval(&runs).unwrap() - 8.0).abs() < 1e-9);
        assert!((g(Stat::Sum).eval(&runs).unwrap() - 24.0).abs() < 1e-9);
        // Jain: (8 + 16)² / (2 (8² + 16²)) = 576 / 640.
        assert!((g(Stat::Jain).eval(&runs).unwrap() - 0.9).abs() < 1e-12);
        let spread = Metric::FctSpread {
            run: "r".into(),
            filter: Filter::default(),
        };
        assert!((spread.eval(&runs).unwrap() - 4.0).abs() < 1e-12);
        let ratio = Metric::Ratio {
            a: Box::new(g(Stat::Min)),
            b: Box::new(g(Stat::Mean)),
        };
        assert!((ratio.eval(&runs).unwrap() - 8.0 / 12.0).abs() < 1e-12);
        // The mean of min (8) and sum (24): 16; of nothing: an error.
        let mean = Metric::Mean {
            of: vec![g(Stat::Min), g(Stat::Sum)],
        };
        assert!((mean.eval(&runs).unwrap() - 16.0).abs() < 1e-12);
        assert!(Metric::Mean { of: Vec::new() }.eval(&runs).is_err());
        let sized = Metric::Sum {
            run: "r".into(),
            field: Field::Trims,
            filter: Filter {
                size: Some(2000),
                ..Filter::default()
            },
        };
        assert_eq!(sized.eval(&runs).unwrap(), 2.0);
        let missing = Metric::Sum {
            run: "nope".into(),
            field: Field::Trims,
            filter: Filter::default(),
        };
        assert!(missing.eval(&runs).unwrap_err().contains("nope"));
    }

    /// The queue-time metric reads one port's series; a run without it is
    /// an error naming the missing trace.
    #[test]
    fn queue_time_reads_one_ports_series() {
        let mut runs = one(vec![flow(1, 9000, 10, 9000)], 1);
        let m = |q, from_us| Metric::QueueTime {
            run: "r".into(),
            entity: 11,
            port: 0,
            q,
            from_us,
        };
        assert!(m(None, 0)
            .eval(&runs)
            .unwrap_err()
            .contains("[trace.queues]"));
        let d = runs.get_mut("r").unwrap();
        let us = 1_000_000;
        d.traced.queue_time_ps.insert(
            (11, 0),
            vec![(0, 0), (us, 10 * us), (2 * us, 20 * us), (3 * us, 30 * us)],
        );
        assert_eq!(m(None, 0).eval(&runs).unwrap(), 15.0);
        assert_eq!(m(Some(1.0), 0).eval(&runs).unwrap(), 30.0);
        assert_eq!(m(Some(0.5), 0).eval(&runs).unwrap(), 15.0);
        // From 2 µs: the samples 20 and 30 µs.
        assert_eq!(m(None, 2).eval(&runs).unwrap(), 25.0);
    }

    /// Latency percentiles read the trace's reduction, in µs; a run
    /// without a packet trace is an error naming the missing trace.
    #[test]
    fn ack_latency_and_trims_read_the_trace() {
        let mut runs = one(vec![flow(1, 9000, 10, 9000)], 1);
        let m = |q: f64| Metric::AckLatency {
            run: "r".into(),
            q: Some(q),
        };
        assert!(m(0.5).eval(&runs).unwrap_err().contains("no packet trace"));
        let d = runs.get_mut("r").unwrap();
        d.traced.packets_traced = true;
        d.traced.acks.send_to_ack_ps = vec![300_000_000, 100_000_000, 200_000_000];
        d.traced.acks.rtt_ps = vec![50_000_000, 70_000_000];
        d.traced.trims.tor_up = 4;
        d.traced.trims.agg = 1;
        d.traced.trims.tor_down = 2;
        assert_eq!(m(0.5).eval(&runs).unwrap(), 200.0);
        assert_eq!(m(1.0).eval(&runs).unwrap(), 300.0);
        let mean = Metric::AckLatency {
            run: "r".into(),
            q: None,
        };
        assert_eq!(mean.eval(&runs).unwrap(), 200.0);
        let rtt = Metric::Rtt {
            run: "r".into(),
            q: Some(1.0),
        };
        assert_eq!(rtt.eval(&runs).unwrap(), 70.0);
        let trims = |tier| Metric::Trims {
            run: "r".into(),
            tier,
        };
        assert_eq!(trims(TrimTier::TorUp).eval(&runs).unwrap(), 4.0);
        assert_eq!(trims(TrimTier::PastFirstTor).eval(&runs).unwrap(), 3.0);
    }

    /// One-way delays: the mean, or a percentile, in µs; a traced run in
    /// which nothing arrived is an error, not a zero.
    #[test]
    fn one_way_delay_reads_the_trace() {
        use crate::validate::one_way::Arrival;
        let mut runs = one(vec![flow(1, 9000, 10, 9000)], 1);
        let m = |q| Metric::OneWay {
            run: "r".into(),
            q,
            from: DelayFrom::Send,
            filter: Filter::default(),
        };
        assert!(m(None).eval(&runs).unwrap_err().contains("no packet trace"));
        let d = runs.get_mut("r").unwrap();
        d.traced.packets_traced = true;
        assert!(m(None).eval(&runs).unwrap_err().contains("no data packet"));
        let d = runs.get_mut("r").unwrap();
        d.traced.arrivals = [1_000_000, 5_000_000, 3_000_000]
            .iter()
            .map(|&x| Arrival {
                flow: 1,
                seq: 0,
                at_ps: x,
                payload_bytes: 1000,
                delay_ps: Some(x),
            })
            .collect();
        assert_eq!(m(None).eval(&runs).unwrap(), 3.0);
        assert_eq!(m(Some(1.0)).eval(&runs).unwrap(), 5.0);
        assert_eq!(m(Some(0.5)).eval(&runs).unwrap(), 3.0);
        // From the flow's start (0.5 µs) to each arrival (at 1, 5 and 3
        // µs), whatever the packet's own send time (here its delay field):
        // 0.5, 4.5 and 2.5 µs.
        let from_start = |q| Metric::OneWay {
            run: "r".into(),
            q,
            from: DelayFrom::FlowStart,
            filter: Filter::default(),
        };
        let d = runs.get_mut("r").unwrap();
        d.flows[0].start_ps = 500_000;
        for a in &mut d.traced.arrivals {
            a.delay_ps = Some(1);
        }
        assert_eq!(from_start(None).eval(&runs).unwrap(), 2.5);
        assert_eq!(from_start(Some(1.0)).eval(&runs).unwrap(), 4.5);
        assert_eq!(m(None).eval(&runs).unwrap(), 1e-6);
        // A start window keeps only the packets of the flows that start in
        // it: a second flow starting at 2 µs, its one packet arriving at
        // 10 µs (8 µs from its start), is all that [2, 3] µs keeps.
        let d = runs.get_mut("r").unwrap();
        d.flows.push(flow(2, 1000, 10, 1000));
        d.flows[1].start_ps = 2_000_000;
        d.traced.arrivals.push(Arrival {
            flow: 2,
            seq: 0,
            at_ps: 10_000_000,
            payload_bytes: 1000,
            delay_ps: Some(1),
        });
        let window = |from_us, until_us| Metric::OneWay {
            run: "r".into(),
            q: None,
            from: DelayFrom::FlowStart,
            filter: Filter {
                start_from_us: from_us,
                start_until_us: until_us,
                ..Filter::default()
            },
        };
        assert_eq!(window(Some(2), Some(3)).eval(&runs).unwrap(), 8.0);
        assert_eq!(window(None, Some(1)).eval(&runs).unwrap(), 2.5);
        assert_eq!(
            from_start(None).eval(&runs).unwrap(),
            (0.5 + 4.5 + 2.5 + 8.0) / 4.0
        );
        let e = window(Some(4), None).eval(&runs).unwrap_err();
        assert!(
            e.contains("no data packet of the flows its filter keeps"),
            "{e}"
        );
    }

    /// A traced arrival without a one-way delay.
    fn arrival(
        flow: u64,
        seq: u64,
        at_ps: u64,
        payload_bytes: u32,
    ) -> crate::validate::one_way::Arrival {
        crate::validate::one_way::Arrival {
            flow,
            seq,
            at_ps,
            payload_bytes,
            delay_ps: None,
        }
    }

    /// The span by hand: flows start at 0 and 1 µs and finish at 10 and
    /// 30 µs: 30 µs. An unfinished flow makes it unknown, not shorter, or,
    /// asked for a lower bound, ends with the run.
    #[test]
    fn span_runs_from_the_first_start_to_the_last_finish() {
        let mut fl = vec![flow(1, 1000, 10, 1000), flow(2, 1000, 29, 1000)];
        fl[1].start_ps = 1_000_000;
        fl[1].finish_ps = Some(30_000_000);
        let m = |open_until_end| Metric::Span {
            run: "r".into(),
            filter: Filter::default(),
            open_until_end,
        };
        let v = m(false).eval(&one(fl.clone(), 1)).unwrap();
        assert!((v - 30e-6).abs() < 1e-15, "{v}");
        fl[0].finish_ps = None;
        let e = m(false).eval(&one(fl.clone(), 1)).unwrap_err();
        assert!(e.contains("1 of the 2 matching flows"), "{e}");
        // As a lower bound the open flow ends with the run (50 µs).
        let v = m(true).eval(&one(fl, 50_000_000)).unwrap();
        assert!((v - 50e-6).abs() < 1e-15, "{v}");
    }

    /// Start-up buffering by hand: flow 1 starts at 0 and holds its first
    /// 2000 bytes at 3 µs; flow 2 starts at 1 µs and holds them at 6 µs;
    /// flow 3 never does and is left out: (3 + 5) / 2 = 4 µs. A filter that
    /// keeps only flow 3 is an error, not a zero.
    #[test]
    fn prefix_mean_reads_the_trace() {
        let mut fl = vec![
            flow(1, 4000, 10, 4000),
            flow(2, 4000, 10, 4000),
            flow(3, 4000, 10, 4000),
        ];
        fl[1].start_ps = 1_000_000;
        let mut runs = one(fl, 1);
        let m = |filter| Metric::PrefixMean {
            run: "r".into(),
            bytes: 2000,
            filter,
        };
        assert!(m(Filter::default())
            .eval(&runs)
            .unwrap_err()
            .contains("no packet trace"));
        let at = |flow, seq, us: u64| arrival(flow, seq, us * 1_000_000, 1000);
        let d = runs.get_mut("r").unwrap();
        d.traced.packets_traced = true;
        d.traced.arrivals = vec![
            at(1, 1000, 2),
            at(1, 0, 3),
            at(2, 0, 4),
            at(3, 0, 5),
            at(2, 1000, 6),
        ];
        let v = m(Filter::default()).eval(&runs).unwrap();
        assert!((v - 4e-6).abs() < 1e-15, "{v}");
        assert!(m(Filter {
            src: Some(3),
            ..Filter::default()
        })
        .eval(&runs)
        .unwrap_err()
        .contains("first 2000 bytes"));
    }

    /// Jain's index by hand: two flows (ids 1 and 2) and 1 µs windows.
    /// Window 0: 1000 B and 1000 B, J = 1. Window 1: 1000 B and nothing,
    /// J = 1000² / (2 x 1000²) = 0.5. Window 2: no arrival, left out.
    /// Window 3: 3000 B and 1000 B, J = 4000² / (2 x 10⁷) = 0.8. Arrivals
    /// of a flow not in the table, or outside the windows, count nowhere.
    #[test]
    fn jain_index_per_window_by_hand() {
        let mut runs = one(vec![flow(1, 9000, 10, 9000), flow(2, 9000, 10, 9000)], 1);
        let at = |flow, us: u64, bytes| arrival(flow, 0, us * 1_000_000 + 500_000, bytes);
        let d = runs.get_mut("r").unwrap();
        d.traced.packets_traced = true;
        d.traced.arrivals = vec![
            at(1, 0, 1000),
            at(2, 0, 1000),
            at(1, 1, 1000),
            at(9, 1, 5000),
            at(1, 3, 3000),
            at(2, 3, 1000),
            at(2, 4, 7000),
        ];
        let m = |from_us, until_us| Metric::Jain {
            run: "r".into(),
            from_us,
            until_us,
            bin_us: 1,
        };
        let v = |from, until| m(from, until).eval(&runs).unwrap();
        assert!((v(0, 1) - 1.0).abs() < 1e-12);
        assert!((v(1, 2) - 0.5).abs() < 1e-12);
        assert!((v(0, 4) - (1.0 + 0.5 + 0.8) / 3.0).abs() < 1e-12);
        assert!(m(2, 3).eval(&runs).unwrap_err().contains("no arrival"));
    }

    /// Congestion-point shares: 1 of 4 packets met none, 3 met two, none
    /// met five; a trace without data packets is an error.
    #[test]
    fn congestion_point_shares_read_the_trace() {
        let mut runs = one(vec![flow(1, 9000, 10, 9000)], 1);
        let m = |n| Metric::CongestionPoints { run: "r".into(), n };
        assert!(m(0).eval(&runs).unwrap_err().contains("no packet trace"));
        let d = runs.get_mut("r").unwrap();
        d.traced.packets_traced = true;
        assert!(m(0).eval(&runs).unwrap_err().contains("no data packet"));
        let d = runs.get_mut("r").unwrap();
        d.traced.congestion_points = vec![1, 0, 3];
        assert_eq!(m(0).eval(&runs).unwrap(), 0.25);
        assert_eq!(m(2).eval(&runs).unwrap(), 0.75);
        assert_eq!(m(5).eval(&runs).unwrap(), 0.0);
    }
}
