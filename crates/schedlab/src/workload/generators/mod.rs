//! Benchmark workload generators: the structure of real benchmark tools rebuilt as
//! behaviour programs (`spec/workloads.md` §3).
//!
//! A generator reads the tool's options from `[workload]` (long option names, dashes
//! turned into underscores) and emits a [`WorkloadSpec`](crate::workload::program::WorkloadSpec)
//! whose programs follow the tool's own code path: who creates which file
//! descriptors, who forks whom, who waits for whom, and where the tool takes its
//! timestamps. The tool's printed result is rebuilt from the recorded metric by
//! [`hackbench::tool_output`].
//!
//! [`hackbench`] covers `hackbench`, `perf bench sched messaging` (the same program)
//! and `perf bench sched pipe`.

pub mod hackbench;
