//! The fast path of [`parse`](super::parse): a strict scanner over text held
//! in memory that makes the same [`Builder`] calls, in the same order, as
//! serde_json's walk through [`Seed`] does, so it builds the same document
//! without serde's per-value dispatch, and looks for repeated keys once per
//! object (sorted neighbours) instead of once per member.
//!
//! It only takes text that serde_json takes too, without repeated keys:
//! anything else (a syntax error, a limit of the [`Builder`], a repeated
//! key, nesting deeper than [`MAX_DEPTH`]) makes it give up, and the caller
//! parses the text again through serde_json, whose document, repeats,
//! verdict and messages are the ones reported. Numbers other than plain
//! unsigned integers, and strings with escapes, are read by serde_json from
//! their token alone.

use serde::de::DeserializeSeed;

use super::{Builder, Node, Seed};

/// Deeper than this the scanner gives up: simdjson's default maximum depth
/// (1024), which the runtime parses with. serde_json, the fallback, stops
/// at 128, so deeper text is taken only through this scanner; each level
/// costs two small stack frames.
pub(crate) const MAX_DEPTH: usize = 1024;

/// Longest integer taken without serde_json: 19 digits always fit a `u64`.
const FAST_DIGITS: usize = 19;

/// The scanner gave up: the text must be parsed by serde_json.
#[derive(Debug)]
pub(super) struct GiveUp;

/// Builds the document `bytes` holds into `b`, or gives up.
pub(super) fn scan(bytes: &[u8], b: &mut Builder) -> Result<(), GiveUp> {
    b.deferred = true;
    // UTF-8 is checked once for the whole text, not string by string: text
    // that is not UTF-8 is refused by serde_json either way (in a string)
    // or is no JSON at all (elsewhere).
    let text = std::str::from_utf8(bytes).map_err(|_| GiveUp)?;
    let mut s = Scanner { bytes, text, at: 0 };
    s.value(b, 0)?;
    s.skip_ws();
    if s.at == bytes.len() {
        Ok(())
    } else {
        Err(GiveUp)
    }
}

struct Scanner<'t> {
    bytes: &'t [u8],
    /// The same bytes, known to be UTF-8.
    text: &'t str,
    at: usize,
}

impl<'t> Scanner<'t> {
    /// Skips whitespace; the indentation of pretty-printed manifests (runs
    /// of spaces) eight bytes at a time.
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
            while self.bytes.get(self.at..self.at + 8) == Some(b"        ") {
                self.at += 8;
            }
        }
    }

    /// The next byte that is not whitespace, left unread.
    fn peek(&mut self) -> Result<u8, GiveUp> {
        self.skip_ws();
        self.bytes.get(self.at).copied().ok_or(GiveUp)
    }

    /// Reads `byte`, after any whitespace.
    fn expect(&mut self, byte: u8) -> Result<(), GiveUp> {
        if self.peek()? != byte {
            return Err(GiveUp);
        }
        self.at += 1;
        Ok(())
    }

    fn value(&mut self, b: &mut Builder, depth: usize) -> Result<(), GiveUp> {
        match self.peek()? {
            b'"' => {
                let text = self.string()?;
                b.push_str(&text).map(drop).map_err(|_| GiveUp)
            }
            b'{' if depth < MAX_DEPTH => self.object(b, depth + 1),
            b'[' if depth < MAX_DEPTH => self.array(b, depth + 1),
            b'n' => self.literal(b"null", Node::Null, b),
            b't' => self.literal(b"true", Node::Bool(true), b),
            b'f' => self.literal(b"false", Node::Bool(false), b),
            b'-' | b'0'..=b'9' => self.number(b),
            _ => Err(GiveUp),
        }
    }

    fn literal(&mut self, word: &[u8], node: Node, b: &mut Builder) -> Result<(), GiveUp> {
        if !self.bytes[self.at..].starts_with(word) {
            return Err(GiveUp);
        }
        self.at += word.len();
        b.push(node).map(drop).map_err(|_| GiveUp)
    }

    fn array(&mut self, b: &mut Builder, depth: usize) -> Result<(), GiveUp> {
        self.container(b, false, |s, b| {
            let pos = b.doc.nodes.len() as u32;
            s.value(b, depth)?;
            b.child(pos);
            Ok(())
        })
    }

    fn object(&mut self, b: &mut Builder, depth: usize) -> Result<(), GiveUp> {
        self.container(b, true, |s, b| {
            let mark = b.mark();
            if s.peek()? != b'"' {
                return Err(GiveUp);
            }
            let key = s.string()?;
            let pos = b.push_str(&key).map_err(|_| GiveUp)?;
            if let Some(frame) = b.frames.last_mut() {
                frame.current = pos;
            }
            s.expect(b':')?;
            s.value(b, depth)?;
            b.member(mark);
            Ok(())
        })?;
        if b.repeated {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// The array or object whose bracket is under the cursor: opened in `b`,
    /// `item` read for each element or member, closed.
    fn container(
        &mut self,
        b: &mut Builder,
        object: bool,
        mut item: impl FnMut(&mut Self, &mut Builder) -> Result<(), GiveUp>,
    ) -> Result<(), GiveUp> {
        let close = if object { b'}' } else { b']' };
        self.at += 1;
        b.open(object).map_err(|_| GiveUp)?;
        if self.peek()? == close {
            self.at += 1;
        } else {
            loop {
                item(self, b)?;
                if !self.next_or_end(close)? {
                    break;
                }
            }
        }
        b.close();
        Ok(())
    }

    /// After an element or member: true at `,`, false at `close` (both read).
    fn next_or_end(&mut self, close: u8) -> Result<bool, GiveUp> {
        let byte = self.peek()?;
        self.at += 1;
        match byte {
            b',' => Ok(true),
            _ if byte == close => Ok(false),
            _ => Err(GiveUp),
        }
    }

    /// The string starting at the `"` under the cursor. Text without escapes
    /// is taken as is (no control character, as serde_json requires; the
    /// whole text is UTF-8); text with escapes is decoded by serde_json. Plain ASCII
    /// is skipped eight bytes at a time.
    fn string(&mut self) -> Result<std::borrow::Cow<'t, str>, GiveUp> {
        let start = self.at + 1;
        let mut end = start;
        let mut escaped = false;
        loop {
            end += plain_ascii_run(self.bytes.get(end..).unwrap_or_default());
            match *self.bytes.get(end).ok_or(GiveUp)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    end += 2;
                }
                0..=0x1F => return Err(GiveUp),
                _ => end += 1,
            }
        }
        self.at = end + 1;
        if escaped {
            return serde_json::from_slice::<String>(
                self.bytes.get(start - 1..=end).ok_or(GiveUp)?,
            )
            .map(Into::into)
            .map_err(|_| GiveUp);
        }
        // Both ends are next to a `"`: character boundaries.
        self.text.get(start..end).map(Into::into).ok_or(GiveUp)
    }

    /// A number: a plain unsigned integer of up to [`FAST_DIGITS`] digits
    /// directly, anything else (sign, fraction, exponent, more digits) read
    /// by serde_json from the token alone, so it is classified (unsigned,
    /// signed, float) and rounded exactly as serde_json does in place.
    fn number(&mut self, b: &mut Builder) -> Result<(), GiveUp> {
        let start = self.at;
        let digits = |s: &Self, from: usize| {
            s.bytes[from..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count()
        };
        let mut end = start + usize::from(self.bytes[start] == b'-');
        let whole = digits(self, end);
        if whole == 0 || (whole > 1 && self.bytes[end] == b'0') {
            return Err(GiveUp);
        }
        end += whole;
        if let Some(b'.') = self.bytes.get(end) {
            let frac = digits(self, end + 1);
            if frac == 0 {
                return Err(GiveUp);
            }
            end += 1 + frac;
        }
        if let Some(b'e' | b'E') = self.bytes.get(end) {
            end += 1;
            if let Some(b'+' | b'-') = self.bytes.get(end) {
                end += 1;
            }
            let exp = digits(self, end);
            if exp == 0 {
                return Err(GiveUp);
            }
            end += exp;
        }
        let token = &self.bytes[start..end];
        self.at = end;
        // Digits only (no sign, fraction or exponent), few enough for a u64.
        if end - start == whole && whole <= FAST_DIGITS {
            let value = token
                .iter()
                .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
            return b.push(Node::Uint(value)).map(drop).map_err(|_| GiveUp);
        }
        let mut de = serde_json::Deserializer::from_slice(token);
        Seed(b)
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|_| GiveUp)
    }
}

/// How many leading bytes of `bytes` are plain string text: ASCII, not a
/// control character, not `"` or `\\`. Whole 8-byte words are tested at
/// once (the lowest flagged byte of each test is exact), the tail byte by
/// byte.
fn plain_ascii_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut run = 0;
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for word in words {
        let w = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        let special = has_zero(w ^ (ONES * u64::from(b'"')))
            | has_zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
            | (w & HIGH);
        if special != 0 {
            return run + (special.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    run + tail
        .iter()
        .take_while(|&&b| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time statement of what [`plain_ascii_run`] counts.
    fn plain_run_by_bytes(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .take_while(|&&b| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\')
            .count()
    }

    #[test]
    fn the_word_at_a_time_run_stops_where_the_byte_at_a_time_one_does() {
        let specials = [b'"', b'\\', 0x00, 0x1F, 0x20, 0x7F, 0x80, 0xFF, b'a'];
        for len in 0..20 {
            for at in 0..len {
                for &special in &specials {
                    let mut text = vec![b'x'; len];
                    text[at] = special;
                    assert_eq!(
                        plain_ascii_run(&text),
                        plain_run_by_bytes(&text),
                        "{special:#04x} at {at} of {len}"
                    );
                }
            }
        }
    }
}
