//! Finding a run that can no longer progress.
//!
//! Without background load a deadlocked workload drains the event queue: nothing is
//! left to happen and [`Sim::run`] reports the tasks left sleeping. Beside daemon
//! tasks (background spinners) or spin locks the queue never drains, so the loop looks
//! every 10 ms of simulated time for the same situation by another route: every live
//! task sleeps in an op only another task could end, or spins on a lock whose holder
//! is itself stuck, while the daemons only compute. The kernel has its own detectors
//! for the real thing (the hung-task and soft-lockup watchdogs); this one only ends a
//! simulation that would otherwise spin to its duration saying nothing.

use std::fmt::Write as _;

use super::{blocked_list, Sim, SimError};
use crate::engine::Observer;
use crate::sched::core::TaskState;
use crate::sched::SchedEvent;
use crate::workload::program::Op;

impl<O: Observer<SchedEvent>> Sim<O> {
    /// A deadlock of the non-daemon tasks while daemons or spinners keep the
    /// queue busy: every live non-daemon task either sleeps (no wakeup in flight) in
    /// an op only another task can end (no timer), or spins on a spin lock whose
    /// holder is itself stuck that way (a livelock: the spinning never ends); and the
    /// daemons only compute, so nothing can wake them.
    pub(super) fn deadlock_beside_daemons(&self) -> Option<SimError> {
        if !self.all_started() {
            return None;
        }
        let pure = self.spec.daemons.iter().all(|&i| {
            self.spec.programs[self.spec.tasks[i].prog]
                .ops
                .iter()
                .all(|o| {
                    matches!(
                        o,
                        Op::Compute(_) | Op::Spin(_) | Op::Loop { .. } | Op::EndLoop { .. }
                    )
                })
        });
        if !pure {
            return None;
        }
        // Tasks blocked for good, and tasks spinning on lock `i` (pid, lock).
        let mut stuck = vec![false; self.st.len()];
        let mut blocked = Vec::new();
        let mut spinning: Vec<(usize, usize)> = Vec::new();
        for (pid, st) in self.st.iter().enumerate() {
            let Some(st) = st else { continue };
            let t = &self.k.tasks()[pid];
            if st.daemon || t.state == TaskState::Dead {
                continue;
            }
            match self.spec.programs[st.prog].ops.get(st.pc) {
                Some(
                    Op::Read { .. }
                    | Op::Write { .. }
                    | Op::Poll { .. }
                    | Op::FutexWait { .. }
                    | Op::FutexAwait { .. }
                    | Op::Lock(_)
                    | Op::Barrier(_)
                    | Op::CondBarrier { .. }
                    | Op::CondWait { .. }
                    | Op::WaitChild,
                ) if t.state == TaskState::Sleeping => {
                    stuck[pid] = true;
                    blocked.push(t.name.as_str());
                }
                Some(Op::SpinLock { l, slot }) if st.phase == 1 => {
                    let i = l.base as usize + st.marks[*slot as usize] as usize;
                    spinning.push((pid, i));
                }
                _ => return None,
            }
        }
        // A spinner is stuck when its lock's holder is; repeat to a fixed point
        // (chains of spinners holding each other's locks).
        let mut changed = true;
        while changed {
            changed = false;
            for &(pid, i) in &spinning {
                if !stuck[pid] && self.spin_holder[i].is_some_and(|h| stuck[h as usize]) {
                    stuck[pid] = true;
                    changed = true;
                }
            }
        }
        let mut spinners = Vec::new();
        for &(pid, _) in &spinning {
            if !stuck[pid] {
                return None;
            }
            spinners.push(self.k.tasks()[pid].name.as_str());
        }
        if blocked.is_empty() {
            return None;
        }
        let mut detail = blocked_list(&blocked);
        if !spinners.is_empty() {
            let _ = write!(
                detail,
                "; spinning for good on spin locks they hold: {}",
                blocked_list(&spinners)
            );
        }
        if !self.spec.daemons.is_empty() {
            detail.push_str("; only background spinners still run");
        }
        Some(SimError::Deadlock {
            t_ns: self.k.now(),
            blocked: blocked.len() + spinners.len(),
            detail,
        })
    }
}
