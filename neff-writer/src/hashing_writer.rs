//! A writer that hashes and counts the payload on its way to the file, so no
//! second pass over the data is needed.

use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use md5::{Digest, Md5};
use neff_loader::StreamCheck;
use neff_schema::PkgVersion;
use sha2::Sha256;

/// Hashes what passes through: MD5 for pkg 2 and SHA-256 for pkg 1 (the
/// header digest), plus SHA-256 for pkg 2 when the UUID is derived from content.
pub struct HashingWriter<W> {
    inner: W,
    md5: Option<Md5>,
    sha256: Option<Sha256>,
    count: u64,
    /// When hashing runs on its own thread: the batch being filled, where
    /// full batches go and come back, and the thread.
    thread: Option<HashThread>,
}

/// Bytes batched before they go to the hash thread: one hand-off per MiB,
/// however small the writes (a tar header is 512 bytes).
const BATCH: usize = 1 << 20;

/// The hash thread's end of a [`HashingWriter`].
struct HashThread {
    batch: Vec<u8>,
    full: SyncSender<Vec<u8>>,
    /// Batches the thread is done with, to be filled again (no allocation
    /// and no fresh pages per batch).
    spare: Receiver<Vec<u8>>,
    handle: JoinHandle<(Hashers, Option<StreamCheck>)>,
}

impl HashThread {
    fn send_batch(&mut self) -> io::Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        self.full
            .send(batch)
            .map_err(|_| io::Error::other("the hashing thread stopped"))
    }
}

/// The hash states a hashing thread owns.
struct Hashers {
    md5: Option<Md5>,
    sha256: Option<Sha256>,
}

impl Hashers {
    fn update(&mut self, buf: &[u8]) {
        if let Some(h) = &mut self.md5 {
            h.update(buf);
        }
        if let Some(h) = &mut self.sha256 {
            h.update(buf);
        }
    }
}

/// What the packager's hashing stage saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// Bytes written.
    pub count: u64,
    /// MD5, when computed.
    pub md5: Option<[u8; 16]>,
    /// SHA-256, when computed.
    pub sha256: Option<[u8; 32]>,
}

impl<W> std::fmt::Debug for HashingWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashingWriter")
            .field("count", &self.count)
            .field("md5", &self.md5.is_some())
            .field("sha256", &self.sha256.is_some())
            .field("threaded", &self.thread.is_some())
            .finish_non_exhaustive()
    }
}

impl<W: Write> HashingWriter<W> {
    /// Hashes for `pkg`; `want_sha256` adds SHA-256 for a content-derived UUID.
    pub fn new(inner: W, pkg: PkgVersion, want_sha256: bool) -> Self {
        HashingWriter {
            inner,
            md5: (pkg == PkgVersion::Md5Gzip).then(Md5::new),
            sha256: (pkg == PkgVersion::Sha256Tar || want_sha256).then(Sha256::new),
            count: 0,
            thread: None,
        }
    }

    /// Like [`HashingWriter::new`], but the hashes run on their own thread,
    /// overlapped with the caller's framing and I/O: writes are gathered in
    /// 1 MiB batches, each written to `inner` in one call and then sent to
    /// the thread. That thread then hands each batch to `check`, when given, without
    /// another copy; [`HashingWriter::finish`] gives the check back.
    pub fn threaded(
        inner: W,
        pkg: PkgVersion,
        want_sha256: bool,
        mut check: Option<StreamCheck>,
    ) -> Self {
        let mut w = HashingWriter::new(inner, pkg, want_sha256);
        let mut hashers = Hashers {
            md5: w.md5.take(),
            sha256: w.sha256.take(),
        };
        let (full, batches) = sync_channel::<Vec<u8>>(4);
        let (done, spare) = channel::<Vec<u8>>();
        let handle = std::thread::spawn(move || {
            for mut batch in batches {
                hashers.update(&batch);
                let spare = match &mut check {
                    Some(check) => check.write_owned(batch),
                    None => {
                        batch.clear();
                        batch
                    }
                };
                // The writer may be gone already; the batch is then dropped.
                let _ = done.send(spare);
            }
            (hashers, check)
        });
        w.thread = Some(HashThread {
            batch: Vec::with_capacity(BATCH),
            full,
            spare,
            handle,
        });
        w
    }

    /// Bytes written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Flushes and returns the inner writer, the digests and the check
    /// given to [`HashingWriter::threaded`].
    pub fn finish(mut self) -> io::Result<(W, Digests, Option<StreamCheck>)> {
        let mut check = None;
        if let Some(mut thread) = self.thread.take() {
            self.inner.write_all(&thread.batch)?;
            thread.send_batch()?;
            drop(thread.full);
            let (hashers, fed) = thread
                .handle
                .join()
                .map_err(|_| io::Error::other("the hashing thread panicked"))?;
            self.md5 = hashers.md5;
            self.sha256 = hashers.sha256;
            check = fed;
        }
        self.inner.flush()?;
        let digests = Digests {
            count: self.count,
            md5: self.md5.map(|h| h.finalize().into()),
            sha256: self.sha256.map(|h| h.finalize().into()),
        };
        Ok((self.inner, digests, check))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(thread) = &mut self.thread {
            // The batch is the one copy: it is written out whole (a `BufWriter`
            // of at most `BATCH` passes it through), then hashed on the thread.
            // It never grows past `BATCH`, whatever the size of a write.
            let n = buf.len().min(BATCH - thread.batch.len());
            thread.batch.extend_from_slice(&buf[..n]);
            if thread.batch.len() == BATCH {
                self.inner.write_all(&thread.batch)?;
                thread.send_batch()?;
            }
            self.count += n as u64;
            return Ok(n);
        }
        let n = self.inner.write(buf)?;
        if let Some(h) = &mut self.md5 {
            h.update(&buf[..n]);
        }
        if let Some(h) = &mut self.sha256 {
            h.update(&buf[..n]);
        }
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(thread) = &mut self.thread {
            if !thread.batch.is_empty() {
                self.inner.write_all(&thread.batch)?;
                thread.send_batch()?;
            }
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small and large writes, across several batches: the inner writer gets
    /// every byte in order, the thread's digest is the one-shot digest, and
    /// a check handed to the thread gets every byte too.
    #[test]
    fn the_threaded_writer_writes_and_hashes_every_byte_once() {
        for with_check in [false, true] {
            writes_and_hashes_every_byte_once(with_check);
        }
    }

    /// What an inner writer was given, write by write.
    #[derive(Default)]
    struct Writes(Vec<usize>, Vec<u8>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.len());
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Tar-sized writes reach the inner writer as whole batches (so a
    /// `BufWriter` there passes them through, uncopied), the rest at the end.
    #[test]
    fn the_threaded_writer_writes_whole_batches() {
        let data: Vec<u8> = (0..2 * BATCH + 3 * 512).map(|i| i as u8).collect();
        let mut w = HashingWriter::threaded(Writes::default(), PkgVersion::Sha256Tar, false, None);
        for piece in data.chunks(512) {
            w.write_all(piece).unwrap();
        }
        let (inner, digests, _) = w.finish().unwrap();
        assert_eq!(inner.0, [BATCH, BATCH, 3 * 512]);
        assert!(inner.1 == data);
        assert_eq!(digests.sha256, Some(Sha256::digest(&data).into()));
    }

    fn writes_and_hashes_every_byte_once(with_check: bool) {
        let data: Vec<u8> = (0..3 * BATCH + 12345)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let check = with_check.then(|| {
            let profile = neff_loader::RuntimeProfile::default();
            StreamCheck::new(&profile, &neff_loader::Limits::default())
        });
        let mut w = HashingWriter::threaded(Vec::new(), PkgVersion::Sha256Tar, false, check);
        let mut at = 0;
        for (i, size) in [512, 1, BATCH + 7, 4096, 512, 2 * BATCH]
            .iter()
            .cycle()
            .enumerate()
        {
            if at == data.len() {
                break;
            }
            let end = (at + size).min(data.len());
            w.write_all(&data[at..end]).unwrap();
            if i == 3 {
                w.flush().unwrap();
            }
            at = end;
        }
        assert_eq!(w.count(), data.len() as u64);
        let (written, digests, check) = w.finish().unwrap();
        assert!(written == data, "the bytes written differ");
        assert_eq!(
            check.map(|c| c.count()),
            with_check.then_some(data.len() as u64)
        );
        assert_eq!(digests.count, data.len() as u64);
        assert_eq!(digests.sha256, Some(Sha256::digest(&data).into()));
        assert_eq!(digests.md5, None);
    }
}
