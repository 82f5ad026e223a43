//! What the engine says when a run stops making progress: the ports held by
//! PFC pauses, and the cycle of pauses if they form one (a PFC deadlock).

use crate::topo::Topology;

/// Windows between two checks of the progress watchdog (each check is one
/// sum over ranks).
pub(super) const WATCHDOG_WINDOWS: u64 = 256;

/// A port held by a PFC pause with packets waiting: (entity, port, the
/// neighbour that paused it, packets waiting).
pub(super) type Held = (u32, u16, u32, u32);

/// A cycle in the wait-for graph of held ports: an entity waits on the
/// neighbour that paused one of its ports. Returns the held ports along the
/// cycle, starting from the smallest entity on it; None if there is none.
fn wait_cycle(held: &[Held]) -> Option<Vec<Held>> {
    use std::collections::BTreeMap;
    let mut waits: BTreeMap<u32, Vec<Held>> = BTreeMap::new();
    for &h in held {
        waits.entry(h.0).or_default().push(h);
    }
    // Follow waits from each entity; an entity met again on the current
    // walk closes a cycle. Each entity is walked from at most once.
    let mut done: BTreeMap<u32, bool> = BTreeMap::new();
    for &start in waits.keys() {
        if done.contains_key(&start) {
            continue;
        }
        // Depth-first: the path of held ports taken, and per level the next edge to try.
        let mut path: Vec<Held> = Vec::new();
        let mut next: Vec<usize> = vec![0];
        let mut at = start;
        done.insert(start, false);
        loop {
            let i = *next.last().expect("a level");
            let out = waits.get(&at).map(Vec::as_slice).unwrap_or(&[]);
            let Some(&h) = out.get(i) else {
                done.insert(at, true);
                next.pop();
                match path.pop() {
                    Some(h) => at = h.0,
                    None => break,
                }
                continue;
            };
            *next.last_mut().expect("a level") += 1;
            match done.get(&h.2) {
                Some(false) => {
                    // On the current walk: the cycle runs from h.2 to here.
                    let from = path.iter().position(|p| p.0 == h.2).unwrap_or(path.len());
                    let mut cycle = path[from..].to_vec();
                    cycle.push(h);
                    let min = (0..cycle.len()).min_by_key(|&i| cycle[i].0).unwrap_or(0);
                    cycle.rotate_left(min);
                    return Some(cycle);
                }
                Some(true) => {}
                None => {
                    done.insert(h.2, false);
                    path.push(h);
                    next.push(0);
                    at = h.2;
                }
            }
        }
    }
    None
}

/// The held ports as one line: a cycle of pauses if there is one, else the
/// first few held ports. None if no port is held.
pub(super) fn describe(mut held: Vec<Held>, topo: &Topology) -> Option<String> {
    if held.is_empty() {
        return None;
    }
    held.sort_unstable();
    let name = |&(e, p, peer, n): &Held| {
        format!(
            "{} port {p} ({n} queued, paused by {})",
            topo.label(e),
            topo.label(peer)
        )
    };
    Some(match wait_cycle(&held) {
        Some(cycle) => {
            let hops: Vec<String> = cycle.iter().map(name).collect();
            format!("cycle {} -> back to the first", hops.join(" -> "))
        }
        None => {
            let first: Vec<String> = held.iter().take(4).map(name).collect();
            format!(
                "{} held port(s), no cycle: {}",
                held.len(),
                first.join(", ")
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 waits on 2, 2 on 3, 3 on 1, and 4 on 1 (outside the cycle): the
    /// cycle is found and starts at its smallest entity.
    #[test]
    fn a_cycle_of_pauses_is_found_and_a_chain_is_not_one() {
        let held = [(4, 0, 1, 5), (2, 1, 3, 5), (3, 0, 1, 5), (1, 2, 2, 5)];
        let cycle: Vec<u32> = wait_cycle(&held).unwrap().iter().map(|h| h.0).collect();
        assert_eq!(cycle, [1, 2, 3]);
        assert!(wait_cycle(&[(1, 0, 2, 1), (2, 0, 3, 1), (4, 0, 3, 1)]).is_none());
    }
}
