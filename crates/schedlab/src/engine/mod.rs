//! The discrete-event engine: simulated time, the event queue, seeded random
//! streams, and the observer hook. It knows nothing of scheduling.
//!
//! **Time** is a `u64` count of nanoseconds ([`SimTime`]), the unit of the kernel's
//! `rq_clock`. **Events** are ordered by `(time, insertion sequence)`: two events at
//! the same instant fire in the order they were scheduled, so a run is a pure
//! function of its inputs. The queue is a radix heap on time with FIFO buckets
//! ([`queue`]: monotone time makes it possible, and it keeps that order exactly)
//! and allocates per event only while its buckets grow. **Cancellation** does not
//! search the queue:
//! whoever owns a re-armable event (a CPU's "current segment ends" event, a task's
//! sleep timer) keeps a generation counter, stamps it into the event, and bumps it to
//! cancel; a popped event whose stamp is stale is dropped by its owner. This is how
//! `hrtimer_cancel` behaves from the caller's point of view, at O(1). Cancelled
//! events far in the future would pile up, so the owner purges them when the
//! queue has grown well past what can be live (`EventQueue::purge`); the purge
//! keeps every live event's `(time, seq)`, so it changes no order and no result.
//!
//! **Limits.** Every time a user can write is bounded by [`MAX_TIME_NS`] (a
//! million seconds, 11.6 days) when it is parsed, and every duration a
//! distribution draws is clamped to it. A bound far below `u64::MAX` is what keeps
//! `now + duration + slack`, `work << WORK_SHIFT` and the sums of them exact:
//! nothing in a run can wrap, so an event can never land "in the past". Should one
//! still do so (a simulator bug), the queue records the fault instead of panicking
//! and the run ends with an internal error (see `EventQueue::fault`).
//!
//! **Prefetch hints** ([`prefetch`]) let a run of thousands of tasks ask for the
//! next objects' cache lines before it reads them; a hint changes no value, so no
//! result depends on it.
//!
//! **Randomness** comes from named streams ([`RngStreams`]): each stream is a PCG
//! generator seeded from `(seed, replication, stream name)` by a fixed hash, so a
//! workload draws the same numbers whatever the scheduler does, and turning on a
//! policy feature that consumes randomness cannot shift the workload's draws.

pub mod prefetch;
pub mod queue;
pub mod rng;
pub mod wire;

pub use queue::EventQueue;
pub use rng::{RngStream, RngStreams};

/// Simulated time in nanoseconds since the start of the run.
pub type SimTime = u64;

pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// The longest time a scenario may write anywhere (a run's duration, a sleep, a
/// task's start, a period, an idle state's exit latency): 10^6 s. Parsers refuse
/// more with the file, line and key (docs/limits.md).
pub const MAX_TIME_NS: SimTime = 1_000_000 * NSEC_PER_SEC;

/// `value` × `unit_ns` as nanoseconds, or `None` when the product exceeds
/// [`MAX_TIME_NS`] (or would not fit in a `u64` at all). Every unit conversion of a
/// parsed time goes through here.
pub(crate) fn checked_ns(value: u64, unit_ns: u64) -> Option<SimTime> {
    value.checked_mul(unit_ns).filter(|&ns| ns <= MAX_TIME_NS)
}

/// A count or signal in a 32-bit trace field: the value, or `u32::MAX` past it
/// (saturating, never wrapped).
pub fn sat32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// `checked_ns` for a fractional value (`1.5` ms): `None` when it is not finite,
/// negative or above the limit. Rounds to the nearest nanosecond.
pub fn checked_ns_f64(value: f64, unit_ns: u64) -> Option<SimTime> {
    let ns = (value * unit_ns as f64).round();
    (ns.is_finite() && ns >= 0.0 && ns <= MAX_TIME_NS as f64).then_some(ns as u64)
}

/// Why a time was refused, for error messages: "exceeds the limit of 1000000 s".
pub(crate) fn time_limit_text() -> String {
    format!(
        "exceeds the limit of {} s (see docs/limits.md)",
        MAX_TIME_NS / NSEC_PER_SEC
    )
}

/// The most tasks one run may hold, those a scenario starts and those its programs
/// fork together. A simulator bound, not the kernel's `pid_max` (32 768 by default,
/// at most 4 194 304): a simulated task costs under 1 KB (a doubling fork chain
/// stopped at this bound with 225 MB peak RSS), so it keeps a run-away fork chain
/// well under a gigabyte. Past it, `fork` is a program error naming the limit
/// (docs/limits.md).
pub const MAX_TASKS: usize = 1 << 18;

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
