//! One sync for a whole folder of outputs (`neff fixtures`, `neff corpus`,
//! `neff unpack`): each file is written atomically without a sync of its own
//! ([`crate::fs::write_atomic_with`] with `fsync` false), then [`sync_tree`]
//! makes them all durable at once, instead of two fsyncs per file.

use std::fs::File;
use std::io;
use std::path::Path;

/// Makes everything written under `dir` durable: on Linux one `syncfs(2)` of
/// the filesystem holding it, elsewhere an fsync of every file and folder
/// under it; then an fsync of `dir` itself. An error names the folder (or
/// the file) that could not be synced.
pub fn sync_tree(dir: &Path) -> io::Result<()> {
    let folder = File::open(dir).map_err(|e| failed(dir, e))?;
    sync_contents(dir, &folder)?;
    folder.sync_all().map_err(|e| failed(dir, e))
}

fn failed(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot sync {}: {e}", path.display()))
}

#[cfg(target_os = "linux")]
fn sync_contents(dir: &Path, folder: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open and owned by `folder` for the call.
    if unsafe { libc::syncfs(folder.as_raw_fd()) } != 0 {
        return Err(failed(dir, io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn sync_contents(dir: &Path, _folder: &File) -> io::Result<()> {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).map_err(|e| failed(&folder, e))? {
            let path = entry.map_err(|e| failed(&folder, e))?.path();
            let kind = std::fs::symlink_metadata(&path).map_err(|e| failed(&path, e))?;
            if kind.is_dir() {
                pending.push(path.clone());
            } else if !kind.is_file() {
                continue;
            }
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| failed(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncs_a_folder_of_unsynced_files_and_names_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for (i, path) in [dir.path().join("a"), sub.join("b")].iter().enumerate() {
            crate::fs::write_atomic_with(path, &[i as u8; 3], false).unwrap();
        }
        sync_tree(dir.path()).unwrap();
        assert_eq!(std::fs::read(sub.join("b")).unwrap(), [1; 3]);
        let gone = dir.path().join("gone");
        let e = sync_tree(&gone).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(
            e.to_string()
                .starts_with(&format!("cannot sync {}: ", gone.display())),
            "{e}"
        );
    }
}
