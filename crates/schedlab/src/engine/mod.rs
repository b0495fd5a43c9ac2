//! The discrete-event engine: simulated time, the event queue, seeded random
//! streams, and the observer hook. It knows nothing of scheduling.
//!
//! **Time** is a `u64` count of nanoseconds ([`SimTime`]), the unit of the kernel's
//! `rq_clock`. **Events** are ordered by `(time, insertion sequence)`: two events at
//! the same instant fire in the order they were scheduled, so a run is a pure
//! function of its inputs. The queue is a binary heap over a pre-reserved vector and
//! never allocates per event once warm. **Cancellation** does not search the heap:
//! whoever owns a re-armable event (a CPU's "current segment ends" event, a task's
//! sleep timer) keeps a generation counter, stamps it into the event, and bumps it to
//! cancel; a popped event whose stamp is stale is dropped by its owner. This is how
//! `hrtimer_cancel` behaves from the caller's point of view, at O(1).
//!
//! **Randomness** comes from named streams ([`RngStreams`]): each stream is a PCG
//! generator seeded from `(seed, replication, stream name)` by a fixed hash, so a
//! workload draws the same numbers whatever the scheduler does, and turning on a
//! policy feature that consumes randomness cannot shift the workload's draws.

pub mod queue;
pub mod rng;

pub use queue::EventQueue;
pub use rng::{RngStream, RngStreams};

/// Simulated time in nanoseconds since the start of the run.
pub type SimTime = u64;

pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Receives what a simulated component reports. `E` is the component's event type
/// (the scheduler reports `sched::SchedEvent`); metrics and trace writers implement it.
pub trait Observer<E> {
    fn observe(&mut self, now: SimTime, ev: &E);
}

/// An observer that ignores everything.
pub struct NullObserver;

impl<E> Observer<E> for NullObserver {
    #[inline]
    fn observe(&mut self, _now: SimTime, _ev: &E) {}
}
