//! The CFS timeline: the tree (`sched/fair/timeline.rs`, through `CfsRq`'s own
//! methods) against the sorted vector it replaced (kept below, as it was, as the
//! baseline).
//!
//! One cycle at size n, on a runqueue holding n entities: insert one entity at a
//! pseudo-random vruntime within the queue's spread, read the leftmost
//! (`__pick_first_entity`) and remove it: what a wakeup followed by a pick does, with
//! the queue size kept at n. Sizes 2 and 8 are the common runqueues, 100 and 10 000
//! the crowded ones (100 000 tasks on 8 CPUs is 12 500 per runqueue).
//!
//! ```sh
//! cargo bench -p schedlab --bench timeline              # criterion, wall clock
//! # instructions per cycle: run CYCLES cycles at one size without criterion, e.g.
//! TIMELINE_IMPL=tree TIMELINE_N=8 TIMELINE_CYCLES=1000000 \
//!   valgrind --tool=callgrind target/release/deps/timeline-HASH
//! ```

use criterion::{criterion_group, BenchmarkId, Criterion};
use schedlab::sched::fair::entity::CfsRq;
use std::hint::black_box;

/// `entity_before`'s signed difference (the library's `vdiff`).
fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// The timeline as it was before the tree: a sorted vector in descending order (the
/// leftmost is the last element), binary-search insertion, linear removal, with the
/// `avg_vruntime` bookkeeping.
#[derive(Default)]
struct VecTimeline {
    min_vruntime: u64,
    avg_vruntime: i64,
    avg_load: u64,
    timeline: Vec<(u64, u64, u32, u32)>,
    seq: u64,
}

impl VecTimeline {
    fn timeline_insert(&mut self, pid: u32, vruntime: u64, weight: u64) {
        self.seq += 1;
        let key = (vruntime, self.seq);
        let pos = self.timeline.partition_point(|&(v, s, _, _)| {
            let d = vdiff(v, key.0);
            d > 0 || (d == 0 && s > key.1)
        });
        self.timeline
            .insert(pos, (vruntime, self.seq, pid, weight as u32));
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_add(vdiff(vruntime, self.min_vruntime).wrapping_mul(weight as i64));
        self.avg_load += weight;
    }

    fn timeline_remove(&mut self, pid: u32) {
        if let Some(i) = self.timeline.iter().rposition(|&(_, _, p, _)| p == pid) {
            let (v, _, _, w) = self.timeline.remove(i);
            self.avg_vruntime = self
                .avg_vruntime
                .wrapping_sub(vdiff(v, self.min_vruntime).wrapping_mul(w as i64));
            self.avg_load -= w as u64;
        } else {
            panic!("timeline_remove: pid {pid} not queued");
        }
    }

    fn first(&self) -> Option<u32> {
        self.timeline.last().map(|&(_, _, p, _)| p)
    }
}

/// What a cycle needs of either implementation.
trait Queue {
    fn insert(&mut self, pid: u32, v: u64);
    fn remove(&mut self, pid: u32);
    fn first(&self) -> Option<u32>;
}

impl Queue for VecTimeline {
    fn insert(&mut self, pid: u32, v: u64) {
        self.timeline_insert(pid, v, 1024);
    }
    fn remove(&mut self, pid: u32) {
        self.timeline_remove(pid);
    }
    fn first(&self) -> Option<u32> {
        VecTimeline::first(self)
    }
}

impl Queue for CfsRq {
    fn insert(&mut self, pid: u32, v: u64) {
        self.timeline_insert(pid, v, 1024, v.wrapping_add(3_000_000));
    }
    fn remove(&mut self, pid: u32) {
        self.timeline_remove(pid);
    }
    fn first(&self) -> Option<u32> {
        CfsRq::first(self)
    }
}

/// Deterministic offsets (a 64-bit LCG), precomputed so the cycle times only the
/// queue.
fn offsets(n: usize) -> Vec<u64> {
    let span = 2_000 * n as u64;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..4096)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % span
        })
        .collect()
}

/// A queue of n entities (vruntimes 1000·i around the wrap, inserted in a scrambled
/// order), its next pid, and the vruntime base the cycles insert above.
fn filled<Q: Queue>(mut q: Q, n: usize) -> (Q, u32, u64) {
    let base = (-(1i64 << 20)) as u64;
    for i in 0..n {
        let j = (i * 7919) % n; // a permutation when n is not a multiple of 7919
        q.insert(j as u32, base.wrapping_add(1_000 * j as u64));
    }
    (q, n as u32, base)
}

/// One cycle: insert `pid` at `base + off`, then pick and remove the leftmost, whose
/// pid is handed back for the next cycle's insert.
#[inline(always)]
fn cycle<Q: Queue>(q: &mut Q, pid: u32, v: u64) -> u32 {
    q.insert(pid, v);
    let left = q.first().unwrap();
    q.remove(left);
    left
}

/// `cycles` cycles; the inserted vruntimes advance with the removed ones so the
/// queue keeps its spread.
fn run<Q: Queue>(q: &mut Q, mut pid: u32, mut base: u64, offs: &[u64], cycles: u64) -> u32 {
    for i in 0..cycles {
        let off = offs[(i & 4095) as usize];
        pid = cycle(q, pid, base.wrapping_add(off));
        base = base.wrapping_add(1_000);
    }
    pid
}

/// Time one cycle of a queue of `n` entities built by `empty`.
fn bench_one<Q: Queue>(b: &mut criterion::Bencher, n: usize, offs: &[u64], empty: Q) {
    let (mut q, mut pid, mut base) = filled(empty, n);
    let mut i = 0usize;
    b.iter(|| {
        pid = cycle(&mut q, pid, base.wrapping_add(offs[i & 4095]));
        base = base.wrapping_add(1_000);
        i += 1;
        black_box(pid)
    });
    black_box(q.first());
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("timeline insert+first+remove");
    for n in [2usize, 8, 100, 10_000] {
        let offs = offsets(n);
        g.bench_with_input(BenchmarkId::new("vec", n), &n, |b, &n| {
            bench_one(b, n, &offs, VecTimeline::default())
        });
        g.bench_with_input(BenchmarkId::new("tree", n), &n, |b, &n| {
            bench_one(b, n, &offs, CfsRq::default())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    // Fixed-count mode for callgrind: TIMELINE_IMPL=vec|tree TIMELINE_N TIMELINE_CYCLES.
    if let Ok(cycles) = std::env::var("TIMELINE_CYCLES") {
        let cycles: u64 = cycles.parse().expect("TIMELINE_CYCLES: a count");
        let n: usize = std::env::var("TIMELINE_N")
            .map(|s| s.parse().expect("TIMELINE_N: a size"))
            .unwrap_or(8);
        let offs = offsets(n);
        let last = match std::env::var("TIMELINE_IMPL").as_deref() {
            Ok("vec") => {
                let (mut q, pid, base) = filled(VecTimeline::default(), n);
                run(&mut q, pid, base, &offs, cycles)
            }
            _ => {
                let (mut q, pid, base) = filled(CfsRq::default(), n);
                run(&mut q, pid, base, &offs, cycles)
            }
        };
        println!("{last}");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
