//! STAND-IN for the reader's `errors.rs` (same `writer_error` signature and
//! the same `neff._errors._from_native` protocol): take the reader's file at
//! merge.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A writer error as a Python exception, built by `neff._errors._from_native`.
pub fn writer_error(e: &neff_writer::Error) -> PyErr {
    Python::attach(|py| {
        let built = (|| -> PyResult<PyErr> {
            let location = PyDict::new(py);
            let l = e.location();
            location.set_item("path", l.path.as_ref().map(|p| p.display().to_string()))?;
            location.set_item("member", l.member.as_deref())?;
            location.set_item("key", l.key.as_deref())?;
            location.set_item("offset", l.offset)?;
            let report = e.report().and_then(|r| serde_json::to_string(r).ok());
            let factory = py.import("neff._errors")?.getattr("_from_native")?;
            let args = (
                format!("{:?}", e.kind()),
                e.message(),
                location,
                None::<i32>,
                report,
            );
            Ok(PyErr::from_value(factory.call1(args)?))
        })();
        built.unwrap_or_else(|err| PyRuntimeError::new_err(format!("{}: {err}", e.message())))
    })
}
