//! DMA blocks and descriptors: the `dma` arrays of def.json (top level) and of
//! each `<eng>.json` (spec §4.4, `parse_one_dma_block`).

use serde::{Deserialize, Serialize};

use super::{extra_keys, Extra};

/// The descriptor `op` strings the runtime knows (AWS's documented ops plus
/// the `transpose_op` spelling); absent means `copy`, or a transpose when the
/// descriptor carries `transpose_op` / `transpose_shape` /
/// `transpose_element_size` (spec §11.4).
pub const DMA_OPS: [&str; 8] = [
    "copy",
    "cast",
    "fma",
    "add",
    "min",
    "max",
    "transpose",
    "transpose_op",
];

/// The ops of [`DMA_OPS`] that compute (they need `from_dtype`/`to_dtype`).
pub const COMPUTE_DMA_OPS: [&str; 4] = ["fma", "add", "min", "max"];

/// One DMA block: descriptors a `PSEUDO_DMA_TRIGGER <queue> block_id=<id>`
/// instruction transfers.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DmaBlock {
    /// The DMA queue (a def.json `dma_queue` name) the block runs on.
    pub queue: Option<String>,
    /// The block id the trigger instruction names (fixture: 0 on each queue).
    pub id: Option<u64>,
    /// An instance name.
    pub instance_name: Option<String>,
    /// The descriptors, in order.
    pub desc: Option<Vec<DmaDesc>>,
    /// The semaphore the block signals (neuronx-cc 2.x).
    pub semaphore: Option<u64>,
    /// Every other key (`#comment`/`comment`, `priority_class`,
    /// `function_start`, `section_start_desc`, `remote_semaphores`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One DMA descriptor: an access pattern from a source to a destination.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DmaDesc {
    /// `copy` (or absent), `cast`, `fma`, `add`, `min`, `max`,
    /// `transpose`/`transpose_op`; anything else is "Unknown dma operation".
    /// Real transposes have no `op` but the `transpose_op` key (a
    /// permutation such as `"WZXY"`).
    pub op: Option<String>,
    /// The source (a var name).
    pub from: Option<String>,
    /// The destination (a var name).
    pub to: Option<String>,
    /// Source access-pattern sizes (none may be 0; as many as `from_steps`).
    pub from_sizes: Option<Vec<u64>>,
    /// Source access-pattern steps.
    pub from_steps: Option<Vec<i64>>,
    /// Destination access-pattern sizes (none may be 0; as many as `to_steps`).
    pub to_sizes: Option<Vec<u64>>,
    /// Destination access-pattern steps.
    pub to_steps: Option<Vec<i64>>,
    /// The dtype of `scale`; must be `"float32"`.
    pub scale_dtype: Option<String>,
    /// Byte offset into `from` (neuronx-cc 2.x).
    pub from_off: Option<u64>,
    /// Byte offset into `to` (neuronx-cc 2.x).
    pub to_off: Option<u64>,
    /// Element type read from `from` (a `cast` converts it to `to_dtype`);
    /// a compute (CCE) op needs one for every source access pattern, here or
    /// on each [`DmaDesc::from_arr`] element ("Invalid cce desc ap without dtype").
    pub from_dtype: Option<String>,
    /// Element type written to `to`; a compute (CCE) op needs it.
    pub to_dtype: Option<String>,
    /// The sources of a compute op with several inputs (neuronx-cc 2.24
    /// `add`: two state-buffer access patterns), each with its own dtype.
    pub from_arr: Option<Vec<DmaSource>>,
    /// How many access-pattern dimensions are tiled (1 or 2 in real output).
    pub num_tiling_dimensions: Option<u64>,
    /// A DMA transpose: the permutation (`"WZXY"`); the descriptor is then a transpose.
    pub transpose_op: Option<String>,
    /// A DMA transpose: the 4-D shape transposed.
    pub transpose_shape: Option<Vec<u64>>,
    /// A DMA transpose: bytes per element.
    pub transpose_element_size: Option<u64>,
    /// Every other key (`scale`, `constant`, `constant_dtype`,
    /// …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One source access pattern of a multi-input compute descriptor
/// ([`DmaDesc::from_arr`]).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DmaSource {
    /// The source (a var name, `SB`, `SB{1}`, …).
    pub from: Option<String>,
    /// Its element type ("Invalid cce desc ap without dtype" without one,
    /// unless the descriptor has `from_dtype`).
    pub from_dtype: Option<String>,
    /// Byte offset into `from`.
    pub from_off: Option<u64>,
    /// Access-pattern sizes.
    pub from_sizes: Option<Vec<u64>>,
    /// Access-pattern steps.
    pub from_steps: Option<Vec<i64>>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(DmaBlock, DmaDesc, DmaSource);

impl DmaBlock {
    /// A block with this queue and id and no descriptors yet.
    pub fn new(queue: impl Into<String>, id: u64) -> DmaBlock {
        DmaBlock {
            queue: Some(queue.into()),
            id: Some(id),
            desc: Some(Vec::new()),
            ..DmaBlock::default()
        }
    }

    /// Appends a descriptor.
    pub fn desc(mut self, desc: DmaDesc) -> Self {
        self.desc.get_or_insert_with(Vec::new).push(desc);
        self
    }
}

impl DmaDesc {
    /// A copy (no `op` key, which means COPY) from `from` to `to`.
    pub fn copy(from: impl Into<String>, to: impl Into<String>) -> DmaDesc {
        DmaDesc {
            from: Some(from.into()),
            to: Some(to.into()),
            ..DmaDesc::default()
        }
    }

    /// Sets the operation.
    pub fn op(mut self, op: impl Into<String>) -> Self {
        self.op = Some(op.into());
        self
    }

    /// Sets the source access pattern.
    pub fn from_ap(mut self, sizes: impl Into<Vec<u64>>, steps: impl Into<Vec<i64>>) -> Self {
        self.from_sizes = Some(sizes.into());
        self.from_steps = Some(steps.into());
        self
    }

    /// Sets the destination access pattern.
    pub fn to_ap(mut self, sizes: impl Into<Vec<u64>>, steps: impl Into<Vec<i64>>) -> Self {
        self.to_sizes = Some(sizes.into());
        self.to_steps = Some(steps.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_block_round_trips() {
        let text = r##"{"desc":[{"from":"input","from_sizes":[128,1],"from_steps":[1,128],
            "to":"gradient_in","to_sizes":[128,1],"to_steps":[1,128]}],"id":0,"queue":"q_gradient_in",
            "#comment":"x","priority_class":2}"##;
        let block: DmaBlock = serde_json::from_str(text).unwrap();
        assert_eq!(block.queue.as_deref(), Some("q_gradient_in"));
        assert_eq!(block.extra["#comment"], "x");
        let built = DmaBlock::new("q_gradient_in", 0)
            .desc(
                DmaDesc::copy("input", "gradient_in")
                    .from_ap([128, 1], [1, 128])
                    .to_ap([128, 1], [1, 128]),
            )
            .key("#comment", "x")
            .key("priority_class", 2);
        assert_eq!(built, block);
        let again: serde_json::Value = serde_json::to_value(&block).unwrap();
        let original: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(again, original);
    }
}
