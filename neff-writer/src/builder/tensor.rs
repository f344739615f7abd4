//! The values a subgraph is described with: tensors, weights and engine
//! programs.

use neff_schema::manifest::{Dtype, Extra};
use serde::{Deserialize, Serialize};

use crate::blob::Data;
use crate::error::{invalid, Error};

/// One variable of a subgraph's lists. `type` is given only in `vars` (the
/// other lists imply it); `npy`, `raw` and `file_name` only in `weights`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VarSpec {
    /// The variable (and, for inputs and outputs, tensor) name.
    pub name: String,
    /// The def.json `type` (in `vars` only).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Element type (weights: default from the .npy header; one given must
    /// fit the data's length with the shape).
    pub dtype: Option<Dtype>,
    /// Shape (weights: default from the .npy header).
    pub shape: Option<Vec<u64>>,
    /// Size in bytes (default: elements × element size for inputs, outputs,
    /// tmp_bufs and `virtual` vars; `pointer` defaults to 8; none for weights).
    pub size: Option<u64>,
    /// Pins the var_id (the others fill the free ids).
    pub var_id: Option<u64>,
    /// Weights: a .npy version 1 file (checked; its dtype and shape fill the var).
    pub npy: Option<Data>,
    /// Weights: raw bytes (streamed as they are). With a `dtype` of known
    /// element size and a `shape`, their length must be elements × element size.
    pub raw: Option<Data>,
    /// Weights: the member name in the subgraph folder (default `<name>.npy` / `<name>.bin`).
    pub file_name: Option<String>,
    /// Extra keys in the def.json var object (`"#transfer-type"`,
    /// `internal_shape`, `alignment`, `list`, `referenced_var_id`, ...).
    #[serde(default)]
    pub extra: Extra,
}

/// A variable's settings as the builder takes them: a [`VarSpec`] (the
/// spec's variable) whose name the subgraph method gives. Inputs and
/// outputs need a dtype and a shape (`neff.json` declares them); sized
/// variables need a size or a dtype and shape to compute it from.
pub type Tensor = VarSpec;

/// Weights for a `type: "file"` variable: a [`VarSpec`] with `npy` or `raw` data.
pub type Weight = VarSpec;

impl VarSpec {
    /// A tensor of `dtype` and `shape`; its size is computed from them.
    pub fn new(dtype: Dtype, shape: impl Into<Vec<u64>>) -> VarSpec {
        VarSpec {
            dtype: Some(dtype),
            shape: Some(shape.into()),
            ..VarSpec::default()
        }
    }

    /// A buffer of `size` bytes with no dtype or shape.
    pub fn bytes(size: u64) -> VarSpec {
        VarSpec::default().size(size)
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

    /// Weights from a `.npy` v1 file (its dtype and shape are read from the
    /// header unless the [`VarSpec::tensor`] gives them, when they must fit
    /// its data). The member is `<var name>.npy` unless
    /// [`VarSpec::file_name`] says otherwise.
    pub fn npy(data: impl Into<Data>) -> VarSpec {
        VarSpec {
            npy: Some(data.into()),
            ..VarSpec::default()
        }
    }

    /// Weights from raw bytes (streamed). The member is `<var name>.bin`
    /// unless [`VarSpec::file_name`] says otherwise. Checked, their length
    /// must be the byte size of the dtype and shape when both are given.
    pub fn raw(data: impl Into<Data>) -> VarSpec {
        VarSpec {
            raw: Some(data.into()),
            ..VarSpec::default()
        }
    }

    /// The weights' member name inside the subgraph folder (`.npy` iff the
    /// format is npy).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.file_name = Some(name.into());
        self
    }

    /// Takes dtype, shape, size, var_id and extra keys from `tensor`.
    pub fn tensor(mut self, tensor: Tensor) -> Self {
        self.dtype = tensor.dtype;
        self.shape = tensor.shape;
        self.size = tensor.size;
        self.var_id = tensor.var_id;
        self.extra = tensor.extra;
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
