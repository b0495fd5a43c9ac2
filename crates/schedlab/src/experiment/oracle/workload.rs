//! What a scenario's workload is inside a real guest, and which kernel model matches
//! a real kernel.
//!
//! A scenario describes its workload for the simulator: an rt-app JSON file, or a
//! benchmark generator with the benchmark's own options. The oracle runs the *real*
//! program with the same description in the guest, so the translation is literal:
//! rt-app gets the same JSON file, unchanged (rt-app is the reference for its own
//! format); `hackbench` gets the command line whose options the generator models
//! (`-g`, `-f`, `-l`, `-s`, `-p`, `-T`: rt-tests' hackbench). A workload kind with no
//! packaged real counterpart in the guest is refused with the list of kinds that have
//! one, rather than approximated.
//!
//! The real programs end differently from the simulated ones. rt-app stops its
//! threads when `global.duration` expires, but a thread blocked in a condition
//! variable that nobody will signal again (one side of a ping-pong pair) never
//! returns, so rt-app never exits: the guest command is bounded by `timeout -s KILL`
//! at the duration plus a margin, and the trace up to then is the run. The simulator
//! ends the run at the duration.
//!
//! Which tasks are the workload's: in the guest the job's shell starts the tool, the
//! tool's process forks or clones the workload's tasks, and kernel threads, the init
//! shell and the tracing commands run beside them. The workload is the tool's process
//! tree; whether the tool's own first task belongs to it depends on the tool: rt-app's
//! main thread only creates the threads and waits (the simulator models it as the
//! task `rt-app`, and both traces leave it out of the comparison), hackbench's
//! parent process is part of the benchmark (it forks the groups and reaps them, as the
//! generator's parent task does).
//!
//! Kernel models: a guest kernel's release string (`uname -r`, e.g.
//! `5.10.0-35-amd64`, `6.12.38+deb12-amd64`) selects the preset that models that
//! version's fair class (`v5.10`, `v6.12`; docs/kernel-mapping.md §9 says what each
//! does and does not model).

use crate::config::{Doc, TableReader};
use crate::error::InputError;
use std::path::Path;

/// The real program a scenario's workload runs in the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestWorkload {
    /// The program (its process is the root of the workload's process tree).
    pub tool: &'static str,
    /// The shell command the guest runs, in a directory holding `files`.
    pub command: String,
    /// Input files by name (the rt-app JSON).
    pub files: Vec<(String, Vec<u8>)>,
    /// Whether the tool's first task is one of the workload's tasks.
    pub include_root: bool,
    /// The run's expected length in seconds (rt-app's `global.duration`), if known.
    pub duration_s: Option<u64>,
}

/// Extra seconds an rt-app job may run past its `global.duration` before the guest
/// kills it (thread creation, JSON parsing and exit under TCG).
pub const RTAPP_EXIT_MARGIN_S: u64 = 10;

/// Workload kinds the oracle can run for real.
pub const GUEST_KINDS: &[&str] = &["rtapp", "hackbench"];

/// The statistic of the time a tool prints for its whole run, when it prints one:
/// hackbench's `Time:` (the simulated generator prints the same line).
pub const TOOL_TIME: &str = "tool.time_s";

impl GuestWorkload {
    /// The run's time in seconds as the tool printed it in `stdout` (hackbench's
    /// `Time: 0.639`); `None` for a tool that prints none, or a run that did not.
    pub fn tool_time_s(&self, stdout: &str) -> Option<f64> {
        if self.tool != "hackbench" {
            return None;
        }
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("Time:"))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|t| t.is_finite() && *t >= 0.0)
    }
}

/// Translate the `[workload]` of the scenario at `path` (after `sets` overrides).
pub fn guest_workload(path: &Path, sets: &[String]) -> Result<GuestWorkload, InputError> {
    let mut doc = Doc::load(path)?;
    for s in sets {
        doc.set(s)?;
    }
    let root = TableReader::new(&doc, &doc.root, "")?;
    let w = root
        .table("workload")?
        .ok_or_else(|| doc.err_file("missing `[workload]` section"))?;
    let kind = w
        .str("kind")?
        .ok_or_else(|| w.err("kind", "missing `workload.kind`"))?;
    match kind {
        "rtapp" => {
            let file = w
                .str("file")?
                .ok_or_else(|| w.err("file", "missing `workload.file` (the rt-app JSON)"))?;
            let base = path.parent().unwrap_or(Path::new(""));
            let json_path = base.join(file);
            let bytes = std::fs::read(&json_path).map_err(|e| {
                w.err(
                    "file",
                    format!("cannot read rt-app file `{}`: {e}", json_path.display()),
                )
            })?;
            let duration_s = rtapp_duration(&bytes);
            let name = json_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "workload.json".into());
            let name = sanitize(&name);
            let limit = duration_s.unwrap_or(60).saturating_add(RTAPP_EXIT_MARGIN_S);
            Ok(GuestWorkload {
                tool: "rt-app",
                command: format!("timeout -s KILL {limit} rt-app {name}"),
                files: vec![(name, bytes)],
                include_root: false,
                duration_s,
            })
        }
        "hackbench" => {
            let d = crate::workload::generators::hackbench::MessagingOpts::hackbench();
            let num = |k: &'static str, def: u32| -> Result<u32, InputError> {
                Ok(w.uint(k, 1, u32::MAX as u64)?.map_or(def, |v| v as u32))
            };
            let groups = num("groups", d.groups)?;
            let fds = num("fds", d.fds)?;
            let loops = num("loops", d.loops)?;
            let datasize = num("datasize", d.datasize)?;
            let pipe = w.bool("pipe")?.unwrap_or(d.pipe);
            let threads = w.bool("threads")?.unwrap_or(d.threads);
            let mut command =
                format!("hackbench -g {groups} -f {fds} -l {loops} -s {datasize}");
            if pipe {
                command.push_str(" -p");
            }
            if threads {
                command.push_str(" -T");
            }
            Ok(GuestWorkload {
                tool: "hackbench",
                command,
                files: Vec::new(),
                include_root: true,
                duration_s: None,
            })
        }
        other => Err(w.err(
            "kind",
            format!(
                "workload kind `{other}` has no real program in the oracle's guest (kinds it can run: {})",
                GUEST_KINDS.join(", ")
            ),
        )),
    }
}

/// rt-app's `global.duration` in whole seconds, if the file states one (the
/// simulator's parser validates the file; this only sizes the guest's time limit).
fn rtapp_duration(bytes: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let d = v.get("global")?.get("duration")?;
    d.as_u64()
        .or_else(|| d.as_f64().map(|f| f.ceil().max(0.0) as u64))
}

/// A file name safe to pass to the guest's shell unquoted.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The kernel preset that models a real kernel, from its release string.
pub(crate) fn preset_for_release(release: &str) -> Result<&'static str, String> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    match (major, minor) {
        (5, 10) => Ok("v5.10"),
        (6, 12) => Ok("v6.12"),
        _ => Err(format!(
            "no kernel model for release `{release}`: the oracle's models are v5.10 (Debian bullseye's 5.10) and v6.12 (bookworm-backports' 6.12)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn oracle_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/oracle")
    }

    #[test]
    fn rtapp_runs_the_same_json_bounded_by_its_duration() {
        let g = guest_workload(&oracle_dir().join("hog-spread.toml"), &[]).unwrap();
        assert_eq!(g.tool, "rt-app");
        assert_eq!(g.command, "timeout -s KILL 12 rt-app hog-spread.json");
        assert_eq!(g.files.len(), 1);
        let on_disk = std::fs::read(oracle_dir().join("hog-spread.json")).unwrap();
        assert_eq!(g.files[0], ("hog-spread.json".to_string(), on_disk));
        assert!(!g.include_root);
        assert_eq!(g.duration_s, Some(2));
    }

    #[test]
    fn hackbench_options_become_its_command_line() {
        let p = oracle_dir().join("hackbench-sockets.toml");
        let g = guest_workload(&p, &[]).unwrap();
        assert_eq!(g.command, "hackbench -g 2 -f 4 -l 200 -s 100");
        let out = "Running in process mode with 2 groups\nTime: 0.639\n";
        assert_eq!(g.tool_time_s(out), Some(0.639));
        assert_eq!(g.tool_time_s("Running in process mode\n"), None);
        assert_eq!(g.tool_time_s("Time: nan\n"), None);
        assert!(g.include_root);
        let g = guest_workload(
            &p,
            &[
                "workload.pipe=true".into(),
                "workload.threads=true".into(),
                "workload.loops=7".into(),
            ],
        )
        .unwrap();
        assert_eq!(g.command, "hackbench -g 2 -f 4 -l 7 -s 100 -p -T");
    }

    #[test]
    fn kinds_without_a_real_program_are_refused_with_the_line() {
        let dir = std::env::temp_dir().join(format!("schedlab-oracle-wl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.toml");
        std::fs::write(
            &p,
            "[machine]\npreset = \"juno-r0\"\n\n[workload]\nkind = \"sysbench\"\n",
        )
        .unwrap();
        let e = guest_workload(&p, &[]).unwrap_err();
        assert_eq!(e.line, Some(5));
        assert!(
            e.msg.contains("`sysbench` has no real program"),
            "{}",
            e.msg
        );
        assert!(e.msg.contains("rtapp, hackbench"), "{}", e.msg);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_huge_rtapp_duration_does_not_wrap_the_guest_limit() {
        let dir = std::env::temp_dir().join(format!("schedlab-oracle-huge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("x.json"),
            r#"{"global": {"duration": 1e30}, "tasks": {"t": {"run": 1}}}"#,
        )
        .unwrap();
        let p = dir.join("s.toml");
        std::fs::write(
            &p,
            "[machine]\npreset = \"juno-r0\"\n\n[workload]\nkind = \"rtapp\"\nfile = \"x.json\"\n",
        )
        .unwrap();
        let g = guest_workload(&p, &[]).unwrap();
        assert_eq!(
            g.command,
            format!("timeout -s KILL {} rt-app x.json", u64::MAX)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn releases_map_to_their_models() {
        assert_eq!(preset_for_release("5.10.0-35-amd64"), Ok("v5.10"));
        assert_eq!(preset_for_release("6.12.38+deb12-amd64"), Ok("v6.12"));
        assert_eq!(preset_for_release("6.12.0"), Ok("v6.12"));
        let e = preset_for_release("6.1.0-40-amd64").unwrap_err();
        assert!(e.contains("`6.1.0-40-amd64`"), "{e}");
        assert!(preset_for_release("").is_err());
    }

    #[test]
    fn file_names_are_shell_safe() {
        assert_eq!(sanitize("a b;c$(x).json"), "a_b_c__x_.json");
    }
}
