//! Perfetto protobuf export: decoded again with a small independent protobuf
//! reader (wire format only; field numbers from the public Perfetto protos) and
//! with dynamic messages of the vendored public protos; its events match the run's
//! own counters, the ftrace text export of the same run, and `trace_window`; its
//! counter tracks (util_avg, nr_running, select_task_rq_fair probes) are well
//! formed, agree with the sched_switch stream and the run's function counters,
//! change nothing in the run, and start right in a window.

mod common;

use common::{assert_counts_match_run, scenario_of};
use protobuf::reflect::{
    FileDescriptor, MessageDescriptor, MessageRef, ReflectValueRef, RuntimeFieldType, RuntimeType,
};
use protobuf::MessageDyn;
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
    scenario_of("[machine]\npreset = \"xeon-e5-40\"\n[run]\nseed = 1\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n")
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
    assert_counts_match_run(count, &r);
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
    // The window shows what the whole trace shows inside it, and opens with the
    // state at its start (each CPU's frequency and idle state, at `a`).
    let inside = ts.iter().filter(|&&t| t > a && t <= b).count();
    let got: Vec<u64> = wb.iter().flatten().map(|e| e.ts).collect();
    assert!(got.iter().all(|&t| t >= a && t <= b));
    assert_eq!(got.iter().filter(|&&t| t > a).count(), inside);
    let at_start = got.iter().filter(|&&t| t == a).count();
    assert!(
        at_start >= sc.machine.nr_cpus(),
        "{at_start} events at the start"
    );
    assert!(got.len() < ts.len());
}

/// Decode with the public Perfetto protos (vendored, parsed by `protobuf-parse`) and
/// `protobuf` dynamic messages: every field we write is known to the schema, the first
/// packet is SystemInfo with the release, and event counts match the run.
#[test]
fn perfetto_trace_parses_against_the_public_protos() {
    let schema = Schema::load();
    let md = |n: &str| schema.md(n);
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

// --- counter tracks, decoded against the public protos -------------------------

/// The vendored public Perfetto protos, parsed (pure Rust, no protoc).
struct Schema(Vec<FileDescriptor>);

impl Schema {
    fn load() -> Schema {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perfetto");
        let parsed = protobuf_parse::Parser::new()
            .pure()
            .include(&dir)
            .input(dir.join("protos/perfetto/trace/perfetto_trace.proto"))
            .parse_and_typecheck()
            .expect("vendored protos parse");
        Schema(FileDescriptor::new_dynamic_fds(parsed.file_descriptors, &[]).unwrap())
    }
    fn md(&self, n: &str) -> MessageDescriptor {
        self.0
            .iter()
            .find_map(|f| f.message_by_package_relative_name(n))
            .unwrap_or_else(|| panic!("{n}"))
    }
}

/// Every field of `m`, and of every message nested in it, is known to the schema.
fn all_fields_known(m: &dyn MessageDyn, path: &str) {
    assert_eq!(
        m.unknown_fields_dyn().iter().count(),
        0,
        "unknown field in {path}"
    );
    for f in m.descriptor_dyn().fields() {
        let p = format!("{path}.{}", f.name());
        match f.runtime_field_type() {
            RuntimeFieldType::Singular(RuntimeType::Message(_)) => {
                if let Some(v) = f.get_singular(m) {
                    all_fields_known(&*v.to_message().unwrap(), &p);
                }
            }
            RuntimeFieldType::Repeated(RuntimeType::Message(_)) => {
                let r = f.get_repeated(m);
                for i in 0..r.len() {
                    all_fields_known(&*r.get(i).to_message().unwrap(), &p);
                }
            }
            _ => {}
        }
    }
}

/// A singular field by name (None when absent).
fn field<'a>(m: &'a dyn MessageDyn, name: &str) -> Option<ReflectValueRef<'a>> {
    m.descriptor_dyn()
        .field_by_name(name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .get_singular(m)
}

/// The symbolic name of enum field `name` of `m`.
fn enum_name(m: &dyn MessageDyn, name: &str) -> Option<String> {
    let f = m.descriptor_dyn().field_by_name(name).unwrap();
    let v = f.get_singular(m)?.to_enum_value().unwrap();
    let RuntimeFieldType::Singular(RuntimeType::Enum(e)) = f.runtime_field_type() else {
        panic!("{name} is not an enum")
    };
    Some(
        e.value_by_number(v)
            .expect("known enum value")
            .name()
            .to_string(),
    )
}

#[derive(Debug)]
struct Track {
    name: String,
    parent: Option<u64>,
    /// `CounterDescriptor.unit` by name (`None` when unset), for counter tracks.
    counter: Option<Option<String>>,
}

/// What a trace holds for the counter checks.
#[derive(Default)]
struct Decoded {
    tracks: BTreeMap<u64, Track>,
    /// `(track uuid, timestamp, value)` in file order.
    values: Vec<(u64, u64, i64)>,
    /// `(cpu, timestamp, next_pid)` of every sched_switch.
    switches: Vec<(u64, u64, i64)>,
}

impl Decoded {
    fn uuid(&self, name: &str) -> u64 {
        let v: Vec<u64> = self
            .tracks
            .iter()
            .filter(|(_, t)| t.name == name)
            .map(|(u, _)| *u)
            .collect();
        assert_eq!(v.len(), 1, "one track named {name:?}");
        v[0]
    }
    /// The samples of track `uuid`, in file order.
    fn track(&self, uuid: u64) -> Vec<(u64, i64)> {
        self.values
            .iter()
            .filter(|v| v.0 == uuid)
            .map(|v| (v.1, v.2))
            .collect()
    }
}

/// Decode `buf` with dynamic messages of the public schema: every field of every
/// packet must be known, every TrackEvent a well-formed counter sample.
fn decode_counters(s: &Schema, buf: &[u8]) -> Decoded {
    let trace = s.md("Trace").parse_from_bytes(buf).expect("valid Trace");
    all_fields_known(&*trace, "Trace");
    let packets = s.md("Trace").field_by_name("packet").unwrap();
    let packets = packets.get_repeated(&*trace);
    let mut d = Decoded::default();
    for i in 0..packets.len() {
        let p: MessageRef<'_> = packets.get(i).to_message().unwrap();
        let p: &dyn MessageDyn = &*p;
        if let Some(td) = field(p, "track_descriptor") {
            let td = td.to_message().unwrap();
            let uuid = field(&*td, "uuid").expect("uuid").to_u64().unwrap();
            let counter = field(&*td, "counter").map(|c| {
                let c = c.to_message().unwrap();
                enum_name(&*c, "unit")
            });
            let t = Track {
                name: field(&*td, "name").expect("name").to_str().unwrap().into(),
                parent: field(&*td, "parent_uuid").map(|v| v.to_u64().unwrap()),
                counter,
            };
            assert!(d.tracks.insert(uuid, t).is_none(), "uuid {uuid:#x} twice");
        }
        if let Some(te) = field(p, "track_event") {
            let te = te.to_message().unwrap();
            assert!(
                field(p, "trusted_packet_sequence_id").is_some(),
                "TrackEvent without trusted_packet_sequence_id"
            );
            let ts = field(p, "timestamp").expect("packet timestamp").to_u64();
            assert_eq!(enum_name(&*te, "type").as_deref(), Some("TYPE_COUNTER"));
            let uuid = field(&*te, "track_uuid").expect("track_uuid").to_u64();
            let v = field(&*te, "counter_value").expect("integer counter_value");
            assert!(field(&*te, "double_counter_value").is_none());
            d.values
                .push((uuid.unwrap(), ts.unwrap(), v.to_i64().unwrap()));
        }
        if let Some(b) = field(p, "ftrace_events") {
            let b = b.to_message().unwrap();
            let cpu = field(&*b, "cpu").unwrap().to_u32().unwrap() as u64;
            let evs = s.md("FtraceEventBundle").field_by_name("event").unwrap();
            let evs = evs.get_repeated(&*b);
            for j in 0..evs.len() {
                let e = evs.get(j).to_message().unwrap();
                if let Some(sw) = field(&*e, "sched_switch") {
                    let sw = sw.to_message().unwrap();
                    let ts = field(&*e, "timestamp").unwrap().to_u64().unwrap();
                    let next = field(&*sw, "next_pid").unwrap().to_i32().unwrap();
                    d.switches.push((cpu, ts, i64::from(next)));
                }
            }
        }
    }
    d
}

/// The values a track holds at instant `t`: the one in force just before, and any
/// written at `t` (same-instant samples have no order across packets).
fn values_at(track: &[(u64, i64)], t: u64) -> Vec<i64> {
    let mut v: Vec<i64> = track
        .iter()
        .rev()
        .find(|s| s.0 < t)
        .map(|s| s.1)
        .into_iter()
        .collect();
    v.extend(track.iter().filter(|s| s.0 == t).map(|s| s.1));
    v
}

/// Decode `sc`'s Perfetto trace and check its counter tracks against the schema,
/// the sched_switch stream and the run's own counters. Returns how many util_avg
/// samples were above 1024.
fn check_counter_tracks(schema: &Schema, sc: &Scenario) -> usize {
    let (r, buf) = run_perfetto(sc, 1, 0, &RunOpts::default()).unwrap();
    let d = decode_counters(schema, &buf);
    let ncpu = sc.machine.nr_cpus();

    // Track tree: every parent declared; a `schedlab` root; per CPU three counter
    // tracks, counts in UNIT_COUNT.
    for (u, t) in &d.tracks {
        if let Some(p) = t.parent {
            assert!(
                d.tracks.contains_key(&p),
                "{u:#x}: parent {p:#x} undeclared"
            );
        }
    }
    let root = d.uuid("schedlab");
    assert_eq!(d.tracks[&root].parent, None);
    for cpu in 0..ncpu {
        for (sig, unit) in [
            ("util_avg", None),
            ("nr_running", Some("UNIT_COUNT")),
            ("probes", Some("UNIT_COUNT")),
        ] {
            let t = &d.tracks[&d.uuid(&format!("cpu{cpu} {sig}"))];
            assert_eq!(t.counter, Some(unit.map(String::from)), "cpu{cpu} {sig}");
            let group = t.parent.expect("grouped");
            assert_eq!(d.tracks[&group].parent, Some(root));
        }
    }
    assert_eq!(d.tracks.len(), 1 + 3 + 3 * ncpu);

    // Every sample is on a declared counter track, time-monotone per track.
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for &(u, ts, _) in &d.values {
        let t = d
            .tracks
            .get(&u)
            .unwrap_or_else(|| panic!("undeclared track {u:#x}"));
        assert!(t.counter.is_some(), "{}: not a counter track", t.name);
        let prev = last.insert(u, ts).unwrap_or(0);
        assert!(ts >= prev, "{}: {ts} after {prev}", t.name);
    }

    let fs = &r.metrics.functions["select_task_rq_fair"];
    let mut probe_samples = 0u64;
    let mut probed = 0i64;
    let mut busy_util = 0;
    let mut above = 0;
    for cpu in 0..ncpu {
        // nr_running: starts at 0, moves by one task at a time, 0 whenever the CPU
        // switches to the idle task, at least 1 whenever it switches to a task.
        let nr = d.track(d.uuid(&format!("cpu{cpu} nr_running")));
        assert_eq!(nr.first(), Some(&(0, 0)), "cpu{cpu} nr_running starts at 0");
        for w in nr.windows(2) {
            assert_eq!((w[1].1 - w[0].1).abs(), 1, "cpu{cpu} nr_running {w:?}");
        }
        // util_avg: starts at 0 with the run, stays within 0..=1024 except where
        // the kernel's own does not: attaching a migrated or new task's util adds
        // it at once, which can lift the cfs_rq above 1024 until PELT decays it
        // back (v5.6 `cpu_util()` caps its reading for that reason). So a sample
        // above 1024 that rose must sit at an enqueue (nr_running going up) on
        // that CPU; anything else above 1024 only decays, give or take the
        // rounding of `util_sum / divider` (a running CPU adds 1024 per 1024 µs
        // while the divider grows by 1 per µs and restarts at each period: the
        // truncated quotient can step up by a unit or two).
        let util = d.track(d.uuid(&format!("cpu{cpu} util_avg")));
        assert_eq!(util.first(), Some(&(0, 0)), "cpu{cpu} util_avg starts at 0");
        let mut prev = 0;
        for &(ts, v) in &util {
            assert!(v >= 0, "cpu{cpu} util_avg {v} at {ts}");
            if v > 1024 {
                above += 1;
                let enqueue = nr.windows(2).any(|w| w[1].0 == ts && w[1].1 > w[0].1);
                assert!(
                    v <= prev + 2 || enqueue,
                    "cpu{cpu} util_avg rose {prev} -> {v} at {ts} with no enqueue"
                );
            }
            prev = v;
        }
        busy_util += util.iter().filter(|s| s.1 > 0).count();
        let mut switches = 0;
        for &(c, ts, next) in &d.switches {
            if c != cpu as u64 {
                continue;
            }
            switches += 1;
            let at = values_at(&nr, ts);
            if next == 0 {
                assert!(
                    at.contains(&0),
                    "cpu{cpu} idle at {ts} with nr_running {at:?}"
                );
            } else {
                assert!(
                    at.iter().any(|&n| n >= 1),
                    "cpu{cpu} runs pid {next} at {ts} with nr_running {at:?}"
                );
            }
        }
        if switches > 0 {
            assert!(nr.len() > 1, "cpu{cpu} switched but nr_running never moved");
        }
        let pr = d.track(d.uuid(&format!("cpu{cpu} probes")));
        probe_samples += pr.len() as u64;
        probed += pr.iter().map(|s| s.1).sum::<i64>();
    }
    assert!(busy_util > 0, "util_avg never above 0");
    assert!(!d.switches.is_empty());
    // One probe sample per select_task_rq_fair call, summing to its CPUs probed.
    assert!(fs.calls > 0);
    assert_eq!(probe_samples, fs.calls);
    assert_eq!(probed as u64, fs.cpus_probed);
    above
}

#[test]
fn perfetto_counter_tracks_decode_and_agree_with_the_run() {
    let schema = Schema::load();
    // 40 CPUs, 8 tasks: util_avg never leaves 0..=1024.
    assert_eq!(check_counter_tracks(&schema, &scenario()), 0);
    // 6 big.LITTLE CPUs, 80 tasks: migrations lift cfs_rq util_avg above 1024, as
    // in the kernel; only at enqueues (checked above).
    let text = "[machine]\npreset = \"juno-r0\"\n[run]\nseed = 2\n[workload]\nkind = \"hackbench\"\ngroups = 4\nfds = 10\nloops = 30\n";
    let sc = Scenario::from_doc(
        Doc::parse(text, Path::new("juno.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    assert!(check_counter_tracks(&schema, &sc) > 0);
}

#[test]
fn perfetto_counters_change_nothing_and_are_deterministic() {
    let sc = scenario();
    let (mut plain, _) = run(&sc, 1, 0, &RunOpts::default()).unwrap();
    let check = RunOpts {
        check: true,
        ..Default::default()
    };
    // With --check, the kernel also verifies after every event that the last
    // reported counters are the runqueues' own.
    let (mut traced, a) = run_perfetto(&sc, 1, 0, &check).unwrap();
    let (_, b) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
    assert_eq!(a, b, "same scenario and seed, same bytes");
    plain.wall_seconds = 0.0;
    traced.wall_seconds = 0.0;
    assert_eq!(
        plain.to_json(),
        traced.to_json(),
        "counter logging changed the run"
    );
}

#[test]
fn perfetto_trace_window_bounds_the_counters_and_starts_them_right() {
    let schema = Schema::load();
    let sc = scenario();
    let (_, full) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
    let f = decode_counters(&schema, &full);
    let hi = f.switches.iter().map(|s| s.1).max().unwrap();
    let (a, b) = (hi / 4, hi / 2);
    let opts = RunOpts {
        trace_window: Some((a, b)),
        ..Default::default()
    };
    let (_, win) = run_perfetto(&sc, 1, 0, &opts).unwrap();
    let w = decode_counters(&schema, &win);
    assert_eq!(f.tracks.len(), w.tracks.len());
    assert!(
        w.values.iter().all(|v| v.1 >= a && v.1 <= b),
        "sample outside the window"
    );
    let inside = |t: &[(u64, i64)]| -> Vec<(u64, i64)> {
        t.iter().copied().filter(|s| s.0 >= a && s.0 <= b).collect()
    };
    let mut moved = 0;
    for cpu in 0..40 {
        for sig in ["util_avg", "nr_running"] {
            let name = format!("cpu{cpu} {sig}");
            let full_t = f.track(f.uuid(&name));
            let win_t = w.track(w.uuid(&name));
            // The value in force when the window opens, at its start, then the same
            // samples as the full trace's within the window.
            let before = full_t
                .iter()
                .rev()
                .find(|s| s.0 < a)
                .expect("a value before")
                .1;
            assert_eq!(win_t[0], (a, before), "{name} at the window start");
            assert_eq!(win_t[1..], inside(&full_t)[..], "{name} within the window");
            moved += win_t.len() - 1;
        }
        let name = format!("cpu{cpu} probes");
        assert_eq!(
            w.track(w.uuid(&name)),
            inside(&f.track(f.uuid(&name))),
            "{name}"
        );
    }
    assert!(moved > 0, "no counter moved within the window");
}

/// `SystemInfo.utsname.machine` is `uname -m` of the machine's architecture.
#[test]
fn system_info_names_the_architecture() {
    for (preset, want) in [
        ("xeon-e5-40", "x86_64"),
        ("juno-r0", "aarch64"),
        ("power9-176", "ppc64le"),
    ] {
        let sc = scenario_of(&format!(
            "[machine]\npreset = \"{preset}\"\n[run]\nduration_ms = 1\n[workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 2\nloops = 2\n"
        ));
        let (_, buf) = run_perfetto(&sc, 1, 0, &RunOpts::default()).unwrap();
        let first = match fields(&buf).into_iter().next() {
            Some((1, V::Bytes(b))) => fields(&b),
            _ => panic!("no first packet"),
        };
        let uts = msg(&msg(&first, 45), 1);
        assert_eq!(string(&uts, 4), want, "{preset}");
    }
}

/// rt-app's markers (`global.ftrace`) arrive as `PrintFtraceEvent`s, as
/// traced_probes records `print` events: the writer's address in `ip` and the line
/// with the kernel's newline in `buf`, on the writer's CPU, with its pid; one per
/// `print` record of the ftrace text, in the same order.
#[test]
fn perfetto_prints_rt_apps_markers() {
    let schema = Schema::load();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = "[machine]\nfile = \"quad.toml\"\n[run]\nseed = 3\n[workload]\nkind = \"rtapp\"\nfile = \"markers.json\"\n";
    let sc = Scenario::from_doc(
        Doc::parse(text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let (_, buf) = run_perfetto(&sc, sc.seed, 0, &RunOpts::default()).unwrap();
    let (_, ftrace) = common::run_ftrace(&sc, sc.seed);
    let want: Vec<(u64, String)> = ftrace
        .lines()
        .filter_map(|l| {
            let (head, line) = l.split_once(": tracing_mark_write: ")?;
            let cpu = head.split('[').nth(1)?[..3].parse().ok()?;
            Some((cpu, format!("{line}\n")))
        })
        .collect();
    assert!(want.len() > 50);
    let md = |n: &str| schema.md(n);
    let trace = md("Trace").parse_from_bytes(&buf).unwrap();
    let packets = md("Trace").field_by_name("packet").unwrap();
    let packets = packets.get_repeated(&*trace);
    let (fe, cpu_f, ev_f) = (
        md("TracePacket").field_by_name("ftrace_events").unwrap(),
        md("FtraceEventBundle").field_by_name("cpu").unwrap(),
        md("FtraceEventBundle").field_by_name("event").unwrap(),
    );
    let print_f = md("FtraceEvent").field_by_name("print").unwrap();
    let (ip_f, buf_f) = (
        md("PrintFtraceEvent").field_by_name("ip").unwrap(),
        md("PrintFtraceEvent").field_by_name("buf").unwrap(),
    );
    let mut got: Vec<(u64, u64, String)> = vec![];
    for i in 0..packets.len() {
        let p = packets.get(i).to_message().unwrap().clone_box();
        let Some(b) = fe.get_singular(&*p) else {
            continue;
        };
        let b = b.to_message().unwrap();
        let cpu = cpu_f.get_singular(&*b).unwrap().to_u32().unwrap();
        let evs = ev_f.get_repeated(&*b);
        for j in 0..evs.len() {
            let e = evs.get(j).to_message().unwrap().clone_box();
            let ts = md("FtraceEvent")
                .field_by_name("timestamp")
                .unwrap()
                .get_singular(&*e)
                .unwrap()
                .to_u64()
                .unwrap();
            if let Some(pr) = print_f.get_singular(&*e) {
                let pr = pr.to_message().unwrap();
                assert_eq!(
                    ip_f.get_singular(&*pr).unwrap().to_u64(),
                    Some(schedlab::metrics::tracedat::MARKER_IP)
                );
                let s = buf_f
                    .get_singular(&*pr)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                got.push((ts, u64::from(cpu), s));
            }
        }
    }
    // Bundles are per CPU: order by time (stable within a CPU) as the text is.
    got.sort_by_key(|g| g.0);
    let got: Vec<(u64, String)> = got.into_iter().map(|(_, c, s)| (c, s)).collect();
    assert_eq!(got, want);
}

/// LISA's `sched_tp` signals (`RunOpts::sched_tp`) as counter tracks: per CPU under
/// a `sched_tp` root, per task attached to its thread (`TrackDescriptor.thread`,
/// so the UI shows them with the thread), one value per change, each equal to the
/// `sched_tp` record it comes from (tests/rtapp/sched-tp.json, juno-r0, v5.10).
#[test]
fn perfetto_sched_tp_tracks_follow_the_events() {
    let schema = Schema::load();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let text = "[machine]\npreset = \"juno-r0\"\n[kernel]\npreset = \"v5.10\"\n[run]\nseed = 5\n[workload]\nkind = \"rtapp\"\nfile = \"sched-tp.json\"\n";
    let sc = Scenario::from_doc(
        Doc::parse(text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let opts = RunOpts {
        sched_tp: true,
        ..Default::default()
    };
    let (_, buf) = run_perfetto(&sc, sc.seed, 0, &opts).unwrap();
    let d = decode_counters(&schema, &buf);
    let (_, log, tasks) = schedlab::experiment::run_logged(&sc, sc.seed, 0, &opts, false).unwrap();
    use schedlab::metrics::perfetto::{sched_tp_uuid, TpSignal, SCHED_TP_UUID};
    use schedlab::sched::{SchedEvent, SchedTp};
    assert_eq!(d.tracks[&SCHED_TP_UUID].name, "sched_tp");
    let cpu_util = sched_tp_uuid(TpSignal::CfsUtil, 3);
    assert_eq!(d.tracks[&cpu_util].name, "cpu3 util");
    assert_eq!(d.tracks[&cpu_util].parent, Some(SCHED_TP_UUID));
    // Expected samples per track from the records, deduplicated as written.
    let mut want: BTreeMap<u64, Vec<(u64, i64)>> = BTreeMap::new();
    let mut push = |u: u64, t: u64, v: u32| {
        let tr = want.entry(u).or_default();
        if tr.last().map(|s| s.1) != Some(i64::from(v)) {
            tr.push((t, i64::from(v)));
        }
    };
    for (t, e) in log.tracepoints() {
        match e {
            SchedEvent::SchedTp(SchedTp::PeltSe { pid, util, .. }) => {
                push(sched_tp_uuid(TpSignal::TaskUtil, pid), t, util)
            }
            SchedEvent::SchedTp(SchedTp::UtilEstSe { pid, enqueued, .. }) => {
                push(sched_tp_uuid(TpSignal::TaskUtilEst, pid), t, enqueued)
            }
            SchedEvent::SchedTp(SchedTp::PeltCfs { cpu, util, .. }) => {
                push(sched_tp_uuid(TpSignal::CfsUtil, cpu), t, util)
            }
            SchedEvent::SchedTp(SchedTp::CpuCapacity {
                cpu, capacity_curr, ..
            }) => push(sched_tp_uuid(TpSignal::CapacityCurr, cpu), t, capacity_curr),
            _ => {}
        }
    }
    assert!(want.len() > 10);
    for (u, samples) in &want {
        assert!(d.tracks.contains_key(u), "{u:#x} declared");
        assert_eq!(&d.track(*u), samples, "{}", d.tracks[u].name);
    }
    // Every task has its util track; the hog's is named so, under its thread.
    let hog = tasks.iter().find(|t| t.name == "hog").unwrap();
    let hu = sched_tp_uuid(TpSignal::TaskUtil, hog.pid);
    assert_eq!(d.tracks[&hu].name, "util");
    assert_eq!(
        d.tracks[&hu].parent, None,
        "attached to the thread, not the root"
    );
    assert!(d.track(hu).iter().any(|s| s.1 > 900));
}
