//! `schedlab explain`: why was this CPU chosen?
//!
//! A regression hunt in placement ends at one question about one wakeup: which
//! functions ran, which CPUs they read in which order and what they saw, and which
//! rule picked the CPU. The kernel cannot answer it after the fact; the simulator
//! can replay the run with *probe logging* on: every CPU a search reads becomes a
//! `SchedEvent::Probe` (its idle state and `nr_running` as the search saw them),
//! emitted in execution order before the `FuncCall` of the function that read it.
//! Each function reports its `FuncCall` when it returns, with its inclusive probe
//! count, so the `FuncCall` covers exactly the last `probed` probes before it; a
//! callee's range nests inside its caller's, and a function's own probes are its
//! range minus its callees'. The explanation is rebuilt from that.
//!
//! The replay is the same run (same scenario, seed and features): probe logging
//! changes no decision and no cost.

use crate::experiment::{build, RunOpts, Scenario};
use crate::metrics::EventLog;
use crate::sched::{Func, Pid, SchedEvent, WakeKind};
use crate::sim::SimError;
use std::fmt::Write as _;

/// Which task to explain: by pid, or by name (any task of that name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskSel {
    Pid(Pid),
    Name(String),
}

impl TaskSel {
    pub fn parse(s: &str) -> TaskSel {
        match s.parse::<Pid>() {
            Ok(p) => TaskSel::Pid(p),
            Err(_) => TaskSel::Name(s.to_string()),
        }
    }
}

/// Probes as text, consecutive CPUs in the same state folded into ranges:
/// `0 busy(nr_running=1), 1-21 idle, 44 idle`.
fn runs_text(probes: &[(usize, bool, u32)]) -> Vec<String> {
    let mut out = vec![];
    let mut i = 0;
    while i < probes.len() {
        let (c0, idle, nr) = probes[i];
        let mut j = i;
        while j + 1 < probes.len() && probes[j + 1] == (probes[j].0 + 1, idle, nr) {
            j += 1;
        }
        let cpus = if j > i {
            format!("{c0}-{}", probes[j].0)
        } else {
            c0.to_string()
        };
        out.push(if idle {
            format!("{cpus} idle")
        } else {
            format!("{cpus} busy(nr_running={nr})")
        });
        i = j + 1;
    }
    out
}

/// Whether `parent` calls `child` (the instrumented call graph).
fn calls_fn(parent: Func, child: Func) -> bool {
    use Func::*;
    matches!(
        (parent, child),
        (SelectTaskRqFair, SelectIdleSibling | FindIdlestCpu)
            | (
                SelectIdleSibling,
                SelectIdleCore | SelectIdleCpu | SelectIdleSmt | SmtBalance
            )
            | (SmtBalance, SelectIdleSmt)
    )
}

/// How far around `at` events are kept (ns).
const WINDOW_NS: u64 = 20_000_000;

/// Replay `sc` with probe logging up to `at_ns` + a window and explain the placement
/// of the selected task closest to `at_ns`. `Ok(None)` when the task was never
/// placed in the window.
pub fn explain(sc: &Scenario, task: &TaskSel, at_ns: u64) -> Result<Option<String>, SimError> {
    let mut sim = build(sc, sc.seed, 0, &RunOpts::default());
    sim.k.log_probes = true;
    sim.k.obs.log = Some(EventLog::new((
        at_ns.saturating_sub(WINDOW_NS),
        at_ns + WINDOW_NS,
    )));
    let end = at_ns + WINDOW_NS;
    let stop = sc.duration_ns.map_or(end, |d| d.min(end));
    sim.run(Some(stop))?;
    let log = sim.k.obs.log.take().expect("log set above").events;
    let matches = |pid: Pid| match task {
        TaskSel::Pid(p) => *p == pid,
        TaskSel::Name(n) => sim.k.tasks.get(pid as usize).is_some_and(|t| &t.name == n),
    };
    // The placement of a matching task closest to `at`.
    let Some(pi) = log
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| matches!(e, SchedEvent::Placement { pid, .. } if matches(*pid)))
        .min_by_key(|(_, (t, _))| t.abs_diff(at_ns))
        .map(|(i, _)| i)
    else {
        return Ok(None);
    };
    let (
        t,
        SchedEvent::Placement {
            pid,
            kind,
            prev_cpu,
            cpu,
            reason,
        },
    ) = log[pi]
    else {
        unreachable!("selected a placement")
    };
    // The decision's events: back from the placement over its probes and calls.
    let mut start = pi;
    while start > 0 {
        let (t0, e) = &log[start - 1];
        if *t0 != t || !matches!(e, SchedEvent::Probe { .. } | SchedEvent::FuncCall { .. }) {
            break;
        }
        start -= 1;
    }
    let waker = log[..start].iter().rev().find_map(|(t0, e)| match e {
        SchedEvent::Waking {
            pid: p, waker_cpu, ..
        } if *t0 == t && *p == pid => Some(*waker_cpu),
        _ => None,
    });
    let name = sim.k.tasks[pid as usize].name.clone();
    let mut s = String::new();
    let kind_s = match kind {
        WakeKind::Wakeup => "wakeup",
        WakeKind::Fork => "fork",
        WakeKind::Exec => "exec",
        WakeKind::Balance => "load-balance move",
    };
    let _ = writeln!(
        s,
        "t = {t} ns ({:.6} ms): {kind_s} of pid {pid} `{name}`{}, prev CPU {prev_cpu} -> CPU {cpu} ({reason})",
        t as f64 / 1e6,
        waker.map(|w| format!(" by CPU {w}")).unwrap_or_default()
    );
    // Probes in order, and each call's range over them.
    let mut probes: Vec<(usize, bool, u32)> = vec![];
    let mut calls: Vec<(Func, usize, usize, u64)> = vec![];
    for (_, e) in &log[start..pi] {
        match *e {
            SchedEvent::Probe {
                target,
                idle,
                nr_running,
                ..
            } => probes.push((target, idle, nr_running)),
            SchedEvent::FuncCall {
                func,
                probed,
                cost_ns,
                ..
            } => {
                let end = probes.len();
                calls.push((func, end.saturating_sub(probed as usize), end, cost_ns));
            }
            _ => {}
        }
    }
    if calls.is_empty() {
        let _ = writeln!(s, "  no search ran ({reason})");
        return Ok(Some(s));
    }
    // The call tree: a call adopts the pending calls emitted before it that it can
    // call and whose ranges lie within its own (callees report first; a callee that
    // probed nothing has an empty range, which only the call graph places).
    let mut children: Vec<Vec<usize>> = vec![vec![]; calls.len()];
    let mut pending: Vec<usize> = vec![];
    for (i, &(f, a, b, _)) in calls.iter().enumerate() {
        let (inside, rest): (Vec<usize>, Vec<usize>) = pending
            .iter()
            .partition(|&&j| calls_fn(f, calls[j].0) && calls[j].1 >= a && calls[j].2 <= b);
        children[i] = inside;
        pending = rest;
        pending.push(i);
    }
    fn render(
        s: &mut String,
        i: usize,
        depth: usize,
        calls: &[(Func, usize, usize, u64)],
        children: &[Vec<usize>],
        probes: &[(usize, bool, u32)],
    ) {
        let (func, a, b, cost) = calls[i];
        let own: Vec<(usize, bool, u32)> = (a..b)
            .filter(|&p| {
                !children[i]
                    .iter()
                    .any(|&c| calls[c].1 <= p && p < calls[c].2)
            })
            .map(|p| probes[p])
            .collect();
        let own = runs_text(&own);
        let _ = write!(
            s,
            "{}{}: {} CPUs probed, {cost} ns charged",
            "  ".repeat(depth + 1),
            func.name(),
            b - a
        );
        if own.is_empty() {
            let _ = writeln!(s);
        } else {
            let _ = writeln!(s, "; read in order: {}", own.join(", "));
        }
        for &c in &children[i] {
            render(s, c, depth + 1, calls, children, probes);
        }
    }
    for &root in &pending {
        render(&mut s, root, 0, &calls, &children, &probes);
    }
    Ok(Some(s))
}
