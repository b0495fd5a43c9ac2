//! Energy accounting from the machine's Energy Model and the scheduler's events.
//!
//! On a real board energy is read from power meters (Juno's on-chip energy counters,
//! an external probe); the Energy Model that EAS uses (`em_perf_state {frequency,
//! power}` per performance domain, cpuidle `power_usage`) is the kernel's own
//! estimate of the same thing. schedlab has no meter, so it integrates the model over
//! the run: each CPU draws, at every instant,
//!
//! * the active power of its policy's current OPP (`Opp::power_mw`) while it runs a
//!   task (busy time, from `sched_switch`), and also while it is idle in no cpuidle
//!   state (the idle loop of a CPU without states, which polls);
//! * the power of its cpuidle state (`IdleState::power_mw`) while inside it, from
//!   `cpu_idle` entry until the state's enter callback returns, its exit latency
//!   after the interrupt (or sooner, if the CPU switches or enters a state first):
//!   the interval cpuidle's own residency accounting (`cpuidle_enter_state`)
//!   measures and the trace's `cpu_idle` exit closes. After it the CPU draws active
//!   power (the idle loop's exit path, `schedule`).
//!
//! Frequencies come from `cpu_frequency` events; every policy starts at its highest
//! OPP. Energy is reported in joules (mW × ns × 10⁻¹²): total, per CPU, per frequency
//! domain ("cluster"), and split into busy / idle-loop / idle-state parts.
//!
//! * the cluster's own power (L2, snoop control, clock tree), where the machine gives
//!   it (`Opp::cluster_power_mw`, `FreqDomain::cluster_idle_mw`, from the legacy EAS
//!   energy model's `cluster-cost` tables; Juno r0 has them, docs/idle-data.md): the
//!   busy figure of the domain's current OPP while any of its CPUs is active (running
//!   or in the idle loop), else the idle figure of the shallowest state its CPUs are
//!   in. That follows the requests cpuidle records, which agrees with the coupled
//!   cluster (sched/core.rs): the cluster-level figure applies exactly when every CPU
//!   asked for a cluster state.
//!
//! **Simplifications.** v5.6's Energy Model (what EAS decides with) has no cluster
//! term; only this meter counts one. Static leakage is in whatever the figures
//! contain. An idle state whose power is unknown (0 mW) is counted as 0, and a domain
//! without cluster figures counts its CPUs only; the report says so for both. A machine
//! without an Energy Model (an OPP without a power figure, e.g. the x86 presets) gets
//! no figures, only a note.

use crate::engine::SimTime;
use crate::machine::Machine;
use crate::sched::SchedEvent;

/// Integrates per-CPU power over the run (see the module notes).
#[derive(Clone, Debug)]
pub struct EnergyMeter {
    /// Per CPU: its frequency domain, and that domain's (kHz, mW) OPPs.
    domain: Vec<usize>,
    opps: Vec<Vec<(u32, f64)>>,
    /// Per CPU: idle-state powers (mW).
    idle_mw: Vec<Vec<f64>>,
    active_mw: Vec<f64>,
    busy: Vec<bool>,
    state: Vec<Option<usize>>,
    /// The state being left: from the interrupt until its exit latency has passed
    /// (`exit_until`), or sooner, at the next switch or entry.
    exiting: Vec<Option<usize>>,
    /// When each exit under way ends (the state's `enter()` returns).
    exit_until: Vec<SimTime>,
    since: Vec<SimTime>,
    /// Accumulated mW·ns per CPU: busy, idle loop, idle states.
    busy_e: Vec<f64>,
    loop_e: Vec<f64>,
    idle_e: Vec<f64>,
    nr_domains: usize,
    idle_power_unknown: bool,
    /// Per domain: its cluster's own power, when the machine gives it.
    cluster: Vec<Option<ClusterMeter>>,
}

/// The cluster term of one frequency domain (see the module notes).
#[derive(Clone, Debug)]
struct ClusterMeter {
    cpus: Vec<usize>,
    /// (kHz, mW) per OPP while any CPU is active.
    busy_mw: Vec<(u32, f64)>,
    /// mW by the shallowest idle state of its CPUs.
    idle_mw: Vec<f64>,
    /// The domain's current OPP's busy figure.
    cur_busy_mw: f64,
    since: SimTime,
    /// Accumulated mW·ns.
    e: f64,
}

/// Energy of a run, in joules.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnergyReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cpu: Vec<f64>,
    /// Per frequency domain (cluster), by domain index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cluster: Vec<f64>,
    /// Running tasks at the OPP's active power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<f64>,
    /// Idle in no cpuidle state (polling idle loop), at active power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_loop: Option<f64>,
    /// Inside cpuidle states (exit latency included), at their power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_states: Option<f64>,
    /// The clusters' own power (busy and idle), where the machine gives it; in `total`
    /// and `per_cluster`, not in `per_cpu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// mW·ns to J.
const MW_NS_TO_J: f64 = 1e-12;

fn round9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

impl EnergyMeter {
    /// A meter for `m`, or `None` when the machine has no Energy Model.
    pub fn new(m: &Machine) -> Option<EnergyMeter> {
        if !m.has_energy_model() {
            return None;
        }
        let n = m.nr_cpus();
        let domain: Vec<usize> = m.cpus.iter().map(|c| c.freq_domain).collect();
        let opps: Vec<Vec<(u32, f64)>> = m
            .freq_domains
            .iter()
            .map(|fd| {
                fd.opps
                    .iter()
                    .map(|o| (o.freq_khz, o.power_mw as f64))
                    .collect()
            })
            .collect();
        let idle_mw: Vec<Vec<f64>> = (0..n)
            .map(|c| m.idle_states(c).iter().map(|s| s.power_mw).collect())
            .collect();
        let idle_power_unknown = idle_mw.iter().flatten().any(|&p| p <= 0.0);
        let active_mw = domain
            .iter()
            .map(|&d| opps[d].last().map(|o| o.1).unwrap_or(0.0))
            .collect();
        let cluster = m
            .freq_domains
            .iter()
            .map(|fd| {
                fd.has_cluster_power().then(|| {
                    let busy_mw: Vec<(u32, f64)> = fd
                        .opps
                        .iter()
                        .map(|o| (o.freq_khz, f64::from(o.cluster_power_mw)))
                        .collect();
                    ClusterMeter {
                        cpus: fd.cpus.iter().collect(),
                        cur_busy_mw: busy_mw.last().map_or(0.0, |o| o.1),
                        busy_mw,
                        idle_mw: fd.cluster_idle_mw.clone(),
                        since: 0,
                        e: 0.0,
                    }
                })
            })
            .collect();
        Some(EnergyMeter {
            cluster,
            domain,
            opps,
            idle_mw,
            active_mw,
            busy: vec![false; n],
            state: vec![None; n],
            exiting: vec![None; n],
            exit_until: vec![0; n],
            since: vec![0; n],
            busy_e: vec![0.0; n],
            loop_e: vec![0.0; n],
            idle_e: vec![0.0; n],
            nr_domains: m.freq_domains.len(),
            idle_power_unknown,
        })
    }

    /// The power `cpu` draws now (mW).
    pub fn power_mw(&self, cpu: usize) -> f64 {
        match self.state[cpu].or(self.exiting[cpu]) {
            Some(s) => self.idle_mw[cpu].get(s).copied().unwrap_or(0.0),
            None => self.active_mw[cpu],
        }
    }

    /// The power `cpu`'s cluster draws now (mW): the current OPP's busy figure while
    /// any of its CPUs is active, else the figure of the shallowest state among them.
    fn cluster_power_mw(&self, c: &ClusterMeter) -> f64 {
        let mut shallowest = usize::MAX;
        for &cpu in &c.cpus {
            match self.state[cpu].or(self.exiting[cpu]) {
                Some(s) => shallowest = shallowest.min(s),
                None => return c.cur_busy_mw,
            }
        }
        c.idle_mw.get(shallowest).copied().unwrap_or(0.0)
    }

    /// Account `cpu`'s cluster up to `now` (before any of its CPUs changes).
    fn close_cluster(&mut self, cpu: usize, now: SimTime) {
        let d = self.domain[cpu];
        let Some(c) = &self.cluster[d] else { return };
        let p = self.cluster_power_mw(c);
        let Some(c) = &mut self.cluster[d] else {
            return;
        };
        c.e += now.saturating_sub(c.since) as f64 * p;
        c.since = now;
    }

    /// End the exits that have run their latency by `now`, earliest first, among
    /// the CPUs whose power `cpu`'s accounting reads: itself, and its cluster's CPUs
    /// where the cluster term is modelled.
    fn settle_exits(&mut self, cpu: usize, now: SimTime) {
        loop {
            let d = self.domain[cpu];
            let mut first: Option<(SimTime, usize)> = None;
            let mut consider = |c: usize, exiting: &[Option<usize>], until: &[SimTime]| {
                if exiting[c].is_some() && until[c] <= now && first.is_none_or(|f| until[c] < f.0) {
                    first = Some((until[c], c));
                }
            };
            match &self.cluster[d] {
                Some(cl) => {
                    for &c in &cl.cpus {
                        consider(c, &self.exiting, &self.exit_until);
                    }
                }
                None => consider(cpu, &self.exiting, &self.exit_until),
            }
            let Some((t, c)) = first else { return };
            self.close_cluster(c, t);
            self.close_own(c, t);
            self.exiting[c] = None;
        }
    }

    fn close(&mut self, cpu: usize, now: SimTime) {
        self.settle_exits(cpu, now);
        self.close_cluster(cpu, now);
        self.close_own(cpu, now);
    }

    /// Account `cpu` itself (not its cluster) up to `now`.
    fn close_own(&mut self, cpu: usize, now: SimTime) {
        let dt = now.saturating_sub(self.since[cpu]) as f64;
        self.since[cpu] = now;
        let e = dt * self.power_mw(cpu);
        if self.state[cpu].or(self.exiting[cpu]).is_some() {
            self.idle_e[cpu] += e;
        } else if self.busy[cpu] {
            self.busy_e[cpu] += e;
        } else {
            self.loop_e[cpu] += e;
        }
    }

    /// Follow one scheduler event.
    pub fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        match *ev {
            SchedEvent::Switch { cpu, next, .. } => {
                self.close(cpu, now);
                self.busy[cpu] = next.is_some();
                self.exiting[cpu] = None;
            }
            SchedEvent::IdleEnter { cpu, state } => {
                self.close(cpu, now);
                self.state[cpu] = Some(state);
                self.exiting[cpu] = None;
            }
            SchedEvent::IdleExit { cpu, exit_ns } => {
                self.close(cpu, now);
                self.exiting[cpu] = self.state[cpu].take();
                self.exit_until[cpu] = now.saturating_add(exit_ns);
            }
            SchedEvent::CpuFrequency { cpu, freq_khz } => {
                self.close(cpu, now);
                let d = self.domain[cpu];
                if let Some(c) = &mut self.cluster[d] {
                    c.cur_busy_mw = c
                        .busy_mw
                        .iter()
                        .find(|o| o.0 == freq_khz)
                        .map_or(0.0, |o| o.1);
                }
                self.active_mw[cpu] = self.opps[d]
                    .iter()
                    .find(|o| o.0 == freq_khz)
                    .map(|o| o.1)
                    .unwrap_or(0.0);
            }
            _ => {}
        }
    }

    /// Account every CPU up to `now` (the end of the run).
    pub fn finish(&mut self, now: SimTime) {
        for cpu in 0..self.since.len() {
            self.close(cpu, now);
        }
    }

    /// Joules per CPU so far (up to the last event or [`EnergyMeter::finish`]).
    pub fn per_cpu_joules(&self) -> Vec<f64> {
        (0..self.since.len())
            .map(|c| (self.busy_e[c] + self.loop_e[c] + self.idle_e[c]) * MW_NS_TO_J)
            .collect()
    }

    pub fn report(&self) -> EnergyReport {
        let per_cpu = self.per_cpu_joules();
        let mut per_cluster = vec![0.0; self.nr_domains];
        for (c, &j) in per_cpu.iter().enumerate() {
            per_cluster[self.domain[c]] += j;
        }
        let mut clusters = None;
        for (d, c) in self.cluster.iter().enumerate() {
            if let Some(c) = c {
                let j = c.e * MW_NS_TO_J;
                per_cluster[d] += j;
                *clusters.get_or_insert(0.0) += j;
            }
        }
        let sum = |v: &[f64]| v.iter().sum::<f64>() * MW_NS_TO_J;
        let mut notes = Vec::new();
        if self.idle_power_unknown {
            notes.push("some idle states have no power figure: counted as 0 mW");
        }
        if self.cluster.iter().any(Option::is_none) {
            notes.push("the clusters' own power is not modelled where no figure is public");
        }
        EnergyReport {
            total: Some(round9(
                per_cpu.iter().sum::<f64>() + clusters.unwrap_or(0.0),
            )),
            per_cpu: per_cpu.iter().map(|&j| round9(j)).collect(),
            per_cluster: per_cluster.iter().map(|&j| round9(j)).collect(),
            busy: Some(round9(sum(&self.busy_e))),
            idle_loop: Some(round9(sum(&self.loop_e))),
            idle_states: Some(round9(sum(&self.idle_e))),
            clusters: clusters.map(round9),
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        }
    }

    /// The report of a machine without an Energy Model.
    pub(crate) fn no_model_report() -> EnergyReport {
        EnergyReport {
            note: Some(
                "not computed: the machine has no Energy Model (OPP power unknown)".to_string(),
            ),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::preset;
    use crate::sched::PrevState;

    #[test]
    fn hand_computed_juno_cpu() {
        // Juno r0 CPU 1 (A57): OPPs 450/168 ... 1100/616 mW; WFI 15 mW.
        let m = preset("juno-r0").unwrap();
        let mut e = EnergyMeter::new(&m).unwrap();
        let ms = 1_000_000;
        e.observe(0, &SchedEvent::IdleEnter { cpu: 1, state: 0 });
        for cpu in [0, 2, 3, 4, 5] {
            // cluster-sleep-0: no power figure (0 mW).
            e.observe(0, &SchedEvent::IdleEnter { cpu, state: 2 });
        }
        // 0..2 ms in WFI at 15 mW.
        e.observe(
            2 * ms,
            &SchedEvent::IdleExit {
                cpu: 1,
                exit_ns: ms,
            },
        );
        // 2..3 ms leaving WFI (its exit latency, taken as 1 ms): still 15 mW.
        let sw = |next| SchedEvent::Switch {
            cpu: 1,
            prev: None,
            prev_state: PrevState::Preempted,
            next,
        };
        e.observe(3 * ms, &sw(Some(7)));
        // 3..5 ms busy at 616, 5..9 ms busy at 168 (450 MHz).
        e.observe(
            5 * ms,
            &SchedEvent::CpuFrequency {
                cpu: 1,
                freq_khz: 450_000,
            },
        );
        e.finish(9 * ms);
        let j = e.per_cpu_joules()[1];
        let expect = (3.0 * 15.0 + 2.0 * 616.0 + 4.0 * 168.0) * 1e-6; // mW·ms = µJ
        assert!((j - expect).abs() < 1e-12, "{j} vs {expect}");
        let r = e.report();
        // The clusters' own power (LISA juno_energy.py). A57 cluster {1, 2}: 0..3 ms
        // CPU 1 in (or leaving) WFI, CPU 2 in cluster-sleep-0: shallowest WFI, 65 mW;
        // 3..5 ms CPU 1 busy at 1100 MHz: 64 mW; 5..9 ms at 450 MHz: 24 mW. A53
        // cluster {0, 3, 4, 5}: all in cluster-sleep-0 for 9 ms: 17 mW.
        let a57 = (3.0 * 65.0 + 2.0 * 64.0 + 4.0 * 24.0) * 1e-6;
        let a53 = 9.0 * 17.0 * 1e-6;
        assert!((r.clusters.unwrap() - (a57 + a53)).abs() < 1e-9, "{r:?}");
        assert!((r.total.unwrap() - (expect + a57 + a53)).abs() < 1e-9);
        assert!((r.per_cluster[1] - (expect + a57)).abs() < 1e-9);
        assert!((r.per_cluster[0] - a53).abs() < 1e-9);
        assert!((r.busy.unwrap() - (2.0 * 616.0 + 4.0 * 168.0) * 1e-6).abs() < 1e-9);
        assert!((r.idle_states.unwrap() - 45.0e-6).abs() < 1e-9);
        assert_eq!(r.idle_loop, Some(0.0));
        assert_eq!(
            r.note.as_deref(),
            Some("some idle states have no power figure: counted as 0 mW"),
            "Juno's deeper states have no power figure; its clusters have"
        );
    }

    /// The cluster term's branches on Juno's A53 cluster {0, 3, 4, 5}: all four in
    /// cluster-sleep-0 (17 mW), one leaving to WFI's level (its request is the
    /// shallowest: 56 mW), one in the idle loop with no state (active: the busy figure
    /// of the top OPP, 57 mW), back to all in cpu-sleep-0 (56 mW).
    #[test]
    fn hand_computed_juno_cluster_branches() {
        let m = preset("juno-r0").unwrap();
        let mut e = EnergyMeter::new(&m).unwrap();
        let ms = 1_000_000;
        for cpu in [0, 3, 4, 5] {
            e.observe(0, &SchedEvent::IdleEnter { cpu, state: 2 });
        }
        // 0..1 ms: 17 mW. At 1 ms CPU 3 asks for WFI: 1..2 ms at 56 mW.
        e.observe(ms, &SchedEvent::IdleEnter { cpu: 3, state: 0 });
        // At 2 ms CPU 3 leaves WFI (still counted in it while leaving): 56 mW to 3 ms,
        // when it switches to the idle loop (no task, no state): active, 57 mW.
        e.observe(
            2 * ms,
            &SchedEvent::IdleExit {
                cpu: 3,
                exit_ns: ms,
            },
        );
        let to_idle_loop = SchedEvent::Switch {
            cpu: 3,
            prev: None,
            prev_state: PrevState::Preempted,
            next: None,
        };
        e.observe(3 * ms, &to_idle_loop);
        // 3..4 ms at 57 mW; then every CPU in cpu-sleep-0 (CPU 3 enters it; the others
        // re-enter it): 4..6 ms at 56 mW.
        for cpu in [0, 3, 4, 5] {
            e.observe(4 * ms, &SchedEvent::IdleEnter { cpu, state: 1 });
        }
        e.finish(6 * ms);
        let r = e.report();
        let a53 = (17.0 + 56.0 + 56.0 + 57.0 + 2.0 * 56.0) * 1e-6;
        // The A57 cluster's CPUs stayed in the idle loop (no event): active at its top
        // OPP's 64 mW for the 6 ms.
        let a57 = 6.0 * 64.0 * 1e-6;
        // Plus CPU 3's own: WFI 1..3 ms at 6 mW, the idle loop 3..4 ms at 93 mW.
        let cpu3 = (2.0 * 6.0 + 93.0) * 1e-6;
        assert!((r.per_cpu[3] - cpu3).abs() < 1e-9, "{r:?}");
        assert!((r.per_cluster[0] - (a53 + cpu3)).abs() < 1e-9, "{r:?}");
        assert!((r.clusters.unwrap() - (a53 + a57)).abs() < 1e-9, "{r:?}");
    }

    /// An exit whose latency ends before the CPU switches: the state's power until
    /// `enter()` returns, active power after it, for the CPU and for its cluster,
    /// even when the next event is on another CPU of the cluster.
    #[test]
    fn exit_ends_after_its_latency_not_at_the_switch() {
        let m = preset("juno-r0").unwrap();
        let mut e = EnergyMeter::new(&m).unwrap();
        let ms = 1_000_000;
        for cpu in 0..6 {
            e.observe(0, &SchedEvent::IdleEnter { cpu, state: 1 });
        }
        // CPU 1 (A57, cpu-sleep-0: 0 mW) is woken at 1 ms; its exit takes 1.5 ms.
        e.observe(
            ms,
            &SchedEvent::IdleExit {
                cpu: 1,
                exit_ns: 3 * ms / 2,
            },
        );
        // CPU 2 enters WFI at 3 ms: the A57 cluster's accounting reaches 3 ms, past
        // CPU 1's exit end at 2.5 ms.
        e.observe(3 * ms, &SchedEvent::IdleEnter { cpu: 2, state: 0 });
        // CPU 1 switches to a task at 4 ms.
        e.observe(
            4 * ms,
            &SchedEvent::Switch {
                cpu: 1,
                prev: None,
                prev_state: PrevState::Runnable,
                next: Some(7),
            },
        );
        e.finish(5 * ms);
        let r = e.report();
        // CPU 1: 0..2.5 ms in cpu-sleep-0 (0 mW), 2.5..4 ms the idle loop at the top
        // OPP (616 mW), 4..5 ms busy (616 mW).
        assert!((r.per_cpu[1] - 2.5 * 616.0 * 1e-6).abs() < 1e-12, "{r:?}");
        assert!((r.idle_loop.unwrap() - 1.5 * 616.0 * 1e-6).abs() < 1e-12);
        // The A57 cluster: 0..2.5 ms both in cpu-sleep-0 (65 mW), then CPU 1 active
        // (64 mW) to the end.
        let a57 = (2.5 * 65.0 + 2.5 * 64.0) * 1e-6;
        let a53 = 5.0 * 56.0 * 1e-6;
        assert!((r.clusters.unwrap() - (a57 + a53)).abs() < 1e-12, "{r:?}");
        // CPU 2: WFI from 3 ms at 15 mW.
        assert!((r.per_cpu[2] - 2.0 * 15.0 * 1e-6).abs() < 1e-12);
    }

    #[test]
    fn machines_without_em_have_no_meter() {
        let m = preset("xeon-88").unwrap();
        assert!(EnergyMeter::new(&m).is_none());
    }
}
