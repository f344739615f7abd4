//! The reading side: inspect (with the memory report), verify, verify many
//! files in parallel, and stream one member out. Everything that reads runs
//! with the GIL released; results cross to Python as JSON text (the shapes
//! `neff inspect --json` and `neff verify --json` print).

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use neff_loader::inputs::{Batches, Input};
use neff_loader::{
    ArchScope, Checked, Error, ErrorKind, Limits, Loader, Runtime, RuntimeProfile, Verdict,
};
use neff_tools::diff::{member_key, open_members};
use neff_tools::{InspectReport, MemoryReport};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde_json::{json, Value};

use crate::errors::{bad_argument, loader_error};
use crate::filling::{most_held, Filling};
use crate::source::Source;

/// Registers the reading functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(verify_many, m)?)?;
    m.add_function(wrap_pyfunction!(cache_scan, m)?)?;
    m.add_function(wrap_pyfunction!(read_member, m)?)?;
    Ok(())
}

/// An error from reading `source`, naming it.
fn with_path(source: &Source<'_>, e: Error) -> Error {
    match source.path() {
        Some(p) if e.location().path.is_none() => e.at_path(p),
        _ => e,
    }
}

/// [`with_path`] as a Python exception.
fn located(source: &Source<'_>, e: Error) -> PyErr {
    loader_error(&with_path(source, e))
}

/// `(inspect_json, memory_json, verify_json)`: the `neff inspect --json`
/// document, the `neff inspect --memory --json` one (`None` without a
/// model) and the `neff verify --json` one, from one read.
#[pyfunction]
fn inspect(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
) -> PyResult<(String, Option<String>, String)> {
    let source = Source::extract(source)?;
    let result = py.detach(|| -> Result<(String, Option<String>, String), Error> {
        let verdict = verify_source(&source, &RuntimeProfile::default())?;
        let report = InspectReport::new(&source.name(), &verdict);
        let memory = report
            .model
            .as_ref()
            .map(|m| to_json(&MemoryReport::new(&report.file, m)));
        Ok((to_json(&report), memory, to_json(&Checked::from(&verdict))))
    });
    result.map_err(|e| located(&source, e))
}

/// Serializes a report (our own types: serializing cannot fail).
fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| json!({ "error": e.to_string() }).to_string())
}

/// The runtime of keyword arguments: `instance_arch` (`"all"` or an arch)
/// and the [`RuntimeProfile`] fields, by name (`None` keeps the default).
fn runtime(instance_arch: &str, profile: Option<&Bound<'_, PyDict>>) -> PyResult<Runtime> {
    let scope = ArchScope::parse(instance_arch).ok_or_else(|| {
        bad_argument(&format!(
            "instance_arch {instance_arch:?} is not all, sunda, cayman or mariana"
        ))
    })?;
    let fields = crate::builder::kwargs_json(profile, "")?;
    let mut profile: RuntimeProfile = serde_json::from_value(Value::Object(fields))
        .map_err(|e| bad_argument(&format!("profile: {e}")))?;
    if let ArchScope::Arch(arch) = scope {
        profile.instance_arch = arch;
    }
    Ok(Runtime { scope, profile })
}

/// The `neff verify --json` document of one NEFF on `instance_arch` under
/// the runtime profile the keyword arguments describe.
#[pyfunction]
#[pyo3(signature = (source, instance_arch, **profile))]
fn verify(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    instance_arch: &str,
    profile: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let runtime = runtime(instance_arch, profile)?;
    let source = Source::extract(source)?;
    py.detach(|| checked(&source, &runtime))
        .map_err(|e| located(&source, e))
}

/// The verdict on every arch, each report naming the source.
fn verify_source(source: &Source<'_>, profile: &RuntimeProfile) -> Result<Verdict, Error> {
    let mut verdict = Loader::new(profile).verify(Some(source.open()?))?;
    for load in &mut verdict.per_arch {
        load.report.file = Some(source.name());
    }
    Ok(verdict)
}

/// One `neff verify --json` document, its reports naming the source.
fn checked(source: &Source<'_>, runtime: &Runtime) -> Result<String, Error> {
    let checked = runtime.check(source.open()?, &Limits::for_verdict(), Some(source.name()))?;
    Ok(to_json(&checked))
}

/// [`verify`] on each path, `threads` at once (default: the cores), in order;
/// a folder gives every `*.neff` under it, sorted by path (as `neff verify`).
/// The verdicts' JSON goes through `each` in order, [`BATCH`] at a time,
/// while the threads check the files after them, so the Python side of the
/// reports overlaps the checking; the list of what `each` returned comes
/// back. The first file that cannot be read raises, naming
/// it (the files after it are not checked), and so do paths that name no
/// NEFF at all.
#[pyfunction]
#[pyo3(signature = (paths, instance_arch, each, threads=None, **profile))]
fn verify_many(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    instance_arch: &str,
    each: &Bound<'_, PyAny>,
    threads: Option<NonZeroUsize>,
    profile: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Py<PyAny>>> {
    let runtime = runtime(instance_arch, profile)?;
    let mut sources = Vec::new();
    for input in neff_loader::inputs::expand(&paths) {
        match input {
            Input::Path(path) => sources.push(Source::Path(path)),
            Input::Unreadable(path, e) => {
                return Err(loader_error(&Error::io(
                    ErrorKind::Read,
                    "cannot read",
                    &path,
                    e,
                )))
            }
        }
    }
    if sources.is_empty() {
        let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(loader_error(&Error::new(
            ErrorKind::Read,
            format!(
                "no *.neff, *.hlo or *.neuron file in {}: nothing was checked",
                named.join(", ")
            ),
        )));
    }
    let workers = threads
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
        .min(sources.len().max(1));
    // Set once Python stops taking verdicts: the files left are skipped.
    let stopped = AtomicBool::new(false);
    let handoff = Batches::new(BATCH);
    let mut out = Vec::with_capacity(sources.len());
    std::thread::scope(|scope| {
        let (sources, runtime, stopped, handoff) = (&sources, &runtime, &stopped, &handoff);
        let checking = scope.spawn(move || {
            let work = |s: &Source<'_>| {
                if stopped.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Read, "not checked".to_string()));
                }
                checked(s, runtime).map_err(|e| with_path(s, e))
            };
            // Python's thread stops waiting once this ends, even by a panic.
            handoff.fill(|h| neff_loader::inputs::in_order(sources, workers, work, |r| h.put(r)));
        });
        let result = 'taking: loop {
            let Some(batch) = py.detach(|| handoff.take()) else {
                break Ok(());
            };
            for next in batch {
                match next {
                    Ok(doc) => match each.call1((doc,)) {
                        Ok(report) => out.push(report.unbind()),
                        Err(e) => break 'taking Err(e),
                    },
                    Err(e) => break 'taking Err(loader_error(&e)),
                }
            }
        };
        if result.is_err() {
            stopped.store(true, Ordering::Relaxed);
        }
        // The threads end (at once, once `stopped`) without the GIL held.
        if py.detach(move || checking.join()).is_err() {
            return Err(loader_error(&Error::new(
                ErrorKind::Read,
                "a checking thread failed".to_string(),
            )));
        }
        result
    })?;
    Ok(out)
}

/// How many verdicts wait before Python's thread is woken to build their
/// reports (1,000 files: about 1,900 context switches one by one, 190 in
/// batches).
const BATCH: usize = 32;

/// The data of member `name` (the last entry of that key, as the runtime
/// keeps it), streamed from the payload straight into the `bytes` object
/// returned (one copy of the data, made by inflate itself); `None` when
/// there is none. The GIL is held only to allocate that object.
#[pyfunction]
fn read_member<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let source = Source::extract(source)?;
    let found = py.detach(|| -> Result<Option<Py<PyBytes>>, Error> {
        let mut payload = source.open()?;
        let most = most_held(&mut payload)?;
        let mut opened = open_members(payload)?;
        let mut found = None;
        while let Some(entry) = opened.tar.next_entry()? {
            if member_key(&entry) != name {
                continue;
            }
            let mut filling = Filling::new(entry.size.max(0) as u64, most)?;
            opened.tar.copy_data(&mut filling)?;
            let bytes = filling.finish()?;
            // An earlier entry of the same key is dropped (the runtime keeps
            // the last): pyo3 releases it once the GIL is held again.
            found = Some(bytes);
        }
        Ok(found)
    });
    let found = found.map_err(|e| located(&source, e.in_member(name)))?;
    Ok(found.map(|b| b.into_bound(py)))
}

/// `neff cache ls|verify ROOT --json`: the cache at `root` read and every
/// entry's NEFF checked on `instance_arch` under the profile the keyword
/// arguments describe, `threads` at once (default: the cores); a lock older
/// than `stale_after` seconds is stale.
#[pyfunction]
#[pyo3(signature = (root, instance_arch, stale_after, threads=None, **profile))]
fn cache_scan(
    py: Python<'_>,
    root: std::path::PathBuf,
    instance_arch: &str,
    stale_after: u64,
    threads: Option<usize>,
    profile: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let runtime = runtime(instance_arch, profile)?;
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let listing = py
        .detach(|| {
            neff_tools::cache::scan(
                &root,
                &runtime.profile,
                runtime.scope,
                threads,
                std::time::Duration::from_secs(stale_after),
            )
        })
        .map_err(|e| {
            crate::errors::writer_error(&neff_writer::Error::io("cannot read", &root, e))
        })?;
    Ok(to_json(&listing))
}
