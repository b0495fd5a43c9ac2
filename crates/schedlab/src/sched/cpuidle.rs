//! cpuidle: the idle governors `menu` and `teo` of Linux v5.6
//! (drivers/cpuidle/governors/menu.c, teo.c; the idle loop of kernel/sched/idle.c).
//!
//! A CPU with nothing to run sits in `do_idle`. Each pass of that loop is one
//! *round*: the governor's `select` picks a cpuidle state and says whether the
//! periodic tick may stop; the driver enters the state; an interrupt (a timer, an
//! IPI, the tick if it was kept) or the end of a software loop brings the CPU back;
//! `reflect` tells the governor which state was used; if there is still nothing to
//! run the loop goes round again. The governor's feedback is lazy: what the round
//! measured (`dev->last_residency_ns`, the time from entry until the CPU was running
//! again, exit latency included) is folded into its statistics at the next `select`.
//!
//! **menu** (the default: rating 20 against teo's 19) predicts the idle length as the
//! time to the next timer event (`tick_nohz_get_sleep_length`) scaled by a
//! correction factor learnt per bucket (six decades of that time, doubled when a
//! task waits for I/O), then takes the smaller of that and a "typical interval"
//! found in the last eight measured lengths when they agree well enough (the
//! average once outliers above it are dropped and the spread is small). It limits
//! the exit latency to the PM QoS request and to the prediction divided by the
//! I/O-wait multiplier, walks the states in order and keeps the deepest whose target
//! residency fits the prediction, with three twists: a polling state 0 gives way to
//! state 1 whenever the next timer is far enough; a prediction below one tick keeps
//! the tick running (then no state may outlast the next tick); and once the tick
//! is stopped a short prediction is replaced by the time to the next event.
//!
//! **teo** (timer events oriented) trusts the next timer more: per state it counts,
//! with a decay of 1/8 and pulses of 1024, how often the CPU woke when the timer
//! said (`hits`), earlier (`misses`), and earlier but still deep enough for a
//! shallower state (`early_hits`); it picks the deepest state the sleep length
//! allows unless misses outweigh hits, then the state with most early hits, and
//! a clear pattern in the last eight idle lengths can make it shallower still.
//!
//! The arithmetic follows v5.6 in units and order: ns times, µs in menu's interval
//! ring and prediction (so a menu prediction is a whole number of µs), integer
//! divisions that floor, `DIV_ROUND_CLOSEST` where the kernel rounds. One
//! deviation, listed in docs/kernel-mapping.md §5: when no timer at all is pending
//! the kernel's sleep length is `KTIME_MAX - now`, and menu's u64 product with the
//! correction factor wraps; schedlab saturates it instead. A modelled CPU rarely
//! gets there: the softlockup watchdog's hrtimer (every 4 s by default) bounds every
//! CPU's sleep length, as on a real system, where wheel timers (not modelled) often
//! come sooner still; only `watchdog_thresh = 0` leaves a CPU without any timer.
//! The machine and tick side of a round (the tick kept or stopped, loop time
//! limits, which interrupt ended it) is in sched/core.rs (`cpuidle_idle_call`).

use crate::machine::IdleState;

/// `NSEC_PER_USEC`.
const NSEC_PER_USEC: u64 = 1_000;
/// `KTIME_MAX`: the sleep length's "no event".
pub const KTIME_MAX: u64 = i64::MAX as u64;

/// Which governor the cpuidle framework runs (`[kernel] cpuidle`;
/// `cpuidle.governor=` on the kernel command line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdleGovernor {
    /// `menu`, v5.6's default.
    #[default]
    Menu,
    /// `teo`.
    Teo,
}

impl IdleGovernor {
    pub const NAMES: [&'static str; 2] = ["menu", "teo"];

    pub fn by_name(s: &str) -> Option<IdleGovernor> {
        match s {
            "menu" => Some(IdleGovernor::Menu),
            "teo" => Some(IdleGovernor::Teo),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// What a governor's `select` reads from the rest of the kernel.
#[derive(Clone, Copy, Debug)]
pub struct SelectCtx {
    /// `local_clock()`.
    pub now: u64,
    /// `tick_nohz_get_sleep_length()`: time to the next timer event, the tick not
    /// counted.
    pub sleep_length_ns: u64,
    /// Its out-parameter (`delta_next`, teo's `delta_tick`): time to the next event
    /// the tick included while it runs.
    pub delta_next_ns: u64,
    /// `tick_nohz_tick_stopped()`: an earlier round of this idle period stopped it.
    pub tick_stopped: bool,
    /// `TICK_NSEC`.
    pub tick_nsec: u64,
    /// `nr_iowait_cpu()`.
    pub nr_iowaiters: u32,
    /// `cpuidle_governor_latency_req()` in ns; `u64::MAX` without a PM QoS request.
    pub latency_req_ns: u64,
}

/// The per-CPU `struct cpuidle_device` fields the governors use.
#[derive(Clone, Debug, Default)]
pub struct DevState {
    /// `dev->last_state_idx` (teo: −1 once accounted).
    pub last_state_idx: i32,
    /// `dev->last_residency_ns`.
    pub last_residency_ns: u64,
    /// `dev->poll_time_limit`: the last polling round ended on its time limit.
    pub poll_time_limit: bool,
    /// `ts->got_idle_tick`: a tick ran while idle since it was last read.
    pub got_idle_tick: bool,
    /// A round ended (state, when the CPU was running again) and is not yet
    /// reflected: the kernel reflects right after the interrupt; nothing reads the
    /// governor in between, so schedlab does it at the next `select`.
    pub pending_reflect: Option<(usize, u64)>,
}

/// A CPU's cpuidle device and its governor's per-CPU data.
#[derive(Clone, Debug)]
pub struct CpuidleDevice {
    pub dev: DevState,
    gov: Gov,
}

#[derive(Clone, Debug)]
enum Gov {
    Menu(MenuDevice),
    Teo(TeoCpu),
}

impl CpuidleDevice {
    /// `cpuidle_enable_device` → the governor's `enable`, for a CPU with `nr_states`
    /// states: the state right after boot.
    pub fn new(g: IdleGovernor, nr_states: usize) -> Self {
        CpuidleDevice {
            dev: DevState::default(),
            gov: match g {
                IdleGovernor::Menu => Gov::Menu(MenuDevice::new()),
                IdleGovernor::Teo => Gov::Teo(TeoCpu::new(nr_states)),
            },
        }
    }

    /// The device of a CPU that has been idle for long, the state a simulation
    /// starts from: menu's ring full of idle lengths longer than it can hold (what an
    /// idle CPU without timers records, each sample being the whole sleep length),
    /// instead of the zeros of boot, which would make every CPU's first eight rounds
    /// predict 0 µs. teo's own initial ring (`U64_MAX` everywhere) already says so.
    pub fn after_long_idle(g: IdleGovernor, nr_states: usize) -> Self {
        let mut d = Self::new(g, nr_states);
        if let Gov::Menu(m) = &mut d.gov {
            m.intervals = [u32::MAX; INTERVALS];
        }
        d
    }

    /// One governor round: the pending `reflect`, then `select`. Returns the state
    /// index and `stop_tick`. `states` must not be empty (without states there is
    /// no governor: `cpuidle_not_available`).
    pub fn select(&mut self, states: &[IdleState], cx: &SelectCtx) -> (usize, bool) {
        if let Some((idx, at)) = self.dev.pending_reflect.take() {
            self.reflect(idx, at, cx.tick_nsec);
        }
        match &mut self.gov {
            Gov::Menu(m) => m.select(&mut self.dev, states, cx),
            Gov::Teo(t) => t.select(&mut self.dev, states, cx),
        }
    }

    /// `cpuidle_reflect(dev, idx)` at time `now` (the governor's `reflect`).
    fn reflect(&mut self, idx: usize, now: u64, tick_nsec: u64) {
        let d = &mut self.dev;
        d.last_state_idx = idx as i32;
        match &mut self.gov {
            Gov::Menu(m) => {
                m.needs_update = true;
                m.tick_wakeup = std::mem::take(&mut d.got_idle_tick);
            }
            Gov::Teo(t) => {
                // `||` short-circuits: with the poll limit hit, got_idle_tick is not
                // read, so not cleared.
                if d.poll_time_limit
                    || (std::mem::take(&mut d.got_idle_tick) && t.sleep_length_ns > tick_nsec)
                {
                    d.poll_time_limit = false;
                    t.time_span_ns = t.sleep_length_ns;
                } else {
                    t.time_span_ns = now.wrapping_sub(t.time_span_ns);
                }
            }
        }
    }

    /// menu's data (tests read it).
    pub fn menu(&self) -> Option<&MenuDevice> {
        match &self.gov {
            Gov::Menu(m) => Some(m),
            Gov::Teo(_) => None,
        }
    }

    /// teo's data.
    pub fn teo(&self) -> Option<&TeoCpu> {
        match &self.gov {
            Gov::Teo(t) => Some(t),
            Gov::Menu(_) => None,
        }
    }

    /// menu's data, mutable (tests set histories).
    #[doc(hidden)]
    pub fn menu_mut(&mut self) -> Option<&mut MenuDevice> {
        match &mut self.gov {
            Gov::Menu(m) => Some(m),
            Gov::Teo(_) => None,
        }
    }

    /// teo's data, mutable.
    #[doc(hidden)]
    pub fn teo_mut(&mut self) -> Option<&mut TeoCpu> {
        match &mut self.gov {
            Gov::Teo(t) => Some(t),
            Gov::Menu(_) => None,
        }
    }
}

/// The shallower enabled state for `d`: from `idx - 1` down, the first enabled
/// state with a target residency within `d`, else the shallowest enabled one below
/// `idx` (`idx` itself when there is none). Both governors' tick-retention walk and
/// teo's `teo_find_shallower_state`.
fn find_shallower(states: &[IdleState], idx: usize, d: u64) -> usize {
    let mut r = idx;
    for i in (0..idx).rev() {
        if states[i].disable {
            continue;
        }
        r = i;
        if states[i].target_residency_ns <= d {
            break;
        }
    }
    r
}

/// The end of both governors' `select`: a polling state or an expected idle shorter
/// than a tick keeps the tick (unless it is already stopped), and then no state may
/// outlast the next tick event (`delta_next`): a shallower one is taken. Returns the
/// state and `stop_tick`.
fn tick_decision(
    states: &[IdleState],
    idx: usize,
    expected_ns: u64,
    cx: &SelectCtx,
) -> (usize, bool) {
    if (states[idx].is_polling() || expected_ns < cx.tick_nsec) && !cx.tick_stopped {
        let idx = if idx > 0 && states[idx].target_residency_ns > cx.delta_next_ns {
            find_shallower(states, idx, cx.delta_next_ns)
        } else {
            idx
        };
        return (idx, false);
    }
    (idx, true)
}

// ---------------------------------------------------------------------------
// menu
// ---------------------------------------------------------------------------

/// `BUCKETS`: six decades of the sleep length, doubled for I/O waiters.
pub const BUCKETS: usize = 12;
/// `INTERVAL_SHIFT`.
pub const INTERVAL_SHIFT: u32 = 3;
/// `INTERVALS`: the ring of recent idle lengths.
pub const INTERVALS: usize = 1 << INTERVAL_SHIFT;
/// `RESOLUTION`.
pub const RESOLUTION: u64 = 1024;
/// `DECAY`.
pub const DECAY: u64 = 8;
/// `MAX_INTERESTING` (ns since v5.5).
pub const MAX_INTERESTING: u64 = 50_000 * NSEC_PER_USEC;

/// `struct menu_device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MenuDevice {
    pub needs_update: bool,
    pub tick_wakeup: bool,
    pub next_timer_ns: u64,
    pub bucket: usize,
    pub correction_factor: [u32; BUCKETS],
    /// Recent idle lengths, µs.
    pub intervals: [u32; INTERVALS],
    pub interval_ptr: usize,
}

/// `which_bucket`: the decade of the sleep length, +6 with I/O waiters.
pub fn which_bucket(duration_ns: u64, nr_iowaiters: u32) -> usize {
    let base = if nr_iowaiters > 0 { BUCKETS / 2 } else { 0 };
    let us = NSEC_PER_USEC;
    base + match duration_ns {
        d if d < 10 * us => 0,
        d if d < 100 * us => 1,
        d if d < 1_000 * us => 2,
        d if d < 10_000 * us => 3,
        d if d < 100_000 * us => 4,
        _ => 5,
    }
}

/// `performance_multiplier`: v5.6 counts I/O waiters only.
pub fn performance_multiplier(nr_iowaiters: u32) -> u64 {
    1 + 10 * nr_iowaiters as u64
}

impl MenuDevice {
    /// `menu_enable_device`: an empty ring, every factor at unity.
    pub fn new() -> Self {
        MenuDevice {
            needs_update: false,
            tick_wakeup: false,
            next_timer_ns: 0,
            bucket: 0,
            correction_factor: [(RESOLUTION * DECAY) as u32; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
        }
    }

    /// `get_typical_interval`: the average of the ring once the values above it are
    /// dropped one maximum at a time, if the spread is small (µs; `u32::MAX`: no
    /// typical interval).
    pub fn get_typical_interval(&self, predicted_us: u32) -> u32 {
        let mut thresh = i32::MAX as u32;
        loop {
            let (mut max, mut min, mut sum, mut divisor) = (0u32, u32::MAX, 0u64, 0u64);
            for &v in &self.intervals {
                if v <= thresh {
                    sum += v as u64;
                    divisor += 1;
                    max = max.max(v);
                    min = min.min(v);
                }
            }
            // Nothing below the prediction: nothing to learn (also when empty).
            if min >= predicted_us {
                return u32::MAX;
            }
            let n = INTERVALS as u64;
            let avg = if divisor == n {
                (sum >> INTERVAL_SHIFT) as u32
            } else {
                (sum / divisor) as u32
            };
            let mut variance = 0u64;
            for &v in &self.intervals {
                if v <= thresh {
                    let diff = v as i64 - avg as i64;
                    variance = variance.wrapping_add((diff * diff) as u64);
                }
            }
            if divisor == n {
                variance >>= INTERVAL_SHIFT;
            } else {
                variance /= divisor;
            }
            if variance <= u64::MAX / 36 {
                let avg2 = avg as u64 * avg as u64;
                if (avg2 > variance * 36 && divisor * 4 >= n * 3) || variance <= 400 {
                    return avg;
                }
            }
            // Give up once a quarter of the samples or more are dropped.
            if divisor * 4 <= n * 3 {
                return u32::MAX;
            }
            thresh = max - 1;
        }
    }

    /// `menu_select`.
    fn select(
        &mut self,
        dev: &mut DevState,
        states: &[IdleState],
        cx: &SelectCtx,
    ) -> (usize, bool) {
        if self.needs_update {
            self.update(dev, states, cx.tick_nsec);
            self.needs_update = false;
        }
        let mut latency_req = cx.latency_req_ns;
        let delta_next = cx.delta_next_ns;
        self.next_timer_ns = cx.sleep_length_ns;
        self.bucket = which_bucket(self.next_timer_ns, cx.nr_iowaiters);
        if states.len() <= 1
            || latency_req == 0
            || ((self.next_timer_ns < states[1].target_residency_ns
                || latency_req < states[1].exit_latency_ns)
                && !states[0].disable)
        {
            // Very short or no latency allowed: state 0, the tick kept for polling.
            return (0, !states[0].is_polling());
        }
        // DIV_ROUND_CLOSEST_ULL(next_timer_ns * factor, RESOLUTION * DECAY * µs),
        // saturated where the kernel's u64 product would wrap (module comment).
        let div = (RESOLUTION * DECAY * NSEC_PER_USEC) as u128;
        let prod = self.next_timer_ns as u128 * self.correction_factor[self.bucket] as u128;
        let predicted_us = ((prod + div / 2) / div).min(u32::MAX as u128) as u32;
        let mut predicted_ns =
            predicted_us.min(self.get_typical_interval(predicted_us)) as u64 * NSEC_PER_USEC;
        if cx.tick_stopped {
            // A stopped tick makes a short misprediction costly: use the known time
            // to the next event.
            if predicted_ns < cx.tick_nsec {
                predicted_ns = delta_next;
            }
        } else {
            let interactivity_req = predicted_ns / performance_multiplier(cx.nr_iowaiters);
            latency_req = latency_req.min(interactivity_req);
        }
        let mut idx: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if s.disable {
                continue;
            }
            let cur = *idx.get_or_insert(i);
            if s.target_residency_ns > predicted_ns {
                let c = &states[cur];
                // A real state rather than polling when the timer is far enough.
                if c.is_polling()
                    && s.exit_latency_ns <= latency_req
                    && s.target_residency_ns <= self.next_timer_ns
                {
                    predicted_ns = s.target_residency_ns;
                    idx = Some(i);
                    break;
                }
                if predicted_ns < cx.tick_nsec {
                    break;
                }
                if !cx.tick_stopped {
                    // The tick will run; the governor comes back at the next one.
                    predicted_ns = c.target_residency_ns;
                    break;
                }
                // Tick stopped: deeper if it fits before the next event (the exit
                // latency is not checked here in v5.6).
                let mut r = cur;
                if c.target_residency_ns < cx.tick_nsec && s.target_residency_ns <= delta_next {
                    r = i;
                }
                return (r, true);
            }
            if s.exit_latency_ns > latency_req {
                break;
            }
            idx = Some(i);
        }
        tick_decision(states, idx.unwrap_or(0), predicted_ns, cx)
    }

    /// `menu_update`: fold the last round into the factor of its bucket and the ring.
    fn update(&mut self, dev: &DevState, states: &[IdleState], tick_nsec: u64) {
        let last = &states[dev.last_state_idx.max(0) as usize];
        let mut measured_ns = if self.tick_wakeup && self.next_timer_ns > tick_nsec {
            // The tick woke the CPU though the timer was far: a long idle.
            9 * MAX_INTERESTING / 10
        } else if last.is_polling() && dev.poll_time_limit {
            self.next_timer_ns
        } else {
            let m = dev.last_residency_ns;
            let lat = last.exit_latency_ns;
            if m > 2 * lat {
                m - lat
            } else {
                m / 2
            }
        };
        measured_ns = measured_ns.min(self.next_timer_ns);
        let mut new_factor = self.correction_factor[self.bucket] as u64;
        new_factor -= new_factor / DECAY;
        if self.next_timer_ns > 0 && measured_ns < MAX_INTERESTING {
            new_factor += RESOLUTION * measured_ns / self.next_timer_ns;
        } else {
            new_factor += RESOLUTION;
        }
        self.correction_factor[self.bucket] = new_factor as u32;
        // ktime_to_us into an unsigned int (saturated: module comment).
        self.intervals[self.interval_ptr] =
            (measured_ns / NSEC_PER_USEC).min(u32::MAX as u64) as u32;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }
}

impl Default for MenuDevice {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------
// teo
// ---------------------------------------------------------------------------

/// `PULSE`.
pub const PULSE: u32 = 1024;
/// `DECAY_SHIFT`.
pub const DECAY_SHIFT: u32 = 3;

/// `struct teo_idle_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeoState {
    pub early_hits: u32,
    pub hits: u32,
    pub misses: u32,
}

/// `struct teo_cpu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeoCpu {
    pub time_span_ns: u64,
    pub sleep_length_ns: u64,
    pub states: Vec<TeoState>,
    pub interval_idx: usize,
    /// Recent idle lengths, ns (`u64::MAX`: the timer or a safety net ended it).
    pub intervals: [u64; INTERVALS],
}

impl TeoCpu {
    /// `teo_enable_device`.
    pub fn new(nr_states: usize) -> Self {
        TeoCpu {
            time_span_ns: 0,
            sleep_length_ns: 0,
            states: vec![TeoState::default(); nr_states],
            interval_idx: 0,
            intervals: [u64::MAX; INTERVALS],
        }
    }

    /// `teo_update`.
    fn update(&mut self, dev: &DevState, states: &[IdleState]) {
        let measured_ns = if self.time_span_ns >= self.sleep_length_ns {
            // Woken by the timer (or treated so).
            u64::MAX
        } else {
            let lat = states[dev.last_state_idx.max(0) as usize].exit_latency_ns;
            let m = dev.last_residency_ns;
            if m >= lat {
                m - lat / 2
            } else {
                m / 2
            }
        };
        let (mut idx_timer, mut idx_hit) = (None, None);
        for (i, s) in states.iter().enumerate() {
            let st = &mut self.states[i];
            st.early_hits -= st.early_hits >> DECAY_SHIFT;
            if s.target_residency_ns <= self.sleep_length_ns {
                idx_timer = Some(i);
                if s.target_residency_ns <= measured_ns {
                    idx_hit = Some(i);
                }
            }
        }
        if let Some(t) = idx_timer {
            let mut hits = self.states[t].hits;
            let mut misses = self.states[t].misses;
            hits -= hits >> DECAY_SHIFT;
            misses -= misses >> DECAY_SHIFT;
            if Some(t) > idx_hit {
                misses += PULSE;
                if let Some(h) = idx_hit {
                    self.states[h].early_hits += PULSE;
                }
            } else {
                hits += PULSE;
            }
            self.states[t].hits = hits;
            self.states[t].misses = misses;
        }
        self.intervals[self.interval_idx] = measured_ns;
        self.interval_idx += 1;
        if self.interval_idx >= INTERVALS {
            self.interval_idx = 0;
        }
    }

    /// `teo_select`.
    fn select(
        &mut self,
        dev: &mut DevState,
        states: &[IdleState],
        cx: &SelectCtx,
    ) -> (usize, bool) {
        if dev.last_state_idx >= 0 {
            self.update(dev, states);
            dev.last_state_idx = -1;
        }
        let latency_req = cx.latency_req_ns;
        let time_ok = |x: u64| !cx.tick_stopped || x >= cx.tick_nsec;
        self.time_span_ns = cx.now;
        let mut duration_ns = cx.sleep_length_ns;
        self.sleep_length_ns = duration_ns;
        let (mut hits, mut misses, mut early_hits) = (0u32, 0u32, 0u32);
        let (mut max_early_idx, mut prev_max_early_idx): (i32, i32) = (-1, -1);
        let mut constraint_idx = states.len() as i32;
        let mut idx: i32 = -1;
        for (i, s) in states.iter().enumerate() {
            let st = self.states[i];
            if s.disable {
                // Judge the range of candidates with the disabled state's metrics.
                if s.target_residency_ns > duration_ns {
                    continue;
                }
                hits = st.hits;
                misses = st.misses;
                if early_hits >= st.early_hits || idx < 0 {
                    continue;
                }
                if max_early_idx == idx {
                    early_hits = st.early_hits;
                    continue;
                }
                if time_ok(states[idx as usize].target_residency_ns) {
                    prev_max_early_idx = max_early_idx;
                    early_hits = st.early_hits;
                    max_early_idx = idx;
                }
                continue;
            }
            if idx < 0 {
                idx = i as i32;
                hits = st.hits;
                misses = st.misses;
            }
            if s.target_residency_ns > duration_ns {
                break;
            }
            if s.exit_latency_ns > latency_req && constraint_idx > i as i32 {
                constraint_idx = i as i32;
            }
            idx = i as i32;
            hits = st.hits;
            misses = st.misses;
            if early_hits < st.early_hits && time_ok(s.target_residency_ns) {
                prev_max_early_idx = max_early_idx;
                early_hits = st.early_hits;
                max_early_idx = i as i32;
            }
        }
        // Misses outweigh hits: the state with the most early hits instead.
        if hits <= misses {
            if idx == max_early_idx {
                max_early_idx = prev_max_early_idx;
            }
            if max_early_idx >= 0 {
                idx = max_early_idx;
                duration_ns = states[idx as usize].target_residency_ns;
            }
        }
        if constraint_idx < idx {
            idx = constraint_idx;
        }
        if idx < 0 {
            idx = 0;
        } else if idx > 0 {
            // A pattern of shorter idle lengths in the recent ones.
            let (mut count, mut sum) = (0u64, 0u64);
            for &v in &self.intervals {
                if v < duration_ns {
                    count += 1;
                    sum += v;
                }
            }
            if count > INTERVALS as u64 / 2 {
                let avg_ns = sum / count;
                if time_ok(avg_ns) {
                    duration_ns = avg_ns;
                    if states[idx as usize].target_residency_ns > avg_ns {
                        idx = find_shallower(states, idx as usize, avg_ns) as i32;
                    }
                }
            }
        }
        tick_decision(states, idx as usize, duration_ns, cx)
    }
}

#[cfg(test)]
mod tests;
