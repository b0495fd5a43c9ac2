//! Scheduler features (`SchedFeat`) and numeric tunables.
//!
//! The kernel keeps its heuristic switches in `kernel/sched/features.h`, one
//! `SCHED_FEAT(NAME, default)` line each, and lets a root user flip them by writing
//! `NAME` or `NO_NAME` to `/sys/kernel/debug/sched_features`. schedlab keeps the same
//! idea in one declarative list below: kernel features carry their v5.6 default and
//! origin; the seed patches and later upstream changes are features too, so that every
//! placement variant is a switch on the v5.6 baseline. A run prints the resolved set.
//!
//! Numeric knobs are [`Tunables`]: the sysctls (`sched_latency_ns`, ...) with the
//! kernel's log-scaling by CPU count (`sched_update_scaling`, `get_update_sysctl_factor`),
//! and the configuration constant `HZ`.

use crate::sched::topology::TopologyOpts;
use std::fmt;

macro_rules! sched_features {
    ($( $name:ident = $default:expr, $origin:expr, $doc:expr; )*) => {
        /// One scheduler feature bit, named as in `features.h`.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum SchedFeat { $( $name, )* }

        impl SchedFeat {
            /// Every feature, in declaration order.
            pub const ALL: &'static [SchedFeat] = &[ $( SchedFeat::$name, )* ];
            /// The kernel spelling, e.g. `"SIS_PROP"`.
            pub fn name(self) -> &'static str {
                match self { $( SchedFeat::$name => stringify!($name), )* }
            }
            /// Default in the v5.6 kernel (seed and later features default off there).
            pub fn v5_6_default(self) -> bool {
                match self { $( SchedFeat::$name => $default, )* }
            }
            /// Where the feature comes from: a kernel version or a seed.
            pub fn origin(self) -> &'static str {
                match self { $( SchedFeat::$name => $origin, )* }
            }
            pub fn doc(self) -> &'static str {
                match self { $( SchedFeat::$name => $doc, )* }
            }
        }
    };
}

sched_features! {
    GENTLE_FAIR_SLEEPERS = true, "v2.6.32", "Halve the sleeper vruntime credit in place_entity.";
    START_DEBIT = true, "v2.6.23", "A forked task starts one vslice behind min_vruntime.";
    NEXT_BUDDY = false, "v2.6.32", "Prefer the last woken task at the next pick.";
    LAST_BUDDY = true, "v2.6.32", "Prefer the task preempted by a wakeup at the next pick.";
    CACHE_HOT_BUDDY = true, "v2.6.32", "Buddies count as cache hot in task_hot.";
    WAKEUP_PREEMPTION = true, "v2.6.32", "Wakeups may preempt the current task.";
    HRTICK = false, "v2.6.25", "High-resolution slice-end preemption (not modelled; must stay off).";
    DOUBLE_TICK = false, "v2.6.25", "Also check tick preemption from the hrtick (not modelled).";
    NONTASK_CAPACITY = true, "v3.5", "Subtract RT/IRQ time from CPU capacity.";
    TTWU_QUEUE = true, "v3.0", "Queue remote-LLC wakeups on the target's wake_list and send an IPI.";
    SIS_AVG_CPU = false, "v4.13", "select_idle_cpu gives up when avg_idle < avg_scan_cost.";
    SIS_PROP = true, "v4.13", "Bound the select_idle_cpu scan by avg_idle / avg_scan_cost.";
    WARN_DOUBLE_CLOCK = false, "v4.14", "Debug only (no effect here).";
    RT_PUSH_IPI = true, "v3.14", "RT push via IPI (no RT class here; no effect).";
    RT_RUNTIME_SHARE = true, "v3.9", "RT runtime sharing (no RT class here; no effect).";
    LB_MIN = false, "v2.6.32", "Load balancing skips tiny tasks when nothing has failed.";
    ATTACH_AGE_LOAD = true, "v4.4", "Age a migrated task's load on attach.";
    WA_IDLE = true, "v4.13", "wake_affine_idle: prefer an idle waker CPU.";
    WA_WEIGHT = true, "v4.13", "wake_affine_weight: compare effective loads.";
    WA_BIAS = true, "v4.13", "wake_affine_weight: bias by half the imbalance_pct.";
    RECENT_USED_CPU = true, "v4.16", "SIM_ switch for a kernel version: select_idle_sibling tries the wakee's recent_used_cpu (idle, in target's LLC, allowed) after prev, and an affine wakeup records the waker's CPU as the waker's recent_used_cpu (Mel Gorman, \"sched/fair: Use a recently used CPU as an idle candidate and the basis for SIS\", v4.16); NO_RECENT_USED_CPU is the v4.15 wakeup path, seed 003's base.";
    UTIL_EST = true, "v4.17", "Estimated utilization of sleeping tasks.";
    UTIL_EST_FASTUP = true, "v5.5", "util_est ewma jumps up at once when util rises.";
    LEGACY_SD_FLAG = true, "v5.6 (NO_: seed 002)", "select_task_rq_fair's combined sd_flag domain walk of v5.6; NO_LEGACY_SD_FLAG is seed 002's split walk with cached sd_balance_* pointers (Valentin Schneider, v2, March 2020).";
    SMT_BALANCE = false, "seed 003", "select_idle_sibling compares the target's core with one pseudo-random core per level by busy-CPU counts and searches one core only (Subhra Mazumdar, RFC v3, Jan 2018); SMT machines only.";
    SIS_MERGED = false, "v5.12", "One pass looks for an idle core while remembering the first idle CPU; SIS_AVG_CPU and the final select_idle_smt are gone (Mel Gorman).";
    SIS_UTIL = false, "v6.0", "select_idle_cpu's budget is the LLC's nr_idle_scan, refreshed by load balancing from the LLC's utilization (Chen Yu).";
    SIS_CLUSTER = false, "v6.7", "With SIS_MERGED on a topology with a CLS level: scan target's cluster first, and keep an idle prev or recent CPU of another cluster only as a fallback (Barry Song, Yicong Yang).";
    IDLE_CPU_MASK = false, "seed 000", "After a fruitless select_idle_core, select_idle_cpu scans only the CPUs it did not see busy (Parth Shah, RFC, July 2019).";
    MISFIT = true, "v4.20 (seed 004)", "Misfit tasks on asymmetric-capacity systems: rq.misfit_task_load at pick and tick, the group_misfit_task type, migrate_misfit with active balance, and the nohz kick and rd.overload on misfit (Morten Rasmussen, Valentin Schneider, 2018); NO_MISFIT is the kernel before the series.";
    SELECT_IDLE_CAPACITY = false, "v5.7", "Asymmetric-capacity wakeups of v5.7 (Morten Rasmussen, Valentin Schneider, 2020): select_idle_sibling on a sched_asym_cpucapacity system scans sd_asym_cpucapacity with select_idle_capacity (the first idle CPU, wrapping from target, that the task fits, else the idle CPU of largest capacity, else target), wake_cap no longer blocks affine wakeups, and asymmetric domains lose SD_BALANCE_WAKE; seed 002's test base includes it.";
    ASYM_FITS_CAPACITY = false, "v5.10", "SIM_ switch for a kernel version (with SELECT_IDLE_CAPACITY): v5.10's asym_fits_capacity (Vincent Guittot, \"Prefer prev cpu in asymmetric wakeup path\"): on a sched_asym_cpucapacity system select_idle_sibling first takes an idle target, prev or recent_used_cpu the task fits (capacity_of with the 1280/1024 margin), and only then scans sd_asym_cpucapacity with select_idle_capacity.";
    IDLEST_AVG_LOAD = false, "v5.8", "SIM_ switch for a kernel fix: update_sg_wakeup_stats computes avg_load for fully_busy and overloaded groups (the groups find_idlest_group compares by load), not for has_spare ones as v5.6's inverted test did (Tao Zhou, \"Fix condition of avg_load calculation\").";
    IDLEST_GROUP_UTIL = false, "v5.9", "SIM_ switch for a kernel fix: update_pick_idlest breaks a tie of idle-CPU counts between has_spare groups by the lower group_util (Peter Puhov, \"update_pick_idlest() Select group with lowest group_util when idle_cpus are equal\"), so that tasks created in a tight loop that sleep at once (rt-app's threads meeting at their start barrier, sysbench threads) spread over the groups instead of each landing on the core its predecessor left idle; v5.6 keeps the first group with the most idle CPUs.";
    IDLEST_V4_15 = false, "v4.15 (before v5.5)", "SIM_ switch for a kernel version (seed 003's base): find_idlest_group and find_idlest_group_cpu as v4.15 has them, before v4.17's NUMA stay-local test and v5.5's rework: groups compared by runnable load with an imbalance margin, then by blocked-inclusive avg_load, spare capacity first except for forks; the least runnable load among busy CPUs (fair/idlest_v4_15.rs).";
    WA_WEIGHT_V4_15 = false, "v4.15 (before v4.17)", "SIM_ switch for a kernel version (seed 003's base): wake_affine_weight as v4.15 has it: the two CPUs' runnable load (target_load/source_load at wake_idx 0, sleepers excluded) instead of v5.5's cpu_load, and affine when the waker side is at most the prev side, with no +1 on prev for a sync wakeup (v4.17 made a tie stay on prev).";
    IMB_NUMA_NR = false, "v5.18 (v6.12 form)", "SIM_ switch for a kernel version: the allowed NUMA imbalance scales with the LLCs (Mel Gorman): each SD_NUMA domain's imb_numa_nr comes from the LLC span at build time; calculate_imbalance (has_spare) zeroes an imbalance of at most 2 while the local group would run at most imb_numa_nr tasks, before halving; find_idlest_group (has_spare, NUMA) stays local on the same test with the idle-CPU difference and imb_numa_nr capped by the allowed CPUs of the local group, instead of v5.6's 'stay while the local node has an idle CPU'.";
    ANY_AND_DISTRIBUTE = false, "v5.9", "SIM_ switch for a kernel version: a task that an affinity change moves off its CPU goes to cpumask_any_and_distribute(cpu_active_mask, new_mask), the next allowed CPU after the calling CPU's previous pick (Paul Turner, \"sched/core: Distribute tasks within affinity masks\"), instead of v5.6's cpumask_any_and, the first allowed CPU (sched/affinity.rs).";
    VCPU_HOST_WAIT = true, "SIM_ guest host", "SIM_ model of the host under a TCG guest (machine files with vcpu_host_cpus and vcpu_host_slice_us only; no effect elsewhere): an interrupt for a halted vCPU waits until the host gives that vCPU a CPU, at once when one is free, else at the next end of a host slice (sched/vcpu_host.rs); NO_VCPU_HOST_WAIT takes it at once and lets the vCPU preempt the longest-running one when it turns busy (the model before 2026-12-03).";
    RANDOM_PLACEMENT = false, "SIM_ control", "SIM_ negative control, not a kernel behaviour: select_task_rq places every fork and wakeup of a task allowed on more than one CPU on a uniformly random allowed CPU (the run's own random stream), skipping the class's placement; load balancing is unchanged. The oracle suite's default deliberately wrong model (docs/validation.md, \"Verdicts over runs\").";
    EEVDF = false, "v6.6", "SIM_ switch for a kernel version, not a features.h bit: the fair class picks and places by Earliest Eligible Virtual Deadline First as in v6.6 (Peter Zijlstra): lag-preserving placement, eligibility against the weighted average vruntime, earliest-deadline pick, wakeup preemption by the pick rule, slice end at the deadline; no sleeper credit, START_DEBIT, buddies but NEXT_BUDDY, or tick/wakeup granularities (fair/eevdf.rs).";
    PLACE_LAG = true, "v6.6", "EEVDF only: place_entity keeps the lag an entity had at dequeue (scaled by (W+w)/W); NO_PLACE_LAG places every entity at the average vruntime.";
    PLACE_DEADLINE_INITIAL = true, "v6.6", "EEVDF only: ENQUEUE_INITIAL placements get half a slice to their first deadline (in v6.6 only task_fork_fair's provisional placement passes it).";
    RUN_TO_PARITY = true, "v6.6", "EEVDF only: the running entity keeps the CPU until its deadline is renewed, while it stays eligible.";
    PREEMPT_SHORT = false, "v6.12", "EEVDF only: update_curr reschedules a running entity whose slice protection is over (RUN_TO_PARITY's stash no longer equals its deadline) as soon as it is not eligible (did_preempt_short); the wakeup half (a wakee with a shorter slice cancels the protection, do_preempt_short) needs per-task sched_attr slices, which schedlab does not model: with every slice equal it never fires.";
    DELAY_DEQUEUE = false, "v6.12", "EEVDF only: a task that sleeps while not eligible (negative lag) stays queued, sched_delayed, competing until the pick reaches it (then it is dequeued for real) or it is woken (ttwu_runnable requeues it on its own CPU: no select_task_rq, no migration) (Peter Zijlstra).";
    DELAY_ZERO = false, "v6.12", "EEVDF only, with DELAY_DEQUEUE: a delayed entity leaves (at its pick) or is woken (requeue_delayed_entity, re-placed at the average) with its positive lag clipped to 0.";
    BREAK_EVEN = false, "seed 001", "find_idlest_group_cpu breaks exit-latency ties between idle CPUs by the earliest break-even deadline (entry time + exit latency of the state entered) instead of the latest idle_stamp (Daniel Lezcano, v2, March 2020).";
}

impl fmt::Display for SchedFeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl SchedFeat {
    pub fn from_name(s: &str) -> Option<SchedFeat> {
        SchedFeat::ALL.iter().copied().find(|f| f.name() == s)
    }

    /// Whether this switch exists in the fair class the model runs: EEVDF's own
    /// switches only under `EEVDF`; the CFS pick's sleeper credit, `START_DEBIT`
    /// and `LAST_BUDDY` (gone from `features.h` with v6.6) only without it.
    pub fn applies(self, eevdf: bool) -> bool {
        use SchedFeat::*;
        match self {
            PLACE_LAG
            | PLACE_DEADLINE_INITIAL
            | RUN_TO_PARITY
            | PREEMPT_SHORT
            | DELAY_DEQUEUE
            | DELAY_ZERO => eevdf,
            GENTLE_FAIR_SLEEPERS | START_DEBIT | LAST_BUDDY => !eevdf,
            _ => true,
        }
    }
}

/// The set of enabled features (`sysctl_sched_features`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features(u64);

/// A `sched_features` word as (bit name, on): `NAME` is on, `NO_NAME` off, as the
/// kernel's features file reads and takes them.
pub fn feature_word(word: &str) -> (&str, bool) {
    match word.strip_prefix("NO_") {
        Some(rest) => (rest, false),
        None => (word, true),
    }
}

impl Features {
    /// The v5.6 defaults.
    pub fn v5_6() -> Features {
        let mut f = Features(0);
        for &x in SchedFeat::ALL {
            f.set(x, x.v5_6_default());
        }
        f
    }

    #[inline]
    pub fn has(&self, f: SchedFeat) -> bool {
        self.0 & (1u64 << f as u8) != 0
    }

    pub fn set(&mut self, f: SchedFeat, on: bool) {
        if on {
            self.0 |= 1u64 << f as u8;
        } else {
            self.0 &= !(1u64 << f as u8);
        }
    }

    /// Apply one `NAME` or `NO_NAME` word, as written to `sched_features`.
    pub fn apply(&mut self, word: &str) -> Result<(), String> {
        let word = word.trim();
        let (name, on) = feature_word(word);
        let f = SchedFeat::from_name(name).ok_or_else(|| {
            format!("unknown scheduler feature `{word}` (see `schedlab list features`)")
        })?;
        if on && (f == SchedFeat::HRTICK || f == SchedFeat::DOUBLE_TICK) {
            return Err(format!("feature `{word}` is not modelled by schedlab"));
        }
        self.set(f, on);
        Ok(())
    }

    /// The resolved list, every feature as `NAME` or `NO_NAME`, in declaration order.
    pub(crate) fn resolved(&self) -> Vec<String> {
        SchedFeat::ALL
            .iter()
            .map(|&f| {
                if self.has(f) {
                    f.name().to_string()
                } else {
                    format!("NO_{}", f.name())
                }
            })
            .collect()
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Features({})", self.resolved().join(" "))
    }
}

/// How `sched_latency` & co. scale with the CPU count (`sysctl_sched_tunable_scaling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TunableScaling {
    None,
    Log,
    Linear,
}

/// Numeric scheduler knobs. Times are ns unless the name says otherwise.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Tunables {
    /// `CONFIG_HZ`: tick frequency.
    pub hz: u64,
    /// Normalised (1-CPU) `sysctl_sched_latency` before scaling: 6 ms.
    pub base_latency_ns: u64,
    pub base_min_granularity_ns: u64,
    pub base_wakeup_granularity_ns: u64,
    pub scaling: TunableScaling,
    /// `sysctl_sched_nr_latency` (derived: latency / min_granularity = 8).
    pub sched_nr_latency: u64,
    /// `sysctl_sched_migration_cost`.
    pub migration_cost_ns: u64,
    /// `sysctl_sched_nr_migrate`.
    pub nr_migrate: u32,
    /// `sysctl_sched_child_runs_first`.
    pub child_runs_first: bool,
    /// Values written as sysctls (`/proc/sys/kernel/sched_*_ns` shows the scaled
    /// value): when set they are used as they are, not scaled again.
    pub set_latency_ns: Option<u64>,
    pub set_min_granularity_ns: Option<u64>,
    pub set_wakeup_granularity_ns: Option<u64>,
    // Scaled values, filled by `scale_for`.
    pub sched_latency_ns: u64,
    pub sched_min_granularity_ns: u64,
    pub sched_wakeup_granularity_ns: u64,
    /// The cpufreq governor of every policy (`[kernel] cpufreq`, sched/cpufreq.rs).
    pub cpufreq: crate::sched::cpufreq::Governor,
    /// The cpuidle governor (`[kernel] cpuidle`, sched/cpuidle.rs).
    pub cpuidle: crate::sched::cpuidle::IdleGovernor,
    /// A PM QoS CPU latency request (`/dev/cpu_dma_latency`, µs), what
    /// `cpuidle_governor_latency_req` returns; `None`: no request.
    pub cpu_dma_latency_us: Option<u64>,
    /// The sched_ext scheduler every fair-policy task runs under (`[kernel] class =
    /// "ext"`, `scheduler = "simple"`; sched/ext/): `None` is the fair class.
    pub ext_scheduler: Option<String>,
    /// The compiled object of a BPF C scheduler (`scheduler = "x.bpf.c"`;
    /// sched/ext/bpf.rs): a cache path, so not part of any output.
    #[serde(skip)]
    pub ext_object: Option<std::path::PathBuf>,
    /// The BPF C scheduler's source, resolved, and the globals it is given
    /// (`[kernel.scheduler_globals]`, machine facts resolved): what a real kernel's
    /// loader needs to run the same scheduler (the oracle's guest).
    #[serde(skip)]
    pub ext_source: Option<(
        std::path::PathBuf,
        Vec<(String, crate::sched::ext::bpf::GlobalValue)>,
    )>,
    /// Kernel threads as background load (`[kernel] kthreads = "guest"`;
    /// workload/kthreads.rs): the profile's name, `None` for none.
    pub kthreads: Option<&'static str>,
    /// `kernel.watchdog_thresh` (s; 0 turns the lockup detectors off): the
    /// softlockup watchdog's per-CPU hrtimer fires every `2 × thresh / 5` s.
    pub watchdog_thresh: u64,
}

/// `CONFIG_HZ` is one of the kernel's four choices.
pub fn check_hz(hz: u64) -> Result<(), String> {
    if [100, 250, 300, 1000].contains(&hz) {
        Ok(())
    } else {
        Err(format!(
            "hz = {hz}: CONFIG_HZ must be 100, 250, 300 or 1000"
        ))
    }
}

impl Tunables {
    /// v5.6 defaults, scaled for `nr_cpus` online CPUs.
    pub fn v5_6(nr_cpus: usize) -> Tunables {
        let mut t = Tunables {
            hz: 250,
            base_latency_ns: 6_000_000,
            base_min_granularity_ns: 750_000,
            base_wakeup_granularity_ns: 1_000_000,
            scaling: TunableScaling::Log,
            sched_nr_latency: 8,
            migration_cost_ns: 500_000,
            nr_migrate: 32,
            child_runs_first: false,
            set_latency_ns: None,
            set_min_granularity_ns: None,
            set_wakeup_granularity_ns: None,
            sched_latency_ns: 0,
            sched_min_granularity_ns: 0,
            sched_wakeup_granularity_ns: 0,
            cpufreq: crate::sched::cpufreq::Governor::Performance,
            cpuidle: crate::sched::cpuidle::IdleGovernor::Menu,
            cpu_dma_latency_us: None,
            ext_scheduler: None,
            ext_object: None,
            ext_source: None,
            kthreads: None,
            watchdog_thresh: 10,
        };
        t.scale_for(nr_cpus);
        t
    }

    /// `get_update_sysctl_factor` + `update_sysctl`: factor 1 + ilog2(min(ncpu, 8))
    /// under LOG scaling.
    pub(crate) fn scale_for(&mut self, nr_cpus: usize) {
        let cpus = nr_cpus.clamp(1, 8) as u64;
        let factor = match self.scaling {
            TunableScaling::None => 1,
            TunableScaling::Linear => cpus,
            TunableScaling::Log => 1 + (63 - cpus.leading_zeros() as u64),
        };
        self.sched_latency_ns = self.set_latency_ns.unwrap_or(self.base_latency_ns * factor);
        self.sched_min_granularity_ns = self
            .set_min_granularity_ns
            .unwrap_or(self.base_min_granularity_ns * factor);
        self.sched_wakeup_granularity_ns = self
            .set_wakeup_granularity_ns
            .unwrap_or(self.base_wakeup_granularity_ns * factor);
        self.sched_nr_latency = self
            .sched_latency_ns
            .div_ceil(self.sched_min_granularity_ns.max(1))
            .max(1);
    }

    /// `TICK_NSEC`.
    #[inline]
    pub fn tick_nsec(&self) -> u64 {
        1_000_000_000 / self.hz
    }

    /// The softlockup watchdog's hrtimer period (`sample_period`: the softlockup
    /// threshold, twice `watchdog_thresh`, over 5), ns; `None` when it is off.
    pub fn watchdog_period_ns(&self) -> Option<u64> {
        (self.watchdog_thresh > 0).then(|| self.watchdog_thresh * 2 * 1_000_000_000 / 5)
    }

    /// Apply `name = value` from `[kernel.tunables]`.
    pub fn set(&mut self, name: &str, v: &toml::Value) -> Result<(), String> {
        let int = |v: &toml::Value| -> Result<u64, String> {
            match v {
                toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
                _ => Err(format!("tunable `{name}` needs a non-negative integer")),
            }
        };
        // The sysctl's own bounds (kernel/sysctl.c: the granularities between
        // `min_sched_granularity_ns` (100 µs) or 0 and `max_sched_granularity_ns`
        // (1 s); the plain `int` sysctls up to INT_MAX).
        let within = |v: &toml::Value, lo: u64, hi: u64| -> Result<u64, String> {
            let x = int(v)?;
            if (lo..=hi).contains(&x) {
                Ok(x)
            } else {
                Err(format!(
                    "tunable `{name}` = {x} is outside {lo}..={hi}, the sysctl's range"
                ))
            }
        };
        const GRAN_MIN: u64 = 100_000;
        const GRAN_MAX: u64 = 1_000_000_000;
        const INT_MAX: u64 = i32::MAX as u64;
        match name {
            "hz" => {
                let hz = int(v)?;
                check_hz(hz)?;
                self.hz = hz;
            }
            "sched_latency_ns" => self.set_latency_ns = Some(within(v, GRAN_MIN, GRAN_MAX)?),
            "sched_min_granularity_ns" => {
                self.set_min_granularity_ns = Some(within(v, GRAN_MIN, GRAN_MAX)?)
            }
            "sched_wakeup_granularity_ns" => {
                self.set_wakeup_granularity_ns = Some(within(v, 0, GRAN_MAX)?)
            }
            "sched_migration_cost_ns" => self.migration_cost_ns = within(v, 0, INT_MAX)?,
            "sched_nr_migrate" => self.nr_migrate = within(v, 0, INT_MAX)? as u32,
            "sched_child_runs_first" => self.child_runs_first = int(v)? != 0,
            // The PM QoS class takes 0..=PM_QOS_DEFAULT_VALUE (2000 s in µs).
            "cpu_dma_latency_us" => self.cpu_dma_latency_us = Some(within(v, 0, 2_000_000_000)?),
            // proc_watchdog_thresh's range: 0 (off) to 60 s.
            "watchdog_thresh" => self.watchdog_thresh = within(v, 0, 60)?,
            "sched_tunable_scaling" => {
                self.scaling = match int(v)? {
                    0 => TunableScaling::None,
                    1 => TunableScaling::Log,
                    2 => TunableScaling::Linear,
                    x => return Err(format!("sched_tunable_scaling = {x}: must be 0, 1 or 2")),
                }
            }
            _ => {
                return Err(format!(
                "unknown tunable `{name}` (known: hz, sched_latency_ns, sched_min_granularity_ns, \
                     sched_wakeup_granularity_ns, sched_migration_cost_ns, sched_nr_migrate, \
                     sched_child_runs_first, sched_tunable_scaling, cpu_dma_latency_us, \
                     watchdog_thresh)"
            ))
            }
        }
        Ok(())
    }
}

/// A named kernel preset: a version's feature set and domain-building rules. A
/// later version is the v5.6 model plus the upstream changes schedlab models
/// (docs/kernel-mapping.md §9 lists what each bundles and what it lacks).
#[derive(Clone, Debug)]
pub struct KernelPreset {
    pub name: &'static str,
    pub description: &'static str,
    /// The preset this one extends (its changes are applied first), if any.
    pub base: Option<&'static str>,
    /// Features switched on (`NAME`) or off (`NO_NAME`) on top of the v5.6 defaults
    /// (or of `base`).
    pub changes: &'static [&'static str],
    pub topology: fn() -> TopologyOpts,
}

fn topo_v5_6() -> TopologyOpts {
    TopologyOpts::v5_6()
}

/// v5.7 drops the asymmetric SD_BALANCE_WAKE; v5.10 lowers the default
/// `imbalance_pct` to 117 and `busy_factor` to 16. (v5.8 also removed
/// SD_LOAD_BALANCE; schedlab keeps the flag on every domain, which is what it meant.)
fn topo_v5_10() -> TopologyOpts {
    TopologyOpts {
        imbalance_pct_default: 117,
        busy_factor: 16,
        asym_balance_wake: false,
        ..TopologyOpts::v5_6()
    }
}

/// No domain-building change between v5.10 and v5.12.
fn topo_v5_12() -> TopologyOpts {
    topo_v5_10()
}

/// v5.16 adds the cluster (CLS) level.
fn topo_v6_0() -> TopologyOpts {
    TopologyOpts {
        cluster_level: true,
        ..topo_v5_12()
    }
}

/// The kernel presets schedlab knows.
pub const KERNEL_PRESETS: &[KernelPreset] = &[
    KernelPreset {
        name: "v5.6",
        description: "Linux v5.6 fair class (the seeds' baseline); default",
        base: None,
        changes: &[],
        topology: topo_v5_6,
    },
    KernelPreset {
        name: "v4.19",
        description: "v5.6 without the v4.20 misfit series (NO_MISFIT); only the misfit difference is modelled, everything else (load-balance rework, wakeup path, domain rules) stays v5.6",
        base: None,
        changes: &["NO_MISFIT"],
        topology: topo_v5_6,
    },
    KernelPreset {
        name: "v4.15",
        description: "seed 003's base (v4.15-rc6): v5.6 without v4.16's recent_used_cpu step (NO_RECENT_USED_CPU), v4.17's util_est and v5.5's fast ramp (NO_UTIL_EST, NO_UTIL_EST_FASTUP) and the v4.20 misfit series (NO_MISFIT), with v4.15's load-based find_idlest_group (IDLEST_V4_15) and wake_affine_weight (WA_WEIGHT_V4_15: runnable load, affine on a tie); a partial base: its load balancer (cpu_load[] indexes, LB_BIAS, no v5.5 rework) and its 589 SMT thread capacity are not modelled, and the rest stays v5.6 (docs/design/seed-bases.md ranks them)",
        base: None,
        changes: &[
            "NO_RECENT_USED_CPU",
            "NO_UTIL_EST",
            "NO_UTIL_EST_FASTUP",
            "NO_MISFIT",
            "IDLEST_V4_15",
            "WA_WEIGHT_V4_15",
        ],
        topology: topo_v5_6,
    },
    KernelPreset {
        name: "v5.10",
        description: "v5.6 + v5.7 asymmetric-capacity wakeups (SELECT_IDLE_CAPACITY) with v5.10's prev-first fit checks (ASYM_FITS_CAPACITY), v5.8's find_idlest_group avg_load fix (IDLEST_AVG_LOAD), v5.9's tie of idle-CPU counts broken by group_util (IDLEST_GROUP_UTIL), v5.9's distributed affinity-change destinations (ANY_AND_DISTRIBUTE), v5.10 imbalance_pct 117 / busy_factor 16; the v5.6 sd_flag domain walk (LEGACY_SD_FLAG), SIS_PROP, no SIS_AVG_CPU. Not modelled: v5.7 runnable_avg in group classification, v5.10's relaxed detach_tasks load test (docs/kernel-mapping.md §9)",
        base: None,
        changes: &[
            "SELECT_IDLE_CAPACITY",
            "ASYM_FITS_CAPACITY",
            "IDLEST_AVG_LOAD",
            "IDLEST_GROUP_UTIL",
            "ANY_AND_DISTRIBUTE",
        ],
        topology: topo_v5_10,
    },
    KernelPreset {
        name: "v5.12",
        description: "v5.10 + merged idle-core/idle-CPU scan (SIS_MERGED; SIS_AVG_CPU gone)",
        base: Some("v5.10"),
        changes: &["SIS_MERGED", "NO_SIS_AVG_CPU"],
        topology: topo_v5_12,
    },
    KernelPreset {
        name: "v6.0",
        description: "v5.12 + SIS_UTIL scan budget (SIS_PROP off), v5.16 cluster level, v5.18 NUMA imbalance by LLC span (IMB_NUMA_NR, in its v6.0 = v6.12 form)",
        base: Some("v5.12"),
        changes: &["SIS_UTIL", "NO_SIS_PROP", "IMB_NUMA_NR"],
        topology: topo_v6_0,
    },
    KernelPreset {
        name: "v6.6",
        description: "v6.0 + the EEVDF fair class (lag placement, eligibility, earliest-deadline pick, RUN_TO_PARITY); base_slice = 0.75 ms × factor",
        base: Some("v6.0"),
        changes: &["EEVDF", "NO_START_DEBIT", "NO_LAST_BUDDY"],
        topology: topo_v6_0,
    },
    KernelPreset {
        name: "v6.12",
        description: "v6.6 + v6.7 cluster-first idle scan (SIS_CLUSTER; acts where a CLS level sits under the LLC), EEVDF's DELAY_DEQUEUE / DELAY_ZERO (a sleeper with negative lag stays queued; its wakeup requeues it on its CPU without select_task_rq) and PREEMPT_SHORT; base_slice 0.75 ms × factor as v6.6. Not modelled: v6.8 deadline-ordered tree, PLACE_REL_DEADLINE, v6.6 sibling_imbalance, wakelist wakeups to idle CPUs in the same LLC (docs/kernel-mapping.md §9)",
        base: Some("v6.6"),
        changes: &["SIS_CLUSTER", "PREEMPT_SHORT", "DELAY_DEQUEUE", "DELAY_ZERO"],
        topology: topo_v6_0,
    },
];

/// The release a preset named `name` models, as `uname -r` starts: `v5.6` →
/// `5.6.0`, `v6.12` → `6.12.0`.
pub fn release_of(name: &str) -> String {
    let v = name.trim_start_matches('v');
    let mut s = v.to_string();
    for _ in v.matches('.').count()..2 {
        s.push_str(".0");
    }
    s
}

/// `(major, minor)` of the release a preset named `name` models (`v5.10` →
/// `(5, 10)`; what does not parse counts as 0).
pub fn version_of(name: &str) -> (u32, u32) {
    let mut it = name
        .trim_start_matches('v')
        .split('.')
        .map(|x| x.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

impl KernelPreset {
    pub fn by_name(name: &str) -> Option<&'static KernelPreset> {
        KERNEL_PRESETS.iter().find(|k| k.name == name)
    }
    /// The release it models ([`release_of`]).
    pub fn release(&self) -> String {
        release_of(self.name)
    }
    /// Its `(major, minor)` ([`version_of`]).
    pub fn version(&self) -> (u32, u32) {
        version_of(self.name)
    }
    pub fn features(&self) -> Features {
        let mut f = match self.base {
            Some(b) => Self::by_name(b).expect("a preset's base exists").features(),
            None => Features::v5_6(),
        };
        for w in self.changes {
            f.apply(w).expect("preset feature names are valid");
        }
        f
    }
    pub fn topology_opts(&self) -> TopologyOpts {
        (self.topology)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v5_6_defaults_match_features_h() {
        let f = Features::v5_6();
        for on in [
            "GENTLE_FAIR_SLEEPERS",
            "START_DEBIT",
            "LAST_BUDDY",
            "TTWU_QUEUE",
            "SIS_PROP",
            "WA_BIAS",
        ] {
            assert!(f.has(SchedFeat::from_name(on).unwrap()), "{on}");
        }
        for off in ["NEXT_BUDDY", "SIS_AVG_CPU", "LB_MIN", "HRTICK"] {
            assert!(!f.has(SchedFeat::from_name(off).unwrap()), "{off}");
        }
    }

    #[test]
    fn no_prefix_parses_like_debugfs() {
        let mut f = Features::v5_6();
        f.apply("NO_SIS_PROP").unwrap();
        assert!(!f.has(SchedFeat::SIS_PROP));
        f.apply("SIS_AVG_CPU").unwrap();
        assert!(f.has(SchedFeat::SIS_AVG_CPU));
        assert!(f
            .apply("SIS_FOO")
            .unwrap_err()
            .contains("unknown scheduler feature `SIS_FOO`"));
        assert!(f.apply("HRTICK").is_err());
        assert!(f.resolved().contains(&"NO_SIS_PROP".to_string()));
    }

    #[test]
    fn sysctl_values_are_taken_as_written() {
        let mut t = Tunables::v5_6(16);
        t.set("sched_latency_ns", &toml::Value::Integer(10_000_000))
            .unwrap();
        t.scale_for(16);
        assert_eq!(
            t.sched_latency_ns, 10_000_000,
            "not multiplied by the CPU factor again"
        );
        assert_eq!(t.sched_min_granularity_ns, 3_000_000);
        assert!(t.set("hz", &toml::Value::Integer(123)).is_err());
        assert!(t.set("sched_foo", &toml::Value::Integer(1)).is_err());
    }

    #[test]
    fn sysctl_ranges_are_the_kernels() {
        let mut t = Tunables::v5_6(16);
        let set = |t: &mut Tunables, k: &str, v: i64| t.set(k, &toml::Value::Integer(v));
        for (k, lo, hi) in [
            ("sched_latency_ns", 100_000, 1_000_000_000),
            ("sched_min_granularity_ns", 100_000, 1_000_000_000),
            ("sched_wakeup_granularity_ns", 0, 1_000_000_000),
            ("sched_migration_cost_ns", 0, i32::MAX as i64),
            ("sched_nr_migrate", 0, i32::MAX as i64),
            ("watchdog_thresh", 0, 60),
        ] {
            assert!(set(&mut t, k, lo).is_ok(), "{k} = {lo}");
            assert!(set(&mut t, k, hi).is_ok(), "{k} = {hi}");
            let e = set(&mut t, k, hi + 1).unwrap_err();
            assert!(e.contains("the sysctl's range"), "{e}");
            if lo > 0 {
                assert!(set(&mut t, k, lo - 1).is_err(), "{k} = {}", lo - 1);
            }
            assert!(set(&mut t, k, i64::MAX).is_err());
        }
        assert_eq!(t.nr_migrate, i32::MAX as u32, "not truncated");
        // The softlockup hrtimer's period: 2 × thresh / 5 s; 0 is off.
        assert_eq!(Tunables::v5_6(1).watchdog_period_ns(), Some(4_000_000_000));
        set(&mut t, "watchdog_thresh", 1).unwrap();
        assert_eq!(t.watchdog_period_ns(), Some(400_000_000));
        set(&mut t, "watchdog_thresh", 0).unwrap();
        assert_eq!(t.watchdog_period_ns(), None);
    }

    #[test]
    fn log_scaling_matches_kernel_table() {
        // factor = 1 + ilog2(min(ncpu, 8)): 1 CPU -> 1, 2 -> 2, 4 -> 3, 6 -> 3, 8+ -> 4.
        for (n, lat) in [(1, 6), (2, 12), (4, 18), (6, 18), (8, 24), (176, 24)] {
            let t = Tunables::v5_6(n);
            assert_eq!(t.sched_latency_ns, lat * 1_000_000, "{n} cpus");
            assert_eq!(t.sched_nr_latency, 8);
        }
        let t = Tunables::v5_6(88);
        assert_eq!(t.sched_min_granularity_ns, 3_000_000);
        assert_eq!(t.sched_wakeup_granularity_ns, 4_000_000);
        assert_eq!(t.tick_nsec(), 4_000_000);
    }
}
