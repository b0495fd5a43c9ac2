//! The guest kernels: Debian's 5.10 and 6.12 packages, fetched with a private apt
//! configuration from the host's own mirror and unpacked once into a cache (pruned to
//! `boot/` and the virtio modules); the sched_ext kit's kernel; or a bzImage of one's
//! own. Each comes with the virtio modules, in load order, that make `/dev/vda`
//! appear (none for a kernel that has them built in).

use super::super::{scx, seeds};
use super::{run, write_atomic};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// The seed kit's 5.10 kernel (`5.10-seeds`; oracle/seeds.rs): the kit's
    /// directory.
    Seeds(PathBuf),
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
            scx::KIT_KERNEL => Ok(KernelChoice::Scx(scx::ScxKit::default_dir()?)),
            seeds::KIT_KERNEL => Ok(KernelChoice::Seeds(seeds::SeedKit::default_dir()?)),
            p if p.contains('/') || Path::new(p).exists() => {
                let p = PathBuf::from(p);
                if !p.is_file() {
                    return Err(format!(
                        "kernel `{}`: no such file (expected `5.10`, `6.12`, `6.12-scx`, `5.10-seeds` or a bzImage path)",
                        p.display()
                    ));
                }
                Ok(KernelChoice::Path(p))
            }
            other => Err(format!(
                "kernel `{other}`: expected `5.10`, `6.12`, `6.12-scx`, `5.10-seeds` or a path to a bzImage"
            )),
        }
    }

    /// The Debian suite and a predicate on package names, for the packaged kernels.
    fn suite(&self) -> Option<(&'static str, PkgFilter)> {
        match self {
            KernelChoice::V5_10 => Some(("bullseye", is_510_pkg)),
            KernelChoice::V6_12 => Some(("bookworm-backports", is_612_pkg)),
            KernelChoice::Scx(_) | KernelChoice::Seeds(_) | KernelChoice::Path(_) => None,
        }
    }

    pub(super) fn label(&self) -> String {
        match self {
            KernelChoice::V5_10 => "5.10".into(),
            KernelChoice::V6_12 => "6.12".into(),
            KernelChoice::Scx(_) => scx::KIT_KERNEL.into(),
            KernelChoice::Seeds(_) => seeds::KIT_KERNEL.into(),
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
            KernelChoice::Scx(dir) => scx::ScxKit::open(dir).map(drop),
            KernelChoice::Seeds(dir) => seeds::SeedKit::open(dir).map(drop),
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
                let kit = scx::ScxKit::open(dir)?;
                return Ok(Kernel {
                    bzimage: kit.bzimage,
                    package: None,
                    modules: Vec::new(),
                });
            }
            KernelChoice::Seeds(dir) => {
                // The kit's kernel has virtio built in too.
                return Ok(Kernel {
                    bzimage: seeds::SeedKit::open(dir)?.bzimage,
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

#[cfg(test)]
mod tests {
    use super::super::initramfs::write_file;
    use super::super::tests::scratch;
    use super::*;

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
            .contains("expected `5.10`, `6.12`, `6.12-scx`, `5.10-seeds` or a path"));
        assert!(matches!(
            KernelChoice::parse("6.12-scx").unwrap(),
            KernelChoice::Scx(d) if d.ends_with("6.12-scx") || std::env::var_os("SCHEDLAB_SCX_KIT").is_some()
        ));
        assert!(KernelChoice::parse("/nonexistent/bzImage")
            .unwrap_err()
            .contains("no such file"));
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
}
