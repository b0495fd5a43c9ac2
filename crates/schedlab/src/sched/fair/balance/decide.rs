//! The pure decision logic of load balancing (kernel/sched/fair.c, v5.6), as
//! functions over `sg_lb_stats`-like inputs so every cell of `find_busiest_group`'s
//! table and every `calculate_imbalance` branch can be tested on hand-set statistics:
//! `update_sd_pick_busiest`, `find_busiest_group` (after the statistics),
//! `calculate_imbalance` (with the v5.6 unsigned wraps), `task_hot`,
//! `voluntary_active_balance`, `get_sd_balance_interval` and the reason strings. The
//! decision table is in the parent module's notes.

use super::CpuIdleType;
use crate::sched::fair::group::{fits_capacity, GroupType, MigrationType, SgLbStats};
use crate::sched::fair::misfit::misfit_pick_refused;

/// `SCHED_CAPACITY_SCALE`.
const SCALE: u64 = 1024;

// ----------------------------------------------------------------------

/// A group as `update_sd_pick_busiest` sees it: its statistics and capacity record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupView {
    pub sgs: SgLbStats,
    pub min_capacity: u64,
    pub max_capacity: u64,
    pub asym_prefer_cpu: usize,
}

/// `arch_asym_cpu_priority` default: lower CPU numbers are preferred.
fn asym_prio(cpu: usize) -> i64 {
    -(cpu as i64)
}

/// `sched_asym_prefer(a, b)`.
pub(crate) fn sched_asym_prefer(a: usize, b: usize) -> bool {
    asym_prio(a) > asym_prio(b)
}

/// `update_sd_pick_busiest` (kernel/sched/fair.c, v5.6): should `sg` replace the
/// current busiest (`busiest`, `None` = the initial `{has_spare, idle = UINT_MAX}`)?
pub fn update_sd_pick_busiest(
    sd_asym_cpucapacity: bool,
    local: &GroupView,
    busiest: Option<&GroupView>,
    sg: &GroupView,
) -> bool {
    let s = &sg.sgs;
    let init = SgLbStats {
        idle_cpus: u32::MAX,
        ..Default::default()
    };
    let b = busiest.map(|b| b.sgs).unwrap_or(init);
    if s.sum_h_nr_running == 0 {
        return false;
    }
    // Misfit: only when the local group is >25 % bigger and has spare capacity.
    if misfit_pick_refused(s, sg.max_capacity, local.max_capacity, local.sgs.group_type) {
        return false;
    }
    if s.group_type > b.group_type {
        return true;
    }
    if s.group_type < b.group_type {
        return false;
    }
    match s.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            if s.avg_load <= b.avg_load {
                return false;
            }
        }
        GroupType::Imbalanced => return false,
        GroupType::AsymPacking => {
            let bp = busiest.map(|b| b.asym_prefer_cpu).unwrap_or(0);
            if sched_asym_prefer(sg.asym_prefer_cpu, bp) {
                return false;
            }
        }
        GroupType::MisfitTask => {
            if s.group_misfit_task_load < b.group_misfit_task_load {
                return false;
            }
        }
        GroupType::HasSpare => {
            if s.idle_cpus > b.idle_cpus
                || (s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running)
            {
                return false;
            }
        }
    }
    // A candidate with no more than one task per CPU, on bigger CPUs than the local
    // group's (`group_smaller_min_cpu_capacity(local, sg)`): moving its tasks to less
    // capable CPUs may harm throughput, so it is not the busiest.
    if sd_asym_cpucapacity
        && s.group_type <= GroupType::FullyBusy
        && fits_capacity(local.min_capacity, sg.min_capacity)
    {
        return false;
    }
    true
}

/// Which cell of the `find_busiest_group` table decided (module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FbgCell {
    EasNotOverutilized,
    NoBusiest,
    ForceMisfit,
    ForceAsymPacking,
    ForceImbalanced,
    LocalBusier,
    LocalAvgAboveBusiest,
    LocalAvgAboveDomain,
    WithinImbalancePct,
    ForcePreferSibling,
    NotIdle,
    IdleCpusClose,
    SingleTask,
    ForceDefault,
}

/// Which branch of `calculate_imbalance` produced the imbalance (module notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImbBranch {
    Misfit,
    AsymPacking,
    Imbalanced,
    SpareUtil,
    SpareUtilIdleTask,
    SpareNrDiff,
    SpareIdleCpus,
    SpareNumaSmall,
    Load,
}

/// The domain-wide inputs of `find_busiest_group` / `calculate_imbalance`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdInputs {
    pub idle: CpuIdleType,
    pub imbalance_pct: u32,
    /// The child domain has SD_PREFER_SIBLING.
    pub prefer_sibling: bool,
    pub sd_numa: bool,
    /// `IMB_NUMA_NR` (v5.18, 6.12 form): the domain's `imb_numa_nr`; `None` keeps
    /// v5.6's NUMA rule.
    pub imb_numa_nr: Option<u32>,
    pub total_load: u64,
    pub total_capacity: u64,
    /// Perf domains exist and `rd.overutilized` is clear.
    pub eas_not_overutilized: bool,
}

/// The outcome of `find_busiest_group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbgResult {
    pub cell: FbgCell,
    /// `Some` when the decision was to force; the imbalance may still be 0 (then the
    /// kernel returns no busiest group).
    pub imbalance: Option<(MigrationType, i64, ImbBranch)>,
}

impl FbgResult {
    /// Does the kernel return a busiest group (forced with a non-zero imbalance)?
    pub fn balance(&self) -> bool {
        matches!(self.imbalance, Some((_, i, _)) if i != 0)
    }
}

/// `find_busiest_group` after the statistics (kernel/sched/fair.c, v5.6): the decision
/// table of the module notes, then `calculate_imbalance` when forced. `local` gets its
/// `avg_load` filled in as the kernel does.
pub fn find_busiest_group_decide(
    local: &mut SgLbStats,
    busiest: Option<&SgLbStats>,
    inp: &SdInputs,
) -> FbgResult {
    let balanced = |cell| FbgResult {
        cell,
        imbalance: None,
    };
    if inp.eas_not_overutilized {
        return balanced(FbgCell::EasNotOverutilized);
    }
    let Some(b) = busiest else {
        return balanced(FbgCell::NoBusiest);
    };
    let force = |local: &mut SgLbStats, cell| FbgResult {
        cell,
        imbalance: Some(calculate_imbalance(local, b, inp)),
    };
    match b.group_type {
        GroupType::MisfitTask => return force(local, FbgCell::ForceMisfit),
        GroupType::AsymPacking => return force(local, FbgCell::ForceAsymPacking),
        GroupType::Imbalanced => return force(local, FbgCell::ForceImbalanced),
        _ => {}
    }
    if local.group_type > b.group_type {
        return balanced(FbgCell::LocalBusier);
    }
    if local.group_type == GroupType::Overloaded {
        if local.avg_load >= b.avg_load {
            return balanced(FbgCell::LocalAvgAboveBusiest);
        }
        let sds_avg = inp.total_load * SCALE / inp.total_capacity.max(1);
        if local.avg_load >= sds_avg {
            return balanced(FbgCell::LocalAvgAboveDomain);
        }
        if 100 * b.avg_load <= inp.imbalance_pct as u64 * local.avg_load {
            return balanced(FbgCell::WithinImbalancePct);
        }
    }
    if inp.prefer_sibling
        && local.group_type == GroupType::HasSpare
        && b.sum_nr_running > local.sum_nr_running + 1
    {
        return force(local, FbgCell::ForcePreferSibling);
    }
    if b.group_type != GroupType::Overloaded {
        if inp.idle == CpuIdleType::NotIdle {
            return balanced(FbgCell::NotIdle);
        }
        if b.group_weight > 1 && local.idle_cpus <= b.idle_cpus + 1 {
            return balanced(FbgCell::IdleCpusClose);
        }
        if b.sum_h_nr_running == 1 {
            return balanced(FbgCell::SingleTask);
        }
    }
    force(local, FbgCell::ForceDefault)
}

/// `calculate_imbalance` (kernel/sched/fair.c, v5.6), with the kernel's unsigned
/// arithmetic (see the module notes). Returns the migration type, `env->imbalance`
/// (a `long`) and the branch taken.
pub fn calculate_imbalance(
    local: &mut SgLbStats,
    busiest: &SgLbStats,
    inp: &SdInputs,
) -> (MigrationType, i64, ImbBranch) {
    match busiest.group_type {
        GroupType::MisfitTask => return (MigrationType::Misfit, 1, ImbBranch::Misfit),
        GroupType::AsymPacking => {
            return (
                MigrationType::Task,
                busiest.sum_h_nr_running as i64,
                ImbBranch::AsymPacking,
            )
        }
        GroupType::Imbalanced => return (MigrationType::Task, 1, ImbBranch::Imbalanced),
        _ => {}
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy {
            // Fill the local group's spare capacity.
            let imb = local.group_capacity.max(local.group_util) - local.group_util;
            if inp.idle != CpuIdleType::NotIdle && imb == 0 {
                return (MigrationType::Task, 1, ImbBranch::SpareUtilIdleTask);
            }
            return (MigrationType::Util, imb as i64, ImbBranch::SpareUtil);
        }
        if let Some(imb_numa_nr) = inp.imb_numa_nr {
            return spare_numa_imb_nr(local, busiest, inp, imb_numa_nr);
        }
        if busiest.group_weight == 1 || inp.prefer_sibling {
            // lsub_positive on unsigned int.
            let nr_diff = busiest.sum_nr_running.saturating_sub(local.sum_nr_running);
            return (
                MigrationType::Task,
                (nr_diff >> 1) as i64,
                ImbBranch::SpareNrDiff,
            );
        }
        // unsigned int subtraction, then max_t(long, 0, ...): a wrap stays positive.
        let d = local.idle_cpus.wrapping_sub(busiest.idle_cpus) >> 1;
        let mut imb = (d as i64).max(0);
        if inp.sd_numa && busiest.sum_nr_running <= 2 {
            imb = 0;
            return (MigrationType::Task, imb, ImbBranch::SpareNumaSmall);
        }
        return (MigrationType::Task, imb, ImbBranch::SpareIdleCpus);
    }
    let sds_avg = inp.total_load * SCALE / inp.total_capacity.max(1);
    if local.group_type < GroupType::Overloaded {
        local.avg_load = local.group_load * SCALE / local.group_capacity.max(1);
    }
    let a = busiest
        .avg_load
        .wrapping_sub(sds_avg)
        .wrapping_mul(busiest.group_capacity);
    let b = sds_avg
        .wrapping_sub(local.avg_load)
        .wrapping_mul(local.group_capacity);
    // unsigned long / 1024 < 2^54: fits in the long.
    let imb = (a.min(b) / SCALE) as i64;
    (MigrationType::Load, imb, ImbBranch::Load)
}

/// `adjust_numa_imbalance(imbalance, dst_running, imb_numa_nr)` (v6.12, all `int`):
/// no imbalance while the destination would run at most `imb_numa_nr` tasks and
/// the imbalance is at most `NUMA_IMBALANCE_MIN` (2); otherwise unchanged.
pub fn adjust_numa_imbalance(imbalance: i32, dst_running: i32, imb_numa_nr: i32) -> i32 {
    const NUMA_IMBALANCE_MIN: i32 = 2;
    // allow_numa_imbalance: running <= imb_numa_nr.
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// The has_spare, not-overloaded branches of `calculate_imbalance` in their v6.12
/// form (`IMB_NUMA_NR`): the task-count or idle-CPU difference, then, on SD_NUMA,
/// `adjust_numa_imbalance` with the destination's count `local.sum_nr_running + 1`,
/// then halved (v6.12 halves after the NUMA test; v5.6 halved first). The
/// prefer-sibling difference is `sibling_imbalance`'s for groups of equal core
/// counts (its core-ratio form for unequal ones, and its 0 for a busy balancing CPU,
/// are v6.6 and not modelled).
fn spare_numa_imb_nr(
    local: &SgLbStats,
    busiest: &SgLbStats,
    inp: &SdInputs,
    imb_numa_nr: u32,
) -> (MigrationType, i64, ImbBranch) {
    let (raw, branch) = if busiest.group_weight == 1 || inp.prefer_sibling {
        let nr_diff = busiest.sum_nr_running.saturating_sub(local.sum_nr_running);
        (nr_diff as i64, ImbBranch::SpareNrDiff)
    } else {
        // max_t(long, 0, unsigned int difference): a wrap stays positive here.
        let d = local.idle_cpus.wrapping_sub(busiest.idle_cpus);
        (d as i64, ImbBranch::SpareIdleCpus)
    };
    let mut imb = raw;
    let mut branch = branch;
    if inp.sd_numa {
        // The long is passed as an int and the int result stored back in the long.
        let a = adjust_numa_imbalance(
            raw as i32,
            local.sum_nr_running as i32 + 1,
            imb_numa_nr as i32,
        );
        if a == 0 && raw != 0 {
            branch = ImbBranch::SpareNumaSmall;
        }
        imb = a as i64;
    }
    (MigrationType::Task, imb >> 1, branch)
}

/// `task_hot` (kernel/sched/fair.c, v5.6) over its inputs: `delta` is
/// `rq_clock_task(src) − p.exec_start` (signed).
pub fn task_hot_decide(
    idle_policy: bool,
    cache_hot_buddy: bool,
    dst_nr_running: u32,
    is_buddy: bool,
    migration_cost: u64,
    delta: i64,
) -> bool {
    if idle_policy {
        return false;
    }
    if cache_hot_buddy && dst_nr_running > 0 && is_buddy {
        return true;
    }
    if migration_cost == 0 {
        return false;
    }
    delta < migration_cost as i64
}

/// `voluntary_active_balance` (kernel/sched/fair.c, v5.6) over its inputs.
#[allow(clippy::too_many_arguments)]
pub fn voluntary_active_balance_decide(
    idle: CpuIdleType,
    sd_asym_packing: bool,
    dst_cpu: usize,
    src_cpu: usize,
    src_h_nr_running: u32,
    src_capacity: u64,
    src_capacity_orig: u64,
    dst_capacity: u64,
    imbalance_pct: u32,
    migration_type: MigrationType,
) -> bool {
    let pct = imbalance_pct as u64;
    if idle != CpuIdleType::NotIdle && sd_asym_packing && sched_asym_prefer(dst_cpu, src_cpu) {
        return true;
    }
    if idle != CpuIdleType::NotIdle
        && src_h_nr_running == 1
        && src_capacity * pct < src_capacity_orig * 100
        && src_capacity * pct < dst_capacity * 100
    {
        return true;
    }
    migration_type == MigrationType::Misfit
}

/// `msecs_to_jiffies` (rounding up).
pub fn msecs_to_jiffies(ms: u64, hz: u64) -> u64 {
    (ms * hz).div_ceil(1000)
}

/// `get_sd_balance_interval` (kernel/sched/fair.c, v5.6), in jiffies.
pub fn sd_balance_interval(
    balance_interval_ms: u64,
    busy_factor: u32,
    busy: bool,
    hz: u64,
    max_lb_interval: u64,
) -> u64 {
    let mut iv = balance_interval_ms;
    if busy {
        iv *= busy_factor as u64;
    }
    msecs_to_jiffies(iv, hz).clamp(1, max_lb_interval.max(1))
}

/// The placement reason of a balance migration: `balance:<group_type>:<migration_type>`.
pub fn balance_reason(g: GroupType, m: MigrationType) -> &'static str {
    const R: [[&str; 4]; 6] = [
        [
            "balance:has_spare:migrate_load",
            "balance:has_spare:migrate_util",
            "balance:has_spare:migrate_task",
            "balance:has_spare:migrate_misfit",
        ],
        [
            "balance:fully_busy:migrate_load",
            "balance:fully_busy:migrate_util",
            "balance:fully_busy:migrate_task",
            "balance:fully_busy:migrate_misfit",
        ],
        [
            "balance:misfit_task:migrate_load",
            "balance:misfit_task:migrate_util",
            "balance:misfit_task:migrate_task",
            "balance:misfit_task:migrate_misfit",
        ],
        [
            "balance:asym_packing:migrate_load",
            "balance:asym_packing:migrate_util",
            "balance:asym_packing:migrate_task",
            "balance:asym_packing:migrate_misfit",
        ],
        [
            "balance:imbalanced:migrate_load",
            "balance:imbalanced:migrate_util",
            "balance:imbalanced:migrate_task",
            "balance:imbalanced:migrate_misfit",
        ],
        [
            "balance:overloaded:migrate_load",
            "balance:overloaded:migrate_util",
            "balance:overloaded:migrate_task",
            "balance:overloaded:migrate_misfit",
        ],
    ];
    let mi = match m {
        MigrationType::Load => 0,
        MigrationType::Util => 1,
        MigrationType::Task => 2,
        MigrationType::Misfit => 3,
    };
    R[g as usize][mi]
}
