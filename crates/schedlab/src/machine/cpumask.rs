//! `CpuMask`: the kernel's `struct cpumask`, as a fixed-size bitset.
//!
//! The kernel represents sets of CPUs (a domain's span, a task's `cpus_allowed`, the
//! nohz idle mask) as bitmaps of `nr_cpumask_bits` bits and walks them with
//! `for_each_cpu` (ascending) and `for_each_cpu_wrap` (ascending from a start CPU,
//! wrapping round). Placement heuristics depend on that walk order, so this type
//! reproduces it exactly: [`CpuMask::iter`] is `for_each_cpu` and
//! [`CpuMask::iter_wrap`] is `for_each_cpu_wrap`.
//!
//! The size is fixed at [`MAX_CPUS`] bits so a mask is `Copy`, never allocates and
//! fits the hot paths (the idle-CPU scan copies one per wakeup, as the kernel's
//! per-CPU `select_idle_mask` scratch does).

use std::fmt;

/// Largest CPU count a simulated machine may have (the kernel's `NR_CPUS`).
pub const MAX_CPUS: usize = 1024;
const WORDS: usize = MAX_CPUS / 64;

/// A set of CPU numbers `0..MAX_CPUS`.
///
/// `hi` is an upper bound on the number of words that may hold a set bit, so walks
/// over a small machine's masks stop after its few words instead of all sixteen. It
/// takes no part in equality.
#[derive(Clone, Copy)]
pub struct CpuMask {
    bits: [u64; WORDS],
    hi: u16,
}

/// `distribute_cpu_mask_prev`, the per-CPU cursor of `cpumask_any_and_distribute`
/// (lib/cpumask.c, v5.9+): a CPU's picks go round the intersection from the CPU after
/// its previous pick, wrapping, and the cursor moves to the pick (every cursor starts
/// at 0, so a CPU's first pick skips CPU 0). There is one per machine: every caller
/// on a CPU (an affinity change's destination, sched_ext's "any CPU" picks) moves the
/// same cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistributeCursor {
    prev: Vec<usize>,
}

impl DistributeCursor {
    /// Every cursor of an `nr_cpus`-CPU machine at CPU 0 (boot).
    pub fn new(nr_cpus: usize) -> Self {
        DistributeCursor {
            prev: vec![0; nr_cpus],
        }
    }

    /// `cpumask_any_and_distribute(a, b)` called on `this_cpu`: `None` when the
    /// masks do not intersect (the cursor stays).
    pub fn any_and(&mut self, a: &CpuMask, b: &CpuMask, this_cpu: usize) -> Option<usize> {
        let n = self.prev.len();
        let start = (self.prev[this_cpu] + 1) % n.max(1);
        let next = a.and(b).iter_wrap(start).next()?;
        self.prev[this_cpu] = next;
        Some(next)
    }
}

impl PartialEq for CpuMask {
    fn eq(&self, o: &Self) -> bool {
        self.bits == o.bits
    }
}

impl Eq for CpuMask {}

impl std::hash::Hash for CpuMask {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.bits.hash(h);
    }
}

impl Default for CpuMask {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuMask {
    /// The empty mask (`cpumask_clear`).
    pub const fn new() -> Self {
        CpuMask {
            bits: [0; WORDS],
            hi: 0,
        }
    }

    /// CPUs `0..n` (`cpumask_setall` on an `n`-CPU machine).
    pub(crate) fn first_n(n: usize) -> Self {
        Self::from_range(0, n)
    }

    /// CPUs `lo..hi`.
    pub(crate) fn from_range(lo: usize, hi: usize) -> Self {
        let mut m = Self::new();
        for c in lo..hi {
            m.set(c);
        }
        m
    }

    /// The bitmap as the kernel lays it out (`cpumask_bits`): CPU `c` is bit
    /// `c % 64` of word `c / 64`.
    pub fn to_words(&self) -> [u64; WORDS] {
        self.bits
    }

    /// A mask from a kernel-layout bitmap.
    pub fn from_words(bits: [u64; WORDS]) -> Self {
        let hi = bits.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1) as u16;
        CpuMask { bits, hi }
    }

    /// A mask holding exactly `cpu` (`cpumask_of`).
    pub fn of(cpu: usize) -> Self {
        let mut m = Self::new();
        m.set(cpu);
        m
    }

    #[inline]
    pub fn set(&mut self, cpu: usize) {
        debug_assert!(cpu < MAX_CPUS);
        self.bits[cpu >> 6] |= 1u64 << (cpu & 63);
        self.hi = self.hi.max((cpu >> 6) as u16 + 1);
    }

    #[inline]
    pub fn clear(&mut self, cpu: usize) {
        debug_assert!(cpu < MAX_CPUS);
        self.bits[cpu >> 6] &= !(1u64 << (cpu & 63));
    }

    /// `cpumask_test_cpu`.
    #[inline]
    pub fn test(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu >> 6] & (1u64 << (cpu & 63)) != 0
    }

    /// Number of 64-bit words that may hold set bits (CPUs `64 × w ..`).
    #[inline]
    pub(crate) fn nr_words(&self) -> usize {
        self.hi as usize
    }

    /// Word `w` of the bitmap: bit `i` is CPU `64 × w + i` (0 past the used words).
    #[inline]
    pub fn word(&self, w: usize) -> u64 {
        if w < self.hi as usize {
            self.bits[w]
        } else {
            0
        }
    }

    /// `cpumask_weight`.
    /// The words that may hold set bits.
    #[inline]
    fn used(&self) -> &[u64] {
        &self.bits[..self.hi as usize]
    }

    pub fn weight(&self) -> usize {
        self.used().iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.used().iter().all(|&w| w == 0)
    }

    /// `cpumask_first`: the lowest CPU, if any.
    pub fn first(&self) -> Option<usize> {
        self.next_from(0)
    }

    /// The lowest CPU `>= from`, if any (`cpumask_next(from - 1)`).
    #[inline]
    pub(crate) fn next_from(&self, from: usize) -> Option<usize> {
        let hi = self.hi as usize;
        let mut w = from >> 6;
        if w >= hi {
            return None;
        }
        let mut word = self.bits[w] & (!0u64 << (from & 63));
        loop {
            if word != 0 {
                return Some((w << 6) + word.trailing_zeros() as usize);
            }
            w += 1;
            if w >= hi {
                return None;
            }
            word = self.bits[w];
        }
    }

    /// The mask whose first `hi` words are `f` of this mask's and `other`'s, the rest
    /// zero. The set operations build their result this way, over the words that can
    /// hold a bit, rather than copying `self` whole: the copy of 130 bytes was a call
    /// to `memcpy` at every wakeup's idle scan.
    #[inline(always)]
    fn combine(&self, other: &CpuMask, hi: u16, f: impl Fn(u64, u64) -> u64) -> CpuMask {
        let mut m = CpuMask {
            bits: [0; WORDS],
            hi,
        };
        for (w, (a, b)) in m.bits[..hi as usize]
            .iter_mut()
            .zip(self.bits.iter().zip(other.bits.iter()))
        {
            *w = f(*a, *b);
        }
        m
    }

    /// `cpumask_and`.
    #[inline]
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        self.combine(other, self.hi.min(other.hi), |a, b| a & b)
    }

    /// `cpumask_or`.
    #[inline]
    pub fn or(&self, other: &CpuMask) -> CpuMask {
        self.combine(other, self.hi.max(other.hi), |a, b| a | b)
    }

    /// `cpumask_andnot`: CPUs of `self` not in `other`.
    #[inline]
    pub(crate) fn andnot(&self, other: &CpuMask) -> CpuMask {
        self.combine(other, self.hi, |a, b| a & !b)
    }

    /// `cpumask_intersects`.
    pub(crate) fn intersects(&self, other: &CpuMask) -> bool {
        let n = self.hi.min(other.hi) as usize;
        self.bits[..n]
            .iter()
            .zip(other.bits[..n].iter())
            .any(|(a, b)| a & b != 0)
    }

    /// `cpumask_subset`: every CPU of `self` is in `other`.
    pub(crate) fn is_subset(&self, other: &CpuMask) -> bool {
        self.used()
            .iter()
            .zip(other.bits.iter())
            .all(|(a, b)| a & !b == 0)
    }

    /// `for_each_cpu`: ascending order.
    #[inline]
    pub fn iter(&self) -> CpuMaskIter<'_> {
        CpuMaskIter::new(self.used(), 0, MAX_CPUS, None)
    }

    /// `for_each_cpu_wrap(cpu, mask, start)`: ascending from `start` (included when
    /// set), then wrapping round to the CPUs below `start`.
    #[inline]
    pub fn iter_wrap(&self, start: usize) -> CpuMaskIter<'_> {
        let start = if start >= MAX_CPUS { 0 } else { start };
        let wrap = if start == 0 { None } else { Some(start) };
        CpuMaskIter::new(self.used(), start, MAX_CPUS, wrap)
    }

    /// Parse a kernel cpulist (`"0-3,8,10-11"`), as printed in sysfs.
    pub fn parse_cpulist(s: &str) -> Result<CpuMask, String> {
        let mut m = CpuMask::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(m);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_cpu(a)?, parse_cpu(b)?),
                None => {
                    let c = parse_cpu(part)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(format!("bad CPU range `{part}`"));
            }
            for c in lo..=hi {
                m.set(c);
            }
        }
        Ok(m)
    }
}

fn parse_cpu(s: &str) -> Result<usize, String> {
    let c: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("bad CPU number `{}`", s.trim()))?;
    if c >= MAX_CPUS {
        return Err(format!("CPU {c} exceeds the maximum of {MAX_CPUS} CPUs"));
    }
    Ok(c)
}

impl FromIterator<usize> for CpuMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut m = CpuMask::new();
        for c in iter {
            m.set(c);
        }
        m
    }
}

/// Iterator for [`CpuMask::iter`] and [`CpuMask::iter_wrap`].
///
/// It walks a snapshot of the mask a word at a time: `cur` holds the not yet
/// visited bits of word `w` within the current pass `[lo, end)`, and each step
/// takes its lowest bit. A wrapping walk makes a second pass over `[0, start)`.
pub struct CpuMaskIter<'a> {
    /// The words that may hold set bits.
    words: &'a [u64],
    /// Index of the word whose remaining bits are in `cur`.
    w: usize,
    /// Remaining bits of word `w` inside the current pass.
    cur: u64,
    /// Exclusive upper CPU bound of the current pass.
    end: usize,
    /// `Some(start)`: a second pass over `0..start` is still to come.
    wrap: Option<usize>,
}

impl<'a> CpuMaskIter<'a> {
    #[inline]
    fn new(words: &'a [u64], lo: usize, end: usize, wrap: Option<usize>) -> Self {
        let w = lo >> 6;
        let mut it = CpuMaskIter {
            words,
            w,
            cur: 0,
            end,
            wrap,
        };
        it.cur = it.load(w) & (!0u64 << (lo & 63));
        it
    }

    /// Word `w` of the mask, cut to the current pass's upper bound.
    #[inline]
    fn load(&self, w: usize) -> u64 {
        let Some(&x) = self.words.get(w) else {
            return 0;
        };
        let base = w << 6;
        if base + 64 <= self.end {
            x
        } else if base >= self.end {
            0
        } else {
            x & ((1u64 << (self.end - base)) - 1)
        }
    }
}

impl CpuMaskIter<'_> {
    /// Move to the next non-empty word, starting the wrapped pass over `0..start`
    /// when the current pass is exhausted. Returns false at the end of the walk.
    /// Kept out of line so that the common step of [`Iterator::next`] (take the
    /// lowest remaining bit of the current word) inlines into the scans.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        loop {
            self.w += 1;
            if self.w < self.words.len() && self.w << 6 < self.end {
                self.cur = self.load(self.w);
            } else if let Some(start) = self.wrap.take() {
                self.end = start;
                self.w = 0;
                self.cur = self.load(0);
            } else {
                return false;
            }
            if self.cur != 0 {
                return true;
            }
        }
    }
}

impl Iterator for CpuMaskIter<'_> {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.cur == 0 && !self.refill() {
            return None;
        }
        let c = (self.w << 6) + self.cur.trailing_zeros() as usize;
        self.cur &= self.cur - 1;
        Some(c)
    }
}

/// Prints the kernel cpulist form, e.g. `0-3,8`.
impl fmt::Display for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuMask({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_order_matches_for_each_cpu_wrap() {
        let m = CpuMask::parse_cpulist("1,3,5-7,130").unwrap();
        assert_eq!(m.iter_wrap(5).collect::<Vec<_>>(), vec![5, 6, 7, 130, 1, 3]);
        assert_eq!(m.iter_wrap(4).collect::<Vec<_>>(), vec![5, 6, 7, 130, 1, 3]);
        assert_eq!(m.iter_wrap(0).collect::<Vec<_>>(), vec![1, 3, 5, 6, 7, 130]);
        assert_eq!(
            m.iter_wrap(131).collect::<Vec<_>>(),
            vec![1, 3, 5, 6, 7, 130]
        );
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![1, 3, 5, 6, 7, 130]);
    }

    #[test]
    fn cpulist_round_trip_and_errors() {
        let m = CpuMask::parse_cpulist("0-3,8,10-11").unwrap();
        assert_eq!(m.to_string(), "0-3,8,10-11");
        assert_eq!(m.weight(), 7);
        assert!(CpuMask::parse_cpulist("3-1").is_err());
        assert!(CpuMask::parse_cpulist("x").is_err());
        assert!(CpuMask::parse_cpulist("5000").is_err());
    }

    proptest::proptest! {
        #[test]
        fn matches_a_naive_set(a in proptest::collection::btree_set(0usize..MAX_CPUS, 0..40),
                               b in proptest::collection::btree_set(0usize..MAX_CPUS, 0..40),
                               start in 0usize..MAX_CPUS) {
            let ma: CpuMask = a.iter().copied().collect();
            let mb: CpuMask = b.iter().copied().collect();
            let v = |m: CpuMask| m.iter().collect::<Vec<_>>();
            proptest::prop_assert_eq!(v(ma.and(&mb)), a.intersection(&b).copied().collect::<Vec<_>>());
            proptest::prop_assert_eq!(v(ma.or(&mb)), a.union(&b).copied().collect::<Vec<_>>());
            proptest::prop_assert_eq!(v(ma.andnot(&mb)), a.difference(&b).copied().collect::<Vec<_>>());
            // Whole-mask equality too: no bit is left set beyond the bound `hi`.
            let set = |s: std::collections::BTreeSet<&usize>| s.into_iter().copied().collect::<CpuMask>();
            proptest::prop_assert!(ma.and(&mb) == set(a.intersection(&b).collect()));
            proptest::prop_assert!(ma.or(&mb) == set(a.union(&b).collect()));
            proptest::prop_assert!(ma.andnot(&mb) == set(a.difference(&b).collect()));
            proptest::prop_assert_eq!(ma.intersects(&mb), a.intersection(&b).next().is_some());
            proptest::prop_assert_eq!(ma.is_subset(&mb), a.is_subset(&b));
            proptest::prop_assert_eq!(ma.weight(), a.len());
            proptest::prop_assert_eq!(ma == mb, a == b);
            let mut cleared = ma;
            for &c in &a { cleared.clear(c); }
            proptest::prop_assert!(cleared.is_empty() && cleared == CpuMask::new());
            let wrap: Vec<usize> = a.range(start..).chain(a.range(..start)).copied().collect();
            proptest::prop_assert_eq!(ma.iter_wrap(start).collect::<Vec<_>>(), wrap);
        }
    }

    #[test]
    fn set_algebra() {
        let a = CpuMask::from_range(0, 8);
        let b = CpuMask::from_range(4, 12);
        assert_eq!(a.and(&b), CpuMask::from_range(4, 8));
        assert_eq!(a.or(&b), CpuMask::from_range(0, 12));
        assert_eq!(a.andnot(&b), CpuMask::from_range(0, 4));
        assert!(CpuMask::from_range(1, 3).is_subset(&a));
        assert!(!b.is_subset(&a));
        assert!(a.intersects(&b));
        assert_eq!(a.first(), Some(0));
        assert_eq!(CpuMask::new().first(), None);
    }
}
