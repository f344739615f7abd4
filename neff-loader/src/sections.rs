//! Tier 3: each graph's def.json and engine files, G19–G29
//! (`kelf_load_from_neff` and its handlers; spec §4.3–§4.8, §5.3).

use std::collections::BTreeSet;

use neff_schema::manifest::dma::{COMPUTE_DMA_OPS, DMA_OPS};
use neff_schema::manifest::{Engine, QueueType, VarType};
use neff_schema::{features, Arch};
use serde_json::{Map, Value};

use crate::access::Ctx;
use crate::gate::{Gate, Rejection};
use crate::manifests::{GraphRef, Kelf};
use crate::model::{
    CarveoutSummary, EngineSummary, GraphSummary, QueueSummary, UcodeLibSummary, VarSummary,
    WeightSummary,
};

/// The engines the runtime loads, in its order (`NEURON_ENG_NAMES`).

/// Largest instruction stream the runtime accepts.
const MAX_INSTR: u64 = 0xFFFF_FFFF;

/// Largest number of default ExtISA ops.
const MAX_EXT_ISA_OPS: usize = 18;

/// Largest number of semaphores per queue set.
const MAX_QUEUE_SEMAPHORES: usize = 32;

/// Most queues in one queue set (`num_queues`) by AWS's def.json documentation.
const MAX_QUEUES_PER_SET: u64 = 16;

/// A ucode function as staging sees it.
#[derive(Debug, Clone)]
pub struct UcodeFunction {
    /// Function name.
    pub name: String,
}

/// What staging needs from one graph.
#[derive(Debug, Clone, Default)]
pub struct GraphStaging {
    /// EVTACCEL carveouts: (offset, size, base_partition, partitions).
    pub evtaccel: Vec<(u64, u64, u64, u64)>,
    /// Ucode functions of all the graph's libraries.
    pub ucode_functions: Vec<UcodeFunction>,
}

/// Runs G19–G27 on every graph, then G28 and G29; returns what staging needs.
pub fn run(ctx: &mut Ctx<'_>, kelf: &Kelf) -> Result<Vec<GraphStaging>, Rejection> {
    let mut staging = Vec::new();
    let mut act_load_queues = 0usize;
    for graph in &kelf.graphs {
        staging.push(graph_sections(
            ctx,
            kelf.resolved,
            graph,
            &mut act_load_queues,
        )?);
    }
    // G28: gen_kbin refuses target 0 (parse_target never yields it; kept for fidelity).
    if kelf.resolved.ordinal() == 0 {
        return Err(Rejection::new(
            Gate::G28,
            format!("Invalid target = {}", kelf.resolved.ordinal()),
        ));
    }
    lnc(ctx, kelf.graphs.len())?;
    Ok(staging)
}

/// G29: the graphs must fit the virtual NeuronCore.
fn lnc(ctx: &mut Ctx<'_>, graphs: usize) -> Result<(), Rejection> {
    let header = &ctx.container.header;
    let from_config = header.feature_bits() & features::VNC != 0;
    // vnc_size 0 is "not set" and reads as 1 (the Python packager writes 0, spec §11.1).
    let header_vnc = match header.vnc_size() {
        0 => 1,
        n => n,
    };
    let core_size = match (from_config, ctx.profile.virtual_core_size) {
        (true, Some(size)) => size,
        _ => header_vnc,
    };
    let nkbin = graphs as u64;
    let available = u64::from(core_size);
    if available < nkbin {
        return Err(Rejection::new(
            Gate::G29a,
            format!("Insufficient number of pncs, required {nkbin}, available {available}"),
        )
        .detail(format!(
            "{nkbin} graphs need {nkbin} physical cores; the virtual core has {available} (header vnc_size {}{}{})",
            header.vnc_size(),
            if header.vnc_size() == 0 { ", i.e. not set: 1" } else { "" },
            if from_config { ", feature 0x400 set: the runtime config decides" } else { "" }
        )));
    }
    if nkbin != 1 && nkbin != available {
        return Err(Rejection::new(
            Gate::G29b,
            "/opt/workspace/KaenaRuntime/kelf/dlr_kelf.cpp:167: Assertion `nkbin == 1 || nkbin == vtpb_core_size' failed.",
        )
        .detail(format!("{nkbin} graphs on a virtual core of {available}: the runtime asserts and aborts")));
    }
    Ok(())
}

fn reject(gate: Gate, message: impl Into<String>, detail: impl Into<String>) -> Rejection {
    Rejection::new(gate, message).detail(detail)
}

/// `<sg_dir>/<name>`: every file name in def.json resolves against the
/// definition's folder.
fn in_dir(sg_dir: &str, name: &str) -> String {
    if sg_dir.is_empty() {
        name.to_string()
    } else {
        format!("{sg_dir}/{name}")
    }
}

/// The object entries of a section keyed by name (or, when the profile
/// allows it, an array of objects with a `name`).
fn named_entries<'v>(ctx: &Ctx<'_>, value: &'v Value) -> Option<Vec<(String, &'v Value)>> {
    match value {
        Value::Object(map) => Some(map.iter().map(|(k, v)| (k.clone(), v)).collect()),
        Value::Array(items) if ctx.profile.accept_array_sections => Some(
            items
                .iter()
                .map(|v| {
                    (
                        v.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        v,
                    )
                })
                .collect(),
        ),
        _ => None,
    }
}

fn graph_sections(
    ctx: &mut Ctx<'_>,
    resolved: Arch,
    graph: &GraphRef,
    act_load_queues: &mut usize,
) -> Result<GraphStaging, Rejection> {
    let def_member = graph.definition.clone();
    let Some(def) = ctx.json(&def_member, Gate::G19)? else {
        return Err(reject(
            Gate::G19,
            format!("Failed to find definition {def_member} in NEFF"),
            format!(
                "graph {:?} names {def_member}, which is not in the NEFF",
                graph.name
            ),
        ));
    };
    let mut out = (
        GraphSummary {
            name: graph.name.clone(),
            definition: def_member.clone(),
            ..GraphSummary::default()
        },
        GraphStaging::default(),
    );
    let result = graph_body(ctx, resolved, &def, &def_member, &mut out, act_load_queues);
    // What was learned is kept for display even when a section refused.
    let (summary, staging) = out;
    ctx.model.graphs.push(summary);
    result.map(|()| staging)
}

/// The sections of one def.json, in the runtime's order, into `out`.
fn graph_body(
    ctx: &mut Ctx<'_>,
    resolved: Arch,
    def: &Value,
    def_member: &str,
    out: &mut (GraphSummary, GraphStaging),
    act_load_queues: &mut usize,
) -> Result<(), Rejection> {
    let (summary, staging) = (&mut out.0, &mut out.1);
    let def_member = def_member.to_string();
    let sg_dir = def_member
        .rsplit_once('/')
        .map_or("", |(d, _)| d)
        .to_string();
    vars(ctx, def, &def_member, &sg_dir, summary)?;
    queues(ctx, def, &def_member, summary, act_load_queues)?;
    collectives(def, &def_member)?;
    ext_isa(def, &def_member)?;
    ucode_libs(ctx, def, &def_member, &sg_dir, summary, staging)?;
    carveouts(ctx, def, &def_member, resolved, summary, staging)?;
    // Collective streams: a top-level `num_streams`, or (2.18+)
    // `cc_streams: {"num_streams": N}` (spec §11.4).
    if let Some(n) = def.get("num_streams") {
        if n.as_u64().is_none() {
            ctx.warnings.push(format!(
                "{def_member}: num_streams {n} is not an unsigned integer"
            ));
        }
    }
    if let Some(cc) = def.get("cc_streams") {
        match cc.get("num_streams") {
            Some(n) if n.as_u64().is_some() => {}
            Some(n) => ctx.warnings.push(format!(
                "{def_member}: cc_streams.num_streams {n} is not an unsigned integer"
            )),
            None => ctx
                .warnings
                .push(format!("{def_member}: cc_streams has no num_streams")),
        }
    }
    dma_blocks(def.get("dma"), &def_member, "dma")?;
    if let Some(cfg) = def.get("fp8_conversion_config") {
        if !cfg.is_object() {
            ctx.warnings.push(format!(
                "{def_member}: fp8_conversion_config is not an object"
            ));
        }
    }
    if let Some(wavegraph) = def
        .get("debug_info")
        .and_then(|d| d.get("wavegraph"))
        .and_then(Value::as_str)
    {
        let member = in_dir(&sg_dir, wavegraph);
        ctx.tolerated_reference(&def_member, "debug_info.wavegraph", &member);
    }
    // Debug listings: `<eng>_dbg`, `<eng>_asm_dbg`, `dma_dbg` (spec §11.4),
    // each a list of members in the graph's folder.
    if let Some(map) = def.as_object() {
        for (key, files) in map.iter().filter(|(k, _)| k.ends_with("_dbg")) {
            for (i, file) in files.as_array().into_iter().flatten().enumerate() {
                if let Some(file) = file.as_str() {
                    let member = in_dir(&sg_dir, file);
                    ctx.tolerated_reference(&def_member, &format!("{key}[{i}]"), &member);
                }
            }
        }
    }
    engines(ctx, def, &def_member, &sg_dir, summary)?;
    Ok(())
}

/// G19 and G20: variables.
fn vars(
    ctx: &mut Ctx<'_>,
    def: &Value,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
) -> Result<(), Rejection> {
    let Some(entries) = def.get("var").and_then(|v| named_entries(ctx, v)) else {
        return Err(reject(
            Gate::G19,
            "Failed to parse, key: var",
            format!("{member} has no var object"),
        ));
    };
    let mut max_id: u64 = 0;
    let mut outputs = 0usize;
    for (name, var) in &entries {
        let at = |key: &str| format!("{member}: var {name:?}: {key}");
        let Some(kind) = var.get("type").and_then(Value::as_str) else {
            return Err(reject(
                Gate::G19,
                "Failed to parse, key: type",
                at("type missing or not a string"),
            ));
        };
        let Some(var_id) = var.get("var_id").and_then(Value::as_u64) else {
            return Err(reject(
                Gate::G19,
                "missing <var_id>",
                at("var_id missing or not an unsigned integer"),
            ));
        };
        max_id = max_id.max(var_id);
        if let Some(alignment) = var.get("alignment") {
            let a = alignment.as_u64().unwrap_or(0);
            if !a.is_power_of_two() {
                return Err(reject(
                    Gate::G19,
                    format!("alignment provided not power of 2. alignment={a}"),
                    at("alignment"),
                ));
            }
        }
        let size = var.get("size").and_then(Value::as_u64);
        let Some(var_type) = VarType::parse(kind) else {
            return Err(reject(
                Gate::G19,
                format!("Unknown variable type {kind}"),
                at("type"),
            ));
        };
        match var_type {
            VarType::Input
            | VarType::Output
            | VarType::TmpBuf
            | VarType::Virtual
            | VarType::Pointer => {
                let Some(size) = size else {
                    return Err(reject(
                        Gate::G19,
                        "Failed to parse, key: size",
                        at("size missing for a sized variable"),
                    ));
                };
                if var_type == VarType::Pointer && size != 8 {
                    return Err(reject(
                        Gate::G19,
                        format!("Invalid pointer size {size} for {name}, must be 8"),
                        at("size"),
                    ));
                }
            }
            VarType::List => {
                let ok = var
                    .get("list")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().all(|v| v.as_u64().is_some()));
                if !ok {
                    return Err(reject(
                        Gate::G19,
                        "Failed to parse, key: list",
                        at("list is not an array of unsigned integers"),
                    ));
                }
            }
            VarType::File => {
                let path = weights(ctx, var, name, member, sg_dir)?;
                summary.weights.push(WeightSummary {
                    name: name.clone(),
                    var_id,
                    member_size: ctx.size(&path),
                    member: path,
                    size,
                    dtype: var.get("dtype").and_then(Value::as_str).map(str::to_string),
                    shape: var
                        .get("shape")
                        .or_else(|| var.get("internal_shape"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_u64).collect()),
                });
            }
            VarType::StateBuffer
            | VarType::Remote
            | VarType::Shared
            | VarType::Sharded
            | VarType::Main
            | VarType::DgeTable => {}
        }
        let shape = var
            .get("shape")
            .or_else(|| var.get("internal_shape"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect());
        let info = VarSummary {
            name: name.clone(),
            var_id,
            size,
            dtype: var.get("dtype").and_then(Value::as_str).map(str::to_string),
            shape,
        };
        match var_type {
            VarType::Input => summary.inputs.push(info),
            VarType::Output => {
                outputs += 1;
                summary.outputs.push(info);
            }
            _ => {}
        }
    }
    summary.inputs.sort_by_key(|v| v.var_id);
    summary.outputs.sort_by_key(|v| v.var_id);
    summary.weights.sort_by_key(|v| v.var_id);
    summary.vars = entries.len();
    if ctx.profile.check_var_ids && max_id.checked_add(1) != Some(entries.len() as u64) {
        return Err(reject(
            Gate::G20a,
            format!(
                "Unexpected var_ids set! max={max_id}, size={}",
                entries.len()
            ),
            format!(
                "{member}: var_ids must be dense 0..{}",
                entries.len().saturating_sub(1)
            ),
        ));
    }
    if outputs == 0 {
        return Err(reject(
            Gate::G20b,
            format!("Invalid NEFF: graph {member} has no Outputs"),
            format!("{member}: no variable has type \"output\""),
        ));
    }
    Ok(())
}

/// Weights (`type: "file"`): the member must exist; `.npy` must start with
/// the numpy magic. Returns the member's name.
fn weights(
    ctx: &mut Ctx<'_>,
    var: &Value,
    name: &str,
    member: &str,
    sg_dir: &str,
) -> Result<String, Rejection> {
    let Some(file) = var.get("file_name").and_then(Value::as_str) else {
        return Err(reject(
            Gate::G19,
            "Failed to parse, key: file_name",
            format!("{member}: var {name:?}: file_name missing"),
        ));
    };
    let path = in_dir(sg_dir, file);
    let Some(prefix) = ctx.prefix(&path) else {
        return Err(reject(
            Gate::G19,
            format!("Failed to load weights file {path}"),
            format!("{member}: var {name:?} names {path}, which is not in the NEFF"),
        ));
    };
    if file.ends_with(".npy") {
        let magic = match prefix {
            [a, b, ..] => u16::from_le_bytes([*a, *b]),
            _ => 0,
        };
        if magic != 0x4e93 {
            return Err(reject(
                Gate::G19,
                format!("NUMPY {path} bad header {magic:x} != 0x4e93"),
                format!("{path} does not start with the .npy magic \\x93NUMPY"),
            ));
        }
    }
    Ok(path)
}

/// G21: DMA queues.
fn queues(
    ctx: &mut Ctx<'_>,
    def: &Value,
    member: &str,
    summary: &mut GraphSummary,
    act_load_queues: &mut usize,
) -> Result<(), Rejection> {
    let Some(section) = def.get("dma_queue") else {
        return Ok(());
    };
    let Some(entries) = named_entries(ctx, section) else {
        return Err(reject(
            Gate::G21b,
            format!("missing <type> in {member}"),
            format!("{member}: dma_queue is not an object"),
        ));
    };
    for (name, q) in entries {
        // `owner` is optional (absent on neuron-cc 1.15 `pinned` queues, spec
        // §11.4); one that is present must name an engine.
        let owner = match q.get("owner") {
            None => "",
            Some(o) => {
                let text = o.as_str().unwrap_or_default();
                if Engine::parse_runtime(text).is_none() {
                    return Err(reject(
                        Gate::G21a,
                        format!("Invalid owner '{text}' for DMA queue {name}"),
                        format!(
                            "{member}: dma_queue {name:?}: owner {o} must be one of pe, act, pool, dve, sp (or absent)"
                        ),
                    ));
                }
                text
            }
        };
        let Some(kind) = q.get("type").and_then(Value::as_str) else {
            return Err(reject(
                Gate::G21b,
                format!("missing <type> in {name}"),
                format!("{member}: dma_queue {name:?} has no type"),
            ));
        };
        let set_label = match QueueType::parse(kind) {
            Some(QueueType::In) => Some("input"),
            Some(QueueType::Out) => Some("output"),
            Some(QueueType::EmbeddingUpdate) => Some("embedding update"),
            Some(QueueType::Data | QueueType::ActLoad | QueueType::Dynamic) => None,
            None => {
                let known: Vec<&str> = QueueType::ALL.iter().map(|t| t.as_str()).collect();
                return Err(reject(
                    Gate::G21b,
                    format!("Invalid DMA queue type '{kind}' for {name}"),
                    format!(
                        "{member}: dma_queue {name:?}: type must be one of {}",
                        known.join(", ")
                    ),
                ));
            }
        };
        // Queue-set instances are a `queue_instances` list of strings; refused
        // on in/out/embedding_update queues. `num_queues` (the queues of the
        // set, up to 16) is allowed on every type (spec §11.4, §11.5).
        let listed = q
            .get("queue_instances")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if let (Some(label), true) = (set_label, listed > 0) {
            return Err(reject(
                Gate::G21c,
                format!("Invalid Neff: Queue set instances are not supported for {label} queues ({name})"),
                format!("{member}: dma_queue {name:?} lists {listed} queue_instances"),
            ));
        }
        let instances = q.get("num_queues").and_then(Value::as_u64).unwrap_or(1);
        if instances > MAX_QUEUES_PER_SET {
            ctx.warnings.push(format!(
                "{member}: dma_queue {name:?}: num_queues {instances} is above {MAX_QUEUES_PER_SET}, the most AWS's def.json documentation allows"
            ));
        }
        let semaphores = match (q.get("semaphore_set"), q.get("semaphore")) {
            (Some(Value::Array(set)), _) => set.len(),
            (_, Some(_)) => 1,
            _ => 0,
        };
        if semaphores > MAX_QUEUE_SEMAPHORES {
            return Err(reject(
                Gate::G21d,
                format!("Runtime supports maximum of {MAX_QUEUE_SEMAPHORES} semaphores per queue set, found: {semaphores}"),
                format!("{member}: dma_queue {name:?}"),
            ));
        }
        if kind == "act_load" {
            *act_load_queues += 1;
            if *act_load_queues > 1 || instances != 1 {
                return Err(reject(
                    Gate::G21d,
                    format!("Invalid Neff: only one act_load queue with num_queues 1 is supported ({name})"),
                    format!("{member}: dma_queue {name:?}: a NEFF may have one act_load queue, with one instance"),
                ));
            }
        }
        summary.queues.push(QueueSummary {
            name,
            owner: owner.to_string(),
            kind: kind.to_string(),
            semaphores,
        });
    }
    Ok(())
}

/// G22: `replica_groups` (nested arrays of ranks) and `src_target_pairs` (pairs).
fn collectives(def: &Value, member: &str) -> Result<(), Rejection> {
    fn ranks(v: &Value) -> bool {
        match v {
            Value::Array(items) => items.iter().all(ranks),
            other => other.as_u64().is_some(),
        }
    }
    if let Some(groups) = def.get("replica_groups") {
        if !groups.is_array() || !ranks(groups) {
            return Err(reject(
                Gate::G22,
                "Failed to parse replica_groups",
                format!("{member}: replica_groups must be nested arrays of unsigned ranks"),
            ));
        }
    }
    if let Some(pairs) = def.get("src_target_pairs") {
        let ok = pairs.as_array().is_some_and(|p| {
            p.iter().all(|pair| {
                pair.as_array()
                    .is_some_and(|x| x.len() == 2 && x.iter().all(|r| r.as_u64().is_some()))
            })
        });
        if !ok {
            return Err(reject(
                Gate::G22,
                "Failed to parse src_target_pairs",
                format!(
                    "{member}: src_target_pairs must be an array of [source, target] rank pairs"
                ),
            ));
        }
    }
    Ok(())
}

/// G23: the default ExtISA library override holds at most 18 ops.
fn ext_isa(def: &Value, member: &str) -> Result<(), Rejection> {
    let n = def
        .get("ext_isa_ucode_lib_def")
        .and_then(|d| d.get("functions"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if n > MAX_EXT_ISA_OPS {
        return Err(reject(
            Gate::G23,
            format!("Number of ExtISA Op trying to load {n} exceeds the maximum {MAX_EXT_ISA_OPS}"),
            format!("{member}: ext_isa_ucode_lib_def.functions"),
        ));
    }
    Ok(())
}

/// G24: GPSIMD ucode libraries (`parse_one_ucode_lib`).
fn ucode_libs(
    ctx: &mut Ctx<'_>,
    def: &Value,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
    staging: &mut GraphStaging,
) -> Result<(), Rejection> {
    let Some(libs) = def.get("ucode_lib").and_then(Value::as_array) else {
        return Ok(());
    };
    if !libs.is_empty() {
        ctx.warnings.push(
            "Loading ucode libs specified in ucode_lib.json from the NEFF. This interface is not yet entirely stable - FUTURE API CHANGES ARE POSSIBLE!".to_string(),
        );
    }
    let abi_major = ctx.profile.ucode_abi_major();
    let mut names = BTreeSet::new();
    for (i, lib) in libs.iter().enumerate() {
        let at = format!("{member}: ucode_lib[{i}]");
        let Some(library) = lib.get("library").and_then(Value::as_str) else {
            return Err(reject(
                Gate::G24f,
                "Failed to parse, key: library",
                format!("{at}: library missing"),
            ));
        };
        let Some(version) = lib.get("ulib_to_ucode_version").and_then(Value::as_str) else {
            return Err(reject(
                Gate::G24a,
                "Missing GPSIMD lib version!",
                format!("{at} ({library}): no ulib_to_ucode_version"),
            ));
        };
        let major = leading_int(version.split('.').next().unwrap_or_default());
        if major.is_none() {
            ctx.warnings.push(format!(
                "GPSIMD lib: Failed to parse GPSIMD lib version string! Version: {version}"
            ));
        }
        if major.is_none() || major != abi_major {
            return Err(reject(
                Gate::G24b,
                "Mismatch between GPSIMD lib version and NRT version!",
                format!("{at} ({library}): version {version} has major {major:?}; runtime ucode ABI {} (then: invalid GPSIMD lib)", ctx.profile.ucode_abi),
            ));
        }
        let cpu_id = lib.get("cpu_id").and_then(Value::as_u64).unwrap_or(0);
        if cpu_id as u8 != 0 {
            return Err(reject(
                Gate::G24d,
                "/opt/workspace/KaenaRuntime/kelf/kelf2kbin.cpp:1681: NRT_STATUS parse_one_ucode_lib(const neff_t*, mla_resources&, const std::string&, simdjson::dom::element&): Assertion `cpu_id == 0' failed.",
                format!("{at} ({library}): cpu_id {cpu_id}; the runtime asserts and aborts"),
            ));
        }
        let total_cpus = lib.get("total_cpus").and_then(Value::as_u64).unwrap_or(0);
        let narrowed = total_cpus as u8;
        if narrowed > 1 && narrowed != 8 {
            return Err(reject(
                Gate::G24c,
                format!("UCode Library {library} has invalid number of total cpus {narrowed}"),
                format!("{at}: total_cpus must be 0, 1 or 8"),
            ));
        }
        if !names.insert(library.to_string()) {
            return Err(reject(
                Gate::G24e,
                format!("UCode Library {library} has already been added"),
                format!("{at}: the library name repeats"),
            ));
        }
        let path = in_dir(sg_dir, library);
        if !ctx.exists(&path) {
            return Err(reject(
                Gate::G24f,
                format!("Failed to load ucode library {path}"),
                format!("{at} names {path}, which is not in the NEFF"),
            ));
        }
        let functions: Vec<String> = lib
            .get("functions")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .map(|f| {
                        f.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        staging.ucode_functions.extend(
            functions
                .iter()
                .map(|name| UcodeFunction { name: name.clone() }),
        );
        summary.ucode_libs.push(UcodeLibSummary {
            library: library.to_string(),
            version: Some(version.to_string()),
            cpu_id,
            total_cpus,
            functions,
        });
    }
    Ok(())
}

/// `std::stoi` on the text: optional spaces and sign, then digits.
fn leading_int(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (sign, digits) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<i64>().ok().map(|v| sign * v)
}

/// G25: state-buffer carveouts.
fn carveouts(
    ctx: &mut Ctx<'_>,
    def: &Value,
    member: &str,
    resolved: Arch,
    summary: &mut GraphSummary,
    staging: &mut GraphStaging,
) -> Result<(), Rejection> {
    const FATAL: &str = "Missing or corrupted runtime_statebuffer_reservation field in def.json and NEURON_RT_ALLOW_LEGACY_NEFF=1 is not set. Potentially a legacy neff without proper compiler support";
    let entries = def
        .get("runtime_statebuffer_reservation")
        .and_then(Value::as_array);
    let parsed: Option<Vec<CarveoutSummary>> = entries
        .map(|e| e.iter().map(carveout).collect())
        .and_then(|v: Vec<_>| v.into_iter().collect());
    // A wrong type is checked before the other fields, as the parser reads `type` first.
    if let Some(list) = entries {
        for (i, e) in list.iter().enumerate() {
            if let Some(kind) = e.get("type").and_then(Value::as_str) {
                if kind != "evtaccel" {
                    return Err(reject(
                        Gate::G25a,
                        format!("Invalid runtime_statebuffer_reservation type {kind}"),
                        format!("{member}: runtime_statebuffer_reservation[{i}].type must be \"evtaccel\""),
                    ));
                }
            }
        }
    }
    let Some(list) = parsed else {
        let what = if entries.is_none() {
            "missing or not an array"
        } else {
            "an entry lacks type, offset, size, base_partition or partitions"
        };
        if resolved != Arch::Cayman {
            if def.get("runtime_statebuffer_reservation").is_some() {
                ctx.warnings.push(format!(
                    "{member}: runtime_statebuffer_reservation is {what}; ignored off Cayman"
                ));
            }
            return Ok(());
        }
        if ctx.profile.allow_legacy_neff {
            ctx.warnings.push(format!("{member}: runtime_statebuffer_reservation is {what}; loading anyway because NEURON_RT_ALLOW_LEGACY_NEFF=1"));
            return Ok(());
        }
        return Err(reject(Gate::G25b, FATAL, format!("{member}: runtime_statebuffer_reservation is {what}, and the target resolves to cayman")));
    };
    for c in list {
        staging
            .evtaccel
            .push((c.offset, c.size, c.base_partition, c.partitions));
        summary.carveouts.push(c);
    }
    Ok(())
}

fn carveout(e: &Value) -> Option<CarveoutSummary> {
    let num = |k: &str| e.get(k).and_then(Value::as_u64);
    Some(CarveoutSummary {
        kind: e.get("type")?.as_str()?.to_string(),
        offset: num("offset")?,
        size: num("size")?,
        base_partition: num("base_partition")?,
        partitions: num("partitions")?,
    })
}

/// G26: DMA blocks and their descriptors.
fn dma_blocks(blocks: Option<&Value>, member: &str, key: &str) -> Result<usize, Rejection> {
    let Some(blocks) = blocks else {
        return Ok(0);
    };
    let Some(blocks) = blocks.as_array() else {
        return Err(reject(
            Gate::G26,
            format!("invalid dma block in {member}"),
            format!("{member}: {key} is not an array"),
        ));
    };
    for (b, block) in blocks.iter().enumerate() {
        let at = format!("{member}: {key}[{b}]");
        let Some(block) = block.as_object() else {
            return Err(reject(
                Gate::G26,
                format!("invalid dma block in {member}"),
                format!("{at} is not an object"),
            ));
        };
        let descs = block
            .get("desc")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (d, desc) in descs.iter().enumerate() {
            dma_desc(desc.as_object(), &format!("{at}.desc[{d}]"))?;
        }
    }
    Ok(blocks.len())
}

fn dma_desc(desc: Option<&Map<String, Value>>, at: &str) -> Result<(), Rejection> {
    let Some(desc) = desc else {
        return Err(reject(
            Gate::G26,
            "invalid dma block",
            format!("{at} is not an object"),
        ));
    };
    // No `op` means COPY, or a transpose when the descriptor carries the
    // transpose keys (`transpose_op` holds a permutation such as "WZXY",
    // spec §11.4). `cast` converts between from_dtype and to_dtype.
    let op = desc.get("op").and_then(Value::as_str).unwrap_or("copy");
    if !DMA_OPS.contains(&op) {
        return Err(reject(
            Gate::G26,
            format!("Unknown dma operation: {op}"),
            at.to_string(),
        ));
    }
    let compute = COMPUTE_DMA_OPS.contains(&op);
    for side in ["from", "to"] {
        let list = |k: String| desc.get(&k).and_then(Value::as_array).map(Vec::as_slice);
        let (sizes, steps) = (list(format!("{side}_sizes")), list(format!("{side}_steps")));
        if let (Some(sizes), Some(steps)) = (sizes, steps) {
            if sizes.len() != steps.len() {
                return Err(reject(
                    Gate::G26,
                    format!("invalid dma block: {side}_sizes and {side}_steps differ in length"),
                    format!("{at}: {} sizes, {} steps", sizes.len(), steps.len()),
                ));
            }
        }
        if sizes
            .unwrap_or_default()
            .iter()
            .any(|s| s.as_u64() == Some(0))
        {
            return Err(reject(
                Gate::G26,
                "Size cannot be 0",
                format!("{at}: {side}_sizes has a 0"),
            ));
        }
    }
    if compute && !desc.contains_key("_dtype") {
        return Err(reject(
            Gate::G26,
            "Invalid cce desc ap without dtype",
            format!("{at}: op {op} needs _dtype"),
        ));
    }
    if desc.contains_key("scale")
        && desc.get("scale_dtype").and_then(Value::as_str) != Some("float32")
    {
        return Err(reject(
            Gate::G26,
            "invalid dma block: scale_dtype must be float32",
            format!("{at}: scale without scale_dtype \"float32\""),
        ));
    }
    Ok(())
}

/// G27: the five engines.
fn engines(
    ctx: &mut Ctx<'_>,
    def: &Value,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
) -> Result<(), Rejection> {
    for engine in Engine::ALL.map(Engine::as_str) {
        let mut info = EngineSummary {
            engine: engine.to_string(),
            json: None,
            instr: None,
            instr_size: None,
            dma_blocks: 0,
        };
        let Some(file) = def.get(engine).and_then(Value::as_str) else {
            ctx.warnings.push(format!(
                "Engine {engine} not found in NEFF {}, using empty placeholder",
                ctx.neff_name()
            ));
            summary.engines.push(info);
            continue;
        };
        let eng_member = in_dir(sg_dir, file);
        info.json = Some(eng_member.clone());
        let Some(doc) = ctx.json(&eng_member, Gate::G27)? else {
            return Err(reject(
                Gate::G27,
                format!("Failed to find engine file {eng_member} in NEFF"),
                format!("{member}: {engine} names {eng_member}, which is not in the NEFF"),
            ));
        };
        info.dma_blocks = dma_blocks(doc.get("dma"), &eng_member, "dma")?;
        let Some(instr) = doc.get("instr").and_then(Value::as_str) else {
            return Err(reject(
                Gate::G27,
                format!("missing <instr> in {eng_member}"),
                format!("{eng_member} has no instr key"),
            ));
        };
        let instr_member = in_dir(sg_dir, instr);
        let Some(size) = ctx.size(&instr_member) else {
            return Err(reject(
                Gate::G27,
                format!("Failed to load instruction file {instr_member}"),
                format!("{eng_member}: instr names {instr_member}, which is not in the NEFF"),
            ));
        };
        if size > MAX_INSTR {
            return Err(reject(
                Gate::G27,
                format!("Instruction size {size} for {instr_member} exceeds maximum supported size {MAX_INSTR}"),
                format!("{instr_member} is {size} bytes"),
            ));
        }
        engine_references(ctx, &doc, &eng_member, sg_dir);
        info.instr = Some(instr_member);
        info.instr_size = Some(size);
        summary.engines.push(info);
    }
    Ok(())
}

/// Members an engine JSON names that the loader does not open: the
/// activation tables (`act_info` and the sets of `activation_function_sets`)
/// and the DVE tables. Recorded as referenced; warned about when absent.
fn engine_references(ctx: &mut Ctx<'_>, doc: &Value, eng_member: &str, sg_dir: &str) {
    let act_info = doc
        .get("act_info")
        .and_then(Value::as_str)
        .map(|name| in_dir(sg_dir, name));
    if let Some(info) = &act_info {
        ctx.tolerated_reference(eng_member, "act_info", info);
    }
    if let Some(sets) = doc
        .get("activation_function_sets")
        .and_then(Value::as_array)
    {
        let info_doc = act_info.as_deref().and_then(|m| act_info_doc(ctx, m));
        for (i, set) in sets.iter().enumerate() {
            let Some(set_name) = set.as_str() else {
                ctx.warnings.push(format!(
                    "{eng_member}: activation_function_sets[{i}] is not a set name"
                ));
                continue;
            };
            let Some(info_doc) = &info_doc else {
                // No act_info.json to resolve through (already warned about):
                // the compilers' naming, `<set>.json`, `<set>_bkt.bin`, `<set>_ctrl.bin`.
                for suffix in [".json", "_bkt.bin", "_ctrl.bin"] {
                    ctx.exists(&in_dir(sg_dir, &format!("{set_name}{suffix}")));
                }
                continue;
            };
            let entry = info_doc
                .get("act_func_sets")
                .and_then(Value::as_array)
                .and_then(|all| {
                    all.iter()
                        .find(|s| s.get("name").and_then(Value::as_str) == Some(set_name))
                });
            let Some(entry) = entry else {
                let info = act_info.as_deref().unwrap_or("act_info");
                ctx.warnings.push(format!(
                    "{eng_member}: activation function set {set_name:?} is not listed in {info}'s act_func_sets"
                ));
                continue;
            };
            // act_info.json names its file keys in `pwp_file_keys`.
            let file_keys: Vec<&str> = match info_doc.get("pwp_file_keys").and_then(Value::as_array)
            {
                Some(keys) => keys.iter().filter_map(Value::as_str).collect(),
                None => ACT_SET_FILE_KEYS.to_vec(),
            };
            for key in file_keys {
                if let Some(file) = entry.get(key).and_then(Value::as_str) {
                    ctx.tolerated_reference(
                        eng_member,
                        &format!("activation_function_sets[{i}] ({set_name}).{key}"),
                        &in_dir(sg_dir, file),
                    );
                }
            }
        }
    }
    // `dve_tables`: an array of table objects (real compilers), or one object.
    let tables: Vec<&Map<String, Value>> = match doc.get("dve_tables") {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        Some(Value::Object(map)) => vec![map],
        _ => Vec::new(),
    };
    for (i, table) in tables.iter().enumerate() {
        for (key, name) in table.iter() {
            if let Some(name) = name.as_str() {
                ctx.tolerated_reference(
                    eng_member,
                    &format!("dve_tables[{i}].{key}"),
                    &in_dir(sg_dir, name),
                );
            }
        }
    }
}

/// The keys of an `act_func_sets` entry of act_info.json that name members,
/// when act_info.json has no `pwp_file_keys`.
const ACT_SET_FILE_KEYS: [&str; 3] = ["bkt_bin", "ctrl_bin", "profile_json"];

/// act_info.json parsed, when stored and valid JSON (the loader never reads
/// it, so a bad one is a warning, not a rejection).
fn act_info_doc(ctx: &mut Ctx<'_>, member: &str) -> Option<Value> {
    let bytes = match ctx.bytes(member, Gate::G27) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(e) => {
            ctx.warnings.push(format!(
                "{member} could not be read ({}); its activation sets are not resolved",
                e.message
            ));
            return None;
        }
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            ctx.warnings.push(format!(
                "{member} is not valid JSON ({e}); its activation sets are not resolved"
            ));
            None
        }
    }
}
