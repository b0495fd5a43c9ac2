//! Task placement at wakeup, fork and exec: `select_task_rq_fair` and its helpers
//! (kernel/sched/fair.c, v5.6).
//!
//! **The concept.** When a task wakes up (or is forked or execs), the waker's CPU
//! (`this_cpu`, where the code runs) picks the CPU the task will be queued on. The
//! kind of placement selects a domain flag, `sd_flag`: SD_BALANCE_WAKE, _FORK or
//! _EXEC. For a wakeup the waker first counts its *wakee flips* (`record_wakee`) and
//! decides whether it may pull the wakee towards itself (`want_affine` =
//! not `wake_wide`, not `wake_cap`, and `this_cpu` allowed). Then it walks its own
//! domains bottom-up:
//!
//! | domain `tmp` | action |
//! |---|---|
//! | lacks SD_LOAD_BALANCE | stop |
//! | want_affine, SD_WAKE_AFFINE, spans prev | `new = wake_affine(..)` (unless this == prev); no slow path; stop |
//! | has `sd_flag` | remember it as the slow-path domain `sd` |
//! | else, not want_affine | stop |
//!
//! With a remembered `sd` the *slow path* runs (`find_idlest_cpu`, fair/idlest.rs):
//! forks and execs on every machine, wakeups only on v5.6 asymmetric systems whose
//! low levels carry SD_BALANCE_WAKE. Otherwise a wakeup takes the *fast path*,
//! `select_idle_sibling(p, prev, new)` (fair/idle.rs), and, when want_affine, the
//! waker's own `recent_used_cpu` becomes `this_cpu`.
//!
//! **wake_wide**: with `f = sd_llc_size(this_cpu)`, `master = max(flips)`,
//! `slave = min(flips)` of waker and wakee: wide iff `slave >= f && master >= slave × f`.
//! Flips halve at most once per call, once more than `HZ` jiffies passed since the
//! last decay.
//!
//! **wake_affine** = `wake_affine_idle` (WA_IDLE: an idle waker CPU sharing the cache
//! with prev takes prev if prev is idle too, else itself; a sync waker alone on its
//! CPU takes itself), then `wake_affine_weight` (WA_WEIGHT), signed:
//!
//! ```text
//! this_eff = (cpu_load(this) [- task_h_load(current) if sync] + task_h_load(p)) × 100 × capacity_of(prev)
//! prev_eff = (cpu_load(prev) - task_h_load(p)) × (100 + (imbalance_pct - 100)/2) × capacity_of(this) [+1 if sync]
//! this if this_eff < prev_eff      (the ×100 factors only with WA_BIAS)
//! ```
//!
//! **wake_cap** (v5.6; gone with `SELECT_IDLE_CAPACITY`, as in v5.7): on asymmetric systems, when the smaller of the two CPUs'
//! `capacity_orig` is more than 1/8 below the root domain's maximum and the wakee's
//! estimated utilization does not fit it (1280/1024 margin), no affine wakeup.
//!
//! **Cost model.** Every read of a CPU's state during the search is a *probe*,
//! charged from the machine's cost table by its relation to the waker's CPU
//! (`probe_smt` for the waker's own CPU or an SMT sibling, `probe_llc` within the
//! waker's LLC, `probe_remote` beyond). The whole search's cost is charged as kernel
//! work on the waker's CPU at the end of `select_task_rq_fair`. Each instrumented
//! function reports one `FuncCall` with *inclusive* counts (its own probes plus its
//! callees'), so `select_task_rq_fair`'s row is the total of the placement.
//! Each decision reports exactly one `Placement` event with its reason. For tasks the
//! scenario starts, the forking "waker" is the `SIM_launcher_cpu0` (core.rs): the
//! fork balance's cost lands on whatever runs on CPU 0 (nothing when it is idle, as
//! for any work charged to an idle CPU).
//!
//! **Gaps.** The idle task of each CPU is one shared simulator task, so wakeups issued
//! from an idle CPU (timer interrupts) record no wakee flips for the waker (the
//! kernel counts them on that CPU's swapper task); `PF_EXITING` is `Task::exiting`,
//! set when a task starts exiting, so its sync wakeups are not sync here;
//! `task_h_load` is computed from the current root
//! `cfs_rq` load rather than the value cached once per jiffy; uclamp is not modelled
//! (`uclamp_task_util` = `task_util_est`). EAS (`find_energy_efficient_cpu`,
//! fair/eas.rs) runs first for `WF_TTWU` wakeups when perf domains exist.

use crate::engine::{EventQueue, Observer};
use crate::sched::core::Kernel;
use crate::sched::fair::group::fits_capacity;
use crate::sched::features::SchedFeat;
use crate::sched::pelt;
use crate::sched::topology::{
    SD_BALANCE_EXEC, SD_BALANCE_FORK, SD_BALANCE_WAKE, SD_LOAD_BALANCE, SD_WAKE_AFFINE,
};
use crate::sched::{wake_kind_of, Event, Func, Pid, SchedEvent, WakeKind, WF_SYNC, WF_TTWU};

/// CPUs probed by one call of a search function and their modelled cost (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probes {
    pub probed: u32,
    pub cost_ns: u64,
    /// CPUs left out of a scan because an earlier scan of the same wakeup saw them
    /// busy (`IDLE_CPU_MASK`).
    pub skipped: u32,
}

impl Probes {
    #[inline]
    pub fn add(&mut self, o: Probes) {
        self.probed += o.probed;
        self.cost_ns += o.cost_ns;
        self.skipped += o.skipped;
    }
}

/// Placement reasons reported in `SchedEvent::Placement`.
pub mod reason {
    pub const TARGET_IDLE: &str = "target_idle";
    pub const PREV_IDLE: &str = "prev_idle";
    pub const RECENT_USED: &str = "recent_used";
    pub const IDLE_CORE: &str = "idle_core";
    pub const IDLE_CPU: &str = "idle_cpu";
    pub const IDLE_SMT: &str = "idle_smt";
    /// Seed 003: an idle CPU found in the core `smt_balance` chose.
    pub const SMT_BALANCE: &str = "smt_balance";
    /// v5.7 (`SELECT_IDLE_CAPACITY`): an idle CPU found by `select_idle_capacity`.
    pub const IDLE_CAPACITY: &str = "idle_capacity";
    /// No search ran or none found anything: the initial target is kept.
    pub const AFFINE_FALLBACK: &str = "affine_fallback";
    pub const SLOW_PATH: &str = "slow_path";
    /// v6.12 DELAY_DEQUEUE: a delayed task woken where it is queued (`ttwu_runnable`):
    /// no `select_task_rq`, no search.
    pub const TTWU_RUNNABLE: &str = "ttwu_runnable";
    pub const SINGLE_CPU: &str = "single_cpu";
    /// Chosen by `find_energy_efficient_cpu` (fair/eas.rs).
    pub const EAS: &str = "eas";
}

/// What the domain walk of `select_task_rq_fair` found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainWalk {
    /// The slow-path domain (`find_idlest_cpu` from here), if any.
    pub sd: Option<usize>,
    /// The lowest SD_WAKE_AFFINE domain spanning prev (when `want_affine`).
    pub affine: Option<usize>,
    /// Domains examined (a cached shortcut pointer counts as one), for the cost.
    pub visited: u32,
}

/// The `sd_flag` of a placement kind.
pub(crate) fn sd_flag_of(kind: WakeKind) -> u32 {
    match kind {
        WakeKind::Wakeup => SD_BALANCE_WAKE,
        WakeKind::Fork => SD_BALANCE_FORK,
        WakeKind::Exec => SD_BALANCE_EXEC,
        // Load balancing moves tasks itself; it never asks select_task_rq_fair.
        WakeKind::Balance => 0,
    }
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// Record one probe of `cpu`'s state by a search running on `this_cpu`.
    #[inline(always)]
    pub(crate) fn probe(&self, pr: &mut Probes, this_cpu: usize, cpu: usize) {
        pr.probed += 1;
        pr.cost_ns += self.probe_cost(this_cpu, cpu);
        if self.log_probes {
            self.log_probe(this_cpu, cpu);
        }
    }

    /// Keep one probe for the probe log (`--probes`), out of the probe's own path.
    #[cold]
    #[inline(never)]
    fn log_probe(&self, this_cpu: usize, cpu: usize) {
        self.probe_buf.borrow_mut().push((this_cpu, cpu));
    }

    /// A `FuncCall` event for one call of a placement function (after its logged
    /// probes, when probes are logged). Inlined at every call: up to five run per
    /// wakeup, and the probe log is out of line.
    #[inline(always)]
    pub(crate) fn emit_func(&mut self, func: Func, cpu: usize, pr: Probes) {
        if self.shadowing {
            return;
        }
        if self.log_probes {
            self.emit_probes();
        }
        self.emit(SchedEvent::FuncCall {
            func,
            cpu,
            probed: pr.probed,
            cost_ns: pr.cost_ns,
            skipped: pr.skipped,
        });
    }

    /// The logged probes of the call being reported, in order (`--probes`).
    #[cold]
    #[inline(never)]
    fn emit_probes(&mut self) {
        let buf = std::mem::take(&mut *self.probe_buf.borrow_mut());
        for (c, target) in buf {
            let ev = SchedEvent::Probe {
                cpu: c,
                target,
                idle: self.idle_or_sched_idle(target),
                nr_running: self.rqs[target].nr_running,
            };
            self.emit(ev);
        }
    }

    /// `cpu_load(rq)` (v5.6): the root cfs_rq's `load_avg`, blocked load included.
    #[inline]
    pub(crate) fn cpu_load(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cfs.avg.load_avg
    }

    /// `capacity_of(cpu)`: the CPU's capacity left to CFS.
    #[inline]
    pub fn capacity_of(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cpu_capacity
    }

    /// `task_h_load(p)` for a flat hierarchy: the task's `load_avg` scaled by the
    /// root cfs_rq's `h_load` (= its `load_avg`) over `load_avg + 1`, as
    /// kernel/sched/fair.c `task_h_load`, v5.6 computes it. Deviation: `h_load` is read
    /// now, not cached once per jiffy. The idle task (`None`) has no load.
    pub fn task_h_load(&self, pid: Option<Pid>) -> u64 {
        let Some(pid) = pid else { return 0 };
        let t = &self.tasks[pid as usize];
        let cfs_load = self.rqs[t.cpu].cfs.avg.load_avg;
        t.se.avg.load_avg * cfs_load / (cfs_load + 1)
    }

    /// `sync_entity_load_avg`: age a sleeping task's averages to its cfs_rq's last
    /// update (kernel/sched/fair.c, v5.6).
    pub(crate) fn sync_entity_load_avg(&mut self, pid: Pid) {
        let cpu = self.tasks[pid as usize].cpu;
        let last = self.rqs[cpu].cfs.avg.last_update_time;
        let se = &mut self.tasks[pid as usize].se;
        if se.avg.last_update_time == 0 || se.on_rq {
            return;
        }
        let w = se.load.weight;
        if pelt::update_blocked_se(last, &mut se.avg, w, w) {
            self.tp_pelt_se(cpu, pid);
        }
    }

    /// `task_util_est(p)` as `uclamp_task_util` sees it without uclamp.
    pub(crate) fn task_util_est_of(&self, pid: Pid) -> u64 {
        let sa = &self.tasks[pid as usize].se.avg;
        if self.feat.has(SchedFeat::UTIL_EST) {
            pelt::task_util_est(sa)
        } else {
            sa.util_avg
        }
    }

    /// `select_task_rq_fair(p, prev_cpu, wake_flags)` with seed 002's structure, run
    /// on `this_cpu` (the waker's or parent's CPU): the kind of placement comes from
    /// `WF_TTWU` / `WF_FORK` / `WF_EXEC`; the domain walk is
    /// [`Kernel::wakeup_domain_walk`] (v5.6's combined walk with `LEGACY_SD_FLAG`).
    /// Charges the modelled cost of the search (probes and domain visits) to
    /// `this_cpu` and reports one `Placement` and one `FuncCall` for it. Deviations:
    /// see the module notes (no per-CPU swapper flips).
    pub fn select_task_rq_fair(
        &mut self,
        pid: Pid,
        prev_cpu: usize,
        wake_flags: u32,
        this_cpu: usize,
        q: &mut EventQueue<Event>,
    ) -> usize {
        let kind = wake_kind_of(wake_flags);
        let ttwu = wake_flags & WF_TTWU != 0;
        let cpu = this_cpu;
        let mut new_cpu = prev_cpu;
        let mut want_affine = false;
        let current = self.rqs[cpu].curr;
        // A sync hint from an exiting waker (PF_EXITING: a child waking its parent
        // in wait()) is ignored.
        let sync =
            wake_flags & WF_SYNC != 0 && !current.is_some_and(|c| self.tasks[c as usize].exiting);
        let mut pr = Probes::default();

        if ttwu {
            self.record_wakee(pid, current);
            if let Some(c) = self.find_energy_efficient_cpu(pid, prev_cpu, cpu, &mut pr) {
                self.finish_placement(pid, kind, prev_cpu, c, reason::EAS, cpu, pr, q);
                return c;
            }
            // v5.7 removed wake_cap along with adding select_idle_capacity.
            want_affine = !self.wake_wide(pid, current, cpu)
                && (self.feat.has(SchedFeat::SELECT_IDLE_CAPACITY)
                    || !self.wake_cap(pid, cpu, prev_cpu))
                && self.cpus_allowed(pid).test(cpu);
        }

        let walk = self.wakeup_domain_walk(cpu, prev_cpu, kind, want_affine);
        pr.cost_ns += walk.visited as u64 * self.m.cost.domain_visit;
        if let Some(tmp) = walk.affine {
            if cpu != prev_cpu {
                new_cpu = self.wake_affine(tmp, pid, cpu, prev_cpu, sync, current, &mut pr);
            }
        }

        let why;
        if let Some(sd) = walk.sd {
            let (c, p2) = self.find_idlest_cpu(sd, pid, cpu, prev_cpu, sd_flag_of(kind));
            pr.add(p2);
            new_cpu = c;
            why = reason::SLOW_PATH;
        } else if ttwu {
            let (c, r, p2) = self.select_idle_sibling(pid, prev_cpu, new_cpu, cpu);
            pr.add(p2);
            new_cpu = c;
            why = r;
            if want_affine && self.feat.has(SchedFeat::RECENT_USED_CPU) {
                if let Some(cur) = current {
                    self.tasks[cur as usize].recent_used_cpu = cpu;
                }
            }
        } else {
            why = reason::AFFINE_FALLBACK;
        }
        self.finish_placement(pid, kind, prev_cpu, new_cpu, why, cpu, pr, q);
        new_cpu
    }

    /// The domain walk of `select_task_rq_fair` on `cpu` (no side effects).
    ///
    /// Seed 002 (patches 8–9, the default): the slow-path domain is the cached
    /// `sd_balance_{wake,fork,exec}[cpu]` (the highest *contiguous* domain with the
    /// kind's flag; one pointer load); when `want_affine`, the walk goes up only to
    /// the lowest SD_WAKE_AFFINE domain spanning `prev_cpu`, which, if found, wins
    /// over the slow path.
    ///
    /// `LEGACY_SD_FLAG` (v5.6): one walk bottom-up that stops at a domain without
    /// SD_LOAD_BALANCE, takes the affine domain as above, remembers the *last*
    /// domain with `sd_flag`, and (not `want_affine`) stops at the first domain
    /// without it. The two agree except when `want_affine`, no affine domain spans
    /// `prev_cpu`, and the flagged domains are not contiguous from the bottom: v5.6
    /// then keeps the last flagged domain across the gap, seed 002 the top of the
    /// bottom run (spec `kernel-placement.md` §11(c)).
    pub fn wakeup_domain_walk(
        &self,
        cpu: usize,
        prev_cpu: usize,
        kind: WakeKind,
        want_affine: bool,
    ) -> DomainWalk {
        let spans_prev_affine = |tmp: usize| {
            let d = &self.topo.domains[tmp];
            d.has(SD_WAKE_AFFINE) && d.span.test(prev_cpu)
        };
        let mut w = DomainWalk::default();
        if self.feat.has(SchedFeat::LEGACY_SD_FLAG) {
            let sd_flag = sd_flag_of(kind);
            for tmp in self.topo.domains_of(cpu) {
                w.visited += 1;
                let d = &self.topo.domains[tmp];
                if !d.has(SD_LOAD_BALANCE) {
                    break;
                }
                if want_affine && spans_prev_affine(tmp) {
                    w.affine = Some(tmp);
                    w.sd = None;
                    return w;
                }
                if d.has(sd_flag) {
                    w.sd = Some(tmp);
                } else if !want_affine {
                    break;
                }
            }
            return w;
        }
        w.sd = match kind {
            WakeKind::Wakeup => self.topo.sd_balance_wake[cpu],
            WakeKind::Fork => self.topo.sd_balance_fork[cpu],
            WakeKind::Exec | WakeKind::Balance => self.topo.sd_balance_exec[cpu],
        };
        w.visited = 1;
        if want_affine {
            for tmp in self.topo.domains_of(cpu) {
                w.visited += 1;
                if spans_prev_affine(tmp) {
                    w.affine = Some(tmp);
                    w.sd = None;
                    break;
                }
            }
        }
        w
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_placement(
        &mut self,
        pid: Pid,
        kind: WakeKind,
        prev_cpu: usize,
        cpu: usize,
        reason: &'static str,
        this_cpu: usize,
        pr: Probes,
        q: &mut EventQueue<Event>,
    ) {
        self.emit_func(Func::SelectTaskRqFair, this_cpu, pr);
        self.emit(SchedEvent::Placement {
            pid,
            kind,
            prev_cpu,
            cpu,
            reason,
        });
        self.charge(this_cpu, pr.cost_ns, q);
    }

    /// `record_wakee(p)` on the waker `current` (kernel/sched/fair.c, v5.6): halve its
    /// flips once more than HZ jiffies passed since the last decay, and count a flip
    /// when the wakee differs from the last one. Nothing when the waker is the idle
    /// task (see the module notes).
    pub fn record_wakee(&mut self, pid: Pid, current: Option<Pid>) {
        let Some(cur) = current else { return };
        let now = self.jiffies();
        let hz = self.tun.hz;
        let w = &mut self.tasks[cur as usize];
        if now > w.wakee_flip_decay_ts + hz {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(pid) {
            w.last_wakee = Some(pid);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide(p)` (kernel/sched/fair.c, v5.6): true when the waker/wakee flip
    /// counts show a 1:N pattern wider than the waker's LLC.
    pub fn wake_wide(&self, pid: Pid, current: Option<Pid>, this_cpu: usize) -> bool {
        let a = current.map_or(0, |c| self.tasks[c as usize].wakee_flips);
        let b = self.tasks[pid as usize].wakee_flips;
        let (master, slave) = if a >= b { (a, b) } else { (b, a) };
        wake_wide_flips(master, slave, self.topo.sd_llc_size[this_cpu])
    }

    /// `wake_cap(p, cpu, prev_cpu)` (kernel/sched/fair.c, v5.6 only).
    pub fn wake_cap(&mut self, pid: Pid, cpu: usize, prev_cpu: usize) -> bool {
        if !self.topo.asym_cpucapacity {
            return false;
        }
        let min_cap = self.rqs[prev_cpu]
            .cpu_capacity_orig
            .min(self.rqs[cpu].cpu_capacity_orig) as i64;
        let max_cap = self.topo.max_cpu_capacity as i64;
        if max_cap - min_cap < max_cap >> 3 {
            return false;
        }
        self.sync_entity_load_avg(pid);
        !fits_capacity(self.task_util_est_of(pid), min_cap as u64)
    }

    /// `wake_affine(sd, p, this_cpu, prev_cpu, sync)` (kernel/sched/fair.c, v5.6).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wake_affine(
        &self,
        sd: usize,
        pid: Pid,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
        current: Option<Pid>,
        pr: &mut Probes,
    ) -> usize {
        let mut target = None;
        if self.feat.has(SchedFeat::WA_IDLE) {
            target = self.wake_affine_idle(this_cpu, prev_cpu, sync, pr);
        }
        if self.feat.has(SchedFeat::WA_WEIGHT) && target.is_none() {
            target = self.wake_affine_weight(sd, pid, this_cpu, prev_cpu, sync, current, pr);
        }
        target.unwrap_or(prev_cpu)
    }

    /// `wake_affine_idle(this_cpu, prev_cpu, sync)` (kernel/sched/fair.c, v5.6).
    pub fn wake_affine_idle(
        &self,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
        pr: &mut Probes,
    ) -> Option<usize> {
        self.probe(pr, this_cpu, this_cpu);
        if self.available_idle_cpu(this_cpu) && self.topo.cpus_share_cache(this_cpu, prev_cpu) {
            self.probe(pr, this_cpu, prev_cpu);
            return Some(if self.available_idle_cpu(prev_cpu) {
                prev_cpu
            } else {
                this_cpu
            });
        }
        if sync && self.rqs[this_cpu].nr_running == 1 {
            return Some(this_cpu);
        }
        None
    }

    /// `wake_affine_weight(sd, p, this_cpu, prev_cpu, sync)` (kernel/sched/fair.c,
    /// v5.6), signed arithmetic as in the kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn wake_affine_weight(
        &self,
        sd: usize,
        pid: Pid,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
        current: Option<Pid>,
        pr: &mut Probes,
    ) -> Option<usize> {
        self.probe(pr, this_cpu, this_cpu);
        self.probe(pr, this_cpu, prev_cpu);
        // v4.15 reads `target_load`/`source_load` at `wake_idx` 0: the runnable load,
        // sleepers excluded; v5.5 moved the wakeup path to `cpu_load`.
        let v4_15 = self.feat.has(SchedFeat::WA_WEIGHT_V4_15);
        let load = |cpu: usize| {
            if v4_15 {
                self.rqs[cpu].cfs.avg.runnable_load_avg
            } else {
                self.cpu_load(cpu)
            }
        };
        let r = wake_affine_weight_calc(&WakeAffineWeightIn {
            this_load: load(this_cpu),
            prev_load: load(prev_cpu),
            current_load: sync.then(|| self.task_h_load(current)),
            task_load: self.task_h_load(Some(pid)),
            this_capacity: self.capacity_of(this_cpu),
            prev_capacity: self.capacity_of(prev_cpu),
            imbalance_pct: self.topo.domains[sd].imbalance_pct,
            wa_bias: self.feat.has(SchedFeat::WA_BIAS),
            tie_affine: v4_15,
        });
        r.then_some(this_cpu)
    }
}

/// `wake_wide` on raw numbers: `master >= slave`, `factor` = the waker's
/// `sd_llc_size`.
pub fn wake_wide_flips(master: u32, slave: u32, factor: u32) -> bool {
    !(slave < factor || (master as u64) < slave as u64 * factor as u64)
}

/// Inputs of [`wake_affine_weight_calc`].
#[derive(Clone, Copy, Debug)]
pub struct WakeAffineWeightIn {
    /// `cpu_load(this)`.
    pub this_load: u64,
    /// `cpu_load(prev)`.
    pub prev_load: u64,
    /// `Some(task_h_load(current))` for a sync wakeup.
    pub current_load: Option<u64>,
    /// `task_h_load(p)`.
    pub task_load: u64,
    pub this_capacity: u64,
    pub prev_capacity: u64,
    pub imbalance_pct: u32,
    pub wa_bias: bool,
    /// v4.15's rule: affine when the waker side is `<=` the prev side, no +1 on
    /// prev for sync (v4.17 made a tie stay on prev: "Do not migrate on
    /// wake_affine_weight() if weights are equal").
    pub tie_affine: bool,
}

/// The decision of `wake_affine_weight`: true = pull to this CPU. Signed 64-bit as
/// the kernel's `s64` effective loads.
pub fn wake_affine_weight_calc(i: &WakeAffineWeightIn) -> bool {
    let mut this_eff = i.this_load as i64;
    if let Some(c) = i.current_load {
        if c > i.this_load {
            return true;
        }
        this_eff -= c as i64;
    }
    let task_load = i.task_load as i64;
    this_eff += task_load;
    if i.wa_bias {
        this_eff *= 100;
    }
    this_eff *= i.prev_capacity as i64;
    let mut prev_eff = i.prev_load as i64 - task_load;
    if i.wa_bias {
        prev_eff *= 100 + (i.imbalance_pct as i64 - 100) / 2;
    }
    prev_eff *= i.this_capacity as i64;
    if i.tie_affine {
        return this_eff <= prev_eff;
    }
    if i.current_load.is_some() {
        prev_eff += 1;
    }
    this_eff < prev_eff
}
