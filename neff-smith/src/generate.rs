//! Structure-aware generation of **valid** models, in the style of
//! wasm-smith: [`ArbitrarySpec`] turns fuzzer bytes into the typed model (the
//! build spec's types: [`Subgraph`], [`Tensor`], [`EngineJson`], [`ActInfo`],
//! [`DmaQueue`]…) that passes every loader gate on every arch it targets,
//! within the limits of a [`GenConfig`]. It draws every shape real compiler
//! output has: both framings and the compilers' content (engine members
//! `PE.json`…, def.json `definition`, `cc_streams`, the neff.json
//! signatures), every variable type real files use (with `internal_shape`,
//! `alignment`, `backing_variable_off`, `referenced_var_id`, `list`…),
//! `in`/`out`/`data`/`dynamic` queues (with `dynamic_dma`, `fabric_path`),
//! DMA descriptors with the modern keys and transposes, ACT activation
//! tables (`act_info.json` and its table sets), DVE tables in both forms,
//! ucode libraries, carveouts, collectives, fp8 settings, the debug
//! listings and the other members compilers write. The JSON form is the
//! model serialized (so a failing case can be saved and replayed with
//! `neff build`); every blob is inline.

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::Value;

use neff_schema::manifest::act_info::{ActFuncSet, ActInfo};
use neff_schema::manifest::def_json::{BoolOrUint, DynamicDma};
use neff_schema::manifest::engine::{DveTable, DveTables};
use neff_schema::manifest::{
    DmaBlock, DmaDesc, DmaQueue, DmaSource, Dtype, Engine, EngineJson, Extra, Fp8Config, QueueType,
};
use neff_writer::base64;
use neff_writer::build_spec::{Blob, BuildSpec, FramingSpec};
use neff_writer::builder::npy::encode_v1;
use neff_writer::builder::{EngineProgram, FunctionSpec, Subgraph, Tensor, UcodeLibSpec, VarSpec};
use neff_writer::Data;

/// Knobs bounding what is generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Most subgraphs (at least 1).
    pub max_subgraphs: usize,
    /// Most inputs, outputs, tmp buffers and weights each, per subgraph.
    pub max_vars: usize,
    /// Most DMA queues per subgraph.
    pub max_queues: usize,
    /// Most ucode libraries per subgraph (0 turns them off).
    pub max_ucode_libs: usize,
    /// Whether EVTACCEL carveouts may appear.
    pub carveouts: bool,
    /// Targets to choose from (`"*"`, `"sunda"`, `"cayman"`, `"mariana"`).
    pub targets: Vec<&'static str>,
    /// Packaging versions to choose from.
    pub pkg_versions: Vec<u64>,
    /// Framing presets to choose from (`gnu`, `neuronx-cc`, `neuronx-cc-2.16`, `neuronx-cc-2.27`).
    pub framings: Vec<&'static str>,
    /// Largest blob (weights, instructions, libraries), in bytes.
    pub max_blob: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_subgraphs: 2,
            max_vars: 3,
            max_queues: 3,
            max_ucode_libs: 2,
            carveouts: true,
            targets: vec!["*", "sunda", "cayman", "mariana"],
            pkg_versions: vec![1, 2],
            framings: vec!["gnu", "neuronx-cc", "neuronx-cc-2.16", "neuronx-cc-2.27"],
            max_blob: 512,
        }
    }
}

/// A valid model drawn from fuzzer bytes with the default [`GenConfig`].
#[derive(Debug)]
pub struct ArbitrarySpec {
    /// The model as build-spec JSON (what `neff build` would read).
    pub json: Value,
    /// The model.
    pub spec: BuildSpec,
}

impl<'a> Arbitrary<'a> for ArbitrarySpec {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        generate(u, &GenConfig::default())
    }
}

/// Generates a valid model under `config`.
pub fn generate(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<ArbitrarySpec> {
    let spec = model(u, config)?;
    let json = serde_json::to_value(&spec).map_err(|_| arbitrary::Error::IncorrectFormat)?;
    Ok(ArbitrarySpec { json, spec })
}

/// Element types with their `.npy` descr and size: every dtype real output
/// uses (bf16 as the compilers write it, `<V2`).
const DTYPES: [(Dtype, &str, u64); 9] = [
    (Dtype::Float32, "<f4", 4),
    (Dtype::Bfloat16, "<V2", 2),
    (Dtype::Float16, "<f2", 2),
    (Dtype::Int32, "<i4", 4),
    (Dtype::Int64, "<i8", 8),
    (Dtype::Uint8, "|u1", 1),
    (Dtype::Int8, "|i1", 1),
    (Dtype::Uint16, "<u2", 2),
    (Dtype::Uint32, "<u4", 4),
];

/// ACT activation table sets real output names.
const ACT_SETS: [&str; 5] = [
    "exp_and_others",
    "gelu_and_others",
    "natural_log_exp_and_others",
    "reciprocal_sqrt_and_small",
    "silu_and_others",
];

/// The compilers' engine stems, as the debug listings name them.
const STEMS: [&str; 5] = ["PE", "Activation", "Pool", "DVE", "SP"];

fn pick<'v, T>(u: &mut Unstructured<'_>, items: &'v [T]) -> Result<&'v T> {
    u.choose(items)
}

fn bytes(u: &mut Unstructured<'_>, max: usize) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=max)?;
    let mut out = vec![0u8; len];
    u.fill_buffer(&mut out)?;
    Ok(out)
}

fn inline(data: &[u8]) -> Blob {
    Blob::Base64(base64::encode(data))
}

fn shape(u: &mut Unstructured<'_>) -> Result<Vec<u64>> {
    let dims = u.int_in_range(1..=3)?;
    (0..dims).map(|_| u.int_in_range(1..=16u64)).collect()
}

fn tensor(u: &mut Unstructured<'_>) -> Result<Tensor> {
    let (dtype, _, _) = pick(u, &DTYPES)?;
    let t = Tensor::new(dtype.clone(), shape(u)?);
    var_keys(u, t)
}

/// The optional keys real variables carry.
fn var_keys(u: &mut Unstructured<'_>, mut t: Tensor) -> Result<Tensor> {
    if u.ratio(1, 3)? {
        let dims = t.shape.clone().unwrap_or_default();
        t = t.key("internal_shape", Value::from(dims));
    }
    if u.ratio(1, 3)? {
        t = t.key("alignment", Value::from(*pick(u, &[64u64, 512, 32768])?));
    }
    if u.ratio(1, 4)? {
        t = t.key("fabric_path", Value::from("main"));
    }
    if u.ratio(1, 4)? {
        t = t.key("#transfer-type", Value::from("dma"));
    }
    if u.ratio(1, 5)? {
        let width = t.dtype.as_ref().and_then(Dtype::element_size).unwrap_or(1);
        t = t.key("element_size", Value::from(width));
    }
    Ok(t)
}

fn model(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<BuildSpec> {
    let framing = *pick(u, &config.framings)?;
    let compiler = framing != "gnu";
    let n = u.int_in_range(1..=config.max_subgraphs.max(1))?;
    let mut members = BTreeMap::new();
    let mut subgraphs = Vec::new();
    for i in 0..n {
        subgraphs.push(subgraph(u, config, i, compiler, &mut members)?);
    }
    top_members(u, &subgraphs, &mut members)?;
    let mut neff_json_extra = Extra::new();
    if !compiler && u.ratio(1, 3)? {
        neff_json_extra.insert("metadata".into(), signatures(&subgraphs));
    }
    Ok(BuildSpec {
        neff_json_extra,
        name: Some(format!("gen-{}", u.int_in_range(0..=9999u32)?)),
        target: Some((*pick(u, &config.targets)?).to_string()),
        kelf_member: u.ratio(1, 4)?.then(|| "kelf-a.json".to_string()),
        subgraphs,
        members: members
            .into_iter()
            .map(|(k, v)| (k, Data::Blob(v)))
            .collect(),
        pkg_version: Some(*pick(u, &config.pkg_versions)?),
        framing: Some(FramingSpec::Preset(framing.to_string())),
        level: Some(u.int_in_range(1..=9u32)?),
        ..BuildSpec::default()
    })
}

/// neff.json `metadata` as neuron-cc 1.15 writes it: the model's inputs
/// and outputs by name with their entry id, dtype and shape (the compilers'
/// presets write their own, with no outputs).
fn signatures(subgraphs: &[Subgraph]) -> Value {
    let side = |vars: &mut dyn Iterator<Item = &VarSpec>| {
        let mut map = serde_json::Map::new();
        for (id, v) in vars.enumerate() {
            let mut t = serde_json::Map::new();
            t.insert("id".into(), Value::from(id as u64));
            t.insert(
                "dtype".into(),
                Value::from(v.dtype.as_ref().map(Dtype::to_string)),
            );
            t.insert("shape".into(), Value::from(v.shape.clone()));
            map.insert(v.name.clone(), Value::Object(t));
        }
        Value::Object(map)
    };
    let mut signature = serde_json::Map::new();
    signature.insert(
        "inputs".into(),
        side(&mut subgraphs.iter().flat_map(|s| &s.inputs)),
    );
    signature.insert(
        "outputs".into(),
        side(&mut subgraphs.iter().flat_map(|s| &s.outputs)),
    );
    let mut signatures = serde_json::Map::new();
    signatures.insert("default".into(), Value::Object(signature));
    let mut metadata = serde_json::Map::new();
    metadata.insert("signatures".into(), Value::Object(signatures));
    Value::Object(metadata)
}

/// Model-wide members compilers write: statistics, the CPU part, the
/// debug listings per subgraph.
fn top_members(
    u: &mut Unstructured<'_>,
    subgraphs: &[Subgraph],
    members: &mut BTreeMap<String, Blob>,
) -> Result<()> {
    if u.ratio(1, 2)? {
        members.insert(
            "hlo_stats.json".into(),
            Blob::Text("{\"mac_count\": 0}".into()),
        );
    }
    if u.ratio(1, 3)? {
        members.insert("metrics.json".into(), Blob::Text("{}".into()));
    }
    if u.ratio(1, 4)? {
        members.insert("cpu.so".into(), inline(&bytes(u, 64)?));
        members.insert("cpu.params".into(), inline(&bytes(u, 16)?));
    }
    if u.ratio(1, 3)? {
        for kind in ["hlo", "penguin", "pttf"] {
            members.insert(
                format!("debug_info/debug_info_{kind}.dbg"),
                inline(&bytes(u, 16)?),
            );
            for sg in subgraphs {
                let name = format!("debug_info/debug_info_{kind}.dbg_{}", sg.name());
                members.insert(name, inline(&bytes(u, 16)?));
            }
        }
        members.insert(
            "debug_info/debug_info_stack_frame_index.dbg".into(),
            inline(&bytes(u, 16)?),
        );
    }
    Ok(())
}

fn subgraph(
    u: &mut Unstructured<'_>,
    config: &GenConfig,
    index: usize,
    compiler: bool,
    members: &mut BTreeMap<String, Blob>,
) -> Result<Subgraph> {
    let name = format!("sg{index:02}");
    let count =
        |u: &mut Unstructured<'_>, min: usize| u.int_in_range(min..=config.max_vars.max(min));
    let mut sg = Subgraph::new(name.clone());
    for i in 0..count(u, 0)? {
        sg = sg.input(format!("{name}_in{i}"), tensor(u)?);
    }
    for i in 0..count(u, 1)? {
        sg = sg.output(format!("{name}_out{i}"), tensor(u)?);
    }
    for i in 0..count(u, 0)? {
        sg = sg.tmp_buf(format!("{name}_tmp{i}"), tensor(u)?);
    }
    if u.ratio(1, 3)? {
        sg = sg.state_buffer("SB", Tensor::default());
    }
    for i in 0..count(u, 0)? {
        let (dtype, descr, width) = pick(u, &DTYPES)?;
        let dims = shape(u)?;
        let len = dims.iter().product::<u64>() * width;
        let mut data = vec![0u8; len as usize];
        u.fill_buffer(&mut data)?;
        let weight = if u.arbitrary()? {
            Tensor::npy(Data::bytes(encode_v1(descr, &dims, &data)))
        } else {
            Tensor::raw(Data::bytes(data)).tensor(Tensor::new(dtype.clone(), dims))
        };
        let mut weight = var_keys(u, weight)?;
        if u.ratio(1, 4)? {
            weight = weight.key("#file-name", Value::from(format!("w{i}")));
        }
        if compiler && u.arbitrary()? {
            // As neuronx-cc names weights: var `<op>_<n>_sgNNNN`, member
            // `value_sgNNNN_<op>_<n>_CRSM[_<k>].npy` (npy weights only).
            let op = format!("{}_{}", pick(u, &["identity", "constant", "param"])?, i);
            let graph = format!("sg{index:04}");
            let suffix = if u.arbitrary()? {
                format!("_{i}")
            } else {
                String::new()
            };
            if weight.npy.is_some() {
                weight.file_name = Some(format!("value_{graph}_{op}_CRSM{suffix}.npy"));
            }
            sg = sg.weight(format!("{op}_{graph}"), weight);
            continue;
        }
        sg = sg.weight(format!("w{i}"), weight);
    }
    sg = other_vars(u, sg)?;
    let mut queues = Vec::new();
    for q in 0..u.int_in_range(0..=config.max_queues)? {
        let (queue_name, queue) = dma_queue(u, q)?;
        queues.push(queue_name.clone());
        sg = sg.dma_queue(queue_name, queue);
    }
    for engine in Engine::ALL {
        if u.ratio(1, 4)? {
            continue;
        }
        let slots = u.int_in_range(0..=config.max_blob / 64)?;
        let mut instr = vec![0u8; slots * 64];
        u.fill_buffer(&mut instr)?;
        let mut program = EngineProgram::new().instructions(instr);
        if u.ratio(1, 3)? {
            program = program.dma(dma_block(u, &queues)?);
        }
        program.manifest = engine_keys(u, engine, &name, program.manifest, members)?;
        sg = sg.engine(engine, program);
    }
    if u.ratio(1, 4)? {
        sg = sg.dma(dma_block(u, &queues)?);
    }
    if config.max_ucode_libs > 0 && u.ratio(1, 3)? {
        sg.ucode_libs = ucode_libs(u, config)?;
    }
    sg.evtaccel = config.carveouts && u.arbitrary()?;
    if u.ratio(1, 4)? {
        let pair = |a: u64, b: u64| Value::from(vec![a, b]);
        sg = sg.replica_groups(vec![pair(0, 1)]);
        sg = sg.src_target_pairs(vec![pair(0, 1), pair(1, 0)]);
        sg = sg.num_streams(u.int_in_range(0..=4u64)?);
    }
    if u.ratio(1, 3)? {
        sg = sg.fp8_config(fp8(u)?);
    }
    if compiler && u.ratio(2, 3)? {
        sg = debug_listings(u, sg, &name, members)?;
    }
    if u.ratio(1, 3)? {
        sg = sg
            .key("#rank_world_size", Value::from(0u64))
            .key(
                "runtime_event_count",
                Value::from(u.int_in_range(0..=16u64)?),
            )
            .key(
                "runtime_semaphore_count",
                Value::from(u.int_in_range(0..=8u64)?),
            );
    }
    Ok(sg)
}

/// `virtual`, `pointer` and `dge-table` variables, as real def.json has them.
fn other_vars(u: &mut Unstructured<'_>, mut sg: Subgraph) -> Result<Subgraph> {
    if u.ratio(1, 3)? {
        let size = u.int_in_range(1..=64u64)? * 64;
        let t = Tensor::bytes(size)
            .key("backing_variable_off", Value::from(0u64))
            .key("ops", Value::Array(Vec::new()));
        sg = sg.var("scratch", "virtual", t);
    }
    if u.ratio(1, 4)? {
        let t = Tensor::bytes(8).key("referenced_var_id", Value::from(0u64));
        sg = sg.var("ptr", "pointer", t);
    }
    if u.ratio(1, 4)? {
        // Another graph's state buffer (neuronx-cc 2.24 two-graph files).
        let peer = u.int_in_range(0..=3u64)?;
        sg = sg.var(format!("SB{{{peer}}}"), "remote", Tensor::default());
    }
    if u.ratio(1, 4)? {
        let list: Vec<u64> = (1..=u.int_in_range(1..=4u64)?).collect();
        sg = sg.var(
            "DGETable0",
            "dge-table",
            Tensor::default().key("list", Value::from(list)),
        );
    }
    Ok(sg)
}

fn dma_queue(u: &mut Unstructured<'_>, q: usize) -> Result<(String, DmaQueue)> {
    let kind = *pick(
        u,
        &[
            QueueType::In,
            QueueType::Out,
            QueueType::Data,
            QueueType::Dynamic,
        ],
    )?;
    let mut queue = DmaQueue::new(*pick(u, &Engine::ALL)?, kind);
    let kind = kind.as_str();
    if kind == "dynamic" || u.arbitrary()? {
        let n = u.int_in_range(1..=16u64)?;
        queue.semaphore_set = Some((8..8 + n).collect());
    } else {
        queue.semaphore = Some(u.int_in_range(0..=31u64)?);
    }
    if matches!(kind, "data" | "dynamic") && u.arbitrary()? {
        queue.num_queues = Some(u.int_in_range(1..=16u64)?);
    }
    if kind == "dynamic" && u.arbitrary()? {
        queue.dynamic_dma = Some(DynamicDma {
            sb_scratch_partition_offset: Some(0),
            sb_scratch_partition_size: Some(u.int_in_range(1..=4u64)? * 4096),
            ..DynamicDma::default()
        });
    }
    if u.ratio(1, 3)? {
        queue.fabric_path = Some("main".into());
    }
    if u.ratio(1, 4)? {
        queue.indirect_memcpy = Some(u.arbitrary()?);
    }
    if u.ratio(1, 5)? {
        queue.pinned = Some(Value::Bool(u.arbitrary()?));
    }
    Ok((format!("q{q}_{kind}"), queue))
}

fn dma_block(u: &mut Unstructured<'_>, queues: &[String]) -> Result<DmaBlock> {
    let mut block = DmaBlock {
        id: Some(u.int_in_range(0..=3u64)?),
        desc: Some(Vec::new()),
        ..DmaBlock::default()
    };
    if !queues.is_empty() {
        block.queue = Some(pick(u, queues)?.clone());
    }
    if u.ratio(1, 3)? {
        block.semaphore = Some(u.int_in_range(0..=31u64)?);
    }
    if u.ratio(1, 4)? {
        block
            .extra
            .insert("#comment".into(), Value::from("generated"));
        block
            .extra
            .insert("#block_num_bytes".into(), Value::from(0u64));
        block
            .extra
            .insert("#block_num_descs".into(), Value::from(1u64));
    }
    let mut descs = Vec::new();
    for _ in 0..u.int_in_range(1..=2usize)? {
        let dims = u.int_in_range(1..=3usize)?;
        let sizes: Vec<u64> = (0..dims)
            .map(|_| u.int_in_range(1..=64u64))
            .collect::<Result<_>>()?;
        let steps: Vec<i64> = (0..dims)
            .map(|_| u.int_in_range(-8..=64i64))
            .collect::<Result<_>>()?;
        let op = *pick(u, &["copy", "cast", "transpose", "add", "max"])?;
        let mut d = DmaDesc {
            from: Some("a".into()),
            to: Some("b".into()),
            from_sizes: Some(sizes.clone()),
            from_steps: Some(steps.clone()),
            to_sizes: Some(sizes),
            to_steps: Some(steps),
            ..DmaDesc::default()
        };
        if op != "copy" || u.arbitrary()? {
            d.op = Some(op.into());
        }
        if op == "add" || op == "max" {
            // A compute (CCE) op: every access pattern names its dtype; with
            // several sources, each in `from_arr` (neuronx-cc 2.24).
            d.to_dtype = Some("float32".into());
            if u.arbitrary()? {
                let source = |from: &str, off: u64| DmaSource {
                    from: Some(from.into()),
                    from_dtype: Some("float32".into()),
                    from_off: Some(off),
                    from_sizes: d.from_sizes.clone(),
                    from_steps: d.from_steps.clone(),
                    ..DmaSource::default()
                };
                d.from_arr = Some(vec![source("a", 0), source("b", 512)]);
                (d.from, d.from_sizes, d.from_steps) = (None, None, None);
            } else {
                d.from_dtype = Some("float32".into());
            }
        }
        if u.ratio(1, 2)? {
            d.from_off = Some(u.int_in_range(0..=4096u64)?);
            d.to_off = Some(u.int_in_range(0..=4096u64)?);
            d.num_tiling_dimensions = Some(u.int_in_range(0..=3u64)?);
        }
        if op == "cast" || u.ratio(1, 4)? {
            d.from_dtype = Some(pick(u, &DTYPES)?.0.to_string());
            d.to_dtype = Some(pick(u, &DTYPES)?.0.to_string());
        }
        if op == "transpose" || u.ratio(1, 6)? {
            d.transpose_op = Some("transpose".into());
            d.transpose_shape = Some(vec![
                u.int_in_range(1..=128u64)?,
                u.int_in_range(1..=128u64)?,
            ]);
            d.transpose_element_size = Some(*pick(u, &[1u64, 2, 4])?);
        }
        descs.push(d);
    }
    block.desc = Some(descs);
    Ok(block)
}

/// The engine manifest keys only some engines have: ACT's activation tables
/// (with `act_info.json` and the table sets as members), DVE's tables (both
/// forms, with their binaries).
fn engine_keys(
    u: &mut Unstructured<'_>,
    engine: Engine,
    sg: &str,
    mut manifest: EngineJson,
    members: &mut BTreeMap<String, Blob>,
) -> Result<EngineJson> {
    match engine {
        Engine::Act if u.ratio(1, 2)? => {
            let n = u.int_in_range(1..=ACT_SETS.len())?;
            let sets: Vec<&str> = ACT_SETS[..n].to_vec();
            let mut info = ActInfo {
                pwp_file_keys: Some(vec![
                    "bkt_bin".into(),
                    "ctrl_bin".into(),
                    "profile_json".into(),
                ]),
                ..ActInfo::default()
            };
            for set in &sets {
                let mut act = BTreeMap::new();
                act.insert("exp".to_string(), u.int_in_range(0..=512u64)?);
                act.insert("identity".to_string(), 1);
                info.act_func_sets.push(ActFuncSet {
                    name: set.to_string(),
                    act: Some(act),
                    bkt_bin: Some(format!("{set}_bkt.bin")),
                    ctrl_bin: Some(format!("{set}_ctrl.bin")),
                    profile_json: Some(format!("{set}.json")),
                    ..ActFuncSet::default()
                });
                members.insert(format!("{sg}/{set}.json"), Blob::Text("{}".into()));
                members.insert(format!("{sg}/{set}_bkt.bin"), inline(&bytes(u, 32)?));
                members.insert(format!("{sg}/{set}_ctrl.bin"), inline(&bytes(u, 32)?));
            }
            let text =
                serde_json::to_string(&info).map_err(|_| arbitrary::Error::IncorrectFormat)?;
            members.insert(format!("{sg}/act_info.json"), Blob::Text(text));
            manifest.act_info = Some("act_info.json".into());
            manifest.act_semaphore = Some(u.int_in_range(0..=31u64)?);
            manifest.activation_function_sets = Some(sets.iter().map(|s| s.to_string()).collect());
            if u.ratio(1, 3)? {
                manifest.activation_functions = Some(vec![Value::from("exp")]);
            }
        }
        Engine::Dve if u.ratio(1, 2)? => {
            let fast: bool = u.arbitrary()?;
            let table = DveTable {
                control_table: (!fast).then(|| "default_control_table.bin".to_string()),
                control_fast_table: fast.then(|| "default_control_fast_table.bin".to_string()),
                control_slow_table: fast.then(|| "default_control_slow_table.bin".to_string()),
                datapath_table: Some("default_datapath_table.bin".into()),
                opcode_table: Some("default_opcode_table.bin".into()),
                ..DveTable::default()
            };
            for (_, member) in table.members() {
                members.insert(format!("{sg}/{member}"), inline(&bytes(u, 32)?));
            }
            manifest.dve_tables = Some(match u.arbitrary()? {
                true => DveTables::List(vec![table]),
                false => DveTables::One(table),
            });
        }
        _ => {}
    }
    Ok(manifest)
}

fn fp8(u: &mut Unstructured<'_>) -> Result<Fp8Config> {
    Ok(Fp8Config {
        fp8_range_extension: Some(match u.arbitrary()? {
            true => BoolOrUint::Bool(u.arbitrary()?),
            false => BoolOrUint::Uint(u.int_in_range(0..=1u64)?),
        }),
        emax_fp8_e4m3: Some(8),
        emax_fp8_e5m2: Some(15),
        ocp_sat: Some(u.arbitrary()?),
        fp8_sis: Some(u.arbitrary()?),
        fp8_sns: Some(u.arbitrary()?),
        extra: Extra::new(),
    })
}

/// The compilers' debug listings: `debug_info_{asm,backend,walrus}_<engine>.dbg`
/// members, named by def.json's `<eng>_dbg`/`<eng>_asm_dbg`/`dma_dbg` lists,
/// and the wavegraph and tensor map.
fn debug_listings(
    u: &mut Unstructured<'_>,
    mut sg: Subgraph,
    name: &str,
    members: &mut BTreeMap<String, Blob>,
) -> Result<Subgraph> {
    for (engine, stem) in Engine::ALL.iter().zip(STEMS) {
        let asm = format!("debug_info_asm_{stem}.dbg");
        let backend = format!("debug_info_backend_{stem}.dbg");
        members.insert(format!("{name}/{asm}"), inline(&bytes(u, 16)?));
        members.insert(format!("{name}/{backend}"), inline(&bytes(u, 16)?));
        members.insert(
            format!("{name}/debug_info_walrus_{stem}.dbg"),
            inline(&bytes(u, 16)?),
        );
        sg = sg
            .key(
                format!("{}_asm_dbg", engine.as_str()),
                Value::from(vec![asm]),
            )
            .key(
                format!("{}_dbg", engine.as_str()),
                Value::from(vec![backend]),
            );
    }
    for kind in ["backend", "walrus"] {
        members.insert(
            format!("{name}/debug_info_{kind}_DMA.dbg"),
            inline(&bytes(u, 16)?),
        );
    }
    sg = sg.key("dma_dbg", Value::from(vec!["debug_info_backend_DMA.dbg"]));
    members.insert(
        format!("{name}/wavegraph-bin.json"),
        Blob::Text("{}".into()),
    );
    members.insert(format!("{name}/tensor_map.json"), Blob::Text("{}".into()));
    let mut debug = serde_json::Map::new();
    debug.insert("wavegraph".into(), Value::from("wavegraph-bin.json"));
    Ok(sg.key("debug_info", Value::Object(debug)))
}

fn ucode_libs(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<Vec<UcodeLibSpec>> {
    let mut libs = Vec::new();
    let mut functions_left = 28usize;
    for l in 0..u.int_in_range(1..=config.max_ucode_libs)? {
        let n = u.int_in_range(1..=functions_left.min(6))?;
        functions_left -= n;
        libs.push(UcodeLibSpec {
            library: format!("libgen{l}.so"),
            data: Data::bytes(bytes(u, config.max_blob)?),
            ulib_to_ucode_version: format!(
                "1.{}.{}.0",
                u.int_in_range(0..=30u32)?,
                u.int_in_range(0..=9u32)?
            ),
            ulib_to_isa_version: None,
            is_builtin: None,
            cpu_id: None,
            total_cpus: Some(*pick(u, &[0u64, 1, 8])?),
            functions: (0..n)
                .map(|f| FunctionSpec {
                    name: format!("lib{l}_fn{f}"),
                    sub_opcode: None,
                    opcode: None,
                })
                .collect(),
            extra: Extra::new(),
        });
        if functions_left == 0 {
            break;
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    #[test]
    fn generated_specs_build_and_pass_every_gate() {
        let dir = tempfile::tempdir().unwrap();
        let mut built = 0;
        for seed in 0..150 {
            let data = seeded(seed, 8192);
            let mut u = Unstructured::new(&data);
            let Ok(g) = generate(&mut u, &GenConfig::default()) else {
                continue;
            };
            let builder = g.spec.into_builder(dir.path()).unwrap();
            let mut out = Vec::new();
            if let Err(e) = builder.write_to(&mut out) {
                panic!(
                    "seed {seed}: {e}\n{}",
                    serde_json::to_string_pretty(&g.json).unwrap()
                );
            }
            built += 1;
        }
        assert!(built >= 140, "only {built} of 150 seeds gave a spec");
    }

    #[test]
    fn the_same_bytes_give_the_same_spec() {
        let data = seeded(7, 4096);
        let a = generate(&mut Unstructured::new(&data), &GenConfig::default()).unwrap();
        let b = generate(&mut Unstructured::new(&data), &GenConfig::default()).unwrap();
        assert_eq!(a.json, b.json);
    }
}
