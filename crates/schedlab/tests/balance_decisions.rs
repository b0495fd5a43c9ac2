//! Hand-computed cases for the pure decision logic of load balancing (v5.6):
//! one test per cell of the `find_busiest_group` table, per `calculate_imbalance`
//! branch (the unsigned wraps included), `update_sd_pick_busiest`, `task_hot`,
//! `voluntary_active_balance` and the balance interval.

use schedlab::sched::fair::balance::*;
use schedlab::sched::fair::group::{GroupType, MigrationType, SgLbStats};

#[allow(clippy::too_many_arguments)]
fn sg(
    t: GroupType,
    nr: u32,
    weight: u32,
    cap: u64,
    util: u64,
    load: u64,
    idle: u32,
    avg: u64,
) -> SgLbStats {
    SgLbStats {
        avg_load: avg,
        group_load: load,
        group_capacity: cap,
        group_util: util,
        sum_nr_running: nr,
        sum_h_nr_running: nr,
        idle_cpus: idle,
        group_weight: weight,
        group_type: t,
        group_asym_packing: false,
        group_misfit_task_load: 0,
    }
}

fn inp(idle: CpuIdleType, prefer_sibling: bool, total_load: u64, total_cap: u64) -> SdInputs {
    SdInputs {
        idle,
        imbalance_pct: 117,
        prefer_sibling,
        sd_numa: false,
        imb_numa_nr: None,
        total_load,
        total_capacity: total_cap,
        eas_not_overutilized: false,
    }
}

use CpuIdleType::*;
use GroupType::*;

fn decide(local: SgLbStats, busiest: Option<SgLbStats>, i: &SdInputs) -> FbgResult {
    let mut l = local;
    find_busiest_group_decide(&mut l, busiest.as_ref(), i)
}

fn spare_local() -> SgLbStats {
    // 2 CPUs, both idle.
    sg(HasSpare, 0, 2, 2048, 0, 0, 2, 0)
}

#[test]
fn cell_eas_not_overutilized_is_balanced() {
    let mut i = inp(Idle, false, 0, 2048);
    i.eas_not_overutilized = true;
    let b = sg(Overloaded, 4, 2, 2048, 2048, 4096, 0, 2048);
    let r = decide(spare_local(), Some(b), &i);
    assert_eq!(r.cell, FbgCell::EasNotOverutilized);
    assert!(!r.balance());
}

#[test]
fn cell_no_busiest_is_balanced() {
    let r = decide(spare_local(), None, &inp(Idle, false, 0, 2048));
    assert_eq!(r.cell, FbgCell::NoBusiest);
    assert!(r.imbalance.is_none());
}

#[test]
fn cells_forced_types_and_their_imbalance_branches() {
    let i = inp(NotIdle, false, 0, 4096);
    let mut b = sg(MisfitTask, 1, 2, 2048, 900, 800, 1, 0);
    b.group_misfit_task_load = 800;
    let r = decide(spare_local(), Some(b), &i);
    assert_eq!(r.cell, FbgCell::ForceMisfit);
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Misfit, 1, ImbBranch::Misfit))
    );

    let b = sg(AsymPacking, 3, 2, 2048, 900, 800, 0, 0);
    let r = decide(spare_local(), Some(b), &i);
    assert_eq!(r.cell, FbgCell::ForceAsymPacking);
    // asym_packing moves all of the group's h_nr_running tasks.
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Task, 3, ImbBranch::AsymPacking))
    );

    // Even a local group busier than the busiest one: imbalanced is forced first.
    let local = sg(Overloaded, 5, 2, 2048, 2048, 5000, 0, 2500);
    let b = sg(Imbalanced, 2, 2, 2048, 1000, 1000, 0, 0);
    let r = decide(local, Some(b), &i);
    assert_eq!(r.cell, FbgCell::ForceImbalanced);
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Task, 1, ImbBranch::Imbalanced))
    );
}

#[test]
fn cell_local_busier_is_balanced() {
    let local = sg(Overloaded, 5, 2, 2048, 2048, 5000, 0, 2500);
    let b = sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0);
    let r = decide(local, Some(b), &inp(Idle, true, 7000, 4096));
    assert_eq!(r.cell, FbgCell::LocalBusier);
}

#[test]
fn cells_both_overloaded() {
    let i = |tl| inp(NotIdle, false, tl, 2048);
    // local avg 1500 >= busiest avg 1400.
    let local = sg(Overloaded, 3, 1, 1024, 1024, 1500, 0, 1500);
    let b = sg(Overloaded, 3, 1, 1024, 1024, 1400, 0, 1400);
    assert_eq!(
        decide(local, Some(b), &i(2900)).cell,
        FbgCell::LocalAvgAboveBusiest
    );
    // local 1200 < busiest 1600, but the domain average is 1100*1024/2048 = 550.
    let local = sg(Overloaded, 3, 1, 1024, 1024, 1200, 0, 1200);
    let b = sg(Overloaded, 3, 1, 1024, 1024, 1600, 0, 1600);
    assert_eq!(
        decide(local, Some(b), &i(1100)).cell,
        FbgCell::LocalAvgAboveDomain
    );
    // domain average 2200*1024/2048 = 1100 > local 1000; 100*1100 <= 117*1000.
    let local = sg(Overloaded, 3, 1, 1024, 1024, 1000, 0, 1000);
    let b = sg(Overloaded, 3, 1, 1024, 1024, 1100, 0, 1100);
    assert_eq!(
        decide(local, Some(b), &i(2200)).cell,
        FbgCell::WithinImbalancePct
    );
    // busiest 1300: 130000 > 117000 -> forced, load branch: sds avg = 2400*1024/2048 =
    // 1200; min((1300-1200)*1024, (1200-1000)*1024)/1024 = 100.
    let b = sg(Overloaded, 3, 1, 1024, 1024, 1300, 0, 1300);
    let r = decide(local, Some(b), &i(2400));
    assert_eq!(r.cell, FbgCell::ForceDefault);
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Load, 100, ImbBranch::Load))
    );
}

#[test]
fn cell_prefer_sibling_forces_and_spreads_by_count() {
    let b = sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0);
    let r = decide(spare_local(), Some(b), &inp(NotIdle, true, 2000, 4096));
    assert_eq!(r.cell, FbgCell::ForcePreferSibling);
    // (2 - 0) >> 1 = 1 task.
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Task, 1, ImbBranch::SpareNrDiff))
    );
    // Without prefer_sibling the same stats on a busy CPU are balanced.
    let r = decide(spare_local(), Some(b), &inp(NotIdle, false, 2000, 4096));
    assert_eq!(r.cell, FbgCell::NotIdle);
}

#[test]
fn cell_idle_cpus_close_is_balanced() {
    // local has 1 idle CPU, busiest 0: 1 <= 0 + 1.
    let local = sg(HasSpare, 1, 2, 2048, 1000, 1000, 1, 0);
    let b = sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0);
    let r = decide(local, Some(b), &inp(Idle, false, 3000, 4096));
    assert_eq!(r.cell, FbgCell::IdleCpusClose);
}

#[test]
fn cell_single_task_is_balanced() {
    // A one-CPU busiest group with one task.
    let local = sg(HasSpare, 0, 1, 1024, 0, 0, 1, 0);
    let b = sg(FullyBusy, 1, 1, 1024, 1000, 1000, 0, 0);
    let r = decide(local, Some(b), &inp(Idle, false, 1000, 2048));
    assert_eq!(r.cell, FbgCell::SingleTask);
}

#[test]
fn cell_default_force_evens_idle_cpus() {
    // busiest: 4 CPUs, 4 small tasks, no idle CPU; local: 4 idle CPUs.
    let local = sg(HasSpare, 0, 4, 4096, 0, 0, 4, 0);
    let b = sg(HasSpare, 4, 4, 4096, 800, 800, 0, 0);
    let r = decide(local, Some(b), &inp(Idle, false, 800, 8192));
    assert_eq!(r.cell, FbgCell::ForceDefault);
    // (4 - 0) >> 1 = 2.
    assert_eq!(
        r.imbalance,
        Some((MigrationType::Task, 2, ImbBranch::SpareIdleCpus))
    );
    assert!(r.balance());
}

fn calc(local: SgLbStats, busiest: SgLbStats, i: &SdInputs) -> (MigrationType, i64, ImbBranch) {
    let mut l = local;
    calculate_imbalance(&mut l, &busiest, i)
}

#[test]
fn imbalance_spare_util_and_idle_task_fallback() {
    let b = sg(Overloaded, 4, 2, 2048, 2048, 4000, 0, 2000);
    let local = sg(HasSpare, 1, 2, 2048, 500, 500, 1, 0);
    assert_eq!(
        calc(local, b, &inp(NotIdle, false, 4500, 4096)),
        (MigrationType::Util, 1548, ImbBranch::SpareUtil)
    );
    // util above capacity: max(2048, 2100) - 2100 = 0 -> one task when idle ...
    let local = sg(HasSpare, 1, 2, 2048, 2100, 500, 1, 0);
    assert_eq!(
        calc(local, b, &inp(Idle, false, 4500, 4096)),
        (MigrationType::Task, 1, ImbBranch::SpareUtilIdleTask)
    );
    // ... and nothing on a busy CPU.
    assert_eq!(
        calc(local, b, &inp(NotIdle, false, 4500, 4096)),
        (MigrationType::Util, 0, ImbBranch::SpareUtil)
    );
}

#[test]
fn imbalance_spare_nr_diff_is_clamped_at_zero() {
    // busiest single CPU with 1 task, local with 3: lsub_positive gives 0.
    let b = sg(FullyBusy, 1, 1, 1024, 1000, 1000, 0, 0);
    let local = sg(HasSpare, 3, 4, 4096, 1000, 1000, 1, 0);
    assert_eq!(
        calc(local, b, &inp(Idle, false, 2000, 5120)),
        (MigrationType::Task, 0, ImbBranch::SpareNrDiff)
    );
    // busiest with 5, local with 0: 5 >> 1 = 2.
    let b = sg(FullyBusy, 5, 1, 1024, 1000, 5000, 0, 0);
    let local = sg(HasSpare, 0, 4, 4096, 0, 0, 4, 0);
    assert_eq!(
        calc(local, b, &inp(Idle, false, 5000, 5120)),
        (MigrationType::Task, 2, ImbBranch::SpareNrDiff)
    );
}

#[test]
fn imbalance_spare_idle_cpus_unsigned_wrap() {
    // local.idle_cpus - busiest.idle_cpus in unsigned int: 0 - 2 wraps to
    // 4294967294, >> 1 = 2147483647, which max_t(long, 0, ...) keeps.
    let b = sg(HasSpare, 2, 4, 4096, 300, 300, 2, 0);
    let local = sg(HasSpare, 4, 4, 4096, 300, 300, 0, 0);
    assert_eq!(
        calc(local, b, &inp(Idle, false, 600, 8192)),
        (MigrationType::Task, 2_147_483_647, ImbBranch::SpareIdleCpus)
    );
}

#[test]
fn imbalance_numa_small_imbalance_is_ignored() {
    let mut i = inp(Idle, false, 600, 8192);
    i.sd_numa = true;
    let local = sg(HasSpare, 0, 4, 4096, 0, 0, 4, 0);
    let b = sg(HasSpare, 2, 4, 4096, 300, 300, 2, 0);
    assert_eq!(
        calc(local, b, &i),
        (MigrationType::Task, 0, ImbBranch::SpareNumaSmall)
    );
    // 3 tasks: (4 - 1) >> 1 = 1 stays.
    let b = sg(HasSpare, 3, 4, 4096, 300, 300, 1, 0);
    assert_eq!(
        calc(local, b, &i),
        (MigrationType::Task, 1, ImbBranch::SpareIdleCpus)
    );
}

#[test]
fn imbalance_load_with_local_above_average_wraps_to_the_other_term() {
    // local fully busy: avg = 1200*1024/1024 = 1200; domain avg = 2000*1024/2048 = 1000.
    // b = (1000 - 1200) wraps; a = (1500 - 1000)*1024; min = a -> 500.
    let local = sg(FullyBusy, 1, 1, 1024, 1000, 1200, 0, 0);
    let b = sg(Overloaded, 3, 1, 1024, 1024, 1500, 0, 1500);
    let mut l = local;
    let r = calculate_imbalance(&mut l, &b, &inp(NotIdle, false, 2000, 2048));
    assert_eq!(r, (MigrationType::Load, 500, ImbBranch::Load));
    assert_eq!(l.avg_load, 1200, "local avg_load filled in");
}

#[test]
fn imbalance_load_with_both_terms_negative_is_huge() {
    // busiest fully busy (avg_load never computed: 0), local above the average:
    // a = (0 - 1000)*1024 and b = (1000 - 1200)*1024, both modulo 2^64;
    // min = 2^64 - 1024000, / 1024 = 2^54 - 1000.
    let local = sg(FullyBusy, 1, 1, 1024, 1000, 1200, 0, 0);
    let b = sg(FullyBusy, 1, 1, 1024, 1000, 800, 0, 0);
    let r = calc(local, b, &inp(Idle, false, 2000, 2048));
    assert_eq!(
        r,
        (MigrationType::Load, (1i64 << 54) - 1000, ImbBranch::Load)
    );
}

fn view(s: SgLbStats, minc: u64, maxc: u64) -> GroupView {
    GroupView {
        sgs: s,
        min_capacity: minc,
        max_capacity: maxc,
        asym_prefer_cpu: 0,
    }
}

#[test]
fn pick_busiest_rules() {
    let local = view(spare_local(), 1024, 1024);
    let fb = view(sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0), 1024, 1024);
    let ov = view(sg(Overloaded, 3, 2, 2048, 2048, 3000, 0, 1500), 1024, 1024);
    // Nothing runnable: never.
    let empty = view(sg(HasSpare, 0, 2, 2048, 0, 0, 2, 0), 1024, 1024);
    assert!(!update_sd_pick_busiest(false, &local, None, &empty));
    // The first has_spare group beats the initial {has_spare, idle = UINT_MAX}.
    let hs = view(sg(HasSpare, 1, 2, 2048, 500, 500, 1, 0), 1024, 1024);
    assert!(update_sd_pick_busiest(false, &local, None, &hs));
    // Higher type wins, lower loses.
    assert!(update_sd_pick_busiest(false, &local, Some(&fb), &ov));
    assert!(!update_sd_pick_busiest(false, &local, Some(&ov), &fb));
    // Same type overloaded: strictly higher avg_load.
    let ov2 = view(sg(Overloaded, 3, 2, 2048, 2048, 3000, 0, 1500), 1024, 1024);
    assert!(!update_sd_pick_busiest(false, &local, Some(&ov), &ov2));
    let ov3 = view(sg(Overloaded, 4, 2, 2048, 2048, 4000, 0, 2000), 1024, 1024);
    assert!(update_sd_pick_busiest(false, &local, Some(&ov), &ov3));
    // fully_busy: avg_load is 0 for both, so the first one stays.
    assert!(!update_sd_pick_busiest(false, &local, Some(&fb), &fb));
    // has_spare: fewer idle CPUs wins; equal idle needs more tasks.
    let hs0 = view(sg(HasSpare, 1, 2, 2048, 500, 500, 0, 0), 1024, 1024);
    assert!(update_sd_pick_busiest(false, &local, Some(&hs), &hs0));
    assert!(!update_sd_pick_busiest(false, &local, Some(&hs0), &hs));
    let hs2 = view(sg(HasSpare, 2, 2, 2048, 500, 500, 1, 0), 1024, 1024);
    assert!(update_sd_pick_busiest(false, &local, Some(&hs), &hs2));
    assert!(!update_sd_pick_busiest(false, &local, Some(&hs2), &hs));
    // Asymmetric capacity (only reached for equal types): a has_spare group of big
    // CPUs is refused by a little local group, fits(local.min 446, g.min 1024) ...
    let little_local = view(spare_local(), 446, 446);
    let big_hs = view(sg(HasSpare, 2, 2, 2048, 500, 500, 0, 0), 1024, 1024);
    assert!(!update_sd_pick_busiest(
        true,
        &little_local,
        Some(&hs),
        &big_hs
    ));
    assert!(update_sd_pick_busiest(
        false,
        &little_local,
        Some(&hs),
        &big_hs
    ));
    // ... while little CPUs may be pulled onto big ones: fits(1024, 446) is false.
    let little_hs = view(sg(HasSpare, 2, 2, 892, 500, 500, 0, 0), 446, 446);
    assert!(update_sd_pick_busiest(true, &local, Some(&hs), &little_hs));
    // A higher type returns before the capacity test.
    let big_fb = view(sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0), 1024, 1024);
    assert!(update_sd_pick_busiest(
        true,
        &little_local,
        Some(&hs),
        &big_fb
    ));
    // Misfit: only onto a >25 % bigger local group with spare capacity.
    let mut m = sg(MisfitTask, 1, 2, 892, 440, 800, 1, 0);
    m.group_misfit_task_load = 800;
    let misfit = view(m, 446, 446);
    assert!(update_sd_pick_busiest(true, &local, None, &misfit));
    assert!(!update_sd_pick_busiest(true, &little_local, None, &misfit));
    let busy_local = view(sg(FullyBusy, 2, 2, 2048, 2000, 2000, 0, 0), 1024, 1024);
    assert!(!update_sd_pick_busiest(true, &busy_local, None, &misfit));
}

#[test]
fn task_hot_cases() {
    let mc = 500_000;
    // SCHED_IDLE tasks are never hot.
    assert!(!task_hot_decide(true, true, 1, true, mc, 0));
    // A buddy is hot when dst has something to run.
    assert!(task_hot_decide(false, true, 1, true, mc, 10_000_000));
    assert!(!task_hot_decide(false, true, 0, true, mc, 10_000_000));
    assert!(!task_hot_decide(false, false, 1, true, mc, 10_000_000));
    // Ran within sysctl_sched_migration_cost: hot; exactly at it: cold.
    assert!(task_hot_decide(false, true, 0, false, mc, 499_999));
    assert!(!task_hot_decide(false, true, 0, false, mc, 500_000));
    // migration_cost 0: never hot.
    assert!(!task_hot_decide(false, true, 0, false, 0, 0));
}

#[test]
fn voluntary_active_balance_cases() {
    // Misfit migration: always voluntary.
    assert!(voluntary_active_balance_decide(
        NotIdle,
        false,
        0,
        1,
        1,
        1024,
        1024,
        1024,
        117,
        MigrationType::Misfit
    ));
    // Full capacity, load migration: not voluntary.
    assert!(!voluntary_active_balance_decide(
        Idle,
        false,
        0,
        1,
        1,
        1024,
        1024,
        1024,
        117,
        MigrationType::Load
    ));
    // src pressured (800*117 < 1024*100) and smaller than dst (800*117 < 1024*100).
    assert!(voluntary_active_balance_decide(
        Idle,
        false,
        0,
        1,
        1,
        800,
        1024,
        1024,
        117,
        MigrationType::Load
    ));
    // ... but only when the balancing CPU is idle.
    assert!(!voluntary_active_balance_decide(
        NotIdle,
        false,
        0,
        1,
        1,
        800,
        1024,
        1024,
        117,
        MigrationType::Load
    ));
    // asym packing: dst 0 preferred over src 1.
    assert!(voluntary_active_balance_decide(
        Idle,
        true,
        0,
        1,
        2,
        1024,
        1024,
        1024,
        117,
        MigrationType::Task
    ));
}

#[test]
fn balance_interval_in_jiffies() {
    // HZ 250: 8 ms idle -> 2 jiffies; busy x32 = 256 ms -> 64 jiffies.
    assert_eq!(sd_balance_interval(8, 32, false, 250, 200), 2);
    assert_eq!(sd_balance_interval(8, 32, true, 250, 200), 64);
    // 1 ms rounds up to one jiffy; never below 1.
    assert_eq!(sd_balance_interval(1, 32, false, 250, 200), 1);
    assert_eq!(sd_balance_interval(0, 32, false, 250, 200), 1);
    // 44 ms x 32 = 1408 ms = 352 jiffies, clamped to max_load_balance_interval.
    assert_eq!(sd_balance_interval(44, 32, true, 250, 2200), 352);
    assert_eq!(sd_balance_interval(44, 32, true, 250, 200), 200);
    assert_eq!(msecs_to_jiffies(5, 1000), 5);
    assert_eq!(msecs_to_jiffies(5, 250), 2);
}

#[test]
fn reason_strings() {
    assert_eq!(
        balance_reason(GroupType::Overloaded, MigrationType::Load),
        "balance:overloaded:migrate_load"
    );
    assert_eq!(
        balance_reason(GroupType::HasSpare, MigrationType::Task),
        "balance:has_spare:migrate_task"
    );
    assert_eq!(
        balance_reason(GroupType::MisfitTask, MigrationType::Misfit),
        "balance:misfit_task:migrate_misfit"
    );
    for g in [
        HasSpare,
        FullyBusy,
        MisfitTask,
        AsymPacking,
        Imbalanced,
        Overloaded,
    ] {
        for m in [
            MigrationType::Load,
            MigrationType::Util,
            MigrationType::Task,
            MigrationType::Misfit,
        ] {
            assert_eq!(
                balance_reason(g, m),
                format!("balance:{}:{}", g.name(), m.name())
            );
        }
    }
}
