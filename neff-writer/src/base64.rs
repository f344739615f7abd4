//! Standard base64 (RFC 4648 §4), for blobs written inline in build specs.
//! Whitespace is ignored and the `=` padding is optional.

use crate::error::{Error, ErrorKind};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Padding in the middle, too much padding, or a dangling last character.
fn bad_length(why: &str) -> Error {
    Error::new(
        ErrorKind::Base64,
        format!("invalid base64 length or padding: {why}"),
    )
}

fn value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Decodes standard base64.
/// A character outside the alphabet has its byte offset in the error.
pub fn decode(text: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut symbols = 0usize;
    let mut padding = 0usize;
    for (offset, c) in text.char_indices() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == '=' {
            padding += 1;
            continue;
        }
        if padding > 0 {
            return Err(bad_length("data after '=' padding"));
        }
        let v = u8::try_from(c).ok().and_then(value).ok_or_else(|| {
            let message = format!("invalid base64 character {c:?} at offset {offset}");
            Error::new(ErrorKind::Base64, message).at_offset(offset as u64)
        })?;
        acc = (acc << 6) | v;
        bits += 6;
        symbols += 1;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    match symbols % 4 {
        1 => return Err(bad_length("a single character cannot end a group")),
        0 if padding > 0 => return Err(bad_length("padding after a full group")),
        rest if padding > 0 && rest + padding != 4 => {
            return Err(bad_length("wrong amount of '=' padding"))
        }
        _ => {}
    }
    Ok(out)
}

/// Encodes as standard base64 with padding.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
            assert_eq!(
                decode(coded.trim_end_matches('=')).unwrap(),
                plain.as_bytes()
            );
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert_eq!(decode("Zm9v\n YmFy").unwrap(), b"foobar");
    }

    #[test]
    fn errors_say_where() {
        let bang = decode("Zm9v!").unwrap_err();
        assert_eq!(bang.to_string(), "invalid base64 character '!' at offset 4");
        assert_eq!(bang.location().offset, Some(4));
        let accent = decode("Zé").unwrap_err();
        assert_eq!(accent.kind(), ErrorKind::Base64);
        assert_eq!(accent.location().offset, Some(1));
        assert!(decode("Z").is_err());
        assert!(decode("Zg=a").is_err());
        assert!(decode("Zg=").is_err());
        assert!(decode("Zm9v=").is_err());
        assert!(decode("Zm9===").is_err());
    }
}
