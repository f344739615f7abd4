//! One subgraph: its variables, DMA queues and blocks, engine programs, ucode
//! libraries, carveouts and collectives, and how they become `sgNN/def.json`,
//! the engine manifests and the subgraph's members.

use std::collections::{BTreeMap, BTreeSet};

use neff_schema::manifest::neff_json::IoTensor;
use neff_schema::manifest::ucode::UCODE_LIB_JSON;
use neff_schema::manifest::{
    Carveout, DefJson, DmaBlock, DmaQueue, Engine, EngineJson, Extra, Fp8Config, UcodeLib,
    UcodeLibJson, Var, VarType,
};

use super::style::{ContentStyle, COMPILER_DEF_NAME, COMPILER_DEF_VERSION};
use super::{invalid, manifest_bytes, Data};
use crate::error::Error;
use crate::member::{MemberName, MemberSource};

use super::tensor::{EngineProgram, Tensor, Weight, WeightFormat};
use super::weights::weight_source;

#[derive(Debug)]
struct VarDecl {
    name: String,
    kind: String,
    tensor: Tensor,
    weight: Option<(Data, WeightFormat, Option<String>)>,
}

impl VarDecl {
    /// Where the var's dense var_id falls: inputs, outputs, the rest (the
    /// compilers' style puts the state buffers first).
    fn group(&self, style: ContentStyle) -> u8 {
        match (self.kind.as_str(), style) {
            ("state-buffer", ContentStyle::Compiler) => 0,
            ("input", _) => 1,
            ("output", _) => 2,
            _ => 3,
        }
    }

    fn is_io(&self) -> bool {
        matches!(self.kind.as_str(), "input" | "output")
    }
}

/// One subgraph (`sgNN/`), described declaratively.
#[derive(Debug)]
pub struct Subgraph {
    name: String,
    def: DefJson,
    vars: Vec<VarDecl>,
    queues: Vec<(String, DmaQueue)>,
    dma: Vec<DmaBlock>,
    engines: BTreeMap<Engine, EngineProgram>,
    ucode: Vec<(UcodeLib, Data)>,
    carveouts: Vec<Carveout>,
}

/// Model-wide state while subgraphs are generated.
pub(crate) struct Context {
    /// Whether the builder's own checks run (not [`super::NeffBuilder::unchecked`]).
    pub checked: bool,
    /// How the generated manifests look.
    pub style: ContentStyle,
    /// Whether the model has more than one subgraph (a virtual core).
    pub vnc: bool,
}

/// What one subgraph contributes.
pub(crate) struct Generated {
    pub members: Vec<(String, MemberSource)>,
    pub inputs: Vec<IoTensor>,
    pub outputs: Vec<IoTensor>,
    pub has_ucode: bool,
}

impl Subgraph {
    /// An empty subgraph named `name` (its folder and KELF graph name).
    pub fn new(name: impl Into<String>) -> Subgraph {
        Subgraph {
            name: name.into(),
            def: DefJson::default(),
            vars: Vec::new(),
            queues: Vec::new(),
            dma: Vec::new(),
            engines: BTreeMap::new(),
            ucode: Vec::new(),
            carveouts: Vec::new(),
        }
    }

    /// The subgraph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// def.json's `name` (default: the subgraph name; the fixture's is `"definition"`).
    pub fn def_name(mut self, name: impl Into<String>) -> Self {
        self.def.name = Some(name.into());
        self
    }

    /// A model input (`type: "input"`).
    pub fn input(self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.var(name, VarType::Input.as_str(), tensor)
    }

    /// A model output (`type: "output"`).
    pub fn output(self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.var(name, VarType::Output.as_str(), tensor)
    }

    /// A scratch buffer (`type: "tmp-buf"`).
    pub fn tmp_buf(self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.var(name, VarType::TmpBuf.as_str(), tensor)
    }

    /// A state-buffer variable (`type: "state-buffer"`; the fixture's `SB`).
    pub fn state_buffer(self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.var(name, VarType::StateBuffer.as_str(), tensor)
    }

    /// A variable of any `type` (virtual, pointer, list, remote…); settings
    /// the type needs beyond dtype/shape/size go in [`Tensor::key`].
    pub fn var(mut self, name: impl Into<String>, kind: impl Into<String>, tensor: Tensor) -> Self {
        self.vars.push(VarDecl {
            name: name.into(),
            kind: kind.into(),
            tensor,
            weight: None,
        });
        self
    }

    /// Weights: a `type: "file"` variable and its member.
    pub fn weight(mut self, name: impl Into<String>, weight: Weight) -> Self {
        self.vars.push(VarDecl {
            name: name.into(),
            kind: VarType::File.as_str().to_string(),
            tensor: weight.tensor,
            weight: Some((weight.data, weight.format, weight.file_name)),
        });
        self
    }

    /// A DMA queue.
    pub fn dma_queue(mut self, name: impl Into<String>, queue: DmaQueue) -> Self {
        self.queues.push((name.into(), queue));
        self
    }

    /// A top-level def.json DMA block.
    pub fn dma(mut self, block: DmaBlock) -> Self {
        self.dma.push(block);
        self
    }

    /// Sets an engine's whole program.
    pub fn engine(mut self, engine: Engine, program: EngineProgram) -> Self {
        self.engines.insert(engine, program);
        self
    }

    /// Sets an engine's instruction stream.
    pub fn instructions(mut self, engine: Engine, data: impl Into<Data>) -> Self {
        self.engines.entry(engine).or_default().instructions = Some(data.into());
        self
    }

    /// Appends a DMA block to an engine's manifest.
    pub fn engine_dma(mut self, engine: Engine, block: DmaBlock) -> Self {
        let program = self.engines.remove(&engine).unwrap_or_default();
        self.engines.insert(engine, program.dma(block));
        self
    }

    /// An extra key in an engine's manifest (e.g. ACT's `act_semaphore`).
    pub fn engine_key(
        mut self,
        engine: Engine,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        let program = self.engines.remove(&engine).unwrap_or_default();
        self.engines.insert(engine, program.key(key, value));
        self
    }

    /// A GPSIMD ucode library and its bytes (member `<sg>/<library>`). Its
    /// functions without a `sub_opcode` are numbered densely per subgraph.
    pub fn ucode_lib(mut self, lib: UcodeLib, library: impl Into<Data>) -> Self {
        self.ucode.push((lib, library.into()));
        self
    }

    /// A state-buffer carveout (see [`Carveout::evtaccel`]).
    pub fn carveout(mut self, carveout: Carveout) -> Self {
        self.carveouts.push(carveout);
        self
    }

    /// Collective replica groups.
    pub fn replica_groups(mut self, groups: Vec<serde_json::Value>) -> Self {
        self.def.replica_groups = Some(groups);
        self
    }

    /// Collective source/target pairs.
    pub fn src_target_pairs(mut self, pairs: Vec<serde_json::Value>) -> Self {
        self.def.src_target_pairs = Some(pairs);
        self
    }

    /// Collective stream count.
    pub fn num_streams(mut self, n: u64) -> Self {
        self.def.num_streams = Some(n);
        self
    }

    /// FP8 conversion settings.
    pub fn fp8_config(mut self, config: Fp8Config) -> Self {
        self.def.fp8_conversion_config = Some(config);
        self
    }

    /// def.json's `version` (not read by the loader).
    pub fn def_version(mut self, version: impl Into<String>) -> Self {
        self.def.version = Some(version.into());
        self
    }

    /// An extra def.json key (e.g. `debug_info`, `git_version`); a modelled
    /// key's name replaces the generated value.
    pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.def.extra.insert(key.into(), value.into());
        self
    }

    /// Generates def.json, the engine manifests and every member.
    pub(crate) fn generate(self, ctx: &mut Context) -> Result<Generated, Error> {
        let sg = self.name.clone();
        let checked = ctx.checked;
        let style = ctx.style;
        let compiler = style == ContentStyle::Compiler;
        let mut members: Vec<(String, MemberSource)> = Vec::new();
        let mut def = self.def;
        if def.name.is_none() {
            def.name = Some(if compiler {
                COMPILER_DEF_NAME.into()
            } else {
                sg.clone()
            });
        }
        if compiler && def.version.is_none() {
            def.version = Some(COMPILER_DEF_VERSION.into());
        }
        if compiler && ctx.vnc && def.neff_features.is_none() {
            def.neff_features = Some(vec!["neff_feature_vnc".into()]);
        }
        let mut vars = self.vars;
        let state_buffer = VarType::StateBuffer.as_str();
        if compiler && !vars.iter().any(|v| v.kind == state_buffer) {
            vars.insert(
                0,
                VarDecl {
                    name: "SB".into(),
                    kind: state_buffer.into(),
                    tensor: Tensor::default(),
                    weight: None,
                },
            );
        }

        // Variables, in var_id order: inputs, outputs, the rest.
        let ids = assign_var_ids(&vars, style);
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (decl, var_id) in vars.into_iter().zip(ids) {
            let at = format!("subgraph {sg}: var {:?}", decl.name);
            let is_input = decl.kind == VarType::Input.as_str();
            let is_io = decl.is_io();
            let mut var = Var::of_kind(decl.kind.clone(), var_id);
            let mut tensor = decl.tensor;
            if let Some((data, format, file_name)) = decl.weight {
                let ext = match format {
                    WeightFormat::Npy => "npy",
                    WeightFormat::Raw => "bin",
                };
                let file = file_name.unwrap_or_else(|| format!("{}.{ext}", decl.name));
                if checked && (format == WeightFormat::Npy) != file.ends_with(".npy") {
                    return invalid(format!(
                        "{at}: file_name {file:?}: the runtime reads a weight as .npy exactly when its name ends in .npy"
                    ));
                }
                let source = weight_source(data, format, &mut tensor, checked, &at)?;
                members.push((member_name(&sg, &file, &at)?, source));
                var.file_name = Some(file);
            }
            if checked {
                tensor.check_shape(&at)?;
            }
            var.size = var_size(&decl.kind, &tensor, &at)?;
            var.extra = tensor.extra;
            if !compiler {
                var.dtype = tensor.dtype.clone();
                var.shape = tensor.shape.clone();
            } else if is_io || var.file_name.is_some() {
                // neuronx-cc lists each var's ops; neff.json carries the
                // I/O dtype and shape.
                var.extra
                    .entry("ops")
                    .or_insert_with(|| serde_json::json!([]));
            }
            if is_io {
                let (Some(dtype), Some(shape)) = (tensor.dtype, tensor.shape) else {
                    return invalid(format!(
                        "{at}: an {} needs a dtype and a shape (neff.json declares them)",
                        decl.kind
                    ));
                };
                let t = IoTensor {
                    name: decl.name.clone(),
                    dtype,
                    shape,
                };
                if is_input {
                    inputs.push((var_id, t));
                } else {
                    outputs.push((var_id, t));
                }
            }
            if def.var.insert(decl.name.clone(), var).is_some() && checked {
                return invalid(format!("{at} is declared twice"));
            }
        }
        inputs.sort_by_key(|(id, _)| *id);
        outputs.sort_by_key(|(id, _)| *id);

        // DMA queues.
        let mut queues = BTreeMap::new();
        for (name, queue) in self.queues {
            if queues.insert(name.clone(), queue).is_some() && checked {
                return invalid(format!(
                    "subgraph {sg}: dma_queue {name:?} is declared twice"
                ));
            }
        }
        if !queues.is_empty() {
            def.dma_queue = Some(queues);
        }

        // Top-level DMA blocks.
        if !self.dma.is_empty() {
            def.dma = Some(self.dma);
        }

        // ucode libraries.
        let has_ucode = !self.ucode.is_empty();
        let mut libs = Vec::new();
        let mut used_sub_opcodes = BTreeSet::new();
        for (lib, _) in &self.ucode {
            used_sub_opcodes.extend(lib.functions.iter().flatten().filter_map(|f| f.sub_opcode));
        }
        let mut next_sub_opcode = 0u64;
        let mut library_names = BTreeSet::new();
        for (mut lib, data) in self.ucode {
            let at = format!("subgraph {sg}: ucode_lib {:?}", lib.library);
            for f in lib.functions.iter_mut().flatten() {
                if f.sub_opcode.is_none() {
                    while used_sub_opcodes.contains(&next_sub_opcode) {
                        next_sub_opcode += 1;
                    }
                    used_sub_opcodes.insert(next_sub_opcode);
                    f.sub_opcode = Some(next_sub_opcode);
                }
            }
            let source = data.into_source(&format!("{at}: library"))?;
            // A repeated library name is listed again with the first one's
            // member: the loader's G24e refuses the repeat.
            if library_names.insert(lib.library.clone()) {
                members.push((member_name(&sg, &lib.library, &at)?, source));
            }
            libs.push(lib);
        }
        if has_ucode {
            let doc = UcodeLibJson {
                ucode_lib: libs.clone(),
                extra: Extra::new(),
            };
            members.push((format!("{sg}/{UCODE_LIB_JSON}"), manifest_bytes(&doc)?));
            def.ucode_lib = Some(libs);
        }

        if compiler {
            let num_streams = def.num_streams.take().unwrap_or(0);
            let streams = def.cc_streams.get_or_insert_with(Default::default);
            streams.num_streams.get_or_insert(num_streams);
        }

        // Carveouts: always present, at least [].
        def.runtime_statebuffer_reservation = Some(self.carveouts);

        // Engines: all five, in the runtime's order.
        let mut programs = self.engines;
        for engine in Engine::ALL {
            let program = programs.remove(&engine).unwrap_or_default();
            let at = format!("subgraph {sg}: engine {engine}");
            let stem = style.engine_stem(engine);
            let json_member = format!("{stem}.json");
            let mut json = program.manifest;
            let bin_member = json
                .instr
                .get_or_insert_with(|| format!("{stem}.bin"))
                .clone();
            json.dma.get_or_insert_with(Vec::new);
            if json.name.is_none() {
                json.name = EngineJson::for_engine(engine).name;
                if compiler {
                    json.name = Some(json_member.clone());
                }
            }
            if compiler {
                def.set_instr(engine, Some(bin_member.clone()));
            }
            let instr = match program.instructions {
                Some(data) => data.into_source(&format!("{at}: instructions"))?,
                None => MemberSource::Bytes(Vec::new()),
            };
            members.push((member_name(&sg, &bin_member, &at)?, instr));
            members.push((
                member_name(&sg, &json_member, &at)?,
                style.engine_json(&json)?,
            ));
            def.set_engine(engine, Some(json_member));
        }

        members.push((format!("{sg}/def.json"), style.def_json(&def)?));
        Ok(Generated {
            members,
            inputs: inputs.into_iter().map(|(_, t)| t).collect(),
            outputs: outputs.into_iter().map(|(_, t)| t).collect(),
            has_ucode,
        })
    }
}

/// The var's `size`: given or computed for the types that need one (a
/// pointer is 8 bytes), as given for the others. One that is still missing is
/// the loader's to refuse (G19).
fn var_size(kind: &str, tensor: &Tensor, at: &str) -> Result<Option<u64>, Error> {
    if !matches!(kind, "input" | "output" | "tmp-buf" | "virtual" | "pointer") {
        return Ok(tensor.size);
    }
    Ok(tensor.byte_size(at)?.or((kind == "pointer").then_some(8)))
}

fn member_name(sg: &str, file: &str, at: &str) -> Result<String, Error> {
    let name = format!("{sg}/{file}");
    match MemberName::new(&name) {
        Ok(_) => Ok(name),
        Err(e) => invalid(format!("{at}: {e}")),
    }
}

/// var_ids: pinned ones as given; the others fill the free ids in the order
/// inputs, outputs, the rest (declaration order within each group).
fn assign_var_ids(vars: &[VarDecl], style: ContentStyle) -> Vec<u64> {
    let pinned: BTreeSet<u64> = vars.iter().filter_map(|v| v.tensor.var_id).collect();
    let mut order: Vec<usize> = (0..vars.len()).collect();
    order.sort_by_key(|&i| vars[i].group(style));
    let mut ids = vec![0u64; vars.len()];
    let mut next = 0u64;
    for i in order {
        ids[i] = match vars[i].tensor.var_id {
            Some(id) => id,
            None => {
                while pinned.contains(&next) {
                    next += 1;
                }
                next += 1;
                next - 1
            }
        };
    }
    ids
}
