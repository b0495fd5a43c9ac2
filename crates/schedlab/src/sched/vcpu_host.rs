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
//! later; a vCPU that leaves its idle state preempts the one that has run longest
//! (the host's wakeup preemption of a thread that slept), which waits first in line.
//! A vCPU on a host CPU works at `vcpu_throughput(k) · k / min(k, cpus)`, capped at
//! full speed, so the average over a round is the measured rate.
//!
//! What it leaves out: the host's own tasks and QEMU's other threads (in the measured
//! rates only), the host scheduler's weights, wakeup granularity and migrations, and
//! an idle vCPU's need of a host CPU to take an interrupt (it gets one at once).

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

    /// `cpu` left its idle state: it takes a free host CPU or preempts the vCPU
    /// that has run longest.
    pub fn busy(&mut self, cpu: usize, now: SimTime) -> HostSwitch {
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

    /// `cpu` went idle: it leaves the host, and the first waiting vCPU takes its
    /// host CPU.
    pub fn idle(&mut self, cpu: usize, now: SimTime) -> HostSwitch {
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

    fn rr(cpus: u32) -> HostRr {
        HostRr::new(
            VcpuHost {
                cpus,
                slice_ns: 3_000,
            },
            4,
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
