//! Wakeup placement: how `select_task_rq_fair` placed a woken task, classified
//! against its previous CPU (`task_cpu(p)`, `sched_waking`'s `target_cpu`) first and
//! then against the waker's CPU (`prev`, `waker`, `waker_smt`, `waker_llc`,
//! `waker_node`, `waker_remote`), with the plain level distributions against each;
//! and how long a task woken onto an idle CPU waits there before it runs
//! (`idle_wait`): from `sched_waking` (the waker's context, on both sides) to the
//! wakee's switch-in on the target. On bare metal that is the wakeup IPI and the
//! idle exit, tens of µs; in a TCG guest a halted vCPU must first get a host CPU
//! back (sched/vcpu_host.rs), which can take a host slice.

use super::{frac, Level, PerLevel};
use crate::machine::Machine;
use serde::Serialize;

/// Wakeup classes, prev first (see the module notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WakeClasses<T> {
    pub prev: T,
    pub waker: T,
    pub waker_smt: T,
    pub waker_llc: T,
    pub waker_node: T,
    pub waker_remote: T,
}

impl<T: Copy> WakeClasses<T> {
    pub const NAMES: [&'static str; 6] = [
        "prev",
        "waker",
        "waker_smt",
        "waker_llc",
        "waker_node",
        "waker_remote",
    ];
    pub fn values(&self) -> [T; 6] {
        [
            self.prev,
            self.waker,
            self.waker_smt,
            self.waker_llc,
            self.waker_node,
            self.waker_remote,
        ]
    }
}

/// Waits of a task woken onto an idle CPU, by class: under 250 µs, 250 µs to
/// 2 ms, 2 ms or more (pre-registered 2026-12-03 with the statistic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct IdleWait<T> {
    pub under_250us: T,
    pub under_2ms: T,
    pub over_2ms: T,
}

impl IdleWait<u64> {
    pub const NAMES: [&'static str; 3] = ["under_250us", "under_2ms", "over_2ms"];
    /// The class bounds, ns.
    const BOUNDS_NS: [u64; 2] = [250_000, 2_000_000];

    /// Count one wait of `ns`.
    pub(super) fn add(&mut self, ns: u64) {
        match ns {
            n if n < Self::BOUNDS_NS[0] => self.under_250us += 1,
            n if n < Self::BOUNDS_NS[1] => self.under_2ms += 1,
            _ => self.over_2ms += 1,
        }
    }

    pub fn values(&self) -> [u64; 3] {
        [self.under_250us, self.under_2ms, self.over_2ms]
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WakeupStats {
    /// `sched_wakeup` lines of included tasks.
    pub count: u64,
    /// Wakeups whose class could not be told (previous CPU unknown, or target ≠
    /// previous CPU with the waker's CPU unknown): left out of `class`.
    pub unclassified: u64,
    pub class_counts: WakeClasses<u64>,
    pub class: WakeClasses<f64>,
    /// Target vs the waker's CPU (wakeups with a known waker).
    pub vs_waker_counts: PerLevel<u64>,
    pub vs_waker: PerLevel<f64>,
    /// Target vs the previous CPU (wakeups with a known previous CPU).
    pub vs_prev_counts: PerLevel<u64>,
    pub vs_prev: PerLevel<f64>,
    /// Wakeups onto a CPU running its idle task whose wakee then ran there, by
    /// how long it waited from `sched_waking` to its switch-in.
    pub idle_wait_counts: IdleWait<u64>,
}

impl WakeupStats {
    /// Count one wakeup to `target` of a task last on `prev`, woken from `waker`.
    pub(super) fn classify(
        &mut self,
        m: &Machine,
        target: usize,
        prev: Option<usize>,
        waker: Option<usize>,
    ) {
        if let Some(lv) = prev.and_then(|pr| Level::between(m, pr, target)) {
            *self.vs_prev_counts.get_mut(lv) += 1;
        }
        let vw = waker.and_then(|wc| Level::between(m, wc, target));
        if let Some(lv) = vw {
            *self.vs_waker_counts.get_mut(lv) += 1;
        }
        let c = &mut self.class_counts;
        match (prev, vw) {
            (Some(pr), _) if pr == target => c.prev += 1,
            (Some(_), Some(Level::Same)) => c.waker += 1,
            (Some(_), Some(Level::Smt)) => c.waker_smt += 1,
            (Some(_), Some(Level::Llc)) => c.waker_llc += 1,
            (Some(_), Some(Level::Node)) => c.waker_node += 1,
            (Some(_), Some(Level::Remote)) => c.waker_remote += 1,
            _ => self.unclassified += 1,
        }
    }
}

/// The wakeup fractions of the counts.
pub(super) fn wakeup_fractions(w: &mut WakeupStats) {
    let cc = w.class_counts.values();
    let ct: u64 = cc.iter().sum();
    w.class = WakeClasses {
        prev: frac(cc[0], ct),
        waker: frac(cc[1], ct),
        waker_smt: frac(cc[2], ct),
        waker_llc: frac(cc[3], ct),
        waker_node: frac(cc[4], ct),
        waker_remote: frac(cc[5], ct),
    };
    w.vs_waker = w.vs_waker_counts.fractions();
    w.vs_prev = w.vs_prev_counts.fractions();
}
