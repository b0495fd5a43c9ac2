//! A C scheduler is code: it runs only with the user's word for it, only inside
//! the sandbox, and the sandbox stops every system call a BPF program could not
//! make (experiment/sandbox.rs, docs/sched-ext.md "Trust").

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::sim::SimError;
use std::path::Path;

/// A scheduler that queues every task on the global DSQ and calls `body` in its
/// `ops.init` (so the scenario reads, test-loads and compiles; the run calls it).
fn scheduler(decls: &str, body: &str) -> String {
    format!(
        "#include <scx/common.bpf.h>\n{decls}\n\
         void BPF_STRUCT_OPS(t_enqueue, struct task_struct *p, u64 f)\n\
         {{ scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, f); }}\n\
         s32 BPF_STRUCT_OPS_SLEEPABLE(t_init) {{ {body} return 0; }}\n\
         SCX_OPS_DEFINE(t_ops, .enqueue = (void *)t_enqueue, .init = (void *)t_init, \
         .name = \"t\");\n"
    )
}

fn scenario_text(scheduler: &str) -> String {
    format!(
        "[machine]\npreset = \"juno-r0\"\n[kernel]\nclass = \"ext\"\nscheduler = \"{scheduler}\"\n\
         [workload]\nkind = \"hackbench\"\ngroups = 1\nloops = 10\n"
    )
}

fn load(text: &str, native: bool) -> Result<Scenario, String> {
    let doc = Doc::parse(text, Path::new("t.toml")).unwrap();
    Scenario::from_doc(
        doc,
        &Overrides {
            native_scheduler: native,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())
}

/// `source` written as `name` in a fresh directory, and the scenario naming it.
fn with_file(name: &str, source: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, source).unwrap();
    let text = scenario_text(&p.display().to_string());
    (dir, text)
}

fn run_err(sc: &Scenario) -> String {
    match experiment::run(sc, 1, 0, &RunOpts::default()) {
        Err(SimError::Sandbox { msg }) => msg,
        Err(e) => panic!("not the sandbox's error: {e}"),
        Ok(_) => panic!("the run completed"),
    }
}

#[test]
fn a_c_scheduler_needs_the_user_s_word_and_a_shipped_one_does_not() {
    let (_d, text) = with_file("mine.bpf.c", &scheduler("", ""));
    let e = load(&text, false).unwrap_err();
    assert!(
        e.contains("t.toml:5:")
            && e.contains("mine.bpf.c is a C scheduler")
            && e.contains("--allow-native-scheduler"),
        "{e}"
    );
    let sc = load(&text, true).unwrap();
    let r = experiment::run(&sc, 1, 0, &RunOpts::default()).unwrap().0;
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    assert!(r
        .metrics
        .placement_reasons
        .get("ext")
        .is_some_and(|&n| n > 40));
    // The shipped sources, byte for byte, need no word; one byte more and they do.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scx");
    for f in ["global_fifo.bpf.c", "central_fifo.bpf.c", "llc_vtime.bpf.c"] {
        let p = root.join(f).canonicalize().unwrap();
        assert!(
            load(&scenario_text(&p.display().to_string()), false).is_ok(),
            "{f}"
        );
    }
    let mut fifo = std::fs::read_to_string(root.join("global_fifo.bpf.c")).unwrap();
    fifo.push('\n');
    let (_d, text) = with_file("global_fifo.bpf.c", &fifo);
    assert!(load(&text, false).unwrap_err().contains("is a C scheduler"));
}

#[test]
fn every_call_a_bpf_program_could_not_make_stops_the_run() {
    // glibc's system() first blocks SIGCHLD (refused: a blocked SIGSYS would hide
    // which call the filter stopped), long before its clone3 and execve; fork()
    // is a clone.
    for (what, decls, body, call) in [
        (
            "system",
            "extern int system(const char *);",
            "system(\"id > pwned.txt\");",
            "rt_sigprocmask",
        ),
        (
            "execve",
            "extern int execve(const char *, char *const[], char *const[]);",
            "char *argv[] = { \"/bin/sh\", 0 }; execve(\"/bin/sh\", argv, argv + 1);",
            "execve",
        ),
        (
            "open",
            "extern int open(const char *, int, ...);",
            "open(\"/etc/passwd\", 0);",
            "openat",
        ),
        (
            "socket",
            "extern int socket(int, int, int);",
            "socket(2, 1, 0);",
            "socket",
        ),
        ("fork", "extern int fork(void);", "fork();", "clone"),
        ("kill", "extern int kill(int, int);", "kill(-1, 0);", "kill"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("{what}.bpf.c");
        let p = dir.path().join(&name);
        std::fs::write(&p, scheduler(decls, body)).unwrap();
        let sc = load(&scenario_text(&p.display().to_string()), true).unwrap();
        let cwd_marker = std::path::Path::new("pwned.txt");
        let e = run_err(&sc);
        assert_eq!(
            e,
            format!("the scheduler in {} tried to {call} — refused", p.display()),
            "{what}"
        );
        assert!(!cwd_marker.exists(), "{what}: the command ran");
    }
}

#[test]
fn a_crash_or_a_handler_taken_over_is_reported_too() {
    // A bad pointer kills the child, not schedlab; a scheduler that installs its
    // own SIGSYS handler (to swallow the refusals) is refused at that call.
    for (what, decls, body, msg) in [
        (
            "crash",
            "",
            "*(volatile int *)8 = 1;",
            "crashed (signal 11)".to_string(),
        ),
        (
            "handler",
            "extern int sigaction(int, const void *, void *); static char sa[256];",
            "sigaction(31, sa, 0);",
            "tried to rt_sigaction — refused".to_string(),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("{what}.bpf.c"));
        std::fs::write(&p, scheduler(decls, body)).unwrap();
        let sc = load(&scenario_text(&p.display().to_string()), true).unwrap();
        let e = run_err(&sc);
        assert!(
            e.starts_with(&format!("the scheduler in {}", p.display())) && e.ends_with(&msg),
            "{what}: {e}"
        );
    }
}

#[test]
fn what_would_run_at_load_or_read_the_machine_s_files_is_refused_at_build() {
    for (what, decls, msg) in [
        (
            "ctor",
            "extern int getpid(void); int seen; \
             __attribute__((constructor)) static void c(void) { seen = getpid(); }",
            "a constructor (`.init_array`)",
        ),
        (
            "init",
            "extern int getpid(void); int seen; void _init(void) { seen = getpid(); }",
            "an `_init` function",
        ),
        (
            "section",
            "extern int getpid(void); int seen; static void c(void) { seen = getpid(); } \
             __attribute__((section(\".init_array\"), used)) static void (*cp)(void) = c;",
            "a constructor (`.init_array`)",
        ),
        (
            "abs-include",
            "#include \"/etc/hostname\"",
            "includes /etc/hostname, outside schedlab's shim",
        ),
        (
            "ifunc",
            "static int one(void) { return 1; } static void *pick(void) { return (void *)one; } \
             int picked(void) __attribute__((ifunc(\"pick\"))); int use(void) { return picked(); }",
            "an ifunc (`picked`)",
        ),
        // The source is compiled as a copy in a directory of its own: no file
        // beside it is found, and a climb out is a file outside the shim.
        (
            "beside",
            "#include \"../outside.h\"",
            "'../outside.h' file not found",
        ),
        (
            "dotdot",
            "#include \"../../../../../../../../../../../../etc/hostname\"",
            "etc/hostname, outside schedlab's shim",
        ),
        (
            "sys-header",
            "#include <stdio.h>",
            "'stdio.h' file not found",
        ),
        (
            "incbin",
            "__asm__(\".incbin \\\"/etc/hostname\\\"\");",
            "GNU-style inline assembly is disabled",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("s");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(dir.path().join("outside.h"), "int outside;\n").unwrap();
        let p = sub.join(format!("{what}.bpf.c"));
        std::fs::write(&p, scheduler(decls, "")).unwrap();
        if matches!(what, "abs-include" | "dotdot") && !Path::new("/etc/hostname").is_file() {
            continue;
        }
        match load(&scenario_text(&p.display().to_string()), true) {
            Err(e) => assert!(e.contains(msg), "{what}: {e}"),
            Ok(_) => panic!("{what}: built and loaded"),
        }
    }
}

#[test]
fn decisions_in_the_sandbox_are_the_built_in_twin_s_byte_for_byte() {
    // The whole ftrace text and the result JSON of scenarios/scx/global_fifo.bpf.c
    // (run in the sandbox) and of the built-in `simple-fifo` (in-process).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scx");
    let c = root.join("global_fifo.bpf.c").canonicalize().unwrap();
    let opts = RunOpts {
        trace: true,
        ftrace: true,
        ..Default::default()
    };
    let text =
        |s: &str| scenario_text(s).replace("groups = 1\nloops = 10", "groups = 4\nloops = 30");
    let sc = load(&text(&c.display().to_string()), false).unwrap();
    let builtin = load(&text("simple-fifo"), false).unwrap();
    let (rc, tc) = experiment::run(&sc, 3, 0, &opts).unwrap();
    let (rb, tb) = experiment::run(&builtin, 3, 0, &opts).unwrap();
    assert!(tc.unwrap() == tb.unwrap());
    let json = |r: &experiment::RunResult| {
        let mut r = r.clone();
        r.wall_seconds = 0.0;
        r.kernel.scheduler = None;
        r.to_json()
    };
    assert_eq!(json(&rc), json(&rb));
    assert_eq!(rc.latency_buckets, rb.latency_buckets);
    assert_eq!(rc.metrics.wakeup_latency_cdf, rb.metrics.wakeup_latency_cdf);
    // The raw event log (trace.dat, Perfetto, the Python events table) too.
    let (_, lc, kc) = experiment::run_logged(&sc, 3, 0, &RunOpts::default(), true).unwrap();
    let (_, lb, kb) = experiment::run_logged(&builtin, 3, 0, &RunOpts::default(), true).unwrap();
    assert_eq!(lc.events, lb.events);
    assert!(!lc.events.is_empty());
    let ids = |k: &[schedlab::sched::core::Task]| {
        k.iter()
            .map(|t| (t.pid, t.tgid, t.parent, t.name.clone(), t.nice))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&kc), ids(&kb));
    // Perfetto reads the process tree too: its bytes from the sandbox's log are
    // the in-process twin's.
    let (_, pc) = experiment::run_perfetto(&sc, 3, 0, &RunOpts::default()).unwrap();
    let (_, pb) = experiment::run_perfetto(&builtin, 3, 0, &RunOpts::default()).unwrap();
    assert!(pc == pb);
}

#[test]
fn a_scheduler_is_never_loaded_outside_the_sandbox() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scx");
    let c = root.join("global_fifo.bpf.c");
    let o = schedlab::sched::ext::bpf::compile(&c, &[]).unwrap();
    let e = schedlab::sched::ext::bpf::load(&o, 4).unwrap_err();
    assert!(e.contains("runs only inside schedlab's sandbox"), "{e}");
}
