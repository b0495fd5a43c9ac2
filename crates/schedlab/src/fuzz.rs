//! Fuzz targets: the hostile-input contract, written once.
//!
//! Everything a user hands schedlab — a scenario file and its `--set` overrides, a
//! machine file, an rt-app JSON file, a trace to replay, a sysfs snapshot — is
//! untrusted text. The
//! contract for all of it is simple: **any input is either rejected with an
//! [`InputError`] (with a message saying what is wrong) or runs to completion**. A
//! panic, an abort, a hang or unbounded memory use is a bug, whatever the bytes.
//!
//! This module holds one function per input format, each taking raw bytes. The
//! coverage-guided fuzzer (the separate `fuzz/` crate, built on stable Rust with
//! libFuzzer, see `docs/fuzzing.md`) calls them with mutated inputs, and the
//! regression test `tests/fuzz_regressions.rs` replays every file kept under
//! `tests/data/fuzz/<target>/` through the very same functions, so a case once found
//! stays fixed without a fuzzer in the loop.
//!
//! * [`scenario`]: the bytes as a scenario TOML. A line `#--set` splits the input;
//!   every later non-empty line is one `--set KEY=VALUE` override.
//! * [`machine`]: the bytes as a machine TOML; if it parses, the sched domains are
//!   built and a tiny workload runs on it.
//! * [`rtapp`]: the bytes as rt-app JSON for a small preset machine; if it parses,
//!   it runs.
//! * [`replay`]: the bytes as a scheduler trace's text for a small preset machine; if
//!   it is read, its replay runs.
//! * [`sysfs`]: the bytes drive [`arbitrary`] to build a small sysfs snapshot tree
//!   (realistic file names, hostile contents) that is imported as a machine.
//!
//! An accepted input is simulated for at most [`SIM_LIMIT_NS`] of simulated time, so
//! that one execution stays cheap; the fuzzer's own timeout then catches real hangs.
//! Inputs that would make schedlab read other files — `[machine] file`/`sysfs`,
//! `preset = "host"`, an rt-app `workload.file` — are skipped by the scenario
//! target (the fuzzer must not read arbitrary paths such as `/dev/zero`); the other
//! targets cover those formats directly.

use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};

use crate::config::{Doc, Val};
use crate::error::InputError;
use crate::experiment::{self, Overrides, RunOpts, Scenario};
use crate::machine::{self, Machine};
use crate::sched::topology::{SchedTopology, TopologyOpts};

/// The longest simulated time one fuzz execution runs (5 ms).
pub const SIM_LIMIT_NS: u64 = 5_000_000;

/// The line that separates a scenario from its `--set` overrides in [`scenario`].
pub const SET_SEPARATOR: &str = "#--set";

/// The names of the targets, as used for the corpus and regression directories.
pub const TARGETS: [&str; 5] = ["scenario", "machine", "rtapp", "replay", "sysfs"];

/// Run the target called `name` on `data` (for the regression test).
pub fn by_name(name: &str) -> Option<fn(&[u8])> {
    match name {
        "scenario" => Some(scenario),
        "machine" => Some(machine),
        "rtapp" => Some(rtapp),
        "replay" => Some(replay),
        "sysfs" => Some(sysfs),
        _ => None,
    }
}

/// The contract on a rejection: it says something.
fn rejected(e: InputError) {
    assert!(
        !e.msg.trim().is_empty(),
        "InputError without a message: {e:?}"
    );
}

/// Simulate an accepted scenario for at most [`SIM_LIMIT_NS`]. A `SimError` that
/// blames the workload (a deadlock, a program that makes no progress) is a
/// legitimate outcome of a user's input, but it too must say what happened; one
/// that blames the simulator (an event-queue fault) is a finding.
fn simulate(mut sc: Scenario) {
    sc.duration_ns = Some(sc.duration_ns.map_or(SIM_LIMIT_NS, |d| d.min(SIM_LIMIT_NS)));
    if let Err(e) = experiment::run(&sc, sc.seed, 0, &RunOpts::default()) {
        assert!(
            e.is_input_error(),
            "accepted input, then an internal error: {e}"
        );
        assert!(
            !e.to_string().trim().is_empty(),
            "SimError without a message"
        );
    }
}

/// Parse `text` as a scenario at `file` with overrides `sets`, and simulate it.
fn scenario_at(text: &str, file: &Path, sets: Vec<String>, allow_files: bool) {
    let mut doc = match Doc::parse(text, file) {
        Ok(d) => d,
        Err(e) => return rejected(e),
    };
    if !allow_files {
        // Apply the overrides here, so that the final document can be checked for
        // references to other files before anything is read.
        for s in &sets {
            if let Err(e) = doc.set(s) {
                return rejected(e);
            }
        }
        if reads_other_files(&doc) {
            return;
        }
    }
    let ov = Overrides {
        sets: if allow_files { sets } else { Vec::new() },
        ..Overrides::default()
    };
    match Scenario::from_doc(doc, &ov) {
        Ok(sc) => simulate(sc),
        Err(e) => rejected(e),
    }
}

/// Whether the scenario would read a machine file, a sysfs tree, the host, or an
/// rt-app file.
fn reads_other_files(doc: &Doc) -> bool {
    let Val::Table(root) = &doc.root.val else {
        return false;
    };
    let table = |name: &str| match root.get(name).map(|n| &n.val) {
        Some(Val::Table(t)) => Some(t),
        _ => None,
    };
    let machine_refs = table("machine").is_some_and(|m| {
        m.contains_key("file")
            || m.contains_key("sysfs")
            || matches!(m.get("preset").map(|n| &n.val), Some(Val::Str(p)) if p == "host")
    });
    machine_refs || table("workload").is_some_and(|w| w.contains_key("file"))
}

/// Target `scenario`: a scenario TOML, then optionally `#--set` and one override a
/// line.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (toml, sets) = match text
        .split_inclusive('\n')
        .position(|l| l.trim_end() == SET_SEPARATOR)
    {
        Some(i) => {
            let mut lines = text.split_inclusive('\n');
            let toml: String = lines.by_ref().take(i).collect();
            let sets = lines
                .skip(1)
                .map(|l| l.trim_end_matches(['\n', '\r']).to_string())
                .filter(|l| !l.is_empty())
                .collect();
            (toml, sets)
        }
        None => (text.to_string(), Vec::new()),
    };
    scenario_at(&toml, Path::new("fuzz.toml"), sets, false);
}

/// A tiny workload that exercises wakeups and balancing on any machine.
const TINY_TASKS: &str = r#"
[workload]
kind = "tasks"
[[workload.channel]]
name = "c"
kind = "pipe"
count = 2
[[workload.task]]
name = "hog"
count = 3
program = [ { op = "loop", body = [ { op = "compute", work = "300us" }, { op = "sleep", time = "100us" } ] } ]
[[workload.task]]
name = "ping"
count = 2
program = [ { op = "loop", body = [ { op = "write", chan = "c[i]", bytes = 1 }, { op = "compute", work = "20us" } ] } ]
[[workload.task]]
name = "pong"
count = 2
program = [ { op = "loop", body = [ { op = "read", chan = "c[i]", bytes = 1 }, { op = "compute", work = "20us" } ] } ]
"#;

/// Write `contents` as `name` in a fresh temporary directory and run the scenario
/// `toml` (which refers to `name`) from that directory.
fn run_with_file(name: &str, contents: &[u8], toml: &str) {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join(name), contents).expect("writing the fuzz input");
    scenario_at(toml, &dir.path().join("fuzz.toml"), Vec::new(), true);
}

/// Target `machine`: a machine TOML; if it parses, its sched domains are built and
/// a tiny workload runs on it.
pub fn machine(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let m = match machine::file::parse_machine_toml(text, Path::new("machine.toml")) {
        Ok(m) => m,
        Err(e) => return rejected(e),
    };
    let _ = SchedTopology::build(&m, &TopologyOpts::v5_6());
    let toml = format!("[machine]\nfile = \"machine.toml\"\n{TINY_TASKS}");
    run_with_file("machine.toml", data, &toml);
}

/// The machine the rt-app and replay targets run on: big.LITTLE, six CPUs.
const RTAPP_MACHINE: &str = "juno-r0";

/// Target `rtapp`: rt-app JSON for `RTAPP_MACHINE`; if it parses, it runs.
pub fn rtapp(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let m: Machine = machine::presets::preset(RTAPP_MACHINE).expect("preset exists");
    if let Err(e) = crate::workload::rtapp::parse_file(text, Path::new("fuzz.json"), &m) {
        return rejected(e);
    }
    let toml = format!(
        "[machine]\npreset = \"{RTAPP_MACHINE}\"\n[workload]\nkind = \"rtapp\"\nfile = \"fuzz.json\"\n"
    );
    run_with_file("fuzz.json", data, &toml);
}

/// Target `replay`: a trace's text for `RTAPP_MACHINE`; if it is read, its replay
/// runs.
pub fn replay(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let m: Machine = machine::presets::preset(RTAPP_MACHINE).expect("preset exists");
    if let Err(e) = crate::workload::replay::from_text(text, Path::new("fuzz.txt"), &m) {
        return rejected(e);
    }
    let toml = format!(
        "[machine]\npreset = \"{RTAPP_MACHINE}\"\n[workload]\nkind = \"replay\"\nfile = \"fuzz.txt\"\n"
    );
    run_with_file("fuzz.txt", data, &toml);
}

/// A CPU-local sysfs file (under `sys/devices/system/cpu/cpuN/`).
#[derive(Arbitrary, Debug)]
enum CpuFile {
    CoreId,
    PhysicalPackageId,
    CoreCpusList,
    ThreadSiblingsList,
    PackageCpusList,
    CoreSiblingsList,
    ClusterCpusList,
    CpuCapacity,
    CacheLevel(u8),
    CacheType(u8),
    CacheSharedCpuList(u8),
    IdleName(u8),
    IdleLatency(u8),
    IdleResidency(u8),
    IdlePower(u8),
    ScalingMaxFreq,
    CpuinfoMaxFreq,
}

/// A file of the snapshot, by its realistic name.
#[derive(Arbitrary, Debug)]
enum SysfsFile {
    CpuOnline,
    CpuPossible,
    NodeOnline,
    Cpu(u8, CpuFile),
    NodeCpulist(u8),
    NodeDistance(u8),
    ProcCpuinfo,
}

/// File contents: mostly the shapes the importer expects, filled with hostile
/// values, and sometimes free text.
#[derive(Arbitrary, Debug)]
enum Contents {
    /// A CPU list such as `0-3,6`: (first, last) ranges.
    CpuList(Vec<(u16, u16)>),
    Number(i64),
    Unsigned(u64),
    /// Node distances: a row of numbers.
    Row(Vec<u16>),
    Word(Word),
    Text(String),
}

#[derive(Arbitrary, Debug)]
enum Word {
    Unified,
    Data,
    Instruction,
    VendorId,
    CpuImplementer,
    Power9,
    Empty,
}

/// How many CPUs, cache levels, idle states and nodes the generated tree names.
const SYSFS_SPAN: u8 = 8;

/// CPU numbers in generated CPU lists stay below this (just above the largest
/// preset, 1024 CPUs): a 65 536-CPU machine is legal but costs ~100 ms to build,
/// which starves the fuzzer. Larger numbers still come through `Contents::Text`.
const CPU_SPAN: u16 = 1100;

impl SysfsFile {
    fn path(&self) -> String {
        let c = "sys/devices/system/cpu";
        let n = "sys/devices/system/node";
        let i = |k: &u8| k % SYSFS_SPAN;
        match self {
            SysfsFile::CpuOnline => format!("{c}/online"),
            SysfsFile::CpuPossible => format!("{c}/possible"),
            SysfsFile::NodeOnline => format!("{n}/online"),
            SysfsFile::NodeCpulist(k) => format!("{n}/node{}/cpulist", i(k)),
            SysfsFile::NodeDistance(k) => format!("{n}/node{}/distance", i(k)),
            SysfsFile::ProcCpuinfo => "proc/cpuinfo".to_string(),
            SysfsFile::Cpu(cpu, f) => {
                let rel = match f {
                    CpuFile::CoreId => "topology/core_id".to_string(),
                    CpuFile::PhysicalPackageId => "topology/physical_package_id".to_string(),
                    CpuFile::CoreCpusList => "topology/core_cpus_list".to_string(),
                    CpuFile::ThreadSiblingsList => "topology/thread_siblings_list".to_string(),
                    CpuFile::PackageCpusList => "topology/package_cpus_list".to_string(),
                    CpuFile::CoreSiblingsList => "topology/core_siblings_list".to_string(),
                    CpuFile::ClusterCpusList => "topology/cluster_cpus_list".to_string(),
                    CpuFile::CpuCapacity => "cpu_capacity".to_string(),
                    CpuFile::CacheLevel(k) => format!("cache/index{}/level", i(k)),
                    CpuFile::CacheType(k) => format!("cache/index{}/type", i(k)),
                    CpuFile::CacheSharedCpuList(k) => {
                        format!("cache/index{}/shared_cpu_list", i(k))
                    }
                    CpuFile::IdleName(k) => format!("cpuidle/state{}/name", i(k)),
                    CpuFile::IdleLatency(k) => format!("cpuidle/state{}/latency", i(k)),
                    CpuFile::IdleResidency(k) => format!("cpuidle/state{}/residency", i(k)),
                    CpuFile::IdlePower(k) => format!("cpuidle/state{}/power", i(k)),
                    CpuFile::ScalingMaxFreq => "cpufreq/scaling_max_freq".to_string(),
                    CpuFile::CpuinfoMaxFreq => "cpufreq/cpuinfo_max_freq".to_string(),
                };
                format!("{c}/cpu{}/{rel}", i(cpu))
            }
        }
    }
}

impl Contents {
    fn render(&self) -> String {
        match self {
            Contents::CpuList(r) => r
                .iter()
                .map(|(a, b)| (a % CPU_SPAN, b % CPU_SPAN))
                .map(|(a, b)| {
                    if a == b {
                        format!("{a}")
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
            Contents::Number(v) => v.to_string(),
            Contents::Unsigned(v) => v.to_string(),
            Contents::Row(r) => r.iter().map(u16::to_string).collect::<Vec<_>>().join(" "),
            Contents::Word(w) => match w {
                Word::Unified => "Unified",
                Word::Data => "Data",
                Word::Instruction => "Instruction",
                Word::VendorId => "vendor_id\t: GenuineIntel",
                Word::CpuImplementer => "CPU implementer\t: 0x41",
                Word::Power9 => "cpu\t\t: POWER9",
                Word::Empty => "",
            }
            .to_string(),
            Contents::Text(t) => t.clone(),
        }
    }
}

/// Target `sysfs`: a generated snapshot tree, imported as a machine; if that
/// succeeds, the sched domains are built.
pub fn sysfs(data: &[u8]) {
    let Ok(files) = Vec::<(SysfsFile, Contents)>::arbitrary_take_rest(Unstructured::new(data))
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    for (f, c) in &files {
        let p = dir.path().join(f.path());
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("creating the tree");
        std::fs::write(&p, c.render() + "\n").expect("writing a sysfs file");
    }
    match machine::sysfs::import_sysfs(dir.path()) {
        Ok(m) => {
            let _ = SchedTopology::build(&m, &TopologyOpts::v5_6());
        }
        Err(e) => rejected(e),
    }
}
