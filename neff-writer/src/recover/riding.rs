//! The framing recovery riding on another walk of the payload (an
//! unpack's): the tar framing is recorded from the entries that walk reads
//! and the rest from what its container check found, so the payload is
//! inflated once. What that walk does not tell (the payload's SHA-256, the
//! gzip member's header) and the deflate proof of a long stream's prefix
//! run on a thread beside it. Whatever the walk cannot tell exactly (a
//! payload it refused, several gzip members, a hash it did not check, a long
//! tail after the tar stream) falls back to [`recover_framing`]'s own walk,
//! so the result is always what that walk gives.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use neff_loader::walk::{self, EntrySink, StoredHeader};
use neff_loader::{Compression, Container, Entry};
use neff_schema::framing::{Deflate, FramingPreset};
use neff_schema::{NeffHeader, PkgVersion, HEADER_LEN};
use sha2::{Digest, Sha256};

use super::{
    conclude, find_deflate, member_framing, note_after_payload, recover_framing, recovery_error,
    DeflateProof, Recovered, Stored, TarEnd, TarRecorder, Walked,
};
use crate::error::Error;

/// Records how a NEFF is framed while another walk reads its entries: hand
/// it to that walk as its [`EntrySink`] (or beside its own sink), then
/// [`FramingRecorder::finish`] with the container the walk read. The result
/// is what [`recover_framing`] gives. Dropped without `finish` (the walk
/// was refused), it tells its thread beside the walk to stop, which then
/// ends at its next MiB and closes the file.
#[derive(Debug)]
pub struct FramingRecorder {
    path: PathBuf,
    proof: DeflateProof,
    tar: TarRecorder,
    headers: Vec<StoredHeader>,
    failed: bool,
    beside: Option<JoinHandle<io::Result<Beside>>>,
    /// Set when the recorder is gone: the thread beside stops reading.
    _stop: StopOnDrop,
}

/// A flag raised when it is dropped.
#[derive(Debug, Default)]
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What the thread beside the walk found.
#[derive(Debug)]
struct Beside {
    /// The payload's SHA-256 (pkg 2; pkg 1's digest is its SHA-256).
    sha256: Option<[u8; 32]>,
    /// The first gzip member's header, when the payload is gzip.
    gzip: Option<walk::GzipMemberHeader>,
    /// The deflate engine proven over the proof's prefix, when the stream is
    /// longer than that prefix whatever its exact end (`None`: not run).
    found: Option<Option<(Deflate, u64)>>,
}

impl FramingRecorder {
    /// Starts recording the framing of the NEFF at `path`, proving its
    /// deflate stream as far as `proof` says.
    pub fn start(path: &Path, proof: DeflateProof) -> FramingRecorder {
        let owned = path.to_path_buf();
        let stop = StopOnDrop::default();
        let stopped = Arc::clone(&stop.0);
        let beside = std::thread::Builder::new()
            .name("neff-framing".into())
            .spawn(move || beside_the_walk(&owned, proof, &stopped))
            .ok();
        FramingRecorder {
            path: path.to_path_buf(),
            proof,
            tar: TarRecorder::default(),
            headers: Vec::new(),
            failed: false,
            beside,
            _stop: stop,
        }
    }

    /// The recovered framing, from the entries recorded and the `container`
    /// the walk read (a complete, accepted walk of the same file).
    pub fn finish(self, container: &Container) -> Result<Recovered, Error> {
        let beside = self.beside.and_then(|t| t.join().ok()).and_then(Result::ok);
        let path = self.path.as_path();
        let fallback = || recover_framing(path, self.proof);
        if self.failed {
            return fallback();
        }
        let c = container;
        let (Some(beside), Some(digest), Some(tar_size), Some(end_offset)) =
            (beside, c.digest.clone(), c.tar_size, c.tar_end_offset)
        else {
            return fallback();
        };
        let (Some(tail_zero), Some(nonzero_padding), true) =
            (c.tar_tail_zero, c.tar_nonzero_padding, c.walk_complete)
        else {
            return fallback();
        };
        let header = container.header.clone();
        let fields = header.fields();
        let data_size = fields.data_size;
        let pkg = PkgVersion::from_value(fields.pkg_version);
        let mut notes = Vec::new();
        note_after_payload(container.file_size, data_size, &mut notes);
        let mut framing = FramingPreset::Gnu.framing();
        let end = TarEnd {
            end_offset,
            trailing: tar_size.saturating_sub(end_offset),
            trailing_zero: tail_zero,
            nonzero_padding,
        };
        let (deflate_at, sha256) = match (container.compression, pkg) {
            (Some(Compression::Gzip), Some(PkgVersion::Md5Gzip)) => {
                let (Some(1), Some(member_len), Some(gzip), Some(sha256)) = (
                    container.gzip_members,
                    container.gzip_member_size,
                    beside.gzip.as_ref(),
                    beside.sha256,
                ) else {
                    return fallback();
                };
                framing.tar = self.tar.finish(&end, &mut notes);
                let mut file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
                let padding = container
                    .padding(&mut file)
                    .map_err(|e| Error::from(e).at_path(path))?;
                let Some(padding) = padding else {
                    return fallback();
                };
                framing.gzip = member_framing(
                    gzip,
                    member_len,
                    padding.bytes,
                    padding.all_zero,
                    &mut notes,
                );
                let deflate_len = member_len.saturating_sub(gzip.len + 8);
                (Some((HEADER_LEN as u64 + gzip.len, deflate_len)), sha256)
            }
            (Some(Compression::None), Some(PkgVersion::Sha256Tar)) => {
                let Ok(sha256) = <[u8; 32]>::try_from(digest.as_slice()) else {
                    return fallback();
                };
                framing.tar = self.tar.finish(&end, &mut notes);
                (None, sha256)
            }
            _ => return fallback(),
        };
        // The proof beside the walk stands when the stream is longer than
        // the prefix it proved and it stopped inside the stream: then each
        // candidate was decided as with the true length.
        let early = match (self.proof, deflate_at, beside.found) {
            (DeflateProof::Prefix(n), Some((_, len)), Some(found)) if len > n => match found {
                Some((_, compared)) if compared >= len => None,
                found => Some(found),
            },
            _ => None,
        };
        let walked = Walked {
            header,
            notes,
            framing,
            deflate_at,
            digest,
            sha256,
        };
        conclude(walked, path, self.proof, early).map_err(|e| recovery_error(path, e))
    }
}

impl EntrySink for FramingRecorder {
    fn entry(&mut self, entry: &Entry) {
        if !self.failed && self.tar.entry(&self.headers, entry).is_err() {
            // The recovery's own walk says why.
            self.failed = true;
        }
    }

    fn data(&mut self, _: &[u8]) {}

    fn wants_skipped(&self) -> bool {
        false
    }

    fn wants_headers(&self) -> bool {
        true
    }

    fn headers(&mut self, headers: &[StoredHeader]) {
        self.headers.clear();
        self.headers.extend_from_slice(headers);
    }
}

/// Reads the payload of the NEFF at `path` raw: its SHA-256 (pkg 2), its
/// first gzip member's header, and the deflate engine proven over the
/// proof's prefix when the stream is surely longer. Ends with an error at
/// the next MiB read once `stopped` is set.
fn beside_the_walk(path: &Path, proof: DeflateProof, stopped: &AtomicBool) -> io::Result<Beside> {
    let mut file = File::open(path)?;
    let mut raw = [0u8; HEADER_LEN];
    file.read_exact(&mut raw)?;
    let fields = NeffHeader::from_bytes(raw).fields();
    let data_size = fields.data_size;
    let pkg = PkgVersion::from_value(fields.pkg_version);
    let mut payload = BufReader::with_capacity(1 << 20, file.take(data_size));
    let gzip = if walk::looks_like_gzip(io::BufRead::fill_buf(&mut payload)?) {
        let mut head = File::open(path)?;
        head.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        let mut reader = walk::GzipReader::new(BufReader::new(head)).recording_first_member();
        let mut one = [0u8; 1];
        reader
            .read(&mut one)
            .ok()
            .and_then(|_| reader.first_member().map(|f| f.header.clone()))
    } else {
        None
    };
    let found = match (&gzip, proof) {
        (Some(header), DeflateProof::Prefix(n)) if pkg == Some(PkgVersion::Md5Gzip) => {
            // At most the payload less the header and trailer: longer than
            // the prefix, or the proof runs again once the end is known.
            let upper = data_size.saturating_sub(header.len + 8);
            let mut notes = Vec::new();
            let framing = neff_schema::Framing {
                gzip: member_framing(header, 0, 0, true, &mut notes),
                ..FramingPreset::Gnu.framing()
            };
            let stored = Stored {
                path,
                offset: HEADER_LEN as u64 + header.len,
                len: upper,
                budget: n.min(upper),
                len_known: false,
            };
            // A comparison that reached the content's end is left to the
            // proof with the true length.
            (upper > n)
                .then(|| find_deflate(&stored, &framing).ok())
                .flatten()
        }
        _ => None,
    };
    let sha256 = match pkg {
        Some(PkgVersion::Sha256Tar) => None,
        _ => {
            let mut hasher = Sha256::new();
            loop {
                if stopped.load(Ordering::Relaxed) {
                    return Err(io::Error::other("the walk beside it was dropped"));
                }
                let chunk = io::BufRead::fill_buf(&mut payload)?;
                if chunk.is_empty() {
                    break;
                }
                hasher.update(chunk);
                let n = chunk.len();
                io::BufRead::consume(&mut payload, n);
            }
            Some(hasher.finalize().into())
        }
    };
    Ok(Beside {
        sha256,
        gzip,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_beside_stops_once_the_recorder_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.neff");
        super::super::tests::pack_text_members(&path);
        let proof = DeflateProof::DEFAULT;
        let read = beside_the_walk(&path, proof, &AtomicBool::new(false)).unwrap();
        assert!(read.sha256.is_some() && read.gzip.is_some());
        let stopped = beside_the_walk(&path, proof, &AtomicBool::new(true));
        assert!(stopped.is_err(), "read on after the stop");
        let stop = StopOnDrop::default();
        let flag = Arc::clone(&stop.0);
        drop(stop);
        assert!(flag.load(Ordering::Relaxed));
    }
}
