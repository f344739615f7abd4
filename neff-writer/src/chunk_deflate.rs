//! Deflates one chunk of the parallel gzip writer: a byte-aligned
//! run of deflate blocks that a later chunk can follow in the same stream.
//!
//! Two backends, as the framing's engine names: libdeflate on 32 KiB pieces
//! ([`DeflateEngine::ParallelLibdeflate`], level 1: see
//! [`crate::piece_deflate`]), and zlib-rs through flate2
//! ([`DeflateEngine::Parallel`], every level: on weight-like data it beats
//! classic zlib (pigz) in speed and size from level 2 up, and its level 1
//! (static Huffman codes only) grows weights by a third, so level 1 runs as
//! level 2). A chunk whose bytes look random (order-2 entropy near 8 bits a
//! byte, no repeats a deflate window apart) is written as stored blocks
//! without trying to compress it, and any chunk that deflate would grow is
//! stored instead. Every decision depends on the chunk's bytes alone
//! (integer arithmetic, no CPU-dependent path), and each chunk goes to the
//! compressor in one call, so the output never depends on thread count,
//! write sizes or machine.

use flate2::{Compress, Compression, FlushCompress, Status};
use neff_schema::framing::{Deflate, DeflateEngine};

use crate::piece_deflate::PieceDeflater;

/// The longest stored block deflate allows.
const STORED_MAX: usize = 65_535;

/// Bytes [`looks_random`] checks first (and the least it judges).
const SAMPLE: usize = 1 << 16;

/// Deflate's window: repeats further apart than this cannot be matched.
const WINDOW: usize = 32 * 1024;

/// One worker's compressor, reused for every chunk.
pub(crate) enum ChunkDeflater {
    /// zlib-rs, reset for every chunk.
    Zlib(Compress),
    /// libdeflate on pieces.
    Pieces(Box<PieceDeflater>),
}

impl std::fmt::Debug for ChunkDeflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkDeflater").finish_non_exhaustive()
    }
}

impl ChunkDeflater {
    /// The compressor `deflate` names: libdeflate for
    /// [`DeflateEngine::ParallelLibdeflate`], else zlib-rs at its level (1 to
    /// 9; 1 runs as 2, see the module doc).
    pub(crate) fn new(deflate: Deflate) -> ChunkDeflater {
        match deflate.engine {
            DeflateEngine::ParallelLibdeflate => {
                ChunkDeflater::Pieces(Box::new(PieceDeflater::new()))
            }
            DeflateEngine::Parallel | DeflateEngine::Zlib => ChunkDeflater::Zlib(Compress::new(
                Compression::new(deflate.level.clamp(2, 9)),
                false,
            )),
        }
    }

    /// Deflates `input` as one chunk: ends byte-aligned (a sync flush), or
    /// with the final block when `last`.
    pub(crate) fn deflate(&mut self, input: &[u8], last: bool) -> Vec<u8> {
        let mut out = Vec::new();
        self.deflate_into(input, last, &mut out);
        out
    }

    /// [`ChunkDeflater::deflate`] into `out`, cleared first (a buffer used
    /// again keeps its pages: no fresh memory per chunk).
    pub(crate) fn deflate_into(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) {
        if looks_random(input) {
            return stored(input, last, out);
        }
        let fits = match self {
            ChunkDeflater::Zlib(compress) => {
                compress.reset();
                compress_all(compress, input, last, out)
            }
            ChunkDeflater::Pieces(pieces) => {
                out.clear();
                pieces.deflate_into(input, last, out);
                true
            }
        };
        if !fits || out.len() > stored_len(input.len()) {
            stored(input, last, out);
        }
    }
}

/// Runs `compress` over all of `input` in one call sequence with one flush,
/// into `out` (cleared first); false if the compressor reports an error.
fn compress_all(compress: &mut Compress, input: &[u8], last: bool, out: &mut Vec<u8>) -> bool {
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    out.clear();
    out.reserve(stored_len(input.len()) + 256);
    let mut pos = 0;
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let before_in = compress.total_in();
        let before_out = out.len();
        let Ok(status) = compress.compress_vec(&input[pos..], out, flush) else {
            return false;
        };
        pos += (compress.total_in() - before_in) as usize;
        let all_in = pos == input.len();
        let room_left = out.len() < out.capacity();
        let finished = match status {
            Status::StreamEnd => true,
            // A sync flush is complete once all input is in and the output had room.
            _ if !last => all_in && room_left,
            // No progress with room to spare: nothing more will come.
            _ => all_in && room_left && out.len() == before_out,
        };
        if finished {
            return true;
        }
    }
}

/// Bytes that [`stored`] writes for `len` input bytes.
fn stored_len(len: usize) -> usize {
    len + 5 * len.div_ceil(STORED_MAX).max(1)
}

/// `input` as stored blocks into `out` (cleared first; byte-aligned: the
/// stream is aligned at every chunk start), the last one final when `last`.
fn stored(input: &[u8], last: bool, out: &mut Vec<u8>) {
    out.clear();
    append_stored(input, last, out);
}

/// [`stored`], appended to `out` (which must end byte-aligned); an empty
/// `input` gives one empty block.
pub(crate) fn append_stored(input: &[u8], last: bool, out: &mut Vec<u8>) {
    out.reserve(stored_len(input.len()));
    let blocks = input.len().div_ceil(STORED_MAX).max(1);
    for (i, block) in input
        .chunks(STORED_MAX)
        .chain(input.is_empty().then_some(&[][..]))
        .enumerate()
    {
        out.push(u8::from(last && i + 1 == blocks));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
}

/// True when deflate could gain next to nothing on `input`: its order-2
/// (collision) entropy is at least 7.99 bits a byte, which bounds what
/// Huffman coding saves below 0.13%, and no sampled 16-byte string repeats
/// within a deflate window.
fn looks_random(input: &[u8]) -> bool {
    // 2^-7.99 = 1.00696 / 256: the sum of squared byte counts is at most
    // 1.007 n² / 256 (random data: n² / 256 + n). The first 64 KiB, held to
    // 1.05 n² / 256, turn most compressible chunks away at a sixteenth of the cost.
    let flat = |bytes: &[u8], per_mille: u128| {
        let n = bytes.len() as u128;
        256 * 1000 * sum_of_squared_counts(bytes) <= per_mille * n * n
    };
    input.len() >= SAMPLE && flat(&input[..SAMPLE], 1050) && flat(input, 1007) && !repeats(input)
}

/// Σ count(b)² over the byte values b of `input`.
fn sum_of_squared_counts(input: &[u8]) -> u128 {
    // Four tables, so consecutive equal bytes do not serialise on one counter.
    let mut counts = [[0u64; 256]; 4];
    let mut words = input.chunks_exact(4);
    for w in &mut words {
        for (table, &b) in counts.iter_mut().zip(w) {
            table[usize::from(b)] += 1;
        }
    }
    for &b in words.remainder() {
        counts[0][usize::from(b)] += 1;
    }
    (0..256)
        .map(|b| u128::from(counts.iter().map(|t| t[b]).sum::<u64>()).pow(2))
        .sum()
}

/// True when a 16-byte string that starts at a zero byte occurs twice within
/// [`WINDOW`] bytes. Anchoring on content (not on offsets) finds repeats at
/// any distance; a repeat of a few hundred bytes or more holds an anchor.
fn repeats(input: &[u8]) -> bool {
    const SLOTS: usize = 1 << 12;
    const LEN: usize = 16;
    let mut last_seen = vec![usize::MAX; SLOTS];
    for (pos, _) in input.iter().enumerate().filter(|&(_, &b)| b == 0) {
        let Some(string) = input.get(pos..pos + LEN) else {
            break;
        };
        let mut key = [0u8; 8];
        key.copy_from_slice(&string[1..9]);
        let slot = (u64::from_le_bytes(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize;
        let before = last_seen[slot];
        if before != usize::MAX
            && pos - before <= WINDOW
            && input.get(before..before + LEN) == Some(string)
        {
            return true;
        }
        last_seen[slot] = pos;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    use crate::piece_deflate::tests::{weights, xorshift as random};

    /// zlib-rs at `level`.
    fn zlib_rs(level: u32) -> ChunkDeflater {
        ChunkDeflater::new(Deflate {
            engine: DeflateEngine::Parallel,
            level,
            mem_level: 8,
        })
    }

    /// libdeflate on pieces.
    fn libdeflate() -> ChunkDeflater {
        ChunkDeflater::new(Deflate {
            engine: DeflateEngine::ParallelLibdeflate,
            level: 1,
            mem_level: 8,
        })
    }

    fn inflate(deflate: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(deflate)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn random_chunks_are_stored_and_round_trip() {
        let data = random(1 << 20, 7);
        assert!(looks_random(&data));
        let out = zlib_rs(6).deflate(&data, true);
        assert_eq!(out.len(), stored_len(data.len()));
        assert_eq!(inflate(&out), data);
        assert_eq!(inflate(&zlib_rs(6).deflate(&[], true)), b"");
    }

    /// A buffer used again, whatever it held and however large it grew,
    /// gives the bytes a new one gives.
    #[test]
    fn a_reused_buffer_gives_the_same_bytes() {
        let mut text = Vec::new();
        for i in 0..40_000u32 {
            text.extend_from_slice(
                format!("{{\"id\": {i}, \"name\": \"t{}\"}},", i % 97).as_bytes(),
            );
        }
        let noise = random(300 << 10, 3);
        for new in [zlib_rs, |_| libdeflate()] {
            let mut deflater = new(1);
            let mut reused = vec![0xAA; 3 << 20];
            for (input, last) in [
                (&text[..], false),
                (&noise[..], false),
                (&text[..5000], true),
                (&[][..], true),
            ] {
                deflater.deflate_into(input, last, &mut reused);
                assert_eq!(reused, new(1).deflate(input, last));
            }
        }
    }

    #[test]
    fn random_bytes_with_near_repeats_are_compressed() {
        // 8 KiB of random bytes, repeated: entropy 8 bits, yet deflate halves it.
        let block = random(8 << 10, 9);
        let data: Vec<u8> = block.iter().copied().cycle().take(1 << 20).collect();
        assert!(!looks_random(&data));
        // libdeflate's 32 KiB pieces each start without a window: a quarter
        // of each is literals here.
        for (mut deflater, most) in [(zlib_rs(1), 20), (libdeflate(), 3)] {
            let out = deflater.deflate(&data, true);
            assert!(out.len() < data.len() / most, "{}", out.len());
            assert_eq!(inflate(&out), data);
        }
    }

    #[test]
    fn skewed_bytes_are_not_random() {
        let mut data = random(1 << 20, 11);
        for b in data.iter_mut().step_by(3) {
            *b &= 0x0f;
        }
        assert!(!looks_random(&data));
    }

    #[test]
    fn zlib_rs_level_one_is_not_static_huffman_only() {
        // Text-like bytes: zlib-rs' level 1 (static codes) would keep most of them.
        let data: Vec<u8> = random(1 << 18, 5)
            .iter()
            .map(|b| b"etaoin "[usize::from(b % 7)])
            .collect();
        let one = zlib_rs(1).deflate(&data, true);
        let two = zlib_rs(2).deflate(&data, true);
        assert_eq!(one, two);
        assert_eq!(inflate(&one), data);
    }

    #[test]
    fn libdeflate_is_no_larger_than_zlib_rs_on_text_and_weights() {
        let text: Vec<u8> = random(1 << 18, 5)
            .iter()
            .map(|b| b"etaoin "[usize::from(b % 7)])
            .collect();
        for data in [text, weights(1 << 18, 6)] {
            let ours = libdeflate().deflate(&data, false);
            let zlib = zlib_rs(1).deflate(&data, false);
            assert!(
                ours.len() <= zlib.len() * 21 / 20,
                "{} vs {}",
                ours.len(),
                zlib.len()
            );
            let mut whole = ours;
            whole.extend(libdeflate().deflate(&[], true));
            assert_eq!(inflate(&whole), data);
        }
    }
}
