//! A gzip reader that behaves like libarchive's gzip filter (spec §3.2):
//! it parses the RFC-1952 framing itself, inflates raw deflate, checks each
//! member's CRC-32 and ISIZE, follows concatenated members, and ends quietly at
//! bytes that do not start another member.

use std::cell::Cell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// True when `prefix` starts like a gzip member libarchive would bid on:
/// `1f 8b`, CM 8, and no reserved flag bits.
pub fn looks_like_gzip(prefix: &[u8]) -> bool {
    prefix.len() >= 4
        && prefix[0] == 0x1f
        && prefix[1] == 0x8b
        && prefix[2] == 8
        && prefix[3] & 0xE0 == 0
}

/// Where the complete gzip members of a stream end, shared with whoever made
/// the reader (which may have been boxed away as a plain `Read` since).
#[derive(Debug, Clone, Default)]
pub struct MemberTally(Rc<Cell<(u64, u64)>>);

impl MemberTally {
    /// How many complete members (trailer checked) have been read.
    pub fn members(&self) -> u64 {
        self.0.get().0
    }

    /// Compressed offset just past the last complete member's trailer (0 when
    /// none is complete): the gzip data's length, what follows is not gzip.
    pub fn end(&self) -> u64 {
        self.0.get().1
    }
}

/// Bytes inflated ahead of small reads (tar headers, padding, small
/// members), so inflate runs in long calls on its fast path.
const AHEAD: usize = 64 * 1024;

/// Inflates a gzip stream (one or more members).
///
/// Reads shorter than [`AHEAD`] are served from bytes inflated ahead. The
/// caller still sees exactly the bytes that inflate before any failure,
/// then the failure: an error met while inflating ahead is kept until the
/// bytes before it are read.
pub struct GzipReader<R> {
    inner: R,
    inflate: Decompress,
    crc: Crc,
    state: State,
    members: u64,
    compressed_offset: u64,
    tally: Option<MemberTally>,
    /// Inflated bytes not read yet: `ahead[at..len]`.
    ahead: Vec<u8>,
    at: usize,
    len: usize,
    /// The failure met right after the bytes of `ahead` (or of the last
    /// direct read), reported on the next read.
    failed: Option<io::Error>,
}

impl<R> std::fmt::Debug for GzipReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzipReader")
            .field("members", &self.members)
            .field("compressed_offset", &self.compressed_offset)
            .finish_non_exhaustive()
    }
}

#[derive(PartialEq, Eq)]
enum State {
    Header,
    Body,
    Done,
}

/// What kind of gzip failure libarchive would report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GzipErrorKind {
    /// The input ends inside a member.
    Truncated,
    /// The bytes do not start a gzip member.
    NotGzip,
    /// The deflate data or the trailer is damaged.
    Corrupt,
}

impl GzipErrorKind {
    /// libarchive's short text for the failure (what the runtime's `%s` prints).
    pub fn libarchive_text(self) -> &'static str {
        match self {
            GzipErrorKind::Truncated => "truncated gzip input",
            GzipErrorKind::NotGzip => "not a gzip member",
            GzipErrorKind::Corrupt => "gzip decompression failed",
        }
    }
}

/// A gzip failure: its kind, the compressed offset and the whole message
/// (which says where). It travels inside the `io::Error` of [`Read`] and
/// becomes a [`crate::Error`] of kind [`crate::ErrorKind::Gzip`].
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct GzipError {
    pub(crate) kind: GzipErrorKind,
    pub(crate) offset: u64,
    pub(crate) message: String,
}

fn invalid(kind: GzipErrorKind, offset: u64, message: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        GzipError {
            kind,
            offset,
            message,
        },
    )
}

impl<R: BufRead> GzipReader<R> {
    /// Reads gzip data from `inner`. The first member's header is checked on the
    /// first read; errors there mean the data is not gzip.
    pub fn new(inner: R) -> Self {
        GzipReader {
            inner,
            inflate: Decompress::new(false),
            crc: Crc::new(),
            state: State::Header,
            members: 0,
            compressed_offset: 0,
            tally: None,
            ahead: Vec::new(),
            at: 0,
            len: 0,
            failed: None,
        }
    }

    /// Records every completed member in `tally` as the reader goes.
    pub fn with_tally(mut self, tally: MemberTally) -> Self {
        self.tally = Some(tally);
        self
    }

    fn read_byte(&mut self) -> io::Result<Option<u8>> {
        let mut b = [0u8; 1];
        match self.inner.read(&mut b)? {
            0 => Ok(None),
            _ => {
                self.compressed_offset += 1;
                Ok(Some(b[0]))
            }
        }
    }

    fn need_byte(&mut self, what: &str) -> io::Result<u8> {
        self.read_byte()?.ok_or_else(|| {
            invalid(
                GzipErrorKind::Truncated,
                self.compressed_offset,
                format!(
                    "truncated gzip input: stream ends in the {what} at compressed offset {}",
                    self.compressed_offset
                ),
            )
        })
    }

    /// Parses a member header. Returns false when the bytes do not start a
    /// member (only allowed after the first one, where libarchive stops).
    fn read_header(&mut self) -> io::Result<bool> {
        let start = self.compressed_offset;
        let first = self.members == 0;
        let mut fixed = [0u8; 10];
        for (i, slot) in fixed.iter_mut().enumerate() {
            match self.read_byte()? {
                Some(b) => *slot = b,
                None if !first && i == 0 => return Ok(false),
                None if !first => return Ok(false),
                None => {
                    return Err(invalid(
                        GzipErrorKind::Truncated,
                        start,
                        format!(
                        "truncated gzip input: {i} of 10 header bytes at compressed offset {start}"
                    ),
                    ))
                }
            }
        }
        if !looks_like_gzip(&fixed[..4]) {
            if !first {
                return Ok(false);
            }
            return Err(invalid(GzipErrorKind::NotGzip, start, format!(
                "not a gzip member at compressed offset {start}: starts {:02x} {:02x} {:02x} {:02x}",
                fixed[0], fixed[1], fixed[2], fixed[3]
            )));
        }
        let flags = fixed[3];
        if flags & 0x04 != 0 {
            let lo = self.need_byte("FEXTRA length")?;
            let hi = self.need_byte("FEXTRA length")?;
            for _ in 0..u16::from_le_bytes([lo, hi]) {
                self.need_byte("FEXTRA field")?;
            }
        }
        for (bit, what) in [(0x08, "file name"), (0x10, "comment")] {
            if flags & bit != 0 {
                while self.need_byte(what)? != 0 {}
            }
        }
        if flags & 0x02 != 0 {
            self.need_byte("header CRC")?;
            self.need_byte("header CRC")?;
        }
        Ok(true)
    }

    fn read_trailer(&mut self) -> io::Result<()> {
        let mut t = [0u8; 8];
        for slot in t.iter_mut() {
            *slot = self.need_byte("gzip trailer")?;
        }
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if crc != self.crc.sum() || isize != self.crc.amount() {
            return Err(invalid(GzipErrorKind::Corrupt, self.compressed_offset - 8, format!(
                "gzip decompression failed: trailer at compressed offset {} says CRC32 {crc:08x} ISIZE {isize}, data has CRC32 {:08x} ISIZE {}",
                self.compressed_offset - 8,
                self.crc.sum(),
                self.crc.amount()
            )));
        }
        Ok(())
    }
}

impl<R: BufRead> GzipReader<R> {
    /// Inflates the next bytes into `out` (not empty); `Ok(0)` at the end.
    /// A failure after some bytes were inflated returns those bytes and
    /// keeps the failure in `failed`.
    fn inflate_into(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.state {
                State::Done => return Ok(0),
                State::Header => {
                    if self.read_header()? {
                        self.inflate.reset(false);
                        self.crc.reset();
                        self.state = State::Body;
                    } else {
                        self.state = State::Done;
                    }
                }
                State::Body => {
                    let input = self.inner.fill_buf()?;
                    let at_eof = input.is_empty();
                    let (in_before, out_before) =
                        (self.inflate.total_in(), self.inflate.total_out());
                    let result = self.inflate.decompress(input, out, FlushDecompress::None);
                    // The totals count what inflate did, failure or not.
                    let consumed = (self.inflate.total_in() - in_before) as usize;
                    let produced = (self.inflate.total_out() - out_before) as usize;
                    self.inner.consume(consumed);
                    self.compressed_offset += consumed as u64;
                    self.crc.update(&out[..produced]);
                    let status = match result {
                        Ok(status) => status,
                        Err(e) => {
                            let failure = invalid(
                                GzipErrorKind::Corrupt,
                                self.compressed_offset,
                                format!(
                                    "gzip decompression failed at compressed offset {}: {e}",
                                    self.compressed_offset
                                ),
                            );
                            if produced == 0 {
                                return Err(failure);
                            }
                            self.failed = Some(failure);
                            return Ok(produced);
                        }
                    };
                    if status == Status::StreamEnd {
                        if let Err(failure) = self.read_trailer() {
                            if produced == 0 {
                                return Err(failure);
                            }
                            self.failed = Some(failure);
                            return Ok(produced);
                        }
                        self.members += 1;
                        if let Some(tally) = &self.tally {
                            tally.0.set((self.members, self.compressed_offset));
                        }
                        self.state = State::Header;
                    } else if produced == 0 && consumed == 0 {
                        let (kind, why) = if at_eof {
                            (
                                GzipErrorKind::Truncated,
                                "truncated gzip input: deflate stream ends early",
                            )
                        } else {
                            (
                                GzipErrorKind::Corrupt,
                                "gzip decompression failed: inflate made no progress",
                            )
                        };
                        return Err(invalid(
                            kind,
                            self.compressed_offset,
                            format!("{why} at compressed offset {}", self.compressed_offset),
                        ));
                    }
                    if produced > 0 {
                        return Ok(produced);
                    }
                }
            }
        }
    }

    /// Refills `ahead` (empty) with up to [`AHEAD`] bytes, stopping early at
    /// the end or at a failure (kept in `failed` when bytes came first).
    fn fill_ahead(&mut self) -> io::Result<()> {
        let mut ahead = std::mem::take(&mut self.ahead);
        ahead.resize(AHEAD, 0);
        let mut len = 0;
        let result = loop {
            if len == AHEAD || self.failed.is_some() {
                break Ok(());
            }
            match self.inflate_into(&mut ahead[len..]) {
                Ok(0) => break Ok(()),
                Ok(n) => len += n,
                Err(failure) if len > 0 => {
                    self.failed = Some(failure);
                    break Ok(());
                }
                Err(failure) => break Err(failure),
            }
        };
        self.ahead = ahead;
        (self.at, self.len) = (0, len);
        result
    }
}

impl<R: BufRead> Read for GzipReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.at == self.len {
            if let Some(failure) = self.failed.take() {
                return Err(failure);
            }
            if out.len() >= AHEAD {
                return self.inflate_into(out);
            }
            self.fill_ahead()?;
        }
        let n = out.len().min(self.len - self.at);
        out[..n].copy_from_slice(&self.ahead[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::new(6));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn inflate(data: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzipReader::new(data).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn reads_members_and_ignores_trailing_garbage() {
        let mut data = gz(b"hello ");
        data.extend(gz(b"world"));
        data.extend_from_slice(b"garbage after the last member");
        assert_eq!(inflate(&data).unwrap(), b"hello world");
    }

    #[test]
    fn reads_optional_header_fields() {
        let mut e = flate2::GzBuilder::new()
            .filename("f.tar")
            .comment("c")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), Compression::fast());
        e.write_all(b"payload").unwrap();
        assert_eq!(inflate(&e.finish().unwrap()).unwrap(), b"payload");
    }

    #[test]
    fn tally_records_where_the_members_end() {
        let mut data = gz(b"hello ");
        let first = data.len() as u64;
        data.extend(gz(b"world"));
        let end = data.len() as u64;
        data.extend_from_slice(&[0u8; 100]);
        let tally = MemberTally::default();
        let mut out = Vec::new();
        GzipReader::new(&data[..])
            .with_tally(tally.clone())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"hello world");
        assert_eq!((tally.members(), tally.end()), (2, end));
        assert!(first < end);
    }

    #[test]
    fn detects_corruption_and_truncation() {
        let data = gz(&vec![7u8; 10000]);
        let err = inflate(&data[..data.len() - 4]).unwrap_err().to_string();
        assert!(err.contains("truncated gzip input"), "{err}");
        let err = inflate(&data[..data.len() / 2]).unwrap_err().to_string();
        assert!(err.contains("truncated gzip input"), "{err}");
        let mut bad_crc = data.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        let err = inflate(&bad_crc).unwrap_err().to_string();
        assert!(err.contains("CRC32"), "{err}");
        let err = inflate(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff")
            .unwrap_err()
            .to_string();
        assert!(err.contains("gzip decompression failed"), "{err}");
        assert!(!looks_like_gzip(b"\x1f\x8b\x08\xe0"));
        assert!(looks_like_gzip(b"\x1f\x8b\x08\x00"));
    }

    /// Reads `data` `size` bytes at a time: what came before the first
    /// failure, and the failure.
    fn read_in(data: &[u8], size: usize) -> (Vec<u8>, Option<String>) {
        let mut reader = GzipReader::new(data);
        let (mut out, mut buf) = (Vec::new(), vec![0u8; size]);
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn reads_of_any_size_see_the_same_bytes_then_the_same_failure() {
        let text: Vec<u8> = (0..400_000u32)
            .map(|i| b"tensor weights, "[(i.wrapping_mul(2_654_435_761) >> 28) as usize])
            .collect();
        let good = gz(&text);
        let mut damaged = good.clone();
        let mid = damaged.len() * 3 / 5;
        damaged[mid..mid + 64].fill(0xff);
        let mut bad_crc = good.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        for data in [&good, &damaged, &bad_crc] {
            let whole = read_in(data, 1 << 20);
            for size in [1, 511, 4096, AHEAD - 1, AHEAD] {
                assert_eq!(read_in(data, size), whole, "reads of {size} bytes");
            }
        }
        // Damaged deflate data may inflate to other bytes before it fails.
        let (bytes, failure) = read_in(&damaged, 512);
        let failure = failure.unwrap_or_default();
        assert!(bytes.len() < text.len(), "{failure}");
        // The failure names where inflate stopped: at or past the damage.
        let offset: usize = failure
            .split("compressed offset ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or(0);
        assert!((mid..damaged.len()).contains(&offset), "{failure}");
        assert_eq!(read_in(&bad_crc, 512).0, text);
        assert_eq!(read_in(&good, 512), (text, None));
    }
}
