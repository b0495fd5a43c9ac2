//! Pipe, AF_UNIX and TCP loopback calls: `write`, `read` and `poll` on a channel.
//!
//! Each call is *cost, then effect*: the call's kernel cost runs as work first, then
//! data moves and the channel's wait queues wake their waiters (`pipe_write` wakes a
//! reader with `WF_SYNC`, as `pipe_write`'s `wake_up_interruptible_sync_poll` does).
//! A call that blocks re-executes when woken, as the kernel's wait loops do.
//!
//! `SIM_` **cross-CPU channel traffic.** When the channel's previous write or read
//! ran on another CPU the call also pays `pipe_remote` / `unix_remote`, the cache
//! misses moving the buffers, lock and queue heads cost a real call (the kernel has no
//! such function; see the module essay of [`crate::sim`]).

use super::{ProgState, Sim, NO_CPU};
use crate::abi::Pid;
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::ipc::{ChanKind, Outcome, ReadOutcome};
use crate::workload::program::Op;

impl<O: Observer<SchedEvent>> Sim<O> {
    /// `SIM_` cross-CPU channel traffic, before a write or read call's effect on
    /// channel `i` from `cpu` (its own cost already run): when the channel's previous
    /// write or read call ran on another CPU, the call first runs `pipe_remote` /
    /// `unix_remote` (with the run's noise) as more of its cost and this returns true
    /// (the step ends; the call resumes after it). Decided once per call
    /// (`remote_paid`); [`Sim::touched_chan`] after the effect makes `cpu` the
    /// channel's last. Not a kernel function: the kernel pays this in cache misses
    /// inside the call.
    pub(super) fn remote_chan_cost(&mut self, cpu: usize, i: usize, st: &mut ProgState) -> bool {
        let last = self.chan_cpu[i];
        if st.remote_paid || last == cpu as u32 || last == NO_CPU {
            return false;
        }
        let c = self.k.cost();
        let ns = match self.chan_kind[i] {
            ChanKind::Pipe => c.pipe_remote,
            ChanKind::UnixStream => c.unix_remote,
            ChanKind::TcpLoopback => 0,
        };
        // Nothing drawn from the noise stream when 0: results stay byte-identical.
        if ns == 0 {
            return false;
        }
        st.remote_paid = true;
        let ns = self.noisy(ns);
        self.k.run_work(cpu, 0, ns, &mut self.q);
        true
    }

    /// After a write or read call's effect on channel `i` (completed or blocked: a
    /// blocked call took the channel's lock too): `cpu` is the channel's last CPU,
    /// and the task's next call decides its remote cost afresh.
    #[inline]
    pub(super) fn touched_chan(&mut self, cpu: usize, i: usize, st: &mut ProgState) {
        self.chan_cpu[i] = cpu as u32;
        st.remote_paid = false;
    }

    /// Execute (part of) one of the channel ops. Returns true when the step is over.
    pub(super) fn exec_chan(&mut self, cpu: usize, pid: Pid, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        match op {
            Op::Write { ch, bytes } => {
                let i = ch.resolve_at(inst, &st.marks, cpu);
                pay!(self, cpu, op, st);
                if self.remote_chan_cost(cpu, i, st) {
                    return true;
                }
                let r = self.chans[i].write(pid, bytes, st.retry, &mut self.wakes);
                self.touched_chan(cpu, i, st);
                self.do_wakes(cpu);
                self.next_or_retry(cpu, r, st)
            }
            Op::Read { ch, bytes } => {
                let i = ch.resolve_at(inst, &st.marks, cpu);
                pay!(self, cpu, op, st);
                if self.remote_chan_cost(cpu, i, st) {
                    return true;
                }
                let r = self.chans[i].read(pid, bytes - st.got, st.retry, &mut self.wakes);
                self.touched_chan(cpu, i, st);
                self.do_wakes(cpu);
                match r {
                    ReadOutcome::Done(n) => {
                        st.got += n;
                        if st.got >= bytes {
                            st.got = 0;
                            next!(st)
                        }
                        // A short read: the program reads again (a new call).
                        st.phase = 0;
                        st.retry = false;
                        false
                    }
                    ReadOutcome::Block => {
                        st.retry = true;
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            Op::Poll { ch } => {
                pay!(self, cpu, op, st);
                let i = ch.resolve_at(inst, &st.marks, cpu);
                match self.chans[i].poll_readable(pid) {
                    Outcome::Done => next!(st),
                    Outcome::Block => {
                        self.k.block_current(cpu, &mut self.q);
                        true
                    }
                }
            }
            _ => unreachable!("not a channel op: {op:?}"),
        }
    }
}
