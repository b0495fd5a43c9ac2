//! Helpers shared by the placement tests: a kernel on a given machine with a
//! recording observer, and direct runqueue set-up.
#![allow(dead_code)]

use schedlab::engine::{Observer, SimTime};
use schedlab::machine::{CpuMask, Machine};
use schedlab::sched::core::{Kernel, Policy, TaskState};
use schedlab::sched::features::{Features, Tunables};
use schedlab::sched::topology::TopologyOpts;
use schedlab::sched::{Func, Pid, SchedEvent};

/// Records every event.
#[derive(Default)]
pub struct Rec(pub Vec<SchedEvent>);

impl Observer<SchedEvent> for Rec {
    fn observe(&mut self, _now: SimTime, ev: &SchedEvent) {
        self.0.push(*ev);
    }
}

pub fn kernel(m: Machine) -> Kernel<Rec> {
    kernel_with(m, Features::v5_6())
}

pub fn kernel_with(m: Machine, feat: Features) -> Kernel<Rec> {
    let n = m.nr_cpus();
    Kernel::new(
        m,
        feat,
        Tunables::v5_6(n),
        &TopologyOpts::v5_6(),
        Rec::default(),
    )
}

/// Make `cpu` busy: one runnable (non-idle-policy) task counted on it.
pub fn busy(k: &mut Kernel<Rec>, cpu: usize) {
    k.cpu_rq_mut(cpu).nr_running = 1;
    k.sync_idle_bits(cpu);
}

/// Make `cpu` run only SCHED_IDLE tasks.
pub fn sched_idle(k: &mut Kernel<Rec>, cpu: usize) {
    k.cpu_rq_mut(cpu).nr_running = 1;
    k.cpu_rq_mut(cpu).cfs.idle_h_nr_running = 1;
    k.sync_idle_bits(cpu);
}

/// A sleeping task last run on `prev`, allowed on `allowed`.
pub fn sleeper(k: &mut Kernel<Rec>, prev: usize, allowed: CpuMask) -> Pid {
    let p = k.create_task("p", None, false, 0, Policy::Normal, allowed);
    let t = k.task_mut(p);
    t.cpu = prev;
    t.recent_used_cpu = prev;
    t.state = TaskState::Sleeping;
    p
}

pub fn all(k: &Kernel<Rec>) -> CpuMask {
    *k.machine().all_cpus()
}

pub fn mask(cpus: &[usize]) -> CpuMask {
    let mut m = CpuMask::new();
    for &c in cpus {
        m.set(c);
    }
    m
}

/// The (probed, cost_ns) of the last `FuncCall` of `func`, if any.
pub fn last_call(k: &Kernel<Rec>, func: Func) -> Option<(u32, u64)> {
    k.observer().0.iter().rev().find_map(|e| match *e {
        SchedEvent::FuncCall {
            func: f,
            probed,
            cost_ns,
            ..
        } if f == func => Some((probed, cost_ns)),
        _ => None,
    })
}

/// Number of `FuncCall` events of `func`.
pub fn calls(k: &Kernel<Rec>, func: Func) -> usize {
    k.observer()
        .0
        .iter()
        .filter(|e| matches!(e, SchedEvent::FuncCall { func: f, .. } if *f == func))
        .count()
}

/// All `Placement` events as (pid, cpu, reason).
pub fn placements(k: &Kernel<Rec>) -> Vec<(Pid, usize, &'static str)> {
    k.observer()
        .0
        .iter()
        .filter_map(|e| match *e {
            SchedEvent::Placement {
                pid, cpu, reason, ..
            } => Some((pid, cpu, reason)),
            _ => None,
        })
        .collect()
}

/// A sleeping task last run on `prev`, allowed everywhere.
pub fn sleeper_any(k: &mut Kernel<Rec>, prev: usize) -> Pid {
    let a = all(k);
    sleeper(k, prev, a)
}
