//! A gzip reader that behaves like libarchive 3.8's gzip filter (the
//! runtime's reader): it parses the RFC-1952 framing itself and inflates
//! raw deflate into 64 KiB blocks, as libarchive does. A block is handed
//! over whole or not at all: a failure while one is produced (damaged
//! deflate data, input that ends inside a member or inside its 8-byte
//! trailer) loses the whole block, as it does in libarchive, whose reader
//! then fails wherever it needs a byte of it. The trailer's CRC-32 and ISIZE
//! are not checked (libarchive does not check them). Concatenated members
//! are followed; bytes that do not start a complete member header end the
//! stream quietly.

use std::cell::Cell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use flate2::{Decompress, FlushDecompress, Status};

use crate::block_pool::BLOCK;

/// Whether a header with FEXTRA set of which `read` bytes were read got its
/// 2-byte XLEN (the 10 fixed bytes and XLEN: 12).
fn header_has_xlen(flags: u8, read: u64) -> bool {
    flags & 0x04 != 0 && read >= 12
}

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
    /// How many complete members (trailer read) have been read.
    pub fn members(&self) -> u64 {
        self.0.get().0
    }

    /// Compressed offset just past the last complete member's trailer (0 when
    /// none is complete): the gzip data's length, what follows is not gzip.
    pub fn end(&self) -> u64 {
        self.0.get().1
    }
}

/// Inflates a gzip stream (one or more members) in libarchive's blocks.
pub struct GzipReader<R> {
    inner: R,
    /// The inflate state (this thread's spare one while the reader lives).
    inflate: Option<Decompress>,
    state: State,
    members: u64,
    compressed_offset: u64,
    tally: Option<MemberTally>,
    /// The current block: `block[at..len]` not read yet.
    block: Vec<u8>,
    at: usize,
    len: usize,
    /// The failure that lost a block; every later read fails with it.
    failed: Option<(GzipErrorKind, u64, String)>,
    /// The first member as stored, when asked for ([`GzipReader::recording_first_member`]).
    first: Option<FirstMember>,
    record_first: bool,
}

/// The longest gzip FNAME or FCOMMENT [`GzipReader::first_member`] keeps.
pub const MAX_RECORDED_TEXT: usize = 1 << 20;

/// A gzip member header's fields as stored (RFC 1952).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GzipMemberHeader {
    /// FLG.
    pub flags: u8,
    /// MTIME.
    pub mtime: u32,
    /// XFL.
    pub xfl: u8,
    /// OS.
    pub os: u8,
    /// The FEXTRA bytes (without their length).
    pub extra: Option<Vec<u8>>,
    /// FNAME without its NUL (`None` also when longer than [`MAX_RECORDED_TEXT`]).
    pub name: Option<Vec<u8>>,
    /// FCOMMENT without its NUL (`None` also when longer than [`MAX_RECORDED_TEXT`]).
    pub comment: Option<Vec<u8>>,
    /// The header's length in bytes.
    pub len: u64,
}

/// The first gzip member of a stream, as [`GzipReader::first_member`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstMember {
    /// Its header.
    pub header: GzipMemberHeader,
    /// The deflate data's length, once its end has been read.
    pub deflate_len: Option<u64>,
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
    /// The input ends inside a member or its trailer.
    Truncated,
    /// The bytes do not start a gzip member.
    NotGzip,
    /// The deflate data is damaged.
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
            inflate: Some(crate::block_pool::take_inflate()),
            state: State::Header,
            members: 0,
            compressed_offset: 0,
            tally: None,
            block: crate::block_pool::take(),
            at: 0,
            len: 0,
            failed: None,
            first: None,
            record_first: false,
        }
    }

    /// Keeps the first member's header fields and deflate length, for
    /// [`GzipReader::first_member`] (the framing recovery reads them so).
    pub fn recording_first_member(mut self) -> Self {
        self.record_first = true;
        self
    }

    /// The first member, when recorded and its header has been read.
    pub fn first_member(&self) -> Option<&FirstMember> {
        self.first.as_ref()
    }

    /// How many complete members (trailer read) have been read.
    pub fn members(&self) -> u64 {
        self.members
    }

    /// Compressed bytes consumed so far.
    pub fn compressed_offset(&self) -> u64 {
        self.compressed_offset
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

    /// Parses a member header. `Ok(false)` where libarchive's look at the
    /// next member fails (not gzip, or a header that does not end in the
    /// data): after the first member that ends the stream quietly; for the
    /// first it is an error.
    fn read_header(&mut self) -> io::Result<bool> {
        let start = self.compressed_offset;
        let first = self.members == 0;
        let not_a_member = |why: String| {
            if first {
                Err(invalid(GzipErrorKind::NotGzip, start, why))
            } else {
                Ok(false)
            }
        };
        let mut fixed = [0u8; 10];
        for (i, slot) in fixed.iter_mut().enumerate() {
            match self.read_byte()? {
                Some(b) => *slot = b,
                None if first => {
                    return Err(invalid(
                        GzipErrorKind::Truncated,
                        start,
                        format!(
                        "truncated gzip input: {i} of 10 header bytes at compressed offset {start}"
                    ),
                    ))
                }
                None => return Ok(false),
            }
        }
        if !looks_like_gzip(&fixed[..4]) {
            return not_a_member(format!(
                "not a gzip member at compressed offset {start}: starts {:02x} {:02x} {:02x} {:02x}",
                fixed[0], fixed[1], fixed[2], fixed[3]
            ));
        }
        let flags = fixed[3];
        // The optional fields' bytes, kept only for a recorded first member.
        let record = first && self.record_first;
        let take = |this: &mut Self, n: usize, kept: &mut Option<Vec<u8>>| -> io::Result<bool> {
            for _ in 0..n {
                match this.read_byte()? {
                    Some(b) => {
                        if let Some(kept) = kept {
                            kept.push(b);
                        }
                    }
                    None => return Ok(false),
                }
            }
            Ok(true)
        };
        let mut header = GzipMemberHeader {
            flags,
            mtime: u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]),
            xfl: fixed[8],
            os: fixed[9],
            ..GzipMemberHeader::default()
        };
        let mut complete = true;
        if flags & 0x04 != 0 {
            let (lo, hi) = (self.read_byte()?, self.read_byte()?);
            complete = match (lo, hi) {
                (Some(lo), Some(hi)) => {
                    let mut extra = record.then(Vec::new);
                    let done = take(self, usize::from(u16::from_le_bytes([lo, hi])), &mut extra)?;
                    header.extra = extra;
                    done
                }
                _ => false,
            };
        }
        for bit in [0x08, 0x10] {
            if complete && flags & bit != 0 {
                let mut text = record.then(Vec::new);
                complete = loop {
                    match self.read_byte()? {
                        Some(0) => break true,
                        Some(b) => {
                            if let Some(t) = &mut text {
                                t.push(b);
                                if t.len() > MAX_RECORDED_TEXT {
                                    text = None;
                                }
                            }
                        }
                        None => break false,
                    }
                };
                if bit == 0x08 {
                    header.name = text;
                } else {
                    header.comment = text;
                }
            }
        }
        if complete && flags & 0x02 != 0 {
            complete = take(self, 2, &mut None)?;
        }
        if !complete && flags & 0x1a == 0 && header_has_xlen(flags, self.compressed_offset - start)
        {
            // libarchive's header check asks for FEXTRA's length but not its
            // bytes: with no field after it, the header passes, and the
            // inflate that follows finds no input (`consume_header`).
            return Err(invalid(
                GzipErrorKind::Truncated,
                start,
                format!(
                    "truncated gzip input: FEXTRA of the member header at compressed offset {start} runs past the data"
                ),
            ));
        }
        if !complete {
            return not_a_member(format!(
                "truncated gzip input: the member header at compressed offset {start} does not end in the data"
            ));
        }
        if record {
            header.len = self.compressed_offset - start;
            self.first = Some(FirstMember {
                header,
                deflate_len: None,
            });
        }
        Ok(true)
    }

    /// Reads the 8-byte trailer (not checked: libarchive does not check it).
    fn read_trailer(&mut self) -> io::Result<()> {
        let start = self.compressed_offset;
        for _ in 0..8 {
            if self.read_byte()?.is_none() {
                return Err(invalid(
                    GzipErrorKind::Truncated,
                    start,
                    format!("Truncated gzip input: the 8-byte trailer at compressed offset {start} is cut short"),
                ));
            }
        }
        Ok(())
    }

    /// Produces the next block into `out` (`BLOCK` bytes): all of it, or
    /// fewer only at the end of the stream; an error loses the block.
    fn produce(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut produced = 0;
        while produced < out.len() {
            match self.state {
                State::Done => break,
                State::Header => {
                    if self.read_header()? {
                        state(&mut self.inflate).reset(false);
                        self.state = State::Body;
                    } else {
                        self.state = State::Done;
                    }
                }
                State::Body => {
                    let input = self.inner.fill_buf()?;
                    let at_eof = input.is_empty();
                    let inflate = state(&mut self.inflate);
                    let (in_before, out_before) = (inflate.total_in(), inflate.total_out());
                    let result =
                        inflate.decompress(input, &mut out[produced..], FlushDecompress::None);
                    let consumed = (inflate.total_in() - in_before) as usize;
                    let made = (inflate.total_out() - out_before) as usize;
                    self.inner.consume(consumed);
                    self.compressed_offset += consumed as u64;
                    produced += made;
                    match result {
                        Err(e) => {
                            return Err(invalid(
                                GzipErrorKind::Corrupt,
                                self.compressed_offset,
                                format!(
                                    "gzip decompression failed at compressed offset {}: {e}",
                                    self.compressed_offset
                                ),
                            ))
                        }
                        Ok(Status::StreamEnd) => {
                            if let (0, Some(first)) = (self.members, &mut self.first) {
                                first.deflate_len = Some(state(&mut self.inflate).total_in());
                            }
                            self.read_trailer()?;
                            self.members += 1;
                            if let Some(tally) = &self.tally {
                                tally.0.set((self.members, self.compressed_offset));
                            }
                            self.state = State::Header;
                        }
                        Ok(_) if made == 0 && consumed == 0 => {
                            let (kind, why) = if at_eof {
                                (
                                    GzipErrorKind::Truncated,
                                    "truncated gzip input: the deflate stream ends early",
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
                        Ok(_) => {}
                    }
                }
            }
        }
        Ok(produced)
    }

    /// [`GzipReader::produce`], remembering a failure for every later read.
    fn next_block(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some((kind, offset, message)) = &self.failed {
            return Err(invalid(*kind, *offset, message.clone()));
        }
        self.produce(out).inspect_err(|e| {
            if let Some(g) = e.get_ref().and_then(|g| g.downcast_ref::<GzipError>()) {
                self.failed = Some((g.kind, g.offset, g.message.clone()));
            }
        })
    }
}

/// The block and the inflate state go back to the thread's pool for the
/// next NEFF.
impl<R> Drop for GzipReader<R> {
    fn drop(&mut self) {
        crate::block_pool::give(std::mem::take(&mut self.block));
        if let Some(inflate) = self.inflate.take() {
            crate::block_pool::give_inflate(inflate);
        }
    }
}

/// The reader's inflate state (always there until the reader is dropped).
fn state(slot: &mut Option<Decompress>) -> &mut Decompress {
    slot.get_or_insert_with(|| Decompress::new(false))
}

/// The current block, inflated in libarchive's 64 KiB steps: a reader that
/// borrows it (as [`crate::TarReader`] does) copies nothing it skips.
impl<R: BufRead> BufRead for GzipReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at == self.len {
            let mut block = std::mem::take(&mut self.block);
            let made = self.next_block(&mut block);
            self.block = block;
            self.at = 0;
            self.len = made?;
        }
        Ok(&self.block[self.at..self.len])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.len);
    }
}

impl<R: BufRead> Read for GzipReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.at == self.len && out.len() >= BLOCK {
            // A whole block straight into the caller's buffer.
            return self.next_block(&mut out[..BLOCK]);
        }
        let block = self.fill_buf()?;
        let n = out.len().min(block.len());
        out[..n].copy_from_slice(&block[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::{BufRead, Write};

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

    /// A reader after one that failed mid-stream, or stopped half-way, on the
    /// same thread (so with the same pooled inflate state and blocks) reads as
    /// a fresh one: nothing of the earlier stream leaks into it.
    #[test]
    fn pooled_state_after_a_failure_reads_as_new() {
        let text: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 977).to_le_bytes())
            .collect();
        let good = gz(&text);
        let (cut, mut wrong) = (&good[..good.len() / 2], good.clone());
        // The stored-block type 3 does not exist: the first block fails.
        wrong[10] |= 0b110;
        for _ in 0..3 {
            assert!(inflate(cut).is_err());
            assert!(inflate(&wrong).is_err());
            let mut half = GzipReader::new(&good[..]);
            let mut some = vec![0u8; 100_000];
            half.read_exact(&mut some).unwrap();
            drop(half);
            assert_eq!(inflate(&good).unwrap(), text);
        }
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
        assert!(
            err.starts_with("Truncated gzip input: the 8-byte trailer"),
            "{err}"
        );
        let err = inflate(&data[..data.len() / 2]).unwrap_err().to_string();
        assert!(err.contains("truncated gzip input"), "{err}");
        // libarchive does not check the trailer's CRC-32 or ISIZE.
        let mut bad_crc = data.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        bad_crc[n - 1] ^= 1;
        assert_eq!(inflate(&bad_crc).unwrap(), vec![7u8; 10000]);
        let err = inflate(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff")
            .unwrap_err()
            .to_string();
        assert!(err.contains("gzip decompression failed"), "{err}");
        assert!(!looks_like_gzip(b"\x1f\x8b\x08\xe0"));
        assert!(looks_like_gzip(b"\x1f\x8b\x08\x00"));
    }

    #[test]
    fn a_trailing_header_ends_the_stream_or_fails_as_libarchive_decides() {
        let data = gz(&vec![7u8; 1000]);
        let with = |tail: &[u8]| inflate(&[&data[..], tail].concat());
        // Not a header libarchive bids on, or one whose FNAME, FCOMMENT or
        // FHCRC runs past the data: the stream ends quietly there.
        for tail in [
            &b"\x1f\x8b\x08"[..],
            b"\x1f\x8b\x08\x20\0\0\0\0\0\x03",
            b"\x1f\x8b\x08\x08\0\0\0\0\0\x03name",
            b"\x1f\x8b\x08\x0c\0\0\0\0\0\x03\x05\0ab",
            b"\x1f\x8b\x08\x04\0\0\0\0\0\x03\x05",
        ] {
            assert_eq!(with(tail).unwrap(), vec![7u8; 1000], "{tail:?}");
        }
        // FEXTRA alone whose bytes run past the data passes libarchive's
        // header check; the inflate after it finds no input.
        let err = with(b"\x1f\x8b\x08\x04\0\0\0\0\0\x03\x05\0ab").unwrap_err();
        assert!(
            err.to_string().contains("truncated gzip input: FEXTRA"),
            "{err}"
        );
        // So does a bare 10-byte header.
        let err = with(b"\x1f\x8b\x08\0\0\0\0\0\0\x03").unwrap_err();
        assert!(err.to_string().contains("truncated gzip input"), "{err}");
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

    /// Reads `data` through `BufRead`, consuming at most `step` bytes at a time.
    fn borrow_in(data: &[u8], step: usize) -> (Vec<u8>, Option<String>) {
        let mut reader = GzipReader::new(data);
        let mut out = Vec::new();
        loop {
            match reader.fill_buf() {
                Ok([]) => return (out, None),
                Ok(block) => {
                    let n = block.len().min(step);
                    out.extend_from_slice(&block[..n]);
                    reader.consume(n);
                }
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
            for size in [1, 511, 4096, BLOCK - 1, BLOCK] {
                assert_eq!(read_in(data, size), whole, "reads of {size} bytes");
                assert_eq!(borrow_in(data, size), whole, "borrows of {size} bytes");
            }
        }
        // A failure loses its whole 64 KiB block: what came before is whole
        // blocks. (Damaged deflate data may also end early and cleanly: with
        // no CRC check, libarchive then reads the shorter stream.)
        let (bytes, failure) = read_in(&damaged, 512);
        assert!(bytes.len() < text.len());
        if let Some(failure) = failure {
            assert_eq!(bytes.len() % BLOCK, 0, "{failure}");
            assert_eq!(bytes[..], text[..bytes.len()]);
            // The failure names where inflate stopped: at or past the damage.
            let offset: usize = failure
                .split("compressed offset ")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|digits| digits.parse().ok())
                .unwrap_or(0);
            assert!((mid..damaged.len()).contains(&offset), "{failure}");
        }
        // A cut trailer loses the last block.
        let (bytes, failure) = read_in(&good[..good.len() - 3], 512);
        assert!(failure.is_some_and(|f| f.contains("trailer")));
        assert_eq!(bytes.len(), text.len() / BLOCK * BLOCK);
        assert_eq!(read_in(&bad_crc, 512).0, text);
        assert_eq!(read_in(&good, 512), (text, None));
    }
}
