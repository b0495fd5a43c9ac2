//! Software prefetch: asking for an object's cache lines before it is read.
//!
//! **Why a simulator needs it.** A run with tens of thousands of tasks touches, per
//! event, a task, its interpreter state and a runqueue that were last read a
//! scheduling round ago: with 10 000 tasks on 1 024 CPUs that is several MiB of
//! per-task state, beyond a core's L2, and with 100 000 beyond the L3. The
//! kernel has the same problem on a real machine and answers it the same way
//! (`prefetch()`, `prefetchw()` in `include/linux/prefetch.h`, used where a list
//! walk knows its next node early); the simulator knows, before it handles an
//! event, what that event and the next one will read first:
//! * the next event in the queue (`EventQueue::next_hint`): a segment end reads its
//!   CPU's runqueue, a timer its task;
//! * a segment end on a CPU steps the current task's program and, when that task
//!   blocks, the leftmost queued task's (what `pick_next_task_fair` takes unless a
//!   buddy wins): both tasks' `Task` and interpreter state.
//!
//! A prefetch is a hint to the memory system: it changes no value, cannot fault,
//! and a wrong guess only wastes a fetch. So it cannot change a result: every
//! output stays byte-identical (`tools/identity.sh`, and a test runs one scenario
//! with and without it).
//!
//! **Only where it pays.** The hints cost instructions (about 5 % more per event on
//! `bench` medium), so small runs, whose state stays in the caches, lose by them
//! (+5 % time per event at 2 000 tasks). They run only when the run has at least
//! [`PREFETCH_MIN_TASKS`] tasks, the first measured point where they pay on the
//! development host (−2.5 % at 4 000, −7 % at 10 000, −5 % at 100 000; the table is
//! in docs/PERFORMANCE.md, "Issue 19, session 19"). Where it falls on another host
//! depends on its caches; results never do.
//!
//! **Its `unsafe`.** `_mm_prefetch` is an intrinsic behind a `target_feature`
//! (SSE, which every x86-64 CPU has), hence `unsafe` to call; it reads nothing and
//! cannot fault on any address. Other architectures get no prefetch.

/// Runs with fewer tasks than this get no prefetch hints (their per-task state fits
/// the caches, where a hint is only extra instructions).
pub const PREFETCH_MIN_TASKS: usize = 4096;

/// A cache line, in bytes (x86-64 and most AArch64 parts).
const LINE: usize = 64;

/// Ask for the cache lines of `*obj`: one per 64 bytes of its size, from its
/// address (a constant count, so the calls unroll; an object that straddles one
/// more line leaves its tail to the hardware's adjacent-line prefetch).
#[inline(always)]
pub(crate) fn prefetch<T>(obj: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = obj as *const T as *const i8;
        for i in 0..std::mem::size_of::<T>().div_ceil(LINE) {
            // SAFETY: a prefetch has no architectural effect and never faults (any
            // address may be named); the intrinsic is `unsafe` only for its
            // `target_feature(enable = "sse")`, part of the x86-64 baseline.
            #[allow(unsafe_code)]
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(i * LINE),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = obj;
}
