//! One mapping from the Rust errors (`neff_loader::Error`, `neff_writer::Error`)
//! to the Python exceptions of `neff._errors`: the Python side picks the class
//! from the kind, this side hands over the kind, message, location, errno and
//! (for a refusal) the loader's report as JSON.

use neff_schema::Location;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What a Rust error tells Python.
struct Native<'a> {
    kind: String,
    message: &'a str,
    location: &'a Location,
    errno: Option<i32>,
    report: Option<String>,
}

/// The OS error number behind `e`, when an I/O failure caused it.
fn errno(e: &dyn std::error::Error) -> Option<i32> {
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io.raw_os_error();
        }
        cause = c.source();
    }
    None
}

/// The report as JSON, for `neff.Rejected.report`.
fn report_json(report: Option<&neff_loader::Report>) -> Option<String> {
    report.and_then(|r| serde_json::to_string(r).ok())
}

/// A loader error as a Python exception.
pub fn loader_error(e: &neff_loader::Error) -> PyErr {
    crate_error(
        format!("{:?}", e.kind()),
        e.message(),
        e.location(),
        e,
        e.report(),
    )
}

/// A writer error as a Python exception (the builder raises these too).
pub fn writer_error(e: &neff_writer::Error) -> PyErr {
    crate_error(
        format!("{:?}", e.kind()),
        e.message(),
        e.location(),
        e,
        e.report(),
    )
}

/// The exception of one of the crates' errors: its kind, message and
/// location, the OS error behind it and the refusal's report.
fn crate_error(
    kind: String,
    message: &str,
    location: &Location,
    e: &dyn std::error::Error,
    report: Option<&neff_loader::Report>,
) -> PyErr {
    to_pyerr(Native {
        kind,
        message,
        location,
        errno: errno(e),
        report: report_json(report),
    })
}

/// A bad argument (a profile knob, an option) as `neff.NeffValueError`.
pub fn bad_argument(message: &str) -> PyErr {
    to_pyerr(Native {
        kind: "BadOption".to_string(),
        message,
        location: &Location::default(),
        errno: None,
        report: None,
    })
}

/// Builds the exception with `neff._errors._from_native`.
fn to_pyerr(n: Native<'_>) -> PyErr {
    Python::attach(|py| {
        let built = (|| -> PyResult<PyErr> {
            let location = PyDict::new(py);
            let l = n.location;
            location.set_item("path", l.path.as_ref().map(|p| p.display().to_string()))?;
            location.set_item("member", l.member.as_deref())?;
            location.set_item("key", l.key.as_deref())?;
            location.set_item("offset", l.offset)?;
            let factory = py.import("neff._errors")?.getattr("_from_native")?;
            let args = (n.kind.as_str(), n.message, location, n.errno, n.report);
            Ok(PyErr::from_value(factory.call1(args)?))
        })();
        built.unwrap_or_else(|e| PyRuntimeError::new_err(format!("{}: {e}", n.message)))
    })
}
