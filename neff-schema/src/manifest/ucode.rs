//! GPSIMD ucode libraries (spec §4.6): the objects of def.json's `ucode_lib`
//! array and of the standalone `ucode_lib.json` member (`{"ucode_lib": [...]}`),
//! which producers write side by side (§9 C11).

use serde::{Deserialize, Serialize};

use super::{extra_keys, Extra, Manifest};

/// Every function's `opcode`: 133 = 0x85, the CUSTOM_OP header (−123 as int8).
pub const CUSTOM_OP_OPCODE: i64 = 133;
/// The member producers write next to the libraries.
pub const UCODE_LIB_JSON: &str = "ucode_lib.json";

/// One ucode library.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UcodeLib {
    /// REQUIRED. The library member, relative to the subgraph folder (an
    /// Xtensa position-independent ELF32); also the library's name, unique
    /// in the NEFF.
    pub library: String,
    /// REQUIRED. The ucode ABI version the library was built for; its major
    /// (before the first `.`) must be 1.
    pub ulib_to_ucode_version: String,
    /// The ISA version (producer; not read by the loader).
    pub ulib_to_isa_version: Option<String>,
    /// Whether this is a compiler built-in library (producer).
    pub is_builtin: Option<bool>,
    /// Must be 0 (the runtime asserts it).
    pub cpu_id: Option<u64>,
    /// 0, 1 or 8.
    pub total_cpus: Option<u64>,
    /// Library-level opcode some runtime pages describe (−123 = built-in);
    /// producers put `opcode` on each function instead (§9 C13).
    pub opcode: Option<i64>,
    /// The functions the library provides.
    pub functions: Option<Vec<UcodeFunction>>,
    /// Every other key (`add_lib`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One function of a ucode library.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UcodeFunction {
    /// REQUIRED. The function name (at most 64 characters).
    pub name: String,
    /// REQUIRED. Always 133 (CUSTOM_OP) in producer output.
    pub opcode: i64,
    /// The function id byte, dense 0, 1, 2… per subgraph.
    pub sub_opcode: Option<u64>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The standalone `ucode_lib.json` member: `{"ucode_lib": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UcodeLibJson {
    /// The libraries, as in def.json's `ucode_lib`.
    pub ucode_lib: Vec<UcodeLib>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(UcodeLib, UcodeFunction, UcodeLibJson);

impl Manifest for UcodeLibJson {
    const SCHEMA_NAME: &'static str = "ucode-lib";
}

impl UcodeLib {
    /// A library in the producer's shape: `cpu_id` 0, `total_cpus` 1,
    /// `is_builtin` false, no functions yet.
    pub fn new(library: impl Into<String>, ulib_to_ucode_version: impl Into<String>) -> UcodeLib {
        UcodeLib {
            library: library.into(),
            ulib_to_ucode_version: ulib_to_ucode_version.into(),
            ulib_to_isa_version: None,
            is_builtin: Some(false),
            cpu_id: Some(0),
            total_cpus: Some(1),
            opcode: None,
            functions: Some(Vec::new()),
            extra: Extra::new(),
        }
    }

    /// Adds a function with opcode 133 and no `sub_opcode` yet (a builder
    /// numbers them densely per subgraph).
    pub fn function(mut self, name: impl Into<String>) -> Self {
        self.functions
            .get_or_insert_with(Vec::new)
            .push(UcodeFunction::new(name));
        self
    }

    /// Sets `total_cpus`.
    pub fn total_cpus(mut self, n: u64) -> Self {
        self.total_cpus = Some(n);
        self
    }

    /// Sets `ulib_to_isa_version`.
    pub fn isa_version(mut self, version: impl Into<String>) -> Self {
        self.ulib_to_isa_version = Some(version.into());
        self
    }
}

impl UcodeFunction {
    /// A function with opcode 133 and no `sub_opcode`.
    pub fn new(name: impl Into<String>) -> UcodeFunction {
        UcodeFunction {
            name: name.into(),
            opcode: CUSTOM_OP_OPCODE,
            sub_opcode: None,
            extra: Extra::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{from_slice, to_vec_pretty};

    #[test]
    fn producer_shape_round_trips() {
        let text = r#"{"ucode_lib": [{"library": "libfoo.so", "ulib_to_ucode_version": "1.21.1.0",
            "ulib_to_isa_version": "3", "is_builtin": true, "cpu_id": 0, "total_cpus": 8,
            "functions": [{"name": "topk", "opcode": 133, "sub_opcode": 0}], "add_lib": true}],
            "comment": "kept"}"#;
        let doc: UcodeLibJson = from_slice(UCODE_LIB_JSON, text.as_bytes()).unwrap();
        let lib = &doc.ucode_lib[0];
        assert_eq!(lib.extra["add_lib"], true);
        let back: serde_json::Value =
            serde_json::from_slice(&to_vec_pretty(&doc).unwrap()).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }
}
