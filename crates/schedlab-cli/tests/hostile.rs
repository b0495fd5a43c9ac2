//! Hostile input, end to end: every input class of issue 15's findings, given to the
//! real binary, exits 2 with a message naming what is wrong (or 0 where the input is
//! valid), without a panic, an abort, a hang or unbounded memory.
//!
//! Each case runs under `ulimit -v` (2 GiB of address space: an allocation of
//! gigabytes aborts instead of succeeding) and a generous deadline that only detects
//! hangs (a killed case fails; no timing is asserted otherwise).

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address-space limit of each case (KiB).
const VMEM_KIB: u64 = 2 << 20;
/// A case still running after this is a hang.
const DEADLINE: Duration = Duration::from_secs(120);

/// Run the binary with `args` in `dir`; (exit code, stderr + stdout).
fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {VMEM_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "hang: `schedlab {}` still running after {DEADLINE:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.code().unwrap_or(-1), text)
}

const BASE: &str = r#"[machine]
preset = "juno-r0"
[run]
duration_ms = 20
[workload]
kind = "tasks"
[[workload.task]]
name = "w"
count = 2
program = [ { op = "loop", body = [ { op = "compute", work = "100us" }, { op = "sleep", time = "1ms" } ] } ]
"#;

/// `BASE` with the task's program replaced.
fn with_program(prog: &str) -> String {
    BASE.replace(
        r#"{ op = "loop", body = [ { op = "compute", work = "100us" }, { op = "sleep", time = "1ms" } ] }"#,
        prog,
    )
}

fn setup(d: &Path) {
    let w = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    w("base.toml", BASE);
    w(
        "sleep-huge.toml",
        &with_program(
            r#"{ op = "sleep", time = "18446744073709ms" }, { op = "compute", work = "1ms" }"#,
        ),
    );
    w(
        "spin-huge.toml",
        &with_program(r#"{ op = "spin", time = "18446744073709ms" }"#),
    );
    w(
        "count-huge.toml",
        &BASE.replace("count = 2", "count = 1000000"),
    );
    w(
        "start-huge.toml",
        &BASE.replace("count = 2", "count = 2\nstart = \"18446744073s\""),
    );
    w(
        "sleep-max.toml",
        &with_program(r#"{ op = "compute", work = "10us" }, { op = "sleep", time = "1000000s" }"#),
    );
    w(
        "exp-huge.toml",
        &with_program(
            r#"{ op = "loop", body = [ { op = "sleep", time = { dist = "exp", mean = "1000000s" } }, { op = "spin", time = { dist = "normal", mean = "1000000s", std = "1000000s" } } ] }"#,
        ),
    );
    w(
        "forkchain.toml",
        r#"[machine]
preset = "juno-r0"
[workload]
kind = "tasks"
[workload.programs]
chain = [ { op = "fork", program = "chain" }, { op = "fork", program = "chain" }, { op = "compute", work = "10us" } ]
[[workload.task]]
name = "root"
program = [ { op = "fork", program = "chain" }, { op = "wait" } ]
"#,
    );
    // Packages 0-3 / 4-7, but an LLC across both, in one node.
    w(
        "nonest.toml",
        &std::fs::read_to_string(root().join("scenarios/oracle/machines/1s4c2t.toml"))
            .unwrap()
            .replace(
                "packages = [\"0-7\"]",
                "packages = [\"0-3\", \"4-7\"]\nllcs = [\"0-5\", \"6-7\"]",
            ),
    );
    w(
        "nonest-scenario.toml",
        &BASE.replace("preset = \"juno-r0\"", "file = \"nonest.toml\""),
    );
    w(
        "trace.txt",
        "  <idle>-0 [000] d..2 0.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120\n  a-1 [000] d..2 0.001000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
    );
    w("notrace.txt", "# tracer: nop\n#\n");
    w(
        "replay.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"replay\"\nfile = \"trace.txt\"\n",
    );
    w(
        "replay-none.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"replay\"\nfile = \"notrace.txt\"\n",
    );
    w(
        "replay-missing.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"replay\"\nfile = \"gone.txt\"\n",
    );
    w(
        "sysbench-huge.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"sysbench-cpu\"\ntime = 18446744074\n",
    );
    w(
        "hackbench-huge.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"hackbench\"\ngroups = 4294967295\nfds = 4294967295\n",
    );
    w(
        "hackbench-pos.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"hackbench\"\nloops = 4294967296\n",
    );
    std::fs::write(
        d.join("bom.json"),
        "\u{feff}{\"tasks\": {\"a\": {\"run\": 100, \"sleep\": 100}}, \"global\": {\"duration\": 1}}",
    )
    .unwrap();
    // 100 tasks of 4096 instances: 409 600 threads.
    let many: Vec<String> = (0..100)
        .map(|i| format!("\"t{i}\": {{\"instance\": 4096, \"run\": 100}}"))
        .collect();
    w(
        "many.json",
        &format!(
            "{{\"tasks\": {{{}}}, \"global\": {{\"duration\": 1}}}}",
            many.join(", ")
        ),
    );
    w(
        "many.toml",
        "[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"rtapp\"\nfile = \"many.json\"\n",
    );
    w(
        "bom.toml",
        "[machine]\npreset = \"juno-r0\"\n[run]\nduration_ms = 5\n[workload]\nkind = \"rtapp\"\nfile = \"bom.json\"\n",
    );
    // A sysfs snapshot whose cpuidle latency overflows a u64 of ns.
    let s = d.join("sysfs/sys/devices/system/cpu");
    std::fs::create_dir_all(s.join("cpu0/cpuidle/state0")).unwrap();
    std::fs::write(s.join("online"), "0\n").unwrap();
    std::fs::write(s.join("cpu0/cpuidle/state0/latency"), "18446744073709552\n").unwrap();
    std::fs::write(s.join("cpu0/cpuidle/state0/residency"), "1\n").unwrap();
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
}

#[test]
fn every_hostile_input_exits_2_naming_the_problem() {
    let d = tmpdir("hostile", "table");
    setup(&d);
    // (args, expected exit code, text the output must contain)
    let cases: &[(&[&str], i32, &str)] = &[
        // Times that cannot be represented: refused while parsing, with the place.
        (&["run", "sleep-huge.toml"], 2, "sleep-huge.toml:10: `workload.task[0].program[0].time`: duration '18446744073709ms' exceeds the limit of 1000000 s"),
        (&["run", "spin-huge.toml"], 2, "duration '18446744073709ms' exceeds the limit"),
        (&["run", "start-huge.toml"], 2, "start-huge.toml:10: duration '18446744073s' exceeds the limit"),
        (&["run", "base.toml", "--set", "run.duration_ms=1e18"], 2, "`run.duration_ms` exceeds the limit of 1000000 s"),
        (&["run", "base.toml", "--set", "run.duration_ms=2e13"], 2, "exceeds the limit"),
        (&["run", "base.toml", "--set", "run.duration_ms=9223372036854775807"], 2, "exceeds the limit"),
        (&["run", "base.toml", "--set", "run.duration_ms=18446744073710"], 2, "exceeds the limit"),
        (&["run", "base.toml", "--set", "run.duration_ms=1000000001"], 2, "exceeds the limit"),
        (&["run", "base.toml", "--set", "run.duration_ms=1e-9"], 2, "rounds to 0 ns"),
        (&["run", "base.toml", "--set", "run.duration_ms=nan"], 2, "must be a positive number"),
        (&["run", "base.toml", "--set", "run.duration_ms=inf"], 2, "exceeds the limit"),
        (&["run", "sysbench-huge.toml"], 2, "sysbench-huge.toml:5: `time` must be a non-negative number of seconds (at most 1000000)"),
        (&["topology", "host", "--sysfs", "sysfs"], 2, "cpuidle/state0/latency:1: 18446744073709552 µs exceeds the limit"),
        (&["explain", "base.toml", "--task", "w", "--at", "1e300"], 2, "--at 1e300: must be a non-negative time in ms"),
        // Counts: bounded, with the bound in the message.
        (&["compare", "base.toml", "--runs", "4294967295", "-q"], 2, "4294967295 is not in 1..=10000"),
        (&["reproduce", "--runs", "4294967295", "-q"], 2, "is not in 1..=10000"),
        (&["compare", "base.toml", "--runs", "1", "--jobs", "100000", "-q"], 2, "100000 is not in 1..=1024"),
        (&["oracle", "run", "base.toml", "--timeout", "18446744073709551615"], 2, "is not in 1..=86400"),
        (&["sweep", "base.toml", "--grid", "run.seed=1", "--runs", "4294967295", "--out", "sw", "-q"], 2, "is not in 1..=10000"),
        (&["sweep", "base.toml", "--grid", "run.seed=1,2,3,4,5,6,7,8,9,10,11", "--grid", "workload.task.count=1,2,3,4,5,6,7,8,9,10", "--runs", "1000", "--out", "sw", "-q"], 2, "more than the limit of 100000 runs per sweep"),
        (&["run", "hackbench-huge.toml"], 2, "hackbench-huge.toml:5: 4294967295 groups × 4294967295 fds × 2 = 36893488130239234050 tasks is more than the limit of 262144"),
        (&["run", "hackbench-pos.toml"], 2, "`loops` must be an integer in 1..=4294967295, found 4294967296"),
        (&["run", "count-huge.toml"], 2, "count-huge.toml:9: `workload.task[0].count` = 1000000 is outside 1..=262144"),
        (&["run", "forkchain.toml"], 2, "fork: the run already holds 262144 tasks, the limit"),
        (&["run", "many.toml"], 2, "tasks.t64: its `instance` brings the file to 266240 threads, more than the limit of 262144"),
        // Files that are not files.
        (&["run", "/dev/zero"], 2, "/dev/zero: not a regular file (a character device)"),
        (&["run", "fifo"], 2, "fifo: not a regular file (a FIFO)"),
        (&["run", "."], 2, "not a regular file (a directory)"),
        (&["topology", "host", "--sysfs", "/nonexistent-sysfs"], 2, "/nonexistent-sysfs: no such directory"),
        (&["topology", "host", "--sysfs", "."], 2, "not a sysfs snapshot: no sys/devices/system/cpu directory"),
        // Silently wrong before: now refused.
        (&["run", "nonest-scenario.toml"], 2, "its LLC (0-5) is not inside its package (0-3)"),
        (&["run", "base.toml", "--seed", "18446744073709551615"], 2, "is not in 0..=9223372036854775807"),
        (&["bench", "--only", "bogus"], 2, "--only: unknown bench case `bogus`"),
        (&["bench", "--scale", "nan"], 2, "--scale NaN: must be a positive number"),
        (&["bench", "--scale", "1e300"], 2, "--scale 1e300"),
        (&["run", "base.toml", "--trace-window", "1ms..2ms"], 2, "--trace <TRACE>"),
        // Messages name the option the words came from.
        (&["compare", "base.toml", "--b", "BOGUS_FEAT", "--runs", "1", "-q"], 2, "--b `BOGUS_FEAT`: unknown scheduler feature"),
        (&["compare", "base.toml", "--a", "nokey=1", "--runs", "1", "-q"], 2, "--a `nokey=1`: unknown key `nokey`"),
        (&["sweep", "base.toml", "--grid", "nokey.x=1", "--out", "sw2", "-q"], 2, "--grid point nokey.x=1: unknown key `nokey`"),
        (&["run", "base.toml", "--set", "kernel.cpuidle=ladder"], 2, "unknown cpuidle governor `ladder` (known: menu, teo)"),
        (&["run", "base.toml", "--set", "kernel.tunables.cpu_dma_latency_us=-1"], 2, "`cpu_dma_latency_us` needs a non-negative integer"),
        (&["run", "base.toml", "-q", "--set", "kernel.cpuidle=teo"], 0, ""),
        (&["run", "replay.toml", "-q"], 0, ""),
        (&["run", "replay-none.toml"], 2, "notrace.txt: no trace events found"),
        (&["run", "replay-missing.toml"], 2, "cannot read trace file"),
        // Valid at the edges: exit 0.
        (&["run", "sleep-max.toml", "-q"], 0, ""),
        (&["run", "exp-huge.toml", "-q"], 0, ""),
        (&["run", "bom.toml", "-q"], 0, ""),
        (&["run", "base.toml", "-q", "--seed", "9223372036854775807"], 0, ""),
        (&["run", "base.toml", "-q", "--set", "run.duration_ms=1e-6"], 0, ""),
    ];
    let mut failed = vec![];
    for (args, code, text) in cases {
        let (c, out) = run(&d, args);
        if c != *code || !out.contains(text) {
            failed.push(format!(
                "`schedlab {}`: exit {c} (want {code}), output:\n{out}\n(want it to contain {text:?})",
                args.join(" ")
            ));
        }
        assert!(
            !out.contains("panicked"),
            "`{}` panicked:\n{out}",
            args.join(" ")
        );
    }
    assert!(failed.is_empty(), "{}", failed.join("\n---\n"));
}
