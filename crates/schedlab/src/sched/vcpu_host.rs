//! The host under an emulated machine: its CPUs time-slice the guest's busy vCPUs
//! (SIM_VCPU_HOST, docs/kernel-mapping.md).
//!
//! **The concept.** A TCG guest's vCPUs are threads of the QEMU process, scheduled
//! by the host's kernel on the host's CPUs. With more vCPUs busy than the host has
//! CPUs, some vCPUs are not running at any moment. A descheduled vCPU executes no
//! guest instruction: its task makes no progress, and no interrupt reaches it (its
//! timer tick, a reschedule or wakeup IPI, an hrtimer) until the host runs it again,
//! when they arrive at once. The guest's clock runs on meanwhile (TCG gives the guest
//! no steal time), so the guest kernel charges the stalled time to whatever task
//! was running: its slice is spent while it does nothing, and a task on a stalled
//! vCPU waits for the host before its preemption tick or its wakee's IPI is seen.
//! A halted (idle) vCPU takes no host CPU.
//!
//! `vcpu_throughput` ([`crate::machine::MachineParts::vcpu_throughput`]) gives the
//! *average* work rate per busy vCPU with k of them busy; this module adds *when*
//! the work happens. The host is modelled as `cpus` CPUs and one round-robin: the
//! first `cpus` vCPUs of the order are on a host CPU. The one that has run longest
//! yields after `slice_ns` to the first waiting one, which goes back to the end
//! later.
//!
//! **A halted vCPU needs a host CPU to take an interrupt.** An IPI, a timer or a
//! wakeup for a halted vCPU wakes its thread on the host. With a host CPU free it
//! runs at once (the measured `ipi_latency_ns` is that path: the calibration's
//! ping-pong has one vCPU busy on a 2-CPU host). With every host CPU taken, the
//! host does not preempt a thread inside its slice for the waking one (EEVDF with
//! `RUN_TO_PARITY`: the running entity keeps the CPU until its slice request is
//! done): the vCPU waits, first in line after the vCPUs woken before it, for the
//! next end of a slice or a vCPU that halts, and its interrupt waits with it. Its
//! thread was woken when the IPI was sent, `ipi_latency_ns` before the IPI arrives
//! in the model: a host CPU handed to a waiting vCPU in between goes to it instead. Only then does the guest
//! see the interrupt: the wakee's switch-in, and the idle exit before it, move later
//! in guest time, and meanwhile the CPU holds a queued task (`idle_cpu()` false for
//! the wakeups and forks that look at it). Measured in the real guests (oracle
//! bundles, `sched_wakeup` on an idle CPU to the wakee's switch-in): p50 37-462 µs,
//! p90 0.13-4.0 ms, where a free host CPU gives `ipi_latency_ns`. A woken vCPU that
//! becomes busy stays on the host; one the interrupt leaves with nothing to run
//! halts again and gives its host CPU to the first waiting vCPU.
//!
//! A vCPU on a host CPU works at `vcpu_throughput(k) · k / min(k, cpus)`, capped at
//! full speed, so the average over a round is the measured rate.
//!
//! What it leaves out: the host's own tasks and QEMU's other threads (in the measured
//! rates only), the host scheduler's weights, lag and migrations, and the time a
//! woken vCPU spends taking an interrupt that leaves it idle (none).

use crate::engine::SimTime;
use crate::machine::VcpuHost;

use super::Event;

/// What the host did to the vCPUs at one change: the one it took off a host CPU
/// and the one it put on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostSwitch {
    pub stall: Option<usize>,
    pub resume: Option<usize>,
}

/// What [`HostRr::wake`] did with a halted vCPU's interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostWake {
    /// It runs now (and the host took `stall` off to make room, if any).
    Runs(HostSwitch),
    /// It waits for a host CPU, its interrupt held.
    Waits,
}

/// The host's round-robin of busy vCPUs.
#[derive(Clone, Debug)]
pub(crate) struct HostRr {
    cpus: usize,
    slice: u64,
    /// Busy vCPUs in host order: the first `cpus` are on a host CPU.
    order: Vec<u32>,
    /// When each vCPU got its host CPU (meaningful while it has one).
    since: Vec<SimTime>,
    /// Per vCPU: busy and descheduled by the host.
    stalled: Vec<bool>,
    /// Per vCPU: the interrupts that reached it while stalled, delivered when it runs.
    held: Vec<Vec<Event>>,
    /// Per vCPU: halted when an interrupt woke it on the host, and not busy since
    /// (on a host CPU, or waiting for one, to take that interrupt).
    waking: Vec<bool>,
    /// Stamp of the armed [`Event::HostSlice`]: a newer arming cancels it.
    pub gen: u32,
}

impl HostRr {
    pub fn new(h: VcpuHost, nr_cpus: usize) -> Self {
        HostRr {
            cpus: h.cpus as usize,
            slice: h.slice_ns,
            order: Vec::with_capacity(nr_cpus),
            since: vec![0; nr_cpus],
            stalled: vec![false; nr_cpus],
            held: vec![Vec::new(); nr_cpus],
            waking: vec![false; nr_cpus],
            gen: 0,
        }
    }

    /// `cpu` is busy and waits for a host CPU.
    #[inline]
    pub fn stalled(&self, cpu: usize) -> bool {
        self.stalled[cpu]
    }

    /// Keep `ev`, an interrupt for stalled `cpu`, until the host runs it.
    pub fn hold(&mut self, cpu: usize, ev: Event) {
        self.held[cpu].push(ev);
    }

    /// The interrupts held for `cpu`, in arrival order.
    pub fn take_held(&mut self, cpu: usize) -> Vec<Event> {
        std::mem::take(&mut self.held[cpu])
    }

    /// The work-rate factor (1024 scale) of a vCPU on a host CPU, `busy` vCPUs busy
    /// and `avg` their measured average rate.
    pub fn on_host_rate(&self, busy: usize, avg: u64) -> u64 {
        let running = busy.min(self.cpus).max(1) as u64;
        (avg * busy.max(1) as u64 / running).min(1024)
    }

    fn on_host(&self) -> usize {
        self.order.len().min(self.cpus)
    }

    /// Index in `order` of the vCPU on a host CPU that has had it longest.
    fn longest(&self) -> Option<usize> {
        (0..self.on_host()).min_by_key(|&i| (self.since[self.order[i] as usize], i))
    }

    /// `cpu` was woken on the host by an interrupt and is not busy yet.
    #[inline]
    pub fn waking(&self, cpu: usize) -> bool {
        self.waking[cpu]
    }

    /// An interrupt reaches halted `cpu` (not on the host) at `now`; its thread was
    /// kicked at `kicked` (the IPI's send; a timer's expiry). With a host CPU free
    /// it runs at once. A host CPU given since the kick to a waiting vCPU (a slice
    /// end, a vCPU that halted) would have gone to it, first in line as a woken
    /// thread: it takes that one's place, which waits first in line again.
    /// Otherwise it waits for the next end of a slice, first in line after the
    /// vCPUs woken before it: [`HostWake::Waits`], and the caller holds the
    /// interrupt ([`hold`](Self::hold)) and re-arms the slice.
    pub fn wake(&mut self, cpu: usize, kicked: SimTime, now: SimTime) -> HostWake {
        debug_assert!(!self.order.contains(&(cpu as u32)), "a halted vCPU");
        self.waking[cpu] = true;
        if self.order.len() < self.cpus {
            self.since[cpu] = now;
            self.order.push(cpu as u32);
            return HostWake::Runs(HostSwitch::default());
        }
        let woken_before = self.order[self.cpus..]
            .iter()
            .take_while(|&&c| self.waking[c as usize])
            .count();
        let taken = (0..self.cpus)
            .filter(|&i| {
                let c = self.order[i] as usize;
                !self.waking[c] && self.since[c] > kicked
            })
            .min_by_key(|&i| self.since[self.order[i] as usize]);
        if let (Some(i), 0) = (taken, woken_before) {
            let victim = self.order[i] as usize;
            self.since[cpu] = self.since[victim];
            self.order[i] = cpu as u32;
            self.order.insert(self.cpus, victim as u32);
            self.stalled[victim] = true;
            return HostWake::Runs(HostSwitch {
                stall: Some(victim),
                resume: None,
            });
        }
        self.order.insert(self.cpus + woken_before, cpu as u32);
        self.stalled[cpu] = true;
        HostWake::Waits
    }

    /// `cpu` left its idle state and runs a task. A vCPU woken by an interrupt
    /// already has its place (on a host CPU, since the interrupt reached it);
    /// otherwise it takes a free host CPU or preempts the vCPU that has run longest.
    pub fn busy(&mut self, cpu: usize, now: SimTime) -> HostSwitch {
        if std::mem::take(&mut self.waking[cpu]) {
            return HostSwitch::default();
        }
        self.since[cpu] = now;
        if self.order.len() < self.cpus {
            self.order.push(cpu as u32);
            return HostSwitch::default();
        }
        let v = self.longest().expect("a full host runs a vCPU");
        let victim = self.order[v] as usize;
        self.order[v] = cpu as u32;
        self.order.insert(self.cpus, victim as u32);
        self.stalled[victim] = true;
        HostSwitch {
            stall: Some(victim),
            resume: None,
        }
    }

    /// `cpu` went idle (or a woken vCPU halts again): it leaves the host, and the
    /// first waiting vCPU takes its host CPU.
    pub fn idle(&mut self, cpu: usize, now: SimTime) -> HostSwitch {
        self.waking[cpu] = false;
        let Some(i) = self.order.iter().position(|&c| c as usize == cpu) else {
            return HostSwitch::default();
        };
        self.order.remove(i);
        self.stalled[cpu] = false;
        if i >= self.cpus || self.order.len() < self.cpus {
            return HostSwitch::default();
        }
        let w = self.order[self.cpus - 1] as usize;
        self.stalled[w] = false;
        self.since[w] = now;
        HostSwitch {
            stall: None,
            resume: Some(w),
        }
    }

    /// When the vCPU that has run longest yields its host CPU, if any vCPU waits.
    pub fn next_rotation(&self) -> Option<SimTime> {
        if self.order.len() <= self.cpus {
            return None;
        }
        self.longest()
            .map(|i| self.since[self.order[i] as usize] + self.slice)
    }

    /// The slice of the vCPU that has run longest is over: it goes to the end of
    /// the line and the first waiting vCPU runs.
    pub fn rotate(&mut self, now: SimTime) -> HostSwitch {
        if self.order.len() <= self.cpus {
            return HostSwitch::default();
        }
        let v = self.longest().expect("a full host runs a vCPU");
        let victim = self.order.remove(v);
        let w = self.order[self.cpus - 1] as usize;
        self.order.push(victim);
        self.stalled[victim as usize] = true;
        self.stalled[w] = false;
        self.since[w] = now;
        HostSwitch {
            stall: Some(victim as usize),
            resume: Some(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cpus` host CPUs, a 3 µs slice, 4 vCPUs.
    fn rr(cpus: u32) -> HostRr {
        rr_of(cpus, 4)
    }

    /// `cpus` host CPUs, a 3 µs slice, `n` vCPUs.
    fn rr_of(cpus: u32, n: usize) -> HostRr {
        HostRr::new(
            VcpuHost {
                cpus,
                slice_ns: 3_000,
            },
            n,
        )
    }

    fn sw(stall: Option<usize>, resume: Option<usize>) -> HostSwitch {
        HostSwitch { stall, resume }
    }

    #[test]
    fn a_host_with_room_stalls_nobody() {
        let mut h = rr(2);
        assert_eq!(h.busy(0, 0), sw(None, None));
        assert_eq!(h.busy(1, 10), sw(None, None));
        assert_eq!(h.next_rotation(), None);
        assert!(!h.stalled(0) && !h.stalled(1));
        assert_eq!(h.idle(0, 20), sw(None, None));
        assert_eq!(
            h.idle(3, 20),
            sw(None, None),
            "an idle vCPU was never on the host"
        );
    }

    /// Three busy vCPUs on two host CPUs, slice 3 µs: vCPU 2 wakes at 100 and takes
    /// vCPU 0's host CPU (0 has run since 0, 1 since 50); at 3 050 vCPU 1's slice
    /// ends and 0 runs; at 3 100 vCPU 2's ends and 1 runs.
    #[test]
    fn the_longest_running_yields_to_a_waking_vcpu_then_the_slice_goes_round() {
        let mut h = rr(2);
        h.busy(0, 0);
        h.busy(1, 50);
        assert_eq!(h.busy(2, 100), sw(Some(0), None));
        assert!(h.stalled(0) && !h.stalled(1) && !h.stalled(2));
        // vCPU 1 has had its host CPU since 50: it yields at 3 050, to vCPU 0.
        assert_eq!(h.next_rotation(), Some(3_050));
        assert_eq!(h.rotate(3_050), sw(Some(1), Some(0)));
        // vCPU 2 (since 100) next, to vCPU 1.
        assert_eq!(h.next_rotation(), Some(3_100));
        assert_eq!(h.rotate(3_100), sw(Some(2), Some(1)));
        assert_eq!(h.next_rotation(), Some(6_050));
        // vCPU 0 goes idle: the first waiting (2) takes its host CPU.
        assert_eq!(h.idle(0, 4_000), sw(None, Some(2)));
        assert_eq!(h.next_rotation(), None);
        assert!(!h.stalled(2) && !h.stalled(1));
        // vCPU 3 wakes and stalls vCPU 1; a waiting vCPU that goes idle frees no host CPU.
        h.busy(3, 4_100);
        assert!(
            h.stalled(1),
            "vCPU 1, on since 3 100, is the longest running"
        );
        assert_eq!(h.idle(1, 4_200), sw(None, None));
    }

    /// A halted vCPU with a host CPU free takes it at once, keeps it when it turns
    /// busy, and is no longer "waking" then.
    #[test]
    fn a_halted_vcpu_takes_a_free_host_cpu_at_once() {
        let mut h = rr(2);
        h.busy(0, 0);
        assert_eq!(h.wake(1, 100, 100), HostWake::Runs(sw(None, None)));
        assert!(h.waking(1) && !h.stalled(1));
        assert_eq!(h.busy(1, 150), sw(None, None), "its place is kept");
        assert!(!h.waking(1));
        assert_eq!(h.next_rotation(), None);
    }

    /// Two busy vCPUs fill the host (vCPU 0 since 0, 1 since 50; slice 3 µs): an
    /// interrupt for halted vCPU 2 at 100 (kicked at 100) waits for the next end of a
    /// slice, 3 000, when vCPU 0 yields to it. If the interrupt leaves it idle, it
    /// halts at once and the host CPU goes to vCPU 0, first in line.
    #[test]
    fn on_a_full_host_a_woken_vcpu_waits_for_the_next_slice_end() {
        let mut h = rr(2);
        h.busy(0, 0);
        h.busy(1, 50);
        assert_eq!(h.wake(2, 100, 100), HostWake::Waits);
        assert!(h.stalled(2) && h.waking(2));
        assert_eq!(h.next_rotation(), Some(3_000));
        assert_eq!(h.rotate(3_000), sw(Some(0), Some(2)));
        assert!(!h.stalled(2) && h.waking(2) && h.stalled(0));
        assert_eq!(h.idle(2, 3_000), sw(None, Some(0)));
        assert!(!h.waking(2) && !h.stalled(0));
        assert_eq!(h.next_rotation(), None);
    }

    /// A host CPU given to a waiting vCPU after the kick would have gone to the
    /// woken one: vCPU 0 waits (preempted at 100 by vCPU 2), vCPU 1 halts at 500 and
    /// vCPU 0 gets its host CPU; an IPI sent at 450 that reaches halted vCPU 3 at
    /// 546 takes that host CPU from vCPU 0, which is first in line again. One sent
    /// at 550, after vCPU 0 got it, waits.
    #[test]
    fn a_host_cpu_given_away_since_the_kick_goes_to_the_woken_vcpu() {
        let mut h = rr_of(2, 6);
        h.busy(0, 0);
        h.busy(1, 50);
        assert_eq!(h.busy(2, 100), sw(Some(0), None));
        assert_eq!(h.idle(1, 500), sw(None, Some(0)));
        let mut late = h.clone();
        assert_eq!(h.wake(3, 450, 546), HostWake::Runs(sw(Some(0), None)));
        assert!(h.stalled(0) && !h.stalled(3) && h.waking(3));
        // vCPU 3 holds the host CPU since 500, when vCPU 0 had got it.
        assert_eq!(
            h.next_rotation(),
            Some(3_100),
            "vCPU 2, since 100, yields first"
        );
        assert_eq!(h.rotate(3_100), sw(Some(2), Some(0)));
        assert_eq!(late.wake(3, 550, 646), HostWake::Waits);
        assert!(late.stalled(3) && !late.stalled(0));
    }

    /// Woken vCPUs wait in the order they were woken, ahead of the busy vCPUs the
    /// host descheduled.
    #[test]
    fn woken_vcpus_wait_in_order_ahead_of_descheduled_ones() {
        let mut h = rr_of(2, 6);
        h.busy(0, 0);
        h.busy(1, 0);
        assert_eq!(h.busy(2, 0), sw(Some(0), None));
        assert_eq!(h.wake(3, 10, 10), HostWake::Waits);
        assert_eq!(h.wake(4, 20, 20), HostWake::Waits);
        // vCPU 2 (index 0) and 1 have run since 0: vCPU 2 yields first, to 3.
        assert_eq!(h.rotate(3_000), sw(Some(2), Some(3)));
        assert_eq!(h.rotate(3_000), sw(Some(1), Some(4)));
        // Then the descheduled vCPU 0, and 2 and 1 after it.
        assert_eq!(h.idle(3, 3_000), sw(None, Some(0)));
        assert_eq!(h.idle(4, 3_000), sw(None, Some(2)));
    }

    #[test]
    fn the_rate_on_a_host_cpu_keeps_the_measured_average() {
        let h = rr(2);
        // 8 busy at 184/1024 each on average, each on a host CPU a quarter of the time.
        assert_eq!(h.on_host_rate(8, 184), 736);
        assert_eq!(h.on_host_rate(2, 737), 737);
        assert_eq!(h.on_host_rate(3, 900), 1024, "capped at full speed");
        assert_eq!(h.on_host_rate(1, 1024), 1024);
    }
}
