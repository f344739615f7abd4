//! `sgNN/def.json`, one subgraph's definition (spec §4.3), with its `var`
//! entries (§4.3.1), `dma_queue` entries (§4.3.2), state-buffer carveouts
//! (§4.7) and fp8 conversion config (§4.8).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::dma::DmaBlock;
use super::dtype::Dtype;
use super::engine::Engine;
use super::ucode::UcodeLib;
use super::{extra_keys, Extra, Manifest};

/// `sgNN/def.json`. Keys are listed in the loader's dispatch order.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DefJson {
    /// The graph name the runtime logs (fixture `"definition"`).
    pub name: Option<String>,
    /// REQUIRED. The variables, keyed by name. `var_id`s must be dense
    /// 0..N-1 and at least one variable must be an output.
    pub var: BTreeMap<String, Var>,
    /// The DMA queues, keyed by name.
    pub dma_queue: Option<BTreeMap<String, DmaQueue>>,
    /// Collective replica groups (producer: 3-D `[topology][group][rank]`;
    /// fixture `[[]]`).
    pub replica_groups: Option<Vec<serde_json::Value>>,
    /// Collective source/target pairs.
    pub src_target_pairs: Option<Vec<serde_json::Value>>,
    /// Overrides the default ExtISA function set (`functions`, `add_lib`; at most 18 ops).
    pub ext_isa_ucode_lib_def: Option<Extra>,
    /// GPSIMD ucode libraries (spec §4.6); the same array is written as the
    /// standalone `ucode_lib.json` member.
    pub ucode_lib: Option<Vec<UcodeLib>>,
    /// State-buffer carveouts. Required (at least `[]`) when the target
    /// resolves to CAYMAN unless `NEURON_RT_ALLOW_LEGACY_NEFF=1`.
    pub runtime_statebuffer_reservation: Option<Vec<Carveout>>,
    /// Collective streams (default 1), the older spelling; neuronx-cc 2.18+
    /// writes [`DefJson::cc_streams`] instead.
    pub num_streams: Option<u64>,
    /// Collective streams as neuronx-cc 2.18+ writes them:
    /// `{"num_streams": N}`.
    pub cc_streams: Option<CcStreams>,
    /// Top-level DMA blocks.
    pub dma: Option<Vec<DmaBlock>>,
    /// FP8 conversion settings.
    pub fp8_conversion_config: Option<Fp8Config>,
    /// The PE engine's manifest member (`"pe.json"`); absent = empty placeholder with a warning.
    pub pe: Option<String>,
    /// The ACT engine's manifest member.
    pub act: Option<String>,
    /// The POOL engine's manifest member.
    pub pool: Option<String>,
    /// The DVE engine's manifest member.
    pub dve: Option<String>,
    /// The SP engine's manifest member.
    pub sp: Option<String>,
    /// Schema version (not read by the loader; fixture `"0.6-"`).
    pub version: Option<String>,
    /// Producer feature names (not read by the loader; the header mask is authoritative).
    pub neff_features: Option<Vec<String>>,
    /// The PE instruction member as the compilers also name it here (`pe.json` names it too).
    pub pe_instr: Option<String>,
    /// The PE debug listing members (read as references).
    pub pe_dbg: Option<Vec<String>>,
    /// The PE assembly listing members (read as references).
    pub pe_asm_dbg: Option<Vec<String>>,
    /// The ACT instruction member as the compilers also name it here (`act.json` names it too).
    pub act_instr: Option<String>,
    /// The ACT debug listing members (read as references).
    pub act_dbg: Option<Vec<String>>,
    /// The ACT assembly listing members (read as references).
    pub act_asm_dbg: Option<Vec<String>>,
    /// The POOL instruction member as the compilers also name it here (`pool.json` names it too).
    pub pool_instr: Option<String>,
    /// The POOL debug listing members (read as references).
    pub pool_dbg: Option<Vec<String>>,
    /// The POOL assembly listing members (read as references).
    pub pool_asm_dbg: Option<Vec<String>>,
    /// The DVE instruction member as the compilers also name it here (`dve.json` names it too).
    pub dve_instr: Option<String>,
    /// The DVE debug listing members (read as references).
    pub dve_dbg: Option<Vec<String>>,
    /// The DVE assembly listing members (read as references).
    pub dve_asm_dbg: Option<Vec<String>>,
    /// The SP instruction member as the compilers also name it here (`sp.json` names it too).
    pub sp_instr: Option<String>,
    /// The SP debug listing members (read as references).
    pub sp_dbg: Option<Vec<String>>,
    /// The SP assembly listing members (read as references).
    pub sp_asm_dbg: Option<Vec<String>>,
    /// The DMA debug listing members (read as references).
    pub dma_dbg: Option<Vec<String>>,
    /// Debug references: `wavegraph` names a member beside def.json.
    pub debug_info: Option<DebugInfo>,
    /// Every other key (`git_version`, `runtime_event_count`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(DefJson);

impl Manifest for DefJson {
    const SCHEMA_NAME: &'static str = "def-json";
}

impl DefJson {
    /// The engine manifest member `engine`'s key names, if any.
    pub fn engine(&self, engine: Engine) -> Option<&str> {
        match engine {
            Engine::Pe => &self.pe,
            Engine::Act => &self.act,
            Engine::Pool => &self.pool,
            Engine::Dve => &self.dve,
            Engine::Sp => &self.sp,
        }
        .as_deref()
    }

    /// Sets the engine manifest member for `engine`.
    pub fn set_engine(&mut self, engine: Engine, member: Option<String>) {
        let slot = match engine {
            Engine::Pe => &mut self.pe,
            Engine::Act => &mut self.act,
            Engine::Pool => &mut self.pool,
            Engine::Dve => &mut self.dve,
            Engine::Sp => &mut self.sp,
        };
        *slot = member;
    }

    /// Sets the instruction-stream member def.json names for `engine`
    /// (`pe_instr`, …; neuronx-cc writes them beside the manifest keys).
    pub fn set_instr(&mut self, engine: Engine, member: Option<String>) {
        let slot = match engine {
            Engine::Pe => &mut self.pe_instr,
            Engine::Act => &mut self.act_instr,
            Engine::Pool => &mut self.pool_instr,
            Engine::Dve => &mut self.dve_instr,
            Engine::Sp => &mut self.sp_instr,
        };
        *slot = member;
    }

    /// The variables ordered by `var_id` (name order among equal ids).
    pub fn vars_by_id(&self) -> Vec<(&str, &Var)> {
        let mut vars: Vec<(&str, &Var)> = self.var.iter().map(|(k, v)| (k.as_str(), v)).collect();
        vars.sort_by_key(|(name, v)| (v.var_id, *name));
        vars
    }
}

/// A variable's `type`: which memory reference kind it becomes (spec §4.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VarType {
    /// `state-buffer` (MR_SB 1).
    StateBuffer,
    /// `input` (MR_INPUT 5); counted as a model input.
    Input,
    /// `output` (MR_OUTPUT 6); counted as a model output.
    Output,
    /// `tmp-buf` (MR_TMP_BUF 4).
    TmpBuf,
    /// `virtual` (MR_VIRTUAL_TMP_BUF 8).
    Virtual,
    /// `pointer` (MR_PTR 7); `size` must be 8.
    Pointer,
    /// `list` (MR_LIST 9).
    List,
    /// `file`: weights from a member (MR_BUFFER 3).
    File,
    /// `remote` (MR_REMOTE 11).
    Remote,
    /// `shared`.
    Shared,
    /// `sharded`.
    Sharded,
    /// `main`.
    Main,
    /// `dge-table`.
    DgeTable,
}

impl VarType {
    /// Every known type.
    pub const ALL: [VarType; 13] = [
        VarType::StateBuffer,
        VarType::Input,
        VarType::Output,
        VarType::TmpBuf,
        VarType::Virtual,
        VarType::Pointer,
        VarType::List,
        VarType::File,
        VarType::Remote,
        VarType::Shared,
        VarType::Sharded,
        VarType::Main,
        VarType::DgeTable,
    ];

    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            VarType::StateBuffer => "state-buffer",
            VarType::Input => "input",
            VarType::Output => "output",
            VarType::TmpBuf => "tmp-buf",
            VarType::Virtual => "virtual",
            VarType::Pointer => "pointer",
            VarType::List => "list",
            VarType::File => "file",
            VarType::Remote => "remote",
            VarType::Shared => "shared",
            VarType::Sharded => "sharded",
            VarType::Main => "main",
            VarType::DgeTable => "dge-table",
        }
    }

    /// The type a manifest string names (exact).
    pub fn parse(text: &str) -> Option<VarType> {
        VarType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

string_schema!(
    VarType,
    "Variable type (spec §4.3.1).",
    "enum": VarType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
);

/// One `var` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Var {
    /// REQUIRED. The memory reference kind (`input`, `output`, `tmp-buf`, `state-buffer`, `file`, ...).
    #[serde(rename = "type")]
    #[schemars(with = "VarType")]
    pub kind: String,
    /// REQUIRED. Dense 0..N-1 across the subgraph. Binding contract: inputs
    /// then outputs take ids 0.. in the order the model's tensors are numbered.
    pub var_id: u64,
    /// Alignment in bytes; a power of two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<u64>,
    /// Element type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<Dtype>,
    /// Shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Shape as laid out on the device (fixture `[1,1,1,32]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_shape: Option<Vec<u64>>,
    /// Shape as the framework sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework_shape: Option<Vec<u64>>,
    /// Size in bytes; required for input, output, tmp-buf, virtual and pointer (8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `virtual` only: offset into the backing buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_variable_off: Option<u64>,
    /// `virtual` only: the backing buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_buf: Option<String>,
    /// `pointer` only: the var it points to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referenced_var_id: Option<u64>,
    /// Which DMA fabric the var is reached through (`"main"`, `"alt"`; neuronx-cc 2.21+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_path: Option<String>,
    /// `list` only: the listed var ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<u64>>,
    /// `file` only: the weights member, relative to the subgraph folder;
    /// `.npy` (v1) is parsed as numpy, anything else is raw bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// `file` only: a prefix for `file_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Producer annotation `#transfer-type` (not read by the loader).
    #[serde(
        rename = "#transfer-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub transfer_type: Option<String>,
    /// Producer annotation: bytes per element (not read by the loader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_size: Option<u64>,
    /// Every other key (`#file-name`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(Var);

impl Var {
    /// A variable of `kind` with `var_id` and nothing else.
    pub fn new(kind: VarType, var_id: u64) -> Var {
        Var::of_kind(kind.as_str(), var_id)
    }

    /// A variable with any `type` string.
    pub fn of_kind(kind: impl Into<String>, var_id: u64) -> Var {
        Var {
            kind: kind.into(),
            var_id,
            alignment: None,
            dtype: None,
            shape: None,
            internal_shape: None,
            framework_shape: None,
            size: None,
            backing_variable_off: None,
            backing_buf: None,
            referenced_var_id: None,
            fabric_path: None,
            list: None,
            file_name: None,
            prefix: None,
            transfer_type: None,
            element_size: None,
            extra: Extra::new(),
        }
    }

    /// The known type, if `kind` is one.
    pub fn var_type(&self) -> Option<VarType> {
        VarType::parse(&self.kind)
    }

    /// Sets the size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the element type and shape.
    pub fn tensor(mut self, dtype: Dtype, shape: impl Into<Vec<u64>>) -> Self {
        self.dtype = Some(dtype);
        self.shape = Some(shape.into());
        self
    }
}

/// A DMA queue's `type` (spec §4.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueType {
    /// `in` (IN 7): model inputs.
    In,
    /// `out` (OUT 8): model outputs.
    Out,
    /// `data` (DATA 6, or INDIRECT_MEMCPY 9 with `indirect_memcpy`).
    Data,
    /// `act_load` (DYNAMIC_ACT_TBL 11): at most one per NEFF, `num_queues` 1.
    ActLoad,
    /// `embedding_update` (EMBEDDING_UPDATE 15).
    EmbeddingUpdate,
    /// `dynamic`: a queue the device fills at run time, with a `dynamic_dma`
    /// object (`SB_scratch_partition_offset`, `SB_scratch_partition_size`);
    /// every queue neuronx-cc 2.23 writes (spec §11.4).
    Dynamic,
}

impl QueueType {
    /// Every queue type.
    pub const ALL: [QueueType; 6] = [
        QueueType::In,
        QueueType::Out,
        QueueType::Data,
        QueueType::ActLoad,
        QueueType::EmbeddingUpdate,
        QueueType::Dynamic,
    ];

    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::In => "in",
            QueueType::Out => "out",
            QueueType::Data => "data",
            QueueType::ActLoad => "act_load",
            QueueType::EmbeddingUpdate => "embedding_update",
            QueueType::Dynamic => "dynamic",
        }
    }

    /// The type a manifest string names (exact).
    pub fn parse(text: &str) -> Option<QueueType> {
        QueueType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

impl fmt::Display for QueueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for QueueType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for QueueType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        QueueType::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown DMA queue type {text:?}: expected in, out, data, act_load, embedding_update or dynamic"
            ))
        })
    }
}

string_schema!(
    QueueType,
    "DMA queue type (spec §4.3.2).",
    "enum": ["in", "out", "data", "act_load", "embedding_update", "dynamic"],
);

/// One `dma_queue` entry.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DmaQueue {
    /// The owning engine: `pe`, `act`, `pool`, `dve` or `sp`. Optional
    /// (neuron-cc 1.15 writes `pinned` queues without one); one that is
    /// present must be an engine (G21a).
    #[schemars(with = "Option<Engine>")]
    pub owner: Option<String>,
    /// REQUIRED. The queue type: in, out, data, act_load, embedding_update or dynamic.
    #[serde(rename = "type")]
    #[schemars(with = "QueueType")]
    pub kind: String,
    /// The completion semaphore.
    pub semaphore: Option<u64>,
    /// Completion semaphores, one per queue of the set (at most 32).
    pub semaphore_set: Option<Vec<u64>>,
    /// Queues in the set (at most 16 by AWS's documentation; real compilers
    /// write 16 on `in` queues), allowed on every type; must be 1 for
    /// `act_load`.
    pub num_queues: Option<u64>,
    /// `data` queues only: an indirect memcpy (INDIRECT_MEMCPY) queue.
    pub indirect_memcpy: Option<bool>,
    /// `dynamic` queues: the state-buffer scratch area the device fills.
    pub dynamic_dma: Option<DynamicDma>,
    /// Which DMA fabric the queue uses: `"main"` or `"alt"` (neuronx-cc 2.21+).
    pub fabric_path: Option<String>,
    /// neuron-cc 1.x / neuronx-cc weight queues: pinned to the device (no owner).
    pub pinned: Option<serde_json::Value>,
    /// Every other key (`queue_instances`, a list of strings refused on
    /// in/out/embedding_update queues; `pinned`, `dge`, `dynamic_dma`,
    /// `embedding_update_sync_semaphore`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(DmaQueue);

impl DmaQueue {
    /// A queue owned by `owner` of type `kind`.
    pub fn new(owner: Engine, kind: QueueType) -> DmaQueue {
        DmaQueue {
            owner: Some(owner.as_str().to_string()),
            kind: kind.as_str().to_string(),
            semaphore: None,
            semaphore_set: None,
            num_queues: None,
            indirect_memcpy: None,
            dynamic_dma: None,
            fabric_path: None,
            pinned: None,
            extra: Extra::new(),
        }
    }

    /// Sets the completion semaphore.
    pub fn semaphore(mut self, semaphore: u64) -> Self {
        self.semaphore = Some(semaphore);
        self
    }

    /// Sets the completion semaphores of a queue set.
    pub fn semaphore_set(mut self, semaphores: impl Into<Vec<u64>>) -> Self {
        self.semaphore_set = Some(semaphores.into());
        self
    }

    /// Sets the number of queues in the set.
    pub fn num_queues(mut self, n: u64) -> Self {
        self.num_queues = Some(n);
        self
    }

    /// Marks a `data` queue as an indirect memcpy queue.
    pub fn indirect_memcpy(mut self, on: bool) -> Self {
        self.indirect_memcpy = Some(on);
        self
    }

    /// The owner, if it is present and an engine name.
    pub fn owner_engine(&self) -> Option<Engine> {
        self.owner.as_deref().and_then(Engine::parse_runtime)
    }

    /// The type, if it is a known one.
    pub fn queue_type(&self) -> Option<QueueType> {
        QueueType::parse(&self.kind)
    }
}

/// def.json `debug_info`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DebugInfo {
    /// The wavegraph member (neuron-cc 1.x: `wavegraph-bin.json`).
    pub wavegraph: Option<String>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `cc_streams`: the collective streams (neuronx-cc 2.18+).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CcStreams {
    /// Number of collective streams.
    pub num_streams: Option<u64>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `dynamic_dma` of a `dynamic` queue: where in each state-buffer partition
/// the device stages the descriptors it generates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DynamicDma {
    /// Byte offset of the scratch area in each partition.
    #[serde(
        rename = "SB_scratch_partition_offset",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sb_scratch_partition_offset: Option<u64>,
    /// Bytes of the scratch area in each partition.
    #[serde(
        rename = "SB_scratch_partition_size",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sb_scratch_partition_size: Option<u64>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(CcStreams, DynamicDma, DebugInfo);

/// The only carveout type: `"evtaccel"` (KBIN_SB_CARVEOUT_TYPE_EVTACCEL).
pub const EVTACCEL: &str = "evtaccel";
/// The partition an EVTACCEL carveout must start at on CAYMAN (G30).
pub const EVTACCEL_BASE_PARTITION: u64 = 0;
/// The partition count an EVTACCEL carveout must span on CAYMAN (G30).
pub const EVTACCEL_PARTITIONS: u64 = 128;
/// The offset an EVTACCEL carveout must have on CAYMAN (G30; the spec
/// infers 0x37FF8 from an IDA operand, MED confidence, §9 C17).
pub const EVTACCEL_OFFSET: u64 = 0x37FF8;
/// The size an EVTACCEL carveout must have on CAYMAN (G30).
pub const EVTACCEL_SIZE: u64 = 8;

/// One `runtime_statebuffer_reservation` entry (spec §4.7; JSON key names per
/// the metadata-schema page, §9 C18).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Carveout {
    /// REQUIRED; must be exactly `"evtaccel"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Byte offset within each partition (CAYMAN requires 0x37FF8).
    pub offset: u64,
    /// Bytes (CAYMAN requires 8).
    pub size: u64,
    /// First partition (`start_partition`; CAYMAN requires 0).
    pub base_partition: u64,
    /// Partition count (`num_partitions`; CAYMAN requires 128).
    pub partitions: u64,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(Carveout);

impl Carveout {
    /// The EVTACCEL carveout CAYMAN's staging check (G30) accepts:
    /// `{"type": "evtaccel", "offset": 0x37FF8, "size": 8, "base_partition": 0, "partitions": 128}`.
    pub fn evtaccel() -> Carveout {
        Carveout {
            kind: EVTACCEL.to_string(),
            offset: EVTACCEL_OFFSET,
            size: EVTACCEL_SIZE,
            base_partition: EVTACCEL_BASE_PARTITION,
            partitions: EVTACCEL_PARTITIONS,
            extra: Extra::new(),
        }
    }
}

/// A JSON value that is a boolean or an unsigned integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BoolOrUint {
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Uint(u64),
}

/// `fp8_conversion_config` → `kbin_fp8_conv_cfg_t` (spec §4.8).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fp8Config {
    /// Extended FP8 dynamic range (a bool; some pages say bool/uint).
    pub fp8_range_extension: Option<BoolOrUint>,
    /// Max exponent for e4m3 (runtime default 8).
    pub emax_fp8_e4m3: Option<u64>,
    /// Max exponent for e5m2 (runtime default 15).
    pub emax_fp8_e5m2: Option<u64>,
    /// OCP-style saturation.
    pub ocp_sat: Option<bool>,
    /// The SIS flag.
    pub fp8_sis: Option<bool>,
    /// The SNS flag.
    pub fp8_sns: Option<bool>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(Fp8Config);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::to_vec_pretty;

    #[test]
    fn types_spell_as_the_runtime_compares() {
        for t in VarType::ALL {
            assert_eq!(VarType::parse(t.as_str()), Some(t));
        }
        for t in QueueType::ALL {
            assert_eq!(QueueType::parse(t.as_str()), Some(t));
        }
        assert_eq!(VarType::parse("tmp_buf"), None);
    }

    #[test]
    fn evtaccel_values() {
        let c = Carveout::evtaccel();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "evtaccel", "offset": 0x37FF8, "size": 8,
                                "base_partition": 0, "partitions": 128})
        );
    }

    #[test]
    fn unknown_keys_survive_at_every_level() {
        let text = r##"{
            "var": {"x": {"type": "input", "var_id": 0, "size": 4, "#file-name": "f", "future": [1]}},
            "dma_queue": {"q": {"owner": "pool", "type": "in", "semaphore": 3, "pinned": true}},
            "runtime_statebuffer_reservation": [{"type": "evtaccel", "offset": 1, "size": 8,
                "base_partition": 0, "partitions": 128, "note": "n"}],
            "fp8_conversion_config": {"fp8_range_extension": 1, "ocp_sat": true, "new": 2},
            "ucode_lib": [{"library": "l.so", "ulib_to_ucode_version": "1.0", "add_lib": true,
                "functions": [{"name": "f", "opcode": 133, "sub_opcode": 0, "z": null}]}],
            "debug_info": {"wavegraph": "wavegraph-bin.json"},
            "pe": "pe.json",
            "runtime_event_count": 7
        }"##;
        let def: DefJson = crate::manifest::from_slice("def.json", text.as_bytes()).unwrap();
        assert_eq!(def.var["x"].extra["future"], serde_json::json!([1]));
        assert_eq!(
            def.fp8_conversion_config
                .as_ref()
                .unwrap()
                .fp8_range_extension,
            Some(BoolOrUint::Uint(1))
        );
        assert_eq!(def.engine(Engine::Pe), Some("pe.json"));
        let back: serde_json::Value =
            serde_json::from_slice(&to_vec_pretty(&def).unwrap()).unwrap();
        let original: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn extra_keys_replace_modelled_ones_on_output() {
        let var = Var::new(VarType::Input, 0).key("var_id", "zero");
        let v: serde_json::Value = serde_json::from_slice(&to_vec_pretty(&var).unwrap()).unwrap();
        assert_eq!(v["var_id"], "zero");
    }
}
