//! A progress bar (bytes, rate, ETA) for long runs, drawn on stderr only when
//! it is a terminal, from a byte counter the library updates.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Runs below this many bytes get no bar.
const MIN_BYTES: u64 = 64 << 20;

/// A running progress display (or nothing, when disabled).
pub struct Progress {
    counter: Option<Arc<AtomicU64>>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for `total` bytes labelled `what`, unless `quiet`, stderr is
    /// not a terminal, or the run is short.
    pub fn start(quiet: bool, total: u64, what: &str) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || total < MIN_BYTES || !std::io::stderr().is_terminal() {
            return Progress {
                counter: None,
                stop,
                ticker: None,
            };
        }
        let counter = Arc::new(AtomicU64::new(0));
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        let (c, s) = (Arc::clone(&counter), Arc::clone(&stop));
        let ticker = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                bar.set_position(c.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Progress {
            counter: Some(counter),
            stop,
            ticker: Some(ticker),
        }
    }

    /// The counter the library adds bytes to, when a bar is shown.
    pub fn counter(&self) -> Option<Arc<AtomicU64>> {
        self.counter.clone()
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
