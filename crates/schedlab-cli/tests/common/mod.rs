//! What the binary's tests share: the binary, the repository root, scratch directories.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `schedlab` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// The repository root (scenarios, docs).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh, empty directory `schedlab-PREFIX-NAME-PID` under the system's temporary
/// directory (kept after the test, for inspection).
pub fn tmpdir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the binary with `args`: its exit code (-1 when killed) and its stderr.
pub fn run_err(args: &[&str]) -> (i32, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The stdout of a command that must have succeeded (its stderr in the failure).
pub fn ok_stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
