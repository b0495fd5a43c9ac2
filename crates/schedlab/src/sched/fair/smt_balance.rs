//! Seed 003, `SMT_BALANCE`: "sched: Improve scalability of select_idle_sibling
//! using SMT balance" (Subhra Mazumdar, RFC v3, resent 2018-01-29, v4.15-rc6).
//!
//! **The problem.** v5.6's `select_idle_sibling` may scan the whole LLC twice
//! (`select_idle_core`, then `select_idle_cpu`): O(LLC size) per wakeup, which grows
//! with every new generation of big sockets.
//!
//! **The idea.** Keep, for every scheduling group below the LLC, the number of its
//! CPUs that are busy (`sched_group.utilization`; with SMT + LLC these groups are
//! the cores). At a wakeup, compare the target's group with *one* pseudo-randomly
//! chosen other group, top-down from the LLC to the core: move to the other group
//! if it has more free CPUs (`group_weight − utilization`). Then look for an idle
//! CPU inside the final core only, from a pseudo-random start. O(levels + one
//! core), whatever the LLC size.
//!
//! **State** (all as the patch adds it):
//!
//! | patch | here |
//! |---|---|
//! | `sched_group.utilization` | [`SmtBalance::utilization`], by group id (groups are shared objects, as in the kernel) |
//! | `sched_group.cp_array` (the group's CPUs in order) | the group's span, walked in order |
//! | `sched_domain.sg_array`, `sg_num` (the groups in ring order from the local one) | the domain's group ring `SchedDomain::groups` |
//! | `rq.rotor` (`CPU_PSEUDO_RANDOM(cpu)` = `rotor++`) | `Rq::rotor` (sched/core.rs) |
//! | `rq.curr_util` (0/1, `UTIL_UNINITIALIZED` = −1 at boot) | `Rq::curr_util` |
//!
//! **Maintenance** (`smt_util`): picking the idle task applies busy 1 → 0, putting
//! it applies 0 → 1 ([`Kernel::smt_util`] from `schedule`). The difference is added
//! to the *local* group of every domain from `sd_llc` down to, not including,
//! level 0; then `curr_util` records the new state — but only if the walk ended on
//! a level-0 domain (a quirk kept as posted: without an SMT level `curr_util` stays
//! uninitialised, so every later call counts the previous state as idle).
//!
//! **Wakeup** ([`Kernel::smt_balance`], after the v5.6 target / prev / recent_used
//! checks, replacing `select_idle_core`, `select_idle_cpu` and `select_idle_smt`):
//!
//! ```text
//! smt_balance(p, sd = sd_llc(target), cpu = target):
//!   self = rq(target).curr_util if p is current on this CPU, else 0
//!   for sd from the LLC downward, stopping at level 0:
//!     here  = local group of sd (the group holding cpu)
//!     there = first group ≠ here meeting p.allowed, in ring order from
//!             sg_array[rotor++ % sg_num]
//!     if there and free(there) > free(here)      # `self` discounted on this CPU's side
//!       cpu = first allowed CPU of there, wrapping from cp_array[rotor++ % |there|]
//!       sd  = lowest domain of cpu spanning more than |there|   # the loop then
//!       balanced = true                                          # descends into there
//!   if balanced or target not idle:
//!     select_idle_smt: first idle allowed CPU of cpu's core, wrapping from
//!                      cp_array[rotor++ % |core|] → return it
//!   return target               # the original target, even after moving
//! ```
//!
//! `rotor` is the *waker's* (`smp_processor_id()`), post-incremented at every use,
//! so runs are deterministic.
//!
//! **Port to v5.6** (documented in docs/kernel-mapping.md): the feature acts only on
//! machines with SMT (`sched_smt_present`); without SMT the patch keeps
//! `select_idle_cpu`, which is what v5.6 does anyway. The v5.6 `recent_used_cpu`
//! step (v4.16, after the patch's base) is kept before `smt_balance`. "Idle" inside
//! `smt_balance` is `idle_cpu` (`available_idle_cpu` in v5.6), as in the patch.
//! The idle-core hint is left maintained but unread (the patch deletes it).
//!
//! **Cost model (SIM_).** Each group utilization read is a probe of the group's
//! first CPU by the waker (the counter's cache line lives with that core); each CPU
//! `select_idle_smt` examines is a probe. `FuncCall`s: `smt_balance` (inclusive)
//! and `select_idle_smt` (the core scan).

use crate::engine::Observer;
use crate::machine::CpuMask;
use crate::sched::core::Kernel;
use crate::sched::fair::wakeup::{reason, Probes};
use crate::sched::topology::{SchedTopology, SdId, SgId};
use crate::sched::{Func, Pid, SchedEvent};

/// `UTIL_UNINITIALIZED`: `rq->curr_util` at boot.
pub const UTIL_UNINITIALIZED: i32 = -1;

/// The patch's state: group utilization, per-CPU rotor and `curr_util`.
#[derive(Clone, Debug)]
pub struct SmtBalance {
    /// `sched_group.utilization`, by group id; only the groups of the levels from
    /// the LLC down to level 1 change.
    pub utilization: Vec<i32>,
    /// Per CPU: the local group of each domain from `sd_llc` down to level 1 —
    /// the counters `smt_util` moves — and whether that walk ends on a level-0
    /// domain (else `curr_util` is never recorded).
    util_groups: Vec<(Box<[SgId]>, bool)>,
}

impl SmtBalance {
    pub fn new(topo: &SchedTopology, nr_cpus: usize) -> Self {
        let util_groups = (0..nr_cpus)
            .map(|cpu| {
                let mut gs = Vec::new();
                let mut sd = topo.sd_llc[cpu];
                let mut ends_at_level0 = false;
                while let Some(d) = sd {
                    let dom = &topo.domains[d];
                    if dom.level == 0 {
                        ends_at_level0 = true;
                        break;
                    }
                    gs.push(dom.groups[0]);
                    sd = dom.child;
                }
                (
                    gs.into_boxed_slice(),
                    ends_at_level0 || topo.sd_llc[cpu].is_none(),
                )
            })
            .collect();
        SmtBalance {
            utilization: vec![0; topo.groups.len()],
            util_groups,
        }
    }

    /// The groups whose utilization `cpu`'s busy state feeds.
    pub fn util_groups(&self, cpu: usize) -> &[SgId] {
        &self.util_groups[cpu].0
    }

    /// Does `cpu`'s walk end on a level-0 domain (so its `curr_util` is recorded)?
    pub(crate) fn ends_at_level0(&self, cpu: usize) -> bool {
        self.util_groups[cpu].1
    }
}

/// The `k`-th CPU of `span` in ascending order (`cp_array[k]`).
fn nth_cpu(span: &CpuMask, k: usize) -> usize {
    span.iter().nth(k).expect("index below the group weight")
}

impl<O: Observer<SchedEvent>> Kernel<O> {
    /// `CPU_PSEUDO_RANDOM(cpu)`: `rq(cpu)->rotor++`.
    #[inline]
    fn smt_next_rand(&mut self, cpu: usize) -> u32 {
        let rq = &mut self.rqs[cpu];
        let r = rq.rotor;
        rq.rotor = r.wrapping_add(1);
        r
    }

    /// `smt_util(rq, prev_busy, next_busy)`: called by `schedule` when `cpu` goes
    /// from idle to busy (`0, 1`) or back (`1, 0`).
    pub fn smt_util(&mut self, cpu: usize, prev_busy: i32, next_busy: i32) {
        let s = &mut self.smtb;
        let prev = if self.rqs[cpu].curr_util == UTIL_UNINITIALIZED {
            0
        } else {
            prev_busy
        };
        let util = next_busy - prev;
        let (groups, ends_at_level0) = &s.util_groups[cpu];
        if util != 0 {
            for &g in groups.iter() {
                s.utilization[g] += util;
            }
        }
        // The walk of the patch leaves `sd` on the level-0 domain, or NULL when
        // there is none (then `curr_util` is not recorded); with no change it
        // never leaves `sd_llc`.
        if util == 0 || *ends_at_level0 {
            self.rqs[cpu].curr_util = next_busy;
        }
    }

    /// `smt_should_migrate(here, there, self_util)`: does `there` have more free
    /// CPUs than `here`, discounting the waker's own busy CPU on its side?
    fn smt_should_migrate(&self, here: SgId, there: SgId, self_util: i32, this_cpu: usize) -> bool {
        let (gh, gt) = (&self.topo.groups[here], &self.topo.groups[there]);
        let mut here_util = self.smtb.utilization[here];
        let mut there_util = self.smtb.utilization[there];
        if self_util > 0 {
            if gh.span.test(this_cpu) {
                here_util -= self_util;
            } else if gt.span.test(this_cpu) {
                there_util -= self_util;
            }
        }
        gt.group_weight as i32 - there_util > gh.group_weight as i32 - here_util
    }

    /// `smt_balance(p, sd_llc(target), target)` run on `this_cpu`; see the module
    /// notes. Returns the CPU, the placement reason and the (inclusive) probes.
    pub fn smt_balance(
        &mut self,
        pid: Pid,
        sd_llc: SdId,
        target: usize,
        this_cpu: usize,
    ) -> (usize, &'static str, Probes) {
        let mut pr = Probes::default();
        let cpu_orig = target;
        let self_util = if self.rqs[this_cpu].curr == Some(pid) {
            self.rqs[target].curr_util
        } else {
            0
        };
        let allowed = *self.cpus_allowed(pid);
        let mut balanced = false;
        let mut sd = Some(sd_llc);
        while let Some(d) = sd {
            if self.topo.domains[d].level == 0 {
                break;
            }
            let ring = &self.topo.domains[d].groups;
            let (src, n) = (ring[0], ring.len());
            let start = self.smt_next_rand(this_cpu) as usize % n;
            let ring = &self.topo.domains[d].groups;
            let tgt = (0..n)
                .map(|j| ring[(start + j) % n])
                .find(|&g| g != src && self.topo.groups[g].span.intersects(&allowed));
            // Reading the two utilization counters.
            let first = |k: &Self, g: SgId| k.topo.groups[g].span.first().unwrap_or(0);
            self.probe(&mut pr, this_cpu, first(self, src));
            let mut next = self.topo.domains[d].child;
            if let Some(t) = tgt {
                self.probe(&mut pr, this_cpu, first(self, t));
                if self.smt_should_migrate(src, t, self_util, this_cpu) {
                    let span = self.topo.groups[t].span;
                    let weight = self.topo.groups[t].group_weight;
                    let k = self.smt_next_rand(this_cpu) as usize % weight as usize;
                    let rand_cpu = nth_cpu(&span, k);
                    let cpu = span
                        .iter_wrap(rand_cpu)
                        .find(|&c| allowed.test(c))
                        .expect("the group meets the affinity");
                    let up = self
                        .topo
                        .domains_of(cpu)
                        .find(|&x| weight < self.topo.domains[x].span_weight)
                        .expect("the LLC spans more than one of its groups");
                    next = self.topo.domains[up].child;
                    balanced = true;
                }
            }
            sd = next;
        }
        let mut found = None;
        if let Some(d) = sd {
            if self.topo.domains[d].parent.is_some()
                && (balanced || !self.available_idle_cpu(cpu_orig))
            {
                let core = self.topo.domains[d].span;
                let (c, p) = self.select_idle_smt_rand(pid, &core, this_cpu);
                pr.add(p);
                found = c;
            }
        }
        self.emit_func(Func::SmtBalance, this_cpu, pr);
        match found {
            Some(c) => (c, reason::SMT_BALANCE, pr),
            None => (cpu_orig, reason::AFFINE_FALLBACK, pr),
        }
    }

    /// The patch's `select_idle_smt(p, sg)`: the first idle allowed CPU of the core
    /// `core` (the local group of the level-0 domain's parent, i.e. that domain's
    /// span), wrapping from a rotor-chosen CPU.
    fn select_idle_smt_rand(
        &mut self,
        pid: Pid,
        core: &CpuMask,
        this_cpu: usize,
    ) -> (Option<usize>, Probes) {
        let mut pr = Probes::default();
        let weight = core.weight();
        let k = self.smt_next_rand(this_cpu) as usize % weight;
        let rand_cpu = nth_cpu(core, k);
        let mut found = None;
        for c in core.iter_wrap(rand_cpu) {
            if !self.cpus_allowed(pid).test(c) {
                continue;
            }
            self.probe(&mut pr, this_cpu, c);
            if self.available_idle_cpu(c) {
                found = Some(c);
                break;
            }
        }
        self.emit_func(Func::SelectIdleSmt, this_cpu, pr);
        (found, pr)
    }

    /// `--check`: every tracked group's utilization equals its busy CPUs (on SMT
    /// machines where every CPU's walk reaches level 0, so the counts are exact; not
    /// on hybrid machines whose non-SMT cores have no level 0).
    pub(crate) fn check_smt_utilization(&self) -> Result<(), String> {
        if !self.m.has_smt() || !(0..self.m.nr_cpus()).all(|c| self.smtb.ends_at_level0(c)) {
            return Ok(());
        }
        let mut done = vec![false; self.topo.groups.len()];
        for cpu in 0..self.m.nr_cpus() {
            for &g in self.smtb.util_groups(cpu) {
                if std::mem::replace(&mut done[g], true) {
                    continue;
                }
                let span = &self.topo.groups[g].span;
                let busy = span.iter().filter(|&c| self.rqs[c].curr.is_some()).count() as i32;
                if self.smtb.utilization[g] != busy {
                    return Err(format!(
                        "SMT_BALANCE: group {span} utilization {} but {busy} busy CPUs",
                        self.smtb.utilization[g]
                    ));
                }
            }
        }
        Ok(())
    }
}
