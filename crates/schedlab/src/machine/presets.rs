//! Machine presets: real machines from the seeds' test reports and a few modern ones.
//!
//! A preset is what the kernel would see on that machine: how logical CPUs are
//! numbered (which decides `for_each_cpu_wrap` scan order), which CPUs share a core,
//! a cluster, the last-level cache, a package and a NUMA node; each CPU's
//! `cpu_capacity`; its cpuidle states; its cpufreq policy and OPPs (with Energy Model
//! power where public). The numbers come from public sources named in a `//` comment
//! next to each preset; where a number is an estimate the comment says so.
//!
//! CPU numbering follows what Linux enumerates on the modelled part:
//!
//! | family | numbering |
//! |---|---|
//! | x86 (ACPI MADT order) | first thread of every core, socket by socket; then every core's second thread: `cpu = thread * nr_cores + socket * cores_per_socket + core` |
//! | POWER | threads of a core adjacent: `cpu = core * smt + thread` |
//! | Arm DT | the boot CPU is cpu0, the others follow in DT order (Juno r0 boots on an A53, so its A57s are cpus 1 and 2) |
//! | [`test_topology`] | core-major like POWER (`cpu = core * smt + thread`), cores numbered node by node and LLC by LLC |
//!
//! Topology levels map to ids as in [`Machine`]: `cluster` is the level between core
//! and LLC (v5.16+ `CLS`); a machine without one has `cluster == llc`. `package` is the
//! physical package (socket); on the Arm SoCs here that is the whole chip.
//!
//! Simplifications: the kernel's Energy Model (v5.6) is per CPU only, and so is what
//! EAS decides with here; the energy *meter* also counts the cluster's own power
//! where a public table gives it (Juno r0: `Opp::cluster_power_mw`,
//! `FreqDomain::cluster_idle_mw`; docs/idle-data.md). Idle `power_mw` is per CPU; x86
//! presets have one frequency domain per package with a single OPP (v5.6
//! x86 has no frequency invariance and no Energy Model, so power is 0 = unknown).
//!
//! SMT throughput ([`CoreKind::smt_throughput`]) is per busy thread on the 1024 scale.
//! x86 SMT2 `[1024, 640]`: two busy hyperthreads each get 62.5 %, i.e. the core does
//! 1.25× one thread, the commonly quoted 15–30 % Hyper-Threading gain on throughput
//! benchmarks (SPECrate-style). POWER9 SMT4 `[1024, 640, 450, 350]`: core throughput
//! 1.0/1.25/1.32/1.37×; IBM quotes larger SMT4 gains for POWER9 on some workloads, but
//! scheduler-bound benchmarks (hackbench, schbench) are latency-bound, so we stay
//! conservative. Both are estimates to be fitted.

use super::{
    Arch, CoreKind, CostTable, Cpu, CpuMask, FreqDomain, IdleKind, IdleState, Machine,
    MachineParts, Opp,
};

/// Names and one-line descriptions of the built-in presets.
pub fn preset_names() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "power9-176",
            "IBM POWER9: 2 sockets x 22 cores x SMT4, LLC per core pair (seed 000)",
        ),
        (
            "xeon-88",
            "Intel Xeon E5-2699 v4 class: 2 sockets x 22 cores x SMT2 (seed 003)",
        ),
        (
            "xeon-e5-40",
            "Intel Xeon E5-2650 v3 class: 2 sockets x 10 cores x SMT2 (seed 002)",
        ),
        (
            "juno-r0",
            "Arm Juno r0: 2x Cortex-A57 + 4x Cortex-A53 big.LITTLE (seeds 002, 004)",
        ),
        (
            "hikey960",
            "HiSilicon Kirin 960: 4x Cortex-A53 + 4x Cortex-A73 (seeds 001, 004)",
        ),
        (
            "synquacer-24",
            "Socionext SynQuacer SC2A11: 24x Cortex-A53 in 12 pairs, shared L3 (seed 001)",
        ),
        (
            "epyc-192",
            "AMD EPYC 9654 class (Zen 4): 1 socket, 12 CCX x 8 cores x SMT2, NPS1",
        ),
        (
            "spr-224",
            "Intel Xeon Platinum 8480+ (Sapphire Rapids): 2 sockets x 56 cores x SMT2",
        ),
        (
            "pixel6",
            "Google Tensor GS101: 4x A55 + 2x A76 + 2x X1, DSU L3 shared",
        ),
        (
            "alderlake-24",
            "Intel Core i9-12900K class (Alder Lake): 8 P-cores x SMT2 + 8 E-cores (2 clusters of 4), one LLC, asymmetric capacity",
        ),
        (
            "synthetic-1024",
            "Synthetic: 4 nodes x 2 LLCs x 64 cores x SMT2 = 1024 CPUs (bench command)",
        ),
    ]
}

/// A built-in machine by name (see [`preset_names`]).
pub fn preset(name: &str) -> Option<Machine> {
    Some(match name {
        "power9-176" => power9_176(),
        "xeon-88" => xeon_88(),
        "xeon-e5-40" => xeon_e5_40(),
        "juno-r0" => juno_r0(),
        "hikey960" => hikey960(),
        "synquacer-24" => synquacer_24(),
        "epyc-192" => epyc_192(),
        "spr-224" => spr_224(),
        "pixel6" => pixel6(),
        "alderlake-24" => alderlake_24(),
        "synthetic-1024" => synthetic_1024(),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------
// Helpers shared with the importers.
// ---------------------------------------------------------------------------------

/// Default per-thread SMT throughput for an SMT width `n` (see the module essay):
/// `[1024]`, `[1024, 640]`, `[1024, 640, 450, 350]`, else the curve
/// `1024 * (3 + k) / (4 k)` for `k` busy threads (core gain 1 + (k-1)/4).
pub(crate) fn default_smt_throughput(n: usize) -> Vec<u32> {
    match n {
        0 | 1 => vec![1024],
        2 => vec![1024, 640],
        4 => vec![1024, 640, 450, 350],
        _ => (1..=n as u32).map(|k| 1024 * (3 + k) / (4 * k)).collect(),
    }
}

/// Energy Model power of one CPU at an OPP from a DT `dynamic-power-coefficient`,
/// as the kernel's `of_dp_get_power` computes it: `C * f[MHz] * V[mV]^2 / 10^9` mW,
/// in integers.
pub(crate) fn em_power_mw(dpc: u64, freq_mhz: u64, millivolt: u64) -> u32 {
    (dpc * freq_mhz * millivolt * millivolt / 1_000_000_000) as u32
}

/// The cost table for an Arm machine whose capacity-1024 CPU is a Cortex-A57/A73
/// class core at max OPP: mid values of the "Arm big" column of `spec/workloads.md`
/// §2 (all estimates). IPI latency (wall time): GICv2/v3 SGI plus exit from WFI,
/// ~2 µs (estimate). Migration costs: LLC is a cluster L2 of 1–2 MB, smaller than
/// x86 LLCs, so a refill within it is cheaper, but crossing clusters goes through
/// CCI/CCN to DRAM (no shared L3 on Juno/HiKey960): estimates.
pub fn cost_arm_big() -> CostTable {
    CostTable {
        context_switch: 2_200,
        mm_switch: 800,
        wakeup_local: 1_500,
        wakeup_remote: 2_000,
        ipi_latency_ns: 2_000,
        ipi_send: 0,
        syscall: 300,
        gtod: 75,
        pipe_write: 1_100,
        pipe_read: 1_100,
        unix_write: 2_200,
        unix_read: 2_200,
        pipe_remote: 0,
        unix_remote: 0,
        tcp_write_8k: 11_000,
        tcp_read_8k: 3_000,
        futex_wake: 1_000,
        futex_wait: 1_000,
        mutex_fast: 60,
        // Fitted (docs/calibration.md) against seed 002's `sysbench threads` on Juno
        // r0 (6 threads, 5 s: 15 318 events), assuming one worker per CPU: 3.742 M /
        // (yield_ + mutex_fast) events/s over 2 A57 + 4 A53 (446) = 3 064/s gives
        // yield_ ≈ 1 160 ns. Was 1 500; spec §2 Arm big range 1–2 µs.
        yield_: 1_150,
        fork: 220_000,
        clone_thread: 55_000,
        thread_start: 0,
        thread_start_arena: 0,
        exit: 85_000,
        tick: 1_000,
        migrate_smt: 0,
        migrate_llc: 1_500,
        migrate_package: 10_000,
        migrate_numa: 15_000,
        probe_smt: 15,
        probe_llc: 40,
        probe_remote: 100,
        balance_per_cpu: 80,
        domain_visit: 6,
    }
}

/// The cost table for a machine whose capacity-1024 CPU is a Cortex-A53 (SynQuacer):
/// mid values of the "Arm little" column of `spec/workloads.md` §2 (estimates). The
/// shared 4 MB L3 makes cross-pair migration an L3 refill, not a DRAM one.
pub(crate) fn cost_arm_little() -> CostTable {
    CostTable {
        context_switch: 4_000,
        mm_switch: 1_200,
        wakeup_local: 3_000,
        wakeup_remote: 3_500,
        ipi_latency_ns: 3_000,
        ipi_send: 0,
        syscall: 600,
        gtod: 150,
        pipe_write: 2_200,
        pipe_read: 2_200,
        unix_write: 4_000,
        unix_read: 4_000,
        pipe_remote: 0,
        unix_remote: 0,
        tcp_write_8k: 22_000,
        tcp_read_8k: 6_000,
        futex_wake: 2_000,
        futex_wait: 2_000,
        mutex_fast: 120,
        yield_: 2_500,
        fork: 450_000,
        clone_thread: 112_500,
        thread_start: 0,
        thread_start_arena: 0,
        exit: 175_000,
        tick: 2_000,
        migrate_smt: 0,
        migrate_llc: 4_000,
        migrate_package: 12_000,
        migrate_numa: 20_000,
        probe_smt: 30,
        probe_llc: 60,
        probe_remote: 150,
        balance_per_cpu: 150,
        domain_visit: 10,
    }
}

/// POWER9 at ~3.8 GHz: x86 mid values (`CostTable::default`) with these changes,
/// all estimates: syscalls and switches ~20 % dearer (larger register state with
/// VSX, 2019 kernels with RFI/L1D-flush mitigations on exit); IPIs within a chip use
/// doorbells (cheap) but wakeups generally cross chips through XIVE interrupts, so
/// 2 µs; the LLC is only 10 MB per core pair, so LLC-to-LLC migration inside a socket
/// costs close to a package move; cross-socket (NUMA distance 40) refills are large.
pub(crate) fn cost_power9() -> CostTable {
    CostTable {
        context_switch: 1_200,
        mm_switch: 600,
        wakeup_local: 900,
        wakeup_remote: 1_400,
        ipi_latency_ns: 2_000,
        ipi_send: 0,
        syscall: 120,
        gtod: 35,
        pipe_write: 700,
        pipe_read: 700,
        // Fitted (docs/calibration.md) against seed 000's `perf bench sched messaging
        // -g 1 -l 100000` with 44 per-core spinners: 16.1 s. Was 1 300 each (x86
        // mid + 20 %); spec §2 x86 range 0.8–1.5 µs. 2 200 gives 15.35 s for the
        // full 100 000 loops (15.5 s extrapolated from 10 000 and 20 000). Outside the x86
        // range: POWER9 is not in §2's columns, and the run shares every core with
        // a spinner, whose cache and SMT-slice pressure the SMT throughput table
        // alone does not capture.
        unix_write: 2_200,
        unix_read: 2_200,
        pipe_remote: 0,
        unix_remote: 0,
        tcp_write_8k: 7_000,
        tcp_read_8k: 1_800,
        futex_wake: 600,
        futex_wait: 600,
        mutex_fast: 45,
        yield_: 700,
        fork: 90_000,
        clone_thread: 22_500,
        thread_start: 0,
        thread_start_arena: 0,
        exit: 40_000,
        tick: 600,
        migrate_smt: 0,
        migrate_llc: 2_000,
        migrate_package: 7_000,
        migrate_numa: 20_000,
        probe_smt: 10,
        probe_llc: 25,
        probe_remote: 70,
        balance_per_cpu: 45,
        domain_visit: 5,
    }
}

fn idle(name: &str, exit_us: u64, residency_us: u64, power_mw: f64) -> IdleState {
    IdleState {
        name: name.to_string(),
        exit_latency_ns: exit_us * 1_000,
        target_residency_ns: residency_us * 1_000,
        power_mw,
        cluster: false,
        core: false,
        kind: IdleKind::Hardware,
        disable: false,
    }
}

/// A core-level POWER9 state (lose full context: the core reaches it only when all
/// four threads request it; see [`IdleState::core`]).
fn core_idle(name: &str, exit_us: u64, residency_us: u64) -> IdleState {
    IdleState {
        core: true,
        ..idle(name, exit_us, residency_us, 0.0)
    }
}

/// The cpuidle core's polling state (`cpuidle_poll_state_init`: `POLL`, 0/0,
/// `CPUIDLE_FLAG_POLLING`), state 0 of the x86 drivers.
fn poll_idle() -> IdleState {
    IdleState {
        kind: IdleKind::Poll,
        ..idle("POLL", 0, 0, 0.0)
    }
}

/// A cluster-level state (PSCI power level 1: the cluster powers down when its last
/// CPU enters; see [`IdleState::cluster`]).
fn cluster_idle(name: &str, exit_us: u64, residency_us: u64, power_mw: f64) -> IdleState {
    IdleState {
        cluster: true,
        ..idle(name, exit_us, residency_us, power_mw)
    }
}

fn kind(name: &str, smt: usize) -> CoreKind {
    CoreKind {
        name: name.to_string(),
        smt_throughput: default_smt_throughput(smt),
        work_per_clock: Default::default(),
    }
}

fn single_opp(khz: u32) -> Vec<Opp> {
    vec![Opp {
        cluster_power_mw: 0,
        freq_khz: khz,
        power_mw: 0,
    }]
}

fn build(p: MachineParts) -> Machine {
    let name = p.name.clone();
    match Machine::new(p) {
        Ok(m) => m,
        Err(e) => panic!("built-in machine `{name}` is inconsistent: {e}"),
    }
}

/// CPU numbering of a symmetric machine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Numbering {
    /// Linux x86: all first threads (package by package), then all second threads...
    X86,
    /// Threads of a core adjacent (POWER, and [`test_topology`]).
    CoreMajor,
}

/// Shape of a symmetric machine: one package per node.
struct Sym {
    nodes: usize,
    llcs_per_node: usize,
    /// Clusters per LLC (1 = no cluster level, cluster id = LLC id).
    clusters_per_llc: usize,
    cores_per_cluster: usize,
    smt: usize,
    numbering: Numbering,
}

impl Sym {
    /// CPUs of the machine, every CPU using kind 0, idle table 0, capacity 1024 and
    /// the frequency domain of its package.
    fn cpus(&self) -> Vec<Cpu> {
        let cores_per_llc = self.clusters_per_llc * self.cores_per_cluster;
        let cores_per_node = self.llcs_per_node * cores_per_llc;
        let nr_cores = self.nodes * cores_per_node;
        let n = nr_cores * self.smt;
        let mut cpus = vec![None; n];
        for core in 0..nr_cores {
            let node = core / cores_per_node;
            let llc = core / cores_per_llc;
            let cluster = if self.clusters_per_llc == 1 {
                llc
            } else {
                core / self.cores_per_cluster
            };
            for t in 0..self.smt {
                let id = match self.numbering {
                    Numbering::X86 => t * nr_cores + core,
                    Numbering::CoreMajor => core * self.smt + t,
                };
                cpus[id] = Some(Cpu {
                    core,
                    cluster,
                    llc,
                    package: node,
                    node,
                    capacity_orig: 1024,
                    kind: 0,
                    idle_table: 0,
                    freq_domain: node,
                });
            }
        }
        cpus.into_iter()
            .map(|c| c.expect("every CPU numbered"))
            .collect()
    }

    /// One frequency domain per package, with the given OPPs.
    fn freq_domains(
        &self,
        cpus: &[Cpu],
        opps: Vec<Opp>,
        transition_latency_ns: u64,
    ) -> Vec<FreqDomain> {
        (0..self.nodes)
            .map(|p| FreqDomain {
                cluster_idle_mw: Vec::new(),
                cpus: cpus
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.package == p)
                    .map(|(i, _)| i)
                    .collect(),
                opps: opps.clone(),
                transition_latency_ns,
            })
            .collect()
    }
}

fn two_node_distance(remote: u32) -> Vec<Vec<u32>> {
    vec![vec![10, remote], vec![remote, 10]]
}

// ---------------------------------------------------------------------------------
// The presets.
// ---------------------------------------------------------------------------------

// IBM POWER9 (seed 000: "2-socket, 44 cores, 176 CPUs"), e.g. a Witherspoon/Boston
// class box running OPAL/skiboot.
// - Numbering: Linux on POWER numbers the threads of a core adjacently
//   (cpu = core * 4 + thread), socket 0's cores first.
// - LLC: on POWER9 a pair of SMT4 cores (one "fused core" / EX) shares a 512 KB L2
//   and a 10 MB L3 region. The device tree gives both cores of the pair the same
//   `l2-cache` node, so arch/powerpc/kernel/smp.c puts them in one
//   `cpu_l2_cache_mask`, detects `shared_caches` (the L2 mask is larger than the
//   thread-sibling mask) and switches to the SMT / CACHE / DIE topology with the
//   CACHE level (SD_SHARE_PKG_RESOURCES) spanning those 8 threads. So the kernel's
//   sd_llc is 8 CPUs: 22 LLCs in all. No separate cluster level (cluster = LLC).
// - NUMA: 2 nodes, SLIT-equivalent distance 10/40 (ibm,associativity reference
//   points give 40 between chips on these systems).
// - Idle: OPAL's POWER9 table in skiboot hw/slw.c (latency_ns / residency_ns, the
//   file itself calls them estimates): stop0_lite 1/10 µs, stop0 2/20 µs, stop1
//   5/50 µs, stop2 10/100 µs, stop4 100 µs / 10 ms, stop5 200 µs / 20 ms (all six
//   checked against `power9_cpu_idle_states[]` at skiboot v6.6, 0f1937ef40fc, the
//   firmware of the v5.6 era; stop8/stop11 never reach cpuidle: docs/idle-data.md).
//   stop4 and stop5 lose full context (OPAL_PM_LOSE_FULL_CONTEXT, the kernel's
//   `deep_spr_loss_state`): core-level, reached only when all four threads stop
//   (`IdleState::core`); a thread whose siblings run stays at its thread level.
//   Plus powernv-cpuidle's `snooze` state 0 (a low-priority spin that leaves after
//   the next state's target residency; not `CPUIDLE_FLAG_POLLING`). Power unknown (0).
// - Frequency: one domain per chip (powernv-cpufreq per-quad domains are finer; the
//   scheduler only sees capacity 1024), single OPP 3.8 GHz (nominal turbo of a
//   22-core part, estimate); power unknown.
fn power9_176() -> Machine {
    let s = Sym {
        nodes: 2,
        llcs_per_node: 11,
        clusters_per_llc: 1,
        cores_per_cluster: 2,
        smt: 4,
        numbering: Numbering::CoreMajor,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(3_800_000), 0);
    build(MachineParts {
        name: "power9-176".into(),
        description:
            "IBM POWER9, 2 sockets x 22 cores x SMT4 (176 CPUs); LLC = core pair (8 threads, \
                      powerpc shared_caches CACHE level); idle states from skiboot hw/slw.c"
                .into(),
        arch: Arch::Power,
        cpus,
        numa_distance: two_node_distance(40),
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("power9", 4)],
        idle_tables: vec![vec![
            IdleState {
                kind: IdleKind::Snooze,
                ..idle("snooze", 0, 0, 0.0)
            },
            idle("stop0_lite", 1, 10, 0.0),
            idle("stop0", 2, 20, 0.0),
            idle("stop1", 5, 50, 0.0),
            idle("stop2", 10, 100, 0.0),
            core_idle("stop4", 100, 10_000),
            core_idle("stop5", 200, 20_000),
        ]],
        freq_domains: fds,
        cost: cost_power9(),
    })
}

// Intel Xeon, x86 numbering (ACPI MADT lists all first threads, then all siblings).
// Idle states are the kernel's intel_idle tables (drivers/idle/intel_idle.c) as
// exposed in sysfs: state0 POLL (0/0), then C1, C1E, C6 (exit latency / target
// residency in µs). Core C3 exists in the Haswell/Broadwell tables but server BIOSes
// commonly disable it; it is left out. Power: intel_idle gives no power numbers (0).
fn xeon_sym(
    name: &str,
    description: &str,
    cores_per_socket: usize,
    freq_khz: u32,
    // (exit latency, target residency) in µs of C1, C1E, C6.
    [c1, c1e, c6]: [(u64, u64); 3],
    suffix: &str,
) -> Machine {
    let s = Sym {
        nodes: 2,
        llcs_per_node: 1,
        clusters_per_llc: 1,
        cores_per_cluster: cores_per_socket,
        smt: 2,
        numbering: Numbering::X86,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(freq_khz), 0);
    build(MachineParts {
        name: name.into(),
        description: description.into(),
        arch: Arch::X86,
        cpus,
        // Two-socket Intel SLIT: 10 local, 21 remote (typical BIOS value).
        numa_distance: two_node_distance(21),
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind(suffix, 2)],
        idle_tables: vec![vec![
            poll_idle(),
            idle(&format!("C1-{suffix}"), c1.0, c1.1, 0.0),
            idle(&format!("C1E-{suffix}"), c1e.0, c1e.1, 0.0),
            idle(&format!("C6-{suffix}"), c6.0, c6.1, 0.0),
        ]],
        freq_domains: fds,
        cost: CostTable::default(),
    })
}

// Xeon E5-2699 v4 (Broadwell-EP, 22 cores, 2.2 GHz base, 3.6 GHz turbo; Intel ARK).
// Seed 003 ran on "a x86 2 socket system with 22 cores per socket and 2 hyperthreads
// per core". intel_idle bdw_cstates: C1 2/2, C1E 10/20, C6 133/400 µs.
// x86 numbering: cpus 0-21 socket0 thread0, 22-43 socket1 thread0, 44-65 socket0
// thread1, 66-87 socket1 thread1. One LLC (55 MB L3) per socket.
fn xeon_88() -> Machine {
    xeon_sym(
        "xeon-88",
        "Intel Xeon E5-2699 v4 class (Broadwell-EP), 2 sockets x 22 cores x SMT2 (88 CPUs), \
         one LLC per socket; intel_idle BDW table",
        22,
        2_200_000,
        [(2, 2), (10, 20), (133, 400)],
        "BDW",
    )
}

// Xeon E5-2650 v3 (Haswell-EP, 10 cores, 2.3 GHz base; Intel ARK). Seed 002: "Each
// socket is 10 cores w/ SMT2 - 40 CPUs total. SD levels are {SMT, MC, NUMA}".
// intel_idle hsw_cstates: C1 2/2, C1E 10/20, C6 133/400 µs.
fn xeon_e5_40() -> Machine {
    let mut m = xeon_sym(
        "xeon-e5-40",
        "Intel Xeon E5-2650 v3 class (Haswell-EP), 2 sockets x 10 cores x SMT2 (40 CPUs), \
         one LLC per socket; intel_idle HSW table",
        10,
        2_300_000,
        [(2, 2), (10, 20), (133, 400)],
        "HSW",
    );
    m.cost = cost_xeon_e5_v3();
    m
}

/// Costs for the Haswell-EP Xeon E5-2650 v3 (2.3 GHz base) of seed 002, running a
/// 2020 kernel: Haswell is Meltdown-affected, so page-table isolation is on and every
/// system call pays the CR3 switch (spec §2's source: 0.079 µs per getppid with
/// `nopti`, 0.203 µs with PTI), and retpolines/IBPB make switches dearer. Starts from
/// [`CostTable::default`] and was fitted (docs/calibration.md) against two seed 002
/// anchors: `hackbench -l 1000` 0.946 s and `sysbench threads` with 40 threads,
/// 23 938 events in 5 s. Changed from the x86 default (old → new, spec §2 x86 range):
/// * `syscall` 100 → 200 (0.05–0.2; the PTI figure above);
/// * `unix_write`, `unix_read` 1 100 → 2 100 each (0.8–1.5; above the range: with
///   1 500 the hackbench anchor comes out 0.55 s, −42 %; hackbench time is close to
///   proportional to these two costs);
/// * `pipe_write`, `pipe_read` 600 → 900 (0.4–0.8 + PTI; not anchored);
/// * `context_switch` 1 000 → 1 500 (0.7–1.5), `mm_switch` 500 → 1 500 (0.3–1, plus
///   IBPB on a process switch), `wakeup_local` 800 → 1 200 (0.5–1.5),
///   `wakeup_remote` 1 200 → 1 800, `futex_wake`/`futex_wait` 500 → 800 (0.3–0.8),
///   `yield_` 600 → 900 (0.4–1): the sysbench anchor (40 threads on 8 mutexes, a
///   futex-bound convoy) comes out 4 % low with these values and 47 % high with
///   the default.
pub(crate) fn cost_xeon_e5_v3() -> CostTable {
    CostTable {
        context_switch: 1_500,
        mm_switch: 1_500,
        wakeup_local: 1_200,
        wakeup_remote: 1_800,
        syscall: 200,
        pipe_write: 900,
        pipe_read: 900,
        unix_write: 2_100,
        unix_read: 2_100,
        futex_wake: 800,
        futex_wait: 800,
        yield_: 900,
        ..CostTable::default()
    }
}

// Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores, 2.0 GHz base; Intel ARK).
// intel_idle spr_cstates (v5.18+): C1 1/1, C1E 2/4, C6 290/800 µs. One LLC (105 MB)
// per socket (SNC off), 2 nodes.
fn spr_224() -> Machine {
    xeon_sym(
        "spr-224",
        "Intel Xeon Platinum 8480+ (Sapphire Rapids), 2 sockets x 56 cores x SMT2 (224 CPUs), \
         one LLC per socket, SNC off; intel_idle SPR table",
        56,
        2_000_000,
        [(1, 1), (2, 4), (290, 800)],
        "SPR",
    )
}

// AMD EPYC 9654 (Zen 4 "Genoa", 96 cores, 2.4 GHz base; AMD product page): 12 CCDs,
// each one CCX of 8 cores sharing 32 MB L3 -> 12 LLCs of 16 CPUs. NPS1: 1 node.
// x86 numbering: cpus 0-95 thread0 (CCX k = cores 8k..8k+7), 96-191 thread1.
// node_reclaim_distance = 32 (arch/x86 sets it for Zen since v5.5).
// Idle: acpi_idle with the _CST AMD firmware publishes: C1 (latency 1 µs) and C2
// (18 µs); acpi_idle sets target residency = 2 x latency for C2 (C1: latency).
// These are the values commonly seen on Zen 2/3 servers; for Zen 4 an estimate.
fn epyc_192() -> Machine {
    let s = Sym {
        nodes: 1,
        llcs_per_node: 12,
        clusters_per_llc: 1,
        cores_per_cluster: 8,
        smt: 2,
        numbering: Numbering::X86,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(2_400_000), 0);
    build(MachineParts {
        name: "epyc-192".into(),
        description: "AMD EPYC 9654 class (Zen 4), 1 socket, 12 CCX x 8 cores x SMT2 (192 CPUs), \
                      NPS1, node_reclaim_distance 32; acpi_idle C1/C2 (C2 figures estimated)"
            .into(),
        arch: Arch::X86,
        cpus,
        numa_distance: vec![vec![10]],
        node_reclaim_distance: 32,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("zen4", 2)],
        idle_tables: vec![vec![
            poll_idle(),
            idle("C1", 1, 1, 0.0),
            idle("C2", 18, 36, 0.0),
        ]],
        freq_domains: fds,
        cost: CostTable::default(),
    })
}

// Synthetic (not a real machine): 4 nodes x 2 LLCs x 64 cores x SMT2 = 1024 CPUs,
// x86 numbering, Skylake-SP idle table, 2-level NUMA (16 near, 28 far; both <= the
// reclaim distance of 30, so wake-affine works everywhere). Used to measure the
// simulator's speed at NR_CPUS.
fn synthetic_1024() -> Machine {
    let s = Sym {
        nodes: 4,
        llcs_per_node: 2,
        clusters_per_llc: 1,
        cores_per_cluster: 64,
        smt: 2,
        numbering: Numbering::X86,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(2_500_000), 0);
    build(MachineParts {
        name: "synthetic-1024".into(),
        description:
            "SYNTHETIC benchmark machine, not real hardware: 4 nodes x 2 LLCs x 64 cores x SMT2 \
                      (1024 CPUs), x86 numbering, intel_idle SKX-like table"
                .into(),
        arch: Arch::X86,
        cpus,
        numa_distance: vec![
            vec![10, 16, 28, 28],
            vec![16, 10, 28, 28],
            vec![28, 28, 10, 16],
            vec![28, 28, 16, 10],
        ],
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("synthetic", 2)],
        idle_tables: vec![vec![
            poll_idle(),
            idle("C1", 2, 2, 0.0),
            idle("C1E", 10, 20, 0.0),
            idle("C6", 133, 600, 0.0),
        ]],
        freq_domains: fds,
        cost: CostTable::default(),
    })
}

// Intel Core i9-12900K class (Alder Lake-S, 8 Golden Cove P-cores x SMT2 + 8
// Gracemont E-cores; Intel ARK: P max turbo 5.2 GHz, E max turbo 3.9 GHz, 30 MB L3
// shared by all cores).
// - Numbering as Linux enumerates it on these parts: CPUs 0-15 are the P-core
//   threads with siblings adjacent (0-1, 2-3, ...), CPUs 16-23 the E-cores.
// - Clusters: each P-core has its own L2; E-cores share one L2 per module of 4
//   (CPUs 16-19, 20-23). One LLC (the ring's L3), one package, one node.
// - Capacity: x86 kernels before v6.12 report 1024 everywhere on hybrid parts (no
//   SD_ASYM_CPUCAPACITY; ITMT asym packing instead). From v6.12 intel_pstate gives
//   the scheduler capacity = HWP highest perf / the largest one × 1024. No published
//   sysfs value was found; ESTIMATE from the hybrid HWP-to-frequency scaling
//   (78 741 kHz per perf unit on ADL P-cores, 100 000 on E-cores): P 5.2 GHz -> perf
//   66, E 3.9 GHz -> perf 39, so E = 39/66 × 1024 = 605. We model that view (the
//   asymmetric one), so misfit and the asymmetric wakeup rules apply.
// - Idle: intel_idle adl_cstates (v5.19, Zhang Rui; checked): C1 1/1 (marked
//   unusable: C1E promotion is on by default, so left out), C1E 2/4, C6 220/600,
//   C8 280/800, C10 680/2000 µs (exit latency / target residency), after POLL.
//   No power numbers (0).
// - OPPs: HWP hardware P-states, no public table: one OPP at the max turbo frequency
//   per CPU type (power unknown, 0). intel_pstate has one policy per CPU; we use one
//   frequency domain per core type.
// - Costs: the x86 defaults.
fn alderlake_24() -> Machine {
    let mut cpus = Vec::new();
    for core in 0..8 {
        for _t in 0..2 {
            cpus.push(Cpu {
                core,
                cluster: core,
                llc: 0,
                package: 0,
                node: 0,
                capacity_orig: 1024,
                kind: 0,
                idle_table: 0,
                freq_domain: 0,
            });
        }
    }
    for e in 0..8 {
        cpus.push(Cpu {
            core: 8 + e,
            cluster: 8 + e / 4,
            llc: 0,
            package: 0,
            node: 0,
            capacity_orig: 605,
            kind: 1,
            idle_table: 0,
            freq_domain: 1,
        });
    }
    let adl = vec![
        poll_idle(),
        idle("C1E", 2, 4, 0.0),
        idle("C6", 220, 600, 0.0),
        idle("C8", 280, 800, 0.0),
        idle("C10", 680, 2000, 0.0),
    ];
    build(MachineParts {
        name: "alderlake-24".into(),
        description: "Intel Core i9-12900K class (Alder Lake-S): CPUs 0-15 P-cores (Golden Cove, \
                      SMT2, 1024), CPUs 16-23 E-cores (Gracemont, 2 L2 clusters of 4, 605 est.); \
                      one LLC; intel_idle ADL table"
            .into(),
        arch: Arch::X86,
        cpus,
        numa_distance: vec![vec![10]],
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("golden-cove", 2), kind("gracemont", 1)],
        idle_tables: vec![adl],
        freq_domains: vec![
            FreqDomain {
                cluster_idle_mw: Vec::new(),
                cpus: CpuMask::from_range(0, 16),
                opps: single_opp(5_200_000),
                transition_latency_ns: 0,
            },
            FreqDomain {
                cluster_idle_mw: Vec::new(),
                cpus: CpuMask::from_range(16, 24),
                opps: single_opp(3_900_000),
                transition_latency_ns: 0,
            },
        ],
        cost: CostTable::default(),
    })
}

/// A single-package, single-node Arm SoC from per-cluster descriptions.
struct ArmCluster {
    cpus: &'static [usize],
    kind: &'static str,
    capacity: u32,
    opps: Vec<Opp>,
    transition_latency_ns: u64,
    idle: Vec<IdleState>,
    /// LLC id of this cluster (clusters sharing an L3 share an LLC id).
    llc: usize,
    /// The cluster's own idle power by its shallowest CPU state (empty: not
    /// modelled); with it, every OPP's `cluster_power_mw`.
    cluster_idle_mw: Vec<f64>,
    /// The core kind's [`CoreKind::work_per_clock`].
    work_per_clock: &'static [(&'static str, u32)],
}

fn arm_soc(name: &str, description: &str, clusters: Vec<ArmCluster>, cost: CostTable) -> Machine {
    let n: usize = clusters.iter().map(|c| c.cpus.len()).sum();
    let mut cpus = vec![None; n];
    for (ci, cl) in clusters.iter().enumerate() {
        for &cpu in cl.cpus {
            cpus[cpu] = Some(Cpu {
                core: cpu,
                cluster: ci,
                llc: cl.llc,
                package: 0,
                node: 0,
                capacity_orig: cl.capacity,
                kind: ci,
                idle_table: ci,
                freq_domain: ci,
            });
        }
    }
    build(MachineParts {
        name: name.into(),
        description: description.into(),
        arch: Arch::Arm64,
        cpus: cpus
            .into_iter()
            .map(|c| c.expect("every CPU in a cluster"))
            .collect(),
        numa_distance: vec![vec![10]],
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: clusters
            .iter()
            .map(|c| CoreKind {
                work_per_clock: c
                    .work_per_clock
                    .iter()
                    .map(|&(class, r)| (class.to_string(), r))
                    .collect(),
                ..kind(c.kind, 1)
            })
            .collect(),
        idle_tables: clusters.iter().map(|c| c.idle.clone()).collect(),
        freq_domains: clusters
            .iter()
            .map(|c| FreqDomain {
                cluster_idle_mw: c.cluster_idle_mw.clone(),
                cpus: c.cpus.iter().copied().collect::<CpuMask>(),
                opps: c.opps.clone(),
                transition_latency_ns: c.transition_latency_ns,
            })
            .collect(),
        cost,
    })
}

/// `opps` with the cluster's own busy power per OPP (same order), mW.
fn with_cluster_mw(mut opps: Vec<Opp>, cluster_mw: &[u32]) -> Vec<Opp> {
    assert_eq!(opps.len(), cluster_mw.len());
    for (o, &mw) in opps.iter_mut().zip(cluster_mw) {
        o.cluster_power_mw = mw;
    }
    opps
}

fn opps_mhz_mw(table: &[(u32, u32)]) -> Vec<Opp> {
    table
        .iter()
        .map(|&(mhz, mw)| Opp {
            cluster_power_mw: 0,
            freq_khz: mhz * 1_000,
            power_mw: mw,
        })
        .collect()
}

/// OPPs from (MHz, mV) pairs and a dynamic-power-coefficient.
fn opps_dpc(dpc: u64, table: &[(u32, u32)]) -> Vec<Opp> {
    table
        .iter()
        .map(|&(mhz, mv)| Opp {
            cluster_power_mw: 0,
            freq_khz: mhz * 1_000,
            power_mw: em_power_mw(dpc, mhz as u64, mv as u64),
        })
        .collect()
}

// Arm Juno r0 (seeds 002, 004). Sources: arch/arm64/boot/dts/arm/juno.dts (cpu-map,
// capacity-dmips-mhz A57 1024 / A53 578, idle-states), LISA lisa/platforms/juno_r0.py
// and the energy model in spec/workloads.md §5.
// - Numbering: Juno r0 boots on an A53 (cpu0); the rest follow DT order: A57_0 = 1,
//   A57_1 = 2, A53_1..3 = 3..5. So CPUs 1,2 = A57, CPUs 0,3,4,5 = A53 (as LISA says).
// - Capacity: arch_topology computes 578 * 850 MHz / (1024 * 1100 MHz) * 1024 =
//   446.6 -> 446 for the A53 (what sysfs cpu_capacity shows); the A57 is 1024. The
//   EM table's capacity column (447, 1023) is the older hand-made rounding; we keep
//   the kernel's 446/1024 everywhere.
// - OPPs and per-CPU power: spec/workloads.md §5 (bogo-mW). The cluster's own power
//   (ARM-software/lisa libs/utils/platforms/juno_energy.py, 4bb8690199ab, and the
//   Android EAS juno-sched-energy.dtsi, same numbers; docs/idle-data.md): busy
//   A53 26/30/39/47/57, A57 24/32/43/49/64 per OPP; idle by the shallowest CPU state
//   (WFI, cpu-sleep-0, cluster-sleep-0) A53 56/56/17, A57 65/65/24.
// - Idle: WFI (1/1 µs, cpuidle-arm state 0), cpu-sleep-0 (juno.dts in
//   ARM-software/linux, checked: entry 300 + exit 1200 -> exit_latency 1500 µs,
//   min-residency 2000), cluster-sleep-0 (300 + 1200 -> 1500, 2500). The kernel's DT
//   idle parser sets exit_latency = entry + exit latency. (Mainline juno.dts may give
//   cluster-sleep an entry latency of 400 µs; not checked.)
//   Per-CPU idle power from §5: A53 6/0/0, A57 15/0/0.
// - LLC = cluster L2 (A57 2 MB, A53 1 MB); no L3. Frequency domain = cluster.
// - transition latency: SCPI firmware DVFS; ~500 µs is an estimate.
// - Work class `sysbench-cpu` (sysbench's prime test, bound by the integer divider):
//   reference cycles per clock A53 624, A57 724 (1024 = one reference cycle of the
//   generator's 905 122 per event a clock), i.e. A57:A53 1.50 at their top OPPs
//   where the capacities say 2.30. Fitted on seed 004's baseline ("tip") single run
//   only: the task that never left its A53 (1.7463 s for 1 000 events at 850 MHz:
//   1.484 M cycles an event) and the first to finish (1.2608 s), taken to move to an
//   A57 when the pinned hogs end at 250 of its events (1.164 ms an event at
//   1100 MHz: 1.280 M cycles). docs/calibration.md §7; the misfit arm is the check.
fn juno_r0() -> Machine {
    arm_soc(
        "juno-r0",
        "Arm Juno r0: CPUs 1-2 Cortex-A57 (1024), CPUs 0,3-5 Cortex-A53 (446); cluster = LLC = \
         freq domain; EM from LISA juno_r0 / workloads.md §5; idle states from juno.dts",
        vec![
            ArmCluster {
                cpus: &[0, 3, 4, 5],
                kind: "cortex-a53",
                capacity: 446,
                opps: with_cluster_mw(
                    opps_mhz_mw(&[(450, 33), (575, 46), (700, 61), (775, 76), (850, 93)]),
                    &[26, 30, 39, 47, 57],
                ),
                transition_latency_ns: 500_000,
                idle: vec![
                    idle("WFI", 1, 1, 6.0),
                    idle("cpu-sleep-0", 1500, 2000, 0.0),
                    cluster_idle("cluster-sleep-0", 1500, 2500, 0.0),
                ],
                llc: 0,
                cluster_idle_mw: vec![56.0, 56.0, 17.0],
                work_per_clock: &[("sysbench-cpu", 624)],
            },
            ArmCluster {
                cpus: &[1, 2],
                kind: "cortex-a57",
                capacity: 1024,
                opps: with_cluster_mw(
                    opps_mhz_mw(&[(450, 168), (625, 251), (800, 359), (950, 479), (1100, 616)]),
                    &[24, 32, 43, 49, 64],
                ),
                transition_latency_ns: 500_000,
                idle: vec![
                    idle("WFI", 1, 1, 15.0),
                    idle("cpu-sleep-0", 1500, 2000, 0.0),
                    cluster_idle("cluster-sleep-0", 1500, 2500, 0.0),
                ],
                llc: 1,
                cluster_idle_mw: vec![65.0, 65.0, 24.0],
                work_per_clock: &[("sysbench-cpu", 724)],
            },
        ],
        cost_arm_big(),
    )
}

// HiKey960 (Kirin 960; seeds 001, 004). Source: mainline arch/arm64/boot/dts/
// hisilicon/hi3660.dtsi (checked): CPUs 0-3 Cortex-A53 (capacity-dmips-mhz 592,
// dynamic-power-coefficient 110), CPUs 4-7 Cortex-A73 (1024, dpc 550); OPP tables
// (MHz/mV) A53 533/700, 999/800, 1402/900, 1709/1000, 1844/1100; A73 903/700,
// 1421/800, 1805/900, 2112/1000, 2362/1100; clock-latency-ns 300000.
// - Capacity: 592 * 1844 / 2362 = 462.2 -> 462 (A73 = 1024).
// - EM power from the kernel's dynamic-power formula C * f * V^2.
// - Idle (DT idle-states; cpuidle latency = entry + exit): A53 cpu-sleep-0 400+650 =
//   1050 / 1500 µs, cluster-sleep-0 500+1600 = 2100 / 3500; A73 cpu-sleep-1 400+550 =
//   950 / 1500, cluster-sleep-1 800+2900 = 3700 / 3500 (residency below latency is
//   what the DT says). WFI 1/1 µs. Idle power unknown (0).
// - LLC = cluster L2 (A53_L2, A73_L2 in the DT).
// - Work class `sysbench-cpu`: reference cycles per clock A53 669, A73 653 (A73:A53
//   1.65 at the lowest OPPs seed 004 ran at, 1.38 at the top ones, where the
//   capacities say 2.22), fitted as on juno-r0 on seed 004's tip single run: the task
//   that stayed on its A53 (2.5976 s at 533 MHz: 1.385 M cycles an event) and the
//   first to finish (1.7280 s: 1.573 ms an event on an A73 at 903 MHz, 1.420 M
//   cycles). docs/calibration.md §7.
fn hikey960() -> Machine {
    arm_soc(
        "hikey960",
        "HiKey960 (Kirin 960): CPUs 0-3 Cortex-A53 (462), CPUs 4-7 Cortex-A73 (1024); cluster = LLC = \
         freq domain; EM from hi3660.dtsi dynamic-power-coefficient and OPP voltages",
        vec![
            ArmCluster {
                cpus: &[0, 1, 2, 3],
                kind: "cortex-a53",
                capacity: 462,
                opps: opps_dpc(110, &[(533, 700), (999, 800), (1402, 900), (1709, 1000), (1844, 1100)]),
                transition_latency_ns: 300_000,
                idle: vec![
                    idle("WFI", 1, 1, 0.0),
                    idle("cpu-sleep-0", 1050, 1500, 0.0),
                    cluster_idle("cluster-sleep-0", 2100, 3500, 0.0),
                ],
                llc: 0,
                cluster_idle_mw: Vec::new(),
                work_per_clock: &[("sysbench-cpu", 669)],
            },
            ArmCluster {
                cpus: &[4, 5, 6, 7],
                kind: "cortex-a73",
                capacity: 1024,
                opps: opps_dpc(550, &[(903, 700), (1421, 800), (1805, 900), (2112, 1000), (2362, 1100)]),
                transition_latency_ns: 300_000,
                idle: vec![
                    idle("WFI", 1, 1, 0.0),
                    idle("cpu-sleep-1", 950, 1500, 0.0),
                    cluster_idle("cluster-sleep-1", 3700, 3500, 0.0),
                ],
                llc: 1,
                cluster_idle_mw: Vec::new(),
                work_per_clock: &[("sysbench-cpu", 653)],
            },
        ],
        cost_arm_big(),
    )
}

// Google Tensor GS101 (Pixel 6). Source: mainline arch/arm64/boot/dts/exynos/google/
// gs101.dtsi (checked): cpu-map cluster0 = CPUs 0-3 (Cortex-A55 "ananke"), cluster1 =
// 4-5 (A76 "enyo"), cluster2 = 6-7 (X1 "hera"); capacity-dmips-mhz 250 / 620 / 1024;
// dynamic-power-coefficient 70 / 284 / 650; one idle state "c2" per CPU type with
// entry+exit latency 70+160 = 230 / 340 / 455 µs and min-residency 2000 / 2500 /
// 3500 µs (plus WFI 1/1 µs).
// - Capacity with max frequencies 1803 / 2253 / 2802 MHz (Pixel 6 cpufreq tables, from
//   memory): 250*1803/2802 = 160, 620*2253/2802 = 498, 1024.
// - OPP frequencies: the Pixel 6 cpufreq tables (from memory). Voltages are NOT public
//   (ECT firmware tables): we ESTIMATE a linear ramp 600 mV at the lowest OPP to 1000
//   (A55) / 1050 (A76) / 1100 (X1) mV at the highest, so EM power is an estimate built
//   with the real dynamic-power-coefficients.
// - LLC: the DSU's 4 MB L3 is shared by all 8 CPUs (DynamIQ), so sd_llc spans the
//   chip; clusters = the DT cpu-map clusters (also the three cpufreq policies).
//   Caveat: the mainline DT has no cache nodes, so a kernel booted on it knows no
//   llc_sibling and arm64's cpu_coregroup_mask falls back to the cpu-map cluster; we
//   model the hardware (one L3), which is what kernels learning caches from
//   cacheinfo/PPTT see. Override with a machine file to study the other view.
// - transition latency: 200 µs, estimate.
// - Costs: the capacity-1024 CPU is a Cortex-X1 at 2.8 GHz, roughly x86-class for
//   kernel paths, so the x86 mid table is used with a slower IPI (2 µs, estimate).
fn pixel6() -> Machine {
    fn ramp(freqs_mhz: &[u32], max_mv: u32) -> Vec<(u32, u32)> {
        let (lo, hi) = (freqs_mhz[0], freqs_mhz[freqs_mhz.len() - 1]);
        freqs_mhz
            .iter()
            .map(|&f| (f, 600 + (max_mv - 600) * (f - lo) / (hi - lo)))
            .collect()
    }
    let a55 = [300, 574, 738, 930, 1098, 1197, 1328, 1401, 1598, 1704, 1803];
    let a76 = [
        400, 553, 696, 799, 910, 1024, 1197, 1328, 1491, 1663, 1836, 1999, 2130, 2253,
    ];
    let x1 = [
        500, 851, 984, 1106, 1277, 1426, 1582, 1745, 1826, 2048, 2188, 2252, 2401, 2507, 2630,
        2704, 2802,
    ];
    let cost = CostTable {
        ipi_latency_ns: 2_000,
        ..CostTable::default()
    };
    arm_soc(
        "pixel6",
        "Google Tensor GS101 (Pixel 6): CPUs 0-3 A55 (160), 4-5 A76 (498), 6-7 X1 (1024); DSU L3 = LLC \
         over all CPUs; EM power and idle states are estimates (voltages not public)",
        vec![
            ArmCluster {
                cpus: &[0, 1, 2, 3],
                kind: "cortex-a55",
                capacity: 160,
                opps: opps_dpc(70, &ramp(&a55, 1000)),
                transition_latency_ns: 200_000,
                idle: vec![idle("WFI", 1, 1, 0.0), idle("c2", 230, 2000, 0.0)],
                llc: 0,
                cluster_idle_mw: Vec::new(),
                work_per_clock: &[],
            },
            ArmCluster {
                cpus: &[4, 5],
                kind: "cortex-a76",
                capacity: 498,
                opps: opps_dpc(284, &ramp(&a76, 1050)),
                transition_latency_ns: 200_000,
                idle: vec![idle("WFI", 1, 1, 0.0), idle("c2", 340, 2500, 0.0)],
                llc: 0,
                cluster_idle_mw: Vec::new(),
                work_per_clock: &[],
            },
            ArmCluster {
                cpus: &[6, 7],
                kind: "cortex-x1",
                capacity: 1024,
                opps: opps_dpc(650, &ramp(&x1, 1100)),
                transition_latency_ns: 200_000,
                idle: vec![idle("WFI", 1, 1, 0.0), idle("c2", 455, 3500, 0.0)],
                llc: 0,
                cluster_idle_mw: Vec::new(),
                work_per_clock: &[],
            },
        ],
        cost,
    )
}

// Socionext SynQuacer SC2A11 (96Boards Developerbox; seed 001: "a synquacer 24
// cores"). Source: Socionext SC2A11 product brief: 24 Cortex-A53 at 1 GHz in 12
// clusters of 2, each pair sharing 256 KB L2, and a 4 MB L3 shared by all. LLC = the
// L3 (whole chip), cluster = pair. All CPUs capacity 1024. No cpufreq scaling
// (fixed 1 GHz): one domain, one OPP, power unknown. Idle states: WFI plus a
// cpu-sleep and a cluster-sleep state whose latencies are ESTIMATES (the vendor
// firmware's ACPI LPI values are not known to us).
fn synquacer_24() -> Machine {
    let s = Sym {
        nodes: 1,
        llcs_per_node: 1,
        clusters_per_llc: 12,
        cores_per_cluster: 2,
        smt: 1,
        numbering: Numbering::CoreMajor,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(1_000_000), 0);
    build(MachineParts {
        name: "synquacer-24".into(),
        description:
            "Socionext SynQuacer SC2A11: 24 Cortex-A53 @ 1 GHz, 12 clusters of 2 (shared L2), \
                      LLC = 4 MB L3 over all; idle states estimated"
                .into(),
        arch: Arch::Arm64,
        cpus,
        numa_distance: vec![vec![10]],
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("cortex-a53", 1)],
        idle_tables: vec![vec![
            idle("WFI", 1, 1, 0.0),
            idle("cpu-sleep", 300, 1000, 0.0),
            cluster_idle("cluster-sleep", 800, 3000, 0.0),
        ]],
        freq_domains: fds,
        cost: cost_arm_little(),
    })
}

// ---------------------------------------------------------------------------------
// Test helpers.
// ---------------------------------------------------------------------------------

/// A symmetric x86-like test machine: `nodes` nodes (one package each, SLIT 10 local
/// / 20 remote), each with `llcs_per_node` LLCs of `cores_per_llc` cores of `smt`
/// threads. No cluster level (cluster = LLC).
///
/// Numbering is **core-major** (siblings adjacent): `cpu = core * smt + thread`, cores
/// numbered node by node, LLC by LLC. (Real x86 presets use the x86 enumeration
/// instead; tests want contiguous, easy-to-compute masks.) Idle states: POLL, C1
/// (2/2 µs), C6 (133/600 µs). One frequency domain per node, single 2 GHz OPP.
/// Costs: `CostTable::default()` with the probe costs pinned at 13 / 32 / 77 ns
/// (SMT / LLC / remote), so hand-computed tests do not move when the x86 default
/// is recalibrated.
///
/// # Panics
/// If any count is 0 or the machine exceeds [`super::MAX_CPUS`] CPUs (a test bug).
pub fn test_topology(
    nodes: usize,
    llcs_per_node: usize,
    cores_per_llc: usize,
    smt: usize,
) -> Machine {
    assert!(
        nodes > 0 && llcs_per_node > 0 && cores_per_llc > 0 && smt > 0,
        "test_topology: zero count"
    );
    let s = Sym {
        nodes,
        llcs_per_node,
        clusters_per_llc: 1,
        cores_per_cluster: cores_per_llc,
        smt,
        numbering: Numbering::CoreMajor,
    };
    let cpus = s.cpus();
    let fds = s.freq_domains(&cpus, single_opp(2_000_000), 0);
    build(MachineParts {
        name: format!("test-{nodes}x{llcs_per_node}x{cores_per_llc}x{smt}"),
        description: "test topology (core-major numbering)".into(),
        arch: Arch::X86,
        cpus,
        numa_distance: (0..nodes)
            .map(|i| (0..nodes).map(|j| if i == j { 10 } else { 20 }).collect())
            .collect(),
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: vec![kind("test", smt)],
        idle_tables: vec![vec![
            poll_idle(),
            idle("C1", 2, 2, 0.0),
            idle("C6", 133, 600, 0.0),
        ]],
        freq_domains: fds,
        cost: CostTable {
            probe_smt: 13,
            probe_llc: 32,
            probe_remote: 77,
            ..CostTable::default()
        },
    })
}

/// A two-cluster asymmetric test machine (Arm64, 1 node): CPUs `0..little` are the
/// little cluster (capacity `little_cap`), CPUs `little..little + big` the big
/// cluster (`big_cap`), as on HiKey960. Each cluster is its own LLC and frequency
/// domain with three OPPs (1, 1.5, 2 GHz at 700/850/1000 mV) and a synthetic
/// Energy Model (dynamic-power-coefficient 100 for the little, 500 for the big).
/// Idle states: WFI (1/1 µs), cpu-sleep (150/700 µs). Costs: [`cost_arm_big`].
///
/// # Panics
/// If `big + little` is 0, exceeds [`super::MAX_CPUS`], or a capacity is outside
/// 1..=1024 (a test bug).
pub fn test_asym(big: usize, little: usize, big_cap: u32, little_cap: u32) -> Machine {
    assert!(big + little > 0, "test_asym: no CPUs");
    let volts = [(1000, 700), (1500, 850), (2000, 1000)];
    let mut cpus = Vec::new();
    let mut fds = Vec::new();
    let mut kinds = Vec::new();
    for (count, cap, name, dpc) in [
        (little, little_cap, "little", 100),
        (big, big_cap, "big", 500),
    ] {
        if count == 0 {
            continue;
        }
        let id = fds.len();
        let first = cpus.len();
        for i in 0..count {
            cpus.push(Cpu {
                core: first + i,
                cluster: id,
                llc: id,
                package: 0,
                node: 0,
                capacity_orig: cap,
                kind: id,
                idle_table: 0,
                freq_domain: id,
            });
        }
        fds.push(FreqDomain {
            cluster_idle_mw: Vec::new(),
            cpus: CpuMask::from_range(first, first + count),
            opps: opps_dpc(dpc, &volts),
            transition_latency_ns: 100_000,
        });
        kinds.push(kind(name, 1));
    }
    build(MachineParts {
        name: format!("test-asym-{little}x{little_cap}+{big}x{big_cap}"),
        description: "asymmetric test machine (littles first)".into(),
        arch: Arch::Arm64,
        cpus,
        numa_distance: vec![vec![10]],
        node_reclaim_distance: 30,
        vcpu_throughput: Vec::new(),
        vcpu_host: None,
        core_kinds: kinds,
        idle_tables: vec![vec![
            idle("WFI", 1, 1, 0.0),
            idle("cpu-sleep", 150, 700, 0.0),
        ]],
        freq_domains: fds,
        cost: cost_arm_big(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_numbering_of_xeon_88() {
        let m = preset("xeon-88").unwrap();
        assert_eq!(m.nr_cpus(), 88);
        // cpu0's sibling is cpu44; cpu22 is socket 1's first core, sibling 66.
        assert_eq!(m.smt_mask(0).to_string(), "0,44");
        assert_eq!(m.smt_mask(22).to_string(), "22,66");
        assert_eq!(m.smt_mask(87).to_string(), "43,87"); // socket1 core 21
        assert_eq!(m.llc_mask(0).to_string(), "0-21,44-65");
        assert_eq!(m.node_mask(66).to_string(), "22-43,66-87");
        assert_eq!(m.numa_distance[0][1], 21);
    }

    #[test]
    fn power_numbering_and_core_pair_llc() {
        let m = preset("power9-176").unwrap();
        assert_eq!(m.smt_mask(5).to_string(), "4-7");
        assert_eq!(m.llc_mask(5).to_string(), "0-7");
        assert_eq!(m.llc_mask(88).to_string(), "88-95");
        assert_eq!(m.node_mask(87).to_string(), "0-87");
        assert_eq!(m.smt_throughput(0, 4), 350);
        assert_eq!(m.cost, cost_power9());
    }

    #[test]
    fn epyc_ccx_masks() {
        let m = preset("epyc-192").unwrap();
        assert_eq!(m.llc_mask(9).to_string(), "8-15,104-111");
        assert_eq!(m.smt_mask(100).to_string(), "4,100");
        assert_eq!(m.node_reclaim_distance, 32);
    }

    #[test]
    fn juno_numbering_and_capacity() {
        let m = preset("juno-r0").unwrap();
        let caps: Vec<u32> = m.cpus.iter().map(|c| c.capacity_orig).collect();
        assert_eq!(caps, vec![446, 1024, 1024, 446, 446, 446]);
        assert_eq!(m.llc_mask(3).to_string(), "0,3-5");
        assert_eq!(m.llc_mask(2).to_string(), "1-2");
        assert_eq!(
            m.freq_domains[m.cpus[1].freq_domain].max_freq_khz(),
            1_100_000
        );
        // arch_topology: 578 * 850 / 1100 truncates to 446.
        assert_eq!(578 * 850 / 1100, 446);
        // cpu-sleep exit latency = entry (300) + exit (1200) µs.
        assert_eq!(m.idle_states(0)[1].exit_latency_ns, 1_500_000);
        assert!(m.freq_domains.iter().all(|fd| fd.has_energy_model()));
    }

    #[test]
    fn em_power_matches_hand_computation() {
        // 550 * 2362 MHz * (1100 mV)^2 / 1e9 = 1571.9 -> 1571.
        assert_eq!(em_power_mw(550, 2362, 1100), 1571);
        let m = preset("hikey960").unwrap();
        assert_eq!(m.freq_domains[1].opps[4].power_mw, 1571);
        assert_eq!(m.freq_domains[0].opps[0].power_mw, 28); // 110*533*0.49 = 28.7
        assert_eq!(m.cpus[0].capacity_orig, 592 * 1844 / 2362);
    }

    #[test]
    fn pixel6_capacities_follow_dmips_and_fmax() {
        let m = preset("pixel6").unwrap();
        assert_eq!(m.cpus[0].capacity_orig, 250 * 1803 / 2802);
        assert_eq!(m.cpus[4].capacity_orig, 620 * 2253 / 2802);
        assert_eq!(m.llc_mask(0).weight(), 8);
        assert_eq!(m.cluster_mask(4).to_string(), "4-5");
        for fd in &m.freq_domains {
            assert!(fd.has_energy_model());
            assert!(fd.opps.windows(2).all(|w| w[0].power_mw < w[1].power_mw));
        }
    }

    #[test]
    fn test_topology_is_core_major() {
        let m = test_topology(2, 2, 3, 2);
        assert_eq!(m.nr_cpus(), 24);
        assert_eq!(m.smt_mask(3).to_string(), "2-3");
        assert_eq!(m.llc_mask(7).to_string(), "6-11");
        assert_eq!(m.node_mask(12).to_string(), "12-23");
        assert_eq!(m.numa_distance, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(m.cpus[13].core, 6);
        let m1 = test_topology(1, 1, 4, 1);
        assert!(!m1.has_smt());
        assert_eq!(m1.llc_mask(0).weight(), 4);
    }

    #[test]
    fn test_asym_layout() {
        let m = test_asym(2, 4, 1024, 512);
        assert_eq!(m.nr_cpus(), 6);
        assert!(m.is_asymmetric());
        assert_eq!(m.cpus[3].capacity_orig, 512);
        assert_eq!(m.cpus[4].capacity_orig, 1024);
        assert_eq!(m.llc_mask(5).to_string(), "4-5");
        assert_eq!(m.freq_domains.len(), 2);
        assert!(m.freq_domains.iter().all(|fd| fd.has_energy_model()));
        let only_big = test_asym(3, 0, 1024, 1);
        assert_eq!(only_big.freq_domains.len(), 1);
        assert!(!only_big.is_asymmetric());
    }

    #[test]
    fn default_smt_curve() {
        assert_eq!(default_smt_throughput(8)[0], 1024);
        assert_eq!(default_smt_throughput(8)[1], 640);
        assert!(default_smt_throughput(8).windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn unknown_preset() {
        assert!(preset("no-such").is_none());
        for (n, _) in preset_names() {
            assert_eq!(preset(n).unwrap().name, *n);
        }
    }
}
