//! Migrations (`sched_migrate_task`) by level between `orig_cpu` and `dest_cpu`,
//! per second of the window, split by mechanism: `set_task_cpu` between a task's
//! `sched_waking` and its `sched_wakeup` is a wakeup migration; every other one
//! (periodic, newidle, nohz-idle or active balancing, affinity) a balance one.

use super::{frac, Level, PerLevel};
use serde::Serialize;

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

/// The migration fractions and rates over the window.
pub(super) fn migration_rates(mg: &mut MigrationStats, window: (u64, u64)) {
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
