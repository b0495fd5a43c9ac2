//! The guest machine: which topologies a QEMU x86 guest can have, and the QEMU
//! command line that builds one.
//!
//! QEMU describes an x86 guest's CPUs with `-smp N,sockets=S,cores=C,threads=T`: every
//! socket has the same number of cores and every core the same number of threads,
//! and it numbers the vCPUs socket-major, then core, then thread, so vCPU
//! `(s·C + c)·T + t` is thread `t` of core `c` of socket `s` (the APIC ids follow the
//! same order, and the guest kernel numbers its CPUs in APIC order). The CPU model
//! (`-cpu Haswell-v4`) reports, through CPUID leaf 4, an L1/L2 per core and one L3
//! shared by the whole socket, so the guest's LLC — and `sd_llc`, the MC domain — is
//! always the socket. Every vCPU has the same capacity; there are no clusters.
//!
//! NUMA comes from `-numa node,nodeid=K,cpus=...,memdev=mK` (one RAM backend per node,
//! the guest memory split between them) and `-numa dist,src=A,dst=B,val=D` (the ACPI
//! SLIT: 10 on the diagonal, 11..=255 elsewhere). QEMU accepts any CPU set per node,
//! but a node that cuts through a socket would cut through its L3, which the guest
//! kernel resolves by breaking the LLC at the node boundary (and a warning) — not a
//! machine schedlab models faithfully. So here a node is a run of whole sockets, and
//! nodes follow each other in socket order; the guest kernel then numbers its nodes
//! as QEMU does (the SRAT's proximity domains, met in vCPU order).
//!
//! A [`crate::machine::Machine`] that fits these rules maps onto a guest by
//! [`GuestTopology::from_machine`]; its CPUs need not be numbered as QEMU numbers them
//! — the mapping from machine CPU to guest vCPU is kept in
//! [`GuestTopology::cpu_map`]. A topology can also be named directly with the compact
//! spec of [`GuestTopology::parse`]. Under TCG (no KVM) on a small host a guest of more
//! than [`DEFAULT_MAX_VCPUS`] vCPUs boots and runs too slowly to be useful; see
//! `GuestTopology::check_size`.

use std::path::Path;

use crate::machine::Machine;

/// The QEMU binary the command line is for.
pub const QEMU_BIN: &str = "qemu-system-x86_64";

/// Guests larger than this are refused unless the caller raises the limit: under
/// TCG on a 2-core host, 16 vCPUs already take minutes to boot.
pub const DEFAULT_MAX_VCPUS: usize = 32;

/// The kernel command line every guest gets (before the caller's additions):
/// console on the first serial port, reboot (→ QEMU exits, `-no-reboot`) on panic,
/// no automatic NUMA balancing and no autogroup (schedlab models neither), and
/// `sched_verbose` (6.x publishes the sched domains in debugfs only then).
pub const BASE_APPEND: &str =
    "console=ttyS0 panic=-1 quiet numa_balancing=disable noautogroup sched_verbose";

/// How TCG runs the vCPUs: one host thread for all (`single`, slow but robust), or
/// one host thread per vCPU (`multi`, faster to boot; see the guest runner's retry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccelThreads {
    Single,
    Multi,
}

impl AccelThreads {
    pub fn as_str(self) -> &'static str {
        match self {
            AccelThreads::Single => "single",
            AccelThreads::Multi => "multi",
        }
    }
    /// "single" | "multi".
    pub fn parse(s: &str) -> Result<AccelThreads, String> {
        match s {
            "single" => Ok(AccelThreads::Single),
            "multi" => Ok(AccelThreads::Multi),
            _ => Err(format!(
                "TCG thread mode `{s}`: expected `single` or `multi`"
            )),
        }
    }
}

/// A guest topology QEMU's `-smp` / `-numa` can build.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GuestTopology {
    pub sockets: usize,
    /// Cores per socket.
    pub cores: usize,
    /// Threads per core.
    pub threads: usize,
    /// Sockets per node, node by node (nodes are runs of whole sockets, in order);
    /// their sum is `sockets`.
    pub node_sockets: Vec<usize>,
    /// SLIT distances, node × node.
    pub distances: Vec<Vec<u32>>,
    /// Machine CPU → guest vCPU (the identity for a parsed spec).
    pub cpu_map: Vec<usize>,
}

fn default_distances(n: usize) -> Vec<Vec<u32>> {
    (0..n)
        .map(|a| (0..n).map(|b| if a == b { 10 } else { 20 }).collect())
        .collect()
}

/// `0-3,8-11` from a sorted list of CPUs.
fn cpulist(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

impl GuestTopology {
    /// A topology from a compact spec:
    ///
    /// `<S>s<C>c[<T>t][:nodes=<N>|<a>+<b>+...][:dist=<d>,<d>,...]`
    ///
    /// - `S` sockets of `C` cores of `T` threads (`T` defaults to 1): `1s4c2t` is one
    ///   socket of four 2-thread cores (8 vCPUs), `2s4c2t` 16 vCPUs.
    /// - `nodes=N` splits the sockets into `N` NUMA nodes of `S/N` whole sockets each
    ///   (`N` must divide `S`; default 1); `nodes=1+2` gives the sockets per node
    ///   (node 0: socket 0, node 1: sockets 1 and 2; they must add up to `S`).
    /// - `dist=` gives the SLIT: either the `N·N` matrix row by row, or the
    ///   `N(N−1)/2` distances above the diagonal row by row (then symmetric), e.g. for
    ///   4 nodes `dist=20,30,30,20,30,20` means d(0,1)=20, d(0,2)=30, d(0,3)=30,
    ///   d(1,2)=20, d(1,3)=30, d(2,3)=20. Default: 10 local, 20 remote.
    pub fn parse(spec: &str) -> Result<GuestTopology, String> {
        let bad = |why: String| format!("guest topology `{spec}`: {why}");
        let mut parts = spec.trim().split(':');
        let shape = parts.next().unwrap_or("");
        let (mut sockets, mut cores, mut threads) = (None, None, None);
        let mut num = String::new();
        for ch in shape.chars() {
            if ch.is_ascii_digit() {
                num.push(ch);
                continue;
            }
            let slot = match ch {
                's' => &mut sockets,
                'c' => &mut cores,
                't' => &mut threads,
                _ => return Err(bad(format!("unexpected `{ch}` (expected e.g. `2s4c2t`)"))),
            };
            if slot.is_some() || num.is_empty() {
                return Err(bad(format!(
                    "`{ch}` needs one count before it (expected e.g. `2s4c2t`)"
                )));
            }
            let v: usize = num
                .parse()
                .map_err(|_| bad(format!("count `{num}` too large")))?;
            if v == 0 {
                return Err(bad(format!("zero count before `{ch}`")));
            }
            *slot = Some(v);
            num.clear();
        }
        if !num.is_empty() {
            return Err(bad(format!(
                "count `{num}` without a unit (s, c or t) after it"
            )));
        }
        let (Some(sockets), Some(cores)) = (sockets, cores) else {
            return Err(bad(
                "needs sockets and cores, e.g. `1s4c2t` (threads optional)".into(),
            ));
        };
        let threads = threads.unwrap_or(1);
        let mut node_sockets = vec![sockets];
        let mut dist: Option<Vec<u32>> = None;
        for p in parts {
            if let Some(v) = p.strip_prefix("nodes=") {
                let counts: Option<Vec<usize>> = v
                    .split('+')
                    .map(|w| w.trim().parse().ok().filter(|&n: &usize| n > 0))
                    .collect();
                let counts = counts.ok_or_else(|| {
                    bad(format!(
                        "`nodes={v}`: expected a positive number, or sockets per node as `1+2`"
                    ))
                })?;
                node_sockets = if counts.len() == 1 {
                    let nodes = counts[0];
                    if sockets % nodes != 0 {
                        return Err(bad(format!(
                            "{nodes} nodes do not divide {sockets} sockets (a node is a run of whole sockets: QEMU x86 guests share the L3 per socket)"
                        )));
                    }
                    vec![sockets / nodes; nodes]
                } else {
                    if counts.iter().sum::<usize>() != sockets {
                        return Err(bad(format!(
                            "`nodes={v}` adds up to {} sockets, not {sockets}",
                            counts.iter().sum::<usize>()
                        )));
                    }
                    counts
                };
            } else if let Some(v) = p.strip_prefix("dist=") {
                dist = Some(
                    v.split(',')
                        .map(|w| w.trim().parse::<u32>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| {
                            bad(format!("`dist={v}`: expected numbers separated by commas"))
                        })?,
                );
            } else {
                return Err(bad(format!(
                    "unknown option `{p}` (expected `nodes=N` or `dist=...`)"
                )));
            }
        }
        let nodes = node_sockets.len();
        let distances = match dist {
            None => default_distances(nodes),
            Some(d) if d.len() == nodes * nodes => d.chunks(nodes).map(|r| r.to_vec()).collect(),
            Some(d) if d.len() == nodes * (nodes - 1) / 2 => {
                let mut m = default_distances(nodes);
                let pairs = (0..nodes).flat_map(|a| (a + 1..nodes).map(move |b| (a, b)));
                for ((a, b), v) in pairs.zip(d) {
                    m[a][b] = v;
                    m[b][a] = v;
                }
                m
            }
            Some(d) => {
                return Err(bad(format!(
                    "`dist=` has {} values; {nodes} nodes need {} (full matrix) or {} (above the diagonal)",
                    d.len(),
                    nodes * nodes,
                    nodes * (nodes - 1) / 2
                )))
            }
        };
        let n = sockets * cores * threads;
        let t = GuestTopology {
            sockets,
            cores,
            threads,
            node_sockets,
            distances,
            cpu_map: (0..n).collect(),
        };
        t.check_distances().map_err(bad)?;
        Ok(t)
    }

    /// The guest of `m`'s topology, or why QEMU cannot build it.
    pub fn from_machine(m: &Machine) -> Result<GuestTopology, String> {
        let name = &m.name;
        let n = m.nr_cpus();
        let refuse = |why: String| format!("machine `{name}` cannot be a QEMU x86 guest: {why}");
        if m.is_asymmetric() {
            return Err(refuse(
                "CPU capacities differ (QEMU x86 vCPUs all have capacity 1024)".into(),
            ));
        }
        let threads = m.smt_mask(0).weight();
        if let Some(c) = (0..n).find(|&c| m.smt_mask(c).weight() != threads) {
            return Err(refuse(format!(
                "cpu{c}'s core has {} threads, cpu0's {threads} (QEMU gives every core the same number)",
                m.smt_mask(c).weight()
            )));
        }
        // Packages in order of (node, first CPU); cores in a package by first CPU.
        let mut pkg_firsts: Vec<usize> = (0..n)
            .filter(|&c| m.package_mask(c).first() == Some(c))
            .collect();
        pkg_firsts.sort_by_key(|&c| (m.cpus[c].node, c));
        let pkg_size = m.package_mask(0).weight();
        for &p in &pkg_firsts {
            let pm = m.package_mask(p);
            if pm.weight() != pkg_size {
                return Err(refuse(format!(
                    "the package of cpu{p} has {} CPUs, that of cpu0 {pkg_size} (QEMU sockets are all equal)",
                    pm.weight()
                )));
            }
            if m.llc_mask(p) != pm {
                return Err(refuse(format!(
                    "cpu{p}'s LLC ({} CPUs) is not its whole package ({} CPUs); QEMU x86 guests share one L3 per socket",
                    m.llc_mask(p).weight(),
                    pm.weight()
                )));
            }
            if let Some(c) = pm.iter().find(|&c| m.llc_mask(c) != pm) {
                return Err(refuse(format!(
                    "cpu{c}'s LLC is not its whole package; QEMU x86 guests share one L3 per socket"
                )));
            }
            if let Some(c) = pm
                .iter()
                .find(|&c| m.cluster_mask(c) != pm && m.cluster_mask(c) != m.smt_mask(c))
            {
                return Err(refuse(format!(
                    "cpu{c} is in a cluster smaller than its LLC; QEMU x86 guests have no clusters"
                )));
            }
        }
        let sockets = pkg_firsts.len();
        let cores = pkg_size / threads;
        // Nodes: runs of whole packages.
        let nr_nodes = m.nr_nodes();
        let mut node_sockets = vec![0usize; nr_nodes];
        for &p in &pkg_firsts {
            let node = m.cpus[p].node;
            if let Some(c) = m.package_mask(p).iter().find(|&c| m.cpus[c].node != node) {
                return Err(refuse(format!(
                    "the package of cpu{p} spans nodes {node} and {} (a node must hold whole sockets: a node boundary inside a socket would split its L3)",
                    m.cpus[c].node
                )));
            }
            node_sockets[node] += 1;
        }
        if let Some(k) = node_sockets.iter().position(|&s| s == 0) {
            return Err(refuse(format!("node {k} has no CPUs")));
        }
        let mut cpu_map = vec![usize::MAX; n];
        let mut next = 0;
        for &p in &pkg_firsts {
            let pm = m.package_mask(p);
            for c in pm.iter().filter(|&c| m.smt_mask(c).first() == Some(c)) {
                for t in m.smt_mask(c).iter() {
                    cpu_map[t] = next;
                    next += 1;
                }
            }
        }
        debug_assert_eq!(next, n);
        let t = GuestTopology {
            sockets,
            cores,
            threads,
            node_sockets,
            distances: m.numa_distance.clone(),
            cpu_map,
        };
        t.check_distances().map_err(refuse)?;
        Ok(t)
    }

    fn check_distances(&self) -> Result<(), String> {
        let n = self.node_sockets.len();
        if self.distances.len() != n || self.distances.iter().any(|r| r.len() != n) {
            return Err(format!("the distance matrix is not {n}×{n}"));
        }
        for a in 0..n {
            for b in 0..n {
                let d = self.distances[a][b];
                if a == b && d != 10 {
                    return Err(format!(
                        "local distance of node {a} is {d}; QEMU (ACPI SLIT) needs 10"
                    ));
                }
                if a != b && !(11..=255).contains(&d) {
                    return Err(format!(
                        "distance {a}→{b} is {d}; QEMU (ACPI SLIT) needs 11..=255 between nodes"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The compact spec of this topology (see [`GuestTopology::parse`]; the CPU
    /// map is not part of it).
    pub fn spec(&self) -> String {
        let mut s = format!("{}s{}c{}t", self.sockets, self.cores, self.threads);
        let n = self.node_sockets.len();
        if n > 1 {
            if self.node_sockets.iter().all(|&k| k == self.node_sockets[0]) {
                s.push_str(&format!(":nodes={n}"));
            } else {
                let v: Vec<String> = self.node_sockets.iter().map(|k| k.to_string()).collect();
                s.push_str(&format!(":nodes={}", v.join("+")));
            }
            if self.distances != default_distances(n) {
                let v: Vec<String> = self
                    .distances
                    .iter()
                    .flatten()
                    .map(|d| d.to_string())
                    .collect();
                s.push_str(&format!(":dist={}", v.join(",")));
            }
        }
        s
    }

    /// Number of vCPUs.
    pub fn nr_cpus(&self) -> usize {
        self.sockets * self.cores * self.threads
    }

    /// Refuse guests of more than `max` vCPUs (pass [`DEFAULT_MAX_VCPUS`] unless the
    /// user asked for more).
    pub(crate) fn check_size(&self, max: usize) -> Result<(), String> {
        let n = self.nr_cpus();
        if n > max {
            return Err(format!(
                "a guest of {n} vCPUs is more than {max}: QEMU without KVM (TCG) emulates every vCPU on the host's cores, and boot and runs grow too slow; raise the limit explicitly to try anyway"
            ));
        }
        Ok(())
    }

    /// The guest vCPUs of node `k`, ascending.
    pub(crate) fn node_cpus(&self, k: usize) -> Vec<usize> {
        let per_socket = self.cores * self.threads;
        let first: usize = self.node_sockets[..k].iter().sum();
        (first * per_socket..(first + self.node_sockets[k]) * per_socket).collect()
    }

    /// The QEMU arguments (without the program name [`QEMU_BIN`]) that boot `kernel`
    /// with `initrd` on this topology, with `mem_mb` MiB split evenly between the nodes
    /// (the first node takes the remainder), `disk` as a raw virtio disk (`/dev/vda`),
    /// the kernel command line [`BASE_APPEND`] plus `append`, and the serial console to
    /// `console_log` (or stdio).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn qemu_args(
        &self,
        kernel: &Path,
        initrd: &Path,
        disk: &Path,
        mem_mb: u32,
        append: &str,
        accel_threads: AccelThreads,
        console_log: Option<&Path>,
    ) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |v: &[&str]| a.extend(v.iter().map(|s| s.to_string()));
        push(&[
            "-accel",
            &format!("tcg,thread={}", accel_threads.as_str()),
            "-machine",
            "pc",
            "-cpu",
            "Haswell-v4",
            "-smp",
            &format!(
                "{},sockets={},cores={},threads={}",
                self.nr_cpus(),
                self.sockets,
                self.cores,
                self.threads
            ),
            "-m",
            &mem_mb.to_string(),
        ]);
        let nodes = self.node_sockets.len();
        if nodes > 1 {
            let each = mem_mb / nodes as u32;
            let first = mem_mb - each * (nodes as u32 - 1);
            for k in 0..nodes {
                let size = if k == 0 { first } else { each };
                push(&[
                    "-object",
                    &format!("memory-backend-ram,id=m{k},size={size}M"),
                ]);
            }
            for k in 0..nodes {
                push(&[
                    "-numa",
                    &format!(
                        "node,nodeid={k},cpus={},memdev=m{k}",
                        cpulist(&self.node_cpus(k))
                    ),
                ]);
            }
            for s in 0..nodes {
                for d in 0..nodes {
                    let symmetric = self.distances[s][d] == self.distances[d][s];
                    if s != d && (s < d || !symmetric) {
                        push(&[
                            "-numa",
                            &format!("dist,src={s},dst={d},val={}", self.distances[s][d]),
                        ]);
                    }
                }
            }
        }
        let cmdline = if append.trim().is_empty() {
            BASE_APPEND.to_string()
        } else {
            format!("{BASE_APPEND} {}", append.trim())
        };
        let serial = match console_log {
            Some(p) => format!("file:{}", p.display()),
            None => "stdio".to_string(),
        };
        push(&[
            "-kernel",
            &kernel.display().to_string(),
            "-initrd",
            &initrd.display().to_string(),
            "-append",
            &cmdline,
            "-display",
            "none",
            "-monitor",
            "none",
            "-serial",
            &serial,
            "-no-reboot",
            "-drive",
            &format!("file={},format=raw,if=virtio", disk.display()),
        ]);
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::preset;

    fn args(t: &GuestTopology, mem: u32, th: AccelThreads) -> String {
        t.qemu_args(
            Path::new("/k/vmlinuz"),
            Path::new("/t/initrd.gz"),
            Path::new("/t/out.img"),
            mem,
            "",
            th,
            Some(Path::new("/t/console.log")),
        )
        .join(" ")
    }

    const TAIL: &str = "-kernel /k/vmlinuz -initrd /t/initrd.gz -append console=ttyS0 panic=-1 quiet numa_balancing=disable noautogroup sched_verbose -display none -monitor none -serial file:/t/console.log -no-reboot -drive file=/t/out.img,format=raw,if=virtio";

    #[test]
    fn one_socket_no_numa_options() {
        let t = GuestTopology::parse("1s4c2t").unwrap();
        assert_eq!((t.sockets, t.cores, t.threads, t.nr_cpus()), (1, 4, 2, 8));
        assert_eq!(
            args(&t, 1024, AccelThreads::Single),
            format!("-accel tcg,thread=single -machine pc -cpu Haswell-v4 -smp 8,sockets=1,cores=4,threads=2 -m 1024 {TAIL}")
        );
    }

    #[test]
    fn two_sockets_two_nodes() {
        let t = GuestTopology::parse("2s4c2t:nodes=2").unwrap();
        assert_eq!(t.node_cpus(1), (8..16).collect::<Vec<_>>());
        assert_eq!(
            args(&t, 2048, AccelThreads::Multi),
            format!("-accel tcg,thread=multi -machine pc -cpu Haswell-v4 -smp 16,sockets=2,cores=4,threads=2 -m 2048 \
-object memory-backend-ram,id=m0,size=1024M -object memory-backend-ram,id=m1,size=1024M \
-numa node,nodeid=0,cpus=0-7,memdev=m0 -numa node,nodeid=1,cpus=8-15,memdev=m1 \
-numa dist,src=0,dst=1,val=20 {TAIL}")
        );
    }

    #[test]
    fn four_nodes_with_distances_and_uneven_memory() {
        let t = GuestTopology::parse("4s2c2t:nodes=4:dist=20,30,30,20,30,20").unwrap();
        assert_eq!(t.distances[3], vec![30, 30, 20, 10]);
        // 1000 MiB over 4 nodes: 250 each.  1001: the first node takes 251.
        let s = args(&t, 1001, AccelThreads::Single);
        assert!(s.contains("-smp 16,sockets=4,cores=2,threads=2 -m 1001 -object memory-backend-ram,id=m0,size=251M -object memory-backend-ram,id=m1,size=250M -object memory-backend-ram,id=m2,size=250M -object memory-backend-ram,id=m3,size=250M "), "{s}");
        assert!(s.contains("-numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1 -numa node,nodeid=2,cpus=8-11,memdev=m2 -numa node,nodeid=3,cpus=12-15,memdev=m3 \
-numa dist,src=0,dst=1,val=20 -numa dist,src=0,dst=2,val=30 -numa dist,src=0,dst=3,val=30 -numa dist,src=1,dst=2,val=20 -numa dist,src=1,dst=3,val=30 -numa dist,src=2,dst=3,val=20 -kernel"), "{s}");
    }

    #[test]
    fn asymmetric_distances_give_both_directions() {
        let t = GuestTopology::parse("2s1c:nodes=2:dist=10,21,22,10").unwrap();
        let s = args(&t, 512, AccelThreads::Single);
        assert!(s.contains("-numa dist,src=0,dst=1,val=21 -numa dist,src=1,dst=0,val=22 -kernel"));
        assert!(s.contains("-smp 2,sockets=2,cores=1,threads=1 "));
    }

    #[test]
    fn bad_specs_say_why() {
        let e = |s: &str| GuestTopology::parse(s).unwrap_err();
        assert!(e("1s4c2t:nodes=2").contains("do not divide 1 sockets"));
        assert!(e("2x4c").contains("unexpected `x`"));
        assert!(e("4c2t").contains("needs sockets and cores"));
        assert!(e("0s4c").contains("zero count"));
        assert!(e("2s4c:nodes=2:dist=1,2,3").contains("3 values; 2 nodes need 4"));
        assert!(e("2s4c:nodes=2:dist=10").contains("needs 11..=255"));
        assert!(e("2s4c:nodes=2:dist=12,20,20,10").contains("local distance of node 0 is 12"));
        assert!(e("2s4c:foo=1").contains("unknown option `foo=1`"));
        assert!(e("2s4").contains("without a unit"));
    }

    #[test]
    fn uneven_nodes_and_spec_round_trip() {
        let t = GuestTopology::parse("3s2c:nodes=1+2").unwrap();
        assert_eq!(t.node_sockets, vec![1, 2]);
        assert_eq!(t.node_cpus(1), vec![2, 3, 4, 5]);
        let s = args(&t, 900, AccelThreads::Single);
        assert!(
            s.contains(
                "-numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-5,memdev=m1 "
            ),
            "{s}"
        );
        assert_eq!(t.spec(), "3s2c1t:nodes=1+2");
        for spec in [
            "1s4c2t",
            "2s4c2t:nodes=2",
            "4s2c2t:nodes=4:dist=10,20,30,30,20,10,30,30,30,30,10,20,30,30,20,10",
            "3s2c1t:nodes=1+2",
        ] {
            assert_eq!(GuestTopology::parse(spec).unwrap().spec(), spec);
        }
        assert!(GuestTopology::parse("3s2c:nodes=1+1")
            .unwrap_err()
            .contains("adds up to 2 sockets, not 3"));
    }

    #[test]
    fn size_limit() {
        let t = GuestTopology::parse("2s16c2t").unwrap();
        assert_eq!(t.nr_cpus(), 64);
        assert!(t
            .check_size(DEFAULT_MAX_VCPUS)
            .unwrap_err()
            .contains("64 vCPUs is more than 32"));
        assert!(t.check_size(64).is_ok());
    }

    #[test]
    fn machine_presets_map_or_are_refused() {
        // Juno: big.LITTLE capacities.
        let juno = preset("juno-r0")
            .or_else(|| preset("juno"))
            .expect("juno preset");
        assert!(GuestTopology::from_machine(&juno)
            .unwrap_err()
            .contains("capacities differ"));
        // Xeon E5 (2 sockets × 10 cores × SMT2, a node per socket, SLIT 21): maps,
        // with cpu0 and its sibling as guest vCPUs 0 and 1 whatever the preset's
        // numbering, and socket 1 as vCPUs 20..40.
        let xeon = preset("xeon-e5-40").unwrap();
        let t = GuestTopology::from_machine(&xeon).unwrap();
        assert_eq!((t.sockets, t.cores, t.threads), (2, 10, 2));
        assert_eq!(t.node_sockets, vec![1, 1]);
        assert_eq!(t.distances, vec![vec![10, 21], vec![21, 10]]);
        let sib = xeon.smt_mask(0).iter().find(|&c| c != 0).unwrap();
        assert_eq!((t.cpu_map[0], t.cpu_map[sib]), (0, 1));
        for c in 0..40 {
            assert_eq!(t.cpu_map[c] / 20, xeon.cpus[c].package, "cpu{c}");
        }
        assert!(t
            .check_size(DEFAULT_MAX_VCPUS)
            .unwrap_err()
            .contains("40 vCPUs"));
        // EPYC: an L3 per CCX, not per socket.
        let epyc = preset("epyc-192").unwrap();
        assert!(GuestTopology::from_machine(&epyc)
            .unwrap_err()
            .contains("is not its whole package"));
        // Every preset either maps, with a permutation as the CPU map and the
        // nodes' sockets adding up, or is refused with a reason.
        for (name, _) in crate::machine::presets::preset_names() {
            let m = preset(name).unwrap();
            match GuestTopology::from_machine(&m) {
                Ok(t) => {
                    assert_eq!(t.nr_cpus(), m.nr_cpus(), "{name}");
                    let mut seen = t.cpu_map.clone();
                    seen.sort_unstable();
                    assert_eq!(seen, (0..m.nr_cpus()).collect::<Vec<_>>(), "{name}");
                    assert_eq!(t.node_sockets.iter().sum::<usize>(), t.sockets, "{name}");
                    // SMT siblings stay on adjacent guest vCPUs of one core.
                    for c in 0..m.nr_cpus() {
                        for s in m.smt_mask(c).iter() {
                            assert_eq!(t.cpu_map[s] / t.threads, t.cpu_map[c] / t.threads);
                        }
                    }
                }
                Err(e) => assert!(e.contains("cannot be a QEMU x86 guest"), "{e}"),
            }
        }
    }
}
