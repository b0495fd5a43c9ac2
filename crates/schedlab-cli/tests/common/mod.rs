//! What the binary's tests share: the binary, the repository root, scratch directories.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

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
