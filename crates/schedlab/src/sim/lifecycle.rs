//! Task lifecycle: `fork`/`clone`, spawning a described task, `wait`, `exit`, and
//! the per-task attributes a program may change (`sched_setaffinity`, uclamp).
//!
//! A fork creates the child through the kernel's `sched_fork` / `wake_up_new_task`
//! (placement with `WF_FORK`); an exit wakes a parent blocked in `wait()` (a process
//! through `__wake_up_parent`, a sync wakeup; a thread's joiner through the futex in
//! its tid word, a plain one). `sched_setaffinity` names its target (the caller,
//! its last child, a task of the workload) and leaves the moving to the kernel
//! (sched/affinity.rs), which may block the caller until the migration stopper ran.

use super::{task_limit_msg, ProgState, Sim, StreamName};
use crate::abi::{Pid, WF_SYNC};
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::program::{AffinityTarget, Op};

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the task lifecycle ops. Returns true when the step is over.
    pub(super) fn exec_lifecycle(
        &mut self,
        cpu: usize,
        pid: Pid,
        op: Op,
        st: &mut ProgState,
    ) -> bool {
        match op {
            Op::Fork { prog, thread } => {
                pay!(self, cpu, op, st);
                if !self.k.can_create_task() {
                    return self.bad_program(pid, &task_limit_msg());
                }
                let name = self.spec.programs[prog].name.clone();
                let nice = self.k.task(pid).nice;
                let policy = self.k.task(pid).policy;
                let cpus = *self.k.cpus_allowed(pid);
                let child = self
                    .k
                    .create_task(&name, Some(pid), thread, nice, policy, cpus);
                st.nfork += 1;
                st.last_child = Some(child);
                st.children_alive += 1;
                let stream = format!("{}/{}", self.stream_name(&st.stream), st.nfork);
                let stream = StreamName::Forked(stream.into_boxed_str());
                self.new_state(child, prog, st.nfork - 1, stream, st.daemon);
                self.k.wake_up_new_task(child, &mut self.q);
                next!(st)
            }
            Op::Spawn { task } => {
                pay!(self, cpu, op, st);
                if !self.k.can_create_task() {
                    return self.bad_program(pid, &task_limit_msg());
                }
                let i = task as usize;
                let specs = std::sync::Arc::clone(&self.spec);
                let spec = &specs.tasks[i];
                let cpus = spec.cpus_or(self.k.cpus_allowed(pid));
                let child =
                    self.k
                        .create_task(&spec.name, Some(pid), true, spec.nice, spec.policy, cpus);
                self.spec_pid[i] = Some(child);
                st.nfork += 1;
                st.last_child = Some(child);
                st.children_alive += 1;
                let daemon = self.spec.daemons.contains(&i);
                self.new_state(
                    child,
                    spec.prog,
                    spec.instance,
                    StreamName::Spec(i as u32),
                    daemon,
                );
                self.k.wake_up_new_task(child, &mut self.q);
                next!(st)
            }
            Op::WaitChild => {
                pay!(self, cpu, op, st);
                if st.zombies > 0 {
                    st.zombies -= 1;
                    next!(st)
                }
                if st.children_alive == 0 {
                    next!(st)
                }
                st.waiting_child = true;
                self.k.block_current(cpu, &mut self.q);
                true
            }
            Op::Exit => {
                pay!(self, cpu, op, st);
                self.k.mark_exiting(pid);
                if let Some(parent) = self.k.task(pid).parent {
                    if let Some(ps) = self.st[parent as usize].as_mut() {
                        ps.children_alive -= 1;
                        ps.zombies += 1;
                        if ps.waiting_child {
                            ps.waiting_child = false;
                            // A process's exit wakes its parent in wait() through
                            // __wake_up_parent, a sync wakeup; a thread's exit wakes a
                            // joiner through the futex in its tid word, a plain one.
                            let thread = self.k.task(pid).tgid == self.k.task(parent).tgid;
                            let flags = if thread { 0 } else { WF_SYNC };
                            self.k.try_to_wake_up(parent, flags, cpu, &mut self.q);
                        }
                    }
                }
                if !st.daemon {
                    self.alive -= 1;
                }
                st.pc = usize::MAX / 2;
                self.k.exit_current(cpu, &mut self.q);
                true
            }
            Op::SetAffinity { mask, target } => {
                if st.phase == 2 {
                    // Woken by the stopper's completion, or picked on the CPU it was
                    // moved to.
                    next!(st)
                }
                let target = self.affinity_target(pid, target, st);
                let m = self.spec.masks[mask as usize];
                if target.is_some_and(|t| *self.k.cpus_allowed(t) == m) {
                    next!(st)
                }
                pay!(self, cpu, op, st);
                // ESRCH: the call costs, nothing changes.
                let Some(t) = target else { next!(st) };
                if self.k.sched_setaffinity(cpu, t, &m, &mut self.q) {
                    st.phase = 2;
                    return true;
                }
                next!(st)
            }
            Op::SetUclamp { min, max } => {
                if st.uclamp == (min, max) {
                    next!(st)
                }
                pay!(self, cpu, op, st);
                st.uclamp = (min, max);
                next!(st)
            }
            _ => unreachable!("not a task lifecycle op: {op:?}"),
        }
    }

    /// The pid `sched_setaffinity` names, if that task exists and has not exited.
    fn affinity_target(&self, pid: Pid, target: AffinityTarget, st: &ProgState) -> Option<Pid> {
        let t = match target {
            AffinityTarget::Current => Some(pid),
            AffinityTarget::LastChild => st.last_child,
            AffinityTarget::Task(r) => {
                let cpu = self.k.task(pid).cpu;
                self.spec_pid[r.resolve_at(st.instance, &st.marks, cpu)]
            }
        }?;
        (self.k.task(t).state != crate::sched::core::TaskState::Dead).then_some(t)
    }
}
