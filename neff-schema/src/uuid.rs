//! The 16-byte header UUID (spec §2.1 `+0x0CC`).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// A UUID as stored in the NEFF header: 16 raw bytes, printed in canonical
/// `8-4-4-4-12` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// Turns 16 bytes of entropy (or of a digest) into an RFC-4122 version-4 UUID
    /// by setting the version nibble (`uuid[6] = (x & 0x0F) | 0x40`) and the
    /// variant bits (`uuid[8] = (x & 0x3F) | 0x80`), as the producer does.
    pub fn v4_from_bytes(mut bytes: [u8; 16]) -> Uuid {
        bytes[6] = (bytes[6] & 0x0F) | 0x40;
        bytes[8] = (bytes[8] & 0x3F) | 0x80;
        Uuid(bytes)
    }

    /// The UUID derived from a payload's SHA-256: its first 16 bytes with the v4
    /// version and variant bits set. Equal payloads give equal UUIDs; different
    /// payloads differ unless SHA-256 collides on 122 bits.
    pub fn from_sha256(digest: &[u8; 32]) -> Uuid {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        Uuid::v4_from_bytes(bytes)
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        uuid::Uuid::from_bytes(self.0).hyphenated().fmt(f)
    }
}

impl FromStr for Uuid {
    type Err = Error;

    /// Parses 32 hex digits, with or without the canonical hyphens (the
    /// `uuid` crate's grammar, so also braced or as a `urn:uuid:`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::try_parse(s)
            .map(|u| Uuid(u.into_bytes()))
            .map_err(|e| {
                Error::new(
                    ErrorKind::BadUuid,
                    format!("invalid UUID {s:?}: expected 32 hex digits, optionally as 8-4-4-4-12 ({e})"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_round_trips() {
        let text = "561826fb-125f-4bb8-991c-29e085c8949a";
        let uuid: Uuid = text.parse().unwrap();
        assert_eq!(uuid.0[0], 0x56);
        assert_eq!(uuid.to_string(), text);
        assert_eq!(
            "561826fb125f4bb8991c29e085c8949a".parse::<Uuid>().unwrap(),
            uuid
        );
        assert!("561826fb-125f".parse::<Uuid>().is_err());
        assert!("zz1826fb125f4bb8991c29e085c8949a".parse::<Uuid>().is_err());
    }

    #[test]
    fn v4_bits_are_set() {
        let uuid = Uuid::v4_from_bytes([0xFF; 16]);
        assert_eq!(uuid.0[6], 0x4F);
        assert_eq!(uuid.0[8], 0xBF);
        let uuid = Uuid::from_sha256(&[0u8; 32]);
        assert_eq!(uuid.to_string(), "00000000-0000-4000-8000-000000000000");
    }
}
