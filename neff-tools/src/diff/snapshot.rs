//! What [`super::diff`] reads of one NEFF, in one streaming pass: the header,
//! each member's size, SHA-256 and mtime, and the JSON members' trees.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, BufRead, Cursor, Read};
use std::rc::Rc;

use neff_schema::{NeffHeader, PkgVersion, HEADER_LEN};
use serde::Serialize;
use sha2::{Digest, Sha256};

use neff_loader::walk::{escape_name, parse_reader, Budget, Digester, Doc, INDEX_PER_STORED_BYTE};
use neff_loader::{payload_stream, Compression, Entry, EntryKind, Error, ErrorKind, TarReader};

/// A NEFF opened for streaming: its header and the tar stream of its payload.
pub struct Opened<'a> {
    /// The 1024-byte header.
    pub header: NeffHeader,
    /// How the payload is stored (gzip is detected from the bytes).
    pub compression: Compression,
    /// The gzip header's MTIME, for a gzip payload.
    pub gzip_mtime: Option<u32>,
    /// The tar entries of the payload (the `data_size` bytes after the header).
    pub tar: TarReader<Box<dyn BufRead + 'a>>,
}

impl std::fmt::Debug for Opened<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("header", &self.header)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

/// Reads the header from `source` and opens the tar stream of the payload
/// after it, as the loader reads it (gzip detected from the bytes, at most
/// `data_size` bytes). Nothing is checked: a NEFF the gates refuse opens too.
pub fn open_members<'a, R: Read + 'a>(mut source: R) -> Result<Opened<'a>, Error> {
    let mut bytes = [0u8; HEADER_LEN];
    source.read_exact(&mut bytes).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => Error::new(
            ErrorKind::Read,
            format!("not a NEFF: shorter than the {HEADER_LEN}-byte header"),
        ),
        _ => Error::from(e),
    })?;
    let header = NeffHeader::from_bytes(bytes);
    let mut payload = source.take(header.data_size());
    let mut head = Vec::with_capacity(10);
    (&mut payload).take(10).read_to_end(&mut head)?;
    let gzip_mtime = match head.as_slice() {
        [0x1f, 0x8b, _, _, a, b, c, d, ..] => Some(u32::from_le_bytes([*a, *b, *c, *d])),
        _ => None,
    };
    let (compression, stream) = payload_stream(Cursor::new(head).chain(payload))?;
    let gzip_mtime = gzip_mtime.filter(|_| compression == Compression::Gzip);
    Ok(Opened {
        header,
        compression,
        gzip_mtime,
        tar: TarReader::new(stream),
    })
}

/// The runtime's key for an entry: its name without a leading `./`, escaped
/// where not UTF-8.
pub fn member_key(entry: &Entry) -> String {
    escape_name(entry.key())
}

/// One member as compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemberFacts {
    /// The member's key (its name without a leading `./`).
    pub name: String,
    /// Entry kind.
    #[serde(rename = "type")]
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// The tar header's mtime (seconds).
    pub mtime: Option<i64>,
}

/// One NEFF as [`super::diff`] compares it. Memory: the member list, plus the
/// JSON members' trees within the loader's budget for the file's size.
#[derive(Debug)]
pub struct Snapshot {
    /// The 1024-byte header.
    pub header: NeffHeader,
    /// How the payload is stored.
    pub compression: Compression,
    /// The gzip header's MTIME, for a gzip payload.
    pub gzip_mtime: Option<u32>,
    /// Why the tar walk stopped before the end of the archive, if it did
    /// (the members read until then are compared).
    pub walk_error: Option<String>,
    /// Every member but directories, by key; a repeated name keeps the last
    /// entry, as the runtime does.
    pub members: BTreeMap<String, MemberFacts>,
    /// The members named `*.json` that parsed as JSON.
    pub(super) docs: BTreeMap<String, Doc>,
    /// The stored payload's digest in the standard layout (MD5 for pkg 2,
    /// SHA-256 for pkg 1; none for another pkg), as `verify` reports it.
    pub digest: Option<String>,
}

/// The source of a snapshot, shared by the walk (through [`Tapped`]) and
/// the drain after it: every stored payload byte read goes through the
/// digest `pkg_version` selects.
struct Tap<R> {
    inner: R,
    /// Bytes read so far, header included.
    read: u64,
    header: Vec<u8>,
    /// `1024 + data_size`, once the header is read.
    end: Option<u64>,
    digester: Option<Digester>,
}

impl<R: Read> Tap<R> {
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut taken = &buf[..n];
        if self.read < HEADER_LEN as u64 {
            let head = (HEADER_LEN as u64 - self.read).min(n as u64) as usize;
            self.header.extend_from_slice(&taken[..head]);
            taken = &taken[head..];
            if self.header.len() == HEADER_LEN {
                let mut bytes = [0u8; HEADER_LEN];
                bytes.copy_from_slice(&self.header);
                let header = NeffHeader::from_bytes(bytes);
                self.end = Some((HEADER_LEN as u64).saturating_add(header.data_size()));
                let pkg = PkgVersion::from_value(header.pkg_version());
                self.digester = Some(Digester::for_payload(true, pkg));
            }
        }
        let payload_at = self.read.max(HEADER_LEN as u64);
        let room = self.end.map_or(0, |end| end.saturating_sub(payload_at));
        let hashed = (taken.len() as u64).min(room) as usize;
        if let Some(d) = &mut self.digester {
            d.update(&taken[..hashed]);
        }
        self.read += n as u64;
        Ok(n)
    }
}

/// The walk's handle on a [`Tap`].
struct Tapped<R>(Rc<RefCell<Tap<R>>>);

impl<R: Read> Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().read_some(buf)
    }
}

impl Snapshot {
    /// Reads a NEFF from `source` in one pass. `stored` is the file's size
    /// when known (it scales the JSON budget as the loader's does; 0 for the
    /// loader's floor). `Err` only when the header cannot be read: a damaged
    /// payload is recorded in [`Snapshot::walk_error`].
    pub fn read<R: Read>(source: R, stored: u64) -> Result<Snapshot, Error> {
        let tap = Rc::new(RefCell::new(Tap {
            inner: source,
            read: 0,
            header: Vec::with_capacity(HEADER_LEN),
            end: None,
            digester: None,
        }));
        let opened = open_members(Tapped(Rc::clone(&tap)))?;
        let mut snapshot = Snapshot {
            header: opened.header,
            compression: opened.compression,
            gzip_mtime: opened.gzip_mtime,
            walk_error: None,
            members: BTreeMap::new(),
            docs: BTreeMap::new(),
            digest: None,
        };
        let mut budget = Budget::for_stored(stored);
        let mut names = NameBudget::for_stored(stored);
        let mut tar = opened.tar;
        if let Err(e) = snapshot.walk(&mut tar, &mut budget, &mut names) {
            snapshot.walk_error = Some(format!("{e} (tar offset {})", tar.offset()));
        }
        drop(tar);
        // The rest of the stored payload (past the archive's end, padding)
        // still counts in the digest.
        let mut tap = tap.borrow_mut();
        let mut buf = vec![0u8; 64 << 10];
        while tap.end.is_some_and(|end| tap.read < end) {
            let want = tap
                .end
                .map_or(0, |end| end - tap.read)
                .min(buf.len() as u64) as usize;
            match tap.read_some(&mut buf[..want]) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let complete = tap.end.is_some_and(|end| tap.read >= end);
        snapshot.digest = tap
            .digester
            .take()
            .and_then(Digester::finish)
            .filter(|_| complete)
            .map(|d| neff_schema::hex::encode(&d));
        Ok(snapshot)
    }

    fn walk<R: BufRead>(
        &mut self,
        tar: &mut TarReader<R>,
        budget: &mut Budget,
        names: &mut NameBudget,
    ) -> Result<(), Error> {
        while let Some(entry) = tar.next_entry()? {
            if entry.kind == EntryKind::Directory {
                continue;
            }
            let name = member_key(&entry);
            names.charge(&name, tar.offset())?;
            let mut hash = Sha256::new();
            let mut hashing = neff_loader::walk::Tap::new(tar.data(), |b: &[u8]| hash.update(b));
            self.docs.remove(&name);
            if name.ends_with(".json") {
                if let Ok((doc, _)) = parse_reader(&mut hashing, *budget) {
                    *budget = budget.less(doc.root());
                    self.docs.insert(name.clone(), doc);
                }
            }
            io::copy(&mut hashing, &mut io::sink()).map_err(|e| Error::from(e).in_member(&name))?;
            drop(hashing);
            let sha256 = neff_schema::hex::encode(hash.finalize());
            let facts = MemberFacts {
                name: name.clone(),
                kind: entry.kind,
                size: entry.size.max(0) as u64,
                sha256,
                mtime: entry.mtime,
            };
            self.members.insert(name, facts);
        }
        Ok(())
    }

    /// A JSON member's tree, when it parsed.
    pub(super) fn doc(&self, name: &str) -> Option<&Doc> {
        self.docs.get(name)
    }
}

/// The member list's share of memory: half the loader's member-map budget
/// for a file of this size (the larger of 32 MiB and half of
/// `INDEX_PER_STORED_BYTE` bytes per stored byte; a diff holds two
/// files), charged per member name kept (its key, its facts and the walk's
/// copy). Past it the walk stops, as `verify` refuses past the whole (G12).
struct NameBudget {
    left: u64,
}

impl NameBudget {
    fn for_stored(stored: u64) -> NameBudget {
        let floor = 32 << 20;
        NameBudget {
            left: floor.max(stored.saturating_mul(INDEX_PER_STORED_BYTE) / 2),
        }
    }

    /// Charges one kept member named `name` (its key and its facts).
    fn charge(&mut self, name: &str, offset: u64) -> Result<(), Error> {
        let cost = 3 * name.len() as u64 + 128;
        match self.left.checked_sub(cost) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::Limit,
                format!("the member names pass the member-map budget for a file of this size (as `neff verify` refuses, G12) at tar offset {offset}"),
            )),
        }
    }
}
