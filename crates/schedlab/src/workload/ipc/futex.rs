//! Futexes (`kernel/futex.c`, v5.6) and the glibc objects built on them.
//!
//! **Futex.** `futex_wait(addr, expected)` sleeps only if the word still equals
//! `expected` (checked atomically with queueing), else returns at once (`EAGAIN`);
//! waiters of one address queue FIFO (one priority level: SCHED_OTHER);
//! `futex_wake(addr, n)` wakes the first `n`. Futex wakeups are not sync. A woken
//! waiter's `futex_wait` returns 0 whatever the word holds: the re-executed call of a
//! woken task completes (the table remembers whom it woke).
//!
//! **glibc mutex** (`PTHREAD_MUTEX_NORMAL`/default, `lowlevellock`): the word is
//! 0 = free, 1 = locked, 2 = locked and maybe contended. `lock`: CAS 0→1; on failure
//! exchange in 2 and `futex_wait(2)` until the exchange returns 0 (so a thread that
//! waited owns the lock in state 2). `unlock`: exchange in 0; if the old value was 2,
//! `futex_wake(1)`. The lock is free between the unlock and the woken waiter's retry,
//! so a running thread may take it first (barging; no hand-off).
//!
//! **Barrier** (`pthread_barrier_wait`): the last of `n` arrivals releases all the
//! waiters (non-sync futex wake, FIFO) and starts the next generation. A woken waiter's
//! retry completes because its generation has passed.
//!
//! **Condition variable**: `wait` always sleeps (the caller releases and re-takes the
//! mutex around it); `signal` wakes the oldest waiter, `broadcast` all; with no waiter
//! a signal is lost. Simplification: glibc ≥ 2.25's group-switching algorithm is
//! reduced to FIFO order, and no spurious wakeups are generated.

use super::waitqueue::{tally_sum, WaitKind, WaitQueue, WakeKey};
use super::{Outcome, Pid, Wake};

/// Remove `pid` from a small "woken, retry pending" list; true if it was there.
fn take_woken(list: &mut Vec<Pid>, pid: Pid) -> bool {
    match list.iter().position(|&p| p == pid) {
        Some(i) => {
            list.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Wake up to `n` exclusive waiters of `q` (non-sync) and remember them in `woken`.
fn futex_wake_queue(q: &mut WaitQueue, n: u32, woken: &mut Vec<Pid>, wakes: &mut Vec<Wake>) -> u32 {
    let start = wakes.len();
    let t = q.wake(n, WakeKey::In, false, wakes);
    woken.extend(wakes[start..].iter().map(|w| w.pid));
    tally_sum(&t)
}

/// Futex words allocated by `FutexTable::alloc`, each with its wait queue.
#[derive(Clone, Debug, Default)]
pub struct FutexTable {
    words: Vec<i64>,
    queues: Vec<WaitQueue>,
    woken: Vec<Pid>,
    /// `futex_wait` calls that returned `EAGAIN`.
    pub eagain: u64,
}

impl FutexTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new futex word (value 0); returns its address.
    pub(crate) fn alloc(&mut self) -> usize {
        self.words.push(0);
        self.queues.push(WaitQueue::new());
        self.words.len() - 1
    }

    fn check(&self, addr: usize) {
        assert!(
            addr < self.words.len(),
            "futex address {addr} was never allocated"
        );
    }

    pub fn set(&mut self, addr: usize, val: i64) {
        self.check(addr);
        self.words[addr] = val;
    }

    pub fn get(&self, addr: usize) -> i64 {
        self.check(addr);
        self.words[addr]
    }

    /// `FUTEX_WAIT`: `Block` (queued FIFO) only if the word equals `expected`.
    /// Re-executed by a woken waiter, it returns `Done`.
    pub fn futex_wait(&mut self, pid: Pid, addr: usize, expected: i64) -> Outcome {
        self.check(addr);
        if take_woken(&mut self.woken, pid) {
            return Outcome::Done;
        }
        if self.words[addr] != expected {
            self.eagain += 1;
            return Outcome::Done;
        }
        self.queues[addr].add(pid, WaitKind::Exclusive, 0);
        Outcome::Block
    }

    /// `FUTEX_WAKE`: wake up to `n` waiters in FIFO order (non-sync); returns how many.
    pub fn futex_wake(&mut self, addr: usize, n: u32, wakes: &mut Vec<Wake>) -> u32 {
        self.check(addr);
        futex_wake_queue(&mut self.queues[addr], n, &mut self.woken, wakes)
    }

    /// A waiter woken by [`FutexTable::futex_wake`] that does not re-execute its wait
    /// drops the wakeup here (so its next wait is not satisfied by it).
    pub(crate) fn forget_woken(&mut self, pid: Pid) {
        take_woken(&mut self.woken, pid);
    }

    /// Tasks sleeping on `addr`.
    pub fn waiters(&self, addr: usize) -> usize {
        self.check(addr);
        self.queues[addr].len()
    }
}

/// A glibc default mutex (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Mutex {
    /// 0 free, 1 locked, 2 locked with possible waiters.
    word: u8,
    holder: Option<Pid>,
    waiters: WaitQueue,
    woken: Vec<Pid>,
    /// Acquisitions, and those that had to sleep at least once.
    pub acquisitions: u64,
    pub contended: u64,
    /// `futex_wait` sleeps and `futex_wake` syscalls issued.
    pub futex_waits: u64,
    pub futex_wakes: u64,
}

impl Mutex {
    pub fn new() -> Self {
        Self::default()
    }

    /// `pthread_mutex_lock`. `Block` = the caller sleeps in `futex_wait`; when woken it
    /// calls `lock` again and re-contends.
    pub fn lock(&mut self, pid: Pid) -> Outcome {
        assert!(
            self.holder != Some(pid),
            "task {pid} locks a mutex it holds"
        );
        let retry = take_woken(&mut self.woken, pid);
        if !retry && self.word == 0 {
            self.word = 1;
            self.holder = Some(pid);
            self.acquisitions += 1;
            return Outcome::Done;
        }
        // __lll_lock_wait: exchange in 2; an old value of 0 means we own it.
        let old = self.word;
        self.word = 2;
        if old == 0 {
            self.holder = Some(pid);
            self.acquisitions += 1;
            if retry {
                self.contended += 1;
            }
            return Outcome::Done;
        }
        self.futex_waits += 1;
        self.waiters.add(pid, WaitKind::Exclusive, 0);
        Outcome::Block
    }

    /// `pthread_mutex_unlock` by the holder. Wakes one waiter (non-sync) if the lock
    /// was marked contended; returns whether a `futex_wake` syscall was made (even one
    /// that found nobody: glibc cannot know).
    pub fn unlock(&mut self, pid: Pid, wakes: &mut Vec<Wake>) -> bool {
        assert_eq!(
            self.holder,
            Some(pid),
            "task {pid} unlocks a mutex it does not hold"
        );
        self.holder = None;
        let old = self.word;
        self.word = 0;
        if old == 2 {
            self.futex_wakes += 1;
            futex_wake_queue(&mut self.waiters, 1, &mut self.woken, wakes);
            true
        } else {
            false
        }
    }

    pub fn holder(&self) -> Option<Pid> {
        self.holder
    }

    /// Tasks sleeping on the mutex.
    pub fn waiters(&self) -> usize {
        self.waiters.len()
    }
}

/// An `n`-party barrier (see the module doc).
#[derive(Clone, Debug)]
pub struct Barrier {
    n: u32,
    arrived: u32,
    generation: u64,
    waiters: WaitQueue,
    /// Sleepers and woken-not-yet-retried tasks, with the generation they wait in.
    sleeping: Vec<(Pid, u64)>,
}

impl Barrier {
    /// Panics if `n == 0` (`pthread_barrier_init` returns `EINVAL`: validate input).
    pub fn new(n: u32) -> Self {
        assert!(n > 0, "a barrier needs at least one party");
        Barrier {
            n,
            arrived: 0,
            generation: 0,
            waiters: WaitQueue::new(),
            sleeping: Vec::new(),
        }
    }

    /// Completed generations.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// `pthread_barrier_wait`; `retry` after a wakeup.
    pub(crate) fn arrive(&mut self, pid: Pid, retry: bool, wakes: &mut Vec<Wake>) -> Outcome {
        if retry {
            let i = self
                .sleeping
                .iter()
                .position(|&(p, _)| p == pid)
                .unwrap_or_else(|| panic!("task {pid} retries a barrier it never waited on"));
            if self.sleeping[i].1 != self.generation {
                self.sleeping.swap_remove(i);
                return Outcome::Done;
            }
            if !self.waiters.contains(pid) {
                self.waiters.add(pid, WaitKind::Exclusive, 0);
            }
            return Outcome::Block;
        }
        self.arrived += 1;
        if self.arrived == self.n {
            self.arrived = 0;
            self.generation += 1;
            self.waiters.wake_all(WakeKey::In, false, wakes);
            return Outcome::Done;
        }
        self.sleeping.push((pid, self.generation));
        self.waiters.add(pid, WaitKind::Exclusive, 0);
        Outcome::Block
    }
}

/// A condition variable without memory (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct CondVar {
    waiters: WaitQueue,
    signalled: Vec<Pid>,
    /// Signals and broadcasts that found no waiter.
    pub lost: u64,
}

impl CondVar {
    pub fn new() -> Self {
        Self::default()
    }

    /// `pthread_cond_wait` (mutex handling is the caller's): `Block`, or `Done` when
    /// re-executed after this task was signalled.
    pub fn wait(&mut self, pid: Pid) -> Outcome {
        if take_woken(&mut self.signalled, pid) {
            return Outcome::Done;
        }
        self.waiters.add(pid, WaitKind::Exclusive, 0);
        Outcome::Block
    }

    /// `pthread_cond_signal`: wakes the oldest waiter (non-sync); returns 0 or 1.
    pub fn signal(&mut self, wakes: &mut Vec<Wake>) -> u32 {
        let n = futex_wake_queue(&mut self.waiters, 1, &mut self.signalled, wakes);
        if n == 0 {
            self.lost += 1;
        }
        n
    }

    /// `pthread_cond_broadcast`: wakes every waiter; returns how many.
    pub fn broadcast(&mut self, wakes: &mut Vec<Wake>) -> u32 {
        let n = futex_wake_queue(&mut self.waiters, u32::MAX, &mut self.signalled, wakes);
        if n == 0 {
            self.lost += 1;
        }
        n
    }

    pub fn waiters(&self) -> usize {
        self.waiters.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pids(w: &[Wake]) -> Vec<Pid> {
        w.iter().map(|w| w.pid).collect()
    }

    /// The wakeups of `pids`, in order, none of them sync.
    fn plain_wakes(pids: &[Pid]) -> Vec<Wake> {
        pids.iter().map(|&pid| Wake { pid, sync: false }).collect()
    }

    #[test]
    fn futex_eagain_fifo_and_retry() {
        let mut f = FutexTable::new();
        let a = f.alloc();
        let b = f.alloc();
        f.set(a, 5);
        assert_eq!(f.futex_wait(1, a, 4), Outcome::Done);
        assert_eq!(f.eagain, 1);
        for p in [1, 2, 3] {
            assert_eq!(f.futex_wait(p, a, 5), Outcome::Block);
        }
        assert_eq!(f.futex_wait(7, b, 0), Outcome::Block);
        let mut w = Vec::new();
        assert_eq!(f.futex_wake(a, 2, &mut w), 2);
        assert_eq!(w, plain_wakes(&[1, 2]));
        assert_eq!(f.waiters(a), 1);
        assert_eq!(f.waiters(b), 1);
        // Woken waiters' retries complete even though the word still equals 5.
        assert_eq!(f.futex_wait(1, a, 5), Outcome::Done);
        assert_eq!(f.futex_wait(2, a, 5), Outcome::Done);
        // A fresh wait blocks again, behind 3.
        assert_eq!(f.futex_wait(1, a, 5), Outcome::Block);
        w.clear();
        assert_eq!(f.futex_wake(a, 10, &mut w), 2);
        assert_eq!(pids(&w), vec![3, 1]);
        assert_eq!(f.futex_wake(a, 1, &mut w), 0);
        assert_eq!(f.get(a), 5);
    }

    #[test]
    fn mutex_barging_no_handoff() {
        let mut m = Mutex::new();
        let mut w = Vec::new();
        assert_eq!(m.lock(1), Outcome::Done);
        assert!(!m.unlock(1, &mut w)); // uncontended: no syscall
        assert_eq!(m.lock(1), Outcome::Done);
        assert_eq!(m.lock(2), Outcome::Block);
        assert_eq!(m.lock(3), Outcome::Block);
        assert!(m.unlock(1, &mut w));
        assert_eq!(
            w,
            vec![Wake {
                pid: 2,
                sync: false
            }]
        );
        assert_eq!(m.holder(), None);
        // Thread 4 barges in before 2 runs.
        assert_eq!(m.lock(4), Outcome::Done);
        assert_eq!(m.holder(), Some(4));
        // 2 re-contends and sleeps again, behind 3.
        assert_eq!(m.lock(2), Outcome::Block);
        w.clear();
        assert!(m.unlock(4, &mut w));
        assert_eq!(pids(&w), vec![3]);
        assert_eq!(m.lock(3), Outcome::Done);
        assert_eq!(m.holder(), Some(3));
        w.clear();
        // 3 took it in state 2: its unlock makes a futex_wake, which wakes 2.
        assert!(m.unlock(3, &mut w));
        assert_eq!(pids(&w), vec![2]);
        assert_eq!(m.lock(2), Outcome::Done);
        w.clear();
        // Last waiter owns it in state 2: unlock issues a futex_wake that finds nobody.
        assert!(m.unlock(2, &mut w));
        assert!(w.is_empty());
        assert_eq!(m.futex_waits, 3);
        assert_eq!(m.futex_wakes, 4);
        assert_eq!(m.contended, 2);
        assert_eq!(m.acquisitions, 5);
    }

    #[test]
    fn barrier_generations() {
        let mut b = Barrier::new(3);
        let mut w = Vec::new();
        assert_eq!(b.arrive(1, false, &mut w), Outcome::Block);
        assert_eq!(b.arrive(2, false, &mut w), Outcome::Block);
        assert!(w.is_empty());
        assert_eq!(b.arrive(3, false, &mut w), Outcome::Done);
        assert_eq!(w, plain_wakes(&[1, 2]));
        assert_eq!(b.generation(), 1);
        w.clear();
        // Task 3 races ahead into the next generation before 1 and 2 have run.
        assert_eq!(b.arrive(3, false, &mut w), Outcome::Block);
        // Woken waiters' retries complete and do not count as arrivals.
        assert_eq!(b.arrive(1, true, &mut w), Outcome::Done);
        assert_eq!(b.arrive(2, true, &mut w), Outcome::Done);
        assert!(w.is_empty());
        assert_eq!(b.arrive(1, false, &mut w), Outcome::Block);
        assert_eq!(b.arrive(2, false, &mut w), Outcome::Done);
        assert_eq!(pids(&w), vec![3, 1]);
        assert_eq!(b.generation(), 2);
        // One-party barrier never blocks.
        let mut one = Barrier::new(1);
        assert_eq!(one.arrive(9, false, &mut w), Outcome::Done);
        assert_eq!(one.generation(), 1);
    }

    #[test]
    fn condvar_lost_signal_and_broadcast() {
        let mut c = CondVar::new();
        let mut w = Vec::new();
        assert_eq!(c.signal(&mut w), 0);
        assert_eq!(c.lost, 1);
        // The lost signal is not remembered.
        assert_eq!(c.wait(1), Outcome::Block);
        assert_eq!(c.wait(2), Outcome::Block);
        assert_eq!(c.wait(3), Outcome::Block);
        assert_eq!(c.signal(&mut w), 1);
        assert_eq!(
            w,
            vec![Wake {
                pid: 1,
                sync: false
            }]
        );
        assert_eq!(c.wait(1), Outcome::Done);
        w.clear();
        assert_eq!(c.broadcast(&mut w), 2);
        assert_eq!(pids(&w), vec![2, 3]);
        assert_eq!(c.wait(3), Outcome::Done);
        assert_eq!(c.wait(2), Outcome::Done);
        assert_eq!(c.waiters(), 0);
        assert_eq!(c.broadcast(&mut w), 0);
        assert_eq!(c.lost, 2);
    }
}
