//! PELT: per-entity load tracking (kernel/sched/pelt.c, pelt.h, sched-pelt.h and the
//! util_est and new-task parts of fair.c, Linux v5.6).
//!
//! **The signal.** Time is cut into 1024 ns units and 1024-unit *periods* (~1 ms). A
//! unit that lies `n` period boundaries in the past counts `y^n`, with `y^32 = 1/2`.
//! For a 0/1 signal `s` (runnable, running) the kernel keeps the decayed sum
//!
//! ```text
//!   sum = Σ_units s(u) · y^(periods since u)          (units of the current period count 1)
//!   avg = weight · sum / (LOAD_AVG_MAX - 1024 + period_contrib)
//! ```
//!
//! where `period_contrib` is the number of units already spent in the current period and
//! `LOAD_AVG_MAX = 47742` is the integer limit of `S <- floor(S·y) + 1024`. The divider is
//! the largest sum an always-on signal can have at this position in the period, so an
//! always-on signal reads ~`weight` and one on half the time ~`weight/2`.
//!
//! **Integer arithmetic, as in v5.6.** Decaying by `y^n` is a right shift by `n/32`
//! followed by a 32-bit fixed-point multiply with `floor((2^32-1)·y^(n%32))` from a
//! 32-entry table; beyond `32·63` periods everything is 0. An update that crosses `p`
//! boundaries adds three segments: the rest of the old period decayed by `y^p`, the
//! `p-1` full periods in between as `LOAD_AVG_MAX - LOAD_AVG_MAX·y^p - 1024`, and the
//! units of the new period at weight 1. `load_sum`/`runnable_load_sum` take `load`/
//! `runnable` times that contribution (flags 0/1 for an entity, weights for a cfs_rq),
//! `util_sum` (a `u32` in v5.6) takes `contrib << SCHED_CAPACITY_SHIFT` while running.
//! The averages are recomputed only when a boundary was crossed.
//!
//! **Invariance (pelt.h).** The rq's PELT clock advances by `delta·cap_cpu/1024·cap_freq/1024`
//! while the CPU runs something and is pulled back to `clock_task` when it is idle, so
//! the idle gap absorbs the time a slow CPU needed on top. A rq whose util_sum was already
//! saturated has no idle time to give back: that gap is accumulated as `lost_idle_time`
//! and hidden from `rq_clock_pelt`. Consequence (true of the kernel since v5.1): a task
//! with idle time reads the work it did in units of the biggest CPU at top frequency,
//! but an *always*-running task converges to 1024 on any CPU, only more slowly on a
//! slow one.
//!
//! **util_est** (UTIL_EST, UTIL_EST_FASTUP): at each sleep a task records its util_avg
//! (`enqueued`) and an EWMA with weight 1/4 (`ewma`), jumping straight up when util grew
//! (FASTUP); updates within 1 % (10) of the EWMA, or above the CPU's capacity, are
//! skipped. The rq keeps the sum of its runnable tasks' estimates. v5.6 marks a stored
//! `enqueued` with its lowest bit ([`UTIL_AVG_UNCHANGED`]) until PELT next crosses a period
//! for the task; that bit is how the kernel (and this model) skips an update when
//! util_avg did not move, and it makes estimates read up to 1 higher. Kept faithfully.
//!
//! **Gaps.** No task groups (so no propagation, `h_load` is the caller's), no RT/DL/IRQ
//! signals (callers may pass their util_sum to `update_idle_rq_clock_pelt`), no
//! cfs_rq throttling in the clock. The attach/detach/remove and runnable-load helpers
//! here are the arithmetic only; when to call them (enqueue, migration, fork, the
//! wakee's decay to the old cfs_rq's last update) is the fair class's.

/// Half-life of the decay, in periods: `y^LOAD_AVG_PERIOD = 1/2`.
pub const LOAD_AVG_PERIOD: u32 = 32;
/// Integer limit of `S <- floor(S·y) + 1024` (the maximum of a decayed sum).
pub const LOAD_AVG_MAX: u64 = 47742;
/// Fixed-point shift of the capacity scale.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// Capacity of the biggest CPU at its top frequency.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// Lowest bit of `util_est.enqueued`: set when stored, cleared when PELT next moves.
pub const UTIL_AVG_UNCHANGED: u32 = 0x1;
/// util_est EWMA weight is `1/(1 << UTIL_EST_WEIGHT_SHIFT)`.
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// util_est skips updates within this margin of the EWMA (`SCHED_CAPACITY_SCALE / 100`).
pub const UTIL_EST_MARGIN: i64 = (SCHED_CAPACITY_SCALE / 100) as i64;
/// Extra fixed-point bits of a weight inside the kernel on 64-bit (`scale_load`).
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;

/// `floor((2^32 - 1) · y^k)` for `k = 0..32`, `y = 0.5^(1/32)` (the kernel's
/// `runnable_avg_yN_inv`, regenerated and checked by `yn_inv_table_matches_definition`).
const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// The decaying sums and averages of one entity or cfs_rq (`struct sched_avg`, v5.6).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SchedAvg {
    /// Time (rq_clock_pelt, ns) up to which the sums are accounted; advances in 1024 ns steps.
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_load_sum: u64,
    pub util_sum: u32,
    /// Units (1024 ns) already accounted in the current period, `0..1024`.
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_load_avg: u64,
    pub util_avg: u64,
    pub util_est: UtilEst,
}

/// `struct util_est` (v5.6): last sampled utilization and its EWMA.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UtilEst {
    pub enqueued: u32,
    pub ewma: u32,
}

/// Scale `val` by `y^n` (pelt.c `decay_load`, v5.6): 0 beyond `32·63` periods, a right
/// shift per 32 periods, then a 32.32 fixed-point multiply by the table entry.
pub(crate) fn decay_load(val: u64, n: u64) -> u64 {
    if n > (LOAD_AVG_PERIOD as u64) * 63 {
        return 0;
    }
    let mut val = val;
    let mut local_n = n as u32;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * RUNNABLE_AVG_YN_INV[local_n as usize] as u128) >> 32) as u64
}

/// Contribution of an update crossing `periods >= 1` boundaries (pelt.c
/// `__accumulate_pelt_segments`, v5.6): `d1` units finishing the old period decayed by
/// `y^periods`, `periods - 1` full periods, and `d3` units of the new period at weight 1.
#[doc(alias = "__accumulate_pelt_segments")]
pub(crate) fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(d1 as u64, periods) as u32;
    let c2 = (LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024) as u32;
    c1 + c2 + d3
}

/// Add `delta` units to the sums (pelt.c `accumulate_sum`, v5.6). Returns the number of
/// period boundaries crossed.
fn accumulate_sum(delta: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: u32) -> u64 {
    let mut contrib = delta as u32; // only used as-is when no boundary is crossed (< 1024)
    let mut delta = delta + sa.period_contrib as u64;
    let periods = delta / 1024;
    if periods > 0 {
        sa.load_sum = decay_load(sa.load_sum, periods);
        sa.runnable_load_sum = decay_load(sa.runnable_load_sum, periods);
        sa.util_sum = decay_load(sa.util_sum as u64, periods) as u32;
        delta %= 1024;
        contrib = accumulate_pelt_segments(periods, 1024 - sa.period_contrib, delta as u32);
    }
    sa.period_contrib = delta as u32;
    if load != 0 {
        sa.load_sum += load * contrib as u64;
    }
    if runnable != 0 {
        sa.runnable_load_sum += runnable * contrib as u64;
    }
    if running != 0 {
        sa.util_sum += contrib << SCHED_CAPACITY_SHIFT;
    }
    periods
}

/// Account the time from `sa.last_update_time` to `now` (pelt.c `___update_load_sum`,
/// v5.6). `load`/`runnable` are 0/1 flags for an entity and weights (scaled down, nice 0
/// = 1024) for a cfs_rq; `running` is 0/1. Time goes in whole 1024 ns units; the
/// remainder waits for the next update. With `load == 0` nothing is added (blocked).
/// A clock that went backwards resets `last_update_time`. Returns whether a period
/// boundary was crossed, i.e. whether the averages need recomputing.
#[doc(alias = "___update_load_sum")]
pub(crate) fn update_load_sum(
    now: u64,
    sa: &mut SchedAvg,
    load: u64,
    runnable: u64,
    running: u32,
) -> bool {
    if now < sa.last_update_time {
        sa.last_update_time = now;
        return false;
    }
    let delta = (now - sa.last_update_time) >> 10;
    if delta == 0 {
        return false;
    }
    sa.last_update_time += delta << 10;
    let (runnable, running) = if load == 0 {
        (0, 0)
    } else {
        (runnable, running)
    };
    accumulate_sum(delta, sa, load, runnable, running) > 0
}

/// `LOAD_AVG_MAX - 1024 + period_contrib`: the largest sum possible at this point of the
/// period (v5.6 writes it inline in `___update_load_avg`; later kernels name it so).
pub(crate) fn get_pelt_divider(sa: &SchedAvg) -> u64 {
    LOAD_AVG_MAX - 1024 + sa.period_contrib as u64
}

/// Recompute the averages from the sums (pelt.c `___update_load_avg`, v5.6): `load` and
/// `runnable` are the entity's weights (1 for a cfs_rq, whose sums already carry them).
#[doc(alias = "___update_load_avg")]
pub(crate) fn update_load_avg(sa: &mut SchedAvg, load: u64, runnable: u64) {
    let divider = get_pelt_divider(sa);
    sa.load_avg = load * sa.load_sum / divider;
    sa.runnable_load_avg = runnable * sa.runnable_load_sum / divider;
    sa.util_avg = sa.util_sum as u64 / divider;
}

/// Decay a blocked (sleeping) entity (pelt.c `__update_load_avg_blocked_se`, v5.6).
/// `weight`/`runnable_weight` are `se_weight`/`se_runnable` (nice 0 = 1024).
#[doc(alias = "__update_load_avg_blocked_se")]
pub(crate) fn update_blocked_se(
    now: u64,
    sa: &mut SchedAvg,
    weight: u64,
    runnable_weight: u64,
) -> bool {
    if update_load_sum(now, sa, 0, 0, 0) {
        update_load_avg(sa, weight, runnable_weight);
        return true;
    }
    false
}

/// Update an entity (pelt.c `__update_load_avg_se`, v5.6): load = runnable = on_rq,
/// running = it is its cfs_rq's current. When the averages move, the util_est
/// "unchanged" mark is cleared (`cfs_se_util_change`).
#[doc(alias = "__update_load_avg_se")]
pub(crate) fn update_se(
    now: u64,
    sa: &mut SchedAvg,
    on_rq: bool,
    running: bool,
    weight: u64,
    runnable_weight: u64,
) -> bool {
    if update_load_sum(now, sa, on_rq as u64, on_rq as u64, running as u32) {
        update_load_avg(sa, weight, runnable_weight);
        cfs_se_util_change(sa);
        return true;
    }
    false
}

/// Update a cfs_rq (pelt.c `__update_load_avg_cfs_rq`, v5.6): load = total queued weight,
/// runnable = runnable weight (both scaled down), running = it has a current entity.
#[doc(alias = "__update_load_avg_cfs_rq")]
pub(crate) fn update_cfs_rq(
    now: u64,
    sa: &mut SchedAvg,
    load_weight: u64,
    runnable_weight: u64,
    curr_running: bool,
) -> bool {
    if update_load_sum(now, sa, load_weight, runnable_weight, curr_running as u32) {
        update_load_avg(sa, 1, 1);
        return true;
    }
    false
}

/// Clear the util_est "unchanged" bit once PELT has moved (fair.c `cfs_se_util_change`).
fn cfs_se_util_change(sa: &mut SchedAvg) {
    sa.util_est.enqueued &= !UTIL_AVG_UNCHANGED;
}

/// The PELT clock of one rq (the `clock_task`, `clock_pelt`, `lost_idle_time` fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct PeltClock {
    pub clock_task: u64,
    pub clock_pelt: u64,
    pub lost_idle_time: u64,
}

/// `(v · scale) >> SCHED_CAPACITY_SHIFT` (sched.h `cap_scale`).
#[inline]
pub(crate) fn cap_scale(v: u64, scale: u64) -> u64 {
    (v * scale) >> SCHED_CAPACITY_SHIFT
}

/// Advance `clock_task` to `now_task` and the PELT clock with it (pelt.h
/// `update_rq_clock_pelt`, v5.6, as called from `update_rq_clock_task`). `busy` is "the
/// rq's current task is not the idle task": the delta is then scaled by `cap_cpu` and
/// then by `cap_freq` (each /1024, truncating); when idle the PELT clock jumps to
/// `clock_task`. A `now_task` in the past is ignored. `cap_cpu` is
/// `arch_scale_cpu_capacity` (capacity_orig), `cap_freq` is `arch_scale_freq_capacity`
/// (current/max frequency × 1024; always 1024 on v5.6 x86, which has no frequency
/// invariance).
pub(crate) fn update_rq_clock_pelt(
    c: &mut PeltClock,
    now_task: u64,
    busy: bool,
    cap_cpu: u64,
    cap_freq: u64,
) {
    let delta = now_task.saturating_sub(c.clock_task);
    c.clock_task = c.clock_task.max(now_task);
    if !busy {
        c.clock_pelt = c.clock_task;
        return;
    }
    let delta = cap_scale(delta, cap_cpu);
    let delta = cap_scale(delta, cap_freq);
    c.clock_pelt += delta;
}

/// Threshold of `update_idle_rq_clock_pelt`: `((LOAD_AVG_MAX - 1024) << 10) - LOAD_AVG_MAX`,
/// the largest util_sum, ignoring the position in the period, less a rounding margin.
pub const LOST_IDLE_UTIL_SUM: u32 =
    (((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX) as u32;

/// The rq is about to go idle (pelt.h `update_idle_rq_clock_pelt`, v5.6, called when
/// the fair class finds nothing to run). `util_sum` is the rq's cfs util_sum plus its RT
/// and DL util_sums (added in `u32` as the kernel does). If it is saturated, the idle
/// time that the slow PELT clock would give back is lost: `lost_idle_time` grows by
/// `clock_task - clock_pelt`. Until the next clock update syncs `clock_pelt` (the rq
/// is idle by then) [`rq_clock_pelt`] reads low; like the kernel, do not read it between.
pub(crate) fn update_idle_rq_clock_pelt(c: &mut PeltClock, util_sum: u32) {
    if util_sum >= LOST_IDLE_UTIL_SUM {
        c.lost_idle_time += c.clock_task - c.clock_pelt;
    }
}

/// The `now` to feed PELT updates on this rq (pelt.h `rq_clock_pelt`).
pub fn rq_clock_pelt(c: &PeltClock) -> u64 {
    c.clock_pelt - c.lost_idle_time
}

/// A task's own estimate, `max(ewma, enqueued) | UTIL_AVG_UNCHANGED` (fair.c
/// `_task_util_est`, v5.6).
#[doc(alias = "_task_util_est")]
pub(crate) fn task_util_est_raw(sa: &SchedAvg) -> u32 {
    sa.util_est.ewma.max(sa.util_est.enqueued) | UTIL_AVG_UNCHANGED
}

/// `max(util_avg, _task_util_est)` (fair.c `task_util_est`, v5.6).
pub(crate) fn task_util_est(sa: &SchedAvg) -> u64 {
    sa.util_avg.max(task_util_est_raw(sa) as u64)
}

/// Add a task's estimate to its rq's (root cfs_rq's) `util_est.enqueued` (fair.c
/// `util_est_enqueue`, v5.6).
pub(crate) fn util_est_enqueue(cfs_est_enqueued: &mut u32, task: &SchedAvg) {
    *cfs_est_enqueued = cfs_est_enqueued.wrapping_add(task_util_est_raw(task));
}

/// Remove a task's estimate from its rq's sum, never below 0 (first half of fair.c
/// `util_est_dequeue`, v5.6). Call [`util_est_update`] afterwards for the task itself.
pub(crate) fn util_est_dequeue(cfs_est_enqueued: &mut u32, task: &SchedAvg) {
    *cfs_est_enqueued -= (*cfs_est_enqueued).min(task_util_est_raw(task));
}

/// Refresh a task's estimate at dequeue (second half of fair.c `util_est_dequeue`,
/// v5.6) with UTIL_EST_FASTUP on. See `util_est_update_feat`.
pub fn util_est_update(task: &mut SchedAvg, task_sleep: bool, capacity_orig: u64) {
    util_est_update_feat(task, task_sleep, capacity_orig, true);
}

/// Refresh a task's estimate at dequeue, with UTIL_EST_FASTUP as `fastup` (a sched
/// feature, on by default since v5.5). In order: nothing unless the task goes to sleep;
/// nothing if util_avg has not changed since the last sample (the mark bit); the sample
/// is `util_avg | UTIL_AVG_UNCHANGED`; FASTUP: if the EWMA is below it, both take it;
/// nothing if within [`UTIL_EST_MARGIN`] of the EWMA or if util_avg exceeds
/// `capacity_orig` (no idle time, the sample would overestimate); else
/// `ewma = (4·ewma + (sample - ewma)) / 4` and `enqueued = sample`. Returns whether
/// it wrote the estimate (where v5.9+ fires `sched_util_est_se_tp`).
pub(crate) fn util_est_update_feat(
    task: &mut SchedAvg,
    task_sleep: bool,
    capacity_orig: u64,
    fastup: bool,
) -> bool {
    if !task_sleep {
        return false;
    }
    let mut ue = task.util_est;
    if ue.enqueued & UTIL_AVG_UNCHANGED != 0 {
        return false;
    }
    ue.enqueued = (task.util_avg as u32) | UTIL_AVG_UNCHANGED;
    if fastup && ue.ewma < ue.enqueued {
        ue.ewma = ue.enqueued;
        task.util_est = ue;
        return true;
    }
    let last_ewma_diff = ue.enqueued as i64 - ue.ewma as i64;
    if last_ewma_diff.abs() < UTIL_EST_MARGIN {
        return false;
    }
    if task.util_avg > capacity_orig {
        return false;
    }
    let ewma = ((ue.ewma as i64) << UTIL_EST_WEIGHT_SHIFT) + last_ewma_diff;
    ue.ewma = (ewma >> UTIL_EST_WEIGHT_SHIFT) as u32;
    task.util_est = ue;
    true
}

/// A new task's averages at fork (fair.c `init_entity_runnable_average`, v5.6): all zero
/// but `load_avg = runnable_load_avg = weight` (scaled down, nice 0 = 1024), so it looks
/// heavy until it has history.
pub fn init_entity_runnable_average(weight: u64) -> SchedAvg {
    SchedAvg {
        load_avg: weight,
        runnable_load_avg: weight,
        ..SchedAvg::default()
    }
}

/// Seed a new task's `util_avg` on the rq it was placed on (fair.c
/// `post_init_entity_util_avg`, v5.6): half the capacity the rq has left, or less when
/// the rq's util per unit of load says so. `cfs_rq` is the rq's root cfs_rq averages,
/// `cpu_scale` its `capacity_orig`, `weight` the task's scaled-down weight.
///
/// `v5_6_quirk`: on 64-bit v5.6 the ratio uses the task's *internal* weight (×1024)
/// against the cfs_rq's scaled-down `load_avg`, so the ratio almost never binds (fixed
/// by v5.10). Only `util_avg` is set; attaching the task (fair.c
/// `attach_entity_load_avg`, which derives `util_sum`) is the caller's.
pub(crate) fn post_init_entity_util_avg(
    sa: &mut SchedAvg,
    weight: u64,
    cpu_scale: u64,
    cfs_rq: &SchedAvg,
    v5_6_quirk: bool,
) {
    let cap = (cpu_scale as i64 - cfs_rq.util_avg as i64) / 2;
    if cap <= 0 {
        return;
    }
    let cap = cap as u64;
    if cfs_rq.util_avg != 0 {
        let w = if v5_6_quirk {
            weight << SCHED_FIXEDPOINT_SHIFT
        } else {
            weight
        };
        sa.util_avg = (cfs_rq.util_avg * w / (cfs_rq.load_avg + 1)).min(cap);
    } else {
        sa.util_avg = cap;
    }
}

/// Join an entity's averages to a cfs_rq's (fair.c `attach_entity_load_avg`, v5.6,
/// without task-group propagation and the cpufreq hook). The entity adopts the cfs_rq's
/// decay window (`last_update_time`, `period_contrib`) and its sums are rebuilt from its
/// averages for the new divider (truncating a little, as the kernel does); then its load
/// and util are added to the cfs_rq (`enqueue_load_avg`). `se_weight` is scaled down.
pub fn attach_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, se_weight: u64) {
    let divider = get_pelt_divider(cfs);
    se.last_update_time = cfs.last_update_time;
    se.period_contrib = cfs.period_contrib;
    se.util_sum = (se.util_avg * divider) as u32;
    se.load_sum = (se.load_avg * divider)
        .checked_div(se_weight)
        .unwrap_or(divider);
    se.runnable_load_sum = se.load_sum;
    cfs.load_avg += se.load_avg;
    cfs.load_sum += se_weight * se.load_sum;
    cfs.util_avg += se.util_avg;
    cfs.util_sum += se.util_sum;
}

/// Take an entity's load and util out of a cfs_rq, never below 0 (fair.c
/// `detach_entity_load_avg` with `dequeue_load_avg`, v5.6, without propagation).
pub(crate) fn detach_entity_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    cfs.load_avg = cfs.load_avg.saturating_sub(se.load_avg);
    cfs.load_sum = cfs.load_sum.saturating_sub(se_weight * se.load_sum);
    cfs.util_avg = cfs.util_avg.saturating_sub(se.util_avg);
    cfs.util_sum = cfs.util_sum.saturating_sub(se.util_sum);
}

/// Apply the lazily removed load and util of entities that left (migrated or died) to a
/// cfs_rq (the `removed` block of fair.c `update_cfs_rq_load_avg`, v5.6): averages drop
/// by the removed amounts and sums by those times the divider, never below 0. The
/// kernel does this just before the cfs_rq's own `update_cfs_rq` and counts it as
/// "decayed".
pub fn remove_load_avg(cfs: &mut SchedAvg, removed_load: u64, removed_util: u64) {
    let divider = get_pelt_divider(cfs);
    cfs.load_avg = cfs.load_avg.saturating_sub(removed_load);
    cfs.load_sum = cfs.load_sum.saturating_sub(removed_load * divider);
    cfs.util_avg = cfs.util_avg.saturating_sub(removed_util);
    cfs.util_sum = cfs.util_sum.saturating_sub((removed_util * divider) as u32);
}

/// Add a queued entity's runnable load to its cfs_rq (fair.c `enqueue_runnable_load_avg`,
/// v5.6; the cfs_rq's `runnable_weight` field is the caller's).
pub fn enqueue_runnable_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_runnable: u64) {
    cfs.runnable_load_avg += se.runnable_load_avg;
    cfs.runnable_load_sum += se_runnable * se.runnable_load_sum;
}

/// Remove a dequeued entity's runnable load, never below 0 (fair.c
/// `dequeue_runnable_load_avg`, v5.6).
pub fn dequeue_runnable_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_runnable: u64) {
    cfs.runnable_load_avg = cfs.runnable_load_avg.saturating_sub(se.runnable_load_avg);
    cfs.runnable_load_sum = cfs
        .runnable_load_sum
        .saturating_sub(se_runnable * se.runnable_load_sum);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PERIOD_NS: u64 = 1024 * 1024;
    const MS: u64 = 1_000_000;

    fn y() -> f64 {
        0.5f64.powf(1.0 / 32.0)
    }

    /// `1024 / (1 - y)`: the exact (real) limit of `1024 · Σ y^k`.
    fn exact_max() -> f64 {
        1024.0 / (1.0 - y())
    }

    #[test]
    fn yn_inv_table_matches_definition() {
        let y = y();
        for (k, &t) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
            let want = (((1u64 << 32) - 1) as f64 * y.powi(k as i32)).floor() as u32;
            assert_eq!(t, want, "entry {k}");
        }
        // y^k · y^(32-k) = y^32 = 1/2 through the table.
        for k in 1..32 {
            let prod = RUNNABLE_AVG_YN_INV[k] as f64 * RUNNABLE_AVG_YN_INV[32 - k] as f64;
            assert!((prod / 2f64.powi(64) - 0.5).abs() < 1e-9, "k={k}");
        }
    }

    #[test]
    fn load_avg_max_is_the_integer_limit_of_the_series() {
        let (mut max, mut last) = (0u64, u64::MAX);
        let mut n = 0;
        while max != last {
            last = max;
            max = ((max * RUNNABLE_AVG_YN_INV[1] as u64) >> 32) + 1024;
            n += 1;
        }
        assert_eq!(max, LOAD_AVG_MAX);
        assert!(n > 300, "converges slowly ({n} steps)");
        // And it sits just below the real limit 1024/(1-y) ≈ 47788 (floors lose ~1 a step).
        assert!((exact_max() - LOAD_AVG_MAX as f64 - 46.4).abs() < 0.5);
    }

    #[test]
    fn decay_load_edges() {
        assert_eq!(decay_load(12345, 0), 12344); // table[0] = 2^32 - 1
        assert_eq!(decay_load(1024, 1), 1002); // floor(1024 · 0.97857)
        assert_eq!(decay_load(LOAD_AVG_MAX, 1), 46718);
        assert_eq!(decay_load(u64::MAX, 2048), 0);
        assert_eq!(decay_load(1 << 62, LOAD_AVG_PERIOD as u64 * 63), 0);
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD as u64 * 63 + 1), 0);
        // (2^40 >> 2) · (2^32 - 1) >> 32: table[0] is 1 - 2^-32, so large values lose x >> 32.
        assert_eq!(decay_load(1 << 40, 64), (1 << 38) - 64);
    }

    proptest! {
        #[test]
        fn decay_load_halves_every_32_periods(x in 0u64..(1 << 62), k in 0u64..60) {
            // Below 2^33 (all entity sums) y^32 is exact to 1; above, table[0] = 2^32 - 1
            // also loses (x/2) >> 32.
            let h = decay_load(x, 32);
            prop_assert!(h <= x / 2 && h + 1 + (x >> 33) >= x / 2, "{x} -> {h}");
            let small = x >> 30;
            let hs = decay_load(small, 32);
            prop_assert!(hs <= small / 2 && hs + 1 >= small / 2, "{small} -> {hs}");
            prop_assert_eq!(decay_load(x, 32 * 64 + k), 0);
            // monotone in n
            prop_assert!(decay_load(x, k + 1) <= decay_load(x, k));
            // y^n within the truncation: at most 2 below the real value, never above
            let exact = x as f64 * y().powi(k as i32);
            let d = decay_load(x, k) as f64;
            prop_assert!(d <= exact * (1.0 + 1e-12) && d >= exact * (1.0 - 1e-9) - 2.0, "{x} {k}");
        }
    }

    #[test]
    fn accumulate_segments_hand_cases() {
        // One boundary, old period empty before: its 1024 units age one period.
        assert_eq!(accumulate_pelt_segments(1, 1024, 0), 1002);
        // One boundary: 24 units of the old period (y^1) + 100 new units (y^0).
        assert_eq!(accumulate_pelt_segments(1, 24, 100), 23 + 100);
        // Two boundaries: one full period in between counts 1024·y = 1002.06, the
        // kernel's LOAD_AVG_MAX - decay(LOAD_AVG_MAX, 2) - 1024.
        let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, 2) - 1024;
        assert_eq!(c2, 1001);
        assert_eq!(accumulate_pelt_segments(2, 0, 0), 1001);
    }

    /// One instant of the simulated signal: 0 sleeping, 1 runnable and waiting, 2 running.
    #[derive(Clone, Copy, Debug)]
    struct Seg {
        units: u64,
        state: u8,
    }

    /// Brute-force oracle: the exact decayed sums in f64 of the per-unit signal given
    /// by `segs`, `y = 0.5^(1/32)` per period, after `n_units` units from time 0.
    /// Returns (runnable sum in units, running sum in units, period_contrib).
    fn oracle(segs: &[Seg], n_units: u64) -> (f64, f64, u64) {
        let p_now = n_units / 1024;
        let mut load = vec![0u64; p_now as usize + 1];
        let mut run = vec![0u64; p_now as usize + 1];
        let mut u = 0u64;
        'outer: for s in segs {
            for _ in 0..s.units {
                if u >= n_units {
                    break 'outer;
                }
                let p = (u / 1024) as usize;
                if s.state > 0 {
                    load[p] += 1;
                }
                if s.state == 2 {
                    run[p] += 1;
                }
                u += 1;
            }
        }
        let y = y();
        let (mut ls, mut rs) = (0.0, 0.0);
        for p in 0..=p_now as usize {
            let w = y.powi((p_now as usize - p) as i32);
            ls += load[p] as f64 * w;
            rs += run[p] as f64 * w;
        }
        (ls, rs, n_units % 1024)
    }

    /// Worst-case distance (derivation): per update that crosses boundaries the integer
    /// code loses < 2.03 decaying the old sum (two floors + table truncation), < 2 in
    /// c1 (decay of d1), and its middle term c2 is off by -46.4·(1-y^p) (+ < 2 floor)
    /// because LOAD_AVG_MAX = 47742 is the floored series limit while the real one is
    /// 1024/(1-y) ≈ 47788.4. Errors decay like the signal; the crossing updates are at
    /// distinct ages, so Σ y^age ≤ 1/(1-y) ≈ 46.67, and the c2 terms telescope to
    /// ≤ 46.4. In sum units: load ≤ 46.4 + 4.03·46.67 ≈ 234.5; util (contrib << 10) ≤
    /// 1024·(46.4 + 2·46.67) + 2.03·46.67 ≈ 143200. Divided by the divider (≥ 46718),
    /// plus 1 for the final floor: load_avg within 0.00502·w + 1, util_avg within 4.07.
    fn bounds(w: u64) -> (f64, f64) {
        let inv = 1.0 / (1.0 - y());
        let sys = exact_max() - LOAD_AVG_MAX as f64;
        let load = (sys + 4.03 * inv) * w as f64 / 46718.0 + 1.0;
        let util = (1024.0 * (sys + 2.0 * inv) + 2.03 * inv) / 46718.0 + 1.0;
        (load, util)
    }

    /// Drive one entity through `segs` (state changes at unit boundaries, as a caller
    /// updates before changing state), with extra updates at arbitrary ns instants
    /// `extra` (fractions of the run), ending at `end_extra_ns` past the last segment.
    fn drive(segs: &[Seg], extra: &[f64], end_extra_ns: u64, w: u64) -> (SchedAvg, u64) {
        let total_units: u64 = segs.iter().map(|s| s.units).sum();
        let end = total_units * 1024 + end_extra_ns;
        // (time, index of segment whose state applies to the interval before it)
        let mut pts: Vec<(u64, usize)> = Vec::new();
        let mut t = 0;
        for (i, s) in segs.iter().enumerate() {
            t += s.units * 1024;
            pts.push((t, i));
        }
        let seg_at = |ns: u64| -> usize {
            let mut acc = 0;
            for (i, s) in segs.iter().enumerate() {
                acc += s.units * 1024;
                if ns < acc {
                    return i;
                }
            }
            segs.len() - 1
        };
        for &f in extra {
            let ns = (f * end as f64) as u64;
            pts.push((ns, seg_at(ns.saturating_sub(1))));
        }
        pts.push((end, segs.len() - 1));
        pts.sort();
        let mut sa = SchedAvg::default();
        for (ns, i) in pts {
            let st = segs[i].state;
            update_se(ns, &mut sa, st > 0, st == 2, w, w);
        }
        update_load_avg(&mut sa, w, w);
        (sa, end >> 10)
    }

    fn seg_strategy() -> impl Strategy<Value = Vec<Seg>> {
        prop::collection::vec(
            (prop_oneof![1u64..2000, 1u64..40_000, Just(1024u64)], 0u8..3)
                .prop_map(|(units, state)| Seg { units, state }),
            1..40,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn incremental_pelt_matches_direct_sum(
            segs in seg_strategy(),
            extra in prop::collection::vec(0.0f64..1.0, 0..60),
            end_extra in 0u64..1024,
            w in prop_oneof![Just(1024u64), Just(15u64), Just(88761u64), 1u64..5000],
        ) {
            let (sa, n) = drive(&segs, &extra, end_extra, w);
            let (ls, rs, pc) = oracle(&segs, n);
            prop_assert_eq!(sa.period_contrib as u64, pc);
            prop_assert_eq!(sa.last_update_time, n << 10);
            let div = get_pelt_divider(&sa) as f64;
            let (lb, ub) = bounds(w);
            let load_exact = w as f64 * ls / div;
            let util_exact = 1024.0 * rs / div;
            prop_assert!((sa.load_avg as f64 - load_exact).abs() <= lb,
                "load {} vs {load_exact:.2} (bound {lb:.2})", sa.load_avg);
            prop_assert!((sa.runnable_load_avg as f64 - load_exact).abs() <= lb);
            prop_assert!((sa.util_avg as f64 - util_exact).abs() <= ub,
                "util {} vs {util_exact:.2} (bound {ub:.2})", sa.util_avg);
            // PELT bounded: util never above the capacity scale, load never above w.
            prop_assert!(sa.util_avg <= SCHED_CAPACITY_SCALE);
            prop_assert!(sa.load_avg <= w);
            // running implies runnable: util_sum within the floor losses of load_sum << 10
            prop_assert!(sa.util_sum as u64 <= (sa.load_sum << 10) + 1024 * 47);
        }
    }

    /// Always running from 0, with a tick every `tick` ns; returns util_avg at `t` ns.
    fn always_running(t: u64, tick: u64) -> SchedAvg {
        let mut sa = SchedAvg::default();
        let mut now = 0;
        while now < t {
            now = (now + tick).min(t);
            update_se(now, &mut sa, true, true, 1024, 1024);
        }
        update_load_avg(&mut sa, 1024, 1024);
        sa
    }

    /// Real value of an always-on signal over `n` units, read through the kernel divider.
    fn exact_always_on(n: u64) -> f64 {
        let (p, pc) = (n / 1024, n % 1024);
        let y = y();
        let s = pc as f64 + 1024.0 * y * (1.0 - y.powi(p as i32)) / (1.0 - y);
        1024.0 * s / (LOAD_AVG_MAX - 1024 + pc) as f64
    }

    #[test]
    fn always_running_converges_to_1024() {
        let (_, ub) = bounds(1024);
        for &(t, tick) in &[
            (32 * PERIOD_NS, MS),
            (345 * MS, MS),
            (345 * MS, 4 * MS),
            (2000 * MS, 3 * MS + 7),
        ] {
            let sa = always_running(t, tick);
            let ex = exact_always_on(t >> 10);
            assert!(
                (sa.util_avg as f64 - ex).abs() <= ub,
                "{t}: {} vs {ex}",
                sa.util_avg
            );
            assert!(
                sa.load_avg.abs_diff(sa.util_avg) <= 1,
                "load and util agree for w = 1024"
            );
        }
        // Half-life: after exactly 32 periods (from 0) the signal is at half its limit,
        // i.e. 1024·(1 - y^32)·(M-1024)/(L-1024) ≈ 513; within the bound above.
        let sa = always_running(32 * PERIOD_NS, PERIOD_NS);
        assert!((510..=515).contains(&sa.util_avg), "{}", sa.util_avg);
        // After 345 ms the real value is above 1023.9; the kernel sits within 1 of 1024.
        let sa = always_running(345 * MS, MS);
        assert!(
            sa.util_avg >= 1023 && sa.util_avg <= 1024,
            "{}",
            sa.util_avg
        );
        // Steady state, updates on period boundaries: util_sum reaches the floored fixed
        // point of S <- floor(S·y) + 1002·1024 and util_avg = S / 46718 = 1024.
        let sa = always_running(3000 * PERIOD_NS, PERIOD_NS);
        let mut s = 0u64;
        for _ in 0..3000 {
            s = decay_load(s, 1) + 1002 * 1024;
        }
        assert_eq!(sa.util_sum as u64, s);
        assert_eq!(sa.util_avg, s / (LOAD_AVG_MAX - 1024));
        assert_eq!(sa.util_avg, 1024);
    }

    #[test]
    fn half_duty_cycle_is_near_512() {
        // 2 ms running, 2 ms sleeping for 1 s, updated every 0.1 ms (with the state of the
        // interval just ended). A square wave of r = 2 ms in p = 4 ms swings between
        // 1024·y^r/(1+y^r) ≈ 501 and 1024/(1+y^r) ≈ 523 (y^r ≈ 0.96, r in periods): its
        // mean is 512.
        let mut sa = SchedAvg::default();
        let step = MS / 10;
        let mut now = 0;
        let (mut lo, mut hi, mut acc) = (u64::MAX, 0, 0);
        for i in 1..=10_000u64 {
            let on = ((now / (2 * MS)) & 1) == 0; // state of [now, now + step)
            now = i * step;
            update_se(now, &mut sa, on, on, 1024, 1024);
            update_load_avg(&mut sa, 1024, 1024);
            if i > 10_000 - 40 {
                lo = lo.min(sa.util_avg);
                hi = hi.max(sa.util_avg);
                acc += sa.util_avg;
            }
        }
        assert!((497..=505).contains(&lo), "{lo}");
        assert!((519..=527).contains(&hi), "{hi}");
        assert!((509..=515).contains(&(acc / 40)), "{}", acc / 40);
    }

    #[test]
    fn blocked_entity_only_decays_and_cfs_rq_carries_weights() {
        let mut sa = always_running(200 * MS, MS);
        let before = sa;
        assert!(update_blocked_se(
            200 * MS + 32 * PERIOD_NS,
            &mut sa,
            1024,
            1024
        ));
        assert!(
            sa.util_avg.abs_diff(before.util_avg / 2) <= 2,
            "{} {}",
            sa.util_avg,
            before.util_avg
        );
        // A cfs_rq with two nice-0 tasks always queued, one always running.
        let mut rq = SchedAvg::default();
        let mut now = 0;
        while now < 400 * MS {
            now += MS;
            update_cfs_rq(now, &mut rq, 2048, 2048, true);
        }
        assert!((2040..=2048).contains(&rq.load_avg), "{}", rq.load_avg);
        assert!((1018..=1024).contains(&rq.util_avg), "{}", rq.util_avg);
        // Sub-unit updates and backwards clocks do nothing but resync.
        let snap = rq;
        assert!(!update_cfs_rq(now + 1023, &mut rq, 2048, 2048, true));
        assert_eq!(rq, snap);
        assert!(!update_cfs_rq(now - 5000, &mut rq, 2048, 2048, true));
        assert_eq!(rq.last_update_time, now - 5000);
        assert_eq!(rq.util_sum, snap.util_sum);
    }

    /// A task that runs `run` ns of wall time out of every `cycle`, on a CPU of capacity
    /// `cap` at top frequency, driven through the PELT clock with a 1 ms tick.
    fn periodic_on_cpu(cap: u64, run: u64, cycle: u64, total: u64) -> (SchedAvg, PeltClock) {
        let mut c = PeltClock::default();
        let mut p = SchedAvg::default();
        let mut t = 0;
        while t < total {
            // running: ticks, then dequeue at t + run
            let mut s = t;
            while s < t + run {
                s = (s + MS).min(t + run);
                update_rq_clock_pelt(&mut c, s, true, cap, 1024);
                update_se(rq_clock_pelt(&c), &mut p, true, true, 1024, 1024);
            }
            // going idle: nothing else to run (util_sum of the rq = the task's here)
            update_idle_rq_clock_pelt(&mut c, p.util_sum);
            t += cycle;
            if run < cycle {
                update_rq_clock_pelt(&mut c, t, false, cap, 1024);
                update_se(rq_clock_pelt(&c), &mut p, false, false, 1024, 1024);
            }
        }
        update_load_avg(&mut p, 1024, 1024);
        (p, c)
    }

    #[test]
    fn invariance_duty_cycle_reads_work_at_max_capacity() {
        // 25 % of wall time on a half-capacity CPU = 12.5 % of the big CPU's work.
        let (little, c) = periodic_on_cpu(512, MS, 4 * MS, 1000 * MS);
        let (big, _) = periodic_on_cpu(1024, MS, 4 * MS, 1000 * MS);
        let (big_half, _) = periodic_on_cpu(1024, MS / 2, 4 * MS, 1000 * MS);
        assert!(
            (100..=160).contains(&little.util_avg),
            "{}",
            little.util_avg
        );
        assert!((220..=300).contains(&big.util_avg), "{}", big.util_avg);
        assert!(
            little.util_avg.abs_diff(big_half.util_avg) <= 3,
            "{} {}",
            little.util_avg,
            big_half.util_avg
        );
        assert_eq!(c.lost_idle_time, 0);
    }

    #[test]
    fn invariance_always_busy_converges_to_1024_at_half_speed() {
        // The PELT clock runs at half speed on a 512 CPU: after 200 ms of wall time the
        // task has the util a big CPU gives after 100 ms (exactly: the same clock_pelt).
        let (little, c) = periodic_on_cpu(512, 200 * MS, 200 * MS, 200 * MS);
        let big = always_running(100 * MS, MS / 2);
        assert_eq!(rq_clock_pelt(&c), 100 * MS);
        assert!(
            little.util_avg.abs_diff(big.util_avg) <= 2,
            "{} {}",
            little.util_avg,
            big.util_avg
        );
        assert!(little.util_avg > 880, "{}", little.util_avg); // 1024·(1 - y^95.4) ≈ 894
                                                               // Given long enough it reaches the max like on any CPU: there is no idle time.
        let (little, mut c) = periodic_on_cpu(512, 3000 * MS, 3000 * MS, 3000 * MS);
        assert!(little.util_avg >= 1022, "{}", little.util_avg);
        // It was saturated when the rq went idle, so the gap is lost idle time and the
        // PELT clock seen by PELT does not jump when it syncs.
        assert_eq!(c.lost_idle_time, 1500 * MS);
        assert_eq!(c.clock_pelt, 1500 * MS);
        update_rq_clock_pelt(&mut c, 3000 * MS + 5 * MS, false, 512, 1024);
        assert_eq!(c.clock_pelt, 3005 * MS);
        assert_eq!(rq_clock_pelt(&c), 1500 * MS + 5 * MS);
    }

    #[test]
    fn pelt_clock_scales_twice_with_truncation() {
        let mut c = PeltClock::default();
        update_rq_clock_pelt(&mut c, 1000, true, 512, 768);
        // (1000·512 >> 10) = 500; (500·768 >> 10) = 375
        assert_eq!(c.clock_pelt, 375);
        assert_eq!(c.clock_task, 1000);
        update_rq_clock_pelt(&mut c, 1003, true, 1000, 1000);
        // 3·1000 >> 10 = 2; 2·1000 >> 10 = 1
        assert_eq!(c.clock_pelt, 376);
        update_idle_rq_clock_pelt(&mut c, LOST_IDLE_UTIL_SUM - 1);
        assert_eq!(c.lost_idle_time, 0);
        update_idle_rq_clock_pelt(&mut c, LOST_IDLE_UTIL_SUM);
        assert_eq!(c.lost_idle_time, 1003 - 376);
        assert_eq!(LOST_IDLE_UTIL_SUM, 46718 * 1024 - 47742);
        update_rq_clock_pelt(&mut c, 2000, false, 512, 768);
        assert_eq!((c.clock_pelt, rq_clock_pelt(&c)), (2000, 2000 - 627));
    }

    fn task(util: u64, enqueued: u32, ewma: u32) -> SchedAvg {
        SchedAvg {
            util_avg: util,
            util_est: UtilEst { enqueued, ewma },
            ..SchedAvg::default()
        }
    }

    #[test]
    fn util_est_update_rules() {
        // (util_avg, enqueued, ewma, sleep, cap, fastup) -> (enqueued, ewma)
        #[rustfmt::skip]
        type Case = (u64, u32, u32, bool, u64, bool, (u32, u32), &'static str);
        let cases: &[Case] = &[
            (
                300,
                100,
                100,
                true,
                1024,
                true,
                (301, 301),
                "fastup: both take the sample",
            ),
            (
                300,
                100,
                100,
                true,
                1024,
                false,
                (301, 150),
                "no fastup: (4·100 + 201) >> 2",
            ),
            (
                200,
                400,
                400,
                true,
                1024,
                true,
                (201, 350),
                "decrease: (1600 - 199) >> 2",
            ),
            (
                300,
                500,
                305,
                true,
                1024,
                true,
                (500, 305),
                "within margin (-4): old sample kept",
            ),
            (
                300,
                500,
                310,
                true,
                1024,
                true,
                (500, 310),
                "within margin (-9)",
            ),
            (
                300,
                500,
                311,
                true,
                1024,
                true,
                (301, 308),
                "margin edge (-10): (1244-10) >> 2",
            ),
            (
                600,
                800,
                900,
                true,
                512,
                true,
                (800, 900),
                "util above capacity_orig: skip",
            ),
            (
                500,
                800,
                900,
                true,
                512,
                true,
                (501, 800),
                "util within capacity: (3600-399)>>2",
            ),
            (
                300,
                101,
                100,
                true,
                1024,
                true,
                (101, 100),
                "unchanged mark set: skip",
            ),
            (
                300,
                100,
                100,
                false,
                1024,
                true,
                (100, 100),
                "not a sleep (migration): skip",
            ),
            (
                0,
                0,
                0,
                true,
                1024,
                true,
                (1, 1),
                "fastup from 0: the marked sample 0|1 > 0",
            ),
            (
                0,
                0,
                0,
                true,
                1024,
                false,
                (0, 0),
                "no fastup: sample 1, diff 1: skip",
            ),
        ];
        for &(u, enq, ewma, sleep, cap, fastup, want, what) in cases {
            let mut t = task(u, enq, ewma);
            util_est_update_feat(&mut t, sleep, cap, fastup);
            assert_eq!((t.util_est.enqueued, t.util_est.ewma), want, "{what}");
            assert_eq!(t.util_avg, u);
        }
    }

    proptest! {
        #[test]
        fn util_est_ewma_formula(u in 0u64..=1024, ewma in 0u32..=1024) {
            let mut t = task(u, 0, ewma);
            util_est_update_feat(&mut t, true, 1024, false);
            let sample = (u as u32) | 1;
            if sample.abs_diff(ewma) < 10 {
                prop_assert_eq!(t.util_est, UtilEst { enqueued: 0, ewma });
            } else {
                prop_assert_eq!(t.util_est.enqueued, sample);
                prop_assert_eq!(t.util_est.ewma, (3 * ewma + sample) / 4);
            }
            // FASTUP never lowers the EWMA below the no-fastup one.
            let mut f = task(u, 0, ewma);
            util_est_update(&mut f, true, 1024);
            prop_assert!(f.util_est.ewma >= t.util_est.ewma);
        }
    }

    #[test]
    fn util_est_mark_cleared_only_when_pelt_moves() {
        let mut p = always_running(50 * MS, MS);
        util_est_update(&mut p, true, 1024);
        assert_eq!(p.util_est.enqueued & UTIL_AVG_UNCHANGED, 1);
        let stored = p.util_est;
        // Within the same period: no boundary, mark stays, a new dequeue changes nothing.
        let t = p.last_update_time + 2048;
        assert!(!update_se(t, &mut p, true, true, 1024, 1024));
        p.util_avg += 50; // (pretend) — the mark still blocks
        util_est_update(&mut p, true, 1024);
        assert_eq!(p.util_est, stored);
        p.util_avg -= 50;
        // Crossing a period clears the mark.
        assert!(update_se(t + PERIOD_NS, &mut p, true, true, 1024, 1024));
        assert_eq!(p.util_est.enqueued, stored.enqueued & !UTIL_AVG_UNCHANGED);
        // Blocked updates do not clear it (v5.6 clears it only in __update_load_avg_se).
        let mut q = p;
        q.util_est.enqueued |= 1;
        update_blocked_se(t + 40 * PERIOD_NS, &mut q, 1024, 1024);
        assert_eq!(q.util_est.enqueued & 1, 1);
    }

    #[test]
    fn util_est_rq_sum_and_task_util_est() {
        let a = task(300, 401, 350); // est = 401 | 1 = 401
        let b = task(700, 200, 250); // est = 250 | 1 = 251
        assert_eq!(task_util_est(&a), 401);
        assert_eq!(task_util_est(&b), 700);
        assert_eq!(task_util_est(&SchedAvg::default()), 1);
        let mut rq = 0u32;
        util_est_enqueue(&mut rq, &a);
        util_est_enqueue(&mut rq, &b);
        assert_eq!(rq, 652);
        util_est_dequeue(&mut rq, &a);
        assert_eq!(rq, 251);
        let mut small = 100u32; // never below zero
        util_est_dequeue(&mut small, &b);
        assert_eq!(small, 0);
    }

    #[test]
    fn post_init_seed_and_v5_6_quirk() {
        // Spec §2.4 example: capacity 1024, rq util 100, load 10240.
        let rq = SchedAvg {
            util_avg: 100,
            load_avg: 10240,
            ..SchedAvg::default()
        };
        let mut p = init_entity_runnable_average(1024);
        assert_eq!(
            (p.load_avg, p.runnable_load_avg, p.util_avg),
            (1024, 1024, 0)
        );
        post_init_entity_util_avg(&mut p, 1024, 1024, &rq, true);
        assert_eq!(p.util_avg, 462); // (1024-100)/2; the ratio 100·2^20/10241 = 10239 > 462
        let mut p = init_entity_runnable_average(1024);
        post_init_entity_util_avg(&mut p, 1024, 1024, &rq, false);
        assert_eq!(p.util_avg, 9); // 102400 / 10241
                                   // Full rq: cap <= 0 leaves 0.
        let full = SchedAvg {
            util_avg: 1023,
            load_avg: 1024,
            ..SchedAvg::default()
        };
        let mut p = init_entity_runnable_average(1024);
        post_init_entity_util_avg(&mut p, 1024, 1024, &full, true);
        assert_eq!(p.util_avg, 0);
        // Little CPU: half of what is left of 446.
        let mut p = init_entity_runnable_average(1024);
        post_init_entity_util_avg(&mut p, 1024, 446, &SchedAvg::default(), true);
        assert_eq!(p.util_avg, 223);
        // Successive forks on an empty rq, each attached (util and load added).
        for quirk in [true, false] {
            let mut rq = SchedAvg::default();
            let mut got = Vec::new();
            for _ in 0..4 {
                let mut p = init_entity_runnable_average(1024);
                post_init_entity_util_avg(&mut p, 1024, 1024, &rq, quirk);
                rq.util_avg += p.util_avg;
                rq.load_avg += p.load_avg;
                got.push(p.util_avg);
            }
            assert_eq!(got, vec![512, 256, 128, 64], "quirk {quirk}");
        }
    }

    #[test]
    fn attach_detach_remove() {
        // cfs_rq half-way through a period; a new nice-0 task seeded at 512.
        let mut rq = SchedAvg {
            last_update_time: 10 << 20,
            period_contrib: 500,
            ..SchedAvg::default()
        };
        let mut p = init_entity_runnable_average(1024);
        post_init_entity_util_avg(&mut p, 1024, 1024, &rq, true);
        attach_entity_load_avg(&mut rq, &mut p, 1024);
        let div = LOAD_AVG_MAX - 1024 + 500;
        assert_eq!((p.last_update_time, p.period_contrib), (10 << 20, 500));
        assert_eq!(p.util_sum as u64, 512 * div);
        assert_eq!(p.load_sum, div); // load_avg = weight: the full divider
        assert_eq!(p.runnable_load_sum, div);
        assert_eq!(
            (rq.load_avg, rq.util_avg, rq.load_sum),
            (1024, 512, 1024 * div)
        );
        // The sums are consistent: recomputing the averages gives them back.
        let mut q = p;
        update_load_avg(&mut q, 1024, 1024);
        assert_eq!((q.load_avg, q.util_avg), (1024, 512));
        let mut r = rq;
        update_load_avg(&mut r, 1, 1);
        assert_eq!((r.load_avg, r.util_avg), (1024, 512));
        // Detach restores the empty cfs_rq; detaching again saturates at 0.
        let mut d = rq;
        detach_entity_load_avg(&mut d, &p, 1024);
        assert_eq!(
            (d.load_avg, d.load_sum, d.util_avg, d.util_sum),
            (0, 0, 0, 0)
        );
        detach_entity_load_avg(&mut d, &p, 1024);
        assert_eq!(d.util_avg, 0);
        // Lazy removal of the same amounts does the same.
        remove_load_avg(&mut rq, 1024, 512);
        assert_eq!(
            (rq.load_avg, rq.load_sum, rq.util_avg, rq.util_sum),
            (0, 0, 0, 0)
        );
        // Runnable load in and out.
        let mut rq = SchedAvg::default();
        enqueue_runnable_load_avg(&mut rq, &p, 1024);
        assert_eq!(
            (rq.runnable_load_avg, rq.runnable_load_sum),
            (1024, 1024 * div)
        );
        dequeue_runnable_load_avg(&mut rq, &p, 1024);
        dequeue_runnable_load_avg(&mut rq, &p, 1024);
        assert_eq!((rq.runnable_load_avg, rq.runnable_load_sum), (0, 0));
    }
}
