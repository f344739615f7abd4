//! NEFFs carried inside other files, found by parsing the carrier: an XLA
//! HLO module whose `AwsNeuronNeff` custom calls hold NEFFs
//! (`wrapped_neff.hlo` in neuronx-cc 2.21+ compile caches), and a
//! torch-neuron(x) traced model (a TorchScript zip) whose pickles hold NEFFs
//! as strings. Never by scanning for bytes: a NEFF is what the carrier's own
//! structure says it holds.
//!
//! Every command reads a carried NEFF as the NEFF itself ([`carried`] says
//! where each lies; [`spool`] copies one out for the commands that read by
//! path); a carrier is read whole into memory, so it may have at most
//! [`MAX_CARRIER`] bytes.

pub(crate) mod hlo;
mod pickle;
mod torchscript;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use neff_loader::{Error, ErrorKind};
use serde::Serialize;

/// The largest carrier (or pickle member) read: 256 MiB.
pub const MAX_CARRIER: u64 = 256 << 20;

/// What kind of file carries a NEFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CarrierKind {
    /// An XLA HLO module (protobuf), the NEFF in a custom call's
    /// `backend_config`.
    HloModule,
    /// A TorchScript zip, the NEFF a pickled string.
    TorchscriptZip,
}

/// One NEFF inside a carrier file, and where it lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Embedded {
    /// The carrier's kind.
    pub carrier: CarrierKind,
    /// This NEFF's index among the carrier's (`--index`).
    pub index: usize,
    /// How many NEFFs the carrier holds.
    pub count: usize,
    /// The NEFF's byte offset in the carrier file, when its bytes lie there
    /// as they are (not in a compressed zip member).
    pub offset: Option<u64>,
    /// The NEFF's length in bytes.
    pub len: u64,
    /// Where the carrier holds it, in the carrier's own terms.
    pub location: String,
    /// How to read it.
    #[serde(skip)]
    source: Source,
}

/// Where a carried NEFF's bytes are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// Bytes of the carrier file from this offset.
    File(u64),
    /// Bytes of a compressed zip member's data from this offset.
    ZipMember(String, u64),
}

impl std::fmt::Display for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NEFF {} of {} ({} bytes",
            self.index, self.count, self.len
        )?;
        if let Some(at) = self.offset {
            write!(f, " at byte {at}")?;
        }
        write!(f, ") in {}", self.location)
    }
}

/// True when `bytes` start as a NEFF does: `pkg_version` 1 or 2 and
/// `header_size` 0x400 (little-endian u64s), in at least a header's length.
pub(crate) fn looks_like_neff(bytes: &[u8]) -> bool {
    bytes.len() >= neff_schema::HEADER_LEN && starts_like_neff(bytes)
}

/// The first 16 bytes of a NEFF header: `pkg_version` 1 or 2 and
/// `header_size` 0x400, little-endian u64s.
fn starts_like_neff(bytes: &[u8]) -> bool {
    let word = |at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    matches!(word(0), Some(1 | 2)) && word(8) == Some(neff_schema::HEADER_LEN as u64)
}

fn carrier_error(path: &Path, message: String) -> Error {
    Error::new(ErrorKind::Carrier, message).at_path(path)
}

/// The NEFFs the file at `path` carries, or `None` when it is no carrier
/// (a NEFF itself, or a file neither an HLO module with a NEFF custom call
/// nor a zip: the loader then reads it as a NEFF and says what is wrong).
/// A zip, or a file named `.hlo`/`.pb`, that does not parse or carries no
/// NEFF is an [`ErrorKind::Carrier`] error naming what and where.
pub fn carried(path: &Path) -> Result<Option<Vec<Embedded>>, Error> {
    let mut file =
        File::open(path).map_err(|e| Error::io(ErrorKind::Read, "cannot open", path, e))?;
    let mut start = Vec::with_capacity(16);
    (&mut file)
        .take(16)
        .read_to_end(&mut start)
        .map_err(|e| Error::io(ErrorKind::Read, "cannot read", path, e))?;
    if starts_like_neff(&start) {
        return Ok(None);
    }
    let found = if start.starts_with(b"PK\x03\x04") {
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(ErrorKind::Read, "cannot read", path, e))?;
        let neffs = torchscript::neffs(io::BufReader::new(file))
            .map_err(|e| carrier_error(path, format!("TorchScript zip: {e}")))?;
        neffs
            .into_iter()
            .map(|n| {
                let (offset, source) = match n.data_start {
                    Some(data) => (Some(data + n.offset), Source::File(data + n.offset)),
                    None => (None, Source::ZipMember(n.member.clone(), n.offset)),
                };
                let location = format!(
                    "TorchScript zip member {}, pickled string at offset {}",
                    n.member, n.offset
                );
                (CarrierKind::TorchscriptZip, offset, n.len, location, source)
            })
            .collect::<Vec<_>>()
    } else {
        let named_hlo = path.extension().is_some_and(|e| e == "hlo" || e == "pb");
        let len = file
            .metadata()
            .map_err(|e| Error::io(ErrorKind::Read, "cannot read", path, e))?
            .len();
        if len > MAX_CARRIER {
            return match named_hlo {
                true => Err(carrier_error(
                    path,
                    format!(
                        "an HLO module of {len} bytes is over the {} MiB read",
                        MAX_CARRIER >> 20
                    ),
                )),
                false => Ok(None),
            };
        }
        // Read from the file opened, within the bound even if it grows now.
        let mut data = Vec::with_capacity(len as usize);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| (&mut file).take(MAX_CARRIER).read_to_end(&mut data))
            .map_err(|e| Error::io(ErrorKind::Read, "cannot read", path, e))?;
        match hlo::neffs(bytes::Bytes::from(data)) {
            Ok(neffs) if !neffs.is_empty() => neffs
                .into_iter()
                .map(|n| {
                    let at = n.offset as u64;
                    (
                        CarrierKind::HloModule,
                        Some(at),
                        n.len as u64,
                        n.location,
                        Source::File(at),
                    )
                })
                .collect(),
            Ok(_) if named_hlo => {
                return Err(carrier_error(
                    path,
                    format!("the HLO module has no {} custom call", hlo::NEFF_TARGET),
                ))
            }
            Err(e) if named_hlo => return Err(carrier_error(path, e)),
            _ => return Ok(None),
        }
    };
    if found.is_empty() {
        return Err(carrier_error(
            path,
            "the TorchScript zip carries no NEFF (no pickled string starts with a NEFF header)"
                .into(),
        ));
    }
    let count = found.len();
    Ok(Some(
        found
            .into_iter()
            .enumerate()
            .map(
                |(index, (carrier, offset, len, location, source))| Embedded {
                    carrier,
                    index,
                    count,
                    offset,
                    len,
                    location,
                    source,
                },
            )
            .collect(),
    ))
}

/// The carried NEFF `index` asks for (`None`: the only one); an error lists
/// them when the carrier holds several and none is named.
pub fn pick(path: &Path, neffs: Vec<Embedded>, index: Option<usize>) -> Result<Embedded, Error> {
    let count = neffs.len();
    match index {
        Some(i) => neffs.into_iter().nth(i).ok_or_else(|| {
            carrier_error(
                path,
                format!(
                    "--index {i}: the file carries {count} NEFFs (0 to {})",
                    count.saturating_sub(1)
                ),
            )
        }),
        None if count == 1 => neffs
            .into_iter()
            .next()
            .ok_or_else(|| carrier_error(path, "the file carries no NEFF".into())),
        None => {
            let list: Vec<String> = neffs
                .iter()
                .map(|n| format!("  --index {}: {n}", n.index))
                .collect();
            Err(carrier_error(
                path,
                format!(
                    "the file carries {count} NEFFs; pick one:\n{}",
                    list.join("\n")
                ),
            ))
        }
    }
}

/// Copies the carried NEFF `neff` of the file at `path` to `out`; returns
/// the bytes copied.
pub fn copy_out(path: &Path, neff: &Embedded, out: &mut dyn Write) -> Result<u64, Error> {
    let read_error = |e: io::Error| Error::io(ErrorKind::Read, "cannot read", path, e);
    let mut file = File::open(path).map_err(read_error)?;
    let copied = match &neff.source {
        Source::File(at) => {
            file.seek(SeekFrom::Start(*at)).map_err(read_error)?;
            io::copy(&mut io::BufReader::new(file).take(neff.len), out).map_err(read_error)?
        }
        Source::ZipMember(member, at) => {
            let mut zip = zip::ZipArchive::new(io::BufReader::new(file))
                .map_err(|e| carrier_error(path, format!("TorchScript zip: {e}")))?;
            let mut data = zip
                .by_name(member)
                .map_err(|e| carrier_error(path, format!("zip member {member}: {e}")))?;
            io::copy(&mut (&mut data).take(*at), &mut io::sink()).map_err(read_error)?;
            let copied = io::copy(&mut (&mut data).take(neff.len), out).map_err(read_error)?;
            drop(data);
            copied
        }
    };
    if copied != neff.len {
        return Err(carrier_error(
            path,
            format!("{neff}: the carrier ended after {copied} bytes"),
        ));
    }
    Ok(copied)
}

/// The carried NEFF copied to a temporary file (removed when dropped), for
/// the commands that read a NEFF by path.
pub fn spool(path: &Path, neff: &Embedded) -> Result<tempfile::NamedTempFile, Error> {
    let write_error = |e: io::Error| {
        Error::new(
            ErrorKind::Write,
            format!("cannot spool the carried NEFF: {e}"),
        )
        .with_source(e)
    };
    let mut temp = tempfile::NamedTempFile::new().map_err(write_error)?;
    copy_out(path, neff, temp.as_file_mut())?;
    temp.as_file_mut().flush().map_err(write_error)?;
    Ok(temp)
}

/// A NEFF read as a stream: the file itself, or the NEFF a carrier holds.
pub trait NeffRead: Read + Seek + Send {}
impl<T: Read + Seek + Send> NeffRead for T {}

/// Opens the NEFF at `path` for reading: the file itself, or the NEFF
/// number `index` (needed when it holds several) of a carrier file, read in
/// place (a window of the file) or, from a compressed zip member, through
/// an unnamed temp file.
pub fn open_neff(path: &Path, index: Option<usize>) -> Result<Box<dyn NeffRead>, Error> {
    let read_error = |e: io::Error| Error::io(ErrorKind::Read, "cannot open", path, e);
    let Some(neffs) = carried(path)? else {
        return Ok(Box::new(File::open(path).map_err(read_error)?));
    };
    let neff = pick(path, neffs, index)?;
    match neff.source {
        Source::File(at) => {
            let mut file = File::open(path).map_err(read_error)?;
            file.seek(SeekFrom::Start(at)).map_err(read_error)?;
            Ok(Box::new(Window {
                inner: file,
                start: at,
                len: neff.len,
                at: 0,
            }))
        }
        Source::ZipMember(..) => {
            let mut temp = tempfile::tempfile().map_err(read_error)?;
            copy_out(path, &neff, &mut temp)?;
            temp.seek(SeekFrom::Start(0)).map_err(read_error)?;
            Ok(Box::new(temp))
        }
    }
}

/// `len` bytes of `inner` from `start`, read and sought as a file of their own.
#[derive(Debug)]
struct Window<R> {
    inner: R,
    start: u64,
    len: u64,
    /// The position in the window (`inner` is at `start + at`).
    at: u64,
}

impl<R: Read> Read for Window<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.at);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.at += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Window<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let target = match pos {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.at.checked_add_signed(d),
        }
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the NEFF's start")
        })?;
        let at = self.start.checked_add(target).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek past the end of any file")
        })?;
        self.inner.seek(SeekFrom::Start(at))?;
        self.at = target;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_and_seeks_as_a_file_of_its_own() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut w = Window {
            inner: io::Cursor::new(data),
            start: 10,
            len: 20,
            at: 0,
        };
        w.seek(SeekFrom::Start(0)).unwrap();
        let mut all = Vec::new();
        w.read_to_end(&mut all).unwrap();
        assert_eq!(all, (10..30u8).collect::<Vec<_>>());
        assert_eq!(w.seek(SeekFrom::End(-5)).unwrap(), 15);
        let mut tail = Vec::new();
        w.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, (25..30u8).collect::<Vec<_>>());
        assert!(w.seek(SeekFrom::Current(-100)).is_err());
        assert!(w.seek(SeekFrom::Start(u64::MAX)).is_err());
    }

    #[test]
    fn only_a_neff_header_looks_like_a_neff() {
        let mut h = vec![0u8; 1024];
        h[0] = 2;
        h[8..10].copy_from_slice(&0x400u16.to_le_bytes());
        assert!(looks_like_neff(&h));
        h[0] = 3;
        assert!(!looks_like_neff(&h));
        assert!(!looks_like_neff(&h[..100]));
    }
}
