//! The runtime a NEFF is checked against (spec §5.5).

use neff_schema::features::SUPPORTED_FEATURES_2_31;
use neff_schema::Arch;
use serde::Serialize;

/// The GPSIMD ucode ABI version of runtime 2.31 (`.rodata 0x84fe68`).
pub const UCODE_ABI_2_31: &str = "1.21.1.0";

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
    /// Feature bits the runtime understands; others trip the trapdoor (G5).
    #[serde(serialize_with = "serialize_hex")]
    #[schemars(with = "String")]
    pub supported_features: u64,
    /// The runtime's GPSIMD ucode ABI version.
    pub ucode_abi: String,
}

impl Default for RuntimeProfile {
    /// Runtime 2.31 on a Cayman (trn2) instance with hash verification on.
    fn default() -> Self {
        RuntimeProfile {
            instance_arch: Arch::Cayman,
            allow_legacy_neff: false,
            verify_hash: true,
            supported_features: SUPPORTED_FEATURES_2_31,
            ucode_abi: UCODE_ABI_2_31.to_string(),
        }
    }
}

impl RuntimeProfile {
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
