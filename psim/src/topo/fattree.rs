//! The 3-tier k-ary FatTree (Al-Fares et al., SIGCOMM 2008), as used
//! throughout the NDP paper ([P] §6 gives 128, 432 and 8192 hosts; k = 8, 12 and 32
//! are our inference from those host counts).
//!
//! Layout for even `k`: `k` pods, each with `k/2` edge (ToR) and `k/2`
//! aggregation switches; `(k/2)^2` core switches. Each ToR has
//! `oversubscription * k/2` hosts, so oversubscription > 1 puts more hosts
//! under each ToR than it has uplinks.
//!
//! Entity ids: hosts `0..H`, then ToRs (pod-major), then aggregation
//! switches (pod-major), then cores. Ports:
//! - host: port 0 to its ToR;
//! - ToR: ports `0..hpt` down to hosts, `hpt + a` up to aggregation switch `a`;
//! - agg `a`: ports `0..k/2` down to ToR `e`, `k/2 + m` up to core `a*(k/2)+m`;
//! - core: port `p` down to pod `p`.
//!
//! Path ids: between pods there are `(k/2)^2` paths, path `p` going up through
//! aggregation switch `p / (k/2)` and core `p` itself; within a pod there are
//! `k/2` paths, path `p` going through aggregation switch `p`.

use super::{EntityKind, LinkSpec, PortInfo};

/// A k-ary FatTree.
#[derive(Clone, Debug)]
pub struct FatTree {
    k: u32,
    half: u32,
    hpt: u32,
    hosts: u32,
    tors: u32,
    cores: u32,
    host_link: LinkSpec,
    tor_link: LinkSpec,
    core_link: LinkSpec,
    /// Core-aggregation links with their own rate/delay: (core index, pod, link).
    /// NDP V24 ([P] Fig. 22) degrades one such link to 1 Gb/s.
    overrides: Vec<(u32, u32, LinkSpec)>,
    /// Core-aggregation links with their own loss probability: (core, pod, p),
    /// e.g. a failed link that routing has not yet removed ([P] §3.2.3).
    losses: Vec<(u32, u32, f64)>,
}

/// The value given last for the link between `core` and `pod` in a list of
/// per-link settings (a later entry for the same link wins).
fn latest<T: Copy>(list: &[(u32, u32, T)], core: u32, pod: u32) -> Option<T> {
    list.iter()
        .rev()
        .find(|(c, p, _)| *c == core && *p == pod)
        .map(|o| o.2)
}

impl FatTree {
    /// Gives the link between core switch `core` (0-based among cores) and
    /// pod `pod` its own rate and delay, in both directions.
    pub fn with_core_link_override(mut self, core: u32, pod: u32, link: LinkSpec) -> Self {
        self.overrides.push((core, pod, link));
        self
    }

    /// Gives the link between core switch `core` and pod `pod` its own loss
    /// probability per packet, in both directions (1 = a failed link).
    pub fn with_core_link_loss(mut self, core: u32, pod: u32, p: f64) -> Self {
        self.losses.push((core, pod, p));
        self
    }

    /// The loss probability of the link leaving port `p` of entity `e`, if
    /// that link has its own ([`Self::with_core_link_loss`]).
    pub(super) fn link_loss(&self, e: u32, p: u16) -> Option<f64> {
        if self.losses.is_empty() {
            return None;
        }
        // The core link's ends, from `port`'s wiring: (core index, pod).
        let (core, pod) = match self.kind(e) {
            EntityKind::Agg if p as u32 >= self.half => (
                self.port(e, p).peer - self.core_base(),
                (e - self.agg_base()) / self.half,
            ),
            EntityKind::Core => (e - self.core_base(), p as u32),
            _ => return None,
        };
        latest(&self.losses, core, pod)
    }

    /// Number of core switches.
    pub fn cores(&self) -> u32 {
        self.cores
    }

    fn core_link_of(&self, core: u32, pod: u32) -> LinkSpec {
        latest(&self.overrides, core, pod).unwrap_or(self.core_link)
    }

    /// A FatTree with even `k >= 2` and `oversubscription >= 1` (validated by the config layer).
    pub fn new(
        k: u32,
        oversubscription: u32,
        host_link: LinkSpec,
        tor_link: LinkSpec,
        core_link: LinkSpec,
    ) -> Self {
        assert!(k >= 2 && k.is_multiple_of(2) && oversubscription >= 1);
        let half = k / 2;
        let hpt = half * oversubscription;
        let tors = k * half;
        FatTree {
            k,
            half,
            hpt,
            hosts: tors * hpt,
            tors,
            cores: half * half,
            host_link,
            tor_link,
            core_link,
            overrides: Vec::new(),
            losses: Vec::new(),
        }
    }
    /// Switch radix.
    pub fn k(&self) -> u32 {
        self.k
    }
    pub(super) fn hosts(&self) -> u32 {
        self.hosts
    }
    pub(super) fn entities(&self) -> u32 {
        self.hosts + 2 * self.tors + self.cores
    }
    pub(super) fn hosts_per_tor(&self) -> u32 {
        self.hpt
    }
    pub(super) fn host_link(&self) -> LinkSpec {
        self.host_link
    }
    fn agg_base(&self) -> u32 {
        self.hosts + self.tors
    }
    fn core_base(&self) -> u32 {
        self.hosts + 2 * self.tors
    }
    /// Pod of host `h`.
    #[inline]
    fn pod_of_host(&self, h: u32) -> u32 {
        h / (self.hpt * self.half)
    }
    /// Global ToR index (0..tors) of host `h`.
    #[inline]
    fn tor_of_host(&self, h: u32) -> u32 {
        h / self.hpt
    }
    pub(super) fn kind(&self, e: u32) -> EntityKind {
        if e < self.hosts {
            EntityKind::Host
        } else if e < self.agg_base() {
            EntityKind::Tor
        } else if e < self.core_base() {
            EntityKind::Agg
        } else {
            EntityKind::Core
        }
    }
    pub(super) fn port_count(&self, e: u32) -> u16 {
        match self.kind(e) {
            EntityKind::Host => 1,
            EntityKind::Tor => (self.hpt + self.half) as u16,
            EntityKind::Agg | EntityKind::Core => self.k as u16,
        }
    }
    pub(super) fn port(&self, e: u32, p: u16) -> PortInfo {
        let p = p as u32;
        let (peer, peer_port, link) = match self.kind(e) {
            EntityKind::Host => (
                self.hosts + self.tor_of_host(e),
                e % self.hpt,
                self.host_link,
            ),
            EntityKind::Tor => {
                let t = e - self.hosts;
                let (pod, idx) = (t / self.half, t % self.half);
                if p < self.hpt {
                    (t * self.hpt + p, 0, self.host_link)
                } else {
                    let a = p - self.hpt;
                    (self.agg_base() + pod * self.half + a, idx, self.tor_link)
                }
            }
            EntityKind::Agg => {
                let g = e - self.agg_base();
                let (pod, a) = (g / self.half, g % self.half);
                if p < self.half {
                    (
                        self.hosts + pod * self.half + p,
                        self.hpt + a,
                        self.tor_link,
                    )
                } else {
                    let m = p - self.half;
                    let core = a * self.half + m;
                    (self.core_base() + core, pod, self.core_link_of(core, pod))
                }
            }
            EntityKind::Core => {
                let c = e - self.core_base();
                let (a, m) = (c / self.half, c % self.half);
                (
                    self.agg_base() + p * self.half + a,
                    self.half + m,
                    self.core_link_of(c, p),
                )
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
        let half = self.half;
        let port = if e < self.hosts {
            0
        } else if e < self.agg_base() {
            let t = e - self.hosts;
            if self.tor_of_host(dst) == t {
                dst % self.hpt
            } else if self.pod_of_host(dst) == t / half {
                self.hpt + path % half
            } else {
                self.hpt + (path / half) % half
            }
        } else if e < self.core_base() {
            let pod = (e - self.agg_base()) / half;
            if self.pod_of_host(dst) == pod {
                self.tor_of_host(dst) % half
            } else {
                half + path % half
            }
        } else {
            self.pod_of_host(dst)
        };
        port as u16
    }
    pub(super) fn num_paths(&self, src: u32, dst: u32) -> u32 {
        if self.tor_of_host(src) == self.tor_of_host(dst) {
            1
        } else if self.pod_of_host(src) == self.pod_of_host(dst) {
            self.half
        } else {
            self.half * self.half
        }
    }
    pub(super) fn hops(&self, src: u32, dst: u32) -> u32 {
        if self.tor_of_host(src) == self.tor_of_host(dst) {
            2
        } else if self.pod_of_host(src) == self.pod_of_host(dst) {
            4
        } else {
            6
        }
    }
    pub(super) fn group(&self, e: u32) -> Option<u32> {
        match self.kind(e) {
            EntityKind::Host => Some(self.pod_of_host(e)),
            EntityKind::Tor => Some((e - self.hosts) / self.half),
            EntityKind::Agg => Some((e - self.agg_base()) / self.half),
            EntityKind::Core => None,
        }
    }
    pub(super) fn bisection_bps(&self) -> u64 {
        // Saturating: a link rate is not range-checked here (issue 18 fuzzing).
        let host_tier = (self.hosts as u64).saturating_mul(self.host_link.rate_bps);
        let tor_tier = ((self.tors * self.half) as u64).saturating_mul(self.tor_link.rate_bps);
        let core_tier = ((self.tors * self.half) as u64).saturating_mul(self.core_link.rate_bps);
        host_tier.min(tor_tier).min(core_tier) / 2
    }
    pub(super) fn describe(&self) -> String {
        format!(
            "fattree k={} ({} pods, {} hosts per ToR, {} ToR, {} agg, {} core)",
            self.k, self.k, self.hpt, self.tors, self.tors, self.cores
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{tests::check_topology, Topology};
    use super::*;

    fn link(gbps: u64, ns: u64) -> LinkSpec {
        LinkSpec {
            rate_bps: gbps * 1_000_000_000,
            delay_ps: ns * 1000,
        }
    }

    #[test]
    fn sizes_match_the_closed_form() {
        for k in [2u32, 4, 8, 12, 32] {
            let t = FatTree::new(k, 1, link(10, 1000), link(10, 1000), link(10, 1000));
            assert_eq!(t.hosts(), k * k * k / 4);
            assert_eq!(t.entities() - t.hosts(), 5 * k * k / 4);
        }
        // k = 32 is 8192 hosts and 1280 switches (ARCHITECTURE.md).
        let t = FatTree::new(32, 1, link(100, 1000), link(100, 1000), link(100, 1000));
        assert_eq!((t.hosts(), t.entities() - t.hosts()), (8192, 1280));
    }

    #[test]
    fn routes_reach_every_destination_on_every_path() {
        for (k, o) in [(2, 1), (4, 1), (4, 2), (6, 1), (8, 1)] {
            check_topology(&Topology::FatTree(FatTree::new(
                k,
                o,
                link(10, 500),
                link(10, 1000),
                link(40, 2000),
            )));
        }
    }

    #[test]
    fn a_core_link_override_applies_in_both_directions_only() {
        let slow = link(1, 1000);
        let t = Topology::FatTree(
            FatTree::new(4, 1, link(10, 1000), link(10, 1000), link(10, 1000))
                .with_core_link_override(3, 1, slow),
        );
        check_topology(&t);
        let mut slow_ports = 0;
        for e in 0..t.entities() {
            for p in 0..t.port_count(e) {
                if t.port(e, p).link == slow {
                    slow_ports += 1;
                    assert!(matches!(
                        t.kind(e),
                        crate::topo::EntityKind::Agg | crate::topo::EntityKind::Core
                    ));
                }
            }
        }
        assert_eq!(slow_ports, 2);
    }

    #[test]
    fn path_counts() {
        let t = FatTree::new(8, 1, link(10, 1), link(10, 1), link(10, 1));
        assert_eq!(t.num_paths(0, 1), 1);
        assert_eq!(t.num_paths(0, 4), 4);
        assert_eq!(t.num_paths(0, 16), 16);
        assert_eq!(t.hops(0, 16), 6);
    }

    #[test]
    fn oversubscription_puts_more_hosts_under_each_tor() {
        let t = FatTree::new(4, 3, link(10, 1), link(10, 1), link(10, 1));
        assert_eq!(t.hosts_per_tor(), 6);
        assert_eq!(t.hosts(), 4 * 2 * 6);
        // Bisection limited by the ToR uplinks: 8 ToRs x 2 uplinks x 10G / 2.
        assert_eq!(t.bisection_bps(), 80_000_000_000);
    }
}
