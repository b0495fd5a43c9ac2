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
    fault: Option<String>,
    purged: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

impl<E> EventQueue<E> {
    pub(crate) fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(cap),
            seq: 0,
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
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `ev` at `time`. An event scheduled before `now` is a simulator bug:
    /// it is not a panic but a recorded `fault` (the first one is
    /// kept), and the event fires at `now`, so whoever drives the queue can end the
    /// run with an internal error naming it.
    #[inline]
    pub fn push(&mut self, mut time: SimTime, ev: E) {
        if time < self.now {
            self.fault.get_or_insert_with(|| {
                format!("event scheduled in the past: {time} < {}", self.now)
            });
            time = self.now;
        }
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

    /// Drop every pending event for which `live` is false, keeping the order of the
    /// rest (each keeps its `(time, seq)`). Owners call it with a test of their
    /// generation stamps to purge cancelled events that lie far in the future, which
    /// lazy cancellation would otherwise keep until their time comes (a task spinning
    /// for 10^6 s re-arms its segment end at every tick). Returns how many it dropped.
    pub(crate) fn purge(&mut self, mut live: impl FnMut(&E) -> bool) -> usize {
        let before = self.heap.len();
        self.heap.retain(|e| live(&e.ev));
        let n = before - self.heap.len();
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

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Remove and return the earliest event, advancing `now` to its time.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(SimTime, E)> {
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
