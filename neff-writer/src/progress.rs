//! How far a write has got, for a progress display: the phase (writing the
//! payload, then reading it back through the loader) and the bytes done in it,
//! counted as they stream.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// The phase a write is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Member bytes are read, framed, compressed and written.
    Writing,
    /// The written NEFF is read back through the loader's gates.
    ReadingBack,
}

/// The phase and the bytes done in it, shared between a write and a display
/// thread. Each phase starts again from 0 bytes, with its own total.
#[derive(Debug, Default)]
pub struct Progress {
    bytes: Arc<AtomicU64>,
    total: AtomicU64,
    reading_back: AtomicU8,
}

impl Progress {
    /// A progress in the [`Phase::Writing`] phase at 0 bytes.
    pub fn new() -> Arc<Progress> {
        Arc::new(Progress::default())
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.reading_back.load(Ordering::Acquire) {
            0 => Phase::Writing,
            _ => Phase::ReadingBack,
        }
    }

    /// Bytes done in the current phase.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The current phase's total bytes (0 until it starts).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The byte counter alone, for the loader's
    /// [`Limits::progress`](neff_loader::Limits).
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.bytes)
    }

    /// Enters `phase`, expecting `total` bytes, from 0.
    pub(crate) fn start(&self, phase: Phase, total: u64) {
        self.bytes.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        let back = u8::from(phase == Phase::ReadingBack);
        self.reading_back.store(back, Ordering::Release);
    }

    /// Adds `bytes` to `progress`, if there is one.
    pub(crate) fn add(progress: Option<&Progress>, bytes: &[u8]) {
        if let Some(p) = progress {
            p.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
    }
}
