//! Unpacking a NEFF's members into a directory, contained and byte-exact.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use neff_schema::HEADER_LEN;

use crate::container::{payload_stream, Container, Limits};
use crate::profile::RuntimeProfile;
use crate::tar_reader::{escape_name, EntryKind, TarReader};
use crate::Report;

/// Why unpacking stopped. Nothing is written unless every entry is safe.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Reading the NEFF or writing a member failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The container gates refuse the NEFF.
    #[error("the NEFF is refused by the loader: {}", .0.summary())]
    Rejected(Box<Report>),
    /// An entry could escape the destination or is not a plain file or folder.
    #[error("refusing to unpack: {0}")]
    Unsafe(String),
    /// The destination already holds files.
    #[error("{0} is not empty (pass --force to write into it)")]
    NotEmpty(PathBuf),
}

impl From<crate::Error> for ExtractError {
    fn from(e: crate::Error) -> Self {
        ExtractError::Io(io::Error::other(e))
    }
}

/// What was unpacked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExtractSummary {
    /// Files written.
    pub files: usize,
    /// Folders created for directory entries.
    pub directories: usize,
    /// Bytes of member data written.
    pub bytes: u64,
}

/// Unpacks every entry of the NEFF at `neff` into `dest`. The archive is
/// checked first (the container gates G1–G12 only, names and entry types); entries whose
/// names are absolute or have `..` components, and link or device entries,
/// refuse the whole unpack before anything is written. `dest` must be empty
/// or absent unless `force` is set; nothing is ever written through a
/// symlink. Returns the container read in the check as well.
pub fn extract(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
) -> Result<(ExtractSummary, Container), ExtractError> {
    let mut file = File::open(neff)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", neff.display())))?;
    // Only the container tier matters for unpacking: any readable archive unpacks.
    let mut reader = BufReader::new(&mut file);
    let tier1 = crate::container::run(Some(&mut reader), profile, &Limits::default())?;
    drop(reader);
    let container = match (tier1.rejection, tier1.container) {
        (None, Some(c)) => c,
        (rejection, _) => {
            let report = Report::new(profile, rejection.as_ref(), tier1.warnings, &["container"]);
            return Err(ExtractError::Rejected(Box::new(report)));
        }
    };
    for entry in &container.entries {
        check_entry(&entry.name, entry.kind)?;
        target_path(dest, &entry.raw_name, entry.kind)?;
    }
    match fs::read_dir(dest) {
        Ok(mut items) => {
            if items.next().is_some() && !force {
                return Err(ExtractError::NotEmpty(dest.to_path_buf()));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(dest).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dest.display()))
        })?,
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dest.display())).into()),
    }

    file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let payload = BufReader::new(file).take(container.header.data_size());
    let (_, stream) = payload_stream(payload)?;
    let mut tar = TarReader::new(stream);
    let mut summary = ExtractSummary {
        files: 0,
        directories: 0,
        bytes: 0,
    };
    while let Some(entry) = tar
        .next_entry()
        .map_err(|e| io::Error::other(e.to_string()))?
    {
        let shown = escape_name(&entry.name);
        check_entry(&shown, entry.kind)?;
        let Some(target) = target_path(dest, &entry.name, entry.kind)? else {
            continue; // "./" or "." names the destination itself.
        };
        if entry.kind == EntryKind::Directory {
            create_dirs(dest, &target)?;
            summary.directories += 1;
            continue;
        }
        if let Some(parent) = target.parent() {
            create_dirs(dest, parent)?;
        }
        refuse_symlink(&target)?;
        let out = File::create(&target).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot write {}: {e}", target.display()))
        })?;
        let mut out = BufWriter::new(out);
        summary.bytes += tar
            .copy_data(&mut out)
            .map_err(|e| io::Error::other(format!("member {shown}: {e}")))?;
        out.flush()?;
        summary.files += 1;
    }
    Ok((summary, container))
}

/// Refuses names that could escape the destination and non-plain entries.
fn check_entry(name: &str, kind: EntryKind) -> Result<(), ExtractError> {
    if matches!(
        kind,
        EntryKind::Symlink | EntryKind::Hardlink | EntryKind::Special
    ) {
        return Err(ExtractError::Unsafe(format!(
            "entry {name} is a {}; only files and folders are unpacked",
            kind.name()
        )));
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err(ExtractError::Unsafe(format!(
            "entry {name} has an absolute name"
        )));
    }
    if name.split(['/', '\\']).any(|c| c == "..") {
        return Err(ExtractError::Unsafe(format!(
            "entry {name} has a .. component"
        )));
    }
    Ok(())
}

/// Where an entry goes: `dest` joined with the name's normal components.
/// `None` for a directory entry naming `dest` itself (`./`), which needs no
/// work; a file naming `dest` itself is refused.
fn target_path(dest: &Path, name: &[u8], kind: EntryKind) -> Result<Option<PathBuf>, ExtractError> {
    let mut path = dest.to_path_buf();
    for component in name.split(|&b| b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => {
                return Err(ExtractError::Unsafe(format!(
                    "entry {} has a .. component",
                    escape_name(name)
                )))
            }
            c => path.push(component_os(c, name)?),
        }
    }
    if path == dest {
        if kind == EntryKind::Directory {
            return Ok(None);
        }
        return Err(ExtractError::Unsafe(format!(
            "entry {:?} names no file",
            escape_name(name)
        )));
    }
    Ok(Some(path))
}

#[cfg(unix)]
fn component_os(c: &[u8], _name: &[u8]) -> Result<PathBuf, ExtractError> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(c)))
}

#[cfg(not(unix))]
fn component_os(c: &[u8], name: &[u8]) -> Result<PathBuf, ExtractError> {
    match std::str::from_utf8(c) {
        Ok(s) if !s.contains(['\\', ':']) => Ok(PathBuf::from(s)),
        _ => Err(ExtractError::Unsafe(format!(
            "entry {} cannot be written on this platform",
            escape_name(name)
        ))),
    }
}

/// Creates `dir` and its parents below `dest`, refusing to pass through symlinks.
fn create_dirs(dest: &Path, dir: &Path) -> Result<(), ExtractError> {
    let rel = dir.strip_prefix(dest).map_err(|_| {
        ExtractError::Unsafe(format!("{} is outside {}", dir.display(), dest.display()))
    })?;
    let mut path = dest.to_path_buf();
    for component in rel.components() {
        path.push(component);
        refuse_symlink(&path)?;
        match fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", path.display()),
                )
                .into())
            }
        }
    }
    Ok(())
}

fn refuse_symlink(path: &Path) -> Result<(), ExtractError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ExtractError::Unsafe(format!(
            "{} is a symlink; refusing to write through it",
            path.display()
        ))),
        _ => Ok(()),
    }
}
