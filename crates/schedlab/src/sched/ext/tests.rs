//! Hand-computed cases of the class's rules (docs/design/sched-ext-6.12.md).

use super::dsq::*;
use super::idle::*;
use super::simple::{Simple, SHARED_DSQ};
use super::*;

fn all(n: usize) -> CpuMask {
    CpuMask::first_n(n)
}

fn mask(cpus: &[usize]) -> CpuMask {
    cpus.iter().copied().collect()
}

/// A scheduler that implements nothing: every default of the class.
#[derive(Debug)]
struct Defaults;

impl ScxOps for Defaults {
    fn name(&self) -> &str {
        "defaults"
    }
    fn implemented(&self) -> u32 {
        0
    }
}

/// Holds every enqueued task itself and dispatches the whole list to the local
/// DSQ of the CPU asking, never forgetting a task (so stale entries happen).
#[derive(Debug, Default)]
struct Holder {
    held: Vec<Pid>,
    dequeued: Vec<Pid>,
}

impl ScxOps for Holder {
    fn name(&self) -> &str {
        "holder"
    }
    fn implemented(&self) -> u32 {
        op::ENQUEUE | op::DISPATCH | op::DEQUEUE
    }
    fn enqueue(&mut self, _kf: &mut Kf, p: Pid, _f: u64) {
        self.held.push(p);
    }
    fn dequeue(&mut self, _kf: &mut Kf, p: Pid, _f: u64) {
        self.dequeued.push(p);
    }
    fn dispatch(&mut self, kf: &mut Kf, _cpu: i32, _prev: Option<Pid>) {
        for &p in &self.held {
            kf.dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
        }
        self.held.clear();
    }
}

#[test]
fn fifo_and_vtime_order() {
    let mut q = Dsq::new(SCX_DSQ_GLOBAL);
    q.insert_fifo(1, false).unwrap();
    q.insert_fifo(2, false).unwrap();
    q.insert_fifo(3, true).unwrap();
    let order: Vec<Pid> = q.list.iter().map(|e| e.pid).collect();
    assert_eq!(order, [3, 1, 2]);
    assert!(q.insert_vtime(4, 0).unwrap_err().contains("built-in"));

    // Wrap-aware keys: u64::MAX - 5 is "-6", before 5; an equal key goes after.
    let mut v = Dsq::new(7);
    v.insert_vtime(1, 10).unwrap();
    v.insert_vtime(2, 5).unwrap();
    v.insert_vtime(3, 10).unwrap();
    v.insert_vtime(4, u64::MAX - 5).unwrap();
    let order: Vec<Pid> = v.list.iter().map(|e| e.pid).collect();
    assert_eq!(order, [4, 2, 1, 3]);
    assert_eq!(v.seq, 4);
    // A vtime DSQ takes no FIFO insert while it holds tasks, and either once empty.
    assert!(v.insert_fifo(5, false).unwrap_err().contains("PRIQ"));
    for p in [1, 2, 3, 4] {
        assert!(v.remove(p));
    }
    assert!(!v.remove(4));
    v.insert_fifo(5, false).unwrap();
    assert!(v.insert_vtime(6, 1).unwrap_err().contains("FIFO"));
}

#[test]
fn idle_masks_track_whole_cores() {
    // Two cores of two threads.
    let mut t = IdleTracker::new(&[0, 0, 1, 1]);
    assert!(t.smt_active());
    assert_eq!((t.cpu, t.smt), (all(4), all(4)));
    t.update(1, false);
    assert_eq!((t.cpu, t.smt), (mask(&[0, 2, 3]), mask(&[2, 3])));
    // Core 0 whole again only once both threads are idle.
    t.update(1, true);
    assert_eq!(t.smt, all(4));
    // Claiming CPU 0 takes its core out of `smt`; a second claim fails.
    assert!(t.test_and_clear(0));
    assert_eq!((t.cpu, t.smt), (mask(&[1, 2, 3]), mask(&[2, 3])));
    assert!(!t.test_and_clear(0));
    // Without SMT the `smt` mask is not kept up.
    let mut f = IdleTracker::new(&[0, 1, 2]);
    assert!(!f.smt_active());
    f.update(0, false);
    assert_eq!(f.cpu, mask(&[1, 2]));
}

#[test]
fn pick_idle_distributes_from_a_cursor_per_cpu() {
    let mut t = IdleTracker::new(&[0, 1, 2, 3]);
    // CPU 0's cursor starts at 0: its first pick skips CPU 0, then wraps.
    let picks: Vec<Option<usize>> = (0..5).map(|_| t.pick_idle(&all(4), 0, 0)).collect();
    assert_eq!(picks, [Some(1), Some(2), Some(3), Some(0), None]);
    // Each calling CPU has its own cursor.
    let mut t = IdleTracker::new(&[0, 1, 2, 3]);
    assert_eq!(t.pick_idle(&all(4), 0, 2), Some(1));
    assert_eq!(t.pick_idle(&all(4), 0, 0), Some(2));
    assert_eq!(t.pick_idle(&mask(&[0]), 0, 0), Some(0));
    // SCX_PICK_IDLE_CORE with SMT: only whole idle cores.
    let mut s = IdleTracker::new(&[0, 0, 1, 1]);
    s.update(3, false);
    assert_eq!(s.pick_idle(&mask(&[2, 3]), SCX_PICK_IDLE_CORE, 0), None);
    assert_eq!(s.pick_idle(&mask(&[2, 3]), 0, 0), Some(2));
}

#[test]
fn select_cpu_dfl_takes_each_branch_in_order() {
    let fresh = || IdleTracker::new(&[0, 0, 1, 1]);
    let a = all(4);
    // Sync: the waker's CPU, busy as it is, while any CPU is idle.
    let mut t = fresh();
    t.update(3, false);
    assert_eq!(t.select_cpu_dfl(&a, 0, true, true, 3), (3, true));
    // ... not when the waker's local DSQ has tasks (sync_ok false): prev's core.
    let mut t = fresh();
    t.update(3, false);
    assert_eq!(t.select_cpu_dfl(&a, 0, true, false, 3), (0, true));
    // Prev on a wholly idle core: prev, claimed with its core.
    let mut t = fresh();
    assert_eq!(t.select_cpu_dfl(&a, 2, false, true, 0), (2, true));
    assert_eq!((t.cpu, t.smt), (mask(&[0, 1, 3]), mask(&[0, 1])));
    // Prev's core half busy: a CPU of another wholly idle core (cursor 0 → 2).
    let mut t = fresh();
    t.update(1, false);
    assert_eq!(t.select_cpu_dfl(&a, 0, false, true, 0), (2, true));
    // No whole idle core: prev itself if idle.
    let mut t = fresh();
    t.update(1, false);
    t.update(3, false);
    assert_eq!(t.select_cpu_dfl(&a, 0, false, true, 0), (0, true));
    // Prev busy: any idle CPU.
    let mut t = fresh();
    for c in [0, 1, 3] {
        t.update(c, false);
    }
    assert_eq!(t.select_cpu_dfl(&a, 0, false, true, 0), (2, true));
    // Nothing idle: prev, not idle; and sync alone does not help then.
    let mut t = fresh();
    for c in 0..4 {
        t.update(c, false);
    }
    assert_eq!(t.select_cpu_dfl(&a, 1, true, true, 3), (1, false));
}

#[test]
fn wake_flags_are_renumbered_for_612() {
    use crate::abi::{WF_EXEC, WF_FORK, WF_SYNC, WF_TTWU};
    assert_eq!(
        scx_wake_flags(WF_SYNC | WF_TTWU),
        SCX_WAKE_SYNC | SCX_WAKE_TTWU
    );
    assert_eq!(scx_wake_flags(WF_FORK), SCX_WAKE_FORK);
    assert_eq!(scx_wake_flags(WF_EXEC), WF_EXEC_612);
}

/// `n` CPUs without SMT, each running nothing.
fn class(ops: Box<dyn ScxOps>, n: usize) -> Scx {
    let core_of: Vec<usize> = (0..n).collect();
    Scx::new(ops, &core_of)
}

/// Wake `p` (already known) from `this_cpu` and enqueue it where it was placed.
fn wake(s: &mut Scx, p: Pid, prev: usize, this_cpu: usize) -> usize {
    let c = s.select_task_rq(p, prev, crate::abi::WF_TTWU, this_cpu);
    s.enqueue(p, c, SCX_ENQ_WAKEUP, false, false);
    s.check().unwrap();
    c
}

/// Run `p` on `cpu` as the core would: pick it and mark the CPU busy.
fn run_on(s: &mut Scx, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
    let n = s.pick_next(cpu, prev);
    s.update_idle(cpu, n.is_none());
    s.check().unwrap();
    n
}

#[test]
fn defaults_dispatch_to_an_idle_cpu_or_the_global_dsq() {
    let mut s = class(Box::new(Defaults), 2);
    for p in 1..=3 {
        s.init_task(p, 0, 100, all(2), true);
    }
    // Everything idle: CPU 0 (prev) is claimed, the task goes straight to its local
    // DSQ with a default slice, and the idle CPU is to be rescheduled.
    assert_eq!(wake(&mut s, 1, 0, 0), 0);
    assert_eq!(s.core.local[0].head(), Some(1));
    assert_eq!(s.take_actions(), [Action::Resched { cpu: 0 }]);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    // CPU 1 next (the only idle one), then nothing idle: the global DSQ.
    assert_eq!(wake(&mut s, 2, 0, 0), 1);
    assert_eq!(run_on(&mut s, 1, None), Some(2));
    s.take_actions();
    assert_eq!(wake(&mut s, 3, 0, 0), 0);
    assert_eq!(s.core.global.head(), Some(3));
    assert!(s.take_actions().is_empty(), "no CPU to wake");
    // Task 1 sleeps: CPU 0 consumes the global DSQ.
    s.dequeue(1, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(3));
    assert_eq!(s.core.global.nr(), 0);
    assert!(s.core.error.is_none());
}

#[test]
fn simple_fifo_consumes_the_shared_dsq_in_order() {
    let mut s = class(Box::new(Simple::fifo()), 2);
    assert!(s.core.user.contains_key(&SHARED_DSQ), "ops.init created it");
    for p in 1..=4 {
        s.init_task(p, 0, 100, all(2), true);
    }
    assert_eq!(wake(&mut s, 1, 0, 0), 0);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    assert_eq!(wake(&mut s, 2, 1, 0), 1);
    assert_eq!(run_on(&mut s, 1, None), Some(2));
    // Both busy: 3 then 4 join the shared DSQ (held there, not by the scheduler).
    wake(&mut s, 3, 0, 0);
    wake(&mut s, 4, 1, 0);
    let order: Vec<Pid> = s.core.user[&SHARED_DSQ]
        .list
        .iter()
        .map(|e| e.pid)
        .collect();
    assert_eq!(order, [3, 4]);
    // CPU 1's task sleeps: its dispatch consumes the head, 3, migrating it from
    // CPU 0's rq (where select_cpu left it).
    s.take_actions();
    s.dequeue(2, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 1, Some(2)), Some(3));
    assert_eq!(
        s.take_actions(),
        [Action::Migrate {
            pid: 3,
            from: 0,
            to: 1
        }]
    );
    assert_eq!(s.core.task(3).cpu, 1);
}

#[test]
fn a_task_keeps_its_cpu_while_it_has_slice_then_requeues() {
    let mut s = class(Box::new(Simple::fifo()), 1);
    for p in 1..=2 {
        s.init_task(p, 0, 100, all(1), true);
    }
    wake(&mut s, 1, 0, 0);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    wake(&mut s, 2, 0, 0);
    // Slice left: kept, no dispatch needed.
    s.update_curr(1, 5_000_000);
    assert!(!s.tick(0, 1));
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(1));
    assert_eq!(s.core.task(1).slice, 15_000_000);
    // Slice used up: the tick asks for a resched; 1 is enqueued behind 2.
    s.update_curr(1, 15_000_000);
    assert!(s.tick(0, 1));
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(2));
    let order: Vec<Pid> = s.core.user[&SHARED_DSQ]
        .list
        .iter()
        .map(|e| e.pid)
        .collect();
    assert_eq!(order, [1]);
    assert_eq!(
        s.core.task(1).slice,
        SCX_SLICE_DFL,
        "enqueue gave a new slice"
    );
    // Alone and out of slice: nothing else found, so it is kept, slice refilled.
    s.dequeue(2, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    s.update_curr(1, SCX_SLICE_DFL);
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(1));
    assert_eq!(s.core.task(1).slice, SCX_SLICE_DFL);
}

#[test]
fn simple_vtime_charges_by_weight_and_caps_sleep_credit() {
    let mut s = class(Box::new(Simple::weighted()), 1);
    s.init_task(1, 0, 100, all(1), true);
    s.init_task(2, 0, 200, all(1), true);
    wake(&mut s, 1, 0, 0);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    wake(&mut s, 2, 0, 0);
    // 1 uses its whole slice: vtime += 20 ms × 100 / 100.
    s.update_curr(1, SCX_SLICE_DFL);
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(2));
    assert_eq!(s.core.task(1).dsq_vtime, 20_000_000);
    // 2 (weight 200) uses its whole slice: vtime += 10 ms. Balance runs before
    // the put of prev (6.12's order), so 1 is consumed before 2 is enqueued again
    // ahead of it.
    s.update_curr(2, SCX_SLICE_DFL);
    assert_eq!(run_on(&mut s, 0, Some(2)), Some(1));
    assert_eq!(s.core.task(2).dsq_vtime, 10_000_000);
    let e = s.core.user[&SHARED_DSQ].list[0];
    assert_eq!((e.pid, e.vtime), (2, 10_000_000));
    // A task far behind the global vtime is brought to one slice behind it.
    let mut s = class(Box::new(Simple::weighted()), 1);
    s.init_task(1, 0, 100, all(1), true);
    s.init_task(2, 0, 100, all(1), true);
    wake(&mut s, 1, 0, 0);
    run_on(&mut s, 0, None);
    s.core.task_mut(1).dsq_vtime = 100_000_000;
    s.dequeue(1, SCX_DEQ_SLEEP, true, false);
    wake(&mut s, 1, 0, 0);
    run_on(&mut s, 0, None); // running: vtime_now = 100 ms
    wake(&mut s, 2, 0, 0);
    let e = s.core.user[&SHARED_DSQ].list[0];
    assert_eq!((e.pid, e.vtime), (2, 80_000_000));
}

#[test]
fn stale_dispatches_are_dropped() {
    let mut s = class(Box::new(Holder::default()), 1);
    s.init_task(1, 0, 100, all(1), true);
    s.init_task(2, 0, 100, all(1), true);
    // No select_cpu op: the default finds CPU 0 idle and dispatches directly.
    wake(&mut s, 1, 0, 0);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    // CPU busy: 2 goes to the scheduler, which holds it.
    wake(&mut s, 2, 0, 0);
    assert_eq!(s.core.task(2).ops_state, OpsState::Queued(1));
    // 2 leaves before it is dispatched: ops.dequeue; the scheduler still lists it.
    s.dequeue(2, SCX_DEQ_SLEEP, false, false);
    // 1 sleeps; the dispatch of 2 is stale and dropped: the CPU goes idle.
    s.dequeue(1, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 0, Some(1)), None);
    let h = format!("{:?}", s.ops);
    assert!(h.contains("dequeued: [2]"), "{h}");
    assert!(s.core.local[0].nr() == 0 && s.core.error.is_none());
}

#[test]
fn kfunc_contexts_and_kicks_are_checked() {
    let mut s = class(Box::new(Defaults), 2);
    s.init_task(1, 0, 100, all(2), true);
    // consume outside ops.dispatch is an error.
    s.call(0, kf::REST, |_, k| k.consume(SHARED_DSQ));
    assert!(s.core.error.as_deref().unwrap().contains("scx_bpf_consume"));
    let mut s = class(Box::new(Defaults), 2);
    s.call(0, kf::REST, |_, k| {
        k.kick_cpu(1, SCX_KICK_IDLE | SCX_KICK_PREEMPT)
    });
    assert!(s.core.error.as_deref().unwrap().contains("SCX_KICK_IDLE"));
    // A preempting kick zeroes the target's slice; an idle kick to a busy CPU
    // does nothing.
    let mut s = class(Box::new(Defaults), 2);
    s.init_task(1, 0, 100, all(2), true);
    wake(&mut s, 1, 1, 0);
    assert_eq!(run_on(&mut s, 1, None), Some(1));
    assert_eq!(
        s.take_actions(),
        [Action::Resched { cpu: 1 }],
        "the wakeup's"
    );
    s.call(0, kf::REST, |_, k| k.kick_cpu(1, SCX_KICK_PREEMPT));
    assert_eq!(
        s.take_actions(),
        [Action::Kick {
            from: 0,
            cpu: 1,
            flags: SCX_KICK_PREEMPT
        }]
    );
    assert!(!s.kick_arrives(1, SCX_KICK_IDLE));
    assert!(s.kick_arrives(1, SCX_KICK_PREEMPT));
    assert_eq!(s.core.task(1).slice, 0);
    assert!(s.kick_arrives(0, SCX_KICK_IDLE), "an idle CPU reschedules");
}

#[test]
fn the_check_finds_a_task_in_two_places() {
    let mut s = class(Box::new(Simple::fifo()), 2);
    s.init_task(1, 0, 100, all(2), true);
    wake(&mut s, 1, 0, 0);
    assert!(s.check().is_ok());
    // Corrupt: also on the global DSQ.
    s.core.global.insert_fifo(1, false).unwrap();
    assert!(s.check().unwrap_err().contains("not queued there"));
    s.core.global.remove(1);
    // Corrupt: running on CPU 1 while on CPU 0's local DSQ.
    s.core.curr[1] = Some(1);
    assert!(s.check().unwrap_err().contains("running true"));
}

/// One step of a random schedule against the class, driven as the core would.
#[derive(Clone, Debug)]
enum Step {
    Wake { p: Pid, from: usize },
    Sleep { cpu: usize },
    Tick { cpu: usize, ns: u64 },
}

fn step_strategy(nr_cpus: usize, nr_tasks: u32) -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (1..=nr_tasks, 0..nr_cpus).prop_map(|(p, from)| Step::Wake { p, from }),
        (0..nr_cpus).prop_map(|cpu| Step::Sleep { cpu }),
        (0..nr_cpus, 0u64..30_000_000).prop_map(|(cpu, ns)| Step::Tick { cpu, ns }),
    ]
}

/// Carry out the actions the hooks left: a reschedule (or kick) picks again.
fn settle(s: &mut Scx) {
    for _ in 0..1000 {
        let acts = s.take_actions();
        if acts.is_empty() {
            return;
        }
        for a in acts {
            let cpu = match a {
                Action::Resched { cpu } => cpu,
                Action::Kick { cpu, flags, .. } if s.kick_arrives(cpu, flags) => cpu,
                _ => continue,
            };
            let prev = s.core.curr[cpu];
            let n = s.pick_next(cpu, prev);
            s.update_idle(cpu, n.is_none());
        }
    }
    panic!("actions never settle");
}

proptest::proptest! {
    /// Random wakeups, sleeps and ticks on 1–4 CPUs (SMT or not) under `simple`
    /// (FIFO and vtime), `llc-vtime`, the defaults and a scheduler that holds tasks: every
    /// runnable task is in exactly one place, no error is raised, and once the
    /// reschedules are done no idle CPU has work on its local DSQ.
    #[test]
    fn random_schedules_keep_the_class_invariants(
        sched in 0usize..5,
        smt in proptest::bool::ANY,
        nr_cpus in 1usize..5,
        steps in proptest::collection::vec(step_strategy(4, 6), 1..120),
    ) {
        let ops: Box<dyn ScxOps> = match sched {
            0 => Box::new(Simple::fifo()),
            1 => Box::new(Simple::weighted()),
            2 => Box::new(Defaults),
            3 => Box::new(Holder::default()),
            _ => Box::new(super::llc_vtime::LlcVtime::new((0..nr_cpus).map(|c| c / 2).collect())),
        };
        let core_of: Vec<usize> = (0..nr_cpus).map(|c| if smt { c / 2 } else { c }).collect();
        let mut s = Scx::new(ops, &core_of);
        for p in 1..=6 {
            s.init_task(p, 0, 50 * p, all(nr_cpus), true);
        }
        for st in steps {
            match st {
                Step::Wake { p, from } => {
                    let from = from % nr_cpus;
                    if !s.core.task(p).queued {
                        let prev = s.core.task(p).cpu;
                        let c = s.select_task_rq(p, prev, crate::abi::WF_TTWU, from);
                        s.enqueue(p, c, SCX_ENQ_WAKEUP, false, false);
                    }
                }
                Step::Sleep { cpu } => {
                    let cpu = cpu % nr_cpus;
                    if let Some(p) = s.core.curr[cpu] {
                        s.dequeue(p, SCX_DEQ_SLEEP, true, false);
                        let n = s.pick_next(cpu, Some(p));
                        s.update_idle(cpu, n.is_none());
                    }
                }
                Step::Tick { cpu, ns } => {
                    let cpu = cpu % nr_cpus;
                    if let Some(p) = s.core.curr[cpu] {
                        s.update_curr(p, ns);
                        if s.tick(cpu, p) {
                            let n = s.pick_next(cpu, Some(p));
                            s.update_idle(cpu, n.is_none());
                        }
                    }
                }
            }
            settle(&mut s);
            proptest::prop_assert!(s.check().is_ok(), "{:?}", s.check());
            proptest::prop_assert!(s.core.error.is_none(), "{:?}", s.core.error);
            for c in 0..nr_cpus {
                proptest::prop_assert!(
                    s.core.curr[c].is_some() || s.core.local[c].nr() == 0,
                    "CPU {c} idle with a local DSQ of {}", s.core.local[c].nr()
                );
            }
        }
    }
}

#[test]
fn a_sync_wakeup_from_an_exiting_waker_does_not_take_its_cpu() {
    let mut s = class(Box::new(Defaults), 3);
    for p in 1..=3 {
        s.init_task(p, 0, 100, all(3), true);
    }
    wake(&mut s, 1, 0, 0);
    assert_eq!(run_on(&mut s, 0, None), Some(1));
    // A sync wakeup by the running task 1: its own CPU, busy as it is.
    let sync = crate::abi::WF_TTWU | crate::abi::WF_SYNC;
    assert_eq!(s.select_task_rq(2, 2, sync, 0), 0);
    // Once 1 is exiting (PF_EXITING): prev (2), idle.
    s.core.task_mut(1).exiting = true;
    assert_eq!(s.select_task_rq(3, 2, sync, 0), 2);
}

#[test]
fn llc_vtime_queues_per_llc_and_steals_when_its_own_is_empty() {
    use super::llc_vtime::LlcVtime;
    // Two LLCs of two CPUs.
    let mut s = class(Box::new(LlcVtime::new(vec![0, 0, 1, 1])), 4);
    assert!(s.core.user.contains_key(&0) && s.core.user.contains_key(&1));
    for p in 1..=6 {
        s.init_task(p, 0, 100, all(4), true);
    }
    // Four wakeups fill the four idle CPUs (direct dispatches).
    for (p, prev) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        let c = wake(&mut s, p, prev, 0);
        assert_eq!(c, prev);
        assert_eq!(run_on(&mut s, c, None), Some(p));
    }
    // No idle CPU: each queues on the LLC of its previous CPU.
    wake(&mut s, 5, 2, 0);
    wake(&mut s, 6, 0, 0);
    assert_eq!(s.core.user[&1].head(), Some(5));
    assert_eq!(s.core.user[&0].head(), Some(6));
    s.take_actions();
    // CPU 0 takes its own LLC's task; CPU 1 then finds LLC 0 empty and steals 5.
    s.dequeue(1, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 0, Some(1)), Some(6));
    s.dequeue(2, SCX_DEQ_SLEEP, true, false);
    assert_eq!(run_on(&mut s, 1, Some(2)), Some(5));
    assert_eq!(
        s.take_actions(),
        [Action::Migrate {
            pid: 5,
            from: 2,
            to: 1
        }]
    );
}

/// Starts timer 0 in `init` (1 ms on), and re-arms or cancels it from its callback
/// as told; counts the callbacks and records the kfunc mask it ran under.
#[derive(Debug, Default)]
struct Timed {
    fired: u32,
    rearm: bool,
    dispatch_refused: bool,
}

impl ScxOps for Timed {
    fn name(&self) -> &str {
        "timed"
    }
    fn implemented(&self) -> u32 {
        op::INIT
    }
    fn init(&mut self, kf: &mut Kf) -> Result<(), i32> {
        kf.timer_start(0, kf.now() + 1_000_000);
        Ok(())
    }
    fn timer(&mut self, kf: &mut Kf, id: u32) {
        assert_eq!(id, 0);
        self.fired += 1;
        // No kfunc context in a timer callback: a dispatch is refused.
        self.dispatch_refused = kf.dispatch_nr_slots() == 0;
        if self.rearm {
            kf.timer_start(0, kf.now() + 1_000_000);
        }
    }
}

#[test]
fn bpf_timers_fire_once_per_arming_and_a_rearm_or_cancel_makes_the_old_one_stale() {
    let mut s = Scx::new(Box::<Timed>::default(), &[0, 1]);
    // ops.init armed timer 0 on CPU 0 for 1 ms: generation 1.
    let arm = s.take_actions();
    assert_eq!(
        arm,
        vec![Action::TimerArm {
            cpu: 0,
            at: 1_000_000,
            id: 0,
            gen: 1
        }]
    );
    assert_eq!(s.timer_next(0), Some(1_000_000));
    assert_eq!(s.timer_next(1), None);
    // A wrong generation is stale; the right one fires once, then is spent.
    assert!(!s.timer_fire(0, 0, 2));
    s.core.now = 1_000_000;
    assert!(s.timer_fire(0, 0, 1));
    assert!(!s.timer_fire(0, 0, 1));
    assert!(
        s.core.error.is_some(),
        "the refused dispatch_nr_slots is an error"
    );
    s.core.error = None;
    assert_eq!(s.timer_next(0), None);
    // Re-armed from its callback: a new generation; cancelled: nothing live.
    s.ops = Box::new(Timed {
        rearm: true,
        ..Default::default()
    });
    s.call(1, 0, |_, k| k.timer_start(0, 5_000_000));
    let acts = s.take_actions();
    assert_eq!(acts.len(), 1);
    let Action::TimerArm { cpu, gen, .. } = acts[0] else {
        panic!("{acts:?}")
    };
    assert_eq!((cpu, gen), (1, 2), "armed on the CPU that started it");
    s.core.now = 5_000_000;
    assert!(s.timer_fire(1, 0, 2));
    assert!(s.timer_live(0, 3), "re-armed by its callback");
    s.call(1, 0, |_, k| k.timer_cancel(0));
    assert!(!s.timer_live(0, 3) && s.timer_next(1).is_none());
}

/// Asks for a watchdog timeout.
#[derive(Debug)]
struct Timeout(u32);

impl ScxOps for Timeout {
    fn name(&self) -> &str {
        "timeout"
    }
    fn implemented(&self) -> u32 {
        0
    }
    fn timeout_ms(&self) -> u32 {
        self.0
    }
}

#[test]
fn the_watchdog_timeout_is_30_s_unless_asked_and_never_longer() {
    let s = Scx::new(Box::new(Timeout(0)), &[0]);
    assert_eq!(s.core.watchdog_timeout, 30_000_000_000);
    let s = Scx::new(Box::new(Timeout(5000)), &[0]);
    assert_eq!(s.core.watchdog_timeout, 5_000_000_000);
    assert!(s.core.error.is_none());
    let s = Scx::new(Box::new(Timeout(30_001)), &[0]);
    assert!(s.core.error.as_deref().unwrap().contains("exceeds"));
    // A task queued but not running for longer than the timeout is a stall; one
    // exactly at it is not.
    let mut s = Scx::new(Box::new(Timeout(1000)), &[0, 1]);
    s.init_task(5, 1, 100, all(2), true);
    s.enqueue(5, 1, 0, false, false);
    s.core.now = 1_000_000_000;
    s.check_stalls();
    assert!(s.core.error.is_none());
    s.core.now = 1_000_000_001;
    s.check_stalls();
    let e = s.core.error.clone().unwrap();
    assert!(e.contains("PID 5 failed to run for 1.000s"), "{e}");
}
