//! rt-app's start protocol (rt-app 1.0, `src/rt-app.c`: `main()` and `thread_body()`),
//! read from the simulated ftrace text on `tests/rtapp/quad.toml` (4 CPUs of
//! capacity 1024, a 1 µs WFI idle state):
//!
//! * `main()` creates the threads one after another (`pthread_create`, a thread fork
//!   by the main task `rt-app`, placed by the fork path from the main task's CPU),
//!   then sleeps for `global.duration` (none here) and joins the threads in creation
//!   order (`pthread_join`: a futex wait on the thread's tid word, which the kernel
//!   clears and wakes at the thread's exit).
//! * `thread_body()`: thread 0 reads `t_zero`; every thread waits at
//!   `threads_barrier` (a glibc `pthread_barrier` of one party per thread: each
//!   arrival but the last blocks in `futex_wait`, the last wakes them all with one
//!   `futex_wake`); then the initial delay, then the phases.

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::metrics::ftrace::FieldVal;
use schedlab::workload::rtapp::MAIN_TASK;
use std::path::Path;

struct Ev {
    ts_ns: u64,
    cpu: usize,
    /// The task printing the line (`<comm>-<pid>`).
    by: String,
    event: String,
    payload: String,
}

impl Ev {
    fn field(&self, k: &str) -> &str {
        self.payload
            .split(' ')
            .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {k} in {}", self.payload))
    }
}

/// The ftrace records of `file` on `quad` (without `cpu_idle`).
fn trace(file: &str) -> (schedlab::experiment::result::RunResult, Vec<Ev>) {
    trace_on("quad.toml", file)
}

/// The ftrace records of `file` on machine file `machine` (without the power
/// events, `cpu_idle` and `cpu_frequency`, and the threads' `task_rename`), each
/// task named by its name (a thread's comm is `rt-app` until its `task_rename`:
/// [`threads_name_themselves_first`]).
fn trace_on(machine: &str, file: &str) -> (schedlab::experiment::result::RunResult, Vec<Ev>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = format!(
        "[machine]\nfile = \"{machine}\"\n[run]\nseed = 3\n[workload]\nkind = \"rtapp\"\nfile = \"{file}\"\n"
    );
    let sc = Scenario::from_doc(
        Doc::parse(&text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    // The trace's records at full ns precision (the text rounds to the µs).
    let (r, log, tasks) = experiment::run_logged(&sc, sc.seed, 0, &opts, false).unwrap();
    let mut evs = vec![];
    let name = |pid: u32, comm: &str| match pid {
        0 => comm.to_string(),
        p => tasks[p as usize].name.chars().take(15).collect(),
    };
    schedlab::metrics::ftrace::for_each_record(&log, &tasks, sc.machine.nr_cpus(), |e| {
        if matches!(e.event, "cpu_idle" | "cpu_frequency" | "task_rename") {
            return;
        }
        let pid_of = |k: &str| {
            let pk = k.replace("comm", "pid");
            e.fields.iter().find_map(|(f, v)| match v {
                FieldVal::Int(p) if *f == pk => Some(*p as u32),
                _ => None,
            })
        };
        evs.push(Ev {
            ts_ns: e.ts,
            cpu: e.cpu,
            by: format!("{}-{}", name(e.pid, &e.comm), e.pid),
            event: e.event.to_string(),
            payload: e
                .fields
                .iter()
                .map(|(k, v)| match (k.ends_with("comm"), pid_of(k)) {
                    (true, Some(p)) => format!("{k}={}", name(p, &v.to_string())),
                    _ => format!("{k}={v}"),
                })
                .collect::<Vec<_>>()
                .join(" "),
        });
    });
    (r, evs)
}

/// The raw records of `file` on `quad`: (event, cpu, time, printing task, fields).
fn raw(file: &str) -> Vec<(String, usize, u64, String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = format!(
        "[machine]\nfile = \"quad.toml\"\n[run]\nseed = 3\n[workload]\nkind = \"rtapp\"\nfile = \"{file}\"\n"
    );
    let sc = Scenario::from_doc(
        Doc::parse(&text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let (_, log, tasks) =
        experiment::run_logged(&sc, sc.seed, 0, &RunOpts::default(), false).unwrap();
    let mut v = vec![];
    schedlab::metrics::ftrace::for_each_record(&log, &tasks, sc.machine.nr_cpus(), |e| {
        let f: Vec<String> = e.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        v.push((
            e.event.to_string(),
            e.cpu,
            e.ts,
            format!("{}-{}", e.comm, e.pid),
            f.join(" "),
        ));
    });
    v
}

/// rt-app's `thread_body` names its thread first (`pthread_setname_np`): a new
/// thread is forked as `rt-app` (the comm `dup_task_struct` copied, as the oracle's
/// real 5.10 trace shows: `child_comm=rt-app`), placed and switched in as
/// `rt-app`, and renames itself on that CPU before anything else it does (once the
/// switch and the fork's return path are paid); from
/// then on every event names it by its own name.
#[test]
fn threads_name_themselves_first() {
    let ev = raw("start2.json");
    let rename: Vec<_> = ev.iter().filter(|e| e.0 == "task_rename").collect();
    assert_eq!(rename.len(), 2, "one per thread, none for the main task");
    for (i, r) in rename.iter().enumerate() {
        let pid: u32 = r.4.split(' ').next().unwrap()[4..].parse().unwrap();
        assert!(
            r.4.ends_with(&format!("oldcomm=rt-app newcomm=t-{i} oom_score_adj=0")),
            "{r:?}"
        );
        assert_eq!(r.3, format!("t-{i}-{pid}"), "printed by the renamed thread");
        // Its fork and first switch-in name it rt-app; the rename follows at once
        // on the CPU it was switched in on.
        let fork = ev
            .iter()
            .find(|e| e.0 == "sched_process_fork" && e.4.ends_with(&format!("child_pid={pid}")))
            .unwrap();
        assert!(fork.4.contains("child_comm=rt-app "), "{fork:?}");
        let first_in = ev
            .iter()
            .find(|e| {
                e.0 == "sched_switch" && e.4.ends_with(&format!("next_pid={pid} next_prio=120"))
            })
            .unwrap();
        assert!(first_in.4.contains("next_comm=rt-app "), "{first_in:?}");
        assert_eq!(first_in.1, r.1, "{first_in:?} {r:?}");
        assert!(r.2 >= first_in.2);
        let between = ev
            .iter()
            .filter(|e| e.2 > first_in.2 && e.2 < r.2 && e.1 == r.1)
            .count();
        assert_eq!(between, 0, "the thread's first act after its switch-in");
        let later: Vec<_> = ev
            .iter()
            .filter(|e| {
                e.2 > r.2 && e.0 == "sched_switch" && e.4.contains(&format!("prev_pid={pid} "))
            })
            .collect();
        assert!(!later.is_empty());
        assert!(later
            .iter()
            .all(|e| e.4.contains(&format!("prev_comm=t-{i} "))));
    }
}

#[test]
fn the_main_task_creates_every_thread_in_order_from_its_cpu() {
    let (r, evs) = trace("start4.json");
    assert_eq!(format!("{:?}", r.workload.stop_reason), "Completed");
    // The main task is the process's first task, started by the scenario.
    assert_eq!(r.tasks[0].name, MAIN_TASK);
    assert_eq!(r.tasks[0].start_ns, 0);
    let forks: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.event == "sched_process_fork" && e.field("comm") == MAIN_TASK)
        .collect();
    let children: Vec<&str> = forks.iter().map(|e| e.field("child_comm")).collect();
    assert_eq!(children, ["t-0", "t-1", "t-2", "t-3"]);
    // Printed by the running main task on its CPU, 0 (where the scenario started it).
    assert!(forks.iter().all(|e| e.by == "rt-app-1" && e.cpu == 0));
    // The main task runs at 1 µs (WFI exit); each pthread_create is a thread fork,
    // 20 µs of its CPU (clone_thread: 20 µs), plus the fork path's own work and
    // the first switch (< 2 µs).
    let t: Vec<f64> = forks.iter().map(|e| e.ts_ns as f64 / 1000.0).collect();
    assert!((21.0..23.0).contains(&t[0]), "{t:?}");
    for w in t.windows(2) {
        assert!((20.0..21.0).contains(&(w[1] - w[0])), "{t:?}");
    }
    // Each new thread is placed by the fork path from CPU 0, which the main task
    // keeps busy: never CPU 0. Every thread blocks at the start barrier within
    // ~2 µs, 18 µs before the next creation, so CPU 1 is idle again each time and
    // the next thread goes there too.
    let targets: Vec<usize> = evs
        .iter()
        .filter(|e| e.event == "sched_wakeup_new" && e.field("comm").starts_with("t-"))
        .map(|e| e.field("target_cpu").parse().unwrap())
        .collect();
    assert_eq!(targets, [1, 1, 1, 1]);
    // The main task is not one of rt-app's threads in its report.
    assert!(!r.workload.tool.keys().any(|k| k.starts_with(MAIN_TASK)));
    assert_eq!(r.workload.tool["t-3.loops"], 1.0);
}

#[test]
fn a_starting_thread_runs_its_start_up_before_the_barrier() {
    // quad-start: thread_start_arena = 50 µs (4 threads < 8 × 4 − 1: each creates
    // its arena). The main task creates a thread every ~20 µs from CPU 0; each
    // thread now runs 50 µs before its barrier, so it is still running when
    // the next two are created, and the fork path finds CPU 1 busy.
    let (r, evs) = trace_on("quad-start.toml", "start4.json");
    assert_eq!(format!("{:?}", r.workload.stop_reason), "Completed");
    let targets: Vec<usize> = evs
        .iter()
        .filter(|e| e.event == "sched_wakeup_new" && e.field("comm").starts_with("t-"))
        .map(|e| e.field("target_cpu").parse().unwrap())
        .collect();
    // t-0 on CPU 1 (from ~21 to ~73 µs), t-1 (~41) and t-2 (~61) on the two idle
    // CPUs left, t-3 (~81) on CPU 1 again, free since t-0 blocked.
    assert_eq!(targets[0], 1, "{targets:?}");
    assert_eq!(targets[3], 1, "{targets:?}");
    let mut mid = vec![targets[1], targets[2]];
    mid.sort_unstable();
    assert_eq!(mid, [2, 3], "{targets:?}");
    // The last thread is the barrier's last party and does not block there.
    for k in 0..3 {
        let name = format!("t-{k}");
        let mine: Vec<&Ev> = evs
            .iter()
            .filter(|e| {
                e.event == "sched_switch"
                    && (e.field("next_comm") == name || e.field("prev_comm") == name)
            })
            .collect();
        assert_eq!(mine[1].field("prev_state"), "S", "{name}");
        // 50 µs of start-up, then the barrier and the switch out (2 µs here;
        // threads without a start-up take 1.5-2.03 µs).
        let d = mine[1].ts_ns - mine[0].ts_ns;
        assert!((51_500..=52_100).contains(&d), "{name}: {d} ns");
    }
}

#[test]
fn no_thread_starts_before_the_last_one_is_created() {
    let (r, evs) = trace("start4.json");
    let last_fork = evs
        .iter()
        .filter(|e| e.event == "sched_process_fork" && e.field("comm") == MAIN_TASK)
        .map(|e| e.ts_ns)
        .max()
        .unwrap();
    // Before the last creation each thread runs once, only to block at the barrier
    // (prev_state S): the switch out comes 2.03 µs after the switch in (the clock
    // read of thread 0, 30 ns, the futex call, 0.5 µs, and the switch, 1 µs; 1.5 µs
    // for the others).
    for k in 0..3 {
        let name = format!("t-{k}");
        let mine: Vec<&Ev> = evs
            .iter()
            .filter(|e| {
                e.ts_ns <= last_fork
                    && e.event == "sched_switch"
                    && (e.field("next_comm") == name || e.field("prev_comm") == name)
            })
            .collect();
        assert_eq!(mine.len(), 2, "{name}");
        assert_eq!(mine[1].field("prev_state"), "S", "{name}");
        let d = mine[1].ts_ns - mine[0].ts_ns;
        assert_eq!(d, if k == 0 { 2_030 } else { 1_500 }, "{name}");
    }
    // Then the barrier releases them: each runs its 1000 µs `run` after the last
    // creation, + the last thread's arrival (2.5 µs to reach idle CPU 1 + 0.5 µs).
    for k in 0..4 {
        let t = r.tasks.iter().find(|t| t.name == format!("t-{k}")).unwrap();
        assert!(t.exit_ns.unwrap() >= last_fork + 3_000 + 1_000_000 + 35_000);
    }
}

#[test]
fn two_threads_start_as_rt_app_1_0_does() {
    // Derived from rt-app 1.0's main() and thread_body() (see the module doc), with
    // no duration: main creates T0; T0 reads t_zero and blocks at the barrier; main
    // creates T1 and blocks joining T0; T1 arrives last and wakes T0 (the barrier's
    // one futex_wake); both run. At the end T0 exits and wakes main (tid futex);
    // main joins T1 (already exited, or blocks until T1's exit wakes it) and exits.
    let (_, evs) = trace("start2.json");
    let seq: Vec<String> = evs
        .iter()
        .filter(|e| e.event != "sched_migrate_task")
        .map(|e| match e.event.as_str() {
            "sched_process_fork" => format!("fork {}>{}", e.field("comm"), e.field("child_comm")),
            "sched_wakeup_new" => format!("new {}@{}", e.field("comm"), e.field("target_cpu")),
            "sched_waking" => format!("waking {} by {}", e.field("comm"), e.by),
            "sched_wakeup" => format!("wakeup {}@{}", e.field("comm"), e.field("target_cpu")),
            "sched_switch" => format!(
                "switch {}:{}>{}@{}",
                e.field("prev_comm"),
                e.field("prev_state"),
                e.field("next_comm"),
                e.cpu
            ),
            "sched_process_exit" => format!("exit {}", e.field("comm")),
            other => other.to_string(),
        })
        .collect();
    let want = [
        // The scenario starts rt-app on CPU 0.
        "fork <idle>>rt-app",
        "new rt-app@000",
        "switch swapper/0:R>rt-app@0",
        // pthread_create(T0): placed on idle CPU 1 (CPU 0 runs main).
        "fork rt-app>t-0",
        "new t-0@001",
        "switch swapper/1:R>t-0@1",
        // T0: t_zero, then the barrier: futex_wait.
        "switch t-0:S>swapper/1@1",
        // pthread_create(T1), then main's pthread_join(T0) blocks.
        "fork rt-app>t-1",
        "new t-1@001",
        "switch rt-app:S>swapper/0@0",
        "switch swapper/1:R>t-1@1",
        // T1 arrives last: one futex_wake wakes T0 (to the idle CPU 0).
        "waking t-0 by t-1-3",
        "wakeup t-0@000",
        "switch swapper/0:R>t-0@0",
        // Both run 1000 µs; T0 (started 2.5 µs later) ends last: its exit wakes main
        // (the join of T0), which finds T1 exited and exits.
    ];
    assert_eq!(seq[..want.len()], want, "{seq:#?}");
    // The start causes exactly one wakeup of a thread (the barrier's), and none
    // other before the threads end.
    let wakeups = seq.iter().filter(|s| s.starts_with("wakeup t-")).count();
    assert_eq!(wakeups, 1, "{seq:#?}");
    let tail: Vec<&str> = seq[want.len()..].iter().map(String::as_str).collect();
    assert_eq!(
        tail[..2],
        ["waking rt-app by t-0-2", "wakeup rt-app@002"],
        "{tail:#?}"
    );
    assert_eq!(
        tail.last(),
        Some(&"switch rt-app:X>swapper/2@2"),
        "{tail:#?}"
    );
}

/// rt-app's `barrier` event is a mutex, a condition variable and a count (rt-app
/// 1.0, `run_event`'s `rtapp_barrier`): the last arrival broadcasts holding the
/// mutex; each waiter re-takes the mutex as `pthread_cond_wait` returns. With every
/// party pinned to CPU 0 (`barrier-pinned.json`: a-0 and a-1 run 1 ms, b 3 ms, then
/// the barrier), a-0 and b arrive first and sleep; a-1 arrives last and wakes both
/// (one broadcast), and a-0, which preempts a-1 before a-1 has unlocked, finds the
/// mutex held and sleeps on it, until a-1's unlock wakes it a second time. b then
/// takes the free mutex without sleeping. A `pthread_barrier` would have woken the
/// two once and no more.
#[test]
fn an_rt_app_barrier_hands_its_mutex_from_waiter_to_waiter() {
    let (_, evs) = trace("barrier-pinned.json");
    let threads = ["a-0", "a-1", "b"];
    let after_start: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.ts_ns > 1_000_000)
        .filter(|e| match e.event.as_str() {
            "sched_wakeup" => threads.contains(&e.field("comm")),
            "sched_switch" => threads.contains(&e.field("prev_comm")),
            _ => false,
        })
        .collect();
    let seq: Vec<String> = after_start
        .iter()
        .map(|e| match e.event.as_str() {
            "sched_wakeup" => format!("{} wakes {}", e.by, e.field("comm")),
            // Preempted on its way back to user mode (`R`) or asleep.
            _ => format!("{} out {}", e.field("prev_comm"), e.field("prev_state")),
        })
        .collect();
    assert_eq!(
        seq[..8],
        [
            // a-0, then b, arrive and wait on the condition variable.
            "a-0 out S",
            "b out S",
            // a-1 arrives last: the broadcast wakes both, and a-0 preempts a-1.
            "a-1-3 wakes a-0",
            "a-1-3 wakes b",
            "a-1 out R",
            // a-0 finds the mutex held by a-1: it sleeps again on the mutex.
            "a-0 out S",
            // a-1 unlocks: the hand-off wakes a-0, which preempts it again.
            "a-1-3 wakes a-0",
            "a-1 out R",
        ],
        "{seq:#?}"
    );
    // The rest: the three run to their exits, nobody sleeps again.
    assert!(seq[8..].iter().all(|s| s.ends_with("out X")), "{seq:#?}");
    assert_eq!(seq.len(), 11, "{seq:#?}");
}
