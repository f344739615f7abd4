//! The builder's native side: `Model` (the typed build spec `neff.Builder`
//! fills, [`model`]), `build` of a lifted spec, `lift` and `replace_weight`.
//! The typed surface is `neff.Builder` (`python/neff/_builder.py`).

pub(crate) mod buffer;
mod model;

pub(crate) use model::kwargs_json;

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use neff_schema::manifest::Dtype;
use neff_writer::build_spec::{blob_data, Blob, BuildSpec};
use neff_writer::builder::npy::encode_v1;
use neff_writer::{Data, Error, ErrorKind, MemberSource};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{loader_error, writer_error};
use buffer::HeldBuffer;

/// Adds the builder's functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(lift, m)?)?;
    m.add_function(wrap_pyfunction!(replace_weight, m)?)?;
    m.add_function(wrap_pyfunction!(dtype_known, m)?)?;
    m.add_function(wrap_pyfunction!(feature_names, m)?)?;
    m.add_class::<model::Model>()?;
    Ok(())
}

/// Builds the NEFF a spec given as JSON describes (the lifted form that
/// `lift` returns, or a spec whose blobs are all paths); writes it
/// atomically at `path`, or returns its bytes when there is no path.
/// Returns the outcome as JSON.
#[pyfunction]
#[pyo3(signature = (spec, path=None, unchecked=false, keep_refused=false, threads=None, paranoid_readback=false, fsync=true))]
#[allow(clippy::too_many_arguments)]
fn build<'py>(
    py: Python<'py>,
    spec: &str,
    path: Option<PathBuf>,
    unchecked: bool,
    keep_refused: bool,
    threads: Option<usize>,
    paranoid_readback: bool,
    fsync: bool,
) -> PyResult<(String, Option<Bound<'py, PyBytes>>)> {
    let mut spec = BuildSpec::from_slice(Path::new("<spec>"), spec.as_bytes())
        .map_err(|e| writer_error(&e))?;
    spec.unchecked |= unchecked;
    spec.keep_refused |= keep_refused;
    build_spec(
        py,
        spec,
        Vec::new(),
        path,
        threads,
        paranoid_readback,
        fsync,
    )
}

/// Builds `spec`, blobs `{"data": N}` taken from `sources[N]`. The
/// GIL is released while the NEFF is generated, checked, compressed, hashed
/// and written.
fn build_spec<'py>(
    py: Python<'py>,
    spec: BuildSpec,
    mut sources: Vec<Option<Data>>,
    path: Option<PathBuf>,
    threads: Option<usize>,
    paranoid_readback: bool,
    fsync: bool,
) -> PyResult<(String, Option<Bound<'py, PyBytes>>)> {
    if spec.is_lifted() {
        return build_lifted(py, spec, path, threads, paranoid_readback, fsync);
    }
    let mut builder = spec
        .into_builder_with(&mut |key, blob| resolve(&mut sources, key, blob))
        .map_err(|e| writer_error(&e))?
        .fsync(fsync);
    if let Some(threads) = threads {
        builder = builder.threads(threads);
    }
    builder = builder.paranoid_readback(paranoid_readback);
    let written = py.detach(move || match path {
        Some(path) => builder.write_to_path(path).map(|o| (o, None)),
        None => {
            let mut out = Vec::new();
            builder.write_to(&mut out).map(|o| (o, Some(out)))
        }
    });
    let (outcome, bytes) = written.map_err(|e| writer_error(&e))?;
    Ok((
        serde_json::to_string(&outcome).unwrap_or_default(),
        bytes.map(|b| PyBytes::new(py, &b)),
    ))
}

/// A lifted spec (a `payload`): written as `neff build` writes one, blob
/// paths as they are (the lift makes them absolute).
fn build_lifted<'py>(
    py: Python<'py>,
    spec: BuildSpec,
    path: Option<PathBuf>,
    threads: Option<usize>,
    paranoid_readback: bool,
    fsync: bool,
) -> PyResult<(String, Option<Bound<'py, PyBytes>>)> {
    let (model, mut settings) = spec
        .into_model(Path::new(""))
        .map_err(|e| writer_error(&e))?;
    settings.threads = threads;
    settings.paranoid_readback = paranoid_readback;
    settings.no_fsync = !fsync;
    let (packager, options) = model
        .prepare(Path::new(""), &settings)
        .map_err(|e| writer_error(&e))?;
    let written = py.detach(move || match path {
        Some(path) => packager.write_to_path(path, &options).map(|o| (o, None)),
        None => {
            let mut out = Vec::new();
            packager
                .write_to(&mut out, &options)
                .map(|o| (o, Some(out)))
        }
    });
    let (outcome, bytes) = written.map_err(|e| writer_error(&e))?;
    Ok((
        serde_json::to_string(&outcome).unwrap_or_default(),
        bytes.map(|b| PyBytes::new(py, &b)),
    ))
}

/// Unpacks the NEFF at `path` into the new or empty folder `dir` and
/// returns its typed model as a build spec (JSON; blob paths absolute) and
/// the gates' refusal of it, if any (a report as JSON). A container refusal
/// raises, unless `keep_refused` and the refusal is the header's alone (G5,
/// G9: [`neff_tools::extract_refused`]).
#[pyfunction]
#[pyo3(signature = (path, dir, keep_refused=false, prove_deflate=false))]
fn lift(
    py: Python<'_>,
    path: PathBuf,
    dir: PathBuf,
    keep_refused: bool,
    prove_deflate: bool,
) -> PyResult<(String, Option<String>)> {
    let lifted = py.detach(
        move || -> Result<(String, Option<String>), Result<neff_loader::Error, Error>> {
            let profile = neff_loader::RuntimeProfile::default();
            let limits = neff_tools::ExtractLimits::default();
            // The framing is recovered on the unpack's own walk; the other
            // gates go on from its container check.
            let proof = neff_writer::DeflateProof::whole_if(prove_deflate);
            let unpacked = neff_tools::extract_recovering(
                &path,
                &dir,
                &profile,
                false,
                &limits,
                keep_refused,
                proof,
            )
            .map_err(Ok)?;
            let refused =
                neff_tools::refusal_after_unpack(&path, &profile, unpacked.tier1, unpacked.refused)
                    .map_err(Ok)?;
            let recovered = unpacked.recovered.map_err(Err)?;
            let (model, _notes) =
                neff_writer::lift::Model::from_tree(&dir, recovered.file, None).map_err(Err)?;
            let refused = refused.map(|r| serde_json::to_string(&r).unwrap_or_default());
            Ok((model.to_spec_json().map_err(Err)?, refused))
        },
    );
    lifted.map_err(|e| match e {
        Ok(e) => loader_error(&e),
        Err(e) => writer_error(&e),
    })
}

/// A lifted spec (JSON) with the weights of the `file` var `var` of
/// `def_json` replaced by the `.npy` at `npy`
/// ([`neff_writer::lift::Model::replace_weight`]): the member points at it
/// and the var's `size` follows; a new dtype or shape only with `retype`.
/// Returns the new spec.
#[pyfunction]
#[pyo3(signature = (spec, def_json, var, npy, retype=false))]
fn replace_weight(
    spec: &str,
    def_json: String,
    var: String,
    npy: PathBuf,
    retype: bool,
) -> PyResult<String> {
    let spec_error = |message: String| writer_error(&Error::new(ErrorKind::Spec, message));
    let mut doc: serde_json::Value =
        serde_json::from_str(spec).map_err(|e| spec_error(format!("the spec: {e}")))?;
    let payload = doc
        .get_mut("payload")
        .map(serde_json::Value::take)
        .ok_or_else(|| spec_error("not a lifted model (no payload; see neff.lift)".into()))?;
    let mut model = neff_writer::lift::Model {
        payload: serde_json::from_value(payload)
            .map_err(|e| spec_error(format!("payload: {e}")))?,
        ..Default::default()
    };
    let edit = neff_writer::lift::WeightEdit {
        def_json,
        var,
        npy: Blob::Path(npy),
        retype,
    };
    model
        .replace_weight(Path::new(""), edit)
        .map_err(|e| writer_error(&e))?;
    doc["payload"] =
        serde_json::to_value(&model.payload).map_err(|e| spec_error(format!("payload: {e}")))?;
    Ok(doc.to_string())
}

/// The names of the feature bits set in `bits` (unknown bits as `0x…`).
#[pyfunction]
fn feature_names(bits: u64) -> Vec<String> {
    neff_schema::features::names(bits)
}

/// Whether `name` is a dtype the runtime knows (`float32`, `bfloat16`…).
#[pyfunction]
fn dtype_known(name: &str) -> bool {
    !matches!(Dtype::parse(name), Dtype::Other(_))
}

/// The data of one buffer, behind the `.npy` v1 header when one is asked for.
fn buffer_data(obj: &Bound<'_, PyAny>, npy: Option<&(String, Vec<u64>)>) -> PyResult<Data> {
    let held = HeldBuffer::get(obj)?;
    let prefix = npy.map_or_else(Vec::new, |(descr, shape)| encode_v1(descr, shape, &[]));
    let len = prefix.len() as u64 + held.as_bytes().len() as u64;
    let reader = Cursor::new(prefix).chain(held.into_reader());
    Ok(Data::Source(MemberSource::Reader {
        reader: Box::new(reader),
        len,
    }))
}

/// A spec blob's data: a data-list entry (each used once), else as `neff
/// build` reads blobs, relative paths against the working directory.
fn resolve(sources: &mut [Option<Data>], key: &str, blob: Blob) -> Result<Data, Error> {
    let Blob::Held(index) = blob else {
        return blob_data(Path::new(""), key, blob);
    };
    sources
        .get_mut(index)
        .and_then(Option::take)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Spec,
                format!("{key}: data #{index} is missing or used twice"),
            )
            .at_key(key)
        })
}
