//! Time: rt-app's periodic timers, timestamps, and the metrics programs record.
//!
//! A program reads the clock (`clock_gettime`, cost `gtod`) into registers and
//! records differences into latency histograms: that is how the modelled benchmarks
//! measure wakeup latency and run times. rt-app's `timer` event sleeps to the next
//! period boundary (absolute, or relative to when it was reached) and logs its
//! lateness and slack, as rt-app's own log does.

use super::{ProgState, Sim};
use crate::engine::Observer;
use crate::sched::SchedEvent;
use crate::workload::program::{Op, NO_METRIC};

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the time and metric ops. Returns true when the step is over.
    pub(super) fn exec_timers(&mut self, cpu: usize, op: Op, st: &mut ProgState) -> bool {
        let inst = st.instance;
        match op {
            Op::Timer {
                t,
                period_us,
                offset_us,
                absolute,
                metrics,
            } => {
                let lat = (metrics != NO_METRIC).then_some(metrics as usize);
                if st.phase == 2 {
                    // Woken at (or after) the expiry: the lateness rt-app logs.
                    if let Some(m) = lat {
                        let l = self.k.now().saturating_sub(st.timer_exp);
                        self.metrics.hists[m].record(l);
                    }
                    next!(st)
                }
                pay!(self, cpu, op, st);
                if self.k.kernel_work_pending(cpu) {
                    // Finish the pending kernel work (a wakeup just issued) first.
                    self.k.run_work(cpu, 0, 0, &mut self.q);
                    return true;
                }
                let i = t.resolve(inst);
                let now = self.k.now();
                let exp = self.timers[i].unwrap_or(st.t_start + offset_us as u64 * 1000)
                    + period_us as u64 * 1000;
                self.timers[i] = Some(exp);
                if let Some(m) = lat {
                    self.metrics.hists[m + 1].record(exp.saturating_sub(now));
                }
                if now < exp {
                    st.timer_exp = exp;
                    st.phase = 2;
                    self.k.sleep_current(cpu, exp - now, &mut self.q);
                    return true;
                }
                if !absolute {
                    self.timers[i] = Some(now);
                }
                if let Some(m) = lat {
                    self.metrics.hists[m].record(0);
                }
                next!(st)
            }
            Op::Mark { slot } => {
                pay!(self, cpu, op, st);
                st.marks[slot as usize] = self.k.now();
                next!(st)
            }
            Op::Record { metric, slot } => {
                pay!(self, cpu, op, st);
                let v = self.k.now() - st.marks[slot as usize];
                self.metrics.hists[metric].record(v);
                next!(st)
            }
            Op::Count { metric } => {
                self.metrics.hists[metric].record(1);
                next!(st)
            }
            Op::Elapsed { slot } => {
                pay!(self, cpu, op, st);
                let r = &mut st.marks[slot as usize];
                *r = self.k.now().saturating_sub(*r);
                next!(st)
            }
            Op::SetEpoch { slot } => {
                st.t_start = st.marks[slot as usize];
                next!(st)
            }
            Op::RecordReg { metric, slot, div } => {
                let v = st.marks[slot as usize] / div.max(1);
                self.metrics.hists[metric].record(v);
                next!(st)
            }
            _ => unreachable!("not a time and metric op: {op:?}"),
        }
    }
}
