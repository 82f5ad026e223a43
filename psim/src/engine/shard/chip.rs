//! The shard's side of the Tofino chip (`net/tofino.rs`): the ingress step
//! of a chip switch, its self-scheduled steps, and its counters and trace.

use super::{schedule_own, Shard};
use crate::engine::event::{EventKind, CHIP_NOTICE, CHIP_RECIRCULATED, CHIP_SERVED};
use crate::net::switch;
use crate::net::tofino::{ChipCounters, ChipRow, Decision};
use crate::packet::Packet;
use crate::queue::Queue;

impl Shard {
    /// A Tofino switch's ingress step: the chip forwards, trims or sends
    /// the packet to a recirculation line (`net/tofino.rs`).
    pub(super) fn chip_ingress(
        &mut self,
        local: usize,
        ing: switch::Ingress,
        mut pkt: Packet,
        now: u64,
    ) {
        let node = &mut self.nodes[local];
        let fits = match &node.ports[ing.out_port as usize].queue {
            Queue::Ndp(q) => q.data_fits(pkt.size),
            _ => true, // the config admits the chip only over NDP ports
        };
        let chip = node.tofino.as_deref_mut().expect("a chip");
        match chip.ingress(&pkt, ing.in_port, ing.out_port, fits, now) {
            Decision::Forward => {}
            Decision::Trim => crate::queue::ndp::trim(&mut pkt),
            Decision::Recirculate { line, start } => {
                if start {
                    self.chip_serve(local, line, now);
                }
                return;
            }
            Decision::Lost => {
                self.counters.dropped += 1;
                return;
            }
        }
        self.offer(local, ing.out_port, pkt, now, Some(ing.in_port));
    }

    /// Starts a chip's idle recirculation line, scheduling its service end
    /// and the notice its dequeue sends.
    fn chip_serve(&mut self, local: usize, line: u16, now: u64) {
        let node = &mut self.nodes[local];
        let chip = node.tofino.as_deref_mut().expect("a chip");
        let Some(s) = chip.serve(line, now) else {
            return;
        };
        let step = CHIP_SERVED;
        schedule_own(
            &mut self.events,
            node,
            s.done,
            EventKind::Chip { line, step },
        );
        if let Some(due) = s.notice_due {
            let step = CHIP_NOTICE;
            schedule_own(&mut self.events, node, due, EventKind::Chip { line, step });
        }
    }

    /// A chip's self-scheduled step.
    pub(super) fn on_chip(&mut self, local: usize, line: u16, step: u8, now: u64) {
        let node = &mut self.nodes[local];
        let chip = node.tofino.as_deref_mut().expect("chip events go to chips");
        match step {
            CHIP_SERVED => {
                let due = chip.served(line, now);
                let step = CHIP_RECIRCULATED;
                schedule_own(&mut self.events, node, due, EventKind::Chip { line, step });
                self.chip_serve(local, line, now);
            }
            CHIP_RECIRCULATED => {
                let (pkt, in_port, out_port) = chip.recirculated(line);
                self.offer(local, out_port, pkt, now, Some(in_port));
            }
            _ => chip.notice(now),
        }
    }

    /// The Tofino chips' counters summed over the shard (None: no chip).
    pub fn chip_totals(&self) -> Option<ChipCounters> {
        let mut chips = self
            .nodes
            .iter()
            .filter_map(|n| n.tofino.as_deref())
            .peekable();
        chips.peek()?;
        let mut t = ChipCounters::default();
        for c in chips {
            t += c.counters;
        }
        Some(t)
    }

    /// The Tofino chips' trace rows, ended at `end` (empty: none traced).
    pub fn chip_trace(&mut self, end: u64) -> Vec<ChipRow> {
        let mut rows = Vec::new();
        for c in self
            .nodes
            .iter_mut()
            .filter_map(|n| n.tofino.as_deref_mut())
        {
            rows.extend(c.finish_trace(end));
        }
        rows.sort_by_key(|r| (r.time_ps, r.switch, r.series, r.pipeline, r.port));
        rows
    }
}
