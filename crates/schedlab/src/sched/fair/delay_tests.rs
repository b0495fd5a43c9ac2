//! v6.12's delayed dequeue (DELAY_DEQUEUE, DELAY_ZERO), hand-computed on one CPU of
//! a 2-CPU machine under the `v6.12` preset.
//!
//! **The concept.** EEVDF keeps a task's lag across a sleep. Before v6.12 a task
//! that went to sleep while *ahead* of its share (negative lag: vruntime beyond the
//! average V) left the queue at once and came back with that debt, scaled, on
//! whatever CPU its wakeup chose. v6.12 leaves such a task queued, marked
//! `sched_delayed`, so that it keeps competing, and pays its debt, until the pick
//! reaches it (then it leaves for real; DELAY_ZERO forgives the credit it has
//! meanwhile accumulated) or until it is woken, in which case `try_to_wake_up` finds
//! it still `on_rq` and `ttwu_runnable` requeues it where it is: no `select_task_rq`,
//! no migration (DELAY_ZERO re-places it at V if its lag has become positive). A task
//! that sleeps while eligible (lag ≥ 0) is dequeued as before.
//!
//! Numbers: 2 CPUs → log factor 2, `base_slice` = 1.5 ms; nice 0 (virtual time =
//! wall time). `t0` = 1 ms; `v0` = the vruntime both tasks are placed at.

use super::*;
use crate::engine::EventQueue;
use crate::machine::{presets, CpuMask};
use crate::sched::core::TaskState;
use crate::sched::features::{KernelPreset, Tunables};
use crate::sched::{Event, Func};

use crate::sched::Rec;

const MS: u64 = 1_000_000;
const T0: u64 = MS;

fn kernel(extra: &[&str]) -> Kernel<Rec> {
    let m = presets::test_topology(1, 1, 2, 1);
    let k = KernelPreset::by_name("v6.12").unwrap();
    let mut f = k.features();
    for w in extra {
        f.apply(w).unwrap();
    }
    Kernel::new(m, f, Tunables::v5_6(2), &k.topology_opts(), Rec::default())
}

/// A and B queued on CPU 0 at `T0` (allowed everywhere), A picked. Returns (A, B, v0).
fn two_on_cpu0(k: &mut Kernel<Rec>, q: &mut EventQueue<Event>) -> (Pid, Pid, u64) {
    k.now = T0;
    let mut pids = [0; 2];
    for p in &mut pids {
        let pid = k.create_task("t", None, false, 0, Policy::Normal, CpuMask::of(0));
        k.set_cpus_allowed(pid, &CpuMask::from_iter([0, 1]));
        k.tasks[pid as usize].cpu = 0;
        k.tasks[pid as usize].state = TaskState::Runnable;
        k.rq_update_clock(0, T0);
        k.post_init_entity_util_avg(pid, 0);
        k.activate_task(0, pid, 0);
        *p = pid;
    }
    k.schedule(0, q);
    let [a, b] = pids;
    assert_eq!(k.rqs[0].curr, Some(a));
    let v0 = k.tasks[a as usize].se.vruntime;
    assert_eq!(k.tasks[b as usize].se.vruntime, v0);
    k.check_invariants().unwrap();
    (a, b, v0)
}

fn block(k: &mut Kernel<Rec>, pid: Pid, at: u64, q: &mut EventQueue<Event>) {
    k.now = at;
    assert_eq!(k.rqs[0].curr, Some(pid));
    k.block_current(0, q);
    k.check_invariants().unwrap();
}

fn se(k: &Kernel<Rec>, pid: Pid) -> &entity::SchedEntity {
    &k.tasks[pid as usize].se
}

fn count_calls(k: &Kernel<Rec>, func: Func) -> usize {
    k.obs
        .0
        .iter()
        .filter(|e| matches!(e, SchedEvent::FuncCall { func: f, .. } if *f == func))
        .count()
}

/// A runs 1 ms and sleeps: A at v0+1, B at v0, V = v0+0.5: A is not eligible and
/// stays queued, delayed; B runs; CPU 0 still counts two tasks. A's wakeup from CPU 1
/// requeues it on CPU 0 with no `select_task_rq_fair` (its lag −0.5 ms is kept: same
/// vruntime) and B keeps the CPU (A is still not eligible).
#[test]
fn a_sleeper_with_negative_lag_stays_queued_and_wakes_in_place() {
    let mut q = EventQueue::default();
    let mut k = kernel(&[]);
    let (a, b, v0) = two_on_cpu0(&mut k, &mut q);
    block(&mut k, a, T0 + MS, &mut q);
    assert!(se(&k, a).sched_delayed && se(&k, a).on_rq);
    assert_eq!(se(&k, a).vruntime, v0.wrapping_add(MS));
    assert_eq!(k.rqs[0].curr, Some(b));
    assert_eq!((k.rqs[0].nr_running, k.rqs[0].cfs.nr_running), (2, 2));
    assert_eq!(k.tasks[a as usize].state, TaskState::Sleeping);

    let before = k.obs.0.len();
    assert!(k.try_to_wake_up(a, 0, 1, &mut q));
    k.check_invariants().unwrap();
    assert!(!se(&k, a).sched_delayed && se(&k, a).on_rq);
    assert_eq!(k.tasks[a as usize].cpu, 0);
    assert_eq!(se(&k, a).vruntime, v0.wrapping_add(MS));
    assert_eq!(k.rqs[0].nr_running, 2);
    assert!(
        !k.rqs[0].need_resched,
        "A (not eligible) does not preempt B"
    );
    let new = &k.obs.0[before..];
    assert!(new.iter().any(|e| matches!(
        e,
        SchedEvent::Placement { pid, cpu: 0, prev_cpu: 0, reason: "ttwu_runnable", .. } if *pid == a
    )));
    assert!(!new
        .iter()
        .any(|e| matches!(e, SchedEvent::Migrate { .. } | SchedEvent::FuncCall { .. })));
    assert_eq!(count_calls(&k, Func::SelectTaskRqFair), 0);
}

/// The same without DELAY_DEQUEUE: A leaves the queue with lag −0.5 ms and its
/// wakeup runs `select_task_rq_fair`.
#[test]
fn without_delay_dequeue_the_sleeper_leaves_and_is_placed() {
    let mut q = EventQueue::default();
    let mut k = kernel(&["NO_DELAY_DEQUEUE"]);
    let (a, _b, _) = two_on_cpu0(&mut k, &mut q);
    block(&mut k, a, T0 + MS, &mut q);
    assert!(!se(&k, a).sched_delayed && !se(&k, a).on_rq);
    assert_eq!(se(&k, a).vlag, -(MS as i64) / 2);
    assert_eq!(k.rqs[0].nr_running, 1);
    k.try_to_wake_up(a, 0, 1, &mut q);
    assert_eq!(count_calls(&k, Func::SelectTaskRqFair), 1);
}

/// A eligible sleeper is dequeued: A runs 1 ms and is preempted (v0+1), B runs
/// 0.4 ms and sleeps: B at v0+0.4, V = (1 + 0.4)/2 = v0+0.7: lag +0.3 ms ≥ 0.
#[test]
fn a_sleeper_with_positive_lag_is_dequeued() {
    let mut q = EventQueue::default();
    let mut k = kernel(&[]);
    let (a, b, _) = two_on_cpu0(&mut k, &mut q);
    k.now = T0 + MS;
    k.schedule(0, &mut q);
    assert_eq!(k.rqs[0].curr, Some(b), "A (v0+1 > V) gives way");
    block(&mut k, b, T0 + MS + 400_000, &mut q);
    assert!(!se(&k, b).sched_delayed && !se(&k, b).on_rq);
    assert_eq!(se(&k, b).vlag, 300_000);
    assert_eq!(k.rqs[0].nr_running, 1);
    assert_eq!(k.rqs[0].curr, Some(a));
}

/// From the delayed state (A delayed at v0+1, B running from t0+1 ms at v0): at
/// t0+3 ms B sleeps at v0+2 with V = (1 + 2)/2 = v0+1.5: B is not eligible either
/// and is delayed. The pick then reaches A (eligible, lag +0.5 ms): A leaves, its
/// lag clipped to 0 by DELAY_ZERO (kept at +0.5 ms without it); then B, alone, is
/// eligible, is picked and leaves (lag 0). CPU 0 goes idle with nothing queued.
#[test]
fn the_pick_dequeues_delayed_entities_and_delay_zero_clips_their_lag() {
    for zero in [true, false] {
        let mut q = EventQueue::default();
        let mut k = kernel(if zero { &[] } else { &["NO_DELAY_ZERO"] });
        let (a, b, _) = two_on_cpu0(&mut k, &mut q);
        block(&mut k, a, T0 + MS, &mut q);
        block(&mut k, b, T0 + 3 * MS, &mut q);
        assert!(!se(&k, a).on_rq && !se(&k, a).sched_delayed);
        assert!(!se(&k, b).on_rq && !se(&k, b).sched_delayed);
        assert_eq!(se(&k, a).vlag, if zero { 0 } else { MS as i64 / 2 });
        assert_eq!(se(&k, b).vlag, 0);
        assert_eq!((k.rqs[0].curr, k.rqs[0].nr_running), (None, 0));
    }
}

/// A delayed at v0+1; B runs until t0+2.4 ms (v0+1.4, before its deadline v0+1.5):
/// V = (1 + 1.4)/2 = v0+1.2, so A's lag is now +0.2 ms. Woken, A is re-placed by
/// DELAY_ZERO at lag 0 against B alone: vruntime v0+1.4, deadline + 1.5 ms. Without
/// DELAY_ZERO it keeps v0+1.
#[test]
fn delay_zero_replaces_a_woken_entity_whose_lag_turned_positive() {
    for zero in [true, false] {
        let mut q = EventQueue::default();
        let mut k = kernel(if zero { &[] } else { &["NO_DELAY_ZERO"] });
        let (a, b, v0) = two_on_cpu0(&mut k, &mut q);
        block(&mut k, a, T0 + MS, &mut q);
        k.now = T0 + 2 * MS + 400_000;
        k.update_curr(0);
        assert_eq!(se(&k, b).vruntime, v0.wrapping_add(1_400_000));
        k.try_to_wake_up(a, 0, 1, &mut q);
        k.check_invariants().unwrap();
        if zero {
            assert_eq!(se(&k, a).vruntime, v0.wrapping_add(1_400_000));
            assert_eq!(se(&k, a).deadline, v0.wrapping_add(2_900_000));
            assert_eq!(se(&k, a).vlag, 0);
        } else {
            assert_eq!(se(&k, a).vruntime, v0.wrapping_add(MS));
        }
        assert_eq!(k.rqs[0].nr_running, 2);
    }
}

#[test]
fn the_checker_rejects_a_delayed_runnable_task() {
    let mut q = EventQueue::default();
    let mut k = kernel(&[]);
    let (a, b, _) = two_on_cpu0(&mut k, &mut q);
    k.tasks[b as usize].se.sched_delayed = true;
    assert!(k.check_invariants().unwrap_err().contains("sched_delayed"));
    k.tasks[b as usize].se.sched_delayed = false;
    // A delayed task may not be the running one.
    block(&mut k, a, T0 + MS, &mut q);
    k.rqs[0].curr = Some(a);
    k.rqs[0].cfs.curr = Some(a);
    assert!(k.check_invariants().is_err());
}

/// PREEMPT_SHORT with equal slices (1.5 ms, ticks every 4 ms). A runs to the t0+4 ms
/// tick (v0+4, new deadline v0+5.5; V = v0+2: B runs). At t0+8 ms B (v0+4) gets
/// the same deadline v0+5.5; V = v0+4, both eligible, the tie keeps B: the same task
/// is picked again, so (as in the kernel, `prev == p`) nothing re-protects its slice.
/// At t0+9 ms an `update_curr` finds B at v0+5 against V = v0+4.5: not eligible, and
/// `did_preempt_short` asks for a reschedule. Without PREEMPT_SHORT B runs on to its
/// deadline.
#[test]
fn preempt_short_ends_an_unprotected_slice_at_ineligibility() {
    for short in [true, false] {
        let mut q = EventQueue::default();
        let mut k = kernel(if short { &[] } else { &["NO_PREEMPT_SHORT"] });
        let (a, b, v0) = two_on_cpu0(&mut k, &mut q);
        k.now = T0 + 4 * MS;
        assert!(k.task_tick_fair(0));
        k.schedule(0, &mut q);
        assert_eq!(k.rqs[0].curr, Some(b));
        assert_eq!(se(&k, a).deadline, v0.wrapping_add(5_500_000));
        k.now = T0 + 8 * MS;
        assert!(k.task_tick_fair(0));
        k.schedule(0, &mut q);
        assert_eq!(k.rqs[0].curr, Some(b));
        assert_eq!(se(&k, b).deadline, v0.wrapping_add(5_500_000));
        assert_eq!(se(&k, b).vlag == se(&k, b).deadline as i64, !short);
        k.now = T0 + 9 * MS;
        k.update_curr(0);
        assert_eq!(k.take_deadline_resched(0), short);
        k.check_invariants().unwrap();
    }
}
