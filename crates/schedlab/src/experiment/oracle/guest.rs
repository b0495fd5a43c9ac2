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
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::qemu::{AccelThreads, GuestTopology, DEFAULT_MAX_VCPUS, QEMU_BIN};

/// Which kernel boots in the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelChoice {
    /// Debian bullseye's newest `linux-image-5.10.0-<abi>-amd64-unsigned`.
    V5_10,
    /// Debian bookworm-backports' newest `linux-image-6.12.*-amd64-unsigned`.
    V6_12,
    /// The sched_ext kit's 6.12 kernel (`6.12-scx`; oracle/scx.rs): the kit's
    /// directory.
    Scx(PathBuf),
    /// A bzImage of one's own. Its virtio modules (`virtio`, `virtio_ring`,
    /// `virtio_pci`, `virtio_blk`, as `.ko`, `.ko.xz` or `.ko.zst`) are taken from a
    /// `lib/modules/<release>/` tree beside the image or one level up (the layout of
    /// `dpkg -x` or `make modules_install INSTALL_MOD_PATH=`); without such a tree the
    /// kernel must have `CONFIG_VIRTIO_PCI=y` and `CONFIG_VIRTIO_BLK=y`.
    Path(PathBuf),
}

impl KernelChoice {
    /// `5.10` | `6.12` | `6.12-scx` | a path to a bzImage.
    pub fn parse(s: &str) -> Result<KernelChoice, String> {
        match s.trim() {
            "5.10" => Ok(KernelChoice::V5_10),
            "6.12" => Ok(KernelChoice::V6_12),
            super::scx::KIT_KERNEL => Ok(KernelChoice::Scx(super::scx::ScxKit::default_dir()?)),
            p if p.contains('/') || Path::new(p).exists() => {
                let p = PathBuf::from(p);
                if !p.is_file() {
                    return Err(format!(
                        "kernel `{}`: no such file (expected `5.10`, `6.12`, `6.12-scx` or a bzImage path)",
                        p.display()
                    ));
                }
                Ok(KernelChoice::Path(p))
            }
            other => Err(format!(
                "kernel `{other}`: expected `5.10`, `6.12`, `6.12-scx` or a path to a bzImage"
            )),
        }
    }

    /// The Debian suite and a predicate on package names, for the packaged kernels.
    fn suite(&self) -> Option<(&'static str, PkgFilter)> {
        match self {
            KernelChoice::V5_10 => Some(("bullseye", is_510_pkg)),
            KernelChoice::V6_12 => Some(("bookworm-backports", is_612_pkg)),
            KernelChoice::Scx(_) | KernelChoice::Path(_) => None,
        }
    }

    fn label(&self) -> String {
        match self {
            KernelChoice::V5_10 => "5.10".into(),
            KernelChoice::V6_12 => "6.12".into(),
            KernelChoice::Scx(_) => super::scx::KIT_KERNEL.into(),
            KernelChoice::Path(p) => p.display().to_string(),
        }
    }
}

/// Accepts the package names of one kernel choice.
pub type PkgFilter = fn(&str) -> bool;

/// `linux-image-5.10.0-<abi>-amd64-unsigned`.
pub(crate) fn is_510_pkg(name: &str) -> bool {
    name.strip_prefix("linux-image-5.10.0-")
        .and_then(|r| r.strip_suffix("-amd64-unsigned"))
        .is_some_and(|abi| !abi.is_empty() && abi.bytes().all(|b| b.is_ascii_digit()))
}

/// `linux-image-6.12.<n>+deb<k>-amd64-unsigned` (generic flavour: not cloud, not rt).
pub(crate) fn is_612_pkg(name: &str) -> bool {
    name.strip_prefix("linux-image-6.12.")
        .and_then(|r| r.strip_suffix("-amd64-unsigned"))
        .is_some_and(|mid| {
            let (patch, abi) = mid.split_once('+').unwrap_or((mid, ""));
            !patch.is_empty()
                && patch.bytes().all(|b| b.is_ascii_digit())
                && (abi.is_empty()
                    || abi
                        .strip_prefix("deb")
                        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit())))
        })
}

/// Numeric fields of a name, for ordering versions (`5.10.0-32` > `5.10.0-9`).
fn version_key(name: &str) -> Vec<u64> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(0))
        .collect()
}

/// The newest package of `apt-cache search --names-only` output (`name - summary`
/// lines) that `want` accepts.
pub(crate) fn choose_package(search_output: &str, want: PkgFilter) -> Option<String> {
    search_output
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| want(n))
        .max_by_key(|n| version_key(n))
        .map(str::to_string)
}

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
    /// Extra kernel command line, after [`super::qemu::BASE_APPEND`].
    pub append: String,
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

// ---------------------------------------------------------------------------
// Kernels.

/// `$SCHEDLAB_ORACLE_CACHE`, else `$XDG_CACHE_HOME/schedlab/oracle`, else
/// `~/.cache/schedlab/oracle`.
pub(crate) fn default_cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("SCHEDLAB_ORACLE_CACHE") {
        return Ok(p);
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Ok(p.join("schedlab/oracle"));
    }
    var("HOME")
        .map(|h| h.join(".cache/schedlab/oracle"))
        .ok_or_else(|| {
            "no cache directory: set SCHEDLAB_ORACLE_CACHE (or XDG_CACHE_HOME or HOME)".into()
        })
}

/// The host's apt source files, in the order apt reads them: every deb822
/// `sources.list.d/*.sources` and one-line `sources.list.d/*.list` (sorted by name),
/// then `sources.list`.
fn apt_source_files(etc_apt: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(etc_apt.join("sources.list.d"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sources" || x == "list"))
                .collect()
        })
        .unwrap_or_default();
    parts.sort();
    parts.push(etc_apt.join("sources.list"));
    parts
}

/// The Debian mirror of the host's own apt sources (`$SCHEDLAB_ORACLE_MIRROR`
/// overrides): the first main-archive URI of its source files. None there is an
/// error naming the files read: the oracle knows no mirror of its own.
pub(crate) fn debian_mirror() -> Result<String, String> {
    if let Ok(m) = std::env::var("SCHEDLAB_ORACLE_MIRROR") {
        if !m.is_empty() {
            return Ok(m);
        }
    }
    mirror_of_host(Path::new("/etc/apt"))
}

/// [`debian_mirror`] from the apt configuration directory `etc_apt`.
fn mirror_of_host(etc_apt: &Path) -> Result<String, String> {
    let files = apt_source_files(etc_apt);
    let mut read = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        read.push(f.display().to_string());
        let deb822 = f.extension().is_some_and(|x| x == "sources");
        if let Some(m) = mirror_from_sources(&text, deb822) {
            return Ok(m);
        }
    }
    Err(format!(
        "no Debian mirror in this host's apt sources ({}): the QEMU oracle fetches its \
         kernels from the host's own mirror; add one to the apt sources or set \
         SCHEDLAB_ORACLE_MIRROR",
        if read.is_empty() {
            format!(
                "none of {} could be read",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!("read {}", read.join(", "))
        }
    ))
}

/// The first URI ending in `/debian` of a sources file: deb822 (`URIs:` fields) or
/// one-line (`deb [options] URI suite ...`).
fn mirror_from_sources(text: &str, deb822: bool) -> Option<String> {
    let is_main = |u: &&str| u.trim_end_matches('/').ends_with("/debian");
    let found = if deb822 {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("URIs:"))
            .flat_map(|u| u.split_whitespace())
            .find(is_main)
    } else {
        text.lines()
            .filter(|l| l.trim_start().starts_with("deb "))
            .flat_map(|l| l.split_whitespace().skip(1))
            .filter(|w| !w.starts_with('['))
            .find(is_main)
    };
    found.map(|u| u.trim_end_matches('/').to_string())
}

/// The private apt configuration of one suite: its directory holds `sources.list`,
/// `lists/` and `cache/`.
pub struct AptConfig {
    pub dir: PathBuf,
    pub mirror: String,
    pub suite: String,
}

impl AptConfig {
    /// The sources list: the one suite, main, signed by the Debian archive keyring.
    pub(crate) fn sources_list(&self) -> String {
        format!(
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {} {} main\n",
            self.mirror, self.suite
        )
    }
    /// The `-o` options that make apt use only this configuration.
    pub fn options(&self) -> Vec<String> {
        let d = self.dir.display();
        let mut o = vec![
            "-o".to_string(),
            format!("Dir::Etc::SourceList={d}/sources.list"),
            "-o".into(),
            "Dir::Etc::SourceParts=/dev/null".into(),
            "-o".into(),
            format!("Dir::State::Lists={d}/lists"),
            "-o".into(),
            format!("Dir::Cache={d}/cache"),
        ];
        if is_root() {
            // Downloads into a directory `_apt` cannot write to: do not drop to it.
            o.extend(["-o".into(), "APT::Sandbox::User=root".into()]);
        }
        o
    }
    fn prepare(&self) -> Result<(), String> {
        for sub in ["lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(self.dir.join(sub))
                .map_err(|e| format!("cannot create {}: {e}", self.dir.join(sub).display()))?;
        }
        write_atomic(
            &self.dir.join("sources.list"),
            self.sources_list().as_bytes(),
        )
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A kernel ready to boot.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub bzimage: PathBuf,
    pub package: Option<String>,
    /// The virtio modules found for it, in load order (possibly compressed).
    pub modules: Vec<PathBuf>,
}

/// Modules that make `/dev/vda` appear, in load order; those built in are absent.
const VIRTIO_MODULES: &[&str] = &[
    "virtio",
    "virtio_ring",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "virtio_blk",
];

/// Every file below `d` (symbolic links not followed).
fn walk(d: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

/// Delete every file of an unpacked kernel package but `boot/` and the virtio
/// modules (the 5.10 package unpacks to ~330 MB, the 6.12 one to more; what the
/// guest needs is ~10 MB).
fn prune_unpacked(root: &Path) -> Result<(), String> {
    let keep = find_modules(root);
    let mut files = Vec::new();
    walk(root, &mut files);
    for f in files {
        if f.starts_with(root.join("boot")) || keep.contains(&f) {
            continue;
        }
        std::fs::remove_file(&f).map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
    }
    Ok(())
}

/// The virtio modules below `lib/modules/*/` of `root`, in load order.
fn find_modules(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    walk(&root.join("lib/modules"), &mut files);
    VIRTIO_MODULES
        .iter()
        .filter_map(|m| {
            files
                .iter()
                .find(|f| {
                    let n = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    [".ko", ".ko.xz", ".ko.zst"]
                        .iter()
                        .any(|ext| n.strip_suffix(ext) == Some(m))
                })
                .cloned()
        })
        .collect()
}

fn unpacked_kernel(dir: &Path, pkg: &str) -> Result<Kernel, String> {
    let boot = dir.join("boot");
    let bz = std::fs::read_dir(&boot)
        .map_err(|e| format!("{}: {e}", boot.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .ok_or_else(|| format!("{}: no vmlinuz-* in the package {pkg}", boot.display()))?;
    Ok(Kernel {
        bzimage: bz,
        package: Some(pkg.to_string()),
        modules: find_modules(dir),
    })
}

/// The newest complete unpacked kernel package in `kernels` that `want` accepts.
fn cached_package(kernels: &Path, want: fn(&str) -> bool) -> Option<String> {
    std::fs::read_dir(kernels)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join(".complete").exists())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| want(n))
                .max_by_key(|n| version_key(n))
        })
        .ok()
        .flatten()
}

/// Before any boot: where `choice`'s kernel would come from is there. A packaged
/// kernel not in the cache (`cache_dir`, or `default_cache_dir`) needs the host's
/// Debian mirror; the sched_ext kit must be built. A missing one, like a missing
/// host tool, is this host's setup.
pub fn check_kernel_source(choice: &KernelChoice, cache_dir: Option<&Path>) -> Result<(), String> {
    let Some((_, want)) = choice.suite() else {
        return match choice {
            // The sched_ext kit, every part of it (its error says how to build it).
            KernelChoice::Scx(dir) => super::scx::ScxKit::open(dir).map(drop),
            // A bzImage path exists: `KernelChoice::parse` checked it.
            _ => Ok(()),
        };
    };
    let cache = match cache_dir {
        Some(c) => c.to_path_buf(),
        None => default_cache_dir()?,
    };
    if cached_package(&cache.join("kernels"), want).is_some() {
        return Ok(());
    }
    debian_mirror().map(drop)
}

/// The kernel of `choice`: a bzImage path as is, or the Debian package, fetched and
/// unpacked into `cache/kernels/<package>/` the first time and reused after (no
/// network when an unpacked one exists).
pub(crate) fn prepare_kernel(choice: &KernelChoice, cache: &Path) -> Result<Kernel, String> {
    let Some((suite, want)) = choice.suite() else {
        let p = match choice {
            KernelChoice::Scx(dir) => {
                // The kit's kernel has virtio built in: no modules.
                let kit = super::scx::ScxKit::open(dir)?;
                return Ok(Kernel {
                    bzimage: kit.bzimage,
                    package: None,
                    modules: Vec::new(),
                });
            }
            KernelChoice::Path(p) => p,
            _ => unreachable!("packaged kernels have a suite"),
        };
        let dir = p.parent().unwrap_or(Path::new("."));
        let mut modules = find_modules(dir);
        if modules.is_empty() {
            modules = find_modules(dir.parent().unwrap_or(dir));
        }
        return Ok(Kernel {
            bzimage: p.clone(),
            package: None,
            modules,
        });
    };
    let kernels = cache.join("kernels");
    if let Some(pkg) = cached_package(&kernels, want) {
        return unpacked_kernel(&kernels.join(&pkg), &pkg);
    }
    let apt = AptConfig {
        dir: cache.join("apt").join(suite),
        mirror: debian_mirror()?,
        suite: suite.into(),
    };
    apt.prepare()?;
    run(
        Command::new("apt-get")
            .args(apt.options())
            .args(["-q", "update"]),
        &format!("apt-get update of {} {suite}", apt.mirror),
    )?;
    let search = run(
        Command::new("apt-cache").args(apt.options()).args([
            "search",
            "--names-only",
            "^linux-image-",
        ]),
        "apt-cache search",
    )?;
    let pkg = choose_package(&search, want).ok_or_else(|| {
        format!(
            "no kernel package for {} in {} {suite}",
            choice.label(),
            apt.mirror
        )
    })?;
    let dl = cache.join("downloads");
    std::fs::create_dir_all(&dl).map_err(|e| format!("cannot create {}: {e}", dl.display()))?;
    run(
        Command::new("apt-get")
            .args(apt.options())
            .args(["-q", "download", &pkg])
            .current_dir(&dl),
        &format!("apt-get download {pkg}"),
    )?;
    let deb = std::fs::read_dir(&dl)
        .map_err(|e| format!("{}: {e}", dl.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{pkg}_")) && n.ends_with(".deb"))
        })
        .ok_or_else(|| format!("apt-get download {pkg} left no .deb in {}", dl.display()))?;
    let tmp = kernels.join(format!(".{pkg}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    run(
        Command::new("dpkg").arg("-x").arg(&deb).arg(&tmp),
        &format!("dpkg -x {}", deb.display()),
    )?;
    prune_unpacked(&tmp)?;
    std::fs::write(tmp.join(".complete"), b"")
        .map_err(|e| format!("cannot write in {}: {e}", tmp.display()))?;
    let dest = kernels.join(&pkg);
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&tmp, &dest)
        .map_err(|e| format!("cannot rename to {}: {e}", dest.display()))?;
    let _ = std::fs::remove_file(&deb);
    unpacked_kernel(&dest, &pkg)
}

// ---------------------------------------------------------------------------
// The initramfs.

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

fn check_jobs(jobs: &[GuestJob]) -> Result<(), String> {
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
    let cal = super::CALIBRATE_JOB;
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
            let res = (r > 1).then(|| super::repetition_name(&j.name, r));
            out.push((j.name.clone(), res));
        }
    }
    out
}

/// The guest's `/init`: a busybox shell script.
pub(crate) fn init_script(
    modules: &[String],
    jobs: &[GuestJob],
    repetitions: u32,
    buffer_kb: u32,
    job_timeout_s: u64,
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
    s.push_str(&format!(
        r#"T=/sys/kernel/tracing
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
echo 1 > /proc/sys/kernel/sched_schedstats
[ -e /proc/sys/kernel/sched_autogroup_enabled ] && echo 0 > /proc/sys/kernel/sched_autogroup_enabled
[ -e /proc/sys/kernel/numa_balancing ] && echo 0 > /proc/sys/kernel/numa_balancing
uname -r > $O/uname_r
cat /proc/cmdline > $O/cmdline
# The sysfs files import_sysfs reads, at their own paths below $O/sysfs.
cpf() {{ [ -f "$1" ] && mkdir -p "$O/sysfs${{1%/*}}" && cat "$1" > "$O/sysfs$1" 2>/dev/null; }}
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
  mkdir -p $O/domains/${{c##*/}}/${{d##*/}}
  for f in $d/*; do [ -f $f ] && cat $f > $O/domains/${{c##*/}}/${{d##*/}}/${{f##*/}} 2>/dev/null; done
done; done
for f in /sys/kernel/debug/sched/features /sys/kernel/debug/sched_features; do [ -f $f ] && cat $f > $O/sched_features; done
cat /proc/schedstat > $O/schedstat
i=0; while [ ! -b /dev/vda ] && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done
[ -b /dev/vda ] || echo "SCHEDLAB-ORACLE: no /dev/vda"
# run_job FILES [RESULTS]: the job in /jobs/FILES, its results in jobs/RESULTS.
run_job() {{
  J=$O/jobs/${{2:-$1}}
  mkdir -p $J
  echo "SCHEDLAB-ORACLE: job ${{2:-$1}}"
  echo 0 > $T/tracing_on
  echo > $T/set_event
  echo {buffer_kb} > $T/buffer_size_kb
  cat $T/buffer_size_kb > $J/buffer_size_kb
  echo > $T/trace
  echo mono > $T/trace_clock
"#
    ));
    for e in TRACE_EVENTS {
        s.push_str(&format!("  echo sched:{e} >> $T/set_event\n"));
    }
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
    for run in job_runs(jobs, repetitions) {
        match run {
            (job, None) => s.push_str(&format!("run_job {job}\n")),
            (job, Some(out)) if out == WARMUP_JOB => s.push_str(&format!(
                "run_job {job} {WARMUP_JOB}\nrm -rf $O/jobs/{WARMUP_JOB}\n"
            )),
            (job, Some(out)) => s.push_str(&format!("run_job {job} {out}\n")),
        }
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

fn write_file(p: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// Write a file atomically ([`crate::files::write_atomic`]), creating its directory.
pub fn write_atomic(p: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    crate::files::write_atomic(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
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
fn build_initramfs(req: &GuestRequest, kernel: &Kernel, work: &Path) -> Result<PathBuf, String> {
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
    let results: Vec<String> = job_runs(&req.jobs, req.repetitions)
        .into_iter()
        .filter(|(_, out)| out.as_deref() != Some(WARMUP_JOB))
        .map(|(job, out)| out.unwrap_or(job))
        .collect();
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
    use super::*;

    fn job(name: &str) -> GuestJob {
        GuestJob {
            name: name.into(),
            command: format!("rt-app {name}.json"),
            files: vec![(format!("{name}.json"), b"{}".to_vec())],
        }
    }

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
        let s = init_script(&mods, &[job("first"), job("second")], 1, 32768, 120);
        assert!(s.starts_with("#!/bin/busybox sh\n"));
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
                // The job function: the buffer is reset and configured first.
                "run_job() {",
                "echo 0 > $T/tracing_on",
                "echo 32768 > $T/buffer_size_kb",
                "cat $T/buffer_size_kb > $J/buffer_size_kb",
                "echo > $T/trace",
                "echo mono > $T/trace_clock",
                "echo sched:sched_switch >> $T/set_event",
                "echo sched:sched_waking >> $T/set_event",
                "echo sched:sched_wakeup >> $T/set_event",
                "echo sched:sched_wakeup_new >> $T/set_event",
                "echo sched:sched_migrate_task >> $T/set_event",
                "echo sched:sched_process_fork >> $T/set_event",
                "echo sched:sched_process_exit >> $T/set_event",
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
        let s = init_script(&[], &[job("a")], 2, 1024, 60);
        assert!(
            s.contains("run_job a warmup\nrm -rf $O/jobs/warmup\nrun_job a\nrun_job a a.r2\n"),
            "{s}"
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

    #[test]
    fn apt_private_configuration() {
        let apt = AptConfig {
            dir: PathBuf::from("/c/apt/bullseye"),
            mirror: "http://mirror.example/debian".into(),
            suite: "bullseye".into(),
        };
        assert_eq!(
            apt.sources_list(),
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bullseye main\n"
        );
        let o = apt.options();
        assert_eq!(
            o[..8],
            [
                "-o",
                "Dir::Etc::SourceList=/c/apt/bullseye/sources.list",
                "-o",
                "Dir::Etc::SourceParts=/dev/null",
                "-o",
                "Dir::State::Lists=/c/apt/bullseye/lists",
                "-o",
                "Dir::Cache=/c/apt/bullseye/cache",
            ]
        );
    }

    #[test]
    fn mirror_from_the_hosts_sources() {
        let deb822 = "Types: deb\n# http://archive.example/debian/2025\nURIs: http://mirror.example/debian/\nSuites: bookworm\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n";
        assert_eq!(
            mirror_from_sources(deb822, true).as_deref(),
            Some("http://mirror.example/debian")
        );
        let one = "# comment\ndeb http://security.example/debian-security bookworm-security main\ndeb [arch=amd64] http://other.example/debian bookworm main\n";
        assert_eq!(
            mirror_from_sources(one, false).as_deref(),
            Some("http://other.example/debian")
        );
        assert_eq!(mirror_from_sources("", true), None);
        assert_eq!(mirror_from_sources(one, true), None);
        // The host's files in apt's order: sources.list.d (sorted) first.
        let etc = tempfile::tempdir().unwrap();
        let d = etc.path().join("sources.list.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(etc.path().join("sources.list"), one).unwrap();
        assert_eq!(
            mirror_of_host(etc.path()).unwrap(),
            "http://other.example/debian"
        );
        std::fs::write(d.join("b.sources"), deb822).unwrap();
        std::fs::write(
            d.join("a.list"),
            "deb http://security.example/debian-security x main\n",
        )
        .unwrap();
        assert_eq!(
            mirror_of_host(etc.path()).unwrap(),
            "http://mirror.example/debian"
        );
        // None: the error names every file read.
        let bare = tempfile::tempdir().unwrap();
        std::fs::write(bare.path().join("sources.list"), "# nothing\n").unwrap();
        let e = mirror_of_host(bare.path()).unwrap_err();
        assert!(
            e.contains("no Debian mirror")
                && e.contains("sources.list")
                && e.contains("SCHEDLAB_ORACLE_MIRROR"),
            "{e}"
        );
        let none = tempfile::tempdir().unwrap();
        let e = mirror_of_host(none.path()).unwrap_err();
        assert!(e.contains("none of") && e.contains("could be read"), "{e}");
    }

    #[test]
    fn kernel_package_choice() {
        let bullseye = "linux-image-5.10.0-9-amd64-unsigned - Linux 5.10 for 64-bit PCs\n\
linux-image-5.10.0-32-amd64-unsigned - Linux 5.10 for 64-bit PCs\n\
linux-image-5.10.0-30-amd64-unsigned - Linux 5.10 for 64-bit PCs\n\
linux-image-5.10.0-33-cloud-amd64-unsigned - Linux 5.10 for x86-64 cloud\n\
linux-image-5.10.0-33-rt-amd64-unsigned - Linux 5.10 for 64-bit PCs, PREEMPT_RT\n\
linux-image-5.10.0-33-amd64 - Linux 5.10 for 64-bit PCs (signed)\n\
linux-image-5.10.0-33-amd64-dbg - Debug symbols\n";
        assert_eq!(
            choose_package(bullseye, is_510_pkg).as_deref(),
            Some("linux-image-5.10.0-32-amd64-unsigned")
        );
        let bpo = "linux-image-6.12.9+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
linux-image-6.12.95+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
linux-image-6.12.95+deb12-cloud-amd64-unsigned - Linux 6.12 for x86-64 cloud\n\
linux-image-6.12.96+deb12-rt-amd64-unsigned - Linux 6.12 PREEMPT_RT\n\
linux-image-6.12.96+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)\n\
linux-image-6.1.0-30-amd64-unsigned - Linux 6.1\n";
        assert_eq!(
            choose_package(bpo, is_612_pkg).as_deref(),
            Some("linux-image-6.12.95+deb12-amd64-unsigned")
        );
        assert_eq!(choose_package(bpo, is_510_pkg), None);
    }

    #[test]
    fn kernel_choice_parsing() {
        assert_eq!(KernelChoice::parse("5.10").unwrap(), KernelChoice::V5_10);
        assert_eq!(KernelChoice::parse(" 6.12").unwrap(), KernelChoice::V6_12);
        assert!(KernelChoice::parse("6.1")
            .unwrap_err()
            .contains("expected `5.10`, `6.12`, `6.12-scx` or a path"));
        assert!(matches!(
            KernelChoice::parse("6.12-scx").unwrap(),
            KernelChoice::Scx(d) if d.ends_with("6.12-scx") || std::env::var_os("SCHEDLAB_SCX_KIT").is_some()
        ));
        assert!(KernelChoice::parse("/nonexistent/bzImage")
            .unwrap_err()
            .contains("no such file"));
    }

    fn scratch(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("schedlab-guest-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn virtio_modules_found_in_load_order() {
        let d = scratch("mods");
        let k = d.join("lib/modules/5.10.0-32-amd64/kernel");
        for f in [
            "drivers/block/virtio_blk.ko",
            "drivers/virtio/virtio_pci.ko",
            "drivers/virtio/virtio_ring.ko",
            "drivers/virtio/virtio.ko",
            "drivers/virtio/virtio_balloon.ko",
            "drivers/net/virtio_net.ko",
        ] {
            write_file(&k.join(f), b"x").unwrap();
        }
        let names: Vec<String> = find_modules(&d)
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "virtio.ko",
                "virtio_ring.ko",
                "virtio_pci.ko",
                "virtio_blk.ko"
            ]
        );
        // 6.12: only virtio_blk is a module, compressed.
        let d2 = scratch("mods612");
        write_file(
            &d2.join("lib/modules/6.12.95+deb12-amd64/kernel/drivers/block/virtio_blk.ko.xz"),
            b"x",
        )
        .unwrap();
        assert_eq!(find_modules(&d2).len(), 1);
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_dir_all(&d2);
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
