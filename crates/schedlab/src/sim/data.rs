//! Control flow and shared memory: loops, registers, words and lock-free lists.
//!
//! These ops cost nothing in simulated time: they are the user-space bookkeeping a
//! benchmark does between system calls (loop counters, a shared ticket counter, a
//! lock-free request list as schbench's message threads use). Loops count down,
//! walk a spliced batch newest first, or run while a deadline or ticket allows or
//! a flag word is still clear.

use super::{ProgState, Sim};
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::program::{LoopCount, Op};

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the control-flow and memory ops. Returns true when the step is over.
    pub(super) fn exec_data(&mut self, cpu: usize, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        match op {
            Op::Loop { count, end } => {
                let n = match count {
                    LoopCount::Forever => u64::MAX,
                    LoopCount::Times(d) => d.sample(&mut st.rng),
                    LoopCount::Each { slot } => {
                        let n = st.batch.len() as u64;
                        if let Some(v) = st.batch.pop() {
                            st.marks[slot as usize] = v;
                        }
                        n
                    }
                    LoopCount::While {
                        deadline,
                        ticket,
                        unset,
                    } => {
                        if self.loop_cond(st, deadline, ticket, unset) {
                            u64::MAX
                        } else {
                            0
                        }
                    }
                };
                if n == 0 {
                    st.pc = end + 1;
                    st.phase = 0;
                    return false;
                }
                st.loops.push((st.pc, n));
                next!(st)
            }
            Op::EndLoop { start } => {
                let again = match self.spec.programs[st.prog].ops[start] {
                    Op::Loop {
                        count:
                            LoopCount::While {
                                deadline,
                                ticket,
                                unset,
                            },
                        ..
                    } => self.loop_cond(st, deadline, ticket, unset),
                    Op::Loop {
                        count: LoopCount::Each { slot },
                        ..
                    } => match st.batch.pop() {
                        Some(v) => {
                            st.marks[slot as usize] = v;
                            true
                        }
                        None => false,
                    },
                    _ => {
                        let top = st.loops.last_mut().expect("EndLoop without Loop");
                        top.1 -= 1;
                        top.1 > 0
                    }
                };
                if again {
                    st.pc = start + 1;
                    st.phase = 0;
                    return false;
                }
                st.loops.pop();
                next!(st)
            }
            Op::Store { w, slot } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                self.words[i] = st.marks[slot as usize];
                next!(st)
            }
            Op::Load { slot, w } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                st.marks[slot as usize] = self.words[i];
                next!(st)
            }
            Op::FetchAdd { w, slot, add } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                st.marks[slot as usize] = self.words[i];
                self.words[i] = self.words[i].wrapping_add(add);
                next!(st)
            }
            Op::SetReg { slot, val } => {
                st.marks[slot as usize] = val;
                next!(st)
            }
            Op::AddWord { slot, w } => {
                let i = w.resolve_at(inst, &st.marks, cpu);
                let r = &mut st.marks[slot as usize];
                *r = r.wrapping_add(self.words[i]);
                next!(st)
            }
            Op::Push { l, item } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                let v = item.eval(inst, &st.marks, cpu);
                self.lists[i].push(v);
                next!(st)
            }
            Op::Splice { l } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                st.batch.append(&mut self.lists[i]);
                next!(st)
            }
            _ => unreachable!("not a control-flow and memory op: {op:?}"),
        }
    }

    /// The condition of a `LoopCount::While` loop, checked before each iteration.
    pub(super) fn loop_cond(
        &mut self,
        st: &ProgState,
        deadline: Option<(u8, u64)>,
        ticket: Option<(u32, u64)>,
        unset: Option<u32>,
    ) -> bool {
        if unset.is_some_and(|w| self.words[w as usize] != 0) {
            return false;
        }
        if let Some((slot, ns)) = deadline {
            if self.k.now() >= st.marks[slot as usize].saturating_add(ns) {
                return false;
            }
        }
        if let Some((w, limit)) = ticket {
            let t = self.words[w as usize];
            self.words[w as usize] = t + 1;
            if t >= limit {
                return false;
            }
        }
        true
    }
}
