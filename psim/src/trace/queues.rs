//! Queue occupancy and link utilisation per output port, as time series at a
//! fixed interval `I`.
//!
//! Interval `k` covers `[k*I, (k+1)*I)`; a run of `sim_end_ps` has
//! `sim_end_ps / I + 1` intervals (the last one partial), so every event time
//! `<= sim_end_ps` falls in one. For each traced port and interval:
//!
//! * `queue_bytes`, `queue_pkts`: the queue at the instant `k*I`, **before**
//!   any event at exactly that time (the left limit of the piecewise-constant
//!   queue length). Recorded lazily: just before a port's queue changes, the
//!   samples of every boundary crossed since its last change are filled in
//!   with the unchanged state, so quiet ports cost nothing per interval.
//! * `tx_bytes`: wire bytes of packets whose serialisation *started* in the
//!   interval (integer, so sums over intervals equal the port counters).
//! * `busy_ps`: picoseconds of the interval during which the link was
//!   serialising, split exactly across interval boundaries; `busy_ps / I` is
//!   the link utilisation.
//! * `paused_ps_p0` .. `paused_ps_p7`: picoseconds of the interval during
//!   which PFC held that priority of the port, split the same way. Recorded
//!   when a pause ends (and at the run's end for pauses still open), so a
//!   port that is never paused carries no pause series at all.
//!
//! Every value is a function of the port's own event history, so the series
//! do not depend on the partition. Each shard records its own ports.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, UInt16Array, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, UInt16Type, UInt32Type, UInt64Type};
use rustc_hash::FxHashMap;

use super::table::Table;
use super::OutputError;

/// Version of the queues table layout.
pub const QUEUES_SCHEMA_VERSION: u32 = 2;

/// Parquet metadata key holding the interval, ps.
pub const INTERVAL_KEY: &str = "psim.interval_ps";

/// The queues table (Parquet long format).
pub const QUEUES: Table = Table {
    dir: "queues",
    columns: &[
        ("time_ps", DataType::UInt64),
        ("node", DataType::UInt32),
        ("port", DataType::UInt16),
        ("peer", DataType::UInt32),
        ("queue_bytes", DataType::UInt64),
        ("queue_pkts", DataType::UInt32),
        ("tx_bytes", DataType::UInt64),
        ("busy_ps", DataType::UInt64),
        ("paused_ps_p0", DataType::UInt64),
        ("paused_ps_p1", DataType::UInt64),
        ("paused_ps_p2", DataType::UInt64),
        ("paused_ps_p3", DataType::UInt64),
        ("paused_ps_p4", DataType::UInt64),
        ("paused_ps_p5", DataType::UInt64),
        ("paused_ps_p6", DataType::UInt64),
        ("paused_ps_p7", DataType::UInt64),
    ],
    nullable: &[],
    version: QUEUES_SCHEMA_VERSION,
};

/// The dense series of one port: element `k` of each vector is interval `k`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortSeries {
    /// Entity owning the port.
    pub node: u32,
    /// Port index.
    pub port: u16,
    /// Entity at the far end of the port's link.
    pub peer: u32,
    /// Queue bytes at each interval start.
    pub queue_bytes: Vec<u64>,
    /// Queue packets at each interval start.
    pub queue_pkts: Vec<u32>,
    /// Bytes whose serialisation started in each interval.
    pub tx_bytes: Vec<u64>,
    /// Serialising time within each interval, ps.
    pub busy_ps: Vec<u64>,
    /// Paused time within each interval per priority, ps; empty for a port
    /// that was never paused (read it as zeros).
    pub paused_ps: Vec<[u64; 8]>,
}

impl PortSeries {
    fn new(node: u32, port: u16, peer: u32) -> PortSeries {
        PortSeries {
            node,
            port,
            peer,
            queue_bytes: Vec::new(),
            queue_pkts: Vec::new(),
            tx_bytes: Vec::new(),
            busy_ps: Vec::new(),
            paused_ps: Vec::new(),
        }
    }

    /// Paused time of priority `prio` within interval `k` (0 if never paused).
    pub fn paused_in(&self, k: usize, prio: u8) -> u64 {
        self.paused_ps.get(k).map_or(0, |p| p[prio as usize])
    }

    fn add_paused(&mut self, interval: u64, prio: u8, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let need = ((end - 1) / interval + 1) as usize;
        if self.paused_ps.len() < need {
            self.paused_ps.resize(need, [0; 8]);
        }
        for_each_interval(interval, start, end, |i, ps| {
            self.paused_ps[i][prio as usize] += ps;
        });
    }

    /// Fill in the samples of every boundary `<= now` not yet recorded.
    #[inline]
    fn catch_up(&mut self, interval: u64, now: u64, bytes: u64, pkts: u32) {
        let upto = now / interval + 1; // boundaries 0..upto are <= now
        while (self.queue_bytes.len() as u64) < upto {
            self.queue_bytes.push(bytes);
            self.queue_pkts.push(pkts);
        }
    }

    fn add_tx(&mut self, interval: u64, start: u64, end: u64, bytes: u64) {
        let k = (start / interval) as usize;
        let last = (end.saturating_sub(1) / interval) as usize;
        let need = last.max(k) + 1;
        if self.tx_bytes.len() < need {
            self.tx_bytes.resize(need, 0);
            self.busy_ps.resize(need, 0);
        }
        self.tx_bytes[k] += bytes;
        for_each_interval(interval, start, end, |i, ps| self.busy_ps[i] += ps);
    }
}

/// Splits the time `[start, end)` at interval boundaries: `f(k, ps)` for
/// each interval `k` it touches, with the picoseconds it spends there.
#[inline]
fn for_each_interval(interval: u64, start: u64, end: u64, mut f: impl FnMut(usize, u64)) {
    let mut t = start;
    while t < end {
        let i = t / interval;
        let stop = end.min((i + 1) * interval);
        f(i as usize, stop - t);
        t = stop;
    }
}

/// A shard's queue-series recorder.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct QueueSeries {
    interval: u64,
    index: FxHashMap<(u32, u16), u32>,
    ports: Vec<PortSeries>,
    /// Per port, when its latest serialisation ends (to cut it at the run's end).
    busy_until: Vec<u64>,
}

impl QueueSeries {
    /// A recorder at `interval_ps` for `ports`: (node, port, peer).
    pub fn new(interval_ps: u64, ports: impl IntoIterator<Item = (u32, u16, u32)>) -> QueueSeries {
        let mut s = QueueSeries {
            interval: interval_ps,
            index: FxHashMap::default(),
            ports: Vec::new(),
            busy_until: Vec::new(),
        };
        for (node, port, peer) in ports {
            s.index.insert((node, port), s.ports.len() as u32);
            s.ports.push(PortSeries::new(node, port, peer));
            s.busy_until.push(0);
        }
        s
    }

    /// Call just before port `port` of `node` changes, with its queue as it
    /// still is.
    #[inline]
    pub fn before_change(&mut self, node: u32, port: u16, now: u64, bytes: u64, pkts: u32) {
        if let Some(&i) = self.index.get(&(node, port)) {
            self.ports[i as usize].catch_up(self.interval, now, bytes, pkts);
        }
    }

    /// A packet of `bytes` started serialising at `start` and ends at `end`.
    #[inline]
    pub fn transmitted(&mut self, node: u32, port: u16, start: u64, end: u64, bytes: u64) {
        if let Some(&i) = self.index.get(&(node, port)) {
            self.ports[i as usize].add_tx(self.interval, start, end, bytes);
            self.busy_until[i as usize] = end;
        }
    }

    /// Priority `prio` of the port was paused from `start` to `end`.
    pub fn paused(&mut self, node: u32, port: u16, prio: u8, start: u64, end: u64) {
        if let Some(&i) = self.index.get(&(node, port)) {
            self.ports[i as usize].add_paused(self.interval, prio, start, end);
        }
    }

    /// Completes every series up to `sim_end_ps` (`state` gives a port's
    /// final queue, and since when each priority still paused has been) and
    /// returns them. Busy time after `sim_end_ps` is cut off: serialisations
    /// do not overlap and all start by `sim_end_ps`, so only the latest can
    /// extend past it. Pauses still open count up to `sim_end_ps`.
    pub fn finish(
        mut self,
        sim_end_ps: u64,
        state: impl Fn(u32, u16) -> PortAtEnd,
    ) -> Vec<PortSeries> {
        let n = intervals(sim_end_ps, self.interval);
        for (p, &until) in self.ports.iter_mut().zip(&self.busy_until) {
            for_each_interval(self.interval, sim_end_ps, until, |i, ps| p.busy_ps[i] -= ps);
            let end = state(p.node, p.port);
            p.catch_up(
                self.interval,
                (n as u64 - 1) * self.interval,
                end.bytes,
                end.pkts,
            );
            for (prio, since) in end.paused_since.iter().enumerate() {
                if let Some(since) = *since {
                    p.add_paused(self.interval, prio as u8, since, sim_end_ps);
                }
            }
            p.queue_bytes.truncate(n);
            p.queue_pkts.truncate(n);
            p.tx_bytes.resize(n, 0);
            p.busy_ps.resize(n, 0);
            if !p.paused_ps.is_empty() {
                p.paused_ps.resize(n, [0; 8]);
            }
        }
        self.ports.sort_by_key(|p| (p.node, p.port));
        self.ports
    }
}

/// A port as the run ends, for [`QueueSeries::finish`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortAtEnd {
    /// Bytes queued.
    pub bytes: u64,
    /// Packets queued.
    pub pkts: u32,
    /// For each priority still paused, since when, ps.
    pub paused_since: [Option<u64>; 8],
}

/// Number of intervals of a run ending at `sim_end_ps`.
pub fn intervals(sim_end_ps: u64, interval_ps: u64) -> usize {
    (sim_end_ps / interval_ps + 1) as usize
}

/// One row of the long format.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueSample {
    /// Interval start `k * interval`, ps.
    pub time_ps: u64,
    /// Entity owning the port.
    pub node: u32,
    /// Port index.
    pub port: u16,
    /// Entity at the far end of the link.
    pub peer: u32,
    /// Queue bytes at `time_ps`.
    pub queue_bytes: u64,
    /// Queue packets at `time_ps`.
    pub queue_pkts: u32,
    /// Bytes whose serialisation started in the interval.
    pub tx_bytes: u64,
    /// Serialising time within the interval, ps.
    pub busy_ps: u64,
    /// Paused time within the interval, per priority, ps.
    pub paused_ps: [u64; 8],
}

/// Writes `series` in long format as `DIR/queues/part-{part:05}.parquet`,
/// rows sorted by (node, port, time_ps).
pub fn write_queues_part(
    dir: &Path,
    part: u32,
    interval_ps: u64,
    series: &[PortSeries],
) -> Result<PathBuf, OutputError> {
    let mut order: Vec<&PortSeries> = series.iter().collect();
    order.sort_by_key(|p| (p.node, p.port));
    let mut batches = order.into_iter().map(|p| -> Vec<ArrayRef> {
        let n = p.queue_bytes.len();
        let rep32 = |v: u32| Arc::new(UInt32Array::from(vec![v; n])) as ArrayRef;
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(
                (0..n as u64).map(|k| k * interval_ps),
            )),
            rep32(p.node),
            Arc::new(UInt16Array::from(vec![p.port; n])),
            rep32(p.peer),
            Arc::new(UInt64Array::from(p.queue_bytes.clone())),
            Arc::new(UInt32Array::from(p.queue_pkts.clone())),
            Arc::new(UInt64Array::from(p.tx_bytes.clone())),
            Arc::new(UInt64Array::from(p.busy_ps.clone())),
        ];
        for prio in 0..8u8 {
            cols.push(Arc::new(UInt64Array::from_iter_values(
                (0..n).map(|k| p.paused_in(k, prio)),
            )));
        }
        cols
    });
    QUEUES.write_part(
        dir,
        part,
        &[(INTERVAL_KEY, interval_ps.to_string())],
        &mut batches,
    )
}

/// Reads every `DIR/queues/part-*.parquet`: the interval (the same in every
/// part, or an error naming the part that differs) and the rows sorted by
/// (node, port, time_ps).
pub fn read_queues(dir: &Path) -> Result<(u64, Vec<QueueSample>), OutputError> {
    let mut rows = Vec::new();
    let mut interval: Option<u64> = None;
    for path in QUEUES.parts(dir)? {
        let kv = QUEUES.read_part(&path, &mut |b| {
            let t = &QUEUES;
            let time = t.col::<UInt64Type>(&path, b, 0)?;
            let node = t.col::<UInt32Type>(&path, b, 1)?;
            let port = t.col::<UInt16Type>(&path, b, 2)?;
            let peer = t.col::<UInt32Type>(&path, b, 3)?;
            let qb = t.col::<UInt64Type>(&path, b, 4)?;
            let qp = t.col::<UInt32Type>(&path, b, 5)?;
            let tx = t.col::<UInt64Type>(&path, b, 6)?;
            let busy = t.col::<UInt64Type>(&path, b, 7)?;
            let paused = (0..8)
                .map(|k| t.col::<UInt64Type>(&path, b, 8 + k))
                .collect::<Result<Vec<_>, _>>()?;
            for i in 0..b.num_rows() {
                rows.push(QueueSample {
                    time_ps: time.value(i),
                    node: node.value(i),
                    port: port.value(i),
                    peer: peer.value(i),
                    queue_bytes: qb.value(i),
                    queue_pkts: qp.value(i),
                    tx_bytes: tx.value(i),
                    busy_ps: busy.value(i),
                    paused_ps: std::array::from_fn(|k| paused[k].value(i)),
                });
            }
            Ok(())
        })?;
        let this = kv
            .iter()
            .find(|(k, _)| k == INTERVAL_KEY)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| OutputError::InvalidData {
                path: path.clone(),
                detail: format!("missing or invalid {INTERVAL_KEY} metadata"),
            })?;
        if interval.is_some_and(|i| i != this) {
            return Err(OutputError::InvalidData {
                path: path.clone(),
                detail: format!("{INTERVAL_KEY} = {this} differs from the other parts"),
            });
        }
        interval = Some(this);
    }
    rows.sort_by_key(|r| (r.node, r.port, r.time_ps));
    Ok((interval.unwrap_or(1), rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_is_pinned() {
        let cols = crate::trace::table::signature(&QUEUES.schema());
        assert_eq!(
            cols,
            [
                "time_ps:UInt64:false",
                "node:UInt32:false",
                "port:UInt16:false",
                "peer:UInt32:false",
                "queue_bytes:UInt64:false",
                "queue_pkts:UInt32:false",
                "tx_bytes:UInt64:false",
                "busy_ps:UInt64:false",
                "paused_ps_p0:UInt64:false",
                "paused_ps_p1:UInt64:false",
                "paused_ps_p2:UInt64:false",
                "paused_ps_p3:UInt64:false",
                "paused_ps_p4:UInt64:false",
                "paused_ps_p5:UInt64:false",
                "paused_ps_p6:UInt64:false",
                "paused_ps_p7:UInt64:false",
            ]
        );
        assert_eq!(QUEUES_SCHEMA_VERSION, 2);
        assert_eq!(QUEUES.dir, "queues");
    }

    #[test]
    fn samples_are_left_limits_and_busy_time_splits_exactly() {
        let mut s = QueueSeries::new(100, [(4, 1, 9), (4, 2, 8)]);
        // Port (4,1): empty until 150, 2 packets from 150, 1 from 250.
        s.before_change(4, 1, 150, 0, 0);
        s.before_change(4, 1, 250, 3000, 2); // boundary 200 sees 2 packets
        s.transmitted(4, 1, 250, 420, 1500); // busy 250..420
        s.before_change(4, 1, 300, 1500, 1); // boundary 300 (== now) sees the old state
        s.before_change(4, 3, 300, 7, 7); // untraced port: ignored
        let out = s.finish(450, |_, _| PortAtEnd::default());
        assert_eq!(out.len(), 2);
        let p = &out[0];
        assert_eq!((p.node, p.port, p.peer), (4, 1, 9));
        assert_eq!(p.queue_bytes, vec![0, 0, 3000, 1500, 0]);
        assert_eq!(p.queue_pkts, vec![0, 0, 2, 1, 0]);
        assert_eq!(p.tx_bytes, vec![0, 0, 1500, 0, 0]);
        assert_eq!(p.busy_ps, vec![0, 0, 50, 100, 20]);
        assert_eq!(out[1].queue_bytes, vec![0; 5]);
        assert_eq!(out[1].busy_ps, vec![0; 5]);
    }

    #[test]
    fn busy_time_after_the_end_is_cut_off() {
        let mut s = QueueSeries::new(100, [(0, 0, 1)]);
        s.transmitted(0, 0, 180, 260, 64);
        s.transmitted(0, 0, 260, 390, 64); // runs past the end at 330
        let p = &s.finish(330, |_, _| PortAtEnd::default())[0];
        assert_eq!(p.busy_ps, vec![0, 20, 100, 30]);
        assert_eq!(p.busy_ps.iter().sum::<u64>(), 330 - 180);
        assert_eq!(p.tx_bytes, vec![0, 64, 64, 0]);
    }

    #[test]
    fn paused_time_splits_per_priority_and_open_pauses_run_to_the_end() {
        let mut s = QueueSeries::new(100, [(2, 0, 5), (2, 1, 6)]);
        s.paused(2, 0, 3, 50, 260); // 50 + 100 + 60
        s.paused(2, 0, 3, 280, 300); // ends on a boundary
        s.paused(2, 0, 0, 120, 130);
        s.paused(2, 9, 3, 0, 100); // untraced port: ignored
        let out = s.finish(420, |_, port| PortAtEnd {
            paused_since: if port == 0 {
                [None, None, None, None, None, Some(390), None, None]
            } else {
                [None; 8]
            },
            ..PortAtEnd::default()
        });
        let p = &out[0];
        let col = |prio: u8| (0..5).map(|k| p.paused_in(k, prio)).collect::<Vec<_>>();
        assert_eq!(col(3), [50, 100, 80, 0, 0]);
        assert_eq!(col(0), [0, 10, 0, 0, 0]);
        assert_eq!(
            col(5),
            [0, 0, 0, 10, 20],
            "open pause counted up to the end at 420"
        );
        assert_eq!(p.paused_ps.len(), 5, "resized to the run's intervals");
        assert!(out[1].paused_ps.is_empty(), "never paused: no series kept");
        assert_eq!(out[1].paused_in(3, 3), 0);
    }

    #[test]
    fn long_format_round_trip_and_errors_name_files() {
        let t = tempfile::tempdir().unwrap();
        let mut s = QueueSeries::new(10, [(1, 0, 2)]);
        s.before_change(1, 0, 5, 0, 0);
        s.transmitted(1, 0, 5, 25, 64);
        s.paused(1, 0, 6, 12, 17); // priority 6 paused 12..17
        let a = s.finish(30, |_, _| PortAtEnd {
            bytes: 64,
            pkts: 1,
            paused_since: [None, None, None, None, None, None, None, Some(24)],
        });
        write_queues_part(t.path(), 0, 10, &a).unwrap();
        write_queues_part(t.path(), 1, 10, &[]).unwrap();
        let (interval, rows) = read_queues(t.path()).unwrap();
        assert_eq!(interval, 10);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows.iter().map(|r| r.busy_ps).sum::<u64>(), 20);
        assert_eq!(rows[3].queue_bytes, 64);
        assert_eq!(rows[2].time_ps, 20);
        let paused: Vec<[u64; 8]> = rows.iter().map(|r| r.paused_ps).collect();
        let (p6, p7) = (
            |v: u64| [0, 0, 0, 0, 0, 0, v, 0],
            |v: u64| [0, 0, 0, 0, 0, 0, 0, v],
        );
        assert_eq!(paused, [[0; 8], p6(5), p7(6), [0; 8]]);

        write_queues_part(t.path(), 2, 20, &[]).unwrap();
        let e = read_queues(t.path()).unwrap_err().to_string();
        assert!(e.contains("part-00002.parquet"), "{e}");
        let p = t.path().join("queues/part-00002.parquet");
        std::fs::write(&p, b"garbage").unwrap();
        let e = read_queues(t.path()).unwrap_err().to_string();
        assert!(e.contains(&p.display().to_string()), "{e}");
        std::fs::remove_dir_all(t.path().join("queues")).unwrap();
        let e = read_queues(t.path()).unwrap_err().to_string();
        assert!(e.contains("queues"), "{e}");
    }
}
