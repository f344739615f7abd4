//! The pre-check of an unpack: every entry's name and kind, the caps, and
//! which entry writes each path, settled before anything is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::tar_reader::{escape_name, Entry, EntryKind};

use super::{over_cap, refuse, ExtractLimits};
use crate::Error;

/// Longest file name component most file systems accept (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// The entry that writes a path: the last one of that path in the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    index: u64,
    kind: EntryKind,
    size: u64,
}

/// Every path the unpack writes, each with the entry that writes it. Memory
/// is one map key per distinct path.
#[derive(Debug)]
pub(super) struct Plan {
    limits: ExtractLimits,
    entries: u64,
    /// Normalized path (normal components joined by `/`) → its entry.
    targets: HashMap<Vec<u8>, Target>,
    /// File entries not written because a later entry has the same path.
    pub replaced: usize,
}

impl Plan {
    pub fn new(limits: &ExtractLimits) -> Plan {
        Plan {
            limits: limits.clone(),
            entries: 0,
            targets: HashMap::new(),
            replaced: 0,
        }
    }

    /// Checks the next entry of the archive (in order) and records its path.
    pub fn add(&mut self, name: &[u8], kind: EntryKind, size: u64) -> Result<(), Error> {
        let index = self.entries;
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(over_cap(
                format!(
                    "the archive has more than {} entries",
                    self.limits.max_entries
                ),
                "max-entries",
            ));
        }
        check_entry(name, kind)?;
        let Some(rel) = normalize(name, kind)? else {
            return Ok(());
        };
        let depth = rel.split(|&b| b == b'/').count();
        if depth > self.limits.max_depth {
            return Err(over_cap(
                format!(
                    "entry {} is {depth} folders deep, more than {}",
                    escape_name(name),
                    self.limits.max_depth
                ),
                "max-depth",
            ));
        }
        let new = Target { index, kind, size };
        if let Some(old) = self.targets.insert(rel, new) {
            if (old.kind == EntryKind::Directory) != (kind == EntryKind::Directory) {
                return Err(refuse(format!(
                    "entry {} names both a file and a folder",
                    escape_name(name)
                )));
            }
            self.replaced += usize::from(kind != EntryKind::Directory);
        }
        Ok(())
    }

    /// The checks that need every entry: the bytes cap, and no path both a
    /// file and a folder holding other entries.
    pub fn finish(&self) -> Result<(), Error> {
        let bytes: u64 = self.targets.values().map(|t| t.size).sum();
        if bytes > self.limits.max_bytes {
            return Err(over_cap(
                format!(
                    "the archive's files hold {bytes} bytes, more than {}",
                    self.limits.max_bytes
                ),
                "max-bytes",
            ));
        }
        for rel in self.targets.keys() {
            let folders = rel.iter().enumerate().filter(|(_, &b)| b == b'/');
            for (end, _) in folders {
                let is_file = self
                    .targets
                    .get(&rel[..end])
                    .is_some_and(|t| t.kind != EntryKind::Directory);
                if is_file {
                    return Err(refuse(format!(
                        "entry {} needs {} as a folder, but another entry is a file of that name",
                        escape_name(rel),
                        escape_name(&rel[..end])
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every path written, with whether it is a folder.
    pub fn paths(&self) -> impl Iterator<Item = (&[u8], bool)> {
        self.targets
            .iter()
            .map(|(rel, t)| (rel.as_slice(), t.kind == EntryKind::Directory))
    }

    /// Where entry `index` is written below `dest`; `None` when it writes
    /// nothing: it names `dest` itself, a later entry has its path, or it is
    /// not the entry checked (the NEFF changed since).
    pub fn target(&self, dest: &Path, entry: &Entry, index: u64) -> Option<PathBuf> {
        let rel = normalize(&entry.name, entry.kind).ok()??;
        let checked = Target {
            index,
            kind: entry.kind,
            size: entry.size.max(0) as u64,
        };
        (self.targets.get(&rel) == Some(&checked)).then(|| join(dest, &rel))
    }
}

/// `dest` joined with a normalized path's components.
pub(super) fn join(dest: &Path, rel: &[u8]) -> PathBuf {
    let mut path = dest.to_path_buf();
    path.extend(rel.split(|&b| b == b'/').filter_map(component_os));
    path
}

/// Refuses names that could escape the destination and non-plain entries.
fn check_entry(raw: &[u8], kind: EntryKind) -> Result<(), Error> {
    let name = escape_name(raw);
    if matches!(
        kind,
        EntryKind::Symlink | EntryKind::Hardlink | EntryKind::Special
    ) {
        return Err(refuse(format!(
            "entry {name} is a {}; only files and folders are unpacked",
            kind.name()
        )));
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err(refuse(format!("entry {name} has an absolute name")));
    }
    if name.split(['/', '\\']).any(|c| c == "..") {
        return Err(refuse(format!("entry {name} has a .. component")));
    }
    Ok(())
}

/// A name's normal components joined by `/`: `None` for a directory entry
/// naming the destination itself (`./`); a file naming it is refused, and so
/// are components no file system can create.
fn normalize(name: &[u8], kind: EntryKind) -> Result<Option<Vec<u8>>, Error> {
    let mut rel = Vec::with_capacity(name.len());
    for c in name.split(|&b| b == b'/') {
        if c.is_empty() || c == b"." {
            continue;
        }
        if c == b".." || c.len() > NAME_MAX || component_os(c).is_none() {
            return Err(refuse(format!(
                "entry {} cannot be written on this platform (a component is .., longer than {NAME_MAX} bytes or not a valid file name)",
                escape_name(name)
            )));
        }
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(c);
    }
    if !rel.is_empty() {
        return Ok(Some(rel));
    }
    if kind == EntryKind::Directory {
        return Ok(None);
    }
    Err(refuse(format!(
        "entry {:?} names no file",
        escape_name(name)
    )))
}

#[cfg(unix)]
fn component_os(c: &[u8]) -> Option<&Path> {
    use std::os::unix::ffi::OsStrExt;
    Some(Path::new(std::ffi::OsStr::from_bytes(c)))
}

#[cfg(not(unix))]
fn component_os(c: &[u8]) -> Option<&Path> {
    match std::str::from_utf8(c) {
        Ok(s) if !s.contains(['\\', ':']) => Some(Path::new(s)),
        _ => None,
    }
}
