//! Unpacking a NEFF's members into a directory, contained and byte-exact.

mod dir;
mod plan;
mod temp_dir;

use std::fs::{self, File};
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use neff_loader::walk::{walk_entries, EntrySink, NoSink, StoredHeader, Tier1};
use neff_loader::{Entry, EntryKind, Error, ErrorKind, Gate, Limits, Report, RuntimeProfile, Tier};

use plan::Plan;
pub use temp_dir::abandon_unpack_dirs;
use temp_dir::TempDir;

/// Caps on what an unpack may write; an archive past one is refused, the
/// entry past it before it is written.
#[derive(Debug, Clone)]
pub struct ExtractLimits {
    /// Most tar entries (files, folders and repeated names all count).
    pub max_entries: u64,
    /// Most bytes of member data written (a repeated path counts each time).
    pub max_bytes: u64,
    /// Most components (folders and the file name) in an entry's path.
    pub max_depth: usize,
    /// When set, the stored payload bytes read so far are added here (for a
    /// progress display).
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Default for ExtractLimits {
    /// 1,000,000 entries, 64 GiB, 64 components.
    fn default() -> Self {
        ExtractLimits {
            max_entries: 1_000_000,
            max_bytes: 64 << 30,
            max_depth: 64,
            progress: None,
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
    /// Files in place.
    pub files: usize,
    /// Folders in place: directory entries and the folders entries' paths
    /// pass through (created as needed), each counted once.
    pub directories: usize,
    /// Bytes of member data in place.
    pub bytes: u64,
    /// File entries not kept because a later entry has the same path
    /// (the runtime keeps the last one too).
    pub replaced: usize,
    /// Temp folders of earlier unpacks into `dest` that did not finish
    /// (their process is gone), removed first.
    pub stale_removed: Vec<PathBuf>,
}

/// Unpacks every entry of the NEFF at `neff` into `dest`, in the same pass
/// as the container check (the gates G1–G12, names, entry types and
/// `limits`): each entry is written, as the archive streams, into a temp dir
/// inside `dest` (`.neff-unpack.<pid>.<random>`), and moved into place only
/// once every gate passed; on any refusal or error the temp dir is removed
/// and `dest` is as it was (absent again if it was). Entries whose names are
/// absolute or have `..` components, link or device entries, and an archive
/// past a limit refuse the whole unpack, each before it is written. `dest`
/// must be empty or absent unless `force` is set; then whatever in it is in
/// the way (a symlink, a FIFO, a device, a file where a folder goes) also
/// refuses the unpack before anything is moved. Each file is renamed into
/// place, so nothing is ever written through a symlink or into an existing
/// file (a hardlink's other names keep their content). Of entries with the
/// same path, only the last is kept. Returns the container gates' outcome as
/// well (accepted, with the container it read): the other gates can go on
/// from it ([`neff_loader::Loader::verify_walked`]) without reading the
/// payload again.
pub fn extract(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
    limits: &ExtractLimits,
) -> Result<(ExtractSummary, Tier1), Error> {
    extract_observed(neff, dest, profile, force, limits, &mut NoSink)
}

/// [`extract`], handing every entry the walk reads (with its data, and its
/// stored header blocks when asked for) to `observer` as well: a second
/// reader of the same pass, such as the framing recovery of a lift
/// (`neff_writer::FramingRecorder`).
pub fn extract_observed(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
    limits: &ExtractLimits,
    observer: &mut dyn EntrySink,
) -> Result<(ExtractSummary, Tier1), Error> {
    let file = File::open(neff).map_err(|e| Error::io(ErrorKind::Read, "cannot open", neff, e))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        let e = io::Error::from(io::ErrorKind::IsADirectory);
        return Err(Error::io(
            ErrorKind::Read,
            "cannot read a folder as a NEFF",
            neff,
            e,
        ));
    }
    let stale_removed = temp_dir::sweep_stale(dest);
    let (empty, created) = prepare_dest(dest, force)?;
    let mut temp = TempDir::new_in(dest, created)?;
    let mut unpacker = Unpacker::new(temp.path(), limits)?;
    let tier1 = walk_entries(
        &mut BufReader::with_capacity(1 << 20, file),
        profile,
        &Limits {
            progress: limits.progress.clone(),
            ..Limits::default()
        },
        &mut Both(&mut unpacker, observer),
    )?;
    let tier1 = accepted(tier1, profile)?;
    let plan = unpacker.finish()?;
    if !empty {
        check_destination(dest, &plan)?;
    }
    move_into_place(temp.path(), dest, &plan, empty)?;
    temp.keep_destination();
    let mut summary = plan.summary();
    summary.stale_removed = stale_removed;
    Ok((summary, tier1))
}

/// [`extract`], also for a NEFF the container gates refuse for its header
/// alone: unsupported feature bits (G5) or a payload hash that does not
/// match (G9). Such a NEFF is unpacked as a runtime with those checks off
/// would read it, and the refusal is returned beside the summary (negative
/// fixtures are lifted this way). Any other refusal is an error, as in
/// [`extract`]: the archive itself cannot be read as the runtime reads it.
pub fn extract_refused(
    neff: &Path,
    dest: &Path,
    profile: &RuntimeProfile,
    force: bool,
    limits: &ExtractLimits,
) -> Result<(ExtractSummary, Tier1, Option<Report>), Error> {
    let refusal = match extract(neff, dest, profile, force, limits) {
        Ok((summary, tier1)) => return Ok((summary, tier1, None)),
        Err(e) => match e.report() {
            Some(r) if matches!(r.gate, Some(Gate::G5 | Gate::G9)) => r.clone(),
            _ => return Err(e),
        },
    };
    let relaxed = RuntimeProfile {
        verify_hash: false,
        supported_features: u64::MAX,
        ..profile.clone()
    };
    let (summary, tier1) = extract(neff, dest, &relaxed, force, limits)?;
    Ok((summary, tier1, Some(refusal)))
}

/// Two readers of one walk: each gets every call (the data of a skipped
/// entry when either wants it).
struct Both<'a>(&'a mut dyn EntrySink, &'a mut dyn EntrySink);

impl EntrySink for Both<'_> {
    fn entry(&mut self, entry: &Entry) {
        self.0.entry(entry);
        self.1.entry(entry);
    }
    fn data(&mut self, bytes: &[u8]) {
        self.0.data(bytes);
        self.1.data(bytes);
    }
    fn wants_skipped(&self) -> bool {
        self.0.wants_skipped() || self.1.wants_skipped()
    }
    fn wants_headers(&self) -> bool {
        self.0.wants_headers() || self.1.wants_headers()
    }
    fn headers(&mut self, headers: &[StoredHeader]) {
        self.0.headers(headers);
        self.1.headers(headers);
    }
}

/// The container gates' verdict (only that tier matters: any readable
/// archive unpacks).
fn accepted(tier1: Tier1, profile: &RuntimeProfile) -> Result<Tier1, Error> {
    if tier1.rejection.is_none() && tier1.container.is_some() {
        return Ok(tier1);
    }
    let report = Report::new(
        profile,
        tier1.rejection.as_ref(),
        tier1.warnings,
        &[Tier::Container],
    );
    Err(Error::refused(report))
}

/// Creates `dest` when absent; refuses a non-empty one without `force`.
/// Returns whether it was absent or empty, and whether it was created.
fn prepare_dest(dest: &Path, force: bool) -> Result<(bool, bool), Error> {
    match fs::read_dir(dest).map(|mut items| items.next().is_none()) {
        Ok(empty) if empty || force => Ok((empty, false)),
        Ok(_) => {
            let message = "is not empty (pass --force to write into it)";
            Err(Error::new(ErrorKind::NotEmpty, message).at_path(dest))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dest)
                .map_err(|e| Error::io(ErrorKind::Write, "cannot create", dest, e))?;
            Ok((true, true))
        }
        Err(e) => Err(Error::io(ErrorKind::Read, "cannot read", dest, e)),
    }
}

/// The folders and name of a relative path (`a/b/c` → `[a, b]`, `c`).
fn split_rel(rel: &[u8]) -> (Vec<&std::ffi::OsStr>, &std::ffi::OsStr) {
    let mut parts: Vec<&std::ffi::OsStr> = rel
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .filter_map(plan::component_os)
        .map(Path::as_os_str)
        .collect();
    let name = parts.pop().unwrap_or_default();
    (parts, name)
}

/// Test hook: with `NEFF_TEST_HOLD_UNPACK=<n>:<file>`, the `n`-th step of an
/// unpack (each entry written into the temp dir, each path checked and
/// moved into place) waits, after creating `<file>`, until `<file>` is
/// removed: a test swaps folders for symlinks there.
fn hold_step() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static STEP: AtomicUsize = AtomicUsize::new(0);
    let Some(spec) = std::env::var_os("NEFF_TEST_HOLD_UNPACK") else {
        return;
    };
    let step = STEP.fetch_add(1, Ordering::SeqCst);
    let spec = spec.to_string_lossy().into_owned();
    let Some((n, file)) = spec.split_once(':') else {
        return;
    };
    if n.parse::<usize>().ok() != Some(step) || fs::write(file, b"held").is_err() {
        return;
    }
    while Path::new(file).exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Refuses, before anything is moved, whatever in a non-empty `dest` is in
/// the way of a path the unpack writes (or of one of its folders), looking
/// through descriptors of its folders (never following a symlink).
fn check_destination(dest: &Path, plan: &Plan) -> Result<(), Error> {
    use dir::{DirHandle, Kind};
    let root = DirHandle::open(dest)?;
    for (rel, dir) in plan.paths() {
        hold_step();
        let (folders, name) = split_rel(rel);
        let Some(parent) = root.descend(folders, false)? else {
            continue;
        };
        let at = parent.path().join(name);
        match (parent.kind(name)?, dir) {
            (None, _) | (Some(Kind::Dir), true) | (Some(Kind::File), false) => {}
            (Some(Kind::Symlink), _) => {
                return Err(refuse(format!(
                    "{} is a symlink; refusing to write through it",
                    at.display()
                )))
            }
            (Some(kind), _) => {
                let wanted = if dir { "folder" } else { "file" };
                return Err(refuse(format!(
                    "{} is a {} where a {wanted} goes (it is never opened or replaced)",
                    at.display(),
                    if kind == Kind::Dir {
                        "folder"
                    } else if kind == Kind::File {
                        "file"
                    } else {
                        "FIFO, socket or device"
                    }
                )));
            }
        }
    }
    Ok(())
}

/// Moves what was unpacked into `temp` to `dest`: each top-level entry when
/// `dest` was empty, else path by path (folders made, files renamed over
/// their targets), every step through folder descriptors.
fn move_into_place(temp: &Path, dest: &Path, plan: &Plan, empty: bool) -> Result<(), Error> {
    use dir::{DirHandle, Kind};
    let root = DirHandle::open(dest)?;
    let temp_dir = DirHandle::open(temp)?;
    if empty {
        let mut tops: Vec<&std::ffi::OsStr> = plan
            .paths()
            .filter_map(|(rel, _)| split_rel(rel).0.first().copied().or(Some(split_rel(rel).1)))
            .collect();
        tops.sort();
        tops.dedup();
        for name in tops {
            hold_step();
            if temp_dir.kind(name)?.is_some() {
                temp_dir.rename(name, &root, name)?;
            }
        }
        return Ok(());
    }
    for (rel, dir) in plan.paths() {
        hold_step();
        let (folders, name) = split_rel(rel);
        if dir {
            root.descend(folders.iter().copied().chain([name]), true)?;
            continue;
        }
        let Some(parent) = root.descend(folders.iter().copied(), true)? else {
            continue;
        };
        if !matches!(parent.kind(name)?, None | Some(Kind::File)) {
            return Err(refuse(format!(
                "{} is in the way and is not a regular file",
                parent.path().join(name).display()
            )));
        }
        let source = temp_dir
            .descend(folders.iter().copied(), false)?
            .ok_or_else(|| refuse(format!("{} vanished from the temp dir", temp.display())))?;
        source.rename(name, &parent, name)?;
    }
    Ok(())
}

/// Writes each entry into the temp dir as the walk streams it, after the
/// plan's checks; keeps the first error (the walk goes on to its verdict,
/// which wins over it). Folders are made and files created through
/// descriptors.
struct Unpacker {
    root: dir::DirHandle,
    plan: Plan,
    /// The file being written.
    current: Option<(File, PathBuf)>,
    error: Option<Error>,
}

impl Unpacker {
    fn new(root: &Path, limits: &ExtractLimits) -> Result<Unpacker, Error> {
        Ok(Unpacker {
            root: dir::DirHandle::open(root)?,
            plan: Plan::new(limits),
            current: None,
            error: None,
        })
    }

    /// Checks `entry` and starts writing it.
    fn start(&mut self, entry: &Entry) -> Result<(), Error> {
        // Past a termination signal nothing more is written: the signal
        // thread notes it before it removes the temp dir (an atomic load per
        // entry, no system call).
        if neff_writer::fs::signal_taken().is_some() {
            return Err(Error::new(ErrorKind::Write, "interrupted by a signal"));
        }
        let size = entry.size.max(0) as u64;
        let Some(rel) = self.plan.add(&entry.name, entry.kind, size)? else {
            return Ok(());
        };
        hold_step();
        let (folders, name) = split_rel(&rel);
        if entry.kind == EntryKind::Directory {
            self.root.descend(folders.into_iter().chain([name]), true)?;
            return Ok(());
        }
        let Some(parent) = self.root.descend(folders, true)? else {
            return Ok(());
        };
        let path = parent.path().join(name);
        self.current = Some((parent.create_file(name)?, path));
        Ok(())
    }

    /// The plan, once the walk is done; the first error if any.
    fn finish(mut self) -> Result<Plan, Error> {
        self.current = None;
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.plan),
        }
    }
}

impl EntrySink for Unpacker {
    fn entry(&mut self, entry: &Entry) {
        self.current = None;
        if self.error.is_none() {
            self.error = self.start(entry).err();
        }
    }

    fn data(&mut self, bytes: &[u8]) {
        if let Some((file, path)) = &mut self.current {
            if let Err(e) = file.write_all(bytes) {
                self.error = Some(dir::with_path(e, "cannot write", path));
                self.current = None;
            }
        }
    }

    fn wants_skipped(&self) -> bool {
        true
    }
}
