//! Metrics: what a run measured, gathered by observing the scheduler's events.
//!
//! The kernel's own instruments for placement are the `sched_*` tracepoints and
//! schedstats; schedlab derives the same quantities from the [`SchedEvent`] stream:
//!
//! * **wakeup latency**: `sched_waking` → the `sched_switch` that runs the task (what
//!   `perf sched latency` and schbench-style tools measure), as an HDR histogram;
//! * **runqueue wait**: time runnable but not running (after a wakeup, a fork or a
//!   preemption) until switched in (schedstat `run_delay`), per task and as a histogram;
//! * **migrations** by the closest level the two CPUs share (SMT, LLC, package, NUMA);
//! * **per-CPU busy fraction** and **idle-state residency** (`cpu_idle` events);
//! * **per-function counters** for the placement functions (calls, CPUs probed,
//!   simulated ns charged) and **placement reasons**.
//!
//! Histograms keep 3 significant digits (values up to one hour in ns). One costs
//! ~270 KB, so it is allocated at its first record: a workload declares a metric
//! per thread and phase (an rt-app file with thousands of threads declares tens of
//! thousands) and many are never recorded in a short run.

pub mod energy;
pub mod ftrace;
pub mod ftrace_stats;
pub mod perfetto;
pub mod trace;
pub mod tracedat;

use crate::engine::{Observer, SimTime};
use crate::machine::SharedLevel;
use crate::sched::{Func, SchedEvent};
pub use crate::stats::{LatencyHist, Summary};
use std::collections::BTreeMap;

const NONE: SimTime = SimTime::MAX;

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Calls, probes and charged cost of one instrumented function.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FuncStats {
    pub calls: u64,
    pub cpus_probed: u64,
    /// CPUs not probed because an earlier scan of the same wakeup saw them busy
    /// (`IDLE_CPU_MASK`, seed 000).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpus_skipped: u64,
    pub cost_ns: u64,
    #[serde(skip)]
    pub probed_sq: u128,
    #[serde(skip)]
    pub cost_sq: u128,
}

impl FuncStats {
    /// Count one call that probed `probed` CPUs, skipped `skipped` and was
    /// charged `cost_ns`.
    #[inline]
    fn add(&mut self, probed: u32, cost_ns: u64, skipped: u32) {
        self.calls += 1;
        self.cpus_skipped += u64::from(skipped);
        self.cpus_probed += u64::from(probed);
        self.cost_ns += cost_ns;
        self.probed_sq += u128::from(probed) * u128::from(probed);
        self.cost_sq += u128::from(cost_ns) * u128::from(cost_ns);
    }

    fn mean_std(sum: u64, sq: u128, n: u64) -> (f64, f64) {
        if n == 0 {
            return (0.0, 0.0);
        }
        let mean = sum as f64 / n as f64;
        let var = (sq as f64 / n as f64 - mean * mean).max(0.0);
        (mean, var.sqrt())
    }
    /// Mean and (population) standard deviation of CPUs probed per call.
    pub(crate) fn probed_mean_std(&self) -> (f64, f64) {
        Self::mean_std(self.cpus_probed, self.probed_sq, self.calls)
    }
    /// Mean and standard deviation of charged ns per call.
    pub(crate) fn cost_mean_std(&self) -> (f64, f64) {
        Self::mean_std(self.cost_ns, self.cost_sq, self.calls)
    }
}

#[derive(Clone, Debug, Default)]
struct TaskTrack {
    waking: SimTime,
    runnable: SimTime,
    rq_wait: u64,
}

/// The observer that gathers a run's metrics.
#[derive(Clone, Debug)]
pub struct Collector {
    pub wakeup_latency: LatencyHist,
    pub runqueue_wait: LatencyHist,
    /// Migrations by shared level: smt, llc, package, numa.
    pub migrations: BTreeMap<&'static str, u64>,
    /// Placement reasons and their counts, in first-seen order (see
    /// [`Collector::placement_reasons`]).
    reasons: Vec<(&'static str, u64)>,
    /// Per instrumented function, indexed by `Func as usize` (see [`Func::ALL`]).
    pub functions: [FuncStats; Func::ALL.len()],
    pub busy_ns: Vec<u64>,
    busy_since: Vec<SimTime>,
    /// Per CPU, ns spent in each idle state, as cpuidle counts it: from entry
    /// until the state's `enter()` returns, the exit latency included.
    pub idle_residency: Vec<Vec<u64>>,
    /// Per CPU, the open residency interval: (since, state, until), `until` the end
    /// of an exit latency under way (`NONE` while no exit has begun).
    idle_since: Vec<(SimTime, usize, SimTime)>,
    /// Per frequency domain, ns at each OPP (`(freq_khz, ns)`, the domain's OPP
    /// order), as `cpu_frequency` changes it; see [`Collector::with_freq_domains`].
    pub freq_residency: Vec<Vec<(u32, u64)>>,
    /// Per frequency domain, since when it has been at which OPP (an index into
    /// its `freq_residency`).
    freq_since: Vec<(SimTime, usize)>,
    /// Each CPU's frequency domain (empty without cpufreq).
    freq_domain: Vec<usize>,
    tasks: Vec<TaskTrack>,
    pub switches: u64,
    pub wakeups: u64,
    /// Energy accounting, on machines with an Energy Model (metrics/energy.rs).
    pub energy: Option<energy::EnergyMeter>,
}

impl Collector {
    pub fn new(nr_cpus: usize, idle_states: &[usize]) -> Self {
        Collector {
            // One each per run, recorded at every wakeup and switch: dense from
            // the start (no sparse phase on the hot path).
            wakeup_latency: LatencyHist::dense(),
            runqueue_wait: LatencyHist::dense(),
            migrations: [
                SharedLevel::Smt,
                SharedLevel::Llc,
                SharedLevel::Package,
                SharedLevel::Numa,
            ]
            .iter()
            .map(|l| (l.name(), 0))
            .collect(),
            reasons: Vec::new(),
            functions: Default::default(),
            busy_ns: vec![0; nr_cpus],
            busy_since: vec![NONE; nr_cpus],
            idle_residency: idle_states.iter().map(|&n| vec![0; n]).collect(),
            idle_since: vec![(NONE, 0, NONE); nr_cpus],
            freq_residency: Vec::new(),
            freq_since: Vec::new(),
            freq_domain: Vec::new(),
            tasks: Vec::new(),
            switches: 0,
            wakeups: 0,
            energy: None,
        }
    }

    /// Count migrations under the levels this machine has only
    /// ([`crate::machine::Machine::shared_levels`]): no `smt=0` on a machine
    /// without SMT. (A migration is still counted under its level.)
    pub fn with_levels(mut self, levels: &[SharedLevel]) -> Self {
        self.migrations = levels.iter().map(|l| (l.name(), 0)).collect();
        self
    }

    /// Count frequency residency: `domains` gives each domain's OPPs (ascending)
    /// and `cpu_domain` each CPU's domain. Every policy starts at its highest OPP
    /// (`CpuFreq::new`).
    pub fn with_freq_domains(mut self, domains: &[Vec<u32>], cpu_domain: Vec<usize>) -> Self {
        self.freq_residency = domains
            .iter()
            .map(|opps| opps.iter().map(|&f| (f, 0)).collect())
            .collect();
        self.freq_since = domains
            .iter()
            .map(|opps| (0, opps.len().saturating_sub(1)))
            .collect();
        self.freq_domain = cpu_domain;
        self
    }

    fn close_freq(&mut self, d: usize, now: SimTime) {
        let (t, i) = self.freq_since[d];
        if let Some(r) = self.freq_residency[d].get_mut(i) {
            r.1 += now.saturating_sub(t);
        }
        self.freq_since[d].0 = now;
    }

    /// Attach an energy meter (see [`energy::EnergyMeter::new`]).
    pub fn with_energy(mut self, meter: Option<energy::EnergyMeter>) -> Self {
        self.energy = meter;
        self
    }

    #[inline]
    fn task(&mut self, pid: u32) -> &mut TaskTrack {
        let i = pid as usize;
        if i >= self.tasks.len() {
            self.tasks.resize(
                i + 1,
                TaskTrack {
                    waking: NONE,
                    runnable: NONE,
                    rq_wait: 0,
                },
            );
        }
        &mut self.tasks[i]
    }

    /// Placement reasons and their counts, by name.
    pub fn placement_reasons(&self) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for &(r, n) in &self.reasons {
            *m.entry(r).or_insert(0) += n;
        }
        m
    }

    /// Total runqueue wait of task `pid` so far.
    pub fn task_rq_wait(&self, pid: u32) -> u64 {
        self.tasks.get(pid as usize).map(|t| t.rq_wait).unwrap_or(0)
    }

    /// Close open busy and idle intervals at the end of the run.
    pub fn finish(&mut self, now: SimTime) {
        if let Some(e) = &mut self.energy {
            e.finish(now);
        }
        for d in 0..self.freq_since.len() {
            self.close_freq(d, now);
        }
        for cpu in 0..self.busy_ns.len() {
            if self.busy_since[cpu] != NONE {
                self.busy_ns[cpu] += now - self.busy_since[cpu];
                self.busy_since[cpu] = now;
            }
            let (t, s, until) = self.idle_since[cpu];
            if t != NONE {
                self.close_idle(cpu, now);
                if until > now {
                    self.idle_since[cpu] = (now, s, until);
                }
            }
        }
    }

    /// End `cpu`'s residency interval at `now`, or where its exit latency ended if
    /// that was earlier.
    fn close_idle(&mut self, cpu: usize, now: SimTime) {
        let (t, s, until) = std::mem::replace(&mut self.idle_since[cpu], (NONE, 0, NONE));
        if t != NONE {
            self.idle_residency[cpu][s] += now.min(until).saturating_sub(t);
        }
    }
}

impl Observer<SchedEvent> for Collector {
    /// A `FuncCall`, the most frequent event (up to five per wakeup), takes a short
    /// path the caller can inline: it only adds to its function's counters (the
    /// energy model ignores it). Every other event goes to `Collector::follow`.
    #[inline]
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        if let SchedEvent::FuncCall {
            func,
            probed,
            cost_ns,
            skipped,
            ..
        } = *ev
        {
            self.functions[func as usize].add(probed, cost_ns, skipped);
            return;
        }
        self.follow(now, ev);
    }
}

impl Collector {
    /// Follow one event other than a `FuncCall` (see [`Collector::observe`]).
    #[inline(never)]
    fn follow(&mut self, now: SimTime, ev: &SchedEvent) {
        if let Some(e) = &mut self.energy {
            e.observe(now, ev);
        }
        match *ev {
            SchedEvent::Switch {
                cpu, prev, next, ..
            } => {
                self.switches += 1;
                if let Some((p, prev_state)) = ev.switched_out() {
                    if prev_state.is_runnable() {
                        self.task(p).runnable = now;
                    }
                    if next.is_none() && self.busy_since[cpu] != NONE {
                        self.busy_ns[cpu] += now - self.busy_since[cpu];
                        self.busy_since[cpu] = NONE;
                    }
                }
                if let Some(n) = next {
                    if prev.is_none() {
                        self.busy_since[cpu] = now;
                        self.close_idle(cpu, now);
                    }
                    let t = self.task(n);
                    let w = t.waking;
                    let r = t.runnable;
                    t.waking = NONE;
                    t.runnable = NONE;
                    if r != NONE {
                        t.rq_wait += now - r;
                        self.runqueue_wait.record(now - r);
                    }
                    if w != NONE {
                        self.wakeup_latency.record(now - w);
                    }
                }
            }
            SchedEvent::Waking { pid, .. } => {
                self.wakeups += 1;
                self.task(pid).waking = now;
            }
            SchedEvent::Wakeup { pid, .. } => {
                self.task(pid).runnable = now;
            }
            SchedEvent::Migrate { level, .. } => {
                *self.migrations.entry(level.name()).or_insert(0) += 1;
            }
            SchedEvent::Placement { reason, .. } => {
                // Reasons are a handful of static strings: a short scan, pointer
                // equality first.
                match self
                    .reasons
                    .iter_mut()
                    .find(|(r, _)| std::ptr::eq(*r, reason) || *r == reason)
                {
                    Some((_, n)) => *n += 1,
                    None => self.reasons.push((reason, 1)),
                }
            }
            SchedEvent::FuncCall {
                func,
                probed,
                cost_ns,
                skipped,
                ..
            } => self.functions[func as usize].add(probed, cost_ns, skipped),
            SchedEvent::IdleEnter { cpu, state } => {
                self.close_idle(cpu, now);
                self.idle_since[cpu] = (now, state, NONE);
            }
            SchedEvent::IdleExit { cpu, exit_ns } => {
                // cpuidle's residency: until the state's enter() returns, after the
                // exit latency (the trace's `cpu_idle` exit).
                let open = &mut self.idle_since[cpu];
                if open.0 != NONE {
                    open.2 = now.saturating_add(exit_ns);
                }
            }
            SchedEvent::CpuFrequency { cpu, freq_khz } => {
                // One event per CPU of the policy, at once: the first moves it.
                if let Some(&d) = self.freq_domain.get(cpu) {
                    let i = self.freq_residency[d].iter().position(|o| o.0 == freq_khz);
                    if let Some(i) = i.filter(|&i| i != self.freq_since[d].1) {
                        self.close_freq(d, now);
                        self.freq_since[d].1 = i;
                    }
                }
            }
            SchedEvent::Fork { .. }
            | SchedEvent::Exit { .. }
            | SchedEvent::Rename { .. }
            | SchedEvent::Marker { .. }
            | SchedEvent::SchedTp(_)
            | SchedEvent::Probe { .. }
            | SchedEvent::CfsRq { .. } => {}
        }
    }
}

/// Fan an event out to the collector and, when asked, a decision trace.
pub struct Observers {
    pub collector: Collector,
    pub trace: Option<trace::DecisionTrace>,
    /// Raw events within a time window (for `schedlab explain`).
    pub log: Option<EventLog>,
}

/// The events observed within `window` (inclusive), in order, and the state the
/// trace shows at the window's start.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EventLog {
    pub window: (SimTime, SimTime),
    pub events: Vec<(SimTime, SchedEvent)>,
    /// By CPU, the last `SchedEvent::CfsRq` report seen before the window opened
    /// (`(nr_running, util_avg)`): the counters' values at the window's start.
    pub cfs_rq_at_start: Vec<Option<(u32, u64)>>,
    /// By CPU, the cpuidle state it sat in when the window opened (entered before
    /// it and not left).
    #[serde(default)]
    pub idle_at_start: Vec<Option<usize>>,
    /// By CPU, its frequency (kHz) when the window opened.
    #[serde(default)]
    pub freq_at_start: Vec<Option<u32>>,
    /// Idle exits begun before the window opened whose `cpu_idle` exit fires
    /// inside it (`(time, cpu, exit_ns)`; the CPU counts as in its state at the
    /// start).
    #[serde(default)]
    pub exits_at_start: Vec<(SimTime, usize, u64)>,
    /// When the run ended: no tracepoint fires after it.
    #[serde(default)]
    pub end: Option<SimTime>,
    /// LISA's `sched_tp` events the run traced (none unless asked for): their
    /// formats and tracks are written even where no event fired.
    #[serde(default)]
    pub sched_tp: crate::sched::SchedTpSet,
}

/// Set `v[cpu]` to `x`, growing `v` as needed.
fn set_at<T: Clone + Default>(v: &mut Vec<T>, cpu: usize, x: T) {
    if cpu >= v.len() {
        v.resize(cpu + 1, T::default());
    }
    v[cpu] = x;
}

impl EventLog {
    /// An empty log of the events within `window`.
    pub fn new(window: (SimTime, SimTime)) -> EventLog {
        EventLog {
            window,
            ..Default::default()
        }
    }

    /// Out of line, so that [`Observers::observe`] stays small enough to inline
    /// into every `emit` of the kernel when no log is kept.
    #[inline(never)]
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        if now >= self.window.0 && now <= self.window.1 {
            self.events.push((now, *ev));
        } else if now < self.window.0 {
            match *ev {
                SchedEvent::CfsRq {
                    cpu,
                    nr_running,
                    util_avg,
                } => set_at(&mut self.cfs_rq_at_start, cpu, Some((nr_running, util_avg))),
                SchedEvent::IdleEnter { cpu, state } => {
                    set_at(&mut self.idle_at_start, cpu, Some(state));
                }
                SchedEvent::IdleExit { cpu, exit_ns } => {
                    self.exits_at_start.retain(|e| e.1 != cpu);
                    if now.saturating_add(exit_ns) >= self.window.0 {
                        self.exits_at_start.push((now, cpu, exit_ns));
                    } else {
                        set_at(&mut self.idle_at_start, cpu, None);
                    }
                }
                SchedEvent::CpuFrequency { cpu, freq_khz } => {
                    set_at(&mut self.freq_at_start, cpu, Some(freq_khz));
                }
                _ => {}
            }
        }
    }

    /// Record the state the kernel booted into (`events`, at time 0: each CPU's
    /// frequency and idle state, which it reached before the log existed), as if
    /// observed then.
    pub fn boot(&mut self, events: &[SchedEvent]) {
        for e in events {
            self.observe(0, e);
        }
    }

    /// The events as the kernel's tracepoints fire them, in time order, for the
    /// trace writers (ftrace text, trace.dat, Perfetto):
    ///
    /// * a window opening after 0 starts with the state then: `cpu_frequency` for
    ///   each CPU with a known frequency, then `cpu_idle` for each CPU inside an
    ///   idle state (a window from 0 has the boot state as events at 0);
    /// * a `cpu_idle` exit fires when the state's `enter()` returns, after its exit
    ///   latency ([`SchedEvent::IdleExit`]), before anything else at that time; one
    ///   after the window's end or the run's is not recorded. A CPU the model sends
    ///   back into an idle state (or switches) sooner has its exit then, as
    ///   the idle residency counts it ([`Collector`]: `close_idle`).
    pub fn tracepoints(&self) -> Vec<(SimTime, SchedEvent)> {
        let start = self.window.0;
        let last = self.end.map_or(self.window.1, |e| e.min(self.window.1));
        let mut out = Vec::with_capacity(self.events.len() + 2 * self.freq_at_start.len());
        if start > 0 {
            let n = self.freq_at_start.len().max(self.idle_at_start.len());
            for cpu in 0..n {
                if let Some(&Some(freq_khz)) = self.freq_at_start.get(cpu) {
                    out.push((start, SchedEvent::CpuFrequency { cpu, freq_khz }));
                }
            }
            for cpu in 0..n {
                if let Some(&Some(state)) = self.idle_at_start.get(cpu) {
                    out.push((start, SchedEvent::IdleEnter { cpu, state }));
                }
            }
        }
        // Exits still in their latency (at most one per CPU), kept in the order
        // they fire (ties in emission order).
        let mut pending: Vec<(SimTime, usize, u64)> = Vec::new();
        let add = |pending: &mut Vec<(SimTime, usize, u64)>, at: SimTime, cpu, lat| {
            let i = pending.partition_point(|p| p.0 <= at);
            pending.insert(i, (at, cpu, lat));
        };
        for &(t, cpu, lat) in &self.exits_at_start {
            add(&mut pending, t + lat, cpu, lat);
        }
        let exit = |cpu, exit_ns| SchedEvent::IdleExit { cpu, exit_ns };
        // Fire the pending exits due by `t` (or, for `cpu`, any: a CPU that enters
        // an idle state or switches has left the previous one), earliest first.
        let fire = |pending: &mut Vec<(SimTime, usize, u64)>, out: &mut Vec<_>, t, cpu| {
            pending.retain(|&(at, c, lat)| {
                let due = at <= t || Some(c) == cpu;
                if due {
                    out.push((at.min(t), exit(c, lat)));
                }
                !due
            });
        };
        for &(t, e) in &self.events {
            let on = match e {
                SchedEvent::IdleEnter { cpu, .. } | SchedEvent::Switch { cpu, .. } => Some(cpu),
                _ => None,
            };
            if !pending.is_empty() {
                fire(&mut pending, &mut out, t, on);
            }
            match e {
                SchedEvent::IdleExit { cpu, exit_ns } if exit_ns > 0 => {
                    add(&mut pending, t.saturating_add(exit_ns), cpu, exit_ns);
                }
                _ => out.push((t, e)),
            }
        }
        for (at, cpu, lat) in pending {
            if at <= last {
                out.push((at, exit(cpu, lat)));
            }
        }
        out
    }
}

impl Observer<SchedEvent> for Observers {
    #[inline]
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        self.collector.observe(now, ev);
        if let Some(t) = &mut self.trace {
            t.observe(now, ev);
        }
        if let Some(l) = &mut self.log {
            l.observe(now, ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::PrevState;

    #[test]
    fn wakeup_latency_and_runqueue_wait_from_events() {
        let mut c = Collector::new(2, &[1, 1]);
        c.observe(
            100,
            &SchedEvent::Waking {
                pid: 5,
                waker_cpu: 0,
                target_cpu: 1,
            },
        );
        c.observe(
            150,
            &SchedEvent::Wakeup {
                pid: 5,
                cpu: 1,
                new: false,
                from_cpu: 0,
            },
        );
        c.observe(
            400,
            &SchedEvent::Switch {
                cpu: 1,
                prev: None,
                prev_state: PrevState::Preempted,
                next: Some(5),
            },
        );
        assert_eq!(c.wakeup_latency.count(), 1);
        assert!((c.wakeup_latency.mean() - 300.0).abs() < 1e-9);
        assert_eq!(c.task_rq_wait(5), 250);
        // Preempted at 1000, back at 1600: another 600 of runqueue wait, no wakeup.
        c.observe(
            1000,
            &SchedEvent::Switch {
                cpu: 1,
                prev: Some(5),
                prev_state: PrevState::Runnable,
                next: Some(6),
            },
        );
        c.observe(
            1600,
            &SchedEvent::Switch {
                cpu: 1,
                prev: Some(6),
                prev_state: PrevState::Sleeping,
                next: Some(5),
            },
        );
        assert_eq!(c.task_rq_wait(5), 850);
        assert_eq!(c.wakeup_latency.count(), 1);
        c.observe(
            2000,
            &SchedEvent::Switch {
                cpu: 1,
                prev: Some(5),
                prev_state: PrevState::Sleeping,
                next: None,
            },
        );
        c.finish(3000);
        assert_eq!(c.busy_ns[1], 1600);
        assert_eq!(c.busy_ns[0], 0);
    }

    #[test]
    fn function_counters_mean_and_stddev() {
        let mut c = Collector::new(1, &[1]);
        for (p, ns) in [(2, 20), (4, 40), (6, 60)] {
            c.observe(
                0,
                &SchedEvent::FuncCall {
                    func: Func::SelectIdleCpu,
                    cpu: 0,
                    probed: p,
                    cost_ns: ns,
                    skipped: 0,
                },
            );
        }
        let f = &c.functions[Func::SelectIdleCpu as usize];
        assert_eq!((f.calls, f.cpus_probed, f.cost_ns), (3, 12, 120));
        let (m, sd) = f.probed_mean_std();
        assert!((m - 4.0).abs() < 1e-12);
        // population stddev of 2, 4, 6 = sqrt(8/3)
        assert!((sd - (8.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!(f.cost_mean_std().0, 40.0);
    }

    /// Frequency residency per domain: the policy starts at its top OPP; each
    /// `cpu_frequency` of the policy's CPUs (one per CPU, at once) moves it once; an
    /// unknown frequency or a repeat changes nothing.
    #[test]
    fn freq_residency_follows_the_policy() {
        let mut c = Collector::new(3, &[0, 0, 0])
            .with_freq_domains(&[vec![450, 800, 1100], vec![500]], vec![0, 0, 1]);
        let f = |cpu, freq_khz| SchedEvent::CpuFrequency { cpu, freq_khz };
        c.observe(100, &f(0, 450));
        c.observe(100, &f(1, 450));
        c.observe(250, &f(1, 800));
        c.observe(250, &f(0, 800));
        c.observe(300, &f(0, 800));
        c.observe(400, &f(2, 999));
        c.finish(1000);
        assert_eq!(
            c.freq_residency[0],
            vec![(450, 150), (800, 750), (1100, 100)]
        );
        assert_eq!(c.freq_residency[1], vec![(500, 1000)]);
    }

    #[test]
    fn idle_residency_accumulates_per_state() {
        let mut c = Collector::new(1, &[3]);
        c.observe(10, &SchedEvent::IdleEnter { cpu: 0, state: 2 });
        // The interrupt at 110, awake 40 later: cpuidle counts the exit latency.
        c.observe(
            110,
            &SchedEvent::IdleExit {
                cpu: 0,
                exit_ns: 40,
            },
        );
        c.observe(200, &SchedEvent::IdleEnter { cpu: 0, state: 0 });
        c.finish(260);
        assert_eq!(c.idle_residency[0], vec![60, 0, 140]);
    }

    fn exit(cpu: usize, exit_ns: u64) -> SchedEvent {
        SchedEvent::IdleExit { cpu, exit_ns }
    }

    #[test]
    fn tracepoints_fire_idle_exits_after_their_latency() {
        let mut log = EventLog::new((0, u64::MAX));
        log.boot(&[
            SchedEvent::CpuFrequency {
                cpu: 0,
                freq_khz: 450_000,
            },
            SchedEvent::IdleEnter { cpu: 1, state: 2 },
        ]);
        let switch = SchedEvent::Switch {
            cpu: 1,
            prev: None,
            prev_state: PrevState::Runnable,
            next: Some(3),
        };
        log.observe(100, &exit(1, 50));
        log.observe(120, &exit(0, 0));
        // Awake at 150: the exit fires first, then what the CPU does then.
        log.observe(150, &switch);
        // A CPU the model sends back into a state before its latency has passed
        // has left the previous one then.
        log.observe(160, &exit(0, 20));
        log.observe(170, &SchedEvent::IdleEnter { cpu: 0, state: 1 });
        // An exit whose latency outlasts the run is not recorded.
        log.observe(190, &exit(0, 30));
        log.end = Some(200);
        let tp = log.tracepoints();
        assert_eq!(
            tp,
            vec![
                (
                    0,
                    SchedEvent::CpuFrequency {
                        cpu: 0,
                        freq_khz: 450_000
                    }
                ),
                (0, SchedEvent::IdleEnter { cpu: 1, state: 2 }),
                (120, exit(0, 0)),
                (150, exit(1, 50)),
                (150, switch),
                (170, exit(0, 20)),
                (170, SchedEvent::IdleEnter { cpu: 0, state: 1 }),
            ]
        );
    }

    #[test]
    fn a_window_opens_with_the_state_then() {
        let mut log = EventLog::new((1000, 2000));
        log.boot(&[
            SchedEvent::CpuFrequency {
                cpu: 0,
                freq_khz: 450_000,
            },
            SchedEvent::CpuFrequency {
                cpu: 1,
                freq_khz: 450_000,
            },
            SchedEvent::IdleEnter { cpu: 0, state: 1 },
            SchedEvent::IdleEnter { cpu: 1, state: 1 },
        ]);
        log.observe(
            300,
            &SchedEvent::CpuFrequency {
                cpu: 1,
                freq_khz: 800_000,
            },
        );
        log.observe(400, &exit(0, 10));
        // CPU 2 is woken before the window and its exit fires inside it.
        log.observe(500, &SchedEvent::IdleEnter { cpu: 2, state: 2 });
        log.observe(900, &exit(2, 300));
        log.observe(1500, &exit(1, 10));
        let tp = log.tracepoints();
        assert_eq!(
            tp,
            vec![
                (
                    1000,
                    SchedEvent::CpuFrequency {
                        cpu: 0,
                        freq_khz: 450_000
                    }
                ),
                (
                    1000,
                    SchedEvent::CpuFrequency {
                        cpu: 1,
                        freq_khz: 800_000
                    }
                ),
                // CPU 0 left its state before the window; CPU 1 is still in it,
                // and so is CPU 2 until its exit latency has passed.
                (1000, SchedEvent::IdleEnter { cpu: 1, state: 1 }),
                (1000, SchedEvent::IdleEnter { cpu: 2, state: 2 }),
                (1200, exit(2, 300)),
                (1510, exit(1, 10)),
            ]
        );
    }
}
