//! What the manifest tiers learned about the model, for `inspect` and reports.

use std::collections::{HashMap, HashSet};

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
    /// The model's inputs: neff.json's, each joined with its signature entry
    /// and the def.json variables of the same name (see [`ModelSummary::join_io`]).
    pub inputs: Vec<ModelIo>,
    /// The model's outputs, likewise.
    pub outputs: Vec<ModelIo>,
    /// neff.json's inputs (from `arg_nodes`).
    pub nn_inputs: Vec<NnTensor>,
    /// neff.json's outputs (from `heads`).
    pub nn_outputs: Vec<NnTensor>,
    /// neff.json's `metadata.signatures.default.inputs`, in id order.
    pub signature_inputs: Vec<SignatureTensor>,
    /// neff.json's `metadata.signatures.default.outputs`, in id order (often
    /// empty; 1.15 names the KELF node there).
    pub signature_outputs: Vec<SignatureTensor>,
    /// The graphs (subgraphs) in KELF order.
    pub graphs: Vec<GraphSummary>,
    /// Stored members no manifest refers to (the runtime ignores them).
    pub unreferenced_members: Vec<String>,
    /// Members `neff build` writes by convention, with what refers to them
    /// (see [`ModelSummary::mark_builder_members`]).
    pub builder_members: Vec<BuilderMember>,
    /// References to members that are not in the NEFF but that the runtime
    /// tolerates (it never opens them).
    pub missing_references: Vec<MissingReference>,
}

/// A member referred to by convention rather than by a manifest key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BuilderMember {
    /// The member.
    pub member: String,
    /// What refers to it.
    pub referenced_by: String,
}

/// The member `neff build` attaches a barrier config under.
pub const BARRIER_CONFIG_MEMBER: &str = "barrier_config.json";

/// The member, in a graph's directory, where `neff build` writes the ucode
/// libraries def.json lists.
pub const UCODE_LIB_MEMBER: &str = "ucode_lib.json";

/// A tensor of neff.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NnTensor {
    /// Tensor name: the node's `output_names` entry for outputs, the node
    /// name for inputs (and for outputs of nodes without `output_names`).
    pub name: String,
    /// The node's name.
    pub node: String,
    /// Entry id (`node_row_ptr[node] + output index`): the index into
    /// `attrs.dltype` and `attrs.shape`.
    pub entry_id: u64,
    /// dtype string.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// `prod(shape) * dtype size` in bytes.
    pub size: u64,
}

/// A tensor of neff.json's `metadata.signatures.default`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SignatureTensor {
    /// Its key.
    pub name: String,
    /// `id`: the entry id.
    pub id: Option<u64>,
    /// `dtype`.
    pub dtype: Option<String>,
    /// `shape`.
    pub shape: Option<Vec<u64>>,
    /// `prod(shape) * dtype size` in bytes, when both are known.
    pub size: Option<u64>,
}

/// One of the model's inputs or outputs, as neff.json and the def.json
/// variables describe it together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ModelIo {
    /// Tensor name (neff.json's; the same name as the def.json variables).
    pub name: String,
    /// dtype (neff.json's `attrs.dltype`, else the signature's, else def.json's).
    pub dtype: Option<String>,
    /// Shape (neff.json's `attrs.shape`, else the signature's, else def.json's).
    pub shape: Option<Vec<u64>>,
    /// Size in bytes (from dtype and shape, else a def.json variable's `size`).
    pub size: Option<u64>,
    /// neff.json entry id, when neff.json lists the tensor.
    pub entry_id: Option<u64>,
    /// The name `metadata.signatures.default` gives the same entry id (the
    /// KELF node's name for 1.15 outputs), when it lists it.
    pub signature: Option<String>,
    /// The def.json variables of this name, one per graph that has one.
    pub vars: Vec<IoVar>,
    /// How many neff.json entries carry this name (2 for outputs of a
    /// two-core vnc NEFF, one per core).
    pub entries: usize,
}

/// A def.json variable behind a model input or output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct IoVar {
    /// The graph.
    pub graph: String,
    /// Its var_id there.
    pub var_id: u64,
    /// Its `size` in bytes, when given.
    pub size: Option<u64>,
}

/// A weight: a def.json variable of type `file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WeightSummary {
    /// Variable name.
    pub name: String,
    /// var_id.
    pub var_id: u64,
    /// The member holding it (`file_name` in the graph's directory).
    pub member: String,
    /// The member's stored size in bytes.
    pub member_size: Option<u64>,
    /// The member's data bytes: after the `.npy` header, or all of a raw file.
    pub data_size: Option<u64>,
    /// The variable's `size` in bytes, when given.
    pub size: Option<u64>,
    /// dtype, when the variable gives one.
    pub dtype: Option<String>,
    /// Shape (`shape`, else `internal_shape`), when the variable gives one.
    pub shape: Option<Vec<u64>>,
}

impl WeightSummary {
    /// The weight's bytes on the device: the variable's `size`, else the
    /// member's data bytes.
    pub fn bytes(&self) -> Option<u64> {
        self.size.or(self.data_size)
    }
}

impl ModelSummary {
    /// Moves out of [`ModelSummary::unreferenced_members`] the members the
    /// builder refers to by convention: `<sg>/ucode_lib.json` of a graph
    /// whose def.json lists ucode libraries (the same list, which the
    /// runtime's warning calls "ucode libs specified in ucode_lib.json"),
    /// and `barrier_config.json` (the builder's barrier config; the runtime
    /// never reads it).
    pub fn mark_builder_members(&mut self) {
        let ucode: HashMap<String, &str> = self
            .graphs
            .iter()
            .filter(|g| !g.ucode_libs.is_empty())
            .map(|g| (ucode_member_of(&g.definition), g.definition.as_str()))
            .collect();
        let mut builder = Vec::new();
        self.unreferenced_members.retain(|m| {
            let referenced_by = match ucode.get(m) {
                Some(def) => format!("{def} ucode_lib (the libraries it lists)"),
                None if m == BARRIER_CONFIG_MEMBER => {
                    "the builder's barrier config (NeffBuilder::barrier_config; the runtime never reads it)".to_string()
                }
                None => return true,
            };
            builder.push(BuilderMember {
                member: m.clone(),
                referenced_by,
            });
            false
        });
        self.builder_members = builder;
    }

    /// Fills in [`ModelSummary::inputs`] and [`ModelSummary::outputs`] from
    /// neff.json's tensors, its signature and the graphs' variables, matched
    /// by entry id (signature) and by name (variables). Tensors only the
    /// signature lists are added after neff.json's; def.json's variables
    /// stand in only when neff.json names no tensor on that side.
    pub fn join_io(&mut self) {
        self.inputs = join_side(&self.nn_inputs, &self.signature_inputs, &self.graphs, |g| {
            &g.inputs
        });
        self.outputs = join_side(
            &self.nn_outputs,
            &self.signature_outputs,
            &self.graphs,
            |g| &g.outputs,
        );
    }
}

/// `<sg_dir>/ucode_lib.json` for a def.json member `<sg_dir>/def.json`.
fn ucode_member_of(definition: &str) -> String {
    match definition.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{UCODE_LIB_MEMBER}"),
        None => UCODE_LIB_MEMBER.to_string(),
    }
}

fn join_side(
    nn: &[NnTensor],
    signature: &[SignatureTensor],
    graphs: &[GraphSummary],
    vars_of: impl Fn(&GraphSummary) -> &Vec<VarSummary>,
) -> Vec<ModelIo> {
    // Rows by name (names are unique among rows), signature entries by id
    // (the first of each) and the names signatures gave rows: every match
    // is a lookup, never a scan.
    let mut out: Vec<ModelIo> = Vec::new();
    let mut rows: HashMap<&str, usize> = HashMap::new();
    let mut signed: HashSet<&str> = HashSet::new();
    let mut by_id: HashMap<u64, &SignatureTensor> = HashMap::new();
    for s in signature {
        if let Some(id) = s.id {
            by_id.entry(id).or_insert(s);
        }
    }
    for t in nn {
        if let Some(&row) = rows.get(t.name.as_str()) {
            out[row].entries += 1;
            continue;
        }
        let sig = by_id.get(&t.entry_id);
        signed.extend(sig.map(|s| s.name.as_str()));
        rows.insert(&t.name, out.len());
        out.push(ModelIo {
            name: t.name.clone(),
            dtype: Some(t.dtype.clone()),
            shape: Some(t.shape.clone()),
            size: Some(t.size),
            entry_id: Some(t.entry_id),
            signature: sig.map(|s| s.name.clone()),
            vars: Vec::new(),
            entries: 1,
        });
    }
    for s in signature {
        if signed.contains(s.name.as_str()) || rows.contains_key(s.name.as_str()) {
            continue;
        }
        signed.insert(&s.name);
        rows.insert(&s.name, out.len());
        out.push(ModelIo {
            name: s.name.clone(),
            dtype: s.dtype.clone(),
            shape: s.shape.clone(),
            size: s.size,
            entry_id: s.id,
            signature: Some(s.name.clone()),
            vars: Vec::new(),
            entries: 0,
        });
    }
    for g in graphs {
        for v in vars_of(g) {
            let var = IoVar {
                graph: g.name.clone(),
                var_id: v.var_id,
                size: v.size,
            };
            match rows.get(v.name.as_str()) {
                Some(&row) => {
                    let row = &mut out[row];
                    row.dtype = row.dtype.take().or_else(|| v.dtype.clone());
                    row.shape = row.shape.take().or_else(|| v.shape.clone());
                    row.size = row.size.or(v.size);
                    row.vars.push(var);
                }
                // A variable neff.json does not name is the graph's own (in
                // 1.15 CPU nodes feed the KELF graph); it stands for the
                // model only when neff.json names nothing on this side.
                None if nn.is_empty() && signature.is_empty() => {
                    rows.insert(&v.name, out.len());
                    out.push(ModelIo {
                        name: v.name.clone(),
                        dtype: v.dtype.clone(),
                        shape: v.shape.clone(),
                        size: v.size,
                        entry_id: None,
                        signature: None,
                        vars: vec![var],
                        entries: 0,
                    });
                }
                None => {}
            }
        }
    }
    out
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
    /// Weights (variables of type `file`), by var_id.
    pub weights: Vec<WeightSummary>,
    /// DMA queues.
    pub queues: Vec<QueueSummary>,
    /// The five engines, in the runtime's order pe, act, pool, dve, sp.
    pub engines: Vec<EngineSummary>,
    /// GPSIMD ucode libraries.
    pub ucode_libs: Vec<UcodeLibSummary>,
    /// State-buffer carveouts.
    pub carveouts: Vec<neff_schema::manifest::def_json::Carveout>,
    /// The scratchpad (`virtual`) variables, summed up.
    pub scratchpad: ScratchpadSummary,
    /// The DMA descriptors of the graph's blocks (def.json's and the
    /// engines'), as hardware descriptors.
    pub dma: DmaSummary,
    /// Set when the graph is not read whole as the runtime reads it: read
    /// up to a refusal in it, or read past an earlier graph's refusal for
    /// display only (says which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Every var name of def.json, for the cross-reference checks of the
    /// DMA blocks (not shown).
    #[serde(skip)]
    #[schemars(skip)]
    pub var_names: HashSet<String>,
}

/// The size of the runtime's HBM scratchpad page (512 MiB, its
/// default `NEURON_SCRATCHPAD_PAGE_SIZE`).
pub const SCRATCHPAD_PAGE: u64 = 512 << 20;

/// A graph's scratchpad variables (def.json `var` entries of type `virtual`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ScratchpadSummary {
    /// How many there are.
    pub vars: u64,
    /// `max(backing_variable_off + size)`: the shared scratchpad the graph needs.
    pub high_water: u64,
    /// The sizes of those that cross a `SCRATCHPAD_PAGE` boundary
    /// (`off % page + size > page`), which the runtime allocates privately.
    pub outside_page: u64,
}

impl ScratchpadSummary {
    /// Counts one variable at `offset` of `size` bytes (saturating).
    pub fn add(&mut self, offset: u64, size: u64) {
        self.vars += 1;
        self.high_water = self.high_water.max(offset.saturating_add(size));
        if (offset % SCRATCHPAD_PAGE).saturating_add(size) > SCRATCHPAD_PAGE {
            self.outside_page = self.outside_page.saturating_add(size);
        }
    }
}

/// A graph's DMA descriptors, split as the runtime's "dma rings" categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DmaSummary {
    /// Hardware descriptors whose `from` or `to` is an input or output variable.
    pub io_descriptors: u64,
    /// The other hardware descriptors (between the graph's own variables).
    pub spill_descriptors: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nn(name: &str, node: &str, entry_id: u64) -> NnTensor {
        NnTensor {
            name: name.into(),
            node: node.into(),
            entry_id,
            dtype: "float32".into(),
            shape: vec![4, 2],
            size: 32,
        }
    }

    fn var(name: &str, var_id: u64) -> VarSummary {
        VarSummary {
            name: name.into(),
            var_id,
            size: Some(32),
            dtype: None,
            shape: None,
        }
    }

    #[test]
    fn join_io_matches_signature_by_entry_and_vars_by_name() {
        let graph = |name: &str| GraphSummary {
            name: name.into(),
            inputs: vec![var("x", 1), var("copy:0", 2)],
            outputs: vec![var("out", 3)],
            ..GraphSummary::default()
        };
        let mut m = ModelSummary {
            nn_inputs: vec![nn("x", "x", 0)],
            nn_outputs: vec![nn("out", "sg", 1), nn("out", "sg", 2)],
            signature_outputs: vec![SignatureTensor {
                name: "sg".into(),
                id: Some(1),
                dtype: Some("float32".into()),
                shape: Some(vec![4, 2]),
                size: Some(32),
            }],
            graphs: vec![graph("sg00"), graph("sg01")],
            ..ModelSummary::default()
        };
        m.join_io();
        // `copy:0` is the graph's own input: neff.json names the model's.
        assert_eq!(m.inputs.len(), 1);
        assert_eq!(m.inputs[0].vars.len(), 2);
        assert_eq!(m.outputs.len(), 1);
        let out = &m.outputs[0];
        assert_eq!(
            (out.entries, out.entry_id, out.signature.as_deref()),
            (2, Some(1), Some("sg"))
        );
        assert_eq!(out.vars[1].graph, "sg01");
        // Without neff.json tensors, the def.json variables stand in.
        let mut m = ModelSummary {
            graphs: vec![graph("sg00")],
            ..ModelSummary::default()
        };
        m.join_io();
        assert_eq!(m.inputs.len(), 2);
        assert_eq!(
            (m.outputs[0].size, m.outputs[0].dtype.clone()),
            (Some(32), None)
        );
    }
}
