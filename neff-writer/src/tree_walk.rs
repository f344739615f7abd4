//! A folder tree walked depth-first in the byte order of the full member
//! paths (`walkdir`, each folder's children sorted as it is entered, a
//! subfolder keyed as its name plus `/`: since every path below a folder
//! starts with that key, the walk gives the same order as sorting every full
//! path), so packing a tree never holds a table of all its files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use walkdir::{DirEntry, WalkDir};

use crate::error::{Error, ErrorKind};
use crate::header_options::RECORDED_HEADER;
use crate::member::MemberName;

/// The name prefix of `neff unpack`'s temp folders.
const UNPACK_TEMP: &str = ".neff-unpack.";

/// What the walk yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TreeItem {
    /// A folder, named with its trailing `/`.
    Dir(String),
    /// A regular file and its length when listed.
    File(String, u64),
}

impl TreeItem {
    /// Its member path (a folder's with its trailing `/`).
    pub(crate) fn name(&self) -> &str {
        match self {
            TreeItem::Dir(name) | TreeItem::File(name, _) => name,
        }
    }
}

/// The walk of a tree; see the module docs. Symlinks and special files are
/// errors. After an error the walk ends.
#[derive(Debug)]
pub(crate) struct TreeWalk {
    root: PathBuf,
    entries: walkdir::IntoIter,
    /// Whether a leftover `neff unpack` temp folder is an error (packing).
    refuse_unpack_temp: bool,
    failed: bool,
}

impl TreeWalk {
    /// A walk of the tree below `root` to pack it (the root itself is not
    /// yielded): a temp folder an unpack left behind is an error.
    pub(crate) fn new(root: &Path) -> TreeWalk {
        // A child's key: its name, plus `/` for a folder.
        fn key(entry: &DirEntry) -> OsString {
            let mut key = entry.file_name().to_os_string();
            if entry.file_type().is_dir() {
                key.push("/");
            }
            key
        }
        TreeWalk {
            root: root.to_path_buf(),
            entries: WalkDir::new(root)
                .min_depth(1)
                .sort_by(|a, b| key(a).cmp(&key(b)))
                .into_iter(),
            refuse_unpack_temp: true,
            failed: false,
        }
    }

    /// A walk of a tree `neff unpack` wrote, every folder a member's.
    pub(crate) fn unpacked(root: &Path) -> TreeWalk {
        TreeWalk {
            refuse_unpack_temp: false,
            ..TreeWalk::new(root)
        }
    }

    /// The total bytes of the files below `root`.
    pub(crate) fn file_bytes(root: &Path) -> Result<u64, Error> {
        let mut bytes = 0;
        for item in TreeWalk::new(root) {
            if let TreeItem::File(_, len) = item? {
                bytes += len;
            }
        }
        Ok(bytes)
    }

    /// The item `entry` is.
    fn item(&self, entry: walkdir::Result<DirEntry>) -> Result<TreeItem, Error> {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(&self.root).to_path_buf();
            Error::io("cannot read", &path, e.into())
        })?;
        let path = entry.path();
        let bad =
            |why: &str| Error::new(ErrorKind::BadOption, format!("{}: {why}", path.display()));
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let parts: Option<Vec<&str>> = relative.iter().map(|part| part.to_str()).collect();
        let Some(name) = parts.map(|parts| parts.join("/")) else {
            return Err(bad("file name is not UTF-8"));
        };
        MemberName::new(&name)?;
        let file_type = entry.file_type();
        let unpack_temp = entry.file_name().to_string_lossy().starts_with(UNPACK_TEMP);
        if self.refuse_unpack_temp && file_type.is_dir() && unpack_temp {
            return Err(bad(
                "a temp folder of an unpack that did not finish (killed?): not packed; remove it (the next `neff unpack` into this folder does)",
            ));
        }
        if file_type.is_dir() {
            Ok(TreeItem::Dir(name + "/"))
        } else if file_type.is_file() {
            let len = entry
                .metadata()
                .map_err(|e| Error::io("cannot read", path, e.into()))?;
            Ok(TreeItem::File(name, len.len()))
        } else if file_type.is_symlink() {
            Err(bad(
                "symlinks are not packed (copy the file it points to instead)",
            ))
        } else {
            Err(bad("only regular files and folders can be packed"))
        }
    }
}

impl Iterator for TreeWalk {
    type Item = Result<TreeItem, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut entry = self.entries.next()?;
        // The header `neff unpack` recorded beside the members is never one.
        if let Ok(e) = &entry {
            if e.depth() == 1 && e.file_name() == RECORDED_HEADER && e.file_type().is_file() {
                entry = self.entries.next()?;
            }
        }
        let item = self.item(entry);
        self.failed = item.is_err();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_gives_full_paths_in_byte_order_one_folder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a-b", "a/x", "a/y/z", "a.bin", "b", "a/-"] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, name).unwrap();
        }
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let items: Vec<TreeItem> = TreeWalk::new(dir.path()).map(Result::unwrap).collect();
        let names: Vec<&str> = items.iter().map(TreeItem::name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(
            names,
            ["a-b", "a.bin", "a/", "a/-", "a/x", "a/y/", "a/y/z", "b", "empty/"]
        );
        assert!(items.contains(&TreeItem::File("a/y/z".into(), 5)));
        assert_eq!(TreeWalk::file_bytes(dir.path()).unwrap(), 20);
        std::fs::write(dir.path().join("b"), "bb").unwrap();
        assert_eq!(TreeWalk::file_bytes(dir.path()).unwrap(), 21);
    }

    #[test]
    fn an_unpack_temp_folder_stops_a_pack_but_not_a_lift() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join(".neff-unpack.1.x");
        std::fs::create_dir(&temp).unwrap();
        std::fs::write(temp.join("m"), "m").unwrap();
        let e = TreeWalk::new(dir.path()).find_map(Result::err).unwrap();
        assert!(e.to_string().contains("did not finish"), "{e}");
        let names: Vec<String> = TreeWalk::unpacked(dir.path())
            .map(|item| item.unwrap().name().to_string())
            .collect();
        assert_eq!(names, [".neff-unpack.1.x/", ".neff-unpack.1.x/m"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_by_both_walks() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        for mut walk in [TreeWalk::new(dir.path()), TreeWalk::unpacked(dir.path())] {
            let e = walk.next().unwrap().unwrap_err();
            assert!(e.to_string().contains("symlinks are not packed"), "{e}");
        }
    }
}
