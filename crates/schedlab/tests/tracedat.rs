//! trace-cmd `trace.dat` export: deterministic, and, when `trace-cmd` is installed,
//! `trace-cmd report` reads it back event by event: the same events, CPUs,
//! timestamps, tasks and fields as the run's trace records, and as many
//! `sched_switch` lines as the run counted context switches.
//!
//! Without `trace-cmd` the comparison is skipped with a message, unless `CI` is
//! set: CI installs it (`.ci/run`), so there a missing `trace-cmd` fails.

use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::metrics::ftrace::{for_each_record, FieldVal, TraceRecord};
use schedlab::metrics::tracedat;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// scenarios/demo.toml, 20 ms.
fn demo() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
    let ov = Overrides {
        sets: vec!["run.duration_ms=20".to_string()],
        ..Default::default()
    };
    Scenario::load(&path, &ov).unwrap()
}

/// The run's result, its trace records and its trace.dat.
fn demo_dat() -> (experiment::RunResult, Vec<TraceRecord>, Vec<u8>) {
    let sc = demo();
    let opts = RunOpts::default();
    let (r, log, tasks) = experiment::run_logged(&sc, sc.seed, 0, &opts, false).unwrap();
    let nr_cpus = sc.machine.nr_cpus();
    let mut recs = Vec::new();
    for_each_record(&log, &tasks, nr_cpus, |x| recs.push(x.clone()));
    let dat = tracedat::render(&log, &tasks, nr_cpus).unwrap();
    (r, recs, dat)
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-{}-{name}", std::process::id()))
}

/// `trace-cmd`, if installed; `None` (after saying so) when it is not and `CI` is
/// unset; a failure when it is not and `CI` is set.
fn trace_cmd() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("trace-cmd"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "trace-cmd not installed, and CI is set: install it (Debian: apt-get install trace-cmd)"
        );
        eprintln!("skipped: trace-cmd not installed");
    }
    found
}

#[test]
fn trace_dat_is_deterministic_and_well_formed() {
    let (_, recs, a) = demo_dat();
    let (_, _, b) = demo_dat();
    assert!(!recs.is_empty());
    assert_eq!(a, b, "same run, same bytes");
    assert!(a.starts_with(b"\x17\x08\x44tracing6\0\0\x08"));
    assert_eq!(&a[14..18], &4096u32.to_le_bytes());
    assert_eq!(a.len() % tracedat::PAGE_SIZE, 0);
}

/// One event line of `trace-cmd report -N` (no plugins: the payload is the format's
/// `print fmt`): `<comm>-<pid> [<cpu>] <sec>.<usec>: <event>: <payload>`.
#[derive(Debug, PartialEq)]
struct Line {
    pid: u32,
    cpu: usize,
    /// The timestamp in the report's unit (µs, or ns with `-t`).
    ts: u64,
    event: String,
    fields: Vec<(String, String)>,
}

fn parse_line(l: &str) -> Option<Line> {
    let (head, rest) = l.split_once("] ")?;
    let (task, cpu) = head.rsplit_once(" [")?;
    let pid = task.trim().rsplit_once('-')?.1.parse().ok()?;
    let mut it = rest.splitn(3, ": ");
    let ts = it.next()?.trim();
    let event = it.next()?.trim().to_string();
    let payload = it.next().unwrap_or("");
    let (s, frac) = ts.split_once('.')?;
    let unit = match frac.len() {
        6 => 1_000_000,
        9 => 1_000_000_000,
        _ => return None,
    };
    let fields = payload
        .split_whitespace()
        .filter(|kv| *kv != "==>")
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some(Line {
        pid,
        cpu: cpu.trim().parse().ok()?,
        ts: s.parse::<u64>().ok()? * unit + frac.parse::<u64>().ok()?,
        event,
        fields,
    })
}

/// The line `trace-cmd report -N` should print for `r`: with `ns`, the `-t`
/// nanosecond timestamp, else µs rounded half up (libtraceevent's
/// `(nsecs + 500) / 1000`).
fn expected(r: &TraceRecord, ns: bool) -> Line {
    Line {
        pid: r.pid,
        cpu: r.cpu,
        ts: if ns { r.ts } else { (r.ts + 500) / 1000 },
        event: r.event.to_string(),
        fields: r
            .fields
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    FieldVal::Str(s) => s.chars().take(15).collect(),
                    v => v.to_string(),
                };
                (k.to_string(), v)
            })
            .collect(),
    }
}

/// `trace-cmd report -N` (no plugins: each payload as its format's `print fmt`)
/// of `path`, with `extra` arguments; its event lines.
fn report(tc: &Path, path: &Path, extra: &[&str]) -> Vec<Line> {
    let out = Command::new(tc)
        .args(["report", "-N"])
        .args(extra)
        .arg("-i")
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace-cmd report failed: {stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("FAILED TO PARSE"), "{text}");
    text.lines().filter_map(parse_line).collect()
}

#[test]
fn trace_cmd_report_reads_the_run_back() {
    let (r, recs, dat) = demo_dat();
    let Some(tc) = trace_cmd() else { return };
    let want = report_matches(&tc, &recs, &dat, "demo.dat");
    assert_eq!(want["sched_switch"], r.metrics.context_switches);
    assert_eq!(want["sched_waking"], r.metrics.wakeups);
}

/// LISA's `sched_tp` events (`tests/rtapp/sched-tp.json` on juno-r0, v5.10:
/// every one of them) read back by `trace-cmd report` from their formats in the
/// file, event by event as the run's records.
#[test]
fn trace_cmd_report_reads_sched_tp_events() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = "[machine]\npreset = \"juno-r0\"\n[kernel]\npreset = \"v5.10\"\n[run]\nseed = 5\n[workload]\nkind = \"rtapp\"\nfile = \"sched-tp.json\"\n";
    let sc = Scenario::from_doc(
        schedlab::config::Doc::parse(text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let opts = RunOpts {
        sched_tp: true,
        ..Default::default()
    };
    let (_, log, tasks) = experiment::run_logged(&sc, sc.seed, 0, &opts, false).unwrap();
    let mut recs = Vec::new();
    for_each_record(&log, &tasks, 6, |x| recs.push(x.clone()));
    let dat = tracedat::render(&log, &tasks, 6).unwrap();
    let Some(tc) = trace_cmd() else { return };
    let got = report_matches(&tc, &recs, &dat, "sched-tp.dat");
    for e in [
        "sched_pelt_cfs",
        "sched_pelt_se",
        "sched_overutilized",
        "sched_util_est_cfs",
        "sched_util_est_se",
        "sched_cpu_capacity",
    ] {
        assert!(got.get(e).copied().unwrap_or(0) > 0, "{e}: {got:?}");
    }
}

/// `trace-cmd report -N` of `dat` (saved as `name`), with and without `-t`, against
/// `recs`: per event name as many lines as records, then event by event. Returns
/// the per-event counts.
fn report_matches<'a>(
    tc: &Path,
    recs: &'a [TraceRecord],
    dat: &[u8],
    name: &str,
) -> BTreeMap<&'a str, u64> {
    let path = temp_path(name);
    std::fs::write(&path, dat).unwrap();
    let by_us = report(tc, &path, &[]);
    let by_ns = report(tc, &path, &["-t"]);
    if std::env::var_os("SCHEDLAB_KEEP_DAT").is_some() {
        eprintln!("kept {}", path.display());
    } else {
        let _ = std::fs::remove_file(&path);
    }

    // Per event name, as many lines as records; sched_switch = the run's count.
    let mut want: BTreeMap<&str, u64> = BTreeMap::new();
    for x in recs {
        *want.entry(x.event).or_default() += 1;
    }
    let mut got: BTreeMap<&str, u64> = BTreeMap::new();
    for l in &by_us {
        *got.entry(l.event.as_str()).or_default() += 1;
    }
    assert_eq!(got, want, "event counts");

    // Event by event. trace-cmd merges the CPUs by timestamp, the lowest CPU first
    // at equal timestamps: order the records so, keeping each CPU's own order.
    let mut order: Vec<(u64, usize, usize)> = recs
        .iter()
        .enumerate()
        .map(|(i, x)| (x.ts, x.cpu, i))
        .collect();
    order.sort_unstable();
    for (lines, ns) in [(&by_us, false), (&by_ns, true)] {
        assert_eq!(lines.len(), recs.len());
        for (k, (&(_, _, i), l)) in order.iter().zip(lines).enumerate() {
            assert_eq!(l, &expected(&recs[i], ns), "event {k} (ns: {ns})");
        }
    }
    want
}

/// Hand-made records of every event, on 2 CPUs, with gaps past a ring-buffer
/// entry's 27-bit delta (134 ms: a `TIME_EXTEND`) and past 2^32 ns, over several
/// pages per CPU.
fn synthetic() -> Vec<TraceRecord> {
    use FieldVal::{Cpu, Int, Str};
    let task = |p: i64| -> Vec<(&'static str, FieldVal)> {
        vec![
            ("comm", Str(format!("task-with-a-lo{p}"))),
            ("pid", Int(p)),
            ("prio", Int(100 + p % 40)),
        ]
    };
    let mut v = Vec::new();
    let mut ts = 5u64;
    for i in 0..900i64 {
        ts += match i % 97 {
            0 => 200_000_000,
            50 => 10_000_000_000,
            _ => (i as u64 * 7919) % 5000,
        };
        let cpu = (i % 2) as usize;
        let p = 1 + i % 30;
        let (event, fields) = match i % 9 {
            0 => ("sched_switch", {
                vec![
                    ("prev_comm", Str(format!("prev{p}"))),
                    ("prev_pid", Int(p)),
                    ("prev_prio", Int(120)),
                    (
                        "prev_state",
                        Str(["R", "R+", "S", "X"][(i % 4) as usize].into()),
                    ),
                    ("next_comm", Str(format!("swapper/{cpu}"))),
                    ("next_pid", Int(0)),
                    ("next_prio", Int(120)),
                ]
            }),
            1..=3 => {
                let mut f = task(p);
                f.push(("target_cpu", Cpu(1 - cpu as i64)));
                (
                    ["sched_waking", "sched_wakeup", "sched_wakeup_new"][(i % 9 - 1) as usize],
                    f,
                )
            }
            4 => {
                let mut f = task(p);
                f.push(("orig_cpu", Int(cpu as i64)));
                f.push(("dest_cpu", Int(1 - cpu as i64)));
                ("sched_migrate_task", f)
            }
            5 => (
                "sched_process_fork",
                vec![
                    ("comm", Str(format!("parent{p}"))),
                    ("pid", Int(p)),
                    ("child_comm", Str(format!("child{}", p + 1000))),
                    ("child_pid", Int(p + 1000)),
                ],
            ),
            6 => ("sched_process_exit", task(p)),
            7 => (
                "cpu_idle",
                vec![("state", Int(i % 3)), ("cpu_id", Int(cpu as i64))],
            ),
            _ => (
                "cpu_frequency",
                vec![("state", Int(450_000 + i)), ("cpu_id", Int(cpu as i64))],
            ),
        };
        v.push(TraceRecord {
            ts,
            cpu,
            pid: p as u32,
            tgid: p as u32,
            comm: format!("task-with-a-lo{p}"),
            event,
            fields,
        });
    }
    v
}

#[test]
fn trace_cmd_reads_every_event_and_time_extends() {
    let recs = synthetic();
    let cmdlines = recs.iter().map(|r| (r.pid, r.comm.clone())).collect();
    let dat = tracedat::render_records(&recs, &cmdlines, 2).unwrap();
    assert!(
        dat.len() >= 4 * tracedat::PAGE_SIZE,
        "several pages per CPU"
    );
    let Some(tc) = trace_cmd() else { return };
    let path = temp_path("synthetic.dat");
    std::fs::write(&path, &dat).unwrap();
    let lines = report(&tc, &path, &["-t"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(lines.len(), recs.len());
    for (k, (l, r)) in lines.iter().zip(&recs).enumerate() {
        assert_eq!(l, &expected(r, true), "event {k}");
    }
}

/// rt-app's markers (`tests/rtapp/markers.json` on `quad`): `trace-cmd report -N`
/// resolves each `print` event's `ip` through the file's kallsyms and prints
/// `print: tracing_mark_write: <line>`, one per marker record, at its CPU, time and
/// pid, the line without the newline the kernel stored.
#[test]
fn trace_cmd_report_prints_rt_apps_markers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = "[machine]\nfile = \"quad.toml\"\n[run]\nseed = 3\n[workload]\nkind = \"rtapp\"\nfile = \"markers.json\"\n";
    let sc = Scenario::from_doc(
        schedlab::config::Doc::parse(text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let (_, log, tasks) =
        experiment::run_logged(&sc, sc.seed, 0, &RunOpts::default(), false).unwrap();
    let mut marks = vec![];
    for_each_record(&log, &tasks, 4, |x| {
        if x.event == "print" {
            let Some((_, FieldVal::Str(b))) = x.fields.iter().find(|(k, _)| *k == "buf") else {
                panic!("{x:?}")
            };
            marks.push((x.ts, x.cpu, x.pid, b.clone()));
        }
    });
    assert!(marks.len() > 50);
    let dat = tracedat::render(&log, &tasks, 4).unwrap();
    let Some(tc) = trace_cmd() else { return };
    let path = temp_path("markers.dat");
    std::fs::write(&path, &dat).unwrap();
    let out = Command::new(&tc)
        .args(["report", "-N", "-t", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success());
    let report = String::from_utf8_lossy(&out.stdout);
    let mut got = vec![];
    for l in report.lines() {
        let Some((head, line)) = l.split_once(": print: ") else {
            continue;
        };
        let line = line.trim_start();
        let buf = line
            .strip_prefix("tracing_mark_write: ")
            .unwrap_or_else(|| panic!("unresolved ip: {l}"));
        let x = parse_line(&format!("{head}: print: -")).unwrap();
        got.push((x.ts, x.cpu, x.pid, buf.to_string()));
    }
    marks.sort_by_key(|m| (m.0, m.1));
    assert_eq!(got, marks);
}
