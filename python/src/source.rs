//! A NEFF as Python hands it over: a path (read on demand, streamed) or a
//! `bytes` object (borrowed, never copied).

use std::io::{BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};

use neff_loader::Error;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Where a NEFF's bytes come from.
pub enum Source<'py> {
    /// A file on disk.
    Path(PathBuf),
    /// The bytes of a Python `bytes` object (immutable while borrowed).
    Bytes(&'py [u8]),
}

/// Something to read a NEFF from, seekable.
pub trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

impl<'py> Source<'py> {
    /// `bytes` or anything `os.fspath` accepts.
    pub fn extract(obj: &'py Bound<'py, PyAny>) -> PyResult<Source<'py>> {
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return Ok(Source::Bytes(bytes.as_bytes()));
        }
        Ok(Source::Path(obj.extract()?))
    }

    /// The name reports carry: the path, or `<bytes>`.
    pub fn name(&self) -> String {
        match self {
            Source::Path(p) => p.display().to_string(),
            Source::Bytes(_) => "<bytes>".to_string(),
        }
    }

    /// The path, when it is a file.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Path(p) => Some(p),
            Source::Bytes(_) => None,
        }
    }

    /// A reader from the start of the NEFF.
    pub fn open(&self) -> Result<Box<dyn ReadSeek + 'py>, Error> {
        Ok(match self {
            // A file that carries a NEFF (an HLO module, a TorchScript zip)
            // reads as that NEFF.
            Source::Path(p) => Box::new(BufReader::with_capacity(
                1 << 20,
                neff_tools::carrier::open_neff(p, None)?,
            )),
            Source::Bytes(b) => Box::new(Cursor::new(*b)),
        })
    }
}
