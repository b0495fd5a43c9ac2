//! The result of one run, and its versioned JSON form.

use crate::engine::wire::{de_static, de_static_keys, Name};
use crate::engine::Observer;
use crate::experiment::Scenario;
use crate::metrics::{FuncStats, Observers, Summary};
use crate::sched::{Func, SchedEvent};
use crate::sim::{Sim, StopReason};
use crate::workload::generators::ToolInput;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the result JSON schema. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MachineInfo {
    pub name: String,
    pub nr_cpus: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelInfo {
    pub preset: String,
    pub features: Vec<String>,
    /// The sched_ext scheduler every task ran under (`[kernel] class = "ext"`);
    /// absent for the fair class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// When the sched_ext scheduler failed: the kernel unloaded it at that time and
    /// the fair class ran every task after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_exit: Option<SchedulerExit>,
}

/// A sched_ext scheduler's failure (`scx_ops_error`) and the fallback to the fair
/// class that followed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchedulerExit {
    pub t_ns: u64,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CoreMetrics {
    pub wakeup_latency_ns: Summary,
    pub runqueue_wait_ns: Summary,
    #[serde(deserialize_with = "de_static_keys")]
    pub migrations: BTreeMap<&'static str, u64>,
    /// Busy fraction per CPU (0..1).
    pub cpu_busy: Vec<f64>,
    /// Per CPU, fraction of the run spent in each idle state (by state name).
    pub idle_residency: Vec<BTreeMap<String, f64>>,
    /// Per frequency domain, fraction of the run at each OPP (kHz, as text); empty
    /// without cpufreq.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freq_residency: Vec<BTreeMap<String, f64>>,
    #[serde(deserialize_with = "de_static_keys")]
    pub functions: BTreeMap<&'static str, FuncStats>,
    #[serde(deserialize_with = "de_static_keys")]
    pub placement_reasons: BTreeMap<&'static str, u64>,
    pub context_switches: u64,
    pub wakeups: u64,
    /// `[run] shadow`'s counts: how often `select_idle_sibling`'s scans would have
    /// chosen differently with the shadowed feature switched (absent when off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sis_shadow: Option<ShadowReport>,
    /// Energy from the Energy Model (metrics/energy.rs); a note only when the
    /// machine has none.
    pub energy_joules: crate::metrics::energy::EnergyReport,
    /// Wakeup-latency CDF points `(ns, fraction)` for reports (not in the JSON).
    #[serde(skip)]
    pub wakeup_latency_cdf: Vec<(u64, f64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadResult {
    pub kind: String,
    pub stop_reason: StopReason,
    /// Every metric the programs recorded.
    pub metrics: BTreeMap<String, WorkloadMetric>,
    /// The benchmark tool's own printed result (generator workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<String>,
    /// The numbers behind `tool_output`, by the tool's own names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadMetric {
    #[serde(deserialize_with = "de_static")]
    pub unit: Name,
    #[serde(flatten)]
    pub summary: Summary,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskResult {
    pub name: String,
    pub pid: u32,
    pub start_ns: u64,
    pub exit_ns: Option<u64>,
    pub runtime_ns: u64,
    pub runqueue_wait_ns: u64,
    pub wakeups: u64,
    pub migrations: u64,
}

/// What `[run] shadow` counted over a run (`crate::sched::fair::idle::SisShadow`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShadowReport {
    /// The feature whose other setting was run beside the real one.
    pub feature: String,
    #[serde(flatten)]
    pub counts: crate::sched::fair::idle::SisShadow,
}

/// Everything a run reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub scenario: String,
    pub seed: u64,
    pub machine: MachineInfo,
    pub kernel: KernelInfo,
    pub sim_time_ns: u64,
    pub events: u64,
    /// The only field allowed to differ between identical runs.
    pub wall_seconds: f64,
    pub metrics: CoreMetrics,
    pub workload: WorkloadResult,
    pub tasks: Vec<TaskResult>,
    /// The latency histograms' buckets (not in the JSON; the Python `latency`
    /// table).
    #[serde(skip)]
    pub latency_buckets: Vec<LatencyBuckets>,
}

/// One latency distribution's histogram buckets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyBuckets {
    /// `wakeup_latency`, `runqueue_wait` or `workload.<name>`.
    pub metric: String,
    #[serde(deserialize_with = "de_static")]
    pub unit: Name,
    /// `(value, count)`, rising (see [`crate::stats::LatencyHist::buckets`]).
    pub buckets: Vec<(u64, u64)>,
}

/// A [`RunResult`] whole, as it crosses from the sandbox
/// (`experiment::sandbox`): with the fields its JSON leaves out.
#[derive(Serialize, Deserialize)]
pub(crate) struct Wire {
    result: RunResult,
    cdf: Vec<(u64, f64)>,
    buckets: Vec<LatencyBuckets>,
    /// `functions`' `(probed_sq, cost_sq)`, in the map's order.
    squares: Vec<(u128, u128)>,
}

impl Wire {
    pub(crate) fn of(mut r: RunResult) -> Wire {
        Wire {
            cdf: std::mem::take(&mut r.metrics.wakeup_latency_cdf),
            buckets: std::mem::take(&mut r.latency_buckets),
            squares: r
                .metrics
                .functions
                .values()
                .map(|f| (f.probed_sq, f.cost_sq))
                .collect(),
            result: r,
        }
    }

    pub(crate) fn into_result(self) -> RunResult {
        let mut r = self.result;
        r.metrics.wakeup_latency_cdf = self.cdf;
        r.latency_buckets = self.buckets;
        for (f, (p, c)) in r.metrics.functions.values_mut().zip(self.squares) {
            f.probed_sq = p;
            f.cost_sq = c;
        }
        r
    }
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 / b as f64 * 1e6).round() / 1e6
    }
}

impl RunResult {
    /// Collect the result of a finished simulation.
    pub fn gather(
        sc: &Scenario,
        seed: u64,
        sim: &mut Sim<Observers>,
        stop: StopReason,
        wall: f64,
    ) -> RunResult
    where
        Observers: Observer<SchedEvent>,
    {
        let now = sim.k.now;
        sim.k.finish();
        sim.k.obs.collector.finish(now);
        let c = &sim.k.obs.collector;
        let m = &sim.k.m;
        let idle_residency = (0..m.nr_cpus())
            .map(|cpu| {
                m.idle_states(cpu)
                    .iter()
                    .zip(&c.idle_residency[cpu])
                    .map(|(s, &ns)| (s.name.clone(), frac(ns, now)))
                    .collect()
            })
            .collect();
        let tasks = sim
            .k
            .tasks
            .iter()
            .skip(1)
            .map(|t| TaskResult {
                name: t.name.clone(),
                pid: t.pid,
                start_ns: t.stats.start_ns,
                exit_ns: t.stats.exit_ns,
                runtime_ns: t.se.sum_exec_runtime,
                runqueue_wait_ns: c.task_rq_wait(t.pid),
                wakeups: t.stats.wakeups,
                migrations: t.stats.migrations,
            })
            .collect();
        let metrics = sc
            .workload
            .metrics
            .iter()
            .zip(&sim.metrics.hists)
            .map(|(d, h)| {
                (
                    d.name.clone(),
                    WorkloadMetric {
                        unit: d.unit,
                        summary: h.summary(),
                    },
                )
            })
            .collect();
        let mut latency_buckets = vec![
            LatencyBuckets {
                metric: "wakeup_latency".into(),
                unit: "ns",
                buckets: c.wakeup_latency.buckets(),
            },
            LatencyBuckets {
                metric: "runqueue_wait".into(),
                unit: "ns",
                buckets: c.runqueue_wait.buckets(),
            },
        ];
        for (d, h) in sc.workload.metrics.iter().zip(&sim.metrics.hists) {
            latency_buckets.push(LatencyBuckets {
                metric: format!("workload.{}", d.name),
                unit: d.unit,
                buckets: h.buckets(),
            });
        }
        let report = sc.tool.as_ref().and_then(|t| {
            t.report(&ToolInput {
                metrics: &sc.workload.metrics,
                hists: &sim.metrics.hists,
                sim_time_ns: now,
            })
        });
        let (tool_output, tool) = match report {
            Some(r) => (Some(r.text), r.values),
            None => (None, BTreeMap::new()),
        };
        RunResult {
            schema_version: super::SCHEMA_VERSION,
            scenario: sc.name.clone(),
            seed,
            machine: MachineInfo {
                name: m.name.clone(),
                nr_cpus: m.nr_cpus(),
            },
            kernel: KernelInfo {
                preset: sc.kernel_preset.to_string(),
                features: sc.features.resolved(),
                scheduler: sc.tunables.ext_scheduler.clone(),
                scheduler_exit: sim.k.scx_exit.as_ref().map(|(t, m)| SchedulerExit {
                    t_ns: *t,
                    reason: m.clone(),
                }),
            },
            sim_time_ns: now,
            events: sim.events(),
            wall_seconds: wall,
            metrics: CoreMetrics {
                wakeup_latency_ns: c.wakeup_latency.summary(),
                runqueue_wait_ns: c.runqueue_wait.summary(),
                migrations: c.migrations.clone(),
                cpu_busy: c.busy_ns.iter().map(|&b| frac(b, now)).collect(),
                idle_residency,
                freq_residency: c
                    .freq_residency
                    .iter()
                    .map(|d| {
                        d.iter()
                            .map(|&(f, ns)| (f.to_string(), frac(ns, now)))
                            .collect()
                    })
                    .collect(),
                functions: Func::ALL
                    .iter()
                    .filter(|&&f| c.functions[f as usize].calls > 0)
                    .map(|&f| (f.name(), c.functions[f as usize].clone()))
                    .collect(),
                placement_reasons: c.placement_reasons(),
                context_switches: c.switches,
                wakeups: c.wakeups,
                sis_shadow: sc.shadow.map(|f| ShadowReport {
                    feature: f.name().to_string(),
                    counts: sim.k.shadow_stats,
                }),
                energy_joules: c
                    .energy
                    .as_ref()
                    .map(|e| e.report())
                    .unwrap_or_else(crate::metrics::energy::EnergyMeter::no_model_report),
                wakeup_latency_cdf: c.wakeup_latency.cdf_points(200),
            },
            workload: WorkloadResult {
                kind: sc.workload_kind.clone(),
                stop_reason: stop,
                metrics,
                tool_output,
                tool,
            },
            tasks,
            latency_buckets,
        }
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("result serializes");
        s.push('\n');
        s
    }

    /// The features `schedlab run` lists: of those that exist in the modelled fair
    /// class ([`SchedFeat::applies`]: no EEVDF switch under CFS, no sleeper credit
    /// under EEVDF), every feature that is on, and each v5.6 default-on feature
    /// switched off (`NO_MISFIT`); one rule for all. With `all`, every switch.
    ///
    /// [`SchedFeat::applies`]: crate::sched::features::SchedFeat::applies
    pub(crate) fn shown_features(&self, all: bool) -> Vec<&String> {
        use crate::sched::features::SchedFeat;
        let eevdf = self.kernel.features.iter().any(|f| f == "EEVDF");
        self.kernel
            .features
            .iter()
            .filter(|f| {
                let (name, on) = crate::sched::features::feature_word(f);
                let feat = SchedFeat::from_name(name);
                if all {
                    return true;
                }
                // A default-on feature switched off (e.g. NO_MISFIT) is shown.
                (on || feat.is_some_and(|x| x.v5_6_default()))
                    && feat.is_none_or(|x| x.applies(eevdf))
            })
            .collect()
    }
}
