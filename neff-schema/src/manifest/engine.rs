//! Engines and their `sgNN/<eng>.json` manifests (spec §4.5).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::dma::DmaBlock;
use super::{extra_keys, Extra, Manifest};

/// A NeuronCore engine, in the runtime's `NEURON_ENG_NAMES` order. The names
/// are what def.json keys and DMA queue `owner`s use
/// (`al_hal_tpb_get_tpb_eng_type_from_str`, exact strcmp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// `pe` (0): the PE array.
    Pe,
    /// `act` (1): activation.
    Act,
    /// `pool` (2): pooling / GPSIMD.
    Pool,
    /// `dve` (3): the vector engine.
    Dve,
    /// `sp` (4): the sync processor.
    Sp,
}

impl Engine {
    /// Every engine in the runtime's loop order: pe, act, pool, dve, sp.
    pub const ALL: [Engine; 5] = [
        Engine::Pe,
        Engine::Act,
        Engine::Pool,
        Engine::Dve,
        Engine::Sp,
    ];

    /// Every engine's lower-case name, in [`Engine::ALL`] order.
    pub const ALL_NAMES: [&'static str; 5] = ["pe", "act", "pool", "dve", "sp"];

    /// The lower-case name (`pe`, `act`, `pool`, `dve`, `sp`).
    pub fn as_str(self) -> &'static str {
        Engine::ALL_NAMES[self as usize]
    }

    /// The runtime's engine type number (pe 0 … sp 4).
    pub fn index(self) -> u32 {
        self as u32
    }

    /// The engine the runtime's strcmp finds for `text`, if any (exact, lower case).
    pub fn parse_runtime(text: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.as_str() == text)
    }

    /// Bytes per instruction slot: 8 for SP, 64 for the others (spec §4.5).
    pub fn slot_size(self) -> u64 {
        match self {
            Engine::Sp => 8,
            _ => 64,
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of `pe`, `act`, `pool`, `dve`, `sp`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine {0:?}: expected pe, act, pool, dve or sp")]
pub struct UnknownEngine(pub String);

impl FromStr for Engine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Engine::parse_runtime(s).ok_or_else(|| UnknownEngine(s.to_string()))
    }
}

impl Serialize for Engine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Engine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

string_schema!(
    Engine,
    "A NeuronCore engine: pe, act, pool, dve or sp.",
    "enum": ["pe", "act", "pool", "dve", "sp"],
);

/// `sgNN/<eng>.json`: one engine's program. File names inside are resolved
/// relative to the subgraph folder.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineJson {
    /// The instruction stream member (`"pe.bin"`), headerless: 64-byte slots
    /// (SP: 8-byte), at most 0xFFFFFFFF bytes; an empty stream is valid.
    pub instr: Option<String>,
    /// DMA blocks this engine triggers (spec §4.4).
    pub dma: Option<Vec<DmaBlock>>,
    /// A label; the fixture uses `"<eng>_array_json"`.
    pub name: Option<String>,
    /// ACT only: the activation semaphore (fixture 9).
    pub act_semaphore: Option<u64>,
    /// ACT only: the act_info member (`"act_info.json"`; real compilers store
    /// it, the spec fixture does not). Its `act_func_sets` resolve the names
    /// in `activation_function_sets` to `<set>.json`, `_bkt.bin`, `_ctrl.bin`.
    pub act_info: Option<String>,
    /// ACT only: the activation table sets this engine loads, by name; each
    /// is an `act_func_sets` entry of the `act_info` member.
    pub activation_function_sets: Option<Vec<String>>,
    /// neuron-cc 1.x ACT only: the activation functions, as the compiler lists them.
    pub activation_functions: Option<Vec<serde_json::Value>>,
    /// DVE only: the DVE table members (real compilers write an array of
    /// one object; an object alone is read the same way).
    pub dve_tables: Option<DveTables>,
    /// Every other key (`profile_meta_data`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(EngineJson, DveTable);

/// `dve_tables`: the form neuronx-cc writes (an array) or a single object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum DveTables {
    /// `[{…}]`, as the compilers write it.
    List(Vec<DveTable>),
    /// `{…}`.
    One(DveTable),
}

impl DveTables {
    /// The table objects, whichever form.
    pub fn tables(&self) -> &[DveTable] {
        match self {
            DveTables::List(list) => list,
            DveTables::One(one) => std::slice::from_ref(one),
        }
    }
}

/// One DVE table object: members (relative to the subgraph folder) holding
/// the DVE's tables. Up to neuronx-cc 2.18 one `control_table`; from 2.21
/// a `control_fast_table` and a `control_slow_table`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DveTable {
    /// The control table member (`default_control_table.bin`).
    pub control_table: Option<String>,
    /// The fast control table member (2.21+).
    pub control_fast_table: Option<String>,
    /// The slow control table member (2.21+).
    pub control_slow_table: Option<String>,
    /// The datapath table member.
    pub datapath_table: Option<String>,
    /// The opcode table member.
    pub opcode_table: Option<String>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

impl DveTable {
    /// Every member this table object names, with its key.
    pub fn members(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("control_table", &self.control_table),
            ("control_fast_table", &self.control_fast_table),
            ("control_slow_table", &self.control_slow_table),
            ("datapath_table", &self.datapath_table),
            ("opcode_table", &self.opcode_table),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
    }
}

impl Manifest for EngineJson {
    const SCHEMA_NAME: &'static str = "engine";
}

impl EngineJson {
    /// The shape the fixture and the producer write for `engine`:
    /// `{"dma": [], "instr": "<eng>.bin", "name": "<eng>_array_json"}`.
    pub fn for_engine(engine: Engine) -> EngineJson {
        EngineJson {
            instr: Some(format!("{engine}.bin")),
            dma: Some(Vec::new()),
            name: Some(format!("{engine}_array_json")),
            ..EngineJson::default()
        }
    }

    /// Sets the instruction member name.
    pub fn instr(mut self, member: impl Into<String>) -> Self {
        self.instr = Some(member.into());
        self
    }

    /// Appends a DMA block.
    pub fn dma_block(mut self, block: DmaBlock) -> Self {
        self.dma.get_or_insert_with(Vec::new).push(block);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names() {
        for e in Engine::ALL {
            assert_eq!(e.as_str().parse::<Engine>().unwrap(), e);
        }
        assert!(
            "PE".parse::<Engine>().is_err(),
            "the runtime compares exactly"
        );
        assert_eq!(Engine::Dve.index(), 3);
        assert_eq!(Engine::Sp.slot_size(), 8);
    }

    #[test]
    fn fixture_shape_is_63_bytes() {
        let pe = EngineJson::for_engine(Engine::Pe).to_vec_pretty().unwrap();
        assert_eq!(pe.len(), 63, "spec §7: pe.json is 63 bytes");
        let dve = EngineJson::for_engine(Engine::Dve).to_vec_pretty().unwrap();
        assert_eq!(dve.len(), 65);
    }
}
