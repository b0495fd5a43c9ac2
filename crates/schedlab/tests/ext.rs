//! sched_ext in the run loop (issue 21): `[kernel] class = "ext"` with a built-in
//! scheduler; the class's own rules are hand-computed in `sched/ext/tests.rs`.

mod common;

use common::*;
use schedlab::machine::presets::test_topology;
use schedlab::workload::program::{AffinityTarget, Op};

/// Three CPU hogs of `ms` ms each (a, b, c: pids 1-3) started at t = 0 on 2 CPUs
/// without idle states.
fn hogs(ms: u64) -> schedlab::experiment::Scenario {
    let mut w = W::new();
    let p = w.prog("hog", vec![Op::Compute(c(ms * MS))]);
    for n in ["a", "b", "c"] {
        w.task(n, p, None);
    }
    scenario(no_idle(test_topology(1, 1, 2, 1)), w.build(), None)
}

/// Three 50 ms CPU hogs started at t = 0 on 2 CPUs without idle states, under
/// `sched` (`simple-fifo`: a global FIFO; `simple`: weighted vtime); the ftrace text.
fn three_hogs(sched: &str) -> (schedlab::experiment::RunResult, String) {
    let mut sc = hogs(50);
    sc.tunables.ext_scheduler = Some(sched.to_string());
    run_ftrace(&sc, 1)
}

/// (time ns, cpu, next pid) of every switch to a task.
fn runs(trace: &str) -> Vec<(u64, usize, u32)> {
    trace
        .lines()
        .filter(|l| l.contains("sched_switch:") && !l.contains("next_pid=0 "))
        .map(|l| {
            let ts = l.split(": ").next().unwrap().rsplit(' ').next().unwrap();
            let (s, f) = ts.split_once('.').unwrap();
            let t =
                s.trim().parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap() * 1000;
            let cpu = l.split('[').nth(1).unwrap()[..3].parse().unwrap();
            (t, cpu, word_after(l, "next_pid="))
        })
        .collect()
}

#[test]
fn simple_fifo_round_robins_20_ms_slices_through_the_shared_dsq() {
    let (r, trace) = three_hogs("simple-fifo");
    let rs = runs(&trace);
    // a (pid 1): the launcher's CPU 0 is idle and claimed: straight to its local
    // DSQ. b: CPU 0 is taken; CPU 0's distribute cursor (0) finds CPU 1 next. c: no
    // idle CPU left, so prev (0) and the shared DSQ.
    assert_eq!((rs[0].1, rs[0].2), (0, 1), "{rs:?}");
    assert_eq!((rs[1].1, rs[1].2), (1, 2), "{rs:?}");
    assert!(rs[0].0 < MS && rs[1].0 < MS);
    // A slice runs out at the first tick (HZ 250) after 20 ms of running: a began
    // at t = 0 exactly, so at the 20 ms tick; b, 2 µs later (the launcher's second
    // fork), at 24 ms. CPU 0 puts a behind c and takes c, the head; at 24 ms CPU 1
    // puts b and takes a, migrating it.
    assert_eq!(rs[2], (20 * MS, 0, 3), "{rs:?}");
    assert_eq!(rs[3], (24 * MS, 1, 1), "{rs:?}");
    assert_eq!(rs[4], (40 * MS, 0, 2), "{rs:?}");
    // Every hog ran its 50 ms; every placement is the class's.
    for t in &r.tasks {
        assert!(t.runtime_ns >= 50 * MS && t.runtime_ns < 51 * MS, "{t:?}");
    }
    assert!(trace.contains("sched_migrate_task"), "a moved to CPU 1");
}

#[test]
fn simple_vtime_runs_and_is_deterministic() {
    let (a, ta) = three_hogs("simple");
    let (b, tb) = three_hogs("simple");
    assert_eq!(ta, tb);
    assert_eq!(a.events, b.events);
    for t in &a.tasks {
        assert!(t.runtime_ns >= 50 * MS, "{t:?}");
    }
}

#[test]
fn class_and_scheduler_keys_are_checked() {
    let text = |k: &str| {
        format!(
            "[machine]\npreset = \"juno-r0\"\n[kernel]\npreset = \"v5.6\"\n{k}\n\
             [workload]\nkind = \"hackbench\"\ngroups = 1\nloops = 5\n"
        )
    };
    let err = |k: &str| {
        let doc = schedlab::config::Doc::parse(&text(k), std::path::Path::new("t.toml")).unwrap();
        schedlab::experiment::Scenario::from_doc(doc, &Default::default())
            .unwrap_err()
            .to_string()
    };
    assert!(err("class = \"ext\"").contains("needs a `scheduler`"));
    assert!(
        err("class = \"ext\"\nscheduler = \"nope\"").contains("unknown sched_ext scheduler `nope`")
    );
    assert!(err("scheduler = \"simple\"").contains("needs class = \"ext\""));
    assert!(err("class = \"rt\"").contains("unknown scheduling class `rt`"));
    let ok = scenario_of(&text("class = \"ext\"\nscheduler = \"simple\""));
    assert_eq!(ok.tunables.ext_scheduler.as_deref(), Some("simple"));
}

#[test]
fn hackbench_under_ext_passes_the_checks_on_smt_and_big_little() {
    // --check runs every event: the class's invariants and the rq counts.
    for (preset, sched) in [("xeon-e5-40", "simple-fifo"), ("juno-r0", "simple")] {
        let sc = scenario_of(&format!(
            "[machine]\npreset = \"{preset}\"\n[kernel]\npreset = \"v5.6\"\nclass = \"ext\"\n\
             scheduler = \"{sched}\"\n[workload]\nkind = \"hackbench\"\ngroups = 2\nloops = 20\n"
        ));
        let r = run_result(&sc);
        assert!(r.metrics.context_switches > 0);
        assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    }
}

/// A sched_ext scenario on `preset` running `scheduler` (a built-in name or a BPF C
/// file), with `globals` as `[kernel.scheduler_globals]` lines.
fn ext_scenario_text(preset: &str, scheduler: &str, globals: &str) -> String {
    format!(
        "[machine]\npreset = \"{preset}\"\n[kernel]\npreset = \"v5.6\"\nclass = \"ext\"\n\
         scheduler = \"{scheduler}\"\n{globals}\n[workload]\nkind = \"hackbench\"\n\
         groups = 4\nloops = 30\n"
    )
}

/// Run options with `--check`: every event checks the classes' invariants.
fn checked() -> schedlab::experiment::RunOpts {
    schedlab::experiment::RunOpts {
        check: true,
        ..Default::default()
    }
}

/// A file of the repository's `scenarios/scx/` or of these tests' `scx/`.
fn scx_file(rel: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = if rel.starts_with("scenarios/") {
        root.join("../..").join(rel)
    } else {
        root.join("tests").join(rel)
    };
    p.canonicalize().unwrap().display().to_string()
}

/// The scenario `text`, with the user's word that its C scheduler may run
/// (`--allow-native-scheduler`).
fn native(text: &str) -> Result<schedlab::experiment::Scenario, String> {
    let doc = schedlab::config::Doc::parse(text, std::path::Path::new("t.toml")).unwrap();
    let ov = schedlab::experiment::Overrides {
        native_scheduler: true,
        ..Default::default()
    };
    schedlab::experiment::Scenario::from_doc(doc, &ov).map_err(|e| e.to_string())
}

fn bpf_err(text: &str) -> String {
    match native(text) {
        Err(e) => e,
        Ok(_) => panic!("the scenario was not refused"),
    }
}

#[test]
fn bpf_c_twins_decide_exactly_as_the_built_in_schedulers() {
    // The same policy written twice, in Rust and as a sched_ext BPF C program that
    // schedlab compiles natively: every decision (the whole ftrace text) agrees, on
    // an SMT machine with one LLC per socket and on big.LITTLE with one per cluster.
    let llc_globals = "[kernel.scheduler_globals]\nnr_llcs = \"nr_llcs\"\ncpu_llc = \"cpu_llc\"";
    for preset in ["xeon-e5-40", "juno-r0"] {
        for (builtin, c_file, globals) in [
            ("simple-fifo", "scenarios/scx/global_fifo.bpf.c", ""),
            ("llc-vtime", "scenarios/scx/llc_vtime.bpf.c", llc_globals),
        ] {
            let rust = scenario_of(&ext_scenario_text(preset, builtin, ""));
            let c = scenario_of(&ext_scenario_text(preset, &scx_file(c_file), globals));
            let (rr, rt) = run_ftrace(&rust, 3);
            let (cr, ct) = run_ftrace(&c, 3);
            assert_eq!(
                rr.workload.stop_reason,
                schedlab::sim::StopReason::Completed
            );
            assert!(rr.metrics.context_switches > 500, "{preset} {builtin}");
            assert!(rt == ct, "{preset}: {builtin} and {c_file} differ");
            assert_eq!(rr.events, cr.events);
        }
    }
}

#[test]
fn the_shim_s_maps_helpers_and_cpumasks_hold_inside_a_running_scheduler() {
    // The scheduler checks the shim in its init and at every tick, failing with
    // scx_bpf_error(); --check adds the class's invariants at every event.
    let f = scx_file("scx/shim_selftest.bpf.c");
    let ok = native(&ext_scenario_text(
        "xeon-e5-40",
        &f,
        "[kernel.scheduler_globals]\nexpect_cpus = \"nr_cpus\"",
    ))
    .unwrap();
    let r = run_result(&ok);
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    // A wrong expectation fails the scheduler's own init check at t = 0: the kernel
    // disables it before any task ran under it, and the fair class runs the
    // workload (under --check, so the fair invariants hold after the switch).
    let bad = native(&ext_scenario_text(
        "xeon-e5-40",
        &f,
        "[kernel.scheduler_globals]\nexpect_cpus = 39",
    ))
    .unwrap();
    let opts = checked();
    let r = schedlab::experiment::run(&bad, 1, 0, &opts).unwrap().0;
    let x = r
        .kernel
        .scheduler_exit
        .as_ref()
        .expect("the scheduler failed");
    assert_eq!(x.t_ns, 0);
    assert!(
        x.reason
            .contains("shim check failed: scx_bpf_nr_cpu_ids() == expect_cpus"),
        "{}",
        x.reason
    );
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    assert_eq!(r.metrics.placement_reasons.get("ext"), None);
    assert!(run_result(&ok).kernel.scheduler_exit.is_none());
}

#[test]
fn bpf_c_build_errors_name_the_file_line_and_what_the_shim_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#include <scx/common.bpf.h>\n{body}")).unwrap();
        p.display().to_string()
    };
    let ops = "SCX_OPS_DEFINE(t_ops, .enqueue = (void *)t_enqueue, .name = \"t\");\n";
    // An undeclared helper: clang's error at the scheduler's line.
    let f = write(
        "undeclared.bpf.c",
        &format!(
            "void BPF_STRUCT_OPS(t_enqueue, struct task_struct *p, u64 f)\n\
             {{ bpf_no_such_helper(p); }}\n{ops}"
        ),
    );
    let e = bpf_err(&ext_scenario_text("juno-r0", &f, ""));
    assert!(
        e.contains("undeclared.bpf.c:3:") && e.contains("bpf_no_such_helper"),
        "{e}"
    );
    // A kfunc the shim declares nowhere, declared by the scheduler: the link names it.
    let f = write(
        "missing.bpf.c",
        &format!(
            "s32 scx_bpf_cpu_node(s32 cpu);\n\
             void BPF_STRUCT_OPS(t_enqueue, struct task_struct *p, u64 f)\n\
             {{ scx_bpf_dsq_insert(p, scx_bpf_cpu_node(0), SCX_SLICE_DFL, f); }}\n{ops}"
        ),
    );
    let e = bpf_err(&ext_scenario_text("juno-r0", &f, ""));
    assert!(
        e.contains("uses `scx_bpf_cpu_node`, which schedlab's shim does not provide"),
        "{e}"
    );
    // No ops table.
    let f = write("noops.bpf.c", "int x;\n");
    let e = bpf_err(&ext_scenario_text("juno-r0", &f, ""));
    assert!(e.contains("defines no ops table (SCX_OPS_DEFINE)"), "{e}");
    // A missing file, and globals: unknown, not an identifier, on a built-in.
    let e = bpf_err(&ext_scenario_text("juno-r0", "/nonexistent/x.bpf.c", ""));
    assert!(e.contains("/nonexistent/x.bpf.c"), "{e}");
    let fifo = scx_file("scenarios/scx/global_fifo.bpf.c");
    let e = bpf_err(&ext_scenario_text(
        "juno-r0",
        &fifo,
        "[kernel.scheduler_globals]\nnr_nope = 3",
    ));
    assert!(
        e.contains("[kernel.scheduler_globals] nr_nope") && e.contains("nr_nope"),
        "{e}"
    );
    let e = bpf_err(&ext_scenario_text(
        "juno-r0",
        &fifo,
        "[kernel.scheduler_globals]\n\"a-b\" = 3",
    ));
    assert!(e.contains("`a-b` is not a C identifier"), "{e}");
    let e = bpf_err(&ext_scenario_text(
        "juno-r0",
        &fifo,
        "[kernel.scheduler_globals]\nnr_cpus = \"nr_sockets\"",
    ));
    assert!(e.contains("not a fact of the machine"), "{e}");
    let e = bpf_err(&ext_scenario_text(
        "juno-r0",
        "simple",
        "[kernel.scheduler_globals]\nx = 1",
    ));
    assert!(e.contains("sets globals of a BPF C scheduler"), "{e}");
}

/// `three_hogs` under the BPF C scheduler `file` with `globals`.
fn three_hogs_c(
    file: &str,
    globals: &[(String, schedlab::sched::ext::bpf::GlobalValue)],
) -> (schedlab::experiment::RunResult, String) {
    let mut sc = hogs(50);
    let path = scx_file(file);
    sc.tunables.ext_object =
        Some(schedlab::sched::ext::bpf::compile(std::path::Path::new(&path), globals).unwrap());
    sc.tunables.ext_scheduler = Some(path);
    run_ftrace(&sc, 1)
}

#[test]
fn a_bpf_timer_preempts_every_5_ms_and_nothing_else_does() {
    use schedlab::sched::ext::bpf::GlobalValue;
    // Infinite slices: without the timer a (pid 1) and b (pid 2) run their 50 ms
    // to the end on CPUs 0 and 1, and c (3) starts when a exits.
    let off = [("no_timer".to_string(), GlobalValue::Int(1))];
    let (r, trace) = three_hogs_c("scx/timer_preempt.bpf.c", &off);
    let rs = runs(&trace);
    assert_eq!((rs[0].1, rs[0].2), (0, 1), "{rs:?}");
    assert_eq!((rs[1].1, rs[1].2), (1, 2), "{rs:?}");
    assert_eq!(rs[2].2, 3, "{rs:?}");
    assert!(rs[2].0 >= 50 * MS, "{rs:?}");
    assert_eq!(rs.len(), 3, "{rs:?}");
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    // With it: at 5 ms the timer (armed on CPU 0 by ops.init at t = 0) fires on
    // CPU 0 and kicks both CPUs: CPU 0 preempts a at once and takes c, the queue's
    // head; CPU 1 preempts b when the IPI lands and takes a. From then on each
    // 5 ms period rotates the three through the two CPUs; the run still ends
    // when the hogs do, though the timer re-arms itself for ever.
    let (r, trace) = three_hogs_c("scx/timer_preempt.bpf.c", &[]);
    let rs = runs(&trace);
    assert_eq!((rs[2].0, rs[2].1, rs[2].2), (5 * MS, 0, 3), "{rs:?}");
    assert_eq!((rs[3].1, rs[3].2), (1, 1), "{rs:?}");
    assert!(rs[3].0 > 5 * MS && rs[3].0 < 5 * MS + 20_000, "{rs:?}");
    // Every switch but the last (a's exit at ~75 ms hands CPU 0 to c) is a pair
    // on the period: CPU 0 at once, CPU 1 an IPI later; 15 periods to 75 ms.
    let (last, timed) = rs[2..].split_last().unwrap();
    assert_eq!(timed.len(), 30, "{rs:?}");
    for (k, w) in timed.chunks(2).enumerate() {
        let period = (k as u64 + 1) * 5 * MS;
        assert_eq!((w[0].0, w[0].1), (period, 0), "{rs:?}");
        assert!(
            w[1].1 == 1 && w[1].0 > period && w[1].0 < period + 20_000,
            "{rs:?}"
        );
    }
    assert!(last.0 > 75 * MS && last.0 < 80 * MS, "{rs:?}");
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    for t in &r.tasks {
        assert!(t.runtime_ns >= 50 * MS, "{t:?}");
    }
    // The hogs need 150 ms of CPU on 2 CPUs: about 75 ms, ±1 period.
    assert!(
        r.sim_time_ns > 70 * MS && r.sim_time_ns < 85 * MS,
        "{}",
        r.sim_time_ns
    );
}

#[test]
fn central_fifo_hands_out_every_task_from_cpu_0() {
    // scenarios/scx/central_fifo.bpf.c on 2 CPUs, CPU 0 central, three 50 ms hogs.
    let (r, trace) = three_hogs_c("scenarios/scx/central_fifo.bpf.c", &[]);
    let rs = runs(&trace);
    // t = 0: a, b, c (pids 1-3) wait on CPU 0 and in the queue [a, b, c]. CPU 0's
    // dispatch claims idle CPU 1 and hands it a (migrated, kicked: running 2 µs
    // later), then takes b itself.
    assert_eq!(rs[0], (0, 0, 2), "{rs:?}");
    assert_eq!(rs[1], (2000, 1, 1), "{rs:?}");
    // 20 ms: b's slice ends; CPU 1 is busy, so CPU 0 takes c and b joins the queue.
    assert_eq!(rs[2], (20 * MS, 0, 3), "{rs:?}");
    // 24 ms: a's slice ends on CPU 1, whose dispatch finds nothing, raises its hand
    // and kicks CPU 0 with PREEMPT; a is kept (nothing else was found) with a new
    // slice. On the IPI CPU 0 hands b to CPU 1 (migrated at once) and, with the
    // queue empty, keeps c. The IDLE kick does not preempt a busy CPU 1: b waits
    // on its local DSQ until a's new slice ends at 44 ms.
    let mig = |pid: u32| {
        trace
            .lines()
            .filter(|l| l.contains("sched_migrate_task") && l.contains(&format!(" pid={pid} ")))
            .map(|l| {
                let ts = l.split(": ").next().unwrap().rsplit(' ').next().unwrap();
                (ts.parse::<f64>().unwrap() * 1e9).round() as u64
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(mig(2), vec![24 * MS + 2000], "{trace}");
    assert_eq!(rs[3], (44 * MS, 1, 2), "{rs:?}");
    // 48 ms: c's refilled slice ends; CPU 0 takes the queue's head, a (back from
    // CPU 1 at 44 ms), migrating it; at a's exit (50 ms run in all) c follows.
    assert_eq!(rs[4], (48 * MS, 0, 1), "{rs:?}");
    assert_eq!(mig(1), vec![0, 48 * MS], "{trace}");
    assert_eq!((rs[5].1, rs[5].2), (0, 3), "{rs:?}");
    assert!(rs[5].0 > 54 * MS && rs[5].0 < 54 * MS + 100_000, "{rs:?}");
    assert_eq!(rs.len(), 6, "{rs:?}");
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    for t in &r.tasks {
        assert!(t.runtime_ns >= 50 * MS, "{t:?}");
    }
    // On 40 CPUs a round needs more than the 32 dispatch slots: the rest of the
    // hands wait for the central CPU's self-kick, under --check.
    let f = scx_file("scenarios/scx/central_fifo.bpf.c");
    let r = run_result(&scenario_of(&ext_scenario_text("xeon-e5-40", &f, "")));
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
}

#[test]
fn explain_shows_the_ops_and_kfuncs_of_an_ext_placement() {
    use schedlab::experiment::explain::{explain, TaskSel};
    // A scheduler with ops.select_cpu: the op, its kfuncs, its answer.
    let sc = scenario_of(&ext_scenario_text("juno-r0", "simple", ""));
    let e = explain(&sc, &TaskSel::parse("receiver"), 2_000_000)
        .unwrap()
        .unwrap();
    let t = e.text();
    assert!(t.contains("(ext)"), "{t}");
    assert!(t.contains("ops.select_cpu of `simple`"), "{t}");
    assert!(t.contains("scx_bpf_select_cpu_dfl(prev_cpu "), "{t}");
    assert!(
        t.contains(&format!("ops.select_cpu returned CPU {}", e.cpu)),
        "{t}"
    );
    // Without one (a C scheduler with only ops.enqueue): the built-in default.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("enq.bpf.c");
    std::fs::write(
        &f,
        "#include <scx/common.bpf.h>\n\
         void BPF_STRUCT_OPS(e_enqueue, struct task_struct *p, u64 f)\n\
         { scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, f); }\n\
         SCX_OPS_DEFINE(e_ops, .enqueue = (void *)e_enqueue, .name = \"e\");\n",
    )
    .unwrap();
    let sc = native(&ext_scenario_text("juno-r0", &f.display().to_string(), "")).unwrap();
    let e = explain(&sc, &TaskSel::parse("receiver"), 2_000_000)
        .unwrap()
        .unwrap();
    let t = e.text();
    assert!(
        t.contains("no ops.select_cpu: the built-in scx_select_cpu_dfl(prev_cpu "),
        "{t}"
    );
}

#[test]
fn the_watchdog_disables_a_scheduler_that_never_runs_a_runnable_task_and_fair_takes_over() {
    use schedlab::sched::ext::bpf::{compile, GlobalValue};
    // Three tasks that compute 3 s each on 2 CPUs; the scheduler parks c (pid 3)
    // on a DSQ nobody consumes, with a 1 s timeout. Checks run every 500 ms: at
    // 1.0 s c has waited exactly 1 s (not more), at 1.5 s it has: the stall.
    let run = |starved: i64| {
        let mut sc = hogs(3000);
        let path = scx_file("scx/starver.bpf.c");
        let g = [("starved_pid".to_string(), GlobalValue::Int(starved))];
        sc.tunables.ext_object = Some(compile(std::path::Path::new(&path), &g).unwrap());
        sc.tunables.ext_scheduler = Some(path);
        let opts = checked();
        schedlab::experiment::run(&sc, 1, 0, &opts)
    };
    let r = run(3).unwrap().0;
    let x = r
        .kernel
        .scheduler_exit
        .as_ref()
        .expect("the watchdog fired");
    assert_eq!(x.t_ns, 1_500_000_000);
    assert!(
        x.reason
            .contains("runnable task stall (PID 3 failed to run for 1.500s)"),
        "{}",
        x.reason
    );
    // The kernel then moves every task to the fair class: c finally runs. Until
    // 1.5 s the scheduler kept all three on CPU 0 (its select_cpu returns prev_cpu
    // and nothing kicks the idle CPU 1 to dispatch), so a and b had 0.75 s each and
    // c nothing: 7.5 s of work remain on 2 CPUs, and the fair class, pulling c to
    // the idle CPU at once, cannot end before 1.5 + 3.75 = 5.25 s; its balancing
    // and the switches' costs add a little.
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    assert!(r.sim_time_ns >= 5_250_000_000, "{}", r.sim_time_ns);
    assert!(r.sim_time_ns < 5_400_000_000, "{}", r.sim_time_ns);
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(r.tasks[2].migrations, 1, "c: pulled once, by the idle CPU");
    for t in &r.tasks {
        assert!(t.runtime_ns >= 3_000_000_000, "{} {}", t.name, t.runtime_ns);
        assert!(t.exit_ns.is_some(), "{}", t.name);
    }
    // Starving no task: the three share CPU 0 through DSQ 0 (CPU 1 is never
    // kicked) and the run ends under the scheduler.
    let r = run(99).unwrap().0;
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    assert!(r.kernel.scheduler_exit.is_none());
}

#[test]
fn a_task_that_pins_itself_is_never_consumed_by_a_cpu_outside_its_new_affinity() {
    // Three 50 ms hogs on 2 CPUs under the global FIFO: each 20 ms slice ends on
    // the shared DSQ and whichever CPU is free next takes the head. `a` first pins
    // itself to CPU 0 (sched_setaffinity, `set_cpus_allowed_scx`): from then on only
    // CPU 0 may consume it, although CPU 1 keeps taking the others.
    let mut w = W::new();
    let pin = w.spec.masks.len() as u32;
    w.spec
        .masks
        .push(schedlab::machine::CpuMask::from_iter([0]));
    let a = w.prog(
        "a",
        vec![
            Op::SetAffinity {
                mask: pin,
                target: AffinityTarget::Current,
            },
            Op::Compute(c(50 * MS)),
        ],
    );
    let p = w.prog("hog", vec![Op::Compute(c(50 * MS))]);
    w.task("a", a, None);
    w.task("b", p, None);
    w.task("c", p, None);
    let mut sc = scenario(no_idle(test_topology(1, 1, 2, 1)), w.build(), None);
    sc.tunables.ext_scheduler = Some("simple-fifo".to_string());
    let (r, t) = run_ftrace(&sc, 1);
    assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
    let pid_a = r.tasks.iter().find(|x| x.name == "a").unwrap().pid;
    let on: Vec<usize> = runs(&t)
        .into_iter()
        .filter(|&(_, _, p)| p == pid_a)
        .map(|(_, cpu, _)| cpu)
        .collect();
    assert!(on.len() >= 2, "a ran in {} pieces", on.len());
    // Its first piece may be where it started; every later one is on CPU 0.
    assert!(on[1..].iter().all(|&c| c == 0), "a ran on {on:?}");
    let others: Vec<usize> = runs(&t)
        .into_iter()
        .filter(|&(_, _, p)| p != pid_a)
        .map(|(_, cpu, _)| cpu)
        .collect();
    assert!(others.contains(&1), "CPU 1 ran the others: {others:?}");
}

#[test]
fn the_fair_class_takes_over_mid_run_with_its_invariants_under_cfs_and_eevdf() {
    // hackbench on big.LITTLE Juno under a scheduler that starves PID 5: at 1.5 s the
    // watchdog disables it with tasks running, queued on local DSQs and waiting on
    // the shared one; every event after that runs under --check with the fair
    // class's own invariants (rbtree contents, nr_running, load sums), for v5.6 CFS
    // and v6.12 EEVDF alike, and the benchmark completes.
    let f = scx_file("scx/starver.bpf.c");
    for preset in ["v5.6", "v6.12"] {
        let text = ext_scenario_text("juno-r0", &f, "[kernel.scheduler_globals]\nstarved_pid = 5")
            .replace("preset = \"v5.6\"", &format!("preset = \"{preset}\""));
        let sc = native(&text).unwrap();
        let opts = checked();
        let r = schedlab::experiment::run(&sc, 1, 0, &opts).unwrap().0;
        let x = r
            .kernel
            .scheduler_exit
            .as_ref()
            .expect("the watchdog fired");
        assert_eq!(x.t_ns, 1_500_000_000, "{preset}");
        assert!(
            x.reason.contains("PID 5 failed to run"),
            "{preset}: {}",
            x.reason
        );
        assert_eq!(r.workload.stop_reason, schedlab::sim::StopReason::Completed);
        let starved = r.tasks.iter().find(|t| t.pid == 5).unwrap();
        assert!(starved.exit_ns.unwrap() > 1_500_000_000, "{preset}");
        assert!(r.metrics.placement_reasons.contains_key("ext"), "{preset}");
        assert!(
            r.metrics.placement_reasons.keys().any(|k| *k != "ext"),
            "{preset}: the fair class placed wakeups after the switch: {:?}",
            r.metrics.placement_reasons
        );
    }
}
