//! Perfetto protobuf trace writer.
//!
//! The real tool: Perfetto's `traced_probes` reads the kernel's per-CPU ftrace ring
//! buffers and writes a `perfetto.protos.Trace`, a sequence of length-delimited
//! `TracePacket`s. Scheduler events arrive as `FtraceEventBundle`s (one CPU's events,
//! in time order, each `FtraceEvent` stamped with its timestamp and the pid of the
//! task that was running on that CPU when the tracepoint fired); the service adds a
//! `SystemInfo` packet (utsname, number of CPUs), a `ProcessTree` snapshot and a
//! `CpuInfo` packet (per-CPU capacity and frequency table). ui.perfetto.dev and
//! trace_processor turn `sched_switch` into per-CPU scheduling slices and thread
//! states, `sched_waking`/`sched_wakeup` into wakeup arrows, `cpu_idle` and
//! `cpu_frequency` into per-CPU counter tracks; a `trace_marker` write (rt-app's
//! markers) is a `PrintFtraceEvent` (`ip`, `buf`), listed with the raw ftrace events.
//!
//! How it is modelled: from the SAME event log as the ftrace text writer
//! (`metrics/ftrace.rs`), so the two formats always agree. Each event is attributed
//! to the CPU and the current task exactly as the text writer does, from the same
//! tracepoints ([`EventLog::tracepoints`]: a wakeup on the CPU that runs
//! `ttwu_do_wakeup`, a `cpu_idle` exit after the exit latency, the state at the
//! window's start). The
//! encoding is a small hand-rolled protobuf writer (varints, length-delimited
//! fields, nested messages built bottom-up into byte vectors): the subset is under
//! twenty messages, field numbers come from the public Perfetto .proto files
//! (`protos/perfetto/trace/...`), and avoiding `prost` keeps the dependency list
//! and build time unchanged.
//!
//! **Counter tracks.** Signals no ftrace event carries are written the way SDK
//! producers write theirs: `TrackDescriptor` packets declare a `schedlab` root track,
//! one group per signal and under it one counter track per CPU (`cpu3 util_avg`,
//! `CounterDescriptor.unit` = `UNIT_COUNT` for the counts, one `y_axis_share_key` per
//! signal so all CPUs share a y range, CPUs in numeric order); each value is a
//! packet with `timestamp` (boot clock, the ftrace events' clock),
//! `trusted_packet_sequence_id` and a `TYPE_COUNTER` `TrackEvent` carrying the track's
//! uuid and an integer `counter_value`. The uuids are fixed functions of (signal,
//! CPU) ([`track_uuid`]). The signals, with what the model provides exactly:
//!
//! | group | per CPU | value | written when |
//! |---|---|---|---|
//! | `cfs_rq util_avg` | `cpuN util_avg` | root cfs_rq PELT `util_avg`, 1024 scale | it changed at an update (enqueue, dequeue, put/set of the current task, tick, new-task attach, migration detach, blocked-load update) |
//! | `cfs_rq nr_running` | `cpuN nr_running` | cfs `nr_running`, running task included | it changed (enqueue, dequeue) |
//! | `select_task_rq_fair probes` | `cpuN probes` | CPUs probed by one `select_task_rq_fair` call, callees included | every call, on the CPU that ran it |
//!
//! With LISA's `sched_tp` events traced (`EventLog::sched_tp`), a `sched_tp` root
//! track holds per-CPU `util`, `load`, `util_est.enqueued`, `capacity_curr` and the
//! `overutilized` flag, and every task gets `util`, `load`, `util_est.enqueued` and
//! `util_est.ewma` counter tracks attached to its thread (`TrackDescriptor.thread`),
//! each written when its event's value changes ([`sched_tp_uuid`]).
//!
//! util_avg is the value stored in the cfs_rq after the kernel's own update (what
//! `pelt_cfs_tp` exposes), not a decayed reading between updates: between two
//! samples the track holds the last stored value, as the kernel does. The cfs_rq
//! values come from `SchedEvent::CfsRq`, which the kernel model reports only with
//! counter logging on (`Kernel::set_log_counters`, one flag test per hook otherwise);
//! the probes track reads the `select_task_rq_fair` `FuncCall` events every run
//! reports. The probes are per waker CPU rather than one track: wakeups on two CPUs
//! at the same nanosecond would collide on one track, and the search's cost is
//! charged to the waker's CPU, so its track sits with that CPU. With a trace window,
//! the cfs_rq values in force when it opens (last reported before it) are written at
//! the window start, so every CPU's tracks start there with the right value.
//!
//! Simplifications: `release` is the kernel preset (`v5.6` -> `5.6.0`); bundles
//! hold at most [`BUNDLE_MAX`] events and never set `previous_bundle_end_timestamp`
//! or the compact sched encoding; `prev_state` uses the v5.6 report bitmask (0 R,
//! 1 S, 0x10 X, 0x100 preempted); one packet sequence (1) for every packet, no
//! interned data or incremental state; no clock snapshot (all timestamps are
//! simulated boot-clock ns).

use crate::engine::SimTime;
use crate::machine::Machine;
use crate::metrics::ftrace::{task_comm as comm, Comms};
use crate::metrics::EventLog;
use crate::sched::core::Task;
use crate::sched::{Func, SchedEvent, SchedTp, SchedTpSet};

/// Largest number of events in one `FtraceEventBundle`.
pub const BUNDLE_MAX: usize = 4096;

// --- minimal protobuf encoder -------------------------------------------------

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn key(b: &mut Vec<u8>, field: u32, wire: u8) {
    varint(b, (u64::from(field) << 3) | u64::from(wire));
}

/// Varint field (uint32/uint64/int32/int64/bool; negative ints as 10-byte two's complement).
fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
    key(b, field, 0);
    varint(b, v);
}

fn int(b: &mut Vec<u8>, field: u32, v: i64) {
    uint(b, field, v as u64);
}

fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
    key(b, field, 2);
    varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

fn string(b: &mut Vec<u8>, field: u32, s: &str) {
    bytes(b, field, s.as_bytes());
}

// --- Perfetto field numbers (public protos) -----------------------------------

const TRACE_PACKET: u32 = 1; // Trace.packet
const TP_FTRACE_EVENTS: u32 = 1;
const TP_PROCESS_TREE: u32 = 2;
const TP_TIMESTAMP: u32 = 8;
const TP_SEQ_ID: u32 = 10;
const TP_TRACK_EVENT: u32 = 11;
const TP_SYSTEM_INFO: u32 = 45;
const TP_TRACK_DESCRIPTOR: u32 = 60;
const TP_CPU_INFO: u32 = 67;

const TD_UUID: u32 = 1; // TrackDescriptor
const TD_NAME: u32 = 2;
const TD_THREAD: u32 = 4;
const TD_PARENT_UUID: u32 = 5;
const TD_COUNTER: u32 = 8;
const TD_CHILD_ORDERING: u32 = 11;
const TD_SIBLING_ORDER_RANK: u32 = 12;
const TD_DESCRIPTION: u32 = 14;
const CHILD_ORDERING_EXPLICIT: u64 = 3;

const CD_UNIT: u32 = 3; // CounterDescriptor
const CD_Y_AXIS_SHARE_KEY: u32 = 7;
const UNIT_COUNT: u64 = 2;

const TE_TYPE: u32 = 9; // TrackEvent
const TE_TRACK_UUID: u32 = 11;
const TE_COUNTER_VALUE: u32 = 30;
const TYPE_COUNTER: u64 = 4;

const FE_TIMESTAMP: u32 = 1;
const FE_PID: u32 = 2;
const FE_PRINT: u32 = 3;
const FE_SCHED_SWITCH: u32 = 4;
const FE_CPU_FREQUENCY: u32 = 11;
const FE_CPU_IDLE: u32 = 13;
const FE_SCHED_WAKEUP: u32 = 17;
const FE_SCHED_WAKING: u32 = 20;
const FE_SCHED_WAKEUP_NEW: u32 = 114;
const FE_TASK_NEWTASK: u32 = 235;
const FE_SCHED_PROCESS_EXIT: u32 = 238;
const FE_TASK_RENAME: u32 = 236;
const FE_SCHED_PROCESS_FORK: u32 = 239;
const FE_SCHED_MIGRATE_TASK: u32 = 491;

// --- counter tracks -----------------------------------------------------------

/// The simulator-internal signals written as counter tracks, one track per CPU each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// The CPU's root cfs_rq PELT `util_avg` (1024 = the biggest CPU at its top
    /// frequency), as stored after each update.
    UtilAvg,
    /// The CPU's cfs_rq `nr_running` (its running task included).
    NrRunning,
    /// CPUs probed by each `select_task_rq_fair` call run on this CPU (the waker's,
    /// the parent's for a fork), inclusive of its callees.
    Probes,
}

impl Counter {
    pub const ALL: [Counter; 3] = [Counter::UtilAvg, Counter::NrRunning, Counter::Probes];

    /// Suffix of each CPU's track name (`cpu3 util_avg`).
    pub fn name(self) -> &'static str {
        match self {
            Counter::UtilAvg => "util_avg",
            Counter::NrRunning => "nr_running",
            Counter::Probes => "probes",
        }
    }

    /// Name of the group track holding the per-CPU tracks.
    pub(crate) fn group_name(self) -> &'static str {
        match self {
            Counter::UtilAvg => "cfs_rq util_avg",
            Counter::NrRunning => "cfs_rq nr_running",
            Counter::Probes => "select_task_rq_fair probes",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Counter::UtilAvg => {
                "PELT util_avg of each CPU's root cfs_rq (1024 = biggest CPU at top \
                 frequency), as stored after each update: enqueue, dequeue, put/set of the \
                 current task, tick, new-task attach, migration detach, blocked-load update"
            }
            Counter::NrRunning => "nr_running of each CPU's cfs_rq, running task included",
            Counter::Probes => {
                "CPUs probed by each select_task_rq_fair call (wakeup, fork or exec \
                 placement), callees included, on the CPU that ran it and paid for it"
            }
        }
    }

    /// `CounterDescriptor.unit`, where one applies.
    fn unit(self) -> Option<u64> {
        match self {
            Counter::UtilAvg => None,
            Counter::NrRunning | Counter::Probes => Some(UNIT_COUNT),
        }
    }
}

/// uuid of the `schedlab` root track ("schd" in the high 32 bits); group and CPU
/// tracks number below it, so every uuid is a pure function of (counter, cpu).
pub const ROOT_UUID: u64 = 0x7363_6864_0000_0000;

/// uuid of `c`'s group track.
pub(crate) fn group_uuid(c: Counter) -> u64 {
    ROOT_UUID | ((c as u64 + 1) << 24)
}

/// uuid of `cpu`'s `c` track (CPUs below 2^24).
pub fn track_uuid(c: Counter, cpu: usize) -> u64 {
    group_uuid(c) | (cpu as u64 + 1)
}

/// A `TracePacket` holding `TrackDescriptor` `td`, on packet sequence 1.
fn descriptor_packet(out: &mut Vec<u8>, td: Vec<u8>) {
    let mut p = Vec::new();
    bytes(&mut p, TP_TRACK_DESCRIPTOR, &td);
    uint(&mut p, TP_SEQ_ID, 1);
    bytes(out, TRACE_PACKET, &p);
}

/// The `TrackDescriptor` packets: the `schedlab` root, one group per counter, one
/// counter track per (counter, CPU), children in explicit order (CPUs numerically).
fn track_descriptors(out: &mut Vec<u8>, nr_cpus: usize) {
    let mut td = Vec::new();
    uint(&mut td, TD_UUID, ROOT_UUID);
    string(&mut td, TD_NAME, "schedlab");
    string(
        &mut td,
        TD_DESCRIPTION,
        "Signals of the simulated kernel that no ftrace event carries",
    );
    uint(&mut td, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
    descriptor_packet(out, td);
    for (rank, c) in Counter::ALL.into_iter().enumerate() {
        let mut td = Vec::new();
        uint(&mut td, TD_UUID, group_uuid(c));
        uint(&mut td, TD_PARENT_UUID, ROOT_UUID);
        string(&mut td, TD_NAME, c.group_name());
        string(&mut td, TD_DESCRIPTION, c.description());
        uint(&mut td, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
        int(&mut td, TD_SIBLING_ORDER_RANK, rank as i64);
        descriptor_packet(out, td);
        for cpu in 0..nr_cpus {
            let mut cd = Vec::new();
            if let Some(u) = c.unit() {
                uint(&mut cd, CD_UNIT, u);
            }
            // One y range for all CPUs of a signal (same parent, same key).
            string(&mut cd, CD_Y_AXIS_SHARE_KEY, c.name());
            let mut td = Vec::new();
            uint(&mut td, TD_UUID, track_uuid(c, cpu));
            uint(&mut td, TD_PARENT_UUID, group_uuid(c));
            string(&mut td, TD_NAME, &format!("cpu{cpu} {}", c.name()));
            bytes(&mut td, TD_COUNTER, &cd);
            int(&mut td, TD_SIBLING_ORDER_RANK, cpu as i64);
            descriptor_packet(out, td);
        }
    }
}

/// One `TracePacket` holding a `TYPE_COUNTER` `TrackEvent`: `v` on track `uuid` at `t`.
fn counter_packet(out: &mut Vec<u8>, t: SimTime, uuid: u64, v: i64) {
    let mut te = Vec::with_capacity(24);
    uint(&mut te, TE_TYPE, TYPE_COUNTER);
    uint(&mut te, TE_TRACK_UUID, uuid);
    int(&mut te, TE_COUNTER_VALUE, v);
    let mut p = Vec::with_capacity(40);
    uint(&mut p, TP_TIMESTAMP, t);
    uint(&mut p, TP_SEQ_ID, 1);
    bytes(&mut p, TP_TRACK_EVENT, &te);
    bytes(out, TRACE_PACKET, &p);
}

// --- LISA's sched_tp signals as counter tracks -----------------------------------

/// uuid of the `sched_tp` root track ("scht" in the high 32 bits); below it each
/// track's kind (bits 24..31) and its CPU or pid + 1 (bits 0..23).
pub const SCHED_TP_UUID: u64 = 0x7363_6874_0000_0000;

/// The signals of LISA's `sched_tp` events written as counter tracks: per CPU
/// (the root cfs_rq, the CPU's capacity), per task (its entity, attached to the
/// thread), and the root domain's overutilized flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpSignal {
    CfsUtil,
    CfsLoad,
    CfsUtilEst,
    CapacityCurr,
    TaskUtil,
    TaskLoad,
    TaskUtilEst,
    TaskUtilEstEwma,
    Overutilized,
}

impl TpSignal {
    /// Per-CPU signals, per-task signals, and which `SchedTpSet` member gives each.
    const CPU: [(TpSignal, &'static str); 4] = [
        (TpSignal::CfsUtil, "util"),
        (TpSignal::CfsLoad, "load"),
        (TpSignal::CfsUtilEst, "util_est.enqueued"),
        (TpSignal::CapacityCurr, "capacity_curr"),
    ];
    const TASK: [(TpSignal, &'static str); 4] = [
        (TpSignal::TaskUtil, "util"),
        (TpSignal::TaskLoad, "load"),
        (TpSignal::TaskUtilEst, "util_est.enqueued"),
        (TpSignal::TaskUtilEstEwma, "util_est.ewma"),
    ];

    /// The event the signal comes from.
    fn event(self) -> &'static str {
        match self {
            TpSignal::CfsUtil | TpSignal::CfsLoad => "sched_pelt_cfs",
            TpSignal::TaskUtil | TpSignal::TaskLoad => "sched_pelt_se",
            TpSignal::Overutilized => "sched_overutilized",
            TpSignal::CfsUtilEst => "sched_util_est_cfs",
            TpSignal::TaskUtilEst | TpSignal::TaskUtilEstEwma => "sched_util_est_se",
            TpSignal::CapacityCurr => "sched_cpu_capacity",
        }
    }

    fn traced(self, set: SchedTpSet) -> bool {
        set.has(self.event())
    }
}

/// uuid of signal `s`'s track for CPU or pid `id` (0 for the overutilized flag).
pub fn sched_tp_uuid(s: TpSignal, id: u32) -> u64 {
    SCHED_TP_UUID | ((s as u64 + 1) << 24) | (u64::from(id) + 1)
}

/// The `TrackDescriptor`s of the traced `sched_tp` signals: a `sched_tp` root with
/// the per-CPU tracks and the overutilized flag, and for every task its own
/// counter tracks attached to its thread (shown under it in the UI).
fn sched_tp_descriptors(out: &mut Vec<u8>, set: SchedTpSet, nr_cpus: usize, tasks: &[Task]) {
    if !set.any() {
        return;
    }
    let mut td = Vec::new();
    uint(&mut td, TD_UUID, SCHED_TP_UUID);
    string(&mut td, TD_NAME, "sched_tp");
    string(
        &mut td,
        TD_DESCRIPTION,
        "LISA's sched_tp module events (sched_pelt_cfs, sched_util_est_cfs, \
         sched_cpu_capacity, sched_overutilized) as counters",
    );
    uint(&mut td, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
    descriptor_packet(out, td);
    let mut rank = 0;
    let mut counter =
        |out: &mut Vec<u8>, uuid: u64, name: &str, key: &str, thread: Option<&Task>| {
            let mut cd = Vec::new();
            string(&mut cd, CD_Y_AXIS_SHARE_KEY, key);
            let mut td = Vec::new();
            uint(&mut td, TD_UUID, uuid);
            match thread {
                Some(t) => {
                    let mut th = Vec::new();
                    int(&mut th, 1, i64::from(t.tgid));
                    int(&mut th, 2, i64::from(t.pid));
                    bytes(&mut td, TD_THREAD, &th);
                }
                None => {
                    uint(&mut td, TD_PARENT_UUID, SCHED_TP_UUID);
                    int(&mut td, TD_SIBLING_ORDER_RANK, rank);
                    rank += 1;
                }
            }
            string(&mut td, TD_NAME, name);
            bytes(&mut td, TD_COUNTER, &cd);
            descriptor_packet(out, td);
        };
    for (s, n) in TpSignal::CPU {
        if s.traced(set) {
            for cpu in 0..nr_cpus {
                let u = sched_tp_uuid(s, cpu as u32);
                counter(out, u, &format!("cpu{cpu} {n}"), n, None);
            }
        }
    }
    let o = sched_tp_uuid(TpSignal::Overutilized, 0);
    counter(out, o, "overutilized", "overutilized", None);
    for t in tasks.iter().skip(1) {
        for (s, n) in TpSignal::TASK {
            if s.traced(set) {
                let key = format!("task {n}");
                counter(out, sched_tp_uuid(s, t.pid), n, &key, Some(t));
            }
        }
    }
}

/// The `sched_tp` tracks' last written values, so a track gets a value only when it
/// changes.
#[derive(Default)]
struct SchedTpTracks {
    last: std::collections::HashMap<u64, i64>,
}

impl SchedTpTracks {
    fn put(&mut self, out: &mut Vec<u8>, t: SimTime, uuid: u64, v: i64) {
        if self.last.insert(uuid, v) != Some(v) {
            counter_packet(out, t, uuid, v);
        }
    }

    fn update(&mut self, out: &mut Vec<u8>, t: SimTime, tp: SchedTp) {
        let u = sched_tp_uuid;
        match tp {
            SchedTp::PeltCfs {
                cpu, load, util, ..
            } => {
                self.put(out, t, u(TpSignal::CfsUtil, cpu), i64::from(util));
                self.put(out, t, u(TpSignal::CfsLoad, cpu), i64::from(load));
            }
            SchedTp::PeltSe {
                pid, load, util, ..
            } => {
                self.put(out, t, u(TpSignal::TaskUtil, pid), i64::from(util));
                self.put(out, t, u(TpSignal::TaskLoad, pid), i64::from(load));
            }
            SchedTp::UtilEstCfs { cpu, enqueued, .. } => {
                self.put(out, t, u(TpSignal::CfsUtilEst, cpu), i64::from(enqueued));
            }
            SchedTp::UtilEstSe {
                pid,
                enqueued,
                ewma,
                ..
            } => {
                self.put(out, t, u(TpSignal::TaskUtilEst, pid), i64::from(enqueued));
                self.put(out, t, u(TpSignal::TaskUtilEstEwma, pid), i64::from(ewma));
            }
            SchedTp::CpuCapacity {
                cpu, capacity_curr, ..
            } => {
                self.put(
                    out,
                    t,
                    u(TpSignal::CapacityCurr, cpu),
                    i64::from(capacity_curr),
                );
            }
            SchedTp::Overutilized { overutilized, .. } => {
                self.put(
                    out,
                    t,
                    u(TpSignal::Overutilized, 0),
                    i64::from(overutilized),
                );
            }
        }
    }
}

/// The cfs_rq counter tracks' last written values, by CPU, so that each track gets
/// a value only when it changes.
struct CfsRqTracks {
    last: Vec<(Option<u32>, Option<u64>)>,
}

impl CfsRqTracks {
    fn update(&mut self, out: &mut Vec<u8>, t: SimTime, cpu: usize, nr: u32, util: u64) {
        let Some(l) = self.last.get_mut(cpu) else {
            return;
        };
        if l.1 != Some(util) {
            l.1 = Some(util);
            counter_packet(out, t, track_uuid(Counter::UtilAvg, cpu), util as i64);
        }
        if l.0 != Some(nr) {
            l.0 = Some(nr);
            counter_packet(out, t, track_uuid(Counter::NrRunning, cpu), i64::from(nr));
        }
    }
}

/// One packet of `out` carrying `msg` in `field`, on packet sequence 1.
fn seq_packet(out: &mut Vec<u8>, field: u32, msg: &[u8]) {
    let mut p = Vec::new();
    bytes(&mut p, field, msg);
    uint(&mut p, TP_SEQ_ID, 1);
    bytes(out, TRACE_PACKET, &p);
}

/// The `SystemInfo` packet: utsname (release of the modelled kernel) and CPU count.
fn system_info(out: &mut Vec<u8>, m: &Machine, kernel_preset: &str) {
    let mut uts = Vec::new();
    string(&mut uts, 1, "Linux");
    string(
        &mut uts,
        3,
        &crate::sched::features::release_of(kernel_preset),
    );
    string(
        &mut uts,
        4,
        // `uname -m` of the machine's architecture.
        match m.arch {
            crate::machine::Arch::X86 => "x86_64",
            crate::machine::Arch::Arm64 => "aarch64",
            crate::machine::Arch::Power => "ppc64le",
        },
    );
    let mut si = Vec::new();
    bytes(&mut si, 1, &uts);
    uint(&mut si, 8, m.nr_cpus() as u64);
    seq_packet(out, TP_SYSTEM_INFO, &si);
}

/// The `CpuInfo` packet: each CPU's frequency table and capacity.
fn cpu_info(out: &mut Vec<u8>, m: &Machine) {
    let mut ci = Vec::new();
    for (i, c) in m.cpus.iter().enumerate() {
        let mut cpu = Vec::new();
        string(&mut cpu, 1, &format!("cpu{i}"));
        if let Some(d) = m.freq_domains.get(c.freq_domain) {
            for o in &d.opps {
                uint(&mut cpu, 2, u64::from(o.freq_khz));
            }
        }
        uint(&mut cpu, 3, u64::from(c.capacity_orig));
        bytes(&mut ci, 1, &cpu);
    }
    seq_packet(out, TP_CPU_INFO, &ci);
}

/// The `ProcessTree` packet: one process per thread-group leader, one thread per
/// task.
fn process_tree(out: &mut Vec<u8>, tasks: &[Task]) {
    let mut pt = Vec::new();
    for t in tasks.iter().skip(1) {
        if t.tgid == t.pid {
            let mut pr = Vec::new();
            int(&mut pr, 1, i64::from(t.pid));
            int(&mut pr, 2, t.parent.map_or(0, i64::from));
            string(&mut pr, 3, &comm(Some(t)));
            bytes(&mut pt, 1, &pr);
        }
    }
    for t in tasks.iter().skip(1) {
        let mut th = Vec::new();
        int(&mut th, 1, i64::from(t.pid));
        string(&mut th, 2, &comm(Some(t)));
        int(&mut th, 3, i64::from(t.tgid));
        bytes(&mut pt, 2, &th);
    }
    seq_packet(out, TP_PROCESS_TREE, &pt);
}

/// The ftrace events per CPU, attributed to (cpu, current pid) as in ftrace.rs, and
/// the counter values in time order.
struct Events<'a> {
    tasks: &'a [Task],
    nr_cpus: usize,
    /// Each CPU's current task (`None`: idle).
    curr: Vec<Option<u32>>,
    /// Each task's comm at this point of the trace.
    comms: Comms,
    /// Each CPU's encoded `FtraceEvent`s.
    per_cpu: Vec<Vec<Vec<u8>>>,
    /// Encoded counter packets.
    counters: Vec<u8>,
    cfs: CfsRqTracks,
    sched_tp: SchedTpTracks,
}

impl<'a> Events<'a> {
    fn task(&self, p: u32) -> Option<&'a Task> {
        self.tasks.get(p as usize).filter(|_| p != 0)
    }
    fn prio(&self, p: u32) -> i64 {
        i64::from(self.task(p).map_or(120, |t| 120 + t.nice))
    }
    fn curr(&self, cpu: usize) -> Option<u32> {
        self.curr.get(cpu).copied().flatten()
    }

    /// Append `SchedEvent` `e` at `t`: an `FtraceEvent` on its CPU, or a counter.
    fn event(&mut self, t: SimTime, e: &SchedEvent) {
        let mut body = Vec::new();
        let old_comm = self.comms.observe(e, self.tasks);
        let (cpu, who, field) = match *e {
            SchedEvent::Switch {
                cpu, prev, next, ..
            } => {
                let st = e.switched_out().map_or(0, |(_, s)| s.bits());
                self.sched_switch(&mut body, cpu, prev, st, next)
            }
            SchedEvent::Waking {
                pid,
                waker_cpu: w,
                target_cpu,
            } => {
                self.task_fields(&mut body, pid, 1, target_cpu);
                (w, self.curr(w), FE_SCHED_WAKING)
            }
            SchedEvent::Wakeup {
                pid,
                cpu,
                new,
                from_cpu: w,
            } => {
                self.task_fields(&mut body, pid, 1, cpu);
                let f = if new {
                    FE_SCHED_WAKEUP_NEW
                } else {
                    FE_SCHED_WAKEUP
                };
                (w, self.curr(w), f)
            }
            SchedEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } => {
                self.task_fields(&mut body, pid, orig_cpu as i64, dest_cpu);
                (orig_cpu, self.curr(orig_cpu), FE_SCHED_MIGRATE_TASK)
            }
            SchedEvent::Fork { parent, child, cpu } => {
                self.sched_process_fork(&mut body, t, parent, child, cpu)
            }
            SchedEvent::Rename { pid, cpu } => {
                int(&mut body, 1, i64::from(pid));
                string(&mut body, 2, &old_comm.unwrap_or_default());
                string(&mut body, 3, self.comms.of(pid));
                int(&mut body, 4, 0);
                (cpu, Some(pid), FE_TASK_RENAME)
            }
            SchedEvent::Exit { pid, cpu } => {
                string(&mut body, 1, self.comms.of(pid));
                int(&mut body, 2, i64::from(pid));
                int(
                    &mut body,
                    3,
                    i64::from(self.task(pid).map_or(0, |t| t.tgid)),
                );
                int(&mut body, 4, self.prio(pid));
                (cpu, Some(pid), FE_SCHED_PROCESS_EXIT)
            }
            SchedEvent::IdleEnter { cpu, state } => {
                uint(&mut body, 1, u64::from(state as u32));
                uint(&mut body, 2, cpu as u64);
                (cpu, None, FE_CPU_IDLE)
            }
            SchedEvent::IdleExit { cpu, .. } => {
                uint(&mut body, 1, u64::from(u32::MAX));
                uint(&mut body, 2, cpu as u64);
                (cpu, None, FE_CPU_IDLE)
            }
            SchedEvent::CpuFrequency { cpu, freq_khz } => {
                uint(&mut body, 1, u64::from(freq_khz));
                uint(&mut body, 2, cpu as u64);
                (cpu, self.curr(cpu), FE_CPU_FREQUENCY)
            }
            SchedEvent::CfsRq {
                cpu,
                nr_running,
                util_avg,
            } => {
                self.cfs
                    .update(&mut self.counters, t, cpu, nr_running, util_avg);
                return;
            }
            SchedEvent::FuncCall {
                func: Func::SelectTaskRqFair,
                cpu,
                probed,
                ..
            } => {
                if cpu < self.nr_cpus {
                    let uuid = track_uuid(Counter::Probes, cpu);
                    counter_packet(&mut self.counters, t, uuid, i64::from(probed));
                }
                return;
            }
            SchedEvent::Marker { cpu, pid, marker } => {
                // `PrintFtraceEvent`: the writer's address and the buffer, with
                // the newline `tracing_mark_write` appends.
                uint(&mut body, 1, crate::metrics::tracedat::MARKER_IP);
                string(&mut body, 2, &format!("{marker}\n"));
                (cpu, Some(pid), FE_PRINT)
            }
            SchedEvent::SchedTp(tp) => {
                self.sched_tp.update(&mut self.counters, t, tp);
                return;
            }
            SchedEvent::Placement { .. }
            | SchedEvent::FuncCall { .. }
            | SchedEvent::Probe { .. } => return,
        };
        self.push(cpu, t, who, field, &body);
    }

    /// An `FtraceEvent` on `cpu`'s list: timestamp, pid of the task running there and
    /// the event `body` in `field`.
    fn push(&mut self, cpu: usize, t: SimTime, who: Option<u32>, field: u32, body: &[u8]) {
        let mut ev = Vec::new();
        uint(&mut ev, FE_TIMESTAMP, t);
        uint(&mut ev, FE_PID, u64::from(who.unwrap_or(0)));
        bytes(&mut ev, field, body);
        if let Some(v) = self.per_cpu.get_mut(cpu) {
            v.push(ev);
        }
    }

    /// comm, pid, prio, then two integers: the body of the wakeup and migration
    /// events.
    fn task_fields(&self, body: &mut Vec<u8>, pid: u32, f4: i64, f5: usize) {
        string(body, 1, self.comms.of(pid));
        int(body, 2, i64::from(pid));
        int(body, 3, self.prio(pid));
        int(body, 4, f4);
        int(body, 5, f5 as i64);
    }

    /// `sched_switch`: the previous and next tasks (swapper when idle).
    fn sched_switch(
        &mut self,
        body: &mut Vec<u8>,
        cpu: usize,
        prev: Option<u32>,
        st: i64,
        next: Option<u32>,
    ) -> (usize, Option<u32>, u32) {
        let pc = |p: Option<u32>| match p {
            Some(p) => (self.comms.of(p).to_string(), p, self.prio(p)),
            None => (format!("swapper/{cpu}"), 0, 120),
        };
        let (pn, pp, ppr) = pc(prev);
        let (nn, np, npr) = pc(next);
        string(body, 1, &pn);
        int(body, 2, i64::from(pp));
        int(body, 3, ppr);
        int(body, 4, st);
        string(body, 5, &nn);
        int(body, 6, i64::from(np));
        int(body, 7, npr);
        let who = prev;
        if cpu < self.nr_cpus {
            self.curr[cpu] = next;
        }
        (cpu, who, FE_SCHED_SWITCH)
    }

    /// `task_newtask` (first, in the parent, from copy_process), then the
    /// `sched_process_fork` body.
    fn sched_process_fork(
        &mut self,
        body: &mut Vec<u8>,
        t: SimTime,
        parent: Option<u32>,
        child: u32,
        cpu: usize,
    ) -> (usize, Option<u32>, u32) {
        let mut nt = Vec::new();
        int(&mut nt, 1, i64::from(child));
        string(&mut nt, 2, self.comms.of(child));
        self.push(cpu, t, parent, FE_TASK_NEWTASK, &nt);
        string(body, 1, self.comms.of(parent.unwrap_or(0)));
        int(body, 2, i64::from(parent.unwrap_or(0)));
        string(body, 3, self.comms.of(child));
        int(body, 4, i64::from(child));
        (cpu, parent, FE_SCHED_PROCESS_FORK)
    }

    /// The `FtraceEventBundle` packets, per CPU, at most [`BUNDLE_MAX`] events each.
    fn bundles(&self, out: &mut Vec<u8>) {
        for (cpu, evs) in self.per_cpu.iter().enumerate() {
            for chunk in evs.chunks(BUNDLE_MAX) {
                let mut b = Vec::new();
                uint(&mut b, 1, cpu as u64);
                for ev in chunk {
                    bytes(&mut b, 2, ev);
                }
                seq_packet(out, TP_FTRACE_EVENTS, &b);
            }
        }
    }
}

/// Encode the event log as a binary `perfetto.protos.Trace`.
pub fn render(log: &EventLog, tasks: &[Task], m: &Machine, kernel_preset: &str) -> Vec<u8> {
    let nr_cpus = m.nr_cpus();
    let mut out = Vec::new();
    system_info(&mut out, m, kernel_preset);
    cpu_info(&mut out, m);
    process_tree(&mut out, tasks);
    track_descriptors(&mut out, nr_cpus);
    sched_tp_descriptors(&mut out, log.sched_tp, nr_cpus, tasks);

    let events = log.tracepoints();
    let mut ev = Events {
        tasks,
        nr_cpus,
        curr: vec![None; nr_cpus],
        comms: Comms::new(tasks, &events),
        per_cpu: vec![Vec::new(); nr_cpus],
        counters: Vec::new(),
        cfs: CfsRqTracks {
            last: vec![(None, None); nr_cpus],
        },
        sched_tp: SchedTpTracks::default(),
    };
    // Counter values, in time order; first the cfs_rq counters in force when the
    // window opened (reported before it), so each track starts at the window start.
    for (cpu, v) in log.cfs_rq_at_start.iter().enumerate() {
        if let Some((nr, util)) = *v {
            ev.cfs.update(&mut ev.counters, log.window.0, cpu, nr, util);
        }
    }
    for &(t, ref e) in &events {
        ev.event(t, e);
    }
    ev.bundles(&mut out);
    out.extend_from_slice(&ev.counters);
    out
}
