//! `llc-vtime`: one weighted-vtime queue per last-level cache, a reference
//! scheduler of schedlab's own in the sched_ext style (issue 21).
//!
//! `simple`'s single queue lets any CPU take any task, so on a multi-socket machine
//! half the wakeups cross sockets. Here every LLC has its own DSQ and its own
//! virtual clock: a waking task that finds no idle CPU through the built-in search
//! queues on the LLC of the CPU that search returned, ordered by its vtime (with at
//! most one slice of sleep credit against that LLC's clock); a CPU consumes its own
//! LLC's queue first and only then steals, from the other LLCs in index order
//! starting after its own. A task's vtime advances by the slice it used × 100 /
//! weight, as in `simple`. The queue of LLC `i` is user DSQ `i`.

use super::simple::{charged_vtime, credited_vtime, select_cpu_idle_direct, QUEUE_OPS};
use super::{dsq::time_before64, Kf, ScxOps, SCX_SLICE_DFL};
use crate::abi::Pid;

/// The `llc-vtime` scheduler.
#[derive(Debug)]
pub struct LlcVtime {
    /// The LLC of each CPU.
    llc_of: Vec<usize>,
    /// Each LLC's virtual clock (the highest vtime a task started with there).
    vtime_now: Vec<u64>,
}

impl LlcVtime {
    /// For a machine whose CPU `i` is in LLC `llc_of[i]` (LLCs numbered from 0).
    pub fn new(llc_of: Vec<usize>) -> Self {
        let n = llc_of.iter().max().map_or(1, |m| m + 1);
        LlcVtime {
            llc_of,
            vtime_now: vec![0; n],
        }
    }

    fn nr_llcs(&self) -> usize {
        self.vtime_now.len()
    }
}

impl ScxOps for LlcVtime {
    fn name(&self) -> &str {
        "llc-vtime"
    }

    fn implemented(&self) -> u32 {
        QUEUE_OPS
    }

    fn init(&mut self, kf: &mut Kf) -> Result<(), i32> {
        for l in 0..self.nr_llcs() {
            kf.create_dsq(l as u64)?;
        }
        Ok(())
    }

    fn select_cpu(&mut self, kf: &mut Kf, p: Pid, prev_cpu: i32, wake_flags: u64) -> i32 {
        select_cpu_idle_direct(kf, p, prev_cpu, wake_flags)
    }

    fn enqueue(&mut self, kf: &mut Kf, p: Pid, enq_flags: u64) {
        let llc = self.llc_of[kf.task(p).cpu];
        let v = credited_vtime(kf.task(p).dsq_vtime, self.vtime_now[llc]);
        kf.dispatch_vtime(p, llc as u64, SCX_SLICE_DFL, v, enq_flags);
    }

    fn dispatch(&mut self, kf: &mut Kf, cpu: i32, _prev: Option<Pid>) {
        let own = self.llc_of[cpu as usize];
        let n = self.nr_llcs();
        for i in 0..n {
            if kf.consume(((own + i) % n) as u64) {
                return;
            }
        }
    }

    fn running(&mut self, kf: &mut Kf, p: Pid) {
        let t = kf.task(p);
        let llc = self.llc_of[t.cpu];
        if time_before64(self.vtime_now[llc], t.dsq_vtime) {
            self.vtime_now[llc] = t.dsq_vtime;
        }
    }

    fn stopping(&mut self, kf: &mut Kf, p: Pid, _runnable: bool) {
        let v = charged_vtime(kf.task(p));
        kf.set_dsq_vtime(p, v);
    }

    fn enable(&mut self, kf: &mut Kf, p: Pid) {
        let llc = self.llc_of[kf.task(p).cpu];
        kf.set_dsq_vtime(p, self.vtime_now[llc]);
    }
}
