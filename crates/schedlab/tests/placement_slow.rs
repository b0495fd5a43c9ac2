//! The slow path (v5.6): `find_idlest_group`'s comparison cells,
//! `update_sg_wakeup_stats` (the avg_load-only-for-has_spare quirk, stats without
//! the placed task), `find_idlest_group_cpu`, and fork balancing of CPU-bound tasks
//! started from the launcher on `xeon-88`, with invariants checked after every event.

mod placement_common;
use placement_common::*;

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets::test_topology;
use schedlab::sched::core::{Kernel, Policy};
use schedlab::sched::fair::group::GroupType;
use schedlab::sched::fair::idlest::{find_idlest_group_decide, IdlestCmp};
use schedlab::sched::fair::wakeup::Probes;
use std::collections::BTreeSet;
use std::path::Path;

fn cmp(lt: GroupType, it: GroupType) -> IdlestCmp {
    IdlestCmp {
        local_type: lt,
        idlest_type: it,
        local_avg_load: 0,
        idlest_avg_load: 0,
        local_idle_cpus: 0,
        idlest_idle_cpus: 0,
        local_max_capacity: 1024,
        idlest_max_capacity: 1024,
        imbalance_pct: 117,
        numa: false,
        local_sum_nr_running: 0,
        imb_numa_nr: None,
    }
}

#[test]
fn find_idlest_group_comparison_cells() {
    use GroupType::*;
    // Type order decides first.
    assert!(!find_idlest_group_decide(&cmp(HasSpare, FullyBusy)));
    assert!(find_idlest_group_decide(&cmp(Overloaded, HasSpare)));
    // Busy types: imb = 1024 × 17 / 100 = 174.
    let busy = |t, l, i, numa| IdlestCmp {
        local_avg_load: l,
        idlest_avg_load: i,
        numa,
        ..cmp(t, t)
    };
    // idlest 100 vs local 300: 100 >= 474? no; 30000 <= 11700? no -> idlest.
    assert!(find_idlest_group_decide(&busy(Overloaded, 300, 100, false)));
    // idlest 200 >= local 20 + 174: stay.
    assert!(!find_idlest_group_decide(&busy(FullyBusy, 20, 200, false)));
    // 100 × 1100 = 110000 <= 117 × 1000 = 117000: stay (within the margin).
    assert!(!find_idlest_group_decide(&busy(
        FullyBusy, 1100, 1000, false
    )));
    // 100 × 1200 = 120000 > 117000 and 1000 < 1374: go.
    assert!(find_idlest_group_decide(&busy(
        FullyBusy, 1200, 1000, false
    )));
    // NUMA: idlest + imb >= local keeps it local (980 + 174 >= 1150), where the
    // plain rules would go (980 < 1324, 115000 > 117 × 980 = 114660).
    assert!(!find_idlest_group_decide(&busy(FullyBusy, 1150, 980, true)));
    assert!(find_idlest_group_decide(&busy(FullyBusy, 1150, 980, false)));
    // v5.6 quirk: both avg_load 0 (not computed for busy groups): stay.
    assert!(!find_idlest_group_decide(&busy(Overloaded, 0, 0, false)));
    // Imbalanced / asym_packing: stay.
    assert!(!find_idlest_group_decide(&cmp(Imbalanced, Imbalanced)));
    assert!(!find_idlest_group_decide(&cmp(AsymPacking, AsymPacking)));
    // Misfit: go only to a strictly bigger max capacity.
    let mut m = cmp(MisfitTask, MisfitTask);
    m.local_max_capacity = 462;
    assert!(find_idlest_group_decide(&m));
    m.local_max_capacity = 1024;
    assert!(!find_idlest_group_decide(&m));
    // Has spare: more idle CPUs wins; NUMA stays local while local has any idle.
    let spare = |l, i, numa| IdlestCmp {
        local_idle_cpus: l,
        idlest_idle_cpus: i,
        numa,
        ..cmp(HasSpare, HasSpare)
    };
    assert!(find_idlest_group_decide(&spare(1, 2, false)));
    assert!(!find_idlest_group_decide(&spare(2, 2, false)));
    assert!(!find_idlest_group_decide(&spare(1, 4, true)));
    assert!(find_idlest_group_decide(&spare(0, 4, true)));
    assert!(!find_idlest_group_decide(&spare(0, 0, true)));
}

/// The MC domain of CPU 0 and its groups (cores) on test_topology(1, 1, 4, 2).
fn mc(k: &Kernel<Rec>) -> (usize, Vec<usize>) {
    let d = k.topology().sd_llc[0].unwrap();
    (d, k.topology().domains[d].groups.clone())
}

#[test]
fn wakeup_stats_exclude_the_task_and_keep_the_avg_load_quirk() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let (d, g) = mc(&k);
    let a = all(&k);
    // p attached to CPU 2 and queued there with load 300, plus another task.
    let p = k.create_task("p", None, false, 0, Policy::Normal, a);
    k.task_mut(p).cpu = 2;
    k.task_mut(p).se.avg.last_update_time = 1;
    k.task_mut(p).se.avg.load_avg = 300;
    k.task_mut(p).se.on_rq = true;
    k.cpu_rq_mut(2).nr_running = 2;
    k.cpu_rq_mut(2).cfs.h_nr_running = 2;
    k.cpu_rq_mut(2).cfs.avg.load_avg = 1000;
    k.sync_idle_bits(2);
    let mut pr = Probes::default();
    let s = k.update_sg_wakeup_stats(d, g[1], p, 0, &mut pr);
    // task_h_load = 300 × 1000 / 1001 = 299; group load = 1000 - 299 = 701.
    assert_eq!(s.group_load, 701);
    assert_eq!((s.sum_nr_running, s.sum_h_nr_running), (1, 1));
    assert_eq!(s.idle_cpus, 1); // CPU 3
    assert_eq!(s.group_type, GroupType::HasSpare);
    assert_eq!(s.avg_load, 701 * 1024 / 2048);
    assert_eq!(pr.probed, 2);
    // Core {4,5} with two tasks each, util at capacity: overloaded, avg_load left 0.
    for c in [4, 5] {
        k.cpu_rq_mut(c).nr_running = 2;
        k.cpu_rq_mut(c).cfs.h_nr_running = 2;
        k.cpu_rq_mut(c).cfs.avg.load_avg = 2048;
        k.cpu_rq_mut(c).cfs.avg.util_avg = 1024;
        k.sync_idle_bits(c);
    }
    let s = k.update_sg_wakeup_stats(d, g[2], p, 0, &mut pr);
    assert_eq!(s.group_type, GroupType::Overloaded);
    assert_eq!(s.group_load, 4096);
    assert_eq!(s.avg_load, 0, "v5.6: avg_load only for has_spare groups");
    // A new task (not attached) is not subtracted anywhere.
    let n = k.create_task("n", None, false, 0, Policy::Normal, a);
    k.task_mut(n).cpu = 2;
    assert_eq!(k.cpu_load_without(2, n), 1000);
    assert_eq!(k.cpu_load_without(2, p), 701);
    assert_eq!(k.cpu_load_without(3, p), 0);
    // idle_cpu_without: curr must be idle or p, and no pending wakeups.
    assert!(k.idle_cpu_without(3, p));
    k.cpu_rq_mut(3).curr = Some(p);
    k.sync_idle_bits(3);
    assert!(k.idle_cpu_without(3, p));
    k.cpu_rq_mut(3).curr = Some(n);
    k.sync_idle_bits(3);
    assert!(!k.idle_cpu_without(3, p));
}

#[test]
fn find_idlest_group_picks_most_idle_cpus_and_skips_disallowed() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let (d, g) = mc(&k);
    let p = sleeper_any(&mut k, 0);
    let mut pr = Probes::default();
    busy(&mut k, 0);
    // Local core {0,1}: 1 idle; cores 1..3: 2 idle each -> the first (core {2,3}).
    assert_eq!(k.find_idlest_group(d, p, 0, 0, &mut pr), Some(g[1]));
    assert_eq!(pr.probed, 8);
    busy(&mut k, 2);
    assert_eq!(k.find_idlest_group(d, p, 0, 0, &mut pr), Some(g[2]));
    // All cores with one busy CPU: local keeps (1 >= 1).
    busy(&mut k, 4);
    busy(&mut k, 6);
    assert_eq!(k.find_idlest_group(d, p, 0, 0, &mut pr), None);
    // Affinity excluding the local group: the idlest allowed group is returned.
    let q = sleeper(&mut k, 6, mask(&[6, 7]));
    assert_eq!(k.find_idlest_group(d, q, 0, 0, &mut pr), Some(g[3]));
}

#[test]
fn find_idlest_group_cpu_rules() {
    let mut k = kernel(test_topology(1, 1, 4, 2));
    let (_, g) = mc(&k);
    let core1 = g[1]; // {2,3}
    let p = sleeper_any(&mut k, 0);
    let mut pr = Probes::default();
    // Both idle in C6 (boot), stamps 0: the first.
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 2);
    // Shallower state wins.
    k.cpu_rq_mut(3).idle_state = Some(1);
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 3);
    // Same state: the later idle_stamp wins.
    k.cpu_rq_mut(3).idle_state = Some(2);
    k.cpu_rq_mut(2).idle_stamp = 100;
    k.cpu_rq_mut(3).idle_stamp = 200;
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 3);
    // Not inside a state (polling): wins only on a later stamp at no latency; a CPU
    // in a real state after it displaces it (min_exit starts at infinity).
    k.cpu_rq_mut(2).idle_state = None;
    k.cpu_rq_mut(2).idle_stamp = 300;
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 3);
    // All busy: least loaded, ties to the first; none lighter than +inf -> first.
    busy(&mut k, 2);
    busy(&mut k, 3);
    k.cpu_rq_mut(2).cfs.avg.load_avg = 900;
    k.cpu_rq_mut(3).cfs.avg.load_avg = 400;
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 3);
    // A SCHED_IDLE-only CPU returns at once.
    sched_idle(&mut k, 2);
    assert_eq!(k.find_idlest_group_cpu(core1, p, 0, 0, &mut pr), 2);
    // Single-CPU group: its CPU without looking.
    let smt_dom = k.topology().sd[0].unwrap();
    let g0 = k.topology().domains[smt_dom].groups[1];
    let before = pr.probed;
    assert_eq!(k.find_idlest_group_cpu(g0, p, 0, 0, &mut pr), 1);
    assert_eq!(pr.probed, before);
}

fn launcher_scenario(machine: &str, n: usize, cpus: Option<&str>) -> Scenario {
    let cpus = cpus
        .map(|c| format!("cpus = \"{c}\"\n"))
        .unwrap_or_default();
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n\n[run]\nduration_ms = 2\nseed = 1\n\n\
         [workload]\nkind = \"tasks\"\n\n[[workload.task]]\nname = \"hog\"\ncount = {n}\n{cpus}\
         program = [ {{ op = \"compute\", work = \"100ms\" }} ]\n"
    );
    let doc = Doc::parse(&text, Path::new("launcher.toml")).expect("parses");
    Scenario::from_doc(doc, &Overrides::default()).expect("valid")
}

#[test]
fn fork_balancing_spreads_cpu_hogs_one_per_core_on_xeon_88() {
    // 22 hogs started by the launcher on CPU 0. NUMA level: both nodes have spare
    // CPUs and the local node has idle CPUs -> stay on node 0 (v5.6, no NUMA
    // imbalance allowance). MC level: the core with the most idle CPUs (2) beats the
    // local one -> one hog per core. Invariants checked after every event.
    let sc = launcher_scenario("xeon-88", 22, None);
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    let mut sim = experiment::build(&sc, sc.seed, 0, &opts);
    sim.run(sc.duration_ns).expect("runs");
    let k = &sim.kernel();
    let hogs: Vec<usize> = (1..k.tasks().len()).map(|p| k.task(p as u32).cpu).collect();
    assert_eq!(hogs.len(), 22);
    let cores: BTreeSet<usize> = hogs.iter().map(|&c| k.machine().cpus[c].core).collect();
    assert_eq!(cores.len(), 22, "one hog per core: {hogs:?}");
    assert!(
        hogs.iter().all(|&c| k.machine().cpus[c].node == 0),
        "{hogs:?}"
    );
    // Each hog actually runs (one per CPU, nothing queued behind another).
    for &c in &hogs {
        assert_eq!(k.cpu_rq(c).nr_running, 1);
    }
    // The 23rd and later hogs: every core of node 0 is half busy, local node still
    // has idle CPUs, so they fill the SMT siblings of node 0 (still one per CPU).
    let sc = launcher_scenario("xeon-88", 30, None);
    let mut sim = experiment::build(&sc, sc.seed, 0, &opts);
    sim.run(sc.duration_ns).expect("runs");
    let k = &sim.kernel();
    let cpus: BTreeSet<usize> = (1..k.tasks().len()).map(|p| k.task(p as u32).cpu).collect();
    assert_eq!(cpus.len(), 30);
    assert!(cpus.iter().all(|&c| k.machine().cpus[c].node == 0));
}

#[test]
fn launcher_uses_the_first_allowed_cpu_when_cpu0_is_excluded() {
    let sc = launcher_scenario("xeon-88", 2, Some("44-47"));
    let opts = RunOpts {
        check: true,
        trace: true,
        ..Default::default()
    };
    let mut sim = experiment::build(&sc, sc.seed, 0, &opts);
    sim.run(sc.duration_ns).expect("runs");
    let trace = sim.kernel_mut().observer_mut().trace.take().unwrap().text;
    // Forked on CPU 44 (first allowed), placed by the fork balance within 44-47.
    assert!(trace.contains("fork parent=idle child=1 cpu=44"), "{trace}");
    assert!(trace.contains("fork parent=idle child=2 cpu=44"), "{trace}");
    let c1 = sim.kernel().task(1).cpu;
    let c2 = sim.kernel().task(2).cpu;
    assert!((44..48).contains(&c1) && (44..48).contains(&c2) && c1 != c2);
}

#[test]
fn idle_cpus_of_a_machine_without_idle_states_are_found_at_time_zero() {
    // The oracle's QEMU guests have no cpuidle states, so find_idlest_group_cpu
    // takes an idle CPU only on a later `idle_stamp`. In the kernel every CPU idle
    // since boot has a nonzero stamp (newidle_balance set it); with stamps of 0 the
    // scan took no CPU and fell back to this_cpu, and 4 hogs forked at t = 0 went
    // to CPUs 0 and 1. Expected: MC level, the local core {0,1} has one idle CPU
    // after the first hog, the others two -> one hog per core: 0, 2, 4, 6.
    let machine =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/oracle/machines/1s4c2t.toml");
    let text = format!(
        "[machine]\nfile = \"{}\"\n\n[run]\nduration_ms = 2\nseed = 1\n\n\
         [workload]\nkind = \"tasks\"\n\n[[workload.task]]\nname = \"hog\"\ncount = 4\n\
         program = [ {{ op = \"compute\", work = \"100ms\" }} ]\n",
        machine.display()
    );
    let doc = Doc::parse(&text, Path::new("launcher.toml")).expect("parses");
    let sc = Scenario::from_doc(doc, &Overrides::default()).expect("valid");
    assert!(sc.machine.idle_states(0).is_empty());
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    let mut sim = experiment::build(&sc, sc.seed, 0, &opts);
    sim.run(sc.duration_ns).expect("runs");
    let hogs: Vec<usize> = (1..sim.kernel().tasks().len())
        .map(|p| sim.kernel().task(p as u32).cpu)
        .collect();
    assert_eq!(hogs, [0, 2, 4, 6]);
}
