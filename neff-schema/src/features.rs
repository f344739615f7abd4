//! Feature bits (spec §4.9): the masks the loader's forward-compatibility
//! trapdoor uses (§5.1 G5), and names for the 22 known producer bits.
//!
//! Names are the producer's `def.json` `neff_features` strings where one exists;
//! the others carry the name the producer's feature table uses, in lower case.

use crate::error::{Error, ErrorKind};

/// Feature bits understood by runtime 2.31 (bits 0..=26).
pub const SUPPORTED_FEATURES_2_31: u64 = 0x7FF_FFFF;

/// Bit 63 is never tested by the runtime's trapdoor.
const TESTED_BITS: u64 = 0x7FFF_FFFF_FFFF_FFFF;

/// The trapdoor mask for a supported-feature mask: every tested bit the runtime
/// does not support. For 2.31 this is `0x7FFFFFFFF8000000`.
pub fn trapdoor_mask(supported: u64) -> u64 {
    !supported & TESTED_BITS
}

/// The feature bits in `bits` that a runtime supporting `supported` refuses.
pub fn unsupported_bits(bits: u64, supported: u64) -> u64 {
    bits & trapdoor_mask(supported)
}

/// `collective_has_offset`: collectives carry the CC-group offset.
pub const COLLECTIVE_HAS_OFFSET: u64 = 0x2;
/// `neff_feature_custom_ops`: GPSIMD custom ops (`ucode_lib.json`).
pub const CUSTOM_OPS: u64 = 0x4;
/// `neff_feature_vnc`: virtual NeuronCore size > 1 (also read by the loader).
pub const VNC: u64 = 0x400;

/// The 22 known feature bits: (bit, name).
pub const KNOWN: [(u64, &str); 22] = [
    (0x0000002, "collective_has_offset"),
    (0x0000004, "neff_feature_custom_ops"),
    (0x0000008, "neff_coalesced_ccops"),
    (0x0000010, "neff_queue_set_instances"),
    (0x0000020, "neff_has_functions"),
    (0x0000040, "neff_feature_dynamic_pwp"),
    (0x0000080, "neff_feature_indirect_memcpy_32b_sem_wait"),
    (0x0000100, "neff_feature_indirect_memcpy_bound_check"),
    (0x0000200, "neff_feature_DMA_desc_higher_dim"),
    (0x0000400, "neff_feature_vnc"),
    (0x0000800, "dve_perf_mode"),
    (0x0001000, "dge"),
    (0x0002000, "pool_rsqrt"),
    (0x0004000, "neff_feature_remote_sem"),
    (0x0008000, "dge_cast"),
    (0x0010000, "vector_dge"),
    (0x0020000, "embedding_stride32"),
    (0x0100000, "sqi_no_rearm"),
    (0x0200000, "hardware_dge"),
    (0x0400000, "partial_sb2sb_ccop"),
    (0x1000000, "arch_level_40"),
    (0x2000000, "large_tensor_support"),
];

/// The names of the bits set in `mask`, lowest first; unknown bits as `0x…`.
///
/// Bit `0x1000000` has no producer name (the spec only says "arch level > 39");
/// it is called `arch_level_40` here. Bit `0x1` (neuron-packager's
/// `bin-weights`, LOW confidence) is not one of the 22 and shows as `0x1`.
pub fn names(mask: u64) -> Vec<String> {
    let mut out = Vec::new();
    for bit in 0..64 {
        let value = 1u64 << bit;
        if mask & value == 0 {
            continue;
        }
        match KNOWN.iter().find(|(v, _)| *v == value) {
            Some((_, name)) => out.push((*name).to_string()),
            None => out.push(format!("{value:#x}")),
        }
    }
    out
}

/// The bit a feature name stands for: a name of [`KNOWN`], in any case, with
/// or without the `neff_feature_` prefix (`vnc` is `neff_feature_vnc`). This is
/// the one place a feature name is read, for the build spec, the CLI's
/// `--feature-bits` and `--supported-features`, and Python.
pub fn bit_of(name: &str) -> Option<u64> {
    let bare = |name: &str| {
        let lower = name.trim().to_ascii_lowercase();
        match lower.strip_prefix("neff_feature_") {
            Some(rest) => rest.to_string(),
            None => lower,
        }
    };
    let wanted = bare(name);
    KNOWN
        .iter()
        .find(|(_, known)| bare(known) == wanted)
        .map(|(bit, _)| *bit)
}

/// The error for a name [`bit_of`] does not know, listing the known names.
pub fn unknown_feature(name: &str) -> Error {
    let known: Vec<&str> = KNOWN.iter().map(|(_, name)| *name).collect();
    let message = format!(
        "unknown feature {name:?}: give a 0x… bit or one of {} (the `neff_feature_` prefix is optional)",
        known.join(", ")
    );
    Error::new(ErrorKind::UnknownFeature, message)
}

/// A 64-bit number as every mask is read: `0x` hex, `0b` binary or decimal
/// (`_` separators allowed).
pub fn parse_mask(text: &str) -> Result<u64, String> {
    let t = text.trim().replace('_', "");
    let parsed = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if let Some(bin) = t.strip_prefix("0b") {
        u64::from_str_radix(bin, 2)
    } else {
        t.parse()
    };
    parsed
        .map_err(|_| format!("{text:?} is not a 64-bit number (use decimal, 0x hex or 0b binary)"))
}

/// A feature-bit mask as text: comma-separated numbers (as [`parse_mask`]
/// reads them, several bits each if wanted) and feature names ([`bit_of`]),
/// OR'ed together: `0x400,custom_ops`. An unknown name is an error listing
/// the known names.
pub fn parse_features(text: &str) -> Result<u64, String> {
    text.split(',').try_fold(0, |mask, item| {
        let item = item.trim();
        let bit = match item.starts_with(|c: char| c.is_ascii_digit()) {
            true => parse_mask(item)?,
            false => bit_of(item).ok_or_else(|| unknown_feature(item).to_string())?,
        };
        Ok(mask | bit)
    })
}

/// A feature-bit mask, read one way wherever one is given (the build spec's
/// `features` and `header.feature_bits`, a header file, the runtime
/// profile's `supported_features`, `--feature-bits`, `--supported-features`
/// and Python): a number, text as [`parse_features`] reads it, or a list of
/// numbers and such texts, OR'ed together. Written as the list of its
/// names ([`names`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FeatureMask(pub u64);

impl FeatureMask {
    /// No bit set.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// A field of this grammar read as its bits
    /// (`#[serde(deserialize_with = "neff_schema::features::FeatureMask::bits")]`).
    pub fn bits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        <FeatureMask as serde::Deserialize>::deserialize(d).map(|mask| mask.0)
    }

    /// An optional field of this grammar read as its bits (`null` or
    /// absent: `None`).
    pub fn optional_bits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        <Option<FeatureMask> as serde::Deserialize>::deserialize(d).map(|m| m.map(|mask| mask.0))
    }
}

impl std::str::FromStr for FeatureMask {
    type Err = String;

    fn from_str(text: &str) -> Result<FeatureMask, String> {
        parse_features(text).map(FeatureMask)
    }
}

impl<'de> serde::Deserialize<'de> for FeatureMask {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Item {
            Number(u64),
            Text(String),
        }
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Items {
            One(Item),
            Many(Vec<Item>),
        }
        let bits = |item: Item| match item {
            Item::Number(n) => Ok(n),
            Item::Text(t) => parse_features(&t),
        };
        match Items::deserialize(d)? {
            Items::One(item) => bits(item),
            Items::Many(items) => items.into_iter().try_fold(0, |mask, i| Ok(mask | bits(i)?)),
        }
        .map(FeatureMask)
        .map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for FeatureMask {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        names(self.0).serialize(s)
    }
}

impl schemars::JsonSchema for FeatureMask {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FeatureMask".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let item = schemars::json_schema!({
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "description": "comma-separated numbers (decimal, 0x hex, 0b binary) and feature names"}
            ]
        });
        schemars::json_schema!({
            "description": "A feature-bit mask: a number, text of comma-separated numbers and feature names (`0x400,custom_ops`), or a list of them, OR'ed together.",
            "anyOf": [item.clone(), {"type": "array", "items": item}]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_2_31_trapdoor() {
        assert_eq!(
            trapdoor_mask(SUPPORTED_FEATURES_2_31),
            0x7FFF_FFFF_F800_0000
        );
        assert_eq!(unsupported_bits(0x7FF_FFFF, SUPPORTED_FEATURES_2_31), 0);
        assert_eq!(unsupported_bits(1 << 27, SUPPORTED_FEATURES_2_31), 1 << 27);
        assert_eq!(unsupported_bits(1 << 63, SUPPORTED_FEATURES_2_31), 0);
    }

    #[test]
    fn names_round_trip_and_keep_unknown_bits() {
        let all: u64 = KNOWN.iter().map(|(v, _)| v).sum();
        assert_eq!(names(all).len(), 22);
        let mask = |v: serde_json::Value| serde_json::from_value::<FeatureMask>(v).map(|m| m.0);
        assert_eq!(mask(serde_json::json!(names(all))).unwrap(), all);
        assert!(
            all & !SUPPORTED_FEATURES_2_31 == 0,
            "every producer bit is supported by 2.31"
        );
        let odd = 0x1 | CUSTOM_OPS | 0x1000000 | (1 << 40);
        assert_eq!(
            names(odd),
            vec![
                "0x1",
                "neff_feature_custom_ops",
                "arch_level_40",
                "0x10000000000"
            ]
        );
        assert_eq!(
            mask(serde_json::to_value(FeatureMask(odd)).unwrap()).unwrap(),
            odd
        );
        assert!(mask(serde_json::json!(["nope"])).is_err());
        assert_eq!(
            mask(serde_json::json!(["vnc", "NEFF_FEATURE_CUSTOM_OPS"])).unwrap(),
            VNC | CUSTOM_OPS
        );
        assert_eq!(bit_of("neff_feature_DMA_desc_higher_dim"), Some(0x200));
        assert_eq!(bit_of("dma_desc_higher_dim"), Some(0x200));
    }

    #[test]
    fn a_mask_reads_the_same_in_every_form() {
        // A spec's list, a header's text, a flag's text and a number agree
        // (`"0x3"` was refused in a spec's `features` and taken by the flag).
        let forms = [
            serde_json::json!(["0x3"]),
            serde_json::json!("0x3"),
            serde_json::json!(3),
            serde_json::json!(["0x1", "collective_has_offset"]),
            serde_json::json!("0b1,neff_feature_collective_has_offset"),
        ];
        for form in forms {
            let read: FeatureMask = serde_json::from_value(form.clone()).unwrap();
            assert_eq!(read, FeatureMask(3), "{form}");
        }
        assert_eq!("0x3".parse(), Ok(FeatureMask(3)));
        assert_eq!(parse_features("0x400,custom_ops"), Ok(0x404));
        assert_eq!(parse_features("Neff_Feature_Custom_Ops , dge"), Ok(0x1004));
        assert_eq!(parse_features("0x7FF_FFFF"), Ok(0x7FF_FFFF));
        let err = parse_features("vnc,bogus").unwrap_err();
        assert!(err.contains("bogus"), "{err}");
        for bad in ["", "vnc,", "0xZZ"] {
            assert!(parse_features(bad).is_err(), "{bad:?}");
        }
    }
}
