//! A host: its transport endpoints (one per flow it sends or receives), the
//! timers they ask for, and the services they share (NDP's pull pacer). Its
//! NIC is the node's port 0.
//!
//! A host never schedules events itself: [`HostState::call`] runs one
//! endpoint input and returns the effects (a changed deadline, the pacer's
//! next slot, a completion), with the packets the endpoint emitted in the
//! caller's buffer; the shard applies them.

use super::edge::{EdgeFlow, SlackConfig};
use crate::packet::{Packet, Protocol};
use crate::rng::Rng;
use crate::transport::{roce, Ctx, Endpoint, FlowInfo, HostServices, ProtocolParams, Transport};
use rustc_hash::FxHashMap;

/// One transport endpoint on a host.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Slot {
    /// Flow id.
    pub flow: u64,
    /// Protocol.
    pub proto: Protocol,
    /// The state machine.
    pub ep: Endpoint,
    /// The flow, for sources (sinks learn it from packets).
    pub info: Option<Box<FlowInfo>>,
    /// Source and destination hosts (for sinks).
    pub peers: (u32, u32),
    /// Deadline currently scheduled in the engine.
    pub timer_at: Option<u64>,
    /// Timer generation; a timer event with an older generation is stale.
    pub gen: u32,
    /// Whether the sink's completion was already reported.
    pub finish_reported: bool,
    /// What the host's slack policy remembers of this flow (`net/edge.rs`).
    pub edge: EdgeFlow,
}

/// Host-only state: the transport endpoints.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HostState {
    /// Endpoints, never removed during a run (their counters go to the outputs).
    pub slots: Vec<Slot>,
    /// Flow id to slot. Looked up only, never iterated.
    pub by_flow: FxHashMap<u64, u32>,
    /// Schedulers shared by the host's endpoints (NDP's pull pacer).
    pub services: HostServices,
    /// The rank or slack policy for the data packets it sends (`[host.slack]`).
    /// (Its serde layout is made for TOML: a checkpoint stores it as JSON.)
    #[serde(with = "crate::engine::as_json")]
    pub slack: SlackConfig,
}

/// What one endpoint input asks the engine to do (besides the packets it
/// emitted, which go to the NIC).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Called {
    /// Schedule the endpoint's timer: (time, generation). A deadline that
    /// moved later or was cleared needs nothing: the old event is stale.
    pub timer: Option<(u64, u32)>,
    /// Schedule the host services' timer: (time, generation).
    pub service_timer: Option<(u64, u32)>,
    /// The sink completed at this time (reported once per flow).
    pub finished_at: Option<u64>,
}

/// What a due timer event is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimerDue {
    /// Superseded by a later deadline or a newer generation: nothing to do.
    Stale,
    /// The services' timer fired and granted nothing.
    Idle,
    /// Endpoint `slot`'s deadline is due.
    Endpoint(u32),
    /// The pull pacer granted endpoint `slot` its next PULL.
    Grant(u32),
}

impl HostState {
    /// A host without endpoints that stamps its data packets by `slack`.
    pub fn new(slack: SlackConfig) -> Self {
        HostState {
            slack,
            ..HostState::default()
        }
    }

    /// Adds the endpoint of a flow that starts here (its sender, or an RDMA
    /// Read's requester); returns its slot.
    pub fn add_source(&mut self, info: FlowInfo, proto: Protocol, params: &ProtocolParams) -> u32 {
        let ep = proto.starter(&info, params);
        let edge = self.slack.flow(&info, proto.mtu(params));
        let slot = self.slots.len() as u32;
        self.by_flow.insert(info.id, slot);
        self.slots.push(Slot {
            flow: info.id,
            proto,
            ep,
            peers: (info.src, info.dst),
            info: Some(Box::new(info)),
            timer_at: None,
            gen: 0,
            finish_reported: false,
            edge,
        });
        slot
    }

    /// The slot of the endpoint that receives `pkt`: the flow's own, or a new
    /// one for the first packet of a flow that did not start here (a sink,
    /// or an RDMA Read's responder, whose sender needs the NIC's `nic_bps`).
    pub fn slot_for(&mut self, pkt: &Packet, params: &ProtocolParams, nic_bps: u64) -> u32 {
        if let Some(&s) = self.by_flow.get(&pkt.flow) {
            return s;
        }
        let s = self.slots.len() as u32;
        self.by_flow.insert(pkt.flow, s);
        // An RDMA Read's responder sends the data: the host's slack policy
        // stamps it as a source's.
        let edge = match roce::is_read_request(pkt) {
            true => {
                let data = roce::responder_flow(pkt, nic_bps);
                self.slack.flow(&data, pkt.proto.mtu(params))
            }
            false => EdgeFlow::default(),
        };
        self.slots.push(Slot {
            flow: pkt.flow,
            proto: pkt.proto,
            ep: Protocol::receiver(pkt, params, nic_bps),
            info: None,
            peers: (pkt.src, pkt.dst),
            timer_at: None,
            gen: 0,
            finish_reported: false,
            edge,
        });
        s
    }

    /// Whether a timer event for `slot` with generation `gen` due at `at` is
    /// superseded ([`TimerDue::Stale`] when it fires). It stays so: a slot's
    /// generation only grows, and a deadline at `at` cannot come back once
    /// the timer was moved (that bumps the generation).
    pub fn timer_is_stale(&self, slot: u32, gen: u32, at: u64) -> bool {
        if slot == HostServices::TIMER_SLOT {
            return self.services.is_stale(gen, at);
        }
        let s = &self.slots[slot as usize];
        s.gen != gen || s.timer_at != Some(at)
    }

    /// Classifies a timer event for `slot` with generation `gen` at `now`.
    pub fn timer_due(&mut self, slot: u32, gen: u32, now: u64) -> TimerDue {
        if slot == HostServices::TIMER_SLOT {
            return match self.services.on_timer(now, gen) {
                None => TimerDue::Stale,
                Some(None) => TimerDue::Idle,
                Some(Some(s)) => TimerDue::Grant(s),
            };
        }
        if self.timer_is_stale(slot, gen, now) {
            return TimerDue::Stale;
        }
        self.slots[slot as usize].timer_at = None;
        TimerDue::Endpoint(slot)
    }

    /// Stamps `pkt` as the NIC starts sending it at `now`, if the slack
    /// policy stamps there (`[host.slack] at = "nic_departure"`).
    #[inline]
    pub fn departing(&mut self, pkt: &mut Packet, now: u64) {
        if !self.slack.at_departure() {
            return;
        }
        if let Some(&s) = self.by_flow.get(&pkt.flow) {
            let edge = &mut self.slots[s as usize].edge;
            self.slack.stamp_departure(edge, pkt.flow, now, pkt);
        }
    }

    /// Runs one input of endpoint `slot` on host `id` (NIC at `nic_bps`),
    /// appending the packets it emits to `out` (their `rank` stamped by the
    /// host's slack policy), and returns what the engine must schedule.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &mut self,
        id: u32,
        slot: u32,
        now: u64,
        nic_bps: u64,
        nic_queued_bytes: u64,
        rng: &mut Rng,
        out: &mut Vec<Packet>,
        f: impl FnOnce(&mut Endpoint, &mut Ctx<'_>),
    ) -> Called {
        let mut called = Called::default();
        let s = &mut self.slots[slot as usize];
        let first = out.len();
        f(
            &mut s.ep,
            &mut Ctx {
                now,
                host: id,
                slot,
                nic_bps,
                nic_queued_bytes,
                out,
                rng,
                services: &mut self.services,
                summed: Default::default(),
            },
        );
        self.slack.stamp(&mut s.edge, now, &mut out[first..]);
        let want = s.ep.poll_at();
        if want != s.timer_at {
            s.gen = s.gen.wrapping_add(1);
            s.timer_at = want;
            if let Some(t) = want {
                let t = t.max(now);
                s.timer_at = Some(t);
                called.timer = Some((t, s.gen));
            }
        }
        called.service_timer = self.services.rearm(now, rng);
        let s = &mut self.slots[slot as usize];
        if !s.finish_reported {
            if let Some(at) = s.ep.sink_stats().and_then(|st| st.finish_ps) {
                s.finish_reported = true;
                called.finished_at = Some(at);
            }
        }
        called
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::edge::{Fairness, StampAt, StampPackets};
    use crate::packet::{test_packet, PacketKind};
    use crate::transport::testkit::flow;

    /// The NIC's departure stamps a source's data by its own slot's clock
    /// under `at = "nic_departure"`, and leaves every rank alone otherwise;
    /// a packet of a flow the host has no endpoint for is left alone.
    #[test]
    fn departing_stamps_by_the_flows_slot() {
        let us = 1_000_000u64;
        let fairness = |at| {
            SlackConfig::Fairness(Fairness {
                at,
                packets: StampPackets::Data,
                ..Fairness::default()
            })
        };
        let sent = |at| -> Vec<u64> {
            let mut host = HostState::new(fairness(at));
            host.add_source(
                flow(Some(1 << 30), 1),
                Protocol::Tcp,
                &ProtocolParams::default(),
            );
            // 1000 B at the default 100 Mb/s: 80 µs a packet.
            [(1, 0), (1, 10), (2, 10)]
                .iter()
                .map(|&(id, t)| {
                    let mut p = test_packet(PacketKind::Data, 0, 1000);
                    p.flow = id;
                    p.rank = 7;
                    host.departing(&mut p, t * us);
                    p.rank
                })
                .collect()
        };
        assert_eq!(sent(StampAt::NicDeparture), [0, 70 * us, 7]);
        assert_eq!(sent(StampAt::Handoff), [7, 7, 7]);
    }
}
