//! Atomic small-file output: a temp file beside the target, fsynced, then
//! renamed into place. A failure leaves any existing file untouched.

use std::io::{self, Write};
use std::path::Path;

use tempfile::NamedTempFile;

/// The folder `path` lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A temp file beside `path` (`.<name>.XXXX.tmp`), removed when dropped.
pub fn temp_beside(path: &Path) -> io::Result<NamedTempFile> {
    let dir = parent_dir(path);
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path", path.display()),
        )
    })?;
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create a temp file in {}: {e}", dir.display()),
            )
        })
}

/// Renames a finished (already fsynced) temp file to `path`, then makes the
/// rename durable where the platform can sync a folder.
pub fn persist(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.persist(path).map_err(|e| {
        io::Error::new(
            e.error.kind(),
            format!("cannot write {}: {}", path.display(), e.error),
        )
    })?;
    if let Ok(d) = std::fs::File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    persist(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write_atomic(&dir.path().join("missing/x.bin"), b"").is_err());
    }
}
