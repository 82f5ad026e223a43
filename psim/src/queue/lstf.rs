//! Least slack time first (LSTF), the universal packet scheduling candidate
//! of [TH] Ch. 5 ([UPSP]), as the authors' ns-2 queue runs it (`UPS`
//! `queue/lstf.cc`; TA15), with EDF as its equivalent priority form ([TH]
//! App. A.4).
//!
//! - **Slack** travels in the packet's `rank`, as a signed 64-bit count of
//!   picoseconds (`rank as i64`; negative slack is legal: the packet is
//!   late). The sending host stamps it (`[host.slack]`, `net/edge.rs`:
//!   mean FCT: flow size × 1 s; tail: a constant; fairness: virtual clock;
//!   [TH] §5.2–5.3), or a `[replay]` run from its original (o − i − t_min,
//!   `replay.rs`). Without a policy every slack is 0 and LSTF serves by
//!   arrival time plus transmission time.
//! - **Key at arrival** = now + slack + T, with T this link's transmission
//!   time of the packet ([TH] §5.4: key = slack + i(p, α) + T(p, α)). The
//!   key is absolute, so queued packets never need re-keying: comparing
//!   keys is comparing remaining slacks (`lstf.cc` compares slack − wait +
//!   T). Smallest first; **ties first come, first served** (`lstf.cc`
//!   inserts before the first strictly larger key).
//! - **At dequeue** the slack loses the time waited here: slack −= now −
//!   arrival (T is not subtracted, as in `lstf.cc`), and the new slack goes
//!   out in `rank` for the next hop.
//! - **Full** (no room under the capacity): the arrival's key is compared
//!   with the worst queued key (the tail: largest, latest among ties); a
//!   larger arrival is dropped, otherwise the tail is evicted (ties evict
//!   the tail, `lstf.cc`). In `queue_bytes` the rule repeats until the
//!   arrival fits, evicting nothing unless it then fits.
//! - **`mode = "edf"`**: `rank` holds the packet's absolute deadline at
//!   this hop (ps); key = deadline + T, and the header is not changed.
//!   With deadline = i + slack this is the same schedule as LSTF with the
//!   same tie-break ([TH] App. A.4; tested below).
//! - **`mode = "edf_network"`**: the network-wide EDF of [TH] App. A.4.
//!   `rank` holds the packet's exit deadline o (when its last bit is due at
//!   the destination), unchanged on the way; each hop α keys it by
//!   o − t_min(p, α, dest) + T(p, α), where t_min(p, α, dest) is the
//!   packet's transmission plus propagation time from α's own link to the
//!   destination (`Topology::t_min_from_ps`, one walk of the path per
//!   arrival: no per-destination state). Stamped with the recorded o(p)
//!   (`replay.discipline = "edf"`) its keys are exactly the LSTF replay's
//!   (now + slack = o − t_min(p, α, dest) at every hop), so the schedule
//!   is the same packet for packet (tests/replay.rs). A `deadline` edge
//!   policy stamps now + `deadline_us` as o.
//! - **`mode = "fifo"`**: first come, first served, with the slack in
//!   `rank` lowered by the wait as in `"lstf"`. This is the UPS scripts'
//!   host queue in a replay: the hosts' queues there are FIFO in both the
//!   original and the replay (spec §9.1: the host-to-edge direction is a
//!   DropTail queue), so each NIC sends exactly as it did in the original,
//!   and the next hop still gets the slack left (`replay.nic = "fifo"`).
//! - **Non-preemptive by default**: the port serialises a dequeued packet
//!   to the end. **`preemptive = true`** is the thesis's preemptive LSTF
//!   (its proofs, bit by bit, and the T34 check that cuts SJF/LIFO replay
//!   failures from 18%/15% to 0.24%/0.25%, [TH] §5.1.3): an arrival whose
//!   key is strictly smaller than that of the packet on the wire
//!   interrupts it (ties do not: first come, first served). The port
//!   holds a packet until its last bit has left (so the next hop sees it
//!   only then: store and forward) and puts an interrupted one back here
//!   under its old key; when it is sent again only its remaining bits are
//!   serialised (preempt-resume, as the bit-level model of App. A), and
//!   the bits already sent do not count as waiting: the slack it leaves
//!   with is key − (end of its last bit) just as without preemption. An
//!   interrupted packet goes behind others of an equal key, and may
//!   take the queue one packet over its capacity (it held buffer while on
//!   the wire). ns-2's UPS code has no preemption; the thesis's extension
//!   is not public, so the resume-not-restart choice is the proofs'.
//! - **`control_below_bytes`** (off by default) is `lstf.cc`'s control side
//!   queue: a packet smaller than this many bytes on the wire goes ahead of
//!   every other, first come, first served among its kind, and its slack is
//!   left as it was (`lstf.cc` charges no wait to a control packet). The
//!   authors meant it for route setup ("a hack to ensure same route
//!   construction when ECMP is enabled"), but in their open-loop replay runs
//!   it is on for the whole run (`control_packets_` 1 until
//!   `control_packets_time_` = 1 s, the run's length), so the last, short
//!   packet of every UDP flow takes it at every hop (`replay.control_below_bytes`,
//!   docs/replay.md). **`control_below_until_us`** ends it as `lstf.cc`
//!   does: a packet that arrives at or after that time joins the others
//!   whatever its size (those already in the side queue still go first).
//!   Under `preemptive`, a side-queue packet interrupts the packet on the
//!   wire, as any smaller key does.
//!
//! `fifo_plus` builds this queue with the accumulated queueing delay in
//! `rank` instead of a slack (see `fifo_plus.rs`).
//!
//! | parameter (`kind = "lstf"`) | default | source |
//! |---|---|---|
//! | `queue_packets`, or `queue_bytes` | 100 packets ([`DEFAULT_QUEUE_PACKETS`]) | as `droptail`; the UPS runs set 100,000,000 (replay, tail delay), 3425 or 34,250 (TCP runs) (`UPS` scripts) |
//! | `preemptive` | false | [TH] §5.1.3 ("we extended our simulator to support preemption"); the simulations default to non-preemptive |
//! | `mode` | `"lstf"` | `"lstf"`: slack in `rank`, updated at dequeue ([TH] §5.4); `"edf"`: deadline in `rank`, static ([TH] App. A.4); `"edf_network"`: exit deadline in `rank`, keyed per hop by o − t_min(p, α, dest) + T ([TH] App. A.4); `"fifo"`: arrival order, slack updated at dequeue (the UPS replay's host queue) |
//! | `control_below_bytes` | none (off) | `lstf.cc`'s control side queue: packets under this wire size first, FIFO, slack untouched; the UPS UDP runs: 1460 (`control_packets_` 1, `control_packets_time_` 1 s, `ns-default.tcl`) |
//! | `control_below_until_us` (with `control_below_bytes` only) | none (for ever) | `lstf.cc`'s `control_packets_time_`: arrivals from then on skip the side queue; the UPS runs: 1,000,000 (1 s, `ns-default.tcl`) |

use super::ranked::{signed_key, RankStore};
use super::{capacity, Capacity, Discipline, DisciplineConfig, QueueCtx, QueueEnv};
use crate::config::ConfigError;
use crate::packet::Packet;
use crate::transport::config::Micros;
use crate::units::tx_time_ps;
use serde::{Deserialize, Serialize};

/// Default capacity, packets (as drop-tail's).
pub const DEFAULT_QUEUE_PACKETS: u32 = super::droptail::DEFAULT_QUEUE_PACKETS;

/// What `rank` holds for an LSTF queue.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LstfMode {
    /// Remaining slack, ps (signed); lowered by the wait at dequeue.
    #[default]
    Lstf,
    /// Absolute deadline at this hop, ps; unchanged.
    Edf,
    /// Absolute exit deadline (when the last bit is due at the
    /// destination), ps; unchanged. Each hop α serves it by
    /// o − t_min(p, α, dest) + T(p, α), the network-wide EDF.
    EdfNetwork,
    /// Remaining slack, lowered by the wait, but served in arrival order.
    Fifo,
}

/// How a queue reads and updates `rank` (LSTF's two forms and FIFO+).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Form {
    /// `rank` = slack (i64 ps); key = now + slack + T; slack −= wait.
    Lstf,
    /// `rank` = deadline (ps); key = deadline + T; unchanged.
    Edf,
    /// `rank` = exit deadline o (ps); key = o − t_min(p, α, dest) + T;
    /// unchanged.
    EdfNetwork,
    /// `rank` = queueing delay so far (ps); key = now − delay + T; delay += wait.
    FifoPlus,
    /// `rank` = slack (i64 ps); key = now (arrival order); slack −= wait.
    Fifo,
}

/// `kind = "lstf"`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LstfConfig {
    /// Capacity in packets (default [`DEFAULT_QUEUE_PACKETS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u32>,
    /// Capacity in bytes, instead of packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// What `rank` holds and how it orders: `"lstf"` (slack), `"edf"`
    /// (deadline) or `"fifo"` (slack, served in arrival order).
    pub mode: LstfMode,
    /// Interrupt the packet on the wire for an arrival of a smaller key.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub preemptive: bool,
    /// Packets smaller than this on the wire go first, FIFO, their slack
    /// untouched (`lstf.cc`'s control side queue); none: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_below_bytes: Option<u32>,
    /// Arrivals from this time on skip the control side queue
    /// (`lstf.cc`'s `control_packets_time_`); none: it never closes.
    #[serde(
        rename = "control_below_until_us",
        skip_serializing_if = "Option::is_none"
    )]
    pub control_below_until: Option<Micros>,
}

/// The capacity of a UPS-family table: `queue_packets`/`queue_bytes`, else
/// [`DEFAULT_QUEUE_PACKETS`].
pub(crate) fn ups_capacity(
    key: &str,
    packets: Option<u32>,
    bytes: Option<u64>,
) -> Result<Capacity, ConfigError> {
    capacity(
        key,
        packets,
        bytes,
        Capacity::Packets(DEFAULT_QUEUE_PACKETS),
    )
}

impl DisciplineConfig for LstfConfig {
    type Queue = LstfQueue;
    fn resolved(&self, _env: &QueueEnv) -> Self {
        let mut c = self.clone();
        if let Ok(cap) = ups_capacity("", self.queue_packets, self.queue_bytes) {
            super::write_capacity(cap, &mut c.queue_packets, &mut c.queue_bytes);
        }
        c
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        ups_capacity(key, self.queue_packets, self.queue_bytes)?;
        super::validate_control_below(key, self.control_below_bytes)?;
        super::validate_control_until(key, self.control_below_bytes, self.control_below_until)
    }
    fn build(&self, _env: &QueueEnv) -> LstfQueue {
        let cap = ups_capacity("", self.queue_packets, self.queue_bytes).expect("validated");
        let form = match self.mode {
            LstfMode::Lstf => Form::Lstf,
            LstfMode::Edf => Form::Edf,
            LstfMode::EdfNetwork => Form::EdfNetwork,
            LstfMode::Fifo => Form::Fifo,
        };
        LstfQueue::new(cap, form)
            .with_preemption(self.preemptive)
            .with_control_below(
                self.control_below_bytes.unwrap_or(0),
                self.control_below_until.map_or(u64::MAX, |u| u.ps),
            )
    }
}

/// Packets served by least slack (or earliest deadline, or FIFO+ time).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LstfQueue {
    cap: Capacity,
    form: Form,
    store: RankStore,
    /// Whether an arrival may interrupt the packet on the wire.
    preemptive: bool,
    /// Packets under this many bytes go first, slack untouched (0: off)...
    control_below: u32,
    /// ...if they arrive before this time, ps (u64::MAX: for ever).
    control_until: u64,
    /// The last packet dequeued, while it may still come back (preemptive
    /// queues only): its key, when it was queued, and the wait charged to
    /// its header at that dequeue.
    last: Option<Dequeued>,
}

/// What a preemptive queue remembers of the packet on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Dequeued {
    key: u64,
    since: u64,
    waited: u64,
}

impl LstfQueue {
    /// An empty queue with the given capacity, reading `rank` as `form` says.
    pub fn new(cap: Capacity, form: Form) -> Self {
        LstfQueue {
            cap,
            form,
            store: RankStore::new(false),
            preemptive: false,
            control_below: 0,
            control_until: u64::MAX,
            last: None,
        }
    }

    /// The same queue with `lstf.cc`'s control side queue for packets
    /// under `bytes` on the wire (0: none) that arrive before `until_ps`.
    pub fn with_control_below(mut self, bytes: u32, until_ps: u64) -> Self {
        self.control_below = bytes;
        self.control_until = until_ps;
        self
    }

    /// Whether `p`, arriving at `now`, takes the control side queue.
    #[inline]
    fn is_control(&self, p: &Packet, now: u64) -> bool {
        p.size < self.control_below && now < self.control_until
    }

    /// Whether a packet queued under `key` came through the side queue
    /// (its key is 0, which no slack, deadline or arrival time reaches).
    #[inline]
    fn was_control(&self, key: u64) -> bool {
        self.control_below > 0 && key == 0
    }

    /// The same queue, preemptive or not.
    pub fn with_preemption(mut self, on: bool) -> Self {
        self.preemptive = on;
        self
    }

    /// Charges `waited` ps of queueing to the header (negative: refunds it).
    #[inline]
    fn charge(&self, p: &mut Packet, waited: i64) {
        match self.form {
            Form::Lstf | Form::Fifo => p.rank = (p.rank as i64).saturating_sub(waited) as u64,
            Form::Edf | Form::EdfNetwork => {}
            Form::FifoPlus => p.rank = (p.rank as i64).saturating_add(waited) as u64,
        }
    }

    /// The packet's key at arrival at `cx.now` on a link of `cx.rate_bps`.
    #[inline]
    fn key(&self, pkt: &Packet, cx: &QueueCtx<'_>) -> u64 {
        let (now, rate_bps) = (cx.now, cx.rate_bps);
        // The control side queue: below every slack, ties (arrival order)
        // among its own.
        if self.is_control(pkt, now) {
            return 0;
        }
        // FIFO's key is the arrival alone (equal keys go first come, first
        // served), so a short packet cannot pass a long one.
        let tx = match self.form {
            Form::Fifo => 0,
            _ => tx_time_ps(pkt.size as u64, rate_bps) as i64,
        };
        let now = now as i64;
        let k = match self.form {
            Form::Lstf => now.saturating_add(pkt.rank as i64),
            Form::Edf => pkt.rank.min(i64::MAX as u64) as i64,
            // Where the path is not known (unit tests of other queues), the
            // exit deadline is served as it is.
            Form::EdfNetwork => {
                let rest = cx.t_min_from_here_ps(pkt).unwrap_or(0);
                (pkt.rank.min(i64::MAX as u64) as i64)
                    .saturating_sub(rest.min(i64::MAX as u64) as i64)
            }
            Form::FifoPlus => now.saturating_sub(pkt.rank.min(i64::MAX as u64) as i64),
            Form::Fifo => now,
        };
        signed_key(k.saturating_add(tx))
    }
}

impl Discipline for LstfQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        let key = self.key(&pkt, cx);
        if self
            .store
            .make_room(self.cap, pkt.size, key, true, |p| cx.evicted(p))
        {
            cx.queued(&pkt);
            self.store.push(pkt, key, cx.now);
        } else {
            cx.dropped(pkt);
        }
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        let (key, slot) = self.store.best_keyed()?;
        let (mut p, since) = self.store.take(slot);
        let waited = match self.was_control(key) {
            true => 0,
            false => cx.now.saturating_sub(since),
        };
        self.charge(&mut p, waited as i64);
        if self.preemptive {
            self.last = Some(Dequeued { key, since, waited });
        }
        Some(p)
    }
    fn preemptive(&self) -> bool {
        self.preemptive
    }
    fn preempts(&mut self) -> bool {
        match self.last {
            Some(l) => self.store.best_keyed().is_some_and(|(k, _)| k < l.key),
            None => false,
        }
    }
    fn requeue(&mut self, mut pkt: Packet, sent_ps: u64) {
        let l = self.last.take().expect("a packet was dequeued");
        self.charge(&mut pkt, -(l.waited as i64));
        // Time on the wire is not waiting: the next dequeue charges the
        // wait from a later start.
        self.store.push(pkt, l.key, l.since.saturating_add(sent_ps));
    }
    fn len_packets(&self) -> u32 {
        self.store.len()
    }
    fn len_bytes(&self) -> u64 {
        self.store.bytes()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::queue::testkit::{data, Kit};
    use crate::queue::Outcome::*;

    /// One time unit: the transmission time T of a 1250 B packet at the
    /// kit's 10 Gb/s.
    pub(crate) const U: u64 = 1_000_000;

    /// A 1250 B packet `seq` whose `rank` holds `r` (a signed slack, or a
    /// deadline, or a delay).
    pub(crate) fn pkt(seq: u64, r: i64) -> Packet {
        let mut p = data(seq, 1250);
        p.rank = r as u64;
        p
    }

    fn slack(p: &Packet) -> i64 {
        p.rank as i64
    }

    /// One packet taken at each of the times `units` × U: (seq, slack).
    fn take_at_units(
        k: &mut Kit,
        q: &mut LstfQueue,
        units: std::ops::RangeInclusive<u64>,
    ) -> Vec<(u64, i64)> {
        units
            .map(|i| {
                let p = k.at(i * U).take(q).unwrap();
                (p.seq, slack(&p))
            })
            .collect()
    }

    /// By hand (T = U; key = arrival + slack + T):
    /// - t=0: 0 (slack 5U, key 6U) and 1 (2U, key 3U) arrive; take: 1,
    ///   waited 0, leaves with slack 2U.
    /// - t=U: 2 (slack 0, key 2U) arrives; take: 2 (2U < 6U), slack 0.
    /// - t=2U: take 0, waited 2U: slack 5U − 2U = 3U.
    #[test]
    fn serves_least_slack_and_charges_the_wait() {
        let (mut k, mut q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(10), Form::Lstf),
        );
        k.fill(&mut q, [pkt(0, 5 * U as i64), pkt(1, 2 * U as i64)]);
        let p = k.take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (1, 2 * U as i64));
        k.at(U).fill(&mut q, [pkt(2, 0)]);
        let p = k.take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (2, 0));
        let p = k.at(2 * U).take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (0, 3 * U as i64));
    }

    /// `control_below_bytes = 1000` (`lstf.cc`'s side queue): at t=0, 0
    /// (1250 B, slack −U, the least), 1 (500 B, slack 9U) and 2 (999 B,
    /// slack 5U) arrive; 3 (1000 B, not under the bound, slack −2U) at t=U.
    /// Taken at U, 2U, 3U and 4U: the short ones first in arrival order
    /// (1, then 2), their slacks untouched although they waited U and 2U;
    /// then 3 (key U − 2U + T below 0's −U + T), waited 2U: −4U; then 0,
    /// waited 4U: −5U.
    #[test]
    fn control_packets_go_first_in_arrival_order_with_their_slack_untouched() {
        let (mut k, q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(10), Form::Lstf),
        );
        let mut q = q.with_control_below(1000, u64::MAX);
        let short = |seq, size, r: i64| {
            let mut p = data(seq, size);
            p.rank = r as u64;
            p
        };
        k.fill(
            &mut q,
            [
                pkt(0, -(U as i64)),
                short(1, 500, 9 * U as i64),
                short(2, 999, 5 * U as i64),
            ],
        );
        k.at(U).fill(&mut q, [short(3, 1000, -2 * U as i64)]);
        let got = take_at_units(&mut k, &mut q, 1..=4);
        let u = U as i64;
        assert_eq!(got, [(1, 9 * u), (2, 5 * u), (3, -4 * u), (0, -5 * u)]);
        // Off (the default), 0 goes first: the same arrivals by slack alone.
        let mut q = LstfQueue::new(Capacity::Packets(10), Form::Lstf);
        k.at(0).fill(
            &mut q,
            [
                pkt(0, -(U as i64)),
                short(1, 500, 9 * U as i64),
                short(2, 999, 5 * U as i64),
            ],
        );
        assert_eq!(k.take(&mut q).unwrap().seq, 0);
    }

    /// `control_below_until_us` (`lstf.cc`'s `control_packets_time_`) at
    /// 2U: 1 (500 B, slack 9U) arrives at 0 and takes the side queue; 2
    /// (500 B, slack 9U) and 0 (1250 B, slack −U) arrive at 2U, when it has
    /// closed. Taken at 3U, 4U and 5U: 1 first, slack untouched; then 0
    /// (key 2U − U + T), waited 2U: −3U; then 2 (key 2U + 9U + T), short
    /// but queued by its slack, so charged its 3U wait: 6U.
    #[test]
    fn the_control_side_queue_closes_to_arrivals_at_its_end_time() {
        let (mut k, q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(10), Form::Lstf),
        );
        let mut q = q.with_control_below(1000, 2 * U);
        let short = |seq| {
            let mut p = data(seq, 500);
            p.rank = 9 * U;
            p
        };
        k.fill(&mut q, [short(1)]);
        k.at(2 * U).fill(&mut q, [short(2), pkt(0, -(U as i64))]);
        let got = take_at_units(&mut k, &mut q, 3..=5);
        let u = U as i64;
        assert_eq!(got, [(1, 9 * u), (0, -3 * u), (2, 6 * u)]);
    }

    #[test]
    fn a_control_end_needs_the_side_queue_and_a_positive_time() {
        for (t, ok) in [
            ("control_below_until_us = 5", false),
            (
                "control_below_bytes = 1460\ncontrol_below_until_us = 0",
                false,
            ),
            (
                "control_below_bytes = 1460\ncontrol_below_until_us = 1e6",
                true,
            ),
        ] {
            let c: LstfConfig = toml::from_str(t).unwrap();
            let r = c.validate("switch.queue");
            assert_eq!(r.is_ok(), ok, "{t}: {r:?}");
            if let Err(e) = r {
                let e = e.to_string();
                assert!(e.contains("switch.queue.control_below_until_us"), "{e}");
            }
        }
    }

    #[test]
    fn a_zero_control_bound_is_refused_by_name() {
        let c: LstfConfig = toml::from_str("control_below_bytes = 0").unwrap();
        let e = c.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.control_below_bytes"), "{e}");
        let c: LstfConfig = toml::from_str("control_below_bytes = 1460").unwrap();
        assert!(c.validate("switch.queue").is_ok());
    }

    /// `mode = "fifo"` serves in arrival order whatever the slacks, and
    /// charges each packet's wait to its slack as LSTF does: 0 (slack 5U)
    /// and 1 (slack −U) at t=0, 2 (1000 B, slack 0) at t=U; taken at 0, 2U
    /// and 3U, they leave with 5U, −3U and −2U.
    #[test]
    fn fifo_mode_keeps_arrival_order_and_charges_the_wait() {
        let (mut k, mut q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(10), Form::Fifo),
        );
        k.fill(&mut q, [pkt(0, 5 * U as i64), pkt(1, -(U as i64))]);
        let p = k.take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (0, 5 * U as i64));
        let mut short = data(2, 1000);
        short.rank = 0;
        k.at(U).fill(&mut q, [short]);
        let p = k.at(2 * U).take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (1, -3 * U as i64));
        let p = k.at(3 * U).take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (2, -2 * U as i64));
    }

    /// Equal keys go first come, first served: 0 (t=0, slack 3U) and 1
    /// (t=U, slack 2U) both have key 4U; 0 arrived first. A negative slack
    /// (−3U, late) beats slack 0, and waiting makes it more negative.
    #[test]
    fn ties_are_fifo_and_slack_may_be_negative() {
        let (mut k, mut q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(10), Form::Lstf),
        );
        k.fill(&mut q, [pkt(0, 3 * U as i64)]);
        k.at(U).fill(&mut q, [pkt(1, 2 * U as i64)]);
        assert_eq!(k.drain_seqs(&mut q), [0, 1]);
        k.at(0).fill(&mut q, [pkt(2, 0), pkt(3, -3 * (U as i64))]);
        let p = k.at(U).take(&mut q).unwrap();
        assert_eq!((p.seq, slack(&p)), (3, -4 * U as i64));
    }

    /// Two packets fit (t = 0, keys = slack + U): 0 (5U: key 6U), 1 (U: 2U).
    /// - 2 (slack 9U, key 10U) > the tail's 6U: the arrival is dropped;
    /// - 3 (slack 5U, key 6U) ties the tail: the tail, 0, is evicted.
    #[test]
    fn full_drops_the_larger_of_the_arrival_and_the_tail() {
        let (mut k, mut q) = (
            Kit::new(0),
            LstfQueue::new(Capacity::Packets(2), Form::Lstf),
        );
        k.fill(&mut q, [pkt(0, 5 * U as i64), pkt(1, U as i64)]);
        assert_eq!(k.offer(&mut q, pkt(2, 9 * U as i64)), [(Dropped, 2)]);
        assert_eq!(
            k.offer(&mut q, pkt(3, 5 * U as i64)),
            [(Evicted, 0), (Queued, 3)]
        );
        assert_eq!(k.drain_seqs(&mut q), [1, 3]);
    }

    /// T44, EDF ≡ LSTF ([TH] App. A.4): the same arrivals, LSTF with slack
    /// s and EDF with deadline i + s, give the same order at every dequeue
    /// (here 1, 3, 0, 2, 4 by hand: keys 0:7U 1:3U | at U: 2:9U 3:4U | take
    /// 1 | take 3 | at 3U: 4:10U | take 0, 2, 4).
    #[test]
    fn edf_gives_lstfs_schedule() {
        let arrivals = [(0, 0, 6), (1, 0, 2), (2, U, 7), (3, U, 2), (4, 3 * U, 6)];
        let run = |form: Form| {
            let (mut k, mut q) = (Kit::new(0), LstfQueue::new(Capacity::Packets(10), form));
            let mut out = vec![];
            let offer = |k: &mut Kit, q: &mut LstfQueue, i: usize| {
                let (seq, at, s) = arrivals[i];
                let s = s * U as i64;
                let r = if form == Form::Edf { at as i64 + s } else { s };
                k.at(at).fill(q, [pkt(seq, r)]);
            };
            offer(&mut k, &mut q, 0);
            offer(&mut k, &mut q, 1);
            offer(&mut k, &mut q, 2);
            offer(&mut k, &mut q, 3);
            out.push(k.take(&mut q).unwrap().seq);
            out.push(k.at(2 * U).take(&mut q).unwrap().seq);
            offer(&mut k, &mut q, 4);
            out.extend(k.at(3 * U).drain_seqs(&mut q));
            out
        };
        assert_eq!(run(Form::Lstf), [1, 3, 0, 2, 4]);
        assert_eq!(run(Form::Edf), run(Form::Lstf));
    }

    /// T44, App. A.6.3 (Fig. A.3), LSTF failing with three congestion
    /// points; T = 1 unit, zero propagation. At α0, a (slack 2) and b
    /// (slack 1) arrive at 0: b goes first, a leaves at 1 with slack 1 and
    /// reaches α1 at 2, with c1 (slack 0): c1 goes. At 3, c2 arrives with
    /// slack 0 and a's remaining slack is 0 too (keys 4 = 4): the tie goes
    /// to a, queued first, and c2 leaves at 4 with slack −1: overdue.
    #[test]
    fn appendix_a63_fixture() {
        let u = U as i64;
        let mut k = Kit::new(0);
        let mut a0 = LstfQueue::new(Capacity::Packets(10), Form::Lstf);
        let (a, b, c1, c2) = (1, 2, 3, 4);
        k.fill(&mut a0, [pkt(a, 2 * u), pkt(b, u)]);
        assert_eq!(k.take(&mut a0).unwrap().seq, b);
        let a_out = k.at(U).take(&mut a0).unwrap();
        assert_eq!((a_out.seq, slack(&a_out)), (a, u));
        let mut a1 = LstfQueue::new(Capacity::Packets(10), Form::Lstf);
        k.at(2 * U).fill(&mut a1, [a_out, pkt(c1, 0)]);
        assert_eq!(k.take(&mut a1).unwrap().seq, c1);
        k.at(3 * U).fill(&mut a1, [pkt(c2, 0)]);
        let p = k.take(&mut a1).unwrap();
        assert_eq!((p.seq, slack(&p)), (a, 0));
        let p = k.at(4 * U).take(&mut a1).unwrap();
        assert_eq!((p.seq, slack(&p)), (c2, -u));
    }

    #[test]
    fn mode_parses_and_unknown_keys_fail() {
        let c: LstfConfig = toml::from_str("mode = \"edf\"").unwrap();
        assert_eq!(c.mode, LstfMode::Edf);
        let c: LstfConfig = toml::from_str("mode = \"edf_network\"").unwrap();
        assert_eq!(c.mode, LstfMode::EdfNetwork);
        assert!(toml::from_str::<LstfConfig>("mode = \"sjf\"").is_err());
        assert!(
            toml::from_str::<LstfConfig>("preemptive = true")
                .unwrap()
                .preemptive
        );
        assert!(toml::from_str::<LstfConfig>("preempt = true").is_err());
        let c = LstfConfig {
            queue_bytes: Some(0),
            ..Default::default()
        };
        let e = c.validate("switch.queue").unwrap_err().to_string();
        assert!(e.contains("switch.queue.queue_bytes"), "{e}");
    }
}
