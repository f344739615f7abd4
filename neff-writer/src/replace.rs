//! Moving a finished temp file onto its target.
//!
//! On Linux an existing target is swapped with the temp file
//! (`renameat2(RENAME_EXCHANGE)`) and the old file, now under the temp name,
//! is removed. Readers see the same thing as with `rename`: the old file,
//! then the new one, never a missing or partial target. The swap exists for
//! ext4: a `rename` over an existing file makes it (`auto_da_alloc`) write
//! the new file's data to the device inside the call, about 0.2–1.5 s for
//! 512 MiB, which a swap does not. Elsewhere, and where the filesystem cannot
//! swap, it is a plain `rename`.

use std::io;
use std::path::Path;

/// Moves `temp` to `target`, replacing any file there.
pub(crate) fn replace(temp: &Path, target: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if swappable(target) && exchange(temp, target).is_ok() {
        return remove_swapped_out(temp, target);
    }
    std::fs::rename(temp, target)
}

/// Whether `target` is a file or a symlink (never swap with a folder).
#[cfg(target_os = "linux")]
fn swappable(target: &Path) -> bool {
    std::fs::symlink_metadata(target).is_ok_and(|m| !m.is_dir())
}

/// Removes the old target, now at `temp`. A folder found there (put at the
/// target between the check and the swap) is swapped back and the move fails
/// as `rename` would.
#[cfg(target_os = "linux")]
fn remove_swapped_out(temp: &Path, target: &Path) -> io::Result<()> {
    match std::fs::remove_file(temp) {
        Ok(()) => Ok(()),
        Err(e) if std::fs::symlink_metadata(temp).is_ok_and(|m| m.is_dir()) => {
            exchange(temp, target)?;
            Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a folder: {e}", target.display()),
            ))
        }
        // The new file is in place; the old one stays under the temp name,
        // for the next run's sweep of stale temp files.
        Err(_) => Ok(()),
    }
}

/// `renameat2(a, b, RENAME_EXCHANGE)`.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} holds a NUL byte", p.display()),
            )
        })
    };
    let (a, b) = (path(a)?, path(b)?);
    // SAFETY: both paths are NUL-terminated and live across the call, which
    // only reads them; the raw syscall needs no glibc support for renameat2.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    match result {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    /// A folder with the temp file `.t.tmp` holding "new", and the target `t`
    /// (not made here).
    fn folder() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (temp, target) = (dir.path().join(".t.tmp"), dir.path().join("t"));
        std::fs::write(&temp, "new").unwrap();
        (dir, temp, target)
    }

    /// Replaces the target and checks the new file is there and the temp gone.
    fn replaced(temp: &Path, target: &Path) {
        replace(temp, target).unwrap();
        assert_eq!(read(target), "new");
        assert!(!temp.exists());
    }

    #[test]
    fn replaces_a_file_or_creates_a_missing_one_and_leaves_no_temp() {
        let (_dir, temp, target) = folder();
        std::fs::write(&target, "old").unwrap();
        replaced(&temp, &target);
        let (_dir, temp, target) = folder();
        replaced(&temp, &target);
    }

    #[cfg(unix)]
    #[test]
    fn replaces_a_symlink_not_what_it_points_to() {
        let (dir, temp, target) = folder();
        let other = dir.path().join("other");
        std::fs::write(&other, "other").unwrap();
        std::os::unix::fs::symlink(&other, &target).unwrap();
        replaced(&temp, &target);
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(read(&other), "other");
    }

    #[test]
    fn a_folder_target_fails_and_stays() {
        let (_dir, temp, target) = folder();
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("kept"), "kept").unwrap();
        assert!(replace(&temp, &target).is_err());
        assert_eq!(read(&target.join("kept")), "kept");
        assert_eq!(read(&temp), "new");
    }

    /// The swap really happens here (the old file's inode leaves the target),
    /// where the filesystem supports it.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_old_file_is_swapped_out() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, temp, target) = folder();
        std::fs::write(&target, "old").unwrap();
        let new_inode = std::fs::metadata(&temp).unwrap().ino();
        if exchange(&temp, &target).is_err() {
            eprintln!("this filesystem cannot swap; replace falls back to rename");
            return;
        }
        assert_eq!(std::fs::metadata(&target).unwrap().ino(), new_inode);
        assert_eq!(read(&temp), "old");
    }
}
