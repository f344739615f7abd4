//! The values a subgraph is described with: tensors, weights and engine
//! programs.

use neff_schema::manifest::{DmaBlock, Dtype, EngineJson, Extra};

use super::{invalid, Data};
use crate::error::Error;

/// A variable's settings: element type, shape, size, a pinned var_id and
/// extra def.json keys. Inputs and outputs need a dtype and a shape
/// (`neff.json` declares them); sized variables need a size or a dtype and
/// shape to compute it from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tensor {
    pub(super) dtype: Option<Dtype>,
    pub(super) shape: Option<Vec<u64>>,
    pub(super) size: Option<u64>,
    pub(super) var_id: Option<u64>,
    pub(super) extra: Extra,
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

    /// The size: given, else elements × element size; `None` without a
    /// shape or a dtype of known element size. Overflow is refused.
    pub(super) fn byte_size(&self, at: &str) -> Result<Option<u64>, Error> {
        if self.size.is_some() {
            return Ok(self.size);
        }
        let (Some(dtype), Some(shape)) = (&self.dtype, &self.shape) else {
            return Ok(None);
        };
        match dtype.element_size() {
            Some(width) => shape_bytes(at, dtype, shape, width).map(Some),
            None => Ok(None),
        }
    }

    /// Refuses a shape whose element count, or byte size at the dtype's
    /// runtime element size, overflows 64 bits.
    pub(super) fn check_shape(&self, at: &str) -> Result<(), Error> {
        let Some(shape) = &self.shape else {
            return Ok(());
        };
        match &self.dtype {
            Some(dtype) => shape_bytes(at, dtype, shape, dtype.runtime_element_size()).map(drop),
            None => element_count(at, shape).map(drop),
        }
    }
}

/// The number of elements of `shape`; refused when it overflows 64 bits.
fn element_count(at: &str, shape: &[u64]) -> Result<u64, Error> {
    match shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)) {
        Some(count) => Ok(count),
        None => invalid(format!(
            "{at}: shape {shape:?}: the element count overflows 64 bits"
        )),
    }
}

/// Elements × `width` bytes; refused when either overflows 64 bits.
pub(super) fn shape_bytes(
    at: &str,
    dtype: &Dtype,
    shape: &[u64],
    width: u64,
) -> Result<u64, Error> {
    let count = element_count(at, shape)?;
    match count.checked_mul(width) {
        Some(bytes) => Ok(bytes),
        None => invalid(format!(
            "{at}: shape {shape:?} of {dtype}: the byte size ({count} elements × {width} bytes) overflows 64 bits"
        )),
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
    pub(super) data: Data,
    pub(super) format: WeightFormat,
    pub(super) file_name: Option<String>,
    pub(super) tensor: Tensor,
}

impl Weight {
    /// A `.npy` v1 file (its dtype and shape are read from the header unless
    /// the [`Weight::tensor`] gives them, when they must fit its data). The
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
    /// [`Weight::file_name`] says otherwise. Checked, their length must be
    /// the byte size of the [`Weight::tensor`]'s dtype and shape when it
    /// gives both.
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
/// manifest (`<eng>.json`), the typed [`EngineJson`]. What the manifest
/// leaves out the builder fills in: `instr` (the instruction member's name),
/// `dma` (`[]`) and `name` (as the content style writes it).
#[derive(Debug, Default)]
pub struct EngineProgram {
    pub(super) instructions: Option<Data>,
    pub(super) manifest: EngineJson,
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
