//! The folder an output is written in, held open by descriptor.
//!
//! The temp file is created, swapped or renamed onto its target, removed and
//! the folder fsynced through one descriptor of the folder, opened once
//! (`openat`, `renameat2`, `unlinkat`, `fstatat`). A path is never looked up
//! again, so a folder renamed, or a symlink swapped in on the way to it,
//! while the output is written cannot send the temp file or the rename
//! anywhere else. Where there is no `*at` call (not unix) the same methods
//! join the folder's path.
//!
//! Replacing an existing target: on Linux the target is swapped with the
//! temp file (`renameat2(RENAME_EXCHANGE)`) and the old file, now under the
//! temp name, removed. Readers see what `rename` shows them: the old file,
//! then the new one, never a missing or partial target. The swap exists for
//! ext4: a `rename` over an existing file makes it (`auto_da_alloc`) write the
//! new file's data to the device inside the call, about 0.2–1.5 s for
//! 512 MiB, which a swap does not. Elsewhere, and where the filesystem cannot
//! swap, it is a plain `rename`.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A folder, open.
#[derive(Debug)]
pub(crate) struct Folder {
    /// The folder's descriptor (unix).
    #[cfg(unix)]
    fd: File,
    /// The path it was opened by: for messages (and the calls elsewhere).
    path: PathBuf,
}

impl Folder {
    /// Opens the folder at `path`.
    pub(crate) fn open(path: &Path) -> io::Result<Folder> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let open = |extra: libc::c_int| {
                File::options()
                    .read(true)
                    .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC | extra)
                    .open(path)
            };
            let fd = match open(0) {
                // A folder one may write in but not list (mode -wx): a
                // descriptor for the `*at` calls only, which cannot be
                // fsynced (as before, when the folder was opened to sync it).
                #[cfg(target_os = "linux")]
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => open(libc::O_PATH)?,
                opened => opened?,
            };
            Ok(Folder {
                fd,
                path: path.to_path_buf(),
            })
        }
        #[cfg(not(unix))]
        Ok(Folder {
            path: path.to_path_buf(),
        })
    }

    /// The path the folder was opened by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the file `name` for reading and writing; fails if it exists.
    pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
        #[cfg(unix)]
        {
            use std::os::fd::FromRawFd;
            let name = c_name(name)?;
            let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
            // SAFETY: `name` is NUL-terminated and outlives the call; the
            // descriptor returned is new and owned by the `File` made of it.
            let fd = cvt(unsafe { libc::openat(self.raw(), name.as_ptr(), flags, 0o666) })?;
            Ok(unsafe { File::from_raw_fd(fd) })
        }
        #[cfg(not(unix))]
        File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path.join(name))
    }

    /// An unnamed file in the folder (`O_TMPFILE`), when the OS and the file
    /// system make one. With `probe`, that one can be linked in later is
    /// proven first: a throwaway unnamed file is linked as `probe` and
    /// removed (a file once linked cannot be linked again after its unlink).
    /// `None` otherwise (the caller makes a named temp file).
    pub(crate) fn create_unnamed(&self, probe: Option<&OsStr>) -> Option<File> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            let open = || {
                let flags = libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC;
                // SAFETY: "." is NUL-terminated; the descriptor returned is
                // new and owned by the `File` made of it.
                let fd = unsafe { libc::openat(self.raw(), c".".as_ptr(), flags, 0o666) };
                (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
            };
            if let Some(probe) = probe {
                let throwaway = open()?;
                self.link_unnamed(&throwaway, probe).ok()?;
                self.remove(probe).ok()?;
            }
            open()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = probe;
            None
        }
    }

    /// Gives the unnamed `file` the name `name` in the folder: `linkat` with
    /// `AT_EMPTY_PATH` (which needs `CAP_DAC_READ_SEARCH`), else through
    /// `/proc/self/fd`.
    #[cfg(target_os = "linux")]
    pub(crate) fn link_unnamed(&self, file: &File, name: &OsStr) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let name = c_name(name)?;
        let fd = file.as_raw_fd();
        // SAFETY: every name is NUL-terminated and outlives the call.
        let empty = unsafe {
            libc::linkat(
                fd,
                c"".as_ptr(),
                self.raw(),
                name.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        if empty == 0 {
            return Ok(());
        }
        let proc = std::ffi::CString::new(format!("/proc/self/fd/{fd}"))?;
        // SAFETY: as above.
        cvt(unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc.as_ptr(),
                self.raw(),
                name.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        })
        .map(drop)
    }

    /// Never called: no file is unnamed off Linux.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn link_unnamed(&self, _file: &File, _name: &OsStr) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Opens `name` for reading without following a symlink and without
    /// blocking (a FIFO planted there opens at once).
    #[cfg(unix)]
    pub(crate) fn open_nofollow(&self, name: &OsStr) -> io::Result<File> {
        use std::os::fd::FromRawFd;
        let name = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: as in `create_new`.
        let fd = cvt(unsafe { libc::openat(self.raw(), name.as_ptr(), flags) })?;
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Removes the file (not folder) `name`.
    pub(crate) fn remove(&self, name: &OsStr) -> io::Result<()> {
        #[cfg(unix)]
        {
            let name = c_name(name)?;
            // SAFETY: `name` is NUL-terminated and outlives the call.
            cvt(unsafe { libc::unlinkat(self.raw(), name.as_ptr(), 0) }).map(drop)
        }
        #[cfg(not(unix))]
        std::fs::remove_file(self.path.join(name))
    }

    /// The type bits (`S_IFMT`) of `name`, not following a symlink; `None`
    /// when it does not exist or cannot be looked at.
    #[cfg(target_os = "linux")]
    fn file_type(&self, name: &OsStr) -> Option<libc::mode_t> {
        let name = c_name(name).ok()?;
        // SAFETY: `stat` is plain data, filled by the call; `name` is
        // NUL-terminated and outlives it.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        let flags = libc::AT_SYMLINK_NOFOLLOW;
        cvt(unsafe { libc::fstatat(self.raw(), name.as_ptr(), &mut stat, flags) }).ok()?;
        Some(stat.st_mode & libc::S_IFMT)
    }

    /// Whether `name` is a folder (not following a symlink); `None` when it
    /// does not exist or cannot be looked at.
    #[cfg(target_os = "linux")]
    fn is_dir(&self, name: &OsStr) -> Option<bool> {
        self.file_type(name).map(|t| t == libc::S_IFDIR)
    }

    /// `name` opened for reading when it is a regular file (never a device,
    /// whose opening may act on it); `None` otherwise.
    #[cfg(target_os = "linux")]
    pub(crate) fn open_regular(&self, name: &OsStr) -> Option<File> {
        match self.file_type(name)? {
            libc::S_IFREG => self.open_nofollow(name).ok(),
            _ => None,
        }
    }

    /// Moves `temp` onto `target`, replacing any file there (the swap, then
    /// the old file removed, on Linux; else `rename`). A folder at `target`
    /// stays, and the move fails.
    pub(crate) fn replace(&self, temp: &OsStr, target: &OsStr) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if self.is_dir(target) == Some(false) && self.exchange(temp, target).is_ok() {
            return self.remove_swapped_out(temp, target);
        }
        self.rename(temp, target)
    }

    /// Removes the old target, now at `temp`. A folder found there (put at
    /// the target between the check and the swap) is swapped back and the
    /// move fails as `rename` would.
    #[cfg(target_os = "linux")]
    fn remove_swapped_out(&self, temp: &OsStr, target: &OsStr) -> io::Result<()> {
        match self.remove(temp) {
            Ok(()) => Ok(()),
            Err(e) if self.is_dir(temp) == Some(true) => {
                self.exchange(temp, target)?;
                Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{} is a folder: {e}", self.path.join(target).display()),
                ))
            }
            // The new file is in place; the old one stays under the temp
            // name, for the next run's sweep of stale temp files.
            Err(_) => Ok(()),
        }
    }

    /// `rename(from, to)` inside the folder.
    fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        #[cfg(unix)]
        {
            let (from, to) = (c_name(from)?, c_name(to)?);
            let fd = self.raw();
            // SAFETY: both names are NUL-terminated and outlive the call.
            cvt(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) }).map(drop)
        }
        #[cfg(not(unix))]
        std::fs::rename(self.path.join(from), self.path.join(to))
    }

    /// `renameat2(a, b, RENAME_EXCHANGE)` inside the folder.
    #[cfg(target_os = "linux")]
    fn exchange(&self, a: &OsStr, b: &OsStr) -> io::Result<()> {
        let (a, b) = (c_name(a)?, c_name(b)?);
        let fd = self.raw();
        // SAFETY: both names are NUL-terminated and live across the call,
        // which only reads them; the raw syscall needs no glibc support for
        // renameat2.
        let result = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                fd,
                a.as_ptr(),
                fd,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        match result {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Flushes the folder's entries to the device, where the platform can
    /// sync a folder.
    pub(crate) fn sync(&self) -> io::Result<()> {
        #[cfg(unix)]
        return self.fd.sync_all();
        #[cfg(not(unix))]
        Ok(())
    }

    #[cfg(unix)]
    fn raw(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }
}

/// `name` as a C string: one name in the folder, no `/`, no NUL.
#[cfg(unix)]
fn c_name(name: &OsStr) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a name in a folder"),
        ));
    }
    std::ffi::CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} holds a NUL byte"),
        )
    })
}

/// A libc return value: the error of a negative one.
#[cfg(unix)]
fn cvt(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    /// A folder holding the temp file `.t.tmp` with "new", and the target
    /// `t` (not made here).
    fn setup() -> (tempfile::TempDir, Folder, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (temp, target) = (dir.path().join(".t.tmp"), dir.path().join("t"));
        std::fs::write(&temp, "new").unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        (dir, folder, temp, target)
    }

    fn name(p: &Path) -> OsString {
        p.file_name().unwrap().to_os_string()
    }

    /// Replaces the target and checks the new file is there and the temp gone.
    fn replaced(folder: &Folder, temp: &Path, target: &Path) {
        folder.replace(&name(temp), &name(target)).unwrap();
        assert_eq!(read(target), "new");
        assert!(!temp.exists());
    }

    #[test]
    fn replaces_a_file_or_creates_a_missing_one_and_leaves_no_temp() {
        let (_dir, folder, temp, target) = setup();
        std::fs::write(&target, "old").unwrap();
        replaced(&folder, &temp, &target);
        let (_dir, folder, temp, target) = setup();
        replaced(&folder, &temp, &target);
    }

    #[cfg(unix)]
    #[test]
    fn replaces_a_symlink_not_what_it_points_to() {
        let (dir, folder, temp, target) = setup();
        let other = dir.path().join("other");
        std::fs::write(&other, "other").unwrap();
        std::os::unix::fs::symlink(&other, &target).unwrap();
        replaced(&folder, &temp, &target);
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(read(&other), "other");
    }

    #[test]
    fn a_folder_target_fails_and_stays() {
        let (_dir, folder, temp, target) = setup();
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("kept"), "kept").unwrap();
        assert!(folder.replace(&name(&temp), &name(&target)).is_err());
        assert_eq!(read(&target.join("kept")), "kept");
        assert_eq!(read(&temp), "new");
    }

    /// The folder moved away, and another put at its path, after it was
    /// opened: the rename still happens in the folder that was opened.
    #[cfg(unix)]
    #[test]
    fn a_folder_moved_after_opening_keeps_its_files() {
        let (dir, folder, temp, _target) = setup();
        let moved = dir.path().with_extension("moved");
        std::fs::rename(dir.path(), &moved).unwrap();
        std::fs::create_dir(dir.path()).unwrap();
        folder.replace(&name(&temp), OsStr::new("t")).unwrap();
        assert_eq!(read(&moved.join("t")), "new");
        assert!(!dir.path().join("t").exists());
        folder.remove(OsStr::new("t")).unwrap();
        assert!(!moved.join("t").exists());
        std::fs::remove_dir_all(&moved).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn names_with_a_slash_or_nul_are_refused() {
        let (_dir, folder, _temp, _target) = setup();
        for bad in ["a/b", "", "../t"] {
            let e = folder.create_new(OsStr::new(bad)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        use std::os::unix::ffi::OsStrExt;
        let nul = OsStr::from_bytes(b"a\0b");
        assert!(folder.remove(nul).unwrap_err().to_string().contains("NUL"));
    }

    /// The swap really happens here (the old file's inode leaves the
    /// target), where the filesystem supports it.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_old_file_is_swapped_out() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, folder, temp, target) = setup();
        std::fs::write(&target, "old").unwrap();
        let new_inode = std::fs::metadata(&temp).unwrap().ino();
        if folder.exchange(&name(&temp), &name(&target)).is_err() {
            eprintln!("this filesystem cannot swap; replace falls back to rename");
            return;
        }
        assert_eq!(std::fs::metadata(&target).unwrap().ino(), new_inode);
        assert_eq!(read(&temp), "old");
    }
}
