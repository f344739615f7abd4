//! libarchive's filter bidding, repeated on each filter's output
//! (`archive_read.c`, `choose_filters`): after the gzip filter is chosen for
//! the payload, its output is bid on again, and again, up to
//! [`MAX_FILTERS`] filters; a gzip member inside gzip output (or a tar whose
//! first bytes are a gzip header) is decoded again before any tar reading.
//! The runtime enables only the gzip filter, so gzip is the only bidder.

use std::io::{self, BufRead, Read};

use crate::gzip_reader::{looks_like_gzip, GzipErrorKind, GzipReader};

/// libarchive's `MAX_NUMBER_FILTERS`: the base reader and at most 24
/// decoding filters; a 25th is "Input requires too many filters for decoding".
pub const MAX_FILTERS: usize = 25;

/// How far a header may be looked at: libarchive gives up on an FNAME or
/// FCOMMENT once more than this is buffered without its NUL.
const MAX_TEXT: usize = 1024 * 1024;

/// `stream` (the first gzip filter's output) with every further gzip filter
/// libarchive's bidding would stack on it; `layers` counts the gzip filters
/// so far.
pub(crate) fn stack_gzip<'a>(
    stream: Box<dyn BufRead + 'a>,
) -> io::Result<(Box<dyn BufRead + 'a>, usize)> {
    let mut stream = stream;
    let mut layers = 1;
    loop {
        let mut peek = Peek::new(stream);
        if !peek.bids_gzip()? {
            return Ok((Box::new(peek), layers));
        }
        layers += 1;
        if layers >= MAX_FILTERS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                crate::gzip_reader::GzipError {
                    kind: GzipErrorKind::Corrupt,
                    offset: 0,
                    message: format!(
                        "Input requires too many filters for decoding: {layers} gzip layers (libarchive decodes at most {})",
                        MAX_FILTERS - 1
                    ),
                },
            ));
        }
        stream = Box::new(GzipReader::new(peek));
    }
}

/// How many gzip filters libarchive stacks on `payload`, which starts as
/// gzip: 1 unless its output bids as gzip again. Reads only as far as the
/// bids need.
pub fn gzip_layers<'a, R: BufRead + 'a>(payload: R) -> io::Result<usize> {
    let (_, layers) = stack_gzip(Box::new(GzipReader::new(payload)))?;
    Ok(layers)
}

/// A stream whose first bytes were read ahead to bid on, served again.
struct Peek<'a> {
    inner: Box<dyn BufRead + 'a>,
    head: Vec<u8>,
    at: usize,
}

impl<'a> Peek<'a> {
    fn new(inner: Box<dyn BufRead + 'a>) -> Self {
        Peek {
            inner,
            head: Vec::new(),
            at: 0,
        }
    }

    /// Whether the first `n` bytes are there (reading ahead as needed). A
    /// stream that fails here bids on nothing: the gzip reader keeps its
    /// failure, so the walk meets it at the same byte, as it would have
    /// without the bid.
    fn ahead(&mut self, n: usize) -> io::Result<bool> {
        while self.head.len() < n {
            let got = match self.inner.fill_buf() {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return Ok(false),
                Err(e) => return Err(e),
            };
            if got.is_empty() {
                return Ok(false);
            }
            let take = got.len().min(n - self.head.len());
            self.head.extend_from_slice(&got[..take]);
            self.inner.consume(take);
        }
        Ok(true)
    }

    /// libarchive's gzip bid (`peek_at_header`): `1f 8b 08`, no reserved
    /// flag, and the optional fields there: FEXTRA's length (not its
    /// bytes), FNAME and FCOMMENT up to their NUL, FHCRC's two bytes.
    fn bids_gzip(&mut self) -> io::Result<bool> {
        if !self.ahead(10)? || !looks_like_gzip(&self.head[..4]) {
            return Ok(false);
        }
        let flags = self.head[3];
        let mut len = 10;
        if flags & 0x04 != 0 {
            if !self.ahead(len + 2)? {
                return Ok(false);
            }
            len += 2 + usize::from(u16::from_le_bytes([self.head[len], self.head[len + 1]]));
        }
        for bit in [0x08, 0x10] {
            if flags & bit == 0 {
                continue;
            }
            loop {
                len += 1;
                if len > MAX_TEXT + 10 || !self.ahead(len)? {
                    return Ok(false);
                }
                if self.head[len - 1] == 0 {
                    break;
                }
            }
        }
        if flags & 0x02 != 0 && !self.ahead(len + 2)? {
            return Ok(false);
        }
        Ok(true)
    }
}

impl BufRead for Peek<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at < self.head.len() {
            return Ok(&self.head[self.at..]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        if self.at < self.head.len() {
            self.at += amount;
            if self.at >= self.head.len() {
                let past = self.at - self.head.len();
                (self.head, self.at) = (Vec::new(), 0);
                self.inner.consume(past);
            }
        } else {
            self.inner.consume(amount);
        }
    }
}

impl Read for Peek<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let got = self.fill_buf()?;
        let n = got.len().min(out.len());
        out[..n].copy_from_slice(&got[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decoded(data: &[u8]) -> io::Result<(Vec<u8>, usize)> {
        let first: Box<dyn BufRead> = Box::new(GzipReader::new(data));
        let (mut stream, layers) = stack_gzip(first)?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out)?;
        Ok((out, layers))
    }

    #[test]
    fn gzip_inside_gzip_is_decoded_again_up_to_libarchives_limit() {
        let mut data = b"the tar".to_vec();
        for _ in 0..24 {
            data = gz(&data);
        }
        assert_eq!(decoded(&data).unwrap(), (b"the tar".to_vec(), 24));
        let err = decoded(&gz(&data)).unwrap_err();
        assert!(err.to_string().contains("too many filters"), "{err}");
    }

    #[test]
    fn output_that_only_starts_like_gzip_is_bid_on_as_libarchive_bids() {
        // A header cut short: no bid, the bytes are read as they are.
        let short = gz(b"\x1f\x8b\x08\x08\0\0\0\0\0\x03name-without-its-nul");
        assert_eq!(decoded(&short).unwrap().1, 1);
        // A whole 10-byte header with deflate data that is not: the bid
        // wins and the inflate fails, as libarchive's does.
        let mut tar = b"\x1f\x8b\x08\0\0\0\0\0\0\x03".to_vec();
        tar.extend_from_slice(&[0xffu8; 600]);
        let err = decoded(&gz(&tar)).unwrap_err();
        assert!(
            err.to_string().contains("gzip decompression failed"),
            "{err}"
        );
    }
}
