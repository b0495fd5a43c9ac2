//! Workloads: what the simulated tasks do. Knows nothing of placement policy.
//!
//! [`program`] defines behaviour programs (compute, spin, sleep, channels, futexes,
//! fork/exit/wait, loops, records); [`ipc`] models the kernel objects they talk
//! through (pipes, AF_UNIX and TCP sockets, futexes, mutexes, barriers, condition
//! variables) with the kernel's blocking and wakeup rules; [`dist`] draws amounts from
//! distributions; [`exec`] interprets programs on the simulated kernel and runs the
//! event loop; [`tasks`] reads the generic `tasks` workload from a scenario.

pub mod dist;
pub mod exec;
pub mod generators;
pub mod ipc;
pub mod program;
pub mod rtapp;
pub mod tasks;
