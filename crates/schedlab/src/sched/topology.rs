//! Scheduling domains and groups (`kernel/sched/topology.c`,
//! `include/linux/sched/topology.h`, Linux v5.6).
//!
//! **The concept.** Every CPU owns a private chain of *scheduling domains*, bottom-up:
//! each domain spans a set of CPUs that share something (an SMT core, a cache, a
//! package, a NUMA distance) and is cut into *groups*, the spans of its child
//! domains. The wakeup path walks the chain to find how far it may look
//! (`SD_WAKE_AFFINE`, `SD_BALANCE_*`); the load balancer compares the groups of each
//! level. Groups and their capacity records (`sched_group_capacity`) are shared
//! objects: every CPU whose domain at some level contains a group points at the same
//! one, so capacity refreshed by one balancer is seen by all.
//!
//! **Construction** follows `build_sched_domains`:
//!
//! 1. The arch topology table gives the levels, each a per-CPU mask function plus
//!    topology flags. x86: `SMT, MC, DIE` (MC = LLC mask; DIE dropped when a
//!    package holds several nodes, `x86_has_numa_in_package`). arm64 (generic
//!    table): `SMT, MC, DIE` with MC = `cpu_coregroup_mask`, the smallest of node,
//!    package and LLC. POWER: `SMT, DIE`, or `SMT, CACHE, DIE` when some CPU's L2
//!    mask differs from its thread mask (`shared_caches`, POWER9 core pairs; we take
//!    the machine's LLC as that shared-cache mask). DIE is `cpu_cpu_mask`, i.e. the
//!    CPU's NUMA node (which equals the package on ordinary machines). With
//!    `TopologyOpts::cluster_level` (v5.16+) a `CLS` level (cluster mask,
//!    SHARE_PKG_RESOURCES) sits between SMT and MC on x86 and arm64; when the cluster
//!    equals the LLC we give CLS the SMT mask so CLS degenerates and MC survives, as
//!    the later `cpu_clustergroup_mask` fix does.
//! 2. `sched_init_numa` appends a `NODE` identity level (the node itself, no flags)
//!    and one `NUMA` level per further distinct distance in node 0's row of the
//!    distance table (SD_NUMA, overlapping groups). NUMA level `k` of a CPU spans
//!    the nodes within distance `d_k` of its node.
//! 3. For each CPU, levels are built bottom-up with `sd_init` (below); a span that
//!    does not contain its child's span is widened to it (the kernel's "topology
//!    broken" fix-up); the chain stops at the first level that spans every CPU.
//! 4. Groups. Non-overlapping level: walk the span with `for_each_cpu_wrap` from
//!    the building CPU; each CPU not yet covered contributes the span of its child
//!    domain (or just itself at the bottom) as a group; the ring therefore starts at
//!    the local group. NUMA (SD_OVERLAP) level: each uncovered CPU `i` contributes
//!    the child span of *its own* domain at this level, with a balance mask of the
//!    CPUs whose child span is exactly that group. These are the kernel's group
//!    spans and balance masks; the simplification is object identity only (the
//!    kernel allocates an overlap group per building CPU and shares the capacity
//!    record by balance CPU, we share one group per (level, span)), which is a
//!    faithful simplification for these topologies.
//! 5. Group capacity: `get_group` seeds `capacity = 1024 × weight`, min = max =
//!    1024; `init_sched_groups_capacity` then runs `update_group_capacity` at boot,
//!    which with no RT/DL/IRQ pressure gives `capacity = Σ capacity_orig`, `min_capacity
//!    = min capacity_orig`, `max_capacity = max capacity_orig` over the group's CPUs.
//!    We store that boot result; `next_update` is left at jiffy 0 (the balancer sets
//!    it from the balance interval on its first refresh).
//! 6. Degenerate removal (`cpu_attach_domain`): going up from the base, a parent is
//!    dropped when it is degenerate itself or has the same span as its child and,
//!    once the group-needing flags are discounted for a single-group parent, adds no
//!    flag the child lacks; its SD_PREFER_SIBLING is handed to the child. Finally the
//!    base is dropped if degenerate. A domain is degenerate when it spans one CPU, or
//!    has a single group and no SD_WAKE_AFFINE. `sd->level` keeps its build-time
//!    number (SMT = 0).
//!
//! **`sd_init` (v5.6)**, with `w` = weight of the level's mask:
//!
//! | field | value |
//! |---|---|
//! | min / max / initial balance interval | `w` / `2w` / `w` ms |
//! | busy_factor | 32 (16 from v5.10) |
//! | flags | LOAD_BALANCE, BALANCE_NEWIDLE, BALANCE_EXEC, BALANCE_FORK, WAKE_AFFINE, PREFER_SIBLING, the level's topology flags, ASYM_CPUCAPACITY on the detected level |
//! | SHARE_CPUCAPACITY (SMT) | imbalance_pct 110, cache_nice_tries 0 |
//! | SHARE_PKG_RESOURCES (CLS, MC, CACHE) | imbalance_pct 117, cache_nice_tries 1, LLC-shared block with nr_busy_cpus = `w` |
//! | SD_NUMA | imbalance_pct default, cache_nice_tries 2, −PREFER_SIBLING, +SERIALIZE; beyond `node_reclaim_distance` −BALANCE_EXEC, −BALANCE_FORK, −WAKE_AFFINE |
//! | otherwise (DIE, NODE) | imbalance_pct default (125; 117 from v5.10), cache_nice_tries 1 |
//! | ASYM_CPUCAPACITY | child loses PREFER_SIBLING; v5.6 also sets BALANCE_WAKE on this level and all below |
//!
//! The asymmetric level (`asym_cpu_capacity_level`) is found per CPU by walking the
//! level masks upward and noting the last level at which a CPU of higher capacity
//! than any seen so far comes into view; the highest such level over all CPUs wins.
//! Two consequences worth knowing, both as in the kernel: the PREFER_SIBLING that
//! the asym level clears is on its child *as built*, so when that child later
//! degenerates (NODE under an asymmetric NUMA level) the surviving DIE keeps its
//! own; and a NUMA level whose span equals its child's survives with one group,
//! because SD_NUMA/SD_SERIALIZE are not discounted by `sd_parent_degenerate`.
//!
//! **Shortcuts** (`update_top_cache_domain`): `sd_llc` is the highest domain of an
//! unbroken SHARE_PKG_RESOURCES run from the base; `sd_llc_size`/`sd_llc_id` its
//! weight and first CPU (1 and the CPU itself without one); `sd_numa` the lowest
//! SD_NUMA domain; `sd_asym_packing` the highest contiguous ASYM_PACKING domain;
//! `sd_asym_cpucapacity` the lowest ASYM_CPUCAPACITY domain.
//!
//! **Gaps.** No ASYM_PACKING producer is modelled (x86 ITMT is off by default,
//! POWER7's asym SMT is not a target), so `asym_prefer_cpu` is the group's first CPU,
//! which is also what the default priority (`-cpu`) would pick. No cpusets,
//! isolated CPUs, hotplug or `relax_domain_level`. Jiffies are 0 at build.

use crate::machine::{Arch, CpuMask, Machine};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Index into [`SchedTopology::domains`].
pub type SdId = usize;
/// Index into [`SchedTopology::groups`] (and, one to one, [`SchedTopology::sgc`]).
pub type SgId = usize;

pub const SD_LOAD_BALANCE: u32 = 0x0001;
pub const SD_BALANCE_NEWIDLE: u32 = 0x0002;
pub const SD_BALANCE_EXEC: u32 = 0x0004;
pub const SD_BALANCE_FORK: u32 = 0x0008;
pub const SD_BALANCE_WAKE: u32 = 0x0010;
pub const SD_WAKE_AFFINE: u32 = 0x0020;
pub const SD_ASYM_CPUCAPACITY: u32 = 0x0040;
pub const SD_SHARE_CPUCAPACITY: u32 = 0x0080;
pub const SD_SHARE_POWERDOMAIN: u32 = 0x0100;
pub const SD_SHARE_PKG_RESOURCES: u32 = 0x0200;
pub const SD_SERIALIZE: u32 = 0x0400;
pub const SD_ASYM_PACKING: u32 = 0x0800;
pub const SD_PREFER_SIBLING: u32 = 0x1000;
pub const SD_OVERLAP: u32 = 0x2000;
pub const SD_NUMA: u32 = 0x4000;

const SD_FLAG_NAMES: [(u32, &str); 15] = [
    (SD_LOAD_BALANCE, "SD_LOAD_BALANCE"),
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
    (SD_SHARE_POWERDOMAIN, "SD_SHARE_POWERDOMAIN"),
    (SD_SHARE_PKG_RESOURCES, "SD_SHARE_PKG_RESOURCES"),
    (SD_SERIALIZE, "SD_SERIALIZE"),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
    (SD_OVERLAP, "SD_OVERLAP"),
    (SD_NUMA, "SD_NUMA"),
];

/// Flags that need at least two groups to mean anything (`sd_degenerate`).
const SD_GROUP_FLAGS: u32 = SD_LOAD_BALANCE
    | SD_BALANCE_NEWIDLE
    | SD_BALANCE_FORK
    | SD_BALANCE_EXEC
    | SD_SHARE_CPUCAPACITY
    | SD_ASYM_CPUCAPACITY
    | SD_SHARE_PKG_RESOURCES
    | SD_SHARE_POWERDOMAIN;

/// `SCHED_CAPACITY_SCALE`.
const SCHED_CAPACITY_SCALE: u64 = 1024;

/// Names of the set flags, in bit order, joined by `|` (empty for 0). Unknown bits
/// are appended as one hexadecimal value.
pub(crate) fn sd_flags_names(flags: u32) -> String {
    let mut out = Vec::new();
    let mut known = 0;
    for (bit, name) in SD_FLAG_NAMES {
        known |= bit;
        if flags & bit != 0 {
            out.push(name.to_string());
        }
    }
    if flags & !known != 0 {
        out.push(format!("{:#x}", flags & !known));
    }
    out.join("|")
}

/// One `struct sched_domain` of one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedDomain {
    /// Owning CPU (domains are per CPU, as in the kernel).
    pub cpu: usize,
    /// "SMT", "CLS", "MC", "CACHE" (POWER shared L2), "DIE", "NODE" or "NUMA".
    pub name: &'static str,
    /// `sd->level`, numbered at build time (SMT = 0), not renumbered after
    /// degenerate levels are removed.
    pub level: u32,
    pub span: CpuMask,
    pub span_weight: u32,
    pub flags: u32,
    pub parent: Option<SdId>,
    pub child: Option<SdId>,
    /// The group ring, starting at the local group (the one containing `cpu`).
    pub groups: Vec<SgId>,
    pub imbalance_pct: u32,
    /// `sd->imb_numa_nr` (v5.18): the number of running tasks up to which a NUMA
    /// imbalance is allowed, computed at build time from the LLC span (see
    /// `imb_numa_nr`); always computed, read only under `IMB_NUMA_NR`.
    pub imb_numa_nr: u32,
    pub busy_factor: u32,
    pub cache_nice_tries: u32,
    /// ms.
    pub min_interval: u64,
    /// ms.
    pub max_interval: u64,
    /// Index into [`SchedTopology::shared`] when SD_SHARE_PKG_RESOURCES.
    pub shared: Option<usize>,
    /// ms.
    pub balance_interval: u64,
    /// jiffies (0 at build).
    pub last_balance: u64,
    pub nr_balance_failed: u32,
    /// ns.
    pub max_newidle_lb_cost: u64,
    /// jiffies.
    pub next_decay_max_lb_cost: u64,
    /// ns.
    pub avg_scan_cost: u64,
}

impl SchedDomain {
    #[inline]
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

/// `struct sched_group`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedGroup {
    pub span: CpuMask,
    pub group_weight: u32,
    /// CPUs allowed to balance on the group's behalf (the span, except on NUMA
    /// levels; see the module notes).
    pub balance_mask: CpuMask,
    /// Index into [`SchedTopology::sgc`].
    pub sgc: usize,
    pub asym_prefer_cpu: usize,
}

impl SchedGroup {
    /// `group_balance_cpu`: first CPU of the balance mask.
    pub(crate) fn balance_cpu(&self) -> usize {
        self.balance_mask.first().unwrap_or(0)
    }
}

/// `struct sched_group_capacity`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedGroupCapacity {
    pub capacity: u64,
    pub min_capacity: u64,
    pub max_capacity: u64,
    pub imbalance: bool,
    /// jiffies.
    pub next_update: u64,
}

/// `struct sched_domain_shared` (the LLC block).
#[derive(Clone, Debug, PartialEq)]
pub struct SdShared {
    pub nr_busy_cpus: u32,
    pub has_idle_cores: bool,
    /// v6.0+ SIS_UTIL scan budget; 0 at build.
    pub nr_idle_scan: u32,
}

/// Version-dependent construction rules.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyOpts {
    /// Build the CLS level (v5.16+); false for v5.6.
    pub cluster_level: bool,
    /// Default `imbalance_pct` (DIE, NODE, NUMA): 125 in v5.6, 117 from v5.10.
    pub imbalance_pct_default: u32,
    /// 32 in v5.6, 16 from v5.10.
    pub busy_factor: u32,
    /// v5.6: SD_BALANCE_WAKE on the asymmetric level and below (removed in v5.7).
    pub asym_balance_wake: bool,
}

impl TopologyOpts {
    pub fn v5_6() -> Self {
        TopologyOpts {
            cluster_level: false,
            imbalance_pct_default: 125,
            busy_factor: 32,
            asym_balance_wake: true,
        }
    }
}

impl Default for TopologyOpts {
    fn default() -> Self {
        Self::v5_6()
    }
}

/// The built hierarchy plus the per-CPU shortcut pointers and root-domain facts.
#[derive(Clone, Debug)]
pub struct SchedTopology {
    pub domains: Vec<SchedDomain>,
    pub groups: Vec<SchedGroup>,
    pub sgc: Vec<SchedGroupCapacity>,
    pub shared: Vec<SdShared>,
    /// `rq->sd`: base (lowest) domain per CPU.
    pub sd: Vec<Option<SdId>>,
    pub sd_llc: Vec<Option<SdId>>,
    pub sd_llc_size: Vec<u32>,
    pub sd_llc_id: Vec<usize>,
    pub sd_llc_shared: Vec<Option<usize>>,
    pub sd_numa: Vec<Option<SdId>>,
    pub sd_asym_packing: Vec<Option<SdId>>,
    /// Seed 002's shortcut pointers: the highest contiguous domain with
    /// SD_BALANCE_WAKE, _FORK, _EXEC (`sd_balance_{wake,fork,exec}`), cached at
    /// build time so a non-affine placement needs no domain walk.
    pub sd_balance_wake: Vec<Option<SdId>>,
    pub sd_balance_fork: Vec<Option<SdId>>,
    pub sd_balance_exec: Vec<Option<SdId>>,
    pub sd_asym_cpucapacity: Vec<Option<SdId>>,
    /// The `sched_asym_cpucapacity` static key.
    pub asym_cpucapacity: bool,
    /// Root domain's `max_cpu_capacity` (largest `capacity_orig`).
    pub max_cpu_capacity: u64,
}

/// Which per-CPU mask a topology level uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MaskFn {
    /// `cpu_smt_mask`.
    Smt,
    /// `cpu_clustergroup_mask` (SMT mask when the cluster is the whole LLC).
    Cluster,
    /// x86 `cpu_coregroup_mask` = LLC; POWER `shared_cache_mask`.
    Llc,
    /// arm64 `cpu_coregroup_mask`: smallest of node, package, LLC.
    Coregroup,
    /// `cpu_cpu_mask`: the node.
    Node,
    /// `sd_numa_mask` at NUMA level `k` (index into the distance list).
    Numa(usize),
}

/// One `sched_domain_topology_level`.
#[derive(Clone, Debug)]
struct TopoLevel {
    name: &'static str,
    mask: MaskFn,
    sd_flags: u32,
    overlap: bool,
}

/// A domain during construction, before degenerate removal.
#[derive(Clone, Debug)]
struct Tmp {
    cpu: usize,
    level: usize,
    span: CpuMask,
    /// Weight of the level's mask (`sd_weight` in sd_init).
    weight: u32,
    flags: u32,
    parent: Option<usize>,
    child: Option<usize>,
    groups: Vec<SgId>,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    imb_numa_nr: u32,
}

fn arch_levels(m: &Machine, opts: &TopologyOpts) -> Vec<TopoLevel> {
    let smt = TopoLevel {
        name: "SMT",
        mask: MaskFn::Smt,
        sd_flags: SD_SHARE_CPUCAPACITY | SD_SHARE_PKG_RESOURCES,
        overlap: false,
    };
    let cls = TopoLevel {
        name: "CLS",
        mask: MaskFn::Cluster,
        sd_flags: SD_SHARE_PKG_RESOURCES,
        overlap: false,
    };
    let die = TopoLevel {
        name: "DIE",
        mask: MaskFn::Node,
        sd_flags: 0,
        overlap: false,
    };
    let n = m.nr_cpus();
    let mut v = vec![smt];
    match m.arch {
        Arch::X86 => {
            if opts.cluster_level {
                v.push(cls);
            }
            v.push(TopoLevel {
                name: "MC",
                mask: MaskFn::Llc,
                sd_flags: SD_SHARE_PKG_RESOURCES,
                overlap: false,
            });
            let numa_in_package = (0..n).any(|c| !m.package_mask(c).is_subset(m.node_mask(c)));
            if !numa_in_package {
                v.push(die);
            }
        }
        Arch::Arm64 => {
            if opts.cluster_level {
                v.push(cls);
            }
            v.push(TopoLevel {
                name: "MC",
                mask: MaskFn::Coregroup,
                sd_flags: SD_SHARE_PKG_RESOURCES,
                overlap: false,
            });
            v.push(die);
        }
        Arch::Power => {
            let shared_caches = (0..n).any(|c| m.llc_mask(c) != m.smt_mask(c));
            if shared_caches {
                v.push(TopoLevel {
                    name: "CACHE",
                    mask: MaskFn::Llc,
                    sd_flags: SD_SHARE_PKG_RESOURCES,
                    overlap: false,
                });
            }
            v.push(die);
        }
    }
    v
}

/// Distinct distances of node 0's row, ascending, starting with the local one
/// (`sched_domains_numa_distance`, without `sched_debug`).
fn numa_distances(m: &Machine) -> Vec<u32> {
    let mut d: Vec<u32> = m.numa_distance[0].clone();
    d.sort_unstable();
    d.dedup();
    d
}

/// The topology table with its NUMA levels appended, and the masks the NUMA levels
/// read (`sched_domains_numa_distance`, `sched_domains_numa_masks`).
struct Levels {
    levels: Vec<TopoLevel>,
    dist: Vec<u32>,
    /// `sched_domains_numa_masks[k][node]`.
    numa_masks: Vec<Vec<CpuMask>>,
}

/// Appends the NODE and NUMA levels to the arch table and builds their masks.
/// Models `sched_init_numa` (v5.6 kernel/sched/topology.c).
fn sched_init_numa(m: &Machine, mut levels: Vec<TopoLevel>) -> Levels {
    let n = m.nr_cpus();
    let nodes = m.nr_nodes();
    let dist = numa_distances(m);
    levels.push(TopoLevel {
        name: "NODE",
        mask: MaskFn::Numa(0),
        sd_flags: 0,
        overlap: false,
    });
    for k in 1..dist.len() {
        levels.push(TopoLevel {
            name: "NUMA",
            mask: MaskFn::Numa(k),
            sd_flags: SD_NUMA,
            overlap: true,
        });
    }

    // sched_domains_numa_masks[k][node].
    let node_cpus: Vec<CpuMask> = (0..nodes)
        .map(|nd| {
            (0..n)
                .filter(|&c| m.cpus[c].node == nd)
                .collect::<CpuMask>()
        })
        .collect();
    let numa_masks: Vec<Vec<CpuMask>> = dist
        .iter()
        .map(|&d| {
            (0..nodes)
                .map(|j| {
                    (0..nodes)
                        .filter(|&k| m.numa_distance[j][k] <= d)
                        .fold(CpuMask::new(), |acc, k| acc.or(&node_cpus[k]))
                })
                .collect()
        })
        .collect();
    Levels {
        levels,
        dist,
        numa_masks,
    }
}

/// `tl->mask(cpu)`: the raw mask of one topology level for one CPU (the arch
/// `cpu_*_mask` functions and `sd_numa_mask`).
fn tl_mask(m: &Machine, numa_masks: &[Vec<CpuMask>], tl: &TopoLevel, cpu: usize) -> CpuMask {
    match tl.mask {
        MaskFn::Smt => *m.smt_mask(cpu),
        MaskFn::Cluster => {
            if m.cluster_mask(cpu) == m.llc_mask(cpu) {
                *m.smt_mask(cpu)
            } else {
                *m.cluster_mask(cpu)
            }
        }
        MaskFn::Llc => *m.llc_mask(cpu),
        MaskFn::Coregroup => {
            let mut core = m.node_mask(cpu);
            if m.package_mask(cpu).is_subset(core) {
                core = m.package_mask(cpu);
            }
            if m.llc_mask(cpu).is_subset(core) {
                core = m.llc_mask(cpu);
            }
            *core
        }
        MaskFn::Node => *m.node_mask(cpu),
        MaskFn::Numa(k) => numa_masks[k][m.cpus[cpu].node],
    }
}

/// The domains under construction: every CPU's chain, and `built[level][cpu]`.
struct Chains {
    tmp: Vec<Tmp>,
    /// `built[level][cpu]`: the CPU's domain at that level, if its chain reached it.
    built: Vec<Vec<Option<usize>>>,
}

/// Builds every CPU's chain bottom-up, stopping at the first level that spans the
/// whole machine. Models the domain loop of `build_sched_domains` (v5.6
/// kernel/sched/topology.c).
fn build_sched_domains(
    m: &Machine,
    opts: &TopologyOpts,
    lv: &Levels,
    asym_tl: Option<usize>,
) -> Chains {
    let n = m.nr_cpus();
    let nl = lv.levels.len();
    let mut ch = Chains {
        tmp: Vec::with_capacity(n * nl),
        built: vec![vec![None; n]; nl],
    };
    for cpu in 0..n {
        let mut child: Option<usize> = None;
        for l in 0..nl {
            let id = build_sched_domain(m, opts, lv, asym_tl, &mut ch, cpu, l, child);
            child = Some(id);
            if ch.tmp[id].span == *m.all_cpus() {
                break;
            }
        }
    }
    ch
}

/// One domain of one CPU at level `l` above `child`: flags, span and balance
/// parameters. Models `build_sched_domain` + `sd_init` (v5.6
/// kernel/sched/topology.c).
#[allow(clippy::too_many_arguments)] // the kernel's own argument list, plus the context
fn build_sched_domain(
    m: &Machine,
    opts: &TopologyOpts,
    lv: &Levels,
    asym_tl: Option<usize>,
    ch: &mut Chains,
    cpu: usize,
    l: usize,
    child: Option<usize>,
) -> usize {
    let tmp = &mut ch.tmp;
    let tl = &lv.levels[l];
    let mask = tl_mask(m, &lv.numa_masks, tl, cpu);
    let weight = mask.weight() as u32;
    let mut flags = SD_LOAD_BALANCE
        | SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_BALANCE_FORK
        | SD_WAKE_AFFINE
        | SD_PREFER_SIBLING
        | tl.sd_flags;
    if asym_tl == Some(l) {
        flags |= SD_ASYM_CPUCAPACITY;
    }
    let mut span = mask.and(m.all_cpus());
    if flags & SD_ASYM_CPUCAPACITY != 0 {
        if let Some(c) = child {
            tmp[c].flags &= !SD_PREFER_SIBLING;
        }
        if opts.asym_balance_wake {
            flags |= SD_BALANCE_WAKE;
            let mut t = child;
            while let Some(c) = t {
                tmp[c].flags |= SD_BALANCE_WAKE;
                t = tmp[c].child;
            }
        }
    }
    let (imbalance_pct, cache_nice_tries) = if flags & SD_SHARE_CPUCAPACITY != 0 {
        (110, 0)
    } else if flags & SD_SHARE_PKG_RESOURCES != 0 {
        (117, 1)
    } else if flags & SD_NUMA != 0 {
        flags &= !SD_PREFER_SIBLING;
        flags |= SD_SERIALIZE;
        if let MaskFn::Numa(k) = tl.mask {
            if lv.dist[k] > m.node_reclaim_distance {
                flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
            }
        }
        (opts.imbalance_pct_default, 2)
    } else {
        (opts.imbalance_pct_default, 1)
    };
    if let Some(c) = child {
        // "Topology broken": widen the span to contain the child's.
        span = span.or(&tmp[c].span);
    }
    if tl.overlap {
        flags |= SD_OVERLAP;
    }
    let id = tmp.len();
    tmp.push(Tmp {
        cpu,
        level: l,
        span,
        weight,
        flags,
        parent: None,
        child,
        groups: Vec::new(),
        imbalance_pct,
        cache_nice_tries,
        imb_numa_nr: 0,
    });
    if let Some(c) = child {
        tmp[c].parent = Some(id);
    }
    ch.built[l][cpu] = Some(id);
    id
}

/// The groups built so far, shared between the domains whose rings contain them.
struct Groups {
    groups: Vec<SchedGroup>,
    sgc: Vec<SchedGroupCapacity>,
    /// `[level][first cpu of span]` -> groups with that first CPU (matched by span).
    index: Vec<Vec<Vec<SgId>>>,
}

/// Every domain's ring of groups, each group the child domain's span of one CPU (or
/// that CPU alone at the bottom), a group shared by every domain whose ring contains
/// it. Models `build_sched_groups` and, at overlapping (NUMA) levels,
/// `build_overlap_sched_groups` (v5.6 kernel/sched/topology.c).
fn build_sched_groups(m: &Machine, levels: &[TopoLevel], ch: &mut Chains) -> Groups {
    let n = m.nr_cpus();
    let mut gs = Groups {
        groups: Vec::new(),
        sgc: Vec::new(),
        index: vec![vec![Vec::new(); n]; levels.len()],
    };
    let (tmp, built) = (&ch.tmp, &ch.built);
    let mut rings = Vec::with_capacity(tmp.len());
    for t in tmp {
        let (cpu, l, span) = (t.cpu, t.level, t.span);
        let overlap = levels[l].overlap;
        let mut covered = CpuMask::new();
        let mut ring = Vec::new();
        for i in span.iter_wrap(cpu) {
            if covered.test(i) {
                continue;
            }
            let gspan = if overlap {
                let Some(sib) = built[l][i] else { continue };
                if !tmp[sib].span.test(i) {
                    continue;
                }
                match tmp[sib].child {
                    Some(c) => tmp[c].span,
                    None => tmp[sib].span,
                }
            } else {
                match built[l][i].and_then(|s| tmp[s].child) {
                    Some(c) => tmp[c].span,
                    None => CpuMask::of(i),
                }
            };
            covered = covered.or(&gspan);
            ring.push(get_group(m, ch, &mut gs, l, overlap, gspan, i));
        }
        rings.push(ring);
    }
    for (t, ring) in ch.tmp.iter_mut().zip(rings) {
        t.groups = ring;
    }
    gs
}

/// The group spanning `gspan` at level `l`, created on first use with its boot
/// capacity (`init_sched_groups_capacity`) and, at overlapping levels, its balance
/// mask. Models `get_group` / `build_group_from_child_sched_domain` +
/// `init_overlap_sched_group` (v5.6 kernel/sched/topology.c).
fn get_group(
    m: &Machine,
    ch: &Chains,
    gs: &mut Groups,
    l: usize,
    overlap: bool,
    gspan: CpuMask,
    i: usize,
) -> SgId {
    let (tmp, built) = (&ch.tmp, &ch.built);
    let first = gspan.first().unwrap_or(i);
    let found = gs.index[l][first]
        .iter()
        .copied()
        .find(|&g| gs.groups[g].span == gspan);
    if let Some(g) = found {
        return g;
    }
    let balance_mask = if overlap {
        let bm: CpuMask = gspan
            .iter()
            .filter(|&j| built[l][j].and_then(|s| tmp[s].child).map(|c| tmp[c].span) == Some(gspan))
            .collect();
        if bm.is_empty() {
            gspan
        } else {
            bm
        }
    } else {
        gspan
    };
    let g = gs.groups.len();
    gs.sgc.push(boot_capacity(m, &gspan));
    gs.groups.push(SchedGroup {
        span: gspan,
        group_weight: gspan.weight() as u32,
        balance_mask,
        sgc: g,
        asym_prefer_cpu: first,
    });
    gs.index[l][first].push(g);
    g
}

/// Drops every CPU's degenerate domains (a parent that adds nothing over its
/// child, a bottom domain of one CPU or without balancing), returning each CPU's
/// base domain and which domains were removed. Models `cpu_attach_domain` (v5.6
/// kernel/sched/topology.c).
fn cpu_attach_domain(m: &Machine, ch: &mut Chains) -> (Vec<Option<usize>>, Vec<bool>) {
    let nodes = m.nr_nodes();
    let tmp = &mut ch.tmp;
    let mut removed = vec![false; tmp.len()];
    let mut base: Vec<Option<usize>> = vec![None; m.nr_cpus()];
    for (cpu, b) in base.iter_mut().enumerate() {
        let Some(first) = ch.built[0][cpu] else {
            continue;
        };
        let mut t = first;
        while let Some(p) = tmp[t].parent {
            if sd_parent_degenerate(&tmp[t], &tmp[p], nodes) {
                let pp = tmp[p].parent;
                tmp[t].parent = pp;
                if let Some(pp) = pp {
                    tmp[pp].child = Some(t);
                }
                if tmp[p].flags & SD_PREFER_SIBLING != 0 {
                    tmp[t].flags |= SD_PREFER_SIBLING;
                }
                removed[p] = true;
            } else {
                t = p;
            }
        }
        let mut sd = Some(first);
        if sd_degenerate(&tmp[first]) {
            removed[first] = true;
            sd = tmp[first].parent;
            if let Some(s) = sd {
                tmp[s].child = None;
            }
        }
        *b = sd;
    }
    (base, removed)
}

/// Emits the surviving domains in per-CPU chain order, compacting the groups, their
/// capacities and the LLC shared blocks to those still referenced; returns the
/// topology with its per-CPU pointers still unset. Models `claim_allocations` +
/// `__free_domain_allocs` (v5.6 kernel/sched/topology.c): what is attached is kept.
fn claim_allocations(
    m: &Machine,
    opts: &TopologyOpts,
    levels: &[TopoLevel],
    tmp: &[Tmp],
    gs: &Groups,
    base: &[Option<usize>],
    removed: &[bool],
) -> SchedTopology {
    let n = m.nr_cpus();
    let mut new_id = vec![usize::MAX; tmp.len()];
    let mut order = Vec::new();
    for &b in base {
        let mut t = b;
        while let Some(d) = t {
            new_id[d] = order.len();
            order.push(d);
            t = tmp[d].parent;
        }
    }
    let (groups, sgc) = (&gs.groups, &gs.sgc);
    let mut group_map: Vec<Option<SgId>> = vec![None; groups.len()];
    let mut out_groups = Vec::new();
    let mut out_sgc = Vec::new();
    let mut shared_map: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut shared = Vec::new();
    let mut domains = Vec::with_capacity(order.len());
    for &d in &order {
        let t = &tmp[d];
        debug_assert!(!removed[d]);
        let ring = t
            .groups
            .iter()
            .map(|&g| {
                *group_map[g].get_or_insert_with(|| {
                    let ng = out_groups.len();
                    out_sgc.push(sgc[groups[g].sgc].clone());
                    out_groups.push(SchedGroup {
                        sgc: ng,
                        ..groups[g].clone()
                    });
                    ng
                })
            })
            .collect();
        let sh = if t.flags & SD_SHARE_PKG_RESOURCES != 0 {
            let key = (t.level, t.span.first().unwrap_or(t.cpu));
            Some(*shared_map.entry(key).or_insert_with(|| {
                shared.push(SdShared {
                    nr_busy_cpus: t.weight,
                    has_idle_cores: false,
                    nr_idle_scan: 0,
                });
                shared.len() - 1
            }))
        } else {
            None
        };
        let w = t.weight as u64;
        domains.push(SchedDomain {
            cpu: t.cpu,
            name: levels[t.level].name,
            level: t.level as u32,
            span: t.span,
            span_weight: t.span.weight() as u32,
            flags: t.flags,
            parent: t.parent.map(|p| new_id[p]),
            child: t.child.map(|c| new_id[c]),
            groups: ring,
            imbalance_pct: t.imbalance_pct,
            imb_numa_nr: t.imb_numa_nr,
            busy_factor: opts.busy_factor,
            cache_nice_tries: t.cache_nice_tries,
            min_interval: w,
            max_interval: 2 * w,
            shared: sh,
            balance_interval: w,
            last_balance: 0,
            nr_balance_failed: 0,
            max_newidle_lb_cost: 0,
            next_decay_max_lb_cost: 0,
            avg_scan_cost: 0,
        });
    }

    let sd: Vec<Option<SdId>> = base.iter().map(|b| b.map(|d| new_id[d])).collect();
    SchedTopology {
        domains,
        groups: out_groups,
        sgc: out_sgc,
        shared,
        sd,
        sd_llc: vec![None; n],
        sd_llc_size: vec![1; n],
        sd_llc_id: (0..n).collect(),
        sd_llc_shared: vec![None; n],
        sd_numa: vec![None; n],
        sd_asym_packing: vec![None; n],
        sd_balance_wake: vec![None; n],
        sd_balance_fork: vec![None; n],
        sd_balance_exec: vec![None; n],
        sd_asym_cpucapacity: vec![None; n],
        asym_cpucapacity: false,
        max_cpu_capacity: m
            .cpus
            .iter()
            .map(|c| c.capacity_orig as u64)
            .max()
            .unwrap_or(SCHED_CAPACITY_SCALE),
    }
}

impl SchedTopology {
    /// Build the domain hierarchy of `m` under `opts` (`build_sched_domains` +
    /// `cpu_attach_domain` + `update_top_cache_domain`).
    pub fn build(m: &Machine, opts: &TopologyOpts) -> SchedTopology {
        let lv = sched_init_numa(m, arch_levels(m, opts));
        let raw_mask = |tl: &TopoLevel, cpu: usize| tl_mask(m, &lv.numa_masks, tl, cpu);
        let asym_tl = asym_cpu_capacity_level(m, &lv.levels, &raw_mask);

        let mut ch = build_sched_domains(m, opts, &lv, asym_tl);
        let gs = build_sched_groups(m, &lv.levels, &mut ch);
        // sd->imb_numa_nr, on the full chains (build_sched_domains computes it
        // before cpu_attach_domain drops degenerate levels).
        for &first in ch.built[0].iter().flatten() {
            imb_numa_nr(&mut ch.tmp, first);
        }
        let (base, removed) = cpu_attach_domain(m, &mut ch);

        let mut topo = claim_allocations(m, opts, &lv.levels, &ch.tmp, &gs, &base, &removed);
        topo.asym_cpucapacity = asym_tl.is_some();
        for cpu in 0..m.nr_cpus() {
            topo.update_top_cache_domain(cpu);
        }
        topo.update_balance_shortcuts();
        topo
    }

    /// The CPU's sd_llc (with its size, id and shared block), sd_numa, sd_asym_packing
    /// and sd_asym_cpucapacity pointers. Models `update_top_cache_domain` (v5.6
    /// kernel/sched/topology.c).
    fn update_top_cache_domain(&mut self, cpu: usize) {
        if let Some(llc) = self.highest_flag_domain(cpu, SD_SHARE_PKG_RESOURCES) {
            let d = &self.domains[llc];
            self.sd_llc[cpu] = Some(llc);
            self.sd_llc_size[cpu] = d.span_weight;
            self.sd_llc_id[cpu] = d.span.first().unwrap_or(cpu);
            self.sd_llc_shared[cpu] = d.shared;
        }
        self.sd_numa[cpu] = self.lowest_flag_domain(cpu, SD_NUMA);
        self.sd_asym_packing[cpu] = self.highest_flag_domain(cpu, SD_ASYM_PACKING);
        self.sd_asym_cpucapacity[cpu] = self.lowest_flag_domain(cpu, SD_ASYM_CPUCAPACITY);
    }

    /// `for_each_domain(cpu, sd)`: the CPU's domains, bottom-up.
    pub fn domains_of(&self, cpu: usize) -> impl Iterator<Item = SdId> + '_ {
        std::iter::successors(self.sd.get(cpu).copied().flatten(), move |&d| {
            self.domains[d].parent
        })
    }

    /// `cpus_share_cache`: same LLC domain id.
    pub fn cpus_share_cache(&self, a: usize, b: usize) -> bool {
        self.sd_llc_id[a] == self.sd_llc_id[b]
    }

    /// The cluster domain right below `cpu`'s LLC domain, if the LLC's child is
    /// the CLS level (v5.16+ topology): the local group of `sd_llc` is then the
    /// cluster (`sg->flags & SD_CLUSTER` in v6.7).
    pub(crate) fn llc_cluster_domain(&self, cpu: usize) -> Option<SdId> {
        let llc = self.sd_llc[cpu]?;
        self.domains[llc]
            .child
            .filter(|&c| self.domains[c].name == "CLS")
    }

    /// `cpus_share_resources(a, b)` (v6.7): the same cluster when `a` sits under a
    /// CLS level, else the same LLC.
    pub fn cpus_share_resources(&self, a: usize, b: usize) -> bool {
        match self.llc_cluster_domain(a) {
            Some(c) => self.domains[c].span.test(b),
            None => self.cpus_share_cache(a, b),
        }
    }

    /// `sched_cluster_active` (v6.7): some CPU has a CLS domain under its LLC.
    pub fn sched_cluster_active(&self) -> bool {
        (0..self.sd.len()).any(|c| self.llc_cluster_domain(c).is_some())
    }

    /// `highest_flag_domain`: the highest domain of the unbroken run of domains
    /// carrying `flag`, starting from the base.
    /// Recompute seed 002's `sd_balance_*` shortcuts from the domain flags (done at
    /// build; call again after editing flags by hand).
    pub fn update_balance_shortcuts(&mut self) {
        for cpu in 0..self.sd.len() {
            self.sd_balance_wake[cpu] = self.highest_flag_domain(cpu, SD_BALANCE_WAKE);
            self.sd_balance_fork[cpu] = self.highest_flag_domain(cpu, SD_BALANCE_FORK);
            self.sd_balance_exec[cpu] = self.highest_flag_domain(cpu, SD_BALANCE_EXEC);
        }
    }

    pub fn highest_flag_domain(&self, cpu: usize, flag: u32) -> Option<SdId> {
        let mut h = None;
        for d in self.domains_of(cpu) {
            if self.domains[d].flags & flag == 0 {
                break;
            }
            h = Some(d);
        }
        h
    }

    /// `lowest_flag_domain`: the lowest domain carrying `flag`.
    pub(crate) fn lowest_flag_domain(&self, cpu: usize, flag: u32) -> Option<SdId> {
        self.domains_of(cpu)
            .find(|&d| self.domains[d].flags & flag != 0)
    }

    /// Human-readable dump: per CPU its domain chain (level name and number, span,
    /// group ring with capacities, flags, imbalance_pct, intervals), then its LLC
    /// shortcuts. Used by `schedlab topology`.
    pub fn render(&self, m: &Machine) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sched domains of `{}`: {} CPUs, {} nodes, sched_asym_cpucapacity={}, max_cpu_capacity={}",
            m.name,
            m.nr_cpus(),
            m.nr_nodes(),
            if self.asym_cpucapacity { "on" } else { "off" },
            self.max_cpu_capacity
        );
        for cpu in 0..self.sd.len() {
            let _ = writeln!(
                s,
                "cpu{cpu}: capacity_orig {} llc_id {} llc_size {}{}",
                m.cpus[cpu].capacity_orig,
                self.sd_llc_id[cpu],
                self.sd_llc_size[cpu],
                if self.sd[cpu].is_none() {
                    " (no domains)"
                } else {
                    ""
                }
            );
            for d in self.domains_of(cpu) {
                let sd = &self.domains[d];
                let groups: Vec<String> = sd
                    .groups
                    .iter()
                    .map(|&g| {
                        format!(
                            "{{{}}}:{}",
                            self.groups[g].span, self.sgc[self.groups[g].sgc].capacity
                        )
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "  level {} {:<5} span {} ({})\n    groups {}\n    flags {}\n    imbalance_pct {} cache_nice_tries {} interval {}..{} ms busy_factor {}",
                    sd.level,
                    sd.name,
                    sd.span,
                    sd.span_weight,
                    groups.join(" "),
                    sd_flags_names(sd.flags),
                    sd.imbalance_pct,
                    sd.cache_nice_tries,
                    sd.min_interval,
                    sd.max_interval,
                    sd.busy_factor
                );
            }
        }
        s
    }
}

/// Boot-time `update_group_capacity` result without RT/DL/IRQ pressure.
fn boot_capacity(m: &Machine, span: &CpuMask) -> SchedGroupCapacity {
    let mut sum = 0u64;
    let mut min = u64::MAX;
    let mut max = 0u64;
    for c in span.iter() {
        let cap = m.cpus[c].capacity_orig as u64;
        sum += cap;
        min = min.min(cap);
        max = max.max(cap);
    }
    if span.is_empty() {
        // get_group's seed values (1024 × weight = 0).
        return SchedGroupCapacity {
            capacity: 0,
            min_capacity: SCHED_CAPACITY_SCALE,
            max_capacity: SCHED_CAPACITY_SCALE,
            imbalance: false,
            next_update: 0,
        };
    }
    SchedGroupCapacity {
        capacity: sum,
        min_capacity: min,
        max_capacity: max,
        imbalance: false,
        next_update: 0,
    }
}

/// `asym_cpu_capacity_level`: the level at which, from every CPU's point of view,
/// the highest capacity in the machine has come into view; `None` when all CPUs
/// have the same capacity.
fn asym_cpu_capacity_level(
    m: &Machine,
    levels: &[TopoLevel],
    raw_mask: &dyn Fn(&TopoLevel, usize) -> CpuMask,
) -> Option<usize> {
    if !m.is_asymmetric() {
        return None;
    }
    let mut asym_level = 0usize;
    let mut asym_tl = None;
    for i in 0..m.nr_cpus() {
        let mut max_capacity = m.cpus[i].capacity_orig;
        for (l, tl) in levels.iter().enumerate() {
            if l < asym_level {
                continue;
            }
            for j in raw_mask(tl, i).iter() {
                if j >= m.nr_cpus() {
                    break;
                }
                let cap = m.cpus[j].capacity_orig;
                if cap > max_capacity {
                    max_capacity = cap;
                    asym_level = l;
                    asym_tl = Some(l);
                }
            }
        }
    }
    asym_tl
}

/// The allowed NUMA imbalance of each domain of one CPU's chain, bottom-up from
/// `first` (v5.18 "Adjust the allowed NUMA imbalance when SD_NUMA spans multiple
/// LLCs", as in v6.12 `build_sched_domains`). The first domain above the LLC gets
/// `imb` = its number of LLCs when it has several, else an eighth of its span (at
/// least 1); the span of reference becomes that of the lowest SD_NUMA domain above
/// it (or its own). Every higher domain gets `imb × max(1, span / reference)`, and
/// the domains up to the LLC get 0.
fn imb_numa_nr(tmp: &mut [Tmp], first: usize) {
    let (mut imb, mut imb_span) = (0u32, 1u32);
    let mut sd = Some(first);
    while let Some(d) = sd {
        let w = tmp[d].span.weight() as u32;
        let child_llc = tmp[d].child.map(|c| {
            (
                tmp[c].flags & SD_SHARE_PKG_RESOURCES != 0,
                tmp[c].span.weight() as u32,
            )
        });
        match child_llc {
            Some((true, cw)) if tmp[d].flags & SD_SHARE_PKG_RESOURCES == 0 => {
                let nr_llcs = w / cw.max(1);
                imb = if nr_llcs == 1 { w >> 3 } else { nr_llcs }.max(1);
                tmp[d].imb_numa_nr = imb;
                let mut top = tmp[d].parent;
                while let Some(t) = top {
                    if tmp[t].flags & SD_NUMA != 0 {
                        break;
                    }
                    top = tmp[t].parent;
                }
                imb_span = top.map_or(w, |t| tmp[t].span.weight() as u32);
            }
            _ => tmp[d].imb_numa_nr = imb * (w / imb_span.max(1)).max(1),
        }
        sd = tmp[d].parent;
    }
}

/// `sd_degenerate`.
fn sd_degenerate(sd: &Tmp) -> bool {
    if sd.span.weight() == 1 {
        return true;
    }
    if sd.flags & SD_GROUP_FLAGS != 0 && sd.groups.len() > 1 {
        return false;
    }
    sd.flags & SD_WAKE_AFFINE == 0
}

/// `sd_parent_degenerate`.
fn sd_parent_degenerate(sd: &Tmp, parent: &Tmp, nr_nodes: usize) -> bool {
    if sd_degenerate(parent) {
        return true;
    }
    if sd.span != parent.span {
        return false;
    }
    let mut pflags = parent.flags;
    if parent.groups.len() == 1 {
        pflags &= !(SD_GROUP_FLAGS | SD_PREFER_SIBLING);
        if nr_nodes == 1 {
            pflags &= !SD_SERIALIZE;
        }
    }
    !sd.flags & pflags == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{CoreKind, CostTable, Cpu, FreqDomain, MachineParts, Opp};
    use proptest::prelude::*;

    /// One CPU: (core, cluster, llc, package, node, capacity_orig).
    type CpuDesc = (usize, usize, usize, usize, usize, u32);

    fn machine(arch: Arch, cpus: &[CpuDesc], dist: Vec<Vec<u32>>) -> Machine {
        let n = cpus.len();
        Machine::new(MachineParts {
            name: "test".into(),
            description: String::new(),
            arch,
            cpus: cpus
                .iter()
                .map(|&(core, cluster, llc, package, node, cap)| Cpu {
                    core,
                    cluster,
                    llc,
                    package,
                    node,
                    capacity_orig: cap,
                    kind: 0,
                    idle_table: 0,
                    freq_domain: 0,
                })
                .collect(),
            numa_distance: dist,
            node_reclaim_distance: 30,
            vcpu_throughput: Vec::new(),
            vcpu_host: None,
            core_kinds: vec![CoreKind {
                name: "k".into(),
                smt_throughput: vec![1024; 8],
                work_per_clock: Default::default(),
            }],
            idle_tables: vec![vec![]],
            freq_domains: vec![FreqDomain {
                cluster_idle_mw: Vec::new(),
                cpus: CpuMask::first_n(n),
                opps: vec![Opp {
                    cluster_power_mw: 0,
                    freq_khz: 1_000_000,
                    power_mw: 0,
                }],
                transition_latency_ns: 0,
            }],
            cost: CostTable::default(),
        })
        .expect("valid test machine")
    }

    fn uniform(nodes: usize, d: u32) -> Vec<Vec<u32>> {
        (0..nodes)
            .map(|i| (0..nodes).map(|j| if i == j { 10 } else { d }).collect())
            .collect()
    }

    /// Nodes paired (0-1, 2-3, ...): `near` inside a pair, `far` across.
    fn pairs(nodes: usize, near: u32, far: u32) -> Vec<Vec<u32>> {
        (0..nodes)
            .map(|i| {
                (0..nodes)
                    .map(|j| {
                        if i == j {
                            10
                        } else if i / 2 == j / 2 {
                            near
                        } else {
                            far
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// Nodes on a ring: 10 + 10 × hops.
    fn ring(nodes: usize) -> Vec<Vec<u32>> {
        (0..nodes)
            .map(|i| {
                (0..nodes)
                    .map(|j| {
                        let h = i.abs_diff(j).min(nodes - i.abs_diff(j));
                        10 + 10 * h as u32
                    })
                    .collect()
            })
            .collect()
    }

    /// A regular machine: one package per node. `interleave` numbers threads the x86
    /// way (thread t of core c is CPU t × cores + c); otherwise siblings are adjacent.
    /// `caps` gives each LLC's capacity, cycled by global LLC id.
    #[allow(clippy::too_many_arguments)]
    fn test_machine(
        arch: Arch,
        nodes: usize,
        llcs_per_node: usize,
        clusters_per_llc: usize,
        cores_per_cluster: usize,
        smt: usize,
        interleave: bool,
        caps: &[u32],
        dist: Vec<Vec<u32>>,
    ) -> Machine {
        let cores = nodes * llcs_per_node * clusters_per_llc * cores_per_cluster;
        let mut cpus = vec![(0, 0, 0, 0, 0, 0); cores * smt];
        for c in 0..cores {
            let cluster = c / cores_per_cluster;
            let llc = cluster / clusters_per_llc;
            let node = llc / llcs_per_node;
            for t in 0..smt {
                let cpu = if interleave {
                    t * cores + c
                } else {
                    c * smt + t
                };
                cpus[cpu] = (c, cluster, llc, node, node, caps[llc % caps.len()]);
            }
        }
        machine(arch, &cpus, dist)
    }

    fn chain(t: &SchedTopology, cpu: usize) -> Vec<&SchedDomain> {
        t.domains_of(cpu).map(|d| &t.domains[d]).collect()
    }
    fn names(t: &SchedTopology, cpu: usize) -> Vec<&'static str> {
        chain(t, cpu).iter().map(|d| d.name).collect()
    }
    fn levels(t: &SchedTopology, cpu: usize) -> Vec<u32> {
        chain(t, cpu).iter().map(|d| d.level).collect()
    }
    fn ring_spans(t: &SchedTopology, d: SdId) -> Vec<String> {
        t.domains[d]
            .groups
            .iter()
            .map(|&g| t.groups[g].span.to_string())
            .collect()
    }
    fn mask(s: &str) -> CpuMask {
        CpuMask::parse_cpulist(s).unwrap()
    }

    const BASE: u32 =
        SD_LOAD_BALANCE | SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE;

    #[test]
    fn flag_values_and_names() {
        // v5.6 include/linux/sched/topology.h values.
        assert_eq!(SD_SHARE_PKG_RESOURCES, 0x200);
        assert_eq!(SD_NUMA, 0x4000);
        assert_eq!(
            sd_flags_names(0x122F),
            "SD_LOAD_BALANCE|SD_BALANCE_NEWIDLE|SD_BALANCE_EXEC|SD_BALANCE_FORK|SD_WAKE_AFFINE|\
             SD_SHARE_PKG_RESOURCES|SD_PREFER_SIBLING"
        );
        assert_eq!(
            sd_flags_names(SD_NUMA | SD_BALANCE_WAKE),
            "SD_BALANCE_WAKE|SD_NUMA"
        );
        assert_eq!(sd_flags_names(0), "");
        assert_eq!(sd_flags_names(0x1_0001), "SD_LOAD_BALANCE|0x10000");
    }

    #[test]
    fn xeon_2x10_smt2_is_smt_mc_numa() {
        let m = test_machine(Arch::X86, 2, 1, 1, 10, 2, true, &[1024], uniform(2, 21));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        for cpu in 0..40 {
            assert_eq!(names(&t, cpu), ["SMT", "MC", "NUMA"], "cpu{cpu}");
            assert_eq!(levels(&t, cpu), [0, 1, 4], "cpu{cpu}");
        }
        let c0 = chain(&t, 0);
        assert_eq!(c0[0].span, mask("0,20"));
        assert_eq!(c0[1].span, mask("0-9,20-29"));
        assert_eq!(c0[2].span, mask("0-39"));
        assert_eq!(
            [c0[0].flags, c0[1].flags, c0[2].flags],
            [0x12AF, 0x122F, 0x642F]
        );
        assert_eq!(
            c0[2].flags,
            BASE | SD_SERIALIZE | SD_OVERLAP | SD_NUMA,
            "NUMA within reclaim distance keeps EXEC/FORK/WAKE_AFFINE, loses PREFER_SIBLING"
        );
        assert_eq!(
            c0.iter().map(|d| d.imbalance_pct).collect::<Vec<_>>(),
            [110, 117, 125]
        );
        assert_eq!(
            c0.iter().map(|d| d.cache_nice_tries).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(
            c0.iter()
                .map(|d| (d.min_interval, d.max_interval))
                .collect::<Vec<_>>(),
            [(2, 4), (20, 40), (40, 80)]
        );
        assert!(c0
            .iter()
            .all(|d| d.busy_factor == 32 && d.balance_interval == d.min_interval));
        assert_eq!(ring_spans(&t, t.sd[0].unwrap()), ["0", "20"]);
        assert_eq!(
            ring_spans(&t, c0[2].parent.map_or(t.sd_numa[0].unwrap(), |p| p)),
            ["0-9,20-29", "10-19,30-39"]
        );
        // Group ring of cpu25 at MC starts at its own core and wraps.
        let mc25 = t.domains[t.sd[25].unwrap()].parent.unwrap();
        assert_eq!(
            ring_spans(&t, mc25),
            ["5,25", "6,26", "7,27", "8,28", "9,29", "0,20", "1,21", "2,22", "3,23", "4,24"]
        );
        // Groups are shared: cpu0 and cpu20 see the same MC group objects.
        let mc0 = t.domains[t.sd[0].unwrap()].parent.unwrap();
        let mc20 = t.domains[t.sd[20].unwrap()].parent.unwrap();
        assert_eq!(t.domains[mc0].groups, t.domains[mc20].groups);
        assert_eq!(t.groups.len(), 40 + 20 + 2);
        assert_eq!(t.sgc.len(), t.groups.len());
        let numa_g = t.domains[t.sd_numa[35].unwrap()].groups[0];
        assert_eq!(t.groups[numa_g].span, mask("10-19,30-39"));
        assert_eq!(t.groups[numa_g].balance_mask, mask("10-19,30-39"));
        let sgc = &t.sgc[t.groups[numa_g].sgc];
        assert_eq!(
            (sgc.capacity, sgc.min_capacity, sgc.max_capacity),
            (20480, 1024, 1024)
        );
        // LLC shortcuts.
        assert_eq!(t.sd_llc[25], Some(mc25));
        assert_eq!(
            (t.sd_llc_size[25], t.sd_llc_id[25], t.sd_llc_id[35]),
            (20, 0, 10)
        );
        assert!(t.cpus_share_cache(0, 29) && !t.cpus_share_cache(0, 10));
        let sh = t.sd_llc_shared[25].unwrap();
        assert_eq!(t.sd_llc_shared[3], Some(sh));
        assert_eq!(
            t.shared[sh],
            SdShared {
                nr_busy_cpus: 20,
                has_idle_cores: false,
                nr_idle_scan: 0
            }
        );
        assert_eq!(t.shared.len(), 20 + 2, "one block per SMT core and per LLC");
        assert_eq!(t.sd_asym_cpucapacity[0], None);
        assert!(!t.asym_cpucapacity);
        assert_eq!(t.max_cpu_capacity, 1024);
    }

    fn juno() -> Machine {
        let mut cpus = vec![(0, 0, 0, 0, 0, 1024), (1, 0, 0, 0, 0, 1024)];
        for c in 2..6 {
            cpus.push((c, 1, 1, 0, 0, 446));
        }
        machine(Arch::Arm64, &cpus, uniform(1, 10))
    }

    #[test]
    fn juno_asymmetric_mc_die() {
        let m = juno();
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert!(t.asym_cpucapacity);
        assert_eq!(t.max_cpu_capacity, 1024);
        for cpu in 0..6 {
            assert_eq!(names(&t, cpu), ["MC", "DIE"], "cpu{cpu}");
            assert_eq!(levels(&t, cpu), [1, 2]);
            let c = chain(&t, cpu);
            assert_eq!(
                c[0].flags,
                BASE | SD_BALANCE_WAKE | SD_SHARE_PKG_RESOURCES,
                "MC loses PREFER_SIBLING"
            );
            assert_eq!(
                c[1].flags,
                BASE | SD_BALANCE_WAKE | SD_ASYM_CPUCAPACITY | SD_PREFER_SIBLING
            );
            assert_eq!(t.sd_asym_cpucapacity[cpu], c[0].parent);
            assert_eq!(t.sd_llc[cpu], t.sd[cpu]);
        }
        let die3 = t.sd_asym_cpucapacity[3].unwrap();
        assert_eq!(ring_spans(&t, die3), ["2-5", "0-1"]);
        let caps: Vec<_> = t.domains[die3]
            .groups
            .iter()
            .map(|&g| {
                let s = &t.sgc[t.groups[g].sgc];
                (s.capacity, s.min_capacity, s.max_capacity)
            })
            .collect();
        assert_eq!(caps, [(1784, 446, 446), (2048, 1024, 1024)]);
        assert_eq!(
            (t.sd_llc_size[4], t.sd_llc_id[4], t.sd_llc_size[1]),
            (4, 2, 2)
        );
        let r = t.render(&m);
        assert!(r.contains("groups {2-5}:1784 {0-1}:2048"), "{r}");
        assert!(r.contains("level 2 DIE   span 0-5 (6)"), "{r}");

        // v5.7+: no BALANCE_WAKE on the asymmetric levels; PREFER_SIBLING still cleared.
        let t7 = SchedTopology::build(
            &m,
            &TopologyOpts {
                asym_balance_wake: false,
                ..TopologyOpts::v5_6()
            },
        );
        let c = chain(&t7, 0);
        assert_eq!(c[0].flags, BASE | SD_SHARE_PKG_RESOURCES);
        assert_eq!(c[1].flags, BASE | SD_ASYM_CPUCAPACITY | SD_PREFER_SIBLING);
    }

    #[test]
    fn one_socket_smt2_four_cores() {
        let m = test_machine(Arch::X86, 1, 1, 1, 4, 2, true, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        for cpu in 0..8 {
            assert_eq!(names(&t, cpu), ["SMT", "MC"]);
        }
        let mc5 = t.domains[t.sd[5].unwrap()].parent.unwrap();
        assert_eq!(ring_spans(&t, mc5), ["1,5", "2,6", "3,7", "0,4"]);
        assert_eq!(ring_spans(&t, t.sd[5].unwrap()), ["5", "1"]);
        assert_eq!(t.sd_llc[5], Some(mc5));
        assert_eq!(
            t.domains[mc5].flags,
            BASE | SD_SHARE_PKG_RESOURCES | SD_PREFER_SIBLING
        );
        assert_eq!(t.domains[mc5].parent, None);
    }

    #[test]
    fn no_smt_single_llc_is_mc_only() {
        let m = test_machine(Arch::X86, 1, 1, 1, 8, 1, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        for cpu in 0..8 {
            assert_eq!(names(&t, cpu), ["MC"]);
            assert_eq!(levels(&t, cpu), [1]);
            assert_eq!(t.sd_llc[cpu], t.sd[cpu]);
            assert_eq!((t.sd_llc_size[cpu], t.sd_llc_id[cpu]), (8, 0));
            let d = &t.domains[t.sd[cpu].unwrap()];
            assert_eq!(d.groups.len(), 8);
            assert_eq!(t.groups[d.groups[0]].span, CpuMask::of(cpu));
            assert_eq!((d.child, d.parent), (None, None));
        }
        assert_eq!(t.groups.len(), 8);
    }

    #[test]
    fn single_cpu_has_no_domains() {
        let m = test_machine(Arch::X86, 1, 1, 1, 1, 1, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert!(t.domains.is_empty() && t.groups.is_empty());
        assert_eq!(
            (t.sd[0], t.sd_llc[0], t.sd_llc_size[0], t.sd_llc_id[0]),
            (None, None, 1, 0)
        );
        assert!(t.render(&m).contains("(no domains)"));
    }

    #[test]
    fn x86_numa_in_package_drops_die() {
        // One package, two nodes of four cores, each node one LLC.
        let cpus: Vec<CpuDesc> = (0..8).map(|c| (c, c / 4, c / 4, 0, c / 4, 1024)).collect();
        let x86 = machine(Arch::X86, &cpus, uniform(2, 12));
        let t = SchedTopology::build(&x86, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 0), ["MC", "NUMA"]);
        assert_eq!(levels(&t, 0), [1, 3], "no DIE level in the table");
        // arm64 keeps DIE (= node) in its table; it degenerates into MC.
        let arm = machine(Arch::Arm64, &cpus, uniform(2, 12));
        let t = SchedTopology::build(&arm, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 5), ["MC", "NUMA"]);
        assert_eq!(levels(&t, 5), [1, 4]);
        assert_eq!(ring_spans(&t, t.sd_numa[5].unwrap()), ["4-7", "0-3"]);
    }

    #[test]
    fn numa_beyond_reclaim_distance_loses_exec_fork_affine() {
        let m = test_machine(Arch::X86, 2, 1, 1, 2, 1, false, &[1024], uniform(2, 40));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        let numa = &t.domains[t.sd_numa[0].unwrap()];
        assert_eq!(
            numa.flags,
            SD_LOAD_BALANCE | SD_BALANCE_NEWIDLE | SD_SERIALIZE | SD_OVERLAP | SD_NUMA
        );
        let m = test_machine(Arch::X86, 2, 1, 1, 2, 1, false, &[1024], uniform(2, 30));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert!(
            t.domains[t.sd_numa[0].unwrap()].has(SD_WAKE_AFFINE),
            "30 is not beyond 30"
        );
    }

    #[test]
    fn two_numa_distances_give_two_numa_levels() {
        let m = test_machine(Arch::X86, 4, 1, 1, 2, 1, false, &[1024], pairs(4, 16, 22));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 0), ["MC", "NUMA", "NUMA"]);
        assert_eq!(levels(&t, 0), [1, 4, 5]);
        let c = chain(&t, 6);
        assert_eq!((c[1].span, c[2].span), (mask("4-7"), mask("0-7")));
        assert_eq!(ring_spans(&t, t.sd_numa[6].unwrap()), ["6-7", "4-5"]);
        assert_eq!(ring_spans(&t, c[1].parent.unwrap()), ["4-7", "0-3"]);
        assert_eq!(t.sd_numa[6], c[0].parent);
        let g = t.domains[c[1].parent.unwrap()].groups[1];
        assert_eq!(t.groups[g].balance_mask, mask("0-3"));
        assert!(c[1].has(SD_OVERLAP) && c[2].has(SD_SERIALIZE) && !c[2].has(SD_PREFER_SIBLING));
    }

    #[test]
    fn single_group_numa_level_survives_for_its_sd_numa_flag() {
        // Nodes 0-1 at distance 11, node 2 at 12 from both: for node 2 the
        // distance-11 level spans only itself, one group, yet SD_NUMA|SD_SERIALIZE
        // are new relative to MC, so sd_parent_degenerate keeps it.
        let m = test_machine(Arch::X86, 3, 1, 1, 2, 1, false, &[1024], pairs(3, 11, 12));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 4), ["MC", "NUMA", "NUMA"]);
        let c = chain(&t, 4);
        assert_eq!((c[1].span, c[1].groups.len()), (mask("4-5"), 1));
        assert_eq!(ring_spans(&t, c[0].parent.unwrap()), ["4-5"]);
        assert_eq!(ring_spans(&t, c[1].parent.unwrap()), ["4-5", "0-3"]);
        assert_eq!(chain(&t, 0)[1].span, mask("0-3"));
    }

    #[test]
    fn power9_core_pairs_get_a_cache_level() {
        let m = test_machine(Arch::Power, 1, 2, 1, 2, 4, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 9), ["SMT", "CACHE", "DIE"]);
        let c = chain(&t, 9);
        assert_eq!(
            (c[1].span, c[1].imbalance_pct, c[2].imbalance_pct),
            (mask("8-15"), 117, 125)
        );
        assert_eq!(t.sd_llc[9], c[0].parent);
        // Without shared caches, POWER has SMT and DIE only; the LLC is the core.
        let m = test_machine(Arch::Power, 1, 4, 1, 1, 4, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 9), ["SMT", "DIE"]);
        assert_eq!(levels(&t, 9), [0, 1]);
        assert_eq!(
            (t.sd_llc[9], t.sd_llc_size[9], t.sd_llc_id[9]),
            (t.sd[9], 4, 8)
        );
    }

    #[test]
    fn cluster_level_only_when_asked_and_distinct() {
        let m = test_machine(Arch::Arm64, 1, 1, 4, 4, 1, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(names(&t, 0), ["MC"]);
        let v516 = TopologyOpts {
            cluster_level: true,
            ..TopologyOpts::v5_6()
        };
        let t = SchedTopology::build(&m, &v516);
        assert_eq!(names(&t, 5), ["CLS", "MC"]);
        assert_eq!(levels(&t, 5), [1, 2]);
        let c = chain(&t, 5);
        assert_eq!(
            (c[0].span, c[0].imbalance_pct, c[0].cache_nice_tries),
            (mask("4-7"), 117, 1)
        );
        assert_eq!(
            t.sd_llc[5], c[0].parent,
            "LLC is the highest SHARE_PKG_RESOURCES run"
        );
        assert_eq!(
            ring_spans(&t, c[0].parent.unwrap()),
            ["4-7", "8-11", "12-15", "0-3"]
        );
        // Cluster == LLC: CLS takes the SMT mask and degenerates; MC stays.
        let m = test_machine(Arch::Arm64, 1, 1, 1, 4, 1, false, &[1024], uniform(1, 10));
        let t = SchedTopology::build(&m, &v516);
        assert_eq!(names(&t, 0), ["MC"]);
        assert_eq!(levels(&t, 0), [2]);
    }

    #[test]
    fn v5_10_defaults_apply_to_die_and_numa() {
        let m = test_machine(Arch::X86, 2, 2, 1, 2, 1, false, &[1024], uniform(2, 21));
        let opts = TopologyOpts {
            imbalance_pct_default: 117,
            busy_factor: 16,
            ..TopologyOpts::v5_6()
        };
        let t = SchedTopology::build(&m, &opts);
        assert_eq!(names(&t, 0), ["MC", "DIE", "NUMA"]);
        assert!(chain(&t, 0)
            .iter()
            .all(|d| d.imbalance_pct == 117 && d.busy_factor == 16));
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert_eq!(
            chain(&t, 0)
                .iter()
                .map(|d| d.imbalance_pct)
                .collect::<Vec<_>>(),
            [117, 125, 125]
        );
    }

    #[test]
    fn asym_level_is_where_everyone_sees_the_biggest() {
        // Node 0 has a little LLC and a big one; node 1 only mid CPUs: the mid
        // CPUs first see 1024 at the NUMA level, so that is the asymmetric level.
        let m = test_machine(
            Arch::Arm64,
            2,
            2,
            1,
            2,
            1,
            false,
            &[446, 1024, 640, 640],
            uniform(2, 20),
        );
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        assert!(t.asym_cpucapacity);
        for cpu in 0..8 {
            let a = t.sd_asym_cpucapacity[cpu].unwrap();
            assert_eq!(t.domains[a].name, "NUMA", "cpu{cpu}");
            assert!(chain(&t, cpu).iter().all(|d| d.has(SD_BALANCE_WAKE)));
            // sd_init cleared PREFER_SIBLING on the asym level's child as built,
            // NODE; NODE then degenerated into DIE, which keeps its own flag (the
            // kernel's outcome too).
            let child = &t.domains[t.domains[a].child.unwrap()];
            assert_eq!(child.name, "DIE");
            assert!(child.has(SD_PREFER_SIBLING));
        }
    }

    #[test]
    fn builds_1024_cpus() {
        let m = test_machine(Arch::X86, 4, 2, 1, 64, 2, true, &[1024], uniform(4, 21));
        assert_eq!(m.nr_cpus(), 1024);
        let t = SchedTopology::build(&m, &TopologyOpts::v5_6());
        for cpu in 0..1024 {
            assert_eq!(names(&t, cpu), ["SMT", "MC", "DIE", "NUMA"]);
            let g: Vec<usize> = chain(&t, cpu).iter().map(|d| d.groups.len()).collect();
            assert_eq!(g, [2, 64, 2, 4]);
            assert_eq!(t.sd_llc_size[cpu], 128);
        }
        assert_eq!(t.groups.len(), 1024 + 512 + 8 + 4);
        assert_eq!(t.domains.len(), 4 * 1024);
    }

    fn arb_machine() -> impl Strategy<Value = (Machine, bool)> {
        (
            (
                0..3usize,
                1..=4usize,
                1..=3usize,
                1..=2usize,
                1..=3usize,
                1..=4usize,
            ),
            any::<bool>(),
            prop::collection::vec(prop::sample::select(vec![1024u32, 446, 640, 871]), 1..4),
            any::<bool>(),
            (0..3usize, 11u32..=40, 11u32..=40),
            any::<bool>(),
        )
            .prop_map(
                |(
                    (arch, nodes, llcs, clusters, cores, smt),
                    interleave,
                    caps,
                    asym,
                    (pat, a, b),
                    cls,
                )| {
                    let arch = [Arch::X86, Arch::Arm64, Arch::Power][arch];
                    let caps = if asym { caps } else { vec![1024] };
                    let dist = match pat {
                        0 => uniform(nodes, a),
                        1 => pairs(nodes, a.min(b), a.max(b) + 1),
                        _ => ring(nodes),
                    };
                    (
                        test_machine(
                            arch, nodes, llcs, clusters, cores, smt, interleave, &caps, dist,
                        ),
                        cls,
                    )
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn structure_holds_on_random_machines((m, cls) in arb_machine()) {
            let opts = TopologyOpts { cluster_level: cls, ..TopologyOpts::v5_6() };
            let t = SchedTopology::build(&m, &opts);
            let n = m.nr_cpus();
            let all = *m.all_cpus();
            prop_assert_eq!(t.asym_cpucapacity, m.is_asymmetric());
            for cpu in 0..n {
                let ids: Vec<SdId> = t.domains_of(cpu).collect();
                if n == 1 {
                    prop_assert!(ids.is_empty());
                    continue;
                }
                prop_assert_eq!(t.domains[*ids.last().unwrap()].span, all, "cpu{} chain must end at all CPUs", cpu);
                let mut prev: Option<SdId> = None;
                for &d in &ids {
                    let sd = &t.domains[d];
                    prop_assert_eq!(sd.cpu, cpu);
                    prop_assert_eq!(sd.child, prev);
                    prop_assert!(sd.span.test(cpu));
                    prop_assert_eq!(sd.span_weight as usize, sd.span.weight());
                    prop_assert!(sd.span_weight > 1, "degenerate single-CPU domain kept");
                    if let Some(c) = prev {
                        let c = &t.domains[c];
                        prop_assert_eq!(c.parent, Some(d));
                        prop_assert!(c.level < sd.level);
                        prop_assert!(c.span.is_subset(&sd.span));
                    }
                    // Groups: local first; partition (non-NUMA) or cover (NUMA).
                    let g0 = &t.groups[sd.groups[0]];
                    prop_assert!(g0.span.test(cpu));
                    prop_assert!(sd.groups.len() > 1 || sd.has(SD_WAKE_AFFINE));
                    let mut union = CpuMask::new();
                    let mut total = 0;
                    for &g in &sd.groups {
                        let grp = &t.groups[g];
                        prop_assert_eq!(grp.group_weight as usize, grp.span.weight());
                        prop_assert!(grp.balance_mask.is_subset(&grp.span) && !grp.balance_mask.is_empty());
                        let sgc = &t.sgc[grp.sgc];
                        let caps: Vec<u64> = grp.span.iter().map(|c| m.cpus[c].capacity_orig as u64).collect();
                        prop_assert_eq!(sgc.capacity, caps.iter().sum::<u64>());
                        prop_assert_eq!(sgc.min_capacity, *caps.iter().min().unwrap());
                        prop_assert_eq!(sgc.max_capacity, *caps.iter().max().unwrap());
                        union = union.or(&grp.span);
                        total += grp.span.weight();
                    }
                    if sd.has(SD_NUMA) {
                        prop_assert!(sd.span.is_subset(&union));
                    } else {
                        prop_assert_eq!(union, sd.span);
                        prop_assert_eq!(total, sd.span.weight(), "groups overlap");
                    }
                    // Flags and parameters by level.
                    prop_assert!(sd.has(SD_LOAD_BALANCE | SD_BALANCE_NEWIDLE));
                    prop_assert_eq!(sd.has(SD_SHARE_CPUCAPACITY), sd.name == "SMT");
                    prop_assert_eq!(sd.has(SD_SHARE_PKG_RESOURCES), ["SMT", "CLS", "MC", "CACHE"].contains(&sd.name));
                    prop_assert_eq!(sd.has(SD_NUMA), sd.name == "NUMA");
                    prop_assert_eq!(sd.shared.is_some(), sd.has(SD_SHARE_PKG_RESOURCES));
                    let (pct, tries) = match sd.name {
                        "SMT" => (110, 0),
                        "CLS" | "MC" | "CACHE" => (117, 1),
                        "NUMA" => (125, 2),
                        _ => (125, 1),
                    };
                    prop_assert_eq!((sd.imbalance_pct, sd.cache_nice_tries), (pct, tries));
                    if sd.has(SD_NUMA) {
                        prop_assert!(sd.has(SD_SERIALIZE | SD_OVERLAP) && !sd.has(SD_PREFER_SIBLING));
                    }
                    prop_assert_eq!((sd.min_interval, sd.max_interval), (sd.span_weight as u64, 2 * sd.span_weight as u64));
                    if !m.is_asymmetric() {
                        prop_assert!(!sd.has(SD_BALANCE_WAKE | SD_ASYM_CPUCAPACITY));
                    }
                    prev = Some(d);
                }
                prop_assert_eq!(t.sd.get(cpu).copied().flatten(), ids.first().copied());
                // LLC shortcuts match the machine's LLC.
                let llc = m.llc_mask(cpu);
                if llc.weight() > 1 {
                    let d = t.sd_llc[cpu].expect("sd_llc");
                    prop_assert_eq!(t.domains[d].span, *llc);
                    prop_assert_eq!(t.sd_llc_size[cpu] as usize, llc.weight());
                    prop_assert_eq!(t.sd_llc_id[cpu], llc.first().unwrap());
                    prop_assert_eq!(t.sd_llc_shared[cpu], t.domains[d].shared);
                }
            }
            for a in 0..n {
                for b in 0..n {
                    prop_assert_eq!(t.cpus_share_cache(a, b), m.cpus[a].llc == m.cpus[b].llc);
                }
            }
        }
    }
}
