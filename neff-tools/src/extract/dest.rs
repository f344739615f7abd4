//! Writing into the destination by path (systems without `openat`; on Unix
//! the `dirfd` module holds every folder by descriptor): folders are created, never passed through
//! symlinks; files are written as new files in the unpack's temp dir, then
//! renamed over their targets. Nothing that exists is ever opened for
//! writing, so symlinks, hardlinks, FIFOs and devices planted in the
//! destination are never written through (a hardlink's other names keep
//! their content).

#[cfg(not(unix))]
use std::fs::{self, File, FileType};
use std::io;
use std::path::Path;

#[cfg(not(unix))]
use super::refuse;
use neff_loader::{Error, ErrorKind};

/// Checks that `path` can become a folder (`dir`) or a file: absent, or
/// already a folder (resp. a regular file, which a rename replaces). Returns
/// whether it exists.
#[cfg(not(unix))]
pub(super) fn check_in_the_way(path: &Path, dir: bool) -> Result<bool, Error> {
    let kind = match fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(with_path(e, "cannot inspect", path)),
    };
    if (dir && kind.is_dir()) || (!dir && kind.is_file()) {
        return Ok(true);
    }
    let wanted = if dir { "folder" } else { "file" };
    Err(refuse(if kind.is_symlink() {
        format!(
            "{} is a symlink; refusing to write through it",
            path.display()
        )
    } else {
        format!(
            "{} is a {} where a {wanted} goes (it is never opened or replaced)",
            path.display(),
            type_name(kind)
        )
    }))
}

/// Checks (and when `create`, creates) `dir` and its parents below `dest`,
/// refusing symlinks and non-folders on the way. Without `create`, stops at
/// the first component that does not exist.
#[cfg(not(unix))]
pub(super) fn folders(dest: &Path, dir: &Path, create: bool) -> Result<(), Error> {
    let rel = dir
        .strip_prefix(dest)
        .map_err(|_| refuse(format!("{} is outside {}", dir.display(), dest.display())))?;
    let mut path = dest.to_path_buf();
    for component in rel.components() {
        path.push(component);
        if !create {
            if !check_in_the_way(&path, true)? {
                return Ok(());
            }
            continue;
        }
        match fs::create_dir(&path) {
            Ok(()) => {}
            // mkdir never follows a symlink: whatever exists must be a real folder.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                check_in_the_way(&path, true)?;
            }
            Err(e) => return Err(with_path(e, "cannot create", &path)),
        }
    }
    Ok(())
}

/// Creates `path` as a new file (never opening what exists; a file there,
/// written by an earlier entry of the same path, is replaced).
#[cfg(not(unix))]
pub(super) fn create_new(path: &Path) -> Result<File, Error> {
    let create = || File::options().write(true).create_new(true).open(path);
    match create() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            check_in_the_way(path, false)?;
            fs::remove_file(path).map_err(|e| with_path(e, "cannot replace", path))?;
            create()
        }
        created => created,
    }
    .map_err(|e| with_path(e, "cannot create", path))
}

pub(super) fn with_path(e: io::Error, what: &str, path: &Path) -> Error {
    Error::new(ErrorKind::Write, format!("{what} {}: {e}", path.display())).with_source(e)
}

#[cfg(not(unix))]
fn type_name(kind: FileType) -> &'static str {
    match kind {
        k if k.is_dir() => "folder",
        k if k.is_file() => "file",
        _ => "special file",
    }
}
