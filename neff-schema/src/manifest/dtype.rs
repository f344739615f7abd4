//! Tensor element types as manifests spell them (spec §4.1 `attrs.dltype`,
//! §4.3.1 var `dtype`).

use std::fmt;
use std::str::FromStr;

/// An element type string. The eleven the runtime's `nrt_dtype_t` map knows
/// (spec §4.1) plus the two common FP8 names the kbin dtype map takes
/// (§4.3.1); any other spelling is kept as [`Dtype::Other`], so parsing and
/// printing is lossless.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    /// `float32` (nrt 10, 4 bytes).
    Float32,
    /// `float16` (nrt 7, 2 bytes).
    Float16,
    /// `bfloat16` (nrt 6, 2 bytes).
    Bfloat16,
    /// `int8` (nrt 2, 1 byte).
    Int8,
    /// `int16` (nrt 4, 2 bytes).
    Int16,
    /// `int32` (nrt 8, 4 bytes).
    Int32,
    /// `int64` (nrt 12, 8 bytes).
    Int64,
    /// `uint8` (nrt 3, 1 byte).
    Uint8,
    /// `uint16` (nrt 5, 2 bytes).
    Uint16,
    /// `uint32` (nrt 9, 4 bytes).
    Uint32,
    /// `uint64` (nrt 1, 8 bytes).
    Uint64,
    /// `float8_e4m3fn` (kbin only; nrt UNKNOWN, 1 byte).
    Float8E4m3fn,
    /// `float8_e5m2` (kbin only; nrt UNKNOWN, 1 byte).
    Float8E5m2,
    /// Any other spelling, kept verbatim (nrt UNKNOWN: "Unknown dtype: %s,
    /// defaulting to UNKNOWN", 1 byte per element).
    Other(String),
}

/// The named dtypes with their spellings, in `nrt_dtype_t` order of the spec table.
const NAMED: [(Dtype, &str); 13] = [
    (Dtype::Float32, "float32"),
    (Dtype::Float16, "float16"),
    (Dtype::Bfloat16, "bfloat16"),
    (Dtype::Int8, "int8"),
    (Dtype::Int16, "int16"),
    (Dtype::Int32, "int32"),
    (Dtype::Int64, "int64"),
    (Dtype::Uint8, "uint8"),
    (Dtype::Uint16, "uint16"),
    (Dtype::Uint32, "uint32"),
    (Dtype::Uint64, "uint64"),
    (Dtype::Float8E4m3fn, "float8_e4m3fn"),
    (Dtype::Float8E5m2, "float8_e5m2"),
];

impl Dtype {
    /// The spelling written into manifests.
    pub fn as_str(&self) -> &str {
        match self {
            Dtype::Other(s) => s,
            known => NAMED
                .iter()
                .find(|(d, _)| d == known)
                .map_or("", |(_, name)| name),
        }
    }

    /// The dtype a manifest string names (exact, case-sensitive, as the runtime compares).
    pub fn parse(text: &str) -> Dtype {
        NAMED
            .iter()
            .find(|(_, name)| *name == text)
            .map_or_else(|| Dtype::Other(text.to_string()), |(d, _)| d.clone())
    }

    /// The runtime's `nrt_dtype_t` code (0 = UNKNOWN).
    pub fn nrt_code(&self) -> u32 {
        match self {
            Dtype::Float32 => 10,
            Dtype::Float16 => 7,
            Dtype::Bfloat16 => 6,
            Dtype::Int8 => 2,
            Dtype::Int16 => 4,
            Dtype::Int32 => 8,
            Dtype::Int64 => 12,
            Dtype::Uint8 => 3,
            Dtype::Uint16 => 5,
            Dtype::Uint32 => 9,
            Dtype::Uint64 => 1,
            Dtype::Float8E4m3fn | Dtype::Float8E5m2 | Dtype::Other(_) => 0,
        }
    }

    /// Bytes per element, when known (`None` for [`Dtype::Other`]).
    pub fn element_size(&self) -> Option<u64> {
        Some(match self {
            Dtype::Float32 | Dtype::Int32 | Dtype::Uint32 => 4,
            Dtype::Float16 | Dtype::Bfloat16 | Dtype::Int16 | Dtype::Uint16 => 2,
            Dtype::Int8 | Dtype::Uint8 | Dtype::Float8E4m3fn | Dtype::Float8E5m2 => 1,
            Dtype::Int64 | Dtype::Uint64 => 8,
            Dtype::Other(_) => return None,
        })
    }

    /// Bytes per element as the runtime sizes a `neff.json` tensor: the
    /// `nrt_dtype_t` size, or 1 for UNKNOWN (spec §4.1).
    pub fn runtime_element_size(&self) -> u64 {
        match self.nrt_code() {
            0 => 1,
            _ => self.element_size().unwrap_or(1),
        }
    }

    /// Every named spelling.
    pub fn known_names() -> impl Iterator<Item = &'static str> {
        NAMED.iter().map(|(_, name)| *name)
    }

    /// The dtype another tool's usual name for it stands for (`bf16`,
    /// `fp16`, `float`, `torch.float32`, `np.uint8`, `fp8_e4m3`…), for a
    /// "did you mean" (a manifest is never read this way: the runtime
    /// compares the exact spelling). Case is ignored.
    pub fn alias(text: &str) -> Option<Dtype> {
        let lower = text.to_ascii_lowercase();
        let bare = ["torch.", "np.", "numpy.", "jnp.", "tf.", "dt_"]
            .iter()
            .find_map(|p| lower.strip_prefix(p))
            .unwrap_or(&lower);
        let dtype = match bare {
            "bf16" | "bfloat" | "brain_float16" => Dtype::Bfloat16,
            "fp16" | "f16" | "half" | "float_16" => Dtype::Float16,
            "fp32" | "f32" | "float" | "single" | "float_32" => Dtype::Float32,
            "i8" | "s8" | "char" => Dtype::Int8,
            "i16" | "s16" | "short" => Dtype::Int16,
            "i32" | "s32" | "int" => Dtype::Int32,
            "i64" | "s64" | "long" => Dtype::Int64,
            "u8" | "byte" | "uchar" => Dtype::Uint8,
            "u16" | "ushort" => Dtype::Uint16,
            "u32" | "uint" => Dtype::Uint32,
            "u64" | "ulong" => Dtype::Uint64,
            "fp8_e4m3" | "fp8e4m3" | "f8e4m3" | "f8e4m3fn" | "float8_e4m3" | "float8e4m3fn"
            | "e4m3" => Dtype::Float8E4m3fn,
            "fp8_e5m2" | "fp8e5m2" | "f8e5m2" | "float8e5m2" | "e5m2" => Dtype::Float8E5m2,
            other => match Dtype::parse(other) {
                Dtype::Other(_) => return None,
                named => named,
            },
        };
        Some(dtype)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dtype {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Dtype::parse(s))
    }
}

impl From<&str> for Dtype {
    fn from(s: &str) -> Self {
        Dtype::parse(s)
    }
}

impl serde::Serialize for Dtype {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Dtype {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Ok(Dtype::parse(&text))
    }
}

impl schemars::JsonSchema for Dtype {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Dtype".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Dtype::known_names().collect();
        schemars::json_schema!({
            "description": "Element type. The runtime knows float32, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32 and uint64; other names (e.g. FP8) load as UNKNOWN with 1 byte per element.",
            "anyOf": [
                { "enum": names },
                { "type": "string" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for name in Dtype::known_names() {
            assert_eq!(Dtype::parse(name).as_str(), name);
            assert_ne!(Dtype::parse(name), Dtype::Other(name.to_string()));
        }
        assert_eq!(Dtype::parse("Float32"), Dtype::Other("Float32".into()));
        assert_eq!(Dtype::Float32.nrt_code(), 10);
        assert_eq!(Dtype::Uint64.nrt_code(), 1);
        assert_eq!(Dtype::Bfloat16.element_size(), Some(2));
        assert_eq!(Dtype::Float8E4m3fn.runtime_element_size(), 1);
        assert_eq!(Dtype::Other("x".into()).element_size(), None);
        let json = serde_json::to_string(&Dtype::parse("float4_e2m1fn")).unwrap();
        assert_eq!(json, "\"float4_e2m1fn\"");
    }
}
