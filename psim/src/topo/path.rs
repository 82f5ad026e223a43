//! Closed forms over a host-to-host path: the links a flow crosses and its
//! ideal completion time, the yardstick of every slowdown psim reports.

use super::{LinkSpec, Topology};
use crate::packet::HEADER_BYTES;
use crate::units::tx_time_ps;

impl Topology {
    /// The links from host `src` to host `dst` along path id 0, in order.
    pub fn path_links(&self, src: u32, dst: u32) -> Vec<LinkSpec> {
        let mut at = src;
        let mut links = Vec::new();
        while at != dst {
            let port = if at == src { 0 } else { self.route(at, dst, 0) };
            let info = self.port(at, port);
            links.push(info.link);
            at = info.peer;
        }
        links
    }

    /// The ideal completion time of a `size`-byte flow alone in the network,
    /// in `mtu`-byte payloads (decision A16, docs/references.md): every wire
    /// byte (payload and headers) crosses the slowest link of the path back
    /// to back; the first packet also pays serialisation and propagation on
    /// every other hop (store and forward).
    pub fn ideal_fct(&self, src: u32, dst: u32, size: u64, mtu: u32) -> u64 {
        let packets = size.div_ceil(mtu as u64).max(1);
        let wire = size + packets * HEADER_BYTES as u64;
        let first = size.min(mtu as u64) + HEADER_BYTES as u64;
        let links = self.path_links(src, dst);
        let slowest = links.iter().map(|l| l.rate_bps).min().unwrap_or(1);
        let per_hop: u64 = links
            .iter()
            .map(|l| tx_time_ps(first, l.rate_bps) + l.delay_ps)
            .sum();
        per_hop - tx_time_ps(first, slowest) + tx_time_ps(wire, slowest)
    }
}
