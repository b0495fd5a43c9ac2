//! Load balancing (kernel/sched/fair.c, v5.6, after the v5.5 `load_balance` rework).
//!
//! **The concept.** Wakeup placement decides where a task goes when it wakes; load
//! balancing corrects the result later by *pulling* tasks: a CPU compares the groups of
//! each of its sched domains (bottom-up), finds the busiest group and in it the busiest
//! runqueue, and migrates queued tasks from that runqueue to itself. Nothing is pushed
//! except by *active balance*, where the stopper of the busiest CPU evicts a task that
//! cannot otherwise be moved (because it is running).
//!
//! **Triggers** (`trigger_load_balance`, `run_rebalance_domains`):
//! * the tick of a busy CPU: when `jiffies ≥ rq.next_balance` the balance softirq runs
//!   `rebalance_domains(CPU_NOT_IDLE)` (modelled: at once, after the tick); the tick
//!   also calls `nohz_balancer_kick`;
//! * newidle: `schedule()` finding the CFS queue empty calls `newidle_balance`, gated
//!   by `avg_idle ≥ sysctl_sched_migration_cost` and `rd.overload`, and per domain by
//!   `avg_idle ≥ Σcost + sd.max_newidle_lb_cost`;
//! * nohz idle balance: idle CPUs are tickless; a busy CPU's tick kicks the first idle
//!   CPU of `nohz.idle_cpus_mask` (IPI, then idle exit latency), which runs
//!   `rebalance_domains(CPU_IDLE)` for every idle CPU whose `next_balance` is due and
//!   then for itself, refreshing their blocked PELT load on the way;
//! * active balance: the stopper on the busiest CPU (an event after the IPI latency).
//!
//! **`find_busiest_group` decision table** (first match wins, kernel order;
//! [`FbgCell`] names each cell):
//!
//! | # | condition | result |
//! |---|---|---|
//! | 1 | EAS active and `!rd.overutilized` | balanced |
//! | 2 | no busiest group | balanced |
//! | 3 | busiest is misfit_task / asym_packing / imbalanced | force |
//! | 4 | `local.type > busiest.type` | balanced |
//! | 5 | local overloaded and `local.avg_load ≥ busiest.avg_load` | balanced |
//! | 6 | local overloaded and `local.avg_load ≥ sds.avg_load` | balanced |
//! | 7 | local overloaded and `100·busiest.avg_load ≤ pct·local.avg_load` | balanced |
//! | 8 | prefer_sibling, local has_spare, `busiest.nr > local.nr + 1` | force |
//! | 9 | busiest not overloaded and `idle == CPU_NOT_IDLE` | balanced |
//! | 10 | busiest not overloaded, `busiest.weight > 1`, `local.idle ≤ busiest.idle + 1` | balanced |
//! | 11 | busiest not overloaded and `busiest.h_nr == 1` | balanced |
//! | 12 | otherwise | force |
//!
//! **`calculate_imbalance`** ([`ImbBranch`]): misfit → 1 misfit; asym_packing →
//! `busiest.h_nr` tasks; imbalanced → 1 task; local has_spare and busiest overloaded
//! (or above fully_busy) → util `max(cap, util) − util` (1 task if that is 0 and the
//! CPU is idle); local has_spare, busiest single-CPU or prefer_sibling → tasks
//! `(busiest.nr − local.nr)⁺ >> 1`; local has_spare otherwise → tasks
//! `(local.idle − busiest.idle) >> 1` in *unsigned 32-bit* arithmetic, zeroed on NUMA
//! when `busiest.nr ≤ 2`; else load
//! `min((busiest.avg − sds.avg)·busiest.cap, (sds.avg − local.avg)·local.cap) / 1024`
//! in **unsigned 64-bit arithmetic** — a negative difference wraps and `min` takes the
//! other term, or both wrap and the imbalance is huge (v5.6 has no guard).
//!
//! **Load signal.** v5.6 balances on `cpu_load` = the root cfs_rq's `load_avg`, blocked
//! load included (the v5.5 rework, "Use load instead of runnable load in
//! load_balance()", left `runnable_load_avg` to NUMA balancing), and on a task's
//! `task_h_load` (its `load_avg` in our flat hierarchy).
//!
//! **Costs.** Each `load_balance` call costs `balance_per_cpu × CPUs whose statistics
//! were gathered`; that is charged as kernel work to the balancing CPU and, for newidle,
//! used as the measured cost `d` (`max_newidle_lb_cost`, `max_idle_balance_cost`). An
//! idle balancing CPU (nohz ILB, newidle that found nothing) pays it by leaving idle
//! later: its `exit_until` moves forward, delaying its next action.
//!
//! **Migration of a queued task** (`detach_task` / `attach_task`): dequeue with the
//! migrating flag (vruntime made relative to the source's `min_vruntime`), then
//! `set_task_cpu` (Migrate event, cache-refill work owed, `exec_start = 0`), whose
//! `migrate_task_rq_fair` takes the task's PELT load out of the source cfs_rq at once
//! (`detach_entity_cfs_rq`, as v5.6 does for `TASK_ON_RQ_MIGRATING`); the enqueue on
//! the destination attaches it (`last_update_time = 0`) and checks wakeup preemption.
//! Each migrated task emits `Placement { kind: Balance }` with the reason
//! `balance:<busiest group_type>:<migration_type>` or `active_balance`; each
//! `load_balance` call emits `FuncCall { func: LoadBalance }`. `cfs_tasks` is kept in
//! MRU order (added at the head on enqueue, moved to the head when picked, unlinked on
//! dequeue) and walked from the tail.
//!
//! **Active balance.** The stopper is an event on the busiest CPU after the IPI
//! latency (and its idle exit, if any). It preempts the current task (which is put
//! back and counts as not running), moves the first movable task from the tail of
//! `cfs_tasks` to `push_cpu` — possibly the task that was running — and lets the CPU
//! pick again.
//!
//! **nohz quirk kept.** `_nohz_idle_balance` sets `nohz.next_balance` from the *other*
//! idle CPUs it visited; one that pulled work became busy and got a busy interval
//! (× busy_factor), so the next balance kick can be that far away even though the ILB
//! CPU's own balance was due sooner.
//!
//! **Hooks** elsewhere: `schedule()` calls `newidle_balance` when the pick
//! finds nothing (then picks again if it pulled); `scheduler_tick` ends with
//! `trigger_load_balance`; `enter_idle` calls `nohz_balance_enter_idle`;
//! `enqueue/dequeue/pick_next_task_fair` maintain `cfs_tasks`, `rd.overload`,
//! `rd.overutilized` and the misfit status; `migrate_task_rq_fair` detaches at once
//! for a balancer migration; the kernel event loop hands `Event::ActiveBalance` and
//! `Event::IlbKick` to `handle_balance_event`. A newidle pull skips the
//! wakeup-preemption check (the CPU is inside `schedule()` and picks right after).
//!
//! **Gaps / simplifications.** No RT/DL/IRQ pressure, so `capacity_of ==
//! capacity_orig` and `update_cpu_capacity` just restores it; no cgroups (no throttled
//! pairs, `task_h_load = load_avg`); no NUMA balancing (`migrate_degrades_locality`
//! returns -1, `fbq_type` is `all`); no ASYM_PACKING producer; no CPU hotplug (all CPUs
//! active); `SD_SERIALIZE`'s global lock is always free, as the simulator runs one
//! balancer at a time; EAS is not modelled (no perf domains), so cell 1 never fires;
//! the kernel is taken to be built without `CONFIG_PREEMPTION` (voluntary preemption:
//! newidle may pull several tasks); housekeeping = all CPUs.

use crate::engine::{EventQueue, Observer};
use crate::machine::CpuMask;
use crate::sched::core::{Kernel, Policy, WORK_SHIFT};
use crate::sched::fair::group::{
    fits_capacity, group_classify, GroupType, MigrationType, SgLbStats,
};
use crate::sched::features::SchedFeat;
use crate::sched::pelt;
use crate::sched::topology::{
    SdId, SgId, SD_ASYM_CPUCAPACITY, SD_ASYM_PACKING, SD_BALANCE_NEWIDLE, SD_LOAD_BALANCE, SD_NUMA,
    SD_PREFER_SIBLING,
};
use crate::sched::{Event, Func, Pid, SchedEvent, WakeKind};

/// `SCHED_CAPACITY_SCALE`.
const SCALE: u64 = 1024;
/// `sched_nr_migrate_break`.
pub const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL` (ms).
pub const MAX_PINNED_INTERVAL: u64 = 512;
/// `LOAD_AVG_PERIOD` (ms): the nohz blocked-load refresh period.
pub const LOAD_AVG_PERIOD_MS: u64 = 32;
/// Built with `CONFIG_PREEMPTION`? (distribution server kernels: no).
pub const CONFIG_PREEMPTION: bool = false;
/// Built with `CONFIG_PREEMPT_VOLUNTARY` (Debian's 5.10 and 6.12: yes; 6.12's
/// `PREEMPT_DYNAMIC` boots voluntary)? Then `might_sleep()` is a preemption point
/// (`might_resched` → `__cond_resched`): a task about to sleep with a reschedule
/// pending is preempted first, still runnable (sched/affinity.rs uses it).
pub const CONFIG_PREEMPT_VOLUNTARY: bool = true;

pub const LBF_ALL_PINNED: u32 = 0x01;
pub const LBF_NEED_BREAK: u32 = 0x02;
pub const LBF_DST_PINNED: u32 = 0x04;
pub const LBF_SOME_PINNED: u32 = 0x08;

pub const NOHZ_BALANCE_KICK: u32 = 0x1;
pub const NOHZ_STATS_KICK: u32 = 0x2;
pub const NOHZ_KICK_MASK: u32 = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK;

pub(crate) const SG_OVERLOAD: u32 = 0x1;
const SG_OVERUTILIZED: u32 = 0x2;

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    Idle,
    NotIdle,
    NewlyIdle,
}

/// The root domain's flags (`struct root_domain`).
#[derive(Clone, Debug, Default)]
pub struct RootDomain {
    /// `rd->overload`: some CPU has more than one runnable task.
    pub overload: bool,
    /// `rd->overutilized`.
    pub overutilized: bool,
}

/// The global `nohz` state.
#[derive(Clone, Debug, Default)]
pub struct Nohz {
    pub idle_cpus_mask: CpuMask,
    pub nr_cpus: u32,
    pub has_blocked: bool,
    /// jiffies.
    pub next_balance: u64,
    /// jiffies.
    pub next_blocked: u64,
}

/// All balancing state the kernel keeps outside the domains.
#[derive(Clone, Debug, Default)]
pub struct LbState {
    pub rd: RootDomain,
    pub nohz: Nohz,
    /// `max_load_balance_interval` (jiffies) = HZ × online CPUs / 10.
    pub max_load_balance_interval: u64,
    /// The task being moved by the balancer (`TASK_ON_RQ_MIGRATING`).
    pub migrating: Option<Pid>,
    /// Number of `load_balance` calls (statistics).
    pub nr_load_balance: u64,
    /// Did the last `_nohz_idle_balance` pass complete (its return value)?
    pub last_pass_completed: bool,
    /// The CPU running the balancer now (the nohz ILB balances for other CPUs): the
    /// wakeup preemption after an attach is a local reschedule or an IPI from it.
    pub balancing_cpu: usize,
}

impl LbState {
    pub fn new(nr_cpus: usize, hz: u64) -> Self {
        LbState {
            max_load_balance_interval: (hz * nr_cpus as u64 / 10).max(1),
            ..Default::default()
        }
    }
}

mod decide;
pub use decide::*;

// ----------------------------------------------------------------------
// The balancer on the kernel
// ----------------------------------------------------------------------

/// `struct lb_env`.
#[derive(Clone, Debug)]
struct LbEnv {
    sd: SdId,
    src_cpu: usize,
    dst_cpu: usize,
    new_dst_cpu: usize,
    idle: CpuIdleType,
    imbalance: i64,
    cpus: CpuMask,
    dst_grpmask: CpuMask,
    flags: u32,
    loop_: u32,
    loop_break: u32,
    loop_max: u32,
    migration_type: MigrationType,
    busiest_type: GroupType,
    /// The stopper runs on src: its current task has been put back.
    stopper: bool,
    /// CPUs whose statistics were gathered (cost model).
    probed: u32,
    /// Detached tasks, to attach (`env->tasks`).
    tasks: Vec<Pid>,
}

/// `struct sd_lb_stats` (the parts used).
struct SdLbStats {
    busiest: Option<SgId>,
    busiest_view: Option<GroupView>,
    local_view: GroupView,
    total_load: u64,
    total_capacity: u64,
    prefer_sibling: bool,
}

/// What one `load_balance` call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbOutcome {
    pub moved: u32,
    /// CPUs whose statistics were gathered.
    pub probed: u32,
    /// `*continue_balancing`.
    pub cont: bool,
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `check_cpu_capacity`: is the CPU's capacity reduced by other classes?
    pub(crate) fn check_cpu_capacity(&self, cpu: usize, imbalance_pct: u32) -> bool {
        let rq = &self.rqs[cpu];
        rq.cpu_capacity * (imbalance_pct as u64) < rq.cpu_capacity_orig * 100
    }

    /// `cpu_overutilized`.
    fn cpu_overutilized(&self, cpu: usize) -> bool {
        !fits_capacity(self.cpu_util(cpu), self.capacity_of(cpu))
    }

    /// Hook of `enqueue_task_fair`: `account_entity_enqueue` adds the task at the head
    /// of `cfs_tasks`; `add_nr_running` sets `rd.overload`; a wakeup enqueue updates
    /// `rd.overutilized`.
    pub(crate) fn lb_enqueued(&mut self, cpu: usize, pid: Pid, wakeup: bool) {
        self.rqs[cpu].cfs_tasks.push_front(&mut self.tasks, pid);
        if self.rqs[cpu].nr_running >= 2 {
            self.lb.rd.overload = true;
        }
        if wakeup && !self.lb.rd.overutilized && self.cpu_overutilized(cpu) {
            self.lb.rd.overutilized = true;
            self.tp_overutilized(cpu, true);
        }
    }

    /// Hook of `dequeue_task_fair`: `account_entity_dequeue` unlinks the task.
    pub(crate) fn lb_dequeued(&mut self, cpu: usize, pid: Pid) {
        self.rqs[cpu].cfs_tasks.remove(&mut self.tasks, pid);
    }

    /// Hook of `pick_next_task_fair`: the picked task moves to the head of
    /// `cfs_tasks` (MRU order) and the misfit status is refreshed.
    pub(crate) fn lb_picked(&mut self, cpu: usize, pid: Pid) {
        let l = &mut self.rqs[cpu].cfs_tasks;
        l.remove(&mut self.tasks, pid);
        l.push_front(&mut self.tasks, pid);
        self.update_misfit_status(cpu, Some(pid));
    }

    /// Charge the balancer's work to `cpu`: kernel work on a busy CPU; an idle CPU
    /// leaves idle later (its `exit_until` moves forward).
    pub(crate) fn charge_balance(&mut self, cpu: usize, ns: u64, q: &mut EventQueue<Event>) {
        if ns == 0 {
            return;
        }
        if self.rqs[cpu].curr.is_some() {
            self.charge(cpu, ns, q);
        } else {
            let rq = &mut self.rqs[cpu];
            rq.exit_until = rq.exit_until.max(self.now) + ns;
        }
    }

    /// `update_blocked_averages` (flat hierarchy): age the idle rq's cfs PELT to now.
    pub(crate) fn update_blocked_averages(&mut self, cpu: usize) {
        let now = self.now;
        self.rq_update_clock(cpu, now);
        let t = pelt::rq_clock_pelt(&self.rqs[cpu].pelt);
        self.update_cfs_rq_load_avg(cpu, t);
        let a = &self.rqs[cpu].cfs.avg;
        let blocked = a.load_avg != 0 || a.util_avg != 0;
        self.rqs[cpu].has_blocked_load = blocked;
        self.report_cfs_rq(cpu);
    }

    /// `detach_entity_cfs_rq` for a task leaving `cpu` with `TASK_ON_RQ_MIGRATING`:
    /// age it and the cfs_rq, then take its load out at once (not via `removed`).
    pub(crate) fn detach_entity_cfs_rq(&mut self, cpu: usize, pid: Pid) {
        let now = pelt::rq_clock_pelt(&self.rqs[cpu].pelt);
        let se = &mut self.tasks[pid as usize].se;
        if se.avg.last_update_time != 0 && crate::sched::fair::entity::update_se_avg(now, se, false)
        {
            self.tp_pelt_se(cpu, pid);
        }
        self.update_cfs_rq_load_avg(cpu, now);
        let se = &self.tasks[pid as usize].se;
        let (avg, w) = (se.avg, se.load.weight);
        pelt::detach_entity_load_avg(&mut self.rqs[cpu].cfs.avg, &avg, w);
        self.tp_pelt_cfs(cpu);
        self.report_cfs_rq(cpu);
    }

    // ------------------------------------------------------------------
    // Triggers
    // ------------------------------------------------------------------

    /// `trigger_load_balance` from `scheduler_tick` on a busy CPU: the misfit status
    /// of the tick (`task_tick_fair`), the nohz kick, then the balance softirq when
    /// `jiffies ≥ rq.next_balance` (run at once).
    pub(crate) fn trigger_load_balance(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        let curr = self.rqs[cpu].curr;
        self.update_misfit_status(cpu, curr);
        if !self.lb.rd.overutilized && curr.is_some() && self.cpu_overutilized(cpu) {
            self.lb.rd.overutilized = true;
            self.tp_overutilized(cpu, true);
        }
        let j = self.jiffies();
        let raise = j >= self.rqs[cpu].next_balance;
        self.nohz_balancer_kick(cpu, q);
        if raise {
            self.run_rebalance_domains(cpu, q);
        }
    }

    /// `run_rebalance_domains` (the SCHED_SOFTIRQ handler) on a CPU that was not
    /// kicked as ILB.
    fn run_rebalance_domains(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        let idle = if self.idle_cpu(cpu) {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        self.update_blocked_averages(cpu);
        self.lb.balancing_cpu = cpu;
        let probed = self.rebalance_domains(cpu, idle, q);
        let c = self.m.cost.balance_per_cpu * probed as u64;
        self.charge_balance(cpu, c, q);
    }

    /// `rebalance_domains` (kernel/sched/fair.c, v5.6). Returns the CPUs probed.
    pub(crate) fn rebalance_domains(
        &mut self,
        cpu: usize,
        mut idle: CpuIdleType,
        q: &mut EventQueue<Event>,
    ) -> u32 {
        let hz = self.tun.hz;
        let j = self.jiffies();
        let max_iv = self.lb.max_load_balance_interval;
        let mut busy = idle != CpuIdleType::Idle && !self.sched_idle_cpu(cpu);
        let mut next_balance = j + 60 * hz;
        let mut update_next_balance = false;
        let mut need_decay = false;
        let mut max_cost = 0u64;
        let mut cont = true;
        let mut probed = 0;
        let sds: Vec<SdId> = self.topo.domains_of(cpu).collect();
        for sd in sds {
            {
                let d = &mut self.topo.domains[sd];
                if j > d.next_decay_max_lb_cost {
                    d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
                    d.next_decay_max_lb_cost = j + hz;
                    need_decay = true;
                }
                max_cost += d.max_newidle_lb_cost;
                if !d.has(SD_LOAD_BALANCE) {
                    continue;
                }
            }
            if !cont {
                if need_decay {
                    continue;
                }
                break;
            }
            let d = &self.topo.domains[sd];
            let mut iv = sd_balance_interval(d.balance_interval, d.busy_factor, busy, hz, max_iv);
            // SD_SERIALIZE: the global `balancing` lock is always free here (one
            // balancer at a time in a serial simulator).
            if j >= d.last_balance + iv {
                let r = self.load_balance(cpu, sd, idle, q);
                probed += r.probed;
                cont = r.cont;
                if r.moved > 0 {
                    idle = if self.idle_cpu(cpu) {
                        CpuIdleType::Idle
                    } else {
                        CpuIdleType::NotIdle
                    };
                    busy = idle != CpuIdleType::Idle && !self.sched_idle_cpu(cpu);
                }
                let d = &mut self.topo.domains[sd];
                d.last_balance = j;
                iv = sd_balance_interval(d.balance_interval, d.busy_factor, busy, hz, max_iv);
            }
            let d = &self.topo.domains[sd];
            if next_balance > d.last_balance + iv {
                next_balance = d.last_balance + iv;
                update_next_balance = true;
            }
        }
        if need_decay {
            self.rqs[cpu].max_idle_balance_cost = self.tun.migration_cost_ns.max(max_cost);
        }
        if update_next_balance {
            self.rqs[cpu].next_balance = next_balance;
            if idle == CpuIdleType::Idle && self.lb.nohz.next_balance > next_balance {
                self.lb.nohz.next_balance = next_balance;
            }
        }
        probed
    }

    /// `newidle_balance` (kernel/sched/fair.c, v5.6), called by `schedule()` when the
    /// CFS queue is empty, with the previous task still current. Returns
    /// `pulled_task` (> 0: pick again).
    pub(crate) fn newidle_balance(&mut self, cpu: usize, q: &mut EventQueue<Event>) -> i32 {
        let hz = self.tun.hz;
        let max_iv = self.lb.max_load_balance_interval;
        let j = self.jiffies();
        self.update_misfit_status(cpu, None);
        self.rqs[cpu].idle_stamp = self.now;
        let mut next_balance = j + hz;
        let mut pulled = 0u32;
        let mut curr_cost = 0u64;
        let mig = self.tun.migration_cost_ns;
        self.lb.balancing_cpu = cpu;
        let upd_next = |k: &Self, sd: SdId, nb: &mut u64| {
            let d = &k.topo.domains[sd];
            let next = d.last_balance
                + sd_balance_interval(d.balance_interval, d.busy_factor, false, hz, max_iv);
            if *nb > next {
                *nb = next;
            }
        };
        if self.rqs[cpu].avg_idle < mig || !self.lb.rd.overload {
            if let Some(sd) = self.topo.sd[cpu] {
                upd_next(self, sd, &mut next_balance);
            }
            self.nohz_newidle_balance(cpu, q);
        } else {
            self.update_blocked_averages(cpu);
            let sds: Vec<SdId> = self.topo.domains_of(cpu).collect();
            for sd in sds {
                let d = &self.topo.domains[sd];
                if !d.has(SD_LOAD_BALANCE) {
                    continue;
                }
                if self.rqs[cpu].avg_idle < curr_cost + d.max_newidle_lb_cost {
                    upd_next(self, sd, &mut next_balance);
                    break;
                }
                if d.has(SD_BALANCE_NEWIDLE) {
                    let r = self.load_balance(cpu, sd, CpuIdleType::NewlyIdle, q);
                    pulled = r.moved;
                    // The measured cost of this pass is the modelled cost.
                    let cost = self.m.cost.balance_per_cpu * r.probed as u64;
                    let d = &mut self.topo.domains[sd];
                    if cost > d.max_newidle_lb_cost {
                        d.max_newidle_lb_cost = cost;
                    }
                    curr_cost += cost;
                }
                upd_next(self, sd, &mut next_balance);
                if pulled > 0 || self.rqs[cpu].nr_running > 0 {
                    break;
                }
            }
            if curr_cost > self.rqs[cpu].max_idle_balance_cost {
                self.rqs[cpu].max_idle_balance_cost = curr_cost;
            }
        }
        let mut pulled = pulled as i32;
        if self.rqs[cpu].cfs.h_nr_running > 0 && pulled == 0 {
            pulled = 1;
        }
        if self.rqs[cpu].next_balance > next_balance {
            self.rqs[cpu].next_balance = next_balance;
        }
        if pulled != 0 {
            self.rqs[cpu].idle_stamp = 0;
            // The pass ran before the pulled task: its cost delays it.
            self.rqs[cpu].kernel_work += curr_cost << WORK_SHIFT;
        } else {
            // Paid by leaving the coming idle period later.
            let rq = &mut self.rqs[cpu];
            rq.exit_until = rq.exit_until.max(self.now) + curr_cost;
        }
        pulled
    }

    // ------------------------------------------------------------------
    // nohz
    // ------------------------------------------------------------------

    /// `nohz_balance_enter_idle`: the CPU stops its tick.
    pub(crate) fn nohz_balance_enter_idle(&mut self, cpu: usize) {
        if self.rqs.is_empty() {
            return;
        }
        self.rqs[cpu].has_blocked_load = true;
        if !self.rqs[cpu].nohz_tick_stopped && self.topo.sd[cpu].is_some() {
            self.rqs[cpu].nohz_tick_stopped = true;
            self.lb.nohz.idle_cpus_mask.set(cpu);
            self.lb.nohz.nr_cpus += 1;
            // set_cpu_sd_state_idle
            if let Some(s) = self.topo.sd_llc_shared[cpu] {
                let sh = &mut self.topo.shared[s];
                sh.nr_busy_cpus = sh.nr_busy_cpus.saturating_sub(1);
            }
        }
        self.lb.nohz.has_blocked = true;
    }

    /// `nohz_balance_exit_idle`: the first busy tick.
    fn nohz_balance_exit_idle(&mut self, cpu: usize) {
        if !self.rqs[cpu].nohz_tick_stopped {
            return;
        }
        self.rqs[cpu].nohz_tick_stopped = false;
        self.lb.nohz.idle_cpus_mask.clear(cpu);
        self.lb.nohz.nr_cpus -= 1;
        if let Some(s) = self.topo.sd_llc_shared[cpu] {
            self.topo.shared[s].nr_busy_cpus += 1;
        }
    }

    /// `nohz_balancer_kick` (kernel/sched/fair.c, v5.6), on a busy CPU's tick.
    fn nohz_balancer_kick(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        let now = self.jiffies();
        // rq->idle_balance is idle_cpu() at the tick: never on a ticking busy CPU.
        if self.idle_cpu(cpu) {
            return;
        }
        self.nohz_balance_exit_idle(cpu);
        if self.lb.nohz.nr_cpus == 0 {
            return;
        }
        let mut flags = 0;
        if self.lb.nohz.has_blocked && now > self.lb.nohz.next_blocked {
            flags = NOHZ_STATS_KICK;
        }
        if now >= self.lb.nohz.next_balance {
            if let Some(f) = self.nohz_kick_needed(cpu) {
                flags = f;
            }
        }
        if flags != 0 {
            self.kick_ilb(flags, cpu, q);
        }
    }

    /// The `BALANCE|STATS` conditions of `nohz_balancer_kick`, in kernel order.
    fn nohz_kick_needed(&self, cpu: usize) -> Option<u32> {
        let rq = &self.rqs[cpu];
        if rq.nr_running >= 2 {
            return Some(NOHZ_KICK_MASK);
        }
        if let Some(sd) = self.topo.sd[cpu] {
            let pct = self.topo.domains[sd].imbalance_pct;
            if rq.cfs.h_nr_running >= 1 && self.check_cpu_capacity(cpu, pct) {
                return Some(NOHZ_KICK_MASK);
            }
        }
        if let Some(sd) = self.topo.sd_asym_packing[cpu] {
            let span = self.topo.domains[sd].span.and(&self.lb.nohz.idle_cpus_mask);
            if span.iter().any(|i| sched_asym_prefer(i, cpu)) {
                return Some(NOHZ_KICK_MASK);
            }
        }
        // check_misfit_status (v4.20); asymmetric systems then skip the LLC test
        // (v5.1, which relies on misfit). NO_MISFIT, the kernel before the series,
        // has neither: an asymmetric system falls through to the LLC test.
        let asym = self.topo.sd_asym_cpucapacity[cpu].filter(|_| self.feat.has(SchedFeat::MISFIT));
        if let Some(sd) = asym {
            return self.check_misfit_status(cpu, sd).then_some(NOHZ_KICK_MASK);
        }
        if let Some(s) = self.topo.sd_llc_shared[cpu] {
            if self.topo.shared[s].nr_busy_cpus > 1 {
                return Some(NOHZ_KICK_MASK);
            }
        }
        None
    }

    /// `kick_ilb`: wake the first idle CPU of the nohz mask with an IPI.
    fn kick_ilb(&mut self, flags: u32, from_cpu: usize, q: &mut EventQueue<Event>) {
        if flags & NOHZ_BALANCE_KICK != 0 {
            self.lb.nohz.next_balance = self.jiffies() + 1;
        }
        // find_new_ilb
        let ilb = self
            .lb
            .nohz
            .idle_cpus_mask
            .iter()
            .find(|&c| self.idle_cpu(c));
        let Some(ilb) = ilb else { return };
        let old = self.rqs[ilb].nohz_flags;
        self.rqs[ilb].nohz_flags |= flags;
        if old & NOHZ_KICK_MASK != 0 {
            return;
        }
        let lat = if ilb == from_cpu {
            0
        } else {
            self.m.cost.ipi_latency_ns
        };
        q.push(self.now + lat, Event::IlbKick { cpu: ilb as u32 });
    }

    /// The kick IPI reached `cpu` and it has left its idle state: run the nohz idle
    /// balance (`run_rebalance_domains` → `nohz_idle_balance`), then idle again.
    pub(crate) fn nohz_ilb_kicked(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        let flags = std::mem::take(&mut self.rqs[cpu].nohz_flags);
        if flags & NOHZ_KICK_MASK == 0 {
            return;
        }
        if !self.idle_cpu(cpu) {
            // Not idle any more: the kick is dropped (kernel: flags cleared).
            return;
        }
        let probed = self.nohz_idle_balance_pass(cpu, flags, CpuIdleType::Idle, q);
        let c = self.m.cost.balance_per_cpu * probed as u64;
        self.charge_balance(cpu, c, q);
        self.idle_loop_continue(cpu);
    }

    /// `_nohz_idle_balance` (kernel/sched/fair.c, v5.6). Returns the CPUs probed by
    /// the `load_balance` calls; `self.lb.nohz` bookkeeping as the kernel.
    fn nohz_idle_balance_pass(
        &mut self,
        this: usize,
        flags: u32,
        idle: CpuIdleType,
        q: &mut EventQueue<Event>,
    ) -> u32 {
        let hz = self.tun.hz;
        let j = self.jiffies();
        let mut next_balance = j + 60 * hz;
        let mut update_next_balance = false;
        let mut has_blocked_load = false;
        let mut probed = 0;
        let mut completed = false;
        self.lb.nohz.has_blocked = false;
        self.lb.balancing_cpu = this;
        let mask: Vec<usize> = self.lb.nohz.idle_cpus_mask.iter().collect();
        'pass: {
            for bc in mask {
                if bc == this || !self.idle_cpu(bc) {
                    continue;
                }
                if self.rqs[this].need_resched {
                    has_blocked_load = true;
                    break 'pass;
                }
                // update_nohz_stats(rq, force = true)
                if self.rqs[bc].has_blocked_load {
                    self.update_blocked_averages(bc);
                    has_blocked_load |= self.rqs[bc].has_blocked_load;
                }
                if j >= self.rqs[bc].next_balance {
                    let now = self.now;
                    self.rq_update_clock(bc, now);
                    if flags & NOHZ_BALANCE_KICK != 0 {
                        probed += self.rebalance_domains(bc, CpuIdleType::Idle, q);
                    }
                }
                let nb = self.rqs[bc].next_balance;
                if next_balance > nb {
                    next_balance = nb;
                    update_next_balance = true;
                }
            }
            if idle != CpuIdleType::NewlyIdle {
                self.update_blocked_averages(this);
                has_blocked_load |= self.rqs[this].has_blocked_load;
            }
            if flags & NOHZ_BALANCE_KICK != 0 {
                probed += self.rebalance_domains(this, CpuIdleType::Idle, q);
            }
            self.lb.nohz.next_blocked = j + msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz);
            completed = true;
        }
        if has_blocked_load {
            self.lb.nohz.has_blocked = true;
        }
        if update_next_balance {
            self.lb.nohz.next_balance = next_balance;
        }
        self.lb.last_pass_completed = completed;
        probed
    }

    /// `nohz_newidle_balance`: a CPU going idle refreshes the blocked load of the
    /// tickless CPUs itself when due (STATS only), else kicks an ILB for it.
    fn nohz_newidle_balance(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        if self.rqs[cpu].avg_idle < self.tun.migration_cost_ns {
            return;
        }
        if !self.lb.nohz.has_blocked || self.jiffies() < self.lb.nohz.next_blocked {
            return;
        }
        self.nohz_idle_balance_pass(cpu, NOHZ_STATS_KICK, CpuIdleType::NewlyIdle, q);
        if !self.lb.last_pass_completed {
            self.kick_ilb(NOHZ_STATS_KICK, cpu, q);
        }
    }

    // ------------------------------------------------------------------
    // load_balance
    // ------------------------------------------------------------------

    /// `should_we_balance` (kernel/sched/fair.c, v5.6).
    fn should_we_balance(&self, env: &LbEnv) -> bool {
        if !env.cpus.test(env.dst_cpu) {
            return false;
        }
        if env.idle == CpuIdleType::NewlyIdle {
            return true;
        }
        let sg = &self.topo.groups[self.topo.domains[env.sd].groups[0]];
        let bal = sg
            .balance_mask
            .and(&env.cpus)
            .iter()
            .find(|&c| self.idle_cpu(c))
            .unwrap_or_else(|| sg.balance_cpu());
        bal == env.dst_cpu
    }

    /// `update_group_capacity` / `update_cpu_capacity` (v5.6) for `sd`'s local group
    /// of `cpu`: with no RT/DL/IRQ pressure every CPU's capacity is `capacity_orig`,
    /// so this recomputes the boot values and sets `next_update`.
    fn update_group_capacity(&mut self, sd: SdId, cpu: usize) {
        let d = &self.topo.domains[sd];
        let iv = msecs_to_jiffies(d.balance_interval, self.tun.hz)
            .clamp(1, self.lb.max_load_balance_interval.max(1));
        let g = d.groups[0];
        let span = self.topo.groups[g].span;
        if d.child.is_none() {
            // update_cpu_capacity: no pressure to subtract.
            let rq = &mut self.rqs[cpu];
            rq.cpu_capacity = rq.cpu_capacity_orig.max(1);
            self.tp_cpu_capacity(cpu);
        }
        let (mut cap, mut minc, mut maxc) = (0u64, u64::MAX, 0u64);
        for c in span.iter() {
            let x = self.capacity_of(c);
            cap += x;
            minc = minc.min(x);
            maxc = maxc.max(x);
        }
        let next = self.jiffies() + iv;
        let s = &mut self.topo.sgc[self.topo.groups[g].sgc];
        s.capacity = cap;
        s.min_capacity = minc;
        s.max_capacity = maxc;
        s.next_update = next;
    }

    /// `update_sg_lb_stats` (kernel/sched/fair.c, v5.6).
    fn update_sg_lb_stats(
        &self,
        env: &mut LbEnv,
        g: SgId,
        local_group: bool,
        sg_status: &mut u32,
    ) -> GroupView {
        let d = &self.topo.domains[env.sd];
        let misfit_on = self.feat.has(SchedFeat::MISFIT);
        let grp = &self.topo.groups[g];
        let sgc = &self.topo.sgc[grp.sgc];
        let mut s = SgLbStats::default();
        for i in grp.span.and(&env.cpus).iter() {
            env.probed += 1;
            let rq = &self.rqs[i];
            s.group_load += self.cpu_load(i);
            s.group_util += self.cpu_util(i);
            s.sum_h_nr_running += rq.cfs.h_nr_running;
            let nr = rq.nr_running;
            s.sum_nr_running += nr;
            if nr > 1 {
                *sg_status |= SG_OVERLOAD;
            }
            if self.cpu_overutilized(i) {
                *sg_status |= SG_OVERUTILIZED;
            }
            if nr == 0 && self.idle_cpu(i) {
                s.idle_cpus += 1;
                continue;
            }
            if local_group {
                continue;
            }
            if misfit_on && d.has(SD_ASYM_CPUCAPACITY) {
                self.update_sg_misfit(i, &mut s, sg_status);
            }
        }
        if d.has(SD_ASYM_PACKING)
            && env.idle != CpuIdleType::NotIdle
            && s.sum_h_nr_running > 0
            && sched_asym_prefer(env.dst_cpu, grp.asym_prefer_cpu)
        {
            s.group_asym_packing = true;
        }
        s.group_capacity = sgc.capacity;
        s.group_weight = grp.group_weight;
        s.group_type = group_classify(d.imbalance_pct, sgc.imbalance, &s);
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * SCALE / s.group_capacity.max(1);
        }
        GroupView {
            sgs: s,
            min_capacity: sgc.min_capacity,
            max_capacity: sgc.max_capacity,
            asym_prefer_cpu: grp.asym_prefer_cpu,
        }
    }

    /// `update_sd_lb_stats` (kernel/sched/fair.c, v5.6), root-domain flags included.
    fn update_sd_lb_stats(&mut self, env: &mut LbEnv) -> SdLbStats {
        let groups = self.topo.domains[env.sd].groups.clone();
        let asym = self.topo.domains[env.sd].has(SD_ASYM_CPUCAPACITY);
        let mut sg_status = 0;
        let mut sum_util = 0;
        let mut sds = SdLbStats {
            busiest: None,
            busiest_view: None,
            local_view: GroupView {
                sgs: SgLbStats::default(),
                min_capacity: 0,
                max_capacity: 0,
                asym_prefer_cpu: 0,
            },
            total_load: 0,
            total_capacity: 0,
            prefer_sibling: false,
        };
        for g in groups {
            let local = self.topo.groups[g].span.test(env.dst_cpu);
            if local {
                let next = self.topo.sgc[self.topo.groups[g].sgc].next_update;
                if env.idle != CpuIdleType::NewlyIdle || self.jiffies() >= next {
                    self.update_group_capacity(env.sd, env.dst_cpu);
                }
            }
            let v = self.update_sg_lb_stats(env, g, local, &mut sg_status);
            if local {
                sds.local_view = v;
            } else if update_sd_pick_busiest(asym, &sds.local_view, sds.busiest_view.as_ref(), &v) {
                sds.busiest = Some(g);
                sds.busiest_view = Some(v);
            }
            sds.total_load += v.sgs.group_load;
            sds.total_capacity += v.sgs.group_capacity;
            sum_util += v.sgs.group_util;
        }
        self.update_idle_cpu_scan(
            env.sd,
            env.dst_cpu,
            env.idle == CpuIdleType::NewlyIdle,
            sum_util,
        );
        let d = &self.topo.domains[env.sd];
        sds.prefer_sibling = d
            .child
            .is_some_and(|c| self.topo.domains[c].has(SD_PREFER_SIBLING));
        if d.parent.is_none() {
            self.lb.rd.overload = sg_status & SG_OVERLOAD != 0;
            self.lb.rd.overutilized = sg_status & SG_OVERUTILIZED != 0;
            self.tp_overutilized(env.dst_cpu, self.lb.rd.overutilized);
        } else if sg_status & SG_OVERUTILIZED != 0 {
            self.lb.rd.overutilized = true;
            self.tp_overutilized(env.dst_cpu, true);
        }
        sds
    }

    /// `find_busiest_group`: statistics, then [`find_busiest_group_decide`].
    fn find_busiest_group(&mut self, env: &mut LbEnv) -> Option<SgId> {
        let mut sds = self.update_sd_lb_stats(env);
        let d = &self.topo.domains[env.sd];
        let inp = SdInputs {
            idle: env.idle,
            imbalance_pct: d.imbalance_pct,
            prefer_sibling: sds.prefer_sibling,
            sd_numa: d.has(SD_NUMA),
            imb_numa_nr: self
                .feat
                .has(SchedFeat::IMB_NUMA_NR)
                .then_some(d.imb_numa_nr),
            total_load: sds.total_load,
            total_capacity: sds.total_capacity,
            // Perf domains exist (fair/eas.rs) and the root domain is not overutilized.
            eas_not_overutilized: self.sched_energy_enabled() && !self.lb.rd.overutilized,
        };
        let busiest_stats = sds.busiest_view.map(|v| v.sgs);
        let r = find_busiest_group_decide(&mut sds.local_view.sgs, busiest_stats.as_ref(), &inp);
        match r.imbalance {
            Some((mt, imb, _)) if imb != 0 => {
                env.migration_type = mt;
                env.imbalance = imb;
                env.busiest_type = busiest_stats
                    .map(|s| s.group_type)
                    .unwrap_or(GroupType::HasSpare);
                sds.busiest
            }
            _ => {
                env.imbalance = 0;
                None
            }
        }
    }

    /// `find_busiest_queue` (kernel/sched/fair.c, v5.6).
    fn find_busiest_queue(&self, env: &LbEnv, g: SgId) -> Option<usize> {
        let d = &self.topo.domains[env.sd];
        let mut busiest = None;
        let (mut busiest_load, mut busiest_cap, mut busiest_util, mut busiest_nr) =
            (0u64, 1u64, 0u64, 0u32);
        for i in self.topo.groups[g].span.and(&env.cpus).iter() {
            let rq = &self.rqs[i];
            let cap = self.capacity_of(i);
            let nr = rq.cfs.h_nr_running;
            if d.has(SD_ASYM_CPUCAPACITY) && self.capacity_of(env.dst_cpu) < cap && nr == 1 {
                continue;
            }
            match env.migration_type {
                MigrationType::Load => {
                    let l = self.cpu_load(i);
                    if nr == 1
                        && l > env.imbalance as u64
                        && !self.check_cpu_capacity(i, d.imbalance_pct)
                    {
                        continue;
                    }
                    if l * busiest_cap > busiest_load * cap {
                        busiest_load = l;
                        busiest_cap = cap;
                        busiest = Some(i);
                    }
                }
                MigrationType::Util => {
                    let u = self.cpu_util(i);
                    if busiest_util < u {
                        busiest_util = u;
                        busiest = Some(i);
                    }
                }
                MigrationType::Task => {
                    if busiest_nr < nr {
                        busiest_nr = nr;
                        busiest = Some(i);
                    }
                }
                MigrationType::Misfit => {
                    let m = self.rqs[i].misfit_task_load;
                    if m > busiest_load {
                        busiest_load = m;
                        busiest = Some(i);
                    }
                }
            }
        }
        busiest
    }

    /// `task_hot` (kernel/sched/fair.c, v5.6).
    fn task_hot(&self, pid: Pid, env: &LbEnv) -> bool {
        let t = &self.tasks[pid as usize];
        let cfs = &self.rqs[env.src_cpu].cfs;
        let buddy = cfs.next == Some(pid) || cfs.last == Some(pid);
        task_hot_decide(
            t.policy == Policy::Idle,
            self.feat.has(SchedFeat::CACHE_HOT_BUDDY),
            self.rqs[env.dst_cpu].nr_running,
            buddy,
            self.tun.migration_cost_ns,
            self.now as i64 - t.se.exec_start as i64,
        )
    }

    /// `can_migrate_task` (kernel/sched/fair.c, v5.6).
    fn can_migrate_task(&self, pid: Pid, env: &mut LbEnv) -> bool {
        // SIM_ (v6.12 DELAY_DEQUEUE): a delayed (sleeping) task is not moved; it
        // leaves at its next pick or is woken in place.
        if self.tasks[pid as usize].se.sched_delayed {
            return false;
        }
        let allowed = self.cpus_allowed(pid);
        if !allowed.test(env.dst_cpu) {
            env.flags |= LBF_SOME_PINNED;
            if env.idle == CpuIdleType::NewlyIdle || env.flags & LBF_DST_PINNED != 0 {
                return false;
            }
            if let Some(c) = env
                .dst_grpmask
                .and(&env.cpus)
                .iter()
                .find(|&c| allowed.test(c))
            {
                env.flags |= LBF_DST_PINNED;
                env.new_dst_cpu = c;
            }
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        // task_running: the stopper has put the current task back.
        if !env.stopper && self.rqs[env.src_cpu].curr == Some(pid) {
            return false;
        }
        let sd = &self.topo.domains[env.sd];
        // migrate_degrades_locality: no NUMA balancing (-1) → task_hot.
        !self.task_hot(pid, env) || sd.nr_balance_failed > sd.cache_nice_tries
    }

    /// `detach_task`: dequeue with `TASK_ON_RQ_MIGRATING` and `set_task_cpu`.
    fn detach_task(&mut self, pid: Pid, env: &LbEnv) {
        let now = self.now;
        self.rq_update_clock(env.src_cpu, now);
        self.deactivate_task(env.src_cpu, pid, 0);
        self.lb.migrating = Some(pid);
        self.set_task_cpu(pid, env.dst_cpu, false);
        self.lb.migrating = None;
    }

    /// `attach_task`: enqueue on dst and check preemption (skipped when dst is the
    /// newidle CPU inside `schedule()`, which picks right after).
    #[allow(clippy::too_many_arguments)]
    fn attach_task(
        &mut self,
        pid: Pid,
        src: usize,
        dst: usize,
        reason: &'static str,
        newidle: bool,
        from_cpu: usize,
        q: &mut EventQueue<Event>,
    ) {
        let now = self.now;
        self.rq_update_clock(dst, now);
        self.activate_task(dst, pid, 0);
        self.emit(SchedEvent::Placement {
            pid,
            kind: WakeKind::Balance,
            prev_cpu: src,
            cpu: dst,
            reason,
        });
        if !newidle {
            self.check_preempt_curr(dst, pid, 0, from_cpu, q);
        }
    }

    /// `detach_tasks` (kernel/sched/fair.c, v5.6): walk src's `cfs_tasks` from the
    /// tail. Returns the number detached (in `env.tasks`).
    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        if env.imbalance <= 0 {
            return 0;
        }
        let mut detached = 0;
        let src = env.src_cpu;
        while let Some(p) = self.rqs[src].cfs_tasks.back() {
            if env.idle != CpuIdleType::NotIdle && self.rqs[src].nr_running <= 1 {
                break;
            }
            env.loop_ += 1;
            if env.loop_ > env.loop_max {
                break;
            }
            if env.loop_ > env.loop_break {
                env.loop_break += SCHED_NR_MIGRATE_BREAK;
                env.flags |= LBF_NEED_BREAK;
                break;
            }
            let ok = self.can_migrate_task(p, env) && {
                let sd = &self.topo.domains[env.sd];
                match env.migration_type {
                    MigrationType::Load => {
                        let load = self.task_h_load(Some(p));
                        // LB_MIN skips tiny tasks while nothing failed; a task
                        // over twice the imbalance waits for cache_nice_tries.
                        let tiny = self.feat.has(SchedFeat::LB_MIN)
                            && load < 16
                            && sd.nr_balance_failed == 0;
                        let too_big = load / 2 > env.imbalance as u64
                            && sd.nr_balance_failed <= sd.cache_nice_tries;
                        if tiny || too_big {
                            false
                        } else {
                            env.imbalance -= load as i64;
                            true
                        }
                    }
                    MigrationType::Util => {
                        let util = pelt::task_util_est(&self.tasks[p as usize].se.avg);
                        if util > env.imbalance as u64 {
                            false
                        } else {
                            env.imbalance -= util as i64;
                            true
                        }
                    }
                    MigrationType::Task => {
                        env.imbalance -= 1;
                        true
                    }
                    MigrationType::Misfit => {
                        if self.misfit_still(p, src) {
                            env.imbalance = 0;
                            true
                        } else {
                            false
                        }
                    }
                }
            };
            if !ok {
                // list_move to the head
                self.rqs[src].cfs_tasks.move_to_front(&mut self.tasks, p);
                continue;
            }
            self.detach_task(p, env);
            env.tasks.push(p);
            detached += 1;
            if CONFIG_PREEMPTION && env.idle == CpuIdleType::NewlyIdle {
                break;
            }
            if env.imbalance <= 0 {
                break;
            }
        }
        detached
    }

    /// `load_balance` (kernel/sched/fair.c, v5.6) for `this_cpu` at domain `sd`.
    pub(crate) fn load_balance(
        &mut self,
        this_cpu: usize,
        sd: SdId,
        idle: CpuIdleType,
        q: &mut EventQueue<Event>,
    ) -> LbOutcome {
        self.lb.nr_load_balance += 1;
        let d = &self.topo.domains[sd];
        let sd_parent = d.parent;
        let mut env = LbEnv {
            sd,
            src_cpu: this_cpu,
            dst_cpu: this_cpu,
            new_dst_cpu: this_cpu,
            idle,
            imbalance: 0,
            cpus: d.span.and(self.m.all_cpus()),
            dst_grpmask: self.topo.groups[d.groups[0]].span,
            flags: 0,
            loop_: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            loop_max: 0,
            migration_type: MigrationType::Load,
            busiest_type: GroupType::HasSpare,
            stopper: false,
            probed: 0,
            tasks: Vec::new(),
        };
        let mut cont = true;
        let mut moved = 0u32;
        let mut active_balance = false;
        enum Exit {
            Done,
            Balanced,
            AllPinned,
            OnePinned,
        }
        let exit = 'redo: loop {
            if !self.should_we_balance(&env) {
                cont = false;
                break 'redo Exit::Balanced;
            }
            let Some(g) = self.find_busiest_group(&mut env) else {
                break 'redo Exit::Balanced;
            };
            let Some(busiest) = self.find_busiest_queue(&env, g) else {
                break 'redo Exit::Balanced;
            };
            debug_assert_ne!(busiest, env.dst_cpu);
            env.src_cpu = busiest;
            moved = 0;
            if self.rqs[busiest].nr_running > 1 {
                env.flags |= LBF_ALL_PINNED;
                env.loop_max = self.tun.nr_migrate.min(self.rqs[busiest].nr_running);
                loop {
                    // more_balance
                    let now = self.now;
                    self.rq_update_clock(busiest, now);
                    let cur = self.detach_tasks(&mut env);
                    if cur > 0 {
                        let reason = balance_reason(env.busiest_type, env.migration_type);
                        let newidle = idle == CpuIdleType::NewlyIdle;
                        for p in std::mem::take(&mut env.tasks) {
                            let from = self.lb.balancing_cpu;
                            self.attach_task(p, busiest, env.dst_cpu, reason, newidle, from, q);
                        }
                        moved += cur;
                    }
                    if env.flags & LBF_NEED_BREAK != 0 {
                        env.flags &= !LBF_NEED_BREAK;
                        continue;
                    }
                    if env.flags & LBF_DST_PINNED != 0 && env.imbalance > 0 {
                        env.cpus.clear(env.dst_cpu);
                        env.dst_cpu = env.new_dst_cpu;
                        env.flags &= !LBF_DST_PINNED;
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue;
                    }
                    break;
                }
                if let Some(p) = sd_parent {
                    if env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                        let g0 = self.topo.domains[p].groups[0];
                        let s = self.topo.groups[g0].sgc;
                        self.topo.sgc[s].imbalance = true;
                    }
                }
                if env.flags & LBF_ALL_PINNED != 0 {
                    env.cpus.clear(busiest);
                    if !env.cpus.is_subset(&env.dst_grpmask) {
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    break 'redo Exit::AllPinned;
                }
            }
            if moved == 0 {
                if idle != CpuIdleType::NewlyIdle {
                    self.topo.domains[sd].nr_balance_failed += 1;
                }
                if self.need_active_balance(&env) {
                    let src_curr = self.rqs[busiest].curr;
                    let allowed = src_curr.is_some_and(|c| self.cpus_allowed(c).test(this_cpu));
                    if !allowed {
                        env.flags |= LBF_ALL_PINNED;
                        break 'redo Exit::OnePinned;
                    }
                    if !self.rqs[busiest].active_balance {
                        self.rqs[busiest].active_balance = true;
                        self.rqs[busiest].push_cpu = this_cpu;
                        active_balance = true;
                        let lat = self.m.cost.ipi_latency_ns;
                        q.push(
                            self.now + lat,
                            Event::ActiveBalance {
                                cpu: busiest as u32,
                            },
                        );
                    }
                    let d = &mut self.topo.domains[sd];
                    d.nr_balance_failed = d.cache_nice_tries + 1;
                }
            } else {
                self.topo.domains[sd].nr_balance_failed = 0;
            }
            let vol = self.voluntary_active_balance(&env);
            let d = &mut self.topo.domains[sd];
            if !active_balance || vol {
                d.balance_interval = d.min_interval;
            } else if d.balance_interval < d.max_interval {
                d.balance_interval *= 2;
            }
            break 'redo Exit::Done;
        };
        match exit {
            Exit::Done => {}
            Exit::Balanced | Exit::AllPinned | Exit::OnePinned => {
                if matches!(exit, Exit::Balanced) {
                    if let Some(p) = sd_parent {
                        if env.flags & LBF_ALL_PINNED == 0 {
                            let g0 = self.topo.domains[p].groups[0];
                            let s = self.topo.groups[g0].sgc;
                            self.topo.sgc[s].imbalance = false;
                        }
                    }
                }
                if !matches!(exit, Exit::OnePinned) {
                    self.topo.domains[sd].nr_balance_failed = 0;
                }
                moved = 0;
                if env.idle != CpuIdleType::NewlyIdle {
                    let d = &mut self.topo.domains[sd];
                    if (env.flags & LBF_ALL_PINNED != 0 && d.balance_interval < MAX_PINNED_INTERVAL)
                        || d.balance_interval < d.max_interval
                    {
                        d.balance_interval *= 2;
                    }
                }
            }
        }
        let cost_ns = self.m.cost.balance_per_cpu * env.probed as u64;
        self.emit(SchedEvent::FuncCall {
            func: Func::LoadBalance,
            cpu: this_cpu,
            probed: env.probed,
            cost_ns,
            skipped: 0,
        });
        LbOutcome {
            moved,
            probed: env.probed,
            cont,
        }
    }

    fn voluntary_active_balance(&self, env: &LbEnv) -> bool {
        let d = &self.topo.domains[env.sd];
        let src = &self.rqs[env.src_cpu];
        voluntary_active_balance_decide(
            env.idle,
            d.has(SD_ASYM_PACKING),
            env.dst_cpu,
            env.src_cpu,
            src.cfs.h_nr_running,
            self.capacity_of(env.src_cpu),
            src.cpu_capacity_orig,
            self.capacity_of(env.dst_cpu),
            d.imbalance_pct,
            env.migration_type,
        )
    }

    /// `need_active_balance` (kernel/sched/fair.c, v5.6).
    fn need_active_balance(&self, env: &LbEnv) -> bool {
        let d = &self.topo.domains[env.sd];
        self.voluntary_active_balance(env) || d.nr_balance_failed > d.cache_nice_tries + 2
    }

    /// `active_load_balance_cpu_stop` (kernel/sched/fair.c, v5.6): the stopper runs on
    /// `src` (the busiest CPU, awake), preempting its current task, and moves the
    /// first movable task from the tail of `cfs_tasks` to `push_cpu`.
    pub(crate) fn active_load_balance_cpu_stop(&mut self, src: usize, q: &mut EventQueue<Event>) {
        if !self.rqs[src].active_balance {
            return;
        }
        let target = self.rqs[src].push_cpu;
        let mut moved = None;
        // The stopper itself counts in nr_running.
        if self.rqs[src].nr_running + 1 > 1 && target != src {
            let sd = self.topo.domains_of(target).find(|&sd| {
                let d = &self.topo.domains[sd];
                d.has(SD_LOAD_BALANCE) && d.span.test(src)
            });
            if let Some(sd) = sd {
                let d = &self.topo.domains[sd];
                let mut env = LbEnv {
                    sd,
                    src_cpu: src,
                    dst_cpu: target,
                    new_dst_cpu: target,
                    idle: CpuIdleType::Idle,
                    imbalance: 0,
                    cpus: d.span,
                    dst_grpmask: self.topo.groups[d.groups[0]].span,
                    flags: LBF_DST_PINNED,
                    loop_: 0,
                    loop_break: SCHED_NR_MIGRATE_BREAK,
                    loop_max: 0,
                    migration_type: MigrationType::Load,
                    busiest_type: GroupType::HasSpare,
                    stopper: true,
                    probed: 0,
                    tasks: Vec::new(),
                };
                // detach_one_task: walk from the tail.
                let list: Vec<Pid> = self.rqs[src].cfs_tasks.iter_rev(&self.tasks).collect();
                for p in list {
                    if !self.can_migrate_task(p, &mut env) {
                        continue;
                    }
                    let now = self.now;
                    self.rq_update_clock(src, now);
                    self.deactivate_task(src, p, 0);
                    self.lb.migrating = Some(p);
                    self.set_task_cpu(p, target, false);
                    self.lb.migrating = None;
                    self.topo.domains[sd].nr_balance_failed = 0;
                    moved = Some(p);
                    break;
                }
            }
        }
        self.rqs[src].active_balance = false;
        // The stopper preempted the current task: src picks again.
        if self.rqs[src].curr.is_some() {
            self.schedule(src, q);
        } else {
            self.idle_loop_continue(src);
        }
        if let Some(p) = moved {
            self.attach_task(p, src, target, "active_balance", false, src, q);
        }
    }

    /// Handle the balancer's own events (`Event::ActiveBalance`, `Event::IlbKick`),
    /// after the target CPU has left any idle state.
    pub(crate) fn handle_balance_event(&mut self, ev: Event, q: &mut EventQueue<Event>) {
        match ev {
            Event::ActiveBalance { cpu } if self.awake_for(cpu as usize, ev, q) => {
                self.active_load_balance_cpu_stop(cpu as usize, q);
            }
            Event::IlbKick { cpu } if self.awake_for(cpu as usize, ev, q) => {
                self.nohz_ilb_kicked(cpu as usize, q);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
