//! Whole-file operations: diff two NEFFs, pack a folder, unpack a NEFF, the
//! way `neff diff`, `neff pack` and `neff unpack` do them (the same library
//! calls, so the same checks and the same atomicity). The GIL is released
//! while they run.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use neff_loader::RuntimeProfile;
use neff_tools::diff::{diff as diff_snapshots, DiffOptions, Snapshot};
use neff_tools::{extract, extract_recovering, ExtractLimits, UnpackReport};
use neff_writer::{DeflateProof, HeaderFile, PackSettings, Packager};
use pyo3::prelude::*;
use serde_json::json;

use crate::errors::{bad_argument, loader_error, writer_error};

/// Registers the file functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(pack, m)?)?;
    m.add_function(wrap_pyfunction!(unpack, m)?)?;
    m.add_function(wrap_pyfunction!(export_weights, m)?)?;
    m.add_function(wrap_pyfunction!(import_weights, m)?)?;
    m.add_function(wrap_pyfunction!(shrink, m)?)?;
    Ok(())
}

/// Reads one NEFF for a diff, naming it in the error.
fn snapshot(path: &Path) -> Result<Snapshot, neff_loader::Error> {
    let open = |e| neff_loader::Error::io(neff_loader::ErrorKind::Read, "cannot open", path, e);
    let file = File::open(path).map_err(open)?;
    let size = file.metadata().map_err(open)?.len();
    Snapshot::read(BufReader::new(file), size).map_err(|e| e.at_path(path))
}

/// The `neff diff --json` document of `a` against `b`.
#[pyfunction]
#[pyo3(signature = (a, b, ignore, programs=false))]
fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    ignore: Vec<String>,
    programs: bool,
) -> PyResult<String> {
    let mut options = DiffOptions::default();
    options.programs = programs;
    for name in &ignore {
        options.ignore(name).map_err(|e| bad_argument(&e))?;
    }
    let report = py
        .detach(|| {
            Ok::<_, neff_loader::Error>(diff_snapshots(&snapshot(&a)?, &snapshot(&b)?, &options))
        })
        .map_err(|e| loader_error(&e))?;
    serde_json::to_string(&report).map_err(|e| bad_argument(&e.to_string()))
}

/// `neff pack DIR -o OUT` with `options` ([`PackSettings`] as JSON) over the
/// header file `header`, else (unless `no_recorded_header`) the one `neff
/// unpack` recorded in DIR: the outcome as JSON (`header`, `tar_size`,
/// `files`, `directories`, `report`). A refusal raises `neff.Rejected` unless
/// `keep_refused`.
#[pyfunction]
#[pyo3(signature = (dir, out, options, header=None, no_recorded_header=false))]
fn pack(
    py: Python<'_>,
    dir: PathBuf,
    out: PathBuf,
    options: &str,
    header: Option<PathBuf>,
    no_recorded_header: bool,
) -> PyResult<String> {
    let settings: PackSettings =
        serde_json::from_str(options).map_err(|e| bad_argument(&e.to_string()))?;
    let recorded = match (&header, no_recorded_header) {
        (None, false) => HeaderFile::recorded_in(&dir).map_err(|e| bad_argument(&e))?,
        _ => None,
    };
    let file = match (&header, recorded) {
        (Some(path), _) => HeaderFile::from_path(path).map_err(|e| bad_argument(&e))?,
        (None, Some((_, file))) => file,
        (None, None) => HeaderFile::default(),
    };
    let mut options = settings.options(file).map_err(|e| writer_error(&e))?;
    neff_writer::infer_virtual_core(&dir, &mut options);
    let outcome = py
        .detach(|| Packager::from_dir(&dir)?.write_to_path(&out, &options))
        .map_err(|e| writer_error(&e))?;
    let mut doc = json!(outcome);
    doc["file"] = json!(out.display().to_string());
    Ok(doc.to_string())
}

/// `neff unpack PATH -o DIR [--force] [--header-out H] [--no-fsync]
/// [--no-recorded-header]`: the summary as JSON (`files`, `directories`,
/// `bytes`, `replaced`, `recorded_header`, and `byte_identical_repack` with a
/// header file).
// The Python keywords, one argument each.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (path, dir, header_out=None, force=false, no_verify_hash=false, fsync=true, prove_deflate=false, record_header=true))]
fn unpack(
    py: Python<'_>,
    path: PathBuf,
    dir: PathBuf,
    header_out: Option<PathBuf>,
    force: bool,
    no_verify_hash: bool,
    fsync: bool,
    prove_deflate: bool,
    record_header: bool,
) -> PyResult<String> {
    let profile = RuntimeProfile {
        verify_hash: !no_verify_hash,
        ..RuntimeProfile::default()
    };
    let limits = ExtractLimits::default();
    let proof = DeflateProof::whole_if(prove_deflate);
    // With a header file or a record, the framing recovery rides on the unpack's walk.
    let recovering = header_out.is_some() || record_header;
    let (summary, recovered) = py
        .detach(|| match recovering {
            true => extract_recovering(&path, &dir, &profile, force, &limits, false, proof)
                .map(|r| (r.summary, Some(r.recovered))),
            false => extract(&path, &dir, &profile, force, &limits).map(|(s, _)| (s, None)),
        })
        .map_err(|e| loader_error(&e))?;
    let record = dir.join(neff_writer::RECORDED_HEADER);
    let recorded = match (&recovered, record_header) {
        (Some(Ok(r)), true) => {
            // Synced with the tree, just below.
            neff_writer::fs::write_atomic_with(&record, r.file.to_json().as_bytes(), false)
                .map_err(|e| writer_error(&neff_writer::Error::io("cannot write", &record, e)))?;
            Some(record.display().to_string())
        }
        _ => {
            // An older record would describe another NEFF: it is ours to remove.
            if std::fs::symlink_metadata(&record).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&record).map_err(|e| {
                    writer_error(&neff_writer::Error::io("cannot remove", &record, e))
                })?;
            }
            None
        }
    };
    if fsync {
        py.detach(|| neff_writer::fs::sync_tree(&dir))
            .map_err(|e| writer_error(&neff_writer::Error::from(e).at_path(&dir)))?;
    }
    let mut report = UnpackReport::unpacked(&summary);
    report.recorded_header = recorded;
    if let (Some(out), Some(recovered)) = (&header_out, recovered) {
        let recovered = recovered.map_err(|e| writer_error(&e))?;
        neff_writer::fs::write_atomic_with(out, recovered.file.to_json().as_bytes(), fsync)
            .map_err(|e| writer_error(&neff_writer::Error::io("cannot write", out, e)))?;
        report.header_out = Some(out.display().to_string());
        report.recovered(&recovered);
    }
    serde_json::to_string(&report).map_err(|e| bad_argument(&e.to_string()))
}

/// `neff weights PATH --export OUT`: the number of tensors written.
#[pyfunction]
fn export_weights(py: Python<'_>, path: PathBuf, out: PathBuf) -> PyResult<usize> {
    let scratch = tempfile::tempdir().map_err(|e| writer_error(&e.into()))?;
    let done = py
        .detach(|| neff_tools::weights::export(&path, &out, &scratch.path().join("tree")))
        .map_err(|e| writer_error(&e))?;
    Ok(done.tensors)
}

/// `neff weights PATH --import TENSORS -o OUT [--retype]`: the outcome as
/// JSON (as `pack` gives it, with `file` and the `changed` weights).
#[pyfunction]
#[pyo3(signature = (path, tensors, out, retype=false))]
fn import_weights(
    py: Python<'_>,
    path: PathBuf,
    tensors: PathBuf,
    out: PathBuf,
    retype: bool,
) -> PyResult<String> {
    let scratch = tempfile::tempdir().map_err(|e| writer_error(&e.into()))?;
    let done = py
        .detach(|| neff_tools::weights::import(&path, &tensors, &out, scratch.path(), retype))
        .map_err(|e| writer_error(&e))?;
    let mut doc = json!(done.outcome);
    doc["file"] = json!(out.display().to_string());
    doc["changed"] = json!(done.changed);
    Ok(doc.to_string())
}

/// `neff shrink PATH -o OUT` with `predicate(candidate_path) -> bool` as the
/// test of "still interesting" (an exception in it stops the reduction and
/// is raised): `(from, to, checks)`, the sizes in bytes and the candidates
/// checked.
#[pyfunction]
#[pyo3(signature = (path, out, predicate, max_steps=10_000, seed=0))]
fn shrink(
    path: PathBuf,
    out: PathBuf,
    predicate: &Bound<'_, PyAny>,
    max_steps: u64,
    seed: u64,
) -> PyResult<(u64, u64, u64)> {
    let scratch = tempfile::tempdir().map_err(|e| writer_error(&e.into()))?;
    let mut raised = None;
    let mut interesting = |candidate: &Path| -> bool {
        if raised.is_some() {
            return false;
        }
        let asked = predicate
            .call1((candidate.display().to_string(),))
            .and_then(|r| r.is_truthy());
        asked.unwrap_or_else(|e| {
            raised = Some(e);
            false
        })
    };
    let options = neff_smith::shrink::ShrinkOptions {
        max_steps,
        seed,
        raw: false,
    };
    let done = neff_smith::shrink::shrink(
        &path,
        &out,
        scratch.path(),
        &options,
        &mut interesting,
        &mut |_| {},
    );
    if let Some(e) = raised {
        return Err(e);
    }
    let done = done.map_err(|e| bad_argument(&e.to_string()))?;
    Ok((done.from, done.to, done.steps))
}
