//! Lower-case hex encoding and decoding.

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

/// Why a hex string could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    /// The string has an odd number of digits.
    #[error("odd number of hex digits ({0})")]
    OddLength(usize),
    /// A character is not a hex digit.
    #[error("invalid hex digit {ch:?} at position {pos}")]
    BadDigit {
        /// The offending character.
        ch: char,
        /// Its character position in the string.
        pos: usize,
    },
}

/// Decodes a hex string (either case) into bytes.
pub fn decode(text: &str) -> Result<Vec<u8>, HexError> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() % 2 != 0 {
        return Err(HexError::OddLength(chars.len()));
    }
    let digit = |pos: usize| -> Result<u8, HexError> {
        let ch = chars[pos];
        ch.to_digit(16)
            .map(|d| d as u8)
            .ok_or(HexError::BadDigit { ch, pos })
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
        assert_eq!(decode("abc"), Err(HexError::OddLength(3)));
        assert_eq!(decode("zz"), Err(HexError::BadDigit { ch: 'z', pos: 0 }));
    }
}
