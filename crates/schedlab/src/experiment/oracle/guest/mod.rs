//! The guest runner: boot an unmodified Linux kernel in a QEMU (TCG) guest of a
//! chosen topology, run jobs in it under ftrace, and bring back what the kernel saw.
//!
//! The guest has no disk image and no distribution. Its root file system is an
//! initramfs built here: a static busybox (the shell and every small tool), the
//! workload binaries copied from the host together with every shared library `ldd`
//! lists (plus the dynamic loader and `libgcc_s.so.1`, which glibc loads lazily when
//! a thread exits — rt-app's threads abort without it), the virtio modules the kernel
//! needs to see a block device, the jobs' input files, and a generated `/init`.
//!
//! `/init` prepares the scheduler as schedlab models it (schedstats on, autogroup off,
//! no NUMA balancing), records the kernel release, copies the sysfs files that
//! [`crate::machine::sysfs::import_sysfs`] reads — so the guest's machine is
//! imported by the same code as any host — and the sched-domain tree the kernel
//! built (5.10: `/proc/sys/kernel/sched_domain`, 6.x: debugfs `sched/domains`).
//! Then each job runs in order under a fresh trace buffer with the `sched_*`
//! tracepoints on, between two `/proc/schedstat` snapshots. The results leave the
//! guest as a tar archive written straight onto a raw virtio disk (`/dev/vda`) that
//! the host created and reads back afterwards: the serial console is far too slow
//! for traces of megabytes. `/init` then powers the guest off.
//!
//! Kernels come as Debian packages fetched with a private apt configuration (a
//! sources list naming one suite of the host's Debian mirror, private lists and
//! cache: the system's apt state is never touched), unpacked once into a cache
//! directory and reused. A kernel of one's own can be given as a bzImage path.
//!
//! Multi-threaded TCG runs the vCPUs concurrently, as hardware does, but sometimes
//! breaks the guest early: an `int3` trap in `sched_clock_cpu` while the kernel
//! patches its own text, other oopses in the scheduler during boot, or a boot that
//! hangs in RCU stalls (measured with 6.12 on 16 vCPUs: 2 of 4 boots; and with 5.10
//! on 8 vCPUs after `/init`, RCU's kthread starved for minutes, while a second QEMU
//! loaded the host). A crash, a stall before `/init`, no progress line from `/init`
//! for a job timeout plus two minutes, a boot or run timeout, or missing results make
//! the runner kill QEMU and boot again, up to a set number of attempts (all recorded in
//! `meta.json`). Single-threaded TCG does not show these failures, but runs one vCPU
//! at a time in turns, which distorts concurrency.
//!
//! Artifacts (`out_dir`):
//!
//! ```text
//! meta.json                  kernel release, QEMU argv, boot/job seconds, drops, attempts
//! console.log                the serial console of the successful boot
//! uname_r, cmdline           `uname -r`, /proc/cmdline
//! schedstat                  /proc/schedstat after boot
//! sched_features             the kernel's sched_features (debugfs)
//! sysfs/sys/devices/system/… the subset import_sysfs reads (and sysfs/proc/cpuinfo)
//! domains/cpuN/domainM/<f>   the kernel's sched domain files, as they read
//! jobs/<name>/trace.txt      ftrace text of the job
//! jobs/<name>/schedstat.before, schedstat.after
//! jobs/<name>/dropped        per CPU: `cpuN overrun: X dropped events: Y`
//! jobs/<name>/buffer_size_kb the per-CPU buffer the kernel granted
//! jobs/<name>/stdout         the command's stdout and stderr
//! jobs/<name>/exit_status    its exit status (143 or 137: timed out, SIGTERM or SIGKILL)
//! jobs/<name>/uptime         guest uptime (s) at start and end of the job
//! jobs/<name>.r<r>/…         repetition r ≥ 2 of a job
//! jobs/<name>.<arm>.r<r>/…   with an A/B (`GuestRequest::ab`): run r of arm a, b, …
//! ```
//!
//! **Where things are.** This file holds a run's request and records, the host
//! tools, and the boot loop that watches the console and retries ([`run_guest`]);
//! `kernel.rs` the guest kernels (the Debian packages through a private apt
//! configuration, the sched_ext kit, a bzImage of one's own) and their virtio
//! modules; `initramfs.rs` the root file system and its `/init`; [`qemu`] the
//! topology as QEMU's command line.

mod bundle;
mod initramfs;
mod kernel;
pub mod qemu;

pub use bundle::unpack;
pub(crate) use bundle::{bundle_name, pack};
pub use initramfs::{DONE_MARKER, INIT_MARKER, TRACE_EVENTS, WARMUP_JOB};
pub(crate) use kernel::default_cache_dir;
pub use kernel::{check_kernel_source, AptConfig, Kernel, KernelChoice, PkgFilter};

use initramfs::{build_initramfs, check_jobs, result_names};
use kernel::prepare_kernel;
use qemu::{AccelThreads, GuestTopology, DEFAULT_MAX_VCPUS, QEMU_BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One job run in the guest, in a working directory holding `files`, as
/// `/bin/sh ./command.sh` (rt-app and hackbench are on `PATH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestJob {
    /// Names the job's result directory: letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// A shell command (several lines allowed).
    pub command: String,
    /// (file name, contents) put in the job's working directory.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Everything one guest boot needs.
#[derive(Clone, Debug)]
pub struct GuestRequest {
    pub topology: GuestTopology,
    pub kernel: KernelChoice,
    pub jobs: Vec<GuestJob>,
    /// Guest RAM (MiB); it holds the trace buffers and the results too.
    pub mem_mb: u32,
    /// Trace buffer per CPU (KiB, `buffer_size_kb`).
    pub buffer_kb: u32,
    /// Wall-clock limit of one boot (boot, all jobs, writing the results).
    pub timeout: Duration,
    /// Limit from QEMU's start to `/init` running; a boot that takes longer is taken
    /// as hung, killed and retried.
    pub boot_timeout: Duration,
    /// Limit of each job inside the guest (busybox `timeout`, then SIGKILL).
    pub job_timeout: Duration,
    /// Kernel and apt cache; `None`: `default_cache_dir`.
    pub cache_dir: Option<PathBuf>,
    /// Runs of every job but the calibration, interleaved (all jobs once, then all
    /// again): the first run's results are the job's, repetition `r` ≥ 2 goes to
    /// `jobs/<name>.r<r>`. Before them one untraced-for-keeps warm-up run of the
    /// first such job (its results dropped): the first traced run of a boot can
    /// differ from the rest.
    pub repetitions: u32,
    pub accel_threads: AccelThreads,
    /// Boots tried before giving up (≥ 1).
    pub attempts: u32,
    /// Refuse larger guests (see [`DEFAULT_MAX_VCPUS`]).
    pub max_vcpus: usize,
    /// Extra kernel command line, after [`qemu::BASE_APPEND`].
    pub append: String,
    /// An A/B in this boot: then every job but the calibration runs `repetitions`
    /// times per arm, arms interleaved, into `jobs/<name>.<arm>.r<r>`
    /// ([`crate::experiment::oracle::knobs::GuestAb::script`]).
    pub ab: Option<crate::experiment::oracle::knobs::GuestAb>,
}

impl GuestRequest {
    /// A request with the defaults: 2 GiB, 16 MiB of trace buffer per CPU, 20 min
    /// per run (5 min to reach `/init`), 5 min per job, multi-threaded TCG with 3 attempts, at most 32 vCPUs.
    pub fn new(topology: GuestTopology, kernel: KernelChoice, jobs: Vec<GuestJob>) -> Self {
        GuestRequest {
            topology,
            kernel,
            jobs,
            mem_mb: 2048,
            buffer_kb: 16384,
            timeout: Duration::from_secs(1200),
            boot_timeout: Duration::from_secs(300),
            job_timeout: Duration::from_secs(300),
            cache_dir: None,
            repetitions: 1,
            accel_threads: AccelThreads::Multi,
            attempts: 3,
            max_vcpus: DEFAULT_MAX_VCPUS,
            append: String::new(),
            ab: None,
        }
    }
}

/// One boot attempt and how it ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Attempt {
    pub outcome: String,
    pub wall_s: f64,
}

/// What one job did, from the guest's records.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobMeta {
    pub name: String,
    /// Guest seconds from tracing on to tracing off.
    pub seconds: f64,
    pub exit_status: i32,
    /// Sum over CPUs of `dropped events` and of `overrun` (both 0 for a complete trace).
    pub dropped_events: u64,
    pub overrun: u64,
    pub trace_bytes: u64,
}

/// `meta.json`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GuestMeta {
    pub kernel: String,
    pub kernel_package: Option<String>,
    pub kernel_release: String,
    pub topology: GuestTopology,
    pub qemu_argv: Vec<String>,
    /// Guest uptime when `/init` started (≈ wall seconds: without icount the guest
    /// clock is the host's).
    pub boot_s: f64,
    /// Host wall seconds from QEMU's start until `/init` ran (firmware, kernel
    /// decompression and boot: the cost of a boot as a user sees it).
    pub host_boot_s: f64,
    /// Host wall seconds of the successful boot, from QEMU's start to its exit.
    pub wall_s: f64,
    pub buffer_kb: u32,
    pub jobs: Vec<JobMeta>,
    pub attempts: Vec<Attempt>,
}

/// A finished guest run.
#[derive(Clone, Debug)]
pub struct GuestRun {
    pub out_dir: PathBuf,
    pub meta: GuestMeta,
}

// ---------------------------------------------------------------------------
// Host tools.

/// (tool, Debian package) of every host program the runner uses.
pub const TOOLS: &[(&str, &str)] = &[
    (QEMU_BIN, "qemu-system-x86"),
    ("busybox", "busybox-static"),
    ("cpio", "cpio"),
    ("gzip", "gzip"),
    ("tar", "tar"),
    ("apt-get", "apt"),
    ("apt-cache", "apt"),
    ("dpkg", "dpkg"),
    ("rt-app", "rt-app"),
    ("hackbench", "rt-tests"),
    ("ldd", "libc-bin"),
];

/// The path of `tool` on `PATH`, or in the sbin directories a user's `PATH` may
/// lack.
pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// True when the ELF file has no program interpreter (statically linked).
fn is_static_elf(bytes: &[u8]) -> bool {
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if bytes.get(..5) != Some(b"\x7fELF\x02") {
        return false;
    }
    let (Some(phoff), Some(phsz), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    (0..phnum as usize).all(|i| {
        let o = phoff as usize + i * phsz as usize;
        bytes.get(o..o + 4) != Some(&3u32.to_le_bytes()[..]) // PT_INTERP
    })
}

/// Every host tool the runner needs, or an error naming the Debian packages that
/// provide the missing ones and the command that installs them all
/// (`tools/oracle-deps.sh`). A missing tool is the user's environment: the
/// commands report it as an input error (exit 2) before any boot.
pub fn check_tools() -> Result<(), String> {
    let mut missing: Vec<String> = Vec::new();
    for (tool, pkg) in TOOLS {
        match which(tool) {
            None => missing.push(format!("`{tool}` (Debian package {pkg})")),
            Some(p) if *tool == "busybox" => {
                let ok = std::fs::read(&p)
                    .map(|b| is_static_elf(&b))
                    .unwrap_or(false);
                if !ok {
                    missing.push(format!(
                        "a static `busybox` ({} is dynamically linked; Debian package busybox-static)",
                        p.display()
                    ));
                }
            }
            Some(_) => {}
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the QEMU oracle needs {} on this host: install them all with `sh tools/oracle-deps.sh` (Debian or Ubuntu)",
            missing.join(", ")
        ))
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Write a file atomically ([`crate::files::write_atomic`]), creating its directory.
pub fn write_atomic(p: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    crate::files::write_atomic(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

// ---------------------------------------------------------------------------
// Running.

/// Extract the tar archive at the start of `image` (the guest's raw disk) into
/// `dest` (created).
pub(crate) fn extract_tar(image: &Path, dest: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    run(
        Command::new("tar")
            .arg("xf")
            .arg(image)
            .arg("-C")
            .arg(dest)
            .arg("--no-same-owner")
            .arg("--no-same-permissions"),
        &format!("reading the guest's results from {}", image.display()),
    )
    .map(|_| ())
}

/// The last lines of a console log, for error messages.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Why a boot failed, from its console log: the first line that reports a kernel
/// crash (the trap or oops comes before the panic it leads to).
fn crash_reason(console: &str) -> Option<String> {
    const PATTERNS: &[&str] = &[
        "int3:",
        "invalid opcode:",
        "general protection fault",
        "BUG:",
        "Oops",
        "Kernel panic",
    ];
    console
        .lines()
        .find(|l| PATTERNS.iter().any(|p| l.contains(p)))
        .map(|l| format!("guest kernel crashed: {}", l.trim()))
}

fn parse_dropped(text: &str) -> (u64, u64) {
    let (mut dropped, mut overrun) = (0, 0);
    for l in text.lines() {
        let mut it = l.split_whitespace().peekable();
        while let Some(w) = it.next() {
            match w {
                "overrun:" => overrun += it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
                "events:" => dropped += it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
                _ => {}
            }
        }
    }
    (dropped, overrun)
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// What, printed on the console before `/init` runs, means the boot will not
/// finish: a crash, or an RCU stall (seen with 6.12 on 16 vCPUs under multi-threaded
/// TCG: the boot hangs for good).
fn boot_hang(console: &str) -> Option<String> {
    if let Some(c) = crash_reason(console) {
        return Some(c);
    }
    console
        .lines()
        .find(|l| l.contains("rcu: INFO:") || l.contains("self-detected stall"))
        .map(|l| format!("guest boot hung: {}", l.trim()))
}

/// The progress lines `/init` prints (one per job, and around the results): a live
/// guest prints one at least every job timeout.
fn progress_marks(console: &str) -> usize {
    console.matches("SCHEDLAB-ORACLE").count()
}

/// Why a guest that stopped printing progress is taken as hung: the last RCU stall or
/// soft-lockup report on its console, if any.
fn hang_evidence(console: &str) -> String {
    console
        .lines()
        .rev()
        .find(|l| l.contains("rcu") && l.contains("starved") || l.contains("soft lockup"))
        .map_or_else(String::new, |l| format!(" (last: {})", l.trim()))
}

/// Boot once: Ok((wall seconds, seconds until `/init` ran)) when the results are on
/// the disk. The guest is killed when `/init` has not started after `boot_timeout`
/// or the console shows a crash or stall before it; when, after `/init`, no progress
/// line came for `progress_timeout` (a job is bounded inside the guest, so only a
/// hung kernel stops them: seen under multi-threaded TCG on a loaded host, RCU's
/// kthread starved for minutes); and when the whole run exceeds `timeout`.
fn boot(
    argv: &[String],
    console: &Path,
    timeout: Duration,
    boot_timeout: Duration,
    progress_timeout: Duration,
) -> Result<(f64, f64), (String, f64)> {
    let start = Instant::now();
    let stderr_path = console.with_file_name("qemu.stderr");
    let stderr_file = std::fs::File::create(&stderr_path)
        .map_err(|e| (format!("cannot create {}: {e}", stderr_path.display()), 0.0))?;
    let mut child = Command::new(argv[0].as_str())
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file)
        .spawn()
        .map_err(|e| {
            (
                format!("cannot start {QEMU_BIN}: {e} (Debian package qemu-system-x86)"),
                0.0,
            )
        })?;
    let mut boot_s = None;
    let mut killed: Option<String> = None;
    let (mut marks, mut last_progress) = (0, Instant::now());
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|e| (format!("{QEMU_BIN}: {e}"), start.elapsed().as_secs_f64()))?
        {
            break Some(st);
        }
        let log = String::from_utf8_lossy(&std::fs::read(console).unwrap_or_default()).into_owned();
        if boot_s.is_some() {
            let m = progress_marks(&log);
            if m > marks {
                (marks, last_progress) = (m, Instant::now());
            } else if last_progress.elapsed() > progress_timeout {
                killed = Some(format!(
                    "the guest printed no progress for {} s after /init: hung{}",
                    progress_timeout.as_secs(),
                    hang_evidence(&log)
                ));
            }
        } else {
            if log.contains(INIT_MARKER) {
                boot_s = Some(start.elapsed().as_secs_f64());
            } else if let Some(why) = boot_hang(&log) {
                killed = Some(why);
            } else if start.elapsed() > boot_timeout {
                killed = Some(format!(
                    "/init did not start within {} s (boot hung)",
                    boot_timeout.as_secs()
                ));
            }
        }
        if killed.is_none() && start.elapsed() > timeout {
            killed = Some(format!("timed out after {} s", timeout.as_secs()));
        }
        if killed.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let wall = start.elapsed().as_secs_f64();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let log = String::from_utf8_lossy(&std::fs::read(console).unwrap_or_default()).into_owned();
    if status.is_some() && log.contains(DONE_MARKER) {
        return Ok((wall, boot_s.unwrap_or(f64::NAN)));
    }
    let why = match (status, killed) {
        (_, Some(k)) => k,
        (Some(st), None) if !st.success() => {
            format!("{QEMU_BIN} failed ({st}): {}", stderr.trim())
        }
        _ => crash_reason(&log).unwrap_or_else(|| "the guest stopped without results".into()),
    };
    let t = tail(&log, 15);
    Err((
        if t.is_empty() {
            format!("{why} (console empty)")
        } else {
            format!("{why}; console tail:\n{t}")
        },
        wall,
    ))
}

/// Boot the guest of `req`, run its jobs, and leave the artifacts (see the module
/// documentation) in `out_dir`, which must not exist or be empty or hold an earlier
/// run (`meta.json`), which is replaced. The directory appears complete or not at all.
pub fn run_guest(req: &GuestRequest, out_dir: &Path) -> Result<GuestRun, String> {
    check_jobs(&req.jobs)?;
    req.topology.check_size(req.max_vcpus)?;
    if req.attempts == 0 {
        return Err("attempts must be at least 1".into());
    }
    // The trace buffers live in guest RAM, and so do the trace texts until the end.
    let ring_mb = req.topology.nr_cpus() as u64 * req.buffer_kb as u64 / 1024;
    if (req.mem_mb as u64) < 256 + 2 * ring_mb {
        return Err(format!(
            "guest memory {} MiB is too small for {} CPUs × {} KiB of trace buffer: give at least {} MiB (256 + twice the buffers) or a smaller buffer",
            req.mem_mb,
            req.topology.nr_cpus(),
            req.buffer_kb,
            256 + 2 * ring_mb
        ));
    }
    if let Ok(mut rd) = std::fs::read_dir(out_dir) {
        if rd.next().is_some() && !out_dir.join("meta.json").exists() {
            return Err(format!(
                "{} exists and holds something else than a guest run; give an empty or new directory",
                out_dir.display()
            ));
        }
    }
    check_tools()?;
    let cache = match &req.cache_dir {
        Some(c) => c.clone(),
        None => default_cache_dir()?,
    };
    let kernel = prepare_kernel(&req.kernel, &cache)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let work = std::env::temp_dir().join(format!("schedlab-oracle-{}-{stamp}", std::process::id()));
    let result = run_in(req, &kernel, &work, out_dir);
    if std::env::var_os("SCHEDLAB_ORACLE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

fn run_in(
    req: &GuestRequest,
    kernel: &Kernel,
    work: &Path,
    out_dir: &Path,
) -> Result<GuestRun, String> {
    std::fs::create_dir_all(work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let initrd = build_initramfs(req, kernel, work)?;
    let n = req.topology.nr_cpus() as u64;
    // Room for each job's trace text (≈ 3× the binary buffer at most) and the rest.
    let disk_bytes = (64 << 20) + req.jobs.len() as u64 * n * req.buffer_kb as u64 * 1024 * 3;
    let disk = work.join("out.img");
    let console = work.join("console.log");
    let mut argv = vec![QEMU_BIN.to_string()];
    argv.extend(req.topology.qemu_args(
        &kernel.bzimage,
        &initrd,
        &disk,
        req.mem_mb,
        &req.append,
        req.accel_threads,
        Some(&console),
    ));
    let mut attempts = Vec::new();
    let mut wall = None;
    for _ in 0..req.attempts {
        // A fresh, zeroed (sparse) disk each time.
        let _ = std::fs::remove_file(&disk);
        let f = std::fs::File::create(&disk)
            .map_err(|e| format!("cannot create {}: {e}", disk.display()))?;
        f.set_len(disk_bytes)
            .map_err(|e| format!("cannot size {}: {e}", disk.display()))?;
        drop(f);
        let _ = std::fs::remove_file(&console);
        // Every job is bounded by `job_timeout` inside the guest; saving its trace
        // takes a little more.
        let progress_timeout = req.job_timeout + Duration::from_secs(120);
        match boot(
            &argv,
            &console,
            req.timeout,
            req.boot_timeout,
            progress_timeout,
        ) {
            Ok((w, b)) => {
                attempts.push(Attempt {
                    outcome: "ok".into(),
                    wall_s: w,
                });
                wall = Some((w, b));
                break;
            }
            Err((e, w)) => attempts.push(Attempt {
                outcome: e,
                wall_s: w,
            }),
        }
    }
    let Some((wall_s, host_boot_s)) = wall else {
        return Err(format!(
            "the guest failed {} times; last: {}",
            attempts.len(),
            attempts.last().map_or("", |a| a.outcome.as_str())
        ));
    };
    // Build the result directory beside out_dir, then rename it into place.
    let parent = out_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = out_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("oracle-out");
    let staging = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    extract_tar(&disk, &staging)?;
    let tmp_out = staging.join("out");
    if !tmp_out.join("uname_r").exists() {
        return Err(format!(
            "the guest's results on {} lack out/uname_r",
            disk.display()
        ));
    }
    std::fs::copy(&console, tmp_out.join("console.log"))
        .map_err(|e| format!("cannot copy the console log: {e}"))?;
    let mut jobs = Vec::new();
    let results = result_names(&req.jobs, req.repetitions, req.ab.as_ref());
    for name in &results {
        let d = tmp_out.join("jobs").join(name);
        let up: Vec<f64> = read_trim(&d.join("uptime"))
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        let (dropped_events, overrun) = parse_dropped(&read_trim(&d.join("dropped")));
        jobs.push(JobMeta {
            name: name.clone(),
            seconds: if up.len() == 2 {
                up[1] - up[0]
            } else {
                f64::NAN
            },
            exit_status: read_trim(&d.join("exit_status")).parse().unwrap_or(-1),
            dropped_events,
            overrun,
            trace_bytes: std::fs::metadata(d.join("trace.txt")).map_or(0, |m| m.len()),
        });
    }
    let meta = GuestMeta {
        kernel: req.kernel.label(),
        kernel_package: kernel.package.clone(),
        kernel_release: read_trim(&tmp_out.join("uname_r")),
        topology: req.topology.clone(),
        qemu_argv: argv,
        boot_s: read_trim(&tmp_out.join("boot_uptime"))
            .parse()
            .unwrap_or(f64::NAN),
        host_boot_s,
        wall_s,
        buffer_kb: req.buffer_kb,
        jobs,
        attempts,
    };
    let json = serde_json::to_string_pretty(&meta).map_err(|e| format!("meta.json: {e}"))?;
    write_atomic(&tmp_out.join("meta.json"), json.as_bytes())?;
    // Replace an earlier run atomically enough: move it aside, rename, delete it.
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let had_old = out_dir.exists();
    if had_old {
        std::fs::rename(out_dir, &old)
            .map_err(|e| format!("cannot move {} aside: {e}", out_dir.display()))?;
    }
    std::fs::rename(&tmp_out, out_dir)
        .map_err(|e| format!("cannot rename to {}: {e}", out_dir.display()))?;
    let _ = std::fs::remove_dir_all(&staging);
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(GuestRun {
        out_dir: out_dir.to_path_buf(),
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::initramfs::write_file;
    use super::*;

    pub(super) fn job(name: &str) -> GuestJob {
        GuestJob {
            name: name.into(),
            command: format!("rt-app {name}.json"),
            files: vec![(format!("{name}.json"), b"{}".to_vec())],
        }
    }

    pub(super) fn scratch(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("schedlab-guest-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn results_come_back_from_a_tar_on_a_raw_disk() {
        let d = scratch("tar");
        write_file(&d.join("src/out/jobs/a/trace.txt"), b"trace a\n").unwrap();
        write_file(&d.join("src/out/uname_r"), b"5.10.0-32-amd64\n").unwrap();
        let img = d.join("out.img");
        let st = Command::new("tar")
            .arg("cf")
            .arg(&img)
            .arg("-C")
            .arg(d.join("src"))
            .arg("out")
            .status()
            .unwrap();
        assert!(st.success());
        // The disk is larger than the archive: zeros follow it.
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len + (4 << 20)).unwrap();
        drop(f);
        extract_tar(&img, &d.join("dest")).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("dest/out/jobs/a/trace.txt")).unwrap(),
            "trace a\n"
        );
        assert_eq!(read_trim(&d.join("dest/out/uname_r")), "5.10.0-32-amd64");
        // A disk the guest never wrote (all zeros) is no archive.
        let empty = d.join("empty.img");
        std::fs::File::create(&empty)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        extract_tar(&empty, &d.join("dest2")).unwrap();
        assert!(!d.join("dest2/out").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn progress_lines_and_the_evidence_of_a_hang() {
        let log = "SCHEDLAB-ORACLE: init at 2.50 s\nSCHEDLAB-ORACLE: job calibrate\n\
                   [  212.93] rcu: rcu_sched kthread starved for 52509 jiffies! g-887\n\
                   [  224.30] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [swapper/0:0]\n\
                   [  401.98] rcu: rcu_sched kthread starved for 99773 jiffies! g-887\n";
        assert_eq!(progress_marks(log), 2);
        assert_eq!(
            hang_evidence(log),
            " (last: [  401.98] rcu: rcu_sched kthread starved for 99773 jiffies! g-887)"
        );
        assert_eq!(hang_evidence("SCHEDLAB-ORACLE: job a\n"), "");
    }

    #[test]
    fn drop_counters_and_crashes() {
        let t = "cpu0 overrun: 0 dropped events: 0 \ncpu1 overrun: 3 dropped events: 7 \ncpu2 overrun: 1 dropped events: 0 \n";
        assert_eq!(parse_dropped(t), (7, 4));
        let log = "[    1.2] smpboot: x\n[    1.3] int3: 0000 [#1] SMP PTI\n[    1.3] RIP: 0010:sched_clock_cpu+0x10/0xa0\n[    1.4] Kernel panic - not syncing: Fatal exception in interrupt\n";
        assert_eq!(
            crash_reason(log).unwrap(),
            "guest kernel crashed: [    1.3] int3: 0000 [#1] SMP PTI"
        );
        assert_eq!(crash_reason("SCHEDLAB-ORACLE: job a\n"), None);
        let stall = "[  112.95] rcu: INFO: rcu_sched self-detected stall on CPU\n[  112.98] rcu: \t10-...!\n";
        assert_eq!(
            boot_hang(stall).unwrap(),
            "guest boot hung: [  112.95] rcu: INFO: rcu_sched self-detected stall on CPU"
        );
        assert_eq!(
            boot_hang("[    1.0] smpboot: Total of 16 processors activated\n"),
            None
        );
    }

    #[test]
    fn static_elf_detection() {
        // A 64-bit ELF header with one program header at 0x40 (56 bytes).
        let mut elf = vec![0u8; 0x40 + 56];
        elf[..5].copy_from_slice(b"\x7fELF\x02");
        elf[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        elf[0x40..0x44].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        assert!(is_static_elf(&elf));
        elf[0x40..0x44].copy_from_slice(&3u32.to_le_bytes()); // PT_INTERP
        assert!(!is_static_elf(&elf));
        assert!(!is_static_elf(b"#!/bin/sh\n"));
    }

    #[test]
    fn bad_jobs_are_refused_before_anything_runs() {
        let topo = GuestTopology::parse("1s2c2t").unwrap();
        let req = |jobs| GuestRequest::new(topo.clone(), KernelChoice::V5_10, jobs);
        let out = std::env::temp_dir().join("schedlab-guest-never-created");
        let e = |r: GuestRequest| run_guest(&r, &out).unwrap_err();
        assert_eq!(e(req(vec![])), "a guest run needs at least one job");
        assert!(e(req(vec![job("a b")])).contains("job name `a b`"));
        assert!(e(req(vec![job("a"), job("a")])).contains("two jobs are named `a`"));
        let mut j = job("a");
        j.files.push(("../x".into(), vec![]));
        assert!(e(req(vec![j])).contains("file name `../x`"));
        let mut big = req(vec![job("a")]);
        big.topology = GuestTopology::parse("4s8c2t").unwrap();
        assert!(e(big).contains("64 vCPUs is more than 32"));
        // 4 CPUs × 64 MiB of buffer need 256 + 2·256 MiB.
        let mut small = req(vec![job("a")]);
        small.buffer_kb = 65536;
        small.mem_mb = 767;
        assert!(e(small).contains("give at least 768 MiB"));
        assert!(!out.exists());
    }
}
