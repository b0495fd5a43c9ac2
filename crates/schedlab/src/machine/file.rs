//! Machine files: a [`Machine`] as diff-able TOML (schema in `docs/machine-file.md`).
//!
//! The file says what sysfs and the device tree say about a machine, grouped the way
//! sysfs groups it: topology levels are lists of cpulists (`"0-3,8"`, the kernel's
//! `cpulist_parse` syntax), one entry per core / cluster / LLC / package / node, the
//! entry's position being its id; each CPU's micro-architecture, idle table and
//! `cpu_capacity` come from `[[cpu_group]]` entries; frequency domains list their CPUs
//! like `cpufreq/policyN/related_cpus`. Times carry their unit in the key name
//! (`exit_latency_us` or `exit_latency_ns`), as sysfs (µs) and the kernel (ns) do.
//!
//! Parsing has two steps: serde reads the raw file (unknown keys are errors, so a typo
//! never silently becomes a default), then the raw values are checked and turned into
//! [`MachineParts`] and validated by [`Machine::new`]. Errors carry the file and,
//! whenever the offending value is known, its 1-based line (from toml's spans).
//!
//! [`machine_to_toml`] writes the same schema, losslessly: a file written from any
//! machine parses back to an identical machine (times that are not whole µs are
//! written with an `_ns` key).

use crate::engine::{checked_ns, time_limit_text, NSEC_PER_USEC};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{
    Arch, CoreKind, CostTable, Cpu, CpuMask, FreqDomain, IdleKind, IdleState, Machine,
    MachineParts, Opp, VcpuHost,
};
use crate::error::{line_of, InputError};

/// Read and parse a machine file.
pub fn load_machine_file(path: &Path) -> Result<Machine, InputError> {
    let text = crate::input::read_text(path)?;
    parse_machine_toml(&text, path)
}

// ---------------------------------------------------------------------------------
// Raw schema.
// ---------------------------------------------------------------------------------

fn default_reclaim() -> u32 {
    30
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMachine {
    name: String,
    #[serde(default)]
    description: String,
    arch: Arch,
    #[serde(default = "default_reclaim")]
    node_reclaim_distance: u32,
    #[serde(default)]
    vcpu_throughput: Vec<u32>,
    vcpu_host_cpus: Option<u32>,
    vcpu_host_slice_us: Option<u64>,
    numa_distance: Option<Spanned<Vec<Vec<u32>>>>,
    #[serde(default)]
    topology: RawTopology,
    core_kind: Vec<Spanned<RawKind>>,
    #[serde(default)]
    idle_table: Vec<Spanned<RawIdleTable>>,
    freq_domain: Vec<Spanned<RawFreqDomain>>,
    cpu_group: Vec<Spanned<RawCpuGroup>>,
    #[serde(default)]
    cost: CostTable,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    cores: Option<Spanned<Vec<Spanned<String>>>>,
    clusters: Option<Spanned<Vec<Spanned<String>>>>,
    llcs: Option<Spanned<Vec<Spanned<String>>>>,
    packages: Option<Spanned<Vec<Spanned<String>>>>,
    nodes: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKind {
    name: String,
    smt_throughput: Vec<u32>,
    #[serde(default)]
    work_per_clock: BTreeMap<String, u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdleTable {
    name: Option<String>,
    #[serde(default)]
    state: Vec<Spanned<RawIdleState>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdleState {
    name: String,
    exit_latency_us: Option<u64>,
    exit_latency_ns: Option<u64>,
    target_residency_us: Option<u64>,
    target_residency_ns: Option<u64>,
    #[serde(default)]
    power_mw: f64,
    #[serde(default)]
    cluster: bool,
    #[serde(default)]
    core: bool,
    /// `hardware` (the default), `poll` or `snooze`: [`IdleKind`].
    kind: Option<String>,
    #[serde(default)]
    disable: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFreqDomain {
    cpus: Spanned<String>,
    transition_latency_us: Option<u64>,
    transition_latency_ns: Option<u64>,
    opp: Vec<Spanned<RawOpp>>,
    #[serde(default)]
    cluster_idle_mw: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOpp {
    freq_khz: u32,
    #[serde(default)]
    power_mw: u32,
    #[serde(default)]
    cluster_power_mw: u32,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a name (string) or a 0-based index (integer)")]
enum Ref {
    Index(usize),
    Name(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCpuGroup {
    cpus: Spanned<String>,
    kind: Spanned<Ref>,
    idle_table: Option<Spanned<Ref>>,
    capacity: Option<Spanned<u32>>,
}

// ---------------------------------------------------------------------------------
// Parsing.
// ---------------------------------------------------------------------------------

struct Ctx<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, span: Option<Range<usize>>, msg: impl Into<String>) -> InputError {
        InputError::in_file(self.file, span.map(|s| line_of(self.text, s.start)), msg)
    }
    fn cpulist(&self, s: &Spanned<String>) -> Result<CpuMask, InputError> {
        let m = CpuMask::parse_cpulist(s.get_ref()).map_err(|e| self.err(Some(s.span()), e))?;
        if m.is_empty() {
            return Err(self.err(Some(s.span()), "empty cpulist"));
        }
        Ok(m)
    }
    fn time_ns(
        &self,
        span: Range<usize>,
        what: &str,
        us: Option<u64>,
        ns: Option<u64>,
        default: Option<u64>,
    ) -> Result<u64, InputError> {
        match (us, ns) {
            (Some(_), Some(_)) => Err(self.err(
                Some(span),
                format!("give either {what}_us or {what}_ns, not both"),
            )),
            (Some(us), None) => checked_ns(us, NSEC_PER_USEC).ok_or_else(|| {
                self.err(
                    Some(span),
                    format!("{what}_us = {us} {}", time_limit_text()),
                )
            }),
            (None, Some(ns)) => checked_ns(ns, 1).ok_or_else(|| {
                self.err(
                    Some(span),
                    format!("{what}_ns = {ns} {}", time_limit_text()),
                )
            }),
            (None, None) => default
                .ok_or_else(|| self.err(Some(span), format!("missing {what}_us (or {what}_ns)"))),
        }
    }
}

/// Names of `[[core_kind]]` or `[[idle_table]]` entries -> their index.
type Names = BTreeMap<String, usize>;
/// A `[topology]` level: a list of cpulists.
type RawLevel = Option<Spanned<Vec<Spanned<String>>>>;

impl Ctx<'_> {
    /// `[[cpu_group]]`: the union of the cpu groups, which must be exactly 0..n, each
    /// once; each CPU's group.
    fn cpu_groups(&self, raw: &RawMachine) -> Result<Vec<Option<usize>>, InputError> {
        let mut group_of: Vec<Option<usize>> = Vec::new();
        for (gi, g) in raw.cpu_group.iter().enumerate() {
            let mask = self.cpulist(&g.get_ref().cpus)?;
            for c in mask.iter() {
                if group_of.len() <= c {
                    group_of.resize(c + 1, None);
                }
                if group_of[c].is_some() {
                    return Err(self.err(
                        Some(g.get_ref().cpus.span()),
                        format!("cpu{c} is in two cpu_group entries"),
                    ));
                }
                group_of[c] = Some(gi);
            }
        }
        if group_of.is_empty() {
            return Err(self.err(None, "no CPUs: add at least one [[cpu_group]]"));
        }
        if let Some(c) = group_of.iter().position(|g| g.is_none()) {
            return Err(self.err(
                None,
                format!("cpu{c} is in no cpu_group (CPUs must be numbered 0..n without holes)"),
            ));
        }
        Ok(group_of)
    }

    /// `[[core_kind]]`.
    fn core_kinds(&self, raw: &RawMachine) -> Result<(Names, Vec<CoreKind>), InputError> {
        let mut kind_names = BTreeMap::new();
        let mut core_kinds = Vec::new();
        for (i, k) in raw.core_kind.iter().enumerate() {
            let rk = k.get_ref();
            if kind_names.insert(rk.name.clone(), i).is_some() {
                return Err(self.err(
                    Some(k.span()),
                    format!("core_kind `{}` defined twice", rk.name),
                ));
            }
            core_kinds.push(CoreKind {
                name: rk.name.clone(),
                smt_throughput: rk.smt_throughput.clone(),
                work_per_clock: rk.work_per_clock.clone(),
            });
        }
        Ok((kind_names, core_kinds))
    }

    /// `[[idle_table]]` and their `[[idle_table.state]]`; one empty table when there
    /// are none.
    fn idle_tables(&self, raw: &RawMachine) -> Result<(Names, Vec<Vec<IdleState>>), InputError> {
        let mut idle_names = BTreeMap::new();
        let mut idle_tables = Vec::new();
        for (i, t) in raw.idle_table.iter().enumerate() {
            let rt = t.get_ref();
            if let Some(name) = &rt.name {
                if idle_names.insert(name.clone(), i).is_some() {
                    return Err(
                        self.err(Some(t.span()), format!("idle_table `{name}` defined twice"))
                    );
                }
            }
            let states: Vec<IdleState> = rt
                .state
                .iter()
                .map(|s| self.idle_state(s))
                .collect::<Result<_, _>>()?;
            // The software loops are state 0 of their drivers, and the governors
            // assume so (menu's polling rule looks at the state chosen so far).
            if let Some(k) = states.iter().skip(1).position(IdleState::is_loop) {
                return Err(self.err(
                    Some(rt.state[k + 1].span()),
                    format!(
                        "idle state `{}`: kind `{}` must be the table's first state",
                        states[k + 1].name,
                        states[k + 1].kind.name()
                    ),
                ));
            }
            idle_tables.push(states);
        }
        if idle_tables.is_empty() {
            // No idle states known: one empty table (the CPU only polls).
            idle_tables.push(Vec::new());
        }
        Ok((idle_names, idle_tables))
    }

    /// One `[[idle_table.state]]`.
    fn idle_state(&self, s: &Spanned<RawIdleState>) -> Result<IdleState, InputError> {
        let rs = s.get_ref();
        if !(rs.power_mw.is_finite() && rs.power_mw >= 0.0) {
            return Err(self.err(
                Some(s.span()),
                format!("idle state `{}`: power_mw must be >= 0", rs.name),
            ));
        }
        let kind = match &rs.kind {
            None => IdleKind::Hardware,
            Some(k) => IdleKind::by_name(k).ok_or_else(|| {
                self.err(
                    Some(s.span()),
                    format!(
                        "idle state `{}`: unknown kind `{k}` (known: {})",
                        rs.name,
                        IdleKind::NAMES.join(", ")
                    ),
                )
            })?,
        };
        if rs.core && rs.cluster {
            return Err(self.err(
                Some(s.span()),
                format!(
                    "idle state `{}`: `core` and `cluster` both set (a state couples one level)",
                    rs.name
                ),
            ));
        }
        Ok(IdleState {
            kind,
            disable: rs.disable,
            core: rs.core,
            name: rs.name.clone(),
            exit_latency_ns: self.time_ns(
                s.span(),
                "exit_latency",
                rs.exit_latency_us,
                rs.exit_latency_ns,
                None,
            )?,
            target_residency_ns: self.time_ns(
                s.span(),
                "target_residency",
                rs.target_residency_us,
                rs.target_residency_ns,
                None,
            )?,
            power_mw: rs.power_mw,
            cluster: rs.cluster,
        })
    }

    /// `[[freq_domain]]` and their `[[freq_domain.opp]]`, covering each of the `n`
    /// CPUs once: each CPU's domain, and the domains.
    fn freq_domains(
        &self,
        raw: &RawMachine,
        n: usize,
    ) -> Result<(Vec<Option<usize>>, Vec<FreqDomain>), InputError> {
        let mut fd_of = vec![None; n];
        let mut freq_domains = Vec::new();
        for (d, f) in raw.freq_domain.iter().enumerate() {
            let rf = f.get_ref();
            let cpus = self.cpulist(&rf.cpus)?;
            for c in cpus.iter() {
                if c >= n {
                    return Err(self.err(
                        Some(rf.cpus.span()),
                        format!("cpu{c} is not a CPU of this machine (0-{})", n - 1),
                    ));
                }
                if fd_of[c].is_some() {
                    return Err(self.err(
                        Some(rf.cpus.span()),
                        format!("cpu{c} is in two frequency domains"),
                    ));
                }
                fd_of[c] = Some(d);
            }
            if rf.opp.is_empty() {
                return Err(self.err(
                    Some(f.span()),
                    "a freq_domain needs at least one [[freq_domain.opp]]",
                ));
            }
            let transition_latency_ns = self.time_ns(
                f.span(),
                "transition_latency",
                rf.transition_latency_us,
                rf.transition_latency_ns,
                Some(0),
            )?;
            let mut opps = Vec::new();
            for o in &rf.opp {
                let ro = o.get_ref();
                if let Some(prev) = opps.last().map(|p: &Opp| p.freq_khz) {
                    if ro.freq_khz <= prev {
                        return Err(
                            self.err(Some(o.span()), "OPPs must ascend strictly by freq_khz")
                        );
                    }
                }
                opps.push(Opp {
                    cluster_power_mw: ro.cluster_power_mw,
                    freq_khz: ro.freq_khz,
                    power_mw: ro.power_mw,
                });
            }
            freq_domains.push(FreqDomain {
                cluster_idle_mw: rf.cluster_idle_mw.clone(),
                cpus,
                opps,
                transition_latency_ns,
            });
        }
        if let Some(c) = fd_of.iter().position(|d| d.is_none()) {
            return Err(self.err(None, format!("cpu{c} is in no freq_domain")));
        }
        Ok((fd_of, freq_domains))
    }

    /// A `[[cpu_group]]` reference to one of `len` entries, by index or by name.
    fn resolve(
        &self,
        r: &Spanned<Ref>,
        names: &Names,
        len: usize,
        what: &str,
    ) -> Result<usize, InputError> {
        match r.get_ref() {
            Ref::Index(i) if *i < len => Ok(*i),
            Ref::Index(i) => Err(self.err(
                Some(r.span()),
                format!("{what} {i} does not exist ({len} defined)"),
            )),
            Ref::Name(s) => names
                .get(s)
                .copied()
                .ok_or_else(|| self.err(Some(r.span()), format!("no {what} named `{s}`"))),
        }
    }

    /// Per-CPU attributes from the groups: (core kind, idle table, capacity) of each
    /// `[[cpu_group]]`.
    fn cpu_attrs(
        &self,
        raw: &RawMachine,
        kinds: (&Names, usize),
        idle: (&Names, usize),
    ) -> Result<Vec<(usize, usize, u32)>, InputError> {
        let mut attrs = Vec::new();
        for g in &raw.cpu_group {
            let rg = g.get_ref();
            let kind = self.resolve(&rg.kind, kinds.0, kinds.1, "core_kind")?;
            let idle_table = match &rg.idle_table {
                Some(r) => self.resolve(r, idle.0, idle.1, "idle_table")?,
                None => 0,
            };
            let capacity = rg.capacity.as_ref().map_or(1024, |c| *c.get_ref());
            if capacity == 0 || capacity > 1024 {
                let span = rg.capacity.as_ref().map(|c| c.span());
                return Err(self.err(span, format!("capacity {capacity} outside 1..=1024")));
            }
            attrs.push((kind, idle_table, capacity));
        }
        Ok(attrs)
    }

    /// One `[topology]` level: each of the `n` CPUs' entry in it, `None` when the
    /// level is not given.
    fn level(&self, l: &RawLevel, what: &str, n: usize) -> Result<Option<Vec<usize>>, InputError> {
        let Some(list) = l else { return Ok(None) };
        let mut id = vec![None; n];
        for (i, s) in list.get_ref().iter().enumerate() {
            for c in self.cpulist(s)?.iter() {
                if c >= n {
                    return Err(self.err(
                        Some(s.span()),
                        format!("cpu{c} is not a CPU of this machine (0-{})", n - 1),
                    ));
                }
                if id[c].is_some() {
                    return Err(self.err(Some(s.span()), format!("cpu{c} is in two {what}")));
                }
                id[c] = Some(i);
            }
        }
        match id.iter().position(|x| x.is_none()) {
            Some(c) => Err(self.err(
                Some(list.span()),
                format!("cpu{c} is in none of the {what}"),
            )),
            None => Ok(Some(id.into_iter().map(|x| x.unwrap_or(0)).collect())),
        }
    }
}

/// Parse a machine file's text; `file` names it in errors.
pub fn parse_machine_toml(text: &str, file: &Path) -> Result<Machine, InputError> {
    let cx = Ctx { text, file };
    let raw: RawMachine =
        toml::from_str(text).map_err(|e| cx.err(e.span(), e.message().trim_end().to_string()))?;

    let group_of = cx.cpu_groups(&raw)?;
    let n = group_of.len();
    let (kind_names, core_kinds) = cx.core_kinds(&raw)?;
    let (idle_names, idle_tables) = cx.idle_tables(&raw)?;
    let (fd_of, freq_domains) = cx.freq_domains(&raw, n)?;
    let attrs = cx.cpu_attrs(
        &raw,
        (&kind_names, core_kinds.len()),
        (&idle_names, idle_tables.len()),
    )?;

    // Topology levels; defaults cascade upwards from nodes.
    let t = &raw.topology;
    let node = cx
        .level(&t.nodes, "nodes", n)?
        .unwrap_or_else(|| vec![0; n]);
    let package = cx
        .level(&t.packages, "packages", n)?
        .unwrap_or_else(|| node.clone());
    let llc = cx
        .level(&t.llcs, "llcs", n)?
        .unwrap_or_else(|| package.clone());
    let cluster = cx
        .level(&t.clusters, "clusters", n)?
        .unwrap_or_else(|| llc.clone());
    let core = cx
        .level(&t.cores, "cores", n)?
        .unwrap_or_else(|| (0..n).collect());

    let cpus = (0..n)
        .map(|i| {
            let (kind, idle_table, capacity_orig) = attrs[group_of[i].unwrap_or(0)];
            Cpu {
                core: core[i],
                cluster: cluster[i],
                llc: llc[i],
                package: package[i],
                node: node[i],
                capacity_orig,
                kind,
                idle_table,
                freq_domain: fd_of[i].unwrap_or(0),
            }
        })
        .collect();

    let nodes = node.iter().max().map_or(1, |m| m + 1);
    let numa_distance = match &raw.numa_distance {
        Some(d) => d.get_ref().clone(),
        None if nodes == 1 => vec![vec![10]],
        None => return Err(cx.err(None, format!("{nodes} nodes need a numa_distance matrix"))),
    };
    let numa_line = raw.numa_distance.as_ref().map(|d| d.span());
    let vcpu_host =
        match (raw.vcpu_host_cpus, raw.vcpu_host_slice_us) {
            (None, None) => None,
            (Some(cpus), Some(us)) => Some(VcpuHost {
                cpus,
                slice_ns: us.checked_mul(NSEC_PER_USEC).ok_or_else(|| {
                    cx.err(
                        None,
                        format!("vcpu_host_slice_us = {us}: a host slice is 100..=1000000 µs"),
                    )
                })?,
            }),
            _ => return Err(cx.err(
                None,
                "vcpu_host_cpus and vcpu_host_slice_us go together (the host's CPUs and its slice)",
            )),
        };
    Machine::new(MachineParts {
        name: raw.name,
        description: raw.description,
        arch: raw.arch,
        cpus,
        numa_distance,
        node_reclaim_distance: raw.node_reclaim_distance,
        vcpu_throughput: raw.vcpu_throughput,
        vcpu_host,
        core_kinds,
        idle_tables,
        freq_domains,
        cost: raw.cost,
    })
    .map_err(|e| {
        let span = if e.starts_with("numa_distance") {
            numa_line
        } else {
            None
        };
        cx.err(span, e)
    })
}

// ---------------------------------------------------------------------------------
// Export.
// ---------------------------------------------------------------------------------

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn time_key(out: &mut String, what: &str, ns: u64) {
    if ns.is_multiple_of(1_000) {
        let _ = write!(out, "{what}_us = {}", ns / 1_000);
    } else {
        let _ = write!(out, "{what}_ns = {ns}");
    }
}

/// Dense ids of a level -> list of cpulists, or `None` when equal to `default`.
fn level_list(ids: &[usize], default: &[usize]) -> Option<Vec<String>> {
    if ids == default {
        return None;
    }
    let count = ids.iter().max().map_or(0, |m| m + 1);
    let mut masks = vec![CpuMask::new(); count];
    for (c, &i) in ids.iter().enumerate() {
        masks[i].set(c);
    }
    Some(masks.iter().map(|m| m.to_string()).collect())
}

/// Write `m` as a machine file that [`parse_machine_toml`] reads back identically.
pub fn machine_to_toml(m: &Machine) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# schedlab machine file (schema: docs/machine-file.md)");
    let _ = writeln!(o, "name = {}", q(&m.name));
    let _ = writeln!(o, "description = {}", q(&m.description));
    let arch = match m.arch {
        Arch::X86 => "x86",
        Arch::Arm64 => "arm64",
        Arch::Power => "power",
    };
    let _ = writeln!(o, "arch = {}", q(arch));
    let _ = writeln!(o, "node_reclaim_distance = {}", m.node_reclaim_distance);
    if !m.vcpu_throughput.is_empty() {
        let t: Vec<String> = m.vcpu_throughput.iter().map(|t| t.to_string()).collect();
        let _ = writeln!(o, "vcpu_throughput = [{}]", t.join(", "));
    }
    if let Some(h) = m.vcpu_host {
        let _ = writeln!(o, "vcpu_host_cpus = {}", h.cpus);
        let _ = writeln!(o, "vcpu_host_slice_us = {}", h.slice_ns / NSEC_PER_USEC);
    }
    let rows: Vec<String> = m
        .numa_distance
        .iter()
        .map(|r| {
            format!(
                "[{}]",
                r.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let _ = writeln!(o, "numa_distance = [{}]", rows.join(", "));

    let ids = |f: fn(&Cpu) -> usize| m.cpus.iter().map(f).collect::<Vec<_>>();
    let (node, package, llc, cluster, core) = (
        ids(|c| c.node),
        ids(|c| c.package),
        ids(|c| c.llc),
        ids(|c| c.cluster),
        ids(|c| c.core),
    );
    let one_per_cpu: Vec<usize> = (0..m.nr_cpus()).collect();
    let levels = [
        ("nodes", level_list(&node, &vec![0; m.nr_cpus()])),
        ("packages", level_list(&package, &node)),
        ("llcs", level_list(&llc, &package)),
        ("clusters", level_list(&cluster, &llc)),
        ("cores", level_list(&core, &one_per_cpu)),
    ];
    let _ = writeln!(o, "\n[topology]");
    for (key, list) in levels {
        let Some(list) = list else { continue };
        let _ = writeln!(o, "{key} = [");
        for chunk in list.chunks(8) {
            let items: Vec<String> = chunk.iter().map(|s| q(s)).collect();
            let _ = writeln!(o, "    {},", items.join(", "));
        }
        let _ = writeln!(o, "]");
    }

    let unique_kinds = {
        let mut names: Vec<&str> = m.core_kinds.iter().map(|k| k.name.as_str()).collect();
        names.sort_unstable();
        names.windows(2).all(|w| w[0] != w[1])
    };
    for k in &m.core_kinds {
        let tp: Vec<String> = k.smt_throughput.iter().map(|t| t.to_string()).collect();
        let _ = writeln!(
            o,
            "\n[[core_kind]]\nname = {}\nsmt_throughput = [{}]",
            q(&k.name),
            tp.join(", ")
        );
        if !k.work_per_clock.is_empty() {
            let w: Vec<String> = k
                .work_per_clock
                .iter()
                .map(|(c, r)| format!("{} = {r}", q(c)))
                .collect();
            let _ = writeln!(o, "work_per_clock = {{ {} }}", w.join(", "));
        }
    }
    for (i, t) in m.idle_tables.iter().enumerate() {
        let _ = writeln!(o, "\n[[idle_table]]\nname = \"idle{i}\"");
        for s in t {
            let _ = write!(o, "[[idle_table.state]]\nname = {}\n", q(&s.name));
            time_key(&mut o, "exit_latency", s.exit_latency_ns);
            o.push('\n');
            time_key(&mut o, "target_residency", s.target_residency_ns);
            let _ = writeln!(o, "\npower_mw = {}", toml::Value::Float(s.power_mw));
            if s.cluster {
                o.push_str("cluster = true\n");
            }
            if s.core {
                o.push_str("core = true\n");
            }
            if s.kind != IdleKind::Hardware {
                let _ = writeln!(o, "kind = {}", q(s.kind.name()));
            }
            if s.disable {
                o.push_str("disable = true\n");
            }
        }
    }
    for fd in &m.freq_domains {
        let _ = write!(o, "\n[[freq_domain]]\ncpus = {}\n", q(&fd.cpus.to_string()));
        time_key(&mut o, "transition_latency", fd.transition_latency_ns);
        o.push('\n');
        if !fd.cluster_idle_mw.is_empty() {
            let v: Vec<String> = fd
                .cluster_idle_mw
                .iter()
                .map(|&x| toml::Value::Float(x).to_string())
                .collect();
            let _ = writeln!(o, "cluster_idle_mw = [{}]", v.join(", "));
        }
        for opp in &fd.opps {
            let _ = writeln!(
                o,
                "[[freq_domain.opp]]\nfreq_khz = {}\npower_mw = {}",
                opp.freq_khz, opp.power_mw
            );
            if opp.cluster_power_mw > 0 {
                let _ = writeln!(o, "cluster_power_mw = {}", opp.cluster_power_mw);
            }
        }
    }
    // CPU groups: CPUs with equal (kind, idle table, capacity), in order of first CPU.
    let mut groups: Vec<((usize, usize, u32), CpuMask)> = Vec::new();
    for (i, c) in m.cpus.iter().enumerate() {
        let key = (c.kind, c.idle_table, c.capacity_orig);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, mask)) => mask.set(i),
            None => groups.push((key, CpuMask::of(i))),
        }
    }
    for ((kind, idle, cap), mask) in groups {
        let kref = if unique_kinds {
            q(&m.core_kinds[kind].name)
        } else {
            kind.to_string()
        };
        let _ = writeln!(
            o,
            "\n[[cpu_group]]\ncpus = {}\nkind = {kref}\nidle_table = \"idle{idle}\"\ncapacity = {cap}",
            q(&mask.to_string())
        );
    }
    let cost = toml::to_string(&m.cost).unwrap_or_default();
    let _ = write!(o, "\n[cost]\n{cost}");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::{preset, preset_names, test_asym, test_topology};

    /// Field-by-field equality (Machine has no PartialEq: its masks are derived).
    pub(crate) fn assert_same(a: &Machine, b: &Machine) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.description, b.description);
        assert_eq!(a.arch, b.arch);
        assert_eq!(a.cpus, b.cpus);
        assert_eq!(a.numa_distance, b.numa_distance);
        assert_eq!(a.node_reclaim_distance, b.node_reclaim_distance);
        assert_eq!(a.core_kinds, b.core_kinds);
        assert_eq!(a.idle_tables, b.idle_tables);
        assert_eq!(a.freq_domains, b.freq_domains);
        assert_eq!(a.cost, b.cost);
        assert_eq!(a.vcpu_throughput, b.vcpu_throughput);
        assert_eq!(a.vcpu_host, b.vcpu_host);
    }

    #[test]
    fn every_preset_round_trips() {
        for (name, _) in preset_names() {
            let m = preset(name).unwrap();
            let text = machine_to_toml(&m);
            let back = parse_machine_toml(&text, Path::new("x.toml"))
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_same(&m, &back);
        }
        let mut guest = test_topology(1, 1, 4, 2);
        guest.vcpu_throughput = vec![1024, 737, 600, 410, 330, 250, 210, 184];
        guest.vcpu_host = Some(VcpuHost {
            cpus: 2,
            slice_ns: 3_000_000,
        });
        for m in [test_topology(2, 2, 2, 2), test_asym(2, 4, 1024, 300), guest] {
            let back = parse_machine_toml(&machine_to_toml(&m), Path::new("x.toml")).unwrap();
            assert_same(&m, &back);
        }
    }

    proptest::proptest! {
        #[test]
        fn random_machines_round_trip(
            nodes in 1usize..4, llcs in 1usize..3, cores in 1usize..5, smt in 1usize..5,
            lat in 0u64..100_000, power in 0u32..2_000,
            big in 0usize..4, little in 1usize..4, cap in 1u32..=1024,
        ) {
            let mut m = test_topology(nodes, llcs, cores, smt);
            m.idle_tables[0][1].exit_latency_ns = lat;
            m.idle_tables[0][1].power_mw = f64::from(power) / 7.0;
            m.freq_domains[0].opps[0].power_mw = power;
            let back = parse_machine_toml(&machine_to_toml(&m), Path::new("p.toml")).unwrap();
            assert_same(&m, &back);
            let a = test_asym(big, little, 1024, cap);
            let back = parse_machine_toml(&machine_to_toml(&a), Path::new("p.toml")).unwrap();
            assert_same(&a, &back);
        }
    }

    #[test]
    fn sub_microsecond_times_round_trip_via_ns_keys() {
        let mut p = test_topology(1, 1, 2, 1);
        p.idle_tables[0][1].exit_latency_ns = 1_234;
        p.freq_domains[0].transition_latency_ns = 999;
        let text = machine_to_toml(&p);
        assert!(text.contains("exit_latency_ns = 1234"));
        assert!(text.contains("transition_latency_ns = 999"));
        let back = parse_machine_toml(&text, Path::new("x.toml")).unwrap();
        assert_same(&p, &back);
    }

    /// A class's capacity is its rate per clock scaled by the CPU's top frequency
    /// over the reference (the biggest CPU's top OPP), and the file round-trips it.
    #[test]
    fn work_classes_scale_by_frequency_and_round_trip() {
        let text = GOOD
            .replace(
                "name = \"little\"\nsmt_throughput = [1024]",
                "name = \"little\"\nsmt_throughput = [1024]\nwork_per_clock = { int = 800 }",
            )
            .replace(
                "name = \"big\"\nsmt_throughput = [1024]",
                "name = \"big\"\nsmt_throughput = [1024]\nwork_per_clock = { int = 600 }",
            );
        let m = parse_machine_toml(&text, Path::new("x.toml")).unwrap();
        // The reference: CPUs 2-3 (capacity 1024) at 2 GHz; CPUs 0-1 top at 1 GHz.
        assert_eq!(m.ref_khz(), 2_000_000);
        assert_eq!(m.work_classes(), vec!["int"]);
        assert_eq!(m.work_capacity(0, "int"), Some(400)); // 800 × 1/2
        assert_eq!(m.work_capacity(3, "int"), Some(600));
        assert_eq!(m.work_capacity(3, "fp"), None);
        let back = parse_machine_toml(&machine_to_toml(&m), Path::new("y.toml")).unwrap();
        assert_eq!(back.core_kinds, m.core_kinds);
    }

    /// A task's class is a byte: a machine of 256 classes is refused by name.
    #[test]
    fn more_than_255_work_classes_are_refused() {
        let classes: Vec<String> = (0..256).map(|i| format!("c{i} = 1")).collect();
        let table = format!("work_per_clock = {{ {} }}", classes.join(", "));
        let text = GOOD
            .replace(
                "name = \"little\"\nsmt_throughput = [1024]",
                &format!("name = \"little\"\nsmt_throughput = [1024]\n{table}"),
            )
            .replace(
                "name = \"big\"\nsmt_throughput = [1024]",
                &format!("name = \"big\"\nsmt_throughput = [1024]\n{table}"),
            );
        let e = err_of(&text);
        assert!(e.msg.contains("256 work classes: at most 255"), "{e}");
    }

    const GOOD: &str = r#"name = "tiny"
arch = "arm64"

[topology]
llcs = ["0-1", "2-3"]

[[core_kind]]
name = "little"
smt_throughput = [1024]

[[core_kind]]
name = "big"
smt_throughput = [1024]

[[idle_table]]
name = "arm"
[[idle_table.state]]
name = "WFI"
exit_latency_us = 1
target_residency_us = 1

[[freq_domain]]
cpus = "0-1"
[[freq_domain.opp]]
freq_khz = 1000000
power_mw = 100

[[freq_domain]]
cpus = "2-3"
transition_latency_us = 80
[[freq_domain.opp]]
freq_khz = 2000000

[[cpu_group]]
cpus = "0-1"
kind = "little"
idle_table = "arm"
capacity = 400

[[cpu_group]]
cpus = "2-3"
kind = 1
"#;

    #[test]
    fn parses_a_hand_written_file_with_defaults() {
        let m = parse_machine_toml(GOOD, Path::new("tiny.toml")).unwrap();
        assert_eq!(m.nr_cpus(), 4);
        assert_eq!(m.arch, Arch::Arm64);
        assert_eq!(m.node_reclaim_distance, 30);
        assert_eq!(m.numa_distance, vec![vec![10]]);
        assert_eq!(m.llc_mask(1).to_string(), "0-1");
        assert_eq!(m.cluster_mask(3).to_string(), "2-3");
        assert_eq!(m.package_mask(0).to_string(), "0-3");
        assert_eq!(m.smt_mask(2).to_string(), "2");
        assert_eq!(m.cpus[0].capacity_orig, 400);
        assert_eq!(m.cpus[3].capacity_orig, 1024);
        assert_eq!(m.cpus[3].kind, 1);
        assert_eq!(m.idle_states(2)[0].exit_latency_ns, 1_000);
        assert_eq!(m.freq_domains[1].transition_latency_ns, 80_000);
        assert_eq!(m.freq_domains[0].transition_latency_ns, 0);
        assert_eq!(m.cost, CostTable::default());
    }

    fn err_of(text: &str) -> InputError {
        match parse_machine_toml(text, Path::new("bad.toml")) {
            Ok(_) => panic!("accepted bad input:\n{text}"),
            Err(e) => e,
        }
    }

    #[test]
    fn bad_inputs_report_line_and_reason() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, Option<usize>, &str)] = &[
            // (replace this, with that, expected line, expected message fragment)
            ("arch = \"arm64\"", "arch = \"sparc\"", Some(2), "unknown variant `sparc`"),
            ("capacity = 400", "capacity = 400\nspeed = 3", Some(39), "unknown field `speed`"),
            ("cpus = \"2-3\"\nkind = 1", "cpus = \"2-x\"\nkind = 1", Some(41), "bad CPU number `x`"),
            ("kind = \"little\"", "kind = \"medium\"", Some(36), "no core_kind named `medium`"),
            ("kind = 1", "kind = 7", Some(42), "core_kind 7 does not exist"),
            ("idle_table = \"arm\"", "idle_table = \"x86\"", Some(37), "no idle_table named `x86`"),
            ("llcs = [\"0-1\", \"2-3\"]", "llcs = [\"0-1\", \"1-3\"]", Some(5), "cpu1 is in two llcs"),
            ("llcs = [\"0-1\", \"2-3\"]", "llcs = [\"0-1\", \"3\"]", Some(5), "cpu2 is in none of the llcs"),
            ("cpus = \"2-3\"\ntransition", "cpus = \"1-3\"\ntransition", Some(29), "cpu1 is in two frequency domains"),
            ("freq_khz = 2000000", "freq_khz = -5", Some(32), "invalid value"),
            ("exit_latency_us = 1", "exit_latency_us = 1\nexit_latency_ns = 5", Some(17), "not both"),
            ("exit_latency_us = 1\n", "", Some(17), "missing exit_latency_us"),
            ("capacity = 400", "capacity = 2000", Some(38), "capacity 2000 outside 1..=1024"),
            ("name = \"tiny\"\n", "", Some(1), "missing field `name`"),
            ("[[cpu_group]]\ncpus = \"2-3\"", "[[cpu_group]]\ncpus = \"3\"", None, "cpu2 is in no cpu_group"),
            ("smt_throughput = [1024]\n\n[[core_kind]]\nname = \"big\"", "smt_throughput = [1024]\n\n[[core_kind]]\nname = \"little\"", Some(11), "defined twice"),
            ("[topology]", "numa_distance = [[10, 20], [20, 10]]\n[topology]", Some(4), "numa_distance must be a 1×1 matrix"),
            ("[topology]", "[cost]\ncontext_switch = 5\nswitch = 3\n[topology]", Some(6), "unknown field `switch`"),
            ("[topology]", "[cost]\nipi_send = -5\n[topology]", Some(5), "invalid value: integer `-5`"),
            ("[topology]", "[cost]\nwakeup_local = 800\nipi_latency_ns = \"fast\"\n[topology]", Some(6), "invalid type: string"),
            ("[topology]", "[cost]\ncontext_switch = 1.5\n[topology]", Some(5), "invalid type: floating point"),
            ("kind = 1", "kind = true", Some(42), "a name (string) or a 0-based index"),
            ("freq_khz = 2000000", "freq_khz = 2000000\n[[freq_domain.opp]]\nfreq_khz = 1000", Some(33), "ascend strictly"),
            ("cpus = \"2-3\"\ntransition", "cpus = \"2-9\"\ntransition", Some(29), "cpu4 is not a CPU of this machine (0-3)"),
        ];
        for (from, to, line, msg) in cases {
            assert!(GOOD.contains(from), "case pattern `{from}` not in GOOD");
            let text = GOOD.replacen(from, to, 1);
            let e = err_of(&text);
            assert_eq!(e.file.as_deref(), Some(Path::new("bad.toml")), "{e}");
            assert!(
                e.msg.contains(msg),
                "expected `{msg}` in `{}` for {to:?}",
                e.msg
            );
            assert_eq!(e.line, *line, "line for {to:?}: {e}");
        }
    }

    #[test]
    fn validation_errors_from_machine_new_name_the_file() {
        // An SMT2 core of kind `little` whose smt_throughput has only one entry.
        let text = GOOD.replace(
            "llcs = [\"0-1\", \"2-3\"]",
            "llcs = [\"0-1\", \"2-3\"]\ncores = [\"0-1\", \"2\", \"3\"]",
        );
        let e = err_of(&text);
        assert!(e.msg.contains("smt_throughput needs 2 entries"), "{e}");
        assert_eq!(e.to_string(), format!("bad.toml: {}", e.msg));
    }

    #[test]
    fn numbers_beyond_their_bounds_are_refused() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str)] = &[
            // Levels that do not nest: an LLC across two packages of one node.
            ("llcs = [\"0-1\", \"2-3\"]", "packages = [\"0-1\", \"2-3\"]\nllcs = [\"0-2\", \"3\"]", "cpu0: its LLC (0-2) is not inside its package (0-1)"),
            // Packages and nodes that cross.
            ("[topology]\nllcs = [\"0-1\", \"2-3\"]", "numa_distance = [[10, 20], [20, 10]]\n[topology]\nnodes = [\"0-1\", \"2-3\"]\npackages = [\"0\", \"1-3\"]\nllcs = [\"0\", \"1\", \"2-3\"]", "cpu1: its package (1-3) and its NUMA node (0-1) do not nest"),
            ("exit_latency_us = 1\n", "exit_latency_us = 18446744073709552\n", "exit_latency_us = 18446744073709552 exceeds the limit of 1000000 s"),
            ("exit_latency_us = 1\n", "exit_latency_ns = 1000000000000001\n", "exit_latency_ns = 1000000000000001 exceeds the limit"),
            ("target_residency_us = 1", "target_residency_us = 1\npower_mw = nan", "power_mw must be >= 0"),
            ("smt_throughput = [1024]\n\n[[core_kind]]\nname = \"big\"", "smt_throughput = [1024, 0]\n\n[[core_kind]]\nname = \"big\"", "entries in 1..=1024"),
            ("[topology]", "[cost]\nfork = 1000000001\n[topology]", "cost `fork` = 1000000001: a cost is at most 1000000000 ns"),
            ("[topology]", "node_reclaim_distance = 256\n[topology]", "a SLIT distance is at most 255"),
            // An emulated machine's shared host: one entry per busy CPU count at most.
            ("[topology]", "vcpu_throughput = [1024, 700, 500, 300, 200]\n[topology]", "vcpu_throughput needs at most 4 entries"),
            ("[topology]", "vcpu_throughput = [900, 700]\n[topology]", "starting with 1024"),
            ("[topology]", "vcpu_throughput = [1024, 700]\nvcpu_host_cpus = 2\n[topology]", "go together"),
            ("[topology]", "vcpu_throughput = [1024, 700]\nvcpu_host_cpus = 4\nvcpu_host_slice_us = 3000\n[topology]", "vcpu_host_cpus = 4: the host's CPUs are between 1 and 3"),
            ("[topology]", "vcpu_host_cpus = 2\nvcpu_host_slice_us = 3000\n[topology]", "need vcpu_throughput"),
            ("[topology]", "vcpu_throughput = [1024, 700]\nvcpu_host_cpus = 2\nvcpu_host_slice_us = 50\n[topology]", "a host slice is 100..=1000000 µs"),
            ("[topology]", "vcpu_throughput = [1024, 700]\nvcpu_host_cpus = 2\nvcpu_host_slice_us = 9223372036854775807\n[topology]", "vcpu_host_slice_us = 9223372036854775807: a host slice"),
            ("[topology]", "vcpu_throughput = [1024, 0]\n[topology]", "in 1..=1024"),
            // Work classes: a rate on every kind in use, in 1..=4096.
            ("name = \"big\"\nsmt_throughput = [1024]", "name = \"big\"\nsmt_throughput = [1024]\nwork_per_clock = { sysbench-cpu = 700 }", "work class `sysbench-cpu` has a rate on core kind `big` but not on `little`"),
            ("name = \"little\"\nsmt_throughput = [1024]", "name = \"little\"\nsmt_throughput = [1024]\nwork_per_clock = { x = 0 }", "core kind `little`: work_per_clock.x = 0 outside 1..=4096"),
            ("name = \"little\"\nsmt_throughput = [1024]", "name = \"little\"\nsmt_throughput = [1024]\nwork_per_clock = { x = 5000 }", "work_per_clock.x = 5000 outside 1..=4096"),
            // Idle state kinds and coupling.
            ("target_residency_us = 1\n", "target_residency_us = 1\nkind = \"mwait\"\n", "idle state `WFI`: unknown kind `mwait` (known: hardware, poll, snooze)"),
            ("target_residency_us = 1\n", "target_residency_us = 1\n[[idle_table.state]]\nname = \"POLL\"\nexit_latency_us = 0\ntarget_residency_us = 0\nkind = \"poll\"\n", "idle state `POLL`: kind `poll` must be the table's first state"),
            ("target_residency_us = 1\n", "target_residency_us = 1\ncore = true\ncluster = true\n", "idle state `WFI`: `core` and `cluster` both set"),
            // The cluster term: all or nothing, one idle figure per idle state.
            ("power_mw = 100", "power_mw = 100\ncluster_power_mw = 5", "cluster_power_mw on an OPP needs cluster_idle_mw too"),
            ("cpus = \"0-1\"\n[[freq_domain.opp]]", "cpus = \"0-1\"\ncluster_idle_mw = [5.0]\n[[freq_domain.opp]]", "every OPP needs a cluster_power_mw > 0"),
            ("cpus = \"0-1\"\n[[freq_domain.opp]]\nfreq_khz = 1000000\npower_mw = 100", "cpus = \"0-1\"\ncluster_idle_mw = [5.0, 1.0]\n[[freq_domain.opp]]\nfreq_khz = 1000000\npower_mw = 100\ncluster_power_mw = 5", "cluster_idle_mw has 2 figures but cpu0 has 1 idle states"),
            ("cpus = \"0-1\"\n[[freq_domain.opp]]\nfreq_khz = 1000000\npower_mw = 100", "cpus = \"0-1\"\ncluster_idle_mw = [-1.0]\n[[freq_domain.opp]]\nfreq_khz = 1000000\npower_mw = 100\ncluster_power_mw = 5", "cluster_idle_mw -1 must be a number >= 0"),
        ];
        for (from, to, msg) in cases {
            assert!(GOOD.contains(from), "case pattern `{from}` not in GOOD");
            let e = err_of(&GOOD.replacen(from, to, 1));
            assert!(
                e.msg.contains(msg),
                "expected `{msg}` in `{}` for {to:?}",
                e.msg
            );
        }
    }

    /// docs/machine-file.md names every `[cost]` key, and the writer writes each.
    #[test]
    fn every_cost_field_is_documented_and_written() {
        let doc = include_str!("../../../../docs/machine-file.md");
        let toml::Value::Table(t) = toml::Value::try_from(CostTable::default()).unwrap() else {
            panic!("CostTable is not a table")
        };
        let text = machine_to_toml(&preset("juno-r0").unwrap());
        for key in t.keys() {
            assert!(
                doc.contains(&format!("`{key}`")),
                "docs/machine-file.md lacks `{key}`"
            );
            assert!(
                text.contains(&format!("\n{key} = ")),
                "machine_to_toml lacks {key}"
            );
        }
    }

    #[test]
    fn load_missing_file_is_an_error() {
        let e = load_machine_file(Path::new("/nonexistent/m.toml")).unwrap_err();
        assert!(e.msg.contains("No such file"), "{e}");
    }
}
