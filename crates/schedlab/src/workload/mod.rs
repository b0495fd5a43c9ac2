//! Workloads: what the simulated tasks do. Knows nothing of placement policy.
//!
//! [`program`] defines behaviour programs (compute, spin, sleep, channels, futexes,
//! fork/exit/wait, loops, records); [`ipc`] models the kernel objects they talk
//! through (pipes, AF_UNIX and TCP sockets, futexes, mutexes, barriers, condition
//! variables) with the kernel's blocking and wakeup rules; [`dist`] draws amounts from
//! distributions; [`tasks`] reads the generic `tasks` workload from a scenario,
//! [`generators`] the modelled benchmarks, [`rtapp`] rt-app's JSON. Running a program
//! on the kernel model is the simulation loop's work (`crate::sim`); this floor only
//! describes, and imports nothing from `sched`.

pub mod dist;
pub mod generators;
pub mod ipc;
pub mod kthreads;
pub mod program;
pub mod replay;
pub mod rtapp;
pub mod tasks;
