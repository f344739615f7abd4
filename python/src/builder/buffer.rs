//! Python objects with the buffer protocol (numpy arrays, `bytes`,
//! `bytearray`, `memoryview`, `array.array`…), held and read without a copy
//! while the GIL is released.
//!
//! pyo3 wraps the buffer protocol only for Python ≥ 3.11 under the limited
//! API (abi3); the protocol itself (`PyObject_GetBuffer`, `PyBuffer_Release`
//! and the `Py_buffer` layout) has not changed since Python 3.3 and every
//! CPython 3.9+ exports it, so it is declared here.

use std::ffi::{c_char, c_int, c_void};
use std::io::{self, Read};

use pyo3::ffi::{PyObject, Py_ssize_t};
use pyo3::prelude::*;

/// CPython's `Py_buffer`.
#[repr(C)]
struct View {
    buf: *mut c_void,
    obj: *mut PyObject,
    len: Py_ssize_t,
    itemsize: Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut Py_ssize_t,
    strides: *mut Py_ssize_t,
    suboffsets: *mut Py_ssize_t,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut View, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut View);
}

/// `PyBUF_C_CONTIGUOUS` (= C_CONTIGUOUS | STRIDES | ND): C-ordered memory,
/// read-only accepted.
const PYBUF_C_CONTIGUOUS: c_int = 0x0020 | 0x0010 | 0x0008;

/// An exported buffer: until it is released (on drop, with the GIL) the
/// exporter keeps its memory alive and refuses to resize it (`bytearray`
/// raises `BufferError`, numpy refuses `resize`).
pub struct HeldBuffer {
    view: View,
}

// SAFETY: the memory stays valid and fixed in size until PyBuffer_Release,
// which only runs in Drop with the GIL held; reading it needs no GIL.
unsafe impl Send for HeldBuffer {}

impl HeldBuffer {
    /// Exports `obj`'s buffer, C-contiguous (else Python's `BufferError`).
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<HeldBuffer> {
        let mut view = std::mem::MaybeUninit::<View>::zeroed();
        // SAFETY: `obj` is alive and the GIL is held; on success the view is
        // filled in, on failure an exception is set.
        let status =
            unsafe { PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), PYBUF_C_CONTIGUOUS) };
        if status != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: PyObject_GetBuffer succeeded and filled the view.
        Ok(HeldBuffer {
            view: unsafe { view.assume_init() },
        })
    }

    /// The buffer's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let len = usize::try_from(self.view.len).unwrap_or(0);
        if self.view.buf.is_null() || len == 0 {
            return &[];
        }
        // SAFETY: an exported C-contiguous buffer is `len` readable bytes at
        // `buf`, valid until released (in Drop).
        unsafe { std::slice::from_raw_parts(self.view.buf.cast::<u8>(), len) }
    }

    /// A reader over the bytes, holding the buffer until it is dropped.
    pub fn into_reader(self) -> BufferReader {
        BufferReader { held: self, pos: 0 }
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was filled by PyObject_GetBuffer and is released
        // once, with the GIL held.
        Python::attach(|_| unsafe { PyBuffer_Release(&mut self.view) });
    }
}

/// Reads a held buffer from the start.
pub struct BufferReader {
    held: HeldBuffer,
    pos: usize,
}

impl Read for BufferReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let rest = self.held.as_bytes().get(self.pos..).unwrap_or_default();
        let n = rest.len().min(out.len());
        out[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}
