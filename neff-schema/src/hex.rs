//! Lower-case hex encoding and decoding.

use crate::error::{Error, ErrorKind};

/// Encodes bytes as lower-case hex.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xF)] as char);
    }
    out
}

/// Decodes a hex string (either case) into bytes. A bad digit's error has
/// its character position as the offset.
pub fn decode(text: &str) -> Result<Vec<u8>, Error> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() % 2 != 0 {
        let message = format!("odd number of hex digits ({})", chars.len());
        return Err(Error::new(ErrorKind::BadHex, message));
    }
    let digit = |pos: usize| -> Result<u8, Error> {
        let ch = chars[pos];
        ch.to_digit(16).map(|d| d as u8).ok_or_else(|| {
            let message = format!("invalid hex digit {ch:?} at position {pos}");
            Error::new(ErrorKind::BadHex, message).at_offset(pos as u64)
        })
    };
    (0..chars.len() / 2)
        .map(|i| Ok((digit(2 * i)? << 4) | digit(2 * i + 1)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        assert_eq!(encode(&[0xAB, 0x01]), "ab01");
        assert_eq!(decode("AB01").unwrap(), vec![0xAB, 0x01]);
    }

    #[test]
    fn rejects_bad_input() {
        let odd = decode("abc").unwrap_err();
        assert_eq!(odd.kind(), ErrorKind::BadHex);
        assert_eq!(odd.to_string(), "odd number of hex digits (3)");
        let bad = decode("0z").unwrap_err();
        assert_eq!(bad.to_string(), "invalid hex digit 'z' at position 1");
        assert_eq!(bad.location().offset, Some(1));
    }
}
