//! Fork placement: where `wake_up_new_task` puts a new task
//! (`select_task_rq(SD_BALANCE_FORK)`), as the level between the forking CPU and
//! the `sched_wakeup_new` target, and how far the new tasks reached over CPUs,
//! cores, LLCs and nodes against the ideal `min(new tasks, units)`.

use super::{PerLevel, PerUnit, Unit};
use crate::machine::Machine;
use serde::Serialize;
use std::collections::BTreeSet;

/// Distinct units reached against the ideal `min(n, units)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Reach {
    pub distinct: u64,
    pub ideal: u64,
    /// `distinct / ideal` (0 when nothing was placed).
    pub ratio: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ForkStats {
    /// `sched_wakeup_new` lines of included tasks.
    pub count: u64,
    pub level_counts: PerLevel<u64>,
    pub level: PerLevel<f64>,
    /// Where the new tasks landed, over the ideal spread.
    pub reach: PerUnit<Reach>,
}

/// Fork reach: per unit, the distinct units forked tasks landed in against the most
/// they could have.
pub(super) fn fork_reach(
    fork: &mut ForkStats,
    m: &Machine,
    landed: &[usize],
    units: &PerUnit<BTreeSet<usize>>,
) {
    let nf = landed.len() as u64;
    for u in Unit::ALL {
        let distinct = landed
            .iter()
            .map(|&c| u.of(m, c))
            .collect::<BTreeSet<_>>()
            .len() as u64;
        let ideal = nf.min(units.at(u).len() as u64);
        *fork.reach.get_mut(u) = Reach {
            distinct,
            ideal,
            ratio: if ideal == 0 {
                0.0
            } else {
                distinct as f64 / ideal as f64
            },
        };
    }
    fork.level = fork.level_counts.fractions();
}
