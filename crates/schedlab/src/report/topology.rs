//! The `schedlab topology` page: a machine's CPUs, frequency domains and the
//! sched domains v5.6 builds on it, as text.
//!
//! Before a placement result means anything, the engineer checks the machine: which
//! CPUs share a core, an LLC, a package; what each CPU's `capacity_orig` and idle
//! states are; and which domain levels `build_sched_domains` keeps, with their
//! flags, spans, groups and balance intervals. This page prints all of it in the
//! kernel's words (`/proc/schedstat`-style domain names, `SD_*` flags).

use crate::machine::Machine;
use crate::sched::topology::{SchedTopology, TopologyOpts};

/// The machine and its v5.6 sched domains.
pub fn topology_text(m: &Machine) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "machine {} ({:?}, {} CPUs, {} NUMA nodes)",
        m.name,
        m.arch,
        m.nr_cpus(),
        m.nr_nodes()
    );
    if !m.description.is_empty() {
        let _ = writeln!(s, "  {}", m.description.replace('\n', "\n  "));
    }
    let _ = writeln!(
        s,
        "\n{:>4} {:>5} {:>7} {:>4} {:>4} {:>4} {:>8} {:>6} {:<10} idle states",
        "cpu", "core", "cluster", "llc", "pkg", "node", "capacity", "freqd", "kind"
    );
    for (i, c) in m.cpus.iter().enumerate() {
        let states: Vec<String> = m
            .idle_states(i)
            .iter()
            .map(|st| {
                format!(
                    "{}({}us/{}us{})",
                    st.name,
                    st.exit_latency_ns / 1000,
                    st.target_residency_ns / 1000,
                    if st.cluster { ", cluster" } else { "" }
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "{:>4} {:>5} {:>7} {:>4} {:>4} {:>4} {:>8} {:>6} {:<10} {}",
            i,
            c.core,
            c.cluster,
            c.llc,
            c.package,
            c.node,
            c.capacity_orig,
            c.freq_domain,
            m.core_kinds[c.kind].name,
            states.join(" ")
        );
    }
    for (d, fd) in m.freq_domains.iter().enumerate() {
        let opps: Vec<String> = fd
            .opps
            .iter()
            .map(|o| format!("{}MHz/{}mW", o.freq_khz / 1000, o.power_mw))
            .collect();
        let _ = writeln!(
            s,
            "freq domain {d}: cpus {} opps {}",
            fd.cpus,
            opps.join(" ")
        );
    }
    let topo = SchedTopology::build(m, &TopologyOpts::v5_6());
    let _ = writeln!(s, "\nsched domains (v5.6):\n{}", topo.render(m));
    s
}
