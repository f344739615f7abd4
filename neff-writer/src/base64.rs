//! Standard base64 (RFC 4648 §4), for blobs written inline in build specs,
//! through the `base64` crate. ASCII whitespace is ignored and the `=`
//! padding is optional; an error names the offset of the character at fault.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, DecodeError, Engine};

use crate::error::{Error, ErrorKind};

/// Standard alphabet; padding accepted when canonical, or left out.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes standard base64.
pub fn decode(text: &str) -> Result<Vec<u8>, Error> {
    let bytes = text.as_bytes();
    let compact: std::borrow::Cow<'_, [u8]> = match bytes.iter().any(u8::is_ascii_whitespace) {
        true => bytes
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect(),
        false => bytes.into(),
    };
    if compact.last() == Some(&b'=') && compact.len() % 4 != 0 {
        return Err(Error::new(
            ErrorKind::Base64,
            "invalid base64 length or padding: wrong amount of '=' padding",
        ));
    }
    // Where the `at`-th character that is not whitespace stands in `text`
    // (only worked out for an error).
    let offset_of = |at: usize| {
        let mut kept = (0..bytes.len()).filter(|&i| !bytes[i].is_ascii_whitespace());
        kept.nth(at).unwrap_or(bytes.len())
    };
    LENIENT.decode(&compact).map_err(|e| match e {
        DecodeError::InvalidByte(at, b'=') | DecodeError::InvalidLastSymbol(at, b'=') => {
            let offset = offset_of(at);
            Error::new(
                ErrorKind::Base64,
                format!("invalid base64 padding at offset {offset}"),
            )
            .at_offset(offset as u64)
        }
        DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => {
            let offset = offset_of(at);
            let c = text
                .get(offset..)
                .and_then(|t| t.chars().next())
                .unwrap_or('?');
            let message = format!("invalid base64 character {c:?} at offset {offset}");
            Error::new(ErrorKind::Base64, message).at_offset(offset as u64)
        }
        DecodeError::InvalidLength(_) | DecodeError::InvalidPadding => Error::new(
            ErrorKind::Base64,
            format!("invalid base64 length or padding: {e}"),
        ),
    })
}

/// Encodes as standard base64 with padding.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
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
        assert_eq!(decode(" \n ").unwrap(), b"");
    }

    #[test]
    fn errors_say_where() {
        let bang = decode("Zm9v!").unwrap_err();
        assert_eq!(bang.to_string(), "invalid base64 character '!' at offset 4");
        assert_eq!(bang.location().offset, Some(4));
        let spaced = decode("Zm\n9v!").unwrap_err();
        assert_eq!(spaced.location().offset, Some(5), "{spaced}");
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
