//! Member names and where member bytes come from.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};

/// Longest member name accepted (the loader refuses longer GNU long-name records).
pub const MAX_NAME_LEN: usize = 1 << 20;

/// A validated member path: relative, `/`-separated, no `.`/`..`/empty
/// components, no leading `./`, no NUL, UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberName(String);

impl MemberName {
    /// Validates `name`.
    pub fn new(name: &str) -> Result<MemberName, Error> {
        let bad = |why| {
            let message = format!("invalid member name {name:?}: {why}");
            Err(Error::new(ErrorKind::BadName, message))
        };
        if name.is_empty() {
            return bad("it is empty");
        }
        if name.starts_with('/') {
            return bad("it is absolute");
        }
        if name.starts_with("./") {
            return bad("it starts with ./ (write the name without it)");
        }
        if name.contains('\0') {
            return bad("it contains a NUL byte");
        }
        if name.len() > MAX_NAME_LEN {
            return bad("it is longer than 1 MiB");
        }
        for component in name.split('/') {
            match component {
                ".." => return bad("it has a .. component"),
                "." => return bad("it has a . component"),
                "" => return bad("it has an empty component (a // or a trailing /)"),
                _ => {}
            }
        }
        Ok(MemberName(name.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Every parent folder of this name, outermost first, each without a trailing `/`.
    pub fn parents(&self) -> impl Iterator<Item = &str> {
        parents(&self.0)
    }
}

/// Every parent folder of the member `name`, outermost first.
pub(crate) fn parents(name: &str) -> impl Iterator<Item = &str> {
    name.match_indices('/').map(move |(i, _)| &name[..i])
}

impl fmt::Display for MemberName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a member's bytes come from. Files and readers are streamed, never
/// held whole in memory.
pub enum MemberSource {
    /// Bytes in memory.
    Bytes(Vec<u8>),
    /// A file, read when the archive is written. Its length is taken when it is
    /// added; a file that changes length before it is read fails the build.
    File {
        /// The file.
        path: PathBuf,
        /// Its length when added.
        len: u64,
    },
    /// A reader that must yield exactly `len` bytes.
    Reader {
        /// The reader.
        reader: Box<dyn Read + Send>,
        /// How many bytes it yields.
        len: u64,
    },
}

impl fmt::Debug for MemberSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberSource::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            MemberSource::File { path, len } => write!(f, "File({}, {len} bytes)", path.display()),
            MemberSource::Reader { len, .. } => write!(f, "Reader({len} bytes)"),
        }
    }
}

impl MemberSource {
    /// A file source, with its current length.
    pub fn file(path: impl Into<PathBuf>) -> io::Result<MemberSource> {
        let path = path.into();
        let meta = std::fs::metadata(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        Ok(MemberSource::File {
            path,
            len: meta.len(),
        })
    }

    /// The number of bytes this member holds.
    pub fn len(&self) -> u64 {
        match self {
            MemberSource::Bytes(b) => b.len() as u64,
            MemberSource::File { len, .. } | MemberSource::Reader { len, .. } => *len,
        }
    }

    /// True when the member is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens the bytes for reading.
    pub fn open(self) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            MemberSource::Bytes(b) => Box::new(io::Cursor::new(b)),
            MemberSource::File { path, .. } => Box::new(
                File::open(&path)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?,
            ),
            MemberSource::Reader { reader, .. } => reader,
        })
    }

    /// The file the bytes come from, for a file source.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            MemberSource::File { path, .. } => Some(path),
            _ => None,
        }
    }

    /// A description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            MemberSource::File { path, .. } => path.display().to_string(),
            MemberSource::Bytes(_) => "in-memory bytes".to_string(),
            MemberSource::Reader { .. } => "a reader".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(MemberName::new("sg00/def.json").is_ok());
        for (bad, why) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("./neff.json", "./"),
            ("a/../b", ".."),
            ("..", ".."),
            ("a/./b", ". component"),
            ("a//b", "empty component"),
            ("dir/", "empty component"),
            ("a\0b", "NUL"),
        ] {
            let err = MemberName::new(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let name = MemberName::new("a/b/c.bin").unwrap();
        assert_eq!(name.parents().collect::<Vec<_>>(), vec!["a", "a/b"]);
    }
}
