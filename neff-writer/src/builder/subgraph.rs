//! One subgraph: its variables, DMA queues and blocks, engine programs, ucode
//! libraries, carveouts and collectives, and how they become `sgNN/def.json`,
//! the engine manifests and the subgraph's members.

use std::collections::{BTreeMap, BTreeSet};

use neff_schema::manifest::neff_json::IoTensor;
use neff_schema::manifest::ucode::UCODE_LIB_JSON;
use neff_schema::manifest::{
    Carveout, DefJson, DmaBlock, DmaQueue, Dtype, Engine, EngineJson, Extra, Fp8Config,
    UcodeFunction, UcodeLib, UcodeLibJson, Var, VarType,
};

use serde::{Deserialize, Serialize};

use super::style::{manifest_bytes, ContentStyle, COMPILER_DEF_NAME, COMPILER_DEF_VERSION};
use crate::blob::Blob;
use crate::blob::Data;
use crate::error::invalid;
use crate::error::{spec_error, Error, ErrorKind};
use crate::member::{MemberName, MemberSource};

use super::tensor::{Tensor, VarSpec, Weight, WeightFormat};
use super::weights::weight_source;

/// One subgraph (`sgNN/`): the build spec's `subgraphs[i]` is its serde
/// form, and the builder's methods fill in the same fields. Variables get
/// dense var_ids: inputs, then outputs, then tmp_bufs, state_buffers,
/// weights and vars in that order, each in list order, except those that
/// pin a `var_id`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SubgraphSpec")]
pub struct Subgraph {
    /// The folder and KELF graph name (`sg00`).
    pub name: String,
    /// def.json `name` (default: the subgraph name; `"definition"`, as the
    /// compilers write it, under the `neuronx-cc` framing presets).
    pub def_name: Option<String>,
    /// def.json `version` (not read by the loader; the fixture's is `"0.6-"`,
    /// the compilers' `"0.6"`, the default under the `neuronx-cc` presets).
    pub def_version: Option<String>,
    /// Model inputs (`type: "input"`); each needs a dtype and a shape.
    #[serde(default)]
    pub inputs: Vec<VarSpec>,
    /// Model outputs (`type: "output"`); each needs a dtype and a shape; at least one.
    #[serde(default)]
    pub outputs: Vec<VarSpec>,
    /// Scratch buffers (`type: "tmp-buf"`); each needs a size or a dtype and shape.
    #[serde(default)]
    pub tmp_bufs: Vec<VarSpec>,
    /// State-buffer variables (`type: "state-buffer"`).
    #[serde(default)]
    pub state_buffers: Vec<VarSpec>,
    /// Weights (`type: "file"`), each with exactly one of `npy` and `raw`.
    #[serde(default)]
    pub weights: Vec<VarSpec>,
    /// Variables of any other type (`virtual`, `pointer`, `list`, `remote`,
    /// ...), each with its `type`.
    #[serde(default)]
    pub vars: Vec<VarSpec>,
    /// DMA queues by name.
    #[serde(default)]
    pub dma_queues: BTreeMap<String, DmaQueue>,
    /// Top-level def.json DMA blocks (manifest objects, written as they are).
    #[serde(default)]
    pub dma: Vec<DmaBlock>,
    /// Engine programs by engine (`pe`, `act`, `pool`, `dve`, `sp`). All five
    /// engines are always written; an engine not listed gets an empty program.
    #[serde(default)]
    pub engines: BTreeMap<Engine, EngineProgram>,
    /// GPSIMD ucode libraries. Written inline in def.json, in
    /// `<sg>/ucode_lib.json` and as members; sets feature bit `custom_ops`.
    #[serde(default)]
    pub ucode_libs: Vec<UcodeLibSpec>,
    /// Add the EVTACCEL carveout
    /// (`{"type": "evtaccel", "offset": 229368, "size": 8, "base_partition": 0, "partitions": 128}`).
    /// Optional on every arch: on CAYMAN it enables EVTACCEL, and without it
    /// the runtime loads the model with EVTACCEL disabled; a carveout given
    /// must have exactly these values there (G30).
    #[serde(default)]
    pub evtaccel: bool,
    /// Other `runtime_statebuffer_reservation` entries, as they are.
    #[serde(default)]
    pub carveouts: Vec<Carveout>,
    /// def.json `replica_groups` (collectives).
    pub replica_groups: Option<Vec<serde_json::Value>>,
    /// def.json `src_target_pairs` (collectives).
    pub src_target_pairs: Option<Vec<serde_json::Value>>,
    /// def.json `num_streams`.
    pub num_streams: Option<u64>,
    /// def.json `fp8_conversion_config`.
    pub fp8_conversion_config: Option<Fp8Config>,
    /// Extra def.json keys written as they are (a generated key's name replaces it).
    #[serde(default)]
    pub extra: Extra,
}

/// One engine's program: its instruction stream and its manifest, the
/// typed model's engine manifest (`neff schema engine`: `dma`, `name`,
/// `act_semaphore`, `act_info`, `activation_function_sets`, `dve_tables`, …;
/// any other key is written as it is). What the manifest leaves out is
/// filled in: `instr` (the instruction member), `dma` (`[]`) and `name`
/// (as the content style writes it). An `extra` object (the older
/// spelling) is merged in.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "EngineSpec")]
pub struct EngineProgram {
    /// The instruction stream (`<eng>.bin`; 64-byte slots, SP 8-byte); empty when absent.
    pub instructions: Option<Data>,
    /// The engine manifest.
    #[serde(flatten)]
    pub manifest: EngineJson,
}

/// A GPSIMD ucode library and its bytes (member `<sg>/<library>`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UcodeLibSpec {
    /// The library member name in the subgraph folder (unique: G24e).
    pub library: String,
    /// The library bytes (an Xtensa ELF32; opaque to the builder).
    pub data: Data,
    /// The ucode ABI version; the major must be 1 (e.g. `"1.21.1.0"`).
    pub ulib_to_ucode_version: String,
    /// The ISA version (producer field).
    pub ulib_to_isa_version: Option<String>,
    /// Built-in library (default false).
    pub is_builtin: Option<bool>,
    /// Must be 0 (default 0).
    pub cpu_id: Option<u64>,
    /// 0, 1 or 8 (default 1).
    pub total_cpus: Option<u64>,
    /// The functions; `sub_opcode`s left out are numbered densely per subgraph.
    #[serde(default)]
    pub functions: Vec<FunctionSpec>,
    /// Extra keys in the library object.
    #[serde(default)]
    pub extra: Extra,
}

/// A ucode function.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// The function name (at most 64 characters).
    pub name: String,
    /// The function id byte (default: next free, dense per subgraph).
    pub sub_opcode: Option<u64>,
    /// The opcode (default 133, CUSTOM_OP).
    pub opcode: Option<i64>,
}

/// A variable as generation takes it: its type decided, its weight data apart.
#[derive(Debug)]
struct VarDecl {
    name: String,
    /// Its spec key (`subgraphs[0].inputs[1]`).
    key: String,
    kind: String,
    tensor: VarSpec,
    weight: Option<(Data, WeightFormat, Option<String>)>,
}

impl VarDecl {
    /// `var` as a variable of type `kind`.
    fn new(kind: String, mut var: VarSpec, key: String) -> VarDecl {
        let weight = match (var.npy.take(), var.raw.take()) {
            (Some(data), _) => Some((data, WeightFormat::Npy, var.file_name.take())),
            (None, Some(data)) => Some((data, WeightFormat::Raw, var.file_name.take())),
            (None, None) => None,
        };
        VarDecl {
            name: std::mem::take(&mut var.name),
            key,
            kind,
            tensor: var,
            weight,
        }
    }

    /// Where the var's dense var_id falls: inputs, outputs, the rest (the
    /// compilers' style puts the state buffers first).
    fn group(&self, style: ContentStyle) -> u8 {
        match (self.kind.as_str(), style) {
            ("state-buffer", ContentStyle::Compiler | ContentStyle::Compiler224) => 0,
            ("input", _) => 1,
            ("output", _) => 2,
            _ => 3,
        }
    }

    fn is_io(&self) -> bool {
        matches!(self.kind.as_str(), "input" | "output")
    }
}

/// Model-wide state while subgraphs are generated.
pub(crate) struct Context {
    /// Whether the builder's own checks run (not [`crate::NeffBuilder::unchecked`]).
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

impl VarSpec {
    /// Refuses keys the list `list` does not take: `type` outside `vars`
    /// (and missing there), `npy`/`raw`/`file_name` outside `weights` (and
    /// not exactly one of `npy` and `raw` there).
    fn check_keys(&self, list: &str, at: &str) -> Result<(), Error> {
        let is_weights = list == "weights";
        match (list == "vars", &self.kind) {
            (true, None) => return spec_error(at, "a var needs its \"type\""),
            (false, Some(_)) => {
                return spec_error(
                    format!("{at}.type"),
                    format!("the {list} list sets the type; give a \"type\" in \"vars\" only"),
                )
            }
            _ => {}
        }
        if is_weights && self.npy.is_some() == self.raw.is_some() {
            return spec_error(at, "give exactly one of \"npy\" and \"raw\"");
        }
        if !is_weights {
            let given = [
                ("npy", self.npy.is_some()),
                ("raw", self.raw.is_some()),
                ("file_name", self.file_name.is_some()),
            ];
            if let Some((k, _)) = given.iter().find(|(_, on)| *on) {
                return spec_error(format!("{at}.{k}"), format!("only weights take \"{k}\""));
            }
        }
        Ok(())
    }
}

impl Subgraph {
    /// Turns each blob the spec gave ([`Data::Blob`]) into data with
    /// `resolve(key, blob)`, and checks the keys each variable list takes;
    /// `key` (`subgraphs[0]`) prefixes the keys, for errors.
    pub fn resolve_blobs(
        &mut self,
        key: &str,
        resolve: &mut dyn FnMut(&str, Blob) -> Result<Data, Error>,
    ) -> Result<(), Error> {
        for (list, vars) in [
            ("inputs", &mut self.inputs),
            ("outputs", &mut self.outputs),
            ("tmp_bufs", &mut self.tmp_bufs),
            ("state_buffers", &mut self.state_buffers),
            ("weights", &mut self.weights),
            ("vars", &mut self.vars),
        ] {
            for (i, v) in vars.iter_mut().enumerate() {
                let at = format!("{key}.{list}[{i}]");
                v.check_keys(list, &at)?;
                for (field, data) in [("npy", &mut v.npy), ("raw", &mut v.raw)] {
                    if let Some(data) = data {
                        data.resolve(&format!("{at}.{field}"), resolve)?;
                    }
                }
            }
        }
        for (engine, e) in self.engines.iter_mut() {
            merge_older_extra(&mut e.manifest.extra, &format!("{key}.engines.{engine}"))?;
            if let Some(data) = &mut e.instructions {
                data.resolve(&format!("{key}.engines.{engine}.instructions"), resolve)?;
            }
        }
        for (name, queue) in self.dma_queues.iter_mut() {
            merge_older_extra(&mut queue.extra, &format!("{key}.dma_queues.{name}"))?;
        }
        for (i, l) in self.ucode_libs.iter_mut().enumerate() {
            l.data
                .resolve(&format!("{key}.ucode_libs[{i}].data"), resolve)?;
        }
        Ok(())
    }
}

impl UcodeLibSpec {
    /// The def.json library entry (defaults filled in: not built in, CPU 0
    /// of 1, functions with opcode 133) and its bytes.
    fn into_lib(self) -> (UcodeLib, Data) {
        let mut lib = UcodeLib::new(self.library, self.ulib_to_ucode_version);
        lib.ulib_to_isa_version = self.ulib_to_isa_version;
        lib.is_builtin = self.is_builtin.or(lib.is_builtin);
        lib.cpu_id = self.cpu_id.or(lib.cpu_id);
        lib.total_cpus = self.total_cpus.or(lib.total_cpus);
        let mut extra = self.extra;
        lib.opcode = extra.remove("opcode").and_then(|v| v.as_i64());
        lib.functions = Some(
            self.functions
                .into_iter()
                .map(|f| {
                    let mut func = UcodeFunction::new(f.name);
                    func.sub_opcode = f.sub_opcode;
                    if let Some(op) = f.opcode {
                        func.opcode = op;
                    }
                    func
                })
                .collect(),
        );
        lib.extra = extra;
        (lib, self.data)
    }
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

    /// The whole engine manifest (typed keys: `act_info`,
    /// `activation_function_sets`, `dve_tables`, …; unknown ones in `extra`).
    pub fn manifest(mut self, manifest: EngineJson) -> Self {
        self.manifest = manifest;
        self
    }

    /// Appends a DMA block to the engine manifest.
    pub fn dma(mut self, block: DmaBlock) -> Self {
        self.manifest.dma.get_or_insert_with(Vec::new).push(block);
        self
    }

    /// The manifest's `name` (default `<eng>_array_json`, or the manifest's
    /// own member name in the compilers' style).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.manifest.name = Some(label.into());
        self
    }

    /// An extra key in the engine manifest (e.g. `act_semaphore`).
    pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.manifest.extra.insert(key.into(), value.into());
        self
    }
}

/// Merges an `extra` object (the spec's older spelling of a manifest's
/// unknown keys) into the manifest's own keys; a key given both ways is an
/// error naming it.
fn merge_older_extra(extra: &mut Extra, key: &str) -> Result<(), Error> {
    let Some(older) = extra.remove("extra") else {
        return Ok(());
    };
    let serde_json::Value::Object(older) = older else {
        return spec_error(format!("{key}.extra"), "must be an object");
    };
    for (k, v) in older {
        if extra.contains_key(&k) {
            return spec_error(format!("{key}.extra.{k}"), "is also given directly");
        }
        extra.insert(k, v);
    }
    Ok(())
}

impl Subgraph {
    /// An empty subgraph named `name` (its folder and KELF graph name).
    pub fn new(name: impl Into<String>) -> Subgraph {
        Subgraph {
            name: name.into(),
            ..Subgraph::default()
        }
    }

    /// The subgraph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// def.json's `name` (default: the subgraph name; the fixture's is `"definition"`).
    pub fn def_name(mut self, name: impl Into<String>) -> Self {
        self.def_name = Some(name.into());
        self
    }

    /// A model input (`type: "input"`).
    pub fn input(mut self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.inputs.push(VarSpec {
            name: name.into(),
            ..tensor
        });
        self
    }

    /// A model output (`type: "output"`).
    pub fn output(mut self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.outputs.push(VarSpec {
            name: name.into(),
            ..tensor
        });
        self
    }

    /// A scratch buffer (`type: "tmp-buf"`).
    pub fn tmp_buf(mut self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.tmp_bufs.push(VarSpec {
            name: name.into(),
            ..tensor
        });
        self
    }

    /// A state-buffer variable (`type: "state-buffer"`; the fixture's `SB`).
    pub fn state_buffer(mut self, name: impl Into<String>, tensor: Tensor) -> Self {
        self.state_buffers.push(VarSpec {
            name: name.into(),
            ..tensor
        });
        self
    }

    /// A variable of any `type` (virtual, pointer, list, remote…); settings
    /// the type needs beyond dtype/shape/size go in [`Tensor::key`].
    pub fn var(mut self, name: impl Into<String>, kind: impl Into<String>, tensor: Tensor) -> Self {
        self.vars.push(VarSpec {
            name: name.into(),
            kind: Some(kind.into()),
            ..tensor
        });
        self
    }

    /// Weights: a `type: "file"` variable and its member.
    pub fn weight(mut self, name: impl Into<String>, weight: Weight) -> Self {
        self.weights.push(VarSpec {
            name: name.into(),
            ..weight
        });
        self
    }

    /// A DMA queue (replacing an earlier one of that name).
    pub fn dma_queue(mut self, name: impl Into<String>, queue: DmaQueue) -> Self {
        self.dma_queues.insert(name.into(), queue);
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
        let mut extra = lib.extra;
        if let Some(op) = lib.opcode {
            extra.insert("opcode".into(), op.into());
        }
        self.ucode_libs.push(UcodeLibSpec {
            library: lib.library,
            data: library.into(),
            ulib_to_ucode_version: lib.ulib_to_ucode_version,
            ulib_to_isa_version: lib.ulib_to_isa_version,
            is_builtin: lib.is_builtin,
            cpu_id: lib.cpu_id,
            total_cpus: lib.total_cpus,
            functions: lib
                .functions
                .into_iter()
                .flatten()
                .map(|f| FunctionSpec {
                    name: f.name,
                    sub_opcode: f.sub_opcode,
                    opcode: Some(f.opcode),
                })
                .collect(),
            extra,
        });
        self
    }

    /// A state-buffer carveout (see [`Carveout::evtaccel`]).
    pub fn carveout(mut self, carveout: Carveout) -> Self {
        self.carveouts.push(carveout);
        self
    }

    /// Collective replica groups.
    pub fn replica_groups(mut self, groups: Vec<serde_json::Value>) -> Self {
        self.replica_groups = Some(groups);
        self
    }

    /// Collective source/target pairs.
    pub fn src_target_pairs(mut self, pairs: Vec<serde_json::Value>) -> Self {
        self.src_target_pairs = Some(pairs);
        self
    }

    /// Collective stream count.
    pub fn num_streams(mut self, n: u64) -> Self {
        self.num_streams = Some(n);
        self
    }

    /// FP8 conversion settings.
    pub fn fp8_config(mut self, config: Fp8Config) -> Self {
        self.fp8_conversion_config = Some(config);
        self
    }

    /// def.json's `version` (not read by the loader).
    pub fn def_version(mut self, version: impl Into<String>) -> Self {
        self.def_version = Some(version.into());
        self
    }

    /// An extra def.json key (e.g. `debug_info`, `git_version`); a modelled
    /// key's name replaces the generated value.
    pub fn key(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// Generates def.json, the engine manifests and every member.
    /// `index` is the subgraph's place in the model, for the spec keys errors name.
    pub(crate) fn generate(self, ctx: &mut Context, index: usize) -> Result<Generated, Error> {
        let sg = self.name.clone();
        let checked = ctx.checked;
        let style = ctx.style;
        let compiler = style.is_compiler();
        let mut members: Vec<(String, MemberSource)> = Vec::new();
        let mut def = DefJson {
            name: self.def_name,
            version: self.def_version,
            replica_groups: self.replica_groups,
            src_target_pairs: self.src_target_pairs,
            num_streams: self.num_streams,
            fp8_conversion_config: self.fp8_conversion_config,
            extra: self.extra,
            ..DefJson::default()
        };
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
        let mut vars = Vec::new();
        for (list, kind, specs) in [
            ("inputs", VarType::Input.as_str(), self.inputs),
            ("outputs", VarType::Output.as_str(), self.outputs),
            ("tmp_bufs", VarType::TmpBuf.as_str(), self.tmp_bufs),
            (
                "state_buffers",
                VarType::StateBuffer.as_str(),
                self.state_buffers,
            ),
            ("weights", VarType::File.as_str(), self.weights),
            ("vars", "", self.vars),
        ] {
            for (i, mut v) in specs.into_iter().enumerate() {
                let key = format!("subgraphs[{index}].{list}[{i}]");
                v.check_keys(list, &key)?;
                let kind = v.kind.take().unwrap_or_else(|| kind.into());
                vars.push(VarDecl::new(kind, v, key));
            }
        }
        let state_buffer = VarType::StateBuffer.as_str();
        if compiler && !vars.iter().any(|v| v.kind == state_buffer) {
            vars.insert(
                0,
                VarDecl {
                    name: "SB".into(),
                    key: format!("subgraphs[{index}].state_buffers"),
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
                if let Some(Dtype::Other(name)) = &tensor.dtype {
                    let hint = dtype_hint(name);
                    return Err(Error::new(
                        ErrorKind::Invalid,
                        format!("{at}: dtype {name:?} is not a dtype the runtime knows{hint} (see `neff schema build-spec`; the unchecked path writes it anyway)"),
                    )
                    .at_key(format!("{}.dtype", decl.key)));
                }
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
        if !self.dma_queues.is_empty() {
            def.dma_queue = Some(self.dma_queues);
        }

        // Top-level DMA blocks.
        if !self.dma.is_empty() {
            def.dma = Some(self.dma);
        }

        // ucode libraries.
        let has_ucode = !self.ucode_libs.is_empty();
        let mut libs = Vec::new();
        let mut used_sub_opcodes: BTreeSet<u64> = self
            .ucode_libs
            .iter()
            .flat_map(|l| l.functions.iter().filter_map(|f| f.sub_opcode))
            .collect();
        let mut next_sub_opcode = 0u64;
        let mut library_names = BTreeSet::new();
        for spec in self.ucode_libs {
            let at = format!("subgraph {sg}: ucode_lib {:?}", spec.library);
            let (mut lib, data) = spec.into_lib();
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
        let evtaccel = self.evtaccel.then(Carveout::evtaccel);
        def.runtime_statebuffer_reservation =
            Some(evtaccel.into_iter().chain(self.carveouts).collect());

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
            if checked {
                refuse_typo::<EngineJson>(&json, &format!("{at}: {json_member}"))?;
            }
            members.push((
                member_name(&sg, &json_member, &at)?,
                style.engine_json(&json)?,
            ));
            def.set_engine(engine, Some(json_member));
        }

        if checked {
            refuse_typo::<DefJson>(&def, &format!("subgraph {sg}: def.json"))?;
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

/// Refuses a key of the manifest `value` (named `what`) that its type does
/// not model and that looks like a typo of one it does (an `extra` key such
/// as `alignmnet`): written as it is, the intended setting would be lost.
pub(crate) fn refuse_typo<T: schemars::JsonSchema + serde::Serialize>(
    value: &T,
    what: &str,
) -> Result<(), Error> {
    let value = serde_json::to_value(value)
        .map_err(|e| Error::new(ErrorKind::Invalid, format!("{what}: {e}")))?;
    match crate::unknown_keys::first_typo::<T>(&value, None) {
        Some(t) => invalid(format!(
            "{what}: key {} is not one this tool models (did you mean {:?}?); the unchecked path writes it as it is",
            t.path, t.known
        )),
        None => Ok(()),
    }
}

/// " (did you mean …?)" for a dtype the runtime does not know: the dtype
/// another tool's name stands for (`bf16`, `fp16`, `float`), else the
/// nearest spelling.
pub fn dtype_hint(name: &str) -> String {
    Dtype::alias(name)
        .map(|d| d.as_str().to_string())
        .or_else(|| crate::error::nearest(name, Dtype::known_names()).map(str::to_string))
        .map_or_else(String::new, |n| format!(" (did you mean {n:?}?)"))
}
