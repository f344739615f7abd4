//! The 64 KiB blocks the payload reader works in, and its inflate state,
//! kept per thread for the next NEFF. A fresh block costs a 64 KiB zero
//! fill, and its `free` makes glibc consolidate its heap (a chunk of 64 KiB
//! or more); a fresh inflate state allocates and clears its window. For the
//! small NEFFs of a compile cache those were a sixth of `verify DIR`'s
//! instructions. Reused blocks are already initialised, and what they held
//! is overwritten before it is read; a reused inflate state is reset before
//! each gzip member, as a new one is.

use std::cell::RefCell;
use std::io::{self, BufRead, Read};

use flate2::Decompress;

/// The size of a block: libarchive's gzip output block (64 KiB), and the
/// read size of the stored bytes under it.
pub const BLOCK: usize = 64 * 1024;

/// Blocks kept per thread: a NEFF in flight uses two.
const KEPT: usize = 4;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static INFLATE: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// A raw-deflate inflate state: this thread's spare one, or a new one. The
/// caller resets it before each member.
pub fn take_inflate() -> Decompress {
    INFLATE
        .try_with(|spare| spare.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_else(|| Decompress::new(false))
}

/// Keeps `inflate` for this thread's next [`take_inflate`].
pub fn give_inflate(inflate: Decompress) {
    let _ = INFLATE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.is_none() {
            *spare = Some(inflate);
        }
    });
}

/// A `BLOCK`-byte buffer: a spare one of this thread, or a new one.
pub fn take() -> Vec<u8> {
    SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| vec![0; BLOCK])
}

/// Keeps `block` for this thread's next [`take`] (up to [`KEPT`]).
pub fn give(block: Vec<u8>) {
    if block.len() != BLOCK {
        return;
    }
    // During thread teardown the spare list may be gone: the block is freed.
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < KEPT {
            spare.push(block);
        }
    });
}

/// Reads `reader` to its end, handing each piece read to `each`; the bytes
/// read. As `io::copy` into a sink, through a pooled block instead of a
/// zero-filled stack buffer for every read (the reader is not `BufRead`).
pub fn drain(reader: &mut impl Read, mut each: impl FnMut(&[u8])) -> io::Result<u64> {
    let mut block = take();
    let mut total = 0u64;
    let result = loop {
        match reader.read(&mut block) {
            Ok(0) => break Ok(total),
            Ok(n) => {
                each(&block[..n]);
                total += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    give(block);
    result
}

/// `BufReader` over `inner` with a block from the pool (given back on
/// drop): the reads and refills are `BufReader`'s, one `inner.read` of up
/// to [`BLOCK`] bytes at a time, and a read of a block or more into an
/// empty buffer goes straight to `inner`.
pub struct BlockReader<R> {
    inner: R,
    block: Vec<u8>,
    at: usize,
    filled: usize,
}

impl<R: Read> BlockReader<R> {
    /// Reads `inner` through a pooled block.
    pub fn new(inner: R) -> Self {
        BlockReader {
            inner,
            block: take(),
            at: 0,
            filled: 0,
        }
    }
}

impl<R> Drop for BlockReader<R> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.block));
    }
}

impl<R: Read> Read for BlockReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.filled && out.len() >= self.block.len() {
            return self.inner.read(out);
        }
        let n = {
            let available = self.fill_buf()?;
            let n = out.len().min(available.len());
            out[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for BlockReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at == self.filled {
            self.filled = self.inner.read(&mut self.block)?;
            self.at = 0;
        }
        Ok(&self.block[self.at..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_to_the_thread_that_gave_them() {
        let first = take();
        let address = first.as_ptr();
        give(first);
        let again = take();
        assert_eq!(again.as_ptr(), address);
        assert_eq!(again.len(), BLOCK);
        // A buffer of another size is never kept.
        give(vec![0; 10]);
        give(again);
        assert_eq!(take().len(), BLOCK);
    }

    #[test]
    fn drain_sees_every_byte_once() {
        let data: Vec<u8> = (0..2 * BLOCK + 5).map(|i| (i % 13) as u8).collect();
        let mut seen = Vec::new();
        let n = drain(&mut &data[..], |piece| seen.extend_from_slice(piece)).unwrap();
        assert_eq!((n, seen), (data.len() as u64, data));
    }

    #[test]
    fn reads_as_bufreader_does() {
        let data: Vec<u8> = (0..3 * BLOCK + 123).map(|i| (i % 251) as u8).collect();
        for step in [1, 511, BLOCK - 1, BLOCK, 2 * BLOCK + 7] {
            let mut reader = BlockReader::new(&data[..]);
            let (mut out, mut buf) = (Vec::new(), vec![0u8; step]);
            loop {
                match reader.read(&mut buf).unwrap() {
                    0 => break,
                    n => out.extend_from_slice(&buf[..n]),
                }
            }
            assert_eq!(out, data, "step {step}");
        }
        let mut reader = BlockReader::new(&data[..]);
        assert_eq!(reader.fill_buf().unwrap().len(), BLOCK);
        reader.consume(BLOCK - 1);
        assert_eq!(reader.fill_buf().unwrap(), &data[BLOCK - 1..BLOCK]);
        reader.consume(5);
        assert_eq!(reader.fill_buf().unwrap()[0], data[BLOCK]);
    }
}
