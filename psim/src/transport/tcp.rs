//! TCP NewReno with SACK, DCTCP and MPTCP: the window-based baselines of the
//! NDP paper ([P] §6.1, spec §1.3 and A18).
//!
//! One sender state machine, [`Subflow`], implements a TCP byte stream:
//! slow start and congestion avoidance (RFC 5681, with appropriate byte
//! counting, RFC 3465, L = 2), fast retransmit and SACK-based loss recovery
//! (RFC 6675's pipe, IsLost and NextSeg), NewReno's partial-ACK rule
//! (RFC 6582), and a retransmission timer (RFC 6298) with a settable
//! minimum and exponential back-off. Its congestion response is one of
//! Reno (halve on loss, and on ECN echo when `ecn` is on, RFC 3168),
//! DCTCP ([`super::dctcp`]) or LIA ([`super::mptcp`]). A [`TcpSource`] runs
//! one subflow for TCP and DCTCP, or n coupled ones for MPTCP. The receiver,
//! [`TcpSink`], keeps per-subflow reassembly state, ACKs every segment or
//! every second one (delayed ACK, RFC 5681 §4.2, RFC 8257 §3.2 for CE
//! changes), and echoes the sender's timestamp (RFC 7323) and CE marks.
//!
//! | parameter (`[protocol.tcp]`, shared by tcp, dctcp, mptcp) | default | source |
//! |---|---|---|
//! | `mss_bytes` (payload; + 64 B header on the wire) | 9000 | [P] §6 (9 KB jumbograms, as for NDP); spec A2 |
//! | `iw_packets` | 10 | RFC 6928; [P] gives none (A18) |
//! | `min_rto_us` | 200000 (200 ms) | Linux `TCP_RTO_MIN`, [P] §5.1; set e.g. 1000 for datacenter tuning |
//! | `initial_rto_us` | 1000000 (1 s) | RFC 6298 §2.1 (the RTO before any RTT sample; never below `min_rto_us`) |
//! | `max_rto_us` | 60000000 (60 s) | RFC 6298 §2.5 |
//! | `dupack_threshold` | 3 | RFC 5681 §3.2 / RFC 6675 DupThresh |
//! | `early_retransmit` | true | RFC 5827 (on by default in Linux since 3.5): with fewer than 4 segments outstanding and none new allowed, oseg − 1 duplicate ACKs signal a loss |
//! | `delayed_ack` | false (ACK every segment) | RFC 5681 §4.2 when true: every 2nd full segment, or after `delayed_ack_us` |
//! | `delayed_ack_us` | 40000 (40 ms) | Linux `TCP_DELACK_MIN` |
//! | `handshake` | false | [P] §5.1 (Linux TCP uses one); when true, SYN / SYN-ACK before data |
//! | `ecn` | false | RFC 3168 for plain TCP; DCTCP always uses ECN |
//! | `rwnd_packets` | 0 = unlimited | receiver window cap on the congestion window |
//!
//! Packet encoding: byte sequence numbers; a data packet's `ack` field
//! carries the connection's total length (so the receiver knows when the
//! flow is complete; `u64::MAX` for endless flows). An ACK carries the
//! cumulative ACK in `ack`, one SACK block (the start of the segment that
//! triggered it, which RFC 2018 §4 requires to be reported first) in `seq`,
//! the echoed timestamp in `sent_ps`, and ECE. MPTCP puts the subflow index
//! in the top 8 bits of `seq` (see [`sub_seq`]). A lost ACK loses its SACK
//! block; recovery then falls back on NewReno's partial-ACK rule or the RTO.
//!
//! Not modelled: Nagle, receive-window auto-tuning, PAWS, time-wait.

use super::dctcp::{DctcpAlpha, DctcpParams};
use super::mptcp::{LiaCoupling, MptcpParams, SubflowWindow};
use super::rtt::RttEstimator;
use super::{Ctx, FlowInfo, SinkStats, SourceStats};
use crate::packet::{flags, Packet, PacketKind, Protocol, HEADER_BYTES};
use rand::RngExt;
use std::collections::{BTreeMap, VecDeque};

/// TCP parameters (`[protocol.tcp]`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TcpParams {
    /// Payload bytes per full segment.
    pub mss_bytes: u32,
    /// Initial congestion window, segments.
    pub iw_packets: u32,
    /// Minimum retransmission timeout, ps.
    pub min_rto_ps: u64,
    /// Retransmission timeout before the first RTT sample, ps.
    pub initial_rto_ps: u64,
    /// Largest backed-off timeout, ps.
    pub max_rto_ps: u64,
    /// Duplicate ACKs (or SACKed segments above a hole) that signal a loss.
    pub dupack_threshold: u32,
    /// RFC 5827 early retransmit for windows under four segments.
    pub early_retransmit: bool,
    /// ACK every second segment.
    pub delayed_ack: bool,
    /// Delayed-ACK timer, ps.
    pub delayed_ack_ps: u64,
    /// SYN / SYN-ACK before the first data.
    pub handshake: bool,
    /// RFC 3168 ECN for plain TCP (halve once per window on ECE).
    pub ecn: bool,
    /// Receiver window, segments (0 = unlimited).
    pub rwnd_packets: u32,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams {
            mss_bytes: 9000,
            iw_packets: 10,
            min_rto_ps: 200_000_000_000,
            initial_rto_ps: 1_000_000_000_000,
            max_rto_ps: 60_000_000_000_000,
            dupack_threshold: 3,
            early_retransmit: true,
            delayed_ack: false,
            delayed_ack_ps: 40_000_000_000,
            handshake: false,
            ecn: false,
            rwnd_packets: 0,
        }
    }
}

/// Bits of `seq` below the MPTCP subflow index.
const SUB_SHIFT: u32 = 56;
const SEQ_MASK: u64 = (1 << SUB_SHIFT) - 1;

/// Encodes subflow `sub`'s byte sequence number `seq` into a packet's `seq`.
#[inline]
pub fn sub_seq(sub: u8, seq: u64) -> u64 {
    (sub as u64) << SUB_SHIFT | (seq & SEQ_MASK)
}

/// Splits a packet's `seq` into (subflow, byte sequence number).
#[inline]
pub fn split_seq(seq: u64) -> (u8, u64) {
    ((seq >> SUB_SHIFT) as u8, seq & SEQ_MASK)
}

/// The congestion response of a subflow.
#[derive(Clone, Debug)]
enum Cc {
    /// NewReno (RFC 5681 / 6582), ECN per RFC 3168 when enabled.
    Reno,
    /// DCTCP (RFC 8257).
    Dctcp(DctcpAlpha),
    /// MPTCP LIA: increase coupled across subflows (RFC 6356).
    Lia,
}

// Scoreboard flags of one segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETX: u8 = 4;

#[derive(Copy, Clone, Debug)]
struct Seg {
    len: u32,
    flags: u8,
}

impl Seg {
    /// RFC 6675 SetPipe: bytes this segment contributes to the pipe.
    #[inline]
    fn pipe(&self) -> u64 {
        if self.flags & SACKED != 0 {
            return 0;
        }
        let original = (self.flags & LOST == 0) as u64;
        let retx = (self.flags & RETX != 0) as u64;
        self.len as u64 * (original + retx)
    }
}

/// Where a subflow's new data comes from: the connection's unsent bytes.
#[derive(Clone, Debug)]
struct Supply {
    next: u64,
    total: Option<u64>,
    mss: u64,
}

impl Supply {
    fn take(&mut self) -> Option<u32> {
        let left = match self.total {
            Some(t) => t - self.next,
            None => self.mss,
        };
        if left == 0 {
            return None;
        }
        let n = left.min(self.mss);
        self.next += n;
        Some(n as u32)
    }
    fn remaining(&self) -> bool {
        self.total.is_none_or(|t| self.next < t)
    }
}

/// The sender side of one TCP byte stream.
#[derive(Clone, Debug)]
pub struct Subflow {
    id: u8,
    path: u32,
    mss: u64,
    /// Unacknowledged segments, from `snd_una` on.
    segs: VecDeque<Seg>,
    snd_una: u64,
    snd_nxt: u64,
    pipe: u64,
    /// Segments marked lost and not yet retransmitted.
    lost_pending: u32,
    /// Segments SACKed above the cumulative ACK.
    sacked: u32,
    /// Fast retransmit pending: sent whatever the pipe (RFC 6675 §5 (4.3)).
    fast_retx: bool,
    /// Congestion window and slow-start threshold, bytes.
    pub cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    in_recovery: bool,
    /// NewReno's `recover`: no new fast recovery until the ACK passes it.
    recover: u64,
    /// No further ECN cut until the ACK passes this (once per window).
    ecn_cut_until: u64,
    rtt: RttEstimator,
    backoff: u32,
    rto_at: Option<u64>,
    cc: Cc,
}

impl Subflow {
    fn new(id: u8, path: u32, p: &TcpParams, cc: Cc) -> Self {
        let mss = p.mss_bytes as u64;
        Subflow {
            id,
            path,
            mss,
            segs: VecDeque::new(),
            snd_una: 0,
            snd_nxt: 0,
            pipe: 0,
            lost_pending: 0,
            sacked: 0,
            fast_retx: false,
            cwnd: (p.iw_packets as u64 * mss) as f64,
            ssthresh: f64::INFINITY,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            ecn_cut_until: 0,
            rtt: RttEstimator::default(),
            backoff: 0,
            rto_at: None,
            cc,
        }
    }

    /// Bytes sent and not yet cumulatively acknowledged.
    fn flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// Retransmission timeout (RFC 6298 §2), before back-off.
    fn rto(&self, p: &TcpParams) -> u64 {
        // G = 1 ps: the clock's granularity.
        let base = self.rtt.rto(1).unwrap_or(p.initial_rto_ps);
        let rto = base.max(p.min_rto_ps);
        rto.saturating_mul(1 << self.backoff.min(20))
            .min(p.max_rto_ps.max(p.min_rto_ps))
    }

    /// Changes segment `i`'s flags, keeping `pipe` and `lost_pending` in step.
    fn set_flags(&mut self, i: usize, flags: u8) {
        let s = &mut self.segs[i];
        let pending = |f: u8| f & (LOST | RETX | SACKED) == LOST;
        self.pipe -= s.pipe();
        self.lost_pending -= pending(s.flags) as u32;
        self.sacked -= (s.flags & SACKED != 0) as u32;
        s.flags = flags;
        self.pipe += s.pipe();
        self.lost_pending += pending(s.flags) as u32;
        self.sacked += (s.flags & SACKED != 0) as u32;
    }

    /// RFC 6675 IsLost for every hole: a segment with `dupack_threshold` or
    /// more SACKed segments above it is marked lost.
    fn mark_losses(&mut self, thresh: u32) {
        let mut above = 0u32;
        for i in (0..self.segs.len()).rev() {
            let f = self.segs[i].flags;
            if f & SACKED != 0 {
                above += 1;
            } else if above >= thresh && f & LOST == 0 {
                self.set_flags(i, f | LOST);
            }
        }
    }

    /// Duplicate ACKs (or SACKed segments above a hole) that signal a loss:
    /// DupThresh, or with RFC 5827 early retransmit, when fewer than four
    /// segments are outstanding and no new one may be sent, one fewer than
    /// the outstanding segments (so that a small window, such as an MPTCP
    /// subflow's, recovers without waiting for the RTO).
    fn dup_threshold(&self, p: &TcpParams, more_data: bool) -> u32 {
        let oseg = self.segs.len() as u32;
        let can_send = more_data && (self.pipe + self.mss) as f64 <= self.cwnd;
        if p.early_retransmit && oseg < 4 && !can_send {
            oseg.saturating_sub(1).clamp(1, p.dupack_threshold)
        } else {
            p.dupack_threshold
        }
    }

    fn enter_recovery(&mut self) {
        self.in_recovery = true;
        self.recover = self.snd_nxt;
        self.halve();
        self.cwnd = self.ssthresh;
        if let Some(f) = self.segs.front().map(|s| s.flags) {
            if f & SACKED == 0 {
                self.set_flags(0, (f | LOST) & !RETX);
                self.fast_retx = true;
            }
        }
    }

    /// ssthresh = max(FlightSize / 2, 2 MSS) (RFC 5681 (4)).
    fn halve(&mut self) {
        self.ssthresh = ((self.flight() / 2).max(2 * self.mss)) as f64;
    }

    /// Handles an ACK. `lia` is the coupling for MPTCP.
    fn on_ack(
        &mut self,
        a: AckInfo,
        now: u64,
        p: &TcpParams,
        lia: Option<LiaCoupling>,
        more_data: bool,
    ) {
        let AckInfo {
            ack,
            sack,
            ece,
            echo,
        } = a;
        let mut acked = 0u64;
        if ack > self.snd_una && ack <= self.snd_nxt {
            while self.snd_una < ack {
                let Some(s) = self.segs.pop_front() else {
                    break;
                };
                self.pipe -= s.pipe();
                self.lost_pending -= (s.flags & (LOST | RETX | SACKED) == LOST) as u32;
                self.sacked -= (s.flags & SACKED != 0) as u32;
                self.snd_una += s.len as u64;
                acked += s.len as u64;
            }
            if now >= echo {
                self.rtt.sample(now - echo);
            }
            self.backoff = 0;
            self.dupacks = 0;
            self.rto_at = if self.segs.is_empty() {
                None
            } else {
                Some(now + self.rto(p))
            };
        } else if ack == self.snd_una && !self.segs.is_empty() && sack >= ack {
            self.dupacks += 1;
        }
        // The SACK block: the segment starting at `sack`.
        if sack >= self.snd_una && sack < self.snd_nxt {
            let mut at = self.snd_una;
            for i in 0..self.segs.len() {
                if at == sack {
                    let f = self.segs[i].flags;
                    if f & SACKED == 0 {
                        self.set_flags(i, f | SACKED);
                    }
                    break;
                }
                at += self.segs[i].len as u64;
                if at > sack {
                    break;
                }
            }
        }
        // Congestion response to ECN echoes.
        let mut ecn_cut = false;
        match &mut self.cc {
            Cc::Dctcp(d) => {
                d.on_ack(acked, ece, self.snd_una, self.snd_nxt);
                if ece && self.snd_una >= self.ecn_cut_until && !self.in_recovery {
                    self.cwnd = d.cut(self.cwnd).max(self.mss as f64);
                    self.ssthresh = self.cwnd;
                    ecn_cut = true;
                }
            }
            Cc::Reno | Cc::Lia => {
                if ece && p.ecn && self.snd_una >= self.ecn_cut_until && !self.in_recovery {
                    self.halve();
                    self.cwnd = self.ssthresh;
                    ecn_cut = true;
                }
            }
        }
        if ecn_cut {
            self.ecn_cut_until = self.snd_nxt;
        }
        // Loss detection and recovery (RFC 6675 §5, RFC 6582).
        if self.in_recovery {
            if self.snd_una >= self.recover {
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
            } else if acked > 0 {
                // Partial ACK: the next hole is lost too (NewReno).
                if let Some(f) = self.segs.front().map(|s| s.flags) {
                    if f & (SACKED | LOST) == 0 {
                        self.set_flags(0, f | LOST);
                    }
                }
            }
        }
        let thresh = self.dup_threshold(p, more_data);
        if self.sacked > 0 {
            self.mark_losses(thresh);
        }
        let front_lost = self.segs.front().is_some_and(|s| s.flags & LOST != 0);
        if !self.in_recovery
            && self.snd_una >= self.recover
            && (self.dupacks >= thresh || front_lost)
            && !self.segs.is_empty()
        {
            self.enter_recovery();
        } else if !self.in_recovery && acked > 0 && !ecn_cut {
            self.grow(acked, lia);
        }
        if p.rwnd_packets > 0 {
            self.cwnd = self.cwnd.min((p.rwnd_packets as u64 * self.mss) as f64);
        }
    }

    /// Window growth for `acked` new bytes.
    fn grow(&mut self, acked: u64, lia: Option<LiaCoupling>) {
        let mss = self.mss as f64;
        if self.cwnd < self.ssthresh {
            // Slow start with appropriate byte counting, L = 2 (RFC 3465).
            self.cwnd += (acked as f64).min(2.0 * mss);
        } else {
            let inc = match (&self.cc, lia) {
                (Cc::Lia, Some(c)) => c.increase(self.cwnd, acked as f64, mss),
                _ => acked as f64 * mss / self.cwnd,
            };
            self.cwnd += inc;
        }
    }

    /// The retransmission timer fired (RFC 6298 §5.4–5.7, RFC 6675 §5.1).
    fn on_rto(&mut self, now: u64, p: &TcpParams) {
        if self.segs.is_empty() {
            self.rto_at = None;
            return;
        }
        self.halve();
        self.cwnd = self.mss as f64;
        self.backoff += 1;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = self.snd_nxt;
        for i in 0..self.segs.len() {
            let f = self.segs[i].flags;
            if f & SACKED == 0 {
                self.set_flags(i, LOST);
            }
        }
        self.rto_at = Some(now + self.rto(p));
    }

    /// Sends what the window allows: lost segments first (RFC 6675 NextSeg
    /// rule 1), then new data from `supply`. Appends (sequence, length,
    /// retransmission) to `sends`.
    fn fill(&mut self, supply: &mut Supply, now: u64, p: &TcpParams, sends: &mut Vec<Send>) {
        let cwnd = self.cwnd.max(self.mss as f64) as u64;
        loop {
            if self.lost_pending > 0 {
                let mut at = self.snd_una;
                let mut hit = None;
                for i in 0..self.segs.len() {
                    if self.segs[i].flags & (LOST | RETX | SACKED) == LOST {
                        hit = Some((i, at));
                        break;
                    }
                    at += self.segs[i].len as u64;
                }
                let Some((i, seq)) = hit else {
                    // The count and the scoreboard disagree: a bug, but not
                    // one worth ending a long run for; trust the scoreboard.
                    debug_assert!(false, "lost_pending counts a lost segment");
                    self.lost_pending = 0;
                    continue;
                };
                let len = self.segs[i].len as u64;
                if self.pipe + len > cwnd && !self.fast_retx {
                    break;
                }
                self.fast_retx = false;
                let f = self.segs[i].flags;
                self.set_flags(i, f | RETX);
                sends.push(Send {
                    sub: self.id,
                    path: self.path,
                    seq,
                    len: len as u32,
                    retx: true,
                    last: false,
                });
                continue;
            }
            if self.pipe + self.mss > cwnd || !supply.remaining() {
                break;
            }
            let Some(len) = supply.take() else { break };
            let seg = Seg { len, flags: 0 };
            self.pipe += seg.pipe();
            self.segs.push_back(seg);
            sends.push(Send {
                sub: self.id,
                path: self.path,
                seq: self.snd_nxt,
                len,
                retx: false,
                last: !supply.remaining() && supply.total.is_some(),
            });
            self.snd_nxt += len as u64;
        }
        if self.rto_at.is_none() && !self.segs.is_empty() {
            self.rto_at = Some(now + self.rto(p));
        }
    }

    /// What LIA needs of this subflow; `fallback_rtt` stands in for a
    /// missing (or zero) smoothed RTT.
    fn window(&self, fallback_rtt: u64) -> SubflowWindow {
        let rtt = self.rtt.srtt().filter(|&r| r > 0).unwrap_or(fallback_rtt);
        SubflowWindow {
            cwnd: self.cwnd,
            rtt_ps: rtt as f64,
        }
    }
}

/// What an ACK tells the sender.
#[derive(Copy, Clone, Debug)]
struct AckInfo {
    /// Cumulative ACK: the next byte expected.
    ack: u64,
    /// Start of the SACKed segment that triggered the ACK.
    sack: u64,
    /// ECN echo.
    ece: bool,
    /// Echoed send time of the data (RFC 7323 TSecr).
    echo: u64,
}

/// One segment to put on the wire.
#[derive(Copy, Clone, Debug)]
struct Send {
    sub: u8,
    path: u32,
    seq: u64,
    len: u32,
    retx: bool,
    /// Carries the connection's last byte (first transmission only).
    last: bool,
}

/// Connection set-up state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Setup {
    /// SYN sent at this time, awaiting the SYN-ACK.
    SynSent { at: u64, deadline: u64, tries: u32 },
    /// Data may flow.
    Established,
}

/// Sender of a TCP, DCTCP or MPTCP flow.
#[derive(Clone, Debug)]
pub struct TcpSource {
    info: FlowInfo,
    proto: Protocol,
    p: TcpParams,
    subs: Vec<Subflow>,
    supply: Supply,
    setup: Setup,
    ect: bool,
    /// Scratch: segments to send, and the subflow order (reused, not reallocated per ACK).
    sends: Vec<Send>,
    order: Vec<usize>,
    /// Counters.
    pub stats: SourceStats,
}

impl TcpSource {
    /// A sender for `flow`.
    pub fn new(
        flow: &FlowInfo,
        proto: Protocol,
        p: &TcpParams,
        dctcp: &DctcpParams,
        mptcp: &MptcpParams,
    ) -> Self {
        let (n, ect) = match proto {
            Protocol::Mptcp => (mptcp.subflows.clamp(1, 255), p.ecn),
            Protocol::Dctcp => (1, true),
            _ => (1, p.ecn),
        };
        let subs = (0..n)
            .map(|i| {
                let cc = match proto {
                    Protocol::Dctcp => Cc::Dctcp(DctcpAlpha::new(dctcp)),
                    Protocol::Mptcp => Cc::Lia,
                    _ => Cc::Reno,
                };
                // Paths are assigned at start (MPTCP shuffles them with the host's stream).
                Subflow::new(i as u8, flow.ecmp_path, p, cc)
            })
            .collect();
        TcpSource {
            info: flow.clone(),
            proto,
            p: p.clone(),
            subs,
            supply: Supply {
                next: 0,
                total: flow.size,
                mss: p.mss_bytes as u64,
            },
            setup: Setup::Established,
            ect,
            sends: Vec::new(),
            order: Vec::new(),
            stats: SourceStats::default(),
        }
    }

    /// Number of subflows.
    pub fn subflows(&self) -> usize {
        self.subs.len()
    }

    /// Congestion window of subflow `i`, bytes.
    pub fn cwnd(&self, i: usize) -> f64 {
        self.subs[i].cwnd
    }

    fn control(&self, path: u32, now: u64, fl: u8) -> Packet {
        Packet {
            flow: self.info.id,
            src: self.info.src,
            dst: self.info.dst,
            seq: 0,
            ack: 0,
            size: HEADER_BYTES,
            payload: 0,
            path,
            sent_ps: now,
            kind: PacketKind::Ack,
            proto: self.proto,
            flags: fl,
            prio: self.info.prio,
            rank: 0,
        }
    }

    pub(super) fn on_start(&mut self, cx: &mut Ctx<'_>) {
        if self.subs.len() > 1 {
            // Subflow i on path i of a shuffled list: distinct paths while there are enough.
            let n = self.info.num_paths.max(1);
            let mut paths: Vec<u32> = (0..n).collect();
            for i in (1..paths.len()).rev() {
                let j = cx.rng.random_range(0..=i);
                paths.swap(i, j);
            }
            for (i, s) in self.subs.iter_mut().enumerate() {
                s.path = paths[i % paths.len()];
            }
        }
        if self.p.handshake {
            let rto = self.subs[0].rto(&self.p);
            self.setup = Setup::SynSent {
                at: cx.now,
                deadline: cx.now + rto,
                tries: 0,
            };
            cx.out
                .push(self.control(self.subs[0].path, cx.now, flags::SYN));
            self.stats.packets_sent += 1;
            return;
        }
        self.pump(cx);
    }

    /// Lets every subflow send what its window allows; new data goes to the
    /// subflow with the lowest smoothed RTT first.
    fn pump(&mut self, cx: &mut Ctx<'_>) {
        if self.setup != Setup::Established {
            return;
        }
        let mut sends = std::mem::take(&mut self.sends);
        if self.subs.len() == 1 {
            self.subs[0].fill(&mut self.supply, cx.now, &self.p, &mut sends);
        } else {
            let mut order = std::mem::take(&mut self.order);
            order.clear();
            order.extend(0..self.subs.len());
            order.sort_by_key(|&i| (self.subs[i].rtt.srtt().unwrap_or(0), i));
            for &i in &order {
                self.subs[i].fill(&mut self.supply, cx.now, &self.p, &mut sends);
            }
            self.order = order;
        }
        let total = self.info.size.unwrap_or(u64::MAX);
        for s in sends.drain(..) {
            let mut f = if self.ect { flags::ECT } else { 0 };
            if s.retx {
                f |= flags::RETX;
                self.stats.retransmissions += 1;
            }
            if s.last {
                f |= flags::LAST;
            }
            cx.out.push(Packet {
                flow: self.info.id,
                src: self.info.src,
                dst: self.info.dst,
                seq: sub_seq(s.sub, s.seq),
                ack: total,
                size: s.len + HEADER_BYTES,
                payload: s.len,
                path: s.path,
                sent_ps: cx.now,
                kind: PacketKind::Data,
                proto: self.proto,
                flags: f,
                prio: self.info.prio,
                rank: 0,
            });
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += s.len as u64;
        }
        self.sends = sends;
    }

    pub(super) fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        if pkt.kind != PacketKind::Ack {
            return;
        }
        if pkt.has(flags::SYN) {
            if let Setup::SynSent { at, .. } = self.setup {
                self.setup = Setup::Established;
                self.subs[0].rtt.sample(cx.now - at);
                let rtt = self.subs[0].rtt;
                for s in &mut self.subs[1..] {
                    s.rtt = rtt;
                }
                self.pump(cx);
            }
            return;
        }
        let (sub, sack) = split_seq(pkt.seq);
        let i = sub as usize;
        if i >= self.subs.len() {
            return;
        }
        let lia = (self.subs.len() > 1).then(|| {
            // A subflow without an RTT sample counts with the best one (1 µs before any).
            let best = self
                .subs
                .iter()
                .filter_map(|s| s.rtt.srtt())
                .min()
                .unwrap_or(1_000_000);
            LiaCoupling::new(self.subs.iter().map(|s| s.window(best)))
        });
        let ece = pkt.has(flags::ECE);
        let a = AckInfo {
            ack: pkt.ack,
            sack,
            ece,
            echo: pkt.sent_ps,
        };
        let more_data = self.supply.remaining();
        self.subs[i].on_ack(a, cx.now, &self.p, lia, more_data);
        self.pump(cx);
    }

    pub(super) fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        if let Setup::SynSent {
            deadline, tries, ..
        } = self.setup
        {
            if cx.now >= deadline {
                // Lost SYN or SYN-ACK: resend with a doubled timeout (RFC 6298 §5.7).
                let tries = tries + 1;
                let rto = self.subs[0]
                    .rto(&self.p)
                    .saturating_mul(1 << tries.min(20))
                    .min(self.p.max_rto_ps);
                self.setup = Setup::SynSent {
                    at: cx.now,
                    deadline: cx.now + rto,
                    tries,
                };
                self.stats.timeouts += 1;
                self.stats.retransmissions += 1;
                cx.out
                    .push(self.control(self.subs[0].path, cx.now, flags::SYN | flags::RETX));
                self.stats.packets_sent += 1;
            }
            return;
        }
        for i in 0..self.subs.len() {
            if self.subs[i].rto_at.is_some_and(|t| t <= cx.now) {
                self.stats.timeouts += 1;
                self.subs[i].on_rto(cx.now, &self.p);
            }
        }
        self.pump(cx);
    }

    pub(super) fn poll_at(&self) -> Option<u64> {
        match self.setup {
            Setup::SynSent { deadline, .. } => Some(deadline),
            Setup::Established => self.subs.iter().filter_map(|s| s.rto_at).min(),
        }
    }
}

/// Receive state of one subflow.
#[derive(Clone, Debug, Default)]
struct RecvState {
    rcv_nxt: u64,
    /// Out-of-order ranges [start, end), merged.
    ooo: BTreeMap<u64, u64>,
    /// In-order segments received since the last ACK (delayed ACK).
    unacked: u32,
    /// Timestamp to echo: the earliest unacknowledged segment's (RFC 7323 §4.3).
    echo: u64,
    /// CE state of the last segment (DCTCP receiver, RFC 8257 §3.2).
    ce: bool,
    path: u32,
    last_seq: u64,
}

/// Receiver of a TCP, DCTCP or MPTCP flow.
#[derive(Clone, Debug)]
pub struct TcpSink {
    flow: u64,
    sender: u32,
    me: u32,
    proto: Protocol,
    prio: u8,
    subs: Vec<RecvState>,
    total: Option<u64>,
    delayed: bool,
    delay_ps: u64,
    ack_at: Option<u64>,
    /// Counters.
    pub stats: SinkStats,
}

impl TcpSink {
    /// A receiver for the flow of `first`.
    pub fn new(first: &Packet, p: &TcpParams) -> Self {
        TcpSink {
            flow: first.flow,
            sender: first.src,
            me: first.dst,
            proto: first.proto,
            prio: first.prio,
            subs: Vec::new(),
            total: None,
            delayed: p.delayed_ack,
            delay_ps: p.delayed_ack_ps,
            ack_at: None,
            stats: SinkStats::default(),
        }
    }

    fn ack(&self, sub: u8, sack: u64, ece: bool) -> Packet {
        let r = &self.subs[sub as usize];
        Packet {
            flow: self.flow,
            src: self.me,
            dst: self.sender,
            seq: sub_seq(sub, sack),
            ack: r.rcv_nxt,
            size: HEADER_BYTES,
            payload: 0,
            path: r.path,
            sent_ps: r.echo,
            kind: PacketKind::Ack,
            proto: self.proto,
            flags: if ece { flags::ECE } else { 0 },
            prio: self.prio,
            rank: 0,
        }
    }

    fn delivered(&self) -> u64 {
        self.subs.iter().map(|s| s.rcv_nxt).sum()
    }

    pub(super) fn on_packet(&mut self, pkt: Packet, cx: &mut Ctx<'_>) {
        self.stats.packets_received += 1;
        if pkt.kind == PacketKind::Ack && pkt.has(flags::SYN) {
            // SYN: answer with a SYN-ACK on the same path.
            let mut r = pkt.clone();
            r.src = self.me;
            r.dst = self.sender;
            r.flags = flags::SYN;
            r.sent_ps = cx.now;
            cx.out.push(r);
            return;
        }
        if pkt.kind != PacketKind::Data {
            return;
        }
        let (sub, start) = split_seq(pkt.seq);
        if self.subs.len() <= sub as usize {
            self.subs.resize(sub as usize + 1, RecvState::default());
        }
        if pkt.ack != u64::MAX {
            self.total = Some(pkt.ack);
        }
        let end = start + pkt.payload as u64;
        let ce = pkt.has(flags::ECN_CE);
        // DCTCP (RFC 8257 §3.2): on a change of CE state, ACK what came before at once.
        let r = &self.subs[sub as usize];
        if self.delayed && ce != r.ce && r.unacked > 0 {
            cx.out.push(self.ack(sub, r.last_seq, r.ce));
            self.subs[sub as usize].unacked = 0;
        }
        let r = &mut self.subs[sub as usize];
        r.path = pkt.path;
        let mut immediate = !self.delayed;
        r.ce = ce;
        r.last_seq = start;
        let mut new_bytes = 0u64;
        if end <= r.rcv_nxt {
            immediate = true; // duplicate: ACK at once (RFC 5681 §4.2)
            r.echo = pkt.sent_ps;
        } else if start <= r.rcv_nxt {
            new_bytes += end - r.rcv_nxt;
            r.rcv_nxt = end;
            let filled_hole = !r.ooo.is_empty();
            while let Some((&s, &e)) = r.ooo.first_key_value() {
                if s > r.rcv_nxt {
                    break;
                }
                r.ooo.pop_first();
                if e > r.rcv_nxt {
                    r.rcv_nxt = e;
                }
            }
            if filled_hole {
                immediate = true; // RFC 5681 §4.2: ACK at once when a hole is filled
            }
            if r.unacked == 0 {
                r.echo = pkt.sent_ps;
            }
            r.unacked += 1;
            if r.unacked >= 2 {
                immediate = true;
            }
        } else {
            // Out of order: remember the range, ACK at once (a duplicate ACK with SACK).
            let overlaps = r
                .ooo
                .range(..=start)
                .next_back()
                .is_some_and(|(_, &e)| e >= end);
            if !overlaps {
                new_bytes += pkt.payload as u64;
                let e = r.ooo.entry(start).or_insert(end);
                *e = (*e).max(end);
            }
            r.echo = pkt.sent_ps;
            immediate = true;
        }
        self.stats.bytes_received += new_bytes;
        let complete = self.total.is_some_and(|t| self.delivered() >= t);
        if complete && self.stats.finish_ps.is_none() {
            self.stats.finish_ps = Some(cx.now);
        }
        if immediate || complete {
            cx.out.push(self.ack(sub, start, ce));
            let r = &mut self.subs[sub as usize];
            r.unacked = 0;
            r.echo = 0;
            if self.subs.iter().all(|s| s.unacked == 0) {
                self.ack_at = None;
            }
        } else if self.ack_at.is_none() {
            self.ack_at = Some(cx.now + self.delay_ps);
        }
    }

    pub(super) fn on_timer(&mut self, cx: &mut Ctx<'_>) {
        if self.ack_at.is_some_and(|t| t <= cx.now) {
            self.ack_at = None;
            for sub in 0..self.subs.len() {
                if self.subs[sub].unacked > 0 {
                    let r = &self.subs[sub];
                    let a = self.ack(sub as u8, r.last_seq, r.ce);
                    cx.out.push(a);
                    let r = &mut self.subs[sub];
                    r.unacked = 0;
                    r.echo = 0;
                }
            }
        }
    }

    pub(super) fn poll_at(&self) -> Option<u64> {
        self.ack_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::pull::PullQueue;

    const MSS: u64 = 9000;
    /// One-way delay of the scripted network, ps (a 20 µs RTT).
    const DELAY: u64 = 10_000_000;

    fn info(size: Option<u64>) -> FlowInfo {
        FlowInfo {
            id: 1,
            src: 0,
            dst: 5,
            size,
            start_ps: 0,
            prio: 0,
            num_paths: 16,
            ecmp_path: 3,
            nic_bps: 10_000_000_000,
            ideal_fct_ps: None,
        }
    }

    fn params() -> TcpParams {
        TcpParams {
            min_rto_ps: 1_000_000_000, // 1 ms
            initial_rto_ps: 1_000_000_000,
            ..TcpParams::default()
        }
    }

    /// A sender and a receiver joined by a lossless, fixed-delay, infinitely
    /// fast scripted network; `drop` decides which data transmissions vanish
    /// and `mark` which get CE.
    struct Net {
        src: TcpSource,
        sink: Option<TcpSink>,
        p: TcpParams,
        now: u64,
        /// (arrival time, order, towards the sink?, packet)
        wire: std::collections::BTreeMap<(u64, u64), (bool, Packet)>,
        order: u64,
        rng: crate::rng::Rng,
        pulls: PullQueue,
        /// Data transmissions seen, in order: (time, seq, retransmission?).
        sent: Vec<(u64, u64, bool)>,
        acks_to_source: u64,
        /// Drop every n-th ACK on its way back (0: none).
        ack_drop_every: u64,
        acks_shipped: u64,
    }

    impl Net {
        fn new(proto: Protocol, p: TcpParams, size: Option<u64>) -> Self {
            let src = TcpSource::new(
                &info(size),
                proto,
                &p,
                &DctcpParams::default(),
                &MptcpParams::default(),
            );
            Net {
                src,
                sink: None,
                p,
                now: 0,
                wire: Default::default(),
                order: 0,
                rng: crate::rng::stream_rng(3, 3),
                pulls: PullQueue::default(),
                sent: Vec::new(),
                acks_to_source: 0,
                ack_drop_every: 0,
                acks_shipped: 0,
            }
        }

        fn ship(
            &mut self,
            out: Vec<Packet>,
            to_sink: bool,
            drop: &mut dyn FnMut(&Packet) -> bool,
            mark: &mut dyn FnMut(&Packet) -> bool,
        ) {
            for mut p in out {
                if to_sink && p.kind == PacketKind::Data {
                    self.sent
                        .push((self.now, split_seq(p.seq).1, p.has(flags::RETX)));
                    if drop(&p) {
                        continue;
                    }
                    if mark(&p) {
                        p.flags |= flags::ECN_CE;
                    }
                }
                if !to_sink {
                    self.acks_shipped += 1;
                    if self.ack_drop_every > 0
                        && self.acks_shipped.is_multiple_of(self.ack_drop_every)
                    {
                        continue;
                    }
                }
                self.order += 1;
                self.wire
                    .insert((self.now + DELAY, self.order), (to_sink, p));
            }
        }

        /// Runs until `until` or until nothing is pending.
        fn run(
            &mut self,
            until: u64,
            drop: &mut dyn FnMut(&Packet) -> bool,
            mark: &mut dyn FnMut(&Packet) -> bool,
        ) {
            let mut out = Vec::new();
            if self.now == 0 && self.sent.is_empty() {
                self.src
                    .on_start(&mut ctx(0, &mut out, &mut self.rng, &mut self.pulls));
                self.ship(std::mem::take(&mut out), true, drop, mark);
            }
            loop {
                let next_wire = self.wire.keys().next().map(|k| k.0);
                let timers = [
                    self.src.poll_at(),
                    self.sink.as_ref().and_then(|s| s.poll_at()),
                ];
                let next_timer = timers.iter().flatten().min().copied();
                let Some(t) = [next_wire, next_timer].into_iter().flatten().min() else {
                    return;
                };
                if t > until {
                    return;
                }
                self.now = t;
                if next_wire == Some(t) {
                    let (_, (to_sink, pkt)) = self.wire.pop_first().expect("pending");
                    let mut cx = ctx(t, &mut out, &mut self.rng, &mut self.pulls);
                    if to_sink {
                        self.sink
                            .get_or_insert_with(|| TcpSink::new(&pkt, &self.p))
                            .on_packet(pkt, &mut cx);
                    } else {
                        self.acks_to_source += 1;
                        self.src.on_packet(pkt, &mut cx);
                    }
                    self.ship(std::mem::take(&mut out), !to_sink, drop, mark);
                } else {
                    let mut cx = ctx(t, &mut out, &mut self.rng, &mut self.pulls);
                    if self.src.poll_at() == Some(t) {
                        self.src.on_timer(&mut cx);
                        self.ship(std::mem::take(&mut out), true, drop, mark);
                    } else if let Some(s) = self.sink.as_mut() {
                        s.on_timer(&mut cx);
                        self.ship(std::mem::take(&mut out), false, drop, mark);
                    }
                }
            }
        }

        fn finish(&self) -> Option<u64> {
            self.sink.as_ref().and_then(|s| s.stats.finish_ps)
        }
    }

    /// The context of host 0, slot 0, on a 10 Gb/s NIC.
    fn ctx<'a>(
        now: u64,
        out: &'a mut Vec<Packet>,
        rng: &'a mut crate::rng::Rng,
        pulls: &'a mut PullQueue,
    ) -> Ctx<'a> {
        Ctx {
            now,
            host: 0,
            slot: 0,
            nic_bps: 10_000_000_000,
            out,
            rng,
            pulls,
        }
    }

    fn never(_: &Packet) -> bool {
        false
    }

    #[test]
    fn slow_start_doubles_the_window_each_round_trip() {
        let mut n = Net::new(Protocol::Tcp, params(), Some(1000 * MSS));
        // Round trip r sends iw * 2^r segments (every ACK adds one MSS).
        n.run(DELAY * 2 - 1, &mut never, &mut never);
        assert_eq!(n.sent.len(), 10);
        n.run(DELAY * 4 - 1, &mut never, &mut never);
        assert_eq!(n.sent.len(), 10 + 20);
        n.run(DELAY * 6 - 1, &mut never, &mut never);
        assert_eq!(n.sent.len(), 10 + 20 + 40);
        // ACKs of the first two rounds (30 segments) have arrived.
        assert!((n.src.cwnd(0) - 40.0 * MSS as f64).abs() < 1e-6);
    }

    #[test]
    fn a_lone_flow_delivers_every_byte_once_without_retransmitting() {
        let size = 100 * MSS + 123;
        let mut n = Net::new(Protocol::Tcp, params(), Some(size));
        n.run(u64::MAX, &mut never, &mut never);
        let sink = n.sink.as_ref().expect("sink");
        assert_eq!(sink.stats.bytes_received, size);
        assert_eq!(n.src.stats.retransmissions, 0);
        assert_eq!(n.src.stats.bytes_sent, size);
        assert!(n.finish().is_some());
        assert_eq!(
            n.src.poll_at(),
            None,
            "no timer left once everything is acked"
        );
    }

    /// RFC 5681 §3.2 / RFC 6675: one lost segment in a large window is
    /// repaired by fast retransmit after three duplicate ACKs, within one
    /// round trip and without a timeout; the window is halved once.
    #[test]
    fn one_lost_segment_triggers_fast_retransmit_and_recovery() {
        let size = 200 * MSS;
        let mut n = Net::new(Protocol::Tcp, params(), Some(size));
        let lost = 25 * MSS; // sent in the second round trip, with 19 more behind it
        let mut dropped = false;
        let mut drop = |p: &Packet| {
            let hit = !dropped && split_seq(p.seq).1 == lost;
            dropped |= hit;
            hit
        };
        n.run(u64::MAX, &mut drop, &mut never);
        let retx: Vec<_> = n.sent.iter().filter(|s| s.2).collect();
        assert_eq!(retx.len(), 1, "exactly one retransmission: {retx:?}");
        assert_eq!(retx[0].1, lost);
        let first = n.sent.iter().find(|s| s.1 == lost).expect("sent").0;
        // The retransmission leaves one RTT after the loss plus the three
        // segments' worth of duplicate ACKs (same instant in this zero-
        // serialisation network): well before the 1 ms RTO.
        assert!(
            retx[0].0 - first <= 2 * DELAY + 1,
            "{} ps",
            retx[0].0 - first
        );
        assert_eq!(n.src.stats.timeouts, 0);
        assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
        assert!(n.finish().is_some());
    }

    /// The last segment lost: no duplicate ACKs can follow, so only the
    /// retransmission timer recovers it (RFC 6298), after the minimum RTO.
    #[test]
    fn a_tail_loss_recovers_by_rto() {
        let size = 30 * MSS;
        let p = params();
        let mut n = Net::new(Protocol::Tcp, p.clone(), Some(size));
        let last = 29 * MSS;
        let mut dropped = false;
        let mut drop = |pk: &Packet| {
            let hit = !dropped && split_seq(pk.seq).1 == last;
            dropped |= hit;
            hit
        };
        n.run(u64::MAX, &mut drop, &mut never);
        assert_eq!(n.src.stats.timeouts, 1);
        let retx: Vec<_> = n.sent.iter().filter(|s| s.2).collect();
        assert_eq!(retx.len(), 1);
        assert_eq!(retx[0].1, last);
        let first = n.sent.iter().find(|s| s.1 == last).expect("sent").0;
        // The timer was (re)armed by the ACK of the segment before it, one RTT
        // after `first` at most, and runs for max(min RTO, srtt + 4 rttvar) = 1 ms.
        let gap = retx[0].0 - first;
        assert!(
            gap >= p.min_rto_ps && gap <= p.min_rto_ps + 2 * DELAY,
            "{gap}"
        );
        assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
        assert_eq!(n.finish(), Some(retx[0].0 + DELAY));
    }

    /// DCTCP through the state machines: with every other data packet
    /// marked, alpha settles near 1/2 and each window is cut by about alpha/2.
    #[test]
    fn dctcp_alpha_tracks_the_marked_fraction() {
        let mut n = Net::new(Protocol::Dctcp, params(), None);
        let mut mark = |p: &Packet| (split_seq(p.seq).1 / MSS).is_multiple_of(2);
        n.run(DELAY * 2 * 300, &mut never, &mut mark);
        let Cc::Dctcp(d) = &n.src.subs[0].cc else {
            panic!("dctcp")
        };
        assert!((d.alpha - 0.5).abs() < 0.05, "alpha {}", d.alpha);
        assert!(n.sent.iter().all(|s| !s.2), "marks are not losses");
    }

    #[test]
    fn reno_without_ecn_ignores_echoes_and_with_ecn_halves_once_per_window() {
        let everything = |_: &Packet| true;
        let mut plain = Net::new(Protocol::Tcp, params(), Some(400 * MSS));
        plain.run(DELAY * 8, &mut never, &mut { everything });
        let mut ecn = Net::new(
            Protocol::Tcp,
            TcpParams {
                ecn: true,
                ..params()
            },
            Some(400 * MSS),
        );
        ecn.run(DELAY * 8, &mut never, &mut { everything });
        assert!(plain.src.cwnd(0) > 100.0 * MSS as f64);
        // One cut per round trip from 10 segments, floored at 2 MSS.
        assert!(ecn.src.cwnd(0) < 10.0 * MSS as f64, "{}", ecn.src.cwnd(0));
    }

    #[test]
    fn delayed_ack_acks_every_second_segment() {
        let p = TcpParams {
            delayed_ack: true,
            ..params()
        };
        let mut n = Net::new(Protocol::Tcp, p, Some(10 * MSS));
        n.run(u64::MAX, &mut never, &mut never);
        assert_eq!(n.acks_to_source, 5);
        assert!(n.finish().is_some());
    }

    #[test]
    fn a_delayed_ack_for_an_odd_segment_waits_for_its_timer() {
        let p = TcpParams {
            delayed_ack: true,
            delayed_ack_ps: 200_000_000, // 200 µs, below the 1 ms RTO
            iw_packets: 1,
            ..params()
        };
        let delack = p.delayed_ack_ps;
        let mut n = Net::new(Protocol::Tcp, p, Some(3 * MSS));
        n.run(u64::MAX, &mut never, &mut never);
        // Segment 0 alone: ACKed by the timer; then 1 and 2 (cwnd 2): one ACK, which completes.
        assert_eq!(n.acks_to_source, 2);
        assert_eq!(n.sent[1].0, 2 * DELAY + delack);
    }

    #[test]
    fn handshake_costs_one_round_trip_before_data() {
        let p = TcpParams {
            handshake: true,
            ..params()
        };
        let mut n = Net::new(Protocol::Tcp, p, Some(5 * MSS));
        n.run(u64::MAX, &mut never, &mut never);
        assert_eq!(n.sent[0].0, 2 * DELAY, "first data one RTT after the SYN");
        assert_eq!(n.finish(), Some(3 * DELAY));
    }

    #[test]
    fn mptcp_spreads_subflows_over_distinct_paths_and_completes() {
        let size = 500 * MSS;
        let mut n = Net::new(Protocol::Mptcp, params(), Some(size));
        n.run(u64::MAX, &mut never, &mut never);
        assert_eq!(n.src.subflows(), 8);
        let paths: std::collections::BTreeSet<u32> = n.src.subs.iter().map(|s| s.path).collect();
        assert_eq!(paths.len(), 8);
        assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, size);
        assert!(n.finish().is_some());
        assert_eq!(n.src.stats.retransmissions, 0);
    }

    /// A 3-segment flow whose first segment is lost gets only two duplicate
    /// ACKs: early retransmit (RFC 5827) repairs it at once; without it only
    /// the RTO can.
    #[test]
    fn early_retransmit_repairs_a_small_window_without_the_rto() {
        for er in [true, false] {
            let p = TcpParams {
                early_retransmit: er,
                ..params()
            };
            let mut n = Net::new(Protocol::Tcp, p, Some(3 * MSS));
            let mut dropped = false;
            let mut drop = |pk: &Packet| {
                let hit = !dropped && split_seq(pk.seq).1 == 0;
                dropped |= hit;
                hit
            };
            n.run(u64::MAX, &mut drop, &mut never);
            let retx = n.sent.iter().find(|s| s.2).expect("retransmitted").0;
            if er {
                assert_eq!(retx, 2 * DELAY, "on the second duplicate ACK");
                assert_eq!(n.src.stats.timeouts, 0);
            } else {
                assert_eq!(n.src.stats.timeouts, 1);
            }
            assert_eq!(n.sink.as_ref().unwrap().stats.bytes_received, 3 * MSS);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever data transmissions (first sends or retransmissions) and
        /// ACKs are lost, every protocol delivers every byte exactly once,
        /// completes, and leaves no timer behind.
        #[test]
        fn any_loss_pattern_still_delivers_every_byte_once(
            lost in proptest::collection::btree_set(0usize..150, 0..30),
            ack_drop_every in proptest::prop_oneof![proptest::strategy::Just(0u64), 2u64..9],
            proto in proptest::sample::select(vec![Protocol::Tcp, Protocol::Dctcp, Protocol::Mptcp]),
            delayed_ack in proptest::bool::ANY,
            size_segs in 1u64..60,
        ) {
            let p = TcpParams { delayed_ack, delayed_ack_ps: 200_000_000, ..params() };
            let size = size_segs * MSS - 17;
            let mut n = Net::new(proto, p, Some(size));
            n.ack_drop_every = ack_drop_every;
            let mut k = 0usize;
            let mut drop = |_: &Packet| {
                k += 1;
                lost.contains(&(k - 1))
            };
            n.run(u64::MAX, &mut drop, &mut never);
            let sink = n.sink.as_ref().expect("something arrived");
            proptest::prop_assert_eq!(sink.stats.bytes_received, size);
            proptest::prop_assert!(n.finish().is_some());
            proptest::prop_assert_eq!(n.src.poll_at(), None);
            // Every transmission beyond one per segment is a counted retransmission.
            let segs = size.div_ceil(MSS) as usize;
            proptest::prop_assert_eq!(n.sent.len() - segs, n.src.stats.retransmissions as usize);
        }
    }

    #[test]
    fn subflow_index_survives_the_sequence_encoding() {
        let (sub, seq) = split_seq(sub_seq(7, 123_456_789));
        assert_eq!((sub, seq), (7, 123_456_789));
    }
}
