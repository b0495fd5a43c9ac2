//! Input errors: what a user wrote wrong, and where.
//!
//! Bad input (a scenario, machine file, sysfs snapshot, rt-app file, command-line
//! override) is never a panic: it becomes an [`InputError`] naming the file, the line
//! when known, and what is wrong. The CLI prints it and exits with status 2.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The file, or `None` for command-line input.
    pub file: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The scenario key the error is about (`workload.groups`), when known.
    pub key: Option<String>,
    pub msg: String,
}

impl InputError {
    pub fn new(msg: impl Into<String>) -> Self {
        InputError {
            file: None,
            line: None,
            key: None,
            msg: msg.into(),
        }
    }
    pub fn in_file(file: impl Into<PathBuf>, line: Option<usize>, msg: impl Into<String>) -> Self {
        InputError {
            file: Some(file.into()),
            line,
            key: None,
            msg: msg.into(),
        }
    }
    /// Name the scenario key the error is about (kept if one is set already).
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        if self.key.is_none() {
            self.key = Some(key.into());
        }
        self
    }

    /// Attach a file name if none is set yet.
    pub fn with_file(mut self, file: impl Into<PathBuf>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
        }
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{}: {}", p.display(), l, self.msg),
            (Some(p), None) => write!(f, "{}: {}", p.display(), self.msg),
            (None, _) => write!(f, "{}", self.msg),
        }
    }
}

impl std::error::Error for InputError {}

/// 1-based line number of byte offset `pos` in `text`.
pub fn line_of(text: &str, pos: usize) -> usize {
    text[..pos.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}
