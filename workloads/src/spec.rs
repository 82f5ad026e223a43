//! The scenario-facing description of one `[[traffic]]` entry.
//!
//! psim removes its own key `protocol` from each table and deserialises the rest into
//! [`PatternSpec`]. The key `pattern` picks the variant; every other key belongs to that pattern,
//! and an unknown key is an error (`deny_unknown_fields`) so that a typo never silently falls
//! back to a default. Units are part of the key names: `_bytes`, `_us`, `_ps`.
//! `docs/workloads.md` documents every key with its unit and default.

use serde::{Deserialize, Serialize};

fn zero() -> f64 {
    0.0
}
fn one() -> u32 {
    1
}

/// One `[[traffic]]` entry, tagged by its `pattern` key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
pub enum PatternSpec {
    /// Every participating host sends to its image under one random derangement.
    Permutation(PermutationSpec),
    /// Every participating host sends to independently drawn random destinations.
    Random(RandomSpec),
    /// Long-lived flows (no size) to random destinations or along a derangement.
    Background(BackgroundSpec),
    /// n senders to one receiver, once or repeated (open or closed loop).
    Incast(IncastSpec),
    /// Every host sends to every other host of its group.
    AllToAll(AllToAllSpec),
    /// Every listed sender sends to every listed receiver.
    ManyToMany(ManyToManySpec),
    /// NDP V23: A sends to B, C, D, E and F sends to E.
    SenderLimited(SenderLimitedSpec),
    /// Open-loop Poisson arrivals at a target load with sizes from a distribution.
    Poisson(PoissonSpec),
    /// Closed-loop clients: the next flow of a connection starts a think time after the previous one finished.
    ClosedLoop(ClosedLoopSpec),
    /// An HPC collective expressed as a dependency graph of flows.
    Collective(CollectiveSpec),
    /// An htsim connection-matrix (`.cm`) file, triggers included.
    CmFile(CmFileSpec),
    /// A CSV or Parquet flow list.
    FlowList(FlowListSpec),
}

impl PatternSpec {
    /// The `pattern` name as written in the scenario.
    pub fn name(&self) -> &'static str {
        match self {
            PatternSpec::Permutation(_) => "permutation",
            PatternSpec::Random(_) => "random",
            PatternSpec::Background(_) => "background",
            PatternSpec::Incast(_) => "incast",
            PatternSpec::AllToAll(_) => "all_to_all",
            PatternSpec::ManyToMany(_) => "many_to_many",
            PatternSpec::SenderLimited(_) => "sender_limited",
            PatternSpec::Poisson(_) => "poisson",
            PatternSpec::ClosedLoop(_) => "closed_loop",
            PatternSpec::Collective(_) => "collective",
            PatternSpec::CmFile(_) => "cm_file",
            PatternSpec::FlowList(_) => "flow_list",
        }
    }
}

/// `pattern = "permutation"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermutationSpec {
    /// Bytes per flow; absent = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Flows each host opens to its one destination (default 1).
    #[serde(default = "one")]
    pub flows_per_host: u32,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each flow starts uniformly in [start, start + jitter) µs (default 0).
    #[serde(default = "zero")]
    pub jitter_us: f64,
    /// Hosts that take no part (neither send nor receive).
    #[serde(default)]
    pub exclude_hosts: Vec<u32>,
}

/// `pattern = "random"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomSpec {
    /// Bytes per flow; absent = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Flows per host, each to its own random destination (default 1).
    #[serde(default = "one")]
    pub flows_per_host: u32,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each flow starts uniformly in [start, start + jitter) µs (default 0).
    #[serde(default = "zero")]
    pub jitter_us: f64,
    /// Hosts that take no part.
    #[serde(default)]
    pub exclude_hosts: Vec<u32>,
}

/// How a background flow picks its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Destination {
    /// Independent uniform choice among the other participating hosts.
    #[default]
    Random,
    /// One random derangement: each host sends to one host and receives from one host.
    Permutation,
}

/// `pattern = "background"`: long-lived flows that run to the end of the simulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSpec {
    /// Long-lived flows per host (default 1).
    #[serde(default = "one")]
    pub flows_per_host: u32,
    /// `"random"` (default) or `"permutation"`.
    #[serde(default)]
    pub destination: Destination,
    /// Random destinations outside the sender's group of this many
    /// consecutive hosts (a FatTree pod: the longest paths).
    #[serde(default)]
    pub far_group_size: Option<u32>,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each flow starts uniformly in [start, start + jitter) µs (default 0).
    #[serde(default = "zero")]
    pub jitter_us: f64,
    /// Hosts that take no part.
    #[serde(default)]
    pub exclude_hosts: Vec<u32>,
}

/// How incast senders are chosen when `sender_hosts` is not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SenderChoice {
    /// A random subset of the other hosts, drawn from the seed.
    #[default]
    Random,
    /// The hosts following the receiver: receiver+1, receiver+2, ... (mod hosts).
    Next,
}

/// How repeated incast rounds are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum IncastMode {
    /// Round r+1 starts `gap_us` after the last flow of round r finished.
    #[default]
    Closed,
    /// Round r starts at `start_us + r * period_us`, whatever the network does.
    Open,
}

/// `pattern = "incast"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncastSpec {
    /// The host all senders send to (default 0).
    #[serde(default)]
    pub receiver: u32,
    /// Number of senders (needed unless `sender_hosts` is given).
    #[serde(default)]
    pub senders: Option<u32>,
    /// Explicit sender hosts, in order (the first one is the "first sender").
    #[serde(default)]
    pub sender_hosts: Option<Vec<u32>>,
    /// `"random"` (default) or `"next"`, when `sender_hosts` is absent.
    #[serde(default)]
    pub sender_choice: SenderChoice,
    /// Draw a fresh random sender set for every round (default false; `sender_choice = "random"` only).
    #[serde(default)]
    pub resample_senders: bool,
    /// Bytes per sender; absent (and no `total_size_bytes`) = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Bytes per round striped over the senders (each sends ceil(total / senders)).
    #[serde(default)]
    pub total_size_bytes: Option<u64>,
    /// Size of the first sender's flow, if it differs (NDP V8: one short flow among long ones).
    #[serde(default)]
    pub first_sender_size_bytes: Option<u64>,
    /// Priority of the first sender's flow (default 0; 1 = prioritised, NDP V8/V15).
    #[serde(default)]
    pub first_sender_priority: u8,
    /// Start of the first round in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each flow starts uniformly in [round start, round start + jitter) µs (default 0).
    #[serde(default = "zero")]
    pub jitter_us: f64,
    /// Number of rounds (default 1).
    #[serde(default = "one")]
    pub repeat: u32,
    /// `"closed"` (default) or `"open"`.
    #[serde(default)]
    pub mode: IncastMode,
    /// Closed mode: delay in µs between the end of a round and the start of the next (default 0).
    #[serde(default = "zero")]
    pub gap_us: f64,
    /// Open mode: time in µs between round starts (required when open and repeat > 1).
    #[serde(default)]
    pub period_us: Option<f64>,
}

/// `pattern = "all_to_all"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllToAllSpec {
    /// Bytes per (sender, receiver) pair; absent = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Split the hosts into consecutive groups of this size (must divide the host count);
    /// absent = one group of all hosts.
    #[serde(default)]
    pub group_size: Option<u32>,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each sender starts all its flows at one time drawn uniformly in [start, start + jitter) µs.
    #[serde(default = "zero")]
    pub jitter_us: f64,
}

/// `pattern = "many_to_many"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManyToManySpec {
    /// Sending hosts.
    pub senders: Vec<u32>,
    /// Receiving hosts (a sender never sends to itself).
    pub receivers: Vec<u32>,
    /// Bytes per (sender, receiver) pair; absent = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Flows (connections) each sender opens to each receiver (default 1).
    #[serde(default = "one")]
    pub flows_per_pair: u32,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// Each sender starts all its flows at one time drawn uniformly in [start, start + jitter) µs.
    #[serde(default = "zero")]
    pub jitter_us: f64,
}

/// `pattern = "sender_limited"` (NDP V23).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderLimitedSpec {
    /// Hosts A, B, C, D, E, F (exactly six, distinct); default spreads them evenly over the hosts.
    #[serde(default)]
    pub hosts: Option<Vec<u32>>,
    /// Bytes per flow; absent = long-lived flows.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Start time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
}

/// What a Poisson load is a fraction of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoadOf {
    /// Each participating host offers `load × host_link_bps`.
    #[default]
    HostLink,
    /// All participating hosts together offer `load × bisection_bps`, split evenly.
    Bisection,
}

/// Named flow-size distributions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDistName {
    /// Web search (DCTCP).
    Websearch,
    /// Facebook Hadoop.
    FbHadoop,
    /// Alibaba storage.
    AliStorage,
    /// Facebook web as NDP's Fig. 23 draws it (a step CDF).
    FbWeb,
    /// Web search as pFabric's simulations tabulate it (1460-byte packets).
    WebsearchPfabric,
    /// VL2's data mining as pFabric's simulations tabulate it (1460-byte packets).
    Datamining,
    /// Benson et al.'s IMC 2010 data center sizes, eleven sizes in 1460-byte packets.
    Imc10,
    /// IRN heavy-tailed mix.
    IrnHeavy,
    /// Uniform in [`min_size_bytes`, `max_size_bytes`].
    Uniform,
    /// Always `size_bytes`.
    Fixed,
    /// A CDF file named by `cdf_file`.
    File,
}

impl SizeDistName {
    /// The bytes of one packet of a table counted in packets (pFabric's and pHost's 1460-byte
    /// packets: `websearch_pfabric`, `datamining`, `imc10`), or `None` for one in bytes. Only
    /// these tables take `packet_payload_bytes`.
    pub fn table_packet_bytes(self) -> Option<u64> {
        match self {
            SizeDistName::WebsearchPfabric | SizeDistName::Datamining | SizeDistName::Imc10 => {
                Some(1460)
            }
            _ => None,
        }
    }
}

/// `pattern = "poisson"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoissonSpec {
    /// Offered load as a fraction in (0, 1].
    pub load: f64,
    /// `"host_link"` (default) or `"bisection"`.
    #[serde(default)]
    pub load_of: LoadOf,
    /// Size distribution.
    pub size_dist: SizeDistName,
    /// `size_dist = "fixed"`: bytes per flow.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// `size_dist = "uniform"`: smallest size in bytes.
    #[serde(default)]
    pub min_size_bytes: Option<u64>,
    /// `size_dist = "uniform"`: largest size in bytes.
    #[serde(default)]
    pub max_size_bytes: Option<u64>,
    /// `size_dist = "file"`: path of a CDF in the project's format (relative to the scenario).
    #[serde(default)]
    pub cdf_file: Option<String>,
    /// Round every drawn size up to a whole multiple of this many bytes (e.g. a packet's
    /// payload, for workloads given in whole packets); the load accounts for it.
    #[serde(default)]
    pub size_quantum_bytes: Option<u64>,
    /// A table counted in 1460-byte packets (`websearch_pfabric`, `datamining`, `imc10`) drawn
    /// as the same number of packets of this payload each; the load accounts for it.
    #[serde(default)]
    pub packet_payload_bytes: Option<u64>,
    /// First arrivals are drawn from this time in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// No flow starts at or after this time in µs (default: the scenario's stop time).
    #[serde(default)]
    pub stop_us: Option<f64>,
    /// Hosts that take no part.
    #[serde(default)]
    pub exclude_hosts: Vec<u32>,
    /// Destinations outside the sender's group of this many consecutive
    /// hosts (a FatTree pod: the longest paths).
    #[serde(default)]
    pub far_group_size: Option<u32>,
    /// Priority of every flow of this entry (0 = normal; RC3's critical flows, [TH] §2.4.1).
    #[serde(default)]
    pub priority: u8,
}

/// Distribution of think times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ThinkDist {
    /// Exponential with mean `think_time_us` (its median is `ln 2` times the mean).
    #[default]
    Exponential,
    /// Always exactly `think_time_us`.
    Fixed,
}

/// `pattern = "closed_loop"` (NDP V25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopSpec {
    /// Independent client loops per host (default 1).
    #[serde(default = "one")]
    pub connections_per_host: u32,
    /// Mean think time in µs between a flow's end and the connection's next flow.
    pub think_time_us: f64,
    /// `"exponential"` (default) or `"fixed"`.
    #[serde(default)]
    pub think_dist: ThinkDist,
    /// Size distribution (same keys as `poisson`).
    pub size_dist: SizeDistName,
    /// `size_dist = "fixed"`: bytes per flow.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// `size_dist = "uniform"`: smallest size in bytes.
    #[serde(default)]
    pub min_size_bytes: Option<u64>,
    /// `size_dist = "uniform"`: largest size in bytes.
    #[serde(default)]
    pub max_size_bytes: Option<u64>,
    /// `size_dist = "file"`: path of a CDF file.
    #[serde(default)]
    pub cdf_file: Option<String>,
    /// Round every drawn size up to a whole multiple of this many bytes (as `poisson`).
    #[serde(default)]
    pub size_quantum_bytes: Option<u64>,
    /// Packets of this payload for a table counted in packets (as `poisson`).
    #[serde(default)]
    pub packet_payload_bytes: Option<u64>,
    /// Loops begin at this time in µs (default 0), each after one think time.
    #[serde(default = "zero")]
    pub start_us: f64,
    /// No flow starts at or after this time in µs (default: the scenario's stop time).
    #[serde(default)]
    pub stop_us: Option<f64>,
    /// Hosts that take no part.
    #[serde(default)]
    pub exclude_hosts: Vec<u32>,
    /// The hosts that run loops (default: every host not excluded).
    #[serde(default)]
    pub client_hosts: Option<Vec<u32>>,
    /// Every loop sends to this host, which runs no loop itself: a server
    /// ([TRIM] §8's memcached target). Default: a random other participant
    /// for each flow.
    #[serde(default)]
    pub target: Option<u32>,
    /// Flows per loop, then the loop ends (memcslap's requests per client).
    /// Default: no limit.
    #[serde(default)]
    pub requests: Option<u32>,
}

/// Collective algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Ring allreduce: 2(n-1) steps, each host sends size/n bytes to its right neighbour.
    RingAllreduce,
    /// Recursive doubling: log2(n) steps, host i exchanges size bytes with i XOR 2^k.
    RecursiveDoublingAllreduce,
    /// All-to-all in n-1 phases: in phase k host i sends size/n bytes to i+k+1.
    AllToAll,
    /// Halo exchange on a ring: each step every host sends size bytes to both neighbours.
    NeighbourExchange,
}

/// `pattern = "collective"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveSpec {
    /// Which collective.
    pub algorithm: Algorithm,
    /// Bytes of each host's buffer (see [`Algorithm`] for the per-flow size).
    pub size_bytes: u64,
    /// First host of the group (default 0).
    #[serde(default)]
    pub first_host: u32,
    /// Group size: hosts first_host .. first_host + hosts (default: all hosts from first_host).
    #[serde(default)]
    pub hosts: Option<u32>,
    /// When the first step starts, in µs (default 0).
    #[serde(default = "zero")]
    pub start_us: f64,
    /// How many times the collective runs back to back (default 1).
    #[serde(default = "one")]
    pub iterations: u32,
    /// Delay in µs between a step's completion at a host and its next step (default 0).
    #[serde(default = "zero")]
    pub step_delay_us: f64,
    /// Name used in the outputs (default: the algorithm name).
    #[serde(default)]
    pub name: Option<String>,
}

/// Unit of the `start` values in a `.cm` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    /// Picoseconds (current htsim).
    Ps,
    /// Nanoseconds.
    Ns,
    /// Microseconds (older htsim files).
    Us,
}

impl TimeUnit {
    /// Picoseconds per unit.
    pub fn ps(self) -> u64 {
        match self {
            TimeUnit::Ps => 1,
            TimeUnit::Ns => 1_000,
            TimeUnit::Us => 1_000_000,
        }
    }
}

/// `pattern = "cm_file"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmFileSpec {
    /// Path of the `.cm` file (relative to the scenario's folder).
    pub path: String,
    /// Unit of the file's `start` values: `"ps"`, `"ns"` or `"us"`. Required: htsim changed it.
    pub time_unit: TimeUnit,
    /// Delay in µs between a trigger firing and its flows starting (default 0).
    #[serde(default = "zero")]
    pub trigger_delay_us: f64,
}

/// Flow-list file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileFormat {
    /// Comma-separated text with a header row.
    Csv,
    /// Apache Parquet.
    Parquet,
}

/// `pattern = "flow_list"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowListSpec {
    /// Path of the file (relative to the scenario's folder).
    pub path: String,
    /// `"csv"` or `"parquet"`; default from the extension (`.parquet`/`.pq` = Parquet, else CSV).
    #[serde(default)]
    pub format: Option<FileFormat>,
}
