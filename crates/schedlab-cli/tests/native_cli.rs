//! A scenario is data, a C scheduler is code: the binary runs one only when asked
//! (`--allow-native-scheduler`), contained, and writes nothing when it misbehaves.

mod common;
use common::*;

/// The scheduler that `run` is handed in a bug report: a FIFO whose `ops.init`
/// runs a shell command.
const EVIL: &str = "#include <scx/common.bpf.h>\n\
    extern int system(const char *);\n\
    void BPF_STRUCT_OPS(e_enqueue, struct task_struct *p, u64 f)\n\
    { scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, f); }\n\
    s32 BPF_STRUCT_OPS_SLEEPABLE(e_init) { system(\"id > pwned.txt\"); return 0; }\n\
    SCX_OPS_DEFINE(e_ops, .enqueue = (void *)e_enqueue, .init = (void *)e_init, .name = \"e\");\n";

/// The same FIFO without the command.
const FIFO: &str = "#include <scx/common.bpf.h>\n\
    void BPF_STRUCT_OPS(f_enqueue, struct task_struct *p, u64 f)\n\
    { scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, f); }\n\
    SCX_OPS_DEFINE(f_ops, .enqueue = (void *)f_enqueue, .name = \"f\");\n";

fn scenario(dir: &std::path::Path, name: &str, source: &str) -> std::path::PathBuf {
    std::fs::write(dir.join(format!("{name}.bpf.c")), source).unwrap();
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "[machine]\npreset = \"juno-r0\"\n[kernel]\nclass = \"ext\"\n\
             scheduler = \"{name}.bpf.c\"\n[workload]\nkind = \"hackbench\"\ngroups = 1\n\
             loops = 10\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn run_compare_sweep_and_explain_ask_for_the_user_s_word() {
    let d = tmpdir("native", "consent");
    let sc = scenario(&d, "fifo", FIFO);
    let s = sc.to_str().unwrap();
    let out = d.join("sweep");
    let o = out.to_str().unwrap();
    for args in [
        vec!["run", s, "-q"],
        vec!["compare", s, "--runs", "2", "-q"],
        vec!["sweep", s, "--grid", "run.seed=1,2", "--out", o, "-q"],
        vec!["explain", s, "--task", "sender", "--at", "1"],
    ] {
        let (code, err) = run_err(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ")
                && err.contains("fifo.toml:5:")
                && err.contains("fifo.bpf.c is a C scheduler")
                && err.contains("--allow-native-scheduler"),
            "{args:?}: {err}"
        );
        let mut with = args.clone();
        with.push("--allow-native-scheduler");
        let o = bin().args(&with).output().unwrap();
        assert!(
            o.status.success(),
            "{with:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_scheduler_that_runs_a_command_is_stopped_and_nothing_is_written() {
    let d = tmpdir("native", "evil");
    let sc = scenario(&d, "evil", EVIL);
    let json = d.join("r.json");
    let trace = d.join("r.txt");
    let o = bin()
        .current_dir(&d)
        .args([
            "run",
            sc.to_str().unwrap(),
            "-q",
            "--allow-native-scheduler",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}: the scheduler in evil.bpf.c tried to rt_sigprocmask — refused",
            sc.display()
        )
    );
    assert!(!d.join("pwned.txt").exists());
    assert!(!json.exists() && !trace.exists());
}
