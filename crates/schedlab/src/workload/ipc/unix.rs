//! AF_UNIX stream sockets (`net/unix/af_unix.c`, `net/core/sock.c`, v5.6): one
//! direction of a `socketpair(AF_UNIX, SOCK_STREAM)`.
//!
//! **Send side.** Every `write()` of up to [`ChanParams::unix_max_skb_payload`] bytes
//! becomes one skb of its own (no coalescing), queued on the peer's receive queue and
//! charged by its truesize ([`ChanParams::skb_truesize`]: 768 B for a 100-byte message
//! on x86-64) to the *sending* socket's `sk_wmem_alloc`, a refcount that starts at 1.
//! Before allocating each skb the sender checks `sk_wmem_alloc - 1 < sk_sndbuf`
//! (`sock_alloc_send_pskb`); otherwise it sleeps *non-exclusively* on the sending
//! socket's wait queue. With 100-byte messages and the default 212 992 B send buffer,
//! 278 messages may be outstanding and the 279th write blocks. All writers of the
//! channel share this budget (hackbench's 20 senders share one socket end).
//!
//! **Data arrival** (`sock_def_readable`): after each skb is queued, every sleeper on
//! the receiving socket (readers, which wait non-exclusively in
//! `unix_stream_data_wait`, and pollers) is woken, sync; nobody is woken if nobody
//! sleeps, and a woken reader is off the queue until it sleeps again.
//!
//! **Receive side.** A read copies `min(n, queued)` bytes across skbs (stream
//! semantics; target 1 byte). Each fully consumed skb is freed: `sock_wfree` drops
//! the charge by `truesize - 1`, calls the write-space callback, then drops the
//! remaining byte of charge. `unix_write_space` wakes *all* sleepers of the sending socket (sync, from the
//! reader) only when `4 * sk_wmem_alloc <= sk_sndbuf` (`unix_writable`), i.e. once at
//! most 69 100-byte messages are outstanding.
//!
//! Simplification: `sock_wait_for_wmem` re-checks `sk_wmem_alloc < sk_sndbuf` (without
//! the -1) before sleeping again; only the outer check is modelled (they differ only
//! when the charge equals the buffer exactly). No `SOCK_PASSCRED` message gluing rule.

use std::collections::VecDeque;

use super::channel::{
    sock_wake_all, ChanParams, ChanStats, Partial, TAG_POLLER, TAG_READER, TAG_WRITER,
};
use super::waitqueue::{WaitKind, WaitQueue, WakeKey};
use super::{Outcome, Pid, ReadOutcome, Wake};

#[derive(Clone, Copy, Debug)]
struct Skb {
    /// Unconsumed payload bytes.
    len: u32,
    truesize: u32,
}

#[derive(Clone, Debug)]
pub(super) struct Unix {
    params: ChanParams,
    /// The peer's `sk_receive_queue`.
    queue: VecDeque<Skb>,
    /// Sending socket's `sk_wmem_alloc` (refcount, base 1).
    wmem_alloc: u64,
    sndbuf: u64,
    max_payload: u32,
    /// Receiving socket's `sk_sleep`: readers and pollers.
    recv_wait: WaitQueue,
    /// Sending socket's `sk_sleep`: writers waiting for memory.
    send_wait: WaitQueue,
    bytes: u64,
    partial: Partial,
}

impl Unix {
    pub(super) fn new(p: &ChanParams) -> Self {
        Unix {
            params: *p,
            queue: VecDeque::new(),
            wmem_alloc: 1,
            sndbuf: p.unix_sndbuf as u64,
            max_payload: p.unix_max_skb_payload(),
            recv_wait: WaitQueue::new(),
            send_wait: WaitQueue::new(),
            bytes: 0,
            partial: Partial::default(),
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(super) fn bufs(&self) -> usize {
        self.queue.len()
    }

    pub(super) fn wmem_alloc(&self) -> u64 {
        self.wmem_alloc
    }

    pub(super) fn is_waiting(&self, pid: Pid) -> bool {
        self.recv_wait.contains(pid) || self.send_wait.contains(pid)
    }

    /// `unix_stream_sendmsg` (`net/unix/af_unix.c`, v5.6) with `sock_alloc_send_pskb`
    /// and `sock_wait_for_wmem` (`net/core/sock.c`) and `sock_def_readable`.
    pub(super) fn write(
        &mut self,
        pid: Pid,
        bytes: u32,
        retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> Outcome {
        let mut remaining = self.partial.start(pid, bytes, retry);
        let at_start = remaining;
        while remaining > 0 {
            // sk_wmem_alloc_get() = refcount - 1 must be below sk_sndbuf to allocate.
            if self.wmem_alloc > self.sndbuf {
                if retry && remaining == at_start {
                    st.spurious_writer_wakeups += 1;
                }
                self.partial.save(pid, remaining, bytes);
                self.send_wait.add(pid, WaitKind::Shared, TAG_WRITER);
                return Outcome::Block;
            }
            let size = remaining.min(self.max_payload);
            let truesize = self.params.skb_truesize(size);
            self.queue.push_back(Skb {
                len: size,
                truesize,
            });
            self.wmem_alloc += truesize as u64;
            self.bytes += size as u64;
            remaining -= size;
            st.occupancy(self.bytes, self.queue.len());
            sock_wake_all(&mut self.recv_wait, WakeKey::In, st, wakes);
        }
        Outcome::Done
    }

    /// `unix_stream_read_generic` (`net/unix/af_unix.c`, v5.6) with `sock_wfree` and
    /// `unix_write_space`; sleeping is `unix_stream_data_wait` (non-exclusive).
    pub(super) fn read(
        &mut self,
        pid: Pid,
        n: u32,
        _retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> ReadOutcome {
        if self.queue.is_empty() {
            self.recv_wait.add(pid, WaitKind::Shared, TAG_READER);
            return ReadOutcome::Block;
        }
        let mut got = 0u32;
        while got < n {
            let Some(skb) = self.queue.front_mut() else {
                break;
            };
            let chunk = skb.len.min(n - got);
            skb.len -= chunk;
            got += chunk;
            if skb.len == 0 {
                let truesize = skb.truesize as u64;
                self.queue.pop_front();
                // sock_wfree: keep one reference across the write-space callback.
                self.wmem_alloc -= truesize - 1;
                if 4 * self.wmem_alloc <= self.sndbuf {
                    sock_wake_all(&mut self.send_wait, WakeKey::Out, st, wakes);
                }
                self.wmem_alloc -= 1;
            }
        }
        self.bytes -= got as u64;
        ReadOutcome::Done(got)
    }

    /// `unix_poll` for input (`net/unix/af_unix.c`, v5.6).
    pub(super) fn poll_readable(&mut self, pid: Pid) -> Outcome {
        if !self.queue.is_empty() {
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

    fn pids(w: &[Wake]) -> Vec<u32> {
        w.iter().map(|w| w.pid).collect()
    }

    #[test]
    fn blocks_at_279th_message_and_wakes_all_senders_at_69() {
        let mut c = Channel::new(ChanKind::UnixStream, ChanParams::x86_64());
        let mut w = Vec::new();
        // 20 senders share the socket end, round robin.
        let mut sent = 0u32;
        let mut blocked = Vec::new();
        'outer: loop {
            for s in 1..=20u32 {
                match c.write(s, 100, false, &mut w) {
                    Outcome::Done => sent += 1,
                    Outcome::Block => {
                        blocked.push(s);
                        if blocked.len() == 20 {
                            break 'outer;
                        }
                    }
                }
            }
        }
        assert_eq!(sent, 278);
        assert_eq!(c.buffers(), 278);
        assert_eq!(c.unix_wmem_alloc(), Some(1 + 278 * 768));
        assert!(w.is_empty(), "no reader sleeps: no data-ready wakeup");
        // Drain down to 70 outstanding: nobody woken.
        for _ in 0..(278 - 70) {
            assert_eq!(c.read(100, 100, false, &mut w), ReadOutcome::Done(100));
        }
        assert!(w.is_empty());
        // The read that leaves 69 outstanding wakes all 20, sync, LIFO order.
        assert_eq!(c.read(100, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(c.buffers(), 69);
        let mut expect: Vec<u32> = blocked.clone();
        expect.reverse();
        assert_eq!(pids(&w), expect);
        assert!(w.iter().all(|w| w.sync));
        assert_eq!(c.stats().writer_wakeups, 20);
        w.clear();
        // Further frees find nobody asleep.
        assert_eq!(c.read(100, 100, false, &mut w), ReadOutcome::Done(100));
        assert!(w.is_empty());
        // All retries succeed.
        for s in &blocked {
            assert_eq!(c.write(*s, 100, true, &mut w), Outcome::Done);
        }
        assert_eq!(c.stats().spurious_writer_wakeups, 0);
    }

    #[test]
    fn reader_woken_only_while_sleeping() {
        let mut c = Channel::new(ChanKind::UnixStream, ChanParams::x86_64());
        let mut w = Vec::new();
        assert_eq!(c.write(1, 100, false, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert_eq!(c.read(9, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(c.read(9, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(1, 100, false, &mut w), Outcome::Done);
        assert_eq!(w, vec![Wake { pid: 9, sync: true }]);
        w.clear();
        // Reader woken but not yet run: further messages do not wake it again.
        assert_eq!(c.write(1, 100, false, &mut w), Outcome::Done);
        assert!(w.is_empty());
        // Stream read glues skbs.
        assert_eq!(c.read(9, 1000, true, &mut w), ReadOutcome::Done(200));
        assert_eq!(c.stats().reader_wakeups, 1);
    }

    #[test]
    fn partial_reads_keep_skb_charged() {
        let mut c = Channel::new(ChanKind::UnixStream, ChanParams::x86_64());
        let mut w = Vec::new();
        assert_eq!(c.write(1, 100, false, &mut w), Outcome::Done);
        assert_eq!(c.read(9, 60, false, &mut w), ReadOutcome::Done(60));
        assert_eq!(c.unix_wmem_alloc(), Some(769));
        assert_eq!(c.read(9, 60, false, &mut w), ReadOutcome::Done(40));
        assert_eq!(c.unix_wmem_alloc(), Some(1));
    }

    #[test]
    fn large_write_splits_into_skbs_and_resumes() {
        let p = ChanParams {
            unix_sndbuf: 8192,
            ..ChanParams::x86_64()
        };
        let mut c = Channel::new(ChanKind::UnixStream, p);
        let mut w = Vec::new();
        // max payload = 8192/2 - 64 = 4032, truesize(4032) = 512 + 256 + 4096 = 4864.
        assert_eq!(p.unix_max_skb_payload(), 4032);
        assert_eq!(c.write(1, 10_000, false, &mut w), Outcome::Block);
        // Two skbs (4032 each) charged 9728 >= 8192 before the third.
        assert_eq!(c.available(), 8064);
        assert_eq!(c.read(9, 4032, false, &mut w), ReadOutcome::Done(4032));
        // Charge 1 + 4864 after the free; checked at 4866: 4 * 4866 > 8192 -> no wake.
        assert!(w.is_empty());
        assert_eq!(c.read(9, 4032, false, &mut w), ReadOutcome::Done(4032));
        assert_eq!(pids(&w), vec![1]);
        w.clear();
        assert_eq!(c.write(1, 10_000, true, &mut w), Outcome::Done);
        assert_eq!(c.available(), 10_000 - 8064);
        assert_eq!(c.stats().bytes_written, 10_000);
    }
}
