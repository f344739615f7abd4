//! Folders held by descriptor (Linux and other Unix): every folder of the
//! destination and of the temp dir is opened with `O_DIRECTORY |
//! O_NOFOLLOW`, and every check, `mkdir`, create and rename goes through
//! `fstatat`/`mkdirat`/`openat`/`renameat` on those descriptors. A folder
//! swapped for a symlink between two steps is then refused when it is
//! opened, and one swapped after it was opened is still the folder written
//! into: nothing is ever written through a path that can be swapped.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::dest::with_path;
use super::refuse;
use neff_loader::Error;

/// What is at a name in a folder (not following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

/// A folder opened by descriptor; `path` only names it in messages.
#[derive(Debug)]
pub(super) struct DirHandle {
    fd: OwnedFd,
    path: PathBuf,
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

impl DirHandle {
    /// Opens the folder at `path` (the destination the caller named: a
    /// symlink there is followed; nothing below it ever is).
    pub(super) fn open(path: &Path) -> Result<DirHandle, Error> {
        let c = c_name(path.as_os_str()).map_err(|e| with_path(e, "cannot open", path))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        // SAFETY: open with a valid C string; the descriptor is owned below.
        let fd =
            check(unsafe { libc::open(c.as_ptr(), flags) }).map_err(|e| not_a_folder(e, path))?;
        Ok(DirHandle {
            // SAFETY: `fd` is a fresh descriptor this handle owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// The path this handle was opened at (for messages).
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// What is at `name` in this folder, if anything.
    pub(super) fn kind(&self, name: &OsStr) -> Result<Option<Kind>, Error> {
        let at = self.path.join(name);
        let c = c_name(name).map_err(|e| with_path(e, "cannot inspect", &at))?;
        // SAFETY: fstatat into a zeroed stat this function owns.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if let Err(e) = check(rc) {
            if e.kind() == io::ErrorKind::NotFound {
                return Ok(None);
            }
            return Err(with_path(e, "cannot inspect", &at));
        }
        Ok(Some(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Special,
        }))
    }

    /// Opens the folder `name` in this one (made first when `create`);
    /// `None` when it is absent and not made. A symlink or a non-folder
    /// there is refused.
    pub(super) fn child(&self, name: &OsStr, create: bool) -> Result<Option<DirHandle>, Error> {
        let at = self.path.join(name);
        let c = c_name(name).map_err(|e| with_path(e, "cannot open", &at))?;
        if create {
            // SAFETY: mkdirat with a valid C string (never follows a symlink).
            let rc = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) };
            if let Err(e) = check(rc) {
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(with_path(e, "cannot create", &at));
                }
            }
        }
        // SAFETY: openat with a valid C string; the descriptor is owned below.
        let rc = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), DIR_FLAGS) };
        match check(rc) {
            Ok(fd) => Ok(Some(DirHandle {
                // SAFETY: `fd` is a fresh descriptor this handle owns.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                path: at,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => Ok(None),
            // With O_DIRECTORY a symlink may show as ENOTDIR: say which it is.
            Err(_) if self.kind(name)? == Some(Kind::Symlink) => Err(refuse(format!(
                "{} is a symlink; refusing to write through it",
                at.display()
            ))),
            Err(e) => Err(not_a_folder(e, &at)),
        }
    }

    /// Opens the folders `components` below this one, each made first when
    /// `create`; `None` when one is absent and not made.
    pub(super) fn descend<'c>(
        &self,
        components: impl IntoIterator<Item = &'c OsStr>,
        create: bool,
    ) -> Result<Option<DirHandle>, Error> {
        let mut dir = self.dup()?;
        for name in components {
            match dir.child(name, create)? {
                Some(next) => dir = next,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    fn dup(&self) -> Result<DirHandle, Error> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| with_path(e, "cannot open", &self.path))?;
        Ok(DirHandle {
            fd,
            path: self.path.clone(),
        })
    }

    /// Creates `name` as a new file here (never opening what exists; a
    /// regular file there is removed first).
    pub(super) fn create_file(&self, name: &OsStr) -> Result<File, Error> {
        let at = self.path.join(name);
        let c = c_name(name).map_err(|e| with_path(e, "cannot create", &at))?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: openat with a valid C string; the descriptor is owned below.
        let open = || check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o666) });
        let fd = match open() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if self.kind(name)? != Some(Kind::File) {
                    return Err(refuse(format!(
                        "{} is in the way and is not a regular file",
                        at.display()
                    )));
                }
                // SAFETY: unlinkat of a regular file by name in this folder.
                check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })
                    .map_err(|e| with_path(e, "cannot replace", &at))?;
                open()
            }
            other => other,
        }
        .map_err(|e| with_path(e, "cannot create", &at))?;
        // SAFETY: `fd` is a fresh descriptor the file owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Renames `name` here to `to_name` in `to`.
    pub(super) fn rename(
        &self,
        name: &OsStr,
        to: &DirHandle,
        to_name: &OsStr,
    ) -> Result<(), Error> {
        let target = to.path.join(to_name);
        let from = c_name(name).map_err(|e| with_path(e, "cannot move into place", &target))?;
        let dest = c_name(to_name).map_err(|e| with_path(e, "cannot move into place", &target))?;
        // SAFETY: renameat with valid C strings on descriptors these handles own.
        let rc = unsafe {
            libc::renameat(
                self.fd.as_raw_fd(),
                from.as_ptr(),
                to.fd.as_raw_fd(),
                dest.as_ptr(),
            )
        };
        check(rc)
            .map(|_| ())
            .map_err(|e| with_path(e, "cannot move into place", &target))
    }
}

/// The refusal of a folder that is a symlink or not a folder at all.
fn not_a_folder(e: io::Error, path: &Path) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => refuse(format!(
            "{} is a symlink; refusing to write through it",
            path.display()
        )),
        Some(libc::ENOTDIR) => refuse(format!(
            "{} is not a folder where a folder goes",
            path.display()
        )),
        _ => with_path(e, "cannot open", path),
    }
}
