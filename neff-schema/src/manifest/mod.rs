//! Typed views of the JSON manifests a NEFF carries (spec §4), one module per
//! manifest:
//!
//! | module | member | spec |
//! |---|---|---|
//! | [`neff_json`] | `neff.json` (TVM graph JSON with the `__kelf` node) | §4.1 |
//! | [`kelf`] | `kelf-<i>.json` (the KELF descriptor) | §4.2 |
//! | [`def_json`] | `sgNN/def.json` (vars, DMA queues, carveouts, fp8 config) | §4.3, §4.7, §4.8 |
//! | [`dma`] | DMA blocks and descriptors (`dma` arrays) | §4.4 |
//! | [`engine`] | `sgNN/<eng>.json` | §4.5 |
//! | [`ucode`] | GPSIMD ucode libraries and `ucode_lib.json` | §4.6 |
//! | [`act_info`] | `sgNN/act_info.json` (activation table sets) | §11 |
//! | [`dtype`] | dtype strings shared by the others | §4.1, §4.3.1 |
//!
//! Every object keeps the keys it does not model in a flattened `extra` map,
//! so reading a manifest and writing it back loses nothing (an explicit
//! `null` on a modelled optional key is the one thing not kept). Strings the
//! runtime compares (`type`, `owner`, `target`) stay strings, so any value a
//! file holds survives a round trip; typed helpers ([`engine::Engine`],
//! [`def_json::VarType`], [`def_json::QueueType`]) give the known spellings.
//!
//! [`to_vec_pretty`] writes what producers write: 2-space indentation, keys
//! sorted, no trailing newline. The `extra` keys are merged with the modelled
//! ones before sorting; an `extra` key with the name of a modelled key
//! replaces it in the output (an escape hatch for negative fixtures).
//!
//! These types describe shapes, not loadability: the loader's gates decide
//! what the runtime accepts.

pub mod act_info;
pub mod def_json;
pub mod dma;
pub mod dtype;
pub mod engine;
pub mod kelf;
pub mod neff_json;
pub mod restyle;
pub mod ucode;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, ErrorKind};

pub use act_info::{ActFuncSet, ActInfo};
pub use def_json::{
    Carveout, CcStreams, DebugInfo, DefJson, DmaQueue, DynamicDma, Fp8Config, QueueType, Var,
    VarType,
};
pub use dma::{DmaBlock, DmaDesc, DmaSource};
pub use dtype::Dtype;
pub use engine::{DveTable, DveTables, Engine, EngineJson};
pub use kelf::{GraphRef, KelfDescriptor};
pub use neff_json::{
    GraphAttrs, Metadata, NeffJson, Node, NodeAttrs, NodeEntry, Signature, SignatureTensor,
    TaggedList,
};
pub use ucode::{UcodeFunction, UcodeLib, UcodeLibJson};

/// The keys of a JSON object that a typed manifest does not model, kept as
/// they are.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// Parses `bytes` as the manifest `T`; errors ([`ErrorKind::ManifestSyntax`])
/// name `member`, and serde_json's message the line and column.
pub fn from_slice<T: DeserializeOwned>(member: &str, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|source| {
        Error::new(ErrorKind::ManifestSyntax, source.to_string())
            .in_member(member)
            .with_source(source)
    })
}

/// Encodes `value` the way producers write manifests: pretty-printed with a
/// 2-space indent, object keys sorted (at every depth), no trailing newline.
pub fn to_vec_pretty<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    let encode = |source: serde_json::Error| {
        let name = std::any::type_name::<T>().rsplit("::").next();
        let message = format!("cannot encode as JSON: {source}");
        Error::new(ErrorKind::ManifestEncode, message)
            .in_member(name.unwrap_or("manifest"))
            .with_source(source)
    };
    // serde_json's Map is a BTreeMap (no `preserve_order`): going through a
    // Value sorts every object's keys and merges flattened extras.
    let tree = serde_json::to_value(value).map_err(encode)?;
    serde_json::to_vec_pretty(&tree).map_err(encode)
}

/// What every typed manifest offers: a schema name, parsing and encoding.
pub trait Manifest: Serialize + DeserializeOwned + schemars::JsonSchema {
    /// The name `neff schema` prints this manifest's JSON Schema under.
    const SCHEMA_NAME: &'static str;

    /// Parses a member's bytes; errors name `member` and the line and column.
    fn from_slice(member: &str, bytes: &[u8]) -> Result<Self, Error> {
        from_slice(member, bytes)
    }

    /// Encodes as producers do (see [`to_vec_pretty`]).
    fn to_vec_pretty(&self) -> Result<Vec<u8>, Error> {
        to_vec_pretty(self)
    }
}

/// Adds the `key` builder and `extra` accessors to a manifest object type.
macro_rules! extra_keys {
    ($($ty:ty),* $(,)?) => {$(
        impl $ty {
            /// Sets a key this type does not model (or, when it has the name of
            /// a modelled key, replaces that key in the encoded output).
            pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
                self.extra.insert(key.into(), value.into());
                self
            }
        }
    )*};
}
pub(crate) use extra_keys;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_output_sorts_keys_and_has_no_trailing_newline() {
        let v = serde_json::json!({"b": 1, "a": {"d": [], "c": "x"}});
        let text = String::from_utf8(to_vec_pretty(&v).unwrap()).unwrap();
        assert_eq!(
            text,
            "{\n  \"a\": {\n    \"c\": \"x\",\n    \"d\": []\n  },\n  \"b\": 1\n}"
        );
    }

    #[test]
    fn parse_errors_name_the_member_and_position() {
        let err = from_slice::<KelfDescriptor>("kelf-0.json", b"{\n  \"graphs\": 3\n}")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("kelf-0.json: "), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    /// Parses `bytes` as `T`, writes it back and checks the JSON is the same
    /// value: every key, every value.
    fn assert_lossless<T: Manifest>(member: &str, bytes: &[u8]) {
        let typed = T::from_slice(member, bytes).unwrap();
        let again = typed.to_vec_pretty().unwrap();
        let original: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        let written: serde_json::Value = serde_json::from_slice(&again).unwrap();
        assert_eq!(written, original, "{member}");
    }

    fn assert_identical<T: Manifest>(member: &str, bytes: &[u8]) {
        let again = T::from_slice(member, bytes)
            .unwrap()
            .to_vec_pretty()
            .unwrap();
        assert_eq!(again, bytes, "{member}");
    }

    #[test]
    fn the_allreduce_example_manifests_round_trip_losslessly() {
        macro_rules! example {
            ($path:literal) => {
                include_bytes!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../examples/allreduce/",
                    $path
                ))
            };
        }
        assert_lossless::<NeffJson>("neff.json", example!("neff.json"));
        assert_lossless::<KelfDescriptor>("kelf-a.json", example!("kelf-a.json"));
        assert_lossless::<DefJson>("sg00/def.json", example!("sg00/def.json"));
        assert_lossless::<EngineJson>("sg00/pe.json", example!("sg00/pe.json"));
        assert_lossless::<EngineJson>("sg00/act.json", example!("sg00/act.json"));
        assert_lossless::<EngineJson>("sg00/pool.json", example!("sg00/pool.json"));
        assert_lossless::<EngineJson>("sg00/dve.json", example!("sg00/dve.json"));
        assert_lossless::<EngineJson>("sg00/sp.json", example!("sg00/sp.json"));

        // The sg00 manifests are already in producer form: byte-identical.
        assert_identical::<DefJson>("sg00/def.json", example!("sg00/def.json"));
        assert_identical::<EngineJson>("sg00/pe.json", example!("sg00/pe.json"));
        assert_identical::<EngineJson>("sg00/pool.json", example!("sg00/pool.json"));

        let def = DefJson::from_slice("sg00/def.json", example!("sg00/def.json")).unwrap();
        let ids: Vec<(&str, u64)> = def
            .vars_by_id()
            .iter()
            .map(|(n, v)| (*n, v.var_id))
            .collect();
        assert_eq!(
            ids,
            [
                ("input", 0),
                ("SB", 1),
                ("output", 2),
                ("gradient_in", 3),
                ("gradient_out", 4)
            ]
        );
        assert_eq!(
            def.var["output"].extra["#file-name"],
            "value_nn__output:0-simout.npy"
        );
        assert_eq!(def.var["input"].transfer_type.as_deref(), Some("input"));
    }
}
