//! The checks of an unpack, entry by entry as the archive streams: every
//! entry's name and kind, the caps, and which path each entry writes, settled
//! before the entry is written.

use std::collections::{HashMap, HashSet};
use std::path::Path;
#[cfg(not(unix))]
use std::path::PathBuf;

use neff_loader::walk::escape_name;
use neff_loader::EntryKind;

use super::{over_cap, refuse, ExtractLimits, ExtractSummary};
use neff_loader::Error;

/// Longest file name component most file systems accept (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// What is written at a path: the last entry of that path in the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    kind: EntryKind,
    size: u64,
}

/// Every path the unpack writes, with what the last entry of it is. Memory
/// is one map key per distinct path and one set key per distinct folder.
#[derive(Debug)]
pub(super) struct Plan {
    limits: ExtractLimits,
    entries: u64,
    /// Bytes of file data written so far (a repeated path counts each time).
    written: u64,
    /// Normalized path (normal components joined by `/`) → its entry.
    targets: HashMap<Vec<u8>, Target>,
    /// Every folder an entry's path needs.
    folders: HashSet<Vec<u8>>,
    /// File entries not kept because a later entry has the same path.
    replaced: usize,
}

impl Plan {
    pub fn new(limits: &ExtractLimits) -> Plan {
        Plan {
            limits: limits.clone(),
            entries: 0,
            written: 0,
            targets: HashMap::new(),
            folders: HashSet::new(),
            replaced: 0,
        }
    }

    /// Checks the next entry of the archive (in order) and records its path.
    /// Returns the normalized path it writes (`None`: it names the
    /// destination itself); an entry refused here is never written.
    pub fn add(
        &mut self,
        name: &[u8],
        kind: EntryKind,
        size: u64,
    ) -> Result<Option<Vec<u8>>, Error> {
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
            return Ok(None);
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
        let dir = kind == EntryKind::Directory;
        if !dir {
            self.written = self.written.saturating_add(size);
            if self.written > self.limits.max_bytes {
                return Err(over_cap(
                    format!(
                        "the archive's files hold {} bytes, more than {}",
                        self.written, self.limits.max_bytes
                    ),
                    "max-bytes",
                ));
            }
        }
        self.check_folders(&rel, dir)?;
        if let Some(old) = self.targets.insert(rel.clone(), Target { kind, size }) {
            if (old.kind == EntryKind::Directory) != dir {
                return Err(refuse(format!(
                    "entry {} names both a file and a folder",
                    escape_name(name)
                )));
            }
            self.replaced += usize::from(!dir);
        }
        Ok(Some(rel))
    }

    /// Refuses a path whose folders include a file, or a file where an
    /// earlier entry needs a folder; records the path's folders.
    fn check_folders(&mut self, rel: &[u8], dir: bool) -> Result<(), Error> {
        let needs = |entry: &[u8], file: &[u8]| {
            refuse(format!(
                "entry {} needs {} as a folder, but another entry is a file of that name",
                escape_name(entry),
                escape_name(file)
            ))
        };
        if !dir && self.folders.contains(rel) {
            return Err(refuse(format!(
                "entry {} is a file, but another entry needs it as a folder",
                escape_name(rel)
            )));
        }
        let ends = rel.iter().enumerate().filter(|(_, &b)| b == b'/');
        for (end, _) in ends {
            let folder = &rel[..end];
            if self
                .targets
                .get(folder)
                .is_some_and(|t| t.kind != EntryKind::Directory)
            {
                return Err(needs(rel, folder));
            }
            if !self.folders.contains(folder) {
                self.folders.insert(folder.to_vec());
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

    /// Folders in place: directory entries and the folders entries' paths
    /// pass through, each once.
    fn folder_count(&self) -> usize {
        let entries = self
            .targets
            .iter()
            .filter(|(rel, t)| t.kind == EntryKind::Directory && !self.folders.contains(*rel));
        self.folders.len() + entries.count()
    }

    /// What the unpack wrote once every entry is in place.
    pub fn summary(&self) -> ExtractSummary {
        let files = self
            .targets
            .values()
            .filter(|t| t.kind != EntryKind::Directory);
        ExtractSummary {
            stale_removed: Vec::new(),
            files: files.clone().count(),
            directories: self.folder_count(),
            bytes: files.map(|t| t.size).sum(),
            replaced: self.replaced,
        }
    }
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
    // The checks read the raw bytes: the escaped text shown in messages
    // starts with `\\` for a name whose first byte is a control byte.
    if matches!(raw.first(), Some(b'/' | b'\\')) {
        return Err(refuse(format!("entry {name} has an absolute name")));
    }
    if raw.split(|&b| b == b'/' || b == b'\\').any(|c| c == b"..") {
        return Err(refuse(format!("entry {name} has a .. component")));
    }
    if raw.split(|&b| b == b'/').any(neff_writer::fs::is_temp_name) {
        return Err(refuse(format!(
            "entry {name} has a name in neff's temp namespace (.neff-unpack.*, .*.neff-tmp.*): a later pack or unpack could take it for a stale temp of its own"
        )));
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
pub(super) fn component_os(c: &[u8]) -> Option<&Path> {
    use std::os::unix::ffi::OsStrExt;
    Some(Path::new(std::ffi::OsStr::from_bytes(c)))
}

#[cfg(not(unix))]
pub(super) fn component_os(c: &[u8]) -> Option<&Path> {
    match std::str::from_utf8(c) {
        Ok(s) if !s.contains(['\\', ':']) => Some(Path::new(s)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_on_their_raw_bytes() {
        // A first byte that is a control byte, DEL or not UTF-8 is shown
        // escaped (`\u{1}`, `\x7f`, `\xff`) but is no absolute name.
        for raw in [&b"\x01abc"[..], b"\x7fabc", b"\xffabc", b"a\x02/b"] {
            assert!(check_entry(raw, EntryKind::File).is_ok(), "{raw:?}");
        }
        for raw in [
            &b"/abc"[..],
            b"\\abc",
            b"a/../b",
            b"a\\..\\b",
            b"..",
            b".neff-unpack.12.x/m",
            b"sg00/.out.neff.neff-tmp.12.3",
        ] {
            assert!(check_entry(raw, EntryKind::File).is_err(), "{raw:?}");
        }
    }
}
