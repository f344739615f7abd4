//! The payload digests (spec §3.1) and a reader that hashes what passes through it.

use std::io::{self, Read};

use md5::{Digest, Md5};
use sha2::Sha256;

/// The digest a `pkg_version` selects, running over the stored payload bytes.
pub enum Digester {
    /// pkg 1: SHA-256 compared with all 32 hash bytes.
    Sha256(Sha256),
    /// pkg 2: MD5 compared with `hash[0..16]`.
    Md5(Md5),
    /// Verification off: nothing is computed.
    Off,
}

impl Digester {
    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Digester::Sha256(h) => h.update(bytes),
            Digester::Md5(h) => h.update(bytes),
            Digester::Off => {}
        }
    }

    /// Finishes: `Some(matches)` when a digest was computed.
    pub fn matches(self, stored: &[u8; 32]) -> Option<(bool, String, String)> {
        let (computed, expected): (Vec<u8>, &[u8]) = match self {
            Digester::Sha256(h) => (h.finalize().to_vec(), &stored[..]),
            Digester::Md5(h) => (h.finalize().to_vec(), &stored[..16]),
            Digester::Off => return None,
        };
        Some((
            computed == expected,
            neff_schema::hex::encode(expected),
            neff_schema::hex::encode(&computed),
        ))
    }
}

/// An I/O failure of the NEFF source itself (not of the data's format).
#[derive(Debug, thiserror::Error)]
#[error("reading the NEFF failed: {0}")]
pub struct SourceError(#[source] pub io::Error);

/// Passes reads through, feeding every byte to a [`Digester`]. Errors of the
/// underlying source are wrapped in [`SourceError`] so callers can tell them
/// from format errors raised further up the reader chain.
pub struct HashingReader<'a, R> {
    inner: R,
    digester: &'a mut Digester,
}

impl<'a, R: Read> HashingReader<'a, R> {
    /// Hashes everything read from `inner` into `digester`.
    pub fn new(inner: R, digester: &'a mut Digester) -> Self {
        HashingReader { inner, digester }
    }
}

impl<R: Read> Read for HashingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self
            .inner
            .read(buf)
            .map_err(|e| io::Error::other(SourceError(e)))?;
        self.digester.update(&buf[..n]);
        Ok(n)
    }
}

/// The source error inside `e`, if `e` came from the NEFF source.
pub fn source_error(e: &io::Error) -> Option<&SourceError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<SourceError>())
}
