//! The Tofino trimming switch ([TRIM] §3–§6): a switch-wide model of the
//! chip's structure that decides, before a packet reaches its egress queue,
//! whether it is forwarded, trimmed in ingress, deflected whole to its
//! ingress pipeline's deflect-on-drop (DoD) port, or dropped with its header
//! mirrored through the pipeline's mirror-on-drop (MoD) port.
//!
//! # Structure
//!
//! Ports are grouped into pipelines of `ports_per_pipeline` (16: port `p` is
//! in pipeline `p / 16`; a switch with `N` ports has `ceil(N / 16)`). The
//! egress ports run the NDP discipline (`[switch.queue] kind = "ndp"`): its
//! data queue is the traffic manager's (TM) queue, its header queue the
//! priority queue trimmed headers join; the chip, not the discipline,
//! decides trimming, so the data queue is never offered a packet it cannot
//! take. Per (ingress pipeline, egress port) the chip keeps three meters
//! (token buckets at line rate, 1/2 and 1/4 of it) and the mode state of the
//! control loop. Per pipeline it keeps one DoD line and one MoD line: a FIFO
//! served at `recirc_gbps`, then `recirc_ns` of recirculation.
//!
//! # Variants (`variant`)
//!
//! | variant | [TRIM] | on a data packet |
//! |---|---|---|
//! | `ideal` | M0, §6 | trimmed when the data queue is full; header to the header queue at once |
//! | `mod` | M1, §3, §6.1 | TM full: dropped, its header mirrored through the pipeline's MoD line (64 B at `recirc_gbps`, then 1 µs) into the header queue |
//! | `dod` | M2, §3 | the line-rate meter is RED: trimmed in ingress; TM full: the FULL packet goes to the ingress pipeline's DoD line, is trimmed after recirculation and its header joins the original port's header queue |
//! | `full` | M3, §4–§6 | `dod` plus the three-mode loop: each DoD dequeue sends a notice, `notice_ns` later, to every pipeline for that egress port; a notice makes the (pipeline, port) pessimistic (1/4 meter) until `t0`, half-pessimistic (1/2) until `t1`, then optimistic (line rate) |
//! | `pessimistic_only` | §3 alternative | as `full` without the half stage: pessimistic until `t0` |
//! | `trim_all` | §3 alternative | a notice makes every data packet to the port be trimmed until `t0` |
//! | `origin_pipeline_only` | §3 alternative | as `full`, the notice goes only to the pipeline whose DoD line sent it |
//! | `trim_n` | §3 alternative | each DoD dequeue makes each pipeline trim the next `trim_n` data packets to the port |
//!
//! All three meters run on every packet headed to the port ([T] `ndp.p4`),
//! data and control (`meter_packets = "data"` meters the data alone); a
//! meter is charged only when it colours the packet GREEN (RED packets
//! consume no tokens, RFC 2698; spec ambiguity 6). Only
//! data packets are ever trimmed or deflected. The notice is sent when a
//! packet leaves the DoD queue (starts its recirculation), as in the
//! paper's simulator ([TRIM] §6); the hardware sends it later (discrepancy
//! D4 of the spec), which `notice_ns` can approximate.
//!
//! # Parameters (`[switch.tofino]`)
//!
//! | key | default | source |
//! |---|---|---|
//! | `variant` | `"full"` | [TRIM] §4 (the paper's design) |
//! | `tier` | `"tor"`: the switches with hosts carry the chip (`"core"`: those without) | [TRIM] §2 (hosts attach to the chip's ports) |
//! | `ports_per_pipeline` | 16 | [TRIM] §3 (4 pipelines × 16 ports of 100G) |
//! | `recirc_gbps` | 100 (the DoD/MoD port's rate) | [TRIM] §3, §6.1 |
//! | `recirc_ns` | 1000 (recirculation latency) | [TRIM] §3, §6.1 |
//! | `notice_ns` | 1000 (notice latency to the pipelines) | [TRIM] §4, §6 |
//! | `t0_ns` | 6000 (end of pessimistic) | [TRIM] §6.2; [T] `T0_NS` |
//! | `t1_ns` | 24000 (end of half-pessimistic) | [TRIM] §6.2, §6.3; [T] `T1_NS` |
//! | `trim_n` | 12 | [TRIM] §4 ("trim at least 12 packets") |
//! | `dod_cap_packets` | none (unbounded; tail drop when set) | [TRIM] §6.1 (DoD reached ~14000 packets); spec ambiguity 7 |
//! | `mod_cap_packets` | none (unbounded; tail drop when set) | — |
//! | `meter_burst_bytes` | the data queue's capacity in bytes (all three meters share it) | spec ambiguity 6 ("virtual output queue"); [T] one burst for all three |
//! | `meter_overhead_bytes` | 0 ([T]: 25, wire overhead per packet) | [TRIM] silent; [T] `setup_ndp.py` |
//! | `meter_packets` | `"all"`: every packet headed to the port charges the meters, control included | [T] `ndp.p4` (all three meters run on every packet); `"data"`: only the data packets the chip may trim, a reading of [TRIM]'s simulator, which does not say (P5, P9) |
//!
//! The trimmed header is [`HEADER_BYTES`] = 64 B, the paper's inferred size
//! and [T]'s truncation, so it is not a parameter. Header-queue service
//! (NDP's weighted round robin, strict priority as in [T], or the byte WFQ
//! of [TRIM] §2) is the NDP discipline's `sched`.
//!
//! Every delay the chip adds is an event the switch schedules for itself
//! ([`crate::engine::event::EventKind::Chip`]), so the whole switch stays in one
//! shard and event keys never depend on the partition.

use crate::config::{bad, ConfigError};
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use crate::queue::ndp::trim;
use crate::units::tx_time_ps;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Ports per pipeline ([TRIM] §3).
pub const DEFAULT_PORTS_PER_PIPELINE: u16 = 16;
/// DoD and MoD port rate, Gb/s ([TRIM] §3).
pub const DEFAULT_RECIRC_GBPS: f64 = 100.0;
/// Recirculation latency, ns ([TRIM] §3, §6.1).
pub const DEFAULT_RECIRC_NS: f64 = 1000.0;
/// Notice latency to every pipeline, ns ([TRIM] §4, §6).
pub const DEFAULT_NOTICE_NS: f64 = 1000.0;
/// End of the pessimistic mode after a notice, ns ([TRIM] §6.2).
pub const DEFAULT_T0_NS: f64 = 6000.0;
/// End of the half-pessimistic mode after a notice, ns ([TRIM] §6.2–6.3).
pub const DEFAULT_T1_NS: f64 = 24000.0;
/// Packets trimmed after each DoD packet by `trim_n` ([TRIM] §4).
pub const DEFAULT_TRIM_N: u32 = 12;

/// Which design the chip runs ([TRIM] §3, §6; M0–M3 of the spec).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// M0: the output-queued trimming switch.
    Ideal,
    /// M1: mirror-on-drop.
    Mod,
    /// M2: DoD with line-rate ingress meters.
    Dod,
    /// M3: DoD, meters and the three-mode loop.
    #[default]
    Full,
    /// Pessimistic until T0, no half stage.
    PessimisticOnly,
    /// Trim every data packet until T0.
    TrimAll,
    /// As `full`, the notice reaching only the DoD line's own pipeline.
    OriginPipelineOnly,
    /// Trim the next N data packets after each DoD packet.
    TrimN,
}

impl Variant {
    fn meters(self) -> bool {
        !matches!(self, Variant::Ideal | Variant::Mod)
    }
    fn notices(self) -> bool {
        self.meters() && self != Variant::Dod
    }
}

/// Which switches carry the chip.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChipTier {
    /// ToRs: graph switches with hosts, FatTree edges, leaves.
    #[default]
    Tor,
    /// Cores: graph switches without hosts, FatTree cores, spines.
    Core,
}

impl ChipTier {
    /// The entity kind that carries the chip.
    pub fn kind(self) -> crate::topo::EntityKind {
        match self {
            ChipTier::Tor => crate::topo::EntityKind::Tor,
            ChipTier::Core => crate::topo::EntityKind::Core,
        }
    }
}

/// `[switch.tofino]` (defaults and sources in the module table).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TofinoConfig {
    /// The design.
    pub variant: Variant,
    /// Which switches carry the chip: `"tor"` (switches with hosts) or `"core"`.
    pub tier: ChipTier,
    /// Ports per pipeline.
    pub ports_per_pipeline: u16,
    /// DoD and MoD port rate, Gb/s.
    pub recirc_gbps: f64,
    /// Recirculation latency, ns.
    pub recirc_ns: f64,
    /// Notice latency, ns.
    pub notice_ns: f64,
    /// Pessimistic until this long after a notice, ns.
    pub t0_ns: f64,
    /// Half-pessimistic until this long after a notice, ns.
    pub t1_ns: f64,
    /// Packets `trim_n` trims after each DoD packet.
    pub trim_n: u32,
    /// DoD queue cap per pipeline, packets (None: unbounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dod_cap_packets: Option<u32>,
    /// MoD queue cap per pipeline, packets (None: unbounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mod_cap_packets: Option<u32>,
    /// Meter depth, bytes (None: the data queue's capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meter_burst_bytes: Option<u64>,
    /// Bytes each meter charges per packet on top of its size.
    pub meter_overhead_bytes: u32,
    /// Which packets charge the meters.
    pub meter_packets: MeterPackets,
}

/// Which packets headed to a port run its meters (`meter_packets`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeterPackets {
    /// Every packet, control included, as [T]'s `ndp.p4` meters them.
    #[default]
    All,
    /// Only the data packets the chip may trim: control packets pass
    /// unmetered and leave the data the whole of each meter.
    Data,
}

impl Default for TofinoConfig {
    fn default() -> Self {
        TofinoConfig {
            variant: Variant::default(),
            tier: ChipTier::Tor,
            ports_per_pipeline: DEFAULT_PORTS_PER_PIPELINE,
            recirc_gbps: DEFAULT_RECIRC_GBPS,
            recirc_ns: DEFAULT_RECIRC_NS,
            notice_ns: DEFAULT_NOTICE_NS,
            t0_ns: DEFAULT_T0_NS,
            t1_ns: DEFAULT_T1_NS,
            trim_n: DEFAULT_TRIM_N,
            dod_cap_packets: None,
            mod_cap_packets: None,
            meter_burst_bytes: None,
            meter_overhead_bytes: 0,
            meter_packets: MeterPackets::All,
        }
    }
}

/// The checked configuration in engine units.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TofinoParams {
    /// The design.
    pub variant: Variant,
    /// Which switches carry it.
    pub tier: ChipTier,
    /// Ports per pipeline.
    pub ports_per_pipeline: u16,
    /// DoD/MoD rate, b/s.
    pub recirc_bps: u64,
    /// Recirculation latency, ps.
    pub recirc_ps: u64,
    /// Notice latency, ps.
    pub notice_ps: u64,
    /// T0, ps.
    pub t0_ps: u64,
    /// T1, ps.
    pub t1_ps: u64,
    /// N of `trim_n`.
    pub trim_n: u32,
    /// DoD cap, packets.
    pub dod_cap: Option<u32>,
    /// MoD cap, packets.
    pub mod_cap: Option<u32>,
    /// Meter depth, bytes.
    pub burst_bytes: u64,
    /// Per-packet meter overhead, bytes.
    pub overhead_bytes: u32,
    /// Which packets charge the meters.
    #[serde(default)]
    pub meter_packets: MeterPackets,
}

impl TofinoConfig {
    /// Checks the table (`key` = `switch.tofino`); `data_queue_bytes` is
    /// the egress data queue's capacity, the meters' default depth.
    pub fn params(&self, key: &str, data_queue_bytes: u64) -> Result<TofinoParams, ConfigError> {
        let k = |s: &str| format!("{key}.{s}");
        if self.ports_per_pipeline == 0 {
            return Err(bad(&k("ports_per_pipeline"), 0, "must be at least 1"));
        }
        if self.t1_ns < self.t0_ns {
            return Err(bad(&k("t1_ns"), self.t1_ns, "must be at least t0_ns"));
        }
        if self.meter_burst_bytes == Some(0) {
            return Err(bad(&k("meter_burst_bytes"), 0, "must be positive"));
        }
        for (name, cap) in [
            ("dod_cap_packets", self.dod_cap_packets),
            ("mod_cap_packets", self.mod_cap_packets),
        ] {
            if cap == Some(0) {
                return Err(bad(&k(name), 0, "must be at least 1"));
            }
        }
        Ok(TofinoParams {
            variant: self.variant,
            tier: self.tier,
            ports_per_pipeline: self.ports_per_pipeline,
            recirc_bps: crate::config::rate(&k("recirc_gbps"), self.recirc_gbps)?,
            recirc_ps: crate::config::latency(&k("recirc_ns"), self.recirc_ns)?,
            notice_ps: crate::config::latency(&k("notice_ns"), self.notice_ns)?,
            t0_ps: crate::config::latency(&k("t0_ns"), self.t0_ns)?,
            t1_ps: crate::config::latency(&k("t1_ns"), self.t1_ns)?,
            trim_n: self.trim_n,
            dod_cap: self.dod_cap_packets,
            mod_cap: self.mod_cap_packets,
            burst_bytes: self.meter_burst_bytes.unwrap_or(data_queue_bytes),
            overhead_bytes: self.meter_overhead_bytes,
            meter_packets: self.meter_packets,
        })
    }
}

/// What the chip counted (per switch; summed in the run summary).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChipCounters {
    /// Data packets trimmed in ingress by a meter (or a trim mode).
    pub trimmed_ingress: u64,
    /// Data packets trimmed after their DoD recirculation.
    pub trimmed_dod: u64,
    /// Data packets trimmed at a full data queue (`ideal`).
    pub trimmed_overflow: u64,
    /// Full packets deflected to a DoD line.
    pub deflected: u64,
    /// Headers mirrored through a MoD line (their packets dropped by the TM).
    pub mirrored: u64,
    /// Packets lost at a full DoD line (`dod_cap_packets`).
    pub dod_dropped: u64,
    /// Headers lost at a full MoD line (`mod_cap_packets`).
    pub mod_dropped: u64,
    /// Notices delivered to a (pipeline, port).
    pub notices: u64,
    /// Largest DoD queue of any pipeline, packets.
    pub dod_max_packets: u64,
}

impl std::ops::AddAssign for ChipCounters {
    fn add_assign(&mut self, o: Self) {
        self.trimmed_ingress += o.trimmed_ingress;
        self.trimmed_dod += o.trimmed_dod;
        self.trimmed_overflow += o.trimmed_overflow;
        self.deflected += o.deflected;
        self.mirrored += o.mirrored;
        self.dod_dropped += o.dod_dropped;
        self.mod_dropped += o.mod_dropped;
        self.notices += o.notices;
        self.dod_max_packets = self.dod_max_packets.max(o.dod_max_packets);
    }
}

impl ChipCounters {
    /// The counters as a fixed array (for sums over ranks), max last.
    pub fn to_array(self) -> [u64; 9] {
        [
            self.trimmed_ingress,
            self.trimmed_dod,
            self.trimmed_overflow,
            self.deflected,
            self.mirrored,
            self.dod_dropped,
            self.mod_dropped,
            self.notices,
            self.dod_max_packets,
        ]
    }
    /// The inverse of [`ChipCounters::to_array`].
    pub fn from_array(a: &[u64]) -> ChipCounters {
        ChipCounters {
            trimmed_ingress: a[0],
            trimmed_dod: a[1],
            trimmed_overflow: a[2],
            deflected: a[3],
            mirrored: a[4],
            dod_dropped: a[5],
            mod_dropped: a[6],
            notices: a[7],
            dod_max_packets: a[8],
        }
    }
}

/// The mode of a (pipeline, port), as traced.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum Mode {
    /// Line-rate meter.
    Optimistic = 0,
    /// 1/2 meter.
    Half = 1,
    /// 1/4 meter.
    Pessimistic = 2,
    /// Every data packet trimmed (`trim_all`, `trim_n`).
    TrimAll = 3,
}

pub use crate::trace::ChipRow;

/// A token bucket in bit·ps units (exact integers: one bit is 10^12 units,
/// a bucket at rate r gains r units per ps).
#[derive(Copy, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Bucket {
    tokens: u128,
    last: u64,
}

/// The three meters and the mode state of one (ingress pipeline, egress port).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct PortState {
    meters: [Bucket; 3],
    /// Pessimistic (or trim-all) until this time, ps.
    t0: u64,
    /// Half-pessimistic until this time, ps.
    t1: u64,
    /// Data packets `trim_n` still trims.
    left: u32,
    /// The last mode traced.
    shown: u8,
}

/// A packet on a DoD or MoD line, with where it came from and goes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Held {
    pkt: Packet,
    in_port: u16,
    out_port: u16,
}

/// One recirculation line: a FIFO served at the recirculation rate, then a
/// fixed latency.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Line {
    waiting: VecDeque<Held>,
    in_service: Option<Held>,
    /// Served packets in recirculation: (due, packet); due times ascend.
    recirc: VecDeque<(u64, Held)>,
}

/// What the ingress step decided for a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    /// Offer it to the egress port as it is.
    Forward,
    /// Trim it and offer the header to the egress port now.
    Trim,
    /// It went to a recirculation line; start the line if this is true.
    Recirculate {
        /// The line.
        line: u16,
        /// Whether the line was idle (the caller starts it).
        start: bool,
    },
    /// It was lost at a full line (already counted).
    Lost,
}

/// What serving a line started.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Served {
    /// When the packet's last bit has gone into recirculation, ps.
    pub done: u64,
    /// A notice to schedule, due at this time.
    pub notice_due: Option<u64>,
}

/// A notice on its way to the pipelines.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Notice {
    due: u64,
    port: u16,
    /// The target pipeline, or `u16::MAX` for all.
    pipe: u16,
}

/// The chip of one switch.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Chip {
    p: TofinoParams,
    id: u32,
    ports: u16,
    pipes: u16,
    /// Line rate of each egress port, b/s.
    rate: Vec<u64>,
    /// Per (ingress pipeline × ports + egress port).
    state: Vec<PortState>,
    /// Per pipeline: DoD line at 2·pipe, MoD at 2·pipe + 1.
    lines: Vec<Line>,
    notices: VecDeque<Notice>,
    /// Counters.
    pub counters: ChipCounters,
    /// The trace rows, when traced.
    pub trace: Option<Vec<ChipRow>>,
}

const UNITS_PER_BIT: u128 = 1_000_000_000_000;
const DOD: u16 = 0;
const MOD: u16 = 1;

impl Chip {
    /// The chip of switch `id`, whose egress ports have the given line rates.
    pub fn new(p: &TofinoParams, id: u32, rates: &[u64], traced: bool) -> Chip {
        let ports = rates.len() as u16;
        let pipes = ports.div_ceil(p.ports_per_pipeline).max(1);
        let full = p.burst_bytes as u128 * 8 * UNITS_PER_BIT;
        let st = PortState {
            meters: [Bucket {
                tokens: full,
                last: 0,
            }; 3],
            ..Default::default()
        };
        Chip {
            p: p.clone(),
            id,
            ports,
            pipes,
            rate: rates.to_vec(),
            state: vec![st; pipes as usize * ports as usize],
            lines: vec![Line::default(); 2 * pipes as usize],
            notices: VecDeque::new(),
            counters: ChipCounters::default(),
            trace: traced.then(Vec::new),
        }
    }

    /// The pipeline of port `port`.
    #[inline]
    pub fn pipeline(&self, port: u16) -> u16 {
        port / self.p.ports_per_pipeline
    }

    /// Number of pipelines.
    pub fn pipelines(&self) -> u16 {
        self.pipes
    }

    /// Packets held on the recirculation lines.
    pub fn held_packets(&self) -> u64 {
        self.lines
            .iter()
            .map(|l| (l.waiting.len() + l.recirc.len() + l.in_service.is_some() as usize) as u64)
            .sum()
    }

    /// The ingress step for `pkt` from `in_port` to `out_port`; `fits` says
    /// whether the egress data queue has room for it.
    pub fn ingress(
        &mut self,
        pkt: &Packet,
        in_port: u16,
        out_port: u16,
        fits: bool,
        now: u64,
    ) -> Decision {
        let v = self.p.variant;
        let data = pkt.kind == PacketKind::Data && pkt.size > HEADER_BYTES;
        let pipe = self.pipeline(in_port);
        if v.meters() && (data || self.p.meter_packets == MeterPackets::All) {
            let idx = pipe as usize * self.ports as usize + out_port as usize;
            let green = self.meter(idx, out_port, pkt.size, now);
            if data {
                let mode = self.mode(idx, now);
                let trim = match mode {
                    Mode::Optimistic => !green[0],
                    Mode::Half => !green[1],
                    Mode::Pessimistic => !green[2],
                    Mode::TrimAll => true,
                };
                if v == Variant::TrimN && self.state[idx].left > 0 {
                    let st = &mut self.state[idx];
                    st.left -= 1;
                    if st.left == 0 {
                        self.show(idx, Mode::Optimistic, now);
                    }
                }
                if trim {
                    self.counters.trimmed_ingress += 1;
                    return Decision::Trim;
                }
            }
        }
        if !data || fits {
            return Decision::Forward;
        }
        match v {
            Variant::Ideal => {
                self.counters.trimmed_overflow += 1;
                Decision::Trim
            }
            Variant::Mod => {
                let mut h = pkt.clone();
                trim(&mut h);
                self.push_line(2 * pipe + MOD, h, in_port, out_port, now)
            }
            _ => self.push_line(2 * pipe + DOD, pkt.clone(), in_port, out_port, now),
        }
    }

    /// Runs the three meters of `idx` on a packet of `size` bytes: which
    /// coloured it GREEN (and were charged).
    fn meter(&mut self, idx: usize, port: u16, size: u32, now: u64) -> [bool; 3] {
        let rate = self.rate[port as usize] as u128;
        let full = self.p.burst_bytes as u128 * 8 * UNITS_PER_BIT;
        let cost = (size + self.p.overhead_bytes) as u128 * 8 * UNITS_PER_BIT;
        let mut green = [false; 3];
        for (i, b) in self.state[idx].meters.iter_mut().enumerate() {
            let r = rate >> i; // line rate, 1/2, 1/4
            b.tokens = (b.tokens + r * (now - b.last) as u128).min(full);
            b.last = now;
            if b.tokens >= cost {
                b.tokens -= cost;
                green[i] = true;
            }
        }
        green
    }

    /// The mode of `idx` at `now`.
    fn mode(&mut self, idx: usize, now: u64) -> Mode {
        let st = &self.state[idx];
        let m = match self.p.variant {
            Variant::Full | Variant::OriginPipelineOnly if now < st.t0 => Mode::Pessimistic,
            Variant::Full | Variant::OriginPipelineOnly if now < st.t1 => Mode::Half,
            Variant::PessimisticOnly if now < st.t0 => Mode::Pessimistic,
            Variant::TrimAll if now < st.t0 => Mode::TrimAll,
            Variant::TrimN if st.left > 0 => Mode::TrimAll,
            _ => Mode::Optimistic,
        };
        if self.trace.is_some() {
            self.catch_up(idx, now);
        }
        m
    }

    /// Traces the timed transitions of `idx` due up to `now`.
    fn catch_up(&mut self, idx: usize, now: u64) {
        let (t0, t1, shown) = {
            let st = &self.state[idx];
            (st.t0, st.t1, st.shown)
        };
        let v = self.p.variant;
        let timed = matches!(
            v,
            Variant::Full
                | Variant::OriginPipelineOnly
                | Variant::PessimisticOnly
                | Variant::TrimAll
        );
        if !timed || shown == Mode::Optimistic as u8 {
            return;
        }
        let half = matches!(v, Variant::Full | Variant::OriginPipelineOnly);
        if shown != Mode::Half as u8 && t0 <= now {
            if half && t0 < t1 {
                self.show_at(idx, Mode::Half, t0);
            } else {
                self.show_at(idx, Mode::Optimistic, t0);
                return;
            }
        }
        if self.state[idx].shown == Mode::Half as u8 && t1 <= now {
            self.show_at(idx, Mode::Optimistic, t1);
        }
    }

    fn show(&mut self, idx: usize, m: Mode, now: u64) {
        if self.trace.is_some() {
            self.show_at(idx, m, now);
        }
    }

    fn show_at(&mut self, idx: usize, m: Mode, at: u64) {
        let st = &mut self.state[idx];
        if st.shown == m as u8 {
            return;
        }
        st.shown = m as u8;
        let (pipeline, port) = (
            (idx / self.ports as usize) as u16,
            (idx % self.ports as usize) as u16,
        );
        if let Some(t) = self.trace.as_mut() {
            t.push(ChipRow {
                time_ps: at,
                switch: self.id,
                pipeline,
                port,
                series: 0,
                value: m as u32,
            });
        }
    }

    fn trace_line(&mut self, line: u16, now: u64) {
        let n = self.lines[line as usize].waiting.len() as u32;
        if let Some(t) = self.trace.as_mut() {
            t.push(ChipRow {
                time_ps: now,
                switch: self.id,
                pipeline: line / 2,
                port: u16::MAX,
                series: 1 + (line % 2) as u8,
                value: n,
            });
        }
    }

    fn push_line(
        &mut self,
        line: u16,
        pkt: Packet,
        in_port: u16,
        out_port: u16,
        now: u64,
    ) -> Decision {
        let dod = line % 2 == DOD;
        let cap = if dod { self.p.dod_cap } else { self.p.mod_cap };
        let l = &mut self.lines[line as usize];
        if cap.is_some_and(|c| l.waiting.len() as u32 >= c) {
            if dod {
                self.counters.dod_dropped += 1;
            } else {
                self.counters.mod_dropped += 1;
            }
            return Decision::Lost;
        }
        l.waiting.push_back(Held {
            pkt,
            in_port,
            out_port,
        });
        let start = l.in_service.is_none();
        if dod {
            self.counters.deflected += 1;
            let n = l.waiting.len() as u64;
            self.counters.dod_max_packets = self.counters.dod_max_packets.max(n);
        } else {
            self.counters.mirrored += 1;
        }
        self.trace_line(line, now);
        Decision::Recirculate { line, start }
    }

    /// Starts serving the head of an idle line: when it is done, and a
    /// notice to schedule (a DoD dequeue, in the variants with notices).
    pub fn serve(&mut self, line: u16, now: u64) -> Option<Served> {
        let l = &mut self.lines[line as usize];
        if l.in_service.is_some() {
            return None;
        }
        let h = l.waiting.pop_front()?;
        let done = now + tx_time_ps(h.pkt.size as u64, self.p.recirc_bps);
        let port = h.out_port;
        l.in_service = Some(h);
        self.trace_line(line, now);
        let mut notice_due = None;
        if line % 2 == DOD && self.p.variant.notices() {
            let due = now + self.p.notice_ps;
            let pipe = match self.p.variant {
                Variant::OriginPipelineOnly => line / 2,
                _ => u16::MAX,
            };
            self.notices.push_back(Notice { due, port, pipe });
            notice_due = Some(due);
        }
        Some(Served { done, notice_due })
    }

    /// The packet in service on `line` has gone into recirculation; returns
    /// when it comes out. The line is idle again.
    pub fn served(&mut self, line: u16, now: u64) -> u64 {
        let l = &mut self.lines[line as usize];
        let h = l.in_service.take().expect("a packet in service");
        let due = now + self.p.recirc_ps;
        l.recirc.push_back((due, h));
        due
    }

    /// The head of `line`'s recirculation comes out: the header to offer,
    /// with its (ingress, egress) ports.
    pub fn recirculated(&mut self, line: u16) -> (Packet, u16, u16) {
        let (_, mut h) = self.lines[line as usize]
            .recirc
            .pop_front()
            .expect("a packet in recirculation");
        if line % 2 == DOD {
            trim(&mut h.pkt);
            self.counters.trimmed_dod += 1;
        }
        (h.pkt, h.in_port, h.out_port)
    }

    /// The next notice is due: it sets the modes of its (pipeline, port)s.
    pub fn notice(&mut self, now: u64) {
        let n = self.notices.pop_front().expect("a notice");
        debug_assert_eq!(n.due, now);
        let pipes = if n.pipe == u16::MAX {
            0..self.pipes
        } else {
            n.pipe..n.pipe + 1
        };
        for pipe in pipes {
            let idx = pipe as usize * self.ports as usize + n.port as usize;
            if self.trace.is_some() {
                self.catch_up(idx, now);
            }
            let st = &mut self.state[idx];
            st.t0 = now + self.p.t0_ps;
            st.t1 = now + self.p.t1_ps;
            let m = match self.p.variant {
                Variant::TrimAll => Mode::TrimAll,
                Variant::TrimN => {
                    st.left += self.p.trim_n;
                    Mode::TrimAll
                }
                _ => Mode::Pessimistic,
            };
            self.counters.notices += 1;
            self.show(idx, m, now);
        }
    }

    /// Ends the trace at `end`: the timed mode changes still due, then the rows.
    pub fn finish_trace(&mut self, end: u64) -> Vec<ChipRow> {
        if self.trace.is_none() {
            return Vec::new();
        }
        for idx in 0..self.state.len() {
            self.catch_up(idx, end);
        }
        let mut rows = self.trace.take().unwrap_or_default();
        rows.sort_by_key(|r| (r.time_ps, r.series, r.pipeline, r.port));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_packet;

    const G100: u64 = 100_000_000_000;
    /// 1500 B at 100 Gb/s.
    const PKT_PS: u64 = 120_000;

    fn chip(variant: Variant, ports: usize) -> Chip {
        let cfg = TofinoConfig {
            variant,
            ..Default::default()
        };
        let p = cfg.params("switch.tofino", 15_000).unwrap();
        Chip::new(&p, 7, &vec![G100; ports], true)
    }

    fn data() -> Packet {
        test_packet(PacketKind::Data, 0, 1500)
    }

    /// Defaults: the paper's 6 + 18 µs modes, 1 µs recirculation and
    /// notices, 100G lines, the data queue as meter depth; bad keys are named.
    #[test]
    fn defaults_and_errors() {
        let p = TofinoConfig::default().params("k", 15_000).unwrap();
        assert_eq!((p.t0_ps, p.t1_ps), (6_000_000, 24_000_000));
        assert_eq!(
            (p.recirc_ps, p.notice_ps, p.recirc_bps),
            (1_000_000, 1_000_000, G100)
        );
        assert_eq!(
            (p.burst_bytes, p.variant, p.trim_n),
            (15_000, Variant::Full, 12)
        );
        let e = TofinoConfig {
            t1_ns: 1000.0,
            ..Default::default()
        };
        assert!(e
            .params("k", 1)
            .unwrap_err()
            .to_string()
            .contains("k.t1_ns"));
        let e = TofinoConfig {
            ports_per_pipeline: 0,
            ..Default::default()
        };
        assert!(e
            .params("k", 1)
            .unwrap_err()
            .to_string()
            .contains("k.ports_per_pipeline"));
        assert_eq!(chip(Variant::Full, 64).pipelines(), 4);
        assert_eq!(chip(Variant::Full, 17).pipelines(), 2);
    }

    /// A 2:1 incast within one pipeline: two ports at line rate into one
    /// egress port. The line-rate meter passes one line rate after its
    /// burst (10 packets) and trims the rest in ingress: of 2·n packets
    /// over n packet times, n + 10 pass (±1 for the last refill).
    #[test]
    fn the_line_rate_meter_trims_the_excess_of_a_2_to_1_incast() {
        let mut c = chip(Variant::Dod, 32);
        let n = 1000u64;
        let mut passed = 0;
        for k in 0..n {
            for in_port in [1, 2] {
                if c.ingress(&data(), in_port, 0, true, k * PKT_PS) == Decision::Forward {
                    passed += 1;
                }
            }
        }
        assert!((n + 9..=n + 11).contains(&passed), "{passed}");
        assert_eq!(c.counters.trimmed_ingress, 2 * n - passed);
        // The same load from two pipelines is not metered together: nothing trimmed.
        let mut c = chip(Variant::Dod, 32);
        for k in 0..n {
            for in_port in [1, 17] {
                assert_eq!(
                    c.ingress(&data(), in_port, 0, true, k * PKT_PS),
                    Decision::Forward
                );
            }
        }
    }

    /// Control packets are metered but never trimmed.
    #[test]
    fn control_is_metered_never_trimmed() {
        let mut c = chip(Variant::Dod, 16);
        let ack = test_packet(PacketKind::Ack, 0, 64);
        for _ in 0..1000 {
            assert_eq!(c.ingress(&ack, 1, 0, true, 0), Decision::Forward);
        }
        // The burst is spent: the next data packet at the same instant is RED.
        assert_eq!(c.ingress(&data(), 1, 0, true, 0), Decision::Trim);
        // With `meter_packets = "data"` the same ACKs leave the burst whole:
        // the 10 data packets it holds (15,000 B) pass, the 11th is RED.
        let cfg = TofinoConfig {
            variant: Variant::Dod,
            meter_packets: MeterPackets::Data,
            ..Default::default()
        };
        let mut c = Chip::new(&cfg.params("k", 15_000).unwrap(), 7, &[G100; 16], true);
        for _ in 0..1000 {
            assert_eq!(c.ingress(&ack, 1, 0, true, 0), Decision::Forward);
        }
        for _ in 0..10 {
            assert_eq!(c.ingress(&data(), 1, 0, true, 0), Decision::Forward);
        }
        assert_eq!(c.ingress(&data(), 1, 0, true, 0), Decision::Trim);
        let parsed: TofinoConfig = toml::from_str("meter_packets = \"data\"").unwrap();
        assert_eq!(parsed.meter_packets, MeterPackets::Data);
        assert!(toml::from_str::<TofinoConfig>("meter_packets = \"some\"").is_err());
    }

    /// Ideal trims only at a full data queue; MoD drops and mirrors the
    /// header through its pipeline's MoD line (64 B at 100G, then 1 µs).
    #[test]
    fn ideal_and_mirror_on_drop() {
        let mut c = chip(Variant::Ideal, 32);
        assert_eq!(c.ingress(&data(), 1, 0, true, 0), Decision::Forward);
        assert_eq!(c.ingress(&data(), 1, 0, false, 0), Decision::Trim);
        assert_eq!(c.counters.trimmed_overflow, 1);
        let mut c = chip(Variant::Mod, 32);
        let d = c.ingress(&data(), 17, 0, false, 0);
        assert_eq!(
            d,
            Decision::Recirculate {
                line: 3,
                start: true
            }
        );
        let s = c.serve(3, 0).unwrap();
        assert_eq!((s.done, s.notice_due), (tx_time_ps(64, G100), None));
        assert_eq!(c.served(3, s.done), s.done + 1_000_000);
        let (h, in_port, out_port) = c.recirculated(3);
        assert_eq!(
            (h.kind, h.size, in_port, out_port),
            (PacketKind::Header, 64, 17, 0)
        );
        assert_eq!((c.counters.mirrored, c.counters.trimmed_dod), (1, 0));
    }

    /// DoD: a full TM deflects the whole packet to its ingress pipeline's
    /// line; it is served at 100G (120 ns), recirculates 1 µs and comes out
    /// trimmed; `dod` sends no notice, `full` sends one on the dequeue.
    #[test]
    fn deflect_on_drop_line() {
        let mut c = chip(Variant::Dod, 64);
        for _ in 0..3 {
            let d = c.ingress(&data(), 33, 5, false, 0);
            assert_eq!(
                d,
                Decision::Recirculate {
                    line: 4,
                    start: true
                }
            );
        }
        assert_eq!((c.counters.deflected, c.counters.dod_max_packets), (3, 3));
        let s = c.serve(4, 0).unwrap();
        assert_eq!((s.done, s.notice_due), (PKT_PS, None));
        assert!(c.serve(4, 0).is_none(), "busy");
        assert_eq!(c.served(4, PKT_PS), PKT_PS + 1_000_000);
        assert_eq!(c.held_packets(), 3);
        let (h, _, out) = c.recirculated(4);
        assert_eq!((h.kind, h.size, out), (PacketKind::Header, HEADER_BYTES, 5));
        assert_eq!(c.counters.trimmed_dod, 1);
        let mut c = chip(Variant::Full, 64);
        c.ingress(&data(), 33, 5, false, 0);
        assert_eq!(c.serve(4, 10).unwrap().notice_due, Some(1_000_010));
        let mut c = chip(Variant::Full, 64);
        c.p.dod_cap = Some(1);
        c.ingress(&data(), 33, 5, false, 0);
        assert_eq!(c.ingress(&data(), 33, 5, false, 0), Decision::Lost);
        assert_eq!(c.counters.dod_dropped, 1);
    }

    /// Packets one port's meter of `pipe_port` passes at `rate_div` of line
    /// rate: offered at line rate for `n` packet times from `t`.
    fn passed(c: &mut Chip, in_port: u16, t: u64, n: u64) -> u64 {
        (0..n)
            .filter(|k| c.ingress(&data(), in_port, 0, true, t + k * PKT_PS) == Decision::Forward)
            .count() as u64
    }

    /// The three-mode loop ([TRIM] Fig 3): a notice makes every pipeline's
    /// (pipeline, port) pessimistic until T0 (the 1/4 meter), then half until
    /// T1 (1/2), then optimistic; the trace shows the three changes.
    #[test]
    fn a_notice_runs_the_three_modes() {
        let mut c = chip(Variant::Full, 64);
        c.ingress(&data(), 20, 0, false, 0);
        let due = c.serve(2, 0).unwrap().notice_due.unwrap();
        c.notice(due);
        assert_eq!(c.counters.notices, 4, "one per pipeline");
        // 10 packets take the burst (2.5 packets' worth refills meanwhile),
        // then 40 packet times (4.8 µs < T0) pass a quarter: 10 + 2.5.
        let t = due + 1;
        assert_eq!(passed(&mut c, 40, t, 10), 10);
        let q = passed(&mut c, 40, t + 10 * PKT_PS, 40);
        assert!((11..=13).contains(&q), "pessimistic passed {q}");
        // From T0 + 1 packet time on: half.
        let t = due + 6_000_000 + PKT_PS;
        let h = passed(&mut c, 40, t, 100);
        assert!((49..=62).contains(&h), "half passed {h}");
        let t = due + 24_000_000 + PKT_PS;
        assert_eq!(passed(&mut c, 40, t, 100), 100, "optimistic");
        let rows = c.finish_trace(100_000_000);
        let modes: Vec<(u64, u32)> = rows
            .iter()
            .filter(|r| r.series == 0 && r.pipeline == 2 && r.port == 0)
            .map(|r| (r.time_ps, r.value))
            .collect();
        assert_eq!(
            modes,
            vec![(due, 2), (due + 6_000_000, 1), (due + 24_000_000, 0)]
        );
        assert!(rows.iter().any(|r| r.series == 1 && r.pipeline == 1));
    }

    /// The alternatives: origin-only signals one pipeline; trim-all trims
    /// everything until T0; trim-N the next N packets; pessimistic-only has
    /// no half stage.
    #[test]
    fn the_rejected_alternatives() {
        let mut c = chip(Variant::OriginPipelineOnly, 64);
        c.ingress(&data(), 20, 0, false, 0);
        let due = c.serve(2, 0).unwrap().notice_due.unwrap();
        c.notice(due);
        assert_eq!(c.counters.notices, 1);
        let mut c = chip(Variant::TrimAll, 64);
        c.ingress(&data(), 20, 0, false, 0);
        let due = c.serve(2, 0).unwrap().notice_due.unwrap();
        c.notice(due);
        assert_eq!(passed(&mut c, 40, due, 40), 0);
        assert_eq!(passed(&mut c, 40, due + 6_000_000, 10), 10);
        let mut c = chip(Variant::TrimN, 64);
        c.ingress(&data(), 20, 0, false, 0);
        let due = c.serve(2, 0).unwrap().notice_due.unwrap();
        c.notice(due);
        assert_eq!(passed(&mut c, 40, due + 100_000_000, 20), 8, "12 trimmed");
        let mut c = chip(Variant::PessimisticOnly, 64);
        c.ingress(&data(), 20, 0, false, 0);
        let due = c.serve(2, 0).unwrap().notice_due.unwrap();
        c.notice(due);
        assert_eq!(
            passed(&mut c, 40, due + 6_000_000 + PKT_PS, 30),
            30,
            "optimistic after T0"
        );
    }
}
