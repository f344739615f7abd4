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

/// The mask for a list of names (see [`bit_of`]) or `0x…` single bits, the
/// inverse of [`names`].
pub fn mask_of<S: AsRef<str>>(names: &[S]) -> Result<u64, Error> {
    let mut mask = 0;
    for name in names {
        let name = name.as_ref();
        let bit = bit_of(name)
            .or_else(|| {
                let hex = name.trim().strip_prefix("0x")?;
                u64::from_str_radix(hex, 16)
                    .ok()
                    .filter(|v| v.count_ones() == 1)
            })
            .ok_or_else(|| unknown_feature(name))?;
        mask |= bit;
    }
    Ok(mask)
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
        assert_eq!(mask_of(&names(all)).unwrap(), all);
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
        assert_eq!(mask_of(&names(odd)).unwrap(), odd);
        assert!(mask_of(&["nope"]).is_err());
        assert_eq!(
            mask_of(&["vnc", "NEFF_FEATURE_CUSTOM_OPS"]).unwrap(),
            VNC | CUSTOM_OPS
        );
        assert_eq!(bit_of("neff_feature_DMA_desc_higher_dim"), Some(0x200));
        assert_eq!(bit_of("dma_desc_higher_dim"), Some(0x200));
        assert!(mask_of(&["0x3"]).is_err(), "one bit per entry");
    }
}
