//! The `schedlab` binary: exit codes, error messages, determinism of the JSON result.

mod common;
use common::*;

use std::path::Path;

/// Drop the only field allowed to differ between identical runs.
fn without_wall(json: &str) -> String {
    json.lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_seconds\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn same_scenario_and_seed_give_identical_json() {
    let d = tmpdir("cli", "det");
    let demo = root().join("scenarios/demo.toml");
    let mut outs = Vec::new();
    for (i, seed) in [(0, "3"), (1, "3"), (2, "4")] {
        let p = d.join(format!("r{i}.json"));
        let st = bin()
            .args([
                "run",
                demo.to_str().unwrap(),
                "--quiet",
                "--seed",
                seed,
                "--set",
                "run.duration_ms=60",
                "--json",
            ])
            .arg(&p)
            .status()
            .unwrap();
        assert!(st.success());
        outs.push(std::fs::read_to_string(&p).unwrap());
    }
    assert_eq!(
        without_wall(&outs[0]),
        without_wall(&outs[1]),
        "same seed must give byte-identical results"
    );
    assert_ne!(
        without_wall(&outs[0]),
        without_wall(&outs[2]),
        "another seed draws other amounts"
    );
    let v: serde_json::Value = serde_json::from_str(&outs[0]).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["machine"]["name"], "juno-r0");
    assert_eq!(v["machine"]["nr_cpus"], 6);
    assert!(v["kernel"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "SIS_PROP"));
    assert_eq!(v["sim_time_ns"], 60_000_000);
    assert!(v["metrics"]["wakeup_latency_ns"]["count"].as_u64().unwrap() > 100);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 10);
    // No temporary file is left behind by the atomic write.
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn bad_input_exits_2_with_file_and_line() {
    let d = tmpdir("cli", "bad");
    let cases: &[(&str, &str)] = &[
        ("[machine]\npreset = \"nosuch\"\n[workload]\nkind = \"tasks\"\n", "s.toml:2: unknown machine preset `nosuch`"),
        ("[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n", "s.toml:3: a `tasks` workload needs at least one [[workload.task]]"),
        ("[machine]\npreset = \"juno-r0\"\n[run]\nseeed = 3\n[workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"a\"\nprogram = []\n", "s.toml:4: unknown key `run.seeed`"),
        ("[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"a\"\ncpus = \"9\"\nprogram = []\n", "s.toml:7: `cpus = \"9\"` must name CPUs of this 6-CPU machine"),
        ("[machine]\npreset = \"juno-r0\"\n[workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"a\"\nprogram = [ { op = \"jump\" } ]\n", "s.toml:7: unknown op `jump`"),
        ("[machine]\npreset = \"juno-r0\"\n[kernel]\nfeatures = [\"NO_SIS_FOO\"]\n[workload]\nkind = \"tasks\"\n[[workload.task]]\nname = \"a\"\nprogram = []\n", "s.toml:4: unknown scheduler feature `NO_SIS_FOO`"),
        ("[machine\npreset = 1\n", "s.toml:1:"),
    ];
    for (text, want) in cases {
        let p = d.join("s.toml");
        std::fs::write(&p, text).unwrap();
        let (code, err) = run_err(&["run", p.to_str().unwrap()]);
        assert_eq!(code, 2, "{text}\n{err}");
        let err = err.replace(&format!("{}/", d.display()), "");
        assert!(err.contains(want), "expected `{want}` in `{err}`");
        assert!(!err.contains("panicked"), "{err}");
    }
    let demo = root().join("scenarios/demo.toml");
    let (code, err) = run_err(&["run", demo.to_str().unwrap(), "--set", "workload.task=3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--set"), "{err}");
    let (code, err) = run_err(&["run", demo.to_str().unwrap(), "--features", "WHATEVER"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--features: unknown scheduler feature `WHATEVER`"),
        "{err}"
    );
    let (code, _) = run_err(&["run", "/nonexistent/x.toml"]);
    assert_eq!(code, 2);
    let (code, _) = run_err(&["frobnicate"]);
    assert_eq!(code, 2);
}

/// `--export-lisa`: a PlatformInfo with the preset's release and HZ and each CPU's
/// calibration; a bad preset, HZ or calibration is an input error.
#[test]
fn topology_exports_a_lisa_platform_file() {
    let d = tmpdir("cli", "lisa");
    let p = d.join("juno.yml");
    let out = bin()
        .args(["topology", "juno-r0", "--kernel", "v6.12", "--hz", "1000"])
        .arg("--export-lisa")
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    let y = std::fs::read_to_string(&p).unwrap();
    assert!(
        y.contains("version_string: '6.12.0 #1 SMP schedlab'"),
        "{y}"
    );
    assert!(y.contains("CONFIG_HZ: 1000") && y.contains("CONFIG_SCHED_CLUSTER"));
    assert!(
        y.contains("                0: 230\n                1: 100\n"),
        "{y}"
    );
    for (flag, v, msg) in [
        ("--kernel", "v9.9", "no such kernel preset"),
        ("--hz", "123", "CONFIG_HZ must be"),
        ("--rtapp-calib", "0", "must be 1 to 1000000000 ns per loop"),
        ("--rtapp-calib", "18446744073709551615", "must be 1 to"),
    ] {
        let (code, err) = run_err(&[
            "topology",
            "juno-r0",
            "--export-lisa",
            p.to_str().unwrap(),
            flag,
            v,
        ]);
        assert_eq!(code, 2, "{flag} {v}: {err}");
        assert!(err.contains(msg), "{err}");
    }
}

#[test]
fn topology_and_list_commands() {
    let out = bin().args(["topology", "xeon-e5-40"]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("SMT") && s.contains("MC") && s.contains("NUMA"),
        "{s}"
    );
    ok_stdout(&bin().args(["topology", "host"]).output().unwrap());
    for what in ["machines", "features", "kernels", "workloads"] {
        let out = bin().args(["list", what]).output().unwrap();
        assert!(out.status.success());
        assert!(!out.stdout.is_empty());
    }
    let out = bin().args(["list", "machines"]).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    for m in [
        "power9-176",
        "xeon-88",
        "xeon-e5-40",
        "juno-r0",
        "hikey960",
        "synquacer-24",
        "epyc-192",
        "spr-224",
        "pixel6",
        "host",
    ] {
        assert!(s.contains(m), "missing {m}");
    }
}

#[test]
fn check_mode_runs_the_demo_clean() {
    let demo = root().join("scenarios/demo.toml");
    let out = bin()
        .args([
            "run",
            demo.to_str().unwrap(),
            "--check",
            "--set",
            "run.duration_ms=40",
        ])
        .output()
        .unwrap();
    let s = ok_stdout(&out);
    assert!(s.contains("wakeup") && s.contains("round_trip"), "{s}");
}

#[test]
fn compare_prints_the_seed_table_and_writes_csv() {
    let d = tmpdir("cli", "compare");
    let csv = d.join("c.csv");
    let pipe = root().join("scenarios/perf-pipe.toml");
    let out = bin()
        .args([
            "compare",
            pipe.to_str().unwrap(),
            "--a",
            "",
            "--b",
            "NO_WAKEUP_PREEMPTION",
            "--runs",
            "3",
            "--jobs",
            "2",
            "--set",
            "workload.loops=50",
            "--set",
            "run.noise=0.05",
            "--csv",
            csv.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    let text = ok_stdout(&out);
    assert!(text.contains("B: NO_WAKEUP_PREEMPTION"), "{text}");
    assert!(text.contains("| amean |"), "{text}");
    assert!(
        text.contains("tool.usecs_per_op (lower is better)"),
        "{text}"
    );
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.starts_with("metric,stat,a,b,delta_pct\n"));
    // A bad arm is an input error (exit 2) naming the feature.
    let (code, err) = run_err(&[
        "compare",
        pipe.to_str().unwrap(),
        "--b",
        "NO_SUCH_FEATURE",
        "--runs",
        "2",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("NO_SUCH_FEATURE"));
}

#[test]
fn explain_names_the_functions_and_bad_input_exits_2() {
    let pipe = root().join("scenarios/perf-pipe.toml");
    let out = bin()
        .args([
            "explain",
            pipe.to_str().unwrap(),
            "--task",
            "worker1",
            "--at",
            "1",
            "--set",
            "machine.preset=xeon-88",
        ])
        .output()
        .unwrap();
    let text = ok_stdout(&out);
    assert!(
        text.contains("`worker1`") && text.contains("select_task_rq_fair:"),
        "{text}"
    );
    let (code, err) = run_err(&[
        "explain",
        pipe.to_str().unwrap(),
        "--task",
        "nobody",
        "--at",
        "1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("nobody"));
    // The message lists the run's tasks (perf-pipe: worker0 and worker1).
    assert!(
        err.contains("no such task") && err.contains("worker1"),
        "{err}"
    );
}

fn sweep_args(out: &Path, jobs: &str) -> Vec<String> {
    let pipe = root().join("scenarios/perf-pipe.toml");
    [
        "sweep",
        pipe.to_str().unwrap(),
        "--grid",
        "machine.preset=juno-r0,xeon-e5-40",
        "--grid",
        "workload.loops=2000,4000",
        "--grid",
        "kernel.features=WAKEUP_PREEMPTION,NO_WAKEUP_PREEMPTION+NO_TTWU_QUEUE",
        "--set-dummy",
    ]
    .iter()
    .filter(|a| **a != "--set-dummy")
    .map(|s| s.to_string())
    .chain(
        [
            "--runs",
            "3",
            "--jobs",
            jobs,
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string()),
    )
    .collect()
}

#[test]
fn sweep_results_do_not_depend_on_jobs_or_on_being_killed() {
    let d = tmpdir("cli", "sweep");
    let (a, b, c) = (d.join("a"), d.join("b"), d.join("c"));
    for (out, jobs) in [(&a, "1"), (&b, "2")] {
        let st = bin().args(sweep_args(out, jobs)).status().unwrap();
        assert!(st.success());
    }
    let read = |p: &Path| {
        (
            std::fs::read_to_string(p.join("results.jsonl")).unwrap(),
            std::fs::read_to_string(p.join("results.csv")).unwrap(),
        )
    };
    let same = |x: &(String, String), y: &(String, String), what: &str| {
        for (l, r) in [(&x.0, &y.0), (&x.1, &y.1)] {
            if let Some((i, (p, q))) = l
                .lines()
                .zip(r.lines())
                .enumerate()
                .find(|(_, (p, q))| p != q)
            {
                panic!("{what}: line {i} differs:\n{p}\n{q}");
            }
            assert_eq!(l.lines().count(), r.lines().count(), "{what}");
        }
    };
    let ra = read(&a);
    assert_eq!(ra.0.lines().count(), 8 * 3);
    same(&ra, &read(&b), "jobs 1 vs 2");
    // Killed part-way (SIGKILL) as soon as its first result is written (a fixed
    // delay let a release build finish first), then a torn line appended, then
    // resumed.
    let mut child = bin().args(sweep_args(&c, "1")).spawn().unwrap();
    let partial = c.join("results.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&partial).map_or(0, |t| t.lines().count()) == 0
        && child.try_wait().unwrap().is_none()
        && t0.elapsed() < std::time::Duration::from_secs(60)
    {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let at_kill = std::fs::read_to_string(&partial).map_or(0, |t| t.lines().count());
    assert!(at_kill < 8 * 3, "the kill came after the sweep finished");
    if partial.exists() {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&partial)
            .unwrap();
        use std::io::Write;
        f.write_all(b"{\"point\": 3, \"par").unwrap();
    }
    let st = bin().args(sweep_args(&c, "2")).status().unwrap();
    assert!(st.success());
    same(&ra, &read(&c), "resumed after a kill");
}

#[test]
fn sweep_progress_off_a_terminal_is_lines() {
    let d = tmpdir("cli", "sweep-progress");
    let pipe = root().join("scenarios/perf-pipe.toml");
    let o = bin()
        .arg("sweep")
        .arg(&pipe)
        .args(["--grid", "workload.loops=100,200", "--runs", "2", "--out"])
        .arg(d.join("s"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("sweep: ")).collect();
    // 4 runs: a line at each tenth crossed, the last at 4/4.
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines[3].starts_with("sweep: 4/4 runs ("), "{err}");
}

#[test]
fn trace_extension_picks_the_format_and_window_bounds_it() {
    let d = tmpdir("cli", "trace");
    let demo = root().join("scenarios/demo.toml");
    let run = |name: &str, extra: &[&str]| {
        let p = d.join(name);
        let st = bin()
            .args(["run", demo.to_str().unwrap(), "--quiet"])
            .args(["--set", "run.duration_ms=20", "--trace"])
            .arg(&p)
            .args(extra)
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
        std::fs::read(&p).unwrap()
    };
    let txt = run("t.txt", &[]);
    assert!(txt.starts_with(b"# tracer: nop\n"));
    let pf = run("t.perfetto-trace", &[]);
    // Trace.packet (field 1, length-delimited) holding a SystemInfo (field 45).
    assert_eq!(pf[0], 0x0a);
    assert!(!pf.starts_with(b"#"));
    let pf2 = run("t.pftrace", &[]);
    assert_eq!(pf, pf2, "both extensions write the same protobuf");
    let win = run("w.pftrace", &["--trace-window", "5ms..10ms"]);
    assert!(win.len() < pf.len());
    // The counter tracks are declared in both (names are plain strings on the wire).
    let has = |b: &[u8], s: &str| b.windows(s.len()).any(|w| w == s.as_bytes());
    for name in ["cpu0 util_avg", "cpu0 nr_running", "cpu0 probes"] {
        assert!(has(&pf, name) && has(&win, name), "{name}");
    }
    let txtw = run("w.txt", &["--trace-window", "5000000..10000000"]);
    let text = String::from_utf8(txtw).unwrap();
    assert!(
        text.lines().any(|l| !l.starts_with('#')),
        "window not empty"
    );
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        // The demo's v5.6 layout: four latency flags, then `%5lu.%06lu:`.
        let ts = l.split("] ").nth(1).unwrap()[5..]
            .split(':')
            .next()
            .unwrap();
        let t: f64 = ts.trim().parse().unwrap();
        assert!((0.005..=0.010).contains(&t), "{l}");
    }
    let (code, err) = run_err(&[
        "run",
        demo.to_str().unwrap(),
        "--trace",
        d.join("x.txt").to_str().unwrap(),
        "--trace-window",
        "10ms..5ms",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--trace-window"), "{err}");
    // A window after the run's end: the run succeeds, and says the trace is empty.
    let (code, err) = run_err(&[
        "run",
        demo.to_str().unwrap(),
        "--set",
        "run.duration_ms=20",
        "--trace",
        d.join("late.txt").to_str().unwrap(),
        "--trace-window",
        "30ms..40ms",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: --trace-window starts at 30 ms, after the run ended at 20 ms"),
        "{err}"
    );
    // Every file written is named (unless --quiet).
    assert!(
        err.contains(&format!("wrote {} (", d.join("late.txt").display())),
        "{err}"
    );

    // compare --trace: each arm's first paired run, traced, as `run` traces it.
    let base = d.join("cmp.txt");
    let st = bin()
        .args(["compare", demo.to_str().unwrap(), "--runs", "2", "-q"])
        .args(["--b", "kernel.preset=v6.6", "--set", "run.duration_ms=20"])
        .arg("--trace")
        .arg(&base)
        .status()
        .unwrap();
    assert!(st.success());
    let a = std::fs::read(d.join("cmp.a.txt")).unwrap();
    let b = std::fs::read(d.join("cmp.b.txt")).unwrap();
    assert_eq!(a, txt, "arm A's trace is `run`'s trace of the same seed");
    assert!(b.starts_with(b"# tracer: nop\n"));
    assert_ne!(a, b, "EEVDF schedules differently");
}

/// The summary's `features:` line, for a run with `--features F`.
fn features_line(features: &str) -> Vec<String> {
    let demo = root().join("scenarios/demo.toml");
    let out = bin()
        .args(["run", demo.to_str().unwrap(), "--set", "run.duration_ms=5"])
        .args(["--features", features])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("features: "))
        .expect("a features line");
    line.split(' ').map(String::from).collect()
}

#[test]
fn the_features_line_has_one_rule_for_every_feature() {
    // On: listed. A default-off feature left off: not listed (no seed is special).
    let off = features_line("NO_IDLE_CPU_MASK");
    assert!(!off.iter().any(|f| f.contains("IDLE_CPU_MASK")), "{off:?}");
    let on = features_line("IDLE_CPU_MASK,NO_MISFIT");
    assert!(on.contains(&"IDLE_CPU_MASK".to_string()), "{on:?}");
    // A v5.6 default-on feature switched off: listed as NO_.
    assert!(on.contains(&"NO_MISFIT".to_string()), "{on:?}");
    assert!(!on.contains(&"MISFIT".to_string()));
}
