//! Queue disciplines: what an output port does with packets waiting for the
//! link.
//!
//! Every switch port and host NIC holds one [`Queue`]. A discipline decides,
//! on enqueue, whether the packet is queued, changed (ECN mark, payload
//! trimmed), dropped or sent back to its source, and may act on packets it
//! already holds (trim or evict a queued packet); on dequeue it picks the
//! next packet (FIFO, header-first round robin, priority, ...) and may drop
//! some first. Every such outcome is *reported* through the [`QueueCtx`],
//! naming the packet it happened to (ns-3's `DropBeforeEnqueue`,
//! `DropAfterDequeue` and `Mark`); the port counts and traces from the
//! reports, so no discipline keeps port counters of its own.
//!
//! Dispatch is static: [`disciplines!`] generates `enum Queue` and its
//! [`Discipline`] forwarding from one list, so the hot path has no virtual
//! calls. Adding a discipline is its file plus one line in that list.

pub mod classes;
pub mod codel;
pub mod cp;
pub mod droptail;
pub mod drr;
pub mod ecn_ramp;
pub mod edge_codel;
pub mod edge_ecn;
pub mod fifo_plus;
pub mod flows;
pub mod fq;
pub mod fq_codel;
pub mod lifo;
pub mod lstf;
pub mod ndp;
pub mod pfabric;
pub mod prio_drop;
pub mod priority;
pub mod random;
pub mod rank;
pub mod ranked;
pub mod red;
#[cfg(test)]
pub mod testkit;
#[cfg(test)]
mod ups_appendix_a;
pub mod voq;

pub use classes::ClassQueue;
pub use cp::CpQueue;
pub use droptail::DropTail;
pub use ndp::{NdpCounters, NdpQueue};
pub use priority::PriorityQueue;
pub use red::{Marking, RedQueue};

use crate::config::{bad, ConfigError};
use crate::net::PacketPool;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::transport::config::Micros;

/// A capacity limit, in packets or in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Capacity {
    /// At most this many packets.
    Packets(u32),
    /// At most this many bytes (packet sizes summed).
    Bytes(u64),
}

impl Capacity {
    /// Whether a queue holding `pkts` packets and `bytes` bytes has room for one more of `size` bytes.
    #[inline]
    pub fn fits(&self, pkts: u32, bytes: u64, size: u32) -> bool {
        match *self {
            Capacity::Packets(n) => pkts < n,
            Capacity::Bytes(b) => bytes + size as u64 <= b,
        }
    }

    /// A queue's occupancy in this capacity's unit: `pkts` or `bytes`.
    #[inline]
    pub fn occupancy(&self, pkts: u32, bytes: u64) -> u64 {
        match *self {
            Capacity::Packets(_) => pkts as u64,
            Capacity::Bytes(_) => bytes,
        }
    }
}

/// What a discipline did to one packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    /// The offered packet entered the queue (reported as offered).
    Queued,
    /// A packet got its ECN CE bit set (reported after the mark). A marked
    /// arrival is reported `Queued`, then `Marked`.
    Marked,
    /// The offered packet entered the queue with its payload cut (reported as
    /// it was before the cut).
    Trimmed,
    /// A packet already queued had its payload cut and stays queued
    /// (reported as it was before the cut), to make room for the offered
    /// packet, whose `Queued` report follows: NDP's tail trim.
    TrimmedQueued,
    /// The offered packet was discarded at enqueue.
    Dropped,
    /// A queued packet was pushed out to make room (pFabric).
    Evicted,
    /// A queued packet was discarded when it reached the head (CoDel).
    DequeueDropped,
    /// The offered packet (possibly trimmed) goes back to its source, with
    /// source and destination swapped: the port routes it back (NDP).
    Bounced,
}

impl Outcome {
    /// Whether the packet left the queue without being sent (it had been counted as enqueued).
    #[inline]
    pub fn discards_queued(self) -> bool {
        matches!(self, Outcome::Evicted | Outcome::DequeueDropped)
    }
}

/// One reported outcome and the packet it happened to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// What happened.
    pub outcome: Outcome,
    /// The packet it happened to (see [`Outcome`] for whether before or after the change).
    pub pkt: Packet,
}

/// What a discipline may know and where it reports, for one enqueue or dequeue.
pub struct QueueCtx<'a> {
    /// Current simulated time.
    pub now: u64,
    /// The owning entity's random stream (e.g. NDP's coin flip).
    pub rng: &'a mut Rng,
    /// Rate of the link this port feeds, bits per second.
    pub rate_bps: u64,
    /// Input port the packet came in on; None for packets a host's transport emits.
    pub ingress: Option<u16>,
    reports: &'a mut Vec<Report>,
    /// The shard's packet slots, where the NDP, priority and drop-tail
    /// disciplines keep their packets (`net/pool.rs`).
    pub pool: &'a mut PacketPool,
    /// The entity owning the port and the network, where the caller knows
    /// them ([`Self::placed`]): for what a packet's path costs to reach here.
    place: Option<(u32, &'a crate::topo::Topology)>,
    /// Until when each input port of the switch is busy feeding an output
    /// through the crossbar, ps, indexed by input port (`net/crossbar.rs`);
    /// empty where the switch has no crossbar, so every input is free.
    inputs_busy_until: &'a [u64],
}

impl<'a> QueueCtx<'a> {
    /// A context that appends its reports to `reports` (a scratch buffer the
    /// caller reuses, so reporting allocates nothing once it has grown) and
    /// keeps pooled packets in `pool`.
    #[inline]
    pub fn new(
        now: u64,
        rng: &'a mut Rng,
        rate_bps: u64,
        ingress: Option<u16>,
        reports: &'a mut Vec<Report>,
        pool: &'a mut PacketPool,
    ) -> Self {
        QueueCtx {
            now,
            rng,
            rate_bps,
            ingress,
            reports,
            pool,
            place: None,
            inputs_busy_until: &[],
        }
    }
    /// The same context, at a port of entity `node` of `topo` (None: not
    /// known, as in unit tests of other disciplines).
    #[inline]
    pub fn placed(mut self, place: Option<(u32, &'a crate::topo::Topology)>) -> Self {
        self.place = place;
        self
    }
    /// The same context, at a switch whose crossbar keeps input port `i`
    /// busy until `busy_until[i]` ps (`net/crossbar.rs`).
    #[inline]
    pub fn crossbar(mut self, busy_until: &'a [u64]) -> Self {
        self.inputs_busy_until = busy_until;
        self
    }
    /// Whether input port `port` may hand the crossbar a packet now: always,
    /// except at a switch with a crossbar while that input is still feeding
    /// another output.
    #[inline]
    pub fn input_free(&self, port: u16) -> bool {
        self.inputs_busy_until
            .get(port as usize)
            .is_none_or(|&t| t <= self.now)
    }
    /// What `pkt` needs, with no queueing anywhere, from when its transport
    /// stamped `sent_ps` until its last bit reaches this port's entity
    /// ([`crate::topo::Topology::t_min_to_ps`]); None where the place is not
    /// known or the entity is not on the packet's path.
    #[inline]
    pub fn t_min_here_ps(&self, pkt: &Packet) -> Option<u64> {
        let (node, topo) = self.place?;
        topo.t_min_to_ps(pkt.src, pkt.dst, pkt.path, pkt.size as u64, node)
    }
    /// t_min(p, α, dest) with α this port's entity: what `pkt` needs, with
    /// no queueing, from entering this port's queue until its last bit
    /// reaches its destination ([`crate::topo::Topology::t_min_from_ps`]);
    /// None where the place is not known or the path does not leave here.
    #[inline]
    pub fn t_min_from_here_ps(&self, pkt: &Packet) -> Option<u64> {
        let (node, topo) = self.place?;
        topo.t_min_from_ps(pkt.src, pkt.dst, pkt.path, pkt.size as u64, node)
    }
    /// Reports `outcome` for `pkt`.
    #[inline]
    pub fn report(&mut self, outcome: Outcome, pkt: Packet) {
        self.reports.push(Report { outcome, pkt });
    }
    /// Reports that the offered `pkt` entered the queue as it is.
    #[inline]
    pub fn queued(&mut self, pkt: &Packet) {
        self.report(Outcome::Queued, pkt.clone());
    }
    /// Reports that `pkt` (after the change) was ECN-marked.
    #[inline]
    pub fn marked(&mut self, pkt: &Packet) {
        self.report(Outcome::Marked, pkt.clone());
    }
    /// Reports that the offered `pkt` (before the cut) was admitted trimmed.
    #[inline]
    pub fn trimmed(&mut self, pkt: &Packet) {
        self.report(Outcome::Trimmed, pkt.clone());
    }
    /// Reports that the queued `pkt` (before the cut) was trimmed in place.
    #[inline]
    pub fn trimmed_queued(&mut self, pkt: &Packet) {
        self.report(Outcome::TrimmedQueued, pkt.clone());
    }
    /// Reports that the offered `pkt` was dropped.
    #[inline]
    pub fn dropped(&mut self, pkt: Packet) {
        self.report(Outcome::Dropped, pkt);
    }
    /// Reports that the queued `pkt` was evicted.
    #[inline]
    pub fn evicted(&mut self, pkt: Packet) {
        self.report(Outcome::Evicted, pkt);
    }
    /// Reports that the queued `pkt` was dropped at dequeue.
    #[inline]
    pub fn dequeue_dropped(&mut self, pkt: Packet) {
        self.report(Outcome::DequeueDropped, pkt);
    }
    /// Reports that `pkt` (addresses already swapped) goes back to its source.
    #[inline]
    pub fn bounced(&mut self, pkt: Packet) {
        self.report(Outcome::Bounced, pkt);
    }
}

/// What every queue discipline provides. Outcomes go to the context's
/// reports; the port acts on them.
pub trait Discipline {
    /// Offers a packet. Reports exactly one of `Queued`, `Trimmed`, `Dropped`
    /// or `Bounced` for it, plus any mark and anything done to queued packets.
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>);
    /// Takes the next packet to transmit; may report `DequeueDropped` first.
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet>;
    /// Asks the CPU to fetch the packet the next `dequeue` is likely to take
    /// (a cache hint, `engine/prefetch.rs`; no effect on any result); a
    /// discipline that keeps its packets in the shard's pool finds them in
    /// `pool`. Default: nothing.
    #[inline]
    fn prefetch_next(&self, _pool: &PacketPool) {}
    /// Asks the CPU to fetch the slot the next `enqueue` is likely to fill
    /// (a cache hint, like [`Discipline::prefetch_next`]). Default: nothing.
    #[inline]
    fn prefetch_tail(&self, _pool: &PacketPool) {}
    /// Packets waiting.
    fn len_packets(&self) -> u32;
    /// Bytes waiting.
    fn len_bytes(&self) -> u64;
    /// Stops (`true`) or resumes serving priority `prio` (PFC pause). Returns
    /// whether the discipline holds back that priority alone. Default: it
    /// has no per-priority service (false), and the port stops entirely
    /// while any priority is paused.
    fn set_paused(&mut self, _prio: u8, _paused: bool) -> bool {
        false
    }
    /// The input port of the packet the last dequeue returned, for a
    /// discipline that reorders across inputs but keeps track of them
    /// (`voq`): PFC releases the packet's charge against that input
    /// ([`DisciplineConfig::names_ingress`]). Default: None.
    fn dequeued_ingress(&self) -> Option<u16> {
        None
    }
    /// Whether the port may interrupt the packet it is sending for a better
    /// one that arrives (preemptive LSTF, [TH] §5.1.3). The port then holds
    /// each packet until its last bit has left (`net/port.rs`). Default: no.
    fn preemptive(&self) -> bool {
        false
    }
    /// Whether the best waiting packet should interrupt the one the last
    /// dequeue returned, which is on the wire now. Asked only of a
    /// preemptive discipline, and only about a packet it gave. Default: no.
    fn preempts(&mut self) -> bool {
        false
    }
    /// Takes back the packet the last dequeue returned, interrupted after
    /// `sent_ps` of its transmission; it keeps its place (its key), and
    /// its header is as before that dequeue except that the `sent_ps`
    /// already served do not count as waiting. Called only after
    /// [`Discipline::preempts`] said yes.
    fn requeue(&mut self, _pkt: Packet, _sent_ps: u64) {
        unreachable!("only a preemptive discipline is asked to take a packet back")
    }
}

/// Where an ECN marking queue takes its decision (`mark_at` of `ecn`
/// and `ecn_ramp`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkAt {
    /// On arrival, on the queue it finds.
    #[default]
    Enqueue,
    /// On departure, on the queue it leaves.
    Dequeue,
}

/// What a discipline's build step may need from the rest of the scenario.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueEnv {
    /// NDP's MTU payload, bytes: sizes NDP's header budget and CP's memory
    /// ([P] §3.2.4, A3).
    pub mtu: u32,
    /// The largest full packet (MTU payload plus header), bytes, of the
    /// protocols the scenario's traffic runs: what "one packet" means for
    /// the defaults of fq's and the classes' DRR quantum, CoDel's MTU guard
    /// and Edge-ECN's K × MTU: 1,064 B for RoCE's 1000 B payloads, 1,524 B
    /// for TCP's 1460 B segments; a mixed run the largest of its protocols'.
    pub packet_bytes: u64,
    /// The marking threshold K, in packets, of the switches next to this
    /// port when they mark by threshold (a host NIC follows it, as htsim's
    /// host queues do); None otherwise.
    pub switch_k: Option<u32>,
    /// The switch this port belongs to; None for host NICs and unit tests
    /// (RC3's partial deployment picks switches by it, `prio_drop.rs`).
    pub switch: Option<u32>,
    /// The scenario's seed, for choices a discipline derives per switch.
    pub seed: u64,
}

/// A discipline's scenario table: serde (unknown keys rejected, defaults
/// from `Default` and the discipline's constants), validation and build.
pub trait DisciplineConfig {
    /// What it builds.
    type Queue;
    /// Checks the values; `key` is the table's path (e.g. `switch.queue`),
    /// which every error names with the offending key appended.
    fn validate(&self, key: &str) -> Result<(), ConfigError>;
    /// A new, empty queue. Call only after `validate` succeeded.
    fn build(&self, env: &QueueEnv) -> Self::Queue;
    /// K in packets when the discipline marks ECN at an instantaneous
    /// threshold counted in packets (for the host NICs' default).
    fn ecn_threshold_packets(&self) -> Option<u32> {
        None
    }
    /// Whether it can ever mark a packet CE (a DCQCN scenario needs one).
    fn marks_ecn(&self) -> bool {
        false
    }
    /// Whether its marking thresholds count in its capacity's unit (packets
    /// or bytes), so that a capacity in the other unit would change what
    /// they mean (a graph file's `queue=` is checked against it). Default: no.
    fn thresholds_follow_capacity(&self) -> bool {
        false
    }
    /// Whether it keeps the data packets of each priority in arrival order
    /// and discards only at enqueue, as PFC's ingress accounting needs
    /// (`net/pfc.rs`). Default: no.
    fn keeps_priority_order(&self) -> bool {
        false
    }
    /// Whether it names the input port of every packet it dequeues
    /// ([`Discipline::dequeued_ingress`]), keeps each input's packets in
    /// order and discards only at enqueue: PFC then releases each charge
    /// against the named input, though the discipline reorders across
    /// inputs (`net/pfc.rs`). Default: no.
    fn names_ingress(&self) -> bool {
        false
    }
    /// Whether the switch's inputs share a crossbar that moves one packet
    /// per input at a time (`net/crossbar.rs`): the discipline then serves
    /// only inputs [`QueueCtx::input_free`] says are free, and names the
    /// input of each packet it dequeues. Default: no.
    fn crossbar(&self) -> bool {
        false
    }
    /// The table with every default that `build` would apply written out,
    /// for the manifest's resolved `config`. Default: as given (the
    /// discipline's defaults are in its file's table).
    fn resolved(&self, _env: &QueueEnv) -> Self
    where
        Self: Sized + Clone,
    {
        self.clone()
    }
}

/// Writes out the capacity a table resolved to (`cap`), in its own unit.
pub(crate) fn write_capacity(cap: Capacity, packets: &mut Option<u32>, bytes: &mut Option<u64>) {
    match cap {
        Capacity::Packets(n) => *packets = Some(n),
        Capacity::Bytes(b) => *bytes = Some(b),
    }
}

/// Writes out the default packet capacity of a table with `queue_packets`
/// / `queue_bytes` when neither is given.
pub(crate) fn resolve_capacity(packets: &mut Option<u32>, bytes: Option<u64>, default: u32) {
    if bytes.is_none() {
        packets.get_or_insert(default);
    }
}

/// Generates from one list: [`Queue`] (one variant per registered
/// discipline) with its [`Discipline`] forwarding, and [`QueueConfig`] (the
/// `kind`-tagged scenario table) with its names, validation and build.
macro_rules! disciplines {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty, $cfg:ty) = $name:literal ),* $(,)?) => {
        /// The queue disciplines psim implements (generated from one list).
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub enum Queue {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Discipline for Queue {
            #[inline]
            fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
                match self { $( Queue::$variant(q) => q.enqueue(pkt, cx), )* }
            }
            #[inline]
            fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
                match self { $( Queue::$variant(q) => q.dequeue(cx), )* }
            }
            #[inline]
            fn prefetch_next(&self, pool: &PacketPool) {
                match self { $( Queue::$variant(q) => q.prefetch_next(pool), )* }
            }
            #[inline]
            fn prefetch_tail(&self, pool: &PacketPool) {
                match self { $( Queue::$variant(q) => q.prefetch_tail(pool), )* }
            }
            #[inline]
            fn len_packets(&self) -> u32 {
                match self { $( Queue::$variant(q) => q.len_packets(), )* }
            }
            #[inline]
            fn len_bytes(&self) -> u64 {
                match self { $( Queue::$variant(q) => q.len_bytes(), )* }
            }
            fn set_paused(&mut self, prio: u8, paused: bool) -> bool {
                match self { $( Queue::$variant(q) => q.set_paused(prio, paused), )* }
            }
            #[inline]
            fn dequeued_ingress(&self) -> Option<u16> {
                match self { $( Queue::$variant(q) => q.dequeued_ingress(), )* }
            }
            fn preemptive(&self) -> bool {
                match self { $( Queue::$variant(q) => q.preemptive(), )* }
            }
            fn preempts(&mut self) -> bool {
                match self { $( Queue::$variant(q) => q.preempts(), )* }
            }
            fn requeue(&mut self, pkt: Packet, sent_ps: u64) {
                match self { $( Queue::$variant(q) => q.requeue(pkt, sent_ps), )* }
            }
        }

        /// A port's discipline as the scenario gives it: `kind` names a
        /// registered discipline, the other keys are its own.
        #[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(tag = "kind", deny_unknown_fields)]
        pub enum QueueConfig {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($cfg), )*
        }

        impl QueueConfig {
            /// Every registered discipline name, in registry order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The registered name of this discipline.
            pub fn name(&self) -> &'static str {
                match self { $( QueueConfig::$variant(_) => $name, )* }
            }
            /// Checks the values; errors name `key` plus the offending key.
            pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
                match self { $( QueueConfig::$variant(c) => c.validate(key), )* }
            }
            /// A new, empty queue.
            pub fn build(&self, env: &QueueEnv) -> Queue {
                match self { $( QueueConfig::$variant(c) => Queue::$variant(c.build(env).into()), )* }
            }
            /// K in packets when it marks ECN at a packet threshold.
            pub fn ecn_threshold_packets(&self) -> Option<u32> {
                match self { $( QueueConfig::$variant(c) => c.ecn_threshold_packets(), )* }
            }
            /// Whether it can ever mark a packet CE.
            pub fn marks_ecn(&self) -> bool {
                match self { $( QueueConfig::$variant(c) => c.marks_ecn(), )* }
            }
            /// Whether its thresholds count in its capacity's unit.
            pub fn thresholds_follow_capacity(&self) -> bool {
                match self { $( QueueConfig::$variant(c) => c.thresholds_follow_capacity(), )* }
            }
            /// The table with its defaults written out (the manifest's `config`).
            pub fn resolved(&self, env: &QueueEnv) -> QueueConfig {
                match self { $( QueueConfig::$variant(c) => QueueConfig::$variant(c.resolved(env)), )* }
            }
            /// Whether it keeps each priority's data in order (PFC needs it).
            pub fn keeps_priority_order(&self) -> bool {
                match self { $( QueueConfig::$variant(c) => c.keeps_priority_order(), )* }
            }
            /// Whether it names each dequeued packet's input (PFC then releases by it).
            pub fn names_ingress(&self) -> bool {
                match self { $( QueueConfig::$variant(c) => c.names_ingress(), )* }
            }
            /// Whether the switch's inputs share a one-packet-per-input crossbar.
            pub fn crossbar(&self) -> bool {
                match self { $( QueueConfig::$variant(c) => c.crossbar(), )* }
            }
        }

        /// The default of every registered discipline, for tests.
        #[cfg(test)]
        pub(crate) fn every_default() -> Vec<QueueConfig> {
            vec![$( QueueConfig::$variant(<$cfg>::default()), )*]
        }
    };
}

// The registry: one line per discipline. A discipline whose state is larger
// than NDP's (152 bytes) is boxed, so every port's `Queue` stays small:
// `size_of::<Queue>()` is pinned by a test.
disciplines! {
    /// First in, first out; tail drop.
    DropTail(DropTail, droptail::DropTailConfig) = "droptail",
    /// Strict priority, control before data (host NICs).
    Priority(PriorityQueue, priority::PriorityConfig) = "priority",
    /// NDP: trimming, a priority header queue, 10:1 WRR, return-to-sender.
    Ndp(NdpQueue, ndp::NdpConfig) = "ndp",
    /// Cut payload: trim above a threshold into the same FIFO.
    Cp(CpQueue, cp::CpConfig) = "cp",
    /// DCTCP's ECN marking at an instantaneous threshold.
    Ecn(RedQueue, red::EcnConfig) = "ecn",
    /// RED (marking or early drop on the average queue).
    Red(RedQueue, red::RedConfig) = "red",
    /// Traffic classes: a classifier, a discipline per class, a scheduler.
    Classes(Box<ClassQueue>, classes::ClassesConfig) = "classes",
    /// Uniformly random service order (UPS's Random).
    Random(random::RandomQueue, random::RandomConfig) = "random",
    /// Last in, first out (UPS's LIFO).
    Lifo(lifo::LifoQueue, CapacityConfig) = "lifo",
    /// pFabric: best rank's flow first, evict the worst rank.
    Pfabric(Box<pfabric::PfabricQueue>, pfabric::PfabricConfig) = "pfabric",
    /// SRPT with starvation prevention: pFabric's queue.
    Srpt(Box<pfabric::PfabricQueue>, pfabric::PfabricConfig) = "srpt",
    /// Least slack time first (or EDF): UPS's LSTF.
    Lstf(Box<lstf::LstfQueue>, lstf::LstfConfig) = "lstf",
    /// FIFO+: arrival time minus upstream queueing delay.
    FifoPlus(Box<lstf::LstfQueue>, fifo_plus::FifoPlusConfig) = "fifo_plus",
    /// Strict priority by rank (priority = o(p)), FIFO among equals.
    Rank(Box<rank::RankQueue>, rank::RankConfig) = "rank",
    /// Shortest job first: the `rank` queue, rank = flow size.
    Sjf(Box<rank::RankQueue>, rank::RankConfig) = "sjf",
    /// CoDel (RFC 8289): drops at dequeue on a standing sojourn time.
    Codel(Box<codel::CodelQueue>, codel::CodelConfig) = "codel",
    /// Fair queueing per flow, by DRR or start-time fair queueing.
    Fq(Box<fq::FqQueue>, fq::FqConfig) = "fq",
    /// FQ-CoDel (RFC 8290): DRR with new/old flow lists, CoDel per flow.
    FqCodel(Box<fq_codel::FqCodelQueue>, fq_codel::FqCodelConfig) = "fq_codel",
    /// DCQCN's ECN ramp (Kmin/Kmax/Pmax) on the instantaneous queue.
    EcnRamp(ecn_ramp::EcnRampQueue, ecn_ramp::EcnRampConfig) = "ecn_ramp",
    /// Strict priority by `prio` with push-out of the lowest priority (RC3).
    PrioDrop(Box<prio_drop::PrioDropQueue>, prio_drop::PrioDropConfig) = "prio_drop",
    /// Edge-ECN (UPS): FIFO+/LSTF marking on the network-wide used slack.
    EdgeEcn(Box<edge_ecn::EdgeEcnQueue>, edge_ecn::EdgeEcnConfig) = "edge_ecn",
    /// Edge-CoDel (UPS): FQ-CoDel on the network-wide used slack, with a refresh threshold.
    EdgeCodel(Box<edge_codel::EdgeCodelQueue>, edge_codel::EdgeCodelConfig) = "edge_codel",
    /// The thesis's IRN switch: a FIFO per input port, round robin over inputs.
    Voq(voq::VoqQueue, voq::VoqConfig) = "voq",
}

impl QueueConfig {
    /// This discipline with its capacity (`queue_packets` or `queue_bytes`)
    /// replaced by `cap`: a graph file's per-link `queue=`. None for a
    /// discipline without one capacity of its own (`classes` sizes each class).
    pub fn with_capacity(&self, cap: Capacity) -> Option<QueueConfig> {
        let toml::Value::Table(mut t) = toml::Value::try_from(self).ok()? else {
            return None;
        };
        t.remove("queue_packets");
        t.remove("queue_bytes");
        let (key, n) = match cap {
            Capacity::Packets(n) => ("queue_packets", n as i64),
            Capacity::Bytes(b) => ("queue_bytes", i64::try_from(b).ok()?),
        };
        t.insert(key.into(), toml::Value::Integer(n));
        toml::Value::Table(t).try_into().ok()
    }
}

impl Default for QueueConfig {
    /// Switch ports: drop-tail.
    fn default() -> Self {
        QueueConfig::DropTail(Default::default())
    }
}

/// A capacity from a table's `queue_packets` / `queue_bytes` (at most one of
/// them, each at least 1), else `default`.
pub(crate) fn capacity(
    key: &str,
    packets: Option<u32>,
    bytes: Option<u64>,
    default: Capacity,
) -> Result<Capacity, ConfigError> {
    match (packets, bytes) {
        (Some(_), Some(_)) => Err(bad(
            &format!("{key}.queue_bytes"),
            "both",
            "give queue_packets or queue_bytes, not both",
        )),
        (Some(0), _) => Err(bad(
            &format!("{key}.queue_packets"),
            0,
            "must be at least 1",
        )),
        (_, Some(0)) => Err(bad(&format!("{key}.queue_bytes"), 0, "must be at least 1")),
        (Some(p), None) => Ok(Capacity::Packets(p)),
        (None, Some(b)) => Ok(Capacity::Bytes(b)),
        (None, None) => Ok(default),
    }
}

/// Checks a `control_below_bytes` key (UPS's control side queue, `random`
/// and `lstf`, and `[replay]`): at least 1 when given.
pub(crate) fn validate_control_below(key: &str, v: Option<u32>) -> Result<(), ConfigError> {
    match v {
        Some(0) => Err(bad(
            &format!("{key}.control_below_bytes"),
            0,
            "must be at least 1 (leave it out for no control side queue)",
        )),
        _ => Ok(()),
    }
}

/// Checks a `control_below_until_us` key (`lstf` and `[replay]`): positive,
/// and only beside `control_below_bytes`.
pub(crate) fn validate_control_until(
    key: &str,
    bytes: Option<u32>,
    until: Option<Micros>,
) -> Result<(), ConfigError> {
    match (bytes, until) {
        (None, Some(u)) => Err(bad(
            &format!("{key}.control_below_until_us"),
            u.ps as f64 / 1e6,
            "applies only with control_below_bytes",
        )),
        (Some(_), Some(u)) => u
            .positive(&format!("{key}.control_below_until_us"))
            .map(drop),
        _ => Ok(()),
    }
}

/// The table of a discipline whose only keys are its capacity (`lifo`,
/// `random`): `queue_packets` or `queue_bytes`, default 100 packets as
/// drop-tail's. It builds the capacity; the queue is made from it
/// (`From<Capacity>`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CapacityConfig {
    /// Capacity in packets (default [`droptail::DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
}

impl CapacityConfig {
    fn cap(&self, key: &str) -> Result<Capacity, ConfigError> {
        let default = Capacity::Packets(droptail::DEFAULT_QUEUE_PACKETS);
        capacity(key, self.queue_packets, self.queue_bytes, default)
    }
}

impl DisciplineConfig for CapacityConfig {
    type Queue = Capacity;
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.cap(key).map(drop)
    }
    fn build(&self, _env: &QueueEnv) -> Capacity {
        self.cap("").expect("validated")
    }
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        resolve_capacity(
            &mut c.queue_packets,
            c.queue_bytes,
            droptail::DEFAULT_QUEUE_PACKETS,
        );
        c
    }
}

impl<D: Discipline + ?Sized> Discipline for Box<D> {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        (**self).enqueue(pkt, cx)
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        (**self).dequeue(cx)
    }
    #[inline]
    fn len_packets(&self) -> u32 {
        (**self).len_packets()
    }
    #[inline]
    fn len_bytes(&self) -> u64 {
        (**self).len_bytes()
    }
    fn set_paused(&mut self, prio: u8, paused: bool) -> bool {
        (**self).set_paused(prio, paused)
    }
    fn dequeued_ingress(&self) -> Option<u16> {
        (**self).dequeued_ingress()
    }
    fn preemptive(&self) -> bool {
        (**self).preemptive()
    }
    fn preempts(&mut self) -> bool {
        (**self).preempts()
    }
    fn requeue(&mut self, pkt: Packet, sent_ps: u64) {
        (**self).requeue(pkt, sent_ps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::engine::{SimOptions, Simulation};

    /// Every port holds a `Queue`: large disciplines are boxed so the common
    /// ones stay cache-friendly (adding a big one inline grew every port by
    /// 136 bytes and cost 4% of the FatTree benchmark's instructions).
    #[test]
    fn the_queue_enum_stays_small() {
        assert!(
            std::mem::size_of::<Queue>() <= 160,
            "{}",
            std::mem::size_of::<Queue>()
        );
    }

    /// Every registered discipline, from its defaults, on every switch port
    /// and every NIC of a small NDP and DCTCP incast: nothing registered is
    /// half-wired, and `kind = "<name>"` alone gives the `Default` config.
    /// The manifest's `config` writes each discipline's defaults out: the
    /// resolved table is stable, still valid, and names its capacity.
    #[test]
    fn every_resolved_discipline_is_stable_valid_and_names_its_capacity() {
        let env = QueueEnv {
            mtu: 9000,
            packet_bytes: 9064,
            switch_k: None,
            switch: None,
            seed: 0,
        };
        for cfg in every_default() {
            let name = cfg.name();
            let r = cfg.resolved(&env);
            assert_eq!(r.resolved(&env), r, "{name}");
            r.validate("switch.queue")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let table = toml::to_string(&r).unwrap();
            assert_eq!(toml::from_str::<QueueConfig>(&table).unwrap(), r, "{name}");
            if name != "classes" {
                assert!(
                    table.contains("queue_packets") || table.contains("queue_bytes"),
                    "{name}: {table}"
                );
            }
        }
    }

    /// A graph file's `queue=` replaces exactly the capacity of every
    /// discipline that has one, in either unit, and keeps its other keys;
    /// `classes` (a capacity per class) has none to replace.
    #[test]
    fn with_capacity_replaces_the_capacity_of_every_discipline_but_classes() {
        for cfg in every_default() {
            let name = cfg.name();
            for (cap, key, other) in [
                (Capacity::Packets(7), "queue_packets", "queue_bytes"),
                (Capacity::Bytes(90_000), "queue_bytes", "queue_packets"),
            ] {
                let sized = cfg.with_capacity(cap);
                if name == "classes" {
                    assert_eq!(sized, None);
                    continue;
                }
                let sized = sized.unwrap_or_else(|| panic!("{name}"));
                assert_eq!(sized.name(), name);
                let toml::Value::Table(t) = toml::Value::try_from(&sized).unwrap() else {
                    panic!("{name}: not a table");
                };
                let want = match cap {
                    Capacity::Packets(n) => n as i64,
                    Capacity::Bytes(b) => b as i64,
                };
                assert_eq!(
                    t.get(key).and_then(toml::Value::as_integer),
                    Some(want),
                    "{name}"
                );
                assert!(!t.contains_key(other), "{name}");
                // Nothing else moved.
                let mut back = t.clone();
                back.remove(key);
                let toml::Value::Table(mut orig) = toml::Value::try_from(&cfg).unwrap() else {
                    panic!("{name}");
                };
                orig.remove("queue_packets");
                orig.remove("queue_bytes");
                assert_eq!(back, orig, "{name}");
            }
        }
    }

    #[test]
    fn every_registered_discipline_runs_from_its_defaults() {
        let all = every_default();
        let names: Vec<&str> = all.iter().map(QueueConfig::name).collect();
        assert_eq!(names, QueueConfig::NAMES);
        for cfg in all {
            let name = cfg.name();
            let table = format!("kind = \"{name}\"\n");
            assert_eq!(toml::from_str::<QueueConfig>(&table).unwrap(), cfg);
            let text = format!(
                "seed = 1\nstop_us = 2000\n[topology]\nkind = \"fattree\"\nk = 4\n\
                 [switch.queue]\n{table}[host.queue]\n{table}\
                 [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 90000\n\
                 [[traffic]]\nprotocol = \"dctcp\"\npattern = \"incast\"\nreceiver = 1\nsenders = 6\nsize_bytes = 90000\n"
            );
            let scn = Scenario::from_str(&text, std::path::Path::new("t.toml"), &[])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let opts = SimOptions {
                shards: 2,
                threads: 1,
            };
            let s = Simulation::new(&scn, opts)
                .unwrap()
                .run(&mut |_| {})
                .unwrap();
            assert!(s.conserved(), "{name}: {s:?}");
            assert!(s.packets.delivered > 100, "{name}: {s:?}");
            assert_eq!(
                s.ports.enqueued,
                s.ports.dequeued + s.queued + s.ports.discarded
            );
        }
    }

    /// The shard builds each switch's ports from its tier's table: a 3-to-1
    /// incast inside one leaf loads only that leaf's (a `tor`) port to the
    /// receiver: over 1000-packet queues, 8-packet drop-tail on the `tor`
    /// tier drops, and the same queue on the spines (`core`) drops nothing.
    #[test]
    fn a_tier_table_reaches_that_tiers_ports() {
        let drops = |tier: &str| {
            let text = format!(
                "seed = 3\n[topology]\nkind = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n\
                 link_gbps = 25\n[topology.uplink]\ngbps = 100\n\
                 [switch.queue]\nkind = \"droptail\"\nqueue_packets = 1000\n\
                 [switch.{tier}.queue]\nkind = \"droptail\"\nqueue_packets = 8\n\
                 [[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nsenders = [1, 2, 3]\nreceivers = [0]\nsize_bytes = 90000\n"
            );
            let scn = Scenario::from_str(&text, std::path::Path::new("t.toml"), &[]).unwrap();
            let opts = SimOptions {
                shards: 1,
                threads: 1,
            };
            let s = Simulation::new(&scn, opts)
                .unwrap()
                .run(&mut |_| {})
                .unwrap();
            s.ports.dropped
        };
        assert!(drops("tor") > 0);
        assert_eq!(drops("core"), 0);
    }
}
