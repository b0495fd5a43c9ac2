//! TCP over loopback, reduced to what ping-pong benchmarks (uperf) exercise.
//!
//! A `write()` runs the whole receive path on the sender's CPU (softirq), queues the
//! bytes on the receiver and wakes every sleeper of the receiving socket, sync
//! (`sock_def_readable`; `tcp_recvmsg` waits non-exclusively in `sk_wait_data`). A
//! read takes `min(n, queued)` bytes and blocks only when nothing is queued.
//!
//! SIM_ simplification: the interplay of the send queue, ACKs, the receive window and
//! buffer autotuning is replaced by one budget of unread bytes
//! ([`ChanParams::tcp_budget`], 2.5 MiB by default, between the default `tcp_wmem` and
//! `tcp_rmem` maxima). A write is accepted whole if less than the budget is unread,
//! otherwise the writer sleeps (non-exclusively); a read that brings the unread bytes
//! down to two thirds of the budget wakes all blocked writers (sync), the
//! `sk_stream_write_space` hysteresis (free space >= half the used space). With one
//! 8 KiB message in flight per direction this never blocks a writer.

use super::channel::{sock_wake_all, ChanParams, ChanStats, TAG_POLLER, TAG_READER, TAG_WRITER};
use super::waitqueue::{WaitKind, WaitQueue, WakeKey};
use super::{Outcome, Pid, ReadOutcome, Wake};

#[derive(Clone, Debug)]
pub(super) struct Tcp {
    unread: u64,
    budget: u64,
    recv_wait: WaitQueue,
    send_wait: WaitQueue,
}

impl Tcp {
    pub(super) fn new(p: &ChanParams) -> Self {
        Tcp {
            unread: 0,
            budget: p.tcp_budget as u64,
            recv_wait: WaitQueue::new(),
            send_wait: WaitQueue::new(),
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.unread
    }

    pub(super) fn is_waiting(&self, pid: Pid) -> bool {
        self.recv_wait.contains(pid) || self.send_wait.contains(pid)
    }

    pub(super) fn write(
        &mut self,
        pid: Pid,
        bytes: u32,
        retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> Outcome {
        if self.unread >= self.budget {
            if retry {
                st.spurious_writer_wakeups += 1;
            }
            self.send_wait.add(pid, WaitKind::Shared, TAG_WRITER);
            return Outcome::Block;
        }
        self.unread += bytes as u64;
        st.occupancy(self.unread, 1);
        sock_wake_all(&mut self.recv_wait, WakeKey::In, st, wakes);
        Outcome::Done
    }

    pub(super) fn read(
        &mut self,
        pid: Pid,
        n: u32,
        _retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> ReadOutcome {
        if self.unread == 0 {
            self.recv_wait.add(pid, WaitKind::Shared, TAG_READER);
            return ReadOutcome::Block;
        }
        let got = (n as u64).min(self.unread);
        self.unread -= got;
        if !self.send_wait.is_empty() && 3 * self.unread <= 2 * self.budget {
            sock_wake_all(&mut self.send_wait, WakeKey::Out, st, wakes);
        }
        ReadOutcome::Done(got as u32)
    }

    pub(super) fn poll_readable(&mut self, pid: Pid) -> Outcome {
        if self.unread > 0 {
            return Outcome::Done;
        }
        self.recv_wait.add(pid, WaitKind::PollIn, TAG_POLLER);
        Outcome::Block
    }
}

#[cfg(test)]
mod tests {
    use super::super::channel::{ChanKind, ChanParams, Channel};
    use super::super::{Outcome, ReadOutcome, Wake};

    #[test]
    fn ping_pong_never_blocks_writer_and_wakes_sleeping_reader() {
        let mut up = Channel::new(ChanKind::TcpLoopback, ChanParams::x86_64());
        let mut down = Channel::new(ChanKind::TcpLoopback, ChanParams::x86_64());
        let mut w = Vec::new();
        // master 1 reads down; slave 2 writes down then reads up.
        assert_eq!(down.read(1, 8192, false, &mut w), ReadOutcome::Block);
        for _ in 0..1000 {
            assert_eq!(down.write(2, 8192, false, &mut w), Outcome::Done);
            assert_eq!(w, vec![Wake { pid: 1, sync: true }]);
            w.clear();
            assert_eq!(up.read(2, 8192, false, &mut w), ReadOutcome::Block);
            assert_eq!(down.read(1, 8192, true, &mut w), ReadOutcome::Done(8192));
            assert_eq!(up.write(1, 8192, false, &mut w), Outcome::Done);
            assert_eq!(w, vec![Wake { pid: 2, sync: true }]);
            w.clear();
            assert_eq!(up.read(2, 8192, true, &mut w), ReadOutcome::Done(8192));
            assert_eq!(down.read(1, 8192, false, &mut w), ReadOutcome::Block);
        }
        assert_eq!(down.stats().write_blocks, 0);
        assert_eq!(up.stats().write_blocks, 0);
        assert_eq!(down.stats().reader_wakeups, 1000);
    }

    #[test]
    fn streaming_past_budget_blocks_and_hysteresis_wakes() {
        let p = ChanParams {
            tcp_budget: 30_000,
            ..ChanParams::x86_64()
        };
        let mut c = Channel::new(ChanKind::TcpLoopback, p);
        let mut w = Vec::new();
        for _ in 0..4 {
            assert_eq!(c.write(1, 8000, false, &mut w), Outcome::Done);
        }
        assert_eq!(c.write(1, 8000, false, &mut w), Outcome::Block);
        // unread 32000 -> 24000 > 20000: no wake; -> 16000 <= 20000: wake.
        assert_eq!(c.read(2, 8000, false, &mut w), ReadOutcome::Done(8000));
        assert!(w.is_empty());
        assert_eq!(c.read(2, 8000, false, &mut w), ReadOutcome::Done(8000));
        assert_eq!(w, vec![Wake { pid: 1, sync: true }]);
        assert_eq!(c.write(1, 8000, true, &mut w), Outcome::Done);
    }
}
