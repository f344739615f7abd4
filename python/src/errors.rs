//! One mapping from the Rust errors (`neff_loader::Error`, `neff_writer::Error`)
//! to the Python exceptions of `neff._errors`: the Python side picks the class
//! from the kind, this side hands over the kind, message, location, errno and
//! (for a refusal) the loader's report as JSON.

use neff_schema::Location;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Which Python class an error becomes: `neff.Rejected` (a refusal with
/// a report), `neff.NeffIOError` (the OS refused), `neff.NeffValueError` (a
/// bad argument), else `neff.NeffError`. Chosen here, from the typed kind,
/// so Python never parses a kind's text.
#[derive(Clone, Copy)]
enum Class {
    Rejected,
    Io,
    Value,
    Plain,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Rejected => "rejected",
            Class::Io => "io",
            Class::Value => "value",
            Class::Plain => "error",
        }
    }
}

/// The class of a loader error kind.
fn loader_class(kind: &neff_loader::ErrorKind) -> Class {
    use neff_loader::ErrorKind as K;
    match kind {
        K::Refused => Class::Rejected,
        K::Read | K::Write => Class::Io,
        _ => Class::Plain,
    }
}

/// The class of a writer error kind.
fn writer_class(kind: &neff_writer::ErrorKind) -> Class {
    use neff_writer::ErrorKind as K;
    match kind {
        K::Refused => Class::Rejected,
        K::Io => Class::Io,
        K::ReadBack(inner) => loader_class(inner),
        K::BadOption | K::BadName => Class::Value,
        _ => Class::Plain,
    }
}

/// What a Rust error tells Python.
struct Native<'a> {
    kind: String,
    class: Class,
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
        loader_class(&e.kind()),
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
        writer_class(&e.kind()),
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
    class: Class,
    message: &str,
    location: &Location,
    e: &dyn std::error::Error,
    report: Option<&neff_loader::Report>,
) -> PyErr {
    // An error the OS caused is an I/O error, whatever the kind that carries it.
    let class = match (class, errno(e)) {
        (Class::Plain, Some(_)) => Class::Io,
        (class, _) => class,
    };
    to_pyerr(Native {
        kind,
        class,
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
        class: Class::Value,
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
            let args = (
                n.kind.as_str(),
                n.class.name(),
                n.message,
                location,
                n.errno,
                n.report,
            );
            Ok(PyErr::from_value(factory.call1(args)?))
        })();
        built.unwrap_or_else(|e| PyRuntimeError::new_err(format!("{}: {e}", n.message)))
    })
}
