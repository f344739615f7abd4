//! G26: DMA blocks and descriptors.

use std::collections::HashSet;

use super::*;
use crate::model::DmaSummary;

/// Warnings of names a DMA block refers to that def.json does not define,
/// shown per member before the rest are counted.
const UNDEFINED_SHOWN: usize = 3;

/// G26: DMA blocks and their descriptors; counts the descriptors into
/// `summary.dma` (see [`hardware_descriptors`]). A block's `queue` that is
/// no `dma_queue` of def.json, and a descriptor's `from`/`to` that is no
/// var of it, are warnings: what the runtime does then is not known.
pub(super) fn dma_blocks(
    ctx: &mut Ctx<'_>,
    blocks: Option<Json<'_>>,
    member: &str,
    key: &str,
    summary: &mut GraphSummary,
) -> Result<usize, Rejection> {
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
    let io: HashSet<String> = summary
        .inputs
        .iter()
        .chain(&summary.outputs)
        .map(|v| v.name.clone())
        .collect();
    let mut undefined = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        let Some(block) = block.as_object() else {
            return Err(reject(
                Gate::G26,
                format!("invalid dma block in {member}"),
                format!("{member}: {key}[{b}] is not an object"),
            ));
        };
        if let Some(queue) = block.get("queue").and_then(Json::as_str) {
            if !summary.queues.iter().any(|q| q.name == queue) {
                undefined.push(format!("{key}[{b}].queue {queue:?} is no dma_queue"));
            }
        }
        let descs = block.get("desc").map(Json::items).unwrap_or_default();
        for (d, desc) in descs.iter().enumerate() {
            let keys = desc.as_object().map(DescKeys::of);
            if let Some(keys) = &keys {
                count_descriptors(keys, &io, &mut summary.dma);
                for (end, value) in [("from", keys.from), ("to", keys.to)] {
                    let name = value.and_then(Json::as_str);
                    if let Some(name) = name.filter(|n| !summary.var_names.contains(*n)) {
                        undefined.push(format!("{key}[{b}].desc[{d}].{end} {name:?} is no var"));
                    }
                }
            }
            // The descriptor's path is only written for a refusal.
            dma_desc(keys.as_ref()).map_err(|(message, problem)| {
                reject(
                    Gate::G26,
                    message,
                    format!("{member}: {key}[{b}].desc[{d}]{problem}"),
                )
            })?;
        }
    }
    if !undefined.is_empty() {
        let more = match undefined.len().min(UNDEFINED_SHOWN) {
            n if n < undefined.len() => format!(" (and {} more)", undefined.len() - n),
            _ => String::new(),
        };
        let shown = undefined[..undefined.len().min(UNDEFINED_SHOWN)].join("; ");
        ctx.warnings.push(format!(
            "{member}: {shown}{more} of the graph's def.json: the runtime's behaviour is not modelled"
        ));
    }
    Ok(blocks.len())
}

/// The members of one descriptor the gates read, found in one pass over
/// its members (a descriptor has a dozen; a lookup each cost more).
#[derive(Default)]
struct DescKeys<'a> {
    op: Option<Json<'a>>,
    from: Option<Json<'a>>,
    to: Option<Json<'a>>,
    from_sizes: Option<Json<'a>>,
    from_steps: Option<Json<'a>>,
    to_sizes: Option<Json<'a>>,
    to_steps: Option<Json<'a>>,
    scale_dtype: Option<Json<'a>>,
    from_arr: Option<Json<'a>>,
    has_from_dtype: bool,
    has_to_dtype: bool,
    has_scale: bool,
}

impl<'a> DescKeys<'a> {
    fn of(desc: Object<'a>) -> Self {
        let mut keys = DescKeys::default();
        for (key, value) in desc.iter() {
            let slot = match key {
                "op" => &mut keys.op,
                "from" => &mut keys.from,
                "to" => &mut keys.to,
                "from_sizes" => &mut keys.from_sizes,
                "from_steps" => &mut keys.from_steps,
                "to_sizes" => &mut keys.to_sizes,
                "to_steps" => &mut keys.to_steps,
                "scale_dtype" => &mut keys.scale_dtype,
                "from_arr" => &mut keys.from_arr,
                "from_dtype" => {
                    keys.has_from_dtype = true;
                    continue;
                }
                "to_dtype" => {
                    keys.has_to_dtype = true;
                    continue;
                }
                "scale" => {
                    keys.has_scale = true;
                    continue;
                }
                _ => continue,
            };
            *slot = Some(value);
        }
        keys
    }
}

/// A compute (CCE) descriptor's access patterns each carry an element type
/// named `<access pattern>_dtype`: the destination `to_dtype`, every source
/// `from_dtype` (a `from_arr` element's own, or the descriptor's). Real
/// neuronx-cc 2.24 output (trn3) writes exactly these keys; the reference's
/// single `_dtype` key appears in no real file.
fn cce_dtypes(desc: &DescKeys<'_>, op: &str) -> Result<(), (String, String)> {
    let refuse = |problem: String| Err(("Invalid cce desc ap without dtype".to_string(), problem));
    if !desc.has_to_dtype {
        return refuse(format!(": op {op}: the to access pattern has no to_dtype"));
    }
    let sources = desc.from_arr.map(Json::items).unwrap_or_default();
    for (i, source) in sources.iter().enumerate() {
        let own = source
            .as_object()
            .is_some_and(|s| s.get("from_dtype").is_some());
        if !own && !desc.has_from_dtype {
            return refuse(format!(": op {op}: from_arr[{i}] has no from_dtype"));
        }
    }
    if sources.is_empty() && desc.from.is_some() && !desc.has_from_dtype {
        return refuse(format!(
            ": op {op}: the from access pattern has no from_dtype"
        ));
    }
    Ok(())
}

/// Adds one descriptor's [`hardware_descriptors`] to `dma`, as I/O when
/// its `from` or `to` names one of `io`.
fn count_descriptors(desc: &DescKeys<'_>, io: &HashSet<String>, dma: &mut DmaSummary) {
    let names_io = [desc.from, desc.to]
        .iter()
        .any(|side| side.and_then(Json::as_str).is_some_and(|n| io.contains(n)));
    let count = hardware_descriptors(desc);
    let slot = if names_io {
        &mut dma.io_descriptors
    } else {
        &mut dma.spill_descriptors
    };
    *slot = slot.saturating_add(count);
}

/// The hardware descriptors one JSON descriptor stands for: the larger of
/// the products of `from_sizes` and `to_sizes` without their first
/// (contiguous) dimension, at least 1. This equals neuron-cc 1.15's
/// `#block_num_descs` on every block of its real NEFF (spec §11).
fn hardware_descriptors(desc: &DescKeys<'_>) -> u64 {
    let outer = |sizes: Option<Json<'_>>| {
        sizes.and_then(Json::as_array).map_or(1, |sizes| {
            sizes
                .iter()
                .skip(1)
                .filter_map(Json::as_u64)
                .fold(1u64, u64::saturating_mul)
        })
    };
    outer(desc.from_sizes).max(outer(desc.to_sizes)).max(1)
}

/// One descriptor; a refusal is its message and what follows the
/// descriptor's path in the detail.
fn dma_desc(desc: Option<&DescKeys<'_>>) -> Result<(), (String, String)> {
    let refuse = |message: &str, problem: String| Err((message.to_string(), problem));
    let Some(desc) = desc else {
        return refuse("invalid dma block", " is not an object".into());
    };
    // No `op` means COPY, or a transpose when the descriptor carries the
    // transpose keys (`transpose_op` holds a permutation such as "WZXY",
    // spec §11.4). `cast` converts between from_dtype and to_dtype.
    let op = desc.op.and_then(Json::as_str).unwrap_or("copy");
    if !DMA_OPS.contains(&op) {
        return refuse(&format!("Unknown dma operation: {op}"), String::new());
    }
    let compute = COMPUTE_DMA_OPS.contains(&op);
    for (side, sizes, steps) in [
        ("from", desc.from_sizes, desc.from_steps),
        ("to", desc.to_sizes, desc.to_steps),
    ] {
        let (sizes, steps) = (
            sizes.and_then(Json::as_array),
            steps.and_then(Json::as_array),
        );
        if let (Some(sizes), Some(steps)) = (sizes, steps) {
            if sizes.len() != steps.len() {
                return refuse(
                    &format!("invalid dma block: {side}_sizes and {side}_steps differ in length"),
                    format!(": {} sizes, {} steps", sizes.len(), steps.len()),
                );
            }
        }
        if sizes
            .unwrap_or_default()
            .iter()
            .any(|s| s.as_u64() == Some(0))
        {
            return refuse("Size cannot be 0", format!(": {side}_sizes has a 0"));
        }
    }
    if compute {
        cce_dtypes(desc, op)?;
    }
    if desc.has_scale && desc.scale_dtype.and_then(Json::as_str) != Some("float32") {
        return refuse(
            "invalid dma block: scale_dtype must be float32",
            ": scale without scale_dtype \"float32\"".into(),
        );
    }
    Ok(())
}
