//! What the manifest tiers learned about the model, for `inspect` and reports.

use neff_schema::Arch;
use serde::Serialize;

/// The model as the manifest chain describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ModelSummary {
    /// The KELF descriptor's member name (from neff.json's `__kelf` node).
    pub kelf: Option<String>,
    /// The KELF descriptor's `version`.
    pub version: Option<String>,
    /// The KELF descriptor's `target` string as written.
    pub target: Option<String>,
    /// The architecture the target resolved to on the simulated instance.
    pub resolved_arch: Option<Arch>,
    /// neff.json's inputs (from `arg_nodes`).
    pub nn_inputs: Vec<NnTensor>,
    /// neff.json's outputs (from `heads`).
    pub nn_outputs: Vec<NnTensor>,
    /// The graphs (subgraphs) in KELF order.
    pub graphs: Vec<GraphSummary>,
    /// Stored members no manifest refers to (the runtime ignores them).
    pub unreferenced_members: Vec<String>,
    /// References to members that are not in the NEFF but that the runtime
    /// tolerates (it never opens them).
    pub missing_references: Vec<MissingReference>,
}

/// A tensor of neff.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NnTensor {
    /// Node name.
    pub name: String,
    /// dtype string.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// `prod(shape) * dtype size` in bytes.
    pub size: u64,
}

/// One graph's sections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GraphSummary {
    /// The graph's name in the KELF descriptor.
    pub name: String,
    /// Its def.json member.
    pub definition: String,
    /// Input variables, by var_id.
    pub inputs: Vec<VarSummary>,
    /// Output variables, by var_id.
    pub outputs: Vec<VarSummary>,
    /// Number of variables of any type.
    pub vars: usize,
    /// DMA queues.
    pub queues: Vec<QueueSummary>,
    /// The five engines, in the runtime's order pe, act, pool, dve, sp.
    pub engines: Vec<EngineSummary>,
    /// GPSIMD ucode libraries.
    pub ucode_libs: Vec<UcodeLibSummary>,
    /// State-buffer carveouts.
    pub carveouts: Vec<CarveoutSummary>,
}

/// An input or output variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VarSummary {
    /// Variable name.
    pub name: String,
    /// var_id.
    pub var_id: u64,
    /// Size in bytes, when given.
    pub size: Option<u64>,
    /// dtype, when given.
    pub dtype: Option<String>,
    /// Shape (`shape`, else `internal_shape`), when given.
    pub shape: Option<Vec<u64>>,
}

/// A DMA queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct QueueSummary {
    /// Queue name.
    pub name: String,
    /// Owning engine.
    pub owner: String,
    /// Ring type (`in`, `out`, `data`, `act_load`, `embedding_update`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Number of completion semaphores.
    pub semaphores: usize,
}

/// An engine's program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EngineSummary {
    /// Engine name.
    pub engine: String,
    /// Its `<eng>.json` member, when def.json names one.
    pub json: Option<String>,
    /// Its instruction member.
    pub instr: Option<String>,
    /// Instruction bytes.
    pub instr_size: Option<u64>,
    /// DMA blocks in its JSON.
    pub dma_blocks: usize,
}

/// A ucode library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UcodeLibSummary {
    /// Library member name.
    pub library: String,
    /// `ulib_to_ucode_version`.
    pub version: Option<String>,
    /// `cpu_id`.
    pub cpu_id: u64,
    /// `total_cpus`.
    pub total_cpus: u64,
    /// Function names.
    pub functions: Vec<String>,
}

/// A state-buffer carveout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CarveoutSummary {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `offset`.
    pub offset: u64,
    /// `size`.
    pub size: u64,
    /// `base_partition`.
    pub base_partition: u64,
    /// `partitions`.
    pub partitions: u64,
}

/// A reference to an absent member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MissingReference {
    /// The manifest that refers to it.
    pub from: String,
    /// The key that refers to it.
    pub key: String,
    /// The missing member.
    pub member: String,
}
