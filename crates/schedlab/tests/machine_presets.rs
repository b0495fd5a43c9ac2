//! Every preset is a valid machine with the facts its sources give; machine files
//! and the documented example parse; the host imports.

use std::collections::BTreeSet;
use std::path::Path;

use schedlab::machine::file::{machine_to_toml, parse_machine_toml};
use schedlab::machine::presets::{preset, preset_names, test_topology};
use schedlab::machine::sysfs::import_host;
use schedlab::machine::{Arch, Machine};

/// Number of distinct masks a level has over all CPUs.
fn count(m: &Machine, f: impl Fn(&Machine, usize) -> String) -> usize {
    (0..m.nr_cpus())
        .map(|c| f(m, c))
        .collect::<BTreeSet<_>>()
        .len()
}

#[test]
fn every_preset_has_its_documented_shape() {
    // name, arch, CPUs, SMT width, clusters, LLCs, packages, nodes, capacities, idle states of cpu0
    #[allow(clippy::type_complexity)]
    #[rustfmt::skip]
    let facts: &[(&str, Arch, usize, usize, usize, usize, usize, usize, &[u32], usize)] = &[
        ("power9-176", Arch::Power, 176, 4, 22, 22, 2, 2, &[1024], 7),
        ("xeon-88", Arch::X86, 88, 2, 2, 2, 2, 2, &[1024], 4),
        ("xeon-e5-40", Arch::X86, 40, 2, 2, 2, 2, 2, &[1024], 4),
        ("juno-r0", Arch::Arm64, 6, 1, 2, 2, 1, 1, &[446, 1024], 3),
        ("hikey960", Arch::Arm64, 8, 1, 2, 2, 1, 1, &[462, 1024], 3),
        ("synquacer-24", Arch::Arm64, 24, 1, 12, 1, 1, 1, &[1024], 3),
        ("epyc-192", Arch::X86, 192, 2, 12, 12, 1, 1, &[1024], 3),
        ("spr-224", Arch::X86, 224, 2, 2, 2, 2, 2, &[1024], 4),
        ("pixel6", Arch::Arm64, 8, 1, 3, 1, 1, 1, &[160, 498, 1024], 2),
        ("synthetic-1024", Arch::X86, 1024, 2, 8, 8, 4, 4, &[1024], 4),
        // Hybrid: the SMT width is the P-cores' (E-cores: 1, checked below).
        ("alderlake-24", Arch::X86, 24, 2, 10, 1, 1, 1, &[605, 1024], 5),
    ];
    assert_eq!(
        facts.len(),
        preset_names().len(),
        "every preset has a facts row"
    );
    for &(name, arch, cpus, smt, clusters, llcs, packages, nodes, caps, idle) in facts {
        let m = preset(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(m.arch, arch, "{name}");
        assert_eq!(m.nr_cpus(), cpus, "{name}");
        let hybrid = name == "alderlake-24";
        assert!(
            (0..cpus).all(|c| m.smt_mask(c).weight() == smt
                || (hybrid && m.cpus[c].capacity_orig < 1024 && m.smt_mask(c).weight() == 1)),
            "{name}: SMT width"
        );
        assert_eq!(
            count(&m, |m, c| m.cluster_mask(c).to_string()),
            clusters,
            "{name}: clusters"
        );
        assert_eq!(
            count(&m, |m, c| m.llc_mask(c).to_string()),
            llcs,
            "{name}: LLCs"
        );
        assert_eq!(
            count(&m, |m, c| m.package_mask(c).to_string()),
            packages,
            "{name}: packages"
        );
        assert_eq!(m.nr_nodes(), nodes, "{name}: nodes");
        let got: BTreeSet<u32> = m.cpus.iter().map(|c| c.capacity_orig).collect();
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            caps,
            "{name}: capacities"
        );
        assert_eq!(m.idle_states(0).len(), idle, "{name}: idle states");
        // The biggest CPU is normalised to 1024, as arch_topology does.
        assert_eq!(
            m.cpus.iter().map(|c| c.capacity_orig).max(),
            Some(1024),
            "{name}"
        );
        // Every CPU's frequency domain has an OPP; EM either complete or absent.
        for fd in &m.freq_domains {
            assert!(!fd.opps.is_empty());
            assert!(
                fd.opps.iter().all(|o| o.power_mw > 0) || fd.opps.iter().all(|o| o.power_mw == 0)
            );
        }
        // Idle tables: state 0 is the shallowest; residency >= exit latency except
        // where a DT says otherwise (none of the presets' shallow states).
        assert!(m.idle_states(0)[0].exit_latency_ns <= 1_000, "{name}");
        // Exported and re-imported, the machine is the same (masks included).
        let back = parse_machine_toml(&machine_to_toml(&m), Path::new("rt.toml")).unwrap();
        for c in 0..cpus {
            assert_eq!(back.smt_mask(c), m.smt_mask(c));
            assert_eq!(back.llc_mask(c), m.llc_mask(c));
            assert_eq!(back.node_mask(c), m.node_mask(c));
        }
    }
}

#[test]
fn numbering_follows_the_architecture() {
    for (name, _) in preset_names() {
        let m = preset(name).unwrap();
        let n = m.nr_cpus();
        let smt = m.smt_mask(0).weight();
        if smt == 1 {
            continue;
        }
        // x86 hybrids (Alder Lake) enumerate the P-core threads in sibling pairs,
        // then the single-threaded E-cores.
        let hybrid = (0..n).any(|c| m.smt_mask(c).weight() != smt);
        for c in 0..n {
            if hybrid && m.smt_mask(c).weight() == 1 {
                continue;
            }
            let expect: Vec<usize> = match m.arch {
                Arch::X86 if hybrid => (0..smt).map(|k| c / smt * smt + k).collect(),
                // x86: sibling k of cpu c (thread 0) is c + k * n / smt.
                Arch::X86 => (0..smt).map(|k| c % (n / smt) + k * (n / smt)).collect(),
                // POWER: siblings adjacent.
                _ => (0..smt).map(|k| c / smt * smt + k).collect(),
            };
            assert_eq!(
                m.smt_mask(c).iter().collect::<Vec<_>>(),
                expect,
                "{name} cpu{c}"
            );
        }
    }
}

#[test]
fn documented_example_parses() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/machine-file.md"),
    )
    .unwrap();
    let start = doc
        .find("```toml\n")
        .expect("a toml example in docs/machine-file.md")
        + 8;
    let len = doc[start..].find("```").unwrap();
    let m =
        parse_machine_toml(&doc[start..start + len], Path::new("docs/machine-file.md")).unwrap();
    assert_eq!(m.name, "juno-like");
    assert_eq!(m.nr_cpus(), 6);
    assert_eq!(m.cpus[1].capacity_orig, 1024);
    assert_eq!(m.cpus[0].capacity_orig, 446);
    assert_eq!(m.llc_mask(0).to_string(), "0,3-5");
    assert_eq!(m.idle_states(1)[1].exit_latency_ns, 1_500_000);
    assert!(m.freq_domains.iter().all(|fd| fd.has_energy_model()));
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/juno-like.toml"),
    )
    .unwrap();
    assert_eq!(
        fixture,
        doc[start..start + len],
        "tests/data/juno-like.toml mirrors the documented example"
    );
}

#[test]
fn host_imports_and_round_trips() {
    let m = import_host().unwrap();
    assert!(m.nr_cpus() >= 1);
    let text = machine_to_toml(&m);
    let back = parse_machine_toml(&text, Path::new("host.toml")).unwrap();
    assert_eq!(back.cpus, m.cpus);
    assert_eq!(back.idle_tables, m.idle_tables);
}

/// Write the sysfs files Linux would show for `m` under `root`.
fn write_sysfs(m: &Machine, root: &Path) {
    use std::fs;
    let put = |rel: String, text: String| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text + "\n").unwrap();
    };
    let cpu = "sys/devices/system/cpu";
    put(format!("{cpu}/online"), m.all_cpus().to_string());
    put(
        "proc/cpuinfo".into(),
        match m.arch {
            Arch::X86 => "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6".into(),
            Arch::Arm64 => "processor\t: 0\nCPU implementer\t: 0x41".into(),
            Arch::Power => "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported".into(),
        },
    );
    for c in 0..m.nr_cpus() {
        let d = format!("{cpu}/cpu{c}");
        put(
            format!("{d}/topology/core_cpus_list"),
            m.smt_mask(c).to_string(),
        );
        put(
            format!("{d}/topology/cluster_cpus_list"),
            m.cluster_mask(c).to_string(),
        );
        put(
            format!("{d}/topology/package_cpus_list"),
            m.package_mask(c).to_string(),
        );
        put(format!("{d}/cache/index0/level"), "1".into());
        put(format!("{d}/cache/index0/type"), "Data".into());
        put(
            format!("{d}/cache/index0/shared_cpu_list"),
            m.smt_mask(c).to_string(),
        );
        put(format!("{d}/cache/index3/level"), "3".into());
        put(format!("{d}/cache/index3/type"), "Unified".into());
        put(
            format!("{d}/cache/index3/shared_cpu_list"),
            m.llc_mask(c).to_string(),
        );
        // arm64, and x86 hybrids from v6.12 (intel_pstate sets the capacities).
        if m.arch == Arch::Arm64 || m.cpus.iter().any(|c| c.capacity_orig != 1024) {
            put(
                format!("{d}/cpu_capacity"),
                m.cpus[c].capacity_orig.to_string(),
            );
        }
        for (k, s) in m.idle_states(c).iter().enumerate() {
            put(format!("{d}/cpuidle/state{k}/name"), s.name.clone());
            put(
                format!("{d}/cpuidle/state{k}/latency"),
                (s.exit_latency_ns / 1000).to_string(),
            );
            put(
                format!("{d}/cpuidle/state{k}/residency"),
                (s.target_residency_ns / 1000).to_string(),
            );
            put(
                format!("{d}/cpuidle/state{k}/power"),
                (s.power_mw as u64).to_string(),
            );
            // The cpuidle core names its polling state's description so.
            let desc = if s.is_polling() {
                "CPUIDLE CORE POLL IDLE".to_string()
            } else {
                s.name.clone()
            };
            put(format!("{d}/cpuidle/state{k}/desc"), desc);
            put(
                format!("{d}/cpuidle/state{k}/disable"),
                u8::from(s.disable).to_string(),
            );
        }
    }
    for (i, fd) in m.freq_domains.iter().enumerate() {
        let d = format!("{cpu}/cpufreq/policy{i}");
        let related: Vec<String> = fd.cpus.iter().map(|c| c.to_string()).collect();
        put(format!("{d}/related_cpus"), related.join(" "));
        // acpi-cpufreq prints the table descending.
        let freqs: Vec<String> = fd
            .opps
            .iter()
            .rev()
            .map(|o| o.freq_khz.to_string())
            .collect();
        put(
            format!("{d}/scaling_available_frequencies"),
            freqs.join(" "),
        );
        put(
            format!("{d}/cpuinfo_transition_latency"),
            fd.transition_latency_ns.to_string(),
        );
    }
    let node = "sys/devices/system/node";
    for (k, row) in m.numa_distance.iter().enumerate() {
        let cpus: schedlab::machine::CpuMask =
            (0..m.nr_cpus()).filter(|&c| m.cpus[c].node == k).collect();
        put(format!("{node}/node{k}/cpulist"), cpus.to_string());
        let r: Vec<String> = row.iter().map(|d| d.to_string()).collect();
        put(format!("{node}/node{k}/distance"), r.join(" "));
    }
}

/// Differential test: a preset written out as sysfs and imported back keeps every
/// mask, capacity, idle state, frequency domain and distance.
#[test]
fn presets_survive_a_sysfs_round_trip() {
    // Only machines of <= 40 CPUs: creating small files costs ~2 ms each on these
    // VMs. The larger presets' numbering schemes are represented by xeon-e5-40 (x86,
    // 2 nodes) and a core-major SMT4 test topology (POWER-style).
    let mut machines: Vec<Machine> = preset_names()
        .iter()
        .filter_map(|(n, _)| preset(n))
        .filter(|m| m.nr_cpus() <= 40)
        .collect();
    machines.push(test_topology(2, 2, 2, 4));
    assert!(machines.len() >= 6);
    for m in machines {
        let name = m.name.clone();
        let root = std::env::temp_dir().join(format!("schedlab-rt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        write_sysfs(&m, &root);
        let got = schedlab::machine::sysfs::import_sysfs_with_arch(&root, Arch::X86);
        let _ = std::fs::remove_dir_all(&root);
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.arch, m.arch, "{name}");
        assert_eq!(got.nr_cpus(), m.nr_cpus(), "{name}");
        assert_eq!(got.numa_distance, m.numa_distance, "{name}");
        for c in 0..m.nr_cpus() {
            assert_eq!(got.smt_mask(c), m.smt_mask(c), "{name} cpu{c} smt");
            assert_eq!(
                got.cluster_mask(c),
                m.cluster_mask(c),
                "{name} cpu{c} cluster"
            );
            assert_eq!(got.llc_mask(c), m.llc_mask(c), "{name} cpu{c} llc");
            assert_eq!(
                got.package_mask(c),
                m.package_mask(c),
                "{name} cpu{c} package"
            );
            assert_eq!(got.node_mask(c), m.node_mask(c), "{name} cpu{c} node");
            assert_eq!(
                got.cpus[c].capacity_orig, m.cpus[c].capacity_orig,
                "{name} cpu{c}"
            );
            // sysfs does not tell a cluster- or core-level state from a CPU one
            // (only the firmware's tables do): the import has every state per CPU.
            let want: Vec<_> = m
                .idle_states(c)
                .iter()
                .map(|s| schedlab::machine::IdleState {
                    cluster: false,
                    core: false,
                    ..s.clone()
                })
                .collect();
            assert_eq!(got.idle_states(c), &want[..], "{name} cpu{c} idle");
            assert!(got.idle_states(c).iter().all(|s| s.coupling().is_none()));
            let (a, b) = (
                &got.freq_domains[got.cpus[c].freq_domain],
                &m.freq_domains[m.cpus[c].freq_domain],
            );
            assert_eq!(a.cpus, b.cpus, "{name} cpu{c} freq domain");
            let fa: Vec<u32> = a.opps.iter().map(|o| o.freq_khz).collect();
            let fb: Vec<u32> = b.opps.iter().map(|o| o.freq_khz).collect();
            assert_eq!(fa, fb, "{name} cpu{c} OPPs");
            assert_eq!(a.transition_latency_ns, b.transition_latency_ns, "{name}");
        }
        assert_eq!(got.has_smt(), m.has_smt());
        assert_eq!(
            got.node_reclaim_distance, 30,
            "GenuineIntel/Arm/POWER cpuinfo"
        );
    }
}
