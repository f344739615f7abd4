//! Writing into the destination: folders are created, never passed through
//! symlinks; a file is written as a new temp file beside its target, then
//! renamed over it. Nothing that exists is ever opened for writing, so
//! symlinks, hardlinks, FIFOs and devices planted in the destination are
//! never written through (a hardlink's other names keep their content).

use std::fs::{self, FileType};
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use crate::tar_reader::TarReader;

use super::ExtractError;

/// Checks that `path` can become a folder (`dir`) or a file: absent, or
/// already a folder (resp. a regular file, which a rename replaces). Returns
/// whether it exists.
pub(super) fn check_in_the_way(path: &Path, dir: bool) -> Result<bool, ExtractError> {
    let kind = match fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(with_path(e, "cannot inspect", path).into()),
    };
    if (dir && kind.is_dir()) || (!dir && kind.is_file()) {
        return Ok(true);
    }
    let wanted = if dir { "folder" } else { "file" };
    Err(ExtractError::Unsafe(if kind.is_symlink() {
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
pub(super) fn folders(dest: &Path, dir: &Path, create: bool) -> Result<(), ExtractError> {
    let rel = dir.strip_prefix(dest).map_err(|_| {
        ExtractError::Unsafe(format!("{} is outside {}", dir.display(), dest.display()))
    })?;
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
            Err(e) => return Err(with_path(e, "cannot create", &path).into()),
        }
    }
    Ok(())
}

/// Writes the current entry's data to `target` (its folder already made):
/// into a new temp file beside it, then renamed over it. Returns the bytes.
pub(super) fn write_file<R: Read>(
    tar: &mut TarReader<R>,
    target: &Path,
    shown: &str,
) -> Result<u64, ExtractError> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".neff-unpack.").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // What File::create gives: 0666 less the umask.
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let tmp = builder
        .tempfile_in(dir)
        .map_err(|e| with_path(e, "cannot create a temp file in", dir))?;
    let mut out = BufWriter::new(tmp.as_file());
    let bytes = tar
        .copy_data(&mut out)
        .map_err(|e| io::Error::other(format!("member {shown}: {e}")))?;
    out.flush()
        .map_err(|e| with_path(e, "cannot write", tmp.path()))?;
    drop(out);
    check_in_the_way(target, false)?;
    tmp.persist(target)
        .map_err(|e| with_path(e.error, "cannot write", target))?;
    Ok(bytes)
}

/// `e` with what was being done to which path.
pub(super) fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

#[cfg(unix)]
fn type_name(kind: FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match kind {
        k if k.is_dir() => "folder",
        k if k.is_fifo() => "FIFO",
        k if k.is_socket() => "socket",
        k if k.is_block_device() || k.is_char_device() => "device",
        k if k.is_file() => "file",
        _ => "special file",
    }
}

#[cfg(not(unix))]
fn type_name(kind: FileType) -> &'static str {
    match kind {
        k if k.is_dir() => "folder",
        k if k.is_file() => "file",
        _ => "special file",
    }
}
