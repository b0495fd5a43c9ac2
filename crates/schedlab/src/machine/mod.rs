//! The machine: what the kernel's topology code and cpufreq/cpuidle drivers see.
//!
//! Linux learns the shape of a machine from firmware (ACPI PPTT/SRAT/SLIT, device tree)
//! and exposes it in sysfs: each CPU's core, cluster, last-level cache, package and
//! NUMA node; its `cpu_capacity` on the 1024 scale (arm64 `arch_scale_cpu_capacity`,
//! biggest CPU = 1024); its cpuidle states (exit latency, target residency, power);
//! and its cpufreq policy (frequency domain) with an OPP table that the Energy Model
//! turns into `{frequency, capacity, power, cost}` performance states.
//!
//! [`Machine`] holds exactly that, as an explicit value (only the sysfs importer
//! touches the host). It adds three things the kernel does not know but a simulator
//! needs: how much throughput each SMT hardware thread keeps when 1..N siblings of its
//! core are busy ([`CoreKind::smt_throughput`]); how fast each micro-architecture runs
//! a program whose speed does not follow its Dhrystone-based capacity
//! ([`CoreKind::work_per_clock`]: a divide-bound loop gains far less on a big core
//! than `capacity-dmips-mhz` says); and what the simulated kernel's own work costs on
//! this machine ([`CostTable`]).
//!
//! Units follow the kernel: capacities on the 1024 scale, frequencies in kHz, power in
//! mW, latencies in ns (sysfs prints µs; importers convert).

pub mod cpumask;
pub mod file;
pub mod presets;
pub mod sysfs;

pub use cpumask::{CpuMask, DistributeCursor, MAX_CPUS};

/// Instruction-set family; selects the arch topology table and (in v5.6) whether
/// frequency invariance exists (x86 gained it in v5.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    X86,
    Arm64,
    Power,
}

/// One logical CPU (hardware thread) and where it sits.
///
/// All ids are global and dense (`0..count`). A machine without a cluster level
/// between core and LLC sets `cluster` equal to the LLC's id.
#[derive(Clone, Debug, PartialEq)]
pub struct Cpu {
    pub core: usize,
    pub cluster: usize,
    pub llc: usize,
    pub package: usize,
    pub node: usize,
    /// `arch_scale_cpu_capacity` (sysfs `cpu_capacity`), 1..=1024.
    pub capacity_orig: u32,
    /// Index into [`MachineParts::core_kinds`].
    pub kind: usize,
    /// Index into [`MachineParts::idle_tables`].
    pub idle_table: usize,
    /// Index into [`MachineParts::freq_domains`].
    pub freq_domain: usize,
}

/// A micro-architecture: name and SMT behaviour.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreKind {
    pub name: String,
    /// Per-thread throughput on the 1024 scale when `i + 1` threads of the core are
    /// busy: `smt_throughput[0]` is 1024 (alone on the core); e.g. `[1024, 640]` means
    /// two busy SMT2 siblings each run at 62.5 % (the core at 125 %).
    pub smt_throughput: Vec<u32>,
    /// Work classes this micro-architecture runs at a rate of their own, not the one
    /// its capacity implies: per class, the reference cycles it retires per clock,
    /// on the 1024 scale (1024 = one reference cycle a clock). A generator counts a
    /// program's work in reference cycles at the machine's reference frequency
    /// ([`Machine::ref_khz`]); a CPU running a task of class `c` then works at
    /// `work_per_clock[c] × its highest frequency / ref_khz` instead of at
    /// `capacity_orig`. The scheduler never sees it: `capacity_orig` (DMIPS-based, as
    /// the device tree's `capacity-dmips-mhz`) stays what placement and PELT use.
    /// Empty: every program runs at capacity.
    pub work_per_clock: std::collections::BTreeMap<String, u32>,
}

/// A cpuidle state (`/sys/devices/system/cpu/cpuN/cpuidle/stateK`).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleState {
    pub name: String,
    /// `exit_latency_ns`.
    pub exit_latency_ns: u64,
    /// `target_residency_ns`.
    pub target_residency_ns: u64,
    /// `power_usage` in mW while resident (for energy accounting; may be 0 when unknown).
    pub power_mw: f64,
    /// The state powers down the CPU's whole cluster (a PSCI power level above the
    /// core: `arm,psci-suspend-param` with the power-level field 1, as Juno's and
    /// HiKey960's `cluster-sleep` states). The platform coordinates it: the cluster
    /// goes down only when its last CPU enters such a state, and only the first CPU
    /// to wake pays the cluster's exit latency (sched/core.rs, "coupled cluster idle").
    pub cluster: bool,
    /// The state powers down the CPU's whole core, which its SMT siblings share: the
    /// core reaches it only when every thread is idle in such a state, and a thread
    /// that wakes a core that did not get there pays only its own thread-level exit
    /// (POWER9's `stop4`/`stop5`, which lose the core's hypervisor state: PSSCR's PLS
    /// reports the level the thread really reached, and only the first thread to wake
    /// a core that lost its state restores it, `core_woken` in powernv's
    /// `power9_idle_stop`). Coupled like [`cluster`](Self::cluster), one level down.
    pub core: bool,
    /// How the state is entered: a hardware state, or one of the two software loops
    /// (sched/cpuidle.rs): the cpuidle core's `poll_idle` (`CPUIDLE_FLAG_POLLING`,
    /// x86's `POLL`) or powernv's `snooze_loop`.
    pub kind: IdleKind,
    /// `cpuidleN/stateK/disable`: the governors skip it (`states_usage[].disable`).
    pub disable: bool,
}

/// How a cpuidle state is entered (its `enter` callback and `flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleKind {
    /// A hardware state (mwait, `stop`, PSCI `cpu_suspend`, WFI): the CPU stays in
    /// it until an interrupt.
    #[default]
    Hardware,
    /// `poll_idle` with `CPUIDLE_FLAG_POLLING`: spins until `need_resched` or until
    /// `cpuidle_poll_time` has passed, which it reports as `dev->poll_time_limit`.
    Poll,
    /// powernv's `snooze_loop` (v5.6): spins at low SMT priority until
    /// `need_resched` or the next enabled state's target residency (`TICK_USEC`
    /// without one) has passed; no polling flag, no `poll_time_limit`.
    Snooze,
}

impl IdleKind {
    pub const NAMES: [&'static str; 3] = ["hardware", "poll", "snooze"];

    pub fn by_name(s: &str) -> Option<IdleKind> {
        match s {
            "hardware" => Some(IdleKind::Hardware),
            "poll" => Some(IdleKind::Poll),
            "snooze" => Some(IdleKind::Snooze),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl IdleState {
    /// `CPUIDLE_FLAG_POLLING`, which both governors test.
    #[inline]
    pub fn is_polling(&self) -> bool {
        self.kind == IdleKind::Poll
    }

    /// The state ends on its own after a time limit (`poll_idle`, `snooze_loop`).
    #[inline]
    pub fn is_loop(&self) -> bool {
        self.kind != IdleKind::Hardware
    }

    /// The level whose CPUs the platform coordinates for this state: `Some(CORE)`,
    /// `Some(CLUSTER)`, or `None` for a CPU-level state.
    #[inline]
    pub fn coupling(&self) -> Option<usize> {
        if self.core {
            Some(IdleState::CORE)
        } else if self.cluster {
            Some(IdleState::CLUSTER)
        } else {
            None
        }
    }

    /// [`coupling`](Self::coupling) levels.
    pub const CORE: usize = 0;
    pub const CLUSTER: usize = 1;
}

/// One operating performance point of a frequency domain.
#[derive(Clone, Debug, PartialEq)]
pub struct Opp {
    pub freq_khz: u32,
    /// Active power of one CPU at this OPP in mW (Energy Model `power`); 0 = unknown.
    pub power_mw: u32,
    /// Power of the cluster itself (its L2, snoop control and clock tree: what the
    /// legacy EAS energy model's `cluster-cost` busy data gives) while any CPU of the
    /// domain is active at this OPP, mW; 0 = not modelled (see
    /// [`FreqDomain::cluster_idle_mw`]).
    pub cluster_power_mw: u32,
}

/// A cpufreq policy: CPUs that share a clock, and its OPP table ascending by frequency.
#[derive(Clone, Debug, PartialEq)]
pub struct FreqDomain {
    pub cpus: CpuMask,
    pub opps: Vec<Opp>,
    /// cpufreq `transition_latency` in ns (schedutil's rate limit derives from it).
    pub transition_latency_ns: u64,
    /// The cluster's own power while every CPU of the domain is idle, by the
    /// shallowest idle state among them (an index into their idle table), mW: the
    /// legacy EAS model's `cluster-cost` idle data. Empty = the cluster term is not
    /// modelled (the meter counts CPUs only and says so). A domain with a cluster
    /// term has one for every OPP too ([`Opp::cluster_power_mw`]).
    pub cluster_idle_mw: Vec<f64>,
}

impl FreqDomain {
    pub fn max_freq_khz(&self) -> u32 {
        self.opps.last().map(|o| o.freq_khz).unwrap_or(0)
    }
    /// True when every OPP carries a power figure (an Energy Model can be built).
    pub fn has_energy_model(&self) -> bool {
        !self.opps.is_empty() && self.opps.iter().all(|o| o.power_mw > 0)
    }
    /// True when the domain carries the cluster's own power, busy and idle.
    pub fn has_cluster_power(&self) -> bool {
        !self.cluster_idle_mw.is_empty() && self.opps.iter().all(|o| o.cluster_power_mw > 0)
    }
}

/// What the simulated kernel's own work costs on this machine.
///
/// Values are CPU work in ns *at capacity 1024 and maximum frequency* (charged like
/// any other work, so they take longer on a little or slowed CPU), except
/// `ipi_latency_ns`, which is wall time. Starting values come from
/// `spec/workloads.md` §2; presets say where theirs come from.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CostTable {
    /// `C_CS`: context switch including pick_next, between threads of one mm.
    pub context_switch: u64,
    /// Extra switch cost when the mm changes (process to process).
    pub mm_switch: u64,
    /// `C_TTWU` waker-side cost of a wakeup whose target shares the waker's LLC.
    pub wakeup_local: u64,
    /// Waker-side cost of a wakeup queued to a remote LLC (wake_list + IPI send).
    pub wakeup_remote: u64,
    /// Wall time from sending a reschedule/wakeup IPI to the target acting on it.
    pub ipi_latency_ns: u64,
    /// Waker-side CPU cost of sending that IPI, charged on top of `wakeup_local` /
    /// `wakeup_remote` when a wakeup sends one (a resched IPI to another CPU or the
    /// TTWU_QUEUE IPI). 0 on bare-metal tables, where it is inside the wakeup
    /// costs; large in a VM whose IPIs exit to the hypervisor (measured by
    /// `schedlab calibrate host`).
    pub ipi_send: u64,
    /// `C_SYS`: bare syscall round trip.
    pub syscall: u64,
    /// `C_GTOD`: clock read via the vDSO.
    pub gtod: u64,
    pub pipe_write: u64,
    pub pipe_read: u64,
    pub unix_write: u64,
    pub unix_read: u64,
    /// `SIM_` cross-CPU traffic of a channel: extra ns charged to a pipe (`pipe_remote`)
    /// or AF_UNIX stream (`unix_remote`) write or read call made on a CPU other than
    /// the one that made the channel's previous write or read call (its buffers,
    /// locks and queue heads, and an skb freed away from the CPU that allocated it,
    /// move between caches). 0 in every preset (bare metal: inside the per-call
    /// costs); measured by `schedlab calibrate host` with a spinning cross-CPU
    /// ping-pong. Not charged to TCP loopback.
    pub pipe_remote: u64,
    pub unix_remote: u64,
    pub tcp_write_8k: u64,
    pub tcp_read_8k: u64,
    pub futex_wake: u64,
    pub futex_wait: u64,
    /// Uncontended user-space mutex lock + unlock.
    pub mutex_fast: u64,
    /// `C_YIELD`: sched_yield syscall and reschedule path (switch charged apart).
    pub yield_: u64,
    /// `C_FORK` (parent side) and `C_EXIT`.
    pub fork: u64,
    /// `C_CLONE`: creating a thread (`pthread_create`: the stack's `mmap`, `clone`
    /// with `CLONE_VM | CLONE_THREAD`), the caller's side. `fork / 4` in every
    /// preset; measured by `schedlab calibrate host` (`Ct`).
    pub clone_thread: u64,
    /// A new thread's own start-up before its first work, on the new thread
    /// ([`Op::ThreadStart`](crate::workload::program::Op::ThreadStart): rt-app's
    /// thread name, log line and first log-buffer allocation), its first `malloc`
    /// attaching to an existing glibc arena (`thread_start`) or creating its own
    /// (`thread_start_arena`: the heap's `mmap`, `munmap`, `mprotect`, faults).
    /// Measured by `schedlab calibrate host` (`Cs`, `Ca`); 0 where not measured
    /// (every preset: spec §2's tables name no thread start-up).
    pub thread_start: u64,
    pub thread_start_arena: u64,
    pub exit: u64,
    /// Scheduler tick handler.
    pub tick: u64,
    /// Cache refill charged to a migrated task at its next run, by the closest level
    /// the old and new CPU share: SMT core, LLC, package, or none (NUMA).
    pub migrate_smt: u64,
    pub migrate_llc: u64,
    pub migrate_package: u64,
    pub migrate_numa: u64,
    /// Cost of reading one CPU's state in an idle search: an SMT sibling, a CPU of
    /// the same LLC, a CPU beyond it.
    pub probe_smt: u64,
    pub probe_llc: u64,
    pub probe_remote: u64,
    /// Load balancing: per CPU whose statistics are gathered.
    pub balance_per_cpu: u64,
    /// `select_task_rq_fair`: per sched domain its walk examines (a cache-hot
    /// pointer chase and flag test; seed 002 saves some of these walks).
    pub domain_visit: u64,
}

/// The largest value of any `[cost]` entry: one second. Costs are ns of kernel
/// primitives (tens of ns to tens of µs); a path charges a handful of them, or
/// one per CPU probed, so this bound keeps every sum of costs far from overflow.
pub const MAX_COST_NS: u64 = crate::engine::NSEC_PER_SEC;

impl CostTable {
    /// Every entry within [`MAX_COST_NS`], or the first that is not.
    pub fn check(&self) -> Result<(), String> {
        let v = serde_json::to_value(self).map_err(|e| e.to_string())?;
        for (k, x) in v.as_object().into_iter().flatten() {
            if x.as_u64().is_none_or(|n| n > MAX_COST_NS) {
                return Err(format!(
                    "cost `{k}` = {x}: a cost is at most {MAX_COST_NS} ns (1 s)"
                ));
            }
        }
        Ok(())
    }
}

impl Default for CostTable {
    /// Mid-range x86 values of `spec/workloads.md` §2.
    fn default() -> Self {
        CostTable {
            context_switch: 1_000,
            mm_switch: 500,
            wakeup_local: 800,
            wakeup_remote: 1_200,
            ipi_latency_ns: 1_500,
            ipi_send: 0,
            syscall: 100,
            gtod: 30,
            pipe_write: 600,
            pipe_read: 600,
            unix_write: 1_100,
            unix_read: 1_100,
            pipe_remote: 0,
            unix_remote: 0,
            tcp_write_8k: 6_000,
            tcp_read_8k: 1_500,
            futex_wake: 500,
            futex_wait: 500,
            mutex_fast: 40,
            yield_: 600,
            fork: 80_000,
            clone_thread: 20_000,
            thread_start: 0,
            thread_start_arena: 0,
            exit: 35_000,
            tick: 500,
            migrate_smt: 0,
            migrate_llc: 2_000,
            migrate_package: 8_000,
            migrate_numa: 15_000,
            // Probe costs fitted (docs/calibration.md §6) against seed 003's
            // select_idle_sibling() cost under `hackbench` with 16 groups on the
            // 2 x 22-core SMT2 Xeon: 0.556 µs per call (charged ns/call on
            // `xeon-88` with the loop count that fits the seed's times, 10 000:
            // 512 ns). Were 10 / 25 / 60 (estimates; spec §2 gives no range), then
            // 13 / 32 / 77 when fitted at 1 000 loops.
            probe_smt: 26,
            probe_llc: 64,
            probe_remote: 154,
            balance_per_cpu: 40,
            domain_visit: 4,
        }
    }
}

/// A complete machine description: [`MachineParts`] validated by [`Machine::new`],
/// with the per-CPU masks used on hot paths precomputed. Its parts read as fields
/// (`m.cpus`, `m.cost`) through `Deref`.
#[derive(Clone, Debug)]
pub struct Machine {
    parts: MachineParts,
    masks: Masks,
}

impl std::ops::Deref for Machine {
    type Target = MachineParts;
    #[inline]
    fn deref(&self) -> &MachineParts {
        &self.parts
    }
}

impl std::ops::DerefMut for Machine {
    /// The parts, writable: for a test or an override that changes a cost or a
    /// description. What the masks index (the CPUs' topology ids) must not change.
    #[inline]
    fn deref_mut(&mut self) -> &mut MachineParts {
        &mut self.parts
    }
}

#[derive(Clone, Debug, Default)]
struct Masks {
    all: CpuMask,
    smt: Vec<CpuMask>,
    cluster: Vec<CpuMask>,
    llc: Vec<CpuMask>,
    package: Vec<CpuMask>,
    node: Vec<CpuMask>,
    smt_present: bool,
}

/// A machine's description before validation (see [`Machine::new`]), and after it
/// the parts of a [`Machine`].
#[derive(Clone, Debug)]
pub struct MachineParts {
    pub name: String,
    /// Where the numbers come from (public sources), shown by `schedlab topology`.
    pub description: String,
    pub arch: Arch,
    pub cpus: Vec<Cpu>,
    /// SLIT distance matrix, node × node (10 = local).
    pub numa_distance: Vec<Vec<u32>>,
    /// `node_reclaim_distance` (30; 32 on AMD Zen).
    pub node_reclaim_distance: u32,
    pub core_kinds: Vec<CoreKind>,
    pub idle_tables: Vec<Vec<IdleState>>,
    pub freq_domains: Vec<FreqDomain>,
    pub cost: CostTable,
    /// An emulated machine's shared host: the work rate (1024 scale) of each busy
    /// CPU when 1, 2, ... CPUs of the whole machine are busy at once (the last entry
    /// beyond the table's end); empty on real hardware. A TCG guest's vCPUs are
    /// host threads sharing the host's cores, so each does less work per guest
    /// second the more of them run (docs/validation.md, "What TCG does to time").
    pub vcpu_throughput: Vec<u32>,
    /// How the host time-slices the busy vCPUs of an emulated machine, where it
    /// was measured (`calibrate host --vcpu-throughput`); `None` models the shared
    /// host as a fluid rate only ([`MachineParts::vcpu_throughput`]).
    pub vcpu_host: Option<VcpuHost>,
}

/// The host's time-slicing of an emulated machine's vCPUs (SIM_VCPU_HOST,
/// docs/kernel-mapping.md): `cpus` host CPUs run the busy vCPUs, each for up to
/// `slice_ns` of host time before the longest-running one yields to the first
/// waiting; a vCPU that leaves its idle state preempts the longest-running one. A
/// descheduled vCPU does no work and takes no interrupt until it runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VcpuHost {
    /// Host CPUs the vCPUs share (fewer than the machine's CPUs).
    pub cpus: u32,
    /// The host's slice per vCPU, ns.
    pub slice_ns: u64,
}

impl Masks {
    /// The per-CPU masks of `cpus`' core, cluster, LLC, package and node ids.
    fn of(cpus: &[Cpu]) -> Masks {
        let mut m = Masks {
            all: CpuMask::first_n(cpus.len()),
            ..Default::default()
        };
        let group = |key: &dyn Fn(&Cpu) -> usize| -> Vec<CpuMask> {
            let count = cpus.iter().map(key).max().unwrap_or(0) + 1;
            let mut v = vec![CpuMask::new(); count];
            for (i, c) in cpus.iter().enumerate() {
                v[key(c)].set(i);
            }
            cpus.iter().map(|c| v[key(c)]).collect()
        };
        m.smt = group(&|c| c.core);
        m.smt_present = m.smt.iter().any(|s| s.weight() > 1);
        m.cluster = group(&|c| c.cluster);
        m.llc = group(&|c| c.llc);
        m.package = group(&|c| c.package);
        m.node = group(&|c| c.node);
        m
    }
}

/// A SLIT: distances at most 255, local 10, remote > 10, symmetric.
fn check_slit(numa_distance: &[Vec<u32>]) -> Result<(), String> {
    for (i, row) in numa_distance.iter().enumerate() {
        for (j, &d) in row.iter().enumerate() {
            if d > 255 {
                return Err(format!(
                    "numa_distance[{i}][{j}] = {d}: a SLIT distance is at most 255"
                ));
            }
            if (i == j && d != 10) || (i != j && d <= 10) {
                return Err(format!(
                    "numa_distance[{i}][{j}] = {d}: local must be 10, remote > 10"
                ));
            }
            if numa_distance[j][i] != d {
                return Err(format!("numa_distance is not symmetric at [{i}][{j}]"));
            }
        }
    }
    Ok(())
}

/// CPU `i` (`c`): capacity, existing kind, idle table and frequency domain, nested
/// topology levels, a core kind's SMT throughput for its width, identical siblings.
fn check_cpu(p: &MachineParts, m: &Masks, i: usize, c: &Cpu) -> Result<(), String> {
    if c.capacity_orig == 0 || c.capacity_orig > 1024 {
        return Err(format!(
            "cpu{i}: capacity {} outside 1..=1024",
            c.capacity_orig
        ));
    }
    if c.kind >= p.core_kinds.len() {
        return Err(format!("cpu{i}: core kind {} does not exist", c.kind));
    }
    if c.idle_table >= p.idle_tables.len() {
        return Err(format!(
            "cpu{i}: idle table {} does not exist",
            c.idle_table
        ));
    }
    if c.freq_domain >= p.freq_domains.len() || !p.freq_domains[c.freq_domain].cpus.test(i) {
        return Err(format!(
            "cpu{i}: not a member of its frequency domain {}",
            c.freq_domain
        ));
    }
    // core ⊆ cluster ⊆ LLC ⊆ package, and package and node nest one way
    // or the other; with nodes inside a package (sub-NUMA clustering) the
    // LLC lies inside the node too.
    let (pkg, node) = (m.package[i], m.node[i]);
    if !pkg.is_subset(&node) && !node.is_subset(&pkg) {
        return Err(format!(
            "cpu{i}: its package ({pkg}) and its NUMA node ({node}) do not nest"
        ));
    }
    let nest = [
        ("core", m.smt[i], "cluster", m.cluster[i]),
        ("cluster", m.cluster[i], "LLC", m.llc[i]),
        ("LLC", m.llc[i], "package", pkg),
        ("LLC", m.llc[i], "NUMA node", node),
    ];
    for (a, am, b, bm) in nest {
        if !am.is_subset(&bm) {
            return Err(format!(
                "cpu{i}: its {a} ({am}) is not inside its {b} ({bm})"
            ));
        }
    }
    let threads = m.smt[i].weight();
    let kind = &p.core_kinds[c.kind];
    if kind.smt_throughput.len() < threads
        || kind.smt_throughput.first() != Some(&1024)
        || kind.smt_throughput.iter().any(|&t| t == 0 || t > 1024)
    {
        return Err(format!(
            "core kind `{}`: smt_throughput needs {threads} entries in 1..=1024, starting with 1024",
            kind.name
        ));
    }
    for s in m.smt[i].iter() {
        let o = &p.cpus[s];
        if o.capacity_orig != c.capacity_orig || o.kind != c.kind {
            return Err(format!(
                "cpu{i} and its SMT sibling cpu{s} differ in capacity or kind"
            ));
        }
    }
    Ok(())
}

/// Frequency domains: at least one OPP, ascending strictly, CPUs pointing back.
fn check_freq_domains(p: &MachineParts) -> Result<(), String> {
    let n = p.cpus.len();
    for (d, fd) in p.freq_domains.iter().enumerate() {
        if fd.opps.is_empty() {
            return Err(format!("frequency domain {d} has no OPP"));
        }
        if fd.opps.windows(2).any(|w| w[0].freq_khz >= w[1].freq_khz) {
            return Err(format!(
                "frequency domain {d}: OPPs must ascend strictly by frequency"
            ));
        }
        for c in fd.cpus.iter() {
            if c >= n || p.cpus[c].freq_domain != d {
                return Err(format!(
                    "frequency domain {d} lists cpu{c}, which does not point back to it"
                ));
            }
        }
        check_cluster_power(p, d, fd)?;
    }
    Ok(())
}

/// A domain's cluster power: all or nothing (idle figures and a busy figure at every
/// OPP), finite and >= 0, one idle figure per idle state of each of its CPUs.
fn check_cluster_power(p: &MachineParts, d: usize, fd: &FreqDomain) -> Result<(), String> {
    let busy = fd.opps.iter().filter(|o| o.cluster_power_mw > 0).count();
    if fd.cluster_idle_mw.is_empty() {
        if busy > 0 {
            return Err(format!(
                "frequency domain {d}: cluster_power_mw on an OPP needs cluster_idle_mw too"
            ));
        }
        return Ok(());
    }
    if busy != fd.opps.len() {
        return Err(format!(
            "frequency domain {d}: with cluster_idle_mw, every OPP needs a cluster_power_mw > 0"
        ));
    }
    if let Some(x) = fd
        .cluster_idle_mw
        .iter()
        .find(|x| !(x.is_finite() && **x >= 0.0))
    {
        return Err(format!(
            "frequency domain {d}: cluster_idle_mw {x} must be a number >= 0"
        ));
    }
    for c in fd.cpus.iter() {
        let states = p.idle_tables.get(p.cpus[c].idle_table).map_or(0, Vec::len);
        if states != fd.cluster_idle_mw.len() {
            return Err(format!(
                "frequency domain {d}: cluster_idle_mw has {} figures but cpu{c} has {states} \
                 idle states (one figure per state, shallowest first)",
                fd.cluster_idle_mw.len()
            ));
        }
    }
    Ok(())
}

/// Idle tables: times within the engine's limit, power finite and >= 0, states
/// ordered by exit latency.
fn check_idle_tables(idle_tables: &[Vec<IdleState>]) -> Result<(), String> {
    for (t, table) in idle_tables.iter().enumerate() {
        for s in table {
            if s.exit_latency_ns > crate::engine::MAX_TIME_NS
                || s.target_residency_ns > crate::engine::MAX_TIME_NS
            {
                return Err(format!(
                    "idle table {t}, state `{}`: a latency or residency {}",
                    s.name,
                    crate::engine::time_limit_text()
                ));
            }
            if !(s.power_mw.is_finite() && s.power_mw >= 0.0) {
                return Err(format!(
                    "idle table {t}, state `{}`: power_mw = {} must be a finite number >= 0",
                    s.name, s.power_mw
                ));
            }
        }
        if table
            .windows(2)
            .any(|w| w[0].exit_latency_ns > w[1].exit_latency_ns)
        {
            return Err(format!(
                "idle table {t}: states must be ordered by exit latency"
            ));
        }
    }
    Ok(())
}

/// Frequency assumed for the reference CPU when the machine has no OPP table (kHz).
pub const DEFAULT_REF_KHZ: u64 = 2_000_000;

/// Work classes: rates in 1..=4096, and a class named by one core kind in use
/// named by every kind in use (a task of that class must have a rate wherever it runs).
fn check_work_classes(p: &MachineParts) -> Result<(), String> {
    let classes: std::collections::BTreeSet<&String> = p
        .core_kinds
        .iter()
        .flat_map(|k| k.work_per_clock.keys())
        .collect();
    if classes.len() > 255 {
        return Err(format!("{} work classes: at most 255", classes.len()));
    }
    let mut used: Vec<usize> = p.cpus.iter().map(|c| c.kind).collect();
    used.sort_unstable();
    used.dedup();
    for &k in &used {
        let kind = &p.core_kinds[k];
        for (class, &r) in &kind.work_per_clock {
            if r == 0 || r > 4096 {
                return Err(format!(
                    "core kind `{}`: work_per_clock.{class} = {r} outside 1..=4096",
                    kind.name
                ));
            }
            if let Some(o) = used
                .iter()
                .map(|&o| &p.core_kinds[o])
                .find(|o| !o.work_per_clock.contains_key(class))
            {
                return Err(format!(
                    "work class `{class}` has a rate on core kind `{}` but not on `{}`: \
                     give it one on every kind",
                    kind.name, o.name
                ));
            }
        }
    }
    Ok(())
}

impl Machine {
    /// Validate `p` and index it. Errors say what is inconsistent.
    pub fn new(p: MachineParts) -> Result<Machine, String> {
        let n = p.cpus.len();
        if n == 0 {
            return Err("a machine needs at least one CPU".into());
        }
        if n > MAX_CPUS {
            return Err(format!("{n} CPUs exceed the maximum of {MAX_CPUS}"));
        }
        let nodes = p.cpus.iter().map(|c| c.node).max().unwrap_or(0) + 1;
        if p.numa_distance.len() != nodes || p.numa_distance.iter().any(|r| r.len() != nodes) {
            return Err(format!("numa_distance must be a {nodes}×{nodes} matrix"));
        }
        if p.node_reclaim_distance > 255 {
            return Err(format!(
                "node_reclaim_distance = {}: a SLIT distance is at most 255",
                p.node_reclaim_distance
            ));
        }
        p.cost.check()?;
        check_slit(&p.numa_distance)?;
        if !p.vcpu_throughput.is_empty()
            && (p.vcpu_throughput.len() > n
                || p.vcpu_throughput[0] != 1024
                || p.vcpu_throughput.iter().any(|&t| t == 0 || t > 1024))
        {
            return Err(format!(
                "vcpu_throughput needs at most {n} entries (one per busy CPU count) in 1..=1024, starting with 1024"
            ));
        }
        if let Some(h) = p.vcpu_host {
            if p.vcpu_throughput.is_empty() || h.cpus == 0 || h.cpus as usize >= n {
                return Err(format!(
                    "vcpu_host_cpus = {}: the host's CPUs are between 1 and {} (fewer than the machine's), and need vcpu_throughput",
                    h.cpus,
                    n.saturating_sub(1)
                ));
            }
            if !(100_000..=1_000_000_000).contains(&h.slice_ns) {
                return Err(format!(
                    "vcpu_host_slice_us = {}: a host slice is 100..=1000000 µs",
                    h.slice_ns / 1000
                ));
            }
        }
        let m = Masks::of(&p.cpus);
        for (i, c) in p.cpus.iter().enumerate() {
            check_cpu(&p, &m, i, c)?;
        }
        check_freq_domains(&p)?;
        check_idle_tables(&p.idle_tables)?;
        check_work_classes(&p)?;
        Ok(Machine { parts: p, masks: m })
    }

    /// The validated parts, the masks dropped.
    pub fn into_parts(self) -> MachineParts {
        self.parts
    }

    /// `nr_cpu_ids`.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
    pub fn nr_nodes(&self) -> usize {
        self.numa_distance.len()
    }
    /// `cpu_possible_mask` (all CPUs are online).
    pub fn all_cpus(&self) -> &CpuMask {
        &self.masks.all
    }
    /// `cpu_smt_mask`: the hardware threads of `cpu`'s core.
    #[inline]
    pub fn smt_mask(&self, cpu: usize) -> &CpuMask {
        &self.masks.smt[cpu]
    }
    /// `cpu_clustergroup_mask`.
    #[inline]
    pub fn cluster_mask(&self, cpu: usize) -> &CpuMask {
        &self.masks.cluster[cpu]
    }
    /// CPUs sharing `cpu`'s last-level cache (`cpu_coregroup_mask` on x86).
    #[inline]
    pub fn llc_mask(&self, cpu: usize) -> &CpuMask {
        &self.masks.llc[cpu]
    }
    /// `topology_core_cpumask`: CPUs of `cpu`'s package.
    #[inline]
    pub fn package_mask(&self, cpu: usize) -> &CpuMask {
        &self.masks.package[cpu]
    }
    /// `cpumask_of_node(cpu_to_node(cpu))`.
    #[inline]
    pub fn node_mask(&self, cpu: usize) -> &CpuMask {
        &self.masks.node[cpu]
    }
    /// True when CPU capacities differ (`sched_asym_cpucapacity` candidates).
    pub(crate) fn is_asymmetric(&self) -> bool {
        let c0 = self.cpus[0].capacity_orig;
        self.cpus.iter().any(|c| c.capacity_orig != c0)
    }
    /// True when every frequency domain has an OPP table with power figures: an
    /// Energy Model can be built (`em_create_pd` succeeds for every policy).
    pub fn has_energy_model(&self) -> bool {
        self.freq_domains.iter().all(|fd| fd.has_energy_model())
    }
    /// True when some core has more than one hardware thread (`sched_smt_present`).
    #[inline]
    pub fn has_smt(&self) -> bool {
        self.masks.smt_present
    }
    /// Idle states of `cpu`, shallowest first.
    #[inline]
    pub fn idle_states(&self, cpu: usize) -> &[IdleState] {
        &self.idle_tables[self.cpus[cpu].idle_table]
    }
    /// The reference frequency (kHz) a generator counts work at: the highest OPP of
    /// the biggest CPU (the one whose capacity is the 1024 reference), or
    /// [`DEFAULT_REF_KHZ`] when the machine gives no frequency.
    pub fn ref_khz(&self) -> u64 {
        self.cpus
            .iter()
            .max_by_key(|c| c.capacity_orig)
            .and_then(|c| self.freq_domains.get(c.freq_domain))
            .map(|d| u64::from(d.max_freq_khz()))
            .filter(|&k| k > 0)
            .unwrap_or(DEFAULT_REF_KHZ)
    }
    /// The work classes with a rate of their own on this machine, sorted.
    pub fn work_classes(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .core_kinds
            .iter()
            .flat_map(|k| k.work_per_clock.keys().map(String::as_str))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    /// The capacity (1024 scale, may exceed it) at which `cpu` runs work of `class`
    /// at its highest frequency: [`CoreKind::work_per_clock`] scaled by the CPU's
    /// highest frequency over [`Machine::ref_khz`], at most 4096 (so that a rate
    /// times any simulated time fits in 64 bits). `None`: no rate of its own (the
    /// work runs at `capacity_orig`).
    pub fn work_capacity(&self, cpu: usize, class: &str) -> Option<u64> {
        let c = &self.cpus[cpu];
        let r = *self.core_kinds[c.kind].work_per_clock.get(class)?;
        let fmax = u64::from(self.freq_domains[c.freq_domain].max_freq_khz());
        let fref = self.ref_khz();
        let fmax = if fmax == 0 { fref } else { fmax };
        Some((u64::from(r) * fmax / fref).clamp(1, 4096))
    }
    /// Per-thread throughput (1024 scale) of `cpu` when `busy` threads of its core run.
    #[inline]
    pub(crate) fn smt_throughput(&self, cpu: usize, busy: usize) -> u32 {
        let t = &self.core_kinds[self.cpus[cpu].kind].smt_throughput;
        t[busy.clamp(1, t.len()) - 1]
    }
    /// Per-CPU work rate (1024 scale) when `busy` CPUs of the machine run
    /// ([`MachineParts::vcpu_throughput`]); 1024 on a machine without the table.
    #[inline]
    pub(crate) fn vcpu_throughput(&self, busy: usize) -> u32 {
        let t = &self.vcpu_throughput;
        if t.is_empty() {
            return 1024;
        }
        t[busy.clamp(1, t.len()) - 1]
    }
    /// Closest level two CPUs share, for migration cost accounting.
    /// The levels two distinct CPUs of this machine can share (see
    /// `Machine::shared_level`): SMT if a core has two threads, LLC if an LLC
    /// holds two cores, package if a package holds two LLCs, NUMA (another
    /// package) if there are two packages.
    pub fn shared_levels(&self) -> Vec<SharedLevel> {
        use std::collections::{BTreeMap, BTreeSet};
        let by = |key: fn(&Cpu) -> usize, inner: fn(&Cpu) -> usize| {
            let mut m: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
            for c in &self.cpus {
                m.entry(key(c)).or_default().insert(inner(c));
            }
            m.values().any(|s| s.len() > 1)
        };
        let mut threads: BTreeMap<usize, usize> = BTreeMap::new();
        for c in &self.cpus {
            *threads.entry(c.core).or_default() += 1;
        }
        let smt = threads.values().any(|&n| n > 1);
        let llc = by(|c| c.llc, |c| c.core);
        let pkg = by(|c| c.package, |c| c.llc);
        let numa = by(|_| 0, |c| c.package);
        [
            (smt, SharedLevel::Smt),
            (llc, SharedLevel::Llc),
            (pkg, SharedLevel::Package),
            (numa, SharedLevel::Numa),
        ]
        .into_iter()
        .filter(|(has, _)| *has)
        .map(|(_, l)| l)
        .collect()
    }

    pub(crate) fn shared_level(&self, a: usize, b: usize) -> SharedLevel {
        let (x, y) = (&self.cpus[a], &self.cpus[b]);
        if a == b {
            SharedLevel::Same
        } else if x.core == y.core {
            SharedLevel::Smt
        } else if x.llc == y.llc {
            SharedLevel::Llc
        } else if x.package == y.package {
            SharedLevel::Package
        } else {
            SharedLevel::Numa
        }
    }
}

/// The closest topology level two CPUs share.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum SharedLevel {
    Same,
    Smt,
    Llc,
    Package,
    Numa,
}

impl SharedLevel {
    pub fn name(self) -> &'static str {
        match self {
            SharedLevel::Same => "same",
            SharedLevel::Smt => "smt",
            SharedLevel::Llc => "llc",
            SharedLevel::Package => "package",
            SharedLevel::Numa => "numa",
        }
    }
}

/// A machine by name: a preset, `host` (this machine's sysfs), a machine file, or
/// (with `sysfs`) a sysfs snapshot directory.
pub fn resolve(
    name: &str,
    sysfs: Option<&std::path::Path>,
) -> Result<Machine, crate::error::InputError> {
    if let Some(d) = sysfs {
        return sysfs::import_sysfs(d);
    }
    if name == "host" {
        return sysfs::import_host();
    }
    if let Some(m) = presets::preset(name) {
        return Ok(m);
    }
    let p = std::path::Path::new(name);
    if p.exists() {
        return file::load_machine_file(p);
    }
    Err(crate::error::InputError::new(format!(
        "`{name}` is neither a machine preset (see `schedlab list machines`) nor a file"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_levels_are_the_machines_own() {
        let levels = |p: &str| presets::preset(p).unwrap().shared_levels();
        use SharedLevel::*;
        // Juno: two clusters (one LLC each) in one package, no SMT.
        assert_eq!(levels("juno-r0"), [Llc, Package]);
        // 2 sockets x 10 cores x 2 threads, one LLC per socket.
        assert_eq!(levels("xeon-e5-40"), [Smt, Llc, Numa]);
        for p in ["juno-r0", "xeon-e5-40", "hikey960", "power9-176"] {
            let m = presets::preset(p).unwrap();
            let all: std::collections::BTreeSet<SharedLevel> = (0..m.nr_cpus())
                .flat_map(|a| (0..m.nr_cpus()).map(move |b| (a, b)))
                .filter(|(a, b)| a != b)
                .map(|(a, b)| m.shared_level(a, b))
                .collect();
            let got: std::collections::BTreeSet<SharedLevel> =
                m.shared_levels().into_iter().collect();
            assert_eq!(got, all, "{p}: the brute-force set of pairs");
        }
    }
}
