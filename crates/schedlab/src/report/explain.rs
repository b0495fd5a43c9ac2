//! The text of `schedlab explain`: one placement, the functions that made it, the
//! CPUs each read in order and what it saw.
//!
//! [`crate::experiment::explain`] replays the run and rebuilds the decision's call
//! tree from the probe events; this prints it as an indented tree, a function per
//! line with its probes (callees included) and charged cost, then the CPUs it read
//! itself, consecutive CPUs in the same state folded into ranges
//! (`0 busy(nr_running=1), 1-21 idle, 44 idle`).

use crate::experiment::explain::{Explanation, ProbeSeen};
use crate::sched::WakeKind;
use std::fmt::Write as _;

/// Probes as text, consecutive CPUs in the same state folded into ranges:
/// `0 busy(nr_running=1), 1-21 idle, 44 idle`.
fn runs_text(probes: &[ProbeSeen]) -> Vec<String> {
    let mut out = vec![];
    let mut i = 0;
    while i < probes.len() {
        let ProbeSeen {
            cpu: c0,
            idle,
            nr_running: nr,
        } = probes[i];
        let mut j = i;
        while j + 1 < probes.len()
            && (
                probes[j + 1].cpu,
                probes[j + 1].idle,
                probes[j + 1].nr_running,
            ) == (probes[j].cpu + 1, idle, nr)
        {
            j += 1;
        }
        let cpus = if j > i {
            format!("{c0}-{}", probes[j].cpu)
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

impl Explanation {
    /// The explanation as `schedlab explain` prints it.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let kind_s = match self.kind {
            WakeKind::Wakeup => "wakeup",
            WakeKind::Fork => "fork",
            WakeKind::Exec => "exec",
            WakeKind::Balance => "load-balance move",
        };
        let _ = writeln!(
            s,
            "t = {} ns ({:.6} ms): {kind_s} of pid {} `{}`{}, prev CPU {} -> CPU {} ({})",
            self.t_ns,
            self.t_ns as f64 / 1e6,
            self.pid,
            self.name,
            self.waker_cpu
                .map(|w| format!(" by CPU {w}"))
                .unwrap_or_default(),
            self.prev_cpu,
            self.cpu,
            self.reason
        );
        if !self.ext.is_empty() {
            for line in &self.ext {
                let indent = if line.starts_with("ops.") || line.starts_with("no ops.") {
                    "  "
                } else {
                    "    "
                };
                let _ = writeln!(s, "{indent}{line}");
            }
            return s;
        }
        if self.calls.is_empty() {
            let _ = writeln!(s, "  no search ran ({})", self.reason);
            return s;
        }
        for &root in &self.roots {
            self.call_text(&mut s, root, 0);
        }
        s
    }

    /// Call `i` and, indented below it, its callees.
    fn call_text(&self, s: &mut String, i: usize, depth: usize) {
        let c = &self.calls[i];
        let own = runs_text(&c.own);
        let _ = write!(
            s,
            "{}{}: {} CPUs probed, {} ns charged",
            "  ".repeat(depth + 1),
            c.func.name(),
            c.probed,
            c.cost_ns
        );
        if own.is_empty() {
            let _ = writeln!(s);
        } else {
            let _ = writeln!(s, "; read in order: {}", own.join(", "));
        }
        for &child in &c.children {
            self.call_text(s, child, depth + 1);
        }
    }
}
