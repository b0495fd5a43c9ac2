//! sched_ext schedulers in the oracle's guest: the same BPF scheduler on a real
//! kernel and in the simulator, and their decisions compared.
//!
//! A sched_ext scheduler is a BPF program: `struct sched_ext_ops` in a
//! `SEC(".struct_ops.link")` map, compiled with clang for the BPF target against
//! the kernel's BTF (`vmlinux.h`), loaded by a user-space half that writes its
//! read-only globals, loads the object (the verifier checks every op), attaches
//! the ops, and waits. While attached, every `SCHED_NORMAL` task of the system is
//! scheduled by it; when it errors or stalls, the kernel's sched_ext core ejects it
//! and every task falls back to the fair class. schedlab runs the same source
//! natively against its shim (sched/ext/bpf.rs); the oracle runs it for real.
//!
//! What the guest needs does not come with Debian's kernels (their 6.12 images lack
//! `CONFIG_SCHED_CLASS_EXT`), so it is a *kit* built once by
//! `tools/oracle-scx/build-kit.sh` into the oracle's cache (`kernels/6.12-scx`, or
//! `$SCHEDLAB_SCX_KIT`): a 6.12 bzImage with sched_ext and BTF, the kernel tree with
//! `tools/sched_ext` built (its libbpf, `vmlinux.h` from that kernel's BTF, the
//! upstream example schedulers' sources), `bpf_cflags` (the flags its Makefile
//! compiles a `.bpf.c` with) and `scx_load`, a static generic loader
//! (tools/oracle-scx/scx_load.c) that takes the object and `NAME=VALUE` globals.
//! `--kernel 6.12-scx` names the kit.
//!
//! A scenario with `[kernel] class = "ext"` becomes a guest job that compiles the
//! scheduler with the kit's clang and flags on the host, starts `scx_load` in the
//! background, waits until `/sys/kernel/sched_ext/state` reads `enabled`, runs the
//! workload under the trace, then interrupts the loader and prints its log and the
//! state. The scheduler's source is the scenario's `.bpf.c` with its
//! `[kernel.scheduler_globals]` (machine facts resolved on the scenario's machine,
//! which is the guest's topology); a built-in scheduler with an upstream twin runs
//! as that twin (`simple` and `simple-fifo` are `tools/sched_ext/scx_simple.bpf.c`,
//! the latter with `fifo_sched`, shown identical in decisions on the shim in
//! docs/sched-ext.md). A comparison is refused when the real run did not stay under
//! the scheduler for the whole job: a scheduler the kernel ejected mid-run leaves a
//! trace that is half fair class.

use super::guest::default_cache_dir;
use crate::error::InputError;
use crate::experiment::Scenario;
use crate::sched::ext::bpf::GlobalValue;
use std::path::{Path, PathBuf};

/// The `--kernel` word of the kit's kernel.
pub const KIT_KERNEL: &str = "6.12-scx";

/// The built kit (see the module essay).
#[derive(Clone, Debug)]
pub struct ScxKit {
    pub dir: PathBuf,
    pub bzimage: PathBuf,
    pub loader: PathBuf,
    /// The kernel tree (`tools/sched_ext` built in it).
    pub src: PathBuf,
    pub clang: PathBuf,
    pub cflags: Vec<String>,
}

impl ScxKit {
    /// `$SCHEDLAB_SCX_KIT`, else `kernels/6.12-scx` of the oracle's cache.
    pub fn default_dir() -> Result<PathBuf, String> {
        if let Some(p) = std::env::var_os("SCHEDLAB_SCX_KIT").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        Ok(default_cache_dir()?.join("kernels").join(KIT_KERNEL))
    }

    /// The kit in `dir`, every part checked.
    pub fn open(dir: &Path) -> Result<ScxKit, String> {
        let need = |name: &str| {
            let p = dir.join(name);
            if p.exists() {
                Ok(p)
            } else {
                Err(format!(
                    "the sched_ext kernel kit in {} has no `{name}`: build it with \
                     tools/oracle-scx/build-kit.sh {} (about 30 min on 2 cores)",
                    dir.display(),
                    dir.display()
                ))
            }
        };
        let read = |name: &str| -> Result<String, String> {
            let p = need(name)?;
            std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
        };
        Ok(ScxKit {
            dir: dir.to_path_buf(),
            bzimage: need("bzImage")?,
            loader: need("scx_load")?,
            src: need("src")?,
            clang: PathBuf::from(read("clang")?.trim()),
            cflags: read("bpf_cflags")?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }

    /// The kit at [`ScxKit::default_dir`].
    pub fn locate() -> Result<ScxKit, String> {
        ScxKit::open(&ScxKit::default_dir()?)
    }

    /// Compile `source` for the BPF target as tools/sched_ext's Makefile does; the
    /// object's bytes.
    pub fn compile(&self, source: &Path) -> Result<Vec<u8>, String> {
        let tmp = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
        let obj = tmp.path().join("sched.bpf.o");
        let mut cmd = std::process::Command::new(&self.clang);
        cmd.args(&self.cflags);
        if let Some(d) = source.parent() {
            cmd.arg(format!("-I{}", d.display()));
        }
        cmd.arg("-c").arg(source).arg("-o").arg(&obj);
        let out = cmd
            .output()
            .map_err(|e| format!("running {}: {e}", self.clang.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{}: the BPF build for the guest failed:\n{}",
                source.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        std::fs::read(&obj).map_err(|e| format!("{}: {e}", obj.display()))
    }
}

/// The scheduler a scenario runs, as the guest loads it.
#[derive(Clone, Debug, PartialEq)]
pub enum GuestScheduler {
    /// A source of the kit's tree (`tools/sched_ext/<file>`): a built-in scheduler's
    /// upstream twin.
    Upstream {
        builtin: String,
        file: &'static str,
        globals: Vec<(String, GlobalValue)>,
    },
    /// The scenario's own `.bpf.c`.
    Source {
        path: PathBuf,
        globals: Vec<(String, GlobalValue)>,
    },
}

/// A built-in scheduler with an upstream BPF twin: (name, file in
/// `tools/sched_ext/`, the globals its loader sets).
type Twin = (&'static str, &'static str, &'static [(&'static str, i64)]);

/// Built-in schedulers with an upstream BPF twin.
const UPSTREAM_TWINS: &[Twin] = &[
    ("simple", "scx_simple.bpf.c", &[]),
    ("simple-fifo", "scx_simple.bpf.c", &[("fifo_sched", 1)]),
];

impl GuestScheduler {
    /// The scheduler of the scenario `sc` (loaded from `path`), `None` for the fair
    /// class.
    pub fn of(sc: &Scenario, path: &Path) -> Result<Option<GuestScheduler>, InputError> {
        let Some(name) = sc.tunables.ext_scheduler.clone() else {
            return Ok(None);
        };
        if let Some((p, globals)) = &sc.tunables.ext_source {
            return Ok(Some(GuestScheduler::Source {
                path: p.clone(),
                globals: globals.clone(),
            }));
        }
        match UPSTREAM_TWINS.iter().find(|(n, _, _)| *n == name) {
            Some((_, file, g)) => Ok(Some(GuestScheduler::Upstream {
                builtin: name,
                file,
                globals: g
                    .iter()
                    .map(|(k, v)| (k.to_string(), GlobalValue::Int(*v)))
                    .collect(),
            })),
            None => Err(InputError::in_file(
                path,
                None,
                format!(
                    "the built-in sched_ext scheduler `{name}` has no BPF twin a real kernel can load \
                     (built-ins with one: {}); run its BPF C source instead (scenarios/scx/)",
                    UPSTREAM_TWINS
                        .iter()
                        .map(|t| t.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Its source file in `kit`.
    pub fn source(&self, kit: &ScxKit) -> PathBuf {
        match self {
            GuestScheduler::Upstream { file, .. } => kit.src.join("tools/sched_ext").join(file),
            GuestScheduler::Source { path, .. } => path.clone(),
        }
    }

    fn globals(&self) -> &[(String, GlobalValue)] {
        match self {
            GuestScheduler::Upstream { globals, .. } | GuestScheduler::Source { globals, .. } => {
                globals
            }
        }
    }

    /// `scx_load`'s arguments after the object: `NAME=V` or `NAME=V0,V1,...`.
    pub fn loader_args(&self) -> Vec<String> {
        self.globals()
            .iter()
            .map(|(n, v)| match v {
                GlobalValue::Int(i) => format!("{n}={i}"),
                GlobalValue::Array(a) => format!(
                    "{n}={}",
                    a.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
                ),
            })
            .collect()
    }
}

/// The guest's file names of the loader and the object.
pub const LOADER_FILE: &str = "scx_load";
pub const OBJECT_FILE: &str = "sched.bpf.o";

/// How long the job waits for the scheduler to be enabled (tenths of a second):
/// loading verifies every op, slow under TCG.
const ENABLE_WAIT_DECIS: u32 = 1200;

/// The job command that runs `workload` under the scheduler: the loader in the
/// background, the wait for `enabled`, the workload, the loader stopped, its log
/// and the final state printed; the job's status is the workload's.
pub fn wrap_command(workload: &str, args: &[String]) -> String {
    format!(
        "chmod +x {LOADER_FILE}\n\
         ./{LOADER_FILE} {OBJECT_FILE}{args} > scx_load.log 2>&1 &\n\
         L=$!\n\
         n=0\n\
         while [ \"$(cat /sys/kernel/sched_ext/state 2>/dev/null)\" != enabled ]; do\n\
         \x20 n=$((n+1)); if [ $n -gt {ENABLE_WAIT_DECIS} ] || ! kill -0 $L 2>/dev/null; then echo 'scx: not enabled'; cat scx_load.log; exit 125; fi\n\
         \x20 sleep 0.1\n\
         done\n\
         {workload}\n\
         S=$?\n\
         kill -INT $L\n\
         wait $L\n\
         echo \"scx: loader exit $?\"\n\
         cat scx_load.log\n\
         echo \"scx: state $(cat /sys/kernel/sched_ext/state)\"\n\
         exit $S\n",
        args = args.iter().map(|a| format!(" {a}")).collect::<String>()
    )
}

/// Whether a job's stdout shows the scheduler enabled before the workload and still
/// attached when the loader was stopped; the reason when not.
pub fn check_job_stdout(stdout: &str) -> Result<(), String> {
    if stdout.contains("scx: not enabled") {
        return Err("the scheduler was never enabled in the guest (its loader's log is in the job's stdout)".into());
    }
    if !stdout.contains("scx_load: enabled") {
        return Err("the job's stdout has no `scx_load: enabled` line: not a sched_ext run".into());
    }
    if stdout.contains("scx_load: the kernel disabled the scheduler") {
        let why = stdout
            .lines()
            .find(|l| l.starts_with("scx_load: exit kind"))
            .unwrap_or("no exit record");
        return Err(format!(
            "the kernel ejected the scheduler during the job ({why}): the real trace is partly the fair class's"
        ));
    }
    if !stdout.contains("scx_load: unloaded") {
        return Err("the scheduler's loader did not end cleanly (no `scx_load: unloaded`)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scx_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
    }

    /// The scheduler of the scenario at `p` after `sets`.
    fn of_scenario(p: &Path, sets: &[String]) -> Result<Option<GuestScheduler>, InputError> {
        let sc = crate::experiment::Scenario::load(
            p,
            &crate::experiment::Overrides {
                sets: sets.to_vec(),
                ..Default::default()
            },
        )?;
        GuestScheduler::of(&sc, p)
    }

    #[test]
    fn builtins_run_as_their_upstream_twin_and_c_sources_as_themselves() {
        let p = scx_dir().join("oracle/hog-spread.toml");
        assert_eq!(of_scenario(&p, &[]).unwrap(), None);
        let g = of_scenario(
            &p,
            &[
                "kernel.class=ext".into(),
                "kernel.scheduler=simple-fifo".into(),
            ],
        )
        .unwrap()
        .unwrap();
        assert!(matches!(&g, GuestScheduler::Upstream { file, .. } if *file == "scx_simple.bpf.c"));
        assert_eq!(g.loader_args(), ["fifo_sched=1"]);
        let e = of_scenario(
            &p,
            &[
                "kernel.class=ext".into(),
                "kernel.scheduler=llc-vtime".into(),
            ],
        )
        .unwrap_err();
        assert!(e.msg.contains("no BPF twin"), "{e}");
    }

    #[test]
    fn a_c_scheduler_takes_its_globals_with_machine_facts_resolved() {
        if crate::sched::ext::bpf::find_clang().is_err() {
            eprintln!("skipped: no clang");
            return;
        }
        let p = scx_dir().join("scx-llc-vtime.toml");
        let g = of_scenario(&p, &["machine.preset=\"xeon-e5-40\"".into()])
            .unwrap()
            .unwrap();
        let GuestScheduler::Source { path, .. } = &g else {
            panic!("{g:?}")
        };
        assert!(path.ends_with("scx/llc_vtime.bpf.c"), "{}", path.display());
        let args = g.loader_args();
        assert!(args.contains(&"nr_llcs=2".to_string()), "{args:?}");
        // 40 CPUs: 0-9 and 20-29 on package 0 (LLC 0), the rest on LLC 1.
        let llc = args.iter().find(|a| a.starts_with("cpu_llc=")).unwrap();
        let ids: Vec<&str> = llc["cpu_llc=".len()..].split(',').collect();
        assert_eq!(ids.len(), 40);
        assert_eq!((ids[0], ids[10], ids[20], ids[39]), ("0", "1", "0", "1"));
    }

    #[test]
    fn the_job_waits_for_enabled_and_reports_the_loader() {
        let c = wrap_command(
            "timeout -s KILL 12 rt-app x.json",
            &["a=1".into(), "b=2,3".into()],
        );
        assert!(
            c.contains("./scx_load sched.bpf.o a=1 b=2,3 > scx_load.log 2>&1 &"),
            "{c}"
        );
        let run = c.find("rt-app x.json").unwrap();
        assert!(c.find("!= enabled").unwrap() < run);
        assert!(c.find("kill -INT $L").unwrap() > run);
        assert!(c.ends_with("exit $S\n"));
    }

    #[test]
    fn only_a_run_that_stayed_under_the_scheduler_is_compared() {
        let ok = "scx_load: enabled simple_ops\nscx: loader exit 0\nscx_load: unloaded\nscx_load: exit kind 1025 reason \"unregistered from user space\" msg \"\"\nscx: state disabled\n";
        assert_eq!(check_job_stdout(ok), Ok(()));
        let ejected = "scx_load: enabled x\nscx_load: the kernel disabled the scheduler (state disabled)\nscx_load: exit kind 1026 reason \"runnable task stall\" msg \"\"\n";
        let e = check_job_stdout(ejected).unwrap_err();
        assert!(e.contains("runnable task stall"), "{e}");
        assert!(check_job_stdout("scx: not enabled\n").is_err());
        assert!(check_job_stdout("hello\n").is_err());
        assert!(check_job_stdout("scx_load: enabled x\n").is_err());
    }
}
