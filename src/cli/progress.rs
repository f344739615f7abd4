//! A progress bar (bytes, rate, ETA) for long runs, drawn on stderr only when
//! it is a terminal, from the phase and byte counter the library updates: the
//! bar restarts, relabelled "reading back", when the read-back check begins.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use neff::writer::{Phase, Progress as Tracker};

/// Runs below this many bytes get no bar.
const MIN_BYTES: u64 = 64 << 20;

/// A running progress display (or nothing, when disabled).
pub struct Progress {
    tracker: Option<Arc<Tracker>>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for `total()` bytes labelled `what`, unless `quiet`,
    /// stderr is not a terminal, or the run is short. `total` is only called
    /// when a bar could be drawn (counting a tree's bytes walks it).
    pub fn start(quiet: bool, total: impl FnOnce() -> u64, what: &str) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let shown = !quiet && std::io::stderr().is_terminal();
        let total = if shown { total() } else { 0 };
        if !shown || total < MIN_BYTES {
            return Progress {
                tracker: None,
                stop,
                ticker: None,
            };
        }
        let tracker = Tracker::new();
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        let (t, s) = (Arc::clone(&tracker), Arc::clone(&stop));
        let ticker = std::thread::spawn(move || {
            let mut shown = Phase::Writing;
            while !s.load(Ordering::Relaxed) {
                if t.phase() != shown {
                    shown = t.phase();
                    bar.reset();
                    bar.set_length(t.total());
                    bar.set_message("reading back");
                }
                bar.set_position(t.bytes());
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Progress {
            tracker: Some(tracker),
            stop,
            ticker: Some(ticker),
        }
    }

    /// The phase and bytes the library reports to, when a bar is shown.
    pub fn tracker(&self) -> Option<Arc<Tracker>> {
        self.tracker.clone()
    }

    /// The byte counter alone (for a read with no phases), when a bar is shown.
    pub fn counter(&self) -> Option<Arc<AtomicU64>> {
        self.tracker.as_ref().map(|t| t.counter())
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}
