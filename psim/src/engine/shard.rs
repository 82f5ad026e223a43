//! One shard: a set of entities with their own event queue.
//!
//! A shard touches only its own entities' state. A packet sent over a link
//! whose far end lives in another shard goes to the shard's outbox and is
//! handed over at the next window boundary; the lookahead guarantees it
//! cannot be due before then.

use super::event::{
    Event, EventCounts, EventKey, EventKind, EventQueue, NOTICE_TARGET, WORKLOAD_SOURCE,
};
use super::prefetch::prefetch;
use crate::config::Scenario;
use crate::net::crossbar::Crossbar;
use crate::net::link::LinkLoss;
use crate::net::pfc::{Mmu, Signal};
use crate::net::tofino::Chip;
use crate::net::{
    switch, Called, InFlight, Inbound, Message, Node, PacketPool, Port, PortCx, TimerDue,
};
use crate::packet::{Packet, PacketKind, Protocol};
use crate::queue::{Discipline, Outcome, Report};
use crate::rng::{flow_hash, stream, stream_rng};
use crate::topo::{EntityKind, Topology};
use crate::transport::{Ctx, Endpoint, FlowInfo, HostServices, ProtocolParams};
use crate::transport::{SinkStats, SourceStats, Transport};

use std::sync::Arc;

/// How many events ahead the loop hints each stage of an event's chain of
/// loads (`Shard::hint`): stage `i` at `HINT_AHEAD[i]` events ahead, so
/// that each stage finds the line the stage before it fetched already in
/// cache (docs/performance.md).
const HINT_AHEAD: [usize; 3] = [16, 8, 4];

/// An entity-major window with fewer events than one per this many of the
/// shard's entities is ordered by one comparison sort; a fuller one by
/// grouping (`group_by_entity`), whose passes cost a step per entity.
const FEW_EVENTS_PER_ENTITY: usize = 8;

mod chip;
mod report;
mod stale;
mod state;

/// Shard-level packet counters, for the conservation check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PacketCounters {
    /// Packets created by transports.
    pub created: u64,
    /// Packets delivered to their destination host.
    pub delivered: u64,
    /// Packets discarded by queues or for being misrouted.
    pub dropped: u64,
    /// Link-level frames (PFC PAUSE and RESUME) sent.
    pub frames_sent: u64,
    /// Link-level frames received.
    pub frames_received: u64,
    /// Packets lost on links (`[link] loss_rate`); also counted in `dropped`.
    pub lost_on_link: u64,
}

/// Read-only data shared by every shard.
pub struct Shared {
    /// The network.
    pub topo: Topology,
    /// Shard of each entity.
    pub shard_of: Vec<u32>,
    /// Index of each entity's input port 0 in its shard's inbound table.
    pub in_base: Vec<u32>,
    /// Index of each entity in its shard's node table.
    pub local: Vec<u32>,
    /// Transport parameters.
    pub protocols: ProtocolParams,
    /// Protocol of each traffic entry.
    pub traffic_protocols: Vec<Protocol>,
    /// Application of each traffic entry (None: a backlog).
    pub traffic_apps: Vec<Option<crate::transport::app::AppSpec>>,
    /// Per traffic class: its flows are RDMA Reads (`verb = "read"`).
    pub traffic_reads: Vec<bool>,
    /// Global seed.
    pub seed: u64,
    /// Stop time.
    pub stop_ps: Option<u64>,
    /// Stall span of the progress watchdog; None: off.
    pub watchdog_ps: Option<u64>,
    /// Delay after which the workload learns that a flow finished: the
    /// largest propagation delay of any link. It is a property of the
    /// network, not of the partition, and it is at least the lookahead of any
    /// partition, so every shard receives a notice before it is due.
    pub notice_ps: u64,
    /// Whether windows run entity by entity ([`Shard::run_window`]): no
    /// window is longer than the shortest link delay, so no event inside a
    /// window can reach another entity before the window ends.
    pub entity_major: bool,
}

impl Shared {
    /// The index in its shard's inbound table of the wire into input `port`
    /// of entity `entity`.
    #[inline]
    pub fn wire(&self, entity: u32, port: u16) -> usize {
        (self.in_base[entity as usize] + port as u32) as usize
    }
}

/// A model error found while running (reported by the simulation).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ShardError {
    /// A flow names a host that does not exist, or sends to itself.
    #[error("flow {flow}: {message}")]
    BadFlow {
        /// Flow id.
        flow: u64,
        /// What is wrong.
        message: String,
    },
    /// A long-lived flow in a run without a stop time would never end.
    #[error("flow {flow} has no size and the scenario has no stop_us: the run would never end")]
    Endless {
        /// Flow id.
        flow: u64,
    },
    /// The packet trace passed `trace.packets.max_rows` (in this shard alone,
    /// so in the whole run too).
    #[error(
        "the packet trace exceeds trace.packets.max_rows = {max_rows} rows; narrow its filters, \
         lower trace.packets.sample or raise max_rows"
    )]
    TraceTooLarge {
        /// The limit.
        max_rows: u64,
    },
    /// A dependency released a flow in another shard's past.
    #[error(
        "flow {flow}: an event due at {start_ps} ps reached a shard already at {now_ps} ps \
         (a workload released a flow in the past, or a zero-delay link was cut)"
    )]
    Causality {
        /// Flow id.
        flow: u64,
        /// Its start.
        start_ps: u64,
        /// The shard's time.
        now_ps: u64,
    },
}

/// A shard's flow rows at the end of a run (`Shard::flow_rows`).
#[derive(Clone, Debug, Default)]
pub struct FlowRows {
    /// One per flow that started here.
    pub sources: Vec<SourceRow>,
    /// Receiver counters: (flow, the host that started it, counters).
    pub sinks: Vec<(u64, u32, SinkStats)>,
    /// The sender counters of RDMA Reads served here: (flow, the requester,
    /// counters).
    pub served: Vec<(u64, u32, SourceStats)>,
}

/// Final per-flow data of a source endpoint.
#[derive(Clone, Debug)]
pub struct SourceRow {
    /// The flow.
    pub info: FlowInfo,
    /// Its protocol.
    pub proto: Protocol,
    /// Sender counters.
    pub stats: SourceStats,
}

/// One shard.
pub struct Shard {
    /// Shard index.
    pub id: u32,
    shared: Arc<Shared>,
    nodes: Vec<Node>,
    inbound: Inbound,
    /// Slots for every packet on the wires and in the NDP and priority
    /// queues of this shard (`net/pool.rs`).
    pool: PacketPool,
    events: EventQueue,
    /// Packets for other shards, by destination shard.
    pub outbox: Vec<Vec<Message>>,
    generator: workloads::FlowGenerator,
    pending: Vec<Option<workloads::FlowSpec>>,
    pending_free: Vec<u32>,
    flow_buf: Vec<workloads::FlowSpec>,
    scratch: Vec<Packet>,
    /// What the discipline of the port being operated on reported; reused,
    /// so that reporting allocates nothing per packet.
    reports: Vec<Report>,
    /// Bounced packets waiting to be offered to the port back towards their
    /// source: (port, packet).
    bounced: Vec<(u16, Packet)>,
    /// (node, flow) of each data packet of a NIC-fetched flow that a host's
    /// NIC let go of during the current event: its sender hears it once
    /// the event is done ([`Shard::nic_fetch`]). Empty between events, so
    /// not checkpointed.
    nic_freed: Vec<(u32, u64)>,
    /// Whether hosts' NICs fetch (`[protocol.roce] nic_packets` > 0), read
    /// once here: transmit tests it on every packet.
    nic_fetch: bool,
    /// Whether hosts' NICs stamp the slack as they send
    /// (`[host.slack] at = "nic_departure"`), read once here: transmit tests
    /// it on every packet without touching the host's state.
    nic_stamps: bool,
    /// Completion notices created since the last boundary: (due time, flow), for every shard's workload.
    pub finished_out: Vec<(u64, u64)>,
    /// Events processed so far (completion notices excluded: every shard
    /// processes each of them, so counting them would depend on the partition).
    pub events_processed: u64,
    /// The same events by kind (they sum to `events_processed`).
    pub event_counts: EventCounts,
    /// Flows whose source this shard started, and flows whose sink here
    /// finished (summed over shards for progress reports only).
    pub flows: (u64, u64),
    /// Time of the last entity event processed.
    pub last_event_ps: u64,
    /// Key of the event being processed: a port's deferred completion
    /// ([`Port::deferred_done`]) before it has already happened, one after
    /// it has not. Set per event, so not checkpointed.
    key_now: EventKey,
    /// An entity-major window's events (grouped by entity in place), where
    /// each entity's run starts, and a cursor per entity for the grouping.
    /// Scratch, reused every window.
    window_events: (Vec<Event>, Vec<u32>, Vec<u32>),
    /// End of the last window run (everything before it is processed).
    pub horizon: u64,
    /// Packet counters.
    pub counters: PacketCounters,
    /// First model error, if any; the shard stops processing.
    pub error: Option<ShardError>,
    /// Trace recorders; None (one branch per port operation) when nothing is traced.
    pub trace: Option<Box<crate::trace::ShardTrace>>,
    /// Record and replay (`replay.rs`); None (one branch per endpoint call
    /// and delivery) in ordinary runs. Not checkpointed: replay runs refuse
    /// checkpoints.
    pub replay: Option<Box<crate::replay::ShardReplay>>,
}

impl Shard {
    /// Builds shard `id` with the given member entities (ascending).
    pub fn new(
        id: u32,
        shards: u32,
        members: &[u32],
        shared: Arc<Shared>,
        scn: &Scenario,
    ) -> Shard {
        let topo = &shared.topo;
        let mut nodes = Vec::with_capacity(members.len());
        let mut inbound_len = 0usize;
        for &e in members {
            let kind = topo.kind(e);
            let loss = scn.file.link.loss_rate;
            let ports = (0..topo.port_count(e))
                .map(|p| {
                    let info = topo.port(e, p);
                    let to_host = topo.kind(info.peer) == EntityKind::Host;
                    let size = topo.port_queue(e, p);
                    let queue = scn.queues.build(kind, to_host, size, e, shared.seed);
                    let mut port = Port::new(queue, info);
                    let loss = topo.link_loss(e, p).unwrap_or(loss);
                    if loss > 0.0 {
                        port.loss = Some(Box::new(LinkLoss::new(loss, shared.seed, e, p)));
                    }
                    port
                })
                .collect::<Vec<_>>();
            inbound_len += ports.len();
            let rates: Vec<u64> = ports.iter().map(|p| p.link.link.rate_bps).collect();
            let pfc = match (&scn.queues.pfc, kind) {
                (Some(cfg), k) if k != EntityKind::Host => {
                    let by_input = scn.queues.port_config(k, false, e).names_ingress();
                    let mut mmu = Mmu::new(cfg, ports.len(), by_input);
                    mmu.scale_alpha_by_rate(&rates, topo.host_link().rate_bps);
                    Some(Box::new(mmu))
                }
                _ => None,
            };
            let tofino = match (&scn.queues.tofino, kind) {
                (Some(p), k) if k == p.tier.kind() => {
                    Some(Box::new(Chip::new(p, e, &rates, scn.trace.tofino)))
                }
                _ => None,
            };
            nodes.push(Node {
                id: e,
                seq: 0,
                rng: stream_rng(shared.seed, stream::ENTITY | e as u64),
                ports,
                host: (kind == EntityKind::Host)
                    .then(|| Box::new(crate::net::HostState::new(scn.queues.slack.clone()))),
                pfc,
                tofino,
                crossbar: (kind != EntityKind::Host
                    && scn.queues.port_config(kind, false, e).crossbar())
                .then(|| Box::new(Crossbar::new(topo.port_count(e) as usize))),
            });
        }
        let owned: Vec<bool> = {
            let mut v = vec![false; topo.hosts() as usize];
            for &e in members.iter().filter(|&&e| e < topo.hosts()) {
                v[e as usize] = true;
            }
            v
        };
        let trace = crate::trace::ShardTrace::new(
            &scn.trace,
            nodes.iter().flat_map(|n: &Node| {
                let id = n.id;
                n.ports
                    .iter()
                    .enumerate()
                    .map(move |(i, p)| (id, i as u16, p.link.peer))
            }),
        );
        let generator = scn
            .workload
            .generator(&|h: u32| owned.get(h as usize).copied().unwrap_or(false));
        // The calendar's slots follow the shortest link delay here (any
        // width gives the same pops; engine/event.rs).
        let min_delay = nodes
            .iter()
            .flat_map(|n| n.ports.iter())
            .map(|p| p.link.link.delay_ps)
            .filter(|&d| d > 0)
            .min()
            .unwrap_or(1_000_000);
        let shift = EventQueue::shift_for_delay(min_delay);
        let nic_fetch = shared.protocols.roce.nic_packets > 0;
        let nic_stamps = scn.queues.slack.at_departure();
        Shard {
            id,
            shared,
            nodes,
            inbound: Inbound::new(inbound_len),
            pool: PacketPool::new(),
            events: EventQueue::with_slot_shift(shift),
            outbox: (0..shards).map(|_| Vec::new()).collect(),
            generator,
            pending: Vec::new(),
            pending_free: Vec::new(),
            flow_buf: Vec::new(),
            scratch: Vec::new(),
            reports: Vec::new(),
            bounced: Vec::new(),
            nic_freed: Vec::new(),
            nic_fetch,
            nic_stamps,
            finished_out: Vec::new(),
            events_processed: 0,
            event_counts: EventCounts::default(),
            flows: (0, 0),
            last_event_ps: 0,
            key_now: EventKey::default(),
            window_events: Default::default(),
            horizon: 0,
            counters: PacketCounters::default(),
            error: None,
            trace,
            replay: None,
        }
    }

    /// Accepts a packet from another shard (at a window boundary).
    pub fn receive(&mut self, m: Message) {
        debug_assert!(m.inflight.arrive >= self.horizon, "lookahead violated");
        self.arrive_later(m.dst, m.port, m.inflight);
    }

    /// Puts a packet on the wire into `dst`'s input `port`, scheduling its
    /// arrival if it is the wire's head.
    #[inline]
    fn arrive_later(&mut self, dst: u32, port: u16, f: InFlight) {
        let idx = self.shared.wire(dst, port);
        let key = EventKey {
            time: f.arrive,
            target: dst,
            source: f.src,
            seq: f.seq,
        };
        if self.inbound.push(&mut self.pool, idx, f) {
            self.events.push(key, EventKind::LinkArrival { port });
        }
    }

    /// Schedules a completion notice for this shard's workload (at a window boundary).
    pub fn schedule_notice(&mut self, due: u64, flow: u64) {
        if due < self.horizon {
            self.error.get_or_insert(ShardError::Causality {
                flow,
                start_ps: due,
                now_ps: self.horizon,
            });
            return;
        }
        self.events.push(
            EventKey {
                time: due,
                target: NOTICE_TARGET,
                source: WORKLOAD_SOURCE,
                seq: flow,
            },
            EventKind::Notice { flow },
        );
    }

    /// Processes every event with time < `end`.
    pub fn run_window(&mut self, end: u64) {
        self.pull_flows(end);
        if self.entity_major() {
            self.run_entities(end);
        } else {
            while self.error.is_none() {
                let Some(ev) = self.events.pop_before(end) else {
                    break;
                };
                if let EventKind::Notice { flow } = ev.kind {
                    self.on_notice(flow, ev.key.time, end);
                    continue;
                }
                self.hint_ahead();
                self.process(ev);
            }
        }
        if let Some(max_rows) = self.trace.as_deref().and_then(|t| t.over_limit()) {
            self.error
                .get_or_insert(ShardError::TraceTooLarge { max_rows });
        }
        self.horizon = end;
    }

    /// Whether this shard runs its windows entity by entity: where the
    /// network allows it ([`Shared::entity_major`]), except in replay runs.
    pub fn entity_major(&self) -> bool {
        self.shared.entity_major && self.replay.is_none()
    }

    /// A completion notice: the workload learns that `flow` finished, and
    /// may start flows (closed loops, triggers, collectives).
    fn on_notice(&mut self, flow: u64, now: u64, end: u64) {
        self.generator.on_finished(flow, now);
        self.pull_flows(end);
    }

    /// The window's events entity by entity, each entity's in key order: the
    /// same order for every entity as by time (docs/engine.md, "Entity-major
    /// windows"), but each entity's state stays in cache for its whole run
    /// of events instead of being fetched again at every time step.
    ///
    /// Within a window no event reaches another entity (links take at least
    /// a window to cross), and nothing shared between entities depends on
    /// their order: the packet pool's slots, counters that add up, traces
    /// sorted when written. Completion notices run first, in key order: they
    /// touch only the workload, which is called in the same sequence as by
    /// time, and the flows they start join their entities' runs.
    fn run_entities(&mut self, end: u64) {
        let (mut drained, mut starts, mut next) = std::mem::take(&mut self.window_events);
        drained.clear();
        self.events.drain_before(end, &mut drained);
        if drained.iter().any(|e| e.key.target == NOTICE_TARGET) {
            let mut notices: Vec<Event> = Vec::new();
            drained.retain(|e| {
                let notice = e.key.target == NOTICE_TARGET;
                if notice {
                    notices.push(*e);
                }
                !notice
            });
            notices.sort_unstable_by_key(|e| e.key);
            for n in notices {
                if let EventKind::Notice { flow } = n.kind {
                    self.on_notice(flow, n.key.time, end);
                }
            }
            // The flows they started before `end`.
            self.events.drain_before(end, &mut drained);
        }
        let entities = self.nodes.len();
        let local = &self.shared.local;
        order_by_entity(
            &mut drained,
            &mut starts,
            &mut next,
            entities,
            local,
            FEW_EVENTS_PER_ENTITY,
        );
        self.events.open_window(end);
        let mut i = 0;
        while self.error.is_none() {
            // The entity's next event: from its run, or one it scheduled
            // for itself since (the only events pushed before `end`).
            let own = self.events.own_next();
            let from_run = match (drained.get(i), own) {
                (Some(e), Some(o)) => e.key.target == o.target && e.key < o,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let ev = if from_run {
                i += 1;
                for (stage, &k) in HINT_AHEAD.iter().enumerate() {
                    if let Some(ahead) = drained.get(i + k) {
                        self.hint(stage, ahead);
                    }
                }
                drained[i - 1]
            } else {
                self.events.pop_own().expect("peeked")
            };
            self.process(ev);
        }
        if self.error.is_some() {
            // Stopped by a model error: what is left does not run.
            while self.events.pop_own().is_some() {}
        }
        self.events.close_window();
        self.window_events = (drained, starts, next);
    }

    /// Processes one entity event.
    #[inline(always)]
    fn process(&mut self, ev: Event) {
        let now = ev.key.time;
        self.events_processed += 1;
        self.key_now = ev.key;
        let local = self.shared.local[ev.key.target as usize] as usize;
        // Each arm counts its kind at a constant index: one add, no bounds check.
        let counts = &mut self.event_counts.0;
        match ev.kind {
            EventKind::LinkArrival { port } => {
                counts[EventCounts::LINK_ARRIVAL] += 1;
                self.on_link_arrival(local, port, now);
            }
            EventKind::TxDone { port } => {
                let p = &mut self.nodes[local].ports[port as usize];
                if p.preempt.is_some() {
                    match p.release(now) {
                        Some(pkt) => self.launch(local, port, pkt, now),
                        // Superseded by an interruption: counted with
                        // the stale timers; it does not extend the run.
                        None => {
                            self.event_counts.0[EventCounts::TIMER_STALE] += 1;
                            return;
                        }
                    }
                }
                self.nodes[local].ports[port as usize].finish();
                let started = if self.nodes[local].crossbar.is_some() {
                    self.crossbar_freed(local, port, now)
                } else {
                    self.transmit(local, port, now)
                };
                if started {
                    self.event_counts.0[EventCounts::TX_DONE] += 1;
                } else {
                    self.event_counts.0[EventCounts::TX_DONE_IDLE] += 1;
                }
            }
            EventKind::Timer { slot, gen } => {
                if !self.on_timer(local, slot, gen, now) {
                    return; // superseded: it does not extend the run
                }
            }
            EventKind::FlowStart { pending } => {
                counts[EventCounts::FLOW_START] += 1;
                self.on_flow_start(local, pending, now);
            }
            EventKind::PauseEnd { port, prio } => {
                counts[EventCounts::PAUSE_END] += 1;
                self.wake(local, port);
                let resumed = self.pause_change(local, port, now, |p| p.pause_expired(prio, now));
                if resumed {
                    self.transmit(local, port, now);
                }
            }
            EventKind::Chip { line, step } => {
                counts[EventCounts::CHIP] += 1;
                self.on_chip(local, line, step, now);
            }
            EventKind::Notice { .. } => unreachable!("handled above"),
        }
        if !self.nic_freed.is_empty() {
            self.nic_fetch(now);
        }
        self.last_event_ps = self.last_event_ps.max(now);
    }

    /// The senders whose packets a NIC let go of during this event hand it
    /// their next ([`Transport::on_nic_sent`]), in the order it let them
    /// go. What they hand over may start at once and queue more notices,
    /// served in the same pass; each notice is one packet gone, so it ends.
    #[inline(never)]
    fn nic_fetch(&mut self, now: u64) {
        let mut i = 0;
        while let Some(&(local, flow)) = self.nic_freed.get(i) {
            i += 1;
            let local = local as usize;
            let host = self.nodes[local].host.as_deref();
            if let Some(&slot) = host.and_then(|h| h.by_flow.get(&flow)) {
                self.call_endpoint(local, slot, now, |ep, cx| ep.on_nic_sent(cx));
            }
        }
        self.nic_freed.clear();
    }

    /// Cache hints for the events ahead in the current slot (see
    /// `engine/prefetch.rs`). Reads only; no effect on any result.
    #[inline]
    fn hint_ahead(&self) {
        for (stage, &k) in HINT_AHEAD.iter().enumerate() {
            if let Some(ev) = self.events.ahead(k) {
                self.hint(stage, ev);
            }
        }
    }

    /// Stage `stage` of the hints for `ev`: each stage fetches what the
    /// line fetched by the stage before leads to.
    /// - An arrival reads the packet at its wire's head (and the key of the
    ///   one behind it); a switch then routes it to an output port, whose
    ///   queue slot and outgoing wire it may fill.
    /// - A completion reads its port, then the queued packet it will send
    ///   and the slot that packet takes on the wire.
    #[inline]
    fn hint(&self, stage: usize, ev: &Event) {
        let sh = &self.shared;
        let target = ev.key.target as usize;
        match (ev.kind, stage) {
            (EventKind::LinkArrival { port }, 0) => {
                self.inbound
                    .prefetch_head(&self.pool, sh.wire(ev.key.target, port));
            }
            (EventKind::LinkArrival { port }, 1) => {
                self.inbound
                    .prefetch_second(&self.pool, sh.wire(ev.key.target, port));
                if let Some(p) = self.arrival_out_port(target, port) {
                    prefetch(p);
                }
            }
            (EventKind::LinkArrival { port }, 2) => {
                if let Some(p) = self.arrival_out_port(target, port) {
                    p.queue.prefetch_tail(&self.pool);
                    self.prefetch_wire_tail(p);
                }
            }
            (EventKind::TxDone { port }, 0) => {
                if let Some(p) = self.port_of(target, port) {
                    prefetch(p);
                }
            }
            (EventKind::TxDone { port }, 1) => {
                if let Some(p) = self.port_of(target, port) {
                    p.queue.prefetch_next(&self.pool);
                    self.prefetch_wire_tail(p);
                }
            }
            _ => {}
        }
    }

    /// Output `port` of this shard's entity `target`.
    #[inline]
    fn port_of(&self, target: usize, port: u16) -> Option<&Port> {
        self.node_of(target)?.ports.get(port as usize)
    }

    /// The node of `target`, one of this shard's entities.
    #[inline]
    fn node_of(&self, target: usize) -> Option<&Node> {
        self.nodes.get(*self.shared.local.get(target)? as usize)
    }

    /// Hints the end of the wire `p` feeds, where its next packet goes,
    /// when that wire ends in this shard.
    #[inline]
    fn prefetch_wire_tail(&self, p: &Port) {
        let sh = &self.shared;
        if sh.shard_of[p.link.peer as usize] == self.id {
            self.inbound
                .prefetch_tail(&self.pool, sh.wire(p.link.peer, p.link.peer_port));
        }
    }

    /// The output port a switch will offer the packet arriving next on its
    /// input `port` to, as `on_link_arrival` finds it (for cache hints:
    /// hosts, Tofino switches and PFC frames give None).
    #[inline]
    fn arrival_out_port(&self, target: usize, port: u16) -> Option<&Port> {
        let sh = &self.shared;
        let node = self.node_of(target)?;
        if node.host.is_some() || node.tofino.is_some() {
            return None;
        }
        let f = self.inbound.head(&self.pool, sh.wire(node.id, port))?;
        if f.pkt.kind == PacketKind::Pause {
            return None; // a PFC frame is not routed (`on_pause_frame`)
        }
        let out = sh.topo.route(node.id, f.pkt.dst, f.pkt.path);
        node.ports.get(out as usize)
    }

    /// Schedules the workload's flows that start before `end`.
    fn pull_flows(&mut self, end: u64) {
        let mut buf = std::mem::take(&mut self.flow_buf);
        self.generator.pop_before(end, &mut buf);
        for f in buf.drain(..) {
            if f.start_ps < self.horizon {
                self.error.get_or_insert(ShardError::Causality {
                    flow: f.id,
                    start_ps: f.start_ps,
                    now_ps: self.horizon,
                });
                continue;
            }
            let key = EventKey {
                time: f.start_ps,
                target: f.src,
                source: WORKLOAD_SOURCE,
                seq: f.id,
            };
            let idx = match self.pending_free.pop() {
                Some(i) => {
                    self.pending[i as usize] = Some(f);
                    i
                }
                None => {
                    self.pending.push(Some(f));
                    (self.pending.len() - 1) as u32
                }
            };
            self.events.push(key, EventKind::FlowStart { pending: idx });
        }
        self.flow_buf = buf;
    }

    fn on_flow_start(&mut self, local: usize, pending: u32, now: u64) {
        let Some(f) = self.pending[pending as usize].take() else {
            return;
        };
        self.pending_free.push(pending);
        let sh = &self.shared;
        let hosts = sh.topo.hosts();
        let bad = if f.dst >= hosts {
            Some(format!(
                "destination host {} does not exist ({hosts} hosts)",
                f.dst
            ))
        } else if f.dst == f.src {
            Some(format!("source and destination are both host {}", f.src))
        } else {
            None
        };
        if let Some(message) = bad {
            self.error.get_or_insert(ShardError::BadFlow {
                flow: f.id,
                message,
            });
            return;
        }
        if f.size_bytes.is_none() && sh.stop_ps.is_none() {
            self.error.get_or_insert(ShardError::Endless { flow: f.id });
            return;
        }
        let Some(&proto) = sh.traffic_protocols.get(f.class as usize) else {
            self.error.get_or_insert(ShardError::BadFlow {
                flow: f.id,
                message: format!("unknown traffic class {}", f.class),
            });
            return;
        };
        let num_paths = sh.topo.num_paths(f.src, f.dst);
        let node = &mut self.nodes[local];
        let read = sh
            .traffic_reads
            .get(f.class as usize)
            .copied()
            .unwrap_or(false);
        let ideal_fct_ps = match f.size_bytes {
            Some(size) if proto.has_ideal_fct() => {
                let mtu = proto.mtu(&sh.protocols);
                match read {
                    // The request's one-way time, then the data back.
                    true => sh
                        .topo
                        .ideal_fct(f.src, f.dst, 0, mtu)
                        .checked_add(sh.topo.ideal_fct(f.dst, f.src, size, mtu)),
                    false => Some(sh.topo.ideal_fct(f.src, f.dst, size, mtu)),
                }
                // A bound past u64 picoseconds (a flow of petabytes) saturates:
                // it is left out (null) rather than written as a time.
                .filter(|&t| t != u64::MAX)
            }
            _ => None,
        };
        let info = FlowInfo {
            ideal_fct_ps,
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size_bytes,
            start_ps: f.start_ps,
            prio: f.priority,
            num_paths,
            ecmp_path: (flow_hash(sh.seed, f.id) % num_paths as u64) as u32,
            nic_bps: node.nic_bps(),
            app: sh.traffic_apps.get(f.class as usize).copied().flatten(),
            read,
        };
        let host = node.host.as_mut().expect("flows start on hosts");
        let slot = host.add_source(info, proto, &sh.protocols);
        self.flows.0 += 1;
        self.call_endpoint(local, slot, now, |ep, cx| ep.on_start(cx));
    }

    /// Runs a timer and counts it by outcome; false if it was superseded (stale).
    fn on_timer(&mut self, local: usize, slot: u32, gen: u32, now: u64) -> bool {
        let host = self.nodes[local]
            .host
            .as_mut()
            .expect("timers live on hosts");
        let counts = &mut self.event_counts.0;
        match host.timer_due(slot, gen, now) {
            TimerDue::Stale => {
                counts[EventCounts::TIMER_STALE] += 1;
                return false;
            }
            TimerDue::Idle => counts[EventCounts::TIMER_IDLE] += 1,
            TimerDue::Grant(s) => {
                counts[EventCounts::TIMER_GRANT] += 1;
                self.call_endpoint(local, s, now, |ep, cx| ep.on_grant(cx));
            }
            TimerDue::Endpoint(s) => {
                counts[EventCounts::TIMER_ENDPOINT] += 1;
                self.call_endpoint(local, s, now, |ep, cx| ep.on_timer(cx));
            }
        }
        true
    }

    fn on_link_arrival(&mut self, local: usize, port: u16, now: u64) {
        let id = self.nodes[local].id;
        let idx = self.shared.wire(id, port);
        let (f, next) = self.inbound.pop(&mut self.pool, idx);
        if let Some(next) = next {
            self.events.push(
                EventKey {
                    time: next.arrive,
                    target: id,
                    source: next.src,
                    seq: next.seq,
                },
                EventKind::LinkArrival { port },
            );
        }
        if f.pkt.kind == PacketKind::Pause {
            self.on_pause_frame(local, port, f.pkt, now);
        } else if self.nodes[local].host.is_some() {
            self.host_receive(local, f.pkt, now);
        } else {
            let ing = switch::ingress(&self.shared.topo, id, port, &f.pkt);
            if self.nodes[local].tofino.is_some() {
                self.chip_ingress(local, ing, f.pkt, now);
            } else {
                self.offer(local, ing.out_port, f.pkt, now, Some(ing.in_port));
            }
        }
    }

    /// A PFC frame from the neighbour on `port` pauses or resumes the output
    /// port that feeds it (wiring is symmetric: input port p faces output
    /// port p).
    fn on_pause_frame(&mut self, local: usize, port: u16, frame: Packet, now: u64) {
        self.counters.frames_received += 1;
        self.wake(local, port);
        let (timed, resumed) =
            self.pause_change(local, port, now, |p| p.receive_frame(&frame, now));
        let node = &mut self.nodes[local];
        if let Some(t) = self.trace.as_deref_mut() {
            t.pause_received(node.id, port, now, &frame, &node.ports[port as usize].queue);
        }
        for prio in (0..8u8).filter(|q| timed & (1 << q) != 0) {
            let end = node.ports[port as usize].pause_end(prio);
            schedule_own(
                &mut self.events,
                node,
                end,
                EventKind::PauseEnd { port, prio },
            );
        }
        if resumed {
            self.transmit(local, port, now);
        }
    }

    /// Applies `f` (a PFC frame received, a timed pause ending) to output
    /// `port`, and hands the queue series each pause it ended.
    fn pause_change<R>(
        &mut self,
        local: usize,
        port: u16,
        now: u64,
        f: impl FnOnce(&mut crate::net::Port) -> R,
    ) -> R {
        let node = &mut self.nodes[local];
        let p = &mut node.ports[port as usize];
        let before = p.paused_since();
        let r = f(p);
        if let Some(t) = self.trace.as_deref_mut() {
            let after = p.paused_since();
            for (prio, (b, a)) in before.iter().zip(after).enumerate() {
                if let (Some(since), None) = (*b, a) {
                    t.paused(node.id, port, prio as u8, since, now);
                }
            }
        }
        r
    }

    /// Sends the PFC frame an MMU decision asks for out of the input port it
    /// names, starting that port if it is idle.
    #[cold]
    fn signal(&mut self, local: usize, signal: Signal, now: u64) {
        let node = &mut self.nodes[local];
        let pause_ps = node.pfc.as_deref().map_or(0, Mmu::pause_ps);
        let (port, prio, pause) = match signal {
            Signal::None => return,
            Signal::Pause { port, prio } => (port, prio, true),
            Signal::Resume { port, prio } => (port, prio, false),
        };
        self.wake(local, port);
        let node = &mut self.nodes[local];
        if node.ports[port as usize].request_frame(prio, pause, pause_ps) {
            self.transmit(local, port, now);
        }
    }

    fn host_receive(&mut self, local: usize, pkt: Packet, now: u64) {
        let node = &mut self.nodes[local];
        if pkt.dst != node.id {
            self.counters.dropped += 1; // misrouted: cannot happen with a correct topology
            return;
        }
        self.counters.delivered += 1;
        if let Some(r) = self.replay.as_deref_mut() {
            r.on_exit(&pkt, now, &self.shared.topo);
        }
        let nic_bps = node.nic_bps();
        let host = node.host.as_mut().expect("host");
        let slot = host.slot_for(&pkt, &self.shared.protocols, nic_bps);
        self.call_endpoint(local, slot, now, |ep, cx| ep.on_packet(pkt, cx));
    }

    /// Runs one endpoint input, then applies its effects: a changed deadline,
    /// the pacer's next slot, a completion, packets to the NIC.
    fn call_endpoint(
        &mut self,
        local: usize,
        slot: u32,
        now: u64,
        f: impl FnOnce(&mut Endpoint, &mut Ctx<'_>),
    ) {
        let mut out = std::mem::take(&mut self.scratch);
        let node = &mut self.nodes[local];
        let nic_bps = node.nic_bps();
        let nic_queued = node.ports[0].queue.len_bytes();
        let host = node.host.as_mut().expect("endpoints live on hosts");
        let called: Called = host.call(
            node.id,
            slot,
            now,
            nic_bps,
            nic_queued,
            &mut node.rng,
            &mut out,
            f,
        );
        if let Some(r) = self.replay.as_deref() {
            r.stamp(&mut out);
        }
        if let Some((t, gen)) = called.timer {
            schedule_own(&mut self.events, node, t, EventKind::Timer { slot, gen });
        }
        if let Some((t, gen)) = called.service_timer {
            let slot = HostServices::TIMER_SLOT;
            schedule_own(&mut self.events, node, t, EventKind::Timer { slot, gen });
        }
        if let Some(at) = called.finished_at {
            let flow = node.host.as_ref().expect("host").slots[slot as usize].flow;
            self.finished_out.push((at + self.shared.notice_ps, flow));
            self.flows.1 += 1;
        }
        self.counters.created += out.len() as u64;
        for pkt in out.drain(..) {
            self.offer(local, 0, pkt, now, None);
        }
        self.scratch = out;
    }

    /// Offers a packet that came in on `ingress` (None: from the host's
    /// transport) to an output port, then any packet it bounced to the port
    /// back towards its source.
    fn offer(&mut self, local: usize, port: u16, pkt: Packet, now: u64, ingress: Option<u16>) {
        self.offer_at(local, port, pkt, now, ingress);
        while let Some((back, b)) = self.bounced.pop() {
            self.offer_at(local, back, b, now, ingress);
        }
    }

    /// One offer: the port counts and traces what its discipline reports;
    /// a PFC switch admits and charges it; bounced packets are set aside,
    /// and an idle port starts.
    #[inline]
    fn offer_at(&mut self, local: usize, port: u16, pkt: Packet, now: u64, ingress: Option<u16>) {
        self.wake(local, port);
        let node = &mut self.nodes[local];
        let p = &mut node.ports[port as usize];
        let mut cx = PortCx {
            now,
            node: node.id,
            port,
            rng: &mut node.rng,
            reports: &mut self.reports,
            trace: self.trace.as_deref_mut(),
            topo: Some(&self.shared.topo),
            pool: &mut self.pool,
            inputs_busy_until: &[],
        };
        // PFC: a switch admits a packet from an input port before its queue sees it.
        let mut pfc = match (node.pfc.as_deref_mut(), ingress) {
            (Some(mmu), Some(in_port)) => Some((mmu, in_port)),
            _ => None,
        };
        if let Some((mmu, in_port)) = pfc.as_mut() {
            if !mmu.admit(&pkt, *in_port, port) {
                self.counters.dropped += 1;
                p.refuse(pkt, &mut cx);
                return;
            }
        }
        let offered = p.offer(pkt, ingress, &mut cx);
        self.counters.dropped += offered.dropped;
        if let Some((mmu, in_port)) = pfc {
            let queued = cx.reports.iter().find(|r| r.outcome == Outcome::Queued);
            if let Some(r) = queued {
                let signal = mmu.charge(&r.pkt, in_port, port, now);
                if signal != Signal::None {
                    self.signal(local, signal, now);
                }
            }
        }
        if offered.dropped > 0 && ingress.is_none() && self.nic_fetch {
            let node = &self.nodes[local];
            if node.host.is_some() {
                nic_dropped(&self.reports, node.id, local, &mut self.nic_freed);
            }
        }
        if offered.bounced {
            // Return-to-sender: the discipline swapped the addresses; route it back.
            let (topo, id) = (&self.shared.topo, self.nodes[local].id);
            for r in self
                .reports
                .drain(..)
                .filter(|r| r.outcome == Outcome::Bounced)
            {
                match switch::bounce_port(topo, id, port, &r.pkt) {
                    Some(back) => self.bounced.push((back, r.pkt)),
                    None => self.counters.dropped += 1,
                }
            }
        } else {
            let p = &mut self.nodes[local].ports[port as usize];
            if !p.busy || p.interrupt(now) {
                self.transmit(local, port, now);
            }
        }
    }

    /// Settles `port`'s deferred completion before anything changes the
    /// port: if the completion's key is before the current event's, it has
    /// already happened (the port went idle then, and the count is as if
    /// its event ran); otherwise it becomes the event it would have been,
    /// under the same key. Either way every later key, and so every output,
    /// is as if the completion had been in the heap all along.
    fn wake(&mut self, local: usize, port: u16) {
        let node = &mut self.nodes[local];
        let Some((time, seq)) = node.ports[port as usize].deferred_done.take() else {
            return;
        };
        let key = own_key(node.id, time, seq);
        if key < self.key_now {
            self.settle_idle(local, port, time);
        } else {
            self.events.push(key, EventKind::TxDone { port });
        }
    }

    /// What the transmit-done event at `time` of a port with nothing to send
    /// did: free the port and try to start it (which finds nothing, but
    /// lets the discipline and the trace see the port at that time).
    fn settle_idle(&mut self, local: usize, port: u16, time: u64) {
        self.nodes[local].ports[port as usize].finish();
        let started = self.transmit(local, port, time);
        debug_assert!(!started, "a deferred completion had packets behind it");
        self.events_processed += 1;
        self.event_counts.0[EventCounts::TX_DONE_IDLE] += 1;
        self.last_event_ps = self.last_event_ps.max(time);
    }

    /// At the end of a run: settles every deferred completion the run would
    /// have processed (those before the stop time), for the event counts and
    /// the end time.
    pub fn settle_deferred(&mut self) {
        let stop = self.shared.stop_ps.unwrap_or(u64::MAX);
        for local in 0..self.nodes.len() {
            for port in 0..self.nodes[local].ports.len() {
                let p = &mut self.nodes[local].ports[port];
                match p.deferred_done {
                    Some((time, _)) if time < stop => {
                        p.deferred_done = None;
                        self.settle_idle(local, port as u16, time);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Starts serialising the next packet of a port, if it can start; puts
    /// the packet on the wire and schedules the port's transmit-done.
    /// Returns whether a packet started (for the event counts).
    fn transmit(&mut self, local: usize, port: u16, now: u64) -> bool {
        let node = &mut self.nodes[local];
        let p = &mut node.ports[port as usize];
        let mut cx = PortCx {
            now,
            node: node.id,
            port,
            rng: &mut node.rng,
            reports: &mut self.reports,
            trace: self.trace.as_deref_mut(),
            topo: Some(&self.shared.topo),
            pool: &mut self.pool,
            inputs_busy_until: node.crossbar.as_deref().map_or(&[], Crossbar::busy_until),
        };
        let started = p.start(&mut cx);
        self.counters.dropped += started.dropped;
        if self.nic_fetch && node.host.is_some() {
            let sent = started.sent.as_ref().map(|(pkt, _)| pkt);
            let freed = &mut self.nic_freed;
            nic_started(&self.reports, node.id, local, started.dropped, sent, freed);
        }
        let Some((mut pkt, done)) = started.sent else {
            return false;
        };
        if let Some(host) = node.host.as_deref_mut().filter(|_| self.nic_stamps) {
            host.departing(&mut pkt, now);
        }
        let from = started.ingress;
        if let (Some(xbar), Some(input)) = (node.crossbar.as_deref_mut(), from) {
            xbar.occupy(input, now, done);
        }
        let held = p.preempt.is_some();
        let mut signal = Signal::None;
        if pkt.kind == PacketKind::Pause {
            self.counters.frames_sent += 1;
        } else if let Some(mmu) = node.pfc.as_deref_mut() {
            signal = mmu.release(&pkt, port, from);
        }
        // Nothing behind this packet: its completion would only mark the port
        // idle, so it is kept in the port, not the heap, until needed.
        // (A preemptive port needs the event: it hands the packet over then.)
        // (A crossbar needs it too: the completion frees an input that other
        // outputs may be waiting for.)
        let idle_after = p.nothing_waiting() && !held && node.crossbar.is_none();
        let seq = node.next_seq();
        if idle_after {
            node.ports[port as usize].deferred_done = Some((done, seq));
        } else {
            let key = own_key(node.id, done, seq);
            self.events.push(key, EventKind::TxDone { port });
            // The packet that completion will send: fetching it now hides
            // the miss it would take then (a hint only).
            node.ports[port as usize].queue.prefetch_next(&self.pool);
        }
        if held {
            // Interruptible until its last bit has left: the link gets it then.
            node.ports[port as usize].hold(pkt, now, done);
        } else {
            self.launch(local, port, pkt, done);
        }
        if signal != Signal::None {
            self.signal(local, signal, now);
        }
        true
    }

    /// Output `port` of a crossbar switch finished a packet, so the input
    /// that fed it is free: the outputs with packets waiting (idle because
    /// their inputs were busy) try again, `port` itself last
    /// (`net/crossbar.rs`). Returns whether `port` started a packet.
    fn crossbar_freed(&mut self, local: usize, port: u16, now: u64) -> bool {
        let ports = self.nodes[local].ports.len() as u16;
        let mut started = false;
        for o in Crossbar::retry_order(ports, port) {
            let p = &self.nodes[local].ports[o as usize];
            if o == port {
                started = self.transmit(local, o, now);
            } else if !p.busy && p.queue.len_packets() > 0 {
                self.transmit(local, o, now);
            }
        }
        started
    }

    /// Puts a packet whose last bit leaves `port` at `done` on its link
    /// (unless the link loses it): it reaches the peer one delay later.
    fn launch(&mut self, local: usize, port: u16, pkt: Packet, done: u64) {
        let node = &mut self.nodes[local];
        let p = &mut node.ports[port as usize];
        let link = p.link;
        if pkt.kind != PacketKind::Pause && p.loss.as_deref_mut().is_some_and(|l| l.lose()) {
            self.counters.lost_on_link += 1;
            self.counters.dropped += 1;
            return;
        }
        let seq = node.next_seq();
        let inflight = InFlight {
            arrive: done + link.link.delay_ps,
            src: node.id,
            seq,
            pkt,
        };
        let dst_shard = self.shared.shard_of[link.peer as usize];
        if dst_shard == self.id {
            self.arrive_later(link.peer, link.peer_port, inflight);
        } else {
            self.outbox[dst_shard as usize].push(Message {
                dst: link.peer,
                port: link.peer_port,
                inflight,
            });
        }
    }

    /// Ends the trace recorders at `sim_end_ps` and hands over what they hold.
    pub fn finish_trace(&mut self, sim_end_ps: u64) -> Option<crate::trace::TraceOutput> {
        let t = self.trace.take()?;
        let (nodes, local) = (&self.nodes, &self.shared.local);
        Some(t.finish(sim_end_ps, |n, p| {
            let port = &nodes[local[n as usize] as usize].ports[p as usize];
            crate::trace::PortAtEnd {
                bytes: port.queue.len_bytes(),
                pkts: port.queue.len_packets(),
                paused_since: port.paused_since(),
            }
        }))
    }
}

/// Queues a notice for each packet of a NIC-fetched sender that host
/// `id`'s NIC queue dropped (on offer, by eviction or at dequeue): the
/// sender's count of packets in the NIC must drop with it, or it would
/// wait forever. Called only where hosts' NICs fetch.
fn nic_dropped(reports: &[Report], id: u32, local: usize, freed: &mut Vec<(u32, u64)>) {
    let gone = |o: Outcome| {
        matches!(
            o,
            Outcome::Dropped | Outcome::Evicted | Outcome::DequeueDropped
        )
    };
    for r in reports
        .iter()
        .filter(|r| gone(r.outcome) && r.pkt.nic_fetched_from(id))
    {
        freed.push((local as u32, r.pkt.flow));
    }
}

/// The notices of one transmit start at a fetching host's NIC: the
/// `dropped` packets it dropped at dequeue (in `reports`), then the one it
/// put on the wire (`sent`). Out of line: transmit runs it only where NICs
/// fetch.
#[inline(never)]
fn nic_started(
    reports: &[Report],
    id: u32,
    local: usize,
    dropped: u64,
    sent: Option<&Packet>,
    freed: &mut Vec<(u32, u64)>,
) {
    if dropped > 0 {
        nic_dropped(reports, id, local, freed);
    }
    if let Some(pkt) = sent.filter(|pkt| pkt.nic_fetched_from(id)) {
        freed.push((local as u32, pkt.flow));
    }
}

/// Schedules an event that `node` creates for itself (timers, transmit
/// completions): its key takes the node's next sequence number.
fn schedule_own(events: &mut EventQueue, node: &mut Node, time: u64, kind: EventKind) {
    let seq = node.next_seq();
    events.push(own_key(node.id, time, seq), kind);
}

/// The key of an event entity `id` schedules for itself.
fn own_key(id: u32, time: u64, seq: u64) -> EventKey {
    EventKey {
        time,
        target: id,
        source: id,
        seq,
    }
}

/// Orders a window's events entity by entity, in the order of the
/// entities' indices in the shard (`local`, by entity id), each entity's in
/// key order. A window with fewer events than one per `few` entities (an
/// incast's long tail) takes one comparison sort, rather than passes over
/// every entity of the shard; a fuller one is grouped in place
/// ([`group_by_entity`]) and each run sorted. `starts` and `next` are
/// scratch.
fn order_by_entity(
    events: &mut [Event],
    starts: &mut Vec<u32>,
    next: &mut Vec<u32>,
    entities: usize,
    local: &[u32],
    few: usize,
) {
    if events.len().saturating_mul(few) < entities {
        events.sort_unstable_by_key(|e| (local[e.key.target as usize], e.key));
        return;
    }
    group_by_entity(events, starts, next, entities, |e| {
        local[e.key.target as usize] as usize
    });
    for k in 0..entities {
        let run = starts[k] as usize..starts[k + 1] as usize;
        if run.len() > 1 {
            events[run].sort_unstable_by_key(|e| e.key);
        }
    }
}

/// Permutes `events` in place so that they are grouped by `bucket(e)` (in
/// `0..buckets`), bucket 0 first, and sets `starts[k]` to where bucket k's
/// run begins (`starts[buckets]` is the length). Each event moves once,
/// straight to its place (a cycle-leader permutation), so no second copy of
/// the events is made; the order inside a bucket is not kept. `next` is
/// scratch.
fn group_by_entity(
    events: &mut [Event],
    starts: &mut Vec<u32>,
    next: &mut Vec<u32>,
    buckets: usize,
    bucket: impl Fn(&Event) -> usize,
) {
    starts.clear();
    starts.resize(buckets + 1, 0);
    for e in events.iter() {
        starts[bucket(e) + 1] += 1;
    }
    for k in 1..=buckets {
        starts[k] += starts[k - 1];
    }
    next.clear();
    next.extend_from_slice(&starts[..buckets]);
    for b in 0..buckets {
        let end = starts[b + 1];
        while next[b] < end {
            // Carry the event at bucket b's first unplaced position to its
            // bucket, and the one it displaces to that one's, until an
            // event for bucket b comes back.
            let mut ev = events[next[b] as usize];
            loop {
                let d = bucket(&ev);
                if d == b {
                    break;
                }
                let at = next[d] as usize;
                next[d] += 1;
                std::mem::swap(&mut ev, &mut events[at]);
            }
            events[next[b] as usize] = ev;
            next[b] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_full_windows_are_ordered_alike() {
        // The comparison sort of a sparse window and the grouping of a full
        // one give the same sequence: by the entity's index, then by key.
        let mut rand = crate::engine::event::tests::xorshift(0x2545_f491_4f6c_dd1du64);
        let (mut starts, mut next) = (Vec::new(), Vec::new());
        // Entity ids 0..40, in the shard at indices given by a permutation.
        let local: Vec<u32> = (0..40u32).map(|i| (i * 17) % 40).collect();
        for n in [0, 1, 3, 50, 2000] {
            let events: Vec<Event> = (0..n)
                .map(|i| Event {
                    key: EventKey {
                        time: rand() % 50,
                        target: (rand() % 40) as u32,
                        source: (rand() % 3) as u32,
                        seq: i,
                    },
                    kind: EventKind::TxDone { port: 0 },
                })
                .collect();
            let (mut sorted, mut grouped) = (events.clone(), events);
            // `few` = 0: always the comparison sort; usize::MAX: always grouped.
            order_by_entity(&mut sorted, &mut starts, &mut next, 40, &local, 0);
            order_by_entity(&mut grouped, &mut starts, &mut next, 40, &local, usize::MAX);
            let keys = |v: &[Event]| v.iter().map(|e| e.key).collect::<Vec<_>>();
            assert_eq!(keys(&sorted), keys(&grouped));
            let order: Vec<_> = sorted
                .iter()
                .map(|e| (local[e.key.target as usize], e.key))
                .collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "entity, then key");
        }
    }

    #[test]
    fn group_by_entity_places_every_event_in_its_bucket() {
        // Against a model: the same multiset of events per bucket, runs in
        // bucket order, and `starts` at the runs' boundaries.
        let mut rand = crate::engine::event::tests::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let (mut starts, mut next) = (Vec::new(), Vec::new());
        for (n, buckets) in [(0, 1), (1, 1), (7, 3), (1000, 17), (5000, 1)] {
            let mut events: Vec<Event> = (0..n)
                .map(|i| Event {
                    key: EventKey {
                        time: rand() % 1000,
                        target: (rand() % buckets) as u32,
                        source: 0,
                        seq: i,
                    },
                    kind: EventKind::TxDone { port: 0 },
                })
                .collect();
            let mut model = events.clone();
            model.sort_by_key(|e| (e.key.target, e.key.seq));
            group_by_entity(&mut events, &mut starts, &mut next, buckets as usize, |e| {
                e.key.target as usize
            });
            assert_eq!(starts.len(), buckets as usize + 1);
            assert_eq!(starts[buckets as usize] as usize, events.len());
            for k in 0..buckets as usize {
                let run = &events[starts[k] as usize..starts[k + 1] as usize];
                assert!(run.iter().all(|e| e.key.target as usize == k));
            }
            events.sort_by_key(|e| (e.key.target, e.key.seq));
            let keys = |v: &[Event]| v.iter().map(|e| e.key).collect::<Vec<_>>();
            assert_eq!(keys(&events), keys(&model));
        }
    }

    #[test]
    fn per_packet_storage_stays_small() {
        // docs/performance.md quotes these: a packet on a wire costs one InFlight,
        // a queued packet one Packet, with no allocation per packet.
        assert_eq!(std::mem::size_of::<Packet>(), 64);
        assert_eq!(std::mem::size_of::<InFlight>(), 88);
    }
}
