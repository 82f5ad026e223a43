//! T44: the theory of universal packet scheduling ([TH] App. A) checked on
//! psim's own disciplines.
//!
//! **The model** (App. A.2): every *congestion point* sends one packet in
//! T = 1 unit; every other node and link takes zero time (zero
//! propagation, zero-time ingresses, egresses and white switches).
//! Store-and-forward, non-preemptive, work-conserving: a point starts its
//! next packet the moment it is free and something is queued. All packets
//! have the same size, so with whole-unit ingress times every event falls
//! on a whole unit, every point is free at every whole unit, and serving
//! one packet per unit *is* the non-preemptive, work-conserving rule (a
//! preemptive one could do no better: nothing arrives mid-packet). That is
//! why [`replay`] serves one packet per point per unit. Fig. A.2 alone
//! (A.5) has other transmission times and a link of propagation 2: it runs
//! on [`replay_timed`], in tenths of a unit, under the same rules.
//!
//! **A schedule** is, per packet p: path(p) (its congestion points in
//! order), i(p) (when it reaches the first) and o(p, α) (when α starts
//! sending it); o(p) = o(p, dest) + T is its exit. A *replay* re-runs the
//! packets from their i(p) and path(p) under some discipline; it is
//! perfect when every packet exits no later than o(p).
//!
//! Times are kept in units; psim's queues see ps, 1 unit = [`U`], the
//! transmission time of a [`SIZE`]-byte packet at the test kit's 10 Gb/s.

use super::lstf::tests::U;
use super::lstf::{Form, LstfQueue};
use super::random::RandomQueue;
use super::rank::RankQueue;
use super::testkit::{data, Kit, RATE_BPS};
use super::{Capacity, Discipline, QueueCtx};
use crate::packet::Packet;
use crate::rng::stream_rng;
use crate::units::tx_time_ps;
use rand::RngExt;

/// Bytes of every packet: T = [`U`] at the kit's rate.
const SIZE: u32 = 1250;

/// Room enough that no queue ever drops (the theory has no drops).
const ROOM: Capacity = Capacity::Packets(10_000);

/// Units after which [`replay`] gives up (no test comes near it).
const HORIZON: u64 = 10_000;

/// What the packets ask of the network: how many congestion points, and
/// per packet its path and ingress time i(p).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Net {
    /// Congestion points, numbered 0..nodes.
    nodes: usize,
    /// path(p): the congestion points p crosses, in order.
    paths: Vec<Vec<usize>>,
    /// i(p), units.
    ingress: Vec<u64>,
}

/// A schedule of `net`: `sched[p][h]` = o(p, α_h), when the h-th point of
/// p's path starts sending it.
#[derive(Clone, Debug)]
struct Schedule {
    net: Net,
    sched: Vec<Vec<u64>>,
}

impl Schedule {
    /// o(p) = o(p, dest) + T: when p's last bit leaves the network.
    fn exit(&self, p: usize) -> u64 {
        self.sched[p].last().expect("a path has a point") + 1
    }
    /// t_min(p, α_h, dest(p)): one T per point still to cross, α_h included
    /// (every other hop takes zero time).
    fn t_min(&self, p: usize, h: usize) -> u64 {
        (self.net.paths[p].len() - h) as u64
    }
    /// Black-box slack(p) = o(p) − i(p) − t_min(p, src, dest).
    fn slack(&self, p: usize) -> i64 {
        self.exit(p) as i64 - self.net.ingress[p] as i64 - self.t_min(p, 0) as i64
    }
    /// The packets whose exit in `replayed` is later than o(p).
    fn overdue(&self, replayed: &[Vec<u64>]) -> Vec<usize> {
        (0..replayed.len())
            .filter(|&p| replayed[p].last().unwrap() + 1 > self.exit(p))
            .collect()
    }
    /// The model's arrivals: i(p), then one T after the previous point
    /// started sending it.
    fn arrivals(&self) -> Vec<Vec<u64>> {
        (0..self.sched.len())
            .map(|p| {
                let mut a = vec![self.net.ingress[p]];
                a.extend(self.sched[p].iter().map(|s| s + 1));
                a.truncate(self.sched[p].len());
                a
            })
            .collect()
    }
}

/// How long the model's steps take, in ticks of `tick` ps: each congestion
/// point's T and each link's propagation between two points (ingress and
/// egress links, and white switches, take zero time). A.2's model is
/// [`Timing::unit`]: T = 1, no propagation, 1 tick = 1 unit = [`U`].
/// Fig. A.2 needs T = 1, 0.5 and 0.2 and a link of 2, whole numbers of
/// ticks of a tenth of a unit.
///
/// psim's queues see one packet size at one rate, so LSTF's key adds the
/// same [`U`] at every point whatever the point's T: the same constant for
/// every packet compared there, which changes no order.
#[derive(Clone, Debug)]
struct Timing {
    /// ps per tick.
    tick: u64,
    /// T(α) per congestion point, ticks (every packet has the same size).
    tx: Vec<u64>,
    /// `link[α][β]`: propagation from point α to point β, ticks.
    link: Vec<Vec<u64>>,
}

impl Timing {
    /// A.2's model on `nodes` points.
    fn unit(nodes: usize) -> Timing {
        Timing {
            tick: U,
            tx: vec![1; nodes],
            link: vec![vec![0; nodes]; nodes],
        }
    }
    /// When a packet on `path` that its h-th point starts at `start`
    /// reaches the next one: T there, then the link.
    fn next_arrival(&self, path: &[usize], h: usize, start: u64) -> u64 {
        start + self.tx[path[h]] + self.link[path[h]][path[h + 1]]
    }
    /// The exit of a packet on `path` started at `starts`: last start + T.
    fn exit(&self, path: &[usize], starts: &[u64]) -> u64 {
        starts.last().expect("a path has a point") + self.tx[*path.last().unwrap()]
    }
    /// t_min(p, α_h, dest(p)): every T and link from p's h-th point on.
    fn t_min(&self, path: &[usize], h: usize) -> u64 {
        let links: u64 = path[h..].windows(2).map(|w| self.link[w[0]][w[1]]).sum();
        path[h..].iter().map(|&n| self.tx[n]).sum::<u64>() + links
    }
    /// Black-box slack(p) = o(p) − i(p) − t_min(p, src, dest), ticks.
    fn slack(&self, s: &Schedule, p: usize) -> i64 {
        let path = &s.net.paths[p];
        let o = self.exit(path, &s.sched[p]) as i64;
        o - s.net.ingress[p] as i64 - self.t_min(path, 0) as i64
    }
    /// The packets whose exit in `replayed` is later than their o(p) in `s`.
    fn overdue(&self, s: &Schedule, replayed: &[Vec<u64>]) -> Vec<usize> {
        let paths = &s.net.paths;
        (0..replayed.len())
            .filter(|&p| self.exit(&paths[p], &replayed[p]) > self.exit(&paths[p], &s.sched[p]))
            .collect()
    }
}

/// [`replay_timed`] in A.2's unit model.
fn replay<D: Discipline>(
    net: &Net,
    mk: impl Fn() -> D,
    kit: &mut Kit,
    stamp: impl FnMut(usize, usize, u64, &mut Packet),
) -> Vec<Vec<u64>> {
    replay_timed(net, &Timing::unit(net.nodes), mk, kit, stamp)
}

/// Runs `net`'s packets through the model timed by `tm`, with one psim
/// queue per congestion point (built by `mk`), and returns when each point
/// started each packet (`sched[p][h]`).
///
/// Each tick t: first every packet reaching a point at t is offered to its
/// queue, in packet order (so ties a discipline breaks first come, first
/// served go to the lower packet number), after `stamp(p, h, t, header)`
/// has written what the ingress or the switch puts in the header at p's
/// h-th point; then every point that is free at t (done sending its last
/// packet) and has something queued dequeues one packet, which it sends
/// for T(α) and which reaches its next point after the link (or leaves
/// the network). In the unit model every point is free at every unit, and
/// serving one packet per unit is the non-preemptive, work-conserving rule.
fn replay_timed<D: Discipline>(
    net: &Net,
    tm: &Timing,
    mk: impl Fn() -> D,
    kit: &mut Kit,
    mut stamp: impl FnMut(usize, usize, u64, &mut Packet),
) -> Vec<Vec<u64>> {
    assert_eq!(tx_time_ps(SIZE as u64, RATE_BPS), U, "T is one unit");
    let n = net.paths.len();
    let mut queues: Vec<D> = (0..net.nodes).map(|_| mk()).collect();
    // When each point is done sending its last packet.
    let mut free = vec![0; net.nodes];
    let mut sched = vec![Vec::new(); n];
    // Per packet on its way: when it reaches its next point, and its header.
    let mut next: Vec<Option<(u64, Packet)>> = (0..n)
        .map(|p| Some((net.ingress[p], data(p as u64, SIZE))))
        .collect();
    let mut left = n;
    let mut t = 0;
    while left > 0 {
        assert!(t < HORIZON, "the replay does not end");
        kit.at(t * tm.tick);
        for p in 0..n {
            if next[p].as_ref().is_some_and(|(at, _)| *at == t) {
                let (_, mut hdr) = next[p].take().unwrap();
                let h = sched[p].len();
                stamp(p, h, t, &mut hdr);
                kit.fill(&mut queues[net.paths[p][h]], [hdr]);
            }
        }
        for (node, q) in queues.iter_mut().enumerate() {
            if free[node] > t {
                continue;
            }
            if let Some(hdr) = kit.take(q) {
                let p = hdr.seq as usize;
                let path = &net.paths[p];
                let h = sched[p].len();
                assert_eq!(path[h], node, "packet {p} served off its path");
                sched[p].push(t);
                free[node] = t + tm.tx[node];
                if h + 1 < path.len() {
                    next[p] = Some((tm.next_arrival(path, h, t), hdr));
                } else {
                    left -= 1;
                }
            }
        }
        t += 1;
    }
    sched
}

/// [`viable_timed`] in A.2's unit model.
fn viable(
    net: &Net,
    arr: &[Vec<u64>],
    sched: &[Vec<u64>],
    work_conserving: bool,
) -> Result<(), String> {
    viable_timed(net, &Timing::unit(net.nodes), arr, sched, work_conserving)
}

/// Checks that `sched`, with the arrivals `arr` (`arr[p][h]` at p's h-th
/// point), is a schedule of the model timed by `tm` on `net`: each packet
/// reaches its first point at i(p) and each later one T and the link after
/// the previous point started it; no point starts a packet before it
/// arrives, or while it is still sending another (two in one unit, in the
/// unit model); and, if asked, no point stays idle while a packet waits.
fn viable_timed(
    net: &Net,
    tm: &Timing,
    arr: &[Vec<u64>],
    sched: &[Vec<u64>],
    work_conserving: bool,
) -> Result<(), String> {
    let mut starts = vec![Vec::new(); net.nodes];
    for p in 0..net.paths.len() {
        let (path, a, s) = (&net.paths[p], &arr[p], &sched[p]);
        if a.len() != path.len() || s.len() != path.len() {
            return Err(format!("packet {p}: {} hops listed", s.len()));
        }
        if a[0] != net.ingress[p] {
            return Err(format!("packet {p} enters at {}, not i(p)", a[0]));
        }
        for h in 0..path.len() {
            if h > 0 && a[h] != tm.next_arrival(path, h - 1, s[h - 1]) {
                return Err(format!("packet {p} reaches hop {h} at {}", a[h]));
            }
            if s[h] < a[h] {
                return Err(format!("packet {p} sent at hop {h} before it arrives"));
            }
            starts[path[h]].push((s[h], a[h], p));
        }
    }
    for (node, st) in starts.iter().enumerate() {
        let tx = tm.tx[node];
        let sending = |t: u64| st.iter().any(|x| x.0 <= t && t < x.0 + tx);
        for &(s, a, p) in st {
            if st.iter().filter(|x| x.0 == s).count() > 1 {
                return Err(format!("point {node} starts two packets at {s}"));
            }
            if st.iter().any(|x| x.0 < s && s < x.0 + tx) {
                return Err(format!("point {node} starts {p} at {s} while sending"));
            }
            if work_conserving {
                if let Some(t) = (a..s).find(|&t| !sending(t)) {
                    return Err(format!("point {node} idles at {t} while {p} waits"));
                }
            }
        }
    }
    Ok(())
}

// ---- Figure A.1 ----

const A: usize = 0;
const X: usize = 1;
const B1: usize = 2;
const B2: usize = 3;
const B3: usize = 4;
const C1: usize = 5;
const C2: usize = 6;
const Y1: usize = 7;
const Y2: usize = 8;
const Z: usize = 9;
const NAME: [&str; 10] = ["a", "x", "b1", "b2", "b3", "c1", "c2", "y1", "y2", "z"];

/// One row of a table in Fig. A.1's form: a congestion point (α0..α4 as
/// 0..4) and its packets as (packet, arrival, scheduling time).
type Row = (usize, &'static [(usize, u64, u64)]);

/// Case 1 of Fig. A.1, as the table gives it.
const CASE_1: &[Row] = &[
    (0, &[(A, 0, 0), (X, 0, 1)]),
    (1, &[(A, 1, 1), (B1, 2, 2), (B2, 3, 3), (B3, 4, 4)]),
    (2, &[(C1, 2, 2), (C2, 3, 3), (A, 2, 4)]),
    (3, &[(X, 2, 2), (Y1, 2, 3), (Y2, 3, 4)]),
    (4, &[(Z, 2, 2), (X, 3, 3)]),
];

/// Case 2 of Fig. A.1, as the table gives it.
const CASE_2: &[Row] = &[
    (0, &[(X, 0, 0), (A, 0, 1)]),
    (1, &[(A, 2, 2), (B1, 2, 3), (B2, 3, 4), (B3, 4, 5)]),
    (2, &[(C1, 2, 2), (C2, 3, 3), (A, 3, 4)]),
    (3, &[(X, 1, 1), (Y1, 2, 2), (Y2, 3, 3)]),
    (4, &[(Z, 2, 2), (X, 2, 3)]),
];

/// A table as a schedule plus the arrivals it lists. A packet's hops are
/// its rows ordered by scheduling time (store-and-forward: a packet is at
/// one point at a time).
fn from_table(rows: &[Row]) -> (Schedule, Vec<Vec<u64>>) {
    let n = 1 + rows
        .iter()
        .flat_map(|r| r.1.iter().map(|c| c.0))
        .max()
        .unwrap();
    let mut net = Net {
        nodes: rows.len(),
        paths: vec![],
        ingress: vec![],
    };
    let (mut sched, mut arr) = (vec![], vec![]);
    for p in 0..n {
        let mut hops: Vec<(u64, usize, u64)> = rows
            .iter()
            .flat_map(|&(node, cells)| {
                cells
                    .iter()
                    .filter(move |c| c.0 == p)
                    .map(move |&(_, a, s)| (s, node, a))
            })
            .collect();
        hops.sort_unstable();
        net.paths.push(hops.iter().map(|h| h.1).collect());
        net.ingress.push(hops[0].2);
        sched.push(hops.iter().map(|h| h.0).collect());
        arr.push(hops.iter().map(|h| h.2).collect());
    }
    (Schedule { net, sched }, arr)
}

/// Both cases of Fig. A.1 are viable, work-conserving schedules of the
/// model; their exits are the text's (a 5, x 4, c1 3, c2 4, z 3 in both;
/// b1–b3 leave α1, their only point, at 3, 4, 5 in Case 1 and 4, 5, 6 in
/// Case 2; y1, y2 leave α3 at 4, 5 in Case 1 and 3, 4 in Case 2); a's and
/// x's paths are α0 α1 α2 and α0 α3 α4. Every packet has the same i(p)
/// and path(p) in the two cases, and a, x (and c1, c2, z) the same o(p):
/// a black-box ingress, which sees only (i, o, path), stamps a and x alike.
/// A table with a's scheduling at α2 moved onto c2's unit is rejected, so
/// the check can fail.
#[test]
fn fig_a1_cases_are_viable_and_agree_on_a_and_x() {
    let (one, arr1) = from_table(CASE_1);
    let (two, arr2) = from_table(CASE_2);
    viable(&one.net, &arr1, &one.sched, true).unwrap();
    viable(&two.net, &arr2, &two.sched, true).unwrap();

    let exits = |s: &Schedule| (0..10).map(|p| (NAME[p], s.exit(p))).collect::<Vec<_>>();
    let want = |o: [u64; 10]| NAME.iter().copied().zip(o).collect::<Vec<_>>();
    //                  a  x  b1 b2 b3 c1 c2 y1 y2 z
    assert_eq!(exits(&one), want([5, 4, 3, 4, 5, 3, 4, 4, 5, 3]));
    assert_eq!(exits(&two), want([5, 4, 4, 5, 6, 3, 4, 3, 4, 3]));

    assert_eq!(one.net, two.net, "same i(p) and path(p) for every packet");
    assert_eq!(one.net.paths[A], [0, 1, 2]);
    assert_eq!(one.net.paths[X], [0, 3, 4]);
    assert_eq!((one.net.ingress[A], one.net.ingress[X]), (0, 0));
    for p in [A, X] {
        assert_eq!(one.exit(p), two.exit(p), "{}", NAME[p]);
    }

    let mut bad = one.sched.clone();
    bad[A][2] = 3;
    let e = viable(&one.net, &arr1, &bad, false).unwrap_err();
    assert!(e.contains("starts two packets at 3"), "{e}");
}

/// LSTF with black-box slacks (`Form::Lstf` at every point, slack(p)
/// stamped at the ingress). Slacks o − i − t_min: a 5 − 0 − 3 = 2 and
/// x 4 − 0 − 3 = 1 in both cases; c1, c2, z 0 in both; b1–b3 0 in Case 1
/// and 1 in Case 2; y1, y2 1 in Case 1 and 0 in Case 2. A packet's key at
/// a point is arrival + slack + T, and it leaves with its slack less its
/// wait there.
///
/// At α0 (t = 0): a's key 0 + 2 + 1 = 3, x's 0 + 1 + 1 = 2: x goes at 0,
/// a at 1 (leaving with slack 1), in both cases: Case 2's order.
///
/// Case 2, by hand, is then the table itself: α3 sends x at 1 (alone),
/// y1 at 2, y2 at 3; at α4, z (key 2 + 0 + 1 = 3) goes before x (key 4),
/// at 2 and 3; at α1 at 2, a (key 2 + 1 + 1 = 4) ties b1 (2 + 1 + 1 = 4)
/// and a, offered first, goes: a 2, b1 3, b2 4, b3 5; at α2 at 3, c2 (key
/// 4) beats a (slack 1, key 5): c1 2, c2 3, a 4. No packet is overdue.
///
/// Case 1: α3 and α4 as above, but now y1, y2 (o 4, 5) exit early. At α1
/// at 2, b1 (slack 0, key 3) beats a (key 4); at 3, b2 (key 3 + 0 + 1 = 4)
/// ties a, queued first, so a goes at 3 (reaching α2 at 4 with slack 0:
/// c1 2, c2 3, a 4, exit 5, on time); b2 goes at 4 (key 4 < b3's 5) and
/// b3 at 5: **b2 exits 5 > 4 and b3 exits 6 > 5**. Had the tie gone to
/// b2, a would have been late instead (α2 at 5, exit 6 > 5), with b3:
/// LSTF fails Case 1 whatever its tie-break, because x-first at α0 leaves
/// a too little time to cross α1 before b2, b3 need it.
#[test]
fn lstf_replays_case_2_and_misses_case_1() {
    /// Case 1's LSTF replay, derived above, in the table's form.
    const LSTF_CASE_1: &[Row] = &[
        (0, &[(X, 0, 0), (A, 0, 1)]),
        (1, &[(B1, 2, 2), (A, 2, 3), (B2, 3, 4), (B3, 4, 5)]),
        (2, &[(C1, 2, 2), (C2, 3, 3), (A, 4, 4)]),
        (3, &[(X, 1, 1), (Y1, 2, 2), (Y2, 3, 3)]),
        (4, &[(Z, 2, 2), (X, 2, 3)]),
    ];
    let lstf = |s: &Schedule| {
        let mk = || LstfQueue::new(ROOM, Form::Lstf);
        replay(&s.net, mk, &mut Kit::new(0), |p, h, _, hdr| {
            if h == 0 {
                hdr.rank = (s.slack(p) * U as i64) as u64;
            }
        })
    };
    let (one, _) = from_table(CASE_1);
    let (two, _) = from_table(CASE_2);
    assert_eq!((one.slack(A), one.slack(X)), (2, 1));

    let r2 = lstf(&two);
    assert_eq!(r2, two.sched, "LSTF replays Case 2 as its table");
    assert_eq!(two.overdue(&r2), [] as [usize; 0]);

    let r1 = lstf(&one);
    let (want, arr) = from_table(LSTF_CASE_1);
    viable(&want.net, &arr, &want.sched, true).unwrap();
    assert_eq!(r1, want.sched);
    let late: Vec<&str> = one.overdue(&r1).into_iter().map(|p| NAME[p]).collect();
    assert_eq!(late, ["b2", "b3"]);
}

/// Whether some work-conserving, non-preemptive choice at every point
/// replays `s` perfectly (every exit ≤ o(p)) when α0 (point 0) sends
/// `first` whenever it holds it. This is a plain depth-first search over
/// every choice (one queued packet per busy point per unit), not a psim
/// queue: it asks what *any* rule could do. It prunes a branch as soon as
/// some packet could not exit in time even if never delayed again.
fn perfect_replay_exists(s: &Schedule, first: usize) -> bool {
    fn go(s: &Schedule, first: usize, t: u64, hop: &[usize], at: &[u64]) -> bool {
        let paths = &s.net.paths;
        let mut live = false;
        let mut queued = vec![Vec::new(); s.net.nodes];
        for p in 0..paths.len() {
            let rest = (paths[p].len() - hop[p]) as u64;
            if rest == 0 {
                continue;
            }
            live = true;
            if at[p].max(t) + rest > s.exit(p) {
                return false;
            }
            if at[p] <= t {
                queued[paths[p][hop[p]]].push(p);
            }
        }
        if !live {
            return true;
        }
        if queued[0].contains(&first) {
            queued[0] = vec![first];
        }
        let busy: Vec<&Vec<usize>> = queued.iter().filter(|q| !q.is_empty()).collect();
        // One pick per busy point; count through every combination.
        let mut pick = vec![0; busy.len()];
        loop {
            let (mut hop2, mut at2) = (hop.to_vec(), at.to_vec());
            for (q, &k) in busy.iter().zip(&pick) {
                hop2[q[k]] += 1;
                at2[q[k]] = t + 1;
            }
            if go(s, first, t + 1, &hop2, &at2) {
                return true;
            }
            match (0..busy.len()).find(|&i| pick[i] + 1 < busy[i].len()) {
                Some(i) => {
                    pick[i] += 1;
                    pick[..i].iter_mut().for_each(|k| *k = 0);
                }
                None => return false,
            }
        }
    }
    let hop = vec![0; s.net.paths.len()];
    go(s, first, 0, &hop, &s.net.ingress)
}

/// [TH] App. A.2's claim, by exhaustive search over every other point's
/// choices: a-first at α0 can replay Case 1 (the table is a witness) but
/// not Case 2, and x-first Case 2 but not Case 1. As a deterministic rule
/// sees the same a and x at α0 in both cases, it picks one order for both
/// and fails one case.
///
/// By hand: Case 2, a first: x reaches α3 at 2 with y1 (o 3) and y2
/// arrives at 3 (o 4): y1 must go at 2 and y2 at 3, so x goes at 4 and
/// exits no earlier than 6 > 4 (or y1 is late). Case 1, x first: a reaches
/// α1 at 2, where b1, b2, b3 (arriving 2, 3, 4, o 3, 4, 5) need units 2, 3,
/// 4; at α2, c1, c2 need 2 and 3, so a starts there at 4 at the earliest,
/// needing α1 by 3: taken by b1 and b2.
#[test]
fn no_alpha0_order_replays_both_cases() {
    let (one, _) = from_table(CASE_1);
    let (two, _) = from_table(CASE_2);
    assert!(perfect_replay_exists(&one, A));
    assert!(!perfect_replay_exists(&two, A));
    assert!(perfect_replay_exists(&two, X));
    assert!(!perfect_replay_exists(&one, X));
}

/// psim's random queue that, one unit in four, sends nothing though it may
/// hold packets: a viable original that is not work-conserving. A.1's
/// theorems ask only that the original be viable.
struct Idling(RandomQueue);

impl Discipline for Idling {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx<'_>) {
        self.0.enqueue(pkt, cx)
    }
    fn dequeue(&mut self, cx: &mut QueueCtx<'_>) -> Option<Packet> {
        if cx.rng.random_range(0..4) == 0 {
            return None;
        }
        self.0.dequeue(cx)
    }
    fn len_packets(&self) -> u32 {
        self.0.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.0.len_bytes()
    }
}

/// A random network from `seed`: 2 to 6 congestion points; 4 to 24
/// packets, each crossing 1 to 4 distinct points in random order, entering
/// at a random unit in 0..8. Paths are arbitrary, so flows may cross in
/// any pattern (A.1 asks nothing of the topology).
fn random_net(seed: u64) -> Net {
    let mut r = stream_rng(seed, 1);
    let nodes = r.random_range(2..=6usize);
    let n = r.random_range(4..=24usize);
    let mut net = Net {
        nodes,
        paths: vec![],
        ingress: vec![],
    };
    for _ in 0..n {
        let len = r.random_range(1..=nodes.min(4));
        let mut pts: Vec<usize> = (0..nodes).collect();
        for k in 0..len {
            let j = r.random_range(k..nodes);
            pts.swap(k, j);
        }
        pts.truncate(len);
        net.paths.push(pts);
        net.ingress.push(r.random_range(0..8u64));
    }
    net
}

/// Random originals, from fixed seeds: psim's random queue at every point
/// (work-conserving; seeds 0..200) and the same with idling (seeds
/// 1000..1200).
fn random_schedules() -> Vec<Schedule> {
    let mut all = vec![];
    for seed in 0..200 {
        let net = random_net(seed);
        let mk = || RandomQueue::new(ROOM);
        let sched = replay(&net, mk, &mut Kit::new(seed), |_, _, _, _| {});
        all.push(Schedule { net, sched });
    }
    for seed in 1000..1200 {
        let net = random_net(seed);
        let mk = || Idling(RandomQueue::new(ROOM));
        let sched = replay(&net, mk, &mut Kit::new(seed), |_, _, _, _| {});
        all.push(Schedule { net, sched });
    }
    all
}

/// Replays `s` with A.1's omniscient header: at its h-th point a packet's
/// priority is o(p, α_h), served by psim's rank queue (smallest first).
fn omniscient(s: &Schedule) -> Vec<Vec<u64>> {
    let mk = || RankQueue::new(ROOM);
    replay(&s.net, mk, &mut Kit::new(0), |p, h, _, hdr| {
        hdr.rank = s.sched[p][h] * U;
    })
}

/// [TH] App. A.1: with priority o(p, α) at each hop, every packet leaves
/// every point no later than in the original (Theorems 1 and 2), so no
/// packet is overdue; checked on both cases of Fig. A.1 and on 400 random
/// viable originals.
///
/// Stronger, by induction over units, when the original is
/// work-conserving the replay *is* the original: if they agree before t,
/// the same packets wait at each point at t, all with o(p, α) ≥ t and
/// distinct, and the original starts the one with o(p, α) = t, the
/// smallest. When the original idles with a packet waiting, the
/// work-conserving replay sends something there earlier at the first such
/// unit, so it differs. Hence: replay = original iff the original is
/// work-conserving (psim's random queue always is; the idling set must
/// hold at least one original that is not, or the idling was vacuous).
#[test]
fn omniscient_vectors_replay_fig_a1_and_random_schedules() {
    for rows in [CASE_1, CASE_2] {
        let (s, _) = from_table(rows);
        let r = omniscient(&s);
        assert_eq!(s.overdue(&r), [] as [usize; 0]);
        assert_eq!(r, s.sched, "a work-conserving original is reproduced");
    }
    let (mut lazy, mut waits) = (0, 0);
    for (k, s) in random_schedules().iter().enumerate() {
        let arr = s.arrivals();
        viable(&s.net, &arr, &s.sched, false).unwrap_or_else(|e| panic!("#{k}: {e}"));
        let wc = viable(&s.net, &arr, &s.sched, true).is_ok();
        assert!(wc || k >= 200, "#{k}: psim's random queue idled");
        lazy += usize::from(!wc);
        waits += s.sched.iter().zip(&arr).filter(|(o, i)| o != i).count();

        let r = omniscient(s);
        for (p, (re, or)) in r.iter().zip(&s.sched).enumerate() {
            for (h, (re, or)) in re.iter().zip(or).enumerate() {
                assert!(re <= or, "#{k}: packet {p} hop {h}");
            }
        }
        assert_eq!(s.overdue(&r), [] as [usize; 0], "#{k}");
        assert_eq!(r == s.sched, wc, "#{k}");
    }
    assert!(lazy > 0, "some original idles with a packet waiting");
    assert!(waits > 0, "some packet waits somewhere");
}

/// [TH] App. A.4, network-wide: EDF with the per-hop priority
/// o(p) − t_min(p, α, dest) + T(p, α) gives LSTF's schedule (ingress slack
/// o − i − t_min), on both cases of Fig. A.1 and the 400 random originals.
///
/// The bookkeeping, against A.3. psim's LSTF header holds slack(p) less the
/// waits so far (the queue subtracts the wait, not T). A packet reaching
/// its h-th point α at t has spent h units being sent (t_min(p, src, α) −
/// T) and the rest waiting, so its header is o − i − n − (t − i − h) =
/// o − t − t_min(p, α, dest), with n the path's length and t_min(p, α,
/// dest) = n − h: A.3's slack(p, α, t) less T(p, α). The queue keys on
/// t + header + T = o − t_min(p, α, dest) + T: exactly A.4's priority. The
/// LSTF replay asserts the header against A.3 at every arrival.
///
/// The EDF form keys on rank + T; with rank = the priority, every key is
/// the LSTF key plus the same T (one packet size, one rate), so both
/// queues order alike and break ties alike (first come, first served),
/// and the schedules are identical.
#[test]
fn network_wide_edf_gives_lstfs_schedule() {
    let mut originals: Vec<Schedule> = [CASE_1, CASE_2].map(|r| from_table(r).0).into();
    originals.extend(random_schedules());
    for (k, s) in originals.iter().enumerate() {
        let lstf = replay(
            &s.net,
            || LstfQueue::new(ROOM, Form::Lstf),
            &mut Kit::new(0),
            |p, h, t, hdr| {
                if h == 0 {
                    hdr.rank = (s.slack(p) * U as i64) as u64;
                }
                let a3 = s.exit(p) as i64 - t as i64 - s.t_min(p, h) as i64 + 1;
                assert_eq!(hdr.rank as i64, (a3 - 1) * U as i64, "#{k} {p}@{h}");
            },
        );
        let edf = replay(
            &s.net,
            || LstfQueue::new(ROOM, Form::Edf),
            &mut Kit::new(0),
            |p, h, _, hdr| hdr.rank = (s.exit(p) - s.t_min(p, h) + 1) * U,
        );
        assert_eq!(edf, lstf, "#{k}");
    }
}

/// Figure A.3 ([TH] App. A.6.3): LSTF fails once a flow crosses three
/// congestion points.
mod fig_a3 {
    use super::*;

    const A: usize = 0;
    const B: usize = 1;
    const C1: usize = 2;
    const C2: usize = 3;
    const D1: usize = 4;
    const D2: usize = 5;
    const NAME: [&str; 6] = ["a", "b", "c1", "c2", "d1", "d2"];

    /// **[INF] A reconstruction**: the figure's topology and table are not
    /// in our copy of [TH], only the caption and A.6.3's prose. This is the
    /// smallest original (one packet per flow, each of b, c and d crossing
    /// one point) that meets every statement there, with α0..α2 as points
    /// 0..2:
    /// - T = 1 at α0, α1, α2, zero elsewhere, zero propagation (caption);
    /// - flows A, B, C, D (caption); a crosses α0, α1, α2 ("a flow passes
    ///   through three congestion points"), each shared with another flow;
    /// - a and b both reach α0 at 0 ("when a arrives at α0 ... at the same
    ///   time, b"); a goes first, so b waits 1 there and that is all its
    ///   waiting: slack(b) = 2 − 0 − 1 = 1 ("b has a slack of 1, since it
    ///   waits behind a at α0");
    /// - α1 starts a at 1 (o(a, α1) = 1, as the text says), so a reaches α2
    ///   at 2, where d1 (arriving 2) and d2 (arriving 3) go first: a starts
    ///   at 4 and exits at 5, slack(a) = 5 − 0 − 3 = 2 ("a slack of 2, since
    ///   it waits behind d1 and d2 at α2");
    /// - c1 and c2 reach α1 at 2 and 3 and are sent at once, as in the
    ///   original neither waits: slack 0 each, so in the replay c1 has zero
    ///   slack at 2 and c2 zero slack at 3 ("c1 with a zero slack", "c2 is
    ///   also present at α1 with zero slack"); d1, d2 likewise slack 0.
    ///
    /// Every point is work-conserving in this original.
    const ORIGINAL: &[Row] = &[
        (0, &[(A, 0, 0), (B, 0, 1)]),
        (1, &[(A, 1, 1), (C1, 2, 2), (C2, 3, 3)]),
        (2, &[(D1, 2, 2), (D2, 3, 3), (A, 2, 4)]),
    ];

    /// The LSTF replay of [`ORIGINAL`], by hand. Keys are arrival + slack +
    /// T, smallest first, ties first come, first served.
    /// - α0 at 0: b's key 0 + 1 + 1 = 2 beats a's 0 + 2 + 1 = 3 ("b gets
    ///   scheduled before a"): b at 0 (exit 1 ≤ 2), a at 1, leaving with
    ///   slack 2 − 1 = 1.
    /// - α1 at 2: a arrives with slack 1 (key 4), later than o(a, α1) = 1;
    ///   c1 arrives with slack 0 (key 3) and goes at 2 (exit 3, on time).
    /// - α1 at 3: a has waited 1, slack 0 (key still 4); c2 arrives with
    ///   slack 0 (key 3 + 0 + 1 = 4). A tie: a, queued first, goes at 3
    ///   (the text's "as shown"), c2 at 4: **c2 exits 5 > o(c2) = 4**.
    /// - α2: d1 at 2 and d2 at 3, alone (exits 3, 4, on time); a arrives at
    ///   4 with slack 0 and goes at once: exit 5 = o(a), on time.
    ///
    /// Had c2 gone at 3, a would have reached α2 at 5 and exited at 6 > 5.
    const LSTF_REPLAY: &[Row] = &[
        (0, &[(B, 0, 0), (A, 0, 1)]),
        (1, &[(C1, 2, 2), (A, 2, 3), (C2, 3, 4)]),
        (2, &[(D1, 2, 2), (D2, 3, 3), (A, 4, 4)]),
    ];

    /// LSTF at every point, black-box slack o − i − t_min stamped at the
    /// ingress; also returns the slack each packet carries into each of its
    /// points, units.
    fn lstf(s: &Schedule) -> (Vec<Vec<u64>>, Vec<Vec<i64>>) {
        let mut carried = vec![Vec::new(); s.net.paths.len()];
        let mk = || LstfQueue::new(ROOM, Form::Lstf);
        let r = replay(&s.net, mk, &mut Kit::new(0), |p, h, _, hdr| {
            if h == 0 {
                hdr.rank = (s.slack(p) * U as i64) as u64;
            }
            carried[p].push(hdr.rank as i64 / U as i64);
        });
        (r, carried)
    }

    /// The reconstruction is a viable, work-conserving original with the
    /// text's slacks at α0 (a 2, b 1) and o(a, α1) = 1, in which a crosses
    /// three points, each of which another flow also crosses.
    #[test]
    fn fig_a3_original_is_viable_with_the_texts_slacks() {
        let (s, arr) = from_table(ORIGINAL);
        viable(&s.net, &arr, &s.sched, true).unwrap();
        assert_eq!(s.net.paths[A], [0, 1, 2], "a crosses α0, α1, α2");
        for node in 0..3 {
            let others = (0..6).filter(|&p| p != A && s.net.paths[p].contains(&node));
            assert!(others.count() > 0, "α{node} is shared");
        }
        assert_eq!((s.net.ingress[A], s.net.ingress[B]), (0, 0));
        assert_eq!(s.sched[A][1], 1, "o(a, α1)");
        let slacks: Vec<(&str, i64)> = (0..6).map(|p| (NAME[p], s.slack(p))).collect();
        let want = [
            ("a", 2),
            ("b", 1),
            ("c1", 0),
            ("c2", 0),
            ("d1", 0),
            ("d2", 0),
        ];
        assert_eq!(slacks, want);
    }

    /// psim's LSTF replays the reconstruction as derived by hand above: b
    /// before a at α0; a reaches α1 at 2 (> o(a, α1) = 1) with slack 1 and
    /// leaves it with slack 0; exactly one packet is overdue, and it is one
    /// of the text's two outcomes (c2, with psim's first-come tie-break).
    #[test]
    fn lstf_misses_fig_a3() {
        let (s, _) = from_table(ORIGINAL);
        let (r, carried) = lstf(&s);
        let (want, arr) = from_table(LSTF_REPLAY);
        viable(&want.net, &arr, &want.sched, true).unwrap();
        assert_eq!(r, want.sched);

        assert!(r[B][0] < r[A][0], "b before a at α0");
        assert_eq!(r[A][0] + 1, 2, "a reaches α1 at 2");
        assert!(r[A][0] + 1 > s.sched[A][1], "later than o(a, α1)");
        assert_eq!(carried[A], [2, 1, 0], "a's slack into α0, α1, α2");
        assert_eq!(carried[C1], [0], "c1's slack at α1");
        assert_eq!(carried[C2], [0], "c2's slack at α1");

        let late = s.overdue(&r);
        assert_eq!(late.len(), 1, "{late:?}");
        assert!([A, C2].contains(&late[0]), "{}", NAME[late[0]]);
        assert_eq!(NAME[late[0]], "c2");
    }

    /// Once α0 sends b first (LSTF's choice), no choice at α1 or α2 saves
    /// the replay: c1 and c2 need α1 at 2 and 3, and a needs it by 3. With
    /// a first at α0, the original itself is a perfect replay.
    #[test]
    fn no_rule_replays_fig_a3_once_b_goes_first() {
        let (s, _) = from_table(ORIGINAL);
        assert!(!perfect_replay_exists(&s, B));
        assert!(perfect_replay_exists(&s, A));
    }
}

/// Figure A.2 ([TH] App. A.5): simple priorities fail with two congestion
/// points per packet.
mod fig_a2 {
    use super::*;

    const A: usize = 0;
    const B: usize = 1;
    const C: usize = 2;
    const NAME: [&str; 3] = ["a", "b", "c"];

    /// 1 unit = 10 ticks of [`U`] / 10 ps.
    const TICK: u64 = U / 10;

    /// The caption's timing, α1..α3 as points 0..2: T = 1, 0.5, 0.2 units
    /// (10, 5, 2 ticks); L, [INF] the link from α1 to α3, propagation 2
    /// units (20 ticks); every other link zero.
    fn timing() -> Timing {
        let mut link = vec![vec![0; 3]; 3];
        link[0][2] = 20;
        Timing {
            tick: TICK,
            tx: vec![10, 5, 2],
            link,
        }
    }

    /// **[INF] A reconstruction**: the figure is not in our copy of [TH],
    /// only A.5's prose and the caption (flows A, B, C; one packet size;
    /// T = 1, 0.5, 0.2 at α1, α2, α3; link L of propagation 2; every other
    /// link, ingress, egress and white switch zero time). Ticks; a
    /// packet's cells are (arrival, start).
    ///
    /// The three requirements (a before b at α1, b before c at α2, c before
    /// a at α3) make each pair of packets meet at one point, so each packet
    /// crosses exactly two: a α1 and α3, b α1 and α2, c α2 and α3. A
    /// requirement binds a work-conserving replay only if both packets wait
    /// at that point together; with three packets that means arriving at the
    /// same instant. Each point cannot hold one packet's first hop and the
    /// other's second: going round the cycle, each second hop comes after
    /// the first hop that must precede it, and the delays would sum to
    /// zero. So one point holds two first hops and another two second hops;
    /// of the six ways to choose them, only one makes the meetings
    /// simultaneous with the caption's numbers: a and b enter at α1 at 0
    /// (a sent 0–1, b 1–2); b and c meet at α2 at 2 (b 2–2.5, c 2.5–3); a
    /// crosses L from α1 and meets c at α3 at 1 + 2 = 3 (c 3–3.2, a
    /// 3.2–3.4). The meeting at α3 needs T1 + 2·T2 = L, and 1 + 2 × 0.5 = 2:
    /// the caption's numbers fit it exactly. Each packet waits only behind
    /// the packet that must precede it: slacks a 0.2, b 1, c 0.5 units.
    const ORIGINAL: &[Row] = &[
        (0, &[(A, 0, 0), (B, 0, 10)]),
        (1, &[(B, 20, 20), (C, 20, 25)]),
        (2, &[(C, 30, 30), (A, 30, 32)]),
    ];

    /// The original is a viable, work-conserving schedule of the caption's
    /// timing in which every packet crosses two points and each point
    /// serves its pair in A.5's order: (a, b) at α1, (b, c) at α2, (c, a) at
    /// α3. Its exits (a 3.4, b 2.5, c 3.2 units) and slacks (0.2, 1, 0.5)
    /// are the hand values above. Starting c at α2 while b is still sent
    /// there is rejected, so the check can fail.
    #[test]
    fn fig_a2_original_is_viable_with_a_priority_cycle() {
        let (s, arr) = from_table(ORIGINAL);
        let tm = timing();
        viable_timed(&s.net, &tm, &arr, &s.sched, true).unwrap();
        assert_eq!(s.net.paths, [vec![0, 2], vec![0, 1], vec![1, 2]]);
        assert!(s.net.paths.iter().all(|p| p.len() <= 2));

        let order: Vec<Vec<&str>> = (0..3)
            .map(|node| {
                let mut here: Vec<(u64, usize)> = (0..3)
                    .filter_map(|p| {
                        let h = s.net.paths[p].iter().position(|&n| n == node)?;
                        Some((s.sched[p][h], p))
                    })
                    .collect();
                here.sort_unstable();
                here.into_iter().map(|(_, p)| NAME[p]).collect()
            })
            .collect();
        assert_eq!(order, [["a", "b"], ["b", "c"], ["c", "a"]]);

        let exits: Vec<u64> = (0..3)
            .map(|p| tm.exit(&s.net.paths[p], &s.sched[p]))
            .collect();
        assert_eq!(exits, [34, 25, 32]);
        let slacks: Vec<i64> = (0..3).map(|p| tm.slack(&s, p)).collect();
        assert_eq!(slacks, [2, 10, 5]);

        let mut bad = s.sched.clone();
        bad[C][0] = 22;
        let mut bad_arr = arr.clone();
        bad_arr[C][1] = 27;
        let e = viable_timed(&s.net, &tm, &bad_arr, &bad, false).unwrap_err();
        assert!(e.contains("starts 2 at 22 while sending"), "{e}");
    }

    /// Replays the original with psim's rank queue at every point and
    /// `rank(p, h)` stamped into p's header at its h-th point.
    fn by_rank(s: &Schedule, rank: impl Fn(usize, usize) -> u64) -> Vec<Vec<u64>> {
        let mk = || RankQueue::new(ROOM);
        replay_timed(&s.net, &timing(), mk, &mut Kit::new(0), |p, h, _, hdr| {
            hdr.rank = rank(p, h);
        })
    }

    /// [TH] App. A.5: every one of the 6 static orders of (a, b, c) breaks
    /// one of the three requirements and leaves a packet overdue. By hand
    /// (ticks; smallest priority first):
    /// - b before a at α1 (b<a<c, b<c<a, c<b<a): a is sent 10–20, crosses
    ///   L, reaches α3 at 40 and exits at 42 > 34: a late. b (α2 at 10,
    ///   alone) and c (α2 at 20, α3 at 25, both alone) are early.
    /// - a before b at α1, c before b at α2 (a<c<b, c<a<b): b and c meet
    ///   at α2 at 20; c goes 20–25, b 25–30: b exits 30 > 25, late. c
    ///   reaches α3 at 25, alone; a at 30, alone, exits 32: both on time.
    /// - a<b<c: α1 and α2 as the original; a and c meet at α3 at 30, a goes
    ///   30–32 and c 32–34: c exits 34 > 32, late.
    ///
    /// Control: per-hop priorities o(p, α) ([TH] App. A.1) replay it
    /// exactly, so the failures come from one priority per packet, not
    /// from the driver.
    #[test]
    fn simple_priorities_miss_fig_a2_in_every_order() {
        let (s, _) = from_table(ORIGINAL);
        let tm = timing();
        let cases: [([usize; 3], &[usize]); 6] = [
            ([A, B, C], &[C]),
            ([A, C, B], &[B]),
            ([B, A, C], &[A]),
            ([B, C, A], &[A]),
            ([C, A, B], &[B]),
            ([C, B, A], &[A]),
        ];
        let distinct: std::collections::HashSet<[usize; 3]> = cases.iter().map(|c| c.0).collect();
        assert_eq!(distinct.len(), 6, "all six orders");
        for (order, want) in cases {
            let prio = |p: usize| order.iter().position(|&q| q == p).unwrap() as u64;
            let r = by_rank(&s, |p, _| prio(p));
            let late = tm.overdue(&s, &r);
            let names = order.map(|p| NAME[p]);
            assert!(!late.is_empty(), "{names:?} replays the original");
            assert_eq!(late, want, "{names:?}");
        }

        let r = by_rank(&s, |p, h| s.sched[p][h]);
        assert_eq!(r, s.sched, "per-hop priorities replay it");
    }

    /// [TH] App. A.6.1: LSTF replays any schedule with at most two
    /// congestion points per packet; here with black-box slack o − i −
    /// t_min (a 2, b 10, c 5 ticks). Keys arrival + slack (+ psim's
    /// constant T), by hand: α1 at 0, a 2 < b 10: a, then b at 10 with its
    /// slack spent (0); α2 at 20, b 20 < c 25: b, then c at 25 (slack 0);
    /// α3 at 30, c 30 < a 32: c, then a at 32. That is the original itself:
    /// nothing is overdue.
    #[test]
    fn lstf_replays_fig_a2() {
        let (s, _) = from_table(ORIGINAL);
        let tm = timing();
        let mk = || LstfQueue::new(ROOM, Form::Lstf);
        let r = replay_timed(&s.net, &tm, mk, &mut Kit::new(0), |p, h, _, hdr| {
            if h == 0 {
                hdr.rank = (tm.slack(&s, p) * TICK as i64) as u64;
            }
        });
        assert_eq!(tm.overdue(&s, &r), [] as [usize; 0]);
        assert_eq!(r, s.sched);
    }
}
