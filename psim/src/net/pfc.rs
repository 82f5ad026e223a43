//! Priority flow control (IEEE 802.1Qbb) on a switch with a per-input-port
//! buffer: the ingress accounting that decides when a switch pauses its
//! upstream neighbour, and the pause frames that carry the decision.
//!
//! Every data packet a PFC switch admits is charged, from its admission to
//! its dequeue at the egress port, to (input port, priority) ([RDMA] §2.2
//! step 8: bytes count until the egress dequeue, not until the last bit
//! leaves). When a lossless priority's charge passes the X-OFF threshold, the
//! switch sends PAUSE(priority) back out of that input port; when it falls to
//! the threshold minus the resume offset, RESUME. The upstream port stops
//! serving that priority after the packet it is sending ([`super::Port::set_paused`]).
//! Headroom above X-OFF absorbs what is already on the wire; a lossless
//! packet that would overflow it is dropped and counted (a headroom drop
//! means the headroom is too small: [RDMA] §2.3 pitfall 1). Lossy
//! priorities are dropped when the input port's buffer is full.
//!
//! Control packets (ACKs, NACKs, pulls, CNPs) are not charged and never
//! trigger a pause, as HPCC and CW keep them in an unpaused control class
//! ([RDMA] §2.1 "Priorities / queues", §2.3 pitfall 6).
//!
//! The charge is released when the egress port dequeues the packet. The
//! switch finds which input the dequeued packet was charged to from a FIFO
//! per (egress port, priority), so the egress discipline must keep data
//! packets of one priority in order and drop only at enqueue (drop-tail,
//! ECN, ECN ramp, RED, priority, classes by priority: [`PfcConfig::validate_queue`]).
//! A discipline that serves inputs round robin (`voq`, the thesis's switch)
//! reorders a priority across inputs but names the input of each packet it
//! dequeues: the switch then keeps one FIFO per (egress port, input port,
//! priority) and releases the charge against the named input.
//!
//! With `lossless = []` no priority pauses: the accounting only bounds each
//! input port's buffer and drops what overflows it, the thesis's switch
//! without PFC (240 KB per input port, [TH] §4.3.1; `queue/voq.rs`).
//!
//! | parameter (`[switch.pfc]`) | default | source |
//! |---|---|---|
//! | `enabled` | false | — |
//! | `lossless` | every priority, 0–7; `[]`: none (per-input buffers, no pauses) | thesis §4.3.1: all RDMA traffic is lossless under PFC |
//! | `buffer_bytes` | 240 000 per input port ([`DEFAULT_BUFFER_BYTES`]) | thesis §4.3.1 (IRN's setup: 240 KB per input port) |
//! | `threshold` | `"static"` | thesis §4.3.1 |
//! | `xoff_bytes` (static) | `buffer_bytes − headroom_bytes` (220 000) | thesis §4.3.1: threshold = buffer − upstream BDP |
//! | `alpha` (dynamic) | 1/8 ([`DEFAULT_ALPHA`]) | HPCC `switch-mmu.cc` (α = 2^−3 at NIC speed); CW uses 1/16 ([RDMA] §2.1) |
//! | `headroom_bytes` | 20 000 ([`DEFAULT_HEADROOM_BYTES`]) | thesis §4.3.1 (240 − 220 KB; 40 Gb/s × 2 × 2 µs, decision TA7) |
//! | `resume_offset_bytes` | 0 ([`DEFAULT_RESUME_OFFSET_BYTES`]) | thesis §4.1.2: X-ON when the queue drains below the threshold, no hysteresis stated; HPCC uses 3 KB |
//! | `pause_time_us` | none: a pause lasts until RESUME | HPCC and htsim (untimed); R3 and CW send 5 µs quanta ([RDMA] §2.1) |
//!
//! With `threshold = "dynamic"`, X-OFF for an input port is `alpha × (buffer
//! − headroom − bytes charged to the port)` (the dynamic threshold of HPCC's
//! shared buffer, applied to the thesis's per-input-port buffer).
//!
//! **A shared buffer** (`pool = "shared"`): the switch's buffer is one pool
//! of `shared_buffer_bytes` as in the shared-memory switches of HPCC's,
//! CW's and R3's simulators ([RDMA] §2.1–2.2), instead of the thesis's
//! buffer per input port. Each (input port, lossless priority) has
//! `reserve_bytes` of its own and `headroom_bytes` above its threshold;
//! one reserve and one headroom per input port are set aside from the pool
//! (HPCC's `total_rsrv` and `total_hdrm`: it runs one lossless class, so
//! several lossless priorities can overcommit them), and the rest is shared. A packet is charged to its
//! reserve while that lasts, then to the shared pool, and to the headroom
//! once its (input port, priority)'s shared use is past the threshold
//! ([RDMA] §2.2 step 4). The threshold is `alpha × (pool − set-aside −
//! shared bytes in use, switch-wide)` (dynamic: it falls as any port
//! fills the pool; HPCC's `GetPfcThreshold`) or `xoff_bytes` of shared use
//! (static). PAUSE when the headroom holds anything or the shared use
//! reaches the threshold; RESUME when the headroom is empty and the shared
//! use is 0 or at most the threshold minus the resume offset (step 6.4). A
//! lossless packet is dropped when it would overflow the headroom while its
//! shared use is past the threshold (step 3). Lossy priorities have no
//! reserve or headroom: a lossy packet is dropped when its (input port,
//! priority)'s shared use would pass the threshold. Release takes the
//! headroom first, then the shared bytes. As HPCC, an input port faster
//! than the hosts' links gets a larger alpha: `alpha` times its rate over
//! theirs, rounded down to a power of two (1/8 at the NIC's rate, 1/4 at
//! twice it; `alpha_scales_with_rate = false`: one `alpha` everywhere).
//!
//! | parameter (`[switch.pfc]`, shared pool) | default | source |
//! |---|---|---|
//! | `pool` | `"per_input_port"` | thesis §4.3.1; `"shared"`: HPCC, CW, R3 ([RDMA] §2.1) |
//! | `shared_buffer_bytes` | 12 000 000 per switch ([`DEFAULT_SHARED_BUFFER_BYTES`]) | HPCC `switch-mmu.cc` default (its config runs 32 MB at 100G; CW and R3 9 MB) |
//! | `reserve_bytes` | 4096 per (input port, lossless priority) ([`DEFAULT_RESERVE_BYTES`]) | HPCC `switch-mmu.cc` |
//! | `threshold` | as above; `"dynamic"` is HPCC's (always dynamic) | [RDMA] §2.1 |
//! | `alpha_scales_with_rate` | true | HPCC `third.cc`: shift 3 at NIC speed, one less per doubling ([RDMA] §2.1) |
//! | `egress_alpha` | none: no egress admission (HPCC) | CW `switch-mmu.cc`: 1.0 ([RDMA] §2.1) |
//! | `egress_min_bytes` | 1049 per (egress port, priority) ([`DEFAULT_EGRESS_MIN_BYTES`]) | CW: one MTU (1048 B) + 1 ([RDMA] §2.1) |
//!
//! **Egress admission** (`egress_alpha`, shared pool only): the switch also
//! counts the bytes queued per (egress port, priority), and drops a *lossy*
//! packet whose egress queue would hold more than `egress_min_bytes` plus
//! `egress_alpha × (pool − set-aside − shared bytes in use)`: a dynamic
//! threshold at the egress, as Broadcom-style MMUs and CW's simulator have
//! it, which keeps one congested output from taking the pool from lossy
//! traffic to other outputs. Lossless packets are never refused at the
//! egress (CW checks egress admission only for lossy traffic, [RDMA]
//! §2.1): PFC holds them at the ingress. A drop at either point shows as a
//! `drop` at the egress port.
//!
//! With `pause_time_us`, a frame pauses for that long ([`PAUSE_QUANTUM_BITS`]
//! bit times per quantum on the wire) and the receiver resumes by itself at
//! its end; the switch sends a fresh PAUSE on an arrival to a still-paused
//! priority once half the time has passed (CW's refresh on arrival,
//! [RDMA] §2.3 pitfall 5), and RESUME (time 0) ends a pause early.

use crate::config::{bad, ConfigError};
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Bytes of buffer per input port (thesis §4.3.1).
pub const DEFAULT_BUFFER_BYTES: u64 = 240_000;
/// Headroom per input port and priority above X-OFF (thesis §4.3.1: 240 − 220 KB).
pub const DEFAULT_HEADROOM_BYTES: u64 = 20_000;
/// X-ON = X-OFF minus this (thesis: none stated; HPCC: 3 KB).
pub const DEFAULT_RESUME_OFFSET_BYTES: u64 = 0;
/// Dynamic-threshold factor (HPCC: 2^−3 for ports at NIC speed).
pub const DEFAULT_ALPHA: f64 = 0.125;
/// Bit times per pause quantum (IEEE 802.1Qbb).
pub const PAUSE_QUANTUM_BITS: u64 = 512;
/// Number of PFC priorities.
pub const PRIORITIES: usize = 8;
/// Shared buffer per switch (HPCC's `switch-mmu.cc` default: 12 MB).
pub const DEFAULT_SHARED_BUFFER_BYTES: u64 = 12_000_000;
/// Bytes of its own per (input port, lossless priority) in a shared pool (HPCC: 4 KB).
pub const DEFAULT_RESERVE_BYTES: u64 = 4096;
/// Guaranteed bytes per (egress port, priority) before the egress threshold
/// applies (CW: one 1048-byte MTU + 1).
pub const DEFAULT_EGRESS_MIN_BYTES: u64 = 1049;

/// Where a switch keeps the packets it has admitted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pool {
    /// `buffer_bytes` per input port (the thesis's switch).
    #[default]
    PerInputPort,
    /// One pool of `shared_buffer_bytes` per switch (HPCC, CW, R3).
    Shared,
}

/// How X-OFF is set.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Threshold {
    /// A fixed number of bytes per (input port, priority).
    #[default]
    Static,
    /// A fraction of the input port's free buffer.
    Dynamic,
}

/// `[switch.pfc]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PfcConfig {
    /// Whether switches run the per-input-port accounting (PFC for the
    /// lossless priorities).
    pub enabled: bool,
    /// The lossless priorities; none: buffers per input port, no pauses.
    pub lossless: Vec<u8>,
    /// Buffer per input port, bytes.
    pub buffer_bytes: u64,
    /// Static or dynamic X-OFF.
    pub threshold: Threshold,
    /// Static X-OFF, bytes (default: buffer minus headroom).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xoff_bytes: Option<u64>,
    /// Dynamic-threshold factor.
    pub alpha: f64,
    /// Headroom per (input port, priority) above X-OFF, bytes.
    pub headroom_bytes: u64,
    /// X-ON = X-OFF minus this, bytes.
    pub resume_offset_bytes: u64,
    /// Pause time carried by a PAUSE frame, µs; none: until RESUME.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_time_us: Option<f64>,
    /// A buffer per input port, or one shared pool per switch.
    pub pool: Pool,
    /// The shared pool, bytes per switch (`pool = "shared"`).
    pub shared_buffer_bytes: u64,
    /// Reserve per (input port, lossless priority) in the shared pool, bytes.
    pub reserve_bytes: u64,
    /// Shared pool: scale each input port's alpha with its rate (HPCC).
    pub alpha_scales_with_rate: bool,
    /// Shared pool: the egress admission's dynamic-threshold factor for
    /// lossy priorities; none: no egress admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_alpha: Option<f64>,
    /// Shared pool with egress admission: bytes each (egress port,
    /// priority) may queue before the egress threshold applies.
    pub egress_min_bytes: u64,
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            enabled: false,
            lossless: (0..PRIORITIES as u8).collect(),
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            threshold: Threshold::Static,
            xoff_bytes: None,
            alpha: DEFAULT_ALPHA,
            headroom_bytes: DEFAULT_HEADROOM_BYTES,
            resume_offset_bytes: DEFAULT_RESUME_OFFSET_BYTES,
            pause_time_us: None,
            pool: Pool::PerInputPort,
            shared_buffer_bytes: DEFAULT_SHARED_BUFFER_BYTES,
            reserve_bytes: DEFAULT_RESERVE_BYTES,
            alpha_scales_with_rate: true,
            egress_alpha: None,
            egress_min_bytes: DEFAULT_EGRESS_MIN_BYTES,
        }
    }
}

impl PfcConfig {
    /// The table with its defaults written out (the manifest's `config`):
    /// the static X-OFF when the threshold is static. An absent
    /// `pause_time_us` stays absent: it means untimed pauses, not a default.
    pub fn resolved(&self) -> Self {
        let mut c = self.clone();
        if c.threshold == Threshold::Static {
            c.xoff_bytes = Some(self.xoff());
        }
        c
    }

    /// Static X-OFF, bytes.
    pub fn xoff(&self) -> u64 {
        self.xoff_bytes
            .unwrap_or(self.buffer_bytes.saturating_sub(self.headroom_bytes))
    }

    /// Checks the values; `key` is the table (`switch.pfc`) and `mtu_wire`
    /// the largest packet the traffic puts on the wire, bytes.
    pub fn validate(&self, key: &str, mtu_wire: u64) -> Result<(), ConfigError> {
        let k = |f: &str| format!("{key}.{f}");
        if let Some(&p) = self.lossless.iter().find(|&&p| p as usize >= PRIORITIES) {
            return Err(bad(&k("lossless"), p, "priorities are 0 to 7"));
        }
        if self.buffer_bytes < mtu_wire {
            return Err(bad(
                &k("buffer_bytes"),
                self.buffer_bytes,
                &format!("must hold at least one packet ({mtu_wire} bytes)"),
            ));
        }
        if self.headroom_bytes < mtu_wire {
            return Err(bad(
                &k("headroom_bytes"),
                self.headroom_bytes,
                &format!(
                    "must be at least one packet ({mtu_wire} bytes) to absorb what is on the wire"
                ),
            ));
        }
        if self.xoff() + self.headroom_bytes > self.buffer_bytes {
            return Err(bad(
                &k("xoff_bytes"),
                self.xoff(),
                &format!(
                    "X-OFF plus headroom ({}) exceeds buffer_bytes ({})",
                    self.xoff() + self.headroom_bytes,
                    self.buffer_bytes
                ),
            ));
        }
        if self.xoff() == 0 {
            return Err(bad(&k("xoff_bytes"), 0, "must be above 0"));
        }
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return Err(bad(&k("alpha"), self.alpha, "must be a positive number"));
        }
        if self.resume_offset_bytes >= self.xoff() {
            return Err(bad(
                &k("resume_offset_bytes"),
                self.resume_offset_bytes,
                "must be below X-OFF",
            ));
        }
        if let Some(t) = self.pause_time_us {
            if !(t > 0.0 && t.is_finite()) {
                return Err(bad(&k("pause_time_us"), t, "must be a positive number"));
            }
        }
        if let Some(a) = self.egress_alpha {
            if !(a > 0.0 && a.is_finite()) {
                return Err(bad(&k("egress_alpha"), a, "must be a positive number"));
            }
            if self.pool != Pool::Shared {
                return Err(bad(
                    &k("egress_alpha"),
                    a,
                    "egress admission needs a shared buffer (pool = \"shared\")",
                ));
            }
        }
        Ok(())
    }

    /// Bytes a shared pool sets aside on a switch of `ports` ports: one
    /// headroom and one reserve per input port, as HPCC counts them (each
    /// lossless priority may fill both; HPCC runs one lossless class).
    pub fn set_aside(&self, ports: usize) -> u64 {
        if self.lossless.is_empty() {
            return 0;
        }
        ports as u64 * (self.headroom_bytes + self.reserve_bytes)
    }

    /// With a shared pool, checks that the largest switch (`ports` ports)
    /// keeps at least one packet (`mtu_wire` bytes) of pool after what it
    /// sets aside.
    pub fn validate_pool(&self, key: &str, ports: usize, mtu_wire: u64) -> Result<(), ConfigError> {
        if !self.enabled || self.pool != Pool::Shared {
            return Ok(());
        }
        let aside = self.set_aside(ports);
        if self.shared_buffer_bytes < aside + mtu_wire {
            return Err(bad(
                &format!("{key}.shared_buffer_bytes"),
                self.shared_buffer_bytes,
                &format!(
                    "must exceed what a switch of {ports} ports sets aside (headroom_bytes + reserve_bytes per input port: {aside} bytes) by at least one packet ({mtu_wire} bytes)"
                ),
            ));
        }
        Ok(())
    }

    /// Checks that a port discipline can run under PFC: the charge of a
    /// dequeued packet is found by order, so the discipline must keep data
    /// packets of one priority in order and discard only at enqueue, or
    /// name the input of each packet it dequeues (`voq`).
    pub fn validate_queue(
        &self,
        key: &str,
        q: &crate::queue::QueueConfig,
    ) -> Result<(), ConfigError> {
        if self.enabled && !q.keeps_priority_order() && !q.names_ingress() {
            return Err(bad(
                &format!("{key}.kind"),
                q.name(),
                "cannot run under switch.pfc: PFC needs a discipline that keeps each priority's \
                 data packets in order and drops only at enqueue (droptail, ecn, ecn_ramp, red, priority, \
                 or classes by prio of those), or one that names each packet's input (voq)",
            ));
        }
        Ok(())
    }

    fn lossless_mask(&self) -> u8 {
        self.lossless.iter().fold(0, |m, &p| m | 1 << p)
    }
}

/// What the switch must do after admitting or releasing a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Signal {
    /// Nothing.
    None,
    /// Send PAUSE(prio) out of input port `port`.
    Pause {
        /// The input port (whose reverse link carries the frame).
        port: u16,
        /// The priority.
        prio: u8,
    },
    /// Send RESUME(prio) out of input port `port`.
    Resume {
        /// The input port.
        port: u16,
        /// The priority.
        prio: u8,
    },
}

/// Per-switch PFC counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PfcCounters {
    /// Lossless packets dropped because the headroom overflowed (should be 0).
    pub headroom_drops: u64,
    /// Lossy packets dropped because the input port's buffer was full.
    pub buffer_drops: u64,
    /// Lossy packets dropped by the egress admission (shared pool).
    pub egress_drops: u64,
}

/// One admitted packet's charge, in its egress port's order.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Charge {
    in_port: u16,
    size: u32,
    /// The packet, to check in debug builds that order was kept.
    flow: u64,
    seq: u64,
}

/// The accounting of a shared buffer (`pool = "shared"`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct SharedPool {
    /// The pool less what is set aside, bytes.
    pool: u64,
    /// Reserve per (input port, lossless priority), bytes.
    reserve: u64,
    /// Headroom bytes in use per (input port, priority).
    hdrm: Vec<[u64; PRIORITIES]>,
    /// Shared bytes in use, switch-wide.
    used: u64,
    /// Each input port's alpha over `alpha` (empty: 1 for every port).
    alpha_scale: Vec<f64>,
    /// Whether [`Mmu::scale_alpha_by_rate`] sets `alpha_scale`.
    scale_by_rate: bool,
    /// Egress admission of lossy packets: (alpha, guaranteed bytes per
    /// queue); None: none.
    egress_limit: Option<(f64, u64)>,
    /// Charged bytes queued per (egress port, priority).
    egress: Vec<[u64; PRIORITIES]>,
}

/// One switch's ingress accounting.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Mmu {
    xoff_static: u64,
    threshold: Threshold,
    alpha: f64,
    buffer: u64,
    headroom: u64,
    resume_offset: u64,
    lossless: u8,
    /// Pause time in ps, 0: untimed.
    pause_ps: u64,
    /// Bytes charged per (input port, priority).
    charged: Vec<[u64; PRIORITIES]>,
    /// Bytes charged per input port.
    port_bytes: Vec<u64>,
    /// Shared pool (None: a buffer per input port).
    shared: Option<Box<SharedPool>>,
    /// Whether (input port, priority) has paused its upstream, and when it last sent PAUSE.
    paused: Vec<[Option<u64>; PRIORITIES]>,
    /// Whether the egress discipline names each dequeued packet's input
    /// (`voq`): then `order` is per (egress port, input port).
    by_input: bool,
    /// Number of ports.
    ports: usize,
    /// Charges in dequeue order per (egress port, priority), or per
    /// (egress port, input port, priority) when `by_input`.
    order: Vec<[VecDeque<Charge>; PRIORITIES]>,
    /// Counters.
    pub counters: PfcCounters,
}

impl Mmu {
    /// The accounting of a switch with `ports` ports; `by_input`: its egress
    /// discipline names the input of each packet it dequeues
    /// ([`crate::queue::QueueConfig::names_ingress`]).
    pub fn new(cfg: &PfcConfig, ports: usize, by_input: bool) -> Mmu {
        let queues = if by_input { ports * ports } else { ports };
        Mmu {
            xoff_static: cfg.xoff(),
            threshold: cfg.threshold,
            alpha: cfg.alpha,
            buffer: cfg.buffer_bytes,
            headroom: cfg.headroom_bytes,
            resume_offset: cfg.resume_offset_bytes,
            lossless: cfg.lossless_mask(),
            pause_ps: cfg.pause_time_us.map_or(0, |t| (t * 1e6).round() as u64),
            charged: vec![[0; PRIORITIES]; ports],
            port_bytes: vec![0; ports],
            shared: (cfg.pool == Pool::Shared).then(|| {
                Box::new(SharedPool {
                    pool: cfg.shared_buffer_bytes.saturating_sub(cfg.set_aside(ports)),
                    reserve: cfg.reserve_bytes,
                    hdrm: vec![[0; PRIORITIES]; ports],
                    used: 0,
                    alpha_scale: Vec::new(),
                    scale_by_rate: cfg.alpha_scales_with_rate,
                    egress_limit: cfg.egress_alpha.map(|a| (a, cfg.egress_min_bytes)),
                    egress: vec![[0; PRIORITIES]; ports],
                })
            }),
            paused: vec![[None; PRIORITIES]; ports],
            by_input,
            ports,
            order: (0..queues).map(|_| Default::default()).collect(),
            counters: PfcCounters::default(),
        }
    }

    /// Which FIFO of `order` holds the charges of (egress port, input port).
    #[inline]
    fn order_of(&self, out_port: u16, in_port: u16) -> usize {
        if self.by_input {
            out_port as usize * self.ports + in_port as usize
        } else {
            out_port as usize
        }
    }

    /// Pause time a frame carries, ps (0: until RESUME).
    pub fn pause_ps(&self) -> u64 {
        self.pause_ps
    }

    #[inline]
    fn charged_packet(pkt: &Packet) -> bool {
        pkt.kind == PacketKind::Data
    }

    #[inline]
    fn is_lossless(&self, prio: u8) -> bool {
        self.lossless & (1 << prio) != 0
    }

    /// X-OFF of `in_port` now, bytes.
    #[inline]
    fn xoff(&self, in_port: usize) -> u64 {
        match self.threshold {
            Threshold::Static => self.xoff_static,
            Threshold::Dynamic => {
                let free = self
                    .buffer
                    .saturating_sub(self.headroom)
                    .saturating_sub(self.port_bytes[in_port]);
                (self.alpha * free as f64) as u64
            }
        }
    }

    /// Whether a packet that came in on `in_port` may be offered to the
    /// queue of egress port `out_port`. False: the switch drops it (counted
    /// here).
    pub fn admit(&mut self, pkt: &Packet, in_port: u16, out_port: u16) -> bool {
        if !Self::charged_packet(pkt) {
            return true;
        }
        let (i, size) = (in_port as usize, pkt.size as u64);
        let prio = (pkt.prio as usize).min(PRIORITIES - 1);
        if let Some(sp) = self.shared.as_deref() {
            let thr = self.shared_threshold(sp, i);
            let over = size + self.shared_use(i, prio) > thr;
            if !self.is_lossless(prio as u8) {
                if over {
                    self.counters.buffer_drops += 1;
                    return false;
                }
                if let Some((alpha, min)) = sp.egress_limit {
                    let queued = sp.egress[out_port as usize][prio] + size;
                    let limit = min + (alpha * sp.pool.saturating_sub(sp.used) as f64) as u64;
                    if queued > limit {
                        self.counters.egress_drops += 1;
                        return false;
                    }
                }
            } else if over && sp.hdrm[i][prio] + size > self.headroom {
                self.counters.headroom_drops += 1;
                return false;
            }
            return true;
        }
        if self.is_lossless(prio as u8) {
            if self.charged[i][prio] + size > self.xoff(i) + self.headroom {
                self.counters.headroom_drops += 1;
                return false;
            }
        } else if self.port_bytes[i] + size > self.buffer {
            self.counters.buffer_drops += 1;
            return false;
        }
        true
    }

    /// Charges a packet the egress port `out_port` queued, at `now`;
    /// returns whether to pause its upstream.
    pub fn charge(&mut self, pkt: &Packet, in_port: u16, out_port: u16, now: u64) -> Signal {
        if !Self::charged_packet(pkt) {
            return Signal::None;
        }
        let (i, prio) = (in_port as usize, (pkt.prio as usize).min(PRIORITIES - 1));
        let size = pkt.size as u64;
        let before = self.shared_use(i, prio);
        let thr = self
            .shared
            .as_deref()
            .map(|sp| self.shared_threshold(sp, i));
        self.charged[i][prio] += size;
        self.port_bytes[i] += size;
        if let Some(thr) = thr {
            // Shared pool: the reserve, then the shared bytes; into the
            // headroom instead once past the threshold ([RDMA] §2.2 step 4).
            let after = self.shared_use(i, prio);
            let lossless = self.is_lossless(prio as u8);
            let sp = self.shared.as_deref_mut().expect("shared");
            if lossless && after > thr {
                sp.hdrm[i][prio] += size;
            } else {
                sp.used += after - before;
            }
            sp.egress[out_port as usize][prio] += size;
        }
        let o = self.order_of(out_port, in_port);
        self.order[o][prio].push_back(Charge {
            in_port,
            size: pkt.size,
            flow: pkt.flow,
            seq: pkt.seq,
        });
        if !self.is_lossless(prio as u8) || !self.over_xoff(i, prio) {
            return Signal::None;
        }
        let refresh = match self.paused[i][prio] {
            None => true,
            // Timed pause: refresh once half the time has passed.
            Some(sent) => self.pause_ps > 0 && now >= sent + self.pause_ps / 2,
        };
        if !refresh {
            return Signal::None;
        }
        self.paused[i][prio] = Some(now);
        Signal::Pause {
            port: in_port,
            prio: prio as u8,
        }
    }

    /// Releases the charge of a packet egress port `out_port` dequeued,
    /// which its discipline says came in on `from` (None: it does not
    /// say); returns whether to resume the upstream it was charged to.
    pub fn release(&mut self, pkt: &Packet, out_port: u16, from: Option<u16>) -> Signal {
        if !Self::charged_packet(pkt) {
            return Signal::None;
        }
        let prio = (pkt.prio as usize).min(PRIORITIES - 1);
        let o = match (self.by_input, from) {
            (false, _) => self.order_of(out_port, 0),
            (true, Some(in_port)) => self.order_of(out_port, in_port),
            (true, None) => panic!("the egress discipline did not name a charged packet's input"),
        };
        let c = self.order[o][prio]
            .pop_front()
            .expect("every dequeued data packet was charged");
        debug_assert_eq!(
            (c.flow, c.seq, c.size),
            (pkt.flow, pkt.seq, pkt.size),
            "the egress discipline reordered a priority (of one input, if it names inputs) under PFC"
        );
        let i = c.in_port as usize;
        let size = c.size as u64;
        let before = self.shared_use(i, prio);
        if let Some(sp) = self.shared.as_deref_mut() {
            // The headroom empties first, then the shared bytes.
            sp.hdrm[i][prio] -= sp.hdrm[i][prio].min(size);
            sp.egress[out_port as usize][prio] -= size;
        }
        self.charged[i][prio] -= size;
        self.port_bytes[i] -= size;
        let after = self.shared_use(i, prio);
        if let Some(sp) = self.shared.as_deref_mut() {
            sp.used -= before - after;
        }
        if self.paused[i][prio].is_some() && self.under_xon(i, prio) {
            self.paused[i][prio] = None;
            return Signal::Resume {
                port: c.in_port,
                prio: prio as u8,
            };
        }
        Signal::None
    }

    /// Whether (input port, priority) is at or past X-OFF: its charge per
    /// input port; in a shared pool, anything in its headroom or its shared
    /// use at the threshold.
    #[inline]
    fn over_xoff(&self, i: usize, prio: usize) -> bool {
        match self.shared.as_deref() {
            None => self.charged[i][prio] >= self.xoff(i),
            Some(sp) => {
                sp.hdrm[i][prio] > 0 || self.shared_use(i, prio) >= self.shared_threshold(sp, i)
            }
        }
    }

    /// Whether a paused (input port, priority) may resume: below X-OFF
    /// minus the resume offset; in a shared pool, an empty headroom and a
    /// shared use of 0 or at most the threshold minus the offset.
    #[inline]
    fn under_xon(&self, i: usize, prio: usize) -> bool {
        match self.shared.as_deref() {
            None => self.charged[i][prio] + self.resume_offset < self.xoff(i),
            Some(sp) => {
                let used = self.shared_use(i, prio);
                sp.hdrm[i][prio] == 0
                    && (used == 0 || used + self.resume_offset <= self.shared_threshold(sp, i))
            }
        }
    }

    /// A shared pool's threshold on one (input port, priority)'s shared use.
    #[inline]
    fn shared_threshold(&self, sp: &SharedPool, in_port: usize) -> u64 {
        match self.threshold {
            Threshold::Static => self.xoff_static,
            Threshold::Dynamic => {
                let alpha = self.alpha * sp.alpha_scale.get(in_port).copied().unwrap_or(1.0);
                (alpha * sp.pool.saturating_sub(sp.used) as f64) as u64
            }
        }
    }

    /// In a shared pool with `alpha_scales_with_rate`: each input port's
    /// alpha is `alpha` times its rate over the hosts' rate, rounded down
    /// to a power of two and at least 1 (HPCC: 1/8 at the NIC's rate, 1/4
    /// at twice it, 1/2 at four times). `rates` are the switch's port
    /// rates, b/s.
    pub fn scale_alpha_by_rate(&mut self, rates: &[u64], host_rate: u64) {
        let Some(sp) = self.shared.as_deref_mut().filter(|sp| sp.scale_by_rate) else {
            return;
        };
        sp.alpha_scale = rates
            .iter()
            .map(|&r| {
                let ratio = (r / host_rate.max(1)).max(1);
                (1u64 << ratio.ilog2()) as f64
            })
            .collect();
    }

    /// Shared bytes (input port, priority) uses: its charge less its
    /// headroom and its reserve (0 without a shared pool).
    #[inline]
    fn shared_use(&self, i: usize, prio: usize) -> u64 {
        let Some(sp) = self.shared.as_deref() else {
            return 0;
        };
        let own = self.charged[i][prio] - sp.hdrm[i][prio];
        if self.is_lossless(prio as u8) {
            own.saturating_sub(sp.reserve)
        } else {
            own
        }
    }

    /// Headroom bytes (input port, priority) uses (0 without a shared pool).
    pub fn headroom_used(&self, in_port: u16, prio: u8) -> u64 {
        self.shared
            .as_deref()
            .map_or(0, |sp| sp.hdrm[in_port as usize][prio as usize])
    }

    /// Bytes charged to (input port, priority).
    pub fn charged(&self, in_port: u16, prio: u8) -> u64 {
        self.charged[in_port as usize][prio as usize]
    }
}

/// A PAUSE (pause = true) or RESUME frame for `prio` from `node` to its
/// neighbour `peer`, carrying `pause_ps` (0: until RESUME) in `rank`. Its
/// class-enable vector (which priorities it addresses) is in `seq`, the
/// paused ones in `ack`, as 802.1Qbb's frame carries one timer per priority.
pub fn frame(node: u32, peer: u32, prio: u8, pause: bool, pause_ps: u64, now: u64) -> Packet {
    Packet {
        flow: u64::MAX,
        src: node,
        dst: peer,
        seq: 1 << prio,
        ack: if pause { 1 << prio } else { 0 },
        size: HEADER_BYTES,
        payload: 0,
        path: 0,
        sent_ps: now,
        kind: PacketKind::Pause,
        proto: crate::packet::Protocol::ALL[0],
        flags: 0,
        prio,
        rank: if pause { pause_ps } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_packet;

    fn data(seq: u64, prio: u8) -> Packet {
        let mut p = test_packet(PacketKind::Data, seq, 1000);
        p.prio = prio;
        p
    }

    fn cfg() -> PfcConfig {
        PfcConfig {
            enabled: true,
            buffer_bytes: 10_000,
            headroom_bytes: 3_000,
            resume_offset_bytes: 2_000,
            lossless: vec![3],
            ..Default::default()
        }
    }

    /// The dynamic threshold on buffers per input port: X-OFF = alpha x
    /// (10 000 − 3 000 headroom − the input's bytes, every priority). By
    /// hand with alpha = 1 and 1000 B packets on priority 3: after n,
    /// 1000n ≥ 7000 − 1000n first at n = 4, so the 4th pauses. With 2000 B
    /// of lossy priority 1 already in from the same input, 1000n ≥ 5000 −
    /// 1000n at n = 3. Resuming from the 4 (resume offset 2000): after k
    /// departures 4000 − 1000k + 2000 < 3000 + 1000k first at k = 2.
    #[test]
    fn buffers_per_input_pause_at_the_dynamic_threshold() {
        let cfg = PfcConfig {
            threshold: Threshold::Dynamic,
            alpha: 1.0,
            ..cfg()
        };
        for (lossy_first, pause_at) in [(0, 4), (2, 3)] {
            let mut m = Mmu::new(&cfg, 2, false);
            for s in 0..lossy_first {
                let p = data(100 + s, 1);
                assert!(m.admit(&p, 0, 1));
                assert_eq!(m.charge(&p, 0, 1, 0), Signal::None);
            }
            let first = (0..10).position(|s| {
                let p = data(s, 3);
                assert!(m.admit(&p, 0, 1));
                m.charge(&p, 0, 1, 0) != Signal::None
            });
            assert_eq!(first.map(|n| n + 1), Some(pause_at), "{lossy_first} lossy");
        }
        let mut m = Mmu::new(&cfg, 2, false);
        for s in 0..4 {
            let p = data(s, 3);
            assert!(m.admit(&p, 0, 1));
            m.charge(&p, 0, 1, 0);
        }
        let resumed = (0..4)
            .position(|s| m.release(&data(s, 3), 1, None) != Signal::None)
            .map(|k| k + 1);
        assert_eq!(resumed, Some(2));
    }

    /// A shared pool of 100 000 B on 2 ports, lossless priority 3 only:
    /// 2 x (10 000 headroom + 4 000 reserve) set aside leaves 72 000;
    /// threshold = 0.5 x (72 000 − shared bytes in use).
    fn shared_cfg(resume_offset: u64) -> PfcConfig {
        PfcConfig {
            enabled: true,
            pool: Pool::Shared,
            shared_buffer_bytes: 100_000,
            reserve_bytes: 4_000,
            headroom_bytes: 10_000,
            resume_offset_bytes: resume_offset,
            threshold: Threshold::Dynamic,
            alpha: 0.5,
            lossless: vec![3],
            ..Default::default()
        }
    }

    /// By hand, 1000-byte packets from input 0: the first 4 fill the
    /// reserve; after n more the shared use is 1000n against a threshold of
    /// 0.5 x (72 000 − 1000n), reached at n = 24 (24 000 = 24 000): the
    /// 28th packet pauses. The next 10 go to the headroom (over the
    /// threshold), the 39th is a headroom drop. Leaving, the headroom
    /// empties first: after 10 departures shared use is 24 000 = the
    /// threshold, so RESUME (offset 0). With an offset of 3000, RESUME
    /// needs 1.5 x use ≤ 33 000, i.e. use ≤ 22 000: two departures later.
    #[test]
    fn a_shared_pool_pauses_at_the_dynamic_threshold_and_resumes_after_the_headroom() {
        for (offset, resume_after) in [(0, 10), (3_000, 12)] {
            let mut m = Mmu::new(&shared_cfg(offset), 2, false);
            let mut signals = Vec::new();
            for s in 0..39 {
                let p = data(s, 3);
                if m.admit(&p, 0, 1) {
                    signals.push(m.charge(&p, 0, 1, s));
                } else {
                    assert_eq!(s, 38, "only the 39th is dropped");
                }
            }
            let pause = Signal::Pause { port: 0, prio: 3 };
            assert_eq!(signals.iter().position(|&s| s == pause), Some(27));
            assert_eq!(signals.iter().filter(|&&s| s == pause).count(), 1);
            assert_eq!(m.counters.headroom_drops, 1);
            assert_eq!((m.charged(0, 3), m.headroom_used(0, 3)), (38_000, 10_000));
            let resumed = (0..38)
                .position(|s| m.release(&data(s, 3), 1, None) != Signal::None)
                .map(|k| k + 1);
            assert_eq!(resumed, Some(resume_after), "offset {offset}");
        }
    }

    /// The pool is shared: 20 000 B of shared use behind input 1 lower the
    /// threshold input 0 meets to 0.5 x (72 000 − 20 000 − 1000n), reached
    /// at n = 18 (18 000 ≥ 17 000 first), not 24. A lossy priority has no
    /// reserve or headroom: it is dropped at the threshold.
    #[test]
    fn one_ports_use_of_the_shared_pool_lowers_every_ports_threshold() {
        let mut m = Mmu::new(&shared_cfg(0), 2, false);
        for s in 0..24 {
            let p = data(s, 3);
            assert!(m.admit(&p, 1, 0));
            assert_eq!(m.charge(&p, 1, 0, s), Signal::None);
        }
        let first_pause = (100..140).position(|s| {
            let p = data(s, 3);
            assert!(m.admit(&p, 0, 1));
            m.charge(&p, 0, 1, s) != Signal::None
        });
        // 4 reserve packets, then n = 18 shared.
        assert_eq!(first_pause, Some(4 + 18 - 1));
        let mut lossy = Mmu::new(&shared_cfg(0), 2, false);
        let taken = (0..100)
            .take_while(|&s| {
                let p = data(s, 1);
                lossy.admit(&p, 0, 1) && {
                    lossy.charge(&p, 0, 1, s);
                    true
                }
            })
            .count();
        // Shared use 1000n ≤ 0.5 x (72 000 − 1000(n − 1)) - the arrival
        // fits while 1000(n) ≤ 36 000 − 500(n − 1): n ≤ 24.
        assert_eq!((taken, lossy.counters.buffer_drops), (24, 1));
    }

    /// HPCC's alpha per port speed, 3 ports (pool 100 000 − 3 x 14 000 =
    /// 58 000) and hosts at 10 Gb/s: a 40 Gb/s input gets 4 x 0.5 = 2
    /// (threshold 116 000 at an empty pool), a 25 Gb/s one 2 x 0.5 (2.5
    /// rounded down to a power of two: 58 000), a 10 Gb/s one 0.5 (29 000);
    /// switched off, every port keeps 0.5.
    #[test]
    fn a_shared_pool_scales_alpha_with_the_port_rate() {
        for (on, want) in [(true, [116_000, 58_000, 29_000]), (false, [29_000; 3])] {
            let cfg = PfcConfig {
                alpha_scales_with_rate: on,
                ..shared_cfg(0)
            };
            let mut m = Mmu::new(&cfg, 3, false);
            let rates = [40_000_000_000, 25_000_000_000, 10_000_000_000];
            m.scale_alpha_by_rate(&rates, 10_000_000_000);
            let sp = m.shared.as_deref().unwrap();
            let got: Vec<u64> = (0..3).map(|i| m.shared_threshold(sp, i)).collect();
            assert_eq!(got, want, "scaled: {on}");
        }
    }

    #[test]
    fn a_shared_pool_smaller_than_what_it_sets_aside_is_refused() {
        let c = shared_cfg(0);
        assert!(c.validate_pool("switch.pfc", 2, 1064).is_ok());
        // 8 ports set aside 8 x 14 000 = 112 000 B.
        let e = c
            .validate_pool("switch.pfc", 8, 1064)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("switch.pfc.shared_buffer_bytes = 100000"),
            "{e}"
        );
        assert!(e.contains("112000"), "{e}");
    }

    /// X-OFF = 10 000 − 3 000 = 7 000 B: the 7th 1000-byte packet from one
    /// input reaches it and pauses; headroom takes 3 more; the 11th is a
    /// headroom drop. X-ON = 7 000 − 2 000 = 5 000: RESUME once the charge
    /// falls below 5 000, i.e. after 6 of the 10 leave.
    #[test]
    fn xoff_pauses_headroom_absorbs_and_xon_resumes_with_hysteresis() {
        let mut m = Mmu::new(&cfg(), 4, false);
        let mut signals = Vec::new();
        for s in 0..11 {
            let p = data(s, 3);
            if m.admit(&p, 1, 2) {
                signals.push(m.charge(&p, 1, 2, s));
            }
        }
        let pause = Signal::Pause { port: 1, prio: 3 };
        assert_eq!(signals.iter().filter(|&&s| s == pause).count(), 1);
        assert_eq!(signals[6], pause, "at 7 000 B charged");
        assert_eq!((m.charged(1, 3), m.counters.headroom_drops), (10_000, 1));
        let released: Vec<Signal> = (0..10).map(|s| m.release(&data(s, 3), 2, None)).collect();
        let resume = Signal::Resume { port: 1, prio: 3 };
        assert_eq!(
            released.iter().position(|&s| s == resume),
            Some(5),
            "{released:?}"
        );
        assert_eq!(m.charged(1, 3), 0);
    }

    /// A lossy priority never pauses; it drops when the port's buffer is full.
    #[test]
    fn lossy_priorities_drop_at_the_buffer_and_never_pause() {
        let mut m = Mmu::new(&cfg(), 2, false);
        let mut admitted = 0;
        for s in 0..12 {
            let p = data(s, 0);
            if m.admit(&p, 0, 1) {
                admitted += 1;
                assert_eq!(m.charge(&p, 0, 1, 0), Signal::None);
            }
        }
        assert_eq!((admitted, m.counters.buffer_drops), (10, 2));
    }

    /// A round-robin egress (`voq`) names each packet's input: the charges
    /// of inputs 1 (7 packets, paused at X-OFF = 7 000 B) and 2 (2 packets)
    /// at one egress port, released interleaved as the round robin sends
    /// them, fall on their own inputs; input 1 resumes once its own charge
    /// is below X-ON = 5 000 B, after 3 of its packets, whatever input 2 does.
    #[test]
    fn a_charge_is_released_against_the_input_the_discipline_names() {
        let mut m = Mmu::new(&cfg(), 4, true);
        let from = |input: u16, s: u64| {
            let mut p = data(s, 3);
            p.flow = input as u64;
            p
        };
        let mut signals = Vec::new();
        for (input, s) in (0..7).map(|s| (1, s)).chain([(2, 100), (2, 101)]) {
            let p = from(input, s);
            assert!(m.admit(&p, input, 3));
            signals.push(m.charge(&p, input, 3, 0));
        }
        assert_eq!(signals[6], Signal::Pause { port: 1, prio: 3 });
        assert_eq!((m.charged(1, 3), m.charged(2, 3)), (7_000, 2_000));
        let order = [(1, 0), (2, 100), (1, 1), (2, 101), (1, 2)];
        let released: Vec<Signal> = order
            .iter()
            .map(|&(input, s)| m.release(&from(input, s), 3, Some(input)))
            .collect();
        let resume = Signal::Resume { port: 1, prio: 3 };
        assert_eq!(released[..4], [Signal::None; 4]);
        assert_eq!(released[4], resume);
        assert_eq!((m.charged(1, 3), m.charged(2, 3)), (4_000, 0));
    }

    /// Egress admission on the shared pool of `shared_cfg` (72 000 B after
    /// the set-aside, ingress alpha 0.5) with `egress_alpha` 0.25 and the
    /// default 1049 B guarantee. Lossy 1000-byte packets alternate between
    /// inputs 0 and 1 into output 1. After N are queued the egress limit is
    /// 1049 + 0.25 x (72 000 − 1000N), so packet N + 1 needs
    /// 1000(N + 1) ≤ 19 049 − 250N, i.e. N ≤ 14: 15 are admitted and the
    /// 16th is an egress drop. Without egress admission each input meets
    /// only its ingress threshold, 1000(n + 1) ≤ 0.5 x (72 000 − 2000n),
    /// i.e. n ≤ 17 per input: 36 are admitted. Output 0 still takes a lossy
    /// packet (its own queue is empty), a lossless one still goes to output
    /// 1, and one departure from output 1 (14 000 B queued, limit
    /// 1049 + 0.25 x 58 000 = 15 549) lets the next one in.
    #[test]
    fn egress_admission_drops_lossy_packets_past_the_egress_threshold() {
        let run = |egress_alpha: Option<f64>| {
            let mut c = shared_cfg(0);
            c.egress_alpha = egress_alpha;
            assert!(c.validate("switch.pfc", 1064).is_ok());
            let mut m = Mmu::new(&c, 2, false);
            let mut admitted = 0;
            for s in 0..40 {
                let (p, input) = (data(s, 0), (s % 2) as u16);
                if m.admit(&p, input, 1) {
                    assert_eq!(m.charge(&p, input, 1, 0), Signal::None);
                    admitted += 1;
                }
            }
            (m, admitted)
        };
        let (plain, n) = run(None);
        assert_eq!((n, plain.counters.egress_drops), (36, 0));
        let (mut m, n) = run(Some(0.25));
        assert_eq!(n, 15);
        assert_eq!((m.counters.egress_drops, m.counters.buffer_drops), (25, 0));
        assert!(
            m.admit(&data(100, 0), 1, 0),
            "another output's queue is empty"
        );
        assert!(
            m.admit(&data(101, 3), 0, 1),
            "lossless: never refused at the egress"
        );
        assert!(!m.admit(&data(102, 0), 0, 1));
        assert_eq!(m.release(&data(0, 0), 1, None), Signal::None);
        assert!(m.admit(&data(103, 0), 0, 1), "room after one departure");
    }

    #[test]
    fn egress_admission_needs_a_shared_pool_and_a_positive_alpha() {
        let e = |c: PfcConfig| c.validate("switch.pfc", 1064).unwrap_err().to_string();
        let mut c = cfg();
        c.egress_alpha = Some(1.0);
        let msg = e(c);
        assert!(
            msg.contains("switch.pfc.egress_alpha") && msg.contains("shared"),
            "{msg}"
        );
        let mut c = shared_cfg(0);
        c.egress_alpha = Some(0.0);
        assert!(e(c).contains("switch.pfc.egress_alpha"));
    }

    /// `lossless = []`: the accounting alone, the thesis's switch without
    /// PFC. Each input port holds 240 000 B ([TH] §4.3.1): 240 packets of
    /// 1000 B from input 0 are admitted, the 241st is dropped, input 1 still
    /// has its own 240 000 B, and nothing ever pauses.
    #[test]
    fn without_lossless_priorities_each_input_holds_its_buffer_and_never_pauses() {
        let c = PfcConfig {
            enabled: true,
            lossless: vec![],
            ..Default::default()
        };
        assert!(c.validate("switch.pfc", 1064).is_ok());
        let mut m = Mmu::new(&c, 2, true);
        let mut admitted = [0u32; 2];
        for input in [0u16, 1] {
            for s in 0..241 {
                let p = data(s, 0);
                if m.admit(&p, input, 1 - input) {
                    admitted[input as usize] += 1;
                    assert_eq!(m.charge(&p, input, 1 - input, 0), Signal::None);
                }
            }
        }
        assert_eq!(admitted, [240, 240]);
        assert_eq!(m.counters.buffer_drops, 2);
    }

    /// Control packets are neither charged nor paused for.
    #[test]
    fn control_packets_are_not_charged() {
        let mut m = Mmu::new(&cfg(), 2, false);
        let mut ack = test_packet(PacketKind::Ack, 0, 64);
        ack.prio = 3;
        for _ in 0..1000 {
            assert!(m.admit(&ack, 0, 1));
            assert_eq!(m.charge(&ack, 0, 1, 0), Signal::None);
        }
        assert_eq!(m.charged(0, 3), 0);
    }

    /// Timed pause: a still-congested input refreshes its PAUSE on an
    /// arrival once half the pause time has passed, not before.
    #[test]
    fn timed_pause_is_refreshed_after_half_its_time() {
        let mut c = cfg();
        c.pause_time_us = Some(4.0);
        let mut m = Mmu::new(&c, 2, false);
        let mut pauses = Vec::new();
        for (s, t) in [0u64, 1, 2, 3, 4, 5, 6, 7, 8].iter().enumerate() {
            let now = t * 500_000; // every 0.5 µs
            let p = data(s as u64, 3);
            assert!(m.admit(&p, 0, 1));
            if m.charge(&p, 0, 1, now) != Signal::None {
                pauses.push(now);
            }
        }
        // Paused at the 7th packet (3.0 µs); refreshed 2 µs later (5.0 µs)... but
        // only 9 packets arrive, the last at 4.0 µs: one pause.
        assert_eq!(pauses, [3_000_000]);
        for (s, now) in (9..12).zip([5_000_000u64, 5_500_000, 6_000_000]) {
            let p = data(s, 3);
            if m.admit(&p, 0, 1) && m.charge(&p, 0, 1, now) != Signal::None {
                pauses.push(now);
            }
        }
        assert_eq!(pauses, [3_000_000, 5_000_000]);
    }

    #[test]
    fn validation_names_the_key() {
        let mtu = 1064;
        let e = |c: PfcConfig| c.validate("switch.pfc", mtu).unwrap_err().to_string();
        let mut c = cfg();
        c.headroom_bytes = 100;
        assert!(e(c).contains("switch.pfc.headroom_bytes"));
        let mut c = cfg();
        c.xoff_bytes = Some(9_000);
        assert!(e(c).contains("switch.pfc.xoff_bytes"));
        let mut c = cfg();
        c.lossless = vec![8];
        assert!(e(c).contains("switch.pfc.lossless"));
        let mut c = cfg();
        c.alpha = -1.0;
        assert!(e(c).contains("switch.pfc.alpha"));
        assert!(cfg().validate("switch.pfc", mtu).is_ok());
        assert!(PfcConfig::default().validate("switch.pfc", mtu).is_ok());
    }
}
