//! A real kernel's sched-domain chains against the ones schedlab builds.
//!
//! **The concept.** Every CPU's chain of scheduling domains (SMT, MC, DIE/PKG,
//! NODE, NUMA…, bottom-up, degenerate levels removed) fixes where wakeups may look
//! and what load balancing compares, so it is the first thing to agree on before
//! any decision is compared. The kernel prints each surviving domain of each CPU
//! as a directory of small files (`cpuN/domainM/`, `domain0` the lowest):
//! `name`, `flags`, `min_interval`, `max_interval`, `busy_factor`,
//! `imbalance_pct`, `cache_nice_tries` and a few more (`max_newidle_lb_cost`,
//! `groups_flags` from v6.5, `level` from v6.9). v5.10 puts them under
//! `/proc/sys/kernel/sched_domain` (with `CONFIG_SCHED_DEBUG`), v6.x under
//! `/sys/kernel/debug/sched/domains`. Since v5.10 `flags` lists flag *names*, each
//! followed by a space; older kernels print the bit mask as a number, which is
//! decoded here with v5.6's bit values for kernels before v5.8 (when the bits
//! moved) and kept as a hexadecimal word otherwise.
//!
//! **One vocabulary.** The names changed over the versions, while schedlab
//! speaks v5.6's. Both sides are normalised the same way, keyed by the real
//! kernel's version string (`5.10.223`, `6.12.38+deb12-amd64`, …):
//!
//! * level `PKG` (x86's name for `DIE` from v6.7) is read as `DIE`;
//! * `SD_SHARE_LLC` (v6.10's name) is read as `SD_SHARE_PKG_RESOURCES`;
//! * from v5.8, where `SD_LOAD_BALANCE` was removed (every domain balances),
//!   the flag is dropped from both sides;
//! * from v6.7, a `CLS` domain carries `SD_CLUSTER` (set by the cluster level's
//!   topology flags): added to both sides' CLS domains, so a CLS level is compared
//!   by everything else.
//!
//! Everything else is compared exactly: per CPU, the chain's length, and per level
//! the name, the flag set and the numeric parameters schedlab models
//! (`min_interval` = span weight ms, `max_interval` = twice that, `busy_factor`,
//! `imbalance_pct`, `cache_nice_tries`, and `level` when the kernel prints it,
//! v6.9+: the build-time level number, which tells whether a degenerate CLS
//! level was built below MC). Numbers the kernel prints that schedlab
//! does not model (`max_newidle_lb_cost`, a running average) and flags it does
//! not know (`SD_ASYM_CPUCAPACITY_FULL`) are kept: the first are not compared,
//! the second show up as differences, since a flag schedlab lacks is a gap.

use crate::machine::Machine;
use crate::sched::topology::{sd_flags_names, SchedTopology, TopologyOpts};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The numeric files compared.
pub const COMPARED_PARAMS: [&str; 5] = [
    "min_interval",
    "max_interval",
    "busy_factor",
    "imbalance_pct",
    "cache_nice_tries",
];

/// Compared when both sides print it: `sd->level`, the build-time level number
/// (SMT = 0, not renumbered when degenerate levels go), in debugfs from v6.9.
pub const COMPARED_IF_BOTH: [&str; 1] = ["level"];

/// One domain of one CPU as printed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DomainLevel {
    pub name: String,
    pub flags: BTreeSet<String>,
    /// Files holding one unsigned integer.
    pub params: BTreeMap<String, u64>,
    /// Other files (trimmed), e.g. `groups_flags`.
    pub other: BTreeMap<String, String>,
}

/// Every CPU's chain, bottom-up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DomainDump {
    pub cpus: BTreeMap<usize, Vec<DomainLevel>>,
}

/// `major.minor` of a kernel version string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
}

impl KernelVersion {
    /// `5.10.223`, `6.12.38+deb12-amd64`, `v6.6`: the first two numbers.
    pub fn parse(s: &str) -> Option<KernelVersion> {
        let s = s.trim().trim_start_matches('v');
        let mut it = s.split(|c: char| !c.is_ascii_digit());
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(KernelVersion { major, minor })
    }
    fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

/// v5.6's flag names by bit (for numeric `flags` files of kernels before v5.8).
fn decode_numeric_flags(word: u64, v: Option<KernelVersion>) -> BTreeSet<String> {
    if v.is_some_and(|v| v.at_least(5, 8)) || word > u32::MAX as u64 {
        return BTreeSet::from([format!("{word:#x}")]);
    }
    sd_flags_names(word as u32)
        .split('|')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `cpuN` / `domainM` → N / M.
fn index_of(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

impl DomainDump {
    /// Read a dump directory: `dir/cpuN/domainM/<file>` (the kernel's own layout,
    /// copied as is). `version` decodes numeric `flags` of old kernels.
    pub fn read_dir(dir: &Path, version: &str) -> Result<DomainDump, String> {
        let v = KernelVersion::parse(version);
        let mut files = Vec::new();
        let rd = |p: &Path| std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()));
        for c in rd(dir)? {
            let c = c.map_err(|e| e.to_string())?;
            let Some(cpu) = c.file_name().to_str().and_then(|n| index_of(n, "cpu")) else {
                continue;
            };
            for d in rd(&c.path())? {
                let d = d.map_err(|e| e.to_string())?;
                let Some(dom) = d.file_name().to_str().and_then(|n| index_of(n, "domain")) else {
                    continue;
                };
                for f in rd(&d.path())? {
                    let f = f.map_err(|e| e.to_string())?;
                    let p = f.path();
                    if !p.is_file() {
                        continue;
                    }
                    let text =
                        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                    let name = f.file_name().to_string_lossy().into_owned();
                    files.push((cpu, dom, name, text));
                }
            }
        }
        if files.is_empty() {
            return Err(format!("{}: no cpuN/domainM/ files", dir.display()));
        }
        DomainDump::from_files(files, v)
    }

    /// Build a dump from `(cpu, domain index, file name, contents)`.
    pub(crate) fn from_files(
        files: Vec<(usize, usize, String, String)>,
        v: Option<KernelVersion>,
    ) -> Result<DomainDump, String> {
        let mut by: BTreeMap<usize, BTreeMap<usize, DomainLevel>> = BTreeMap::new();
        for (cpu, dom, file, text) in files {
            let lv = by.entry(cpu).or_default().entry(dom).or_default();
            let t = text.trim();
            match file.as_str() {
                "name" => lv.name = t.to_string(),
                "flags" => {
                    lv.flags = match t.parse::<u64>() {
                        Ok(w) => decode_numeric_flags(w, v),
                        Err(_) => t.split_whitespace().map(str::to_string).collect(),
                    }
                }
                _ => match t.parse::<u64>() {
                    Ok(x) => {
                        lv.params.insert(file, x);
                    }
                    Err(_) => {
                        lv.other.insert(file, t.to_string());
                    }
                },
            }
        }
        let mut d = DomainDump::default();
        for (cpu, doms) in by {
            // domain0, domain1, … without gaps.
            if let Some((i, _)) = doms.keys().enumerate().find(|(i, k)| *i != **k) {
                return Err(format!("cpu{cpu}: domain{i} missing"));
            }
            d.cpus.insert(cpu, doms.into_values().collect());
        }
        Ok(d)
    }

    /// schedlab's chains for `m` under `opts`, in the same form (schedlab's
    /// v5.6 vocabulary; `compare_domains` normalises).
    pub fn simulated(m: &Machine, opts: &TopologyOpts) -> DomainDump {
        let topo = SchedTopology::build(m, opts);
        let mut d = DomainDump::default();
        for cpu in 0..m.nr_cpus() {
            let chain = topo
                .domains_of(cpu)
                .map(|id| {
                    let sd = &topo.domains[id];
                    DomainLevel {
                        name: sd.name.to_string(),
                        flags: sd_flags_names(sd.flags)
                            .split('|')
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .collect(),
                        params: BTreeMap::from([
                            ("min_interval".to_string(), sd.min_interval),
                            ("max_interval".to_string(), sd.max_interval),
                            ("busy_factor".to_string(), sd.busy_factor as u64),
                            ("imbalance_pct".to_string(), sd.imbalance_pct as u64),
                            ("cache_nice_tries".to_string(), sd.cache_nice_tries as u64),
                            ("level".to_string(), sd.level as u64),
                        ]),
                        other: BTreeMap::new(),
                    }
                })
                .collect();
            d.cpus.insert(cpu, chain);
        }
        d
    }

    /// The dump in one vocabulary for kernel `version` (see the module notes).
    pub fn normalised(&self, version: &str) -> DomainDump {
        let v = KernelVersion::parse(version);
        let mut d = self.clone();
        for lv in d.cpus.values_mut().flatten() {
            normalise(lv, v);
        }
        d
    }
}

fn normalise(lv: &mut DomainLevel, v: Option<KernelVersion>) {
    if lv.name == "PKG" {
        lv.name = "DIE".into();
    }
    if lv.flags.remove("SD_SHARE_LLC") {
        lv.flags.insert("SD_SHARE_PKG_RESOURCES".into());
    }
    if let Some(v) = v {
        if v.at_least(5, 8) {
            lv.flags.remove("SD_LOAD_BALANCE");
        }
        if v.at_least(6, 7) && lv.name == "CLS" {
            lv.flags.insert("SD_CLUSTER".into());
        }
    }
}

/// One difference at one level of one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LevelDiff {
    /// `domainM` index.
    pub level: usize,
    /// `name`, `flags`, a parameter's name, or `domain` (present on one side).
    pub field: String,
    pub real: String,
    pub sim: String,
}

/// One CPU's chains (normalised names, bottom-up) and their differences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuChains {
    pub cpu: usize,
    pub real: Vec<String>,
    pub sim: Vec<String>,
    pub diffs: Vec<LevelDiff>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DomainComparison {
    pub kernel_version: String,
    pub cpus: Vec<CpuChains>,
    /// CPUs whose chains agree in every compared field.
    pub matching_cpus: usize,
}

impl DomainComparison {
    pub fn all_match(&self) -> bool {
        self.matching_cpus == self.cpus.len()
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("domain comparison serialises")
    }
}

fn flag_list(f: &BTreeSet<String>) -> String {
    if f.is_empty() {
        "-".into()
    } else {
        f.iter().cloned().collect::<Vec<_>>().join(" ")
    }
}

/// Compare a real dump with schedlab's (both as read, normalised here for
/// `kernel_version`). Flag differences list what each side has that the other
/// lacks.
pub(crate) fn compare_domains(
    real: &DomainDump,
    sim: &DomainDump,
    kernel_version: &str,
) -> DomainComparison {
    let (r, s) = (
        real.normalised(kernel_version),
        sim.normalised(kernel_version),
    );
    let cpus: BTreeSet<usize> = r.cpus.keys().chain(s.cpus.keys()).copied().collect();
    let empty = Vec::new();
    let mut out = Vec::new();
    for cpu in cpus {
        let rc = r.cpus.get(&cpu).unwrap_or(&empty);
        let sc = s.cpus.get(&cpu).unwrap_or(&empty);
        let mut diffs = Vec::new();
        for i in 0..rc.len().max(sc.len()) {
            let (a, b) = match (rc.get(i), sc.get(i)) {
                (Some(a), Some(b)) => (a, b),
                (a, b) => {
                    diffs.push(LevelDiff {
                        level: i,
                        field: "domain".into(),
                        real: a.map_or("-".into(), |x| x.name.clone()),
                        sim: b.map_or("-".into(), |x| x.name.clone()),
                    });
                    continue;
                }
            };
            if a.name != b.name {
                diffs.push(LevelDiff {
                    level: i,
                    field: "name".into(),
                    real: a.name.clone(),
                    sim: b.name.clone(),
                });
            }
            if a.flags != b.flags {
                diffs.push(LevelDiff {
                    level: i,
                    field: "flags".into(),
                    real: format!(
                        "+{}",
                        flag_list(&a.flags.difference(&b.flags).cloned().collect())
                    ),
                    sim: format!(
                        "+{}",
                        flag_list(&b.flags.difference(&a.flags).cloned().collect())
                    ),
                });
            }
            let both = COMPARED_IF_BOTH
                .into_iter()
                .filter(|p| a.params.contains_key(*p) && b.params.contains_key(*p));
            for p in COMPARED_PARAMS.into_iter().chain(both) {
                let (x, y) = (a.params.get(p), b.params.get(p));
                if x != y {
                    let f = |v: Option<&u64>| v.map_or("-".into(), |v| v.to_string());
                    diffs.push(LevelDiff {
                        level: i,
                        field: p.into(),
                        real: f(x),
                        sim: f(y),
                    });
                }
            }
        }
        out.push(CpuChains {
            cpu,
            real: rc.iter().map(|l| l.name.clone()).collect(),
            sim: sc.iter().map(|l| l.name.clone()).collect(),
            diffs,
        });
    }
    DomainComparison {
        kernel_version: kernel_version.to_string(),
        matching_cpus: out.iter().filter(|c| c.diffs.is_empty()).count(),
        cpus: out,
    }
}

/// `compare_domains` against schedlab's chains for `m` under `opts` (e.g.
/// `KernelPreset::by_name("v5.12").unwrap().topology_opts()`).
pub fn compare_with_model(
    real: &DomainDump,
    m: &Machine,
    opts: &TopologyOpts,
    kernel_version: &str,
) -> DomainComparison {
    compare_domains(real, &DomainDump::simulated(m, opts), kernel_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::test_topology;
    use crate::sched::features::KernelPreset;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/oracle/fixtures")
            .join(name)
    }

    /// A CPU's differences as `(level, field, real, sim)` rows.
    fn rows(diffs: &[LevelDiff]) -> Vec<(usize, &str, &str, &str)> {
        diffs
            .iter()
            .map(|x| (x.level, x.field.as_str(), x.real.as_str(), x.sim.as_str()))
            .collect()
    }

    fn opts(preset: &str) -> TopologyOpts {
        KernelPreset::by_name(preset).unwrap().topology_opts()
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions() {
        let v = |s| KernelVersion::parse(s).map(|v| (v.major, v.minor));
        assert_eq!(v("5.10.223"), Some((5, 10)));
        assert_eq!(v("6.12.38+deb12-amd64"), Some((6, 12)));
        assert_eq!(v("v6.6"), Some((6, 6)));
        assert_eq!(v("6"), None);
        assert_eq!(v("linux"), None);
    }

    #[test]
    fn the_5_10_dump_parses_and_matches_schedlab() {
        let d = DomainDump::read_dir(&fixture("domains-5.10-1s4c2t"), "5.10.223").unwrap();
        assert_eq!(d.cpus.len(), 8);
        let c5 = &d.cpus[&5];
        assert_eq!(c5.len(), 2);
        assert_eq!((c5[0].name.as_str(), c5[1].name.as_str()), ("SMT", "MC"));
        assert_eq!(
            c5[1].flags,
            set(&[
                "SD_BALANCE_NEWIDLE",
                "SD_BALANCE_EXEC",
                "SD_BALANCE_FORK",
                "SD_WAKE_AFFINE",
                "SD_SHARE_PKG_RESOURCES",
                "SD_PREFER_SIBLING"
            ])
        );
        assert_eq!(c5[1].params["min_interval"], 8);
        assert_eq!(c5[1].params["max_newidle_lb_cost"], 4019 + 53 * 5);
        // 5.10 domain rules are v5.12's preset's (117 / 16, no CLS).
        let m = test_topology(1, 1, 4, 2);
        let c = compare_with_model(&d, &m, &opts("v5.12"), "5.10.223");
        assert!(c.all_match(), "{}", c.text());
        assert_eq!(c.text().lines().nth(1).unwrap(), "cpu0-7     = SMT MC");
        // Under v5.6's rules each level's busy_factor differs (32); imbalance_pct
        // does not, since SMT and MC set their own (110, 117) in every version.
        let c = compare_with_model(&d, &m, &opts("v5.6"), "5.10.223");
        assert_eq!(c.matching_cpus, 0);
        let diffs = &c.cpus[0].diffs;
        assert_eq!(diffs.len(), 2, "{diffs:?}");
        assert!(diffs
            .iter()
            .all(|x| x.field == "busy_factor" && x.real == "16" && x.sim == "32"));
    }

    #[test]
    fn the_6_12_dump_matches_after_the_renames() {
        let d =
            DomainDump::read_dir(&fixture("domains-6.12-2s4c2t-2node"), "6.12.38+deb12").unwrap();
        assert_eq!(d.cpus.len(), 16);
        assert!(d.cpus[&9][0].flags.contains("SD_SHARE_LLC"));
        assert_eq!(d.cpus[&9][1].other["groups_flags"].split(' ').count(), 7);
        let m = test_topology(2, 1, 4, 2);
        // v6.0's rules: CLS built but degenerate (cluster = LLC here).
        let c = compare_with_model(&d, &m, &opts("v6.0"), "6.12.38+deb12");
        assert!(c.all_match(), "{}", c.text());
        assert_eq!(c.cpus[15].real, vec!["SMT", "MC", "NUMA"]);
        // Without the version's rules, SD_SHARE_LLC and SD_LOAD_BALANCE stay
        // apart on the SMT and MC levels (the NUMA level only lacks LOAD_BALANCE).
        let raw = compare_domains(&d, &DomainDump::simulated(&m, &opts("v6.0")), "unknown");
        let f = &raw.cpus[0].diffs;
        assert_eq!(f.len(), 3, "{f:?}");
        assert_eq!(f[0].field, "flags");
        assert_eq!(f[0].real, "+-");
        assert_eq!(f[0].sim, "+SD_LOAD_BALANCE");
        // Against v5.6's rules: busy_factor on every level, the NUMA level's
        // default imbalance_pct (125), and no CLS level built below MC, so the
        // build-time level numbers above SMT are one lower.
        let c = compare_with_model(&d, &m, &opts("v5.6"), "6.12.38");
        assert_eq!(
            rows(&c.cpus[8].diffs),
            vec![
                (0, "busy_factor", "16", "32"),
                (1, "busy_factor", "16", "32"),
                (1, "level", "2", "1"),
                (2, "busy_factor", "16", "32"),
                (2, "imbalance_pct", "117", "125"),
                (2, "level", "5", "4"),
            ]
        );
        // On a one-node model of one LLC the NUMA level is missing, and MC spans
        // all 16 CPUs; with two LLCs per node, the third level is DIE instead.
        let c = compare_with_model(&d, &test_topology(1, 1, 8, 2), &opts("v6.0"), "6.12.38");
        assert_eq!(
            rows(&c.cpus[0].diffs),
            vec![
                (1, "min_interval", "8", "16"),
                (1, "max_interval", "16", "32"),
                (2, "domain", "NUMA", "-"),
            ]
        );
        let c = compare_with_model(&d, &test_topology(1, 2, 4, 2), &opts("v6.0"), "6.12.38");
        assert!(c.cpus[0]
            .diffs
            .iter()
            .any(|x| x.level == 2 && x.field == "name" && x.real == "NUMA" && x.sim == "DIE"));
        let j: serde_json::Value = serde_json::from_str(&c.json()).unwrap();
        assert_eq!(j["cpus"].as_array().unwrap().len(), 16);
    }

    #[test]
    fn renames_and_version_rules() {
        let lv = |name: &str, flags: &[&str]| DomainLevel {
            name: name.into(),
            flags: set(flags),
            ..Default::default()
        };
        let mut real = DomainDump::default();
        real.cpus.insert(
            0,
            vec![
                lv("CLS", &["SD_CLUSTER", "SD_SHARE_LLC"]),
                lv("PKG", &["SD_WAKE_AFFINE"]),
            ],
        );
        let mut sim = DomainDump::default();
        sim.cpus.insert(
            0,
            vec![
                lv("CLS", &["SD_LOAD_BALANCE", "SD_SHARE_PKG_RESOURCES"]),
                lv("DIE", &["SD_LOAD_BALANCE", "SD_WAKE_AFFINE"]),
            ],
        );
        assert!(compare_domains(&real, &sim, "6.12.1").all_match());
        // Before v6.7 SD_CLUSTER is not implied, so the real CLS's differs.
        let c = compare_domains(&real, &sim, "6.6.0");
        assert_eq!(c.cpus[0].diffs.len(), 1);
        assert_eq!(c.cpus[0].diffs[0].real, "+SD_CLUSTER");
        // Before v5.8 SD_LOAD_BALANCE counts.
        let c = compare_domains(&real, &sim, "5.4.0");
        assert_eq!(c.cpus[0].diffs.len(), 2);
    }

    #[test]
    fn numeric_flags_of_old_kernels() {
        let f = |t: &str, v: &str| {
            DomainDump::from_files(
                vec![
                    (0, 0, "flags".into(), t.into()),
                    (0, 0, "name".into(), "MC\n".into()),
                ],
                KernelVersion::parse(v),
            )
            .unwrap()
            .cpus[&0][0]
                .flags
                .clone()
        };
        // v5.6 bits: LOAD_BALANCE 0x1 | WAKE_AFFINE 0x20 | SHARE_PKG_RESOURCES 0x200.
        assert_eq!(
            f("545\n", "5.4.0"),
            set(&[
                "SD_LOAD_BALANCE",
                "SD_WAKE_AFFINE",
                "SD_SHARE_PKG_RESOURCES"
            ])
        );
        assert_eq!(f("545\n", "5.9.1"), set(&["0x221"]));
        let gap = DomainDump::from_files(vec![(0, 1, "name".into(), "MC".into())], None);
        assert_eq!(gap.unwrap_err(), "cpu0: domain0 missing");
    }
}
