//! trace-cmd `trace.dat`: the simulated run as `trace-cmd record` would save it.
//!
//! `trace-cmd record -e sched -e power` reads the kernel's per-CPU ftrace ring
//! buffers page by page (`/sys/kernel/tracing/per_cpu/cpuN/trace_pipe_raw`) and
//! stores the raw pages in a `trace.dat` file, next to everything a reader needs to
//! decode them offline: the layout of a ring-buffer page
//! (`events/header_page`) and of an entry header (`events/header_event`), each
//! enabled event's `format` file (its ID, field offsets and sizes, and the
//! `TP_printk` format as `print fmt`), `/proc/kallsyms`, the `trace_printk`
//! formats and `saved_cmdlines` (pid → comm). `trace-cmd report` then prints the
//! events of all CPUs merged by timestamp, and KernelShark draws them as per-CPU and
//! per-task timelines. Kernel engineers pass `trace.dat` files around (in bug
//! reports, on mailing lists) because the file is compact, exact (nanosecond
//! timestamps, every field at its kernel width) and self-describing, so anything
//! built on libtracecmd / libtraceevent reads it on another machine: `trace-cmd
//! report`, KernelShark, LISA's trace parsers.
//!
//! This writer produces version 6 of the format (trace-cmd's
//! `Documentation/trace-cmd/trace-cmd.dat.v6.5.txt`), the classic uncompressed one
//! that trace-cmd 2.x and 3.x read, for a little-endian 64-bit target with 4096-byte
//! pages, as if recorded on a v5.6 kernel:
//!
//! * the initial header: magic `\x17\x08\x44` `tracing`, version `"6\0"`,
//!   endianness (0: little), `sizeof(long)` (8), page size (4096);
//! * `header_page` and `header_event` as tracefs prints them on a 64-bit kernel
//!   (`ring_buffer_print_page_header` / `ring_buffer_print_entry_header`);
//! * ftrace's own `print` format ([`PRINT`], for `trace_marker` writes: rt-app's
//!   markers); the systems `sched` (`sched_switch`,
//!   `sched_waking`, `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`,
//!   `sched_process_fork`, `sched_process_exit`), `task` (`task_rename`) and
//!   `power` (`cpu_idle`, `cpu_frequency`) with their v5.6 `format` files; the IDs are schedlab's own,
//!   stable numbering (see [`EVENTS`]), as IDs differ between kernel builds anyway;
//! * kallsyms holding `tracing_mark_write` (a `print` event's `ip`, [`MARKER_IP`],
//!   falls inside it), no `trace_printk` formats, `saved_cmdlines` with every task's
//!   comm, the CPU count, no options, then `flyrecord` and each CPU's (offset,
//!   size) of its page-aligned data;
//! * per CPU, 4096-byte ring-buffer pages: a 16-byte header (`time_stamp`, u64 ns;
//!   `commit`, the bytes of entries that follow) and up to `BUF_PAGE_SIZE` (4080)
//!   bytes of entries. An entry starts with a 32-bit header, `type_len` in the low 5
//!   bits and `time_delta` (ns since the previous entry, or since the page's
//!   timestamp for the first one) in the high 27; data entries are 4-byte aligned,
//!   `type_len` × 4 bytes of payload (or, past 112 bytes, `type_len` 0 and the length
//!   in the next word). A delta of 2^27 ns (134 ms) or more goes in a
//!   `TIME_EXTEND` entry (`type_len` 30: the low 27 bits in the header, the rest in
//!   the next word) just before the event, which then has delta 0. A page is never
//!   split across an event, and an event's extend stays on its page.
//!
//! An event's payload is its `struct trace_entry` (`common_type` = the event's ID,
//! `common_flags` = `TRACE_FLAG_IRQS_OFF` but for fork and exit,
//! `common_preempt_count` = 0 (no `CONFIG_PREEMPT_COUNT`),
//! `common_pid` = the task running on the CPU) and then its fields at the offsets of
//! its format: comms as `char[16]` (NUL-terminated, at most 15 characters),
//! `pid_t`/`int`/`u32` as 4 bytes, a `print`'s `ip` as an `unsigned long` and its
//! `buf` as the line with the newline and NUL `tracing_mark_write` ends it with,
//! `sched_switch`'s `prev_state` as a `long` with the
//! kernel's task-state bits (`S` 0x1, `D` 0x2, `X` 0x10, ..., `R` 0, and 0x100,
//! `TASK_REPORT_MAX`, for a preempted task, printed `R+`). `sched_wakeup*`'s
//! `success` is always 1. Timestamps are the simulated ns, as `trace_clock`
//! `local` counts them.
//!
//! The events and their fields come from [`ftrace::for_each_record`], the same
//! records as the ftrace text, so both show the same run. The output is a pure
//! function of the records: the same run gives the same bytes.

use crate::metrics::ftrace::{self, FieldVal, TraceRecord};
use crate::sched::core::Task;

use std::collections::BTreeMap;
use std::fmt;

/// The traced machine's page size, and so the ring-buffer page size.
pub const PAGE_SIZE: usize = 4096;
/// `struct buffer_data_page`'s header: `time_stamp` (u64) and `commit` (`local_t`).
const PAGE_HEADER: usize = 16;
/// `BUF_PAGE_SIZE`: the bytes of entries a page holds.
pub const BUF_PAGE_SIZE: usize = PAGE_SIZE - PAGE_HEADER;
/// The largest `type_len` of a data entry (`RINGBUF_TYPE_DATA_TYPE_LEN_MAX`).
pub const TYPE_LEN_MAX: u32 = 28;
/// `RINGBUF_TYPE_PADDING`.
const TYPE_PADDING: u32 = 29;
/// `RINGBUF_TYPE_TIME_EXTEND`.
pub const TYPE_TIME_EXTEND: u32 = 30;
/// `RINGBUF_TYPE_TIME_STAMP`.
const TYPE_TIME_STAMP: u32 = 31;
/// Bits of `time_delta` in an entry header (`TS_SHIFT`).
const TS_BITS: u32 = 27;
/// The largest delta an entry header holds.
pub const MAX_DELTA: u64 = (1 << TS_BITS) - 1;
/// `TRACE_FLAG_IRQS_OFF` in `common_flags`: set for the events that fire with
/// interrupts off ([`TraceRecord::irqs_off`]), as the text trace's `d` flag.
const TRACE_FLAG_IRQS_OFF: u8 = 0x01;
/// `common_preempt_count`: 0, a v5.6 build without `CONFIG_PREEMPT_COUNT` (the
/// text trace's preempt-depth column `.`).
const COMMON_PREEMPT_COUNT: u8 = 0;
/// `TASK_COMM_LEN`.
const COMM_LEN: usize = 16;

/// Why a `trace.dat` could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceDatError {
    /// A record on a CPU the machine does not have.
    Cpu { cpu: usize, nr_cpus: usize },
    /// A record of an event this writer has no format for.
    UnknownEvent(String),
    /// An event without one of its format's fields.
    MissingField { event: String, field: String },
    /// A field whose value does not fit its type (or is of the wrong kind).
    BadField {
        event: String,
        field: String,
        value: String,
    },
    /// Timestamps going backwards on one CPU.
    TimeGoesBack { cpu: usize, prev: u64, ts: u64 },
    /// A pid that does not fit `pid_t`.
    Pid(u32),
    /// More CPUs than a trace.dat of this writer holds ([`MAX_CPUS`]).
    CpuCount(usize),
}

/// The most CPUs a trace.dat of this writer holds (the kernel's `NR_CPUS` goes to
/// 8192).
pub const MAX_CPUS: usize = 1 << 16;

impl fmt::Display for TraceDatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDatError::Cpu { cpu, nr_cpus } => {
                write!(
                    f,
                    "trace.dat: event on CPU {cpu} of a {nr_cpus}-CPU machine"
                )
            }
            TraceDatError::UnknownEvent(e) => write!(f, "trace.dat: no format for event {e}"),
            TraceDatError::MissingField { event, field } => {
                write!(f, "trace.dat: {event} has no field {field}")
            }
            TraceDatError::BadField {
                event,
                field,
                value,
            } => write!(
                f,
                "trace.dat: {event}.{field} = {value} does not fit its type"
            ),
            TraceDatError::TimeGoesBack { cpu, prev, ts } => write!(
                f,
                "trace.dat: CPU {cpu}'s timestamps go back from {prev} ns to {ts} ns"
            ),
            TraceDatError::Pid(p) => write!(f, "trace.dat: pid {p} does not fit pid_t"),
            TraceDatError::CpuCount(n) => {
                write!(f, "trace.dat: {n} CPUs, more than the {MAX_CPUS} it holds")
            }
        }
    }
}

impl std::error::Error for TraceDatError {}

/// How a field is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A signed 32-bit integer (`int`, `pid_t`).
    I32,
    /// An unsigned 32-bit integer (`u32`).
    U32,
    /// A signed 16-bit integer (`short`).
    I16,
    /// `long prev_state`: task-state letters as the kernel's bits.
    State,
    /// `unsigned long ip`: a code address (`print`'s writer, [`MARKER_IP`]).
    Ip,
    /// An unsigned 64-bit integer (`unsigned long`, `unsigned long long`).
    U64,
    /// `char name[n]`: a NUL-terminated string cut to `n − 1` bytes (a comm, a
    /// cgroup path, a CPU mask).
    Chars(usize),
    /// `char buf[]`: a string to the end of the entry (size 0 in the format), with
    /// the newline and NUL `tracing_mark_write` ends it with.
    Buf,
}

/// One field of an event's format.
#[derive(Clone, Copy, Debug)]
pub struct FieldDef {
    /// The C type as the format file prints it (`char` for a comm array).
    c_type: &'static str,
    /// The field's name in the format (and `trace-cmd report -R`).
    pub name: &'static str,
    /// Its name in the [`TraceRecord`] (the `TP_printk` key).
    pub key: &'static str,
    kind: Kind,
}

impl FieldDef {
    fn size(&self) -> usize {
        match self.kind {
            Kind::I32 | Kind::U32 => 4,
            Kind::I16 => 2,
            Kind::State | Kind::Ip | Kind::U64 => 8,
            Kind::Chars(n) => n,
            Kind::Buf => 0,
        }
    }
    /// Its C alignment (a char array's is 1).
    fn align(&self) -> usize {
        match self.kind {
            Kind::Buf | Kind::Chars(_) => 1,
            Kind::I16 | Kind::I32 | Kind::U32 | Kind::State | Kind::Ip | Kind::U64 => self.size(),
        }
    }
    fn signed(&self) -> bool {
        !matches!(self.kind, Kind::U32 | Kind::Ip | Kind::U64)
    }
}

/// One event: its system, name, ID, fields after the common ones, and `print fmt`.
#[derive(Clone, Copy, Debug)]
pub struct EventDef {
    pub system: &'static str,
    pub name: &'static str,
    pub id: u16,
    pub fields: &'static [FieldDef],
    print_fmt: &'static str,
}

const fn f(c_type: &'static str, name: &'static str, key: &'static str, kind: Kind) -> FieldDef {
    FieldDef {
        c_type,
        name,
        key,
        kind,
    }
}

/// `sched_wakeup_template`'s fields (`sched_waking`, `sched_wakeup`,
/// `sched_wakeup_new`). `success` has no record key: it is always 1.
const WAKEUP_FIELDS: &[FieldDef] = &[
    f("char", "comm", "comm", Kind::Chars(COMM_LEN)),
    f("pid_t", "pid", "pid", Kind::I32),
    f("int", "prio", "prio", Kind::I32),
    f("int", "success", "", Kind::I32),
    f("int", "target_cpu", "target_cpu", Kind::I32),
];
const WAKEUP_FMT: &str =
    "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";

/// `TASK_REPORT` as v5.6's `sched_switch` format spells it out.
const TASK_REPORT: &str = "(0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040)";

/// The events this writer stores, with schedlab's IDs.
pub const EVENTS: &[EventDef] = &[
    EventDef {
        system: "sched",
        name: "sched_switch",
        id: 316,
        fields: &[
            f("char", "prev_comm", "prev_comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "prev_pid", "prev_pid", Kind::I32),
            f("int", "prev_prio", "prev_prio", Kind::I32),
            f("long", "prev_state", "prev_state", Kind::State),
            f("char", "next_comm", "next_comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "next_pid", "next_pid", Kind::I32),
            f("int", "next_prio", "next_prio", Kind::I32),
        ],
        // Built by `switch_print_fmt`.
        print_fmt: "",
    },
    EventDef {
        system: "sched",
        name: "sched_waking",
        id: 319,
        fields: WAKEUP_FIELDS,
        print_fmt: WAKEUP_FMT,
    },
    EventDef {
        system: "sched",
        name: "sched_wakeup",
        id: 318,
        fields: WAKEUP_FIELDS,
        print_fmt: WAKEUP_FMT,
    },
    EventDef {
        system: "sched",
        name: "sched_wakeup_new",
        id: 317,
        fields: WAKEUP_FIELDS,
        print_fmt: WAKEUP_FMT,
    },
    EventDef {
        system: "sched",
        name: "sched_migrate_task",
        id: 315,
        fields: &[
            f("char", "comm", "comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "pid", "pid", Kind::I32),
            f("int", "prio", "prio", Kind::I32),
            f("int", "orig_cpu", "orig_cpu", Kind::I32),
            f("int", "dest_cpu", "dest_cpu", Kind::I32),
        ],
        print_fmt: "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, REC->prio, REC->orig_cpu, REC->dest_cpu",
    },
    EventDef {
        system: "sched",
        name: "sched_process_fork",
        id: 311,
        fields: &[
            f("char", "parent_comm", "comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "parent_pid", "pid", Kind::I32),
            f("char", "child_comm", "child_comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "child_pid", "child_pid", Kind::I32),
        ],
        print_fmt: "\"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid",
    },
    EventDef {
        system: "sched",
        name: "sched_process_exit",
        id: 313,
        fields: &[
            f("char", "comm", "comm", Kind::Chars(COMM_LEN)),
            f("pid_t", "pid", "pid", Kind::I32),
            f("int", "prio", "prio", Kind::I32),
        ],
        print_fmt: "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio",
    },
    EventDef {
        system: "task",
        name: "task_rename",
        id: 300,
        fields: &[
            f("pid_t", "pid", "pid", Kind::I32),
            f("char", "oldcomm", "oldcomm", Kind::Chars(COMM_LEN)),
            f("char", "newcomm", "newcomm", Kind::Chars(COMM_LEN)),
            f("short", "oom_score_adj", "oom_score_adj", Kind::I16),
        ],
        print_fmt: "\"pid=%d oldcomm=%s newcomm=%s oom_score_adj=%hd\", REC->pid, REC->oldcomm, REC->newcomm, REC->oom_score_adj",
    },
    EventDef {
        system: "power",
        name: "cpu_idle",
        id: 437,
        fields: &[
            f("u32", "state", "state", Kind::U32),
            f("u32", "cpu_id", "cpu_id", Kind::U32),
        ],
        print_fmt: "\"state=%lu cpu_id=%lu\", (unsigned long)REC->state, (unsigned long)REC->cpu_id",
    },
    EventDef {
        system: "power",
        name: "cpu_frequency",
        id: 435,
        fields: &[
            f("u32", "state", "state", Kind::U32),
            f("u32", "cpu_id", "cpu_id", Kind::U32),
        ],
        print_fmt: "\"state=%lu cpu_id=%lu\", (unsigned long)REC->state, (unsigned long)REC->cpu_id",
    },
];

/// `print` (ftrace's `TRACE_PRINT`, ID 5): a `trace_marker` write, stored with the
/// ftrace-internal formats rather than an event system.
pub const PRINT: EventDef = EventDef {
    system: "ftrace",
    name: "print",
    id: 5,
    fields: &[
        f("unsigned long", "ip", "ip", Kind::Ip),
        f("char", "buf", "buf", Kind::Buf),
    ],
    print_fmt: "\"%ps: %s\", (void *)REC->ip, REC->buf",
};

/// The address `print` events carry as `ip`: inside `tracing_mark_write`, the one
/// function of the `kallsyms` this writer stores, so readers print
/// its name.
pub const MARKER_IP: u64 = 0xffff_ffff_8120_a5ec;

/// `/proc/kallsyms` as stored: `tracing_mark_write` and the function after it, so
/// an address inside the first resolves to it.
const KALLSYMS: &str =
    "ffffffff8120a5a0 t tracing_mark_write\nffffffff8120a8d0 t tracing_mark_raw_write\n";

/// LISA's `sched_tp` module's `char path[PATH_SIZE]`.
const PATH_SIZE: usize = 64;
/// Its `SPAN_SIZE` on a kernel built with `NR_CPUS` ≥ 512 (x86 and POWER
/// distribution kernels; arm64's 256 gives 64).
const SPAN_SIZE: usize = 128;

/// The events of LISA's `sched_tp` module (system `sched`, as its
/// `TRACE_SYSTEM`), with schedlab's IDs; `TP_STRUCT__entry` of
/// `ftrace_events.h` on a 64-bit kernel. A file holds those the run traced.
pub const SCHED_TP_EVENTS: &[EventDef] = &[
    EventDef {
        system: "sched",
        name: "sched_pelt_cfs",
        id: 1500,
        fields: &[
            f("int", "cpu", "cpu", Kind::I32),
            f("char", "path", "path", Kind::Chars(PATH_SIZE)),
            f("unsigned long", "load", "load", Kind::U64),
            f("unsigned long", "rbl_load", "rbl_load", Kind::U64),
            f("unsigned long", "util", "util", Kind::U64),
            f("unsigned long long", "update_time", "update_time", Kind::U64),
        ],
        print_fmt: "\"cpu=%d path=%s load=%lu rbl_load=%lu util=%lu update_time=%llu\", REC->cpu, REC->path, REC->load, REC->rbl_load, REC->util, REC->update_time",
    },
    EventDef {
        system: "sched",
        name: "sched_pelt_se",
        id: 1501,
        fields: &[
            f("int", "cpu", "cpu", Kind::I32),
            f("char", "path", "path", Kind::Chars(PATH_SIZE)),
            f("char", "comm", "comm", Kind::Chars(COMM_LEN)),
            f("int", "pid", "pid", Kind::I32),
            f("unsigned long", "load", "load", Kind::U64),
            f("unsigned long", "rbl_load", "rbl_load", Kind::U64),
            f("unsigned long", "util", "util", Kind::U64),
            f("unsigned long long", "update_time", "update_time", Kind::U64),
        ],
        print_fmt: "\"cpu=%d path=%s comm=%s pid=%d load=%lu rbl_load=%lu util=%lu update_time=%llu\", REC->cpu, REC->path, REC->comm, REC->pid, REC->load, REC->rbl_load, REC->util, REC->update_time",
    },
    EventDef {
        system: "sched",
        name: "sched_overutilized",
        id: 1502,
        fields: &[
            f("int", "overutilized", "overutilized", Kind::I32),
            f("char", "span", "span", Kind::Chars(SPAN_SIZE)),
        ],
        print_fmt: "\"overutilized=%d span=0x%s\", REC->overutilized, REC->span",
    },
    EventDef {
        system: "sched",
        name: "sched_util_est_se",
        id: 1503,
        fields: &[
            f("int", "cpu", "cpu", Kind::I32),
            f("char", "path", "path", Kind::Chars(PATH_SIZE)),
            f("char", "comm", "comm", Kind::Chars(COMM_LEN)),
            f("int", "pid", "pid", Kind::I32),
            f("unsigned int", "enqueued", "enqueued", Kind::U32),
            f("unsigned int", "ewma", "ewma", Kind::U32),
            f("unsigned long", "util", "util", Kind::U64),
        ],
        print_fmt: "\"cpu=%d path=%s comm=%s pid=%d enqueued=%u ewma=%u util=%lu\", REC->cpu, REC->path, REC->comm, REC->pid, REC->enqueued, REC->ewma, REC->util",
    },
    EventDef {
        system: "sched",
        name: "sched_util_est_cfs",
        id: 1504,
        fields: &[
            f("int", "cpu", "cpu", Kind::I32),
            f("char", "path", "path", Kind::Chars(PATH_SIZE)),
            f("unsigned int", "enqueued", "enqueued", Kind::U32),
            f("unsigned int", "ewma", "ewma", Kind::U32),
            f("unsigned long", "util", "util", Kind::U64),
        ],
        print_fmt: "\"cpu=%d path=%s enqueued=%u ewma=%u util=%lu\", REC->cpu, REC->path, REC->enqueued, REC->ewma, REC->util",
    },
    EventDef {
        system: "sched",
        name: "sched_cpu_capacity",
        id: 1505,
        fields: &[
            f("int", "cpu", "cpu", Kind::I32),
            f("unsigned long", "capacity", "capacity", Kind::U64),
            f("unsigned long", "capacity_orig", "capacity_orig", Kind::U64),
            f("unsigned long", "capacity_curr", "capacity_curr", Kind::U64),
        ],
        print_fmt: "\"cpu=%d capacity=%lu capacity_orig=%lu capacity_curr=%lu\", REC->cpu, REC->capacity, REC->capacity_orig, REC->capacity_curr",
    },
];

/// The `sched_tp` events of `set`, in [`SCHED_TP_EVENTS`] order.
pub fn sched_tp_defs(set: crate::sched::SchedTpSet) -> Vec<&'static EventDef> {
    SCHED_TP_EVENTS.iter().filter(|e| set.has(e.name)).collect()
}

/// The event named `name`.
pub fn event_def(name: &str) -> Option<&'static EventDef> {
    if name == PRINT.name {
        return Some(&PRINT);
    }
    EVENTS
        .iter()
        .chain(SCHED_TP_EVENTS)
        .find(|e| e.name == name)
}

/// `sched_switch`'s `print fmt` (v5.6: `prev_state` as `__print_flags` of the
/// `TASK_REPORT` bits, `R` when none, `+` for `TASK_REPORT_MAX`).
fn switch_print_fmt() -> String {
    let max = format!("(({TASK_REPORT} + 1) << 1)");
    let mask = format!("((({TASK_REPORT} + 1) << 1) - 1)");
    format!(
        "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", \
         REC->prev_comm, REC->prev_pid, REC->prev_prio, \
         (REC->prev_state & {mask}) ? __print_flags(REC->prev_state & {mask}, \"|\", \
         {{ 0x0001, \"S\" }}, {{ 0x0002, \"D\" }}, {{ 0x0004, \"T\" }}, {{ 0x0008, \"t\" }}, \
         {{ 0x0010, \"X\" }}, {{ 0x0020, \"Z\" }}, {{ 0x0040, \"P\" }}, {{ 0x0080, \"I\" }}) : \"R\", \
         REC->prev_state & {max} ? \"+\" : \"\", \
         REC->next_comm, REC->next_pid, REC->next_prio"
    )
}

/// The size of `struct trace_entry` (the common fields).
const COMMON_SIZE: usize = 8;

/// Offsets of an event's fields (after the common ones), and its payload size.
fn layout(ev: &EventDef) -> (Vec<usize>, usize) {
    let mut off = COMMON_SIZE;
    let mut offs = Vec::with_capacity(ev.fields.len());
    for fd in ev.fields {
        off = off.next_multiple_of(fd.align());
        offs.push(off);
        off += fd.size();
    }
    // The struct's size is a multiple of its largest member's alignment.
    let align = ev
        .fields
        .iter()
        .map(|f| f.size().min(8))
        .max()
        .unwrap_or(4)
        .max(4);
    (offs, off.next_multiple_of(align))
}

/// The event's `format` file, as `/sys/kernel/tracing/events/<system>/<name>/format`
/// prints it.
pub fn format_file(ev: &EventDef) -> String {
    let mut s = format!("name: {}\nID: {}\nformat:\n", ev.name, ev.id);
    let line = |s: &mut String, decl: &str, off: usize, size: usize, signed: bool| {
        s.push_str(&format!(
            "\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n",
            u8::from(signed)
        ));
    };
    line(&mut s, "unsigned short common_type", 0, 2, false);
    line(&mut s, "unsigned char common_flags", 2, 1, false);
    line(&mut s, "unsigned char common_preempt_count", 3, 1, false);
    line(&mut s, "int common_pid", 4, 4, true);
    s.push('\n');
    let (offs, _) = layout(ev);
    for (fd, off) in ev.fields.iter().zip(offs) {
        let decl = match fd.kind {
            Kind::Buf => format!("{} {}[]", fd.c_type, fd.name),
            Kind::Chars(n) => format!("{} {}[{n}]", fd.c_type, fd.name),
            _ => format!("{} {}", fd.c_type, fd.name),
        };
        line(&mut s, &decl, off, fd.size(), fd.signed());
    }
    let pf = if ev.name == "sched_switch" {
        switch_print_fmt()
    } else {
        ev.print_fmt.to_string()
    };
    s.push_str(&format!("\nprint fmt: {pf}\n"));
    s
}

/// `events/header_page` of a 64-bit kernel.
pub fn header_page() -> String {
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:{PAGE_HEADER};\tsize:{BUF_PAGE_SIZE};\tsigned:1;\n"
    )
}

/// `events/header_event`.
pub fn header_event() -> String {
    format!(
        "# compressed entry header\n\
         \ttype_len    :    5 bits\n\
         \ttime_delta  :   27 bits\n\
         \tarray       :   32 bits\n\
         \n\
         \tpadding     : type == {TYPE_PADDING}\n\
         \ttime_extend : type == {TYPE_TIME_EXTEND}\n\
         \ttime_stamp : type == {TYPE_TIME_STAMP}\n\
         \tdata max type_len  == {TYPE_LEN_MAX}\n"
    )
}

/// A ring-buffer entry header: `type_len` in the low 5 bits, `time_delta` in the
/// high 27 (little-endian bitfields). `delta` must be at most [`MAX_DELTA`].
pub fn entry_header(type_len: u32, delta: u64) -> [u8; 4] {
    let w = (type_len & 0x1f) | (((delta & MAX_DELTA) as u32) << 5);
    w.to_le_bytes()
}

/// A `TIME_EXTEND` entry for `delta` ns: the low 27 bits in the header, the rest
/// (shifted down by 27) in the next word.
pub fn time_extend(delta: u64) -> [u8; 8] {
    let mut b = [0; 8];
    b[..4].copy_from_slice(&entry_header(TYPE_TIME_EXTEND, delta & MAX_DELTA));
    b[4..].copy_from_slice(&((delta >> TS_BITS) as u32).to_le_bytes());
    b
}

/// A data entry of `payload`, `delta` ns after the previous one (at most
/// [`MAX_DELTA`]): padded to 4 bytes; `type_len` = its words, or 0 and the length
/// word (payload bytes + 4) past [`TYPE_LEN_MAX`] words.
pub fn data_entry(delta: u64, payload: &[u8]) -> Vec<u8> {
    let len = payload.len().max(1).next_multiple_of(4);
    let mut v = Vec::with_capacity(len + 8);
    if len / 4 <= TYPE_LEN_MAX as usize {
        v.extend_from_slice(&entry_header((len / 4) as u32, delta));
    } else {
        v.extend_from_slice(&entry_header(0, delta));
        v.extend_from_slice(&((len + 4) as u32).to_le_bytes());
    }
    v.extend_from_slice(payload);
    v.resize(v.len() + len - payload.len(), 0);
    v
}

/// One CPU's ring-buffer pages, filled in timestamp order.
#[derive(Debug, Default)]
pub struct CpuPages {
    /// Whole pages, the last one being filled.
    bytes: Vec<u8>,
    /// Bytes of entries in the last page.
    used: usize,
    /// The timestamp of the last entry.
    last: u64,
}

impl CpuPages {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pages so far (a multiple of [`PAGE_SIZE`] bytes).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn open_page(&mut self, ts: u64) {
        let start = self.bytes.len();
        self.bytes.resize(start + PAGE_SIZE, 0);
        self.bytes[start..start + 8].copy_from_slice(&ts.to_le_bytes());
        self.used = 0;
        self.last = ts;
    }

    fn append(&mut self, b: &[u8]) {
        let page = self.bytes.len() - PAGE_SIZE;
        let at = page + PAGE_HEADER + self.used;
        self.bytes[at..at + b.len()].copy_from_slice(b);
        self.used += b.len();
        self.bytes[page + 8..page + 16].copy_from_slice(&(self.used as u64).to_le_bytes());
    }

    /// Append an event of `payload` at `ts` ns; `cpu` names the CPU in errors.
    pub fn push(&mut self, cpu: usize, ts: u64, payload: &[u8]) -> Result<(), TraceDatError> {
        let entry_len = data_entry(0, payload).len();
        if entry_len > BUF_PAGE_SIZE {
            return Err(TraceDatError::BadField {
                event: "entry".into(),
                field: "length".into(),
                value: entry_len.to_string(),
            });
        }
        if self.bytes.is_empty() {
            self.open_page(ts);
        } else if ts < self.last {
            return Err(TraceDatError::TimeGoesBack {
                cpu,
                prev: self.last,
                ts,
            });
        }
        let mut delta = ts - self.last;
        let extend = if delta > MAX_DELTA { 8 } else { 0 };
        if self.used + extend + entry_len > BUF_PAGE_SIZE {
            self.open_page(ts);
            delta = 0;
        }
        if delta > MAX_DELTA {
            if delta >> TS_BITS > u64::from(u32::MAX) {
                // More than 2^59 ns (18 years) in one step: start a page instead.
                self.open_page(ts);
            } else {
                self.append(&time_extend(delta));
            }
            delta = 0;
        }
        self.append(&data_entry(delta, payload));
        self.last = ts;
        Ok(())
    }
}

/// The task-state bits of `sched_switch`'s `prev_state` for its letters (`S`,
/// `R+`, `D|W`...); `None` for a letter the kernel does not print.
pub fn prev_state_bits(letters: &str) -> Option<i64> {
    let (base, preempt) = match letters.strip_suffix('+') {
        Some(b) => (b, 0x100),
        None => (letters, 0),
    };
    if base == "R" {
        return Some(preempt);
    }
    let mut bits = 0;
    for l in base.split('|') {
        bits |= match l {
            "S" => 0x1,
            "D" => 0x2,
            "T" => 0x4,
            "t" => 0x8,
            "X" => 0x10,
            "Z" => 0x20,
            "P" => 0x40,
            "I" => 0x80,
            _ => return None,
        };
    }
    Some(bits | preempt)
}

/// The binary payload of `r` (common fields, then its fields per `ev`'s format).
pub fn payload(ev: &EventDef, r: &TraceRecord) -> Result<Vec<u8>, TraceDatError> {
    let (offs, size) = layout(ev);
    let mut b = vec![0u8; size];
    b[0..2].copy_from_slice(&ev.id.to_le_bytes());
    b[2] = if r.irqs_off() { TRACE_FLAG_IRQS_OFF } else { 0 };
    b[3] = COMMON_PREEMPT_COUNT;
    let pid = i32::try_from(r.pid).map_err(|_| TraceDatError::Pid(r.pid))?;
    b[4..8].copy_from_slice(&pid.to_le_bytes());
    for (fd, off) in ev.fields.iter().zip(offs) {
        let bad = |v: &FieldVal| TraceDatError::BadField {
            event: r.event.to_string(),
            field: fd.name.to_string(),
            value: v.to_string(),
        };
        if fd.key.is_empty() {
            // `success`: always 1 since v4.4.
            b[off..off + 4].copy_from_slice(&1i32.to_le_bytes());
            continue;
        }
        let v = r
            .fields
            .iter()
            .find(|(k, _)| *k == fd.key)
            .map(|(_, v)| v)
            .ok_or_else(|| TraceDatError::MissingField {
                event: r.event.to_string(),
                field: fd.key.to_string(),
            })?;
        match (fd.kind, v) {
            (Kind::I32, FieldVal::Int(i) | FieldVal::Cpu(i)) => {
                let i = i32::try_from(*i).map_err(|_| bad(v))?;
                b[off..off + 4].copy_from_slice(&i.to_le_bytes());
            }
            (Kind::I16, FieldVal::Int(i)) => {
                let i = i16::try_from(*i).map_err(|_| bad(v))?;
                b[off..off + 2].copy_from_slice(&i.to_le_bytes());
            }
            (Kind::U32, FieldVal::Int(i) | FieldVal::Cpu(i)) => {
                let i = u32::try_from(*i).map_err(|_| bad(v))?;
                b[off..off + 4].copy_from_slice(&i.to_le_bytes());
            }
            (Kind::State, FieldVal::Str(s)) => {
                let bits = prev_state_bits(s).ok_or_else(|| bad(v))?;
                b[off..off + 8].copy_from_slice(&bits.to_le_bytes());
            }
            (Kind::State, FieldVal::Int(i)) => {
                b[off..off + 8].copy_from_slice(&i.to_le_bytes());
            }
            (Kind::U64, FieldVal::Int(i)) => {
                let i = u64::try_from(*i).map_err(|_| bad(v))?;
                b[off..off + 8].copy_from_slice(&i.to_le_bytes());
            }
            (Kind::Chars(n), FieldVal::Str(s) | FieldVal::Hex(s)) => {
                let mut k = s.len().min(n - 1);
                while !s.is_char_boundary(k) {
                    k -= 1;
                }
                b[off..off + k].copy_from_slice(&s.as_bytes()[..k]);
            }
            (Kind::Ip, FieldVal::Str(s)) if s == ftrace::MARKER_IP_SYM => {
                b[off..off + 8].copy_from_slice(&MARKER_IP.to_le_bytes());
            }
            (Kind::Buf, FieldVal::Str(s)) => {
                // The last field: the text runs to the end of the entry.
                b.truncate(off);
                b.extend_from_slice(s.as_bytes());
                if !s.ends_with('\n') {
                    b.push(b'\n');
                }
                b.push(0);
            }
            _ => return Err(bad(v)),
        }
    }
    Ok(b)
}

/// A comm as text traces print it (at most 15 characters, no whitespace).
fn text_comm(name: &str) -> String {
    name.chars()
        .take(COMM_LEN - 1)
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Render `records` (in time order) of a run on `nr_cpus` CPUs as a `trace.dat`;
/// `cmdlines` are the (pid, comm) pairs of `saved_cmdlines`. The `sched_tp`
/// formats stored are those of the events among the records.
pub fn render_records(
    records: &[TraceRecord],
    cmdlines: &BTreeMap<u32, String>,
    nr_cpus: usize,
) -> Result<Vec<u8>, TraceDatError> {
    let tp: Vec<&EventDef> = SCHED_TP_EVENTS
        .iter()
        .filter(|e| records.iter().any(|r| r.event == e.name))
        .collect();
    render_records_with(records, cmdlines, nr_cpus, &tp)
}

/// [`render_records`] with the `sched_tp` formats `tp` (the events traced, whether
/// or not any fired).
pub fn render_records_with(
    records: &[TraceRecord],
    cmdlines: &BTreeMap<u32, String>,
    nr_cpus: usize,
    tp: &[&EventDef],
) -> Result<Vec<u8>, TraceDatError> {
    if nr_cpus > MAX_CPUS {
        return Err(TraceDatError::CpuCount(nr_cpus));
    }
    let mut cpus: Vec<CpuPages> = (0..nr_cpus).map(|_| CpuPages::new()).collect();
    for r in records {
        let ev = event_def(r.event).ok_or_else(|| TraceDatError::UnknownEvent(r.event.into()))?;
        let p = payload(ev, r)?;
        let pages = cpus.get_mut(r.cpu).ok_or(TraceDatError::Cpu {
            cpu: r.cpu,
            nr_cpus,
        })?;
        pages.push(r.cpu, r.ts, &p)?;
    }

    let mut out = Vec::new();
    out.extend_from_slice(b"\x17\x08\x44tracing6\0");
    out.push(0); // little endian
    out.push(8); // sizeof(long)
    put_u32(&mut out, PAGE_SIZE as u32);
    for (name, text) in [
        (&b"header_page\0"[..], header_page()),
        (&b"header_event\0"[..], header_event()),
    ] {
        out.extend_from_slice(name);
        put_u64(&mut out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
    // ftrace's own formats: `print`, for trace_marker writes.
    put_u32(&mut out, 1);
    let text = format_file(&PRINT);
    put_u64(&mut out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
    let systems = ["sched", "task", "power"];
    put_u32(&mut out, systems.len() as u32);
    for sys in systems {
        out.extend_from_slice(sys.as_bytes());
        out.push(0);
        let evs: Vec<&EventDef> = EVENTS
            .iter()
            .chain(tp.iter().copied())
            .filter(|e| e.system == sys)
            .collect();
        put_u32(&mut out, evs.len() as u32);
        for ev in evs {
            let text = format_file(ev);
            put_u64(&mut out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
    }
    put_u32(&mut out, KALLSYMS.len() as u32);
    out.extend_from_slice(KALLSYMS.as_bytes());
    put_u32(&mut out, 0); // trace_printk formats
    let mut cl = String::new();
    for (pid, comm) in cmdlines {
        cl.push_str(&format!("{pid} {comm}\n"));
    }
    put_u64(&mut out, cl.len() as u64);
    out.extend_from_slice(cl.as_bytes());
    put_u32(&mut out, nr_cpus as u32); // at most MAX_CPUS
    out.extend_from_slice(b"flyrecord\0");
    let table = out.len();
    out.resize(table + 16 * nr_cpus, 0);
    out.resize(out.len().next_multiple_of(PAGE_SIZE), 0);
    for (i, c) in cpus.iter().enumerate() {
        let (off, size) = (out.len() as u64, c.bytes().len() as u64);
        let at = table + 16 * i;
        out[at..at + 8].copy_from_slice(&off.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&size.to_le_bytes());
        out.extend_from_slice(c.bytes());
    }
    Ok(out)
}

/// Render the tracepoints of `log` of a run on `nr_cpus` CPUs with tasks `tasks`
/// (indexed by pid) as a trace-cmd `trace.dat` (version 6).
pub fn render(
    log: &crate::metrics::EventLog,
    tasks: &[Task],
    nr_cpus: usize,
) -> Result<Vec<u8>, TraceDatError> {
    if nr_cpus > MAX_CPUS {
        return Err(TraceDatError::CpuCount(nr_cpus));
    }
    let mut records = Vec::new();
    ftrace::for_each_record(log, tasks, nr_cpus, |r| records.push(r.clone()));
    // saved_cmdlines: every task (pid 0 is the idle task, which trace-cmd names
    // itself), with the comm the records print for it.
    let mut cmdlines = BTreeMap::new();
    for (pid, t) in tasks.iter().enumerate().skip(1) {
        if let Ok(pid) = u32::try_from(pid) {
            cmdlines.insert(pid, text_comm(&t.name));
        }
    }
    for r in &records {
        if r.pid != 0 {
            cmdlines.insert(r.pid, r.comm.clone());
        }
    }
    render_records_with(&records, &cmdlines, nr_cpus, &sched_tp_defs(log.sched_tp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_header_bit_layout() {
        // type_len 10 (40-byte payload), delta 1000 ns: 10 | 1000 << 5 = 0x7d0a.
        assert_eq!(entry_header(10, 1000), [0x0a, 0x7d, 0x00, 0x00]);
        // The largest delta fills the 27 high bits.
        assert_eq!(entry_header(1, MAX_DELTA), [0xe1, 0xff, 0xff, 0xff]);
        // TIME_EXTEND of 2^27 + 5 ns: header 30 | 5 << 5 = 0xbe, then 1.
        assert_eq!(time_extend((1 << 27) + 5), [0xbe, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn data_entry_pads_and_uses_length_word_for_big_payloads() {
        assert_eq!(
            data_entry(3, &[1, 2, 3, 4, 5]),
            vec![0x62, 0, 0, 0, 1, 2, 3, 4, 5, 0, 0, 0]
        );
        let big = vec![7u8; 116];
        let e = data_entry(0, &big);
        assert_eq!(&e[..8], &[0, 0, 0, 0, 120, 0, 0, 0]);
        assert_eq!(e.len(), 8 + 116);
    }

    #[test]
    fn page_with_a_time_extend() {
        let mut p = CpuPages::new();
        p.push(0, 1000, &[0xaa; 8]).unwrap();
        p.push(0, 1010, &[0xbb; 8]).unwrap();
        // 2^27 + 7 ns later: an extend, then the event with delta 0.
        p.push(0, 1010 + (1 << 27) + 7, &[0xcc; 8]).unwrap();
        let b = p.bytes();
        assert_eq!(b.len(), PAGE_SIZE);
        let mut want = Vec::new();
        want.extend_from_slice(&1000u64.to_le_bytes());
        // commit: 12 + 12 + 8 + 12 bytes of entries
        want.extend_from_slice(&44u64.to_le_bytes());
        // event 1: type_len 2, delta 0
        want.extend_from_slice(&[0x02, 0, 0, 0]);
        want.extend_from_slice(&[0xaa; 8]);
        // event 2: type_len 2, delta 10: 2 | 10 << 5 = 0x142
        want.extend_from_slice(&[0x42, 0x01, 0, 0]);
        want.extend_from_slice(&[0xbb; 8]);
        // extend: 30 | 7 << 5 = 0xfe, upper word 1
        want.extend_from_slice(&[0xfe, 0, 0, 0, 1, 0, 0, 0]);
        // event 3: type_len 2, delta 0
        want.extend_from_slice(&[0x02, 0, 0, 0]);
        want.extend_from_slice(&[0xcc; 8]);
        assert_eq!(&b[..want.len()], &want[..]);
        assert!(b[want.len()..].iter().all(|&x| x == 0));
    }

    #[test]
    fn full_page_opens_the_next_with_its_timestamp() {
        let mut p = CpuPages::new();
        // 4080 / 12 = 340 entries fill a page exactly.
        for i in 0..341u64 {
            p.push(0, i, &[0; 8]).unwrap();
        }
        let b = p.bytes();
        assert_eq!(b.len(), 2 * PAGE_SIZE);
        assert_eq!(&b[8..16], &4080u64.to_le_bytes());
        assert_eq!(&b[PAGE_SIZE..PAGE_SIZE + 8], &340u64.to_le_bytes());
        assert_eq!(&b[PAGE_SIZE + 8..PAGE_SIZE + 16], &12u64.to_le_bytes());
        assert_eq!(
            p.push(0, 5, &[0; 8]),
            Err(TraceDatError::TimeGoesBack {
                cpu: 0,
                prev: 340,
                ts: 5
            })
        );
    }

    #[test]
    fn print_is_stored_as_tracing_mark_write_stores_it() {
        let f = format_file(&PRINT);
        assert!(f.starts_with("name: print\nID: 5\nformat:\n"));
        assert!(f.contains("\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"));
        assert!(f.contains(
            "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
        ));
        let r = TraceRecord {
            ts: 5,
            cpu: 0,
            pid: 9,
            tgid: 9,
            comm: "t".into(),
            event: "print",
            fields: vec![
                ("ip", FieldVal::Str(ftrace::MARKER_IP_SYM.into())),
                ("buf", FieldVal::Str("rtapp_task: event=start".into())),
            ],
        };
        let p = payload(&PRINT, &r).unwrap();
        assert_eq!(&p[0..2], &5u16.to_le_bytes());
        assert_eq!(p[2], 0, "written with interrupts on");
        assert_eq!(&p[8..16], &MARKER_IP.to_le_bytes());
        assert_eq!(&p[16..], b"rtapp_task: event=start\n\0");
        // The address lies in the first kallsyms function, before the next.
        let syms: Vec<u64> = KALLSYMS
            .lines()
            .map(|l| u64::from_str_radix(&l[..16], 16).unwrap())
            .collect();
        assert!(syms[0] <= MARKER_IP && MARKER_IP < syms[1]);
        assert!(KALLSYMS
            .lines()
            .next()
            .unwrap()
            .ends_with(" tracing_mark_write"));
    }

    #[test]
    fn formats_have_kernel_offsets() {
        let sw = format_file(event_def("sched_switch").unwrap());
        assert!(sw.starts_with("name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"));
        assert!(sw.contains("\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"));
        assert!(sw.contains("\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"));
        assert!(sw.contains(
            "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: \"prev_comm=%s"
        ));
        let fork = format_file(event_def("sched_process_fork").unwrap());
        assert!(fork.contains("\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;\n"));
        assert_eq!(layout(event_def("sched_switch").unwrap()).1, 64);
        assert_eq!(layout(event_def("sched_waking").unwrap()).1, 40);
        assert_eq!(layout(event_def("cpu_idle").unwrap()).1, 16);
        assert_eq!(layout(event_def("sched_process_fork").unwrap()).1, 48);
    }

    #[test]
    fn prev_state_letters() {
        assert_eq!(prev_state_bits("R"), Some(0));
        assert_eq!(prev_state_bits("R+"), Some(0x100));
        assert_eq!(prev_state_bits("S"), Some(1));
        assert_eq!(prev_state_bits("X"), Some(0x10));
        assert_eq!(prev_state_bits("D|W"), None);
    }

    #[test]
    fn bad_records_are_errors() {
        let r = TraceRecord {
            ts: 0,
            cpu: 3,
            pid: 0,
            tgid: 0,
            comm: "<idle>".into(),
            event: "cpu_idle",
            fields: vec![("state", FieldVal::Int(-1)), ("cpu_id", FieldVal::Int(0))],
        };
        let cl = BTreeMap::new();
        assert!(matches!(
            render_records(std::slice::from_ref(&r), &cl, 2),
            Err(TraceDatError::BadField { .. })
        ));
        let r2 = TraceRecord {
            fields: vec![("state", FieldVal::Int(1)), ("cpu_id", FieldVal::Int(0))],
            ..r.clone()
        };
        assert_eq!(
            render_records(std::slice::from_ref(&r2), &cl, 2),
            Err(TraceDatError::Cpu { cpu: 3, nr_cpus: 2 })
        );
        let r3 = TraceRecord {
            event: "sched_stat_runtime",
            ..r2.clone()
        };
        assert!(matches!(
            render_records(&[r3], &cl, 4),
            Err(TraceDatError::UnknownEvent(_))
        ));
        assert_eq!(
            render_records(&[], &cl, usize::MAX),
            Err(TraceDatError::CpuCount(usize::MAX))
        );
        let ok = render_records(&[r2], &cl, 4).unwrap();
        assert!(ok.starts_with(b"\x17\x08\x44tracing6\0\0\x08"));
        assert_eq!(ok.len() % PAGE_SIZE, 0);
    }
}
