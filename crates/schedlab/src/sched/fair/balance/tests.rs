//! Kernel-level cases: runqueues set up directly (tasks activated on chosen CPUs),
//! then one `load_balance` call, checking what moved, where, and the flags' effects.

use super::*;
use crate::engine::EventQueue;
use crate::engine::SimTime;
use crate::machine::presets;
use crate::sched::core::TaskState;
use crate::sched::features::{Features, Tunables};
use crate::sched::topology::TopologyOpts;

#[derive(Default)]
struct Rec(Vec<SchedEvent>);

impl Rec {
    /// The reasons of the load balancer's placements, in order.
    fn balance_reasons(&self) -> Vec<&'static str> {
        self.0
            .iter()
            .filter_map(|e| match e {
                SchedEvent::Placement {
                    kind: WakeKind::Balance,
                    reason,
                    ..
                } => Some(*reason),
                _ => None,
            })
            .collect()
    }
}

impl Observer<SchedEvent> for Rec {
    fn observe(&mut self, _now: SimTime, ev: &SchedEvent) {
        self.0.push(*ev);
    }
}

fn kernel(m: crate::machine::Machine) -> Kernel<Rec> {
    kernel_with(m, Features::v5_6())
}

/// A v5.6 kernel on `m` with features `f`, recording its events.
fn kernel_with(m: crate::machine::Machine, f: Features) -> Kernel<Rec> {
    let n = m.nr_cpus();
    Kernel::new(
        m,
        f,
        Tunables::v5_6(n),
        &TopologyOpts::v5_6(),
        Rec::default(),
    )
}

/// `k` at t = 10 ms, and an empty event queue.
fn at_10ms(mut k: Kernel<Rec>) -> (Kernel<Rec>, EventQueue<Event>) {
    k.now = 10_000_000;
    (k, EventQueue::default())
}

/// A runnable task queued on `cpu` with affinity `allowed`.
fn queue_task(k: &mut Kernel<Rec>, cpu: usize, allowed: CpuMask) -> Pid {
    let pid = k.create_task("t", None, false, 0, Policy::Normal, allowed);
    k.tasks[pid as usize].cpu = cpu;
    k.tasks[pid as usize].state = TaskState::Runnable;
    k.post_init_entity_util_avg(pid, cpu);
    k.activate_task(cpu, pid, 0);
    pid
}

/// 2 cores x SMT2 at t = 10 ms, with CPU 0's sibling.
fn two_smt2_cores() -> (Kernel<Rec>, EventQueue<Event>, usize) {
    let (k, q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 2)));
    let sib0 = k.m.smt_mask(0).iter().find(|&c| c != 0).unwrap();
    (k, q, sib0)
}

fn domain(k: &Kernel<Rec>, cpu: usize, name: &str) -> SdId {
    k.topo
        .domains_of(cpu)
        .find(|&sd| k.topo.domains[sd].name == name)
        .expect("domain exists")
}

#[test]
fn cfs_tasks_is_mru_and_detach_walks_from_the_tail() {
    // 2 CPUs (2 cores, no SMT): A, B, C queued on CPU 0, A picked.
    let (mut k, mut q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 1)));
    let all = *k.m.all_cpus();
    let a = queue_task(&mut k, 0, all);
    let b = queue_task(&mut k, 0, all);
    let c = queue_task(&mut k, 0, all);
    assert_eq!(k.cfs_tasks(0), [c, b, a], "enqueue adds at the head");
    k.schedule(0, &mut q);
    let running = k.rqs[0].curr.expect("a task runs");
    assert_eq!(
        k.cfs_tasks(0)[0],
        running,
        "the picked task moves to the head"
    );
    // CPU 1 (idle) balances at the MC level: one task moves, from the tail, and never
    // the running one.
    let tail = k.rqs[0].cfs_tasks.back().unwrap();
    let sd = domain(&k, 1, "MC");
    let r = k.load_balance(1, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(r.moved, 1);
    assert_eq!(r.probed, 2, "both CPUs' statistics gathered");
    assert_eq!(k.tasks[tail as usize].cpu, 1);
    assert_eq!(k.tasks[running as usize].cpu, 0);
    assert!(!k.cfs_tasks(0).contains(&tail));
    assert_eq!(k.cfs_tasks(1), [tail]);
    let reasons = k.obs.balance_reasons();
    // Three new tasks on one CPU: utilisation below capacity, so the group has spare
    // capacity; the single-CPU busiest group gives a task-count imbalance.
    assert_eq!(reasons, ["balance:has_spare:migrate_task"]);
    k.check_invariants().unwrap();
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 0);
}

#[test]
fn cache_hot_task_waits_for_cache_nice_tries() {
    let (mut k, mut q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 1)));
    let all = *k.m.all_cpus();
    let a = queue_task(&mut k, 0, all);
    let b = queue_task(&mut k, 0, all);
    k.schedule(0, &mut q);
    let queued = if k.rqs[0].curr == Some(a) { b } else { a };
    // The queued task ran 0.1 ms ago: hot (< 0.5 ms migration cost).
    k.tasks[queued as usize].se.exec_start = k.now - 100_000;
    let sd = domain(&k, 1, "MC");
    let r = k.load_balance(1, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(r.moved, 0);
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 1);
    // MC cache_nice_tries = 1: one more failure, then it goes.
    k.load_balance(1, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 2);
    let r = k.load_balance(1, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(r.moved, 1);
    assert_eq!(k.tasks[queued as usize].cpu, 1);
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 0);
}

#[test]
fn all_pinned_doubles_the_interval() {
    let (mut k, mut q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 1)));
    for _ in 0..3 {
        queue_task(&mut k, 0, CpuMask::of(0));
    }
    k.schedule(0, &mut q);
    let sd = domain(&k, 1, "MC");
    let iv = k.topo.domains[sd].balance_interval;
    let r = k.load_balance(1, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(r.moved, 0);
    assert_eq!(k.topo.domains[sd].balance_interval, 2 * iv);
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 0, "out_all_pinned");
    // Newidle passes never touch the interval.
    k.load_balance(1, sd, CpuIdleType::NewlyIdle, &mut q);
    assert_eq!(k.topo.domains[sd].balance_interval, 2 * iv);
    k.check_invariants().unwrap();
}

#[test]
fn dst_pinned_retries_on_a_sibling_of_dst() {
    // 2 cores x SMT2: CPUs {0,1} and {2,3}. Tasks on CPU 0 allowed on {0,3}; CPU 2
    // balances at MC: it cannot take them, finds CPU 3 in its group, and the pass is
    // retried with CPU 3 as the destination.
    let (mut k, mut q, sib0) = two_smt2_cores();
    let other: Vec<usize> = (0..4).filter(|&c| c != 0 && c != sib0).collect();
    let (dst, alt) = (other[0], other[1]);
    let mask = {
        let mut m = CpuMask::of(0);
        m.set(alt);
        m
    };
    let all = *k.m.all_cpus();
    queue_task(&mut k, 0, all);
    let p1 = queue_task(&mut k, 0, mask);
    let p2 = queue_task(&mut k, 0, mask);
    k.schedule(0, &mut q);
    let sd = domain(&k, dst, "MC");
    let r = k.load_balance(dst, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(r.moved, 1);
    let moved: Vec<Pid> = [p1, p2]
        .into_iter()
        .filter(|&p| k.tasks[p as usize].cpu != 0)
        .collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(k.tasks[moved[0] as usize].cpu, alt);
    k.check_invariants().unwrap();
}

#[test]
fn active_balance_moves_the_running_task_after_failures() {
    // 2 cores x SMT2: CPU 0 and its sibling run one task each, the other core is
    // idle: the MC
    // level wants one task (prefer_sibling, 2 > 0 + 1) but each CPU has only its
    // running task, so the pass fails until need_active_balance.
    let (mut k, mut q, sib0) = two_smt2_cores();
    let dst = (0..4).find(|&c| c != 0 && c != sib0).unwrap();
    let all = *k.m.all_cpus();
    let a = queue_task(&mut k, 0, all);
    let b = queue_task(&mut k, sib0, all);
    k.schedule(0, &mut q);
    k.schedule(sib0, &mut q);
    // Forget the ticks the switches armed: only the balancer's events remain.
    let mut q = EventQueue::default();
    let sd = domain(&k, dst, "MC");
    // MC: cache_nice_tries 1, active balance once nr_balance_failed > 3.
    for i in 1..=3 {
        let r = k.load_balance(dst, sd, CpuIdleType::Idle, &mut q);
        assert_eq!(r.moved, 0);
        assert_eq!(k.topo.domains[sd].nr_balance_failed, i);
        assert!(q.is_empty(), "no stopper yet");
    }
    let iv = k.topo.domains[sd].balance_interval;
    k.load_balance(dst, sd, CpuIdleType::Idle, &mut q);
    assert_eq!(
        k.topo.domains[sd].nr_balance_failed, 2,
        "cache_nice_tries + 1"
    );
    assert_eq!(
        k.topo.domains[sd].balance_interval,
        2 * iv,
        "kicked: doubled"
    );
    let (t, ev) = q.pop().expect("stopper queued");
    let src = match ev {
        Event::ActiveBalance { cpu } => cpu as usize,
        e => panic!("unexpected {e:?}"),
    };
    assert!(src == 0 || src == sib0);
    assert!(k.rqs[src].active_balance);
    k.now = t;
    k.handle(t, ev, &mut q);
    assert!(!k.rqs[src].active_balance);
    let moved = if k.tasks[a as usize].cpu == dst { a } else { b };
    assert_eq!(k.tasks[moved as usize].cpu, dst);
    assert!(k.rqs[src].curr.is_none(), "src gave up its only task");
    assert_eq!(k.topo.domains[sd].nr_balance_failed, 0);
    assert!(k.obs.0.iter().any(|e| matches!(
        e,
        SchedEvent::Placement {
            kind: WakeKind::Balance,
            reason: "active_balance",
            ..
        }
    )));
    k.check_invariants().unwrap();
}

#[test]
fn newidle_pulls_a_queued_task_before_going_idle() {
    let (mut k, mut q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 1)));
    let all = *k.m.all_cpus();
    queue_task(&mut k, 0, all);
    queue_task(&mut k, 0, all);
    let c = queue_task(&mut k, 1, all);
    k.schedule(0, &mut q);
    k.schedule(1, &mut q);
    assert!(k.lb.rd.overload, "CPU 0 reached two runnable tasks");
    let queued = k.rqs[0].cfs_tasks.back().unwrap();
    assert_ne!(Some(queued), k.rqs[0].curr);
    // avg_idle starts at 2 x migration_cost >= migration_cost: the gate is open.
    k.now += 1_000_000;
    k.block_current(1, &mut q);
    assert_eq!(k.tasks[c as usize].state, TaskState::Sleeping);
    assert_eq!(k.rqs[1].curr, Some(queued), "pulled and picked at once");
    assert_eq!(k.tasks[queued as usize].cpu, 1);
    assert_eq!(k.rqs[1].idle_stamp, 0, "a pull clears idle_stamp");
    let sd = domain(&k, 1, "MC");
    let cost = k.m.cost.balance_per_cpu * 2;
    assert_eq!(k.topo.domains[sd].max_newidle_lb_cost, cost);
    assert!(k.obs.0.iter().any(|e| matches!(
        e,
        SchedEvent::FuncCall {
            func: Func::LoadBalance,
            cpu: 1,
            probed: 2,
            ..
        }
    )));
    k.check_invariants().unwrap();
}

#[test]
fn newidle_is_gated_by_avg_idle() {
    let (mut k, mut q) = at_10ms(kernel(presets::test_topology(1, 1, 2, 1)));
    let all = *k.m.all_cpus();
    queue_task(&mut k, 0, all);
    queue_task(&mut k, 0, all);
    queue_task(&mut k, 1, all);
    k.schedule(0, &mut q);
    k.schedule(1, &mut q);
    k.rqs[1].avg_idle = k.tun.migration_cost_ns - 1;
    k.now += 1_000_000;
    k.block_current(1, &mut q);
    assert_eq!(k.rqs[1].curr, None, "no newidle pass: CPU 1 idles");
    assert_eq!(k.rqs[0].nr_running, 2);
    assert_eq!(k.lb.nr_load_balance, 0);
    k.check_invariants().unwrap();
}

#[test]
fn nohz_bookkeeping_and_ilb_kick() {
    let mut k = kernel(presets::test_topology(1, 1, 4, 1));
    let mut q = EventQueue::default();
    // All CPUs start idle and tickless.
    assert_eq!(k.lb.nohz.nr_cpus, 4);
    assert_eq!(k.lb.nohz.idle_cpus_mask.weight(), 4);
    let llc = k.topo.sd_llc_shared[0].unwrap();
    assert_eq!(k.topo.shared[llc].nr_busy_cpus, 0);
    k.now = 10_000_000;
    let all = *k.m.all_cpus();
    queue_task(&mut k, 0, all);
    queue_task(&mut k, 0, all);
    k.schedule(0, &mut q);
    let mut q = EventQueue::default();
    // The busy tick: CPU 0 leaves nohz, two runnable tasks -> kick the first idle
    // CPU of the mask (CPU 1) with an IPI.
    k.now = 12_000_000;
    k.trigger_load_balance(0, &mut q);
    assert_eq!(k.lb.nohz.nr_cpus, 3);
    assert!(!k.lb.nohz.idle_cpus_mask.test(0));
    assert_eq!(k.topo.shared[llc].nr_busy_cpus, 1);
    assert_eq!(k.rqs[1].nohz_flags, NOHZ_KICK_MASK);
    assert_eq!(k.lb.nohz.next_balance, k.jiffies() + 1);
    let mut kicked = None;
    while let Some((t, ev)) = q.pop() {
        if let Event::IlbKick { cpu } = ev {
            assert_eq!(cpu, 1);
            assert_eq!(
                t,
                k.now + k.m.cost.ipi_latency_ns,
                "first delivery after the IPI"
            );
            kicked = Some((t, ev));
            break;
        }
    }
    let (t, ev) = kicked.expect("ILB kicked");
    // Delivery: CPU 1 first leaves its idle state (exit latency), then balances.
    k.handle(t, ev, &mut q);
    let (t2, ev2) = q.pop().expect("re-delivered after the idle exit");
    assert!(t2 > t);
    k.handle(t2, ev2, &mut q);
    assert_eq!(k.rqs[1].nohz_flags, 0);
    // The queued task went to one of the idle CPUs.
    assert_eq!(k.rqs[0].nr_running, 1);
    assert_eq!((1..4).map(|c| k.rqs[c].nr_running).sum::<u32>(), 1);
    k.check_invariants().unwrap();
}

// ----------------------------------------------------------------------
// Misfit (v4.20, feature MISFIT; NO_MISFIT = the kernel before the series)
// ----------------------------------------------------------------------

/// 2 littles (CPUs 0-1, capacity 446) + 2 bigs (CPUs 2-3, 1024), with or without
/// MISFIT.
fn asym_kernel(misfit: bool) -> Kernel<Rec> {
    let mut f = Features::v5_6();
    f.set(SchedFeat::MISFIT, misfit);
    kernel_with(presets::test_asym(2, 2, 1024, 446), f)
}

/// A task running alone on `cpu` with `util_avg = util` (util_est cleared).
fn running_with_util(k: &mut Kernel<Rec>, cpu: usize, util: u64, q: &mut EventQueue<Event>) -> Pid {
    let all = *k.m.all_cpus();
    let p = queue_task(k, cpu, all);
    k.schedule(cpu, q);
    assert_eq!(k.rqs[cpu].curr, Some(p));
    let a = &mut k.tasks[p as usize].se.avg;
    a.util_avg = util;
    a.util_est = Default::default();
    p
}

#[test]
fn misfit_status_threshold_at_tick() {
    // fits(u, 446) ⇔ u·1280 < 446·1024 = 456 704: 356 fits (455 680), 357 does not
    // (456 960). task_util_est = max(util_avg, util_est | 1) = util_avg here.
    for misfit in [true, false] {
        let (mut k, mut q) = at_10ms(asym_kernel(misfit));
        let p = running_with_util(&mut k, 0, 356, &mut q);
        k.trigger_load_balance(0, &mut q);
        assert_eq!(k.rqs[0].misfit_task_load, 0, "356 fits a 446 CPU");
        k.tasks[p as usize].se.avg.util_avg = 357;
        k.trigger_load_balance(0, &mut q);
        let load = k.task_h_load(Some(p));
        assert!(load > 0);
        let want = if misfit { load } else { 0 };
        assert_eq!(k.rqs[0].misfit_task_load, want, "MISFIT={misfit}");
        // The same task on a big CPU fits: nothing recorded.
        let mut k2 = asym_kernel(misfit);
        k2.now = 10_000_000;
        let mut q2 = EventQueue::default();
        running_with_util(&mut k2, 2, 800, &mut q2);
        k2.trigger_load_balance(2, &mut q2);
        assert_eq!(
            k2.rqs[2].misfit_task_load, 0,
            "800 fits 1024 (1 024 000 < 1 048 576)"
        );
        // newidle clears it.
        k.update_misfit_status(0, None);
        assert_eq!(k.rqs[0].misfit_task_load, 0);
    }
}

#[test]
fn misfit_group_is_pulled_by_active_balance_only_with_misfit() {
    for misfit in [true, false] {
        let (mut k, mut q) = at_10ms(asym_kernel(misfit));
        let p = running_with_util(&mut k, 0, 400, &mut q);
        k.trigger_load_balance(0, &mut q);
        // Only the balancer's events from here.
        let mut q = EventQueue::default();
        k.lb.rd.overload = false;
        let top = k.topo.domains_of(2).last().unwrap();
        assert!(k.topo.domains[top].has(SD_ASYM_CPUCAPACITY));
        assert!(k.topo.domains[top].parent.is_none());
        let r = k.load_balance(2, top, CpuIdleType::Idle, &mut q);
        assert_eq!(r.moved, 0, "the misfit is running: nothing to detach");
        if misfit {
            // group_misfit_task → migrate_misfit, imbalance 1 → voluntary active
            // balance at the first failure; SG_OVERLOAD from the misfit sets
            // rd.overload at the root although no CPU has 2 tasks.
            assert!(k.lb.rd.overload, "root overload set by the misfit");
            let (t, ev) = q.pop().expect("stopper queued at the first failure");
            assert!(matches!(ev, Event::ActiveBalance { cpu: 0 }), "{ev:?}");
            assert_eq!(k.rqs[0].push_cpu, 2);
            k.now = t;
            k.handle(t, ev, &mut q);
            assert_eq!(k.tasks[p as usize].cpu, 2, "the misfit went to the big CPU");
        } else {
            // No misfit status: the little group is has_spare with 1 idle CPU, the
            // local big group has 2: 2 ≤ 1 + 1 → balanced (cell 10); no stopper,
            // rd.overload stays clear.
            assert!(!k.lb.rd.overload);
            assert!(q.is_empty(), "no active balance without MISFIT");
            assert_eq!(k.topo.domains[top].nr_balance_failed, 0);
            assert_eq!(k.tasks[p as usize].cpu, 0);
        }
        k.check_invariants().unwrap();
    }
}

#[test]
fn nohz_kick_on_misfit_only_with_misfit() {
    for misfit in [true, false] {
        let (mut k, mut q) = at_10ms(asym_kernel(misfit));
        running_with_util(&mut k, 0, 400, &mut q);
        k.update_misfit_status(0, k.rqs[0].curr);
        // A little CPU with one misfit task: kick with MISFIT (capacity_orig 446 <
        // rd max 1024); NO_MISFIT falls through to the LLC test, where only one CPU
        // of the little LLC is busy: no kick.
        let want = misfit.then_some(NOHZ_KICK_MASK);
        assert_eq!(k.nohz_kick_needed(0), want, "MISFIT={misfit}");
    }
}

#[test]
fn alderlake_e_core_misfit_goes_to_an_idle_p_core() {
    // alderlake-24: E-core capacity 605, fits(u, 605) ⇔ u·1280 < 619 520: 483 fits,
    // 484 does not. A lone task with util 484 on E-core 16; P-core CPU 0 balances
    // the MC level (the asymmetric one): one stopper, the task lands on CPU 0.
    // NO_MISFIT: nothing recorded, nothing moves.
    for misfit in [true, false] {
        let mut f = Features::v5_6();
        f.set(SchedFeat::MISFIT, misfit);
        let k = kernel_with(presets::preset("alderlake-24").unwrap(), f);
        assert!(k.topo.asym_cpucapacity);
        let (mut k, mut q) = at_10ms(k);
        let p = running_with_util(&mut k, 16, 483, &mut q);
        k.trigger_load_balance(16, &mut q);
        assert_eq!(k.rqs[16].misfit_task_load, 0, "483 fits 605");
        k.tasks[p as usize].se.avg.util_avg = 484;
        k.trigger_load_balance(16, &mut q);
        assert_eq!(k.rqs[16].misfit_task_load != 0, misfit);
        let mut q = EventQueue::default();
        let mc = domain(&k, 0, "MC");
        assert!(k.topo.domains[mc].has(SD_ASYM_CPUCAPACITY));
        k.load_balance(0, mc, CpuIdleType::Idle, &mut q);
        if misfit {
            let (t, ev) = q.pop().expect("stopper on the E-core");
            assert!(matches!(ev, Event::ActiveBalance { cpu: 16 }), "{ev:?}");
            k.now = t;
            k.handle(t, ev, &mut q);
            assert_eq!(k.tasks[p as usize].cpu, 0);
        } else {
            assert!(q.is_empty());
            assert_eq!(k.tasks[p as usize].cpu, 16);
        }
        k.check_invariants().unwrap();
    }
}

#[test]
fn migrate_misfit_detaches_a_queued_misfit_task() {
    // Little CPU 0 runs A (util 400, misfit on 446) with B queued behind it (util
    // 400 too). The big CPU 2 balances the top level: the little group is
    // misfit_task (not overloaded: 2 tasks on 2 CPUs), imbalance 1 of type misfit;
    // detach_tasks skips the running A and takes B, which does not fit CPU 0 either,
    // so B moves at once (reason balance:misfit_task:migrate_misfit), no stopper.
    // NO_MISFIT: no misfit type, and the big local group with 2 idle CPUs against
    // 1 idle little CPU is balanced (cell 10 or the has_spare/fully_busy rules):
    // nothing moves.
    for misfit in [true, false] {
        let (mut k, mut q) = at_10ms(asym_kernel(misfit));
        let a = running_with_util(&mut k, 0, 400, &mut q);
        let all = *k.m.all_cpus();
        let b = queue_task(&mut k, 0, all);
        let sb = &mut k.tasks[b as usize].se.avg;
        sb.util_avg = 400;
        sb.util_est = Default::default();
        // MRU order: B (enqueued last) at the head, the running A at the tail; the
        // walk skips A (running) and reaches B.
        assert_eq!(k.cfs_tasks(0), [b, a]);
        k.update_misfit_status(0, Some(a));
        let mut q = EventQueue::default();
        let top = k.topo.domains_of(2).last().unwrap();
        let r = k.load_balance(2, top, CpuIdleType::Idle, &mut q);
        let reasons = k.obs.balance_reasons();
        if misfit {
            assert_eq!(r.moved, 1);
            assert_eq!(k.tasks[b as usize].cpu, 2, "the queued misfit moved");
            assert_eq!(k.tasks[a as usize].cpu, 0);
            assert_eq!(reasons, ["balance:misfit_task:migrate_misfit"]);
            while let Some((_, ev)) = q.pop() {
                assert!(!matches!(ev, Event::ActiveBalance { .. }), "no stopper");
            }
        } else {
            assert_eq!(r.moved, 0);
            assert!(reasons.is_empty());
            assert_eq!(k.tasks[b as usize].cpu, 0);
        }
        k.check_invariants().unwrap();
    }
}
