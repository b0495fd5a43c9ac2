//! Kernel IPC objects as pure state machines.
//!
//! A simulated task (a [`Pid`]) calls an operation on an object (a pipe, a socket
//! pair direction, a futex word, a glibc mutex, a barrier, a condition variable). The
//! object answers whether the call completed ([`Outcome::Done`]) or the caller must
//! sleep ([`Outcome::Block`]), and appends to a caller-supplied `Vec<Wake>` every task
//! the call woke, with the wakeup flavour (`sync` = `WF_SYNC`, "the waker is about to
//! sleep", which matters to `select_task_rq_fair`). The objects know nothing of CPUs or
//! time: the simulator charges costs, blocks and wakes tasks.
//!
//! **The retry model.** The kernel sleeps in a loop: a woken task re-takes the lock
//! and re-checks its condition, and may go back to sleep (at the tail of an exclusive
//! queue). Here the simulator does the same by *re-executing* the operation of a woken
//! task with `retry: true` (for [`FutexTable::futex_wait`], [`Mutex::lock`],
//! [`CondVar::wait`] and `Channel::poll_readable` the object itself remembers who was
//! woken, so the re-executed call needs no flag). A call that returns `Block` has put
//! the caller on exactly one wait queue; a wakeup removes it from that queue (the
//! kernel's `autoremove_wake_function`), so between its wakeup and its retry a task is
//! on no queue and cannot be woken twice.
//!
//! Everything sleeps on one primitive, [`WaitQueue`] (`wait_queue_head`), with the
//! kernel's exclusive / non-exclusive distinction and insertion order. Steady-state
//! calls do not allocate (queues and buffers are reused `VecDeque`s/`Vec`s).
//!
//! Modules: [`waitqueue`] (the primitive), [`channel`] (byte channels: [`ChanKind`]
//! pipe, AF_UNIX stream, TCP loopback; the per-kind rules live in `pipe.rs`,
//! `unix.rs`, `tcp.rs`), [`futex`] (futex table and the glibc objects built on it).

pub mod channel;
pub mod futex;
mod pipe;
mod tcp;
mod unix;
pub mod waitqueue;

pub use channel::{ChanKind, ChanParams, ChanStats, Channel, PipeRules};
pub use futex::{Barrier, CondVar, FutexTable, Mutex};
pub use waitqueue::{WaitKind, WaitQueue, WakeKey};

pub use crate::abi::Pid;

/// One task woken by an operation, in the order the kernel would call
/// `try_to_wake_up`. `sync` is the `WF_SYNC` hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    pub pid: Pid,
    pub sync: bool,
}

/// Result of an operation that transfers no data back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The call returned to user space.
    Done,
    /// The caller is now on a wait queue and must sleep until woken, then retry.
    Block,
}

/// Result of a channel read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The read returned this many bytes (at least 1 for a non-empty request).
    Done(u32),
    /// The channel was empty: the reader is on the read wait queue.
    Block,
}
