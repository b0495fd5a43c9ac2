//! uperf-pingpong, forkbench, oracle-tpcc and background spinners end to end; every
//! registered generator on every machine preset; random option sets never deadlock
//! and conserve messages.

use proptest::prelude::*;
use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, RunResult, Scenario};
use schedlab::machine::presets;
use schedlab::sim::{SimError, StopReason};
use schedlab::workload::generators::GENERATORS;
use std::path::Path;

fn scenario(machine: &str, body: &str) -> Result<Scenario, String> {
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n[kernel]\npreset = \"v5.6\"\n[run]\nseed = 3\n[workload]\n{body}"
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).map_err(|e| e.to_string())?;
    Scenario::from_doc(doc, &Overrides::default()).map_err(|e| e.to_string())
}

fn run_with(sc: &Scenario, check: bool) -> RunResult {
    let opts = RunOpts {
        check,
        ..Default::default()
    };
    experiment::run(sc, sc.seed, 0, &opts)
        .unwrap_or_else(|e| panic!("{}: {e}", sc.workload_kind))
        .0
}

fn run(sc: &Scenario) -> RunResult {
    run_with(sc, true)
}

fn count(r: &RunResult, metric: &str) -> u64 {
    r.workload.metrics[metric].summary.count
}

/// Master reads/writes and slave writes/reads alternate on each connection with one
/// message in flight, so over `t` connections each counter trails the previous one
/// in `slave_writes ≥ master_reads ≥ master_writes ≥ slave_reads ≥ slave_writes − t`
/// by at most `t`.
fn uperf_conserved(r: &RunResult, t: u64) {
    let sw = count(r, "slave_writes");
    let mr = count(r, "master_reads");
    let mw = count(r, "master_writes");
    let sr = count(r, "slave_reads");
    assert!(
        sw >= mr && sw - mr <= t,
        "slave writes {sw} master reads {mr}"
    );
    assert!(mr >= mw && mr - mw <= t, "master reads {mr} writes {mw}");
    assert!(
        mw >= sr && mw - sr <= t,
        "master writes {mw} slave reads {sr}"
    );
    assert!(sw - sr <= t, "slave writes {sw} reads {sr}");
}

#[test]
fn uperf_pingpong_runs_for_its_duration() {
    let sc = scenario(
        "juno-r0",
        "kind = \"uperf-pingpong\"\nnthreads = 2\nduration = 0.2\n",
    )
    .unwrap();
    assert_eq!(sc.duration_ns, Some(200_000_000));
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Duration);
    assert_eq!(r.sim_time_ns, 200_000_000);
    // 2 masters + 2 slaves.
    assert_eq!(r.tasks.len(), 4);
    uperf_conserved(&r, 2);
    // Throughput as uperf computes it: master flowops × size × 8 / elapsed.
    let ops = count(&r, "master_reads") + count(&r, "master_writes");
    // (The first rounds after the long idle the run starts from pay Juno's
    // cluster-sleep exit, 1.5 ms, until menu has learnt the short idle periods.)
    assert!(ops > 5_000, "only {ops} ops in 200 ms");
    let t = &r.workload.tool;
    assert_eq!(t["bytes"], (ops * 8192) as f64);
    let gbps = (ops * 8192 * 8) as f64 / 200e-3 / 1e9;
    assert!((t["throughput_gbps"] - gbps).abs() < 1e-9);
    assert!((t["ops_per_sec"] - ops as f64 / 200e-3).abs() < 1e-6);
    let out = r.workload.tool_output.as_deref().unwrap();
    assert!(out.starts_with("Starting 2 threads running profile:pingpong"));
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("Total ") && last.ends_with("op/s"),
        "{last}"
    );
    assert!(
        last.contains("/0.20(s) = ") && last.contains("b/s"),
        "{last}"
    );
}

#[test]
fn uperf_single_pair_is_exact_pingpong() {
    let sc = scenario(
        "xeon-e5-40",
        "kind = \"uperf-pingpong\"\nsize = 16384\nduration = 0.002\n",
    )
    .unwrap();
    let r = run(&sc);
    uperf_conserved(&r, 1);
    assert_eq!(r.workload.tool["bytes"] as u64 % 16384, 0);
}

#[test]
fn forkbench_completes_and_reports_per_fork_time() {
    let sc = scenario("juno-r0", "kind = \"forkbench\"\nforks = 5\n").unwrap();
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Completed);
    // The parent and its five children, every one exited.
    assert_eq!(r.tasks.len(), 6);
    assert!(r.tasks.iter().all(|t| t.exit_ns.is_some()));
    let time = &r.workload.metrics["time"].summary;
    assert_eq!(time.count, 1);
    // forkbench: microseconds elapsed (truncated), divided by the fork count.
    let us = time.mean as u64 / 1000;
    assert_eq!(r.workload.tool["usecs_per_fork"], (us / 5) as f64);
    assert_eq!(
        r.workload.tool_output.as_deref().unwrap().lines().next(),
        Some(format!("Time: {} microseconds.", us / 5).as_str())
    );
    // Each fork costs at least C_FORK + C_EXIT of work.
    let m = presets::preset("juno-r0").unwrap();
    assert!(time.mean as u64 >= 5 * (m.cost.fork + m.cost.exit));
}

#[test]
fn forkbench_heap_makes_forks_slower() {
    let t = |heap: &str| {
        let sc = scenario(
            "juno-r0",
            &format!("kind = \"forkbench\"\nforks = 4\nheap = {heap}\n"),
        )
        .unwrap();
        run(&sc).workload.metrics["time"].summary.mean
    };
    let (small, big) = (t("0"), t("16777216"));
    // 16 MiB = 4096 pages: faulting them in costs ≥ 4096 × 500 ns ≈ 2 ms alone.
    assert!(big > small + 2e6, "{small} {big}");
}

/// 21 of HammerDB's 23 calls wait for a log write, each released once (a post or,
/// polling, a flag): a user's unfinished cycle is at most 2 syncs off the ratio,
/// and a session still waiting at the end was queued, not released.
fn assert_syncs_released(r: &RunResult, users: u64) {
    let txns = count(r, "txns");
    let released = count(r, "commit_posts");
    assert!(
        (released * 23).abs_diff(txns * 21) <= 23 * 3 * users,
        "{released} released, {txns} txns"
    );
}

#[test]
fn oracle_tpcc_group_commit_posts_each_session() {
    let sc = scenario(
        "xeon-e5-40",
        "kind = \"oracle-tpcc\"\nusers = 30\nwarehouses = 4\nduration = 0.03\n",
    )
    .unwrap();
    let r = run_with(&sc, true);
    assert_eq!(r.workload.stop_reason, StopReason::Duration);
    // 30 shadows + LGWR; no client tasks (the clients are remote).
    assert_eq!(r.tasks.len(), 31);
    let txns = count(&r, "txns");
    let logw = count(&r, "log_writes");
    let posts = count(&r, "commit_posts");
    assert!(txns > 100 && logw > 0, "{txns} {logw}");
    // One response time per transaction.
    assert_eq!(count(&r, "response_time"), txns);
    let t = &r.workload.tool;
    assert!((t["tpm"] - count(&r, "commits") as f64 * 60.0 / 0.03).abs() < 1e-6);
    assert!(r
        .workload
        .tool_output
        .as_deref()
        .unwrap()
        .starts_with("Oracle TPC-C model"));
    assert_syncs_released(&r, 30);
    // Group commit: 30 users, 50-75 us writes, ~1 ms per transaction: LGWR
    // often releases more than one session per write.
    assert!(2 * posts > 3 * logw, "{posts} posts over {logw} writes");
    // Oracle's TPM counts commits: 31 per 23 transactions (Delivery commits per
    // district).
    let commits = count(&r, "commits");
    assert!(
        // A user's unfinished cycle puts it at most 10 commits off the ratio.
        (commits * 23).abs_diff(txns * 31) <= 23 * 10 * 30,
        "{commits} commits, {txns} txns"
    );
}

#[test]
fn oracle_tpcc_log_writer_workers_share_the_queue() {
    let body = |lw: u32| {
        format!("kind = \"oracle-tpcc\"\nusers = 30\nlog_writers = {lw}\nduration = 0.03\n")
    };
    let one = run_with(&scenario("xeon-e5-40", &body(1)).unwrap(), true);
    let three = run_with(&scenario("xeon-e5-40", &body(3)).unwrap(), true);
    // 30 shadows + LGWR + two LGnn.
    assert_eq!(three.tasks.len(), 33);
    let busy = |r: &RunResult, name: &str| {
        r.tasks
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.runtime_ns)
            .unwrap()
    };
    // The workers write and post too.
    assert!(busy(&three, "ora_lg00") > 0 && busy(&three, "ora_lg01") > 0);
    // Writes in parallel: more writes, fewer sessions per write, every post counted.
    let (w1, w3) = (count(&one, "log_writes"), count(&three, "log_writes"));
    assert!(w3 > w1, "{w1} writes with one writer, {w3} with three");
    assert_syncs_released(&three, 30);
}

#[test]
fn oracle_tpcc_polling_commits_complete_without_posts() {
    let sc = scenario(
        "xeon-e5-40",
        "kind = \"oracle-tpcc\"\nusers = 30\ncommit_wait = \"poll\"\npoll_us = 40\nduration = 0.03\n",
    )
    .unwrap();
    let r = run_with(&sc, true);
    assert_eq!(r.workload.stop_reason, StopReason::Duration);
    let txns = count(&r, "txns");
    assert!(txns > 100, "{txns}");
    // Every syncing call's flag was set by a write, and every transaction answered.
    assert_syncs_released(&r, 30);
    assert_eq!(count(&r, "response_time"), txns);
    // A poller's wait is whole polls: the mean response is above the CPU per call.
    assert!(r.workload.tool["response_time_us"] > 600.0);
}

#[test]
fn oracle_tpcc_single_user_one_log_write_per_sync() {
    // One user: every syncing call posts LGWR once and waits for that write, so log
    // writes and posts match: no post can come between LGWR's wakeup and its taking
    // of the queue.
    let sc = scenario(
        "juno-r0",
        "kind = \"oracle-tpcc\"\nusers = 1\nduration = 0.2\n",
    )
    .unwrap();
    let r = run_with(&sc, true);
    let txns = count(&r, "txns");
    let logw = count(&r, "log_writes");
    let posts = count(&r, "commit_posts");
    assert!(txns >= 23, "{txns}");
    // (The run may end between a write and its post.)
    assert!(logw == posts || logw == posts + 1, "{txns} {logw} {posts}");
    // 21 syncs per 23-transaction cycle, the cycle starting with New-Order.
    assert!((posts * 23).abs_diff(txns * 21) <= 23 * 3, "{posts} {txns}");
}

#[test]
fn tpcc_proxy_is_gone_with_a_pointer() {
    let e = scenario("xeon-88", "kind = \"tpcc-proxy\"\n").unwrap_err();
    assert!(e.contains("oracle-tpcc"), "{e}");
    assert!(e.contains("t.toml:"), "{e}");
}

#[test]
fn background_spinners_do_not_hold_up_completion() {
    // hackbench with one spinner pinned to each core's first CPU.
    let sc = scenario(
        "xeon-e5-40",
        "kind = \"hackbench\"\ngroups = 1\nfds = 2\nloops = 3\n\
         [workload.background]\nplacement = \"core\"\n",
    )
    .unwrap();
    assert_eq!(sc.workload.daemons.len(), 20);
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Completed);
    // Parent + 4 children + 20 spinners.
    assert_eq!(r.tasks.len(), 25);
    let m = presets::preset("xeon-e5-40").unwrap();
    let spin: Vec<_> = r
        .tasks
        .iter()
        .filter(|t| t.name.starts_with("spinner-"))
        .collect();
    assert_eq!(spin.len(), 20);
    for t in &spin {
        assert!(t.exit_ns.is_none());
        assert_eq!(t.migrations, 0, "{} is pinned", t.name);
    }
    // Pinned to the first CPU of distinct cores.
    let cpus: Vec<usize> = sc
        .workload
        .tasks
        .iter()
        .filter_map(|t| t.cpus.as_ref().map(|c| c.first().unwrap()))
        .collect();
    assert_eq!(cpus.len(), 20);
    for (i, &c) in cpus.iter().enumerate() {
        assert_eq!(m.smt_mask(c).first(), Some(c));
        assert!(cpus[..i].iter().all(|&d| !m.smt_mask(d).test(c)));
    }
    assert!(r.workload.tool_output.unwrap().starts_with("Time: "));
}

#[test]
fn background_duty_cycle_spinners_sleep() {
    // One spinner pinned to CPU 1 computes 3 ms and sleeps 1 ms in turn, beside a
    // 40 ms task on CPU 0: over the run it is busy 3/4 of the time (its compute
    // runs at CPU 1's capacity, a LITTLE's on Juno: the busy share, not the work,
    // is what is checked) and sleeps once per round.
    let sc = scenario(
        "juno-r0",
        "kind = \"tasks\"\n[[workload.task]]\nname = \"w\"\ncpus = \"0\"\nprogram = [{ op = \"spin\", time = \"40ms\" }]\n\
         [workload.background]\nplacement = \"cpus\"\ncpus = [1]\nrun_us = 3000\nsleep_us = 1000\n",
    )
    .unwrap();
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Completed);
    let sp = r.tasks.iter().find(|t| t.name == "spinner-0").unwrap();
    assert!(sp.wakeups >= 5, "{} wakeups", sp.wakeups);
    let busy = sp.runtime_ns as f64 / r.sim_time_ns as f64;
    assert!(busy > 0.5 && busy < 0.9, "busy {busy}");
    // Both or neither.
    for (body, key) in [("run_us = 10\n", "run_us"), ("sleep_us = 10\n", "sleep_us")] {
        let e = scenario(
            "juno-r0",
            &format!("kind = \"forkbench\"\n[workload.background]\nspinners = 1\n{body}"),
        )
        .unwrap_err();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn background_placements() {
    let sc = scenario(
        "juno-r0",
        "kind = \"forkbench\"\nforks = 3\n[workload.background]\nspinners = 3\nplacement = \"cpus\"\ncpus = [1, 2]\n",
    )
    .unwrap();
    let pins: Vec<usize> = sc
        .workload
        .daemons
        .iter()
        .map(|&i| sc.workload.tasks[i].cpus.as_ref().unwrap().first().unwrap())
        .collect();
    assert_eq!(pins, vec![1, 2, 1]);
    assert_eq!(run(&sc).workload.stop_reason, StopReason::Completed);
    // A cpulist string works too; one spinner per listed CPU by default.
    let sc = scenario(
        "juno-r0",
        "kind = \"forkbench\"\nforks = 3\n[workload.background]\nplacement = \"cpus\"\ncpus = \"3-5\"\n",
    )
    .unwrap();
    assert_eq!(sc.workload.daemons.len(), 3);
    // Free spinners beside a generic tasks workload.
    let sc = scenario(
        "juno-r0",
        "kind = \"tasks\"\n[[workload.task]]\nname = \"w\"\ncount = 2\nprogram = [{ op = \"compute\", work = \"2ms\" }]\n\
         [workload.background]\nspinners = 4\n",
    )
    .unwrap();
    assert!(sc
        .workload
        .daemons
        .iter()
        .all(|&i| sc.workload.tasks[i].cpus.is_none()));
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Completed);
    assert_eq!(r.tasks.len(), 6);
}

#[test]
fn deadlock_beside_spinners_is_reported() {
    // A reader of a pipe nobody writes, beside spinners that keep the CPUs busy: the
    // event queue never drains, yet the run stops with the deadlock error (checked
    // every 10 ms), not at the 1 s safety limit.
    let text = "[machine]\npreset = \"juno-r0\"\n[run]\nduration_ms = 1000\n[workload]\n\
        kind = \"tasks\"\n[[workload.channel]]\nname = \"p\"\nkind = \"pipe\"\n\
        [[workload.task]]\nname = \"stuck\"\nprogram = [{ op = \"compute\", work = \"1ms\" }, \
        { op = \"read\", chan = \"p\", bytes = 1 }]\n\
        [workload.background]\nspinners = 2\n";
    let doc = Doc::parse(text, Path::new("t.toml")).unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    let e = experiment::run(&sc, 1, 0, &RunOpts::default()).unwrap_err();
    match e {
        SimError::Deadlock {
            t_ns,
            blocked,
            detail,
        } => {
            assert_eq!(blocked, 1);
            assert!(detail.starts_with("stuck"), "{detail}");
            assert!(t_ns <= 30_000_000, "{t_ns}");
        }
        e => panic!("{e}"),
    }
    // Timed sleeps beside spinners are not a deadlock.
    let text = text.replace(
        "{ op = \"read\", chan = \"p\", bytes = 1 }",
        "{ op = \"sleep\", time = \"40ms\" }",
    );
    let doc = Doc::parse(&text, Path::new("t.toml")).unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    let r = run(&sc);
    assert_eq!(r.workload.stop_reason, StopReason::Completed);
}

/// Run `text` and return the deadlock error's (t_ns, blocked, detail).
fn deadlock_of(text: &str) -> (u64, usize, String) {
    let doc = Doc::parse(text, Path::new("t.toml")).unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    match experiment::run(&sc, 1, 0, &RunOpts::default()) {
        Err(SimError::Deadlock {
            t_ns,
            blocked,
            detail,
        }) => (t_ns, blocked, detail),
        Err(e) => panic!("{e}"),
        Ok((r, _)) => panic!("no deadlock: {:?}", r.workload.stop_reason),
    }
}

#[test]
fn futex_await_beside_spinners_is_a_deadlock() {
    // schbench's fwait on a word nobody posts, beside background spinners.
    let text = "[machine]\npreset = \"juno-r0\"\n[run]\nduration_ms = 1000\n[workload]\n\
        kind = \"tasks\"\n[[workload.futex]]\nname = \"f\"\n\
        [[workload.task]]\nname = \"waiter\"\nprogram = [{ op = \"compute\", work = \"1ms\" }, \
        { op = \"futex_await\", futex = \"f\" }]\n\
        [workload.background]\nspinners = 2\n";
    let (t, blocked, detail) = deadlock_of(text);
    assert_eq!(blocked, 1);
    assert!(detail.starts_with("waiter"), "{detail}");
    assert!(t <= 30_000_000, "{t}");
}

#[test]
fn spinning_on_a_lock_held_by_a_blocked_task_is_a_deadlock() {
    // "holder" takes the spin lock and blocks for good on an empty pipe; two tasks
    // spin on that lock. The CPUs never go idle (the spinners poll), there is no
    // duration and no daemon, yet the run ends with the deadlock error.
    let text = "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n\
        [[workload.channel]]\nname = \"p\"\n[[workload.spinlock]]\nname = \"l\"\n\
        [[workload.task]]\nname = \"holder\"\nprogram = [{ op = \"spin_lock\", spinlock = \"l\" }, \
        { op = \"read\", chan = \"p\", bytes = 1 }]\n\
        [[workload.task]]\nname = \"spinner\"\ncount = 2\nprogram = [{ op = \"compute\", work = \"1ms\" }, \
        { op = \"spin_lock\", spinlock = \"l\" }, { op = \"spin_unlock\", spinlock = \"l\" }]\n";
    let (t, blocked, detail) = deadlock_of(text);
    assert_eq!(blocked, 3, "{detail}");
    assert!(detail.starts_with("holder"), "{detail}");
    assert!(
        detail.contains("spinning for good") && detail.contains("spinner"),
        "{detail}"
    );
    assert!(t <= 30_000_000, "{t}");
    // A holder that only computes for a while releases the lock: no deadlock.
    let ok = text.replace(
        "{ op = \"read\", chan = \"p\", bytes = 1 }]",
        "{ op = \"compute\", work = \"30ms\" }, { op = \"spin_unlock\", spinlock = \"l\" }]",
    );
    let doc = Doc::parse(&ok, Path::new("t.toml")).unwrap();
    let sc = Scenario::from_doc(doc, &Overrides::default()).unwrap();
    assert_eq!(run(&sc).workload.stop_reason, StopReason::Completed);
}

#[test]
fn bad_options_name_the_key() {
    let cases = [
        ("kind = \"uperf-pingpong\"\nnthreads = 0\n", "nthreads"),
        ("kind = \"uperf-pingpong\"\nduration = -1\n", "duration"),
        ("kind = \"uperf-pingpong\"\nsize = \"8k\"\n", "size"),
        (
            "kind = \"uperf-pingpong\"\nprotocol = \"udp\"\n",
            "protocol",
        ),
        ("kind = \"forkbench\"\nforks = 0\n", "forks"),
        ("kind = \"forkbench\"\nheap = -5\n", "heap"),
        (
            "kind = \"oracle-tpcc\"\nlog_min_us = 50\nlog_max_us = 10\n",
            "log_max_us",
        ),
        ("kind = \"oracle-tpcc\"\nusers = 0\n", "users"),
        ("kind = \"oracle-tpcc\"\nwarehouses = 0\n", "warehouses"),
        (
            "kind = \"oracle-tpcc\"\nlog_max_us = 0\nlog_min_us = 0\n",
            "log_max_us",
        ),
        ("kind = \"oracle-tpcc\"\ncpu_us = 1.5\n", "cpu_us"),
        (
            "kind = \"oracle-tpcc\"\ncommit_wait = \"spin\"\n",
            "commit_wait",
        ),
        ("kind = \"oracle-tpcc\"\npoll_us = 10\n", "poll_us"),
        (
            "kind = \"oracle-tpcc\"\ncommit_wait = \"poll\"\npoll_us = 0\n",
            "poll_us",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nplacement = \"socket\"\n",
            "placement",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nplacement = \"free\"\n",
            "spinners",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nplacement = \"core\"\nspinners = 7\n",
            "spinners",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nplacement = \"cpus\"\ncpus = [6]\n",
            "cpus",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nplacement = \"cpus\"\n",
            "cpus",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nspinners = 1\ncpus = [1]\n",
            "cpus",
        ),
        (
            "kind = \"forkbench\"\n[workload.background]\nspinners = 1\nhogs = 2\n",
            "hogs",
        ),
    ];
    for (body, key) in cases {
        let e = scenario("juno-r0", body).expect_err(body);
        assert!(e.contains(key), "{body}: {e}");
        // Located at a line of the file.
        assert!(e.contains("t.toml:"), "{body}: {e}");
    }
}

/// Small options per generator kind: keep every run tiny. A kind registered in
/// `GENERATORS` without a row here fails `every_generator_on_every_preset`; add one.
const SMALL: &[(&str, &str)] = &[
    ("hackbench", "groups = 1\nfds = 2\nloops = 2\n"),
    ("perf-messaging", "groups = 1\nloops = 1\n"),
    ("perf-pipe", "loops = 20\n"),
    ("uperf-pingpong", "nthreads = 2\nduration = 0.0005\n"),
    ("forkbench", "forks = 3\nheap = 65536\n"),
    ("oracle-tpcc", "users = 2\nduration = 0.002\n"),
    // Relative to the crate directory (the scenario text has no directory).
    ("rtapp", "file = \"tests/rtapp/timer.json\"\n"),
    ("replay", "file = \"../../scenarios/replay-example.txt\"\n"),
    (
        "schbench",
        "message_threads = 1\nthreads = 2\ncputime = 300\nsleeptime = 300\nruntime = 1\n",
    ),
    (
        "schbench-new",
        "threads = 2\noperations = 1\ncache_footprint = 24\nruntime = 1\n",
    ),
    ("adrestia", "threads = 2\nloops = 3\n"),
    (
        "sysbench-threads",
        "threads = 2\nthread_yields = 5\ntime = 0.002\n",
    ),
    (
        "sysbench-cpu",
        "threads = 2\nevents = 4\ncpu_max_prime = 500\n",
    ),
];

#[test]
fn every_generator_on_every_preset() {
    for (kind, _) in GENERATORS {
        let Some((_, opts)) = SMALL.iter().find(|(k, _)| k == kind) else {
            panic!("generator `{kind}` has no small-options row in SMALL: add one");
        };
        for (machine, _) in presets::preset_names() {
            let mut sc = scenario(machine, &format!("kind = \"{kind}\"\n{opts}"))
                .unwrap_or_else(|e| panic!("{kind} on {machine}: {e}"));
            // Time-limited tools (schbench's whole seconds) run 5 ms here.
            sc.duration_ns = sc.duration_ns.map(|d| d.min(5_000_000));
            let check = sc.machine.nr_cpus() <= 64;
            let r = run_with(&sc, check);
            assert!(
                matches!(
                    r.workload.stop_reason,
                    StopReason::Completed | StopReason::Duration
                ),
                "{kind} on {machine}"
            );
            if r.workload.stop_reason == StopReason::Duration {
                assert_eq!(Some(r.sim_time_ns), sc.duration_ns, "{kind} on {machine}");
            }
            assert!(
                r.workload.tool_output.is_some(),
                "{kind} on {machine}: no tool output"
            );
        }
    }
}

/// One random option set of one of this file's generators, with or without spinners.
fn body(kind: u8, a: u32, b: u32, c: u32, spin: u32, core: bool) -> String {
    let mut s = match kind {
        0 => format!(
            "kind = \"uperf-pingpong\"\nnthreads = {}\nsize = {}\nduration = {}\n",
            1 + a % 3,
            1 + b % 65536,
            0.0005 + f64::from(c % 4) * 0.0005
        ),
        1 => format!(
            "kind = \"forkbench\"\nforks = {}\nheap = {}\n",
            1 + a % 8,
            u64::from(b % 4) * 65536 + u64::from(c % 3)
        ),
        _ => format!(
            "kind = \"oracle-tpcc\"\nusers = {}\nwarehouses = {}\ncpu_us = {}\nclient_us = {}\n\
             log_min_us = {}\nlog_max_us = {}\nduration = 0.004\n",
            1 + a % 6,
            1 + b % 4,
            c % 800,
            b % 300,
            c % 50,
            c % 50 + 1 + a % 200
        ),
    };
    if spin > 0 {
        s.push_str(&format!(
            "[workload.background]\nspinners = {spin}\nplacement = \"{}\"\n",
            if core { "core" } else { "free" }
        ));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20, ..ProptestConfig::default() })]

    /// Random small option sets end Completed (fixed work) or Duration (timed tools),
    /// never in a deadlock or another error; uperf conserves messages; forkbench forks
    /// exactly `forks` children; every posted TPC-C session was released by a log write.
    #[test]
    fn random_options_never_deadlock(
        kind in 0u8..3,
        a in any::<u32>(),
        b in any::<u32>(),
        c in any::<u32>(),
        spin in 0u32..3,
        core in any::<bool>(),
        xeon in any::<bool>(),
    ) {
        let machine = if xeon { "xeon-e5-40" } else { "juno-r0" };
        let text = body(kind, a, b, c, spin, core);
        let sc = scenario(machine, &text).unwrap();
        let r = experiment::run(&sc, sc.seed, 0, &RunOpts { check: true, ..Default::default() })
            .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?
            .0;
        let spinners = spin as usize;
        match kind {
            0 => {
                prop_assert_eq!(r.workload.stop_reason, StopReason::Duration);
                uperf_conserved(&r, u64::from(1 + a % 3));
                let ops = count(&r, "master_reads") + count(&r, "master_writes");
                prop_assert_eq!(r.workload.tool["bytes"], (ops * u64::from(1 + b % 65536)) as f64);
            }
            1 => {
                prop_assert_eq!(r.workload.stop_reason, StopReason::Completed);
                prop_assert_eq!(r.tasks.len(), 1 + (1 + a % 8) as usize + spinners);
            }
            _ => {
                prop_assert_eq!(r.workload.stop_reason, StopReason::Duration);
                // Every session posted was released by a write before it.
                prop_assert!(count(&r, "commit_posts") == 0 || count(&r, "log_writes") > 0);
                // Every transaction counted got exactly one response.
                prop_assert_eq!(count(&r, "response_time"), count(&r, "txns"));
            }
        }
        prop_assert!(r.workload.tool_output.is_some());
    }
}

#[test]
fn shipped_scenarios_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for (file, stop) in [
        ("uperf-pingpong.toml", StopReason::Duration),
        ("forkbench.toml", StopReason::Completed),
        ("oracle-tpcc.toml", StopReason::Duration),
        ("background.toml", StopReason::Completed),
    ] {
        let sc = Scenario::load(&dir.join(file), &Overrides::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let r = run_with(&sc, false);
        assert_eq!(r.workload.stop_reason, stop, "{file}");
        assert!(r.workload.tool_output.is_some(), "{file}");
    }
    // Seed 000's set-up: 44 spinners, one on the first CPU of each POWER9 core, beside
    // perf-messaging's 40 processes and its parent.
    let sc = Scenario::load(&dir.join("background.toml"), &Overrides::default()).unwrap();
    assert_eq!(sc.workload.daemons.len(), 44);
    assert_eq!(sc.workload.tasks.len(), 45);
    let mut cores: Vec<usize> = sc
        .workload
        .daemons
        .iter()
        .map(|&i| sc.workload.tasks[i].cpus.as_ref().unwrap().first().unwrap())
        .collect();
    cores.dedup();
    assert_eq!(cores, (0..44).map(|c| 4 * c).collect::<Vec<_>>());
}
