//! CPU frequency: the `performance` and `schedutil` governors (cpufreq.c,
//! cpufreq_performance.c, cpufreq_schedutil.c, v5.6).
//!
//! A cpufreq *policy* is a set of CPUs sharing one clock (a [`FreqDomain`] of the
//! machine) with an ascending OPP table. Its governor chooses the frequency:
//!
//! * **performance** pins every policy at its highest OPP. This is what schedlab did
//!   before frequency scaling existed, and it stays the default
//!   (`[kernel] cpufreq = "performance"`), so earlier results are unchanged.
//! * **powersave** pins every policy at its lowest OPP (`cpufreq_powersave.c`), set
//!   when the governor starts, before any task runs.
//! * **schedutil** is driven by the scheduler: whenever the fair class updates a
//!   CPU's utilization (`cpufreq_update_util` from `update_load_avg` at enqueue,
//!   dequeue and the tick), `sugov_update_shared` runs on that CPU. Unless the policy
//!   changed frequency less than `rate_limit_us` ago (`sugov_should_update_freq`), it
//!   takes the busiest CPU of the policy: for each CPU `util = cpu_util_cfs` (util_avg,
//!   or util_est when larger) made effective by `schedutil_cpu_util(FREQUENCY_UTIL)`
//!   (capped at the CPU's capacity; there is no RT, DL or IRQ pressure in schedlab), the
//!   CPU with the largest `util/max` wins; `get_next_freq` then asks for
//!   `next_f = 1.25 × F × util / max` (`map_util_freq`), `F` the policy's maximum
//!   frequency on a frequency-invariant architecture (arm64), the current one
//!   otherwise, and `cpufreq_driver_resolve_freq` turns it into the lowest OPP at or
//!   above `next_f` (the highest OPP when none is). A new frequency restarts the rate
//!   limit (`sugov_update_next_freq`). `rate_limit_us` is
//!   `cpufreq_policy_transition_delay_us`: the driver's `transition_latency` in µs ×
//!   1000 (`LATENCY_MULTIPLIER`), capped at 10 ms; 1 ms when the latency is unknown.
//!
//! A frequency change is applied at once (fast switch): each CPU of the policy gets
//! `freq_scale = f × 1024 / f_max` (arm64 `topology_set_freq_scale`, what
//! `arch_scale_freq_capacity` returns, hence PELT's frequency invariance), and its
//! execution rate is re-derived after the work done so far at the old rate has been
//! accounted (the same sync → re-rate → re-arm sequence as an SMT sibling change);
//! PELT's clock is brought up to date first so the elapsed time is scaled by the old
//! frequency. Each change emits `SchedEvent::CpuFrequency` per CPU (the
//! `cpu_frequency` tracepoint).
//!
//! **Simplifications.** Updates are applied synchronously even where the real driver
//! is slow (SCPI on Juno uses a kthread) and the hardware's transition time is not
//! modelled (the new frequency holds from the request on); iowait boost, uclamp,
//! `sugov_update_single`'s "do not lower a busy CPU" rule, policy min/max limits and
//! the `cached_raw_freq` shortcut are not modelled; a util change triggers an update
//! at every enqueue/dequeue/tick, not only when PELT decayed (the rate limit bounds
//! the difference); idle CPUs' blocked utilization is not refreshed for the governor
//! (only the next balance or enqueue ages it, as in the kernel when no update runs).
//! x86 v5.6 has no frequency invariance, but the x86 presets have a single OPP, so
//! the governor cannot change anything there.

use crate::engine::{Observer, SimTime};
use crate::machine::{Arch, FreqDomain, Machine};
use crate::sched::core::Kernel;
use crate::sched::SchedEvent;

/// A cpufreq governor (`scaling_governor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Governor {
    /// Highest OPP always (the default; schedlab's behaviour before issue 6).
    #[default]
    Performance,
    /// The scheduler-driven governor.
    Schedutil,
    /// Lowest OPP always (`cpufreq_powersave.c`).
    Powersave,
}

impl Governor {
    pub const NAMES: [&'static str; 3] = ["performance", "schedutil", "powersave"];

    pub fn by_name(s: &str) -> Option<Governor> {
        match s {
            "performance" => Some(Governor::Performance),
            "schedutil" => Some(Governor::Schedutil),
            "powersave" => Some(Governor::Powersave),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Governor::Performance => "performance",
            Governor::Schedutil => "schedutil",
            Governor::Powersave => "powersave",
        }
    }
}

/// `cpufreq_policy_transition_delay_us` (v5.6) for a driver without its own
/// `transition_delay_us`: latency (µs) × `LATENCY_MULTIPLIER` (1000), at most 10 ms;
/// 1 ms (`LATENCY_MULTIPLIER` µs) when the latency is unknown (0).
pub(crate) fn transition_delay_us(transition_latency_ns: u64) -> u64 {
    let latency_us = transition_latency_ns / 1_000;
    if latency_us > 0 {
        (latency_us * 1_000).min(10_000)
    } else {
        1_000
    }
}

/// `map_util_freq(util, freq, cap)`: `(freq + freq/4) × util / cap`.
#[inline]
pub(crate) fn map_util_freq(util: u64, freq: u64, cap: u64) -> u64 {
    (freq + (freq >> 2)) * util / cap.max(1)
}

/// `cpufreq_driver_resolve_freq` with `CPUFREQ_RELATION_L`: the lowest OPP at or above
/// `target_khz`, or the highest OPP when none is.
pub(crate) fn resolve_freq(fd: &FreqDomain, target_khz: u64) -> u32 {
    fd.opps
        .iter()
        .find(|o| o.freq_khz as u64 >= target_khz)
        .or(fd.opps.last())
        .map(|o| o.freq_khz)
        .unwrap_or(0)
}

/// `freq_scale` of arm64 `topology_set_freq_scale`: `cur × 1024 / max`.
#[inline]
pub(crate) fn freq_scale_of(cur_khz: u32, max_khz: u32) -> u64 {
    if max_khz == 0 {
        1024
    } else {
        (cur_khz as u64 * 1024 / max_khz as u64).clamp(1, 1024)
    }
}

/// One policy's governor state (`struct sugov_policy`, the parts modelled).
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyState {
    /// `policy->cur`.
    pub cur_khz: u32,
    /// `freq_update_delay_ns` (`rate_limit_us` × 1000).
    pub rate_limit_ns: u64,
    /// `last_freq_update_time`; `None` before the first change (the kernel starts at
    /// 0, long before any task runs).
    pub last_update: Option<SimTime>,
}

/// All policies of the machine and the governor running them.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuFreq {
    pub governor: Governor,
    pub policies: Vec<PolicyState>,
    /// `arch_scale_freq_invariant()`: arm64 with a cpufreq driver that reports
    /// frequency changes (v5.6 x86 has none).
    pub invariant: bool,
    /// The root domain has perf domains (`sched_energy_enabled`, fair/eas.rs).
    pub perf_domains: bool,
}

impl CpuFreq {
    /// Every policy starts at its highest OPP (the boot frequency). `asym` is the
    /// topology's `sched_asym_cpucapacity`.
    pub fn new(m: &Machine, governor: Governor, asym: bool) -> CpuFreq {
        CpuFreq {
            perf_domains: crate::sched::fair::eas::perf_domains_possible(
                m,
                asym,
                governor == Governor::Schedutil,
            ),
            governor,
            policies: m
                .freq_domains
                .iter()
                .map(|fd| PolicyState {
                    cur_khz: fd.max_freq_khz(),
                    rate_limit_ns: transition_delay_us(fd.transition_latency_ns) * 1_000,
                    last_update: None,
                })
                .collect(),
            invariant: m.arch != Arch::X86,
        }
    }
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `cpu_util_cfs(rq)` (v5.6): util_avg, or the util_est sum when larger (not
    /// capped: `schedutil_cpu_util` caps).
    pub(crate) fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        let a = &self.rqs[cpu].cfs.avg;
        let mut util = a.util_avg;
        if self.feat.has(crate::sched::features::SchedFeat::UTIL_EST) {
            util = util.max(a.util_est.enqueued as u64);
        }
        util
    }

    /// `sugov_next_freq_shared` + `get_next_freq` for policy `d`: the frequency
    /// schedutil asks for now (an OPP).
    pub fn sugov_next_freq(&self, d: usize) -> u32 {
        let fd = &self.m.freq_domains[d];
        let (mut util, mut max) = (0u64, 1u64);
        for j in fd.cpus.iter() {
            let j_max = self.rqs[j].cpu_capacity_orig;
            // schedutil_cpu_util(FREQUENCY_UTIL) without RT/DL/IRQ: min(util, max).
            let j_util = self.cpu_util_cfs(j).min(j_max);
            if j_util * max > j_max * util {
                util = j_util;
                max = j_max;
            }
        }
        let p = &self.cpufreq.policies[d];
        let f = if self.cpufreq.invariant {
            fd.max_freq_khz()
        } else {
            p.cur_khz
        };
        resolve_freq(fd, map_util_freq(util, f as u64, max))
    }

    /// The governor's start (`cpufreq_gov_*_limits` at policy start): powersave sets
    /// every policy to its lowest OPP; performance and schedutil keep the boot
    /// frequency (the highest OPP) until schedutil's first update.
    pub(crate) fn cpufreq_start(&mut self) {
        if self.cpufreq.governor != Governor::Powersave {
            return;
        }
        for d in 0..self.m.freq_domains.len() {
            if let Some(low) = self.m.freq_domains[d].opps.first().map(|o| o.freq_khz) {
                self.set_policy_freq(d, low);
            }
        }
    }

    /// `cpufreq_update_util(rq, 0)` → `sugov_update_shared` on `cpu` (schedutil
    /// only): rate limit, next frequency, fast switch.
    pub fn cpufreq_update_util(&mut self, cpu: usize) {
        if self.cpufreq.governor != Governor::Schedutil {
            return;
        }
        let d = self.m.cpus[cpu].freq_domain;
        let now = self.now;
        let p = &self.cpufreq.policies[d];
        if p.last_update.is_some_and(|t| now - t < p.rate_limit_ns) {
            return;
        }
        let next = self.sugov_next_freq(d);
        if next != self.cpufreq.policies[d].cur_khz {
            self.cpufreq.policies[d].last_update = Some(now);
            self.set_policy_freq(d, next);
        }
    }

    /// `cpufreq_driver_fast_switch`: policy `d` runs at `khz` from now on. Work done
    /// so far is accounted at the old rate first; `freq_scale` and the rate of every
    /// CPU of the policy follow; one `cpu_frequency` event per CPU.
    pub fn set_policy_freq(&mut self, d: usize, khz: u32) {
        self.cpufreq.policies[d].cur_khz = khz;
        let scale = freq_scale_of(khz, self.m.freq_domains[d].max_freq_khz());
        let cpus = self.m.freq_domains[d].cpus;
        for cpu in cpus.iter() {
            self.rq_update_clock(cpu, self.now);
            self.retime_cpu(cpu, |rq| rq.freq_scale = scale);
            self.emit(SchedEvent::CpuFrequency { cpu, freq_khz: khz });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::preset;

    #[test]
    fn transition_delay_follows_the_kernel_formula() {
        assert_eq!(transition_delay_us(500_000), 10_000); // 500 µs × 1000 capped
        assert_eq!(transition_delay_us(5_000), 5_000); // 5 µs × 1000
        assert_eq!(transition_delay_us(999), 1_000); // < 1 µs reads as unknown
        assert_eq!(transition_delay_us(0), 1_000);
    }

    #[test]
    fn next_freq_is_the_lowest_opp_above_125_percent() {
        let m = preset("juno-r0").unwrap();
        let big = &m.freq_domains[1]; // A57: 450 625 800 950 1100 MHz
                                      // util 300 on cap 1024: 1.25 × 1_100_000 × 300/1024 = 402_832 kHz -> 450 MHz
        assert_eq!(map_util_freq(300, 1_100_000, 1024), 402_832);
        assert_eq!(resolve_freq(big, 402_832), 450_000);
        // util 500: 671_386 kHz -> 800 MHz; util 700: 939_941 -> 950; 800: 1_074_218 -> 1100
        assert_eq!(
            resolve_freq(big, map_util_freq(500, 1_100_000, 1024)),
            800_000
        );
        assert_eq!(
            resolve_freq(big, map_util_freq(700, 1_100_000, 1024)),
            950_000
        );
        assert_eq!(
            resolve_freq(big, map_util_freq(800, 1_100_000, 1024)),
            1_100_000
        );
        // above the top: the top OPP
        assert_eq!(resolve_freq(big, 5_000_000), 1_100_000);
        assert_eq!(freq_scale_of(450_000, 1_100_000), 418);
    }

    #[test]
    fn powersave_starts_every_policy_at_its_lowest_opp() {
        use crate::sched::features::{Features, Tunables};
        use crate::sched::topology::TopologyOpts;
        let m = preset("hikey960").unwrap();
        let n = m.nr_cpus();
        let mut tun = Tunables::v5_6(n);
        tun.cpufreq = Governor::Powersave;
        let k = Kernel::new(
            m,
            Features::v5_6(),
            tun,
            &TopologyOpts::v5_6(),
            crate::engine::NullObserver,
        );
        // HiKey960: A53 533 MHz of 1 844, A73 903 MHz of 2 362.
        assert_eq!(k.cpufreq.policies[0].cur_khz, 533_000);
        assert_eq!(k.cpufreq.policies[1].cur_khz, 903_000);
        assert_eq!(k.rqs[0].freq_scale, 533_000 * 1024 / 1_844_000);
        assert_eq!(k.rqs[7].freq_scale, 903_000 * 1024 / 2_362_000);
        // No Energy Model use without schedutil.
        assert!(!k.cpufreq.perf_domains);
        // Performance keeps the boot frequency.
        let m = preset("hikey960").unwrap();
        let k = Kernel::new(
            m,
            Features::v5_6(),
            Tunables::v5_6(n),
            &TopologyOpts::v5_6(),
            crate::engine::NullObserver,
        );
        assert_eq!(k.rqs[0].freq_scale, 1024);
    }
}
