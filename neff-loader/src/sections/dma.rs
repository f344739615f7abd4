//! G26: DMA blocks and descriptors.

use super::*;

/// G26: DMA blocks and their descriptors.
pub(super) fn dma_blocks(
    blocks: Option<&Value>,
    member: &str,
    key: &str,
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

pub(super) fn dma_desc(desc: Option<&Map<String, Value>>, at: &str) -> Result<(), Rejection> {
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
