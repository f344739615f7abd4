//! Where `verify` and `inspect` read a NEFF from: a file, or stdin (`-`).
//!
//! The loader seeks (the file size first, then back over the payload), so a
//! stdin that is a redirected file is read in place, and a pipe is spooled to
//! an unlinked temporary file: memory stays bounded whatever the input size;
//! the disk holds one copy until the process ends.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::Path;

use neff::loader::{Error, ErrorKind, Limits, Loader, RuntimeProfile, Verdict};

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

/// [`Loader::verify`] on the input `path` (`-` = stdin); every report names it.
pub fn verify(path: &Path, profile: &RuntimeProfile, limits: &Limits) -> Result<Verdict, Error> {
    let mut verdict = Loader::new(profile)
        .limits(limits.clone())
        .verify(Some(open(path)?))?;
    for load in &mut verdict.per_arch {
        load.report.file = Some(name(path));
    }
    Ok(verdict)
}

/// Stdin copied into a named temp file (removed when dropped), for commands
/// that read their input by path.
pub fn spool_stdin() -> io::Result<tempfile::NamedTempFile> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "stdin is a terminal: redirect a NEFF into it (`neff unpack - -o DIR < FILE`)",
        ));
    }
    let mut spool = tempfile::NamedTempFile::new()?;
    io::copy(&mut stdin.lock(), spool.as_file_mut())?;
    Ok(spool)
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
    io::copy(&mut file, &mut spool)?;
    spool.seek(SeekFrom::Start(0))?;
    Ok(spool)
}
