//! `schedlab oracle`: a scenario on a real kernel in a QEMU guest of its topology,
//! and the decisions compared with the simulation (`schedlab::experiment::oracle`).
//!
//! Five verbs. `run` boots each requested kernel, runs the guest calibration and the
//! scenario's workload, and compares; `compare` does the comparison again from a
//! kept guest run (no QEMU); `suite` checks the recorded validation suite, or with
//! `--record` boots every topology and kernel of it again and rewrites the bundles.
//! `ab` runs an A/B on a real kernel (both arms of a switch in one boot, or a boot per
//! kernel) and compares its effects with the simulated A/B; `ab-suite` checks (or
//! records) the recorded A/B suite.

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

/// The scenario loaded once and checked before any boot: a topology QEMU can give
/// the guest (`--topology`, else the scenario's machine), then a real program for
/// its workload.
fn load_case(
    scenario: &Path,
    topology: Option<&str>,
    (sets, native): (Vec<String>, bool),
    quiet: bool,
) -> Result<(GuestTopology, o::OracleCase), Failure> {
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
    Ok((topo, case))
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
    let (topo, case) = load_case(scenario, topology, (sets, native), quiet)?;
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

/// One arm of `oracle ab` as given: its kernel word and choice, its SPEC.
struct AbArmArg {
    kernel: String,
    choice: KernelChoice,
    spec: String,
}

const AB_INTRO: &str = "An A/B on a real kernel in a QEMU (TCG) guest against the same A/B simulated on the imported guest machine with its calibrated costs: per decision statistic, the change from arm A to arm B on each side with its 95 % interval from that side's runs, and a verdict (docs/validation.md, \"A/B on real kernels\").";

/// `schedlab oracle ab`: both arms of a feature or tunable A/B in one boot of
/// their kernel (arms interleaved per repetition), or a boot per kernel when the
/// arms name different kernels; then the effect comparison.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ab_cmd(
    scenario: &Path,
    specs: [&str; 2],
    kernel: &str,
    topology: Option<&str>,
    (sets, native): (Vec<String>, bool),
    out: &Path,
    no_calibrate: bool,
    repeat: u32,
    no_boot: bool,
    outputs: Outputs,
    boot: &BootArgs,
    quiet: bool,
) -> Result<(), Failure> {
    use o::knobs::{knobs_for, GuestAb, RealArm};
    let mut arms = vec![];
    for (i, spec) in specs.iter().enumerate() {
        let flag = if i == 0 { "--a" } else { "--b" };
        let (k, rest) = o::ab::split_kernel(spec);
        let k = k.unwrap_or_else(|| kernel.to_string());
        let choice =
            KernelChoice::parse(&k).map_err(|e| InputError::new(format!("{flag} {spec}: {e}")))?;
        // Checked before any boot: a switch the arm's kernel lacks is an input error
        // naming what it has.
        let real = RealArm::parse(&rest).map_err(|e| InputError::new(format!("{flag}: {e}")))?;
        if !rest.is_empty() {
            let knobs = knobs_for(&choice).map_err(|e| InputError::new(format!("{flag}: {e}")))?;
            real.check(knobs)
                .map_err(|e| InputError::new(format!("{flag}: {e}")))?;
        }
        arms.push(AbArmArg {
            kernel: k,
            choice,
            spec: rest,
        });
    }
    let one_boot = arms[0].kernel == arms[1].kernel;
    if one_boot && arms[0].spec == arms[1].spec {
        return Err(InputError::new(format!(
            "--a and --b are the same arm (`{}` on {}): an A/B needs two",
            arms[0].spec, arms[0].kernel
        ))
        .into());
    }
    let (topo, case) = load_case(scenario, topology, (sets, native), quiet)?;
    let job = job_name(scenario);
    // One boot per distinct kernel: the arms it runs, and its directory.
    let boots: Vec<(Vec<usize>, PathBuf)> = if one_boot {
        vec![(vec![0, 1], ab_dir(out, &job, &arms[0].kernel))]
    } else {
        (0..2)
            .map(|i| (vec![i], ab_dir(out, &job, &arms[i].kernel)))
            .collect()
    };
    if !no_boot {
        host_tools()?;
        for a in &arms {
            guest::check_kernel_source(&a.choice, boot.cache.as_deref())
                .map_err(|m| Failure::Input(InputError::new(m)))?;
        }
        let mut calibrate = Vec::new();
        if !no_calibrate {
            calibrate.push(o::calibrate_job(&exe()?).map_err(Failure::Internal)?);
        }
        for (idx, dir) in &boots {
            let a0 = &arms[idx[0]];
            let mut jobs = calibrate.clone();
            jobs.push(
                case.job(&job, &a0.choice)
                    .map_err(|e| InputError::new(format!("kernel {}: {e}", a0.kernel)))?,
            );
            let mut req = GuestRequest::new(topo.clone(), a0.choice.clone(), jobs);
            req.repetitions = repeat;
            let real: Vec<RealArm> = idx
                .iter()
                .map(|&i| RealArm::parse(&arms[i].spec).expect("parsed above"))
                .collect();
            // A kernel arm at its defaults needs no switch: a plain boot, whose
            // repetitions are the arm's runs (a kernel image's knobs are unknown).
            if one_boot || real.iter().any(|r| !r.spec.is_empty()) {
                let knobs = knobs_for(&a0.choice).map_err(InputError::new)?;
                req.ab = Some(GuestAb::new(real, knobs).map_err(InputError::new)?);
            }
            boot.apply(&mut req);
            if !quiet {
                eprintln!(
                    "oracle ab: booting {} on {} vCPUs for arm(s) {} -> {}",
                    a0.kernel,
                    topo.nr_cpus(),
                    idx.iter()
                        .map(|&i| o::ab::arm_tag(i).to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    dir.display()
                );
            }
            let run = guest::run_guest(&req, dir).map_err(Failure::Internal)?;
            if !quiet {
                eprintln!(
                    "oracle ab: {} booted in {:.1} s, {:.1} s in all",
                    run.meta.kernel_release, run.meta.host_boot_s, run.meta.wall_s
                );
            }
        }
    }
    let cfg = o::RunsCfg::default();
    let outcome = if one_boot {
        let art = Artifacts::open(&boots[0].1).map_err(InputError::new)?;
        o::ab::compare_knob_ab(&[&art], &job, &case, [&arms[0].spec, &arms[1].spec], &cfg)
            .map_err(Failure::Internal)?
    } else {
        let arts = boots
            .iter()
            .map(|(_, d)| Artifacts::open(d).map_err(InputError::new))
            .collect::<Result<Vec<_>, _>>()?;
        let mut sources = vec![];
        let mut checks = vec![];
        for (i, a) in arms.iter().enumerate() {
            let art = &arts[i];
            let src = if a.spec.is_empty() && !o::ab::arm_runs(art, &job, 0).is_empty() {
                o::ab::ArmSource::knob_arm(&[art], &job, 0, "")
            } else if a.spec.is_empty() {
                o::ab::ArmSource::kernel_arm(art, &job)
            } else {
                let real = RealArm::parse(&a.spec).expect("parsed above");
                checks.extend(
                    o::ab::check_arms(art, &job, std::slice::from_ref(&real))
                        .map_err(Failure::Internal)?,
                );
                o::ab::ArmSource::knob_arm(&[art], &job, 0, &a.spec)
            };
            let label = o::ab::arm_label(&a.spec, Some(&a.kernel));
            if a.spec.is_empty() {
                checks.extend(src.runs().map(|r| format!("{r}: {label}")));
            }
            sources.push(o::ab::ArmSource { label, ..src });
        }
        let b = sources.pop().expect("two arms");
        let a = sources.pop().expect("two arms");
        o::ab::compare_ab(&job, [a, b], checks, &case, &cfg).map_err(Failure::Internal)?
    };
    if !quiet {
        print!("{}", outcome.text());
    }
    if let Some(p) = &outputs.json {
        write_json(p, &outcome)?;
    }
    if let Some(p) = &outputs.report {
        write_html(
            p,
            &schedlab::report::ab_html(
                &format!("schedlab oracle ab: {job}"),
                AB_INTRO,
                &[&outcome],
            ),
        )?;
    }
    Ok(())
}

/// Where `oracle ab` keeps the boot of `kernel` for `job`.
fn ab_dir(out: &Path, job: &str, kernel: &str) -> PathBuf {
    out.join(format!("{job}-ab-{kernel}").replace('/', "_"))
}

/// `schedlab oracle ab-suite`: record (with `--record`) and check the A/B suite.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ab_suite_cmd(
    suite_file: &Path,
    data: &Path,
    record: bool,
    (only, only_boot): (Option<&str>, Option<u32>),
    markdown: Option<PathBuf>,
    outputs: Outputs,
    boot: &BootArgs,
    quiet: bool,
) -> Result<(), Failure> {
    use o::ab_suite;
    let s = ab_suite::AbSuite::load(suite_file)?;
    if let Some(name) = only {
        s.case(name)
            .map_err(|e| InputError::new(format!("--only: {e}")))?;
    }
    let mut failed = vec![];
    if record {
        host_tools()?;
        for c in &s.cases {
            if only.is_some_and(|o| o != c.name)
                || matches!(
                    c.arms,
                    ab_suite::AbArms::Kernels {
                        from_suite: true,
                        ..
                    }
                )
            {
                continue;
            }
            for k in c.kernels() {
                let choice = KernelChoice::parse(&k).map_err(InputError::new)?;
                guest::check_kernel_source(&choice, boot.cache.as_deref())
                    .map_err(|m| Failure::Input(InputError::new(m)))?;
            }
            if !quiet {
                eprintln!(
                    "oracle ab-suite: recording {} ({})",
                    c.name,
                    c.kernels().join(", ")
                );
            }
            for b in 1..=s.boots {
                if only_boot.is_some_and(|x| x != b) {
                    continue;
                }
                match ab_suite::record(&s, c, b, &exe()?, data, &|req| boot.apply(req)) {
                    Ok(metas) if !quiet => {
                        for m in metas {
                            eprintln!(
                                "oracle ab-suite: {} boot {b} {}: {:.0} s in all ({} boot attempt(s))",
                                c.name,
                                m.kernel_release,
                                m.wall_s,
                                m.attempts.len()
                            );
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("oracle ab-suite: {} boot {b}: not recorded: {e}", c.name);
                        failed.push(format!("{} boot {b}", c.name));
                    }
                }
            }
        }
    }
    let (checks, missing) = ab_suite::check(&s, data, only).map_err(Failure::Internal)?;
    if !quiet {
        for c in &checks {
            print!("{}", c.outcome.text());
            println!();
        }
        print!("{}", ab_suite::summary_markdown(&checks));
        println!();
        print!("{}", ab_suite::boots_markdown(&checks));
        for m in &missing {
            println!("not recorded: {m}");
        }
    }
    if let Some(p) = markdown {
        let text = format!(
            "{}\n{}\n{}",
            ab_suite::summary_markdown(&checks),
            ab_suite::boots_markdown(&checks),
            ab_suite::effects_markdown(&checks)
        );
        experiment::write_atomic(&p, text.as_bytes())
            .map_err(|e| InputError::in_file(&p, None, format!("cannot write: {e}")))?;
    }
    if let Some(p) = &outputs.json {
        write_json(p, &checks)?;
    }
    if let Some(p) = &outputs.report {
        let cases: Vec<&o::ab::AbOutcome> = checks.iter().map(|c| &c.outcome).collect();
        write_html(
            p,
            &schedlab::report::ab_html("schedlab oracle ab-suite", AB_INTRO, &cases),
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
