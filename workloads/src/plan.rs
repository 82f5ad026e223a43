//! Validation and compilation of [`PatternSpec`]s into immutable plans.
//!
//! A plan holds everything that is the same on every shard (derangements, sender sets, parsed
//! files, rates in ps). Per-shard, mutable state lives in the generator.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::cm::{CmFile, TriggerKind};
use crate::error::WorkloadError;
use crate::files::{read_flows_csv, read_flows_parquet, ListedFlow};
use crate::rng::{stream, Stream};
use crate::sizes::SizeDist;
use crate::spec::*;
use crate::{flow_id, FlowSpec, WorkloadEnv};

/// Key part that separates an entry's global stream from its per-host streams (hosts < 2^24).
pub(crate) const GLOBAL: u64 = 1 << 40;
/// "Not a participant" marker in host index tables.
pub(crate) const NONE: u32 = u32::MAX;

pub(crate) struct Inner {
    pub hosts: u32,
    pub seed: u64,
    pub stop_ps: Option<u64>,
    pub plans: Vec<Plan>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("hosts", &self.hosts)
            .field("seed", &self.seed)
            .field("stop_ps", &self.stop_ps)
            .field("entries", &self.plans.len())
            .finish()
    }
}

/// The hosts taking part in a pattern, with a reverse index.
pub(crate) struct Participants {
    pub list: Vec<u32>,
    pub index: Vec<u32>,
    /// Hosts per group (`far_group_size`): random destinations lie outside
    /// the sender's group of consecutive hosts. None: anywhere.
    pub far_group: Option<std::num::NonZeroU32>,
}

impl Participants {
    pub fn contains(&self, h: u32) -> bool {
        self.index.get(h as usize).is_some_and(|&i| i != NONE)
    }

    /// A uniformly random participant other than `h` (which must be a
    /// participant), outside `h`'s group when groups are set.
    pub fn random_other(&self, h: u32, rng: &mut Stream) -> u32 {
        let n = self.list.len() as u64;
        if let Some(g) = self.far_group {
            // Rejection: `far` checked that every group has participants
            // outside it, so this ends; each try costs one draw.
            loop {
                let d = self.list[rng.below(n) as usize];
                if d / g != h / g {
                    return d;
                }
            }
        }
        let me = self.index[h as usize] as u64;
        let mut j = rng.below(n - 1);
        if j >= me {
            j += 1;
        }
        self.list[j as usize]
    }
}

pub(crate) struct Pairs {
    pub parts: Participants,
    /// Destination per participant index, for derangements.
    pub perm: Option<Vec<u32>>,
    pub size: Option<u64>,
    pub start_ps: u64,
    pub jitter_ps: u64,
    pub per_host: u32,
}

pub(crate) struct Incast {
    pub receiver: u32,
    pub count: u32,
    /// Senders of every round, unless `resample`.
    pub fixed: Vec<u32>,
    pub resample: bool,
    pub size: Option<u64>,
    pub first_size: Option<u64>,
    pub first_prio: u8,
    pub start_ps: u64,
    pub jitter_ps: u64,
    pub repeat: u32,
    /// `Some(period)` = open loop.
    pub period_ps: Option<u64>,
    pub gap_ps: u64,
}

pub(crate) enum MeshKind {
    Groups {
        size: u32,
    },
    Lists {
        receivers: Vec<u32>,
        is_sender: Vec<bool>,
        /// Flows per (sender, receiver) pair.
        copies: u32,
    },
}

pub(crate) struct Mesh {
    pub kind: MeshKind,
    pub size: Option<u64>,
    pub start_ps: u64,
    pub jitter_ps: u64,
}

pub(crate) struct Poisson {
    pub parts: Participants,
    pub mean_gap_ps: f64,
    pub sizes: SizeDist,
    pub start_ps: u64,
    pub stop_ps: u64,
    pub priority: u8,
}

pub(crate) struct Closed {
    pub parts: Participants,
    pub conns: u32,
    pub sizes: SizeDist,
    pub think_mean_ps: f64,
    pub fixed_think: bool,
    pub start_ps: u64,
    pub stop_ps: u64,
    /// The one destination of every loop, which runs none (None: random).
    pub target: Option<u32>,
    /// Flows per loop (None: until `stop_ps`).
    pub requests: Option<u32>,
}

impl Closed {
    /// Whether host `h` runs client loops.
    pub fn client(&self, h: u32) -> bool {
        self.parts.contains(h) && self.target != Some(h)
    }
}

pub(crate) struct Collective {
    pub first: u32,
    pub n: u32,
    pub algo: Algorithm,
    pub flow_bytes: u64,
    pub start_ps: u64,
    pub iterations: u32,
    pub delay_ps: u64,
    pub name: String,
    pub steps: u32,
    pub sends: u32,
}

pub(crate) struct CmFlowC {
    pub flow: FlowSpec,
    pub triggered: bool,
    pub activates: [Option<u32>; 2],
}

pub(crate) struct CmTrig {
    pub cm_id: u64,
    pub kind: TriggerKind,
    pub targets: Vec<u32>,
}

pub(crate) struct CmPlan {
    pub flows: Vec<CmFlowC>,
    pub by_id: FxHashMap<u64, u32>,
    pub triggers: Vec<CmTrig>,
    pub delay_ps: u64,
    pub name: String,
    pub rep: u32,
}

pub(crate) enum Plan {
    Pairs(Pairs),
    Incast(Incast),
    Mesh(Mesh),
    Listed(Vec<FlowSpec>),
    Poisson(Poisson),
    Closed(Closed),
    Collective(Collective),
    Cm(CmPlan),
}

impl Incast {
    /// Senders of round `r`, in order (the first is the "first sender").
    pub fn senders(&self, seed: u64, e: u16, hosts: u32, r: u32) -> Vec<u32> {
        if !self.resample {
            return self.fixed.clone();
        }
        sample_senders(seed, e, hosts, self.receiver, self.count, r)
    }
}

/// `count` distinct hosts other than `receiver`, uniformly at random, by a sparse Fisher-Yates
/// shuffle: O(count) time and memory whatever the host count.
fn sample_senders(seed: u64, e: u16, hosts: u32, receiver: u32, count: u32, r: u32) -> Vec<u32> {
    let mut rng = stream(seed, &[u64::from(e), GLOBAL, u64::from(r)]);
    let n = u64::from(hosts - 1);
    let mut swapped: FxHashMap<u64, u64> = FxHashMap::default();
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..u64::from(count) {
        let j = i + rng.below(n - i);
        let vj = *swapped.get(&j).unwrap_or(&j);
        let vi = *swapped.get(&i).unwrap_or(&i);
        swapped.insert(j, vi);
        let h = vj as u32;
        out.push(if h >= receiver { h + 1 } else { h });
    }
    out
}

/// A uniformly random derangement of `0..n` (n >= 2): shuffle, reject if any point is fixed.
/// The acceptance probability tends to 1/e, so about 2.7 shuffles are needed on average.
pub(crate) fn derangement(rng: &mut Stream, n: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    loop {
        for i in (1..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &v)| i as u32 != v) {
            return p;
        }
    }
}

impl Collective {
    /// Peer position of member `p` at step `k` for send `j`.
    pub fn peer(&self, p: u32, k: u32, j: u32) -> u32 {
        let n = self.n;
        match self.algo {
            Algorithm::RingAllreduce => (p + 1) % n,
            Algorithm::RecursiveDoublingAllreduce => p ^ (1 << k),
            Algorithm::AllToAll => (p + k + 1) % n,
            Algorithm::NeighbourExchange => {
                if j == 0 {
                    (p + 1) % n
                } else {
                    (p + n - 1) % n
                }
            }
        }
    }

    /// Flows a member waits for per step: its sends plus as many receives.
    pub fn need(&self) -> u32 {
        2 * self.sends
    }

    pub fn total_steps(&self) -> u64 {
        u64::from(self.steps) * u64::from(self.iterations)
    }
}

/// Largest `packet_payload_bytes` accepted: a 64 KiB packet.
const MAX_PACKET_PAYLOAD: u64 = 65_536;

/// An entry's size keys, as the TOML names them.
struct SizeKeys<'a> {
    name: SizeDistName,
    size: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    file: &'a Option<String>,
    quantum: Option<u64>,
    payload: Option<u64>,
}

/// The size keys of a pattern spec that has them (`poisson`, `closed_loop`: the same names).
macro_rules! size_keys {
    ($s:expr) => {
        SizeKeys {
            name: $s.size_dist,
            size: $s.size_bytes,
            min: $s.min_size_bytes,
            max: $s.max_size_bytes,
            file: &$s.cdf_file,
            quantum: $s.size_quantum_bytes,
            payload: $s.packet_payload_bytes,
        }
    };
}

/// Per-entry validation helpers that put the entry and pattern into every error.
struct Ctx<'a> {
    e: usize,
    pattern: &'static str,
    env: &'a WorkloadEnv,
}

impl Ctx<'_> {
    fn invalid(&self, key: &'static str, reason: impl Into<String>) -> WorkloadError {
        WorkloadError::InvalidValue {
            entry: self.e,
            pattern: self.pattern,
            key,
            reason: reason.into(),
        }
    }

    fn conflict(&self, reason: impl Into<String>) -> WorkloadError {
        WorkloadError::Conflict {
            entry: self.e,
            pattern: self.pattern,
            reason: reason.into(),
        }
    }

    fn us(&self, key: &'static str, v: f64) -> Result<u64, WorkloadError> {
        let ps = v * 1e6;
        if !v.is_finite() || v < 0.0 || ps >= u64::MAX as f64 {
            return Err(self.invalid(key, format!("{v} µs must be finite and >= 0")));
        }
        Ok(ps.round() as u64)
    }

    fn host(&self, key: &'static str, h: u32) -> Result<u32, WorkloadError> {
        if h >= self.env.hosts {
            return Err(WorkloadError::HostOutOfRange {
                entry: self.e,
                pattern: self.pattern,
                key,
                host: u64::from(h),
                hosts: self.env.hosts,
            });
        }
        Ok(h)
    }

    fn size(&self, key: &'static str, s: Option<u64>) -> Result<Option<u64>, WorkloadError> {
        match s {
            Some(0) => Err(self.invalid(key, "must be > 0 (omit it for a long-lived flow)")),
            s => Ok(s),
        }
    }

    fn positive(&self, key: &'static str, v: u32) -> Result<u32, WorkloadError> {
        if v == 0 {
            return Err(self.invalid(key, "must be > 0"));
        }
        Ok(v)
    }

    fn participants(&self, exclude: &[u32], needed: u64) -> Result<Participants, WorkloadError> {
        let mut index = vec![0u32; self.env.hosts as usize];
        for &h in exclude {
            self.host("exclude_hosts", h)?;
            index[h as usize] = NONE;
        }
        let mut list = Vec::new();
        for (h, slot) in index.iter_mut().enumerate() {
            if *slot != NONE {
                *slot = list.len() as u32;
                list.push(h as u32);
            }
        }
        if (list.len() as u64) < needed {
            return Err(WorkloadError::TooFewHosts {
                entry: self.e,
                pattern: self.pattern,
                needed,
                have: list.len() as u64,
            });
        }
        Ok(Participants {
            list,
            index,
            far_group: None,
        })
    }

    /// Sets `far_group_size`: random destinations outside the sender's
    /// group of that many consecutive hosts (a FatTree pod's k²/4: the
    /// longest paths, [TH] §3.5.2's "longest path uniform random").
    fn far(&self, parts: &mut Participants, group: Option<u32>) -> Result<(), WorkloadError> {
        let Some(g) = group else { return Ok(()) };
        let Some(g) = std::num::NonZeroU32::new(g).filter(|g| g.get() < self.env.hosts) else {
            return Err(self.invalid(
                "far_group_size",
                format!(
                    "{g} must be at least 1 and below the host count {}",
                    self.env.hosts
                ),
            ));
        };
        let first = parts.list[0] / g;
        if parts.list.iter().all(|&h| h / g == first) {
            return Err(self.invalid(
                "far_group_size",
                format!("every participating host is in group {first}: no destination outside it"),
            ));
        }
        parts.far_group = Some(g);
        Ok(())
    }

    fn horizon(&self, stop_us: Option<f64>) -> Result<u64, WorkloadError> {
        let own = stop_us.map(|v| self.us("stop_us", v)).transpose()?;
        match (own, self.env.stop_ps) {
            (Some(a), Some(b)) => Ok(a.min(b)),
            (Some(a), None) | (None, Some(a)) => Ok(a),
            (None, None) => Err(WorkloadError::MissingHorizon {
                entry: self.e,
                pattern: self.pattern,
            }),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.env.base_dir.join(p)
        }
    }

    fn sizes(&self, keys: SizeKeys<'_>) -> Result<SizeDist, WorkloadError> {
        let SizeKeys {
            name,
            size,
            min,
            max,
            file,
            quantum,
            payload,
        } = keys;
        let extra =
            |k: &str| self.conflict(format!("key `{k}` does not apply to size_dist = {name:?}"));
        let missing = |k: &str| self.conflict(format!("size_dist = {name:?} needs key `{k}`"));
        if size.is_some() && name != SizeDistName::Fixed {
            return Err(extra("size_bytes"));
        }
        if (min.is_some() || max.is_some()) && name != SizeDistName::Uniform {
            return Err(extra(if min.is_some() {
                "min_size_bytes"
            } else {
                "max_size_bytes"
            }));
        }
        if file.is_some() && name != SizeDistName::File {
            return Err(extra("cdf_file"));
        }
        let dist = match name {
            SizeDistName::Websearch => SizeDist::websearch(),
            SizeDistName::FbHadoop => SizeDist::fb_hadoop(),
            SizeDistName::AliStorage => SizeDist::ali_storage(),
            SizeDistName::FbWeb => SizeDist::fb_web(),
            SizeDistName::WebsearchPfabric => SizeDist::websearch_pfabric(),
            SizeDistName::Datamining => SizeDist::datamining(),
            SizeDistName::Imc10 => SizeDist::imc10(),
            SizeDistName::IrnHeavy => SizeDist::IrnHeavy,
            SizeDistName::Fixed => SizeDist::Fixed(
                self.size("size_bytes", size)?
                    .ok_or_else(|| missing("size_bytes"))?,
            ),
            SizeDistName::Uniform => {
                let lo = self
                    .size("min_size_bytes", min)?
                    .ok_or_else(|| missing("min_size_bytes"))?;
                let hi = max.ok_or_else(|| missing("max_size_bytes"))?;
                if hi < lo || hi > 1 << 62 {
                    return Err(self.invalid(
                        "max_size_bytes",
                        format!("{hi} must be >= min_size_bytes ({lo}) and <= 2^62"),
                    ));
                }
                SizeDist::Uniform { min: lo, max: hi }
            }
            SizeDistName::File => {
                let f = file.as_ref().ok_or_else(|| missing("cdf_file"))?;
                SizeDist::from_cdf_file(&self.path(f))?
            }
        };
        if let Some(p) = payload {
            if quantum.is_some() {
                return Err(self.conflict(
                    "keys `size_quantum_bytes` and `packet_payload_bytes` exclude each other \
                     (a table in packets is already whole packets)",
                ));
            }
            let Some(unit) = name.table_packet_bytes() else {
                return Err(extra("packet_payload_bytes"));
            };
            if p == 0 || p > MAX_PACKET_PAYLOAD {
                return Err(self.invalid(
                    "packet_payload_bytes",
                    format!("{p} must be in 1..={MAX_PACKET_PAYLOAD} bytes"),
                ));
            }
            return SizeDist::repacketed(dist, unit, p)
                .map_err(|reason| self.invalid("packet_payload_bytes", reason));
        }
        match quantum {
            None | Some(1) => Ok(dist),
            Some(0) => Err(self.invalid(
                "size_quantum_bytes",
                "must be > 0 (omit it to keep sizes as drawn)",
            )),
            Some(q) if q > 1 << 40 => {
                Err(self.invalid("size_quantum_bytes", format!("{q} is above 2^40 bytes")))
            }
            Some(q) => SizeDist::rounded_up(dist, q)
                .map_err(|reason| self.invalid("size_quantum_bytes", reason)),
        }
    }
}

impl Inner {
    pub fn new(entries: Vec<PatternSpec>, env: WorkloadEnv) -> Result<Inner, WorkloadError> {
        if entries.len() > 256 {
            return Err(WorkloadError::TooManyEntries {
                count: entries.len(),
            });
        }
        if env.hosts >= 1 << 24 {
            return Err(WorkloadError::TooManyHosts { hosts: env.hosts });
        }
        let mut plans = Vec::with_capacity(entries.len());
        for (e, spec) in entries.iter().enumerate() {
            let ctx = Ctx {
                e,
                pattern: spec.name(),
                env: &env,
            };
            plans.push(compile(&ctx, spec)?);
        }
        Ok(Inner {
            hosts: env.hosts,
            seed: env.seed,
            stop_ps: env.stop_ps,
            plans,
        })
    }
}

/// `per_host` flows from each of `parts` to a random other participant (to
/// its image under one derangement with `permutation`).
fn pairs(
    ctx: &Ctx,
    parts: Participants,
    size: Option<u64>,
    per_host: u32,
    start_us: f64,
    jitter_us: f64,
    permutation: bool,
) -> Result<Plan, WorkloadError> {
    let perm = permutation.then(|| {
        let mut rng = stream(ctx.env.seed, &[ctx.e as u64, GLOBAL]);
        derangement(&mut rng, parts.list.len())
            .into_iter()
            .map(|i| parts.list[i as usize])
            .collect()
    });
    Ok(Plan::Pairs(Pairs {
        perm,
        size: ctx.size("size_bytes", size)?,
        start_ps: ctx.us("start_us", start_us)?,
        jitter_ps: ctx.us("jitter_us", jitter_us)?,
        per_host: ctx.positive("flows_per_host", per_host)?,
        parts,
    }))
}

fn compile(ctx: &Ctx, spec: &PatternSpec) -> Result<Plan, WorkloadError> {
    let env = ctx.env;
    let e = ctx.e as u16;
    match spec {
        PatternSpec::Permutation(s) => pairs(
            ctx,
            ctx.participants(&s.exclude_hosts, 2)?,
            s.size_bytes,
            s.flows_per_host,
            s.start_us,
            s.jitter_us,
            true,
        ),
        PatternSpec::Random(s) => pairs(
            ctx,
            ctx.participants(&s.exclude_hosts, 2)?,
            s.size_bytes,
            s.flows_per_host,
            s.start_us,
            s.jitter_us,
            false,
        ),
        PatternSpec::Background(s) => {
            let permutation = s.destination == Destination::Permutation;
            if permutation && s.far_group_size.is_some() {
                return Err(ctx.invalid(
                    "far_group_size",
                    "applies to random destinations, not to a permutation",
                ));
            }
            let mut parts = ctx.participants(&s.exclude_hosts, 2)?;
            ctx.far(&mut parts, s.far_group_size)?;
            pairs(
                ctx,
                parts,
                None,
                s.flows_per_host,
                s.start_us,
                s.jitter_us,
                permutation,
            )
        }
        PatternSpec::Incast(s) => compile_incast(ctx, s),
        PatternSpec::AllToAll(s) => {
            let gs = s.group_size.unwrap_or(env.hosts);
            if gs < 2 || gs > env.hosts || !env.hosts.is_multiple_of(gs) {
                return Err(ctx.invalid(
                    "group_size",
                    format!("{gs} must be >= 2 and divide the host count {}", env.hosts),
                ));
            }
            Ok(Plan::Mesh(Mesh {
                kind: MeshKind::Groups { size: gs },
                size: ctx.size("size_bytes", s.size_bytes)?,
                start_ps: ctx.us("start_us", s.start_us)?,
                jitter_ps: ctx.us("jitter_us", s.jitter_us)?,
            }))
        }
        PatternSpec::ManyToMany(s) => {
            let mut is_sender = vec![false; env.hosts as usize];
            for &h in &s.senders {
                ctx.host("senders", h)?;
                if std::mem::replace(&mut is_sender[h as usize], true) {
                    return Err(ctx.invalid("senders", format!("host {h} is listed twice")));
                }
            }
            let mut seen = vec![false; env.hosts as usize];
            for &h in &s.receivers {
                ctx.host("receivers", h)?;
                if std::mem::replace(&mut seen[h as usize], true) {
                    return Err(ctx.invalid("receivers", format!("host {h} is listed twice")));
                }
            }
            if s.senders.is_empty() || s.receivers.is_empty() {
                return Err(ctx.invalid("senders", "senders and receivers must not be empty"));
            }
            let copies = ctx.positive("flows_per_pair", s.flows_per_pair)?;
            if u64::from(copies) * s.receivers.len() as u64 > u64::from(u32::MAX) {
                return Err(ctx.invalid(
                    "flows_per_pair",
                    "times the number of receivers must fit the flow counter (2^32 - 1)",
                ));
            }
            Ok(Plan::Mesh(Mesh {
                kind: MeshKind::Lists {
                    receivers: s.receivers.clone(),
                    is_sender,
                    copies,
                },
                size: ctx.size("size_bytes", s.size_bytes)?,
                start_ps: ctx.us("start_us", s.start_us)?,
                jitter_ps: ctx.us("jitter_us", s.jitter_us)?,
            }))
        }
        PatternSpec::SenderLimited(s) => {
            let hosts = match &s.hosts {
                Some(h) => {
                    if h.len() != 6 {
                        return Err(ctx.invalid(
                            "hosts",
                            format!("needs exactly 6 hosts (A..F), got {}", h.len()),
                        ));
                    }
                    for (i, &x) in h.iter().enumerate() {
                        ctx.host("hosts", x)?;
                        if h[..i].contains(&x) {
                            return Err(ctx.invalid("hosts", format!("host {x} is listed twice")));
                        }
                    }
                    h.clone()
                }
                None => {
                    if env.hosts < 6 {
                        return Err(WorkloadError::TooFewHosts {
                            entry: ctx.e,
                            pattern: ctx.pattern,
                            needed: 6,
                            have: u64::from(env.hosts),
                        });
                    }
                    (0..6u64)
                        .map(|i| (i * u64::from(env.hosts) / 6) as u32)
                        .collect()
                }
            };
            let size = ctx.size("size_bytes", s.size_bytes)?;
            let start = ctx.us("start_us", s.start_us)?;
            let [a, b, c, d, ee, f] = [hosts[0], hosts[1], hosts[2], hosts[3], hosts[4], hosts[5]];
            let pairs = [(a, b), (a, c), (a, d), (a, ee), (f, ee)];
            Ok(Plan::Listed(assign_ids(
                e,
                env.hosts,
                pairs.iter().map(|&(src, dst)| ListedFlow {
                    src,
                    dst,
                    size_bytes: size,
                    start_ps: start,
                    priority: 0,
                }),
            )))
        }
        PatternSpec::Poisson(s) => {
            if !(s.load > 0.0 && s.load <= 1.0) {
                return Err(WorkloadError::LoadOutOfRange {
                    entry: ctx.e,
                    pattern: ctx.pattern,
                    load: s.load,
                });
            }
            let mut parts = ctx.participants(&s.exclude_hosts, 2)?;
            ctx.far(&mut parts, s.far_group_size)?;
            let sizes = ctx.sizes(size_keys!(s))?;
            let link_bytes_per_s = env.host_link_bps as f64 / 8.0;
            let host_bytes_per_s = match s.load_of {
                LoadOf::HostLink => s.load * link_bytes_per_s,
                LoadOf::Bisection => {
                    s.load * env.bisection_bps as f64 / 8.0 / parts.list.len() as f64
                }
            };
            if host_bytes_per_s <= 0.0 {
                return Err(ctx.invalid("load", "the link rate or bisection bandwidth is zero"));
            }
            if host_bytes_per_s > link_bytes_per_s * (1.0 + 1e-9) {
                return Err(ctx.invalid(
                    "load",
                    format!(
                        "{} of bisection puts {:.3e} b/s on each host, above the host link rate",
                        s.load,
                        host_bytes_per_s * 8.0
                    ),
                ));
            }
            Ok(Plan::Poisson(Poisson {
                mean_gap_ps: sizes.mean_bytes() / host_bytes_per_s * 1e12,
                sizes,
                start_ps: ctx.us("start_us", s.start_us)?,
                stop_ps: ctx.horizon(s.stop_us)?,
                parts,
                priority: s.priority,
            }))
        }
        PatternSpec::ClosedLoop(s) => {
            let think = ctx.us("think_time_us", s.think_time_us)?;
            let target = s.target.map(|t| ctx.host("target", t)).transpose()?;
            let parts = match &s.client_hosts {
                None => ctx.participants(&s.exclude_hosts, if target.is_some() { 1 } else { 2 })?,
                Some(list) => {
                    if !s.exclude_hosts.is_empty() {
                        return Err(
                            ctx.conflict("give `client_hosts` or `exclude_hosts`, not both")
                        );
                    }
                    let mut keep = vec![false; ctx.env.hosts as usize];
                    for &h in list {
                        keep[ctx.host("client_hosts", h)? as usize] = true;
                    }
                    let exclude: Vec<u32> =
                        (0..ctx.env.hosts).filter(|&h| !keep[h as usize]).collect();
                    ctx.participants(&exclude, if target.is_some() { 1 } else { 2 })?
                }
            };
            if let Some(t) = target {
                if s.client_hosts.as_ref().is_some_and(|l| l.contains(&t)) {
                    return Err(ctx.invalid("client_hosts", format!("host {t} is the target")));
                }
                if parts.list.iter().all(|&h| h == t) {
                    return Err(ctx.invalid(
                        "target",
                        format!("host {t} is the only participant: no client"),
                    ));
                }
            }
            let requests = s
                .requests
                .map(|n| ctx.positive("requests", n))
                .transpose()?;
            Ok(Plan::Closed(Closed {
                target,
                requests,
                parts,
                conns: ctx.positive("connections_per_host", s.connections_per_host)?,
                sizes: ctx.sizes(size_keys!(s))?,
                think_mean_ps: think as f64,
                fixed_think: s.think_dist == ThinkDist::Fixed,
                start_ps: ctx.us("start_us", s.start_us)?,
                stop_ps: ctx.horizon(s.stop_us)?,
            }))
        }
        PatternSpec::Collective(s) => compile_collective(ctx, s),
        PatternSpec::CmFile(s) => compile_cm(ctx, s),
        PatternSpec::FlowList(s) => {
            let path = ctx.path(&s.path);
            let fmt = s
                .format
                .unwrap_or_else(|| match path.extension().and_then(|x| x.to_str()) {
                    Some("parquet" | "pq") => FileFormat::Parquet,
                    _ => FileFormat::Csv,
                });
            let flows = match fmt {
                FileFormat::Csv => read_flows_csv(&path)?,
                FileFormat::Parquet => read_flows_parquet(&path)?,
            };
            for (row, f) in flows.iter().enumerate() {
                if f.src == f.dst {
                    return Err(ctx.invalid(
                        "path",
                        format!(
                            "{}: flow {} (0-based row) goes from host {} to itself",
                            path.display(),
                            row,
                            f.src
                        ),
                    ));
                }
                for h in [f.src, f.dst] {
                    if h >= env.hosts {
                        return Err(ctx.invalid(
                            "path",
                            format!(
                                "{}: flow {} (0-based row) names host {h}, the topology has {} hosts",
                                path.display(),
                                row,
                                env.hosts
                            ),
                        ));
                    }
                }
            }
            Ok(Plan::Listed(assign_ids(e, env.hosts, flows.into_iter())))
        }
    }
}

/// Gives listed flows their ids (per-source counters in list order) and sorts nothing: the
/// generator orders them by (start, id).
fn assign_ids(e: u16, hosts: u32, flows: impl Iterator<Item = ListedFlow>) -> Vec<FlowSpec> {
    let mut counters = vec![0u32; hosts as usize];
    flows
        .map(|f| {
            let c = &mut counters[f.src as usize];
            let id = flow_id(e, f.src, *c);
            *c += 1;
            FlowSpec {
                id,
                src: f.src,
                dst: f.dst,
                size_bytes: f.size_bytes,
                start_ps: f.start_ps,
                class: e,
                priority: f.priority,
            }
        })
        .collect()
}

fn compile_incast(ctx: &Ctx, s: &IncastSpec) -> Result<Plan, WorkloadError> {
    let env = ctx.env;
    let receiver = ctx.host("receiver", s.receiver)?;
    let (count, fixed) = match (&s.sender_hosts, s.senders) {
        (Some(list), n) => {
            if n.is_some_and(|n| n as usize != list.len()) {
                return Err(ctx.conflict("`senders` disagrees with the length of `sender_hosts`"));
            }
            if s.resample_senders {
                return Err(
                    ctx.conflict("`resample_senders` needs random senders, not `sender_hosts`")
                );
            }
            for (i, &h) in list.iter().enumerate() {
                ctx.host("sender_hosts", h)?;
                if h == receiver || list[..i].contains(&h) {
                    return Err(ctx.invalid(
                        "sender_hosts",
                        format!("host {h} is the receiver or listed twice"),
                    ));
                }
            }
            (list.len() as u32, list.clone())
        }
        (None, Some(n)) => {
            if n == 0 || n >= env.hosts {
                return Err(ctx.invalid(
                    "senders",
                    format!(
                        "{n} must be in 1..{} (hosts other than the receiver)",
                        env.hosts
                    ),
                ));
            }
            let fixed = match s.sender_choice {
                SenderChoice::Next => {
                    if s.resample_senders {
                        return Err(
                            ctx.conflict("`resample_senders` needs sender_choice = \"random\"")
                        );
                    }
                    (1..=n).map(|i| (receiver + i) % env.hosts).collect()
                }
                SenderChoice::Random => {
                    sample_senders(env.seed, ctx.e as u16, env.hosts, receiver, n, 0)
                }
            };
            (n, fixed)
        }
        (None, None) => return Err(ctx.conflict("needs `senders` or `sender_hosts`")),
    };
    if count == 0 {
        return Err(ctx.invalid("sender_hosts", "must not be empty"));
    }
    let size = match (ctx.size("size_bytes", s.size_bytes)?, s.total_size_bytes) {
        (Some(_), Some(_)) => {
            return Err(ctx.conflict("give `size_bytes` or `total_size_bytes`, not both"))
        }
        (None, Some(t)) => Some(
            ctx.size("total_size_bytes", Some(t))?
                .unwrap_or(1)
                .div_ceil(u64::from(count)),
        ),
        (s, None) => s,
    };
    let first_size = ctx.size("first_sender_size_bytes", s.first_sender_size_bytes)?;
    let repeat = ctx.positive("repeat", s.repeat)?;
    let jitter_ps = ctx.us("jitter_us", s.jitter_us)?;
    let period_ps = match s.mode {
        IncastMode::Open => {
            let p = match s.period_us {
                Some(p) => ctx.us("period_us", p)?,
                None if repeat == 1 => 0,
                None => {
                    return Err(ctx.conflict("mode = \"open\" with repeat > 1 needs `period_us`"))
                }
            };
            if repeat > 1 && p <= jitter_ps {
                return Err(
                    ctx.invalid("period_us", "must exceed jitter_us so rounds stay ordered")
                );
            }
            Some(p)
        }
        IncastMode::Closed => {
            if s.period_us.is_some() {
                return Err(ctx.conflict("`period_us` applies to mode = \"open\" only"));
            }
            if repeat > 1 && size.is_none() {
                return Err(ctx.conflict(
                    "a closed-loop incast with repeat > 1 needs finite flows (`size_bytes` or `total_size_bytes`)",
                ));
            }
            None
        }
    };
    Ok(Plan::Incast(Incast {
        receiver,
        count,
        fixed,
        resample: s.resample_senders,
        size,
        first_size,
        first_prio: s.first_sender_priority,
        start_ps: ctx.us("start_us", s.start_us)?,
        jitter_ps,
        repeat,
        period_ps,
        gap_ps: ctx.us("gap_us", s.gap_us)?,
    }))
}

fn compile_collective(ctx: &Ctx, s: &CollectiveSpec) -> Result<Plan, WorkloadError> {
    let env = ctx.env;
    let first = ctx.host("first_host", s.first_host)?;
    let n = s.hosts.unwrap_or(env.hosts - first);
    if n < 2 || u64::from(first) + u64::from(n) > u64::from(env.hosts) {
        return Err(ctx.invalid(
            "hosts",
            format!(
                "group {first}..{} must have >= 2 hosts within the topology's {}",
                u64::from(first) + u64::from(n),
                env.hosts
            ),
        ));
    }
    if s.size_bytes == 0 {
        return Err(ctx.invalid("size_bytes", "must be > 0"));
    }
    let chunk = s.size_bytes.div_ceil(u64::from(n));
    let (steps, sends, flow_bytes) = match s.algorithm {
        Algorithm::RingAllreduce => (2 * (n - 1), 1, chunk),
        Algorithm::RecursiveDoublingAllreduce => {
            if !n.is_power_of_two() {
                return Err(ctx.invalid(
                    "hosts",
                    format!("recursive doubling needs a power-of-two group, got {n}"),
                ));
            }
            (n.trailing_zeros(), 1, s.size_bytes)
        }
        Algorithm::AllToAll => (n - 1, 1, chunk),
        Algorithm::NeighbourExchange => (1, 2, s.size_bytes),
    };
    let iterations = ctx.positive("iterations", s.iterations)?;
    if u64::from(steps) * u64::from(iterations) * u64::from(sends) > u64::from(u32::MAX) {
        return Err(ctx.invalid(
            "iterations",
            "too many flows per host for 32-bit flow counters",
        ));
    }
    let algo_name = match s.algorithm {
        Algorithm::RingAllreduce => "ring_allreduce",
        Algorithm::RecursiveDoublingAllreduce => "recursive_doubling_allreduce",
        Algorithm::AllToAll => "all_to_all",
        Algorithm::NeighbourExchange => "neighbour_exchange",
    };
    Ok(Plan::Collective(Collective {
        first,
        n,
        algo: s.algorithm,
        flow_bytes,
        start_ps: ctx.us("start_us", s.start_us)?,
        iterations,
        delay_ps: ctx.us("step_delay_us", s.step_delay_us)?,
        name: s.name.clone().unwrap_or_else(|| algo_name.to_string()),
        steps,
        sends,
    }))
}

fn compile_cm(ctx: &Ctx, s: &CmFileSpec) -> Result<Plan, WorkloadError> {
    let env = ctx.env;
    let e = ctx.e as u16;
    let path = ctx.path(&s.path);
    let text = std::fs::read_to_string(&path).map_err(|source| WorkloadError::Io {
        path: path.clone(),
        source,
    })?;
    let file = CmFile::parse(&text, &path, s.time_unit)?;
    if file.nodes > env.hosts {
        return Err(WorkloadError::CmInconsistent {
            file: path,
            reason: format!(
                "Nodes {} exceeds the topology's {} hosts",
                file.nodes, env.hosts
            ),
        });
    }
    Ok(Plan::Cm(cm_plan(
        e,
        env.hosts,
        &file,
        ctx.us("trigger_delay_us", s.trigger_delay_us)?,
        path.display().to_string(),
    )))
}

/// Turns a parsed `.cm` file into a plan: flow ids, trigger targets in file order.
pub(crate) fn cm_plan(e: u16, hosts: u32, file: &CmFile, delay_ps: u64, name: String) -> CmPlan {
    let trig_index: FxHashMap<u64, u32> = file
        .triggers
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id, i as u32))
        .collect();
    let mut triggers: Vec<CmTrig> = file
        .triggers
        .iter()
        .map(|t| CmTrig {
            cm_id: t.id,
            kind: t.kind,
            targets: Vec::new(),
        })
        .collect();
    let listed = assign_ids(
        e,
        hosts,
        file.flows.iter().map(|f| ListedFlow {
            src: f.src,
            dst: f.dst,
            size_bytes: f.size_bytes,
            start_ps: f.start_ps.unwrap_or(0),
            priority: f.prio.unwrap_or(0),
        }),
    );
    let mut flows = Vec::with_capacity(listed.len());
    let mut by_id = FxHashMap::default();
    for (i, (f, spec)) in file.flows.iter().zip(listed).enumerate() {
        // Parsing checked that every referenced trigger exists.
        let tix = |t: Option<u64>| t.and_then(|t| trig_index.get(&t).copied());
        if let Some(t) = tix(f.trigger) {
            triggers[t as usize].targets.push(i as u32);
        }
        by_id.insert(spec.id, i as u32);
        flows.push(CmFlowC {
            flow: spec,
            triggered: f.trigger.is_some(),
            activates: [tix(f.send_done_trigger), tix(f.recv_done_trigger)],
        });
    }
    CmPlan {
        rep: file.flows.first().map_or(0, |f| f.src),
        flows,
        by_id,
        triggers,
        delay_ps,
        name,
    }
}
