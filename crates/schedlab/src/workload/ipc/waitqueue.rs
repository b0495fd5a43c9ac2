//! The kernel wait queue (`struct wait_queue_head`, `kernel/sched/wait.c`, v5.6).
//!
//! A wait queue is an ordered list of sleepers. Each entry is *exclusive* or not:
//!
//! | how the task sleeps | kernel call | inserted at |
//! |---|---|---|
//! | exclusive (`wait_event_*_exclusive`, futex) | `prepare_to_wait_exclusive` | tail |
//! | non-exclusive (`prepare_to_wait`, `pipe_wait`, socket waits) | `__add_wait_queue` | head |
//! | poll/select registration (`poll_wait`) | `add_wait_queue` | head |
//!
//! A wakeup (`__wake_up_common`) walks the list from the head and wakes every entry
//! it meets until it has woken `nr_exclusive` exclusive entries: so all non-exclusive
//! sleepers (which sit in front) are woken, plus at most `nr_exclusive` exclusive ones
//! in FIFO order. Woken entries are removed (`autoremove_wake_function`); a task that
//! finds its condition still false re-inserts itself (an exclusive one at the tail).
//! Poll entries filter on the wakeup key (`pollwake`): a poller waiting for input is
//! not woken by a "space available" (`EPOLLOUT`) wakeup, while ordinary sleepers ignore
//! the key. Non-exclusive sleepers are therefore woken in LIFO order of arrival, as in
//! the kernel.
//!
//! Simplifications: poll entries only model "waiting for input" (`EPOLLIN`); an entry
//! records the task and a small caller-defined `tag` (reader / writer / poller) so the
//! owner can count wakeups by role; there is no priority (`WQ_FLAG_PRIORITY` is later
//! than v5.6).

use std::collections::VecDeque;

use super::{Pid, Wake};

/// How a task sleeps on a [`WaitQueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// `WQ_FLAG_EXCLUSIVE`: appended at the tail, one wakeup releases one of them.
    Exclusive,
    /// Ordinary non-exclusive sleeper: inserted at the head, woken by every wakeup.
    Shared,
    /// A `poll()` registration waiting for input: non-exclusive, woken only by
    /// [`WakeKey::In`] wakeups.
    PollIn,
}

/// The poll key passed with a wakeup (`EPOLLIN` or `EPOLLOUT` family).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeKey {
    /// Data became available.
    In,
    /// Space became available.
    Out,
}

/// Number of distinct tags the per-wakeup tally reports.
pub const NR_TAGS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    pid: Pid,
    kind: WaitKind,
    tag: u8,
}

/// A FIFO wait queue with exclusive and non-exclusive entries (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct WaitQueue {
    entries: VecDeque<Entry>,
}

impl WaitQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Put `pid` to sleep on this queue. `tag` (< [`NR_TAGS`]) is returned in the
    /// wakeup tally. A task must not already be on the queue (a simulator bug).
    pub fn add(&mut self, pid: Pid, kind: WaitKind, tag: u8) {
        debug_assert!(
            (tag as usize) < NR_TAGS,
            "wait queue tag {tag} out of range"
        );
        debug_assert!(
            !self.contains(pid),
            "task {pid} added twice to the same wait queue"
        );
        let e = Entry { pid, kind, tag };
        match kind {
            WaitKind::Exclusive => self.entries.push_back(e),
            WaitKind::Shared | WaitKind::PollIn => self.entries.push_front(e),
        }
    }

    /// `__wake_up_common`: wake every non-exclusive entry met from the head and stop
    /// after `nr_exclusive` exclusive ones (`u32::MAX` = all). Woken tasks are removed
    /// and appended to `wakes` with the given `sync` flavour. Returns how many tasks of
    /// each tag were woken.
    pub fn wake(
        &mut self,
        nr_exclusive: u32,
        key: WakeKey,
        sync: bool,
        wakes: &mut Vec<Wake>,
    ) -> [u32; NR_TAGS] {
        let mut tally = [0u32; NR_TAGS];
        let mut left = nr_exclusive;
        let mut i = 0;
        while i < self.entries.len() && left > 0 {
            let e = self.entries[i];
            if e.kind == WaitKind::PollIn && key != WakeKey::In {
                i += 1;
                continue;
            }
            self.entries.remove(i);
            wakes.push(Wake { pid: e.pid, sync });
            tally[e.tag as usize] += 1;
            if e.kind == WaitKind::Exclusive {
                left -= 1;
            }
        }
        tally
    }

    /// `wake_up_all`: wake every entry the key allows.
    pub(crate) fn wake_all(
        &mut self,
        key: WakeKey,
        sync: bool,
        wakes: &mut Vec<Wake>,
    ) -> [u32; NR_TAGS] {
        self.wake(u32::MAX, key, sync, wakes)
    }

    /// Remove `pid` without waking it (a cancelled wait). Returns whether it was there.
    pub fn remove(&mut self, pid: Pid) -> bool {
        match self.entries.iter().position(|e| e.pid == pid) {
            Some(i) => {
                self.entries.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, pid: Pid) -> bool {
        self.entries.iter().any(|e| e.pid == pid)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sleepers in list order (head first): the order a wakeup would visit them.
    pub fn iter(&self) -> impl Iterator<Item = (Pid, WaitKind)> + '_ {
        self.entries.iter().map(|e| (e.pid, e.kind))
    }
}

/// Total of a tally.
pub(crate) fn tally_sum(t: &[u32; NR_TAGS]) -> u32 {
    t.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pids(w: &[Wake]) -> Vec<Pid> {
        w.iter().map(|w| w.pid).collect()
    }

    #[test]
    fn exclusive_fifo_one_at_a_time() {
        let mut q = WaitQueue::new();
        for p in [1, 2, 3] {
            q.add(p, WaitKind::Exclusive, 0);
        }
        let mut w = Vec::new();
        assert_eq!(q.wake(1, WakeKey::In, true, &mut w), [1, 0, 0, 0]);
        assert_eq!(w, vec![Wake { pid: 1, sync: true }]);
        q.wake(2, WakeKey::In, false, &mut w);
        assert_eq!(pids(&w), vec![1, 2, 3]);
        assert!(!w[1].sync && !w[2].sync);
        assert!(q.is_empty());
    }

    #[test]
    fn nonexclusive_at_head_lifo_and_all_woken_before_one_exclusive() {
        let mut q = WaitQueue::new();
        q.add(10, WaitKind::Exclusive, 0);
        q.add(11, WaitKind::Exclusive, 0);
        q.add(1, WaitKind::Shared, 1);
        q.add(2, WaitKind::PollIn, 2);
        q.add(3, WaitKind::Shared, 1);
        assert_eq!(
            q.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            vec![3, 2, 1, 10, 11]
        );
        let mut w = Vec::new();
        let t = q.wake(1, WakeKey::In, true, &mut w);
        assert_eq!(pids(&w), vec![3, 2, 1, 10]);
        assert_eq!(t, [1, 2, 1, 0]);
        assert_eq!(q.iter().map(|(p, _)| p).collect::<Vec<_>>(), vec![11]);
    }

    #[test]
    fn out_key_skips_input_pollers() {
        let mut q = WaitQueue::new();
        q.add(1, WaitKind::Shared, 0);
        q.add(2, WaitKind::PollIn, 2);
        q.add(3, WaitKind::Shared, 1);
        let mut w = Vec::new();
        q.wake_all(WakeKey::Out, true, &mut w);
        assert_eq!(pids(&w), vec![3, 1]);
        assert!(q.contains(2) && q.len() == 1);
        assert!(q.remove(2));
        assert!(!q.remove(2));
    }
}
