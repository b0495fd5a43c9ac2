//! CPU time and the scheduler's own calls: compute, spin, sleep, yield, a bare
//! system call.
//!
//! A `compute` becomes a segment of work in reference nanoseconds (1/1024 units, so
//! the kernel can scale it by the CPU's capacity and frequency); the next op's
//! system-call cost is folded into the same segment when nothing can observe the
//! boundary, saving an event. A `spin` keeps the CPU busy until a wall time,
//! whatever its speed (a busy-wait does not go faster on a big core). A `sleep` is
//! `nanosleep`: an hrtimer armed on the task's CPU and a dequeue; `yield` is
//! `sched_yield`, which in the fair class only moves the task behind its peers.

use super::{ProgState, Sim};
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::program::Op;

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the CPU-time ops. Returns true when the step is over.
    pub(super) fn exec_cpu(&mut self, cpu: usize, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        let ops = &self.spec.programs[st.prog].ops;
        match op {
            Op::Compute(d) => {
                if st.phase == 0 {
                    let w = d.sample(&mut st.rng);
                    let mut cost = 0;
                    st.phase = 1;
                    // Run the next op's system-call cost in the same segment: nothing
                    // can observe the boundary between the two, and it saves an event.
                    if let Some(next) = ops.get(st.pc + 1) {
                        if let Some(c) = self.op_cost(next, inst) {
                            cost = self.noisy(c);
                            st.prepaid = true;
                        }
                    }
                    if w + cost > 0 || self.k.kernel_work_pending(cpu) {
                        self.k.run_work(cpu, w, cost, &mut self.q);
                        return true;
                    }
                }
                next!(st)
            }
            Op::Spin(d) => {
                if st.phase == 0 {
                    let w = d.sample(&mut st.rng);
                    st.phase = 1;
                    if w > 0 {
                        let until = self.k.now().saturating_add(w);
                        self.k.spin_until(cpu, until, &mut self.q);
                        return true;
                    }
                }
                next!(st)
            }
            Op::Sleep(d) => {
                if st.phase == 0 && self.k.kernel_work_pending(cpu) {
                    // Finish the pending kernel work (a wakeup just issued) first.
                    self.k.run_work(cpu, 0, 0, &mut self.q);
                    return true;
                }
                if st.phase == 0 {
                    let w = d.sample(&mut st.rng);
                    st.phase = 1;
                    self.k.sleep_current(cpu, w, &mut self.q);
                    return true;
                }
                next!(st)
            }
            Op::Yield => {
                if st.phase == 2 {
                    next!(st)
                }
                pay!(self, cpu, op, st);
                st.phase = 2;
                self.k.yield_current(cpu, &mut self.q);
                true
            }
            Op::ThreadStart { .. } => {
                if st.phase == 0 {
                    // thread_body's first act: pthread_setname_np.
                    self.k.set_task_comm(cpu);
                }
                pay!(self, cpu, op, st);
                next!(st)
            }
            Op::Syscall => {
                pay!(self, cpu, op, st);
                next!(st)
            }
            _ => unreachable!("not a CPU-time op: {op:?}"),
        }
    }
}
