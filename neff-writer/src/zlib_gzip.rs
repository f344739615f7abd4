//! One gzip member deflated by classic zlib (bundled, built from source by
//! `libz-sys`): the exact deflate bytes the compilers' packagers write
//! (spec §11.2). Single-threaded; the output does not depend on how callers
//! split their writes.

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::{c_int, c_uint, c_void};
use std::io::{self, Write};
use std::ptr;

use flate2::Crc;
use libz_sys as z;

/// Output buffer size per `deflate` call.
const OUT_CHUNK: usize = 256 * 1024;

/// Allocation header: every zlib allocation remembers its size in front.
const ALIGN: usize = 16;

unsafe extern "C" fn zalloc(_opaque: *mut c_void, items: c_uint, size: c_uint) -> *mut c_void {
    let Some(bytes) = (items as usize)
        .checked_mul(size as usize)
        .and_then(|n| n.checked_add(ALIGN))
    else {
        return ptr::null_mut();
    };
    let Ok(layout) = Layout::from_size_align(bytes, ALIGN) else {
        return ptr::null_mut();
    };
    // SAFETY: `layout` has a non-zero size (at least ALIGN bytes).
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `base` is valid for `bytes >= ALIGN` bytes and aligned for usize.
    unsafe {
        (base as *mut usize).write(bytes);
        base.add(ALIGN) as *mut c_void
    }
}

unsafe extern "C" fn zfree(_opaque: *mut c_void, address: *mut c_void) {
    if address.is_null() {
        return;
    }
    // SAFETY: `address` came from `zalloc`, which stored the size ALIGN bytes before it.
    unsafe {
        let base = (address as *mut u8).sub(ALIGN);
        let bytes = (base as *const usize).read();
        dealloc(base, Layout::from_size_align_unchecked(bytes, ALIGN));
    }
}

/// A raw-deflate zlib stream (window 15, default strategy).
struct Deflater {
    // Boxed: zlib's state points back at the stream, so it must not move.
    stream: Box<z::z_stream>,
}

// SAFETY: the stream is owned exclusively and zlib keeps no thread-local state.
unsafe impl Send for Deflater {}

impl Deflater {
    fn new(level: u32, mem_level: u32) -> io::Result<Deflater> {
        if !(1..=9).contains(&level) || !(1..=9).contains(&mem_level) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("zlib level {level} / memLevel {mem_level}: both must be 1 to 9"),
            ));
        }
        let mut stream = Box::new(z::z_stream {
            next_in: ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: ptr::null_mut(),
            state: ptr::null_mut(),
            zalloc,
            zfree,
            opaque: ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        // SAFETY: `stream` is a fully initialised z_stream; the version string
        // and struct size are the ones libz-sys was built with.
        let rc = unsafe {
            z::deflateInit2_(
                &mut *stream,
                level as c_int,
                z::Z_DEFLATED,
                -15,
                mem_level as c_int,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            )
        };
        if rc != z::Z_OK {
            return Err(io::Error::other(format!("zlib deflateInit2 failed ({rc})")));
        }
        Ok(Deflater { stream })
    }

    /// Deflates `input` (all of it), appending output to `out`; with `finish`
    /// the stream is ended.
    fn run(&mut self, input: &[u8], finish: bool, out: &mut Vec<u8>) -> io::Result<()> {
        let flush = if finish { z::Z_FINISH } else { z::Z_NO_FLUSH };
        let mut pos = 0usize;
        loop {
            let take = (input.len() - pos).min(c_uint::MAX as usize);
            let start = out.len();
            out.resize(start + OUT_CHUNK, 0);
            let s = &mut *self.stream;
            s.next_in = input[pos..].as_ptr() as *mut u8;
            s.avail_in = take as c_uint;
            s.next_out = out[start..].as_mut_ptr();
            s.avail_out = OUT_CHUNK as c_uint;
            // SAFETY: next_in/next_out point into live buffers of the stated sizes.
            let rc = unsafe { z::deflate(s, flush) };
            let consumed = take - s.avail_in as usize;
            let produced = OUT_CHUNK - s.avail_out as usize;
            out.truncate(start + produced);
            pos += consumed;
            match rc {
                z::Z_STREAM_END => return Ok(()),
                z::Z_OK | z::Z_BUF_ERROR => {}
                rc => return Err(io::Error::other(format!("zlib deflate failed ({rc})"))),
            }
            let out_full = produced == OUT_CHUNK;
            if pos == input.len() && !out_full && !finish {
                return Ok(());
            }
            if rc == z::Z_BUF_ERROR && !out_full && consumed == 0 {
                return Err(io::Error::other("zlib deflate made no progress"));
            }
        }
    }
}

impl Drop for Deflater {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by deflateInit2_.
        unsafe {
            z::deflateEnd(&mut *self.stream);
        }
    }
}

/// Compresses everything written to it into one gzip member behind a given
/// gzip header, with classic zlib.
pub struct ZlibGzipWriter<W: Write> {
    inner: W,
    deflater: Deflater,
    crc: Crc,
    /// Input gathered into [`OUT_CHUNK`]-byte pieces, so small writes (tar
    /// headers) do not each cost a deflate call.
    pending: Vec<u8>,
    out: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for ZlibGzipWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZlibGzipWriter")
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write> ZlibGzipWriter<W> {
    /// Writes `header` (a complete gzip member header) and starts deflating
    /// at `level` with zlib's `mem_level`.
    pub fn new(mut inner: W, header: &[u8], level: u32, mem_level: u32) -> io::Result<Self> {
        let deflater = Deflater::new(level, mem_level)?;
        inner.write_all(header)?;
        Ok(ZlibGzipWriter {
            inner,
            deflater,
            crc: Crc::new(),
            pending: Vec::with_capacity(OUT_CHUNK),
            out: Vec::with_capacity(OUT_CHUNK),
        })
    }

    /// Deflates the pending input (ending the stream with `finish`).
    fn deflate_pending(&mut self, finish: bool) -> io::Result<()> {
        self.out.clear();
        self.deflater.run(&self.pending, finish, &mut self.out)?;
        self.pending.clear();
        self.inner.write_all(&self.out)
    }

    /// Ends the member: the final deflate block and the CRC-32/ISIZE trailer.
    pub fn finish(mut self) -> io::Result<W> {
        self.deflate_pending(true)?;
        self.inner.write_all(&self.crc.sum().to_le_bytes())?;
        self.inner.write_all(&self.crc.amount().to_le_bytes())?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ZlibGzipWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let take = buf.len().min(OUT_CHUNK - self.pending.len());
        self.crc.update(&buf[..take]);
        self.pending.extend_from_slice(&buf[..take]);
        if self.pending.len() == OUT_CHUNK {
            self.deflate_pending(false)?;
        }
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A zlib flush would change the stream; only `finish` ends it.
        Ok(())
    }
}

/// An incremental raw-deflate stream, for comparing candidate parameters
/// against an existing stream chunk by chunk.
pub struct ZlibStream(Deflater);

impl std::fmt::Debug for ZlibStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZlibStream").finish_non_exhaustive()
    }
}

impl ZlibStream {
    /// A stream at `level` and `mem_level`.
    pub fn new(level: u32, mem_level: u32) -> io::Result<ZlibStream> {
        Deflater::new(level, mem_level).map(ZlibStream)
    }

    /// Deflates `input`, appending output to `out` (`finish` ends the stream).
    pub fn push(&mut self, input: &[u8], finish: bool, out: &mut Vec<u8>) -> io::Result<()> {
        self.0.run(input, finish, out)
    }
}

#[cfg(test)]
mod tests {
    /// Raw-deflates `data` in one call (for tests and for matching a stream).
    fn deflate_raw(data: &[u8], level: u32, mem_level: u32) -> io::Result<Vec<u8>> {
        let mut d = Deflater::new(level, mem_level)?;
        let mut out = Vec::new();
        d.run(data, true, &mut out)?;
        Ok(out)
    }

    use super::*;
    use std::io::Read;

    #[test]
    fn output_is_a_valid_member_and_split_independent() {
        let data: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let header = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3];
        let gz = |split: usize| {
            let mut w = ZlibGzipWriter::new(Vec::new(), &header, 1, 8).unwrap();
            for piece in data.chunks(split) {
                w.write_all(piece).unwrap();
            }
            w.finish().unwrap()
        };
        let a = gz(1 << 20);
        assert_eq!(a, gz(4093));
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&a[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        assert_eq!(&a[10..a.len() - 8], &deflate_raw(&data, 1, 8).unwrap()[..]);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Deflater::new(0, 8).is_err());
        assert!(Deflater::new(1, 10).is_err());
    }
}
