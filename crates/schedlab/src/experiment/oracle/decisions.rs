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

use crate::machine::{Machine, SharedLevel};
use crate::metrics::ftrace_stats::{parse_line, Line};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The closest topology level two CPUs share, with nodes (not packages) as the
/// outer unit, since NUMA placement is what the domains above the LLC decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Same,
    Smt,
    Llc,
    /// Same node, another LLC.
    Node,
    /// Another node.
    Remote,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Same,
        Level::Smt,
        Level::Llc,
        Level::Node,
        Level::Remote,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Level::Same => "same",
            Level::Smt => "smt",
            Level::Llc => "llc",
            Level::Node => "node",
            Level::Remote => "remote",
        }
    }

    /// The level between CPUs `a` and `b` of `m`; `None` when either is not a CPU
    /// of `m`.
    pub fn between(m: &Machine, a: usize, b: usize) -> Option<Level> {
        let (x, y) = (m.cpus.get(a)?, m.cpus.get(b)?);
        Some(match m.shared_level(a, b) {
            SharedLevel::Same => Level::Same,
            SharedLevel::Smt => Level::Smt,
            SharedLevel::Llc => Level::Llc,
            SharedLevel::Package | SharedLevel::Numa if x.node == y.node => Level::Node,
            SharedLevel::Package | SharedLevel::Numa => Level::Remote,
        })
    }
}

/// One value per [`Level`], serialised in level order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerLevel<T> {
    pub same: T,
    pub smt: T,
    pub llc: T,
    pub node: T,
    pub remote: T,
}

impl<T: Copy> PerLevel<T> {
    pub fn get(&self, l: Level) -> T {
        match l {
            Level::Same => self.same,
            Level::Smt => self.smt,
            Level::Llc => self.llc,
            Level::Node => self.node,
            Level::Remote => self.remote,
        }
    }
    fn get_mut(&mut self, l: Level) -> &mut T {
        match l {
            Level::Same => &mut self.same,
            Level::Smt => &mut self.smt,
            Level::Llc => &mut self.llc,
            Level::Node => &mut self.node,
            Level::Remote => &mut self.remote,
        }
    }
}

impl PerLevel<u64> {
    pub fn total(&self) -> u64 {
        Level::ALL.iter().map(|&l| self.get(l)).sum()
    }
    /// Counts as fractions of their sum (all 0 when the sum is 0).
    pub fn fractions(&self) -> PerLevel<f64> {
        let n = self.total();
        let mut f = PerLevel::default();
        for l in Level::ALL {
            *f.get_mut(l) = frac(self.get(l), n);
        }
        f
    }
}

/// The units tasks are counted in: CPUs, cores, LLCs, nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Cpu,
    Core,
    Llc,
    Node,
}

impl Unit {
    pub const ALL: [Unit; 4] = [Unit::Cpu, Unit::Core, Unit::Llc, Unit::Node];

    pub fn name(self) -> &'static str {
        match self {
            Unit::Cpu => "cpu",
            Unit::Core => "core",
            Unit::Llc => "llc",
            Unit::Node => "node",
        }
    }

    /// The unit of this kind holding `cpu`.
    fn of(self, m: &Machine, cpu: usize) -> usize {
        let c = &m.cpus[cpu];
        match self {
            Unit::Cpu => cpu,
            Unit::Core => c.core,
            Unit::Llc => c.llc,
            Unit::Node => c.node,
        }
    }
}

/// One value per [`Unit`], serialised in unit order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerUnit<T> {
    pub cpu: T,
    pub core: T,
    pub llc: T,
    pub node: T,
}

impl<T: Copy> PerUnit<T> {
    pub fn get(&self, u: Unit) -> T {
        *self.at(u)
    }
}

impl<T> PerUnit<T> {
    fn at(&self, u: Unit) -> &T {
        match u {
            Unit::Cpu => &self.cpu,
            Unit::Core => &self.core,
            Unit::Llc => &self.llc,
            Unit::Node => &self.node,
        }
    }
    fn get_mut(&mut self, u: Unit) -> &mut T {
        match u {
            Unit::Cpu => &mut self.cpu,
            Unit::Core => &mut self.core,
            Unit::Llc => &mut self.llc,
            Unit::Node => &mut self.node,
        }
    }
}

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
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MigrationStats {
    pub count: u64,
    /// Seconds from the first to the last included event.
    pub window_s: f64,
    pub by_level: PerLevel<u64>,
    /// `by_level` as fractions (where migrations go, independent of time).
    pub level: PerLevel<f64>,
    /// Migrations per second by level.
    pub rate_per_s: PerLevel<f64>,
    /// Migrations between a task's `sched_waking` and its `sched_wakeup`.
    pub wakeup: PerLevel<u64>,
    /// All other migrations (load balancing).
    pub balance: PerLevel<u64>,
    pub wakeup_rate_per_s: f64,
    pub balance_rate_per_s: f64,
    /// `wakeup / count`.
    pub wakeup_share: f64,
}

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

/// Per-task state followed through the trace.
#[derive(Clone, Copy, Debug, Default)]
struct TaskState {
    cpu: Option<usize>,
    runnable: bool,
}

/// Runnable included tasks per CPU, kept in step with the task states.
struct Occupancy {
    tasks: BTreeMap<u64, TaskState>,
    per_cpu: Vec<u64>,
    runnable: u64,
}

impl Occupancy {
    fn new(n: usize) -> Self {
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
    fn cpu(&self, pid: u64) -> Option<usize> {
        self.tasks.get(&pid).and_then(|s| s.cpu)
    }
}

/// Apply one line's effect on included tasks' CPU and runnable state.
fn track(occ: &mut Occupancy, l: &Line<'_>, incl: &BTreeSet<u64>, ncpu: usize) {
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

/// Whether every considered unit holds its share of `n` tasks.
fn spread_ok(m: &Machine, per_cpu: &[u64], units: &BTreeSet<usize>, u: Unit, n: u64) -> bool {
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

impl WakeupStats {
    /// Count one wakeup to `target` of a task last on `prev`, woken from `waker`.
    fn classify(&mut self, m: &Machine, target: usize, prev: Option<usize>, waker: Option<usize>) {
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

/// The allowed CPUs, and the units (per kind) they belong to.
fn allowed_units(m: &Machine, opts: &DecisionOpts) -> (Vec<usize>, PerUnit<BTreeSet<usize>>) {
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
fn most_runnable(lines: &[(Line<'_>, &str)], incl: &BTreeSet<u64>, n: usize, start: u64) -> u64 {
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
fn release(
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
struct Sampler<'a> {
    m: &'a Machine,
    allowed: &'a [usize],
    units: &'a PerUnit<BTreeSet<usize>>,
    samples: u64,
    imb_sum: PerUnit<f64>,
    /// Samples with an idle CPU while another holds ≥ 2 tasks, and by the closest
    /// level between such a pair.
    iwo: u64,
    iwo_level: PerLevel<u64>,
}

impl Sampler<'_> {
    fn sample(&mut self, occ: &Occupancy) {
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
    fn stats(&self, o: &mut OccupancyStats, step: u64) {
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

/// Pass 2's state between events: the decisions counted so far.
struct Replay<'a> {
    m: &'a Machine,
    incl: &'a BTreeSet<u64>,
    d: Decisions,
    occ: Occupancy,
    fork_cpu: BTreeMap<u64, usize>,
    /// pid -> (waker's CPU, previous CPU) of a sched_waking not yet followed by its
    /// sched_wakeup.
    waking: BTreeMap<u64, (usize, Option<usize>)>,
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
            _ => {}
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
        self.waking.insert(p, (l.cpu, prev));
    }

    /// Wakeup placement, classified against the previous and the waker's CPU.
    fn sched_wakeup(&mut self, l: &Line<'_>, p: u64) {
        self.d.wakeup.count += 1;
        let (waker, prev) = match self.waking.remove(&p) {
            Some((w, pr)) => (self.valid(Some(w)), pr),
            None => (None, self.occ.cpu(p)),
        };
        match self.valid(cpu_of(l, "target_cpu")) {
            Some(target) => self.d.wakeup.classify(self.m, target, prev, waker),
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

/// Fork reach: per unit, the distinct units forked tasks landed in against the most
/// they could have.
fn fork_reach(
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

/// The wakeup fractions of the counts.
fn wakeup_fractions(w: &mut WakeupStats) {
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

/// The migration fractions and rates over the window.
fn migration_rates(mg: &mut MigrationStats, window: (u64, u64)) {
    let secs = (window.1 - window.0) as f64 / 1e9;
    mg.window_s = secs;
    mg.level = mg.by_level.fractions();
    let rate = |c: u64| if secs > 0.0 { c as f64 / secs } else { 0.0 };
    for lv in Level::ALL {
        *mg.rate_per_s.get_mut(lv) = rate(mg.by_level.get(lv));
    }
    mg.wakeup_rate_per_s = rate(mg.wakeup.total());
    mg.balance_rate_per_s = rate(mg.balance.total());
    mg.wakeup_share = frac(mg.wakeup.total(), mg.count);
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

// ---------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------

/// How close a simulated statistic is to the real one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Match,
    Close,
    Differ,
    /// Neither side has data for it.
    #[serde(rename = "n/a")]
    NoData,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Match => "match",
            Verdict::Close => "close",
            Verdict::Differ => "differ",
            Verdict::NoData => "n/a",
        }
    }
}

/// The kind of a statistic, which fixes its distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A class distribution: total-variation distance.
    Distribution,
    /// A fraction in 0..1: absolute difference.
    Fraction,
    /// A mean number of tasks: absolute difference.
    Tasks,
    /// Events per second of guest time: `|ln(real/sim)|`.
    Rate,
    /// A count: `|ln(real/sim)|`.
    Count,
    /// A duration in guest time: `|ln(real/sim)|`.
    Time,
}

impl Kind {
    pub(crate) fn distance_name(self) -> &'static str {
        match self {
            Kind::Distribution => "tvd",
            Kind::Fraction | Kind::Tasks => "abs",
            Kind::Rate | Kind::Count | Kind::Time => "|ln r|",
        }
    }
}

/// Verdict thresholds: `distance ≤ match_max` is a match, `≤ close_max` close,
/// else differ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Band {
    pub match_max: f64,
    pub close_max: f64,
}

/// The thresholds per [`Kind`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// TVD: 0.05 / 0.15.
    pub distribution: Band,
    /// Absolute difference of fractions: 0.05 / 0.15.
    pub fraction: Band,
    /// Absolute difference of mean task counts: 0.25 / 0.75 tasks.
    pub tasks: Band,
    /// Rates, guest time: within ×1.5 / ×3.
    pub rate: Band,
    /// Counts: within ×1.5 / ×3.
    pub count: Band,
    /// Times, guest time: within ×2 / ×4 (TCG stretches guest time unevenly).
    pub time: Band,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            distribution: Band {
                match_max: 0.05,
                close_max: 0.15,
            },
            fraction: Band {
                match_max: 0.05,
                close_max: 0.15,
            },
            tasks: Band {
                match_max: 0.25,
                close_max: 0.75,
            },
            rate: Band {
                match_max: 1.5f64.ln(),
                close_max: 3f64.ln(),
            },
            count: Band {
                match_max: 1.5f64.ln(),
                close_max: 3f64.ln(),
            },
            time: Band {
                match_max: 2f64.ln(),
                close_max: 4f64.ln(),
            },
        }
    }
}

impl Thresholds {
    fn band(&self, k: Kind) -> Band {
        match k {
            Kind::Distribution => self.distribution,
            Kind::Fraction => self.fraction,
            Kind::Tasks => self.tasks,
            Kind::Rate => self.rate,
            Kind::Count => self.count,
            Kind::Time => self.time,
        }
    }
}

/// One compared statistic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub statistic: String,
    pub kind: Kind,
    /// `None`: the side has no data (no events of that kind, or never reached).
    pub real: Option<f64>,
    pub sim: Option<f64>,
    /// Events behind each side's value (for distributions and fractions), so a
    /// verdict on 3 events can be read as such.
    pub real_n: u64,
    pub sim_n: u64,
    /// `None` when undefined (one side missing, or a log-ratio with a zero).
    pub distance: Option<f64>,
    pub verdict: Verdict,
}

/// A real trace's decisions against a simulated one's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub thresholds: Thresholds,
    pub rows: Vec<Row>,
}

/// The verdict of `distance` under `band`.
pub fn verdict(distance: f64, band: Band) -> Verdict {
    if distance <= band.match_max + 1e-12 {
        Verdict::Match
    } else if distance <= band.close_max + 1e-12 {
        Verdict::Close
    } else {
        Verdict::Differ
    }
}

/// Total-variation distance between two distributions given as counts (each
/// normalised by its own sum); `None` when either is empty.
pub(crate) fn tvd(a: &[u64], b: &[u64]) -> Option<f64> {
    let (sa, sb): (u64, u64) = (a.iter().sum(), b.iter().sum());
    if sa == 0 || sb == 0 {
        return None;
    }
    Some(
        0.5 * a
            .iter()
            .zip(b)
            .map(|(&x, &y)| (x as f64 / sa as f64 - y as f64 / sb as f64).abs())
            .sum::<f64>(),
    )
}

struct Builder<'a> {
    th: &'a Thresholds,
    rows: Vec<Row>,
}

impl Builder<'_> {
    /// A scalar row; `n` the events behind each side (0 with a value present
    /// means "no events", which for fractions makes the value undefined).
    fn scalar(
        &mut self,
        name: String,
        kind: Kind,
        real: Option<f64>,
        sim: Option<f64>,
        n: (u64, u64),
    ) {
        let distance = match (real, sim) {
            (Some(a), Some(b)) => match kind {
                Kind::Distribution | Kind::Fraction | Kind::Tasks => Some((a - b).abs()),
                Kind::Rate | Kind::Count | Kind::Time => {
                    if a == 0.0 && b == 0.0 {
                        Some(0.0)
                    } else if a > 0.0 && b > 0.0 {
                        Some((a / b).ln().abs())
                    } else {
                        None
                    }
                }
            },
            _ => None,
        };
        let v = match (real, sim, distance) {
            (None, None, _) => Verdict::NoData,
            (_, _, Some(d)) => verdict(d, self.th.band(kind)),
            _ => Verdict::Differ,
        };
        self.rows.push(Row {
            statistic: name,
            kind,
            real,
            sim,
            real_n: n.0,
            sim_n: n.1,
            distance,
            verdict: v,
        });
    }

    /// A distribution row (TVD); its classes follow as fraction rows.
    fn dist(&mut self, name: &str, real: &[u64], sim: &[u64]) {
        let (sr, ss): (u64, u64) = (real.iter().sum(), sim.iter().sum());
        let d = tvd(real, sim);
        let v = match (sr, ss, d) {
            (0, 0, _) => Verdict::NoData,
            (_, _, Some(d)) => verdict(d, self.th.distribution),
            _ => Verdict::Differ,
        };
        self.rows.push(Row {
            statistic: name.to_string(),
            kind: Kind::Distribution,
            real: None,
            sim: None,
            real_n: sr,
            sim_n: ss,
            distance: d,
            verdict: v,
        });
    }
}

fn levels(p: &PerLevel<u64>) -> Vec<u64> {
    Level::ALL.iter().map(|&l| p.get(l)).collect()
}

const LEVEL_NAMES: [&str; 5] = ["same", "smt", "llc", "node", "remote"];

/// Compare a real trace's decisions with a simulated one's under the default
/// [`Thresholds`].
pub fn compare(real: &Decisions, sim: &Decisions) -> Comparison {
    compare_with(real, sim, &Thresholds::default())
}

/// [`compare`] with explicit thresholds.
pub(crate) fn compare_with(real: &Decisions, sim: &Decisions, th: &Thresholds) -> Comparison {
    let mut b = Builder {
        th,
        rows: Vec::new(),
    };
    let spread = real.spread.released || sim.spread.released;
    let frac = |k: u64, n: u64| (n > 0).then(|| k as f64 / n as f64);
    for (r, s) in statistics(real, spread)
        .into_iter()
        .zip(statistics(sim, spread))
    {
        match (r.obs, s.obs) {
            (Obs::Dist(a), Obs::Dist(c)) => b.dist(&r.name, &a, &c),
            (Obs::Events(kr, nr), Obs::Events(ks, ns)) => {
                b.scalar(r.name, r.kind, frac(kr, nr), frac(ks, ns), (nr, ns))
            }
            (Obs::Value(vr), Obs::Value(vs)) => b.scalar(r.name, r.kind, vr, vs, (r.n, s.n)),
            _ => unreachable!("both sides list the same statistics"),
        }
    }
    Comparison {
        thresholds: *th,
        rows: b.rows,
    }
}

/// One side's observation of one statistic in one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Obs {
    /// `k` of the run's `n` events are of the class.
    Events(u64, u64),
    /// A per-run value (`None`: undefined in this run).
    Value(Option<f64>),
    /// The counts of a class distribution (its classes follow as `Events` rows).
    Dist(Vec<u64>),
}

/// A statistic's name and kind, and its observation in one run.
pub(crate) struct Stat {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) obs: Obs,
    /// The events behind a per-run value (forks, migrations of the level, released
    /// tasks, occupancy samples), which the single-run table prints.
    pub(crate) n: u64,
}

/// Every compared statistic of one trace, in table order; `spread`: include the
/// spread statistics (some trace of either side had its tasks released from one
/// CPU: for tasks that never sat together on one CPU they measure nothing). Both the
/// single-run comparison ([`compare`]) and the one over runs
/// ([`super::verdicts::compare_runs`]) read these.
pub(crate) fn statistics(d: &Decisions, spread: bool) -> Vec<Stat> {
    let mut out = Vec::new();
    let dist = |out: &mut Vec<Stat>, name: &str, classes: &[&str], counts: Vec<u64>| {
        let n: u64 = counts.iter().sum();
        for (c, &k) in classes.iter().zip(&counts) {
            out.push(Stat {
                name: format!("{name}.{c}"),
                kind: Kind::Fraction,
                obs: Obs::Events(k, n),
                n,
            });
        }
        let at = out.len() - classes.len();
        out.insert(
            at,
            Stat {
                name: name.to_string(),
                kind: Kind::Distribution,
                obs: Obs::Dist(counts),
                n,
            },
        );
    };
    let value = |name: String, kind: Kind, v: Option<f64>, n: u64| Stat {
        name,
        kind,
        obs: Obs::Value(v),
        n,
    };
    dist(
        &mut out,
        "fork.level",
        &LEVEL_NAMES,
        levels(&d.fork.level_counts),
    );
    for u in Unit::ALL {
        let x = d.fork.reach.get(u);
        out.push(value(
            format!("fork.reach.{}", u.name()),
            Kind::Fraction,
            (x.ideal > 0).then_some(x.ratio),
            d.fork.count,
        ));
    }
    dist(
        &mut out,
        "wakeup.class",
        &WakeClasses::<u64>::NAMES,
        d.wakeup.class_counts.values().to_vec(),
    );
    dist(
        &mut out,
        "wakeup.vs_waker",
        &LEVEL_NAMES,
        levels(&d.wakeup.vs_waker_counts),
    );
    dist(
        &mut out,
        "wakeup.vs_prev",
        &LEVEL_NAMES,
        levels(&d.wakeup.vs_prev_counts),
    );
    let m = &d.migrations;
    dist(
        &mut out,
        "migrations.level",
        &LEVEL_NAMES[1..],
        levels(&m.by_level)[1..].to_vec(),
    );
    dist(
        &mut out,
        "migrations.wakeup.level",
        &LEVEL_NAMES[1..],
        levels(&m.wakeup)[1..].to_vec(),
    );
    dist(
        &mut out,
        "migrations.balance.level",
        &LEVEL_NAMES[1..],
        levels(&m.balance)[1..].to_vec(),
    );
    out.push(Stat {
        name: "migrations.wakeup_share".into(),
        kind: Kind::Fraction,
        obs: Obs::Events(m.wakeup.total(), m.count),
        n: m.count,
    });
    let rate = |x: f64| (m.window_s > 0.0).then_some(x);
    for lv in &Level::ALL[1..] {
        out.push(value(
            format!("migrations.rate.{}", lv.name()),
            Kind::Rate,
            rate(m.rate_per_s.get(*lv)),
            m.by_level.get(*lv),
        ));
    }
    out.push(value(
        "migrations.rate.wakeup".into(),
        Kind::Rate,
        rate(m.wakeup_rate_per_s),
        m.wakeup.total(),
    ));
    out.push(value(
        "migrations.rate.balance".into(),
        Kind::Rate,
        rate(m.balance_rate_per_s),
        m.balance.total(),
    ));
    for u in Unit::ALL.into_iter().filter(|_| spread) {
        let at = d.spread.at.get(u);
        out.push(value(
            format!("spread.{}.ms", u.name()),
            Kind::Time,
            at.after_ns.map(|x| x as f64 / 1e6),
            d.spread.tasks,
        ));
        out.push(value(
            format!("spread.{}.migrations", u.name()),
            Kind::Count,
            at.migrations.map(|x| x as f64),
            d.spread.tasks,
        ));
    }
    let sampled = d.occupancy.samples > 0;
    for u in Unit::ALL {
        out.push(value(
            format!("occupancy.imbalance.{}", u.name()),
            Kind::Tasks,
            sampled.then_some(d.occupancy.imbalance.get(u)),
            d.occupancy.samples,
        ));
    }
    out.push(value(
        "occupancy.idle_while_overloaded".into(),
        Kind::Fraction,
        sampled.then_some(d.occupancy.idle_while_overloaded),
        d.occupancy.samples,
    ));
    out
}

impl Comparison {
    /// Rows with a given verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// JSON (serde; rows in the table's order).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("comparison serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::test_topology;
    use proptest::prelude::*;

    /// One line in the real kernel's layout (6 decimals, no tgid column).
    fn l(cpu: usize, us: u64, who: &str, body: &str) -> String {
        format!(
            "{who:>16} [{cpu:03}] d..2. {:>5}.{:06}: {body}\n",
            us / 1_000_000,
            us % 1_000_000
        )
    }

    fn bench() -> DecisionOpts {
        DecisionOpts {
            filter: TaskFilter::comm_prefix("bench"),
            sample_step_ns: 0,
            ..Default::default()
        }
    }

    /// 2 nodes × 2 LLCs × 2 cores × 2 threads: core = cpu / 2, LLC = cpu / 4,
    /// node = cpu / 8.
    fn m16() -> Machine {
        test_topology(2, 2, 2, 2)
    }

    /// Wakeups from CPU 0 (and one from CPU 4) covering every class, two of them
    /// migrating at wakeup, two balance migrations, a wakeup with no
    /// `sched_waking` before it, and a kworker the filter must leave out.
    fn wake_trace() -> String {
        let t0: u64 = 10_000_000;
        let mut s = String::from("# tracer: nop\n#\n");
        let w = "bench-10";
        let mut add =
            |cpu: usize, dt: u64, who: &str, b: &str| s.push_str(&l(cpu, t0 + dt, who, b));
        // 1: prev 0, target 0 = waker's CPU: prev (prev first).
        add(
            0,
            0,
            w,
            "sched_waking: comm=bench pid=11 prio=120 target_cpu=000",
        );
        add(
            0,
            1,
            w,
            "sched_wakeup: comm=bench pid=11 prio=120 target_cpu=000",
        );
        // 2: prev 5, target 0: waker.
        add(
            0,
            10,
            w,
            "sched_waking: comm=bench pid=12 prio=120 target_cpu=005",
        );
        add(
            0,
            11,
            w,
            "sched_migrate_task: comm=bench pid=12 prio=120 orig_cpu=5 dest_cpu=0",
        );
        add(
            0,
            12,
            w,
            "sched_wakeup: comm=bench pid=12 prio=120 target_cpu=000",
        );
        // 3: prev 8, target 1: waker_smt (wakeup migration 8 -> 1, remote).
        add(
            0,
            20,
            w,
            "sched_waking: comm=bench pid=13 prio=120 target_cpu=008",
        );
        add(
            0,
            21,
            w,
            "sched_migrate_task: comm=bench pid=13 prio=120 orig_cpu=8 dest_cpu=1",
        );
        add(
            0,
            22,
            w,
            "sched_wakeup: comm=bench pid=13 prio=120 target_cpu=001",
        );
        // 4: prev 3, target 2: waker_llc, sched_wakeup printed on the target.
        add(
            0,
            30,
            w,
            "sched_waking: comm=bench pid=14 prio=120 target_cpu=003",
        );
        add(
            0,
            31,
            w,
            "sched_migrate_task: comm=bench pid=14 prio=120 orig_cpu=3 dest_cpu=2",
        );
        add(
            2,
            32,
            "<idle>-0",
            "sched_wakeup: comm=bench pid=14 prio=120 target_cpu=002",
        );
        // 5: prev 12, target 6: waker_node.
        add(
            0,
            40,
            w,
            "sched_waking: comm=bench pid=15 prio=120 target_cpu=012",
        );
        add(
            0,
            41,
            w,
            "sched_migrate_task: comm=bench pid=15 prio=120 orig_cpu=12 dest_cpu=6",
        );
        add(
            6,
            42,
            "<idle>-0",
            "sched_wakeup: comm=bench pid=15 prio=120 target_cpu=006",
        );
        // 6: prev 2, target 9: waker_remote.
        add(
            0,
            50,
            w,
            "sched_waking: comm=bench pid=16 prio=120 target_cpu=002",
        );
        add(
            0,
            51,
            w,
            "sched_migrate_task: comm=bench pid=16 prio=120 orig_cpu=2 dest_cpu=9",
        );
        add(
            9,
            52,
            "<idle>-0",
            "sched_wakeup: comm=bench pid=16 prio=120 target_cpu=009",
        );
        // A kworker, ignored.
        add(
            3,
            55,
            "<idle>-0",
            "sched_waking: comm=kworker/3:1 pid=77 prio=120 target_cpu=003",
        );
        add(
            3,
            56,
            "<idle>-0",
            "sched_migrate_task: comm=kworker/3:1 pid=77 prio=120 orig_cpu=3 dest_cpu=11",
        );
        add(
            11,
            57,
            "<idle>-0",
            "sched_wakeup: comm=kworker/3:1 pid=77 prio=120 target_cpu=011",
        );
        // 7: waker on CPU 4, prev 0, target 0: prev.
        add(
            4,
            60,
            "bench-17",
            "sched_waking: comm=bench pid=11 prio=120 target_cpu=000",
        );
        add(
            4,
            61,
            "bench-17",
            "sched_wakeup: comm=bench pid=11 prio=120 target_cpu=000",
        );
        // Two balance migrations: 1 -> 4 (node) and 2 -> 3 (smt).
        add(
            4,
            100,
            "bench-17",
            "sched_migrate_task: comm=bench pid=13 prio=120 orig_cpu=1 dest_cpu=4",
        );
        add(
            3,
            200,
            "<idle>-0",
            "sched_migrate_task: comm=bench pid=14 prio=120 orig_cpu=2 dest_cpu=3",
        );
        // 8: no sched_waking seen (prev 0 from wakeup 2), target 1: unclassified.
        add(
            1,
            500_000,
            "<idle>-0",
            "sched_wakeup: comm=bench pid=12 prio=120 target_cpu=001",
        );
        s
    }

    #[test]
    fn wakeup_classes_by_hand() {
        let d = Decisions::from_text(&wake_trace(), &m16(), &bench());
        assert_eq!(
            d.tasks, 6,
            "11..=16: 10 and 17 only appear in the task column"
        );
        let w = &d.wakeup;
        assert_eq!(w.count, 8);
        assert_eq!(w.unclassified, 1);
        assert_eq!(
            w.class_counts,
            WakeClasses {
                prev: 2,
                waker: 1,
                waker_smt: 1,
                waker_llc: 1,
                waker_node: 1,
                waker_remote: 1
            }
        );
        assert_eq!(w.class.prev, 2.0 / 7.0);
        assert_eq!(w.class.waker_remote, 1.0 / 7.0);
        // Target vs waker: 1, 2 same; 3 smt; 4 llc; 5, 7 node; 6 remote.
        assert_eq!(
            w.vs_waker_counts,
            PerLevel {
                same: 2,
                smt: 1,
                llc: 1,
                node: 2,
                remote: 1
            }
        );
        // Target vs prev: 1, 7 same; 4 (3->2), 8 (0->1) smt; 2 (5->0) node;
        // 3 (8->1), 5 (12->6), 6 (2->9) remote.
        assert_eq!(
            w.vs_prev_counts,
            PerLevel {
                same: 2,
                smt: 2,
                llc: 0,
                node: 1,
                remote: 3
            }
        );
        assert_eq!(w.vs_prev.remote, 3.0 / 8.0);
        assert_eq!(d.foreign_cpu, 0);
        assert_eq!(d.unparsed, 0);
    }

    #[test]
    fn migrations_by_level_and_mechanism() {
        let d = Decisions::from_text(&wake_trace(), &m16(), &bench());
        let mg = &d.migrations;
        assert_eq!(mg.count, 7);
        // At wakeup: 5->0 node, 8->1 remote, 3->2 smt, 12->6 remote, 2->9 remote.
        assert_eq!(
            mg.wakeup,
            PerLevel {
                same: 0,
                smt: 1,
                llc: 0,
                node: 1,
                remote: 3
            }
        );
        // Balance: 1->4 node, 2->3 smt.
        assert_eq!(
            mg.balance,
            PerLevel {
                same: 0,
                smt: 1,
                llc: 0,
                node: 1,
                remote: 0
            }
        );
        // Window 10.000000 .. 10.500000: half a second.
        assert_eq!(d.window_ns, (10_000_000_000, 10_500_000_000));
        assert_eq!(mg.window_s, 0.5);
        assert_eq!(mg.rate_per_s.remote, 6.0);
        assert_eq!(mg.rate_per_s.smt, 4.0);
        assert_eq!(mg.rate_per_s.node, 4.0);
        assert_eq!(mg.wakeup_rate_per_s, 10.0);
        assert_eq!(mg.balance_rate_per_s, 4.0);
        assert_eq!(mg.wakeup_share, 5.0 / 7.0);
        assert_eq!(mg.level.remote, 3.0 / 7.0);
    }

    #[test]
    fn fork_placement_and_the_fork_filter() {
        let mut s = String::new();
        let sh = "sh-5";
        // The shell forks 30 (later exec'ed as `hog`), which forks 31 and 32; a
        // kworker forks nothing of ours. Forks run on CPU 0 (30) and 3 (31, 32).
        s += &l(
            0,
            100,
            sh,
            "sched_process_fork: comm=sh pid=5 child_comm=sh child_pid=30",
        );
        s += &l(
            0,
            101,
            sh,
            "sched_wakeup_new: comm=sh pid=30 prio=120 target_cpu=003",
        );
        s += &l(
            3,
            110,
            "hog-30",
            "sched_process_fork: comm=hog pid=30 child_comm=hog child_pid=31",
        );
        // Printed on another CPU: the fork line's CPU (3) is the parent's.
        s += &l(
            1,
            111,
            "hog-30",
            "sched_wakeup_new: comm=hog pid=31 prio=120 target_cpu=002",
        );
        s += &l(
            3,
            120,
            "hog-30",
            "sched_process_fork: comm=hog pid=30 child_comm=hog child_pid=32",
        );
        s += &l(
            3,
            121,
            "hog-30",
            "sched_wakeup_new: comm=hog pid=32 prio=120 target_cpu=012",
        );
        s += &l(
            5,
            130,
            "kworker/5:0-40",
            "sched_process_fork: comm=kworker/5:0 pid=40 child_comm=kworker/5:0 child_pid=41",
        );
        s += &l(
            5,
            131,
            "kworker/5:0-40",
            "sched_wakeup_new: comm=kworker/5:0 pid=41 prio=120 target_cpu=005",
        );
        let m = m16();
        let opts = DecisionOpts {
            filter: TaskFilter::descendants_of(5),
            sample_step_ns: 0,
            ..Default::default()
        };
        let d = Decisions::from_text(&s, &m, &opts);
        assert_eq!(d.tasks, 4, "5, 30, 31, 32");
        let f = &d.fork;
        // 30: 0 -> 3 llc; 31: 3 -> 2 smt; 32: 3 -> 12 remote. The shell's own
        // wakeup_new is not printed.
        assert_eq!(f.count, 3);
        assert_eq!(
            f.level_counts,
            PerLevel {
                same: 0,
                smt: 1,
                llc: 1,
                node: 0,
                remote: 1
            }
        );
        // Landed on 3, 2, 12: CPUs 3/3, cores {1, 6} 2/3, LLCs {0, 3} 2/3,
        // nodes {0, 1} 2/min(3, 2).
        assert_eq!((f.reach.cpu.distinct, f.reach.cpu.ideal), (3, 3));
        assert_eq!((f.reach.core.distinct, f.reach.core.ideal), (2, 3));
        assert_eq!(f.reach.llc.ratio, 2.0 / 3.0);
        assert_eq!(
            (
                f.reach.node.distinct,
                f.reach.node.ideal,
                f.reach.node.ratio
            ),
            (2, 2, 1.0)
        );
        // By comm prefix: only `hog` (30 once exec'ed, 31, 32) and its forks.
        let d = Decisions::from_text(
            &s,
            &m,
            &DecisionOpts {
                filter: TaskFilter::comm_prefix("hog"),
                sample_step_ns: 0,
                ..Default::default()
            },
        );
        assert_eq!((d.tasks, d.fork.count), (3, 3));
        // Without following forks, an exact comm that only the kworker child has.
        let d = Decisions::from_text(
            &s,
            &m,
            &DecisionOpts {
                filter: TaskFilter {
                    comms: vec!["kworker/5:0".into()],
                    ..Default::default()
                },
                sample_step_ns: 0,
                ..Default::default()
            },
        );
        assert_eq!((d.tasks, d.fork.count, d.fork.level_counts.same), (2, 1, 1));
    }

    /// Four hogs forked on CPU 0 of a 1s2c2t machine (cores {0,1}, {2,3}), then
    /// pulled away one by one: 0->2 at 1 ms, 0->3 at 3 ms, 0->1 at 6 ms.
    fn hogs_trace() -> String {
        let mut s = String::new();
        let t0 = 100_000_000;
        for p in 1..=4 {
            s += &l(
                0,
                t0,
                "bash-50",
                &format!("sched_process_fork: comm=bash pid=50 child_comm=hog child_pid={p}"),
            );
            s += &l(
                0,
                t0,
                "bash-50",
                &format!("sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu=000"),
            );
        }
        s += &l(0, t0, "bash-50", "sched_switch: prev_comm=bash prev_pid=50 prev_prio=120 prev_state=S ==> next_comm=hog next_pid=1 next_prio=120");
        s += &l(
            2,
            t0 + 1000,
            "<idle>-0",
            "sched_migrate_task: comm=hog pid=2 prio=120 orig_cpu=0 dest_cpu=2",
        );
        s += &l(2, t0 + 1000, "<idle>-0", "sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=2 next_prio=120");
        s += &l(
            3,
            t0 + 3000,
            "<idle>-0",
            "sched_migrate_task: comm=hog pid=3 prio=120 orig_cpu=0 dest_cpu=3",
        );
        s += &l(
            1,
            t0 + 6000,
            "<idle>-0",
            "sched_migrate_task: comm=hog pid=4 prio=120 orig_cpu=0 dest_cpu=1",
        );
        s += &l(1, t0 + 6000, "<idle>-0", "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=4 next_prio=120");
        // Preempted (R+): still runnable; the window ends here.
        s += &l(1, t0 + 10_000, "hog-4", "sched_switch: prev_comm=hog prev_pid=4 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=77 next_prio=120");
        s
    }

    #[test]
    fn spread_of_four_hogs_on_1s2c2t() {
        let m = test_topology(1, 1, 2, 2);
        let opts = DecisionOpts {
            filter: TaskFilter::comm_prefix("hog"),
            ..Default::default()
        };
        let d = Decisions::from_text(&hogs_trace(), &m, &opts);
        let sp = &d.spread;
        assert_eq!((sp.tasks, sp.start_ns), (4, 100_000_000_000));
        let at = |u: Unit| (sp.at.get(u).after_ns, sp.at.get(u).migrations);
        // One LLC, one node: spread once all four are runnable.
        assert_eq!(at(Unit::Node), (Some(0), Some(0)));
        assert_eq!(at(Unit::Llc), (Some(0), Some(0)));
        // Cores hold 2 + 2 after the second pull.
        assert_eq!(at(Unit::Core), (Some(3_000_000), Some(2)));
        // CPUs hold one each after the third.
        assert_eq!(at(Unit::Cpu), (Some(6_000_000), Some(3)));
        assert_eq!(d.migrations.balance.llc, 2);
        assert_eq!(d.migrations.balance.smt, 1);
        assert_eq!(d.fork.level_counts.same, 4);
        // Samples at 0..=10 ms: per CPU [4,0,0,0] once, [3,0,1,0] twice,
        // [2,0,1,1] three times, [1,1,1,1] five times.
        let o = &d.occupancy;
        assert_eq!(o.samples, 11);
        assert!((o.imbalance.cpu - 16.0 / 11.0).abs() < 1e-12);
        assert!((o.imbalance.core - 8.0 / 11.0).abs() < 1e-12);
        assert_eq!((o.imbalance.llc, o.imbalance.node), (0.0, 0.0));
        // CPU 1 idle beside an overloaded CPU 0 in the first 6 samples.
        assert!((o.idle_while_overloaded - 6.0 / 11.0).abs() < 1e-12);
        assert_eq!(
            o.idle_while_overloaded_by_level.smt,
            o.idle_while_overloaded
        );
        // Restricted to core 1 (CPUs 2, 3), the CPU level counts two units.
        let d = Decisions::from_text(
            &hogs_trace(),
            &m,
            &DecisionOpts {
                cpus: Some(vec![2, 3]),
                ..opts.clone()
            },
        );
        assert_eq!(
            d.spread.at.cpu.after_ns, None,
            "4 tasks never sit 2 + 2 on CPUs 2, 3"
        );
        // A marker moves the start.
        let mut t = hogs_trace();
        t.insert_str(
            0,
            &l(0, 100_000_500, "bash-50", "tracing_mark_write: go hogs"),
        );
        let d = Decisions::from_text(
            &t,
            &m,
            &DecisionOpts {
                start_marker: Some("go hogs".into()),
                ..opts
            },
        );
        assert_eq!(d.spread.start_ns, 100_000_500_000);
        assert_eq!(d.spread.at.cpu.after_ns, Some(5_500_000));
        assert_eq!(
            d.spread.at.llc.after_ns,
            Some(0),
            "first event after the marker"
        );
    }

    #[test]
    fn spread_counts_from_the_release_not_from_the_forks() {
        // The four hogs are forked onto CPUs 1, 2, 3, 0 at t0 − 10 ms, pinned to
        // CPU 0 at t0 − 5 ms (three migrations), then run as in `hogs_trace`. The
        // last moment CPU 0 holds all four is t0 (the pulls start at t0 + 1 ms), so
        // the spread times are those of `hogs_trace`, not 10 ms more.
        let t0 = 100_000_000;
        let mut s = String::new();
        for p in 1..=4u64 {
            s += &l(
                0,
                t0 - 10_000,
                "bash-50",
                &format!("sched_process_fork: comm=bash pid=50 child_comm=hog child_pid={p}"),
            );
            s += &l(
                0,
                t0 - 10_000,
                "bash-50",
                &format!(
                    "sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu={:03}",
                    p % 4
                ),
            );
        }
        for p in 1..=3u64 {
            s += &l(
                0,
                t0 - 5_000,
                "bash-50",
                &format!("sched_migrate_task: comm=hog pid={p} prio=120 orig_cpu={p} dest_cpu=0"),
            );
        }
        for line in hogs_trace().lines() {
            if !line.contains("sched_process_fork") && !line.contains("sched_wakeup_new") {
                s += line;
                s.push('\n');
            }
        }
        let m = test_topology(1, 1, 2, 2);
        let opts = DecisionOpts {
            filter: TaskFilter::comm_prefix("hog"),
            ..Default::default()
        };
        let d = Decisions::from_text(&s, &m, &opts);
        assert!(d.spread.released);
        assert_eq!(d.spread.start_ns, 100_000_000_000);
        assert_eq!(d.spread.at.cpu.after_ns, Some(6_000_000));
        assert_eq!(
            d.spread.at.cpu.migrations,
            Some(3),
            "the pinning migrations are before it"
        );
        assert_eq!(d.window_ns.0, 99_990_000_000);
        // Tasks never all on one CPU: no release, and no spread rows compared.
        let mut apart = String::new();
        for p in 1..=2u64 {
            apart += &l(
                p as usize,
                t0,
                "bash-50",
                &format!("sched_wakeup_new: comm=hog pid={p} prio=120 target_cpu={p:03}"),
            );
        }
        let d = Decisions::from_text(&apart, &m, &opts);
        assert!(!d.spread.released);
        assert!(compare(&d, &d)
            .rows
            .iter()
            .all(|r| !r.statistic.starts_with("spread.")));
    }

    #[test]
    fn options_read_from_toml() {
        let o: DecisionOpts = toml::from_str(
            "sample_step_ns = 500000\ncpus = [0, 1]\n[filter]\ncomm_prefixes = [\"hog\"]\nfollow_forks = true\n",
        )
        .unwrap();
        assert_eq!(o.filter, TaskFilter::comm_prefix("hog"));
        assert_eq!(
            (o.sample_step_ns, o.cpus, o.start_marker),
            (500_000, Some(vec![0, 1]), None)
        );
        assert!(toml::from_str::<DecisionOpts>("step = 1\n").is_err());
    }

    #[test]
    fn verdicts_at_the_threshold_edges() {
        let b = Thresholds::default().fraction;
        assert_eq!(verdict(0.05, b), Verdict::Match);
        assert_eq!(verdict(0.0501, b), Verdict::Close);
        assert_eq!(verdict(0.15, b), Verdict::Close);
        assert_eq!(verdict(0.1501, b), Verdict::Differ);
        assert_eq!(tvd(&[1, 1], &[0, 0]), None);
        // [2,1,1,1,1,1]/7 vs [1,0,0,0,0,0]: ½((1 − 2/7) + 5/7) = 5/7.
        assert!((tvd(&[2, 1, 1, 1, 1, 1], &[7, 0, 0, 0, 0, 0]).unwrap() - 5.0 / 7.0).abs() < 1e-12);

        let m = test_topology(1, 1, 2, 2);
        let opts = DecisionOpts {
            filter: TaskFilter::comm_prefix("hog"),
            ..Default::default()
        };
        let real = Decisions::from_text(&hogs_trace(), &m, &opts);
        let c = compare(&real, &real);
        assert!(c
            .rows
            .iter()
            .all(|r| matches!(r.verdict, Verdict::Match | Verdict::NoData)));
        assert_eq!(c.count(Verdict::Differ), 0);
        let row = |c: &Comparison, name: &str| {
            c.rows.iter().find(|r| r.statistic == name).unwrap().clone()
        };
        // No wakeups on either side: n/a, not a match.
        assert_eq!(row(&c, "wakeup.class").verdict, Verdict::NoData);
        assert_eq!(row(&c, "migrations.wakeup.level").verdict, Verdict::NoData);
        let bal = row(&c, "migrations.balance.level");
        assert_eq!((bal.real_n, bal.distance), (3, Some(0.0)));
        // Spread time ×2 is still a match, ×4 close, beyond differs.
        let mut sim = real.clone();
        for (f, v) in [
            (2.0, Verdict::Match),
            (4.0, Verdict::Close),
            (4.1, Verdict::Differ),
        ] {
            sim.spread.at.cpu.after_ns = Some((6_000_000.0_f64 * f).round() as u64);
            let r = row(&compare(&real, &sim), "spread.cpu.ms");
            assert_eq!(r.verdict, v, "×{f}: {r:?}");
            assert!((r.distance.unwrap() - f64::ln(f)).abs() < 1e-9);
        }
        // Never spread in the simulation: differ, no distance.
        sim.spread.at.cpu.after_ns = None;
        let r = row(&compare(&real, &sim), "spread.cpu.ms");
        assert_eq!(
            (r.verdict, r.distance, r.sim),
            (Verdict::Differ, None, None)
        );
        // Imbalance: 16/11 vs 16/11 + 0.25 matches, + 0.3 is close.
        let mut sim = real.clone();
        sim.occupancy.imbalance.cpu += 0.25;
        assert_eq!(
            row(&compare(&real, &sim), "occupancy.imbalance.cpu").verdict,
            Verdict::Match
        );
        sim.occupancy.imbalance.cpu += 0.05;
        assert_eq!(
            row(&compare(&real, &sim), "occupancy.imbalance.cpu").verdict,
            Verdict::Close
        );
        // Migration levels: real 2 llc + 1 smt vs all smt: tvd = 2/3, differ.
        let mut sim = real.clone();
        sim.migrations.by_level = PerLevel {
            smt: 3,
            ..Default::default()
        };
        let r = row(&compare(&real, &sim), "migrations.level");
        assert!((r.distance.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.verdict, Verdict::Differ);
        let comp = compare(&real, &sim);
        let text = comp.text();
        assert!(text.lines().next().unwrap().starts_with("statistic"));
        assert!(text.contains("migrations.level.llc"));
        assert_eq!(text.lines().count(), comp.rows.len() + 2);
        let j: serde_json::Value = serde_json::from_str(&comp.json()).unwrap();
        assert_eq!(j["rows"].as_array().unwrap().len(), comp.rows.len());
        assert_eq!(j["rows"][0]["statistic"], "fork.level");
    }

    /// A random trace on [`m16`]: wakeups (some migrating), balance migrations,
    /// switches, forks.
    fn random_trace(ops: &[(u8, u8, u8, u8)], map: impl Fn(usize) -> usize) -> String {
        let mut s = String::new();
        let mut t = 1_000_000;
        for (i, &(kind, pid, a, b)) in ops.iter().enumerate() {
            let c = map((a as usize + b as usize) % 16);
            let (pid, a, b) = (
                20 + (pid % 6) as u64,
                map(a as usize % 16),
                map(b as usize % 16),
            );
            t += 100 + i as u64;
            match kind % 4 {
                0 => {
                    s += &l(
                        a,
                        t,
                        "bench-9",
                        &format!("sched_waking: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                    );
                    s += &l(
                        a,
                        t + 1,
                        "bench-9",
                        &format!("sched_wakeup: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                    );
                }
                1 => {
                    s += &l(
                        a,
                        t,
                        "bench-9",
                        &format!("sched_waking: comm=bench pid={pid} prio=120 target_cpu={b:03}"),
                    );
                    s += &l(a, t + 1, "bench-9", &format!("sched_migrate_task: comm=bench pid={pid} prio=120 orig_cpu={b} dest_cpu={c}"));
                    s += &l(
                        c,
                        t + 2,
                        "<idle>-0",
                        &format!("sched_wakeup: comm=bench pid={pid} prio=120 target_cpu={c:03}"),
                    );
                }
                2 => {
                    s += &l(b, t, "<idle>-0", &format!("sched_migrate_task: comm=bench pid={pid} prio=120 orig_cpu={a} dest_cpu={b}"));
                }
                _ => {
                    s += &l(a, t, "bench-9", &format!("sched_switch: prev_comm=bench prev_pid={pid} prev_prio=120 prev_state=S ==> next_comm=swapper/{a} next_pid=0 next_prio=120"));
                }
            }
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn classes_sum_to_one_and_ignore_topology_preserving_renumbering(
            ops in proptest::collection::vec((0u8..4, 0u8..6, 0u8..16, 0u8..16), 1..60),
            mask in 0usize..16,
        ) {
            // XOR with a 4-bit mask swaps threads, cores, LLCs and nodes among
            // themselves: every CPU pair keeps its level.
            let m = m16();
            let opts = DecisionOpts { sample_step_ns: 1000, ..bench() };
            let a = Decisions::from_text(&random_trace(&ops, |c| c), &m, &opts);
            let b = Decisions::from_text(&random_trace(&ops, |c| c ^ mask), &m, &opts);
            prop_assert_eq!(&a, &b);
            let w = &a.wakeup;
            let classified: u64 = w.class_counts.values().iter().sum();
            prop_assert_eq!(classified + w.unclassified, w.count);
            if classified > 0 {
                prop_assert!((w.class.values().iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
            if w.vs_waker_counts.total() > 0 {
                let v = w.vs_waker;
                prop_assert!((v.same + v.smt + v.llc + v.node + v.remote - 1.0).abs() < 1e-9);
            }
            prop_assert_eq!(a.migrations.wakeup.total() + a.migrations.balance.total(), a.migrations.count);
        }
    }
}
