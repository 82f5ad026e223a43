//! The sender side of one TCP byte stream: the SACK scoreboard, RFC 6675
//! loss recovery with NewReno's partial-ACK rule (RFC 6582), and the
//! retransmission timer (RFC 6298). The congestion response is the
//! subflow's [`Controller`]; this file reports ACKs, ECN echoes and losses
//! to it and never asks which one it is.

use super::mptcp::DataLevel;
use super::TcpParams;
use crate::transport::cc::SubflowWindow;
use crate::transport::cc::{AckEvent, CongestionControl, Controller, LiaCoupling, Loss};
use crate::transport::rtt::RttEstimator;
use std::collections::VecDeque;

// Scoreboard flags of one segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETX: u8 = 4;
/// SACKed before the subflow reached it (RC3: delivered by the low-priority
/// loop, `transport/rc3.rs`): no segment of its own sent after a hole, so
/// it does not count towards IsLost.
const PRESACKED: u8 = 8;
/// Queued for reinjection on another MPTCP subflow (once per segment).
const REINJECTED: u8 = 16;

#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Seg {
    /// The connection-level sequence number of its first byte (MPTCP's
    /// DSN; the subflow's own for TCP).
    dsn: u64,
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Supply {
    pub(crate) next: u64,
    pub(crate) total: Option<u64>,
    /// Bytes the application has handed over so far (`app.rs`); u64::MAX
    /// for a backlog, which has all of them from the start.
    pub(crate) released: u64,
    pub(crate) mss: u64,
    /// What another loop already did with the unsent bytes (RC3's
    /// low-priority loop); None for plain TCP.
    pub(crate) seen: Option<Box<crate::transport::rc3::LowSeen>>,
    /// MPTCP's connection level (what is known delivered, and data to
    /// reinject); None for a single subflow.
    pub(crate) data: Option<Box<DataLevel>>,
}

/// Bytes a subflow takes from the connection.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Take {
    pub(crate) dsn: u64,
    pub(crate) len: u32,
    /// Data another subflow stalled with.
    pub(crate) reinjected: bool,
}

/// What is known of a segment before the subflow first sends it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Seen {
    /// Nothing: new data.
    New,
    /// Sent by another loop and not known delivered: send it (a retransmission).
    Hole,
    /// Known delivered: record it as SACKed without sending it.
    Delivered,
}

impl Supply {
    pub(crate) fn take(&mut self) -> Option<u32> {
        let left = self.sendable_end().saturating_sub(self.next);
        if left == 0 {
            return None;
        }
        let n = left.min(self.mss);
        self.next += n;
        Some(n as u32)
    }
    /// The next bytes subflow `sub` sends for the first time: data to
    /// reinject first, then new data.
    pub(crate) fn take_for(&mut self, sub: u8) -> Option<Take> {
        if let Some(r) = self.data.as_deref_mut().and_then(|d| d.next_for(sub)) {
            return Some(Take {
                dsn: r.dsn,
                len: r.len,
                reinjected: true,
            });
        }
        let dsn = self.next;
        self.take().map(|len| Take {
            dsn,
            len,
            reinjected: false,
        })
    }
    /// Where the bytes that may be sent now end: the flow's end, or the end
    /// of what the application has handed over.
    pub(crate) fn sendable_end(&self) -> u64 {
        self.total.unwrap_or(u64::MAX).min(self.released)
    }
    /// Whether new bytes may be sent now (the flow has more, and the
    /// application has handed them over).
    pub(crate) fn has_new(&self) -> bool {
        self.next < self.sendable_end()
    }
    /// Whether subflow `sub` has anything new to send.
    fn has_work_for(&self, sub: u8) -> bool {
        self.has_new()
            || self
                .data
                .as_deref()
                .is_some_and(|d| d.reinject.iter().any(|r| r.from != sub))
    }
    /// Whether the flow has bytes never sent, handed over yet or not.
    pub(crate) fn remaining(&self) -> bool {
        self.total.is_none_or(|t| self.next < t)
    }
}

/// The sender side of one TCP byte stream.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Subflow {
    pub(super) id: u8,
    pub(super) path: u32,
    pub(super) mss: u64,
    /// Unacknowledged segments, from `snd_una` on.
    segs: VecDeque<Seg>,
    pub(super) snd_una: u64,
    pub(super) snd_nxt: u64,
    pub(super) pipe: u64,
    /// Segments marked lost and not yet retransmitted.
    pub(super) lost_pending: u32,
    /// Segments SACKed above the cumulative ACK.
    pub(super) sacked: u32,
    /// Fast retransmit pending: sent whatever the pipe (RFC 6675 §5 (4.3)).
    pub(super) fast_retx: bool,
    pub(super) dupacks: u32,
    /// Without SACK (`sack_blocks = 0`): segments that duplicate ACKs say
    /// have left the network, each standing in for a SACKed segment in the
    /// pipe, so that fast recovery sends new data as NewReno's inflated
    /// window does (RFC 6582 §3.2 steps 3–4).
    pub(super) dup_left: u32,
    pub(super) in_recovery: bool,
    /// NewReno's `recover`: no new fast recovery until the ACK passes it.
    pub(super) recover: u64,
    /// No further ECN cut until the ACK passes this (once per window).
    pub(super) ecn_cut_until: u64,
    pub(super) rtt: RttEstimator,
    pub(super) backoff: u32,
    pub(super) rto_at: Option<u64>,
    /// When this subflow last sent a segment (None: never).
    last_sent: Option<u64>,
    /// The congestion response.
    pub cc: Controller,
}

impl Subflow {
    pub(crate) fn new(id: u8, path: u32, p: &TcpParams, mut cc: Controller) -> Self {
        let mss = p.mss_bytes as u64;
        if p.initial_ssthresh_packets > 0 {
            cc.set_ssthresh((p.initial_ssthresh_packets as u64 * mss) as f64);
        }
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
            dupacks: 0,
            dup_left: 0,
            in_recovery: false,
            recover: 0,
            ecn_cut_until: 0,
            rtt: RttEstimator::default(),
            backoff: 0,
            rto_at: None,
            last_sent: None,
            cc,
        }
    }

    /// The next byte this subflow sends for the first time.
    pub(crate) fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// The path it sends on.
    pub(crate) fn path(&self) -> u32 {
        self.path
    }

    /// The first byte not cumulatively acknowledged.
    pub(crate) fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Whether everything sent is cumulatively acknowledged.
    pub(crate) fn all_acked(&self) -> bool {
        self.snd_una == self.snd_nxt
    }

    /// Bytes SACKed above the cumulative ACK (pFabric's remaining size
    /// subtracts them, `transport/pfabric.rs`).
    pub(crate) fn sacked_bytes(&self) -> u64 {
        if self.sacked == 0 {
            return 0;
        }
        self.segs
            .iter()
            .filter(|s| s.flags & SACKED != 0)
            .map(|s| s.len as u64)
            .sum()
    }

    /// When the retransmission timer fires, if it is armed.
    pub(crate) fn rto_at(&self) -> Option<u64> {
        self.rto_at
    }

    /// Bytes sent and not yet cumulatively acknowledged.
    fn flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// The pipe less what duplicate ACKs say has left (without SACK).
    fn in_pipe(&self) -> u64 {
        self.pipe.saturating_sub(self.dup_left as u64 * self.mss)
    }

    /// Retransmission timeout (RFC 6298 §2), before back-off.
    pub(super) fn rto(&self, p: &TcpParams) -> u64 {
        if p.fixed_rto.ps > 0 {
            return p.fixed_rto.ps; // `fixed_rto_us`: no estimate, no back-off
        }
        // G = 1 ps: the clock's granularity.
        let base = self.rtt.rto(1).unwrap_or(p.initial_rto.ps);
        let rto = base.max(p.min_rto.ps);
        rto.saturating_mul(1 << self.backoff.min(20))
            .min(p.max_rto.ps.max(p.min_rto.ps))
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
                above += (f & PRESACKED == 0) as u32;
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
        let can_send = more_data && (self.in_pipe() + self.mss) as f64 <= self.cc.window();
        if p.early_retransmit && oseg < 4 && !can_send {
            oseg.saturating_sub(1).clamp(1, p.dupack_threshold)
        } else {
            p.dupack_threshold
        }
    }

    fn enter_recovery(&mut self) {
        self.in_recovery = true;
        self.recover = self.snd_nxt;
        self.cc.on_loss(Loss::FastRetransmit, self.flight());
        if let Some(f) = self.segs.front().map(|s| s.flags) {
            if f & SACKED == 0 {
                self.set_flags(0, (f | LOST) & !RETX);
                self.fast_retx = true;
            }
        }
    }

    /// Handles an ACK. `coupling` couples the subflows of a multipath
    /// connection; `delivered`, when given, receives the DSN ranges
    /// (start, length) this ACK first shows to have arrived. Returns the
    /// RTT sample the ACK gave, if any.
    #[must_use]
    pub(crate) fn on_ack(
        &mut self,
        a: AckInfo,
        now: u64,
        p: &TcpParams,
        coupling: Option<LiaCoupling>,
        more_data: bool,
        mut delivered: Option<&mut Vec<(u64, u32)>>,
    ) -> Option<u64> {
        let mut sample = None;
        let AckInfo {
            ack,
            sack,
            ece,
            echo,
        } = a;
        let mut acked = 0u64;
        if ack > self.snd_una && ack <= self.snd_nxt {
            // One of the segments this ACK covers filled the hole; the others
            // had each drawn a duplicate ACK already.
            let mut covered = 0u32;
            while self.snd_una < ack {
                let Some(s) = self.segs.pop_front() else {
                    break;
                };
                covered += 1;
                if let Some(d) = delivered.as_deref_mut() {
                    if s.flags & SACKED == 0 {
                        d.push((s.dsn, s.len));
                    }
                }
                self.pipe -= s.pipe();
                self.lost_pending -= (s.flags & (LOST | RETX | SACKED) == LOST) as u32;
                self.sacked -= (s.flags & SACKED != 0) as u32;
                self.snd_una += s.len as u64;
                acked += s.len as u64;
            }
            if now >= echo {
                self.rtt.sample(now - echo);
                self.cc.on_rtt_sample(now - echo, now);
                sample = Some(now - echo);
            }
            self.backoff = 0;
            self.dupacks = 0;
            self.dup_left = self.dup_left.saturating_sub(covered.saturating_sub(1));
            self.rto_at = if self.segs.is_empty() {
                None
            } else {
                Some(now + self.rto(p))
            };
        } else if ack == self.snd_una && !self.segs.is_empty() && sack >= ack {
            self.dupacks += 1;
            if p.sack_blocks == 0 {
                self.dup_left += 1;
            }
        }
        // At most every segment but the hole has left.
        self.dup_left = self
            .dup_left
            .min((self.segs.len() as u32).saturating_sub(1));
        // The SACK block: the segment starting at `sack`.
        if sack >= self.snd_una && sack < self.snd_nxt {
            let mut at = self.snd_una;
            for i in 0..self.segs.len() {
                if at == sack {
                    let f = self.segs[i].flags;
                    if f & SACKED == 0 {
                        self.set_flags(i, f | SACKED);
                        if let Some(d) = delivered.as_deref_mut() {
                            d.push((self.segs[i].dsn, self.segs[i].len));
                        }
                    }
                    break;
                }
                at += self.segs[i].len as u64;
                if at > sack {
                    break;
                }
            }
        }
        // Congestion response to ECN echoes, at most one cut per window.
        let ev = AckEvent {
            bytes_acked: acked,
            ece,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            coupling,
        };
        let may_cut = self.snd_una >= self.ecn_cut_until && !self.in_recovery;
        let ecn_cut = self.cc.on_ecn(&ev, may_cut);
        if ecn_cut {
            self.ecn_cut_until = self.snd_nxt;
        }
        // Loss detection and recovery (RFC 6675 §5, RFC 6582).
        if self.in_recovery {
            if self.snd_una >= self.recover {
                self.in_recovery = false;
                self.cc.on_recovery_end();
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
            self.cc.on_ack(&ev);
        }
        if p.rwnd_packets > 0 {
            self.cc.limit((p.rwnd_packets as u64 * self.mss) as f64);
        }
        sample
    }

    /// The retransmission timer fired (RFC 6298 §5.4–5.7, RFC 6675 §5.1).
    pub(crate) fn on_rto(&mut self, now: u64, p: &TcpParams) {
        if self.segs.is_empty() {
            self.rto_at = None;
            return;
        }
        self.cc.on_loss(Loss::Timeout, self.flight());
        self.backoff += 1;
        self.in_recovery = false;
        self.dupacks = 0;
        self.dup_left = 0;
        self.recover = self.snd_nxt;
        for i in 0..self.segs.len() {
            let f = self.segs[i].flags;
            if f & SACKED == 0 {
                self.set_flags(i, LOST | (f & REINJECTED));
            }
        }
        self.rto_at = Some(now + self.rto(p));
    }

    /// MPTCP on this subflow's RTO: queues every segment not known
    /// delivered, and not queued before, for reinjection on the others.
    pub(crate) fn queue_reinjections(&mut self, data: &mut DataLevel) {
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.flags & (SACKED | REINJECTED) == 0 {
                self.segs[i].flags |= REINJECTED;
                data.queue(s.dsn, s.len, self.id);
            }
        }
    }

    /// Sends what the window allows: lost segments first (RFC 6675 NextSeg
    /// rule 1), then new data from `supply`. Appends (sequence, length,
    /// retransmission) to `sends`.
    pub(crate) fn fill(
        &mut self,
        supply: &mut Supply,
        now: u64,
        p: &TcpParams,
        sends: &mut Vec<Send>,
    ) {
        if p.slow_start_after_idle
            && self
                .last_sent
                .is_some_and(|t| now.saturating_sub(t) > self.rto(p))
        {
            // RFC 5681 §4.1: after an idle RTO, restart from RW = min(IW, cwnd).
            self.cc.limit((p.iw_packets as u64 * self.mss) as f64);
        }
        let cwnd = self.cc.window().max(self.mss as f64) as u64;
        let sends_before = sends.len();
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
                let (len, dsn) = (self.segs[i].len as u64, self.segs[i].dsn);
                if self.in_pipe() + len > cwnd && !self.fast_retx {
                    break;
                }
                self.fast_retx = false;
                let f = self.segs[i].flags;
                self.set_flags(i, f | RETX);
                sends.push(Send {
                    sub: self.id,
                    path: self.path,
                    seq,
                    dsn,
                    len: len as u32,
                    retx: true,
                    last: false,
                });
                continue;
            }
            if self.in_pipe() + self.mss > cwnd || !supply.has_work_for(self.id) {
                break;
            }
            let Some(Take {
                dsn,
                len,
                reinjected,
            }) = supply.take_for(self.id)
            else {
                break;
            };
            let seen = match supply.seen.as_deref() {
                None => Seen::New,
                Some(s) => s.classify(self.snd_nxt, len),
            };
            if seen == Seen::Delivered {
                self.push_presacked(len);
                continue;
            }
            let seg = Seg { dsn, len, flags: 0 };
            self.pipe += seg.pipe();
            self.segs.push_back(seg);
            sends.push(Send {
                sub: self.id,
                path: self.path,
                seq: self.snd_nxt,
                dsn,
                len,
                retx: seen == Seen::Hole || reinjected,
                last: !reinjected && !supply.remaining() && supply.total.is_some(),
            });
            self.snd_nxt += len as u64;
        }
        if sends.len() > sends_before {
            self.last_sent = Some(now);
        }
        if self.rto_at.is_none() && !self.segs.is_empty() {
            self.rto_at = Some(now + self.rto(p));
        }
    }

    /// Appends a segment of `len` bytes, delivered already, without sending it.
    fn push_presacked(&mut self, len: u32) {
        self.segs.push_back(Seg {
            dsn: self.snd_nxt,
            len,
            flags: SACKED | PRESACKED,
        });
        self.sacked += 1;
        self.snd_nxt += len as u64;
    }

    /// RC3's ACK bump ([TH] §2.3.1): a cumulative ACK at `upto`, beyond
    /// `snd_nxt`, says the bytes up to it were delivered by the other loop;
    /// they are appended as delivered so that the ACK then acknowledges them
    /// as usual (`on_ack`).
    pub(crate) fn extend_delivered_to(&mut self, upto: u64) {
        while self.snd_nxt < upto {
            let len = (upto - self.snd_nxt).min(self.mss.max(1)) as u32;
            self.push_presacked(len);
        }
    }

    /// What LIA needs of this subflow; `fallback_rtt` stands in for a
    /// missing (or zero) smoothed RTT.
    pub(super) fn window(&self, fallback_rtt: u64) -> SubflowWindow {
        let rtt = self.rtt.srtt().filter(|&r| r > 0).unwrap_or(fallback_rtt);
        SubflowWindow {
            cwnd: self.cc.window(),
            rtt_ps: rtt as f64,
        }
    }
}

/// What an ACK tells the sender.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct AckInfo {
    /// Cumulative ACK: the next byte expected.
    pub(crate) ack: u64,
    /// Start of the SACKed segment that triggered the ACK.
    pub(crate) sack: u64,
    /// ECN echo.
    pub(crate) ece: bool,
    /// Echoed send time of the data (RFC 7323 TSecr).
    pub(crate) echo: u64,
}

/// One segment to put on the wire.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Send {
    pub(crate) sub: u8,
    pub(crate) path: u32,
    pub(crate) seq: u64,
    /// The connection-level sequence number of its first byte (MPTCP).
    pub(crate) dsn: u64,
    pub(crate) len: u32,
    pub(crate) retx: bool,
    /// Carries the connection's last byte (first transmission only).
    pub(crate) last: bool,
}
