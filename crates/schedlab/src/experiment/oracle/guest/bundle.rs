//! Bundles: a guest run's directory as one compressed, deterministic file, the form
//! in which the recorded suites' real runs are committed (`tests/data/oracle/`).
//! Everything the comparison reads is kept (traces, sysfs, sched domains, the
//! calibration's machine file, each job's stdout and schedstat snapshots); the
//! console log and the calibration's own trace of micro-benchmarks are left out.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The bundle file of a topology and kernel.
pub(crate) fn bundle_name(topology: &str, kernel: &str) -> String {
    format!("{topology}-{kernel}.tar.gz")
}

/// Files of a guest run left out of a bundle (large, and not needed to check: the
/// calibration's trace is of micro-benchmarks, its result is its stdout).
const NOT_BUNDLED: &[&str] = &["console.log", "jobs/calibrate/trace.txt"];

/// Pack a guest run's directory into a deterministic `tar.gz` (sorted entries,
/// zero times and owners), written atomically.
pub(crate) fn pack(dir: &Path, bundle: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for rel in &files {
        let data = std::fs::read(dir.join(rel)).map_err(|e| format!("{}: {e}", rel.display()))?;
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        tar.append_data(&mut h, rel, data.as_slice())
            .map_err(|e| format!("packing {}: {e}", rel.display()))?;
    }
    let bytes = tar
        .into_inner()
        .and_then(|gz| gz.finish())
        .map_err(|e| format!("packing {}: {e}", bundle.display()))?;
    super::write_atomic(bundle, &bytes)
}

fn collect(root: &Path, d: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let rd = std::fs::read_dir(d).map_err(|e| format!("{}: {e}", d.display()))?;
    for e in rd {
        let e = e.map_err(|e| e.to_string())?;
        let p = e.path();
        let rel = p.strip_prefix(root).expect("under root").to_path_buf();
        if p.is_dir() {
            collect(root, &p, out)?;
        } else if !NOT_BUNDLED.iter().any(|n| rel == Path::new(n)) {
            out.push(rel);
        }
    }
    Ok(())
}

/// Unpack a bundle into `dest` (created).
pub fn unpack(bundle: &Path, dest: &Path) -> Result<(), String> {
    let mut raw = Vec::new();
    std::fs::File::open(bundle)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(|e| format!("{}: {e}", bundle.display()))?;
    let gz = flate2::read::GzDecoder::new(raw.as_slice());
    std::fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    tar::Archive::new(gz)
        .unpack(dest)
        .map_err(|e| format!("unpacking {}: {e}", bundle.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_deterministic_and_round_trip() {
        let base = std::env::temp_dir().join(format!("schedlab-bundle-{}", std::process::id()));
        let src = base.join("src");
        std::fs::create_dir_all(src.join("jobs/a")).unwrap();
        std::fs::write(src.join("uname_r"), "5.10.0-32-amd64\n").unwrap();
        std::fs::write(src.join("jobs/a/trace.txt"), "x\n").unwrap();
        std::fs::write(src.join("console.log"), "noise\n").unwrap();
        pack(&src, &base.join("one.tar.gz")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(src.join("jobs/a/trace.txt"), "x\n").unwrap();
        pack(&src, &base.join("two.tar.gz")).unwrap();
        let one = std::fs::read(base.join("one.tar.gz")).unwrap();
        assert_eq!(one, std::fs::read(base.join("two.tar.gz")).unwrap());
        unpack(&base.join("one.tar.gz"), &base.join("out")).unwrap();
        assert_eq!(
            std::fs::read_to_string(base.join("out/jobs/a/trace.txt")).unwrap(),
            "x\n"
        );
        assert!(!base.join("out/console.log").exists());
        assert_eq!(
            crate::experiment::oracle::Artifacts::open(&base.join("out"))
                .unwrap()
                .release,
            "5.10.0-32-amd64"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
