//! The 1024-byte `neff_header_t` (spec §2.1).
//!
//! [`NeffHeader`] is a lossless view over the raw bytes with typed accessors,
//! in the style of the `tar` crate's header types: decoding and re-encoding any
//! 1024 bytes gives them back unchanged, padding included. [`HeaderFields`] is
//! the same content as a plain record, used for JSON output and overrides.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, ErrorKind};
use crate::features::FeatureMask;
use crate::uuid::Uuid;

/// Size of the header in bytes; the payload always starts at this offset.
pub const HEADER_LEN: usize = 0x400;

/// Width of `neff_build_version`.
pub const BUILD_VERSION_LEN: usize = 128;
/// Width of `name`.
pub const NAME_LEN: usize = 256;
/// Width of `tpb_per_node`.
pub const TPB_PER_NODE_LEN: usize = 64;
/// Width of `pad`.
pub const PAD_LEN: usize = 468;

/// The packaging version: which digest protects the payload (spec §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PkgVersion {
    /// 1: a raw tar protected by SHA-256 over all 32 hash bytes.
    Sha256Tar = 1,
    /// 2: one gzip member holding a tar, protected by MD5 in `hash[0..16]`.
    #[default]
    Md5Gzip = 2,
}

impl PkgVersion {
    /// The header value (1 or 2).
    pub fn value(self) -> u64 {
        self as u64
    }

    /// The packaging version with this header value, if the runtime knows it.
    pub fn from_value(value: u64) -> Option<PkgVersion> {
        match value {
            1 => Some(PkgVersion::Sha256Tar),
            2 => Some(PkgVersion::Md5Gzip),
            _ => None,
        }
    }
}

/// A 1024-byte NEFF header: raw bytes underneath, typed accessors on top.
#[derive(Clone, PartialEq, Eq)]
pub struct NeffHeader {
    bytes: [u8; HEADER_LEN],
}

impl Default for NeffHeader {
    fn default() -> Self {
        NeffHeader {
            bytes: [0; HEADER_LEN],
        }
    }
}

impl fmt::Debug for NeffHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.fields(), f)
    }
}

impl NeffHeader {
    /// Wraps 1024 raw header bytes. Every byte pattern is a valid `NeffHeader`;
    /// the loader's gates decide what is acceptable.
    pub fn from_bytes(bytes: [u8; HEADER_LEN]) -> NeffHeader {
        NeffHeader { bytes }
    }

    /// Reads the first 1024 bytes of `data`, or `None` when it is shorter.
    pub fn from_prefix(data: &[u8]) -> Option<NeffHeader> {
        let bytes: [u8; HEADER_LEN] = data.get(..HEADER_LEN)?.try_into().ok()?;
        Some(NeffHeader { bytes })
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; HEADER_LEN] {
        &self.bytes
    }
}

/// Every field of the header, stated once: its name in [`HeaderFields`]
/// (and JSON), its type there and in the raw accessors of [`NeffHeader`],
/// and its byte offset (spec §2.1). Gives [`HeaderFields`], the accessors,
/// [`NeffHeader::fields`] and [`NeffHeader::from_fields`].
macro_rules! header_fields {
    ($(
        $(#[doc = $doc:literal])*
        $(@fields #[$fields_meta:meta])*
        $(@patch #[$patch_meta:meta])*
        $field:ident: $ty:ty, $raw:ty, $get:ident, $set:ident @ $off:literal;
    )*) => {
        /// Every header field as a plain value. Serializes to JSON losslessly:
        /// text fields as strings (or `{"hex": …}` when not clean NUL-terminated UTF-8),
        /// byte arrays as hex with trailing zero bytes trimmed, the UUID in canonical form.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct HeaderFields {
            $( $(#[doc = $doc])* $(#[$fields_meta])* pub $field: $ty, )*
        }

        /// Header fields to set after a packager has filled in its own. Every
        /// field is optional; what is set here wins, including `data_size` and
        /// `hash` (for deliberately invalid fixtures). JSON uses the encodings
        /// of [`HeaderFields`] (`neff inspect --json`).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct HeaderPatch {
            $( $(#[doc = $doc])* $(#[$patch_meta])* pub $field: Option<$ty>, )*
        }

        impl HeaderPatch {
            /// A patch that sets every field of `fields` (for reproducing a header).
            pub fn from_fields(fields: &HeaderFields) -> HeaderPatch {
                HeaderPatch { $( $field: Some(fields.$field.clone()), )* }
            }

            /// Sets every field `other` sets (the later patch wins).
            pub fn merge(&mut self, other: &HeaderPatch) {
                $( if other.$field.is_some() { self.$field = other.$field.clone(); } )*
            }

            /// Applies the set fields to `fields`.
            pub fn apply(&self, fields: &mut HeaderFields) {
                $( if let Some(v) = &self.$field { fields.$field = v.clone(); } )*
            }
        }

        impl NeffHeader {
            $(
                #[doc = concat!("Reads `", stringify!($field), "` (+", stringify!($off), ").")]
                pub fn $get(&self) -> $raw {
                    <$raw as Field>::read(&self.bytes[$off..])
                }

                #[doc = concat!("Writes `", stringify!($field), "` (+", stringify!($off), ").")]
                pub fn $set(&mut self, value: $raw) {
                    value.write(&mut self.bytes[$off..]);
                }
            )*

            /// Decodes every field into a plain record.
            pub fn fields(&self) -> HeaderFields {
                HeaderFields { $( $field: Field::wrap(self.$get()), )* }
            }

            /// Encodes a plain record. `NeffHeader::from_fields(&h.fields()) == h` for every header.
            pub fn from_fields(fields: &HeaderFields) -> NeffHeader {
                let mut h = NeffHeader::default();
                $( h.$set(Field::unwrap(&fields.$field)); )*
                h
            }
        }
    };
}

header_fields! {
    /// `pkg_version`: 1 (tar + SHA-256) or 2 (gzip tar + MD5).
    pkg_version: u64, u64, pkg_version, set_pkg_version @ 0x000;
    /// `header_size`: 0x400 in every known artifact (and written).
    header_size: u64, u64, header_size, set_header_size @ 0x008;
    /// `data_size`: length of the stored (compressed, for pkg 2) payload
    /// (computed when written).
    data_size: u64, u64, data_size, set_data_size @ 0x010;
    /// `neff_version_major` (written: 2 unless set).
    neff_version_major: u64, u64, major, set_major @ 0x018;
    /// `neff_version_minor` (written: 0 unless set).
    neff_version_minor: u64, u64, minor, set_minor @ 0x020;
    /// `neff_build_version`, NUL-terminated (written: names this tool unless set).
    build_version: Text<BUILD_VERSION_LEN>, [u8; BUILD_VERSION_LEN], build_version, set_build_version @ 0x028;
    /// `unused_0` (+0xA8); 1 in every known artifact (and written).
    unused_0: u32, u32, unused_0, set_unused_0 @ 0x0A8;
    /// `hash`: MD5 in the first 16 bytes (pkg 2) or SHA-256 (pkg 1), in the
    /// layout the producer wrote it (computed when written). Serialized whole
    /// (64 hex digits, zeros included); a shorter hex string reads as zero-filled.
    @fields #[serde(serialize_with = "full_hex")]
    hash: Blob<32>, [u8; 32], hash, set_hash @ 0x0AC;
    /// `uuid`: the key of the runtime's parse cache (written: derived from the
    /// content unless set).
    uuid: Uuid, Uuid, uuid, set_uuid @ 0x0CC;
    /// `name`: the model name, NUL-terminated.
    name: Text<NAME_LEN>, [u8; NAME_LEN], name, set_name @ 0x0DC;
    /// `requested_tpb_count` (written: 1 unless set).
    requested_tpb_count: u32, u32, requested_tpb_count, set_requested_tpb_count @ 0x1DC;
    /// `tpb_per_node` (written: zeros unless set).
    tpb_per_node: Blob<TPB_PER_NODE_LEN>, [u8; TPB_PER_NODE_LEN], tpb_per_node, set_tpb_per_node @ 0x1E0;
    /// `feature_bits` (written: the bits the content implies unless set). A
    /// patch takes a [`FeatureMask`]: a number, text as `neff pack
    /// --feature-bits` takes it (`"0x400,custom_ops"`), or a list.
    @patch #[serde(default, deserialize_with = "FeatureMask::optional_bits")]
    @patch #[schemars(with = "Option<FeatureMask>")]
    feature_bits: u64, u64, feature_bits, set_feature_bits @ 0x220;
    /// `vnc_size` (written: 1 unless set).
    vnc_size: u32, u32, vnc_size, set_vnc_size @ 0x228;
    /// `pad`: zeros in every known artifact (and written).
    pad: Blob<PAD_LEN>, [u8; PAD_LEN], pad, set_pad @ 0x22C;
}

/// A header field's raw value at its offset (little-endian), and the plain
/// value [`HeaderFields`] holds for it.
trait Field: Sized {
    /// The plain value.
    type Plain;
    /// The value at the start of `bytes`.
    fn read(bytes: &[u8]) -> Self;
    /// Writes the value at the start of `bytes`.
    fn write(&self, bytes: &mut [u8]);
    /// As [`HeaderFields`] holds it.
    fn wrap(self) -> Self::Plain;
    /// Back from [`HeaderFields`].
    fn unwrap(plain: &Self::Plain) -> Self;
}

macro_rules! int_field {
    ($($ty:ty),*) => {$(
        impl Field for $ty {
            type Plain = $ty;
            fn read(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$ty>()];
                raw.copy_from_slice(&bytes[..std::mem::size_of::<$ty>()]);
                <$ty>::from_le_bytes(raw)
            }
            fn write(&self, bytes: &mut [u8]) {
                bytes[..std::mem::size_of::<$ty>()].copy_from_slice(&self.to_le_bytes());
            }
            fn wrap(self) -> $ty {
                self
            }
            fn unwrap(plain: &$ty) -> $ty {
                *plain
            }
        }
    )*};
}
int_field!(u32, u64);

/// Byte arrays: text fields ([`Text`]) and the others ([`Blob`]) wrap them.
macro_rules! array_field {
    ($($plain:ident($len:expr)),*) => {$(
        impl Field for [u8; $len] {
            type Plain = $plain<$len>;
            fn read(bytes: &[u8]) -> Self {
                let mut out = [0u8; $len];
                out.copy_from_slice(&bytes[..$len]);
                out
            }
            fn write(&self, bytes: &mut [u8]) {
                bytes[..$len].copy_from_slice(self);
            }
            fn wrap(self) -> $plain<$len> {
                $plain(self)
            }
            fn unwrap(plain: &$plain<$len>) -> Self {
                plain.0
            }
        }
    )*};
}
array_field!(
    Text(BUILD_VERSION_LEN),
    Text(NAME_LEN),
    Blob(32),
    Blob(TPB_PER_NODE_LEN),
    Blob(PAD_LEN)
);

impl Field for Uuid {
    type Plain = Uuid;
    fn read(bytes: &[u8]) -> Self {
        Uuid(<[u8; 16]>::try_from(&bytes[..16]).unwrap_or_default())
    }
    fn write(&self, bytes: &mut [u8]) {
        bytes[..16].copy_from_slice(&self.0);
    }
    fn wrap(self) -> Uuid {
        self
    }
    fn unwrap(plain: &Uuid) -> Uuid {
        *plain
    }
}

/// A fixed-width, NUL-terminated text field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Text<const N: usize>(pub [u8; N]);

impl<const N: usize> Text<N> {
    /// A field holding `text`, NUL-terminated and zero-filled. Fails when `text`
    /// has a NUL byte or leaves no room for the terminator.
    pub fn new(text: &str) -> Result<Self, Error> {
        let bytes = text.as_bytes();
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            let message = format!("text {text:?} has a NUL byte at {at}");
            return Err(Error::new(ErrorKind::TextTooLong, message).at_offset(at as u64));
        }
        if bytes.len() >= N {
            let message = format!(
                "text of {} bytes does not fit a {N}-byte field with its NUL terminator (at most {} bytes)",
                bytes.len(),
                N - 1
            );
            return Err(Error::new(ErrorKind::TextTooLong, message));
        }
        let mut out = [0u8; N];
        out[..bytes.len()].copy_from_slice(bytes);
        Ok(Text(out))
    }

    /// The bytes before the first NUL (all `N` bytes when there is none).
    pub fn until_nul(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(N);
        &self.0[..end]
    }

    /// The text when the field is clean: UTF-8, then a NUL, then only zeros.
    pub fn as_clean_str(&self) -> Option<&str> {
        let text = self.until_nul();
        if text.len() == N || self.0[text.len()..].iter().any(|&b| b != 0) {
            return None;
        }
        std::str::from_utf8(text).ok()
    }

    /// The text before the first NUL, with invalid UTF-8 replaced.
    pub fn to_lossy_string(&self) -> String {
        String::from_utf8_lossy(self.until_nul()).into_owned()
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Text([0; N])
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_clean_str() {
            Some(s) => fmt::Debug::fmt(s, f),
            None => write!(f, "hex:{}", hex::encode(self.0)),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum TextRepr {
    Text(String),
    Hex { hex: String },
}

impl<const N: usize> Serialize for Text<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.as_clean_str() {
            Some(text) => TextRepr::Text(text.to_string()),
            None => TextRepr::Hex {
                hex: hex::encode(trim_zeros(&self.0)),
            },
        }
        .serialize(s)
    }
}

impl<'de, const N: usize> Deserialize<'de> for Text<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match TextRepr::deserialize(d)? {
            TextRepr::Text(text) => Text::new(&text).map_err(D::Error::custom),
            TextRepr::Hex { hex } => Ok(Text(fixed_from_hex(&hex).map_err(D::Error::custom)?)),
        }
    }
}

/// A fixed-width byte array, serialized as hex with trailing zero bytes trimmed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Blob<const N: usize>(pub [u8; N]);

impl<const N: usize> Default for Blob<N> {
    fn default() -> Self {
        Blob([0; N])
    }
}

impl<const N: usize> fmt::Debug for Blob<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", hex::encode(trim_zeros(&self.0)))
    }
}

impl<const N: usize> Serialize for Blob<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        hex::encode(trim_zeros(&self.0)).serialize(s)
    }
}

impl<'de, const N: usize> Deserialize<'de> for Blob<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hex = String::deserialize(d)?;
        Ok(Blob(fixed_from_hex(&hex).map_err(D::Error::custom)?))
    }
}

/// A byte array as hex, every byte written (trailing zeros included).
fn full_hex<S: Serializer, const N: usize>(blob: &Blob<N>, s: S) -> Result<S::Ok, S::Error> {
    hex::encode(blob.0).serialize(s)
}

fn trim_zeros(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &bytes[..end]
}

fn fixed_from_hex<const N: usize>(text: &str) -> Result<[u8; N], String> {
    let bytes = hex::decode(text).map_err(|e| e.to_string())?;
    if bytes.len() > N {
        return Err(format!(
            "{} bytes of hex do not fit a {N}-byte field",
            bytes.len()
        ));
    }
    let mut out = [0u8; N];
    out[..bytes.len()].copy_from_slice(&bytes);
    Ok(out)
}

impl Serialize for Uuid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_string().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Uuid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

impl<const N: usize> schemars::JsonSchema for Text<N> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Text{N}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": format!("A {N}-byte NUL-terminated text field: a string of at most {} bytes, or {{\"hex\": …}} for bytes that are not clean NUL-terminated UTF-8.", N - 1),
            "oneOf": [
                {"type": "string", "maxLength": N - 1},
                {"type": "object", "properties": {"hex": {"type": "string", "pattern": "^([0-9a-fA-F]{2})*$"}}, "required": ["hex"], "additionalProperties": false}
            ]
        })
    }
}

impl<const N: usize> schemars::JsonSchema for Blob<N> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Blob{N}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": format!("A {N}-byte field as hex; trailing zero bytes may be left out."),
            "type": "string",
            "pattern": format!("^([0-9a-fA-F]{{2}}){{0,{N}}}$")
        })
    }
}

string_schema!(
    Uuid,
    "A UUID: 32 hex digits, canonically 8-4-4-4-12.",
    "pattern": "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$",
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime fixture's header, rebuilt from the byte regions of spec §2.4
    /// (every other byte zero).
    fn fixture_header_bytes() -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        let mut put = |off: usize, bytes: &[u8]| b[off..off + bytes.len()].copy_from_slice(bytes);
        put(
            0x000,
            &[0x02, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x04, 0, 0, 0, 0, 0, 0],
        );
        put(
            0x010,
            &[0xad, 0x06, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0],
        );
        put(0x028, b"2.0.21884.0%kaena-tools/develop@6c66f4b\0");
        put(0x0A8, &[0x01, 0, 0, 0]);
        put(
            0x0AC,
            &[
                0x61, 0xb3, 0xca, 0xb2, 0x43, 0x69, 0xb3, 0x26, 0xa2, 0xb3, 0xee, 0x40, 0xa7, 0x44,
                0xc7, 0x46,
            ],
        );
        put(0x0BC, &[0x30; 16]);
        put(
            0x0CC,
            &[
                0x56, 0x18, 0x26, 0xfb, 0x12, 0x5f, 0x4b, 0xb8, 0x99, 0x1c, 0x29, 0xe0, 0x85, 0xc8,
                0x94, 0x9a,
            ],
        );
        put(0x0DC, b"x\0");
        put(0x1DC, &[0x01, 0, 0, 0]);
        put(0x220, &[0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0]);
        b
    }

    #[test]
    fn golden_fixture_header_decodes_to_spec_values() {
        let h = NeffHeader::from_bytes(fixture_header_bytes());
        assert_eq!(h.pkg_version(), 2);
        assert_eq!(h.header_size(), 0x400);
        assert_eq!(h.data_size(), 0x6AD);
        assert_eq!(h.major(), 2);
        assert_eq!(h.minor(), 0);
        let f = h.fields();
        assert_eq!(
            f.build_version.as_clean_str(),
            Some("2.0.21884.0%kaena-tools/develop@6c66f4b")
        );
        assert_eq!(h.unused_0(), 1);
        assert_eq!(
            hex::encode(h.hash()),
            concat!(
                "61b3cab24369b326a2b3ee40a744c746",
                "30303030303030303030303030303030"
            )
        );
        assert_eq!(h.uuid().to_string(), "561826fb-125f-4bb8-991c-29e085c8949a");
        assert_eq!(f.name.as_clean_str(), Some("x"));
        assert_eq!(h.requested_tpb_count(), 1);
        assert_eq!(h.tpb_per_node(), [0u8; 64]);
        assert_eq!(h.feature_bits(), 0);
        assert_eq!(h.vnc_size(), 1);
        assert_eq!(h.pad(), [0u8; PAD_LEN]);
    }

    /// Decoding then encoding gives the same bytes, directly and through JSON.
    #[track_caller]
    fn assert_round_trips(bytes: [u8; HEADER_LEN]) {
        let h = NeffHeader::from_bytes(bytes);
        assert_eq!(NeffHeader::from_fields(&h.fields()).as_bytes(), &bytes);
        let json = serde_json::to_string(&h.fields()).unwrap();
        let back: HeaderFields = serde_json::from_str(&json).unwrap();
        assert_eq!(NeffHeader::from_fields(&back).as_bytes(), &bytes);
    }

    #[test]
    fn golden_fixture_header_reencodes_byte_identically() {
        assert_round_trips(fixture_header_bytes());
    }

    #[test]
    fn field_offsets_and_widths_match_the_spec() {
        // Each setter touches exactly its own bytes.
        type Setter = Box<dyn Fn(&mut NeffHeader)>;
        let cases: Vec<(usize, usize, Setter)> = vec![
            (0x000, 8, Box::new(|h| h.set_pkg_version(u64::MAX))),
            (0x008, 8, Box::new(|h| h.set_header_size(u64::MAX))),
            (0x010, 8, Box::new(|h| h.set_data_size(u64::MAX))),
            (0x018, 8, Box::new(|h| h.set_major(u64::MAX))),
            (0x020, 8, Box::new(|h| h.set_minor(u64::MAX))),
            (0x028, 128, Box::new(|h| h.set_build_version([0xFF; 128]))),
            (0x0A8, 4, Box::new(|h| h.set_unused_0(u32::MAX))),
            (0x0AC, 32, Box::new(|h| h.set_hash([0xFF; 32]))),
            (0x0CC, 16, Box::new(|h| h.set_uuid(Uuid([0xFF; 16])))),
            (0x0DC, 256, Box::new(|h| h.set_name([0xFF; 256]))),
            (0x1DC, 4, Box::new(|h| h.set_requested_tpb_count(u32::MAX))),
            (0x1E0, 64, Box::new(|h| h.set_tpb_per_node([0xFF; 64]))),
            (0x220, 8, Box::new(|h| h.set_feature_bits(u64::MAX))),
            (0x228, 4, Box::new(|h| h.set_vnc_size(u32::MAX))),
            (0x22C, 468, Box::new(|h| h.set_pad([0xFF; 468]))),
        ];
        let mut covered = 0;
        for (off, width, set) in cases {
            let mut h = NeffHeader::default();
            set(&mut h);
            let touched: Vec<usize> = (0..HEADER_LEN).filter(|&i| h.as_bytes()[i] != 0).collect();
            assert_eq!(
                touched,
                (off..off + width).collect::<Vec<_>>(),
                "field at {off:#x}"
            );
            covered += width;
        }
        assert_eq!(covered, HEADER_LEN, "the fields tile the whole header");
    }

    #[test]
    fn arbitrary_bytes_round_trip_through_fields_and_json() {
        // A simple deterministic generator: every byte value in every position.
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..64 {
            let mut bytes = [0u8; HEADER_LEN];
            for b in bytes.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
            assert_round_trips(bytes);
        }
    }

    #[test]
    fn text_fields_reject_what_does_not_fit() {
        assert!(Text::<4>::new("abc").is_ok());
        let err = Text::<4>::new("abcd").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TextTooLong);
        assert_eq!(
            err.to_string(),
            "text of 4 bytes does not fit a 4-byte field with its NUL terminator (at most 3 bytes)"
        );
        assert!(Text::<4>::new("a\0b").is_err());
        let dirty = Text::<4>([b'a', 0, b'b', 0]);
        assert_eq!(dirty.as_clean_str(), None);
        assert_eq!(dirty.to_lossy_string(), "a");
    }

    #[test]
    fn pkg_versions() {
        assert_eq!(PkgVersion::from_value(1), Some(PkgVersion::Sha256Tar));
        assert_eq!(PkgVersion::from_value(2), Some(PkgVersion::Md5Gzip));
        assert_eq!(PkgVersion::from_value(3), None);
        assert_eq!(PkgVersion::default().value(), 2);
    }
}
