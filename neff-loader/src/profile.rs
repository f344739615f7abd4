//! The runtime a NEFF is checked against (spec §5.5).

use neff_schema::features::{parse_mask, FeatureMask, SUPPORTED_FEATURES_2_31};
use neff_schema::{Arch, HashLayoutPolicy};
use serde::{Deserialize, Serialize};

/// The Neuron runtime release whose loader the gates model.
pub const RUNTIME_VERSION: &str = "2.31";

/// The GPSIMD ucode ABI version of runtime 2.31 (`.rodata 0x84fe68`).
pub const UCODE_ABI_2_31: &str = "1.21.1.0";

/// The state-buffer offset an EVTACCEL carveout must have (INFERRED, §9 C17):
/// the data model's constant, re-exported.
pub use neff_schema::manifest::def_json::EVTACCEL_OFFSET;

/// What the simulated runtime is and how it was configured for the load.
///
/// It is data: `neff verify`'s flags, Python's keyword arguments and the
/// fixture manifest's `profile` objects are this struct (JSON keys are the
/// field names; a key left out keeps its default; masks and offsets are a
/// number or text as `neff verify` reads them, `supported_features` also
/// feature names or a list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeProfile {
    /// The live instance's NeuronCore architecture (`al_hal_tpb_get_arch_type()`).
    pub instance_arch: Arch,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`: relaxes the arch check and the Cayman
    /// state-buffer reservation check, and nothing else.
    pub allow_legacy_neff: bool,
    /// The per-load hash verification flag (`neff_parse`'s third argument).
    pub verify_hash: bool,
    /// Which layouts of the payload digest G9 accepts (default: either). Real
    /// compilers write both (spec §11.1); which one a runtime started with
    /// `NEURON_RT_VALIDATE_HASH=true` computes is not known.
    pub hash_layout: HashLayoutPolicy,
    /// Feature bits the runtime understands; others trip the trapdoor (G5).
    #[serde(
        serialize_with = "serialize_hex",
        deserialize_with = "FeatureMask::bits"
    )]
    #[schemars(with = "FeatureMask")]
    pub supported_features: u64,
    /// The runtime's GPSIMD ucode ABI version; a ucode lib's major version must
    /// equal this one's (G24b).
    pub ucode_abi: String,
    /// The offset an EVTACCEL carveout must have on Cayman (G30). Default
    /// 0x37FF8: read from an IDA operand, INFERRED·MED (spec §9 C17).
    #[serde(serialize_with = "serialize_hex", deserialize_with = "mask_of")]
    #[schemars(with = "String")]
    pub evtaccel_offset: u64,
    /// Enforce dense var_ids (`max(var_id) + 1 == count`, G20a). The spec cannot
    /// tell whether the runtime always runs this check or only under a def.json
    /// key (§9 C10); on by default.
    pub check_var_ids: bool,
    /// `NEURON_RT_VIRTUAL_CORE_SIZE`: used for the virtual core size (G29) when
    /// the header has feature bit 0x400 (`neff_feature_vnc`); otherwise, and when
    /// unset, the header's `vnc_size` is used. LOW confidence (spec §2.1 notes).
    pub virtual_core_size: Option<u32>,
    /// Also accept a `__kelf` node marked by `op: "__kelf"` (the producer-page
    /// reading, §9 C6). The decompiled runtime does not; off by default.
    pub lenient_kelf_node: bool,
    /// Also accept `var` and `dma_queue` as arrays of objects with a `name`
    /// key (the metadata-schema reading, §9 C8). The fixture uses objects keyed
    /// by name; off by default.
    pub accept_array_sections: bool,
}

impl Default for RuntimeProfile {
    /// Runtime 2.31 on a Cayman (trn2) instance with hash verification on.
    fn default() -> Self {
        RuntimeProfile {
            instance_arch: Arch::Cayman,
            allow_legacy_neff: false,
            verify_hash: true,
            hash_layout: HashLayoutPolicy::Any,
            supported_features: SUPPORTED_FEATURES_2_31,
            ucode_abi: UCODE_ABI_2_31.to_string(),
            evtaccel_offset: EVTACCEL_OFFSET,
            check_var_ids: true,
            virtual_core_size: None,
            lenient_kelf_node: false,
            accept_array_sections: false,
        }
    }
}

impl RuntimeProfile {
    /// The major number of [`RuntimeProfile::ucode_abi`] (the part before the first `.`).
    pub fn ucode_abi_major(&self) -> Option<i64> {
        self.ucode_abi.split('.').next()?.trim().parse().ok()
    }

    /// The default profile on another instance arch.
    pub fn for_arch(instance_arch: Arch) -> Self {
        RuntimeProfile {
            instance_arch,
            ..RuntimeProfile::default()
        }
    }
}

/// A number, or text as [`parse_mask`] reads it.
fn mask_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(u64),
        Text(String),
    }
    match NumberOrText::deserialize(d)? {
        NumberOrText::Number(n) => Ok(n),
        NumberOrText::Text(t) => parse_mask(&t).map_err(serde::de::Error::custom),
    }
}

fn serialize_hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_data_with_defaults() {
        let p: RuntimeProfile = serde_json::from_str(
            r#"{"verify_hash": false, "supported_features": ["vnc", 2], "evtaccel_offset": "0x1000"}"#,
        )
        .unwrap();
        assert_eq!(
            p,
            RuntimeProfile {
                verify_hash: false,
                supported_features: 0x402,
                evtaccel_offset: 0x1000,
                ..RuntimeProfile::default()
            }
        );
        let back: RuntimeProfile =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let e = serde_json::from_str::<RuntimeProfile>(r#"{"no_verify_hash": true}"#);
        assert!(e.unwrap_err().to_string().contains("unknown field"));
        let e = serde_json::from_str::<RuntimeProfile>(r#"{"supported_features": "zz"}"#);
        assert!(e.unwrap_err().to_string().contains("zz"));
    }
}
