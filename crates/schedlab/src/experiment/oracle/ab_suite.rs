//! The recorded A/B suite: switches flipped on real kernels, checked without QEMU.
//!
//! Like the level suite ([`super::suite`]), the A/B suite separates recording from
//! checking. Each case of `scenarios/oracle/ab.toml` is one scenario on one
//! topology with two arms. A *switch* case (features, tunables) is `boots` boots
//! of its kernel, each running both arms interleaved ([`super::knobs::GuestAb`]),
//! packed as `tests/data/oracle/ab/<case>.tar.gz`, `<case>.boot2.tar.gz`, ...; their
//! runs are pooled per arm. A *kernel* case (5.10 → 6.12 at their
//! defaults) compares two boots; with `from_suite` they are the level suite's own
//! bundles of that topology (`tests/data/oracle/<topology>-<kernel>.tar.gz`),
//! whose runs of the scenario are each kernel's repetitions. *Checking* unpacks each
//! case, checks that every run's arm took effect, simulates both arms on the
//! guest's machine and compares the effects ([`super::ab`]); `cargo test` does it
//! against the committed bundles and a golden table of grades, so a model change
//! that turns a predicted effect around shows up as a changed verdict.

use super::ab::{compare_ab, compare_kernel_ab, compare_knob_ab, AbOutcome, ArmSource};
use super::decisions::effects::EffectScore;
use super::guest::qemu::GuestTopology;
use super::guest::{bundle_name, pack, unpack, GuestMeta, GuestRequest, KernelChoice};
use super::knobs::{knobs_for, GuestAb, RealArm};
use super::{Artifacts, OracleCase, RunsCfg};
use crate::error::InputError;
use crate::machine::file::load_machine_file;
use crate::report::text::interval;
use crate::stats::verdict::Grade;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbSuiteFile {
    /// Real runs of each arm per boot (default 5).
    repetitions: Option<u32>,
    /// Boots of each switch case, their runs pooled (default 1).
    boots: Option<u32>,
    /// Simulated seeds per arm (default 5) and their noise (default 0.05).
    sim_seeds: Option<u32>,
    noise: Option<f64>,
    /// `--set`s of every simulation (default [`super::GUEST_MODEL`]).
    model: Option<Vec<String>>,
    case: Vec<AbCaseFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbCaseFile {
    name: String,
    /// A scenario of the suite's directory, without `.toml`.
    scenario: String,
    /// The topology: a machine file of the suite's directory.
    machine: String,
    /// A switch case: its kernel, and arm A (default: the boot defaults) and B.
    kernel: Option<String>,
    #[serde(default)]
    a: String,
    b: Option<String>,
    /// A kernel case: its two kernels, each at its defaults.
    kernels: Option<[String; 2]>,
    /// A kernel case read from the level suite's bundles of its topology.
    #[serde(default)]
    from_suite: bool,
    /// What the case asks (shown in the report).
    #[serde(default)]
    why: String,
}

/// What a case flips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbArms {
    /// Feature words and tunables in one boot of `kernel`.
    Switches {
        kernel: String,
        a: String,
        b: String,
    },
    /// Two kernels at their defaults, a boot each.
    Kernels {
        kernels: [String; 2],
        from_suite: bool,
    },
}

/// One case, loaded and checked.
#[derive(Clone, Debug)]
pub struct AbCase {
    pub name: String,
    pub scenario: String,
    /// The topology's name (its machine file's stem) and file.
    pub topology: String,
    pub machine: PathBuf,
    pub guest: GuestTopology,
    pub arms: AbArms,
    pub why: String,
}

impl AbCase {
    fn sets(&self) -> Vec<String> {
        vec![format!("machine.file={}", self.machine.display())]
    }

    /// The boots of the case's bundles of `kernel` in a suite of `boots`: (boot,
    /// bundle).
    pub fn bundles(&self, data: &Path, kernel: &str, boots: u32) -> Vec<(u32, PathBuf)> {
        let n = match self.arms {
            AbArms::Switches { .. } => boots,
            AbArms::Kernels { .. } => 1,
        };
        (1..=n).map(|b| (b, self.bundle(data, kernel, b))).collect()
    }

    /// The kernels the case's arms run on.
    pub fn kernels(&self) -> Vec<String> {
        match &self.arms {
            AbArms::Switches { kernel, .. } => vec![kernel.clone()],
            AbArms::Kernels { kernels, .. } => kernels.to_vec(),
        }
    }

    /// The bundle of the case's boot `boot` (1, 2, ...) of `kernel` under the
    /// oracle data directory; a kernel case has one boot per kernel.
    pub fn bundle(&self, data: &Path, kernel: &str, boot: u32) -> PathBuf {
        match &self.arms {
            AbArms::Switches { .. } if boot > 1 => data
                .join("ab")
                .join(format!("{}.boot{boot}.tar.gz", self.name)),
            AbArms::Switches { .. } => data.join("ab").join(format!("{}.tar.gz", self.name)),
            AbArms::Kernels {
                from_suite: true, ..
            } => data.join(bundle_name(&self.topology, kernel)),
            AbArms::Kernels { .. } => data.join("ab").join(bundle_name(&self.name, kernel)),
        }
    }

    /// Arms as the report names them: (A, B).
    pub fn arm_words(&self) -> (String, String) {
        match &self.arms {
            AbArms::Switches { a, b, .. } => {
                (super::ab::arm_label(a, None), super::ab::arm_label(b, None))
            }
            AbArms::Kernels { kernels, .. } => (kernels[0].clone(), kernels[1].clone()),
        }
    }
}

/// The A/B suite as loaded.
#[derive(Clone, Debug)]
pub struct AbSuite {
    pub dir: PathBuf,
    pub cases: Vec<AbCase>,
    pub repetitions: u32,
    /// Boots of each switch case.
    pub boots: u32,
    pub cfg: RunsCfg,
}

impl AbSuite {
    /// Load `path`: every case's machine must fit QEMU, its scenario must have a real
    /// program, and its switches must be its kernel's (an error naming what the
    /// kernel has).
    pub fn load(path: &Path) -> Result<AbSuite, InputError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::in_file(path, None, format!("cannot read: {e}")))?;
        let f: AbSuiteFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| crate::error::line_of(&text, s.start));
            InputError::in_file(path, line, e.message().to_string())
        })?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let line_of = |name: &str| {
            text.find(&format!("\"{name}\""))
                .map(|at| crate::error::line_of(&text, at))
        };
        let mut cases: Vec<AbCase> = vec![];
        for c in f.case {
            let err = |msg: String| InputError::in_file(path, line_of(&c.name), msg);
            if cases.iter().any(|x| x.name == c.name) {
                return Err(err(format!("case `{}` listed twice", c.name)));
            }
            let machine = dir.join(&c.machine);
            let m = load_machine_file(&machine)?;
            let guest = GuestTopology::from_machine(&m)
                .map_err(|e| err(format!("case `{}`: machine `{}`: {e}", c.name, c.machine)))?;
            let topology = machine
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let arms = match (c.kernel, c.b, c.kernels) {
                (Some(kernel), Some(b), None) if !c.from_suite => {
                    let choice = KernelChoice::parse(&kernel)
                        .map_err(|e| err(format!("case `{}`: {e}", c.name)))?;
                    let knobs =
                        knobs_for(&choice).map_err(|e| err(format!("case `{}`: {e}", c.name)))?;
                    for spec in [&c.a, &b] {
                        RealArm::parse(spec)
                            .and_then(|r| r.check(knobs))
                            .map_err(|e| err(format!("case `{}`: {e}", c.name)))?;
                    }
                    if c.a.trim() == b.trim() {
                        return Err(err(format!("case `{}`: arms a and b are the same", c.name)));
                    }
                    AbArms::Switches { kernel, a: c.a, b }
                }
                (None, None, Some(kernels)) if c.a.is_empty() => {
                    for k in &kernels {
                        KernelChoice::parse(k)
                            .map_err(|e| err(format!("case `{}`: {e}", c.name)))?;
                    }
                    AbArms::Kernels {
                        kernels,
                        from_suite: c.from_suite,
                    }
                }
                _ => {
                    return Err(err(format!(
                        "case `{}`: a switch case has `kernel` and `b` (and optionally `a`); \
                         a kernel case has `kernels = [A, B]` (and optionally `from_suite`)",
                        c.name
                    )))
                }
            };
            let case = AbCase {
                name: c.name,
                scenario: c.scenario,
                topology,
                machine,
                guest,
                arms,
                why: c.why,
            };
            OracleCase::load(
                &dir.join(format!("{}.toml", case.scenario)),
                &case.sets(),
                false,
            )?;
            cases.push(case);
        }
        let repetitions = f.repetitions.unwrap_or(5);
        let boots = f.boots.unwrap_or(1);
        let sim_seeds = f.sim_seeds.unwrap_or(5);
        let noise = f.noise.unwrap_or(0.05);
        let err = |msg: String| InputError::in_file(path, None, msg);
        if !(2..=50).contains(&repetitions) {
            return Err(err(format!(
                "repetitions = {repetitions}: must be 2 ..= 50"
            )));
        }
        if !(1..=10).contains(&boots) {
            return Err(err(format!("boots = {boots}: must be 1 ..= 10")));
        }
        if !(2..=100).contains(&sim_seeds) {
            return Err(err(format!("sim_seeds = {sim_seeds}: must be 2 ..= 100")));
        }
        if !(0.0..1.0).contains(&noise) {
            return Err(err(format!("noise = {noise}: must be in [0, 1)")));
        }
        Ok(AbSuite {
            dir,
            cases,
            repetitions,
            boots,
            cfg: RunsCfg {
                sim_seeds,
                noise,
                model: f
                    .model
                    .unwrap_or_else(|| super::GUEST_MODEL.iter().map(|s| s.to_string()).collect()),
                control: vec![],
            },
        })
    }

    /// The case named `name`, or an error listing the names.
    pub fn case(&self, name: &str) -> Result<&AbCase, String> {
        self.cases.iter().find(|c| c.name == name).ok_or_else(|| {
            format!(
                "no case `{name}` (the suite has: {})",
                self.cases
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    fn oracle_case(&self, c: &AbCase) -> Result<OracleCase, String> {
        OracleCase::load(
            &self.dir.join(format!("{}.toml", c.scenario)),
            &c.sets(),
            false,
        )
        .map_err(|e| e.to_string())
    }
}

/// Boot and record boot `boot` of case `c` (a boot of each of its kernels; a kernel
/// case from the level suite is recorded by that suite), with the schedlab binary
/// `exe` for the calibration.
pub fn record(
    suite: &AbSuite,
    c: &AbCase,
    boot: u32,
    exe: &Path,
    data: &Path,
    adjust: &dyn Fn(&mut GuestRequest),
) -> Result<Vec<GuestMeta>, String> {
    if matches!(
        c.arms,
        AbArms::Kernels {
            from_suite: true,
            ..
        }
    ) {
        return Err(format!(
            "case `{}` reads the level suite's bundles: record them with `schedlab oracle suite --record --topology {}`",
            c.name, c.topology
        ));
    }
    let case = suite.oracle_case(c)?;
    let mut metas = vec![];
    for kernel in c.kernels() {
        let choice = KernelChoice::parse(&kernel)?;
        let mut jobs = vec![super::calibrate_job(exe)?];
        jobs.push(case.job(&c.scenario, &choice)?);
        let mut req = GuestRequest::new(c.guest.clone(), choice.clone(), jobs);
        req.repetitions = suite.repetitions;
        if let AbArms::Switches { a, b, .. } = &c.arms {
            let arms = vec![RealArm::parse(a)?, RealArm::parse(b)?];
            req.ab = Some(GuestAb::new(arms, knobs_for(&choice)?)?);
        }
        adjust(&mut req);
        let work = std::env::temp_dir().join(format!(
            "schedlab-oracle-ab-record-{}-{}-{kernel}",
            std::process::id(),
            c.name
        ));
        let _ = std::fs::remove_dir_all(&work);
        let run = super::guest::run_guest(&req, &work)?;
        let bundle = c.bundle(data, &kernel, boot);
        if let Some(d) = bundle.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let r = pack(&work, &bundle);
        let _ = std::fs::remove_dir_all(&work);
        r?;
        metas.push(run.meta);
    }
    Ok(metas)
}

/// One checked case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AbCheck {
    pub case: String,
    pub topology: String,
    pub kernels: Vec<String>,
    pub why: String,
    pub outcome: AbOutcome,
}

/// Check every recorded case of `suite` under `data` (`only`: one case); cases not
/// recorded are listed in the second value.
pub fn check(
    suite: &AbSuite,
    data: &Path,
    only: Option<&str>,
) -> Result<(Vec<AbCheck>, Vec<String>), String> {
    use rayon::prelude::*;
    let mut todo = vec![];
    let mut missing = vec![];
    for c in &suite.cases {
        if only.is_some_and(|o| o != c.name) {
            continue;
        }
        let absent: Vec<String> = c
            .kernels()
            .iter()
            .flat_map(|k| c.bundles(data, k, suite.boots))
            .filter(|(_, b)| !b.exists())
            .map(|(_, b)| b.display().to_string())
            .collect();
        if absent.is_empty() {
            todo.push(c);
        } else {
            missing.push(format!("{}: {}", c.name, absent.join(", ")));
        }
    }
    let out = todo
        .par_iter()
        .map(|c| check_case(suite, c, data).map_err(|e| format!("case {}: {e}", c.name)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok((out, missing))
}

fn check_case(suite: &AbSuite, c: &AbCase, data: &Path) -> Result<AbCheck, String> {
    let case = suite.oracle_case(c)?;
    let mut tmps = vec![];
    let mut arts = vec![];
    for k in c.kernels() {
        for (boot, bundle) in c.bundles(data, &k, suite.boots) {
            let tmp = std::env::temp_dir().join(format!(
                "schedlab-oracle-ab-check-{}-{}-{k}-{boot}",
                std::process::id(),
                c.name
            ));
            let _ = std::fs::remove_dir_all(&tmp);
            unpack(&bundle, &tmp)?;
            arts.push(Artifacts::open(&tmp)?);
            tmps.push(tmp);
        }
    }
    let r = match &c.arms {
        AbArms::Switches { a, b, .. } => {
            let all: Vec<&Artifacts> = arts.iter().collect();
            compare_knob_ab(&all, &c.scenario, &case, [a, b], &suite.cfg)
        }
        AbArms::Kernels {
            from_suite: true, ..
        } => compare_kernel_ab([&arts[0], &arts[1]], &c.scenario, &case, &suite.cfg),
        AbArms::Kernels { .. } => {
            let arms = [
                ArmSource::kernel_arm(&arts[0], &c.scenario),
                ArmSource::kernel_arm(&arts[1], &c.scenario),
            ];
            compare_ab(&c.scenario, arms, vec![], &case, &suite.cfg)
        }
    };
    for t in tmps {
        let _ = std::fs::remove_dir_all(t);
    }
    let mut outcome = r?;
    outcome.case = c.name.clone();
    Ok(AbCheck {
        case: c.name.clone(),
        topology: c.topology.clone(),
        kernels: c.kernels(),
        why: c.why.clone(),
        outcome,
    })
}

/// Every grade, one line each (`case statistic grade | control grade`), in suite
/// order: the golden form `cargo test` compares.
pub fn verdict_lines(checks: &[AbCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        for (i, r) in c.outcome.effects.rows.iter().enumerate() {
            let ctl = c
                .outcome
                .control
                .rows
                .get(i)
                .map_or("-", |x| x.grade.word());
            let _ = writeln!(
                s,
                "{} {} {} | control {}",
                c.case,
                r.statistic,
                r.grade.word(),
                ctl
            );
        }
    }
    s
}

/// The scores of every case, and their total (model, then the no-effect control).
pub fn totals(checks: &[AbCheck]) -> (EffectScore, EffectScore) {
    let (mut m, mut c) = (EffectScore::default(), EffectScore::default());
    for x in checks {
        m.add(&x.outcome.effects.score());
        c.add(&x.outcome.control.score());
    }
    (m, c)
}

fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        "–".into()
    } else {
        format!("{:.0} %", 100.0 * k as f64 / n as f64)
    }
}

/// One row per case: topology, kernels, arms, the real effects' count and the
/// model's sign and size shares, the nulls, the inconclusive statistics, and the
/// no-effect control's sign share; then the totals.
pub fn summary_markdown(checks: &[AbCheck]) -> String {
    let mut s = String::from(
        "| case | topology | kernel | A | B | real effects | sign | size | real nulls agreed | inconclusive | control sign |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in checks {
        let m = c.outcome.effects.score();
        let k = c.outcome.control.score();
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` | `{}` | {} | {}/{} | {}/{} | {}/{} | {} | {}/{} |",
            c.case,
            c.topology,
            c.kernels.join(" → "),
            c.outcome.arms[0],
            c.outcome.arms[1],
            m.powered,
            m.sign,
            m.powered,
            m.size,
            m.powered,
            m.agree_null,
            m.real_null,
            m.underpowered,
            k.sign,
            k.powered
        );
    }
    let (m, k) = totals(checks);
    let _ = writeln!(
        s,
        "| **all** | | | | | {} | {}/{} ({}) | {}/{} ({}) | {}/{} ({}) | {} | {}/{} ({}) |",
        m.powered,
        m.sign,
        m.powered,
        pct(m.sign, m.powered),
        m.size,
        m.powered,
        pct(m.size, m.powered),
        m.agree_null,
        m.real_null,
        pct(m.agree_null, m.real_null),
        m.underpowered,
        k.sign,
        k.powered,
        pct(k.sign, k.powered)
    );
    s
}

/// How a case's real effects reproduce from boot to boot: over the statistics with
/// a real effect in some boot, those with the same effect in every boot, those of
/// opposite signs in two boots, and the rest (an effect in some boots only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BootAgreement {
    pub powered_any: usize,
    pub same: usize,
    pub opposite: usize,
    pub some_boots: usize,
}

impl BootAgreement {
    /// The agreement of one case's boots (`None` with a single boot).
    pub fn of(o: &AbOutcome) -> Option<BootAgreement> {
        use crate::stats::verdict::Effect;
        if o.per_boot.len() < 2 {
            return None;
        }
        let mut a = BootAgreement::default();
        for (i, d) in o.per_boot[0].iter().enumerate() {
            let es: Vec<Effect> = o
                .per_boot
                .iter()
                .filter_map(|b| {
                    b.get(i)
                        .filter(|x| x.statistic == d.statistic)
                        .map(|x| x.effect)
                })
                .collect();
            if !es.iter().any(|e| e.is_effect()) {
                continue;
            }
            a.powered_any += 1;
            if es.contains(&Effect::Up) && es.contains(&Effect::Down) {
                a.opposite += 1;
            } else if es.len() == o.per_boot.len() && es.iter().all(|e| *e == es[0]) {
                a.same += 1;
            } else {
                a.some_boots += 1;
            }
        }
        Some(a)
    }
}

/// One row per case recorded in several boots: its boots' agreement on the real
/// effects; then the totals.
pub fn boots_markdown(checks: &[AbCheck]) -> String {
    let mut s = String::from(
        "| case | boots | runs per arm | real effect in some boot | same in every boot | opposite in two boots | in some boots only |\n|---|---|---|---|---|---|---|\n",
    );
    let mut t = BootAgreement::default();
    for c in checks {
        let Some(a) = BootAgreement::of(&c.outcome) else {
            continue;
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.case,
            c.outcome.boots,
            c.outcome.real_runs[0],
            a.powered_any,
            a.same,
            a.opposite,
            a.some_boots
        );
        t.powered_any += a.powered_any;
        t.same += a.same;
        t.opposite += a.opposite;
        t.some_boots += a.some_boots;
    }
    let _ = writeln!(
        s,
        "| **all** | | | {} | {} ({}) | {} | {} |",
        t.powered_any,
        t.same,
        pct(t.same, t.powered_any),
        t.opposite,
        t.some_boots
    );
    s
}

/// Per case, the statistics where the real kernel shows an effect or the model
/// gets a mismatch: both Δs and the grade (the rows the model gaps are read from).
pub fn effects_markdown(checks: &[AbCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        let _ = writeln!(
            s,
            "**{}** ({}, {}; A = `{}`, B = `{}`){}\n",
            c.case,
            c.topology,
            c.kernels.join(" → "),
            c.outcome.arms[0],
            c.outcome.arms[1],
            if c.why.is_empty() {
                String::new()
            } else {
                format!(": {}", c.why)
            }
        );
        s.push_str(
            "| statistic | real Δ [95 % CI] | sim Δ [95 % CI] | verdict |\n|---|---|---|---|\n",
        );
        let mut any = false;
        for r in &c.outcome.effects.rows {
            if !(r.real.effect.is_effect() || r.grade.is_mismatch() || r.sim.effect.is_effect()) {
                continue;
            }
            any = true;
            let iv = |d: &super::decisions::effects::Delta| match d.delta {
                Some(_) => format!("{} {}", interval(&d.delta), d.effect.word()),
                None => "–".into(),
            };
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                r.statistic,
                iv(&r.real),
                iv(&r.sim),
                r.grade.word()
            );
        }
        if !any {
            s.push_str("| (no effect on either side) | | | |\n");
        }
        let g: Vec<String> = Grade::ALL
            .iter()
            .map(|g| format!("{} {}", g.word(), c.outcome.effects.count(*g)))
            .collect();
        let _ = writeln!(s, "\n{}\n", g.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_file() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/oracle/ab.toml")
    }

    #[test]
    fn the_shipped_suite_loads_and_covers_what_it_must() {
        let s = AbSuite::load(&suite_file()).unwrap();
        assert!(s.cases.len() >= 8, "{} cases", s.cases.len());
        let mut topologies: Vec<&str> = s.cases.iter().map(|c| c.topology.as_str()).collect();
        topologies.sort();
        topologies.dedup();
        assert!(topologies.len() >= 3, "{topologies:?}");
        let kernels: Vec<String> = s.cases.iter().flat_map(|c| c.kernels()).collect();
        assert!(kernels.iter().any(|k| k == "5.10") && kernels.iter().any(|k| k == "6.12"));
        assert!(s
            .cases
            .iter()
            .any(|c| matches!(c.arms, AbArms::Kernels { .. })));
    }

    #[test]
    fn a_switch_the_kernel_lacks_is_refused_with_its_line() {
        let dir = std::env::temp_dir().join(format!("schedlab-ab-suite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/oracle");
        let p = dir.join("ab.toml");
        let m = src.join("machines/1s4c2t.toml");
        let sc = src.join("hackbench-sockets");
        std::fs::write(
            &p,
            format!(
                "[[case]]\nname = \"x\"\nscenario = \"{}\"\nmachine = \"{}\"\nkernel = \"5.10\"\nb = \"NO_SIS_UTIL\"\n",
                sc.display(),
                m.display()
            ),
        )
        .unwrap();
        let e = AbSuite::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("ab.toml:2") && e.contains("5.10 has no sched_features bit SIS_UTIL"),
            "{e}"
        );
        std::fs::write(
            &p,
            format!(
                "[[case]]\nname = \"x\"\nscenario = \"{}\"\nmachine = \"{}\"\nkernel = \"5.10\"\n",
                sc.display(),
                m.display()
            ),
        )
        .unwrap();
        let e = AbSuite::load(&p).unwrap_err().to_string();
        assert!(e.contains("a switch case has `kernel` and `b`"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
