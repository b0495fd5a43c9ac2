//! Experiments: scenario files → validated scenarios → runs → results.
//!
//! A scenario is TOML with four sections (`[machine]`, `[kernel]`, `[workload]`,
//! `[run]`); see `docs/scenarios.md`. It is read in two steps ([`crate::config`]):
//! a located tree (where `--set KEY=VALUE` overrides are applied), then this module's
//! validated [`Scenario`], which cannot be inconsistent. A run builds the kernel and
//! the workload, runs the event loop, and gathers a [`RunResult`] whose JSON form is
//! versioned ([`SCHEMA_VERSION`]) and byte-identical for the same scenario and seed
//! apart from `wall_seconds`.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod explain;
pub mod frames;
pub mod oracle;
pub mod reproduce;
pub mod result;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub mod sandbox;
/// Without Linux's seccomp there is no sandbox, and no C scheduler runs.
#[cfg(not(target_os = "linux"))]
pub mod sandbox {
    /// Always the error: a C scheduler runs only inside the Linux sandbox.
    pub fn contained<T>(
        source: &str,
        _object: &std::path::Path,
        _f: impl FnOnce() -> T,
    ) -> Result<T, String> {
        Err(format!(
            "the scheduler in {source}: a C scheduler runs only inside schedlab's sandbox, \
             which needs Linux's seccomp"
        ))
    }
}
pub mod seed_tables;
pub mod sweep;
pub mod validate;

use crate::config::{Doc, Node, TableReader, Val};
use crate::engine::{checked_ns, checked_ns_f64, RngStreams, NSEC_PER_MSEC};
use crate::error::InputError;
use crate::machine::{self, Machine};
use crate::metrics::{trace::DecisionTrace, Collector, Observers};
use crate::sched::core::Kernel;
use crate::sched::features::{Features, KernelPreset, SchedFeat, Tunables};
use crate::sim::{Sim, SimError};
use crate::workload::generators::{self, Tool};
use crate::workload::ipc::ChanParams;
use crate::workload::program::WorkloadSpec;
use std::path::Path;
use std::sync::Arc;

pub use result::{RunResult, SCHEMA_VERSION};

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub machine: Machine,
    pub kernel_preset: &'static str,
    pub features: Features,
    pub tunables: Tunables,
    pub workload_kind: String,
    /// Shared by every run of the scenario (a run reads it, never changes it): a
    /// 100 000-task workload is not copied per run.
    pub workload: Arc<WorkloadSpec>,
    /// The benchmark tool whose output a generator workload rebuilds.
    pub tool: Option<Arc<dyn Tool>>,
    pub duration_ns: Option<u64>,
    pub seed: u64,
    pub runs: u32,
    /// `[run] noise`: relative run-to-run noise on system-call costs (0 = none).
    pub noise: f64,
    /// `[run] shadow`: the feature whose other setting every `select_idle_sibling`
    /// reaching the LLC scans also runs, without effect, to count how often the two
    /// choose differently (`SisShadow`); no output but that count changes.
    pub shadow: Option<SchedFeat>,
}

/// Workload kinds known to this build: `tasks` plus every generator.
pub fn workload_kinds() -> Vec<(&'static str, &'static str)> {
    let mut v = vec![(
        "tasks",
        "generic task groups running behaviour programs written in the scenario",
    )];
    v.extend_from_slice(crate::workload::generators::GENERATORS);
    v
}

/// Resolve `[machine]`: `preset = NAME` (or "host"), `file = PATH` (relative to the
/// scenario; to the working directory when it comes from `--set`), or `sysfs = DIR`
/// (a sysfs snapshot).
pub(crate) fn resolve_machine(doc: &Doc, m: &TableReader<'_>) -> Result<Machine, InputError> {
    let base = doc.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let preset = m.str("preset")?;
    let file = m.str("file")?;
    let sysfs = m.str("sysfs")?;
    let machine = match (preset, file, sysfs) {
        (Some("host"), None, None) => machine::sysfs::import_host()?,
        (Some(p), None, None) => machine::presets::preset(p).ok_or_else(|| {
            m.err(
                "preset",
                format!("unknown machine preset `{p}` (see `schedlab list machines`)"),
            )
        })?,
        // A path from `--set machine.file=...` is relative to the working directory.
        (None, Some(f), None) if m.get("file").is_some_and(|n| n.span.is_none()) => {
            machine::file::load_machine_file(Path::new(f))?
        }
        (None, Some(f), None) => machine::file::load_machine_file(&base.join(f))?,
        (None, None, Some(d)) => machine::sysfs::import_sysfs(&base.join(d))?,
        (None, None, None) => {
            return Err(m.err("preset", "`[machine]` needs `preset`, `file` or `sysfs`"))
        }
        _ => {
            return Err(m.err(
                "preset",
                "`[machine]` takes only one of `preset`, `file`, `sysfs`",
            ))
        }
    };
    m.finish()?;
    Ok(machine)
}

/// The most runs (seeds) one command may ask for: `--runs` of compare, sweep,
/// reproduce, validate and calibrate, and `run.runs`. Each run's result is kept
/// until the end (for the paired statistics), so the bound is a memory bound.
pub const MAX_RUNS: u32 = 10_000;

/// `e` re-attributed to the command-line option `label` (e.g. "--b `NO_X`") when it
/// came from the command line rather than from a file: a scenario reports every
/// override as `--set:` or `--features:`, which misleads when the words were
/// written after `--a`, `--b` or `--grid`. Call it only once the shared `--set`s
/// are known to be valid, so that the command-line error can only be `label`'s.
pub(crate) fn relabel(e: InputError, label: &str) -> InputError {
    if e.file.is_some() {
        return e;
    }
    let msg = ["--set: ", "--features: "]
        .iter()
        .find_map(|p| e.msg.strip_prefix(p))
        .unwrap_or(&e.msg);
    InputError::new(format!("{label}: {msg}"))
}

/// Command-line adjustments applied on top of the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub sets: Vec<String>,
    /// Comma-separated `NAME` / `NO_NAME` list, applied after the scenario's own.
    pub features: Option<String>,
    pub seed: Option<u64>,
    /// The user's word that a C scheduler the scenario names (`[kernel]
    /// scheduler = "x.bpf.c"`) may be compiled and run (`--allow-native-scheduler`;
    /// the shipped `scenarios/scx/` sources need none). Never read from a scenario.
    pub native_scheduler: bool,
}

/// The flag that gives [`Overrides::native_scheduler`].
pub const NATIVE_FLAG: &str = "--allow-native-scheduler";

/// What a scheduler's user-space half reads from sysfs and hands its BPF half
/// (`[kernel.scheduler_globals]` `name = "fact"`): counts, and per-CPU ids.
pub const MACHINE_FACTS: &[&str] = &[
    "nr_cpus",
    "nr_llcs",
    "nr_nodes",
    "cpu_core",
    "cpu_llc",
    "cpu_package",
    "cpu_node",
    "cpu_capacity",
];

/// The value of one of [`MACHINE_FACTS`] on `m`.
fn machine_fact(m: &Machine, fact: &str) -> Option<crate::sched::ext::bpf::GlobalValue> {
    use crate::sched::ext::bpf::GlobalValue::{Array, Int};
    let per_cpu = |f: fn(&crate::machine::Cpu) -> i64| Array(m.cpus.iter().map(f).collect());
    let count = |f: fn(&crate::machine::Cpu) -> usize| {
        Int(m.cpus.iter().map(f).max().map_or(0, |x| x as i64 + 1))
    };
    Some(match fact {
        "nr_cpus" => Int(m.nr_cpus() as i64),
        "nr_llcs" => count(|c| c.llc),
        "nr_nodes" => count(|c| c.node),
        "cpu_core" => per_cpu(|c| c.core as i64),
        "cpu_llc" => per_cpu(|c| c.llc as i64),
        "cpu_package" => per_cpu(|c| c.package as i64),
        "cpu_node" => per_cpu(|c| c.node as i64),
        "cpu_capacity" => per_cpu(|c| i64::from(c.capacity_orig)),
        _ => return None,
    })
}

/// `[kernel.scheduler_globals]`: `name = true | 42 | [0, 0, 1, 1] | "cpu_llc"`, each name a C
/// identifier (a global of the scheduler's source; the compiler checks it exists
/// and has room).
fn scheduler_globals(
    k: &TableReader<'_>,
    machine: &Machine,
) -> Result<Vec<(String, crate::sched::ext::bpf::GlobalValue)>, InputError> {
    use crate::config::Val;
    use crate::sched::ext::bpf::{is_c_identifier, GlobalValue};
    let Some(g) = k.table("scheduler_globals")? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let keys: Vec<&String> = g.keys().collect();
    for key in keys {
        let node = g.get(key).expect("a key of the table");
        if !is_c_identifier(key) {
            return Err(g.err(key, format!("`{key}` is not a C identifier")));
        }
        let v = match &node.val {
            Val::Bool(b) => GlobalValue::Int(i64::from(*b)),
            Val::Int(i) => GlobalValue::Int(*i),
            Val::Array(a) => GlobalValue::Array(
                a.iter()
                    .map(|n| match n.val {
                        Val::Int(i) => Ok(i),
                        Val::Bool(b) => Ok(i64::from(b)),
                        _ => Err(g.err(key, format!("`{key}`: an array of integers"))),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Val::Str(fact) => machine_fact(machine, fact).ok_or_else(|| {
                g.err(
                    key,
                    format!(
                        "`{key}` = \"{fact}\": not a fact of the machine (known: {})",
                        MACHINE_FACTS.join(", ")
                    ),
                )
            })?,
            v => {
                return Err(g.err(
                    key,
                    format!(
                        "`{key}` must be a boolean, an integer, an array of integers \
                         or a fact of the machine, found {}",
                        v.type_name()
                    ),
                ))
            }
        };
        out.push((key.clone(), v));
    }
    g.finish()?;
    Ok(out)
}

/// The `[kernel]` section (preset, features, tunables, cpufreq governor) on a
/// `machine`, then the `--features` override.
fn kernel_section(
    doc: &Doc,
    root: &TableReader<'_>,
    machine: &Machine,
    ov_features: Option<&str>,
    native_ok: bool,
) -> Result<(&'static KernelPreset, Features, Tunables), InputError> {
    let mut kernel_preset = KernelPreset::by_name("v5.6").expect("v5.6 preset exists");
    let mut features = kernel_preset.features();
    let nr_cpus = machine.nr_cpus();
    let mut tunables = Tunables::v5_6(nr_cpus);
    if let Some(k) = root.table("kernel")? {
        if let Some(p) = k.str("preset")? {
            kernel_preset = KernelPreset::by_name(p).ok_or_else(|| {
                k.err(
                    "preset",
                    format!("unknown kernel preset `{p}` (see `schedlab list kernels`)"),
                )
            })?;
            features = kernel_preset.features();
        }
        if let Some(list) = k.get("features") {
            for w in feature_words(doc, list)? {
                features.apply(&w).map_err(|e| doc.err(list, e))?;
            }
        }
        if let Some(t) = k.table("tunables")? {
            for key in t.keys() {
                let n = t.get(key).expect("key exists");
                let v = crate::workload::tasks::node_to_toml(n);
                tunables.set(key, &v).map_err(|e| doc.err(n, e))?;
            }
            tunables.scale_for(nr_cpus);
            t.finish()?;
        }
        if let Some(g) = k.str("cpufreq")? {
            tunables.cpufreq = crate::sched::cpufreq::Governor::by_name(g).ok_or_else(|| {
                k.err(
                    "cpufreq",
                    format!(
                        "unknown cpufreq governor `{g}` (known: {})",
                        crate::sched::cpufreq::Governor::NAMES.join(", ")
                    ),
                )
            })?;
        }
        if let Some(g) = k.str("cpuidle")? {
            tunables.cpuidle =
                crate::sched::cpuidle::IdleGovernor::by_name(g).ok_or_else(|| {
                    k.err(
                        "cpuidle",
                        format!(
                            "unknown cpuidle governor `{g}` (known: {})",
                            crate::sched::cpuidle::IdleGovernor::NAMES.join(", ")
                        ),
                    )
                })?;
        }
        if let Some(kt) = k.str("kthreads")? {
            tunables.kthreads = match kt {
                "none" => None,
                name => Some(
                    crate::workload::kthreads::profile(name)
                        .ok_or_else(|| {
                            k.err(
                                "kthreads",
                                format!(
                                    "unknown kernel-thread profile `{name}` (known: none, {})",
                                    crate::workload::kthreads::PROFILES
                                        .iter()
                                        .map(|p| p.name)
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            )
                        })?
                        .name,
                ),
            };
        }
        let class = k.str("class")?;
        let sched = k.str("scheduler")?;
        match (class, sched) {
            (None | Some("fair"), None) => {}
            (Some("ext"), Some(name)) if name.ends_with(".c") => {
                // A BPF C scheduler: relative to the scenario (to the working
                // directory when it comes from `--set`), compiled and test-loaded
                // now so that any error is the scenario's.
                let path = if k.get("scheduler").is_some_and(|n| n.span.is_none()) {
                    Path::new(name).to_path_buf()
                } else {
                    doc.file
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default()
                        .join(name)
                };
                // Native code: only with the user's word for it, or one of the
                // shipped reference schedulers byte for byte.
                let text = crate::input::read_text(&path)
                    .map_err(|e| k.err("scheduler", e.to_string()))?;
                if !native_ok && !crate::sched::ext::bpf::is_shipped(text.as_bytes()) {
                    return Err(k.err(
                        "scheduler",
                        format!(
                            "{} is a C scheduler: schedlab compiles it and runs it as native \
                             code (contained, docs/sched-ext.md \"Trust\"); run it only if \
                             you trust its source, with {NATIVE_FLAG}",
                            path.display()
                        ),
                    ));
                }
                let globals = scheduler_globals(&k, machine)?;
                let object = crate::sched::ext::bpf::compile(&path, &globals)
                    .and_then(|o| {
                        sandbox::contained(name, &o, || {
                            crate::sched::ext::bpf::load(&o, nr_cpus).map(|_| ())
                        })?
                        .map(|()| o)
                    })
                    .map_err(|e| k.err("scheduler", e))?;
                tunables.ext_scheduler = Some(name.to_string());
                tunables.ext_object = Some(object);
                tunables.ext_source = Some((path, globals));
            }
            (Some("ext"), Some(_)) if k.get("scheduler_globals").is_some() => return Err(k.err(
                "scheduler_globals",
                "`scheduler_globals` sets globals of a BPF C scheduler (`scheduler = \"x.bpf.c\"`)",
            )),
            (Some("ext"), Some(name)) => {
                if !crate::sched::ext::SCHEDULERS.contains(&name) {
                    return Err(k.err(
                        "scheduler",
                        format!(
                            "unknown sched_ext scheduler `{name}` (built in: {}; or a BPF C file, `*.bpf.c`)",
                            crate::sched::ext::SCHEDULERS.join(", ")
                        ),
                    ));
                }
                tunables.ext_scheduler = Some(name.to_string());
            }
            (Some("ext"), None) => {
                return Err(k.err("class", "class = \"ext\" needs a `scheduler`".to_string()))
            }
            (None | Some("fair"), Some(_)) => {
                return Err(k.err(
                    "scheduler",
                    "`scheduler` is a sched_ext scheduler: it needs class = \"ext\"".to_string(),
                ))
            }
            (Some(c), _) => {
                return Err(k.err(
                    "class",
                    format!("unknown scheduling class `{c}` (known: fair, ext)"),
                ))
            }
        }
        k.finish()?;
    }
    if let Some(f) = ov_features {
        for w in f.split(',').filter(|w| !w.trim().is_empty()) {
            features
                .apply(w)
                .map_err(|e| InputError::new(format!("--features: {e}")))?;
        }
    }
    Ok((kernel_preset, features, tunables))
}

/// `kernel.features`: an array of names or a comma-separated string.
fn feature_words(doc: &Doc, list: &Node) -> Result<Vec<String>, InputError> {
    Ok(match &list.val {
        Val::Array(a) => a
            .iter()
            .map(|n| match &n.val {
                Val::Str(s) => Ok(s.clone()),
                v => Err(doc.err(
                    n,
                    format!(
                        "`kernel.features` entries must be strings, found {}",
                        v.type_name()
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
        Val::Str(s) => s
            .split(',')
            .filter(|w| !w.trim().is_empty())
            .map(str::to_string)
            .collect(),
        v => {
            return Err(doc.err(
                list,
                format!(
                    "`kernel.features` must be an array of names, found {}",
                    v.type_name()
                ),
            ))
        }
    })
}

/// The `[workload]` section.
struct WorkloadSection {
    kind: String,
    /// The workload, background load appended.
    workload: WorkloadSpec,
    /// The generating tool, if any.
    tool: Option<Arc<dyn Tool>>,
}

/// The `[workload]` section: its kind, the workload (background load appended) and
/// the generating tool, if any.
fn workload_section(
    doc: &Doc,
    root: &TableReader<'_>,
    machine: &Machine,
) -> Result<WorkloadSection, InputError> {
    let w = root
        .table("workload")?
        .ok_or_else(|| doc.err_file("missing `[workload]` section"))?;
    let kind = w
        .str("kind")?
        .ok_or_else(|| w.err("kind", "`[workload]` needs `kind`"))?
        .to_string();
    let background = generators::background::parse(&w, machine)?;
    let (mut workload, tool) = if kind == "tasks" {
        (
            crate::workload::tasks::parse(doc, &w, machine.nr_cpus())?,
            None,
        )
    } else {
        match generators::parse(&kind, &w, machine)? {
            Some(g) => (g.spec, Some(g.tool)),
            None => {
                return Err(w.err(
                    "kind",
                    format!("unknown workload kind `{kind}` (see `schedlab list workloads`)"),
                ))
            }
        }
    };
    w.finish()?;
    if let Some(bg) = &background {
        generators::background::append(&mut workload, bg, machine);
    }
    let max = crate::engine::MAX_TASKS;
    if workload.tasks.len() > max {
        return Err(doc.err(
            w.node,
            format!(
                "the workload starts {} tasks, more than the limit of {max} (see docs/limits.md)",
                workload.tasks.len()
            ),
        ));
    }
    // Parsers push task by task and op by op: give back the growing vectors' spare
    // capacity (up to half of a 100 000-task workload's memory).
    workload.tasks.shrink_to_fit();
    workload.programs.shrink_to_fit();
    for p in &mut workload.programs {
        p.ops.shrink_to_fit();
    }
    Ok(WorkloadSection {
        kind,
        workload,
        tool,
    })
}

/// The `[run]` section.
struct RunSection {
    duration_ns: Option<u64>,
    seed: u64,
    runs: u32,
    noise: f64,
    shadow: Option<SchedFeat>,
}

/// The `[run]` section (defaults: the workload's duration, seed 1, one run, no
/// noise).
fn run_section(doc: &Doc, root: &TableReader<'_>) -> Result<RunSection, InputError> {
    let mut rs = RunSection {
        duration_ns: None,
        seed: 1,
        runs: 1,
        noise: 0.0,
        shadow: None,
    };
    let Some(r) = root.table("run")? else {
        return Ok(rs);
    };
    if let Some(d) = r.get("duration_ms") {
        rs.duration_ns = Some(duration_ms(doc, d)?);
    }
    rs.seed = r.uint("seed", 0, i64::MAX as u64)?.unwrap_or(1);
    if let Some(n) = r.get("noise") {
        rs.noise = match &n.val {
            Val::Float(f) if (0.0..1.0).contains(f) => *f,
            Val::Int(0) => 0.0,
            _ => return Err(doc.err(n, "`run.noise` must be a number in [0, 1), e.g. 0.05")),
        };
    }
    rs.runs = r.uint("runs", 1, u64::from(MAX_RUNS))?.unwrap_or(1) as u32;
    if let Some(n) = r.get("shadow") {
        const SHADOWED: [SchedFeat; 3] = [
            SchedFeat::SMT_BALANCE,
            SchedFeat::IDLE_CPU_MASK,
            SchedFeat::SIS_MERGED,
        ];
        let f = match &n.val {
            Val::Str(w) => SchedFeat::from_name(w).filter(|f| SHADOWED.contains(f)),
            _ => None,
        };
        rs.shadow = Some(f.ok_or_else(|| {
            doc.err(
                n,
                "`run.shadow` names the scan feature to shadow: \"SMT_BALANCE\", \"IDLE_CPU_MASK\" or \"SIS_MERGED\"",
            )
        })?);
    }
    r.finish()?;
    Ok(rs)
}

/// `run.duration_ms` in ns: positive, at least 1 ns, within the engine's limit.
fn duration_ms(doc: &Doc, d: &Node) -> Result<u64, InputError> {
    let ns = match &d.val {
        Val::Int(i) if *i > 0 => checked_ns(*i as u64, NSEC_PER_MSEC),
        Val::Float(f) if *f > 0.0 => checked_ns_f64(*f, NSEC_PER_MSEC),
        _ => return Err(doc.err(d, "`run.duration_ms` must be a positive number")),
    };
    match ns {
        Some(0) => Err(doc.err(
            d,
            "`run.duration_ms` rounds to 0 ns: the shortest run is 1 ns (1e-6 ms)",
        )),
        Some(ns) => Ok(ns),
        None => Err(doc.err(
            d,
            format!("`run.duration_ms` {}", crate::engine::time_limit_text()),
        )),
    }
}

impl Scenario {
    /// Load and validate a scenario file.
    pub fn load(path: &Path, ov: &Overrides) -> Result<Scenario, InputError> {
        let doc = Doc::load(path)?;
        Scenario::from_doc(doc, ov)
    }

    /// Validate a parsed document (after applying `ov.sets`).
    pub fn from_doc(mut doc: Doc, ov: &Overrides) -> Result<Scenario, InputError> {
        for s in &ov.sets {
            doc.set(s)?;
        }
        let root = TableReader::new(&doc, &doc.root, "")?;
        let m = root
            .table("machine")?
            .ok_or_else(|| doc.err_file("missing `[machine]` section"))?;
        let machine = resolve_machine(&doc, &m)?;
        let (kernel_preset, features, tunables) = kernel_section(
            &doc,
            &root,
            &machine,
            ov.features.as_deref(),
            ov.native_scheduler,
        )?;
        let WorkloadSection {
            kind,
            mut workload,
            tool,
        } = workload_section(&doc, &root, &machine)?;
        if let Some(p) = tunables
            .kthreads
            .and_then(crate::workload::kthreads::profile)
        {
            crate::workload::kthreads::add(&mut workload, &machine, p);
        }
        let run = run_section(&doc, &root)?;
        let seed = ov.seed.unwrap_or(run.seed);
        let duration_ns = run.duration_ns.or(workload.duration_ns);
        root.finish()?;
        let name = doc
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Scenario {
            name,
            machine,
            kernel_preset: kernel_preset.name,
            features,
            tunables,
            workload_kind: kind,
            workload: workload.into(),
            tool,
            duration_ns,
            seed,
            runs: run.runs,
            noise: run.noise,
            shadow: run.shadow,
        })
    }
}

/// Where a scenario comes from: a file, or TOML text (the Python package's
/// strings and dicts) with the name that errors and relative paths inside it use.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    File(&'a Path),
    Text { text: &'a str, name: &'a Path },
}

impl Source<'_> {
    /// The scenario's text and its name.
    pub fn text(&self) -> Result<(String, std::path::PathBuf), InputError> {
        match *self {
            Source::File(p) => Ok((crate::input::read_text(p)?, p.to_path_buf())),
            Source::Text { text, name } => Ok((text.to_string(), name.to_path_buf())),
        }
    }

    /// Load and validate the scenario with `ov` applied.
    pub fn load(&self, ov: &Overrides) -> Result<Scenario, InputError> {
        match *self {
            Source::File(p) => Scenario::load(p, ov),
            Source::Text { text, name } => Scenario::from_doc(Doc::parse(text, name)?, ov),
        }
    }
}

/// Worker threads: `jobs`, or every CPU of this machine (at least one).
pub fn jobs_or_all(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
    .max(1)
}

/// The trace format a `--trace` file's extension names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// `.txt`: ftrace text (`metrics/ftrace.rs`).
    Ftrace,
    /// `.perfetto-trace` / `.pftrace`: binary Perfetto (`metrics/perfetto.rs`).
    Perfetto,
    /// `.dat`: trace-cmd `trace.dat` (`metrics/tracedat.rs`).
    Dat,
    /// Any other extension: the decision trace (`metrics/trace.rs`).
    Decision,
}

impl TraceFormat {
    pub fn of(path: &Path) -> TraceFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("txt") => TraceFormat::Ftrace,
            Some("perfetto-trace" | "pftrace") => TraceFormat::Perfetto,
            Some("dat") => TraceFormat::Dat,
            _ => TraceFormat::Decision,
        }
    }
}

/// What to collect besides the metrics.
#[derive(Clone, Debug, Default)]
pub struct RunOpts {
    /// Verify kernel invariants after every event.
    pub check: bool,
    /// Keep a decision trace (optionally within a time window).
    pub trace: bool,
    pub trace_window: Option<(u64, u64)>,
    /// Return the trace as ftrace text (metrics/ftrace.rs) instead of the decision
    /// trace (with `trace`).
    pub ftrace: bool,
    /// The ftrace text's layout; `None`: the modelled kernel's
    /// ([`crate::metrics::ftrace::Layout::of_kernel`]).
    pub ftrace_layout: Option<crate::metrics::ftrace::Layout>,
    /// Trace LISA's `sched_tp` module events the modelled kernel has
    /// ([`RunOpts::sched_tp_set`]).
    pub sched_tp: bool,
}

impl RunOpts {
    /// LISA's `sched_tp` events a traced run of `sc` records: none unless
    /// [`RunOpts::sched_tp`], else those the modelled kernel's release (and, for
    /// `sched_cpu_capacity`, an arm machine) has.
    pub fn sched_tp_set(&self, sc: &Scenario) -> crate::sched::SchedTpSet {
        if !self.sched_tp {
            return crate::sched::SchedTpSet::default();
        }
        let arm = sc.machine.arch == machine::Arch::Arm64;
        crate::sched::SchedTpSet::of(crate::sched::features::version_of(sc.kernel_preset), arm)
    }

    /// The ftrace layout for a run of `sc`.
    pub fn layout(&self, sc: &Scenario) -> crate::metrics::ftrace::Layout {
        self.ftrace_layout
            .unwrap_or_else(|| crate::metrics::ftrace::Layout::of_kernel(sc.kernel_preset))
    }
}

/// Build the simulated system for `sc`, replication `rep` of seed `seed`.
pub fn build(sc: &Scenario, seed: u64, rep: u64, opts: &RunOpts) -> Sim<Observers> {
    let m = sc.machine.clone();
    let idle: Vec<usize> = (0..m.nr_cpus()).map(|c| m.idle_states(c).len()).collect();
    let obs = Observers {
        collector: Collector::new(m.nr_cpus(), &idle)
            .with_levels(&m.shared_levels())
            .with_freq_domains(
                &m.freq_domains
                    .iter()
                    .map(|d| d.opps.iter().map(|o| o.freq_khz).collect())
                    .collect::<Vec<_>>(),
                m.cpus.iter().map(|c| c.freq_domain).collect(),
            )
            .with_energy(crate::metrics::energy::EnergyMeter::new(&m)),
        trace: opts.trace.then(|| DecisionTrace {
            window: opts.trace_window,
            ..Default::default()
        }),
        log: None,
    };
    let page = if m.arch == machine::Arch::Power {
        65536
    } else {
        4096
    };
    let chan = if page == 65536 {
        ChanParams::ppc64()
    } else {
        ChanParams::x86_64()
    };
    let k = Kernel::new(
        m,
        sc.features,
        sc.tunables.clone(),
        &KernelPreset::by_name(sc.kernel_preset)
            .expect("validated preset")
            .topology_opts(),
        obs,
    );
    let mut sim = Sim::new(
        k,
        Arc::clone(&sc.workload),
        RngStreams::new(seed, rep),
        chan,
    );
    sim.check = opts.check;
    sim.noise = sc.noise;
    sim.k.shadow = sc.shadow;
    sim
}

/// Run replication `rep` of `sc` with `seed`.
pub fn run(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
) -> Result<(RunResult, Option<String>), SimError> {
    let log = if opts.trace && opts.ftrace {
        Log::Events
    } else {
        Log::No
    };
    let (r, t) = run_traced(sc, seed, rep, opts, log)?;
    let t = t.map(|t| match t {
        TraceOut::Log { log, tasks } => {
            crate::metrics::ftrace::render(&log, &tasks, sc.machine.nr_cpus(), opts.layout(sc))
        }
        TraceOut::Text(s) => s,
    });
    Ok((r, t))
}

/// Run replication `rep` of `sc` with `seed` and return the scheduler event log
/// (within `opts.trace_window`) encoded as a binary Perfetto trace
/// (metrics/perfetto.rs), with counter logging on for its counter tracks (which
/// changes no decision and no simulation event). `opts.trace`/`opts.ftrace` are
/// ignored.
pub fn run_perfetto(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
) -> Result<(RunResult, Vec<u8>), SimError> {
    let (r, log, tasks) = run_logged(sc, seed, rep, opts, true)?;
    let bytes = crate::metrics::perfetto::render(&log, &tasks, &sc.machine, sc.kernel_preset);
    Ok((r, bytes))
}

/// Run replication `rep` of `sc` with `seed` keeping the raw scheduler event log
/// (within `opts.trace_window`) and the tasks it names; `counters` also logs the
/// cfs_rq counters (for Perfetto's counter tracks; no decision changes).
/// `opts.trace`/`opts.ftrace` are ignored.
pub fn run_logged(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
    counters: bool,
) -> Result<
    (
        RunResult,
        crate::metrics::EventLog,
        Vec<crate::sched::core::Task>,
    ),
    SimError,
> {
    let o = RunOpts {
        trace: false,
        ..opts.clone()
    };
    let log = if counters {
        Log::WithCounters
    } else {
        Log::Events
    };
    match run_traced(sc, seed, rep, &o, log)? {
        (r, Some(TraceOut::Log { log, tasks })) => Ok((r, log, tasks)),
        (r, _) => Ok((r, crate::metrics::EventLog::default(), vec![])),
    }
}

enum TraceOut {
    Log {
        log: crate::metrics::EventLog,
        tasks: Vec<crate::sched::core::Task>,
    },
    Text(String),
}

/// Which event log a traced run keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Log {
    /// None (the decision trace, if asked for, is kept as text).
    No,
    /// The scheduler events (ftrace text).
    Events,
    /// The scheduler events and the cfs_rq counters (Perfetto).
    WithCounters,
}

/// The C scheduler `sc` runs under, if any: the name the scenario gave it and
/// its compiled object. A run of it goes to the sandbox.
pub(crate) fn native_scheduler(sc: &Scenario) -> Option<(&str, &Path)> {
    let object = sc.tunables.ext_object.as_deref()?;
    Some((sc.tunables.ext_scheduler.as_deref().unwrap_or("?"), object))
}

/// A traced run as it crosses from the sandbox: the result with the fields its
/// JSON leaves out, the trace with the tasks' names for its renderers.
#[derive(serde::Serialize, serde::Deserialize)]
enum WireTrace {
    Log {
        log: crate::metrics::EventLog,
        /// By pid: `(tgid, parent, name, nice)`.
        tasks: Vec<(crate::abi::Pid, Option<crate::abi::Pid>, String, i32)>,
    },
    Text(String),
}

fn run_traced(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
    log: Log,
) -> Result<(RunResult, Option<TraceOut>), SimError> {
    let Some((name, object)) = native_scheduler(sc) else {
        return run_traced_here(sc, seed, rep, opts, log);
    };
    let (wire, trace) = sandbox::contained(name, object, || {
        run_traced_here(sc, seed, rep, opts, log).map(|(r, t)| {
            let t = t.map(|t| match t {
                TraceOut::Log { log, tasks } => WireTrace::Log {
                    log,
                    tasks: tasks
                        .iter()
                        .map(|t| (t.tgid, t.parent, t.name.clone(), t.nice))
                        .collect(),
                },
                TraceOut::Text(s) => WireTrace::Text(s),
            });
            (result::Wire::of(r), t)
        })
    })
    .map_err(|msg| SimError::Sandbox { msg })??;
    let trace = trace.map(|t| match t {
        WireTrace::Log { log, tasks } => TraceOut::Log {
            log,
            tasks: tasks
                .into_iter()
                .enumerate()
                .map(|(pid, (tgid, parent, name, nice))| {
                    let pid = pid as crate::abi::Pid;
                    crate::sched::core::Task::for_trace(pid, tgid, parent, &name, nice)
                })
                .collect(),
        },
        WireTrace::Text(s) => TraceOut::Text(s),
    });
    Ok((wire.into_result(), trace))
}

fn run_traced_here(
    sc: &Scenario,
    seed: u64,
    rep: u64,
    opts: &RunOpts,
    log: Log,
) -> Result<(RunResult, Option<TraceOut>), SimError> {
    let t0 = std::time::Instant::now();
    let mut sim = build(sc, seed, rep, opts);
    if log != Log::No {
        sim.k.obs.trace = None;
        let mut log = crate::metrics::EventLog::new(opts.trace_window.unwrap_or((0, u64::MAX)));
        log.boot(&sim.k.trace_state());
        log.sched_tp = opts.sched_tp_set(sc);
        sim.k.set_log_sched_tp(log.sched_tp);
        sim.k.obs.log = Some(log);
    }
    if log == Log::WithCounters {
        sim.k.set_log_counters();
    }
    let stop = sim.run(sc.duration_ns)?;
    let wall = t0.elapsed().as_secs_f64();
    if let Some(log) = &mut sim.k.obs.log {
        log.end = Some(sim.k.now);
    }
    let trace = match sim.k.obs.log.take() {
        Some(log) => Some(TraceOut::Log {
            log,
            tasks: sim.k.tasks.clone(),
        }),
        None => sim.k.obs.trace.take().map(|t| TraceOut::Text(t.text)),
    };
    Ok((RunResult::gather(sc, seed, &mut sim, stop, wall), trace))
}

/// Write `bytes` to `path` atomically (see [`crate::files`]).
pub use crate::files::write_atomic;
