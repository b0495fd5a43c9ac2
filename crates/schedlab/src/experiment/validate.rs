//! Validation against the real kernel on this machine (`schedlab validate host`).
//!
//! Reproducing a seed's table (`reproduce`) checks that the simulator tells the same
//! story as a patch's author; it cannot show that the simulator predicts what a real
//! kernel does, because the seeds' machines are not here. The machine the simulator
//! runs on *is* here, though, with a real Linux kernel scheduling real benchmarks. So
//! this module runs the real tools — `hackbench` (Debian's rt-tests), `perf bench
//! sched messaging` and `perf bench sched pipe` (linux-perf), `sysbench threads` —
//! several times each at several sizes, parses what they print (their real stdout,
//! with parsers written for it and tested on captured output, not the generators'
//! printing), then runs the same benchmarks with the same options and as many runs
//! (different seeds, `[run] noise` as in `reproduce`) in simulation on the machine
//! imported from this host's sysfs (`machine = "host"`), and prints real vs
//! simulated medians with the relative error.
//!
//! **What can be compared on a 2-CPU VM, and what cannot.** The host CI and this
//! project run on is a small virtual machine: two vCPUs, no SMT, one LLC, no cpuidle
//! or cpufreq in sysfs, and a hypervisor underneath that steals time and makes every
//! context switch and IPI more expensive than on bare metal. The sysfs import gives
//! the simulator the right *topology* (hence the right sched domains), but its costs
//! are the default x86 table — bare-metal syscall, pipe, socket and switch costs —
//! because sysfs says nothing about them. So an absolute error here measures the
//! cost table's distance from this VM as much as the placement model. What is
//! meaningful: the *trend* across sizes (hackbench 1 → 2 → 4 groups should scale
//! the same way), the ratio between benchmarks of different shapes (many-to-many
//! messaging vs one-to-one ping-pong vs yield-heavy threads), and, with
//! `--trace`, the scheduler-level statistics (wakeup latency, migrations, per-CPU
//! busy time, context switches) of one real trace against the simulated one
//! ([`crate::metrics::ftrace_stats`]). What is not: anything topology-dependent
//! (SMT, LLC, NUMA, asymmetric capacity: the host has none of it), idle-state
//! exit latencies and frequency (none published), and the other workers sharing the
//! machine (real runs are noisy; the median and range over runs are printed).
//!
//! The real tools run through [`Runner`], a one-method trait, so tests feed canned
//! outputs. A tool that is missing or fails gives a "skipped: \<why\>" row; the
//! command itself still succeeds. Nothing here is fitted: the simulator runs the
//! `host` machine exactly as imported.

use super::{run, RunOpts, Scenario};
use crate::config::Doc;
use crate::machine::Machine;
use crate::metrics::ftrace_stats::TraceStats;
use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs a real program and returns its stdout (or why it could not).
pub trait Runner {
    fn run(&self, program: &str, args: &[String]) -> Result<String, String>;
}

/// The real thing: spawn `program` with `args`, at most `timeout`.
#[derive(Clone, Debug)]
pub struct HostRunner {
    pub timeout: Duration,
}

impl Default for HostRunner {
    fn default() -> Self {
        HostRunner {
            timeout: Duration::from_secs(120),
        }
    }
}

impl Runner for HostRunner {
    fn run(&self, program: &str, args: &[String]) -> Result<String, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    format!("`{program}` not found (Debian: {})", package_of(program))
                } else {
                    format!("cannot start `{program}`: {e}")
                }
            })?;
        let t0 = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if t0.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "`{program}` did not finish within {} s",
                        self.timeout.as_secs()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(format!("waiting for `{program}`: {e}")),
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("reading `{program}`'s output: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let first = err
                .lines()
                .chain(stdout.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            return Err(format!("`{program}` failed ({}): {first}", out.status));
        }
        Ok(stdout)
    }
}

/// The Debian package that ships `program`.
pub(crate) fn package_of(program: &str) -> &'static str {
    match program {
        "hackbench" => "rt-tests",
        "perf" => "linux-perf",
        "sysbench" => "sysbench",
        "taskset" => "util-linux",
        _ => "unknown package",
    }
}

/// The benchmark programs `validate host` runs that this host lacks, with their
/// Debian packages (a row of a missing one is skipped).
pub fn missing_tools() -> Vec<(&'static str, &'static str)> {
    ["hackbench", "perf", "sysbench", "taskset"]
        .into_iter()
        .filter(|p| crate::experiment::oracle::guest::which(p).is_none())
        .map(|p| (p, package_of(p)))
        .collect()
}

/// Which real tool's output a row parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolKind {
    Hackbench,
    PerfMessaging,
    PerfPipe,
    SysbenchThreads,
}

/// hackbench (rt-tests) prints `Time: 0.162`: the seconds from the first sender's
/// start to the last receiver's end.
pub(crate) fn parse_hackbench(out: &str) -> Result<f64, String> {
    for l in out.lines() {
        if let Some(v) = l.trim().strip_prefix("Time:") {
            return num(v.trim(), "hackbench `Time:`");
        }
    }
    Err("no `Time:` line in hackbench's output".into())
}

/// `perf bench sched messaging` prints `     Total time: 0.151 [sec]`.
pub(crate) fn parse_perf_messaging(out: &str) -> Result<f64, String> {
    for l in out.lines() {
        if let Some(v) = l.trim().strip_prefix("Total time:") {
            let v = v.trim().trim_end_matches("[sec]").trim();
            return num(v, "perf `Total time:`");
        }
    }
    Err("no `Total time:` line in perf bench sched messaging's output".into())
}

/// `perf bench sched pipe` prints `Total time: …`, then `   25.320000 usecs/op`
/// (the round-trip time of one ping-pong) and `ops/sec`. Returns µs per op.
pub(crate) fn parse_perf_pipe(out: &str) -> Result<f64, String> {
    for l in out.lines() {
        if let Some(v) = l.trim().strip_suffix("usecs/op") {
            return num(v.trim(), "perf `usecs/op`");
        }
    }
    Err("no `usecs/op` line in perf bench sched pipe's output".into())
}

/// sysbench 1.0 prints, under `General statistics:`, `    total time:   4.8537s`.
pub(crate) fn parse_sysbench(out: &str) -> Result<f64, String> {
    for l in out.lines() {
        if let Some(v) = l.trim().strip_prefix("total time:") {
            return num(v.trim().trim_end_matches('s'), "sysbench `total time:`");
        }
    }
    Err("no `total time:` line in sysbench's output".into())
}

fn num(s: &str, what: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{what}: `{s}` is not a number")),
    }
}

impl ToolKind {
    pub fn parse(self, out: &str) -> Result<f64, String> {
        match self {
            ToolKind::Hackbench => parse_hackbench(out),
            ToolKind::PerfMessaging => parse_perf_messaging(out),
            ToolKind::PerfPipe => parse_perf_pipe(out),
            ToolKind::SysbenchThreads => parse_sysbench(out),
        }
    }

    /// The simulated tool's number with the same meaning (see the generators).
    fn sim_key(self) -> &'static str {
        match self {
            ToolKind::Hackbench => "time_s",
            ToolKind::PerfMessaging => "total_time_s",
            ToolKind::PerfPipe => "usecs_per_op",
            ToolKind::SysbenchThreads => "total_time_s",
        }
    }

    fn program(self) -> &'static str {
        match self {
            ToolKind::Hackbench => "hackbench",
            ToolKind::PerfMessaging | ToolKind::PerfPipe => "perf",
            ToolKind::SysbenchThreads => "sysbench",
        }
    }
}

/// One benchmark at one size: the real command line and the simulated `[workload]`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchCase {
    pub benchmark: String,
    pub size: String,
    pub metric: String,
    pub tool: ToolKind,
    /// Arguments after the program name.
    pub args: Vec<String>,
    /// The `[workload]` table of the simulated scenario (TOML lines).
    pub workload: String,
    /// False when `calibrate host` measures this benchmark's own operations (perf
    /// bench sched pipe is a pipe ping-pong): agreement there is not a validation.
    pub held_out: bool,
    /// Run on one CPU: the real tool under `taskset -c CPU`, the simulation on the
    /// machine cut down to its first CPU (`one_cpu`). Checks the costs without
    /// placement or cross-CPU effects.
    pub pin_cpu: Option<usize>,
}

impl BenchCase {
    /// The real command: program and arguments (through `taskset` when pinned).
    pub fn command(&self) -> (&'static str, Vec<String>) {
        match self.pin_cpu {
            None => (self.tool.program(), self.args.clone()),
            Some(c) => {
                let mut a = vec!["-c".to_string(), c.to_string(), self.tool.program().into()];
                a.extend(self.args.iter().cloned());
                ("taskset", a)
            }
        }
    }

    /// The same benchmark on one CPU.
    fn pinned(mut self, cpu: usize) -> BenchCase {
        self.size = format!("{}, 1 CPU", self.size);
        self.pin_cpu = Some(cpu);
        self
    }
}

/// `m` cut down to its first CPU (same kind, idle states, OPPs and costs): what a
/// task pinned to CPU 0 of the host sees, as far as one CPU can tell.
pub(crate) fn one_cpu(m: &Machine) -> Machine {
    use crate::machine::{Cpu, CpuMask, FreqDomain, MachineParts};
    let c0 = &m.cpus[0];
    let fd = &m.freq_domains[c0.freq_domain];
    Machine::new(MachineParts {
        name: format!("{} (CPU 0 only)", m.name),
        description: m.description.clone(),
        arch: m.arch,
        cpus: vec![Cpu {
            core: 0,
            cluster: 0,
            llc: 0,
            package: 0,
            node: 0,
            freq_domain: 0,
            ..c0.clone()
        }],
        numa_distance: vec![vec![10]],
        node_reclaim_distance: m.node_reclaim_distance,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: m.core_kinds.clone(),
        idle_tables: m.idle_tables.clone(),
        freq_domains: vec![FreqDomain {
            cluster_idle_mw: fd.cluster_idle_mw.clone(),
            cpus: CpuMask::of(0),
            opps: fd.opps.clone(),
            transition_latency_ns: fd.transition_latency_ns,
        }],
        cost: m.cost.clone(),
    })
    .expect("one CPU of a valid machine is a valid machine")
}

fn hackbench_case(groups: u32, loops: u32, pipe: bool) -> BenchCase {
    let mut args = vec![
        "-g".to_string(),
        groups.to_string(),
        "-l".into(),
        loops.to_string(),
    ];
    if pipe {
        args.push("-p".into());
    }
    BenchCase {
        benchmark: format!("hackbench process {}", if pipe { "pipe" } else { "socket" }),
        size: format!("-g {groups} -l {loops}"),
        metric: "Time (s)".into(),
        tool: ToolKind::Hackbench,
        args,
        workload: format!(
            "kind = \"hackbench\"\ngroups = {groups}\nloops = {loops}\npipe = {pipe}\nthreads = false\n"
        ),
        held_out: true,
        pin_cpu: None,
    }
}

fn perf_messaging_case(groups: u32, loops: u32) -> BenchCase {
    BenchCase {
        benchmark: "perf bench sched messaging".into(),
        size: format!("-g {groups} -l {loops}"),
        metric: "Total time (s)".into(),
        tool: ToolKind::PerfMessaging,
        args: ["bench", "sched", "messaging", "-g"]
            .iter()
            .map(|s| s.to_string())
            .chain([groups.to_string(), "-l".into(), loops.to_string()])
            .collect(),
        workload: format!("kind = \"perf-messaging\"\ngroups = {groups}\nloops = {loops}\n"),
        held_out: true,
        pin_cpu: None,
    }
}

fn perf_pipe_case(loops: u32, threaded: bool) -> BenchCase {
    let mut args: Vec<String> = ["bench", "sched", "pipe", "-l"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(loops.to_string());
    if threaded {
        args.push("-T".into());
    }
    BenchCase {
        benchmark: "perf bench sched pipe".into(),
        size: format!("-l {loops}{}", if threaded { " -T" } else { "" }),
        metric: "usecs/op".into(),
        tool: ToolKind::PerfPipe,
        args,
        workload: format!("kind = \"perf-pipe\"\nloops = {loops}\nthreaded = {threaded}\n"),
        held_out: false,
        pin_cpu: None,
    }
}

fn sysbench_case(threads: u32, events: u32) -> BenchCase {
    BenchCase {
        benchmark: "sysbench threads".into(),
        size: format!("--threads={threads} --events={events}"),
        metric: "total time (s)".into(),
        tool: ToolKind::SysbenchThreads,
        args: vec![
            "threads".into(),
            format!("--threads={threads}"),
            format!("--events={events}"),
            "--time=0".into(),
            "run".into(),
        ],
        workload: format!(
            "kind = \"sysbench-threads\"\nthreads = {threads}\nevents = {events}\ntime = 0\n"
        ),
        held_out: true,
        pin_cpu: None,
    }
}

/// The benchmarks `validate host` runs: several sizes of each, smaller with `quick`
/// (a few seconds of real time in all).
pub fn cases(quick: bool) -> Vec<BenchCase> {
    if quick {
        vec![
            hackbench_case(1, 20, false),
            hackbench_case(2, 20, false),
            hackbench_case(1, 20, true),
            perf_messaging_case(1, 20),
            perf_pipe_case(2000, false),
            sysbench_case(2, 50),
            hackbench_case(1, 20, false).pinned(0),
        ]
    } else {
        vec![
            hackbench_case(1, 200, false),
            hackbench_case(2, 200, false),
            hackbench_case(4, 200, false),
            hackbench_case(1, 200, true),
            hackbench_case(2, 200, true),
            hackbench_case(4, 200, true),
            perf_messaging_case(1, 200),
            perf_messaging_case(2, 200),
            perf_pipe_case(20000, false),
            perf_pipe_case(20000, true),
            sysbench_case(2, 500),
            sysbench_case(4, 500),
            hackbench_case(1, 200, false).pinned(0),
            hackbench_case(2, 200, false).pinned(0),
            hackbench_case(1, 200, true).pinned(0),
            perf_messaging_case(1, 200).pinned(0),
            perf_pipe_case(20000, false).pinned(0),
            sysbench_case(2, 500).pinned(0),
        ]
    }
}

/// Median, minimum and maximum of some runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(xs: &[f64]) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: crate::stats::percentile_sorted(&v, 50.0),
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        })
    }
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub size: String,
    pub metric: String,
    pub real: Option<Spread>,
    /// Simulated with the architecture's default cost table.
    pub sim: Option<Spread>,
    /// (sim median − real median) / real median, in %.
    pub error_pct: Option<f64>,
    /// Simulated with the measured costs (`--machine` / `--calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_measured: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_measured_pct: Option<f64>,
    /// See [`BenchCase::held_out`].
    pub held_out: bool,
    /// Why the row has no comparison.
    pub skipped: Option<String>,
    /// Real wall-clock seconds spent running the real tool.
    pub real_wall_s: f64,
}

/// `validate host`'s result.
#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub machine: String,
    pub nr_cpus: usize,
    pub runs: u32,
    pub quick: bool,
    pub noise: f64,
    /// The kernel preset simulated.
    pub kernel: String,
    /// Where the measured costs come from (`None`: default costs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_costs: Option<String>,
    pub rows: Vec<Row>,
    /// `--trace`: real vs simulated trace statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCompare>,
    pub version: String,
}

/// Options of a validation.
#[derive(Clone, Debug)]
pub struct ValidateOpts {
    pub runs: u32,
    pub quick: bool,
    /// `[run] noise` of the simulated runs.
    pub noise: f64,
    /// First seed of the simulated runs (seed, seed + 1, …).
    pub seed: u64,
    /// The kernel preset simulated (`v5.6`, the model's baseline, by default; `v6.6`
    /// is the EEVDF fair class of the kernels hosts run today).
    pub kernel: &'static str,
}

impl Default for ValidateOpts {
    fn default() -> Self {
        ValidateOpts {
            runs: 3,
            quick: false,
            noise: super::reproduce::DEFAULT_NOISE,
            seed: 1,
            kernel: "v5.6",
        }
    }
}

/// The simulated scenario of `case` on `machine`.
///
/// The scenario text names a built-in preset only so that it parses; the machine is
/// then replaced by `machine` (the imported host), before anything is built from it.
pub(crate) fn sim_scenario(
    case: &BenchCase,
    machine: &Machine,
    noise: f64,
    kernel: &str,
) -> Result<Scenario, crate::error::InputError> {
    let text = format!(
        "[machine]\npreset = \"juno-r0\"\n\n[kernel]\npreset = \"{kernel}\"\n\n[run]\nseed = 1\nnoise = {noise}\n\n[workload]\n{}",
        case.workload
    );
    let doc = Doc::parse(&text, Path::new("validate-host.toml"))?;
    let mut sc = Scenario::from_doc(doc, &Default::default())?;
    sc.machine = machine.clone();
    sc.name = format!("validate host: {} {}", case.benchmark, case.size);
    Ok(sc)
}

/// Simulated values of `case`: `runs` runs with seeds `seed..seed + runs`.
pub fn simulate(
    case: &BenchCase,
    machine: &Machine,
    opts: &ValidateOpts,
) -> Result<Vec<f64>, String> {
    let one;
    let machine = match case.pin_cpu {
        Some(_) => {
            one = one_cpu(machine);
            &one
        }
        None => machine,
    };
    let sc = sim_scenario(case, machine, opts.noise, opts.kernel).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    for i in 0..opts.runs as u64 {
        let (res, _) =
            run(&sc, opts.seed + i, 0, &RunOpts::default()).map_err(|e| e.to_string())?;
        let x = res
            .workload
            .tool
            .get(case.tool.sim_key())
            .copied()
            .ok_or_else(|| format!("the simulated run printed no `{}`", case.tool.sim_key()))?;
        v.push(x);
    }
    Ok(v)
}

/// Run the real tool of `case` `runs` times.
pub(crate) fn run_real(
    case: &BenchCase,
    runs: u32,
    runner: &dyn Runner,
) -> Result<Vec<f64>, String> {
    let mut v = Vec::new();
    for _ in 0..runs {
        let (prog, args) = case.command();
        let out = runner.run(prog, &args)?;
        v.push(case.tool.parse(&out)?);
    }
    Ok(v)
}

/// The relative error of `sim` against `real`, in %, of the medians.
fn error_pct(real: Option<Spread>, sim: Option<Spread>) -> Option<f64> {
    match (real, sim) {
        (Some(r), Some(s)) if r.median > 0.0 => Some((s.median - r.median) / r.median * 100.0),
        _ => None,
    }
}

/// Validate: real runs through `runner`, simulated runs on `machine` (default
/// costs) and, when given, on `measured` (the same host with measured costs).
/// `progress` is called once per finished row.
pub fn validate(
    opts: &ValidateOpts,
    machine: &Machine,
    measured: Option<&Machine>,
    runner: &dyn Runner,
    progress: &dyn Fn(&Row),
) -> Validation {
    let mut rows = Vec::new();
    // A tool that cannot start is skipped once, not retried at every size.
    let mut missing: Vec<(&'static str, String)> = Vec::new();
    for case in cases(opts.quick) {
        let prog = case.command().0;
        let mut row = Row {
            benchmark: case.benchmark.clone(),
            size: case.size.clone(),
            metric: case.metric.clone(),
            real: None,
            sim: None,
            error_pct: None,
            sim_measured: None,
            error_measured_pct: None,
            held_out: case.held_out,
            skipped: None,
            real_wall_s: 0.0,
        };
        if let Some((_, why)) = missing.iter().find(|(p, _)| *p == prog) {
            row.skipped = Some(why.clone());
        } else {
            let t0 = Instant::now();
            let real = run_real(&case, opts.runs, runner);
            row.real_wall_s = t0.elapsed().as_secs_f64();
            match real {
                Err(why) => {
                    if why.contains("not found") || why.contains("cannot start") {
                        missing.push((prog, why.clone()));
                    }
                    row.skipped = Some(why);
                }
                Ok(real) => {
                    let sims = simulate(&case, machine, opts).and_then(|d| {
                        measured
                            .map(|m| simulate(&case, m, opts))
                            .transpose()
                            .map(|m| (d, m))
                    });
                    match sims {
                        Err(why) => row.skipped = Some(format!("simulation failed: {why}")),
                        Ok((sim, sim_m)) => {
                            row.real = Spread::of(&real);
                            row.sim = Spread::of(&sim);
                            row.error_pct = error_pct(row.real, row.sim);
                            row.sim_measured = sim_m.as_deref().and_then(Spread::of);
                            row.error_measured_pct = error_pct(row.real, row.sim_measured);
                        }
                    }
                }
            }
        }
        progress(&row);
        rows.push(row);
    }
    Validation {
        machine: machine.name.clone(),
        nr_cpus: machine.nr_cpus(),
        runs: opts.runs,
        quick: opts.quick,
        noise: opts.noise,
        kernel: opts.kernel.to_string(),
        measured_costs: measured.map(|m| m.description.clone()),
        rows,
        trace: None,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// Where tracefs lives (and is mounted when it is not).
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The scheduler events recorded in a real trace.
pub const TRACE_EVENTS: [&str; 3] = ["sched_switch", "sched_waking", "sched_migrate_task"];

/// The benchmark traced by `--trace`.
pub(crate) fn trace_case(quick: bool) -> BenchCase {
    hackbench_case(1, if quick { 20 } else { 100 }, false)
}

/// Record a real ftrace of one run of `case` through tracefs at `root` (as root):
/// mount it if needed, enlarge the buffer, enable [`TRACE_EVENTS`], run, read
/// `trace`, then put everything back (events off, buffer emptied and resized, the
/// old `tracing_on`, unmounted if this mounted it) whether the run worked or not.
pub(crate) fn record_real_trace(
    case: &BenchCase,
    runner: &dyn Runner,
    root: &Path,
) -> Result<String, String> {
    let mut mounted = false;
    if !root.join("trace").exists() {
        if !root.is_dir() {
            return Err(format!(
                "{} does not exist (kernel without tracefs?)",
                root.display()
            ));
        }
        let o = Command::new("mount")
            .args(["-t", "tracefs", "nodev"])
            .arg(root)
            .output()
            .map_err(|e| format!("tracefs is not mounted and `mount` cannot run: {e}"))?;
        if !o.status.success() || !root.join("trace").exists() {
            return Err(format!(
                "tracefs is not mounted at {} and mounting it failed (needs root): {}",
                root.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        mounted = true;
    }
    let rd = |rel: &str| {
        std::fs::read_to_string(root.join(rel))
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("cannot read {}/{rel}: {e}", root.display()))
    };
    let wr = |rel: &str, v: &str| {
        std::fs::write(root.join(rel), v)
            .map_err(|e| format!("cannot write {}/{rel}: {e} (needs root)", root.display()))
    };
    let old_on = rd("tracing_on");
    let old_kb = rd("buffer_size_kb");
    let result = (|| {
        let _ = old_on.as_ref().map_err(Clone::clone)?;
        wr("tracing_on", "0")?;
        wr("trace", "")?;
        wr("buffer_size_kb", "32768")?;
        for ev in TRACE_EVENTS {
            wr(&format!("events/sched/{ev}/enable"), "1")?;
        }
        wr("tracing_on", "1")?;
        let out = runner.run(case.tool.program(), &case.args);
        wr("tracing_on", "0")?;
        out.map_err(|e| format!("the traced run failed: {e}"))?;
        rd("trace")
    })();
    // Reset, best effort.
    for ev in TRACE_EVENTS {
        let _ = wr(&format!("events/sched/{ev}/enable"), "0");
    }
    let _ = wr("trace", "");
    // `buffer_size_kb` reads like `7 (expanded: 1408)` before first use.
    if let Some(kb) = old_kb
        .as_deref()
        .ok()
        .and_then(|k| k.split_whitespace().next())
    {
        let _ = wr("buffer_size_kb", kb);
    }
    if let Ok(on) = &old_on {
        let _ = wr("tracing_on", on);
    }
    if mounted {
        let _ = Command::new("umount").arg(root).output();
    }
    result
}

/// `entries-in-buffer/entries-written: A/B` of a trace header: events lost when
/// A < B (the ring buffer overflowed).
pub(crate) fn lost_events(text: &str) -> Option<u64> {
    let l = text
        .lines()
        .find(|l| l.contains("entries-in-buffer/entries-written:"))?;
    let v = l.split(':').nth(1)?.split_whitespace().next()?;
    let (a, b) = v.split_once('/')?;
    Some(b.parse::<u64>().ok()?.saturating_sub(a.parse().ok()?))
}

/// Real vs simulated trace statistics of one benchmark, over several runs.
#[derive(Clone, Debug, Serialize)]
pub struct TraceCompare {
    pub benchmark: String,
    pub size: String,
    /// One entry per real run traced.
    pub real: Vec<TraceStats>,
    /// One per simulated run (seeds `seed`, `seed + 1`, ...), default costs.
    pub sim: Vec<TraceStats>,
    /// The same with the measured costs (empty without them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sim_measured: Vec<TraceStats>,
    /// Why there is no (or not every) real trace.
    pub skipped: Option<String>,
    /// Events each real trace lost (ring buffer overflow).
    pub real_lost_events: Vec<u64>,
}

/// The simulated ftrace text of `case` on `machine` (seed `seed`).
pub(crate) fn simulated_trace(
    case: &BenchCase,
    machine: &Machine,
    noise: f64,
    kernel: &str,
    seed: u64,
) -> Result<(String, super::RunResult), String> {
    let sc = sim_scenario(case, machine, noise, kernel).map_err(|e| e.to_string())?;
    let opts = RunOpts {
        trace: true,
        ftrace: true,
        ..Default::default()
    };
    let (res, text) = run(&sc, seed, 0, &opts).map_err(|e| e.to_string())?;
    Ok((text.unwrap_or_default(), res))
}

/// Record `opts.runs` real traces (tracefs at `root`) and as many simulated ones of
/// `trace_case` (on `machine`, and on `measured` when given), and take the same
/// statistics of each.
pub fn compare_traces(
    opts: &ValidateOpts,
    machine: &Machine,
    measured: Option<&Machine>,
    runner: &dyn Runner,
    root: &Path,
) -> TraceCompare {
    let case = trace_case(opts.quick);
    let mut tc = TraceCompare {
        benchmark: case.benchmark.clone(),
        size: case.size.clone(),
        real: Vec::new(),
        sim: Vec::new(),
        sim_measured: Vec::new(),
        skipped: None,
        real_lost_events: Vec::new(),
    };
    for i in 0..opts.runs {
        match record_real_trace(&case, runner, root) {
            Ok(text) => {
                tc.real_lost_events.push(lost_events(&text).unwrap_or(0));
                tc.real
                    .push(TraceStats::from_text(&text, Some("hackbench")));
            }
            Err(why) => {
                tc.skipped = Some(if i == 0 {
                    why
                } else {
                    format!("run {} of {}: {why}", i + 1, opts.runs)
                });
                break;
            }
        }
    }
    let mut sim_err = None;
    for (m, out) in [
        (Some(machine), &mut tc.sim),
        (measured, &mut tc.sim_measured),
    ] {
        let Some(m) = m else { continue };
        for i in 0..opts.runs as u64 {
            match simulated_trace(&case, m, opts.noise, opts.kernel, opts.seed + i) {
                Ok((text, _)) => out.push(TraceStats::from_text(&text, None)),
                Err(why) => {
                    sim_err = Some(why);
                    break;
                }
            }
        }
    }
    if let Some(why) = sim_err {
        tc.skipped
            .get_or_insert_with(String::new)
            .push_str(&format!("; simulation failed: {why}"));
    }
    tc
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    // Captured on this project's host (Debian 12: hackbench V 2.40 of rt-tests, perf 6.1.192,
    // sysbench 1.0.20), verbatim.
    const HACKBENCH: &str = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\nEach sender will pass 100 messages of 100 bytes\nTime: 0.162\n";
    const PERF_MESSAGING: &str = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n# 1 groups == 40 processes run\n\n     Total time: 0.151 [sec]\n";
    const PERF_PIPE: &str = "# Running 'sched/pipe' benchmark:\n# Executed 1000 pipe operations between two processes\n\n     Total time: 0.025 [sec]\n\n      25.320000 usecs/op\n          39494 ops/sec\n";
    const SYSBENCH: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nRunning the test with following options:\nNumber of threads: 2\nInitializing random number generator from current time\n\n\nInitializing worker threads...\n\nThreads started!\n\n\nGeneral statistics:\n    total time:                          4.8537s\n    total number of events:              2000\n\nLatency (ms):\n         min:                                    0.59\n         avg:                                    4.85\n         max:                                   60.89\n         95th percentile:                        6.79\n         sum:                                 9700.41\n\nThreads fairness:\n    events (avg/stddev):           1000.0000/24.00\n    execution time (avg/stddev):   4.8502/0.00\n\n";

    #[test]
    fn parsers_read_the_real_tools_output() {
        assert_eq!(parse_hackbench(HACKBENCH), Ok(0.162));
        assert_eq!(parse_perf_messaging(PERF_MESSAGING), Ok(0.151));
        assert_eq!(parse_perf_pipe(PERF_PIPE), Ok(25.32));
        assert_eq!(parse_sysbench(SYSBENCH), Ok(4.8537));
    }

    #[test]
    fn parsers_reject_other_output() {
        // Each parser on another tool's output, and on garbage numbers.
        assert!(parse_hackbench(PERF_MESSAGING).is_err());
        assert!(parse_perf_messaging(HACKBENCH).is_err());
        assert!(parse_perf_pipe(PERF_MESSAGING).is_err());
        assert!(parse_sysbench(HACKBENCH).is_err());
        assert!(parse_hackbench("Time: fast\n").is_err());
        assert!(parse_perf_pipe("  -1.0 usecs/op\n").is_err());
        // perf pipe's `Total time:` is not mistaken for messaging's metric by the
        // pipe parser: usecs/op is read, not the seconds.
        assert_eq!(parse_perf_messaging(PERF_PIPE), Ok(0.025));
    }

    #[test]
    fn spread_is_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 10.0, 4));
        assert!(Spread::of(&[]).is_none());
    }

    /// Canned outputs; `perf` missing, hackbench printing a value that depends on
    /// the group count.
    struct Canned {
        calls: RefCell<Vec<String>>,
    }

    impl Runner for Canned {
        fn run(&self, program: &str, args: &[String]) -> Result<String, String> {
            self.calls
                .borrow_mut()
                .push(format!("{program} {}", args.join(" ")));
            canned(program, args)
        }
    }

    /// hackbench prints a time that grows with the groups; sysbench garbage; the
    /// rest is missing. `taskset -c N prog ...` runs `prog ...`.
    fn canned(program: &str, args: &[String]) -> Result<String, String> {
        match program {
            "taskset" => canned(&args[2], &args[3..]),
            "hackbench" => {
                let g: f64 = args[1].parse().unwrap();
                Ok(format!("Running in process mode\nTime: {:.3}\n", 0.01 * g))
            }
            "sysbench" => Ok("General statistics:\n    total time: garbage\n".into()),
            _ => Err(format!("`{program}` not found (Debian: linux-perf)")),
        }
    }

    fn tiny_machine() -> Machine {
        crate::machine::presets::preset("juno-r0").unwrap()
    }

    /// Canned tools, quick sizes, two runs, the small machine.
    fn canned_quick() -> (Canned, ValidateOpts, Machine) {
        let r = Canned {
            calls: RefCell::new(vec![]),
        };
        let opts = ValidateOpts {
            runs: 2,
            quick: true,
            ..Default::default()
        };
        (r, opts, tiny_machine())
    }

    #[test]
    fn validate_with_canned_tools_compares_and_skips() {
        let (r, opts, m) = canned_quick();
        let seen = RefCell::new(0);
        let v = validate(&opts, &m, None, &r, &|_| *seen.borrow_mut() += 1);
        assert_eq!(*seen.borrow(), cases(true).len());
        assert_eq!(v.rows.len(), cases(true).len());
        let calls = r.calls.borrow();
        // perf is tried once (then remembered as missing), every other tool `runs`
        // times per case.
        assert_eq!(calls.iter().filter(|c| c.starts_with("perf")).count(), 1);
        assert_eq!(
            calls.iter().filter(|c| c.starts_with("hackbench")).count(),
            6
        );
        assert!(calls.contains(&"hackbench -g 1 -l 20 -p".to_string()));
        for row in &v.rows {
            match row.benchmark.as_str() {
                b if b.starts_with("hackbench") => {
                    assert!(row.skipped.is_none(), "{row:?}");
                    let g: f64 = row.size[3..4].parse().unwrap();
                    let real = row.real.unwrap();
                    assert_eq!((real.median, real.n), (0.01 * g, 2));
                    let sim = row.sim.unwrap();
                    assert!(sim.median > 0.0 && sim.n == 2);
                    let e = row.error_pct.unwrap();
                    assert!((e - (sim.median - real.median) / real.median * 100.0).abs() < 1e-9);
                }
                b if b.starts_with("perf") => {
                    assert!(row.skipped.as_ref().unwrap().contains("not found"));
                    assert!(row.real.is_none() && row.sim.is_none());
                }
                _ => assert!(row.skipped.as_ref().unwrap().contains("not a number")),
            }
        }
        let t = v.text();
        assert!(t.contains("skipped: `perf` not found"), "{t}");
        assert!(t.contains("hackbench process socket"), "{t}");
        assert_eq!(t.lines().filter(|l| l.contains('%')).count(), 4, "{t}");
        // The pinned row ran under taskset and simulated one CPU.
        assert!(calls.contains(&"taskset -c 0 hackbench -g 1 -l 20".to_string()));
        let pinned = v.rows.iter().find(|r| r.size.ends_with("1 CPU")).unwrap();
        let unpinned = &v.rows[0];
        assert_eq!(unpinned.size, "-g 1 -l 20");
        assert!(pinned.sim.unwrap().median > unpinned.sim.unwrap().median);
    }

    #[test]
    fn simulated_trace_statistics_equal_the_runs_counters() {
        let m = tiny_machine();
        let (text, res) = simulated_trace(&trace_case(true), &m, 0.05, "v5.6", 3).unwrap();
        let st = TraceStats::from_text(&text, None);
        let c = &res.metrics;
        assert_eq!(st.context_switches, c.context_switches);
        assert_eq!(st.wakeups, c.wakeups);
        assert_eq!(st.migrations, c.migrations.values().sum::<u64>());
        assert_eq!(st.latencies_ns.len() as u64, c.wakeup_latency_ns.count);
        assert!(st.context_switches > 100 && st.migrations > 0, "{st:?}");
        // The collector's histogram keeps 3 significant digits; the text's
        // timestamps are whole µs, as tracefs prints them (each rounded, so a
        // latency is off by at most 1 µs).
        let p50 = c.wakeup_latency_ns.p50 as f64;
        assert!(
            (st.latency_p50_ns as f64 - p50).abs() <= p50 * 0.002 + 1000.0,
            "{st:?} {p50}"
        );
        assert_eq!(st.unparsed, 0);
        // Busy time: the collector's fraction is over the whole run, the trace's
        // over its window; compare busy ns.
        for (cpu, &b) in st.busy_ns.iter().enumerate() {
            let want = c.cpu_busy[cpu] * res.sim_time_ns as f64;
            assert!(
                // Each interval's ends are rounded to the µs: the errors add up
                // as a random walk over the switches.
                (b as f64 - want).abs()
                    <= res.sim_time_ns as f64 * 2e-6 + 1000.0 * (st.context_switches as f64).sqrt(),
                "cpu {cpu}: {b} vs {want}"
            );
        }
    }

    #[test]
    fn lost_events_from_the_header() {
        assert_eq!(
            lost_events("# entries-in-buffer/entries-written: 12/15   #P:2\n"),
            Some(3)
        );
        assert_eq!(
            lost_events("# entries-in-buffer/entries-written: 12/12   #P:2\n"),
            Some(0)
        );
        assert_eq!(lost_events("no header"), None);
    }

    #[test]
    fn trace_without_tracefs_says_why_and_still_simulates() {
        let r = Canned {
            calls: RefCell::new(vec![]),
        };
        let d = std::env::temp_dir().join(format!("schedlab-no-tracefs-{}", std::process::id()));
        let opts = ValidateOpts {
            quick: true,
            ..Default::default()
        };
        let tc = compare_traces(&opts, &tiny_machine(), None, &r, &d);
        assert!(
            tc.skipped.as_ref().unwrap().contains("does not exist"),
            "{tc:?}"
        );
        assert!(tc.real.is_empty() && tc.sim.len() == opts.runs as usize);
        assert!(tc.sim_measured.is_empty());
        assert!(r.calls.borrow().is_empty(), "nothing run without a trace");
        let t = tc.text();
        assert!(
            t.contains("real trace skipped") && t.contains("context switches"),
            "{t}"
        );
    }

    #[test]
    fn simulated_hackbench_grows_with_groups_and_seeds_differ() {
        let m = tiny_machine();
        let opts = ValidateOpts {
            runs: 2,
            ..Default::default()
        };
        let one = simulate(&hackbench_case(1, 10, false), &m, &opts).unwrap();
        let two = simulate(&hackbench_case(2, 10, false), &m, &opts).unwrap();
        assert_ne!(one[0], one[1], "different seeds, noise on: runs differ");
        assert!(two[0] > one[0] && two[1] > one[1], "{one:?} {two:?}");
    }

    #[test]
    fn the_kernel_model_is_the_chosen_preset() {
        let m = tiny_machine();
        let case = hackbench_case(1, 10, false);
        let sc = sim_scenario(&case, &m, 0.05, "v6.6").unwrap();
        assert_eq!(sc.kernel_preset, "v6.6");
        assert!(sc.features.has(crate::sched::features::SchedFeat::EEVDF));
        let v56 = simulate(&case, &m, &ValidateOpts::default()).unwrap();
        let v66 = simulate(
            &case,
            &m,
            &ValidateOpts {
                kernel: "v6.6",
                ..Default::default()
            },
        )
        .unwrap();
        assert_ne!(v56, v66, "EEVDF schedules hackbench differently");
    }

    /// The same host with other costs: every simulated row gets a second column.
    #[test]
    fn measured_costs_add_a_column_and_mark_what_is_not_held_out() {
        let (r, opts, m) = canned_quick();
        let mut slow = m.clone();
        slow.cost.context_switch *= 4;
        slow.cost.unix_write *= 4;
        slow.cost.unix_read *= 4;
        slow.description = "slow costs".into();
        let v = validate(&opts, &m, Some(&slow), &r, &|_| {});
        assert_eq!(v.measured_costs.as_deref(), Some("slow costs"));
        for row in v.rows.iter().filter(|r| r.skipped.is_none()) {
            let (d, s) = (row.sim.unwrap(), row.sim_measured.unwrap());
            assert!(s.median > d.median, "{row:?}");
            let real = row.real.unwrap().median;
            let e = row.error_measured_pct.unwrap();
            assert!((e - (s.median - real) / real * 100.0).abs() < 1e-9);
        }
        assert!(v
            .rows
            .iter()
            .any(|r| !r.held_out && r.benchmark.contains("pipe")));
        let t = v.text();
        assert!(
            t.contains("sim, measured costs") && t.contains("slow costs"),
            "{t}"
        );
        // Two errors per compared row.
        let compared = v.rows.iter().filter(|r| r.skipped.is_none()).count();
        let two = t
            .lines()
            .filter(|l| l.matches('%').count() == 2 && l.starts_with("hackbench"))
            .count();
        assert_eq!(two, compared, "{t}");
        // Without measured costs, no second column and no footnote.
        let v = validate(&opts, &m, None, &r, &|_| {});
        let t = v.text();
        assert!(
            !t.contains("measured costs") && !t.contains("not held out"),
            "{t}"
        );
        let j = serde_json::to_value(&v).unwrap();
        assert!(j["rows"][0].get("sim_measured").is_none());
    }

    /// A directory that looks like tracefs; `hackbench` "runs" by writing a trace
    /// with one more switch each time into it.
    struct FakeTracefs {
        root: std::path::PathBuf,
        calls: RefCell<usize>,
    }

    impl Runner for FakeTracefs {
        fn run(&self, program: &str, _args: &[String]) -> Result<String, String> {
            assert_eq!(program, "hackbench");
            let k = {
                let mut c = self.calls.borrow_mut();
                *c += 1;
                *c
            };
            let mut t = String::from("# entries-in-buffer/entries-written: 9/9   #P:2\n");
            for i in 0..k {
                let ts = 100.0 + i as f64 * 1e-5;
                t.push_str(&format!(
                    "     hackbench-10    [000] d..2. {ts:.6}: sched_switch: prev_comm=hackbench prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=hackbench next_pid=11 next_prio=120\n"
                ));
            }
            std::fs::write(self.root.join("trace"), t).unwrap();
            Ok("Time: 0.010\n".into())
        }
    }

    #[test]
    fn traces_of_several_runs_give_median_min_max() {
        let root =
            std::env::temp_dir().join(format!("schedlab-fake-tracefs-{}", std::process::id()));
        for ev in TRACE_EVENTS {
            std::fs::create_dir_all(root.join(format!("events/sched/{ev}"))).unwrap();
            std::fs::write(root.join(format!("events/sched/{ev}/enable")), "0").unwrap();
        }
        for (f, v) in [
            ("trace", ""),
            ("tracing_on", "1"),
            ("buffer_size_kb", "1408"),
        ] {
            std::fs::write(root.join(f), v).unwrap();
        }
        let r = FakeTracefs {
            root: root.clone(),
            calls: RefCell::new(0),
        };
        let opts = ValidateOpts {
            runs: 3,
            quick: true,
            ..Default::default()
        };
        let m = tiny_machine();
        let tc = compare_traces(&opts, &m, Some(&m), &r, &root);
        assert_eq!(*r.calls.borrow(), 3);
        assert_eq!(tc.skipped, None);
        let sw: Vec<u64> = tc.real.iter().map(|t| t.context_switches).collect();
        assert_eq!(sw, vec![1, 2, 3]);
        assert_eq!(tc.sim.len(), 3);
        // Same machine, same seeds: the measured column repeats the default one.
        assert_eq!(tc.sim, tc.sim_measured);
        let t = tc.text();
        assert!(t.contains("over 3 runs"), "{t}");
        let line = t
            .lines()
            .find(|l| l.starts_with("context switches"))
            .unwrap();
        assert!(line.contains("2.000 [1.000–3.000]"), "{line}");
        assert!(t.contains("sim, measured costs"), "{t}");
        // The fake tracefs got its settings back.
        assert_eq!(
            std::fs::read_to_string(root.join("tracing_on")).unwrap(),
            "1"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("buffer_size_kb")).unwrap(),
            "1408"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
