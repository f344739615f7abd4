//! Where the commands read a NEFF from: a file, stdin (`-`), or a file that
//! carries NEFFs ([`resolve`]).
//!
//! The loader seeks (the file size first, then back over the payload), so a
//! stdin that is a redirected file is read in place, and a pipe is spooled to
//! an unlinked temporary file: memory stays bounded whatever the input size;
//! the disk holds one copy until the process ends.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use neff::loader::{Error, ErrorKind, Limits, Loader, RuntimeProfile, Verdict};
use neff::tools::carrier::{self, Embedded};

/// The name reports give stdin.
pub const STDIN_NAME: &str = "<stdin>";

/// Whether the argument `path` stands for stdin.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The name reports give the input `path`.
pub fn name(path: &Path) -> String {
    if is_stdin(path) {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// Opens the input `path` (`-` = stdin) for the loader. Errors carry no path:
/// the caller names the input.
pub fn open(path: &Path) -> Result<BufReader<File>, Error> {
    let file = if is_stdin(path) {
        stdin_file()
    } else {
        File::open(path)
    }
    .map_err(|e| Error::new(ErrorKind::Read, format!("cannot open: {e}")).with_source(e))?;
    Ok(BufReader::with_capacity(SOURCE_BUFFER, file))
}

/// The buffer over an input: no larger than the loader's own 64 KiB reads of
/// the payload, so that those go straight to the file instead of being copied
/// once more through this buffer.
const SOURCE_BUFFER: usize = 64 << 10;

/// [`Loader::verify`] on the input `path` (`-` = stdin); every report
/// names it `shown`.
pub fn verify(
    path: &Path,
    shown: &str,
    profile: &RuntimeProfile,
    limits: &Limits,
) -> Result<Verdict, Error> {
    let mut verdict = Loader::new(profile)
        .limits(limits.clone())
        .verify(Some(open(path)?))?;
    for load in &mut verdict.per_arch {
        load.report.file = Some(shown.to_string());
    }
    Ok(verdict)
}

/// A command's input: the NEFF named, or the NEFF a carrier file holds (an
/// HLO module, a TorchScript zip), copied to a temp file for the command.
#[derive(Debug)]
pub struct Resolved {
    /// What the command reads.
    pub path: PathBuf,
    /// The name messages and reports give it: the file's, with `[N]` when
    /// its carrier holds several NEFFs.
    pub name: String,
    /// Where the NEFF lies in its carrier, when it was read from one.
    pub carried: Option<Embedded>,
    /// The temp file `path` names for a carried NEFF (removed when dropped).
    _spool: Option<tempfile::NamedTempFile>,
}

/// The input `path` (`-` = stdin) as a command reads it: a carrier file's
/// NEFF (number `index`, needed when it holds several) is copied out and
/// where it lay is said on stderr unless `quiet`; any other file is read as
/// it is.
pub fn resolve(path: &Path, index: Option<usize>, quiet: bool) -> Result<Resolved, Error> {
    resolve_with(path, index, quiet, true)
}

/// [`resolve`], where `index` applies to a carrier only: a NEFF named beside
/// one is read as it is (`diff CARRIER NEFF --index N`).
pub fn resolve_carrier(path: &Path, index: Option<usize>, quiet: bool) -> Result<Resolved, Error> {
    resolve_with(path, index, quiet, false)
}

/// Every NEFF the input `path` stands for, found with one parse of it:
/// itself (`None`), or each NEFF of a carrier, to be read one at a time by
/// [`read_as`] (each copied out only when it is read).
pub fn each_neff(path: &Path) -> Result<Vec<Option<Embedded>>, Error> {
    match is_stdin(path) {
        true => Ok(vec![None]),
        false => Ok(match carried(path)? {
            None => vec![None],
            Some(neffs) => neffs.into_iter().map(Some).collect(),
        }),
    }
}

/// The input `path` as a command reads it: itself, or the carried NEFF
/// `neff` (one of [`each_neff`]'s), copied out; said on stderr unless `quiet`.
pub fn read_as(path: &Path, neff: Option<Embedded>, quiet: bool) -> Result<Resolved, Error> {
    let Some(neff) = neff else {
        return Ok(Resolved {
            path: path.to_path_buf(),
            name: name(path),
            carried: None,
            _spool: None,
        });
    };
    let spool = carrier::spool(path, &neff)?;
    let shown = match neff.count {
        1 => name(path),
        _ => format!("{}[{}]", path.display(), neff.index),
    };
    if !quiet {
        eprintln!("neff: {}: reading {neff}", path.display());
    }
    Ok(Resolved {
        path: spool.path().to_path_buf(),
        name: shown,
        carried: Some(neff),
        _spool: Some(spool),
    })
}

/// [`carrier::carried`], where a file that cannot be read is no carrier:
/// the command that reads it then says why, as for any NEFF.
fn carried(path: &Path) -> Result<Option<Vec<Embedded>>, Error> {
    match carrier::carried(path) {
        Err(e) if e.kind() == ErrorKind::Read => Ok(None),
        found => found,
    }
}

fn resolve_with(
    path: &Path,
    index: Option<usize>,
    quiet: bool,
    index_needs_carrier: bool,
) -> Result<Resolved, Error> {
    if is_stdin(path) || path.is_dir() {
        return read_as(path, None, quiet);
    }
    let Some(neffs) = carried(path)? else {
        return match index.filter(|_| index_needs_carrier) {
            Some(i) => Err(Error::new(
                ErrorKind::Carrier,
                format!(
                    "--index {i}: the file is no HLO module or TorchScript zip that carries NEFFs"
                ),
            )
            .at_path(path)),
            None => read_as(path, None, quiet),
        };
    };
    let neff = carrier::pick(path, neffs, index)?;
    read_as(path, Some(neff), quiet)
}

/// The most a NEFF read from a pipe may declare (header and payload): 64 GiB.
pub const STDIN_MAX: u64 = 64 << 30;

/// Stdin spooled for the commands that read their input by path: an unnamed
/// temp file (nothing is left behind, even after SIGKILL) named through
/// `/proc/self/fd` on Linux; a named one removed when dropped elsewhere.
#[derive(Debug)]
pub struct Spooled {
    #[cfg(target_os = "linux")]
    file: File,
    #[cfg(not(target_os = "linux"))]
    file: tempfile::NamedTempFile,
}

impl Spooled {
    /// A path that opens the spool.
    pub fn path(&self) -> PathBuf {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.file.path().to_path_buf()
        }
    }
}

/// Stdin's NEFF copied into a temp file ([`Spooled`]), for commands that
/// read their input by path; read as [`spool_neff`] reads it.
pub fn spool_stdin() -> io::Result<Spooled> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "stdin is a terminal: redirect a NEFF into it (`neff unpack - -o DIR < FILE`)",
        ));
    }
    #[cfg(target_os = "linux")]
    {
        let mut file = tempfile::tempfile()?;
        spool_neff(&mut stdin.lock(), &mut file)?;
        Ok(Spooled { file })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut file = tempfile::NamedTempFile::new()?;
        spool_neff(&mut stdin.lock(), file.as_file_mut())?;
        Ok(Spooled { file })
    }
}

/// Copies one NEFF from the stream `from` into `to`: its 1024-byte header,
/// then the `data_size` bytes the header declares and nothing after them
/// (the runtime reads no further; a stream that goes on is not drained). A
/// header declaring more than [`STDIN_MAX`] is refused; a stream that ends
/// early is copied as it is, for the loader to say what is missing.
pub fn spool_neff(from: &mut dyn Read, to: &mut File) -> io::Result<u64> {
    let header_len = neff::schema::HEADER_LEN as u64;
    let mut header = Vec::with_capacity(header_len as usize);
    from.take(header_len).read_to_end(&mut header)?;
    to.write_all(&header)?;
    let mut copied = header.len() as u64;
    if copied == header_len {
        let data_size = u64::from_le_bytes(header[16..24].try_into().unwrap_or_default());
        if data_size > STDIN_MAX - header_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "stdin: the header's data_size {data_size} is over the {} GiB read from a pipe; name the file instead",
                    STDIN_MAX >> 30
                ),
            ));
        }
        copied += io::copy(&mut from.take(data_size), to)?;
    }
    to.seek(SeekFrom::Start(0))?;
    Ok(copied)
}

/// Stdin as a seekable file: itself when it is one, else spooled.
fn stdin_file() -> io::Result<File> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "stdin is a terminal: redirect a NEFF into it (`neff verify - < FILE`)",
        ));
    }
    let mut file = File::from(stdin.as_fd().try_clone_to_owned()?);
    if file.stream_position().is_ok() {
        return Ok(file);
    }
    // A file in the temp folder with no name (O_TMPFILE where there is one).
    let mut spool = tempfile::tempfile()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot spool stdin to a temp file: {e}")))?;
    spool_neff(&mut file, &mut spool)?;
    Ok(spool)
}
