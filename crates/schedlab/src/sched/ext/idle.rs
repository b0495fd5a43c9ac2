//! sched_ext's built-in idle tracking and default CPU selection (v6.12
//! `idle_masks`, `update_builtin_idle`, `test_and_clear_cpu_idle`,
//! `scx_pick_idle_cpu`, `scx_select_cpu_dfl`).
//!
//! Two masks: `cpu` has a bit per idle CPU, `smt` the CPUs of wholly idle SMT cores.
//! A CPU going idle sets its bit, and its core's bits in `smt` once every sibling is
//! idle; going busy clears its bit and its whole core from `smt`. Claiming an idle
//! CPU (`test_and_clear_cpu_idle`) first takes its core out of `smt`, so a claimed
//! thread's core no longer counts as wholly idle even if the claim failed.
//!
//! The default selection, in 6.12's order (no LLC or NUMA steps yet: those came
//! later): a sync waker's own CPU when any CPU is idle and its local DSQ is empty;
//! with SMT, the previous CPU if its whole core is idle, then any CPU of a wholly
//! idle core; the previous CPU if idle; any idle CPU; else the previous CPU, not
//! idle. "Any" is `cpumask_any_and_distribute`: the first CPU after a cursor kept
//! per calling CPU, wrapping, which then moves there (so a CPU's first pick skips
//! CPU 0).

use crate::machine::{CpuMask, DistributeCursor};

/// `SCX_PICK_IDLE_CORE`.
pub const SCX_PICK_IDLE_CORE: u64 = 1;

/// The masks, the SMT layout and each CPU's distribute cursor.
#[derive(Clone, Debug)]
pub struct IdleTracker {
    /// `idle_masks.cpu`.
    pub cpu: CpuMask,
    /// `idle_masks.smt`.
    pub smt: CpuMask,
    /// `cpu_smt_mask(cpu)` of every CPU.
    siblings: Vec<CpuMask>,
    /// `sched_smt_active()`: some core has more than one thread.
    smt_active: bool,
    /// `distribute_cpu_mask_prev` of every CPU: the kernel's, lent to the class
    /// while it is loaded ([`crate::sched::core::Kernel`] keeps it otherwise).
    pub(crate) cursor: DistributeCursor,
}

impl IdleTracker {
    /// `reset_idle_masks` on a machine whose CPU `i` is on core `core_of[i]`:
    /// every CPU idle.
    pub fn new(core_of: &[usize]) -> Self {
        let n = core_of.len();
        let siblings: Vec<CpuMask> = (0..n)
            .map(|c| (0..n).filter(|&s| core_of[s] == core_of[c]).collect())
            .collect();
        let smt_active = siblings.iter().any(|m| m.weight() > 1);
        let all = CpuMask::first_n(n);
        IdleTracker {
            cpu: all,
            smt: all,
            siblings,
            smt_active,
            cursor: DistributeCursor::new(n),
        }
    }

    pub fn smt_active(&self) -> bool {
        self.smt_active
    }

    /// `update_builtin_idle(cpu, idle)`.
    pub fn update(&mut self, cpu: usize, idle: bool) {
        if idle {
            self.cpu.set(cpu);
        } else {
            self.cpu.clear(cpu);
        }
        if !self.smt_active {
            return;
        }
        let sib = &self.siblings[cpu];
        if idle {
            if sib.is_subset(&self.cpu) {
                self.smt = self.smt.or(sib);
            }
        } else {
            for s in sib.iter() {
                self.smt.clear(s);
            }
        }
    }

    /// `test_and_clear_cpu_idle(cpu)`.
    pub fn test_and_clear(&mut self, cpu: usize) -> bool {
        if self.smt_active {
            let sib = &self.siblings[cpu];
            if !sib.and(&self.smt).is_empty() {
                for s in sib.iter() {
                    self.smt.clear(s);
                }
            } else {
                self.smt.clear(cpu);
            }
        }
        let was = self.cpu.test(cpu);
        self.cpu.clear(cpu);
        was
    }

    /// `cpumask_any_and_distribute(a, b)` called on `this_cpu`.
    pub fn any_and_distribute(
        &mut self,
        a: &CpuMask,
        b: &CpuMask,
        this_cpu: usize,
    ) -> Option<usize> {
        self.cursor.any_and(a, b, this_cpu)
    }

    /// `scx_pick_idle_cpu(allowed, flags)` called on `this_cpu`: a claimed idle CPU,
    /// or `None` (`-EBUSY`).
    pub fn pick_idle(&mut self, allowed: &CpuMask, flags: u64, this_cpu: usize) -> Option<usize> {
        loop {
            let mut found = None;
            if self.smt_active {
                let smt = self.smt;
                found = self.any_and_distribute(&smt, allowed, this_cpu);
                if found.is_none() && flags & SCX_PICK_IDLE_CORE != 0 {
                    return None;
                }
            }
            let cpu = match found {
                Some(c) => c,
                None => {
                    let idle = self.cpu;
                    self.any_and_distribute(&idle, allowed, this_cpu)?
                }
            };
            if self.test_and_clear(cpu) {
                return Some(cpu);
            }
        }
    }

    /// `scx_select_cpu_dfl(p, prev_cpu, wake_flags, &found)` run on `this_cpu` (the
    /// waker's CPU): the CPU and whether it was found idle (or is the sync waker's).
    /// `sync_ok` says the sync shortcut's own conditions hold beyond the flag: the
    /// waker is not exiting and its CPU's local DSQ is empty.
    pub fn select_cpu_dfl(
        &mut self,
        allowed: &CpuMask,
        prev_cpu: usize,
        sync: bool,
        sync_ok: bool,
        this_cpu: usize,
    ) -> (usize, bool) {
        if sync && !self.cpu.is_empty() && sync_ok && allowed.test(this_cpu) {
            return (this_cpu, true);
        }
        if self.smt_active {
            if self.smt.test(prev_cpu) && self.test_and_clear(prev_cpu) {
                return (prev_cpu, true);
            }
            if let Some(c) = self.pick_idle(allowed, SCX_PICK_IDLE_CORE, this_cpu) {
                return (c, true);
            }
        }
        if self.test_and_clear(prev_cpu) {
            return (prev_cpu, true);
        }
        match self.pick_idle(allowed, 0, this_cpu) {
            Some(c) => (c, true),
            None => (prev_cpu, false),
        }
    }
}
