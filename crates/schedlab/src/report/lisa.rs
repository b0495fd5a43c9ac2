//! A machine as LISA's `PlatformInfo`: what LISA reads off a real board before it
//! judges a trace.
//!
//! LISA (Arm's Linux Integrated System Analysis) connects to a target and collects
//! a `PlatformInfo`: `/sys/devices/system/cpu/cpuN/cpu_capacity` (capacities),
//! `cpufreq/policyN/related_cpus` and `scaling_available_frequencies` (frequency
//! domains and OPPs), the kernel's `uname -r` and `/proc/config.gz`, the Energy Model
//! from debugfs, and rt-app's calibration (the ns one rt-app loop takes on each CPU).
//! Its analyses (frequency residency, capacity classes, load tracking) and its test
//! bundles (misfit, EAS behaviour, util tracking) take every platform fact from it;
//! for a simulated machine they must find the facts the model ran with, not a
//! board's. [`platform_info_yaml`] writes them in the YAML LISA loads with
//! `PlatformInfo.from_yaml_map` (the `platform-info: conf:` layout its own
//! `to_yaml_map` writes), with LISA's `!call:` tags for the typed values
//! (`KernelVersion`, `TypedKernelConfig`, the `EnergyModel` tree).
//!
//! * **Capacities** are `capacity_orig`; `writeable: false` (schedlab's capacities
//!   are fixed per machine, as on a board without a writable `cpu_capacity`).
//! * **rt-app calibration.** schedlab's `run X` is X µs of work at capacity 1024 and
//!   the highest OPP, so one loop of `NsPerLoop(p)` takes `p · 1024 / capacity_orig`
//!   ns on a CPU: that (rounded) is the CPU's calibration. LISA's `rtapp` capacities,
//!   derived from it, give back `capacity_orig` (to the rounding); its rt-app JSON
//!   carries `calibration: min(calib)` = `p`, which schedlab reads as ns per loop on
//!   the fastest CPU.
//! * **Energy model.** Per CPU, each OPP's capacity (`capacity_orig · f / f_max`, as
//!   `arch_scale_freq_capacity` scales it) and power, and each idle state's power.
//!   Where the machine has the cluster's own power (Juno r0's legacy `cluster-cost`
//!   tables), each frequency domain is a cluster node carrying it, and its
//!   cluster-level idle states form a power domain over its CPUs: the shape of LISA's
//!   own `juno_r0` platform, so `EnergyModel.estimate_from_trace` integrates what
//!   schedlab's energy meter (metrics/energy.rs) does. A machine without power
//!   figures (the x86 presets) gets no `nrg-model`.
//! * **Kernel.** `version` is the preset's release (`5.6.0` for `v5.6`); `config`
//!   holds only options the model implements (CONFIG_HZ, the governors it has,
//!   `CONFIG_ENERGY_MODEL` where there is one, SMT/MC/cluster/NUMA levels), so a
//!   LISA test that skips on a missing option skips for a real reason.

use std::fmt::Write as _;

use crate::machine::{Arch, CpuMask, Machine};
use crate::sched::features::KernelPreset;

/// What a platform file needs beyond the machine.
#[derive(Clone, Copy, Debug)]
pub struct LisaOpts<'a> {
    /// The kernel preset the traces come from.
    pub kernel: &'a KernelPreset,
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// rt-app's ns per loop on a capacity-1024 CPU at its highest OPP.
    pub rtapp_ns_per_loop: u64,
}

impl LisaOpts<'static> {
    /// Options from their names and values as a user gives them (`--kernel`,
    /// `--hz`, `--rtapp-calib`), checked.
    pub fn parse(kernel: &str, hz: u32, rtapp_ns_per_loop: u64) -> Result<Self, String> {
        let k = KernelPreset::by_name(kernel).ok_or_else(|| {
            format!("kernel {kernel:?}: no such kernel preset (`schedlab list kernels`)")
        })?;
        crate::sched::features::check_hz(hz as u64)?;
        // One loop of at most a second: `p · 1024` (the calibration of each CPU) and
        // LISA's own arithmetic stay far from overflow.
        if !(1..=MAX_RTAPP_NS_PER_LOOP).contains(&rtapp_ns_per_loop) {
            return Err(format!(
                "rt-app calibration {rtapp_ns_per_loop}: must be 1 to {MAX_RTAPP_NS_PER_LOOP} ns per loop"
            ));
        }
        Ok(LisaOpts {
            kernel: k,
            hz,
            rtapp_ns_per_loop,
        })
    }
}

/// The largest rt-app calibration accepted (ns per loop): a second.
pub const MAX_RTAPP_NS_PER_LOOP: u64 = 1_000_000_000;

/// The default rt-app calibration of a capacity-1024 CPU (ns per loop): a round
/// value, not a measurement (schedlab's `run` only rounds to whole loops of it).
pub const DEFAULT_RTAPP_NS_PER_LOOP: u64 = 100;

/// `uname -r` of a kernel preset: `v5.6` -> `5.6.0`.
pub fn kernel_release(k: &KernelPreset) -> String {
    k.release()
}

/// The rt-app calibration of each CPU (ns per loop at its highest OPP).
pub fn rtapp_calibration(m: &Machine, ns_per_loop: u64) -> Vec<u64> {
    m.cpus
        .iter()
        .map(|c| {
            let cap = (c.capacity_orig as u64).max(1);
            ns_per_loop.saturating_mul(1024).saturating_add(cap / 2) / cap
        })
        .collect()
}

fn abi(a: Arch) -> &'static str {
    match a {
        Arch::X86 => "x86_64",
        Arch::Arm64 => "arm64",
        Arch::Power => "ppc64le",
    }
}

fn cpu_list(mask: &CpuMask) -> String {
    let v: Vec<String> = mask.iter().map(|c| c.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// A YAML float: integral values without a fraction (`6`), others as Rust prints
/// them (shortest round-trip).
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The kernel options the model implements, as `(name, value)`; `y` for a bool.
fn kernel_config(m: &Machine, o: &LisaOpts) -> Vec<(String, String)> {
    let mut c: Vec<(String, String)> = Vec::new();
    let mut y = |n: &str| c.push((n.to_string(), "y".to_string()));
    y("CONFIG_SMP");
    y("CONFIG_PREEMPT_VOLUNTARY");
    y("CONFIG_SCHED_MC");
    if m.has_smt() {
        y("CONFIG_SCHED_SMT");
    }
    if o.kernel.topology_opts().cluster_level {
        y("CONFIG_SCHED_CLUSTER");
    }
    if m.nr_nodes() > 1 {
        y("CONFIG_NUMA");
    }
    y("CONFIG_CPU_FREQ");
    y("CONFIG_CPU_FREQ_GOV_PERFORMANCE");
    y("CONFIG_CPU_FREQ_GOV_POWERSAVE");
    y("CONFIG_CPU_FREQ_GOV_SCHEDUTIL");
    if (0..m.nr_cpus()).any(|c| !m.idle_states(c).is_empty()) {
        y("CONFIG_CPU_IDLE");
        y("CONFIG_CPU_IDLE_GOV_MENU");
        y("CONFIG_CPU_IDLE_GOV_TEO");
    }
    if m.has_energy_model() {
        y("CONFIG_ENERGY_MODEL");
    }
    y(&format!("CONFIG_HZ_{}", o.hz));
    c.push(("CONFIG_HZ".to_string(), o.hz.to_string()));
    c
}

/// Where the energy model has the cluster level: every domain carries cluster power,
/// and its CPUs share one idle table whose cluster states come last (the power-domain
/// tree LISA's `estimate_from_trace` walks needs them there).
fn cluster_tables(m: &Machine) -> bool {
    m.freq_domains.iter().all(|d| {
        let first = d.cpus.first().map(|c| m.cpus[c].idle_table);
        let states = first.map(|t| &m.idle_tables[t]);
        d.has_cluster_power()
            && d.cpus.iter().all(|c| Some(m.cpus[c].idle_table) == first)
            && states.is_some_and(|s| {
                s.len() == d.cluster_idle_mw.len()
                    && s.windows(2).all(|w| !w[0].cluster || w[1].cluster)
            })
    })
}

/// The `nrg-model` value: an `EnergyModel` built with LISA's `!call:` tags.
fn energy_model(m: &Machine, out: &mut String) {
    let ind = |n: usize| " ".repeat(n);
    let clustered = cluster_tables(m);
    // One CPU's node at indentation `i`.
    let cpu_node = |out: &mut String, cpu: usize, i: usize| {
        let c = &m.cpus[cpu];
        let d = &m.freq_domains[c.freq_domain];
        let max = d.max_freq_khz();
        let _ = writeln!(out, "{}!call:lisa.energy_model.EnergyModelNode", ind(i));
        let _ = writeln!(out, "{}cpu: {cpu}", ind(i + 4));
        let _ = writeln!(out, "{}active_states: !!omap", ind(i + 4));
        for opp in &d.opps {
            let scale = crate::sched::cpufreq::freq_scale_of(opp.freq_khz, max);
            let cap = (c.capacity_orig as u64 * scale) >> 10;
            let _ = writeln!(
                out,
                "{}-   {}: !call:lisa.energy_model.ActiveState {{capacity: {cap}, power: {}}}",
                ind(i + 4),
                opp.freq_khz,
                opp.power_mw
            );
        }
        let states = m.idle_states(cpu);
        if states.is_empty() {
            let _ = writeln!(out, "{}idle_states: null", ind(i + 4));
        } else {
            let _ = writeln!(out, "{}idle_states: !!omap", ind(i + 4));
            for s in states {
                let _ = writeln!(out, "{}-   {}: {}", ind(i + 4), s.name, num(s.power_mw));
            }
        }
    };
    let pd_leaf = |out: &mut String, cpu: usize, i: usize, cluster_states: bool| {
        let names: Vec<&str> = m
            .idle_states(cpu)
            .iter()
            .filter(|s| !(cluster_states && s.cluster))
            .map(|s| s.name.as_str())
            .collect();
        let _ = writeln!(
            out,
            "{}!call:lisa.energy_model.PowerDomain {{cpu: {cpu}, idle_states: [{}]}}",
            ind(i),
            names.join(", ")
        );
    };
    out.push_str("        nrg-model: !call:lisa.energy_model.EnergyModel\n");
    let _ = writeln!(
        out,
        "{}root_node: !call:lisa.energy_model.EnergyModelRoot",
        ind(12)
    );
    let _ = writeln!(out, "{}children:", ind(16));
    if clustered {
        for (i, d) in m.freq_domains.iter().enumerate() {
            let table = &m.idle_tables[m.cpus[d.cpus.first().unwrap()].idle_table];
            let _ = writeln!(
                out,
                "{}-   !call:lisa.energy_model.EnergyModelNode",
                ind(16)
            );
            let _ = writeln!(out, "{}name: cluster{i}", ind(20));
            let _ = writeln!(out, "{}active_states: !!omap", ind(20));
            for opp in &d.opps {
                let _ = writeln!(
                    out,
                    "{}-   {}: !call:lisa.energy_model.ActiveState {{power: {}}}",
                    ind(20),
                    opp.freq_khz,
                    opp.cluster_power_mw
                );
            }
            let _ = writeln!(out, "{}idle_states: !!omap", ind(20));
            for (s, p) in table.iter().zip(&d.cluster_idle_mw) {
                let _ = writeln!(out, "{}-   {}: {}", ind(20), s.name, num(*p));
            }
            let _ = writeln!(out, "{}children:", ind(20));
            for cpu in d.cpus.iter() {
                let _ = write!(out, "{}-   ", ind(20));
                let mut node = String::new();
                cpu_node(&mut node, cpu, 20);
                out.push_str(node.trim_start());
            }
        }
    } else {
        for cpu in 0..m.nr_cpus() {
            let _ = write!(out, "{}-   ", ind(16));
            let mut node = String::new();
            cpu_node(&mut node, cpu, 16);
            out.push_str(node.trim_start());
        }
    }
    let _ = writeln!(
        out,
        "{}root_power_domain: !call:lisa.energy_model.PowerDomain",
        ind(12)
    );
    let _ = writeln!(out, "{}idle_states: []", ind(16));
    let _ = writeln!(out, "{}children:", ind(16));
    if clustered {
        for d in &m.freq_domains {
            let table = &m.idle_tables[m.cpus[d.cpus.first().unwrap()].idle_table];
            let names: Vec<&str> = table
                .iter()
                .filter(|s| s.cluster)
                .map(|s| s.name.as_str())
                .collect();
            let _ = writeln!(out, "{}-   !call:lisa.energy_model.PowerDomain", ind(16));
            let _ = writeln!(out, "{}idle_states: [{}]", ind(20), names.join(", "));
            let _ = writeln!(out, "{}children:", ind(20));
            for cpu in d.cpus.iter() {
                let _ = write!(out, "{}-   ", ind(20));
                let mut leaf = String::new();
                pd_leaf(&mut leaf, cpu, 0, true);
                out.push_str(&leaf);
            }
        }
    } else {
        for cpu in 0..m.nr_cpus() {
            let _ = write!(out, "{}-   ", ind(16));
            let mut leaf = String::new();
            pd_leaf(&mut leaf, cpu, 0, false);
            out.push_str(&leaf);
        }
    }
    let _ = writeln!(out, "{}freq_domains:", ind(12));
    for d in &m.freq_domains {
        let _ = writeln!(out, "{}-   {}", ind(12), cpu_list(&d.cpus));
    }
}

/// The machine as a LISA `PlatformInfo` YAML file.
pub fn platform_info_yaml(m: &Machine, o: &LisaOpts) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# LISA PlatformInfo of schedlab's `{}` under kernel preset {} (CONFIG_HZ={}).\n\
         # Load with lisa.platforms.platinfo.PlatformInfo.from_yaml_map(path).",
        m.name, o.kernel.name, o.hz
    );
    s.push_str("platform-info:\n    conf:\n");
    let _ = writeln!(s, "        name: {}", m.name);
    let _ = writeln!(s, "        abi: {}", abi(m.arch));
    s.push_str("        os: linux\n");
    let _ = writeln!(s, "        cpus-count: {}", m.nr_cpus());
    let _ = writeln!(s, "        numa-nodes-count: {}", m.nr_nodes());
    s.push_str("        kernel:\n");
    let _ = writeln!(
        s,
        "            version: !call:devlib.target.KernelVersion {{version_string: '{} #1 SMP schedlab'}}",
        kernel_release(o.kernel)
    );
    s.push_str("            config: !call:devlib.target.TypedKernelConfig\n");
    s.push_str("                mapping:\n");
    for (k, v) in kernel_config(m, o) {
        if v == "y" {
            let _ = writeln!(
                s,
                "                    {k}: !call:devlib.target.KernelConfigTristate {{value: y}}"
            );
        } else {
            let _ = writeln!(s, "                    {k}: {v}");
        }
    }
    s.push_str("        rtapp:\n            calib:\n");
    for (cpu, c) in rtapp_calibration(m, o.rtapp_ns_per_loop).iter().enumerate() {
        let _ = writeln!(s, "                {cpu}: {c}");
    }
    s.push_str("        cpu-capacities:\n            writeable: false\n            orig:\n");
    for (cpu, c) in m.cpus.iter().enumerate() {
        let _ = writeln!(s, "                {cpu}: {}", c.capacity_orig);
    }
    if !m.freq_domains.is_empty() {
        s.push_str("        freq-domains:\n");
        for d in &m.freq_domains {
            let _ = writeln!(s, "        -   {}", cpu_list(&d.cpus));
        }
        s.push_str("        freqs:\n");
        for (cpu, c) in m.cpus.iter().enumerate() {
            let d = &m.freq_domains[c.freq_domain];
            let f: Vec<String> = d.opps.iter().map(|o| o.freq_khz.to_string()).collect();
            let _ = writeln!(s, "            {cpu}: [{}]", f.join(", "));
        }
    }
    if m.has_energy_model() {
        energy_model(m, &mut s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    fn opts() -> LisaOpts<'static> {
        LisaOpts {
            kernel: KernelPreset::by_name("v5.6").unwrap(),
            hz: 250,
            rtapp_ns_per_loop: 100,
        }
    }

    #[test]
    fn releases_have_three_parts() {
        let r = |n| kernel_release(KernelPreset::by_name(n).unwrap());
        assert_eq!(r("v5.6"), "5.6.0");
        assert_eq!(r("v6.12"), "6.12.0");
    }

    #[test]
    fn calibration_scales_with_capacity() {
        let m = presets::preset("juno-r0").unwrap();
        // 100 · 1024 / 446 = 229.6 on the A53s; 100 on the A57s.
        assert_eq!(
            rtapp_calibration(&m, 100),
            vec![230, 100, 100, 230, 230, 230]
        );
    }

    #[test]
    fn juno_has_the_cluster_level_and_x86_no_model() {
        let juno = presets::preset("juno-r0").unwrap();
        let y = platform_info_yaml(&juno, &opts());
        assert!(y.contains("name: cluster1"), "{y}");
        // The A57 at 625 MHz: 1024 · (625000 · 1024 / 1100000) >> 10 = 581.
        assert!(
            y.contains("625000: !call:lisa.energy_model.ActiveState {capacity: 581, power: 251}")
        );
        assert!(y.contains("CONFIG_ENERGY_MODEL"));
        assert!(y.contains("idle_states: [cluster-sleep-0]"));
        let x = presets::preset("xeon-e5-40").unwrap();
        let y = platform_info_yaml(&x, &opts());
        assert!(!y.contains("nrg-model") && !y.contains("CONFIG_ENERGY_MODEL"));
        assert!(y.contains("CONFIG_SCHED_SMT"));
    }
}
