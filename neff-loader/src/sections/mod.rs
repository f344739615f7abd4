//! Tier 3: each graph's def.json and engine files, G19–G29
//! (`kelf_load_from_neff` and its handlers; spec §4.3–§4.8, §5.3).

use std::collections::BTreeSet;

use neff_schema::manifest::dma::{COMPUTE_DMA_OPS, DMA_OPS};
use neff_schema::manifest::{Engine, QueueType, VarType};
use neff_schema::{features, Arch};

use crate::access::Ctx;
use crate::access::JsonError;
use crate::gate::{Gate, Rejection};
use crate::json::{Array, Budget, Doc, Json, Object};
use crate::manifests::{GraphRef, Kelf};
use crate::model::{
    EngineSummary, GraphSummary, QueueSummary, UcodeLibSummary, VarSummary, WeightSummary,
};
use crate::staging::{evtaccel_problem, GraphStaging, MAX_FUNCTION_NAME};

// One module per section, in the runtime's order.
mod carveouts;
mod collectives;
mod dma;
mod engines;
mod queues;
mod ucode;
mod vars;

use carveouts::*;
use collectives::*;
use dma::*;
use engines::*;
use queues::*;
use ucode::*;
use vars::*;

/// Runs G19–G27 on every graph, then G28 and G29; returns what staging needs.
pub fn run(ctx: &mut Ctx<'_>, kelf: &Kelf) -> Result<Vec<GraphStaging>, Rejection> {
    let mut staging = Vec::new();
    let mut act_load_queues = 0usize;
    let mut refusal: Option<Rejection> = None;
    for graph in kelf.graphs {
        // After a refusal the runtime stops; the graphs after it are read
        // for display only (every graph shown, marked), leaving the
        // verdict's warnings as they were.
        let mark = ctx.warnings.mark();
        let result = graph_sections(ctx, kelf.resolved, graph, &mut act_load_queues);
        let last = ctx.model.graphs.last_mut();
        match (&refusal, result) {
            (None, Ok(graph)) => staging.push(graph),
            (None, Err(r)) => {
                if let Some(g) = last {
                    g.partial = Some(format!(
                        "read up to the refusal ({}: {})",
                        r.gate.id(),
                        r.message
                    ));
                }
                refusal = Some(r);
            }
            (Some(first), _) => {
                ctx.warnings.rewind(mark);
                if let Some(g) = last {
                    g.partial = Some(format!(
                        "read for display past the refusal by {}: the runtime stops there and never reads this graph",
                        first.gate.id()
                    ));
                }
            }
        }
    }
    if let Some(refusal) = refusal {
        return Err(refusal);
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
pub fn in_dir(sg_dir: &str, name: &str) -> String {
    if sg_dir.is_empty() {
        name.to_string()
    } else {
        format!("{sg_dir}/{name}")
    }
}

/// The object entries of a section keyed by name (or, when the profile
/// allows it, an array of objects with a `name`).
fn named_entries<'v>(ctx: &Ctx<'_>, value: Json<'v>) -> Option<Vec<(&'v str, Json<'v>)>> {
    if let Some(map) = value.as_object() {
        return Some(map.iter().collect());
    }
    let items = value
        .as_array()
        .filter(|_| ctx.profile.accept_array_sections)?;
    Some(
        items
            .iter()
            .map(|v| (v.get("name").and_then(Json::as_str).unwrap_or_default(), v))
            .collect(),
    )
}

fn graph_sections(
    ctx: &mut Ctx<'_>,
    resolved: Arch,
    graph: &GraphRef,
    act_load_queues: &mut usize,
) -> Result<GraphStaging, Rejection> {
    let def_member = graph.definition.as_str();
    let Some(def) = ctx.json(def_member, Gate::G19)? else {
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
            definition: def_member.to_string(),
            ..GraphSummary::default()
        },
        GraphStaging::default(),
    );
    let sg_dir = def_member.rsplit_once('/').map_or("", |(d, _)| d);
    let body = graph_body(
        ctx,
        resolved,
        def.root(),
        def_member,
        sg_dir,
        &mut out,
        act_load_queues,
    );
    // The engine files are read with def.json's tree gone: one tree at a time.
    drop(def);
    let result = body.and_then(|files| engines(ctx, &files, def_member, sg_dir, &mut out.0));
    // What was learned is kept for display even when a section refused.
    let (summary, staging) = out;
    ctx.model.graphs.push(summary);
    result.map(|()| staging)
}

/// The sections of one def.json before the engines, in the runtime's
/// order, into `out`; returns the engines' files.
fn graph_body(
    ctx: &mut Ctx<'_>,
    resolved: Arch,
    def: Json<'_>,
    def_member: &str,
    sg_dir: &str,
    out: &mut (GraphSummary, GraphStaging),
    act_load_queues: &mut usize,
) -> Result<EngineFiles, Rejection> {
    let (summary, staging) = (&mut out.0, &mut out.1);
    vars(ctx, def, def_member, sg_dir, summary)?;
    queues(ctx, def, def_member, summary, act_load_queues)?;
    collectives(def, def_member)?;
    ext_isa(def, def_member)?;
    ucode_libs(ctx, def, def_member, sg_dir, summary, staging)?;
    carveouts(ctx, def, def_member, resolved, summary, staging)?;
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
    dma_blocks(ctx, def.get("dma"), def_member, "dma", summary)?;
    for queue in &summary.queues {
        if !queue.owner.is_empty() && def.get(&queue.owner).is_none() {
            ctx.warnings.push(format!(
                "{def_member}: dma_queue {:?}: its owner {} has no engine manifest in {def_member} (the runtime's behaviour is not modelled)",
                queue.name, queue.owner
            ));
        }
    }
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
        .and_then(Json::as_str)
    {
        let member = in_dir(sg_dir, wavegraph);
        ctx.tolerated_reference(def_member, "debug_info.wavegraph", &member);
    }
    // Debug listings: `<eng>_dbg`, `<eng>_asm_dbg`, `dma_dbg` (spec §11.4),
    // each a list of members in the graph's folder.
    if let Some(map) = def.as_object() {
        for (key, files) in map.iter().filter(|(k, _)| k.ends_with("_dbg")) {
            for (i, file) in files.items().iter().enumerate() {
                if let Some(file) = file.as_str() {
                    let member = in_dir(sg_dir, file);
                    ctx.tolerated_reference(def_member, format_args!("{key}[{i}]"), &member);
                }
            }
        }
    }
    Ok(Engine::ALL.map(|e| {
        def.get(e.as_str())
            .and_then(Json::as_str)
            .map(str::to_string)
    }))
}
