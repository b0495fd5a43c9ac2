//! Spread and occupancy: the runnable included tasks per CPU followed through the
//! trace ([`Occupancy`]); how long tasks released together take until every CPU,
//! core, LLC and node holds its share; and, sampled over the run, the imbalance
//! between units and how often a CPU sat idle while another had tasks waiting.

use super::{frac, DecisionOpts, Level, PerLevel, PerUnit, Unit};
use crate::machine::Machine;
use crate::metrics::ftrace_stats::Line;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// When one level became spread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SpreadAt {
    /// ns from the start; `None`: never in the trace.
    pub after_ns: Option<u64>,
    /// Migrations of included tasks from the start to then.
    pub migrations: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SpreadStats {
    /// Where spread times count from: the release when there is one, else the start.
    pub start_ns: u64,
    /// Whether the tasks were released from one CPU (one CPU held all `N`).
    pub released: bool,
    /// `N`: the most included tasks runnable at once.
    pub tasks: u64,
    pub at: PerUnit<SpreadAt>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OccupancyStats {
    pub samples: u64,
    pub step_ns: u64,
    /// Mean over samples of `max − min` runnable included tasks per unit.
    pub imbalance: PerUnit<f64>,
    /// Fraction of samples with an idle CPU while another holds ≥ 2 tasks.
    pub idle_while_overloaded: f64,
    /// The same fraction split by the closest level between such a pair (its
    /// `same` is always 0; the five sum to `idle_while_overloaded`).
    pub idle_while_overloaded_by_level: PerLevel<f64>,
}

/// Per-task state followed through the trace.
#[derive(Clone, Copy, Debug, Default)]
struct TaskState {
    cpu: Option<usize>,
    runnable: bool,
}

/// Runnable included tasks per CPU, kept in step with the task states.
pub(super) struct Occupancy {
    tasks: BTreeMap<u64, TaskState>,
    pub(super) per_cpu: Vec<u64>,
    pub(super) runnable: u64,
}

impl Occupancy {
    pub(super) fn new(n: usize) -> Self {
        Occupancy {
            tasks: BTreeMap::new(),
            per_cpu: vec![0; n],
            runnable: 0,
        }
    }
    fn set(&mut self, pid: u64, cpu: Option<usize>, runnable: Option<bool>) {
        let st = self.tasks.entry(pid).or_default();
        if st.runnable {
            if let Some(c) = st.cpu {
                self.per_cpu[c] -= 1;
            }
            self.runnable -= 1;
        }
        if cpu.is_some() {
            st.cpu = cpu;
        }
        if let Some(r) = runnable {
            st.runnable = r;
        }
        if st.runnable {
            if let Some(c) = st.cpu {
                self.per_cpu[c] += 1;
            }
            self.runnable += 1;
        }
    }
    pub(super) fn cpu(&self, pid: u64) -> Option<usize> {
        self.tasks.get(&pid).and_then(|s| s.cpu)
    }
}

/// Apply one line's effect on included tasks' CPU and runnable state.
pub(super) fn track(occ: &mut Occupancy, l: &Line<'_>, incl: &BTreeSet<u64>, ncpu: usize) {
    let num = |k: &str| l.get(k).and_then(|v| v.parse::<u64>().ok());
    let cpuf = |k: &str| num(k).map(|c| c as usize).filter(|&c| c < ncpu);
    let here = Some(l.cpu).filter(|&c| c < ncpu);
    let ours = |p: Option<u64>| p.filter(|p| *p != 0 && incl.contains(p));
    match l.event {
        "sched_switch" => {
            if let Some(p) = ours(num("prev_pid")) {
                let st = l.get("prev_state").unwrap_or("S");
                occ.set(p, here, Some(st.starts_with('R')));
            }
            if let Some(p) = ours(num("next_pid")) {
                occ.set(p, here, Some(true));
            }
        }
        "sched_wakeup" | "sched_wakeup_new" => {
            if let Some(p) = ours(num("pid")) {
                occ.set(p, cpuf("target_cpu"), Some(true));
            }
        }
        "sched_waking" => {
            if let Some(p) = ours(num("pid")) {
                if occ.cpu(p).is_none() {
                    occ.set(p, cpuf("target_cpu"), None);
                }
            }
        }
        "sched_migrate_task" => {
            if let Some(p) = ours(num("pid")) {
                occ.set(p, cpuf("dest_cpu"), None);
            }
        }
        "sched_process_exit" => {
            if let Some(p) = ours(num("pid")) {
                occ.set(p, None, Some(false));
            }
        }
        _ => {}
    }
}

/// Whether every considered unit holds its share of `n` tasks.
pub(super) fn spread_ok(
    m: &Machine,
    per_cpu: &[u64],
    units: &BTreeSet<usize>,
    u: Unit,
    n: u64,
) -> bool {
    if units.is_empty() {
        return false;
    }
    let mut cnt: BTreeMap<usize, u64> = units.iter().map(|&k| (k, 0)).collect();
    for (c, &k) in per_cpu.iter().enumerate() {
        if let Some(x) = cnt.get_mut(&u.of(m, c)) {
            *x += k;
        }
    }
    let nu = cnt.len() as u64;
    let (lo, hi) = (n / nu, n.div_ceil(nu));
    cnt.values().all(|&x| lo <= x && x <= hi)
}

/// Counts per considered unit.
fn unit_counts(m: &Machine, per_cpu: &[u64], units: &BTreeSet<usize>, u: Unit) -> Vec<u64> {
    let mut cnt: BTreeMap<usize, u64> = units.iter().map(|&k| (k, 0)).collect();
    for (c, &k) in per_cpu.iter().enumerate() {
        if let Some(x) = cnt.get_mut(&u.of(m, c)) {
            *x += k;
        }
    }
    cnt.into_values().collect()
}

/// The allowed CPUs, and the units (per kind) they belong to.
pub(super) fn allowed_units(
    m: &Machine,
    opts: &DecisionOpts,
) -> (Vec<usize>, PerUnit<BTreeSet<usize>>) {
    let n = m.nr_cpus();
    let allowed: Vec<usize> = match &opts.cpus {
        Some(v) => v.iter().copied().filter(|&c| c < n).collect(),
        None => (0..n).collect(),
    };
    let mut units: PerUnit<BTreeSet<usize>> = PerUnit::default();
    for u in Unit::ALL {
        *units.get_mut(u) = allowed.iter().map(|&c| u.of(m, c)).collect();
    }
    (allowed, units)
}

/// Pass 1: N, the most included tasks runnable at once (from the start).
pub(super) fn most_runnable(
    lines: &[(Line<'_>, &str)],
    incl: &BTreeSet<u64>,
    n: usize,
    start: u64,
) -> u64 {
    let mut occ = Occupancy::new(n);
    let mut most = 0;
    for (l, _) in lines {
        track(&mut occ, l, incl, n);
        if l.ts_ns >= start {
            most = most.max(occ.runnable);
        }
    }
    most
}

/// Pass 1b: the release. Tasks released from one CPU (hogs queued there, then
/// allowed everywhere) are spread from the last moment one CPU held all N of them;
/// `None` without such a moment (or with fewer than two tasks).
pub(super) fn release(
    lines: &[(Line<'_>, &str)],
    incl: &BTreeSet<u64>,
    n: usize,
    start: u64,
    most: u64,
) -> Option<u64> {
    let mut released: Option<u64> = None;
    if most >= 2 {
        let mut occ = Occupancy::new(n);
        for (l, _) in lines {
            track(&mut occ, l, incl, n);
            if l.ts_ns >= start && occ.per_cpu.contains(&most) {
                released = Some(l.ts_ns);
            }
        }
    }
    released
}

/// The occupancy samples of pass 2, every `sample_step_ns`.
pub(super) struct Sampler<'a> {
    pub(super) m: &'a Machine,
    pub(super) allowed: &'a [usize],
    pub(super) units: &'a PerUnit<BTreeSet<usize>>,
    pub(super) samples: u64,
    pub(super) imb_sum: PerUnit<f64>,
    /// Samples with an idle CPU while another holds ≥ 2 tasks, and by the closest
    /// level between such a pair.
    pub(super) iwo: u64,
    pub(super) iwo_level: PerLevel<u64>,
}

impl Sampler<'_> {
    pub(super) fn sample(&mut self, occ: &Occupancy) {
        let m = self.m;
        self.samples += 1;
        for u in Unit::ALL {
            let c = unit_counts(m, &occ.per_cpu, self.units.at(u), u);
            let (mx, mn) = (
                c.iter().copied().max().unwrap_or(0),
                c.iter().copied().min().unwrap_or(0),
            );
            *self.imb_sum.get_mut(u) += (mx - mn) as f64;
        }
        let idle: Vec<usize> = self
            .allowed
            .iter()
            .copied()
            .filter(|&c| occ.per_cpu[c] == 0)
            .collect();
        let over: Vec<usize> = self
            .allowed
            .iter()
            .copied()
            .filter(|&c| occ.per_cpu[c] >= 2)
            .collect();
        let closest = idle
            .iter()
            .flat_map(|&a| over.iter().filter_map(move |&b| Level::between(m, a, b)))
            .min();
        if let Some(lv) = closest {
            self.iwo += 1;
            *self.iwo_level.get_mut(lv) += 1;
        }
    }

    /// The occupancy statistics of the samples taken.
    pub(super) fn stats(&self, o: &mut OccupancyStats, step: u64) {
        let samples = self.samples;
        o.samples = samples;
        o.step_ns = step;
        for u in Unit::ALL {
            *o.imbalance.get_mut(u) = if samples == 0 {
                0.0
            } else {
                self.imb_sum.get(u) / samples as f64
            };
        }
        o.idle_while_overloaded = frac(self.iwo, samples);
        for lv in Level::ALL {
            *o.idle_while_overloaded_by_level.get_mut(lv) = frac(self.iwo_level.get(lv), samples);
        }
    }
}
