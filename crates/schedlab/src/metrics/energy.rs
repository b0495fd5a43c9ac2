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
//!   `cpu_idle` entry until the CPU runs a task or enters a state again: the exit
//!   latency (which starts at the `cpu_idle` exit event here) is counted in the state,
//!   as cpuidle's own residency accounting (`cpuidle_enter_state` measures until the
//!   state's enter callback returns) does.
//!
//! Frequencies come from `cpu_frequency` events; every policy starts at its highest
//! OPP. Energy is reported in joules (mW × ns × 10⁻¹²): total, per CPU, per frequency
//! domain ("cluster"), and split into busy / idle-loop / idle-state parts.
//!
//! **Simplifications.** Per-CPU active power only: the cluster/uncore power of the
//! boards' tables is not modelled (v5.6's EM has none either); static leakage is in
//! whatever the OPP figure contains; an idle state whose power is unknown (0 mW) is
//! counted as 0, and the report says so. A machine without an Energy Model (an OPP
//! without a power figure, e.g. the x86 presets) gets no figures, only a note.

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
    /// The state being left (after `cpu_idle` exit, before the next switch or entry).
    exiting: Vec<Option<usize>>,
    since: Vec<SimTime>,
    /// Accumulated mW·ns per CPU: busy, idle loop, idle states.
    busy_e: Vec<f64>,
    loop_e: Vec<f64>,
    idle_e: Vec<f64>,
    nr_domains: usize,
    idle_power_unknown: bool,
}

/// Energy of a run, in joules.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct EnergyReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_cpu: Vec<f64>,
    /// Per frequency domain (cluster), by domain index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
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
        if !m.freq_domains.iter().all(|fd| fd.has_energy_model()) {
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
        Some(EnergyMeter {
            domain,
            opps,
            idle_mw,
            active_mw,
            busy: vec![false; n],
            state: vec![None; n],
            exiting: vec![None; n],
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

    fn close(&mut self, cpu: usize, now: SimTime) {
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
            SchedEvent::IdleExit { cpu } => {
                self.close(cpu, now);
                self.exiting[cpu] = self.state[cpu].take();
            }
            SchedEvent::CpuFrequency { cpu, freq_khz } => {
                self.close(cpu, now);
                let d = self.domain[cpu];
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
        let sum = |v: &[f64]| v.iter().sum::<f64>() * MW_NS_TO_J;
        EnergyReport {
            total: Some(round9(per_cpu.iter().sum())),
            per_cpu: per_cpu.iter().map(|&j| round9(j)).collect(),
            per_cluster: per_cluster.iter().map(|&j| round9(j)).collect(),
            busy: Some(round9(sum(&self.busy_e))),
            idle_loop: Some(round9(sum(&self.loop_e))),
            idle_states: Some(round9(sum(&self.idle_e))),
            note: self
                .idle_power_unknown
                .then(|| "some idle states have no power figure: counted as 0 mW".to_string()),
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
        e.observe(2 * ms, &SchedEvent::IdleExit { cpu: 1 });
        // 2..3 ms leaving WFI: still 15 mW.
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
        assert!((r.total.unwrap() - expect).abs() < 1e-9);
        assert!((r.per_cluster[1] - expect).abs() < 1e-9 && r.per_cluster[0] == 0.0);
        assert!((r.busy.unwrap() - (2.0 * 616.0 + 4.0 * 168.0) * 1e-6).abs() < 1e-9);
        assert!((r.idle_states.unwrap() - 45.0e-6).abs() < 1e-9);
        assert_eq!(r.idle_loop, Some(0.0));
        assert!(
            r.note.is_some(),
            "Juno's deeper states have no power figure"
        );
    }

    #[test]
    fn machines_without_em_have_no_meter() {
        let m = preset("xeon-88").unwrap();
        assert!(EnergyMeter::new(&m).is_none());
    }
}
