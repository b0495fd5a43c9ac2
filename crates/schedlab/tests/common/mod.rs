//! Shared helpers for the kernel behaviour tests: build workloads and scenarios in
//! code, run them with invariant checking, and read the results back.
#![allow(dead_code)]

use schedlab::config::Doc;
use schedlab::experiment::{self, bench, Overrides, RunOpts, RunResult, Scenario};
use schedlab::machine::{CpuMask, Machine};
use schedlab::metrics::Observers;
use schedlab::sim::{Sim, SimError, StopReason};
use schedlab::workload::dist::Dist;
use schedlab::workload::ipc::ChanKind;
use schedlab::workload::program::{
    ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
};
use std::path::Path;

pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;

/// A task running `prog` from t = 0: nice 0, `SCHED_NORMAL`, its own process.
pub fn task_spec(name: &str, prog: usize, cpus: Option<CpuMask>) -> TaskSpec {
    TaskSpec {
        cpus: cpus.map(std::sync::Arc::new),
        ..TaskSpec::new(name, prog, 0)
    }
}

/// Constant amount.
pub fn c(v: u64) -> Dist {
    Dist::Const(v)
}

/// A fixed object reference (element `i` of an array starting at 0 of `count`).
pub fn obj(i: u32) -> ObjRef {
    ObjRef {
        base: i,
        count: 1,
        idx: IdxExpr::Const(0),
    }
}

/// Write `bytes` bytes to channel `ch`.
pub fn write_to(ch: ObjRef, bytes: u32) -> Op {
    Op::Write { ch, bytes }
}

/// Read up to `bytes` bytes from channel `ch`.
pub fn read_from(ch: ObjRef, bytes: u32) -> Op {
    Op::Read { ch, bytes }
}

/// Wrap `body` in `loop count { body }`.
pub fn looped(count: LoopCount, body: Vec<Op>) -> Vec<Op> {
    let end = body.len() + 1;
    let mut ops = vec![Op::Loop { count, end }];
    ops.extend(body);
    ops.push(Op::EndLoop { start: 0 });
    ops
}

pub fn forever(body: Vec<Op>) -> Vec<Op> {
    looped(LoopCount::Forever, body)
}

pub fn times(n: u64, body: Vec<Op>) -> Vec<Op> {
    looped(LoopCount::Times(Dist::Const(n)), body)
}

/// An endless CPU hog.
pub fn hog_ops() -> Vec<Op> {
    forever(vec![Op::Compute(c(10 * MS))])
}

/// Incrementally build a workload.
#[derive(Default)]
pub struct W {
    pub spec: WorkloadSpec,
}

impl W {
    pub fn new() -> W {
        W::default()
    }

    /// Add a program, returning its id.
    pub fn prog(&mut self, name: &str, ops: Vec<Op>) -> usize {
        self.spec.programs.push(Program {
            name: name.into(),
            work_class: None,
            ops,
        });
        self.spec.programs.len() - 1
    }

    /// Declare `count` pipes; returns the index of the first.
    pub fn pipes(&mut self, count: u32) -> u32 {
        let base = self.spec.nr_channels() as u32;
        self.spec.channels.push(ChanDecl {
            name: format!("pipe{base}"),
            kind: ChanKind::Pipe,
            count,
        });
        base
    }

    /// Start a task running `prog` at t = 0.
    pub fn task(&mut self, name: &str, prog: usize, cpus: Option<CpuMask>) -> &mut TaskSpec {
        self.spec.tasks.push(task_spec(name, prog, cpus));
        self.spec.tasks.last_mut().unwrap()
    }

    pub fn metric(&mut self, name: &str) -> usize {
        self.spec.metric(name, "ns")
    }

    pub fn build(self) -> WorkloadSpec {
        self.spec.validate().expect("valid test workload");
        self.spec
    }
}

/// A v5.6 scenario on `m` running `w` for `duration_ms` (None = until all exit).
pub fn scenario(m: Machine, w: WorkloadSpec, duration_ms: Option<u64>) -> Scenario {
    let mut sc = bench::scenario("test", m, w, 1.0);
    sc.duration_ns = duration_ms.map(|d| d * MS);
    sc
}

/// The scenario of TOML `text`, read as a file `t.toml` (panics on an error).
pub fn scenario_of(text: &str) -> Scenario {
    Scenario::from_doc(
        Doc::parse(text, Path::new("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap()
}

/// Run `sc` (seed `seed`) with the ftrace text export; returns the result and the text.
pub fn run_ftrace(sc: &Scenario, seed: u64) -> (RunResult, String) {
    let opts = RunOpts {
        trace: true,
        ftrace: true,
        ..Default::default()
    };
    let (r, trace) = experiment::run(sc, seed, 0, &opts).unwrap();
    (r, trace.unwrap())
}

/// A trace's event counts (`count(tracepoint)`) against the run's own counters.
pub fn assert_counts_match_run(count: impl Fn(&str) -> u64, r: &RunResult) {
    assert_eq!(count("sched_switch"), r.metrics.context_switches);
    assert_eq!(count("sched_waking"), r.metrics.wakeups);
    assert_eq!(
        count("sched_migrate_task"),
        r.metrics.migrations.values().sum::<u64>()
    );
    assert_eq!(count("sched_process_fork"), r.tasks.len() as u64);
}

/// Build and run with invariant checking; returns the simulation for inspection.
pub fn run_sim(sc: &Scenario) -> (Sim<Observers>, Result<StopReason, SimError>) {
    let opts = RunOpts {
        check: true,
        ..RunOpts::default()
    };
    let mut sim = experiment::build(sc, sc.seed, 0, &opts);
    let r = sim.run(sc.duration_ns);
    (sim, r)
}

/// Run through `experiment::run` with invariant checking.
pub fn run_result(sc: &Scenario) -> RunResult {
    let opts = RunOpts {
        check: true,
        ..RunOpts::default()
    };
    experiment::run(sc, sc.seed, 0, &opts)
        .expect("run succeeds")
        .0
}

/// Pid of the task named `name`.
pub fn pid_of(sim: &Sim<Observers>, name: &str) -> usize {
    sim.kernel()
        .tasks()
        .iter()
        .position(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
}

/// When the task named `name` exited (`None`: still alive).
pub fn exit_ns(sim: &Sim<Observers>, name: &str) -> Option<u64> {
    sim.kernel().task(pid_of(sim, name) as u32).stats.exit_ns
}

pub fn runtime(sim: &Sim<Observers>, name: &str) -> u64 {
    sim.kernel()
        .task(pid_of(sim, name) as u32)
        .se
        .sum_exec_runtime
}

/// `m` without cpuidle states (idle CPUs poll: no exit latency). The CPUs start in
/// the idle loop, so with states the first wakeup on each CPU would pay the exit
/// latency of the deepest state; tests about CFS alone use this to keep the
/// timeline on the tick grid.
pub fn no_idle(mut m: Machine) -> Machine {
    for t in &mut m.idle_tables {
        t.clear();
    }
    m
}

/// The first space-delimited word after `pat` in `s`, parsed (panics when absent or
/// not a `T`): `word_after::<u32>(line, "state=")`.
pub fn word_after<T: std::str::FromStr>(s: &str, pat: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    s.split(pat)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{pat}` in {s}"))
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Compare `lines` with the committed golden file `golden` (rewritten first when
/// `SCHEDLAB_BLESS` is set); on a difference, panic with the first ones and how to
/// re-bless (`what`: what changed, `test`: the test binary's name).
pub fn check_golden(golden: &Path, lines: &str, what: &str, test: &str) {
    if std::env::var_os("SCHEDLAB_BLESS").is_some() {
        std::fs::write(golden, lines).unwrap();
    }
    let want = std::fs::read_to_string(golden).unwrap_or_default();
    if want != lines {
        let diff: Vec<String> = want
            .lines()
            .zip(lines.lines())
            .filter(|(a, b)| a != b)
            .take(20)
            .map(|(a, b)| format!("  was: {a}\n  now: {b}"))
            .collect();
        panic!(
            "{what} changed ({} vs {} lines); first differences:\n{}\n(re-bless with SCHEDLAB_BLESS=1 cargo test --test {test} and update docs/validation.md)",
            want.lines().count(),
            lines.lines().count(),
            diff.join("\n")
        );
    }
}
