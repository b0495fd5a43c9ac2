//! The seeds on a real kernel: the seed kit (`--kernel 5.10-seeds`).
//!
//! Three of the five seeds were never merged, so nobody has measured them on a
//! real kernel with the topology schedlab models. The seed kit is Debian's
//! linux-source-5.10 with schedlab's own implementation of the seeds as
//! `sched_features` bits, off by default, so that one boot runs a seed's A/B
//! exactly as it runs one of the kernel's own switches ([`super::ab`]).
//! 5.10's wakeup scan keeps the shape of the seeds' bases: a separate
//! `select_idle_core`, `select_idle_cpu` and `select_idle_smt` under
//! `select_idle_sibling`. v5.12 merged the core and CPU scans.
//! `tools/oracle-seeds/build-kit.sh` builds it. `seeds-5.10.patch` holds our
//! implementation, written for this project from the seeds' descriptions. It is
//! applied to a pinned source version without fuzz.
//!
//! * **Seed 000, `IDLE_CPU_MASK`.** The idle-core scan keeps a per-CPU mask of the
//!   LLC's allowed CPUs, clearing each CPU it finds busy. After a fruitless scan,
//!   the idle-CPU scan visits only the CPUs left in it; the CPUs left out are
//!   reported as `skipped`. Without a fruitless core scan in the same call (no
//!   idle-core hint, no SMT) the idle-CPU scan is v5.10's. 5.10's core scan stops
//!   at a core's first busy sibling, so the siblings after it stay in the mask:
//!   they are not known busy.
//!
//! * **Seed 003, `SMT_BALANCE`.** Every scheduling group below the LLC keeps its
//!   number of busy CPUs, changed at every switch between the idle task and
//!   another (`__schedule`), for the local group of each domain from the LLC down
//!   to, not including, the lowest. A wakeup on an SMT machine replaces the three
//!   scans: per level from the LLC down, the target's group against one other
//!   group met in ring order from a start the waking CPU's rotor picks, moving
//!   when that one has more free CPUs; then the final core from a rotor-picked
//!   CPU. A CPU's busy state is first recorded once sched domains exist.
//!
//! Every `select_idle_sibling` call writes one `trace_printk` line with what each
//! scan tested (a CPU tested is an `available_idle_cpu` call; `groups` counts the
//! group counters `SMT_BALANCE` read), which [`SisCall`] reads:
//!
//! ```text
//! schedlab_sis: pid=P prev=C target=C cpu=C core=N idle_cpu=N smt=N skipped=N groups=N
//! ```
//!
//! The model counts the same things per function ([`crate::sched::Func`]'s
//! `select_idle_core`, `select_idle_cpu`, `select_idle_smt` calls and probes), so a
//! seed's A/B compares CPUs probed per wakeup scan on both sides.

use super::guest::default_cache_dir;
use super::knobs::{RealKnobs, KNOBS_5_10};
use std::path::{Path, PathBuf};

/// The `--kernel` word of the seed kit's kernel.
pub const KIT_KERNEL: &str = "5.10-seeds";

/// The seeds' bits `seeds-5.10.patch` adds, as the features file reads them at boot
/// (all off), and the bit they follow in `features.h`.
pub const SEED_FEATURES: (&str, &[&str]) = ("SIS_PROP", &["NO_IDLE_CPU_MASK", "NO_SMT_BALANCE"]);

/// The seed kit's switches: Debian 5.10's, with [`SEED_FEATURES`] inserted where
/// the patch puts them.
pub static KNOBS_5_10_SEEDS: std::sync::LazyLock<RealKnobs> = std::sync::LazyLock::new(|| {
    let (after, bits) = SEED_FEATURES;
    let mut f: Vec<&'static str> = KNOBS_5_10.features.to_vec();
    let at = f
        .iter()
        .position(|x| crate::sched::features::feature_word(x).0 == after)
        .map_or(f.len(), |i| i + 1);
    f.splice(at..at, bits.iter().copied());
    RealKnobs {
        features: Box::leak(f.into_boxed_slice()),
        ..KNOBS_5_10
    }
});

/// The built kit: its directory and kernel image.
#[derive(Clone, Debug)]
pub struct SeedKit {
    pub dir: PathBuf,
    pub bzimage: PathBuf,
}

impl SeedKit {
    /// `$SCHEDLAB_SEEDS_KIT`, else `kernels/5.10-seeds` of the oracle's cache.
    pub fn default_dir() -> Result<PathBuf, String> {
        if let Some(p) = std::env::var_os("SCHEDLAB_SEEDS_KIT").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        Ok(default_cache_dir()?.join("kernels").join(KIT_KERNEL))
    }

    /// The kit in `dir`; its error says how to build it.
    pub fn open(dir: &Path) -> Result<SeedKit, String> {
        let bzimage = dir.join("bzImage");
        if !bzimage.is_file() {
            return Err(format!(
                "the seed kernel kit in {} has no `bzImage`: build it with \
                 tools/oracle-seeds/build-kit.sh {} (about 25 min on 2 cores)",
                dir.display(),
                dir.display()
            ));
        }
        Ok(SeedKit {
            dir: dir.to_path_buf(),
            bzimage,
        })
    }
}

/// One `select_idle_sibling` call as the kit's kernel reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SisCall {
    pub pid: u32,
    pub prev: u32,
    pub target: u32,
    /// The CPU chosen.
    pub cpu: u32,
    /// CPUs tested by `select_idle_core`, `select_idle_cpu`, `select_idle_smt`.
    pub core: u32,
    pub idle_cpu: u32,
    pub smt: u32,
    /// CPUs `select_idle_cpu` left out under `IDLE_CPU_MASK`.
    pub skipped: u32,
    /// Group counters `SMT_BALANCE`'s walk read (0 on a kit without the seed).
    pub groups: u32,
}

/// The tag of the kit's line.
pub const SIS_TAG: &str = "schedlab_sis:";

impl SisCall {
    /// The call reported on one ftrace text line, if the line is one.
    pub fn parse(line: &str) -> Option<SisCall> {
        let rest = &line[line.find(SIS_TAG)? + SIS_TAG.len()..];
        let mut c = SisCall {
            pid: 0,
            prev: 0,
            target: 0,
            cpu: 0,
            core: 0,
            idle_cpu: 0,
            smt: 0,
            skipped: 0,
            groups: 0,
        };
        let mut seen = 0u8;
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            let v: u32 = v.parse().ok()?;
            let (slot, bit) = match k {
                "pid" => (&mut c.pid, 0),
                "prev" => (&mut c.prev, 1),
                "target" => (&mut c.target, 2),
                "cpu" => (&mut c.cpu, 3),
                "core" => (&mut c.core, 4),
                "idle_cpu" => (&mut c.idle_cpu, 5),
                "smt" => (&mut c.smt, 6),
                "skipped" => (&mut c.skipped, 7),
                "groups" => {
                    c.groups = v;
                    continue;
                }
                _ => continue,
            };
            *slot = v;
            seen |= 1 << bit;
        }
        (seen == 0xff).then_some(c)
    }
}

/// Every call a trace reports, in order.
pub fn sis_calls(trace: &str) -> Vec<SisCall> {
    trace.lines().filter_map(SisCall::parse).collect()
}

/// What one run's wakeup scans tested: `select_idle_sibling` calls and, summed over
/// them, the CPUs each scan tested and the CPUs `IDLE_CPU_MASK` left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScanStats {
    pub calls: u64,
    pub core: u64,
    pub idle_cpu: u64,
    pub smt: u64,
    pub skipped: u64,
    /// Group counters `SMT_BALANCE` read.
    pub groups: u64,
}

/// One count of [`ScanStats`].
pub type ScanField = fn(&ScanStats) -> u64;

/// The per-call statistics of [`ScanStats`], as the A/B compares them: (name,
/// accessor). Each is a mean number of CPUs per `select_idle_sibling` call.
pub const SCAN_STATISTICS: [(&str, ScanField); 5] = [
    ("scan.core_per_call", |s| s.core),
    ("scan.idle_cpu_per_call", |s| s.idle_cpu),
    ("scan.smt_per_call", |s| s.smt),
    ("scan.skipped_per_call", |s| s.skipped),
    ("scan.groups_per_call", |s| s.groups),
];

impl ScanStats {
    /// Every call of a real trace (the kit's kernel, all tasks: the model's kernel
    /// threads wake through the same path). `None` for a trace without the kit's
    /// lines (a kernel other than the kit's).
    pub fn of_trace(trace: &str) -> Option<ScanStats> {
        let calls = sis_calls(trace);
        if calls.is_empty() {
            return None;
        }
        let mut s = ScanStats::default();
        for c in &calls {
            s.calls += 1;
            s.core += u64::from(c.core);
            s.idle_cpu += u64::from(c.idle_cpu);
            s.smt += u64::from(c.smt);
            s.skipped += u64::from(c.skipped);
            s.groups += u64::from(c.groups);
        }
        Some(s)
    }

    /// The same counts from a simulated run's instrumented functions.
    pub fn of_model(
        f: &std::collections::BTreeMap<&'static str, crate::metrics::FuncStats>,
    ) -> ScanStats {
        use crate::sched::Func;
        let get = |x: Func| f.get(x.name()).cloned().unwrap_or_default();
        let (cpu, smt, smtb) = (
            get(Func::SelectIdleCpu),
            get(Func::SelectIdleSmt),
            get(Func::SmtBalance),
        );
        // smt_balance's probes include its core scan's, the only `select_idle_smt`
        // calls there are when it runs: the rest are its group counter reads.
        let groups = if smtb.calls > 0 {
            smtb.cpus_probed.saturating_sub(smt.cpus_probed)
        } else {
            0
        };
        ScanStats {
            calls: get(Func::SelectIdleSibling).calls,
            core: get(Func::SelectIdleCore).cpus_probed,
            idle_cpu: cpu.cpus_probed,
            smt: smt.cpus_probed,
            skipped: cpu.cpus_skipped,
            groups,
        }
    }

    /// `field`'s mean per call (0 without calls).
    pub fn per_call(&self, field: ScanField) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            field(self) as f64 / self.calls as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kits_line_is_read_and_anything_else_is_not() {
        let l = "  hackbench-412   [003] d..3   101.234567: select_idle_sibling: schedlab_sis: pid=415 prev=2 target=3 cpu=6 core=4 idle_cpu=3 smt=0 skipped=2";
        assert_eq!(
            SisCall::parse(l),
            Some(SisCall {
                pid: 415,
                prev: 2,
                target: 3,
                cpu: 6,
                core: 4,
                idle_cpu: 3,
                smt: 0,
                skipped: 2,
                groups: 0
            })
        );
        assert_eq!(
            SisCall::parse("  x-1 [000] d..3 1.0: sched_wakeup: comm=x pid=1"),
            None
        );
        // A line cut short (a full ring buffer's last event) is not a call.
        assert_eq!(
            SisCall::parse("schedlab_sis: pid=415 prev=2 target=3 cpu=6"),
            None
        );
        assert_eq!(sis_calls(&format!("{l}\n{l}\nfoo\n")).len(), 2);
        // The SMT_BALANCE kit's line has the group reads too.
        let g = SisCall::parse(&format!("{l} groups=3")).unwrap();
        assert_eq!(g.groups, 3);
    }

    /// The kit's bits are 5.10's plus the seeds', off at boot, and an arm on a seed
    /// is refused by plain 5.10 and accepted by the kit.
    #[test]
    fn the_kit_has_the_seeds_bits() {
        use super::super::knobs::RealArm;
        let mut plain: Vec<&str> = KNOBS_5_10_SEEDS.features.to_vec();
        let at = plain.iter().position(|f| *f == "NO_IDLE_CPU_MASK").unwrap();
        assert_eq!(
            plain[at - 1],
            "SIS_PROP",
            "after SIS_PROP, as in features.h"
        );
        assert_eq!(plain[at + 1], "NO_SMT_BALANCE");
        plain.drain(at..at + 2);
        assert_eq!(plain, KNOBS_5_10.features);
        for f in ["IDLE_CPU_MASK", "SMT_BALANCE"] {
            assert_eq!(KNOBS_5_10_SEEDS.default_of(f), Some(false), "{f}");
            let a = RealArm::parse(f).unwrap();
            assert!(a.check(&KNOBS_5_10).is_err());
            a.check(&KNOBS_5_10_SEEDS).unwrap();
        }
    }
}
