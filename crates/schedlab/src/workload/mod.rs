//! Workload models: what the simulated tasks do. The building blocks here (kernel IPC
//! objects, behaviour programs, benchmark generators) know nothing of CPUs, time or
//! placement policies; the simulator drives them and does the blocking and waking.

pub mod ipc;
