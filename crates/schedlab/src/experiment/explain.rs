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

    /// Whether the task `pid` named `name` is selected: by pid, by its name, or
    /// by its group's name (`client` selects `client-0`, `client-1`, ...).
    pub fn selects(&self, pid: Pid, name: &str) -> bool {
        match self {
            TaskSel::Pid(p) => *p == pid,
            TaskSel::Name(n) => {
                name == n
                    || name.strip_prefix(n.as_str()).is_some_and(|rest| {
                        rest.strip_prefix('-')
                            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    })
            }
        }
    }
}

/// Why there is nothing to explain.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Missing {
    /// The task exists but was not placed within the window around the time.
    NoPlacement,
    /// No task is selected; the names the run has, groups folded (`client-0..3`).
    NoTask(Vec<String>),
}

/// The run's task names, each group of `NAME-<i>` folded into `NAME-<first>..<last>`.
fn folded_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    let mut plain: std::collections::BTreeSet<String> = Default::default();
    for n in names {
        match n
            .rsplit_once('-')
            .and_then(|(g, i)| Some((g, i.parse::<u64>().ok()?)))
        {
            Some((g, i)) => groups.entry(g.to_string()).or_default().push(i),
            None => {
                plain.insert(n.to_string());
            }
        }
    }
    let mut out: Vec<String> = plain.into_iter().collect();
    for (g, mut ix) in groups {
        ix.sort_unstable();
        match (ix.first(), ix.last()) {
            (Some(a), Some(b)) if a != b => out.push(format!("{g}-{a}..{b}")),
            (Some(a), _) => out.push(format!("{g}-{a}")),
            _ => {}
        }
    }
    out.sort();
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

/// One CPU as a search read it: its id, idle, and `nr_running`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeSeen {
    pub cpu: usize,
    pub idle: bool,
    pub nr_running: u32,
}

/// One instrumented call of the decision, with what it read itself (not through
/// its callees) and its callees, as indices into [`Explanation::calls`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExplainedCall {
    pub func: Func,
    /// CPUs it probed, its callees' included.
    pub probed: usize,
    pub cost_ns: u64,
    /// The CPUs it read itself, in order.
    pub own: Vec<ProbeSeen>,
    pub children: Vec<usize>,
}

/// One placement explained: the decision, and the call tree that made it
/// (`report/explain.rs` prints it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Explanation {
    pub t_ns: u64,
    pub kind: WakeKind,
    pub pid: Pid,
    pub name: String,
    /// The CPU the waker ran on (wakeups only).
    pub waker_cpu: Option<usize>,
    pub prev_cpu: usize,
    pub cpu: usize,
    #[serde(deserialize_with = "crate::engine::wire::de_static")]
    pub reason: crate::engine::wire::Name,
    pub calls: Vec<ExplainedCall>,
    /// The top-level calls, in order (empty: no search ran).
    pub roots: Vec<usize>,
    /// A sched_ext placement: the ops and kfuncs that made it, in order.
    pub ext: Vec<String>,
}

/// How far around `at` events are kept (ns).
const WINDOW_NS: u64 = 20_000_000;

/// Replay `sc` with probe logging up to `at_ns` + a window and explain the placement
/// of the selected task closest to `at_ns`; [`Missing`] when no task is selected
/// or the task was never placed in the window.
pub fn explain(
    sc: &Scenario,
    task: &TaskSel,
    at_ns: u64,
) -> Result<Result<Explanation, Missing>, SimError> {
    match super::native_scheduler(sc) {
        Some((name, object)) => {
            super::sandbox::contained(name, object, || explain_here(sc, task, at_ns))
                .map_err(|msg| SimError::Sandbox { msg })?
        }
        None => explain_here(sc, task, at_ns),
    }
}

fn explain_here(
    sc: &Scenario,
    task: &TaskSel,
    at_ns: u64,
) -> Result<Result<Explanation, Missing>, SimError> {
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
    let matches = |pid: Pid| {
        sim.k
            .tasks
            .get(pid as usize)
            .is_some_and(|t| pid != 0 && task.selects(pid, &t.name))
    };
    if !(1..sim.k.tasks.len()).any(|p| matches(p as Pid)) {
        return Ok(Err(Missing::NoTask(folded_names(
            sim.k.tasks.iter().skip(1).map(|t| t.name.as_str()),
        ))));
    }
    // The placement of a matching task closest to `at`.
    let Some(pi) = log
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| matches!(e, SchedEvent::Placement { pid, .. } if matches(*pid)))
        .min_by_key(|(_, (t, _))| t.abs_diff(at_ns))
        .map(|(i, _)| i)
    else {
        return Ok(Err(Missing::NoPlacement));
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
    // Probes in order, and each call's range over them.
    let mut probes: Vec<ProbeSeen> = vec![];
    let mut ranges: Vec<(Func, usize, usize, u64)> = vec![];
    for (_, e) in &log[start..pi] {
        match *e {
            SchedEvent::Probe {
                target,
                idle,
                nr_running,
                ..
            } => probes.push(ProbeSeen {
                cpu: target,
                idle,
                nr_running,
            }),
            SchedEvent::FuncCall {
                func,
                probed,
                cost_ns,
                ..
            } => {
                let end = probes.len();
                ranges.push((func, end.saturating_sub(probed as usize), end, cost_ns));
            }
            _ => {}
        }
    }
    // The call tree: a call adopts the pending calls emitted before it that it can
    // call and whose ranges lie within its own (callees report first; a callee that
    // probed nothing has an empty range, which only the call graph places).
    let mut children: Vec<Vec<usize>> = vec![vec![]; ranges.len()];
    let mut pending: Vec<usize> = vec![];
    for (i, &(f, a, b, _)) in ranges.iter().enumerate() {
        let (inside, rest): (Vec<usize>, Vec<usize>) = pending
            .iter()
            .partition(|&&j| calls_fn(f, ranges[j].0) && ranges[j].1 >= a && ranges[j].2 <= b);
        children[i] = inside;
        pending = rest;
        pending.push(i);
    }
    let calls = ranges
        .iter()
        .zip(children)
        .map(|(&(func, a, b, cost_ns), children)| ExplainedCall {
            func,
            probed: b - a,
            cost_ns,
            own: (a..b)
                .filter(|&p| {
                    !children
                        .iter()
                        .any(|&c| ranges[c].1 <= p && p < ranges[c].2)
                })
                .map(|p| probes[p])
                .collect(),
            children,
        })
        .collect();
    Ok(Ok(Explanation {
        t_ns: t,
        kind,
        pid,
        name,
        waker_cpu: waker,
        prev_cpu,
        cpu,
        reason,
        calls,
        roots: pending,
        ext: sim
            .k
            .scx_explained
            .iter()
            .rev()
            .find(|(at, p, _)| *at == t && *p == pid)
            .map(|(_, _, lines)| lines.clone())
            .unwrap_or_default(),
    }))
}
