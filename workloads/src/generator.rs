//! The per-shard, lazy flow generator.
//!
//! Pending flows sit in one min-heap ordered by `(start_ps, id)`. Sources that would produce many
//! flows per host (Poisson arrivals, all-to-all destinations) keep only their *next* flow in the
//! heap, tagged with a continuation; popping it computes the successor. Open-loop incast rounds
//! are expanded just in time: a round is pushed once its start is not after the heap's top, so
//! [`FlowGenerator::peek_start`] is always exact.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::plan::{Closed, Collective, Incast, Inner, Mesh, MeshKind, Plan, Poisson, GLOBAL};
use crate::rng::{stream, Stream};
use crate::{flow_id, split_flow_id, FlowSpec, GroupCompletion};

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
enum Cont {
    None,
    Mesh { k: u32 },
    Poisson { slot: u32 },
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Item {
    flow: FlowSpec,
    cont: Cont,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.flow.start_ps, self.flow.id).cmp(&(o.flow.start_ps, o.flow.id))
    }
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct PoissonSlot {
    host: u32,
    rng: Stream,
    t_ps: f64,
    counter: u32,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct TrigState {
    fired: bool,
    used: u32,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum State {
    None,
    Incast {
        finished: BTreeMap<u32, u32>,
        next_open_round: u32,
    },
    Poisson(Vec<PoissonSlot>),
    Collective {
        /// Current global step per member position (meaningful for owned members).
        cur: Vec<u64>,
        /// Finished flows per (member position, global step) not yet consumed.
        credits: FxHashMap<(u32, u64), u32>,
        /// Finished flows per iteration, until the iteration completes.
        per_iter: BTreeMap<u64, u64>,
    },
    Cm {
        trig: Vec<TrigState>,
        finished: u64,
    },
}

/// Lazily yields the flows of the hosts one shard owns. `Send`; one per shard.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FlowGenerator {
    /// The validated plan, shared by every shard: a checkpoint leaves it out
    /// and [`FlowGenerator::reattach`] takes it from the rebuilt workload.
    #[serde(skip, default = "detached")]
    inner: Arc<Inner>,
    owned: Vec<u64>,
    heap: BinaryHeap<Reverse<Item>>,
    states: Vec<State>,
    open_incasts: Vec<u16>,
    completions: Vec<GroupCompletion>,
}

/// The plan of a generator read back from a checkpoint, until it is
/// re-attached: no entries, so it generates nothing.
fn detached() -> Arc<Inner> {
    Arc::new(Inner {
        hosts: 0,
        seed: 0,
        stop_ps: None,
        plans: Vec::new(),
    })
}

impl FlowGenerator {
    /// Re-attaches a generator read back from a checkpoint (its dynamic
    /// state: heaps, counters, random streams) to the static plan of
    /// `fresh`, a generator built anew from the same scenario.
    pub fn reattach(&mut self, fresh: &FlowGenerator) {
        self.inner = fresh.inner.clone();
    }

    pub(crate) fn new(inner: Arc<Inner>, owns: &dyn Fn(u32) -> bool) -> FlowGenerator {
        let mut owned = vec![0u64; (inner.hosts as usize).div_ceil(64)];
        for h in 0..inner.hosts {
            if owns(h) {
                owned[h as usize / 64] |= 1 << (h % 64);
            }
        }
        let mut g = FlowGenerator {
            states: Vec::with_capacity(inner.plans.len()),
            inner,
            owned,
            heap: BinaryHeap::new(),
            open_incasts: Vec::new(),
            completions: Vec::new(),
        };
        let inner = g.inner.clone();
        for (e, plan) in inner.plans.iter().enumerate() {
            let st = g.init_entry(e as u16, plan);
            g.states.push(st);
        }
        g.normalize();
        g
    }

    fn owns(&self, h: u32) -> bool {
        self.owned
            .get(h as usize / 64)
            .is_some_and(|w| w & (1 << (h % 64)) != 0)
    }

    fn owned_hosts(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.inner.hosts).filter(|&h| self.owns(h))
    }

    /// Queues a flow unless it starts at or after the scenario's horizon.
    fn push(&mut self, flow: FlowSpec, cont: Cont) {
        if self.inner.stop_ps.is_some_and(|s| flow.start_ps >= s) {
            return;
        }
        self.heap.push(Reverse(Item { flow, cont }));
    }

    fn init_entry(&mut self, e: u16, plan: &Plan) -> State {
        let seed = self.inner.seed;
        match plan {
            Plan::Pairs(p) => {
                let hosts: Vec<u32> = self
                    .owned_hosts()
                    .filter(|&h| p.parts.contains(h))
                    .collect();
                for h in hosts {
                    let mut rng = stream(seed, &[u64::from(e), u64::from(h)]);
                    for c in 0..p.per_host {
                        let start = p.start_ps + rng.jitter(p.jitter_ps);
                        let dst = match &p.perm {
                            Some(perm) => perm[p.parts.index[h as usize] as usize],
                            None => p.parts.random_other(h, &mut rng),
                        };
                        self.push(flow(e, h, c, dst, p.size, start, 0), Cont::None);
                    }
                }
                State::None
            }
            Plan::Incast(p) => {
                if p.period_ps.is_some() {
                    self.open_incasts.push(e);
                } else {
                    self.expand_incast(e, p, 0, p.start_ps);
                }
                State::Incast {
                    finished: BTreeMap::new(),
                    next_open_round: 0,
                }
            }
            Plan::Mesh(m) => {
                let senders: Vec<u32> = self
                    .owned_hosts()
                    .filter(|&h| match &m.kind {
                        MeshKind::Groups { .. } => true,
                        MeshKind::Lists { is_sender, .. } => is_sender[h as usize],
                    })
                    .collect();
                for h in senders {
                    let start = m.start_ps
                        + stream(seed, &[u64::from(e), u64::from(h)]).jitter(m.jitter_ps);
                    if let Some((f, k)) = mesh_flow(e, m, h, 0, start) {
                        self.push(f, Cont::Mesh { k: k + 1 });
                    }
                }
                State::None
            }
            Plan::Listed(flows) => {
                for f in flows {
                    if self.owns(f.src) {
                        self.push(*f, Cont::None);
                    }
                }
                State::None
            }
            Plan::Poisson(p) => {
                let hosts: Vec<u32> = self
                    .owned_hosts()
                    .filter(|&h| p.parts.contains(h))
                    .collect();
                let mut slots = Vec::with_capacity(hosts.len());
                for h in hosts {
                    let mut slot = PoissonSlot {
                        host: h,
                        rng: stream(seed, &[u64::from(e), u64::from(h)]),
                        t_ps: p.start_ps as f64,
                        counter: 0,
                    };
                    if let Some(f) = poisson_next(e, p, &mut slot) {
                        self.push(
                            f,
                            Cont::Poisson {
                                slot: slots.len() as u32,
                            },
                        );
                    }
                    slots.push(slot);
                }
                State::Poisson(slots)
            }
            Plan::Closed(p) => {
                let hosts: Vec<u32> = self.owned_hosts().filter(|&h| p.client(h)).collect();
                for h in hosts {
                    for c in 0..p.conns {
                        let mut rng =
                            stream(seed, &[u64::from(e), u64::from(h), u64::from(c), GLOBAL]);
                        let start = p.start_ps.saturating_add(think(p, &mut rng));
                        if start < p.stop_ps {
                            let (f, _) = closed_flow(seed, e, p, h, c, start);
                            self.push(f, Cont::None);
                        }
                    }
                }
                State::None
            }
            Plan::Collective(c) => {
                let mut cur = vec![u64::MAX; c.n as usize];
                for pos in 0..c.n {
                    if self.owns(c.first + pos) {
                        cur[pos as usize] = 0;
                        self.emit_step(e, c, pos, 0, c.start_ps);
                    }
                }
                State::Collective {
                    cur,
                    credits: FxHashMap::default(),
                    per_iter: BTreeMap::new(),
                }
            }
            Plan::Cm(cm) => {
                for f in &cm.flows {
                    if !f.triggered && self.owns(f.flow.src) {
                        self.push(f.flow, Cont::None);
                    }
                }
                State::Cm {
                    trig: cm.triggers.iter().map(|_| TrigState::default()).collect(),
                    finished: 0,
                }
            }
        }
    }

    /// Pushes the owned senders' flows of incast round `r`, starting at `round_start`.
    fn expand_incast(&mut self, e: u16, p: &Incast, r: u32, round_start: u64) {
        let senders = p.senders(self.inner.seed, e, self.inner.hosts, r);
        for (j, &h) in senders.iter().enumerate() {
            if !self.owns(h) {
                continue;
            }
            let jit = stream(self.inner.seed, &[u64::from(e), u64::from(h), u64::from(r)])
                .jitter(p.jitter_ps);
            let (size, prio) = if j == 0 {
                (p.first_size.or(p.size), p.first_prio)
            } else {
                (p.size, 0)
            };
            self.push(
                flow(
                    e,
                    h,
                    r,
                    p.receiver,
                    size,
                    round_start.saturating_add(jit),
                    prio,
                ),
                Cont::None,
            );
        }
    }

    /// Pushes member `pos`'s flows of global step `g` at time `t`.
    fn emit_step(&mut self, e: u16, c: &Collective, pos: u32, g: u64, t: u64) {
        let k = (g % u64::from(c.steps)) as u32;
        let src = c.first + pos;
        for j in 0..c.sends {
            let dst = c.first + c.peer(pos, k, j);
            let counter = (g * u64::from(c.sends) + u64::from(j)) as u32;
            self.push(
                flow(e, src, counter, dst, Some(c.flow_bytes), t, 0),
                Cont::None,
            );
        }
    }

    /// Expands open-loop incast rounds whose start is not after the earliest pending flow, so
    /// that the heap's top is always the true next flow.
    fn normalize(&mut self) {
        if self.open_incasts.is_empty() {
            return;
        }
        let inner = self.inner.clone();
        for i in 0..self.open_incasts.len() {
            let e = self.open_incasts[i];
            let Plan::Incast(p) = &inner.plans[e as usize] else {
                continue;
            };
            let period = p.period_ps.unwrap_or(0);
            while let State::Incast {
                next_open_round, ..
            } = &mut self.states[e as usize]
            {
                let r = *next_open_round;
                if r >= p.repeat {
                    break;
                }
                let rs = p
                    .start_ps
                    .saturating_add(u64::from(r).saturating_mul(period));
                if inner.stop_ps.is_some_and(|s| rs >= s) {
                    *next_open_round = p.repeat;
                    break;
                }
                if self.heap.peek().is_some_and(|top| top.0.flow.start_ps < rs) {
                    break;
                }
                *next_open_round = r + 1;
                self.expand_incast(e, p, r, rs);
            }
        }
    }

    /// Start time of the next flow this generator will yield, if any is currently known.
    pub fn peek_start(&self) -> Option<u64> {
        self.heap.peek().map(|it| it.0.flow.start_ps)
    }

    /// Appends to `out` every flow with `start_ps < t`, in order of `(start_ps, id)`.
    pub fn pop_before(&mut self, t: u64, out: &mut Vec<FlowSpec>) {
        loop {
            self.normalize();
            if self.heap.peek().is_none_or(|top| top.0.flow.start_ps >= t) {
                break;
            }
            let Some(Reverse(item)) = self.heap.pop() else {
                break;
            };
            out.push(item.flow);
            self.advance(item);
        }
    }

    /// Computes and queues the successor of a popped flow from a multi-flow source.
    fn advance(&mut self, item: Item) {
        let (e, src, _) = split_flow_id(item.flow.id);
        let inner = self.inner.clone();
        match (item.cont, &inner.plans[e as usize]) {
            (Cont::Mesh { k }, Plan::Mesh(m)) => {
                if let Some((f, k2)) = mesh_flow(e, m, src, k, item.flow.start_ps) {
                    self.push(f, Cont::Mesh { k: k2 + 1 });
                }
            }
            (Cont::Poisson { slot }, Plan::Poisson(p)) => {
                let State::Poisson(slots) = &mut self.states[e as usize] else {
                    return;
                };
                if let Some(f) = poisson_next(e, p, &mut slots[slot as usize]) {
                    self.push(f, Cont::Poisson { slot });
                }
            }
            _ => {}
        }
    }

    /// The engine reports that flow `id` finished (its last byte arrived) at `at_ps`.
    ///
    /// Must be called on every shard's generator for every finished flow, in a deterministic
    /// order; ids of other workloads or of open-loop patterns are ignored. Released flows start
    /// at `at_ps` plus the pattern's configured delay.
    pub fn on_finished(&mut self, id: u64, at_ps: u64) {
        let (e, src, counter) = split_flow_id(id);
        let inner = self.inner.clone();
        let Some(plan) = inner.plans.get(e as usize) else {
            return;
        };
        match plan {
            Plan::Incast(p) => self.incast_finished(e, p, counter, at_ps),
            Plan::Closed(p) => {
                if !self.owns(src) || !p.client(src) {
                    return;
                }
                let c = counter % p.conns;
                let Some(next) = counter.checked_add(p.conns) else {
                    return;
                };
                if p.requests.is_some_and(|n| next / p.conns >= n) {
                    return; // the loop has sent its `requests` flows
                }
                let (_, think_after) = closed_flow(inner.seed, e, p, src, counter, 0);
                let start = at_ps.saturating_add(think_after);
                if start < p.stop_ps {
                    let (f, _) = closed_flow(inner.seed, e, p, src, next, start);
                    debug_assert_eq!(next % p.conns, c);
                    self.push(f, Cont::None);
                }
            }
            Plan::Collective(c) => self.collective_finished(e, c, src, counter, at_ps),
            Plan::Cm(cm) => {
                let Some(&idx) = cm.by_id.get(&id) else {
                    return;
                };
                let State::Cm { finished, .. } = &mut self.states[e as usize] else {
                    return;
                };
                *finished += 1;
                let all_done = *finished == cm.flows.len() as u64;
                for t in cm.flows[idx as usize].activates.into_iter().flatten() {
                    self.activate(e, cm, t, at_ps);
                }
                if all_done && self.owns(cm.rep) {
                    self.completions.push(GroupCompletion {
                        entry: e,
                        name: cm.name.clone(),
                        instance: 0,
                        completed_ps: at_ps,
                    });
                }
            }
            _ => {}
        }
    }

    fn incast_finished(&mut self, e: u16, p: &Incast, round: u32, at_ps: u64) {
        if round >= p.repeat {
            return;
        }
        let State::Incast { finished, .. } = &mut self.states[e as usize] else {
            return;
        };
        let n = finished.entry(round).or_insert(0);
        *n += 1;
        if *n < p.count {
            return;
        }
        finished.remove(&round);
        if self.owns(p.receiver) {
            self.completions.push(GroupCompletion {
                entry: e,
                name: "incast".into(),
                instance: u64::from(round),
                completed_ps: at_ps,
            });
        }
        if p.period_ps.is_none() && round + 1 < p.repeat {
            self.expand_incast(e, p, round + 1, at_ps.saturating_add(p.gap_ps));
        }
    }

    fn collective_finished(&mut self, e: u16, c: &Collective, src: u32, counter: u32, at: u64) {
        if src < c.first || src - c.first >= c.n {
            return;
        }
        let g = u64::from(counter / c.sends);
        let j = counter % c.sends;
        if g >= c.total_steps() {
            return;
        }
        let spos = src - c.first;
        let dpos = c.peer(spos, (g % u64::from(c.steps)) as u32, j);
        for pos in [spos, dpos] {
            if !self.owns(c.first + pos) {
                continue;
            }
            let State::Collective { cur, credits, .. } = &mut self.states[e as usize] else {
                return;
            };
            let n = credits.entry((pos, g)).or_insert(0);
            *n += 1;
            if cur[pos as usize] == g && *n == c.need() {
                credits.remove(&(pos, g));
                cur[pos as usize] = g + 1;
                if g + 1 < c.total_steps() {
                    self.emit_step(e, c, pos, g + 1, at.saturating_add(c.delay_ps));
                }
            }
        }
        let iter = g / u64::from(c.steps);
        let per_iter_flows = u64::from(c.n) * u64::from(c.steps) * u64::from(c.sends);
        let State::Collective { per_iter, .. } = &mut self.states[e as usize] else {
            return;
        };
        let n = per_iter.entry(iter).or_insert(0);
        *n += 1;
        if *n == per_iter_flows {
            per_iter.remove(&iter);
            if self.owns(c.first) {
                self.completions.push(GroupCompletion {
                    entry: e,
                    name: c.name.clone(),
                    instance: iter,
                    completed_ps: at,
                });
            }
        }
    }

    fn activate(&mut self, e: u16, cm: &crate::plan::CmPlan, t: u32, at: u64) {
        let trig = &cm.triggers[t as usize];
        let State::Cm { trig: ts, .. } = &mut self.states[e as usize] else {
            return;
        };
        let st = &mut ts[t as usize];
        let release: &[u32] = match trig.kind {
            crate::cm::TriggerKind::Oneshot => {
                if st.fired {
                    &[]
                } else {
                    st.fired = true;
                    &trig.targets
                }
            }
            crate::cm::TriggerKind::Multishot => {
                let i = st.used as usize;
                if i < trig.targets.len() {
                    st.used += 1;
                    &trig.targets[i..=i]
                } else {
                    &[]
                }
            }
            crate::cm::TriggerKind::Barrier { count } => {
                if st.used < count {
                    st.used += 1;
                    if st.used == count {
                        st.fired = true;
                        &trig.targets
                    } else {
                        &[]
                    }
                } else {
                    &[]
                }
            }
        };
        let fired_all =
            !matches!(trig.kind, crate::cm::TriggerKind::Multishot) && !release.is_empty();
        let start = at.saturating_add(cm.delay_ps);
        for &i in release {
            let mut f = cm.flows[i as usize].flow;
            if self.owns(f.src) {
                f.start_ps = start;
                self.push(f, Cont::None);
            }
        }
        if fired_all && self.owns(cm.rep) {
            self.completions.push(GroupCompletion {
                entry: e,
                name: format!("{}: trigger {}", cm.name, trig.cm_id),
                instance: 0,
                completed_ps: at,
            });
        }
    }

    /// Collectives, incast rounds and `.cm` triggers/files that completed so far, in the order
    /// the completions were reported. Each group is recorded only by the generator owning its
    /// designated host (collective: first member; incast: receiver; `.cm`: source of the file's
    /// first flow).
    pub fn completed_groups(&self) -> &[GroupCompletion] {
        &self.completions
    }

    /// Number of flows currently queued (for memory accounting in tests and benchmarks).
    pub fn pending(&self) -> usize {
        self.heap.len()
    }
}

fn flow(
    e: u16,
    src: u32,
    counter: u32,
    dst: u32,
    size: Option<u64>,
    start: u64,
    prio: u8,
) -> FlowSpec {
    FlowSpec {
        id: flow_id(e, src, counter),
        src,
        dst,
        size_bytes: size,
        start_ps: start,
        class: e,
        priority: prio,
    }
}

/// The first flow of sender `h` with destination index >= `k`, and its index.
fn mesh_flow(e: u16, m: &Mesh, h: u32, k: u32, start: u64) -> Option<(FlowSpec, u32)> {
    match &m.kind {
        MeshKind::Groups { size } => {
            if k + 1 >= *size {
                return None;
            }
            let base = h - h % size;
            let dst = base + (h - base + 1 + k) % size;
            Some((flow(e, h, k, dst, m.size, start, 0), k))
        }
        MeshKind::Lists {
            receivers, copies, ..
        } => {
            // Index k is copy k % copies of the flow to receiver k / copies.
            let (i, &dst) = receivers
                .iter()
                .enumerate()
                .skip((k / copies) as usize)
                .find(|&(_, &r)| r != h)?;
            let idx = if i as u32 == k / copies {
                k
            } else {
                i as u32 * copies
            };
            Some((flow(e, h, idx, dst, m.size, start, 0), idx))
        }
    }
}

/// Draws a Poisson host's next arrival, or `None` past the horizon. The per-host stream is
/// consumed in a fixed order: gap, destination, size.
fn poisson_next(e: u16, p: &Poisson, s: &mut PoissonSlot) -> Option<FlowSpec> {
    s.t_ps += s.rng.exp(p.mean_gap_ps);
    if s.t_ps >= p.stop_ps as f64 || s.counter == u32::MAX {
        return None;
    }
    let dst = p.parts.random_other(s.host, &mut s.rng);
    let size = p.sizes.sample(&mut s.rng);
    let f = flow(
        e,
        s.host,
        s.counter,
        dst,
        Some(size),
        s.t_ps as u64,
        p.priority,
    );
    s.counter += 1;
    Some(f)
}

fn think(p: &Closed, rng: &mut Stream) -> u64 {
    if p.fixed_think {
        p.think_mean_ps as u64
    } else {
        rng.exp(p.think_mean_ps) as u64
    }
}

/// Closed-loop flow number `counter` of host `h` (connection `counter % conns`) and the think
/// time that follows it. Everything is drawn from the flow's own stream, so the flow can be
/// rebuilt on completion without per-connection state.
fn closed_flow(seed: u64, e: u16, p: &Closed, h: u32, counter: u32, start: u64) -> (FlowSpec, u64) {
    let mut rng = stream(seed, &[u64::from(e), u64::from(h), u64::from(counter)]);
    let dst = match p.target {
        Some(t) => t,
        None => p.parts.random_other(h, &mut rng),
    };
    let size = p.sizes.sample(&mut rng);
    let th = think(p, &mut rng);
    (flow(e, h, counter, dst, Some(size), start, 0), th)
}
