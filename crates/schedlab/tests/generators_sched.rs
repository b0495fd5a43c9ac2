//! schbench, schbench-new, adrestia, sysbench-threads and sysbench-cpu end to end,
//! and the behaviour-program vocabulary they use (shared words, lock-free lists,
//! futex post/await, spin locks, While/Each loops).

mod common;

use common::task_spec;
use proptest::prelude::*;
use schedlab::config::{Doc, TableReader};
use schedlab::engine::SimTime;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::presets::{self, test_topology};
use schedlab::machine::{CpuMask, Machine};
use schedlab::sim::{Sim, StopReason};
use schedlab::workload::dist::Dist;
use schedlab::workload::generators::{self, ToolInput, ToolResult};
use schedlab::workload::program::{
    IdxExpr, LoopCount, ObjRef, Op, Program, WorkloadSpec, SPIN_POLL_NS,
};
use std::path::Path;

fn doc(machine: &str, body: &str) -> Result<Doc, String> {
    let text = format!(
        "[machine]\npreset = \"{machine}\"\n[kernel]\npreset = \"v5.6\"\n[run]\nseed = 2\n[workload]\n{body}"
    );
    Doc::parse(&text, Path::new("t.toml")).map_err(|e| e.to_string())
}

fn scenario(machine: &str, body: &str) -> Result<Scenario, String> {
    Scenario::from_doc(doc(machine, body)?, &Overrides::default()).map_err(|e| e.to_string())
}

/// The scenario of `body` on machine `m` (the generator parsed against `m`).
fn on(m: Machine, body: &str) -> Scenario {
    let d = doc("juno-r0", body).unwrap();
    let mut sc = Scenario::from_doc(d.clone(), &Overrides::default()).unwrap();
    let root = TableReader::new(&d, &d.root, "").unwrap();
    let w = root.table("workload").unwrap().unwrap();
    let kind = w.str("kind").unwrap().unwrap();
    let g = generators::parse(kind, &w, &m).unwrap().unwrap();
    sc.duration_ns = g.spec.duration_ns;
    sc.machine = m;
    sc.workload = g.spec.into();
    sc.tool = Some(g.tool);
    sc
}

/// Two CPUs, one LLC, default (x86) costs, shallow idle states.
fn two_cpus() -> Machine {
    test_topology(1, 1, 2, 1)
}

fn opts() -> RunOpts {
    RunOpts {
        check: true,
        ..Default::default()
    }
}

/// Run `sc` (optionally cut at `dur` ns) and return the simulation and its tool's
/// report.
fn sim(sc: &Scenario, dur: Option<SimTime>) -> (Sim<schedlab::metrics::Observers>, StopReason) {
    let mut s = experiment::build(sc, sc.seed, 0, &opts());
    let stop = s.run(dur.or(sc.duration_ns)).expect("runs");
    (s, stop)
}

fn report(sc: &Scenario, s: &Sim<schedlab::metrics::Observers>) -> Option<ToolResult> {
    sc.tool.as_ref().unwrap().report(&ToolInput {
        metrics: &sc.workload.metrics,
        hists: &s.metrics().hists,
        sim_time_ns: s.kernel().now(),
    })
}

fn hist<'a>(
    sc: &Scenario,
    s: &'a Sim<schedlab::metrics::Observers>,
    name: &str,
) -> &'a schedlab::metrics::LatencyHist {
    let i = sc
        .workload
        .metrics
        .iter()
        .position(|m| m.name == name)
        .unwrap();
    &s.metrics().hists[i]
}

fn run(sc: &Scenario) -> experiment::result::RunResult {
    experiment::run(sc, sc.seed, 0, &opts()).expect("runs").0
}

// -------------------------------------------------------------------------------
// schbench
// -------------------------------------------------------------------------------

#[test]
fn schbench_one_worker_by_hand() {
    // -m 1 -t 1 -c 1000 -s 1000 -r 1 on two CPUs. A cycle is: spin 1 ms, post the
    // message thread, which sleeps 1 ms + jitter < 250 µs (+ timer slack ≤ 50 µs),
    // then posts the worker back. So cycles last at least 2 ms and at most
    // 2.3 ms plus two wakeup latencies (< 200 µs each: both CPUs idle long enough
    // to reach C6, whose exit takes 133 µs): between 1000/2.7 and 1000/2 cycles.
    let sc = on(
        two_cpus(),
        "kind = \"schbench\"\nmessage_threads = 1\nthreads = 1\ncputime = 1000\nsleeptime = 1000\nruntime = 1\n",
    );
    assert_eq!(sc.duration_ns, Some(1_000_000_000));
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Duration);
    // main + message thread + worker.
    assert_eq!(s.kernel().tasks().len() - 1, 3);
    let h = hist(&sc, &s, "wakeup_latency");
    let n = h.count();
    assert!((370..=500).contains(&n), "{n} samples");
    // Each sample is one futex wakeup on an otherwise idle 2-CPU machine: at worst
    // the exit from C6 (133 µs) plus the wakeup path.
    assert!(h.hist().max() < 300_000, "max {} ns", h.hist().max());
    let r = report(&sc, &s).unwrap();
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines[0], "Latency percentiles (usec)");
    assert!(lines[5].starts_with("\t*99.0th: "), "{}", r.text);
    assert!(lines[8].starts_with("\tmin=0, max="), "{}", r.text);
    // Nonzero µs samples only; the max line is the largest sample in µs.
    assert!(r.values["samples"] <= n as f64);
    let max_us = ((h.hist().max() + 500) / 1000) as f64;
    assert!((r.values["max_us"] - max_us).abs() <= 1.0);
    assert!(r.values["p50_us"] <= r.values["p99_us"]);
}

#[test]
fn schbench_no_worker_is_lost() {
    // Two message threads of three workers that reply at once (-s 0): a worker
    // left off its message thread's batch, or posted while not yet asleep and
    // then put to sleep, would never run again. So every worker must keep
    // getting CPU time: compare each worker's runtime at 30 ms and at 60 ms.
    let sc = on(
        two_cpus(),
        "kind = \"schbench\"\nmessage_threads = 2\nthreads = 3\ncputime = 200\nsleeptime = 0\nruntime = 1\n",
    );
    let at = |ms: u64| {
        let mut sc = sc.clone();
        sc.duration_ns = Some(ms * 1_000_000);
        run(&sc)
    };
    let (a, b) = (at(30), at(60));
    let workers = |r: &experiment::result::RunResult| -> Vec<(u32, u64)> {
        r.tasks
            .iter()
            .filter(|t| t.name.starts_with("worker"))
            .map(|t| (t.pid, t.runtime_ns))
            .collect()
    };
    let (wa, wb) = (workers(&a), workers(&b));
    assert_eq!(b.tasks.len(), 1 + 2 + 6);
    assert_eq!(wa.len(), 6);
    for (x, y) in wa.iter().zip(&wb) {
        assert_eq!(x.0, y.0);
        // 30 ms of 6 spinners sharing two CPUs: about 10 ms each.
        assert!(
            y.1 >= x.1 + 5_000_000,
            "worker {} stalled: {x:?} {y:?}",
            x.0
        );
    }
    // One sample per completed cycle of 200 µs of spinning: at most 6 × 60 / 0.2.
    let n = b.workload.metrics["wakeup_latency"].summary.count;
    assert!(n > 6 && n <= 6 * 300, "{n}");
}

#[test]
fn schbench_new_defaults_and_requests() {
    // threads defaults to ceil(nr_cpus / message_threads).
    let sc = on(two_cpus(), "kind = \"schbench-new\"\nruntime = 1\n");
    assert_eq!(sc.workload.programs.len(), 3);
    assert_eq!(sc.workload.futexes, 1 + 2);
    assert_eq!(sc.workload.spinlocks, 2);
    let sc = on(
        test_topology(1, 1, 4, 1),
        "kind = \"schbench-new\"\nmessage_threads = 3\nruntime = 1\noperations = 1\ncache_footprint = 24\n",
    );
    // ceil(4/3) = 2 workers per message thread; 32×32 matrices (24 KiB / 24 B).
    assert_eq!(sc.workload.futexes, 3 + 6);
    let (s, stop) = sim(&sc, Some(40_000_000));
    assert_eq!(stop, StopReason::Duration);
    assert_eq!(s.kernel().tasks().len() - 1, 1 + 3 + 6);
    let wake = hist(&sc, &s, "wakeup_latency");
    let req = hist(&sc, &s, "request_latency");
    let done = hist(&sc, &s, "request_done_at");
    // One request per wakeup (minus those in flight at the stop); a request takes
    // at least the 100 µs sleep plus 32³ ns of maths.
    assert_eq!(req.count(), done.count());
    assert!(req.count() <= wake.count() && wake.count() <= req.count() + 6);
    assert!(req.count() > 0);
    assert!(req.hist().min() >= 100_000 + 32 * 32 * 32);
    let r = report(&sc, &s).unwrap();
    assert!(r
        .text
        .starts_with("Wakeup Latencies percentiles (usec) runtime 1 (s) ("));
    assert!(r.text.contains("\nRequest Latencies percentiles (usec)"));
    assert!(r.text.contains("\nRPS percentiles (requests)"));
    // average rps = completed requests / elapsed time.
    let avg = r.values["average_rps"];
    assert!(
        (avg - req.count() as f64 / 0.04).abs() < 1e-6 * avg.max(1.0),
        "{avg}"
    );
}

// -------------------------------------------------------------------------------
// sysbench
// -------------------------------------------------------------------------------

#[test]
fn sysbench_threads_event_cost_by_hand() {
    // One thread, one lock, 10 yields, 50 events: alone on its runqueue, a yield
    // does not switch, so an event costs 10 × (lock + yield + unlock) plus the
    // closing clock read: 10 × (20 + 600 + 20) + 30 = 6 430 ns.
    let sc = on(
        two_cpus(),
        "kind = \"sysbench-threads\"\nthreads = 1\nthread_locks = 1\nthread_yields = 10\nevents = 50\ntime = 0\n",
    );
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.kernel().tasks().len() - 1, 2);
    let ev = hist(&sc, &s, "event.g0.t0");
    assert_eq!(ev.count(), 50);
    // (HDR buckets are 4 ns wide here; the sum is exact.)
    assert_eq!(ev.hist().min(), ev.hist().lowest_equivalent(6_430));
    assert!(ev.sum >= 50 * 6_430);
    // The ticket word saw 50 claims plus the one refused; the lock counter 50.
    assert_eq!(s.words()[0], 51);
    assert_eq!(s.words()[1], 50);
    let r = report(&sc, &s).unwrap();
    assert_eq!(r.values["events"], 50.0);
    assert!(r
        .text
        .contains("    total number of events:              50\n"));
    // total time covers every event.
    assert!(r.values["total_time_s"] * 1e9 >= ev.sum as f64);
}

#[test]
fn sysbench_threads_time_limit_and_locks() {
    // Four threads over two locks for 5 ms: every thread stops claiming events at
    // 5 ms after the barrier, so total time ends within one event after that.
    let sc = on(
        two_cpus(),
        "kind = \"sysbench-threads\"\nnum_threads = 4\nthread_locks = 2\nthread_yields = 20\nmax_time = 0.005\nmax_requests = -1\n",
    );
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.kernel().tasks().len() - 1, 5);
    let r = report(&sc, &s).unwrap();
    let events: u64 = (0..4)
        .map(|t| hist(&sc, &s, &format!("event.g0.t{t}")).count())
        .sum();
    assert_eq!(r.values["events"], events as f64);
    // Every event took one lock counter value.
    assert_eq!(s.words()[1], events);
    let total = r.values["total_time_s"];
    let longest = (0..4)
        .map(|t| hist(&sc, &s, &format!("event.g0.t{t}")).hist().max())
        .max()
        .unwrap() as f64;
    assert!(
        total >= 0.005 && total <= 0.005 + (longest + 100_000.0) / 1e9,
        "{total}"
    );
}

#[test]
fn sysbench_cpu_groups_seed_004_shape() {
    // Seed 004 on Juno: one pinned hog per big CPU (1, 2) with a quarter of the
    // events, and unpinned instances with the full count.
    let sc = scenario(
        "juno-r0",
        "kind = \"sysbench-cpu\"\ncpu_max_prime = 2000\ntime = 0\ngroups = [\n {cpus = [1], events = 5},\n {cpus = \"2\", events = 5},\n {events = 20},\n {events = 20},\n]\n",
    )
    .unwrap();
    assert_eq!(sc.workload.tasks.len(), 4);
    assert_eq!(
        sc.workload.tasks[0]
            .cpus
            .as_ref()
            .map(|c| c.iter().collect::<Vec<_>>()),
        Some(vec![1])
    );
    assert_eq!(sc.workload.tasks[2].cpus, None);
    let r = run(&sc);
    assert_eq!(
        format!("{:?}", r.workload.stop_reason),
        "Completed",
        "{:?}",
        r.workload
    );
    // 4 sysbench processes with one worker thread each.
    assert_eq!(r.tasks.len(), 8);
    for (g, n) in [(0, 5.0), (1, 5.0), (2, 20.0), (3, 20.0)] {
        assert_eq!(r.workload.tool[&format!("g{g}.events")], n);
    }
    let max = r.workload.tool["max_total_time_s"];
    assert!(max >= r.workload.tool["g2.total_time_s"]);
    // A pinned hog's worker ran on its CPU only: its events ran at the A57 speed,
    // all equal (no migration, no sharing with another hog).
    let out = r.workload.tool_output.unwrap();
    assert!(out.starts_with("[group 0: 1 threads]\nCPU speed:"), "{out}");
}

#[test]
fn sysbench_cpu_event_work_scales_with_prime() {
    use schedlab::workload::generators::sysbench::{prime_steps, prime_work_ns};
    // Trial-division steps grow like n^1.5 / ln n: 10 000 is far more than 10 × 1 000.
    assert!(prime_steps(10_000).0 > 10 * prime_steps(1_000).0);
    // At 1 GHz, ns = cycles.
    let (s, c) = prime_steps(100);
    assert_eq!(prime_work_ns(100, 1_000_000), s * 6 + c * 20);
}

// -------------------------------------------------------------------------------
// adrestia
// -------------------------------------------------------------------------------

#[test]
fn adrestia_rounds_and_tasks() {
    let sc = on(two_cpus(), "kind = \"adrestia\"\nthreads = 3\nloops = 7\n");
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Completed);
    // main + 1 single worker + 3 periodic workers, all exited.
    assert_eq!(s.kernel().tasks().len() - 1, 5);
    // Single: loops × threads rounds; periodic: loops rounds.
    assert_eq!(hist(&sc, &s, "single_round_sum").count(), 21);
    assert_eq!(hist(&sc, &s, "periodic_round_sum").count(), 7);
    // Every byte written was read: the pipes are empty (conservation), which is
    // what lets every round complete.
    let r = report(&sc, &s).unwrap();
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("wakeup cost (single): ") && lines[0].ends_with("us"));
    assert!(lines[1].starts_with("wakeup cost (periodic, 10us): "));
    // A round's delta covers at least the pipe write and the worker's clock read.
    let single = hist(&sc, &s, "single_round_sum");
    assert!(single.hist().min() >= 600 + 30, "{}", single.hist().min());
    // The printed value is the sample at index floor(0.9 n) (n = 21: index 18).
    let mut v: Vec<u64> = Vec::new();
    for x in single.hist().iter_recorded() {
        for _ in 0..x.count_at_value() {
            v.push(single.hist().median_equivalent(x.value_iterated_to()));
        }
    }
    assert_eq!(r.values["single_us"], ((v[18] + 500) / 1000) as f64);
}

#[test]
fn adrestia_prints_finished_tests_only() {
    // A run cut before its end prints only the tests that finished (single runs
    // first; periodic rounds are slower, each with a 10 µs sleep + slack).
    let sc = on(two_cpus(), "kind = \"adrestia\"\nloops = 200\n");
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(hist(&sc, &s, "single_round_sum").count(), 200);
    let full = report(&sc, &s).unwrap();
    assert_eq!(full.text.lines().count(), 2);
    let (s2, stop2) = sim(&sc, Some(s.kernel().now() * 95 / 100));
    assert_eq!(stop2, StopReason::Duration);
    let r = report(&sc, &s2).unwrap();
    assert_eq!(r.text.lines().count(), 1);
    assert!(r.text.starts_with("wakeup cost (single): "));
    assert_eq!(r.values["single_us"], full.values["single_us"]);
    // Cut before the single test ends: nothing printed.
    let (s3, _) = sim(&sc, Some(1_000));
    assert!(report(&sc, &s3).is_none());
}

#[test]
fn adrestia_single_only() {
    let sc = on(
        two_cpus(),
        "kind = \"adrestia\"\nloops = 5\ntest = \"single\"\n",
    );
    let (s, stop) = sim(&sc, None);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.kernel().tasks().len() - 1, 2);
    let r = report(&sc, &s).unwrap();
    assert!(!r.text.contains("periodic"));
}

// -------------------------------------------------------------------------------
// Bad options
// -------------------------------------------------------------------------------

#[test]
fn bad_options_name_the_key() {
    for (body, key) in [
        ("kind = \"schbench\"\nthreads = 0\n", "threads"),
        ("kind = \"schbench\"\npipe = 4096\n", "pipe"),
        ("kind = \"schbench\"\nbogus = 1\n", "bogus"),
        (
            "kind = \"schbench-new\"\nmessage_threads = -1\n",
            "message_threads",
        ),
        ("kind = \"schbench-new\"\nno_locking = 1\n", "no_locking"),
        ("kind = \"adrestia\"\ntest = \"sideways\"\n", "test"),
        ("kind = \"adrestia\"\nloops = 0\n", "loops"),
        (
            "kind = \"sysbench-threads\"\nthread_locks = 0\n",
            "thread_locks",
        ),
        (
            "kind = \"sysbench-threads\"\nthreads = 2\nnum_threads = 2\n",
            "num_threads",
        ),
        (
            "kind = \"sysbench-threads\"\ntime = 0\nevents = 0\n",
            "time",
        ),
        ("kind = \"sysbench-threads\"\ngroups = []\n", "groups"),
        ("kind = \"sysbench-cpu\"\ncpus = [99]\n", "cpus"),
        ("kind = \"sysbench-cpu\"\ncpus = \"0-2,x\"\n", "cpus"),
        (
            "kind = \"sysbench-cpu\"\ncpu_max_prime = 1\n",
            "cpu_max_prime",
        ),
        (
            "kind = \"sysbench-cpu\"\ngroups = [{threads = 1, colour = 2}]\n",
            "colour",
        ),
        ("kind = \"sysbench-cpu\"\nmax_time = -3\n", "max_time"),
    ] {
        let e = scenario("juno-r0", body).unwrap_err();
        assert!(e.contains(key), "{body}: {e}");
        assert!(e.contains("t.toml:"), "{body}: {e}");
    }
}

// -------------------------------------------------------------------------------
// Every preset
// -------------------------------------------------------------------------------

#[test]
fn generators_are_listed() {
    let kinds: Vec<&str> = experiment::workload_kinds().iter().map(|k| k.0).collect();
    for k in [
        "schbench",
        "schbench-new",
        "adrestia",
        "sysbench-threads",
        "sysbench-cpu",
    ] {
        assert!(kinds.contains(&k), "{k} not listed");
    }
}

// Every generator on every preset: tests/generators_misc.rs (`SMALL`).

// -------------------------------------------------------------------------------
// No silent deadlock over random small option sets
// -------------------------------------------------------------------------------

fn check_invariants(sc: &Scenario, s: &Sim<schedlab::metrics::Observers>, stop: StopReason) {
    let r = report(sc, s);
    match sc.workload_kind.as_str() {
        "schbench" | "schbench-new" => {
            assert_eq!(stop, StopReason::Duration);
            let r = r.unwrap();
            assert!(r
                .values
                .get("max_us")
                .or(r.values.get("wakeup_us_max"))
                .is_some());
            if sc.workload_kind == "schbench-new" {
                let req = hist(sc, s, "request_latency").count();
                let wake = hist(sc, s, "wakeup_latency").count();
                let workers = (sc.workload.futexes - sc.workload.lists) as u64;
                assert!(req <= wake && wake <= req + workers);
            }
        }
        "adrestia" => {
            assert_eq!(stop, StopReason::Completed);
            assert!(r.is_some());
        }
        _ => {
            assert_eq!(stop, StopReason::Completed);
            let r = r.unwrap();
            let groups = sc.workload.barriers.len();
            for g in 0..groups {
                let p = if groups > 1 {
                    format!("g{g}.")
                } else {
                    String::new()
                };
                let threads = sc.workload.barriers[g] - 1;
                let ev: u64 = (0..threads)
                    .map(|t| hist(sc, s, &format!("event.g{g}.t{t}")).count())
                    .sum();
                assert_eq!(r.values[&format!("{p}events")], ev as f64);
                // The ticket word counts claims: events + one refusal per thread
                // when an event limit applies.
                if s.words()[2 * g] > 0 {
                    assert_eq!(s.words()[2 * g], ev + u64::from(threads));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    #[test]
    fn generators_never_deadlock(
        which in 0usize..5,
        a in 1u32..4,
        b in 1u32..4,
        c in 0u32..400,
        small in any::<bool>(),
    ) {
        let body = match which {
            0 => format!("kind = \"schbench\"\nmessage_threads = {a}\nthreads = {b}\ncputime = {c}\nsleeptime = {}\nruntime = 1\n", 400 - c),
            1 => format!("kind = \"schbench-new\"\nmessage_threads = {a}\nthreads = {b}\nsleep_usec = {c}\noperations = 1\ncache_footprint = 24\nno_locking = {small}\nruntime = 1\n"),
            2 => format!("kind = \"adrestia\"\nthreads = {a}\nloops = {b}\narrival = {c}\n{}", if small { "test = \"periodic\"\n" } else { "" }),
            3 => format!("kind = \"sysbench-threads\"\nthreads = {a}\nthread_locks = {b}\nthread_yields = {}\n{}", c % 20, if small { "events = 7\ntime = 0\n" } else { "time = 0.002\n" }),
            _ => format!("kind = \"sysbench-cpu\"\ncpu_max_prime = {}\n{}", 3 + c, if small { format!("groups = [{{threads = {a}, events = 3, cpus = [0]}}, {{threads = {b}, events = 5}}]\n") } else { format!("threads = {a}\nevents = {b}\n") }),
        };
        let m = if small { two_cpus() } else { presets::preset("juno-r0").unwrap() };
        let sc = on(m, &body);
        let (s, stop) = sim(&sc, Some(20_000_000).filter(|_| sc.duration_ns.is_some()));
        check_invariants(&sc, &s, stop);
    }
}

// -------------------------------------------------------------------------------
// The vocabulary
// -------------------------------------------------------------------------------

fn word(k: u32, n: u32) -> ObjRef {
    ObjRef {
        base: 0,
        count: n,
        idx: IdxExpr::Const(k),
    }
}

/// Run a hand-written spec on two CPUs.
fn run_spec(spec: WorkloadSpec) -> (Sim<schedlab::metrics::Observers>, StopReason) {
    spec.validate().unwrap();
    let mut sc = on(two_cpus(), "kind = \"adrestia\"\nloops = 1\n");
    sc.workload = spec.into();
    sc.tool = None;
    sc.duration_ns = None;
    sim(&sc, Some(1_000_000_000))
}

#[test]
fn post_await_handshake() {
    // A and B alternate 20 times with post/await on two futex words; a post on a
    // word that is not BLOCKED does nothing, an await on a posted word goes on.
    let f = |k| ObjRef {
        base: 0,
        count: 2,
        idx: IdxExpr::Const(k),
    };
    let mut spec = WorkloadSpec {
        futexes: 2,
        ..WorkloadSpec::default()
    };
    let ca = spec.metric("a", "count");
    let cb = spec.metric("b", "count");
    let side = |me, other, metric| {
        vec![
            Op::Loop {
                count: LoopCount::Times(Dist::Const(20)),
                end: 5,
            },
            Op::FutexSet { f: f(me), val: 0 },
            Op::FutexPost { f: f(other) },
            Op::FutexAwait { f: f(me) },
            Op::Count { metric },
            Op::EndLoop { start: 0 },
            // A spare post to a word nobody waits on: no effect, no block.
            Op::FutexPost { f: f(other) },
            Op::Exit,
        ]
    };
    spec.programs = vec![
        Program {
            name: "a".into(),
            work_class: None,
            ops: side(0, 1, ca),
        },
        Program {
            name: "b".into(),
            work_class: None,
            ops: side(1, 0, cb),
        },
    ];
    spec.tasks = vec![task_spec("a", 0, None), task_spec("b", 1, None)];
    let (s, stop) = run_spec(spec);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.metrics().hists[ca].count(), 20);
    assert_eq!(s.metrics().hists[cb].count(), 20);
}

#[test]
fn list_splice_is_newest_first() {
    // One task pushes 5, 6, 7 on a list, splices it and stores each item's
    // position in the walk (a counter in word[0], starting at 1) into word[item].
    let mut spec = WorkloadSpec {
        words: 8,
        lists: 1,
        ..WorkloadSpec::default()
    };
    let l = word(0, 1);
    let mut ops = Vec::new();
    for v in [5, 6, 7] {
        ops.push(Op::Push {
            l,
            item: IdxExpr::Const(v),
        });
    }
    ops.extend([
        Op::Splice { l },
        Op::SetReg { slot: 1, val: 1 },
        Op::Store {
            w: word(0, 8),
            slot: 1,
        },
        Op::Loop {
            count: LoopCount::Each { slot: 2 },
            end: 9,
        },
        Op::FetchAdd {
            w: word(0, 8),
            slot: 1,
            add: 1,
        },
        Op::Store {
            w: ObjRef {
                base: 0,
                count: 8,
                idx: IdxExpr::Reg(2),
            },
            slot: 1,
        },
        Op::EndLoop { start: 6 },
        // The list is empty now: a second walk does nothing.
        Op::Splice { l },
        Op::Loop {
            count: LoopCount::Each { slot: 2 },
            end: 14,
        },
        Op::FetchAdd {
            w: word(0, 8),
            slot: 1,
            add: 100,
        },
        Op::Syscall,
        Op::EndLoop { start: 11 },
        Op::Exit,
    ]);
    spec.programs = vec![Program {
        name: "walker".into(),
        work_class: None,
        ops,
    }];
    spec.tasks = vec![task_spec("walker", 0, None)];
    let (s, stop) = run_spec(spec);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.words()[7], 1);
    assert_eq!(s.words()[6], 2);
    assert_eq!(s.words()[5], 3);
    assert_eq!(s.words()[0], 4);
}

#[test]
fn while_loops_deadline_and_ticket() {
    // Deadline: 1 ms computes while now < mark + 10 ms: exactly 10 iterations.
    // Ticket: two tasks share a limit of 7 events: 7 iterations in all, 9 claims.
    let mut spec = WorkloadSpec {
        words: 1,
        ..WorkloadSpec::default()
    };
    let it = spec.metric("it", "count");
    let tk = spec.metric("tk", "count");
    let body = |count, metric| {
        vec![
            Op::Mark { slot: 0 },
            Op::Loop { count, end: 4 },
            Op::Compute(Dist::Const(1_000_000)),
            Op::Count { metric },
            Op::EndLoop { start: 1 },
            Op::Exit,
        ]
    };
    spec.programs = vec![
        Program {
            name: "deadline".into(),
            work_class: None,
            ops: body(
                LoopCount::While {
                    deadline: Some((0, 10_000_000)),
                    ticket: None,
                    unset: None,
                },
                it,
            ),
        },
        Program {
            name: "ticket".into(),
            work_class: None,
            ops: body(
                LoopCount::While {
                    deadline: None,
                    ticket: Some((0, 7)),
                    unset: None,
                },
                tk,
            ),
        },
    ];
    spec.tasks = vec![
        task_spec("deadline", 0, Some(CpuMask::of(0))),
        task_spec("t0", 1, Some(CpuMask::of(1))),
        task_spec("t1", 1, Some(CpuMask::of(1))),
    ];
    let (s, stop) = run_spec(spec);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.metrics().hists[it].count(), 10);
    assert_eq!(s.metrics().hists[tk].count(), 7);
    assert_eq!(s.words()[0], 9);
}

#[test]
fn while_loop_until_a_flag_is_set() {
    // A poller sleeps 1 ms per round while word 0 is clear; another task sets it
    // (stores 1) after 5.5 ms. The poller leaves the loop at its first check after
    // the store: after 5.5 ms and within one round (1 ms plus the sleep's slack and
    // wakeup) of it, having slept through every round before. A flag set before the
    // loop starts ends it at once (word 1).
    let mut spec = WorkloadSpec {
        words: 2,
        ..WorkloadSpec::default()
    };
    let rounds = spec.metric("rounds", "count");
    let never = spec.metric("never", "count");
    let waited = spec.metric("waited", "ns");
    let poll = |w: u32, metric, at: usize| {
        vec![
            Op::Mark { slot: 1 },
            Op::Loop {
                count: LoopCount::While {
                    deadline: None,
                    ticket: None,
                    unset: Some(w),
                },
                end: at + 4,
            },
            Op::Sleep(Dist::Const(1_000_000)),
            Op::Count { metric },
            Op::EndLoop { start: at + 1 },
            Op::Record {
                metric: waited,
                slot: 1,
            },
            Op::Exit,
        ]
    };
    let word = |k| ObjRef {
        base: k,
        count: 1,
        idx: IdxExpr::Const(0),
    };
    let mut late = vec![Op::Sleep(Dist::Const(100_000))];
    late.extend(poll(1, never, 1));
    spec.programs = vec![
        Program::new("poller", poll(0, rounds, 0)),
        Program::new(
            "setter",
            vec![
                Op::SetReg { slot: 0, val: 1 },
                Op::Store {
                    w: word(1),
                    slot: 0,
                },
                Op::Sleep(Dist::Const(5_500_000)),
                Op::Store {
                    w: word(0),
                    slot: 0,
                },
                Op::Exit,
            ],
        ),
        Program::new("late", late),
    ];
    spec.tasks = vec![
        task_spec("poller", 0, Some(CpuMask::of(0))),
        task_spec("setter", 1, Some(CpuMask::of(1))),
        task_spec("late", 2, Some(CpuMask::of(1))),
    ];
    let (s, stop) = run_spec(spec);
    assert_eq!(stop, StopReason::Completed);
    let h = &s.metrics().hists[waited];
    assert_eq!(h.count(), 2);
    // The late poller records ~0 (no round): the sum is the poller's wait.
    let poller_wait = h.sum;
    assert!(
        (5_500_000..7_000_000).contains(&poller_wait),
        "waited {poller_wait} ns"
    );
    let n = s.metrics().hists[rounds].count();
    assert!((5..=6).contains(&n), "{n} rounds");
    assert_eq!(s.metrics().hists[never].count(), 0);
}

#[test]
fn spin_lock_of_the_current_cpu() {
    // "The lock of the CPU it is on": the holder (CPU 1) takes lock 1 and sleeps
    // 1 ms holding it; a task on CPU 0 takes lock 0 at once; a task on CPU 1 spins
    // until the holder, woken on CPU 1, gets the CPU back and releases it (CFS
    // lets the spinner run until it has used more than the wakeup granularity, so
    // the wait is longer than the sleep).
    let mut spec = WorkloadSpec {
        spinlocks: 2,
        words: 3,
        ..WorkloadSpec::default()
    };
    let waited = spec.metric("waited", "ns");
    let free = spec.metric("free", "ns");
    let percpu = ObjRef {
        base: 0,
        count: 2,
        idx: IdxExpr::Cpu,
    };
    let held = ObjRef {
        base: 0,
        count: 2,
        idx: IdxExpr::Reg(4),
    };
    let taker = |metric, w| {
        vec![
            Op::Sleep(Dist::Const(100_000)),
            Op::Mark { slot: 0 },
            Op::SpinLock { l: percpu, slot: 4 },
            Op::Record { metric, slot: 0 },
            Op::Store {
                w: word(w, 3),
                slot: 4,
            },
            Op::SpinUnlock { l: held },
            Op::Exit,
        ]
    };
    spec.programs = vec![
        Program {
            name: "holder".into(),
            work_class: None,
            ops: vec![
                Op::SpinLock { l: percpu, slot: 4 },
                Op::Store {
                    w: word(0, 3),
                    slot: 4,
                },
                Op::Sleep(Dist::Const(1_000_000)),
                Op::SpinUnlock { l: held },
                Op::Exit,
            ],
        },
        Program {
            name: "spinner".into(),
            work_class: None,
            ops: taker(waited, 1),
        },
        Program {
            name: "other".into(),
            work_class: None,
            ops: taker(free, 2),
        },
    ];
    spec.tasks = vec![
        task_spec("holder", 0, Some(CpuMask::of(1))),
        task_spec("spinner", 1, Some(CpuMask::of(1))),
        task_spec("other", 2, Some(CpuMask::of(0))),
    ];
    let (s, stop) = run_spec(spec);
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(s.words(), vec![1, 1, 0]);
    // Released ≥ 1 ms after start; the spinner started waiting at ≈ 0.1 ms.
    let w = s.metrics().hists[waited].hist().max();
    assert!((850_000..50_000_000).contains(&w), "{w}");
    assert!(s.metrics().hists[free].hist().max() < SPIN_POLL_NS);
}

#[test]
fn vocabulary_is_writable_in_tasks_workloads() {
    // Three workers share a global limit of 10 events (a ticket word); each event
    // takes a lock index from a shared counter, records it, and posts/awaits
    // nothing. A fourth task pushes its instance on a list, splices it back and
    // stores each item's value into word[item].
    let body = r#"kind = "tasks"
[[workload.word]]
name = "w"
count = 4
[[workload.list]]
name = "l"
[[workload.spinlock]]
name = "pcl"
count = 8
[[workload.futex]]
name = "f"
[[workload.task]]
name = "worker"
count = 3
program = [
  { op = "loop", count = "while", ticket = "w[0]", limit = 10, body = [
      { op = "fetch_add", word = "w[1]", reg = 2 },
      { op = "spin_lock", spinlock = "pcl[cpu]", reg = 3 },
      { op = "compute", work = "10us" },
      { op = "spin_unlock", spinlock = "pcl[r3]" },
      { op = "count", metric = "events" },
  ] },
]
[[workload.task]]
name = "lister"
program = [
  { op = "push", list = "l", item = 3 },
  { op = "push", list = "l", item = "i+2" },
  { op = "splice", list = "l" },
  { op = "set_reg", reg = 1, value = 7 },
  { op = "loop", count = "each", reg = 2, body = [
      { op = "store", word = "w[r2]", reg = 1 },
  ] },
  { op = "futex_post", futex = "f" },
  { op = "futex_set", futex = "f", value = 1 },
  { op = "futex_await", futex = "f" },
  { op = "mark", slot = 5 },
  { op = "loop", count = "while", until = "1ms", reg = 5, body = [
      { op = "compute", work = "100us" },
      { op = "count", metric = "ticks" },
  ] },
]
"#;
    let sc = scenario("juno-r0", body).unwrap();
    let (s, stop) = {
        let mut s = experiment::build(&sc, 1, 0, &opts());
        let stop = s.run(None).unwrap();
        (s, stop)
    };
    assert_eq!(stop, StopReason::Completed);
    assert_eq!(hist(&sc, &s, "events").count(), 10);
    // 10 tickets granted, 3 refused; 10 lock-counter values taken.
    assert_eq!(s.words()[0], 13);
    assert_eq!(s.words()[1], 10);
    // The lister's items 3 and 2 (instance 0 + 2) were stored the value 7.
    assert_eq!(&s.words()[2..4], &[7, 7]);
    // A 1 ms deadline over 100 µs computes (on whatever CPU): at least one round.
    assert!(hist(&sc, &s, "ticks").count() >= 1);
    // Bad references name the key.
    let e = scenario(
        "juno-r0",
        "kind = \"tasks\"\n[[workload.word]]\nname = \"w\"\n[[workload.task]]\nname = \"t\"\nprogram = [{ op = \"load\", word = \"w[r9]\" }]\n",
    )
    .unwrap_err();
    assert!(e.contains("t.toml:13") && e.contains("w[r9]"), "{e}");
}

#[test]
fn loops_nest_deeper_than_the_inline_stack() {
    // A task's open loops live inline up to two levels and spill beyond: four
    // levels of 2 × 3 × 4 × 5 iterations run each body exactly as often, and a
    // loop after them starts from an empty stack.
    let body = r#"kind = "tasks"
[[workload.task]]
name = "t"
count = 2
program = [
  { op = "loop", count = 2, body = [
      { op = "count", metric = "l1" },
      { op = "loop", count = 3, body = [
          { op = "count", metric = "l2" },
          { op = "loop", count = 4, body = [
              { op = "count", metric = "l3" },
              { op = "loop", count = 5, body = [
                  { op = "compute", work = "1us" },
                  { op = "count", metric = "l4" },
              ] },
          ] },
      ] },
  ] },
  { op = "loop", count = 7, body = [
      { op = "count", metric = "after" },
  ] },
]
"#;
    let sc = scenario("juno-r0", body).unwrap();
    let mut s = experiment::build(&sc, 1, 0, &opts());
    assert_eq!(s.run(None).unwrap(), StopReason::Completed);
    for (m, n) in [("l1", 2), ("l2", 6), ("l3", 24), ("l4", 120), ("after", 7)] {
        assert_eq!(hist(&sc, &s, m).count(), 2 * n, "{m}");
    }
}
