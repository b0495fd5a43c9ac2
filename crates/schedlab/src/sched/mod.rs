//! The simulated kernel scheduler: the parts of `kernel/sched/` that decide where a
//! fair-class task runs. This first piece, [`topology`], builds the scheduling-domain
//! hierarchy (`struct sched_domain`, `struct sched_group` and the per-CPU shortcut
//! pointers) that every placement and balancing decision walks; the wakeup path,
//! the slow path and the load balancer are layered on top of it.

pub mod topology;
