//! Background load beside any workload: CPU-bound spinner threads
//! (`[workload.background]`).
//!
//! **What it stands for.** Seed 000 ran `perf bench sched messaging` on a POWER9 with
//! 44 extra busy threads "spread across cores", so that no core was fully idle while
//! the benchmark ran (`spec/workloads.md` §3.2). Such hogs never sleep: they only
//! compete for CPU time, they change which CPUs the wakeup path finds idle (an
//! SMT sibling of a busy core is not an idle core for `select_idle_core`), and they
//! keep the load balancer busy.
//!
//! **Model.** `spinners = N` tasks, threads of one extra process, each running
//! `loop forever: compute(100 ms)` (the chunk size only sets how often the
//! interpreter steps; the CPU never sees a boundary). Placement:
//!
//! * `free` (default): unpinned, placed by fork balancing and moved by the load
//!   balancer like any task; `spinners` is required.
//! * `core`: one spinner pinned to each physical core, on the core's first CPU (the
//!   lowest-numbered CPU of its SMT sibling mask), cores in order of that CPU.
//!   `spinners` defaults to the number of cores; a smaller N uses the first N
//!   cores; more than the number of cores is an error (it would not be one per core).
//! * `cpus`: pinned to the listed CPUs (`cpus = [0, 4, 8]` or a cpulist string
//!   `cpus = "0,4,8"`, any form [`CpuMask::parse_cpulist`] takes), spinner `i` on
//!   `cpus[i mod len]` (round-robin); `spinners` defaults to the list length, giving
//!   exactly one per listed CPU.
//!
//! Spinners are *daemon* tasks ([`WorkloadSpec::daemons`]): a fixed-work benchmark
//! still completes when its own tasks have exited. Since the spinners keep the event
//! queue busy forever, the interpreter looks for a deadlock of the other tasks every
//! 10 ms of simulated time (all of them asleep in ops only another task can end) and
//! stops with the usual deadlock error.
//!
//! `run_us` with `sleep_us` makes each spinner a duty-cycled thread instead:
//! `loop forever: compute(run); sleep(sleep)` (busy, but not a hog: while it
//! sleeps its core can go fully idle).
//!
//! Simplifications: pinning is from the start (the seed's threads were probably
//! started before the benchmark and pinned, or not, by hand; pinning is an
//! assumption of the spec); spinners start at time 0 with the benchmark.

use crate::config::{TableReader, Val};
use crate::error::InputError;
use crate::machine::{CpuMask, Machine};
use crate::workload::dist::Dist;
use crate::workload::program::{LoopCount, Op, Program, TaskSpec, WorkloadSpec};

/// Work of one spinner compute chunk (reference ns).
pub const SPIN_CHUNK_NS: u64 = 100_000_000;

/// Where spinners run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Unpinned.
    Free,
    /// Pinned, one per core, on the core's first CPU.
    Core,
    /// Pinned round-robin to these CPUs.
    Cpus(Vec<usize>),
}

/// A parsed `[workload.background]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Background {
    pub spinners: u32,
    pub placement: Placement,
    /// `Some((run, sleep))` ns: each spinner computes `run`, then sleeps `sleep`, in
    /// turn (a busy thread that is not a pure hog); `None`: spins forever.
    pub duty: Option<(u64, u64)>,
}

/// The first CPU of every physical core, in increasing order.
pub(crate) fn core_first_cpus(m: &Machine) -> Vec<usize> {
    (0..m.nr_cpus())
        .filter(|&c| m.smt_mask(c).first() == Some(c))
        .collect()
}

/// Read `[workload.background]` from the workload table `w`, if present. Call it
/// before `w.finish()` (it marks `background` as used).
pub fn parse(w: &TableReader<'_>, m: &Machine) -> Result<Option<Background>, InputError> {
    let Some(b) = w.table("background")? else {
        return Ok(None);
    };
    let spinners = b.uint("spinners", 1, 1 << 16)?.map(|v| v as u32);
    let placement = b.str("placement")?.unwrap_or("free");
    let cpus_node = b.get("cpus");
    let placement = match placement {
        "free" => Placement::Free,
        "core" => Placement::Core,
        "cpus" => {
            let Some(n) = cpus_node else {
                return Err(b.err("cpus", "`placement = \"cpus\"` needs a `cpus` list"));
            };
            let list: Vec<usize> = match &n.val {
                Val::Array(a) => a
                    .iter()
                    .map(|x| match x.val {
                        Val::Int(i) if i >= 0 && (i as usize) < m.nr_cpus() => Ok(i as usize),
                        _ => Err(b.doc.err(
                            x,
                            format!(
                                "`workload.background.cpus` entries must be CPU numbers \
                                 0..{} of this machine",
                                m.nr_cpus()
                            ),
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Val::Str(s) => {
                    let mask = CpuMask::parse_cpulist(s)
                        .map_err(|e| b.err("cpus", format!("`workload.background.cpus`: {e}")))?;
                    if mask.iter().any(|c| c >= m.nr_cpus()) {
                        return Err(b.err(
                            "cpus",
                            format!(
                                "`workload.background.cpus = \"{s}\"` must name CPUs of this \
                                 {}-CPU machine",
                                m.nr_cpus()
                            ),
                        ));
                    }
                    mask.iter().collect()
                }
                v => {
                    return Err(b.err(
                        "cpus",
                        format!(
                            "`workload.background.cpus` must be a list of CPUs, found {}",
                            v.type_name()
                        ),
                    ))
                }
            };
            if list.is_empty() {
                return Err(b.err("cpus", "`workload.background.cpus` is empty"));
            }
            Placement::Cpus(list)
        }
        p => {
            return Err(b.err(
                "placement",
                format!("unknown `workload.background.placement` `{p}` (free, core or cpus)"),
            ))
        }
    };
    if cpus_node.is_some() && !matches!(placement, Placement::Cpus(_)) {
        return Err(b.err(
            "cpus",
            "`workload.background.cpus` needs `placement = \"cpus\"`",
        ));
    }
    let spinners = match &placement {
        Placement::Free => spinners.ok_or_else(|| {
            b.err(
                "spinners",
                "`workload.background` with `placement = \"free\"` needs `spinners`",
            )
        })?,
        Placement::Core => {
            let cores = core_first_cpus(m).len() as u32;
            match spinners {
                None => cores,
                Some(n) if n <= cores => n,
                Some(n) => {
                    return Err(b.err(
                        "spinners",
                        format!(
                            "`workload.background.spinners` = {n} with `placement = \"core\"`: \
                             this machine has only {cores} cores"
                        ),
                    ))
                }
            }
        }
        Placement::Cpus(l) => spinners.unwrap_or(l.len() as u32),
    };
    let us = |key: &'static str| -> Result<Option<u64>, InputError> {
        Ok(b.uint(key, 1, 10_000_000)?.map(|v| v * 1000))
    };
    let duty = match (us("run_us")?, us("sleep_us")?) {
        (None, None) => None,
        (Some(run), Some(sleep)) => Some((run, sleep)),
        (Some(_), None) => {
            return Err(b.err("run_us", "`run_us` needs `sleep_us` (a duty cycle)"));
        }
        (None, Some(_)) => {
            return Err(b.err("sleep_us", "`sleep_us` needs `run_us` (a duty cycle)"));
        }
    };
    b.finish()?;
    Ok(Some(Background {
        spinners,
        placement,
        duty,
    }))
}

/// Append the spinner program and tasks to `spec` (as daemon tasks).
pub fn append(spec: &mut WorkloadSpec, bg: &Background, m: &Machine) {
    let prog = spec.programs.len();
    spec.programs.push(Program {
        name: "spinner".into(),
        work_class: None,
        ops: match bg.duty {
            None => vec![
                Op::Loop {
                    count: LoopCount::Forever,
                    end: 2,
                },
                Op::Compute(Dist::Const(SPIN_CHUNK_NS)),
                Op::EndLoop { start: 0 },
            ],
            Some((run, sleep)) => vec![
                Op::Loop {
                    count: LoopCount::Forever,
                    end: 3,
                },
                Op::Compute(Dist::Const(run)),
                Op::Sleep(Dist::Const(sleep)),
                Op::EndLoop { start: 0 },
            ],
        },
    });
    let process = spec
        .tasks
        .iter()
        .filter_map(|t| t.process)
        .max()
        .map_or(1 << 20, |p| p + 1);
    let firsts = core_first_cpus(m);
    for i in 0..bg.spinners as usize {
        let cpus = match &bg.placement {
            Placement::Free => None,
            Placement::Core => Some(CpuMask::of(firsts[i % firsts.len()])),
            Placement::Cpus(l) => Some(CpuMask::of(l[i % l.len()])),
        };
        spec.daemons.push(spec.tasks.len());
        spec.tasks.push(TaskSpec {
            cpus: cpus.map(std::sync::Arc::new),
            process: Some(process),
            ..TaskSpec::new(format!("spinner-{i}"), prog, i as u32)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    #[test]
    fn first_cpus_of_cores() {
        // power9-176: 44 cores x SMT4.
        let m = presets::preset("power9-176").unwrap();
        let f = core_first_cpus(&m);
        assert_eq!(f.len(), 44);
        for &c in &f {
            assert_eq!(m.smt_mask(c).weight(), 4);
            assert_eq!(m.smt_mask(c).first(), Some(c));
        }
        // juno-r0: no SMT, every CPU is a core.
        let m = presets::preset("juno-r0").unwrap();
        assert_eq!(core_first_cpus(&m), (0..6).collect::<Vec<_>>());
    }

    #[test]
    fn append_pins_and_marks_daemons() {
        let m = presets::preset("xeon-e5-40").unwrap();
        let mut spec = WorkloadSpec::default();
        append(
            &mut spec,
            &Background {
                spinners: 3,
                placement: Placement::Cpus(vec![5, 7]),
                duty: None,
            },
            &m,
        );
        spec.validate().unwrap();
        assert_eq!(spec.daemons, vec![0, 1, 2]);
        let cpus: Vec<usize> = spec
            .tasks
            .iter()
            .map(|t| t.cpus.as_ref().unwrap().first().unwrap())
            .collect();
        assert_eq!(cpus, vec![5, 7, 5]);
        // One process (threads).
        assert!(spec
            .tasks
            .iter()
            .all(|t| t.process == spec.tasks[0].process));
    }
}
