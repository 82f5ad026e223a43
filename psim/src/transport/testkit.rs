//! Test kit for endpoints, in the style of smoltcp's `send!` / `recv!` /
//! `recv_nothing!`: a [`Host`] runs one endpoint with its host services
//! (NDP's pull pacer) the way the shard does, at explicit times; a [`Net`]
//! joins a source and its sink by a scripted, fixed-delay network with drop
//! and mark hooks.
//!
//! ```ignore
//! let mut h = Host::new(sink);
//! recv!(h, at = 1_000, header(3) => [Nack { seq: 3 }]);   // at once
//! expect_out!(h.advance(10_000_000), [(7_200_000, Pull)]); // at the pacer's time
//! recv_nothing!(h, until = 50_000_000);
//! ```

use super::{Ctx, Endpoint, FlowInfo, HostServices, ProtocolParams, SinkStats, Transport};
use crate::packet::{flags, Packet, PacketKind, Protocol};
use std::collections::BTreeMap;

/// The flow most tests use: 0 → 5 on a 10 Gb/s NIC, starting at 0.
pub fn flow(size: Option<u64>, num_paths: u32) -> FlowInfo {
    FlowInfo {
        id: 1,
        src: 0,
        dst: 5,
        size,
        start_ps: 0,
        prio: 0,
        num_paths,
        ecmp_path: 3,
        nic_bps: 10_000_000_000,
        ideal_fct_ps: None,
        app: None,
        read: false,
    }
}

/// An application that hands over `first_bytes` at the start (None:
/// one message), then a message of `message_bytes` at fixed gaps of
/// `message_bytes × 8 / gbps` ns (`app.rs`).
pub fn periodic_app(
    message_bytes: u64,
    gbps: f64,
    first_bytes: Option<u64>,
) -> super::app::AppSpec {
    super::app::AppSpec {
        message_bytes,
        gbps,
        arrivals: super::app::Arrivals::Periodic,
        first_bytes,
    }
}

/// One endpoint (any [`Transport`]: the [`Endpoint`] enum or a concrete
/// type, whose private state a unit test may then inspect) on a host of its
/// own (slot 0), with the host's services and random stream, driven as the
/// shard drives it.
pub struct Host<T: Transport = Endpoint> {
    /// The endpoint.
    pub ep: T,
    /// The host's services (its pull pacer).
    pub services: HostServices,
    /// Host address.
    pub id: u32,
    rng: crate::rng::Rng,
    timer_at: Option<u64>,
    service_at: Option<(u64, u32)>,
    /// The NIC keeps the data packets a NIC-fetched sender hands it
    /// ([`Self::nic_sent`] lets one go); false: it sends each at once, so
    /// `[protocol.roce] nic_packets` never holds a sender back.
    pub nic_holds: bool,
    /// Bytes the NIC queue holds as the endpoint is called (`Ctx::nic_queued_bytes`).
    pub nic_queued_bytes: u64,
}

impl<T: Transport> Host<T> {
    /// Host `id` running `ep`.
    pub fn new(id: u32, ep: T) -> Self {
        Host {
            ep,
            services: HostServices::default(),
            id,
            rng: crate::rng::stream_rng(3, id as u64),
            timer_at: None,
            service_at: None,
            nic_holds: false,
            nic_queued_bytes: 0,
        }
    }

    /// Runs `f` with the endpoint's context at `now`: its result and the packets sent.
    fn raw<R>(&mut self, now: u64, f: impl FnOnce(&mut T, &mut Ctx<'_>) -> R) -> (R, Vec<Packet>) {
        let mut out = Vec::new();
        let r = f(
            &mut self.ep,
            &mut Ctx {
                now,
                host: self.id,
                slot: 0,
                nic_bps: 10_000_000_000,
                nic_queued_bytes: self.nic_queued_bytes,
                out: &mut out,
                rng: &mut self.rng,
                services: &mut self.services,
                summed: Default::default(),
            },
        );
        (r, out)
    }

    /// One endpoint input, then the host's follow-up as in the shard: the
    /// endpoint's deadline, then the services' (which may draw from the rng).
    fn call(&mut self, now: u64, f: impl FnOnce(&mut T, &mut Ctx<'_>)) -> Vec<Packet> {
        let ((), mut out) = self.raw(now, f);
        // An instant NIC: each fetched packet leaves at once (a handed-over
        // packet may bring more, served in the same pass).
        let mut i = 0;
        while !self.nic_holds && i < out.len() {
            i += 1;
            if out[i - 1].nic_fetched_from(self.id) {
                let ((), more) = self.raw(now, |ep, cx| ep.on_nic_sent(cx));
                out.extend(more);
            }
        }
        self.timer_at = self.ep.poll_at().map(|t| t.max(now));
        if let Some(d) = self.services.rearm(now, &mut self.rng) {
            self.service_at = Some(d);
        }
        out
    }

    /// Runs `f` on the endpoint with its context at `now`, without any of
    /// the host's follow-up (for unit tests of an endpoint's private steps).
    pub fn with<R>(&mut self, now: u64, f: impl FnOnce(&mut T, &mut Ctx<'_>) -> R) -> R {
        self.raw(now, f).0
    }

    /// The NIC (with [`Self::nic_holds`]) lets one of the sender's packets
    /// go at `now`; returns what the sender hands it next.
    pub fn nic_sent(&mut self, now: u64) -> Vec<Packet> {
        self.call(now, |ep, cx| ep.on_nic_sent(cx))
    }

    /// Starts the flow at `now`; returns what the endpoint sent.
    pub fn start(&mut self, now: u64) -> Vec<Packet> {
        self.call(now, |ep, cx| ep.on_start(cx))
    }

    /// Delivers `pkt` at `now`; returns what the endpoint sent at once.
    pub fn deliver(&mut self, now: u64, pkt: Packet) -> Vec<Packet> {
        self.call(now, |ep, cx| ep.on_packet(pkt, cx))
    }

    /// The next time this host wants to run (endpoint timer or a service).
    pub fn next_wake(&self) -> Option<u64> {
        [self.timer_at, self.service_at.map(|s| s.0)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs the host's next wake-up if it is due by `until`: (time, packets sent).
    pub fn wake(&mut self, until: u64) -> Option<(u64, Vec<Packet>)> {
        let t = self.next_wake().filter(|&t| t <= until)?;
        if self.timer_at == Some(t) {
            self.timer_at = None;
            return Some((t, self.call(t, |ep, cx| ep.on_timer(cx))));
        }
        let (_, gen) = self.service_at.take().expect("a service is due");
        let out = match self.services.on_timer(t, gen) {
            Some(Some(_slot)) => self.call(t, |ep, cx| ep.on_grant(cx)),
            _ => Vec::new(),
        };
        Some((t, out))
    }

    /// Runs every wake-up up to `until`: each packet sent, with its time.
    pub fn advance(&mut self, until: u64) -> Vec<(u64, Packet)> {
        let mut sent = Vec::new();
        while let Some((t, out)) = self.wake(until) {
            sent.extend(out.into_iter().map(|p| (t, p)));
        }
        sent
    }
}

/// Delivers a packet at an explicit time and checks what leaves at once:
/// `recv!(host, at = T, pkt => [Kind { field: value, .. }, ...])`.
macro_rules! recv {
    ($h:expr, at = $t:expr, $pkt:expr => [ $( $k:ident $({ $( $f:ident : $v:expr ),* $(,)? })? ),* $(,)? ]) => {{
        let out = $h.deliver($t, $pkt);
        $crate::transport::testkit::expect_out!(out.iter().map(|p| ($t, p.clone())).collect::<Vec<_>>(),
            [ $( ($t, $k $({ $( $f: $v ),* })?) ),* ]);
        out
    }};
}

/// Checks a list of (time, packet) against expected (time, kind {fields}).
macro_rules! expect_out {
    ($got:expr, [ $( ($t:expr, $k:ident $({ $( $f:ident : $v:expr ),* $(,)? })?) ),* $(,)? ]) => {{
        let got: Vec<(u64, $crate::packet::Packet)> = $got;
        let want: Vec<u64> = vec![ $( $t ),* ];
        let kinds = vec![ $( $crate::packet::PacketKind::$k ),* ];
        assert_eq!(
            got.iter().map(|(t, p)| (*t, p.kind)).collect::<Vec<_>>(),
            want.iter().copied().zip(kinds).collect::<Vec<_>>(),
            "packets out: {got:?}"
        );
        let mut _i = 0;
        $(
            $( $( assert_eq!(got[_i].1.$f, $v, "packet {} field {}", _i, stringify!($f)); )* )?
            _i += 1;
        )*
        got
    }};
}

/// Checks that a host sends nothing up to `until`:
/// `recv_nothing!(host, until = T)`.
macro_rules! recv_nothing {
    ($h:expr, until = $t:expr) => {{
        let out = $h.advance($t);
        assert!(out.is_empty(), "expected nothing, got {out:?}");
    }};
}

pub(crate) use {expect_out, recv, recv_nothing};

/// A source host and a sink host (created on the first packet, as on a real
/// host) joined by a lossless, fixed-delay, infinitely fast scripted
/// network. Hooks decide which data packets vanish or get CE (from the
/// source, or for an RDMA Read from the responder, the "sink" host); every
/// n-th packet towards the source may be dropped too.
pub struct Net {
    /// The source.
    pub src: Host,
    /// The sink, once a packet arrived.
    pub sink: Option<Host>,
    params: ProtocolParams,
    /// One-way delay, ps.
    pub delay: u64,
    /// Current time, ps.
    pub now: u64,
    /// (arrival time, order) → (towards the sink?, packet).
    wire: BTreeMap<(u64, u64), (bool, Packet)>,
    order: u64,
    started: bool,
    /// Data packets the source sent, before any drop: (time, packet).
    pub sent: Vec<(u64, Packet)>,
    /// Packets delivered to the source.
    pub to_source: u64,
    /// Drop every n-th packet on its way back (0: none).
    pub back_drop_every: u64,
    shipped_back: u64,
}

impl Net {
    /// A network for the flow `info` of `proto`, one-way delay `delay` ps.
    pub fn new(proto: Protocol, info: &FlowInfo, params: ProtocolParams, delay: u64) -> Self {
        Net {
            src: Host::new(info.src, proto.starter(info, &params)),
            sink: None,
            params,
            delay,
            now: 0,
            wire: BTreeMap::new(),
            order: 0,
            started: false,
            sent: Vec::new(),
            to_source: 0,
            back_drop_every: 0,
            shipped_back: 0,
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
            if p.kind == PacketKind::Data {
                self.sent.push((self.now, p.clone()));
                if drop(&p) {
                    continue;
                }
                if mark(&p) {
                    p.flags |= flags::ECN_CE;
                }
            }
            if !to_sink {
                self.shipped_back += 1;
                if self.back_drop_every > 0
                    && self.shipped_back.is_multiple_of(self.back_drop_every)
                {
                    continue;
                }
            }
            self.order += 1;
            self.wire
                .insert((self.now + self.delay, self.order), (to_sink, p));
        }
    }

    /// Runs until `until` or until nothing is pending.
    pub fn run(
        &mut self,
        until: u64,
        drop: &mut dyn FnMut(&Packet) -> bool,
        mark: &mut dyn FnMut(&Packet) -> bool,
    ) {
        if !self.started {
            self.started = true;
            let out = self.src.start(self.now);
            self.ship(out, true, drop, mark);
        }
        loop {
            let next_wire = self.wire.keys().next().map(|k| k.0);
            let wakes = [
                self.src.next_wake(),
                self.sink.as_ref().and_then(|s| s.next_wake()),
            ];
            let next_wake = wakes.iter().flatten().min().copied();
            let Some(t) = [next_wire, next_wake].into_iter().flatten().min() else {
                return;
            };
            if t > until {
                return;
            }
            self.now = t;
            if next_wire == Some(t) {
                let (_, (to_sink, pkt)) = self.wire.pop_first().expect("pending");
                if to_sink {
                    let params = &self.params;
                    let sink = self.sink.get_or_insert_with(|| {
                        let ep = Protocol::receiver(&pkt, params, 10_000_000_000);
                        Host::new(pkt.dst, ep)
                    });
                    let out = sink.deliver(t, pkt);
                    self.ship(out, false, drop, mark);
                } else {
                    self.to_source += 1;
                    let out = self.src.deliver(t, pkt);
                    self.ship(out, true, drop, mark);
                }
            } else if wakes[0] == Some(t) {
                let (_, out) = self.src.wake(t).expect("due");
                self.ship(out, true, drop, mark);
            } else if let Some(s) = self.sink.as_mut() {
                let (_, out) = s.wake(t).expect("due");
                self.ship(out, false, drop, mark);
            }
        }
    }

    /// The receiver's counters: the sink's once a packet arrived, or an
    /// RDMA Read's requester's.
    pub fn sink_stats(&self) -> Option<&SinkStats> {
        (self.src.ep.sink_stats()).or_else(|| self.sink.as_ref().and_then(|s| s.ep.sink_stats()))
    }

    /// When the sink completed the flow.
    pub fn finish(&self) -> Option<u64> {
        self.sink_stats().and_then(|s| s.finish_ps)
    }

    /// When the data's sender learned that the flow was acknowledged (an
    /// RDMA Read's responder, on the "sink" host).
    pub fn sender_finish(&self) -> Option<u64> {
        let sender = match self.src.ep.sink_stats() {
            Some(_) => self.sink.as_ref().map(|s| &s.ep),
            None => Some(&self.src.ep),
        };
        sender
            .and_then(|e| e.source_stats())
            .and_then(|s| s.finish_ps)
    }
}

/// A hook that never fires.
pub fn never(_: &Packet) -> bool {
    false
}
