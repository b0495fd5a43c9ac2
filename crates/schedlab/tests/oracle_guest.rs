//! End-to-end runs of the QEMU guest runner (issue 14). They boot a real kernel
//! under TCG, so they run only when asked:
//!
//! - `SCHEDLAB_ORACLE_E2E=1 cargo test -p schedlab --test oracle_guest -- --nocapture`:
//!   one boot of 5.10 on `1s2c2t` with one tiny rt-app job (the CI case: measured
//!   8–16 s for `run_guest` on a 2-core host with the kernel cached, +6 s to fetch
//!   it into an empty cache; 25 s on a host loaded by other builds).
//! - `SCHEDLAB_ORACLE_E2E=full` plus `SCHEDLAB_ORACLE_TOPO` (e.g. `2s4c2t:nodes=2`),
//!   `SCHEDLAB_ORACLE_KERNEL` (`5.10` | `6.12`), optional `SCHEDLAB_ORACLE_OUT`: the
//!   measurement run, 8 rt-app hogs of 200 ms and `hackbench -g 2 -l 100` (pipes,
//!   then sockets). Optional for both: `SCHEDLAB_ORACLE_ACCEL` (`single` | `multi`),
//!   `SCHEDLAB_ORACLE_TIMEOUT_S`, `SCHEDLAB_ORACLE_ATTEMPTS`, `SCHEDLAB_ORACLE_CACHE`.
//!
//! Each checks that the imported guest machine has the asked topology, that every
//! `sched_*` line of every trace parses, and that no event was dropped.

use std::path::PathBuf;

use schedlab::experiment::oracle::guest::qemu::{AccelThreads, GuestTopology};
use schedlab::experiment::oracle::guest::{run_guest, GuestJob, GuestRequest, KernelChoice};
use schedlab::machine::sysfs::import_sysfs;
use schedlab::metrics::ftrace_stats::parse_line;

fn rtapp_job(name: &str, threads: usize, runtime_us: u64) -> GuestJob {
    let json = format!(
        r#"{{"global": {{"calibration": 100, "default_policy": "SCHED_OTHER", "logdir": "/tmp", "log_basename": "rtapp"}},
 "tasks": {{"hog": {{"instance": {threads}, "loop": 1, "phases": {{"p0": {{"loop": 1, "runtime": {runtime_us}}}}}}}}}}}"#
    );
    GuestJob {
        name: name.into(),
        command: "rt-app hogs.json".into(),
        files: vec![("hogs.json".into(), json.into_bytes())],
    }
}

fn check(run: &schedlab::experiment::oracle::guest::GuestRun, topo: &GuestTopology) {
    let out = &run.out_dir;
    let m = import_sysfs(&out.join("sysfs")).expect("import the guest's sysfs");
    // The orchestrator's view of the same run (no calibration job: the sysfs import).
    let art = schedlab::experiment::oracle::Artifacts::open(out).unwrap();
    assert_eq!(art.machine().unwrap().0.nr_cpus(), m.nr_cpus());
    assert_eq!(m.nr_cpus(), topo.nr_cpus());
    assert_eq!(m.nr_nodes(), topo.node_sockets.len());
    assert_eq!(m.numa_distance, topo.distances);
    let per_socket = topo.cores * topo.threads;
    for c in 0..m.nr_cpus() {
        let sock = c / per_socket;
        let smt: Vec<usize> = m.smt_mask(c).iter().collect();
        assert_eq!(
            smt,
            (c / topo.threads * topo.threads..(c / topo.threads + 1) * topo.threads)
                .collect::<Vec<_>>(),
            "cpu{c} SMT"
        );
        let pkg: Vec<usize> = m.package_mask(c).iter().collect();
        assert_eq!(
            pkg,
            (sock * per_socket..(sock + 1) * per_socket).collect::<Vec<_>>(),
            "cpu{c} package"
        );
        assert_eq!(
            m.llc_mask(c),
            m.package_mask(c),
            "cpu{c}: the L3 is the socket"
        );
    }
    assert!(out.join("domains/cpu0/domain0").is_dir(), "domains saved");
    for j in &run.meta.jobs {
        let text =
            std::fs::read_to_string(out.join("jobs").join(&j.name).join("trace.txt")).unwrap();
        let mut n = 0;
        for l in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(": sched_"))
        {
            let p = parse_line(l).unwrap_or_else(|| panic!("unparsed: {l}"));
            assert!(p.event.starts_with("sched_"));
            n += 1;
        }
        assert!(n > 0, "job {} traced nothing", j.name);
        assert_eq!(j.exit_status, 0, "job {}", j.name);
        assert_eq!((j.dropped_events, j.overrun), (0, 0), "job {}", j.name);
        eprintln!(
            "job {}: {:.2} guest s, {} sched lines, {} bytes",
            j.name, j.seconds, n, j.trace_bytes
        );
    }
    eprintln!(
        "kernel {} boot {:.1} s (guest uptime {:.1} s), wall {:.1} s, attempts {}",
        run.meta.kernel_release,
        run.meta.host_boot_s,
        run.meta.boot_s,
        run.meta.wall_s,
        run.meta.attempts.len()
    );
}

#[test]
fn guest_e2e() {
    let mode = std::env::var("SCHEDLAB_ORACLE_E2E").unwrap_or_default();
    if mode.is_empty() || mode == "0" {
        eprintln!("skipped: set SCHEDLAB_ORACLE_E2E=1 (or =full) to boot a QEMU guest");
        return;
    }
    let full = mode == "full";
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let topo = GuestTopology::parse(&env(
        "SCHEDLAB_ORACLE_TOPO",
        if full { "1s4c2t" } else { "1s2c2t" },
    ))
    .unwrap();
    let kernel = KernelChoice::parse(&env("SCHEDLAB_ORACLE_KERNEL", "5.10")).unwrap();
    let jobs = if full {
        vec![
            rtapp_job("rtapp8", 8, 200_000),
            GuestJob {
                name: "hackbench-pipe".into(),
                command: "hackbench -p -g 2 -l 100".into(),
                files: vec![],
            },
            GuestJob {
                name: "hackbench-socket".into(),
                command: "hackbench -g 2 -l 100".into(),
                files: vec![],
            },
        ]
    } else {
        vec![rtapp_job("rtapp2", 2, 50_000)]
    };
    let mut req = GuestRequest::new(topo.clone(), kernel, jobs);
    if !full {
        req.mem_mb = 512;
        req.buffer_kb = 4096;
    }
    if let Ok(a) = std::env::var("SCHEDLAB_ORACLE_ACCEL") {
        req.accel_threads = AccelThreads::parse(&a).unwrap();
    }
    if let Ok(t) = std::env::var("SCHEDLAB_ORACLE_TIMEOUT_S") {
        req.timeout = std::time::Duration::from_secs(t.parse().unwrap());
    }
    if let Ok(n) = std::env::var("SCHEDLAB_ORACLE_ATTEMPTS") {
        req.attempts = n.parse().unwrap();
    }
    let out = match std::env::var_os("SCHEDLAB_ORACLE_OUT") {
        Some(p) => PathBuf::from(p),
        None => std::env::temp_dir().join(format!("schedlab-oracle-e2e-{}", std::process::id())),
    };
    let t = std::time::Instant::now();
    let run = run_guest(&req, &out).expect("guest run");
    eprintln!("run_guest: {:.1} s total", t.elapsed().as_secs_f64());
    check(&run, &topo);
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    assert!(meta.contains("\"kernel_release\""));
    if std::env::var_os("SCHEDLAB_ORACLE_OUT").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    }
}
