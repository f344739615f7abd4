//! Unpacking a NEFF's members into a directory, contained and byte-exact.

mod dest;
mod plan;

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use neff_schema::HEADER_LEN;

use crate::container::{payload_stream, Container, Limits};
use crate::profile::RuntimeProfile;
use crate::tar_reader::{escape_name, EntryKind, TarReader};
use crate::{Error, ErrorKind, Report};

use plan::Plan;

/// Caps on what an unpack may write; an archive past one is refused before
/// anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Most tar entries (files, folders and repeated names all count).
    pub max_entries: u64,
    /// Most bytes of member data written.
    pub max_bytes: u64,
    /// Most components (folders and the file name) in an entry's path.
    pub max_depth: usize,
}

impl Default for ExtractLimits {
    /// 1,000,000 entries, 64 GiB, 64 components.
    fn default() -> Self {
        ExtractLimits {
            max_entries: 1_000_000,
            max_bytes: 64 << 30,
            max_depth: 64,
        }
    }
}

/// An entry could escape the destination or is not a plain file or folder,
/// or the destination holds something in the way (a symlink, a FIFO, a device).
fn refuse(why: String) -> Error {
    Error::new(ErrorKind::Unsafe, format!("refusing to unpack: {why}"))
}

/// The archive passes one of the [`ExtractLimits`]; `flag` is the `neff unpack`
/// option that raises it.
fn over_cap(what: String, flag: &str) -> Error {
    let message = format!("refusing to unpack: {what} (raise the cap with --{flag})");
    Error::new(ErrorKind::Limit, message)
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
    /// File entries not written because a later entry has the same path
    /// (the runtime keeps the last one too).
    pub replaced: usize,
}

/// Unpacks every entry of the NEFF at `neff` into `dest`. The archive is
/// checked first (the container gates G1–G12 only, names, entry types and
/// `limits`); entries whose names are absolute or have `..` components, link
/// or device entries, and an archive past a limit refuse the whole unpack
/// before anything is written. `dest` must be empty or absent unless `force`
/// is set; then whatever in it is in the way (a symlink, a FIFO, a device, a
/// file where a folder goes) also refuses the unpack before anything is
/// written. Each file is written as a new file and renamed into place, so
/// nothing is ever written through a symlink or into an existing file (a
/// hardlink's other names keep their content). Of entries with the same
/// path, only the last is written. Returns the container read in the check
/// as well.
pub fn extract(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
    limits: &ExtractLimits,
) -> Result<(ExtractSummary, Container), Error> {
    let mut file =
        File::open(neff).map_err(|e| Error::io(ErrorKind::Read, "cannot open", neff, e))?;
    let container = check_container(&mut file, profile)?;
    let plan = plan(&mut file, &container, limits)?;
    if !prepare_dest(dest, force)? {
        check_destination(dest, &plan)?;
    }
    let summary = write(&mut file, &container, dest, &plan)?;
    Ok((summary, container))
}

/// Runs the container gates (only that tier matters: any readable archive unpacks).
fn check_container(file: &mut File, profile: &RuntimeProfile) -> Result<Container, Error> {
    let tier1 =
        crate::container::run(Some(&mut BufReader::new(file)), profile, &Limits::default())?;
    match (tier1.rejection, tier1.container) {
        (None, Some(c)) => Ok(c),
        (rejection, _) => {
            let report = Report::new(profile, rejection.as_ref(), tier1.warnings, &["container"]);
            Err(Error::refused(report))
        }
    }
}

/// Checks every entry: from the walk's entry table when it holds them all,
/// else by streaming the archive once more.
fn plan(file: &mut File, container: &Container, limits: &ExtractLimits) -> Result<Plan, Error> {
    let mut plan = Plan::new(limits);
    if container.entries_complete {
        for entry in &container.entries {
            plan.add(&entry.raw_name, entry.kind, entry.size)?;
        }
    } else {
        let mut tar = tar_stream(file, container)?;
        while let Some(entry) = tar.next_entry()? {
            plan.add(&entry.name, entry.kind, entry.size.max(0) as u64)?;
        }
    }
    plan.finish()?;
    Ok(plan)
}

/// Creates `dest` when absent; refuses a non-empty one without `force`.
/// Returns whether it was absent or empty.
fn prepare_dest(dest: &Path, force: bool) -> Result<bool, Error> {
    match fs::read_dir(dest).map(|mut items| items.next().is_none()) {
        Ok(true) => Ok(true),
        Ok(false) if force => Ok(false),
        Ok(false) => {
            let message = "is not empty (pass --force to write into it)";
            Err(Error::new(ErrorKind::NotEmpty, message).at_path(dest))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dest)
                .map_err(|e| Error::io(ErrorKind::Write, "cannot create", dest, e))?;
            Ok(true)
        }
        Err(e) => Err(Error::io(ErrorKind::Read, "cannot read", dest, e)),
    }
}

/// Refuses, before anything is written, whatever in a non-empty `dest` is in
/// the way of a path the unpack writes (or of one of its folders).
fn check_destination(dest: &Path, plan: &Plan) -> Result<(), Error> {
    for (rel, dir) in plan.paths() {
        let target = plan::join(dest, rel);
        let folder = if dir { &target } else { parent_of(&target) };
        dest::folders(dest, folder, false)?;
        dest::check_in_the_way(&target, dir)?;
    }
    Ok(())
}

/// The write pass: each path's entry, in archive order.
fn write(
    file: &mut File,
    container: &Container,
    dest: &Path,
    plan: &Plan,
) -> Result<ExtractSummary, Error> {
    let mut summary = ExtractSummary {
        files: 0,
        directories: 0,
        bytes: 0,
        replaced: plan.replaced,
    };
    let mut tar = tar_stream(file, container)?;
    let mut index = 0;
    // The last folder made: its ancestors need no second look.
    let mut made = PathBuf::new();
    while let Some(entry) = tar.next_entry()? {
        index += 1;
        let Some(target) = plan.target(dest, &entry, index - 1) else {
            continue;
        };
        let dir = entry.kind == EntryKind::Directory;
        let folder = if dir { &target } else { parent_of(&target) };
        if !made.starts_with(folder) {
            dest::folders(dest, folder, true)?;
            made = folder.to_path_buf();
        }
        if dir {
            summary.directories += 1;
        } else {
            summary.bytes += dest::write_file(&mut tar, &target, &escape_name(&entry.name))?;
            summary.files += 1;
        }
    }
    Ok(summary)
}

/// The tar stream of the NEFF's payload, from its start.
fn tar_stream<'a>(
    file: &'a mut File,
    container: &Container,
) -> Result<TarReader<Box<dyn Read + 'a>>, Error> {
    file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let payload = BufReader::new(file).take(container.header.data_size());
    Ok(TarReader::new(payload_stream(payload)?.1))
}

/// A target's folder (targets are always below the destination).
fn parent_of(target: &Path) -> &Path {
    target.parent().unwrap_or(target)
}
