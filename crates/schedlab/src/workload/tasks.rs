//! The generic `tasks` workload: task groups with behaviour programs written in the
//! scenario file.
//!
//! ```toml
//! [workload]
//! kind = "tasks"
//!
//! [[workload.channel]]          # channel arrays: ping[0..4], pong[0..4]
//! name = "ping"
//! kind = "pipe"                 # pipe | unix | tcp
//! count = 4
//!
//! [[workload.task]]
//! name = "client"
//! count = 4                     # instances client-0 .. client-3
//! cpus = "0-7"                  # optional affinity (cpulist)
//! nice = 0
//! program = [
//!   { op = "loop", count = 1000, body = [
//!       { op = "compute", work = { dist = "exp", mean = "50us" } },
//!       { op = "write", chan = "ping[i]", bytes = 100 },
//!       { op = "read",  chan = "pong[i]", bytes = 100 },
//!   ] },
//! ]
//! ```
//!
//! Object references are `name` (element 0), `name[K]`, `name[i]` (the task's
//! instance) or `name[i/D]` / `name[i/D+K]`. Named programs for `fork`/`spawn` go in
//! `[workload.programs]`. The full op list is in `docs/scenarios.md`.

use crate::abi::Policy;
use crate::config::{Doc, Node, TableReader, Val};
use crate::engine::MAX_TASKS;
use crate::error::InputError;
use crate::machine::CpuMask;
use crate::workload::dist::{parse_dist, Dist, Unit};
use crate::workload::ipc::ChanKind;
use crate::workload::program::{
    AffinityTarget, ChanDecl, IdxExpr, LoopCount, ObjRef, Op, Program, TaskSpec, WorkloadSpec,
    NR_REGS,
};
use std::collections::BTreeMap;

/// The most objects of one kind (channels, futexes, mutexes, barriers, ...) a
/// workload may declare, all `count`s together.
pub const MAX_OBJECTS: u64 = 1 << 20;

/// Convert a located node to a plain `toml::Value` (for the distribution parser).
pub(crate) fn node_to_toml(n: &Node) -> toml::Value {
    match &n.val {
        Val::Str(s) => toml::Value::String(s.clone()),
        Val::Int(i) => toml::Value::Integer(*i),
        Val::Float(f) => toml::Value::Float(*f),
        Val::Bool(b) => toml::Value::Boolean(*b),
        Val::Array(a) => toml::Value::Array(a.iter().map(node_to_toml).collect()),
        Val::Table(t) => toml::Value::Table(
            t.iter()
                .map(|(k, v)| (k.clone(), node_to_toml(v)))
                .collect(),
        ),
    }
}

/// Object arrays by kind and name: (base index, count).
#[derive(Default)]
struct Objects {
    chans: BTreeMap<String, (u32, u32)>,
    futexes: BTreeMap<String, (u32, u32)>,
    mutexes: BTreeMap<String, (u32, u32)>,
    barriers: BTreeMap<String, (u32, u32)>,
    condvars: BTreeMap<String, (u32, u32)>,
    words: BTreeMap<String, (u32, u32)>,
    lists: BTreeMap<String, (u32, u32)>,
    spinlocks: BTreeMap<String, (u32, u32)>,
    /// Task groups: (first index in `WorkloadSpec::tasks`, count), for
    /// `set_affinity`'s `task`.
    groups: BTreeMap<String, (u32, u32)>,
    /// Group names declared more than once (a reference cannot tell which).
    twice: std::collections::BTreeSet<String>,
}

struct Ctx<'a> {
    doc: &'a Doc,
    objs: Objects,
    prog_names: BTreeMap<String, usize>,
    spec: WorkloadSpec,
    nr_cpus: usize,
}

fn parse_ref(s: &str, arrays: &BTreeMap<String, (u32, u32)>, what: &str) -> Result<ObjRef, String> {
    let (name, idx) = match s.split_once('[') {
        None => (s, IdxExpr::Const(0)),
        Some((n, rest)) => {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("bad {what} reference `{s}`: missing `]`"))?;
            let inner: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
            let idx = if let Ok(k) = inner.parse::<u32>() {
                IdxExpr::Const(k)
            } else if inner == "cpu" {
                IdxExpr::Cpu
            } else if let Some(r) = inner.strip_prefix('r').and_then(|r| r.parse::<u8>().ok()) {
                if r as usize >= NR_REGS {
                    return Err(format!(
                        "register `r{r}` in `{s}` out of range (r0 ..= r{})",
                        NR_REGS - 1
                    ));
                }
                IdxExpr::Reg(r)
            } else if let Some(rest) = inner.strip_prefix('i') {
                let (div, add) = match rest {
                    "" => (1, 0),
                    _ => {
                        let (d, a) = match rest.strip_prefix('/') {
                            Some(r) => match r.split_once('+') {
                                Some((d, a)) => (d, Some(a)),
                                None => (r, None),
                            },
                            None => match rest.strip_prefix('+') {
                                Some(a) => ("1", Some(a)),
                                None => {
                                    return Err(format!(
                                    "bad index `{inner}` in `{s}` (use K, i, i+K, i/D or i/D+K)"
                                ))
                                }
                            },
                        };
                        let d: u32 = d
                            .parse()
                            .ok()
                            .filter(|&d| d > 0)
                            .ok_or_else(|| format!("bad divisor in `{s}`"))?;
                        let a: u32 = match a {
                            Some(a) => a.parse().map_err(|_| format!("bad offset in `{s}`"))?,
                            None => 0,
                        };
                        (d, a)
                    }
                };
                IdxExpr::Instance { div, add }
            } else {
                return Err(format!(
                    "bad index `{inner}` in `{s}` (use K, i, i+K, i/D, i/D+K, rN or cpu)"
                ));
            };
            (n, idx)
        }
    };
    let &(base, count) = arrays
        .get(name)
        .ok_or_else(|| format!("unknown {what} `{name}`"))?;
    if let IdxExpr::Const(k) = idx {
        if k >= count {
            return Err(format!(
                "{what} `{s}`: index {k} out of range (count = {count})"
            ));
        }
    }
    Ok(ObjRef { base, count, idx })
}

impl Ctx<'_> {
    fn declare(&mut self, r: &TableReader<'_>, key: &'static str) -> Result<(), InputError> {
        let Some(items) = r.array(key)? else {
            return Ok(());
        };
        let mut total = 0u64;
        for item in items {
            let t = TableReader::new(self.doc, item, &format!("workload.{key}"))?;
            let name = t
                .str("name")?
                .ok_or_else(|| t.err("name", format!("every `{key}` needs a `name`")))?;
            let count = t.uint("count", 1, MAX_OBJECTS)?.unwrap_or(1) as u32;
            total += u64::from(count);
            if total > MAX_OBJECTS {
                return Err(t.err(
                    "count",
                    format!(
                        "this `count` brings the workload to {total} `{key}` objects, more than the limit of {MAX_OBJECTS} (see docs/limits.md)"
                    ),
                ));
            }
            let arrays = match key {
                "channel" => &mut self.objs.chans,
                "futex" => &mut self.objs.futexes,
                "mutex" => &mut self.objs.mutexes,
                "barrier" => &mut self.objs.barriers,
                "word" => &mut self.objs.words,
                "list" => &mut self.objs.lists,
                "spinlock" => &mut self.objs.spinlocks,
                _ => &mut self.objs.condvars,
            };
            if arrays.contains_key(name) {
                return Err(t.err("name", format!("{key} `{name}` declared twice")));
            }
            let base = match key {
                "channel" => {
                    let kind = match t.str("kind")?.unwrap_or("pipe") {
                        "pipe" => ChanKind::Pipe,
                        "unix" | "socket" => ChanKind::UnixStream,
                        "tcp" => ChanKind::TcpLoopback,
                        k => {
                            return Err(t.err(
                                "kind",
                                format!("unknown channel kind `{k}` (pipe, unix, tcp)"),
                            ))
                        }
                    };
                    let base = self.spec.nr_channels() as u32;
                    self.spec.channels.push(ChanDecl {
                        name: name.to_string(),
                        kind,
                        count,
                    });
                    base
                }
                "futex" => {
                    let b = self.spec.futexes;
                    self.spec.futexes += count;
                    b
                }
                "mutex" => {
                    let b = self.spec.mutexes;
                    self.spec.mutexes += count;
                    b
                }
                "barrier" => {
                    let parties = t
                        .uint("parties", 1, 1 << 20)?
                        .ok_or_else(|| t.err("parties", "a barrier needs `parties`"))?
                        as u32;
                    let b = self.spec.barriers.len() as u32;
                    self.spec
                        .barriers
                        .extend(std::iter::repeat_n(parties, count as usize));
                    b
                }
                "word" => {
                    let b = self.spec.words;
                    self.spec.words += count;
                    b
                }
                "list" => {
                    let b = self.spec.lists;
                    self.spec.lists += count;
                    b
                }
                "spinlock" => {
                    let b = self.spec.spinlocks;
                    self.spec.spinlocks += count;
                    b
                }
                _ => {
                    let b = self.spec.condvars;
                    self.spec.condvars += count;
                    b
                }
            };
            arrays.insert(name.to_string(), (base, count));
            t.finish()?;
        }
        Ok(())
    }

    fn dist(&self, t: &TableReader<'_>, key: &'static str, unit: Unit) -> Result<Dist, InputError> {
        let n = t
            .get(key)
            .ok_or_else(|| t.err(key, format!("`{}` needs `{key}`", t.name)))?;
        parse_dist(&node_to_toml(n), unit)
            .map_err(|m| self.doc.err(n, format!("`{}.{key}`: {m}", t.name)))
    }

    fn obj(
        &self,
        t: &TableReader<'_>,
        key: &'static str,
        which: &str,
    ) -> Result<ObjRef, InputError> {
        let s = t
            .str(key)?
            .ok_or_else(|| t.err(key, format!("`{}` needs `{key}`", t.name)))?;
        let arrays = match which {
            "channel" => &self.objs.chans,
            "futex" => &self.objs.futexes,
            "mutex" => &self.objs.mutexes,
            "barrier" => &self.objs.barriers,
            "word" => &self.objs.words,
            "list" => &self.objs.lists,
            "spinlock" => &self.objs.spinlocks,
            _ => &self.objs.condvars,
        };
        parse_ref(s, arrays, which).map_err(|m| t.err(key, m))
    }

    /// Register `key` (`0 ..= NR_REGS − 1`, default `def`).
    fn reg(t: &TableReader<'_>, key: &'static str, def: u8) -> Result<u8, InputError> {
        Ok(t.uint(key, 0, NR_REGS as u64 - 1)?.map_or(def, |v| v as u8))
    }

    fn ops(&mut self, nodes: &[Node], ctx_name: &str, out: &mut Vec<Op>) -> Result<(), InputError> {
        for (i, n) in nodes.iter().enumerate() {
            let t = TableReader::new(self.doc, n, &format!("{ctx_name}[{i}]"))?;
            let op = t
                .str("op")?
                .ok_or_else(|| t.err("op", format!("`{}` needs `op`", t.name)))?;
            if op == "loop" {
                self.loop_op(&t, out)?;
                t.finish()?;
                continue;
            }
            let o = self.op(&t, op)?;
            t.finish()?;
            out.push(o);
        }
        Ok(())
    }

    /// One op other than `loop`: time, channels, futexes and sync objects, tasks,
    /// metrics; the shared-memory ops in [`Self::shared_op`].
    fn op(&mut self, t: &TableReader<'_>, op: &str) -> Result<Op, InputError> {
        Ok(match op {
            "compute" => Op::Compute(self.dist(t, "work", Unit::Time)?),
            "spin" => Op::Spin(self.dist(t, "time", Unit::Time)?),
            "sleep" => Op::Sleep(self.dist(t, "time", Unit::Time)?),
            "write" | "read" => {
                let ch = self.obj(t, "chan", "channel")?;
                let bytes = self.io_bytes(t)?;
                if op == "write" {
                    Op::Write { ch, bytes }
                } else {
                    Op::Read { ch, bytes }
                }
            }
            "poll" => Op::Poll {
                ch: self.obj(t, "chan", "channel")?,
            },
            "futex_wait" => Op::FutexWait {
                f: self.obj(t, "futex", "futex")?,
                expected: t.int("expected")?.unwrap_or(0),
            },
            "futex_wake" => Op::FutexWake {
                f: self.obj(t, "futex", "futex")?,
                n: t.uint("n", 1, u32::MAX as u64)?.unwrap_or(1) as u32,
            },
            "futex_set" => Op::FutexSet {
                f: self.obj(t, "futex", "futex")?,
                val: t.int("value")?.unwrap_or(0),
            },
            "lock" => Op::Lock(self.obj(t, "mutex", "mutex")?),
            "unlock" => Op::Unlock(self.obj(t, "mutex", "mutex")?),
            "barrier" => Op::Barrier(self.obj(t, "barrier", "barrier")?),
            "cond_wait" => Op::CondWait {
                c: self.obj(t, "cond", "condvar")?,
                m: self.obj(t, "mutex", "mutex")?,
            },
            "cond_signal" => Op::CondSignal(self.obj(t, "cond", "condvar")?),
            "cond_broadcast" => Op::CondBroadcast(self.obj(t, "cond", "condvar")?),
            "fork" | "spawn" => {
                let name = t
                    .str("program")?
                    .ok_or_else(|| t.err("program", format!("`{op}` needs `program`")))?;
                let prog = *self.prog_names.get(name).ok_or_else(|| {
                    t.err(
                        "program",
                        format!("unknown program `{name}` (define it in [workload.programs])"),
                    )
                })?;
                Op::Fork {
                    prog,
                    thread: op == "spawn",
                }
            }
            "set_affinity" => self.set_affinity(t)?,
            "wait" | "join" => Op::WaitChild,
            "exit" => Op::Exit,
            "yield" => Op::Yield,
            "syscall" => Op::Syscall,
            "mark" => Op::Mark {
                slot: Self::reg(t, "slot", 0)?,
            },
            "record" | "count" => {
                let name = t
                    .str("metric")?
                    .ok_or_else(|| t.err("metric", format!("`{op}` needs `metric`")))?;
                if op == "record" {
                    let metric = self.spec.metric(name, "ns");
                    Op::Record {
                        metric,
                        slot: Self::reg(t, "slot", 0)?,
                    }
                } else {
                    Op::Count {
                        metric: self.spec.metric(name, "count"),
                    }
                }
            }
            _ => self.shared_op(t, op)?,
        })
    }

    /// `set_affinity`: `cpus` (a cpulist of this machine's CPUs) for `task`:
    /// `"self"` (the default), `"child"` (the last child forked or spawned), or a
    /// task group reference (`"name"`, `"name[K]"`, `"name[i]"`, ...; a group
    /// called `self` or `child` is named with an index: `"child[0]"`).
    fn set_affinity(&mut self, t: &TableReader<'_>) -> Result<Op, InputError> {
        let m = cpulist(t, self.nr_cpus)?
            .ok_or_else(|| t.err("cpus", "`set_affinity` needs `cpus` (a cpulist)"))?;
        let target = match t.str("task")?.unwrap_or("self") {
            "self" => AffinityTarget::Current,
            "child" => AffinityTarget::LastChild,
            r => {
                let name = r.split_once('[').map_or(r, |(n, _)| n);
                if self.objs.twice.contains(name) {
                    return Err(t.err(
                        "task",
                        format!("task group `{name}` is declared twice: `{r}` cannot tell which"),
                    ));
                }
                let r = parse_ref(r, &self.objs.groups, "task group")
                    .map_err(|m| t.err("task", format!("{m} (or `self`, `child`)")))?;
                AffinityTarget::Task(r)
            }
        };
        let mask = match self.spec.masks.iter().position(|x| *x == m) {
            Some(i) => i,
            None => {
                self.spec.masks.push(m);
                self.spec.masks.len() - 1
            }
        } as u32;
        Ok(Op::SetAffinity { mask, target })
    }

    /// `bytes` of a `write` / `read` (default 100): a fixed size from 1 B to 1 GiB.
    fn io_bytes(&self, t: &TableReader<'_>) -> Result<u32, InputError> {
        Ok(match t.get("bytes") {
            None => 100,
            Some(n) => match parse_dist(&node_to_toml(n), Unit::Bytes)
                .map_err(|m| self.doc.err(n, format!("`{}.bytes`: {m}", t.name)))?
            {
                Dist::Const(b) if (1..=1 << 30).contains(&b) => b as u32,
                _ => {
                    return Err(self.doc.err(
                        n,
                        format!("`{}.bytes` must be a fixed size from 1 B to 1 GiB", t.name),
                    ))
                }
            },
        })
    }

    /// A `loop`: its `Loop` op, its body's ops and the `EndLoop`.
    fn loop_op(&mut self, t: &TableReader<'_>, out: &mut Vec<Op>) -> Result<(), InputError> {
        let count = match t.get("count") {
            None => LoopCount::Forever,
            Some(n) if n.val == Val::Str("forever".into()) => LoopCount::Forever,
            Some(n) if n.val == Val::Str("each".into()) => LoopCount::Each {
                slot: Self::reg(t, "reg", 0)?,
            },
            Some(n) if n.val == Val::Str("while".into()) => self.while_count(t)?,
            Some(_) => LoopCount::Times(self.dist(t, "count", Unit::Count)?),
        };
        let body = t
            .array("body")?
            .ok_or_else(|| t.err("body", "`loop` needs `body`"))?;
        let start = out.len();
        out.push(Op::Syscall); // placeholder
        let name = format!("{}.body", t.name);
        self.ops(body, &name, out)?;
        let end = out.len();
        out[start] = Op::Loop { count, end };
        out.push(Op::EndLoop { start });
        Ok(())
    }

    /// `count = "while"`: until a deadline (`until`, `reg`) and/or a ticket word
    /// (`ticket`, `limit`).
    fn while_count(&mut self, t: &TableReader<'_>) -> Result<LoopCount, InputError> {
        let deadline = match t.get("until") {
            None => None,
            Some(n) => match parse_dist(&node_to_toml(n), Unit::Time)
                .map_err(|m| self.doc.err(n, format!("`{}.until`: {m}", t.name)))?
            {
                Dist::Const(d) => Some((Self::reg(t, "reg", 0)?, d)),
                _ => {
                    return Err(self
                        .doc
                        .err(n, format!("`{}.until` must be a fixed time", t.name)))
                }
            },
        };
        let ticket = match t.get("ticket") {
            None => None,
            Some(_) => {
                let w = self.obj(t, "ticket", "word")?;
                let IdxExpr::Const(k) = w.idx else {
                    return Err(t.err(
                        "ticket",
                        "`ticket` must name a fixed word (`name` or `name[K]`)",
                    ));
                };
                let limit = t
                    .uint("limit", 0, u64::MAX >> 1)?
                    .ok_or_else(|| t.err("limit", "a `ticket` loop needs `limit`"))?;
                Some((w.base + k, limit))
            }
        };
        if deadline.is_none() && ticket.is_none() {
            return Err(t.err(
                "count",
                "a `while` loop needs `until` (with `reg`) or `ticket` (with `limit`)",
            ));
        }
        Ok(LoopCount::While {
            deadline,
            ticket,
            unset: None,
        })
    }

    /// Shared words, registers, lists, post/await, spin locks; else an unknown op.
    fn shared_op(&mut self, t: &TableReader<'_>, op: &str) -> Result<Op, InputError> {
        Ok(match op {
            "store" => Op::Store {
                w: self.obj(t, "word", "word")?,
                slot: Self::reg(t, "reg", 0)?,
            },
            "load" => Op::Load {
                slot: Self::reg(t, "reg", 0)?,
                w: self.obj(t, "word", "word")?,
            },
            "fetch_add" => Op::FetchAdd {
                w: self.obj(t, "word", "word")?,
                slot: Self::reg(t, "reg", 0)?,
                add: t.uint("add", 0, u64::MAX >> 1)?.unwrap_or(1),
            },
            "set_reg" => Op::SetReg {
                slot: Self::reg(t, "reg", 0)?,
                val: t.uint("value", 0, u64::MAX >> 1)?.unwrap_or(0),
            },
            "add_word" => Op::AddWord {
                slot: Self::reg(t, "reg", 0)?,
                w: self.obj(t, "word", "word")?,
            },
            "elapsed" => Op::Elapsed {
                slot: Self::reg(t, "reg", 0)?,
            },
            "record_reg" => {
                let name = t
                    .str("metric")?
                    .ok_or_else(|| t.err("metric", "`record_reg` needs `metric`"))?;
                Op::RecordReg {
                    metric: self.spec.metric(name, "ns"),
                    slot: Self::reg(t, "reg", 0)?,
                    div: t.uint("div", 1, u64::MAX >> 1)?.unwrap_or(1),
                }
            }
            "push" => Op::Push {
                l: self.obj(t, "list", "list")?,
                item: Self::push_item(t)?,
            },
            "splice" => Op::Splice {
                l: self.obj(t, "list", "list")?,
            },
            "futex_post" => Op::FutexPost {
                f: self.obj(t, "futex", "futex")?,
            },
            "futex_await" => Op::FutexAwait {
                f: self.obj(t, "futex", "futex")?,
            },
            "spin_lock" => Op::SpinLock {
                l: self.obj(t, "spinlock", "spinlock")?,
                slot: Self::reg(t, "reg", 0)?,
            },
            "spin_unlock" => Op::SpinUnlock {
                l: self.obj(t, "spinlock", "spinlock")?,
            },
            other => return Err(t.err("op", format!("unknown op `{other}`"))),
        })
    }

    /// `item` of a `push` (default the instance): an integer or an index expression.
    fn push_item(t: &TableReader<'_>) -> Result<IdxExpr, InputError> {
        Ok(match t.get("item") {
            None => IdxExpr::Instance { div: 1, add: 0 },
            Some(n) => match &n.val {
                Val::Int(k) if (0..=u32::MAX as i64).contains(k) => IdxExpr::Const(*k as u32),
                Val::Str(e) => {
                    // Reuse the reference parser on a dummy array.
                    let mut a = BTreeMap::new();
                    a.insert("x".to_string(), (0, u32::MAX));
                    parse_ref(&format!("x[{e}]"), &a, "item")
                        .map_err(|m| t.err("item", m))?
                        .idx
                }
                _ => {
                    return Err(t.err(
                        "item",
                        "`item` must be an integer or an index like \"i\", \"i+K\", \"r2\"",
                    ))
                }
            },
        })
    }

    fn program(&mut self, node: &Node, name: &str, ctx_name: &str) -> Result<usize, InputError> {
        match &node.val {
            Val::Str(s) => self
                .prog_names
                .get(s.as_str())
                .copied()
                .ok_or_else(|| self.doc.err(node, format!("unknown program `{s}`"))),
            Val::Array(a) => {
                let mut ops = Vec::new();
                self.ops(a, ctx_name, &mut ops)?;
                self.spec.programs.push(Program {
                    name: name.to_string(),
                    work_class: None,
                    ops,
                });
                Ok(self.spec.programs.len() - 1)
            }
            v => Err(self.doc.err(
                node,
                format!(
                    "`{ctx_name}` must be an array of ops or a program name, found {}",
                    v.type_name()
                ),
            )),
        }
    }
}

/// The cpulist at `cpus`, if given: only CPUs of this `nr_cpus`-CPU machine, at
/// least one.
fn cpulist(t: &TableReader<'_>, nr_cpus: usize) -> Result<Option<CpuMask>, InputError> {
    let Some(s) = t.str("cpus")? else {
        return Ok(None);
    };
    let m = CpuMask::parse_cpulist(s).map_err(|e| t.err("cpus", format!("`cpus`: {e}")))?;
    if m.is_empty() || m.iter().any(|c| c >= nr_cpus) {
        return Err(t.err(
            "cpus",
            format!("`cpus = \"{s}\"` must name CPUs of this {nr_cpus}-CPU machine"),
        ));
    }
    Ok(Some(m))
}

/// Parse `[workload]` of kind `tasks` into a [`WorkloadSpec`].
pub fn parse(doc: &Doc, w: &TableReader<'_>, nr_cpus: usize) -> Result<WorkloadSpec, InputError> {
    let mut cx = Ctx {
        doc,
        objs: Objects::default(),
        prog_names: BTreeMap::new(),
        spec: WorkloadSpec::default(),
        nr_cpus,
    };
    for key in [
        "channel", "futex", "mutex", "barrier", "condvar", "word", "list", "spinlock",
    ] {
        cx.declare(w, key)?;
    }
    // The task groups' names and sizes first: a program may name a group's tasks
    // (`set_affinity`'s `task`) before the group is declared.
    if let Some(tasks) = w.array("task")? {
        let mut base = 0u64;
        for (gi, item) in tasks.iter().enumerate() {
            let t = TableReader::new(doc, item, &format!("workload.task[{gi}]"))?;
            let count = t.uint("count", 1, MAX_TASKS as u64)?.unwrap_or(1);
            if let Some(name) = t.str("name")? {
                // Past MAX_TASKS in all the group loop below refuses the file.
                let at = base.min(u64::from(u32::MAX)) as u32;
                if cx
                    .objs
                    .groups
                    .insert(name.to_string(), (at, count as u32))
                    .is_some()
                {
                    cx.objs.twice.insert(name.to_string());
                }
            }
            base += count;
        }
    }
    if let Some(progs) = w.table("programs")? {
        // Reserve names first so programs can fork each other.
        let names: Vec<String> = progs.keys().cloned().collect();
        for (i, n) in names.iter().enumerate() {
            cx.prog_names.insert(n.clone(), i);
            cx.spec.programs.push(Program {
                name: n.clone(),
                work_class: None,
                ops: Vec::new(),
            });
        }
        for (i, n) in names.iter().enumerate() {
            let node = progs
                .get(
                    progs
                        .keys()
                        .find(|k| *k == n)
                        .map(|s| s.as_str())
                        .unwrap_or_default(),
                )
                .expect("key exists");
            let Val::Array(a) = &node.val else {
                return Err(doc.err(
                    node,
                    format!("`workload.programs.{n}` must be an array of ops"),
                ));
            };
            let mut ops = Vec::new();
            cx.ops(a, &format!("workload.programs.{n}"), &mut ops)?;
            cx.spec.programs[i].ops = ops;
        }
        progs.finish()?;
    }
    let tasks = w.array("task")?.ok_or_else(|| {
        w.err(
            "task",
            "a `tasks` workload needs at least one [[workload.task]]",
        )
    })?;
    let mut total = 0usize;
    for (gi, item) in tasks.iter().enumerate() {
        let t = TableReader::new(doc, item, &format!("workload.task[{gi}]"))?;
        let name = t
            .str("name")?
            .ok_or_else(|| t.err("name", "every task group needs a `name`"))?
            .to_string();
        let count = t.uint("count", 1, MAX_TASKS as u64)?.unwrap_or(1) as u32;
        total += count as usize;
        if total > MAX_TASKS {
            return Err(t.err(
                "count",
                format!(
                    "this `count` brings the workload to {total} tasks, more than the limit of {MAX_TASKS} (see docs/limits.md)"
                ),
            ));
        }
        let cpus = cpulist(&t, nr_cpus)?.map(std::sync::Arc::new);
        let nice = t.int("nice")?.unwrap_or(0);
        if !(-20..=19).contains(&nice) {
            return Err(t.err("nice", format!("nice {nice} outside -20..=19")));
        }
        let policy = match t.str("policy")?.unwrap_or("normal") {
            "normal" | "other" => Policy::Normal,
            "batch" => Policy::Batch,
            "idle" => Policy::Idle,
            p => {
                return Err(t.err(
                    "policy",
                    format!("unknown policy `{p}` (normal, batch, idle)"),
                ))
            }
        };
        let start_ns = match t.get("start") {
            None => 0,
            Some(n) => match parse_dist(&node_to_toml(n), Unit::Time).map_err(|m| doc.err(n, m))? {
                Dist::Const(v) => v,
                _ => return Err(doc.err(n, "`start` must be a fixed time")),
            },
        };
        let threads = t.bool("threads")?.unwrap_or(false);
        let pnode = t
            .get("program")
            .ok_or_else(|| t.err("program", "every task group needs a `program`"))?;
        let prog = cx.program(pnode, &name, &format!("workload.task[{gi}].program"))?;
        if let Some(class) = t.str("work_class")? {
            let p = &mut cx.spec.programs[prog];
            match &p.work_class {
                Some(c) if c != class => {
                    return Err(t.err(
                        "work_class",
                        format!(
                        "program `{}` already has work class `{c}`: a program's work has one class",
                        p.name
                    ),
                    ))
                }
                _ => p.work_class = Some(class.to_string()),
            }
        }
        t.finish()?;
        let process = threads.then_some(gi as u32);
        for i in 0..count {
            let tname = if count == 1 {
                name.clone()
            } else {
                format!("{name}-{i}")
            };
            cx.spec.tasks.push(TaskSpec {
                name: tname,
                prog,
                instance: i,
                cpus: cpus.clone(),
                nice: nice as i32,
                policy,
                start_ns,
                process,
            });
        }
    }
    cx.spec.validate().map_err(|m| w.err("task", m))?;
    Ok(cx.spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_references() {
        let mut a = BTreeMap::new();
        a.insert("p".to_string(), (10, 4));
        assert_eq!(parse_ref("p", &a, "channel").unwrap().resolve(3), 10);
        assert_eq!(parse_ref("p[i]", &a, "channel").unwrap().resolve(3), 13);
        assert_eq!(parse_ref("p[i/2]", &a, "channel").unwrap().resolve(3), 11);
        assert_eq!(parse_ref("p[i/2+1]", &a, "channel").unwrap().resolve(5), 13);
        assert_eq!(parse_ref("p[2]", &a, "channel").unwrap().resolve(0), 12);
        assert!(parse_ref("p[4]", &a, "channel")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ref("q", &a, "channel")
            .unwrap_err()
            .contains("unknown channel `q`"));
        assert!(parse_ref("p[j]", &a, "channel").is_err());
        let r = parse_ref("p[r2]", &a, "word").unwrap();
        assert_eq!(r.resolve_at(0, &[0, 0, 6, 0, 0, 0, 0, 0], 0), 12);
        let c = parse_ref("p[cpu]", &a, "spinlock").unwrap();
        assert_eq!(c.resolve_at(0, &[0; NR_REGS], 3), 13);
        assert!(parse_ref("p[r8]", &a, "word")
            .unwrap_err()
            .contains("out of range"));
    }
}
