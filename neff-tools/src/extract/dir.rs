//! Folders held open (by descriptor on Unix, by handle elsewhere, through
//! `cap-std`): every folder of the destination and of the temp dir is opened
//! without following a symlink, and every check, `mkdir`, create and rename
//! goes through those handles. A folder swapped for a symlink between two
//! steps is then refused when it is opened, and one swapped after it was
//! opened is still the folder written into: nothing is ever written through
//! a path that can be swapped. Nothing that exists is opened for writing, so
//! symlinks, hardlinks, FIFOs and devices planted in the destination are
//! never written through (a hardlink's other names keep their content).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, OpenOptions};
use neff_loader::{Error, ErrorKind};

use super::refuse;

/// What is at a name in a folder (not following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

/// A folder held open; `path` only names it in messages.
#[derive(Debug)]
pub(super) struct DirHandle {
    dir: Dir,
    path: PathBuf,
}

impl DirHandle {
    /// Opens the folder at `path` (the destination the caller named: a
    /// symlink there is followed; nothing below it ever is).
    pub(super) fn open(path: &Path) -> Result<DirHandle, Error> {
        let dir = Dir::open_ambient_dir(path, cap_std::ambient_authority())
            .map_err(|e| not_a_folder(e, path))?;
        Ok(DirHandle {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The path this handle was opened at (for messages).
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// What is at `name` in this folder, if anything.
    pub(super) fn kind(&self, name: &OsStr) -> Result<Option<Kind>, Error> {
        let kind = match self.dir.symlink_metadata(name) {
            Ok(meta) => meta.file_type(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(with_path(e, "cannot inspect", &self.path.join(name))),
        };
        Ok(Some(if kind.is_file() {
            Kind::File
        } else if kind.is_dir() {
            Kind::Dir
        } else if kind.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Special
        }))
    }

    /// Opens the folder `name` in this one (made first when `create`);
    /// `None` when it is absent and not made. A symlink or a non-folder
    /// there is refused.
    pub(super) fn child(&self, name: &OsStr, create: bool) -> Result<Option<DirHandle>, Error> {
        let at = self.path.join(name);
        if create {
            // mkdir never follows a symlink: what exists is checked below.
            if let Err(e) = self.dir.create_dir(name) {
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(with_path(e, "cannot create", &at));
                }
            }
        }
        match self.dir.open_dir_nofollow(name) {
            Ok(dir) => Ok(Some(DirHandle { dir, path: at })),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => Ok(None),
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
        let mut dir = DirHandle {
            dir: (self.dir.try_clone()).map_err(|e| with_path(e, "cannot open", &self.path))?,
            path: self.path.clone(),
        };
        for name in components {
            match dir.child(name, create)? {
                Some(next) => dir = next,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    /// Creates `name` as a new file here (never opening what exists; a
    /// regular file there, written by an earlier entry of the same path, is
    /// removed first).
    pub(super) fn create_file(&self, name: &OsStr) -> Result<File, Error> {
        let at = self.path.join(name);
        let create = || {
            let new = OpenOptions::new().write(true).create_new(true).clone();
            self.dir.open_with(name, &new)
        };
        match create() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if self.kind(name)? != Some(Kind::File) {
                    return Err(refuse(format!(
                        "{} is in the way and is not a regular file",
                        at.display()
                    )));
                }
                (self.dir.remove_file(name)).map_err(|e| with_path(e, "cannot replace", &at))?;
                create()
            }
            other => other,
        }
        .map(cap_std::fs::File::into_std)
        .map_err(|e| with_path(e, "cannot create", &at))
    }

    /// Renames `name` here to `to_name` in `to`.
    pub(super) fn rename(
        &self,
        name: &OsStr,
        to: &DirHandle,
        to_name: &OsStr,
    ) -> Result<(), Error> {
        (self.dir.rename(name, &to.dir, to_name))
            .map_err(|e| with_path(e, "cannot move into place", &to.path.join(to_name)))
    }
}

/// The refusal of a folder that is not a folder at all.
fn not_a_folder(e: io::Error, path: &Path) -> Error {
    match e.kind() {
        io::ErrorKind::NotADirectory => refuse(format!(
            "{} is not a folder where a folder goes",
            path.display()
        )),
        _ => with_path(e, "cannot open", path),
    }
}

/// `e`, a write error about `path`.
pub(super) fn with_path(e: io::Error, what: &str, path: &Path) -> Error {
    Error::new(ErrorKind::Write, format!("{what} {}: {e}", path.display())).with_source(e)
}
