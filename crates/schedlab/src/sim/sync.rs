//! Synchronisation: futexes, mutexes, barriers, condition variables, spin locks.
//!
//! These are the user-space primitives built on `futex(2)` (glibc's mutex, barrier
//! and condition variable; schbench's and rt-app's futex handshakes) and a user-space
//! spin lock. The objects themselves are pure state machines in
//! [`crate::workload::ipc`] that return the tasks to wake; here the interpreter pays
//! each call's cost, applies the effect, and turns the wake list into
//! `try_to_wake_up` calls. A mutex's contended path charges `futex_wait` /
//! `futex_wake` on top of its fast path, as `__lll_lock_wait` / `__lll_unlock_wake`
//! enter the kernel only when contended.

use super::{ProgState, Sim};
use crate::abi::Pid;
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::ipc::{CondVar, Outcome};
use crate::workload::program::{Op, FUTEX_BLOCKED, FUTEX_RUNNING, SPIN_POLL_NS};

/// Which condition variable a wait is on: a program's own, or the one of an rt-app
/// barrier ([`Op::CondBarrier`]).
#[derive(Clone, Copy)]
enum CondSel {
    Plain(usize),
    Barrier(usize),
}

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the futex ops. Returns true when the step is over.
    pub(super) fn exec_futex(&mut self, cpu: usize, pid: Pid, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        match op {
            Op::FutexWait { f, expected } => {
                if st.phase == 2 {
                    // Woken: forget the wakeup, or this task's next wait would return
                    // at once.
                    self.futex.forget_woken(pid);
                    next!(st)
                }
                pay!(self, cpu, op, st);
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                match self.futex.futex_wait(pid, addr, expected) {
                    Outcome::Done => next!(st),
                    Outcome::Block => {
                        st.phase = 2;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::FutexWake { f, n } => {
                pay!(self, cpu, op, st);
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                self.futex.futex_wake(addr, n, &mut self.wakes);
                self.do_wakes(cpu);
                next!(st)
            }
            Op::FutexSet { f, val } => {
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                self.futex.set(addr, val);
                next!(st)
            }
            Op::FutexPost { f } => {
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                if st.phase == 0 {
                    if self.futex.get(addr) != FUTEX_BLOCKED {
                        next!(st)
                    }
                    self.futex.set(addr, FUTEX_RUNNING);
                }
                let mut ph = st.phase;
                let r = self.cost(cpu, &mut ph, self.k.cost().futex_wake);
                st.phase = ph;
                if r {
                    return true;
                }
                self.futex.futex_wake(addr, 1, &mut self.wakes);
                self.do_wakes(cpu);
                next!(st)
            }
            Op::FutexAwait { f } => {
                // phase 0: check; 1: the futex_wait cost ran; 2: woken, check again.
                let addr = self.futex_addr[f.resolve_at(inst, &st.marks, cpu)];
                if st.phase != 1 {
                    if self.futex.get(addr) == FUTEX_RUNNING {
                        self.futex.set(addr, FUTEX_BLOCKED);
                        next!(st)
                    }
                    st.phase = 0;
                }
                let mut ph = st.phase;
                let r = self.cost(cpu, &mut ph, self.k.cost().futex_wait);
                st.phase = ph;
                if r {
                    return true;
                }
                match self.futex.futex_wait(pid, addr, FUTEX_BLOCKED) {
                    // The word changed before the call slept (EAGAIN): check again.
                    Outcome::Done => {
                        st.phase = 0;
                        false
                    }
                    Outcome::Block => {
                        st.phase = 2;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            _ => unreachable!("not a futex op: {op:?}"),
        }
    }

    /// Execute (part of) one of the lock ops (mutex, barrier, condition variable,
    /// spin lock). Returns true when the step is over.
    pub(super) fn exec_lock(&mut self, cpu: usize, pid: Pid, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        match op {
            Op::Lock(m) => {
                if self.mutexes[m.resolve_at(inst, &st.marks, cpu)].holder() == Some(pid) {
                    return self.bad_program(pid, "locks a mutex it already holds (self-deadlock)");
                }
                pay!(self, cpu, op, st);
                match self.mutexes[m.resolve_at(inst, &st.marks, cpu)].lock(pid) {
                    Outcome::Done => next!(st),
                    Outcome::Block => {
                        self.k.charge(cpu, self.k.cost().futex_wait, &mut self.q);
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::Unlock(m) => {
                if self.mutexes[m.resolve_at(inst, &st.marks, cpu)].holder() != Some(pid) {
                    return self.bad_program(pid, "unlocks a mutex it does not hold");
                }
                pay!(self, cpu, op, st);
                self.mutexes[m.resolve_at(inst, &st.marks, cpu)].unlock(pid, &mut self.wakes);
                if !self.wakes.is_empty() {
                    self.k.charge(cpu, self.k.cost().futex_wake, &mut self.q);
                }
                self.do_wakes(cpu);
                next!(st)
            }
            Op::Barrier(b) => {
                pay!(self, cpu, op, st);
                let r = self.barriers[b.resolve_at(inst, &st.marks, cpu)].arrive(
                    pid,
                    st.retry,
                    &mut self.wakes,
                );
                self.do_wakes(cpu);
                self.next_or_retry(cpu, r, st)
            }
            Op::CondWait { c: cv, m } => {
                let (ci, mi) = (
                    cv.resolve_at(inst, &st.marks, cpu),
                    m.resolve_at(inst, &st.marks, cpu),
                );
                if st.phase <= 1 && self.mutexes[mi].holder() != Some(pid) {
                    return self.bad_program(
                        pid,
                        "waits on a condition variable without holding its mutex",
                    );
                }
                match self.cond_wait(cpu, pid, CondSel::Plain(ci), mi, &op, st) {
                    Some(over) => over,
                    None => next!(st),
                }
            }
            Op::CondBarrier { b, m } => {
                let (bi, mi) = (
                    b.resolve_at(inst, &st.marks, cpu),
                    m.resolve_at(inst, &st.marks, cpu),
                );
                if st.phase <= 1 {
                    if self.mutexes[mi].holder() != Some(pid) {
                        return self.bad_program(
                            pid,
                            "arrives at an rt-app barrier without holding its mutex",
                        );
                    }
                    if self.bar_waiting[bi] == 0 {
                        // The last party: broadcast, holding the mutex (it pays what
                        // a `CondBroadcast` costs).
                        let broadcast = Op::CondBroadcast(b);
                        pay!(self, cpu, broadcast, st);
                        self.bar_conds[bi].broadcast(&mut self.wakes);
                        self.do_wakes(cpu);
                        next!(st)
                    }
                }
                let registering = st.phase <= 1;
                match self.cond_wait(cpu, pid, CondSel::Barrier(bi), mi, &op, st) {
                    Some(over) => {
                        if registering && st.phase == 2 {
                            self.bar_waiting[bi] -= 1;
                        }
                        over
                    }
                    None => {
                        self.bar_waiting[bi] += 1;
                        next!(st)
                    }
                }
            }
            Op::CondSignal(cv) => {
                pay!(self, cpu, op, st);
                self.conds[cv.resolve_at(inst, &st.marks, cpu)].signal(&mut self.wakes);
                self.do_wakes(cpu);
                next!(st)
            }
            Op::CondBroadcast(cv) => {
                pay!(self, cpu, op, st);
                self.conds[cv.resolve_at(inst, &st.marks, cpu)].broadcast(&mut self.wakes);
                self.do_wakes(cpu);
                next!(st)
            }
            Op::SpinLock { l, slot } => {
                // phase 0: pick the lock (e.g. of the CPU the task is on now);
                // phase 1: spin on that lock until a trylock succeeds, then check the
                // index again (a task that migrated while spinning releases the lock
                // and starts over, as schbench's lock_this_cpu does).
                let base = l.base as usize;
                if st.phase == 0 {
                    let i = l.resolve_at(inst, &st.marks, cpu);
                    if self.spin_holder[i] == Some(pid) {
                        return self.bad_program(pid, "spins on a spin lock it already holds");
                    }
                    st.marks[slot as usize] = (i - base) as u64;
                    st.phase = 1;
                }
                let i = base + st.marks[slot as usize] as usize;
                if self.spin_holder[i].is_some() {
                    let until = self.k.now() + SPIN_POLL_NS;
                    self.k.spin_until(cpu, until, &mut self.q);
                    return true;
                }
                if l.resolve_at(inst, &st.marks, cpu) != i {
                    st.phase = 0;
                    return false;
                }
                self.spin_holder[i] = Some(pid);
                next!(st)
            }
            Op::SpinUnlock { l } => {
                let i = l.resolve_at(inst, &st.marks, cpu);
                if self.spin_holder[i] != Some(pid) {
                    return self.bad_program(pid, "releases a spin lock it does not hold");
                }
                self.spin_holder[i] = None;
                next!(st)
            }

            _ => unreachable!("not a lock op: {op:?}"),
        }
    }

    /// `pthread_cond_wait` on `cv` with mutex `mi` (held): phase ≤ 1 pays `op`'s cost,
    /// registers, releases the mutex and blocks; phase 2 (woken) forgets the wakeup;
    /// phase 3 re-takes the mutex, blocking while another holds it. `Some(over)` while
    /// the wait goes on (as an op's return), `None` once the mutex is held again.
    fn cond_wait(
        &mut self,
        cpu: usize,
        pid: Pid,
        cv: CondSel,
        mi: usize,
        op: &Op,
        st: &mut ProgState,
    ) -> Option<bool> {
        if st.phase <= 1 {
            if self.pay(cpu, op, st) {
                return Some(true);
            }
            self.cond_mut(cv).wait(pid);
            self.mutexes[mi].unlock(pid, &mut self.wakes);
            self.do_wakes(cpu);
            st.phase = 2;
            self.k.block_current(cpu, &mut self.q);
            return Some(true);
        }
        if st.phase == 2 {
            // Woken by a signal: the re-executed wait returns (and the condvar forgets
            // the wakeup; otherwise this task's next wait would find it and never be
            // queued). Phase 3: re-take the mutex.
            let r = self.cond_mut(cv).wait(pid);
            debug_assert_eq!(r, Outcome::Done, "condvar wait woken without a signal");
            st.phase = 3;
        }
        match self.mutexes[mi].lock(pid) {
            Outcome::Done => None,
            Outcome::Block => {
                self.k.block_current(cpu, &mut self.q);
                Some(true)
            }
        }
    }

    fn cond_mut(&mut self, cv: CondSel) -> &mut CondVar {
        match cv {
            CondSel::Plain(i) => &mut self.conds[i],
            CondSel::Barrier(i) => &mut self.bar_conds[i],
        }
    }
}
