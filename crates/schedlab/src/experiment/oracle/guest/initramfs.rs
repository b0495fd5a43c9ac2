//! The guest's root file system: an initramfs of a static busybox, the workload
//! binaries with the libraries `ldd` names, the virtio modules, the jobs' files and a
//! generated `/init` that sets the scheduler up as schedlab models it, copies sysfs
//! and the sched domains, runs every job under ftrace (`sched_*` tracepoints) and
//! writes the results as a tar onto the raw disk.

use super::{run, which, GuestJob, GuestRequest, Kernel, TOOLS};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Shared libraries (absolute paths) of `ldd` output, loader included; an error for
/// a library `ldd` could not find.
pub(crate) fn parse_ldd(output: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for l in output.lines() {
        let l = l.trim();
        if l.is_empty() || l.contains("statically linked") {
            continue;
        }
        let path = match l.split_once("=>") {
            Some((name, rhs)) => {
                let rhs = rhs.trim();
                if rhs.starts_with("not found") {
                    return Err(format!("library {} not found", name.trim()));
                }
                rhs.split_whitespace().next().unwrap_or("")
            }
            None => l.split_whitespace().next().unwrap_or(""),
        };
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// The binaries copied into the guest (`/opt/bin`).
const GUEST_BINARIES: &[&str] = &["rt-app", "hackbench"];

/// `sched_*` events each job traces.
pub const TRACE_EVENTS: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_fork",
    "sched_process_exit",
];

/// The marker `/init` prints when it starts.
pub const INIT_MARKER: &str = "SCHEDLAB-ORACLE: init at";

/// The marker `/init` prints once the results are on the disk.
pub const DONE_MARKER: &str = "SCHEDLAB-ORACLE-DONE";

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

pub(super) fn check_jobs(jobs: &[GuestJob]) -> Result<(), String> {
    if jobs.is_empty() {
        return Err("a guest run needs at least one job".into());
    }
    for (i, j) in jobs.iter().enumerate() {
        if !valid_name(&j.name) {
            return Err(format!(
                "job name `{}`: use letters, digits, `.`, `_` and `-` only",
                j.name
            ));
        }
        if jobs[..i].iter().any(|o| o.name == j.name) {
            return Err(format!("two jobs are named `{}`", j.name));
        }
        for (f, _) in &j.files {
            if !valid_name(f) || f == "command.sh" {
                return Err(format!(
                    "job `{}`: file name `{f}`: use a plain name (letters, digits, `.`, `_`, `-`; not command.sh)",
                    j.name
                ));
            }
        }
    }
    Ok(())
}

/// The result directory of a boot's warm-up run (dropped before the results are
/// written).
pub const WARMUP_JOB: &str = "warmup";

/// The runs of a boot in order: `(job, results)` with `results` `None` for the
/// job's own directory. The calibration runs once, first; then, when there is
/// another job, a warm-up run of the first one (results [`WARMUP_JOB`]); then every
/// other job once, and again for each repetition (`<name>.r<r>`).
pub(crate) fn job_runs(jobs: &[GuestJob], repetitions: u32) -> Vec<(String, Option<String>)> {
    let cal = super::super::CALIBRATE_JOB;
    let mut out: Vec<(String, Option<String>)> = jobs
        .iter()
        .filter(|j| j.name == cal)
        .map(|j| (j.name.clone(), None))
        .collect();
    let work: Vec<&GuestJob> = jobs.iter().filter(|j| j.name != cal).collect();
    if let Some(first) = work.first() {
        out.push((first.name.clone(), Some(WARMUP_JOB.to_string())));
    }
    for r in 1..=repetitions.max(1) {
        for j in &work {
            let res = (r > 1).then(|| super::super::repetition_name(&j.name, r));
            out.push((j.name.clone(), res));
        }
    }
    out
}

/// The result directories a boot of `jobs` leaves (`jobs/<name>`): the runs of
/// [`job_runs`] but the warm-up, or with an A/B the calibration and the arms'
/// runs ([`crate::experiment::oracle::knobs::ab_runs`]).
pub(crate) fn result_names(
    jobs: &[GuestJob],
    repetitions: u32,
    ab: Option<&crate::experiment::oracle::knobs::GuestAb>,
) -> Vec<String> {
    let cal = super::super::CALIBRATE_JOB;
    let Some(ab) = ab else {
        return job_runs(jobs, repetitions)
            .into_iter()
            .filter(|(_, out)| out.as_deref() != Some(WARMUP_JOB))
            .map(|(job, out)| out.unwrap_or(job))
            .collect();
    };
    let work: Vec<String> = jobs
        .iter()
        .filter(|j| j.name != cal)
        .map(|j| j.name.clone())
        .collect();
    jobs.iter()
        .filter(|j| j.name == cal)
        .map(|j| j.name.clone())
        .chain(
            crate::experiment::oracle::knobs::ab_runs(&work, ab.arms.len(), repetitions.max(1))
                .into_iter()
                .map(|r| r.2),
        )
        .collect()
}

/// The guest's `/init`: a busybox shell script.
pub(crate) fn init_script(
    modules: &[String],
    jobs: &[GuestJob],
    repetitions: u32,
    buffer_kb: u32,
    job_timeout_s: u64,
    ab: Option<&crate::experiment::oracle::knobs::GuestAb>,
) -> String {
    let mut s = String::new();
    s.push_str(
        r#"#!/bin/busybox sh
# Generated by schedlab (experiment::oracle::guest).
/bin/busybox --install -s
export PATH=/opt/bin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
O=/out
mkdir -p $O/jobs /tmp
cut -d' ' -f1 /proc/uptime > $O/boot_uptime
"#,
    );
    s.push_str(&format!("echo \"{INIT_MARKER} $(cat $O/boot_uptime) s\"\n"));
    for m in modules {
        s.push_str(&format!(
            "insmod /lib/oracle-modules/{m} || echo \"SCHEDLAB-ORACLE: insmod {m} failed\"\n"
        ));
    }
    s.push_str(
        r#"T=/sys/kernel/tracing
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
echo 1 > /proc/sys/kernel/sched_schedstats
[ -e /proc/sys/kernel/sched_autogroup_enabled ] && echo 0 > /proc/sys/kernel/sched_autogroup_enabled
[ -e /proc/sys/kernel/numa_balancing ] && echo 0 > /proc/sys/kernel/numa_balancing
uname -r > $O/uname_r
cat /proc/cmdline > $O/cmdline
# The sysfs files import_sysfs reads, at their own paths below $O/sysfs.
cpf() { [ -f "$1" ] && mkdir -p "$O/sysfs${1%/*}" && cat "$1" > "$O/sysfs$1" 2>/dev/null; }
S=/sys/devices/system
for f in $S/cpu/online $S/cpu/possible $S/node/online /proc/cpuinfo; do cpf $f; done
for c in $S/cpu/cpu[0-9]*; do
  for f in core_cpus_list thread_siblings_list package_cpus_list core_siblings_list physical_package_id cluster_cpus_list core_id die_id; do cpf $c/topology/$f; done
  cpf $c/cpu_capacity
  for k in $c/cache/index*; do for f in level type shared_cpu_list size; do cpf $k/$f; done; done
  for k in $c/cpuidle/state*; do for f in name latency residency power; do cpf $k/$f; done; done
done
for p in $S/cpu/cpufreq/policy*; do for f in related_cpus scaling_available_frequencies cpuinfo_max_freq cpuinfo_transition_latency; do cpf $p/$f; done; done
for n in $S/node/node[0-9]*; do cpf $n/cpulist; cpf $n/distance; done
# The sched domains as the kernel shows them.
# (6.x fills debugfs sched/domains only when verbose: `sched_verbose` on the command line.)
[ -e /sys/kernel/debug/sched/verbose ] && echo Y > /sys/kernel/debug/sched/verbose
D=/proc/sys/kernel/sched_domain
[ -d $D/cpu0 ] || D=/sys/kernel/debug/sched/domains
for c in $D/cpu[0-9]*; do for d in $c/domain[0-9]*; do
  [ -d $d ] || continue
  mkdir -p $O/domains/${c##*/}/${d##*/}
  for f in $d/*; do [ -f $f ] && cat $f > $O/domains/${c##*/}/${d##*/}/${f##*/} 2>/dev/null; done
done; done
for f in /sys/kernel/debug/sched/features /sys/kernel/debug/sched_features; do [ -f $f ] && cat $f > $O/sched_features; done
cat /proc/schedstat > $O/schedstat
i=0; while [ ! -b /dev/vda ] && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done
[ -b /dev/vda ] || echo "SCHEDLAB-ORACLE: no /dev/vda"
# The tracepoints are enabled once, with tracing off: enabling one patches kernel
# text (a static key), and under multi-threaded TCG each patch risks an int3 oops.
echo 0 > $T/tracing_on
echo > $T/set_event
"#,
    );
    for e in TRACE_EVENTS {
        s.push_str(&format!("echo sched:{e} >> $T/set_event\n"));
    }
    s.push_str(&format!(
        r#"echo mono > $T/trace_clock
# run_job FILES [RESULTS]: the job in /jobs/FILES, its results in jobs/RESULTS.
run_job() {{
  J=$O/jobs/${{2:-$1}}
  mkdir -p $J
  echo "SCHEDLAB-ORACLE: job ${{2:-$1}}"
  echo 0 > $T/tracing_on
  echo {buffer_kb} > $T/buffer_size_kb
  cat $T/buffer_size_kb > $J/buffer_size_kb
  echo > $T/trace
  # The scheduler's switches as this run starts (an A/B's arm set just before).
  for f in /sys/kernel/debug/sched/features /sys/kernel/debug/sched_features; do [ -f $f ] && cat $f > $J/{feat}; done
  [ -n "$SCHEDLAB_KNOBS" ] && for k in $SCHEDLAB_KNOBS; do echo "${{k%%=*}} $(cat ${{k#*=}})"; done > $J/{tun}
"#,
        feat = crate::experiment::oracle::ab::FEATURES_FILE,
        tun = crate::experiment::oracle::ab::TUNABLES_FILE,
    ));
    s.push_str(&format!(
        r#"  cd /jobs/$1
  cat /proc/schedstat > $J/schedstat.before
  t0=$(cut -d' ' -f1 /proc/uptime)
  echo 1 > $T/tracing_on
  timeout -k 5 {job_timeout_s} sh ./command.sh > $J/stdout 2>&1
  echo $? > $J/exit_status
  echo 0 > $T/tracing_on
  t1=$(cut -d' ' -f1 /proc/uptime)
  cat /proc/schedstat > $J/schedstat.after
  echo "$t0 $t1" > $J/uptime
  cat $T/trace > $J/trace.txt
  for c in $T/per_cpu/cpu[0-9]*; do echo "${{c##*/}} $(grep -E '^(overrun|dropped events):' $c/stats | tr '\n' ' ')"; done > $J/dropped
  cd /
}}
"#
    ));
    // An A/B: the calibration and the warm-up as usual, then the arms' runs.
    let runs = job_runs(jobs, if ab.is_some() { 0 } else { repetitions });
    let runs = match ab {
        Some(_) => runs
            .into_iter()
            .filter(|(_, out)| out.is_none() || out.as_deref() == Some(WARMUP_JOB))
            .filter(|(j, out)| out.is_some() || j == super::super::CALIBRATE_JOB)
            .collect(),
        None => runs,
    };
    for run in runs {
        match run {
            (job, None) => s.push_str(&format!("run_job {job}\n")),
            (job, Some(out)) if out == WARMUP_JOB => s.push_str(&format!(
                "run_job {job} {WARMUP_JOB}\nrm -rf $O/jobs/{WARMUP_JOB}\n"
            )),
            (job, Some(out)) => s.push_str(&format!("run_job {job} {out}\n")),
        }
    }
    if let Some(ab) = ab {
        let work: Vec<String> = jobs
            .iter()
            .filter(|j| j.name != super::super::CALIBRATE_JOB)
            .map(|j| j.name.clone())
            .collect();
        s.push_str(&ab.script(&work, repetitions.max(1), "run_job"));
    }
    s.push_str(&format!(
        r#"cd /
echo "SCHEDLAB-ORACLE: writing results"
tar cf /dev/vda out && sync && echo "{DONE_MARKER}"
poweroff -f
"#
    ));
    s
}

pub(super) fn write_file(p: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

fn copy_into(root: &Path, src: &Path, dest_rel: &Path) -> Result<(), String> {
    let bytes = std::fs::read(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    let dest = root.join(dest_rel);
    write_file(&dest, &bytes)?;
    set_mode(&dest, 0o755)
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", p.display()))
}

/// A module file as an uncompressed `.ko` (busybox insmod reads plain ELF).
fn module_bytes(src: &Path) -> Result<Vec<u8>, String> {
    let n = src.to_string_lossy();
    if n.ends_with(".ko.xz") {
        let o = Command::new("busybox")
            .arg("xzcat")
            .arg(src)
            .output()
            .map_err(|e| {
                format!(
                    "xzcat {}: {e} (Debian package busybox-static)",
                    src.display()
                )
            })?;
        if !o.status.success() {
            return Err(format!("busybox xzcat {} failed", src.display()));
        }
        Ok(o.stdout)
    } else if n.ends_with(".ko.zst") {
        let o = Command::new("zstd")
            .args(["-dc"])
            .arg(src)
            .output()
            .map_err(|e| format!("zstd -dc {}: {e} (Debian package zstd)", src.display()))?;
        if !o.status.success() {
            return Err(format!("zstd -dc {} failed", src.display()));
        }
        Ok(o.stdout)
    } else {
        std::fs::read(src).map_err(|e| format!("cannot read {}: {e}", src.display()))
    }
}

/// Build the initramfs of `req` into `work/initrd.gz`.
pub(super) fn build_initramfs(
    req: &GuestRequest,
    kernel: &Kernel,
    work: &Path,
) -> Result<PathBuf, String> {
    let root = work.join("root");
    for d in [
        "bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp", "opt/bin",
    ] {
        std::fs::create_dir_all(root.join(d))
            .map_err(|e| format!("cannot create {}: {e}", root.join(d).display()))?;
    }
    let busybox = which("busybox").ok_or("`busybox` not found (Debian package busybox-static)")?;
    copy_into(&root, &busybox, Path::new("bin/busybox"))?;
    let mut libs: Vec<PathBuf> = Vec::new();
    for b in GUEST_BINARIES {
        let p = which(b).ok_or_else(|| {
            let pkg = TOOLS.iter().find(|(t, _)| t == b).map_or("?", |(_, p)| p);
            format!("`{b}` not found (Debian package {pkg})")
        })?;
        copy_into(&root, &p, &Path::new("opt/bin").join(b))?;
        let ldd = run(Command::new("ldd").arg(&p), &format!("ldd {}", p.display()))?;
        for l in parse_ldd(&ldd).map_err(|e| format!("{}: {e}", p.display()))? {
            if !libs.contains(&l) {
                libs.push(l);
            }
        }
    }
    // glibc dlopens libgcc_s at thread exit: take it from libc's directory.
    if let Some(libc) = libs.iter().find(|l| {
        l.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("libc.so"))
    }) {
        let gcc = libc.with_file_name("libgcc_s.so.1");
        if gcc.exists() && !libs.contains(&gcc) {
            libs.push(gcc);
        }
    }
    for l in &libs {
        copy_into(&root, l, l.strip_prefix("/").unwrap_or(l))?;
    }
    let mut names = Vec::new();
    for (i, m) in kernel.modules.iter().enumerate() {
        let base = m
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("m.ko")
            .trim_end_matches(".xz")
            .trim_end_matches(".zst")
            .to_string();
        let name = format!("{i:02}-{base}");
        write_file(
            &root.join("lib/oracle-modules").join(&name),
            &module_bytes(m)?,
        )?;
        names.push(name);
    }
    for j in &req.jobs {
        let d = root.join("jobs").join(&j.name);
        write_file(&d.join("command.sh"), format!("{}\n", j.command).as_bytes())?;
        for (f, bytes) in &j.files {
            write_file(&d.join(f), bytes)?;
        }
    }
    let init = root.join("init");
    write_file(
        &init,
        init_script(
            &names,
            &req.jobs,
            req.repetitions,
            req.buffer_kb,
            req.job_timeout.as_secs().max(1),
            req.ab.as_ref(),
        )
        .as_bytes(),
    )?;
    set_mode(&init, 0o755)?;
    let initrd = work.join("initrd.gz");
    let sh = format!(
        "cd '{}' && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1 > '{}'",
        root.display(),
        initrd.display()
    );
    run(
        Command::new("sh").arg("-c").arg(&sh),
        "building the initramfs (cpio | gzip)",
    )?;
    Ok(initrd)
}

#[cfg(test)]
mod tests {
    use super::super::tests::job;
    use super::*;

    /// Positions of `needles` in `hay`, each searched after the previous one; panics
    /// naming the first one missing or out of order.
    fn in_order(hay: &str, needles: &[&str]) {
        let mut from = 0;
        for n in needles {
            match hay[from..].find(n) {
                Some(i) => from += i + n.len(),
                None => panic!("`{n}` missing or out of order in:\n{hay}"),
            }
        }
    }

    #[test]
    fn init_script_steps_in_order() {
        let mods = vec!["00-virtio.ko".to_string(), "01-virtio_blk.ko".to_string()];
        let s = init_script(&mods, &[job("first"), job("second")], 1, 32768, 120, None);
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        // No job touches the set of events: enabling one patches kernel text.
        let jobs = &s[s.find("run_job() {").unwrap()..];
        assert!(!jobs.contains("set_event"), "{jobs}");
        in_order(
            &s,
            &[
                "mount -t devtmpfs devtmpfs /dev",
                "mount -t proc proc /proc",
                "mount -t sysfs sysfs /sys",
                "mount -t debugfs debugfs /sys/kernel/debug",
                "mount -t tracefs tracefs /sys/kernel/tracing",
                "insmod /lib/oracle-modules/00-virtio.ko",
                "insmod /lib/oracle-modules/01-virtio_blk.ko",
                "echo 1 > /proc/sys/kernel/sched_schedstats",
                "echo 0 > /proc/sys/kernel/sched_autogroup_enabled",
                "uname -r > $O/uname_r",
                "cpf $c/topology/$f",
                "cpf $n/distance",
                "/proc/sys/kernel/sched_domain",
                "/sys/kernel/debug/sched/domains",
                "cat /proc/schedstat > $O/schedstat",
                // The tracepoints, once per boot with tracing off (no text
                // patching between jobs), then the job function: the buffer is
                // reset and sized first.
                "echo 0 > $T/tracing_on\necho > $T/set_event\n",
                "echo sched:sched_switch >> $T/set_event",
                "echo sched:sched_waking >> $T/set_event",
                "echo sched:sched_wakeup >> $T/set_event",
                "echo sched:sched_wakeup_new >> $T/set_event",
                "echo sched:sched_migrate_task >> $T/set_event",
                "echo sched:sched_process_fork >> $T/set_event",
                "echo sched:sched_process_exit >> $T/set_event",
                "echo mono > $T/trace_clock",
                "run_job() {",
                "echo 0 > $T/tracing_on",
                "echo 32768 > $T/buffer_size_kb",
                "cat $T/buffer_size_kb > $J/buffer_size_kb",
                "echo > $T/trace",
                "cat /proc/schedstat > $J/schedstat.before",
                "echo 1 > $T/tracing_on",
                "timeout -k 5 120 sh ./command.sh > $J/stdout 2>&1",
                "echo $? > $J/exit_status",
                "echo 0 > $T/tracing_on",
                "cat /proc/schedstat > $J/schedstat.after",
                "cat $T/trace > $J/trace.txt",
                "$c/stats",
                "> $J/dropped",
                // Then a warm-up run of the first job, dropped; the jobs, in the
                // request's order; and the way out.
                "run_job first warmup\nrm -rf $O/jobs/warmup\nrun_job first\nrun_job second\n",
                "tar cf /dev/vda out",
                DONE_MARKER,
                "poweroff -f",
            ],
        );
        assert_eq!(s.matches("run_job first").count(), 2);
    }

    #[test]
    fn repetitions_interleave_after_the_calibration_and_one_warm_up() {
        let runs = job_runs(&[job("calibrate"), job("a"), job("b")], 3);
        let names: Vec<String> = runs
            .iter()
            .map(|(j, o)| format!("{j}>{}", o.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            names,
            [
                "calibrate>",
                "a>warmup",
                "a>",
                "b>",
                "a>a.r2",
                "b>b.r2",
                "a>a.r3",
                "b>b.r3"
            ]
        );
        // Only the calibration: no warm-up.
        assert_eq!(job_runs(&[job("calibrate")], 5).len(), 1);
        let s = init_script(&[], &[job("a")], 2, 1024, 60, None);
        assert!(
            s.contains("run_job a warmup\nrm -rf $O/jobs/warmup\nrun_job a\nrun_job a a.r2\n"),
            "{s}"
        );
    }

    /// An A/B boot: the calibration and the warm-up at the boot defaults, then
    /// only the arms' interleaved runs (no plain repetition).
    #[test]
    fn an_ab_boot_runs_the_arms_after_the_warm_up() {
        use crate::experiment::oracle::knobs::{GuestAb, RealArm, KNOBS_6_12};
        let arms = vec![
            RealArm::parse("").unwrap(),
            RealArm::parse("NO_DELAY_DEQUEUE").unwrap(),
        ];
        let ab = GuestAb::new(arms, &KNOBS_6_12).unwrap();
        let s = init_script(&[], &[job("calibrate"), job("a")], 2, 1024, 60, Some(&ab));
        let runs: Vec<&str> = s.lines().filter(|l| l.starts_with("run_job ")).collect();
        assert_eq!(
            runs,
            [
                "run_job calibrate",
                "run_job a warmup",
                "run_job a a.a.r1",
                "run_job a a.b.r1",
                "run_job a a.a.r2",
                "run_job a a.b.r2"
            ]
        );
        let b = s.find("run_job a a.b.r1").unwrap();
        let set = s
            .find("echo NO_DELAY_DEQUEUE > /sys/kernel/debug/sched/features")
            .unwrap();
        let back = s[b..].find("echo DELAY_DEQUEUE > /sys/kernel/debug/sched/features");
        assert!(set < b && back.is_some(), "{s}");
        assert!(s.find("tar cf /dev/vda").unwrap() > b);
        let names = result_names(&[job("calibrate"), job("a")], 2, Some(&ab));
        assert_eq!(names, ["calibrate", "a.a.r1", "a.b.r1", "a.a.r2", "a.b.r2"]);
        let plain = result_names(&[job("calibrate"), job("a")], 2, None);
        assert_eq!(plain, ["calibrate", "a", "a.r2"]);
        // Every run reads the switches back before it starts, the features file
        // and the tunables the A/B touches.
        let f = &s[s.find("run_job() {").unwrap()..];
        assert!(f.contains("cat $f > $J/sched_features"), "{f}");
        assert!(
            f.contains(
                "for k in $SCHEDLAB_KNOBS; do echo \"${k%%=*} $(cat ${k#*=})\"; done > $J/tunables"
            ),
            "{f}"
        );
    }

    #[test]
    fn ldd_output_gives_libraries_and_loader() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd6b5f2000)\n\
\tlibjson-c.so.5 => /lib/x86_64-linux-gnu/libjson-c.so.5 (0x00007f1c0a6c0000)\n\
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f1c0a5e1000)\n\
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1c0a400000)\n\
\t/lib64/ld-linux-x86-64.so.2 (0x00007f1c0a6f0000)\n";
        assert_eq!(
            parse_ldd(out).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libjson-c.so.5",
                "/lib/x86_64-linux-gnu/libm.so.6",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
        assert_eq!(
            parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err(),
            "library libfoo.so.1 not found"
        );
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
    }
}
