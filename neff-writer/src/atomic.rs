//! Atomic output: a temp file beside the target, fsynced, then renamed into
//! place, and the folder fsynced. A failure leaves any existing file untouched
//! and removes the temp. Without the fsyncs ([`write_atomic_with`]) a crash
//! can never leave a half-written file under the target's name, but after a
//! power cut soon after, the target may hold the old file, the new one, or
//! (on some filesystems) zero bytes.
//!
//! Every temp file of the process is listed in a process-wide registry until
//! it is renamed into place or dropped, so a signal handler can remove the
//! live ones before the process ends ([`abandon_temp_files`]; the `neff` CLI
//! installs one, the library never does). SIGKILL cannot be caught: the temp
//! file it leaves is named `.<target>.neff-tmp.<pid>.<n>` and is locked while
//! written, and the next temp file created in that folder removes it once its
//! process is gone ([`crate::stale`]).
//!
//! The temp file is made, renamed, removed and its folder fsynced through
//! one descriptor of the folder ([`crate::folder`]), never by a path looked up
//! again.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::folder::Folder;
use crate::labelled::Labelled;
use crate::stale::MARKER;

/// A temp file not yet renamed or removed: its folder and name there.
struct Live {
    folder: Arc<Folder>,
    name: OsString,
}

/// The temp files not yet renamed or removed, and the folders already swept
/// for stale ones.
struct Registry {
    live: Vec<Live>,
    swept: BTreeSet<PathBuf>,
    /// Folders where an unnamed temp file was tried: whether it works there.
    unnamed: BTreeMap<PathBuf, bool>,
    next: u64,
    reporter: Option<fn(&Path)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    swept: BTreeSet::new(),
    unnamed: BTreeMap::new(),
    next: 0,
    reporter: None,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The signal the `neff` binary's signal thread took (0: none), set before
/// it removes the temp files: an output not renamed yet is then never
/// renamed.
static SIGNALLED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Whether a signal thread watches for `signals` (only then does a rename
/// look for pending signals).
static WATCHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// For a program that blocks its termination signals and takes them on a
/// thread of its own: from now on an output is renamed into place only when
/// none is pending or taken ([`note_signal`]).
pub fn watch_signals() {
    WATCHED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Records that the termination signal `sig` was taken (call it first
/// thing after `sigwait` returns, before [`abandon_temp_files`]).
pub fn note_signal(sig: i32) {
    SIGNALLED.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// The termination signal taken, if any.
pub fn signal_taken() -> Option<i32> {
    match SIGNALLED.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Whether a termination signal was taken or is pending (blocked, not yet
/// taken by the signal thread), once [`watch_signals`] was called: then an
/// output's rename must not happen.
///
/// The two are checked in the reverse order of the signal thread's steps
/// (it notes a signal, then takes it off the pending set): pending first,
/// then noted. A signal sent before this call is then seen by one of them.
/// Checked the other way round, the thread could note and take the signal
/// between the two checks, and the rename would go ahead.
pub fn termination_signalled() -> bool {
    if !WATCHED.load(std::sync::atomic::Ordering::SeqCst) {
        return false;
    }
    pending_termination_signal().is_some() || signal_taken().is_some()
}

/// The signals that end a `neff` run and are taken by its signal thread.
#[cfg(unix)]
pub const TERMINATION_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first of [`TERMINATION_SIGNALS`] pending for this thread or the
/// process (blocked and not yet taken).
pub fn pending_termination_signal() -> Option<i32> {
    #[cfg(unix)]
    // SAFETY: sigpending fills a zeroed set this function owns.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        if libc::sigpending(&mut set) == 0 {
            return TERMINATION_SIGNALS
                .into_iter()
                .find(|&sig| libc::sigismember(&set, sig) == 1);
        }
    }
    None
}

/// Test hook: with `NEFF_TEST_HOLD_BEFORE_RENAME=<path>` set, an output
/// about to be renamed waits, after creating `<path>`, until `<path>` is
/// removed (a test holds the process there, signals it, then releases it).
fn hold_before_rename() {
    let Some(path) = std::env::var_os("NEFF_TEST_HOLD_BEFORE_RENAME") else {
        return;
    };
    let path = PathBuf::from(path);
    if std::fs::write(&path, b"held").is_err() {
        return;
    }
    while path.exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Removes every temp file of this process not yet renamed into place, and
/// keeps any more from being created or renamed (threads that try wait
/// forever): for a signal handler about to end the process.
pub fn abandon_temp_files() {
    let registry = registry();
    for live in &registry.live {
        let _ = live.folder.remove(&live.name);
    }
    std::mem::forget(registry);
}

/// Calls `report` with each stale temp file (one left by a killed process)
/// removed beside a new output. By default they are removed silently.
pub fn report_stale_temp_files(report: fn(&Path)) {
    registry().reporter = Some(report);
}

/// The folder `path` lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A temp file being written beside its target: removed when dropped unless
/// [`TempFile::persist`] renamed it into place. Its read, write and seek
/// errors name the target and the temp file.
#[derive(Debug)]
pub struct TempFile {
    file: Labelled<File>,
    /// The folder of the temp file and its target.
    folder: Arc<Folder>,
    /// The temp file's name in `folder` (for an unnamed file, the name it
    /// is linked as just before it replaces the target).
    name: OsString,
    /// The target's name in `folder`.
    target_name: OsString,
    live: bool,
    /// Created unnamed (`O_TMPFILE`): nothing is in the folder until
    /// [`TempFile::persist_synced`], so a killed run leaves nothing behind.
    unnamed: bool,
}

/// Whether a file or folder name is in neff's temp namespace: an output's
/// temp file (`.<name>.neff-tmp.<pid>.<n>`) or an unpack's temp folder
/// (`.neff-unpack.<pid>.<random>`). `unpack` writes no member under such a
/// name, so that no later run takes a user's file for a stale temp of its own.
pub fn is_temp_name(name: &[u8]) -> bool {
    let marker = MARKER.as_bytes();
    name.starts_with(b".neff-unpack.")
        || (name.first() == Some(&b'.') && name.windows(marker.len()).any(|w| w == marker))
}

/// Refuses a target that exists and is neither a regular file nor a
/// symlink (a device such as `/dev/null`, a FIFO, a socket, a folder): the
/// rename into place would replace it with a file.
fn refuse_special_target(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    if kind.is_file() || kind.is_symlink() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a folder"
    } else {
        special_kind(&kind)
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}, not a regular file: outputs are written to a temp file renamed into place, which would replace it; name a file",
            path.display()
        ),
    ))
}

/// What a file type that is neither a file, a folder nor a symlink is.
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = kind;
    "not a regular file"
}

/// A temp file beside `path`, `.<name>.neff-tmp.<pid>.<n>`. The first one in
/// a folder removes the stale temp files there.
pub fn temp_beside(path: &Path) -> io::Result<TempFile> {
    refuse_special_target(path)?;
    let dir = parent_dir(path);
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path", path.display()),
        )
    })?;
    let folder = Arc::new(Folder::open(dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot open the folder {}: {e}", dir.display()),
        )
    })?);
    let mut registry = registry();
    if registry.swept.insert(dir.to_path_buf()) {
        crate::stale::sweep(&folder, registry.reporter);
    }
    let mut attempts = 0;
    loop {
        let n = registry.next;
        registry.next += 1;
        let temp = OsString::from(format!(".{name}{MARKER}{}.{n}", std::process::id()));
        let label = format!(
            "cannot write {} (temp file {})",
            path.display(),
            dir.join(&temp).display()
        );
        // Unnamed where it works: proven once per folder.
        let proven = registry.unnamed.get(dir).copied();
        if proven != Some(false) {
            let file = folder.create_unnamed(proven.is_none().then_some(temp.as_os_str()));
            registry.unnamed.insert(dir.to_path_buf(), file.is_some());
            if let Some(file) = file {
                crate::stale::hold_lock(&file);
                return Ok(TempFile {
                    file: Labelled::new(file, label),
                    folder,
                    name: temp,
                    target_name: OsString::from(name),
                    live: false,
                    unnamed: true,
                });
            }
        }
        match folder.create_new(&temp) {
            Ok(file) => {
                crate::stale::hold_lock(&file);
                registry.live.push(Live {
                    folder: Arc::clone(&folder),
                    name: temp.clone(),
                });
                return Ok(TempFile {
                    file: Labelled::new(file, label),
                    folder,
                    name: temp,
                    target_name: OsString::from(name),
                    live: true,
                    unnamed: false,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => attempts += 1,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create a temp file in {}: {e}", dir.display()),
                ))
            }
        }
    }
}

impl TempFile {
    /// The open temp file.
    pub fn as_file(&self) -> &File {
        self.file.get_ref()
    }

    /// Where the temp file is.
    #[cfg(test)]
    pub fn path(&self) -> PathBuf {
        self.folder.path().join(&self.name)
    }

    /// Takes the temp file off the registry of live ones (the registry's
    /// lock held).
    fn unregister(&mut self, registry: &mut Registry) {
        registry
            .live
            .retain(|l| !(Arc::ptr_eq(&l.folder, &self.folder) && l.name == self.name));
        self.live = false;
    }

    /// Drops the page cache of the file this one will replace, when all of
    /// it is on the device ([`crate::page_cache`]): the new output then
    /// reuses those pages. Nothing happens when there is no old file.
    pub fn release_target_cache(&self) {
        #[cfg(target_os = "linux")]
        if let Some(old) = self.folder.open_regular(&self.target_name) {
            crate::page_cache::release_if_clean(&old);
        }
    }

    /// `e`, naming the target and the temp file.
    pub fn context(&self, e: io::Error) -> io::Error {
        self.file.context(e)
    }

    /// Flushes the file's data and metadata to the device.
    pub fn sync_all(&self) -> io::Result<()> {
        self.file.get_ref().sync_all().map_err(|e| self.context(e))
    }

    /// Renames the finished (already synced) file to its target, then makes
    /// the rename durable (the folder synced) when `sync_dir` and the
    /// platform can sync a folder.
    pub fn persist_synced(mut self, sync_dir: bool) -> io::Result<()> {
        {
            let mut registry = registry();
            hold_before_rename();
            if termination_signalled() {
                // A signal came first: the old output stays. The signal
                // thread ends the process once the lock is free.
                if !self.unnamed {
                    let _ = self.folder.remove(&self.name);
                }
                self.unregister(&mut registry);
                return Err(self.context(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "interrupted by a signal before the output was renamed into place",
                )));
            }
            if self.unnamed {
                // Named only now, under the registry's lock (a signal waits
                // for it), and renamed over the target at once.
                self.folder
                    .link_unnamed(self.file.get_ref(), &self.name)
                    .map_err(|e| self.context(e))?;
                self.live = true;
            }
            self.folder
                .replace(&self.name, &self.target_name)
                .map_err(|e| self.context(e))?;
            self.unregister(&mut registry);
        }
        if sync_dir {
            let _ = self.folder.sync();
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.live {
            let mut registry = registry();
            let _ = self.folder.remove(&self.name);
            self.unregister(&mut registry);
        }
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Read for TempFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for TempFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

/// Writes `bytes` to `path` atomically and durably (the file and its folder
/// fsynced).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, true)
}

/// Writes `bytes` to `path` atomically; durably too when `fsync`. Without,
/// the rename is still atomic (no half-written file under `path`), but after
/// a power cut soon after `path` may hold the old file, the new one or (on
/// some filesystems) zero bytes.
pub fn write_atomic_with(path: &Path, bytes: &[u8], fsync: bool) -> io::Result<()> {
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes)?;
    if fsync {
        tmp.sync_all()?;
    }
    tmp.persist_synced(fsync)
}

/// Writes what `fill` writes to `path` atomically (a temp file beside it,
/// renamed into place on success); durably too when `fsync`. A failure of
/// `fill` leaves `path` as it was.
pub fn write_atomic_from<E: From<io::Error>>(
    path: &Path,
    fsync: bool,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    let mut tmp = temp_beside(path)?;
    fill(&mut tmp)?;
    if fsync {
        tmp.sync_all()?;
    }
    Ok(tmp.persist_synced(fsync)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_folder_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = write_atomic(&fifo, b"x").unwrap_err();
        assert!(
            err.to_string().contains("is a FIFO, not a regular file"),
            "{err}"
        );
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
        assert_eq!(names(dir.path()), ["pipe"], "no temp file is left");
    }

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["x.bin"]);
        assert!(write_atomic(&dir.path().join("missing/x.bin"), b"").is_err());
    }

    #[test]
    fn a_temp_file_is_named_for_its_target_registered_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = temp_beside(&dir.path().join("x.neff")).unwrap();
        let name = tmp
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let prefix = format!(".x.neff.neff-tmp.{}.", std::process::id());
        assert!(name.starts_with(&prefix), "{name}");
        let registered = |name: &std::ffi::OsStr| registry().live.iter().any(|l| l.name == name);
        let path = tmp.path();
        let temp_name = path.file_name().unwrap().to_os_string();
        // Unnamed where the OS allows: nothing in the folder until the rename.
        assert_eq!(registered(&temp_name), !tmp.unnamed);
        assert_eq!(path.exists(), !tmp.unnamed);
        #[cfg(target_os = "linux")]
        assert!(tmp.unnamed, "O_TMPFILE works in a temp folder here");
        drop(tmp);
        assert!(!path.exists());
        assert!(!registered(&temp_name));
        assert!(names(dir.path()).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_names_the_target_and_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.neff");
        let mut tmp = temp_beside(&target).unwrap();
        // The temp file's descriptor now refers to /dev/full: writes fail with ENOSPC.
        let full = File::options().write(true).open("/dev/full").unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: both descriptors are open and owned by these `File`s.
        assert!(unsafe { libc::dup2(full.as_raw_fd(), tmp.as_file().as_raw_fd()) } >= 0);
        let err = tmp.write_all(&[0u8; 4096]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        let text = err.to_string();
        assert!(text.contains(&target.display().to_string()), "{text}");
        assert!(text.contains(&tmp.path().display().to_string()), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
        drop(tmp);
        assert!(names(dir.path()).is_empty());
    }
}
