//! Communication between ranks.
//!
//! The window loop talks to other ranks only through [`Comm`]. A
//! single-process run uses [`SingleProcess`], whose collectives are
//! identities: the same loop runs with one rank or many. With the `mpi`
//! feature, [`mpi_comm::MpiComm`] maps them onto MPI collectives (one
//! all-to-all of packets and one all-gather of notices per window, one
//! allreduce for the next time).

use std::time::Duration;

/// Collectives the engine needs. Buffers are opaque bytes ([`super::wire`]).
pub trait Comm {
    /// This process's rank.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Sends `send[r]` to rank `r` (the own entry is ignored); returns what each rank sent here.
    fn all_to_all(&mut self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>>;
    /// Every rank's buffer, in rank order.
    fn all_gather(&mut self, send: Vec<u8>) -> Vec<Vec<u8>>;
    /// Element-wise minimum over ranks.
    fn all_min(&mut self, v: &[u64]) -> Vec<u64>;
    /// Element-wise sum over ranks.
    fn all_sum(&mut self, v: &[u64]) -> Vec<u64>;
    /// Waits for every rank.
    fn barrier(&mut self);
    /// Bytes this rank sent to other ranks so far.
    fn bytes_sent(&self) -> u64;
    /// Time spent inside collectives (waiting for other ranks) so far.
    fn wait(&self) -> Duration;
}

/// One process: every collective is local.
#[derive(Default)]
pub struct SingleProcess;

impl Comm for SingleProcess {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn all_to_all(&mut self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        vec![Vec::new(); send.len()]
    }
    fn all_gather(&mut self, send: Vec<u8>) -> Vec<Vec<u8>> {
        vec![send]
    }
    fn all_min(&mut self, v: &[u64]) -> Vec<u64> {
        v.to_vec()
    }
    fn all_sum(&mut self, v: &[u64]) -> Vec<u64> {
        v.to_vec()
    }
    fn barrier(&mut self) {}
    fn bytes_sent(&self) -> u64 {
        0
    }
    fn wait(&self) -> Duration {
        Duration::ZERO
    }
}

/// MPI over the system's OpenMPI (feature `mpi`).
#[cfg(feature = "mpi")]
pub mod mpi_comm {
    use super::Comm;
    use std::time::Instant;

    /// Measures time spent in a collective.
    struct Stopwatch(Instant);

    impl Stopwatch {
        fn start() -> Self {
            Stopwatch(Instant::now())
        }
        fn add_to(self, d: &mut Duration) {
            *d += self.0.elapsed();
        }
    }

    use mpi::collective::SystemOperation;
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use mpi::Count;
    use std::time::Duration;

    /// The world communicator.
    pub struct MpiComm {
        _universe: mpi::environment::Universe,
        world: SimpleCommunicator,
        sent: u64,
        wait: Duration,
    }

    impl MpiComm {
        /// Initialises MPI. `None` if it was already initialised.
        pub fn init() -> Option<MpiComm> {
            let universe = mpi::initialize()?;
            let world = universe.world();
            Some(MpiComm {
                _universe: universe,
                world,
                sent: 0,
                wait: Duration::ZERO,
            })
        }
        /// Ends the whole job at once (all ranks), with `code`.
        pub fn abort(&self, code: i32) -> ! {
            self.world.abort(code)
        }
    }

    fn displs(counts: &[Count]) -> Vec<Count> {
        counts
            .iter()
            .scan(0, |acc, &c| {
                let d = *acc;
                *acc += c;
                Some(d)
            })
            .collect()
    }

    impl Comm for MpiComm {
        fn rank(&self) -> u32 {
            self.world.rank() as u32
        }
        fn size(&self) -> u32 {
            self.world.size() as u32
        }
        fn all_to_all(&mut self, mut send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
            let sw = Stopwatch::start();
            let me = self.rank() as usize;
            send[me].clear();
            let scounts: Vec<Count> = send.iter().map(|b| b.len() as Count).collect();
            self.sent += scounts.iter().map(|&c| c as u64).sum::<u64>();
            let mut rcounts = vec![0 as Count; send.len()];
            self.world.all_to_all_into(&scounts[..], &mut rcounts[..]);
            // Empty Rust buffers share one dangling address, which MPI reads as
            // send buffer == receive buffer (an error): back them with real,
            // distinct allocations of at least one byte.
            let stotal: usize = send.iter().map(Vec::len).sum();
            let mut sbuf = Vec::with_capacity(stotal.max(1));
            for b in &send {
                sbuf.extend_from_slice(b);
            }
            sbuf.resize(stotal.max(1), 0);
            let rtotal: usize = rcounts.iter().map(|&c| c as usize).sum();
            let mut rbuf = vec![0u8; rtotal.max(1)];
            {
                let sp = Partition::new(&sbuf[..stotal], scounts.clone(), displs(&scounts));
                let rd = displs(&rcounts);
                let mut rp = PartitionMut::new(&mut rbuf[..rtotal], rcounts.clone(), rd);
                self.world.all_to_all_varcount_into(&sp, &mut rp);
            }
            let mut out = Vec::with_capacity(send.len());
            let mut at = 0;
            for c in rcounts {
                out.push(rbuf[at..at + c as usize].to_vec());
                at += c as usize;
            }
            sw.add_to(&mut self.wait);
            out
        }
        fn all_gather(&mut self, send: Vec<u8>) -> Vec<Vec<u8>> {
            let sw = Stopwatch::start();
            let n = self.size() as usize;
            let mut counts = vec![0 as Count; n];
            self.world
                .all_gather_into(&(send.len() as Count), &mut counts[..]);
            self.sent += send.len() as u64 * (n as u64 - 1);
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            // Distinct real allocations even when empty (see all_to_all).
            let len = send.len();
            let mut sbuf = send;
            sbuf.resize(len.max(1), 0);
            let mut buf = vec![0u8; total.max(1)];
            {
                let d = displs(&counts);
                let mut p = PartitionMut::new(&mut buf[..total], counts.clone(), d);
                self.world.all_gather_varcount_into(&sbuf[..len], &mut p);
            }
            let mut out = Vec::with_capacity(n);
            let mut at = 0;
            for c in counts {
                out.push(buf[at..at + c as usize].to_vec());
                at += c as usize;
            }
            sw.add_to(&mut self.wait);
            out
        }
        fn all_min(&mut self, v: &[u64]) -> Vec<u64> {
            let sw = Stopwatch::start();
            let mut out = vec![0u64; v.len()];
            self.world
                .all_reduce_into(v, &mut out[..], SystemOperation::min());
            sw.add_to(&mut self.wait);
            out
        }
        fn all_sum(&mut self, v: &[u64]) -> Vec<u64> {
            let sw = Stopwatch::start();
            let mut out = vec![0u64; v.len()];
            self.world
                .all_reduce_into(v, &mut out[..], SystemOperation::sum());
            sw.add_to(&mut self.wait);
            out
        }
        fn barrier(&mut self) {
            let sw = Stopwatch::start();
            self.world.barrier();
            sw.add_to(&mut self.wait);
        }
        fn bytes_sent(&self) -> u64 {
            self.sent
        }
        fn wait(&self) -> Duration {
            self.wait
        }
    }
}
