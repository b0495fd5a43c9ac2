//! Dispatch queues (`struct scx_dispatch_q`, v6.12 kernel/sched/ext.c).
//!
//! A DSQ holds runnable tasks waiting for a CPU. Every CPU has a *local* DSQ, the
//! only queue a CPU picks from; there is one *global* DSQ (per NUMA node in 6.12;
//! one here, see docs/design/sched-ext-6.12.md §2.2) that the core consumes on its
//! own when the local DSQ is empty; and a scheduler may create *user* DSQs with
//! 63-bit ids, which only it consumes. A queue is FIFO (`scx_bpf_dispatch`: tail,
//! or head with `SCX_ENQ_HEAD`/`SCX_ENQ_PREEMPT`) or ordered by a task's
//! `dsq_vtime` (`scx_bpf_dispatch_vtime`: wrap-aware `time_before64`, a task equal to
//! an existing key going after it, as `rb_add` does). A DSQ holding tasks of one
//! kind must not be given the other; a built-in DSQ cannot be vtime-ordered.

use std::collections::VecDeque;

use crate::abi::Pid;

/// `SCX_DSQ_FLAG_BUILTIN`.
pub const SCX_DSQ_FLAG_BUILTIN: u64 = 1 << 63;
/// `SCX_DSQ_FLAG_LOCAL_ON`.
pub const SCX_DSQ_FLAG_LOCAL_ON: u64 = 1 << 62;
/// `SCX_DSQ_INVALID`.
pub const SCX_DSQ_INVALID: u64 = SCX_DSQ_FLAG_BUILTIN;
/// `SCX_DSQ_GLOBAL`.
pub const SCX_DSQ_GLOBAL: u64 = SCX_DSQ_FLAG_BUILTIN | 1;
/// `SCX_DSQ_LOCAL`: the local DSQ of the CPU the task is being enqueued on.
pub const SCX_DSQ_LOCAL: u64 = SCX_DSQ_FLAG_BUILTIN | 2;
/// `SCX_DSQ_LOCAL_ON`: OR in a CPU number for that CPU's local DSQ.
pub const SCX_DSQ_LOCAL_ON: u64 = SCX_DSQ_FLAG_BUILTIN | SCX_DSQ_FLAG_LOCAL_ON;
/// `SCX_DSQ_LOCAL_CPU_MASK`.
pub const SCX_DSQ_LOCAL_CPU_MASK: u64 = 0xffff_ffff;

/// `time_before64(a, b)`: `a` is earlier than `b`, wrap-aware.
pub fn time_before64(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// How a DSQ orders its tasks, once the first insert has said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DsqOrder {
    /// Nothing inserted yet.
    Unset,
    Fifo,
    /// By `dsq_vtime` (the kernel's `dsq->priq` rbtree).
    Vtime,
}

/// One queued task: its pid and, in a vtime DSQ, its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsqEntry {
    pub pid: Pid,
    pub vtime: u64,
}

/// `struct scx_dispatch_q`.
#[derive(Clone, Debug)]
pub struct Dsq {
    pub id: u64,
    pub order: DsqOrder,
    /// `dsq->list`, kept in vtime order for a vtime DSQ.
    pub list: VecDeque<DsqEntry>,
    /// `dsq->seq`: bumped at every insert (the iterators' snapshot).
    pub seq: u64,
}

impl Dsq {
    pub fn new(id: u64) -> Self {
        Dsq {
            id,
            order: DsqOrder::Unset,
            list: VecDeque::new(),
            seq: 0,
        }
    }

    /// `dsq->nr`.
    pub fn nr(&self) -> usize {
        self.list.len()
    }

    pub fn is_builtin(&self) -> bool {
        self.id & SCX_DSQ_FLAG_BUILTIN != 0
    }

    /// FIFO insert: at the tail, or at the head.
    pub fn insert_fifo(&mut self, pid: Pid, head: bool) -> Result<(), String> {
        if self.order == DsqOrder::Vtime {
            return Err(format!(
                "DSQ 0x{:x} already had PRIQ-enqueued tasks",
                self.id
            ));
        }
        self.order = DsqOrder::Fifo;
        let e = DsqEntry { pid, vtime: 0 };
        if head {
            self.list.push_front(e);
        } else {
            self.list.push_back(e);
        }
        self.seq += 1;
        Ok(())
    }

    /// Vtime insert: after every task whose key is not later than `vtime`.
    pub fn insert_vtime(&mut self, pid: Pid, vtime: u64) -> Result<(), String> {
        if self.is_builtin() {
            return Err(format!(
                "cannot use vtime ordering for built-in DSQ 0x{:x}",
                self.id
            ));
        }
        if self.order == DsqOrder::Fifo {
            return Err(format!(
                "DSQ 0x{:x} already had FIFO-enqueued tasks",
                self.id
            ));
        }
        self.order = DsqOrder::Vtime;
        let at = self
            .list
            .partition_point(|e| !time_before64(vtime, e.vtime));
        self.list.insert(at, DsqEntry { pid, vtime });
        self.seq += 1;
        Ok(())
    }

    /// Take `pid` out (`task_unlink_from_dsq`); false when it is not queued here.
    pub fn remove(&mut self, pid: Pid) -> bool {
        match self.list.iter().position(|e| e.pid == pid) {
            Some(i) => {
                self.list.remove(i);
                if self.list.is_empty() {
                    // An emptied DSQ may take either kind again (the kernel checks
                    // the kind against what is queued, not what was).
                    self.order = DsqOrder::Unset;
                }
                true
            }
            None => false,
        }
    }

    /// The first task, in consumption order, for which `ok` holds.
    pub fn first_where(&self, mut ok: impl FnMut(Pid) -> bool) -> Option<Pid> {
        self.list.iter().map(|e| e.pid).find(|&p| ok(p))
    }

    /// The head task.
    pub fn head(&self) -> Option<Pid> {
        self.list.front().map(|e| e.pid)
    }
}
