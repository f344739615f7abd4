//! A folder tree walked one folder at a time, in the byte order of the full
//! member paths, so packing a tree never holds a table of all its files.
//!
//! Each folder's children are listed and sorted when the walk enters it, a
//! subfolder keyed as its name plus `/`: since every path below a folder
//! starts with that key, walking the sorted children depth-first gives the
//! same order as sorting every full path. Memory is one listing per open
//! folder (the current folder and its parents).

use std::io;
use std::path::{Path, PathBuf};

/// The name prefix of `neff unpack`'s temp folders.
const UNPACK_TEMP: &str = ".neff-unpack.";

use crate::error::{Error, ErrorKind};
use crate::member::MemberName;

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

/// A folder's children not walked yet, the next one last: each one's member
/// path (a folder's with its trailing `/`) and length.
type Folder = Vec<(String, u64)>;

/// The depth-first walk of a tree; see the module docs. Symlinks and
/// special files are errors. After an error the walk ends.
#[derive(Debug)]
pub(crate) struct TreeWalk {
    root: PathBuf,
    stack: Vec<Folder>,
    started: bool,
    /// Whether a leftover `neff unpack` temp folder is an error (packing).
    refuse_unpack_temp: bool,
}

impl TreeWalk {
    /// A walk of the tree below `root` to pack it (the root itself is not
    /// yielded): a temp folder an unpack left behind is an error.
    pub(crate) fn new(root: &Path) -> TreeWalk {
        TreeWalk {
            root: root.to_path_buf(),
            stack: Vec::new(),
            started: false,
            refuse_unpack_temp: true,
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

    /// Lists and sorts the folder `prefix` (empty, or ending in `/`).
    fn open(&mut self, prefix: String) -> Result<(), Error> {
        let dir = self.root.join(&prefix);
        let context = |e: io::Error, p: &Path| Error::io("cannot read", p, e);
        let mut children = Vec::new();
        for item in std::fs::read_dir(&dir).map_err(|e| context(e, &dir))? {
            let item = item.map_err(|e| context(e, &dir))?;
            let path = item.path();
            let bad =
                |why: &str| Error::new(ErrorKind::BadOption, format!("{}: {why}", path.display()));
            let file_type = item.file_type().map_err(|e| context(e, &path))?;
            let Some(name) = item.file_name().to_str().map(|n| format!("{prefix}{n}")) else {
                return Err(bad("file name is not UTF-8"));
            };
            MemberName::new(&name)?;
            let unpack_temp = item.file_name().to_string_lossy().starts_with(UNPACK_TEMP);
            if self.refuse_unpack_temp && file_type.is_dir() && unpack_temp {
                return Err(bad(
                    "a temp folder of an unpack that did not finish (killed?): not packed; remove it (the next `neff unpack` into this folder does)",
                ));
            }
            let child = if file_type.is_dir() {
                (name + "/", 0)
            } else if file_type.is_file() {
                let len = item.metadata().map_err(|e| context(e, &path))?.len();
                (name, len)
            } else if file_type.is_symlink() {
                return Err(bad(
                    "symlinks are not packed (copy the file it points to instead)",
                ));
            } else {
                return Err(bad("only regular files and folders can be packed"));
            };
            children.push(child);
        }
        children.sort_unstable_by(|a, b| b.0.cmp(&a.0));
        self.stack.push(children);
        Ok(())
    }

    fn step(&mut self) -> Result<Option<TreeItem>, Error> {
        if !self.started {
            self.started = true;
            self.open(String::new())?;
        }
        while let Some(folder) = self.stack.last_mut() {
            let Some((name, len)) = folder.pop() else {
                self.stack.pop();
                continue;
            };
            if name.ends_with('/') {
                self.open(name.clone())?;
                return Ok(Some(TreeItem::Dir(name)));
            }
            return Ok(Some(TreeItem::File(name, len)));
        }
        Ok(None)
    }
}

impl Iterator for TreeWalk {
    type Item = Result<TreeItem, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.step();
        if item.is_err() {
            self.stack.clear();
        }
        item.transpose()
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
