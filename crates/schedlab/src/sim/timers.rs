//! Time: rt-app's periodic timers, timestamps, and the metrics programs record.
//!
//! A program reads the clock (`clock_gettime`, cost `gtod`) into registers and
//! records differences into latency histograms: that is how the modelled benchmarks
//! measure wakeup latency and run times. rt-app's `timer` event sleeps to the next
//! period boundary (absolute, or relative to when it was reached) and logs its
//! lateness and slack, as rt-app's own log does.

use super::RtaStats;
use super::{ProgState, Sim};
use crate::abi::Pid;
use crate::engine::sat32;
use crate::engine::Observer;
use crate::sched::{Marker, SchedEvent};
use crate::workload::dist::Dist;
use crate::workload::program::{LoopCount, LoopStat, MarkerOp, Op, NO_METRIC};

impl<O: Observer<SchedEvent>> Sim<O> {
    /// Execute (part of) one of the time and metric ops. Returns true when the step is over.
    pub(super) fn exec_timers(&mut self, cpu: usize, pid: Pid, op: Op, st: &mut ProgState) -> bool {
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
                    let l = self.k.now().saturating_sub(st.timer_exp);
                    if let Some(m) = lat {
                        self.metrics.hists[m].record(l);
                    }
                    st.rta.wu_lat_us += l / 1000;
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
                // rt-app's slack: a signed difference, floored to µs.
                let slack = (exp as i64 - now as i64).div_euclid(1000);
                st.rta.slack_us = slack;
                st.rta.slack_sum_us += slack;
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
                st.rta.wu_lat_us = 0;
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
            Op::LoopStat(s) => {
                let now = self.k.now();
                let r = &mut st.rta;
                match s {
                    LoopStat::Begin => *r = RtaStats::default(),
                    LoopStat::RunBegin => r.run_start = now,
                    LoopStat::RunEnd => r.run_us += (now - r.run_start) / 1000,
                    LoopStat::End => r.t_end = now,
                }
                next!(st)
            }
            Op::Marker(m) => {
                pay!(self, cpu, op, st);
                let marker = self.marker(m, st);
                self.k.emit(SchedEvent::Marker { cpu, pid, marker });
                next!(st)
            }
            _ => unreachable!("not a time and metric op: {op:?}"),
        }
    }

    /// The marker `m` completes to in state `st`.
    fn marker(&self, m: MarkerOp, st: &ProgState) -> Marker {
        match m {
            MarkerOp::Main(e) => Marker::Main(e),
            MarkerOp::ClockRef { slot } => Marker::ClockRef {
                t_zero_us: st.marks[slot as usize] / 1000,
            },
            MarkerOp::Task { end } => Marker::Task { end },
            MarkerOp::Loop {
                end,
                phase,
                task_loop,
                phase_loop,
            } => Marker::Loop {
                end,
                thread_loop: self.loops_done(st, task_loop as usize),
                phase,
                phase_loop: self.loops_done(st, phase_loop as usize),
            },
            MarkerOp::Event { id, kind, desc } => Marker::Event { id, kind, desc },
            MarkerOp::Stats {
                c_period,
                c_run,
                cumulative_slack,
            } => {
                let r = &st.rta;
                let slack = if cumulative_slack {
                    r.slack_sum_us
                } else {
                    r.slack_us
                };
                Marker::Stats {
                    period: sat32(r.t_end.saturating_sub(st.marks[0]) / 1000),
                    run: sat32(r.run_us),
                    wu_lat: sat32(r.wu_lat_us),
                    slack: slack.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
                    c_period,
                    c_run,
                }
            }
        }
    }

    /// The iterations done so far of the open loop whose `Loop` op is at `at` (0
    /// when it is not open): its count less the iterations left.
    fn loops_done(&self, st: &ProgState, at: usize) -> u32 {
        let Some(&(_, left)) = st.loops.iter().find(|(pc, _)| *pc == at) else {
            return 0;
        };
        let total = match self.spec.programs[st.prog].ops.get(at) {
            Some(Op::Loop {
                count: LoopCount::Times(Dist::Const(n)),
                ..
            }) => *n,
            _ => u64::MAX,
        };
        // rt-app's counters are C ints.
        (total.saturating_sub(left) % (1 << 31)) as u32
    }
}
