//! LISA's `sched_tp` module events (`--sched-tp`, `RunOpts::sched_tp`): which the
//! modelled kernel has, that asking for them changes nothing else, and that their
//! values behave as the kernel's PELT and util_est do at those tracepoints.

use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::metrics::ftrace::{cpumap_hex, for_each_record, FieldVal, TraceRecord};
use std::collections::BTreeMap;
use std::path::Path;

/// `tests/rtapp/sched-tp.json` (a 200 ms hog and a 2 ms / 8 ms periodic task) on
/// machine `machine` (a preset, or a file under tests/rtapp) with kernel `kernel`.
fn scenario(machine: &str, kernel: &str) -> Scenario {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp");
    let m = if machine.ends_with(".toml") {
        format!("file = \"{machine}\"")
    } else {
        format!("preset = \"{machine}\"")
    };
    let text = format!(
        "[machine]\n{m}\n[kernel]\npreset = \"{kernel}\"\n[run]\nseed = 5\n[workload]\nkind = \"rtapp\"\nfile = \"sched-tp.json\"\n"
    );
    Scenario::from_doc(
        Doc::parse(&text, &dir.join("t.toml")).unwrap(),
        &Overrides::default(),
    )
    .unwrap()
}

fn records(sc: &Scenario, sched_tp: bool) -> Vec<TraceRecord> {
    let opts = RunOpts {
        check: true,
        sched_tp,
        ..Default::default()
    };
    let (_, log, tasks) = experiment::run_logged(sc, sc.seed, 0, &opts, false).unwrap();
    let mut v = vec![];
    for_each_record(&log, &tasks, sc.machine.nr_cpus(), |r| v.push(r.clone()));
    v
}

fn int(r: &TraceRecord, k: &str) -> i64 {
    match r.fields.iter().find(|(f, _)| *f == k) {
        Some((_, FieldVal::Int(v))) => *v,
        x => panic!("{k} of {r:?}: {x:?}"),
    }
}

const TP: [&str; 6] = [
    "sched_pelt_cfs",
    "sched_pelt_se",
    "sched_overutilized",
    "sched_util_est_cfs",
    "sched_util_est_se",
    "sched_cpu_capacity",
];

fn counts(recs: &[TraceRecord]) -> BTreeMap<&'static str, usize> {
    let mut c = BTreeMap::new();
    for r in recs {
        if TP.contains(&r.event) {
            *c.entry(r.event).or_default() += 1;
        }
    }
    c
}

/// The module attaches to bare tracepoints: none before v5.3 (v4.15), PELT and
/// overutilized from v5.3 (v5.6), util_est from v5.9, `sched_cpu_capacity` from
/// v5.10 on arm only. Asking for them changes no other record.
#[test]
fn the_kernel_gives_what_its_release_has_and_nothing_else_moves() {
    for (machine, kernel, want) in [
        ("juno-r0", "v4.15", &[][..]),
        ("juno-r0", "v5.6", &TP[..3]),
        ("juno-r0", "v5.10", &TP[..]),
        ("xeon-e5-40", "v5.10", &TP[..5]),
        ("juno-r0", "v6.12", &TP[..]),
    ] {
        let sc = scenario(machine, kernel);
        let off = records(&sc, false);
        let on = records(&sc, true);
        assert!(counts(&off).is_empty());
        let got: Vec<&str> = counts(&on).into_keys().collect();
        let mut want: Vec<&str> = want.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "{machine} {kernel}");
        let rest: Vec<&TraceRecord> = on.iter().filter(|r| !TP.contains(&r.event)).collect();
        assert_eq!(rest, off.iter().collect::<Vec<_>>(), "{machine} {kernel}");
    }
}

/// PELT's tracepoints fire only when an update crossed a 1024 µs period: an
/// entity's consecutive `sched_pelt_se` lie in different periods of its PELT
/// clock (`update_time`, 1024 ns steps), never after the event's own time. The hog
/// runs for 200 ms alone (its updates come from the tick) on a CPU of capacity 1024: its util climbs towards 1024
/// and passes 900 (PELT's half-life is 32 ms: 1 − 2^(−200/32) = 0.987).
#[test]
fn pelt_events_fire_once_per_period_crossed_and_track_util() {
    let sc = scenario("quad.toml", "v5.6");
    let recs = records(&sc, true);
    let mut by_pid: BTreeMap<i64, Vec<&TraceRecord>> = BTreeMap::new();
    for r in recs.iter().filter(|r| r.event == "sched_pelt_se") {
        by_pid.entry(int(r, "pid")).or_default().push(r);
    }
    assert!(by_pid.len() >= 2);
    for evs in by_pid.values() {
        for w in evs.windows(2) {
            let (a, b) = (int(w[0], "update_time"), int(w[1], "update_time"));
            assert!(
                b >> 20 > a >> 20 || int(w[1], "cpu") != int(w[0], "cpu"),
                "{a} {b}"
            );
        }
        for e in evs {
            let ut = int(e, "update_time");
            // Steps of 1024 ns from 0, or from 1 ns for a task attached at PELT clock
            // 0 (the model's stand-in for "attached", docs/kernel-mapping.md).
            assert!(ut as u64 <= e.ts && ut % 1024 <= 1, "{e:?}");
            assert!((0..=1024).contains(&int(e, "util")));
        }
    }
    let hog = recs
        .iter()
        .filter(|r| r.event == "sched_pelt_se")
        .filter(|r| matches!(r.fields.iter().find(|(k, _)| *k == "comm"), Some((_, FieldVal::Str(c))) if c == "hog"))
        .map(|r| int(r, "util"))
        .collect::<Vec<_>>();
    // A running task's entity is updated at each tick (HZ 250: 4 ms, several
    // periods apart): one event per tick over its 200 ms.
    assert!(
        (48..=53).contains(&hog.len()),
        "one per tick: {}",
        hog.len()
    );
    assert!(
        hog.windows(2).filter(|w| w[1] < w[0]).count() <= 2,
        "{hog:?}"
    );
    assert!(*hog.iter().max().unwrap() > 900, "{hog:?}");
    for r in recs.iter().filter(|r| r.event == "sched_pelt_cfs") {
        assert!(matches!(&r.fields[1], ("path", FieldVal::Str(p)) if p == "/"));
    }
}

/// `sched_util_est_se` fires where `util_est_update` writes the estimate: its
/// sample is the task's util_avg then (`enqueued` = `util` but for bit 0, the
/// unchanged flag the event masks), and with
/// UTIL_EST_FASTUP the EWMA never lags a larger sample. The periodic task's
/// estimate settles near its duty cycle's util (2 ms of 8 ms).
#[test]
fn util_est_events_show_the_sample_and_the_ewma() {
    let sc = scenario("quad.toml", "v5.10");
    let recs = records(&sc, true);
    let ue: Vec<&TraceRecord> = recs
        .iter()
        .filter(|r| r.event == "sched_util_est_se")
        .collect();
    assert!(ue.len() >= 30, "{}", ue.len());
    for r in &ue {
        // The sample carries UTIL_AVG_UNCHANGED (bit 0), which the event masks.
        assert_eq!(int(r, "enqueued"), int(r, "util") & !1, "{r:?}");
        assert!(int(r, "ewma") >= int(r, "enqueued") || int(r, "ewma") > 0);
    }
    // The cfs_rq's sum holds each queued task's estimate with its flag bit.
    for r in recs.iter().filter(|r| r.event == "sched_util_est_cfs") {
        assert_eq!(int(r, "ewma"), 0, "a cfs_rq's ewma is never written");
    }
}

/// `sched_overutilized` on juno-r0 (EAS): the hog on a LITTLE CPU (446) does not
/// fit 80 % of it once its util passes ~357, so the root domain turns
/// overutilized; the span is every CPU, as `cpumap_print_to_pagebuf` prints it.
#[test]
fn overutilized_is_traced_with_the_root_domain_span() {
    let sc = scenario("juno-r0", "v5.6");
    let recs = records(&sc, true);
    let ou: Vec<&TraceRecord> = recs
        .iter()
        .filter(|r| r.event == "sched_overutilized")
        .collect();
    assert!(ou.iter().any(|r| int(r, "overutilized") == 1), "{ou:?}");
    for r in &ou {
        assert_eq!(r.fields[1], ("span", FieldVal::Hex("3f".into())));
    }
    for (n, want) in [
        (6, "3f"),
        (32, "ffffffff"),
        (40, "ff,ffffffff"),
        (64, "ffffffff,ffffffff"),
        (176, "ffff,ffffffff,ffffffff,ffffffff,ffffffff,ffffffff"),
    ] {
        assert_eq!(cpumap_hex(n), want, "{n}");
    }
}
