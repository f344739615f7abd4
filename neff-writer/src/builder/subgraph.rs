//! One subgraph: its variables, DMA queues and blocks, engine programs, ucode
//! libraries, carveouts and collectives, and how they become `sgNN/def.json`,
//! the engine manifests and the subgraph's members.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Cursor, Read};

use neff_schema::manifest::neff_json::IoTensor;
use neff_schema::manifest::ucode::UCODE_LIB_JSON;
use neff_schema::manifest::{
    Carveout, DefJson, DmaBlock, DmaQueue, Dtype, Engine, EngineJson, Extra, Fp8Config, Manifest,
    UcodeLib, UcodeLibJson, Var, VarType,
};

use super::npy::{self, NpyHeader};
use super::{invalid, BuildError, Data};
use crate::member::{MemberName, MemberSource};

/// A variable's settings: element type, shape, size, a pinned var_id and
/// extra def.json keys. Inputs and outputs need a dtype and a shape
/// (`neff.json` declares them); sized variables need a size or a dtype and
/// shape to compute it from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tensor {
    dtype: Option<Dtype>,
    shape: Option<Vec<u64>>,
    size: Option<u64>,
    var_id: Option<u64>,
    extra: Extra,
}

impl Tensor {
    /// A tensor of `dtype` and `shape`; its size is computed from them.
    pub fn new(dtype: Dtype, shape: impl Into<Vec<u64>>) -> Tensor {
        Tensor {
            dtype: Some(dtype),
            shape: Some(shape.into()),
            ..Tensor::default()
        }
    }

    /// A buffer of `size` bytes with no dtype or shape.
    pub fn bytes(size: u64) -> Tensor {
        Tensor {
            size: Some(size),
            ..Tensor::default()
        }
    }

    /// Sets the size in bytes (instead of computing it).
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the element type.
    pub fn dtype(mut self, dtype: Dtype) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// Sets the shape.
    pub fn shape(mut self, shape: impl Into<Vec<u64>>) -> Self {
        self.shape = Some(shape.into());
        self
    }

    /// Pins the var_id (the others fill the free ids). The runtime needs ids
    /// dense 0..N-1; the binding contract wants inputs then outputs first.
    pub fn var_id(mut self, id: u64) -> Self {
        self.var_id = Some(id);
        self
    }

    /// An extra key in the def.json var object (e.g. `"#transfer-type"`,
    /// `"internal_shape"`, `"alignment"`); a modelled key's name replaces the
    /// generated value.
    pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// The size: given, or elements × element size.
    fn byte_size(&self) -> Option<u64> {
        if self.size.is_some() {
            return self.size;
        }
        let elements = self
            .shape
            .as_ref()?
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
        elements.checked_mul(self.dtype.as_ref()?.element_size()?)
    }
}

/// How a weights file is read by the runtime: by its member name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightFormat {
    /// `.npy` version 1 (`numpy_load`: data after the header).
    Npy,
    /// Raw bytes, any other extension.
    Raw,
}

/// Weights for a `type: "file"` variable.
#[derive(Debug)]
pub struct Weight {
    data: Data,
    format: WeightFormat,
    file_name: Option<String>,
    tensor: Tensor,
}

impl Weight {
    /// A `.npy` v1 file (its dtype and shape are read from the header). The
    /// member is `<var name>.npy` unless [`Weight::file_name`] says otherwise.
    pub fn npy(data: impl Into<Data>) -> Weight {
        Weight {
            data: data.into(),
            format: WeightFormat::Npy,
            file_name: None,
            tensor: Tensor::default(),
        }
    }

    /// Raw bytes (streamed). The member is `<var name>.bin` unless
    /// [`Weight::file_name`] says otherwise.
    pub fn raw(data: impl Into<Data>) -> Weight {
        Weight {
            data: data.into(),
            format: WeightFormat::Raw,
            file_name: None,
            tensor: Tensor::default(),
        }
    }

    /// The member name inside the subgraph folder (`.npy` iff the format is npy).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.file_name = Some(name.into());
        self
    }

    /// Dtype, shape, size, var_id and extra keys for the var entry.
    pub fn tensor(mut self, tensor: Tensor) -> Self {
        self.tensor = tensor;
        self
    }
}

/// One engine's program: instruction bytes (`<eng>.bin`) and the engine
/// manifest's DMA blocks and extra keys (`<eng>.json`).
#[derive(Debug, Default)]
pub struct EngineProgram {
    instructions: Option<Data>,
    dma: Vec<DmaBlock>,
    label: Option<String>,
    extra: Extra,
}

impl EngineProgram {
    /// An empty program.
    pub fn new() -> EngineProgram {
        EngineProgram::default()
    }

    /// The instruction stream (64-byte slots; SP 8-byte).
    pub fn instructions(mut self, data: impl Into<Data>) -> Self {
        self.instructions = Some(data.into());
        self
    }

    /// Appends a DMA block to the engine manifest.
    pub fn dma(mut self, block: DmaBlock) -> Self {
        self.dma.push(block);
        self
    }

    /// The manifest's `name` (default `<eng>_array_json`).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// An extra key in the engine manifest (e.g. `act_semaphore`).
    pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }
}

#[derive(Debug)]
struct VarDecl {
    name: String,
    kind: String,
    tensor: Tensor,
    weight: Option<(Data, WeightFormat, Option<String>)>,
}

impl VarDecl {
    fn group(&self) -> u8 {
        match self.kind.as_str() {
            "input" => 0,
            "output" => 1,
            _ => 2,
        }
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
    /// Whether the builder's own checks run (not [`super::NeffBuilder::allow_invalid`]).
    pub checked: bool,
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
        self.engines.entry(engine).or_default().dma.push(block);
        self
    }

    /// An extra key in an engine's manifest (e.g. ACT's `act_semaphore`).
    pub fn engine_key(
        mut self,
        engine: Engine,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.engines
            .entry(engine)
            .or_default()
            .extra
            .insert(key.into(), value.into());
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
    pub(crate) fn generate(self, ctx: &mut Context) -> Result<Generated, BuildError> {
        let sg = self.name.clone();
        let checked = ctx.checked;
        let mut members: Vec<(String, MemberSource)> = Vec::new();
        let mut def = self.def;
        if def.name.is_none() {
            def.name = Some(sg.clone());
        }

        // Variables, in var_id order: inputs, outputs, the rest.
        let ids = assign_var_ids(&self.vars);
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (decl, var_id) in self.vars.into_iter().zip(ids) {
            let at = format!("subgraph {sg}: var {:?}", decl.name);
            let group = decl.group();
            let is_io = group < 2;
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
                let source = data.into_source(&format!("{at}: weights"))?;
                let source = match format {
                    WeightFormat::Npy => npy_source(source, &mut tensor, checked, &at)?,
                    WeightFormat::Raw => source,
                };
                members.push((member_name(&sg, &file, &at)?, source));
                var.file_name = Some(file);
            }
            var.dtype = tensor.dtype.clone();
            var.shape = tensor.shape.clone();
            let sized = matches!(
                decl.kind.as_str(),
                "input" | "output" | "tmp-buf" | "virtual" | "pointer"
            );
            var.size = if sized {
                let size = tensor.byte_size().or((decl.kind == "pointer").then_some(8));
                if size.is_none() {
                    return invalid(format!(
                        "{at}: a {} variable needs a size (or a dtype with a known element size and a shape)",
                        decl.kind
                    ));
                }
                size
            } else {
                tensor.size
            };
            var.extra = tensor.extra;
            if is_io {
                let (Some(dtype), Some(shape)) = (tensor.dtype, tensor.shape) else {
                    return invalid(format!(
                        "{at}: an {} needs a dtype and a shape (neff.json declares them)",
                        decl.kind
                    ));
                };
                if checked {
                    check_byte_size(&at, &dtype, &shape)?;
                }
                let t = IoTensor {
                    name: decl.name.clone(),
                    dtype,
                    shape,
                };
                if group == 0 {
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
            members.push((member_name(&sg, &lib.library, &at)?, source));
            libs.push(lib);
        }
        if has_ucode {
            let doc = UcodeLibJson {
                ucode_lib: libs.clone(),
                extra: Extra::new(),
            };
            members.push((
                format!("{sg}/{UCODE_LIB_JSON}"),
                bytes(doc.to_vec_pretty()?),
            ));
            def.ucode_lib = Some(libs);
        }

        // Carveouts: always present, at least [].
        def.runtime_statebuffer_reservation = Some(self.carveouts);

        // Engines: all five, in the runtime's order.
        let mut programs = self.engines;
        for engine in Engine::ALL {
            let program = programs.remove(&engine).unwrap_or_default();
            let at = format!("subgraph {sg}: engine {engine}");
            let mut json = EngineJson::for_engine(engine);
            json.dma = Some(program.dma);
            if let Some(label) = program.label {
                json.name = Some(label);
            }
            json.extra = program.extra;
            let instr = match program.instructions {
                Some(data) => data.into_source(&format!("{at}: instructions"))?,
                None => MemberSource::Bytes(Vec::new()),
            };
            let json_member = format!("{engine}.json");
            members.push((member_name(&sg, &format!("{engine}.bin"), &at)?, instr));
            members.push((
                member_name(&sg, &json_member, &at)?,
                bytes(json.to_vec_pretty()?),
            ));
            def.set_engine(engine, Some(json_member));
        }

        members.push((format!("{sg}/def.json"), bytes(def.to_vec_pretty()?)));
        Ok(Generated {
            members,
            inputs: inputs.into_iter().map(|(_, t)| t).collect(),
            outputs: outputs.into_iter().map(|(_, t)| t).collect(),
            has_ucode,
        })
    }
}

fn bytes(b: Vec<u8>) -> MemberSource {
    MemberSource::Bytes(b)
}

fn member_name(sg: &str, file: &str, at: &str) -> Result<String, BuildError> {
    let name = format!("{sg}/{file}");
    match MemberName::new(&name) {
        Ok(_) => Ok(name),
        Err(e) => invalid(format!("{at}: {e}")),
    }
}

/// var_ids: pinned ones as given; the others fill the free ids in the order
/// inputs, outputs, the rest (declaration order within each group).
fn assign_var_ids(vars: &[VarDecl]) -> Vec<u64> {
    let pinned: BTreeSet<u64> = vars.iter().filter_map(|v| v.tensor.var_id).collect();
    let mut order: Vec<usize> = (0..vars.len()).collect();
    order.sort_by_key(|&i| vars[i].group());
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

/// A tensor whose byte size overflows 64 bits cannot be described.
fn check_byte_size(at: &str, dtype: &Dtype, shape: &[u64]) -> Result<(), BuildError> {
    let elements = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if elements
        .and_then(|e| e.checked_mul(dtype.runtime_element_size()))
        .is_none()
    {
        return invalid(format!("{at}: the tensor's byte size overflows 64 bits"));
    }
    Ok(())
}

/// Reads an `.npy` source's header, fills the tensor's dtype and shape from
/// it, and gives back a source that still yields every byte.
fn npy_source(
    source: MemberSource,
    tensor: &mut Tensor,
    checked: bool,
    at: &str,
) -> Result<MemberSource, BuildError> {
    let len = source.len();
    let (parsed, source) = match source {
        MemberSource::Bytes(b) => (npy::parse_header(&b), MemberSource::Bytes(b)),
        MemberSource::File { path, len } => {
            let parsed = std::fs::File::open(&path)
                .map_err(|source| BuildError::Io {
                    what: format!("{at}: {}", path.display()),
                    source,
                })
                .map(|mut f| npy::read_header(&mut f).map(|(h, _)| h))?;
            (parsed, MemberSource::File { path, len })
        }
        MemberSource::Reader { reader, len } if checked => {
            let mut reader = reader;
            let (header, prefix) = npy::read_header(&mut reader)
                .map_err(|e| BuildError::Invalid(format!("{at}: not a .npy v1 file: {e}")))?;
            let rejoined: Box<dyn Read + Send> = Box::new(Cursor::new(prefix).chain(reader));
            (
                Ok(header),
                MemberSource::Reader {
                    reader: rejoined,
                    len,
                },
            )
        }
        // Unchecked: do not consume a reader just to look.
        reader => return Ok(reader),
    };
    let header = match parsed {
        Ok(h) => h,
        Err(e) if checked => return invalid(format!("{at}: not a .npy v1 file: {e}")),
        Err(_) => return Ok(source),
    };
    if checked {
        check_npy(&header, len, at)?;
    }
    if tensor.dtype.is_none() {
        tensor.dtype = header.dtype();
    }
    if tensor.shape.is_none() {
        tensor.shape = header.shape.clone();
    }
    Ok(source)
}

fn check_npy(header: &NpyHeader, len: u64, at: &str) -> Result<(), BuildError> {
    if header.fortran_order == Some(true) {
        return invalid(format!(
            "{at}: fortran_order is True; the runtime copies the data as it is (write it C-ordered)"
        ));
    }
    let data_len = len
        .checked_sub(header.data_offset())
        .ok_or_else(|| BuildError::Invalid(format!("{at}: the file ends inside its npy header")))?;
    if let Some(expected) = header.expected_data_len() {
        if expected != data_len {
            return invalid(format!(
                "{at}: the npy header promises {expected} data bytes ({:?} of {:?}) but the file has {data_len}",
                header.shape.as_deref().unwrap_or_default(),
                header.descr.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(())
}
