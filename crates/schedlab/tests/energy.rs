//! Frequency, energy and EAS (issue 6): schedutil's frequency choice and rate limit,
//! work progress at a lower frequency, energy accounting against a timeline rebuilt
//! from the events, and `find_energy_efficient_cpu` on Juno r0 with hand-computed
//! energies.

mod common;

use common::*;
use schedlab::engine::{Observer, RngStreams, SimTime};
use schedlab::experiment::{Overrides, Scenario};
use schedlab::machine::presets::preset;
use schedlab::machine::{CpuMask, Machine};
use schedlab::metrics::energy::EnergyMeter;
use schedlab::metrics::{Collector, EventLog};
use schedlab::sched::core::{Kernel, Policy};
use schedlab::sched::cpufreq::Governor;
use schedlab::sched::fair::wakeup::Probes;
use schedlab::sched::features::{KernelPreset, Tunables};
use schedlab::sched::SchedEvent;
use schedlab::sim::Sim;
use schedlab::workload::ipc::ChanParams;
use schedlab::workload::program::Op;
use std::path::Path;

/// Records every event and feeds a collector with an energy meter.
struct Rec {
    c: Collector,
    evs: Vec<(SimTime, SchedEvent)>,
}

impl Rec {
    fn new(m: &Machine) -> Rec {
        let idle: Vec<usize> = (0..m.nr_cpus()).map(|c| m.idle_states(c).len()).collect();
        Rec {
            c: Collector::new(m.nr_cpus(), &idle).with_energy(EnergyMeter::new(m)),
            evs: Vec::new(),
        }
    }
}

impl Observer<SchedEvent> for Rec {
    fn observe(&mut self, now: SimTime, ev: &SchedEvent) {
        self.c.observe(now, ev);
        self.evs.push((now, *ev));
    }
}

fn juno_kernel(gov: Governor) -> Kernel<Rec> {
    let m = preset("juno-r0").unwrap();
    let v56 = KernelPreset::by_name("v5.6").unwrap();
    let mut tun = Tunables::v5_6(m.nr_cpus());
    tun.cpufreq = gov;
    let rec = Rec::new(&m);
    Kernel::new(m, v56.features(), tun, &v56.topology_opts(), rec)
}

fn freq_events(k: &Kernel<Rec>) -> Vec<(SimTime, usize, u32)> {
    k.observer()
        .evs
        .iter()
        .filter_map(|&(t, e)| match e {
            SchedEvent::CpuFrequency { cpu, freq_khz } => Some((t, cpu, freq_khz)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// schedutil
// ---------------------------------------------------------------------------------

/// Juno's big policy (CPUs 1, 2; OPPs 450 625 800 950 1100 MHz). The busiest CPU by
/// util/capacity decides: CPU 1 at util 300, CPU 2 at 500 -> 1.25 × 1.1 GHz × 500 /
/// 1024 = 671.4 MHz -> 800 MHz. util_est counts when larger: CPU 1's util_est 700 ->
/// 939.9 MHz -> 950 MHz. The little policy (capacity 446, top 850 MHz): util 200 ->
/// 1.25 × 850 × 200/446 = 476.5 MHz -> 575 MHz.
#[test]
fn schedutil_picks_the_lowest_opp_above_125_percent_of_the_busiest_cpu() {
    let mut k = juno_kernel(Governor::Schedutil);
    k.cpu_rq_mut(1).cfs.avg.util_avg = 300;
    k.cpu_rq_mut(2).cfs.avg.util_avg = 500;
    assert_eq!(k.sugov_next_freq(1), 800_000);
    k.cpu_rq_mut(1).cfs.avg.util_est.enqueued = 700;
    assert_eq!(k.sugov_next_freq(1), 950_000);
    k.cpu_rq_mut(3).cfs.avg.util_avg = 200;
    assert_eq!(k.sugov_next_freq(0), 575_000);
    // Utilization above capacity is capped: the top OPP.
    k.cpu_rq_mut(2).cfs.avg.util_avg = 2000;
    assert_eq!(k.sugov_next_freq(1), 1_100_000);
}

/// Rate limit: Juno's 500 µs transition latency gives min(500 × 1000 µs, 10 ms) =
/// 10 ms. A change at t = 1 ms blocks further changes until 11 ms; a request that
/// keeps the frequency does not restart the window. Every change is one
/// `cpu_frequency` event per CPU of the policy, and `freq_scale` follows.
#[test]
fn schedutil_rate_limit_and_cpu_frequency_events() {
    let mut k = juno_kernel(Governor::Schedutil);
    assert_eq!(k.cpufreq().policies[1].rate_limit_ns, 10 * MS);
    k.set_clock(MS);
    k.cpu_rq_mut(1).cfs.avg.util_avg = 300; // -> 450 MHz
    k.cpufreq_update_util(1);
    assert_eq!(k.cpufreq().policies[1].cur_khz, 450_000);
    assert_eq!(
        freq_events(&k),
        vec![(MS, 1, 450_000), (MS, 2, 450_000)],
        "one event per CPU of the policy"
    );
    assert_eq!(k.cpu_rq(1).freq_scale, 450 * 1024 / 1100);
    assert_eq!(k.cpu_rq(2).freq_scale, 418);
    k.cpu_rq_mut(1).cfs.avg.util_avg = 800; // would be 1100 MHz
    k.set_clock(11 * MS - 1);
    k.cpufreq_update_util(2);
    assert_eq!(
        k.cpufreq().policies[1].cur_khz,
        450_000,
        "within the rate limit"
    );
    k.set_clock(11 * MS);
    k.cpufreq_update_util(2);
    assert_eq!(k.cpufreq().policies[1].cur_khz, 1_100_000);
    assert_eq!(k.cpu_rq(1).freq_scale, 1024);
    assert_eq!(freq_events(&k).len(), 4);
    // The little policy has its own window.
    k.cpu_rq_mut(0).cfs.avg.util_avg = 100;
    k.cpufreq_update_util(0);
    assert_eq!(k.cpufreq().policies[0].cur_khz, 450_000);
}

/// The performance governor never moves.
#[test]
fn performance_governor_stays_at_the_top() {
    let mut k = juno_kernel(Governor::Performance);
    k.cpu_rq_mut(1).cfs.avg.util_avg = 10;
    k.set_clock(20 * MS);
    k.cpufreq_update_util(1);
    assert_eq!(k.cpufreq().policies[1].cur_khz, 1_100_000);
    assert!(freq_events(&k).is_empty());
    assert!(!k.sched_energy_enabled(), "EAS needs schedutil");
}

/// 10 ms of work on the big CPU 1 pinned at 450 MHz: freq_scale = 450 × 1024 / 1100
/// = 418, so the rate is 1024 × 418 / 1024 = 418 and the wall time is
/// T = ceil((W + ticks(T) × tick) × 1024 / 418) with ticks(T) = floor(T / 4 ms):
/// 24.5 ms -> 6 ticks, against 10.0 ms and 2 ticks at 1.1 GHz.
#[test]
fn work_at_a_lower_frequency_takes_proportionally_longer() {
    let m = no_idle(preset("juno-r0").unwrap());
    let cost = m.cost.clone();
    for (khz, rate) in [(1_100_000u32, 1024u64), (450_000, 418)] {
        let mut w = W::new();
        let p = w.prog("work", vec![Op::Compute(c(10 * MS))]);
        w.task("t", p, Some(CpuMask::of(1)));
        let sc = scenario(m.clone(), w.build(), None);
        let opts = schedlab::experiment::RunOpts {
            check: true,
            ..Default::default()
        };
        let mut sim = schedlab::experiment::build(&sc, sc.seed, 0, &opts);
        sim.kernel_mut().set_policy_freq(1, khz);
        assert_eq!(sim.kernel().cpu_rq(1).freq_scale, rate);
        sim.run(sc.duration_ns).unwrap();
        let exit = exit_ns(&sim, "t").unwrap();
        let base = cost.context_switch + cost.mm_switch + 10 * MS + cost.exit;
        // Solve T = ceil((base + floor(T/4ms) × tick) × 1024 / rate).
        let mut t = 0u64;
        for _ in 0..10 {
            t = ((base + t / (4 * MS) * cost.tick) * 1024).div_ceil(rate);
        }
        assert!(
            exit.abs_diff(t) <= 4,
            "{khz} kHz: exit at {exit}, expected {t}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Energy accounting
// ---------------------------------------------------------------------------------

/// Power of one CPU from the machine: the idle state's while inside one (or leaving
/// it: after `cpu_idle` exit until the next switch or entry), the OPP's active power
/// otherwise.
fn power(m: &Machine, cpu: usize, state: Option<usize>, khz: u32) -> f64 {
    match state {
        Some(s) => m.idle_states(cpu)[s].power_mw,
        None => {
            m.freq_domains[m.cpus[cpu].freq_domain]
                .opps
                .iter()
                .find(|o| o.freq_khz == khz)
                .unwrap()
                .power_mw as f64
        }
    }
}

/// The eas-juno scenario under schedutil: the meter's joules per CPU equal the
/// integral of a power timeline rebuilt from the recorded Switch / IdleEnter /
/// IdleExit / CpuFrequency events, and the busy part matches the collector's busy
/// time weighted by the OPP power in force.
#[test]
fn energy_equals_the_integral_of_the_event_timeline() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/eas-juno.toml");
    let sc = Scenario::load(&path, &Overrides::default()).unwrap();
    assert_eq!(sc.tunables.cpufreq, Governor::Schedutil);
    let m = sc.machine.clone();
    let k = Kernel::new(
        m.clone(),
        sc.features,
        sc.tunables.clone(),
        &KernelPreset::by_name(sc.kernel_preset)
            .unwrap()
            .topology_opts(),
        Rec::new(&m),
    );
    let mut sim = Sim::new(
        k,
        sc.workload.clone(),
        RngStreams::new(sc.seed, 0),
        ChanParams::x86_64(),
    );
    sim.set_check(true);
    sim.run(sc.duration_ns).unwrap();
    let end = sim.kernel().now();
    sim.kernel_mut().observer_mut().c.finish(end);
    let meter = sim.kernel().observer().c.energy.as_ref().unwrap();
    let got = meter.per_cpu_joules();
    // The timeline as the trace shows it (`EventLog::tracepoints`): each `cpu_idle`
    // exit where the state's enter() returns, after its exit latency (or at the
    // switch or entry that comes first).
    let mut log = EventLog::new((0, SimTime::MAX));
    log.events = sim.kernel().observer().evs.clone();
    log.end = Some(end);
    let evs = &log.tracepoints();
    assert!(
        evs.iter()
            .filter(|(_, e)| matches!(e, SchedEvent::CpuFrequency { .. }))
            .count()
            > 2,
        "schedutil changed frequencies"
    );
    let mut total = 0.0;
    let mut busy_cpus = 0;
    for (cpu, &got_j) in got.iter().enumerate() {
        // Change points of this CPU: (time, state, freq).
        let mut state = None;
        let mut khz = m.freq_domains[m.cpus[cpu].freq_domain].max_freq_khz();
        let mut busy = false;
        let mut t0 = 0;
        let (mut mw_ns, mut busy_mw_ns) = (0.0, 0.0);
        let mut step = |t: SimTime, state: Option<usize>, khz: u32, busy: bool| {
            let p = power(&m, cpu, state, khz);
            mw_ns += (t - t0) as f64 * p;
            if busy && state.is_none() {
                busy_mw_ns += (t - t0) as f64 * p;
            }
            t0 = t;
        };
        for &(t, e) in evs {
            match e {
                SchedEvent::Switch { cpu: c, next, .. } if c == cpu => {
                    step(t, state, khz, busy);
                    busy = next.is_some();
                    state = None;
                }
                SchedEvent::IdleEnter { cpu: c, state: s } if c == cpu => {
                    step(t, state, khz, busy);
                    state = Some(s);
                }
                SchedEvent::IdleExit { cpu: c, .. } if c == cpu => {
                    // The state's power held through the exit latency, to here.
                    step(t, state, khz, busy);
                    state = None;
                }
                SchedEvent::CpuFrequency { cpu: c, freq_khz } if c == cpu => {
                    step(t, state, khz, busy);
                    khz = freq_khz;
                }
                _ => {}
            }
        }
        step(end, state, khz, busy);
        let j = mw_ns * 1e-12;
        assert!(
            (got_j - j).abs() <= 1e-9 * j.max(1.0),
            "cpu{cpu}: meter {got_j} J, timeline {j} J"
        );
        busy_cpus += usize::from(busy_mw_ns > 0.0);
        total += j;
    }
    assert!(busy_cpus >= 2, "tasks ran on {busy_cpus} CPUs");
    // The clusters' own power, rebuilt from the same events: per domain, the current
    // OPP's cluster figure while any of its CPUs is outside a state (running or in the
    // idle loop), else the figure of the shallowest state its CPUs are in (a CPU
    // leaving a state is in it until the trace's exit, as above).
    let mut clusters = 0.0;
    for (d, fd) in m.freq_domains.iter().enumerate() {
        assert!(fd.has_cluster_power(), "juno-r0 has cluster figures");
        let cpus: Vec<usize> = fd.cpus.iter().collect();
        let mut state: Vec<Option<usize>> = vec![None; m.nr_cpus()];
        let mut khz = fd.max_freq_khz();
        let (mut t0, mut mw_ns) = (0, 0.0);
        let power = |state: &[Option<usize>], khz: u32| -> f64 {
            let mut shallowest = usize::MAX;
            for &c in &cpus {
                match state[c] {
                    Some(s) => shallowest = shallowest.min(s),
                    None => {
                        let o = fd.opps.iter().find(|o| o.freq_khz == khz).unwrap();
                        return f64::from(o.cluster_power_mw);
                    }
                }
            }
            fd.cluster_idle_mw[shallowest]
        };
        for &(t, e) in evs {
            let cpu = match e {
                SchedEvent::Switch { cpu, .. }
                | SchedEvent::IdleEnter { cpu, .. }
                | SchedEvent::IdleExit { cpu, .. }
                | SchedEvent::CpuFrequency { cpu, .. } => cpu,
                _ => continue,
            };
            if m.cpus[cpu].freq_domain != d {
                continue;
            }
            mw_ns += (t - t0) as f64 * power(&state, khz);
            t0 = t;
            match e {
                SchedEvent::Switch { .. } | SchedEvent::IdleExit { .. } => state[cpu] = None,
                SchedEvent::IdleEnter { state: s, .. } => state[cpu] = Some(s),
                SchedEvent::CpuFrequency { freq_khz, .. } => khz = freq_khz,
                _ => {}
            }
        }
        mw_ns += (end - t0) as f64 * power(&state, khz);
        clusters += mw_ns * 1e-12;
    }
    let r = meter.report();
    let got_clusters = r.clusters.unwrap();
    assert!(
        (got_clusters - clusters).abs() <= 1e-9 * clusters.max(1.0),
        "clusters: meter {got_clusters} J, timeline {clusters} J"
    );
    assert!(clusters > 0.0);
    assert!((r.total.unwrap() - (total + clusters)).abs() < 1e-8);
    let per_cluster: f64 = r.per_cluster.iter().sum();
    assert!((per_cluster - (total + clusters)).abs() < 1e-8);
}

/// The result JSON carries the energy on an EM machine, a note elsewhere.
#[test]
fn result_json_has_energy_or_a_note() {
    let mut w = W::new();
    let p = w.prog("work", vec![Op::Compute(c(MS))]);
    w.task("t", p, None);
    let spec = w.build();
    let r = run_result(&scenario(preset("juno-r0").unwrap(), spec.clone(), None));
    let j = r.to_json();
    assert!(j.contains("\"energy_joules\"") && j.contains("\"per_cluster\""));
    assert!(r.metrics.energy_joules.total.unwrap() > 0.0);
    assert!(r.summary_text().contains("energy "));
    let r = run_result(&scenario(preset("xeon-e5-40").unwrap(), spec, None));
    assert!(r.metrics.energy_joules.total.is_none());
    assert!(r
        .metrics
        .energy_joules
        .note
        .as_ref()
        .unwrap()
        .contains("no Energy Model"));
}

// ---------------------------------------------------------------------------------
// EAS
// ---------------------------------------------------------------------------------

/// A sleeping task on `prev` with util_avg `util` (its util_est zero), counted in
/// `prev`'s blocked utilization by the caller.
fn sleeper(k: &mut Kernel<Rec>, prev: usize, util: u64) -> u32 {
    let p = k.create_task("p", None, false, 0, Policy::Normal, *k.machine().all_cpus());
    let t = k.task_mut(p);
    t.cpu = prev;
    t.se.avg.util_avg = util;
    t.se.avg.util_est.ewma = 0;
    t.se.avg.util_est.enqueued = 0;
    p
}

fn set_utils(k: &mut Kernel<Rec>, utils: [u64; 6]) {
    for (cpu, u) in utils.into_iter().enumerate() {
        k.cpu_rq_mut(cpu).cfs.avg.util_avg = u;
        k.cpu_rq_mut(cpu).cfs.avg.util_est.enqueued = 0;
    }
}

/// Juno r0: little pd {0,3,4,5} (capacity 446, OPPs 450/575/700/775/850 MHz, costs
/// 850000 × mW / kHz = 62 68 74 83 93), big pd {1,2} (1024; costs 1100000 × mW / kHz
/// = 410 441 493 554 616). Energy = cost(OPP ≥ 1.25 × f_max × max_util / cap) ×
/// sum_util / cap.
///
/// | case | utils (cpu0..5) | p (util 100) on | base little / big | prev Δ | candidates (Δ) | threshold | choice |
/// |---|---|---|---|---|---|---|---|
/// | a | 50 100 0 0 0 0 | big 1 | 62×50/446 = 6 / 0 | 410×100/1024 = 40 | little 3: 62×150/446 − 6 = 14; big 1 = prev | (40+6)>>4 = 2 | 3 |
/// | b | 0 0 0 300 0 0 | little 3 | 68×200/446 = 30 / 0 | 83×300/446 − 30 = 25 | little 0: 68×300/446 − 30 = 15; big 1: 410×100/1024 = 40 | (25+30)>>4 = 3 | 0 |
/// | c | 0 600 0 300 0 0 | little 3 | 30 / 554×600/1024 = 324 | 25 | little 0: 15; big 2: 554×700/1024 − 324 = 54 | (25+354)>>4 = 23 | 3 (saves 10 ≤ 23) |
/// | d | 400 0 0 0 0 0 | little 0 | 83×300/446 = 55 / 0 | none: prev does not fit (400 × 1280 ≥ 446 × 1024) | little 3: 83×400/446 − 55 = 19; big 1: 40 | — | 3 |
///
/// Case b's little candidate is CPU 0: all little CPUs but 3 have spare 346 and the
/// first wins (strictly greater); case c's big candidate is CPU 2 (spare 924 > 324).
#[test]
fn find_energy_efficient_cpu_table() {
    let cases: [(&str, [u64; 6], usize, usize); 4] = [
        ("a", [50, 100, 0, 0, 0, 0], 1, 3),
        ("b", [0, 0, 0, 300, 0, 0], 3, 0),
        ("c", [0, 600, 0, 300, 0, 0], 3, 3),
        ("d", [400, 0, 0, 0, 0, 0], 0, 3),
    ];
    for (name, utils, prev, want) in cases {
        let mut k = juno_kernel(Governor::Schedutil);
        assert!(k.sched_energy_enabled());
        set_utils(&mut k, utils);
        let p = sleeper(&mut k, prev, 100);
        let mut pr = Probes::default();
        let got = k.find_energy_efficient_cpu(p, prev, 4, &mut pr);
        assert_eq!(got, Some(want), "case {name}");
        assert_eq!(
            pr.probed, 6,
            "every allowed CPU of the asym domain is examined"
        );
    }
    // The energies behind the table.
    let mut k = juno_kernel(Governor::Schedutil);
    set_utils(&mut k, [0, 600, 0, 300, 0, 0]);
    let p = sleeper(&mut k, 3, 100);
    assert_eq!(k.compute_energy(p, None, 0), 30);
    assert_eq!(k.compute_energy(p, Some(3), 0), 55);
    assert_eq!(k.compute_energy(p, Some(0), 0), 45);
    assert_eq!(k.compute_energy(p, None, 1), 324);
    assert_eq!(k.compute_energy(p, Some(2), 1), 378);
    let mut k = juno_kernel(Governor::Schedutil);
    set_utils(&mut k, [50, 100, 0, 0, 0, 0]);
    let p = sleeper(&mut k, 1, 100);
    assert_eq!(k.compute_energy(p, None, 0), 6);
    assert_eq!(k.compute_energy(p, Some(3), 0), 20);
    assert_eq!(k.compute_energy(p, Some(1), 1), 40);
    assert_eq!(k.compute_energy(p, None, 1), 0);
}

/// Overutilized root domain: EAS steps aside (the normal path), and load balancing
/// is no longer cut short. A zero-util task stays on prev; a task whose affinity
/// leaves no ASYM domain spanning prev and the waker falls back too.
#[test]
fn overutilized_switches_eas_off() {
    let mut k = juno_kernel(Governor::Schedutil);
    set_utils(&mut k, [50, 100, 0, 0, 0, 0]);
    let p = sleeper(&mut k, 1, 100);
    let mut pr = Probes::default();
    assert_eq!(k.find_energy_efficient_cpu(p, 1, 4, &mut pr), Some(3));
    k.lb_mut().rd.overutilized = true;
    assert_eq!(k.find_energy_efficient_cpu(p, 1, 4, &mut pr), None);
    k.lb_mut().rd.overutilized = false;
    k.task_mut(p).se.avg.util_avg = 0;
    assert_eq!(k.find_energy_efficient_cpu(p, 1, 4, &mut pr), Some(1));
}

/// In a run: while nothing is overutilized, regular wakeups are placed by EAS; a
/// CPU hog on a little CPU makes the root domain overutilized (util 1024 does not
/// fit 446), and from then on wakeups take the normal path.
#[test]
fn eas_placements_and_overutilized_switching_in_a_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/eas-juno.toml");
    let sc = Scenario::load(&path, &Overrides::default()).unwrap();
    let r = run_result(&sc);
    let eas = r.metrics.placement_reasons.get("eas").copied().unwrap_or(0);
    assert!(eas > 50, "EAS placed the periodic wakeups: {eas}");
    assert_eq!(r.metrics.placement_reasons.get("target_idle"), None);
    // Same scenario with a hog pinned to little CPU 0.
    let mut w = (*sc.workload).clone();
    let hog = w.programs.len();
    w.programs.push(schedlab::workload::program::Program {
        name: "hog".into(),
        work_class: None,
        ops: hog_ops(),
    });
    let mut t = w.tasks[0].clone();
    t.name = "hog".into();
    t.prog = hog;
    t.cpus = Some(CpuMask::of(0).into());
    w.tasks.push(t);
    let mut sc2 = sc.clone();
    sc2.workload = w.into();
    let r2 = run_result(&sc2);
    let eas2 = r2
        .metrics
        .placement_reasons
        .get("eas")
        .copied()
        .unwrap_or(0);
    let normal: u64 = r2
        .metrics
        .placement_reasons
        .iter()
        .filter(|(k, _)| !matches!(**k, "eas" | "slow_path" | "single_cpu"))
        .map(|(_, v)| v)
        .sum();
    assert!(
        normal > eas2,
        "overutilized: mostly normal placements (eas {eas2}, normal {normal})"
    );
}

/// `[kernel] cpufreq` takes a governor name; anything else is an input error naming
/// the key.
#[test]
fn cpufreq_key_is_validated() {
    let text = |gov: &str| {
        format!(
            "[machine]\npreset = \"juno-r0\"\n[kernel]\ncpufreq = \"{gov}\"\n\
             [workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"t\"\n\
             program = [{{ op = \"compute\", work = \"1ms\" }}]\n"
        )
    };
    let load = |gov: &str| {
        let doc = schedlab::config::Doc::parse(&text(gov), Path::new("s.toml")).unwrap();
        Scenario::from_doc(doc, &Overrides::default())
    };
    assert_eq!(
        load("schedutil").unwrap().tunables.cpufreq,
        Governor::Schedutil
    );
    assert_eq!(
        load("performance").unwrap().tunables.cpufreq,
        Governor::Performance
    );
    let e = load("ondemand").unwrap_err().to_string();
    assert!(e.contains("cpufreq") && e.contains("ondemand"), "{e}");
    // Default: performance.
    let doc = schedlab::config::Doc::parse(
        &text("x").replace("cpufreq = \"x\"\n", ""),
        Path::new("s.toml"),
    )
    .unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    assert_eq!(sc.tunables.cpufreq, Governor::Performance);
}
