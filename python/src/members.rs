//! `neff._native.Members`: one streaming pass over a NEFF's payload that
//! yields the data of chosen entries in archive order, so reading k members
//! costs one inflate of the payload, not k.

use std::collections::{BTreeMap, BTreeSet};

use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, TryLockError};

use neff_loader::walk::{walk_entries, EntrySink};
use neff_loader::{Entry, EntryKind, Error, ErrorKind, Limits, Rejection, RuntimeProfile};
use neff_tools::diff::{member_key, open_members};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::builder::buffer::HeldBuffer;
use crate::errors::loader_error;
use crate::filling::{most_held, Filling};
use crate::source::Source;

/// Registers the class on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Members>()?;
    m.add_function(wrap_pyfunction!(read_members, m)?)
}

/// The data of the members `names` (keys, as `Neff.names()` lists them), in
/// one pass that is also the loader's container check (G1–G12: inflate, tar
/// walk, payload hash): each member as the runtime keeps it (the last entry
/// of its key). Returns `(key, bytes)` for those found, in `names` order;
/// a NEFF the container gates refuse raises, naming the gate (a payload that
/// cannot be read at all says so).
#[pyfunction]
fn read_members<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    names: Vec<String>,
) -> PyResult<Vec<(String, Bound<'py, PyBytes>)>> {
    let source = Source::extract(source)?;
    let found = py
        .detach(|| collect_members(&source, &names))
        .map_err(|e| loader_error(&e.at_path(source.name())))?;
    let mut found = found;
    Ok(names
        .into_iter()
        .filter_map(|name| {
            let bytes = found.remove(&name)?;
            Some((name, bytes.into_bound(py)))
        })
        .collect())
}

/// [`read_members`]' pass: the wanted members' data, by key, each streamed
/// straight into the `bytes` object returned (no copy after the pass).
fn collect_members(
    source: &Source<'_>,
    names: &[String],
) -> Result<BTreeMap<String, Py<PyBytes>>, Error> {
    let mut payload = source.open()?;
    let mut sink = Collect {
        wanted: names.iter().map(String::as_str).collect(),
        most: most_held(&mut payload)?,
        current: None,
        found: BTreeMap::new(),
        failed: None,
    };
    let tier1 = walk_entries(
        &mut payload,
        &RuntimeProfile::default(),
        &Limits::for_verdict(),
        &mut sink,
    )?;
    let why = |r: Option<Rejection>| {
        r.map_or_else(
            || "the payload could not be read".to_string(),
            |r| format!("{}: {}", r.gate.id(), r.message),
        )
    };
    let container = match (tier1.container, tier1.rejection) {
        (Some(container), None) => container,
        (Some(container), rejection) if container.walk_complete => {
            let message = format!("refused by the container gates: {}", why(rejection));
            return Err(Error::new(ErrorKind::Refused, message));
        }
        (_, rejection) => {
            let message = format!("not a readable NEFF: {}", why(rejection));
            return Err(Error::new(ErrorKind::Refused, message));
        }
    };
    // The gates' verdict first: a member that could not be kept because the
    // payload is damaged is reported as the damage.
    if let Some(e) = sink.failed {
        return Err(e);
    }
    // Only members of the runtime's member map (not the entries it skips).
    let mut kept = BTreeMap::new();
    for (key, (raw, filling)) in sink.found {
        if container.members.contains_key(&raw) {
            kept.insert(
                key.clone(),
                filling.finish().map_err(|e| e.in_member(&key))?,
            );
        }
    }
    Ok(kept)
}

/// Keeps the data of the wanted keys as the walk reads them; a later entry
/// of a key replaces an earlier one (the runtime keeps the last).
struct Collect<'n> {
    wanted: BTreeSet<&'n str>,
    /// The most bytes the payload can hold ([`most_held`]).
    most: u64,
    current: Option<String>,
    /// By key: the entry's raw key bytes and its data.
    found: BTreeMap<String, (Vec<u8>, Filling)>,
    /// Why a member could not be kept (no memory for it, or more data than
    /// its header declares).
    failed: Option<Error>,
}

impl EntrySink for Collect<'_> {
    fn entry(&mut self, entry: &Entry) {
        let key = member_key(entry);
        self.current = None;
        if entry.kind == EntryKind::File
            && self.wanted.contains(key.as_str())
            && self.failed.is_none()
        {
            match Filling::new(entry.size.max(0) as u64, self.most) {
                Ok(filling) => {
                    let raw = entry.key().to_vec();
                    // An earlier entry of the key is released once the GIL
                    // is held again.
                    self.found.insert(key.clone(), (raw, filling));
                    self.current = Some(key);
                }
                Err(e) => self.failed = Some(e.in_member(&key)),
            }
        }
    }

    fn data(&mut self, bytes: &[u8]) {
        let Some(key) = &self.current else {
            return;
        };
        if let Some((_, filling)) = self.found.get_mut(key) {
            if !filling.push(bytes) {
                let message = "more data than its tar header declares";
                self.failed = Some(Error::new(ErrorKind::Read, message).in_member(key));
                self.current = None;
            }
        }
    }

    fn wants_skipped(&self) -> bool {
        false
    }
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
                // A carrier file's NEFF, as `Source::open` reads it.
                let file =
                    neff_tools::carrier::open_neff(&path, None).map_err(|e| loader_error(&e))?;
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
