//! The 2-tier leaf-spine (folded Clos): every leaf connects to every spine.
//!
//! Entity ids: hosts `0..H`, leaves, then spines. Leaf ports `0..hpl` go down
//! to hosts and `hpl + s` up to spine `s`; spine port `l` goes to leaf `l`.
//! Between racks there are `spines` paths; path `p` crosses spine `p`.
//! Oversubscription is `hpl * host rate / (spines * uplink rate)`.

use super::{EntityKind, LinkSpec, PortInfo};

/// A leaf-spine network.
#[derive(Clone, Debug)]
pub struct LeafSpine {
    leaves: u32,
    spines: u32,
    hpl: u32,
    host_link: LinkSpec,
    uplink: LinkSpec,
}

impl LeafSpine {
    /// A leaf-spine with the given sizes (all >= 1, validated by the config layer).
    pub fn new(
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        host_link: LinkSpec,
        uplink: LinkSpec,
    ) -> Self {
        assert!(leaves >= 1 && spines >= 1 && hosts_per_leaf >= 1);
        LeafSpine {
            leaves,
            spines,
            hpl: hosts_per_leaf,
            host_link,
            uplink,
        }
    }
    pub(super) fn hosts(&self) -> u32 {
        self.leaves * self.hpl
    }
    pub(super) fn entities(&self) -> u32 {
        self.hosts() + self.leaves + self.spines
    }
    pub(super) fn hosts_per_tor(&self) -> u32 {
        self.hpl
    }
    pub(super) fn host_link(&self) -> LinkSpec {
        self.host_link
    }
    pub(super) fn kind(&self, e: u32) -> EntityKind {
        if e < self.hosts() {
            EntityKind::Host
        } else if e < self.hosts() + self.leaves {
            EntityKind::Tor
        } else {
            EntityKind::Core
        }
    }
    pub(super) fn port_count(&self, e: u32) -> u16 {
        match self.kind(e) {
            EntityKind::Host => 1,
            EntityKind::Tor => (self.hpl + self.spines) as u16,
            _ => self.leaves as u16,
        }
    }
    pub(super) fn port(&self, e: u32, p: u16) -> PortInfo {
        let p = p as u32;
        let h = self.hosts();
        let (peer, peer_port, link) = match self.kind(e) {
            EntityKind::Host => (h + e / self.hpl, e % self.hpl, self.host_link),
            EntityKind::Tor => {
                let l = e - h;
                if p < self.hpl {
                    (l * self.hpl + p, 0, self.host_link)
                } else {
                    (h + self.leaves + (p - self.hpl), l, self.uplink)
                }
            }
            _ => {
                let s = e - h - self.leaves;
                (h + p, self.hpl + s, self.uplink)
            }
        };
        PortInfo {
            peer,
            peer_port: peer_port as u16,
            link,
        }
    }
    #[inline]
    pub(super) fn route(&self, e: u32, dst: u32, path: u32) -> u16 {
        let h = self.hosts();
        let port = if e < h {
            0
        } else if e < h + self.leaves {
            if dst / self.hpl == e - h {
                dst % self.hpl
            } else {
                self.hpl + path % self.spines
            }
        } else {
            dst / self.hpl
        };
        port as u16
    }
    pub(super) fn num_paths(&self, src: u32, dst: u32) -> u32 {
        if src / self.hpl == dst / self.hpl {
            1
        } else {
            self.spines
        }
    }
    pub(super) fn hops(&self, src: u32, dst: u32) -> u32 {
        if src / self.hpl == dst / self.hpl {
            2
        } else {
            4
        }
    }
    pub(super) fn group(&self, e: u32) -> Option<u32> {
        match self.kind(e) {
            EntityKind::Host => Some(e / self.hpl),
            EntityKind::Tor => Some(e - self.hosts()),
            _ => None,
        }
    }
    pub(super) fn bisection_bps(&self) -> u64 {
        // Saturating: a link rate is not range-checked here (issue 18 fuzzing).
        let host_tier = (self.hosts() as u64).saturating_mul(self.host_link.rate_bps);
        let up_tier = ((self.leaves * self.spines) as u64).saturating_mul(self.uplink.rate_bps);
        host_tier.min(up_tier) / 2
    }
    pub(super) fn describe(&self) -> String {
        format!(
            "leafspine ({} leaves, {} spines, {} hosts per leaf)",
            self.leaves, self.spines, self.hpl
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{tests::check_topology, Topology};
    use super::*;

    #[test]
    fn routes_reach_every_destination_on_every_path() {
        let l = LinkSpec {
            rate_bps: 10_000_000_000,
            delay_ps: 1_000_000,
        };
        for (leaves, spines, hpl) in [(1, 1, 2), (4, 2, 3), (6, 4, 8)] {
            check_topology(&Topology::LeafSpine(LeafSpine::new(
                leaves, spines, hpl, l, l,
            )));
        }
    }

    #[test]
    fn bisection_counts_the_narrow_tier() {
        let host = LinkSpec {
            rate_bps: 10_000_000_000,
            delay_ps: 1,
        };
        let up = LinkSpec {
            rate_bps: 40_000_000_000,
            delay_ps: 1,
        };
        // 4 leaves x 16 hosts x 10G = 640G at the edge; 4 x 2 x 40G = 320G above: 2:1 oversubscribed.
        let t = LeafSpine::new(4, 2, 16, host, up);
        assert_eq!(t.bisection_bps(), 160_000_000_000);
    }
}
