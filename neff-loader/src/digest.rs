//! The payload digests (spec §3.1) and a reader that hashes what passes through it.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use md5::{Digest, Md5};
use neff_schema::HashLayout;
use sha2::Sha256;

/// The digest a `pkg_version` selects, running over the stored payload bytes.
#[derive(Debug)]
pub enum Digester {
    /// pkg 1: SHA-256 compared with all 32 hash bytes.
    Sha256(Sha256),
    /// pkg 2: MD5 compared with `hash[0..16]`.
    Md5(Md5),
    /// Verification off: nothing is computed.
    Off,
    /// Tests only: a hash stage that dies on its first bytes.
    #[cfg(test)]
    Failing,
}

impl Digester {
    /// The digest `pkg` selects, or [`Digester::Off`] when `verify` is false
    /// or the pkg is unknown.
    pub fn for_payload(verify: bool, pkg: Option<neff_schema::PkgVersion>) -> Digester {
        use neff_schema::PkgVersion;
        match (verify, pkg) {
            (true, Some(PkgVersion::Sha256Tar)) => Digester::Sha256(Default::default()),
            (true, Some(PkgVersion::Md5Gzip)) => Digester::Md5(Default::default()),
            _ => Digester::Off,
        }
    }

    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Digester::Sha256(h) => h.update(bytes),
            Digester::Md5(h) => h.update(bytes),
            Digester::Off => {}
            #[cfg(test)]
            Digester::Failing => panic!("injected hash-stage failure"),
        }
    }

    /// True unless verification is off.
    pub fn is_on(&self) -> bool {
        !matches!(self, Digester::Off)
    }

    /// Finishes: the digest, or `None` when verification is off.
    pub fn finish(self) -> Option<Vec<u8>> {
        match self {
            Digester::Sha256(h) => Some(h.finalize().to_vec()),
            Digester::Md5(h) => Some(h.finalize().to_vec()),
            Digester::Off => None,
            #[cfg(test)]
            Digester::Failing => None,
        }
    }
}

/// Which of `layouts` stores `digest` in the header's hash field, if any.
/// MD5 is compared with `hash[0..16]`, SHA-256 with all 32 bytes.
pub fn matching_layout(
    digest: &[u8],
    stored: &[u8; 32],
    layouts: &[HashLayout],
) -> Option<HashLayout> {
    let stored = &stored[..digest.len().min(32)];
    layouts
        .iter()
        .copied()
        .find(|layout| layout.apply(digest) == stored)
}

/// An I/O failure of the NEFF source itself (not of the data's format).
#[derive(Debug, thiserror::Error)]
#[error("reading the NEFF failed: {0}")]
pub(crate) struct SourceError(#[source] pub(crate) io::Error);

/// Passes reads through, sending a copy of every byte to a digest thread
/// (when one runs) and counting them (when asked). Errors of the underlying
/// source are wrapped in [`SourceError`] so callers can tell them from format
/// errors raised further up the reader chain.
pub struct HashingReader<'d, R> {
    inner: R,
    digest: DigestSink<'d>,
    progress: Option<Arc<AtomicU64>>,
}

/// Where a [`HashingReader`] sends the bytes it reads.
pub enum DigestSink<'d> {
    /// Nowhere: no digest runs.
    Off,
    /// Copies to a hash thread (large payloads: the hash overlaps inflate).
    Thread(SyncSender<Vec<u8>>),
    /// Straight into the digest on this thread (small payloads, where a
    /// thread and a copy per read cost more than the hash).
    Inline(&'d mut Digester),
}

impl<R> std::fmt::Debug for HashingReader<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashingReader")
            .field("digest", &!matches!(self.digest, DigestSink::Off))
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl<'d, R: Read> HashingReader<'d, R> {
    /// Reads `inner`, sending what it reads to `digest` and counting into `progress`.
    pub fn new(inner: R, digest: DigestSink<'d>, progress: Option<Arc<AtomicU64>>) -> Self {
        HashingReader {
            inner,
            digest,
            progress,
        }
    }
}

impl<R: Read> Read for HashingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self
            .inner
            .read(buf)
            .map_err(|e| io::Error::other(SourceError(e)))?;
        if n > 0 {
            match &mut self.digest {
                DigestSink::Off => {}
                // A closed channel means the hash thread is gone; the digest
                // then simply does not match.
                DigestSink::Thread(tx) => {
                    let _ = tx.send(buf[..n].to_vec());
                }
                DigestSink::Inline(digester) => digester.update(&buf[..n]),
            }
            if let Some(p) = &self.progress {
                p.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
        Ok(n)
    }
}

/// A reader that hands every byte it yields to `seen` (a count, a hash, a
/// progress counter): the one pass-through adapter of the workspace.
pub struct Tap<R, F> {
    inner: R,
    seen: F,
}

impl<R: std::fmt::Debug, F> std::fmt::Debug for Tap<R, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tap").field(&self.inner).finish()
    }
}

impl<R, F: FnMut(&[u8])> Tap<R, F> {
    /// Reads `inner`, calling `seen` with each run of bytes read.
    pub fn new(inner: R, seen: F) -> Self {
        Tap { inner, seen }
    }
}

impl<R: Read, F: FnMut(&[u8])> Read for Tap<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.seen)(&buf[..n]);
        Ok(n)
    }
}
