//! The event queue: a min-heap on `(time, seq)`.

use super::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so `BinaryHeap` (a max-heap) pops the earliest `(time, seq)`.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Pending events ordered by `(time, insertion order)`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: SimTime,
    popped: u64,
    max_len: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

impl<E> EventQueue<E> {
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(cap),
            seq: 0,
            now: 0,
            popped: 0,
            max_len: 0,
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
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `ev` at `time`. Panics if `time` lies in the past: an event scheduled
    /// before `now` is a simulator bug.
    #[inline]
    pub fn push(&mut self, time: SimTime, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        self.seq += 1;
        if self.heap.len() >= self.max_len {
            self.max_len = self.heap.len() + 1;
        }
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
    }

    /// Drop every pending event `keep` rejects (events known to be dead). Dropped
    /// events are not counted as popped; the order of the others is unchanged.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.heap.retain(|e| keep(&e.ev));
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Remove and return the earliest event, advancing `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = self.heap.pop()?;
        debug_assert!(e.time >= self.now);
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.ev))
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
    #[should_panic(expected = "in the past")]
    fn past_events_are_rejected() {
        let mut q = EventQueue::default();
        q.push(10, ());
        q.pop();
        q.push(9, ());
    }

    #[test]
    fn retain_drops_events_and_keeps_the_order() {
        let mut q = EventQueue::default();
        for (t, v) in [(5, 1), (3, 2), (5, 3), (4, 4), (3, 5)] {
            q.push(t, v);
        }
        q.retain(|v| v % 2 == 1);
        assert_eq!(q.len(), 3);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(3, 5), (5, 1), (5, 3)]);
        assert_eq!(q.popped(), 3);
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
}
