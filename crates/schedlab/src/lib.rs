//! schedlab: a deterministic simulator of how Linux's fair scheduling class places
//! tasks on CPUs. See the crate README and `docs/kernel-mapping.md`.
// Unsafe code is denied everywhere but in sched/ext/bpf.rs, the one module that
// loads a natively compiled sched_ext scheduler and calls across its C ABI,
// experiment/sandbox.rs, the child process it runs in (fork, descriptors, the
// SIGSYS handler), and engine/prefetch.rs's prefetch intrinsic.
#![deny(unsafe_code)]

pub mod abi;
pub mod config;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod files;
pub mod frame;
#[doc(hidden)]
pub mod fuzz;
pub mod input;
pub mod machine;
pub mod metrics;
pub mod report;
pub mod sched;
pub mod sim;
pub mod stats;
pub mod workload;
