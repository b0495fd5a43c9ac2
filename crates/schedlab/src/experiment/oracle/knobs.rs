//! What a real kernel lets root flip at run time, and an A/B arm on it.
//!
//! The kernel keeps its placement heuristics as `sched_features` bits
//! (`kernel/sched/features.h`). With `CONFIG_SCHED_DEBUG`, as Debian builds it, root
//! flips one by writing `NAME` or `NO_NAME` to a debugfs file: 5.10's
//! `/sys/kernel/debug/sched_features`, 6.12's `/sys/kernel/debug/sched/features`
//! (moved in v5.13). Reading the file lists every bit with its state. The numeric
//! knobs moved the same way. In 5.10 they are sysctls under `/proc/sys/kernel/`:
//! `sched_migration_cost_ns`, `sched_nr_migrate`, `sched_latency_ns`,
//! `sched_min_granularity_ns`, `sched_wakeup_granularity_ns`,
//! `sched_tunable_scaling`. In 6.12 the survivors are debugfs files under
//! `/sys/kernel/debug/sched/` (`migration_cost_ns`, `nr_migrate`,
//! `tunable_scaling`, and EEVDF's `base_slice_ns`; latency and wakeup granularity
//! went with CFS in v6.6).
//!
//! So one boot can run both arms of an A/B on a switch, interleaved, which no two
//! boots can match for sameness. This module holds each guest kernel's knobs as
//! its own files list them ([`RealKnobs`], the features as the oracle's recorded
//! 5.10 and 6.12 guests read at boot). It also holds an arm on them ([`RealArm`]):
//! feature words and `kernel.tunables.NAME=VALUE` items, the same spelling as
//! `schedlab compare`'s arms, so one SPEC drives the model and the guest alike.
//! The arm is checked against the kernel it will run on: a switch the kernel lacks,
//! or one only schedlab has (a seed's), is an error naming what the kernel has.
//! Finally it renders as the `/init` shell that sets an arm
//! ([`RealArm::prelude`]) and puts every touched knob back to its boot value
//! ([`restore`]) between runs.

use crate::experiment::compare::ArmSpec;
use crate::sched::features::{feature_word, SchedFeat};

/// A guest kernel's run-time knobs.
#[derive(Clone, Copy, Debug)]
pub struct RealKnobs {
    /// `major.minor`.
    pub release: (u32, u32),
    /// The debugfs file of the feature bits.
    pub features_file: &'static str,
    /// The bits as the file reads at boot (`NAME` on, `NO_NAME` off), in its order.
    pub features: &'static [&'static str],
    /// Numeric knobs: (schedlab's `[kernel.tunables]` name, the guest's file).
    pub tunables: &'static [(&'static str, &'static str)],
}

/// Debian's 5.10 (`linux-image-5.10.0-*-amd64`), as its guest read
/// `/sys/kernel/debug/sched_features` at boot (tests/data/oracle, 5.10 bundles).
pub const KNOBS_5_10: RealKnobs = RealKnobs {
    release: (5, 10),
    features_file: "/sys/kernel/debug/sched_features",
    features: &[
        "GENTLE_FAIR_SLEEPERS",
        "START_DEBIT",
        "NO_NEXT_BUDDY",
        "LAST_BUDDY",
        "CACHE_HOT_BUDDY",
        "WAKEUP_PREEMPTION",
        "NO_HRTICK",
        "NO_DOUBLE_TICK",
        "NONTASK_CAPACITY",
        "TTWU_QUEUE",
        "NO_SIS_AVG_CPU",
        "SIS_PROP",
        "NO_WARN_DOUBLE_CLOCK",
        "RT_PUSH_IPI",
        "NO_RT_RUNTIME_SHARE",
        "NO_LB_MIN",
        "ATTACH_AGE_LOAD",
        "WA_IDLE",
        "WA_WEIGHT",
        "WA_BIAS",
        "UTIL_EST",
        "UTIL_EST_FASTUP",
        "ALT_PERIOD",
        "BASE_SLICE",
    ],
    tunables: &[
        (
            "sched_migration_cost_ns",
            "/proc/sys/kernel/sched_migration_cost_ns",
        ),
        ("sched_nr_migrate", "/proc/sys/kernel/sched_nr_migrate"),
        ("sched_latency_ns", "/proc/sys/kernel/sched_latency_ns"),
        (
            "sched_min_granularity_ns",
            "/proc/sys/kernel/sched_min_granularity_ns",
        ),
        (
            "sched_wakeup_granularity_ns",
            "/proc/sys/kernel/sched_wakeup_granularity_ns",
        ),
        (
            "sched_tunable_scaling",
            "/proc/sys/kernel/sched_tunable_scaling",
        ),
    ],
};

/// Debian's 6.12 (bookworm-backports), as its guest read
/// `/sys/kernel/debug/sched/features` at boot (tests/data/oracle, 6.12 bundles).
pub const KNOBS_6_12: RealKnobs = RealKnobs {
    release: (6, 12),
    features_file: "/sys/kernel/debug/sched/features",
    features: &[
        "PLACE_LAG",
        "PLACE_DEADLINE_INITIAL",
        "PLACE_REL_DEADLINE",
        "RUN_TO_PARITY",
        "PREEMPT_SHORT",
        "NO_NEXT_BUDDY",
        "PICK_BUDDY",
        "CACHE_HOT_BUDDY",
        "DELAY_DEQUEUE",
        "DELAY_ZERO",
        "WAKEUP_PREEMPTION",
        "NO_HRTICK",
        "NO_HRTICK_DL",
        "NO_DOUBLE_TICK",
        "NONTASK_CAPACITY",
        "TTWU_QUEUE",
        "SIS_UTIL",
        "NO_WARN_DOUBLE_CLOCK",
        "RT_PUSH_IPI",
        "NO_RT_RUNTIME_SHARE",
        "NO_LB_MIN",
        "ATTACH_AGE_LOAD",
        "WA_IDLE",
        "WA_WEIGHT",
        "WA_BIAS",
        "UTIL_EST",
        "NO_LATENCY_WARN",
        "NI_RANDOM",
    ],
    tunables: &[
        (
            "sched_migration_cost_ns",
            "/sys/kernel/debug/sched/migration_cost_ns",
        ),
        ("sched_nr_migrate", "/sys/kernel/debug/sched/nr_migrate"),
        (
            "sched_tunable_scaling",
            "/sys/kernel/debug/sched/tunable_scaling",
        ),
    ],
};

/// The knobs of the guest kernel of release `(major, minor)`, if the oracle boots it.
pub fn knobs_of(release: (u32, u32)) -> Option<&'static RealKnobs> {
    [&KNOBS_5_10, &KNOBS_6_12]
        .into_iter()
        .find(|k| k.release == release)
}

/// The knobs of the kernel a guest boots, checked before the boot.
pub fn knobs_for(choice: &super::guest::KernelChoice) -> Result<&'static RealKnobs, String> {
    use super::guest::KernelChoice;
    match choice {
        KernelChoice::V5_10 => Ok(&KNOBS_5_10),
        KernelChoice::V6_12 | KernelChoice::Scx(_) => Ok(&KNOBS_6_12),
        KernelChoice::Seeds(_) => Ok(&*super::seeds::KNOBS_5_10_SEEDS),
        KernelChoice::Path(p) => Err(format!(
            "{}: the run-time switches of a kernel image are not known before it boots; \
             an A/B on switches runs on `5.10`, `6.12`, `6.12-scx` or `5.10-seeds` (a kernel A/B \
             with only `kernel=` items takes any image)",
            p.display()
        )),
    }
}

impl RealKnobs {
    /// The feature names (without `NO_`), in the file's order.
    pub fn feature_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.features.iter().map(|f| feature_word(f).0)
    }

    /// Whether feature `name` is on at boot (`None`: the kernel has no such bit).
    pub fn default_of(&self, name: &str) -> Option<bool> {
        self.features
            .iter()
            .map(|f| feature_word(f))
            .find_map(|(n, on)| (n == name).then_some(on))
    }

    /// The guest file of schedlab tunable `name`.
    pub fn tunable_file(&self, name: &str) -> Option<&'static str> {
        self.tunables
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }

    fn release_name(&self) -> String {
        format!("{}.{}", self.release.0, self.release.1)
    }
}

/// One arm of an A/B on a real kernel: feature words and tunable values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealArm {
    /// The SPEC as given.
    pub spec: String,
    /// `NAME` or `NO_NAME`, in order.
    pub features: Vec<String>,
    /// (schedlab tunable name, value).
    pub tunables: Vec<(String, u64)>,
}

impl RealArm {
    /// An arm from a `compare`-style SPEC: feature words, and
    /// `kernel.tunables.NAME=VALUE` items (a non-negative integer). Any other
    /// override has no run-time switch on a real kernel and is an error.
    pub fn parse(spec: &str) -> Result<RealArm, String> {
        let a = ArmSpec::parse(spec);
        let mut tunables = vec![];
        for s in &a.sets {
            let (k, v) = s.split_once('=').expect("ArmSpec::parse keeps `=` items");
            let Some(name) = k.trim().strip_prefix("kernel.tunables.") else {
                return Err(format!(
                    "arm `{spec}`: `{s}` has no run-time switch on a real kernel \
                     (a real arm takes feature words and kernel.tunables.NAME=VALUE)"
                ));
            };
            let v: u64 = v.trim().parse().map_err(|_| {
                format!(
                    "arm `{spec}`: {name} = `{}` is not a non-negative integer",
                    v.trim()
                )
            })?;
            tunables.push((name.to_string(), v));
        }
        Ok(RealArm {
            spec: spec.to_string(),
            features: a.features,
            tunables,
        })
    }

    /// Check the arm against kernel `k`: each feature must be one of its bits and
    /// each tunable one of its files; the error names what the kernel has.
    pub fn check(&self, k: &RealKnobs) -> Result<(), String> {
        let rel = k.release_name();
        for f in &self.features {
            let name = feature_word(f).0;
            if k.default_of(name).is_some() {
                continue;
            }
            let ours = SchedFeat::ALL
                .iter()
                .find(|s| s.name() == name)
                .map(|s| format!(" (schedlab's own, from {})", s.origin()))
                .unwrap_or_default();
            let kit = &*super::seeds::KNOBS_5_10_SEEDS;
            let kit_hint = if kit.default_of(name).is_some() && k.features != kit.features {
                format!(
                    " (the seed kit's 5.10 has it: `--kernel {}`)",
                    super::seeds::KIT_KERNEL
                )
            } else {
                String::new()
            };
            let has: Vec<&str> = k.feature_names().collect();
            return Err(format!(
                "arm `{}`: {rel} has no sched_features bit {name}{ours}{kit_hint}; it has: {}",
                self.spec,
                has.join(" ")
            ));
        }
        for (t, _) in &self.tunables {
            if k.tunable_file(t).is_none() {
                let has: Vec<&str> = k.tunables.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "arm `{}`: {rel} has no run-time tunable {t}; it has: {}",
                    self.spec,
                    has.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The `/init` shell that sets this arm on `k` (checked first), each write
    /// reported on the console when it fails.
    pub fn prelude(&self, k: &RealKnobs) -> String {
        let mut s = String::new();
        for f in &self.features {
            s.push_str(&format!(
                "echo {f} > {} || echo \"SCHEDLAB-ORACLE: cannot set {f}\"\n",
                k.features_file
            ));
        }
        for (t, v) in &self.tunables {
            let file = k.tunable_file(t).expect("checked arm");
            s.push_str(&format!(
                "echo {v} > {file} || echo \"SCHEDLAB-ORACLE: cannot set {t}={v}\"\n"
            ));
        }
        s
    }
}

/// The `/init` shell that saves, at boot, the value of every tunable an arm of
/// `arms` touches (in `SCHEDLAB_T<i>`) and lists them for every run to read back
/// (`SCHEDLAB_KNOBS`, `NAME=FILE` words), and the shell that puts every touched
/// feature and tunable back to its boot value: (save, restore).
pub fn restore(arms: &[RealArm], k: &RealKnobs) -> (String, String) {
    let mut names: Vec<&str> = vec![];
    let mut feats: Vec<&str> = vec![];
    for a in arms {
        for (t, _) in &a.tunables {
            if !names.contains(&t.as_str()) {
                names.push(t);
            }
        }
        for f in &a.features {
            let n = feature_word(f).0;
            if !feats.contains(&n) {
                feats.push(n);
            }
        }
    }
    let (mut save, mut back) = (String::new(), String::new());
    let mut listed = vec![];
    for (i, t) in names.iter().enumerate() {
        let file = k.tunable_file(t).expect("checked arm");
        save.push_str(&format!("SCHEDLAB_T{i}=$(cat {file})\n"));
        back.push_str(&format!("echo $SCHEDLAB_T{i} > {file}\n"));
        listed.push(format!("{t}={file}"));
    }
    // Which tunables each run reads back before it starts (`run_job`).
    if !listed.is_empty() {
        save.push_str(&format!("SCHEDLAB_KNOBS=\"{}\"\n", listed.join(" ")));
    }
    for n in feats {
        let word = match k.default_of(n) {
            Some(true) => n.to_string(),
            _ => format!("NO_{n}"),
        };
        back.push_str(&format!("echo {word} > {}\n", k.features_file));
    }
    (save, back)
}

/// The tag of arm `i` in result names (`a`, `b`, ...).
pub fn arm_tag(i: usize) -> char {
    (b'a' + i as u8) as char
}

/// The result name of repetition `r` (from 1) of arm `arm` of `job`: `job.<tag>.r<r>`.
pub fn ab_run_name(job: &str, arm: usize, r: u32) -> String {
    format!("{job}.{}.r{r}", arm_tag(arm))
}

/// The runs of an A/B: every repetition runs each arm once, arms in order within a
/// repetition, so slow drifts of the guest (its page cache, the host's load) fall
/// on both arms alike: (job, arm index, results name `JOB.ARM.rREP`).
pub fn ab_runs(jobs: &[String], arms: usize, reps: u32) -> Vec<(String, usize, String)> {
    let mut v = vec![];
    for job in jobs {
        for r in 1..=reps {
            for a in 0..arms {
                v.push((job.clone(), a, ab_run_name(job, a, r)));
            }
        }
    }
    v
}

/// An A/B in one boot: the arms, checked against the guest's kernel.
#[derive(Clone, Debug)]
pub struct GuestAb {
    pub arms: Vec<RealArm>,
    pub knobs: &'static RealKnobs,
}

impl GuestAb {
    /// The A/B of `arms` on kernel `knobs`; an arm the kernel cannot run is an
    /// error ([`RealArm::check`]).
    pub fn new(arms: Vec<RealArm>, knobs: &'static RealKnobs) -> Result<GuestAb, String> {
        for a in &arms {
            a.check(knobs)?;
        }
        Ok(GuestAb { arms, knobs })
    }

    /// The `/init` lines that run `jobs` `reps` times per arm, interleaved
    /// ([`ab_runs`]): the touched tunables saved first, then before each run every
    /// touched knob back at its boot value and the run's arm set. `run` is the
    /// shell function that runs a job (`run_job FILES RESULTS`).
    pub fn script(&self, jobs: &[String], reps: u32, run: &str) -> String {
        let (save, back) = restore(&self.arms, self.knobs);
        let mut s = save;
        for (job, arm, out) in ab_runs(jobs, self.arms.len(), reps) {
            s.push_str(&back);
            s.push_str(&self.arms[arm].prelude(self.knobs));
            s.push_str(&format!("{run} {job} {out}\n"));
        }
        s.push_str(&back);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The knob tables are the recorded guests' own files: every 5.10 and 6.12
    /// bundle of tests/data/oracle read these bits, in this order, at boot.
    #[test]
    fn the_feature_lists_are_what_the_recorded_guests_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle");
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let k = if name.ends_with("-5.10.tar.gz") {
                &KNOBS_5_10
            } else if name.ends_with("-6.12.tar.gz") {
                &KNOBS_6_12
            } else {
                continue;
            };
            let f = std::fs::File::open(&p).unwrap();
            let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
            let mut text = None;
            for ent in ar.entries().unwrap() {
                let mut ent = ent.unwrap();
                if ent.path().unwrap().ends_with("sched_features") {
                    let mut s = String::new();
                    std::io::Read::read_to_string(&mut ent, &mut s).unwrap();
                    text = Some(s);
                }
            }
            let text = text.unwrap_or_else(|| panic!("{name}: no sched_features"));
            let got: Vec<&str> = text.split_whitespace().collect();
            assert_eq!(got, k.features, "{name}");
            seen += 1;
        }
        assert!(seen >= 4, "{seen} bundles");
    }

    #[test]
    fn arms_parse_check_and_render() {
        let a = RealArm::parse("NO_WA_IDLE,NO_WA_WEIGHT,kernel.tunables.sched_migration_cost_ns=0")
            .unwrap();
        assert_eq!(a.features, ["NO_WA_IDLE", "NO_WA_WEIGHT"]);
        assert_eq!(a.tunables, [("sched_migration_cost_ns".to_string(), 0)]);
        for k in [&KNOBS_5_10, &KNOBS_6_12] {
            a.check(k).unwrap();
        }
        assert_eq!(
            a.prelude(&KNOBS_6_12),
            "echo NO_WA_IDLE > /sys/kernel/debug/sched/features || echo \"SCHEDLAB-ORACLE: cannot set NO_WA_IDLE\"\n\
             echo NO_WA_WEIGHT > /sys/kernel/debug/sched/features || echo \"SCHEDLAB-ORACLE: cannot set NO_WA_WEIGHT\"\n\
             echo 0 > /sys/kernel/debug/sched/migration_cost_ns || echo \"SCHEDLAB-ORACLE: cannot set sched_migration_cost_ns=0\"\n"
        );
        let (save, back) = restore(&[RealArm::parse("").unwrap(), a], &KNOBS_5_10);
        assert_eq!(
            save,
            "SCHEDLAB_T0=$(cat /proc/sys/kernel/sched_migration_cost_ns)\n\
             SCHEDLAB_KNOBS=\"sched_migration_cost_ns=/proc/sys/kernel/sched_migration_cost_ns\"\n"
        );
        assert_eq!(
            back,
            "echo $SCHEDLAB_T0 > /proc/sys/kernel/sched_migration_cost_ns\n\
             echo WA_IDLE > /sys/kernel/debug/sched_features\n\
             echo WA_WEIGHT > /sys/kernel/debug/sched_features\n"
        );
        // A default-off bit is put back off.
        let (_, back) = restore(&[RealArm::parse("NEXT_BUDDY").unwrap()], &KNOBS_6_12);
        assert_eq!(
            back,
            "echo NO_NEXT_BUDDY > /sys/kernel/debug/sched/features\n"
        );
    }

    /// A switch the kernel lacks names what it has; one only schedlab has says so.
    #[test]
    fn what_a_kernel_lacks_is_an_error_naming_what_it_has() {
        let e = RealArm::parse("NO_SIS_UTIL")
            .unwrap()
            .check(&KNOBS_5_10)
            .unwrap_err();
        assert!(
            e.contains("5.10 has no sched_features bit SIS_UTIL (schedlab's own, from v6.0)"),
            "{e}"
        );
        assert!(e.contains("SIS_PROP") && e.contains("WA_IDLE"), "{e}");
        let e = RealArm::parse("NO_SIS_PROP")
            .unwrap()
            .check(&KNOBS_6_12)
            .unwrap_err();
        assert!(e.contains("6.12 has no sched_features bit SIS_PROP"), "{e}");
        assert!(e.contains("SIS_UTIL"), "{e}");
        let e = RealArm::parse("IDLE_CPU_MASK")
            .unwrap()
            .check(&KNOBS_5_10)
            .unwrap_err();
        assert!(e.contains("schedlab's own, from seed 000"), "{e}");
        assert!(
            e.contains("the seed kit's 5.10 has it: `--kernel 5.10-seeds`"),
            "{e}"
        );
        let e = RealArm::parse("kernel.tunables.sched_latency_ns=1000000")
            .unwrap()
            .check(&KNOBS_6_12)
            .unwrap_err();
        assert!(
            e.contains("6.12 has no run-time tunable sched_latency_ns"),
            "{e}"
        );
        assert!(e.contains("sched_migration_cost_ns"), "{e}");
        let e = RealArm::parse("kernel.preset=v5.10").unwrap_err();
        assert!(e.contains("no run-time switch"), "{e}");
        let e = RealArm::parse("kernel.tunables.sched_nr_migrate=-1").unwrap_err();
        assert!(e.contains("not a non-negative integer"), "{e}");
        assert_eq!(knobs_of((6, 12)).unwrap().release, (6, 12));
        assert!(knobs_of((5, 6)).is_none());
    }

    /// The `/init` lines: save, then per run the restore, the arm, the job.
    #[test]
    fn an_ab_boot_sets_each_arm_before_its_run_and_restores_after() {
        let a = RealArm::parse("").unwrap();
        let b = RealArm::parse("NO_TTWU_QUEUE,kernel.tunables.sched_nr_migrate=8").unwrap();
        assert!(GuestAb::new(
            vec![a.clone(), RealArm::parse("SIS_UTIL").unwrap()],
            &KNOBS_5_10
        )
        .is_err());
        let ab = GuestAb::new(vec![a, b], &KNOBS_5_10).unwrap();
        let s = ab.script(&["hb".to_string()], 1, "run_job");
        let f = "/sys/kernel/debug/sched_features";
        let n = "/proc/sys/kernel/sched_nr_migrate";
        let back = format!("echo $SCHEDLAB_T0 > {n}\necho TTWU_QUEUE > {f}\n");
        let want = format!(
            "SCHEDLAB_T0=$(cat {n})\nSCHEDLAB_KNOBS=\"sched_nr_migrate={n}\"\n\
             {back}run_job hb hb.a.r1\n{back}\
             echo NO_TTWU_QUEUE > {f} || echo \"SCHEDLAB-ORACLE: cannot set NO_TTWU_QUEUE\"\n\
             echo 8 > {n} || echo \"SCHEDLAB-ORACLE: cannot set sched_nr_migrate=8\"\n\
             run_job hb hb.b.r1\n{back}"
        );
        assert_eq!(s, want);
    }

    #[test]
    fn repetitions_interleave_the_arms() {
        let r = ab_runs(&["hb".to_string()], 2, 2);
        let names: Vec<&str> = r.iter().map(|x| x.2.as_str()).collect();
        assert_eq!(names, ["hb.a.r1", "hb.b.r1", "hb.a.r2", "hb.b.r2"]);
        assert_eq!(r.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 1, 0, 1]);
    }
}
