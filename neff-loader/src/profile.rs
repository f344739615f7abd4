//! The runtime a NEFF is checked against (spec §5.5).

use neff_schema::features::SUPPORTED_FEATURES_2_31;
use neff_schema::{Arch, HashLayoutPolicy};
use serde::Serialize;

/// The GPSIMD ucode ABI version of runtime 2.31 (`.rodata 0x84fe68`).
pub const UCODE_ABI_2_31: &str = "1.21.1.0";

/// The state-buffer offset an EVTACCEL carveout must have (INFERRED, §9 C17).
pub const EVTACCEL_OFFSET: u64 = 0x37FF8;

/// What the simulated runtime is and how it was configured for the load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
    #[serde(serialize_with = "serialize_hex")]
    #[schemars(with = "String")]
    pub supported_features: u64,
    /// The runtime's GPSIMD ucode ABI version; a ucode lib's major version must
    /// equal this one's (G24b).
    pub ucode_abi: String,
    /// The offset an EVTACCEL carveout must have on Cayman (G30). Default
    /// 0x37FF8: read from an IDA operand, INFERRED·MED (spec §9 C17).
    #[serde(serialize_with = "serialize_hex")]
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

fn serialize_hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}
