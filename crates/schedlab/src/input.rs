//! Reading what a user hands us: regular files of bounded size, as UTF-8 text.
//!
//! Every file schedlab reads as input (a scenario, a machine file, an rt-app JSON
//! file, each file of a sysfs snapshot) comes through [`read_text`]. A path that is
//! not a regular file is refused before it is opened: a FIFO would block the reader
//! forever and a character device such as `/dev/zero` would be read until memory
//! runs out. A regular file larger than [`MAX_INPUT_BYTES`] is refused after reading
//! at most one byte more than the limit, so a mistaken multi-gigabyte path costs
//! nothing. A leading UTF-8 byte-order mark is dropped, as TOML parsers and most
//! editors do, so a file saved by a Windows editor reads the same in every format.
//! Errors name the file and say what is wrong; they are [`InputError`]s (exit 2).

use crate::error::InputError;
use std::io::Read;
use std::path::Path;

/// The largest input file read: 64 MiB (a 100 000-thread rt-app file is ~20 MB).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The text of the regular file at `path`, without a leading byte-order mark.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    read_text_opt(path)?
        .ok_or_else(|| InputError::in_file(path, None, "cannot read: No such file or directory"))
}

/// As [`read_text`], but `Ok(None)` when nothing exists at `path`.
pub fn read_text_opt(path: &Path) -> Result<Option<String>, InputError> {
    let err = |msg: String| InputError::in_file(path, None, msg);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(format!("cannot read: {e}"))),
    };
    if !meta.is_file() {
        return Err(err(format!(
            "not a regular file ({}): schedlab reads input only from regular files",
            kind_of(&meta)
        )));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(err(too_big()));
    }
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        // It grew while we read it.
        return Err(err(too_big()));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = crate::error::line_of(&String::from_utf8_lossy(&e.into_bytes()[..at]), at);
        InputError::in_file(path, Some(line), "not UTF-8 text")
    })?;
    Ok(Some(strip_bom(text)))
}

/// `text` without a leading UTF-8 byte-order mark.
pub fn strip_bom(text: String) -> String {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

fn too_big() -> String {
    format!(
        "larger than the input limit of {} MiB (see docs/limits.md)",
        MAX_INPUT_BYTES >> 20
    )
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        tempfile::Builder::new()
            .prefix("schedlab-input-")
            .tempdir()
            .unwrap()
            .keep()
            .join(name)
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_without_reading() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(e.msg.contains("a character device"), "{e}");
        let e = read_text(Path::new("/")).unwrap_err();
        assert!(e.msg.contains("a directory"), "{e}");
        let fifo = tmp("fifo");
        let _ = std::fs::remove_file(&fifo);
        let st = std::process::Command::new("mkfifo").arg(&fifo).status();
        if st.is_ok_and(|s| s.success()) {
            // Would block forever if opened.
            let e = read_text(&fifo).unwrap_err();
            assert!(e.msg.contains("a FIFO"), "{e}");
        }
    }

    #[test]
    fn size_cap_bom_utf8_and_missing() {
        let big = tmp("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_INPUT_BYTES + 1).unwrap(); // sparse: costs no disk
        let e = read_text(&big).unwrap_err();
        assert!(e.msg.contains("input limit of 64 MiB"), "{e}");
        std::fs::remove_file(&big).unwrap();

        let bom = tmp("bom");
        std::fs::write(&bom, "\u{feff}a = 1\n").unwrap();
        assert_eq!(read_text(&bom).unwrap(), "a = 1\n");

        let bad = tmp("bad");
        std::fs::write(&bad, b"a\nb\n\xff").unwrap();
        let e = read_text(&bad).unwrap_err();
        assert_eq!((e.line, e.msg.as_str()), (Some(3), "not UTF-8 text"));

        let missing = tmp("missing");
        assert_eq!(read_text_opt(&missing).unwrap(), None);
        let e = read_text(&missing).unwrap_err();
        assert!(e.msg.contains("No such file"), "{e}");
    }
}
