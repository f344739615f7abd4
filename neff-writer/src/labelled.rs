//! I/O errors that say which file they are about.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// A file or stream whose read, write and seek errors start with a label
/// (the kind is kept), e.g. "cannot write out.neff (temp file …): No space
/// left on device".
#[derive(Debug)]
pub(crate) struct Labelled<F> {
    inner: F,
    label: String,
}

impl<F> Labelled<F> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: F, label: String) -> Self {
        Labelled { inner, label }
    }

    /// The wrapped file or stream.
    pub(crate) fn get_ref(&self) -> &F {
        &self.inner
    }

    /// `e`, labelled.
    pub(crate) fn context(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.label))
    }
}

impl<F: Write> Write for Labelled<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.context(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.context(e))
    }
}

impl<F: Read> Read for Labelled<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| self.context(e))
    }
}

impl<F: Seek> Seek for Labelled<F> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos).map_err(|e| self.context(e))
    }
}
