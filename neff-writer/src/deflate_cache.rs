//! A deflate cache for writing many near-identical NEFFs (a seed corpus made
//! from real files, each one change away from its source).
//!
//! With a [`DeflateCache`] in [`PackOptions`](crate::PackOptions), a pkg 2
//! payload is cut into content-defined chunks (a gear rolling hash picks the
//! cut points, so an edit early in the tar moves no cut point after the next
//! one or two) and each chunk is deflated on its own by
//! [`ChunkDeflater`](crate::chunk_deflate) and joined by sync flushes. A chunk
//! already deflated by the same engine and level, in any earlier write, is
//! copied from the cache instead. The bytes depend only on the payload, the
//! engine and the level: a
//! hit gives what a miss would compute, whatever the order of writes.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use flate2::Crc;
use sha2::{Digest, Sha256};

use neff_schema::framing::Deflate;

use crate::chunk_deflate::ChunkDeflater;

/// No cut before this many bytes of a chunk.
const MIN_CHUNK: usize = 8 << 10;
/// A cut at the latest here.
const MAX_CHUNK: usize = 128 << 10;
/// A cut where the rolling hash has these bits clear: 32 KiB past
/// [`MIN_CHUNK`] on average. The top bits: they depend on the last 64 bytes,
/// the low ones only on the last few.
const CUT_MASK: u64 = !(u64::MAX >> 15);

/// Compressed bytes the default cache holds; chunks past it are deflated
/// each time.
const DEFAULT_CAPACITY: usize = 256 << 20;

/// The gear table: 256 fixed pseudo-random words (splitmix64 of the index).
const GEAR: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut z = (i as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        table[i] = z ^ (z >> 31);
        i += 1;
    }
    table
};

/// Deflated chunks by engine, level and SHA-256 of their bytes, shared by writes
/// (and threads).
#[derive(Debug)]
pub struct DeflateCache {
    chunks: Mutex<Chunks>,
}

#[derive(Debug, Default)]
struct Chunks {
    by_key: HashMap<(Deflate, [u8; 32]), Arc<[u8]>>,
    bytes: usize,
    capacity: usize,
}

impl Default for DeflateCache {
    fn default() -> Self {
        DeflateCache::with_capacity(DEFAULT_CAPACITY)
    }
}

impl DeflateCache {
    /// A cache holding at most `capacity` compressed bytes (256 MiB by
    /// default).
    pub fn with_capacity(capacity: usize) -> DeflateCache {
        DeflateCache {
            chunks: Mutex::new(Chunks {
                capacity,
                ..Chunks::default()
            }),
        }
    }

    /// Compressed bytes held.
    pub fn held_bytes(&self) -> usize {
        self.chunks.lock().map_or(0, |c| c.bytes)
    }

    fn get(&self, key: &(Deflate, [u8; 32])) -> Option<Arc<[u8]>> {
        self.chunks.lock().ok()?.by_key.get(key).cloned()
    }

    fn put(&self, key: (Deflate, [u8; 32]), deflated: Arc<[u8]>) {
        if let Ok(mut chunks) = self.chunks.lock() {
            if chunks.bytes + deflated.len() <= chunks.capacity {
                chunks.bytes += deflated.len();
                chunks.by_key.insert(key, deflated);
            }
        }
    }
}

/// One gzip member written through a [`DeflateCache`].
pub(crate) struct CachedGzipWriter<W: Write> {
    inner: W,
    cache: Arc<DeflateCache>,
    deflate: Deflate,
    deflater: ChunkDeflater,
    crc: Crc,
    pending: Vec<u8>,
    /// The rolling hash over `pending`'s bytes past [`MIN_CHUNK`].
    rolling: u64,
}

impl<W: Write> CachedGzipWriter<W> {
    /// Writes `header` (a complete gzip member header) and starts the member.
    pub(crate) fn new(
        mut inner: W,
        header: &[u8],
        deflate: Deflate,
        cache: Arc<DeflateCache>,
    ) -> io::Result<Self> {
        inner.write_all(header)?;
        Ok(CachedGzipWriter {
            inner,
            cache,
            deflate,
            deflater: ChunkDeflater::new(deflate),
            crc: Crc::new(),
            pending: Vec::with_capacity(MAX_CHUNK),
            rolling: 0,
        })
    }

    /// Deflates the pending chunk (through the cache) and writes it.
    fn emit(&mut self, last: bool) -> io::Result<()> {
        if self.pending.is_empty() {
            if last {
                self.inner.write_all(&self.deflater.deflate(&[], true))?;
            }
            return Ok(());
        }
        let key = (self.deflate, Sha256::digest(&self.pending).into());
        let deflated = match self.cache.get(&key) {
            Some(deflated) => deflated,
            None => {
                let deflated: Arc<[u8]> = self.deflater.deflate(&self.pending, false).into();
                self.cache.put(key, deflated.clone());
                deflated
            }
        };
        self.inner.write_all(&deflated)?;
        self.pending.clear();
        self.rolling = 0;
        if last {
            self.inner.write_all(&self.deflater.deflate(&[], true))?;
        }
        Ok(())
    }

    /// Ends the member: the last chunk, the final block and the CRC-32/ISIZE
    /// trailer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.emit(true)?;
        self.inner.write_all(&self.crc.sum().to_le_bytes())?;
        self.inner.write_all(&self.crc.amount().to_le_bytes())?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for CachedGzipWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut cut = None;
        for (i, &byte) in buf.iter().enumerate() {
            let len = self.pending.len() + i + 1;
            if len <= MIN_CHUNK {
                continue;
            }
            self.rolling = (self.rolling << 1).wrapping_add(GEAR[usize::from(byte)]);
            if self.rolling & CUT_MASK == 0 || len == MAX_CHUNK {
                cut = Some(i + 1);
                break;
            }
        }
        let taken = cut.unwrap_or(buf.len());
        self.crc.update(&buf[..taken]);
        self.pending.extend_from_slice(&buf[..taken]);
        if cut.is_some() {
            self.emit(false)?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        // A chunk ends only at a cut point, never at a caller's flush.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];

    pub(super) fn data(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Compressible: a few distinct bytes with runs.
                if i % 7 < 3 {
                    b'a'
                } else {
                    (state >> 61) as u8
                }
            })
            .collect()
    }

    /// zlib-rs at level 6, or libdeflate at level 1.
    fn engine(level: u32) -> Deflate {
        Deflate {
            engine: neff_schema::framing::DeflateEngine::ParallelLibdeflate,
            level: 1,
            mem_level: 8,
        }
        .with_level(level)
    }

    fn gzip(input: &[u8], cache: &Arc<DeflateCache>, split: usize) -> Vec<u8> {
        gzip_at(engine(6), input, cache, split)
    }

    fn gzip_at(deflate: Deflate, input: &[u8], cache: &Arc<DeflateCache>, split: usize) -> Vec<u8> {
        let mut w = CachedGzipWriter::new(Vec::new(), &HEADER, deflate, cache.clone()).unwrap();
        for piece in input.chunks(split) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn output_round_trips_and_does_not_depend_on_the_cache_or_write_sizes() {
        for level in [1, 6] {
            round_trips_whatever_the_cache_and_write_sizes(engine(level));
        }
    }

    fn round_trips_whatever_the_cache_and_write_sizes(deflate: Deflate) {
        let gzip = |input: &[u8], cache: &Arc<DeflateCache>, split: usize| {
            gzip_at(deflate, input, cache, split)
        };
        let input = data(1_500_000, 7);
        let cold = gzip(&input, &Arc::new(DeflateCache::default()), 4093);
        let warm_cache = Arc::new(DeflateCache::default());
        let first = gzip(&input, &warm_cache, 1 << 20);
        assert!(warm_cache.held_bytes() > 0);
        assert_eq!(first, cold);
        assert_eq!(gzip(&input, &warm_cache, 1), cold);
        // A cache warmed at another engine or level gives nothing.
        let other = if deflate.level == 1 {
            engine(6)
        } else {
            engine(1)
        };
        let shared = Arc::new(DeflateCache::default());
        gzip_at(other, &input, &shared, 1 << 16);
        assert_eq!(gzip(&input, &shared, 1 << 16), cold);
        let none = Arc::new(DeflateCache::with_capacity(0));
        assert_eq!(gzip(&input, &none, 333), cold);
        assert_eq!(none.held_bytes(), 0);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&cold[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, input);
        assert!(
            cold.len() < input.len() / 2,
            "{} of {}",
            cold.len(),
            input.len()
        );
    }

    #[test]
    fn an_early_insertion_leaves_later_chunks_to_the_cache() {
        let input = data(1_500_000, 9);
        let cache = Arc::new(DeflateCache::default());
        gzip(&input, &cache, 1 << 16);
        let held = cache.held_bytes();
        let mut edited = input.clone();
        edited.splice(1000..1000, b"inserted".iter().copied());
        let out = gzip(&edited, &cache, 1 << 16);
        // Only the chunks around the edit are new.
        let new = cache.held_bytes() - held;
        assert!(new * 8 < held, "{new} new bytes of {held}");
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, edited);
    }

    #[test]
    fn empty_input_is_a_valid_member() {
        let out = gzip(&[], &Arc::new(DeflateCache::default()), 1);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back.is_empty());
    }
}
