//! Output files: written whole or not at all, and checked before the work.
//!
//! A simulation that ran for an hour must not end in a half-written report, and a
//! `kill -9` (or a full disk) in the middle of a write must leave the old file as it
//! was. [`write_atomic`] therefore never writes the destination in place: it writes a
//! new file beside it, flushes it to disk (`fsync`), renames it over the destination
//! (atomic within a directory) and flushes the directory so the rename itself
//! survives a crash.
//!
//! The new file is first an *unnamed* file (Linux `O_TMPFILE`): a process killed
//! while writing it leaves nothing, since the kernel frees an unnamed file with its
//! last descriptor. Only once the bytes are on disk does it get a name
//! (`.NAME.tmp.PID.N`, by `linkat` of `/proc/self/fd/FD`), which the very next call
//! renames over the destination — a window of microseconds. For a kill inside that
//! window, and on filesystems without `O_TMPFILE` (where the temporary file is named
//! from the start), the next `write_atomic` to the same destination removes every
//! `.NAME.tmp.PID.*` whose process is gone. A failed write removes its temporary
//! file before returning.
//!
//! Writing through a symbolic link writes the link's target (the temporary file is
//! made beside the target, so the rename stays within one directory) and leaves the
//! link in place.
//!
//! [`check_writable`] and [`check_writable_dir`] answer, before any simulation, the
//! question a write at the end would answer too late: can this path be written? They
//! leave nothing behind.

use crate::error::InputError;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Symbolic links followed at most (as the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// `path` with every symbolic link at its end followed (a dangling link resolves to
/// the file it names). Directories above are left as written.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = std::fs::read_link(&p)?;
                p = if t.is_absolute() {
                    t
                } else {
                    dir_of(&p).join(t)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// The directory holding `p` (`.` for a bare file name).
fn dir_of(p: &Path) -> PathBuf {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// An I/O error that says what was being done to which file.
fn ctx(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// The prefix of every temporary file for destination name `name`.
fn tmp_prefix(name: &str) -> String {
    format!(".{name}.tmp.")
}

/// A temporary name unique within this process: `.NAME.tmp.PID.N`.
fn tmp_name(dir: &Path, name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        "{}{}.{}",
        tmp_prefix(name),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Whether process `pid` exists (conservatively `true` when unknown).
fn alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            Some(p) => rustix::process::test_kill_process(p) != Err(rustix::io::Errno::SRCH),
            None => true,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        true
    }
}

/// Remove `.NAME.tmp.PID.*` files in `dir` left by processes that no longer exist.
fn remove_stale(dir: &Path, name: &str) {
    let prefix = tmp_prefix(name);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let f = e.file_name();
        let Some(rest) = f.to_str().and_then(|s| s.strip_prefix(&prefix)) else {
            continue;
        };
        let pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !alive(p)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Write `bytes` to `path` atomically: afterwards `path` holds either its old
/// content or exactly `bytes`, whatever happens to this process. See the module
/// documentation. Errors name the file and the step that failed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = resolve(path).map_err(|e| ctx(e, format!("{}", path.display())))?;
    let dir = dir_of(&target);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} does not name a file", target.display()),
            )
        })?;
    remove_stale(&dir, &name);
    let tmp = write_tmp(&dir, &name, bytes)?;
    if let Err(e) = std::fs::rename(&tmp, &target) {
        let _ = std::fs::remove_file(&tmp);
        return Err(ctx(e, format!("renaming into {}", target.display())));
    }
    sync_dir(&dir)
}

/// Write `bytes` to a new, fsynced temporary file in `dir` and return its name.
fn write_tmp(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    if let Some(tmp) = write_unnamed(dir, name, bytes)? {
        return Ok(tmp);
    }
    let tmp = tmp_name(dir, name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| ctx(e, format!("creating a temporary file in {}", dir.display())))
        .and_then(|mut f| {
            f.write_all(bytes)
                .and_then(|()| f.sync_all())
                .map_err(|e| ctx(e, format!("writing {}", tmp.display())))
        });
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The `O_TMPFILE` way: `Ok(None)` when the filesystem (or a missing `/proc`) does
/// not allow it, so the caller falls back to a named temporary file.
#[cfg(target_os = "linux")]
fn write_unnamed(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<Option<PathBuf>> {
    use rustix::fs::{linkat, open, AtFlags, Mode, OFlags, CWD};
    use rustix::io::Errno;
    use std::os::fd::AsRawFd;
    let fd = match open(
        dir,
        OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    ) {
        Ok(fd) => fd,
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => return Ok(None),
        Err(e) => {
            return Err(ctx(
                e.into(),
                format!("creating a temporary file in {}", dir.display()),
            ))
        }
    };
    let mut f = File::from(fd);
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| ctx(e, format!("writing a temporary file in {}", dir.display())))?;
    let tmp = tmp_name(dir, name);
    let me = format!("/proc/self/fd/{}", f.as_raw_fd());
    match linkat(CWD, me.as_str(), CWD, &tmp, AtFlags::SYMLINK_FOLLOW) {
        Ok(()) => Ok(Some(tmp)),
        Err(Errno::NOENT | Errno::PERM | Errno::XDEV) => Ok(None),
        Err(e) => Err(ctx(e.into(), format!("naming {}", tmp.display()))),
    }
}

/// Flush directory `dir` so a rename in it survives a crash.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        // Some filesystems cannot fsync a directory; the rename is still atomic.
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
        r => r.map_err(|e| ctx(e, format!("flushing directory {}", dir.display()))),
    }
}

/// Whether a file can be created in `dir`, found by creating (and dropping) an
/// unnamed one, or where that is unsupported, by `access(W_OK | X_OK)`.
fn dir_writable(dir: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{access, open, Access, Mode, OFlags};
        use rustix::io::Errno;
        match open(
            dir,
            OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(_) => Ok(()),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
                access(dir, Access::WRITE_OK | Access::EXEC_OK).map_err(Into::into)
            }
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let m = std::fs::metadata(dir)?;
        if m.permissions().readonly() {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        Ok(())
    }
}

/// Check, before any work, that [`write_atomic`] could write `path`: its directory
/// exists and takes new files, and `path` is not a directory. Leaves nothing behind.
pub fn check_writable(path: &Path) -> Result<(), InputError> {
    let bad = |m: String| InputError::in_file(path, None, m);
    let target = resolve(path).map_err(|e| bad(format!("cannot write: {e}")))?;
    if target.is_dir() {
        return Err(bad("cannot write: it is a directory".into()));
    }
    if target.file_name().is_none() {
        return Err(bad("cannot write: does not name a file".into()));
    }
    let dir = dir_of(&target);
    if !dir.is_dir() {
        return Err(bad(format!(
            "cannot write: directory {} does not exist",
            dir.display()
        )));
    }
    dir_writable(&dir).map_err(|e| {
        bad(format!(
            "cannot write: directory {} does not take new files: {e}",
            dir.display()
        ))
    })
}

/// [`check_writable`] for each of `paths` (a command's output options).
pub fn check_all<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<(), InputError> {
    paths
        .into_iter()
        .try_for_each(|p| check_writable(p.as_ref()))
}

/// Check, before any work, that output directory `dir` exists and takes new files,
/// or could be created (its nearest existing ancestor takes new directories).
/// Creates nothing.
pub fn check_writable_dir(dir: &Path) -> Result<(), InputError> {
    let bad = |m: String| InputError::in_file(dir, None, m);
    let mut d = dir.to_path_buf();
    loop {
        match std::fs::metadata(&d) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(bad(format!(
                    "cannot use as output directory: {} is not a directory",
                    d.display()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                d = match d.parent().filter(|p| !p.as_os_str().is_empty()) {
                    Some(p) => p.to_path_buf(),
                    None => PathBuf::from("."),
                };
            }
            Err(e) => return Err(bad(format!("cannot use as output directory: {e}"))),
        }
    }
    dir_writable(&d).map_err(|e| {
        bad(format!(
            "cannot use as output directory: {} does not take new files: {e}",
            d.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory that outlives the test (kept for inspection).
    fn scratch(tag: &str) -> PathBuf {
        tempfile::Builder::new()
            .prefix(&format!("schedlab-files-{tag}-"))
            .tempdir()
            .unwrap()
            .keep()
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn write_replaces_the_file_and_leaves_no_temporary() {
        let d = scratch("replace");
        let p = d.join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two, longer");
        assert_eq!(names(&d), vec!["out.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_removes_its_temporary_and_says_why() {
        let d = scratch("fail");
        // Renaming a file over a directory fails after the temporary file is written.
        let p = d.join("taken");
        std::fs::create_dir(&p).unwrap();
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.contains("taken"), "{e}");
        assert_eq!(names(&d), vec!["taken"]);
        // A missing directory names the directory.
        let e = write_atomic(&d.join("no/such.txt"), b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn writing_through_a_symlink_writes_its_target() {
        let d = scratch("link");
        std::fs::create_dir(d.join("real")).unwrap();
        let target = d.join("real/data.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink("real/data.txt", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(names(&d.join("real")), vec!["data.txt"]);
        // A dangling link makes its target.
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink("real/fresh.txt", &dangling).unwrap();
        write_atomic(&dangling, b"fresh").unwrap();
        assert_eq!(std::fs::read(d.join("real/fresh.txt")).unwrap(), b"fresh");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn stale_temporaries_of_dead_processes_are_removed() {
        let d = scratch("stale");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = d.join(format!(".out.txt.tmp.{dead}.0"));
        let live = d.join(format!(".out.txt.tmp.{}.999", std::process::id()));
        let other = d.join(format!(".other.tmp.{dead}.0"));
        for p in [&stale, &live, &other] {
            std::fs::write(p, b"partial").unwrap();
        }
        write_atomic(&d.join("out.txt"), b"ok").unwrap();
        assert!(!stale.exists(), "a dead process's temporary stays");
        assert!(live.exists(), "a live process's temporary was removed");
        assert!(other.exists(), "another file's temporary was removed");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn check_writable_names_the_problem_and_creates_nothing() {
        let d = scratch("check");
        let ok = d.join("out.json");
        check_writable(&ok).unwrap();
        assert!(names(&d).is_empty());
        let e = check_writable(&d.join("missing/out.json")).unwrap_err();
        assert!(e.msg.contains("does not exist"), "{e}");
        assert_eq!(
            e.file.as_deref(),
            Some(d.join("missing/out.json").as_path())
        );
        let e = check_writable(&d).unwrap_err();
        assert!(e.msg.contains("is a directory"), "{e}");
        check_writable_dir(&d.join("new/sub")).unwrap();
        assert!(names(&d).is_empty());
        std::fs::write(d.join("file"), b"").unwrap();
        let e = check_writable_dir(&d.join("file/sub")).unwrap_err();
        assert!(e.msg.to_lowercase().contains("not a directory"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
