//! Scheduler statistics from ftrace text, real or simulated.
//!
//! The kernel's `sched_*` tracepoints are the common ground between a real run and
//! a simulated one: `/sys/kernel/tracing/trace` on the host prints them, and
//! [`super::ftrace::render`] prints the simulator's events in the same layout. This
//! module reads either text with one parser and derives the statistics a scheduler
//! engineer would look at first, defined exactly as the run's own counters
//! ([`super::Collector`]) define them, so that the simulator's text gives back its
//! counters:
//!
//! * **context switches**: `sched_switch` lines (every switch, idle included);
//! * **wakeups**: `sched_waking` lines;
//! * **wakeup latency**: from a task's latest `sched_waking` to the `sched_switch`
//!   that switches it in (`next_pid`), p50/p90/p99 and mean;
//! * **migrations**: `sched_migrate_task` lines;
//! * **per-CPU busy time**: time between a `sched_switch` from the idle task
//!   (`prev_pid=0`) and the next one to it (`next_pid=0`) on that CPU; a CPU is
//!   taken as idle before its first `sched_switch`. The busy *fraction* divides by
//!   the window from the first to the last counted event.
//!
//! Lines are `<comm>-<pid> [(<tgid>)] [<cpu>] <flags> <secs>.<frac>: <event>: <k=v …>`:
//! the real kernel prints 6 decimals (µs) and, unless `record-tgid` is set, no
//! tgid column; the simulator prints 9 (ns) and the tgid. The CPU column is found
//! as the first `[digits]` token, so comms with spaces or dashes parse. Comments
//! (`#`) and lines of other events are skipped.
//!
//! A real trace of a shared machine holds other processes too (kworkers, other
//! jobs): [`TraceStats::from_text`] takes a comm filter. With a filter, only tasks
//! whose comm matches count: their wakeups, latencies and migrations, switches
//! with such a task on either side, busy time while such a task runs, and a window
//! from the first to the last event naming one of them.

use std::collections::BTreeMap;

/// One parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub cpu: usize,
    pub ts_ns: u64,
    pub event: &'a str,
    /// `key=value` fields of the payload (the `==>` of `sched_switch` dropped).
    pub fields: Vec<(&'a str, &'a str)>,
}

impl<'a> Line<'a> {
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn num(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.parse().ok())
    }
}

/// `secs.frac` (any number of decimals up to 9) in ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (a, b) = s.split_once('.')?;
    if b.is_empty() || b.len() > 9 || !b.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = a.parse().ok()?;
    let frac: u64 = b.parse().ok()?;
    Some(secs * 1_000_000_000 + frac * 10u64.pow(9 - b.len() as u32))
}

/// Parse one trace line; `None` for comments and lines that are not events.
pub fn parse_line(l: &str) -> Option<Line<'_>> {
    if l.trim_start().starts_with('#') {
        return None;
    }
    // The CPU column: the first `[digits]`.
    let mut from = 0;
    let (cpu, rest) = loop {
        let i = from + l[from..].find('[')?;
        let j = i + l[i..].find(']')?;
        let inner = &l[i + 1..j];
        if !inner.is_empty() && inner.bytes().all(|c| c.is_ascii_digit()) {
            break (inner.parse().ok()?, &l[j + 1..]);
        }
        from = i + 1;
    };
    let mut it = rest.split_whitespace();
    let mut tok = it.next()?;
    // Flags column (`d..2.`), absent when the irq-info option is off.
    if !tok.ends_with(':') {
        tok = it.next()?;
    }
    let ts_ns = parse_ts(tok.strip_suffix(':')?)?;
    let event = it.next()?.strip_suffix(':')?;
    let fields = it.filter_map(|kv| kv.split_once('=')).collect();
    Some(Line {
        cpu,
        ts_ns,
        event,
        fields,
    })
}

/// Percentiles of a sorted sample (nearest rank).
fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The statistics of one trace.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraceStats {
    pub context_switches: u64,
    pub wakeups: u64,
    pub migrations: u64,
    /// Wakeup latencies, sorted, in ns.
    #[serde(skip)]
    pub latencies_ns: Vec<u64>,
    pub latency_p50_ns: u64,
    pub latency_p90_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_mean_ns: f64,
    /// Busy ns per CPU (index = CPU number).
    pub busy_ns: Vec<u64>,
    /// First and last counted event.
    pub window_ns: (u64, u64),
    /// Lines that were events but could not be parsed.
    pub unparsed: u64,
}

impl TraceStats {
    /// Busy fraction of each CPU over the window.
    pub(crate) fn busy_fraction(&self) -> Vec<f64> {
        let w = self.window_ns.1.saturating_sub(self.window_ns.0);
        self.busy_ns
            .iter()
            .map(|&b| if w == 0 { 0.0 } else { b as f64 / w as f64 })
            .collect()
    }

    /// Statistics of `text`; with `comm`, only tasks of that comm count.
    pub fn from_text(text: &str, comm: Option<&str>) -> TraceStats {
        let mut lines = Vec::new();
        let mut unparsed = 0;
        for l in text.lines() {
            match parse_line(l) {
                Some(x) => lines.push(x),
                None if !l.trim_start().starts_with('#') && !l.trim().is_empty() => unparsed += 1,
                None => {}
            }
        }
        // The pids of the filtered comm, from every comm field naming one.
        let ours: Option<std::collections::BTreeSet<u64>> = comm.map(|c| {
            let mut s = std::collections::BTreeSet::new();
            for l in &lines {
                for (ck, pk) in [
                    ("prev_comm", "prev_pid"),
                    ("next_comm", "next_pid"),
                    ("comm", "pid"),
                    ("child_comm", "child_pid"),
                ] {
                    if l.get(ck) == Some(c) {
                        if let Some(p) = l.num(pk) {
                            s.insert(p);
                        }
                    }
                }
            }
            s
        });
        let is_ours = |p: Option<u64>| match (&ours, p) {
            (None, _) => true,
            (Some(s), Some(p)) => s.contains(&p),
            (Some(_), None) => false,
        };
        let nr_cpus = lines.iter().map(|l| l.cpu + 1).max().unwrap_or(0);
        let mut st = TraceStats {
            busy_ns: vec![0; nr_cpus],
            unparsed,
            ..Default::default()
        };
        let mut since: Vec<Option<u64>> = vec![None; nr_cpus];
        let mut waking: BTreeMap<u64, u64> = BTreeMap::new();
        let mut window: Option<(u64, u64)> = None;
        let mut touch = |t: u64| {
            window = Some(match window {
                None => (t, t),
                Some((a, b)) => (a.min(t), b.max(t)),
            })
        };
        for l in &lines {
            let t = l.ts_ns;
            match l.event {
                "sched_switch" => {
                    let (prev, next) = (l.num("prev_pid"), l.num("next_pid"));
                    let (po, no) = (is_ours(prev), is_ours(next));
                    if !(po || no) {
                        continue;
                    }
                    touch(t);
                    st.context_switches += 1;
                    // Busy while a counted task runs (any task without a filter).
                    let busy_prev = prev.is_some_and(|p| p != 0) && po;
                    let busy_next = next.is_some_and(|p| p != 0) && no;
                    if busy_prev && !busy_next {
                        if let Some(s) = since[l.cpu].take() {
                            st.busy_ns[l.cpu] += t.saturating_sub(s);
                        }
                    }
                    if busy_next && since[l.cpu].is_none() {
                        since[l.cpu] = Some(t);
                    }
                    if let Some(n) = next.filter(|_| no) {
                        if let Some(w) = waking.remove(&n) {
                            st.latencies_ns.push(t.saturating_sub(w));
                        }
                    }
                }
                "sched_waking" => {
                    let p = l.num("pid");
                    if is_ours(p) {
                        touch(t);
                        st.wakeups += 1;
                        if let Some(p) = p {
                            waking.insert(p, t);
                        }
                    }
                }
                "sched_migrate_task" => {
                    if is_ours(l.num("pid")) {
                        touch(t);
                        st.migrations += 1;
                    }
                }
                _ => {
                    let p = l.num("pid").or_else(|| l.num("child_pid"));
                    if ours.is_some() && p.is_some() && is_ours(p) {
                        touch(t);
                    }
                }
            }
        }
        st.window_ns = window.unwrap_or((0, 0));
        // Close busy intervals still open at the end of the window.
        for (cpu, s) in since.iter().enumerate() {
            if let Some(s) = s {
                st.busy_ns[cpu] += st.window_ns.1.saturating_sub(*s);
            }
        }
        st.latencies_ns.sort_unstable();
        let n = st.latencies_ns.len();
        st.latency_p50_ns = pct(&st.latencies_ns, 50.0);
        st.latency_p90_ns = pct(&st.latencies_ns, 90.0);
        st.latency_p99_ns = pct(&st.latencies_ns, 99.0);
        st.latency_mean_ns = if n == 0 {
            0.0
        } else {
            st.latencies_ns.iter().map(|&x| x as f64).sum::<f64>() / n as f64
        };
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written real-layout trace (6 decimals, no tgid column, one kworker
    /// that the `hackbench` filter must ignore).
    const REAL: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 12/12   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [000] d..2.   100.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hackbench next_pid=10 next_prio=120
       hackbench-10      [000] d..2.   100.000010: sched_waking: comm=hackbench pid=11 prio=120 target_cpu=001
          <idle>-0       [001] d..2.   100.000030: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hackbench next_pid=11 next_prio=120
       hackbench-10      [000] d..2.   100.000040: sched_waking: comm=hackbench pid=12 prio=120 target_cpu=000
       hackbench-10      [000] d..2.   100.000050: sched_switch: prev_comm=hackbench prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=hackbench next_pid=12 next_prio=120
       hackbench-11      [001] d..2.   100.000060: sched_migrate_task: comm=hackbench pid=10 prio=120 orig_cpu=0 dest_cpu=1
     kworker/1:1-77      [001] d..2.   100.000065: sched_waking: comm=kworker/1:1 pid=77 prio=120 target_cpu=001
       hackbench-11      [001] d..2.   100.000070: sched_switch: prev_comm=hackbench prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
       hackbench-12      [000] d..2.   100.000090: sched_waking: comm=hackbench pid=10 prio=120 target_cpu=001
          <idle>-0       [001] d..2.   100.000130: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hackbench next_pid=10 next_prio=120
       hackbench-12      [000] d..2.   100.000150: sched_switch: prev_comm=hackbench prev_pid=12 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120
       hackbench-10      [001] d..2.   100.000200: sched_switch: prev_comm=hackbench prev_pid=10 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn timestamps_of_6_and_9_decimals() {
        assert_eq!(parse_ts("100.000010"), Some(100_000_010_000));
        assert_eq!(parse_ts("0.000000123"), Some(123));
        assert_eq!(parse_ts("1.5"), Some(1_500_000_000));
        assert_eq!(parse_ts("1."), None);
        assert_eq!(parse_ts("1.0000000001"), None);
    }

    #[test]
    fn lines_of_both_layouts() {
        let real = parse_line("     kworker/1:1-77      [001] d..2.   100.000065: sched_waking: comm=kworker/1:1 pid=77 prio=120 target_cpu=001").unwrap();
        assert_eq!(
            (real.cpu, real.ts_ns, real.event),
            (1, 100_000_065_000, "sched_waking")
        );
        assert_eq!(real.get("pid"), Some("77"));
        let sim = parse_line("           hackbench-3 (      1) [002] d..2.     0.000123456: sched_migrate_task: comm=hackbench pid=3 prio=120 orig_cpu=1 dest_cpu=2").unwrap();
        assert_eq!(
            (sim.cpu, sim.ts_ns, sim.event),
            (2, 123_456, "sched_migrate_task")
        );
        assert_eq!(sim.get("dest_cpu"), Some("2"));
        // A comm with a space and brackets before the CPU column.
        let odd =
            parse_line("  Web Content [x]-9 [000] ..... 5.000001: sched_waking: comm=a pid=9")
                .unwrap();
        assert_eq!((odd.cpu, odd.ts_ns), (0, 5_000_001_000));
        assert!(parse_line("# tracer: nop").is_none());
    }

    #[test]
    fn hand_computed_statistics_with_the_comm_filter() {
        let s = TraceStats::from_text(REAL, Some("hackbench"));
        // Switches: all 7 involve hackbench; the kworker's waking is not counted.
        assert_eq!(s.context_switches, 7);
        assert_eq!(s.wakeups, 3);
        assert_eq!(s.migrations, 1);
        // Latencies: pid 11 waking 10 → in 30 (20 µs); pid 12 40 → 50 (10 µs);
        // pid 10 90 → 130 (40 µs).
        assert_eq!(s.latencies_ns, vec![10_000, 20_000, 40_000]);
        assert_eq!(s.latency_p50_ns, 20_000);
        assert_eq!(s.latency_p90_ns, 40_000);
        assert!((s.latency_mean_ns - 70_000.0 / 3.0).abs() < 1e-6);
        // CPU 0 busy 0 → 150 µs; CPU 1 busy 30 → 70 and 130 → 200 µs = 110 µs.
        assert_eq!(s.busy_ns, vec![150_000, 110_000]);
        assert_eq!(s.window_ns, (100_000_000_000, 100_000_200_000));
        assert_eq!(s.busy_fraction(), vec![0.75, 0.55]);
        assert_eq!(s.unparsed, 0);
        // Without the filter the kworker's waking counts (it is never switched in).
        let all = TraceStats::from_text(REAL, None);
        assert_eq!(all.wakeups, 4);
        assert_eq!(all.latencies_ns.len(), 3);
    }
}
