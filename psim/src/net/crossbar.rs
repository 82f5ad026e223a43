//! An input-queued switch's crossbar: each input port hands the fabric one
//! packet at a time ([TH] §4.3.1: "All switches in our simulation are
//! input-queued with virtual output ports, that are scheduled using
//! round-robin"; `voq`'s `crossbar` key, `queue/voq.rs`).
//!
//! An input is busy from when an output takes its packet until the packet's
//! last bit has left that output (no speedup: the packet crosses at the
//! output's rate, whole, with no cell time). While it is busy no other
//! output may take a packet from it, so an output whose waiting inputs are
//! all busy idles with packets queued. When an output finishes a packet,
//! the switch's outputs with packets waiting try again, in port order from
//! the one after it and that output itself last: a freed input goes to the
//! first of them that wants it, as a round-robin accept pointer would give
//! it (iSLIP's one-past-the-last-accept rule, with each output's own round
//! robin over inputs as its grant), so an output cannot keep a backlogged
//! input to itself while another output waits for it. The thesis gives no matching algorithm, speedup
//! or cell time; this is the simplest matching that never leaves an
//! output idle while one of its inputs is free.
//!
//! Every decision is the node's own, at its own events, so results do not
//! depend on the partition.

use serde::{Deserialize, Serialize};

/// The busy state of a switch's inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crossbar {
    /// Until when each input port is busy feeding an output, ps (0: never
    /// used), indexed by input port.
    busy_until: Vec<u64>,
}

impl Crossbar {
    /// A crossbar of a switch with `ports` ports, every input free.
    pub fn new(ports: usize) -> Crossbar {
        Crossbar {
            busy_until: vec![0; ports],
        }
    }

    /// Until when each input is busy, ps, for the outputs' disciplines
    /// ([`crate::queue::QueueCtx::crossbar`]).
    #[inline]
    pub fn busy_until(&self) -> &[u64] {
        &self.busy_until
    }

    /// Input `input` feeds an output from `now` until `done`.
    #[inline]
    pub fn occupy(&mut self, input: u16, now: u64, done: u64) {
        let t = &mut self.busy_until[input as usize];
        debug_assert!(*t <= now, "input {input} taken while busy until {t}");
        *t = done;
    }

    /// The outputs to try again after output `freed` finished a packet, in
    /// order from the one after it, `freed` itself last: so an input that
    /// output `freed` just released goes first to another output that
    /// waits for it, and an output cannot keep an input to itself.
    pub fn retry_order(ports: u16, freed: u16) -> impl Iterator<Item = u16> {
        (1..=ports).map(move |k| (freed + k) % ports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_busy_until_its_packet_has_left_the_output() {
        let mut c = Crossbar::new(3);
        assert_eq!(c.busy_until(), [0, 0, 0]);
        c.occupy(1, 0, 200);
        assert_eq!(c.busy_until(), [0, 200, 0]);
        // Free again at 200 exactly: the next packet may start then.
        c.occupy(1, 200, 450);
        assert_eq!(c.busy_until(), [0, 450, 0]);
    }

    #[test]
    fn retries_go_round_from_the_port_after_the_one_that_finished() {
        let order: Vec<u16> = Crossbar::retry_order(4, 2).collect();
        assert_eq!(order, [3, 0, 1, 2]);
        let order: Vec<u16> = Crossbar::retry_order(4, 3).collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }
}
