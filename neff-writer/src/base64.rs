//! Standard base64 (RFC 4648 §4), for blobs written inline in build specs.
//! Whitespace is ignored and the `=` padding is optional.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Why a text is not base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Base64Error {
    /// A character outside the alphabet (offset into the text).
    #[error("invalid base64 character {found:?} at offset {offset}")]
    BadChar {
        /// The character.
        found: char,
        /// Its byte offset.
        offset: usize,
    },
    /// Padding in the middle, too much padding, or a dangling last character.
    #[error("invalid base64 length or padding: {0}")]
    BadLength(&'static str),
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
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
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
            return Err(Base64Error::BadLength("data after '=' padding"));
        }
        let v = u8::try_from(c)
            .ok()
            .and_then(value)
            .ok_or(Base64Error::BadChar { found: c, offset })?;
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
        1 => {
            return Err(Base64Error::BadLength(
                "a single character cannot end a group",
            ))
        }
        0 if padding > 0 => return Err(Base64Error::BadLength("padding after a full group")),
        rest if padding > 0 && rest + padding != 4 => {
            return Err(Base64Error::BadLength("wrong amount of '=' padding"))
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
        assert_eq!(
            decode("Zm9v!"),
            Err(Base64Error::BadChar {
                found: '!',
                offset: 4
            })
        );
        assert_eq!(
            decode("Zé"),
            Err(Base64Error::BadChar {
                found: 'é',
                offset: 1
            })
        );
        assert!(decode("Z").is_err());
        assert!(decode("Zg=a").is_err());
        assert!(decode("Zg=").is_err());
        assert!(decode("Zm9v=").is_err());
        assert!(decode("Zm9===").is_err());
    }
}
