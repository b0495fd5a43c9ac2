//! Placement decisions read from ftrace text, and a real kernel's compared with the
//! simulator's.
//!
//! **What is compared, and why not times.** A real kernel run in an emulated (TCG)
//! guest keeps its scheduler's *decisions* — which CPU a woken or new task is put
//! on, which balancing pass moves it where — but not its *durations*: every kernel
//! path costs far more guest time than on hardware, and several vCPUs share the
//! host's cores. So this module reduces a trace to the decisions the fair class
//! makes, expressed in the machine's topology rather than in CPU numbers, so that
//! a renumbering of CPUs that keeps the topology changes nothing:
//!
//! * **fork placement** (`select_task_rq(SD_BALANCE_FORK)` in `wake_up_new_task`):
//!   for every `sched_wakeup_new`, the level between the CPU the fork ran on (the
//!   CPU column of the child's `sched_process_fork`, else of the `sched_wakeup_new`
//!   line) and `target_cpu`; and how far the new tasks spread: the distinct CPUs,
//!   cores, LLCs and nodes they landed on over the ideal `min(new tasks, units)`.
//! * **wakeup placement** (`select_task_rq_fair` from `try_to_wake_up`): for every
//!   `sched_wakeup`, the target compared with the wakee's previous CPU
//!   (`sched_waking`'s `target_cpu`, which the kernel fills with `task_cpu(p)`
//!   before selecting) and with the waker's CPU (the CPU column of that
//!   `sched_waking`: it fires in the waker's context, while `sched_wakeup` may fire
//!   on the target CPU when the wakeup is queued there, `TTWU_QUEUE`). One class per
//!   wakeup, **prev first**: `prev` when the target is the previous CPU (whatever
//!   the waker's CPU), else the target's level relative to the waker: `waker`
//!   (the waker's own CPU), `waker_smt`, `waker_llc`, `waker_node` (another LLC of
//!   the waker's node), `waker_remote` (another node). The two plain level
//!   distributions, target vs waker and target vs prev, are reported as well (the
//!   first is what "wake-affine or not" measurements usually quote).
//! * **migrations** (`sched_migrate_task`), by level between `orig_cpu` and
//!   `dest_cpu`, per second of the window from the first to the last event of an
//!   included task, and split by mechanism: a migration of a task between its
//!   `sched_waking` and its `sched_wakeup` is a *wakeup* migration (`set_task_cpu`
//!   in `try_to_wake_up`: a placement decision); every other one is a *balance*
//!   migration (periodic, newidle, nohz-idle or active load balancing, or
//!   affinity changes). Fork placement prints no `sched_migrate_task`.
//! * **spread**: for tasks released together (hogs queued on one CPU, then freed),
//!   how long until each CPU / core / LLC / node holds its share. With `N` the
//!   largest number of included tasks runnable at once in the trace and `U` the
//!   units of a level (those holding an allowed CPU), the level is *spread* at the
//!   first event at or after the start at which `N` tasks are runnable and every
//!   unit holds between `⌊N/U⌋` and `⌈N/U⌉` of them (so at least one each when
//!   `N ≥ U`). Reported: the time from the start and the migrations of included
//!   tasks in between. When one CPU held all `N` tasks at some moment (hogs
//!   pinned there, then allowed everywhere), the clock starts instead at the last
//!   such moment, the release: the real and the simulated workload reach it after
//!   different set-up times (thread creation, a barrier), which are not what the
//!   spread measures. Spread is compared only when one side had such a release:
//!   for tasks that never sat together on one CPU it measures nothing.
//! * **occupancy**, sampled every `sample_step_ns` from the start to the last
//!   event: per level, the imbalance `max − min` of runnable included tasks per
//!   unit, averaged over samples; and the fraction of samples in which some CPU
//!   holds no runnable included task while another holds two or more ("idle while
//!   overloaded": a balancing opportunity not yet taken), split by the closest
//!   level between such an idle and such an overloaded CPU.
//!
//! A task's CPU is followed through `sched_switch` (both sides), `sched_wakeup*`
//! targets and `sched_migrate_task`; it is runnable from its wakeup until it is
//! switched out in a state other than `R`/`R+`, or exits.
//!
//! **Which tasks.** A real trace holds kworkers, the init shell and the tracer; a
//! simulated one only the scenario's tasks. A [`TaskFilter`] names the workload by
//! exact comms, comm prefixes or root pids, and by default follows
//! `sched_process_fork` so that children of included tasks are included (a child
//! forked by the shell and exec'ed into the workload is found through its root).
//!
//! **Comparison** ([`compare`]): for every statistic, the real value, the
//! simulated one, a distance and a verdict. Distances: total-variation distance
//! (½ Σ |p − q|) for class distributions; absolute difference for fractions and
//! for task-count imbalances; `|ln(real/sim)|` for rates, counts and times. The
//! thresholds ([`Thresholds`]) are deliberately wide for anything measured in
//! guest time (rates, spread times), which emulation stretches by a factor that
//! varies between runs (3× was measured for the same spread); fractions of
//! decisions are compared tightly.
//!
//! **Where each family lives.** This file holds the replay that reads a trace
//! ([`Decisions::from_text`]: which tasks, the window, the passes) and the
//! [`TaskFilter`]; `levels.rs` the [`Level`]s and [`Unit`]s everything is expressed
//! in; `fork.rs`, `wakeup.rs`, `migrations.rs` and `occupancy.rs` (spread and
//! occupancy) one decision family each; `bands.rs` the single-run comparison by
//! fixed bands ([`compare`]); [`verdicts`] the comparison over runs.

mod bands;
pub mod effects;
mod fork;
mod levels;
mod migrations;
mod occupancy;
#[cfg(test)]
mod tests;
pub mod verdicts;
mod wakeup;

pub use bands::{compare, verdict, Band, Comparison, Kind, Row, Thresholds, Verdict};
pub(crate) use bands::{statistics, Obs, Stat};
pub use fork::{ForkStats, Reach};
pub use levels::{Level, PerLevel, PerUnit, Unit};
pub use migrations::MigrationStats;
pub use occupancy::{OccupancyStats, SpreadAt, SpreadStats};
pub use wakeup::{IdleWait, WakeClasses, WakeupStats};

use crate::machine::Machine;
use crate::metrics::ftrace_stats::{parse_line, Line};
use fork::fork_reach;
use migrations::migration_rates;
use occupancy::{allowed_units, most_runnable, release, spread_ok, track, Occupancy, Sampler};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use wakeup::wakeup_fractions;

fn frac(a: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        a as f64 / n as f64
    }
}

/// Which tasks of a trace are the workload's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskFilter {
    /// Comms matched exactly.
    pub comms: Vec<String>,
    /// Comms matched by prefix (`hog` matches `hog-0`, `hog-1`, …).
    pub comm_prefixes: Vec<String>,
    /// Pids included as roots.
    pub pids: Vec<u64>,
    /// Include the children (`sched_process_fork`) of included tasks, recursively.
    pub follow_forks: bool,
}

impl TaskFilter {
    /// Every task but the idle task (pid 0).
    pub fn all() -> TaskFilter {
        TaskFilter::default()
    }
    /// Tasks whose comm starts with `prefix`, and their descendants.
    pub fn comm_prefix(prefix: &str) -> TaskFilter {
        TaskFilter {
            comm_prefixes: vec![prefix.to_string()],
            follow_forks: true,
            ..Default::default()
        }
    }
    /// Task `pid` and its descendants.
    pub fn descendants_of(pid: u64) -> TaskFilter {
        TaskFilter {
            pids: vec![pid],
            follow_forks: true,
            ..Default::default()
        }
    }
    fn is_all(&self) -> bool {
        self.comms.is_empty() && self.comm_prefixes.is_empty() && self.pids.is_empty()
    }
    fn matches_comm(&self, c: &str) -> bool {
        self.comms.iter().any(|x| x == c) || self.comm_prefixes.iter().any(|p| c.starts_with(p))
    }
}

/// How to read a trace.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionOpts {
    pub filter: TaskFilter,
    /// Occupancy sample step (ns); 0 takes no samples.
    pub sample_step_ns: u64,
    /// Start the spread and occupancy clocks at the first `tracing_mark_write`
    /// line containing this text (else at the first included event).
    pub start_marker: Option<String>,
    /// The CPUs the workload may use (its affinity); units without one are not
    /// counted by spread and occupancy. `None`: every CPU.
    pub cpus: Option<Vec<usize>>,
}

impl Default for DecisionOpts {
    fn default() -> Self {
        DecisionOpts {
            filter: TaskFilter::all(),
            sample_step_ns: 1_000_000,
            start_marker: None,
            cpus: None,
        }
    }
}

/// The decisions of one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Decisions {
    /// Included tasks (pids).
    pub tasks: u64,
    /// First and last event of an included task (ns).
    pub window_ns: (u64, u64),
    /// Event lines that did not parse.
    pub unparsed: u64,
    /// Included events naming a CPU the machine does not have (left out).
    pub foreign_cpu: u64,
    pub fork: ForkStats,
    pub wakeup: WakeupStats,
    pub migrations: MigrationStats,
    pub spread: SpreadStats,
    pub occupancy: OccupancyStats,
}

/// The pid an event line is about, if it is about one task.
fn subject(l: &Line<'_>) -> Option<u64> {
    let k = match l.event {
        "sched_process_fork" => "child_pid",
        "sched_switch" => return None,
        _ => "pid",
    };
    l.get(k).and_then(|v| v.parse().ok())
}

/// The included pids of `lines` under `f`.
fn included(lines: &[(Line<'_>, &str)], f: &TaskFilter) -> BTreeSet<u64> {
    let mut s = BTreeSet::new();
    let pairs = [
        ("prev_comm", "prev_pid"),
        ("next_comm", "next_pid"),
        ("comm", "pid"),
        ("child_comm", "child_pid"),
    ];
    for (l, _) in lines {
        for (ck, pk) in pairs {
            if let (Some(c), Some(p)) = (l.get(ck), l.get(pk).and_then(|v| v.parse::<u64>().ok())) {
                if p != 0 && (f.is_all() || f.matches_comm(c)) {
                    s.insert(p);
                }
            }
        }
    }
    s.extend(f.pids.iter().copied().filter(|&p| p != 0));
    if f.follow_forks {
        for (l, _) in lines
            .iter()
            .filter(|(l, _)| l.event == "sched_process_fork")
        {
            let parent = l.get("pid").and_then(|v| v.parse::<u64>().ok());
            let child = l.get("child_pid").and_then(|v| v.parse::<u64>().ok());
            if let (Some(pp), Some(c)) = (parent, child) {
                if s.contains(&pp) && c != 0 {
                    s.insert(c);
                }
            }
        }
    }
    s
}

/// `l`'s field `k` as a number.
fn num(l: &Line<'_>, k: &str) -> Option<u64> {
    l.get(k).and_then(|v| v.parse::<u64>().ok())
}

/// `l`'s field `k` as a CPU number (not checked against the machine).
fn cpu_of(l: &Line<'_>, k: &str) -> Option<usize> {
    num(l, k).map(|c| c as usize)
}

/// `p` when it is an included task (pid 0, the idle task, never is).
fn ours(incl: &BTreeSet<u64>, p: Option<u64>) -> Option<u64> {
    p.filter(|p| *p != 0 && incl.contains(p))
}

/// The parsed event lines of `text` with their raw text, and the count of lines that
/// are neither events, comments nor blank.
fn parse_lines(text: &str) -> (Vec<(Line<'_>, &str)>, u64) {
    let mut unparsed = 0;
    let mut lines: Vec<(Line<'_>, &str)> = Vec::new();
    for raw in text.lines() {
        match parse_line(raw) {
            Some(l) => lines.push((l, raw)),
            None if !raw.trim_start().starts_with('#') && !raw.trim().is_empty() => unparsed += 1,
            None => {}
        }
    }
    (lines, unparsed)
}

/// The first and last instants of an event about an included task ((0, 0) without
/// any).
fn window(lines: &[(Line<'_>, &str)], incl: &BTreeSet<u64>) -> (u64, u64) {
    let about_ours = |l: &Line<'_>| match l.event {
        "sched_switch" => {
            ours(incl, num(l, "prev_pid")).is_some() || ours(incl, num(l, "next_pid")).is_some()
        }
        "sched_process_fork" => {
            ours(incl, num(l, "child_pid")).is_some() || ours(incl, num(l, "pid")).is_some()
        }
        _ => ours(incl, subject(l)).is_some(),
    };
    let mut window: Option<(u64, u64)> = None;
    for (l, _) in lines {
        if about_ours(l) {
            let t = l.ts_ns;
            window = Some(window.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
    }
    window.unwrap_or((0, 0))
}

/// Pass 2's state between events: the decisions counted so far.
struct Replay<'a> {
    m: &'a Machine,
    incl: &'a BTreeSet<u64>,
    d: Decisions,
    occ: Occupancy,
    fork_cpu: BTreeMap<u64, usize>,
    /// pid -> (waker's CPU, previous CPU, when) of a sched_waking not yet followed
    /// by its sched_wakeup.
    waking: BTreeMap<u64, (usize, Option<usize>, u64)>,
    /// The pid each CPU runs (0: its idle task), from `sched_switch`.
    running: Vec<u64>,
    /// pid -> (target CPU, when it began waking) of a task woken onto an idle CPU
    /// and not yet switched in.
    idle_woken: BTreeMap<u64, (usize, u64)>,
    /// Where forked tasks landed.
    landed: Vec<usize>,
    spread_start: u64,
    migrations_since_start: u64,
    /// Units not yet spread over.
    spread_left: Vec<Unit>,
}

impl Replay<'_> {
    /// `c` when it is a CPU of the machine.
    fn valid(&self, c: Option<usize>) -> Option<usize> {
        c.filter(|&c| c < self.m.nr_cpus())
    }

    /// Count one event's decision.
    fn event(&mut self, l: &Line<'_>) {
        let pid = ours(self.incl, subject(l));
        match (l.event, pid) {
            ("sched_process_fork", _) => self.sched_process_fork(l),
            ("sched_wakeup_new", Some(p)) => self.sched_wakeup_new(l, p),
            ("sched_waking", Some(p)) => self.sched_waking(l, p),
            ("sched_wakeup", Some(p)) => self.sched_wakeup(l, p),
            ("sched_migrate_task", Some(p)) => self.sched_migrate_task(l, p),
            ("sched_switch", _) => self.sched_switch(l),
            _ => {}
        }
    }

    /// A switch-in: the CPU's running pid, and an idle-woken task's wait.
    fn sched_switch(&mut self, l: &Line<'_>) {
        let Some(next) = num(l, "next_pid") else {
            return;
        };
        if let Some(c) = self.valid(Some(l.cpu)) {
            self.running[c] = next;
        }
        if let Some((target, since)) = self.idle_woken.remove(&next) {
            if target == l.cpu {
                let w = &mut self.d.wakeup.idle_wait_counts;
                w.add(l.ts_ns.saturating_sub(since));
            }
        }
    }

    /// The CPU an included child was forked on.
    fn sched_process_fork(&mut self, l: &Line<'_>) {
        if let Some(c) = ours(self.incl, num(l, "child_pid")) {
            self.fork_cpu.insert(c, l.cpu);
        }
    }

    /// Fork placement: from the forking CPU to the target.
    fn sched_wakeup_new(&mut self, l: &Line<'_>, p: u64) {
        let from = self.fork_cpu.get(&p).copied().unwrap_or(l.cpu);
        match (self.valid(Some(from)), self.valid(cpu_of(l, "target_cpu"))) {
            (Some(a), Some(b)) => {
                let d = &mut self.d;
                d.fork.count += 1;
                if let Some(lv) = Level::between(self.m, a, b) {
                    *d.fork.level_counts.get_mut(lv) += 1;
                }
                self.landed.push(b);
            }
            _ => self.d.foreign_cpu += 1,
        }
    }

    /// A wakeup begins: the waker's CPU and the task's previous CPU.
    fn sched_waking(&mut self, l: &Line<'_>, p: u64) {
        let prev = self.valid(cpu_of(l, "target_cpu")).or(self.occ.cpu(p));
        self.waking.insert(p, (l.cpu, prev, l.ts_ns));
    }

    /// Wakeup placement, classified against the previous and the waker's CPU.
    fn sched_wakeup(&mut self, l: &Line<'_>, p: u64) {
        self.d.wakeup.count += 1;
        let (waker, prev, since) = match self.waking.remove(&p) {
            Some((w, pr, t)) => (self.valid(Some(w)), pr, Some(t)),
            None => (None, self.occ.cpu(p), None),
        };
        match self.valid(cpu_of(l, "target_cpu")) {
            Some(target) => {
                self.d.wakeup.classify(self.m, target, prev, waker);
                if let (Some(t), 0) = (since, self.running[target]) {
                    self.idle_woken.insert(p, (target, t));
                }
            }
            None => self.d.foreign_cpu += 1,
        }
    }

    /// A migration, by level, at wakeup or by balancing.
    fn sched_migrate_task(&mut self, l: &Line<'_>, p: u64) {
        match (
            self.valid(cpu_of(l, "orig_cpu")),
            self.valid(cpu_of(l, "dest_cpu")),
        ) {
            (Some(a), Some(b)) => {
                let lv = Level::between(self.m, a, b).unwrap_or(Level::Same);
                let mg = &mut self.d.migrations;
                mg.count += 1;
                *mg.by_level.get_mut(lv) += 1;
                if self.waking.contains_key(&p) {
                    *mg.wakeup.get_mut(lv) += 1;
                } else {
                    *mg.balance.get_mut(lv) += 1;
                }
                if l.ts_ns >= self.spread_start {
                    self.migrations_since_start += 1;
                }
            }
            _ => self.d.foreign_cpu += 1,
        }
    }

    /// After the event at `t`: the units over which all `most` tasks now spread.
    fn check_spread(&mut self, t: u64, most: u64, units: &PerUnit<BTreeSet<usize>>) {
        if !(t >= self.spread_start
            && most > 0
            && self.occ.runnable == most
            && !self.spread_left.is_empty())
        {
            return;
        }
        let (m, occ, d) = (self.m, &self.occ, &mut self.d);
        let (spread_start, migrations) = (self.spread_start, self.migrations_since_start);
        self.spread_left.retain(|&u| {
            if spread_ok(m, &occ.per_cpu, units.at(u), u, most) {
                *d.spread.at.get_mut(u) = SpreadAt {
                    after_ns: Some(t - spread_start),
                    migrations: Some(migrations),
                };
                false
            } else {
                true
            }
        });
    }
}

impl Decisions {
    /// JSON (serde, fields in declaration order).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("decisions serialise")
    }

    /// The decisions in ftrace `text` of a run on `m`.
    pub fn from_text(text: &str, m: &Machine, opts: &DecisionOpts) -> Decisions {
        let (mut lines, unparsed) = parse_lines(text);
        // ftrace prints in time order; a stable sort keeps same-instant order.
        lines.sort_by_key(|(l, _)| l.ts_ns);
        let incl = included(&lines, &opts.filter);
        let n = m.nr_cpus();

        // The window and the start.
        let window = window(&lines, &incl);
        let marker = opts.start_marker.as_deref().and_then(|mk| {
            lines
                .iter()
                .find(|(l, raw)| l.event == "tracing_mark_write" && raw.contains(mk))
                .map(|(l, _)| l.ts_ns)
        });
        let start = marker.unwrap_or(window.0);

        let (allowed, units) = allowed_units(m, opts);
        let most = most_runnable(&lines, &incl, n, start);
        let released = release(&lines, &incl, n, start, most);
        let spread_start = released.unwrap_or(start);

        // Pass 2: everything.
        let mut r = Replay {
            m,
            incl: &incl,
            d: Decisions {
                tasks: incl.len() as u64,
                window_ns: window,
                unparsed,
                ..Default::default()
            },
            occ: Occupancy::new(n),
            fork_cpu: BTreeMap::new(),
            waking: BTreeMap::new(),
            running: vec![0; n],
            idle_woken: BTreeMap::new(),
            landed: Vec::new(),
            spread_start,
            migrations_since_start: 0,
            spread_left: Unit::ALL.to_vec(),
        };
        let mut s = Sampler {
            m,
            allowed: &allowed,
            units: &units,
            samples: 0,
            imb_sum: PerUnit::default(),
            iwo: 0,
            iwo_level: PerLevel::default(),
        };
        let step = opts.sample_step_ns;
        let mut next_sample = start;
        for (l, _) in &lines {
            let t = l.ts_ns;
            if step > 0 {
                while next_sample < t && next_sample <= window.1 {
                    s.sample(&r.occ);
                    next_sample += step;
                }
            }
            r.event(l);
            track(&mut r.occ, l, &incl, n);
            r.check_spread(t, most, &units);
        }
        if step > 0 && !lines.is_empty() {
            while next_sample <= window.1 {
                s.sample(&r.occ);
                next_sample += step;
            }
        }

        let mut d = r.d;
        fork_reach(&mut d.fork, m, &r.landed, &units);
        wakeup_fractions(&mut d.wakeup);
        migration_rates(&mut d.migrations, window);
        d.spread.start_ns = spread_start;
        d.spread.released = released.is_some();
        d.spread.tasks = most;
        s.stats(&mut d.occupancy, step);
        d
    }
}
