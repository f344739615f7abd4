//! A `bytes` object filled with a member's data as a walk reads it, so the
//! data is copied once (by inflate) and never again after the walk.

use std::io::{self, Read, Seek, SeekFrom, Write};

use neff_loader::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The most bytes a payload of `stored` bytes can yield: deflate inflates at
/// most 1032-fold, plus slack for headers. A member declaring more cannot be
/// complete, so no `bytes` of that size is made for it.
pub(crate) fn most_held<R: Read + Seek + ?Sized>(source: &mut R) -> Result<u64, Error> {
    let stored = source.seek(SeekFrom::End(0))?;
    source.seek(SeekFrom::Start(0))?;
    Ok(stored.saturating_mul(1032).saturating_add(1 << 20))
}

/// A new `bytes` object being filled.
pub(crate) struct Filling {
    bytes: Py<PyBytes>,
    /// The address of its data, `len` bytes.
    at: usize,
    len: usize,
    filled: usize,
}

impl Filling {
    /// A `bytes` object of `len` bytes to fill (the GIL is taken to make it);
    /// refused when `len` is over `most` (see [`most_held`]).
    pub(crate) fn new(len: u64, most: u64) -> Result<Filling, Error> {
        let size = usize::try_from(len)
            .ok()
            .filter(|_| len <= most)
            .ok_or_else(|| {
                let message = format!(
                    "the member declares {len} bytes, more than the payload can hold ({most})"
                );
                Error::new(ErrorKind::Read, message)
            })?;
        let (bytes, at) = Python::attach(|py| uninit_bytes(py, size)).map_err(|e| {
            Error::from(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                e.to_string(),
            ))
        })?;
        Ok(Filling {
            bytes,
            at,
            len: size,
            filled: 0,
        })
    }

    /// Appends `data`; `false` when it does not fit. The data is written
    /// through a raw pointer: the part not filled yet is uninitialised, so
    /// no `&mut [u8]` over it is ever made.
    pub(crate) fn push(&mut self, data: &[u8]) -> bool {
        if data.len() > self.len - self.filled {
            return false;
        }
        // SAFETY: `at..at + len` is the data of `bytes`, a new object that no
        // other code holds until it is handed over and that lives as long as
        // `self`; `filled + data.len() <= len` was checked above, and `data`
        // (borrowed elsewhere) cannot overlap it.
        unsafe {
            let to = (self.at as *mut u8).add(self.filled);
            std::ptr::copy_nonoverlapping(data.as_ptr(), to, data.len());
        }
        self.filled += data.len();
        true
    }

    /// The filled object, when every declared byte came.
    pub(crate) fn finish(self) -> Result<Py<PyBytes>, Error> {
        match self.filled == self.len {
            true => Ok(self.bytes),
            false => Err(Error::new(
                ErrorKind::Read,
                format!("{} of {} bytes read", self.filled, self.len),
            )),
        }
    }
}

/// A tar walk's `copy_data` fills it straight from the inflated block.
impl Write for Filling {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self.push(data) {
            true => Ok(data.len()),
            false => Err(io::Error::other(
                "more data than the member's tar header declares",
            )),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A new `bytes` object of `size` bytes, not yet filled, and the address of
/// its data.
fn uninit_bytes(py: Python<'_>, size: usize) -> PyResult<(Py<PyBytes>, usize)> {
    let len = isize::try_from(size)
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err(format!("{size} bytes")))?;
    // SAFETY: a NULL source makes CPython allocate `len` uninitialised bytes;
    // the object is owned here and its data pointer stays valid while it lives.
    unsafe {
        let raw = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let at = pyo3::ffi::PyBytes_AsString(raw) as usize;
        Ok((Py::from_owned_ptr(py, raw), at))
    }
}
