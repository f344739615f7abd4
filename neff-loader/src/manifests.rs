//! Tier 2: neff.json, the KELF descriptor and the arch check, G13–G18
//! (`kmgr_load_nn_nc`, `parse_neff_json`, `kelf::kelf::load`; spec §4.1, §4.2, §5.2).

use std::collections::BTreeSet;

use neff_schema::manifest::Dtype;
use neff_schema::{Arch, Target};

use crate::access::Ctx;
use crate::gate::{Gate, Rejection};
use crate::json::Json;
use crate::model::{NnTensor, SignatureTensor};

/// Most dimensions a neff.json tensor may have.
const MAX_DIMS: usize = 32;
/// Most tensors of each side (inputs, outputs) the model summary lists.
const TENSORS_LISTED: usize = 10_000;
/// Most bytes of tensor names (and node names and dtypes) it lists.
const TENSOR_TEXT_LISTED: usize = 1 << 20;

/// A graph named by the KELF descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphRef {
    /// `name`.
    pub name: String,
    /// `definition`: the def.json member.
    pub definition: String,
}

/// What Tier 2 hands to Tier 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kelf<'d> {
    /// The target, as the runtime parsed it.
    pub target: Target,
    /// The arch it resolved to on this instance.
    pub resolved: Arch,
    /// Graphs in descriptor order.
    pub graphs: &'d [GraphRef],
}

/// What Tier 2 reads before the arch check (G13–G16, and whether G18
/// refuses): the same on every instance arch, so read once.
#[derive(Debug, Clone)]
pub struct Descriptor {
    member: String,
    target_text: String,
    target: Target,
    graphs: Vec<GraphRef>,
    /// G18's refusal, given only once the arch check has passed.
    repeated_graph: Option<Rejection>,
}

/// G13–G16 and the graph list: everything of Tier 2 that does not depend
/// on the instance arch.
pub fn descriptor(ctx: &mut Ctx<'_>) -> Result<Descriptor, Rejection> {
    let kelf_member = neff_json(ctx)?;
    kelf(ctx, &kelf_member)
}

/// G17 on this instance, then G18.
pub fn arch_check<'d>(ctx: &mut Ctx<'_>, d: &'d Descriptor) -> Result<Kelf<'d>, Rejection> {
    let (member, target_text) = (&d.member, &d.target_text);
    let instance = ctx.profile.instance_arch;
    let resolved = d.target.resolve(instance);
    ctx.model.resolved_arch = Some(resolved);
    if resolved != instance {
        let (neff, inst) = (resolved.ordinal(), instance.ordinal());
        if ctx.profile.allow_legacy_neff {
            ctx.warnings.push(format!(
                "Loading a NEFF compiled for a different arch, NEFF arch: v{neff}, instance arch: v{inst}"
            ));
        } else {
            let mut r = Rejection::new(
                Gate::G17,
                format!("Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v{neff}, instance arch: v{inst}"),
            )
            .detail(format!(
                "target {target_text:?} in {member} is {resolved}, the instance is {instance}. Please ensure that --target <correct_arch> is passed as a neuronx-cc command line flag. To override, set NEURON_RT_ALLOW_LEGACY_NEFF=1 and restart."
            ));
            r.error_cause = Some("NEFF_ARCH_INCOMPAT".to_string());
            return Err(r);
        }
    }
    if let Some(r) = &d.repeated_graph {
        return Err(r.clone());
    }
    Ok(Kelf {
        target: d.target,
        resolved,
        graphs: &d.graphs,
    })
}

/// G13 and G14: neff.json (or kelp.json) and its `__kelf` node.
fn neff_json(ctx: &mut Ctx<'_>) -> Result<String, Rejection> {
    let member = if ctx.exists("neff.json") {
        "neff.json"
    } else if ctx.exists("kelp.json") {
        "kelp.json"
    } else {
        let name = ctx.neff_name();
        return Err(Rejection::new(
            Gate::G13,
            format!("Invalid NN: {name}, neff.json is missing"),
        )
        .detail("the NEFF has neither a neff.json nor a kelp.json member"));
    };
    let Some(parsed) = ctx.json(member, Gate::G14)? else {
        return Err(Rejection::new(
            Gate::G13,
            format!("Invalid NN: {}, neff.json is missing", ctx.neff_name()),
        ));
    };
    let doc = parsed.root();
    let g14 = |message: &str, detail: String| {
        Rejection::new(Gate::G14, message).detail(format!("{member}: {detail}"))
    };
    let required = ["nodes", "arg_nodes", "heads", "node_row_ptr", "attrs"];
    if let Some(missing) = required.iter().find(|k| doc.get(k).is_none()) {
        return Err(g14(
            "Missing required fields in NEFF JSON",
            format!("no top-level key {missing:?}"),
        ));
    }
    let list = |key: &str| doc.get(key).map(Json::items).unwrap_or_default();
    let nodes = list("nodes");
    let attrs = doc.get("attrs");
    let (Some(dltype), Some(shape)) = (
        attrs.and_then(|a| a.get("dltype")),
        attrs.and_then(|a| a.get("shape")),
    ) else {
        return Err(g14(
            "Missing dltype or shape in attrs",
            "attrs needs dltype and shape".into(),
        ));
    };
    if !dltype.is_array() {
        return Err(g14(
            "Invalid dltype data format",
            "attrs.dltype is not an array".into(),
        ));
    }
    if !shape.is_array() {
        return Err(g14(
            "Invalid shape data format",
            "attrs.shape is not an array".into(),
        ));
    }
    // TVM encodes them as ["list_str", [...]] and ["list_shape", [[...], ...]].
    let dtypes = dltype.at(1).map(Json::items).unwrap_or_default();
    let shapes = shape.at(1).map(Json::items).unwrap_or_default();
    let row_ptr = list("node_row_ptr");
    // Each tensor is checked; the summary lists the first ones (see
    // [`TENSORS_LISTED`]) and counts the rest.
    let mut unlisted = 0usize;
    let mut listed_text = 0usize;
    let mut tensor = |ctx: &mut Ctx<'_>,
                      name: &str,
                      node: &str,
                      eid: u64,
                      output: bool|
     -> Result<(), Rejection> {
        let (Some(dt), Some(sh)) = (dtypes.get(eid as usize), shapes.get(eid as usize)) else {
            return Err(g14(
                &format!("EID {eid} out of bounds for dtypes/shapes"),
                format!(
                    "tensor {name} has entry id {eid}; attrs list {} dtypes and {} shapes",
                    dtypes.len(),
                    shapes.len()
                ),
            ));
        };
        let dtype = dt.as_str().unwrap_or_default();
        let dims = || sh.items().iter().filter_map(Json::as_u64);
        let dims: Vec<u64> = dims().take(MAX_DIMS + 1).collect();
        if dims.len() > MAX_DIMS {
            let n = sh.items().iter().filter_map(Json::as_u64).count();
            return Err(g14(
                &format!("Too many dimensions ({n})"),
                format!("tensor {name}"),
            ));
        }
        let elem = dtype_size(dtype).unwrap_or_else(|| {
            ctx.warnings
                .push(format!("Unknown dtype: {dtype}, defaulting to UNKNOWN"));
            1
        });
        let size = dims
            .iter()
            .try_fold(elem, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                g14(
                    &format!("Size overflow for tensor {name}"),
                    format!("shape {dims:?} of {dtype} overflows 64 bits"),
                )
            })?;
        let side = match output {
            false => &mut ctx.model.nn_inputs,
            true => &mut ctx.model.nn_outputs,
        };
        listed_text += name.len() + node.len() + dtype.len();
        if side.len() >= TENSORS_LISTED || listed_text > TENSOR_TEXT_LISTED {
            unlisted += 1;
            return Ok(());
        }
        side.push(NnTensor {
            name: name.to_string(),
            node: node.to_string(),
            entry_id: eid,
            dtype: dtype.to_string(),
            shape: dims,
            size,
        });
        Ok(())
    };
    let node_name = |i: usize| {
        nodes
            .get(i)
            .and_then(|n| n.get("name"))
            .and_then(Json::as_str)
            .unwrap_or_default()
    };
    for (i, raw) in list("arg_nodes").iter().enumerate() {
        let idx = raw.as_u64().unwrap_or(u64::MAX);
        let eid = row_ptr
            .get(idx as usize)
            .and_then(Json::as_u64)
            .unwrap_or(idx);
        if raw.as_u64().is_none() {
            return Err(g14(
                &format!("EID {eid} out of bounds for dtypes/shapes"),
                format!(
                    "neff.json arg_nodes[{i}] is {}, not an unsigned integer (the runtime reads it as {idx})",
                    short_json(raw)
                ),
            ));
        }
        let name = node_name(idx as usize);
        tensor(ctx, name, name, eid, false)?;
    }
    for (i, head) in list("heads").iter().enumerate() {
        let node_id = head.at(0).and_then(Json::as_u64).unwrap_or(u64::MAX);
        if node_id as usize >= nodes.len() {
            let value = head.at(0).map_or("missing".into(), short_json);
            return Err(g14(
                &format!("Output node ID {node_id} out of bounds"),
                format!(
                    "neff.json heads[{i}][0] is {value}; neff.json has {} nodes",
                    nodes.len()
                ),
            ));
        }
        let out_idx = head.at(1).and_then(Json::as_u64).unwrap_or(0);
        let base = row_ptr
            .get(node_id as usize)
            .and_then(Json::as_u64)
            .unwrap_or(node_id);
        let node = node_name(node_id as usize);
        // The tensor's own name is in the node's `output_names` (real files);
        // the node's name stands in when it has none.
        let name = nodes
            .get(node_id as usize)
            .and_then(|n| n.get("output_names"))
            .and_then(|o| o.at(out_idx as usize))
            .and_then(Json::as_str)
            .unwrap_or(node);
        tensor(ctx, name, node, base.saturating_add(out_idx), true)?;
    }
    if unlisted > 0 {
        ctx.warnings.push(format!(
            "{member}: {unlisted} more input and output tensors are checked but not listed (the summary lists {TENSORS_LISTED} a side, {TENSOR_TEXT_LISTED} bytes of names in all)"
        ));
    }
    let signature = doc
        .get("metadata")
        .and_then(|m| m.get("signatures"))
        .and_then(|s| s.get("default"));
    ctx.model.signature_inputs = signature_tensors(signature.and_then(|s| s.get("inputs")));
    ctx.model.signature_outputs = signature_tensors(signature.and_then(|s| s.get("outputs")));
    let lenient = ctx.profile.lenient_kelf_node;
    let kelf_node = nodes.iter().find(|n| {
        n.get("attrs")
            .and_then(|a| a.get("func_name"))
            .and_then(Json::as_str)
            == Some("__kelf")
            || (lenient && n.get("op").and_then(Json::as_str) == Some("__kelf"))
    });
    let Some(node) = kelf_node else {
        return Err(g14(
            "No KELF node found in NEFF JSON",
            "no node has attrs.func_name \"__kelf\"".into(),
        ));
    };
    let Some(kelf) = node.get("attrs").and_then(|a| a.get("kelf")) else {
        return Err(g14(
            "KELF node found but missing 'kelf' attribute",
            "the __kelf node has no attrs.kelf".into(),
        ));
    };
    let Some(kelf) = kelf.as_str() else {
        return Err(g14(
            "KELF attribute is not a string",
            format!("attrs.kelf is {kelf}"),
        ));
    };
    if !ctx.exists("hlo_stats.json") {
        ctx.warnings
            .push("Unable to find hlo_stats.json in the NEFF".to_string());
    }
    ctx.model.kelf = Some(kelf.to_string());
    Ok(kelf.to_string())
}

/// The tensors of one side of `metadata.signatures.default` (name → {id,
/// dtype, shape}), in id order. The runtime does not read them: anything
/// malformed is left out or left empty.
fn signature_tensors(side: Option<Json<'_>>) -> Vec<SignatureTensor> {
    let Some(map) = side.and_then(Json::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<SignatureTensor> =
        map.iter()
            .map(|(name, t)| {
                let dtype = t.get("dtype").and_then(Json::as_str).map(str::to_string);
                let shape = t
                    .get("shape")
                    .and_then(Json::as_array)
                    .map(|a| a.iter().filter_map(Json::as_u64).collect::<Vec<u64>>());
                let size = match (&dtype, &shape) {
                    (Some(d), Some(s)) => dtype_size(d)
                        .and_then(|e| s.iter().try_fold(e, |acc, &x| acc.checked_mul(x))),
                    _ => None,
                };
                SignatureTensor {
                    name: name.to_string(),
                    id: t.get("id").and_then(Json::as_u64),
                    dtype,
                    shape,
                    size,
                }
            })
            .collect();
    out.sort_by_key(|t| t.id.unwrap_or(u64::MAX));
    out
}

/// Bytes per element of a neff.json dtype, `None` when the runtime does not
/// know it.
fn dtype_size(dtype: &str) -> Option<u64> {
    let dtype = Dtype::parse(dtype);
    (dtype.nrt_code() != 0)
        .then(|| dtype.element_size())
        .flatten()
}

/// G15, G16 and the graphs of the KELF descriptor (with G18's verdict on
/// them, given after the arch check).
fn kelf(ctx: &mut Ctx<'_>, member: &str) -> Result<Descriptor, Rejection> {
    let Some(parsed) = ctx.json(member, Gate::G15)? else {
        return Err(
            Rejection::new(Gate::G15, format!("Failed to find KELF {member} in NEFF")).detail(
                format!("neff.json's __kelf node names {member}, which is not in the NEFF"),
            ),
        );
    };
    let doc = parsed.root();
    let version = doc
        .get("version")
        .and_then(Json::as_str)
        .unwrap_or_default();
    if !version.contains('.') {
        return Err(
            Rejection::new(Gate::G15, format!("invalid string (.) in {version}"))
                .detail(format!("{member}: version {version:?} has no '.'")),
        );
    }
    ctx.model.version = Some(version.to_string());
    let target_text = match doc.get("target") {
        Some(t) => t.as_str().map_or_else(|| t.to_string(), str::to_string),
        None => {
            ctx.warnings.push(format!(
                "{member} has no target key; read as the empty string, i.e. sunda"
            ));
            String::new()
        }
    };
    ctx.model.target = Some(target_text.clone());
    let Some(target) = Target::parse_runtime(&target_text) else {
        return Err(
            Rejection::new(Gate::G16, format!("Invalid target '{target_text}'")).detail(format!(
                "{member}: target must be sunda, v2, cayman, v3, mariana, v4, * or empty"
            )),
        );
    };
    let mut graphs = Vec::new();
    let mut seen = BTreeSet::new();
    let mut repeated_graph = None;
    for (i, g) in doc
        .get("graphs")
        .map(Json::items)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let text = |key: &str| {
            g.get(key)
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (name, definition) = (text("name"), text("definition"));
        if !seen.insert(name.clone()) {
            repeated_graph = Some(Rejection::new(
                Gate::G18,
                "/opt/workspace/KaenaRuntime/kelf/kelf.cpp:217: Assertion `graphs.count(name) == 1' failed.",
            )
            .detail(format!("{member}: graphs[{i}] repeats the graph name {name:?}; the runtime asserts and aborts")));
            break;
        }
        graphs.push(GraphRef { name, definition });
    }
    Ok(Descriptor {
        member: member.to_string(),
        target_text,
        target,
        graphs,
        repeated_graph,
    })
}

/// A JSON value for a message, cut short past 60 characters.
fn short_json(value: Json<'_>) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
