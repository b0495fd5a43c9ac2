//! Trace replay: a recorded scheduler trace becomes the workload
//! (`[workload] kind = "replay"`, `file = "trace.txt"`).
//!
//! **What a trace says.** The scheduler's tracepoints record, per CPU, who ran when
//! (`sched_switch`, with the state the previous task left in: `R` still runnable,
//! `S`/`D` asleep, `X` dead), who woke whom (`sched_waking`, written on the waker's
//! CPU in the waker's context; `sched_wakeup` where there is no `sched_waking`),
//! which tasks were created (`sched_wakeup_new`, `sched_process_fork`) and which
//! ended (`sched_process_exit`). From that each task is a sequence of *run bursts*
//! (its time on a CPU between blocking points; a preemption does not end a burst,
//! only the task's own sleep does) separated by *sleeps*, and each sleep ended either
//! by another task (a futex, pipe or socket wakeup issued while that task ran) or by
//! an interrupt (a timer: the wakeup came from the idle task or from hard/soft IRQ
//! context). `cpu_idle` says which state an idle CPU was in: an interrupt that woke
//! it arrived that state's exit latency before the wakeup line.
//!
//! **What replay builds.** One behaviour program per task, in trace order:
//! `compute` for each burst (its wall time on the CPU it ran, scaled by that CPU's
//! capacity on the replay machine and by the frequency `cpu_frequency` last set
//! there over the domain's highest: the same work on the same machine), then, for a
//! sleep ended by a task, `futex_await` on the sleeper's own word, and in the waker's
//! program, at the point of its burst where the wakeup happened, `futex_post` of that
//! word; for a sleep ended by an interrupt, a `sleep` as long as the traced one (to
//! the interrupt: less the exit latency of the idle state the waking CPU was in, from
//! the replay machine's table) less the timer slack the replay adds again. A task starts when the trace first shows it
//! (its fork's `sched_wakeup_new`, else its first switch-in or wakeup; time 0 is the
//! trace's first event) and ends after its last burst. So a trace taken on one
//! machine asks: what would the same tasks, waking each other the same way, do on
//! another machine, kernel or feature set?
//!
//! **Formats.** The kernel's tracefs text (`/sys/kernel/tracing/trace`, what
//! schedlab's `--trace x.txt` writes, with or without the latency-flag and TGID
//! columns, µs or ns timestamps) and `trace-cmd report`'s output, whose
//! `sched_switch`/`sched_wakeup` plugins print `comm:pid [prio] S ==> comm:pid
//! [prio]` instead of the raw fields. Other events are ignored.
//!
//! **Simplifications.** The futex word is a one-slot semaphore, so two wakeups of
//! one sleep collapse into one (as they do in the kernel); a wakeup that found its
//! task awake is dropped. Who woke a task is the task current on the waking CPU:
//! when an interrupt wakes a task on a busy CPU and the trace shows no IRQ context
//! (schedlab's own traces print fixed `d..2` flags), the replay takes it for a wakeup
//! by the running task. Burst work ignores SMT effects on the traced CPU (and the
//! frequency when the trace has no `cpu_frequency` events: taken as the highest);
//! the kernel work inside a traced burst (the switch, the wakeup's syscall) is
//! replayed as task work and charged again by the replay's kernel. Affinity, priority
//! classes other than CFS (RT tasks replay as nice 0), fork and exit costs, and
//! parent/child relations (children start on their own at their fork time) are not
//! taken from the trace. Task names are the traced `comm`s.

use super::generators::{Generated, Tool, ToolInput, ToolResult};
use super::program::{IdxExpr, ObjRef, Op, Program, TaskSpec, WorkloadSpec};
use crate::config::TableReader;
use crate::error::InputError;
use crate::machine::{Machine, MAX_CPUS};
use crate::workload::dist::Dist;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// One parsed trace line.
#[derive(Clone, Debug, PartialEq)]
struct Line<'a> {
    /// The task current on the CPU (0 = idle).
    pid: u32,
    cpu: usize,
    ts_ns: u64,
    /// The hard/soft IRQ flag was set (`h`, `s` or `H` in the latency flags).
    irq: bool,
    event: &'a str,
    fields: &'a str,
}

/// Parse a tracefs / trace-cmd text line; `None` for comments, headers and lines
/// that are not events.
fn parse_line(l: &str) -> Option<Line<'_>> {
    let t = l.trim_start();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    // `comm-pid [(tgid)] [cpu] [flags] secs.frac: event: fields`
    let open = find_cpu_bracket(l)?;
    let close = open + l[open..].find(']')?;
    let cpu: usize = l[open + 1..close].trim().parse().ok()?;
    let mut who = l[..open].trim_end();
    if who.ends_with(')') {
        // The TGID column.
        who = who[..who.rfind('(')?].trim_end();
    }
    let (_, pid) = who.rsplit_once('-')?;
    let pid: u32 = pid.trim().parse().ok()?;
    let rest = &l[close + 1..];
    let colon = rest.find(": ")?;
    let head = rest[..colon].trim();
    let (flags, ts) = match head.rsplit_once(char::is_whitespace) {
        Some((f, ts)) => (f.trim(), ts),
        None => ("", head),
    };
    let ts_ns = parse_ts(ts)?;
    let after = rest[colon + 2..].trim_start();
    let (event, fields) = match after.find(':') {
        Some(i) => (&after[..i], after[i + 1..].trim()),
        None => (after.trim(), ""),
    };
    let irq = flags
        .chars()
        .nth(2)
        .is_some_and(|c| matches!(c, 'h' | 's' | 'H'));
    Some(Line {
        pid,
        cpu,
        ts_ns,
        irq,
        event,
        fields,
    })
}

/// The `[NNN]` CPU column: the first `[` followed by digits and `]`.
fn find_cpu_bracket(l: &str) -> Option<usize> {
    let b = l.as_bytes();
    let mut i = 0;
    while let Some(off) = l[i..].find('[') {
        let s = i + off;
        let mut j = s + 1;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b' ') {
            j += 1;
        }
        if j < b.len() && b[j] == b']' && l[s + 1..j].trim().parse::<u32>().is_ok() {
            return Some(s);
        }
        i = s + 1;
    }
    None
}

/// `secs.frac` (µs or ns digits) in ns.
fn parse_ts(ts: &str) -> Option<u64> {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    let secs: u64 = s.parse().ok()?;
    if f.is_empty() || f.len() > 9 || !f.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac: u64 = f.parse().ok()?;
    let ns = frac * 10u64.pow(9 - f.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// The value of `key=` in a raw-format field list (up to the next space, or for a
/// `*comm` key up to the key that follows it).
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    let start = loop {
        let i = from + fields[from..].find(&pat)?;
        if i == 0 || fields.as_bytes()[i - 1] == b' ' {
            break i + pat.len();
        }
        from = i + 1;
    };
    let v = &fields[start..];
    if let Some(prefix) = key.strip_suffix("comm") {
        // A comm may hold spaces: it ends where `<prefix>pid=` begins.
        let next = format!(" {prefix}pid=");
        return Some(v.find(&next).map_or(v, |e| &v[..e]));
    }
    Some(v.split(' ').next().unwrap_or(v))
}

/// `comm:pid [prio]` of trace-cmd's plugin format: (comm, pid, prio).
fn pretty_task(s: &str) -> Option<(&str, u32, Option<i32>)> {
    let s = s.trim();
    let (head, prio) = match s.find(" [") {
        Some(i) => (&s[..i], s[i + 2..].split(']').next()?.trim().parse().ok()),
        None => (s, None),
    };
    let (comm, pid) = head.rsplit_once(':')?;
    Some((comm, pid.trim().parse().ok()?, prio))
}

/// A `sched_switch`: (prev pid, prev state, prev prio, next comm, next pid, next
/// prio).
struct Switch<'a> {
    prev: u32,
    prev_comm: &'a str,
    prev_state: &'a str,
    prev_prio: Option<i32>,
    next: u32,
    next_comm: &'a str,
    next_prio: Option<i32>,
}

fn parse_switch(f: &str) -> Option<Switch<'_>> {
    if let Some(prev) = field(f, "prev_pid") {
        return Some(Switch {
            prev: prev.parse().ok()?,
            prev_comm: field(f, "prev_comm")?,
            prev_state: field(f, "prev_state")?,
            prev_prio: field(f, "prev_prio").and_then(|p| p.parse().ok()),
            next: field(f, "next_pid")?.parse().ok()?,
            next_comm: field(f, "next_comm")?,
            next_prio: field(f, "next_prio").and_then(|p| p.parse().ok()),
        });
    }
    // trace-cmd: `prev_comm:prev_pid [prio] S ==> next_comm:next_pid [prio]`.
    let (l, r) = f.split_once(" ==> ")?;
    let (task, state) = l.trim_end().rsplit_once(' ')?;
    let (pc, pp, pprio) = pretty_task(task)?;
    let (nc, np, nprio) = pretty_task(r)?;
    Some(Switch {
        prev: pp,
        prev_comm: pc,
        prev_state: state,
        prev_prio: pprio,
        next: np,
        next_comm: nc,
        next_prio: nprio,
    })
}

/// The woken task of a `sched_waking` / `sched_wakeup` / `sched_wakeup_new`:
/// (comm, pid).
fn parse_wakee(f: &str) -> Option<(&str, u32)> {
    if let Some(pid) = field(f, "pid") {
        return Some((field(f, "comm")?, pid.parse().ok()?));
    }
    let (c, p, _) = pretty_task(f.split(" CPU:").next()?.split(" success=").next()?)?;
    Some((c, p))
}

/// What the trace says of one task, as it is read.
#[derive(Debug, Default)]
struct Task {
    comm: String,
    prio: Option<i32>,
    /// Trace time the task first appeared.
    start: u64,
    ops: Vec<Op>,
    /// Work of the burst so far (reference ns).
    work: u64,
    /// On a CPU since (time, cpu).
    running: Option<(u64, usize)>,
    /// Asleep since, its wakeup not yet seen.
    blocked: Option<u64>,
    exited: bool,
}

/// What the reader counted (the replay tool's report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    lines: u64,
    events: u64,
    bursts: u64,
    task_wakeups: u64,
    irq_wakeups: u64,
    unexplained: u64,
}

struct Reader<'m> {
    m: &'m Machine,
    tasks: BTreeMap<u32, Task>,
    /// Tasks in order of first appearance, and each one's place in it (its futex
    /// word).
    order: Vec<u32>,
    index: HashMap<u32, u32>,
    /// The trace's first timestamp: the replay's time 0.
    t0: u64,
    counts: Counts,
    /// Per CPU, the cpuidle state it last entered while idle (cleared when a task
    /// runs there): an interrupt that woke a task from it arrived its exit latency
    /// before the wakeup line.
    idle_state: Vec<Option<usize>>,
    /// Per CPU, the task on it (0: idle) and its last `cpu_frequency` (kHz; `None`:
    /// not traced, taken as the highest).
    curr: Vec<u32>,
    freq_khz: Vec<Option<u64>>,
}

impl<'m> Reader<'m> {
    fn task(&mut self, pid: u32, ts: u64) -> &mut Task {
        if !self.tasks.contains_key(&pid) {
            self.index.insert(pid, self.order.len() as u32);
            self.order.push(pid);
        }
        self.tasks.entry(pid).or_insert_with(|| Task {
            start: ts,
            ..Task::default()
        })
    }

    fn word(&self, pid: u32) -> ObjRef {
        ObjRef {
            base: self.index[&pid],
            count: 1,
            idx: IdxExpr::Const(0),
        }
    }

    /// Work done by `pid` on its CPU up to `ts`, added to its burst: the wall time
    /// scaled by the CPU's capacity and its traced frequency over its domain's
    /// highest (the replay machine's), as the kernel's own execution rate is.
    fn account(&mut self, pid: u32, ts: u64) {
        let m = self.m;
        let Some((since, cpu)) = self.tasks.get(&pid).and_then(|t| t.running) else {
            return;
        };
        let (cap, fmax) = m.cpus.get(cpu).map_or((1024, 0), |c| {
            (
                u64::from(c.capacity_orig),
                u64::from(m.freq_domains[c.freq_domain].max_freq_khz()),
            )
        });
        let f = self.freq_khz.get(cpu).copied().flatten();
        let wall = u128::from(ts.saturating_sub(since));
        let work = match f {
            Some(f) if fmax > 0 => {
                wall * u128::from(cap) * u128::from(f.min(fmax)) / (1024 * u128::from(fmax))
            }
            _ => wall * u128::from(cap) / 1024,
        };
        let t = self.tasks.get_mut(&pid).expect("known task");
        t.work += work as u64;
        t.running = Some((ts, cpu));
    }

    /// Grow the per-CPU tables to hold `cpu`.
    fn cpu_slot(&mut self, cpu: usize) {
        if cpu >= self.curr.len() {
            self.curr.resize(cpu + 1, 0);
            self.freq_khz.resize(cpu + 1, None);
            self.idle_state.resize(cpu + 1, None);
        }
    }

    /// The exit latency (replay machine's table) of the state `cpu` was idle in when
    /// `waker` (0: the idle task) issued a wakeup there; 0 when it was not idle.
    fn exit_latency(&self, waker: u32, cpu: usize) -> u64 {
        match (waker, self.idle_state.get(cpu)) {
            (0, Some(&Some(k))) if cpu < self.m.nr_cpus() => self
                .m
                .idle_states(cpu)
                .get(k)
                .map_or(0, |st| st.exit_latency_ns),
            _ => 0,
        }
    }

    /// End `pid`'s burst: a `compute` of its work.
    fn flush(&mut self, pid: u32) {
        let t = self.tasks.get_mut(&pid).expect("known task");
        if t.work > 0 {
            t.ops
                .push(Op::Compute(Dist::Const(std::mem::take(&mut t.work))));
            self.counts.bursts += 1;
        }
    }

    fn line(&mut self, l: &Line<'_>) {
        let ts = l.ts_ns;
        self.cpu_slot(l.cpu);
        match l.event {
            "sched_switch" => {
                let Some(s) = parse_switch(l.fields) else {
                    return;
                };
                self.counts.events += 1;
                if s.prev != 0 {
                    self.task(s.prev, ts).comm = s.prev_comm.to_string();
                    self.account(s.prev, ts);
                    let t = self.tasks.get_mut(&s.prev).expect("known");
                    t.running = None;
                    if s.prev_prio.is_some() {
                        t.prio = s.prev_prio;
                    }
                    match s.prev_state.chars().next() {
                        Some('R') => {}
                        Some('X') | Some('Z') => {
                            self.flush(s.prev);
                            self.tasks.get_mut(&s.prev).expect("known").exited = true;
                        }
                        _ => {
                            self.flush(s.prev);
                            self.tasks.get_mut(&s.prev).expect("known").blocked = Some(ts);
                        }
                    }
                }
                self.idle_state[l.cpu] = None;
                self.curr[l.cpu] = s.next;
                if s.next != 0 {
                    let cpu = l.cpu;
                    let t = self.task(s.next, ts);
                    t.comm = s.next_comm.to_string();
                    if s.next_prio.is_some() {
                        t.prio = s.next_prio;
                    }
                    t.running = Some((ts, cpu));
                    if let Some(b) = t.blocked.take() {
                        // Runs again with no wakeup seen (one before the trace, or one
                        // the trace lost): a sleep as long as the gap.
                        t.ops.push(sleep_op(ts - b));
                        self.counts.unexplained += 1;
                    }
                }
            }
            "sched_waking" | "sched_wakeup" => {
                let Some((comm, pid)) = parse_wakee(l.fields) else {
                    return;
                };
                self.counts.events += 1;
                let t = self.task(pid, ts);
                if t.comm.is_empty() {
                    t.comm = comm.to_string();
                }
                let Some(b) = t.blocked.take() else {
                    return; // awake already, or its waking line was first
                };
                let waker = l.pid;
                if waker == 0 || waker == pid || l.irq {
                    // The interrupt came when the CPU began to leave its idle state.
                    let lat = self.exit_latency(waker, l.cpu);
                    let t = self.tasks.get_mut(&pid).expect("known");
                    t.ops
                        .push(sleep_op(ts.saturating_sub(lat).saturating_sub(b)));
                    self.counts.irq_wakeups += 1;
                } else {
                    let w = self.word(pid);
                    self.tasks
                        .get_mut(&pid)
                        .expect("known")
                        .ops
                        .push(Op::FutexAwait { f: w });
                    let cpu = l.cpu;
                    let wt = self.task(waker, ts);
                    if wt.running.is_none() && wt.ops.is_empty() && wt.work == 0 {
                        // A waker running since before the trace.
                        wt.running = Some((ts, cpu));
                    }
                    self.account(waker, ts);
                    self.flush(waker);
                    self.tasks
                        .get_mut(&waker)
                        .expect("known")
                        .ops
                        .push(Op::FutexPost { f: w });
                    self.counts.task_wakeups += 1;
                }
            }
            "sched_wakeup_new" | "sched_process_fork" => {
                let pid = if l.event == "sched_process_fork" {
                    field(l.fields, "child_pid").and_then(|p| p.parse().ok())
                } else {
                    parse_wakee(l.fields).map(|(_, p)| p)
                };
                let Some(pid) = pid else { return };
                self.counts.events += 1;
                let comm = if l.event == "sched_process_fork" {
                    field(l.fields, "child_comm")
                } else {
                    parse_wakee(l.fields).map(|(c, _)| c)
                };
                let t = self.task(pid, ts);
                if let (true, Some(c)) = (t.comm.is_empty(), comm) {
                    t.comm = c.to_string();
                }
            }
            "cpu_idle" => {
                let state = field(l.fields, "state").and_then(|v| v.parse::<u64>().ok());
                let cpu = field(l.fields, "cpu_id").and_then(|v| v.parse::<usize>().ok());
                if let (Some(k), Some(c)) = (state, cpu.filter(|&c| c < MAX_CPUS)) {
                    self.cpu_slot(c);
                    // PWR_EVENT_EXIT (4294967295) keeps the state for the wakeup.
                    if k != u64::from(u32::MAX) {
                        self.idle_state[c] = Some(k as usize);
                    }
                }
            }
            "cpu_frequency" => {
                let f = field(l.fields, "state").and_then(|v| v.parse::<u64>().ok());
                let cpu = field(l.fields, "cpu_id").and_then(|v| v.parse::<usize>().ok());
                if let (Some(f), Some(c)) = (f, cpu.filter(|&c| c < MAX_CPUS)) {
                    self.cpu_slot(c);
                    // The running task's work so far was at the old frequency.
                    let p = self.curr[c];
                    if p != 0 && self.tasks.contains_key(&p) {
                        self.account(p, ts);
                    }
                    self.freq_khz[c] = Some(f);
                }
            }
            "sched_process_exit" => {
                let Some(pid) = field(l.fields, "pid").and_then(|p| p.parse().ok()) else {
                    return;
                };
                if pid == 0 || !self.tasks.contains_key(&pid) {
                    return;
                }
                self.counts.events += 1;
                self.account(pid, ts);
                self.flush(pid);
                self.tasks.get_mut(&pid).expect("known").exited = true;
            }
            _ => {}
        }
    }

    /// The trace ended at `end`: bursts still open are flushed.
    fn finish(mut self, end: u64) -> (WorkloadSpec, Counts) {
        let pids: Vec<u32> = self.order.clone();
        for &p in &pids {
            self.account(p, end);
            self.flush(p);
        }
        let t0 = self.t0;
        let mut spec = WorkloadSpec {
            futexes: self.order.len() as u32,
            ..WorkloadSpec::default()
        };
        for &p in &pids {
            let t = self.tasks.remove(&p).expect("known");
            let name = if t.comm.is_empty() {
                format!("pid{p}")
            } else {
                t.comm
            };
            let prog = spec.programs.len();
            spec.programs.push(Program::new(name.clone(), t.ops));
            let mut ts = TaskSpec::new(name, prog, 0);
            ts.start_ns = t.start.saturating_sub(t0);
            // CFS priorities 100..=139 are nice -20..=19; others replay as nice 0.
            ts.nice = t
                .prio
                .filter(|p| (100..=139).contains(p))
                .map_or(0, |p| p - 120);
            spec.tasks.push(ts);
        }
        (spec, self.counts)
    }
}

/// A sleep the replay's timer ends after `gap`: the traced gap less the slack the
/// replay's hrtimer adds again.
fn sleep_op(gap: u64) -> Op {
    Op::Sleep(Dist::Const(gap.saturating_sub(crate::abi::TIMER_SLACK_NS)))
}

/// Build the workload of trace text `text` (file `path`, for errors) for machine
/// `m`.
pub fn from_text(text: &str, path: &Path, m: &Machine) -> Result<Generated, InputError> {
    let mut lines: Vec<(usize, Line<'_>)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| parse_line(l).map(|p| (i, p)))
        .collect();
    if let Some((i, l)) = lines.iter().find(|(_, l)| l.cpu >= MAX_CPUS) {
        return Err(InputError::in_file(
            path,
            Some(i + 1),
            format!("CPU {} is beyond NR_CPUS ({MAX_CPUS})", l.cpu),
        ));
    }
    if lines.is_empty() {
        return Err(InputError::in_file(
            path,
            None,
            "no trace events found (expected tracefs or trace-cmd report text with \
             sched_switch lines)",
        ));
    }
    // Per-CPU buffers can interleave out of order in some dumps: replay in time
    // order, file order breaking ties.
    lines.sort_by_key(|(i, l)| (l.ts_ns, *i));
    let mut r = Reader {
        m,
        tasks: BTreeMap::new(),
        order: Vec::new(),
        index: HashMap::new(),
        idle_state: Vec::new(),
        curr: Vec::new(),
        freq_khz: Vec::new(),
        t0: lines[0].1.ts_ns,
        counts: Counts {
            lines: lines.len() as u64,
            ..Counts::default()
        },
    };
    let end = lines.last().map_or(0, |(_, l)| l.ts_ns);
    for (_, l) in &lines {
        r.line(l);
    }
    if r.counts.events == 0 {
        return Err(InputError::in_file(
            path,
            None,
            "no scheduler events (sched_switch, sched_waking, sched_wakeup, \
             sched_wakeup_new, sched_process_fork/exit) in the trace",
        ));
    }
    if r.order.len() > crate::engine::MAX_TASKS {
        return Err(InputError::in_file(
            path,
            None,
            format!(
                "the trace names {} tasks, more than the limit of {}",
                r.order.len(),
                crate::engine::MAX_TASKS
            ),
        ));
    }
    let (spec, counts) = r.finish(end);
    spec.validate()
        .map_err(|e| InputError::in_file(path, None, format!("internal: {e}")))?;
    let tasks = spec.tasks.len();
    Ok(Generated {
        spec,
        tool: Arc::new(ReplayTool { counts, tasks }),
    })
}

/// Parse `[workload] kind = "replay"`: `file` (the trace text, relative to the
/// scenario file).
pub fn parse(w: &TableReader<'_>, m: &Machine) -> Result<Generated, InputError> {
    let (path, text) = super::generators::workload_file(
        w,
        "a `replay` workload needs `file` (a trace's text)",
        "trace file",
    )?;
    from_text(&text, &path, m)
}

/// The replay's report: what was read from the trace.
#[derive(Debug)]
struct ReplayTool {
    counts: Counts,
    tasks: usize,
}

impl Tool for ReplayTool {
    fn report(&self, _input: &ToolInput<'_>) -> Option<ToolResult> {
        let c = &self.counts;
        let mut values = BTreeMap::new();
        values.insert("tasks".into(), self.tasks as f64);
        values.insert("bursts".into(), c.bursts as f64);
        values.insert("task_wakeups".into(), c.task_wakeups as f64);
        values.insert("irq_wakeups".into(), c.irq_wakeups as f64);
        values.insert("unexplained_wakeups".into(), c.unexplained as f64);
        let text = format!(
            "replayed {} tasks from {} trace lines ({} scheduler events): {} bursts, \
             {} wakeups by a task, {} by an interrupt, {} runs after a sleep with no \
             wakeup in the trace\n",
            self.tasks, c.lines, c.events, c.bursts, c.task_wakeups, c.irq_wakeups, c.unexplained
        );
        Some(ToolResult { text, values })
    }
}

#[cfg(test)]
mod tests;
