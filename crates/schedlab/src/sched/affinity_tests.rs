//! `sched_setaffinity`'s branches, hand-computed on a 4-CPU machine (one LLC, no
//! SMT, no idle states): a target whose CPU stays allowed, a queued one, a sleeping
//! one, a running one (another task's and the caller itself), a v6.12 delayed one,
//! the destination rule of v5.6 and of v5.10's distribute cursor, and a second
//! caller joining a pending stop.

use super::*;
use crate::engine::SimTime;
use crate::machine::presets;
use crate::sched::core::Policy;
use crate::sched::features::{KernelPreset, Tunables};

use crate::sched::Rec;

const MS: u64 = 1_000_000;
const T0: u64 = MS;

fn kernel(preset: &str) -> Kernel<Rec> {
    let mut m = presets::test_topology(1, 1, 4, 1);
    for t in &mut m.idle_tables {
        t.clear();
    }
    let k = KernelPreset::by_name(preset).unwrap();
    Kernel::new(
        m,
        k.features(),
        Tunables::v5_6(4),
        &k.topology_opts(),
        Rec::default(),
    )
}

fn mask(cpus: &[usize]) -> CpuMask {
    cpus.iter().copied().collect()
}

/// A task allowed everywhere, queued on `cpu` at `T0` (not picked).
fn queue_on(k: &mut Kernel<Rec>, cpu: usize) -> Pid {
    k.now = T0;
    let pid = k.create_task("t", None, false, 0, Policy::Normal, mask(&[0, 1, 2, 3]));
    k.tasks[pid as usize].cpu = cpu;
    k.tasks[pid as usize].state = TaskState::Runnable;
    k.rq_update_clock(cpu, T0);
    k.post_init_entity_util_avg(pid, cpu);
    k.activate_task(cpu, pid, 0);
    pid
}

/// A task running on `cpu` (picked from an otherwise empty queue).
fn run_on(k: &mut Kernel<Rec>, cpu: usize, q: &mut EventQueue<Event>) -> Pid {
    let pid = queue_on(k, cpu);
    k.schedule(cpu, q);
    assert_eq!(k.rqs[cpu].curr, Some(pid));
    pid
}

/// Handle every queued event due by `until`.
fn run_until(k: &mut Kernel<Rec>, q: &mut EventQueue<Event>, until: SimTime) {
    while let Some(t) = q.peek_time() {
        if t > until {
            break;
        }
        let (t, ev) = q.pop().unwrap();
        k.handle(t, ev, q);
        k.flush(q);
    }
}

fn migrations(k: &Kernel<Rec>, pid: Pid) -> Vec<(usize, usize)> {
    k.obs
        .0
        .iter()
        .filter_map(|e| match *e {
            SchedEvent::Migrate {
                pid: p,
                orig_cpu,
                dest_cpu,
                ..
            } if p == pid => Some((orig_cpu, dest_cpu)),
            _ => None,
        })
        .collect()
}

/// The migration stops in the queue (a purge that keeps every event).
fn stops(q: &mut EventQueue<Event>) -> usize {
    let mut n = 0;
    q.purge(|e| {
        n += usize::from(matches!(e, Event::MigrationStop { .. }));
        true
    });
    n
}

/// A runs on CPU 1; the caller on CPU 0 allows it CPUs 1 and 2: CPU 1 stays
/// allowed, nothing moves and the caller goes on.
#[test]
fn a_task_whose_cpu_stays_allowed_does_not_move() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    let c = run_on(&mut k, 0, &mut q);
    let a = run_on(&mut k, 1, &mut q);
    assert!(!k.sched_setaffinity(0, a, &mask(&[1, 2]), &mut q));
    assert_eq!(*k.cpus_allowed(a), mask(&[1, 2]));
    assert_eq!(k.tasks[a as usize].nr_cpus_allowed, 2);
    assert_eq!((k.rqs[1].curr, k.rqs[0].curr), (Some(a), Some(c)));
    assert!(migrations(&k, a).is_empty());
    assert_eq!(stops(&mut q), 0);
    // The same mask again is nothing at all.
    assert!(!k.sched_setaffinity(0, a, &mask(&[1, 2]), &mut q));
    k.check_invariants().unwrap();
}

/// B is queued behind A on CPU 1. Set to {2, 3} by the task on CPU 0, it moves at
/// once (`move_queued_task`) to v5.6's destination, the first allowed CPU: 2, which
/// was idle and is asked to reschedule. The caller does not block.
#[test]
fn a_queued_task_moves_at_once_to_the_first_allowed_cpu_in_v5_6() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    let c = run_on(&mut k, 0, &mut q);
    let a = run_on(&mut k, 1, &mut q);
    let b = queue_on(&mut k, 1);
    assert!(!k.sched_setaffinity(0, b, &mask(&[2, 3]), &mut q));
    assert_eq!(k.tasks[b as usize].cpu, 2);
    assert!(k.tasks[b as usize].se.on_rq);
    assert_eq!((k.rqs[1].nr_running, k.rqs[2].nr_running), (1, 1));
    assert_eq!(k.rqs[1].curr, Some(a));
    assert!(
        k.rqs[2].need_resched,
        "idle CPU 2 is preempted by the arrival"
    );
    assert_eq!(migrations(&k, b), [(1, 2)]);
    assert_eq!(k.tasks[c as usize].state, TaskState::Runnable);
    k.check_invariants().unwrap();
    run_until(&mut k, &mut q, T0 + 100_000);
    assert_eq!(k.rqs[2].curr, Some(b));
    k.check_invariants().unwrap();
}

/// v5.10 (ANY_AND_DISTRIBUTE): each calling CPU's cursor starts at 0, so CPU 0's
/// first move to {2, 3} goes to 2, its next to 3, then round to 2 again; a call
/// from CPU 3 has its own cursor and starts at 2 too.
#[test]
fn from_v5_10_the_destination_follows_the_calling_cpus_distribute_cursor() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.10");
    run_on(&mut k, 0, &mut q);
    run_on(&mut k, 1, &mut q);
    run_on(&mut k, 3, &mut q);
    let queued: Vec<Pid> = (0..4).map(|_| queue_on(&mut k, 1)).collect();
    let dests: Vec<usize> = queued[..3]
        .iter()
        .map(|&p| {
            assert!(!k.sched_setaffinity(0, p, &mask(&[2, 3]), &mut q));
            k.tasks[p as usize].cpu
        })
        .collect();
    assert_eq!(dests, [2, 3, 2]);
    assert!(!k.sched_setaffinity(3, queued[3], &mask(&[2, 3]), &mut q));
    assert_eq!(k.tasks[queued[3] as usize].cpu, 2);
    k.check_invariants().unwrap();
    // v5.6 takes the first CPU every time.
    let mut k = kernel("v5.6");
    run_on(&mut k, 0, &mut q);
    run_on(&mut k, 1, &mut q);
    for _ in 0..3 {
        let p = queue_on(&mut k, 1);
        assert!(!k.sched_setaffinity(0, p, &mask(&[2, 3]), &mut q));
        assert_eq!(k.tasks[p as usize].cpu, 2);
    }
}

/// B sleeps with CPU 1 as its CPU. Pinned to CPU 3 it stays where it is (a sleeping
/// task is not moved); its next wakeup places it on 3.
#[test]
fn a_sleeping_task_moves_at_its_next_wakeup() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    run_on(&mut k, 0, &mut q);
    let b = run_on(&mut k, 1, &mut q);
    k.now = T0 + MS;
    k.block_current(1, &mut q);
    assert!(!k.sched_setaffinity(0, b, &mask(&[3]), &mut q));
    assert_eq!(k.tasks[b as usize].cpu, 1);
    assert!(migrations(&k, b).is_empty());
    k.check_invariants().unwrap();
    assert!(k.try_to_wake_up(b, 0, 0, &mut q));
    assert_eq!(k.tasks[b as usize].cpu, 3);
    assert_eq!(migrations(&k, b), [(1, 3)]);
    k.check_invariants().unwrap();
}

/// A runs on CPU 1; the task on CPU 0 pins it to CPU 2. The caller blocks
/// (`wait_for_completion`) and pays an IPI; A keeps running outside its mask, which
/// the checker accepts only while the stop is pending. One IPI latency later the
/// stopper preempts A, moves it to CPU 2 and wakes the caller.
#[test]
fn a_running_task_is_moved_by_the_stopper_and_its_caller_waits() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    let c = run_on(&mut k, 0, &mut q);
    let a = run_on(&mut k, 1, &mut q);
    let lat = k.m.cost.ipi_latency_ns;
    assert!(k.sched_setaffinity(0, a, &mask(&[2]), &mut q));
    assert_eq!(k.tasks[c as usize].state, TaskState::Sleeping);
    assert_eq!(k.rqs[1].curr, Some(a));
    assert_eq!(stops(&mut q), 1);
    k.check_invariants().unwrap();
    // Without the pending stop, A on CPU 1 is a schedule the kernel cannot produce.
    let pending = std::mem::take(&mut k.aff.pending);
    assert!(k
        .check_invariants()
        .unwrap_err()
        .contains("outside its affinity"));
    k.aff.pending = pending;
    run_until(&mut k, &mut q, T0 + lat - 1);
    assert_eq!(k.rqs[1].curr, Some(a), "the stop is one IPI away");
    run_until(&mut k, &mut q, T0 + lat);
    assert_eq!(k.tasks[a as usize].cpu, 2);
    assert_eq!(migrations(&k, a), [(1, 2)]);
    assert_eq!(k.tasks[c as usize].state, TaskState::Runnable);
    assert!(!k.aff.migration_pending(a));
    k.check_invariants().unwrap();
    run_until(&mut k, &mut q, T0 + 100_000);
    assert_eq!((k.rqs[1].curr, k.rqs[2].curr), (None, Some(a)));
    k.check_invariants().unwrap();
}

/// A, alone on CPU 1, pins itself to CPU 3 (v5.6, built `PREEMPT_VOLUNTARY`). Its
/// CPU's stopper preempts it at `wait_for_completion`'s `might_sleep()`, finds it
/// queued and moves it to 3 (a migration, no wakeup: no placement is made), and it
/// runs there at once; CPU 1 goes idle. The call reports the caller off its CPU.
#[test]
fn a_task_moving_itself_is_preempted_and_moved_without_sleeping() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    run_on(&mut k, 0, &mut q);
    let a = run_on(&mut k, 1, &mut q);
    let placements = |k: &Kernel<Rec>| {
        k.obs
            .0
            .iter()
            .filter(|e| matches!(e, SchedEvent::Placement { pid, .. } if *pid == a))
            .count()
    };
    let before = placements(&k);
    assert!(k.sched_setaffinity(1, a, &mask(&[3]), &mut q));
    assert_eq!(k.tasks[a as usize].state, TaskState::Runnable);
    assert_eq!(k.tasks[a as usize].cpu, 3);
    assert_eq!(migrations(&k, a), [(1, 3)]);
    assert_eq!(placements(&k), before, "no wakeup, so no placement");
    assert_eq!(k.rqs[1].curr, None);
    assert!(!k.aff.migration_pending(a));
    assert_eq!(stops(&mut q), 0, "CPU 1's own stopper ran at once");
    k.check_invariants().unwrap();
    run_until(&mut k, &mut q, T0 + 100_000);
    assert_eq!((k.rqs[1].curr, k.rqs[3].curr), (None, Some(a)));
    k.check_invariants().unwrap();
}

/// Issue 39 (v6.12): A and B share CPU 0; A runs 1 ms and pins itself to CPU 1. It
/// never reaches the sleep (so never a delayed dequeue): preempted by the stopper
/// at `might_sleep()`, it is moved queued to CPU 1, not delayed, and B runs on CPU
/// 0; A is never left on CPU 0.
#[test]
fn v6_12_a_task_moving_itself_is_moved_queued_never_delayed() {
    let mut q = EventQueue::default();
    let mut k = kernel("v6.12");
    let a = run_on(&mut k, 0, &mut q);
    let b = queue_on(&mut k, 0);
    k.now = T0 + MS;
    assert!(k.sched_setaffinity(0, a, &mask(&[1]), &mut q));
    assert_eq!(k.rqs[0].curr, Some(b));
    assert_eq!(k.tasks[a as usize].cpu, 1);
    assert_eq!(migrations(&k, a), [(0, 1)]);
    let se = &k.tasks[a as usize].se;
    assert!(se.on_rq && !se.sched_delayed);
    assert_eq!(k.tasks[a as usize].state, TaskState::Runnable);
    assert_eq!((k.rqs[0].nr_running, k.rqs[1].nr_running), (1, 1));
    k.check_invariants().unwrap();
}

/// v6.12: A is delayed on CPU 0 (asleep, still queued). Another task pins it to CPU
/// 2: a queued task, so it moves at once, delayed still; CPU 2's pick then
/// dequeues it for good. The checker rejects a delayed task left outside its mask.
#[test]
fn v6_12_a_delayed_task_set_by_another_moves_still_delayed() {
    let mut q = EventQueue::default();
    let mut k = kernel("v6.12");
    let a = run_on(&mut k, 0, &mut q);
    queue_on(&mut k, 0);
    run_on(&mut k, 1, &mut q);
    k.now = T0 + MS;
    k.block_current(0, &mut q);
    assert!(k.tasks[a as usize].se.sched_delayed);
    // The old SIM_ rule's failure, planted: a delayed task outside its mask.
    k.set_cpus_allowed(a, &mask(&[2]));
    assert!(k
        .check_invariants()
        .unwrap_err()
        .contains("outside its affinity"));
    k.set_cpus_allowed(a, &mask(&[0, 1, 2, 3]));
    assert!(!k.sched_setaffinity(1, a, &mask(&[2]), &mut q));
    let se = &k.tasks[a as usize].se;
    assert!(se.on_rq && se.sched_delayed);
    assert_eq!(k.tasks[a as usize].cpu, 2);
    assert_eq!((k.rqs[0].nr_running, k.rqs[2].nr_running), (1, 1));
    k.check_invariants().unwrap();
    run_until(&mut k, &mut q, T0 + MS + 100_000);
    let se = &k.tasks[a as usize].se;
    assert!(!se.on_rq && !se.sched_delayed, "CPU 2's pick dequeued it");
    assert_eq!(k.rqs[2].curr, None);
    k.check_invariants().unwrap();
}

/// A runs on CPU 1. The task on CPU 0 allows it {2, 3} (a stop to CPU 2 is queued,
/// the caller waits); before the stop runs, the task on CPU 3 pins A to CPU 3: it
/// joins the pending stop, whose destination becomes 3, and waits too. One stop
/// moves A to 3 and wakes both callers.
#[test]
fn a_second_caller_joins_the_pending_stop_and_sets_its_destination() {
    let mut q = EventQueue::default();
    let mut k = kernel("v5.6");
    let c0 = run_on(&mut k, 0, &mut q);
    let a = run_on(&mut k, 1, &mut q);
    let c3 = run_on(&mut k, 3, &mut q);
    assert!(k.sched_setaffinity(0, a, &mask(&[2, 3]), &mut q));
    assert!(k.sched_setaffinity(3, a, &mask(&[3]), &mut q));
    assert_eq!(stops(&mut q), 1);
    let lat = k.m.cost.ipi_latency_ns;
    run_until(&mut k, &mut q, T0 + lat);
    assert_eq!(k.tasks[a as usize].cpu, 3);
    for c in [c0, c3] {
        assert_eq!(k.tasks[c as usize].state, TaskState::Runnable);
    }
    k.check_invariants().unwrap();
}
