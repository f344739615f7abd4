//! The streaming check: the loader's gates over payload bytes as they are
//! written, so a writer need not read its output back.
//!
//! The writer copies every stored payload byte into a [`StreamCheck`] (it is
//! a [`Write`]) as the byte goes to the file. The Tier-1 walk runs on its own
//! thread, fed through a bounded channel; it can never stall the writer: once
//! the walk stops (at a refusal or at the end of the archive) further bytes
//! are drained and dropped. When the file is finished, [`StreamCheck::finish`]
//! runs every gate exactly as [`crate::Loader::verify`] does — the same code —
//! on the header bytes, the real file size and the writer's own digest of the
//! stored bytes (computed once, as they were written: no second hash).

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::mem;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use neff_schema::{Arch, NeffHeader, PkgVersion};

use crate::container::{self, Limits, Walked};
use crate::digest::Digester;
use crate::profile::RuntimeProfile;
use crate::{Error, ErrorKind, Verdict};

/// Bytes gathered before a copy is handed to the walk thread: large enough
/// that the hand-offs cost little (64 KiB chunks made 16 wake-ups per MiB),
/// small enough that the walk has little left to do at the end.
const CHUNK: usize = 1 << 20;
/// Chunks in flight between the writer and the walk (the writer waits when
/// the walk is this far behind).
const IN_FLIGHT: usize = 4;

/// The digests the writer computed over the stored payload bytes it streamed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamedDigests {
    /// MD5 of the payload, when computed (pkg 2).
    pub md5: Option<[u8; 16]>,
    /// SHA-256 of the payload, when computed (pkg 1).
    pub sha256: Option<[u8; 32]>,
}

/// The loader's gates, fed with a payload as it is written. See the module docs.
#[derive(Debug)]
pub struct StreamCheck {
    profile: RuntimeProfile,
    buffer: Vec<u8>,
    count: u64,
    sender: Option<SyncSender<Vec<u8>>>,
    /// Chunks the walk has read, to be filled again.
    spare: Receiver<Vec<u8>>,
    walk: Option<JoinHandle<Walked>>,
}

impl StreamCheck {
    /// Starts the walk thread. `limits` are the walk's, as for
    /// [`crate::Loader::verify`].
    pub fn new(profile: &RuntimeProfile, limits: &Limits) -> StreamCheck {
        let (sender, receiver) = sync_channel(IN_FLIGHT);
        let (done, spare) = channel();
        let walk_limits = limits.clone();
        let walk = std::thread::Builder::new()
            .stack_size(crate::LOAD_STACK)
            .spawn(move || {
                let mut payload = ChannelReader {
                    receiver,
                    done,
                    chunk: Vec::new(),
                    at: 0,
                };
                let walked = Walked::run(&mut payload, &walk_limits);
                // Never leave the writer blocked on a walk that stopped early.
                for _ in payload.receiver.iter() {}
                walked
            })
            .expect("spawning the stream check's walk thread");
        StreamCheck {
            profile: profile.clone(),
            buffer: Vec::with_capacity(CHUNK),
            count: 0,
            sender: Some(sender),
            spare,
            walk: Some(walk),
        }
    }

    /// Payload bytes streamed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn send_buffer(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let next = self.spare_buffer();
        let chunk = mem::replace(&mut self.buffer, next);
        if let Some(sender) = &self.sender {
            // A walk thread that is gone (it panicked) shows in `finish`.
            let _ = sender.send(chunk);
        }
    }

    /// Streams `chunk` as [`Write::write`] would, handing it to the walk
    /// without a copy; returns an empty buffer to fill next (one the walk is
    /// done with, when there is one).
    pub fn write_owned(&mut self, chunk: Vec<u8>) -> Vec<u8> {
        self.count += chunk.len() as u64;
        self.send_buffer();
        let spare = self.spare_buffer();
        if let Some(sender) = &self.sender {
            // A walk thread that is gone (it panicked) shows in `finish`.
            let _ = sender.send(chunk);
        }
        spare
    }

    /// An empty buffer: one the walk has read, or a new one.
    fn spare_buffer(&self) -> Vec<u8> {
        match self.spare.try_recv() {
            Ok(mut spare) => {
                spare.clear();
                spare
            }
            Err(_) => Vec::with_capacity(CHUNK),
        }
    }

    /// Ends the stream and runs every gate on every architecture, as
    /// [`crate::Loader::verify`] would on the finished file. `header` is the
    /// header written; `source` is the finished file (its size is the real
    /// file size; manifests too large for the walk to keep, and the padding
    /// after the gzip data, are read from it); `digests` are the writer's
    /// digests of the streamed bytes.
    ///
    /// `Ok(None)` when the streamed bytes are not what the header frames (a
    /// `data_size` other than the bytes streamed) or the digest the header's
    /// `pkg_version` selects was not computed: the caller reads the file
    /// back instead.
    pub fn finish<R: Read + Seek>(
        mut self,
        header: &NeffHeader,
        mut source: R,
        digests: &StreamedDigests,
    ) -> Result<Option<Verdict>, Error> {
        self.send_buffer();
        self.sender = None;
        let walked = self
            .walk
            .take()
            .map(JoinHandle::join)
            .and_then(Result::ok)
            .ok_or_else(|| {
                Error::new(ErrorKind::Pipeline, "the streaming check's walk panicked")
            })?;
        if header.data_size() != self.count {
            return Ok(None);
        }
        let pkg = PkgVersion::from_value(header.pkg_version());
        let digest = match (Digester::for_payload(self.profile.verify_hash, pkg), pkg) {
            (Digester::Off, _) => None,
            (_, Some(PkgVersion::Md5Gzip)) => match digests.md5 {
                Some(d) => Some(d.to_vec()),
                None => return Ok(None),
            },
            (_, _) => match digests.sha256 {
                Some(d) => Some(d.to_vec()),
                None => return Ok(None),
            },
        };
        let file_size = source.seek(SeekFrom::End(0))?;
        let tier1 =
            container::run_streamed(header.clone(), file_size, walked, digest, &self.profile)?;
        let loads = crate::after_tier1(tier1, Some(source), &self.profile, &Arch::ALL)?;
        Ok(Some(Verdict::from_loads(loads)))
    }
}

impl Write for StreamCheck {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.count += buf.len() as u64;
        let mut rest = buf;
        while !rest.is_empty() {
            let room = CHUNK - self.buffer.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.buffer.extend_from_slice(now);
            rest = later;
            if self.buffer.len() == CHUNK {
                self.send_buffer();
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The walk's side of the channel: the chunks in order, then the end.
struct ChannelReader {
    receiver: Receiver<Vec<u8>>,
    /// Where read chunks go back to the writer.
    done: Sender<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.receiver.recv() {
                Ok(chunk) => {
                    let read = mem::replace(&mut self.chunk, chunk);
                    if read.capacity() > 0 {
                        // The writer may be gone (it ignores a closed channel).
                        let _ = self.done.send(read);
                    }
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn a_walk_refused_at_once_drains_the_rest_and_gives_the_read_backs_verdict() {
        // Not an archive: the walk refuses on the first block, and the
        // writer still streams 64 MiB without waiting on it.
        let payload = vec![0xA5u8; 64 << 20];
        let mut header = NeffHeader::default();
        header.set_pkg_version(2);
        header.set_header_size(neff_schema::HEADER_LEN as u64);
        header.set_data_size(payload.len() as u64);
        let mut file = header.as_bytes().to_vec();
        file.extend_from_slice(&payload);
        let profile = RuntimeProfile {
            verify_hash: false,
            ..RuntimeProfile::default()
        };
        let mut check = StreamCheck::new(&profile, &Limits::default());
        for piece in payload.chunks(1 << 20) {
            check.write_all(piece).unwrap();
        }
        assert_eq!(check.count(), payload.len() as u64);
        let digests = StreamedDigests::default();
        let streamed = check
            .finish(&header, Cursor::new(&file), &digests)
            .unwrap()
            .expect("the header frames the streamed bytes");
        let read_back = crate::Loader::new(&profile)
            .verify(Some(Cursor::new(&file)))
            .unwrap();
        assert_eq!(streamed.combined_report(), read_back.combined_report());
        assert_eq!(streamed.report().gate, Some(crate::Gate::G10));
    }

    #[test]
    fn a_header_framing_other_bytes_or_a_missing_digest_asks_for_a_read_back() {
        let mut header = NeffHeader::default();
        header.set_pkg_version(2);
        header.set_data_size(10);
        let file = Cursor::new(vec![0u8; 2048]);
        let mut check = StreamCheck::new(&RuntimeProfile::default(), &Limits::default());
        check.write_all(&[0u8; 9]).unwrap();
        let none = check.finish(&header, file.clone(), &StreamedDigests::default());
        assert!(none.unwrap().is_none(), "data_size 10, 9 bytes streamed");
        let mut check = StreamCheck::new(&RuntimeProfile::default(), &Limits::default());
        check.write_all(&[0u8; 10]).unwrap();
        let sha_only = StreamedDigests {
            md5: None,
            sha256: Some([0; 32]),
        };
        let none = check.finish(&header, file, &sha_only);
        assert!(none.unwrap().is_none(), "pkg 2 needs the MD5");
    }
}
