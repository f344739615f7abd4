//! `neff weights`: a NEFF's weights to and from safetensors. One tensor per
//! `file` variable, keyed `<graph>/<var name>` (the same name repeats across
//! graphs), in safetensors' own dtype where one exists (`bf16`, the fp8
//! kinds); any other dtype (a packed `_x4` kind, one the runtime does not
//! name) as `U8` bytes, the NEFF dtype kept in the metadata under the key.
//! An import goes through the lifted model ([`neff_writer::lift::Model`]):
//! a tensor equal to the weight it names changes nothing, so an export read
//! back gives the NEFF byte for byte.

use std::collections::HashMap;
use std::path::Path;

use neff_loader::{GraphSummary, Loader, RuntimeProfile, WeightSummary};
use neff_schema::manifest::Dtype;
use neff_writer::build_spec::Blob;
use neff_writer::lift::{Content, WeightEdit};
use neff_writer::{Error, ErrorKind, PackOutcome, PackSettings};
use safetensors::tensor::TensorView;
use safetensors::{Dtype as StDtype, SafeTensors};

use crate::{extract, ExtractLimits};

/// The metadata key of a tensor's NEFF dtype when safetensors has none.
const DTYPE_KEY: &str = "neff.dtype.";

/// A weight of the NEFF: its key, where it lies, how it is typed.
struct Weight<'m> {
    key: String,
    graph: &'m GraphSummary,
    summary: &'m WeightSummary,
}

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Tensors written.
    pub tensors: usize,
    /// Bytes of tensor data.
    pub bytes: u64,
}

/// The weights of the NEFF at `neff` as the safetensors file `out` (written
/// atomically); `scratch` is a folder the NEFF is unpacked into.
pub fn export(neff: &Path, out: &Path, scratch: &Path) -> Result<Exported, Error> {
    let profile = RuntimeProfile::default();
    let verdict = Loader::new(&profile).verify_path(neff)?;
    let model = verdict.display_load().model.clone().unwrap_or_default();
    extract(neff, scratch, &profile, false, &ExtractLimits::default())?;
    let mut tensors: Vec<(String, StDtype, Vec<usize>, Vec<u8>)> = Vec::new();
    let mut metadata = HashMap::from([("format".to_string(), "neff".to_string())]);
    for w in weights(&model.graphs) {
        let data = weight_data(scratch, w.summary)?;
        let (dtype, shape) = match st_type(w.summary, data.len()) {
            Some(typed) => typed,
            None => {
                let named = w.summary.dtype.clone().unwrap_or_else(|| "unknown".into());
                metadata.insert(format!("{DTYPE_KEY}{}", w.key), named);
                (StDtype::U8, vec![data.len()])
            }
        };
        tensors.push((w.key, dtype, shape, data));
    }
    let views = tensors
        .iter()
        .map(|(key, dtype, shape, data)| {
            let view = TensorView::new(*dtype, shape.clone(), data)
                .map_err(|e| invalid(format!("weight {key}: {e}")))?;
            Ok((key.as_str(), view))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let bytes = safetensors::serialize(views, Some(metadata))
        .map_err(|e| invalid(format!("{}: {e}", out.display())))?;
    neff_writer::fs::write_atomic_with(out, &bytes, true)
        .map_err(|e| Error::io("cannot write", out, e))?;
    Ok(Exported {
        tensors: tensors.len(),
        bytes: tensors.iter().map(|t| t.3.len() as u64).sum(),
    })
}

/// What [`import`] did.
#[derive(Debug)]
pub struct Imported {
    /// The weights whose data changed.
    pub changed: Vec<String>,
    /// The NEFF written.
    pub outcome: PackOutcome,
}

/// The NEFF at `neff` with its weights read from the safetensors file
/// `tensors`, written at `out`; `scratch` is a folder it is lifted into. A
/// tensor naming no weight, or changing a weight's dtype or shape (unless
/// `retype`), is refused; a tensor equal to its weight changes nothing.
pub fn import(
    neff: &Path,
    tensors: &Path,
    out: &Path,
    scratch: &Path,
    retype: bool,
) -> Result<Imported, Error> {
    let bytes = std::fs::read(tensors).map_err(|e| Error::io("cannot read", tensors, e))?;
    let not_safetensors = |e: safetensors::SafeTensorError| {
        invalid(format!(
            "{}: not a safetensors file: {e}",
            tensors.display()
        ))
    };
    let file = SafeTensors::deserialize(&bytes).map_err(not_safetensors)?;
    let extra = SafeTensors::read_metadata(&bytes)
        .map_err(not_safetensors)?
        .1
        .metadata()
        .clone();
    let crate::recovering::Lifted {
        mut model,
        summary,
        tree,
    } = crate::recovering::lift_for_edit(neff, scratch, false)?;
    let known = weights(&summary.graphs);
    let mut names: Vec<String> = file.names().into_iter().map(str::to_string).collect();
    names.sort();
    let mut changed = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(w) = known.iter().find(|w| &w.key == name) else {
            let keys: Vec<&str> = known.iter().map(|w| w.key.as_str()).collect();
            return Err(invalid(format!(
                "{}: tensor {name:?} names no weight of the NEFF (its weights: {})",
                tensors.display(),
                keys.join(", ")
            )));
        };
        let view = file
            .tensor(name)
            .map_err(|e| invalid(format!("{}: {name}: {e}", tensors.display())))?;
        let (old_data, old_header) = weight_file(&tree, w.summary)?;
        if view.data() == old_data.as_slice() {
            continue;
        }
        let member = w.summary.member.clone();
        let new = scratch.join(format!("weight-{i}"));
        let at = format!("{}: tensor {name}", tensors.display());
        if member.ends_with(".npy") {
            let dtype = neff_dtype(&view, &extra, name);
            // The old header's spelling of the same dtype, else the builder's.
            let same = old_header
                .as_ref()
                .filter(|h| h.dtype() == Some(dtype.clone()));
            let descr = match same.and_then(|h| h.descr.clone()) {
                Some(descr) => descr,
                None => npy_descr(&dtype)
                    .ok_or_else(|| invalid(format!("{at}: no .npy dtype for {dtype}")))?
                    .to_string(),
            };
            let shape: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
            let npy = neff_schema::npy::encode_v1(&descr, &shape, view.data());
            std::fs::write(&new, npy).map_err(|e| Error::io("cannot write", &new, e))?;
            let edit = WeightEdit {
                def_json: w.graph.definition.clone(),
                var: w.summary.name.clone(),
                npy: Blob::Path(new),
                retype,
            };
            model.replace_weight(scratch, edit)?;
        } else {
            // A raw weights file: the bytes as they are, of the same length.
            let old = old_data.len();
            if view.data().len() != old && !retype {
                return Err(invalid(format!(
                    "{at}: {} bytes for the {old} of {member}: a shape change is refused unless asked (--retype)",
                    view.data().len()
                )));
            }
            std::fs::write(&new, view.data()).map_err(|e| Error::io("cannot write", &new, e))?;
            let m = model
                .member_mut(&member)
                .ok_or_else(|| invalid(format!("{at}: no member {member}")))?;
            m.content = Content::Data(Blob::Path(new));
        }
        changed.push(name.clone());
    }
    let outcome = model.write_to_path(scratch, out, &PackSettings::default())?;
    Ok(Imported { changed, outcome })
}

/// Every weight of `graphs`, keyed `<graph>/<var>`.
fn weights(graphs: &[GraphSummary]) -> Vec<Weight<'_>> {
    graphs
        .iter()
        .flat_map(|g| {
            g.weights.iter().map(move |w| Weight {
                key: format!("{}/{}", g.name, w.name),
                graph: g,
                summary: w,
            })
        })
        .collect()
}

/// A weight's data bytes in the unpacked tree `tree`: a `.npy` member's
/// after its header, a raw member's all.
fn weight_data(tree: &Path, w: &WeightSummary) -> Result<Vec<u8>, Error> {
    Ok(weight_file(tree, w)?.0)
}

/// A weight's data bytes and, for a `.npy` member, its header.
fn weight_file(
    tree: &Path,
    w: &WeightSummary,
) -> Result<(Vec<u8>, Option<neff_schema::npy::NpyHeader>), Error> {
    let path = tree.join(&w.member);
    let mut bytes = std::fs::read(&path).map_err(|e| Error::io("cannot read", &path, e))?;
    if !w.member.ends_with(".npy") {
        return Ok((bytes, None));
    }
    let header = neff_schema::npy::parse_header(&bytes)
        .map_err(|e| invalid(format!("{}: {e}", w.member)))?;
    let start = (10 + usize::from(header.header_len)).min(bytes.len());
    bytes.drain(..start);
    Ok((bytes, Some(header)))
}

/// The safetensors dtype and shape of a weight whose data is `len` bytes,
/// when safetensors names its dtype and the shape fits the data.
fn st_type(w: &WeightSummary, len: usize) -> Option<(StDtype, Vec<usize>)> {
    let dtype = Dtype::parse(w.dtype.as_deref()?);
    let st = match dtype {
        Dtype::Float32 => StDtype::F32,
        Dtype::Float16 => StDtype::F16,
        Dtype::Bfloat16 => StDtype::BF16,
        Dtype::Int8 => StDtype::I8,
        Dtype::Int16 => StDtype::I16,
        Dtype::Int32 => StDtype::I32,
        Dtype::Int64 => StDtype::I64,
        Dtype::Uint8 => StDtype::U8,
        Dtype::Uint16 => StDtype::U16,
        Dtype::Uint32 => StDtype::U32,
        Dtype::Uint64 => StDtype::U64,
        Dtype::Float8E4m3fn => StDtype::F8_E4M3,
        Dtype::Float8E5m2 => StDtype::F8_E5M2,
        Dtype::Other(_) => return None,
    };
    let shape: Vec<usize> = w.shape.as_ref()?.iter().map(|&d| d as usize).collect();
    // The dims come from the manifest: an overflow is no match, never a panic.
    let bytes = shape
        .iter()
        .try_fold(dtype.element_size()? as usize, |n, &d| n.checked_mul(d))?;
    (bytes == len).then_some((st, shape))
}

/// The NEFF dtype of a tensor: the one the metadata keeps for `name`, else
/// its safetensors dtype's.
fn neff_dtype(
    view: &TensorView<'_>,
    metadata: &Option<HashMap<String, String>>,
    name: &str,
) -> Dtype {
    if let Some(kept) = metadata
        .as_ref()
        .and_then(|m| m.get(&format!("{DTYPE_KEY}{name}")))
    {
        return Dtype::parse(kept);
    }
    match view.dtype() {
        StDtype::F32 => Dtype::Float32,
        StDtype::F16 => Dtype::Float16,
        StDtype::BF16 => Dtype::Bfloat16,
        StDtype::I8 => Dtype::Int8,
        StDtype::I16 => Dtype::Int16,
        StDtype::I32 => Dtype::Int32,
        StDtype::I64 => Dtype::Int64,
        StDtype::U16 => Dtype::Uint16,
        StDtype::U32 => Dtype::Uint32,
        StDtype::U64 => Dtype::Uint64,
        StDtype::F8_E4M3 => Dtype::Float8E4m3fn,
        StDtype::F8_E5M2 => Dtype::Float8E5m2,
        _ => Dtype::Uint8,
    }
}

/// The `.npy` `descr` of a dtype, as the builder writes it.
fn npy_descr(dtype: &Dtype) -> Option<&'static str> {
    Some(match dtype {
        Dtype::Float32 => "<f4",
        Dtype::Float16 => "<f2",
        Dtype::Bfloat16 => "<V2",
        Dtype::Int8 => "|i1",
        Dtype::Int16 => "<i2",
        Dtype::Int32 => "<i4",
        Dtype::Int64 => "<i8",
        Dtype::Uint8 => "|u1",
        Dtype::Uint16 => "<u2",
        Dtype::Uint32 => "<u4",
        Dtype::Uint64 => "<u8",
        Dtype::Float8E4m3fn | Dtype::Float8E5m2 => "|u1",
        Dtype::Other(_) => return None,
    })
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::Invalid, message)
}
