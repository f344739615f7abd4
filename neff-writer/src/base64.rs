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
    let kept: Vec<usize> = (0..text.len())
        .filter(|&i| !text.as_bytes()[i].is_ascii_whitespace())
        .collect();
    let compact: Vec<u8> = kept.iter().map(|&i| text.as_bytes()[i]).collect();
    if compact.last() == Some(&b'=') && compact.len() % 4 != 0 {
        return Err(Error::new(
            ErrorKind::Base64,
            "invalid base64 length or padding: wrong amount of '=' padding",
        ));
    }
    LENIENT.decode(&compact).map_err(|e| match e {
        DecodeError::InvalidByte(at, b'=') | DecodeError::InvalidLastSymbol(at, b'=') => {
            let offset = kept.get(at).copied().unwrap_or(text.len());
            Error::new(
                ErrorKind::Base64,
                format!("invalid base64 padding at offset {offset}"),
            )
            .at_offset(offset as u64)
        }
        DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => {
            let offset = kept.get(at).copied().unwrap_or(text.len());
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
