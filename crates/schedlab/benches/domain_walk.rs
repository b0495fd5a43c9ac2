//! The memory cost of `select_task_rq_fair`'s domain walk on this host (issue 20,
//! item 4: calibrating the cost table's `domain_visit`).
//!
//! v5.6 walks the waker's domains bottom up (`for_each_domain`): at each level it
//! loads `sd->flags` (SD_LOAD_BALANCE, SD_WAKE_AFFINE, the `sd_flag` of the kind) from
//! the head of `struct sched_domain` and, for a want_affine wakeup, tests prev in
//! `sched_domain_span(sd)`, the bitmap at the struct's end, then follows `sd->parent`.
//! A level costs one or two cache lines, each dependent on the previous level's
//! `parent` load. Seed 002 removes most of the walk; whether that shows depends on
//! where those lines are when a wakeup comes: in L1 (the waker just walked), in the
//! last-level cache, or in memory.
//!
//! The benchmark builds domain chains laid out as v5.6 lays out `struct sched_domain`
//! on x86-64 with `CONFIG_SCHEDSTATS` (as distribution kernels build): the pointers and
//! balance fields first with `flags` at byte 56, the runtime fields and 144 bytes of
//! schedstat counters, then the span from byte 288; each level its own allocation (the
//! kernel allocates one per CPU and level with `kzalloc_node`). It walks as a
//! want_affine wakeup does whose prev shares only the top level: every level is
//! examined, its flags and its span read. Three states:
//!
//! - `l1`: the same chain walked again and again;
//! - `llc`: 4 096 chains walked in turn, 5 MiB of domains, past this host's L2 but
//!   held by a large LLC (what a wakeup sees when other CPUs' work ran in between);
//! - `memory`: every line of every chain flushed (`clflush`) before the timed pass
//!   (x86-64 only).
//!
//! It prints the median over rounds of ns per level visited. Run with
//! `cargo bench -p schedlab --bench domain_walk` (release build, ≈ 10 s); set
//! `WALK_LEVELS` (default 4: SMT, MC, DIE, NUMA) to change the depth.

// Each level is boxed on purpose: its own allocation, as in the kernel, not one
// contiguous array whose neighbouring levels share lines and prefetches.
#![allow(clippy::vec_box)]

use std::hint::black_box;
use std::time::Instant;

const SD_LOAD_BALANCE: u32 = 0x0001;
const SD_BALANCE_WAKE: u32 = 0x0010;
const SD_WAKE_AFFINE: u32 = 0x0020;

/// `struct sched_domain` as v5.6 lays it out on x86-64 with CONFIG_SCHEDSTATS: only
/// the fields the walk reads are named; the rest is padding of the same size.
#[repr(C, align(64))]
struct Domain {
    parent: *const Domain,
    child: *const Domain,
    groups: usize,
    min_interval: u64,
    max_interval: u64,
    busy_factor: u32,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    nohz_idle: u32,
    /// Byte 56: in the first cache line, with `parent`.
    flags: u32,
    level: u32,
    /// last_balance ... avg_scan_cost (40 B), the schedstat counters (144 B), name,
    /// rcu, shared, span_weight (32 B with padding).
    _middle: [u8; 224],
    /// `sched_domain_span(sd)` at byte 288: 256 CPUs' worth.
    span: [u64; 4],
}

fn chain(levels: usize, prev: usize) -> Vec<Box<Domain>> {
    let mut v: Vec<Box<Domain>> = (0..levels)
        .map(|l| {
            let mut span = [0u64; 4];
            // Each level spans more CPUs; prev is only in the top one, so a
            // want_affine walk examines every level.
            let width = 2usize << (2 * l).min(7);
            for c in 0..width.min(256) {
                span[c / 64] |= 1 << (c % 64);
            }
            if l + 1 == levels {
                span[prev / 64] |= 1 << (prev % 64);
            }
            Box::new(Domain {
                parent: std::ptr::null(),
                child: std::ptr::null(),
                groups: 0,
                min_interval: 1,
                max_interval: 4,
                busy_factor: 32,
                imbalance_pct: 117,
                cache_nice_tries: 1,
                nohz_idle: 0,
                flags: SD_LOAD_BALANCE | SD_BALANCE_WAKE | SD_WAKE_AFFINE,
                level: l as u32,
                _middle: [0; 224],
                span,
            })
        })
        .collect();
    for l in 0..levels.saturating_sub(1) {
        let p: *const Domain = &*v[l + 1];
        v[l].parent = p;
    }
    v
}

/// The want_affine walk of `select_task_rq_fair` (v5.6): levels examined, and the
/// affine domain's level (or `u32::MAX`).
#[inline(never)]
fn walk(base: *const Domain, prev: usize) -> (u32, u32) {
    let mut sd = base;
    let mut visited = 0;
    let mut affine = u32::MAX;
    // SAFETY: `base` heads a chain built by `chain`, alive for the call; parents are
    // valid or null.
    while let Some(d) = unsafe { sd.as_ref() } {
        visited += 1;
        if d.flags & SD_LOAD_BALANCE == 0 {
            break;
        }
        if d.flags & SD_WAKE_AFFINE != 0 && d.span[prev / 64] & (1 << (prev % 64)) != 0 {
            affine = d.level;
            break;
        }
        sd = d.parent;
    }
    (visited, affine)
}

/// Flush every cache line of every domain of `chains` (x86-64; elsewhere a no-op,
/// and the `memory` figure is not printed).
fn flush(chains: &[Vec<Box<Domain>>]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        for c in chains {
            for d in c {
                let p = &**d as *const Domain as *const u8;
                for off in (0..std::mem::size_of::<Domain>()).step_by(64) {
                    // SAFETY: the address lies inside a live allocation.
                    unsafe { core::arch::x86_64::_mm_clflush(p.add(off)) };
                }
            }
        }
        // SAFETY: a fence has no memory-safety preconditions.
        unsafe { core::arch::x86_64::_mm_mfence() };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = chains;
        false
    }
}

/// ns per level visited for `n` walks, the i-th over chain `i mod chains.len()`. Each
/// walk's start depends on the previous walk's result (through a zero the compiler
/// cannot see), so the CPU cannot overlap them: a wakeup walks one chain, and its
/// cost is the latency of that chain's dependent loads.
fn pass(chains: &[Vec<Box<Domain>>], n: usize, prev: usize) -> f64 {
    assert!(chains.len().is_power_of_two());
    let mask = chains.len() - 1;
    let zero = black_box(0usize);
    let t0 = Instant::now();
    let mut visits = 0u64;
    let mut dep = 0usize;
    for i in 0..n {
        let c = &chains[(i + dep) & mask];
        let (v, a) = walk(&*c[0], prev);
        visits += v as u64;
        dep = zero * (v as usize + a as usize);
    }
    t0.elapsed().as_nanos() as f64 / visits as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let levels: usize = std::env::var("WALK_LEVELS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
        .clamp(1, 8);
    let prev = 200;
    let rounds = 31;
    println!(
        "domain walk, {levels} levels, {} B per domain, want_affine, prev in the top level",
        std::mem::size_of::<Domain>()
    );

    // l1: one chain, walked 4 096 times per pass.
    let one: Vec<Vec<Box<Domain>>> = vec![chain(levels, prev)];
    let l1: Vec<f64> = (0..rounds).map(|_| pass(&one, 4096, prev)).collect();
    println!("l1      {:6.2} ns per level", median(l1));

    // llc: 4 096 chains in turn.
    let many: Vec<Vec<Box<Domain>>> = (0..4096).map(|_| chain(levels, prev)).collect();
    let llc: Vec<f64> = (0..rounds).map(|_| pass(&many, many.len(), prev)).collect();
    println!(
        "llc     {:6.2} ns per level ({} MiB of domains)",
        median(llc),
        (many.len() * levels * std::mem::size_of::<Domain>()) >> 20
    );

    // memory: flushed before each pass (256 chains, so the flush stays cheap).
    let some = &many[..256];
    let mut mem = Vec::new();
    for _ in 0..rounds {
        if !flush(some) {
            break;
        }
        mem.push(pass(some, some.len(), prev));
    }
    if !mem.is_empty() {
        println!(
            "memory  {:6.2} ns per level (clflush before the pass)",
            median(mem)
        );
    }
}
