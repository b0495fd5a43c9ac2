//! `schedlab oracle`: a scenario on a real kernel in a QEMU guest of its topology,
//! and the decisions compared with the simulation (`schedlab::experiment::oracle`).
//!
//! Three verbs. `run` boots each requested kernel, runs the guest calibration and the
//! scenario's workload, and compares; `compare` does the comparison again from a
//! kept guest run (no QEMU); `suite` checks the recorded validation suite, or with
//! `--record` boots every topology and kernel of it again and rewrites the bundles.

use crate::Failure;
use schedlab::error::InputError;
use schedlab::experiment::oracle::{
    self as o,
    guest::{self, qemu::GuestTopology, GuestRequest, KernelChoice},
    suite, Artifacts,
};
use schedlab::experiment::{self, Overrides, Scenario};
use schedlab::report::{oracle_html, OracleSection};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options shared by the verbs that boot a guest.
pub(crate) struct BootArgs {
    pub cache: Option<PathBuf>,
    pub timeout_s: Option<u64>,
    pub single_thread: bool,
}

impl BootArgs {
    fn apply(&self, req: &mut GuestRequest) {
        if let Some(c) = &self.cache {
            req.cache_dir = Some(c.clone());
        }
        if let Some(t) = self.timeout_s {
            req.timeout = Duration::from_secs(t);
        }
        if self.single_thread {
            req.accel_threads = guest::qemu::AccelThreads::Single;
        }
    }
}

/// The optional output files of every verb.
pub(crate) struct Outputs {
    pub json: Option<PathBuf>,
    pub report: Option<PathBuf>,
}

fn write_html(p: &Path, html: &str) -> Result<(), Failure> {
    experiment::write_atomic(p, html.as_bytes())
        .map_err(|e| InputError::in_file(p, None, format!("cannot write: {e}")).into())
}

fn sections(reports: &[KernelReport]) -> Vec<OracleSection<'_>> {
    reports
        .iter()
        .map(|r| OracleSection {
            heading: format!(
                "{} on a real {} (guest {}), artifacts {}",
                r.outcome.case,
                r.kernel,
                r.release,
                r.artifacts.display()
            ),
            domains: &r.domains,
            cases: vec![&r.outcome],
        })
        .collect()
}

const REPORT_INTRO: &str = "Real kernels in QEMU (TCG) guests against the simulation of the same workload on the imported guest machine with its calibrated costs. Decisions are compared, not times: guest time is stretched by emulation (docs/validation.md, part 2).";

/// The QEMU oracle's host tools, checked before any boot: a missing one is this
/// host's setup, an input error (exit 2) naming the install command.
fn host_tools() -> Result<(), Failure> {
    guest::check_tools().map_err(|m| Failure::Input(InputError::new(m)))
}

fn exe() -> Result<PathBuf, Failure> {
    std::env::current_exe()
        .map_err(|e| Failure::Internal(format!("cannot find the schedlab binary: {e}")))
}

fn write_json<T: Serialize>(p: &Path, v: &T) -> Result<(), Failure> {
    let mut s = serde_json::to_string_pretty(v).map_err(|e| Failure::Internal(e.to_string()))?;
    s.push('\n');
    experiment::write_atomic(p, s.as_bytes())
        .map_err(|e| InputError::in_file(p, None, format!("cannot write: {e}")).into())
}

#[derive(Serialize)]
struct KernelReport {
    kernel: String,
    release: String,
    preset: String,
    artifacts: PathBuf,
    domains: o::domains::DomainComparison,
    outcome: o::CaseOutcome,
}

fn print_kernel(r: &KernelReport, quiet: bool) {
    if quiet {
        return;
    }
    println!(
        "== {} on a real {} (guest {}), simulated as {} on the {}",
        r.outcome.case, r.kernel, r.release, r.preset, r.outcome.machine
    );
    println!("-- sched domains (real vs schedlab)");
    print!("{}", r.domains.text());
    println!("-- decisions (the first real run vs the first simulated run, fixed bands)");
    print!("{}", r.outcome.comparison.text());
    println!(
        "-- decisions over runs (every real run vs every simulated seed, 95 % intervals; docs/validation.md)"
    );
    print!("{}", r.outcome.runs.text(&r.outcome.control));
    println!();
}

/// A job name from a scenario's file stem.
fn job_name(scenario: &Path) -> String {
    let stem = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workload".into());
    let s: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s == o::CALIBRATE_JOB {
        format!("{s}-workload")
    } else {
        s
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn run_cmd(
    scenario: &Path,
    kernels: &[String],
    topology: Option<&str>,
    (sets, native): (Vec<String>, bool),
    out: &Path,
    no_calibrate: bool,
    repeat: u32,
    outputs: Outputs,
    boot: &BootArgs,
    quiet: bool,
) -> Result<(), Failure> {
    let choices = kernels
        .iter()
        .map(|k| KernelChoice::parse(k).map_err(|e| InputError::new(format!("--kernel {k}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    // Loaded once, and checked before any boot: a topology QEMU can give the
    // guest, then a real program for the scenario's workload.
    let sc = Scenario::load(
        scenario,
        &Overrides {
            sets: sets.clone(),
            native_scheduler: native,
            ..Default::default()
        },
    )?;
    let topo = match topology {
        Some(spec) => GuestTopology::parse(spec)
            .map_err(|e| InputError::new(format!("--topology {spec}: {e}")))?,
        None => GuestTopology::from_machine(&sc.machine).map_err(|e| {
            InputError::in_file(
                scenario,
                None,
                format!(
                    "its machine cannot be a QEMU x86 guest: {e} (give --topology to choose one)"
                ),
            )
        })?,
    };
    let case = o::OracleCase::of(sc, scenario, &sets)?;
    if !quiet && topo.cpu_map.iter().enumerate().any(|(i, &c)| i != c) {
        eprintln!(
            "oracle: note: QEMU numbers this machine's CPUs differently (guest vCPU of each CPU: {:?}); the workload's CPU numbers (affinities) are read as guest vCPUs, and the comparison uses the guest's numbering",
            topo.cpu_map
        );
    }
    // And this host has the tools to boot a guest.
    host_tools()?;
    for c in &choices {
        guest::check_kernel_source(c, boot.cache.as_deref())
            .map_err(|m| Failure::Input(InputError::new(m)))?;
    }
    let job = job_name(scenario);
    let mut calibrate = Vec::new();
    if !no_calibrate {
        // The guest calibration runs this very binary.
        calibrate.push(o::calibrate_job(&exe()?).map_err(Failure::Internal)?);
    }
    let mut reports = Vec::new();
    for (k, choice) in kernels.iter().zip(choices) {
        let mut jobs = calibrate.clone();
        jobs.push(
            case.job(&job, &choice)
                .map_err(|e| InputError::new(format!("--kernel {k}: {e}")))?,
        );
        let mut req = GuestRequest::new(topo.clone(), choice, jobs);
        req.repetitions = repeat;
        boot.apply(&mut req);
        let dir = out.join(format!("{job}-{k}").replace('/', "_"));
        if !quiet {
            eprintln!(
                "oracle: booting {k} on {} vCPUs -> {}",
                topo.nr_cpus(),
                dir.display()
            );
        }
        let run = guest::run_guest(&req, &dir).map_err(Failure::Internal)?;
        if !quiet {
            eprintln!(
                "oracle: {} booted in {:.1} s, {:.1} s in all",
                run.meta.kernel_release, run.meta.host_boot_s, run.meta.wall_s
            );
        }
        let r = compare_dir(&dir, &job, &case, Some(k))?;
        print_kernel(&r, quiet);
        reports.push(r);
    }
    write_outputs(&outputs, &reports, &format!("schedlab oracle: {job}"))
}

fn write_outputs(o: &Outputs, reports: &[KernelReport], title: &str) -> Result<(), Failure> {
    if let Some(p) = &o.json {
        write_json(p, &reports)?;
    }
    if let Some(p) = &o.report {
        write_html(p, &oracle_html(title, REPORT_INTRO, &sections(reports)))?;
    }
    Ok(())
}

fn compare_dir(
    dir: &Path,
    job: &str,
    case: &o::OracleCase,
    kernel: Option<&str>,
) -> Result<KernelReport, Failure> {
    let art = Artifacts::open(dir).map_err(InputError::new)?;
    let domains = art.domains().map_err(Failure::Internal)?;
    let outcome =
        o::compare_job(&art, job, case, &o::RunsCfg::default()).map_err(Failure::Internal)?;
    Ok(KernelReport {
        // A kept run is named by its release when no `--kernel` word is at hand.
        kernel: kernel.unwrap_or(&art.release).to_string(),
        release: art.release.clone(),
        preset: outcome.preset.clone(),
        artifacts: dir.to_path_buf(),
        domains,
        outcome,
    })
}

pub(crate) fn compare_cmd(
    dir: &Path,
    scenario: &Path,
    job: Option<String>,
    (sets, native): (Vec<String>, bool),
    outputs: Outputs,
    quiet: bool,
) -> Result<(), Failure> {
    let job = job.unwrap_or_else(|| job_name(scenario));
    let case = o::OracleCase::load(scenario, &sets, native)?;
    let r = compare_dir(dir, &job, &case, None)?;
    print_kernel(&r, quiet);
    write_outputs(&outputs, &[r], &format!("schedlab oracle: {job}"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn suite_cmd(
    suite_file: &Path,
    data: &Path,
    record: bool,
    only_topology: Option<String>,
    only_kernel: Option<String>,
    markdown: Option<PathBuf>,
    outputs: Outputs,
    boot: &BootArgs,
    quiet: bool,
) -> Result<(), Failure> {
    let s = suite::Suite::load(suite_file)?;
    if let Some(t) = &only_topology {
        if !s.topologies.iter().any(|x| &x.name == t) {
            return Err(InputError::new(format!(
                "--topology {t}: not in {} (it has: {})",
                suite_file.display(),
                s.topologies
                    .iter()
                    .map(|x| x.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .into());
        }
    }
    if let Some(k) = &only_kernel {
        if !s.kernels.contains(k) {
            return Err(InputError::new(format!(
                "--kernel {k}: not one of the suite's kernels ({})",
                s.kernels.join(", ")
            ))
            .into());
        }
    }
    let mut failed: Vec<String> = Vec::new();
    if record {
        host_tools()?;
        for k in &s.kernels {
            if only_kernel.as_ref().is_none_or(|x| x == k) {
                let c = KernelChoice::parse(k)
                    .map_err(|m| InputError::new(format!("--kernel {k}: {m}")))?;
                guest::check_kernel_source(&c, boot.cache.as_deref())
                    .map_err(|m| Failure::Input(InputError::new(m)))?;
            }
        }
        for topo in &s.topologies {
            if only_topology.as_ref().is_some_and(|t| t != &topo.name) {
                continue;
            }
            for k in &s.kernels {
                if only_kernel.as_ref().is_some_and(|x| x != k) {
                    continue;
                }
                if !quiet {
                    eprintln!(
                        "oracle suite: recording {} on {} ({} cases)",
                        k,
                        topo.name,
                        topo.cases.len()
                    );
                }
                // One boot that fails (after its retries) does not stop the others:
                // its earlier bundle, if any, is kept and the failure is reported.
                match suite::record(&s, topo, k, &exe()?, data, &|req| boot.apply(req)) {
                    Ok(meta) if !quiet => eprintln!(
                        "oracle suite: {} {}: {:.0} s in all ({} boot attempt(s))",
                        topo.name,
                        meta.kernel_release,
                        meta.wall_s,
                        meta.attempts.len()
                    ),
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("oracle suite: {} {}: not recorded: {e}", topo.name, k);
                        failed.push(format!("{} {k}", topo.name));
                    }
                }
            }
        }
    }
    let (checks, missing) =
        suite::check(&s, data, only_topology.as_deref(), only_kernel.as_deref())
            .map_err(Failure::Internal)?;
    if !quiet {
        for b in &checks {
            println!("== {} / {} ({})", b.topology, b.kernel, b.release);
            if b.domains.all_match() {
                println!("sched domains: every CPU's chain matches");
            } else {
                print!("{}", b.domains.text());
            }
            for c in &b.cases {
                println!("-- {} ({} on the {})", c.case, c.preset, c.machine);
                print!("{}", c.comparison.text());
            }
            println!();
        }
        print!("{}", suite::summary_markdown(&checks));
        println!();
        print!("{}", suite::headline_markdown(&checks));
        println!();
        print!("{}", suite::by_statistic_markdown(&checks));
        println!();
        print!("{}", suite::runs_markdown(&checks));
        println!();
        print!("{}", suite::headline_runs_markdown(&checks));
        println!();
        print!("{}", suite::families_markdown(&checks));
        println!();
        print!("{}", suite::tool_times_markdown(&checks));
        for m in &missing {
            println!("not recorded: {m}");
        }
    }
    if let Some(p) = markdown {
        let text = format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n{}",
            suite::summary_markdown(&checks),
            suite::headline_markdown(&checks),
            suite::by_statistic_markdown(&checks),
            suite::runs_markdown(&checks),
            suite::headline_runs_markdown(&checks),
            suite::families_markdown(&checks),
            suite::tool_times_markdown(&checks)
        );
        experiment::write_atomic(&p, text.as_bytes())
            .map_err(|e| InputError::in_file(&p, None, format!("cannot write: {e}")))?;
    }
    if let Some(p) = &outputs.json {
        write_json(p, &checks)?;
    }
    if let Some(p) = &outputs.report {
        let secs: Vec<OracleSection<'_>> = checks
            .iter()
            .map(|b| OracleSection {
                heading: format!("{}, real {} ({})", b.topology, b.kernel, b.release),
                domains: &b.domains,
                cases: b.cases.iter().collect(),
            })
            .collect();
        write_html(
            p,
            &oracle_html("schedlab oracle suite", REPORT_INTRO, &secs),
        )?;
    }
    if !failed.is_empty() {
        return Err(Failure::Internal(format!(
            "recording failed for: {} (the tables above use their earlier bundles, if any)",
            failed.join(", ")
        )));
    }
    Ok(())
}
