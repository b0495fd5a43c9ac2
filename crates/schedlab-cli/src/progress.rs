//! Progress of the long commands (`compare`, `sweep`, `reproduce`) on stderr.
//!
//! On a terminal it is a bar with the runs done, the ETA and a message; off a
//! terminal (a CI log, `nohup`, a pipe) a bar would draw nothing, so the same
//! progress is printed as plain lines: one per tenth of the runs, plus the lines a
//! command adds itself (`reproduce` prints one per finished experiment). `--quiet`
//! silences both.

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub(crate) struct Progress {
    bar: indicatif::ProgressBar,
    /// Plain lines instead of the bar (stderr is not a terminal).
    lines: bool,
    what: &'static str,
    total: u64,
    done: AtomicU64,
    events: AtomicU64,
    t0: Instant,
    /// Held from a run's count to its line, so the lines of runs finishing together
    /// on several threads come out in count order (the last says `total/total`).
    order: std::sync::Mutex<()>,
}

impl Progress {
    /// Progress of `total` runs of command `what`.
    pub(crate) fn new(what: &'static str, total: u64, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = if quiet || !tty {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new(total)
        };
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs, ETA {eta} {msg}")
        {
            bar.set_style(style);
        }
        Progress {
            bar,
            lines: !quiet && !tty,
            what,
            total,
            done: AtomicU64::new(0),
            events: AtomicU64::new(0),
            t0: Instant::now(),
            order: std::sync::Mutex::new(()),
        }
    }

    /// Runs already done before this command started (a resumed journal).
    pub(crate) fn skip(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
        self.bar.inc(n);
    }

    /// One run finished, `events` simulated.
    pub(crate) fn run(&self, events: u64) {
        let ev = self.events.fetch_add(events, Ordering::Relaxed) + events;
        let secs = self.t0.elapsed().as_secs_f64().max(1e-9);
        self.bar
            .set_message(format!(", {:.2} M events/s", ev as f64 / secs / 1e6));
        self.bar.inc(1);
        let _order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let d = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let tenth = |x: u64| x * 10 / self.total.max(1);
        if self.lines && tenth(d) > tenth(d - 1) {
            eprintln!(
                "{}: {d}/{} runs ({:.0} s)",
                self.what,
                self.total,
                self.t0.elapsed().as_secs_f64()
            );
        }
    }

    /// A line of the command's own (above the bar, or plain).
    pub(crate) fn line(&self, msg: &str) {
        if self.lines {
            eprintln!("{}: {msg}", self.what);
        } else if !self.bar.is_hidden() {
            self.bar.println(format!("{}: {msg}", self.what));
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
