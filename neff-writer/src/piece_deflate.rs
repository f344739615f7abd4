//! The level-1 engine of [`DeflateEngine::ParallelLibdeflate`]: libdeflate's
//! fastest compressor on fixed 32 KiB pieces, joined into one deflate stream.
//!
//! libdeflate compresses whole buffers only: each call ends its stream with
//! the final block and zero padding, and has no flush. A piece's output is
//! made joinable here, exactly and without decoding its symbols:
//! * libdeflate's fastest compressor (level 1) ends a block only at 65,535
//!   input bytes (stretched to the input's end within 5,000 more) or at 8,192
//!   matches. Its matches are 4 bytes or longer, so a 32 KiB piece is always
//!   one block, which starts at bit 0: its BFINAL bit is bit 0. (On
//!   weight-like data a 64 KiB piece holds more than 8,192 matches.)
//! * Where a Huffman block ends is found from its header alone: the block
//!   ends with the end-of-block code, and libdeflate pads with zero bits, so
//!   the stream's last set bit is the code's last set bit. The code is read
//!   from the block's header (the code lengths, as canonical Huffman codes
//!   are built); a code of all zeros (every static block's) cannot be placed
//!   this way, and such a piece (rare: small or odd data) is deflated by
//!   zlib-rs with a sync flush instead.
//! * The cleared BFINAL bit and an empty stored block right after the
//!   end-of-block code (a sync flush's marker: 4 or 5 bytes) leave the
//!   stream byte-aligned for the next piece.
//!
//! Every choice depends on the piece's bytes alone, and libdeflate's output
//! depends only on its input and version (pinned), so the bytes never depend
//! on thread count, write sizes or machine. Against 256 KiB pieces (which
//! libdeflate could not join), 32 KiB ones cost about 10% in speed and 3% in
//! size on weights.

use flate2::{Compress, Compression, FlushCompress, Status};
use libdeflater::{CompressionLvl, Compressor};

use crate::chunk_deflate::append_stored;

/// Input bytes per piece: at most 8,192 matches of 4 bytes or more, so
/// always one block (see the module doc).
pub(crate) const PIECE: usize = 32 << 10;

/// libdeflate's level 1: its fastest compressor (level 0 only stores).
const LEVEL_ONE: CompressionLvl = match CompressionLvl::new(1) {
    Ok(level) => level,
    Err(_) => panic!("libdeflate has no level 1"),
};

/// One worker's level-1 compressor, reused for every piece.
pub(crate) struct PieceDeflater {
    libdeflate: Compressor,
    /// libdeflate's output for one piece (room for its bound).
    scratch: Vec<u8>,
    /// zlib-rs at level 2 for the pieces libdeflate's output cannot be
    /// joined from (deterministic: one call per piece).
    fallback: Compress,
}

impl std::fmt::Debug for PieceDeflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PieceDeflater").finish_non_exhaustive()
    }
}

impl PieceDeflater {
    /// A level-1 compressor.
    pub(crate) fn new() -> PieceDeflater {
        let mut libdeflate = Compressor::new(LEVEL_ONE);
        let bound = libdeflate.deflate_compress_bound(PIECE);
        PieceDeflater {
            libdeflate,
            scratch: vec![0; bound],
            fallback: Compress::new(Compression::new(2), false),
        }
    }

    /// Appends `input` to `out` as byte-aligned deflate blocks, the last one
    /// final when `last` (an empty `input` then gives an empty final block).
    pub(crate) fn deflate_into(&mut self, input: &[u8], last: bool, out: &mut Vec<u8>) {
        if input.is_empty() {
            return append_stored(input, last, out);
        }
        let pieces = input.len().div_ceil(PIECE);
        for (i, piece) in input.chunks(PIECE).enumerate() {
            self.piece(piece, last && i + 1 == pieces, out);
        }
    }

    /// One piece: libdeflate's block joined, else zlib-rs.
    fn piece(&mut self, piece: &[u8], last: bool, out: &mut Vec<u8>) {
        if !self.joined(piece, last, out) {
            self.zlib(piece, last, out);
        }
    }

    /// Appends libdeflate's output for `piece` as a joinable run of blocks;
    /// false (nothing appended) when it is not one block that can be placed
    /// (the end of the stream may be any number of blocks).
    fn joined(&mut self, piece: &[u8], last: bool, out: &mut Vec<u8>) -> bool {
        let Ok(len) = self.libdeflate.deflate_compress(piece, &mut self.scratch) else {
            return false;
        };
        let stream = &self.scratch[..len];
        let Some(&first) = stream.first() else {
            return false;
        };
        if last {
            // The stream's end: whatever its blocks, it ends the stream.
            out.extend_from_slice(stream);
            return true;
        }
        // A stream of several blocks has a first block that is not final.
        if first & 1 == 0 {
            return false;
        }
        let glue: &[u8] = match (first >> 1) & 3 {
            // Stored: one block of the whole piece, byte-aligned at its end.
            0 if len == 5 + piece.len() => &[],
            2 => match end_of_dynamic_block(stream) {
                // The empty stored block's 3 header bits fit in the padding.
                Some(end) if len as u64 * 8 - end >= 3 => &[0, 0, 0xFF, 0xFF],
                Some(_) => &[0, 0, 0, 0xFF, 0xFF],
                None => return false,
            },
            _ => return false,
        };
        let start = out.len();
        out.extend_from_slice(stream);
        out[start] &= !1;
        out.extend_from_slice(glue);
        true
    }

    /// `piece` by zlib-rs, in one call: a sync flush, or the final block
    /// (stored, should zlib-rs report an error).
    fn zlib(&mut self, piece: &[u8], last: bool, out: &mut Vec<u8>) {
        let flush = if last {
            FlushCompress::Finish
        } else {
            FlushCompress::Sync
        };
        let start = out.len();
        self.fallback.reset();
        let mut pos = 0;
        loop {
            out.reserve(piece.len() / 2 + 4096);
            let before_in = self.fallback.total_in();
            let before_out = out.len();
            let status = self.fallback.compress_vec(&piece[pos..], out, flush);
            pos += (self.fallback.total_in() - before_in) as usize;
            let room_left = out.len() < out.capacity();
            let done = match status {
                Ok(Status::StreamEnd) => true,
                Ok(_) if !last => pos == piece.len() && room_left,
                Ok(_) => pos == piece.len() && room_left && out.len() == before_out,
                // zlib-rs reports errors only for misuse (a finished stream
                // written again), which `reset` rules out; stored all the same.
                Err(_) => {
                    out.truncate(start);
                    append_stored(piece, last, out);
                    true
                }
            };
            if done {
                return;
            }
        }
    }
}

/// Reads a deflate stream's bits, least significant first.
struct Bits<'a> {
    bytes: &'a [u8],
    pos: u64,
}

impl Bits<'_> {
    /// The next `n` (at most 16) bits as a number; `None` past the end.
    fn take(&mut self, n: u32) -> Option<u32> {
        let mut value = 0;
        for i in 0..n {
            value |= u32::from(bit(self.bytes, self.pos)?) << i;
            self.pos += 1;
        }
        Some(value)
    }
}

/// Bit `pos` of `bytes` (least significant first).
fn bit(bytes: &[u8], pos: u64) -> Option<u8> {
    let byte = bytes.get(usize::try_from(pos / 8).ok()?)?;
    Some((byte >> (pos % 8)) & 1)
}

/// The order the code-length code's lengths are stored in (RFC 1951 3.2.7).
const PRECODE_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The bit position just past the end-of-block code of `stream`, a stream of
/// one dynamic Huffman block written by libdeflate (zero padding after the
/// block); `None` when its header is malformed, the end-of-block code is all
/// zeros, or the bits at the place found are not that code.
fn end_of_dynamic_block(stream: &[u8]) -> Option<u64> {
    let mut bits = Bits {
        bytes: stream,
        pos: 3,
    };
    let litlen_count = bits.take(5)? as usize + 257;
    let offset_count = bits.take(5)? as usize + 1;
    let precode_count = bits.take(4)? as usize + 4;
    let mut precode_lens = [0u8; 19];
    for &sym in &PRECODE_ORDER[..precode_count] {
        precode_lens[sym] = bits.take(3)? as u8;
    }
    let precode = Canonical::new(&precode_lens)?;
    // The literal/length code's lengths (the offset code's follow; unneeded).
    let mut lens = Vec::with_capacity(litlen_count + offset_count);
    while lens.len() < litlen_count {
        let (repeat, value) = match precode.decode(&mut bits)? {
            len @ 0..=15 => (1, len as u8),
            16 => (3 + bits.take(2)?, *lens.last()?),
            17 => (3 + bits.take(3)?, 0),
            18 => (11 + bits.take(7)?, 0),
            _ => return None,
        };
        lens.extend(std::iter::repeat_n(value, repeat as usize));
    }
    let (code, len) = Canonical::new(&lens[..litlen_count])?.code(256)?;
    if code == 0 {
        return None;
    }
    // The stream's last set bit is the code's last set bit (codes go out
    // most significant bit first); its trailing zeros follow it.
    let last_set = stream.iter().rposition(|&b| b != 0)?;
    let high = 7 - stream[last_set].leading_zeros() as u64;
    let end = last_set as u64 * 8 + high + 1 + u64::from(code.trailing_zeros());
    let total = stream.len() as u64 * 8;
    if end > total || end + 8 <= total || end < u64::from(len) {
        return None;
    }
    let start = end - u64::from(len);
    let matches = (0..u64::from(len))
        .all(|i| bit(stream, start + i) == Some(((code >> (u64::from(len) - 1 - i)) & 1) as u8));
    matches.then_some(end)
}

/// A canonical Huffman code (RFC 1951 3.2.2) given by its code lengths.
struct Canonical<'a> {
    lens: &'a [u8],
    /// The first code of each length.
    first: [u32; 16],
}

impl<'a> Canonical<'a> {
    /// The code of `lens` (each 0 to 15); `None` when a length is over 15.
    fn new(lens: &'a [u8]) -> Option<Canonical<'a>> {
        let mut count = [0u32; 16];
        for &len in lens {
            *count.get_mut(usize::from(len))? += 1;
        }
        count[0] = 0;
        let mut first = [0u32; 16];
        let mut code = 0;
        for len in 1..16 {
            code = (code + count[len - 1]) << 1;
            first[len] = code;
        }
        Some(Canonical { lens, first })
    }

    /// Symbol `sym`'s code and length; `None` when it has none.
    fn code(&self, sym: usize) -> Option<(u32, u32)> {
        let len = *self.lens.get(sym)?;
        if len == 0 {
            return None;
        }
        let before = self.lens[..sym].iter().filter(|&&l| l == len).count() as u32;
        Some((self.first[usize::from(len)] + before, u32::from(len)))
    }

    /// Reads one symbol from `bits` (one bit at a time: the code-length
    /// code's symbols are a few hundred at most).
    fn decode(&self, bits: &mut Bits<'_>) -> Option<usize> {
        let mut code = 0;
        for len in 1..16u8 {
            code = (code << 1) | bits.take(1)?;
            let offset = code.checked_sub(self.first[usize::from(len)]);
            let mut index = 0;
            for (sym, &l) in self.lens.iter().enumerate() {
                if l == len {
                    if Some(index) == offset {
                        return Some(sym);
                    }
                    index += 1;
                }
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Read;

    /// xorshift64 bytes from `state` (non-zero).
    pub(crate) fn xorshift(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    /// Weight-like bytes: f32 values with their low 16 bits zero.
    pub(crate) fn weights(len: usize, seed: u64) -> Vec<u8> {
        let noise = xorshift(len.div_ceil(4) * 4, seed);
        noise
            .chunks(4)
            .flat_map(|c| [0, 0, c[0] & 0x7F, 0x3C | (c[1] & 1)])
            .take(len)
            .collect()
    }

    fn text(len: usize, seed: u64) -> Vec<u8> {
        let words = [
            "tensor",
            "shape",
            "dtype",
            "bf16",
            "\"name\": ",
            "[1, 2]",
            "\n",
        ];
        let noise = xorshift(len, seed);
        noise
            .iter()
            .flat_map(|&b| words[usize::from(b) % words.len()].bytes())
            .take(len)
            .collect()
    }

    fn inflate(deflate: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut decoder = flate2::read::DeflateDecoder::new(deflate);
        decoder.read_to_end(&mut out).unwrap();
        assert!(
            decoder.into_inner().is_empty(),
            "bytes after the final block"
        );
        out
    }

    /// `chunks` deflated in turn as one stream.
    fn stream(chunks: &[&[u8]]) -> Vec<u8> {
        let mut deflater = PieceDeflater::new();
        let mut out = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            deflater.deflate_into(chunk, i + 1 == chunks.len(), &mut out);
        }
        out
    }

    #[test]
    fn every_kind_of_data_and_size_inflates_to_its_input() {
        let zeros = vec![0u8; 300_000];
        let inputs: Vec<Vec<u8>> = vec![
            weights(1 << 20, 1),
            text(700_000, 2),
            xorshift(200_000, 3),
            zeros,
            text(40, 4),
            text(1000, 5),
            weights(PIECE, 6),
            weights(PIECE + 1, 7),
            b"a".to_vec(),
        ];
        for input in &inputs {
            // As one chunk, and as chunks of odd sizes.
            assert_eq!(&inflate(&stream(&[input])), input);
            let parts: Vec<&[u8]> = input.chunks(70_001).collect();
            let mut joined = parts.clone();
            joined.push(&[]);
            assert_eq!(&inflate(&stream(&joined)), input);
        }
        assert_eq!(inflate(&stream(&[&[]])), b"");
    }

    #[test]
    fn weight_pieces_are_joined_whole_with_both_forms_of_glue() {
        // The empty stored block's header in the padding (3+ bits of it), and
        // in a byte of its own; each checked by inflating the whole.
        let mut glue = [0usize; 2];
        let mut deflater = PieceDeflater::new();
        for seed in 0..40 {
            let piece = weights(PIECE, seed);
            let mut out = Vec::new();
            assert!(deflater.joined(&piece, false, &mut out), "seed {seed}");
            assert_eq!((out[0] >> 1) & 3, 2, "a dynamic block");
            glue[usize::from(out.ends_with(&[0, 0, 0, 0xFF, 0xFF]))] += 1;
            deflater.deflate_into(&[], true, &mut out);
            assert_eq!(inflate(&out), piece);
        }
        assert!(glue[0] > 0 && glue[1] > 0, "{glue:?}");
        let mut out = Vec::new();
        assert!(deflater.joined(&xorshift(PIECE - 100, 9), false, &mut out));
        assert_eq!((out[0] >> 1) & 3, 0, "random bytes are stored");
    }

    #[test]
    fn a_stream_of_several_blocks_is_refused_and_its_input_still_round_trips() {
        // A random byte, then "WXYZ": a literal and a 4-byte match every 5
        // bytes: 13,107 matches in 64 KiB, more than one block holds.
        let piece: Vec<u8> = xorshift(2 * PIECE / 5 + 1, 11)
            .into_iter()
            .flat_map(|r| [r, b'W', b'X', b'Y', b'Z'])
            .take(2 * PIECE)
            .collect();
        let mut deflater = PieceDeflater::new();
        let mut out = Vec::new();
        let joined = deflater.joined(&piece, false, &mut out);
        let out = stream(&[&piece, &[]]);
        assert_eq!(inflate(&out), piece);
        assert!(!joined, "a multi-block piece must be refused, not joined");
    }

    #[test]
    fn a_static_block_goes_to_zlib_rs() {
        // Short text: libdeflate picks static codes, whose end-of-block code
        // (seven zero bits) cannot be placed from the stream's last set bit.
        let mut deflater = PieceDeflater::new();
        let mut seen = 0;
        for len in (60..3000).step_by(37) {
            let piece = text(len, len as u64);
            let mut c = Compressor::new(LEVEL_ONE);
            let mut buf = vec![0; c.deflate_compress_bound(len)];
            let n = c.deflate_compress(&piece, &mut buf).unwrap();
            if n == 0 || (buf[0] >> 1) & 3 != 1 {
                continue;
            }
            seen += 1;
            let mut out = Vec::new();
            assert!(!deflater.joined(&piece, false, &mut out) && out.is_empty());
            let whole = stream(&[&piece, &piece, &[]]);
            assert_eq!(inflate(&whole), [&piece[..], &piece[..]].concat());
        }
        assert!(seen > 0, "no static block among the short texts");
    }

    #[test]
    fn the_end_of_block_code_is_placed_exactly() {
        // For a single block, the end found is the one a full decode finds:
        // the empty stored block placed there inflates.
        for seed in 0..20 {
            let piece = text(5000 + seed as usize * 997, seed);
            let mut c = Compressor::new(LEVEL_ONE);
            let mut buf = vec![0; c.deflate_compress_bound(piece.len())];
            let len = c.deflate_compress(&piece, &mut buf).unwrap();
            if (buf[0] >> 1) & 3 != 2 {
                continue;
            }
            let end = end_of_dynamic_block(&buf[..len]).unwrap();
            // Cut after `end`: the stream inflates to the piece with nothing
            // after, and the bits past `end` are the zero padding.
            assert!(len as u64 * 8 - end < 8);
            assert!((end..len as u64 * 8).all(|p| bit(&buf[..len], p) == Some(0)));
            assert_eq!(inflate(&buf[..len]), piece);
        }
    }

    #[test]
    fn random_mixtures_cut_anywhere_inflate_to_their_input() {
        // Runs, text, weights and noise in random lengths, cut into chunks of
        // random sizes: every piece's end is placed (or handed to zlib-rs)
        // so that the whole is one stream with nothing after it.
        let mut rng = 0x5EED_u64;
        let mut next = move |below: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % below as u64) as usize
        };
        for round in 0..60 {
            let mut data = Vec::new();
            for _ in 0..1 + next(6) {
                let len = next(40_000);
                let seed = next(1 << 20) as u64;
                match next(4) {
                    0 => data.extend(std::iter::repeat_n(next(256) as u8, len)),
                    1 => data.extend(text(len, seed)),
                    2 => data.extend(weights(len, seed)),
                    _ => data.extend(xorshift(len, seed)),
                }
            }
            let mut chunks = Vec::new();
            let mut rest = &data[..];
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(rest.len().min(1 + next(3 * PIECE)));
                chunks.push(chunk);
                rest = tail;
            }
            chunks.push(&[]);
            assert_eq!(inflate(&stream(&chunks)), data, "round {round}");
        }
    }

    #[test]
    fn the_same_input_gives_the_same_bytes_however_it_is_split_into_calls_of_whole_chunks() {
        let data = weights(600_000, 21);
        let once = stream(&[&data]);
        let mut deflater = PieceDeflater::new();
        let mut again = Vec::new();
        deflater.deflate_into(&data, true, &mut again);
        assert_eq!(once, again);
    }
}
