//! Closed forms over a host-to-host path: the links a flow crosses and its
//! ideal completion time, the yardstick of every slowdown psim reports.
//!
//! # The ideal FCT is a lower bound (decision A16, docs/references.md)
//!
//! `ideal_fct_ps` is a time no schedule can beat, for any transport,
//! multipath included; it is not a typical time. It rests on three facts of
//! the model, each true of every transport psim has:
//!
//! 1. A flow of `S` bytes in `M`-byte payloads (the protocol's MTU) sends at
//!    least `n = ⌈S/M⌉` data packets, each with a [`HEADER_BYTES`] header;
//!    every transport cuts the flow at multiples of `M` from byte 0, so
//!    `n − 1` of them are full (`F = M + H` bytes on the wire) and the
//!    smallest is the tail, `T = S − (n−1)·M + H` bytes. `W = S + n·H` wire
//!    bytes in all.
//! 2. Links are store and forward: a packet of `b` bytes occupies a link of
//!    rate `r` for `tx(b, r)` (rounded up, so that a sum of packets is never
//!    shorter than their bytes sent together) and then needs its delay `d`.
//! 3. A host has one NIC, so the first link is on every path; so is the last
//!    one, into the destination. Where a flow has one path, every link is.
//!
//! For any link `j` every path shares, all `W` bytes cross `j` back to
//! back at best. No bit starts on `j` before the smallest packet (`T`) could
//! reach it, `before(j, T)`: `Σ (tx(T, rᵢ) + dᵢ)` over the links ahead of
//! `j`, least over the paths. The packet that leaves `j` last is at least
//! `T` long and then needs `d_j` and `after(j, T)`, the same sum over the
//! links beyond `j`. So
//!
//! `ideal ≥ before(j, T) + tx(W, r_j) + d_j + after(j, T)` for every shared `j`.
//!
//! The same holds of the `n − 1` full packets alone (each `F` long):
//!
//! `ideal ≥ before(j, F) + tx((n−1)·F, r_j) + d_j + after(j, F)` when `n ≥ 2`.
//!
//! The ideal is the largest of these. A flow that fits in one packet has
//! `T = W`: the ideal is that packet's store and forward over the path, as
//! before. Before this form the ideal charged a full packet's store
//! and forward on every hop, which a sprayed flow's short last packet beats
//! on another path (issue 18).

use super::{LinkSpec, Topology};
use crate::packet::HEADER_BYTES;
use crate::units::tx_time_ps;

/// One link of a path: the output port that feeds it, and its rate and delay.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Hop {
    entity: u32,
    port: u16,
    link: LinkSpec,
}

impl Topology {
    /// The links from host `src` to host `dst` along path id 0, in order.
    pub fn path_links(&self, src: u32, dst: u32) -> Vec<LinkSpec> {
        self.path_hops(src, dst, 0).iter().map(|h| h.link).collect()
    }

    /// The links from `src` to `dst` along path id `path`, with the ports
    /// that feed them (a link's identity).
    fn path_hops(&self, src: u32, dst: u32, path: u32) -> Vec<Hop> {
        let mut at = src;
        let mut hops = Vec::new();
        while at != dst {
            let port = if at == src {
                0
            } else {
                self.route(at, dst, path)
            };
            let info = self.port(at, port);
            hops.push(Hop {
                entity: at,
                port,
                link: info.link,
            });
            at = info.peer;
        }
        hops
    }

    /// t_min of one `bytes`-byte packet from host `src` to host `dst` along
    /// path id `path`: its store-and-forward transmission plus propagation on
    /// every link, the first (the source's NIC) and the last (into `dst`)
    /// included, with no queueing ([TH] §5.1: t_min(p, α, α) = T(p, α)).
    /// Walks the routes without allocating: record and replay calls it per
    /// delivered packet (`replay.rs`).
    pub fn t_min_ps(&self, src: u32, dst: u32, path: u32, bytes: u64) -> u64 {
        self.t_min_to_ps(src, dst, path, bytes, dst)
            .expect("every path ends at its destination")
    }

    /// As [`Self::t_min_ps`], up to the arrival of the packet's last bit at
    /// entity `at` on the way: the links before `at` only. None when the
    /// path from `src` to `dst` (path id `path`) does not cross `at`.
    pub fn t_min_to_ps(&self, src: u32, dst: u32, path: u32, bytes: u64, at: u32) -> Option<u64> {
        let (mut node, mut port, mut t) = (src, 0u16, 0u64);
        loop {
            let info = self.port(node, port);
            t = t
                .saturating_add(tx_time_ps(bytes, info.link.rate_bps))
                .saturating_add(info.link.delay_ps);
            if info.peer == at {
                return Some(t);
            }
            if info.peer == dst {
                return None;
            }
            node = info.peer;
            port = self.route(node, dst, path);
        }
    }

    /// t_min(p, α, dest) ([TH] App. A.4): as [`Self::t_min_ps`], from
    /// entity `at` on the way (its own outgoing link first) to the arrival of
    /// the last bit at `dst`. `at == src` gives the whole t_min; None when
    /// the path does not leave through `at` (`at == dst` included). One walk,
    /// no allocation: network-wide EDF calls it per packet per hop.
    pub fn t_min_from_ps(&self, src: u32, dst: u32, path: u32, bytes: u64, at: u32) -> Option<u64> {
        let (mut node, mut port, mut t) = (src, 0u16, None::<u64>);
        loop {
            if node == at {
                t = Some(0);
            }
            let info = self.port(node, port);
            t = t.map(|t| {
                t.saturating_add(tx_time_ps(bytes, info.link.rate_bps))
                    .saturating_add(info.link.delay_ps)
            });
            if info.peer == dst {
                return t;
            }
            node = info.peer;
            port = self.route(node, dst, path);
        }
    }

    /// The ideal completion time of a `size`-byte flow from `src` to `dst`
    /// in `mtu`-byte payloads: a lower bound no schedule can beat, over any
    /// of the pair's equal-cost paths (derivation in the module doc).
    pub fn ideal_fct(&self, src: u32, dst: u32, size: u64, mtu: u32) -> u64 {
        let paths: Vec<Vec<Hop>> = (0..self.num_paths(src, dst).max(1))
            .map(|p| self.path_hops(src, dst, p))
            .collect();
        let (h, m) = (HEADER_BYTES as u64, mtu.max(1) as u64);
        let n = size.div_ceil(m).max(1);
        let wire = size.saturating_add(n.saturating_mul(h));
        let tail = size.saturating_sub((n - 1) * m) + h;
        let full = m + h;
        let cost = |b: u64, hops: &[Hop]| -> u64 {
            hops.iter().fold(0u64, |t, x| {
                t.saturating_add(tx_time_ps(b, x.link.rate_bps))
                    .saturating_add(x.link.delay_ps)
            })
        };
        let mut best = 0;
        // The links every path crosses: the first (the source's one NIC),
        // the last, and with one path all of them.
        for shared in paths[0]
            .iter()
            .filter(|x| paths.iter().all(|p| p.contains(x)))
        {
            let (r, d) = (shared.link.rate_bps, shared.link.delay_ps);
            // Least time to reach `shared`, and from its far end onwards,
            // of a `b`-byte packet over every path.
            let around = |b: u64| {
                let (mut before, mut after) = (u64::MAX, u64::MAX);
                for p in &paths {
                    let at = p.iter().position(|x| x == shared).expect("shared link");
                    before = before.min(cost(b, &p[..at]));
                    after = after.min(cost(b, &p[at + 1..]));
                }
                before.saturating_add(d).saturating_add(after)
            };
            best = best.max(around(tail).saturating_add(tx_time_ps(wire, r)));
            if n >= 2 {
                let bytes = (n - 1).saturating_mul(full);
                best = best.max(around(full).saturating_add(tx_time_ps(bytes, r)));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FatTree, LeafSpine, LinkSpec, Topology};
    use crate::units::tx_time_ps;

    const R: u64 = 10_000_000_000;
    const L: LinkSpec = LinkSpec {
        rate_bps: R,
        delay_ps: 1_000_000,
    };

    fn fat() -> Topology {
        Topology::FatTree(FatTree::new(4, 1, L, L, L))
    }

    #[test]
    fn one_packet_flow_pays_store_and_forward_on_every_hop() {
        // Hosts 0 and 15 are in different pods: 6 hops, 4 paths.
        let got = fat().ideal_fct(0, 15, 1000, 9000);
        assert_eq!(got, 6 * (tx_time_ps(1064, R) + 1_000_000));
    }

    #[test]
    fn a_long_flow_is_bounded_by_its_wire_bytes_then_a_short_tail() {
        let (size, mtu) = (3 * 9000 + 100, 9000);
        let wire = size + 4 * 64;
        // All wire bytes through the NIC, then the 164-byte tail on 5 more hops.
        let nic = tx_time_ps(wire, R) + 6 * 1_000_000 + 5 * tx_time_ps(164, R);
        // The three full packets alone, the last of them on 5 more hops.
        let full = tx_time_ps(3 * 9064, R) + 6 * 1_000_000 + 5 * tx_time_ps(9064, R);
        let got = fat().ideal_fct(0, 15, size, mtu);
        assert_eq!(got, nic.max(full));
        // Below the old form, a full packet's store and forward on every hop
        // and then the whole flow, which a sprayed short tail could beat.
        let old = 5 * tx_time_ps(9064, R) + tx_time_ps(wire, R) + 6 * 1_000_000;
        assert!(got < old, "{got} {old}");
    }

    #[test]
    fn a_slow_link_counts_where_every_path_crosses_it() {
        let slow = LinkSpec {
            rate_bps: R / 10,
            ..L
        };
        // A 1 Gb/s uplink: with one spine, every path crosses it; with two,
        // a sprayed flow may split across them, and only the NICs bind.
        let one = Topology::LeafSpine(LeafSpine::new(2, 1, 2, L, slow));
        let two = Topology::LeafSpine(LeafSpine::new(2, 2, 2, L, slow));
        let (size, wire) = (90_000, 90_000 + 10 * 64);
        assert!(one.ideal_fct(0, 3, size, 9000) > tx_time_ps(wire, R / 10));
        let got = two.ideal_fct(0, 3, size, 9000);
        assert!(got > tx_time_ps(wire, R) && got < tx_time_ps(wire, R / 10));
    }

    #[test]
    fn a_flow_to_itself_takes_no_time_and_zero_bytes_one_header() {
        assert_eq!(fat().ideal_fct(3, 3, 5000, 9000), 0);
        let got = fat().ideal_fct(0, 1, 0, 9000);
        assert_eq!(got, 2 * (tx_time_ps(64, R) + 1_000_000));
    }
}
