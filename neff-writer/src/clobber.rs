//! Refusing an output that would destroy an input: a path that is one of
//! the input files, or lies inside a folder being packed. Files are compared
//! by device and inode (by canonical path off Unix), after following
//! symlinks, so no symlink, hard link, `..` or bind mount dodges the check.

use std::io;
use std::path::Path;

use crate::atomic::parent_dir;

#[cfg(unix)]
type FileId = (u64, u64);
#[cfg(not(unix))]
type FileId = std::path::PathBuf;

#[cfg(unix)]
fn file_id(path: &Path) -> io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(path: &Path) -> io::Result<FileId> {
    std::fs::canonicalize(path)
}

/// Where an output will go, to check inputs against.
#[derive(Debug)]
pub struct OutputGuard<'a> {
    output: &'a Path,
    /// The output file, when it exists.
    file: Option<FileId>,
    /// The folder the output goes in and every folder above it.
    folders: Vec<FileId>,
    /// The output exists as a symlink or as a file with other hard links.
    linked: bool,
}

/// True when `output` exists as a symlink, or as a file with more than one
/// hard link (off Unix: whenever it exists).
fn is_linked(output: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(output) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.file_type().is_symlink() || meta.nlink() > 1
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        true
    }
}

impl<'a> OutputGuard<'a> {
    /// Looks up `output` and the folders it is in.
    pub fn new(output: &'a Path) -> OutputGuard<'a> {
        let folders = std::fs::canonicalize(parent_dir(output))
            .map(|dir| dir.ancestors().filter_map(|d| file_id(d).ok()).collect())
            .unwrap_or_default();
        OutputGuard {
            output,
            file: file_id(output).ok(),
            folders,
            linked: is_linked(output),
        }
    }

    /// True when the output could be one of the files below a packed folder
    /// without lying inside it: it exists and is a symlink, or a file with
    /// other hard links. Only then need those files be checked one by one
    /// (the folder check of [`OutputGuard::check`] covers every other case).
    pub fn may_alias(&self) -> bool {
        self.file.is_some() && self.linked
    }

    /// Refuses when the output is the file or folder `input`, or lies inside
    /// the folder `input`. A missing input passes.
    pub fn check(&self, input: &Path) -> Result<(), String> {
        let Ok(id) = file_id(input) else {
            return Ok(());
        };
        if self.file.as_ref() == Some(&id) {
            return Err(format!(
                "refusing to write {}: it is the input {} (write the output elsewhere)",
                self.output.display(),
                input.display()
            ));
        }
        if self.folders.contains(&id) && input.is_dir() {
            return Err(format!(
                "refusing to write {}: it is inside {}, which is being packed (write the output elsewhere)",
                self.output.display(),
                input.display()
            ));
        }
        Ok(())
    }

    /// [`OutputGuard::check`] for each input; file inputs are only looked up
    /// when the output exists.
    pub fn check_all<'p>(
        &self,
        folders: impl IntoIterator<Item = &'p Path>,
        files: impl IntoIterator<Item = impl AsRef<Path>>,
    ) -> Result<(), String> {
        if self.file.is_some() {
            files.into_iter().try_for_each(|f| self.check(f.as_ref()))?;
        }
        folders.into_iter().try_for_each(|d| self.check(d))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_found_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        let input = tree.join("sub/a.bin");
        std::fs::write(&input, b"a").unwrap();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&tree, &alias).unwrap();
        let hard = dir.path().join("hard.bin");
        std::fs::hard_link(&input, &hard).unwrap();
        let dotdot = tree.join("sub/../sub/new.neff");
        for output in [
            &input,
            &tree.join("new.neff"),
            &alias.join("sub/x"),
            &hard,
            &dotdot,
        ] {
            let guard = OutputGuard::new(output);
            let err = guard.check_all([tree.as_path()], [input.as_path()]);
            assert!(err.is_err(), "{}", output.display());
        }
        let elsewhere = dir.path().join("out.neff");
        let guard = OutputGuard::new(&elsewhere);
        assert_eq!(guard.check_all([tree.as_path()], [input.as_path()]), Ok(()));
        assert!(OutputGuard::new(&tree).check(&tree).is_err());
    }

    #[test]
    fn only_an_output_with_other_links_may_alias_a_tree_file() {
        let dir = tempfile::tempdir().unwrap();
        let (single, hard, link) = (
            dir.path().join("single.neff"),
            dir.path().join("hard.neff"),
            dir.path().join("link.neff"),
        );
        assert!(!OutputGuard::new(&single).may_alias());
        std::fs::write(&single, b"old").unwrap();
        assert!(!OutputGuard::new(&single).may_alias());
        std::fs::hard_link(&single, &hard).unwrap();
        assert!(OutputGuard::new(&single).may_alias());
        assert!(OutputGuard::new(&hard).may_alias());
        std::fs::remove_file(&hard).unwrap();
        std::os::unix::fs::symlink(&single, &link).unwrap();
        assert!(OutputGuard::new(&link).may_alias());
        assert!(!OutputGuard::new(&single).may_alias());
    }
}
