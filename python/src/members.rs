//! `neff._native.Members`: one streaming pass over a NEFF's payload that
//! yields the data of chosen entries in archive order, so reading k members
//! costs one inflate of the payload, not k.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, TryLockError};

use neff_loader::{Error, ErrorKind};
use neff_tools::diff::{member_key, open_members};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::builder::buffer::HeldBuffer;
use crate::errors::loader_error;

/// Registers the class on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Members>()
}

/// One member read (its key and data), or why the reading stopped.
type Fetched = Result<(String, Vec<u8>), Error>;

/// An iterator of `(key, bytes)` over the entries whose header offsets (in
/// the tar stream) are `offsets`, in archive order. A worker thread reads
/// the payload and hands over one member at a time (at most one waits), so
/// memory stays at about two members and the GIL is free while it reads.
#[pyclass(module = "neff._native")]
pub struct Members {
    next: Mutex<Option<Receiver<Fetched>>>,
    /// What errors name: the path, or `<bytes>`.
    origin: Option<PathBuf>,
}

/// Reads the wanted entries of the NEFF `reader` yields into `tx`, until
/// they are all sent or the receiver is gone.
fn read_wanted(reader: Box<dyn Read + Send>, mut wanted: BTreeSet<u64>, tx: SyncSender<Fetched>) {
    let run = || -> Result<(), Error> {
        let mut opened = open_members(reader)?;
        while !wanted.is_empty() {
            let Some(entry) = opened.tar.next_entry()? else {
                break;
            };
            if !wanted.remove(&entry.header_offset) {
                continue;
            }
            let key = member_key(&entry);
            let mut data = Vec::new();
            (&mut opened.tar.data())
                .take(u64::try_from(entry.size).unwrap_or(0))
                .read_to_end(&mut data)
                .map_err(|e| Error::from(e).in_member(&key))?;
            if tx.send(Ok((key, data))).is_err() {
                break;
            }
        }
        Ok(())
    };
    if let Err(e) = run() {
        let _ = tx.send(Err(e));
    }
}

#[pymethods]
impl Members {
    /// Opens `source` (a path, or an object with the buffer protocol, held
    /// until the reading ends) for the entries at `offsets`.
    #[new]
    fn new(source: &Bound<'_, PyAny>, offsets: Vec<u64>) -> PyResult<Members> {
        let (reader, origin): (Box<dyn Read + Send>, _) = match source.extract::<PathBuf>() {
            Ok(path) => {
                let file = File::open(&path).map_err(|e| {
                    loader_error(&Error::io(ErrorKind::Read, "cannot open", &path, e))
                })?;
                (
                    Box::new(BufReader::with_capacity(1 << 20, file)),
                    Some(path),
                )
            }
            Err(_) => (Box::new(HeldBuffer::get(source)?.into_reader()), None),
        };
        let (tx, rx) = sync_channel(1);
        let wanted = offsets.into_iter().collect();
        std::thread::Builder::new()
            .name("neff-members".into())
            .spawn(move || read_wanted(reader, wanted, tx))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        Ok(Members {
            next: Mutex::new(Some(rx)),
            origin,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<(String, Bound<'py, PyBytes>)>> {
        // Never wait for the lock with the GIL held: the holder needs the GIL
        // back to finish (as a generator, a second caller is refused).
        let mut next = match self.next.try_lock() {
            Ok(next) => next,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyValueError::new_err("the members are already being read"))
            }
        };
        let Some(rx) = next.take() else {
            return Ok(None);
        };
        let (rx, got) = py.detach(move || {
            let got = rx.recv();
            (rx, got)
        });
        match got {
            Ok(Ok((key, data))) => {
                *next = Some(rx);
                Ok(Some((key, PyBytes::new(py, &data))))
            }
            Ok(Err(e)) => Err(located(&self.origin, e)),
            Err(_) => Ok(None),
        }
    }
}

/// An error naming the file read.
fn located(origin: &Option<PathBuf>, e: Error) -> PyErr {
    match origin {
        Some(p) if e.location().path.is_none() => loader_error(&e.at_path(p)),
        _ => loader_error(&e),
    }
}
