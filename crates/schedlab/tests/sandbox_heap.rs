//! The sandbox's filter must not stop glibc's own malloc. The first time glibc
//! shrinks the heap of a thread's arena (any thread but the main one) it reads
//! `/proc/sys/vm/overcommit_memory` once and caches the answer: an `openat` the
//! filter refuses. A simulation that freed enough memory in its sandboxed child
//! was reported as a scheduler that "tried to openat" (seen once in a full
//! `cargo test` run, `central_fifo_hands_out_every_task_from_cpu_0`). This file
//! is its own test binary, so no earlier test of the process has made glibc
//! cache the answer before the fork.

use schedlab::experiment::sandbox;
use std::path::Path;

#[test]
fn a_simulation_that_frees_its_heap_is_not_taken_for_a_refused_call() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scx/global_fifo.bpf.c");
    let object = schedlab::sched::ext::bpf::compile(&src, &[]).unwrap();
    // In the child: 100 MB in 1 kB chunks of this (non-main) thread's arena, then
    // freed, which trims the arena's heap; twice, as a simulation's buffers do.
    let sum = sandbox::contained("global_fifo.bpf.c", &object, || {
        let mut sum = 0u64;
        for round in 0..2u8 {
            let v: Vec<Box<[u8; 1000]>> = (0..100_000).map(|_| Box::new([round; 1000])).collect();
            sum += v.iter().map(|b| b[999] as u64).sum::<u64>();
        }
        sum
    })
    .unwrap();
    assert_eq!(sum, 100_000);
}
