//! Sched-group statistics and classification, shared by the wakeup slow path
//! (`find_idlest_group`) and load balancing (`find_busiest_group`) — fair.c, v5.6
//! after Vincent Guittot's v5.5 rework.
//!
//! A group is summarised by its load, utilization, runnable counts, idle CPUs and
//! capacity ([`SgLbStats`], the kernel's `struct sg_lb_stats`), then put into one of
//! the ordered [`GroupType`]s — the order is the severity both paths compare:
//!
//! | order | type | when (first match wins, `group_classify`) |
//! |---|---|---|
//! | 5 | overloaded | more tasks than CPUs **and** `capacity × 100 < util × imbalance_pct` |
//! | 4 | imbalanced | the group's `sgc.imbalance` flag (tasks pinned elsewhere) |
//! | 3 | asym_packing | a higher-priority CPU could take the work (SD_ASYM_PACKING) |
//! | 2 | misfit_task | a task does not fit its CPU's capacity |
//! | 1 | fully_busy | no spare capacity: not (`nr < weight` or `capacity × 100 > util × pct`) |
//! | 0 | has_spare | otherwise |
//!
//! [`MigrationType`] says what an imbalance is measured in (load, util, tasks, misfit).

/// `enum group_type`, in kernel order (a larger value is more severe).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupType {
    HasSpare = 0,
    FullyBusy = 1,
    MisfitTask = 2,
    AsymPacking = 3,
    Imbalanced = 4,
    Overloaded = 5,
}

impl GroupType {
    /// The kernel's name without the `group_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            GroupType::HasSpare => "has_spare",
            GroupType::FullyBusy => "fully_busy",
            GroupType::MisfitTask => "misfit_task",
            GroupType::AsymPacking => "asym_packing",
            GroupType::Imbalanced => "imbalanced",
            GroupType::Overloaded => "overloaded",
        }
    }
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

impl MigrationType {
    pub fn name(self) -> &'static str {
        match self {
            MigrationType::Load => "migrate_load",
            MigrationType::Util => "migrate_util",
            MigrationType::Task => "migrate_task",
            MigrationType::Misfit => "migrate_misfit",
        }
    }
}

/// `struct sg_lb_stats` (v5.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgLbStats {
    /// `group_load × SCHED_CAPACITY_SCALE / group_capacity`, when computed.
    pub avg_load: u64,
    pub group_load: u64,
    pub group_capacity: u64,
    pub group_util: u64,
    pub sum_nr_running: u32,
    pub sum_h_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    pub group_asym_packing: bool,
    pub group_misfit_task_load: u64,
}

impl Default for SgLbStats {
    fn default() -> Self {
        SgLbStats {
            avg_load: 0,
            group_load: 0,
            group_capacity: 0,
            group_util: 0,
            sum_nr_running: 0,
            sum_h_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            group_type: GroupType::HasSpare,
            group_asym_packing: false,
            group_misfit_task_load: 0,
        }
    }
}

/// `group_has_capacity`: fewer tasks than CPUs, or utilization below capacity by
/// the imbalance margin.
pub(crate) fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    sgs.group_capacity * 100 > sgs.group_util * imbalance_pct as u64
}

/// `group_is_overloaded`: more tasks than CPUs and utilization above capacity by
/// the imbalance margin.
pub(crate) fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    sgs.group_capacity * 100 < sgs.group_util * imbalance_pct as u64
}

/// `group_classify`; `sg_imbalanced` is the group's `sgc.imbalance` flag.
pub(crate) fn group_classify(
    imbalance_pct: u32,
    sg_imbalanced: bool,
    sgs: &SgLbStats,
) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        GroupType::Overloaded
    } else if sg_imbalanced {
        GroupType::Imbalanced
    } else if sgs.group_asym_packing {
        GroupType::AsymPacking
    } else if sgs.group_misfit_task_load != 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(imbalance_pct, sgs) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `fits_capacity(cap, max)`: `cap` fits in `max` with the 1280/1024 (~80 %) margin.
#[inline]
pub(crate) fn fits_capacity(cap: u64, max: u64) -> bool {
    cap * 1280 < max * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sgs(nr: u32, weight: u32, cap: u64, util: u64) -> SgLbStats {
        SgLbStats {
            sum_nr_running: nr,
            group_weight: weight,
            group_capacity: cap,
            group_util: util,
            ..Default::default()
        }
    }

    #[test]
    fn classification_follows_kernel_order() {
        // 2 CPUs of 1024, imbalance_pct 117.
        // 3 tasks, util 1800: 2048*100 = 204800 < 1800*117 = 210600 -> overloaded.
        assert_eq!(
            group_classify(117, false, &sgs(3, 2, 2048, 1800)),
            GroupType::Overloaded
        );
        // 3 tasks, util 1700: 204800 < 198900 is false -> not overloaded; has capacity
        // because 204800 > 198900 -> has_spare despite nr > weight.
        assert_eq!(
            group_classify(117, false, &sgs(3, 2, 2048, 1700)),
            GroupType::HasSpare
        );
        // 2 tasks on 2 CPUs, util 1800: nr == weight and 204800 <= 210600 -> fully busy.
        assert_eq!(
            group_classify(117, false, &sgs(2, 2, 2048, 1800)),
            GroupType::FullyBusy
        );
        // 1 task: nr < weight -> has spare.
        assert_eq!(
            group_classify(117, false, &sgs(1, 2, 2048, 2000)),
            GroupType::HasSpare
        );
        // The imbalanced flag beats everything but overloaded.
        assert_eq!(
            group_classify(117, true, &sgs(2, 2, 2048, 1800)),
            GroupType::Imbalanced
        );
        assert_eq!(
            group_classify(117, true, &sgs(3, 2, 2048, 1800)),
            GroupType::Overloaded
        );
        let mut m = sgs(1, 2, 2048, 500);
        m.group_misfit_task_load = 300;
        assert_eq!(group_classify(117, false, &m), GroupType::MisfitTask);
        m.group_asym_packing = true;
        assert_eq!(group_classify(117, false, &m), GroupType::AsymPacking);
        assert!(
            GroupType::Overloaded > GroupType::Imbalanced
                && GroupType::FullyBusy > GroupType::HasSpare
        );
    }

    #[test]
    fn fits_capacity_margin() {
        // 80 % of 1024 = 819.2: 819 fits, 820 does not.
        assert!(fits_capacity(819, 1024));
        assert!(!fits_capacity(820, 1024));
    }
}
