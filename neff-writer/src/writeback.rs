//! Writeback started while the payload is written, so the final fsync only
//! flushes the tail (Linux `sync_file_range`; elsewhere a plain pass-through).

use std::fs::File;
use std::io::{self, Write};

/// Bytes written between two writeback requests: small enough that the
/// final fsync of a file of a few MiB has little left to write.
const WRITEBACK_EVERY: u64 = 4 << 20;

/// Passes writes through to `inner` (positioned at `start` in `file`) and,
/// every [`WRITEBACK_EVERY`] bytes, asks the kernel to start writing the
/// range just written to the device without waiting for it.
pub(crate) struct Writeback<W> {
    inner: W,
    file: Option<File>,
    pos: u64,
    started: u64,
}

impl<W: Write> Writeback<W> {
    /// Writes to `inner`, which writes `file` from offset `start`; with no
    /// `file`, only passes writes through.
    pub(crate) fn new(inner: W, file: Option<File>, start: u64) -> Self {
        Writeback {
            inner,
            file,
            pos: start,
            started: start,
        }
    }
}

impl<W: Write> Write for Writeback<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.pos += n as u64;
        if self.pos - self.started >= WRITEBACK_EVERY {
            if let Some(file) = &self.file {
                start_writeback(file, self.started, self.pos - self.started);
            }
            self.started = self.pos;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Starts writeback of `len` bytes at `offset` (a hint: failures are ignored,
/// the final fsync still covers everything).
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::unix::io::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the life of `file`; the call only
    // reads its arguments.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}
