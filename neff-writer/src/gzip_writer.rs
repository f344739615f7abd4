//! A deterministic single-member gzip writer (spec §3.2).
//!
//! Header `1f 8b 08 00 00000000 00 03`: no flags, MTIME 0, XFL 0, OS 3 (Unix),
//! as in the runtime fixture. The deflate engine is fed fixed-size chunks
//! whose boundaries depend only on the content, never on how callers split
//! their writes (some backends' output depends on that; see perf-notes).

use std::io::{self, Write};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use neff_schema::framing::GzipFraming;

/// The fixed gzip member header this writer emits.
pub const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03];

/// The gzip member header a [`GzipFraming`] describes: `1f 8b 08`, FLG,
/// MTIME, XFL, OS, then FEXTRA and FNAME when present.
pub fn gzip_header(g: &GzipFraming) -> io::Result<Vec<u8>> {
    let mut flags = 0u8;
    let extra = match &g.fextra {
        Some(hex) => {
            flags |= 0x04;
            let bytes = neff_schema::hex::decode(hex).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("gzip fextra: {e}"))
            })?;
            if bytes.len() > usize::from(u16::MAX) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("gzip fextra of {} bytes is over 65535", bytes.len()),
                ));
            }
            Some(bytes)
        }
        None => None,
    };
    if let Some(name) = &g.fname {
        if name.as_bytes().contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "gzip fname holds a NUL byte",
            ));
        }
        flags |= 0x08;
    }
    let mut h = vec![0x1f, 0x8b, 0x08, flags];
    h.extend_from_slice(&g.mtime.to_le_bytes());
    h.push(g.xfl);
    h.push(g.os);
    if let Some(extra) = extra {
        h.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        h.extend_from_slice(&extra);
    }
    if let Some(name) = &g.fname {
        h.extend_from_slice(name.as_bytes());
        h.push(0);
    }
    Ok(h)
}

/// Input chunk size handed to the deflate engine.
pub const CHUNK: usize = 256 * 1024;

/// Compresses everything written to it into one gzip member.
pub struct GzipWriter<W: Write> {
    inner: W,
    compress: Compress,
    crc: Crc,
    chunk: Vec<u8>,
    out: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for GzipWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzipWriter")
            .field("chunk_len", &self.chunk.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write> GzipWriter<W> {
    /// Starts a member at compression `level` (1–9) and writes its header.
    pub fn new(mut inner: W, level: u32) -> io::Result<Self> {
        inner.write_all(&GZIP_HEADER)?;
        Ok(GzipWriter {
            inner,
            compress: Compress::new(Compression::new(level), false),
            crc: Crc::new(),
            chunk: Vec::with_capacity(CHUNK),
            out: Vec::with_capacity(CHUNK + CHUNK / 8),
        })
    }

    fn deflate_chunk(&mut self, flush: FlushCompress) -> io::Result<()> {
        let mut pos = 0;
        loop {
            self.out.clear();
            let before = self.compress.total_in();
            let status = self
                .compress
                .compress_vec(&self.chunk[pos..], &mut self.out, flush)
                .map_err(io::Error::other)?;
            pos += (self.compress.total_in() - before) as usize;
            self.inner.write_all(&self.out)?;
            let done = match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                _ => pos == self.chunk.len() && self.out.len() < self.out.capacity(),
            };
            if done {
                break;
            }
        }
        self.chunk.clear();
        Ok(())
    }

    /// Ends the member: flushes deflate and writes the CRC-32/ISIZE trailer.
    pub fn finish(mut self) -> io::Result<W> {
        self.deflate_chunk(FlushCompress::Finish)?;
        self.inner.write_all(&self.crc.sum().to_le_bytes())?;
        self.inner.write_all(&self.crc.amount().to_le_bytes())?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for GzipWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let take = buf.len().min(CHUNK - self.chunk.len());
        self.chunk.extend_from_slice(&buf[..take]);
        self.crc.update(&buf[..take]);
        if self.chunk.len() == CHUNK {
            self.deflate_chunk(FlushCompress::None)?;
        }
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A sync flush would change the output; chunks are only ever deflated whole.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gzip(data: &[u8], level: u32, split: usize) -> Vec<u8> {
        let mut w = GzipWriter::new(Vec::new(), level).unwrap();
        for piece in data.chunks(split) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn standard_readers_inflate_it() {
        let data: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let gz = gzip(&data, 1, 7777);
        assert_eq!(&gz[..10], &GZIP_HEADER);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn output_does_not_depend_on_write_sizes() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 31 % 97) as u8).collect();
        for level in [1, 6, 9] {
            let a = gzip(&data, level, 1 << 20);
            assert_eq!(a, gzip(&data, level, 4096), "level {level}");
            assert_eq!(a, gzip(&data, level, 100_003), "level {level}");
        }
    }

    #[test]
    fn empty_input_is_a_valid_member() {
        let gz = gzip(&[], 1, 1);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        assert!(out.is_empty());
    }
}
