//! The core's side of sched_ext: where v6.12's core calls the ext class's hooks,
//! and what it does with their results (kernel/sched/core.c and ext.c glue).
//!
//! With a scheduler loaded and not `SCX_OPS_SWITCH_PARTIAL`, every SCHED_NORMAL,
//! BATCH and IDLE task belongs to the ext class and the fair class is skipped
//! entirely (`__scx_switched_all`): no fair pick, no newidle balance, no periodic
//! or nohz load balance. The core still owns the runqueues' task counts, the
//! running task's runtime, the context switch and the idle loop; the class
//! ([`crate::sched::ext::Scx`]) decides where a waking task goes and what a CPU
//! runs next. What the class asks back (a migration of a queued task, a
//! reschedule of an idle CPU, a kick) is carried out here: a migration moves the
//! task's rq accounting, a reschedule or kick of another CPU is an IPI.
//!
//! When the scheduler fails (an error, an exit, a stall the watchdog finds), the
//! kernel disables it and hands every task back to the fair class
//! (`scx_ops_disable_workfn`): [`Kernel::scx_disable`] does the same, after which
//! the class is gone and the fair class picks, wakes and balances.

use crate::engine::{EventQueue, Observer};
use crate::sched::core::Kernel;
use crate::sched::ext::{self, Action};
use crate::sched::{Event, Pid, SchedEvent};

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// Load the scheduler `[kernel] scheduler` names (`scx_ops_enable`).
    pub(crate) fn scx_enable(&mut self, name: &str) {
        let llc_of: Vec<usize> = self.m.cpus.iter().map(|c| c.llc).collect();
        let ops: Box<dyn ext::ScxOps> = match &self.tun.ext_object {
            Some(object) => Box::new(
                ext::bpf::load(object, llc_of.len())
                    .unwrap_or_else(|e| panic!("loaded when the scenario was read: {e}")),
            ),
            None => {
                ext::scheduler_by_name(name, &llc_of).expect("checked when the scenario was read")
            }
        };
        let core_of: Vec<usize> = self.m.cpus.iter().map(|c| c.core).collect();
        let mut s = ext::Scx::new(ops, &core_of);
        // One distribute cursor per machine: the class picks with the kernel's.
        s.core.idle.cursor = self.aff.cursor.clone();
        self.scx = Some(Box::new(s));
    }

    /// The class, its clock (`bpf_ktime_get_ns`) brought to now.
    fn scx(&mut self) -> &mut ext::Scx {
        let now = self.now;
        let s = self.scx.as_mut().expect("sched_ext loaded");
        s.core.now = now;
        s
    }

    /// `scx_fork` + `scx_post_fork`: the new task joins the class
    /// (`ops.init_task`, `ops.set_weight`, `ops.enable`).
    pub(crate) fn scx_fork(&mut self, pid: Pid, cpu: usize) {
        let w = ext::weight_to_cgroup(self.tasks[pid as usize].se.load.weight);
        let cpus = *self.cpus_allowed(pid);
        self.scx().init_task(pid, cpu, w, cpus, true);
    }

    /// `set_cpus_allowed_scx`: the class's copy of the affinity, and
    /// `ops.set_cpumask` (what it asks for is carried out with the next actions).
    pub(crate) fn scx_set_cpumask(&mut self, pid: Pid, mask: crate::machine::CpuMask) {
        self.scx().set_cpumask(pid, mask);
    }

    /// `select_task_rq_scx`, recorded as a placement with reason `ext`.
    pub(crate) fn select_task_rq_scx(
        &mut self,
        pid: Pid,
        prev_cpu: usize,
        wake_flags: u32,
        this_cpu: usize,
    ) -> usize {
        if self.log_probes {
            self.scx().core.log = Some(Vec::new());
        }
        let cpu = self
            .scx()
            .select_task_rq(pid, prev_cpu, wake_flags, this_cpu);
        if let Some(lines) = self.scx().core.log.take() {
            self.scx_explained.push((self.now, pid, lines));
        }
        self.emit(SchedEvent::Placement {
            pid,
            kind: crate::sched::wake_kind_of(wake_flags),
            prev_cpu,
            cpu,
            reason: "ext",
        });
        cpu
    }

    /// `enqueue_task_scx` with the core's `ENQUEUE_*` flags.
    pub(crate) fn enqueue_task_scx(&mut self, cpu: usize, pid: Pid, flags: u32) {
        let mut f = 0;
        if flags & crate::sched::fair::ENQUEUE_WAKEUP != 0 {
            f |= ext::SCX_ENQ_WAKEUP;
            if self.tasks[pid as usize].nr_cpus_allowed > 1 {
                f |= ext::SCX_ENQ_CPU_SELECTED;
            }
        }
        self.rqs[cpu].nr_running += 1;
        self.tasks[pid as usize].se.on_rq = true;
        self.sync_idle_bits(cpu);
        // task_on_rq_migrating: an affinity change moving a queued task.
        let migrating = self.lb.migrating == Some(pid);
        self.scx().enqueue(pid, cpu, f, migrating, false);
    }

    /// `dequeue_task_scx` for a sleep, an exit, or a migration (an affinity change).
    pub(crate) fn dequeue_task_scx(&mut self, cpu: usize, pid: Pid, flags: u32) {
        let current = self.rqs[cpu].curr == Some(pid);
        if current {
            self.update_curr_scx(cpu);
        }
        let f = if flags & crate::sched::fair::DEQUEUE_SLEEP != 0 {
            ext::SCX_DEQ_SLEEP
        } else {
            0
        };
        let migrating = self.lb.migrating == Some(pid);
        self.scx().dequeue(pid, f, current, migrating);
        self.rqs[cpu].nr_running -= 1;
        self.tasks[pid as usize].se.on_rq = false;
        self.sync_idle_bits(cpu);
    }

    /// `update_curr_scx`: the running task's runtime, and its slice.
    pub(crate) fn update_curr_scx(&mut self, cpu: usize) {
        let Some(p) = self.rqs[cpu].curr else {
            return;
        };
        let now = self.now;
        let se = &mut self.tasks[p as usize].se;
        let delta = now.saturating_sub(se.exec_start);
        if delta == 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        self.scx().update_curr(p, delta);
    }

    /// The ext pick (`balance_scx`, `pick_task_scx`, `put_prev_task_scx`,
    /// `set_next_task_scx`) and the idle task's `update_idle` on `cpu`.
    pub(crate) fn pick_next_task_scx(
        &mut self,
        cpu: usize,
        prev: Option<Pid>,
        q: &mut EventQueue<Event>,
    ) -> Option<Pid> {
        self.update_curr_scx(cpu);
        let next = self.scx().pick_next(cpu, prev);
        if let Some(n) = next {
            if Some(n) != prev {
                self.tasks[n as usize].se.exec_start = self.now;
            }
        }
        match (prev.is_some(), next.is_some()) {
            // put_prev_task_idle / set_next_task_idle.
            (false, true) => self.scx().update_idle(cpu, false),
            (true, false) => self.scx().update_idle(cpu, true),
            // pick_task_idle with the idle task current (6.12.10+): masks only.
            (false, false) => {
                let s = self.scx();
                if s.core.builtin_idle {
                    s.core.idle.update(cpu, true);
                }
            }
            (true, true) => {}
        }
        self.scx_actions(cpu, q);
        next
    }

    /// `task_tick_scx`: whether the running task's slice ran out.
    pub(crate) fn task_tick_scx(&mut self, cpu: usize) -> bool {
        self.update_curr_scx(cpu);
        let Some(p) = self.rqs[cpu].curr else {
            return false;
        };
        self.scx().tick(cpu, p)
    }

    /// `yield_task_scx`.
    pub(crate) fn yield_task_scx(&mut self, cpu: usize) {
        if let Some(p) = self.rqs[cpu].curr {
            self.update_curr_scx(cpu);
            self.scx().yield_task(cpu, p);
        }
    }

    /// Carry out what the class asked for, from `from_cpu`: migrations of queued
    /// tasks (`move_task_to_local_dsq`), reschedules and kicks (IPIs to other CPUs).
    pub(crate) fn scx_actions(&mut self, from_cpu: usize, q: &mut EventQueue<Event>) {
        let acts = self.scx().take_actions();
        for a in acts {
            match a {
                Action::Migrate { pid, from, to } => {
                    self.rqs[from].nr_running -= 1;
                    self.sync_idle_bits(from);
                    self.set_task_cpu(pid, to, false);
                    self.rqs[to].nr_running += 1;
                    self.sync_idle_bits(to);
                }
                Action::Resched { cpu } => self.resched_curr(cpu, from_cpu, q),
                Action::Kick { from, cpu, flags } => {
                    if self.scx().kick_arrives(cpu, flags) {
                        self.resched_curr(cpu, from, q);
                    }
                }
                Action::TimerArm { cpu, at, id, gen } => {
                    self.scx_timers_inflight += 1;
                    q.push(
                        at,
                        Event::ScxTimer {
                            cpu: cpu as u32,
                            id,
                            gen,
                        },
                    );
                }
            }
        }
    }

    /// At the start of the run: carry out what the scheduler's `ops.init` asked
    /// (it ran when the scheduler was loaded, on CPU 0).
    /// A scheduler whose `ops.init` failed is never enabled: the fair class runs
    /// everything from the start.
    pub(crate) fn scx_start(&mut self, q: &mut EventQueue<Event>) {
        if self.scx.is_some() {
            if self.scx_error().is_some() {
                return self.scx_disable(q);
            }
            self.scx_actions(0, q);
            self.push_scx_watchdog(q);
        }
    }

    /// Whether an ext task is runnable but not running (the watchdog will judge
    /// it); checked only when the queue holds nothing but periodic timers.
    pub(crate) fn scx_task_waiting(&self) -> bool {
        self.scx.as_ref().is_some_and(|s| {
            s.core.error.is_none()
                && s.core.tasks.iter().enumerate().any(|(p, t)| {
                    t.as_ref()
                        .is_some_and(|t| t.queued && s.core.curr[t.cpu] != Some(p as Pid))
                })
        })
    }

    /// Arm the sched_ext watchdog's next check, half a timeout from now.
    fn push_scx_watchdog(&mut self, q: &mut EventQueue<Event>) {
        let half = self.scx().core.watchdog_timeout / 2;
        self.scx_timers_inflight += 1;
        q.push(self.now + half, Event::ScxWatchdog);
    }

    /// `scx_watchdog_workfn`: look for a stalled runnable task, then re-arm.
    pub(crate) fn scx_watchdog(&mut self, q: &mut EventQueue<Event>) {
        if self.scx.is_none() {
            return;
        }
        self.scx().check_stalls();
        self.push_scx_watchdog(q);
    }

    /// A BPF timer's expiry on `cpu`: its callback, then what it asked for.
    pub(crate) fn scx_timer_fire(
        &mut self,
        cpu: usize,
        id: u32,
        gen: u32,
        q: &mut EventQueue<Event>,
    ) {
        self.update_curr_scx(cpu);
        if self.scx().timer_fire(cpu, id, gen) {
            self.scx_actions(cpu, q);
        }
    }

    /// The `--check` rules of the class: its own (every runnable task in exactly
    /// one place) and the rq counts (each rq counts the runnable ext tasks on it).
    pub(crate) fn check_scx(&self) -> Result<(), String> {
        let Some(s) = &self.scx else {
            return Ok(());
        };
        s.check()?;
        let mut n = vec![0u32; self.rqs.len()];
        for t in s.core.tasks.iter().flatten() {
            if t.queued {
                n[t.cpu] += 1;
            }
        }
        for (cpu, rq) in self.rqs.iter().enumerate() {
            if rq.nr_running != n[cpu] {
                return Err(format!(
                    "CPU {cpu}: nr_running {} but {} runnable ext tasks there",
                    rq.nr_running, n[cpu]
                ));
            }
        }
        for t in self.tasks.iter().skip(1) {
            let runnable = t.state == crate::sched::core::TaskState::Runnable && !t.wake_pending;
            let queued = s
                .core
                .tasks
                .get(t.pid as usize)
                .and_then(Option::as_ref)
                .is_some_and(|x| x.queued);
            if runnable != queued {
                return Err(format!(
                    "pid {} ({}) state {:?} but queued in sched_ext: {queued}",
                    t.pid, t.name, t.state
                ));
            }
            if runnable
                && !self.cpus_allowed(t.pid).test(t.cpu)
                && !self.aff.migration_pending(t.pid)
            {
                return Err(format!(
                    "pid {} on cpu{} outside its affinity",
                    t.pid, t.cpu
                ));
            }
        }
        Ok(())
    }

    /// The scheduler's first error (`scx_ops_error`), if it has failed.
    pub(crate) fn scx_error(&self) -> Option<String> {
        self.scx.as_ref().and_then(|s| s.core.error.clone())
    }

    /// `scx_ops_disable_workfn` after an error: the scheduler is unloaded and every
    /// task moves to the fair class, as `sched_deq_and_put_task` /
    /// `sched_enq_and_set_task` do around the class change. A runnable task is
    /// enqueued on the fair runqueue of the CPU it belongs to (`task_rq`, the rq
    /// sched_ext accounted it on, whether it sat in a local, global or user DSQ),
    /// not as a wakeup (`ENQUEUE_RESTORE`: v5.6 renormalises its vruntime against
    /// that rq's `min_vruntime`, EEVDF places it with its lag); a running task
    /// becomes its rq's current entity. Sleeping tasks change class when they wake.
    /// Every CPU with work then reschedules (`check_class_changed` →
    /// `switched_to_fair`), and from then on the fair class picks, wakes and
    /// balances. In the kernel the disable work runs on a kthread shortly after the
    /// error (while a bypass mode runs tasks in FIFO order); here it runs at the end
    /// of the event that failed (docs/kernel-mapping.md §9).
    pub(crate) fn scx_disable(&mut self, q: &mut EventQueue<Event>) {
        let Some(msg) = self.scx_error() else {
            return;
        };
        let now = self.now;
        for cpu in 0..self.rqs.len() {
            self.update_curr_scx(cpu);
        }
        let s = self
            .scx
            .take()
            .expect("an error implies a loaded scheduler");
        let mut runnable: Vec<(Pid, usize)> = s
            .core
            .tasks
            .iter()
            .enumerate()
            .filter_map(|(p, t)| t.as_ref().filter(|t| t.queued).map(|t| (p as Pid, t.cpu)))
            .collect();
        runnable.sort_unstable();
        self.aff.cursor = s.core.idle.cursor.clone();
        drop(s);
        // The ext class's counts go; the fair enqueues count the same tasks again.
        for rq in &mut self.rqs {
            rq.nr_running = 0;
        }
        for cpu in 0..self.rqs.len() {
            self.sync_idle_bits(cpu);
        }
        for &(pid, cpu) in &runnable {
            debug_assert_eq!(self.tasks[pid as usize].cpu, cpu);
            self.rq_update_clock(cpu, now);
            let running = self.rqs[cpu].curr == Some(pid);
            if running {
                // set_next_task_fair: the current entity is never in the timeline.
                self.rqs[cpu].cfs.curr = Some(pid);
            }
            self.activate_task(cpu, pid, 0);
            if running {
                let se = &mut self.tasks[pid as usize].se;
                se.exec_start = now;
                se.prev_sum_exec_runtime = se.sum_exec_runtime;
            }
        }
        self.scx_exit = Some((now, msg));
        for cpu in 0..self.rqs.len() {
            if self.rqs[cpu].nr_running > 0 {
                self.resched_curr(cpu, cpu, q);
            }
        }
    }
}
