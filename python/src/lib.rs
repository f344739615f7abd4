//! The native module `neff._native`: the Rust core of the `neff` Python
//! package. The public, typed API is the Python layer in `python/neff/`;
//! this module holds only what needs Rust.

use pyo3::prelude::*;

mod builder;
mod errors;
mod files;
mod filling;
mod members;
mod reader;
mod source;

/// `neff._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("RUNTIME_VERSION", neff_loader::RUNTIME_VERSION)?;
    reader::register(m)?;
    files::register(m)?;
    builder::register(m)?;
    members::register(m)?;
    Ok(())
}
