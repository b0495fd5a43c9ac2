//! Import a machine from a sysfs snapshot (or the running host).
//!
//! Linux publishes its view of the machine under `/sys/devices/system`: per CPU the
//! topology masks the scheduler builds its domains from (`topology/core_cpus_list`
//! = SMT siblings, `cluster_cpus_list`, `package_cpus_list`), the caches (the highest
//! level unified cache's `shared_cpu_list` is the span of `sd_llc`), `cpu_capacity`
//! (arm64 `arch_scale_cpu_capacity`), the cpuidle states and the cpufreq policies;
//! per NUMA node its `cpulist` and SLIT `distance` row. This module reads exactly
//! those files below a root laid out like `/` and builds a [`Machine`].
//!
//! What is read, and the default when a file is missing:
//!
//! | file | use | when missing |
//! |---|---|---|
//! | `cpu/online`, else `cpu/possible` | CPUs imported | **error** |
//! | `cpuN/topology/core_cpus_list` / `thread_siblings_list` | SMT core | CPU alone on its core |
//! | `cpuN/topology/package_cpus_list` / `core_siblings_list` / `physical_package_id` | package | all CPUs of its node |
//! | `cpuN/cache/indexK/{level,type,shared_cpu_list}` | LLC = highest-level `Unified` (else `Data`) cache | LLC = package |
//! | `cpuN/topology/cluster_cpus_list` | cluster (clipped to the LLC) | cluster = LLC |
//! | `cpuN/cpu_capacity` | `capacity_orig` | 1024 |
//! | `cpuN/cpuidle/stateK/{name,latency,residency,power}` | idle table (µs → ns; power ≥ 10⁶ mW, i.e. the kernel's "-1", → 0) | no idle states |
//! | `cpu/cpufreq/policyM/{related_cpus,scaling_available_frequencies,cpuinfo_max_freq,cpuinfo_transition_latency}` | frequency domains and OPPs (power 0: sysfs has no Energy Model) | one domain per package, one OPP of 1 GHz |
//! | `node/nodeK/{cpulist,distance}` | NUMA nodes and distances | one node |
//!
//! **Offline CPUs** are skipped and the online CPUs renumbered densely in ascending
//! order (the description records the mapping when it is not the identity). Masks
//! are intersected with the online CPUs. Nodes without online CPUs are dropped, and
//! ids of cores, clusters, LLCs, packages and nodes are renumbered densely in order
//! of their first CPU.
//!
//! **Arch**: from `proc/cpuinfo` when the snapshot has it (`vendor_id` → x86,
//! `CPU implementer` → arm64, a `cpu : POWERn` line → POWER); else arm64 when any
//! `cpu_capacity` file exists (recent x86 kernels publish `cpu_capacity` too, hence
//! cpuinfo first); else the fallback given to [`import_sysfs_with_arch`]
//! ([`import_sysfs`] uses the host's `std::env::consts::ARCH`). **Core kinds**: one per (capacity, SMT width), with the
//! default SMT throughput curve of `super::presets::default_smt_throughput`.
//! **Costs**: the preset tables by arch (x86 default, arm64 big-core table, POWER9).
//! `node_reclaim_distance` is 32 when `proc/cpuinfo` names an AMD family ≥ 0x17 CPU
//! (as arch/x86 sets it), else 30.
//!
//! Gaps: the Energy Model (debugfs) and per-domain ground truth are not read; SMT
//! throughput and costs are not measurable from sysfs and come from defaults.

use std::path::{Path, PathBuf};

use super::presets::{cost_arm_big, cost_power9, default_smt_throughput};
use super::{
    Arch, CoreKind, CostTable, Cpu, CpuMask, FreqDomain, IdleKind, IdleState, Machine,
    MachineParts, Opp, MAX_CPUS,
};
use crate::error::InputError;

/// Import the running host (`/`), named "host".
pub fn import_host() -> Result<Machine, InputError> {
    let mut m = import_sysfs(Path::new("/"))?;
    m.name = "host".into();
    Ok(m)
}

/// Import a snapshot rooted at `root` (a directory laid out like `/`), with the host's
/// architecture as the fallback when the snapshot does not reveal arm64.
pub fn import_sysfs(root: &Path) -> Result<Machine, InputError> {
    let fallback = match std::env::consts::ARCH {
        "aarch64" | "arm" => Arch::Arm64,
        "powerpc64" | "powerpc" => Arch::Power,
        _ => Arch::X86,
    };
    import_sysfs_with_arch(root, fallback)
}

struct Fs<'a> {
    root: &'a Path,
}

impl Fs<'_> {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    /// Contents of an optional file, trimmed; `None` when it does not exist.
    fn read(&self, rel: &str) -> Result<Option<String>, InputError> {
        Ok(crate::input::read_text_opt(&self.path(rel))?.map(|s| s.trim().to_string()))
    }
    fn num<T: std::str::FromStr>(&self, rel: &str) -> Result<Option<T>, InputError> {
        match self.read(rel)? {
            None => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                InputError::in_file(
                    self.path(rel),
                    Some(1),
                    format!("expected a number, found `{s}`"),
                )
            }),
        }
    }
    /// A time in µs (cpuidle's `latency`, `residency`), as ns within the engine's
    /// [`MAX_TIME_NS`](crate::engine::MAX_TIME_NS).
    fn us_as_ns(&self, rel: &str) -> Result<Option<u64>, InputError> {
        match self.num::<u64>(rel)? {
            None => Ok(None),
            Some(us) => crate::engine::checked_ns(us, crate::engine::NSEC_PER_USEC)
                .map(Some)
                .ok_or_else(|| {
                    InputError::in_file(
                        self.path(rel),
                        Some(1),
                        format!("{us} µs {}", crate::engine::time_limit_text()),
                    )
                }),
        }
    }
    fn cpulist(&self, rel: &str) -> Result<Option<CpuMask>, InputError> {
        match self.read(rel)? {
            None => Ok(None),
            Some(s) => parse_cpus(&s)
                .map(Some)
                .map_err(|e| InputError::in_file(self.path(rel), Some(1), e)),
        }
    }
    /// Numeric suffixes of `prefix<N>` entries of a directory, ascending.
    fn indexed(&self, dir: &str, prefix: &str) -> Vec<usize> {
        let mut v: Vec<usize> = std::fs::read_dir(self.path(dir))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    }
}

/// A cpulist (`0-3,8`) or a space-separated CPU list (`0 1 2`, cpufreq's
/// `related_cpus`).
fn parse_cpus(s: &str) -> Result<CpuMask, String> {
    if s.contains(' ') && !s.contains(',') && !s.contains('-') {
        let mut m = CpuMask::new();
        for w in s.split_whitespace() {
            m = m.or(&CpuMask::parse_cpulist(w)?);
        }
        Ok(m)
    } else {
        CpuMask::parse_cpulist(s)
    }
}

/// Dense ids from per-CPU masks (or keys): CPUs with equal keys share an id, ids in
/// order of first CPU.
fn dense<K: PartialEq + Clone>(keys: &[K]) -> Vec<usize> {
    let mut seen: Vec<K> = Vec::new();
    keys.iter()
        .map(|k| match seen.iter().position(|s| s == k) {
            Some(i) => i,
            None => {
                seen.push(k.clone());
                seen.len() - 1
            }
        })
        .collect()
}

const CPU_DIR: &str = "sys/devices/system/cpu";
const NODE_DIR: &str = "sys/devices/system/node";

/// The online CPUs and their dense renumbering.
struct Online {
    mask: CpuMask,
    /// Dense id -> sysfs cpu number.
    sys: Vec<usize>,
    /// Sysfs cpu number -> dense id (`usize::MAX` when offline).
    dense_of: Vec<usize>,
}

impl Online {
    fn n(&self) -> usize {
        self.sys.len()
    }
    /// Map a sysfs mask onto dense ids, dropping offline CPUs.
    fn remap(&self, m: &CpuMask) -> CpuMask {
        m.and(&self.mask).iter().map(|c| self.dense_of[c]).collect()
    }
}

/// The snapshot's root check and its `cpu/online` (else `cpu/possible`) list.
fn read_online(fs: &Fs, root: &Path) -> Result<Online, InputError> {
    let cpu_dir = CPU_DIR;
    if !fs.path(cpu_dir).is_dir() {
        let what = if root.is_dir() {
            format!("not a sysfs snapshot: no {cpu_dir} directory in it")
        } else if root.exists() {
            "not a directory (a sysfs snapshot is a directory laid out like /)".to_string()
        } else {
            "no such directory".to_string()
        };
        return Err(InputError::in_file(root, None, what));
    }
    let online = match fs.cpulist(&format!("{cpu_dir}/online"))? {
        Some(m) => m,
        None => fs.cpulist(&format!("{cpu_dir}/possible"))?.ok_or_else(|| {
            InputError::in_file(
                fs.path(&format!("{cpu_dir}/online")),
                None,
                "missing (and no `possible` either)",
            )
        })?,
    };
    let sys: Vec<usize> = online.iter().collect(); // dense id -> sysfs cpu number
    if sys.is_empty() {
        return Err(InputError::in_file(
            fs.path(&format!("{cpu_dir}/online")),
            None,
            "no online CPU",
        ));
    }
    let mut dense_of = vec![usize::MAX; MAX_CPUS];
    for (i, &c) in sys.iter().enumerate() {
        dense_of[c] = i;
    }
    Ok(Online {
        mask: online,
        sys,
        dense_of,
    })
}

/// The NUMA nodes: each CPU's dense node, and the distance table between them.
struct Nodes {
    node: Vec<usize>,
    numa_distance: Vec<Vec<u32>>,
}

/// `node/nodeK/cpulist` of every node (one node when there are none), then the
/// distances.
fn read_nodes(fs: &Fs, on: &Online) -> Result<Nodes, InputError> {
    let n = on.n();
    let node_dir = NODE_DIR;
    let node_ids = fs.indexed(node_dir, "node");
    let mut node_sys = vec![usize::MAX; n]; // sysfs node id of each CPU
    let mut node_masks = Vec::new();
    for &k in &node_ids {
        if let Some(m) = fs.cpulist(&format!("{node_dir}/node{k}/cpulist"))? {
            for c in on.remap(&m).iter() {
                node_sys[c] = k;
            }
            node_masks.push((k, on.remap(&m)));
        }
    }
    let have_nodes = !node_masks.is_empty();
    if have_nodes {
        if let Some(c) = node_sys.iter().position(|&k| k == usize::MAX) {
            return Err(InputError::in_file(
                fs.path(node_dir),
                None,
                format!("cpu{} is in no node's cpulist", on.sys[c]),
            ));
        }
    } else {
        node_sys = vec![0; n];
    }
    let node = dense(&node_sys);
    let nr_nodes = node.iter().max().map_or(1, |m| m + 1);
    // Dense node -> sysfs node id.
    let mut node_sys_of = vec![0; nr_nodes];
    for c in 0..n {
        node_sys_of[node[c]] = node_sys[c];
    }
    let numa_distance = if !have_nodes {
        vec![vec![10]]
    } else {
        read_distances(fs, &node_ids, &node_sys_of)?
    };
    Ok(Nodes {
        node,
        numa_distance,
    })
}

/// The SLIT rows (`node/nodeK/distance`) of the nodes with CPUs, `node_sys_of`
/// mapping dense node -> sysfs node id.
fn read_distances(
    fs: &Fs,
    node_ids: &[usize],
    node_sys_of: &[usize],
) -> Result<Vec<Vec<u32>>, InputError> {
    let node_dir = NODE_DIR;
    // A node's `distance` row lists every online node, ascending by node id.
    let online_nodes: Vec<usize> = match fs.cpulist(&format!("{node_dir}/online"))? {
        Some(m) => m.iter().collect(),
        None => node_ids.to_vec(),
    };
    let mut rows = Vec::new();
    for &k in node_sys_of {
        let rel = format!("{node_dir}/node{k}/distance");
        let text = fs
            .read(&rel)?
            .ok_or_else(|| InputError::in_file(fs.path(&rel), None, "missing"))?;
        let vals: Vec<u32> = text
            .split_whitespace()
            .map(|w| w.parse())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                InputError::in_file(fs.path(&rel), Some(1), format!("bad distance row `{text}`"))
            })?;
        if vals.len() != online_nodes.len() {
            return Err(InputError::in_file(
                fs.path(&rel),
                Some(1),
                format!(
                    "{} distances for {} online nodes",
                    vals.len(),
                    online_nodes.len()
                ),
            ));
        }
        let mut row = Vec::with_capacity(node_sys_of.len());
        for j in node_sys_of {
            let Some(pos) = online_nodes.iter().position(|o| o == j) else {
                return Err(InputError::in_file(
                    fs.path(&format!("{node_dir}/online")),
                    None,
                    format!("node{j} has CPUs but is not listed online"),
                ));
            };
            row.push(vals[pos]);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// What is read per CPU, by dense id.
#[derive(Default)]
struct PerCpu {
    smt: Vec<CpuMask>,
    package: Vec<CpuMask>,
    llc: Vec<CpuMask>,
    cluster: Vec<CpuMask>,
    capacity: Vec<u32>,
    idle_of: Vec<Vec<IdleState>>,
    /// Some CPU has a `cpu_capacity` file.
    any_capacity: bool,
}

/// Every CPU's topology masks, caches, capacity and idle states (`cpuN/...`).
fn read_cpus(fs: &Fs, on: &Online, node: &[usize]) -> Result<PerCpu, InputError> {
    let cpu_dir = CPU_DIR;
    let n = on.n();
    let mut pkg_id = Vec::with_capacity(n);
    for &c in &on.sys {
        pkg_id.push(fs.num::<i64>(&format!("{cpu_dir}/cpu{c}/topology/physical_package_id"))?);
    }
    let mut p = PerCpu::default();
    for (i, &c) in on.sys.iter().enumerate() {
        let d = format!("{cpu_dir}/cpu{c}");
        let own = CpuMask::of(i);
        let core = match fs.cpulist(&format!("{d}/topology/core_cpus_list"))? {
            Some(m) => Some(m),
            None => fs.cpulist(&format!("{d}/topology/thread_siblings_list"))?,
        };
        let core = core.map_or(own, |m| on.remap(&m).or(&own));
        let node_mask: CpuMask = (0..n).filter(|&j| node[j] == node[i]).collect();
        let pkg = match fs.cpulist(&format!("{d}/topology/package_cpus_list"))? {
            Some(m) => Some(on.remap(&m)),
            None => match fs.cpulist(&format!("{d}/topology/core_siblings_list"))? {
                Some(m) => Some(on.remap(&m)),
                None => pkg_id[i].map(|id| (0..n).filter(|&j| pkg_id[j] == Some(id)).collect()),
            },
        };
        let pkg = pkg.unwrap_or(node_mask).or(&core);
        let best = read_llc(fs, on, &d)?;
        // The LLC nests between core and package (a cache wider than the package, as
        // some firmware reports, is clipped to it).
        let l = best.map_or(pkg, |m| m.and(&pkg.or(&node_mask)).or(&core));
        let cl = match fs.cpulist(&format!("{d}/topology/cluster_cpus_list"))? {
            Some(m) => on.remap(&m).and(&l).or(&core),
            None => l,
        };
        let cap = match fs.num::<u32>(&format!("{d}/cpu_capacity"))? {
            Some(v) => {
                p.any_capacity = true;
                v
            }
            None => 1024,
        };
        let states = read_idle_states(fs, &d)?;
        p.smt.push(core);
        p.package.push(pkg);
        p.llc.push(l);
        p.cluster.push(cl);
        p.capacity.push(cap);
        p.idle_of.push(states);
    }
    Ok(p)
}

/// The span of the CPU's LLC from `cpuN/cache/indexK`: the highest-level unified
/// cache (data cache if no unified one); `None` when no cache is described.
fn read_llc(fs: &Fs, on: &Online, d: &str) -> Result<Option<CpuMask>, InputError> {
    let mut best: Option<(u32, bool, CpuMask)> = None;
    for k in fs.indexed(&format!("{d}/cache"), "index") {
        let base = format!("{d}/cache/index{k}");
        let (Some(level), Some(ty)) = (
            fs.num::<u32>(&format!("{base}/level"))?,
            fs.read(&format!("{base}/type"))?,
        ) else {
            continue;
        };
        let unified = ty == "Unified";
        if !(unified || ty == "Data") {
            continue;
        }
        let Some(shared) = fs.cpulist(&format!("{base}/shared_cpu_list"))? else {
            continue;
        };
        let better = match &best {
            None => true,
            Some((l, u, _)) => (level, unified) > (*l, *u),
        };
        if better {
            best = Some((level, unified, on.remap(&shared)));
        }
    }
    Ok(best.map(|(_, _, m)| m))
}

/// The CPU's cpuidle states (`cpuN/cpuidle/stateK`).
fn read_idle_states(fs: &Fs, d: &str) -> Result<Vec<IdleState>, InputError> {
    let mut states = Vec::new();
    for k in fs.indexed(&format!("{d}/cpuidle"), "state") {
        let base = format!("{d}/cpuidle/state{k}");
        let name = fs
            .read(&format!("{base}/name"))?
            .unwrap_or_else(|| format!("state{k}"));
        let lat = fs.us_as_ns(&format!("{base}/latency"))?.unwrap_or(0);
        let res = fs.us_as_ns(&format!("{base}/residency"))?.unwrap_or(0);
        let power: u64 = fs.num(&format!("{base}/power"))?.unwrap_or(0);
        let disable: u64 = fs.num(&format!("{base}/disable"))?.unwrap_or(0);
        // The flags are not in sysfs: the cpuidle core's polling state is known by
        // its description, powernv's snooze loop by its name.
        let desc = fs.read(&format!("{base}/desc"))?.unwrap_or_default();
        let kind = if desc == "CPUIDLE CORE POLL IDLE" {
            IdleKind::Poll
        } else if name == "snooze" {
            IdleKind::Snooze
        } else {
            IdleKind::Hardware
        };
        states.push(IdleState {
            kind,
            disable: disable != 0,
            name,
            exit_latency_ns: lat,
            target_residency_ns: res,
            // sysfs does not say which states are cluster- or core-level (only the
            // firmware tables do): every imported state is a CPU state.
            cluster: false,
            core: false,
            power_mw: if power >= 1_000_000 {
                0.0
            } else {
                power as f64
            },
        });
    }
    Ok(states)
}

/// The architecture from `proc/cpuinfo`, else arm64 when any `cpu_capacity` exists,
/// else the fallback.
fn detect_arch(cpuinfo: &str, any_capacity: bool, arch_fallback: Arch) -> Arch {
    if cpuinfo.contains("vendor_id") {
        Arch::X86
    } else if cpuinfo.contains("CPU implementer") {
        Arch::Arm64
    } else if cpuinfo
        .lines()
        .any(|l| l.starts_with("cpu") && l.contains("POWER"))
    {
        Arch::Power
    } else if any_capacity {
        Arch::Arm64
    } else {
        arch_fallback
    }
}

/// Idle tables, shared by CPUs with identical states: each CPU's table index, and
/// the tables.
fn idle_tables(idle_of: &[Vec<IdleState>]) -> (Vec<usize>, Vec<Vec<IdleState>>) {
    let idle_idx = dense(idle_of);
    let nr_tables = idle_idx.iter().max().map_or(0, |m| m + 1);
    let mut idle_tables = vec![Vec::new(); nr_tables];
    for (i, t) in idle_idx.iter().enumerate() {
        idle_tables[*t] = idle_of[i].clone();
    }
    (idle_idx, idle_tables)
}

/// Core kinds by (capacity, SMT width): each CPU's kind, and the kinds.
fn core_kinds(capacity: &[u32], smt: &[CpuMask]) -> (Vec<usize>, Vec<CoreKind>) {
    let kind_key: Vec<(u32, usize)> = capacity
        .iter()
        .zip(smt)
        .map(|(&c, s)| (c, s.weight()))
        .collect();
    let kind = dense(&kind_key);
    let nr_kinds = kind.iter().max().map_or(0, |m| m + 1);
    let mut core_kinds = vec![
        CoreKind {
            name: String::new(),
            smt_throughput: vec![],
            work_per_clock: Default::default(),
        };
        nr_kinds
    ];
    for (i, &k) in kind.iter().enumerate() {
        let (cap, w) = kind_key[i];
        core_kinds[k] = CoreKind {
            name: format!("cap{cap}-smt{w}"),
            smt_throughput: default_smt_throughput(w),
            work_per_clock: Default::default(),
        };
    }
    (kind, core_kinds)
}

/// Frequency domains from the cpufreq policies (`cpu/cpufreq/policyM`), then one per
/// package for the CPUs without a policy: each CPU's domain, and the domains.
fn read_freq_domains(
    fs: &Fs,
    on: &Online,
    package_id: &[usize],
) -> Result<(Vec<usize>, Vec<FreqDomain>), InputError> {
    let n = on.n();
    let mut fd_of = vec![usize::MAX; n];
    let mut freq_domains = Vec::new();
    let fdir = format!("{CPU_DIR}/cpufreq");
    for m in fs.indexed(&fdir, "policy") {
        let base = format!("{fdir}/policy{m}");
        let Some(related) = fs.cpulist(&format!("{base}/related_cpus"))? else {
            continue;
        };
        let cpus = on.remap(&related).andnot(
            &fd_of
                .iter()
                .enumerate()
                .filter(|(_, &d)| d != usize::MAX)
                .map(|(i, _)| i)
                .collect(),
        );
        if cpus.is_empty() {
            continue;
        }
        let freqs = read_policy_freqs(fs, &base)?;
        // CPUFREQ_ETERNAL (-1 printed as u32) means unknown.
        let lat = fs
            .num::<u64>(&format!("{base}/cpuinfo_transition_latency"))?
            .unwrap_or(0);
        let d = freq_domains.len();
        for c in cpus.iter() {
            fd_of[c] = d;
        }
        freq_domains.push(FreqDomain {
            cluster_idle_mw: Vec::new(),
            cpus,
            opps: freqs
                .into_iter()
                .map(|f| Opp {
                    cluster_power_mw: 0,
                    freq_khz: f,
                    power_mw: 0,
                })
                .collect(),
            transition_latency_ns: if lat >= u32::MAX as u64 { 0 } else { lat },
        });
    }
    // CPUs without a policy: one domain per package, a single nominal OPP.
    for c in 0..n {
        if fd_of[c] != usize::MAX {
            continue;
        }
        let d = freq_domains.len();
        let cpus: CpuMask = (0..n)
            .filter(|&j| fd_of[j] == usize::MAX && package_id[j] == package_id[c])
            .collect();
        for j in cpus.iter() {
            fd_of[j] = d;
        }
        freq_domains.push(FreqDomain {
            cluster_idle_mw: Vec::new(),
            cpus,
            opps: vec![Opp {
                cluster_power_mw: 0,
                freq_khz: 1_000_000,
                power_mw: 0,
            }],
            transition_latency_ns: 0,
        });
    }
    Ok((fd_of, freq_domains))
}

/// A policy's frequencies, ascending and distinct: `scaling_available_frequencies`,
/// else `cpuinfo_max_freq`, else 1 GHz.
fn read_policy_freqs(fs: &Fs, base: &str) -> Result<Vec<u32>, InputError> {
    let mut freqs: Vec<u32> = Vec::new();
    if let Some(s) = fs.read(&format!("{base}/scaling_available_frequencies"))? {
        for w in s.split_whitespace() {
            freqs.push(w.parse().map_err(|_| {
                InputError::in_file(
                    fs.path(&format!("{base}/scaling_available_frequencies")),
                    Some(1),
                    format!("bad frequency `{w}`"),
                )
            })?);
        }
    }
    if freqs.is_empty() {
        if let Some(f) = fs.num::<u32>(&format!("{base}/cpuinfo_max_freq"))? {
            freqs.push(f);
        }
    }
    freqs.retain(|&f| f > 0);
    freqs.sort_unstable();
    freqs.dedup();
    if freqs.is_empty() {
        freqs.push(1_000_000);
    }
    Ok(freqs)
}

/// `proc/cpuinfo` names an AMD family ≥ 0x17 CPU.
fn is_amd_zen(cpuinfo: &str) -> bool {
    cpuinfo.contains("AuthenticAMD")
        && cpuinfo.lines().any(|l| {
            l.starts_with("cpu family")
                && l.split(':')
                    .nth(1)
                    .and_then(|v| v.trim().parse::<u32>().ok())
                    .is_some_and(|f| f >= 0x17)
        })
}

/// Like [`import_sysfs`], with an explicit architecture fallback.
pub fn import_sysfs_with_arch(root: &Path, arch_fallback: Arch) -> Result<Machine, InputError> {
    let fs = Fs { root };
    let on = read_online(&fs, root)?;
    let n = on.n();
    let Nodes {
        node,
        numa_distance,
    } = read_nodes(&fs, &on)?;
    let p = read_cpus(&fs, &on, &node)?;
    let cpuinfo = fs.read("proc/cpuinfo")?.unwrap_or_default();
    let arch = detect_arch(&cpuinfo, p.any_capacity, arch_fallback);
    let (idle_idx, idle_tables) = idle_tables(&p.idle_of);
    let (kind, core_kinds) = core_kinds(&p.capacity, &p.smt);
    let core_id = dense(&p.smt);
    let package_id = dense(&p.package);
    let (fd_of, freq_domains) = read_freq_domains(&fs, &on, &package_id)?;

    let llc_id = dense(&p.llc);
    let cluster_id = dense(&p.cluster);
    let cpus: Vec<Cpu> = (0..n)
        .map(|i| Cpu {
            core: core_id[i],
            cluster: cluster_id[i],
            llc: llc_id[i],
            package: package_id[i],
            node: node[i],
            capacity_orig: p.capacity[i],
            kind: kind[i],
            idle_table: idle_idx[i],
            freq_domain: fd_of[i],
        })
        .collect();

    let cost = match arch {
        Arch::X86 => CostTable::default(),
        Arch::Arm64 => cost_arm_big(),
        Arch::Power => cost_power9(),
    };
    let renumbered = on.sys.iter().enumerate().any(|(i, &c)| i != c);
    let mut description = format!("imported from sysfs under {}", root.display());
    if renumbered {
        description.push_str(&format!("; online CPUs {} renumbered 0-{}", on.mask, n - 1));
    }
    Machine::new(MachineParts {
        name: root
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or("host")
            .to_string(),
        description,
        arch,
        cpus,
        numa_distance,
        node_reclaim_distance: if is_amd_zen(&cpuinfo) { 32 } else { 30 },
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds,
        idle_tables,
        freq_domains,
        cost,
    })
    .map_err(|e| {
        InputError::in_file(
            root.join("sys/devices/system"),
            None,
            format!("inconsistent topology: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A temporary directory tree, removed on drop.
    struct Tree(PathBuf);
    impl Tree {
        fn new(tag: &str) -> Tree {
            let p =
                std::env::temp_dir().join(format!("schedlab-sysfs-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Tree(p)
        }
        fn put(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, format!("{text}\n")).unwrap();
        }
        fn online(&self, cpus: &str) {
            self.put("sys/devices/system/cpu/online", cpus);
        }
        fn cpu(&self, c: usize, rel: &str, text: &str) {
            self.put(&format!("sys/devices/system/cpu/cpu{c}/{rel}"), text);
        }
    }
    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn smt2_two_core_x86_box() {
        let t = Tree::new("smt2");
        t.online("0-3");
        // x86 numbering: core0 = cpus 0,2; core1 = cpus 1,3.
        for c in 0..4 {
            t.cpu(
                c,
                "topology/thread_siblings_list",
                if c % 2 == 0 { "0,2" } else { "1,3" },
            );
            t.cpu(c, "topology/core_siblings_list", "0-3");
            t.cpu(c, "cache/index0/level", "1");
            t.cpu(c, "cache/index0/type", "Data");
            t.cpu(
                c,
                "cache/index0/shared_cpu_list",
                if c % 2 == 0 { "0,2" } else { "1,3" },
            );
            t.cpu(c, "cache/index3/level", "3");
            t.cpu(c, "cache/index3/type", "Unified");
            t.cpu(c, "cache/index3/shared_cpu_list", "0-3");
            t.cpu(c, "cpuidle/state0/name", "POLL");
            t.cpu(c, "cpuidle/state0/desc", "CPUIDLE CORE POLL IDLE");
            t.cpu(c, "cpuidle/state0/latency", "0");
            t.cpu(c, "cpuidle/state0/residency", "0");
            t.cpu(c, "cpuidle/state0/power", "4294967295");
            t.cpu(c, "cpuidle/state1/name", "C1");
            t.cpu(c, "cpuidle/state1/latency", "2");
            t.cpu(c, "cpuidle/state1/residency", "2");
            t.cpu(c, "cpuidle/state1/disable", "1");
        }
        let m = import_sysfs_with_arch(&t.0, Arch::X86).unwrap();
        assert_eq!(m.nr_cpus(), 4);
        assert_eq!(m.arch, Arch::X86);
        assert_eq!(m.smt_mask(0).to_string(), "0,2");
        assert_eq!(m.smt_mask(3).to_string(), "1,3");
        assert_eq!(m.llc_mask(1).to_string(), "0-3");
        assert_eq!(m.cluster_mask(1).to_string(), "0-3");
        assert_eq!(m.package_mask(2).to_string(), "0-3");
        assert_eq!(m.nr_nodes(), 1);
        assert!(m.has_smt());
        assert_eq!(m.core_kinds.len(), 1);
        assert_eq!(m.smt_throughput(0, 2), 640);
        assert_eq!(m.idle_tables.len(), 1);
        assert_eq!(m.idle_states(3)[1].exit_latency_ns, 2_000);
        assert_eq!(m.idle_states(3)[0].power_mw, 0.0);
        // The polling state is known by its description; `disable` is carried.
        assert_eq!(m.idle_states(3)[0].kind, crate::machine::IdleKind::Poll);
        assert_eq!(m.idle_states(3)[1].kind, crate::machine::IdleKind::Hardware);
        assert!(m.idle_states(3)[1].disable && !m.idle_states(3)[0].disable);
        // No cpufreq: one domain per package, one OPP.
        assert_eq!(m.freq_domains.len(), 1);
        assert_eq!(m.freq_domains[0].cpus.to_string(), "0-3");
        assert_eq!(m.cpus[2].capacity_orig, 1024);
        assert_eq!(m.cost, CostTable::default());
    }

    #[test]
    fn big_little_with_capacity_idle_and_cpufreq() {
        let t = Tree::new("bl");
        t.online("0-5");
        let big = |c: usize| c == 1 || c == 2; // Juno-like
        for c in 0..6 {
            t.cpu(c, "topology/core_cpus_list", &c.to_string());
            t.cpu(c, "topology/package_cpus_list", "0-5");
            let cl = if big(c) { "1-2" } else { "0,3-5" };
            t.cpu(c, "topology/cluster_cpus_list", cl);
            t.cpu(c, "cache/index2/level", "2");
            t.cpu(c, "cache/index2/type", "Unified");
            t.cpu(c, "cache/index2/shared_cpu_list", cl);
            t.cpu(c, "cpu_capacity", if big(c) { "1024" } else { "446" });
            t.cpu(c, "cpuidle/state0/name", "WFI");
            t.cpu(c, "cpuidle/state0/latency", "1");
            t.cpu(c, "cpuidle/state0/residency", "1");
            t.cpu(c, "cpuidle/state1/name", "cpu-sleep-0");
            t.cpu(c, "cpuidle/state1/latency", "1500");
            t.cpu(c, "cpuidle/state1/residency", "2000");
            t.cpu(c, "cpuidle/state1/power", if big(c) { "15" } else { "6" });
        }
        let p = "sys/devices/system/cpu/cpufreq";
        t.put(&format!("{p}/policy0/related_cpus"), "0 3 4 5");
        t.put(
            &format!("{p}/policy0/scaling_available_frequencies"),
            "850000 450000 575000 700000 775000",
        );
        t.put(
            &format!("{p}/policy0/cpuinfo_transition_latency"),
            "4294967295",
        );
        t.put(&format!("{p}/policy1/related_cpus"), "1 2");
        t.put(&format!("{p}/policy1/cpuinfo_max_freq"), "1100000");
        t.put(&format!("{p}/policy1/cpuinfo_transition_latency"), "500000");
        let m = import_sysfs_with_arch(&t.0, Arch::X86).unwrap();
        assert_eq!(m.arch, Arch::Arm64, "cpu_capacity files mean arm64");
        let caps: Vec<u32> = m.cpus.iter().map(|c| c.capacity_orig).collect();
        assert_eq!(caps, vec![446, 1024, 1024, 446, 446, 446]);
        assert!(m.is_asymmetric());
        assert_eq!(m.llc_mask(4).to_string(), "0,3-5");
        assert_eq!(m.llc_mask(1).to_string(), "1-2");
        assert_eq!(m.cluster_mask(2).to_string(), "1-2");
        assert_eq!(m.package_mask(0).to_string(), "0-5");
        assert!(!m.has_smt());
        assert_eq!(m.core_kinds.len(), 2);
        assert_eq!(m.idle_tables.len(), 2, "different idle power -> two tables");
        assert_eq!(m.idle_states(1)[1].exit_latency_ns, 1_500_000);
        assert_eq!(m.idle_states(1)[1].power_mw, 15.0);
        assert_eq!(m.idle_states(0)[1].target_residency_ns, 2_000_000);
        let little = &m.freq_domains[m.cpus[0].freq_domain];
        assert_eq!(little.cpus.to_string(), "0,3-5");
        let f: Vec<u32> = little.opps.iter().map(|o| o.freq_khz).collect();
        assert_eq!(f, vec![450_000, 575_000, 700_000, 775_000, 850_000]);
        assert_eq!(little.transition_latency_ns, 0);
        let bigd = &m.freq_domains[m.cpus[2].freq_domain];
        assert_eq!(bigd.cpus.to_string(), "1-2");
        assert_eq!(bigd.max_freq_khz(), 1_100_000);
        assert_eq!(bigd.transition_latency_ns, 500_000);
        assert_eq!(m.cost, cost_arm_big());
    }

    #[test]
    fn two_node_numa_box_with_offline_cpu() {
        let t = Tree::new("numa");
        // 8 possible CPUs, cpu5 offline; node0 = 0-3, node1 = 4-7; a memory-only node2.
        t.online("0-4,6-7");
        for c in [0, 1, 2, 3, 4, 6, 7] {
            let pkg = if c < 4 { "0-3" } else { "4-7" };
            t.cpu(c, "topology/core_cpus_list", &c.to_string());
            t.cpu(c, "topology/package_cpus_list", pkg);
            t.cpu(c, "cache/index3/level", "3");
            t.cpu(c, "cache/index3/type", "Unified");
            t.cpu(c, "cache/index3/shared_cpu_list", pkg);
        }
        let nd = "sys/devices/system/node";
        t.put(&format!("{nd}/online"), "0-2");
        t.put(&format!("{nd}/node0/cpulist"), "0-3");
        t.put(&format!("{nd}/node0/distance"), "10 21 30");
        t.put(&format!("{nd}/node1/cpulist"), "4-7");
        t.put(&format!("{nd}/node1/distance"), "21 10 30");
        t.put(&format!("{nd}/node2/cpulist"), "");
        t.put(&format!("{nd}/node2/distance"), "30 30 10");
        let m = import_sysfs_with_arch(&t.0, Arch::X86).unwrap();
        assert_eq!(m.nr_cpus(), 7);
        assert_eq!(m.nr_nodes(), 2);
        assert_eq!(m.numa_distance, vec![vec![10, 21], vec![21, 10]]);
        // Dense renumbering: sysfs cpu6 -> 5, cpu7 -> 6.
        assert_eq!(m.node_mask(5).to_string(), "4-6");
        assert_eq!(m.node_mask(0).to_string(), "0-3");
        assert_eq!(m.llc_mask(4).to_string(), "4-6");
        assert_eq!(m.package_mask(6).to_string(), "4-6");
        assert!(m.description.contains("renumbered"), "{}", m.description);
        assert_eq!(
            m.freq_domains.len(),
            2,
            "no cpufreq: one domain per package"
        );
    }

    #[test]
    fn package_from_physical_package_id_and_no_cache_info() {
        let t = Tree::new("pkgid");
        t.online("0-3");
        for c in 0..4 {
            t.cpu(
                c,
                "topology/physical_package_id",
                if c % 2 == 0 { "0" } else { "1" },
            );
        }
        let m = import_sysfs_with_arch(&t.0, Arch::X86).unwrap();
        assert_eq!(m.package_mask(0).to_string(), "0,2");
        assert_eq!(m.package_mask(3).to_string(), "1,3");
        assert_eq!(
            m.llc_mask(1).to_string(),
            "1,3",
            "no cache info: LLC = package"
        );
        assert_eq!(
            m.smt_mask(1).to_string(),
            "1",
            "no sibling list: one CPU per core"
        );
        assert_eq!(m.freq_domains.len(), 2, "one default domain per package");
        assert!(m.idle_states(0).is_empty());
    }

    #[test]
    fn missing_and_bad_files_are_input_errors() {
        let t = Tree::new("bad");
        let e = import_sysfs_with_arch(&t.0.join("nope"), Arch::X86).unwrap_err();
        assert!(e.msg.contains("no such directory"), "{e}");
        let e = import_sysfs_with_arch(&t.0, Arch::X86).unwrap_err();
        assert!(
            e.msg
                .contains("not a sysfs snapshot: no sys/devices/system/cpu directory"),
            "{e}"
        );
        t.put("sys/devices/system/cpu/possible_not", "");
        let e = import_sysfs_with_arch(&t.0, Arch::X86).unwrap_err();
        assert!(
            e.file
                .as_ref()
                .unwrap()
                .ends_with("sys/devices/system/cpu/online"),
            "{e}"
        );
        t.online("0-1");
        t.cpu(1, "cpu_capacity", "big");
        let e = import_sysfs_with_arch(&t.0, Arch::X86).unwrap_err();
        assert!(
            e.file.as_ref().unwrap().ends_with("cpu1/cpu_capacity"),
            "{e}"
        );
        assert!(e.msg.contains("`big`"), "{e}");
        t.cpu(1, "cpu_capacity", "2048");
        let e = import_sysfs_with_arch(&t.0, Arch::X86).unwrap_err();
        assert!(e.msg.contains("capacity 2048 outside"), "{e}");
        t.cpu(1, "cpu_capacity", "1024");
        t.put("sys/devices/system/node/node0/cpulist", "0");
        t.put("sys/devices/system/node/node0/distance", "10");
        let e = import_sysfs_with_arch(&t.0, Arch::X86).unwrap_err();
        assert!(e.msg.contains("cpu1 is in no node"), "{e}");
    }

    #[test]
    fn cpuinfo_decides_arch_before_cpu_capacity() {
        let t = Tree::new("arch");
        t.online("0");
        t.cpu(0, "cpu_capacity", "1024");
        assert_eq!(
            import_sysfs_with_arch(&t.0, Arch::Power).unwrap().arch,
            Arch::Arm64
        );
        t.put(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25",
        );
        let m = import_sysfs_with_arch(&t.0, Arch::Power).unwrap();
        assert_eq!(m.arch, Arch::X86);
        assert_eq!(m.node_reclaim_distance, 32, "AMD family 0x19 is Zen");
        t.put(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6",
        );
        assert_eq!(
            import_sysfs_with_arch(&t.0, Arch::Power)
                .unwrap()
                .node_reclaim_distance,
            30
        );
        t.put(
            "proc/cpuinfo",
            "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported",
        );
        assert_eq!(
            import_sysfs_with_arch(&t.0, Arch::X86).unwrap().arch,
            Arch::Power
        );
    }

    #[test]
    fn host_imports() {
        let m = import_host().unwrap();
        assert!(m.nr_cpus() >= 1);
        assert_eq!(m.name, "host");
    }
}
