//! The kernel model, laid out like kernel/sched/ (Linux v5.6 baseline).

pub mod pelt;
