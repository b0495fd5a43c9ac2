//! The event queue: a radix heap on time, first in first out within an instant.
//!
//! A discrete-event simulator is a loop around one structure: take the earliest
//! pending event, let it change the state, and queue the events that change
//! schedules. Every event of every run passes through here, so this queue's cost is
//! paid a few hundred thousand to tens of millions of times per run.
//!
//! **The order is the contract.** Events pop by `(time, seq)`: the earliest time
//! first and, at equal times, in the order they were pushed. Many events share an
//! instant (a wakeup IPI sent "now", the reschedule it causes, the ticks of many
//! CPUs on one boundary), and the order among them decides which CPU looks at a
//! runqueue first, hence the run. A heap keyed on time alone would break ties by
//! its own layout, which any unrelated push reshuffles; ties by insertion order make
//! a run a pure function of its inputs, and the order must not depend on the
//! structure that holds the events. This one keeps it exactly: replacing the binary
//! heap that came before changed no output (`tools/identity.sh`).
//!
//! **The structure.** Simulated time never goes back: every push is at or after
//! `now`, the time of the last pop (one before `now` is a recorded fault and fires
//! at `now`). That allows a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990)
//! instead of a comparison heap. A time is eight digits of eight bits. A pending
//! event at `t > now` sits in bucket `(level, digit)`: `level` is the highest digit
//! in which `t` and `now` differ, `digit` is `t`'s value of it. The events at `now`
//! sit in `cur`, a FIFO. A push is an XOR, a leading-zero count, a shift and an
//! append: no comparison with other events, no sifting. A pop takes the front of
//! `cur`; when `cur` is empty, `advance` finds the lowest non-empty bucket by two
//! bit scans (a bitmap of levels, one of buckets per level), makes its smallest time
//! the new `now` and moves its events down, those at the new `now` to `cur` and the
//! rest to buckets of lower levels. An event moves at most once per level; a bucket
//! of the bottom level holds a single time and becomes `cur` whole, and a bucket of
//! one event is popped without moving anything.
//!
//! **Why ties keep their order.** (1) Each bucket is in push order: a push appends
//! the newest event; `advance` spreads the lowest non-empty bucket `B` over `cur`
//! and the levels below `B`'s, all empty at that moment (`B` is the lowest and `cur`
//! is empty), scanning `B` in order, so each receives a subsequence of `B` in order;
//! `purge` removes without reordering. (2) Every event stays in the right bucket when
//! `now` moves: an event above `B` agrees with the old `now` on the digits above its
//! level and differs in it; the new `now`, taken from `B`, agrees with the old one on
//! every digit above `B`'s level, so it differs from the event first at the same
//! place. (3) A lower bucket's events are earlier than a higher one's (both agree
//! with `now` above the higher level; at it the lower event has `now`'s digit, the
//! higher one a larger digit; within a level the smaller digit is earlier). So the
//! lowest bucket holds the earliest time and every event at that time, which enter
//! `cur` in push order, and events pushed at `now` later append behind them: pops
//! come in `(time, seq)` order. A differential property test checks it against a
//! sorted vector over random pushes (many equal times, at `now`, in the past), pops,
//! purges and peeks.
//!
//! **By the numbers** (callgrind, `schedlab bench --only medium`, scales 0.05 and
//! 0.1, docs/PERFORMANCE.md): the whole run went from 2 576 to 2 402 instructions
//! per event (-6.8 %) with the same events. The queue itself, measured in builds
//! that keep `push` and `pop` out of line: 396 -> 212 instructions per event (push
//! 93 -> 54, pop 303 -> 159), 15.1 % -> 8.6 % of the run. The binary heap sifted
//! 32-byte entries through about nine levels with a two-field comparison at each;
//! here `advance` runs once per distinct popped time (322 k times for 341 k pops
//! at scale 0.1) at 133 instructions each, bucket moves included. One bit per level (the
//! textbook radix heap) cost a quarter more in a stand-alone model of the queue; a
//! first version with six-bit digits and no fast paths, 2 424 per event in the
//! bench. The price is memory: 2 048 bucket headers (64 KiB) per queue, and the
//! buckets' vectors. An emptied bucket keeps at most `KEEP` entries of capacity
//! (so the buffers are bounded by 2 048 × `KEEP` entries whatever the run's length;
//! until 2026-11-27 a bottom bucket that became `cur` kept `cur`'s old buffer of any
//! size, and a 1 000-task run grew by 120 KB per simulated millisecond):
//! without that cap the large bench case (1 024 CPUs, whose ticks likely crowd the
//! same buckets) peaked at 37.1 MB instead of 29.7 MB; with it, 30.1 MB, for 2
//! instructions per event on the medium case.

use super::SimTime;
use std::collections::VecDeque;

/// Bits per digit of the radix: a level holds `RADIX` buckets, one per digit value.
const DIGIT: u32 = 8;
const RADIX: usize = 1 << DIGIT;
/// Words of the bitmap of a level's non-empty buckets.
const WORDS: usize = RADIX.div_ceil(64);
/// Levels of digits in a 64-bit time.
const LEVELS: usize = 64 / DIGIT as usize;
/// Room for the buckets.
const SLOTS: usize = LEVELS * RADIX;
/// The largest capacity an emptied bucket keeps.
const KEEP: usize = 256;

/// The pending events of one bucket, in insertion order, and the smallest time among
/// them (`SimTime::MAX` when there are none).
struct Bucket<E> {
    min: SimTime,
    items: Vec<(SimTime, E)>,
}

/// Pending events ordered by `(time, insertion order)`.
pub struct EventQueue<E> {
    /// The pending events at `now`, in insertion order.
    cur: VecDeque<(SimTime, E)>,
    /// `buckets[level * RADIX + digit]`: the pending events whose time differs from
    /// `now` first (from the top) in digit `level`, where its digit is `digit`; each
    /// bucket in insertion order.
    buckets: Box<[Bucket<E>; SLOTS]>,
    /// Bit `digit` of `digits[level]` set when that bucket is not empty.
    digits: [[u64; WORDS]; LEVELS],
    /// Bit `level` set when `digits[level]` is not zero.
    levels: u64,
    len: usize,
    now: SimTime,
    popped: u64,
    max_len: usize,
    fault: Option<String>,
    purged: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

/// The bucket of `time` (> `now`) relative to `now`: the highest digit in which they
/// differ, and `time`'s value of that digit.
#[inline(always)]
fn bucket(time: SimTime, now: SimTime) -> (usize, usize) {
    debug_assert!(time > now);
    let level = (63 - (time ^ now).leading_zeros()) / DIGIT;
    let digit = (time >> (level * DIGIT)) as usize & (RADIX - 1);
    (level as usize & (LEVELS - 1), digit)
}

impl<E> EventQueue<E> {
    pub(crate) fn with_capacity(cap: usize) -> Self {
        EventQueue {
            cur: VecDeque::with_capacity(cap.min(256)),
            buckets: (0..SLOTS)
                .map(|_| Bucket {
                    min: SimTime::MAX,
                    items: Vec::new(),
                })
                .collect::<Vec<_>>()
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!()),
            digits: [[0; WORDS]; LEVELS],
            levels: 0,
            len: 0,
            now: 0,
            popped: 0,
            max_len: 0,
            fault: None,
            purged: 0,
        }
    }

    /// The time of the last popped event.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Largest number of pending events seen.
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedule `ev` at `time`. An event scheduled before `now` is a simulator bug:
    /// it is not a panic but a recorded `fault` (the first one is
    /// kept), and the event fires at `now`, so whoever drives the queue can end the
    /// run with an internal error naming it.
    #[inline]
    pub fn push(&mut self, mut time: SimTime, ev: E) {
        if time < self.now {
            self.record_past(time);
            time = self.now;
        }
        if self.len >= self.max_len {
            self.max_len = self.len + 1;
        }
        self.len += 1;
        if time == self.now {
            self.cur.push_back((time, ev));
        } else {
            let (level, digit) = bucket(time, self.now);
            self.put(level, digit, time, ev);
        }
    }

    #[cold]
    #[inline(never)]
    fn record_past(&mut self, time: SimTime) {
        let now = self.now;
        self.fault
            .get_or_insert_with(|| format!("event scheduled in the past: {time} < {now}"));
    }

    #[inline(always)]
    fn put(&mut self, level: usize, digit: usize, time: SimTime, ev: E) {
        let b = &mut self.buckets[(level * RADIX + digit) & (SLOTS - 1)];
        b.items.push((time, ev));
        b.min = b.min.min(time);
        self.digits[level & (LEVELS - 1)][(digit / 64) & (WORDS - 1)] |= 1 << (digit % 64);
        self.levels |= 1 << level;
    }

    /// Drop every pending event for which `live` is false, keeping the order of the
    /// rest (each keeps its `(time, seq)`). Owners call it with a test of their
    /// generation stamps to purge cancelled events that lie far in the future, which
    /// lazy cancellation would otherwise keep until their time comes (a task spinning
    /// for 10^6 s re-arms its segment end at every tick). Returns how many it dropped.
    pub(crate) fn purge(&mut self, mut live: impl FnMut(&E) -> bool) -> usize {
        let before = self.len;
        self.cur.retain(|(_, e)| live(e));
        let mut len = self.cur.len();
        for level in 0..LEVELS {
            for digit in 0..RADIX {
                let b = &mut self.buckets[level * RADIX + digit];
                if b.items.is_empty() {
                    continue;
                }
                b.items.retain(|(_, e)| live(e));
                b.min = b
                    .items
                    .iter()
                    .map(|&(t, _)| t)
                    .min()
                    .unwrap_or(SimTime::MAX);
                if b.items.is_empty() {
                    self.digits[level][digit / 64] &= !(1 << (digit % 64));
                }
                len += b.items.len();
            }
            if self.digits[level].iter().all(|&w| w == 0) {
                self.levels &= !(1 << level);
            }
        }
        self.len = len;
        let n = before - len;
        self.purged += n as u64;
        n
    }

    /// Events dropped by `purge` so far.
    pub fn purged(&self) -> u64 {
        self.purged
    }

    /// The first fault recorded by [`push`](Self::push), if any.
    pub(crate) fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// The lowest non-empty bucket, which holds the earliest pending time (`levels`
    /// must not be zero).
    #[inline(always)]
    fn lowest(&self) -> (usize, usize) {
        let level = self.levels.trailing_zeros() as usize & (LEVELS - 1);
        let words = &self.digits[level];
        let mut w = 0;
        while w + 1 < WORDS && words[w] == 0 {
            w += 1;
        }
        (level, w * 64 + words[w].trailing_zeros() as usize % 64)
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        if !self.cur.is_empty() {
            Some(self.now)
        } else if self.levels != 0 {
            let (level, digit) = self.lowest();
            Some(self.buckets[(level * RADIX + digit) & (SLOTS - 1)].min)
        } else {
            None
        }
    }

    /// A cheap guess at the next event to pop, with its time, for prefetching
    /// (engine/prefetch.rs): the front of `cur`, else the first event of the lowest
    /// bucket. Whenever its time is the earliest pending time ([`peek_time`]), it
    /// is exactly the event the next [`pop`] returns: the lowest bucket holds every
    /// event at that time, in push order. `None` when the queue is empty.
    ///
    /// [`peek_time`]: Self::peek_time
    /// [`pop`]: Self::pop
    #[inline(always)]
    pub(crate) fn next_hint(&self) -> Option<(SimTime, &E)> {
        if let Some((t, e)) = self.cur.front() {
            return Some((*t, e));
        }
        if self.levels == 0 {
            return None;
        }
        let (level, digit) = self.lowest();
        self.buckets[(level * RADIX + digit) & (SLOTS - 1)]
            .items
            .first()
            .map(|(t, e)| (*t, e))
    }

    /// Remove and return the earliest event, advancing `now` to its time.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(SimTime, E)> {
        let ev = match self.cur.pop_front() {
            Some((_, ev)) => ev,
            None if self.levels == 0 => return None,
            None => self.advance(),
        };
        self.len -= 1;
        self.popped += 1;
        Some((self.now, ev))
    }

    /// `cur` is empty: move `now` to the earliest pending time, the smallest time
    /// in the lowest non-empty bucket, spread that bucket over `cur` and the
    /// buckets below it, in order, and return the first event at the new `now`.
    #[inline(never)]
    fn advance(&mut self) -> E {
        let (level, digit) = self.lowest();
        let i = (level * RADIX + digit) & (SLOTS - 1);
        let m = std::mem::replace(&mut self.buckets[i].min, SimTime::MAX);
        debug_assert!(m > self.now);
        let words = &mut self.digits[level];
        words[digit / 64 % WORDS] &= !(1 << (digit % 64));
        if words.iter().all(|&w| w == 0) {
            self.levels &= !(1 << level);
        }
        self.now = m;
        let items = &mut self.buckets[i].items;
        if items.len() == 1 {
            let (time, ev) = items.pop().expect("one event");
            debug_assert_eq!(time, m);
            return ev;
        }
        if level == 0 {
            // A bottom bucket holds one time, `m`: it becomes `cur` (which is empty),
            // and `cur`'s spare buffer takes its place.
            let at_m = VecDeque::from(std::mem::take(items));
            let spare = std::mem::replace(&mut self.cur, at_m);
            if spare.capacity() <= KEEP {
                self.buckets[i].items = Vec::from(spare);
            }
            return self.cur.pop_front().expect("a non-empty bucket").1;
        }
        let mut v = std::mem::take(items);
        let mut first = None;
        for (time, ev) in v.drain(..) {
            if time == m {
                if first.is_none() {
                    first = Some(ev);
                } else {
                    self.cur.push_back((time, ev));
                }
            } else {
                let (level, digit) = bucket(time, m);
                self.put(level, digit, time, ev);
            }
        }
        if v.capacity() > KEEP {
            // A burst (a thousand CPUs' ticks on one boundary) filled this bucket,
            // which may not be used again for a long while: give the memory back.
            v = Vec::new();
        }
        self.buckets[i].items = v;
        first.expect("the bucket holds its minimum")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(3, 'b'), (3, 'd'), (5, 'a'), (5, 'c')]);
        assert_eq!(q.now(), 5);
    }

    #[test]
    fn past_events_are_a_recorded_fault_not_a_panic() {
        let mut q = EventQueue::default();
        q.push(10, 'a');
        q.pop();
        assert_eq!(q.fault(), None);
        q.push(9, 'b');
        q.push(7, 'c');
        // The first fault is kept; the events fire at `now`, in order.
        assert_eq!(q.fault(), Some("event scheduled in the past: 9 < 10"));
        assert_eq!(q.pop(), Some((10, 'b')));
        assert_eq!(q.pop(), Some((10, 'c')));
    }

    #[test]
    fn purge_keeps_the_order_of_the_rest() {
        let mut q = EventQueue::default();
        for (t, c) in [(5, 'a'), (3, 'x'), (5, 'b'), (9, 'y'), (3, 'c')] {
            q.push(t, c);
        }
        assert_eq!(q.purge(|&c| c != 'x' && c != 'y'), 2);
        assert_eq!((q.len(), q.purged()), (3, 2));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(3, 'c'), (5, 'a'), (5, 'b')]);
    }

    /// A burst at one instant grows `cur`; the bottom bucket that becomes `cur`
    /// next must not keep that buffer, or every bucket ends up owning a burst's
    /// worth of memory and the queue grows with simulated time.
    #[test]
    fn emptied_buckets_keep_no_burst_sized_buffer() {
        let mut q = EventQueue::default();
        for round in 0..64u64 {
            let t = (round + 1) * 1000;
            for i in 0..1000 {
                q.push(t, i);
            }
            q.push(t + 1, 1000);
            q.push(t + 1, 1001);
            let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(popped.len(), 1002);
            assert!(popped.windows(2).all(|w| w[0].0 <= w[1].0));
        }
        let most = q.buckets.iter().map(|b| b.items.capacity()).max();
        assert!(
            most <= Some(KEEP),
            "a bucket kept {most:?} entries of capacity"
        );
    }

    #[test]
    fn extreme_times_keep_their_order() {
        let mut q = EventQueue::default();
        for (t, c) in [
            (u64::MAX, 'z'),
            (1 << 63, 'y'),
            (0, 'a'),
            (u64::MAX, 'Z'),
            (1, 'b'),
        ] {
            q.push(t, c);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let want = [
            (0, 'a'),
            (1, 'b'),
            (1 << 63, 'y'),
            (u64::MAX, 'z'),
            (u64::MAX, 'Z'),
        ];
        assert_eq!(order, want);
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_seq(times in proptest::collection::vec(0u64..50, 1..200)) {
            let mut q = EventQueue::default();
            for (i, t) in times.iter().enumerate() {
                q.push(*t, i);
            }
            let mut last = (0u64, 0usize);
            let mut first = true;
            while let Some((t, i)) = q.pop() {
                prop_assert_eq!(t, times[i]);
                if !first {
                    prop_assert!((t, i) > last);
                }
                first = false;
                last = (t, i);
            }
        }
    }

    /// One step of the differential test.
    #[derive(Clone, Debug)]
    enum Op {
        /// Push at `now + delta` (`delta` 0: at the current instant).
        Push(u64),
        /// Push before `now` (a recorded fault; the event fires at `now`).
        PushPast(u64),
        Pop,
        /// Purge the events whose id is divisible by the divisor.
        Purge(usize),
        PeekTime,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // Many equal times: deltas from a handful of values, zero the likeliest.
            4 => prop_oneof![Just(0u64), Just(1), Just(2), Just(7), Just(8)].prop_map(Op::Push),
            3 => (0u64..64).prop_map(Op::Push),
            2 => (0u32..64).prop_map(|s| Op::Push(1u64 << s)),
            1 => any::<u64>().prop_map(|d| Op::Push(d >> 2)),
            1 => (1u64..20).prop_map(Op::PushPast),
            6 => Just(Op::Pop),
            1 => (2usize..5).prop_map(Op::Purge),
            1 => Just(Op::PeekTime),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The queue against a brute-force oracle: a vector of `(time, seq, id)`
        /// whose minimum is popped.
        #[test]
        fn matches_a_sorted_vector(ops in proptest::collection::vec(op(), 1..400)) {
            let mut q = EventQueue::default();
            let mut oracle: Vec<(u64, u64, usize)> = Vec::new();
            let (mut now, mut seq, mut id, mut first_fault) = (0u64, 0u64, 0usize, None);
            for op in ops {
                match op {
                    Op::Push(d) => {
                        let t = now.saturating_add(d);
                        q.push(t, id);
                        seq += 1;
                        oracle.push((t, seq, id));
                        id += 1;
                    }
                    Op::PushPast(d) => {
                        if now == 0 {
                            continue;
                        }
                        let t = now.saturating_sub(d);
                        first_fault.get_or_insert(format!("event scheduled in the past: {t} < {now}"));
                        q.push(t, id);
                        seq += 1;
                        oracle.push((now, seq, id));
                        id += 1;
                    }
                    Op::Pop => {
                        // The prefetch hint: a pending event, and the next one
                        // whenever its time is the earliest.
                        let hint = q.next_hint().map(|(t, &id)| (t, id));
                        prop_assert_eq!(hint.is_some(), !oracle.is_empty());
                        if let Some((t, id)) = hint {
                            prop_assert!(oracle.iter().any(|&(ot, _, oid)| (ot, oid) == (t, id)));
                        }
                        let want = oracle
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, &(t, s, _))| (t, s))
                            .map(|(i, _)| i)
                            .map(|i| oracle.remove(i));
                        let got = q.pop();
                        prop_assert_eq!(got, want.map(|(t, _, id)| (t, id)));
                        if let (Some(h), Some(g)) = (hint, got) {
                            if h.0 == g.0 {
                                prop_assert_eq!(h, g);
                            }
                        }
                        if let Some((t, _, _)) = want {
                            now = t;
                        }
                    }
                    Op::Purge(k) => {
                        let before = oracle.len();
                        oracle.retain(|&(_, _, id)| id % k != 0);
                        prop_assert_eq!(q.purge(|&id| id % k != 0), before - oracle.len());
                    }
                    Op::PeekTime => {
                        prop_assert_eq!(q.peek_time(), oracle.iter().map(|&(t, _, _)| t).min());
                    }
                }
                prop_assert_eq!(q.len(), oracle.len());
                prop_assert_eq!(q.now(), now);
                prop_assert_eq!(q.fault(), first_fault.as_deref());
            }
            // Drain: the rest comes out in (time, seq) order.
            oracle.sort_unstable();
            let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            let want: Vec<_> = oracle.iter().map(|&(t, _, id)| (t, id)).collect();
            prop_assert_eq!(rest, want);
        }
    }
}
