//! Wakeup preemption (sleeper credit against the wakeup granularity), idle states and
//! their exit latency, and remote wakeups through TTWU_QUEUE.
//!
//! Unless said otherwise the machine has 8 CPUs (tunables x4: latency 24 ms,
//! min_granularity 3 ms, wakeup_granularity 4 ms; HZ 250) and the default x86 cost
//! table: context switch 1000 ns, mm switch 500, gtod 30, pipe write/read 600,
//! wakeup 800 (same LLC) / 1200 (remote, queued), IPI 1500 ns wall time.
//! test_topology idle states: POLL (0/0), C1 (exit 2 us / residency 2 us),
//! C6 (133 us / 600 us). Timer slack of SCHED_OTHER sleeps: 50 us.

mod common;

use common::*;
use schedlab::machine::presets::{preset, test_topology};
use schedlab::machine::CpuMask;
use schedlab::sched::core::Policy;
use schedlab::sched::features::SchedFeat;
use schedlab::sim::StopReason;
use schedlab::workload::program::Op;

/// A sleeper and a hog pinned to CPU 0; the sleeper sleeps `sleep_ns` once, then
/// computes 1 ms and exits. Returns the sleeper's wakeup latency (sched_waking ->
/// switch in), from the collector's exact sum over its single wakeup.
fn sleeper_vs_hog(sleep_ns: u64) -> u64 {
    let mut w = W::new();
    let s = w.prog("sleeper", vec![Op::Sleep(c(sleep_ns)), Op::Compute(c(MS))]);
    let h = w.prog("hog", hog_ops());
    w.task("sleeper", s, Some(CpuMask::of(0)));
    w.task("hog", h, Some(CpuMask::of(0)));
    let sc = scenario(
        no_idle(test_topology(1, 1, 8, 1)),
        w.build(),
        Some(sleep_ns / MS + 60),
    );
    let (sim, r) = run_sim(&sc);
    assert_eq!(r.unwrap(), StopReason::Duration);
    let col = &sim.kernel().observer().collector;
    assert_eq!(col.wakeup_latency.count(), 1, "one wakeup (the sleeper's)");
    assert!(exit_ns(&sim, "sleeper").is_some());
    col.wakeup_latency.sum as u64
}

/// Wakeup preemption happens exactly when the hog's vruntime leads the wakee's by
/// more than wakeup_granularity (4 ms), the wakee's vruntime being
/// max(its own, min_vruntime - latency/2) (GENTLE_FAIR_SLEEPERS: credit 12 ms).
///
/// Start: both forked at t = 0 before any switch; the sleeper, forked first on an
/// empty queue, is placed at mv0 + 23 999 994 (vslice for one task, fixed point), the
/// hog at mv0 + 11 999 994 (vslice with two). The hog runs first; at the 12 ms tick
/// its delta_exec 12 000 000 exceeds its slice 11 999 994 and its vruntime equals
/// the sleeper's (11 999 994 + 12 000 000), so the earlier-queued sleeper runs. Before
/// its program goes on, the CPU runs 2000 ns of kernel work: the 12 ms tick handler
/// (500; the tick's work is still pending when the reschedule it triggered switches
/// tasks, so the simulator runs it in the next task's time), the context switch
/// (1000) and the mm switch (500). So it calls sleep at 12 002 000 with vruntime
/// mv0 + 24 001 994, 2 000 ahead of the hog. While it sleeps (d + 50 us slack) the
/// hog runs, so at the wakeup the hog leads by
///     lead = min(d + 50 000 - 2 000, 12 000 000 (sleeper credit)).
/// Preempt iff lead > 4 000 000, i.e. d > 3 952 000.
///
/// No preemption: the hog (exec_start 12 002 000) keeps the CPU until a tick finds
/// delta_exec > 11 999 994: at 24 ms it is 11 998 000 (and its vruntime lead over the
/// sleeper is 11 996 000, not above the slice either), at 28 ms 15 998 000 -> the
/// switch happens at 28 ms. Latency = 28 000 000 - (12 002 000 + d + 50 000).
#[test]
fn wakeup_preemption_threshold_is_wakeup_granularity() {
    // d = 100 us: wakes at 12 152 000, runs at 28 ms.
    assert_eq!(sleeper_vs_hog(100 * US), 28_000_000 - 12_152_000);
    // d = 3.9 ms: lead 3 948 000 < 4 ms; wakes at 15 952 000 (before the 16 ms tick).
    assert_eq!(sleeper_vs_hog(3_900 * US), 28_000_000 - 15_952_000);
    // d = 3.952 ms: lead exactly 4 000 000, not above the granularity: no preemption.
    assert_eq!(sleeper_vs_hog(3_952 * US), 28_000_000 - 16_004_000);
    // d = 3.953 ms: lead 4 001 000 > 4 ms: preempts at once (local resched, no IPI).
    assert_eq!(sleeper_vs_hog(3_953 * US), 0);
    // d = 4 ms: lead 4 048 000 > 4 ms: preempts at once.
    assert_eq!(sleeper_vs_hog(4 * MS), 0);
    // d = 200 ms: lead capped by the sleeper credit at 12 ms > 4 ms: preempts at once.
    assert_eq!(sleeper_vs_hog(200 * MS), 0);
}

/// With WAKEUP_PREEMPTION off a wakee never preempts: the long sleeper (same set-up
/// as above, 200 ms sleep, wakes at 212 052 000 with the full 12 ms credit) waits for
/// a tick. The hog ran alone since 12 002 000 (nr_running 1: no tick check), so at
/// the next tick, 216 ms, its delta_exec (204 ms) exceeds the slice 11 999 994.
#[test]
fn no_wakeup_preemption_waits_for_the_tick() {
    let mut w = W::new();
    let s = w.prog("sleeper", vec![Op::Sleep(c(200 * MS)), Op::Compute(c(MS))]);
    let h = w.prog("hog", hog_ops());
    w.task("sleeper", s, Some(CpuMask::of(0)));
    w.task("hog", h, Some(CpuMask::of(0)));
    let mut sc = scenario(no_idle(test_topology(1, 1, 8, 1)), w.build(), Some(260));
    sc.features.set(SchedFeat::WAKEUP_PREEMPTION, false);
    let (sim, r) = run_sim(&sc);
    r.unwrap();
    let lat = sim.kernel().observer().collector.wakeup_latency.sum as u64;
    assert_eq!(lat, 216_000_000 - 212_052_000);
}

/// Start time of the tasks in the idle tests. The CPUs start in the idle loop, in
/// the state the governor picks with no timer and no history: the deepest. The
/// governor caps its prediction by the typical recent idle length; starting the
/// tasks 50 ms in makes that history long (~50 ms), so the next timer decides, as
/// the hand computations below assume.
const START: u64 = 50 * MS;

/// A task alone on a 1-CPU machine: mark, sleep d, record (3 times).
/// Returns the recorded mark-to-record times (min, max, exact mean), the CPU's idle
/// residency per state and the summed scheduler wakeup latency.
fn sleep_loop(m: schedlab::machine::Machine, cpu: usize, d: u64) -> (Vec<u64>, Vec<u64>, u64) {
    sleep_loop_policy(m, cpu, d, Policy::Normal)
}

fn sleep_loop_policy(
    m: schedlab::machine::Machine,
    cpu: usize,
    d: u64,
    policy: Policy,
) -> (Vec<u64>, Vec<u64>, u64) {
    let mut w = W::new();
    let met = w.metric("slept");
    let p = w.prog(
        "sleeper",
        times(
            3,
            vec![
                Op::Mark { slot: 0 },
                Op::Sleep(c(d)),
                Op::Record {
                    metric: met,
                    slot: 0,
                },
            ],
        ),
    );
    let t = w.task("sleeper", p, Some(CpuMask::of(cpu)));
    t.policy = policy;
    t.start_ns = START;
    let sc = scenario(m, w.build(), None);
    let (mut sim, r) = run_sim(&sc);
    assert_eq!(r.unwrap(), StopReason::Completed);
    let h = &sim.metrics().hists[met];
    assert_eq!(h.count(), 3);
    let vals = vec![h.hist().min(), h.hist().max(), (h.sum / 3) as u64];
    let now = sim.kernel().now();
    sim.kernel_mut().observer_mut().collector.finish(now);
    let res = sim.kernel().observer().collector.idle_residency[cpu].clone();
    (
        vals,
        res,
        sim.kernel().observer().collector.wakeup_latency.sum as u64,
    )
}

/// A 10 ms sleep on an idle machine: the timer is armed for 10 ms + 50 us slack; the
/// governor (typical idle ~50 ms from the start, so the next timer, 10.05 ms, is the
/// prediction) picks the deepest state whose target residency fits: C6 (600 us), exit 133 us.
/// The timer interrupt is taken after the exit: the wakeup and switch-in happen at
/// expiry + 133 us; the switch costs 1000 ns (same mm, no mm switch), then the
/// record's clock read 30 ns. Mark-to-record: 10 050 000 + 133 000 + 1000 + 30 =
/// 10 184 030 ns. (Later iterations: the typical idle, an EWMA of 1/8, stays well
/// above the 10.05 ms timer: same state.) The scheduler-level wakeup latency (sched_waking -> switch) is 0:
/// sched_waking fires in the timer interrupt, after the exit, and the local
/// reschedule is immediate. C6 residency: 3 x (10 050 000 + 133 000) (the exit
/// latency counts in the state, as cpuidle's own residency does: until the state's
/// enter() returns, where the `cpu_idle` exit fires), plus the 50 ms before the task
/// starts.
#[test]
fn timer_wakeup_from_deep_idle_pays_exit_latency() {
    let (v, res, lat) = sleep_loop(test_topology(1, 1, 1, 1), 0, 10 * MS);
    for x in &v[..2] {
        // hdr histogram min/max are bucket values (3 significant digits).
        assert!(x.abs_diff(10_184_030) <= 10_184_030 / 1000, "{x}");
    }
    assert_eq!(v[2], 10_184_030, "exact mean");
    assert_eq!(lat, 0);
    // Plus the first 50 ms, idle in C6 before the task starts, and that exit's.
    assert_eq!(
        res,
        vec![0, 0, START + 133_000 + 3 * (10_050_000 + 133_000)]
    );
}

/// A 10 us sleep: timer at +60 us; C6 needs 600 us, so C1 (residency 2 us, exit 2 us).
/// 10 000 + 50 000 + 2 000 + 1000 + 30 = 63 030 ns.
#[test]
fn short_sleep_uses_shallow_state() {
    let (v, res, _) = sleep_loop(test_topology(1, 1, 1, 1), 0, 10 * US);
    assert_eq!(v[2], 63_030);
    // In C1 from the sleep until 2 µs after the timer.
    assert_eq!(res, vec![0, 3 * (60_000 + 2_000), START + 133_000]);
}

/// Timer slack applies to every fair-class task, SCHED_BATCH and SCHED_IDLE included
/// (hrtimer_nanosleep zeroes it only for RT and deadline tasks): same 63 030 ns.
#[test]
fn sched_idle_and_batch_sleeps_get_timer_slack() {
    for policy in [Policy::Idle, Policy::Batch] {
        let (v, _, _) = sleep_loop_policy(test_topology(1, 1, 1, 1), 0, 10 * US, policy);
        assert_eq!(v[2], 63_030, "{policy:?}");
    }
}

/// Juno r0, little CPU 0 (capacity 446): the deepest state whose target residency
/// fits the 10.05 ms timer is cluster-sleep-0 (WFI 1 us, cpu-sleep-0 2000 us,
/// cluster-sleep-0 2500 us), exit latency 1500 us. Costs (cost_arm_big, in
/// reference ns, run at 446/1024): context switch 2200 -> ceil(2200 * 1024 / 446) =
/// 5052 ns, gtod 75 -> 173 ns. 10 050 000 + 1 500 000 + 5052 + 173 = 11 555 225 ns.
#[test]
fn juno_little_cpu_cluster_sleep() {
    let m = preset("juno-r0").unwrap();
    let states = m.idle_states(0);
    assert_eq!(states[2].name, "cluster-sleep-0");
    assert_eq!(states[2].exit_latency_ns, 1_500_000);
    assert!(states[2].target_residency_ns <= 10_050_000);
    let (v, res, _) = sleep_loop(m, 0, 10 * MS);
    assert_eq!(v[2], 11_555_225);
    assert_eq!(&res[..2], &[0, 0]);
    assert!(res[2] >= 3 * 10_050_000, "{res:?}");
}

/// Writer on CPU 0, reader on CPU 1, pinned, on a machine with one CPU per LLC
/// (test_topology(1, 2, 1, 1)): `n` times the writer sleeps 5 ms and writes a byte;
/// the reader blocks in read. The reader's CPU has no timer and is idle for ~5 ms
/// each time, so it sits in C6 (exit 133 us).
///
/// TTWU_QUEUE (different LLCs): the waker queues the task on CPU 1's wake_list and
/// sends an IPI (1500 ns); CPU 1 first leaves C6 (133 us), then enqueues and switches:
/// wakeup latency 134 500 ns, runqueue wait 0 (enqueued when it runs).
/// NO_TTWU_QUEUE: the waker enqueues remotely at once and sends a reschedule IPI
/// (1500 ns); CPU 1 leaves C6 (133 us) and switches: the same 134 500 ns of
/// latency, all of it spent queued (runqueue wait 134 500). In this model both
/// paths pay exactly one IPI; the difference is where the task waits and the
/// waker's cost: 1200 ns (remote queueing) vs 800 ns (local ttwu) per wakeup.
fn remote_wakeups(m: schedlab::machine::Machine, queue: bool, n: u64) -> (u64, u64, u64, u64) {
    let mut w = W::new();
    let pipe = w.pipes(1);
    let wr = w.prog(
        "writer",
        times(n, vec![Op::Sleep(c(5 * MS)), write_to(obj(pipe), 1)]),
    );
    let rd = w.prog("reader", times(n, vec![read_from(obj(pipe), 1)]));
    w.task("writer", wr, Some(CpuMask::of(0))).start_ns = START;
    w.task("reader", rd, Some(CpuMask::of(1))).start_ns = START;
    let mut sc = scenario(m, w.build(), None);
    sc.features.set(SchedFeat::TTWU_QUEUE, queue);
    let (sim, r) = run_sim(&sc);
    assert_eq!(r.unwrap(), StopReason::Completed);
    let col = &sim.kernel().observer().collector;
    let reader = pid_of(&sim, "reader") as u32;
    (
        col.wakeup_latency.sum as u64,
        col.task_rq_wait(reader),
        runtime(&sim, "writer"),
        col.wakeup_latency.count(),
    )
}

#[test]
fn ttwu_queue_remote_llc_wakeup() {
    let n = 20;
    let m = test_topology(1, 2, 1, 1);
    let (lat_q, wait_q, wrt_q, cnt_q) = remote_wakeups(m.clone(), true, n);
    let (lat_d, wait_d, wrt_d, cnt_d) = remote_wakeups(m, false, n);
    // n reader wakeups + n writer timer wakeups (latency 0 each: the writer's CPU
    // also idles in C6, the interrupt comes after the exit, local resched).
    assert_eq!(cnt_q, 2 * n);
    assert_eq!(cnt_d, 2 * n);
    assert_eq!(lat_q, n * (1_500 + 133_000));
    assert_eq!(lat_d, n * (1_500 + 133_000));
    // The reader's start: its CPU leaves the C6 it sat in since t = 0 (133 us)
    // before running it.
    let start_wait = 133_000;
    assert_eq!(wait_q, start_wait);
    assert_eq!(wait_d, start_wait + n * (1_500 + 133_000));
    // Waker cost per wakeup: 1200 queued vs 800 direct.
    assert_eq!(wrt_q - wrt_d, n * 400, "writer runtime {wrt_q} vs {wrt_d}");
}

/// Same LLC (test_topology(1, 1, 2, 1)): TTWU_QUEUE does not apply, the feature makes
/// no difference -- direct enqueue, reschedule IPI + exit latency queued.
#[test]
fn same_llc_wakeup_is_never_queued() {
    let n = 10;
    let m = test_topology(1, 1, 2, 1);
    let a = remote_wakeups(m.clone(), true, n);
    let b = remote_wakeups(m, false, n);
    assert_eq!(a, b);
    assert_eq!(a.1, 133_000 + n * 134_500);
}

/// A remote-LLC wakeup onto a busy CPU (test_topology(1, 2, 1, 1), 2 CPUs: tunables
/// x2, latency 12 ms, slice of two 5 999 997, wakeup granularity 2 ms; the reader
/// shares CPU 1 with a hog). The reader, forked first onto the empty CPU 1, is placed
/// a whole latency ahead (START_DEBIT, 11 999 997), the hog half that, so the hog runs
/// first; at the 8 ms tick its delta_exec exceeds 5 999 997 and the reader runs (its first
/// wait: 8 ms) and blocks in read. The writer's write after a 200 ms sleep wakes it
/// with the 6 ms sleeper credit, more than the 2 ms granularity: it preempts the
/// hog. No idle state is
/// involved: the latency is one IPI, 1500 ns, with or without TTWU_QUEUE (queued: the
/// IPI carries the wakeup, the target enqueues and preempts locally; direct: the
/// waker enqueues and sends a reschedule IPI). Runqueue wait: 0 vs 1500.
#[test]
fn remote_wakeup_onto_busy_cpu_costs_one_ipi() {
    for queue in [true, false] {
        let mut w = W::new();
        let pipe = w.pipes(1);
        let wr = w.prog(
            "writer",
            vec![Op::Sleep(c(200 * MS)), write_to(obj(pipe), 1)],
        );
        let rd = w.prog("reader", vec![read_from(obj(pipe), 1)]);
        let hog = w.prog("hog", hog_ops());
        w.task("writer", wr, Some(CpuMask::of(0)));
        w.task("reader", rd, Some(CpuMask::of(1)));
        w.task("hog", hog, Some(CpuMask::of(1)));
        let mut sc = scenario(test_topology(1, 2, 1, 1), w.build(), Some(220));
        sc.features.set(SchedFeat::TTWU_QUEUE, queue);
        let (sim, r) = run_sim(&sc);
        r.unwrap();
        let col = &sim.kernel().observer().collector;
        let reader = pid_of(&sim, "reader");
        assert!(sim.kernel().task(reader as u32).stats.exit_ns.is_some());
        // Two wakeups: the writer's timer (latency 0, see above) and the reader's.
        assert_eq!(col.wakeup_latency.count(), 2);
        assert_eq!(col.wakeup_latency.sum, 1_500, "queue={queue}");
        // The reader's first wait (fork to its first run at 8 ms) plus the wakeup's.
        let first = 8 * MS;
        let wait = col.task_rq_wait(reader as u32);
        assert_eq!(wait, first + if queue { 0 } else { 1_500 }, "queue={queue}");
    }
}
