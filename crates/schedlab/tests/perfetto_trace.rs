//! Perfetto protobuf export: decoded again with a small independent protobuf
//! reader (wire format only; field numbers from the public Perfetto protos), its
//! events match the run's own counters, the ftrace text export of the same run,
//! and `trace_window`.

use schedlab::config::Doc;
use schedlab::experiment::{run, run_perfetto, Overrides, RunOpts, Scenario};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone)]
enum V {
    Int(u64),
    Bytes(Vec<u8>),
}

/// Decode one message into (field, value) pairs; panics on malformed input.
fn fields(mut b: &[u8]) -> Vec<(u32, V)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for i in 0..10 {
            let c = b[0];
            *b = &b[1..];
            v |= u64::from(c & 0x7f) << (7 * i);
            if c < 0x80 {
                return v;
            }
        }
        panic!("varint too long")
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let k = varint(&mut b);
        let (f, w) = ((k >> 3) as u32, k & 7);
        match w {
            0 => out.push((f, V::Int(varint(&mut b)))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((f, V::Bytes(b[..n].to_vec())));
                b = &b[n..];
            }
            _ => panic!("unexpected wire type {w}"),
        }
    }
    out
}

fn get(m: &[(u32, V)], f: u32) -> Option<&V> {
    m.iter().find(|(k, _)| *k == f).map(|(_, v)| v)
}
fn int(m: &[(u32, V)], f: u32) -> u64 {
    match get(m, f) {
        Some(V::Int(v)) => *v,
        o => panic!("field {f}: {o:?}"),
    }
}
fn msg(m: &[(u32, V)], f: u32) -> Vec<(u32, V)> {
    match get(m, f) {
        Some(V::Bytes(b)) => fields(b),
        o => panic!("field {f}: {o:?}"),
    }
}
fn string(m: &[(u32, V)], f: u32) -> String {
    match get(m, f) {
        Some(V::Bytes(b)) => String::from_utf8(b.clone()).unwrap(),
        o => panic!("field {f}: {o:?}"),
    }
}

/// FtraceEvent oneof field number -> event name.
fn event_name(f: u32) -> Option<&'static str> {
    Some(match f {
        4 => "sched_switch",
        11 => "cpu_frequency",
        13 => "cpu_idle",
        17 => "sched_wakeup",
        20 => "sched_waking",
        114 => "sched_wakeup_new",
        235 => "task_newtask",
        238 => "sched_process_exit",
        239 => "sched_process_fork",
        491 => "sched_migrate_task",
        _ => return None,
    })
}

struct Ev {
    cpu: u64,
    ts: u64,
    pid: u64,
    name: &'static str,
    body: Vec<(u32, V)>,
}

fn scenario() -> Scenario {
    let text = "[machine]\npreset = \"xeon-e5-40\"\n[run]\nseed = 1\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n";
    Scenario::from_doc(
        Doc::parse(text, Path::new("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap()
}

/// Decode a trace: (SystemInfo release, num_cpus, events by bundle).
fn decode(buf: &[u8]) -> (String, u64, Vec<Vec<Ev>>, usize) {
    let packets: Vec<Vec<(u32, V)>> = fields(buf)
        .into_iter()
        .map(|(f, v)| {
            assert_eq!(f, 1, "Trace.packet");
            match v {
                V::Bytes(b) => fields(&b),
                V::Int(_) => panic!("packet not a message"),
            }
        })
        .collect();
    let si = msg(&packets[0], 45);
    let uts = msg(&si, 1);
    assert_eq!(string(&uts, 1), "Linux");
    let release = string(&uts, 3);
    let ncpu = int(&si, 8);
    let mut threads = 0;
    let mut bundles = Vec::new();
    for p in &packets {
        assert_eq!(int(p, 10), 1, "trusted_packet_sequence_id");
        if get(p, 2).is_some() {
            threads += msg(p, 2).iter().filter(|(f, _)| *f == 2).count();
        }
        if get(p, 67).is_some() {
            let cpus: Vec<_> = msg(p, 67).into_iter().filter(|(f, _)| *f == 1).collect();
            assert_eq!(cpus.len() as u64, ncpu);
        }
        if get(p, 1).is_some() {
            let b = msg(p, 1);
            let cpu = int(&b, 1);
            let evs = b
                .iter()
                .filter(|(f, _)| *f == 2)
                .map(|(_, v)| {
                    let V::Bytes(e) = v else { panic!() };
                    let e = fields(e);
                    let (f, V::Bytes(body)) = e.iter().find(|(f, _)| *f > 2).unwrap().clone()
                    else {
                        panic!("event body")
                    };
                    Ev {
                        cpu,
                        ts: int(&e, 1),
                        pid: int(&e, 2),
                        name: event_name(f).unwrap_or_else(|| panic!("unknown event {f}")),
                        body: fields(&body),
                    }
                })
                .collect();
            bundles.push(evs);
        }
    }
    (release, ncpu, bundles, threads)
}

#[test]
fn perfetto_trace_decodes_and_matches_the_run() {
    let sc = scenario();
    let (r, buf) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
    let (release, ncpu, bundles, threads) = decode(&buf);
    assert_eq!(release, "5.6.0");
    assert_eq!(ncpu, 40);
    assert_eq!(threads, r.tasks.len());
    let all: Vec<&Ev> = bundles.iter().flatten().collect();
    let count = |e: &str| all.iter().filter(|x| x.name == e).count() as u64;
    assert_eq!(count("sched_switch"), r.metrics.context_switches);
    assert_eq!(count("sched_waking"), r.metrics.wakeups);
    assert_eq!(
        count("sched_migrate_task"),
        r.metrics.migrations.values().sum::<u64>()
    );
    assert_eq!(count("sched_process_fork"), r.tasks.len() as u64);
    assert_eq!(count("task_newtask"), r.tasks.len() as u64);
    for b in &bundles {
        assert!(
            b.windows(2).all(|w| w[0].ts <= w[1].ts),
            "bundle time order"
        );
    }
    // prev_pid continuity per CPU, and the event's pid is the outgoing task.
    let mut last_next: BTreeMap<u64, u64> = BTreeMap::new();
    let mut preempted = 0;
    for e in all.iter().filter(|e| e.name == "sched_switch") {
        assert!(e.cpu < 40);
        let prev = int(&e.body, 2);
        assert_eq!(prev, e.pid, "switch recorded in the outgoing task");
        if let Some(&n) = last_next.get(&e.cpu) {
            assert_eq!(prev, n, "prev_pid == previous next_pid on cpu {}", e.cpu);
        }
        last_next.insert(e.cpu, int(&e.body, 6));
        let st = int(&e.body, 4) as i64;
        assert!([0, 1, 0x10, 0x100].contains(&st), "prev_state {st:#x}");
        if st & 0x100 != 0 {
            preempted += 1;
        }
    }
    // Same run as ftrace text: `R+` exactly where the preempted bit is set.
    let (_, text) = run(
        &sc,
        1,
        0,
        &RunOpts {
            trace: true,
            ftrace: true,
            ..Default::default()
        },
    )
    .unwrap();
    let rplus = text
        .unwrap()
        .lines()
        .filter(|l| l.contains("prev_state=R+ "))
        .count();
    assert_eq!(preempted, rplus);
    assert!(count("sched_switch") > 0 && count("cpu_idle") > 0);
}

#[test]
fn perfetto_trace_window_drops_outside_events() {
    let sc = scenario();
    let (_, full) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
    let (_, _, fb, _) = decode(&full);
    let ts: Vec<u64> = fb.iter().flatten().map(|e| e.ts).collect();
    let (lo, hi) = (*ts.iter().min().unwrap(), *ts.iter().max().unwrap());
    let (a, b) = (lo + (hi - lo) / 4, lo + (hi - lo) / 2);
    let opts = RunOpts {
        trace_window: Some((a, b)),
        ..Default::default()
    };
    let (_, win) = run_perfetto(&sc, 1, 0, &opts).unwrap();
    let (_, _, wb, _) = decode(&win);
    let inside = ts.iter().filter(|&&t| t >= a && t <= b).count();
    let got: Vec<u64> = wb.iter().flatten().map(|e| e.ts).collect();
    assert!(got.iter().all(|&t| t >= a && t <= b));
    assert_eq!(got.len(), inside);
    assert!(got.len() < ts.len());
}

/// Decode with the public Perfetto protos (vendored, parsed by `protobuf-parse`) and
/// `protobuf` dynamic messages: every field we write is known to the schema, the first
/// packet is SystemInfo with the release, and event counts match the run.
#[test]
fn perfetto_trace_parses_against_the_public_protos() {
    use protobuf::reflect::{FileDescriptor, ReflectValueRef};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perfetto");
    let parsed = protobuf_parse::Parser::new()
        .pure()
        .include(&dir)
        .input(dir.join("protos/perfetto/trace/perfetto_trace.proto"))
        .parse_and_typecheck()
        .expect("vendored protos parse");
    let files = FileDescriptor::new_dynamic_fds(parsed.file_descriptors, &[]).unwrap();
    let md = |n: &str| {
        files
            .iter()
            .find_map(|f| f.message_by_package_relative_name(n))
            .unwrap_or_else(|| panic!("{n}"))
    };
    let (trace_md, packet_md, bundle_md, event_md) = (
        md("Trace"),
        md("TracePacket"),
        md("FtraceEventBundle"),
        md("FtraceEvent"),
    );
    let sc = scenario();
    let (r, buf) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
    let trace = trace_md
        .parse_from_bytes(&buf)
        .expect("valid perfetto.protos.Trace");
    let packets = trace_md.field_by_name("packet").unwrap();
    let packets = packets.get_repeated(&*trace);
    assert!(packets.len() > 3);
    let msg_of = |v: ReflectValueRef<'_>| v.to_message().expect("message").clone_box();
    let first = msg_of(packets.get(0));
    let si = packet_md
        .field_by_name("system_info")
        .unwrap()
        .get_singular(&*first)
        .expect("first packet is SystemInfo");
    let si = si.to_message().unwrap();
    let sim = md("SystemInfo");
    let uts = sim
        .field_by_name("utsname")
        .unwrap()
        .get_singular(&*si)
        .unwrap();
    let uts = uts.to_message().unwrap();
    let rel = md("Utsname").field_by_name("release").unwrap();
    assert_eq!(rel.get_singular(&*uts).unwrap().to_str(), Some("5.6.0"));
    let fe = packet_md.field_by_name("ftrace_events").unwrap();
    let ev_f = bundle_md.field_by_name("event").unwrap();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..packets.len() {
        let p = msg_of(packets.get(i));
        assert_eq!(
            p.unknown_fields_dyn().iter().count(),
            0,
            "unknown packet field"
        );
        let Some(b) = fe.get_singular(&*p) else {
            continue;
        };
        let b = b.to_message().unwrap();
        let evs = ev_f.get_repeated(&*b);
        for j in 0..evs.len() {
            let e = msg_of(evs.get(j));
            assert_eq!(e.unknown_fields_dyn().iter().count(), 0, "unknown event");
            for f in event_md.fields() {
                if f.name() != "timestamp" && f.name() != "pid" && f.has_field(&*e) {
                    *counts.entry(f.name().to_string()).or_default() += 1;
                }
            }
        }
    }
    let c = |n: &str| counts.get(n).copied().unwrap_or(0);
    assert_eq!(c("sched_switch"), r.metrics.context_switches);
    assert_eq!(c("sched_waking"), r.metrics.wakeups);
    assert_eq!(
        c("sched_migrate_task"),
        r.metrics.migrations.values().sum::<u64>()
    );
    assert_eq!(c("sched_process_fork"), r.tasks.len() as u64);
    assert!(c("cpu_idle") > 0);
}
