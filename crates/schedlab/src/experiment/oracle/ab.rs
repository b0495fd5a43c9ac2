//! An A/B on a real kernel against the same A/B in the model (`schedlab oracle ab`).
//!
//! A real kernel flips most placement heuristics at run time ([`super::knobs`]), so
//! both arms of a feature or tunable A/B run in one guest boot: after the
//! calibration and a warm-up at the boot defaults, every repetition runs arm A then
//! arm B, each after every touched knob is put back to its boot value and the arm
//! set, into `jobs/<job>.<a|b>.r<r>`. The guest reads the features file and the
//! touched tunables back before every run, and [`check_arms`] refuses a run whose
//! arm did not take effect: an A/B whose arms are the same kernel measures nothing.
//! A kernel A/B (5.10 → 6.12) takes one boot per kernel, each job's repetitions
//! being that kernel's runs. An arm may pool the runs of several boots
//! ([`ArmSource::boots`]): one boot is a draw of its own, which its repetitions do
//! not show, so a pooled real effect counts only where every boot's own Δ has its
//! sign ([`EffectComparison::require_every_boot`]). On the seed kit's kernel the
//! runs also report what each wakeup scan tested ([`super::seeds`]), compared with
//! the model's counts of the same.
//!
//! The model runs the same arms: the same SPEC read by [`ArmSpec`] (feature words
//! after the preset's and the scenario's, `kernel.tunables.*` as `--set`s) on the
//! guest's machine (calibrated in the guest) under the guest kernel's preset, over
//! `sim_seeds` seeds with `run.noise` per arm. For a kernel A/B each arm is its own
//! guest's machine under its own release's preset. The two A/Bs are then compared
//! effect by effect ([`super::decisions::effects`]), and against the negative
//! control: the model's arm A on both sides (seeds `n..2n` as "B"), the simulator
//! that predicts no effect.

use super::decisions::effects::{compare_effects, ArmRuns, EffectComparison, RunValues};
use super::decisions::{Decisions, Kind};
pub use super::knobs::arm_tag;
use super::knobs::{ab_run_name, RealArm};
use super::seeds::{ScanStats, SCAN_STATISTICS};
use super::workload::TOOL_TIME;
use super::{decision_opts, simulate, Artifacts, OracleCase, RunsCfg};
use crate::experiment::compare::ArmSpec;
use crate::machine::Machine;
use crate::sched::features::feature_word;
use serde::Serialize;

/// The file a guest run of an A/B leaves with the touched tunables' values, one
/// `NAME VALUE` line each, read before the run.
pub const TUNABLES_FILE: &str = "tunables";

/// The file every guest run leaves with the features file as read before it.
pub const FEATURES_FILE: &str = "sched_features";

/// The runs of arm `arm` of `job` in an A/B boot (`job.a.r1`, `job.a.r2`, ...).
pub fn arm_runs(art: &Artifacts, job: &str, arm: usize) -> Vec<String> {
    let mut out = vec![];
    for r in 1.. {
        let name = ab_run_name(job, arm, r);
        if !art.dir.join("jobs").join(&name).join("trace.txt").exists() {
            break;
        }
        out.push(name);
    }
    out
}

/// Check that every run of each arm ran with its arm in effect: each feature word
/// of the arm in the features file the guest read before the run, every bit
/// another arm touches at its boot state (the boot's own features file), each
/// tunable at the arm's value. One line per run on success.
pub fn check_arms(art: &Artifacts, job: &str, arms: &[RealArm]) -> Result<Vec<String>, String> {
    let mut lines = vec![];
    // The state at boot of every bit an arm touches: what a run of an arm that
    // does not set it must read (it was put back before the run).
    let boot_file = art.dir.join(FEATURES_FILE);
    let boot = std::fs::read_to_string(&boot_file).unwrap_or_default();
    let touched: Vec<&str> = arms
        .iter()
        .flat_map(|a| a.features.iter())
        .map(|f| feature_word(f).0)
        .collect();
    let boot_word = |name: &str| -> Option<String> {
        boot.split_whitespace()
            .find(|w| feature_word(w).0 == name)
            .map(str::to_string)
    };
    for (i, arm) in arms.iter().enumerate() {
        let runs = arm_runs(art, job, i);
        if runs.is_empty() {
            return Err(format!(
                "{}: no run of arm {} of job {job} (jobs/{job}.{}.r1)",
                art.dir.display(),
                arm_tag(i),
                arm_tag(i)
            ));
        }
        for run in runs {
            let d = art.dir.join("jobs").join(&run);
            let p = d.join(FEATURES_FILE);
            let feats = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let words: Vec<&str> = feats.split_whitespace().collect();
            for f in &arm.features {
                if !words.contains(&f.as_str()) {
                    return Err(format!(
                        "{run}: arm {} (`{}`) did not take effect: {f} is not in the features the guest read ({})",
                        arm_tag(i),
                        arm.spec,
                        p.display()
                    ));
                }
            }
            for name in &touched {
                let set = arm.features.iter().any(|f| feature_word(f).0 == *name);
                if set {
                    continue;
                }
                if let Some(w) = boot_word(name) {
                    if !words.contains(&w.as_str()) {
                        return Err(format!(
                            "{run}: arm {} (`{}`) ran with another arm's {name}: the guest read it other than its boot state {w} ({})",
                            arm_tag(i),
                            arm.spec,
                            p.display()
                        ));
                    }
                }
            }
            let mut set = vec![];
            if !arm.tunables.is_empty() {
                let p = d.join(TUNABLES_FILE);
                let t = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                for (name, v) in &arm.tunables {
                    let got = t.lines().find_map(|l| {
                        let (n, x) = l.split_once(' ')?;
                        (n == name).then(|| x.trim().to_string())
                    });
                    if got.as_deref() != Some(v.to_string().as_str()) {
                        return Err(format!(
                            "{run}: arm {} (`{}`) did not take effect: {name} read {} before the run, not {v} ({})",
                            arm_tag(i),
                            arm.spec,
                            got.as_deref().unwrap_or("nothing"),
                            p.display()
                        ));
                    }
                    set.push(format!("{name}={v}"));
                }
            }
            let mut what: Vec<String> = arm.features.clone();
            what.extend(set);
            lines.push(if what.is_empty() {
                format!("{run}: boot defaults")
            } else {
                format!("{run}: {} in effect", what.join(" "))
            });
        }
    }
    Ok(lines)
}

/// One A/B case: the real effects against the simulated ones.
#[derive(Clone, Debug, Serialize)]
pub struct AbOutcome {
    pub case: String,
    /// Each arm's label (its SPEC, or its kernel) and release.
    pub arms: [String; 2],
    pub releases: [String; 2],
    /// The presets the arms are simulated with.
    pub presets: [String; 2],
    pub machine: String,
    /// Guest boots per arm, and real runs (over all boots) and simulated seeds per
    /// arm.
    pub boots: usize,
    pub real_runs: [usize; 2],
    pub sim_seeds: u32,
    /// How each real run's arm was checked ([`check_arms`]).
    pub arm_checks: Vec<String>,
    /// The real A/B against the model's.
    pub effects: EffectComparison,
    /// The real A/B against the model that predicts no effect (its arm A twice).
    pub control: EffectComparison,
    /// With several boots, each boot's own real Δ per statistic (boot order):
    /// whether a real effect is the kernel's or one boot's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_boot: Vec<Vec<BootDelta>>,
}

/// One boot's own real Δ of one statistic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BootDelta {
    pub statistic: String,
    pub estimate: Option<f64>,
    pub effect: crate::stats::verdict::Effect,
}

/// Where one arm's real runs are, and how the model runs that arm.
pub struct ArmSource<'a> {
    /// The guest boots that ran it, each with its runs (result names under
    /// `jobs/`). Runs of several boots are pooled: a boot is a draw of its own
    /// (which vCPU threads share a host core, what the kernel threads do), and
    /// within-boot repetitions alone do not show it.
    pub boots: Vec<(&'a Artifacts, Vec<String>)>,
    /// The arm's SPEC for the model (feature words, `--set`s), applied on each
    /// boot's own machine and release preset.
    pub spec: String,
    /// What the report calls it.
    pub label: String,
}

impl<'a> ArmSource<'a> {
    /// Arm `i` (`a`, `b`, ...) of a feature or tunable A/B in boots `arts`: its runs
    /// `job.<tag>.r<r>` in each, the same SPEC for the model.
    pub fn knob_arm(arts: &[&'a Artifacts], job: &str, i: usize, spec: &str) -> ArmSource<'a> {
        ArmSource {
            boots: arts.iter().map(|a| (*a, arm_runs(a, job, i))).collect(),
            spec: spec.to_string(),
            label: arm_label(spec, None),
        }
    }

    /// A kernel arm: the runs of `job` in boot `art` (the job and its repetitions),
    /// the model at that release's preset with nothing else changed.
    pub fn kernel_arm(art: &'a Artifacts, job: &str) -> ArmSource<'a> {
        ArmSource {
            boots: vec![(art, art.repetitions(job))],
            spec: String::new(),
            label: art.release.clone(),
        }
    }

    /// Every run, boot by boot.
    pub fn runs(&self) -> impl Iterator<Item = &String> + '_ {
        self.boots.iter().flat_map(|(_, r)| r)
    }

    fn first(&self) -> &'a Artifacts {
        self.boots[0].0
    }
}

/// An arm's name in reports: its SPEC (`defaults` when empty), after its kernel
/// when it has one of its own.
pub fn arm_label(spec: &str, kernel: Option<&str>) -> String {
    let s = if spec.trim().is_empty() {
        "defaults"
    } else {
        spec.trim()
    };
    match kernel {
        Some(k) => format!("{k}: {s}"),
        None => s.to_string(),
    }
}

/// One side of an A/B ready to simulate: the scenario of each arm on its guest's
/// machine, and that machine (which the decisions are read in).
struct SimArm {
    scenario: crate::experiment::Scenario,
    machine: Machine,
}

/// The runs of one arm: their decisions, the tool's times, and (on the seed kit's
/// kernel, and always in the model) what their wakeup scans tested.
#[derive(Default)]
struct RunsOf {
    decisions: Vec<Decisions>,
    times: Vec<f64>,
    scans: Vec<ScanStats>,
}

impl RunsOf {
    /// The runs of several boots as one set (scan statistics only where every
    /// boot has them).
    fn pool(boots: &[RunsOf]) -> RunsOf {
        let mut out = RunsOf::default();
        for b in boots {
            out.decisions.extend(b.decisions.iter().cloned());
            out.times.extend(&b.times);
            out.scans.extend(&b.scans);
        }
        if out.scans.len() != out.decisions.len() {
            out.scans.clear();
        }
        out
    }

    /// The per-run values: the tool's time, then each scan statistic per call.
    fn values(&self) -> Vec<(&'static str, Kind, Vec<f64>)> {
        let mut v = vec![(TOOL_TIME, Kind::Time, self.times.clone())];
        for (name, field) in SCAN_STATISTICS {
            let x = self.scans.iter().map(|s| s.per_call(field)).collect();
            v.push((name, Kind::Cpus, x));
        }
        v
    }
}

/// Both arms' per-run values, as the effect comparison takes them.
fn run_values<'a>(
    a: &'a [(&'static str, Kind, Vec<f64>)],
    b: &'a [(&'static str, Kind, Vec<f64>)],
) -> Vec<RunValues<'a>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| RunValues {
            statistic: x.0,
            kind: x.1,
            a: &x.2,
            b: &y.2,
        })
        .collect()
}

fn real_side(art: &Artifacts, runs: &[String], case: &OracleCase) -> Result<RunsOf, String> {
    let (m, _) = art.machine()?;
    let (opts, _) = decision_opts(&case.workload);
    let mut out = RunsOf::default();
    for run in runs {
        if case.scheduler.is_some() {
            super::scx::check_job_stdout(&art.job_stdout(run)?)?;
        }
        let trace = art.trace(run)?;
        out.decisions.push(Decisions::from_text(&trace, &m, &opts));
        out.times
            .extend(case.workload.tool_time_s(&art.job_stdout(run)?));
        out.scans.extend(ScanStats::of_trace(&trace));
    }
    // Scan statistics only where every run has them (the seed kit's kernel).
    if out.scans.len() != runs.len() {
        out.scans.clear();
    }
    Ok(out)
}

/// `cfg.sim_seeds` seeds of an arm from seed offset `first`, seed `i` on boot
/// `i mod boots`'s machine (each boot of an arm is simulated on its own
/// calibration).
fn sim_side(
    boots: &mut [SimArm],
    case: &OracleCase,
    first: u32,
    cfg: &RunsCfg,
) -> Result<RunsOf, String> {
    let (_, opts) = decision_opts(&case.workload);
    let mut out = RunsOf::default();
    for i in 0..cfg.sim_seeds.max(1) {
        let arm = &mut boots[i as usize % boots.len()];
        let run = simulate(&mut arm.scenario, Some((first + i, cfg.noise)))?;
        out.decisions
            .push(Decisions::from_text(&run.text, &arm.machine, &opts));
        out.times.extend(run.time_s);
        out.scans.push(run.scan);
    }
    Ok(out)
}

/// The A/B of `case` (job name `name`) from its two arms' real runs, each arm
/// simulated on its own boot's machine under its release's preset with its SPEC;
/// `arm_checks` says how the arms' runs were checked.
pub fn compare_ab(
    name: &str,
    arms: [ArmSource<'_>; 2],
    arm_checks: Vec<String>,
    case: &OracleCase,
    cfg: &RunsCfg,
) -> Result<AbOutcome, String> {
    let n = cfg.sim_seeds.max(1);
    // Per arm: its runs boot by boot, and its model on each boot's machine.
    let mut real: Vec<Vec<RunsOf>> = vec![];
    let mut sims: Vec<Vec<SimArm>> = vec![];
    let mut presets = vec![];
    let mut machine = String::new();
    for arm in &arms {
        if arm.runs().next().is_none() {
            return Err(format!(
                "{}: no run of arm `{}` of {name}",
                arm.first().dir.display(),
                arm.label
            ));
        }
        let spec = ArmSpec::parse(&arm.spec);
        let sets = [cfg.model.as_slice(), spec.sets.as_slice()].concat();
        let features = (!spec.features.is_empty()).then(|| spec.features.join(","));
        let (mut r, mut m) = (vec![], vec![]);
        for (art, runs) in &arm.boots {
            r.push(real_side(art, runs, case)?);
            let preset = art.preset()?;
            let (mach, source) = art.machine()?;
            m.push(SimArm {
                scenario: case.on_guest_with(&source, preset, &sets, features.clone())?,
                machine: mach,
            });
            machine = source.describe().to_string();
        }
        presets.push(arm.first().preset()?.to_string());
        real.push(r);
        sims.push(m);
    }
    let (sa, sb) = sims.split_at_mut(1);
    let (a, b) = (
        sim_side(&mut sa[0], case, 0, cfg)?,
        sim_side(&mut sb[0], case, 0, cfg)?,
    );
    // The simulator that predicts no effect: arm A's model, other seeds, as "B".
    let null_b = sim_side(&mut sa[0], case, n, cfg)?;
    let sva = a.values();
    let against = |ra: &RunsOf, rb: &RunsOf, b: &RunsOf| {
        let (rva, rvb, svb) = (ra.values(), rb.values(), b.values());
        compare_effects(
            &ArmRuns {
                a: &ra.decisions,
                b: &rb.decisions,
                values: run_values(&rva, &rvb),
            },
            &ArmRuns {
                a: &a.decisions,
                b: &b.decisions,
                values: run_values(&sva, &svb),
            },
        )
    };
    let (ra, rb) = (RunsOf::pool(&real[0]), RunsOf::pool(&real[1]));
    // Each boot's own real Δ, when the arms ran in the same boots.
    let mut per_boot: Vec<Vec<BootDelta>> = vec![];
    if real[0].len() > 1 && real[0].len() == real[1].len() {
        for (x, y) in real[0].iter().zip(&real[1]) {
            let c = against(x, y, &b);
            per_boot.push(
                c.rows
                    .iter()
                    .map(|r| BootDelta {
                        statistic: r.statistic.clone(),
                        estimate: r.real.delta.map(|d| d.est),
                        effect: r.real.effect,
                    })
                    .collect(),
            );
        }
    }
    let estimates: Vec<Vec<(String, Option<f64>)>> = per_boot
        .iter()
        .map(|b| {
            b.iter()
                .map(|d| (d.statistic.clone(), d.estimate))
                .collect()
        })
        .collect();
    let mut effects = against(&ra, &rb, &b);
    let mut control = against(&ra, &rb, &null_b);
    if !estimates.is_empty() {
        effects.require_every_boot(&estimates);
        control.require_every_boot(&estimates);
    }
    Ok(AbOutcome {
        case: name.to_string(),
        arms: [arms[0].label.clone(), arms[1].label.clone()],
        releases: [
            arms[0].first().release.clone(),
            arms[1].first().release.clone(),
        ],
        presets: [presets[0].clone(), presets[1].clone()],
        machine,
        boots: real[0].len(),
        real_runs: [ra.decisions.len(), rb.decisions.len()],
        sim_seeds: n,
        arm_checks,
        effects,
        control,
        per_boot,
    })
}

/// A feature or tunable A/B of `job` in guest boots `arts` (each ran both arms),
/// arms `specs` (A, B) as given to the guest and to the model; every run's arm
/// checked first.
pub fn compare_knob_ab(
    arts: &[&Artifacts],
    job: &str,
    case: &OracleCase,
    specs: [&str; 2],
    cfg: &RunsCfg,
) -> Result<AbOutcome, String> {
    let real_arms = specs
        .iter()
        .map(|s| RealArm::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut checks = vec![];
    for (i, art) in arts.iter().enumerate() {
        let lines = check_arms(art, job, &real_arms)?;
        let tag = if arts.len() > 1 {
            format!("boot {}: ", i + 1)
        } else {
            String::new()
        };
        checks.extend(lines.into_iter().map(|l| format!("{tag}{l}")));
    }
    let arms = [
        ArmSource::knob_arm(arts, job, 0, specs[0]),
        ArmSource::knob_arm(arts, job, 1, specs[1]),
    ];
    compare_ab(job, arms, checks, case, cfg)
}

/// A kernel A/B of `job`: its runs in boot `a` of one kernel against those in boot
/// `b` of another, each at its kernel's defaults.
pub fn compare_kernel_ab(
    arts: [&Artifacts; 2],
    job: &str,
    case: &OracleCase,
    cfg: &RunsCfg,
) -> Result<AbOutcome, String> {
    let arms = [
        ArmSource::kernel_arm(arts[0], job),
        ArmSource::kernel_arm(arts[1], job),
    ];
    let checks = arms
        .iter()
        .flat_map(|a| {
            a.runs()
                .map(|r| format!("{r}: {} at its defaults", a.first().release))
                .collect::<Vec<_>>()
        })
        .collect();
    compare_ab(job, arms, checks, case, cfg)
}

/// An arm as the `oracle ab` command takes it: a `compare` SPEC whose item
/// `kernel=K` (K as `--kernel` takes it) picks the arm's kernel: (kernel, the rest
/// of the SPEC).
pub fn split_kernel(spec: &str) -> (Option<String>, String) {
    let mut kernel = None;
    let mut rest = vec![];
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) if k.trim() == "kernel" => kernel = Some(v.trim().to_string()),
            _ => rest.push(item),
        }
    }
    (kernel, rest.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept A/B boot with the given runs: (name, features file, tunables file).
    fn boot(tag: &str, runs: &[(&str, &str, Option<&str>)]) -> Artifacts {
        let dir = std::env::temp_dir().join(format!("schedlab-ab-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("uname_r"), "5.10.0-32-amd64\n").unwrap();
        std::fs::write(dir.join(FEATURES_FILE), "WA_IDLE WA_WEIGHT TTWU_QUEUE\n").unwrap();
        for (name, feats, tun) in runs {
            let d = dir.join("jobs").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("trace.txt"), "").unwrap();
            std::fs::write(d.join(FEATURES_FILE), feats).unwrap();
            if let Some(t) = tun {
                std::fs::write(d.join(TUNABLES_FILE), t).unwrap();
            }
        }
        Artifacts::open(&dir).unwrap()
    }

    #[test]
    fn every_run_must_have_run_with_its_arm() {
        let on = "WA_IDLE WA_WEIGHT TTWU_QUEUE";
        let off = "NO_WA_IDLE NO_WA_WEIGHT TTWU_QUEUE";
        let arms = [
            RealArm::parse("").unwrap(),
            RealArm::parse("NO_WA_IDLE,NO_WA_WEIGHT,kernel.tunables.sched_nr_migrate=8").unwrap(),
        ];
        let good = boot(
            "good",
            &[
                ("hb.a.r1", on, Some("sched_nr_migrate 32\n")),
                ("hb.b.r1", off, Some("sched_nr_migrate 8\n")),
                ("hb.a.r2", on, Some("sched_nr_migrate 32\n")),
                ("hb.b.r2", off, Some("sched_nr_migrate 8\n")),
            ],
        );
        assert_eq!(arm_runs(&good, "hb", 1), ["hb.b.r1", "hb.b.r2"]);
        let lines = check_arms(&good, "hb", &arms).unwrap();
        assert_eq!(
            lines,
            [
                "hb.a.r1: boot defaults",
                "hb.a.r2: boot defaults",
                "hb.b.r1: NO_WA_IDLE NO_WA_WEIGHT sched_nr_migrate=8 in effect",
                "hb.b.r2: NO_WA_IDLE NO_WA_WEIGHT sched_nr_migrate=8 in effect",
            ]
        );
        // A B run whose write did not take: the features file still says WA_IDLE.
        let bad = boot(
            "bad-feature",
            &[
                ("hb.a.r1", on, Some("sched_nr_migrate 32\n")),
                ("hb.b.r1", on, Some("sched_nr_migrate 8\n")),
            ],
        );
        let e = check_arms(&bad, "hb", &arms).unwrap_err();
        assert!(
            e.contains("hb.b.r1: arm b") && e.contains("NO_WA_IDLE is not in"),
            "{e}"
        );
        // A tunable at another value, and one not read back at all.
        let bad = boot(
            "bad-tunable",
            &[
                ("hb.a.r1", on, None),
                ("hb.b.r1", off, Some("sched_nr_migrate 32\n")),
            ],
        );
        let e = check_arms(&bad, "hb", &arms).unwrap_err();
        assert!(
            e.contains("sched_nr_migrate read 32 before the run, not 8"),
            "{e}"
        );
        // An A run after a B run whose bits were not put back.
        let bad = boot(
            "leak",
            &[
                ("hb.a.r1", off, Some("sched_nr_migrate 32\n")),
                ("hb.b.r1", off, Some("sched_nr_migrate 8\n")),
            ],
        );
        let e = check_arms(&bad, "hb", &arms).unwrap_err();
        assert!(
            e.contains("hb.a.r1: arm a") && e.contains("boot state WA_IDLE"),
            "{e}"
        );
        let bad = boot("no-b", &[("hb.a.r1", on, None)]);
        let e = check_arms(&bad, "hb", &arms).unwrap_err();
        assert!(e.contains("no run of arm b"), "{e}");
        for a in [good, bad] {
            let _ = std::fs::remove_dir_all(&a.dir);
        }
    }

    #[test]
    fn an_arm_names_its_kernel_apart_from_its_switches() {
        assert_eq!(
            split_kernel("kernel=6.12, NO_WA_IDLE,kernel.tunables.sched_nr_migrate=8"),
            (
                Some("6.12".to_string()),
                "NO_WA_IDLE,kernel.tunables.sched_nr_migrate=8".to_string()
            )
        );
        assert_eq!(split_kernel(""), (None, String::new()));
        assert_eq!(
            split_kernel("NO_TTWU_QUEUE"),
            (None, "NO_TTWU_QUEUE".into())
        );
        assert_eq!(arm_label("", None), "defaults");
        assert_eq!(arm_label("NO_WA_IDLE", Some("6.12")), "6.12: NO_WA_IDLE");
        assert_eq!(arm_tag(1), 'b');
    }
}
