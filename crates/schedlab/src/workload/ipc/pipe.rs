//! Anonymous pipes (`fs/pipe.c`), v5.6 and the two earlier wakeup regimes.
//!
//! **Storage.** A ring of `max_usage` (16) slots, each one page. A write of `n`
//! bytes first tries to *merge* its last `n % PAGE_SIZE` bytes into the newest page,
//! only if the pipe was not empty when the write started and they fit behind that
//! page's data; the rest goes into fresh pages, one slot each (a write that slept
//! never merges afterwards). The pipe is *full* when all slots are in use, whatever
//! the bytes in them; a reader frees a slot only when it drains a page. With 100-byte
//! messages and 4 KiB pages: 40 messages per page, 640 in the pipe.
//!
//! **Wakeups (v5.6, `PipeRules::V5_6`).** Readers sleep exclusively on `rd_wait`,
//! writers exclusively on `wr_wait`; pollers sit non-exclusively on `rd_wait`. All
//! wakeups are sync and wake one exclusive sleeper (plus every poller on `rd_wait`):
//!
//! | who | condition | wakes |
//! |---|---|---|
//! | writer, before sleeping on a full pipe | pipe was empty at write start (or at its last wakeup) | `rd_wait` |
//! | writer, on return | same | `rd_wait` |
//! | writer that slept, on return | pipe not full | `wr_wait` (pass-on) |
//! | reader, on return | pipe was full at read start (or at its last wakeup), even if no slot was freed | `wr_wait` |
//! | reader that slept, on return | pipe not empty | `rd_wait` (pass-on) |
//!
//! A woken reader that finds the pipe empty, or a woken writer that finds it full,
//! goes back to sleep at the tail without waking anyone (a spurious wakeup).
//!
//! **v5.5 (`V5_5`)**: the same was-empty / was-full rules, but everybody sleeps
//! non-exclusively on one shared queue, so each wakeup wakes every sleeper (except
//! that a "space available" wakeup does not wake input pollers); no pass-on.
//! **Up to v5.4 (`PreV5_5`)**: one shared non-exclusive queue; a write that stored
//! any data wakes every sleeper (before sleeping on a full pipe and on return); a read
//! wakes every sleeper (but not input pollers) only if it emptied a page.

use std::collections::VecDeque;

use super::channel::{
    ChanParams, ChanStats, Partial, PipeRules, TAG_POLLER, TAG_READER, TAG_WRITER,
};
use super::waitqueue::{WaitKind, WaitQueue, WakeKey};
use super::{Outcome, Pid, ReadOutcome, Wake};

/// One slot: a page with `len` unread bytes starting at `offset`.
#[derive(Clone, Copy, Debug)]
struct PipeBuf {
    offset: u32,
    len: u32,
}

#[derive(Clone, Debug)]
pub(super) struct Pipe {
    ring: VecDeque<PipeBuf>,
    max_usage: usize,
    page_size: u32,
    rules: PipeRules,
    /// v5.6 `rd_wait`; for earlier rules the single shared `pipe->wait`.
    rd_wait: WaitQueue,
    /// v5.6 `wr_wait`; unused for earlier rules.
    wr_wait: WaitQueue,
    bytes: u64,
    partial: Partial,
}

impl Pipe {
    pub(super) fn new(p: &ChanParams) -> Self {
        Pipe {
            ring: VecDeque::with_capacity(p.pipe_slots as usize),
            max_usage: p.pipe_slots as usize,
            page_size: p.page_size,
            rules: p.pipe_rules,
            rd_wait: WaitQueue::new(),
            wr_wait: WaitQueue::new(),
            bytes: 0,
            partial: Partial::default(),
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(super) fn bufs(&self) -> usize {
        self.ring.len()
    }

    pub(super) fn is_waiting(&self, pid: Pid) -> bool {
        self.rd_wait.contains(pid) || self.wr_wait.contains(pid)
    }

    fn empty(&self) -> bool {
        self.ring.is_empty()
    }

    fn full(&self) -> bool {
        self.ring.len() >= self.max_usage
    }

    fn exclusive(&self) -> WaitKind {
        if self.rules == PipeRules::V5_6 {
            WaitKind::Exclusive
        } else {
            WaitKind::Shared
        }
    }

    fn wake_readers(&mut self, st: &mut ChanStats, wakes: &mut Vec<Wake>) {
        let t = self.rd_wait.wake(1, WakeKey::In, true, wakes);
        st.tally(t);
    }

    fn wake_writers(&mut self, st: &mut ChanStats, wakes: &mut Vec<Wake>) {
        let q = if self.rules == PipeRules::V5_6 {
            &mut self.wr_wait
        } else {
            &mut self.rd_wait
        };
        let t = q.wake(1, WakeKey::Out, true, wakes);
        st.tally(t);
    }

    fn sleep_writer(&mut self, pid: Pid) {
        let kind = self.exclusive();
        if self.rules == PipeRules::V5_6 {
            self.wr_wait.add(pid, kind, TAG_WRITER);
        } else {
            self.rd_wait.add(pid, kind, TAG_WRITER);
        }
    }

    /// `pipe_write` (`fs/pipe.c`, v5.6; the `PreV5_5` branch follows the v4.x `do_wakeup`
    /// logic, `V5_5` the was-empty rule on the shared queue). The writer's progress on a
    /// multi-page write survives its sleeps; a retry never merges (the kernel only tries
    /// to merge before its loop).
    pub(super) fn write(
        &mut self,
        pid: Pid,
        bytes: u32,
        retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> Outcome {
        let modern = self.rules != PipeRules::PreV5_5;
        let mut remaining = self.partial.start(pid, bytes, retry);
        let at_start = remaining;
        // v5.5+: recomputed after every sleep; pre-5.5: "stored data since last wake".
        let was_empty = self.empty();
        let mut do_wakeup = false;
        let mut wake_next_writer = retry && self.rules == PipeRules::V5_6;

        if !retry {
            let chars = bytes & (self.page_size - 1);
            if chars != 0 && !was_empty {
                let page = self.page_size;
                let last = self
                    .ring
                    .back_mut()
                    .expect("non-empty pipe has a newest page");
                if last.offset + last.len + chars <= page {
                    last.len += chars;
                    self.bytes += chars as u64;
                    remaining -= chars;
                    do_wakeup = true;
                }
            }
        }
        while remaining > 0 {
            if !self.full() {
                let n = remaining.min(self.page_size);
                self.ring.push_back(PipeBuf { offset: 0, len: n });
                self.bytes += n as u64;
                remaining -= n;
                do_wakeup = true;
                st.occupancy(self.bytes, self.ring.len());
                continue;
            }
            // Full: wake readers if the rules say so, then sleep.
            if (modern && was_empty) || (!modern && do_wakeup) {
                self.wake_readers(st, wakes);
            }
            if retry && remaining == at_start {
                st.spurious_writer_wakeups += 1;
            }
            self.partial.save(pid, remaining, bytes);
            self.sleep_writer(pid);
            return Outcome::Block;
        }
        if modern {
            if self.full() {
                wake_next_writer = false;
            }
            if was_empty {
                self.wake_readers(st, wakes);
            }
            if wake_next_writer {
                self.wake_writers(st, wakes);
            }
        } else if do_wakeup {
            self.wake_readers(st, wakes);
        }
        Outcome::Done
    }

    /// `pipe_read` (`fs/pipe.c`, v5.6; earlier rules per the module doc). Deviation: the
    /// "pipe was full but the read got no data" pre-sleep wakeup is omitted (it needs a
    /// zero-length buffer, which only a faulting writer leaves behind).
    pub(super) fn read(
        &mut self,
        pid: Pid,
        n: u32,
        retry: bool,
        st: &mut ChanStats,
        wakes: &mut Vec<Wake>,
    ) -> ReadOutcome {
        if self.empty() {
            // Nothing read, so nothing to wake (a reader never sleeps after reading).
            let kind = self.exclusive();
            self.rd_wait.add(pid, kind, TAG_READER);
            return ReadOutcome::Block;
        }
        let was_full = self.full();
        let mut wake_next_reader = retry && self.rules == PipeRules::V5_6;
        let mut got = 0u32;
        let mut freed = false;
        while got < n {
            let Some(buf) = self.ring.front_mut() else {
                break;
            };
            let chars = buf.len.min(n - got);
            buf.offset += chars;
            buf.len -= chars;
            got += chars;
            if buf.len == 0 {
                self.ring.pop_front();
                freed = true;
            }
        }
        self.bytes -= got as u64;
        match self.rules {
            PipeRules::V5_6 => {
                if self.empty() {
                    wake_next_reader = false;
                }
                if was_full {
                    self.wake_writers(st, wakes);
                }
                if wake_next_reader {
                    self.wake_readers(st, wakes);
                }
            }
            PipeRules::V5_5 => {
                if was_full {
                    self.wake_writers(st, wakes);
                }
            }
            PipeRules::PreV5_5 => {
                if freed {
                    self.wake_writers(st, wakes);
                }
            }
        }
        ReadOutcome::Done(got)
    }

    /// `pipe_poll` for input (`fs/pipe.c`, v5.6): a non-exclusive entry on `rd_wait`
    /// (the shared queue before v5.6).
    pub(super) fn poll_readable(&mut self, pid: Pid) -> Outcome {
        if !self.empty() {
            return Outcome::Done;
        }
        self.rd_wait.add(pid, WaitKind::PollIn, TAG_POLLER);
        Outcome::Block
    }
}

#[cfg(test)]
mod tests {
    use super::super::channel::{ChanKind, ChanParams, Channel, PipeRules};
    use super::super::{Outcome, ReadOutcome, Wake};

    fn pipe(rules: PipeRules) -> Channel {
        let p = ChanParams {
            pipe_rules: rules,
            ..ChanParams::x86_64()
        };
        Channel::new(ChanKind::Pipe, p)
    }

    fn pids(w: &[Wake]) -> Vec<u32> {
        w.iter().map(|w| w.pid).collect()
    }

    /// Writes 100-byte messages from `pid` until one blocks; returns how many completed.
    fn fill(c: &mut Channel, pid: u32, w: &mut Vec<Wake>) -> u32 {
        let mut n = 0;
        while c.write(pid, 100, false, w) == Outcome::Done {
            n += 1;
            assert!(n <= 10_000);
        }
        n
    }

    #[test]
    fn exactly_640_small_messages_fit() {
        for rules in [PipeRules::PreV5_5, PipeRules::V5_5, PipeRules::V5_6] {
            let mut c = pipe(rules);
            let mut w = Vec::new();
            assert_eq!(fill(&mut c, 1, &mut w), 640, "{rules:?}");
            assert_eq!(c.available(), 64_000);
            assert_eq!(c.buffers(), 16);
            assert!(c.is_waiting(1));
            assert_eq!(c.stats().max_bufs, 16);
        }
    }

    #[test]
    fn first_write_to_empty_pipe_takes_fresh_page_and_merge_needs_fit() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        // 4000 bytes then 100: does not fit behind 4000 -> new slot.
        assert_eq!(c.write(1, 4000, false, &mut w), Outcome::Done);
        assert_eq!(c.write(1, 96, false, &mut w), Outcome::Done);
        assert_eq!(c.buffers(), 1); // 4000 + 96 = 4096 fits exactly
        assert_eq!(c.write(1, 1, false, &mut w), Outcome::Done);
        assert_eq!(c.buffers(), 2);
        // Drain the first page partially: a slot is freed only when the page drains.
        assert_eq!(c.read(2, 4095, false, &mut w), ReadOutcome::Done(4095));
        assert_eq!(c.buffers(), 2);
        assert_eq!(c.read(2, 10, false, &mut w), ReadOutcome::Done(2));
        assert_eq!(c.buffers(), 0);
        // Empty again: the next small write takes a fresh slot.
        assert_eq!(c.write(1, 10, false, &mut w), Outcome::Done);
        assert_eq!(c.buffers(), 1);
    }

    #[test]
    fn large_write_merges_remainder_first_and_continues_after_sleep() {
        let p = ChanParams {
            pipe_slots: 2,
            ..ChanParams::x86_64()
        };
        let mut c = Channel::new(ChanKind::Pipe, p);
        let mut w = Vec::new();
        assert_eq!(c.write(1, 100, false, &mut w), Outcome::Done);
        // 3 * 4096 + 100: the 100-byte remainder is merged into page 0, then one page
        // fits, then the pipe is full with 4096 bytes still to write.
        assert_eq!(c.write(2, 3 * 4096 + 100, false, &mut w), Outcome::Block);
        assert_eq!(c.available(), 200 + 4096);
        assert!(c.is_waiting(2));
        w.clear();
        // Reading page 0 (200 bytes) frees a slot; pipe was full -> wakes writer 2.
        assert_eq!(c.read(3, 200, false, &mut w), ReadOutcome::Done(200));
        assert_eq!(w, vec![Wake { pid: 2, sync: true }]);
        w.clear();
        // Retry: one more page fits, then full again with 4096 left.
        assert_eq!(c.write(2, 3 * 4096 + 100, true, &mut w), Outcome::Block);
        assert_eq!(c.stats().spurious_writer_wakeups, 0);
        assert_eq!(c.available(), 2 * 4096);
        assert_eq!(c.read(3, 8192, false, &mut w), ReadOutcome::Done(8192));
        assert_eq!(pids(&w), vec![2]);
        w.clear();
        assert_eq!(c.write(2, 3 * 4096 + 100, true, &mut w), Outcome::Done);
        assert_eq!(c.available(), 4096);
        assert_eq!(c.stats().bytes_written, 100 + 3 * 4096 + 100);
        assert_eq!(c.stats().writes, 2);
        // Was empty at retry -> wakes readers (none sleep).
        assert!(w.is_empty());
    }

    #[test]
    fn spurious_writer_wakeups_39_of_40() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        assert_eq!(fill(&mut c, 1, &mut w), 640);
        assert!(w.is_empty());
        let mut writer_wakes = 0;
        let mut done = false;
        for i in 0..40 {
            w.clear();
            assert_eq!(c.read(2, 100, false, &mut w), ReadOutcome::Done(100));
            // Every read from a full pipe wakes the one blocked writer.
            assert_eq!(w, vec![Wake { pid: 1, sync: true }], "read {i}");
            writer_wakes += 1;
            w.clear();
            let r = c.write(1, 100, true, &mut w);
            assert!(w.is_empty());
            if i < 39 {
                assert_eq!(r, Outcome::Block, "read {i}");
            } else {
                assert_eq!(r, Outcome::Done);
                done = true;
            }
        }
        assert!(done);
        assert_eq!(writer_wakes, 40);
        assert_eq!(c.stats().spurious_writer_wakeups, 39);
        assert_eq!(c.stats().writer_wakeups, 40);
        assert_eq!(c.available(), 64_000 - 4000 + 100);
    }

    #[test]
    fn pass_on_chain_with_three_blocked_writers() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        assert_eq!(fill(&mut c, 1, &mut w), 640);
        assert_eq!(c.write(2, 100, false, &mut w), Outcome::Block);
        assert_eq!(c.write(3, 100, false, &mut w), Outcome::Block);
        assert!(w.is_empty());
        // Reader drains 120 messages (3 pages) without the writers running: the first
        // three reads from the full pipe wake writers 1, 2, 3 in FIFO order; the pipe
        // stops being full at read 40, so reads 41.. wake nobody.
        for i in 0..120 {
            assert_eq!(c.read(9, 100, false, &mut w), ReadOutcome::Done(100));
            if i == 2 {
                assert_eq!(pids(&w), vec![1, 2, 3]);
            }
        }
        assert_eq!(pids(&w), vec![1, 2, 3]);
        assert_eq!(c.buffers(), 13);
        w.clear();
        // Writer 1 writes a fresh slot (no merge after sleeping): 14 slots, not full,
        // so it passes the wakeup on to the next writer; nobody is queued though.
        assert_eq!(c.write(1, 100, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        // Now make writers 1 and 4 block again, behind nothing.
        for _ in 0..2 {
            assert_eq!(c.write(5, 4096, false, &mut w), Outcome::Done);
        }
        assert_eq!(c.buffers(), 16);
        assert_eq!(c.write(4, 100, false, &mut w), Outcome::Block);
        // Writers 2 and 3 retry: both find the pipe full -> spurious, re-queued behind 4.
        assert_eq!(c.write(2, 100, true, &mut w), Outcome::Block);
        assert_eq!(c.write(3, 100, true, &mut w), Outcome::Block);
        assert_eq!(c.stats().spurious_writer_wakeups, 2);
        assert!(w.is_empty());
        // Drain two whole pages (the two 4096-byte pages are at the back, so read the
        // first 2 pages of 100-byte messages: 80 reads). Read 1 wakes 4 (FIFO head).
        w.clear();
        for _ in 0..80 {
            assert_eq!(c.read(9, 100, false, &mut w), ReadOutcome::Done(100));
        }
        // Reads 1..40 were from a full pipe: they woke 4, 2, 3 (then nobody left).
        assert_eq!(pids(&w), vec![4, 2, 3]);
        assert_eq!(c.buffers(), 14);
        w.clear();
        // Writer 2 retries: fresh slot (15, not full) -> pass-on, but the writer queue
        // is empty (4 and 3 are woken, not yet retried). Writer 3 fills slot 16: full,
        // so no pass-on.
        assert_eq!(c.write(2, 100, true, &mut w), Outcome::Done);
        assert_eq!(c.write(3, 100, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert_eq!(c.buffers(), 16);
        assert_eq!(c.write(4, 100, true, &mut w), Outcome::Block);
        // (100 bytes would merge into writer 3's page: whole pages cannot.)
        assert_eq!(c.write(6, 4096, false, &mut w), Outcome::Block);
        assert_eq!(c.write(7, 4096, false, &mut w), Outcome::Block);
        // Queue: 4, 6, 7. The reader frees two slots with one large read from a full
        // pipe: one exclusive wakeup, writer 4 only.
        let first_two_pages = 40 * 100 + 40 * 100;
        assert_eq!(
            c.read(9, first_two_pages, false, &mut w),
            ReadOutcome::Done(first_two_pages)
        );
        assert_eq!(pids(&w), vec![4]);
        w.clear();
        // 4 retries: takes a slot (15 of 16, not full) -> passes on to 6.
        assert_eq!(c.write(4, 100, true, &mut w), Outcome::Done);
        assert_eq!(w, vec![Wake { pid: 6, sync: true }]);
        w.clear();
        // 6 retries: takes the last slot -> full -> no pass-on; 7 stays asleep.
        assert_eq!(c.write(6, 4096, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert!(c.is_waiting(7));
    }

    #[test]
    fn clean_pass_on_chain_of_three_writers() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        assert_eq!(fill(&mut c, 1, &mut w), 640);
        assert_eq!(c.write(2, 100, false, &mut w), Outcome::Block);
        assert_eq!(c.write(3, 100, false, &mut w), Outcome::Block);
        // One read drains three pages of a full pipe: one exclusive wakeup (writer 1).
        assert_eq!(c.read(9, 12_000, false, &mut w), ReadOutcome::Done(12_000));
        assert_eq!(pids(&w), vec![1]);
        w.clear();
        // 1 takes slot 14 of 16 and passes on to 2; 2 takes 15 and passes on to 3;
        // 3 takes the last slot: full, the chain stops.
        assert_eq!(c.write(1, 100, true, &mut w), Outcome::Done);
        assert_eq!(w, vec![Wake { pid: 2, sync: true }]);
        w.clear();
        assert_eq!(c.write(2, 100, true, &mut w), Outcome::Done);
        assert_eq!(w, vec![Wake { pid: 3, sync: true }]);
        w.clear();
        assert_eq!(c.write(3, 100, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert_eq!(c.buffers(), 16);
        assert_eq!(c.stats().writer_wakeups, 3);
    }

    #[test]
    fn writer_wakes_reader_before_sleeping_on_full_pipe() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        assert_eq!(c.read(9, 100, false, &mut w), ReadOutcome::Block);
        // 17 pages into an empty pipe: 16 fit, then the writer wakes the reader and sleeps.
        assert_eq!(c.write(1, 17 * 4096, false, &mut w), Outcome::Block);
        assert_eq!(w, vec![Wake { pid: 9, sync: true }]);
        w.clear();
        // The reader (it slept) reads one page from a full pipe: wakes the writer, and
        // passes on to the next reader (none).
        assert_eq!(c.read(9, 4096, true, &mut w), ReadOutcome::Done(4096));
        assert_eq!(pids(&w), vec![1]);
        w.clear();
        // The writer's retry finds the pipe non-empty: no reader wakeup on completion.
        assert_eq!(c.read(8, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(c.write(1, 17 * 4096, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert_eq!(c.stats().bytes_written, 17 * 4096);
    }

    #[test]
    fn reader_woken_only_on_empty_to_nonempty() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        assert_eq!(c.read(1, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.read(2, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert_eq!(w, vec![Wake { pid: 1, sync: true }]);
        w.clear();
        // Not empty: no wakeup, reader 2 keeps sleeping.
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert!(w.is_empty());
        // Reader 1 slept, reads one message and leaves one: passes on to reader 2.
        assert_eq!(c.read(1, 100, true, &mut w), ReadOutcome::Done(100));
        assert_eq!(w, vec![Wake { pid: 2, sync: true }]);
        w.clear();
        assert_eq!(c.read(2, 100, true, &mut w), ReadOutcome::Done(100));
        assert!(w.is_empty()); // pipe empty: no pass-on
                               // A woken reader that finds the pipe empty re-sleeps without waking anyone.
        assert_eq!(c.read(2, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert_eq!(pids(&w), vec![2]);
        w.clear();
        assert_eq!(c.read(3, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(c.read(2, 100, true, &mut w), ReadOutcome::Block);
        assert!(w.is_empty() && c.is_waiting(2));
        assert_eq!(c.stats().reader_wakeups, 3);
    }

    #[test]
    fn pollers_all_woken_by_first_write_only() {
        let mut c = pipe(PipeRules::V5_6);
        let mut w = Vec::new();
        for p in 1..=3 {
            assert_eq!(c.poll_readable(p), Outcome::Block);
        }
        assert_eq!(c.read(10, 1, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.read(11, 1, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(0, 1, false, &mut w), Outcome::Done);
        // Pollers (LIFO, at the head) and one exclusive reader.
        assert_eq!(pids(&w), vec![3, 2, 1, 10]);
        assert!(w.iter().all(|w| w.sync));
        for p in 1..=3 {
            assert_eq!(c.poll_readable(p), Outcome::Done);
        }
        assert_eq!(c.stats().poller_wakeups, 3);
    }

    #[test]
    fn pre_v5_5_wakes_everyone_on_every_write() {
        let mut c = pipe(PipeRules::PreV5_5);
        let mut w = Vec::new();
        assert_eq!(c.read(1, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.read(2, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.poll_readable(3), Outcome::Block);
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert_eq!(pids(&w), vec![3, 2, 1]);
        w.clear();
        // Re-sleep: reader 1 gets the data; 2 finds it empty and sleeps again.
        assert_eq!(c.read(1, 100, true, &mut w), ReadOutcome::Done(100));
        assert!(w.is_empty()); // emptied a page -> wakes sleepers: none left
        assert_eq!(c.read(2, 100, true, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert_eq!(pids(&w), vec![2]);
    }

    #[test]
    fn merged_write_wakes_sleeping_writer_only_before_v5_5() {
        for (rules, expect) in [(PipeRules::PreV5_5, vec![2]), (PipeRules::V5_6, vec![])] {
            let p = ChanParams {
                pipe_rules: rules,
                pipe_slots: 1,
                ..ChanParams::x86_64()
            };
            let mut c = Channel::new(ChanKind::Pipe, p);
            let mut w = Vec::new();
            assert_eq!(c.write(1, 4000, false, &mut w), Outcome::Done);
            assert_eq!(c.write(2, 200, false, &mut w), Outcome::Block);
            // 96 bytes merge into the only page: stores data without a new slot.
            assert_eq!(c.write(3, 96, false, &mut w), Outcome::Done);
            assert_eq!(c.buffers(), 1);
            assert_eq!(pids(&w), expect, "{rules:?}");
        }
    }

    #[test]
    fn pre_v5_5_full_pipe_writers_and_readers_share_queue() {
        let mut c = pipe(PipeRules::PreV5_5);
        let mut w = Vec::new();
        assert_eq!(fill(&mut c, 1, &mut w), 640);
        assert_eq!(c.write(2, 100, false, &mut w), Outcome::Block);
        assert_eq!(c.poll_readable(3), Outcome::Done);
        w.clear();
        // Reads that do not empty a page wake nobody.
        for _ in 0..39 {
            assert_eq!(c.read(5, 100, false, &mut w), ReadOutcome::Done(100));
        }
        assert!(w.is_empty());
        // The 40th empties a page: wakes both writers (LIFO: 2 slept last).
        assert_eq!(c.read(5, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(pids(&w), vec![2, 1]);
        w.clear();
        assert_eq!(c.write(2, 100, true, &mut w), Outcome::Done);
        assert_eq!(c.write(1, 100, true, &mut w), Outcome::Block);
        assert_eq!(c.stats().spurious_writer_wakeups, 1);
    }

    #[test]
    fn v5_5_was_empty_and_was_full_on_shared_queue() {
        let mut c = pipe(PipeRules::V5_5);
        let mut w = Vec::new();
        assert_eq!(c.read(1, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.read(2, 100, false, &mut w), ReadOutcome::Block);
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert_eq!(pids(&w), vec![2, 1]); // all sleepers, LIFO
        w.clear();
        assert_eq!(c.write(9, 100, false, &mut w), Outcome::Done);
        assert!(w.is_empty()); // not empty at write start
        assert_eq!(c.read(2, 100, true, &mut w), ReadOutcome::Done(100));
        assert!(w.is_empty()); // no pass-on in 5.5
        assert_eq!(c.read(1, 100, true, &mut w), ReadOutcome::Done(100));
        assert!(w.is_empty());
        assert_eq!(fill(&mut c, 3, &mut w), 640);
        assert_eq!(c.write(4, 100, false, &mut w), Outcome::Block);
        w.clear();
        assert_eq!(c.read(5, 100, false, &mut w), ReadOutcome::Done(100));
        assert_eq!(pids(&w), vec![4, 3]);
    }
}
