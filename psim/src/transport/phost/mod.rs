//! pHost: receiver-driven transport with tokens over commodity switches
//! (Gao et al., CoNEXT 2015 = [PH]), as its authors' simulator runs it
//! ([Y] `CapabilityFlow` / `CapabilityHost`; decisions HP1–HP9).
//!
//! - A flow starts with an **RTS** (carrying its size, HP5) and, if it has
//!   free tokens, sends its first packets at once.
//! - The **receiver** runs one token clock per host ([`sched::TokenClock`]):
//!   one token per slot to the ready flow with the fewest packets not yet
//!   received (SRPT). A token names the data packet to send (the next one
//!   not yet received, round robin) and lives `token_ttl_slots` at the sender.
//! - **Downgrade:** a flow with more than `window_packets` tokens not matched
//!   by returning data is skipped until `window_timeout_slots` after its last
//!   token, then gets one probe token.
//! - **Loss recovery** is receiver-driven: once tokens for the whole flow are
//!   out, the receiver waits `resend_timeout_slots` (2·F slots for a flow
//!   sent entirely on free tokens) and re-issues tokens for what is missing.
//! - The **sender** ([`sched::SendArbiter`]) sends one data packet per NIC
//!   packet time, for the flow with the fewest receiver-reported remaining
//!   packets that holds an unexpired token, spending its earliest-expiring
//!   token. The receiver ACKs once every packet has arrived.
//! - **Priorities:** control packets (RTS, token, ACK) carry `rank` 0 and
//!   data `rank` 2 ([Y] §1.3 of the notes): a `pfabric` switch queue with
//!   `starvation_prevention = false` is then [Y]'s two-level strict-priority
//!   port with one shared byte buffer (`queue_type` 2). Over `droptail` every
//!   packet shares one FIFO, as in [P] §6.2.
//!
//! | parameter (`[protocol.phost]`) | default | source |
//! |---|---|---|
//! | `mss_bytes` (payload; + 64 B header) | 1460 | [Y] `mss` (1460 + 40 B header there) |
//! | `free_tokens` | `"small_flows"`: a flow of ≤ `initial_packets` packets gets free tokens for all of them, a longer one none | [Y] `assign_init_capability` (HP1); `"first_rtt"`: every flow sends min(size, `initial_packets`) at once, as [P] §6.2's htsim pHost |
//! | `initial_packets` | 8 (one BDP at 40 Gb/s, 0.2 µs links) | [Y] `capability_initial`; [D] 49 at 100 Gb/s |
//! | `window_packets` | 8 | [Y] `capability_window`; [D] 49 |
//! | `token_ttl_slots` | 1.5 | [Y] `capability_timeout` |
//! | `window_timeout_slots` | 25 | [Y] `capability_window_timeout`; [D] 151 |
//! | `resend_timeout_slots` | 9 | [Y] `capability_resend_timeout`; [D] 51 |
//! | `slot_bytes` (0: one full data packet on the wire) | 0 | [Y] HEAD (1500 B slots); the paper-era code used 1540 B slots for 1500 B packets (HP2) |
//! | `holdoff` | `"set"`: an RTS sets the hold-off to its F slots | [Y] HEAD; `"add"`: adds them (paper era) |
//! | `ctrl_timeout_us` (0: off) | 1000 | a guess (HP4: [Y] has none; this equals NDP's minimum RTO, A12): the sender resends its RTS when it has heard nothing from the receiver for this long, doubling the wait each time (at most 64×); the receiver answers a finished flow's RTS with its ACK |
//! | control / data `rank` | 0 / 2 | [Y] packet priorities (HP6: `capability_prio_thresh` unset, so two levels) |
//!
//! A slot is `slot_bytes` at the host's NIC rate; the token lifetime, the
//! free tokens' lifetime ((F + `token_ttl_slots`) slots from the start) and
//! the receiver's timeouts are counted in slots, so they scale with the
//! rate and the MTU. The packet counts do not: scale `initial_packets` and
//! `window_packets` to the BDP in packets, as [D] does.
//!
//! Departures from [Y]: the sender paces itself at one data packet per NIC
//! packet time instead of reading its NIC queue; the header is psim's 64 B;
//! every resent packet is a full packet (HP3); the size travels in the RTS
//! and in every data packet (HP5); the flow's start (for SRPT ties) at the
//! receiver is the creation time of the first packet it sees; FCT is
//! measured at the receiver when the last byte arrives, not at the sender on
//! the ACK (HP9); the RTS timer is new (HP4).
//!
//! Wire encoding: data carry the data sequence number in `seq` and (flow
//! packets << 32 | token number) in `ack`; a token carries the data sequence
//! number in `seq` and (remaining packets << 32 | token number) in `ack`; an
//! RTS is a `Header` (64 B, no payload) with `SYN` and (flow packets << 32)
//! in `ack`; a trimmed data packet (a `Header` without `SYN`) counts as lost.

pub mod sched;
mod sink;
mod source;
#[cfg(test)]
mod tests;

pub use sched::PhostSched;
pub use sink::PhostSink;
pub use source::PhostSource;

use super::config::{bad, in_range, Micros};
use super::{Endpoint, FlowInfo, ProtocolDef, ProtocolParams, SwitchClass};
use crate::config::ConfigError;
use crate::packet::{Packet, Protocol, HEADER_BYTES};
use crate::units::tx_time_ps;
use serde::{Deserialize, Serialize};

/// Which flows get free tokens (HP1).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreeTokens {
    /// All-or-nothing by size: a flow of at most `initial_packets` packets
    /// is sent entirely on free tokens, a longer one waits for tokens ([Y]).
    #[default]
    SmallFlows,
    /// Every flow bursts min(size, `initial_packets`) packets at line rate
    /// in its first RTT ([P] §6.2).
    FirstRtt,
}

/// How an RTS's hold-off combines with one in progress.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holdoff {
    /// Replaces it ([Y] HEAD).
    #[default]
    Set,
    /// Adds to it ([Y] paper era).
    Add,
}

/// `[protocol.phost]` (defaults and sources in the table above).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhostParams {
    /// Payload bytes per full packet.
    pub mss_bytes: u32,
    /// Which flows get free tokens.
    pub free_tokens: FreeTokens,
    /// Free-token count (the BDP in packets).
    pub initial_packets: u32,
    /// Tokens outstanding per flow before it is skipped.
    pub window_packets: u32,
    /// Token lifetime at the sender, slots.
    pub token_ttl_slots: f64,
    /// Wait before a skipped flow gets one probe token, slots.
    pub window_timeout_slots: f64,
    /// Wait after the last token of the goal before re-issuing tokens, slots.
    pub resend_timeout_slots: f64,
    /// Bytes per token slot (0: one full data packet on the wire).
    pub slot_bytes: u32,
    /// Hold-off rule after an RTS.
    pub holdoff: Holdoff,
    /// The sender's RTS resend timer (`ctrl_timeout_us`, 0: off).
    #[serde(rename = "ctrl_timeout_us")]
    pub ctrl_timeout: Micros,
}

impl Default for PhostParams {
    fn default() -> Self {
        PhostParams {
            mss_bytes: 1460,
            free_tokens: FreeTokens::SmallFlows,
            initial_packets: 8,
            window_packets: 8,
            token_ttl_slots: 1.5,
            window_timeout_slots: 25.0,
            resend_timeout_slots: 9.0,
            slot_bytes: 0,
            holdoff: Holdoff::Set,
            ctrl_timeout: Micros::from_ps(1_000_000_000),
        }
    }
}

impl PhostParams {
    /// Checks the section; `key` is `protocol.phost`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |name: &str| format!("{key}.{name}");
        in_range(&k("mss_bytes"), self.mss_bytes, 1, 65_000)?;
        in_range(&k("initial_packets"), self.initial_packets, 0, u32::MAX)?;
        in_range(&k("window_packets"), self.window_packets, 1, u32::MAX)?;
        for (name, v) in [
            ("token_ttl_slots", self.token_ttl_slots),
            ("window_timeout_slots", self.window_timeout_slots),
            ("resend_timeout_slots", self.resend_timeout_slots),
        ] {
            if !(v > 0.0 && v < 1e9) {
                return Err(bad(&k(name), v, "must be a positive number of slots"));
            }
        }
        Ok(())
    }

    /// One slot at `bps`, picoseconds.
    fn slot_ps(&self, bps: u64) -> u64 {
        let bytes = match self.slot_bytes {
            0 => self.mss_bytes + HEADER_BYTES,
            b => b,
        };
        tx_time_ps(bytes as u64, bps).max(1)
    }

    /// `slots` slots at `bps`, picoseconds.
    fn slots_ps(&self, slots: f64, bps: u64) -> u64 {
        (slots * self.slot_ps(bps) as f64).round() as u64
    }

    /// Free tokens of a flow of `total` packets (HP1).
    fn free_tokens(&self, total: u64) -> u64 {
        let f = self.initial_packets as u64;
        match self.free_tokens {
            FreeTokens::SmallFlows if total <= f => total,
            FreeTokens::SmallFlows => 0,
            FreeTokens::FirstRtt => total.min(f),
        }
    }
}

/// `rank` of control packets and of data ([Y] priorities 0 and 2).
const CONTROL_RANK: u64 = 0;
const DATA_RANK: u64 = 2;

/// Packs (high, low) into a packet's `ack` field.
fn pack(high: u64, low: u64) -> u64 {
    (high.min(u32::MAX as u64) << 32) | low.min(u32::MAX as u64)
}

/// Splits a packet's `ack` field into (high, low).
fn unpack(ack: u64) -> (u64, u64) {
    (ack >> 32, ack & u32::MAX as u64)
}

/// The protocol table's row for pHost.
pub struct Phost;

impl ProtocolDef for Phost {
    const CLASS: SwitchClass = SwitchClass::Other;
    const IDEAL_FCT: bool = true;
    fn mtu(p: &ProtocolParams) -> u32 {
        p.phost.mss_bytes
    }
    fn source(proto: Protocol, flow: &FlowInfo, p: &ProtocolParams) -> Endpoint {
        Endpoint::PhostSource(Box::new(PhostSource::new(flow, proto, &p.phost)))
    }
    fn sink(first: &Packet, p: &ProtocolParams) -> Endpoint {
        Endpoint::PhostSink(Box::new(PhostSink::new(first, &p.phost)))
    }
}
