//! The real kernel as oracle (`schedlab oracle`): the same scenario in a QEMU guest
//! of the scenario's topology, and the decisions of both compared.
//!
//! schedlab claims to place tasks as Linux does. On the machine it runs on, that can
//! be checked against the host's kernel (`validate host`), but the decisions that
//! matter most — where a new task lands, which CPU a wakee gets, how fast load
//! balancing spreads work over cores, LLCs and nodes — depend on a topology the
//! host does not have. An unmodified Linux kernel in a QEMU guest, emulated
//! instruction by instruction (TCG), builds its sched domains from whatever
//! topology QEMU describes (`-smp sockets,cores,threads`, `-numa`), and its
//! scheduler then decides on that topology for real. This module makes that
//! kernel the oracle:
//!
//! 1. [`guest::qemu`]: the scenario's machine as a QEMU x86 topology (or a refusal that
//!    says why QEMU cannot express it);
//! 2. [`guest`]: a Debian kernel (5.10, the closest packaged one to the seeds' v5.6,
//!    and 6.12) booted with an initramfs that runs the workload's real program
//!    ([`workload`]) under ftrace and brings back the trace, the guest's sysfs and
//!    its sched domains;
//! 3. the guest's machine imported from that sysfs by the same code as any host,
//!    and — when the run measured them — with the guest's own primitive costs
//!    (`schedlab calibrate host` run inside the guest: an emulated kernel is a very
//!    slow machine, and the work between two scheduler decisions must be as long,
//!    relative to ticks, PELT and balance intervals, in the simulation as in the
//!    guest), simulated with the kernel preset that models the guest's release;
//! 4. [`domains`]: the guest's domain chains against schedlab's, per CPU, exactly;
//! 5. [`decisions`]: both traces reduced to placement decisions in topology terms
//!    (fork levels, wakeup classes, migrations per level and mechanism, spread,
//!    occupancy), one family per file, and compared statistic by statistic: over
//!    the real runs and simulated seeds with an interval and a verdict
//!    ([`decisions::verdicts`]), and for the first run of each by fixed bands.
//!
//! A case is loaded once ([`OracleCase`]) and handed on: its guest job, the check
//! of its workload before any boot, and its comparison all use the same value.
//!
//! Times are compared like with like as far as the model of the guest goes: a
//! guest's kernel paths cost far more guest time than on hardware (the calibrated
//! costs), and its vCPUs share the host's cores (the calibrated `vcpu_throughput`,
//! [`crate::machine::MachineParts::vcpu_throughput`]).
//!
//! [`scx`] runs a sched_ext scenario's BPF scheduler in the guest too (a kernel
//! built with sched_ext, `--kernel 6.12-scx`), so both sides run the same policy.
//!
//! [`suite`] is the recorded validation suite: cases across topologies and both
//! kernels, whose guest runs are committed (compressed) so that `cargo test`
//! checks the simulator against real kernels without QEMU.

pub mod ab;
pub mod ab_suite;
pub mod decisions;
pub mod domains;
pub mod guest;
pub mod knobs;
pub mod scx;
pub mod seeds;
pub mod suite;
pub mod workload;

use super::{Overrides, RunOpts, Scenario};
use crate::machine::{self, Machine};
use crate::sched::features::KernelPreset;
use decisions::verdicts;
use decisions::{Comparison, DecisionOpts, Decisions, TaskFilter};
use domains::{DomainComparison, DomainDump};
use serde::Serialize;
use std::path::{Path, PathBuf};
use workload::GuestWorkload;

/// The result directory of repetition `r` (≥ 2) of job `job` (the first run is the
/// job's own).
pub fn repetition_name(job: &str, r: u32) -> String {
    format!("{job}.r{r}")
}

/// The guest job that measures the guest's primitive costs, when a run has one.
pub const CALIBRATE_JOB: &str = "calibrate";

/// The guest command of [`CALIBRATE_JOB`]: the machine file goes to stdout.
pub const CALIBRATE_COMMAND: &str = "chmod +x schedlab && ./schedlab calibrate host --quick --runs 3 --vcpu-throughput --out guest.toml -q && cat guest.toml";

/// The guest calibration job: `exe` (a schedlab binary; its libraries are glibc's,
/// which the guest has for rt-app) shipped as the job's file, stripped of debug
/// information when `strip` is at hand, and run as `calibrate host`.
pub fn calibrate_job(exe: &Path) -> Result<guest::GuestJob, String> {
    let tmp = std::env::temp_dir().join(format!("schedlab-guest-exe-{}", std::process::id()));
    std::fs::copy(exe, &tmp).map_err(|e| format!("copying {}: {e}", exe.display()))?;
    let _ = std::process::Command::new("strip")
        .arg(&tmp)
        .stderr(std::process::Stdio::null())
        .status();
    let bytes = std::fs::read(&tmp).map_err(|e| format!("{}: {e}", tmp.display()));
    let _ = std::fs::remove_file(&tmp);
    Ok(guest::GuestJob {
        name: CALIBRATE_JOB.into(),
        command: CALIBRATE_COMMAND.into(),
        files: vec![("schedlab".into(), bytes?)],
    })
}

/// A guest run's artifacts (see [`guest`] for the layout).
#[derive(Clone, Debug)]
pub struct Artifacts {
    pub dir: PathBuf,
    /// `uname -r` of the guest.
    pub release: String,
}

impl Artifacts {
    pub fn open(dir: &Path) -> Result<Artifacts, String> {
        let p = dir.join("uname_r");
        let release = std::fs::read_to_string(&p)
            .map_err(|e| format!("{}: {e} (not a guest run's directory?)", p.display()))?
            .trim()
            .to_string();
        Ok(Artifacts {
            dir: dir.to_path_buf(),
            release,
        })
    }

    /// The kernel preset that models this guest's kernel.
    pub fn preset(&self) -> Result<&'static str, String> {
        workload::preset_for_release(&self.release)
    }

    /// A job's ftrace text.
    pub fn trace(&self, job: &str) -> Result<String, String> {
        let p = self.dir.join("jobs").join(job).join("trace.txt");
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The runs of `job` in this guest run: the job itself, then its repetitions
    /// `job.r2`, `job.r3`, ... (those recorded).
    pub fn repetitions(&self, job: &str) -> Vec<String> {
        let mut out = vec![job.to_string()];
        for r in 2.. {
            let name = repetition_name(job, r);
            if !self.dir.join("jobs").join(&name).join("trace.txt").exists() {
                break;
            }
            out.push(name);
        }
        out
    }

    /// A job's stdout (and stderr).
    pub fn job_stdout(&self, job: &str) -> Result<String, String> {
        let p = self.dir.join("jobs").join(job).join("stdout");
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The guest's machine as the simulator sees it, and where its costs come from:
    /// the calibration job's machine file when the run has one (topology imported
    /// in the guest, costs measured there), else the sysfs snapshot with the
    /// default x86 cost table.
    pub fn machine(&self) -> Result<(Machine, MachineSource), String> {
        let cal = self.dir.join("jobs").join(CALIBRATE_JOB).join("stdout");
        if cal.exists() {
            let m = machine::file::load_machine_file(&cal).map_err(|e| e.to_string())?;
            return Ok((m, MachineSource::Calibrated(cal)));
        }
        let root = self.dir.join("sysfs");
        let m = machine::sysfs::import_sysfs_with_arch(&root, machine::Arch::X86)
            .map_err(|e| e.to_string())?;
        Ok((m, MachineSource::Sysfs(root)))
    }

    /// The guest's domain chains against schedlab's on the imported machine.
    pub fn domains(&self) -> Result<DomainComparison, String> {
        let real = DomainDump::read_dir(&self.dir.join("domains"), &self.release)?;
        let preset = KernelPreset::by_name(self.preset()?).expect("release presets exist");
        let (m, _) = self.machine()?;
        Ok(domains::compare_with_model(
            &real,
            &m,
            &preset.topology_opts(),
            &self.release,
        ))
    }
}

/// A scenario as the oracle runs it, loaded once (after its `--set`s) and handed
/// on: the scenario itself, the real program its workload runs in a guest, and
/// for a sched_ext scenario the scheduler loaded around that program.
#[derive(Clone, Debug)]
pub struct OracleCase {
    /// The scenario file (its simulations on a guest's machine load it again, with
    /// that machine and the guest kernel's preset as overrides).
    pub path: PathBuf,
    pub sets: Vec<String>,
    pub scenario: Scenario,
    pub workload: GuestWorkload,
    pub scheduler: Option<scx::GuestScheduler>,
}

impl OracleCase {
    /// Load the scenario at `path` with `sets`, and translate its workload (and its
    /// sched_ext scheduler) for a guest: refused when it has no real counterpart;
    /// `native_scheduler`: the user's word that a C scheduler may run
    /// ([`Overrides::native_scheduler`]).
    pub fn load(
        path: &Path,
        sets: &[String],
        native_scheduler: bool,
    ) -> Result<OracleCase, crate::error::InputError> {
        let scenario = Scenario::load(
            path,
            &Overrides {
                sets: sets.to_vec(),
                native_scheduler,
                ..Default::default()
            },
        )?;
        OracleCase::of(scenario, path, sets)
    }

    /// [`OracleCase::load`] of a scenario already loaded from `path` with `sets`.
    pub fn of(
        scenario: Scenario,
        path: &Path,
        sets: &[String],
    ) -> Result<OracleCase, crate::error::InputError> {
        let workload = workload::guest_workload(path, sets)?;
        let scheduler = scx::GuestScheduler::of(&scenario, path)?;
        Ok(OracleCase {
            path: path.to_path_buf(),
            sets: sets.to_vec(),
            scenario,
            workload,
            scheduler,
        })
    }

    /// The guest job `name` of this case: its real program, and for a sched_ext
    /// scenario the scheduler loaded around it, built with the kit of `kernel`
    /// (which must then be the sched_ext kernel).
    pub fn job(&self, name: &str, kernel: &guest::KernelChoice) -> Result<guest::GuestJob, String> {
        let mut job = guest::GuestJob {
            name: name.to_string(),
            command: self.workload.command.clone(),
            files: self.workload.files.clone(),
        };
        let Some(sched) = &self.scheduler else {
            return Ok(job);
        };
        let guest::KernelChoice::Scx(kit) = kernel else {
            return Err(format!(
                "{}: a sched_ext scenario needs a kernel with sched_ext: `--kernel {}` (built by tools/oracle-scx/build-kit.sh)",
                self.path.display(),
                scx::KIT_KERNEL
            ));
        };
        let kit = scx::ScxKit::open(kit)?;
        let object = kit.compile(&sched.source(&kit))?;
        let loader =
            std::fs::read(&kit.loader).map_err(|e| format!("{}: {e}", kit.loader.display()))?;
        job.command = scx::wrap_command(&job.command, &sched.loader_args());
        job.files.push((scx::LOADER_FILE.into(), loader));
        job.files.push((scx::OBJECT_FILE.into(), object));
        Ok(job)
    }

    /// This case on a guest's machine (`source`) under the guest kernel's `preset`,
    /// with `extra` overrides (a negative control's) after the case's own.
    fn on_guest(
        &self,
        source: &MachineSource,
        preset: &str,
        extra: &[String],
    ) -> Result<Scenario, String> {
        self.on_guest_with(source, preset, extra, None)
    }

    /// [`OracleCase::on_guest`] with feature words (an A/B arm's, `--features`)
    /// applied after the preset's and the scenario's.
    fn on_guest_with(
        &self,
        source: &MachineSource,
        preset: &str,
        extra: &[String],
        features: Option<String>,
    ) -> Result<Scenario, String> {
        // The guest's machine after the case's own overrides (a suite topology's
        // `machine.file`): it is what the simulation must run on.
        let mut all = self.sets.clone();
        all.extend_from_slice(extra);
        all.extend(source.sets());
        all.push(format!("kernel.preset={preset}"));
        Scenario::load(
            &self.path,
            &Overrides {
                sets: all,
                // Loaded once already: a C scheduler in it was allowed then.
                native_scheduler: self.scenario.tunables.ext_object.is_some(),
                features,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())
    }
}

/// Where the simulated guest machine came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum MachineSource {
    /// `schedlab calibrate host` run in the guest (its stdout: a machine file).
    Calibrated(PathBuf),
    /// The sysfs snapshot, default costs.
    Sysfs(PathBuf),
}

impl MachineSource {
    fn sets(&self) -> Vec<String> {
        match self {
            MachineSource::Calibrated(p) => vec![format!("machine.file={}", p.display())],
            MachineSource::Sysfs(p) => vec![format!("machine.sysfs={}", p.display())],
        }
    }
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            MachineSource::Calibrated(_) => "guest sysfs + costs calibrated in the guest",
            MachineSource::Sysfs(_) => "guest sysfs, default x86 costs",
        }
    }
}

/// The real trace's workload tasks: the tool's tasks by comm, and their children.
/// rt-app names each thread after its task (the comm, cut to 15 bytes); hackbench's
/// processes all keep the name `hackbench`.
pub(crate) fn real_filter(w: &GuestWorkload) -> TaskFilter {
    let mut prefixes = Vec::new();
    if w.tool == "rt-app" {
        for (_, bytes) in &w.files {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes) {
                if let Some(t) = v.get("tasks").and_then(|t| t.as_object()) {
                    prefixes.extend(t.keys().map(|k| comm_of(k)));
                }
            }
        }
    } else {
        prefixes.push(comm_of(w.tool));
    }
    prefixes.sort();
    prefixes.dedup();
    TaskFilter {
        comm_prefixes: prefixes,
        follow_forks: w.include_root,
        ..Default::default()
    }
}

/// How the real and the simulated traces of workload `w` are read: the real one
/// filtered to the workload's tasks; the simulated one too when the tool's first
/// task is not one of the workload's (rt-app's main thread, which the simulator
/// models too), so that both sides count the same tasks.
pub(crate) fn decision_opts(w: &GuestWorkload) -> (DecisionOpts, DecisionOpts) {
    let real = DecisionOpts {
        filter: real_filter(w),
        ..Default::default()
    };
    let sim = if w.include_root {
        DecisionOpts::default()
    } else {
        real.clone()
    };
    (real, sim)
}

/// A task name as the kernel's comm (`TASK_COMM_LEN` 16, with the NUL).
fn comm_of(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// One case: a guest job against its simulation.
#[derive(Clone, Debug, Serialize)]
pub struct CaseOutcome {
    pub case: String,
    pub kernel_release: String,
    pub preset: String,
    pub machine: String,
    pub real: Decisions,
    pub sim: Decisions,
    /// The first real run against the first simulated run, by the fixed bands of
    /// [`decisions::Thresholds`] (the single-run comparison).
    pub comparison: Comparison,
    /// Every real run (the job's repetitions) against every simulated seed, each
    /// statistic with an interval from both sides' spread ([`verdicts`]).
    pub runs: verdicts::RunComparison,
    /// The real runs against the deliberately wrong model's seeds: the statistics
    /// it does not make *differ* cannot tell a wrong model from the right one.
    pub control: verdicts::RunComparison,
}

/// How a case is simulated for the comparison over runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RunsCfg {
    /// Simulated seeds (`run.seed`, `run.seed + 1`, ...).
    pub sim_seeds: u32,
    /// `run.noise` of the simulated runs when the scenario sets none.
    pub noise: f64,
    /// Overrides (`--set`s) of every simulation, the model's and the control's.
    pub model: Vec<String>,
    /// The negative control's overrides (`--set`s).
    pub control: Vec<String>,
}

impl Default for RunsCfg {
    /// 5 seeds with 5 % noise, the guest's kernel threads ([`GUEST_MODEL`]); the
    /// default control, random placement.
    fn default() -> Self {
        RunsCfg {
            sim_seeds: 5,
            noise: 0.05,
            model: GUEST_MODEL.iter().map(|s| s.to_string()).collect(),
            control: vec![DEFAULT_CONTROL.to_string()],
        }
    }
}

/// What every simulation of a guest adds, the model's and the control's, unless a
/// suite says otherwise: the guest's kernel threads, asleep from boot (the `guest`
/// profile; docs/validation.md, "Fixes over runs", 8.).
pub const GUEST_MODEL: &[&str] = &["kernel.kthreads=guest"];

/// The deliberately wrong model a case is checked against unless it names its
/// own: every fork and wakeup on a random allowed CPU.
pub const DEFAULT_CONTROL: &str = "kernel.features=RANDOM_PLACEMENT";

/// Compare job `job` of a guest run with the simulation of `case` on the guest's
/// machine under the guest kernel's preset.
pub fn compare_job(
    art: &Artifacts,
    job: &str,
    case: &OracleCase,
    cfg: &RunsCfg,
) -> Result<CaseOutcome, String> {
    let preset = art.preset()?;
    let (m, source) = art.machine()?;
    let w = &case.workload;
    if case.scheduler.is_some() {
        scx::check_job_stdout(&art.job_stdout(job)?)?;
    }
    let (real_opts, sim_opts) = decision_opts(w);
    // Every real run of the job: the job's own, then its repetitions.
    let reals = art
        .repetitions(job)
        .iter()
        .map(|rep| Ok(Decisions::from_text(&art.trace(rep)?, &m, &real_opts)))
        .collect::<Result<Vec<_>, String>>()?;
    let real = reals[0].clone();
    // The model and the control, each loaded once on the guest's machine.
    // The time the tool printed in each real run (hackbench's `Time:`).
    let real_times: Vec<f64> = art
        .repetitions(job)
        .iter()
        .map(|rep| Ok(w.tool_time_s(&art.job_stdout(rep)?)))
        .collect::<Result<Vec<_>, String>>()?
        .into_iter()
        .flatten()
        .collect();
    let mut model = case.on_guest(&source, preset, &cfg.model)?;
    let sim = Decisions::from_text(&simulate(&mut model, None)?.text, &m, &sim_opts);
    let comparison = decisions::compare(&real, &sim);
    // Over runs: every real run against every seed, and against the control's; the
    // tool's time as one more row where the real runs printed one.
    let over_runs = |sc: &mut Scenario| -> Result<verdicts::RunComparison, String> {
        let mut ds = Vec::new();
        let mut times = Vec::new();
        for i in 0..cfg.sim_seeds.max(1) {
            let run = simulate(sc, Some((i, cfg.noise)))?;
            ds.push(Decisions::from_text(&run.text, &m, &sim_opts));
            times.extend(run.time_s);
        }
        let mut c = verdicts::compare_runs(&reals, &ds);
        if !real_times.is_empty() {
            c.rows.push(verdicts::tool_time_row(
                workload::TOOL_TIME,
                &real_times,
                &times,
            ));
        }
        Ok(c)
    };
    let runs = over_runs(&mut model)?;
    let wrong = [cfg.model.as_slice(), cfg.control.as_slice()].concat();
    let control = over_runs(&mut case.on_guest(&source, preset, &wrong)?)?;
    Ok(CaseOutcome {
        case: job.to_string(),
        kernel_release: art.release.clone(),
        preset: preset.to_string(),
        machine: source.describe().to_string(),
        real,
        sim,
        comparison,
        runs,
        control,
    })
}

/// One simulated run as the oracle reads it.
pub(crate) struct Simulated {
    /// Its ftrace text.
    pub text: String,
    /// The time its tool printed (the generator's `time_s`), when it has one.
    pub time_s: Option<f64>,
    /// What its wakeup scans tested (the seed kit's statistics).
    pub scan: seeds::ScanStats,
}

/// Simulate `sc`: its own seed and noise, or (`seed`) the `i`-th seed after its
/// own, with `noise` when the scenario sets none.
fn simulate(sc: &mut Scenario, seed: Option<(u32, f64)>) -> Result<Simulated, String> {
    let opts = RunOpts {
        trace: true,
        ftrace: true,
        ..Default::default()
    };
    let own = sc.noise;
    let mut run_seed = sc.seed;
    if let Some((i, noise)) = seed {
        run_seed = sc.seed.wrapping_add(u64::from(i));
        if own == 0.0 {
            sc.noise = noise;
        }
    }
    let r = super::run(sc, run_seed, 0, &opts);
    sc.noise = own;
    let (res, text) = r.map_err(|e| e.to_string())?;
    Ok(Simulated {
        text: text.unwrap_or_default(),
        time_s: res.workload.tool.get("time_s").copied(),
        scan: seeds::ScanStats::of_model(&res.metrics.functions),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comms_are_cut_as_the_kernel_cuts_them() {
        assert_eq!(comm_of("hog"), "hog");
        assert_eq!(comm_of("a_very_long_task_name"), "a_very_long_tas");
        // 14 ASCII bytes then a 2-byte character: cut before it, not inside it.
        assert_eq!(comm_of("abcdefghijklmné"), "abcdefghijklmn");
    }

    #[test]
    fn the_real_filter_names_the_workload_tasks() {
        let json = br#"{"tasks": {"sleeper": {"run": 1}, "a_very_long_task_name": {"run": 1}}}"#;
        let w = GuestWorkload {
            tool: "rt-app",
            command: String::new(),
            files: vec![("x.json".into(), json.to_vec())],
            include_root: false,
            duration_s: None,
        };
        let f = real_filter(&w);
        assert_eq!(f.comm_prefixes, ["a_very_long_tas", "sleeper"]);
        assert!(
            !f.follow_forks,
            "rt-app's main thread and its children are not followed"
        );
        let w = GuestWorkload {
            tool: "hackbench",
            files: Vec::new(),
            include_root: true,
            ..w
        };
        let f = real_filter(&w);
        assert_eq!(f.comm_prefixes, ["hackbench"]);
        assert!(f.follow_forks);
    }
}
