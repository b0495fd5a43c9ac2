//! Changing a task's affinity: `sched_setaffinity` → `__set_cpus_allowed_ptr`
//! (kernel/sched/core.c; v5.6 and v5.10 in one function, v5.11+ through
//! `affine_move_task`), and the migration stopper that moves a task it leaves on a
//! CPU it may no longer use.
//!
//! **The concept.** An affinity change is two steps. First the mask changes
//! (`__do_set_cpus_allowed`: `set_cpus_allowed_common`, and sched_ext's
//! `set_cpus_allowed_scx`), whatever the task is doing. Then, if the task's CPU is
//! still in the new mask, nothing moves: a queued or running task stays where it is
//! until a wakeup or the balancer moves it. Otherwise the task must leave, and how
//! depends on its state at that moment:
//!
//! * **queued, not running** (a preempted task, and under v6.12 a *delayed* one:
//!   `sched_delayed` tasks are `task_on_rq_queued`): `move_queued_task` at once, in
//!   the caller's context: `deactivate_task` (as a migration: the load is detached,
//!   a delayed task stays delayed), `set_task_cpu` to the destination,
//!   `activate_task` there and `wakeup_preempt`. A delayed task then leaves at its
//!   next pick there, or its wakeup (`ttwu_runnable`) requeues it there: never on
//!   the CPU it was moved off.
//! * **sleeping**: nothing moves; the next wakeup's `select_task_rq` only offers the
//!   new mask (and `select_fallback_rq` catches a choice outside it).
//! * **running, or waking** (`TASK_WAKING`: in this model, on a remote CPU's
//!   wake_list): the caller cannot move it. It queues `migration_cpu_stop` on the
//!   task's CPU (`stop_one_cpu`; `stop_one_cpu_nowait` plus a pending completion from
//!   v5.11) and waits for it in `wait_for_completion`: the caller blocks. The stopper,
//!   the highest class, preempts whatever runs there, first runs the CPU's pending
//!   wakeups (`flush_smp_call_function_queue`), and then, if the task is still on
//!   that CPU and still not allowed there: a queued task (the preempted one, or one
//!   that went to sleep but was delayed) goes by `move_queued_task`; a task that went
//!   to sleep meanwhile gets `p->wake_cpu = dest`, so its next wakeup searches from
//!   the destination. Then it completes every waiter (`complete_all`), which wakes
//!   them from this CPU. A task that meanwhile left for an allowed CPU is done; one
//!   that moved to another disallowed CPU is chased by a new stop there. Further
//!   callers while a stop is pending join its waiters and update its destination
//!   (`p->migration_pending`).
//!
//! A task changing *its own* affinity off its CPU is the running case with itself as
//! the caller, and the kernel's preemption model decides what happens. Queuing the
//! stop wakes the CPU's stopper, which is of the highest class, so a reschedule is
//! pending when the caller reaches `wait_for_completion`. With
//! `CONFIG_PREEMPT_VOLUNTARY` (the modelled kernels, as Debian builds 5.10 and
//! 6.12) that function's `might_sleep()` is a preemption point: the caller is
//! preempted there, still runnable (the trace's `prev_state=R+`), the stopper finds
//! it queued and moves it (`move_queued_task`, a `sched_migrate_task`), and the
//! completion is done before the caller runs again, on the destination, so it never
//! sleeps and is never woken. Measured in the oracle's guests: the 5.10 and 6.12 traces
//! of rt-app threads pinning themselves show `hog R+ ==> migration/N`, then
//! `sched_migrate_task`, and no wakeup of the thread. (With `PREEMPT_NONE` it would
//! sleep in `wait_for_completion` and the completion would wake it from the
//! destination.)
//!
//! **The destination** is `cpumask_any_and(cpu_active_mask, new_mask)` in v5.6 (the
//! first allowed CPU) and `cpumask_any_and_distribute` from v5.9 (feature
//! `ANY_AND_DISTRIBUTE`; [`DistributeCursor`](crate::machine::DistributeCursor),
//! the per-CPU cursor of the CPU that makes the call, shared with sched_ext's picks).
//! Every CPU is active (no hotplug).
//!
//! **Simplified** (docs/kernel-mapping.md §10, `Op::SetAffinity`): the stopper runs at once when its CPU
//! is the caller's and one IPI latency later elsewhere (after an idle exit), and it
//! costs one `context_switch` of the CPU's time; it is not a task, so it is not
//! picked or traced. The dequeue/enqueue with `DEQUEUE_SAVE`/`ENQUEUE_RESTORE`
//! around the mask change is not modelled: for the fair class it puts the entity
//! back where it was (v5.6 exactly; EEVDF up to the lag clamp), and a sched_ext
//! scheduler is not shown the `ops.dequeue`/`ops.enqueue` pair it causes. PF_KTHREAD,
//! migrate_disable and hotplug do not exist here.

use crate::engine::{EventQueue, Observer};
use crate::machine::CpuMask;
use crate::sched::core::{Kernel, TaskState};
use crate::sched::fair::balance::CONFIG_PREEMPT_VOLUNTARY;
use crate::sched::features::SchedFeat;
use crate::sched::{Event, Pid, SchedEvent};

/// `struct set_affinity_pending`: a stop queued for a task left on a CPU its mask
/// excludes, and the callers waiting for it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pending {
    pid: Pid,
    /// `pending->arg.dest_cpu` (the latest caller's).
    dest: usize,
    /// Tasks blocked in `wait_for_completion(&pending->done)`.
    waiters: Vec<Pid>,
}

/// The affinity-change state the kernel keeps in tasks (`p->migration_pending`,
/// `p->wake_cpu`) and per CPU (`distribute_cpu_mask_prev`), kept apart from
/// [`crate::sched::core::Task`] because it is almost always empty.
#[derive(Clone, Debug)]
pub(crate) struct AffinityState {
    /// `distribute_cpu_mask_prev`. While sched_ext is loaded its idle tracker holds
    /// the live copy (it picks with it too): lent at `scx_enable`, given back at
    /// `scx_disable` ([`Kernel::distribute_cursor`]).
    pub(crate) cursor: crate::machine::DistributeCursor,
    pending: Vec<Pending>,
    /// `p->wake_cpu` of tasks where the stopper set it apart from `task_cpu`.
    wake_cpu: Vec<(Pid, usize)>,
}

impl AffinityState {
    pub(crate) fn new(nr_cpus: usize) -> Self {
        AffinityState {
            cursor: crate::machine::DistributeCursor::new(nr_cpus),
            pending: Vec::new(),
            wake_cpu: Vec::new(),
        }
    }

    /// Whether a stop is queued for `pid` (`p->migration_pending`): until it runs the
    /// task may run, or be queued, on a CPU outside its mask.
    #[inline]
    pub(crate) fn migration_pending(&self, pid: Pid) -> bool {
        self.pending.iter().any(|p| p.pid == pid)
    }

    /// `p->wake_cpu`, consumed by the wakeup that reads it (`task_cpu` when unset).
    #[inline]
    pub(crate) fn take_wake_cpu(&mut self, pid: Pid, task_cpu: usize) -> usize {
        if self.wake_cpu.is_empty() {
            return task_cpu;
        }
        match self.wake_cpu.iter().position(|&(p, _)| p == pid) {
            Some(i) => self.wake_cpu.remove(i).1,
            None => task_cpu,
        }
    }

    /// `__set_task_cpu` sets `p->wake_cpu` to the new CPU: an override is gone.
    #[inline]
    pub(crate) fn forget_wake_cpu(&mut self, pid: Pid) {
        if !self.wake_cpu.is_empty() {
            self.wake_cpu.retain(|&(p, _)| p != pid);
        }
    }

    fn set_wake_cpu(&mut self, pid: Pid, cpu: usize) {
        self.forget_wake_cpu(pid);
        self.wake_cpu.push((pid, cpu));
    }
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `sched_setaffinity(pid, mask)` by the current task of `cpu` (its intersection
    /// with the machine's CPUs; an empty one is `-EINVAL`, an unchanged one nothing).
    /// Returns true when the caller has left its CPU: it waits for the migration
    /// stopper (blocked; the stopper's completion wakes it), or, moving itself, it
    /// was preempted and moved, and continues where it is next picked.
    pub(crate) fn sched_setaffinity(
        &mut self,
        cpu: usize,
        pid: Pid,
        mask: &CpuMask,
        q: &mut EventQueue<Event>,
    ) -> bool {
        let new = mask.and(self.m.all_cpus());
        if new.is_empty()
            || *self.cpus_allowed(pid) == new
            || self.tasks[pid as usize].state == TaskState::Dead
        {
            return false;
        }
        let dest = self.affinity_dest_cpu(cpu, &new);
        self.set_cpus_allowed(pid, &new);
        self.affine_move_task(cpu, pid, dest, q)
    }

    /// The kernel's `distribute_cpu_mask_prev` cursors (sched_ext's copy while it is
    /// loaded).
    pub(crate) fn distribute_cursor(&mut self) -> &mut crate::machine::DistributeCursor {
        match &mut self.scx {
            Some(s) => &mut s.core.idle.cursor,
            None => &mut self.aff.cursor,
        }
    }

    /// The destination of a task moved off a CPU its new mask excludes:
    /// `cpumask_any_and(cpu_active_mask, new)` in v5.6, with the distribute cursor of
    /// the calling CPU from v5.9.
    fn affinity_dest_cpu(&mut self, this_cpu: usize, new: &CpuMask) -> usize {
        if !self.feat.has(SchedFeat::ANY_AND_DISTRIBUTE) {
            return new.first().expect("a non-empty mask");
        }
        let all = *self.m.all_cpus();
        self.distribute_cursor()
            .any_and(&all, new, this_cpu)
            .expect("a non-empty mask of this machine's CPUs")
    }

    /// `affine_move_task` (v5.6/v5.10: the tail of `__set_cpus_allowed_ptr`) for the
    /// current task of `cpu`, which changed `pid`'s mask.
    fn affine_move_task(
        &mut self,
        cpu: usize,
        pid: Pid,
        dest: usize,
        q: &mut EventQueue<Event>,
    ) -> bool {
        let caller = self.rqs[cpu]
            .curr
            .expect("a system call runs on a busy CPU");
        let tcpu = self.tasks[pid as usize].cpu;
        if self.cpus_allowed(pid).test(tcpu) {
            // A stop already queued completes its waiters when it runs.
            return false;
        }
        let running = self.rqs[tcpu].curr == Some(pid);
        let waking = self.tasks[pid as usize].wake_pending;
        let stop_pending = self.aff.migration_pending(pid);
        if CONFIG_PREEMPT_VOLUNTARY && caller == pid && tcpu == cpu && !stop_pending {
            // Moving itself: preempted by its own CPU's stopper at `might_sleep()`,
            // which runs `migration_cpu_stop` on the still-queued caller.
            self.stopper_runs(cpu, q);
            self.move_queued_task(cpu, pid, dest, cpu, true, q);
            return true;
        }
        if !(running || waking) {
            if self.tasks[pid as usize].se.on_rq {
                self.move_queued_task(tcpu, pid, dest, cpu, false, q);
            }
            if !stop_pending {
                return false;
            }
        }
        // Wait for the stop (the one queued now, or one already pending).
        match self.aff.pending.iter_mut().find(|p| p.pid == pid) {
            Some(p) => {
                p.dest = dest;
                p.waiters.push(caller);
            }
            None => self.aff.pending.push(Pending {
                pid,
                dest,
                waiters: vec![caller],
            }),
        }
        self.block_current(cpu, q);
        if stop_pending {
            return true;
        }
        if tcpu == cpu {
            // The stopper is this CPU's: it runs as soon as the caller has blocked.
            self.migration_cpu_stop(cpu, pid, false, q);
        } else {
            self.queue_stop(tcpu, pid, q);
            let c = self.m.cost.ipi_send;
            self.charge(cpu, c, q);
        }
        true
    }

    /// `stop_one_cpu_nowait(cpu, migration_cpu_stop)` for `pid`: the stopper runs on
    /// `cpu` one IPI latency from now.
    fn queue_stop(&mut self, cpu: usize, pid: Pid, q: &mut EventQueue<Event>) {
        let lat = self.m.cost.ipi_latency_ns;
        q.push(
            self.now + lat,
            Event::MigrationStop {
                cpu: cpu as u32,
                pid,
            },
        );
    }

    /// The stopper starts on `cpu`: its run costs one `context_switch` of the CPU's
    /// time, and `flush_smp_call_function_queue` runs the CPU's pending wakeups first.
    fn stopper_runs(&mut self, cpu: usize, q: &mut EventQueue<Event>) {
        let c = self.m.cost.context_switch;
        self.charge(cpu, c, q);
        if !self.rqs[cpu].wake_list.is_empty() {
            self.ttwu_pending(cpu, q);
        }
    }

    /// `migration_cpu_stop` for `pid` on `cpu`. `from_event`: the stop arrived as an
    /// event (the CPU was running something else, or idle), so the CPU picks again
    /// (or goes round its idle loop) afterwards; otherwise the caller just blocked on
    /// this CPU and its `schedule()` has already picked.
    pub(crate) fn migration_cpu_stop(
        &mut self,
        cpu: usize,
        pid: Pid,
        from_event: bool,
        q: &mut EventQueue<Event>,
    ) {
        let Some(i) = self.aff.pending.iter().position(|p| p.pid == pid) else {
            return;
        };
        self.stopper_runs(cpu, q);
        let tcpu = self.tasks[pid as usize].cpu;
        let allowed = self.cpus_allowed(pid).test(tcpu);
        if tcpu == cpu || allowed {
            let p = self.aff.pending.remove(i);
            if !allowed {
                if self.tasks[pid as usize].se.on_rq {
                    self.move_queued_task(cpu, pid, p.dest, cpu, false, q);
                } else {
                    self.aff.set_wake_cpu(pid, p.dest);
                }
            }
            // complete_all: the waiters wake from this CPU.
            for w in p.waiters {
                self.try_to_wake_up(w, 0, cpu, q);
            }
        } else {
            // It moved on to another CPU it may not use either: chase it there.
            self.queue_stop(tcpu, pid, q);
        }
        if from_event {
            // The stopper preempted the current task, or woke the idle CPU.
            if self.rqs[cpu].curr.is_some() {
                self.schedule(cpu, q);
            } else {
                self.idle_loop_continue(cpu);
            }
        }
    }

    /// `move_queued_task`: `pid`, queued on `src` (running there only when the
    /// stopper preempted it), moves to `dest` as a migration (`TASK_ON_RQ_MIGRATING`:
    /// its load leaves `src` at once; a delayed task stays delayed), then
    /// `wakeup_preempt` there. A task that was running lets `src` pick again first:
    /// `in_kernel`, it was preempted at a kernel preemption point (moving itself:
    /// `R+`), else on its way back to user mode from the stopper's IPI (`R`).
    fn move_queued_task(
        &mut self,
        src: usize,
        pid: Pid,
        dest: usize,
        from_cpu: usize,
        in_kernel: bool,
        q: &mut EventQueue<Event>,
    ) {
        let now = self.now;
        let was_curr = self.rqs[src].curr == Some(pid);
        self.rq_update_clock(src, now);
        self.lb.migrating = Some(pid);
        self.deactivate_task(src, pid, 0);
        self.set_task_cpu(pid, dest, false);
        self.lb.migrating = None;
        if was_curr && in_kernel {
            self.preempt_schedule(src, q);
        } else if was_curr {
            self.schedule(src, q);
        }
        self.rq_update_clock(dest, now);
        self.lb.migrating = Some(pid);
        self.activate_task(dest, pid, 0);
        self.lb.migrating = None;
        self.check_preempt_curr(dest, pid, 0, from_cpu, q);
    }
}

#[cfg(test)]
#[path = "affinity_tests.rs"]
mod tests;
