//! `schedlab`: the command-line front end.
//!
//! Exit codes: 0 success; 2 bad input or usage (the message names the file, the line
//! and what is wrong); 1 an internal error (a simulation that could not go on, or a
//! panic: a schedlab bug, reported as such by the panic hook).
#![forbid(unsafe_code)]

mod bench;
mod oracle;
mod progress;
mod validate;

/// Print to stdout, ignoring a closed pipe (`schedlab list machines | head`).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}
/// `out!` with a newline.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}
pub(crate) use outln;

use clap::{Parser, Subcommand};
use schedlab::error::InputError;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario, TraceFormat};
use schedlab::machine;
use schedlab::sched::features::{SchedFeat, KERNEL_PRESETS};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "Simulate Linux fair-class task placement"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario and print a summary.
    Run {
        scenario: PathBuf,
        /// Seed (overrides `run.seed`).
        #[arg(long, value_parser = seed_arg())]
        seed: Option<u64>,
        /// Override any scenario key, e.g. `--set machine.preset=juno-r0`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Comma-separated scheduler features (`NAME` or `NO_NAME`).
        #[arg(long)]
        features: Option<String>,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
        /// Write the result JSON here (atomically).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Verify scheduler invariants after every event.
        #[arg(long)]
        check: bool,
        /// Write a trace here: `.txt` = ftrace text (the modelled kernel's tracefs
        /// layout, read by trappy; `--ftrace-layout` for LISA's parsers);
        /// `.perfetto-trace` / `.pftrace` = binary Perfetto
        /// protobuf (open in ui.perfetto.dev; also per-CPU counter tracks of util_avg,
        /// nr_running and select_task_rq_fair probes); `.dat` = trace-cmd `trace.dat`
        /// (`trace-cmd report`, KernelShark); any other extension = the decision
        /// trace.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Keep only trace events in START..END (simulated time; ns, or with a unit:
        /// `2ms..5ms`).
        #[arg(long, value_name = "START..END", requires = "trace")]
        trace_window: Option<String>,
        /// The ftrace text's columns: `v5.6` (four latency flags, `%16s-%-5d`, as
        /// v5.6 to v5.12 print them) or `v6` (five flags, `%16s-%-7d`, as recent
        /// kernels do), each with `-no-irq-info` for tracefs with `options/irq-info`
        /// off (no flags: the layout LISA's text parsers read); default: the
        /// modelled kernel preset's, with flags.
        #[arg(long, value_parser = schedlab::metrics::ftrace::Layout::NAMES, requires = "trace")]
        ftrace_layout: Option<String>,
        /// Also trace LISA's `sched_tp` module events the modelled kernel has
        /// (`sched_pelt_cfs`, `sched_pelt_se`, `sched_overutilized`; v5.9+:
        /// `sched_util_est_cfs`/`_se`; v5.10+ on arm64: `sched_cpu_capacity`).
        #[arg(long, requires = "trace")]
        sched_tp: bool,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
        /// List every feature switch, also those the modelled fair class lacks
        /// (EEVDF's under CFS, the sleeper credit's under EEVDF).
        #[arg(long, short, conflicts_with = "quiet")]
        verbose: bool,
    },
    /// Show a machine and the sched domains the kernel would build on it.
    Topology {
        /// A preset name, a machine TOML file, or `host`.
        machine: String,
        /// Import this sysfs snapshot directory instead (with `host`).
        #[arg(long)]
        sysfs: Option<PathBuf>,
        /// Also write the machine as a TOML machine file.
        #[arg(long)]
        export: Option<PathBuf>,
        /// Also write the machine as a LISA `PlatformInfo` YAML file (capacities,
        /// frequency domains, energy model, kernel version and config, rt-app
        /// calibration) for LISA's analyses and tests on schedlab's traces.
        #[arg(long, value_name = "FILE")]
        export_lisa: Option<PathBuf>,
        /// The kernel preset the platform file describes (`--export-lisa`).
        #[arg(long, default_value = "v5.6", requires = "export_lisa")]
        kernel: String,
        /// CONFIG_HZ of the platform file (`--export-lisa`); the scenario's `hz`.
        #[arg(long, default_value_t = 250, requires = "export_lisa")]
        hz: u32,
        /// rt-app's ns per loop on a capacity-1024 CPU (`--export-lisa`): the
        /// `calibration` LISA then writes into its rt-app files.
        #[arg(long, value_name = "NS", default_value_t = schedlab::report::lisa::DEFAULT_RTAPP_NS_PER_LOOP, requires = "export_lisa")]
        rtapp_calib: u64,
    },
    /// List machines, features, kernels or workloads.
    List {
        #[arg(value_parser = ["machines", "features", "kernels", "workloads"])]
        what: String,
    },
    /// Compare two arms of a scenario over paired runs (baseline vs patch).
    Compare {
        scenario: PathBuf,
        /// Arm A: comma-separated features (`NAME` / `NO_NAME`) and `key=value`
        /// overrides; empty = the scenario as written.
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        a: String,
        /// Arm B, same form.
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        b: String,
        /// Paired runs per arm (seeds `run.seed`, `run.seed + 1`, ...).
        #[arg(long, default_value_t = 20, value_parser = runs_arg())]
        runs: u32,
        /// Worker threads (default: all CPUs; at most 1024).
        #[arg(long, value_parser = jobs_arg())]
        jobs: Option<usize>,
        /// Overrides applied to both arms.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
        /// Also write the table as CSV here.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Also write the comparison as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report here (tables, boxplots, latency
        /// CDFs, per-CPU utilization, migrations, placement reasons, energy).
        #[arg(long)]
        report: Option<PathBuf>,
        /// Also write every run's scalars as Parquet here (arm, spec, seed, metric,
        /// value; the JSON's `per_seed`).
        #[arg(long)]
        parquet: Option<PathBuf>,
        /// Also trace each arm's first paired run (seed `run.seed`): `X.EXT` becomes
        /// `X.a.EXT` and `X.b.EXT`, in the format the extension names (as `run
        /// --trace`: `.txt` ftrace text, `.perfetto-trace` / `.pftrace` Perfetto,
        /// `.dat` trace-cmd).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Keep only trace events in START..END (simulated time).
        #[arg(long, value_name = "START..END", requires = "trace")]
        trace_window: Option<String>,
        /// The ftrace text's columns: `v5.6` (four latency flags, `%16s-%-5d`, as
        /// v5.6 to v5.12 print them) or `v6` (five flags, `%16s-%-7d`, as recent
        /// kernels do), each with `-no-irq-info` for tracefs with `options/irq-info`
        /// off (no flags: the layout LISA's text parsers read); default: the
        /// modelled kernel preset's, with flags.
        #[arg(long, value_parser = schedlab::metrics::ftrace::Layout::NAMES, requires = "trace")]
        ftrace_layout: Option<String>,
        /// Also trace LISA's `sched_tp` module events the modelled kernel has
        /// (`sched_pelt_cfs`, `sched_pelt_se`, `sched_overutilized`; v5.9+:
        /// `sched_util_est_cfs`/`_se`; v5.10+ on arm64: `sched_cpu_capacity`).
        #[arg(long, requires = "trace")]
        sched_tp: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Run a scenario over a grid of keys × seeds, resumable, into DIR.
    Sweep {
        scenario: PathBuf,
        /// An axis: `KEY=V1,V2,...` (repeat for more axes; in `kernel.features`
        /// values, `+` joins feature words).
        #[arg(long = "grid", value_name = "KEY=V1,V2,...", required = true)]
        grid: Vec<String>,
        /// Seeds per point (`run.seed`, `run.seed + 1`, ...).
        #[arg(long, default_value_t = 1, value_parser = runs_arg())]
        runs: u32,
        #[arg(long, value_parser = jobs_arg())]
        jobs: Option<usize>,
        /// Output directory (results.jsonl, results.csv); rerun to resume.
        #[arg(long)]
        out: PathBuf,
        /// Also write a self-contained HTML report of every point in DIR's results.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Also write DIR/results.parquet (the rows of results.csv).
        #[arg(long)]
        parquet: bool,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
        /// Run each (point, seed) as one task on this Dask cluster
        /// (`tcp://HOST:PORT`), through the Python package (`pip install .`;
        /// `SCHEDLAB_PYTHON` names the interpreter, default `python3`). Same files,
        /// same resume rules, same results as a local sweep.
        #[arg(long, value_name = "SCHEDULER", conflicts_with = "jobs")]
        dask: Option<String>,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Explain one placement: which functions ran, which CPUs they read, and why.
    Explain {
        scenario: PathBuf,
        /// The task: a pid, or a task name (any task of that name).
        #[arg(long)]
        task: String,
        /// Simulated time in ms; the task's placement closest to it is explained.
        #[arg(long)]
        at: f64,
        #[arg(long, value_parser = seed_arg())]
        seed: Option<u64>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[arg(long)]
        features: Option<String>,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
    },
    /// Run the seeds' own experiments (paired, baseline vs feature) and print
    /// them beside the numbers each seed reports.
    Reproduce {
        /// Seeds to reproduce (0-4, as `000` or `0`); default: all.
        seeds: Vec<String>,
        /// Paired runs per arm (at least 6 for the Wilcoxon test to call an effect).
        #[arg(long, default_value_t = 8, value_parser = runs_arg())]
        runs: u32,
        #[arg(long, value_parser = jobs_arg())]
        jobs: Option<usize>,
        /// Reduced mode: each seed's headline table, shortened runs.
        #[arg(long)]
        quick: bool,
        /// `[run] noise` for scenarios that set none.
        #[arg(long, default_value_t = experiment::reproduce::DEFAULT_NOISE)]
        noise: f64,
        /// Also write the tables here: `.md` = the text, anything else = HTML.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Also write every number as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Keep every finished run in DIR/runs.jsonl (one flushed line each): the
        /// same command with the same DIR reuses them, so an interrupted
        /// reproduction resumes where it stopped.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Run real benchmarks on this machine, then the same in simulation on the
    /// imported `host` machine, and print real vs simulated.
    Validate {
        #[arg(value_parser = ["host"])]
        target: String,
        /// Runs per benchmark and size, real and simulated.
        #[arg(long, default_value_t = 3, value_parser = runs_arg())]
        runs: u32,
        /// Small sizes only (a few seconds of real runs).
        #[arg(long)]
        quick: bool,
        /// Also record real ftraces of `--runs` hackbench runs and compare their
        /// statistics with the simulated traces (needs root and tracefs).
        #[arg(long)]
        trace: bool,
        /// Also simulate with the `[cost]` table of this machine file (written by
        /// `schedlab calibrate host`) on the imported host: a second simulated column.
        #[arg(long, value_name = "FILE", conflicts_with = "calibrate")]
        machine: Option<PathBuf>,
        /// Measure the costs first (`calibrate host` with the same --runs and
        /// --quick), then simulate with them as with --machine.
        #[arg(long)]
        calibrate: bool,
        /// The kernel preset to simulate (`schedlab list kernels`): `v5.6`, the
        /// model's baseline, or e.g. `v6.6` (EEVDF, the fair class of today's hosts).
        #[arg(long, default_value = "v5.6")]
        kernel: String,
        /// Also write every number as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Measure this machine's primitive costs with micro-benchmarks (syscall, pipe,
    /// socket, futex, yield, context switch, wakeups, IPIs) and write the imported
    /// host with those costs as a machine file.
    Calibrate {
        #[arg(value_parser = ["host"])]
        target: String,
        /// Repetitions of every micro-benchmark (median and range are reported).
        #[arg(long, default_value_t = 5, value_parser = runs_arg())]
        runs: u32,
        /// About 20× fewer calls per repetition (well under a second in all).
        #[arg(long)]
        quick: bool,
        /// Also measure each busy CPU's work rate with 1, 2, ... CPUs busy at once
        /// and write it as the machine's `vcpu_throughput` (with SMT throughput
        /// flat): for a guest whose vCPUs share host cores (the oracle's TCG guests).
        /// Where the all-busy spin stalls, also the host's CPUs and slice
        /// (`vcpu_host_cpus`, `vcpu_host_slice_us`).
        #[arg(long)]
        vcpu_throughput: bool,
        /// Write the calibrated machine file here (atomically).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Also write every number as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long, short)]
        quiet: bool,
    },
    /// A scenario on a real Linux kernel in a QEMU guest of its topology, and the
    /// decisions (domains, fork and wakeup placement, migrations, spread) compared
    /// with the simulation; an A/B of a switch on a real kernel against the same A/B
    /// in the model; or the recorded suites.
    Oracle {
        #[command(subcommand)]
        verb: OracleVerb,
    },
    /// Measure simulator speed on three fixed scenarios.
    Bench {
        /// Run only these (small, medium, large).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Scale the simulated duration (for quick checks).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

/// Options of every `oracle` verb that boots a guest.
#[derive(clap::Args)]
struct OracleBoot {
    /// Kernel and apt cache (default `$SCHEDLAB_ORACLE_CACHE`, else
    /// `$XDG_CACHE_HOME/schedlab/oracle`, else `~/.cache/schedlab/oracle`).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Wall-clock limit of one boot with all its jobs, in seconds (default 1200; at
    /// most a day).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: Option<u64>,
    /// Single-threaded TCG (slower boots, none of multi-threaded TCG's early crashes).
    #[arg(long)]
    single_thread: bool,
}

impl OracleBoot {
    fn args(&self) -> oracle::BootArgs {
        oracle::BootArgs {
            cache: self.cache.clone(),
            timeout_s: self.timeout,
            single_thread: self.single_thread,
        }
    }
}

#[derive(Subcommand)]
enum OracleVerb {
    /// Boot each kernel on the scenario's topology, run the workload's real program
    /// (rt-app with the same JSON, hackbench with the same options) under ftrace,
    /// simulate it on the imported guest machine, and compare the decisions.
    Run {
        scenario: PathBuf,
        /// Kernels: `5.10` (Debian bullseye), `6.12` (bookworm-backports), `6.12-scx`
        /// (6.12 with sched_ext, for `class = "ext"` scenarios: the kit
        /// tools/oracle-scx/build-kit.sh builds) or a bzImage path; repeat or
        /// separate with commas.
        #[arg(long, value_delimiter = ',', default_values_t = ["5.10".to_string(), "6.12".to_string()])]
        kernel: Vec<String>,
        /// The guest topology instead of the scenario's machine, e.g. `1s4c2t`,
        /// `2s4c2t:nodes=2`, `4s2c2t:nodes=4:dist=20,30,30,30,30,20` (the distances
        /// above the SLIT's diagonal, row by row).
        #[arg(long, value_name = "SPEC")]
        topology: Option<String>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
        /// Where the guest runs are kept (one directory per kernel).
        #[arg(long, default_value = "oracle-runs")]
        out: PathBuf,
        /// Skip the guest calibration (simulate with default x86 costs).
        #[arg(long)]
        no_calibrate: bool,
        /// Real runs of the workload in each boot, after one warm-up run: the
        /// comparison over runs needs several to know the real kernel's own spread.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
        repeat: u32,
        /// Also write every number as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        boot: OracleBoot,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Compare a kept guest run (a directory `oracle run` wrote) with the scenario's
    /// simulation again, without QEMU.
    Compare {
        dir: PathBuf,
        scenario: PathBuf,
        /// The guest job (default: the scenario's file stem).
        #[arg(long)]
        job: Option<String>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Compile and run the C scheduler the scenario names (`[kernel] scheduler =
        /// "x.bpf.c"`): native code, run contained (docs/sched-ext.md, "Trust").
        /// The shipped `scenarios/scx/` sources need no flag.
        #[arg(long)]
        allow_native_scheduler: bool,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[arg(long, short)]
        quiet: bool,
    },
    /// An A/B on a real kernel: both arms (sched_features words, tunables, or a
    /// kernel each) run in the guest, arms interleaved per repetition in one boot
    /// of their kernel, and simulated alike; per decision statistic, the real
    /// effect of B over A against the simulated one, each with its interval.
    Ab {
        scenario: PathBuf,
        /// Arm A: a `compare` SPEC (feature words such as `NO_WA_IDLE`,
        /// `kernel.tunables.NAME=VALUE`), and `kernel=K` for an arm on its own
        /// kernel. Empty: the kernel's boot defaults.
        #[arg(long = "a", value_name = "SPEC", default_value = "")]
        arm_a: String,
        /// Arm B (as --a).
        #[arg(long = "b", value_name = "SPEC")]
        arm_b: String,
        /// The kernel of arms that name none: `5.10`, `6.12`, `6.12-scx`, `5.10-seeds` (the seed
        /// kit: tools/oracle-seeds/build-kit.sh) or a bzImage path.
        #[arg(long, default_value = "5.10")]
        kernel: String,
        /// The guest topology instead of the scenario's machine (as `oracle run`).
        #[arg(long, value_name = "SPEC")]
        topology: Option<String>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Compile and run the C scheduler the scenario names (docs/sched-ext.md, "Trust").
        #[arg(long)]
        allow_native_scheduler: bool,
        /// Where the guest runs are kept (one directory per kernel booted).
        #[arg(long, default_value = "oracle-runs")]
        out: PathBuf,
        /// Skip the guest calibration (simulate with default x86 costs).
        #[arg(long)]
        no_calibrate: bool,
        /// Real runs of each arm (arms interleaved: A, B, A, B, ...).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
        repeat: u32,
        /// Boot nothing: compare the runs kept under --out by an earlier `oracle ab`.
        #[arg(long)]
        no_boot: bool,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        boot: OracleBoot,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check the recorded A/B suite (no QEMU), or re-record its switch cases with
    /// --record.
    AbSuite {
        /// The A/B suite file.
        #[arg(long, default_value = "scenarios/oracle/ab.toml")]
        suite: PathBuf,
        /// The oracle data directory (switch cases under `ab/`, kernel cases
        /// `from_suite` at its top).
        #[arg(long, default_value = "crates/schedlab/tests/data/oracle")]
        data: PathBuf,
        /// Boot and rewrite the recorded cases first.
        #[arg(long)]
        record: bool,
        /// Only this case.
        #[arg(long)]
        only: Option<String>,
        /// With --record, only this boot of each case (1 ..= the suite's `boots`).
        #[arg(long = "boot", value_parser = clap::value_parser!(u32).range(1..=10))]
        only_boot: Option<u32>,
        /// Also write the tables (Markdown) here.
        #[arg(long)]
        markdown: Option<PathBuf>,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report of every case here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        boot: OracleBoot,
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check the recorded validation suite (no QEMU), or re-record it with --record.
    Suite {
        /// The suite file.
        #[arg(long, default_value = "scenarios/oracle/suite.toml")]
        suite: PathBuf,
        /// Where the recorded bundles are.
        #[arg(long, default_value = "crates/schedlab/tests/data/oracle")]
        data: PathBuf,
        /// Boot every topology and kernel again and rewrite their bundles first.
        #[arg(long)]
        record: bool,
        /// Only this topology (a machine file stem of the suite).
        #[arg(long)]
        topology: Option<String>,
        /// Only this kernel.
        #[arg(long)]
        kernel: Option<String>,
        /// Also write the verdict tables (Markdown) here.
        #[arg(long)]
        markdown: Option<PathBuf>,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also write a self-contained HTML report of every case here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        boot: OracleBoot,
        #[arg(long, short)]
        quiet: bool,
    },
}

enum Failure {
    Input(InputError),
    Internal(String),
    /// A child process already printed its error; exit with this status.
    Reported(u8),
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e)
    }
}

/// `--runs`: 1 ..= [`experiment::MAX_RUNS`].
fn runs_arg() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(experiment::MAX_RUNS))
}

/// `--jobs`: 1 ..= 1024 worker threads (more than the machine's CPUs only costs
/// memory; 10^5 threads took a minute to spawn).
fn jobs_arg() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024)
}

/// `--seed`: 0 ..= 2^63 - 1, the seeds a scenario file can write (`run.seed` is a
/// TOML integer), so a seed given on the command line can be written in a file.
fn seed_arg() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(0..=i64::MAX as u64)
}

#[allow(clippy::too_many_arguments)]
fn compare_cmd(
    scenario: &Path,
    a: &str,
    b: &str,
    runs: u32,
    jobs: Option<usize>,
    (sets, native): (&[String], bool),
    [csv, json, report, parquet]: [Option<PathBuf>; 4],
    (trace, trace_window, layout, sched_tp): (
        Option<PathBuf>,
        Option<String>,
        Option<String>,
        bool,
    ),
    quiet: bool,
) -> Result<(), Failure> {
    use experiment::compare::{compare_detailed, load_arms, ArmSpec};
    schedlab::files::check_all(csv.iter().chain(&json).chain(&report).chain(&parquet))?;
    schedlab::files::check_all(
        trace
            .iter()
            .flat_map(|p| [arm_path(p, "a"), arm_path(p, "b")]),
    )?;
    let (a, b) = (ArmSpec::parse(a), ArmSpec::parse(b));
    let (sa, sb) = load_arms(experiment::Source::File(scenario), &a, &b, sets, native)?;
    let jobs = experiment::jobs_or_all(jobs);
    let bar = progress::Progress::new("compare", 2 * runs as u64, quiet);
    let progress = |ev: u64| bar.run(ev);
    let (cmp, details) =
        compare_detailed(&sa, &sb, &a, &b, runs, jobs, &progress).map_err(Failure::Internal)?;
    bar.finish();
    out!("{}", cmp.text());
    let write = |p: &Path, text: &str| save(p, text.as_bytes(), quiet);
    if let Some(p) = csv {
        write(&p, &cmp.csv())?;
    }
    if let Some(p) = json {
        let mut s =
            serde_json::to_string_pretty(&cmp).map_err(|e| Failure::Internal(e.to_string()))?;
        s.push('\n');
        write(&p, &s)?;
    }
    if let Some(p) = parquet {
        let bytes = schedlab::frame::parquet(&experiment::frames::compare_runs(&cmp));
        save(&p, &bytes, quiet)?;
    }
    if let Some(p) = report {
        let r = schedlab::report::CompareReport::new(cmp, &sa, &sb, details);
        write(&p, &r.html())?;
    }
    if let Some(p) = trace {
        // The first paired seed of each arm, traced: the same run the table's first
        // column pair comes from.
        let (opts, fmt) = trace_opts(
            Some(&p),
            trace_window.as_deref(),
            layout.as_deref(),
            false,
            sched_tp,
        )?;
        for (arm, sc) in [("a", &sa), ("b", &sb)] {
            let (_, t) = run_maybe_traced(sc, sc.seed, 0, &opts, fmt)
                .map_err(|e| Failure::Internal(format!("arm {arm} trace: {e}")))?;
            let out = arm_path(&p, arm);
            let t = t.ok_or_else(|| Failure::Internal("the traced run wrote no trace".into()))?;
            save(&out, &t, quiet)?;
        }
    }
    Ok(())
}

/// Write `bytes` to `p` atomically and, unless `quiet`, say so on stderr (`wrote
/// PATH (N bytes)`): every command names the files it wrote.
fn save(p: &Path, bytes: &[u8], quiet: bool) -> Result<(), InputError> {
    experiment::write_atomic(p, bytes)
        .map_err(|e| InputError::in_file(p, None, format!("cannot write: {e}")))?;
    if !quiet {
        eprintln!("wrote {} ({} bytes)", p.display(), bytes.len());
    }
    Ok(())
}

/// `X.EXT` -> `X.ARM.EXT` (the trace of one arm of a comparison).
fn arm_path(p: &Path, arm: &str) -> PathBuf {
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match p.extension() {
        Some(e) => format!("{stem}.{arm}.{}", e.to_string_lossy()),
        None => format!("{stem}.{arm}"),
    };
    p.with_file_name(name)
}

/// Run options for a trace written to `trace` (the format follows the extension:
/// `.txt` ftrace text, `.perfetto-trace` / `.pftrace` binary Perfetto with the
/// counter tracks, `.dat` trace-cmd, anything else the decision trace), and the
/// format.
fn trace_opts(
    trace: Option<&Path>,
    window: Option<&str>,
    layout: Option<&str>,
    check: bool,
    sched_tp: bool,
) -> Result<(RunOpts, TraceFormat), Failure> {
    let fmt = trace.map_or(TraceFormat::Decision, TraceFormat::of);
    let window = match window {
        None => None,
        Some(w) => Some(parse_trace_window(w)?),
    };
    let opts = RunOpts {
        check,
        trace: trace.is_some(),
        trace_window: window,
        ftrace: fmt == TraceFormat::Ftrace,
        // The names are clap's choices, so `by_name` cannot fail.
        ftrace_layout: layout.and_then(schedlab::metrics::ftrace::Layout::by_name),
        sched_tp,
    };
    Ok((opts, fmt))
}

/// One run, with its trace bytes when `opts` asks for one (in format `fmt`: the
/// binary writers take the raw event log).
fn run_maybe_traced(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
    fmt: TraceFormat,
) -> Result<(experiment::RunResult, Option<Vec<u8>>), schedlab::sim::SimError> {
    match fmt {
        TraceFormat::Perfetto if opts.trace => {
            experiment::run_perfetto(sc, seed, rep, opts).map(|(r, b)| (r, Some(b)))
        }
        TraceFormat::Dat if opts.trace => {
            let (r, log, tasks) = experiment::run_logged(sc, seed, rep, opts, false)?;
            let nr_cpus = sc.machine.nr_cpus();
            let bytes =
                schedlab::metrics::tracedat::render(&log, &tasks, nr_cpus).map_err(|e| {
                    schedlab::sim::SimError::Internal {
                        t_ns: sc.duration_ns.unwrap_or(0),
                        event: 0,
                        msg: e.to_string(),
                    }
                })?;
            Ok((r, Some(bytes)))
        }
        _ => experiment::run(sc, seed, rep, opts).map(|(r, t)| (r, t.map(String::into_bytes))),
    }
}

#[allow(clippy::too_many_arguments)]
fn reproduce_cmd(
    seeds: &[String],
    runs: u32,
    jobs: Option<usize>,
    quick: bool,
    noise: f64,
    report: Option<PathBuf>,
    json: Option<PathBuf>,
    out: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Failure> {
    use experiment::reproduce::{reproduce, total_runs, Progress, ReproOpts, JOURNAL, SEEDS};
    if !(noise.is_finite() && (0.0..1.0).contains(&noise)) {
        return Err(InputError::new("--noise must be in [0, 1)").into());
    }
    schedlab::files::check_all(report.iter().chain(&json))?;
    let mut list = vec![];
    for s in seeds {
        match s.parse::<u8>() {
            Ok(n) if SEEDS.contains(&n) => list.push(n),
            _ => {
                return Err(InputError::new(format!(
                    "unknown seed `{s}`: the seeds are 000, 001, 002, 003 and 004"
                ))
                .into())
            }
        }
    }
    if list.is_empty() {
        list = SEEDS.to_vec();
    }
    list.sort_unstable();
    list.dedup();
    let opts = ReproOpts {
        seeds: list,
        runs,
        jobs: experiment::jobs_or_all(jobs),
        quick,
        noise,
        out,
    };
    let bar = progress::Progress::new("reproduce", total_runs(&opts), quiet);
    let journal = opts.out.as_ref().map(|d| d.join(JOURNAL));
    let r = reproduce(&opts, &|p| match p {
        Progress::Resumed { reused, total } => {
            bar.skip(reused);
            if let Some(j) = &journal {
                bar.line(&format!(
                    "{reused} of {total} runs already in {}",
                    j.display()
                ));
            }
        }
        Progress::Run { events } => bar.run(events),
        Progress::Experiment {
            key,
            index,
            of,
            ran,
            reused,
        } => bar.line(&format!(
            "[{index}/{of}] {key}: {ran} runs{}",
            if reused > 0 {
                format!(", {reused} from the journal")
            } else {
                String::new()
            }
        )),
    })
    .map_err(Failure::Internal)?;
    bar.finish();
    let text = r.text();
    out!("{text}");
    let write = |p: &Path, body: &str| save(p, body.as_bytes(), quiet);
    if let Some(p) = report {
        let md = p.extension().is_some_and(|e| e == "md");
        write(&p, &if md { text } else { r.html() })?;
    }
    if let Some(p) = json {
        let mut s =
            serde_json::to_string_pretty(&r).map_err(|e| Failure::Internal(e.to_string()))?;
        s.push('\n');
        write(&p, &s)?;
    }
    Ok(())
}

/// `schedlab run`: the scenario's replications, their summaries, JSON and the first
/// one's trace.
fn run_cmd(
    scenario: &Path,
    ov: Overrides,
    json: Option<PathBuf>,
    check: bool,
    (trace, trace_window, layout, sched_tp): (
        Option<PathBuf>,
        Option<String>,
        Option<String>,
        bool,
    ),
    (quiet, verbose): (bool, bool),
) -> Result<(), Failure> {
    schedlab::files::check_all(json.iter().chain(&trace))?;
    let sc = Scenario::load(scenario, &ov)?;
    let (opts, fmt) = trace_opts(
        trace.as_deref(),
        trace_window.as_deref(),
        layout.as_deref(),
        check,
        sched_tp,
    )?;
    // Replication i of the seed: independent random streams, same scenario.
    let mut results = Vec::new();
    let mut first_trace = None;
    for rep in 0..sc.runs as u64 {
        let traced = RunOpts {
            trace: opts.trace && rep == 0,
            ..opts.clone()
        };
        let out = run_maybe_traced(&sc, sc.seed, rep, &traced, fmt);
        let (res, tr) = out.map_err(|e| {
            if e.is_input_error() {
                Failure::Input(InputError::in_file(scenario, None, e.to_string()))
            } else {
                Failure::Internal(e.to_string())
            }
        })?;
        if !quiet {
            if sc.runs > 1 {
                outln!("== run {} of {}", rep + 1, sc.runs);
            }
            out!("{}", res.summary_text_with(verbose, rep == 0));
        }
        if rep == 0 {
            if let Some((start, _)) = opts.trace_window.filter(|(s, _)| *s > res.sim_time_ns) {
                eprintln!(
                    "warning: --trace-window starts at {} ms, after the run ended at {} ms: \
                     the trace holds no events",
                    start as f64 / 1e6,
                    res.sim_time_ns as f64 / 1e6
                );
            }
            first_trace = tr;
        }
        results.push(res);
    }
    if let Some(p) = json {
        let text = if results.len() == 1 {
            results[0].to_json()
        } else {
            let mut s = serde_json::to_string_pretty(&results)
                .map_err(|e| Failure::Internal(e.to_string()))?;
            s.push('\n');
            s
        };
        save(&p, text.as_bytes(), quiet)?;
    }
    if let (Some(p), Some(t)) = (trace, first_trace) {
        save(&p, &t, quiet)?;
    }
    Ok(())
}

/// `schedlab topology`: the machine's domain hierarchy, and its machine file.
fn topology_cmd(
    machine: &str,
    sysfs: Option<&Path>,
    export: Option<PathBuf>,
    lisa: Option<(PathBuf, &str, u32, u64)>,
) -> Result<(), Failure> {
    let m = schedlab::machine::resolve(machine, sysfs)?;
    out!("{}", schedlab::report::topology_text(&m));
    if let Some(p) = export {
        save(&p, machine::file::machine_to_toml(&m).as_bytes(), false)?;
    }
    if let Some((p, kernel, hz, calib)) = lisa {
        let o = schedlab::report::lisa::LisaOpts::parse(kernel, hz, calib)
            .map_err(|e| InputError::new(format!("--export-lisa: {e}")))?;
        save(
            &p,
            schedlab::report::lisa::platform_info_yaml(&m, &o).as_bytes(),
            false,
        )?;
    }
    Ok(())
}

/// `schedlab list`: machines, features, kernels or workloads.
fn list_cmd(what: &str) {
    match what {
        "machines" => {
            for (n, d) in machine::presets::preset_names() {
                outln!("{n:<16} {d}");
            }
            outln!(
                "{:<16} imported from this machine's sysfs (`--sysfs DIR` for a snapshot)",
                "host"
            );
        }
        "features" => {
            outln!(
                "{:<22} {:<8} {:<10} description",
                "feature",
                "v5.6",
                "origin"
            );
            for &f in SchedFeat::ALL {
                outln!(
                    "{:<22} {:<8} {:<10} {}",
                    f.name(),
                    if f.v5_6_default() { "on" } else { "off" },
                    f.origin(),
                    f.doc()
                );
            }
        }
        "kernels" => {
            for k in KERNEL_PRESETS {
                outln!("{:<10} {}", k.name, k.description);
            }
        }
        _ => {
            for (k, d) in experiment::workload_kinds() {
                outln!("{k:<16} {d}");
            }
        }
    }
}

/// `schedlab sweep`: the grid's points into `out` (here on `jobs` threads, or on
/// a Dask cluster), and their HTML report.
fn sweep_cmd(
    scenario: &Path,
    grid: &[String],
    runs: u32,
    (jobs, dask): (Option<usize>, Option<&str>),
    out: &Path,
    (report, parquet): (Option<PathBuf>, bool),
    (quiet, native): (bool, bool),
) -> Result<(), Failure> {
    use experiment::sweep::{sweep, Axis};
    schedlab::files::check_writable_dir(out)?;
    schedlab::files::check_all(&report)?;
    let axes = grid
        .iter()
        .map(|g| Axis::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(addr) = dask {
        dask_sweep(scenario, grid, runs, addr, out, (parquet, native), quiet)?;
    } else {
        let jobs = experiment::jobs_or_all(jobs);
        let total = experiment::sweep::points(&axes).len() as u64 * runs as u64;
        let bar = progress::Progress::new("sweep", total, quiet);
        let summary = sweep(scenario, &axes, runs, jobs, out, parquet, native, &|| {
            bar.run(0)
        })?;
        bar.finish();
        if !quiet {
            outln!(
                "{} points x {} seeds: {} runs, {} already done, {} run now -> {}",
                summary.points,
                runs,
                summary.runs_total,
                summary.already_done,
                summary.ran,
                out.display()
            );
        }
    }
    let records = experiment::sweep::read_done(&out.join("results.jsonl"))?;
    if experiment::sweep::seeds_identical(&records) {
        eprintln!(
            "warning: every point's seeds gave identical results: the scenario has no source \
             of run-to-run variation (add `--grid run.noise=0.05` or set `run.noise`), so the \
             seeds are copies of one run"
        );
    }
    if let Some(p) = report {
        let title = scenario.display().to_string();
        let html = schedlab::report::sweep_html(&title, &axes, &records);
        save(&p, html.as_bytes(), quiet)?;
    }
    Ok(())
}

/// `sweep --dask`: hand the sweep to the Python package's Dask driver
/// (`python3 -m schedlab.dask_sweep`), which runs the same plan (the library's
/// `SweepPlan`) with each (point, seed) a Dask task. Its exit status is ours.
fn dask_sweep(
    scenario: &Path,
    grid: &[String],
    runs: u32,
    addr: &str,
    out: &Path,
    (parquet, native): (bool, bool),
    quiet: bool,
) -> Result<(), Failure> {
    let python = std::env::var_os("SCHEDLAB_PYTHON").unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "schedlab.dask_sweep", "--scheduler", addr])
        .arg(scenario)
        .arg("--runs")
        .arg(runs.to_string())
        .arg("--out")
        .arg(out);
    for g in grid {
        cmd.arg("--grid").arg(g);
    }
    if parquet {
        cmd.arg("--parquet");
    }
    if native {
        cmd.arg(experiment::NATIVE_FLAG);
    }
    if quiet {
        cmd.arg("--quiet");
    }
    let status = cmd.status().map_err(|e| {
        Failure::Internal(format!(
            "--dask: cannot start `{}` ({e}); install the Python package (`pip install .`) \
             or set SCHEDLAB_PYTHON to an interpreter that has it",
            python.to_string_lossy()
        ))
    })?;
    match status.code() {
        Some(0) => Ok(()),
        code => Err(Failure::Reported(code.map_or(1, |c| c.clamp(1, 255) as u8))),
    }
}

/// `schedlab explain`: why the task was placed where it was, near `at` ms.
fn explain_cmd(scenario: &Path, task: &str, at: f64, ov: Overrides) -> Result<(), Failure> {
    let at_ns =
        schedlab::engine::checked_ns_f64(at, schedlab::engine::NSEC_PER_MSEC).ok_or_else(|| {
            InputError::new(format!(
                "--at {at:?}: must be a non-negative time in ms, at most {} s",
                schedlab::engine::MAX_TIME_NS / schedlab::engine::NSEC_PER_SEC
            ))
        })?;
    let sc = Scenario::load(scenario, &ov)?;
    let sel = experiment::explain::TaskSel::parse(task);
    match experiment::explain::explain(&sc, &sel, at_ns) {
        Ok(Ok(e)) => out!("{}", e.text()),
        Ok(Err(experiment::explain::Missing::NoPlacement)) => {
            return Err(InputError::new(format!(
                "task `{task}` has no placement within 20 ms of t = {at} ms"
            ))
            .into())
        }
        Ok(Err(experiment::explain::Missing::NoTask(names))) => {
            return Err(InputError::new(format!(
                "--task `{task}`: no such task in this run (a pid, a name, or a group's name \
                 such as `client` for client-0, client-1, ...); its tasks: {}",
                names.join(", ")
            ))
            .into())
        }
        Err(e) if e.is_input_error() => {
            return Err(InputError::in_file(scenario, None, e.to_string()).into())
        }
        Err(e) => return Err(Failure::Internal(e.to_string())),
    }
    Ok(())
}

/// `schedlab oracle VERB`, dispatched to the [`oracle`] module.
fn oracle_cmd(verb: OracleVerb) -> Result<(), Failure> {
    match verb {
        OracleVerb::Run {
            scenario,
            kernel,
            topology,
            sets,
            out,
            no_calibrate,
            repeat,
            json,
            report,
            boot,
            quiet,
            allow_native_scheduler,
        } => oracle::run_cmd(
            &scenario,
            &kernel,
            topology.as_deref(),
            (sets, allow_native_scheduler),
            &out,
            no_calibrate,
            repeat,
            oracle::Outputs { json, report },
            &boot.args(),
            quiet,
        ),
        OracleVerb::Compare {
            dir,
            scenario,
            job,
            sets,
            json,
            report,
            quiet,
            allow_native_scheduler,
        } => oracle::compare_cmd(
            &dir,
            &scenario,
            job,
            (sets, allow_native_scheduler),
            oracle::Outputs { json, report },
            quiet,
        ),
        OracleVerb::Ab {
            scenario,
            arm_a,
            arm_b,
            kernel,
            topology,
            sets,
            allow_native_scheduler,
            out,
            no_calibrate,
            repeat,
            no_boot,
            json,
            report,
            boot,
            quiet,
        } => oracle::ab_cmd(
            &scenario,
            [&arm_a, &arm_b],
            &kernel,
            topology.as_deref(),
            (sets, allow_native_scheduler),
            &out,
            no_calibrate,
            repeat,
            no_boot,
            oracle::Outputs { json, report },
            &boot.args(),
            quiet,
        ),
        OracleVerb::AbSuite {
            suite,
            data,
            record,
            only,
            only_boot,
            markdown,
            json,
            report,
            boot,
            quiet,
        } => oracle::ab_suite_cmd(
            &suite,
            &data,
            record,
            (only.as_deref(), only_boot),
            markdown,
            oracle::Outputs { json, report },
            &boot.args(),
            quiet,
        ),
        OracleVerb::Suite {
            suite,
            data,
            record,
            topology,
            kernel,
            markdown,
            json,
            report,
            boot,
            quiet,
        } => oracle::suite_cmd(
            &suite,
            &data,
            record,
            topology,
            kernel,
            markdown,
            oracle::Outputs { json, report },
            &boot.args(),
            quiet,
        ),
    }
}

fn real_main() -> Result<(), Failure> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            scenario,
            seed,
            sets,
            features,
            json,
            check,
            trace,
            trace_window,
            ftrace_layout,
            sched_tp,
            quiet,
            verbose,
            allow_native_scheduler,
        } => {
            let ov = Overrides {
                sets,
                features,
                seed,
                native_scheduler: allow_native_scheduler,
            };
            run_cmd(
                &scenario,
                ov,
                json,
                check,
                (trace, trace_window, ftrace_layout, sched_tp),
                (quiet, verbose),
            )?
        }
        Cmd::Topology {
            machine,
            sysfs,
            export,
            export_lisa,
            kernel,
            hz,
            rtapp_calib,
        } => topology_cmd(
            &machine,
            sysfs.as_deref(),
            export,
            export_lisa.map(|p| (p, kernel.as_str(), hz, rtapp_calib)),
        )?,
        Cmd::List { what } => list_cmd(&what),
        Cmd::Compare {
            scenario,
            a,
            b,
            runs,
            jobs,
            sets,
            csv,
            json,
            report,
            parquet,
            trace,
            trace_window,
            ftrace_layout,
            sched_tp,
            quiet,
            allow_native_scheduler,
        } => compare_cmd(
            &scenario,
            &a,
            &b,
            runs,
            jobs,
            (&sets, allow_native_scheduler),
            [csv, json, report, parquet],
            (trace, trace_window, ftrace_layout, sched_tp),
            quiet,
        )?,
        Cmd::Sweep {
            scenario,
            grid,
            runs,
            jobs,
            out,
            report,
            parquet,
            dask,
            quiet,
            allow_native_scheduler,
        } => sweep_cmd(
            &scenario,
            &grid,
            runs,
            (jobs, dask.as_deref()),
            &out,
            (report, parquet),
            (quiet, allow_native_scheduler),
        )?,
        Cmd::Reproduce {
            seeds,
            runs,
            jobs,
            quick,
            noise,
            report,
            json,
            out,
            quiet,
        } => reproduce_cmd(&seeds, runs, jobs, quick, noise, report, json, out, quiet)?,
        Cmd::Explain {
            scenario,
            task,
            at,
            seed,
            sets,
            features,
            allow_native_scheduler,
        } => {
            let ov = Overrides {
                sets,
                features,
                seed,
                native_scheduler: allow_native_scheduler,
            };
            explain_cmd(&scenario, &task, at, ov)?
        }
        Cmd::Oracle { verb } => oracle_cmd(verb)?,
        Cmd::Validate {
            target: _,
            runs,
            quick,
            trace,
            json,
            quiet,
            machine,
            calibrate,
            kernel,
        } => validate::run(
            validate::Args {
                runs,
                quick,
                trace,
                machine,
                calibrate,
                kernel,
                json,
            },
            quiet,
        )?,
        Cmd::Calibrate {
            target: _,
            runs,
            quick,
            vcpu_throughput,
            out,
            json,
            quiet,
        } => validate::calibrate_cmd(runs, quick, vcpu_throughput, out, json, quiet)?,
        Cmd::Bench { only, scale } => {
            experiment::bench::check_args(&only, scale)?;
            bench::run(&only, scale).map_err(Failure::Internal)?
        }
    }
    Ok(())
}

/// A panic is a schedlab bug, whatever input caused it: say so, where, and exit 1
/// (the internal-error status) rather than Rust's 101, so the exit codes stay 0, 1
/// and 2. `RUST_BACKTRACE=1` still prints the backtrace.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "internal error: schedlab panicked{at}: {msg} (a schedlab bug: please report it with the scenario and command)"
        );
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            default(info);
        }
        std::process::exit(1);
    }));
}

fn main() -> ExitCode {
    install_panic_hook();
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Internal(e)) => {
            eprintln!("internal error: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Reported(code)) => ExitCode::from(code),
    }
}

/// `--trace-window START..END`: each bound a bare number of ns or a duration with a
/// unit (`500us`, `2ms`, `1s`).
fn parse_trace_window(w: &str) -> Result<(u64, u64), InputError> {
    let bad = |m: String| InputError::new(format!("--trace-window {w:?}: {m}"));
    let (a, b) = w
        .split_once("..")
        .ok_or_else(|| bad("expected START..END, e.g. 2ms..5ms or 0..1000000".into()))?;
    let one = |s: &str| -> Result<u64, InputError> {
        let s = s.trim();
        match s.parse::<u64>() {
            Ok(v) => Ok(v),
            Err(_) => schedlab::workload::dist::parse_duration_ns(s).map_err(bad),
        }
    };
    let (a, b) = (one(a)?, one(b)?);
    if a > b {
        return Err(bad("START is after END".into()));
    }
    Ok((a, b))
}
