//! Feature-bit masks used by the loader's forward-compatibility trapdoor (spec §4.9, §5.1 G5).
//!
//! Per-bit names arrive with the manifest work; this module holds the masks the
//! container gates need.

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
}
