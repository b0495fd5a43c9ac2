//! `schedlab bench`: simulated events per wall second, simulated seconds per wall
//! second (`sim/wall`) and peak memory on the fixed scenarios of
//! `schedlab::experiment::bench`.

use schedlab::experiment::{self, bench, RunOpts};

/// Peak resident memory of this process (`VmHWM`), in MB.
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run(only: &[String], scale: f64) -> Result<(), String> {
    crate::outln!(
        "{:<8} {:>11} {:>12} {:>9} {:>12} {:>10} {:>9} {:>10} {:>10} {:>9}",
        "case",
        "cpus/tasks",
        "events",
        "wall s",
        "events/s",
        "ns/event",
        "peak MB",
        "stale",
        "max queue",
        "sim/wall"
    );
    for name in bench::CASES {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let sc = bench::case(name, scale).ok_or_else(|| format!("no bench case `{name}`"))?;
        let t0 = std::time::Instant::now();
        let mut sim = experiment::build(&sc, 1, 0, &RunOpts::default());
        sim.run(sc.duration_ns).map_err(|e| e.to_string())?;
        let wall = t0.elapsed().as_secs_f64();
        let r = sim.stats();
        crate::outln!(
            "{:<8} {:>11} {:>12} {:>9.3} {:>12.0} {:>10.1} {:>9.1} {:>10} {:>10} {:>9.4}",
            name,
            format!("{}/{}", sc.machine.nr_cpus(), sc.workload.tasks.len()),
            r.events,
            wall,
            r.events as f64 / wall,
            wall * 1e9 / r.events as f64,
            peak_rss_mb().unwrap_or(f64::NAN),
            r.stale,
            r.max_queue,
            sc.duration_ns.unwrap_or(0) as f64 / 1e9 / wall
        );
    }
    Ok(())
}
