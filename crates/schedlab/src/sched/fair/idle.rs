//! The wakeup fast path: `select_idle_sibling` and its three scans
//! (kernel/sched/fair.c, v5.6).
//!
//! **The concept.** Given the wakee's previous CPU and a target (prev, or the waker's
//! CPU when `wake_affine` pulled), look for an idle CPU that shares the target's
//! last-level cache, cheaply and in a fixed order; fall back to the target.
//!
//! | step | check (`idle` = `available_idle_cpu` or `sched_idle_cpu`) | reason |
//! |---|---|---|
//! | 1 | target idle | `target_idle` |
//! | 2 | prev ≠ target, shares target's LLC, prev idle | `prev_idle` |
//! | – | (per-CPU kthread stacking: v5.7+, and no kthreads are modelled) | |
//! | 3 | `p.recent_used_cpu` ∉ {prev, target}, shares the LLC, idle, allowed; then `p.recent_used_cpu = prev` (v4.16; `NO_RECENT_USED_CPU` is the kernel before it) | `recent_used` |
//! | 4 | `select_idle_core`: with the LLC's `has_idle_cores` hint, the first core (wrapping from target, over LLC ∩ allowed) all of whose SMT siblings are `available_idle` (siblings outside the affinity count too); a fruitless full scan clears the hint | `idle_core` |
//! | 5 | `select_idle_cpu`: the first idle CPU of LLC ∩ allowed, wrapping from target, at most `nr − 1` examined | `idle_cpu` |
//! | 6 | `select_idle_smt`: an idle allowed SMT sibling of target | `idle_smt` |
//! | 7 | target | `affine_fallback` |
//!
//! With `SELECT_IDLE_CAPACITY` (v5.7) on an asymmetric-capacity system, all of
//! this is replaced by `select_idle_capacity` over `sd_asym_cpucapacity(target)`
//! (reason `idle_capacity`, else `affine_fallback` with target). v5.10
//! (`ASYM_FITS_CAPACITY`, "prefer prev cpu in asymmetric wakeup path") keeps steps
//! 1–3 in front of that scan, each CPU taken only if the task's `task_util_est` fits
//! its `capacity_of` (`asym_fits_capacity`, the 1280/1024 margin): a fitting idle
//! prev is no longer traded for the first fitting CPU of the scan.
//!
//! With `SMT_BALANCE` (seed 003) on an SMT machine, steps 4–6 are replaced by
//! `smt_balance` (fair/smt_balance.rs, reason `smt_balance`); with `IDLE_CPU_MASK`
//! (seed 000) step 5 walks only the CPUs step 4 did not find busy.
//!
//! **SIS_PROP budget** (`select_idle_cpu`), all from the *waker's* CPU:
//! `avg_idle = rq(this).avg_idle / 512`, `avg_cost = sd_llc(this).avg_scan_cost + 1`;
//! `nr = span_weight × avg_idle / avg_cost` if `span_weight × avg_idle > 4 × avg_cost`,
//! else 4. A scan that completes (found or ran out) updates
//! `avg_scan_cost += (time − avg_scan_cost) / 8` (signed, truncating); a scan that
//! exhausts its budget returns without updating.
//!
//! **Idle-core hint.** `has_idle_cores` lives in the LLC's `sched_domain_shared`. It is
//! set by `__update_idle_core` when a CPU switches to idle while all its SMT
//! siblings are `available_idle`, and cleared by a `select_idle_core` that finds
//! nothing. Both only on SMT machines (`sched_smt_present`).
//!
//! **Cost model (SIM_).** Each CPU read is a probe (see fair/wakeup.rs). The scan time
//! that feeds `avg_scan_cost` is the sum of the probe costs of the scan plus
//! [`SIM_SELECT_IDLE_CPU_OVERHEAD_NS`] for the two clock reads and the mask setup.
//!
//! **Gaps.** No per-CPU kthread check (none are modelled); no vCPU preemption
//! (`available_idle_cpu` = `idle_cpu`).

use crate::engine::Observer;
use crate::machine::CpuMask;
use crate::sched::core::Kernel;
use crate::sched::fair::group::fits_capacity;
use crate::sched::fair::wakeup::{reason, Probes};
use crate::sched::features::SchedFeat;
use crate::sched::{Func, Pid, SchedEvent};

/// `SIM_`: fixed part of a `select_idle_cpu` scan's modelled time (two `cpu_clock`
/// reads and the `cpumask_and`), ns.
pub const SIM_SELECT_IDLE_CPU_OVERHEAD_NS: u64 = 20;

/// `cpumask_next_wrap(n, mask, start, wrap)` (lib/cpumask.c, v5.6): the next CPU of
/// `mask` after `n` (`-1` for "from the beginning"), wrapping once past the end,
/// and `None` once the walk passes `start` again. Reads the *live* mask, so a loop
/// that clears bits while iterating skips them, as `for_each_cpu_wrap` does.
/// `start` must be below the highest CPU of a non-empty mask's range (a CPU number),
/// as in the kernel.
pub fn cpumask_next_wrap(n: isize, mask: &CpuMask, start: usize, wrap: bool) -> Option<usize> {
    let (mut n, mut wrap) = (n, wrap);
    loop {
        // `None` stands for nr_cpumask_bits, which is >= any start.
        let next = mask.next_from((n + 1) as usize);
        if wrap && n < start as isize && next.is_none_or(|c| c >= start) {
            return None;
        }
        match next {
            Some(c) => return Some(c),
            None => {
                wrap = true;
                n = -1;
            }
        }
    }
}

/// The asymmetric branch of `select_idle_sibling`: the CPU `select_idle_capacity`
/// found, else target.
#[inline]
fn capacity_or_target(found: Option<usize>, target: usize) -> (usize, &'static str) {
    match found {
        Some(c) => (c, reason::IDLE_CAPACITY),
        None => (target, reason::AFFINE_FALLBACK),
    }
}

/// What `[run] shadow = "FEATURE"` counts (SIM_, an instrument, not a kernel
/// mechanism): at every `select_idle_sibling` that reaches the LLC scans (target,
/// prev and the recent CPU all busy), the scans are run a second time with the
/// feature switched the other way, from the same state and without effect, and the
/// two choices compared. With `SMT_BALANCE` it answers "how often would seed 003's
/// `smt_balance` have chosen differently from v5.6's scans, here?" (issue 41).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SisShadow {
    /// `select_idle_sibling` calls.
    pub calls: u64,
    /// Calls that reached the scans (both arms scanned).
    pub reached: u64,
    /// Of those, the shadow chose the same CPU.
    pub same_cpu: u64,
    /// Of those, the shadow chose another CPU of the same core (an SMT sibling).
    pub same_core: u64,
}

impl SisShadow {
    /// Calls where the two choices differ by more than an SMT sibling.
    pub fn other_core(&self) -> u64 {
        self.reached - self.same_cpu - self.same_core
    }
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `sched_smt_present`.
    #[inline]
    fn sched_smt_present(&self) -> bool {
        self.m.has_smt()
    }

    /// `test_idle_cores(cpu, def)`: the LLC's hint, or `def` without an LLC block.
    pub fn test_idle_cores(&self, cpu: usize, def: bool) -> bool {
        match self.topo.sd_llc_shared[cpu] {
            Some(s) => self.topo.shared[s].has_idle_cores,
            None => def,
        }
    }

    /// `set_idle_cores(cpu, val)`.
    pub fn set_idle_cores(&mut self, cpu: usize, val: bool) {
        if let Some(s) = self.topo.sd_llc_shared[cpu] {
            self.topo.shared[s].has_idle_cores = val;
        }
    }

    /// `update_idle_core(rq)` → `__update_idle_core` (kernel/sched/fair.c, v5.6),
    /// called when `cpu` switches to its idle task: set the LLC's idle-core hint
    /// when every other SMT sibling is `available_idle`.
    #[doc(alias = "__update_idle_core")]
    pub fn update_idle_core(&mut self, cpu: usize) {
        if !self.sched_smt_present() || self.test_idle_cores(cpu, true) {
            return;
        }
        let idle = self.idle_mask();
        let all_idle = self.smt_siblings(cpu).all(|s| s == cpu || idle.test(s));
        if all_idle {
            self.set_idle_cores(cpu, true);
        }
    }

    /// `select_idle_sibling(p, prev, target)` (kernel/sched/fair.c, v5.6) run on
    /// `this_cpu`. Returns the CPU, the placement reason and the (inclusive) probes.
    /// Deviation: the v5.7 per-CPU-kthread stacking check is absent (no kthreads).
    pub fn select_idle_sibling(
        &mut self,
        pid: Pid,
        prev: usize,
        target: usize,
        this_cpu: usize,
    ) -> (usize, &'static str, Probes) {
        let mut pr = Probes::default();
        if self.shadow.is_some() {
            self.shadow_stats.calls += 1;
        }
        let r = self.select_idle_sibling_inner(pid, prev, target, this_cpu, &mut pr);
        self.emit_func(Func::SelectIdleSibling, this_cpu, pr);
        (r.0, r.1, pr)
    }

    /// `select_idle_capacity(p, sd, target)` (kernel/sched/fair.c, v5.7): over
    /// the domain's span ∩ allowed, wrapping from `target`, the first idle (or
    /// SCHED_IDLE-only) CPU whose `capacity_of` fits the task's estimated
    /// utilization; failing that, the idle CPU of largest capacity (the first of
    /// equals); `None` when no CPU is idle. Every CPU looked at is a probe.
    pub fn select_idle_capacity(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
        pr: &mut Probes,
    ) -> Option<usize> {
        self.sync_entity_load_avg(pid);
        let util = self.task_util_est_of(pid);
        let cpus = self.topo.domains[sd].span.and(self.cpus_allowed(pid));
        let (mut best_cap, mut best) = (0u64, None);
        for cpu in cpus.iter_wrap(target) {
            self.probe(pr, this_cpu, cpu);
            if !self.idle_or_sched_idle(cpu) {
                continue;
            }
            let cap = self.capacity_of(cpu);
            if fits_capacity(util, cap) {
                return Some(cpu);
            }
            if cap > best_cap {
                best_cap = cap;
                best = Some(cpu);
            }
        }
        best
    }

    fn select_idle_sibling_inner(
        &mut self,
        pid: Pid,
        prev: usize,
        target: usize,
        this_cpu: usize,
        pr: &mut Probes,
    ) -> (usize, &'static str) {
        // v5.7: on asymmetric-capacity systems the domain of interest is
        // sd_asym_cpucapacity, scanned by capacity instead of the LLC scans (a CPU
        // below no asymmetric domain, e.g. in a symmetric cpuset island, goes on).
        let asym = self.feat.has(SchedFeat::SELECT_IDLE_CAPACITY) && self.topo.asym_cpucapacity;
        // v5.10 (ASYM_FITS_CAPACITY): target, prev and recent first, each only if the
        // task fits it (`asym_fits_capacity`), then the capacity scan.
        let fits_first = asym && self.feat.has(SchedFeat::ASYM_FITS_CAPACITY);
        if asym && !fits_first {
            if let Some(sd) = self.topo.sd_asym_cpucapacity[target] {
                return capacity_or_target(
                    self.select_idle_capacity(pid, sd, target, this_cpu, pr),
                    target,
                );
            }
        }
        let task_util = if fits_first {
            self.sync_entity_load_avg(pid);
            Some(self.task_util_est_of(pid))
        } else {
            None
        };
        let asym_fits =
            |k: &Self, cpu: usize| task_util.is_none_or(|u| fits_capacity(u, k.capacity_of(cpu)));
        self.probe(pr, this_cpu, target);
        if self.idle_or_sched_idle(target) && asym_fits(self, target) {
            return (target, reason::TARGET_IDLE);
        }
        // v6.7 (SIS_CLUSTER with the merged scan): an idle prev / recent CPU outside
        // target's cluster is only a fallback for when the scan finds nothing.
        let cluster = self.feat.has(SchedFeat::SIS_CLUSTER)
            && self.feat.has(SchedFeat::SIS_MERGED)
            && self.topo.sched_cluster_active();
        let mut fallback: Option<(usize, &'static str)> = None;
        if prev != target && self.topo.cpus_share_cache(prev, target) {
            self.probe(pr, this_cpu, prev);
            if self.idle_or_sched_idle(prev) && asym_fits(self, prev) {
                if !cluster || self.topo.cpus_share_resources(prev, target) {
                    return (prev, reason::PREV_IDLE);
                }
                fallback = Some((prev, reason::PREV_IDLE));
            }
        }
        let recent = self.tasks[pid as usize].recent_used_cpu;
        if self.feat.has(SchedFeat::RECENT_USED_CPU)
            && recent != prev
            && recent != target
            && self.topo.cpus_share_cache(recent, target)
        {
            self.probe(pr, this_cpu, recent);
            if self.idle_or_sched_idle(recent)
                && self.cpus_allowed(pid).test(recent)
                && asym_fits(self, recent)
            {
                self.tasks[pid as usize].recent_used_cpu = prev;
                if !cluster || self.topo.cpus_share_resources(recent, target) {
                    return (recent, reason::RECENT_USED);
                }
                fallback = fallback.or(Some((recent, reason::RECENT_USED)));
            }
        }
        if fits_first {
            if let Some(sd) = self.topo.sd_asym_cpucapacity[target] {
                return capacity_or_target(
                    self.select_idle_capacity(pid, sd, target, this_cpu, pr),
                    target,
                );
            }
        }
        let Some(sd) = self.topo.sd_llc[target] else {
            return (target, reason::AFFINE_FALLBACK);
        };
        let r = self.sis_scans(pid, sd, target, this_cpu, fallback, pr);
        if let Some(f) = self.shadow {
            self.shadow_scans(f, pid, sd, target, this_cpu, fallback, r.0);
        }
        r
    }

    /// The scans of `select_idle_sibling` over `sd` (target's LLC) once target,
    /// prev and the recent CPU are not taken: seed 003's `smt_balance`, v5.12's
    /// merged scan, or v5.6's three scans, as the features say; `fallback` is the
    /// merged scan's idle prev or recent CPU of another cluster.
    fn sis_scans(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
        fallback: Option<(usize, &'static str)>,
        pr: &mut Probes,
    ) -> (usize, &'static str) {
        if self.feat.has(SchedFeat::SMT_BALANCE) && self.sched_smt_present() {
            // Seed 003 replaces the three scans.
            let (c, why, p) = self.smt_balance(pid, sd, target, this_cpu);
            pr.add(p);
            return (c, why);
        }
        if self.feat.has(SchedFeat::SIS_MERGED) {
            // v5.12: one merged scan replaces the three (fair/llc_idle_scan.rs).
            let (r, p) = self.select_idle_cpu_merged(pid, sd, target, this_cpu);
            pr.add(p);
            return r.or(fallback).unwrap_or((target, reason::AFFINE_FALLBACK));
        }
        // Filled in place: returned by value with the result, the 130-byte mask was
        // copied out at every call, seed 000 or not.
        let mut seen = None;
        let (i, p) = self.select_idle_core_mask(pid, sd, target, this_cpu, &mut seen);
        pr.add(p);
        if let Some(i) = i {
            return (i, reason::IDLE_CORE);
        }
        let (i, p) = self.select_idle_cpu_in(pid, sd, target, this_cpu, seen.as_ref());
        pr.add(p);
        if let Some(i) = i {
            return (i, reason::IDLE_CPU);
        }
        let (i, p) = self.select_idle_smt(pid, target, this_cpu);
        pr.add(p);
        if let Some(i) = i {
            return (i, reason::IDLE_SMT);
        }
        (target, reason::AFFINE_FALLBACK)
    }

    /// `[run] shadow`: the scans [`Kernel::sis_scans`] would have run with `f`
    /// switched the other way, from the same state, without effect: every state
    /// they change (the waker's rotor, the idle-core hints, the LLC's
    /// `avg_scan_cost`) is restored, their calls are not reported and their cost is
    /// not charged. Counts the outcome against `chosen`, the CPU the real scans
    /// returned ([`SisShadow`]).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn shadow_scans(
        &mut self,
        f: SchedFeat,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
        fallback: Option<(usize, &'static str)>,
        chosen: usize,
    ) {
        let rotor = self.rqs[this_cpu].rotor;
        let shared = self.topo.shared.clone();
        let cost_sd = self.topo.sd_llc[this_cpu];
        let cost = cost_sd.map(|d| self.topo.domains[d].avg_scan_cost);
        let (feat, log) = (self.feat, self.log_probes);
        self.feat.set(f, !feat.has(f));
        self.log_probes = false;
        self.shadowing = true;
        let (other, _) =
            self.sis_scans(pid, sd, target, this_cpu, fallback, &mut Probes::default());
        self.shadowing = false;
        self.log_probes = log;
        self.feat = feat;
        self.rqs[this_cpu].rotor = rotor;
        self.topo.shared = shared;
        if let (Some(d), Some(c)) = (cost_sd, cost) {
            self.topo.domains[d].avg_scan_cost = c;
        }
        let sibling = other != chosen && self.smt_siblings(chosen).any(|s| s == other);
        let st = &mut self.shadow_stats;
        st.reached += 1;
        st.same_cpu += u64::from(other == chosen);
        st.same_core += u64::from(sibling);
    }

    /// `select_idle_core(p, sd, target)` (kernel/sched/fair.c, v5.6): with the
    /// idle-core hint set, the first core of `span(sd) ∩ p.allowed` (wrapping from
    /// target) whose SMT siblings are all `available_idle` — every sibling is
    /// checked, even after a busy one, and the returned CPU is the first one visited
    /// of that core. A fruitless scan clears the hint. Without the hint it returns
    /// at once (a `FuncCall` with 0 probes); without SMT the `sched_smt_present`
    /// static branch skips it and nothing is counted.
    pub fn select_idle_core(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
    ) -> (Option<usize>, Probes) {
        self.select_idle_core_mask(pid, sd, target, this_cpu, &mut None)
    }

    /// [`Kernel::select_idle_core`], also leaving in `seen`, with `IDLE_CPU_MASK`
    /// (seed 000) and after a fruitless scan, the scan's mask: `span(sd) ∩
    /// p.allowed` without every CPU it found not `available_idle`, for
    /// `select_idle_cpu` (else `None`).
    fn select_idle_core_mask(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
        seen: &mut Option<CpuMask>,
    ) -> (Option<usize>, Probes) {
        let mut pr = Probes::default();
        // Without SMT the `sched_smt_present` static branch jumps over the whole
        // function: nothing to count. Without the idle-core hint it is a call that
        // reads the hint and returns.
        if !self.sched_smt_present() {
            return (None, pr);
        }
        if !self.test_idle_cores(target, false) {
            self.emit_func(Func::SelectIdleCore, this_cpu, pr);
            return (None, pr);
        }
        let mut cpus = self.topo.domains[sd].span.and(self.cpus_allowed(pid));
        // Seed 000: the per-CPU `select_idle_mask`, which outlives the core scan.
        let keep_mask = self.feat.has(SchedFeat::IDLE_CPU_MASK);
        *seen = keep_mask.then_some(cpus);
        // `for_each_cpu_wrap` reads the live mask, from which each visited core's
        // siblings are cleared. Bits are only ever removed, so walking a snapshot in
        // the same order and skipping CPUs no longer in the live mask visits exactly
        // the CPUs `cpumask_next_wrap` would, in the same order.
        let walk = cpus;
        let mut found = None;
        for c in walk.iter_wrap(target) {
            if !cpus.test(c) {
                continue;
            }
            let mut idle = true;
            for s in self.smt_siblings(c) {
                cpus.clear(s);
                self.probe(&mut pr, this_cpu, s);
                if !self.available_idle_cpu(s) {
                    idle = false;
                    if let Some(m) = seen {
                        m.clear(s);
                    }
                }
            }
            if idle {
                found = Some(c);
                break;
            }
        }
        if found.is_none() {
            self.set_idle_cores(target, false);
        }
        self.emit_func(Func::SelectIdleCore, this_cpu, pr);
        if found.is_some() {
            *seen = None;
        }
        (found, pr)
    }

    /// `select_idle_cpu(p, sd, target)` (kernel/sched/fair.c, v5.6): a scan of
    /// `span(sd) ∩ p.allowed` from target, bounded by SIS_PROP with the *waker's*
    /// `avg_idle` and LLC `avg_scan_cost`; see the module notes. The scan time fed to
    /// the EWMA is the modelled probe cost plus [`SIM_SELECT_IDLE_CPU_OVERHEAD_NS`].
    pub fn select_idle_cpu(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
    ) -> (Option<usize>, Probes) {
        self.select_idle_cpu_in(pid, sd, target, this_cpu, None)
    }

    /// [`Kernel::select_idle_cpu`] over `seen` when the core scan left one
    /// (`IDLE_CPU_MASK`), else over `span(sd) ∩ p.allowed`. The CPUs left out are
    /// never visited, so they cost neither a probe nor a unit of the `nr` budget;
    /// they are counted as skipped.
    fn select_idle_cpu_in(
        &mut self,
        pid: Pid,
        sd: usize,
        target: usize,
        this_cpu: usize,
        seen: Option<&CpuMask>,
    ) -> (Option<usize>, Probes) {
        let mut pr = Probes::default();
        let Some(this_sd) = self.topo.sd_llc[this_cpu] else {
            self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
            return (None, pr);
        };
        let avg_idle = self.rqs[this_cpu].avg_idle / 512;
        let avg_cost = self.topo.domains[this_sd].avg_scan_cost + 1;
        if self.feat.has(SchedFeat::SIS_AVG_CPU) && avg_idle < avg_cost {
            self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
            return (None, pr);
        }
        let mut nr: i64 = i32::MAX as i64;
        if self.feat.has(SchedFeat::SIS_PROP) {
            let span_avg = self.topo.domains[sd].span_weight as u64 * avg_idle;
            nr = sis_prop_nr(span_avg, avg_cost);
        }
        // v6.0's budget on the v5.6 scan (fair/llc_idle_scan.rs).
        if self.sis_util_gives_up(target, this_cpu, pr, &mut nr) {
            return (None, pr);
        }
        // `span(sd) ∩ p.allowed` (or seed 000's mask), ANDed a word at a time as the
        // scan reaches it: a scan on a busy LLC stops within a word or two, where
        // building the 1 024-CPU mask cost more than the scan.
        let span = &self.topo.domains[sd].span;
        let allowed = self.cpus_allowed(pid);
        let (a, b) = match seen {
            Some(m) => {
                pr.skipped = (span.and(allowed).weight() - m.weight()) as u32;
                (m, m)
            }
            None => (span, allowed),
        };
        let end = self.scan_idle_cpu(a, b, target, this_cpu, nr, &mut pr);
        #[cfg(debug_assertions)]
        if !self.log_probes {
            let mut pr_ref = Probes {
                skipped: pr.skipped,
                ..Probes::default()
            };
            let end_ref = self.scan_idle_cpu_ref(&a.and(b), target, this_cpu, nr, &mut pr_ref);
            debug_assert_eq!((end, pr), (end_ref, pr_ref), "select_idle_cpu scan");
        }
        let found = match end {
            ScanEnd::Exhausted => {
                // Budget exhausted: give up without updating avg_scan_cost.
                self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
                return (None, pr);
            }
            ScanEnd::Found(c) => Some(c),
            ScanEnd::Done => None,
        };
        let time = pr.cost_ns + SIM_SELECT_IDLE_CPU_OVERHEAD_NS;
        let d = &mut self.topo.domains[this_sd];
        d.avg_scan_cost = avg_scan_cost_update(d.avg_scan_cost, time);
        self.emit_func(Func::SelectIdleCpu, this_cpu, pr);
        (found, pr)
    }

    /// `select_idle_smt(p, target)` (kernel/sched/fair.c, v5.6): an allowed SMT
    /// sibling of target (target included) that is idle or SCHED_IDLE-only; skipped
    /// (not counted) without SMT, as the `sched_smt_present` static branch does.
    pub fn select_idle_smt(
        &mut self,
        pid: Pid,
        target: usize,
        this_cpu: usize,
    ) -> (Option<usize>, Probes) {
        let mut pr = Probes::default();
        // The `sched_smt_present` static branch: no call without SMT.
        if !self.sched_smt_present() {
            return (None, pr);
        }
        let mut found = None;
        for s in self.smt_siblings(target) {
            if !self.cpus_allowed(pid).test(s) {
                continue;
            }
            self.probe(&mut pr, this_cpu, s);
            if self.idle_or_sched_idle(s) {
                found = Some(s);
                break;
            }
        }
        self.emit_func(Func::SelectIdleSmt, this_cpu, pr);
        (found, pr)
    }
}

/// How a `select_idle_cpu` walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanEnd {
    /// The first idle (or SCHED_IDLE-only) CPU in wrap order.
    Found(usize),
    /// `nr` reached 0 before the next probe.
    Exhausted,
    /// Every CPU of the mask probed, none idle.
    Done,
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// The `select_idle_cpu` loop, a word of the mask at a time: walk `cpus_a ∩
    /// cpus_b` (each word ANDed when the walk reaches it) in `for_each_cpu_wrap`
    /// order from `target`; before each CPU `nr -= 1` and stop
    /// (exhausted) when it reaches 0; probe the CPU; stop at the first CPU that is
    /// idle or SCHED_IDLE-only.
    ///
    /// Within one word the walk needs no per-CPU step: the idle test is the
    /// word of [`Kernel::sis_idle_mask`], the CPUs probed are those up to the first
    /// idle one (or the first `nr − 1` left in the budget), and their probe costs
    /// are summed by relation to `this_cpu` (same core → smt, same LLC → llc, else
    /// remote), the same total as one [`Kernel::probe`] per
    /// CPU. Debug builds check every scan against [`Kernel::scan_idle_cpu_ref`],
    /// the per-CPU loop.
    fn scan_idle_cpu(
        &self,
        cpus_a: &CpuMask,
        cpus_b: &CpuMask,
        target: usize,
        this_cpu: usize,
        nr: i64,
        pr: &mut Probes,
    ) -> ScanEnd {
        let [core, llc] = self.cpu_ids(this_cpu);
        let (smt_m, llc_m) = (&self.core_cpus[core as usize], &self.llc_cpus[llc as usize]);
        let idle_m = self.sis_idle_mask();
        // `n` is `set.count_ones()`, which every caller already knows.
        let charge = |pr: &mut Probes, w: usize, set: u64, n: u32| {
            debug_assert_eq!(n, set.count_ones());
            if self.log_probes {
                let mut b = self.probe_buf.borrow_mut();
                let mut rest = set;
                while rest != 0 {
                    b.push((this_cpu, (w << 6) + rest.trailing_zeros() as usize));
                    rest &= rest - 1;
                }
            }
            let smt = set & smt_m.word(w);
            let far = set & !llc_m.word(w) & !smt;
            let c = &self.m.cost;
            // No full popcount here (without POPCNT in the base x86-64 target each is
            // a dozen instructions): the total comes from the walk, the SMT siblings
            // are a few bits, counted one by one, and a wakeup issued inside the
            // scanned LLC has no remote CPUs.
            let n_smt = few_ones(smt);
            let n_far = if far == 0 { 0 } else { far.count_ones() };
            pr.probed += n;
            pr.cost_ns += n_smt as u64 * c.probe_smt
                + (n - n_smt - n_far) as u64 * c.probe_llc
                + n_far as u64 * c.probe_remote;
        };
        // CPUs that may still be probed before `nr` reaches 0 (an `nr` that starts
        // at 0 or below never reaches 0 counting down: no bound).
        let mut budget: u64 = if nr >= 1 { (nr - 1) as u64 } else { u64::MAX };
        let (tw, tb) = (target >> 6, target & 63);
        let n = cpus_a.nr_words().min(cpus_b.nr_words());
        // Wrap order as (word, bits kept) chunks: from target up, then below target.
        let first = (tw..n).map(|w| (w, if w == tw { !0u64 << tb } else { !0 }));
        let second = (0..(tw + 1).min(n)).map(|w| (w, if w == tw { (1u64 << tb) - 1 } else { !0 }));
        for (w, keep) in first.chain(second) {
            let bits = cpus_a.word(w) & cpus_b.word(w) & keep;
            if bits == 0 {
                continue;
            }
            let idle = bits & idle_m.word(w);
            // The CPUs this word would have probed had the budget no end: up to and
            // including the first idle one, or all of them.
            let upto = if idle != 0 {
                let low = idle & idle.wrapping_neg();
                bits & (low | (low - 1))
            } else {
                bits
            };
            let k = upto.count_ones() as u64;
            if k > budget {
                // The budget runs out inside this word: the first `budget` CPUs.
                charge(pr, w, lowest_ones(bits, budget as u32), budget as u32);
                return ScanEnd::Exhausted;
            }
            charge(pr, w, upto, k as u32);
            if idle != 0 {
                return ScanEnd::Found((w << 6) + idle.trailing_zeros() as usize);
            }
            budget -= k;
        }
        ScanEnd::Done
    }

    /// The reference per-CPU form of [`Kernel::scan_idle_cpu`] (the kernel's loop
    /// as written), used to check it in debug builds.
    #[cfg(debug_assertions)]
    fn scan_idle_cpu_ref(
        &self,
        cpus: &CpuMask,
        target: usize,
        this_cpu: usize,
        mut nr: i64,
        pr: &mut Probes,
    ) -> ScanEnd {
        for c in cpus.iter_wrap(target) {
            nr -= 1;
            if nr == 0 {
                return ScanEnd::Exhausted;
            }
            self.probe(pr, this_cpu, c);
            if self.idle_or_sched_idle(c) {
                return ScanEnd::Found(c);
            }
        }
        ScanEnd::Done
    }
}

/// The number of bits set in `x`, one bit per step: cheaper than a software
/// popcount for the few bits of a core's SMT siblings.
#[inline(always)]
fn few_ones(mut x: u64) -> u32 {
    let mut n = 0;
    while x != 0 {
        x &= x - 1;
        n += 1;
    }
    n
}

/// The `n` lowest set bits of `x` (`n` below `x.count_ones()`): the CPUs of a word
/// that a scan visits before its budget runs out. A fixed sequence but for the last byte:
/// the bytes' popcounts and their running sums in one multiply, the byte holding the
/// `n`-th bit found by a bytewise compare, then at most seven steps within it (a
/// bit-by-bit walk took up to 63).
#[inline(always)]
fn lowest_ones(x: u64, n: u32) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    debug_assert!(n < x.count_ones());
    let mut c = x - ((x >> 1) & 0x5555_5555_5555_5555);
    c = (c & 0x3333_3333_3333_3333) + ((c >> 2) & 0x3333_3333_3333_3333);
    c = (c + (c >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte i: the set bits of bytes 0..=i (at most 64, so no byte overflows).
    let sums = c.wrapping_mul(ONES);
    // Bit 7 of byte i is set when sums_i <= n: the bytes wholly taken, a prefix.
    let le = ((u64::from(n) * ONES) | (ONES << 7)).wrapping_sub(sums) & (ONES << 7);
    let whole = (le >> 7).wrapping_mul(ONES) >> 56; // how many bytes, 0..=7
    let below = if whole == 0 {
        0
    } else {
        (sums >> (8 * (whole - 1))) & 0xff
    };
    // The bytes taken whole, then `n - below` bits of the next byte.
    let mut taken = x & ((1u64 << (8 * whole)) - 1);
    let mut rest = x & !taken;
    for _ in 0..(u64::from(n) - below) {
        let low = rest & rest.wrapping_neg();
        taken |= low;
        rest ^= low;
    }
    taken
}

/// The SIS_PROP scan budget `nr` from `span_avg = span_weight × avg_idle` and
/// `avg_cost = avg_scan_cost + 1`: `span_avg / avg_cost` when `span_avg > 4 ×
/// avg_cost`, else 4 (stored in an `int`, as the kernel does).
pub fn sis_prop_nr(span_avg: u64, avg_cost: u64) -> i64 {
    if span_avg > 4 * avg_cost {
        (span_avg / avg_cost) as i32 as i64
    } else {
        4
    }
}

/// `avg_scan_cost += (s64)(time - avg_scan_cost) / 8`: the 1/8 EWMA with signed
/// division truncating toward zero.
pub fn avg_scan_cost_update(avg: u64, time: u64) -> u64 {
    let delta = (time.wrapping_sub(avg) as i64) / 8;
    avg.wrapping_add(delta as u64)
}

#[cfg(test)]
mod tests {
    use super::{cpumask_next_wrap, few_ones, lowest_ones};
    use crate::machine::CpuMask;
    use proptest::prelude::*;

    proptest! {
        /// The bit-by-bit count of the probe charge agrees with `count_ones` on
        /// any word (sparse or not).
        #[test]
        fn few_ones_is_a_popcount(x in any::<u64>(), sparse in 0u32..64) {
            prop_assert_eq!(few_ones(x), x.count_ones());
            let y = (1u64 << sparse) | (x & 0b1011);
            prop_assert_eq!(few_ones(y), y.count_ones());
        }

        /// `lowest_ones` keeps exactly the `n` lowest set bits, as taking them one
        /// at a time does, for dense, sparse and single-byte words and every `n`.
        #[test]
        fn lowest_ones_takes_the_n_lowest_bits(
            x in any::<u64>(),
            keep in prop_oneof![Just(!0u64), any::<u64>(), Just(0xffu64 << 56), Just(0x8000_0000_0000_0001u64)],
            pick in any::<proptest::sample::Index>(),
        ) {
            let x = (x & keep) | (1 << 63);
            let n = pick.index(x.count_ones() as usize) as u32;
            let mut want = 0u64;
            let mut rest = x;
            for _ in 0..n {
                let low = rest & rest.wrapping_neg();
                want |= low;
                rest ^= low;
            }
            prop_assert_eq!(lowest_ones(x, n), want);
        }

        /// The scans walk `CpuMask::iter_wrap` over a snapshot and skip CPUs cleared
        /// from the live mask meanwhile; this must visit exactly what the kernel's
        /// `cpumask_next_wrap` on the live mask visits. Each visited CPU clears a
        /// random set of "siblings" (as `select_idle_core` does).
        #[test]
        fn snapshot_walk_matches_live_next_wrap(
            bits in proptest::collection::btree_set(0usize..200, 0..60),
            start in 0usize..200,
            clears in proptest::collection::vec(proptest::collection::vec(0usize..200, 0..4), 60),
        ) {
            let mask: CpuMask = bits.iter().copied().collect();
            // Kernel order: the live mask, cpumask_next_wrap.
            let mut live = mask;
            let mut want = vec![];
            let mut c = cpumask_next_wrap(start as isize - 1, &live, start, false);
            while let Some(x) = c {
                for &s in &clears[want.len() % clears.len()] {
                    live.clear(s);
                }
                want.push(x);
                c = cpumask_next_wrap(x as isize, &live, start, true);
            }
            // Snapshot iterator with skipping.
            let mut live = mask;
            let mut got = vec![];
            for x in mask.iter_wrap(start) {
                if !live.test(x) {
                    continue;
                }
                for &s in &clears[got.len() % clears.len()] {
                    live.clear(s);
                }
                got.push(x);
            }
            prop_assert_eq!(got, want);
        }
    }
}
