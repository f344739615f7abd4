//! G26: DMA blocks and descriptors.

use std::collections::HashSet;

use super::*;
use crate::model::DmaSummary;

/// G26: DMA blocks and their descriptors; counts the descriptors into
/// `summary.dma` (see [`hardware_descriptors`]).
pub(super) fn dma_blocks(
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
    for (b, block) in blocks.iter().enumerate() {
        let Some(block) = block.as_object() else {
            return Err(reject(
                Gate::G26,
                format!("invalid dma block in {member}"),
                format!("{member}: {key}[{b}] is not an object"),
            ));
        };
        let descs = block.get("desc").map(Json::items).unwrap_or_default();
        for (d, desc) in descs.iter().enumerate() {
            if let Some(desc) = desc.as_object() {
                count_descriptors(desc, &io, &mut summary.dma);
            }
            // The descriptor's path is only written for a refusal.
            dma_desc(desc.as_object()).map_err(|(message, problem)| {
                reject(
                    Gate::G26,
                    message,
                    format!("{member}: {key}[{b}].desc[{d}]{problem}"),
                )
            })?;
        }
    }
    Ok(blocks.len())
}

/// Adds one descriptor's [`hardware_descriptors`] to `dma`, as I/O when
/// its `from` or `to` names one of `io`.
fn count_descriptors(desc: Object<'_>, io: &HashSet<String>, dma: &mut DmaSummary) {
    let names_io = ["from", "to"].iter().any(|k| {
        desc.get(k)
            .and_then(Json::as_str)
            .is_some_and(|n| io.contains(n))
    });
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
pub(super) fn hardware_descriptors(desc: Object<'_>) -> u64 {
    let outer = |key: &str| {
        desc.get(key).and_then(Json::as_array).map_or(1, |sizes| {
            sizes
                .iter()
                .skip(1)
                .filter_map(Json::as_u64)
                .fold(1u64, u64::saturating_mul)
        })
    };
    outer("from_sizes").max(outer("to_sizes")).max(1)
}

/// One descriptor; a refusal is its message and what follows the
/// descriptor's path in the detail.
pub(super) fn dma_desc(desc: Option<Object<'_>>) -> Result<(), (String, String)> {
    let refuse = |message: &str, problem: String| Err((message.to_string(), problem));
    let Some(desc) = desc else {
        return refuse("invalid dma block", " is not an object".into());
    };
    // No `op` means COPY, or a transpose when the descriptor carries the
    // transpose keys (`transpose_op` holds a permutation such as "WZXY",
    // spec §11.4). `cast` converts between from_dtype and to_dtype.
    let op = desc.get("op").and_then(Json::as_str).unwrap_or("copy");
    if !DMA_OPS.contains(&op) {
        return refuse(&format!("Unknown dma operation: {op}"), String::new());
    }
    let compute = COMPUTE_DMA_OPS.contains(&op);
    for (side, sizes_key, steps_key) in [
        ("from", "from_sizes", "from_steps"),
        ("to", "to_sizes", "to_steps"),
    ] {
        let list = |k: &str| desc.get(k).and_then(Json::as_array);
        let (sizes, steps) = (list(sizes_key), list(steps_key));
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
    if compute && !desc.contains_key("_dtype") {
        return refuse(
            "Invalid cce desc ap without dtype",
            format!(": op {op} needs _dtype"),
        );
    }
    if desc.contains_key("scale")
        && desc.get("scale_dtype").and_then(Json::as_str) != Some("float32")
    {
        return refuse(
            "invalid dma block: scale_dtype must be float32",
            ": scale without scale_dtype \"float32\"".into(),
        );
    }
    Ok(())
}
