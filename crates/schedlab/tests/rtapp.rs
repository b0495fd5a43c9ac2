//! rt-app JSON workloads end to end (`kind = "rtapp"`): every supported event on
//! small hand-checkable files (fixtures in `tests/rtapp/`), malformed files as
//! line-numbered errors with JSON paths, and random well-formed files that never
//! panic.
//!
//! Most files run on `tests/rtapp/quad.toml`: 4 CPUs of capacity 1024 whose only idle
//! state has a 1 µs exit latency, so a timeline is the events' own durations plus
//! the 50 µs timer slack of SCHED_OTHER sleeps plus a few µs of kernel costs.

use proptest::prelude::*;
use schedlab::config::Doc;
use schedlab::experiment::result::RunResult;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets;
use schedlab::workload::rtapp;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp")
}

/// A scenario in `tests/rtapp/` running `file` on `machine` (a preset name, or
/// `quad` for the test machine file), with extra `[run]` lines.
fn scenario(machine: &str, file: &str, run: &str) -> Result<Scenario, String> {
    let m = if machine == "quad" {
        "file = \"quad.toml\"".to_string()
    } else {
        format!("preset = \"{machine}\"")
    };
    let text = format!(
        "[machine]\n{m}\n[run]\nseed = 3\n{run}\n[workload]\nkind = \"rtapp\"\nfile = \"{file}\"\n"
    );
    let doc = Doc::parse(&text, &dir().join("t.toml")).map_err(|e| e.to_string())?;
    Scenario::from_doc(doc, &Overrides::default()).map_err(|e| e.to_string())
}

fn run_sc(sc: &Scenario) -> RunResult {
    let opts = RunOpts {
        check: true,
        ..Default::default()
    };
    experiment::run(sc, sc.seed, 0, &opts).expect("runs").0
}

fn run(machine: &str, file: &str) -> RunResult {
    run_sc(&scenario(machine, file, "").unwrap())
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// `(count, mean µs, max µs)` of workload metric `name`.
fn metric(r: &RunResult, name: &str) -> (u64, f64, f64) {
    let m = r
        .workload
        .metrics
        .get(name)
        .unwrap_or_else(|| panic!("no metric {name}: {:?}", r.workload.metrics.keys()));
    (m.summary.count, m.summary.mean / 1000.0, us(m.summary.max))
}

fn exit_us(r: &RunResult, task: &str) -> f64 {
    let t = r.tasks.iter().find(|t| t.name == task).expect("task");
    us(t.exit_ns.expect("exited"))
}

/// rt-app's `t_zero` (µs): the first thread (created by the main task `rt-app` at
/// its `start_ns`) reaches an idle CPU 2.5 µs later (IPI 1.5 µs + WFI exit 1 µs on
/// `quad`) and reads the clock (30 ns). rt-app's delays and timers count from it;
/// before the start protocol was modelled they counted from t = 0.
fn t_zero_us(r: &RunResult) -> f64 {
    let first = r
        .tasks
        .iter()
        .find(|t| t.name != rtapp::MAIN_TASK)
        .expect("a thread");
    us(first.start_ns) + 2.53
}

/// When the start barrier releases the threads (µs): the last thread created reaches
/// an idle CPU 2.5 µs after its creation and arrives (futex call, 0.5 µs).
fn release_us(r: &RunResult) -> f64 {
    let last = r.tasks.iter().filter(|t| t.name != rtapp::MAIN_TASK);
    us(last.map(|t| t.start_ns).max().expect("a thread")) + 3.0
}

fn stop(r: &RunResult) -> String {
    format!("{:?}", r.workload.stop_reason)
}

fn near(x: f64, want: f64, tol: f64) -> bool {
    (x - want).abs() <= tol
}

#[test]
fn run_sleep_loop_takes_twice_the_run_plus_slack() {
    // 10 × (1000 µs of work at capacity 1024 + a 1000 µs sleep + 50 µs slack).
    // (Counted from t_zero: the thread starts after rt-app's start protocol.)
    let r = run("quad", "runsleep.json");
    assert_eq!(stop(&r), "Completed");
    let end = exit_us(&r, "t") - t_zero_us(&r);
    assert!((20_500.0..20_700.0).contains(&end), "{end}");
    let (n, mean, _) = metric(&r, "t/phase0/period");
    assert_eq!(n, 10);
    assert!(near(mean, 2050.0, 15.0), "{mean}");
    assert_eq!(r.workload.tool["t.loops"], 10.0);
    assert!(r.workload.tool_output.as_deref().unwrap().contains("\nt "));
}

#[test]
fn timer_wakes_on_period_multiples() {
    // run 1000 then wait for the next 4 ms expiry: expiries at 4, 8, ..., 20 ms; each
    // wakeup is the 50 µs slack (plus ~1 µs) late; slack = 4000 − 1000 − costs.
    // Expiries count from t_zero (rt-app's `t_first`), not from t = 0.
    let r = run("quad", "timer.json");
    assert_eq!(stop(&r), "Completed");
    let tz = t_zero_us(&r);
    let end = exit_us(&r, "t") - tz;
    // The thread exits after its last wakeup at 20.05 ms (exit costs 35 µs).
    assert!((20_085.0..20_095.0).contains(&end), "{end}");
    // The run ends when rt-app's main task, woken by the thread's exit (the join),
    // exits in turn (35 µs).
    // Woken just before the thread's own 35 µs exit, it reaches its idle CPU
    // 2.5 µs later and exits (35 µs) too: ~3-5 µs after the thread.
    assert_eq!(r.sim_time_ns, r.tasks[0].exit_ns.unwrap());
    let after = us(r.sim_time_ns) - tz - end;
    assert!((2.5..7.5).contains(&after), "{after}");
    let (n, lat, lat_max) = metric(&r, "t/phase0/wu_lat");
    assert_eq!(n, 5);
    assert!(
        (50.0..55.0).contains(&lat) && lat_max < 55.0,
        "{lat} {lat_max}"
    );
    let (_, slack, _) = metric(&r, "t/phase0/slack");
    assert!((2940.0..3000.0).contains(&slack), "{slack}");
    // An iteration ends at a wakeup 50 µs after a multiple of 4 ms; all but the
    // first start at the previous one: 4000 µs. The first starts ~3.2 µs after
    // t_zero (the start barrier's futex call, 0.5 µs, then `cpus` [0] moves the
    // thread from the CPU the fork placed it on to CPU 0: IPI 1.5 + WFI exit 1 µs)
    // and ends ~52 µs after t_zero + 4000: ~4047 µs.
    let (_, period, pmax) = metric(&r, "t/phase0/period");
    assert!(
        near(period, 4009.5, 2.0) && near(pmax, 4047.0, 2.0),
        "{period} {pmax}"
    );
    assert!(near(r.workload.tool["t.wu_lat_mean_us"], lat, 0.01));
}

#[test]
fn timer_relative_mode_restarts_the_chain_absolute_keeps_it() {
    // A 6 ms run overshoots the first 4 ms expiry. Relative: the chain restarts at
    // 6 ms, so the next expiries are 10, 14, 18 ms. Absolute: 8, 12, 16 ms.
    let rel = run("quad", "timer-relative.json");
    let abs = run("quad", "timer-absolute.json");
    // (+ 50 µs slack and the 35 µs exit cost; from t_zero)
    let rel_end = exit_us(&rel, "t") - t_zero_us(&rel);
    let abs_end = exit_us(&abs, "t") - t_zero_us(&abs);
    assert!(near(rel_end, 18_090.0, 10.0), "{rel_end}");
    assert!(near(abs_end, 16_090.0, 10.0), "{abs_end}");
    // The late iteration records no sleep (lateness 0) and no slack.
    for r in [&rel, &abs] {
        let (n, lat, _) = metric(r, "t/late/wu_lat");
        assert_eq!((n, lat), (1, 0.0));
        assert_eq!(metric(r, "t/on/loops").0, 3);
    }
}

#[test]
fn condvar_signals_wake_waiters_in_arrival_order() {
    // From t_zero: w1 waits at 0, w2 at 0.1 ms; s signals at 1.05 ms (its delay +
    // 50 µs slack) and 0.55 ms later: w1 is woken first, w2 second, each then runs
    // 100 µs and exits (exit costs 35 µs).
    let r = run("quad", "condvar.json");
    assert_eq!(stop(&r), "Completed");
    let tz = t_zero_us(&r);
    let (w1, w2) = (exit_us(&r, "w1") - tz, exit_us(&r, "w2") - tz);
    // In detail: s wakes 2.5 µs after its expiry + slack (idle CPU), signals ~1.5 µs
    // later; the woken thread reaches its idle CPU 2.5 µs after that (IPI + WFI),
    // runs 100 µs (+ ~1.5 µs of mutex and clock costs), wakes rt-app's main task
    // joining it (the tid futex) and exits: ~36 µs. s's sleep ends 551 µs after its
    // first signal (+ ~1 µs of unlock before it sleeps).
    assert!(
        near(w1, 1050.0 + 2.5 + 1.5 + 2.5 + 101.5 + 36.0, 3.0),
        "w1 {w1}"
    );
    let w2_want = 1050.0 + 2.5 + 1.5 + 1.0 + 551.0 + 1.5 + 2.5 + 101.5 + 36.0;
    assert!(near(w2, w2_want, 3.0), "w2 {w2}");
}

#[test]
fn a_signal_with_no_waiter_is_lost() {
    let sc = scenario("quad", "lost-signal.json", "duration_ms = 20").unwrap();
    let r = run_sc(&sc);
    assert_eq!(stop(&r), "Duration");
    assert_eq!(metric(&r, "w/phase0/loops").0, 0);
    assert_eq!(metric(&r, "s/phase0/loops").0, 1);
}

#[test]
fn barrier_waits_for_every_instance_of_every_task() {
    // Parties = 2 (a) + 1 (b): everyone leaves 3 ms after the start barrier released
    // them (b's run0), runs 500 µs more and exits (35 µs). b, the last to arrive,
    // broadcasts holding the barrier's mutex and goes on; the a's wake on their idle
    // CPUs (IPI 2 µs + WFI exit 1 µs) and take the mutex in turn, the second after
    // the first's unlock (its futex wait and the unlock's futex wake, 1 µs each).
    let r = run("quad", "barrier.json");
    assert_eq!(stop(&r), "Completed");
    let rel = release_us(&r);
    let b = exit_us(&r, "b") - rel;
    assert!(near(b, 3535.0, 10.0), "b {b}");
    let a: Vec<f64> = ["a-0", "a-1"]
        .iter()
        .map(|t| exit_us(&r, t) - rel)
        .collect();
    for (t, e) in ["a-0", "a-1"].iter().zip(&a) {
        assert!(*e > b + 2.0 && *e <= b + 6.0, "{t} {e}, b {b}");
    }
    assert!(
        (a[0] - a[1]).abs() >= 0.5,
        "one waited for the other's unlock: {a:?}"
    );
}

#[test]
fn fork_starts_instance_zero_tasks() {
    let r = run("quad", "fork.json");
    assert_eq!(stop(&r), "Completed");
    // rt-app's main task, the parent it created and two forked children; `child`
    // (instance 0) is not started.
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, [rtapp::MAIN_TASK, "parent", "child", "child"]);
    assert_eq!(metric(&r, "child/phase0/loops").0, 2);
    // From t_zero: child 1: parent's run 100 + thread creation (clone_thread = 20 µs) +
    // run 500 + exit 35 µs; child 2 is created after the parent's 1000 µs sleep (+
    // 50 µs slack).
    let tz = t_zero_us(&r);
    let exits: Vec<f64> = r.tasks[2..]
        .iter()
        .map(|t| us(t.exit_ns.unwrap()) - tz)
        .collect();
    assert!(near(exits[0], 655.0, 10.0), "{exits:?}");
    assert!(near(exits[1], 655.0 + 1070.0, 12.0), "{exits:?}");
    assert_eq!(r.workload.tool["child.loops"], 2.0);
}

#[test]
fn run_scales_with_capacity_runtime_does_not() {
    // Calibrated on CPU 1 (A57, 1024): `run 1000` is 1000 µs of work, 1000·1024/446
    // ≈ 2296 µs on an A53; `runtime 1000` spins 32 chunks of 32 µs = 1024 µs anywhere.
    let r = run("juno-r0", "biglittle.json");
    assert_eq!(stop(&r), "Completed");
    let (_, little_run, _) = metric(&r, "little/r/period");
    let (_, little_rt, _) = metric(&r, "little/rt/period");
    let (_, big_run, _) = metric(&r, "big/r/period");
    let (_, big_rt, _) = metric(&r, "big/rt/period");
    assert!(near(little_run, 2296.0, 5.0), "{little_run}");
    assert!(near(big_run, 1000.0, 3.0), "{big_run}");
    assert!(near(little_rt, 1024.0, 3.0), "{little_rt}");
    assert!(near(big_rt, 1024.0, 3.0), "{big_rt}");
}

#[test]
fn resume_wakes_a_suspended_thread() {
    let r = run("quad", "suspend.json");
    assert_eq!(stop(&r), "Completed");
    // From t_zero: r resumes at 1.05 ms (delay + slack); s runs 100 µs and exits
    // (35 µs).
    let s = exit_us(&r, "s") - t_zero_us(&r);
    assert!(near(s, 1185.0, 10.0), "{s}");
}

#[test]
fn per_phase_cpus_move_the_thread() {
    // 10 ms on CPU 1, then 10 ms on CPU 2.
    let r = run("quad", "affinity.json");
    assert_eq!(stop(&r), "Completed");
    let busy = &r.metrics.cpu_busy;
    let total = us(r.sim_time_ns);
    assert!(near(busy[1] * total, 10_000.0, 100.0), "{busy:?}");
    assert!(near(busy[2] * total, 10_000.0, 100.0), "{busy:?}");
    assert!(busy[3] < 0.01, "{busy:?}");
    let t = r.tasks.iter().find(|t| t.name == "t").unwrap();
    assert!(t.migrations >= 1);
}

#[test]
fn sync_ping_pongs_two_threads() {
    // sync = signal the other side, then wait: the two threads alternate, one
    // 100 µs run each, until the scenario's 20 ms.
    let sc = scenario("quad", "sync.json", "duration_ms = 20").unwrap();
    assert_eq!(sc.duration_ns, Some(20_000_000));
    let r = run_sc(&sc);
    assert_eq!(stop(&r), "Duration");
    let ping = metric(&r, "ping/phase0/loops").0;
    let pong = metric(&r, "pong/phase0/loops").0;
    assert!(ping.abs_diff(pong) <= 1, "{ping} {pong}");
    assert!((70..=100).contains(&ping), "{ping}");
    // Without the [run] override the file's own duration (1 s) applies.
    let sc = scenario("quad", "sync.json", "").unwrap();
    assert_eq!(sc.duration_ns, Some(1_000_000_000));
}

#[test]
fn mem_iorun_yield_and_ns_per_loop_calibration() {
    // mem/iorun 1 MB = 100 µs each (0.1 ns/B); run 100 and run 1500 with a 1000 ns
    // loop = 100 + 1500 µs; yield and a lost broadcast cost ~nothing.
    let r = run("quad", "misc.json");
    assert_eq!(stop(&r), "Completed");
    let (_, p, _) = metric(&r, "t/phase0/period");
    assert!((1800.0..1815.0).contains(&p), "{p}");
}

#[test]
fn example_scenario_runs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rtapp-example.toml");
    let sc = Scenario::load(&path, &Overrides::default()).unwrap();
    assert_eq!(sc.duration_ns, Some(5_000_000_000));
    let doc_sc = {
        let mut s = sc.clone();
        s.duration_ns = Some(300_000_000);
        s
    };
    let r = run_sc(&doc_sc);
    assert_eq!(stop(&r), "Duration");
    // prod's 4 ms timer: ~75 periods in 300 ms.
    let prod = r.workload.tool["prod.loops"];
    assert!((70.0..=75.0).contains(&prod), "{prod}");
    // Each consumer is woken by some of the broadcasts.
    assert!(r.workload.tool["cons-0.loops"] >= 10.0);
    assert!(r.workload.tool["cons-1.loops"] >= 10.0);
    // shift starts at t_zero + 200 ms. rt-app's main task (on CPU 0, a LITTLE)
    // creates it, and the fork path places it on LITTLE CPU 5 (before the start
    // protocol was modelled, the launcher's fork put it on a big CPU): `run 9000`
    // (calibrated on CPU 4, a LITTLE) takes 9 ms there, + 1 ms sleep: ~9 busy
    // iterations of ~10.1 ms by 300 ms.
    let shift = r.workload.tool["shift.loops"];
    assert!((8.0..=10.0).contains(&shift), "{shift}");
}

#[test]
fn malformed_files_are_errors_with_json_paths_and_lines() {
    let m = presets::preset("juno-r0").unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "{\"tasks\": {\"prod\": {\"phases\": {\"p\": {\n\"run0\": 5,\n\"timer0\": {\"ref\": \"a\", \"period\": \"x\"}}}}}}",
            "x.json:3: tasks.prod.phases.p.timer0.period: expected a positive integer (µs), found \"x\"",
        ),
        (
            "{\"tasks\": {\"t\": {\"run0\": 5,\n \"bogus\": 1}}}",
            "x.json:2: tasks.t.bogus: unknown key (not an rt-app event or attribute)",
        ),
        (
            "{\"tasks\": {\"t\": {\"run0\": -5}}}",
            "x.json:1: tasks.t.run0: expected a non-negative integer (µs) up to 10^12, found -5",
        ),
        (
            "{\"tasks\": {\"t\": {\"run0\": 5},\n\"t\": {\"run0\": 6}}}",
            "x.json:2: tasks.t: duplicate key (number repeated events: run0, run1, ...)",
        ),
        (
            "{\"global\": {\"calibration\": \"CPU9\"}, \"tasks\": {\"t\": {\"run0\": 5}}}",
            "x.json:1: global.calibration: \"CPU9\" is not a CPU of this 6-CPU machine",
        ),
        (
            "{\"tasks\": {\"t\": {\"policy\": \"SCHED_FIFO\", \"run0\": 5}}}",
            "x.json:1: tasks.t.policy: SCHED_FIFO is not modelled (the simulator has the fair class only)",
        ),
        (
            "{\"tasks\": {\"t\": {\"cpus\": [0, 7], \"run0\": 5}}}",
            "x.json:1: tasks.t.cpus[1]: expected a CPU number 0..5 of this machine, found 7",
        ),
        ("{\"global\": {}}", "x.json:1: missing the `tasks` object"),
        (
            "{\"tasks\": {\"t\": {\"run0\": 5,\n\"run1\" 6}}}",
            "x.json:2: JSON: Expected colon after the string or word in object property",
        ),
        (
            "{\"tasks\": {\"t\": {\"fork0\": \"nope\"}}}",
            "x.json:1: tasks.t.fork0: fork of unknown task \"nope\"",
        ),
        (
            "{\"tasks\": {\"t\": {\"timer0\": {\"period\": 10, \"mode\": \"sideways\"}}}}",
            "x.json:1: tasks.t.timer0.mode: expected \"relative\" or \"absolute\", found \"sideways\"",
        ),
        (
            "{\"tasks\": {\"t\": {\"timer0\": {\"period\": 5000000000}}}}",
            "x.json:1: tasks.t.timer0.period: expected a positive integer (µs), found 5000000000",
        ),
        (
            "{\"tasks\": {\"t\": {\"timer0\": {\"ref\": \"a\"}}}}",
            "x.json:1: tasks.t.timer0: a timer needs `period` (µs)",
        ),
        (
            "{\"tasks\": {\"t\": {\"wait0\": \"c\"}}}",
            "x.json:1: tasks.t.wait0: expected an object, found \"c\"",
        ),
        (
            "{\"tasks\": {\"t\": {\"lock0\": 3}}}",
            "x.json:1: tasks.t.lock0: expected a resource name (string), found 3",
        ),
        (
            "{\"tasks\": {\"t\": {\"loop\": 3}}}",
            "x.json:1: tasks.t: no events (a phase needs at least one)",
        ),
        (
            "{\"global\": {\"foo\": 1}, \"tasks\": {\"t\": {\"run0\": 5}}}",
            "x.json:1: global.foo: unknown key",
        ),
        (
            "{\"tasks\": {\"t\": {\"memrun0\": {}}}}",
            "x.json:1: tasks.t.memrun0: the `memrun` event is not supported yet",
        ),
        (
            "{\"tasks\": {\"t\": {\"util_max\": 2000, \"run0\": 5}}}",
            "x.json:1: tasks.t.util_max: expected an integer 0..=1024 (-1 = unset), found 2000",
        ),
        (
            "{\"tasks\": {\"t\": {\"run0\": 5}}, \"extra\": 1}",
            "x.json:1: extra: unknown key",
        ),
        (
            "{\"tasks\": {\"t\": {\"phases\": {\"a\": {\"run0\": 5, \"priority\": 3}}}}}",
            "x.json:1: tasks.t.phases.a.priority: per-phase priority changes are not modelled",
        ),
        (
            "{\"tasks\": {\"t\": {\"taskgroup\": \"/a\", \"run0\": 5}}}",
            "x.json:1: tasks.t.taskgroup: task groups (cgroups) are not modelled",
        ),
        (
            "{\"tasks\": {\"t\": {\"barrier0\": \"b\"}, \"u\": {\"instance\": 0, \"fork0\": \"t\"}}}",
            "x.json:1: tasks.u.fork0: task \"t\" uses a barrier and cannot be forked",
        ),
        (
            "{\"tasks\": {\"t\": {\"phases\": {\"a\": 5}}}}",
            "x.json:1: tasks.t.phases.a: expected an object, found 5",
        ),
        ("[1, 2]", "x.json:1: expected an object, found an array"),
        (
            "{\"tasks\": {\"t\": {\"instance\": 0, \"run0\": 5}}}",
            "x.json:1: tasks: no thread starts (every `instance` is 0)",
        ),
        (
            "{\"tasks\": {\"t\": {\"sleep0\": 1000000000001}}}",
            "x.json:1: tasks.t.sleep0: expected a non-negative integer (µs) up to 10^12, found 1000000000001",
        ),
        (
            "{\"tasks\": {\"t\": {\"phases\": {\"a\": {\"run0\": 5, \"loop\": 0}}}}}",
            "x.json:1: tasks.t: loops forever over phases that all have `loop: 0` (nothing to do)",
        ),
    ];
    for (text, want) in cases {
        let e = rtapp::parse_file(text, Path::new("x.json"), &m).unwrap_err();
        assert_eq!(e.to_string(), *want, "{text}");
    }
    // Duplicate event keys are kept in file order (workgen's renaming).
    let f = rtapp::parse_file(
        "{\"tasks\": {\"t\": {\"run\": 5, \"sleep\": 1, \"run\": 7}}}",
        Path::new("x.json"),
        &m,
    )
    .unwrap();
    assert_eq!(
        f.tasks[0].phases[0].events,
        [
            rtapp::Event::Run(5),
            rtapp::Event::Sleep(1),
            rtapp::Event::Run(7)
        ]
    );
}

#[test]
fn scenario_level_errors() {
    let e = scenario("quad", "missing.json", "").unwrap_err();
    assert!(
        e.contains("t.toml:8:") && e.contains("cannot read rt-app file"),
        "{e}"
    );
    let doc = Doc::parse(
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"rtapp\"\n",
        &dir().join("t.toml"),
    )
    .unwrap();
    let e = Scenario::from_doc(doc, &Overrides::default()).unwrap_err();
    assert!(e.to_string().contains("needs `file`"), "{e}");
    // Errors inside the JSON name the JSON file and line.
    let tmp = std::env::temp_dir().join(format!("schedlab-rtapp-bad-{}.json", std::process::id()));
    std::fs::write(&tmp, "{\"tasks\": {\n\"t\": {\"run0\": \"x\"}}}").unwrap();
    let e = scenario("quad", tmp.to_str().unwrap(), "").unwrap_err();
    std::fs::remove_file(&tmp).ok();
    assert!(
        e.ends_with(
            ".json:2: tasks.t.run0: expected a non-negative integer (µs) up to 10^12, found \"x\""
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------
// Random well-formed files.
// ---------------------------------------------------------------------------------

fn event_strategy(nr_tasks: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..3000).prop_map(|v| format!("\"run\": {v}")),
        (0u32..2000).prop_map(|v| format!("\"runtime\": {v}")),
        (0u32..3000).prop_map(|v| format!("\"sleep\": {v}")),
        (1u32..5000, any::<bool>(), any::<bool>()).prop_map(|(p, u, a)| format!(
            "\"timer\": {{\"ref\": \"{}\", \"period\": {p}, \"mode\": \"{}\"}}",
            if u { "unique" } else { "shared" },
            if a { "absolute" } else { "relative" }
        )),
        (0u32..2, 0u32..2000)
            .prop_map(|(m, r)| format!("\"lock\": \"m{m}\", \"run\": {r}, \"unlock\": \"m{m}\"")),
        (0u32..2).prop_map(|c| format!(
            "\"lock\": \"m\", \"wait\": {{\"ref\": \"c{c}\", \"mutex\": \"m\"}}, \"unlock\": \"m\""
        )),
        (0u32..2).prop_map(|c| format!(
            "\"lock\": \"m\", \"sync\": {{\"ref\": \"c{c}\", \"mutex\": \"m\"}}, \"unlock\": \"m\""
        )),
        (0u32..2).prop_map(|c| format!("\"signal\": \"c{c}\"")),
        (0u32..2).prop_map(|c| format!("\"broad\": \"c{c}\"")),
        (0usize..nr_tasks).prop_map(|t| format!("\"suspend\": \"t{t}\"")),
        (0usize..nr_tasks).prop_map(|t| format!("\"resume\": \"t{t}\"")),
        Just("\"barrier\": \"b\"".to_string()),
        Just("\"yield\": \"\"".to_string()),
        Just("\"fork\": \"kid\"".to_string()),
        (0u32..100_000).prop_map(|b| format!("\"mem\": {b}")),
        (0u32..100_000).prop_map(|b| format!("\"iorun\": {b}")),
    ]
}

fn phase_strategy(nr_tasks: usize) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(event_strategy(nr_tasks), 1..5),
        prop_oneof![Just(-1i64), 1i64..4],
        prop::option::of(prop::sample::subsequence(vec![0u32, 1, 2, 3], 1..4)),
        prop::option::of(0u32..1025),
    )
        .prop_map(|(evs, lp, cpus, umax)| {
            // Number the events so keys are unique, keeping their order.
            let mut s = String::new();
            for (i, e) in evs.iter().enumerate() {
                let mut e = e.clone();
                for w in [
                    "runtime", "run", "sleep", "timer", "unlock", "lock", "wait", "sync", "signal",
                    "broad", "suspend", "resume", "barrier", "yield", "fork", "mem", "iorun",
                ] {
                    e = e.replace(&format!("\"{w}\":"), &format!("\"{w}{i}\":"));
                }
                s.push_str(&e);
                s.push_str(", ");
            }
            if let Some(c) = cpus {
                s.push_str(&format!("\"cpus\": {c:?}, "));
            }
            if let Some(u) = umax {
                s.push_str(&format!("\"util_max\": {u}, "));
            }
            s.push_str(&format!("\"loop\": {lp}"));
            format!("{{ {s} }}")
        })
}

fn file_strategy() -> impl Strategy<Value = String> {
    (1usize..4).prop_flat_map(|n| {
        (
            prop::collection::vec(
                (
                    1u32..3,
                    0u32..2000,
                    prop::collection::vec(phase_strategy(n), 1..3),
                    prop_oneof![Just(-1i64), 1i64..3],
                ),
                n,
            ),
            (phase_strategy(n), any::<bool>()),
        )
            .prop_map(|(tasks, (kid, kid_ok))| {
                let mut s = String::from("{ \"global\": { \"calibration\": \"CPU1\" }, \"tasks\": {");
                for (i, (inst, delay, phases, lp)) in tasks.iter().enumerate() {
                    let ph: Vec<String> = phases
                        .iter()
                        .enumerate()
                        .map(|(j, p)| format!("\"p{j}\": {p}"))
                        .collect();
                    s.push_str(&format!(
                        "\"t{i}\": {{ \"instance\": {inst}, \"delay\": {delay}, \"loop\": {lp}, \"phases\": {{ {} }} }}, ",
                        ph.join(", ")
                    ));
                }
                // The fork target: an instance-0 task without barriers or forks.
                let kid = if kid_ok {
                    kid.replace("\"barrier", "\"yield").replace("\"fork", "\"yield")
                } else {
                    "{ \"run0\": 100, \"loop\": 1 }".into()
                };
                s.push_str(&format!(
                    "\"kid\": {{ \"instance\": 0, \"loop\": 1, \"phases\": {{ \"k\": {kid} }} }} }} }}"
                ));
                s
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random well-formed files parse, and the run never panics: it completes, or is
    /// stopped by the duration (a thread may wait forever on a lost signal or an
    /// unbalanced barrier), with kernel invariants checked after every event.
    #[test]
    fn random_files_run_or_stop_at_duration(text in file_strategy(), n in 0u32..1_000_000) {
        let path = std::env::temp_dir().join(format!(
            "schedlab-rtapp-prop-{}-{n}.json",
            std::process::id()
        ));
        std::fs::write(&path, &text).unwrap();
        let sc = scenario("juno-r0", path.to_str().unwrap(), "duration_ms = 30");
        std::fs::remove_file(&path).ok();
        let sc = sc.map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let opts = RunOpts { check: true, ..Default::default() };
        match experiment::run(&sc, sc.seed, 0, &opts) {
            Ok((r, _)) => {
                let s = stop(&r);
                prop_assert!(s == "Completed" || s == "Duration", "{}", s);
                prop_assert!(r.sim_time_ns <= 30_000_000);
                prop_assert!(r.workload.tool_output.is_some());
            }
            // A forked thread may fork again until the duration: fine. Anything
            // else must be a workload error (e.g. waiting on a condvar without
            // holding its mutex cannot happen here), never an invariant violation.
            Err(e) => prop_assert!(false, "{e}\n{text}"),
        }
    }
}

proptest! {
    /// Any text (JSON-ish noise, or a valid file cut or spliced at random) is parsed
    /// to a file or an error, never a panic.
    #[test]
    fn arbitrary_text_never_panics(
        noise in "[{}\\[\\]\":,0-9a-z_ \\-./*\n]{0,120}",
        cut in 0usize..2000,
        splice in "[{}\\[\\]\":,0-9a-z \\-]{0,8}",
    ) {
        let m = presets::preset("juno-r0").unwrap();
        let _ = rtapp::parse_file(&noise, Path::new("n.json"), &m);
        for f in ["timer-absolute.json", "condvar.json", "misc.json", "fork.json"] {
            let text = std::fs::read_to_string(dir().join(f)).unwrap();
            let mut at = cut.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let _ = rtapp::parse_file(&text[..at], Path::new("n.json"), &m);
            let spliced = format!("{}{splice}{}", &text[..at], &text[at..]);
            if let Ok(f) = rtapp::parse_file(&spliced, Path::new("n.json"), &m) {
                let (spec, _) = rtapp::build(&f, &m);
                prop_assert!(spec.validate().is_ok());
            }
        }
    }
}
